/* gaussian.c: the log-likelihood of many samples under a multivariate
 * normal distribution, by a Cholesky factor and a triangular solve.
 *
 * The covariance S (N x N, symmetric positive definite) is G^T G / N + I
 * for a random G (tarn_matrix_syrk_ata, then 1 added to its diagonal by a
 * user kernel); the K samples are the columns of a random N x K matrix X,
 * and the mean is 0.5 in every coordinate. With S = L L^T
 * (tarn_matrix_cholesky) and Z = L^-1 (X - mean)
 * (tarn_matrix_triangular_solve, all samples at once), the log-likelihood
 * of the samples is
 *
 *   -||Z||_F^2 / 2 - K log det S / 2 - K N log(2 pi) / 2,
 *
 * log det S = 2 sum_i log L(i, i) coming from the factor
 * (tarn_matrix_cholesky_logdet).
 *
 * The program then computes the same from copies of S and X by a plain
 * Cholesky and forward substitution, one sample at a time, and checks
 * that the two agree.
 *
 *   build/examples/gaussian [N K TILE]     (default 1000 300 256)
 *
 * Exits 0 when they agree to 1e-9 of the value's magnitude, 1 otherwise
 * (or when a call fails: its status is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tarn.h>

#include "example.h"

#define USAGE "gaussian [N K TILE]"

#define LOG_TWO_PI 1.8378770664093454836 /* log(2 pi) */

/* Adds 1 to the diagonal elements of a block (data[0], read and
 * written): S = G^T G / N + I. */
static int add_identity(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++) {
    size_t j = b->col + q; /* the element (j, j), if this block holds it */
    if (j >= b->row && j < b->row + b->rows)
      b->data[0][j - b->row + q * b->ld] += 1.0;
  }
  return 0;
}

/* The same log-likelihood by plain loops on column-major copies of S and
 * of X - mean (both overwritten): Cholesky by columns, then a forward
 * substitution per sample. Returns NAN when S is not positive definite. */
static double serial_loglik(double *s, double *d, size_t n, size_t k) {
  double logdet = 0;
  for (size_t j = 0; j < n; j++) {
    double v = s[j + j * n];
    for (size_t p = 0; p < j; p++) v -= s[j + p * n] * s[j + p * n];
    if (!(v > 0)) return NAN;
    double l = sqrt(v);
    s[j + j * n] = l;
    logdet += log(l);
    for (size_t i = j + 1; i < n; i++) {
      double w = s[i + j * n];
      for (size_t p = 0; p < j; p++) w -= s[i + p * n] * s[j + p * n];
      s[i + j * n] = w / l;
    }
  }
  double quad = 0;
  for (size_t c = 0; c < k; c++) {
    double *z = d + c * n;
    for (size_t i = 0; i < n; i++) {
      double w = z[i];
      for (size_t p = 0; p < i; p++) w -= s[i + p * n] * z[p];
      z[i] = w / s[i + i * n];
      quad += z[i] * z[i];
    }
  }
  return -0.5 * quad - (double)k * logdet - 0.5 * (double)(k * n) * LOG_TWO_PI;
}

int main(int argc, char **argv) {
  example_start(argc, argv, 3, USAGE);
  size_t n = example_size(argc, argv, 1, 1000, USAGE),
         k = example_size(argc, argv, 2, 300, USAGE),
         tile = example_size(argc, argv, 3, 256, USAGE);
  CHECK(tarn_rt_create(NULL, &example_rt));
  tarn_rt *rt = example_rt;

  /* S = G^T G / N + I, in square tiles (Cholesky's rule). */
  tarn_matrix *g = NULL, *gtg = NULL, *s = NULL, *x = NULL, *d = NULL;
  CHECK(tarn_matrix_rand(rt, n, n, tile, tile, 1, &g));
  CHECK(tarn_matrix_syrk_ata(g, &gtg));
  CHECK(tarn_matrix_axpb(gtg, 1.0 / (double)n, 0.0, &s));
  tarn_matrix *const sm[] = {s};
  const tarn_access rw[] = {TARN_READ_WRITE};
  CHECK(tarn_matrix_apply(sm, rw, 1, add_identity, NULL));
  /* The samples, and D = X - mean, in S's row tiles. */
  CHECK(tarn_matrix_rand(rt, n, k, tile, tile, 2, &x));
  CHECK(tarn_matrix_axpb(x, 1.0, -0.5, &d));

  /* Copies for the serial check, before the factorisation overwrites S
   * and the solve D (each copy waits for the tasks that make it). */
  double *s_copy = malloc(n * n * sizeof *s_copy),
         *d_copy = malloc(n * k * sizeof *d_copy);
  if (s_copy == NULL || d_copy == NULL) example_fail("malloc", TARN_ENOMEM);
  CHECK(tarn_matrix_to_buffer(s, s_copy, n));
  CHECK(tarn_matrix_to_buffer(d, d_copy, n));

  int info = 0;
  CHECK(tarn_matrix_cholesky(s, &info)); /* S's lower triangle becomes L */
  CHECK(tarn_matrix_triangular_solve(s, TARN_LOWER, TARN_NO_TRANS,
                                     TARN_NON_UNIT, d, &info)); /* D = Z */
  double norm_z;
  CHECK(tarn_matrix_norm(d, TARN_NORM_FRO, &norm_z));
  double logdet; /* log det S = 2 sum log L(i, i), from L's diagonal tiles */
  CHECK(tarn_matrix_cholesky_logdet(s, &logdet));
  double loglik = -0.5 * norm_z * norm_z - 0.5 * (double)k * logdet -
                  0.5 * (double)(k * n) * LOG_TWO_PI;

  double want = serial_loglik(s_copy, d_copy, n, k);
  int ok = fabs(loglik - want) <= 1e-9 * fabs(want);
  printf("gaussian: %zu samples of dimension %zu, tiles of %zu, %u workers\n",
         k, n, tile, tarn_rt_workers(rt));
  printf("  log det S = %.12g\n", logdet);
  printf("  log-likelihood: tarn %.12g, serial loops %.12g%s\n", loglik, want,
         ok ? "" : "  (disagree)");

  free(s_copy);
  free(d_copy);
  tarn_matrix *const all[] = {g, gtg, s, x, d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
  return example_finish("gaussian", ok);
}
