/* test_slab_threads.c: acquire and release from many threads at once. No
 * slab is ever held by two threads (a guard word inside each slab is
 * swapped in and out atomically), the bytes a thread writes are the bytes it
 * reads back, and every acquire is matched by exactly one slab. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tarn.h"

enum { threads = 4, rounds = 20000, slabs = 3 };

struct worker {
  tarn_slab_set *set;
  uint64_t id;
  size_t acquired;
  size_t busy;
  int failures;
};

/* Fills `n` words with a pattern of (id, round), then checks them. */
static int fill_and_verify(uint64_t *words, size_t n, uint64_t id,
                           uint64_t round) {
  for (size_t i = 0; i < n; i++) words[i] = id << 40 ^ round << 16 ^ i;
  sched_yield(); /* give another thread the chance to step on them */
  for (size_t i = 0; i < n; i++)
    if (words[i] != (id << 40 ^ round << 16 ^ i)) return 1;
  return 0;
}

static void *hold_and_release(void *arg) {
  struct worker *w = arg;
  for (uint64_t round = 0; round < rounds; round++) {
    tarn_slab *slab = NULL;
    int rc = tarn_slab_acquire(w->set, &slab);
    if (rc == TARN_EBUSY) {
      w->busy++;
      sched_yield();
      continue;
    }
    if (rc != 0) {
      w->failures++;
      break;
    }
    w->acquired++;
    /* The first block of a slab is always its first 8 bytes. */
    void *first = NULL;
    if (tarn_slab_alloc(slab, sizeof(_Atomic uint64_t), 8, &first) != 0) {
      w->failures++;
      break;
    }
    _Atomic uint64_t *guard = first;
    if (atomic_exchange(guard, w->id) != 0) w->failures++;
    size_t n = 64 + (size_t)(round % 7) * 100;
    void *block = NULL;
    if (tarn_slab_alloc(slab, n * sizeof(uint64_t), 64, &block) != 0 ||
        fill_and_verify(block, n, w->id, round) != 0)
      w->failures++;
    if (atomic_exchange(guard, 0) != w->id) w->failures++;
    if (tarn_slab_release(w->set, slab) != 0) w->failures++;
  }
  return NULL;
}

static void no_slab_is_held_twice(void **state) {
  (void)state;
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = slabs;
  o.slab_size = 1 << 20;
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(&o, &set), 0);
  pthread_t tid[threads];
  struct worker w[threads];
  for (int i = 0; i < threads; i++) {
    w[i] = (struct worker){set, (uint64_t)i + 1, 0, 0, 0};
    assert_int_equal(pthread_create(&tid[i], NULL, hold_and_release, &w[i]), 0);
  }
  size_t total = 0;
  for (int i = 0; i < threads; i++) {
    assert_int_equal(pthread_join(tid[i], NULL), 0);
    assert_int_equal(w[i].failures, 0);
    assert_int_equal(w[i].acquired + w[i].busy, rounds);
    total += w[i].acquired;
  }
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_int_equal(st.claimed, 0);
  assert_int_equal(st.acquires, total);
  tarn_slab_set_destroy(set);
}

/* Threads race to claim every slab of a set at once: together they get each
 * slab exactly once, then EBUSY. */
enum { race_slabs = 200 };

struct racer {
  tarn_slab_set *set;
  tarn_slab *got[race_slabs];
  size_t n;
  int failures;
};

static void *claim_all(void *arg) {
  struct racer *r = arg;
  for (;;) {
    tarn_slab *slab = NULL;
    int rc = tarn_slab_acquire(r->set, &slab);
    if (rc == TARN_EBUSY) break;
    if (rc != 0 || r->n == race_slabs) {
      r->failures++;
      break;
    }
    r->got[r->n++] = slab;
  }
  return NULL;
}

static void *release_all(void *arg) {
  struct racer *r = arg;
  for (size_t i = 0; i < r->n; i++)
    if (tarn_slab_release(r->set, r->got[i]) != 0) r->failures++;
  return NULL;
}

static int by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (tarn_slab *const *)a;
  uintptr_t y = (uintptr_t) * (tarn_slab *const *)b;
  return (x > y) - (x < y);
}

static void racing_claims_get_each_slab_once(void **state) {
  (void)state;
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = race_slabs;
  o.slab_size = 1;
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(&o, &set), 0);
  for (int repeat = 0; repeat < 20; repeat++) {
    static struct racer r[threads];
    pthread_t tid[threads];
    for (int i = 0; i < threads; i++) {
      memset(&r[i], 0, sizeof r[i]);
      r[i].set = set;
      assert_int_equal(pthread_create(&tid[i], NULL, claim_all, &r[i]), 0);
    }
    tarn_slab *all[race_slabs];
    size_t n = 0;
    for (int i = 0; i < threads; i++) {
      assert_int_equal(pthread_join(tid[i], NULL), 0);
      assert_int_equal(r[i].failures, 0);
      for (size_t k = 0; k < r[i].n; k++) {
        assert_true(n < race_slabs);
        all[n++] = r[i].got[k];
      }
    }
    assert_int_equal(n, race_slabs);
    qsort(all, n, sizeof all[0], by_address);
    for (size_t k = 1; k < n; k++) assert_ptr_not_equal(all[k - 1], all[k]);
    for (int i = 0; i < threads; i++)
      assert_int_equal(pthread_create(&tid[i], NULL, release_all, &r[i]), 0);
    for (int i = 0; i < threads; i++) {
      assert_int_equal(pthread_join(tid[i], NULL), 0);
      assert_int_equal(r[i].failures, 0);
    }
    tarn_slab_set_stats st;
    assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
    assert_int_equal(st.claimed, 0);
  }
  tarn_slab_set_destroy(set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_slab_is_held_twice),
      cmocka_unit_test(racing_claims_get_each_slab_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
