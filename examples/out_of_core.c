/* out_of_core.c: a linear system larger than the memory it may use.
 *
 * Solves A x = b for a symmetric positive definite A (an exponential
 * covariance, A(i, j) = exp(-|i - j| / 8), plus 1 on the diagonal) by
 * Cholesky, on a runtime whose pool may hold only a third of the data:
 * A, a copy of A kept for the check, b and x. Tiles that no running task
 * needs are written to the spill file and read back when a task pins them
 * again; the program never sees the difference. It prints what the pool
 * did (its peak against the limit, what it wrote and read back) and checks
 * the answer: x against the x that made b, and the scaled residual
 * ||A x - b|| / (||A|| ||x|| eps N).
 *
 *   build/examples/out_of_core [N TILE LIMIT_MIB]     (default 3072 256, a
 *                                                      third of the data)
 *
 * Exits 0 when the pool stayed within its limit, really spilled, and the
 * answer is right; 1 otherwise. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tarn.h>

#include "example.h"

#define USAGE "out_of_core [N TILE LIMIT_MIB]"

#define MIB 1048576.0

/* A's elements on a block of one of its tiles. */
static int fill_covariance(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++) {
      double d = fabs((double)(b->row + p) - (double)(b->col + q));
      b->data[0][p + q * b->ld] = exp(-d / 8.0) + (d == 0 ? 1.0 : 0.0);
    }
  return 0;
}

/* The solution that makes b: x_i = sin(i / 100). */
static int fill_solution(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t p = 0; p < b->rows; p++)
    b->data[0][p] = sin((double)(b->row + p) / 100.0);
  return 0;
}

/* data[0] = data[0] - data[1], elementwise. */
static int subtract(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t p = 0; p < b->rows; p++) b->data[0][p] -= b->data[1][p];
  return 0;
}

int main(int argc, char **argv) {
  size_t n = example_size(argc, argv, 1, 3072, USAGE),
         tile = example_size(argc, argv, 2, 256, USAGE);
  /* A and its copy, and four vectors: x_true, b, x, r. */
  double data = (2.0 * (double)n * (double)n + 4.0 * (double)n) * 8.0;
  size_t limit =
      (size_t)example_size(argc, argv, 3, (size_t)(data / 3.0 / MIB), USAGE) *
      (size_t)MIB;
  double task_bytes = 3.0 * (double)tile * (double)tile * 8.0;
  if ((double)limit < task_bytes) {
    fprintf(stderr,
            "out_of_core: the limit must hold the three tiles a task pins "
            "(%.1f MiB)\n",
            task_bytes / MIB);
    return 2;
  }
  tarn_rt_options o;
  CHECK(tarn_rt_options_init(&o));
  o.pool.mem_limit = limit;
  CHECK(tarn_rt_create(&o, &example_rt));
  tarn_rt *rt = example_rt;
  printf(
      "out_of_core: N = %zu in %zu x %zu tiles: %.1f MiB of data under a "
      "limit of %.1f MiB, %u workers\n",
      n, tile, tile, data / MIB, (double)limit / MIB, tarn_rt_workers(rt));

  tarn_matrix *a = NULL, *a0 = NULL, *want = NULL, *b = NULL, *x = NULL,
              *r = NULL;
  CHECK(tarn_matrix_zeros(rt, n, n, tile, tile, &a));
  CHECK(tarn_matrix_zeros(rt, n, 1, tile, 1, &want));
  const tarn_access write[] = {TARN_WRITE};
  CHECK(tarn_matrix_apply(&a, write, 1, fill_covariance, NULL));
  CHECK(tarn_matrix_apply(&want, write, 1, fill_solution, NULL));
  CHECK(tarn_matrix_copy(a, &a0));                                /* kept */
  CHECK(tarn_matrix_gemv(a0, TARN_NO_TRANS, want, 1.0, 0.0, &b)); /* b = A x */
  CHECK(tarn_matrix_copy(b, &x));

  int info = 0;
  CHECK(tarn_matrix_cholesky(a, &info));          /* A = L L^T, in place */
  CHECK(tarn_matrix_cholesky_solve(a, x, &info)); /* x = A^-1 b */

  /* r = A x - b; then x - want, in place in want. */
  CHECK(tarn_matrix_copy(b, &r));
  CHECK(tarn_matrix_gemv(a0, TARN_NO_TRANS, x, 1.0, -1.0, &r));
  tarn_matrix *const diff[] = {want, x};
  const tarn_access diff_modes[] = {TARN_READ_WRITE, TARN_READ};
  double norm_a, norm_x, norm_r, norm_want, norm_err;
  CHECK(tarn_matrix_norm(want, &norm_want));
  CHECK(tarn_matrix_apply(diff, diff_modes, 2, subtract, NULL));
  CHECK(tarn_matrix_norm(a0, &norm_a));
  CHECK(tarn_matrix_norm(x, &norm_x));
  CHECK(tarn_matrix_norm(r, &norm_r));
  CHECK(tarn_matrix_norm(want, &norm_err));

  tarn_pool_stats st;
  CHECK(tarn_pool_stats_get(tarn_rt_pool(rt), &st));
  double residual = norm_r / (norm_a * norm_x * DBL_EPSILON * (double)n);
  double error = norm_err / norm_want;
  printf(
      "  pool: peak %.1f MiB resident (limit %.1f MiB); %.1f MiB written "
      "to disk in %llu spills, %.1f MiB read back in %llu restores (%s "
      "I/O)\n",
      (double)st.resident_peak / MIB, (double)limit / MIB,
      (double)st.bytes_written / MIB, (unsigned long long)st.spills,
      (double)st.bytes_read / MIB, (unsigned long long)st.restores, st.io_mode);
  printf("  ||A x - b|| / (||A|| ||x|| eps N) = %.3g (must be < 1)\n",
         residual);
  printf("  ||x - x_true|| / ||x_true|| = %.3g (must be < 1e-10)\n", error);
  int ok = st.resident_peak <= limit && residual < 1.0 && error < 1e-10;
  if ((double)limit < data) ok &= st.bytes_written > 0 && st.bytes_read > 0;

  tarn_matrix_destroy(a);
  tarn_matrix_destroy(a0);
  tarn_matrix_destroy(want);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(r);
  example_rt_destroy();
  printf("out_of_core: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
