/* test_cancel.c: tarn_region_cancel and tarn_task_cancelled as a user sees
 * them. A cancelled region runs none of its tasks that had not started
 * (a running one sees tarn_task_cancelled and may stop early), whether
 * the cancel comes from another thread, from one of its own tasks or from
 * a signal handler; it reaches the regions begun inside it (a matrix sum's
 * own, a Cholesky factorisation's); what its cancelled tasks were to write
 * stays cancelled for later readers until written anew; a cancel after every
 * task finished changes nothing; a cancel after the wait is refused until
 * 16 regions were waited after it; the region's memory, reused, starts
 * uncancelled. A timed wait gives up and leaves the region going. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <cmocka.h>

#include "tarn.h"

/* Seconds a test waits for something another thread does before it
 * fails, so that a broken cancel fails instead of hanging. */
#define PATIENCE_NS ((uint64_t)20 * 1000000000u)

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static tarn_rt *make_rt(unsigned workers) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.work_tile = 0; /* the factorisation below on its own tiles */
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

static tarn_ref *word_ref(tarn_rt *rt) {
  tarn_ref *r = NULL;
  assert_int_equal(tarn_ref_alloc(tarn_rt_pool(rt), sizeof(uint64_t), 0, &r),
                   0);
  void *p = NULL;
  assert_int_equal(tarn_ref_pin(r, TARN_WRITE, 0, &p), 0);
  memset(p, 0, sizeof(uint64_t));
  assert_int_equal(tarn_ref_unpin(r), 0);
  return r;
}

/* What the tasks of these tests share. */
struct shared {
  tarn_region *region;
  atomic_int started; /* the blocker began */
  atomic_int saw;     /* the blocker saw tarn_task_cancelled */
  atomic_int ran;     /* tasks of the chain that ran */
  int cancel_at;      /* the chain task that cancels its region (-1) */
  atomic_int next;    /* the chain's next task number */
};

/* Begins, then waits until its region is cancelled (tarn_task_cancelled),
 * and returns 0: a running task runs to its end. */
static int k_blocker(tarn_task *t, void *arg) {
  struct shared *s = arg;
  atomic_store(&s->started, 1);
  uint64_t until = now_ns() + PATIENCE_NS;
  while (!tarn_task_cancelled(t) && now_ns() < until) sched_yield();
  atomic_store(&s->saw, tarn_task_cancelled(t));
  return 0;
}

/* One link of a chain on a word: counts itself; the one numbered
 * cancel_at cancels its own region. */
static int k_link(tarn_task *t, void *arg) {
  struct shared *s = arg;
  uint64_t *w = tarn_task_data(t, 0);
  (*w)++;
  int me = atomic_fetch_add(&s->next, 1);
  atomic_fetch_add(&s->ran, 1);
  if (me == s->cancel_at) (void)tarn_region_cancel(s->region);
  return 0;
}

/* Submits `n` links of the chain on `x`. */
static void submit_links(tarn_rt *rt, struct shared *s, tarn_ref *x, int n) {
  for (int i = 0; i < n; i++)
    assert_int_equal(tarn_submit(rt, k_link, TARN_ARG(s), TARN_RW(x)), 0);
}

static void wait_started(struct shared *s) {
  uint64_t until = now_ns() + PATIENCE_NS;
  while (!atomic_load(&s->started) && now_ns() < until) sched_yield();
  assert_true(atomic_load(&s->started));
}

/* Cancelled from the program thread while its first task runs: that one
 * ends as it likes, the 100 after it never run. */
static void a_cancelled_region_runs_none_of_its_waiting_tasks(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *x = word_ref(rt);
  struct shared s = {.cancel_at = -1};
  assert_int_equal(tarn_region_begin(rt, &s.region), 0);
  assert_int_equal(tarn_submit(rt, k_blocker, TARN_ARG(&s), TARN_RW(x)), 0);
  submit_links(rt, &s, x, 100);
  wait_started(&s);
  assert_int_equal(tarn_region_cancel(s.region), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(s.region, &st), TARN_ECANCELED);
  assert_true(atomic_load(&s.saw));
  assert_int_equal(atomic_load(&s.ran), 0);
  assert_int_equal(st.submitted, 101);
  assert_int_equal(st.run, 1);
  assert_int_equal(st.cancelled, 100);
  assert_int_equal(st.failed, 0);

  /* The next region runs uncancelled. */
  tarn_region *again = NULL;
  assert_int_equal(tarn_region_begin(rt, &again), 0);
  tarn_ref *y = word_ref(rt);
  s.ran = 0;
  submit_links(rt, &s, y, 10);
  assert_int_equal(tarn_region_wait(again, &st), 0);
  assert_int_equal(atomic_load(&s.ran), 10);
  assert_int_equal(st.run, 10);
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A task that found what the region looked for cancels the rest: a chain
 * of 100 where the eleventh cancels runs exactly 11. */
static void a_task_cancels_its_own_region(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = make_rt(workers);
    tarn_ref *x = word_ref(rt);
    struct shared s = {.cancel_at = 10};
    assert_int_equal(tarn_region_begin(rt, &s.region), 0);
    submit_links(rt, &s, x, 100);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(s.region, &st), TARN_ECANCELED);
    assert_int_equal(atomic_load(&s.ran), 11);
    assert_int_equal(st.run, 11);
    assert_int_equal(st.cancelled, 89);
    tarn_ref_release(x);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The regions begun inside a cancelled one are cancelled too: an inner
 * region's waiting tasks, and a matrix sum's own region. */
struct canceller {
  struct shared *s;
  tarn_region *outer;
};

static void *cancel_when_started(void *arg) {
  struct canceller *c = arg;
  wait_started(c->s);
  tarn_region_cancel(c->outer);
  return NULL;
}

static void cancelling_reaches_the_regions_begun_inside(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *x = word_ref(rt);
  tarn_matrix *a = NULL; /* filled outside the region that is cancelled */
  assert_int_equal(tarn_matrix_fill(rt, 64, 64, 16, 16, 1.0, &a), 0);
  tarn_region *outer = NULL, *inner = NULL;
  struct shared s = {.cancel_at = -1};
  assert_int_equal(tarn_region_begin(rt, &outer), 0);
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  s.region = inner;
  assert_int_equal(tarn_submit(rt, k_blocker, TARN_ARG(&s), TARN_RW(x)), 0);
  submit_links(rt, &s, x, 50);
  struct canceller c = {&s, outer};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, cancel_when_started, &c), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(inner, &st), TARN_ECANCELED);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_true(atomic_load(&s.saw));
  assert_int_equal(atomic_load(&s.ran), 0);
  assert_int_equal(st.cancelled, 50);

  /* An operation that waits in a region of its own, inside the cancelled
   * one, reports the cancel and hands back nothing. */
  double sum = -1;
  assert_int_equal(tarn_matrix_sum(a, &sum), TARN_ECANCELED);
  assert_true(sum == -1);
  assert_int_equal(tarn_region_wait(outer, NULL), 0); /* no task of its own */
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);      /* out of it: runs */
  assert_true(sum == 64.0 * 64.0);
  tarn_matrix_destroy(a);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static atomic_int counted;

static int k_count(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  atomic_fetch_add(&counted, 1);
  return 0;
}

/* A region of another runtime between them does not hide an inner region
 * from the outer one's cancel: A (rt1), B (rt2), C (rt1); A cancelled,
 * C's tasks never run. Until 2026-12-05 C looked only at its own parent
 * (B, of another runtime), and its five tasks ran. */
static void cancelling_reaches_past_another_runtimes_region(void **state) {
  (void)state;
  tarn_rt *rt1 = make_rt(2), *rt2 = make_rt(2);
  tarn_region *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_region_begin(rt1, &a), 0);
  assert_int_equal(tarn_region_begin(rt2, &b), 0);
  assert_int_equal(tarn_region_begin(rt1, &c), 0);
  assert_int_equal(tarn_region_cancel(a), 0);
  atomic_store(&counted, 0);
  for (int i = 0; i < 5; i++)
    assert_int_equal(tarn_submit(rt1, k_count, TARN_ARG(NULL)), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(c, &st), TARN_ECANCELED);
  assert_int_equal(st.cancelled, 5);
  assert_int_equal(atomic_load(&counted), 0);
  assert_int_equal(tarn_region_wait(b, NULL), 0); /* rt2's: not cancelled */
  assert_int_equal(tarn_region_wait(a, NULL), 0); /* no task of its own */
  assert_int_equal(tarn_rt_destroy(rt2), 0);
  assert_int_equal(tarn_rt_destroy(rt1), 0);
}

/* A factorisation inside a cancelled region returns TARN_ECANCELED; the
 * tiles its cancelled tasks were to write stay cancelled for readers
 * until written anew (here by a copy into the same matrix). */
static void a_factorisation_in_a_cancelled_region_stops(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_matrix *g = NULL, *a = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 200, 200, 50, 50, 3, &g), 0);
  assert_int_equal(tarn_matrix_syrk_ata(g, &a), 0); /* G^T G: SPD */
  double sum;
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);
  tarn_region *r = NULL;
  assert_int_equal(tarn_region_begin(rt, &r), 0);
  assert_int_equal(tarn_region_cancel(r), 0);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky(a, &info), TARN_ECANCELED);
  assert_int_equal(tarn_region_wait(r, NULL), 0); /* no task of its own */
  assert_int_equal(tarn_matrix_sum(a, &sum), TARN_ECANCELED);
  assert_int_equal(tarn_matrix_copy(g, &a), 0); /* writes every tile */
  double want;
  assert_int_equal(tarn_matrix_sum(g, &want), 0);
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);
  assert_true(sum == want);
  tarn_matrix_destroy(g);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* What a cancelled task was to write is cancelled for its readers in any
 * later region (rule 4), until a task writes it without reading it. */
static int k_read_word(tarn_task *t, void *arg) {
  (void)t;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

static int k_write_word(tarn_task *t, void *arg) {
  uint64_t *w = tarn_task_data(t, 0);
  *w = 42;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

static void what_cancelled_tasks_were_to_write_stays_cancelled(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *y = word_ref(rt);
  atomic_int runs = 0;
  tarn_region *r = NULL;
  assert_int_equal(tarn_region_begin(rt, &r), 0);
  assert_int_equal(tarn_region_cancel(r), 0); /* before any task */
  assert_int_equal(tarn_submit(rt, k_write_word, TARN_ARG(&runs), TARN_RW(y)),
                   0);
  assert_int_equal(tarn_region_wait(r, NULL), TARN_ECANCELED);
  assert_int_equal(atomic_load(&runs), 0);

  assert_int_equal(tarn_region_begin(rt, &r), 0);
  assert_int_equal(tarn_submit(rt, k_read_word, TARN_ARG(&runs), TARN_R(y)), 0);
  assert_int_equal(tarn_region_wait(r, NULL), TARN_ECANCELED);
  assert_int_equal(atomic_load(&runs), 0);

  assert_int_equal(tarn_region_begin(rt, &r), 0);
  assert_int_equal(tarn_submit(rt, k_write_word, TARN_ARG(&runs), TARN_W(y)),
                   0);
  assert_int_equal(tarn_submit(rt, k_read_word, TARN_ARG(&runs), TARN_R(y)), 0);
  assert_int_equal(tarn_region_wait(r, NULL), 0);
  assert_int_equal(atomic_load(&runs), 2);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A cancel once every task has finished changes nothing. */
static void a_cancel_after_the_end_changes_nothing(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *x = word_ref(rt);
  struct shared s = {.cancel_at = -1};
  assert_int_equal(tarn_region_begin(rt, &s.region), 0);
  submit_links(rt, &s, x, 20);
  uint64_t until = now_ns() + PATIENCE_NS;
  while (atomic_load(&s.ran) < 20 && now_ns() < until) sched_yield();
  assert_int_equal(atomic_load(&s.ran), 20);
  assert_int_equal(tarn_region_cancel(s.region), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(s.region, &st), 0);
  assert_int_equal(st.cancelled, 0);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_region_cancel(NULL), TARN_EINVAL);
  assert_int_equal(tarn_task_cancelled(NULL), 0);
}

/* A cancel after the wait is refused (TARN_EMISUSE), changing nothing,
 * for as long as the runtime keeps the region's memory aside: until 16
 * regions of it were waited after it, so that a late cancel (a signal
 * handler's, racing the wait's return) does not reach a region begun
 * since. Then the memory is reused (the runtime does not grow), by a
 * region that starts live: it runs every task, and takes a cancel. */
static void a_cancel_after_the_wait_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *x = word_ref(rt), *y = word_ref(rt);
  struct shared s = {.cancel_at = -1};
  tarn_region *first = NULL;
  assert_int_equal(tarn_region_begin(rt, &first), 0);
  assert_int_equal(tarn_region_cancel(first), 0);
  assert_int_equal(tarn_region_cancel(first), 0); /* twice: still 0 */
  submit_links(rt, &s, x, 3);
  assert_int_equal(tarn_region_wait(first, NULL), TARN_ECANCELED);
  assert_int_equal(tarn_region_cancel(first), TARN_EMISUSE);
  assert_int_equal(tarn_region_wait(first, NULL), TARN_EMISUSE);
  int reused_at = 0;
  for (int i = 1; i <= 64 && reused_at == 0; i++) {
    tarn_region *r = NULL;
    assert_int_equal(tarn_region_begin(rt, &r), 0);
    if (r == first)
      reused_at = i;
    else
      assert_int_equal(tarn_region_cancel(first), TARN_EMISUSE);
    atomic_store(&s.ran, 0);
    submit_links(rt, &s, y, 3);
    uint64_t until = now_ns() + PATIENCE_NS;
    while (atomic_load(&s.ran) < 3 && now_ns() < until) sched_yield();
    /* every task ran; the region is live, so a cancel is taken */
    assert_int_equal(atomic_load(&s.ran), 3);
    assert_int_equal(tarn_region_cancel(r), 0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(r, &st), 0);
    assert_int_equal(st.run, 3);
    assert_int_equal(st.cancelled, 0);
  }
  assert_true(reused_at > 16);
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* From a signal handler: a timer's SIGALRM cancels the region while a
 * long task runs, which sees it and stops with TARN_ECANCELED. */
static tarn_region *alarm_region;

static void on_alarm(int sig) {
  (void)sig;
  tarn_region_cancel(alarm_region);
}

static int k_long(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t until = now_ns() + PATIENCE_NS;
  while (now_ns() < until)
    if (tarn_task_cancelled(t)) return TARN_ECANCELED;
  return 0;
}

static void a_signal_handler_may_cancel(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  assert_int_equal(tarn_region_begin(rt, &alarm_region), 0);
  struct sigaction sa, was;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  assert_int_equal(sigaction(SIGALRM, &sa, &was), 0);
  tarn_task_desc d = {.fn = k_long};
  assert_int_equal(tarn_task_submit(rt, &d), 0);
  struct itimerval timer = {{0, 0}, {0, 50000}}; /* 50 ms, once */
  uint64_t t0 = now_ns();
  assert_int_equal(setitimer(ITIMER_REAL, &timer, NULL), 0);
  assert_int_equal(tarn_region_wait(alarm_region, NULL), TARN_ECANCELED);
  assert_true(now_ns() - t0 < PATIENCE_NS); /* stopped, not timed out */
  assert_int_equal(sigaction(SIGALRM, &was, NULL), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A timed wait gives up, changing nothing: the region stays the thread's
 * own, its tasks go on; then a cancel and a wait end it. A wait of 0
 * only looks; an endless timeout is a plain wait. */
static void a_timed_wait_gives_up_and_the_region_goes_on(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2);
  tarn_ref *x = word_ref(rt);
  struct shared s = {.cancel_at = -1};
  assert_int_equal(tarn_region_begin(rt, &s.region), 0);
  assert_int_equal(tarn_submit(rt, k_blocker, TARN_ARG(&s), TARN_RW(x)), 0);
  wait_started(&s);
  uint64_t t0 = now_ns();
  assert_int_equal(tarn_region_wait_timed(s.region, 20000000u, NULL),
                   TARN_ETIMEDOUT);
  uint64_t took = now_ns() - t0;
  assert_true(took >= 20000000u && took < PATIENCE_NS);
  assert_int_equal(tarn_region_wait_timed(s.region, 0, NULL), TARN_ETIMEDOUT);
  /* Still the thread's region: these join it. */
  submit_links(rt, &s, x, 5);
  assert_int_equal(tarn_region_cancel(s.region), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait_timed(s.region, PATIENCE_NS, &st),
                   TARN_ECANCELED);
  assert_true(atomic_load(&s.saw));
  assert_int_equal(st.submitted, 6);
  assert_int_equal(st.cancelled, 5);

  /* Done before the look: a wait of 0 ends the region; an endless one
   * waits as tarn_region_wait. */
  s.ran = 0;
  assert_int_equal(tarn_region_begin(rt, &s.region), 0);
  tarn_ref *y = word_ref(rt);
  submit_links(rt, &s, y, 10);
  uint64_t until = now_ns() + PATIENCE_NS;
  while (atomic_load(&s.ran) < 10 && now_ns() < until) sched_yield();
  int rc;
  do { /* the last task may still be finishing */
    rc = tarn_region_wait_timed(s.region, 0, &st);
  } while (rc == TARN_ETIMEDOUT && now_ns() < until);
  assert_int_equal(rc, 0);
  assert_int_equal(st.run, 10);
  assert_int_equal(tarn_region_begin(rt, &s.region), 0);
  submit_links(rt, &s, y, 10);
  assert_int_equal(tarn_region_wait_timed(s.region, UINT64_MAX, &st), 0);
  assert_int_equal(st.run, 10);
  assert_int_equal(tarn_region_wait_timed(NULL, 0, NULL), TARN_EINVAL);
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_cancelled_region_runs_none_of_its_waiting_tasks),
      cmocka_unit_test(a_task_cancels_its_own_region),
      cmocka_unit_test(cancelling_reaches_the_regions_begun_inside),
      cmocka_unit_test(cancelling_reaches_past_another_runtimes_region),
      cmocka_unit_test(a_factorisation_in_a_cancelled_region_stops),
      cmocka_unit_test(what_cancelled_tasks_were_to_write_stays_cancelled),
      cmocka_unit_test(a_cancel_after_the_end_changes_nothing),
      cmocka_unit_test(a_cancel_after_the_wait_is_refused),
      cmocka_unit_test(a_signal_handler_may_cancel),
      cmocka_unit_test(a_timed_wait_gives_up_and_the_region_goes_on),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
