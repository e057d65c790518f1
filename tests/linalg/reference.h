/* reference.h: figures the linear algebra tests take from CBLAS and
 * LAPACKE on whole column-major matrices (ld their rows): the scaled
 * residual of an LU factorisation and of an inverse, and the true
 * reciprocal condition number. Include after
 * <lapacke.h>, <cmocka.h> and "support.h" (test_fro); failures are cmocka
 * assertions. */
#ifndef TARN_TESTS_LINALG_REFERENCE_H
#define TARN_TESTS_LINALG_REFERENCE_H

/* The unit lower L (m x k) and upper U (k x n) of the m x n LU factors f,
 * k = min(m, n), in new zeroed buffers the caller frees. */
static inline void test_lu_split(const double *f, size_t m, size_t n,
                                 double **l, double **u) {
  size_t k = m < n ? m : n;
  *l = calloc(m * k, sizeof **l);
  *u = calloc(k * n, sizeof **u);
  assert_non_null(*l);
  assert_non_null(*u);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      if (i > j && j < k) (*l)[i + j * m] = f[i + j * m];
      if (i == j) (*l)[i + j * m] = 1.0;
      if (i <= j && i < k) (*u)[i + j * k] = f[i + j * m];
    }
}

/* ||P A - L U||_F / (max(m, n) ||A||_F eps) for the LU factors f and the
 * min(m, n) pivots piv (0-based, as tarn_matrix_lu's) of the m x n A;
 * asserts that each piv[i] is in [i, m). LAPACK's dget01 holds it below
 * 30. */
static inline double test_lu_residual(const double *a, const double *f,
                                      const size_t *piv, size_t m, size_t n) {
  size_t k = m < n ? m : n;
  double *l, *u, *r = malloc(m * n * sizeof *r);
  assert_non_null(r);
  test_lu_split(f, m, n, &l, &u);
  memcpy(r, a, m * n * sizeof *r);
  for (size_t i = 0; i < k; i++) {
    assert_true(piv[i] >= i && piv[i] < m);
    if (piv[i] != i) cblas_dswap((int)n, r + i, (int)m, r + piv[i], (int)m);
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
              -1.0, l, (int)m, u, (int)k, 1.0, r, (int)m);
  double res =
      test_fro(r, m * n) /
      ((double)(m > n ? m : n) * test_fro(a, m * n) * DBL_EPSILON + DBL_MIN);
  free(l);
  free(u);
  free(r);
  return res;
}

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
