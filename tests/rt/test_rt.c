/* test_rt.c: the runtime as a user sees it: results equal to running the
 * tasks one after another on random graphs, failures cancelling exactly
 * the tasks that read their data (also on random graphs, against a
 * sequential model), nested submission, regions, priorities, scratch,
 * backpressure under a memory limit, eager freeing of temporaries, and bad
 * input refused, a destroyed runtime included (free is wrapped at link
 * time, dead_handles.h). */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dead_handles.h"
#include "environ.h"
#include "prim/prim.h"
#include "procfs.h"
#include "rt/rt_internal.h"
#include "tarn.h"

#define MiB ((size_t)1 << 20)

static tarn_rt *rt_with(const tarn_rt_options *o) {
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(o, &rt), 0);
  return rt;
}

static tarn_rt *make_rt(unsigned workers, size_t limit, int eager) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.pool.mem_limit = limit;
  o.eager_free = eager;
  return rt_with(&o);
}

/* A runtime whose regions hold at most `max_unfinished` unfinished tasks
 * (0: no bound). */
static tarn_rt *bounded_rt(unsigned workers, unsigned max_unfinished) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.max_unfinished = max_unfinished;
  return rt_with(&o);
}

/* A ref of `bytes` (at least 8) whose first word is v. */
static tarn_ref *sized_word_ref(tarn_rt *rt, uint64_t v, size_t bytes) {
  tarn_ref *r = NULL;
  assert_int_equal(tarn_ref_alloc(tarn_rt_pool(rt), bytes, 0, &r), 0);
  void *p = NULL;
  assert_int_equal(tarn_ref_pin(r, TARN_WRITE, 0, &p), 0);
  memcpy(p, &v, sizeof v);
  assert_int_equal(tarn_ref_unpin(r), 0);
  return r;
}

static tarn_ref *word_ref(tarn_rt *rt, uint64_t v) {
  return sized_word_ref(rt, v, sizeof v);
}

static uint64_t word_of(tarn_ref *r) {
  void *p = NULL;
  assert_int_equal(tarn_ref_pin(r, TARN_READ, 0, &p), 0);
  uint64_t v;
  memcpy(&v, p, sizeof v);
  assert_int_equal(tarn_ref_unpin(r), 0);
  return v;
}

/* ---- random graphs against the sequential order ------------------------- */

enum { graph_refs = 6, graph_tasks = 40, max_deps = 3 };

struct gtask {
  uint64_t id;
  size_t n;
  int which[max_deps];
  tarn_access mode[max_deps];
};

/* The values v[0..n) accessed with mode[0..n): h = id + every value read;
 * then every value read and written, x, becomes 3x + h, and every value
 * only written becomes h + i (a TARN_WRITE access does not see the old
 * bytes: under a memory limit they are not read back). A mode of 0 (an
 * ordering alone) neither reads nor writes. */
static void apply_modes(uint64_t id, size_t n, const tarn_access *mode,
                        uint64_t **v) {
  uint64_t h = id;
  for (size_t i = 0; i < n; i++)
    if (mode[i] & TARN_READ) h += *v[i];
  for (size_t i = 0; i < n; i++) {
    if (mode[i] == TARN_READ_WRITE)
      *v[i] = 3 * *v[i] + h;
    else if (mode[i] == TARN_WRITE)
      *v[i] = h + i;
  }
}

static void apply(const struct gtask *g, uint64_t **v) {
  apply_modes(g->id, g->n, g->mode, v);
}

static int graph_task(tarn_task *t, void *arg) {
  const struct gtask *g = arg;
  uint64_t *v[max_deps];
  for (size_t i = 0; i < g->n; i++) v[i] = tarn_task_data(t, i);
  apply(g, v);
  return 0;
}

static uint64_t rng(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* A random task `id`: 1 to max_deps distinct refs, each read, written or
 * both, drawn from *seed. */
static void random_gtask(struct gtask *t, uint64_t id, uint64_t *seed) {
  t->id = id;
  t->n = 1 + rng(seed) % max_deps;
  for (size_t i = 0; i < t->n; i++) {
    int w;
    bool again;
    do {
      w = (int)(rng(seed) % graph_refs);
      again = false;
      for (size_t j = 0; j < i; j++) again |= t->which[j] == w;
    } while (again);
    t->which[i] = w;
    t->mode[i] = (tarn_access)(1 + rng(seed) % 3);
  }
}

/* A graph's refs of `bytes` each, ref r holding r + 1 in its first word,
 * and the values expected of them. */
static void graph_refs_make(tarn_rt *rt, size_t bytes, uint64_t *expect,
                            tarn_ref **refs) {
  for (int r = 0; r < graph_refs; r++) {
    expect[r] = (uint64_t)r + 1;
    refs[r] = sized_word_ref(rt, expect[r], bytes);
  }
}

/* Checks the refs' values against the expected ones and releases them. */
static void graph_refs_check(const uint64_t *expect, tarn_ref **refs) {
  for (int r = 0; r < graph_refs; r++) {
    assert_int_equal(word_of(refs[r]), expect[r]);
    assert_int_equal(tarn_ref_release(refs[r]), 0);
  }
}

/* Submits fn(arg) with the n accesses refs[which[i]] in mode[i]. */
static void submit_drawn(tarn_rt *rt, tarn_task_fn fn, void *arg,
                         tarn_ref **refs, const int *which,
                         const tarn_access *mode, size_t n) {
  tarn_dep deps[512];
  assert_true(n <= 512);
  for (size_t i = 0; i < n; i++) deps[i] = (tarn_dep){refs[which[i]], mode[i]};
  tarn_task_desc d = {.fn = fn, .arg = arg, .deps = deps, .ndeps = n};
  assert_int_equal(tarn_task_submit(rt, &d), 0);
}

static void one_graph(tarn_rt *rt, size_t bytes, uint64_t seed) {
  struct gtask g[graph_tasks];
  uint64_t expect[graph_refs];
  tarn_ref *refs[graph_refs];
  graph_refs_make(rt, bytes, expect, refs);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int k = 0; k < graph_tasks; k++) {
    struct gtask *t = &g[k];
    random_gtask(t, seed * 1000 + (uint64_t)k, &seed);
    submit_drawn(rt, graph_task, t, refs, t->which, t->mode, t->n);
    uint64_t *v[max_deps];
    for (size_t i = 0; i < t->n; i++) v[i] = &expect[t->which[i]];
    apply(t, v); /* the sequential reference */
  }
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  graph_refs_check(expect, refs);
}

static void random_graphs_match_sequential_order(void **state) {
  (void)state;
  const unsigned workers[] = {1, 2, 4};
  for (size_t w = 0; w < 3; w++) {
    tarn_rt *rt = make_rt(workers[w], 0, 1);
    for (uint64_t seed = 1; seed <= 700; seed++)
      one_graph(rt, sizeof(uint64_t), seed);
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
    assert_int_equal(st.submitted, 700 * graph_tasks);
    assert_int_equal(st.run, 700 * graph_tasks);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The same under a memory limit that holds the data of one task of three
 * refs (refs of 64 KiB): tasks wait for memory, in line, and their refs
 * are spilled and read back, in every order the graphs allow. */
static void random_graphs_under_a_tight_limit_match_sequential_order(
    void **state) {
  (void)state;
  const unsigned workers[] = {1, 2, 4};
  const size_t bytes = 64 * 1024;
  for (size_t w = 0; w < 3; w++) {
    tarn_rt *rt = make_rt(workers[w], max_deps * bytes, 1);
    for (uint64_t seed = 1; seed <= 150; seed++) one_graph(rt, bytes, seed);
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
    assert_int_equal(st.run, 150 * graph_tasks);
    tarn_pool_stats ps;
    assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
    assert_true(ps.spills > 0 && ps.restores > 0);
    if (workers[w] > 1) assert_true(st.held_back > 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* ---- random graphs with failures ----------------------------------------- */

/* A task of a graph with failures: fails (writing nothing) when `fails`,
 * else as graph_task; records that it ran. */
struct ftask {
  struct gtask g;
  bool fails;
  atomic_bool ran;
};

static int failing_graph_task(tarn_task *t, void *arg) {
  struct ftask *f = arg;
  atomic_store(&f->ran, true);
  if (f->fails) return -5;
  return graph_task(t, &f->g);
}

/* Random graphs in which one task in five fails, against the sequential
 * model of failures: a ref is bad once a task that was to write it failed
 * or was cancelled, and good again once a task writes it; a task that
 * reads a bad ref is cancelled (never runs), whatever it waits for
 * otherwise. So a reader that failed cancels no later writer, and a task
 * that only writes a bad ref runs. Every task's fate, the refs' values and
 * the region's counts must be the model's. */
static void random_failures_cancel_exactly_the_readers_of_their_data(
    void **state) {
  (void)state;
  const unsigned workers[] = {1, 2, 4};
  static struct ftask f[graph_tasks];
  for (size_t w = 0; w < 3; w++) {
    tarn_rt *rt = make_rt(workers[w], 0, 1);
    for (uint64_t seed = 1; seed <= 300; seed++) {
      uint64_t x = seed * 7919 + w, expect[graph_refs];
      bool bad[graph_refs] = {false}, cancelled[graph_tasks];
      uint64_t nfailed = 0, ncancelled = 0;
      tarn_ref *refs[graph_refs];
      graph_refs_make(rt, sizeof(uint64_t), expect, refs);
      tarn_region *region = NULL;
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      for (int k = 0; k < graph_tasks; k++) {
        struct ftask *t = &f[k];
        random_gtask(&t->g, seed * 1000 + (uint64_t)k, &x);
        t->fails = rng(&x) % 5 == 0;
        atomic_init(&t->ran, false);
        tarn_dep deps[max_deps];
        for (size_t i = 0; i < t->g.n; i++)
          deps[i] = (tarn_dep){refs[t->g.which[i]], t->g.mode[i]};
        tarn_task_desc d = {
            .fn = failing_graph_task, .arg = t, .deps = deps, .ndeps = t->g.n};
        assert_int_equal(tarn_task_submit(rt, &d), 0);
        /* the model */
        cancelled[k] = false;
        for (size_t i = 0; i < t->g.n; i++)
          if ((t->g.mode[i] & TARN_READ) && bad[t->g.which[i]])
            cancelled[k] = true;
        bool fails = cancelled[k] || t->fails;
        ncancelled += cancelled[k];
        nfailed += !cancelled[k] && t->fails;
        if (!fails) {
          uint64_t *v[max_deps];
          for (size_t i = 0; i < t->g.n; i++) v[i] = &expect[t->g.which[i]];
          apply(&t->g, v);
        }
        for (size_t i = 0; i < t->g.n; i++)
          if (t->g.mode[i] & TARN_WRITE) bad[t->g.which[i]] = fails;
      }
      tarn_region_stats st;
      int rc = tarn_region_wait(region, &st);
      assert_int_equal(rc, nfailed + ncancelled > 0 ? -5 : 0);
      assert_int_equal(st.failed, nfailed);
      assert_int_equal(st.cancelled, ncancelled);
      for (int k = 0; k < graph_tasks; k++)
        assert_int_equal(atomic_load(&f[k].ran), !cancelled[k]);
      graph_refs_check(expect, refs);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Copies its ref's word to *arg. */
static int report_task(tarn_task *t, void *arg) {
  memcpy(arg, tarn_task_data(t, 0), sizeof(uint64_t));
  return 0;
}

/* A random graph whose refs the program releases while it runs: each
 * right after submitting its last task and a task that reports its final
 * value. The tasks keep every ref alive exactly as long as they need it
 * (a task that waits for a ref's writer holds the writer's reference when
 * the writer ends), so every value comes out right and, once the region
 * is done, no ref is left. */
static void one_released_graph(tarn_rt *rt, uint64_t seed) {
  struct gtask g[graph_tasks];
  uint64_t expect[graph_refs], got[graph_refs];
  tarn_ref *refs[graph_refs];
  int last[graph_refs];
  for (int r = 0; r < graph_refs; r++) {
    expect[r] = (uint64_t)r + 1;
    last[r] = -1;
  }
  for (int k = 0; k < graph_tasks; k++) {
    struct gtask *t = &g[k];
    random_gtask(t, seed * 1000 + (uint64_t)k, &seed);
    for (size_t i = 0; i < t->n; i++) last[t->which[i]] = k;
  }
  for (int r = 0; r < graph_refs; r++) refs[r] = word_ref(rt, expect[r]);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int r = 0; r < graph_refs; r++)
    if (last[r] < 0) { /* unused: report it now */
      assert_int_equal(
          tarn_submit(rt, report_task, TARN_ARG(&got[r]), TARN_R(refs[r])), 0);
      assert_int_equal(tarn_ref_release(refs[r]), 0);
    }
  for (int k = 0; k < graph_tasks; k++) {
    struct gtask *t = &g[k];
    tarn_dep deps[max_deps];
    uint64_t *v[max_deps];
    for (size_t i = 0; i < t->n; i++) {
      deps[i] = (tarn_dep){refs[t->which[i]], t->mode[i]};
      v[i] = &expect[t->which[i]];
    }
    tarn_task_desc d = {
        .fn = graph_task, .arg = t, .deps = deps, .ndeps = t->n};
    assert_int_equal(tarn_task_submit(rt, &d), 0);
    apply(t, v);
    for (size_t i = 0; i < t->n; i++) {
      int w = t->which[i];
      if (last[w] != k) continue;
      assert_int_equal(
          tarn_submit(rt, report_task, TARN_ARG(&got[w]), TARN_R(refs[w])), 0);
      assert_int_equal(tarn_ref_release(refs[w]), 0);
    }
  }
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  for (int r = 0; r < graph_refs; r++) assert_int_equal(got[r], expect[r]);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_int_equal(ps.live_refs, 0);
}

static void refs_released_mid_graph_live_as_long_as_their_tasks(void **state) {
  (void)state;
  const unsigned workers[] = {1, 2, 3};
  for (size_t w = 0; w < 3; w++)
    for (int eager = 0; eager <= 1; eager++) {
      tarn_rt *rt = make_rt(workers[w], 0, eager);
      for (uint64_t seed = 1; seed <= 300; seed++) one_released_graph(rt, seed);
      assert_int_equal(tarn_rt_destroy(rt), 0);
    }
}

/* ---- the waiting thread as a guest worker ------------------------------- */

struct guest_job {
  pthread_t waiter;
  atomic_int on_waiter; /* tasks that ran on the waiting thread */
  long spin_ns;         /* how long busy_task keeps its thread */
};

static int add_range(void *arg, size_t begin, size_t end) {
  _Atomic uint64_t *sum = arg;
  uint64_t s = 0;
  for (size_t i = begin; i < end; i++) s += i;
  atomic_fetch_add(sum, s);
  return 0;
}

/* x = 2x + (sum of 0..999, split across idle workers) + a scratch word. */
static int guest_task(tarn_task *t, void *arg) {
  struct guest_job *j = arg;
  if (pthread_equal(pthread_self(), j->waiter))
    atomic_fetch_add(&j->on_waiter, 1);
  uint64_t *scratch = NULL;
  int rc = tarn_task_scratch(t, sizeof *scratch, 8, (void **)&scratch);
  if (rc != 0) return rc;
  *scratch = 1;
  _Atomic uint64_t sum = 0;
  rc = tarn_task_parallel_for(t, 1000, 10, add_range, (void *)&sum);
  if (rc != 0) return rc;
  uint64_t *x = tarn_task_data(t, 0);
  *x = 2 * *x + atomic_load(&sum) + *scratch;
  return 0;
}

/* Many small regions: the thread in tarn_region_wait takes tasks queued
 * on idle workers and runs them with everything a worker gives a task
 * (data, scratch, sharing); results are the same whichever thread ran
 * what, and the statistics count every task once. */
static void tasks_run_right_on_the_waiting_thread(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  struct guest_job j = {.waiter = pthread_self()};
  atomic_init(&j.on_waiter, 0);
  enum { regions = 2000, per_region = 3 };
  tarn_ref *x[per_region];
  uint64_t expect[per_region];
  for (int i = 0; i < per_region; i++) {
    x[i] = word_ref(rt, (uint64_t)i);
    expect[i] = (uint64_t)i;
  }
  for (int r = 0; r < regions; r++) {
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < per_region; i++) {
      assert_int_equal(tarn_submit(rt, guest_task, TARN_ARG(&j), TARN_RW(x[i])),
                       0);
      expect[i] = 2 * expect[i] + 499500 + 1;
    }
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  for (int i = 0; i < per_region; i++) {
    assert_int_equal(word_of(x[i]), expect[i]);
    tarn_ref_release(x[i]);
  }
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  assert_int_equal(st.run, regions * per_region);
  print_message("%d of %d tasks ran on the waiting thread\n",
                atomic_load(&j.on_waiter), regions * per_region);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Sets the flag its argument points at. */
static int set_flag(tarn_task *t, void *arg) {
  (void)t;
  atomic_store((atomic_int *)arg, 1);
  return 0;
}

/* Whether *flag becomes set within ten seconds (polled, never waited). */
static bool flag_set_soon(atomic_int *flag) {
  struct timespec nap = {0, 100000};
  for (int i = 0; i < 100000 && atomic_load(flag) == 0; i++)
    nanosleep(&nap, NULL);
  return atomic_load(flag) != 0;
}

/* tarn_rt_stats' task_pinned_peak: under a limit, the most one task
 * pinned, each ref once in whole pages and a TARN_AFTER access not at
 * all; 0 without a limit. A task of refs of 5000 and 100 bytes (the first
 * given twice) and one of 20000 after: 3 pages, then 5. */
static void the_most_one_task_pinned_is_counted(void **state) {
  (void)state;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (int limited = 0; limited < 2; limited++) {
    tarn_rt *rt = make_rt(2, limited ? 64 * page : 0, 1);
    tarn_ref *a = sized_word_ref(rt, 1, 5000), *b = sized_word_ref(rt, 2, 100),
             *c = sized_word_ref(rt, 3, 20000);
    atomic_int ran = 0;
    tarn_dep first[4] = {
        {a, TARN_READ}, {b, TARN_WRITE}, {a, TARN_READ}, {c, TARN_AFTER}};
    tarn_task_desc d = {.fn = set_flag, .arg = &ran, .deps = first, .ndeps = 4};
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_task_submit(rt, &d), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
    size_t pages = (5000 + page - 1) / page + 1;
    assert_int_equal(st.task_pinned_peak, limited ? pages * page : 0);
    tarn_dep second[1] = {{c, TARN_READ}};
    d.deps = second;
    d.ndeps = 1;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_task_submit(rt, &d), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
    size_t most = (20000 + page - 1) / page;
    if (pages > most) most = pages;
    assert_int_equal(st.task_pinned_peak, limited ? most * page : 0);
    assert_int_equal(atomic_load(&ran), 1);
    tarn_ref *all[] = {a, b, c};
    for (size_t k = 0; k < 3; k++)
      assert_int_equal(tarn_ref_release(all[k]), 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* After many short regions of one task, whose task the waiting thread
 * runs itself, a region's only task still runs while the program does
 * something else and has not waited yet: with the workers looking for
 * work, and with the workers asleep. Each region's result is there once
 * it is waited. */
static void a_lone_task_runs_before_its_wait(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  struct guest_job j = {.waiter = pthread_self()};
  atomic_init(&j.on_waiter, 0);
  tarn_ref *x = word_ref(rt, 0);
  uint64_t expect = 0;
  for (int round = 0; round < 2; round++) {
    for (int r = 0; r < 200; r++) {
      tarn_region *region = NULL;
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      assert_int_equal(tarn_submit(rt, guest_task, TARN_ARG(&j), TARN_RW(x)),
                       0);
      expect = 2 * expect + 499500 + 1;
      assert_int_equal(tarn_region_wait(region, NULL), 0);
      assert_int_equal(word_of(x), expect);
    }
    if (round == 1) { /* the workers go to sleep after a millisecond */
      struct timespec idle = {0, 50000000};
      nanosleep(&idle, NULL);
    }
    atomic_int flag;
    atomic_init(&flag, 0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, set_flag, TARN_ARG(&flag)), 0);
    assert_true(flag_set_soon(&flag));
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  print_message("%d of 400 lone tasks ran on the waiting thread\n",
                atomic_load(&j.on_waiter));
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Counts the tasks that ran on the waiting thread; nothing else. */
static int count_on_waiter(tarn_task *t, void *arg) {
  (void)t;
  struct guest_job *j = arg;
  if (pthread_equal(pthread_self(), j->waiter))
    atomic_fetch_add(&j->on_waiter, 1);
  return 0;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One unpinned worker with a processor to spare: the waiting thread runs
 * its short regions' only tasks itself (and shares their work with the
 * worker), as it does with pinned workers, rather than spinning while the
 * worker computes alone (a region of one 256 x 256 radius-1 sum took 36
 * us that way, 18.5 with the waiting thread taking it). Asserted when the
 * regions are short, as the rule asks (a slow build's may not be). */
static void a_spare_processor_lets_the_waiter_run_lone_tasks(void **state) {
  (void)state;
  cpu_set_t allowed;
  assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) {
    skip();
    return;
  }
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 1;
  o.pin_workers = 0;
  tarn_rt *rt = rt_with(&o);
  struct guest_job j = {.waiter = pthread_self()};
  atomic_init(&j.on_waiter, 0);
  enum { warm = 200, regions = 2000 };
  static double took[regions];
  for (int r = 0; r < warm + regions; r++) {
    if (r == warm) atomic_store(&j.on_waiter, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, count_on_waiter, TARN_ARG(&j)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (r >= warm)
      took[r - warm] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
                       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3;
  }
  qsort(took, regions, sizeof *took, compare_doubles);
  int on_waiter = atomic_load(&j.on_waiter);
  print_message(
      "%d of %d lone tasks ran on the waiting thread (median "
      "region %.1f us)\n",
      on_waiter, regions, took[regions / 2]);
  if (took[regions / 2] < 20.0) assert_true(on_waiter >= regions / 2);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

struct lone_submitter {
  tarn_rt *rt;
  tarn_ref *x;
  uint64_t got;
};

/* 500 regions of one task, each waited. */
static void *lone_regions(void *arg) {
  struct lone_submitter *s = arg;
  struct guest_job j = {.waiter = pthread_self()};
  atomic_init(&j.on_waiter, 0);
  for (int r = 0; r < 500; r++) {
    tarn_region *region = NULL;
    if (tarn_region_begin(s->rt, &region) != 0) return NULL;
    int rc = tarn_submit(s->rt, guest_task, TARN_ARG(&j), TARN_RW(s->x));
    if (tarn_region_wait(region, NULL) != 0 || rc != 0) return NULL;
  }
  s->got = word_of(s->x);
  return NULL;
}

/* Three program threads, each with regions of one task on its own data:
 * a task held for its waiter may be run by another thread's wait or by a
 * worker, and each still runs once, in its order. */
static void lone_tasks_of_many_threads_run_once_each(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  enum { threads = 3 };
  struct lone_submitter s[threads];
  pthread_t th[threads];
  for (int i = 0; i < threads; i++) {
    s[i] = (struct lone_submitter){.rt = rt, .x = word_ref(rt, 0)};
    assert_int_equal(pthread_create(&th[i], NULL, lone_regions, &s[i]), 0);
  }
  uint64_t expect = 0;
  for (int r = 0; r < 500; r++) expect = 2 * expect + 499500 + 1;
  for (int i = 0; i < threads; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(s[i].got, expect);
    tarn_ref_release(s[i].x);
  }
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  assert_int_equal(st.run, threads * 500);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Adds the word its ref holds to the counter in `arg`. */
static int read_word(tarn_task *t, void *arg) {
  uint64_t v;
  memcpy(&v, tarn_task_data(t, 0), sizeof v);
  atomic_fetch_add((_Atomic uint64_t *)arg, v);
  return 0;
}

/* Doubles the word its ref holds. */
static int double_word(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t *x = tarn_task_data(t, 0);
  *x *= 2;
  return 0;
}

/* A ref read again and again and never written does not keep the tasks
 * that read it: 20000 regions of one reader each leave the heap as it was
 * (the old code kept every reader until the ref's next writer, 35 MB for
 * 100000 gemv regions on one matrix, and that writer took 26 ms to walk
 * them). Every reader sees the value, and the writer that comes last
 * still waits for the readers. */
static void a_ref_read_again_and_again_keeps_no_tasks(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 3);
  _Atomic uint64_t sum = 0;
  enum { regions = 20000 };
  size_t before = 0;
  for (int r = 0; r < regions; r++) {
    if (r == 100) before = mallinfo2().uordblks; /* spare tasks made */
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(
        tarn_submit(rt, read_word, TARN_ARG((void *)&sum), TARN_R(x)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  size_t after = mallinfo2().uordblks;
  print_message("  heap in use after %d readers: %+ld bytes\n", regions,
                (long)after - (long)before);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(after < before + (1u << 20)); /* the old code: 6 MB more */
#endif
  assert_int_equal(atomic_load(&sum), 3u * regions);
  /* Readers in flight, then a writer: it runs after every one of them
   * (none of them reads 6). */
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < 100; i++)
    assert_int_equal(
        tarn_submit(rt, read_word, TARN_ARG((void *)&sum), TARN_R(x)), 0);
  assert_int_equal(tarn_submit(rt, double_word, TARN_RW(x)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(atomic_load(&sum), 3u * (regions + 100));
  assert_int_equal(word_of(x), 6);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Keeps its thread busy for j->spin_ns of the clock, counting the runs on
 * the waiting thread. */
static int busy_task(tarn_task *t, void *arg) {
  (void)t;
  struct guest_job *j = arg;
  if (pthread_equal(pthread_self(), j->waiter))
    atomic_fetch_add(&j->on_waiter, 1);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) <
         j->spin_ns);
  return 0;
}

/* With as many workers as cores: a region of `warm` busy tasks of spin_ns
 * each, then `regions` regions of per_region of them, begun with the
 * workers idle. Checks every task ran once; returns how many of the later
 * regions' tasks ran on the waiting thread. */
static int busy_regions_on_waiter(long spin_ns, int warm, int regions,
                                  int per_region) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  assert_true(cores > 0);
  tarn_rt *rt = make_rt((unsigned)cores, 0, 1);
  struct guest_job j = {.waiter = pthread_self(), .spin_ns = spin_ns};
  atomic_init(&j.on_waiter, 0);
  for (int r = 0; r <= regions; r++) {
    if (r == 1) atomic_store(&j.on_waiter, 0); /* the first warms up */
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < (r == 0 ? warm : per_region); i++)
      assert_int_equal(tarn_submit(rt, busy_task, TARN_ARG(&j)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  assert_int_equal(st.run, (uint64_t)(warm + regions * per_region));
  assert_int_equal(tarn_rt_destroy(rt), 0);
  return atomic_load(&j.on_waiter);
}

/* With as many workers as cores, the waiting thread leaves long tasks to
 * the workers: it would run as one thread more than there are cores. Once
 * the workers have run a few tasks of 10 ms, a region of them runs none on
 * the waiting thread, and every task runs once. */
static void long_tasks_stay_off_the_waiting_thread(void **state) {
  (void)state;
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  assert_int_equal(busy_regions_on_waiter(10000000L, 12 * cores, 1, 4 * cores),
                   0);
}

/* Tasks of 0.2 ms are long too (above the 50 us the waiting thread takes
 * beside busy workers), though a task seldom spans a tick of the kernel's
 * coarse clock: the workers time them with the precise one. Once each
 * worker has run a few dozen, small regions of them, each begun with the
 * workers idle, run none on the waiting thread (with the coarse clock's
 * mean, 20 to 26 of these 200 tasks did). */
static void fifth_of_a_millisecond_tasks_stay_off_the_waiting_thread(
    void **state) {
  (void)state;
  int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  assert_int_equal(busy_regions_on_waiter(200000L, 100 * cores, 50, 2 * cores),
                   0);
}

/* ---- workers and processors ---------------------------------------------- */

enum { max_pinned = 64 };

/* Tasks that each hold a worker until all have started, so that each
 * runs on a worker of its own; each records its thread's affinity mask. */
struct rendezvous {
  atomic_int arrived, done;
  int expected;
  cpu_set_t masks[max_pinned];
};

static int rendezvous_task(tarn_task *t, void *arg) {
  (void)t;
  struct rendezvous *r = arg;
  int me = atomic_fetch_add(&r->arrived, 1);
  if (me >= max_pinned) return -1;
  if (pthread_getaffinity_np(pthread_self(), sizeof r->masks[me],
                             &r->masks[me]) != 0)
    return -1;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do { /* at most 10 s: a worker that never comes fails the test below */
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (atomic_load(&r->arrived) < r->expected &&
           now.tv_sec - start.tv_sec < 10);
  atomic_fetch_add(&r->done, 1);
  return 0;
}

/* The affinity masks of every worker of a runtime made with `o` (the
 * program's thread waits without running tasks). */
static void worker_masks(const tarn_rt_options *o, struct rendezvous *r) {
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(o, &rt), 0);
  memset(r, 0, sizeof *r);
  r->expected = (int)o->workers;
  for (unsigned i = 0; i < o->workers; i++)
    assert_int_equal(tarn_submit(rt, rendezvous_task, TARN_ARG(r)), 0);
  while (atomic_load(&r->done) < r->expected) sched_yield();
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(atomic_load(&r->arrived), r->expected);
}

/* By default worker i runs on the i-th processor the program may use, one
 * each; with pin_workers 0 (or TARN_PIN_WORKERS=0) they may run on all of
 * them. A program narrowed to one processor (as by taskset) gets one
 * worker by default, pinned there. */
static void workers_are_pinned_one_per_processor(void **state) {
  (void)state;
  cpu_set_t allowed;
  assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int ncpu = CPU_COUNT(&allowed);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  /* One per processor, pinned; a CPU quota below them (test_cgroup)
   * makes them fewer, unpinned. */
  unsigned cpus = tarn__cpu_count();
  assert_int_equal(o.workers, cpus);
  assert_int_equal(o.pin_workers, cpus >= (unsigned)ncpu);
  o.pin_workers = 1;
  o.workers = ncpu < 4 ? (unsigned)ncpu : 4;
  static struct rendezvous r;
  worker_masks(&o, &r);
  cpu_set_t seen;
  CPU_ZERO(&seen);
  for (int i = 0; i < r.expected; i++) {
    assert_int_equal(CPU_COUNT(&r.masks[i]), 1);
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &r.masks[i])) {
        assert_true(CPU_ISSET(c, &allowed));
        assert_false(CPU_ISSET(c, &seen)); /* one worker per processor */
        CPU_SET(c, &seen);
      }
  }
  o.pin_workers = 0;
  worker_masks(&o, &r);
  for (int i = 0; i < r.expected; i++)
    assert_true(CPU_EQUAL(&r.masks[i], &allowed));

  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed)) last = c;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(last, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(o.workers, 1);
  worker_masks(&o, &r);
  assert_true(CPU_EQUAL(&r.masks[0], &one));
  assert_int_equal(sched_setaffinity(0, sizeof allowed, &allowed), 0);

  setenv("TARN_PIN_WORKERS", "0", 1);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(o.pin_workers, 0);
  setenv("TARN_PIN_WORKERS", "2", 1);
  assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
  setenv("TARN_PIN_WORKERS", "1x", 1);
  assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
  unsetenv("TARN_PIN_WORKERS");
}

/* Checks a count read from the environment variable `name` into the
 * field that `field` reads: "0" and `good` are taken, each of `bad` is
 * refused with TARN_EINVAL, and unset or empty it is `fallback`. */
static void count_comes_from_the_environment(
    const char *name, unsigned (*field)(const tarn_rt_options *),
    const char *good, unsigned fallback, const char *const *bad, size_t nbad) {
  tarn_rt_options o;
  setenv(name, "0", 1);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(field(&o), 0);
  setenv(name, good, 1);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(field(&o), strtoul(good, NULL, 10));
  for (size_t i = 0; i < nbad; i++) {
    setenv(name, bad[i], 1);
    assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
  }
  setenv(name, "", 1);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(field(&o), fallback);
  unsetenv(name);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(field(&o), fallback);
}

static unsigned idle_trim_ms_of(const tarn_rt_options *o) {
  return o->idle_trim_ms;
}

/* TARN_IDLE_TRIM_MS sets idle_trim_ms: a number of milliseconds up to a
 * day; anything else is refused with TARN_EINVAL. */
static void idle_trim_ms_comes_from_the_environment(void **state) {
  (void)state;
  const char *bad[] = {"-1", " 5", "5ms", "86400001", "99999999999999999999"};
  count_comes_from_the_environment("TARN_IDLE_TRIM_MS", idle_trim_ms_of, "250",
                                   20, bad, sizeof bad / sizeof *bad);
}

static unsigned max_unfinished_of(const tarn_rt_options *o) {
  return o->max_unfinished;
}

/* TARN_MAX_UNFINISHED sets max_unfinished (default 0, no bound). */
static void max_unfinished_comes_from_the_environment(void **state) {
  (void)state;
  const char *bad[] = {"-1", "+5", "5 ", "lots", "99999999999999999999"};
  count_comes_from_the_environment("TARN_MAX_UNFINISHED", max_unfinished_of,
                                   "1000000", 0, bad, sizeof bad / sizeof *bad);
}

static unsigned work_tile_of(const tarn_rt_options *o) { return o->work_tile; }

/* TARN_WORK_TILE sets work_tile (default 256; 0 turns the copies off):
 * up to 4096; a runtime refuses a larger one given in its options. */
static void work_tile_comes_from_the_environment(void **state) {
  (void)state;
  const char *bad[] = {"-1", "4097", "256 ", "big", "99999999999999999999"};
  count_comes_from_the_environment("TARN_WORK_TILE", work_tile_of, "4096", 256,
                                   bad, sizeof bad / sizeof *bad);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.work_tile = 4097;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), TARN_EINVAL);
  assert_null(rt);
  o.work_tile = 4096;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* tarn_env_check passes unset, empty and valid variables, and names the
 * first one that is not valid, in rt.h's order; the options and a
 * runtime with default options then fail as it says. */
static void the_environment_check_names_a_bad_variable(void **state) {
  (void)state;
  enum { VARIABLES = 7 };
  static const char *const vars[VARIABLES] = {
      "TARN_MEM_LIMIT",   "TARN_HUGE_PAGES",   "TARN_WORKERS",
      "TARN_PIN_WORKERS", "TARN_IDLE_TRIM_MS", "TARN_MAX_UNFINISHED",
      "TARN_WORK_TILE"};
  static const char *const good[VARIABLES] = {"64M", "0",    "3", "0",
                                              "250", "1000", "64"};
  static const char *const bad[VARIABLES] = {"lots", "yes", "0",   "2",
                                             "-1",   "1e3", "5000"};
  char *saved[VARIABLES];
  test_env_save(vars, VARIABLES, saved);
  const char *name = "untouched";
  assert_int_equal(tarn_env_check(&name), 0);
  assert_null(name);
  assert_int_equal(tarn_env_check(NULL), 0);
  for (size_t i = 0; i < VARIABLES; i++) setenv(vars[i], "", 1);
  assert_int_equal(tarn_env_check(&name), 0);
  for (size_t i = 0; i < VARIABLES; i++) setenv(vars[i], good[i], 1);
  assert_int_equal(tarn_env_check(&name), 0);
  assert_null(name);
  tarn_rt_options o;
  for (size_t i = 0; i < VARIABLES; i++) {
    setenv(vars[i], bad[i], 1);
    assert_int_equal(tarn_env_check(&name), TARN_EINVAL);
    assert_non_null(name);
    assert_string_equal(name, vars[i]);
    assert_int_equal(tarn_env_check(NULL), TARN_EINVAL);
    assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
    tarn_rt *rt = NULL;
    assert_int_equal(tarn_rt_create(NULL, &rt), TARN_EINVAL);
    assert_null(rt);
    setenv(vars[i], good[i], 1);
  }
  setenv(vars[4], bad[4], 1);
  setenv(vars[1], bad[1], 1);
  assert_int_equal(tarn_env_check(&name), TARN_EINVAL);
  assert_string_equal(name, vars[1]);
  /* A bad variable keeps its own default only. */
  assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
  assert_int_equal(o.pool.huge_pages, 1);
  assert_int_equal(o.idle_trim_ms, 20);
  assert_int_equal(o.pool.mem_limit, 64 * MiB);
  assert_int_equal(o.workers, 3);
  assert_int_equal(o.max_unfinished, 1000);
  assert_int_equal(o.work_tile, 64);
  test_env_restore(vars, VARIABLES, saved);
}

/* ---- failures and cancellation ------------------------------------------ */

static atomic_int ran_count;

static int fail_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  atomic_fetch_add(&ran_count, 1);
  return -42;
}

static int count_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  atomic_fetch_add(&ran_count, 1);
  return 0;
}

/* Adds 1 to its ref's word. */
static int child_task_rw(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t *v = tarn_task_data(t, 0);
  *v += 1;
  return 0;
}

/* Sets its ref's word to 0 without reading it. */
static int zero_task(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t zero = 0;
  memcpy(tarn_task_data(t, 0), &zero, sizeof zero);
  return 0;
}

static void a_failure_cancels_its_dependants_only(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 1), *y = word_ref(rt, 2), *z = word_ref(rt, 3);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, fail_task, TARN_W(x)), 0);
  assert_int_equal(tarn_submit(rt, count_task, TARN_R(x), TARN_W(y)), 0);
  assert_int_equal(tarn_submit(rt, count_task, TARN_R(y)), 0); /* transitive */
  assert_int_equal(tarn_submit(rt, count_task, TARN_RW(z)),
                   0); /* independent */
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), -42);
  assert_int_equal(atomic_load(&ran_count), 2);
  assert_int_equal(st.submitted, 4);
  assert_int_equal(st.failed, 1);
  assert_int_equal(st.cancelled, 2);
  assert_int_equal(word_of(y), 2); /* the cancelled writer never ran */
  tarn_ref_release(x);
  tarn_ref_release(y);
  tarn_ref_release(z);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A ref only read by a failed task can be written afterwards, in the
 * same region or a later one; what the failed task was to write cannot be
 * read until a task writes it without reading it. */
static void a_failed_reader_leaves_its_inputs_writable(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 1), *y = word_ref(rt, 2);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, fail_task, TARN_R(x), TARN_W(y)), 0);
  assert_int_equal(tarn_submit(rt, child_task_rw, TARN_RW(x)), 0);
  assert_int_equal(tarn_submit(rt, count_task, TARN_R(y)), 0); /* cancelled */
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), -42);
  assert_int_equal(st.failed, 1);
  assert_int_equal(st.cancelled, 1);
  assert_int_equal(word_of(x), 2);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, child_task_rw, TARN_RW(x)), 0);
  assert_int_equal(tarn_submit(rt, count_task, TARN_RW(y)), 0); /* cancelled */
  assert_int_equal(tarn_region_wait(region, NULL), TARN_ECANCELED);
  assert_int_equal(word_of(x), 3);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, zero_task, TARN_W(y)), 0); /* heals y */
  assert_int_equal(tarn_submit(rt, child_task_rw, TARN_RW(y)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(word_of(y), 1);
  assert_int_equal(atomic_load(&ran_count), 1); /* the failed task */
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static atomic_int freed_args;

static void count_free(void *arg) {
  (void)arg;
  atomic_fetch_add(&freed_args, 1);
}

static void task_args_are_freed_whatever_happens(void **state) {
  (void)state;
  atomic_store(&freed_args, 0);
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 1);
  tarn_dep w = {x, TARN_WRITE}, r = {x, TARN_READ}, bad = {NULL, TARN_READ};
  tarn_task_desc ran = {
      .fn = count_task, .deps = &r, .ndeps = 1, .arg_free = count_free};
  tarn_task_desc fails = {
      .fn = fail_task, .deps = &w, .ndeps = 1, .arg_free = count_free};
  tarn_task_desc refused = {
      .fn = count_task, .deps = &bad, .ndeps = 1, .arg_free = count_free};
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &ran), 0);
  assert_int_equal(tarn_task_submit(rt, &fails), 0);
  assert_int_equal(tarn_task_submit(rt, &ran), 0); /* cancelled */
  assert_int_equal(tarn_task_submit(rt, &refused), TARN_EINVAL);
  assert_int_equal(tarn_region_wait(region, NULL), -42);
  assert_int_equal(atomic_load(&freed_args), 4);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- nesting, regions, waiting from a task ------------------------------ */

static int child_task(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t *v = tarn_task_data(t, 0);
  *v += 1;
  return 0;
}

static int parent_task(tarn_task *t, void *arg) {
  tarn_ref **refs = arg;
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 10; k++)
      if (tarn_submit(tarn_task_rt(t), child_task, TARN_RW(refs[i])) != 0)
        return -1;
  tarn_region *r = NULL;
  if (tarn_region_begin(tarn_task_rt(t), &r) != TARN_EDEADLK) return -2;
  return 0;
}

/* Runs `parent` on nrefs (at most 8) new words in a region of `rt`, checks
 * that each word ends at `each`, and returns the region's figures. */
static tarn_region_stats run_parent(tarn_rt *rt, tarn_task_fn parent, int nrefs,
                                    uint64_t each) {
  tarn_ref *refs[8];
  for (int i = 0; i < nrefs; i++) refs[i] = word_ref(rt, 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, parent, TARN_ARG(refs)), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), 0);
  for (int i = 0; i < nrefs; i++) {
    assert_int_equal(word_of(refs[i]), each);
    tarn_ref_release(refs[i]);
  }
  return st;
}

static void tasks_submit_tasks_into_their_region(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_region_stats st = run_parent(rt, parent_task, 8, 10);
  assert_int_equal(st.submitted, 81);
  assert_int_equal(st.run, 81);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int wait_inside(tarn_task *t, void *arg) {
  tarn_region *outer = arg;
  (void)t;
  return tarn_region_wait(outer, NULL) == TARN_EDEADLK ? 0 : -1;
}

static void waiting_from_a_task_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_region *region = NULL, *inner = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, wait_inside, TARN_ARG(region)), 0);
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  assert_int_equal(tarn_region_wait(region, NULL),
                   TARN_EMISUSE); /* inner first */
  assert_int_equal(tarn_region_wait(inner, NULL), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int slow_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  struct timespec ts = {0, 200000};
  nanosleep(&ts, NULL);
  atomic_fetch_add(&ran_count, 1);
  return 0;
}

static void destroy_waits_for_work_in_flight(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 0);
  for (int i = 0; i < 200; i++)
    assert_int_equal(tarn_submit(rt, slow_task, i % 2 ? TARN_R(x) : TARN_W(x)),
                     0);
  tarn_ref_release(x); /* the tasks keep it alive */
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(atomic_load(&ran_count), 200);
}

/* Regions never waited for: tarn_rt_destroy runs their tasks to the end
 * and frees them (ASan checks nothing leaks). Their errors stay theirs: a
 * failed task in such a region is not destroy's error. */
static int failing_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return TARN_EIO;
}

static void destroy_drains_regions_never_waited(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  /* A region of another runtime encloses them, on the same thread. */
  tarn_rt *other = make_rt(1, 0, 1);
  tarn_ref *z = word_ref(other, 0);
  tarn_region *enclosing = NULL;
  assert_int_equal(tarn_region_begin(other, &enclosing), 0);
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 0), *y = word_ref(rt, 0);
  tarn_region *outer = NULL, *inner = NULL;
  assert_int_equal(tarn_region_begin(rt, &outer), 0);
  for (int i = 0; i < 50; i++)
    assert_int_equal(tarn_submit(rt, slow_task, TARN_RW(x)), 0);
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  assert_int_equal(tarn_submit(rt, failing_task, TARN_W(y)), 0);
  for (int i = 0; i < 50; i++)
    assert_int_equal(tarn_submit(rt, slow_task, TARN_R(x)), 0);
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(atomic_load(&ran_count), 100);
  /* This thread's regions are the other runtime's again: a task goes to
   * the enclosing region, which waits as the innermost. */
  assert_int_equal(tarn_submit(other, failing_task, TARN_W(z)), 0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(enclosing, &st), TARN_EIO);
  assert_int_equal(st.submitted, 1);
  tarn_ref_release(z);
  assert_int_equal(tarn_rt_destroy(other), 0);
}

/* A task of one runtime submitting to another: the child goes to the
 * other runtime's root, whichever thread runs the task. The waiting
 * program thread runs tasks too, and it has a region of the other
 * runtime open, cancelled: the child joined that region there and was
 * cancelled with it (ran 7 of 200 times, or none), where on a worker it
 * went to the root and ran. */
static tarn_rt *child_rt;

static int submit_to_child_rt(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return tarn_submit(child_rt, count_task, TARN_ARG(NULL));
}

static void a_task_submits_to_another_runtimes_root(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  tarn_rt *rt = make_rt(1, 0, 1);
  child_rt = make_rt(1, 0, 1);
  enum { rounds = 200 };
  for (int i = 0; i < rounds; i++) {
    tarn_region *given_up = NULL, *work = NULL;
    assert_int_equal(tarn_region_begin(child_rt, &given_up), 0);
    assert_int_equal(tarn_region_cancel(given_up), 0);
    assert_int_equal(tarn_region_begin(rt, &work), 0);
    assert_int_equal(tarn_submit(rt, submit_to_child_rt, TARN_ARG(NULL)), 0);
    assert_int_equal(tarn_region_wait(work, NULL), 0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(given_up, &st), 0);
    assert_int_equal(st.submitted, 0);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(child_rt), 0); /* waits for the root */
  assert_int_equal(atomic_load(&ran_count), rounds);
}

/* Calls of rt.h given `bad` where the runtime goes: each is refused
 * (TARN_EINVAL, NULL or 0), runs nothing, and still frees a task's
 * argument (arg_free) as a refused submission does. */
static void runtime_calls_refuse(tarn_rt *bad) {
  atomic_store(&ran_count, 0);
  atomic_store(&freed_args, 0);
  assert_null(tarn_rt_pool(bad));
  assert_int_equal(tarn_rt_workers(bad), 0);
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(bad, &st), TARN_EINVAL);
  tarn_region *region = (tarn_region *)&st; /* any non-NULL value */
  assert_int_equal(tarn_region_begin(bad, &region), TARN_EINVAL);
  assert_ptr_equal(region, (tarn_region *)&st);
  tarn_task_desc d = {.fn = count_task, .arg_free = count_free};
  assert_int_equal(tarn_task_submit(bad, &d), TARN_EINVAL);
  assert_int_equal(atomic_load(&freed_args), 1);
  assert_int_equal(tarn_submit(bad, count_task, TARN_NAME("refused")),
                   TARN_EINVAL);
  assert_int_equal(tarn_rt_destroy(bad), TARN_EINVAL);
  assert_int_equal(atomic_load(&ran_count), 0);
}

static void runtime_junk_refused(void *junk) {
  runtime_calls_refuse((tarn_rt *)junk);
}

/* A runtime already destroyed is refused by every call of rt.h, a second
 * tarn_rt_destroy included (it destroyed the pool again and freed the
 * struct twice), while its memory is not reused (dead_handles.h keeps it
 * from the heap); so is memory that never was a runtime, and its bytes
 * are left as they were. */
static void a_destroyed_runtime_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 7);
  tarn_ref_release(x);
  test_keep_when_freed(rt);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_true(test_was_freed());
  runtime_calls_refuse(rt);
  test_free_kept(rt);
  test_each_junk(runtime_junk_refused);
}

/* Adds one to x's word in a task of a region of its own, waits, and
 * returns the word: the runtime still runs tasks. */
static uint64_t add_one_and_wait(tarn_rt *rt, tarn_ref *x) {
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, child_task, TARN_RW(x)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  return word_of(x);
}

/* The runtime's pool is the runtime's to destroy: tarn_pool_destroy
 * refuses it, and the runtime and the pool go on. */
static void a_runtimes_pool_is_not_the_programs_to_destroy(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  assert_int_equal(tarn_pool_destroy(pool), TARN_EMISUSE);
  tarn_ref *x = word_ref(rt, 1);
  assert_int_equal(add_one_and_wait(rt, x), 2);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int destroy_own_runtime(tarn_task *t, void *arg) {
  int *rc = arg;
  *rc = tarn_rt_destroy(tarn_task_rt(t));
  return 0;
}

/* A task that destroys its own runtime would wait for itself: refused
 * with TARN_EDEADLK, and the runtime goes on. */
static void destroying_from_a_task_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 0);
  int rc = 0;
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, destroy_own_runtime, TARN_ARG(&rc)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(rc, TARN_EDEADLK);
  assert_int_equal(add_one_and_wait(rt, x), 1);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

struct submitter {
  tarn_rt *rt;
  tarn_ref *a, *b;
  int rc;
};

static int add_both(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t *x = tarn_task_data(t, 0), *y = tarn_task_data(t, 1);
  *x += 1;
  *y += 1;
  return 0;
}

static void *submit_many(void *arg) {
  struct submitter *s = arg;
  tarn_region *region = NULL;
  s->rc = tarn_region_begin(s->rt, &region);
  for (int i = 0; i < 2000 && s->rc == 0; i++)
    s->rc = tarn_submit(s->rt, add_both, TARN_RW(s->a), TARN_RW(s->b));
  int rc = tarn_region_wait(region, NULL);
  if (s->rc == 0) s->rc = rc;
  return NULL;
}

static void submitters_on_shared_refs_agree_on_an_order(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 0), *y = word_ref(rt, 0);
  /* The two threads name the refs in opposite orders. */
  struct submitter s1 = {rt, x, y, 0}, s2 = {rt, y, x, 0};
  pthread_t t1, t2;
  assert_int_equal(pthread_create(&t1, NULL, submit_many, &s1), 0);
  assert_int_equal(pthread_create(&t2, NULL, submit_many, &s2), 0);
  assert_int_equal(pthread_join(t1, NULL), 0);
  assert_int_equal(pthread_join(t2, NULL), 0);
  assert_int_equal(s1.rc, 0);
  assert_int_equal(s2.rc, 0);
  assert_int_equal(word_of(x), 4000);
  assert_int_equal(word_of(y), 4000);
  tarn_ref_release(x);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- priorities and scratch --------------------------------------------- */

static atomic_int gate, gate_started;
static int order[64];
static atomic_int next_slot;

static int gate_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  atomic_store(&gate_started, 1);
  while (!atomic_load(&gate)) sched_yield();
  return 0;
}

static int record_task(tarn_task *t, void *arg) {
  (void)t;
  order[atomic_fetch_add(&next_slot, 1)] = (int)(intptr_t)arg;
  return 0;
}

/* Queues tasks i = 0 .. n - 1 of priority[i] behind a gate that holds the
 * one worker of a new runtime, opens it and records in order[] the order
 * they ran in. The program's thread waits without a region until all ran:
 * a thread in tarn_region_wait or tarn_rt_destroy may run queued tasks
 * itself (as the guest), and two threads would record in no fixed order. */
static void run_behind_the_gate(const int *priority, int n) {
  atomic_store(&gate, 0);
  atomic_store(&gate_started, 0);
  atomic_store(&next_slot, 0);
  tarn_rt *rt = make_rt(1, 0, 1);
  assert_int_equal(
      tarn_submit(rt, gate_task, TARN_ARG(NULL), TARN_PRIORITY(100)), 0);
  struct timespec tick = {0, 100000};
  while (!atomic_load(&gate_started)) nanosleep(&tick, NULL);
  for (int i = 0; i < n; i++)
    assert_int_equal(tarn_submit(rt, record_task, TARN_ARG((intptr_t)i),
                                 TARN_PRIORITY(priority[i])),
                     0);
  atomic_store(&gate, 1);
  while (atomic_load(&next_slot) < n) nanosleep(&tick, NULL);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void higher_priorities_run_first(void **state) {
  (void)state;
  int priority[10];
  for (int p = 0; p < 10; p++) priority[p] = p;
  run_behind_the_gate(priority, 10);
  for (int i = 0; i < 10; i++) assert_int_equal(order[i], 9 - i);
}

/* Tasks of mixed priorities queued behind the gate run by priority, then
 * in submission order: the queue keeps the tasks pushed in that order in a
 * list and the others in a heap, and pops from whichever holds the
 * first. */
static void queued_tasks_run_by_priority_then_submission(void **state) {
  (void)state;
  enum { n = 64 };
  int priority[n];
  uint64_t rng = 12345;
  for (int i = 0; i < n; i++) {
    rng = rng * 6364136223846793005u + 1442695040888963407u;
    /* Mostly runs of one priority, now and then a higher or lower one. */
    priority[i] = (rng >> 60) < 10 ? 0 : (int)((rng >> 32) % 5) - 2;
  }
  run_behind_the_gate(priority, n);
  for (int k = 1; k < n; k++) {
    int a = order[k - 1], b = order[k];
    assert_true(priority[a] > priority[b] ||
                (priority[a] == priority[b] && a < b));
  }
}

static void *scratch_seen[2];

static int scratch_task(tarn_task *t, void *arg) {
  void *p = NULL;
  if (tarn_task_scratch(t, 1 << 20, 64, &p) != 0) return -1;
  memset(p, 1, 1 << 20);
  scratch_seen[(intptr_t)arg] = p;
  return tarn_task_scratch(t, (size_t)1 << 40, 64, &p) == TARN_ENOSPC ? 0 : -2;
}

static void scratch_is_reset_when_a_task_ends(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(1, 0, 1);
  tarn_ref *x = word_ref(rt, 0);
  assert_int_equal(tarn_submit(rt, scratch_task, TARN_ARG(0), TARN_W(x)), 0);
  assert_int_equal(tarn_submit(rt, scratch_task, TARN_ARG(1), TARN_W(x)), 0);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_non_null(scratch_seen[0]);
  assert_ptr_equal(scratch_seen[0], scratch_seen[1]);
}

static int needs_scratch(tarn_task *t, void *arg) {
  void *p = NULL;
  int rc = tarn_task_scratch(t, (size_t)(intptr_t)arg, 64, &p);
  if (rc == 0) memset(p, 1, (size_t)(intptr_t)arg);
  return rc;
}

/* A worker's scratch is whole again after every task, however many ran
 * before: with 64 KiB of scratch each, 20000 tasks, then tasks asking for
 * 60 KiB each get it. (The old code kept a 16-byte mark per task: after
 * 4 million tasks on a worker, of 64 MiB by default, every task asking
 * for scratch failed with TARN_ENOSPC; here after 4096.) */
static void scratch_stays_whole_over_many_tasks(void **state) {
  (void)state;
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.scratch_bytes = 64 * 1024;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  for (int r = 0; r < 20; r++) {
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < 1000; i++)
      assert_int_equal(
          tarn_submit(rt, needs_scratch, TARN_ARG((void *)(intptr_t)64)), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < 64; i++)
    assert_int_equal(
        tarn_submit(rt, needs_scratch, TARN_ARG((void *)(intptr_t)(60 * 1024))),
        0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int takes_all_scratch(tarn_task *t, void *arg) {
  size_t size = (size_t)(uintptr_t)arg;
  void *p = NULL;
  int rc = tarn_task_scratch(t, size, 16, &p);
  if (rc == 0) memset(p, 1, size);
  return rc;
}

/* A task may take all of scratch_bytes in one block (aligned to 16), on
 * every thread that runs tasks: the mark each task's scratch begins with
 * is the runtime's own (its slabs took it from the scratch, and a task
 * got 16 bytes less). */
static void a_task_may_take_all_of_its_scratch(void **state) {
  (void)state;
  static const size_t sizes[] = {4096, 64 * 1024, 100000, 16};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    tarn_rt_options o;
    assert_int_equal(tarn_rt_options_init(&o), 0);
    o.workers = 2;
    o.scratch_bytes = sizes[k];
    tarn_rt *rt = NULL;
    assert_int_equal(tarn_rt_create(&o, &rt), 0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < 16; i++)
      assert_int_equal(tarn_submit(rt, takes_all_scratch,
                                   TARN_ARG((void *)(uintptr_t)sizes[k])),
                       0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  /* Beyond what a size_t holds with the mark: refused. */
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.scratch_bytes = SIZE_MAX - 8;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), TARN_EINVAL);
  assert_null(rt);
}

/* `workers` workers, no limit, no recycling cache: a freed buffer leaves
 * the resident bytes (and goes back to the system) at once, so peaks are
 * easy to read. */
static tarn_rt *uncached_rt(unsigned workers) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.pool.mem_limit = 0;
  o.pool.cache_bytes = 0;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
  fclose(f);
  return kib;
}

/* Lets the workers rest: asleep long enough to trim (20 ms) and more. */
static void rest(void) {
  struct timespec t = {0, 300000000};
  nanosleep(&t, NULL);
}

/* Prints the RSS before, during and after some work (then a rest), and
 * checks that the work took more than `grew` KiB and that all but `kept`
 * KiB came back (not under the sanitizers, whose shadow memory moves the
 * RSS). */
static void rss_came_back(const char *during, long before, long busy,
                          long after, long grew, long kept) {
  print_message("  RSS %ld KiB, %ld %s, %ld once idle\n", before, busy, during,
                after);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(before > 0 && busy > before + grew);
  assert_true(after < before + kept);
#else
  (void)grew;
  (void)kept;
#endif
}

/* After a rest, three tasks that each fill `bytes` of scratch (on up to
 * three slabs: two workers and the waiting thread); *before gets the RSS
 * before them. Returns the RSS right after them. */
static long scratch_burst_of(tarn_rt *rt, intptr_t bytes, long *before) {
  rest();
  *before = rss_kib();
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(tarn_submit(rt, needs_scratch, TARN_ARG((void *)bytes)),
                     0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  return rss_kib();
}

/* Scratch pages go back to the system once the workers rest: three tasks
 * that each fill 24 MiB of scratch (on three slabs: two workers and the
 * waiting thread) raise the RSS by up to 72 MiB, and 300 ms after the
 * region, with every thread idle, it is back within 8 MiB of where it
 * was: what the three slabs keep (2 MiB each) and some slack (the old
 * code kept it all until the runtime was destroyed). */
static void scratch_goes_back_when_the_workers_rest(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  long before = 0, busy = scratch_burst_of(rt, 24 << 20, &before);
  rest();
  rss_came_back("after the tasks", before, busy, rss_kib(), 24 * 1024,
                8 * 1024);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Three tasks of `bytes` of scratch each on `rt`, then a rest: the RSS
 * must stay more than `kept` KiB above where it was before them (not under
 * the sanitizers, whose shadow memory moves the RSS). Destroys `rt`. */
static void scratch_stays_through_a_rest(tarn_rt *rt, intptr_t bytes,
                                         long kept) {
  long before = 0;
  scratch_burst_of(rt, bytes, &before);
  rest();
  long after = rss_kib();
  print_message("  RSS %ld KiB, %ld after a rest\n", before, after);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(before > 0 && after > before + kept);
#else
  (void)kept;
#endif
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A task's scratch of the size tarn's own kernels take (a gathered LU
 * panel of up to 1 MiB and its pivots) stays resident through the rests,
 * so that a program working in bursts does not fault it in again at each:
 * three tasks that fill 1.5 MiB each leave at least one slab's 1.5 MiB
 * resident after the rest (with 256 KiB kept per slab, as until
 * 2026-12-07, at most 768 KiB would be). */
static void task_sized_scratch_stays_through_a_rest(void **state) {
  (void)state;
  scratch_stays_through_a_rest(make_rt(2, 0, 1), 3 << 19, 1279);
}

/* With idle_trim_ms 0 (the default is 20) the workers keep what the work
 * left: the three tasks of 24 MiB of scratch (as above) leave it resident
 * through the rest. */
static void a_runtime_told_not_to_trim_keeps_its_pages(void **state) {
  (void)state;
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(o.idle_trim_ms, 20);
  o.workers = 2;
  o.idle_trim_ms = 0;
  scratch_stays_through_a_rest(rt_with(&o), 24 << 20, 24 * 1024);
}

/* Makes X, 2048 x 2048 in tiles of `tile`, and sin(X), sums sin(X), then
 * destroys both; *busy (when not NULL) gets the RSS before the destroy. */
static void two_matrices_made_and_dropped(tarn_rt *rt, size_t tile,
                                          long *busy) {
  tarn_matrix *a = NULL, *b = NULL;
  double sum = 0;
  assert_int_equal(tarn_matrix_rand(rt, 2048, 2048, tile, tile, 1, &a), 0);
  assert_int_equal(tarn_matrix_sin(a, &b), 0);
  assert_int_equal(tarn_matrix_sum(b, &sum), 0);
  if (busy != NULL) *busy = rss_kib();
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
}

/* Memory the heap kept goes back too: two matrices of 2048 x 2048 in
 * tiles of 100 x 100 (buffers of 80 KiB, from the heap), without the
 * pool's cache, made, summed and destroyed: 300 ms later, with every
 * thread idle, the RSS is back within 12 MiB of where it was (the old
 * code kept 23 MiB of the 72, 268 of 286 MiB with 4096 x 4096: free heap
 * pages that the runtime's own allocations, interleaved, pinned). */
static void freed_memory_goes_back_when_the_workers_rest(void **state) {
  (void)state;
  tarn_rt *rt = uncached_rt(2);
  rest();
  long before = rss_kib();
  long busy = 0;
  two_matrices_made_and_dropped(rt, 100, &busy);
  rest();
  rss_came_back("with the matrices", before, busy, rss_kib(), 48 * 1024,
                12 * 1024);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* So do the freed buffers the pool keeps for reuse (its recycling cache,
 * 256 MiB by default): two matrices of 2048 x 2048 in tiles of 512 (2 MiB
 * buffers, mapped on their own) and then of 100 (80 KiB, from the heap),
 * made, summed and destroyed, leave their buffers in the cache, and once
 * the workers rest the cache is empty and the RSS is back (the old code
 * kept them until the runtime was destroyed: 64 MiB here, and 256 MiB
 * after larger work; the heap's blocks go back only if the cache is
 * emptied before the heap is trimmed). */
static void the_pool_cache_goes_back_when_the_workers_rest(void **state) {
  (void)state;
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.pool.mem_limit = 0;
  o.pool.cache_bytes = (size_t)256 << 20;
  /* A rest only after a second idle: the check that the cache keeps the
   * buffers comes well before it, even under ThreadSanitizer on a slow
   * machine (with the default 20 ms, and the rests repeated at 40, 80, ...
   * ms, one emptied the cache between the destroys and the check). */
  o.idle_trim_ms = 1000;
  tarn_rt *rt = rt_with(&o);
  static const size_t tiles[] = {512, 100}; /* mappings; heap blocks */
  for (size_t i = 0; i < 2; i++) {
    rest();
    long before = rss_kib();
    long busy = 0;
    two_matrices_made_and_dropped(rt, tiles[i], &busy);
    tarn_pool_stats ps;
    assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
    assert_true(ps.cache_bytes >= (size_t)16 << 20);   /* kept for reuse */
    nanosleep(&(struct timespec){2, 500000000}, NULL); /* the rest, at 1 s */
    assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
    assert_int_equal(ps.cache_bytes, 0);
    assert_int_equal(ps.resident_bytes, 0);
    rss_came_back("with the matrices", before, busy, rss_kib(), 48 * 1024,
                  12 * 1024);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static long minor_faults(void) {
  struct rusage u;
  assert_int_equal(getrusage(RUSAGE_SELF, &u), 0);
  return u.ru_minflt;
}

/* Bursts 60 ms apart, each a matrix of one 4 MiB tile made, summed and
 * destroyed (into the pool's cache) on a runtime that rests 20 ms, then a
 * rest of two seconds and one burst more: returns the page faults of the
 * last five of the ten bursts, and the rest's wait (tarn__rt_rest_wait_ns)
 * after the tenth burst (*during) and after the one after the long rest
 * (*after). */
static long bursts_60_ms_apart(uint64_t *during, uint64_t *after) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.idle_trim_ms = 20;
  o.pool.huge_pages = 0; /* 1024 pages a buffer, not two huge ones */
  tarn_rt *rt = rt_with(&o);
  long faults = 0;
  for (int i = 0; i < 11; i++) {
    if (i == 10) {
      *during = tarn__rt_rest_wait_ns(rt);
      nanosleep(&(struct timespec){2, 0}, NULL);
    }
    nanosleep(&(struct timespec){0, 60000000}, NULL);
    long f0 = minor_faults();
    tarn_matrix *a = NULL;
    double sum = 0;
    assert_int_equal(tarn_matrix_fill(rt, 1024, 512, 1024, 512, 1.0, &a), 0);
    assert_int_equal(tarn_matrix_sum(a, &sum), 0);
    assert_true(sum == 1024.0 * 512.0);
    tarn_matrix_destroy(a);
    if (i >= 5 && i < 10) faults += minor_faults() - f0;
  }
  *after = tarn__rt_rest_wait_ns(rt);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  return faults;
}

/* A program that works in bursts a little further apart than the rest's
 * wait would fault in again, at every burst, what each rest gave back
 * (here the pool's cache: a 4 MiB buffer, 1024 pages). The wait adapts:
 * bursts 60 ms apart see it double past them (40 ms at least), and their
 * last five fault in fewer pages than two and a half buffers' worth (none,
 * unless a thread was held up); after a rest of two seconds it shrinks
 * again. With
 * the adaptation off (tarn__rt_rests_adapt), the wait stays 20 ms, and
 * the last five bursts fault in three buffers' worth at least (five, but
 * for a thread held up). */
static void a_program_working_in_bursts_keeps_its_memory(void **state) {
  (void)state;
  uint64_t during = 0, after = 0;
  long faults = bursts_60_ms_apart(&during, &after);
  print_message(
      "  rest %.0f ms during the bursts, %.0f after a long rest, "
      "%ld page faults in the last five bursts\n",
      (double)during / 1e6, (double)after / 1e6, faults);
  assert_true(during >= 40000000u);
  assert_true(after < during);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(faults < 2 * 1024 + 512);
#endif
  tarn__rt_rests_adapt(false);
  faults = bursts_60_ms_apart(&during, &after);
  tarn__rt_rests_adapt(true);
  print_message("  not adapted: %ld page faults in the last five bursts\n",
                faults);
  assert_int_equal(during, 20000000u);
  assert_int_equal(after, 20000000u);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(faults >= 3 * 1024);
#endif
}

/* The spill file's free space goes back too: a runtime with a 4 MiB limit
 * spills two 32 MiB matrices while a small one is kept; once they are
 * destroyed and the workers rest, the file holds little more than the
 * kept matrix (the old code kept the file at its largest, on tmpfs as
 * memory: 62 MiB after the same in a program outside the repository),
 * and the kept matrix still reads back right. */
static void spill_space_goes_back_when_the_workers_rest(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 4 * MiB, 1);
  tarn_matrix *keep = NULL;
  double kept_sum = 0, sum = 0;
  assert_int_equal(tarn_matrix_rand(rt, 512, 512, 128, 128, 7, &keep), 0);
  assert_int_equal(tarn_matrix_sum(keep, &kept_sum), 0);
  two_matrices_made_and_dropped(rt, 128, NULL);
  off_t size, used;
  test_spill_file_usage(&size, &used);
  assert_true(size >= (off_t)(32 * MiB));
  rest();
  off_t size_after, used_after;
  test_spill_file_usage(&size_after, &used_after);
  print_message("  spill file %lld bytes, %lld once idle\n", (long long)size,
                (long long)size_after);
  assert_true(size_after <= (off_t)(16 * MiB));
  assert_true(used_after <= (off_t)(16 * MiB));
  assert_int_equal(tarn_matrix_sum(keep, &sum), 0);
  assert_true(sum == kept_sum);
  tarn_matrix_destroy(keep);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static atomic_int hold_open;

/* Holds its worker until hold_open is set. */
static int hold_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  while (!atomic_load(&hold_open)) sched_yield();
  return 0;
}

static int nothing_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return 0;
}

/* The structs of ended tasks go back too: 100000 tasks queued behind one
 * that holds its worker take tens of MiB; 300 ms after the region, with
 * every thread idle, the RSS is back within 12 MiB of where it was (the
 * old code kept every struct for reuse until the runtime was destroyed:
 * 137 MB after 300000). */
static void ended_tasks_go_back_when_the_workers_rest(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  rest();
  long before = rss_kib();
  tarn_ref *x = word_ref(rt, 0);
  atomic_store(&hold_open, 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, hold_task, TARN_RW(x)), 0);
  for (int i = 0; i < 100000; i++)
    assert_int_equal(tarn_submit(rt, nothing_task, TARN_RW(x)), 0);
  long busy = rss_kib();
  atomic_store(&hold_open, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  tarn_ref_release(x);
  rest();
  rss_came_back("with the tasks queued", before, busy, rss_kib(), 24 * 1024,
                12 * 1024);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The heap is trimmed at rest only after tarn gave it memory: the
 * program frees every other one of 768 blocks of 64 KiB it filled (24 MiB;
 * the blocks kept between them keep the freed ones inside the heap) and
 * the workers rest after some work: the freed pages stay (the old code
 * trimmed the heap at every rest, its locks held for 2 to 126 ms each time
 * after a large burst, whatever was freed). Then two matrices of 100 x 100
 * tiles (heap buffers), made and destroyed: the next rest trims, and the
 * program's freed pages go back with tarn's, 8 MiB of them at least (13
 * to 20 were seen: small blocks of tarn's that outlive the matrices land
 * in the program's holes and keep some of their pages). */
static void a_rest_trims_the_heap_only_after_tarn_freed_to_it(void **state) {
  (void)state;
  tarn_rt *rt = uncached_rt(2);
  enum { blocks = 768, block = 64 << 10 };
  char **mine = malloc(blocks * sizeof *mine);
  assert_non_null(mine);
  for (int i = 0; i < blocks; i++) {
    mine[i] = malloc(block);
    assert_non_null(mine[i]);
    memset(mine[i], i, block);
  }
  rest();
  long filled = rss_kib();
  for (int i = 0; i < blocks; i += 2) free(mine[i]);
  /* Work that frees nothing to the heap wakes the workers, who rest after
   * it. */
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < 8; i++)
    assert_int_equal(tarn_submit(rt, slow_task, TARN_ARG(NULL)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  rest();
  long rested = rss_kib();
  print_message(
      "  RSS %ld KiB with the program's blocks, %ld once half "
      "freed and rested\n",
      filled, rested);
  two_matrices_made_and_dropped(rt, 100, NULL);
  rest();
  long trimmed = rss_kib();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  /* The rests come at 20, 40, 80, ... ms of idleness: with another test
   * beside it on two cores (CI runs two at once), the one after the
   * matrices' last frees came later than 300 ms once. Up to 2 s more. */
  for (int i = 0; i < 20 && trimmed >= rested - 8 * 1024; i++) {
    struct timespec t = {0, 100000000};
    nanosleep(&t, NULL);
    trimmed = rss_kib();
  }
#endif
  print_message("  %ld after tarn's matrices and a rest\n", trimmed);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  assert_true(rested > filled - 4 * 1024);
  assert_true(trimmed < rested - 8 * 1024);
#endif
  for (int i = 1; i < blocks; i += 2) free(mine[i]);
  free(mine);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bursts of tasks from two threads while the workers rest between them
 * and give back the chunks of spare task structs: with idle_trim_ms 1,
 * each thread runs 12 bursts of 6000 increments on its own ref (a chain,
 * so that most of a burst is queued at once) 3 ms apart, and the other
 * thread's bursts carve and take task structs while a rest unmaps
 * chunks (with the rest's wait fixed: adapted, it would grow past the
 * 3 ms). Every increment lands. */
struct burster {
  tarn_rt *rt;
  tarn_ref *ref;
  int rc;
};

static int add_one(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t *x = tarn_task_data(t, 0);
  *x += 1;
  return 0;
}

static void *bursts(void *arg) {
  struct burster *b = arg;
  for (int round = 0; round < 12 && b->rc == 0; round++) {
    tarn_region *region = NULL;
    b->rc = tarn_region_begin(b->rt, &region);
    for (int i = 0; i < 6000 && b->rc == 0; i++)
      b->rc = tarn_submit(b->rt, add_one, TARN_RW(b->ref));
    int rc = region != NULL ? tarn_region_wait(region, NULL) : 0;
    if (b->rc == 0) b->rc = rc;
    struct timespec pause = {0, 3000000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

static void bursts_go_on_while_rests_give_task_structs_back(void **state) {
  (void)state;
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.idle_trim_ms = 1;
  tarn__rt_rests_adapt(false);
  tarn_rt *rt = rt_with(&o);
  struct burster b[2] = {{rt, word_ref(rt, 0), 0}, {rt, word_ref(rt, 0), 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, bursts, &b[i]), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(b[i].rc, 0);
    assert_int_equal(word_of(b[i].ref), 12 * 6000);
    tarn_ref_release(b[i].ref);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
  tarn__rt_rests_adapt(true);
}

/* ---- memory ---------------------------------------------------------- */

static int fill_task(tarn_task *t, void *arg) {
  memset(tarn_task_data(t, 0), (int)(intptr_t)arg, tarn_task_size(t, 0));
  return 0;
}

static int sum_task(tarn_task *t, void *arg) {
  const unsigned char *a = tarn_task_data(t, 0), *b = tarn_task_data(t, 1);
  uint64_t *out = tarn_task_data(t, 2);
  (void)arg;
  *out = (uint64_t)a[0] + b[tarn_task_size(t, 1) - 1];
  return 0;
}

static void a_limit_below_the_data_holds_tasks_back(void **state) {
  (void)state;
  /* 16 MiB of data, a 5 MiB limit, tasks that need 2 MiB each. */
  tarn_rt *rt = make_rt(2, 5 * MiB, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  enum { n = 16 };
  tarn_ref *data[n], *sums[n];
  for (int i = 0; i < n; i++) {
    assert_int_equal(tarn_ref_create(pool, MiB, &data[i]), 0);
    assert_int_equal(tarn_ref_create(pool, 8, &sums[i]), 0);
  }
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(
        tarn_submit(rt, fill_task, TARN_ARG((intptr_t)i + 1), TARN_W(data[i])),
        0);
  for (int i = 0; i < n; i++)
    assert_int_equal(tarn_submit(rt, sum_task, TARN_R(data[i]),
                                 TARN_R(data[(i + 1) % n]), TARN_W(sums[i])),
                     0);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), 0);
  assert_true(st.peak_bytes <= 5 * MiB);
  for (int i = 0; i < n; i++)
    assert_int_equal(word_of(sums[i]),
                     (uint64_t)(i + 1) + (uint64_t)((i + 1) % n + 1));
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_true(ps.spills > 0);
  /* The sums again, now that most of the data is on disk: the tasks are
   * ready when submitted, and their spilled inputs are read back ahead of
   * their run. */
  tarn_rt_stats rs;
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  uint64_t prefetches = rs.prefetches;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(tarn_submit(rt, sum_task, TARN_R(data[i]),
                                 TARN_R(data[(i + 1) % n]), TARN_W(sums[i])),
                     0);
  assert_int_equal(tarn_region_wait(region, &st), 0);
  assert_true(st.peak_bytes <= 5 * MiB);
  for (int i = 0; i < n; i++)
    assert_int_equal(word_of(sums[i]),
                     (uint64_t)(i + 1) + (uint64_t)((i + 1) % n + 1));
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  assert_true(rs.prefetches > prefetches);
  /* Tasks that only write the data: nothing of it is read back, ahead of
   * them or by their pins. */
  prefetches = rs.prefetches;
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  uint64_t restores = ps.restores, bytes_read = ps.bytes_read;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(
        tarn_submit(rt, fill_task, TARN_ARG((intptr_t)i + 7), TARN_W(data[i])),
        0);
  assert_int_equal(tarn_region_wait(region, &st), 0);
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  assert_int_equal(rs.prefetches, prefetches);
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_int_equal(ps.restores, restores);
  assert_int_equal(ps.bytes_read, bytes_read);
  for (int i = 0; i < n; i++) {
    unsigned char *bytes = NULL;
    assert_int_equal(tarn_ref_pin(data[i], TARN_READ, 0, (void **)&bytes), 0);
    assert_int_equal(bytes[0], i + 7);
    assert_int_equal(bytes[MiB - 1], i + 7);
    assert_int_equal(tarn_ref_unpin(data[i]), 0);
    tarn_ref_release(data[i]);
    tarn_ref_release(sums[i]);
  }
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  assert_int_equal(rs.run, 4 * n);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Waits (up to 5 s) until the int at arg is set. */
static int wait_open_task(tarn_task *t, void *arg) {
  (void)t;
  for (int i = 0; i < 5000 && !atomic_load((atomic_int *)arg); i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return 0;
}

/* The first byte of slot 0's data into slot 1's word. */
static int byte_to_word_task(tarn_task *t, void *arg) {
  (void)arg;
  const unsigned char *a = tarn_task_data(t, 0);
  uint64_t *out = tarn_task_data(t, 1);
  *out = a[0];
  return 0;
}

/* A ref to watch and what a task saw of it. */
struct watch {
  tarn_ref *ref;
  atomic_int seen_resident;
};

/* Waits (up to 2 s) for w->ref to be in memory and says whether it was. */
static int watch_task(tarn_task *t, void *arg) {
  (void)t;
  struct watch *w = arg;
  for (int i = 0; i < 2000 && !tarn_ref_is_resident(w->ref); i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  atomic_store(&w->seen_resident, tarn_ref_is_resident(w->ref));
  return 0;
}

/* Under a limit, while a task runs, the spilled inputs of a successor that
 * waits for it alone start coming back: in a chain (tasks on one ref),
 * the next task's data is in memory when it may run, not read back only
 * then. */
static void a_running_task_reads_ahead_for_its_successor(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 4 * MiB, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  enum { others = 16 };
  tarn_ref *x = NULL, *c = NULL, *other[others] = {NULL};
  tarn_region *region = NULL;
  assert_int_equal(tarn_ref_create(pool, MiB, &x), 0);
  assert_int_equal(tarn_ref_create(pool, 8, &c), 0);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, fill_task, TARN_ARG(3), TARN_W(x)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  for (int i = 0; i < others && tarn_ref_is_resident(x); i++) {
    /* More data, until x is pushed out for it. */
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_ref_create(pool, MiB, &other[i]), 0);
    assert_int_equal(
        tarn_submit(rt, fill_task, TARN_ARG((intptr_t)i), TARN_W(other[i])), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
  }
  assert_false(tarn_ref_is_resident(x));
  atomic_int open = 0;
  struct watch w = {.ref = x};
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, wait_open_task, TARN_ARG(&open), TARN_RW(c)),
                   0);
  assert_int_equal(tarn_submit(rt, watch_task, TARN_ARG(&w), TARN_RW(c)), 0);
  assert_int_equal(tarn_submit(rt, byte_to_word_task, TARN_R(x), TARN_RW(c)),
                   0);
  atomic_store(&open, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_true(atomic_load(&w.seen_resident));
  assert_int_equal(word_of(c), 3);
  tarn_ref_release(x);
  tarn_ref_release(c);
  for (int i = 0; i < others && other[i] != NULL; i++)
    tarn_ref_release(other[i]);
  tarn_rt_destroy(rt);
}

/* A source whose object is `byte` repeated; counts its reads. */
struct counted_source {
  unsigned char byte;
  atomic_int *reads;
};

static int counted_read(void *ctx, void *dst, size_t size) {
  const struct counted_source *c = ctx;
  memset(dst, c->byte, size);
  atomic_fetch_add(c->reads, 1);
  return 0;
}

/* Slot 1's bytes are slot 0's plus one. */
static int plus_one_task(tarn_task *t, void *arg) {
  (void)arg;
  const unsigned char *in = tarn_task_data(t, 0);
  unsigned char *out = tarn_task_data(t, 1);
  for (size_t k = 0; k < tarn_task_size(t, 1); k++) out[k] = in[k] + 1;
  return 0;
}

/* n pairs of 1 MiB refs: in[i] from a counted source of bytes first + i,
 * out[i] new. */
static void counted_pairs(tarn_pool *pool, int n, unsigned char first,
                          atomic_int *reads, struct counted_source *src,
                          tarn_ref **in, tarn_ref **out) {
  for (int i = 0; i < n; i++) {
    src[i] = (struct counted_source){(unsigned char)(first + i), reads};
    tarn_source s = {.read = counted_read, .ctx = &src[i]};
    assert_int_equal(tarn_ref_create_from(pool, MiB, &s, &in[i]), 0);
    assert_int_equal(tarn_ref_create(pool, MiB, &out[i]), 0);
  }
}

/* Checks that each out[i] holds in[i]'s bytes plus one, and releases
 * both. */
static void check_plus_one_and_release(int n, unsigned char first,
                                       tarn_ref **in, tarn_ref **out) {
  for (int i = 0; i < n; i++) {
    unsigned char *bytes = NULL;
    assert_int_equal(tarn_ref_pin(out[i], TARN_READ, 0, (void **)&bytes), 0);
    assert_int_equal(bytes[0], first + i + 1);
    assert_int_equal(bytes[MiB - 1], first + i + 1);
    assert_int_equal(tarn_ref_unpin(out[i]), 0);
    tarn_ref_release(in[i]);
    tarn_ref_release(out[i]);
  }
}

/* Under a limit that holds one task's data (1 MiB in, 1 MiB out, a 2 MiB
 * limit), two workers take turns: a task that waits for memory waits in
 * line, and the tasks behind it do not try to pin and push out the input
 * it read. Each input is read back about once, not again and again. */
static void tasks_waiting_for_memory_read_their_inputs_about_once(
    void **state) {
  (void)state;
  enum { n = 12 };
  for (int round = 0; round < 3; round++) {
    tarn_rt *rt = make_rt(2, 2 * MiB, 1);
    tarn_pool *pool = tarn_rt_pool(rt);
    atomic_int reads = 0;
    struct counted_source src[n];
    tarn_ref *in[n], *out[n];
    counted_pairs(pool, n, 10, &reads, src, in, out);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < n; i++)
      assert_int_equal(
          tarn_submit(rt, plus_one_task, TARN_R(in[i]), TARN_W(out[i])), 0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(region, &st), 0);
    assert_true(st.peak_bytes <= 2 * MiB);
    /* Each once, but for the start: the read aheads queued as the tasks
     * are submitted race the first two tasks' pins, which may push out an
     * input read ahead before its task runs, and it is read again. Of
     * 1,000 rounds beside three busy loops (2026-12-04), 174 read 12, 751
     * read 13, 73 read 14 and 2 read 15 (an input read three times), and
     * a bound of n + 3 failed once in a suite run under load. When every
     * waiting task tried at once, 39 to 64. */
    int got = atomic_load(&reads);
    assert_true(got >= n);
    assert_true(got <= n + n / 2);
    check_plus_one_and_release(n, 10, in, out);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A read ahead makes room only from data no task will use: with the
 * memory held by two refs that waiting tasks will read, a prefetch of a
 * third is skipped rather than pushing one of them out. */
static void a_read_ahead_leaves_data_tasks_wait_for(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 2 * MiB + 64 * 1024, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_ref *needed[2] = {NULL}, *c = NULL, *y = NULL;
  for (int i = 0; i < 2; i++) {
    unsigned char *bytes = NULL;
    assert_int_equal(tarn_ref_alloc(pool, MiB, 0, &needed[i]), 0);
    assert_int_equal(tarn_ref_pin(needed[i], TARN_WRITE, 0, (void **)&bytes),
                     0);
    memset(bytes, 20 + i, MiB);
    assert_int_equal(tarn_ref_unpin(needed[i]), 0);
  }
  assert_int_equal(tarn_ref_create(pool, 8, &c), 0);
  atomic_int reads = 0;
  struct counted_source src = {7, &reads};
  tarn_source s = {.read = counted_read, .ctx = &src};
  assert_int_equal(tarn_ref_create_from(pool, MiB, &s, &y), 0);
  /* Two tasks that will read the resident refs, behind a gate. */
  atomic_int open = 0;
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, wait_open_task, TARN_ARG(&open), TARN_RW(c)),
                   0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(
        tarn_submit(rt, byte_to_word_task, TARN_R(needed[i]), TARN_RW(c)), 0);
  assert_int_equal(tarn_ref_prefetch(y), 1);
  for (int i = 0; i < 200; i++) { /* 200 ms for the reader */
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_int_equal(atomic_load(&reads), 0);
  assert_false(tarn_ref_is_resident(y));
  for (int i = 0; i < 2; i++) assert_true(tarn_ref_is_resident(needed[i]));
  atomic_store(&open, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(word_of(c), 21);
  /* Nothing waits for them now: a read ahead may push them out. */
  assert_int_equal(tarn_ref_prefetch(y), 1);
  for (int i = 0; i < 2000 && !tarn_ref_is_resident(y); i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_true(tarn_ref_is_resident(y));
  assert_int_equal(atomic_load(&reads), 1);
  tarn_ref_release(needed[0]);
  tarn_ref_release(needed[1]);
  tarn_ref_release(c);
  tarn_ref_release(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A ref of `size` bytes of `value`, unpinned. */
static tarn_ref *bytes_of(tarn_pool *pool, size_t size, unsigned char value) {
  tarn_ref *r = NULL;
  unsigned char *bytes = NULL;
  assert_int_equal(tarn_ref_alloc(pool, size, 0, &r), 0);
  assert_int_equal(tarn_ref_pin(r, TARN_WRITE, 0, (void **)&bytes), 0);
  memset(bytes, value, size);
  assert_int_equal(tarn_ref_unpin(r), 0);
  return r;
}

/* Among data that tasks will use, eviction takes what is used last in the
 * order submitted (Belady's choice from the graph): with the memory held
 * by two refs of a MiB that gated tasks will read, a first by the task
 * submitted first, room for 1.5 MiB more (over half the limit: no room is
 * made ahead for a second such request) pushes b out, though a was made
 * after b (CLOCK's hand, which starts from the newest, takes a); b comes
 * back for its task. */
static void eviction_takes_the_data_used_last(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 5 * MiB / 2 + 64 * 1024, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_ref *b = bytes_of(pool, MiB, 21), *a = bytes_of(pool, MiB, 20);
  tarn_ref *c = NULL;
  assert_int_equal(tarn_ref_create(pool, 8, &c), 0);
  atomic_int open = 0;
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, wait_open_task, TARN_ARG(&open), TARN_RW(c)),
                   0);
  assert_int_equal(tarn_submit(rt, byte_to_word_task, TARN_R(a), TARN_RW(c)),
                   0);
  assert_int_equal(tarn_submit(rt, byte_to_word_task, TARN_R(b), TARN_RW(c)),
                   0);
  tarn_ref *d = bytes_of(pool, 3 * MiB / 2, 22);
  for (int i = 0; i < 2000 && tarn_ref_is_resident(b); i++) {
    struct timespec ms = {0, 1000000}; /* its write may still be going */
    nanosleep(&ms, NULL);
  }
  assert_true(tarn_ref_is_resident(a));
  assert_false(tarn_ref_is_resident(b));
  atomic_store(&open, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(word_of(c), 21);
  tarn_ref_release(a);
  tarn_ref_release(b);
  tarn_ref_release(c);
  tarn_ref_release(d);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Tasks waiting in line for memory when their region is cancelled end
 * cancelled as their turns come, without pinning anything, and leave the
 * line as it was: the next tasks take their turns and all run. */
static void tasks_waiting_for_memory_can_be_cancelled(void **state) {
  (void)state;
  enum { n = 8 };
  tarn_rt *rt = make_rt(2, 2 * MiB, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  atomic_int reads = 0, open = 0;
  struct counted_source src[n];
  tarn_ref *in[n], *out[n], *big = NULL;
  counted_pairs(pool, n, 40, &reads, src, in, out);
  /* The whole limit, pinned by a task that waits for the gate. */
  assert_int_equal(tarn_ref_create(pool, 2 * MiB, &big), 0);
  tarn_region *outer = NULL, *inner = NULL;
  assert_int_equal(tarn_region_begin(rt, &outer), 0);
  assert_int_equal(
      tarn_submit(rt, wait_open_task, TARN_ARG(&open), TARN_W(big)), 0);
  for (int i = 0; i < 2000 && tarn_ref_is_resident(big) == 0; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(
        tarn_submit(rt, plus_one_task, TARN_R(in[i]), TARN_W(out[i])), 0);
  tarn_rt_stats rs;
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  for (int i = 0; i < 2000 && rs.held_back < n; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  }
  assert_true(rs.held_back >= n); /* every one in line */
  assert_int_equal(tarn_region_cancel(inner), 0);
  atomic_store(&open, 1);
  assert_int_equal(tarn_region_wait(inner, NULL), TARN_ECANCELED);
  assert_int_equal(tarn_region_wait(outer, NULL), 0);
  assert_int_equal(atomic_load(&reads), 0);
  /* The same tasks again: each in its turn. */
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  for (int i = 0; i < n; i++)
    assert_int_equal(
        tarn_submit(rt, plus_one_task, TARN_R(in[i]), TARN_W(out[i])), 0);
  assert_int_equal(tarn_region_wait(inner, NULL), 0);
  check_plus_one_and_release(n, 40, in, out);
  tarn_ref_release(big);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Fills slots 0 and 1 (written only) with the byte at arg. */
static int fill_two_task(tarn_task *t, void *arg) {
  for (size_t i = 0; i < 2; i++)
    memset(tarn_task_data(t, i), (int)(intptr_t)arg, tarn_task_size(t, i));
  return 0;
}

/* A task that pinned one of its outputs and must wait for room for the
 * other gives the first back empty: it holds no memory while it waits,
 * and it is never written to the disk, since it holds nothing yet. */
static void an_output_pinned_by_a_waiting_task_holds_nothing(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 3 * MiB, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_ref *x = NULL, *y = NULL, *w1 = NULL, *w2 = NULL;
  assert_int_equal(tarn_ref_create(pool, MiB, &x), 0);
  assert_int_equal(tarn_ref_create(pool, MiB, &y), 0);
  assert_int_equal(tarn_ref_create(pool, MiB, &w1), 0);
  assert_int_equal(tarn_ref_create(pool, MiB, &w2), 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(
      tarn_submit(rt, fill_two_task, TARN_ARG(5), TARN_W(x), TARN_W(y)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  /* x and y pinned by a task that waits for the gate: 1 MiB is left. */
  atomic_int open = 0;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(
      tarn_submit(rt, wait_open_task, TARN_ARG(&open), TARN_R(x), TARN_R(y)),
      0);
  tarn_rt_stats rs;
  for (int i = 0; i < 2000; i++) { /* until it runs: both pinned */
    tarn_pool_stats ps;
    assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
    if (ps.pinned_bytes == 2 * MiB) break;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  uint64_t held = rs.held_back;
  assert_int_equal(
      tarn_submit(rt, fill_two_task, TARN_ARG(9), TARN_W(w1), TARN_W(w2)), 0);
  for (int i = 0; i < 2000 && rs.held_back == held; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    assert_int_equal(tarn_rt_stats_get(rt, &rs), 0);
  }
  assert_true(rs.held_back > held);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_int_equal(ps.live_bytes, 2 * MiB); /* x and y only */
  assert_int_equal(ps.spills, 0);
  assert_false(tarn_ref_is_resident(w1));
  atomic_store(&open, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  tarn_ref *refs[4] = {x, y, w1, w2};
  for (int i = 0; i < 4; i++) {
    unsigned char *bytes = NULL;
    assert_int_equal(tarn_ref_pin(refs[i], TARN_READ, 0, (void **)&bytes), 0);
    assert_int_equal(bytes[0], i < 2 ? 5 : 9);
    assert_int_equal(bytes[MiB - 1], i < 2 ? 5 : 9);
    assert_int_equal(tarn_ref_unpin(refs[i]), 0);
    tarn_ref_release(refs[i]);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int three_sum_task(tarn_task *t, void *arg) {
  (void)arg;
  uint64_t s = 0;
  for (size_t i = 0; i < 3; i++)
    s += ((const unsigned char *)tarn_task_data(t, i))[0];
  memcpy(tarn_task_data(t, 3), &s, sizeof s);
  return 0;
}

static int copy_word_task(tarn_task *t, void *arg) {
  (void)arg;
  memcpy(tarn_task_data(t, 1), tarn_task_data(t, 0), sizeof(uint64_t));
  return 0;
}

/* A task whose data can never fit under the limit (three 2 MiB inputs
 * under 5 MiB) waits while other tasks run, then fails with TARN_ENOMEM
 * once nothing else runs; its dependant is cancelled, the tasks that fit
 * run, and its inputs read back intact. */
static void a_task_that_never_fits_fails_with_enomem(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = make_rt(workers, 5 * MiB, 1);
    tarn_pool *pool = tarn_rt_pool(rt);
    enum { n = 6 };
    tarn_ref *data[n], *sums[n], *big = NULL, *after = word_ref(rt, 7);
    for (int i = 0; i < n; i++) {
      assert_int_equal(tarn_ref_create(pool, 2 * MiB, &data[i]), 0);
      sums[i] = word_ref(rt, 0);
    }
    big = word_ref(rt, 0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    for (int i = 0; i < n; i++)
      assert_int_equal(tarn_submit(rt, fill_task, TARN_ARG((intptr_t)i + 1),
                                   TARN_W(data[i])),
                       0);
    /* Submitted between the fills and the sums: it is ready while they
     * run, and held back until they are done. */
    assert_int_equal(tarn_submit(rt, three_sum_task, TARN_R(data[0]),
                                 TARN_R(data[1]), TARN_R(data[2]), TARN_W(big)),
                     0);
    assert_int_equal(
        tarn_submit(rt, copy_word_task, TARN_R(big), TARN_W(after)), 0);
    for (int i = 0; i < n; i++)
      assert_int_equal(tarn_submit(rt, sum_task, TARN_R(data[i]),
                                   TARN_R(data[(i + 1) % n]), TARN_W(sums[i])),
                       0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(region, &st), TARN_ENOMEM);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.run, 2 * n);
    assert_true(st.peak_bytes <= 5 * MiB);
    for (int i = 0; i < n; i++)
      assert_int_equal(word_of(sums[i]),
                       (uint64_t)(i + 1) + (uint64_t)((i + 1) % n + 1));
    for (int i = 0; i < n; i++) {
      unsigned char *p = NULL;
      assert_int_equal(tarn_ref_pin(data[i], TARN_READ, 0, (void **)&p), 0);
      for (size_t k = 0; k < 2 * MiB; k += 4096) assert_int_equal(p[k], i + 1);
      assert_int_equal(tarn_ref_unpin(data[i]), 0);
      tarn_ref_release(data[i]);
      tarn_ref_release(sums[i]);
    }
    /* Neither the failed task nor its dependant wrote anything, and the
     * failed task's output stays failed for later tasks that read it. */
    assert_int_equal(word_of(big), 0);
    assert_int_equal(word_of(after), 7);
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(
        tarn_submit(rt, copy_word_task, TARN_R(big), TARN_W(after)), 0);
    assert_int_equal(tarn_region_wait(region, &st), TARN_ECANCELED);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(word_of(after), 7);
    tarn_ref_release(big);
    tarn_ref_release(after);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static int fill_outputs_task(tarn_task *t, void *arg) {
  (void)arg;
  for (size_t i = 0; i < 3; i++) memset(tarn_task_data(t, i), 1, 2 * MiB);
  return 0;
}

/* A task whose outputs alone never fit (three new 2 MiB refs it only
 * writes, under 5 MiB) fails with TARN_ENOMEM, on the workers or on the
 * waiting thread. Each try gives the first two their room (an empty
 * ref's "read back") and gives it back when the third does not fit:
 * counted as reads that ended, those tries once looked like progress to
 * the runtime, which tried again for ever (found by a random test of
 * tarn_matrix_gemv under a limit of under five pages). Later tasks that
 * fit write its refs, each alone. */
static void a_task_whose_outputs_never_fit_fails_with_enomem(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = make_rt(workers, 5 * MiB, 1);
    tarn_pool *pool = tarn_rt_pool(rt);
    tarn_ref *out[3];
    for (int i = 0; i < 3; i++)
      assert_int_equal(tarn_ref_create(pool, 2 * MiB, &out[i]), 0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(tarn_submit(rt, fill_outputs_task, TARN_W(out[0]),
                                 TARN_W(out[1]), TARN_W(out[2])),
                     0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(region, &st), TARN_ENOMEM);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.run, 0);
    for (int i = 0; i < 3; i++) {
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      assert_int_equal(
          tarn_submit(rt, fill_task, TARN_ARG((intptr_t)i + 4), TARN_W(out[i])),
          0);
      assert_int_equal(tarn_region_wait(region, NULL), 0);
      unsigned char *p = NULL;
      assert_int_equal(tarn_ref_pin(out[i], TARN_READ, 0, (void **)&p), 0);
      assert_int_equal(p[0], i + 4);
      assert_int_equal(p[2 * MiB - 1], i + 4);
      assert_int_equal(tarn_ref_unpin(out[i]), 0);
      tarn_ref_release(out[i]);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static int first_byte_task(tarn_task *t, void *arg) {
  (void)arg;
  const unsigned char *in = tarn_task_data(t, 1);
  uint64_t v = in[0];
  memcpy(tarn_task_data(t, 2), &v, sizeof v);
  return 0;
}

/* Under a limit, eviction takes data no submitted task uses before data a
 * waiting task will read: the CLOCK hand alone would take the newest ref
 * first, one that a task waits for. Six 1 MiB refs, the odd ones read by
 * tasks held behind a gate; a 1 MiB allocation under a 7 MiB limit evicts
 * a ref for it (evictions count the objects that left RAM: one queued
 * too, whose write a task's pin overtook, stays). The tasks then run
 * without reading anything back. The same with the largest-first policy (all
 * sizes equal: it would take the first it finds, the newest). */
static void evict_while_tasks_wait(tarn_evict_policy policy) {
  atomic_store(&gate, 0);
  atomic_store(&gate_started, 0);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 1;
  o.pool.mem_limit = 7 * MiB;
  o.pool.cache_bytes = 0;
  o.pool.policy = policy;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  tarn_pool *pool = tarn_rt_pool(rt);
  enum { n = 6 };
  tarn_ref *data[n], *firsts[n] = {NULL};
  for (int i = 0; i < n; i++) {
    assert_int_equal(tarn_ref_alloc(pool, MiB, 0, &data[i]), 0);
    unsigned char *p = NULL;
    assert_int_equal(tarn_ref_pin(data[i], TARN_WRITE, 0, (void **)&p), 0);
    memset(p, i + 1, MiB);
    assert_int_equal(tarn_ref_unpin(data[i]), 0);
  }
  tarn_ref *g = word_ref(rt, 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, gate_task, TARN_W(g)), 0);
  struct timespec tick = {0, 100000};
  while (!atomic_load(&gate_started)) nanosleep(&tick, NULL);
  for (int i = 1; i < n; i += 2) {
    firsts[i] = word_ref(rt, 0);
    assert_int_equal(tarn_submit(rt, first_byte_task, TARN_R(g),
                                 TARN_R(data[i]), TARN_W(firsts[i])),
                     0);
  }
  tarn_pool_stats before, after;
  assert_int_equal(tarn_pool_stats_get(pool, &before), 0);
  tarn_ref *extra = NULL;
  assert_int_equal(tarn_ref_alloc(pool, MiB, 0, &extra), 0);
  atomic_store(&gate, 1);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(tarn_pool_stats_get(pool, &after), 0);
  assert_true(after.evictions >= before.evictions + 1);
  assert_int_equal(after.bytes_read, before.bytes_read);
  for (int i = 0; i < n; i++) {
    if (firsts[i] != NULL) {
      assert_int_equal(word_of(firsts[i]), (uint64_t)(i + 1));
      tarn_ref_release(firsts[i]);
    }
    unsigned char *p = NULL; /* the evicted ones come back whole */
    assert_int_equal(tarn_ref_pin(data[i], TARN_READ, 0, (void **)&p), 0);
    assert_int_equal(p[0], i + 1);
    assert_int_equal(p[MiB - 1], i + 1);
    assert_int_equal(tarn_ref_unpin(data[i]), 0);
    tarn_ref_release(data[i]);
  }
  tarn_ref_release(extra);
  tarn_ref_release(g);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void data_tasks_wait_for_is_evicted_last(void **state) {
  (void)state;
  evict_while_tasks_wait(TARN_EVICT_CLOCK);
  evict_while_tasks_wait(TARN_EVICT_LARGEST);
}

static int stage_task(tarn_task *t, void *arg) {
  (void)arg;
  const unsigned char *in = tarn_task_data(t, 0);
  unsigned char *out = tarn_task_data(t, 1);
  size_t n = tarn_task_size(t, 1);
  for (size_t i = 0; i < n; i += 4096) out[i] = (unsigned char)(in[i] + 1);
  return 0;
}

/* A chain of K stages, each making a temporary the next reads. Returns the
 * region's peak pool memory. */
static size_t chain_peak(int eager, int stages) {
  tarn_rt *rt = make_rt(2, 0, eager);
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_ref *prev = NULL;
  assert_int_equal(tarn_ref_create(pool, MiB, &prev), 0);
  assert_int_equal(tarn_submit(rt, fill_task, TARN_ARG(1), TARN_W(prev)), 0);
  for (int k = 0; k < stages; k++) {
    tarn_ref *next = NULL;
    assert_int_equal(tarn_ref_create(pool, MiB, &next), 0);
    assert_int_equal(tarn_submit(rt, stage_task, TARN_R(prev), TARN_W(next)),
                     0);
    assert_int_equal(tarn_ref_release(prev), 0); /* its last task is in */
    prev = next;
  }
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), 0);
  unsigned char *p = NULL;
  assert_int_equal(tarn_ref_pin(prev, TARN_READ, 0, (void **)&p), 0);
  assert_int_equal(p[4096], (unsigned char)(1 + stages));
  assert_int_equal(tarn_ref_unpin(prev), 0);
  tarn_ref_release(prev);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  return st.peak_bytes;
}

static void temporaries_are_freed_when_their_last_task_ends(void **state) {
  (void)state;
  enum { stages = 32 };
  size_t eager = chain_peak(1, stages);
  size_t kept = chain_peak(0, stages);
  /* Two temporaries live at once (plus one recycled buffer at most). */
  assert_true(eager <= 3 * MiB);
  assert_true(kept >= stages * MiB);
}

/* A region's peaks cover all of it, also when a region begun inside it
 * (as tarn_matrix_sum and the other waiting calls do), or on another
 * thread, resets the pool's peaks: 4 MiB allocated and freed before the
 * other region still count for the open one. Without the recycling
 * cache, both peaks see it. */

static void *empty_region_thread(void *arg) {
  tarn_region *region = NULL;
  if (tarn_region_begin(arg, &region) == 0) tarn_region_wait(region, NULL);
  return NULL;
}

static void an_inner_region_keeps_the_outer_peak(void **state) {
  (void)state;
  tarn_rt *rt = uncached_rt(1);
  tarn_region *outer = NULL, *inner = NULL;
  assert_int_equal(tarn_region_begin(rt, &outer), 0);
  tarn_ref *big = NULL;
  assert_int_equal(tarn_ref_alloc(tarn_rt_pool(rt), 4 * MiB, 0, &big), 0);
  assert_int_equal(tarn_ref_release(big), 0);
  assert_int_equal(tarn_region_begin(rt, &inner), 0);
  tarn_region_stats in, out;
  assert_int_equal(tarn_region_wait(inner, &in), 0);
  assert_true(in.peak_bytes < 4 * MiB); /* the inner region began after */
  assert_true(in.live_peak_bytes < 4 * MiB);
  assert_int_equal(tarn_region_wait(outer, &out), 0);
  assert_true(out.peak_bytes >= 4 * MiB);
  assert_true(out.live_peak_bytes >= 4 * MiB);
  /* So does a region begun and waited on another thread meanwhile (the
   * outer region reported 0). */
  assert_int_equal(tarn_region_begin(rt, &outer), 0);
  assert_int_equal(tarn_ref_alloc(tarn_rt_pool(rt), 4 * MiB, 0, &big), 0);
  assert_int_equal(tarn_ref_release(big), 0);
  pthread_t other;
  assert_int_equal(pthread_create(&other, NULL, empty_region_thread, rt), 0);
  assert_int_equal(pthread_join(other, NULL), 0);
  assert_int_equal(tarn_region_wait(outer, &out), 0);
  assert_true(out.peak_bytes >= 4 * MiB);
  assert_true(out.live_peak_bytes >= 4 * MiB);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The pool's own peaks (tarn_pool_stats_get) run from the last
 * tarn_pool_peak_reset, whatever regions begin in between: the matrix and
 * linalg calls that wait begin regions of their own, and used to reset
 * them, so a program's peak read after a job showed its last call's. */
static void regions_leave_the_pools_peaks_alone(void **state) {
  (void)state;
  tarn_rt *rt = uncached_rt(1);
  tarn_pool *pool = tarn_rt_pool(rt);
  assert_int_equal(tarn_pool_peak_reset(pool), 0);
  tarn_ref *big = NULL;
  assert_int_equal(tarn_ref_alloc(pool, 4 * MiB, 0, &big), 0);
  assert_int_equal(tarn_ref_release(big), 0);
  tarn_region *region = NULL;
  for (int i = 0; i < 2; i++) { /* one empty region, one with a task */
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    if (i == 1) {
      tarn_ref *small = NULL;
      assert_int_equal(tarn_ref_create(pool, 64, &small), 0);
      assert_int_equal(tarn_submit(rt, zero_task, TARN_W(small)), 0);
      assert_int_equal(tarn_ref_release(small), 0);
    }
    tarn_region_stats rs;
    assert_int_equal(tarn_region_wait(region, &rs), 0);
    assert_true(rs.live_peak_bytes < 4 * MiB); /* the region's own */
  }
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_true(ps.resident_peak >= 4 * MiB);
  assert_true(ps.live_peak >= 4 * MiB);
  assert_true(ps.live_bytes < 4 * MiB);
  /* tarn_pool_peak_reset still resets them. */
  assert_int_equal(tarn_pool_peak_reset(pool), 0);
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_true(ps.resident_peak < 4 * MiB);
  assert_true(ps.live_peak < 4 * MiB);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* 100000 tasks in flight at once, in three rounds: every one runs once,
 * the second and third rounds on the task structs the first left spare
 * (ASan checks that nothing is used after it was freed). */
static void many_tasks_in_flight_run_once_each(void **state) {
  (void)state;
  enum { tasks = 100000 };
  tarn_rt *rt = make_rt(2, 0, 1);
  for (int round = 0; round < 3; round++) {
    atomic_store(&ran_count, 0);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    tarn_ref *r = word_ref(rt, 0);
    for (int i = 0; i < tasks; i++)
      assert_int_equal(tarn_submit(rt, count_task, TARN_R(r)), 0);
    assert_int_equal(tarn_ref_release(r), 0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(region, &st), 0);
    assert_int_equal(atomic_load(&ran_count), tasks);
    assert_int_equal(st.run, tasks);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- backpressure ------------------------------------------------------- */

/* How far past tarn_rt_options.max_unfinished a region may go: the bound
 * is checked every 64 submissions. */
#define BOUND_SLACK 63

static atomic_int slow_ran;

/* Takes 100 us or more (the worker sleeps), so that a program submitting
 * in a loop runs far ahead of it. */
static int slow_counted_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  struct timespec pause = {0, 100000};
  nanosleep(&pause, NULL);
  atomic_fetch_add(&slow_ran, 1);
  return 0;
}

/* Runs once the gate opens. */
static int gated_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  while (!atomic_load(&gate)) sched_yield();
  atomic_fetch_add(&slow_ran, 1);
  return 0;
}

/* Submits `n` tasks of `fn` to a region of a one-worker runtime with
 * bound `max` and returns the most of them seen submitted and not yet run
 * after a submission; opens the gate after the last. Every task runs. */
static int most_unfinished(unsigned max, int n, tarn_task_fn fn) {
  atomic_store(&slow_ran, 0);
  tarn_rt *rt = bounded_rt(1, max);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  int most = 0;
  for (int i = 1; i <= n; i++) {
    assert_int_equal(tarn_submit(rt, fn, TARN_ARG(NULL)), 0);
    int unfinished = i - atomic_load(&slow_ran);
    if (unfinished > most) most = unfinished;
  }
  atomic_store(&gate, 1);
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), 0);
  assert_int_equal(st.run, n);
  assert_int_equal(atomic_load(&slow_ran), n);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  return most;
}

/* A task's arg_free that submits, on a runtime with a bound: the
 * submission goes to the root and is never held back. Its worker was
 * (arg_free runs as the task ends, outside it), waiting for tasks only
 * that worker could run: one worker, 2000 such tasks under a bound of 8
 * hung in about half the runs. */
static tarn_rt *follow_up_rt;
static atomic_int follow_ups_refused;

static void submit_a_follow_up(void *arg) {
  (void)arg;
  if (tarn_submit(follow_up_rt, count_task, TARN_ARG(NULL)) != 0)
    atomic_fetch_add(&follow_ups_refused, 1);
}

static void an_arg_free_that_submits_is_not_held_back(void **state) {
  (void)state;
  atomic_store(&ran_count, 0);
  follow_up_rt = bounded_rt(1, 8);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(follow_up_rt, &region), 0);
  for (int i = 0; i < 2000; i++) {
    tarn_task_desc d = {count_task, NULL, NULL, 0, 0, NULL, submit_a_follow_up};
    assert_int_equal(tarn_task_submit(follow_up_rt, &d), 0);
  }
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(tarn_rt_destroy(follow_up_rt), 0); /* waits for the root */
  assert_int_equal(atomic_load(&follow_ups_refused), 0);
  assert_int_equal(atomic_load(&ran_count), 4000);
}

/* An arg_free may begin a region of its own and wait for it: its tasks
 * belong to that region (they went to the root for a while, and the
 * wait returned before them; found reviewing the change above). On the
 * waiting program thread the program's regions stay out of it. */
static atomic_int own_region_ended, own_region_early, own_region_status;

static int slow_end_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  atomic_store(&own_region_ended, 1);
  return 0;
}

static atomic_int own_destroy_status;

static void wait_for_an_own_region(void *arg) {
  (void)arg;
  /* and the runtime may not be destroyed from here (it hung) */
  atomic_store(&own_destroy_status, tarn_rt_destroy(follow_up_rt));
  atomic_store(&own_region_ended, 0);
  tarn_region *r = NULL;
  int rc = tarn_region_begin(follow_up_rt, &r);
  if (rc == 0) rc = tarn_submit(follow_up_rt, slow_end_task, TARN_ARG(NULL));
  int waited = r != NULL ? tarn_region_wait(r, NULL) : rc;
  if (atomic_load(&own_region_ended) == 0)
    atomic_fetch_add(&own_region_early, 1);
  atomic_store(&own_region_status, rc != 0 ? rc : waited);
}

static void an_arg_free_may_wait_for_its_own_region(void **state) {
  (void)state;
  follow_up_rt = make_rt(2, 0, 1);
  atomic_store(&own_region_early, 0);
  for (int i = 0; i < 5; i++) {
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(follow_up_rt, &region), 0);
    tarn_task_desc d = {
        count_task, NULL, NULL, 0, 0, NULL, wait_for_an_own_region};
    assert_int_equal(tarn_task_submit(follow_up_rt, &d), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    assert_int_equal(atomic_load(&own_region_status), 0);
  }
  assert_int_equal(atomic_load(&own_region_early), 0);
  assert_int_equal(tarn_rt_destroy(follow_up_rt), 0);
}

/* On a runtime of one worker the worker itself runs such a region's
 * tasks: they sit in its own queue, which no other thread takes while it
 * is busy, and its wait slept for ever (a program thread destroying the
 * runtime meanwhile with it). A hang ends in the alarm. */
static void a_lone_workers_arg_free_may_wait_for_its_region(void **state) {
  (void)state;
  alarm(120);
  for (int i = 0; i < 5; i++) {
    follow_up_rt = make_rt(1, 0, 1);
    atomic_store(&own_region_early, 0);
    atomic_store(&own_region_status, 1);
    atomic_store(&own_destroy_status, 1);
    tarn_task_desc d = {
        count_task, NULL, NULL, 0, 0, NULL, wait_for_an_own_region};
    assert_int_equal(tarn_task_submit(follow_up_rt, &d), 0);
    nanosleep(&(struct timespec){0, 50000000}, NULL); /* the worker's */
    assert_int_equal(tarn_rt_destroy(follow_up_rt), 0);
    assert_int_equal(atomic_load(&own_region_status), 0);
    assert_int_equal(atomic_load(&own_region_early), 0);
    assert_int_equal(atomic_load(&own_destroy_status), TARN_EDEADLK);
  }
  alarm(0);
}

/* The arg_free waits above, with the program destroying the runtime
 * meanwhile, tasks of their own, and the successor its task readied
 * (found reviewing the change above):
 * - tarn_rt_destroy drained and retired the region the arg_free waits
 *   for, and the arg_free's wait retired it again: freed twice (or, the
 *   worker finishing its last task, never woken: a hang);
 * - a task run by the waiting worker whose own arg_free submits put that
 *   task into the waiting arg_free's region, not the root;
 * - the successor the ending task readied to run next sat in no queue
 *   while the arg_free waited for a region whose task follows it. */
static atomic_int af_waiting, af_wait_status, af_ran, af_order;
static tarn_ref *af_ref;

static int nap_task(tarn_task *t, void *arg) {
  (void)t;
  nanosleep(&(struct timespec){0, (long)(uintptr_t)arg}, NULL);
  atomic_fetch_add(&af_ran, 1);
  return 0;
}

static void wait_for_eight(void *arg) {
  (void)arg;
  tarn_region *r = NULL;
  int rc = tarn_region_begin(follow_up_rt, &r);
  for (int i = 0; rc == 0 && i < 8; i++)
    rc = tarn_submit(follow_up_rt, nap_task, TARN_ARG((void *)2000000));
  atomic_store(&af_waiting, 1);
  int waited = r != NULL ? tarn_region_wait(r, NULL) : rc;
  atomic_store(&af_wait_status, rc != 0 ? rc : waited);
}

static void a_destroy_waits_for_an_arg_frees_region(void **state) {
  (void)state;
  alarm(120);
  for (int round = 0; round < 20; round++) {
    follow_up_rt = make_rt(1 + round % 2, 0, 0);
    atomic_store(&af_waiting, 0);
    atomic_store(&af_wait_status, 1);
    atomic_store(&af_ran, 0);
    tarn_task_desc d = {nap_task, (void *)1000000, NULL, 0, 0,
                        NULL,     wait_for_eight};
    assert_int_equal(tarn_task_submit(follow_up_rt, &d), 0);
    while (!atomic_load(&af_waiting)) sched_yield();
    assert_int_equal(tarn_rt_destroy(follow_up_rt), 0);
    assert_int_equal(atomic_load(&af_wait_status), 0);
    assert_int_equal(atomic_load(&af_ran), 9);
  }
  alarm(0);
}

static int failing_eio_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return TARN_EIO;
}

static void submit_a_failing_task(void *arg) {
  (void)arg;
  tarn_submit(follow_up_rt, failing_eio_task, TARN_ARG(NULL));
}

static void wait_for_one_and_count(void *arg) {
  tarn_region_stats *st = arg;
  tarn_region *r = NULL;
  int rc = tarn_region_begin(follow_up_rt, &r);
  if (rc == 0)
    rc = tarn_submit(follow_up_rt, nap_task, TARN_ARG((void *)20000000));
  int waited = r != NULL ? tarn_region_wait(r, st) : rc;
  atomic_store(&af_wait_status, rc != 0 ? rc : waited);
}

/* Naps 20 ms; its arg is for its arg_free. */
static int nap_stats_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  return 0;
}

static void a_nested_arg_frees_task_goes_to_the_root(void **state) {
  (void)state;
  follow_up_rt = make_rt(1, 0, 0);
  atomic_store(&af_wait_status, 1);
  static tarn_region_stats st;
  tarn_task_desc outer = {nap_stats_task,        &st, NULL, 0, 0, NULL,
                          wait_for_one_and_count};
  /* higher priority: the waiting worker runs it first, its arg_free
   * nested in the outer one's wait */
  tarn_task_desc inner = {nap_task, (void *)20000000,     NULL, 0, 10,
                          NULL,     submit_a_failing_task};
  assert_int_equal(tarn_task_submit(follow_up_rt, &outer), 0);
  nanosleep(&(struct timespec){0, 5000000}, NULL);
  assert_int_equal(tarn_task_submit(follow_up_rt, &inner), 0);
  /* the failing task went to the root: its error is the destroy's */
  assert_int_equal(tarn_rt_destroy(follow_up_rt), TARN_EIO);
  assert_int_equal(atomic_load(&af_wait_status), 0);
  assert_int_equal(st.submitted, 1);
  assert_int_equal(st.failed, 0);
}

/* Appends its arg, a digit, to af_order. */
static int order_task(tarn_task *t, void *arg) {
  (void)t;
  int was = atomic_load(&af_order);
  atomic_store(&af_order, was * 10 + (int)(uintptr_t)arg);
  return 0;
}

static void wait_for_a_follower(void *arg) {
  (void)arg;
  tarn_region *r = NULL;
  int rc = tarn_region_begin(follow_up_rt, &r);
  if (rc == 0)
    rc = tarn_submit(follow_up_rt, order_task, TARN_W(af_ref),
                     TARN_ARG((void *)2));
  int waited = r != NULL ? tarn_region_wait_timed(r, 5000000000ull, NULL) : rc;
  atomic_store(&af_wait_status, rc != 0 ? rc : waited);
}

static void an_arg_free_may_wait_for_its_tasks_successor(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 2; workers++) {
    follow_up_rt = make_rt(workers, 0, 0);
    assert_int_equal(tarn_ref_alloc(tarn_rt_pool(follow_up_rt), 64, 0, &af_ref),
                     0);
    atomic_store(&af_wait_status, 1);
    atomic_store(&af_order, 0);
    tarn_dep w = {af_ref, TARN_WRITE}, rd = {af_ref, TARN_READ};
    tarn_task_desc t1 = {nap_task, (void *)50000000,   &w, 1, 0,
                         NULL,     wait_for_a_follower};
    tarn_task_desc follower = {order_task, (void *)1, &rd, 1, 0, NULL, NULL};
    assert_int_equal(tarn_task_submit(follow_up_rt, &t1), 0);
    assert_int_equal(tarn_task_submit(follow_up_rt, &follower), 0);
    assert_int_equal(tarn_ref_release(af_ref), 0);
    assert_int_equal(tarn_rt_destroy(follow_up_rt), 0);
    assert_int_equal(atomic_load(&af_wait_status), 0); /* not timed out */
    assert_int_equal(atomic_load(&af_order), 12);      /* 1, then 2 */
  }
}

static void a_flood_of_submissions_is_held_back(void **state) {
  (void)state;
  enum { tasks = 3000, bound = 256 };
  /* Tasks of 100 us, submitted in well under a microsecond each: the
   * program waits for some whenever 256 are unfinished. */
  atomic_store(&gate, 1);
  int most = most_unfinished(bound, tasks, slow_counted_task);
  assert_true(most <= bound + BOUND_SLACK);
  /* Without a bound every task of the loop is in flight at once (here
   * behind a gate, which a bounded program could never open). */
  atomic_store(&gate, 0);
  assert_int_equal(most_unfinished(0, tasks, gated_task), tasks);
}

/* Submits one child per word of its array of 8-byte refs. */
static int spawning_task(tarn_task *t, void *arg) {
  tarn_ref *const *refs = arg;
  for (int i = 0; i < 1000; i++) {
    int rc = tarn_submit(tarn_task_rt(t), child_task_rw, TARN_RW(refs[i % 4]));
    if (rc != 0) return rc;
  }
  return 0;
}

static void tasks_that_submit_are_never_held_back(void **state) {
  (void)state;
  /* One worker runs the parent: held back until its children ran, it
   * would wait for itself. */
  tarn_rt *rt = bounded_rt(1, 64);
  assert_int_equal(run_parent(rt, spawning_task, 4, 250).run, 1001);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

struct flood {
  tarn_rt *rt;
  int tasks;
};

/* Submits f->tasks counting tasks outside any region. */
static void *flood_thread(void *arg) {
  const struct flood *f = arg;
  for (int i = 0; i < f->tasks; i++)
    if (tarn_submit(f->rt, count_task, TARN_ARG(NULL)) != 0) return arg;
  return NULL;
}

static void threads_held_back_together_all_go_on(void **state) {
  (void)state;
  /* Four threads share the root region's bound: each sleeps for its own
   * count of finished tasks, and none may miss its wake-up. */
  enum { threads = 4, tasks = 5000 };
  atomic_store(&ran_count, 0);
  tarn_rt *rt = bounded_rt(2, 64);
  struct flood f = {rt, tasks};
  pthread_t th[threads];
  for (int i = 0; i < threads; i++)
    assert_int_equal(pthread_create(&th[i], NULL, flood_thread, &f), 0);
  for (int i = 0; i < threads; i++) {
    void *failed = &f;
    assert_int_equal(pthread_join(th[i], &failed), 0);
    assert_null(failed);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(atomic_load(&ran_count), threads * tasks);
}

/* ---- bad input and idleness --------------------------------------------- */

static void bad_submissions_are_refused(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(1, 0, 1), *other = make_rt(1, 0, 1);
  tarn_ref *x = word_ref(rt, 0), *foreign = word_ref(other, 0);
  tarn_task_desc d = {.fn = NULL};
  assert_int_equal(tarn_task_submit(rt, &d), TARN_EINVAL);
  assert_int_equal(tarn_task_submit(NULL, &d), TARN_EINVAL);
  assert_int_equal(tarn_submit(rt, count_task, TARN_R(NULL)), TARN_EINVAL);
  assert_int_equal(tarn_submit(rt, count_task, TARN_R(foreign)), TARN_EINVAL);
  tarn_dep bad_mode = {x, (tarn_access)7};
  tarn_task_desc d2 = {.fn = count_task, .deps = &bad_mode, .ndeps = 1};
  assert_int_equal(tarn_task_submit(rt, &d2), TARN_EINVAL);
  /* An item of no known kind. */
  assert_int_equal(
      tarn_submit(rt, count_task, TARN_R(x), ((tarn_item){99, NULL, NULL, 0})),
      TARN_EINVAL);
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  assert_int_equal(st.submitted, 0);
  /* A named task is an ordinary one. */
  atomic_store(&ran_count, 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, count_task, TARN_NAME("count"), TARN_R(x)),
                   0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(atomic_load(&ran_count), 1);
  tarn_ref_release(x);
  tarn_ref_release(foreign);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(other), 0);
  setenv("TARN_WORKERS", "zero", 1);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), TARN_EINVAL);
  tarn_rt *none = NULL;
  assert_int_equal(tarn_rt_create(NULL, &none), TARN_EINVAL);
  assert_null(none);
  setenv("TARN_WORKERS", "3", 1);
  assert_int_equal(tarn_rt_options_init(&o), 0);
  assert_int_equal(o.workers, 3);
  /* NULL options are the defaults. */
  tarn_rt *rt3 = NULL;
  assert_int_equal(tarn_rt_create(NULL, &rt3), 0);
  assert_int_equal(tarn_rt_workers(rt3), 3);
  assert_int_equal(tarn_rt_destroy(rt3), 0);
  unsetenv("TARN_WORKERS");
  assert_int_equal(tarn_rt_workers(NULL), 0);
  /* Options out of range, and no place for the handle. */
  tarn_rt_options bad = o;
  bad.workers = 0;
  assert_int_equal(tarn_rt_create(&bad, &none), TARN_EINVAL);
  bad.workers = 1025;
  assert_int_equal(tarn_rt_create(&bad, &none), TARN_EINVAL);
  bad = o;
  bad.scratch_bytes = 0;
  assert_int_equal(tarn_rt_create(&bad, &none), TARN_EINVAL);
  assert_int_equal(tarn_rt_create(&o, NULL), TARN_EINVAL);
  assert_null(none);
}

/* ---- tasks of many accesses ---------------------------------------------- */

enum { wide_refs = 600, wide_tasks = 50, wide_max = 200 };

/* A task of 1 to wide_max accesses drawn with repeats from wide_refs refs,
 * each a read, a write, both or TARN_AFTER; `slot_ref` and `slot_mode`: its
 * slots as rt.h states them (one per ref, in the order of first access,
 * the modes merged; TARN_AFTER alone: no bits, never pinned). */
struct wtask {
  uint64_t id;
  size_t ndeps, nslots;
  int which[wide_max];
  tarn_access mode[wide_max];
  int slot_ref[wide_max];
  tarn_access slot_mode[wide_max];
};

static void random_wtask(struct wtask *t, uint64_t id, uint64_t *seed) {
  t->id = id;
  /* half of them few, half many: the runtime matches a few by scans and
   * many by sorting */
  t->ndeps = 1 + rng(seed) % (rng(seed) % 2 ? 24 : wide_max);
  t->nslots = 0;
  for (size_t i = 0; i < t->ndeps; i++) {
    t->which[i] = (int)(rng(seed) % wide_refs);
    unsigned m = (unsigned)(rng(seed) % 4);
    t->mode[i] = m == 0 ? TARN_AFTER : (tarn_access)m;
    size_t k = 0;
    while (k < t->nslots && t->slot_ref[k] != t->which[i]) k++;
    if (k == t->nslots) {
      t->slot_ref[k] = t->which[i];
      t->slot_mode[k] = 0;
      t->nslots++;
    }
    if (t->mode[i] != TARN_AFTER) t->slot_mode[k] |= t->mode[i];
  }
}

/* apply over a task's slots, with their merged modes. */
static void wide_apply(const struct wtask *g, uint64_t **v) {
  apply_modes(g->id, g->nslots, g->slot_mode, v);
}

/* Fails unless the task has nslots slots, those of TARN_AFTER alone
 * unpinned (NULL), the others pinned, each read one its ref's (its mark). */
static int wide_task(tarn_task *t, void *arg) {
  const struct wtask *g = arg;
  uint64_t *v[wide_max];
  if (tarn_task_data(t, g->nslots) != NULL) return -1;
  for (size_t k = 0; k < g->nslots; k++) {
    v[k] = tarn_task_data(t, k);
    if ((v[k] == NULL) != (g->slot_mode[k] == 0)) return -2;
    if (g->slot_mode[k] & TARN_READ &&
        *v[k] >> 32 != (uint64_t)g->slot_ref[k] + 1)
      return -3; /* a write alone may find any bytes (tarn_ref_pin) */
  }
  wide_apply(g, v);
  for (size_t k = 0; k < g->nslots; k++) /* keep the ref's mark */
    if (v[k] != NULL && g->slot_mode[k] & TARN_WRITE)
      *v[k] = (*v[k] & 0xffffffffu) | ((uint64_t)g->slot_ref[k] + 1) << 32;
  return 0;
}

/* One random graph of wide_tasks tasks of up to wide_max accesses, with
 * repeated refs among them, on refs of `bytes`, against the sequential
 * order: each task sees its slots as rt.h states them (checked in
 * wide_task), and every ref's value is the sequential one, so the tasks
 * ran in an order the merged accesses allow. The high word of a ref's
 * value is its mark, the low its value. */
static void one_wide_graph(tarn_rt *rt, size_t bytes, uint64_t x) {
  static struct wtask g[wide_tasks];
  static uint64_t expect[wide_refs];
  static tarn_ref *refs[wide_refs];
  for (int r = 0; r < wide_refs; r++) {
    expect[r] = ((uint64_t)r + 1) << 32 | (uint64_t)r;
    refs[r] = sized_word_ref(rt, expect[r], bytes);
  }
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int k = 0; k < wide_tasks; k++) {
    struct wtask *t = &g[k];
    random_wtask(t, x * 1000 + (uint64_t)k, &x);
    submit_drawn(rt, wide_task, t, refs, t->which, t->mode, t->ndeps);
    uint64_t low[wide_max], *v[wide_max];
    for (size_t s = 0; s < t->nslots; s++) {
      low[s] = expect[t->slot_ref[s]] & 0xffffffffu;
      v[s] = &low[s];
    }
    wide_apply(t, v); /* the sequential reference */
    for (size_t s = 0; s < t->nslots; s++)
      expect[t->slot_ref[s]] =
          (low[s] & 0xffffffffu) | ((uint64_t)t->slot_ref[s] + 1) << 32;
  }
  tarn_region_stats st;
  assert_int_equal(tarn_region_wait(region, &st), 0);
  assert_int_equal(st.run, wide_tasks);
  for (int r = 0; r < wide_refs; r++) {
    assert_int_equal(word_of(refs[r]), expect[r]);
    assert_int_equal(tarn_ref_release(refs[r]), 0);
  }
}

/* Without a limit, and under one that holds a third of the refs (pages),
 * where they spill and are read back as the merged modes say (a write
 * alone reads nothing back, a read alone writes nothing out). */
static void tasks_of_many_accesses_match_sequential_order(void **state) {
  (void)state;
  const unsigned workers[] = {1, 2, 4};
  const size_t page = 4096;
  for (size_t w = 0; w < 3; w++) {
    tarn_rt *rt = make_rt(workers[w], 0, 1);
    for (uint64_t seed = 1; seed <= 12; seed++)
      one_wide_graph(rt, sizeof(uint64_t), seed * 104729 + w);
    assert_int_equal(tarn_rt_destroy(rt), 0);
    rt = make_rt(workers[w], wide_refs / 3 * page, 1);
    for (uint64_t seed = 1; seed <= 4; seed++)
      one_wide_graph(rt, page, seed * 7727 + w);
    tarn_pool_stats ps;
    assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
    assert_true(ps.spills > 0 && ps.restores > 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A bad access anywhere among many (a NULL ref, a ref of another
 * runtime's pool, an unknown mode) fails the submission with TARN_EINVAL
 * before anything is tracked: the task never runs, no ref is held or
 * ordered behind it, and a later writer of the same refs runs at once. */
static void a_bad_access_among_many_submits_nothing(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1), *other = make_rt(1, 0, 1);
  enum { n = 100 };
  tarn_ref *refs[n], *foreign = word_ref(other, 1);
  for (int r = 0; r < n; r++) refs[r] = word_ref(rt, (uint64_t)r);
  tarn_dep deps[3 * n];
  for (int bad = 0; bad < 3; bad++) {
    for (size_t i = 0; i < 3 * n; i++) /* every ref three times */
      deps[i] = (tarn_dep){refs[(i * 7) % n], (tarn_access)(1 + i % 3)};
    size_t at = bad == 0 ? 3 * n - 1 : bad == 1 ? 150 : 40;
    if (bad == 0) deps[at].ref = NULL;
    if (bad == 1) deps[at].ref = foreign;
    if (bad == 2) deps[at].mode = (tarn_access)9;
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    tarn_task_desc d = {
        .fn = fail_task, .arg = NULL, .deps = deps, .ndeps = 3 * n};
    assert_int_equal(tarn_task_submit(rt, &d), TARN_EINVAL);
    for (int r = 0; r < n; r++)
      assert_int_equal(tarn_submit(rt, add_one, TARN_RW(refs[r])), 0);
    tarn_region_stats st;
    assert_int_equal(tarn_region_wait(region, &st), 0);
    assert_int_equal(st.submitted, n);
    assert_int_equal(st.failed, 0);
  }
  for (int r = 0; r < n; r++) {
    assert_int_equal(word_of(refs[r]), (uint64_t)r + 3);
    assert_int_equal(tarn_ref_release(refs[r]), 0);
  }
  assert_int_equal(tarn_ref_release(foreign), 0);
  assert_int_equal(tarn_rt_destroy(other), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Program threads that submit tasks of few and many accesses to the same
 * refs, each task in an order of its own: a task's refs are locked in one
 * order whatever the order of its accesses (the refs' addresses), so no
 * two submissions wait for each other in a cycle, and every task runs
 * once. (With the tasks of more than 32 accesses locked in the order of
 * their accesses, the threads deadlocked here in three runs of three: a
 * hang until the test's timeout.) */
enum { shared_refs = 40, wide_threads = 4, wide_rounds = 5000 };

struct wide_submitter {
  tarn_rt *rt;
  tarn_ref **refs;
  uint64_t seed;
  uint64_t counts[shared_refs]; /* the tasks each ref was in */
  int rc;
};

static int add_one_to_each(tarn_task *t, void *arg) {
  size_t n = (size_t)(uintptr_t)arg;
  for (size_t k = 0; k < n; k++) *(uint64_t *)tarn_task_data(t, k) += 1;
  return 0;
}

static void *wide_submissions(void *arg) {
  struct wide_submitter *s = arg;
  tarn_region *region = NULL;
  s->rc = tarn_region_begin(s->rt, &region);
  for (int round = 0; round < wide_rounds && s->rc == 0; round++) {
    int order[shared_refs];
    for (int i = 0; i < shared_refs; i++) order[i] = i;
    for (int i = shared_refs - 1; i > 0; i--) {
      int j = (int)(rng(&s->seed) % (uint64_t)(i + 1)), o = order[i];
      order[i] = order[j];
      order[j] = o;
    }
    /* one in four scanned by the runtime (32 or fewer), the others
     * sorted */
    size_t n = round % 4 != 0 ? 33 + rng(&s->seed) % (shared_refs - 32)
                              : 1 + rng(&s->seed) % 32;
    tarn_dep deps[shared_refs];
    for (size_t k = 0; k < n; k++) {
      deps[k] = (tarn_dep){s->refs[order[k]], TARN_READ_WRITE};
      s->counts[order[k]]++;
    }
    s->rc =
        tarn_task_submit(s->rt, &(tarn_task_desc){.fn = add_one_to_each,
                                                  .arg = (void *)(uintptr_t)n,
                                                  .deps = deps,
                                                  .ndeps = n});
  }
  int rc = region != NULL ? tarn_region_wait(region, NULL) : 0;
  if (s->rc == 0) s->rc = rc;
  return NULL;
}

static void threads_submitting_many_accesses_never_deadlock(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *refs[shared_refs];
  for (int r = 0; r < shared_refs; r++) refs[r] = word_ref(rt, 0);
  static struct wide_submitter s[wide_threads];
  pthread_t th[wide_threads];
  for (int i = 0; i < wide_threads; i++) {
    s[i] = (struct wide_submitter){.rt = rt, .refs = refs, .seed = 77 + i};
    assert_int_equal(pthread_create(&th[i], NULL, wide_submissions, &s[i]), 0);
  }
  for (int i = 0; i < wide_threads; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(s[i].rc, 0);
  }
  for (int r = 0; r < shared_refs; r++) {
    uint64_t expect = 0;
    for (int i = 0; i < wide_threads; i++) expect += s[i].counts[r];
    assert_int_equal(word_of(refs[r]), expect);
    assert_int_equal(tarn_ref_release(refs[r]), 0);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int seen_modes(tarn_task *t, void *arg) {
  (void)arg;
  return tarn_task_data(t, 0) != NULL && tarn_task_data(t, 1) == NULL ? 0 : -1;
}

static void one_ref_twice_is_one_access(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 1);
  tarn_ref *x = word_ref(rt, 5);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, seen_modes, TARN_R(x), TARN_W(x)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  tarn_ref_release(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void idle_workers_sleep(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(4, 0, 1);
  struct timespec settle = {0, 50000000};
  nanosleep(&settle, NULL);
  double before = cpu_seconds();
  struct timespec idle = {0, 300000000};
  nanosleep(&idle, NULL);
  double used = cpu_seconds() - before;
  assert_true(used < 0.1); /* four spinning workers would use 1.2 s */
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* TARN_AFTER: what an after-task saw and when it ran. */
struct after_log {
  atomic_int step;  /* bumped by each task, in the order they run */
  int after_at;     /* step at which the after-task ran */
  void *after_data; /* tarn_task_data it got */
  int writer_saw;   /* step the later writer saw when it ran */
};

static int log_write_task(tarn_task *t, void *arg) {
  struct after_log *log = arg;
  memset(tarn_task_data(t, 0), 5, tarn_task_size(t, 0));
  log->writer_saw = atomic_fetch_add(&log->step, 1);
  return 0;
}

static int log_after_task(tarn_task *t, void *arg) {
  struct after_log *log = arg;
  struct timespec ts = {0, 2000000}; /* a later writer must wait for this */
  nanosleep(&ts, NULL);
  log->after_data = tarn_task_data(t, 0);
  log->after_at = atomic_fetch_add(&log->step, 1);
  return 0;
}

static int fail_write_task(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return -77;
}

/* Two readers of x, of priorities 10 and 0, wait for its writer; they
 * become ready at once when it ends, and on one worker the higher runs
 * first. Until 2026-12-05 the worker took the first successor it readied,
 * the last submitted: the 0 ran first every time. */
static atomic_int prio_count;
static int prio_log[2];

static int prio_record(tarn_task *t, void *arg) {
  (void)t;
  int k = atomic_fetch_add(&prio_count, 1);
  if (k < 2) prio_log[k] = (int)(intptr_t)arg;
  return 0;
}

static void successors_readied_together_run_by_priority(void **state) {
  (void)state;
  for (int round = 0; round < 10; round++) {
    tarn_rt *rt = make_rt(1, 0, 0);
    tarn_ref *x = word_ref(rt, 0);
    atomic_store(&hold_open, 0);
    atomic_store(&prio_count, 0);
    assert_int_equal(tarn_submit(rt, hold_task, TARN_W(x)), 0);
    assert_int_equal(tarn_submit(rt, prio_record, TARN_ARG((intptr_t)10),
                                 TARN_R(x), TARN_PRIORITY(10)),
                     0);
    assert_int_equal(tarn_submit(rt, prio_record, TARN_ARG((intptr_t)0),
                                 TARN_R(x), TARN_PRIORITY(0)),
                     0);
    atomic_store(&hold_open, 1);
    /* Both ran before the destroy: a waiting thread runs tasks of idle
     * workers too, and could take the second between the worker's
     * readying it and its next look at its queue (seen once, under
     * ThreadSanitizer: the low one logged first). */
    for (int waits = 0; atomic_load(&prio_count) < 2 && waits < 10000; waits++)
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    tarn_ref_release(x);
    assert_int_equal(tarn_rt_destroy(rt), 0);
    assert_int_equal(atomic_load(&prio_count), 2);
    assert_int_equal(prio_log[0], 10);
    assert_int_equal(prio_log[1], 0);
  }
}

/* A TARN_AFTER access orders the task as a reader (after the writer
 * before it, before the writer after it; cancelled by a failed writer)
 * without pinning the ref: a spilled ref is not read back for it. */
static void an_after_access_orders_without_pinning(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 2 * MiB, 1);
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_ref *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_ref_create(pool, MiB, &a), 0);
  assert_int_equal(tarn_ref_create(pool, MiB, &b), 0);
  assert_int_equal(tarn_ref_create(pool, MiB, &c), 0);
  struct after_log log = {.after_at = -1, .writer_saw = -1};
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_dep wa = {a, TARN_WRITE}, aa = {a, TARN_AFTER};
  tarn_task_desc write_a = {
      .fn = log_write_task, .arg = &log, .deps = &wa, .ndeps = 1};
  tarn_task_desc after_a = {
      .fn = log_after_task, .arg = &log, .deps = &aa, .ndeps = 1};
  assert_int_equal(tarn_task_submit(rt, &write_a), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  /* x takes the whole limit: a goes to the spill file. */
  tarn_region_stats st;
  tarn_ref *x = NULL;
  assert_int_equal(tarn_ref_create(pool, 2 * MiB, &x), 0);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, fill_task, TARN_ARG((intptr_t)1), TARN_W(x)),
                   0);
  assert_int_equal(tarn_region_wait(region, &st), 0);
  tarn_ref_release(x);
  assert_false(tarn_ref_is_resident(a));
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  uint64_t read = ps.bytes_read, restores = ps.restores;
  atomic_store(&log.step, 0);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &after_a), 0);
  assert_int_equal(tarn_task_submit(rt, &write_a), 0); /* waits for it */
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(log.after_at, 0);
  assert_int_equal(log.writer_saw, 1);
  assert_null(log.after_data);
  assert_int_equal(tarn_pool_stats_get(pool, &ps), 0);
  assert_int_equal(ps.bytes_read, read); /* the write pin reads nothing */
  assert_int_equal(ps.restores, restores);
  /* After a failed writer: cancelled, as a reader would be. */
  log.after_at = -1;
  tarn_dep wb = {b, TARN_WRITE}, ab = {b, TARN_AFTER};
  tarn_task_desc fail_b = {.fn = fail_write_task, .deps = &wb, .ndeps = 1};
  tarn_task_desc after_b = {
      .fn = log_after_task, .arg = &log, .deps = &ab, .ndeps = 1};
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &fail_b), 0);
  assert_int_equal(tarn_task_submit(rt, &after_b), 0);
  assert_int_equal(tarn_region_wait(region, &st), -77);
  assert_int_equal(st.cancelled, 1);
  assert_int_equal(log.after_at, -1);
  /* With a write of the same ref in the task, the write decides: after a
   * failed writer it runs and writes b (until 2026-12-05 the two made a
   * read-write, which was cancelled) */
  tarn_dep after_write[] = {{b, TARN_AFTER}, {b, TARN_WRITE}};
  tarn_task_desc fill_b = {.fn = fill_task,
                           .arg = (void *)(intptr_t)5,
                           .deps = after_write,
                           .ndeps = 2};
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &fail_b), 0);
  assert_int_equal(tarn_task_submit(rt, &fill_b), 0);
  assert_int_equal(tarn_region_wait(region, &st), -77);
  assert_int_equal(st.cancelled, 0);
  assert_int_equal(word_of(b), 0x0505050505050505u);
  /* With a read of the same ref in the task, the ref is pinned. */
  tarn_dep both[] = {{c, TARN_AFTER}, {c, TARN_READ}};
  tarn_task_desc after_c = {
      .fn = log_after_task, .arg = &log, .deps = both, .ndeps = 2};
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &after_c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_non_null(log.after_data);
  /* Modes other than the four are refused. */
  tarn_dep bad = {c, (tarn_access)5};
  tarn_task_desc bad_c = {
      .fn = log_after_task, .arg = &log, .deps = &bad, .ndeps = 1};
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_task_submit(rt, &bad_c), TARN_EINVAL);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  tarn_ref_release(a);
  tarn_ref_release(b);
  tarn_ref_release(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* tarn_rt_stats_get is a snapshot in which no task has ended before it
 * was submitted: polled while two threads submit empty tasks, run +
 * cancelled and failed never pass submitted (submitted was read first, so
 * tasks submitted and run while the workers' counts were added showed up
 * in run alone: run passed submitted by tens of thousands, and the
 * unsigned submitted - run a program reports as progress wrapped). */
struct stats_submitter {
  tarn_rt *rt;
  atomic_bool *stop;
};

static void *submit_until_stopped(void *arg) {
  struct stats_submitter *s = arg;
  while (!atomic_load(s->stop)) {
    tarn_region *r = NULL;
    if (tarn_region_begin(s->rt, &r) != 0) break;
    for (int i = 0; i < 200; i++) {
      tarn_task_desc d = {.fn = nothing_task};
      if (tarn_task_submit(s->rt, &d) != 0) break;
    }
    tarn_region_wait(r, NULL);
  }
  return NULL;
}

static void stats_never_show_a_task_run_before_submitted(void **state) {
  (void)state;
  tarn_rt *rt = make_rt(2, 0, 0);
  atomic_bool stop = false;
  struct stats_submitter s = {rt, &stop};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, submit_until_stopped, &s), 0);
  uint64_t polls = 0, bad = 0, last = 0;
  while (last < 100000) {
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
    if (st.run + st.cancelled > st.submitted || st.failed > st.submitted) bad++;
    assert_true(st.submitted >= last); /* and the counts only grow */
    last = st.submitted;
    polls++;
  }
  atomic_store(&stop, true);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  assert_int_equal(st.run, st.submitted); /* all waited */
  assert_true(polls > 0);
  assert_int_equal(bad, 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  /* These tests state what the defaults are and set the variables they
   * test themselves; a TARN_WORKERS or TARN_MAX_UNFINISHED from the shell
   * would change the runtimes they make (a bound on unfinished tasks
   * holds back the 100000 submissions queued behind a held task for
   * good, as rt.h warns), so the runtime's variables start unset. */
  static const char *const runtime_variables[] = {
      "TARN_WORKERS", "TARN_PIN_WORKERS", "TARN_IDLE_TRIM_MS",
      "TARN_MAX_UNFINISHED", "TARN_WORK_TILE"};
  for (size_t i = 0; i < sizeof runtime_variables / sizeof *runtime_variables;
       i++)
    unsetenv(runtime_variables[i]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_graphs_match_sequential_order),
      cmocka_unit_test(
          random_graphs_under_a_tight_limit_match_sequential_order),
      cmocka_unit_test(the_most_one_task_pinned_is_counted),
      cmocka_unit_test(refs_released_mid_graph_live_as_long_as_their_tasks),
      cmocka_unit_test(tasks_run_right_on_the_waiting_thread),
      cmocka_unit_test(a_lone_task_runs_before_its_wait),
      cmocka_unit_test(a_spare_processor_lets_the_waiter_run_lone_tasks),
      cmocka_unit_test(lone_tasks_of_many_threads_run_once_each),
      cmocka_unit_test(a_ref_read_again_and_again_keeps_no_tasks),
      cmocka_unit_test(long_tasks_stay_off_the_waiting_thread),
      cmocka_unit_test(
          fifth_of_a_millisecond_tasks_stay_off_the_waiting_thread),
      cmocka_unit_test(workers_are_pinned_one_per_processor),
      cmocka_unit_test(idle_trim_ms_comes_from_the_environment),
      cmocka_unit_test(the_environment_check_names_a_bad_variable),
      cmocka_unit_test(a_failure_cancels_its_dependants_only),
      cmocka_unit_test(a_failed_reader_leaves_its_inputs_writable),
      cmocka_unit_test(
          random_failures_cancel_exactly_the_readers_of_their_data),
      cmocka_unit_test(task_args_are_freed_whatever_happens),
      cmocka_unit_test(tasks_submit_tasks_into_their_region),
      cmocka_unit_test(waiting_from_a_task_is_refused),
      cmocka_unit_test(destroy_waits_for_work_in_flight),
      cmocka_unit_test(destroy_drains_regions_never_waited),
      cmocka_unit_test(a_destroyed_runtime_is_refused),
      cmocka_unit_test(a_runtimes_pool_is_not_the_programs_to_destroy),
      cmocka_unit_test(destroying_from_a_task_is_refused),
      cmocka_unit_test(submitters_on_shared_refs_agree_on_an_order),
      cmocka_unit_test(higher_priorities_run_first),
      cmocka_unit_test(queued_tasks_run_by_priority_then_submission),
      cmocka_unit_test(scratch_is_reset_when_a_task_ends),
      cmocka_unit_test(scratch_stays_whole_over_many_tasks),
      cmocka_unit_test(a_task_may_take_all_of_its_scratch),
      cmocka_unit_test(scratch_goes_back_when_the_workers_rest),
      cmocka_unit_test(a_runtime_told_not_to_trim_keeps_its_pages),
      cmocka_unit_test(task_sized_scratch_stays_through_a_rest),
      cmocka_unit_test(freed_memory_goes_back_when_the_workers_rest),
      cmocka_unit_test(the_pool_cache_goes_back_when_the_workers_rest),
      cmocka_unit_test(a_program_working_in_bursts_keeps_its_memory),
      cmocka_unit_test(ended_tasks_go_back_when_the_workers_rest),
      cmocka_unit_test(a_rest_trims_the_heap_only_after_tarn_freed_to_it),
      cmocka_unit_test(bursts_go_on_while_rests_give_task_structs_back),
      cmocka_unit_test(spill_space_goes_back_when_the_workers_rest),
      cmocka_unit_test(a_limit_below_the_data_holds_tasks_back),
      cmocka_unit_test(a_running_task_reads_ahead_for_its_successor),
      cmocka_unit_test(tasks_waiting_for_memory_read_their_inputs_about_once),
      cmocka_unit_test(an_output_pinned_by_a_waiting_task_holds_nothing),
      cmocka_unit_test(a_read_ahead_leaves_data_tasks_wait_for),
      cmocka_unit_test(eviction_takes_the_data_used_last),
      cmocka_unit_test(tasks_waiting_for_memory_can_be_cancelled),
      cmocka_unit_test(an_after_access_orders_without_pinning),
      cmocka_unit_test(a_task_that_never_fits_fails_with_enomem),
      cmocka_unit_test(a_task_whose_outputs_never_fit_fails_with_enomem),
      cmocka_unit_test(data_tasks_wait_for_is_evicted_last),
      cmocka_unit_test(temporaries_are_freed_when_their_last_task_ends),
      cmocka_unit_test(an_inner_region_keeps_the_outer_peak),
      cmocka_unit_test(regions_leave_the_pools_peaks_alone),
      cmocka_unit_test(many_tasks_in_flight_run_once_each),
      cmocka_unit_test(a_flood_of_submissions_is_held_back),
      cmocka_unit_test(an_arg_free_that_submits_is_not_held_back),
      cmocka_unit_test(an_arg_free_may_wait_for_its_own_region),
      cmocka_unit_test(a_lone_workers_arg_free_may_wait_for_its_region),
      cmocka_unit_test(a_destroy_waits_for_an_arg_frees_region),
      cmocka_unit_test(a_nested_arg_frees_task_goes_to_the_root),
      cmocka_unit_test(an_arg_free_may_wait_for_its_tasks_successor),
      cmocka_unit_test(tasks_that_submit_are_never_held_back),
      cmocka_unit_test(threads_held_back_together_all_go_on),
      cmocka_unit_test(max_unfinished_comes_from_the_environment),
      cmocka_unit_test(work_tile_comes_from_the_environment),
      cmocka_unit_test(bad_submissions_are_refused),
      cmocka_unit_test(one_ref_twice_is_one_access),
      cmocka_unit_test(tasks_of_many_accesses_match_sequential_order),
      cmocka_unit_test(a_bad_access_among_many_submits_nothing),
      cmocka_unit_test(threads_submitting_many_accesses_never_deadlock),
      cmocka_unit_test(successors_readied_together_run_by_priority),
      cmocka_unit_test(idle_workers_sleep),
      cmocka_unit_test(a_task_submits_to_another_runtimes_root),
      cmocka_unit_test(stats_never_show_a_task_run_before_submitted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
