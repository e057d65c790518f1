/* test_rcond.c: the condition estimates (tarn_matrix_lu_rcond,
 * tarn_matrix_cholesky_rcond, tarn_matrix_triangular_rcond) against
 * LAPACK's dgecon, dpocon and dtrcon on the same matrices, and against the
 * true reciprocal condition number from the explicit inverse (the
 * estimate of ||A^-1|| is a lower bound: rcond is never below the true
 * one, and here within a factor of 3 above it). Matrices well and badly
 * conditioned (graded scalings up to 1e10), sizes that are and are not
 * multiples of the tile, one tile and many, 1 to 3 workers, in the
 * one-norm and the infinity-norm; triangles with NaNs in every element
 * the estimate must not read, also as the leading block of a tall matrix
 * (a tall QR's R). Exactly singular factors, products that
 * overflow and NaNs in a factor give 0; bad arguments are refused and
 * change nothing; a failed task on the factor before gives
 * TARN_ECANCELED; under a memory limit that spills, the estimates are the
 * same; two threads estimate with one factorisation at once. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
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

#include "reference.h"

/* grade^(-k / (n - 1)), k in [0, n): scalings from 1 down to 1 / grade. */
static double graded(double grade, size_t k, size_t n) {
  return n == 1 ? 1.0 : pow(grade, -(double)k / (double)(n - 1));
}

/* A random n x n matrix (column-major), its columns scaled from 1 down to
 * 1 / grade: its condition grows with grade. */
static double *general(size_t n, double grade, uint64_t seed) {
  double *a = malloc(n * n * sizeof *a);
  assert_non_null(a);
  uint64_t x = seed * 2654435761u + 1;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++)
      a[i + j * n] =
          (test_rnd(&x) + (i == j ? 1.0 : 0.0)) * graded(grade, j, n);
  return a;
}

/* A symmetric positive definite n x n matrix: D (G G^T / n + I) D, D the
 * graded scaling (condition about grade^2). */
static double *spd(size_t n, double grade, uint64_t seed) {
  double *g = general(n, 1.0, seed), *a = malloc(n * n * sizeof *a);
  assert_non_null(a);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
              1.0 / (double)n, g, (int)n, g, (int)n, 0.0, a, (int)n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++)
      a[i + j * n] = (a[i + j * n] + (i == j ? 1.0 : 0.0)) *
                     graded(grade, i, n) * graded(grade, j, n);
  free(g);
  return a;
}

/* The estimate agrees with LAPACK's (the same method on the same
 * factors, up to rounding) and bounds the true value from above, within
 * a factor of 10. */
static void check_estimate(double got, double lapack, double truth) {
  assert_true(fabs(got - lapack) <= 1e-6 * lapack);
  assert_true(got >= truth * (1 - 1e-6));
  assert_true(got <= 3 * truth);
}

static const tarn_norm kinds[] = {TARN_NORM_ONE, TARN_NORM_INF};
static const char lapack_norm[] = {'1', 'I'};

/* LU of a graded matrix: ||A|| (tarn_matrix_norm against dlange), then
 * tarn_matrix_lu_rcond against dgecon on LAPACK's factors and the truth;
 * the factors are not changed by the estimate. */
static void check_lu(tarn_rt *rt, size_t n, size_t nb, double grade,
                     uint64_t seed) {
  double *a = general(n, grade, seed);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  double anorm[2];
  for (int k = 0; k < 2; k++) {
    assert_int_equal(tarn_matrix_norm(m, kinds[k], &anorm[k]), 0);
    double want = LAPACKE_dlange(LAPACK_COL_MAJOR, lapack_norm[k], (int)n,
                                 (int)n, a, (int)n);
    assert_true(fabs(anorm[k] - want) <= 1e-13 * want);
  }
  size_t *piv = malloc(n * sizeof *piv);
  lapack_int *ipiv = malloc(n * sizeof *ipiv);
  double *f = malloc(n * n * sizeof *f);
  assert_non_null(piv);
  assert_non_null(ipiv);
  assert_non_null(f);
  int info = -1;
  assert_int_equal(tarn_matrix_lu(m, piv, &info), 0);
  assert_int_equal(info, 0);
  memcpy(f, a, n * n * sizeof *f);
  assert_int_equal(
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, f, (int)n, ipiv), 0);
  double *before = test_buffer_of(m);
  for (int k = 0; k < 2; k++) {
    double got = -1, lapack = -1;
    assert_int_equal(tarn_matrix_lu_rcond(m, piv, kinds[k], anorm[k], &got), 0);
    assert_int_equal(LAPACKE_dgecon(LAPACK_COL_MAJOR, lapack_norm[k], (int)n, f,
                                    (int)n, anorm[k], &lapack),
                     0);
    check_estimate(got, lapack, test_true_rcond(a, n, lapack_norm[k]));
  }
  double *after = test_buffer_of(m);
  assert_memory_equal(before, after, n * n * sizeof *before);
  free(before);
  free(after);
  free(a);
  free(f);
  free(piv);
  free(ipiv);
  tarn_matrix_destroy(m);
}

/* Cholesky of a graded SPD matrix: tarn_matrix_cholesky_rcond against
 * dpocon and the truth. */
static void check_cholesky(tarn_rt *rt, size_t n, size_t nb, double grade,
                           uint64_t seed) {
  double *a = spd(n, grade, seed), *f = malloc(n * n * sizeof *f);
  assert_non_null(f);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  double anorm = 0;
  assert_int_equal(tarn_matrix_norm(m, TARN_NORM_ONE, &anorm), 0);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky(m, &info), 0);
  memcpy(f, a, n * n * sizeof *f);
  assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, f, (int)n), 0);
  double got = -1, lapack = -1;
  assert_int_equal(tarn_matrix_cholesky_rcond(m, anorm, &got), 0);
  assert_int_equal(
      LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', (int)n, f, (int)n, anorm, &lapack),
      0);
  check_estimate(got, lapack, test_true_rcond(a, n, '1'));
  free(a);
  free(f);
  tarn_matrix_destroy(m);
}

/* A random n x n triangle `uplo` (diagonal in [1, 2], entries off it in
 * [-0.5, 0.5) / n: random triangles with larger entries are conditioned
 * exponentially badly in n), its columns then scaled as general's (but
 * the unit diagonal), NaN elsewhere and, when unit, on the diagonal. */
static double *triangle(size_t n, tarn_uplo uplo, tarn_diag diag, double grade,
                        uint64_t seed) {
  double *t = malloc(n * n * sizeof *t);
  assert_non_null(t);
  uint64_t x = seed * 2654435761u + 7;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      bool in = uplo == TARN_LOWER ? i > j : i < j;
      double v = test_rnd(&x);
      if (i == j)
        t[i + j * n] =
            diag == TARN_UNIT ? NAN : (1.5 + v) * graded(grade, i, n);
      else
        t[i + j * n] = in ? v / (double)n : NAN;
    }
  return t;
}

/* The true rcond of a triangle (t as `triangle` makes it), from its
 * inverse by LAPACK's dtrtri. */
static double true_triangular_rcond(const double *t, size_t n, char uplo,
                                    char diag, char norm) {
  double *d = calloc(n * n, sizeof *d);
  assert_non_null(d);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++)
      if (uplo == 'L' ? i > j : i < j) d[i + j * n] = t[i + j * n];
  for (size_t i = 0; i < n; i++)
    d[i + i * n] = diag == 'U' ? 1.0 : t[i + i * n];
  int ni = (int)n;
  double tnorm = LAPACKE_dlange(LAPACK_COL_MAJOR, norm, ni, ni, d, ni);
  assert_int_equal(LAPACKE_dtrtri(LAPACK_COL_MAJOR, uplo, 'N', ni, d, ni), 0);
  double r =
      1.0 / (tnorm * LAPACKE_dlange(LAPACK_COL_MAJOR, norm, ni, ni, d, ni));
  free(d);
  return r;
}

static void check_triangular(tarn_rt *rt, size_t n, size_t nb, tarn_uplo uplo,
                             tarn_diag diag, double grade, uint64_t seed) {
  double *t = triangle(n, uplo, diag, grade, seed);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, t, n, &m), 0);
  char u = uplo == TARN_LOWER ? 'L' : 'U', d = diag == TARN_UNIT ? 'U' : 'N';
  for (int k = 0; k < 2; k++) {
    double got = -1, lapack = -1;
    assert_int_equal(
        tarn_matrix_triangular_rcond(m, uplo, diag, kinds[k], &got), 0);
    assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, lapack_norm[k], u, d,
                                    (int)n, t, (int)n, &lapack),
                     0);
    check_estimate(got, lapack,
                   true_triangular_rcond(t, n, u, d, lapack_norm[k]));
  }
  free(t);
  tarn_matrix_destroy(m);
}

static const size_t sizes[][2] = {{1, 1},    {2, 1},    {7, 3},   {40, 40},
                                  {100, 32}, {129, 16}, {200, 64}};
static const double grades[] = {1.0, 1e6, 1e10};

static void test_lu_rcond(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t g = 0; g < sizeof grades / sizeof grades[0]; g++)
        if (workers == 2 || s % 2 == 0)
          check_lu(rt, sizes[s][0], sizes[s][1], grades[g], seed++);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void test_cholesky_rcond(void **state) {
  (void)state;
  uint64_t seed = 100;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (size_t g = 0; g < sizeof grades / sizeof grades[0]; g++)
      check_cholesky(rt, sizes[s][0], sizes[s][1], grades[g], seed++);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void test_triangular_rcond(void **state) {
  (void)state;
  uint64_t seed = 200;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int c = 0; c < 4; c++)
      check_triangular(
          rt, sizes[s][0], sizes[s][1], c % 2 ? TARN_UPPER : TARN_LOWER,
          c / 2 ? TARN_UNIT : TARN_NON_UNIT, s % 2 ? 1e6 : 1.0, seed++);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* T as the leading n x n block of an m x n `t` (as a tall QR's R), NaN
 * in the rows below it: the estimates of dtrcon on the same array (of
 * leading dimension m), and the truth. */
static void check_tall_triangular(tarn_rt *rt, size_t m, size_t n, size_t mb,
                                  size_t nb, uint64_t seed) {
  for (int c = 0; c < 4; c++) {
    tarn_uplo uplo = c % 2 ? TARN_UPPER : TARN_LOWER;
    tarn_diag diag = c / 2 ? TARN_UNIT : TARN_NON_UNIT;
    double *t = triangle(n, uplo, diag, 1e4, seed + (uint64_t)c),
           *tall = malloc(m * n * sizeof *tall);
    assert_non_null(tall);
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < m; i++)
        tall[i + j * m] = i < n ? t[i + j * n] : NAN;
    tarn_matrix *tm = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, m, n, mb, nb, tall, m, &tm),
                     0);
    char u = uplo == TARN_LOWER ? 'L' : 'U', d = diag == TARN_UNIT ? 'U' : 'N';
    for (int k = 0; k < 2; k++) {
      double got = -1, lapack = -1;
      assert_int_equal(
          tarn_matrix_triangular_rcond(tm, uplo, diag, kinds[k], &got), 0);
      assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, lapack_norm[k], u, d,
                                      (int)n, tall, (int)m, &lapack),
                       0);
      check_estimate(got, lapack,
                     true_triangular_rcond(t, n, u, d, lapack_norm[k]));
    }
    free(t);
    free(tall);
    tarn_matrix_destroy(tm);
  }
}

static void test_triangular_rcond_of_a_tall_matrix(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  check_tall_triangular(rt, 150, 100, 32, 32, 300);
  check_tall_triangular(rt, 70, 50, 50, 50, 310);
  check_tall_triangular(rt, 45, 7, 3, 3, 320);
  /* Tiles of 600 columns: the infinity-norm's row sums by column blocks,
   * in tiles that end at the triangle's last row, and in tiles that reach
   * below it (the row band of a tall QR, square tiles across row N),
   * whose sums end at row N (a sanitizer sees a sum past them). */
  check_tall_triangular(rt, 700, 600, 600, 600, 330);
  check_tall_triangular(rt, 1000, 600, 1000, 600, 340);
  check_tall_triangular(rt, 1100, 600, 550, 550, 350);
  /* The R of a tall QR, the reflectors below it not read: R's condition,
   * which is A's (graded columns: about 1e8). */
  size_t m = 200, n = 120;
  double *a = malloc(m * n * sizeof *a);
  assert_non_null(a);
  uint64_t x = 99;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++)
      a[i + j * m] = test_rnd(&x) * graded(1e8, j, n);
  tarn_matrix *f = NULL, *tf = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, 40, 40, a, m, &f), 0);
  assert_int_equal(tarn_matrix_qr(f, 0, &tf), 0);
  double *r = test_buffer_of(f); /* R above the reflectors */
  double got = -1, lapack = -1;
  assert_int_equal(tarn_matrix_triangular_rcond(f, TARN_UPPER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &got),
                   0);
  assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, '1', 'U', 'N', (int)n, r,
                                  (int)m, &lapack),
                   0);
  double *square = malloc(n * n * sizeof *square);
  assert_non_null(square);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) square[i + j * n] = r[i + j * m];
  check_estimate(got, lapack, true_triangular_rcond(square, n, 'U', 'N', '1'));
  assert_true(got < 1e-6 && got > 1e-11);
  free(a);
  free(r);
  free(square);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(tf);
  /* A t wider than tall is refused. */
  tarn_matrix *wide = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 10, 12, 4, 4, 1, &wide), 0);
  double rc = -1;
  assert_int_equal(tarn_matrix_triangular_rcond(wide, TARN_UPPER, TARN_UNIT,
                                                TARN_NORM_ONE, &rc),
                   TARN_EINVAL);
  assert_true(rc == -1);
  tarn_matrix_destroy(wide);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of about a third of the matrix, so that tiles are
 * spilled and read back: the same estimates. */
static void test_rcond_under_a_memory_limit(void **state) {
  (void)state;
  size_t limit = 160 << 10; /* the 200 x 200 matrix takes 320 KB */
  tarn_rt *rt = test_rt(2, limit);
  check_lu(rt, 200, 32, 1e6, 11);
  check_cholesky(rt, 200, 32, 1e6, 12);
  check_triangular(rt, 200, 32, TARN_UPPER, TARN_NON_UNIT, 1e6, 13);
  test_rt_destroy_spilled(rt, limit);
}

/* Exactly singular factors give 0, as products that overflow and NaNs in
 * a factor do; a zero ||A|| gives 0. A zero on the diagonal of a
 * triangle taken as unit is not read. */
static void test_singular_gives_zero(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 20, nb = 8;
  /* LU of a matrix with a zero column: info > 0, the factors made. */
  double *a = general(n, 1.0, 5);
  for (size_t i = 0; i < n; i++) a[i + 9 * n] = 0;
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  size_t piv[20];
  int info = 0;
  assert_int_equal(tarn_matrix_lu(m, piv, &info), TARN_EINVAL);
  assert_true(info > 0);
  double r = -1;
  assert_int_equal(tarn_matrix_lu_rcond(m, piv, TARN_NORM_ONE, 3.0, &r), 0);
  assert_true(r == 0);
  tarn_matrix_destroy(m);
  /* A NaN in U: 0. A zero norm: 0 (and no solve). */
  free(a);
  a = general(n, 1.0, 6);
  a[3 + 15 * n] = NAN;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  for (size_t i = 0; i < n; i++) piv[i] = i;
  r = -1;
  assert_int_equal(tarn_matrix_lu_rcond(m, piv, TARN_NORM_INF, 3.0, &r), 0);
  assert_true(r == 0);
  r = -1;
  assert_int_equal(tarn_matrix_lu_rcond(m, piv, TARN_NORM_ONE, 0.0, &r), 0);
  assert_true(r == 0);
  tarn_matrix_destroy(m);
  /* A Cholesky factor with a zero on its diagonal. */
  free(a);
  a = triangle(n, TARN_LOWER, TARN_NON_UNIT, 1.0, 7);
  a[12 + 12 * n] = 0;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  r = -1;
  assert_int_equal(tarn_matrix_cholesky_rcond(m, 1.0, &r), 0);
  assert_true(r == 0);
  /* The same as a triangle: 0; with a unit diagonal the zero is not
   * read, and the estimate is LAPACK's. */
  r = -1;
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &r),
                   0);
  assert_true(r == 0);
  double lapack = -1;
  assert_int_equal(
      tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_UNIT, TARN_NORM_ONE, &r),
      0);
  assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, '1', 'L', 'U', (int)n, a,
                                  (int)n, &lapack),
                   0);
  assert_true(r > 0 && fabs(r - lapack) <= 1e-6 * lapack);
  tarn_matrix_destroy(m);
  /* A bidiagonal T with 1e-5 on its diagonal and 1 below: T^-1's
   * elements reach 1e500, so the products overflow. LAPACK's scaled solve
   * gives an rcond that underflows; here 0. An infinite element: 0. */
  size_t big = 100;
  double *t = calloc(big * big, sizeof *t);
  assert_non_null(t);
  for (size_t i = 0; i < big; i++) {
    t[i + i * big] = 1e-5;
    if (i + 1 < big) t[i + 1 + i * big] = 1;
  }
  assert_int_equal(tarn_matrix_from_buffer(rt, big, big, 32, 32, t, big, &m),
                   0);
  r = -1;
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_INF, &r),
                   0);
  assert_true(r == 0);
  assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, 'I', 'L', 'N', (int)big, t,
                                  (int)big, &lapack),
                   0);
  assert_true(lapack < 1e-300);
  tarn_matrix_destroy(m);
  t[5] = INFINITY; /* below the diagonal, in the triangle */
  assert_int_equal(tarn_matrix_from_buffer(rt, big, big, 32, 32, t, big, &m),
                   0);
  r = -1;
  assert_int_equal(
      tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_UNIT, TARN_NORM_ONE, &r),
      0);
  assert_true(r == 0);
  tarn_matrix_destroy(m);
  free(t);
  free(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bad arguments: TARN_EINVAL, *rcond unchanged, the factor unchanged. */
static void test_bad_input_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12, piv[12];
  tarn_matrix *a = NULL, *wide = NULL, *oblong_tiles = NULL;
  test_factor_operands(rt, &a, &wide, &oblong_tiles, piv);
  double *before = test_buffer_of(a);
  double r = -1;
  const double bad_norms[] = {-1.0, NAN, INFINITY};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(
        tarn_matrix_lu_rcond(a, piv, TARN_NORM_ONE, bad_norms[k], &r),
        TARN_EINVAL);
    assert_int_equal(tarn_matrix_cholesky_rcond(a, bad_norms[k], &r),
                     TARN_EINVAL);
  }
  const tarn_norm bad_kinds[] = {TARN_NORM_FRO, TARN_NORM_MAX, (tarn_norm)9};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(tarn_matrix_lu_rcond(a, piv, bad_kinds[k], 1.0, &r),
                     TARN_EINVAL);
    assert_int_equal(tarn_matrix_triangular_rcond(a, TARN_LOWER, TARN_UNIT,
                                                  bad_kinds[k], &r),
                     TARN_EINVAL);
  }
  assert_int_equal(tarn_matrix_lu_rcond(NULL, piv, TARN_NORM_ONE, 1.0, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_rcond(a, NULL, TARN_NORM_ONE, 1.0, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_rcond(a, piv, TARN_NORM_ONE, 1.0, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_rcond(wide, piv, TARN_NORM_ONE, 1.0, &r),
                   TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_lu_rcond(oblong_tiles, piv, TARN_NORM_ONE, 1.0, &r),
      TARN_EINVAL);
  piv[5] = 4; /* below its row */
  assert_int_equal(tarn_matrix_lu_rcond(a, piv, TARN_NORM_ONE, 1.0, &r),
                   TARN_EINVAL);
  piv[5] = n; /* past the end */
  assert_int_equal(tarn_matrix_lu_rcond(a, piv, TARN_NORM_ONE, 1.0, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_rcond(NULL, 1.0, &r), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_rcond(a, 1.0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_rcond(wide, 1.0, &r), TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(NULL, TARN_LOWER, TARN_UNIT,
                                                TARN_NORM_ONE, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(a, TARN_LOWER, TARN_UNIT,
                                                TARN_NORM_ONE, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(a, (tarn_uplo)2, TARN_UNIT,
                                                TARN_NORM_ONE, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(a, TARN_LOWER, (tarn_diag)2,
                                                TARN_NORM_ONE, &r),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(oblong_tiles, TARN_LOWER,
                                                TARN_UNIT, TARN_NORM_ONE, &r),
                   TARN_EINVAL);
  assert_true(r == -1);
  double *after = test_buffer_of(a);
  assert_memory_equal(before, after, n * n * sizeof *before);
  free(before);
  free(after);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(oblong_tiles);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Fails on the block of tile (0, 1) of 8 x 8 tiles: above the diagonal. */
static int fail_above_the_diagonal(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row == 0 && blk->col == 8 ? -78 : 0;
}

/* A task that failed on the factor's first tile before: each estimate
 * returns TARN_ECANCELED and leaves *rcond alone. A triangle's estimate
 * reads no tile of the other triangle, and does not fail for one. */
static void test_failed_factor_is_reported(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 16, piv[16];
  for (size_t i = 0; i < n; i++) piv[i] = i;
  double *t = triangle(n, TARN_LOWER, TARN_NON_UNIT, 1.0, 9);
  for (size_t k = 0; k < n * n; k++) t[k] = isnan(t[k]) ? 0.0 : t[k];
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, t, n, &m), 0);
  test_fail_first_tile(rt, m);
  double r = -1;
  assert_int_equal(tarn_matrix_lu_rcond(m, piv, TARN_NORM_ONE, 1.0, &r),
                   TARN_ECANCELED);
  assert_int_equal(tarn_matrix_cholesky_rcond(m, 1.0, &r), TARN_ECANCELED);
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_INF, &r),
                   TARN_ECANCELED);
  assert_true(r == -1);
  tarn_matrix_destroy(m);
  /* A failed tile in the other triangle is not read: the lower triangle's
   * estimate is that of a sound copy. */
  double sound = -1;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, t, n, &m), 0);
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &sound),
                   0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_matrix *const ms[] = {m};
  const tarn_access rw[] = {TARN_READ_WRITE};
  assert_int_equal(tarn_matrix_apply(ms, rw, 1, fail_above_the_diagonal, NULL),
                   0);
  assert_int_equal(tarn_region_wait(region, NULL), -78);
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &r),
                   0);
  assert_true(r == sound && r > 0);
  assert_int_equal(tarn_matrix_triangular_rcond(m, TARN_UPPER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &r),
                   TARN_ECANCELED);
  tarn_matrix_destroy(m);
  free(t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

struct estimator {
  tarn_matrix *lu;
  const size_t *piv;
  double anorm, rcond[4];
  int rc;
};

static void *estimate_repeatedly(void *arg) {
  struct estimator *e = arg;
  for (int k = 0; k < 4 && e->rc == 0; k++)
    e->rc = tarn_matrix_lu_rcond(e->lu, e->piv, TARN_NORM_ONE, e->anorm,
                                 &e->rcond[k]);
  return NULL;
}

/* Two threads estimate with one factorisation at once (it is only read):
 * each gets the estimate of a call alone. */
static void test_estimates_at_once(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 150;
  double *a = general(n, 1e6, 21);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 32, 32, a, n, &m), 0);
  double anorm = 0, alone = -1;
  assert_int_equal(tarn_matrix_norm(m, TARN_NORM_ONE, &anorm), 0);
  size_t piv[150];
  assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
  assert_int_equal(tarn_matrix_lu_rcond(m, piv, TARN_NORM_ONE, anorm, &alone),
                   0);
  struct estimator e[2] = {{m, piv, anorm, {0}, 0}, {m, piv, anorm, {0}, 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&th[i], NULL, estimate_repeatedly, &e[i]),
                     0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(e[i].rc, 0);
    for (int k = 0; k < 4; k++)
      assert_true(fabs(e[i].rcond[k] - alone) <= 1e-12 * alone);
  }
  free(a);
  tarn_matrix_destroy(m);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lu_rcond),
      cmocka_unit_test(test_cholesky_rcond),
      cmocka_unit_test(test_triangular_rcond),
      cmocka_unit_test(test_triangular_rcond_of_a_tall_matrix),
      cmocka_unit_test(test_rcond_under_a_memory_limit),
      cmocka_unit_test(test_singular_gives_zero),
      cmocka_unit_test(test_bad_input_is_refused),
      cmocka_unit_test(test_failed_factor_is_reported),
      cmocka_unit_test(test_estimates_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
