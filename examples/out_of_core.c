/* out_of_core.c: a linear system larger than the memory it may use.
 *
 * Solves the normal equations of ridge regression, (R^T R + lambda I) x =
 * b, for a random N x N matrix R and lambda = N, by Cholesky, on a runtime
 * whose pool may hold only a third of the data (R, A = R^T R + lambda I,
 * and a few vectors). Tiles that no running task needs are written to the
 * spill file and read back when a task pins them again; the program never
 * sees the difference. b is made from x_true = (1, ..., 1); the check
 * computes r = R^T (R x) + lambda x - b from R itself (A's tiles hold the
 * factor by then) and asks for the scaled residual
 * ||r|| / (||A|| ||x|| eps max(N, 16)) and the error ||x - x_true|| /
 * ||x_true||, which must also lie within N eps / rcond, rcond being A's
 * reciprocal condition number as tarn_matrix_cholesky_rcond estimates it from
 * L. It prints what the pool did: its peak against the limit, what it wrote and
 * read back.
 *
 * R comes from a file, as a job's data would: made, saved as r.npy and
 * opened (tarn_matrix_open_file: each tile is read from the file when a
 * task reads it; R is only read, so its tiles are dropped, never spilled,
 * when room is needed, and read from the file again), and the answer is
 * saved as x.npy, both NumPy files (numpy.load reads
 * them), in DIR when given (and kept there), else in a temporary
 * directory removed at the end. The saved x is loaded again and must be
 * the same, bit for bit.
 *
 *   build/examples/out_of_core [N TILE LIMIT_MIB [DIR]]  (default 3072 256,
 *                                                      a third of the data,
 *                                                      at least 1 MiB)
 *
 * Exits 0 when the pool stayed within its limit, really spilled (wrote
 * tiles to its spill file, when the data is larger than the limit: with
 * data just above it, nothing need be read back), and the answer is
 * right; 1 otherwise. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tarn.h>

#include "example.h"

#define USAGE "out_of_core [N TILE LIMIT_MIB [DIR]]"

#define MIB 1048576.0

/* Adds lambda (*arg) to the diagonal elements of a block of A. */
static int add_to_diagonal(const tarn_block *b, void *arg) {
  double lambda = *(const double *)arg;
  for (size_t q = 0; q < b->cols; q++) {
    size_t j = b->col + q; /* the column; its diagonal row is j */
    if (j >= b->row && j < b->row + b->rows)
      b->data[0][(j - b->row) + q * b->ld] += lambda;
  }
  return 0;
}

/* Seconds on a monotonic clock. */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* dir/name into path (PATH_BYTES: room for any dir[4096] and a short
 * name). */
#define PATH_BYTES 4200
static const char *file_in(char *path, const char *dir, const char *name) {
  snprintf(path, PATH_BYTES, "%s/%s", dir, name);
  return path;
}

/* The files' directory and the two files in it. */
static char dir[4096], r_path[PATH_BYTES], x_path[PATH_BYTES];

/* Removes the temporary directory and its files (those not made yet are
 * not there to remove): at the end, and from example_fail when a call
 * fails (the directory was left behind until 2026-12-05, 72 MiB of r.npy
 * at the default N). */
static void remove_temporary(void) {
  unlink(r_path);
  unlink(x_path);
  rmdir(dir);
}

/* What the pool charges for a tile of `side` x `side` doubles: whole
 * pages (docs/pool.md). */
static double tile_charge(size_t side) {
  double page = (double)sysconf(_SC_PAGESIZE);
  return ceil((double)side * (double)side * 8.0 / page) * page;
}

/* r = v + lambda x - b on the same block of four columns: data[0] = r
 * (written), data[1] = v = R^T R x, data[2] = x, data[3] = b (read). */
static int ridge_residual(const tarn_block *b, void *arg) {
  double lambda = *(const double *)arg;
  double *r = b->data[0];
  const double *v = b->data[1], *x = b->data[2], *rhs = b->data[3];
  for (size_t p = 0; p < b->rows; p++) r[p] = v[p] + lambda * x[p] - rhs[p];
  return 0;
}

int main(int argc, char **argv) {
  example_start(argc, argv, 4, USAGE);
  size_t n = example_size(argc, argv, 1, 3072, USAGE),
         tile = example_size(argc, argv, 2, 256, USAGE);
  /* R and A, and six vectors: x_true, b, x, u = R x, v = R^T u, r. */
  double data = (2.0 * (double)n * (double)n + 6.0 * (double)n) * 8.0;
  size_t limit =
      example_size(argc, argv, 3, (size_t)fmax(1.0, data / 3.0 / MIB), USAGE) *
      (size_t)MIB; /* at most 2^32 MiB: no wrap */
  /* in whole pages, as the pool charges them (until 2026-12-05 in bytes:
   * 418 in tiles of 209 under 1 MiB passed, and the run failed) */
  double task_bytes = 3.0 * tile_charge(tile < n ? tile : n);
  if ((double)limit < task_bytes) {
    fprintf(stderr,
            "out_of_core: the limit must hold the three tiles a task pins "
            "(%.2f MiB)\n",
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

  /* The files' directory: DIR, or a temporary one. */
  int temporary = argc <= 4;
  if (temporary) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tarn-example-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
      perror("out_of_core: cannot make a temporary directory");
      example_rt_destroy();
      return 1;
    }
  } else if (argv[4][0] == '\0') { /* "" made "/r.npy": the root's */
    fprintf(stderr, "usage: %s (DIR not empty)\n", USAGE);
    example_rt_destroy();
    return 2;
  } else {
    snprintf(dir, sizeof dir, "%s", argv[4]);
  }
  file_in(r_path, dir, "r.npy");
  file_in(x_path, dir, "x.npy");
  if (temporary) example_cleanup = remove_temporary;

  /* R: made, saved, and opened as a job's input would be. */
  double lambda = (double)n;
  tarn_matrix *r = NULL, *a = NULL, *want = NULL, *b = NULL, *x = NULL,
              *u = NULL, *v = NULL, *res = NULL, *err = NULL, *x_back = NULL,
              *diff = NULL;
  CHECK(tarn_matrix_rand(rt, n, n, tile, tile, 7, &r));
  double t0 = now();
  CHECK(tarn_matrix_to_file(r, r_path));
  double t1 = now();
  tarn_matrix_destroy(r);
  r = NULL;
  CHECK(tarn_matrix_open_file(rt, r_path, tile, tile, &r));
  printf("  R: made and saved to %s in %.0f ms, opened (read as used)\n",
         r_path, (t1 - t0) * 1e3);
  CHECK(tarn_matrix_syrk_ata(r, &a)); /* A = R^T R, tiles of R's columns */
  tarn_matrix *const am[] = {a};
  const tarn_access rw[] = {TARN_READ_WRITE};
  CHECK(tarn_matrix_apply(am, rw, 1, add_to_diagonal, &lambda));
  CHECK(tarn_matrix_fill(rt, n, 1, tile, 1, 1.0, &want));
  CHECK(tarn_matrix_gemv(a, TARN_NO_TRANS, want, 1.0, 0.0, &b)); /* b = A 1 */
  CHECK(tarn_matrix_copy(b, &x));
  double norm_a, norm1_a, rcond; /* A's norms before A becomes its factor */
  CHECK(tarn_matrix_norm(a, TARN_NORM_FRO, &norm_a));
  CHECK(tarn_matrix_norm(a, TARN_NORM_ONE, &norm1_a));

  int info = 0;
  CHECK(tarn_matrix_cholesky(a, &info)); /* A = L L^T, in place */
  /* How far x can be trusted: its relative error is about eps / rcond. */
  CHECK(tarn_matrix_cholesky_rcond(a, norm1_a, &rcond));
  CHECK(tarn_matrix_cholesky_solve(a, x, &info)); /* x = A^-1 b */

  /* r = R^T (R x) + lambda x - b, from R; and x - x_true. */
  CHECK(tarn_matrix_gemv(r, TARN_NO_TRANS, x, 1.0, 0.0, &u));
  CHECK(tarn_matrix_gemv(r, TARN_TRANS, u, 1.0, 0.0, &v));
  CHECK(tarn_matrix_zeros(rt, n, 1, tile, 1, &res));
  tarn_matrix *const parts[] = {res, v, x, b};
  const tarn_access modes[] = {TARN_WRITE, TARN_READ, TARN_READ, TARN_READ};
  CHECK(tarn_matrix_apply(parts, modes, 4, ridge_residual, &lambda));
  CHECK(tarn_matrix_axpb(x, 1.0, -1.0, &err)); /* x - 1 */
  double norm_x, norm_r, norm_want, norm_err;
  CHECK(tarn_matrix_norm(want, TARN_NORM_FRO, &norm_want));
  CHECK(tarn_matrix_norm(x, TARN_NORM_FRO, &norm_x));
  CHECK(tarn_matrix_norm(res, TARN_NORM_FRO, &norm_r));
  CHECK(tarn_matrix_norm(err, TARN_NORM_FRO, &norm_err));

  /* x to a file and back: the same bits. */
  double x_diff;
  CHECK(tarn_matrix_to_file(x, x_path));
  CHECK(tarn_matrix_from_file(rt, x_path, tile, 1, &x_back));
  CHECK(tarn_matrix_axpb(x_back, -1.0, 0.0, &diff));
  CHECK(tarn_matrix_add(diff, x, &diff)); /* x - x_back */
  CHECK(tarn_matrix_norm(diff, TARN_NORM_FRO, &x_diff));
  printf("  x: saved to %s%s\n", x_path,
         temporary ? " (removed at the end)" : "");

  tarn_pool_stats st;
  CHECK(tarn_pool_stats_get(tarn_rt_pool(rt), &st));
  /* N at least 16 in the scale: for N = 1 a right answer's residual is an
   * eps or two of ||A|| ||x|| (1.46 was seen), not a fraction of one */
  double residual =
      norm_r / (norm_a * norm_x * DBL_EPSILON * fmax((double)n, 16.0));
  double error = norm_err / norm_want;
  printf(
      "  pool: peak %.1f MiB resident (limit %.1f MiB); %.1f MiB written "
      "to disk in %llu spills, %.1f MiB read back in %llu restores (%s "
      "I/O); R's tiles: %.1f MiB read from r.npy in %llu reads\n",
      (double)st.resident_peak / MIB, (double)limit / MIB,
      (double)st.bytes_written / MIB, (unsigned long long)st.spills,
      (double)st.bytes_read / MIB, (unsigned long long)st.restores, st.io_mode,
      (double)st.source_bytes_read / MIB, (unsigned long long)st.source_reads);
  printf("  ||A x - b|| / (||A|| ||x|| eps max(N, 16)) = %.3g (must be < 1)\n",
         residual);
  printf(
      "  ||x - x_true|| / ||x_true|| = %.3g (must be < 1e-10, and below N "
      "eps / rcond = %.3g, rcond(A) estimated from L: %.3g)\n",
      error, (double)n * DBL_EPSILON / rcond, rcond);
  printf("  x read back from its file: ||x - x_file|| = %g (must be 0)\n",
         x_diff);
  int ok = st.resident_peak <= limit && residual < 1.0 && error < 1e-10 &&
           rcond > 0 && error <= (double)n * DBL_EPSILON / rcond &&
           x_diff == 0.0;
  if ((double)limit < data) ok &= st.bytes_written > 0;

  tarn_matrix *const all[] = {r, a, want, b, x, u, v, res, err, x_back, diff};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
  if (temporary) remove_temporary();
  return example_finish("out_of_core", ok);
}
