/* stencil.c: the `stencil` suite of `tarn bench` (BENCH.md): assign (const),
 * the 3 x 3 neighbourhood sum under Wrap, Pad (0), Clamp and Reflect,
 * update (+) and multi-expr on an N x N tiled tarn matrix, each into a
 * matrix B made before timing, and alloc (neighbors Wrap) into a new matrix
 * (destroyed after the clock stops); each sample is a region timed to
 * tarn_region_wait. Side by side with a plain C loop and a OpenMP
 * loop (stencil_peers.h) on plain buffers written before (touched), and for
 * alloc also into fresh memory. The order, the rows and the goals are the
 * driver's it shares with the array suite (loops.h); here are the
 * operations, their check and their samples. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "loops.h"
#include "stencil_peers.h"
#include "tarn.h"

#define INPUT_SEED 1u /* the input X */

static const size_t default_sizes[] = {256, 1024, 4096};

static const loop_op ops[STENCIL_OP_COUNT] = {
    [STENCIL_ASSIGN] = {"assign (const)", "assign", LOOP_ROWS_TOUCHED, 1},
    [STENCIL_WRAP] = {"neighbors (Wrap)", "wrap", LOOP_ROWS_TOUCHED, 2},
    [STENCIL_PAD] = {"neighbors (Pad)", "pad", LOOP_ROWS_TOUCHED, 2},
    [STENCIL_CLAMP] = {"neighbors (Clamp)", "clamp", LOOP_ROWS_TOUCHED, 2},
    [STENCIL_REFLECT] = {"neighbors (Reflect)", "reflect", LOOP_ROWS_TOUCHED,
                         2},
    [STENCIL_UPDATE] = {"update (+)", "update", LOOP_ROWS_TOUCHED, 3},
    [STENCIL_MULTI] = {"multi-expr", "multi-expr", LOOP_ROWS_TOUCHED, 3},
    [STENCIL_ALLOC] = {"alloc (neighbors Wrap)", "alloc", LOOP_ROWS_ALL, 2},
};

/* Dagger.jl's medians in milliseconds, published reference figures (not
 * measured here): seed /work/shared/seeds/000_1e26231be056f87e.txt, the
 * table "Dagger benchmarks: dirty vs master", rows
 * "stencil/dagger/N=256 (block 256)/..." and "stencil/dagger/N=1024 (block
 * 512)/...", column "dirty" (the first figure of "median ± spread"). Dagger
 * ran 8 threads. Indexed by [0: N=256, 1: N=1024][enum stencil_op]. */
static const size_t dagger_sizes[2] = {256, 1024};
static const double dagger_median_ms[2][STENCIL_OP_COUNT] = {
    /* N=256: assign, wrap, pad, clamp, reflect, update, multi-expr, alloc */
    {0.785, 4.97, 4.97, 4.65, 4.74, 0.865, 1.53, 5.12},
    /* N=1024: assign, wrap, pad, clamp, reflect, update, multi-expr, alloc */
    {1.65, 26, 23.9, 25.4, 25, 3.42, 4, 26},
};

/* One size's inputs, all made and waited for before any clock starts. */
struct ctx {
  tarn_rt *rt;
  size_t n, b;
  unsigned threads;                  /* of the OpenMP peer */
  tarn_stencil st[STENCIL_OP_COUNT]; /* by op, for the neighbourhood ops */
  tarn_matrix *x;                    /* the input X */
  tarn_matrix *out;                  /* B, the existing output */
  tarn_matrix *a;                    /* A of multi-expr */
  double *xbuf;    /* X's values, column-major, for the peers */
  double *touched; /* the peers' output buffer, written before timing */
  double *abuf;    /* the peers' A of multi-expr, written before timing */
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("stencil", what, status);
}

/* multi-expr's kernel over blocks of A (data[0]) and B (data[1]): per
 * column, A = 1 then B = 2 A, as one @stencil block of two statements. */
static int multi_expr_block(const tarn_block *blk, void *arg) {
  (void)arg;
  size_t rows = blk->rows, ld = blk->ld;
  for (size_t q = 0; q < blk->cols; q++) {
    double *a = blk->data[0] + q * ld, *b = blk->data[1] + q * ld;
    for (size_t p = 0; p < rows; p++) a[p] = 1.0;
    for (size_t p = 0; p < rows; p++) b[p] = 2.0 * a[p];
  }
  return 0;
}

/* Submits tarn's operation `op`: into B, or a new matrix *fresh for alloc. */
static int submit_op(struct ctx *c, int op, tarn_matrix **fresh) {
  switch (op) {
    case STENCIL_ASSIGN:
      return tarn_stencil_assign(c->out, 1.0);
    case STENCIL_WRAP:
    case STENCIL_PAD:
    case STENCIL_CLAMP:
    case STENCIL_REFLECT:
      return tarn_stencil_sum(&c->st[op], c->x, &c->out);
    case STENCIL_UPDATE:
      return tarn_stencil_update_add(c->out, c->x);
    case STENCIL_MULTI: {
      tarn_matrix *const ab[] = {c->a, c->out};
      const tarn_access written[] = {TARN_WRITE, TARN_WRITE};
      return tarn_matrix_apply(ab, written, 2, multi_expr_block, NULL);
    }
    case STENCIL_ALLOC:
      return tarn_stencil_sum(&c->st[op], c->x, fresh);
    default:
      return TARN_EINVAL;
  }
}

/* One tarn sample: the operation to completion. A new matrix goes to *keep
 * when keep is not NULL, else is destroyed after the clock. */
static int tarn_sample(struct ctx *c, int op, loop_row *r, double *t,
                       tarn_matrix **keep) {
  double f0 = bench_minor_faults();
  tarn_matrix *fresh = NULL;
  tarn_region *region;
  uint64_t t0 = bench_now_ns();
  int rc = tarn_region_begin(c->rt, &region);
  if (rc == 0) {
    int submitted = submit_op(c, op, &fresh);
    rc = tarn_region_wait(region, NULL);
    if (submitted != 0) rc = submitted;
  }
  uint64_t t1 = bench_now_ns();
  r->faults += bench_minor_faults() - f0;
  *t = (double)(t1 - t0) * 1e-9;
  if (keep != NULL)
    *keep = fresh;
  else
    tarn_matrix_destroy(fresh);
  return rc == 0 ? 0 : tarn_failed(ops[op].name, rc);
}

/* The peers' loop (the C loop, or with omp the OpenMP loop) into out. */
static double peer_kernel(void *ctx, int op, int omp, double *out) {
  struct ctx *c = ctx;
  if (omp)
    stencil_omp_run(op, c->xbuf, c->abuf, out, c->n, c->threads);
  else
    stencil_cols(op, c->xbuf, c->abuf, out, c->n, 0, c->n);
  bench_escape(c->abuf);
  return 0;
}

/* One peer sample: variant v of `op` on the plain buffers. */
static int peer_sample(struct ctx *c, int op, int v, loop_row *r, double *t) {
  return loop_peer_sample("stencil", ops[op].rows, v, c->n, c->touched,
                          peer_kernel, c, op, r, t, NULL);
}

/* Compares a few elements of tarn's result (B, or `fresh` for alloc) with
 * the C loop's (in c->touched): the corners, an interior element and the
 * elements on either side of the first tile edge. */
static int check(struct ctx *c, int op, tarn_matrix *fresh) {
  tarn_matrix *res = ops[op].rows == LOOP_ROWS_ALL ? fresh : c->out;
  size_t n = c->n, e = c->b < n ? c->b : n - 1;
  size_t at[7][2] = {{0, 0},         {n - 1, n - 1}, {0, n - 1}, {n - 1, 0},
                     {n / 3, n / 2}, {e - 1, e},     {e, e - 1}};
  for (int k = 0; k < 7; k++) {
    size_t i = at[k][0] % n, j = at[k][1] % n;
    double v;
    int rc = tarn_matrix_get(res, i, j, &v);
    if (rc != 0) return tarn_failed("tarn_matrix_get", rc);
    double want = c->touched[i + j * n];
    if (!bench_close(v, want, 1e-12)) {
      fprintf(stderr,
              "tarn bench: stencil: N=%zu %s: element (%zu, %zu) is %.17g in "
              "tarn, %.17g in the C loop\n",
              n, ops[op].name, i, j, v, want);
      return 1;
    }
  }
  return 0;
}

/* Before the checking round of update (+): B = 0.5 in tarn and in the C
 * loop's buffer, so both add X to the same values. */
static int reset_update(struct ctx *c) {
  for (size_t k = 0; k < c->n * c->n; k++) c->touched[k] = 0.5;
  tarn_region *region;
  int rc = tarn_region_begin(c->rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  int submitted = tarn_stencil_assign(c->out, 0.5);
  rc = tarn_region_wait(region, NULL);
  if (submitted != 0 || rc != 0)
    return tarn_failed("tarn_stencil_assign", submitted != 0 ? submitted : rc);
  return 0;
}

/* The checked round: tarn and the C loop into touched memory (update
 * first sets both outputs to the same values). */
static int check_round(void *ctx, int op) {
  struct ctx *c = ctx;
  loop_row scratch = {{0}, 0, 0};
  double t;
  tarn_matrix *fresh = NULL;
  if (op == STENCIL_UPDATE && reset_update(c) != 0) return 1;
  if (tarn_sample(c, op, &scratch, &t, &fresh) != 0) return 1;
  int bad = peer_sample(c, op, V_C_TOUCHED, &scratch, &t) != 0 ||
            check(c, op, fresh) != 0;
  tarn_matrix_destroy(fresh);
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
  tarn_matrix_destroy(c->out);
  tarn_matrix_destroy(c->a);
  free(c->xbuf);
  free(c->touched);
  free(c->abuf);
}

/* Makes X (tarn and plain), B and A (tarn, written) and the peers' buffers
 * (written) for size n. */
static int ctx_open(void *ctx, tarn_rt *rt, size_t n, unsigned threads) {
  struct ctx *c = ctx;
  static const tarn_boundary_kind kinds[STENCIL_OP_COUNT] = {
      [STENCIL_WRAP] = TARN_BOUNDARY_WRAP,
      [STENCIL_PAD] = TARN_BOUNDARY_PAD,
      [STENCIL_CLAMP] = TARN_BOUNDARY_CLAMP,
      [STENCIL_REFLECT] = TARN_BOUNDARY_REFLECT,
      [STENCIL_ALLOC] = TARN_BOUNDARY_WRAP};
  memset(c, 0, sizeof *c);
  c->rt = rt;
  c->threads = threads;
  c->n = n;
  c->b = bench_tile_size(n);
  for (int op = 0; op < STENCIL_OP_COUNT; op++) {
    if (stencil_kind(op) < 0) continue;
    int rc = tarn_stencil_init(&c->st[op], 1, kinds[op], 0.0);
    if (rc != 0) return tarn_failed("tarn_stencil_init", rc);
  }
  size_t bytes = n * n * sizeof(double);
  c->xbuf = bench_buffer_alloc(bytes);
  c->touched = bench_buffer_alloc(bytes);
  c->abuf = bench_buffer_alloc(bytes);
  if (c->xbuf == NULL || c->touched == NULL || c->abuf == NULL) {
    fprintf(stderr, "tarn bench: stencil: out of memory for N=%zu\n", n);
    return 1;
  }
  memset(c->touched, 0, bytes);
  memset(c->abuf, 0, bytes);
  tarn_region *region;
  int rc = tarn_region_begin(rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  int made = tarn_matrix_rand(rt, n, n, c->b, c->b, INPUT_SEED, &c->x);
  if (made == 0) made = tarn_matrix_fill(rt, n, n, c->b, c->b, 0.0, &c->out);
  if (made == 0) made = tarn_matrix_fill(rt, n, n, c->b, c->b, 0.0, &c->a);
  rc = tarn_region_wait(region, NULL);
  if (made != 0 || rc != 0)
    return tarn_failed("making the inputs", made != 0 ? made : rc);
  rc = tarn_matrix_to_buffer(c->x, c->xbuf, n);
  return rc == 0 ? 0 : tarn_failed("tarn_matrix_to_buffer", rc);
}

int bench_stencil(bench_run *run) {
  static struct ctx c;
  static const loop_suite suite = {
      .name = "stencil",
      .ops = ops,
      .nops = STENCIL_OP_COUNT,
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
