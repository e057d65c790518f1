/* stencil.c: the `stencil` suite of `tarn bench` (BENCH.md): assign (const),
 * the 3 x 3 neighbourhood sum under Wrap, Pad (0), Clamp and Reflect,
 * update (+) and multi-expr on an N x N tiled tarn matrix, each into a
 * matrix B made before timing, and alloc (neighbors Wrap) into a new matrix
 * (destroyed after the clock stops); each sample is a region timed to
 * tarn_region_wait. Side by side with a plain C loop and a OpenMP
 * loop (stencil_peers.h) on plain buffers written before (touched), and for
 * alloc also into fresh memory (mapped inside the clock). One round checks
 * tarn's results against the C loop's, then each variant runs its samples
 * after a warm-up of its own. Ends with the goals from the medians. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "bench.h"
#include "stencil_peers.h"
#include "tarn.h"

#define INPUT_SEED 1u /* the input X */

static const size_t default_sizes[] = {256, 1024, 4096};

/* What runs an operation: tarn, and the peers (fresh: output mapped per
 * sample; touched: a buffer written before). Only alloc has *_FRESH rows. */
enum { V_TARN, V_OMP_FRESH, V_OMP_TOUCHED, V_C_FRESH, V_C_TOUCHED, V_COUNT };

struct op {
  const char *name; /* the row name, as Dagger's */
  const char *short_name;
  int fresh;      /* a new output each time: has the *_FRESH rows */
  double touches; /* elements read plus written, per matrix element */
};

static const struct op ops[STENCIL_OP_COUNT] = {
    [STENCIL_ASSIGN] = {"assign (const)", "assign", 0, 1},
    [STENCIL_WRAP] = {"neighbors (Wrap)", "wrap", 0, 2},
    [STENCIL_PAD] = {"neighbors (Pad)", "pad", 0, 2},
    [STENCIL_CLAMP] = {"neighbors (Clamp)", "clamp", 0, 2},
    [STENCIL_REFLECT] = {"neighbors (Reflect)", "reflect", 0, 2},
    [STENCIL_UPDATE] = {"update (+)", "update", 0, 3},
    [STENCIL_MULTI] = {"multi-expr", "multi-expr", 0, 3},
    [STENCIL_ALLOC] = {"alloc (neighbors Wrap)", "alloc", 1, 2},
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

/* The samples of one row and what was counted around them. */
struct row {
  double s[BENCH_SAMPLES_MAX];
  double faults; /* minor page faults, summed over samples */
};

/* Medians, in seconds, by size, operation and variant; -1: not measured. */
struct figures {
  size_t n[BENCH_SIZES_MAX];
  size_t count;
  double med[BENCH_SIZES_MAX][STENCIL_OP_COUNT][V_COUNT];
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
static int tarn_sample(struct ctx *c, int op, struct row *r, double *t,
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

/* One peer sample: variant v of `op` on the plain buffers. */
static int peer_sample(struct ctx *c, int op, int v, struct row *r, double *t) {
  size_t bytes = c->n * c->n * sizeof(double);
  int omp = v == V_OMP_FRESH || v == V_OMP_TOUCHED;
  int fresh = v == V_OMP_FRESH || v == V_C_FRESH;
  double f0 = bench_minor_faults();
  uint64_t t0 = bench_now_ns();
  double *out = c->touched;
  if (fresh) {
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      perror("tarn bench: stencil: mmap");
      return 1;
    }
    out = m;
  }
  if (omp)
    stencil_omp_run(op, c->xbuf, c->abuf, out, c->n, c->threads);
  else
    stencil_cols(op, c->xbuf, c->abuf, out, c->n, 0, c->n);
  bench_escape(out);
  bench_escape(c->abuf);
  uint64_t t1 = bench_now_ns();
  r->faults += bench_minor_faults() - f0;
  *t = (double)(t1 - t0) * 1e-9;
  if (out != c->touched) munmap(out, bytes);
  return 0;
}

/* Compares a few elements of tarn's result (B, or `fresh` for alloc) with
 * the C loop's (in c->touched): the corners, an interior element and the
 * elements on either side of the first tile edge. */
static int check(struct ctx *c, int op, tarn_matrix *fresh) {
  tarn_matrix *res = ops[op].fresh ? fresh : c->out;
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

static void row_name(char *buf, size_t size, size_t n, size_t b, int op,
                     int v) {
  static const char *const peer[V_COUNT] = {"tarn", "openmp", "openmp", "c",
                                            "c"};
  if (v == V_TARN) {
    snprintf(buf, size, "stencil/tarn/N=%zu (block %zu)/%s", n, b,
             ops[op].name);
    return;
  }
  const char *mode = v == V_OMP_FRESH || v == V_C_FRESH ? " fresh" : " touched";
  snprintf(buf, size, "stencil/%s/N=%zu/%s%s", peer[v], n, ops[op].name, mode);
}

/* Whether a row is printed for variant v of op. */
static int has_row(int op, int v) {
  return ops[op].fresh || (v != V_OMP_FRESH && v != V_C_FRESH);
}

/* Whether any row of `op` at size n is wanted (--filter). */
static int op_wanted(bench_run *run, size_t n, size_t b, int op) {
  for (int v = 0; v < V_COUNT; v++) {
    char name[160];
    row_name(name, sizeof name, n, b, op, v);
    if (has_row(op, v) && bench_wanted(run, name)) return 1;
  }
  return 0;
}

/* Whether any row at size n is wanted. */
static int size_wanted(bench_run *run, size_t n) {
  for (int op = 0; op < STENCIL_OP_COUNT; op++)
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

/* One operation at one size: a round that checks tarn against the C loop,
 * then the samples, variant by variant, each after a warm-up. */
static int measure_op(bench_run *run, struct ctx *c, int op, double *med) {
  static struct row rows[V_COUNT];
  static const int order[V_COUNT] = {V_TARN, V_OMP_FRESH, V_C_FRESH,
                                     V_OMP_TOUCHED, V_C_TOUCHED};
  static const int order_touched[3] = {V_TARN, V_OMP_TOUCHED, V_C_TOUCHED};
  int nv = ops[op].fresh ? V_COUNT : 3;
  const int *seq = ops[op].fresh ? order : order_touched;
  memset(rows, 0, sizeof rows);
  for (int v = 0; v < V_COUNT; v++) med[v] = -1;
  if (!op_wanted(run, c->n, c->b, op)) return 0;

  double t;
  tarn_matrix *fresh = NULL;
  if (op == STENCIL_UPDATE && reset_update(c) != 0) return 1;
  if (tarn_sample(c, op, &rows[V_TARN], &t, &fresh) != 0) return 1;
  if (peer_sample(c, op, V_C_TOUCHED, &rows[V_C_TOUCHED], &t) != 0 ||
      check(c, op, fresh) != 0) {
    tarn_matrix_destroy(fresh);
    return 1;
  }
  tarn_matrix_destroy(fresh);
  memset(rows, 0, sizeof rows);

  /* Variant by variant, each after a warm-up of its own (as the array
   * suite: interleaving sample by sample makes each party's threads find
   * the cores cold or busy). */
  for (int k = 0; k < nv; k++) {
    int v = seq[k];
    /* Warm-up rounds for BENCH_WARMUP_S at least (one round was not
     * enough here: a core that idled takes a few rounds to come back). */
    uint64_t warm_until = bench_warmup_until();
    do {
      double *ts = &rows[v].s[0];
      int rc = v == V_TARN ? tarn_sample(c, op, &rows[v], ts, NULL)
                           : peer_sample(c, op, v, &rows[v], ts);
      if (rc != 0) return 1;
    } while (bench_now_ns() < warm_until);
    rows[v].faults = 0;
    for (size_t i = 0; i < run->samples; i++) {
      double *ts = &rows[v].s[i];
      int rc = v == V_TARN ? tarn_sample(c, op, &rows[v], ts, NULL)
                           : peer_sample(c, op, v, &rows[v], ts);
      if (rc != 0) return 1;
    }
  }
  static const int print[V_COUNT] = {V_TARN, V_OMP_FRESH, V_OMP_TOUCHED,
                                     V_C_FRESH, V_C_TOUCHED};
  for (int k = 0; k < V_COUNT; k++) {
    int v = print[k];
    char name[160];
    row_name(name, sizeof name, c->n, c->b, op, v);
    if (!has_row(op, v) || !bench_wanted(run, name)) continue;
    if ((med[v] = report(run, c, op, v, &rows[v])) < 0) return 1;
  }
  return 0;
}

static void ctx_free(struct ctx *c) {
  tarn_matrix_destroy(c->x);
  tarn_matrix_destroy(c->out);
  tarn_matrix_destroy(c->a);
  free(c->xbuf);
  free(c->touched);
  free(c->abuf);
}

/* Makes X (tarn and plain), B and A (tarn, written) and the peers' buffers
 * (written) for size n. */
static int ctx_open(struct ctx *c, tarn_rt *rt, size_t n, unsigned threads) {
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

static void goal_ratio(const char *label, size_t n, int op, double value,
                       int at_most, double limit) {
  bench_size_goal(n, ops[op].short_name, label, value, "x", at_most, limit);
}

static double dagger_ms(size_t n, int op) {
  return bench_seed_ms(n, dagger_sizes, 2, &dagger_median_ms[0][0],
                       STENCIL_OP_COUNT, (size_t)op);
}

static void print_goals(const struct figures *f) {
  bench_goal_heading(
      "Goals (from the medians above; Dagger's from the seed table):");
  for (size_t s = 0; s < f->count; s++) {
    size_t n = f->n[s];
    for (int op = 0; op < STENCIL_OP_COUNT; op++) {
      const double *m = f->med[s][op];
      int fr = ops[op].fresh;
      goal_ratio(fr ? "openmp fresh / tarn" : "openmp touched / tarn", n, op,
                 bench_ratio(m[fr ? V_OMP_FRESH : V_OMP_TOUCHED], m[V_TARN]), 0,
                 1);
      if (n == 4096)
        goal_ratio("tarn / openmp touched", n, op,
                   bench_ratio(m[V_TARN], m[V_OMP_TOUCHED]), 1, 1.25);
      double dagger = dagger_ms(n, op);
      if (dagger > 0)
        goal_ratio("dagger (seed) / tarn", n, op,
                   bench_ratio(dagger * 1e-3, m[V_TARN]), 0, 2.5);
    }
  }
}

int bench_stencil(bench_run *run) {
  const size_t *sizes;
  size_t nsizes = bench_sizes(
      run, default_sizes, sizeof default_sizes / sizeof *default_sizes, &sizes);
  static struct figures f;
  memset(&f, 0, sizeof f);
  size_t wanted = 0;
  for (size_t s = 0; s < nsizes; s++) wanted += size_wanted(run, sizes[s]);
  if (wanted == 0) return 0;
  tarn_rt *rt;
  if (bench_rt_open(run, "stencil", &rt) != 0) return 1;
  int failed = 0;
  for (size_t s = 0; s < nsizes && !failed; s++) {
    if (!size_wanted(run, sizes[s])) continue;
    struct ctx c;
    failed = ctx_open(&c, rt, sizes[s], bench_threads(run));
    f.n[f.count] = sizes[s];
    for (int op = 0; op < STENCIL_OP_COUNT && !failed; op++)
      failed = measure_op(run, &c, op, f.med[f.count][op]);
    f.count++;
    ctx_free(&c);
  }
  int rc = tarn_rt_destroy(rt);
  if (rc != 0 && !failed) failed = tarn_failed("tarn_rt_destroy", rc);
  print_goals(&f);
  return failed;
}
