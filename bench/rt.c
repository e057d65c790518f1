/* rt.c: the `rt` suite of `tarn bench`: the task runtime's per-task
 * overhead side by side with OpenMP tasks and StarPU (rt_peers.h), for 1
 * and 2 workers: empty tasks without data, and a chain of read-write tasks
 * on one 8-byte ref. Then tarn alone on two graphs, in tasks per second: a
 * fan-out/fan-in (one writer, FAN_K readers each writing its own ref, one
 * task reading all of them; repeated) and a random graph of RANDOM_TASKS
 * tasks over RANDOM_REFS refs with random modes; tasks that each read
 * all RANDOM_REFS refs (the cost of a task of many accesses, per task);
 * and FLOOD_TASKS empty
 * tasks submitted in one region, with the most seen unfinished after the
 * last submission, without a bound and with max_unfinished FLOOD_BOUND. And the
 * cost of a small region whose one task shares its work
 * (tarn_task_parallel_for): a SHARED_N x SHARED_N block of doubles set to a
 * value, one region per rep, against an OpenMP parallel for over the same
 * columns (no goal: it shows the per-region cost that the N=256 array and
 * stencil rows pay). Ends with the goals, checked against the medians of the
 * run. A sample is one region: submit, then tarn_region_wait (the shared rows:
 * reps regions). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rt_peers.h"
#include "tarn.h"

#define FAN_K 16
#define RANDOM_REFS 1000
#define RANDOM_TASKS 1000000 /* per sample */
#define FLOOD_TASKS 300000   /* per sample */
#define FLOOD_BOUND 65536    /* max_unfinished of the bounded flood */
#define MAX_WORKERS 2
#define SAMPLE_TARGET_S 0.045
#define SAMPLE_MIN_S 0.025
#define SAMPLE_MAX_S 0.100
#define CALIBRATE_TRIES 8
#define SHARED_N 256 /* the shared region's block: SHARED_N^2 doubles */
#define SHARED_GRAIN 16

enum { PEER_TARN, PEER_OPENMP, PEER_STARPU, PEER_COUNT };
static const char *const peer_names[PEER_COUNT] = {"tarn", "openmp", "starpu"};

/* Median us per task of the chain, by peer and worker count; -1: none. */
struct figures {
  double chain_us[PEER_COUNT][MAX_WORKERS + 1];
};

/* A runtime and the refs of every tarn benchmark, made outside the clock. */
struct tarn_bench {
  tarn_rt *rt;
  tarn_pool *pool;
  tarn_ref *counter;                /* the chain's ref */
  uint64_t counted;                 /* chain tasks run on it so far */
  tarn_ref *src, *out[FAN_K], *sum; /* the fan-out/fan-in's refs */
  uint64_t rounds;                  /* fan-out/fan-in rounds run so far */
  tarn_ref *refs[RANDOM_REFS];      /* the random graph's refs */
  uint64_t rng;
  tarn_ref *block;         /* the shared region's block */
  double *most_unfinished; /* the flood's figure */
  uint64_t stamp;          /* the value its last region wrote */
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("rt", what, status);
}

/* Calibrates, then runs fn until a call lands within [SAMPLE_MIN_S,
 * SAMPLE_MAX_S], rescaling *reps after each (a runtime's first calls can
 * stall on waking its threads); the last call is the warm-up. */
static int calibrate(bench_fn fn, void *arg, uint64_t *reps) {
  if (bench_calibrate(fn, arg, SAMPLE_TARGET_S, reps) != 0) return 1;
  for (int i = 0; i < CALIBRATE_TRIES; i++) {
    double t = 0;
    if (fn(arg, *reps, &t) != 0) return 1;
    if (t >= SAMPLE_MIN_S && t <= SAMPLE_MAX_S) return 0;
    double scaled = (double)*reps * SAMPLE_TARGET_S / (t > 0 ? t : 1e-9);
    if (scaled > 4.0 * (double)*reps) scaled = 4.0 * (double)*reps;
    *reps = scaled < 1 ? 1 : (uint64_t)scaled;
  }
  return 0;
}

/* Calibrates, warms up and takes the run's samples of fn. */
static int measure(bench_run *run, bench_fn fn, void *arg, uint64_t *reps,
                   double *samples) {
  if (calibrate(fn, arg, reps) != 0) return 1;
  for (size_t i = 0; i < run->samples; i++)
    if (fn(arg, *reps, &samples[i]) != 0) return 1;
  return 0;
}

static void row_name(char *buf, size_t size, int peer, const char *what,
                     unsigned workers) {
  snprintf(buf, size, "rt/%s/%s (%u worker%s)", peer_names[peer], what, workers,
           workers == 1 ? "" : "s");
}

/* Measures fn and reports it with `per` (us per rep) and `count` (reps per
 * sample). Returns the median us per rep, or -1 after printing why. */
static double per_rep_row(bench_run *run, const char *name, bench_fn fn,
                          void *arg, const char *per, const char *count) {
  uint64_t reps = 0;
  double s[BENCH_SAMPLES_MAX];
  if (measure(run, fn, arg, &reps, s) != 0) return -1;
  bench_extra extra[2] = {
      {.value = bench_median(s, run->samples) * 1e6 / (double)reps},
      {.value = (double)reps}};
  snprintf(extra[0].key, sizeof extra[0].key, "%s", per);
  snprintf(extra[1].key, sizeof extra[1].key, "%s", count);
  const bench_result *r = bench_report(run, name, s, run->samples, extra, 2);
  if (r == NULL) return -1;
  return r->median_s < 0 ? BENCH_SKIPPED : extra[0].value;
}

/* us_per_task (a rep is a task). */
static double per_task_row(bench_run *run, const char *name, bench_fn fn,
                           void *arg) {
  return per_rep_row(run, name, fn, arg, "us_per_task", "tasks");
}

/* The shared rows' name after the runtime's. */
#define SHARED_WHAT "one shared task per region (256^2 fill)"

/* us_per_region (a rep is a region). */
static double per_region_row(bench_run *run, const char *name, bench_fn fn,
                             void *arg) {
  return per_rep_row(run, name, fn, arg, "us_per_region", "regions");
}

/* Measures fn, whose one rep is `per_rep` tasks, and reports tasks_per_s
 * and `more` when not NULL (read after the samples). With `fixed` nonzero
 * every sample runs exactly that many reps (after one warm-up of a tenth
 * of it) instead of a calibrated number. */
static int rate_row(bench_run *run, const char *name, bench_fn fn, void *arg,
                    uint64_t per_rep, uint64_t fixed, const bench_extra *more) {
  uint64_t reps = fixed;
  double s[BENCH_SAMPLES_MAX], warm;
  if (fixed == 0 ? measure(run, fn, arg, &reps, s) != 0
                 : fn(arg, fixed / 10, &warm) != 0)
    return 1;
  for (size_t i = 0; fixed != 0 && i < run->samples; i++)
    if (fn(arg, fixed, &s[i]) != 0) return 1;
  double tasks = (double)(reps * per_rep);
  bench_extra extra[] = {{"tasks_per_s", tasks / bench_median(s, run->samples)},
                         {"tasks", tasks},
                         {"", 0}};
  if (more != NULL) extra[2] = *more;
  return bench_report(run, name, s, run->samples, extra,
                      more != NULL ? 3 : 2) == NULL;
}

/* ---- tarn: the runtime and its refs ------------------------------------ */

/* A runtime of `workers` whose regions hold at most `max_unfinished`
 * unfinished tasks (0: no bound, the default). */
static int make_rt(unsigned workers, unsigned max_unfinished, tarn_rt **rt) {
  tarn_rt_options o;
  int rc = tarn_rt_options_init(&o);
  if (rc != 0) return tarn_failed("tarn_rt_options_init", rc);
  o.workers = workers;
  o.max_unfinished = max_unfinished;
  rc = tarn_rt_create(&o, rt);
  return rc == 0 ? 0 : tarn_failed("tarn_rt_create", rc);
}

/* 8-byte refs that read as zeros until written. */
static int make_refs(tarn_pool *pool, tarn_ref **refs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int rc = tarn_ref_create(pool, sizeof(uint64_t), &refs[i]);
    if (rc != 0) return tarn_failed("tarn_ref_create", rc);
  }
  return 0;
}

static void drop_refs(tarn_ref **refs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (refs[i] != NULL) tarn_ref_release(refs[i]);
}

static int tarn_bench_open(struct tarn_bench *b, unsigned workers) {
  memset(b, 0, sizeof *b);
  b->rng = 0x9e3779b97f4a7c15u;
  if (make_rt(workers, 0, &b->rt) != 0) return 1;
  b->pool = tarn_rt_pool(b->rt);
  int rc = tarn_ref_alloc(b->pool, SHARED_N * SHARED_N * sizeof(double), 0,
                          &b->block);
  if (rc != 0) return tarn_failed("tarn_ref_alloc", rc);
  return make_refs(b->pool, &b->counter, 1) || make_refs(b->pool, &b->src, 1) ||
         make_refs(b->pool, &b->sum, 1) || make_refs(b->pool, b->out, FAN_K) ||
         make_refs(b->pool, b->refs, RANDOM_REFS);
}

static int tarn_bench_close(struct tarn_bench *b) {
  drop_refs(&b->counter, 1);
  drop_refs(&b->src, 1);
  drop_refs(&b->sum, 1);
  drop_refs(b->out, FAN_K);
  drop_refs(b->refs, RANDOM_REFS);
  drop_refs(&b->block, 1);
  int rc = tarn_rt_destroy(b->rt);
  return rc == 0 ? 0 : tarn_failed("tarn_rt_destroy", rc);
}

/* Reads a ref's value (outside any task) and compares it. */
static int check_ref(tarn_ref *ref, uint64_t expected, const char *what) {
  void *data;
  int rc = tarn_ref_pin(ref, TARN_READ, 0, &data);
  if (rc != 0) return tarn_failed("tarn_ref_pin", rc);
  uint64_t got = *(const uint64_t *)data;
  rc = tarn_ref_unpin(ref);
  if (rc != 0) return tarn_failed("tarn_ref_unpin", rc);
  if (got == expected) return 0;
  fprintf(stderr, "tarn bench: rt: tarn %s holds %llu, expected %llu\n", what,
          (unsigned long long)got, (unsigned long long)expected);
  return 1;
}

/* ---- tarn: the task functions ------------------------------------------ */

static int empty_fn(tarn_task *task, void *arg) {
  (void)task;
  (void)arg;
  return 0;
}

/* x += 1 on the task's first ref. */
static int inc_fn(tarn_task *task, void *arg) {
  (void)arg;
  *(uint64_t *)tarn_task_data(task, 0) += 1;
  return 0;
}

/* out = in + 1: reads the first ref, writes the second. */
static int copy_fn(tarn_task *task, void *arg) {
  (void)arg;
  const uint64_t *in = tarn_task_data(task, 0);
  *(uint64_t *)tarn_task_data(task, 1) = *in + 1;
  return 0;
}

/* Adds the FAN_K refs it reads to its last ref. */
static int gather_fn(tarn_task *task, void *arg) {
  (void)arg;
  uint64_t total = 0;
  for (size_t i = 0; i < FAN_K; i++)
    total += *(const uint64_t *)tarn_task_data(task, i);
  *(uint64_t *)tarn_task_data(task, FAN_K) += total;
  return 0;
}

/* Touches the addresses of its refs, nothing more. */
static int touch_fn(tarn_task *task, void *arg) {
  (void)arg;
  bench_escape(tarn_task_data(task, 0));
  bench_escape(tarn_task_data(task, 1));
  return 0;
}

/* Reads the RANDOM_REFS refs it is given; touches the first and last. */
static int wide_fn(tarn_task *task, void *arg) {
  (void)arg;
  bench_escape(tarn_task_data(task, 0));
  bench_escape(tarn_task_data(task, RANDOM_REFS - 1));
  return 0;
}

/* The shared region's work: columns [begin, end) of the block set to the
 * stamp the task's argument points to. */
struct fill_share {
  double *block;
  double value;
};

static int fill_columns(void *arg, size_t begin, size_t end) {
  const struct fill_share *f = arg;
  for (size_t c = begin; c < end; c++)
    for (size_t r = 0; r < SHARED_N; r++) f->block[r + c * SHARED_N] = f->value;
  return 0;
}

/* Fills the block (its first ref) with *arg, its columns shared with idle
 * workers. */
static int fill_fn(tarn_task *task, void *arg) {
  struct fill_share f = {tarn_task_data(task, 0), (double)*(uint64_t *)arg};
  return tarn_task_parallel_for(task, SHARED_N, SHARED_GRAIN, fill_columns, &f);
}

/* ---- tarn: the measured regions ---------------------------------------- */

/* Times one region: submit(b, reps) then tarn_region_wait. */
static int timed_region(struct tarn_bench *b, uint64_t reps,
                        int (*submit)(struct tarn_bench *, uint64_t),
                        double *seconds) {
  tarn_region *region;
  int rc = tarn_region_begin(b->rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  uint64_t t0 = bench_now_ns();
  int failed = submit(b, reps);
  rc = tarn_region_wait(region, NULL);
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  if (rc != 0) return tarn_failed("tarn_region_wait", rc);
  return failed;
}

static int submit_empty(struct tarn_bench *b, uint64_t reps) {
  for (uint64_t i = 0; i < reps; i++) {
    int rc = tarn_submit(b->rt, empty_fn, TARN_ARG(NULL));
    if (rc != 0) return tarn_failed("tarn_submit", rc);
  }
  return 0;
}

static int submit_chain(struct tarn_bench *b, uint64_t reps) {
  for (uint64_t i = 0; i < reps; i++) {
    int rc = tarn_submit(b->rt, inc_fn, TARN_RW(b->counter));
    if (rc != 0) return tarn_failed("tarn_submit", rc);
  }
  return 0;
}

/* One round: src += 1; out[k] = src + 1 for each k; sum += all out[k]. */
static int submit_fan_round(struct tarn_bench *b) {
  int rc = tarn_submit(b->rt, inc_fn, TARN_RW(b->src));
  for (size_t k = 0; rc == 0 && k < FAN_K; k++)
    rc = tarn_submit(b->rt, copy_fn, TARN_R(b->src), TARN_W(b->out[k]));
  if (rc != 0) return tarn_failed("tarn_submit", rc);
  tarn_dep deps[FAN_K + 1];
  for (size_t k = 0; k < FAN_K; k++) deps[k] = (tarn_dep){b->out[k], TARN_READ};
  deps[FAN_K] = (tarn_dep){b->sum, TARN_READ_WRITE};
  tarn_task_desc desc = {.fn = gather_fn, .deps = deps, .ndeps = FAN_K + 1};
  rc = tarn_task_submit(b->rt, &desc);
  return rc == 0 ? 0 : tarn_failed("tarn_task_submit", rc);
}

static int submit_fan(struct tarn_bench *b, uint64_t reps) {
  for (uint64_t i = 0; i < reps; i++)
    if (submit_fan_round(b) != 0) return 1;
  return 0;
}

static uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

/* Tasks on two distinct random refs, each read, written or both. */
static int submit_random(struct tarn_bench *b, uint64_t reps) {
  for (uint64_t i = 0; i < reps; i++) {
    uint64_t r = next_random(&b->rng);
    size_t x = (size_t)(r % RANDOM_REFS);
    size_t y = (size_t)((r >> 16) % (RANDOM_REFS - 1));
    y += y >= x;
    tarn_dep deps[2] = {{b->refs[x], (tarn_access)(1 + (r >> 32) % 3)},
                        {b->refs[y], (tarn_access)(1 + (r >> 40) % 3)}};
    tarn_task_desc desc = {.fn = touch_fn, .deps = deps, .ndeps = 2};
    int rc = tarn_task_submit(b->rt, &desc);
    if (rc != 0) return tarn_failed("tarn_task_submit", rc);
  }
  return 0;
}

/* Tasks that each read every one of the random graph's refs. */
static int submit_wide(struct tarn_bench *b, uint64_t reps) {
  tarn_dep deps[RANDOM_REFS];
  for (size_t k = 0; k < RANDOM_REFS; k++)
    deps[k] = (tarn_dep){b->refs[k], TARN_READ};
  tarn_task_desc desc = {.fn = wide_fn, .deps = deps, .ndeps = RANDOM_REFS};
  for (uint64_t i = 0; i < reps; i++) {
    int rc = tarn_task_submit(b->rt, &desc);
    if (rc != 0) return tarn_failed("tarn_task_submit", rc);
  }
  return 0;
}

/* Empty tasks, and the most seen unfinished after the last submission
 * (a program that submits faster than tasks run is held back at
 * tarn_rt_options.max_unfinished). */
static int submit_flood(struct tarn_bench *b, uint64_t reps) {
  int failed = submit_empty(b, reps);
  tarn_rt_stats st;
  if (failed == 0 && tarn_rt_stats_get(b->rt, &st) == 0) {
    double unfinished = (double)(st.submitted - st.run - st.cancelled);
    if (unfinished > *b->most_unfinished) *b->most_unfinished = unfinished;
  }
  return failed;
}

static int tarn_flood(void *arg, uint64_t reps, double *seconds) {
  return timed_region(arg, reps, submit_flood, seconds);
}

static int tarn_empty(void *arg, uint64_t reps, double *seconds) {
  return timed_region(arg, reps, submit_empty, seconds);
}

static int tarn_chain(void *arg, uint64_t reps, double *seconds) {
  struct tarn_bench *b = arg;
  if (timed_region(b, reps, submit_chain, seconds) != 0) return 1;
  b->counted += reps;
  return check_ref(b->counter, b->counted, "chain counter");
}

/* After T rounds src is T and sum is FAN_K * sum of (r + 1), r = 1..T. */
static int tarn_fan(void *arg, uint64_t reps, double *seconds) {
  struct tarn_bench *b = arg;
  if (timed_region(b, reps, submit_fan, seconds) != 0) return 1;
  uint64_t t = b->rounds += reps;
  return check_ref(b->src, t, "fan-out source") ||
         check_ref(b->sum, FAN_K * (t * (t + 1) / 2 + t), "fan-in sum");
}

static int tarn_random(void *arg, uint64_t reps, double *seconds) {
  return timed_region(arg, reps, submit_random, seconds);
}

static int tarn_wide(void *arg, uint64_t reps, double *seconds) {
  return timed_region(arg, reps, submit_wide, seconds);
}

/* reps regions, each of one fill_fn task, waited one by one; then checks
 * the block holds the last region's value. */
static int tarn_shared(void *arg, uint64_t reps, double *seconds) {
  struct tarn_bench *b = arg;
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < reps; i++) {
    tarn_region *region;
    int rc = tarn_region_begin(b->rt, &region);
    if (rc != 0) return tarn_failed("tarn_region_begin", rc);
    b->stamp++;
    int submitted =
        tarn_submit(b->rt, fill_fn, TARN_ARG(&b->stamp), TARN_W(b->block));
    rc = tarn_region_wait(region, NULL);
    if (submitted != 0) return tarn_failed("tarn_submit", submitted);
    if (rc != 0) return tarn_failed("tarn_region_wait", rc);
  }
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  void *data;
  int rc = tarn_ref_pin(b->block, TARN_READ, 0, &data);
  if (rc != 0) return tarn_failed("tarn_ref_pin", rc);
  const double *x = data;
  double want = (double)b->stamp;
  int bad = x[0] != want || x[SHARED_N * SHARED_N - 1] != want;
  rc = tarn_ref_unpin(b->block);
  if (rc != 0) return tarn_failed("tarn_ref_unpin", rc);
  if (bad) fprintf(stderr, "tarn bench: rt: tarn shared block not filled\n");
  return bad;
}

/* ---- the suite --------------------------------------------------------- */

/* The flood on `b`'s runtime (no bound), then on one whose regions hold at
 * most FLOOD_BOUND unfinished tasks. */
static int flood_rows(bench_run *run, struct tarn_bench *b, unsigned w) {
  char name[96], what[64];
  bench_extra most = {"most_unfinished", 0};
  row_name(name, sizeof name, PEER_TARN, "300k empty tasks at once", w);
  b->most_unfinished = &most.value;
  int unbounded = rate_row(run, name, tarn_flood, b, 1, FLOOD_TASKS, &most);
  b->most_unfinished = NULL; /* `most` ends with this call */
  if (unbounded != 0) return 1;
  struct tarn_bench bounded = {.most_unfinished = &most.value};
  if (make_rt(w, FLOOD_BOUND, &bounded.rt) != 0) return 1;
  most.value = 0;
  snprintf(what, sizeof what, "300k empty tasks at once, max_unfinished %d",
           FLOOD_BOUND);
  row_name(name, sizeof name, PEER_TARN, what, w);
  int failed = rate_row(run, name, tarn_flood, &bounded, 1, FLOOD_TASKS, &most);
  int rc = tarn_rt_destroy(bounded.rt);
  if (rc != 0) return tarn_failed("tarn_rt_destroy", rc);
  return failed;
}

static int run_tarn(bench_run *run, unsigned w, struct figures *f) {
  struct tarn_bench b;
  char name[96], what[64];
  int failed = tarn_bench_open(&b, w);
  if (!failed) {
    row_name(name, sizeof name, PEER_TARN, "empty", w);
    failed = per_task_row(run, name, tarn_empty, &b) < 0;
  }
  if (!failed) {
    row_name(name, sizeof name, PEER_TARN, "chain rw", w);
    f->chain_us[PEER_TARN][w] = per_task_row(run, name, tarn_chain, &b);
    failed = f->chain_us[PEER_TARN][w] < 0;
  }
  if (!failed) {
    snprintf(what, sizeof what, "fan-out %d fan-in", FAN_K);
    row_name(name, sizeof name, PEER_TARN, what, w);
    failed = rate_row(run, name, tarn_fan, &b, FAN_K + 2, 0, NULL);
  }
  if (!failed) {
    snprintf(what, sizeof what, "random graph 1M tasks %d refs", RANDOM_REFS);
    row_name(name, sizeof name, PEER_TARN, what, w);
    failed = rate_row(run, name, tarn_random, &b, 1, RANDOM_TASKS, NULL);
  }
  if (!failed) {
    snprintf(what, sizeof what, "task reading %d refs", RANDOM_REFS);
    row_name(name, sizeof name, PEER_TARN, what, w);
    failed = per_task_row(run, name, tarn_wide, &b) < 0;
  }
  if (!failed) {
    failed = flood_rows(run, &b, w);
  }
  if (!failed) {
    row_name(name, sizeof name, PEER_TARN, SHARED_WHAT, w);
    failed = per_region_row(run, name, tarn_shared, &b) < 0;
  }
  return tarn_bench_close(&b) | failed;
}

static int run_openmp(bench_run *run, unsigned w, struct figures *f) {
  char name[96];
  int threads = (int)w;
  row_name(name, sizeof name, PEER_OPENMP, "empty", w);
  if (per_task_row(run, name, rt_omp_empty, &threads) < 0) return 1;
  row_name(name, sizeof name, PEER_OPENMP, "chain rw", w);
  f->chain_us[PEER_OPENMP][w] = per_task_row(run, name, rt_omp_chain, &threads);
  if (f->chain_us[PEER_OPENMP][w] < 0) return 1;
  struct rt_omp_fill fill = {.threads = threads, .n = SHARED_N};
  fill.block = aligned_alloc(64, SHARED_N * SHARED_N * sizeof(double));
  if (fill.block == NULL) return 1;
  row_name(name, sizeof name, PEER_OPENMP, SHARED_WHAT, w);
  int failed = per_region_row(run, name, rt_omp_fill, &fill) < 0;
  free(fill.block);
  return failed;
}

#ifdef TARN_BENCH_STARPU
static int run_starpu(bench_run *run, unsigned w, struct figures *f) {
  char name[96];
  if (rt_starpu_open(w) != 0) return 1;
  row_name(name, sizeof name, PEER_STARPU, "empty", w);
  int failed = per_task_row(run, name, rt_starpu_empty, NULL) < 0;
  if (!failed) {
    row_name(name, sizeof name, PEER_STARPU, "chain rw", w);
    f->chain_us[PEER_STARPU][w] =
        per_task_row(run, name, rt_starpu_chain, NULL);
    failed = f->chain_us[PEER_STARPU][w] < 0;
  }
  rt_starpu_close();
  return failed;
}
#else
static int run_starpu(bench_run *run, unsigned w, struct figures *f) {
  (void)f;
  if (w == 1)
    bench_note(run, "rt/starpu",
               "starpu: not available (install libstarpu-dev)");
  return 0;
}
#endif

static void print_goals(const struct figures *f) {
  char what[64];
  bench_goal_heading("Goals (from the medians above):");
  for (unsigned w = 1; w <= MAX_WORKERS; w++) {
    const char *s = w == 1 ? "" : "s";
    double tarn = f->chain_us[PEER_TARN][w];
    snprintf(what, sizeof what, "tarn chain per task (%u worker%s)", w, s);
    bench_goal(what, tarn, " us", 1, 0.3);
    snprintf(what, sizeof what, "starpu chain / tarn chain (%u worker%s)", w,
             s);
    bench_goal(what, bench_ratio(f->chain_us[PEER_STARPU][w], tarn), "x", 0, 5);
    snprintf(what, sizeof what, "openmp chain / tarn chain (%u worker%s)", w,
             s);
    bench_goal(what, bench_ratio(f->chain_us[PEER_OPENMP][w], tarn), "x", 0, 1);
  }
  fflush(stdout);
}

int bench_rt(bench_run *run) {
  struct figures f;
  for (int p = 0; p < PEER_COUNT; p++)
    for (int w = 0; w <= MAX_WORKERS; w++) f.chain_us[p][w] = -1;
  int failed = 0;
  for (unsigned w = 1; w <= MAX_WORKERS; w++) {
    failed |= run_tarn(run, w, &f);
    failed |= run_openmp(run, w, &f);
    failed |= run_starpu(run, w, &f);
  }
  print_goals(&f);
  return failed;
}
