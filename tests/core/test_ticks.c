/* test_ticks.c: the precise tick count the runtime times tasks with
 * (src/prim/prim.h): it advances with CLOCK_MONOTONIC at the rate it
 * reports, converts both ways, never runs backwards from one thread to
 * another (read in order), and every thread that initialises it concurrently
 * gets the same choice; the time-stamp counter's calibration is checked
 * wherever the counter is invariant, used for the ticks or not. The bounds are
 * loose (a sleep lasts at least what was asked, and anything under a minute
 * passes above), so a slow machine passes.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "prim/prim.h"

static void sleep_ns(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0) continue;
}

/* A 3 ms sleep measures at least 3 ms less the rate's error (calibrated
 * over 50 us, to a few tenths of a percent), and at most a minute. Against
 * the clock read around it, within 10 % and 0.1 ms: never above it (the
 * ticks are read inside the clock's span), and not below it in at least
 * three rounds of five (a thread descheduled between a clock read and its
 * tick read makes the clock's span longer; a wrong rate, or ticks that
 * differ between processors, is off in every round). */
static void ticks_advance_with_the_clock(void **state) {
  (void)state;
  tarn__ticks_init();
  int agreed = 0;
  for (int round = 0; round < 5; round++) {
    uint64_t n0 = tarn__clock_ns(), t0 = tarn__ticks();
    sleep_ns(3000000L);
    uint64_t t1 = tarn__ticks(), n1 = tarn__clock_ns();
    assert_true(t1 > t0);
    uint64_t measured = tarn__ticks_to_ns(t1 - t0);
    assert_true(measured >= 2700000u);
    assert_true(measured <= 60000000000u);
    uint64_t clock = n1 - n0;
    assert_true(measured <= clock + clock / 10 + 100000u);
    if (measured + measured / 10 + 100000u >= clock) agreed++;
  }
  assert_true(agreed >= 3);
}

/* How far a counter (read by `read`, its spans in ns by `to_ns`) is from
 * 20 ms of the clock, as a share of it, in the best of five tries (a try
 * the scheduler interrupts between a clock read and the counter's read is
 * off; a rate measured wrong, as by a cold first clock read, is off in
 * every try). */
static double best_of_five_off(uint64_t (*read)(void),
                               double (*to_ns)(uint64_t)) {
  double best = 1;
  for (int attempt = 0; attempt < 5; attempt++) {
    uint64_t n0 = tarn__clock_ns(), t0 = read();
    sleep_ns(20000000L);
    uint64_t n1 = tarn__clock_ns(), t1 = read();
    double clock = (double)(n1 - n0), counted = to_ns(t1 - t0);
    double off =
        counted > clock ? (counted - clock) / clock : (clock - counted) / clock;
    if (off < best) best = off;
  }
  return best;
}

static uint64_t read_ticks(void) { return tarn__ticks(); }

static double ticks_in_ns(uint64_t span) {
  return (double)tarn__ticks_to_ns(span);
}

/* The rate is right, not only its order: over 20 ms of the clock, the
 * ticks agree to 1 % (best_of_five_off). */
static void the_tick_rate_matches_the_clock(void **state) {
  (void)state;
  tarn__ticks_init();
  assert_true(best_of_five_off(read_ticks, ticks_in_ns) < 0.01);
}

#if defined(__x86_64__)
/* Whether /proc/cpuinfo gives the processor both flags of an invariant
 * time-stamp counter: a constant rate, and counting in every power state. */
static bool counter_invariant(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "flags", 5) != 0) continue;
    constant = strstr(line, " constant_tsc") != NULL;
    nonstop = strstr(line, " nonstop_tsc") != NULL;
    break;
  }
  fclose(f);
  return constant && nonstop;
}

/* The rate the_counter_calibrates_to_the_clock measured, for
 * counter_in_ns. */
static double measured_rate;

static uint64_t read_counter(void) { return tarn__tsc(); }

static double counter_in_ns(uint64_t span) {
  return (double)span / measured_rate;
}
#endif

/* The time-stamp counter's calibration, which the ticks use wherever the
 * kernel keeps time by the counter, also where it does not (a hypervisor's
 * clock, as on this project's machines, whose ticks are the clock's):
 * on an invariant counter, the rate it measures over 50 us gives 20 ms of
 * the clock to 1 % (best_of_five_off), and 0 comes back at most once in three
 * calls (0: the thread lost its processor in every one of a call's tries). */
static void the_counter_calibrates_to_the_clock(void **state) {
  (void)state;
#if defined(__x86_64__)
  if (!counter_invariant()) skip();
  double rate = 0;
  int zeros = 0;
  for (int call = 0; call < 3 && rate == 0; call++) {
    rate = tarn__tsc_rate();
    if (rate == 0) zeros++;
  }
  assert_true(zeros <= 1);
  assert_true(rate > 0.05 && rate < 20);
  measured_rate = rate;
  assert_true(best_of_five_off(read_counter, counter_in_ns) < 0.01);
#else
  skip();
#endif
}

static void ticks_convert_both_ways(void **state) {
  (void)state;
  tarn__ticks_init();
  static const uint64_t spans[] = {1000u, 50000u, 500000u, 1000000000u,
                                   3600000000000u};
  for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
    uint64_t ticks = tarn__ns_to_ticks(spans[i]);
    assert_true(ticks > 0);
    uint64_t back = tarn__ticks_to_ns(ticks);
    uint64_t diff = back > spans[i] ? back - spans[i] : spans[i] - back;
    assert_true(diff <= spans[i] / 1000 + 2); /* rounding only */
  }
  assert_int_equal(tarn__ticks_to_ns(0), 0);
  assert_int_equal(tarn__ns_to_ticks(0), 0);
}

/* ---- threads ------------------------------------------------------------ */

struct relay {
  atomic_uint_fast64_t baton; /* ticks read by the last thread to pass it */
  atomic_int turn;            /* whose turn: 0 or 1 */
  atomic_int backwards;       /* reads below the baton */
};

enum { passes = 20000 };

/* The time-stamp counter is read out of order, possibly before the loads
 * above it: a fence keeps the read after them (Intel's manual: MFENCE;
 * LFENCE before RDTSC). The runtime times a task on one thread and needs
 * no such order. */
static void read_after_loads(void) {
#if defined(__x86_64__)
  __asm__ volatile("mfence\n\tlfence" ::: "memory");
#endif
}

/* Passes the baton back and forth with the other thread: each reads the
 * ticks after it sees the other's read, which must not be lower. */
static void *relay_run(void *arg, int me) {
  struct relay *r = arg;
  for (int i = 0; i < passes; i++) {
    while (atomic_load(&r->turn) != me) sched_yield();
    uint64_t seen = atomic_load(&r->baton);
    read_after_loads();
    uint64_t now = tarn__ticks();
    if (now < seen) atomic_fetch_add(&r->backwards, 1);
    atomic_store(&r->baton, now);
    atomic_store(&r->turn, 1 - me);
  }
  return NULL;
}

static void *relay_one(void *arg) { return relay_run(arg, 1); }

static void ticks_never_run_backwards_between_threads(void **state) {
  (void)state;
  tarn__ticks_init();
  struct relay r;
  atomic_init(&r.baton, 0);
  atomic_init(&r.turn, 0);
  atomic_init(&r.backwards, 0);
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, relay_one, &r), 0);
  relay_run(&r, 0);
  assert_int_equal(pthread_join(other, NULL), 0);
  assert_int_equal(atomic_load(&r.backwards), 0);
}

struct choice {
  bool tsc;
  uint64_t second; /* a second in ticks */
};

static void *init_and_read(void *arg) {
  struct choice *c = arg;
  tarn__ticks_init();
  c->tsc = atomic_load(&tarn__ticks_tsc);
  c->second = tarn__ns_to_ticks(1000000000u);
  return NULL;
}

/* In a process of its own nothing has initialised the ticks yet: threads
 * that do it at once all see one choice and one rate. */
static void threads_initialising_together_agree(void **state) {
  (void)state;
  enum { nthreads = 4 };
  pthread_t threads[nthreads];
  struct choice choices[nthreads];
  for (int i = 0; i < nthreads; i++)
    assert_int_equal(
        pthread_create(&threads[i], NULL, init_and_read, &choices[i]), 0);
  for (int i = 0; i < nthreads; i++)
    assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (int i = 1; i < nthreads; i++) {
    assert_int_equal(choices[i].tsc, choices[0].tsc);
    assert_int_equal(choices[i].second, choices[0].second);
  }
  assert_true(choices[0].second > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(threads_initialising_together_agree), /* first */
      cmocka_unit_test(ticks_advance_with_the_clock),
      cmocka_unit_test(the_tick_rate_matches_the_clock),
      cmocka_unit_test(the_counter_calibrates_to_the_clock),
      cmocka_unit_test(ticks_convert_both_ways),
      cmocka_unit_test(ticks_never_run_backwards_between_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
