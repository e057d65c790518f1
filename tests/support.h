/* support.h: helpers the matrix, stencil and linalg tests share (include
 * after <cmocka.h>): a runtime with a given number of
 * workers and memory limit, a matrix copied out to a fresh buffer, the
 * Frobenius norm of a buffer, and the scaled residual of a linear solve.
 * Failures are cmocka assertions. */
#ifndef TARN_TESTS_SUPPORT_H
#define TARN_TESTS_SUPPORT_H

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tarn.h"

/* A runtime of `workers` workers whose pool has the memory limit `limit`
 * (0: none). */
static inline tarn_rt *test_rt(unsigned workers, size_t limit) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.pool.mem_limit = limit;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

/* The matrix in a malloc'ed column-major buffer (ld = rows); the caller
 * frees it. Waits for the tasks writing the matrix. */
static inline double *test_buffer_of(tarn_matrix *a) {
  size_t m = tarn_matrix_rows(a), n = tarn_matrix_cols(a);
  double *b = malloc(m * n * sizeof *b);
  assert_non_null(b);
  assert_int_equal(tarn_matrix_to_buffer(a, b, m), 0);
  return b;
}

/* sqrt(sum x[k]^2) over n values. */
static inline double test_fro(const double *x, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += x[k] * x[k];
  return sqrt(s);
}

/* ||A X - B||_F / (n ||A||_F ||X||_F eps) for the n x n A and the n x
 * nrhs X and B (column-major, ld = n). */
static inline double test_solve_residual(const double *a, const double *x,
                                         const double *b, size_t n,
                                         size_t nrhs) {
  double *r = malloc(n * nrhs * sizeof *r);
  assert_non_null(r);
  memcpy(r, b, n * nrhs * sizeof *r);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)nrhs,
              (int)n, 1.0, a, (int)n, x, (int)n, -1.0, r, (int)n);
  double res = test_fro(r, n * nrhs) / ((double)n * test_fro(a, n * n) *
                                        test_fro(x, n * nrhs) * DBL_EPSILON);
  free(r);
  return res;
}

#endif
