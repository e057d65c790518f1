/* test_logdet.c: determinants from factors made before
 * (tarn_matrix_lu_logdet, tarn_matrix_cholesky_logdet) against
 * long-double sums of log|u_ii| of LAPACK's dgetrf and dpotrf on the same
 * matrices, and the sign against the interchanges and U's signs; the
 * determinants of small matrices known in closed form (a permutation, a
 * triangular matrix, a rotation-like 2 x 2); determinants far beyond a
 * double's range (1e-3000, 1e+1200) that the logarithm still holds;
 * sizes that are and are not multiples of the tile, one tile and many,
 * 1 to 3 workers, under a memory limit that spills. A zero on the
 * diagonal gives -inf and sign 0, an infinity +inf, a NaN a NaN (sign 0);
 * bad arguments are refused and change nothing; a failed task on the
 * factor before gives TARN_ECANCELED. */
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

/* LU of `a` by tarn and by LAPACK: the logarithm within 1e-12 (relative,
 * or absolute near 0) of LAPACK's long-double sum of log|u_ii|, the sign
 * that of LAPACK's factors and pivots. */
static void check_lu(tarn_rt *rt, const double *a, size_t n, size_t nb) {
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  size_t *piv = malloc(n * sizeof *piv);
  lapack_int *ipiv = malloc(n * sizeof *ipiv);
  double *f = malloc(n * n * sizeof *f);
  assert_non_null(piv);
  assert_non_null(ipiv);
  assert_non_null(f);
  assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
  memcpy(f, a, n * n * sizeof *f);
  assert_int_equal(
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, f, (int)n, ipiv), 0);
  long double want = 0;
  int want_sign = 1;
  for (size_t i = 0; i < n; i++) {
    want += logl(fabsl((long double)f[i + i * n]));
    if (f[i + i * n] < 0) want_sign = -want_sign;
    if (ipiv[i] != (lapack_int)i + 1) want_sign = -want_sign;
  }
  double got = 0;
  int sign = 5;
  assert_int_equal(tarn_matrix_lu_logdet(m, piv, &got, &sign), 0);
  assert_int_equal(sign, want_sign);
  assert_true(fabs(got - (double)want) <= 1e-12 * fmax(1.0, fabsl(want)));
  free(piv);
  free(ipiv);
  free(f);
  tarn_matrix_destroy(m);
}

/* A = G G^T / n + s I by Cholesky: 2 sum log l_ii against dpotrf's. */
static void check_cholesky(tarn_rt *rt, size_t n, size_t nb, double s,
                           uint64_t seed) {
  double *a = test_spd_matrix(n, s, seed);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  assert_int_equal(tarn_matrix_cholesky(m, NULL), 0);
  assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, a, (int)n), 0);
  long double want = 0;
  for (size_t i = 0; i < n; i++) want += 2 * logl((long double)a[i + i * n]);
  double got = 0;
  assert_int_equal(tarn_matrix_cholesky_logdet(m, &got), 0);
  assert_true(fabs(got - (double)want) <= 1e-12 * fmax(1.0, fabsl(want)));
  free(a);
  tarn_matrix_destroy(m);
}

static const size_t sizes[][2] = {{1, 1},    {2, 1},    {7, 3},   {40, 40},
                                  {100, 32}, {129, 16}, {200, 64}};

static void test_lu_logdet(void **state) {
  (void)state;
  uint64_t seed = 1;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (int shifted = 0; shifted < 2; shifted++) {
        /* unshifted: random signs on U's diagonal, many interchanges */
        double *a = test_random_matrix(sizes[s][0], sizes[s][0],
                                       shifted ? 2.0 : 0.0, seed++);
        check_lu(rt, a, sizes[s][0], sizes[s][1]);
        free(a);
      }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void test_cholesky_logdet(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  uint64_t seed = 50;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    check_cholesky(rt, sizes[s][0], sizes[s][1], 1.0, seed++);
    check_cholesky(rt, sizes[s][0], sizes[s][1], 1e-3, seed++);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Determinants known in closed form. */
static void test_known_determinants(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  double rc_log = 0;
  int sign = 0;
  /* The cyclic shift of 5 rows: an even permutation of sign +1 (four
   * transpositions); of 4 rows: -1. Its LU interchanges rows, U = I. */
  for (size_t n = 4; n <= 5; n++) {
    double *p = calloc(n * n, sizeof *p);
    assert_non_null(p);
    for (size_t j = 0; j < n; j++) p[(j + 1) % n + j * n] = 1;
    tarn_matrix *m = NULL;
    size_t piv[5];
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 2, 2, p, n, &m), 0);
    assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
    assert_int_equal(tarn_matrix_lu_logdet(m, piv, &rc_log, &sign), 0);
    assert_int_equal(sign, n % 2 ? 1 : -1);
    assert_true(fabs(rc_log) <= 1e-15);
    free(p);
    tarn_matrix_destroy(m);
  }
  /* [[a, b], [c, d]]: ad - bc = 3 * 4 - 5 * 2 = 2; and -2 with rows
   * exchanged. */
  const double two[2][4] = {{3, 2, 5, 4}, {2, 3, 4, 5}};
  for (int k = 0; k < 2; k++) {
    tarn_matrix *m = NULL;
    size_t piv[2];
    assert_int_equal(tarn_matrix_from_buffer(rt, 2, 2, 1, 1, two[k], 2, &m), 0);
    assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
    assert_int_equal(tarn_matrix_lu_logdet(m, piv, &rc_log, &sign), 0);
    assert_int_equal(sign, k == 0 ? 1 : -1);
    assert_true(fabs(rc_log - log(2.0)) <= 1e-15);
    tarn_matrix_destroy(m);
  }
  /* Diagonal matrices whose determinants leave a double's range: 300
   * elements of 1e-10, 1e-3000 in all (with one -1e-10: sign -1), and
   * 300 of 1e4 (1e1200), as LU factors with no interchange and as
   * Cholesky factors (det of L L^T: the square). */
  size_t n = 300, piv[300];
  for (size_t i = 0; i < n; i++) piv[i] = i;
  const double values[] = {1e-10, 1e4};
  for (int k = 0; k < 2; k++) {
    tarn_matrix *m = NULL;
    double *d = calloc(n * n, sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i + i * n] = values[k];
    if (k == 0) d[7 + 7 * n] = -1e-10;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 64, 64, d, n, &m), 0);
    double want = (double)n * log(values[k]), chol = 0;
    assert_int_equal(tarn_matrix_lu_logdet(m, piv, &rc_log, &sign), 0);
    assert_int_equal(sign, k == 0 ? -1 : 1);
    assert_true(fabs(rc_log - want) <= 1e-13 * fabs(want));
    assert_int_equal(tarn_matrix_cholesky_logdet(m, &chol), 0);
    assert_true(fabs(chol - 2 * want) <= 1e-13 * fabs(want));
    free(d);
    tarn_matrix_destroy(m);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A zero on the diagonal: -inf, sign 0; an infinity: +inf (and a zero
 * with it: NaN); a NaN: NaN, sign 0. In the last tile of several. */
static void test_special_values(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 20, piv[20];
  for (size_t i = 0; i < n; i++) piv[i] = i;
  piv[3] = 9; /* one interchange: the sign flips */
  const struct {
    double v[2]; /* at (17, 17), and (2, 2) */
    int kind;    /* 0: -inf, 1: +inf, 2: NaN */
  } cases[] = {{{0.0, 1.5}, 0},      {{-0.0, 1.5}, 0},
               {{INFINITY, 1.5}, 1}, {{-INFINITY, 1.5}, 1},
               {{INFINITY, 0.0}, 2}, {{NAN, 1.5}, 2},
               {{NAN, 0.0}, 2}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double *a = test_random_matrix(n, n, 3.0, 90 + c);
    a[17 + 17 * n] = cases[c].v[0];
    a[2 + 2 * n] = cases[c].v[1];
    tarn_matrix *m = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 8, 8, a, n, &m), 0);
    double got = 0, chol = 0;
    int sign = 5;
    assert_int_equal(tarn_matrix_lu_logdet(m, piv, &got, &sign), 0);
    assert_int_equal(tarn_matrix_cholesky_logdet(m, &chol), 0);
    if (cases[c].kind == 0) {
      assert_true(isinf(got) && got < 0 && sign == 0);
      assert_true(isinf(chol) && chol < 0);
    } else if (cases[c].kind == 1) {
      /* one interchange, and -inf's sign */
      int want = signbit(cases[c].v[0]) ? 1 : -1;
      assert_true(isinf(got) && got > 0 && sign == want);
      assert_true(isinf(chol) && chol > 0);
    } else {
      assert_true(isnan(got) && sign == 0);
      assert_true(isnan(chol));
    }
    free(a);
    tarn_matrix_destroy(m);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bad arguments: TARN_EINVAL, the results unchanged. A failed task on the
 * factor's first tile: TARN_ECANCELED. */
static void test_bad_input_and_failures(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12, piv[12];
  tarn_matrix *a = NULL, *wide = NULL, *oblong = NULL;
  test_factor_operands(rt, &a, &wide, &oblong, piv);
  double v = -7;
  int sign = 5;
  assert_int_equal(tarn_matrix_lu_logdet(NULL, piv, &v, &sign), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(a, NULL, &v, &sign), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(a, piv, NULL, &sign), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(a, piv, &v, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(wide, piv, &v, &sign), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(oblong, piv, &v, &sign), TARN_EINVAL);
  piv[4] = 3; /* below its row */
  assert_int_equal(tarn_matrix_lu_logdet(a, piv, &v, &sign), TARN_EINVAL);
  piv[4] = n; /* past the end */
  assert_int_equal(tarn_matrix_lu_logdet(a, piv, &v, &sign), TARN_EINVAL);
  piv[4] = 4;
  assert_int_equal(tarn_matrix_cholesky_logdet(NULL, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_logdet(a, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_logdet(wide, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_logdet(oblong, &v), TARN_EINVAL);
  assert_true(v == -7 && sign == 5);
  test_fail_first_tile(rt, a);
  assert_int_equal(tarn_matrix_lu_logdet(a, piv, &v, &sign), TARN_ECANCELED);
  assert_int_equal(tarn_matrix_cholesky_logdet(a, &v), TARN_ECANCELED);
  assert_true(v == -7 && sign == 5);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(oblong);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of about a third of the matrix: the same. */
static void test_logdet_under_a_memory_limit(void **state) {
  (void)state;
  size_t limit = 160 << 10; /* the 200 x 200 matrix takes 320 KB */
  tarn_rt *rt = test_rt(2, limit);
  double *a = test_random_matrix(200, 200, 0.0, 77);
  check_lu(rt, a, 200, 32);
  check_cholesky(rt, 200, 32, 1.0, 78);
  free(a);
  test_rt_destroy_spilled(rt, limit);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lu_logdet),
      cmocka_unit_test(test_cholesky_logdet),
      cmocka_unit_test(test_known_determinants),
      cmocka_unit_test(test_special_values),
      cmocka_unit_test(test_bad_input_and_failures),
      cmocka_unit_test(test_logdet_under_a_memory_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
