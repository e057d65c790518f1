/* reference.h: figures the linear algebra tests take from CBLAS and
 * LAPACKE on whole column-major matrices (ld n): the scaled residual of
 * an inverse and the true reciprocal condition number. Include after
 * <lapacke.h>, <cmocka.h> and "support.h" (test_fro); failures are cmocka
 * assertions. */
#ifndef TARN_TESTS_LINALG_REFERENCE_H
#define TARN_TESTS_LINALG_REFERENCE_H

/* ||A X - I||_F / (n ||A||_F ||X||_F eps) for n x n A and X: LAPACK's
 * tests of its inverses (dget03, dpot03, dtrt01) hold it below 30. */
static inline double test_inverse_residual(const double *a, const double *x,
                                           size_t n) {
  double *r = calloc(n * n, sizeof *r);
  assert_non_null(r);
  for (size_t i = 0; i < n; i++) r[i + i * n] = -1.0;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
              1.0, a, (int)n, x, (int)n, 1.0, r, (int)n);
  double res = test_fro(r, n * n) / ((double)n * test_fro(a, n * n) *
                                     test_fro(x, n * n) * DBL_EPSILON);
  free(r);
  return res;
}

/* The true reciprocal condition number 1 / (||A|| ||A^-1||) of the n x n
 * A, in norm '1' or 'I', from its explicit inverse (dgetrf, dgetri). */
static inline double test_true_rcond(const double *a, size_t n, char norm) {
  double *inv = malloc(n * n * sizeof *inv);
  lapack_int *ipiv = malloc(n * sizeof *ipiv);
  assert_non_null(inv);
  assert_non_null(ipiv);
  memcpy(inv, a, n * n * sizeof *inv);
  int ni = (int)n;
  assert_int_equal(LAPACKE_dgetrf(LAPACK_COL_MAJOR, ni, ni, inv, ni, ipiv), 0);
  assert_int_equal(LAPACKE_dgetri(LAPACK_COL_MAJOR, ni, inv, ni, ipiv), 0);
  double r = 1.0 / (LAPACKE_dlange(LAPACK_COL_MAJOR, norm, ni, ni, a, ni) *
                    LAPACKE_dlange(LAPACK_COL_MAJOR, norm, ni, ni, inv, ni));
  free(inv);
  free(ipiv);
  return r;
}

#endif
