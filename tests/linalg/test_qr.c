/* test_qr.c: tiled Householder QR and its explicit thin Q: the scaled
 * residuals ||A - Q R|| and ||Q^T Q - I|| on square, tall and wide matrices
 * whose sizes are and are not multiples of the tile, one tile and many,
 * several inner block sizes, tiles large enough for the updates to be
 * shared with idle workers (1 to 3 workers); R upper triangular with
 * |diag| equal to LAPACK's on the whole matrix; the shape of the T
 * factors; bad arguments refused; a run under a memory limit that spills
 * giving the same bits; a wide matrix's factors refused by the solves and
 * (A^T A)^-1. The solves with the factors (tarn_matrix_qr_solve):
 * least squares by the orthogonality of its residual to A's columns,
 * minimum norm by its residual and against dgels, one and many right-hand
 * sides (many in pieces of their columns: the bits of a B tiled so), from
 * three threads at once, rank-deficient matrices reported,
 * bad operands refused, a failure before, a memory limit. Q or Q^T applied
 * alone, from either side (tarn_matrix_qr_multiply): Q^T A = [R; 0], the
 * whole Q orthogonal and its first columns the thin Q, products against
 * that explicit Q and back, bad operands, a failure before, a memory
 * limit.
 * Also C = A^T A against dgemm, with tiles small and large enough to be
 * shared with idle workers. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linalg/linalg_internal.h"
#include "support.h"
#include "tarn.h"

/* The residuals of a factorisation of the m x n matrix a (column-major,
 * ld m), k = min(m, n): f is A after tarn_matrix_qr, q the thin Q (m x
 * k), R the k x n upper triangle or trapezoid of f. res[0] = ||A - Q R||_F
 * / (||A||_F max(m, n) eps), res[1] = ||Q^T Q - I||_F / (k eps). */
static void qr_residuals(const double *a, const double *f, const double *q,
                         size_t m, size_t n, double res[2]) {
  size_t k = m < n ? m : n;
  double *r = calloc(k * n, sizeof *r), *d = malloc(m * n * sizeof *d);
  double *g = malloc(k * k * sizeof *g);
  assert_non_null(r);
  assert_non_null(d);
  assert_non_null(g);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i <= j && i < k; i++) r[i + j * k] = f[i + j * m];
  memcpy(d, a, m * n * sizeof *d);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
              -1.0, q, (int)m, r, (int)k, 1.0, d, (int)m);
  res[0] = test_fro(d, m * n) /
           (test_fro(a, m * n) * (double)(m > n ? m : n) * DBL_EPSILON);
  for (size_t j = 0; j < k; j++)
    for (size_t i = 0; i < k; i++) g[i + j * k] = i == j ? -1.0 : 0.0;
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)k, (int)k, (int)m,
              1.0, q, (int)m, q, (int)m, 1.0, g, (int)k);
  res[1] = test_fro(g, k * k) / ((double)k * DBL_EPSILON);
  free(r);
  free(d);
  free(g);
}

/* Whether QR gathers its domains (tarn__qr_gather_short_columns, on
 * unless a group of tests turns it off). */
static bool gathering = true;

/* An m x n A in square tiles of tb (clamped to the matrix), as
 * tarn/linalg.h describes its QR. */
struct qr_shape {
  size_t m, n, mb, nb, mt, nt, panels;
};

static struct qr_shape qr_shape_of(size_t m, size_t n, size_t tb) {
  struct qr_shape q = {.m = m, .n = n};
  q.mb = tb < m ? tb : m;
  q.nb = tb < n ? tb : n;
  q.mt = (m + q.mb - 1) / q.mb;
  q.nt = (n + q.nb - 1) / q.nb;
  q.panels = q.mt < q.nt ? q.mt : q.nt;
  return q;
}

/* Whether tile column k is reduced by a tree with the fan f: f >= 2, the
 * tile columns from k on at most f, and tile column k 4 tiles or more, 4
 * times as many as those tile columns, and 2048 rows or more. */
static bool tree_at(const struct qr_shape *q, size_t k, size_t f) {
  return f > 1 && q->nt - k <= f && q->mt - k >= 4 &&
         q->mt - k >= 4 * (q->nt - k) && q->m - k * q->mb >= 2048;
}

static bool some_tree(const struct qr_shape *q, size_t f) {
  for (size_t k = 0; k < q->panels; k++)
    if (tree_at(q, k, f)) return true;
  return false;
}

/* Whether the domains with the fan f may be gathered: tiles of 64 rows or
 * fewer, 2 f - 1 < mt, each domain's copy 1 MiB at most (a tree's domains
 * h = max(2, ceil(p / f)) tiles each, the last holding the rest, and a
 * last domain that would start with a short tile joins the one before). */
static bool gatherable_with(const struct qr_shape *q, size_t f) {
  if (q->mb > 64 || q->mt < 2 || 2 * f - 1 >= q->mt) return false;
  for (size_t k = 0; k < q->panels; k++) {
    size_t p = q->mt - k, h = p, d = 1;
    size_t cols = (k + 1) * q->nb <= q->n ? q->nb : q->n - k * q->nb;
    if (tree_at(q, k, f)) {
      h = (p + f - 1) / f;
      if (h < 2) h = 2;
      d = (p + h - 1) / h;
      size_t first = (k + (d - 1) * h) * q->mb; /* the last domain's */
      if ((first + q->mb <= q->m ? q->mb : q->m - first) < cols) d--;
    }
    for (size_t i = 0; i < d; i++) {
      size_t from = (k + i * h) * q->mb;
      size_t to = i + 1 < d ? from + h * q->mb : q->m;
      if ((to - from) * cols * sizeof(double) > 1 << 20) return false;
    }
  }
  return true;
}

/* T's tile rows for an m x n A in square tiles of tb on `workers` workers
 * with no memory limit, as tarn/linalg.h gives them. The runtime's fan
 * f: min(workers, 64) when that makes a tree somewhere, else 1. Gathered
 * (with may_gather): 2 g - 1 for the first fan g from f on (a larger g
 * only where it makes a tree) whose domains may be gathered and 2 g - 1 <
 * mt; else flat, mt + f - 1. */
static size_t t_tile_rows(size_t m, size_t n, size_t tb, size_t workers,
                          bool may_gather) {
  struct qr_shape q = qr_shape_of(m, n, tb);
  size_t f = workers < 64 ? workers : 64;
  if (!some_tree(&q, f)) f = 1;
  for (size_t g = f; may_gather && g <= 64 && 2 * g - 1 < q.mt; g++)
    if ((g == f || some_tree(&q, g)) && gatherable_with(&q, g))
      return 2 * g - 1;
  return q.mt + f - 1;
}

/* QR of x, under a memory limit too tight for gathered domains (a
 * quarter of the small matrices of the tests below: their tasks would
 * take more than an eighth of it), keeps the flat layout, and its bits are
 * those of a run without a limit only in the same layout: with `flat`,
 * x's factorisation keeps it whatever the group of tests wants. */
static int qr_flat_if(bool flat, tarn_matrix *x, size_t ib, tarn_matrix **t) {
  tarn__qr_gather_short_columns(gathering && !flat);
  int rc = tarn_matrix_qr(x, ib, t);
  tarn__qr_gather_short_columns(gathering);
  return rc;
}

/* Factors an m x n random matrix of tb x tb tiles with inner block ib and
 * checks the residuals, the T shape, and R's diagonal against dgeqrf. */
static void check_qr(tarn_rt *rt, size_t m, size_t n, size_t tb, size_t ib,
                     uint64_t seed) {
  tarn_matrix *x = NULL, *t = NULL, *q = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, seed, &x), 0);
  double *a = test_buffer_of(x);
  assert_int_equal(tarn_matrix_qr(x, ib, &t), 0);
  assert_non_null(t);
  size_t nb = tarn_matrix_tile_cols(x);
  /* ib 0: 16 for an A 16 times as tall as wide or more, else 32 */
  size_t ib0 = m / 16 >= n ? 16 : 32;
  size_t ibe = ib == 0 ? (nb < ib0 ? nb : ib0) : ib;
  /* under a memory limit, the flat layout where gathering does not fit,
   * or gathered with a larger fan (2 f - 1 < mt tile rows) */
  size_t trows = tarn_matrix_rows(t) / ibe, workers = tarn_rt_workers(rt);
  bool limited = tarn_pool_mem_limit(tarn_rt_pool(rt)) != 0;
  size_t gathered = t_tile_rows(m, n, tb, workers, gathering);
  assert_int_equal(tarn_matrix_rows(t) % ibe, 0);
  assert_true(trows == gathered ||
              (limited && (trows == t_tile_rows(m, n, tb, workers, false) ||
                           (gathering && trows % 2 == 1 && trows > gathered &&
                            trows < qr_shape_of(m, n, tb).mt))));
  assert_int_equal(tarn_matrix_cols(t), n);
  assert_int_equal(tarn_matrix_tile_rows(t), ibe);
  assert_int_equal(tarn_matrix_tile_cols(t), nb);
  assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
  size_t k = m < n ? m : n;
  assert_int_equal(tarn_matrix_rows(q), m);
  assert_int_equal(tarn_matrix_cols(q), k);
  double *f = test_buffer_of(x), *qb = test_buffer_of(q);
  double res[2];
  qr_residuals(a, f, qb, m, n, res);
  if (getenv("QR_VERBOSE") || !(res[0] < 20 && res[1] < 20))
    print_error("qr m %zu n %zu tile %zu ib %zu: %g %g\n", m, n, tb, ib, res[0],
                res[1]);
  assert_true(res[0] < 20);
  assert_true(res[1] < 20);
  /* R is unique up to the signs of its rows: |diag| as dgeqrf's */
  double *tau = malloc(k * sizeof *tau);
  assert_non_null(tau);
  assert_int_equal(
      LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)m, (int)n, a, (int)m, tau), 0);
  for (size_t i = 0; i < k; i++) {
    double u = fabs(f[i + i * m]), v = fabs(a[i + i * m]);
    assert_true(fabs(u - v) <= 1e3 * DBL_EPSILON * (v + 1.0));
  }
  free(tau);
  free(a);
  free(f);
  free(qb);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(q);
}

static void test_qr_sizes(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][4] = {
      /* m, n, tile, ib */
      {1, 1, 1, 0},
      {1, 1, 32, 0},
      {7, 7, 32, 0},
      {32, 32, 32, 8},
      {50, 50, 16, 0},
      {100, 100, 30, 7},
      {45, 45, 1, 1},
      {64, 64, 8, 8},
      {129, 129, 16, 5},
      {96, 64, 32, 32},
      {200, 50, 16, 5},
      {100, 7, 32, 0},
      {100, 7, 32, 3},
      {33, 20, 8, 3},
      {130, 97, 16, 16},
      {300, 30, 30, 0},
      /* ib 0 on either side of M = 16 N: 16, then 30 (nb) */
      {480, 30, 30, 0},
      {479, 30, 30, 0},
      {40, 1, 8, 0},
      {50, 33, 50, 4},
      /* wide: tiles that do and do not divide, one tile, one tile row */
      {1, 40, 8, 0},
      {6, 8, 2, 0},
      {7, 30, 32, 0},
      {64, 96, 32, 8},
      {30, 100, 16, 5},
      {33, 130, 16, 16},
      {100, 129, 16, 7},
      {20, 45, 1, 1},
      {50, 200, 64, 0},
      {50, 200, 64, 50},
      {97, 130, 16, 3},
  };
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
    check_qr(rt, cases[s][0], cases[s][1], cases[s][2], cases[s][3], 300 + s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* One worker: the same checks with every task run in order by one thread;
 * and many workers on a larger matrix. */
static void test_qr_workers(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(1, 0);
  check_qr(rt, 90, 60, 16, 4, 9);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  rt = test_rt(8, 0);
  check_qr(rt, 257, 200, 24, 6, 10);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Tiles large enough for gemqrt and tpmqrt to be shared by columns with
 * idle workers (in the factorisation and in forming Q): square, tall and wide,
 * one tile column and several, with 1, 2 and 3 workers. */
static void test_qr_large_tiles(void **state) {
  (void)state;
  static const size_t cases[][4] = {
      /* m, n, tile, ib */
      {300, 300, 300, 0},  {600, 300, 300, 32}, {520, 400, 200, 24},
      {300, 600, 300, 32}, {400, 520, 200, 24},
  };
  for (unsigned w = 1; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
      check_qr(rt, cases[s][0], cases[s][1], cases[s][2], cases[s][3], 500 + s);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void test_qr_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0), *rt2 = test_rt(2, 0);
  tarn_matrix *wide = NULL, *tiles = NULL, *ok = NULL, *ok2 = NULL,
              *other = NULL, *t = NULL, *t2 = NULL, *q = NULL;
  /* tiles not square, with several tile rows and columns */
  assert_int_equal(tarn_matrix_rand(rt, 6, 8, 2, 4, 1, &wide), 0);
  assert_int_equal(tarn_matrix_rand(rt, 8, 8, 4, 2, 1, &tiles), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 8, 4, 4, 1, &ok), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 4, 1, &ok2), 0);
  assert_int_equal(tarn_matrix_rand(rt2, 12, 8, 4, 4, 1, &other), 0);
  t = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr(NULL, 0, &t), TARN_EINVAL);
  assert_null(t);
  assert_int_equal(tarn_matrix_qr(ok, 0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr(wide, 0, &t), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr(tiles, 0, &t), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr(ok, 5, &t), TARN_EINVAL);
  assert_null(t);
  /* refused calls changed nothing: the good ones still work */
  assert_int_equal(tarn_matrix_qr(ok, 4, &t), 0);
  assert_int_equal(tarn_matrix_qr(other, 2, &t2), 0);
  assert_int_equal(tarn_matrix_qr_q(NULL, t, &q), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(ok, NULL, &q), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(ok, t, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(ok, ok, &q), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(ok2, t, &q), TARN_EINVAL); /* shape */
  assert_int_equal(tarn_matrix_qr_q(ok, t2, &q), TARN_EINVAL); /* runtime */
  assert_int_equal(tarn_matrix_qr_q(wide, t, &q), TARN_EINVAL);
  assert_null(q);
  assert_int_equal(tarn_matrix_qr_q(ok, t, &q), 0);
  assert_int_equal(tarn_matrix_rows(q), 12);
  assert_int_equal(tarn_matrix_cols(q), 8);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(tiles);
  tarn_matrix_destroy(ok);
  tarn_matrix_destroy(ok2);
  tarn_matrix_destroy(other);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(t2);
  tarn_matrix_destroy(q);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(rt2), 0);
}

/* Under a memory limit of a quarter of the matrix: tiles spill, and the
 * factors, T and Q have the same bits (and so the same residuals) as a
 * run without a limit in the flat layout (qr_flat_if). */
static void check_qr_mem_limit(size_t m, size_t n) {
  size_t nb = 32, k = m < n ? m : n;
  size_t bytes = m * n * sizeof(double), qbytes = m * k * sizeof(double);
  double *f[2], *qb[2], *a = NULL;
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(3, run == 0 ? 0 : bytes / 4);
    tarn_matrix *x = NULL, *t = NULL, *q = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, nb, nb, 42, &x), 0);
    if (run == 0) a = test_buffer_of(x);
    assert_int_equal(qr_flat_if(run == 0, x, 8, &t), 0);
    assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
    f[run] = test_buffer_of(x);
    qb[run] = test_buffer_of(q);
    tarn_matrix_destroy(x);
    tarn_matrix_destroy(t);
    tarn_matrix_destroy(q);
    if (run == 1)
      test_rt_destroy_spilled(rt, bytes / 4);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  double res[2];
  qr_residuals(a, f[1], qb[1], m, n, res);
  assert_true(res[0] < 20);
  assert_true(res[1] < 20);
  assert_memory_equal(f[0], f[1], bytes);
  assert_memory_equal(qb[0], qb[1], qbytes);
  free(a);
  for (int run = 0; run < 2; run++) {
    free(f[run]);
    free(qb[run]);
  }
}

static void test_qr_mem_limit(void **state) {
  (void)state;
  check_qr_mem_limit(224, 192);
  check_qr_mem_limit(192, 224);
  check_qr_mem_limit(2080, 64); /* trees */
}

/* A wide matrix's factors: the least-squares and minimum-norm solves and
 * (A^T A)^-1 need M >= N and refuse them (TARN_EINVAL, no matrix made),
 * leaving the factors as they were. */
static void test_qr_wide_refusals(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *t = NULL, *b = NULL, *bt = NULL, *x = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 64, 96, 32, 32, 3, &a), 0);
  assert_int_equal(tarn_matrix_qr(a, 8, &t), 0);
  double *f = test_buffer_of(a);
  assert_int_equal(tarn_matrix_rand(rt, 64, 2, 32, 2, 4, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, 96, 2, 32, 2, 5, &bt), 0);
  int info = -1;
  x = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_solve(a, t, TARN_NO_TRANS, b, &x, &info),
                   TARN_EINVAL);
  assert_null(x);
  assert_int_equal(info, 0);
  x = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_solve(a, t, TARN_TRANS, bt, &x, &info),
                   TARN_EINVAL);
  assert_null(x);
  x = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_ata_inverse(a, &x, &info), TARN_EINVAL);
  assert_null(x);
  test_matrix_holds(a, f);
  free(f);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(bt);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- least squares -------------------------------------------------------
 */

/* ||A^T (B - A X)||_F / (max(m, n) ||A||_F (||B||_F + ||A||_F ||X||_F)
 * eps) for the m x n A, the n x nrhs X and the m x nrhs B (column-major,
 * ld their rows): near 0 for the least-squares X of a full-rank A, as the
 * residual of that X is orthogonal to A's columns. */
static double ls_residual(const double *a, const double *x, const double *b,
                          size_t m, size_t n, size_t nrhs) {
  double *r = malloc(m * nrhs * sizeof *r), *g = malloc(n * nrhs * sizeof *g);
  assert_non_null(r);
  assert_non_null(g);
  memcpy(r, b, m * nrhs * sizeof *r);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)nrhs,
              (int)n, -1.0, a, (int)m, x, (int)n, 1.0, r, (int)m);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nrhs,
              (int)m, 1.0, a, (int)m, r, (int)m, 0.0, g, (int)n);
  double na = test_fro(a, m * n);
  double res =
      test_fro(g, n * nrhs) /
      ((double)(m > n ? m : n) * na *
       (test_fro(b, m * nrhs) + na * test_fro(x, n * nrhs)) * DBL_EPSILON);
  free(r);
  free(g);
  return res;
}

/* ||A^T X - B||_F / (max(m, n) ||A||_F ||X||_F eps) for the m x n A, the
 * m x nrhs X and the n x nrhs B, and the distance of X from LAPACK's
 * minimum-norm solution (dgels with 'T' on the whole matrix),
 * ||X - X_dgels||_F / ||X_dgels||_F: res[0], res[1]. */
static void min_norm_residuals(const double *a, const double *x,
                               const double *b, size_t m, size_t n, size_t nrhs,
                               double res[2]) {
  double *r = malloc(n * nrhs * sizeof *r), *w = malloc(m * n * sizeof *w);
  double *ref = calloc(m * nrhs, sizeof *ref);
  assert_non_null(r);
  assert_non_null(w);
  assert_non_null(ref);
  memcpy(r, b, n * nrhs * sizeof *r);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nrhs,
              (int)m, 1.0, a, (int)m, x, (int)m, -1.0, r, (int)n);
  res[0] =
      test_fro(r, n * nrhs) / ((double)(m > n ? m : n) * test_fro(a, m * n) *
                               test_fro(x, m * nrhs) * DBL_EPSILON);
  memcpy(w, a, m * n * sizeof *w);
  for (size_t c = 0; c < nrhs; c++)
    memcpy(ref + c * m, b + c * n, n * sizeof *ref);
  assert_int_equal(LAPACKE_dgels(LAPACK_COL_MAJOR, 'T', (int)m, (int)n,
                                 (int)nrhs, w, (int)m, ref, (int)m),
                   0);
  double d = 0;
  for (size_t k = 0; k < m * nrhs; k++) d += (x[k] - ref[k]) * (x[k] - ref[k]);
  res[1] = sqrt(d) / test_fro(ref, m * nrhs);
  free(r);
  free(w);
  free(ref);
}

/* Factors a random m x n matrix in mb x nb tiles (inner block ib) and
 * solves with op(A) = A (least squares) or A^T (minimum norm) for nrhs
 * random right-hand sides in column tiles cb: X's shape and tiling, its
 * residuals (least squares, and for m == n the solve's; minimum norm,
 * and the distance from dgels's X), and the factors and B unchanged. */
static void check_qr_solve(tarn_rt *rt, tarn_trans ta, size_t m, size_t n,
                           size_t mb, size_t nb, size_t ib, size_t nrhs,
                           size_t cb, uint64_t seed) {
  bool trans = ta == TARN_TRANS;
  size_t brows = trans ? n : m, xrows = trans ? m : n;
  tarn_matrix *f = NULL, *t = NULL, *b = NULL, *x = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, nb, seed, &f), 0);
  assert_int_equal(
      tarn_matrix_rand(rt, brows, nrhs, trans ? nb : mb, cb, seed + 1, &b), 0);
  double *a = test_buffer_of(f), *rhs = test_buffer_of(b);
  assert_int_equal(tarn_matrix_qr(f, ib, &t), 0);
  double *f0 = test_buffer_of(f), *t0 = test_buffer_of(t);
  int info = -1;
  assert_int_equal(tarn_matrix_qr_solve(f, t, ta, b, &x, &info), 0);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_rows(x), xrows);
  assert_int_equal(tarn_matrix_cols(x), nrhs);
  assert_int_equal(tarn_matrix_tile_rows(x),
                   trans ? tarn_matrix_tile_rows(f) : tarn_matrix_tile_cols(f));
  assert_int_equal(tarn_matrix_tile_cols(x), tarn_matrix_tile_cols(b));
  double *xb = test_buffer_of(x), *f1 = test_buffer_of(f),
         *t1 = test_buffer_of(t), *b1 = test_buffer_of(b);
  double res[2] = {0, 0};
  if (trans) {
    min_norm_residuals(a, xb, rhs, m, n, nrhs, res);
  } else {
    res[0] = ls_residual(a, xb, rhs, m, n, nrhs);
    res[1] = m == n ? test_solve_residual(a, xb, rhs, n, nrhs) : 0.0;
  }
  bool good = res[0] < 20 && (trans ? res[1] < 1e-9 : res[1] < 20);
  if (getenv("QR_VERBOSE") || !good)
    print_error(
        "qr_solve %s m %zu n %zu tiles %zu x %zu ib %zu nrhs %zu cb %zu: "
        "%g %g\n",
        trans ? "T" : "N", m, n, mb, nb, ib, nrhs, cb, res[0], res[1]);
  assert_true(good);
  assert_memory_equal(f0, f1, m * n * sizeof *f0);
  assert_memory_equal(t0, t1,
                      tarn_matrix_rows(t) * tarn_matrix_cols(t) * sizeof *t0);
  assert_memory_equal(rhs, b1, brows * nrhs * sizeof *rhs);
  free(a);
  free(rhs);
  free(f0);
  free(t0);
  free(xb);
  free(f1);
  free(t1);
  free(b1);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(x);
}

/* Least squares and minimum norm on tall and square matrices, sizes that
 * are and are not multiples of the tile, one tile and many, tall tiles in
 * one tile column, one right-hand side and many (3 workers); then tiles
 * whose kernels share their work, with 1 to 3 workers. */
static void test_qr_solve_sizes(void **state) {
  (void)state;
  static const size_t cases[][7] = {
      /* m, n, mb, nb, ib, nrhs, rhs column tile */
      {1, 1, 1, 1, 0, 1, 1},        {7, 7, 32, 32, 0, 2, 1},
      {9, 4, 32, 32, 0, 3, 3},      {50, 50, 16, 16, 0, 1, 1},
      {100, 100, 30, 30, 7, 17, 6}, {200, 50, 16, 16, 5, 3, 2},
      {100, 7, 32, 32, 3, 1, 1},    {33, 20, 8, 8, 3, 9, 4},
      {130, 97, 16, 16, 16, 5, 5},  {300, 30, 30, 30, 0, 40, 7},
      {40, 1, 8, 8, 0, 2, 2},       {100, 20, 40, 20, 4, 3, 2},
      {129, 129, 16, 16, 5, 1, 1},  {45, 45, 1, 1, 1, 2, 1},
  };
  static const tarn_trans ops[2] = {TARN_NO_TRANS, TARN_TRANS};
  tarn_rt *rt = test_rt(3, 0);
  for (int o = 0; o < 2; o++)
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
      check_qr_solve(rt, ops[o], cases[s][0], cases[s][1], cases[s][2],
                     cases[s][3], cases[s][4], cases[s][5], cases[s][6],
                     700 + 2 * s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  for (unsigned w = 1; w <= 3; w++) {
    rt = test_rt(w, 0);
    for (int o = 0; o < 2; o++) {
      check_qr_solve(rt, ops[o], 600, 300, 300, 300, 32, 130, 130, 760);
      check_qr_solve(rt, ops[o], 513, 513, 513, 513, 0, 200, 200, 762);
      check_qr_solve(rt, ops[o], 520, 400, 200, 200, 24, 1, 1, 764);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The square solve through the shared solve tests: X copied into B. */
static int qr_solve_fn(void *ctx, tarn_matrix *a, tarn_matrix *b, int *info) {
  tarn_matrix *x = NULL;
  int rc = tarn_matrix_qr_solve(a, ctx, TARN_NO_TRANS, b, &x, info);
  if (rc == 0) rc = tarn_matrix_copy(x, &b);
  tarn_matrix_destroy(x);
  return rc;
}

/* Three threads solve at once with one factorisation; bad operands are
 * refused with B unchanged: those of every solve, then a T of another
 * factorisation, X NULL, B as T, an unknown op, a B of A's rows for A^T;
 * the minimum-norm solve of a tall A's transpose takes its N rows. */
static void test_qr_solve_shared_and_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 40, nb = 8;
  tarn_matrix *f = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 77, &f), 0);
  double *a = test_buffer_of(f);
  assert_int_equal(tarn_matrix_qr(f, 4, &t), 0);
  test_solves_at_once(rt, qr_solve_fn, t, f, a, n, nb);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  free(a);

  tarn_matrix *g = NULL, *b = NULL, *tall = NULL, *ttall = NULL, *x = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 4, 1, &g), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 2, 4, 1, 2, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 8, 4, 4, 3, &tall), 0);
  assert_int_equal(tarn_matrix_qr(g, 2, &t), 0);
  assert_int_equal(tarn_matrix_qr(tall, 2, &ttall), 0);
  test_solve_refuses_bad_shapes(rt, qr_solve_fn, t, g, b);
  double *b0 = test_buffer_of(b);
  int info = 5;
  x = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_solve(g, ttall, TARN_NO_TRANS, b, &x, &info),
                   TARN_EINVAL);
  assert_null(x);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_qr_solve(g, NULL, TARN_NO_TRANS, b, &x, &info),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(g, t, TARN_NO_TRANS, b, NULL, &info),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(g, t, TARN_NO_TRANS, t, &x, &info),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(g, g, TARN_NO_TRANS, b, &x, &info),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(g, t, (tarn_trans)7, b, &x, &info),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(tall, ttall, TARN_TRANS, b, &x, &info),
                   TARN_EINVAL);
  assert_null(x);
  double *b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, 12 * 2 * sizeof *b0);
  /* the good calls still work, tall too, without info */
  assert_int_equal(tarn_matrix_qr_solve(g, t, TARN_NO_TRANS, b, &x, NULL), 0);
  tarn_matrix_destroy(x);
  assert_int_equal(
      tarn_matrix_qr_solve(tall, ttall, TARN_NO_TRANS, b, &x, NULL), 0);
  assert_int_equal(tarn_matrix_rows(x), 8);
  tarn_matrix_destroy(x);
  tarn_matrix *b8 = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 8, 2, 4, 2, 4, &b8), 0);
  assert_int_equal(tarn_matrix_qr_solve(tall, ttall, TARN_TRANS, b8, &x, NULL),
                   0);
  assert_int_equal(tarn_matrix_rows(x), 12);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(b8);
  free(b0);
  free(b1);
  tarn_matrix_destroy(g);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(tall);
  tarn_matrix_destroy(ttall);
  tarn_matrix_destroy(t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A matrix with zero columns (an exactly zero R diagonal there): the
 * first is reported as info, with TARN_EINVAL and no X, by both solves; in
 * one tile and across tiles, with 1 and 3 workers. */
static void test_qr_solve_rank_deficient(void **state) {
  (void)state;
  static const size_t cases[][5] = {
      /* m, n, tile, first zero column, second */
      {30, 24, 8, 5, 17},
      {30, 24, 8, 17, 23},
      {20, 10, 32, 3, 8},
      {64, 64, 16, 63, 63},
  };
  for (unsigned w = 1; w <= 3; w += 2) {
    tarn_rt *rt = test_rt(w, 0);
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
      size_t m = cases[s][0], n = cases[s][1], tb = cases[s][2];
      tarn_matrix *f = NULL, *t = NULL, *b = NULL, *bt = NULL, *x = NULL;
      assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, 90 + s, &f), 0);
      double *a = test_buffer_of(f);
      for (size_t i = 0; i < m; i++) {
        a[i + cases[s][3] * m] = 0.0;
        a[i + cases[s][4] * m] = 0.0;
      }
      tarn_matrix_destroy(f);
      assert_int_equal(tarn_matrix_from_buffer(rt, m, n, tb, tb, a, m, &f), 0);
      assert_int_equal(tarn_matrix_rand(rt, m, 3, tb, 2, 95 + s, &b), 0);
      assert_int_equal(tarn_matrix_rand(rt, n, 3, tb, 2, 96 + s, &bt), 0);
      assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
      for (int o = 0; o < 2; o++) {
        int info = 0;
        x = (tarn_matrix *)1;
        assert_int_equal(
            tarn_matrix_qr_solve(f, t, o == 0 ? TARN_NO_TRANS : TARN_TRANS,
                                 o == 0 ? b : bt, &x, &info),
            TARN_EINVAL);
        assert_null(x);
        assert_int_equal(info, (int)cases[s][3] + 1);
      }
      free(a);
      tarn_matrix_destroy(f);
      tarn_matrix_destroy(t);
      tarn_matrix_destroy(b);
      tarn_matrix_destroy(bt);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A task that failed on a tile of B before: the solve reports
 * TARN_ECANCELED with no X, and the factors are unchanged. */
static void test_qr_solve_after_failure(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *f = NULL, *t = NULL, *b = NULL, *x = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 20, 12, 4, 4, 96, &f), 0);
  assert_int_equal(tarn_matrix_rand(rt, 20, 3, 4, 3, 97, &b), 0);
  assert_int_equal(tarn_matrix_qr(f, 2, &t), 0);
  double *f0 = test_buffer_of(f);
  test_fail_first_tile(rt, b);
  int info = 5;
  x = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_NO_TRANS, b, &x, &info),
                   TARN_ECANCELED);
  assert_null(x);
  assert_int_equal(info, 0);
  test_matrix_holds(f, f0);
  free(f0);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* On 3 workers, factors of 300 x 150 in tiles of 60 (3 tile columns) and
 * B of 96 columns in one tile column: both solves go in 3 pieces of 32
 * columns (linalg_internal.h, tarn__solve_piece_cols), and X has B's
 * column tiling and, bit for bit, the values the same call gives for a
 * B the test tiled in 32 columns itself; B is unchanged. With a zero
 * column in A, TARN_EINVAL, info and no X; after a failed task on B,
 * TARN_ECANCELED and no X. */
static void qr_solves_of_many_right_hand_sides_go_in_pieces(void **state) {
  (void)state;
  enum { m = 300, n = 150, nb = 60, nrhs = 96 };
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *f = NULL, *t = NULL, *zf = NULL, *zt = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, nb, nb, 120, &f), 0);
  double *a = test_buffer_of(f);
  for (size_t i = 0; i < m; i++) a[i + 70 * (size_t)m] = 0.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, nb, nb, a, m, &zf), 0);
  assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
  assert_int_equal(tarn_matrix_qr(zf, 0, &zt), 0);
  for (int o = 0; o < 2; o++) {
    tarn_trans ta = o == 0 ? TARN_NO_TRANS : TARN_TRANS;
    tarn_matrix *b = NULL, *narrow = NULL, *x = NULL, *xn = NULL;
    assert_int_equal(
        tarn_matrix_rand(rt, o == 0 ? m : n, nrhs, nb, nrhs, 121, &b), 0);
    assert_int_equal(tarn__solve_piece_cols(f, b), 32);
    double *b0 = test_buffer_of(b);
    narrow = test_retiled(rt, b, 32);
    int info = -1;
    assert_int_equal(tarn_matrix_qr_solve(f, t, ta, b, &x, &info), 0);
    assert_int_equal(info, 0);
    assert_int_equal(tarn_matrix_tile_cols(x), nrhs);
    assert_int_equal(tarn_matrix_qr_solve(f, t, ta, narrow, &xn, &info), 0);
    double *got = test_buffer_of(x);
    test_matrix_holds(xn, got);
    test_matrix_holds(b, b0);
    free(got);
    TEST_DESTROY_MATRICES(x, xn, narrow);
    x = (tarn_matrix *)1;
    assert_int_equal(tarn_matrix_qr_solve(zf, zt, ta, b, &x, &info),
                     TARN_EINVAL);
    assert_null(x);
    assert_int_equal(info, 71);
    test_matrix_holds(b, b0);
    test_fail_first_tile(rt, b);
    x = (tarn_matrix *)1;
    assert_int_equal(tarn_matrix_qr_solve(f, t, ta, b, &x, &info),
                     TARN_ECANCELED);
    assert_null(x);
    free(b0);
    tarn_matrix_destroy(b);
  }
  free(a);
  TEST_DESTROY_MATRICES(f, t, zf, zt);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of a quarter of the matrix: both solves give X
 * with the bits of a run without one (in the flat layout: qr_flat_if). */
static void test_qr_solve_mem_limit(void **state) {
  (void)state;
  size_t m = 224, n = 192, nb = 32, nrhs = 40;
  size_t bytes = m * n * sizeof(double);
  double *xb[2][2];
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(3, run == 0 ? 0 : bytes / 4);
    tarn_matrix *f = NULL, *t = NULL, *b = NULL, *bt = NULL, *x = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, nb, nb, 43, &f), 0);
    assert_int_equal(tarn_matrix_rand(rt, m, nrhs, nb, nb, 44, &b), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, nb, 45, &bt), 0);
    assert_int_equal(qr_flat_if(run == 0, f, 8, &t), 0);
    assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_NO_TRANS, b, &x, NULL), 0);
    xb[run][0] = test_buffer_of(x);
    tarn_matrix_destroy(x);
    assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_TRANS, bt, &x, NULL), 0);
    xb[run][1] = test_buffer_of(x);
    tarn_matrix_destroy(x);
    tarn_matrix_destroy(f);
    tarn_matrix_destroy(t);
    tarn_matrix_destroy(b);
    tarn_matrix_destroy(bt);
    if (run == 1)
      test_rt_destroy_spilled(rt, bytes / 4);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(xb[0][0], xb[1][0], n * nrhs * sizeof(double));
  assert_memory_equal(xb[0][1], xb[1][1], m * nrhs * sizeof(double));
  for (int run = 0; run < 2; run++) {
    free(xb[run][0]);
    free(xb[run][1]);
  }
}

/* ---- Q applied alone --------------------------------------------------
 */

/* ||X - Y||_F / (ref scale eps) over count values: the difference of two
 * results scaled by the norm `ref` of what they came from. */
static double scaled_diff(const double *x, const double *y, size_t count,
                          double ref, double scale) {
  double d = 0;
  for (size_t k = 0; k < count; k++) d += (x[k] - y[k]) * (x[k] - y[k]);
  return sqrt(d) / (ref * scale * DBL_EPSILON);
}

/* x op(Q) (side TARN_RIGHT) or op(Q) x, for both ops, against cblas_dgemm
 * with the explicit m x m Q `qf`, each then undone by the other op:
 * res[2 trans] the product's scaled_diff, res[2 trans + 1] the way back's.
 * x is updated in place. */
static void products_against_q(tarn_matrix *f, tarn_matrix *t, tarn_side side,
                               tarn_matrix *x, const double *qf, size_t m,
                               double scale, double res[4]) {
  bool right = side == TARN_RIGHT;
  size_t rows = tarn_matrix_rows(x), count = rows * tarn_matrix_cols(x);
  double *x0 = test_buffer_of(x), *want = malloc(count * sizeof *want);
  assert_non_null(want);
  double norm = test_fro(x0, count);
  for (int trans = 0; trans < 2; trans++) {
    tarn_trans op = trans ? TARN_TRANS : TARN_NO_TRANS,
               undo = trans ? TARN_NO_TRANS : TARN_TRANS;
    CBLAS_TRANSPOSE q_op = trans ? CblasTrans : CblasNoTrans;
    assert_int_equal(tarn_matrix_qr_multiply(f, t, side, op, x), 0);
    double *got = test_buffer_of(x);
    if (right)
      cblas_dgemm(CblasColMajor, CblasNoTrans, q_op, (int)rows, (int)m, (int)m,
                  1.0, x0, (int)rows, qf, (int)m, 0.0, want, (int)rows);
    else
      cblas_dgemm(CblasColMajor, q_op, CblasNoTrans, (int)m, (int)(count / m),
                  (int)m, 1.0, qf, (int)m, x0, (int)m, 0.0, want, (int)m);
    res[2 * trans] = scaled_diff(got, want, count, norm, scale);
    assert_int_equal(tarn_matrix_qr_multiply(f, t, side, undo, x), 0);
    free(got);
    got = test_buffer_of(x);
    res[2 * trans + 1] = scaled_diff(got, x0, count, norm, scale);
    free(got);
  }
  free(x0);
  free(want);
}

/* The first `cols` columns of the m x m identity, in tiles of mb x nb
 * in *e (of runtime rt, f's), with Q of the factors f, t applied from the left
 * (tarn_matrix_qr_multiply); returns the identity's buffer (the
 * caller's to free). */
static double *q_on_identity(tarn_rt *rt, tarn_matrix *f, tarn_matrix *t,
                             size_t m, size_t cols, size_t mb, size_t nb,
                             tarn_matrix **e) {
  double *id = calloc(m * cols, sizeof *id);
  assert_non_null(id);
  for (size_t i = 0; i < cols; i++) id[i + i * m] = 1.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, cols, mb, nb, id, m, e), 0);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_NO_TRANS, *e),
                   0);
  return id;
}

/* Factors an m x n random A in tb x tb tiles (inner block ib) and applies
 * its Q with tarn_matrix_qr_multiply:
 *   - Q^T A = [R; 0], R from the factors (Q is that factorisation's);
 *   - Q applied to the M x M identity is orthogonal, and its first N
 *     columns are tarn_matrix_qr_q's thin Q;
 *   - Q^T C and Q C for an m x ncols C in column tiles of cb equal the
 *     products with that explicit Q (cblas_dgemm), and Q (Q^T C) = C;
 *   - from the right, D Q and D Q^T for an ncols x m D in row tiles of cb
 *     the same way, and (D Q) Q^T = D.
 * C, D, A's copy and the identity are updated in place. */
static void check_qr_multiply(tarn_rt *rt, size_t m, size_t n, size_t tb,
                              size_t ib, size_t ncols, size_t cb,
                              uint64_t seed) {
  tarn_matrix *f = NULL, *t = NULL, *q = NULL, *a = NULL, *e = NULL, *c = NULL,
              *d = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, seed, &f), 0);
  assert_int_equal(tarn_matrix_copy(f, &a), 0);
  double *a0 = test_buffer_of(f);
  assert_int_equal(tarn_matrix_qr(f, ib, &t), 0);
  double *fb = test_buffer_of(f);
  double scale = (double)(m > n ? m : n);

  /* Q^T A = [R; 0] */
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, a), 0);
  double *qa = test_buffer_of(a), *r = calloc(m * n, sizeof *r);
  assert_non_null(r);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i <= j && i < m; i++) r[i + j * m] = fb[i + j * m];
  /* res: Q^T A, Q^T Q, thin Q, Q C, back, Q^T C, back, D Q, back, D Q^T,
   * back (scaled_diff) */
  double res[11] = {scaled_diff(qa, r, m * n, test_fro(a0, m * n), scale)};

  /* the whole Q: orthogonal, its first N columns the thin Q */
  double *id = q_on_identity(rt, f, t, m, m, tb, cb, &e);
  double *qf = test_buffer_of(e);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)m,
              1.0, qf, (int)m, qf, (int)m, -1.0, id, (int)m);
  res[1] = test_fro(id, m * m) / ((double)m * DBL_EPSILON);
  assert_int_equal(tarn_matrix_qr_q(f, t, &q), 0);
  double *qt = test_buffer_of(q);
  size_t k = m < n ? m : n;
  res[2] = scaled_diff(qf, qt, m * k, sqrt((double)k), scale);

  /* Q C, Q^T C, D Q and D Q^T against the explicit Q, and back */
  assert_int_equal(tarn_matrix_rand(rt, m, ncols, tb, cb, seed + 1, &c), 0);
  products_against_q(f, t, TARN_LEFT, c, qf, m, scale, res + 3);
  assert_int_equal(tarn_matrix_rand(rt, ncols, m, cb, tb, seed + 2, &d), 0);
  products_against_q(f, t, TARN_RIGHT, d, qf, m, scale, res + 7);
  bool good = true;
  for (int k = 0; k < 11; k++) good = good && res[k] < 20;
  if (getenv("QR_VERBOSE") || !good)
    print_error(
        "qr_multiply m %zu n %zu tile %zu: %g %g %g, left %g %g %g %g, "
        "right %g %g %g %g\n",
        m, n, tb, res[0], res[1], res[2], res[3], res[4], res[5], res[6],
        res[7], res[8], res[9], res[10]);
  assert_true(good);
  /* the factors only read */
  double *fb1 = test_buffer_of(f);
  assert_memory_equal(fb, fb1, m * n * sizeof *fb);
  double *bufs[] = {fb1, a0, fb, qa, r, id, qf, qt};
  for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++) free(bufs[k]);
  TEST_DESTROY_MATRICES(f, t, q, a, e, c, d);
}

/* Square, tall and wide, tiles that do and do not divide, one tile column
 * narrower than its tiles or one tile row lower than them, C of one column and
 * many in any column tiling; 1 to 3 workers; tiles large enough to be shared.
 */
static void test_qr_multiply(void **state) {
  (void)state;
  static const size_t cases[][6] = {
      /* m, n, tile, ib, C's columns, C's column tile */
      {1, 1, 1, 0, 1, 1},
      {7, 7, 32, 0, 3, 2},
      {50, 50, 16, 0, 50, 16},
      {100, 100, 30, 7, 1, 1},
      {200, 50, 16, 5, 9, 4},
      {100, 7, 32, 3, 20, 32},
      {33, 20, 8, 3, 40, 7},
      {130, 97, 16, 16, 5, 5},
      /* gathered (a domain of 1100 rows), C's lines by two chunks: 1100 x
       * 130 doubles are over 1 MiB */
      {1100, 8, 8, 0, 130, 130},
      /* wide */
      {20, 33, 8, 3, 40, 7},
      {7, 30, 32, 0, 3, 2},
      {50, 200, 64, 8, 9, 4},
      {97, 130, 16, 16, 5, 5},
  };
  for (unsigned w = 1; w <= 3; w += 2) {
    tarn_rt *rt = test_rt(w, 0);
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
      check_qr_multiply(rt, cases[s][0], cases[s][1], cases[s][2], cases[s][3],
                        cases[s][4], cases[s][5], 700 + s);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (unsigned w = 1; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    check_qr_multiply(rt, 520, 400, 200, 24, 300, 300, 720 + w);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Tall tile columns reduced by trees of domains: one tile column of 256
 * tiles on 2, 3 and 8 workers (2, 3 and 8 domains: one, two and three
 * levels of merges), a short last tile that would be a head on 3 workers
 * (it joins the domain before it), and three tile columns whose first is
 * flat on 2 workers and the others trees (on 3 workers, all trees): the
 * residuals, R's diagonal and T's shape (check_qr); the least-squares and
 * minimum-norm solves; Q and Q^T from both sides. */
static void test_qr_tree(void **state) {
  (void)state;
  static const unsigned workers[] = {2, 3, 8};
  for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
    tarn_rt *rt = test_rt(workers[w], 0);
    check_qr(rt, 2048, 8, 8, 0, 800 + w);
    check_qr(rt, 2078, 40, 512, 0, 803 + w);
    check_qr(rt, 3000, 96, 32, 8, 806 + w);
    for (int o = 0; o < 2; o++) {
      tarn_trans ta = o == 0 ? TARN_NO_TRANS : TARN_TRANS;
      check_qr_solve(rt, ta, 2078, 40, 512, 512, 0, 3, 2, 810 + w);
      check_qr_solve(rt, ta, 3000, 96, 32, 32, 8, 5, 5, 813 + w);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  tarn_rt *rt = test_rt(3, 0);
  check_qr_multiply(rt, 2078, 40, 512, 0, 7, 3, 820);
  check_qr_multiply(rt, 2100, 70, 35, 5, 3, 2, 821);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  /* gathered with a larger fan than the workers': 16384 x 32 in tiles of
   * 32 on 2 workers has domains of 8192 rows (2 MiB) with theirs, of 4096
   * (1 MiB) with 4, so T has 2 4 - 1 tile rows (flat: 512 + 2 - 1) */
  rt = test_rt(2, 0);
  assert_int_equal(t_tile_rows(16384, 32, 32, 2, gathering),
                   gathering ? 7 : 513);
  check_qr(rt, 16384, 32, 32, 0, 822);
  check_qr_solve(rt, TARN_NO_TRANS, 16384, 32, 32, 32, 0, 3, 3, 823);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Q of an m x n A in tiles of mb x n (random, seed) applied from the
 * left to [I; 0] (n columns, tarn_matrix_qr_multiply) is
 * tarn_matrix_qr_q's thin Q to within 20 eps, and Q^T back gives [I; 0];
 * from the right, [I 0] (n rows) times Q^T is the thin Q's transpose, and
 * that times Q gives [I 0] (the whole M x M Q of check_qr_multiply does
 * not fit a tall A). */
static void check_tall_multiply(tarn_rt *rt, size_t m, size_t n, size_t mb,
                                uint64_t seed) {
  tarn_matrix *f = NULL, *t = NULL, *q = NULL, *e = NULL, *d = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, n, seed, &f), 0);
  assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
  assert_int_equal(tarn_matrix_qr_q(f, t, &q), 0);
  double *eye = q_on_identity(rt, f, t, m, n, mb, n, &e);
  double *got = test_buffer_of(e), *want = test_buffer_of(q);
  assert_true(scaled_diff(got, want, m * n, sqrt((double)n), 20.0) < 1.0);
  free(got);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, e), 0);
  got = test_buffer_of(e);
  assert_true(scaled_diff(got, eye, m * n, sqrt((double)n), 20.0) < 1.0);
  free(got);
  /* from the right: D = [I 0] (eye's transpose), D Q^T = Q's transpose */
  double *row_eye = calloc(n * m, sizeof *row_eye),
         *q_t = malloc(n * m * sizeof *q_t);
  assert_true(row_eye != NULL && q_t != NULL);
  for (size_t i = 0; i < n; i++) row_eye[i + i * n] = 1.0;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) q_t[j + i * n] = want[i + j * m];
  assert_int_equal(tarn_matrix_from_buffer(rt, n, m, n, mb, row_eye, n, &d), 0);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_RIGHT, TARN_TRANS, d), 0);
  got = test_buffer_of(d);
  assert_true(scaled_diff(got, q_t, m * n, sqrt((double)n), 20.0) < 1.0);
  free(got);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_RIGHT, TARN_NO_TRANS, d),
                   0);
  got = test_buffer_of(d);
  assert_true(scaled_diff(got, row_eye, m * n, sqrt((double)n), 20.0) < 1.0);
  free(got);
  free(row_eye);
  free(q_t);
  free(want);
  free(eye);
  TEST_DESTROY_MATRICES(f, t, q, e, d);
}

/* A tall, narrow tile (16384 rows or more, up to 128 columns) is
 * factored recursively with its products over rows shared by units of
 * rows (tarn/linalg.h): 33000 x 24 as one tile, inner blocks of 8 (T's
 * three blocks) and of 0 (16), and 40000 x 24 in tiles of 20000 (a
 * head and a tpqrt below it so): the residuals, R's diagonal and T's shape
 * (check_qr), the least-squares and minimum-norm solves, and Q applied
 * to [I; 0] and back from both sides (check_tall_multiply) with those
 * factors (Q applied by rows too, on 2 workers or more), on 1, 2
 * and 3 workers (one worker: LAPACK's dgeqrt); the factors and T the
 * same bits on 2 and 3; a zero column (its reflector the identity), a
 * column of 1e300 (its norm past DBL_MAX unless scaled) and one of
 * subnormal numbers (dlarfg's rescaling): finite factors, the residuals,
 * and R's diagonal within a relative 1e3 eps of dgeqrf's. */
/* A tall tile whose column 0 has a NaN below the diagonal and nothing
 * else but zeros there: R(0, 0) is NaN, as dgeqrf makes it (by rows, the
 * NaN's unit norm was passed over as no larger than the others' zeros,
 * and R(0, 0) kept A's value), and the other columns' too. An infinity
 * among random numbers there: R(0, 0) is dgeqrf's infinity (by rows it
 * was NaN, the unit norms scaled by an infinite largest). */
static void check_qr_inf(tarn_rt *rt) {
  enum { M = 20000, N = 3 };
  double *a = test_random_matrix(M, N, 1.0, 839);
  a[7000] = INFINITY;
  tarn_matrix *x = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, M, N, M, N, a, M, &x), 0);
  assert_int_equal(tarn_matrix_qr(x, 0, &t), 0);
  double *f = test_buffer_of(x);
  double tau[N], work[64 * N];
  assert_int_equal(
      LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, M, N, a, M, tau, work, 64 * N), 0);
  assert_true(isinf(a[0]));
  if (!(f[0] == a[0])) fail_msg("R(0, 0) %g, dgeqrf's %g", f[0], a[0]);
  free(f);
  free(a);
  TEST_DESTROY_MATRICES(x, t);
}

static void check_qr_nan_alone(tarn_rt *rt) {
  enum { M = 20000, N = 4 };
  double *a = test_random_matrix(M, N, 1.0, 838);
  for (size_t i = 1; i < M; i++) a[i] = i == 100 ? NAN : 0.0;
  tarn_matrix *x = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, M, N, M, N, a, M, &x), 0);
  assert_int_equal(tarn_matrix_qr(x, 0, &t), 0);
  double *f = test_buffer_of(x);
  for (size_t j = 0; j < N; j++) assert_true(isnan(f[j + j * (size_t)M]));
  double tau[N], work[64 * N]; /* _work: LAPACKE's own refuses NaNs */
  assert_int_equal(
      LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, M, N, a, M, tau, work, 64 * N), 0);
  for (size_t j = 0; j < N; j++) assert_true(isnan(a[j + j * (size_t)M]));
  free(f);
  free(a);
  TEST_DESTROY_MATRICES(x, t);
}

static void test_qr_tall_tile(void **state) {
  (void)state;
  enum { M = 33000, N = 24 };
  double *first = NULL, *first_t = NULL;
  for (unsigned w = 1; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    check_qr(rt, M, N, M, 8, 830);
    check_qr(rt, M, 40, M, 0, 831);
    check_qr(rt, 40000, N, 20000, 8, 836); /* a head, a tpqrt by rows */
    check_qr_solve(rt, TARN_NO_TRANS, M, N, M, N, 8, 3, 2, 832);
    check_qr_solve(rt, TARN_TRANS, M, N, M, N, 8, 2, 2, 833);
    check_tall_multiply(rt, M, N, M, 834);
    check_tall_multiply(rt, 40000, N, 20000, 837);
    check_qr_nan_alone(rt);
    check_qr_inf(rt);
    tarn_matrix *x = NULL, *t = NULL;
    assert_int_equal(tarn_matrix_rand(rt, M, N, M, N, 835, &x), 0);
    double *a = test_buffer_of(x);
    for (size_t i = 0; i < M; i++) {
      a[i + 3 * (size_t)M] = 0.0;
      a[i + 7 * (size_t)M] *= 1e300;
      a[i + 11 * (size_t)M] *= 1e-310;
    }
    tarn_matrix_destroy(x);
    assert_int_equal(tarn_matrix_from_buffer(rt, M, N, M, N, a, M, &x), 0);
    assert_int_equal(tarn_matrix_qr(x, 8, &t), 0);
    double *f = test_buffer_of(x), *tb = test_buffer_of(t);
    for (size_t i = 0; i < (size_t)M * N; i++) assert_true(isfinite(f[i]));
    tarn_matrix *q = NULL;
    assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
    double *qb = test_buffer_of(q), res[2];
    /* A = Q R column by column: column 7 of A and of R scaled back by
     * 1e-300, so that the residuals' sums of squares do not overflow */
    double *a7 = malloc((size_t)M * N * sizeof *a7),
           *f7 = malloc((size_t)M * N * sizeof *f7);
    assert_true(a7 != NULL && f7 != NULL);
    memcpy(a7, a, (size_t)M * N * sizeof *a7);
    memcpy(f7, f, (size_t)M * N * sizeof *f7);
    for (size_t i = 0; i < M; i++) a7[i + 7 * (size_t)M] *= 1e-300;
    for (size_t i = 0; i <= 7; i++) f7[i + 7 * (size_t)M] *= 1e-300;
    qr_residuals(a7, f7, qb, M, N, res);
    assert_true(res[0] < 20);
    assert_true(res[1] < 20);
    double tau[N];
    assert_int_equal(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, M, N, a, M, tau), 0);
    for (size_t i = 0; i < N; i++) {
      double u = fabs(f[i + i * M]), v = fabs(a[i + i * M]);
      assert_true(fabs(u - v) <= 1e3 * DBL_EPSILON * v);
    }
    assert_true(f[3 + 3 * M] == 0.0);
    free(a7);
    free(f7);
    free(qb);
    tarn_matrix_destroy(q);
    if (w == 2) { /* shared by rows from 2 workers on: the same bits */
      first = f;
      first_t = tb;
    } else {
      if (w > 2) {
        assert_memory_equal(f, first, (size_t)M * N * sizeof *f);
        assert_memory_equal(tb, first_t, 8 * N * sizeof *tb);
      }
      free(f);
      free(tb);
    }
    free(a);
    tarn_matrix_destroy(x);
    tarn_matrix_destroy(t);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  free(first);
  free(first_t);
}

/* A limit of exactly QR's largest task, tpmqrt's three tiles of 64 x 64
 * doubles and a T tile of 16 x 64 (104 KiB; A 256 x 192, 384 KiB), is
 * enough: the residuals, R and T as check_qr wants them, spilling. A page
 * less, and tarn_matrix_qr refuses with TARN_ENOMEM before any task, A
 * unchanged and readable, no T; so does tarn_matrix_qr_multiply under
 * the 104 KiB, from either side, when C's tiles (64 x 80, or 80 x 64)
 * make its tpmqrt larger (120 KiB), C unchanged. */
static void test_qr_limit_of_one_task(void **state) {
  (void)state;
  enum { M = 256, N = 192, NB = 64, IB = 16 };
  size_t task = (3 * NB * NB + IB * NB) * sizeof(double);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (unsigned workers = 1; workers <= 2; workers++) {
    tarn_rt *rt = test_rt(workers, task);
    check_qr(rt, M, N, NB, IB, 840 + workers);
    tarn_matrix *x = NULL, *t = NULL, *c = NULL, *d = NULL;
    assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 842, &x), 0);
    assert_int_equal(tarn_matrix_qr(x, IB, &t), 0);
    assert_int_equal(tarn_matrix_rand(rt, M, 80, NB, 80, 843, &c), 0);
    assert_int_equal(tarn_matrix_rand(rt, 80, M, 80, NB, 844, &d), 0);
    double *c0 = test_buffer_of(c), *d0 = test_buffer_of(d);
    assert_int_equal(tarn_matrix_qr_multiply(x, t, TARN_LEFT, TARN_TRANS, c),
                     TARN_ENOMEM);
    assert_int_equal(
        tarn_matrix_qr_multiply(x, t, TARN_RIGHT, TARN_NO_TRANS, d),
        TARN_ENOMEM);
    test_matrix_holds(c, c0);
    test_matrix_holds(d, d0);
    TEST_DESTROY_MATRICES(x, t, c, d);
    test_rt_destroy_spilled(rt, task);
    free(c0), free(d0);
    rt = test_rt(workers, task - page);
    assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 845, &x), 0);
    double *a0 = test_buffer_of(x);
    t = (tarn_matrix *)1;
    assert_int_equal(tarn_matrix_qr(x, IB, &t), TARN_ENOMEM);
    assert_null(t);
    test_matrix_holds(x, a0);
    free(a0);
    tarn_matrix_destroy(x);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The tree is T's, not the runtime's: factors made on 3 workers (a tree
 * of 3 domains, gathered or not), copied into runtimes of 1 and 8
 * workers, give there the thin Q of that factorisation; and a T whose
 * tile rows fit no layout for A is refused: a square A's with one extra
 * tile row, 64 extra ones, fewer than A's and even, or 2 f - 1 for a fan
 * f that makes no tree. */
static void test_qr_tree_elsewhere(void **state) {
  (void)state;
  size_t m = 2100, n = 30, tb = 30;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *x = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, 830, &x), 0);
  double *a = test_buffer_of(x);
  assert_int_equal(tarn_matrix_qr(x, 6, &t), 0);
  size_t tm = tarn_matrix_rows(t);
  assert_int_equal(tm, t_tile_rows(m, n, tb, 3, gathering) * 6);
  assert_int_equal(tm, (gathering ? 2 * 3 - 1 : 70 + 2) * 6);
  double *f = test_buffer_of(x), *tf = test_buffer_of(t);
  static const unsigned others[] = {1, 8};
  for (size_t o = 0; o < 2; o++) {
    tarn_rt *rt2 = test_rt(others[o], 0);
    tarn_matrix *x2 = NULL, *t2 = NULL, *q = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt2, m, n, tb, tb, f, m, &x2), 0);
    assert_int_equal(tarn_matrix_from_buffer(rt2, tm, n, 6, tb, tf, tm, &t2),
                     0);
    assert_int_equal(tarn_matrix_qr_q(x2, t2, &q), 0);
    double *qb = test_buffer_of(q), res[2];
    qr_residuals(a, f, qb, m, n, res);
    if (!(res[0] < 20 && res[1] < 20))
      print_error("qr on 3 workers, Q on %u: %g %g\n", others[o], res[0],
                  res[1]);
    assert_true(res[0] < 20);
    assert_true(res[1] < 20);
    free(qb);
    tarn_matrix_destroy(x2);
    tarn_matrix_destroy(t2);
    tarn_matrix_destroy(q);
    assert_int_equal(tarn_rt_destroy(rt2), 0);
  }
  /* T of a square A with one extra tile row; T with 64 extra ones */
  tarn_matrix *sq = NULL, *tsq = NULL, *big = NULL, *q = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 60, 60, 30, 30, 831, &sq), 0);
  assert_int_equal(tarn_matrix_zeros(rt, 3 * 6, 60, 6, 30, &tsq), 0);
  assert_int_equal(tarn_matrix_qr_q(sq, tsq, &q), TARN_EINVAL);
  assert_int_equal(tarn_matrix_zeros(rt, (70 + 64) * 6, n, 6, tb, &big), 0);
  assert_int_equal(tarn_matrix_qr_q(x, big, &q), TARN_EINVAL);
  assert_null(q);
  tarn_matrix *even = NULL, *no_tree = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 4 * 6, n, 6, tb, &even), 0);
  assert_int_equal(tarn_matrix_qr_q(x, even, &q), TARN_EINVAL);
  /* 60 x 30 in tiles of 30 has no tree: 3 tile rows (fan 2) refused, 1
   * (fan 1) taken */
  tarn_matrix *low = NULL, *one = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 60, 30, 30, 30, 832, &low), 0);
  assert_int_equal(tarn_matrix_zeros(rt, 3 * 6, 30, 6, 30, &no_tree), 0);
  assert_int_equal(tarn_matrix_qr_q(low, no_tree, &q), TARN_EINVAL);
  assert_null(q);
  assert_int_equal(tarn_matrix_zeros(rt, 1 * 6, 30, 6, 30, &one), 0);
  assert_int_equal(tarn_matrix_qr_q(low, one, &q), 0);
  TEST_DESTROY_MATRICES(even, no_tree, low, one, q);
  free(a);
  free(f);
  free(tf);
  TEST_DESTROY_MATRICES(x, t, sq, tsq, big);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bad operands are refused with C unchanged (and nothing run); a task that
 * failed on C before cancels the products' tasks that read it; under a
 * memory limit of a quarter of the matrix, C gets the bits of a run
 * without one (in the flat layout: qr_flat_if). */
static void test_qr_multiply_bad_and_limits(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0), *rt2 = test_rt(2, 0);
  tarn_matrix *f = NULL, *t = NULL, *g = NULL, *tg = NULL, *c = NULL,
              *rows = NULL, *tiles = NULL, *other = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 12, 8, 4, 4, 1, &f), 0);
  assert_int_equal(tarn_matrix_rand(rt, 16, 12, 4, 4, 2, &g), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 5, 4, 2, 3, &c), 0);
  assert_int_equal(tarn_matrix_rand(rt, 8, 5, 4, 2, 4, &rows), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 5, 3, 2, 5, &tiles), 0);
  assert_int_equal(tarn_matrix_rand(rt2, 12, 5, 4, 2, 6, &other), 0);
  assert_int_equal(tarn_matrix_qr(f, 2, &t), 0);
  assert_int_equal(tarn_matrix_qr(g, 2, &tg), 0);
  double *f0 = test_buffer_of(f), *c0 = test_buffer_of(c);
  assert_int_equal(tarn_matrix_qr_multiply(NULL, t, TARN_LEFT, TARN_TRANS, c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, NULL, TARN_LEFT, TARN_TRANS, c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, tg, TARN_LEFT, TARN_TRANS, c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, (tarn_trans)7, c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, f),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, t),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, rows),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, tiles),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, other),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, (tarn_side)5, TARN_TRANS, c),
                   TARN_EINVAL);
  /* from the right C has 12 columns in tiles of 4: c's 5 are refused, and
   * so are 12 in tiles of 3 */
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_RIGHT, TARN_TRANS, c),
                   TARN_EINVAL);
  tarn_matrix *wide = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 5, 12, 2, 3, 7, &wide), 0);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_RIGHT, TARN_TRANS, wide),
                   TARN_EINVAL);
  tarn_matrix_destroy(wide);
  double *c1 = test_buffer_of(c), *f1 = test_buffer_of(f);
  assert_memory_equal(c0, c1, 12 * 5 * sizeof *c0);
  assert_memory_equal(f0, f1, 12 * 8 * sizeof *f0);
  free(c1);
  free(f1);

  /* a failure before: the region reports the cancelled tasks */
  test_fail_first_tile(rt, c);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), TARN_ECANCELED);
  f1 = test_buffer_of(f);
  assert_memory_equal(f0, f1, 12 * 8 * sizeof *f0);
  free(f0);
  free(f1);
  free(c0);
  TEST_DESTROY_MATRICES(f, t, g, tg, c, rows, tiles, other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(rt2), 0);

  size_t m = 224, n = 192, nb = 32, ncols = 96;
  size_t bytes = m * n * sizeof(double);
  double *cb[2], *db[2];
  for (int run = 0; run < 2; run++) {
    rt = test_rt(3, run == 0 ? 0 : bytes / 4);
    assert_int_equal(tarn_matrix_rand(rt, m, n, nb, nb, 46, &f), 0);
    assert_int_equal(tarn_matrix_rand(rt, m, ncols, nb, nb, 47, &c), 0);
    assert_int_equal(qr_flat_if(run == 0, f, 8, &t), 0);
    assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, c),
                     0);
    cb[run] = test_buffer_of(c);
    tarn_matrix_destroy(c);
    c = NULL;
    assert_int_equal(tarn_matrix_rand(rt, ncols, m, nb, nb, 48, &c), 0);
    assert_int_equal(tarn_matrix_qr_multiply(f, t, TARN_RIGHT, TARN_TRANS, c),
                     0);
    db[run] = test_buffer_of(c);
    tarn_matrix_destroy(f);
    tarn_matrix_destroy(t);
    tarn_matrix_destroy(c);
    if (run == 1)
      test_rt_destroy_spilled(rt, bytes / 4);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(cb[0], cb[1], m * ncols * sizeof(double));
  assert_memory_equal(db[0], db[1], m * ncols * sizeof(double));
  for (int run = 0; run < 2; run++) {
    free(cb[run]);
    free(db[run]);
  }
}

/* ---- A^T A ----------------------------------------------------------------
 */

/* C = A^T A for an m x n A in mb x nb tiles: symmetric, and each element
 * within 4 m eps of dgemm's (relative). */
static void check_ata(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                      uint64_t seed) {
  tarn_matrix *x = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, nb, seed, &x), 0);
  assert_int_equal(tarn_matrix_syrk_ata(x, &c), 0);
  assert_int_equal(tarn_matrix_rows(c), n);
  assert_int_equal(tarn_matrix_cols(c), n);
  double *a = test_buffer_of(x), *cb = test_buffer_of(c);
  double *ref = malloc(n * n * sizeof *ref);
  assert_non_null(ref);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, a, (int)m, a, (int)m, 0.0, ref, (int)n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      assert_true(cb[i + j * n] == cb[j + i * n]);
      double d = fabs(cb[i + j * n] - ref[i + j * n]);
      assert_true(d <= 4.0 * (double)m * DBL_EPSILON * fabs(ref[i + j * n]) +
                           1e-300);
    }
  free(a);
  free(cb);
  free(ref);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(c);
}

static void test_ata(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][4] = {
      /* m, n, mb, nb */
      {1, 1, 1, 1},
      {7, 5, 32, 32},
      {40, 40, 8, 8},
      {50, 30, 16, 7},
      {100, 64, 30, 32},
      {33, 70, 10, 9},
      {129, 17, 128, 4},
      /* tiles large enough for syrk, gemm and the mirror to be shared */
      {300, 260, 300, 260},
      {400, 300, 200, 150},
      /* two tile columns (three tiles of C, fewer than twice the workers):
       * each tile row's updates in pieces of its rows, some of them empty
       * when the tile row is short (514 - 512 rows, or 3) */
      {600, 500, 256, 256},
      {514, 300, 512, 150},
      {3, 300, 512, 150},
      /* tall: each tile of C in groups of A's tile rows side by side, the
       * groups' temporaries summed into it (one tile of C in 6 groups, a
       * short last tile row, three tiles of C in 2 groups) */
      {2048, 60, 64, 64},
      {515, 40, 64, 64},
      {1000, 100, 50, 50},
  };
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
    check_ata(rt, cases[s][0], cases[s][1], cases[s][2], cases[s][3], 50 + s);
  /* six tiles of C: 3 groups each on 8 workers, none on 2 */
  for (unsigned w = 2; w <= 8; w += 6) {
    tarn_rt *rtw = test_rt(w, 0);
    check_ata(rtw, 1200, 150, 50, 50, 70 + w);
    assert_int_equal(tarn_rt_destroy(rtw), 0);
  }
  tarn_matrix *c = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_syrk_ata(NULL, &c), TARN_EINVAL);
  assert_null(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A^T A under a memory limit that C's lower triangle does not fit in: the
 * same results, resident bytes within the limit, and C's lower tiles by
 * blocks (docs/linalg.md): 384 x 384 in tiles of 32 under 256 KiB (32
 * tiles; the triangle has 78) is blocks of 3 x 3 tiles (9 with their
 * layer of 6 in half the limit), ten blocks that read about 580 tiles of
 * A, and C's 78 lower tiles come back once for the mirror: about 650,
 * where tile by tile (as before the blocks) read 1,180 to 1,390. Half as
 * much again is allowed for the runtime's order. */
static void test_ata_mem_limit(void **state) {
  (void)state;
  size_t limit = 256 * 1024;
  tarn_rt *rt = test_rt(3, limit);
  check_ata(rt, 250, 230, 24, 24, 61);
  check_ata(rt, 300, 300, 40, 30, 62);
  /* a tall A (three times the limit) whose groups' temporaries fit beside C */
  check_ata(rt, 4096, 24, 32, 32, 64);
  tarn_matrix *x = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 384, 384, 32, 32, 63, &x), 0);
  uint64_t since = test_restores(rt);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_matrix_syrk_ata(x, &c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  test_reads_within(rt, since, 650 * 3 / 2, limit, "A^T A");
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A^T A's largest task under a limit updates C's tile (1, 0) from A's
 * tiles (0, 0) and (0, 1) (with square tiles): under exactly three tiles
 * it is right,
 * spilling; a page less, TARN_ENOMEM at once and no C (it made C, and the
 * update that could never fit failed, leaving C cancelled). One tile
 * column needs two tiles. */
static void test_ata_limit_of_one_task(void **state) {
  (void)state;
  enum { NB = 64 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE), tile = test_tile_charge(NB, NB);
  tarn_rt *rt = test_rt(2, 3 * tile);
  check_ata(rt, 256, 192, NB, NB, 65);
  test_rt_destroy_spilled(rt, 3 * tile);
  rt = test_rt(2, 2 * tile);
  check_ata(rt, 256, NB, NB, NB, 66);
  test_rt_destroy_spilled(rt, 2 * tile);
  for (size_t tiles = 2; tiles <= 3; tiles++) {
    rt = test_rt(2, tiles * tile - page);
    tarn_matrix *x = NULL, *c = NULL;
    assert_int_equal(
        tarn_matrix_rand(rt, 256, tiles == 2 ? NB : 192, NB, NB, 67, &x), 0);
    assert_int_equal(tarn_matrix_syrk_ata(x, &c), TARN_ENOMEM);
    assert_null(c);
    tarn_matrix_destroy(x);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  /* A's tile rows short (16 x 128 in tiles of 4 x 64): the mirror of C's
   * tile (1, 0) into (0, 1), two tiles of C, is the largest task; a page
   * less, refused at once (it ran, and the mirror failed) */
  rt = test_rt(2, 2 * tile);
  check_ata(rt, 16, 2 * NB, 4, NB, 68);
  test_rt_destroy_spilled(rt, 2 * tile);
  rt = test_rt(2, 2 * tile - page);
  tarn_matrix *x = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 16, 2 * NB, 4, NB, 69, &x), 0);
  assert_int_equal(tarn_matrix_syrk_ata(x, &c), TARN_ENOMEM);
  assert_null(c);
  tarn_matrix_destroy(x);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Gathered domains under a memory limit that their largest task takes at
 * most an eighth of (256 x 1024 in tiles of 32: a domain of 8 tiles and
 * the same rows of another tile column, 128 KiB, with a T tile, under
 * 1.25 MiB, A 2 MiB): T has the gathered layout's one tile row, tiles
 * spill, and the factors, T and Q have the bits of a run without a limit.
 * And a limit that takes a larger fan than the workers' (below). */
static void test_qr_gathered_under_limit(void **state) {
  (void)state;
  enum { M = 256, N = 1024, NB = 32, IB = 8 };
  size_t limit = 1280 * 1024, bytes = (size_t)M * N * sizeof(double);
  double *f[2], *tb[2], *qb[2];
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(2, run == 0 ? 0 : limit);
    tarn_matrix *x = NULL, *t = NULL, *q = NULL;
    assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 850, &x), 0);
    assert_int_equal(tarn_matrix_qr(x, IB, &t), 0);
    assert_int_equal(tarn_matrix_rows(t), (gathering ? 1 : M / NB) * IB);
    assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
    f[run] = test_buffer_of(x);
    tb[run] = test_buffer_of(t);
    qb[run] = test_buffer_of(q);
    TEST_DESTROY_MATRICES(x, t, q);
    if (run == 1)
      test_rt_destroy_spilled(rt, limit);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(f[0], f[1], bytes);
  assert_memory_equal(tb[0], tb[1],
                      (gathering ? 1 : M / NB) * IB * N * sizeof(double));
  assert_memory_equal(qb[0], qb[1], (size_t)M * M * sizeof(double));
  for (int run = 0; run < 2; run++) {
    free(f[run]);
    free(tb[run]);
    free(qb[run]);
  }
  /* 4096 x 32 in tiles of 32 on 2 workers under 2.5 MiB: the workers' fan
   * (domains of 64 tiles) makes a task of two such columns over an eighth
   * of the limit, so the first fan whose domains of h = ceil(128 / f)
   * tiles make one of at most an eighth (7 on 4 KiB pages) is taken, and T
   * has 2 f - 1 tile rows; the residuals as check_qr wants them */
  size_t tall_limit = 2560 * 1024, fan = 2;
  for (;; fan++) {
    size_t h = (128 + fan - 1) / fan;
    if (2 * h * test_tile_charge(32, 32) + test_tile_charge(16, 32) <=
        tall_limit / 8)
      break;
  }
  tarn_rt *rt = test_rt(2, tall_limit);
  tarn_matrix *x = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 4096, 32, 32, 32, 851, &x), 0);
  assert_int_equal(tarn_matrix_qr(x, 16, &t), 0);
  assert_int_equal(tarn_matrix_rows(t), (gathering ? 2 * fan - 1 : 129) * 16);
  TEST_DESTROY_MATRICES(x, t);
  check_qr(rt, 4096, 32, 32, 16, 852);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int layout_flat(void **state) {
  (void)state;
  gathering = false;
  tarn__qr_gather_short_columns(false);
  return 0;
}

static int layout_gathered(void **state) {
  (void)state;
  gathering = true;
  tarn__qr_gather_short_columns(true);
  return 0;
}

int main(void) {
  /* QR's tests: most of their tiles are short (64 rows or fewer), whose
   * domains QR gathers (src/linalg/qr.c, "gathered domains"), so they run
   * a second time, last, with every factorisation in the flat layout. */
  const struct CMUnitTest qr_tests[] = {
      cmocka_unit_test(test_qr_sizes),
      cmocka_unit_test(test_qr_workers),
      cmocka_unit_test(test_qr_large_tiles),
      cmocka_unit_test(test_qr_tree),
      cmocka_unit_test(test_qr_tree_elsewhere),
      cmocka_unit_test(test_qr_tall_tile),
      cmocka_unit_test(test_qr_limit_of_one_task),
      cmocka_unit_test(test_qr_bad),
      cmocka_unit_test(test_qr_mem_limit),
      cmocka_unit_test(test_qr_wide_refusals),
      cmocka_unit_test(test_qr_solve_sizes),
      cmocka_unit_test(test_qr_solve_shared_and_bad),
      cmocka_unit_test(test_qr_solve_rank_deficient),
      cmocka_unit_test(test_qr_solve_after_failure),
      cmocka_unit_test(qr_solves_of_many_right_hand_sides_go_in_pieces),
      cmocka_unit_test(test_qr_solve_mem_limit),
      cmocka_unit_test(test_qr_multiply),
      cmocka_unit_test(test_qr_multiply_bad_and_limits),
      cmocka_unit_test(test_qr_gathered_under_limit),
  };
  const struct CMUnitTest ata_tests[] = {
      cmocka_unit_test(test_ata),
      cmocka_unit_test(test_ata_mem_limit),
      cmocka_unit_test(test_ata_limit_of_one_task),
  };
  int failed = cmocka_run_group_tests_name("QR", qr_tests, NULL, NULL);
  failed += cmocka_run_group_tests_name("A^T A", ata_tests, NULL, NULL);
  failed += cmocka_run_group_tests_name("QR, flat layout", qr_tests,
                                        layout_flat, layout_gathered);
  return failed;
}
