/* pool.c: refs with reference and pin counts, the memory limit, eviction
 * through I/O threads, read-back on pin, and the recycling cache.
 *
 * Each ref has one atomic pin word: the pin count in its low 32 bits and
 * three flags. FAST says the object is resident and idle enough that pin and
 * unpin may change the count without the pool lock (the common case: one
 * compare-and-swap each). CLEAN says the spilled copy (or the source, for a
 * ref made by tarn_ref_create_from and never written) matches the bytes in
 * RAM, so eviction may drop them without writing. NOTIFY says the last unpin
 * must take the lock (the ref died while pinned). Everything else about a
 * ref (its state, data, block) is guarded by the pool lock.
 *
 * Invariants, under the pool lock:
 * - resident = charges of RESIDENT, WRITING and READING refs + cache bytes,
 *   and resident <= mem_limit when a limit is set; resident - cached is
 *   what live objects hold, and live_peak its highest value since the last
 *   tarn_pool_peak_reset; window_peak and window_live_peak are the same
 *   highs since the runtime's last region began (tarn__pool_peaks), kept
 *   apart so that regions never reset what tarn_pool_stats_get reports.
 * - has_source is true only while the source can make the object's bytes
 *   again: it is cleared by every write pin that takes the lock and by the
 *   first write to the spill store (a lock-free write pin clears CLEAN
 *   only, and a RESIDENT ref without CLEAN is written before it is
 *   dropped); so a SPILLED ref has a block or a current source.
 * - FAST is set only in state RESIDENT on a live ref; the evictor clears it
 *   with a CAS that also checks the pin count is 0, so a lock-free pin and
 *   an eviction never both succeed.
 * - No storage I/O and no kind callback runs with the lock held. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool/pool_internal.h"
#include "pool/runs.h"
#include "pool/store.h"
#include "prim/prim.h"
#include "tarn/pool.h"

#define PIN_MASK ((uint64_t)0xffffffffu)
#define FAST ((uint64_t)1 << 63)
#define CLEAN ((uint64_t)1 << 62)
#define NOTIFY ((uint64_t)1 << 61)

#define MAGIC_LIVE 0x7461726eu /* "tarn" */

#ifndef NDEBUG
#define TARN_POOL_QUARANTINE 1 /* keep dead refs to report use after free */
#endif

/* EMPTY: made by tarn_ref_create, no bytes until its first pin. */
enum ref_state { RESIDENT, WRITING, SPILLED, READING, EMPTY };

#define CACHE_LINE 64
/* Refs in use that one walk of farthest_pass picks as the next victims,
 * at most. */
#define FAR_MAX 128

/* Three cache lines keep the lock-free paths apart: the pin word (pins,
 * the evictor), the fields read by everyone and written once, and the
 * reference count (a submitting thread's retain against a worker's pins);
 * the rest is guarded by the pool lock. */
struct tarn_ref {
  _Alignas(64) _Atomic uint64_t pinword;
  _Atomic uint8_t referenced; /* CLOCK's second-chance bit */
  void *data;                 /* the object while resident (pool lock) */
  _Alignas(64) _Atomic uint32_t magic;
  size_t size;
  const tarn_kind *kind; /* NULL: bytes the pool allocated */
  tarn_pool *pool;
  _Atomic(void *) owner; /* the layer above's state (pool_internal.h) */
  _Alignas(64) _Atomic uint32_t refs;
  /* Tasks submitted and not yet ended that use the ref, counted by the
   * runtime while the pool has a limit (tarn__ref_demand): eviction takes
   * refs no such task uses before the others. */
  _Atomic uint32_t demand;
  /* The first of those tasks in submission order (tarn__ref_next_use). */
  _Atomic uint64_t next_use;
  /* Guarded by the pool lock. */
  enum ref_state state;
  bool dead;    /* the last reference is gone */
  bool escaped; /* never evicted again */
  bool has_block;
  bool has_source;  /* `source` can make the bytes again (never written) */
  bool prefetching; /* wanted back by the reader thread */
  bool queued;      /* a reader's job names it (wanted or no longer) */
  bool guarded;     /* the reader works on it, or it is being freed (ref_destroy
                     * drops the lock): not freed (again) meanwhile */
  bool cleaning;    /* WRITING ahead of eviction: stays resident after */
  bool flushing;    /* between tarn_ref_flush_begin's 1 and its end: the
                     * caller stores it (one flush at a time) */
  bool in_far;      /* in the pool's far[] (farthest_pass) */
  /* Times it became resident: a restore that waited for room tells by it
   * that someone else brought it in meanwhile, even when it was evicted
   * again since (its state alone looks unchanged then). */
  uint32_t arrivals;
  uint64_t failed_epoch; /* retry_epoch in which it was left out, or 0 */
  size_t charge;         /* bytes it counts against the limit */
  tarn__block block;
  tarn_source *source;          /* tarn_ref_create_from's, until death */
  struct tarn_ref *prev, *next; /* all live refs */
};

/* Destroyed refs' handles a pool keeps for its next refs, at most (80
 * KiB), until its next trim (tarn__pool_trim: the workers' rest). Each
 * handle is an aligned allocation, made and freed under the pool lock,
 * and glibc's memalign consolidated its fast bins at most of them: a
 * 256 x 1 matrix (one tile) made and destroyed took 300 ns, 60 % of it in
 * malloc and free, and 183 ns with the handles kept (a program outside
 * the repository, clock reads included, 2026-12-04). Not in debug builds,
 * which keep every handle (TARN_POOL_QUARANTINE). */
#define SPARE_REFS 256

/* sizeof(struct tarn_ref) rounded up to whole cache lines. */
static const size_t ref_bytes =
    (sizeof(struct tarn_ref) + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;

/* A freed buffer waiting in the cache; the link lives in the buffer. */
struct cached {
  struct cached *next;
};

enum { cache_classes = 16 };

struct io_job {
  tarn_ref *ref;
  struct io_job *next;
};

struct tarn_pool {
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a state change: I/O done, unpin, free */
  pthread_cond_t io_ready;
  atomic_int waiters; /* threads waiting for an unpin */
  /* tarn__magic_live(POOL_LIVE) from tarn_pool_create, TARN__MAGIC_DEAD
   * once the pool is freed (pool_ok, prim.h). */
  uint32_t magic;
  tarn_pool_options opt;
  char *spill_dir;
  tarn__store *store;
  tarn__runs *runs; /* small buffers; NULL: all from the heap */
  size_t page;
  atomic_bool has_sources;  /* a ref was made by tarn_ref_create_from */
  atomic_bool has_next_use; /* tarn__ref_next_use was called */
  /* Guarded by lock. */
  size_t resident, peak, inflight;
  size_t reading; /* refs being read back or given bytes (READING) */
  _Atomic uint64_t reads_ended; /* of those, how many have ended */
  size_t live_peak;             /* highest resident - cached */
  /* The same two highs for the runtime's regions (tarn__pool_peaks). */
  size_t window_peak, window_live_peak;
  /* Eviction skips a ref whose write failed (failed_epoch) until the
   * epoch moves on: when a write succeeds, or when a call with fewer than
   * FAILED_WRITES_A_CALL failures finds nothing else to evict
   * (failed_in_epoch: how many are skipped). */
  uint64_t retry_epoch;
  size_t failed_in_epoch;
  tarn_ref *refs; /* list of live refs; the clock hand walks it */
  tarn_ref *hand;
  /* The refs in use that eviction takes next (farthest_pass): far[0,
   * far_count), the farthest next use last; each has in_far set. */
  tarn_ref *far[FAR_MAX];
  size_t far_count;
  size_t live;
  size_t charge_max; /* no live ref has a larger charge (LARGEST's bound) */
  struct {
    size_t cap, count;
    struct cached *head;
  } cache[cache_classes];
  size_t cached;
  struct io_job *jobs, *jobs_tail;
  struct io_job *reads, *reads_tail; /* prefetches, for the reader */
  tarn_ref *reader_ref; /* the ref the reader is reading back, or NULL */
  pthread_t reader;
  bool has_reader;
  void (*owner_free)(void *ctx, void *owner);
  void *owner_ctx;
  bool stopping;        /* the writers end once their queue is empty */
  bool reader_stopping; /* the reader drops its queue and ends */
  pthread_t *io;
  unsigned nio;
  uint64_t evictions, spills, restores, cache_hits, cache_misses;
  uint64_t source_reads, source_bytes_read, source_read_ns;
  uint64_t source_writes, source_bytes_written, source_write_ns;
  uint64_t write_failures; /* evictions whose write failed */
  /* Failed writes the store did not see (it counts its own): a kind's
   * save, a home's write, the staging buffer's allocation; eviction's and
   * cleaning's both. tarn_pool_stats.write_failures adds them. */
  uint64_t unstored_failures;
  /* Cleaning (see clean_candidate): a write in flight; off after a failed
   * one until an eviction's write succeeds; the last look found nothing
   * (only the clock hand makes new candidates); writes done. */
  bool cleaning, clean_off, clean_dry;
  uint64_t cleanings;
  int last_error;
  tarn_ref *quarantine;
  /* Handles of destroyed refs kept for the next ones (see SPARE_REFS),
   * linked by `next`, TARN__MAGIC_DEAD until taken again. */
  tarn_ref *spare_refs;
  size_t nspare_refs;
};

#define POOL_LIVE 0x706f6f6cu /* "pool" */
_Static_assert(offsetof(struct tarn_pool, magic) >= TARN__MAGIC_MIN_OFFSET,
               "the pool's magic word lies past what free overwrites");

/* Whether `p` is a live pool: false for NULL, and false with a line on
 * stderr (as for a ref) for one already destroyed, while its memory is not
 * reused (tarn__magic_ok). */
static bool pool_ok(const tarn_pool *p) {
  return p != NULL &&
         tarn__magic_ok(p, p->magic, POOL_LIVE, "pool", "tarn_pool_destroy");
}

/* ---- options ------------------------------------------------------------ */

/* Bytes, or with a K, M, G or T suffix (powers of 1024; "Ki", "KB" and
 * "KiB" too; "B" alone). No sign: strtoull would wrap a negative value to
 * an enormous one. */
static int parse_bytes(const char *s, size_t *out) {
  if (s[0] < '0' || s[0] > '9') return TARN_EINVAL;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return TARN_EINVAL;
  unsigned shift = 0;
  switch (*end) {
    case 'k':
    case 'K':
      shift = 10;
      end++;
      break;
    case 'm':
    case 'M':
      shift = 20;
      end++;
      break;
    case 'g':
    case 'G':
      shift = 30;
      end++;
      break;
    case 't':
    case 'T':
      shift = 40;
      end++;
      break;
    default:
      break;
  }
  if (*end == 'i' && shift != 0) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0' || v > (SIZE_MAX >> shift)) return TARN_EINVAL;
  *out = (size_t)(v << shift);
  return 0;
}

/* "N%", N from 1 to 100 (digits only), as that share of the memory the
 * process may use (tarn__memory_usable), at least one byte. */
static int parse_percent(const char *s, size_t *out) {
  size_t digits = strspn(s, "0123456789");
  if (digits == 0 || digits > 3 || strcmp(s + digits, "%") != 0)
    return TARN_EINVAL;
  unsigned long pct = strtoul(s, NULL, 10);
  size_t usable = tarn__memory_usable();
  if (pct < 1 || pct > 100 || usable == 0) return TARN_EINVAL;
  size_t bytes = usable / 100 * pct + usable % 100 * pct / 100;
  *out = bytes != 0 ? bytes : 1;
  return 0;
}

int tarn_pool_limit_parse(const char *text, size_t *bytes) {
  if (text == NULL || bytes == NULL) return TARN_EINVAL;
  size_t v = 0;
  int rc = strchr(text, '%') != NULL ? parse_percent(text, &v)
                                     : parse_bytes(text, &v);
  if (rc == 0) *bytes = v;
  return rc;
}

/* TARN_MEM_LIMIT into *out when it is set (not empty). Returns 0, also
 * when unset or empty (*out untouched), or TARN_EINVAL. */
static int env_mem_limit(size_t *out) {
  const char *limit = getenv("TARN_MEM_LIMIT");
  if (limit == NULL || limit[0] == '\0') return 0;
  return tarn_pool_limit_parse(limit, out);
}

int tarn__pool_env_check(const char **name) {
  size_t limit;
  int huge;
  const char *bad = NULL;
  if (env_mem_limit(&limit) != 0)
    bad = "TARN_MEM_LIMIT";
  else if (tarn__env_flag("TARN_HUGE_PAGES", &huge) != 0)
    bad = "TARN_HUGE_PAGES";
  if (name != NULL) *name = bad;
  return bad != NULL ? TARN_EINVAL : 0;
}

/* Where the spill file goes unless TARN_SPILL_DIR says: TMPDIR, else
 * /tmp, unless that is kept in memory (tmpfs) and /var/tmp is not and
 * may be written. A spill file in memory frees none (Debian 13, Fedora
 * and Arch mount /tmp as tmpfs; /var/tmp is for large temporary files,
 * and the file is removed at once, so nothing stays there). A /var/tmp
 * that may not be written (a container run with a read-only root and a
 * tmpfs /tmp) would make every pool with a limit fail to open: TMPDIR
 * then, which spills if nothing frees. */
static const char *default_spill_dir(void) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  if (tarn__fs_in_memory(tmp, -1) == 1 &&
      tarn__fs_in_memory("/var/tmp", -1) == 0 && tarn__dir_writable("/var/tmp"))
    return "/var/tmp";
  return tmp;
}

int tarn_pool_options_init(tarn_pool_options *o) {
  if (o == NULL) return TARN_EINVAL;
  memset(o, 0, sizeof *o);
  o->policy = TARN_EVICT_CLOCK;
  o->io_threads = 2;
  o->cache_bytes = (size_t)256 << 20;
  o->huge_pages = 1;
  /* Each variable on its own: a bad one keeps its default only. */
  int bad_limit = env_mem_limit(&o->mem_limit);
  int bad_huge = tarn__env_flag("TARN_HUGE_PAGES", &o->huge_pages);
  int rc = bad_limit != 0 || bad_huge != 0 ? TARN_EINVAL : 0;
  const char *dir = getenv("TARN_SPILL_DIR");
  o->spill_dir = dir != NULL && dir[0] != '\0' ? dir : default_spill_dir();
  return rc;
}

/* ---- the recycling cache (lock held) ---------------------------------- */

static void *cache_take(tarn_pool *p, size_t cap) {
  for (int i = 0; i < cache_classes; i++) {
    if (p->cache[i].cap != cap || p->cache[i].head == NULL) continue;
    struct cached *c = p->cache[i].head;
    p->cache[i].head = c->next;
    p->cache[i].count--;
    p->cached -= cap;
    p->cache_hits++;
    return c;
  }
  return NULL;
}

/* Keeps `buf` for reuse if the cache has room; returns whether it did. */
static bool cache_put(tarn_pool *p, void *buf, size_t cap) {
  if (p->cached + cap > p->opt.cache_bytes) return false;
  int slot = -1;
  for (int i = 0; i < cache_classes; i++) {
    if (p->cache[i].cap == cap) {
      slot = i;
      break;
    }
    if (slot < 0 && p->cache[i].count == 0) slot = i;
  }
  if (slot < 0) return false;
  struct cached *c = buf;
  p->cache[slot].cap = cap;
  c->next = p->cache[slot].head;
  p->cache[slot].head = c;
  p->cache[slot].count++;
  p->cached += cap;
  return true;
}

/* ---- bytes buffers ------------------------------------------------------ */

/* Whether a buffer of cap bytes lies on huge pages: decided by the size and
 * the pool's option alone, so buffer_free needs no record of it. */
static bool buffer_huge(const tarn_pool *p, size_t cap) {
  return p->opt.huge_pages && cap >= TARN_HUGE_PAGE;
}

/* A new bytes buffer of cap bytes (a multiple of the page), or NULL: a
 * slot of a page run up to RUNS_MAX_PAGES pages (no heap padding), a
 * mapping on huge pages from 2 MiB, else from the heap. Thread-safe. */
static void *buffer_new(const tarn_pool *p, size_t cap) {
  if (tarn__runs_serves(p->runs, cap)) return tarn__runs_alloc(p->runs, cap);
  if (!buffer_huge(p, cap)) return aligned_alloc(p->page, cap);
  void *buf = NULL;
  return tarn__vm_map_huge(cap, &buf) == 0 ? buf : NULL;
}

/* Gives a buffer from buffer_new back to the system. Thread-safe. */
static void buffer_free(const tarn_pool *p, void *buf, size_t cap) {
  if (tarn__runs_serves(p->runs, cap))
    tarn__runs_free(p->runs, buf);
  else if (buffer_huge(p, cap))
    tarn__vm_unreserve(buf, cap);
  else {
    free(buf);
    tarn__heap_freed(cap);
  }
}

/* Frees every cached buffer and takes it off the resident count. */
static void cache_drop(tarn_pool *p) {
  for (int i = 0; i < cache_classes; i++) {
    while (p->cache[i].head != NULL) {
      struct cached *c = p->cache[i].head;
      p->cache[i].head = c->next;
      buffer_free(p, c, p->cache[i].cap);
    }
    p->resident -= p->cache[i].count * p->cache[i].cap;
    p->cache[i].count = 0;
  }
  p->cached = 0;
}

/* Gives a resident bytes buffer back: to the cache, or to the system. */
static void buffer_retire(tarn_pool *p, void *buf, size_t cap) {
  if (!cache_put(p, buf, cap)) {
    buffer_free(p, buf, cap);
    p->resident -= cap;
  }
}

/* ---- lists -------------------------------------------------------------- */

static void list_add(tarn_pool *p, tarn_ref *r) {
  if (r->charge > p->charge_max) p->charge_max = r->charge;
  r->prev = NULL;
  r->next = p->refs;
  if (p->refs != NULL) p->refs->prev = r;
  p->refs = r;
  p->live++;
}

/* Takes `r` (in_far) out of p->far. */
static void far_forget(tarn_pool *p, tarn_ref *r) {
  size_t i = 0;
  while (i < p->far_count && p->far[i] != r) i++;
  if (i < p->far_count) {
    memmove(&p->far[i], &p->far[i + 1],
            (p->far_count - i - 1) * sizeof *p->far);
    p->far_count--;
  }
  r->in_far = false;
}

static void list_remove(tarn_pool *p, tarn_ref *r) {
  if (r->in_far) far_forget(p, r);
  if (p->hand == r) p->hand = r->next;
  if (r->prev != NULL)
    r->prev->next = r->next;
  else
    p->refs = r->next;
  if (r->next != NULL) r->next->prev = r->prev;
  p->live--;
}

/* ---- freeing (lock held) ------------------------------------------------ */

/* Whether nothing uses a ref but its holders: no pin, no I/O, no reader. A
 * dead idle ref is freed at once. */
static bool idle(const tarn_ref *r) {
  return (atomic_load(&r->pinword) & PIN_MASK) == 0 && !r->guarded &&
         (r->state == RESIDENT || r->state == SPILLED || r->state == EMPTY);
}

/* Appends a job for `r` to the queue *head .. *tail and wakes the I/O
 * threads (lock held). Returns 0 or TARN_ENOMEM. */
static int job_append(tarn_pool *p, struct io_job **head, struct io_job **tail,
                      tarn_ref *r) {
  struct io_job *job = malloc(sizeof *job);
  if (job == NULL) return TARN_ENOMEM;
  job->ref = r;
  job->next = NULL;
  if (*tail != NULL)
    (*tail)->next = job;
  else
    *head = job;
  *tail = job;
  pthread_cond_broadcast(&p->io_ready);
  return 0;
}

/* Queues a reader's job for `r` (lock held). Returns 0 or TARN_ENOMEM. */
static int reads_append(tarn_pool *p, tarn_ref *r) {
  int rc = job_append(p, &p->reads, &p->reads_tail, r);
  if (rc == 0) r->queued = true;
  return rc;
}

/* Takes a dying ref's job off the reader's queue. */
static void reads_remove(tarn_pool *p, tarn_ref *r) {
  struct io_job **at = &p->reads, *prev = NULL;
  while (*at != NULL && (*at)->ref != r) {
    prev = *at;
    at = &(*at)->next;
  }
  if (*at == NULL) return;
  struct io_job *job = *at;
  *at = job->next;
  if (p->reads_tail == job) p->reads_tail = prev;
  free(job);
}

/* Frees the RAM of a resident object `obj` of `r`: a bytes buffer to the
 * cache (or the system), a user object through its kind with the lock
 * dropped. */
static void object_free(tarn_pool *p, tarn_ref *r, void *obj) {
  if (r->kind == NULL) {
    buffer_retire(p, obj, r->charge);
    return;
  }
  /* Once the lock is dropped another thread may free `r`: copy first. */
  const tarn_kind *kind = r->kind;
  size_t size = r->size;
  p->resident -= r->charge;
  pthread_mutex_unlock(&p->lock);
  kind->free(kind->ctx, obj, size);
  pthread_mutex_lock(&p->lock);
}

/* Takes a resident object whose spilled copy (or source) is current out of
 * RAM. */
static void drop_to_disk(tarn_pool *p, tarn_ref *r) {
  void *obj = r->data;
  r->data = NULL;
  r->state = SPILLED;
  object_free(p, r, obj);
}

/* Frees a dead, unpinned ref that no I/O is using: its RAM, its block, the
 * handle. A user kind's free runs with the lock dropped. */
static void ref_destroy(tarn_pool *p, tarn_ref *r) {
  /* While the lock is dropped below, `r` is dead and unpinned but must not
   * look idle: a second ref_destroy would put its buffer in the cache
   * twice. */
  r->guarded = true;
  list_remove(p, r);
  if (r->queued) reads_remove(p, r);
  if (r->has_block) tarn__store_free(p->store, &r->block);
  void *data = r->data;
  r->data = NULL;
  if (r->state == RESIDENT && data != NULL) object_free(p, r, data);
  void *owner = atomic_exchange(&r->owner, NULL);
  if (owner != NULL && p->owner_free != NULL) {
    pthread_mutex_unlock(&p->lock);
    p->owner_free(p->owner_ctx, owner);
    pthread_mutex_lock(&p->lock);
  }
  tarn_source *source = r->source;
  r->source = NULL;
  r->has_source = false;
  if (source != NULL) {
    pthread_mutex_unlock(&p->lock);
    if (source->release != NULL) source->release(source->ctx);
    free(source);
    pthread_mutex_lock(&p->lock);
  }
  atomic_store_explicit(&r->magic, TARN__MAGIC_DEAD, memory_order_relaxed);
#ifdef TARN_POOL_QUARANTINE
  r->next = p->quarantine;
  p->quarantine = r;
#else
  if (p->nspare_refs < SPARE_REFS) {
    r->next = p->spare_refs;
    p->spare_refs = r;
    p->nspare_refs++;
  } else {
    free(r);
    tarn__heap_freed(ref_bytes);
  }
#endif
  pthread_cond_broadcast(&p->changed);
}

/* Frees the handles kept for reuse (lock held). */
static void spare_refs_drop(tarn_pool *p) {
  while (p->spare_refs != NULL) {
    tarn_ref *r = p->spare_refs;
    p->spare_refs = r->next;
    free(r);
    tarn__heap_freed(ref_bytes);
  }
  p->nspare_refs = 0;
}

/* Frees a dead ref that nothing pins (lock held): at once when no I/O
 * uses it; when the reader holds it (a read ahead begun before a pin read
 * it back, waiting in make_room for room), its RAM now and the handle
 * when the reader lets go. Kept resident, bytes no one can use held room
 * that a pin then found nowhere (a task failed with TARN_ENOMEM under a
 * limit that held all its data). */
static void dead_unpinned(tarn_pool *p, tarn_ref *r) {
  if (idle(r)) {
    ref_destroy(p, r);
    return;
  }
  if (r != p->reader_ref || r->state != RESIDENT || r->data == NULL) return;
  void *obj = r->data;
  r->data = NULL;
  r->state = EMPTY; /* the reader leaves it be, then frees it */
  object_free(p, r, obj);
  pthread_cond_broadcast(&p->changed);
}

/* ---- eviction (lock held) ----------------------------------------------- */

/* Whether eviction may drop `r` without writing it: its spilled copy, or
 * its source, holds its bytes. */
static bool is_clean(const tarn_ref *r) {
  return (r->has_block || r->has_source) && (atomic_load(&r->pinword) & CLEAN);
}

/* Whether `r`'s source takes its bytes back (tarn_source.write): then it
 * is stored there, never in the spill store. */
static bool backed(const tarn_ref *r) {
  return r->source != NULL && r->source->write != NULL;
}

static bool spillable(const tarn_ref *r) {
  return r->kind == NULL || (r->kind->save != NULL && r->kind->load != NULL);
}

/* Takes `r` out of the lock-free path if it is idle; true on success. */
static bool claim_idle(tarn_ref *r) {
  uint64_t w = atomic_load(&r->pinword);
  while ((w & FAST) && (w & PIN_MASK) == 0)
    if (atomic_compare_exchange_weak(&r->pinword, &w, w & ~FAST)) return true;
  return false;
}

static bool candidate(const tarn_pool *p, const tarn_ref *r) {
  return r->state == RESIDENT && !r->escaped && !r->dead && spillable(r) &&
         r->failed_epoch != p->retry_epoch &&
         (atomic_load(&r->pinword) & PIN_MASK) == 0;
}

/* Whether no submitted task still uses `r` (tarn__ref_demand). */
static bool idle_in_graph(const tarn_ref *r) {
  return atomic_load_explicit(&r->demand, memory_order_relaxed) == 0;
}

/* Refs CLOCK looks past a dirty victim for a clean one. */
#define CLEAN_LOOKAHEAD 16
/* Refs the first CLOCK pass looks at for one no task uses, at most: the
 * pass holds the pool lock and touches two cache lines per ref, so when
 * every ref is in use it costs at most some tens of microseconds. */
#define IDLE_SCAN 256

/* One CLOCK pass over at most `steps` refs, among the candidates no task
 * uses when `idle_only`, else among all: the first unreferenced clean
 * candidate, or the first unreferenced dirty one when no clean one follows
 * it within CLEAN_LOOKAHEAD refs, claimed; or NULL. Passing a referenced
 * candidate clears its bit (its second chance). */
static tarn_ref *clock_pass(tarn_pool *p, size_t steps, bool idle_only) {
  tarn_ref *dirty = NULL;
  size_t lookahead = 0;
  for (size_t n = 0; n < steps; n++) {
    if (dirty != NULL && lookahead++ == CLEAN_LOOKAHEAD) break;
    if (p->hand == NULL) p->hand = p->refs;
    tarn_ref *r = p->hand;
    if (r == NULL) break;
    p->hand = r->next;
    if ((idle_only && !idle_in_graph(r)) || !candidate(p, r)) continue;
    if (atomic_exchange_explicit(&r->referenced, 0, memory_order_relaxed))
      continue;
    if (!is_clean(r)) {
      if (dirty == NULL) dirty = r;
      continue;
    }
    if (claim_idle(r)) return r;
  }
  return dirty != NULL && candidate(p, dirty) && claim_idle(dirty) ? dirty
                                                                   : NULL;
}

/* A candidate in use as farthest_pass ranks it: a later next use first,
 * then a clean one (dropped without a write). */
struct far_key {
  tarn_ref *ref;
  uint64_t use;
  bool clean;
};

static bool far_before(const struct far_key *a, const struct far_key *b) {
  return a->use != b->use ? a->use < b->use : !a->clean && b->clean;
}

static int far_compare(const void *x, const void *y) {
  const struct far_key *a = x, *b = y;
  return far_before(a, b) ? -1 : far_before(b, a) ? 1 : 0;
}

/* Offers `k` to the min-heap h[0, *n), which keeps the FAR_MAX latest. */
static void far_heap_offer(struct far_key *h, size_t *n, struct far_key k) {
  size_t i;
  if (*n < FAR_MAX) {
    i = (*n)++;
    while (i > 0 && far_before(&k, &h[(i - 1) / 2])) {
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    h[i] = k;
    return;
  }
  if (!far_before(&h[0], &k)) return;
  i = 0; /* replace the root, sift down */
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && far_before(&h[c + 1], &h[c])) c++;
    if (!far_before(&h[c], &k)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = k;
}

/* One victim in this many candidates in use is kept by far_fill. */
#define FAR_SHARE 8

/* Refills p->far (empty): false when no candidate is in use. Among the
 * candidates that a submitted task uses and that were not used since the
 * last walk (a walk takes the mark of the others: CLOCK's second chance;
 * when every one was used since, a second walk takes them all), it keeps
 * the ones with the latest next uses, one in FAR_SHARE of the candidates
 * (FAR_MAX at most, one at least), in order. Between walks the next uses
 * only move later, so the kept stay among the farthest. A walk steps over
 * every live ref, under the pool lock; one per eighth of the candidates
 * spreads it to about eight refs per candidate per victim, and a product
 * of 64 x 64 tiles read back about as many tiles as with a walk per victim
 * (3,400 to 5,400 against 4,200 at N=2048 under 16 MB). The mark keeps
 * what the order submitted cannot tell: a task that runs early by its
 * priority (a factorisation's next panel) makes tiles whose next use in
 * that order is far, yet comes soon. */
static bool far_fill(tarn_pool *p) {
  struct far_key heap[FAR_MAX];
  size_t n = 0, candidates = 0;
  for (int walk = 0; walk < 2 && n == 0; walk++) {
    candidates = 0;
    for (tarn_ref *r = p->refs; r != NULL; r = r->next) {
      if (!candidate(p, r) || idle_in_graph(r)) continue;
      candidates++;
      if (atomic_exchange_explicit(&r->referenced, 0, memory_order_relaxed) &&
          walk == 0)
        continue;
      struct far_key k = {
          r, atomic_load_explicit(&r->next_use, memory_order_relaxed),
          is_clean(r)};
      far_heap_offer(heap, &n, k);
    }
    if (candidates == 0) return false;
  }
  qsort(heap, n, sizeof *heap, far_compare);
  size_t keep = candidates / FAR_SHARE > 0 ? candidates / FAR_SHARE : 1;
  if (keep > n) keep = n;
  for (size_t i = 0; i < keep; i++) {
    p->far[i] = heap[n - keep + i].ref;
    p->far[i]->in_far = true;
  }
  p->far_count = keep;
  return true;
}

/* The candidate in use whose next use (tarn__ref_next_use) comes last
 * among those of the last walk (far_fill), claimed; or NULL: before the
 * runtime keeps next uses (has_next_use), or when no candidate is in use.
 * Belady's choice from the submitted graph, between CLOCK's pass over the
 * refs no task uses and its pass over all: a tiled product whose output
 * does not fit keeps a block of it resident while the tiles of the inputs
 * it has read, needed again only for the next block, go, where CLOCK took
 * any tile (every one is in use, and was recently used). */
static tarn_ref *farthest_pass(tarn_pool *p) {
  if (!atomic_load_explicit(&p->has_next_use, memory_order_relaxed))
    return NULL;
  for (int walk = 0; walk < 2; walk++) {
    while (p->far_count > 0) {
      tarn_ref *r = p->far[--p->far_count];
      r->in_far = false;
      if (candidate(p, r) && claim_idle(r)) return r;
    }
    if (walk == 0 && !far_fill(p)) return NULL;
  }
  return NULL;
}

/* LARGEST's victim, claimed, or NULL: an unused candidate (no submitted
 * task uses it) before any other, the largest among them; with
 * `unused_only`, only an unused one. The walk starts at the hand (past
 * the last victim) and stops at the first unused candidate as large as
 * any live ref (charge_max), so with refs of one size it costs what it
 * steps over since the last victim, not the whole list (which made it
 * 284 times slower than CLOCK per eviction over 16,384 small objects:
 * `tarn bench pool`, "evict small"). A full walk makes charge_max exact
 * again. */
static tarn_ref *largest_victim(tarn_pool *p, bool unused_only) {
  tarn_ref *best = NULL;
  bool best_idle = false;
  size_t largest = 0, n = 0;
  tarn_ref *r = p->hand != NULL ? p->hand : p->refs;
  for (; n < p->live; n++, r = r->next != NULL ? r->next : p->refs) {
    if (r->charge > largest) largest = r->charge;
    if (!candidate(p, r)) continue;
    bool idle = idle_in_graph(r);
    if (unused_only && !idle) continue;
    if (best == NULL || idle > best_idle ||
        (idle == best_idle && r->charge > best->charge)) {
      best = r;
      best_idle = idle;
      if (idle && r->charge >= p->charge_max) break;
    }
  }
  if (n == p->live) p->charge_max = largest;
  if (best == NULL || !claim_idle(best)) return NULL;
  p->hand = best->next;
  return best;
}

/* Picks the next victim by the pool's policy and claims it, or NULL;
 * with `unused_only`, only among the refs no submitted task uses. The
 * hand clears bits as it goes: cleaning may find candidates again. */
static tarn_ref *pick_victim(tarn_pool *p, bool unused_only) {
  p->clean_dry = false;
  if (p->opt.policy == TARN_EVICT_LARGEST)
    return largest_victim(p, unused_only);
  /* CLOCK, first among the refs no submitted task uses (a finished tile
   * column of a factorisation, the other triangle, inputs whose products
   * are done), then among all; two sweeps at most each (the first may
   * only clear bits). A clean victim (its spilled copy current: dropped
   * without a write) is preferred to a dirty one. */
  size_t sweeps = 2 * p->live + 1;
  tarn_ref *v = clock_pass(p, sweeps < IDLE_SCAN ? sweeps : IDLE_SCAN, true);
  if (v != NULL || unused_only) return v;
  v = farthest_pass(p);
  return v != NULL ? v : clock_pass(p, sweeps, false);
}

/* Leaves `r` out of eviction until the retry epoch moves on: its write
 * failed, could not be queued, or a call on a failing disk passed it
 * over. */
static void skip_failed(tarn_pool *p, tarn_ref *r) {
  r->failed_epoch = p->retry_epoch;
  p->failed_in_epoch++;
}

/* Lets eviction try again the refs whose writes failed. */
static void retry_failed(tarn_pool *p) {
  p->retry_epoch++;
  p->failed_in_epoch = 0;
}

/* Evicts `r` (claimed, RESIDENT): drops it when its spilled copy is current,
 * else queues it for an I/O thread. */
static void evict(tarn_pool *p, tarn_ref *r) {
  if (is_clean(r)) {
    p->evictions++;
    drop_to_disk(p, r);
    pthread_cond_broadcast(&p->changed);
    return;
  }
  if (job_append(p, &p->jobs, &p->jobs_tail, r) != 0) {
    atomic_fetch_or(&r->pinword, FAST); /* cannot queue: leave it resident */
    skip_failed(p, r);
    return;
  }
  r->state = WRITING;
  p->inflight += r->charge;
}

/* Cleaning: above CLEAN_FROM_PERCENT of the limit, an I/O thread with no
 * eviction to write writes a dirty object the clock hand is about to reach
 * (unreferenced since the hand last passed it, among the next CLEAN_AHEAD
 * refs) and leaves it in RAM, clean: when the hand takes it, it is dropped
 * without a write, so making room waits for no write and a read-back for
 * no eviction. One such write at a time, only while the I/O thread would
 * idle. */
#define CLEAN_FROM_PERCENT 75
#define CLEAN_AHEAD 64

static bool clean_wanted(const tarn_pool *p) {
  size_t limit = p->opt.mem_limit;
  return limit != 0 && !p->cleaning && !p->clean_off && !p->stopping &&
         p->resident - p->cached >= limit / 100 * CLEAN_FROM_PERCENT;
}

/* A ref to clean, claimed and WRITING, or NULL (lock held): among the next
 * CLEAN_AHEAD refs from the hand, an unreferenced dirty candidate that no
 * submitted task uses; or, when none of them is unused, any unreferenced
 * dirty candidate (eviction takes unused refs first, so those are the
 * ones it reaches next). */
static tarn_ref *clean_candidate(tarn_pool *p) {
  if (!clean_wanted(p) || p->clean_dry) return NULL;
  bool any_idle = false;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1 && any_idle) break; /* unused ones go first: wait for them */
    tarn_ref *r = p->hand != NULL ? p->hand : p->refs;
    for (size_t n = 0; r != NULL && n < CLEAN_AHEAD && n < p->live; n++) {
      if (candidate(p, r)) {
        bool idle = idle_in_graph(r);
        any_idle = any_idle || idle;
        if ((idle || pass == 1) && !is_clean(r) &&
            !atomic_load_explicit(&r->referenced, memory_order_relaxed) &&
            claim_idle(r)) {
          r->state = WRITING;
          r->cleaning = true;
          p->cleaning = true;
          return r;
        }
      }
      r = r->next != NULL ? r->next : p->refs;
    }
  }
  p->clean_dry = true;
  return NULL;
}

static uint64_t deadline_after(uint64_t timeout_ns) {
  uint64_t now = tarn__clock_ns(); /* saturated: now + a long one wrapped */
  return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

/* Waits on `changed` until signalled or `deadline` (CLOCK_MONOTONIC ns);
 * returns false on time-out. */
static bool wait_changed(tarn_pool *p, uint64_t deadline) {
  if (deadline == UINT64_MAX) {
    pthread_cond_wait(&p->changed, &p->lock);
    return true;
  }
  uint64_t now = tarn__clock_ns();
  if (now >= deadline) return false;
  struct timespec ts = {(time_t)(deadline / 1000000000u),
                        (long)(deadline % 1000000000u)};
  return pthread_cond_timedwait(&p->changed, &p->lock, &ts) != ETIMEDOUT ||
         tarn__clock_ns() < deadline;
}

/* Raises the peak of live bytes (resident less the cache) to the current
 * value: called wherever live objects grow, which is only make_room (fresh
 * bytes, or a buffer taken from the cache). */
static void note_live(tarn_pool *p) {
  size_t live = p->resident - p->cached;
  if (live > p->live_peak) p->live_peak = live;
  if (live > p->window_live_peak) p->window_live_peak = live;
}

/* Counts `need` more resident bytes and raises the peaks (the room was
 * checked by the caller). */
static void take_room(tarn_pool *p, size_t need) {
  p->resident += need;
  if (p->resident > p->peak) p->peak = p->resident;
  if (p->resident > p->window_peak) p->window_peak = p->resident;
  note_live(p);
}

/* Puts `obj` in `r` (READING until now, lock held): RESIDENT, clean when
 * its spilled copy or source holds its bytes, with `pins` pins for the
 * caller, pinnable without the lock unless it died meanwhile. */
static void became_resident(tarn_ref *r, void *obj, bool clean, uint64_t pins) {
  r->data = obj;
  r->state = RESIDENT;
  r->arrivals++;
  uint64_t w = atomic_load(&r->pinword) & (NOTIFY | PIN_MASK);
  atomic_store(&r->pinword,
               w | (clean ? CLEAN : 0) | (r->dead ? 0 : FAST) | pins);
  atomic_store_explicit(&r->referenced, 1, memory_order_relaxed);
  /* Back: a reader's job still queued for it is skipped when reached,
   * instead of reading it again after its task let it go. */
  r->prefetching = false;
}

/* Failed writes during a call after which it writes no more (one may be
 * a passing fault: the call writes another victim instead), and the dirty
 * victims it then passes over while it looks for clean copies to drop. */
#define FAILED_WRITES_A_CALL 2
#define FAILING_PASS_OVER 8

/* Makes room for `need` more resident bytes and counts them. With `cap`
 * nonzero the room is for a bytes buffer of that capacity (== need): a
 * cached buffer of it is taken instead when there is one (*buf). A read
 * ahead (`ahead_read`) evicts only what no submitted task uses: trading
 * data a task needs for data a task needs is no gain, and the evicted one
 * may be needed first (under a limit that holds one task's data, a read
 * ahead for the next task pushed out the input of the task about to run,
 * which then read it again). */
static int make_room_waiting(tarn_pool *p, size_t need, size_t cap, void **buf,
                             uint64_t timeout_ns, bool ahead_read,
                             bool *registered) {
  uint64_t deadline = 0;
  bool waited = false, retried = false, expired = false;
  uint64_t failures = p->write_failures;
  for (;;) {
    if (cap != 0 && (*buf = cache_take(p, cap)) != NULL) {
      note_live(p);
      return 0;
    }
    size_t limit = p->opt.mem_limit;
    if (limit == 0 || (need <= limit && p->resident <= limit - need)) {
      take_room(p, need);
      if (p->jobs == NULL && !p->clean_dry && clean_wanted(p))
        pthread_cond_broadcast(&p->io_ready); /* the reader waits on it too */
      return 0;
    }
    if (need > limit) return TARN_ENOMEM;
    if (p->cached > 0) {
      cache_drop(p);
      continue;
    }
    /* Cached bytes count as free: they are taken or dropped next round.
     * Write-behind: evict room for one more request of this size too, so
     * its write overlaps the caller's work and the next call finds room.
     * Once FAILED_WRITES_A_CALL writes have failed during this call the
     * disk is failing: the call writes no more (calls that went on took
     * turns trying each other's failed victims again for as long as any
     * write was in flight: tens of thousands of writes on a full disk),
     * it only drops clean copies, passing over a few dirty victims, then
     * waits for the writes in flight and returns their error. */
    size_t ahead = need <= limit - need ? need : 0;
    bool failing = p->write_failures - failures >= FAILED_WRITES_A_CALL;
    int passed = 0;
    while (p->resident + need + ahead > limit + p->inflight + p->cached) {
      tarn_ref *v = pick_victim(p, ahead_read);
      if (v == NULL && !retried && !failing && p->failed_in_epoch > 0) {
        retried = true; /* once a call: the fault may have passed */
        retry_failed(p);
        continue;
      }
      if (v == NULL) break;
      if (failing && !is_clean(v)) {
        atomic_fetch_or(&v->pinword, FAST); /* back, unwritten */
        skip_failed(p, v);
        if (++passed == FAILING_PASS_OVER) break;
        continue;
      }
      evict(p, v);
    }
    if (p->resident + need <= limit || p->cached > 0) continue;
    /* A write in flight frees its bytes, or (cleaning) leaves a victim
     * that is dropped without a write: wait for it. */
    if (p->inflight > 0 || p->cleaning) {
      pthread_cond_wait(&p->changed, &p->lock);
      continue;
    }
    if (p->write_failures != failures) return p->last_error;
    if (timeout_ns == 0 || expired) return TARN_ENOMEM;
    if (!waited) {
      deadline = deadline_after(timeout_ns);
      waited = true;
    }
    /* An unpin without the lock (tarn_ref_unpin) wakes the waiters it
     * sees counted. So the call is counted first, then looks again: an
     * unpin before the count is seen by that look (the fence here and the
     * unpin's sequentially consistent exchange order them), one after it
     * sees the count and broadcasts, which it can do only once this
     * thread waits (the lock). Until 2026-12-05 the count came after the
     * look: an unpin between them woke no one, and the call waited out
     * its timeout (about 1 in 100 calls with a pin held microseconds, in
     * a probe; with no timeout, for ever). */
    if (!*registered) {
      atomic_fetch_add(&p->waiters, 1);
      atomic_thread_fence(memory_order_seq_cst);
      *registered = true;
      continue;
    }
    /* past the deadline, one more look before giving up */
    if (!wait_changed(p, deadline)) expired = true;
  }
}

static int make_room(tarn_pool *p, size_t need, size_t cap, void **buf,
                     uint64_t timeout_ns, bool ahead_read) {
  bool registered = false;
  int rc =
      make_room_waiting(p, need, cap, buf, timeout_ns, ahead_read, &registered);
  if (registered) atomic_fetch_sub(&p->waiters, 1);
  return rc;
}

/* ---- I/O threads -------------------------------------------------------- */

/* Stores `r`'s bytes through its source's write (no lock held; the caller
 * keeps `r` resident and unwritten meanwhile): returns its status and adds
 * the time taken to *ns. */
static int store_in_source(tarn_ref *r, uint64_t *ns) {
  uint64_t t0 = tarn__clock_ns();
  int rc = r->source->write(r->source->ctx, r->data, r->size);
  *ns += tarn__clock_ns() - t0;
  return rc > 0 ? TARN_EIO : rc; /* not a status: the source broke its word */
}

/* Counts a store in the source and makes the source `r`'s copy (lock
 * held). */
static void stored_in_source(tarn_pool *p, tarn_ref *r, uint64_t ns) {
  r->has_source = true;
  p->source_writes++;
  p->source_bytes_written += r->size;
  p->source_write_ns += ns;
}

/* What a failed eviction write tells the calls that waited for its room
 * (tarn_ref_alloc, tarn_ref_pin, ...: TARN_EIO or TARN_ENOSPC, pool.h),
 * whatever a kind's save or a source's write returned: TARN_ENOMEM (no
 * staging buffer) and TARN_ENOSPC stay, anything else is TARN_EIO (a
 * callback's TARN_EINVAL would read as the caller's bad argument). */
static int eviction_status(int rc) {
  return rc == 0 || rc == TARN_ENOSPC || rc == TARN_ENOMEM ? rc : TARN_EIO;
}

/* Writes one victim's spill image, or stores it in its source (no lock
 * held); *ns gets the time a store took. Returns 0 or eviction_status. */
static int write_victim(tarn_pool *p, tarn_ref *r, tarn__block *block,
                        uint64_t *ns, bool *by_store) {
  *ns = 0;
  *by_store = false;
  if (backed(r)) return eviction_status(store_in_source(r, ns));
  size_t cap = tarn__page_round(r->size);
  if (r->kind == NULL) {
    /* The store writes whole units past the page cache: the rest of the
     * last page goes too. It is the pool's, never a caller's, and may hold
     * a freed object's bytes: zeros go to the file instead. */
    memset((char *)r->data + r->size, 0, cap - r->size);
    *by_store = true;
    return tarn__store_write(p->store, r->data, r->size, block);
  }
  void *staging = aligned_alloc(p->page, cap);
  if (staging == NULL) return TARN_ENOMEM;
  int rc = r->kind->save(r->kind->ctx, r->data, r->size, staging);
  memset((char *)staging + r->size, 0, cap - r->size);
  if (rc == 0) {
    *by_store = true;
    rc = tarn__store_write(p->store, staging, r->size, block);
  }
  free(staging);
  return eviction_status(rc);
}

/* Finishes a write (lock held): an evicted object leaves RAM unless it was
 * pinned, escaped or died meanwhile; a cleaned one stays, clean. */
static void finish_write(tarn_pool *p, tarn_ref *r, int rc,
                         const tarn__block *block, uint64_t ns, bool by_store) {
  bool cleaning = r->cleaning;
  r->cleaning = false;
  if (cleaning)
    p->cleaning = false;
  else
    p->inflight -= r->charge;
  if (rc != 0 && !by_store) p->unstored_failures++;
  if (rc != 0 && cleaning) {
    /* counted (until 2026-12-05 a kind's save or a home's write failing
     * here was not: the store counts only its own) */
    p->last_error = rc;
    p->clean_off = true; /* the disk may be full: until a write succeeds */
  } else if (rc != 0) {
    p->write_failures++;
    p->last_error = rc;
    skip_failed(p, r);
  } else if (backed(r)) {
    stored_in_source(p, r, ns);
    if (!cleaning) p->clean_off = false;
  } else {
    if (r->has_block) tarn__store_free(p->store, &r->block);
    r->block = *block;
    r->has_block = true;
    r->has_source = false; /* written: it was written to since its read */
    p->spills++;
    if (cleaning)
      p->cleanings++;
    else
      p->clean_off = false;
  }
  if (rc == 0 && p->failed_in_epoch > 0)
    retry_failed(p); /* the disk works again: what failed may be written */
  uint64_t w = atomic_load(&r->pinword);
  r->state = RESIDENT;
  /* Released meanwhile: freed, or its RAM only when the reader holds it
   * (it may wait in make_room for a prefetch of `r` begun before `r` was
   * read back, evicted and released; freeing the handle here too freed it
   * twice, and the reader then used it). */
  if (r->dead && (w & PIN_MASK) == 0) {
    dead_unpinned(p, r);
    pthread_cond_broadcast(&p->changed);
    return;
  }
  if (rc == 0) w = atomic_fetch_or(&r->pinword, CLEAN) | CLEAN;
  if (!cleaning && rc == 0 && (w & PIN_MASK) == 0 && !r->escaped && !r->dead) {
    p->evictions++; /* counted as it leaves (a pin meanwhile keeps it) */
    drop_to_disk(p, r);
  } else if (!r->dead) {
    atomic_fetch_or(&r->pinword, FAST);
  }
  pthread_cond_broadcast(&p->changed);
}

static void *io_main(void *arg) {
  tarn_pool *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    tarn_ref *r = NULL;
    while (p->jobs == NULL && !p->stopping && (r = clean_candidate(p)) == NULL)
      pthread_cond_wait(&p->io_ready, &p->lock);
    if (r == NULL && p->jobs == NULL) break;
    if (r == NULL) {
      struct io_job *job = p->jobs;
      p->jobs = job->next;
      if (p->jobs == NULL) p->jobs_tail = NULL;
      r = job->ref;
      free(job);
    }
    /* A WRITING ref's data and kind do not change until finish_write, and
     * only read pins are admitted meanwhile: reading it unlocked is safe. */
    pthread_mutex_unlock(&p->lock);
    tarn__block block;
    uint64_t ns;
    bool by_store;
    int rc = write_victim(p, r, &block, &ns, &by_store);
    pthread_mutex_lock(&p->lock);
    finish_write(p, r, rc, &block, ns, by_store);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static int restore(tarn_pool *p, tarn_ref *r, tarn_access mode,
                   uint64_t timeout_ns, uint64_t pins);

/* The reader thread: reads prefetched objects back. It may wait for writes
 * (the writers never wait for anything), never for an unpin. */
static void *reader_main(void *arg) {
  tarn_pool *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->reads == NULL && !p->reader_stopping)
      pthread_cond_wait(&p->io_ready, &p->lock);
    if (p->reader_stopping) { /* a prefetch is a wish: dropped */
      while (p->reads != NULL) {
        struct io_job *job = p->reads;
        p->reads = job->next;
        job->ref->queued = false;
        job->ref->prefetching = false;
        free(job);
      }
      p->reads_tail = NULL;
      break;
    }
    struct io_job *job = p->reads;
    p->reads = job->next;
    if (p->reads == NULL) p->reads_tail = NULL;
    tarn_ref *r = job->ref;
    free(job);
    r->queued = false;
    /* Read back by a pin meanwhile (which took the wish back), or gone. */
    if (!r->prefetching || r->state != SPILLED || r->dead) continue;
    r->prefetching = false;
    /* Guarded, the ref outlives a release while the lock is dropped.
     * Done once it arrives, by this read or another's. */
    r->guarded = true;
    p->reader_ref = r;
    uint32_t arrivals = r->arrivals;
    while (r->state == SPILLED && r->arrivals == arrivals &&
           restore(p, r, TARN_READ, 0, 0) == 1) {
    }
    p->reader_ref = NULL;
    r->guarded = false;
    if (r->dead && idle(r)) ref_destroy(p, r);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static bool ref_ok(const tarn_ref *r);

int tarn_ref_prefetch(tarn_ref *r) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  if (atomic_load_explicit(&r->pinword, memory_order_relaxed) & FAST)
    return 0; /* resident: the common case costs no lock */
  tarn_pool *p = r->pool;
  if (!p->has_reader) return 0; /* no store, no reader: the pin reads it */
  pthread_mutex_lock(&p->lock);
  int rc = 0;
  if (r->state == SPILLED && !r->dead && !r->prefetching) {
    /* A job still queued from an earlier wish serves again, in its place. */
    rc = r->queued ? 0 : reads_append(p, r);
    if (rc == 0) {
      r->prefetching = true;
      rc = 1;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

/* ---- create and destroy ------------------------------------------------- */

int tarn_pool_create(const tarn_pool_options *options, tarn_pool **out) {
  tarn_pool_options o;
  int rc = tarn_pool_options_init(&o);
  if (options != NULL)
    o = *options;
  else if (rc != 0)
    return rc;
  if (out == NULL || o.io_threads == 0 || o.io_threads > 64 ||
      (o.huge_pages != 0 && o.huge_pages != 1) ||
      (o.policy != TARN_EVICT_CLOCK && o.policy != TARN_EVICT_LARGEST) ||
      /* a spill directory only where one is used */
      (o.storage == NULL && o.mem_limit != 0 &&
       (o.spill_dir == NULL || o.spill_dir[0] == '\0')) ||
      (o.storage != NULL &&
       (o.storage->write == NULL || o.storage->read == NULL)))
    return TARN_EINVAL;
  tarn_pool *p = calloc(1, sizeof *p);
  if (p == NULL) return TARN_ENOMEM;
  p->magic = tarn__magic_live(POOL_LIVE); /* the program sees it whole only */
  p->opt = o;
  p->page = tarn__page_size();
  p->retry_epoch = 1; /* a ref's failed_epoch 0: none failed */
  rc = TARN_ENOMEM;
  if (o.spill_dir != NULL && (p->spill_dir = strdup(o.spill_dir)) == NULL)
    goto fail;
  p->opt.spill_dir = p->spill_dir;
  /* Without a limit nothing is ever evicted: no spill file, so that a
   * program that sets none runs where the spill directory is unusable. */
  if (o.mem_limit != 0 || o.storage != NULL) {
    rc = tarn__store_open(p->spill_dir, o.storage, o.compress, &p->store);
    if (rc != 0) goto fail;
  }
  rc = tarn__runs_create(p->page, &p->runs);
  if (rc != 0) goto fail;
  rc = TARN_ENOMEM;
  p->io = calloc(o.io_threads, sizeof *p->io);
  if (p->io == NULL) goto fail;
  pthread_mutex_init(&p->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->changed, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&p->io_ready, NULL);
  /* The I/O threads write evicted objects and read prefetched ones back:
   * a pool without a store never has either to do, and starts none. */
  if (p->store != NULL) {
    for (; p->nio < o.io_threads; p->nio++)
      if (pthread_create(&p->io[p->nio], NULL, io_main, p) != 0) break;
    p->has_reader = pthread_create(&p->reader, NULL, reader_main, p) == 0;
    if (p->nio == 0 || !p->has_reader) {
      tarn__pool_destroy(p);
      return TARN_ENOMEM;
    }
  }
  *out = p;
  return 0;
fail:
  tarn__runs_destroy(p->runs);
  tarn__store_close(p->store);
  free(p->spill_dir);
  tarn__magic_free(p, &p->magic);
  return rc;
}

int tarn_pool_destroy(tarn_pool *p) {
  if (p == NULL) return 0;
  if (!pool_ok(p)) return TARN_EINVAL;
  /* A runtime's pool (tarn_rt_pool): the runtime destroys it, and would
   * again. */
  if (p->owner_free != NULL) return TARN_EMISUSE;
  return tarn__pool_destroy(p);
}

int tarn__pool_destroy(tarn_pool *p) {
  if (p == NULL) return 0;
  /* The reader first: a read back it is making may evict, queueing
   * writes, and wait for them; the writers end once their queue is
   * empty, so they must outlive it (they wait for nothing). */
  pthread_mutex_lock(&p->lock);
  p->reader_stopping = true;
  pthread_cond_broadcast(&p->io_ready);
  pthread_mutex_unlock(&p->lock);
  if (p->has_reader) pthread_join(p->reader, NULL);
  pthread_mutex_lock(&p->lock);
  p->stopping = true;
  pthread_cond_broadcast(&p->io_ready);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->nio; i++) pthread_join(p->io[i], NULL);
  pthread_mutex_lock(&p->lock);
  int leaked = (int)p->live;
  while (p->refs != NULL) {
    tarn_ref *r = p->refs;
    r->dead = true;
    ref_destroy(p, r);
  }
  cache_drop(p);
  spare_refs_drop(p);
  while (p->quarantine != NULL) {
    tarn_ref *r = p->quarantine;
    p->quarantine = r->next;
    free(r);
  }
  pthread_mutex_unlock(&p->lock);
  tarn__runs_destroy(p->runs); /* every buffer is back by now */
  tarn__store_close(p->store);
  pthread_cond_destroy(&p->changed);
  pthread_cond_destroy(&p->io_ready);
  pthread_mutex_destroy(&p->lock);
  free(p->io);
  free(p->spill_dir);
  tarn__magic_free(p, &p->magic);
  return leaked;
}

/* ---- refs --------------------------------------------------------------- */

static void malloc_free(void *ctx, void *object, size_t size) {
  (void)ctx;
  (void)size;
  free(object);
}

static int malloc_save(void *ctx, const void *object, size_t size, void *dst) {
  (void)ctx;
  memcpy(dst, object, size);
  return 0;
}

static int malloc_load(void *ctx, const void *src, size_t size, void **object) {
  (void)ctx;
  void *m = malloc(size);
  if (m == NULL) return TARN_ENOMEM;
  memcpy(m, src, size);
  *object = m;
  return 0;
}

const tarn_kind tarn_kind_malloc = {"malloc", malloc_free, malloc_save,
                                    malloc_load, NULL};

/* Whether `r` looks like a live ref; reports a use after free. */
static bool ref_ok(const tarn_ref *r) {
  return r != NULL &&
         tarn__magic_ok(r,
                        atomic_load_explicit(&r->magic, memory_order_relaxed),
                        MAGIC_LIVE, "ref", "its last release");
}

static tarn_ref *ref_new(tarn_pool *p, void *data, size_t size, size_t charge,
                         const tarn_kind *kind) {
  /* Each ref on cache lines of its own: lock-free pins of different refs
   * from different threads must not share a line. */
  tarn_ref *r = p->spare_refs;
  if (r != NULL) {
    p->spare_refs = r->next;
    p->nspare_refs--;
  } else if ((r = aligned_alloc(CACHE_LINE, ref_bytes)) == NULL) {
    return NULL;
  }
  memset(r, 0, sizeof *r);
  atomic_init(&r->pinword, FAST);
  atomic_init(&r->refs, 1);
  atomic_init(&r->demand, 0);
  atomic_init(&r->next_use, UINT64_MAX);
  atomic_init(&r->magic, tarn__magic_live(MAGIC_LIVE));
  atomic_init(&r->referenced, 1);
  r->state = RESIDENT;
  r->data = data;
  r->size = size;
  r->charge = charge;
  r->kind = kind;
  r->pool = p;
  list_add(p, r);
  return r;
}

int tarn_ref_alloc(tarn_pool *p, size_t size, uint64_t timeout_ns,
                   tarn_ref **out) {
  if (out == NULL || size == 0 || !pool_ok(p) || size > SIZE_MAX - p->page)
    return TARN_EINVAL;
  size_t cap = tarn__page_round(size);
  void *buf = NULL;
  pthread_mutex_lock(&p->lock);
  int rc = make_room(p, cap, cap, &buf, timeout_ns, false);
  if (rc == 0 && buf == NULL) {
    p->cache_misses++;
    buf = buffer_new(p, cap);
    if (buf == NULL) {
      p->resident -= cap;
      rc = TARN_ENOMEM;
    }
  }
  tarn_ref *r = NULL;
  if (rc == 0 && (r = ref_new(p, buf, size, cap, NULL)) == NULL) {
    buffer_retire(p, buf, cap);
    rc = TARN_ENOMEM;
  }
  pthread_mutex_unlock(&p->lock);
  if (rc == 0) *out = r;
  return rc;
}

int tarn_ref_adopt(tarn_pool *p, void *object, size_t size,
                   const tarn_kind *kind, uint64_t timeout_ns, tarn_ref **out) {
  if (out == NULL || object == NULL || size == 0 || kind == NULL ||
      kind->free == NULL || (kind->save == NULL) != (kind->load == NULL) ||
      !pool_ok(p))
    return TARN_EINVAL;
  pthread_mutex_lock(&p->lock);
  int rc = make_room(p, size, 0, NULL, timeout_ns, false);
  tarn_ref *r = NULL;
  if (rc == 0 && (r = ref_new(p, object, size, size, kind)) == NULL) {
    p->resident -= size;
    rc = TARN_ENOMEM;
  }
  pthread_mutex_unlock(&p->lock);
  if (rc == 0) *out = r;
  return rc;
}

int tarn_ref_create(tarn_pool *p, size_t size, tarn_ref **out) {
  if (out == NULL || size == 0 || !pool_ok(p) || size > SIZE_MAX - p->page)
    return TARN_EINVAL;
  pthread_mutex_lock(&p->lock);
  tarn_ref *r = ref_new(p, NULL, size, tarn__page_round(size), NULL);
  if (r != NULL) {
    r->state = EMPTY;
    atomic_store(&r->pinword, 0); /* no lock-free pin until it has bytes */
  }
  pthread_mutex_unlock(&p->lock);
  if (r == NULL) return TARN_ENOMEM;
  *out = r;
  return 0;
}

int tarn_ref_create_from(tarn_pool *p, size_t size, const tarn_source *source,
                         tarn_ref **out) {
  if (out == NULL || size == 0 || !pool_ok(p) || size > SIZE_MAX - p->page ||
      source == NULL || source->read == NULL)
    return TARN_EINVAL;
  tarn_source *copy = malloc(sizeof *copy);
  if (copy == NULL) return TARN_ENOMEM;
  *copy = *source;
  pthread_mutex_lock(&p->lock);
  tarn_ref *r = ref_new(p, NULL, size, tarn__page_round(size), NULL);
  if (r != NULL) {
    r->state = SPILLED; /* its bytes are elsewhere: in the source */
    r->source = copy;
    r->has_source = true;
    atomic_store(&r->pinword, 0); /* no lock-free pin until it has bytes */
  }
  pthread_mutex_unlock(&p->lock);
  if (r == NULL) {
    free(copy);
    return TARN_ENOMEM;
  }
  atomic_store_explicit(&p->has_sources, true, memory_order_relaxed);
  *out = r;
  return 0;
}

size_t tarn_pool_mem_limit(const tarn_pool *p) {
  return pool_ok(p) ? p->opt.mem_limit : 0;
}

int tarn_pool_peak_reset(tarn_pool *p) {
  if (!pool_ok(p)) return TARN_EINVAL;
  pthread_mutex_lock(&p->lock);
  p->peak = p->resident;
  p->live_peak = p->resident - p->cached;
  pthread_mutex_unlock(&p->lock);
  return 0;
}

void tarn__pool_peaks(tarn_pool *p, bool reset, size_t *resident_peak,
                      size_t *live_peak) {
  pthread_mutex_lock(&p->lock);
  *resident_peak = p->window_peak;
  *live_peak = p->window_live_peak;
  if (reset) {
    p->window_peak = p->resident;
    p->window_live_peak = p->resident - p->cached;
  }
  pthread_mutex_unlock(&p->lock);
}

void tarn__pool_set_owner_free(tarn_pool *p,
                               void (*owner_free)(void *ctx, void *owner),
                               void *ctx) {
  pthread_mutex_lock(&p->lock);
  p->owner_free = owner_free;
  p->owner_ctx = ctx;
  pthread_mutex_unlock(&p->lock);
}

void *tarn__ref_owner(tarn_ref *r, void *install) {
  /* A plain load first: a compare-exchange takes the line for writing even
   * when it fails, and the workers read this line on every pin. */
  void *cur = atomic_load_explicit(&r->owner, memory_order_acquire);
  if (cur != NULL || install == NULL) return cur;
  if (atomic_compare_exchange_strong(&r->owner, &cur, install)) return install;
  return cur;
}

tarn_pool *tarn__ref_pool(const tarn_ref *r) { return r->pool; }

size_t tarn__ref_charge(const tarn_ref *r) { return r->charge; }

bool tarn__ref_resident_hint(const tarn_ref *r) {
  return (atomic_load_explicit(&r->pinword, memory_order_relaxed) & FAST) != 0;
}

bool tarn__pool_has_sources(const tarn_pool *p) {
  return atomic_load_explicit(&p->has_sources, memory_order_relaxed);
}

void tarn__ref_demand(tarn_ref *r, int delta) {
  /* Unsigned: adding (uint32_t)-1 subtracts one. */
  atomic_fetch_add_explicit(&r->demand, (uint32_t)delta, memory_order_relaxed);
}

void tarn__ref_next_use(tarn_ref *r, uint64_t seq) {
  atomic_store_explicit(&r->next_use, seq, memory_order_relaxed);
  tarn_pool *p = r->pool;
  if (!atomic_load_explicit(&p->has_next_use, memory_order_relaxed))
    atomic_store_explicit(&p->has_next_use, true, memory_order_relaxed);
}

void tarn__pool_trim(tarn_pool *p) {
  if (p == NULL) return;
  /* The freed buffers kept for reuse, under the lock as when room is made
   * (256 MiB of 2 MiB buffers unmap in a few milliseconds, at rest). */
  pthread_mutex_lock(&p->lock);
  if (p->cached > 0) {
    cache_drop(p);
    pthread_cond_broadcast(&p->changed);
  }
  spare_refs_drop(p);
  pthread_mutex_unlock(&p->lock);
  tarn__store_trim(p->store); /* set once, at creation */
}

/* The reads back that ended on this thread, in the pool it last read
 * for (read_ended). */
static TARN_THREAD_LOCAL struct {
  const tarn_pool *pool;
  uint64_t count;
} own_reads;

/* Counts a read back that ended (lock held), as this thread's own too. */
static void read_ended(tarn_pool *p) {
  atomic_fetch_add(&p->reads_ended, 1);
  if (own_reads.pool != p) {
    own_reads.pool = p;
    own_reads.count = 0;
  }
  own_reads.count++;
}

/* Leaves out the calling thread's own reads: a task's own tries read (or
 * give room to) its refs and, when one does not fit, let them go; counted
 * as progress, they made a task that can never fit try again for ever,
 * alone (three new refs it writes under a limit that holds two: each try
 * gave the first two their room). Only another thread's read frees room
 * the caller could not take. The count is only compared with an earlier
 * one of the same thread, so a pool freed and another made at its
 * address costs at most one more try. */
uint64_t tarn__pool_reads_ended(tarn_pool *p) {
  uint64_t own = own_reads.pool == p ? own_reads.count : 0;
  return atomic_load(&p->reads_ended) - own;
}

bool tarn__pool_reads_settle(tarn_pool *p, uint64_t since) {
  pthread_mutex_lock(&p->lock);
  bool waited = p->reading > 0;
  while (p->reading > 0) pthread_cond_wait(&p->changed, &p->lock);
  pthread_mutex_unlock(&p->lock);
  return waited || tarn__pool_reads_ended(p) != since;
}

/* A resident object no submitted task uses, whose source or spilled copy
 * holds its bytes, claimed (dropping it costs no write); among the first
 * IDLE_SCAN refs; or NULL. */
static tarn_ref *unused_clean(tarn_pool *p) {
  size_t n = 0;
  for (tarn_ref *r = p->refs; r != NULL && n < IDLE_SCAN; r = r->next, n++)
    if (r->kind == NULL && candidate(p, r) && idle_in_graph(r) && is_clean(r) &&
        claim_idle(r))
      return r;
  return NULL;
}

/* Room for a fill of a buffer of `cap` bytes (lock held): a cached one
 * (*buf), or free room under the limit, counted; made only by dropping
 * the cache and clean objects no task uses, never by writing one out or
 * dropping one a task will use. Returns whether there was room. */
static bool fill_room(tarn_pool *p, size_t cap, void **buf) {
  size_t limit = p->opt.mem_limit;
  for (;;) {
    if ((*buf = cache_take(p, cap)) != NULL) {
      note_live(p);
      return true;
    }
    if (limit == 0 || (cap <= limit && p->resident <= limit - cap)) {
      take_room(p, cap);
      return true;
    }
    if (cap > limit) return false;
    if (p->cached > 0) {
      cache_drop(p);
      continue;
    }
    tarn_ref *v = unused_clean(p);
    if (v == NULL) return false;
    p->evictions++;
    drop_to_disk(p, v);
    pthread_cond_broadcast(&p->changed);
  }
}

/* Ends a fill begun by tarn__ref_fill_begin (lock held, `r` in its new
 * state): no longer read nor kept alive by it, freed if it died meanwhile. */
static void fill_over(tarn_pool *p, tarn_ref *r) {
  p->reading--;
  r->guarded = false;
  pthread_cond_broadcast(&p->changed);
  if (r->dead && idle(r)) ref_destroy(p, r);
}

void *tarn__ref_fill_begin(tarn_ref *r) {
  if (r == NULL || r->kind != NULL ||
      atomic_load_explicit(&r->demand, memory_order_relaxed) == 0)
    return NULL;
  tarn_pool *p = r->pool;
  size_t cap = r->charge;
  void *buf = NULL;
  pthread_mutex_lock(&p->lock);
  /* From its source only: a spilled copy would be newer than the source's
   * bytes (has_source is false then anyway). Under a limit, only what a
   * ready task's read ahead asked for (prefetching: the reader would read
   * it next anyway): a tile that some task will use only much later took
   * room that the data in between then had to be written out for (the
   * out_of_core example wrote 469-474 MiB to the spill file instead of
   * 358-363). */
  bool room = !r->dead && !r->guarded && r->state == SPILLED && r->has_source &&
              !r->has_block && (p->opt.mem_limit == 0 || r->prefetching) &&
              fill_room(p, cap, &buf);
  if (room) {
    r->state = READING;
    r->guarded = true; /* outlives a release until tarn__ref_fill_end */
    p->reading++;
    if (buf == NULL) p->cache_misses++; /* fresh memory, made below */
  }
  pthread_mutex_unlock(&p->lock);
  if (room && buf == NULL && (buf = buffer_new(p, cap)) == NULL) {
    pthread_mutex_lock(&p->lock);
    p->resident -= cap;
    r->state = SPILLED;
    fill_over(p, r);
    pthread_mutex_unlock(&p->lock);
  }
  return buf;
}

void tarn__ref_fill_end(tarn_ref *r, void *buf, bool filled) {
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  if (filled) { /* as restore leaves a read: clean (the source holds it) */
    p->source_reads++;
    p->source_bytes_read += r->size;
    became_resident(r, buf, true, 0);
    read_ended(p);
  } else {
    buffer_retire(p, buf, r->charge);
    r->state = SPILLED;
  }
  fill_over(p, r);
  pthread_mutex_unlock(&p->lock);
}

int tarn_ref_retain(tarn_ref *r) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  tarn__prefetch_write(&r->refs);
  uint32_t n = atomic_load(&r->refs);
  do {
    if (n == 0) return TARN_EMISUSE;
  } while (!atomic_compare_exchange_weak(&r->refs, &n, n + 1));
  return 0;
}

int tarn_ref_release(tarn_ref *r) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  tarn__prefetch_write(&r->refs);
  uint32_t n = atomic_load(&r->refs);
  do {
    if (n == 0) return TARN_EMISUSE;
  } while (!atomic_compare_exchange_weak(&r->refs, &n, n - 1));
  if (n != 1) return 0;
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  r->dead = true;
  /* NOTIFY routes the last unpin here; FAST goes so no new fast pin. */
  uint64_t w = atomic_load(&r->pinword);
  while (!atomic_compare_exchange_weak(&r->pinword, &w, (w | NOTIFY) & ~FAST))
    ;
  if ((w & PIN_MASK) == 0) dead_unpinned(p, r);
  pthread_mutex_unlock(&p->lock);
  return 0;
}

/* Brings a SPILLED object back (from its block, else from its source), or
 * gives an EMPTY one its bytes (zeros when `mode` reads). Lock held on
 * entry and exit, dropped for the I/O. On success the ref is RESIDENT with
 * `pins` pins (0 or 1) for the caller. Returns 1 when the state changed
 * meanwhile: look again. */
static int restore(tarn_pool *p, tarn_ref *r, tarn_access mode,
                   uint64_t timeout_ns, uint64_t pins) {
  enum ref_state from = r->state;
  uint32_t arrivals = r->arrivals;
  void *buf = NULL;
  size_t cap = r->kind == NULL ? r->charge : 0;
  int rc = make_room(p, r->charge, cap, &buf, timeout_ns, pins == 0);
  if (rc != 0) return rc;
  /* Changed while make_room waited, or brought in by another and evicted
   * again: a read ahead that waited for room once saw a pin read its
   * object back, then evicted that copy to make room for it and read it
   * a second time. */
  if (r->state != from || r->arrivals != arrivals) {
    if (buf != NULL)
      buffer_retire(p, buf, cap);
    else
      p->resident -= r->charge;
    return 1; /* look again */
  }
  bool from_source = from == SPILLED && !r->has_block;
  r->state = READING; /* block and source stay until the lock is back */
  p->reading++;
  if (r->kind == NULL && buf == NULL) p->cache_misses++; /* made below */
  pthread_mutex_unlock(&p->lock);
  void *obj = buf;
  if (r->kind == NULL && obj == NULL) obj = buffer_new(p, cap);
  rc = obj == NULL && r->kind == NULL ? TARN_ENOMEM : 0;
  bool read = (mode & TARN_READ) != 0;
  bool store_failed = false; /* the store's read, not the heap's or load's */
  uint64_t t0 = 0;
  if (rc == 0 && from == EMPTY && read) memset(obj, 0, cap);
  if (rc == 0 && from_source && read) {
    t0 = tarn__clock_ns();
    rc = r->source->read(r->source->ctx, obj, r->size);
    if (rc > 0) rc = TARN_EIO; /* not a status: the source broke its word */
  } else if (rc == 0 && from == SPILLED && r->kind == NULL && read) {
    rc = tarn__store_read(p->store, &r->block, obj);
    store_failed = rc != 0;
  }
  if (rc == 0 && r->kind != NULL) {
    void *staging = aligned_alloc(p->page, tarn__page_round(r->size));
    rc = staging == NULL ? TARN_ENOMEM
                         : tarn__store_read(p->store, &r->block, staging);
    store_failed = staging != NULL && rc != 0;
    if (rc == 0) rc = r->kind->load(r->kind->ctx, staging, r->size, &obj);
    free(staging);
  }
  pthread_mutex_lock(&p->lock);
  p->reading--;
  /* A read that brought an object in, or a read ahead's that gave its
   * room back: what a caller that found no room may now find. (A pin's
   * own failed read does not count: out of heap, a task that counted its
   * own failures retried for ever.) */
  if (rc == 0 || pins == 0) read_ended(p);
  /* The pool's last_error is the last failure of either way: a read's
   * too (a failed write's hid every later read's; the store counts it). */
  if (store_failed) p->last_error = rc;
  if (rc != 0) {
    if (r->kind == NULL && obj != NULL)
      buffer_retire(p, obj, cap);
    else
      p->resident -= r->charge;
    r->state = from;
    pthread_cond_broadcast(&p->changed);
    return rc == TARN_ENOMEM || from_source ? rc : TARN_EIO;
  }
  if (from_source && read) {
    p->source_reads++;
    p->source_bytes_read += r->size;
    p->source_read_ns += tarn__clock_ns() - t0;
  } else if (from == SPILLED && (read || r->kind != NULL)) {
    p->restores++; /* a pin that only writes reads none, but a kind's load */
  }
  bool clean = false;
  if (!read || (mode & TARN_WRITE)) {
    if (r->has_block) tarn__store_free(p->store, &r->block);
    r->has_block = false;
    r->has_source = false;
  } else {
    clean = r->has_block || r->has_source;
  }
  became_resident(r, obj, clean, pins);
  pthread_cond_broadcast(&p->changed);
  return 0;
}

/* The locked path of pin: every state but an idle resident one. */
static int pin_slow(tarn_ref *r, tarn_access mode, uint64_t timeout_ns) {
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  int rc;
  for (;;) {
    rc = 0;
    if (r->dead) {
      rc = TARN_EMISUSE;
      break;
    }
    if (r->state == RESIDENT) {
      atomic_fetch_add(&r->pinword, 1);
      if (mode & TARN_WRITE) {
        atomic_fetch_and(&r->pinword, ~CLEAN);
        r->has_source = false;
      }
      break;
    }
    if (r->state == WRITING && !(mode & TARN_WRITE)) {
      atomic_fetch_add(&r->pinword, 1);
      break;
    }
    if (r->state == SPILLED || r->state == EMPTY) {
      rc = restore(p, r, mode, timeout_ns, 1);
      if (rc <= 0) break;
      continue;
    }
    pthread_cond_wait(&p->changed, &p->lock); /* READING, or WRITING */
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

int tarn_ref_pin(tarn_ref *r, tarn_access mode, uint64_t timeout_ns,
                 void **data) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  if (data == NULL || mode < TARN_READ || mode > TARN_READ_WRITE)
    return TARN_EINVAL;
  uint64_t w = atomic_load_explicit(&r->pinword, memory_order_relaxed);
  uint64_t clear = (mode & TARN_WRITE) ? CLEAN : 0;
  bool pinned = false;
  while (w & FAST) {
    /* Acquire: the data pointer published before FAST is visible. */
    if (atomic_compare_exchange_weak_explicit(&r->pinword, &w, (w + 1) & ~clear,
                                              memory_order_acquire,
                                              memory_order_relaxed)) {
      pinned = true;
      break;
    }
  }
  if (!pinned) {
    int rc = pin_slow(r, mode, timeout_ns);
    if (rc != 0) return rc;
  }
  if (!atomic_load_explicit(&r->referenced, memory_order_relaxed))
    atomic_store_explicit(&r->referenced, 1, memory_order_relaxed);
  *data = r->data;
  return 0;
}

int tarn_ref_unpin(tarn_ref *r) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  uint64_t w = atomic_load_explicit(&r->pinword, memory_order_relaxed);
  for (;;) {
    if ((w & PIN_MASK) == 0) return TARN_EMISUSE;
    if ((w & PIN_MASK) == 1 && (w & NOTIFY)) break;
    /* Release: the caller's writes happen before an evictor's read;
     * sequentially consistent, with the load of waiters after it, so
     * that a waiter counted after this exchange sees it (make_room). */
    if (atomic_compare_exchange_weak_explicit(&r->pinword, &w, w - 1,
                                              memory_order_seq_cst,
                                              memory_order_relaxed)) {
      if (atomic_load(&r->pool->waiters) > 0) {
        pthread_mutex_lock(&r->pool->lock);
        pthread_cond_broadcast(&r->pool->changed);
        pthread_mutex_unlock(&r->pool->lock);
      }
      return 0;
    }
  }
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  atomic_fetch_sub(&r->pinword, 1);
  if (r->dead && (atomic_load(&r->pinword) & PIN_MASK) == 0)
    dead_unpinned(p, r);
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
  return 0;
}

void tarn__ref_unpin_unwritten(tarn_ref *r) {
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  uint64_t w = atomic_load(&r->pinword);
  /* The last pin of a bytes object with no copy elsewhere (a pin for
   * writing dropped the one it had): nothing anyone may read is lost. */
  bool discard = r->state == RESIDENT && r->kind == NULL && !r->escaped &&
                 !r->dead && !r->has_block && !r->has_source;
  while (discard && (w & PIN_MASK) == 1 && !(w & CLEAN))
    if (atomic_compare_exchange_weak(&r->pinword, &w, w & NOTIFY)) {
      /* Out of the lock-free path first (FAST is now clear). */
      void *data = r->data;
      r->data = NULL;
      r->state = EMPTY;
      buffer_retire(p, data, r->charge);
      pthread_cond_broadcast(&p->changed);
      pthread_mutex_unlock(&p->lock);
      return;
    }
  pthread_mutex_unlock(&p->lock);
  tarn_ref_unpin(r);
}

int tarn_ref_escape(tarn_ref *r, uint64_t timeout_ns, void **data) {
  int rc = tarn_ref_pin(r, TARN_READ_WRITE, timeout_ns, data);
  if (rc != 0) return rc;
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  r->escaped = true;
  if (r->has_block) { /* it may change at any time: the copy is useless */
    tarn__store_free(p->store, &r->block);
    r->has_block = false;
  }
  r->has_source = false;
  pthread_mutex_unlock(&p->lock);
  return tarn_ref_unpin(r);
}

int tarn_ref_flush_begin(tarn_ref *r, void **data) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  if (data == NULL) return TARN_EINVAL;
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  int rc = 0;
  for (;;) {
    if (r->dead) {
      rc = TARN_EMISUSE;
      break;
    }
    if (!backed(r)) {
      rc = TARN_EINVAL;
      break;
    }
    /* A store, a read, or another flush: two flushes stored at once
     * called source->write twice at once for the ref. */
    if (r->state == WRITING || r->state == READING || r->flushing) {
      pthread_cond_wait(&p->changed, &p->lock);
      continue;
    }
    /* SPILLED: the source holds it. An escaped object may have changed
     * whatever its flags say. */
    if (r->state != RESIDENT || (!r->escaped && is_clean(r))) break;
    /* Written since it was stored: pinned, so that no eviction takes it
     * while the caller stores it. */
    atomic_fetch_add(&r->pinword, 1);
    r->flushing = true;
    *data = r->data;
    rc = 1;
    break;
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

/* Ends a flush begun by tarn_ref_flush_begin: a store of `status` that
 * took `ns` (0 when the caller stored the bytes itself). */
static int flush_end(tarn_ref *r, int status, uint64_t ns) {
  tarn_pool *p = r->pool;
  pthread_mutex_lock(&p->lock);
  /* Without a begun flush nothing changes: marking the ref stored in a
   * source it lacks let eviction drop its bytes (a later pin read
   * through a NULL source), and the unpin took the caller's own pin. */
  int rc = !backed(r) ? TARN_EINVAL : !r->flushing ? TARN_EMISUSE : 0;
  if (rc == 0 && status == 0) {
    stored_in_source(p, r, ns);
    if (!r->escaped) atomic_fetch_or(&r->pinword, CLEAN);
  } else if (rc == 0) { /* a failed store, counted as a spill write's */
    p->unstored_failures++;
    p->last_error = status < 0 ? status : TARN_EIO;
  }
  if (rc == 0) {
    r->flushing = false;
    pthread_cond_broadcast(&p->changed);
  }
  pthread_mutex_unlock(&p->lock);
  return rc != 0 ? rc : tarn_ref_unpin(r);
}

int tarn_ref_flush_end(tarn_ref *r, int status) {
  if (!ref_ok(r)) return r == NULL ? TARN_EINVAL : TARN_EMISUSE;
  return flush_end(r, status, 0);
}

int tarn_ref_flush(tarn_ref *r) {
  void *data = NULL;
  int rc = tarn_ref_flush_begin(r, &data);
  if (rc <= 0) return rc;
  uint64_t ns = 0;
  rc = store_in_source(r, &ns);
  flush_end(r, rc, ns);
  return rc;
}

size_t tarn_ref_size(const tarn_ref *r) { return ref_ok(r) ? r->size : 0; }

int tarn_ref_is_resident(const tarn_ref *r) {
  if (!ref_ok(r)) return 0;
  pthread_mutex_lock(&r->pool->lock);
  int resident = r->state == RESIDENT || r->state == WRITING;
  pthread_mutex_unlock(&r->pool->lock);
  return resident;
}

int tarn_pool_stats_get(tarn_pool *p, tarn_pool_stats *s) {
  if (s == NULL || !pool_ok(p)) return TARN_EINVAL;
  tarn__store_counters c;
  tarn__store_counters_get(p->store, &c);
  memset(s, 0, sizeof *s);
  uint64_t failures;
  pthread_mutex_lock(&p->lock);
  s->mem_limit = p->opt.mem_limit;
  s->resident_bytes = p->resident;
  s->resident_peak = p->peak;
  s->cache_bytes = p->cached;
  s->live_bytes = p->resident - p->cached;
  s->live_peak = p->live_peak;
  s->live_refs = p->live;
  for (tarn_ref *r = p->refs; r != NULL; r = r->next)
    if ((r->state == RESIDENT || r->state == WRITING) &&
        (r->escaped || (atomic_load(&r->pinword) & PIN_MASK) != 0))
      s->pinned_bytes += r->charge;
  s->evictions = p->evictions;
  s->spills = p->spills;
  s->cleanings = p->cleanings;
  s->restores = p->restores;
  s->source_reads = p->source_reads;
  s->source_bytes_read = p->source_bytes_read;
  s->source_read_ns = p->source_read_ns;
  s->source_writes = p->source_writes;
  s->source_bytes_written = p->source_bytes_written;
  s->source_write_ns = p->source_write_ns;
  s->cache_hits = p->cache_hits;
  s->cache_misses = p->cache_misses;
  s->last_error = p->last_error != 0 ? p->last_error : c.last_error;
  failures = p->unstored_failures;
  pthread_mutex_unlock(&p->lock);
  s->spilled_bytes = c.stored_bytes;
  s->bytes_written = c.bytes_written;
  s->bytes_read = c.bytes_read;
  s->write_ns = c.write_ns;
  s->read_ns = c.read_ns;
  /* the store's own failed writes and the others (they were merged by
   * their larger count: failures of both kinds at once were undercounted) */
  s->write_failures = c.write_failures + failures;
  s->read_failures = c.read_failures;
  s->io_mode = tarn__store_io_mode(p->store);
  return 0;
}
