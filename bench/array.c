/* array.c: the `array` suite of `tarn bench` (BENCH.md): alloc (rand), add,
 * broadcast, map (sin), sum, norm and transpose of an N x N tiled tarn
 * matrix (a new matrix each time, submitted in a region and timed to
 * tarn_region_wait; destroyed after the clock stops), side by side with a
 * plain C loop and a 2-thread OpenMP loop (array_peers.h) on a plain
 * buffer, each writing into fresh memory (mapped inside the clock, so its
 * page faults count; unmapped after it) and into a buffer already touched.
 * One round checks tarn's results against the C loop's, then each variant
 * runs its samples after a warm-up of its own. Ends with the goals, from the
 * medians of the run and Dagger's published medians. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "array_peers.h"
#include "bench.h"
#include "tarn.h"

#define INPUT_SEED 1u /* the input X */
#define RAND_SEED 2u  /* the matrix made by alloc (rand) */

static const size_t default_sizes[] = {256, 1024, 4096};

/* What runs an operation: tarn, and the peers (fresh: output mapped per
 * sample; touched: a buffer written before). Reductions have no output and
 * only the *_FRESH rows, named without "fresh". */
enum { V_TARN, V_OMP_FRESH, V_OMP_TOUCHED, V_C_FRESH, V_C_TOUCHED, V_COUNT };

struct op {
  const char *name; /* the row name, as Dagger's */
  const char *short_name;
  int has_output;
  double touches; /* elements read plus written, per matrix element */
};

static const struct op ops[ARRAY_OP_COUNT] = {
    [ARRAY_RAND] = {"alloc (rand)", "alloc", 1, 1},
    [ARRAY_ADD] = {"add (X + X)", "add", 1, 2},
    [ARRAY_AXPB] = {"broadcast (X .+ 1)", "broadcast", 1, 2},
    [ARRAY_SIN] = {"map (sin.(X))", "map", 1, 2},
    [ARRAY_SUM] = {"reduce (sum)", "sum", 0, 1},
    [ARRAY_NORM] = {"norm", "norm", 0, 1},
    [ARRAY_TRANSPOSE] = {"transpose (permutedims)", "transpose", 1, 2},
};

/* Dagger.jl's medians in milliseconds, published reference figures (not
 * measured here): seed /work/shared/seeds/000_1e26231be056f87e.txt, the
 * table "Dagger benchmarks: dirty vs master", rows
 * "array/dagger/N=256 (block 256)/..." and "array/dagger/N=1024 (block
 * 512)/...", column "dirty" (the first figure of "median ± spread"). Dagger
 * ran 8 threads. Indexed by [0: N=256, 1: N=1024][enum array_op]. */
static const size_t dagger_sizes[2] = {256, 1024};
static const double dagger_median_ms[2][ARRAY_OP_COUNT] = {
    /* N=256:  alloc, add, broadcast, map, sum, norm, transpose */
    {1.08, 1.38, 0.655, 1.27, 1.16, 0.527, 1.04},
    /* N=1024: alloc, add, broadcast, map, sum, norm, transpose */
    {3.73, 4.3, 1.97, 5.44, 2.52, 1.31, 7.22},
};

/* One size's inputs, all made and waited for before any clock starts. */
struct ctx {
  tarn_rt *rt;
  size_t n, b;
  unsigned threads;       /* of the OpenMP peer */
  tarn_matrix *x;         /* the input X */
  double *xbuf;           /* X's values, column-major, for the peers */
  double *touched;        /* the peers' output buffer, written before timing */
  double scalar[V_COUNT]; /* the last reduction result of each */
};

/* The samples of one row and what was counted around them. */
struct row {
  double s[BENCH_SAMPLES_MAX];
  double faults; /* minor page faults, summed over samples */
};

/* Medians, in seconds, by size, operation and variant; -1: not measured. */
struct figures {
  size_t n[BENCH_SIZES_MAX];
  size_t count;
  double med[BENCH_SIZES_MAX][ARRAY_OP_COUNT][V_COUNT];
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("array", what, status);
}

/* Submits tarn's elementwise operation `op` on X, making *out. */
static int submit_op(struct ctx *c, int op, tarn_matrix **out) {
  switch (op) {
    case ARRAY_RAND:
      return tarn_matrix_rand(c->rt, c->n, c->n, c->b, c->b, RAND_SEED, out);
    case ARRAY_ADD:
      return tarn_matrix_add(c->x, c->x, out);
    case ARRAY_AXPB:
      return tarn_matrix_axpb(c->x, 1.0, 1.0, out);
    case ARRAY_SIN:
      return tarn_matrix_sin(c->x, out);
    case ARRAY_TRANSPOSE:
      return tarn_matrix_transpose(c->x, out);
    default:
      return TARN_EINVAL;
  }
}

/* One tarn sample: the operation to completion. The new matrix goes to
 * *keep when keep is not NULL, else is destroyed after the clock. */
static int tarn_sample(struct ctx *c, int op, struct row *r, double *t,
                       tarn_matrix **keep) {
  double f0 = bench_minor_faults();
  tarn_matrix *out = NULL;
  double v = 0;
  int rc;
  uint64_t t0 = bench_now_ns();
  if (op == ARRAY_SUM) {
    rc = tarn_matrix_sum(c->x, &v);
  } else if (op == ARRAY_NORM) {
    rc = tarn_matrix_norm(c->x, &v);
  } else {
    tarn_region *region;
    rc = tarn_region_begin(c->rt, &region);
    if (rc == 0) {
      int submitted = submit_op(c, op, &out);
      rc = tarn_region_wait(region, NULL);
      if (submitted != 0) rc = submitted;
    }
  }
  uint64_t t1 = bench_now_ns();
  r->faults += bench_minor_faults() - f0;
  *t = (double)(t1 - t0) * 1e-9;
  c->scalar[V_TARN] = v;
  if (keep != NULL)
    *keep = out;
  else
    tarn_matrix_destroy(out);
  return rc == 0 ? 0 : tarn_failed(ops[op].name, rc);
}

/* One peer sample: variant v of `op` on the plain buffer. */
static int peer_sample(struct ctx *c, int op, int v, struct row *r, double *t) {
  size_t bytes = c->n * c->n * sizeof(double);
  int omp = v == V_OMP_FRESH || v == V_OMP_TOUCHED;
  int fresh = v == V_OMP_FRESH || v == V_C_FRESH;
  double f0 = bench_minor_faults();
  uint64_t t0 = bench_now_ns();
  double *out = c->touched;
  if (ops[op].has_output && fresh) {
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      perror("tarn bench: array: mmap");
      return 1;
    }
    out = m;
  }
  double s = omp ? array_omp_run(op, RAND_SEED, c->xbuf, out, c->n, c->threads)
                 : array_cols(op, RAND_SEED, c->xbuf, out, c->n, 0, c->n);
  if (op == ARRAY_NORM) s = sqrt(s);
  bench_escape(out);
  uint64_t t1 = bench_now_ns();
  r->faults += bench_minor_faults() - f0;
  *t = (double)(t1 - t0) * 1e-9;
  c->scalar[v] = s;
  if (out != c->touched) munmap(out, bytes);
  return 0;
}

/* Compares tarn's result with the C loop's (in c->touched, or the scalar). */
static int check(struct ctx *c, int op, tarn_matrix *out) {
  if (!ops[op].has_output) {
    if (bench_close(c->scalar[V_TARN], c->scalar[V_C_TOUCHED], 1e-9)) return 0;
    fprintf(stderr, "tarn bench: array: N=%zu %s: tarn %.17g, C loop %.17g\n",
            c->n, ops[op].name, c->scalar[V_TARN], c->scalar[V_C_TOUCHED]);
    return 1;
  }
  size_t n = c->n, at[3][2] = {{0, 0}, {n - 1, n - 1}, {n / 3, n / 2 + 1}};
  for (int k = 0; k < 3; k++) {
    size_t i = at[k][0], j = at[k][1] % n;
    double v;
    int rc = tarn_matrix_get(out, i, j, &v);
    if (rc != 0) return tarn_failed("tarn_matrix_get", rc);
    double want = c->touched[i + j * n];
    if (!bench_close(v, want, 1e-12)) {
      fprintf(stderr,
              "tarn bench: array: N=%zu %s: element (%zu, %zu) is %.17g in "
              "tarn, %.17g in the C loop\n",
              n, ops[op].name, i, j, v, want);
      return 1;
    }
  }
  return 0;
}

static void row_name(char *buf, size_t size, size_t n, size_t b, int op,
                     int v) {
  static const char *const peer[V_COUNT] = {"tarn", "openmp", "openmp", "c",
                                            "c"};
  if (v == V_TARN) {
    snprintf(buf, size, "array/tarn/N=%zu (block %zu)/%s", n, b, ops[op].name);
    return;
  }
  const char *mode = !ops[op].has_output                  ? ""
                     : v == V_OMP_FRESH || v == V_C_FRESH ? " fresh"
                                                          : " touched";
  snprintf(buf, size, "array/%s/N=%zu/%s%s", peer[v], n, ops[op].name, mode);
}

/* Whether any row of `op` at size n is wanted (--filter). */
static int op_wanted(bench_run *run, size_t n, size_t b, int op) {
  for (int v = 0; v < V_COUNT; v++) {
    char name[160];
    row_name(name, sizeof name, n, b, op, v);
    if (bench_wanted(run, name)) return 1;
  }
  return 0;
}

/* Whether any row at size n is wanted. */
static int size_wanted(bench_run *run, size_t n) {
  for (int op = 0; op < ARRAY_OP_COUNT; op++)
    if (op_wanted(run, n, bench_tile_size(n), op)) return 1;
  return 0;
}

/* Reports one row; returns its median, or -1 after printing why. */
static double report(bench_run *run, const struct ctx *c, int op, int v,
                     const struct row *r) {
  char name[160];
  row_name(name, sizeof name, c->n, c->b, op, v);
  size_t ns = run->samples;
  double med = bench_median(r->s, ns);
  double moved = ops[op].touches * (double)(c->n * c->n) * sizeof(double);
  bench_extra extra[2] = {{"GB_per_s", moved / med * 1e-9},
                          {"minor_faults", r->faults / (double)ns}};
  return bench_report(run, name, r->s, ns, extra, 2) == NULL ? -1 : med;
}

/* One operation at one size: a warm-up round that checks tarn, then the
 * samples, every variant in turn within each. */
static int measure_op(bench_run *run, struct ctx *c, int op, double *med) {
  static struct row rows[V_COUNT];
  for (int v = 0; v < V_COUNT; v++) med[v] = -1;
  if (!op_wanted(run, c->n, c->b, op)) return 0;
  int nv = ops[op].has_output ? V_COUNT : 3;
  static const int order[V_COUNT] = {V_TARN, V_OMP_FRESH, V_C_FRESH,
                                     V_OMP_TOUCHED, V_C_TOUCHED};
  static const int order_scalar[3] = {V_TARN, V_OMP_FRESH, V_C_FRESH};
  const int *seq = ops[op].has_output ? order : order_scalar;
  memset(rows, 0, sizeof rows);

  double t;
  tarn_matrix *out = NULL;
  if (tarn_sample(c, op, &rows[V_TARN], &t, &out) != 0) return 1;
  for (int k = 1; k < nv; k++)
    if (peer_sample(c, op, seq[k], &rows[seq[k]], &t) != 0) {
      tarn_matrix_destroy(out);
      return 1;
    }
  if (!ops[op].has_output) c->scalar[V_C_TOUCHED] = c->scalar[V_C_FRESH];
  int bad = check(c, op, out);
  tarn_matrix_destroy(out);
  if (bad) return 1;
  memset(rows, 0, sizeof rows);

  /* Variant by variant, each after a warm-up of its own: interleaving
   * them sample by sample made OpenMP regions that followed a tarn region
   * take 5-7 ms instead of 0.01-0.2 ms at N=256 (threads of the other
   * party spinning or asleep on a cold core). */
  for (int k = 0; k < nv; k++) {
    int v = seq[k];
    /* Warm-up rounds for BENCH_WARMUP_S at least (one round was not
     * enough here: a core that idled takes a few rounds to come back). */
    uint64_t warm_until = bench_warmup_until();
    do {
      double *t = &rows[v].s[0];
      int rc = v == V_TARN ? tarn_sample(c, op, &rows[v], t, NULL)
                           : peer_sample(c, op, v, &rows[v], t);
      if (rc != 0) return 1;
    } while (bench_now_ns() < warm_until);
    rows[v].faults = 0;
    for (size_t i = 0; i < run->samples; i++) {
      double *t = &rows[v].s[i];
      int rc = v == V_TARN ? tarn_sample(c, op, &rows[v], t, NULL)
                           : peer_sample(c, op, v, &rows[v], t);
      if (rc != 0) return 1;
    }
  }
  static const int print[V_COUNT] = {V_TARN, V_OMP_FRESH, V_OMP_TOUCHED,
                                     V_C_FRESH, V_C_TOUCHED};
  for (int k = 0; k < V_COUNT; k++) {
    int v = print[k];
    if (!ops[op].has_output && (v == V_OMP_TOUCHED || v == V_C_TOUCHED))
      continue;
    char name[160];
    row_name(name, sizeof name, c->n, c->b, op, v);
    if (!bench_wanted(run, name)) continue;
    if ((med[v] = report(run, c, op, v, &rows[v])) < 0) return 1;
  }
  return 0;
}

static void ctx_free(struct ctx *c) {
  tarn_matrix_destroy(c->x);
  free(c->xbuf);
  free(c->touched);
}

/* Makes X (tarn and plain) and the touched buffer for size n. */
static int ctx_open(struct ctx *c, tarn_rt *rt, size_t n, unsigned threads) {
  memset(c, 0, sizeof *c);
  c->rt = rt;
  c->threads = threads;
  c->n = n;
  c->b = bench_tile_size(n);
  size_t bytes = n * n * sizeof(double);
  c->xbuf = bench_buffer_alloc(bytes);
  c->touched = bench_buffer_alloc(bytes);
  if (c->xbuf == NULL || c->touched == NULL) {
    fprintf(stderr, "tarn bench: array: out of memory for N=%zu\n", n);
    return 1;
  }
  memset(c->touched, 0, bytes);
  tarn_region *region;
  int rc = tarn_region_begin(rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  int made = tarn_matrix_rand(rt, n, n, c->b, c->b, INPUT_SEED, &c->x);
  rc = tarn_region_wait(region, NULL);
  if (made != 0 || rc != 0)
    return tarn_failed("tarn_matrix_rand", made != 0 ? made : rc);
  rc = tarn_matrix_to_buffer(c->x, c->xbuf, n);
  return rc == 0 ? 0 : tarn_failed("tarn_matrix_to_buffer", rc);
}

static void goal_ratio(const char *label, size_t n, int op, double value,
                       int at_most, double limit) {
  bench_size_goal(n, ops[op].short_name, label, value, "x", at_most, limit);
}

static double dagger_ms(size_t n, int op) {
  return bench_seed_ms(n, dagger_sizes, 2, &dagger_median_ms[0][0],
                       ARRAY_OP_COUNT, (size_t)op);
}

static void print_goals(const struct figures *f) {
  bench_goal_heading(
      "Goals (from the medians above; Dagger's from the seed table):");
  for (size_t s = 0; s < f->count; s++) {
    size_t n = f->n[s];
    for (int op = 0; op < ARRAY_OP_COUNT; op++) {
      const double *m = f->med[s][op];
      int out = ops[op].has_output;
      goal_ratio(out ? "openmp fresh / tarn" : "openmp / tarn", n, op,
                 bench_ratio(m[V_OMP_FRESH], m[V_TARN]), 0, 1);
      if (n == 4096)
        goal_ratio(out ? "tarn / openmp touched" : "tarn / openmp", n, op,
                   bench_ratio(m[V_TARN], m[out ? V_OMP_TOUCHED : V_OMP_FRESH]),
                   1, 1.25);
      double dagger = dagger_ms(n, op);
      if (dagger > 0)
        goal_ratio("dagger (seed) / tarn", n, op,
                   bench_ratio(dagger * 1e-3, m[V_TARN]), 0, 2.5);
    }
  }
}

int bench_array(bench_run *run) {
  const size_t *sizes;
  size_t nsizes = bench_sizes(
      run, default_sizes, sizeof default_sizes / sizeof *default_sizes, &sizes);
  static struct figures f;
  memset(&f, 0, sizeof f);
  size_t wanted = 0;
  for (size_t s = 0; s < nsizes; s++) wanted += size_wanted(run, sizes[s]);
  if (wanted == 0) return 0;
  tarn_rt *rt;
  if (bench_rt_open(run, "array", &rt) != 0) return 1;
  int failed = 0;
  for (size_t s = 0; s < nsizes && !failed; s++) {
    if (!size_wanted(run, sizes[s])) continue;
    struct ctx c;
    failed = ctx_open(&c, rt, sizes[s], bench_threads(run));
    f.n[f.count] = sizes[s];
    for (int op = 0; op < ARRAY_OP_COUNT && !failed; op++)
      failed = measure_op(run, &c, op, f.med[f.count][op]);
    f.count++;
    ctx_free(&c);
  }
  int rc = tarn_rt_destroy(rt);
  if (rc != 0 && !failed) failed = tarn_failed("tarn_rt_destroy", rc);
  print_goals(&f);
  return failed;
}
