/* test_pool_model.c: threads run random sequences of alloc, create, adopt,
 * create_from (a source of the pattern, or a home that written bytes go
 * back to), retain, release, pin (checking the bytes against the pattern
 * last written), unpin, prefetch, flush (checking the home) and escape on
 * one pool under a tiny memory limit, each checked against a simple model
 * of the counts it expects. All threads also pin a few shared objects for
 * reading (one of them read from a source each time it comes back), so
 * pins race with evictions of the same object. Seeds are fixed: a failure
 * repeats. The same runs on a spill disk that fails one read or write in
 * a few, at random (tests/memdisk.h): calls may then also return the
 * disk's error, a pin that succeeds still sees the bytes last written,
 * and once the disk is sound every object reads back intact. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memdisk.h"
#include "tarn.h"

enum { threads = 4, slots = 12, shared = 3, steps = 3000 };
#define LIMIT ((size_t)768 << 10)
#define WAIT_NS 200000000ull /* 0.2 s: under the limit, pins may wait */

struct slot {
  tarn_ref *ref;
  size_t size;
  uint32_t seed; /* the pattern last written */
  int refs, pins;
  void *addr; /* while pinned: the address, which must not move */
  int escaped;
  struct home *home; /* the source's home (tarn_source.write), or NULL */
};

struct worker {
  tarn_pool *pool;
  tarn_ref **shared;
  uint64_t rng;
  int pinned, escaped; /* bounded, so threads cannot pin the limit away */
  int disk_fails;      /* the spill disk fails now and then */
  struct slot s[slots];
  char error[160];
};

static uint64_t next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static uint32_t word(uint32_t seed, size_t i) {
  return seed * 2654435761u ^ (uint32_t)i;
}

static void write_pattern(void *p, size_t size, uint32_t seed) {
  uint32_t *w = p;
  for (size_t i = 0; i < size / 4; i++) w[i] = word(seed, i);
}

static int pattern_ok(const void *p, size_t size, uint32_t seed) {
  const uint32_t *w = p;
  for (size_t i = 0; i < size / 4; i++)
    if (w[i] != word(seed, i)) return 0;
  return 1;
}

#define FAIL(w, ...)                                     \
  do {                                                   \
    snprintf((w)->error, sizeof(w)->error, __VA_ARGS__); \
    return -1;                                           \
  } while (0)

/* A source (tarn_ref_create_from) of the pattern of the seed in ctx. */
static int pattern_source(void *ctx, void *dst, size_t size) {
  write_pattern(dst, size, (uint32_t)(uintptr_t)ctx);
  return 0;
}

/* A home for an object (a source with write): read gives what write
 * stored, the pattern of the seed it was made with until then. Freed
 * with the ref. */
struct home {
  size_t size;
  unsigned char bytes[];
};

static int home_read(void *ctx, void *dst, size_t size) {
  memcpy(dst, ((struct home *)ctx)->bytes, size);
  return 0;
}

static int home_write(void *ctx, const void *src, size_t size) {
  memcpy(((struct home *)ctx)->bytes, src, size);
  return 0;
}

static void home_release(void *ctx) { free(ctx); }

/* A status a call under memory pressure may return besides success: no
 * room, or, on a failing disk, the disk's error. */
static int pressure(const struct worker *w, int rc) {
  return rc == TARN_ENOMEM ||
         (w->disk_fails && (rc == TARN_EIO || rc == TARN_ENOSPC));
}

static int op_create(struct worker *w, struct slot *s) {
  size_t size = 4 + (next(&w->rng) % (64 << 10)) / 4 * 4;
  uint32_t seed = (uint32_t)next(&w->rng);
  int rc;
  tarn_ref *r = NULL;
  unsigned how = (unsigned)(next(&w->rng) % 5);
  if (how >= 3) { /* its bytes come from the source (until written) */
    tarn_source src = {.read = pattern_source, .ctx = (void *)(uintptr_t)seed};
    if (how == 4) { /* a home: written objects go back to it */
      struct home *h = malloc(sizeof *h + size);
      if (h == NULL) FAIL(w, "malloc");
      h->size = size;
      write_pattern(h->bytes, size, seed);
      src = (tarn_source){.read = home_read,
                          .release = home_release,
                          .ctx = h,
                          .write = home_write};
    }
    rc = tarn_ref_create_from(w->pool, size, &src, &r);
    if (rc != 0) FAIL(w, "create_from: %s", tarn_strerror(rc));
    *s = (struct slot){r, size, seed, 1, 0, NULL, 0, how == 4 ? src.ctx : NULL};
    return 0;
  }
  if (how == 0) {
    rc = tarn_ref_alloc(w->pool, size, WAIT_NS, &r);
  } else if (how == 1) {
    rc = tarn_ref_create(w->pool, size, &r); /* bytes at the first pin */
  } else {
    void *obj = malloc(size);
    if (obj == NULL) FAIL(w, "malloc");
    rc = tarn_ref_adopt(w->pool, obj, size, &tarn_kind_malloc, WAIT_NS, &r);
    if (rc != 0) free(obj);
  }
  if (pressure(w, rc)) return 0;
  if (rc != 0) FAIL(w, "create: %s", tarn_strerror(rc));
  void *p = NULL;
  rc = tarn_ref_pin(r, TARN_WRITE, WAIT_NS, &p);
  if (rc == 0) {
    write_pattern(p, size, seed);
    rc = tarn_ref_unpin(r);
  }
  if (rc != 0 && !pressure(w, rc)) FAIL(w, "first pin: %s", tarn_strerror(rc));
  if (rc != 0) return tarn_ref_release(r) == 0 ? 0 : -1;
  *s = (struct slot){r, size, seed, 1, 0, NULL, 0, NULL};
  return 0;
}

static int op_pin(struct worker *w, struct slot *s) {
  int writing = next(&w->rng) % 3 == 0 && s->pins == 0;
  void *p = NULL;
  int rc =
      tarn_ref_pin(s->ref, writing ? TARN_READ_WRITE : TARN_READ, WAIT_NS, &p);
  if (pressure(w, rc)) return 0;
  if (rc != 0) FAIL(w, "pin: %s", tarn_strerror(rc));
  if (s->pins > 0 && p != s->addr) FAIL(w, "a pinned object moved");
  if (!pattern_ok(p, s->size, s->seed)) FAIL(w, "pin saw wrong bytes");
  if (writing) {
    s->seed = (uint32_t)next(&w->rng);
    write_pattern(p, s->size, s->seed);
  }
  s->addr = p;
  s->pins++;
  w->pinned++;
  return 0;
}

static int op_unpin(struct worker *w, struct slot *s) {
  int rc = tarn_ref_unpin(s->ref);
  if (s->pins == 0) {
    if (rc != TARN_EMISUSE) FAIL(w, "unpin without pin: %d", rc);
    return 0;
  }
  if (rc != 0) FAIL(w, "unpin: %s", tarn_strerror(rc));
  s->pins--;
  w->pinned--;
  return 0;
}

static int op_release(struct worker *w, struct slot *s) {
  if (tarn_ref_release(s->ref) != 0) FAIL(w, "release");
  if (--s->refs > 0) return 0;
  /* Dead: each remaining unpin still works; the last one frees it. */
  if (s->pins > 0 && tarn_ref_release(s->ref) != TARN_EMISUSE)
    FAIL(w, "release past zero while pinned");
  while (s->pins > 0) {
    if (tarn_ref_unpin(s->ref) != 0) FAIL(w, "unpin of a dead ref");
    s->pins--;
    w->pinned--;
  }
  w->escaped -= s->escaped;
  s->ref = NULL;
  return 0;
}

static int op_shared(struct worker *w) {
  size_t k = next(&w->rng) % shared;
  void *p = NULL;
  int rc = tarn_ref_pin(w->shared[k], TARN_READ, WAIT_NS, &p);
  if (pressure(w, rc)) return 0;
  if (rc != 0) FAIL(w, "shared pin: %s", tarn_strerror(rc));
  if (!pattern_ok(p, tarn_ref_size(w->shared[k]), (uint32_t)k + 1))
    FAIL(w, "shared pin saw wrong bytes");
  if (tarn_ref_unpin(w->shared[k]) != 0) FAIL(w, "shared unpin");
  return 0;
}

static int step(struct worker *w) {
  struct slot *s = &w->s[next(&w->rng) % slots];
  unsigned op = (unsigned)(next(&w->rng) % 100);
  if (s->ref == NULL) return op < 50 ? op_create(w, s) : op_shared(w);
  if (op < 30) return w->pinned < 2 ? op_pin(w, s) : op_unpin(w, s);
  if (op < 60) return op_unpin(w, s);
  if (op < 70) {
    if (tarn_ref_retain(s->ref) != 0) FAIL(w, "retain");
    s->refs++;
    return 0;
  }
  if (op < 84) return op_release(w, s);
  if (op < 88) {
    int rc = tarn_ref_prefetch(s->ref);
    if (rc != 0 && rc != 1) FAIL(w, "prefetch: %s", tarn_strerror(rc));
    return 0;
  }
  if (op < 91 && s->home != NULL) {
    /* This thread alone writes the object: once flushed, the home holds
     * its last pattern. */
    int rc = tarn_ref_flush(s->ref);
    if (rc != 0) FAIL(w, "flush: %s", tarn_strerror(rc));
    if (!pattern_ok(s->home->bytes, s->size, s->seed))
      FAIL(w, "a flushed home holds other bytes");
    return 0;
  }
  if (op < 92 && !s->escaped && w->escaped == 0) {
    void *p = NULL;
    int rc = tarn_ref_escape(s->ref, WAIT_NS, &p);
    if (pressure(w, rc)) return 0;
    if (rc != 0) FAIL(w, "escape: %s", tarn_strerror(rc));
    s->escaped = 1;
    w->escaped++;
    return 0;
  }
  return op_shared(w);
}

static void *run(void *arg) {
  struct worker *w = arg;
  for (int i = 0; i < steps && w->error[0] == '\0'; i++)
    if (step(w) != 0 && w->error[0] == '\0')
      snprintf(w->error, sizeof w->error, "step %d failed", i);
  for (int i = 0; i < slots && w->error[0] == '\0'; i++) {
    while (w->s[i].ref != NULL && w->s[i].pins > 0) op_unpin(w, &w->s[i]);
    while (w->s[i].ref != NULL) op_release(w, &w->s[i]);
  }
  return NULL;
}

/* Runs the threads of `seed` on a pool under LIMIT; with `fail_one_in`,
 * on a memdisk that fails one call in that many until they are done.
 * Adds the run's failed reads and writes to *failures (when not NULL). */
static void run_model(uint64_t seed, int compress, unsigned fail_one_in,
                      uint64_t failures[2]) {
  tarn_pool_options o;
  tarn_pool_options_init(&o);
  o.mem_limit = LIMIT;
  o.compress = compress;
  struct memdisk *disk = fail_one_in != 0 ? memdisk_new() : NULL;
  tarn_storage storage;
  if (disk != NULL) {
    storage = memdisk_storage(disk);
    o.storage = &storage;
  }
  tarn_pool *pool = NULL;
  assert_int_equal(tarn_pool_create(&o, &pool), 0);
  tarn_ref *sh[shared];
  /* Shared object 0 is read from a source each time it comes back. */
  tarn_source src = {.read = pattern_source, .ctx = (void *)(uintptr_t)1};
  assert_int_equal(tarn_ref_create_from(pool, 40 << 10, &src, &sh[0]), 0);
  for (int k = 1; k < shared; k++) {
    assert_int_equal(tarn_ref_alloc(pool, 40 << 10, 0, &sh[k]), 0);
    void *p = NULL;
    assert_int_equal(tarn_ref_pin(sh[k], TARN_WRITE, 0, &p), 0);
    write_pattern(p, 40 << 10, (uint32_t)k + 1);
    assert_int_equal(tarn_ref_unpin(sh[k]), 0);
  }
  if (disk != NULL) {
    pthread_mutex_lock(&disk->lock);
    disk->fail_one_in = fail_one_in;
    disk->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    pthread_mutex_unlock(&disk->lock);
  }
  static struct worker w[threads];
  pthread_t tid[threads];
  for (int i = 0; i < threads; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].pool = pool;
    w[i].shared = sh;
    w[i].disk_fails = disk != NULL;
    w[i].rng = seed * 7919 + (uint64_t)i * 104729 + 1;
    assert_int_equal(pthread_create(&tid[i], NULL, run, &w[i]), 0);
  }
  for (int i = 0; i < threads; i++) {
    assert_int_equal(pthread_join(tid[i], NULL), 0);
    if (w[i].error[0] != '\0')
      fail_msg("seed %llu thread %d: %s", (unsigned long long)seed, i,
               w[i].error);
  }
  if (disk != NULL) { /* sound again */
    pthread_mutex_lock(&disk->lock);
    disk->fail_one_in = 0;
    pthread_mutex_unlock(&disk->lock);
  }
  /* However the threads interleaved, more than the limit in fresh objects
   * must push something out. */
  enum { more = LIMIT / (64 << 10) + 2 };
  tarn_ref *extra[more];
  for (int k = 0; k < more; k++)
    assert_int_equal(tarn_ref_alloc(pool, 64 << 10, WAIT_NS, &extra[k]), 0);
  for (int k = 0; k < more; k++)
    assert_int_equal(tarn_ref_release(extra[k]), 0);
  tarn_pool_stats st;
  assert_int_equal(tarn_pool_stats_get(pool, &st), 0);
  assert_true(st.resident_peak <= LIMIT);
  assert_true(st.evictions > 0);
  /* A ref released while an I/O thread writes it is freed when the write
   * ends: the count may still include such refs. */
  assert_true(st.live_refs >= shared);
  assert_true(st.source_reads > 0);
  assert_true(st.source_writes > 0);
  if (disk == NULL) {
    assert_int_equal(st.read_failures, 0);
    assert_int_equal(st.write_failures, 0);
  }
  if (failures != NULL) {
    failures[0] += st.read_failures;
    failures[1] += st.write_failures;
  }
  for (int k = 0; k < shared; k++) { /* pushed out above, read back now */
    void *p = NULL;
    assert_int_equal(tarn_ref_pin(sh[k], TARN_READ, WAIT_NS, &p), 0);
    assert_true(pattern_ok(p, 40 << 10, (uint32_t)k + 1));
    assert_int_equal(tarn_ref_unpin(sh[k]), 0);
    assert_int_equal(tarn_ref_release(sh[k]), 0);
  }
  assert_int_equal(tarn_pool_destroy(pool), 0);
  if (disk != NULL) memdisk_free(disk);
}

static void random_sequences_match_the_model(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 4; seed++) run_model(seed, 0, 0, NULL);
}

static void random_sequences_with_compression(void **state) {
  (void)state;
  run_model(99, 1, 0, NULL);
}

/* The disk must have failed under reads and under writes in these runs
 * together: how much a run spills depends on how its threads interleave.
 * Alone a run saw 20 to 50 of each; with two processes spinning beside
 * the test, one saw a single read failure in 10 read backs (seed 24),
 * while the four runs together saw 60 or more read failures and 50 or
 * more write failures in each of six tries. */
static void random_sequences_on_a_failing_disk(void **state) {
  (void)state;
  uint64_t failures[2] = {0, 0};
  for (uint64_t seed = 21; seed <= 23; seed++) run_model(seed, 0, 10, failures);
  run_model(24, 1, 10, failures);
  print_message("the disk failed %llu reads and %llu writes\n",
                (unsigned long long)failures[0],
                (unsigned long long)failures[1]);
  assert_true(failures[0] > 0);
  assert_true(failures[1] > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_sequences_match_the_model),
      cmocka_unit_test(random_sequences_with_compression),
      cmocka_unit_test(random_sequences_on_a_failing_disk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
