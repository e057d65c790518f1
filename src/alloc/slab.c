/* slab.c: the slab set. One reservation of count * slab_size bytes, cut into
 * slabs; a free mask with one bit per slab (1 = free), 64 bits to a word and
 * each word on its own cache line, so threads that start their search at
 * different words never share a line.
 *
 * Invariants:
 * - A slab is claimed exactly when its bit is 0. The CAS that clears the bit
 *   (acquire order) pairs with the fetch_or that sets it (release order), so
 *   everything the previous owner wrote happens before the next owner runs.
 * - In a slab, base <= cur <= end; [base, cur) holds the blocks handed out,
 *   their alignment padding and the marks' headers.
 * - Marks form a stack threaded through their headers in the slab: `top` is
 *   the offset of the newest live mark, each header holds the offset of the
 *   one below. A reset pops down to its mark, so a mark is live exactly when
 *   the walk from `top` reaches it with its serial; serials never repeat in a
 *   slab (61 bits: no run wraps them), so a mark from before a release or an
 *   earlier reset is stale.
 * - peak >= every value cur has had since the last trim: the pages above
 *   max(peak, cur) were never touched, or were given back.
 * - A set's magic word is SET_LIVE from its creation until
 *   tarn_slab_set_destroy writes TARN__MAGIC_DEAD over it and frees it: the
 *   set's calls refuse a handle whose word is anything else (a destroyed
 *   set, while the heap has not reused its memory; memory that never held
 *   one) and touch nothing of it.
 * - With AddressSanitizer, [cur, poisoned_to) is poisoned, and so are the
 *   padding and mark headers below cur: only blocks handed out are
 *   addressable. Every allocation then takes the out-of-line path. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "prim/prim.h"
#include "tarn/alloc.h"

#if defined(__SANITIZE_ADDRESS__)
#define TARN_POISON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TARN_POISON 1
#endif
#endif

#ifdef TARN_POISON
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((const void *)(p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((const void *)(p), (n))
#define NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
/* How far past the bump pointer bytes are kept poisoned; a stray access
 * further out than this into never-used slab memory is not caught. */
#define POISON_WINDOW ((uintptr_t)64 << 10)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define NO_SANITIZE_ADDRESS
#endif

#define CACHE_LINE 64
#define NO_MARK SIZE_MAX

/* A mark's header in the slab, 16 bytes at an 8-byte boundary. `serial`
 * holds the mark's serial in its low 61 bits and, in the top 3, the bytes
 * of padding put before the header to align it (0 to 7), which an unmark
 * gives back with the header (until 2026-12-05 they stayed, so a slab was
 * not as it was before the mark). A mark's tarn_mark.serial is the whole
 * word. */
struct mark_header {
  uint64_t serial;
  size_t below; /* offset of the mark below, or NO_MARK */
};
#define PAD_SHIFT 61
#define SERIAL_MASK (((uint64_t)1 << PAD_SHIFT) - 1)

struct tarn_slab {
  struct tarn__slab_bump bump; /* must come first: see tarn/alloc.h */
  uintptr_t base;
  uintptr_t end;
  uintptr_t peak;
  size_t top;      /* offset of the newest live mark, or NO_MARK */
  uint64_t serial; /* serial of the last mark taken */
  tarn_slab_set *set;
  /* Written only by the slab's owner, read by tarn_slab_set_stats_get. */
  _Atomic uint64_t acquires;
  _Atomic uint64_t trimmed_bytes;
#ifdef TARN_POISON
  uintptr_t poisoned_to;
#endif
} __attribute__((aligned(CACHE_LINE)));

struct mask_word {
  _Alignas(CACHE_LINE) _Atomic uint64_t free_bits;
};

#define SET_LIVE 0x736c6162u /* "slab" */

struct tarn_slab_set {
  struct tarn_slab *slabs;
  struct mask_word *words;
  size_t count;
  size_t nwords;
  size_t slab_size;
  size_t retain;
  void *base;
  size_t reserved;
  uint32_t magic; /* tarn__magic_live(SET_LIVE), or TARN__MAGIC_DEAD */
};

_Static_assert(offsetof(struct tarn_slab_set, magic) >= TARN__MAGIC_MIN_OFFSET,
               "the set's magic word lies past what free overwrites");

/* Whether `set` is a live set; a destroyed one is reported on stderr
 * (tarn__magic_report), NULL and any other word are refused quietly. */
static bool set_live(const tarn_slab_set *set) {
  return set != NULL && tarn__magic_ok(set, set->magic, SET_LIVE, "slab set",
                                       "tarn_slab_set_destroy");
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1) & ~(to - 1); }

void tarn_slab_set_options_init(tarn_slab_set_options *options) {
  if (options == NULL) return;
  options->count = TARN_SLAB_COUNT_DEFAULT;
  options->slab_size = TARN_SLAB_SIZE_DEFAULT;
  options->retain_bytes = TARN_SLAB_RETAIN_DEFAULT;
}

static void slab_init(struct tarn_slab *s, tarn_slab_set *set, uintptr_t base,
                      size_t page) {
  memset(s, 0, sizeof *s);
  s->base = base;
  s->end = base + set->slab_size;
  s->peak = base;
  s->top = NO_MARK;
  s->set = set;
  s->bump.cur = base;
  s->bump.max_align = page;
#ifdef TARN_POISON
  s->bump.fast_end = 0;
  s->poisoned_to = base;
#else
  s->bump.fast_end = s->end;
#endif
}

int tarn_slab_set_create(const tarn_slab_set_options *options,
                         tarn_slab_set **out) {
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  if (options != NULL) o = *options;
  if (out == NULL || o.count == 0 || o.count > TARN_SLAB_COUNT_MAX ||
      o.slab_size == 0)
    return TARN_EINVAL;
  size_t page = tarn__page_size();
  if (o.slab_size > SIZE_MAX - (page - 1)) return TARN_EINVAL;
  size_t slab_size = round_up(o.slab_size, page);
  if (slab_size > SIZE_MAX / o.count) return TARN_EINVAL;
  size_t retain =
      o.retain_bytes > slab_size ? slab_size : round_up(o.retain_bytes, page);

  tarn_slab_set *set = calloc(1, sizeof *set);
  if (set == NULL) return TARN_ENOMEM;
  set->count = o.count;
  set->nwords = (o.count + 63) / 64;
  set->slab_size = slab_size;
  set->retain = retain;
  set->reserved = slab_size * o.count;
  set->slabs = aligned_alloc(CACHE_LINE, o.count * sizeof *set->slabs);
  set->words = aligned_alloc(CACHE_LINE, set->nwords * sizeof *set->words);
  if (set->slabs == NULL || set->words == NULL ||
      tarn__vm_reserve(set->reserved, &set->base) != 0) {
    free(set->slabs);
    free(set->words);
    free(set);
    return TARN_ENOMEM;
  }
  for (size_t i = 0; i < o.count; i++)
    slab_init(&set->slabs[i], set, (uintptr_t)set->base + i * slab_size, page);
  for (size_t w = 0; w < set->nwords; w++) {
    size_t bits = o.count - w * 64;
    uint64_t mask = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    atomic_init(&set->words[w].free_bits, mask);
  }
  set->magic = tarn__magic_live(SET_LIVE);
  *out = set;
  return 0;
}

void tarn_slab_set_destroy(tarn_slab_set *set) {
  if (!set_live(set)) return; /* NULL, destroyed already, or not a set */
#ifdef TARN_POISON
  /* The addresses may be mapped again later: leave no poison behind. */
  for (size_t i = 0; i < set->count; i++) {
    struct tarn_slab *s = &set->slabs[i];
    UNPOISON(s->base, s->poisoned_to - s->base);
  }
#endif
  tarn__vm_unreserve(set->base, set->reserved);
  free(set->slabs);
  free(set->words);
  tarn__magic_free(set, &set->magic);
}

/* The word a thread starts its search at: threads are numbered as they first
 * acquire, so that concurrent threads spread over the words. */
static size_t start_word(const tarn_slab_set *set) {
  static atomic_uint next_thread;
  static TARN_THREAD_LOCAL unsigned thread_number;
  if (thread_number == 0)
    thread_number =
        atomic_fetch_add_explicit(&next_thread, 1, memory_order_relaxed) + 1;
  return (thread_number - 1) % set->nwords;
}

int tarn_slab_acquire(tarn_slab_set *set, tarn_slab **out) {
  if (!set_live(set) || out == NULL) return TARN_EINVAL;
  size_t first = start_word(set);
  for (size_t i = 0; i < set->nwords; i++) {
    size_t w = first + i < set->nwords ? first + i : first + i - set->nwords;
    _Atomic uint64_t *bits = &set->words[w].free_bits;
    uint64_t v = atomic_load_explicit(bits, memory_order_relaxed);
    /* A full word (no free bit) is skipped before counting zeros, since
     * counting the trailing zeros of 0 is undefined. A failed CAS reloads v:
     * another thread made progress, so the loop is lock-free. */
    while (v != 0) {
      unsigned bit = (unsigned)__builtin_ctzll(v);
      if (atomic_compare_exchange_weak_explicit(
              bits, &v, v & ~((uint64_t)1 << bit), memory_order_acquire,
              memory_order_relaxed)) {
        struct tarn_slab *s = &set->slabs[w * 64 + bit];
        atomic_store_explicit(
            &s->acquires,
            atomic_load_explicit(&s->acquires, memory_order_relaxed) + 1,
            memory_order_relaxed);
        *out = s;
        return 0;
      }
    }
  }
  return TARN_EBUSY;
}

/* The index of `slab` in `set`, or -1 when it is not one of its slabs. */
static ptrdiff_t slab_index(const tarn_slab_set *set, const tarn_slab *slab) {
  uintptr_t first = (uintptr_t)set->slabs;
  uintptr_t p = (uintptr_t)slab;
  if (p < first) return -1;
  uintptr_t delta = p - first;
  if (delta % sizeof *set->slabs != 0) return -1;
  size_t i = delta / sizeof *set->slabs;
  return i < set->count ? (ptrdiff_t)i : -1;
}

/* Moves the bump pointer down to `to`, poisoning what it frees. */
static void rewind_to(struct tarn_slab *s, uintptr_t to) {
  uintptr_t cur = s->bump.cur;
  if (cur > s->peak) s->peak = cur;
  POISON(to, cur - to);
  s->bump.cur = to;
}

/* Gives the slab's pages from `keep` (page-aligned) up to its high-water
 * mark back to the system. */
static void trim_above(struct tarn_slab *slab, uintptr_t keep) {
  if (slab->bump.cur > slab->peak) slab->peak = slab->bump.cur;
  if (slab->peak <= keep) return;
  size_t page = tarn__page_size();
  uintptr_t hi = slab->base + round_up(slab->peak - slab->base, page);
  if (hi <= keep || tarn__vm_discard((void *)keep, hi - keep) != 0) return;
  atomic_store_explicit(
      &slab->trimmed_bytes,
      atomic_load_explicit(&slab->trimmed_bytes, memory_order_relaxed) +
          (hi - keep),
      memory_order_relaxed);
  slab->peak = keep;
}

int tarn_slab_trim(tarn_slab *slab) {
  if (slab == NULL) return TARN_EINVAL;
  uintptr_t keep = slab->base + slab->set->retain;
  uintptr_t used =
      slab->base + round_up(slab->bump.cur - slab->base, tarn__page_size());
  trim_above(slab, used > keep ? used : keep);
  return 0;
}

int tarn_slab_release(tarn_slab_set *set, tarn_slab *slab) {
  if (!set_live(set) || slab == NULL) return TARN_EINVAL;
  ptrdiff_t i = slab_index(set, slab);
  if (i < 0) return TARN_EINVAL;
  _Atomic uint64_t *bits = &set->words[i / 64].free_bits;
  uint64_t bit = (uint64_t)1 << (i % 64);
  if (atomic_load_explicit(bits, memory_order_relaxed) & bit)
    return TARN_EMISUSE;

  rewind_to(slab, slab->base);
  slab->top = NO_MARK;
  trim_above(slab, slab->base + set->retain);
  /* Release order: the reset above happens before the next owner's claim. */
  uint64_t old = atomic_fetch_or_explicit(bits, bit, memory_order_release);
  return (old & bit) ? TARN_EMISUSE : 0;
}

int tarn_slab_alloc_slow(tarn_slab *s, size_t size, size_t align, void **out) {
  if (s == NULL || out == NULL || size == 0 || align == 0 ||
      (align & (align - 1)) != 0 || align > s->bump.max_align)
    return TARN_EINVAL;
  uintptr_t start = (s->bump.cur + (align - 1)) & ~(uintptr_t)(align - 1);
  if (start > s->end || size > s->end - start) return TARN_ENOSPC;
#ifdef TARN_POISON
  /* The window's end on ASan's 8-byte granule (the slab's end is one):
   * poisoning stops short of a granule that ends past it, and the next
   * window, starting inside it, would leave its first bytes addressable
   * (until 2026-12-05: one byte past a block could be read unreported) */
  uintptr_t want = (start + size + POISON_WINDOW + 7) & ~(uintptr_t)7;
  if (want > s->end) want = s->end;
  if (want > s->poisoned_to) {
    POISON(s->poisoned_to, want - s->poisoned_to);
    s->poisoned_to = want;
  }
  UNPOISON(start, size);
#endif
  s->bump.cur = start + size;
  *out = (void *)start;
  return 0;
}

/* Mark headers are slab-internal and stay poisoned under ASan; these two
 * functions are the only ones that touch them. */
NO_SANITIZE_ADDRESS static void header_write(uintptr_t at,
                                             struct mark_header h) {
  memcpy((void *)at, &h, sizeof h);
}

NO_SANITIZE_ADDRESS static struct mark_header header_read(uintptr_t at) {
  struct mark_header h;
  memcpy(&h, (const void *)at, sizeof h);
  return h;
}

int tarn_slab_mark(tarn_slab *s, tarn_mark *mark) {
  if (s == NULL || mark == NULL) return TARN_EINVAL;
  uintptr_t at = (s->bump.cur + 7) & ~(uintptr_t)7;
  if (at > s->end || s->end - at < sizeof(struct mark_header))
    return TARN_ENOSPC;
#ifdef TARN_POISON
  /* The header must be backed by poisoned bytes before it is written. */
  uintptr_t want = at + sizeof(struct mark_header);
  if (want > s->poisoned_to) {
    POISON(s->poisoned_to, want - s->poisoned_to);
    s->poisoned_to = want;
  }
#endif
  s->serial = (s->serial + 1) & SERIAL_MASK;
  struct mark_header h = {s->serial | (uint64_t)(at - s->bump.cur) << PAD_SHIFT,
                          s->top};
  header_write(at, h);
  s->top = at - s->base;
  s->bump.cur = at + sizeof h;
  mark->slab = s;
  mark->serial = h.serial;
  mark->offset = s->top;
  return 0;
}

/* The offset of `mark`'s header when it is live in `s`, else NO_MARK. */
static size_t mark_find(const tarn_slab *s, const tarn_mark *mark) {
  size_t at = s->top;
  while (at != NO_MARK && at > mark->offset)
    at = header_read(s->base + at).below;
  if (at == NO_MARK || at != mark->offset ||
      header_read(s->base + at).serial != mark->serial)
    return NO_MARK;
  return at;
}

int tarn_slab_reset(tarn_slab *s, const tarn_mark *mark) {
  if (s == NULL || mark == NULL || mark->slab != s) return TARN_EINVAL;
  size_t at = mark_find(s, mark);
  if (at == NO_MARK) return TARN_ESTALE;
  s->top = at;
  rewind_to(s, s->base + at + sizeof(struct mark_header));
  return 0;
}

int tarn_slab_unmark(tarn_slab *s, const tarn_mark *mark) {
  if (s == NULL || mark == NULL || mark->slab != s) return TARN_EINVAL;
  size_t at = mark_find(s, mark);
  if (at == NO_MARK) return TARN_ESTALE;
  struct mark_header h = header_read(s->base + at);
  s->top = h.below;
  rewind_to(s, s->base + at - (size_t)(h.serial >> PAD_SHIFT));
  return 0;
}

size_t tarn_slab_used(const tarn_slab *s) {
  return s == NULL ? 0 : s->bump.cur - s->base;
}

size_t tarn_slab_available(const tarn_slab *s) {
  return s == NULL ? 0 : s->end - s->bump.cur;
}

int tarn_slab_set_stats_get(const tarn_slab_set *set,
                            tarn_slab_set_stats *stats) {
  if (!set_live(set) || stats == NULL) return TARN_EINVAL;
  memset(stats, 0, sizeof *stats);
  stats->count = set->count;
  stats->slab_size = set->slab_size;
  stats->retain_bytes = set->retain;
  size_t free_slabs = 0;
  for (size_t w = 0; w < set->nwords; w++)
    free_slabs += (size_t)__builtin_popcountll(
        atomic_load_explicit(&set->words[w].free_bits, memory_order_relaxed));
  stats->claimed = set->count - free_slabs;
  for (size_t i = 0; i < set->count; i++) {
    struct tarn_slab *s = &set->slabs[i];
    stats->acquires += atomic_load_explicit(&s->acquires, memory_order_relaxed);
    stats->trimmed_bytes +=
        atomic_load_explicit(&s->trimmed_bytes, memory_order_relaxed);
  }
  return 0;
}
