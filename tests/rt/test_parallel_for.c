/* test_parallel_for.c: tarn_task_parallel_for as a user sees it: every
 * index of the range done exactly once whatever the split, the bodies'
 * failures returned while the other ranges still run, one call for small
 * ranges, many tasks sharing their work at once, and bad calls refused;
 * and the same of the runtime's internal tarn__task_parallel_for_lead,
 * whose lead runs once, beside the ranges other workers take; and its
 * tarn__task_alone and tarn__task_last; and which thread runs a region's
 * only task; and the round trip pinned workers time between their
 * processors (tarn__task_far). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rt/rt_internal.h"
#include "support.h"
#include "tarn.h"

/* What one task shares: a count of visits per index. */
struct visits {
  size_t count, grain;
  _Atomic unsigned *seen;
  atomic_uint calls;
  size_t fail_at; /* a body whose range holds it returns TARN_EIO */
  size_t first_begin, first_end;
  int result; /* tarn_task_parallel_for's */
};

/* Ranges this thread has run. */
static _Thread_local unsigned ranges_here;

static int visit(void *arg, size_t begin, size_t end) {
  struct visits *v = arg;
  ranges_here++;
  assert_true(begin < end);
  assert_true(end <= v->count);
  if (atomic_fetch_add(&v->calls, 1) == 0) {
    v->first_begin = begin;
    v->first_end = end;
  }
  for (size_t i = begin; i < end; i++) atomic_fetch_add(&v->seen[i], 1);
  return begin <= v->fail_at && v->fail_at < end ? TARN_EIO : 0;
}

static int share_task(tarn_task *task, void *arg) {
  struct visits *v = arg;
  v->result = tarn_task_parallel_for(task, v->count, v->grain, visit, v);
  return 0;
}

static void visits_init(struct visits *v, size_t count, size_t grain) {
  memset(v, 0, sizeof *v);
  v->count = count;
  v->grain = grain;
  v->fail_at = SIZE_MAX;
  v->seen = calloc(count ? count : 1, sizeof *v->seen);
  assert_non_null(v->seen);
}

static void assert_each_once(const struct visits *v) {
  for (size_t i = 0; i < v->count; i++)
    assert_int_equal(atomic_load(&v->seen[i]), 1);
}

/* Runs one task that shares `v` and waits for it. */
static void run_one(tarn_rt *rt, struct visits *v) {
  tarn_region *region;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, share_task, TARN_ARG(v)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
}

static void every_index_once(void **state) {
  (void)state;
  static const size_t counts[] = {1, 2, 7, 64, 1000, 100003};
  static const size_t grains[] = {1, 3, 64, 5000};
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
      for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
        struct visits v;
        visits_init(&v, counts[c], grains[g]);
        run_one(rt, &v);
        assert_int_equal(v.result, 0);
        assert_each_once(&v);
        /* No range is shorter than the grain, but for the last one. */
        assert_true(atomic_load(&v.calls) <=
                    (counts[c] + grains[g] - 1) / grains[g]);
        free(v.seen);
      }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void small_range_is_one_call(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct visits v;
  visits_init(&v, 99, 50); /* fewer than two grains */
  run_one(rt, &v);
  assert_int_equal(v.result, 0);
  assert_int_equal(atomic_load(&v.calls), 1);
  assert_int_equal(v.first_begin, 0);
  assert_int_equal(v.first_end, 99);
  free(v.seen);
  visits_init(&v, 0, 1);
  run_one(rt, &v);
  assert_int_equal(v.result, 0);
  assert_int_equal(atomic_load(&v.calls), 0);
  free(v.seen);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void failure_returned_others_run(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (int round = 0; round < 50; round++) {
    struct visits v;
    visits_init(&v, 4096, 16);
    v.fail_at = (size_t)round * 81 % 4096;
    run_one(rt, &v);
    assert_int_equal(v.result, TARN_EIO);
    assert_each_once(&v);
    free(v.seen);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Many tasks at once, each sharing its own range: workers are owners and
 * helpers in turn. */
static void many_tasks_share(void **state) {
  (void)state;
  enum { tasks = 64 };
  tarn_rt *rt = test_rt(3, 0);
  static struct visits v[tasks];
  for (int round = 0; round < 5; round++) {
    tarn_region *region;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (size_t k = 0; k < tasks; k++) {
      visits_init(&v[k], 1000 + 37 * k, 1 + k % 9);
      assert_int_equal(tarn_submit(rt, share_task, TARN_ARG(&v[k])), 0);
    }
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    for (size_t k = 0; k < tasks; k++) {
      assert_int_equal(v[k].result, 0);
      assert_each_once(&v[k]);
      free(v[k].seen);
    }
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int never(void *arg, size_t begin, size_t end) {
  (void)arg;
  (void)begin;
  (void)end;
  fail_msg("a refused call ran its body");
  return 0;
}

static int lead_never(void *arg) {
  (void)arg;
  fail_msg("a refused call ran its lead");
  return 0;
}

/* The statuses of bad calls, without a lead ([0]) and with one ([1], the
 * runtime's tarn__task_parallel_for_lead). */
struct misuse {
  int null_body[2], zero_grain[2], null_task[2], null_lead;
};

static int misuse_task(tarn_task *task, void *arg) {
  struct misuse *m = arg;
  m->null_body[0] = tarn_task_parallel_for(task, 10, 1, NULL, NULL);
  m->zero_grain[0] = tarn_task_parallel_for(task, 10, 0, never, NULL);
  m->null_task[0] = tarn_task_parallel_for(NULL, 10, 1, never, NULL);
  m->null_body[1] =
      tarn__task_parallel_for_lead(task, 10, 1, NULL, NULL, lead_never, NULL);
  m->zero_grain[1] =
      tarn__task_parallel_for_lead(task, 10, 0, never, NULL, lead_never, NULL);
  m->null_task[1] =
      tarn__task_parallel_for_lead(NULL, 10, 1, never, NULL, lead_never, NULL);
  m->null_lead =
      tarn__task_parallel_for_lead(task, 10, 1, never, NULL, NULL, NULL);
  return 0;
}

static void bad_calls_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct misuse m;
  tarn_region *region;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, misuse_task, TARN_ARG(&m)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  for (int lead = 0; lead < 2; lead++) {
    assert_int_equal(m.null_body[lead], TARN_EINVAL);
    assert_int_equal(m.zero_grain[lead], TARN_EINVAL);
    assert_int_equal(m.null_task[lead], TARN_EMISUSE);
  }
  assert_int_equal(m.null_lead, TARN_EINVAL);
  /* Outside any task. */
  assert_int_equal(tarn_task_parallel_for(NULL, 10, 1, never, NULL),
                   TARN_EMISUSE);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The ranges of a count too large to visit: each recorded, up to
 * RANGES_MAX (a body past that fails). */
#define RANGES_MAX 4096

struct huge {
  size_t count, grain;
  struct {
    size_t begin, end;
  } ranges[RANGES_MAX];
  atomic_size_t n;
  int result;
};

static int record_range(void *arg, size_t begin, size_t end) {
  struct huge *h = arg;
  size_t k = atomic_fetch_add(&h->n, 1);
  if (k >= RANGES_MAX) return TARN_EIO;
  h->ranges[k].begin = begin;
  h->ranges[k].end = end;
  return 0;
}

static int huge_task(tarn_task *task, void *arg) {
  struct huge *h = arg;
  h->result = tarn_task_parallel_for(task, h->count, h->grain, record_range, h);
  return 0;
}

static int by_begin(const void *a, const void *b) {
  const size_t *x = a, *y = b; /* begin first in each range */
  return *x < *y ? -1 : *x > *y;
}

/* A count near SIZE_MAX, shared with an idle worker: the ranges still
 * cover [0, count) end to end, a few of them (rounding the range length
 * up once wrapped: no range ran, or SIZE_MAX ranges of one). */
static void counts_near_size_max_are_covered(void **state) {
  (void)state;
  static const struct {
    size_t count, grain;
  } cases[] = {{(size_t)0xD << 60, 1},   {SIZE_MAX, 1},
               {SIZE_MAX - 1, 1},        {SIZE_MAX, (size_t)1 << 62},
               {SIZE_MAX, SIZE_MAX / 3}, {(size_t)1 << 63, 1}};
  tarn_rt *rt = test_rt(2, 0);
  struct huge *h = malloc(sizeof *h);
  assert_non_null(h);
  for (int round = 0; round < 10; round++)
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      h->count = cases[c].count;
      h->grain = cases[c].grain;
      atomic_init(&h->n, 0);
      h->result = -100;
      tarn_region *region;
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      assert_int_equal(tarn_submit(rt, huge_task, TARN_ARG(h)), 0);
      assert_int_equal(tarn_region_wait(region, NULL), 0);
      assert_int_equal(h->result, 0);
      size_t n = atomic_load(&h->n);
      assert_true(n >= 1 && n <= 64);
      qsort(h->ranges, n, sizeof h->ranges[0], by_begin);
      size_t at = 0;
      for (size_t k = 0; k < n; k++) {
        assert_true(h->ranges[k].begin == at);
        assert_true(h->ranges[k].end > at);
        assert_true(k == n - 1 ||
                    h->ranges[k].end - h->ranges[k].begin >= h->grain);
        at = h->ranges[k].end;
      }
      assert_true(at == h->count);
    }
  free(h);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A body that splits its range again, with the same task, does its work
 * whichever thread runs the range (on a helper it was TARN_EMISUSE, and
 * the task failed). */
struct nested {
  tarn_task *task;
  struct visits *inner;
  atomic_int failures;
};

static int split_again(void *arg, size_t begin, size_t end) {
  struct nested *n = arg;
  nanosleep(&(struct timespec){0, 2000000}, NULL); /* a helper joins */
  for (size_t i = begin; i < end; i++) {
    int rc = tarn_task_parallel_for(n->task, 10, 1, visit, &n->inner[i]);
    if (rc != 0) atomic_fetch_add(&n->failures, 1);
  }
  return 0;
}

static int nested_task(tarn_task *task, void *arg) {
  struct nested *n = arg;
  n->task = task;
  return tarn_task_parallel_for(task, 8, 1, split_again, n);
}

static void a_body_may_split_again(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (int round = 0; round < 5; round++) {
    struct visits inner[8];
    for (int i = 0; i < 8; i++) visits_init(&inner[i], 10, 1);
    struct nested n = {.inner = inner};
    atomic_init(&n.failures, 0);
    tarn_region *region;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, nested_task, TARN_ARG(&n)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    assert_int_equal(atomic_load(&n.failures), 0);
    for (int i = 0; i < 8; i++) {
      assert_each_once(&inner[i]);
      free(inner[i].seen);
    }
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A range is its task's code whichever thread runs it: beginning a region
 * there is TARN_EDEADLK, as in the task (on a helper it began a region on
 * that thread, left open). */
struct beginner {
  tarn_rt *rt;
  atomic_int refused, begun;
};

static int begin_in_a_range(void *arg, size_t begin, size_t end) {
  struct beginner *b = arg;
  nanosleep(&(struct timespec){0, 2000000}, NULL); /* a helper joins */
  for (size_t i = begin; i < end; i++) {
    tarn_region *r = NULL;
    int rc = tarn_region_begin(b->rt, &r);
    atomic_fetch_add(rc == TARN_EDEADLK ? &b->refused : &b->begun, 1);
  }
  return 0;
}

static int beginner_task(tarn_task *task, void *arg) {
  return tarn_task_parallel_for(task, 8, 1, begin_in_a_range, arg);
}

static void a_range_may_not_begin_a_region(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct beginner b = {.rt = rt};
  atomic_init(&b.refused, 0);
  atomic_init(&b.begun, 0);
  for (int round = 0; round < 5; round++) {
    tarn_region *region;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, beginner_task, TARN_ARG(&b)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  assert_int_equal(atomic_load(&b.begun), 0);
  assert_int_equal(atomic_load(&b.refused), 5 * 8);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- with a lead (tarn__task_parallel_for_lead) ---------------------- */

struct lead {
  struct visits *v;
  atomic_uint runs;
  int status;            /* what the lead returns */
  bool wait_ranges;      /* wait (1 s at most) for a range to run meanwhile */
  bool ranges_seen;      /* a range began while the lead ran */
  unsigned calls_at_end; /* ranges begun before the lead returned */
  unsigned owner_ranges; /* ranges the lead's thread ran before it */
  unsigned calls;        /* ranges in all */
  unsigned before;       /* ranges_here when the task called */
};

static int lead_fn(void *arg) {
  struct lead *l = arg;
  atomic_fetch_add(&l->runs, 1);
  l->owner_ranges = ranges_here - l->before;
  unsigned at_start = atomic_load(&l->v->calls);
  if (l->wait_ranges)
    for (int i = 0; i < 100000 && atomic_load(&l->v->calls) == at_start; i++)
      nanosleep(&(struct timespec){0, 10000}, NULL);
  l->calls_at_end = atomic_load(&l->v->calls);
  l->ranges_seen = l->calls_at_end > at_start;
  return l->status;
}

static int lead_task(tarn_task *task, void *arg) {
  struct lead *l = arg;
  l->before = ranges_here;
  l->v->result = tarn__task_parallel_for_lead(task, l->v->count, l->v->grain,
                                              visit, l->v, lead_fn, l);
  return 0;
}

/* Runs one task that shares `count` indices by `grain` with the lead `l`
 * (whose fields but v are set; a body fails at `fail_at`, SIZE_MAX for
 * none) and checks what every call must do: the lead ran once and every
 * index once. Returns tarn__task_parallel_for_lead's status. */
static int run_lead(tarn_rt *rt, struct lead *l, size_t count, size_t grain,
                    size_t fail_at) {
  struct visits v;
  visits_init(&v, count, grain);
  v.fail_at = fail_at;
  l->v = &v;
  tarn_region *region;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, lead_task, TARN_ARG(l)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(atomic_load(&l->runs), 1);
  assert_each_once(&v);
  l->calls = atomic_load(&v.calls);
  l->v = NULL;
  free(v.seen);
  return v.result;
}

static void lead_once_beside_every_index(void **state) {
  (void)state;
  static const size_t counts[] = {0, 1, 7, 1000, 100003};
  static const size_t grains[] = {1, 64};
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
      for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
        struct lead l = {0};
        assert_int_equal(run_lead(rt, &l, counts[c], grains[g], SIZE_MAX), 0);
      }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The ranges are offered before the lead runs, and the lead's thread runs
 * none before it: with an idle worker, one of them runs while the lead
 * waits. Whether a worker is idle at that moment is up to the scheduler,
 * so one of up to 200 tries is enough (as many as a slow, busy machine may
 * need; the first usually does). */
static void ranges_run_while_the_lead_runs(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  bool seen = false;
  for (int round = 0; round < 200 && !seen; round++) {
    struct lead l = {.wait_ranges = true};
    assert_int_equal(run_lead(rt, &l, 4096, 16, SIZE_MAX), 0);
    assert_int_equal(l.owner_ranges, 0); /* the lead comes first there */
    seen = l.ranges_seen;
  }
  assert_true(seen);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* With too little work to share (fewer than two grains), the lead comes
 * first, then the whole range in one call. */
static void unshared_the_lead_comes_first(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct lead l = {0};
  assert_int_equal(run_lead(rt, &l, 1000, 600, SIZE_MAX), 0);
  assert_int_equal(l.calls_at_end, 0);
  assert_int_equal(l.calls, 1);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The lead's failure is returned before a body's; either way every range
 * runs. */
static void lead_failure_returned_ranges_run(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (int round = 0; round < 20; round++) {
    size_t fail_at = (size_t)round * 97 % 4096;
    struct lead l = {.status = TARN_ENOMEM};
    assert_int_equal(
        run_lead(rt, &l, 4096, 16, round % 2 == 1 ? fail_at : SIZE_MAX),
        TARN_ENOMEM);
    l = (struct lead){0};
    assert_int_equal(run_lead(rt, &l, 4096, 16, fail_at), TARN_EIO);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- tarn__task_alone --------------------------------------------------- */

/* Two tasks that wait (5 s at most) until both run, then ask `ask`
 * (tarn__task_alone or tarn__task_last), then wait until both asked: both
 * run while each asks. */
struct pair_meet {
  bool (*ask)(tarn_task *task);
  atomic_int arrived;
  atomic_int met;
  bool answer[2];
};

/* Waits (5 s at most) until *count reaches 2. */
static bool both(atomic_int *count) {
  for (int i = 0; i < 500000 && atomic_load(count) < 2; i++)
    nanosleep(&(struct timespec){0, 10000}, NULL);
  return atomic_load(count) >= 2;
}

struct pair_arg {
  struct pair_meet *m;
  int index;
};

static int meet_task(tarn_task *task, void *arg) {
  const struct pair_arg *p = arg;
  atomic_fetch_add(&p->m->arrived, 1);
  if (both(&p->m->arrived)) {
    p->m->answer[p->index] = p->m->ask(task);
    atomic_fetch_add(&p->m->met, 1);
    both(&p->m->met);
  }
  return 0;
}

/* Two tasks of one region that run at once (five tries) both answer
 * false to `ask`. */
static void side_by_side_answer_false(tarn_rt *rt,
                                      bool (*ask)(tarn_task *task)) {
  bool met = false;
  for (int round = 0; round < 5 && !met; round++) {
    struct pair_meet m = {.ask = ask};
    struct pair_arg args[2] = {{&m, 0}, {&m, 1}};
    tarn_region *region;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int k = 0; k < 2; k++)
      assert_int_equal(tarn_submit(rt, meet_task, TARN_ARG(&args[k])), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    met = atomic_load(&m.met) == 2;
    if (met) {
      assert_false(m.answer[0]);
      assert_false(m.answer[1]);
    }
  }
  assert_true(met);
}

/* Two tasks running at once are not alone. */
static void tasks_side_by_side_are_not_alone(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  side_by_side_answer_false(rt, tarn__task_alone);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Runs `fn` with `arg` as the only task of a region, waited for. */
static void one_task_region(tarn_rt *rt, tarn_task_fn fn, void *arg) {
  tarn_region *region;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, fn, TARN_ARG(arg)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
}

struct lone_run {
  pthread_t waiter;
  bool on_waiter, alone;
};

static int lone_task(tarn_task *task, void *arg) {
  struct lone_run *r = arg;
  r->on_waiter = pthread_equal(pthread_self(), r->waiter);
  r->alone = tarn__task_alone(task);
  return 0;
}

/* A runtime of `workers` pinned workers, whatever TARN_PIN_WORKERS says:
 * unpinned workers that fill the processors take a region's only task
 * themselves (lone_worthwhile in rt.c), so the tests of the waiter
 * running it pin theirs. */
static tarn_rt *pinned_rt(unsigned workers) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.pin_workers = 1;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

/* A region's only task, run by the thread that waits for it while the
 * workers have nothing to do, is alone (the waiter runs such a task
 * itself while such regions recently took under 50 us: one try is
 * enough, made again for up to 20 s). Outside a task, or for a task not
 * running on this thread, the answer is false. Pinned workers
 * (pinned_rt): with TARN_PIN_WORKERS=0 this test failed every time until
 * 2026-12-07 (the README says the suite passes under it). With 100 tries
 * the ThreadSanitizer build once saw none in a run of the whole suite
 * (its regions are slower, and another test ran beside it); with 2000,
 * the release build once saw none on a virtual machine whose hypervisor
 * took a large share of the CPU while another test ran beside it. */
static void a_waiter_running_its_only_task_is_alone(void **state) {
  (void)state;
  tarn_rt *rt = pinned_rt(2);
  bool seen = false;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  now = start;
  while (!seen && now.tv_sec - start.tv_sec < 20) {
    struct lone_run r = {.waiter = pthread_self()};
    one_task_region(rt, lone_task, &r);
    seen = r.on_waiter && r.alone;
    clock_gettime(CLOCK_MONOTONIC, &now);
  }
  assert_true(seen);
  assert_false(tarn__task_alone(NULL));
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- tarn__task_last ---------------------------------------------------- */

/* Asks tarn__task_last(task) until it answers true, for 5 s at most
 * (the region's waiter may not have begun to wait when the task starts);
 * returns the last answer. */
static bool becomes_last(tarn_task *task) {
  for (int i = 0; i < 500000; i++) {
    if (tarn__task_last(task)) return true;
    nanosleep(&(struct timespec){0, 10000}, NULL);
  }
  return false;
}

/* A task of a chain of two (the second reads what the first writes):
 * the first asks after 20 ms (its region then waited for) and records the
 * answer; the second asks until it is last. */
struct chain_run {
  bool first_last, second_last;
};

static int first_of_chain(tarn_task *task, void *arg) {
  struct chain_run *r = arg;
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  r->first_last = tarn__task_last(task);
  return 0;
}

static int second_of_chain(tarn_task *task, void *arg) {
  struct chain_run *r = arg;
  r->second_last = becomes_last(task);
  return 0;
}

static int only_task(tarn_task *task, void *arg) {
  *(bool *)arg = becomes_last(task);
  return 0;
}

static int ask_last(tarn_task *task, void *arg) {
  *(bool *)arg = tarn__task_last(task);
  return 0;
}

/* A waited region's only task is last; in a chain of two, the first is
 * not while the second waits for it, and the second is; two tasks
 * running side by side are not; nor is a task outside any region, nor
 * anything outside a task. */
static void a_waited_regions_last_task_is_last(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  bool only = false;
  one_task_region(rt, only_task, &only);
  assert_true(only);

  tarn_ref *x = NULL;
  assert_int_equal(tarn_ref_create(tarn_rt_pool(rt), 64, &x), 0);
  struct chain_run chain = {true, false};
  tarn_dep w = {x, TARN_WRITE}, r = {x, TARN_READ};
  tarn_region *region;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &(tarn_task_desc){.fn = first_of_chain,
                                                          .arg = &chain,
                                                          .deps = &w,
                                                          .ndeps = 1}),
                   0);
  assert_int_equal(tarn_task_submit(rt, &(tarn_task_desc){.fn = second_of_chain,
                                                          .arg = &chain,
                                                          .deps = &r,
                                                          .ndeps = 1}),
                   0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_false(chain.first_last);
  assert_true(chain.second_last);
  tarn_ref_release(x);

  side_by_side_answer_false(rt, tarn__task_last);

  assert_false(tarn__task_last(NULL));
  bool outside = true; /* submitted outside any region: destroy waits */
  assert_int_equal(tarn_submit(rt, ask_last, TARN_ARG(&outside)), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_false(outside);
}

/* Busy for `us` microseconds (a task's own work, no sleep). */
static void busy_for(double us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((double)(b.tv_sec - a.tv_sec) * 1e6 +
             (double)(b.tv_nsec - a.tv_nsec) / 1e3 <
         us);
}

/* A region's only task: busy LONG_TASK_US alone, or shared in ranges of
 * 5 us an index (LONG_SHARED_COUNT of them) with idle workers. */
#define LONG_TASK_US 150.0
#define LONG_SHARED_COUNT 64

struct long_run {
  pthread_t waiter;
  bool shared, on_waiter;
};

static int busy_range(void *arg, size_t begin, size_t end) {
  (void)arg;
  busy_for(5.0 * (double)(end - begin));
  return 0;
}

static int long_task(tarn_task *task, void *arg) {
  struct long_run *r = arg;
  r->on_waiter = pthread_equal(pthread_self(), r->waiter);
  if (!r->shared) {
    busy_for(LONG_TASK_US);
    return 0;
  }
  return tarn_task_parallel_for(task, LONG_SHARED_COUNT, 1, busy_range, NULL);
}

/* Of `count` regions of one long_task each, how many ran on the waiter. */
static int long_regions_on_waiter(tarn_rt *rt, bool shared, int count) {
  int on_waiter = 0;
  for (int i = 0; i < count; i++) {
    struct long_run r = {.waiter = pthread_self(), .shared = shared};
    one_task_region(rt, long_task, &r);
    on_waiter += r.on_waiter;
  }
  return on_waiter;
}

/* A region's only task that shares no work runs on the thread waiting for
 * the region while such regions take under 500 us, where one that shares
 * its work with idle workers goes to a worker once such regions take 50
 * us (rt.c, lone_worthwhile). After 40 regions of 150 us to settle the
 * runtime's running mean, the next 40: most on the waiter when serial
 * (before 2026-12-06 none: the hand-off to a worker and back cost 5 us of
 * the N=1024 triangular solve's 65), few when shared, in one of up to
 * five tries. */
static void a_waiter_runs_its_long_serial_task_itself(void **state) {
  (void)state;
  tarn_rt *rt = pinned_rt(2);
  /* A waiter that never ran a region's only task, however short (a
   * machine too loaded for it to come back within the 20 us a held task
   * waits): nothing to test there. Until 2026-12-07 this test took the
   * environment's pinning and so skipped under TARN_PIN_WORKERS=0. */
  bool short_on_waiter = false;
  for (int i = 0; i < 2000 && !short_on_waiter; i++) {
    struct lone_run r = {.waiter = pthread_self()};
    one_task_region(rt, lone_task, &r);
    short_on_waiter = r.on_waiter;
  }
  if (!short_on_waiter) {
    assert_int_equal(tarn_rt_destroy(rt), 0);
    skip();
  }
  /* Up to five tries, the most serial and fewest shared regions on the
   * waiter kept: where other processes load the processors (ctest -j2
   * under ThreadSanitizer), a waiter descheduled for more than the 20 us
   * a held task waits loses it to an idle worker (28 of 40 in one such
   * run, 2026-12-06). A runtime that never gives the waiter such a task,
   * or gives it shared ones, fails all five. */
  int serial = 0, shared = 40;
  for (int attempt = 0; attempt < 5 && (serial < 30 || shared > 10);
       attempt++) {
    (void)long_regions_on_waiter(rt, false, 40);
    int s = long_regions_on_waiter(rt, false, 40);
    (void)long_regions_on_waiter(rt, true, 40);
    int h = long_regions_on_waiter(rt, true, 40);
    serial = s > serial ? s : serial;
    shared = h < shared ? h : shared;
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_in_range(serial, 30, 40);
  assert_in_range(shared, 0, 10);
}

static int busy_50us(tarn_task *task, void *arg) {
  (void)task;
  (void)arg;
  busy_for(50.0);
  return 0;
}

/* Regions of two tasks of 50 us each on `rt` until its workers timed
 * their round trip (tarn__rt_round_trip_ns is no longer 0), for at most
 * `seconds`. Returns the round trip, or 0. */
static unsigned round_trip_after_work(tarn_rt *rt, double seconds) {
  struct timespec from, now;
  clock_gettime(CLOCK_MONOTONIC, &from);
  do {
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, busy_50us, TARN_ARG(NULL)), 0);
    assert_int_equal(tarn_submit(rt, busy_50us, TARN_ARG(NULL)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    if (tarn__rt_round_trip_ns(rt) != 0) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((double)(now.tv_sec - from.tv_sec) +
               (double)(now.tv_nsec - from.tv_nsec) / 1e9 <
           seconds);
  return tarn__rt_round_trip_ns(rt);
}

/* Two pinned workers on two processors time the round trip of a cache
 * line between them while they look for work (every 1 ms at most until
 * the first figure, which takes two timings), so within seconds of work
 * even beside other busy programs (ctest -j2 runs another test); an
 * unpinned runtime's, or one worker's, never do (their figure would say
 * nothing of where the work runs). A machine of one processor has
 * nothing to time. */
static void pinned_workers_time_their_round_trip(void **state) {
  (void)state;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 ||
      CPU_COUNT(&allowed) < 2)
    skip();
  tarn_rt *rt = pinned_rt(2);
  unsigned trip = round_trip_after_work(rt, 20.0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_true(trip > 0);

  rt = pinned_rt(1);
  assert_int_equal(round_trip_after_work(rt, 0.5), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.pin_workers = 0;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  assert_int_equal(round_trip_after_work(rt, 0.5), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int ask_far(tarn_task *task, void *arg) {
  *(bool *)arg = tarn__task_far(task);
  return 0;
}

/* tarn__rt_cores_far_set decides what tarn__task_far answers, whatever
 * the round trips say, until set back to them; NULL is never far. */
static void cores_far_apart_when_set(void **state) {
  (void)state;
  tarn_rt *rt = pinned_rt(2);
  for (int far = 1; far >= 0; far--) {
    tarn__rt_cores_far_set(rt, far);
    for (int i = 0; i < 4; i++) { /* on the waiter and on workers */
      bool answer = !far;
      tarn_region *region = NULL;
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      assert_int_equal(tarn_submit(rt, ask_far, TARN_ARG(&answer)), 0);
      if (i % 2 == 1) /* two tasks: a worker's */
        assert_int_equal(tarn_submit(rt, busy_50us, TARN_ARG(NULL)), 0);
      assert_int_equal(tarn_region_wait(region, NULL), 0);
      assert_int_equal(answer, far == 1);
    }
  }
  tarn__rt_cores_far_set(rt, -1);
  assert_false(tarn__task_far(NULL));
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_index_once),
      cmocka_unit_test(small_range_is_one_call),
      cmocka_unit_test(failure_returned_others_run),
      cmocka_unit_test(many_tasks_share),
      cmocka_unit_test(bad_calls_refused),
      cmocka_unit_test(counts_near_size_max_are_covered),
      cmocka_unit_test(a_body_may_split_again),
      cmocka_unit_test(a_range_may_not_begin_a_region),
      cmocka_unit_test(lead_once_beside_every_index),
      cmocka_unit_test(ranges_run_while_the_lead_runs),
      cmocka_unit_test(unshared_the_lead_comes_first),
      cmocka_unit_test(lead_failure_returned_ranges_run),
      cmocka_unit_test(tasks_side_by_side_are_not_alone),
      cmocka_unit_test(a_waiter_running_its_only_task_is_alone),
      cmocka_unit_test(a_waiter_runs_its_long_serial_task_itself),
      cmocka_unit_test(a_waited_regions_last_task_is_last),
      cmocka_unit_test(pinned_workers_time_their_round_trip),
      cmocka_unit_test(cores_far_apart_when_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
