/* loops.c: the driver of the `array` and `stencil` suites (loops.h): the
 * order of the variants, their warm-ups, the row names, the reports and
 * the goals. Holds nothing between calls but the figures of the suite
 * being run. */
#define _GNU_SOURCE
#include "loops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "tarn.h"

/* Medians, in seconds, by size, operation and variant; -1: not measured. */
struct figures {
  size_t n[BENCH_SIZES_MAX];
  size_t count;
  double med[BENCH_SIZES_MAX][LOOP_OPS_MAX][V_COUNT];
};

static int fresh_variant(int v) { return v == V_OMP_FRESH || v == V_C_FRESH; }

/* Whether `rows` has a row for variant v. */
static int has_row(enum loop_rows rows, int v) {
  if (v == V_TARN || rows == LOOP_ROWS_ALL) return 1;
  return fresh_variant(v) == (rows == LOOP_ROWS_SCALAR);
}

static void row_name(char *buf, size_t size, const loop_suite *s, size_t n,
                     int op, int v) {
  static const char *const peer[V_COUNT] = {"tarn", "openmp", "openmp", "c",
                                            "c"};
  const loop_op *o = &s->ops[op];
  if (v == V_TARN) {
    snprintf(buf, size, "%s/tarn/N=%zu (block %zu)/%s", s->name, n,
             bench_tile_size(n), o->name);
    return;
  }
  const char *mode = o->rows == LOOP_ROWS_SCALAR ? ""
                     : fresh_variant(v)          ? " fresh"
                                                 : " touched";
  snprintf(buf, size, "%s/%s/N=%zu/%s%s", s->name, peer[v], n, o->name, mode);
}

/* Whether any row of `op` at size n is wanted (--filter). */
static int op_wanted(bench_run *run, const loop_suite *s, size_t n, int op) {
  for (int v = 0; v < V_COUNT; v++) {
    char name[160];
    row_name(name, sizeof name, s, n, op, v);
    if (has_row(s->ops[op].rows, v) && bench_wanted(run, name)) return 1;
  }
  return 0;
}

/* Whether any row at size n is wanted. */
static int size_wanted(bench_run *run, const loop_suite *s, size_t n) {
  for (int op = 0; op < s->nops; op++)
    if (op_wanted(run, s, n, op)) return 1;
  return 0;
}

/* Reports one row; returns its median, or -1 after printing why. */
static double report(bench_run *run, const loop_suite *s, size_t n, int op,
                     int v, const loop_row *r) {
  char name[160];
  row_name(name, sizeof name, s, n, op, v);
  size_t ns = r->n;
  double med = bench_median(r->s, ns);
  double moved = s->ops[op].touches * (double)(n * n) * sizeof(double);
  bench_extra extra[2] = {{"GB_per_s", moved / med * 1e-9},
                          {"minor_faults", r->faults / (double)ns}};
  return bench_report(run, name, r->s, ns, extra, 2) == NULL ? -1 : med;
}

/* One operation at one size: the checked round, then the samples, variant
 * by variant, each after a warm-up of its own: interleaving them sample by
 * sample made OpenMP regions that followed a tarn region take 5-7 ms
 * instead of 0.01-0.2 ms at N=256 (threads of the other party spinning or
 * asleep on a cold core). */
static int measure_op(bench_run *run, const loop_suite *s, size_t n, int op,
                      double *med) {
  static loop_row rows[V_COUNT];
  static const int order[V_COUNT] = {V_TARN, V_OMP_FRESH, V_C_FRESH,
                                     V_OMP_TOUCHED, V_C_TOUCHED};
  static const int print[V_COUNT] = {V_TARN, V_OMP_FRESH, V_OMP_TOUCHED,
                                     V_C_FRESH, V_C_TOUCHED};
  enum loop_rows kind = s->ops[op].rows;
  for (int v = 0; v < V_COUNT; v++) med[v] = -1;
  if (!op_wanted(run, s, n, op)) return 0;
  if (s->check(s->ctx, op) != 0) return 1;
  memset(rows, 0, sizeof rows);
  for (int k = 0; k < V_COUNT; k++) {
    int v = order[k];
    if (!has_row(kind, v)) continue;
    /* Warm-up rounds for BENCH_WARMUP_S at least (one round was not
     * enough here: a core that idled takes a few rounds to come back). */
    uint64_t warm_until = bench_warmup_until();
    do
      if (s->sample(s->ctx, op, v, &rows[v], &rows[v].s[0]) != 0) return 1;
    while (bench_now_ns() < warm_until);
    rows[v].faults = 0;
    uint64_t t0 = bench_now_ns();
    for (rows[v].n = 0; bench_sample_more(run, rows[v].n, t0); rows[v].n++)
      if (s->sample(s->ctx, op, v, &rows[v], &rows[v].s[rows[v].n]) != 0)
        return 1;
  }
  for (int k = 0; k < V_COUNT; k++) {
    int v = print[k];
    char name[160];
    row_name(name, sizeof name, s, n, op, v);
    if (!has_row(kind, v) || !bench_wanted(run, name)) continue;
    if ((med[v] = report(run, s, n, op, v, &rows[v])) < 0) return 1;
  }
  return 0;
}

static void goal_ratio(const loop_suite *s, const char *label, size_t n, int op,
                       double value, int at_most, double limit) {
  bench_size_goal(n, s->ops[op].short_name, label, value, "x", at_most, limit);
}

/* BENCH.md's goals: at every size at least the OpenMP loop (into fresh
 * memory where the operation has such rows), at N=4096 within 1.25x of
 * the loop into touched memory (for a reduction, of its only loop), and
 * 2.5x faster than Dagger's medians. */
static void print_goals(const loop_suite *s, const struct figures *f) {
  bench_goal_heading(
      "Goals (from the medians above; Dagger's from the seed table):");
  for (size_t k = 0; k < f->count; k++) {
    size_t n = f->n[k];
    for (int op = 0; op < s->nops; op++) {
      const double *m = f->med[k][op];
      enum loop_rows kind = s->ops[op].rows;
      static const char *const first[] = {
          [LOOP_ROWS_ALL] = "openmp fresh / tarn",
          [LOOP_ROWS_SCALAR] = "openmp / tarn",
          [LOOP_ROWS_TOUCHED] = "openmp touched / tarn"};
      int peer = kind == LOOP_ROWS_TOUCHED ? V_OMP_TOUCHED : V_OMP_FRESH;
      goal_ratio(s, first[kind], n, op, bench_ratio(m[peer], m[V_TARN]), 0, 1);
      if (n == 4096) {
        int scalar = kind == LOOP_ROWS_SCALAR;
        goal_ratio(
            s, scalar ? "tarn / openmp" : "tarn / openmp touched", n, op,
            bench_ratio(m[V_TARN], m[scalar ? V_OMP_FRESH : V_OMP_TOUCHED]), 1,
            1.25);
      }
      double dagger = bench_seed_ms(n, s->dagger_sizes, s->ndagger_sizes,
                                    s->dagger_ms, (size_t)s->nops, (size_t)op);
      if (dagger > 0)
        goal_ratio(s, "dagger (seed) / tarn", n, op,
                   bench_ratio(dagger * 1e-3, m[V_TARN]), 0, 2.5);
    }
  }
}

int loop_suite_run(bench_run *run, const loop_suite *s) {
  if (s->nops > LOOP_OPS_MAX) {
    fprintf(stderr, "tarn bench: %s: %d operations, at most %d\n", s->name,
            s->nops, LOOP_OPS_MAX);
    return 1;
  }
  const size_t *sizes;
  size_t nsizes = bench_sizes(run, s->default_sizes, s->ndefault_sizes, &sizes);
  static struct figures f;
  memset(&f, 0, sizeof f);
  size_t wanted = 0;
  for (size_t k = 0; k < nsizes; k++) wanted += size_wanted(run, s, sizes[k]);
  if (wanted == 0) return 0;
  tarn_rt *rt;
  if (bench_rt_open(run, s->name, &rt) != 0) return 1;
  int failed = 0;
  for (size_t k = 0; k < nsizes && !failed; k++) {
    size_t n = sizes[k];
    if (!size_wanted(run, s, n)) continue;
    failed = s->open(s->ctx, rt, n, bench_threads(run));
    f.n[f.count] = n;
    for (int op = 0; op < s->nops && !failed; op++)
      failed = measure_op(run, s, n, op, f.med[f.count][op]);
    f.count++;
    s->close(s->ctx);
  }
  int rc = tarn_rt_destroy(rt);
  if (rc != 0 && !failed)
    failed = bench_tarn_failed(s->name, "tarn_rt_destroy", rc);
  print_goals(s, &f);
  return failed;
}

int loop_peer_sample(const char *suite, enum loop_rows rows, int v, size_t n,
                     double *touched, loop_kernel kernel, void *ctx, int op,
                     loop_row *r, double *t, double *result) {
  size_t bytes = n * n * sizeof(double);
  int omp = v == V_OMP_FRESH || v == V_OMP_TOUCHED;
  double f0 = bench_minor_faults();
  uint64_t t0 = bench_now_ns();
  double *out = touched;
  if (rows != LOOP_ROWS_SCALAR && fresh_variant(v)) {
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      fprintf(stderr, "tarn bench: %s: mmap: %s\n", suite, strerror(errno));
      return 1;
    }
    out = m;
  }
  double res = kernel(ctx, op, omp, out);
  bench_escape(out);
  uint64_t t1 = bench_now_ns();
  r->faults += bench_minor_faults() - f0;
  *t = (double)(t1 - t0) * 1e-9;
  if (result != NULL) *result = res;
  if (out != touched) munmap(out, bytes);
  return 0;
}
