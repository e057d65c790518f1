/* test_inverse.c: explicit inverses in place (tarn_matrix_triangular_inverse,
 * tarn_matrix_cholesky_inverse, tarn_matrix_lu_inverse, and
 * tarn_matrix_inverse of A itself), and (A^T A)^-1 from QR's factor
 * (tarn_matrix_qr_ata_inverse, against dpotri of A^T A), against LAPACK's
 * dtrtri, dpotri and dgetri on the same matrices, and against the
 * definition: ||A X - I|| / (n ||A|| ||X|| eps) below a small bound. Both
 * triangles, unit and non-unit diagonals, tall triangles (a QR's R); the
 * elements an inverse must not touch hold NaN and stay as they were. Sizes
 * that are and are not multiples of the tile, one tile and many, 1 to 3
 * workers, under a memory limit that spills. The inverse of a permutation
 * is its transpose, exactly. A zero on the diagonal is refused with its
 * order in info and the matrix unchanged; bad arguments are refused and
 * change nothing; a failed task on the matrix gives TARN_ECANCELED. */
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

#include "rt/rt_internal.h"
#include "support.h"
#include "tarn.h"

#include "reference.h"

/* A solution's bound: ||A X - I||_F / (n ||A||_F ||X||_F eps). */
#define RESIDUAL_MAX 10.0

/* max |x - y| / max |y| over n values. */
static double relative_difference(const double *x, const double *y, size_t n) {
  double d = 0, s = 0;
  for (size_t k = 0; k < n; k++) {
    d = fmax(d, fabs(x[k] - y[k]));
    s = fmax(s, fabs(y[k]));
  }
  return d / s;
}

/* n, nb: tiles over 16 are inverted (and multiplied, L^T L) in halves
 * (trtri_halves, lauum_halves), those of 131 and 301 with shared kernels */
static const size_t sizes[][2] = {{1, 1},    {2, 1},     {7, 3},
                                  {40, 40},  {100, 32},  {129, 16},
                                  {200, 64}, {262, 131}, {301, 301}};

/* ---- triangles ----------------------------------------------------------- */

/* Whether (i, j) belongs to the triangle (uplo, diag) of the leading n x n
 * block, the elements an inverse reads and writes. */
static bool in_triangle(size_t i, size_t j, size_t n, tarn_uplo uplo,
                        tarn_diag diag) {
  if (i >= n || j >= n) return false;
  if (i == j) return diag == TARN_NON_UNIT;
  return uplo == TARN_LOWER ? i > j : i < j;
}

/* The triangle of an m x n matrix (m >= n) in tiles mb x nb (mb == nb, or
 * one tile column) inverted by tarn and by dtrtri (lda m): the same
 * within 1e-12, the residual below the bound, every other element (NaN
 * here, the unit diagonal too) as it was, bit for bit. */
static void check_triangle(tarn_rt *rt, size_t m, size_t n, size_t mb,
                           size_t nb, tarn_uplo uplo, tarn_diag diag,
                           uint64_t seed) {
  /* off the diagonal scaled by 1 / sqrt(n), on it 2 to 4: T^-1 stays
   * well-conditioned at every size */
  double *t = test_random_matrix(m, n, 0.0, seed), scale = 1 / sqrt((double)n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++)
      if (!in_triangle(i, j, n, uplo, diag))
        t[i + j * m] = i == j && i < n ? NAN : -NAN;
      else
        t[i + j * m] = i == j ? 2.0 + (double)(i % 3) : t[i + j * m] * scale;
  tarn_matrix *tm = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, mb, nb, t, m, &tm), 0);
  int info = 5;
  assert_int_equal(tarn_matrix_triangular_inverse(tm, uplo, diag, &info), 0);
  assert_int_equal(info, 0);
  double *got = test_buffer_of(tm);
  double *want = malloc(m * n * sizeof *want);
  assert_non_null(want);
  memcpy(want, t, m * n * sizeof *want);
  assert_int_equal(
      LAPACKE_dtrtri(LAPACK_COL_MAJOR, uplo == TARN_LOWER ? 'L' : 'U',
                     diag == TARN_UNIT ? 'U' : 'N', (int)n, want, (int)m),
      0);
  /* The full n x n T and X, for the residual and the comparison. */
  double *tt = calloc(n * n, sizeof *tt), *xg = calloc(n * n, sizeof *xg),
         *xw = calloc(n * n, sizeof *xw);
  assert_non_null(tt);
  assert_non_null(xg);
  assert_non_null(xw);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      if (!in_triangle(i, j, n, uplo, diag)) {
        /* not read, not written */
        assert_memory_equal(&got[i + j * m], &t[i + j * m], sizeof *t);
        if (i == j) tt[i + j * n] = xg[i + j * n] = xw[i + j * n] = 1.0;
        continue;
      }
      tt[i + j * n] = t[i + j * m];
      xg[i + j * n] = got[i + j * m];
      xw[i + j * n] = want[i + j * m];
    }
  assert_true(relative_difference(xg, xw, n * n) <= 1e-12);
  assert_true(test_inverse_residual(tt, xg, n) <= RESIDUAL_MAX);
  free(t);
  free(got);
  free(want);
  free(tt);
  free(xg);
  free(xw);
  tarn_matrix_destroy(tm);
}

static void test_triangular_inverse(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (int u = 0; u < 2; u++)
        for (int d = 0; d < 2; d++) {
          size_t n = sizes[s][0], nb = sizes[s][1];
          check_triangle(rt, n, n, nb, nb, u ? TARN_UPPER : TARN_LOWER,
                         d ? TARN_UNIT : TARN_NON_UNIT, seed++);
        }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Tall matrices: T is the leading block, the rows below it not touched. */
static void test_tall_triangular_inverse(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  /* m, n, mb, nb: the block's last tile row shared with rows below it or
   * not, tiles of 3, row bands holding the block (one band, and several
   * of 16 or 300 rows, the block in the first; 300 are halved) */
  static const size_t shapes[][4] = {
      {50, 37, 8, 8},   {48, 40, 8, 8},  {20, 10, 3, 3},      {64, 7, 64, 7},
      {40, 30, 40, 30}, {100, 7, 16, 7}, {700, 260, 300, 260}};
  uint64_t seed = 300;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int u = 0; u < 2; u++)
      for (int d = 0; d < 2; d++)
        check_triangle(rt, shapes[s][0], shapes[s][1], shapes[s][2],
                       shapes[s][3], u ? TARN_UPPER : TARN_LOWER,
                       d ? TARN_UNIT : TARN_NON_UNIT, seed++);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- Cholesky and LU ----------------------------------------------------- */

/* A^-1 by tarn's Cholesky and inverse: symmetric bit for bit, within 1e-10
 * of dpotri's lower triangle, the residual below the bound. */
static void check_cholesky(tarn_rt *rt, size_t n, size_t nb, uint64_t seed) {
  double *a = test_spd_matrix(n, 0.5, seed);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  int info = 5;
  assert_int_equal(tarn_matrix_cholesky(m, &info), 0);
  assert_int_equal(tarn_matrix_cholesky_inverse(m, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(m), *want = malloc(n * n * sizeof *want);
  assert_non_null(want);
  memcpy(want, a, n * n * sizeof *want);
  assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, want, (int)n),
                   0);
  assert_int_equal(LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (int)n, want, (int)n),
                   0);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < j; i++) {
      assert_memory_equal(&x[i + j * n], &x[j + i * n], sizeof *x);
      want[i + j * n] = want[j + i * n];
    }
  assert_true(relative_difference(x, want, n * n) <= 1e-10);
  assert_true(test_inverse_residual(a, x, n) <= RESIDUAL_MAX);
  free(a);
  free(x);
  free(want);
  tarn_matrix_destroy(m);
}

/* A^-1 by tarn's LU and inverse (or, `direct`, by tarn_matrix_inverse):
 * within 1e-8 of dgetri's (A random, not shifted: many interchanges, a
 * condition up to about 1e4), the residual below the bound. */
static void check_lu(tarn_rt *rt, size_t n, size_t nb, uint64_t seed,
                     bool direct) {
  double *a = test_random_matrix(n, n, 0.0, seed);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  size_t *piv = malloc(n * sizeof *piv);
  lapack_int *ipiv = malloc(n * sizeof *ipiv);
  double *want = malloc(n * n * sizeof *want);
  assert_non_null(piv);
  assert_non_null(ipiv);
  assert_non_null(want);
  int info = 5;
  if (direct) {
    assert_int_equal(tarn_matrix_inverse(m, &info), 0);
  } else {
    assert_int_equal(tarn_matrix_lu(m, piv, &info), 0);
    assert_int_equal(tarn_matrix_lu_inverse(m, piv, &info), 0);
  }
  assert_int_equal(info, 0);
  double *x = test_buffer_of(m);
  memcpy(want, a, n * n * sizeof *want);
  assert_int_equal(
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, want, (int)n, ipiv), 0);
  assert_int_equal(LAPACKE_dgetri(LAPACK_COL_MAJOR, (int)n, want, (int)n, ipiv),
                   0);
  assert_true(relative_difference(x, want, n * n) <= 1e-8);
  assert_true(test_inverse_residual(a, x, n) <= RESIDUAL_MAX);
  free(a);
  free(x);
  free(want);
  free(piv);
  free(ipiv);
  tarn_matrix_destroy(m);
}

static void test_cholesky_inverse(void **state) {
  (void)state;
  uint64_t seed = 100;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      check_cholesky(rt, sizes[s][0], sizes[s][1], seed++);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void test_lu_inverse(void **state) {
  (void)state;
  uint64_t seed = 200;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      check_lu(rt, sizes[s][0], sizes[s][1], seed++, false);
      check_lu(rt, sizes[s][0], sizes[s][1], seed++, true);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* With the runtime's cores far apart (tarn__rt_cores_far_set), a tile's
 * triangle inverts its halves one after the other and the kernels below
 * 2^25 multiply-adds run unshared: the inverses of one tile of 256 and
 * of 600 in tiles of 300 as dpotri's and dgetri's, the triangle's within
 * its residual bound, on 2 and 3 workers. */
static void test_inverses_cores_far_apart(void **state) {
  (void)state;
  static const size_t far_sizes[][2] = {{256, 256}, {600, 300}};
  uint64_t seed = 700;
  for (unsigned workers = 2; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    tarn__rt_cores_far_set(rt, 1);
    for (size_t s = 0; s < 2; s++) {
      size_t n = far_sizes[s][0], nb = far_sizes[s][1];
      check_cholesky(rt, n, nb, seed++);
      check_lu(rt, n, nb, seed++, false);
      check_triangle(rt, n, n, nb, nb, TARN_UPPER, TARN_NON_UNIT, seed++);
      check_triangle(rt, n, n, nb, nb, TARN_LOWER, TARN_UNIT, seed++);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The inverse of a permutation (cyclic shifts, and the reversal) is its
 * transpose, exactly: the interchanges come out right. */
static void test_permutation_inverse(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  const size_t n = 11;
  for (size_t shape = 0; shape < 3; shape++) {
    double p[11 * 11] = {0};
    for (size_t j = 0; j < n; j++) {
      size_t i = shape == 2 ? n - 1 - j : (j + 1 + shape * 4) % n;
      p[i + j * n] = 1;
    }
    tarn_matrix *m = NULL;
    size_t piv[11];
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 3, 3, p, n, &m), 0);
    assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
    assert_int_equal(tarn_matrix_lu_inverse(m, piv, NULL), 0);
    double *x = test_buffer_of(m);
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < n; i++) assert_true(x[i + j * n] == p[j + i * n]);
    free(x);
    tarn_matrix_destroy(m);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* (A^T A)^-1 from QR's factor of an m x n A in tiles mb x nb: within
 * 1e-8 of dpotri's of A^T A (mirrored), symmetric bit for bit, the
 * residual against A^T A below the bound, the factor only read. */
static void check_qr_ata(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                         uint64_t seed) {
  double *a = test_random_matrix(m, n, 0.0, seed),
         *g = malloc(n * n * sizeof *g);
  assert_non_null(g);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, a, (int)m, a, (int)m, 0.0, g, (int)n);
  double *want = malloc(n * n * sizeof *want);
  assert_non_null(want);
  memcpy(want, g, n * n * sizeof *want);
  assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, want, (int)n),
                   0);
  assert_int_equal(LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (int)n, want, (int)n),
                   0);
  tarn_matrix *f = NULL, *t = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, mb, nb, a, m, &f), 0);
  assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
  double *f0 = test_buffer_of(f);
  int info = 5;
  assert_int_equal(tarn_matrix_qr_ata_inverse(f, &c, &info), 0);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_rows(c), n);
  assert_int_equal(tarn_matrix_cols(c), n);
  double *x = test_buffer_of(c), *f1 = test_buffer_of(f);
  assert_memory_equal(f0, f1, m * n * sizeof *f0);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < j; i++) {
      assert_memory_equal(&x[i + j * n], &x[j + i * n], sizeof *x);
      want[i + j * n] = want[j + i * n];
    }
  assert_true(relative_difference(x, want, n * n) <= 1e-8);
  assert_true(test_inverse_residual(g, x, n) <= RESIDUAL_MAX);
  free(a);
  free(g);
  free(want);
  free(x);
  free(f0);
  free(f1);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(c);
}

static void test_qr_ata_inverse(void **state) {
  (void)state;
  /* m, n, mb, nb: square tiles with and without rows below the block, a
   * square A, one row band and several, a band of 140 columns (halved) */
  static const size_t shapes[][4] = {
      {1, 1, 1, 1},   {50, 37, 8, 8}, {48, 40, 8, 8},  {20, 10, 3, 3},
      {30, 30, 7, 7}, {64, 7, 64, 7}, {100, 7, 16, 7}, {300, 140, 300, 140}};
  uint64_t seed = 600;
  for (unsigned workers = 1; workers <= 3; workers += 2) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      check_qr_ata(rt, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                   seed++);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* ---- refusals ------------------------------------------------------------ */

/* A zero on the diagonal at (17, 17) (of 20, tiles of 8): TARN_EINVAL,
 * info 18, the matrix unchanged bit for bit; with a unit diagonal the
 * zero is not read and the triangle is inverted. */
static void test_singular(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 20, piv[20];
  for (size_t i = 0; i < n; i++) piv[i] = i;
  piv[3] = 9;
  double *a = test_random_matrix(n, n, 3.0, 400);
  a[17 + 17 * n] = 0.0;
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, a, n, &m), 0);
  for (int call = 0; call < 4; call++) {
    int info = 0;
    int rc = call == 0   ? tarn_matrix_lu_inverse(m, piv, &info)
             : call == 1 ? tarn_matrix_cholesky_inverse(m, &info)
                         : tarn_matrix_triangular_inverse(
                               m, call == 2 ? TARN_LOWER : TARN_UPPER,
                               TARN_NON_UNIT, &info);
    assert_int_equal(rc, TARN_EINVAL);
    assert_int_equal(info, 18);
    double *after = test_buffer_of(m);
    assert_memory_equal(after, a, n * n * sizeof *a);
    free(after);
  }
  assert_int_equal(
      tarn_matrix_triangular_inverse(m, TARN_LOWER, TARN_UNIT, NULL), 0);
  double *after = test_buffer_of(m);
  assert_true(after[17 + 17 * n] == 0.0);
  assert_true(after[18 + 17 * n] == -a[18 + 17 * n]); /* the unit L's */
  free(after);
  tarn_matrix_destroy(m);
  /* tarn_matrix_inverse of an A whose column 12 is zero: LU's info 13,
   * A left holding its factors, as tarn_matrix_lu leaves them */
  for (size_t i = 0; i < n; i++) a[i + 12 * n] = 0.0;
  tarn_matrix *f = NULL;
  size_t fpiv[20];
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, a, n, &m), 0);
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, a, n, &f), 0);
  int info = 0;
  assert_int_equal(tarn_matrix_inverse(m, &info), TARN_EINVAL);
  assert_int_equal(info, 13);
  assert_int_equal(tarn_matrix_lu(f, fpiv, &info), TARN_EINVAL);
  double *got = test_buffer_of(m), *factors = test_buffer_of(f);
  assert_memory_equal(got, factors, n * n * sizeof *got);
  free(got);
  free(factors);
  tarn_matrix_destroy(m);
  tarn_matrix_destroy(f);
  /* (A^T A)^-1 of the same A (column 12 zero), by QR: R(12, 12) is zero,
   * info 13, no matrix made */
  tarn_matrix *t = NULL, *c = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, a, n, &f), 0);
  assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
  info = 0;
  assert_int_equal(tarn_matrix_qr_ata_inverse(f, &c, &info), TARN_EINVAL);
  assert_int_equal(info, 13);
  assert_null(c);
  free(a);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bad arguments: TARN_EINVAL, info 0, the matrix unchanged. A failed
 * task on the matrix's first tile: TARN_ECANCELED. */
static void test_bad_input_and_failures(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12, piv[12];
  tarn_matrix *a = NULL, *wide = NULL, *oblong = NULL;
  test_factor_operands(rt, &a, &wide, &oblong, piv);
  double *before = test_buffer_of(a);
  int info = 5;
  assert_int_equal(tarn_matrix_lu_inverse(NULL, piv, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  info = 5;
  assert_int_equal(tarn_matrix_lu_inverse(a, NULL, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_lu_inverse(wide, piv, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_inverse(oblong, piv, NULL), TARN_EINVAL);
  piv[4] = 3; /* below its row */
  assert_int_equal(tarn_matrix_lu_inverse(a, piv, NULL), TARN_EINVAL);
  piv[4] = n; /* past the end */
  assert_int_equal(tarn_matrix_lu_inverse(a, piv, NULL), TARN_EINVAL);
  piv[4] = 4;
  info = 5;
  assert_int_equal(tarn_matrix_inverse(NULL, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_inverse(wide, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_inverse(oblong, NULL), TARN_EINVAL);
  tarn_matrix *c = (tarn_matrix *)1;
  info = 5;
  assert_int_equal(tarn_matrix_qr_ata_inverse(NULL, &c, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_null(c);
  assert_int_equal(tarn_matrix_qr_ata_inverse(a, NULL, NULL), TARN_EINVAL);
  c = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_ata_inverse(wide, &c, NULL), TARN_EINVAL);
  assert_null(c);
  assert_int_equal(tarn_matrix_qr_ata_inverse(oblong, &c, NULL), TARN_EINVAL);
  info = 5;
  assert_int_equal(tarn_matrix_cholesky_inverse(NULL, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_cholesky_inverse(wide, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_inverse(oblong, NULL), TARN_EINVAL);
  info = 5;
  assert_int_equal(
      tarn_matrix_triangular_inverse(NULL, TARN_LOWER, TARN_NON_UNIT, &info),
      TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(
      tarn_matrix_triangular_inverse(wide, TARN_LOWER, TARN_NON_UNIT, NULL),
      TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_triangular_inverse(oblong, TARN_LOWER, TARN_NON_UNIT, NULL),
      TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_triangular_inverse(a, (tarn_uplo)7, TARN_NON_UNIT, NULL),
      TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_triangular_inverse(a, TARN_UPPER, (tarn_diag)7, NULL),
      TARN_EINVAL);
  double *after = test_buffer_of(a);
  assert_memory_equal(after, before, n * n * sizeof *after);
  free(after);
  free(before);
  test_fail_first_tile(rt, a);
  assert_int_equal(tarn_matrix_lu_inverse(a, piv, NULL), TARN_ECANCELED);
  assert_int_equal(tarn_matrix_inverse(a, NULL), TARN_ECANCELED);
  c = (tarn_matrix *)1;
  assert_int_equal(tarn_matrix_qr_ata_inverse(a, &c, NULL), TARN_ECANCELED);
  assert_null(c);
  assert_int_equal(tarn_matrix_cholesky_inverse(a, NULL), TARN_ECANCELED);
  assert_int_equal(
      tarn_matrix_triangular_inverse(a, TARN_UPPER, TARN_UNIT, NULL),
      TARN_ECANCELED);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(oblong);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of half the matrix: the same results. */
static void test_inverse_under_a_memory_limit(void **state) {
  (void)state;
  size_t limit = 160 << 10; /* the 200 x 200 matrix takes 320 KB */
  tarn_rt *rt = test_rt(2, limit);
  check_lu(rt, 200, 32, 500, false);
  check_lu(rt, 200, 32, 503, true);
  check_cholesky(rt, 200, 32, 501);
  check_triangle(rt, 200, 200, 32, 32, TARN_UPPER, TARN_NON_UNIT, 502);
  check_qr_ata(rt, 260, 150, 32, 32, 504);
  test_rt_destroy_spilled(rt, limit);
}

/* Under a limit of exactly three tiles (64 x 64 doubles; the matrix 256
 * x 256 takes 16), what their largest tasks pin (a gemm's), Cholesky's
 * inverse and both triangles' inverses give the results above, spilling;
 * a page less, the triangular and Cholesky inverses return TARN_ENOMEM
 * before any task, the matrix unchanged and readable (a task that could
 * never fit would have failed part-way and left it cancelled). */
static void test_inverse_limit_of_one_task(void **state) {
  (void)state;
  enum { N = 256, NB = 64 };
  size_t task = 3 * NB * NB * sizeof(double),
         page = (size_t)sysconf(_SC_PAGESIZE);
  tarn_rt *rt = test_rt(2, task);
  check_cholesky(rt, N, NB, 510);
  check_triangle(rt, N, N, NB, NB, TARN_LOWER, TARN_NON_UNIT, 511);
  check_triangle(rt, N, N, NB, NB, TARN_UPPER, TARN_NON_UNIT, 512);
  test_rt_destroy_spilled(rt, task);
  rt = test_rt(2, task - page);
  double *a = test_spd_matrix(N, 0.5, 513);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, N, &m), 0);
  int info = 5;
  assert_int_equal(
      tarn_matrix_triangular_inverse(m, TARN_LOWER, TARN_NON_UNIT, &info),
      TARN_ENOMEM);
  assert_int_equal(
      tarn_matrix_triangular_inverse(m, TARN_UPPER, TARN_UNIT, &info),
      TARN_ENOMEM);
  assert_int_equal(tarn_matrix_cholesky_inverse(m, &info), TARN_ENOMEM);
  assert_int_equal(info, 0);
  test_matrix_holds(m, a);
  free(a);
  tarn_matrix_destroy(m);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A matrix of two tile columns, 100 x 100 in tiles of 64: getri's gemm
 * pins tiles (0, 0) and (0, 1) and the temporary of L's tile (1, 0), more
 * than a tile row of two and, in whole pages, more than LU's largest
 * task (its gemm on the smaller tile (1, 1)). Under exactly that gemm's
 * tiles both inverses match dgetri; a page less, each returns TARN_ENOMEM
 * before any task, the matrix unchanged (each checked a tile line only:
 * the LU inverse failed part-way, and tarn_matrix_inverse factored A
 * first, both leaving the matrix cancelled). */
static void test_lu_inverse_limit_of_one_task(void **state) {
  (void)state;
  enum { N = 100, NB = 64 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t task = test_tile_charge(NB, NB) + 2 * test_tile_charge(NB, N - NB);
  tarn_rt *rt = test_rt(2, task);
  check_lu(rt, N, NB, 520, false);
  check_lu(rt, N, NB, 521, true);
  test_rt_destroy_spilled(rt, task);
  for (unsigned workers = 1; workers <= 2; workers++) {
    rt = test_rt(workers, task - page);
    double *a = test_random_matrix(N, N, 0.0, 522);
    tarn_matrix *m = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, N, &m), 0);
    size_t piv[N];
    for (size_t i = 0; i < N; i++) piv[i] = i;
    int info = 5;
    assert_int_equal(tarn_matrix_lu_inverse(m, piv, &info), TARN_ENOMEM);
    assert_int_equal(info, 0);
    info = 5;
    assert_int_equal(tarn_matrix_inverse(m, &info), TARN_ENOMEM);
    assert_int_equal(info, 0);
    test_matrix_holds(m, a);
    free(a);
    tarn_matrix_destroy(m);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triangular_inverse),
      cmocka_unit_test(test_tall_triangular_inverse),
      cmocka_unit_test(test_cholesky_inverse),
      cmocka_unit_test(test_lu_inverse),
      cmocka_unit_test(test_inverses_cores_far_apart),
      cmocka_unit_test(test_permutation_inverse),
      cmocka_unit_test(test_qr_ata_inverse),
      cmocka_unit_test(test_singular),
      cmocka_unit_test(test_bad_input_and_failures),
      cmocka_unit_test(test_inverse_under_a_memory_limit),
      cmocka_unit_test(test_inverse_limit_of_one_task),
      cmocka_unit_test(test_lu_inverse_limit_of_one_task),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
