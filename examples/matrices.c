/* matrices.c: tiled matrices on the task runtime, as in the README.
 *
 * y = 2 sin(x) + 1 over a random matrix, then one fused pass over y's
 * tiles that writes z = y * y and w = y - 1 (tarn_matrix_apply), and the
 * sums of y, z and w. Every call submits tasks and returns at once; only
 * the sums wait. The program then recomputes the sums serially from a copy
 * of x and checks that they agree.
 *
 *   build/examples/matrices [ROWS COLS TILE]     (default 3000 2000 512)
 *
 * Exits 0 when every sum agrees with the serial loop's to 1e-9 of its
 * magnitude, 1 otherwise (or when a call fails: its status is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tarn.h>

#include "example.h"

#define USAGE "matrices [ROWS COLS TILE]"

/* The fused kernel: z = y * y and w = y - 1 on one block of the same tile
 * of y (read), z and w (written). Runs on worker threads. */
static int square_and_shift(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++) {
      size_t k = p + q * b->ld;
      double y = b->data[0][k];
      b->data[1][k] = y * y;
      b->data[2][k] = y - 1.0;
    }
  return 0;
}

/* Whether `got` agrees with `want` to 1e-9 of |want| (printed either way). */
static int agrees(const char *what, double got, double want) {
  int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
  printf("  sum of %s: tarn %.12g, serial loop %.12g%s\n", what, got, want,
         ok ? "" : "  <- differs");
  return ok;
}

int main(int argc, char **argv) {
  example_start(argc, argv, 3, USAGE);
  size_t m = example_size(argc, argv, 1, 3000, USAGE),
         n = example_size(argc, argv, 2, 2000, USAGE),
         tile = example_size(argc, argv, 3, 512, USAGE);
  /* A worker per core; TARN_MEM_LIMIT, TARN_WORKERS and the others apply. */
  CHECK(tarn_rt_create(NULL, &example_rt));
  tarn_rt *rt = example_rt;
  printf("matrices: %zu x %zu in %zu x %zu tiles, %u workers\n", m, n, tile,
         tile, tarn_rt_workers(rt));

  tarn_matrix *x = NULL, *y = NULL, *z = NULL, *w = NULL;
  CHECK(tarn_matrix_rand(rt, m, n, tile, tile, 42, &x));
  CHECK(tarn_matrix_sin(x, &y));            /* y = sin(x), a new matrix */
  CHECK(tarn_matrix_axpb(y, 2.0, 1.0, &y)); /* y = 2y + 1, in place */
  CHECK(tarn_matrix_zeros(rt, m, n, tile, tile, &z));
  CHECK(tarn_matrix_zeros(rt, m, n, tile, tile, &w));
  tarn_matrix *const fused[] = {y, z, w};
  const tarn_access modes[] = {TARN_READ, TARN_WRITE, TARN_WRITE};
  CHECK(tarn_matrix_apply(fused, modes, 3, square_and_shift, NULL));
  double sy, sz, sw;
  CHECK(tarn_matrix_sum(y, &sy)); /* waits for the tasks y needs */
  CHECK(tarn_matrix_sum(z, &sz));
  CHECK(tarn_matrix_sum(w, &sw));

  /* The same, serially, from x's elements. */
  double *buf = malloc(m * n * sizeof *buf);
  if (buf == NULL) {
    fprintf(stderr, "matrices: out of memory\n");
    return 1;
  }
  CHECK(tarn_matrix_to_buffer(x, buf, m));
  double ey = 0, ez = 0, ew = 0;
  for (size_t k = 0; k < m * n; k++) {
    double v = 2.0 * sin(buf[k]) + 1.0;
    ey += v;
    ez += v * v;
    ew += v - 1.0;
  }
  free(buf);
  int ok = agrees("y = 2 sin(x) + 1", sy, ey);
  ok &= agrees("z = y * y", sz, ez);
  ok &= agrees("w = y - 1", sw, ew);

  tarn_matrix *const all[] = {x, y, z, w};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
  return example_finish("matrices", ok);
}
