/* array.c: the `array` suite of `tarn bench` (BENCH.md): alloc (rand), add,
 * broadcast, map (sin), sum, norm and transpose of an N x N tiled tarn
 * matrix (a new matrix each time, submitted in a region and timed to
 * tarn_region_wait; destroyed after the clock stops), side by side with a
 * plain C loop and a 2-thread OpenMP loop (array_peers.h) on a plain
 * buffer, each writing into fresh memory and into a buffer already touched
 * (the reductions: one row each). The order, the rows and the goals are
 * the driver's it shares with the stencil suite (loops.h); here are the
 * operations, their check and their samples. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array_peers.h"
#include "bench.h"
#include "loops.h"
#include "tarn.h"

#define INPUT_SEED 1u /* the input X */
#define RAND_SEED 2u  /* the matrix made by alloc (rand) */

static const size_t default_sizes[] = {256, 1024, 4096};

static const loop_op ops[ARRAY_OP_COUNT] = {
    [ARRAY_RAND] = {"alloc (rand)", "alloc", LOOP_ROWS_ALL, 1},
    [ARRAY_ADD] = {"add (X + X)", "add", LOOP_ROWS_ALL, 2},
    [ARRAY_AXPB] = {"broadcast (X .+ 1)", "broadcast", LOOP_ROWS_ALL, 2},
    [ARRAY_SIN] = {"map (sin.(X))", "map", LOOP_ROWS_ALL, 2},
    [ARRAY_SUM] = {"reduce (sum)", "sum", LOOP_ROWS_SCALAR, 1},
    [ARRAY_NORM] = {"norm", "norm", LOOP_ROWS_SCALAR, 1},
    [ARRAY_TRANSPOSE] = {"transpose (permutedims)", "transpose", LOOP_ROWS_ALL,
                         2},
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
static int tarn_sample(struct ctx *c, int op, loop_row *r, double *t,
                       tarn_matrix **keep) {
  double f0 = bench_minor_faults();
  tarn_matrix *out = NULL;
  double v = 0;
  int rc;
  uint64_t t0 = bench_now_ns();
  if (op == ARRAY_SUM) {
    rc = tarn_matrix_sum(c->x, &v);
  } else if (op == ARRAY_NORM) {
    rc = tarn_matrix_norm(c->x, TARN_NORM_FRO, &v);
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

/* The peers' loop (the C loop, or with omp the OpenMP loop) into out. */
static double peer_kernel(void *ctx, int op, int omp, double *out) {
  struct ctx *c = ctx;
  double s = omp ? array_omp_run(op, RAND_SEED, c->xbuf, out, c->n, c->threads)
                 : array_cols(op, RAND_SEED, c->xbuf, out, c->n, 0, c->n);
  return op == ARRAY_NORM ? sqrt(s) : s;
}

/* One peer sample: variant v of `op` on the plain buffer. */
static int peer_sample(struct ctx *c, int op, int v, loop_row *r, double *t) {
  return loop_peer_sample("array", ops[op].rows, v, c->n, c->touched,
                          peer_kernel, c, op, r, t, &c->scalar[v]);
}

/* Compares tarn's result with the C loop's (in c->touched, or the scalar). */
static int check(struct ctx *c, int op, tarn_matrix *out) {
  if (ops[op].rows == LOOP_ROWS_SCALAR) {
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

/* The checked round: tarn, then every peer once (the C loops' results
 * are what tarn's is compared with). */
static int check_round(void *ctx, int op) {
  struct ctx *c = ctx;
  static const int peers[] = {V_OMP_FRESH, V_C_FRESH, V_OMP_TOUCHED,
                              V_C_TOUCHED};
  loop_row scratch = {{0}, 0, 0};
  double t;
  tarn_matrix *out = NULL;
  if (tarn_sample(c, op, &scratch, &t, &out) != 0) return 1;
  size_t npeers = ops[op].rows == LOOP_ROWS_SCALAR ? 2 : 4;
  for (size_t k = 0; k < npeers; k++)
    if (peer_sample(c, op, peers[k], &scratch, &t) != 0) {
      tarn_matrix_destroy(out);
      return 1;
    }
  if (ops[op].rows == LOOP_ROWS_SCALAR)
    c->scalar[V_C_TOUCHED] = c->scalar[V_C_FRESH];
  int bad = check(c, op, out);
  tarn_matrix_destroy(out);
  return bad;
}

static int sample(void *ctx, int op, int v, loop_row *r, double *t) {
  struct ctx *c = ctx;
  return v == V_TARN ? tarn_sample(c, op, r, t, NULL)
                     : peer_sample(c, op, v, r, t);
}

static void ctx_free(void *ctx) {
  struct ctx *c = ctx;
  tarn_matrix_destroy(c->x);
  free(c->xbuf);
  free(c->touched);
}

/* Makes X (tarn and plain) and the touched buffer for size n. */
static int ctx_open(void *ctx, tarn_rt *rt, size_t n, unsigned threads) {
  struct ctx *c = ctx;
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

int bench_array(bench_run *run) {
  static struct ctx c;
  static const loop_suite suite = {
      .name = "array",
      .ops = ops,
      .nops = ARRAY_OP_COUNT,
      .default_sizes = default_sizes,
      .ndefault_sizes = sizeof default_sizes / sizeof *default_sizes,
      .dagger_sizes = dagger_sizes,
      .ndagger_sizes = 2,
      .dagger_ms = &dagger_median_ms[0][0],
      .ctx = &c,
      .open = ctx_open,
      .close = ctx_free,
      .check = check_round,
      .sample = sample};
  return loop_suite_run(run, &suite);
}
