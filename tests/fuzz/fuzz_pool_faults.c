/* fuzz_pool_faults.c: a libFuzzer target over pool operation sequences,
 * for what fuzz_pool.c leaves out: failing and short storage writes and
 * reads, failing source reads and home writes, compression, the LARGEST
 * policy, no recycling cache, write-only pins, writes through escaped
 * addresses and tarn_ref_flush_begin/_end by hand. The input's first
 * three bytes pick the pool (limit 16 to 64 KiB, policy, compression, one
 * or two I/O threads, cache); each byte pair after is one operation on
 * one of eight slots, or turns a fault on or off. A model tracks counts
 * and the pattern each object must hold: resident bytes stay within the
 * limit after every step, an error other than TARN_ENOMEM comes only
 * after a fault was injected, a flush leaves the home with the pattern,
 * every object still holds its pattern at the end, read with the faults
 * off (a second pin allowed where the first met a write still in flight
 * from before), and the pool is destroyed with no ref or source left. Seeds in
 * tests/fuzz/pool_faults/ (see tests/fuzz/README.md). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { slots = 8 };

/* A source: its bytes are the pattern of seed0 or, for a home (a source
 * with write), what `bytes` holds. */
struct home {
  unsigned char *bytes; /* NULL but for a home */
  uint8_t seed0;
};

struct slot {
  tarn_ref *ref;
  size_t size;
  uint8_t seed; /* byte i of the object is seed + i */
  int refs, pins;
  int wpin;           /* a pin with TARN_WRITE is held */
  unsigned char *esc; /* the escaped address, or NULL */
  struct home *home;  /* made from a source, or NULL */
};

static unsigned char disk[8 << 20];

/* The faults, read by the pool's I/O threads too. They publish no other
 * data, so relaxed loads and stores suffice. fail_writes and fail_reads
 * count the storage calls still to fail. */
static atomic_int fail_writes, fail_reads, short_io, fail_src_read,
    fail_src_write;
/* Set once a fault is turned on in this input: from then on, errors other
 * than TARN_ENOMEM are allowed. */
static int injected;
static atomic_int sources_alive;

static void fail(const char *what, int rc) {
  fprintf(stderr, "%s (rc %d)\n", what, rc);
  abort();
}

#define check(c, rc)        \
  do {                      \
    if (!(c)) fail(#c, rc); \
  } while (0)

/* Takes one of the failures *n counts, if any is left. */
static int take(atomic_int *n) {
  int v = atomic_load_explicit(n, memory_order_relaxed);
  while (v > 0 &&
         !atomic_compare_exchange_weak_explicit(
             n, &v, v - 1, memory_order_relaxed, memory_order_relaxed)) {
  }
  return v > 0;
}

static long disk_write(void *ctx, const void *buf, size_t len, uint64_t off) {
  (void)ctx;
  if (take(&fail_writes)) return -EIO;
  if (off + len > sizeof disk) return -ENOSPC;
  if (atomic_load_explicit(&short_io, memory_order_relaxed) && len > 1)
    len /= 2;
  memcpy(disk + off, buf, len);
  return (long)len;
}

static long disk_read(void *ctx, void *buf, size_t len, uint64_t off) {
  (void)ctx;
  if (take(&fail_reads)) return -EIO;
  if (off + len > sizeof disk) return -EIO;
  if (atomic_load_explicit(&short_io, memory_order_relaxed) && len > 1)
    len /= 2;
  memcpy(buf, disk + off, len);
  return (long)len;
}

static int src_read(void *ctx, void *dst, size_t size) {
  struct home *h = ctx;
  if (atomic_load_explicit(&fail_src_read, memory_order_relaxed))
    return TARN_ESTALE;
  unsigned char *p = dst;
  if (h->bytes != NULL)
    memcpy(p, h->bytes, size);
  else
    for (size_t i = 0; i < size; i++) p[i] = (uint8_t)(h->seed0 + i);
  return 0;
}

static int src_write(void *ctx, const void *src, size_t size) {
  struct home *h = ctx;
  if (atomic_load_explicit(&fail_src_write, memory_order_relaxed))
    return TARN_EIO;
  memcpy(h->bytes, src, size);
  return 0;
}

static void src_release(void *ctx) {
  struct home *h = ctx;
  free(h->bytes);
  free(h);
  atomic_fetch_sub_explicit(&sources_alive, 1, memory_order_relaxed);
}

/* A status a call may fail with: TARN_ENOMEM, or with faults injected
 * the errors they cause. */
static int may_fail(int rc) {
  return rc == TARN_ENOMEM ||
         (injected &&
          (rc == TARN_EIO || rc == TARN_ENOSPC || rc == TARN_ESTALE));
}

static void verify(const struct slot *s, const unsigned char *p) {
  for (size_t i = 0; i < s->size; i++)
    if (p[i] != (uint8_t)(s->seed + i)) {
      fprintf(stderr, "object of %zu bytes: byte %zu is %u, want %u\n", s->size,
              i, p[i], (uint8_t)(s->seed + i));
      abort();
    }
}

static void fill(const struct slot *s, unsigned char *p) {
  for (size_t i = 0; i < s->size; i++) p[i] = (uint8_t)(s->seed + i);
}

static void pin(struct slot *s, tarn_access mode) {
  unsigned char *p = NULL;
  int rc = tarn_ref_pin(s->ref, mode, 0, (void **)&p);
  if (may_fail(rc)) return;
  check(rc == 0, rc);
  if (mode & TARN_READ) verify(s, p);
  if (mode & TARN_WRITE) {
    s->seed = (uint8_t)(s->seed * 31 + 7);
    fill(s, p);
    s->wpin = 1;
  }
  s->pins++;
}

static void create(tarn_pool *pool, struct slot *s, uint8_t arg) {
  size_t size = 1 + (size_t)arg * 61;
  tarn_ref *r = NULL;
  int rc;
  int k = arg % 6;
  if (k >= 3) { /* from a source; 4 and 5: a home */
    struct home *h = calloc(1, sizeof *h);
    check(h != NULL, 0);
    h->seed0 = arg;
    tarn_source src = {.read = src_read, .release = src_release, .ctx = h};
    if (k >= 4) {
      h->bytes = malloc(size);
      check(h->bytes != NULL, 0);
      for (size_t i = 0; i < size; i++) h->bytes[i] = (uint8_t)(arg + i);
      src.write = src_write;
    }
    rc = tarn_ref_create_from(pool, size, &src, &r);
    if (rc != 0) {
      check(rc == TARN_ENOMEM, rc);
      free(h->bytes);
      free(h);
      return;
    }
    atomic_fetch_add_explicit(&sources_alive, 1, memory_order_relaxed);
    *s = (struct slot){
        .ref = r, .size = size, .seed = arg, .refs = 1, .home = h};
    return;
  }
  if (k == 0) {
    rc = tarn_ref_alloc(pool, size, 0, &r);
  } else if (k == 1) {
    rc = tarn_ref_create(pool, size, &r);
  } else {
    void *obj = malloc(size);
    check(obj != NULL, 0);
    rc = tarn_ref_adopt(pool, obj, size, &tarn_kind_malloc, 0, &r);
    if (rc != 0) free(obj);
  }
  if (may_fail(rc)) return;
  check(rc == 0, rc);
  unsigned char *p = NULL;
  rc = tarn_ref_pin(r, TARN_WRITE, 0, (void **)&p);
  if (may_fail(rc)) {
    check(tarn_ref_release(r) == 0, 0);
    return;
  }
  check(rc == 0, rc);
  *s = (struct slot){.ref = r, .size = size, .seed = arg, .refs = 1};
  fill(s, p);
  check(tarn_ref_unpin(r) == 0, 0);
}

static void release(struct slot *s) {
  int rc = tarn_ref_release(s->ref);
  check(rc == 0, rc);
  if (--s->refs > 0) return;
  for (; s->pins > 0; s->pins--) check(tarn_ref_unpin(s->ref) == 0, 0);
  s->ref = NULL;
}

static int has_home(const struct slot *s) {
  return s->home != NULL && s->home->bytes != NULL;
}

/* tarn_ref_flush: it fails only as the home's write does; afterwards the
 * home holds the object's bytes. */
static void flush(struct slot *s) {
  int rc = tarn_ref_flush(s->ref);
  if (!has_home(s)) {
    check(rc == TARN_EINVAL, rc);
    return;
  }
  if (rc == TARN_EIO && injected) return;
  check(rc == 0, rc);
  verify(s, s->home->bytes);
}

/* tarn_ref_flush_begin, then the store by hand (failed when bit 0 of arg
 * is 0) and tarn_ref_flush_end. */
static void flush_by_hand(struct slot *s, uint8_t arg) {
  void *d = NULL;
  int rc = tarn_ref_flush_begin(s->ref, &d);
  if (!has_home(s)) {
    check(rc == TARN_EINVAL, rc);
    return;
  }
  check(rc == 0 || rc == 1, rc);
  if (rc == 0) { /* the home holds the bytes already */
    verify(s, s->home->bytes);
    return;
  }
  verify(s, d);
  int status = arg & 1 ? 0 : TARN_EIO;
  if (status == 0) memcpy(s->home->bytes, d, s->size);
  rc = tarn_ref_flush_end(s->ref, status);
  check(rc == 0, rc);
}

static void inject(atomic_int *fault, int value) {
  atomic_store_explicit(fault, value, memory_order_relaxed);
  if (value != 0) injected = 1;
}

static void step(tarn_pool *pool, struct slot *s, uint8_t op, uint8_t arg) {
  if (s->ref == NULL) {
    create(pool, s, arg);
    return;
  }
  switch (op % 16) {
    case 0:
      if (s->pins < 3 && !s->wpin) pin(s, TARN_READ);
      break;
    case 1:
      if (s->pins == 0 && s->esc == NULL) pin(s, TARN_READ_WRITE);
      break;
    case 2:
      if (s->pins == 0 && s->esc == NULL) pin(s, TARN_WRITE);
      break;
    case 3: {
      int rc = tarn_ref_unpin(s->ref);
      check(rc == (s->pins > 0 ? 0 : TARN_EMISUSE), rc);
      if (s->pins > 0 && --s->pins == 0) s->wpin = 0;
      break;
    }
    case 4:
      check(tarn_ref_retain(s->ref) == 0, 0);
      s->refs++;
      break;
    case 5:
      release(s);
      break;
    case 6: {
      if (s->wpin) break;
      void *p = NULL;
      int rc = tarn_ref_escape(s->ref, 0, &p);
      if (may_fail(rc)) break;
      check(rc == 0, rc);
      check(s->esc == NULL || p == s->esc, 0);
      verify(s, p);
      s->esc = p;
      break;
    }
    case 7:
      if (s->esc != NULL && s->pins == 0) { /* write through the escape */
        s->seed = (uint8_t)(s->seed * 17 + arg);
        fill(s, s->esc);
      } else if (s->esc != NULL) {
        verify(s, s->esc);
      }
      break;
    case 8: {
      int rc = tarn_ref_prefetch(s->ref);
      check(rc == 0 || rc == 1 || rc == TARN_ENOMEM, rc);
      break;
    }
    case 9: /* nothing may write the object during a flush */
      if (!s->wpin) flush(s);
      break;
    case 10:
      if (!s->wpin) flush_by_hand(s, arg);
      break;
    case 11:
      inject(&fail_writes, arg % 4);
      break;
    case 12:
      inject(&fail_reads, arg % 3);
      break;
    case 13:
      inject(&fail_src_read, arg & 1);
      inject(&fail_src_write, (arg >> 1) & 1);
      break;
    case 14:
      inject(&short_io, arg & 1);
      break;
    default: { /* an end without a begin is refused */
      int rc = tarn_ref_flush_end(s->ref, 0);
      check(rc == (has_home(s) ? TARN_EMISUSE : TARN_EINVAL), rc);
      break;
    }
  }
}

static void faults_off(void) {
  atomic_store_explicit(&fail_writes, 0, memory_order_relaxed);
  atomic_store_explicit(&fail_reads, 0, memory_order_relaxed);
  atomic_store_explicit(&short_io, 0, memory_order_relaxed);
  atomic_store_explicit(&fail_src_read, 0, memory_order_relaxed);
  atomic_store_explicit(&fail_src_write, 0, memory_order_relaxed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  faults_off();
  injected = 0;
  tarn_pool_options o;
  check(tarn_pool_options_init(&o) == 0, 0);
  o.mem_limit = (size_t)(16 + (data[0] % 4) * 16) << 10;
  o.policy = data[1] & 1 ? TARN_EVICT_LARGEST : TARN_EVICT_CLOCK;
  o.compress = (data[1] >> 1) & 1;
  o.io_threads = 1 + ((data[1] >> 2) & 1);
  if (data[2] & 1) o.cache_bytes = 0;
  o.huge_pages = 0;
  tarn_storage st = {NULL, disk_write, disk_read, NULL, NULL};
  o.storage = &st;
  tarn_pool *pool = NULL;
  check(tarn_pool_create(&o, &pool) == 0, 0);
  struct slot s[slots];
  memset(s, 0, sizeof s);
  tarn_pool_stats stats;
  for (size_t i = 3; i + 1 < size; i += 2) {
    step(pool, &s[data[i] % slots], (uint8_t)(data[i] / slots), data[i + 1]);
    check(tarn_pool_stats_get(pool, &stats) == 0, 0);
    if (stats.resident_bytes > o.mem_limit) {
      fprintf(stderr, "resident %zu > limit %zu\n", stats.resident_bytes,
              o.mem_limit);
      abort();
    }
  }
  faults_off();
  for (int i = 0; i < slots; i++) {
    if (s[i].ref != NULL && !s[i].wpin) { /* a last read of each */
      unsigned char *p = NULL;
      int rc = tarn_ref_pin(s[i].ref, TARN_READ, 0, (void **)&p);
      /* A write begun before the faults went off may fail this pin's
       * eviction; it waited for that write, so a second pin may not. */
      if (rc != TARN_ENOMEM && may_fail(rc))
        rc = tarn_ref_pin(s[i].ref, TARN_READ, 0, (void **)&p);
      check(rc == 0 || rc == TARN_ENOMEM, rc);
      if (rc == 0) {
        verify(&s[i], p);
        check(tarn_ref_unpin(s[i].ref) == 0, 0);
      }
    }
    for (; s[i].ref != NULL && s[i].pins > 0; s[i].pins--)
      check(tarn_ref_unpin(s[i].ref) == 0, 0);
    while (s[i].ref != NULL) release(&s[i]);
  }
  check(tarn_pool_stats_get(pool, &stats) == 0, 0);
  check(stats.resident_peak <= o.mem_limit, 0);
  int rc = tarn_pool_destroy(pool);
  check(rc == 0, rc);
  rc = atomic_load_explicit(&sources_alive, memory_order_relaxed);
  check(rc == 0, rc);
  return 0;
}
