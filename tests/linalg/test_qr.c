/* test_qr.c: tiled Householder QR and its explicit thin Q: the scaled
 * residuals ||A - Q R|| and ||Q^T Q - I|| on square and tall matrices
 * whose sizes are and are not multiples of the tile, one tile and many,
 * several inner block sizes, tiles large enough for the updates to be
 * shared with idle workers (1 to 3 workers); R upper triangular with
 * |diag| equal to LAPACK's on the whole matrix; the shape of the T
 * factors; bad arguments refused; a run under a memory limit that spills
 * giving the same bits.
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

#include <cmocka.h>

#include "support.h"
#include "tarn.h"

/* The residuals of a factorisation of the m x n matrix a (column-major,
 * ld m): f is A after tarn_matrix_qr, q the thin Q. res[0] = ||A - Q R||_F
 * / (||A||_F max(m, n) eps), res[1] = ||Q^T Q - I||_F / (n eps). */
static void qr_residuals(const double *a, const double *f, const double *q,
                         size_t m, size_t n, double res[2]) {
  double *r = calloc(n * n, sizeof *r), *d = malloc(m * n * sizeof *d);
  double *g = malloc(n * n * sizeof *g);
  assert_non_null(r);
  assert_non_null(d);
  assert_non_null(g);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i <= j; i++) r[i + j * n] = f[i + j * m];
  memcpy(d, a, m * n * sizeof *d);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)n,
              -1.0, q, (int)m, r, (int)n, 1.0, d, (int)m);
  res[0] = test_fro(d, m * n) /
           (test_fro(a, m * n) * (double)(m > n ? m : n) * DBL_EPSILON);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) g[i + j * n] = i == j ? -1.0 : 0.0;
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, q, (int)m, q, (int)m, 1.0, g, (int)n);
  res[1] = test_fro(g, n * n) / ((double)n * DBL_EPSILON);
  free(r);
  free(d);
  free(g);
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
  size_t nb = tarn_matrix_tile_cols(x),
         mt = (m + tarn_matrix_tile_rows(x) - 1) / tarn_matrix_tile_rows(x);
  size_t ibe = ib == 0 ? (nb < 32 ? nb : 32) : ib;
  assert_int_equal(tarn_matrix_rows(t), mt * ibe);
  assert_int_equal(tarn_matrix_cols(t), n);
  assert_int_equal(tarn_matrix_tile_rows(t), ibe);
  assert_int_equal(tarn_matrix_tile_cols(t), nb);
  assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
  double *f = test_buffer_of(x), *qb = test_buffer_of(q);
  double res[2];
  qr_residuals(a, f, qb, m, n, res);
  if (getenv("QR_VERBOSE") || !(res[0] < 20 && res[1] < 20))
    print_error("qr m %zu n %zu tile %zu ib %zu: %g %g\n", m, n, tb, ib, res[0],
                res[1]);
  assert_true(res[0] < 20);
  assert_true(res[1] < 20);
  /* R is unique up to the signs of its rows: |diag| as dgeqrf's */
  double *tau = malloc(n * sizeof *tau);
  assert_non_null(tau);
  assert_int_equal(
      LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)m, (int)n, a, (int)m, tau), 0);
  for (size_t i = 0; i < n; i++) {
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
      {1, 1, 1, 0},      {1, 1, 32, 0},     {7, 7, 32, 0},     {32, 32, 32, 8},
      {50, 50, 16, 0},   {100, 100, 30, 7}, {45, 45, 1, 1},    {64, 64, 8, 8},
      {129, 129, 16, 5}, {96, 64, 32, 32},  {200, 50, 16, 5},  {100, 7, 32, 0},
      {100, 7, 32, 3},   {33, 20, 8, 3},    {130, 97, 16, 16}, {300, 30, 30, 0},
      {40, 1, 8, 0},     {50, 33, 50, 4},
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
 * idle workers (in the factorisation and in forming Q): square and tall,
 * one tile column and several, with 1, 2 and 3 workers. */
static void test_qr_large_tiles(void **state) {
  (void)state;
  static const size_t cases[][4] = {
      /* m, n, tile, ib */
      {300, 300, 300, 0},
      {600, 300, 300, 32},
      {520, 400, 200, 24},
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
  assert_int_equal(tarn_matrix_rand(rt, 6, 8, 2, 2, 1, &wide), 0);
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
 * factors, T and Q have the same bits (and so the same residuals). */
static void test_qr_mem_limit(void **state) {
  (void)state;
  size_t m = 224, n = 192, nb = 32;
  size_t bytes = m * n * sizeof(double);
  double *f[2], *qb[2], *a = NULL;
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(3, run == 0 ? 0 : bytes / 4);
    tarn_matrix *x = NULL, *t = NULL, *q = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, nb, nb, 42, &x), 0);
    if (run == 0) a = test_buffer_of(x);
    assert_int_equal(tarn_matrix_qr(x, 8, &t), 0);
    assert_int_equal(tarn_matrix_qr_q(x, t, &q), 0);
    f[run] = test_buffer_of(x);
    qb[run] = test_buffer_of(q);
    tarn_matrix_destroy(x);
    tarn_matrix_destroy(t);
    tarn_matrix_destroy(q);
    if (run == 1) {
      tarn_pool_stats ps;
      assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
      assert_true(ps.spills > 0);
      assert_true(ps.resident_peak <= bytes / 4);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  double res[2];
  qr_residuals(a, f[1], qb[1], m, n, res);
  assert_true(res[0] < 20);
  assert_true(res[1] < 20);
  assert_memory_equal(f[0], f[1], bytes);
  assert_memory_equal(qb[0], qb[1], bytes);
  free(a);
  for (int run = 0; run < 2; run++) {
    free(f[run]);
    free(qb[run]);
  }
}

/* ---- A^T A ----------------------------------------------------------------
 */

/* C = A^T A against dgemm on the whole matrix, both triangles, exactly
 * symmetric; any tiling. */
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
  };
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    size_t m = cases[s][0], n = cases[s][1];
    tarn_matrix *x = NULL, *c = NULL;
    assert_int_equal(
        tarn_matrix_rand(rt, m, n, cases[s][2], cases[s][3], 50 + s, &x), 0);
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
  tarn_matrix *c = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_syrk_ata(NULL, &c), TARN_EINVAL);
  assert_null(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qr_sizes),       cmocka_unit_test(test_qr_workers),
      cmocka_unit_test(test_qr_large_tiles), cmocka_unit_test(test_qr_bad),
      cmocka_unit_test(test_qr_mem_limit),   cmocka_unit_test(test_ata),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
