/* linalg_rect.c: the linalg suite's rows for LU and QR of rectangular
 * matrices (linalg_rect_rows), with its largest N: tall N x N/8 and wide
 * N/8 x N (4096 x 512 and 512 x 4096 by default) in tiles of BENCH.md's
 * size for N/8, so one tile column or one tile row; and tall and narrow
 * 16 N x N/8 (16384 x 128 by default: 128 tiles high). tarn_matrix_lu and
 * tarn_matrix_qr against LAPACKE's dgetrf and dgeqrf on the whole matrix
 * with one thread and with the peers' threads, in alternating rounds as the
 * square rows; GFLOP/s in `extra`. BENCH.md sets no goal for them. Before
 * the clock, one factorisation of each shape is checked: LU's pivots
 * equal dgetrf's and its factors within 1e-8 of them (relative, in the
 * Frobenius norm), QR's |diag R| within 1e-8 of dgeqrf's.
 *
 * Invariant: every sample factors a fresh copy of the same matrix, made
 * outside the clock (tarn's by a region of its own, waited for). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "linalg_peers.h"
#include "linalg_rect.h"
#include "tarn/linalg.h"
#include "tarn/matrix.h"
#include "tarn/pool.h"
#include "tarn/rt.h"

enum { RECT_LU, RECT_QR, RECT_OPS };
enum { RV_TARN, RV_LAPACKE1, RV_LAPACKEN, RECT_VARIANTS };

/* Rounds per row, variants in turn and in reverse order the next round
 * (as the square rows, linalg.c). */
#define RECT_ROUNDS 2

/* One shape: the matrix (tarn's and a column-major copy), its work
 * buffers, and the tarn pivots. */
struct rect {
  tarn_rt *rt;
  size_t m, n, b, k; /* k = min(m, n) */
  int threads;       /* the peers' threads */
  tarn_matrix *a;
  double *buf, *w, *tau;
  lapack_int *ipiv;
  size_t *piv;
};

/* A row measured over rounds. */
struct rect_row {
  int v;
  char name[160];
  size_t n;
  double wall_s;
  double s[BENCH_SAMPLES_MAX];
};

static const char *const op_names[RECT_OPS] = {"lu", "qr"};

static double rect_flops(int op, const struct rect *r) {
  double m = (double)r->m, n = (double)r->n, k = (double)r->k;
  if (op == RECT_LU) /* dgetrf: 2 (m n k - (m + n) k^2 / 2 + k^3 / 3), a
                        multiply and an add each (2 n^3 / 3 for m = n = k,
                        as the square rows count; the multiplies alone
                        were counted until 2026-12-05) */
    return 2 * (m * n * k - (m + n) * k * k / 2 + k * k * k / 3);
  /* dgeqrf: 2 m n^2 - 2 n^3 / 3 (m >= n), 2 n m^2 - 2 m^3 / 3 (m < n) */
  return m >= n ? 2 * m * n * n - 2 * n * n * n / 3
                : 2 * n * m * m - 2 * m * m * m / 3;
}

static void rect_name(char *buf, size_t size, const struct rect *r, int op,
                      int v) {
  if (v == RV_TARN)
    snprintf(buf, size, "linalg/tarn/%zux%zu (block %zu)/%s", r->m, r->n, r->b,
             op_names[op]);
  else
    snprintf(buf, size, "linalg/lapacke/%zux%zu/%s (%d thread%s)", r->m, r->n,
             op_names[op], v == RV_LAPACKE1 ? 1 : r->threads,
             v == RV_LAPACKE1 || r->threads == 1 ? "" : "s");
}

/* One sample of variant v of op into *t; tarn's factors (and QR's T, which
 * *t_out gets when not NULL) stay in *out when out is not NULL. */
static int rect_sample(struct rect *r, int op, int v, double *t,
                       tarn_matrix **out) {
  if (v != RV_TARN) {
    memcpy(r->w, r->buf, r->m * r->n * sizeof *r->w);
    openblas_set_num_threads(v == RV_LAPACKE1 ? 1 : r->threads);
    uint64_t t0 = bench_now_ns();
    lapack_int info = op == RECT_LU
                          ? LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)r->m,
                                           (int)r->n, r->w, (int)r->m, r->ipiv)
                          : LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)r->m,
                                           (int)r->n, r->w, (int)r->m, r->tau);
    *t = (double)(bench_now_ns() - t0) * 1e-9;
    openblas_set_num_threads(1);
    if (info == 0) return 0;
    fprintf(stderr, "tarn bench: linalg: %s of %zu x %zu: info %d\n",
            op == RECT_LU ? "dgetrf" : "dgeqrf", r->m, r->n, (int)info);
    return 1;
  }
  tarn_matrix *x = NULL, *tq = NULL;
  tarn_region *region;
  int rc = tarn_region_begin(r->rt, &region);
  if (rc != 0) return bench_tarn_failed("linalg", "tarn_region_begin", rc);
  int made = tarn_matrix_copy(r->a, &x);
  rc = tarn_region_wait(region, NULL);
  if (made != 0 || rc != 0) {
    tarn_matrix_destroy(x);
    return bench_tarn_failed("linalg", "tarn_matrix_copy", made ? made : rc);
  }
  uint64_t t0 = bench_now_ns();
  rc = op == RECT_LU ? tarn_matrix_lu(x, r->piv, NULL)
                     : tarn_matrix_qr(x, 0, &tq);
  *t = (double)(bench_now_ns() - t0) * 1e-9;
  tarn_matrix_destroy(tq);
  if (rc != 0) {
    tarn_matrix_destroy(x);
    return op == RECT_LU
               ? linalg_lu_failed(r->m, tarn_matrix_tile_cols(r->a), rc)
               : bench_tarn_failed("linalg", op_names[op], rc);
  }
  if (out != NULL)
    *out = x;
  else
    tarn_matrix_destroy(x);
  return 0;
}

/* tarn's factors of op against LAPACKE's (in r->w, r->ipiv, by the sample
 * just before): LU's pivots equal and factors within 1e-8, QR's |diag R|
 * within 1e-8 (R is unique up to the signs of its rows). */
static int rect_check(struct rect *r, int op, tarn_matrix *f) {
  size_t count = r->m * r->n;
  double *got = malloc(count * sizeof *got);
  if (got == NULL) return bench_tarn_failed("linalg", "malloc", TARN_ENOMEM);
  int rc = tarn_matrix_to_buffer(f, got, r->m);
  if (rc != 0) {
    free(got);
    return bench_tarn_failed("linalg", "tarn_matrix_to_buffer", rc);
  }
  int bad = 0;
  if (op == RECT_LU) {
    double d = 0, s = 0;
    for (size_t i = 0; i < count; i++) {
      d += (got[i] - r->w[i]) * (got[i] - r->w[i]);
      s += r->w[i] * r->w[i];
    }
    for (size_t i = 0; i < r->k; i++)
      bad |= r->piv[i] != (size_t)r->ipiv[i] - 1;
    bad |= !(sqrt(d) <= 1e-8 * sqrt(s));
  } else {
    for (size_t i = 0; i < r->k; i++)
      bad |=
          !bench_close(fabs(got[i + i * r->m]), fabs(r->w[i + i * r->m]), 1e-8);
  }
  free(got);
  if (bad)
    fprintf(stderr, "tarn bench: linalg: %s of %zu x %zu differs from %s\n",
            op_names[op], r->m, r->n, op == RECT_LU ? "dgetrf's" : "dgeqrf's");
  return bad;
}

/* Row `row`'s share of round `round`: a pause (BENCH_QUIESCE_BLAS_S), one
 * warm-up sample, then samples up to the round's share of run->samples
 * and of run->row_min_s (bench_round_more). */
static int rect_round(const bench_run *run, struct rect *r, int op,
                      struct rect_row *row, int round) {
  bench_quiesce(BENCH_QUIESCE_BLAS_S);
  double t;
  if (rect_sample(r, op, row->v, &t, NULL) != 0) return 1;
  while (bench_round_more(run, row->n, row->wall_s, round, RECT_ROUNDS)) {
    uint64_t t0 = bench_now_ns();
    if (rect_sample(r, op, row->v, &row->s[row->n], NULL) != 0) return 1;
    row->n++;
    row->wall_s += (double)(bench_now_ns() - t0) * 1e-9;
  }
  return 0;
}

/* What the pool charges for `rows` x `cols` doubles: whole pages. */
static double pages_of(size_t rows, size_t cols) {
  double page = (double)sysconf(_SC_PAGESIZE);
  return ceil((double)rows * (double)cols * 8.0 / page) * page;
}

/* What tarn_matrix_lu of shape r checks that the memory limit holds
 * before it submits anything (tarn/linalg.h): its first tile column,
 * then the first trsm's two tiles and an update's three, each tile in
 * whole pages as the pool charges it. */
static double rect_lu_charge(const struct rect *r) {
  size_t cols = r->b < r->n ? r->b : r->n;
  double charge = 0;
  for (size_t i = 0; i < r->m; i += r->b)
    charge += pages_of(r->m - i < r->b ? r->m - i : r->b, cols);
  double tile = pages_of(r->b < r->m ? r->b : r->m, cols);
  int tiles = r->n <= r->b ? 0 : r->m <= r->b ? 2 : 3;
  return charge > tiles * tile ? charge : tiles * tile;
}

/* Whether tarn can run op on shape r under the runtime's memory limit: LU
 * pins its panel's tile column, which the tall and narrow shape (16 N
 * rows) makes far larger than a tile (at N = 600 a column of 9600 x 75
 * doubles, 5.5 MiB, while the square rows run under 3 MiB). When it
 * cannot, `note` gets what tarn's row prints instead (until 2026-12-05
 * the suite failed there). */
static int rect_fits(const struct rect *r, int op, char *note, size_t size) {
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(r->rt));
  double need = op == RECT_LU ? rect_lu_charge(r) : 0;
  if (limit == 0 || need <= (double)limit) return 1;
  snprintf(note, size,
           "skipped: lu pins its panel's tile column, %.1f MiB, over the "
           "memory limit of %.1f MiB",
           need / (1 << 20), (double)limit / (1 << 20));
  return 0;
}

/* op on shape r: the check (where tarn can run it), then its wanted rows
 * in rounds. */
static int rect_measure(bench_run *run, struct rect *r, int op) {
  static struct rect_row rows[RECT_VARIANTS];
  char note[160];
  int fits = rect_fits(r, op, note, sizeof note);
  size_t n = 0;
  for (int v = 0; v < RECT_VARIANTS; v++) {
    struct rect_row *row = &rows[n];
    row->v = v;
    row->n = 0;
    row->wall_s = 0;
    rect_name(row->name, sizeof row->name, r, op, v);
    if (!bench_wanted(run, row->name)) continue;
    if (v == RV_TARN && !fits)
      bench_note(run, row->name, note);
    else
      n++;
  }
  if (n == 0) return 0;
  if (fits) {
    double t;
    tarn_matrix *f = NULL;
    if (rect_sample(r, op, RV_LAPACKEN, &t, NULL) != 0 ||
        rect_sample(r, op, RV_TARN, &t, &f) != 0)
      return 1;
    int bad = rect_check(r, op, f);
    tarn_matrix_destroy(f);
    if (bad) return 1;
  }
  for (int round = 0; round < RECT_ROUNDS; round++)
    for (size_t k = 0; k < n; k++)
      if (rect_round(run, r, op, &rows[round % 2 == 0 ? k : n - 1 - k],
                     round) != 0)
        return 1;
  for (size_t k = 0; k < n; k++) {
    double m = bench_median(rows[k].s, rows[k].n);
    bench_extra extra[1] = {{"GFLOP_per_s", rect_flops(op, r) / m * 1e-9}};
    if (bench_report(run, rows[k].name, rows[k].s, rows[k].n, extra, 1) == NULL)
      return 1;
  }
  return 0;
}

static void rect_free(struct rect *r) {
  tarn_matrix_destroy(r->a);
  free(r->buf);
  free(r->w);
  free(r->tau);
  free(r->ipiv);
  free(r->piv);
}

/* Shape m x n in tiles of b: its random matrix and buffers, then its rows. */
static int rect_shape(bench_run *run, tarn_rt *rt, size_t m, size_t n,
                      size_t b) {
  struct rect r = {.rt = rt,
                   .m = m,
                   .n = n,
                   .b = b,
                   .k = m < n ? m : n,
                   .threads = LINALG_PEER_THREADS};
  int wanted = 0;
  for (int op = 0; op < RECT_OPS; op++)
    for (int v = 0; v < RECT_VARIANTS; v++) {
      char name[160];
      rect_name(name, sizeof name, &r, op, v);
      wanted |= bench_wanted(run, name);
    }
  if (!wanted) return 0;
  size_t bytes = m * n * sizeof(double);
  r.buf = bench_buffer_alloc(bytes);
  r.w = bench_buffer_alloc(bytes);
  r.tau = malloc(r.k * sizeof *r.tau);
  r.ipiv = malloc(r.k * sizeof *r.ipiv);
  r.piv = malloc(r.k * sizeof *r.piv);
  int rc = r.buf == NULL || r.w == NULL || r.tau == NULL || r.ipiv == NULL ||
                   r.piv == NULL
               ? TARN_ENOMEM
               : tarn_matrix_rand(rt, m, n, b, b, 31, &r.a);
  if (rc == 0) rc = tarn_matrix_to_buffer(r.a, r.buf, m);
  int failed =
      rc != 0 ? bench_tarn_failed("linalg", "a rectangular matrix", rc) : 0;
  for (int op = 0; op < RECT_OPS && !failed; op++)
    failed = rect_measure(run, &r, op);
  rect_free(&r);
  return failed;
}

int linalg_rect_rows(bench_run *run, tarn_rt *rt, size_t n) {
  size_t k = n / 8;
  if (k == 0) return 0;
  size_t b = bench_tile_size(k);
  int failed = rect_shape(run, rt, n, k, b);
  if (!failed) failed = rect_shape(run, rt, k, n, b);
  /* tall and narrow, 128 tiles high: QR's tree of domains */
  return failed ? failed : rect_shape(run, rt, 16 * n, k, b);
}

int linalg_lu_failed(size_t rows, size_t tile, int status) {
  bench_tarn_failed("linalg", "lu", status);
  double column = (double)rows * (double)tile * 8 / (1 << 20);
  double gemm = 3 * (double)tile * (double)tile * 8 / (1 << 20);
  if (status == TARN_ENOMEM)
    fprintf(stderr,
            "tarn bench: linalg: lu pins a panel's tile column of %zu x %zu "
            "doubles (%.1f MiB) and an update's three tiles (%.1f MiB): "
            "--mem-limit must hold the larger\n",
            rows, tile, column, gemm);
  return 1;
}
