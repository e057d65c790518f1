/* heat.c: the heat equation on a grid, as a stencil of one's own.
 *
 * u_t = laplace(u) on an N x N grid, explicit Euler with the five-point
 * Laplacian: u' = u + c (north + south + west + east - 4 u), c = 0.2
 * (stable below 0.25). The grid starts cold but for a hot square in
 * its top left quarter. Each step is one tarn_stencil_apply from one matrix
 * into the other (every tile with its halo of radius 1); the program submits
 * all the steps at once and only waits at the end, the runtime ordering each
 * tile's step after the steps of its neighbours. It runs twice:
 * - on a torus (Wrap on both edges): no heat leaves, so the total must stay
 *   what it was, to rounding;
 * - in a box with cold walls (Pad 0): heat leaves through the walls, so
 *   the total must fall.
 * Both runs must give the bits of the same steps computed here by a plain
 * loop over the whole grid.
 *
 *   build/examples/heat [N TILE STEPS]          (default 1024 256 100)
 *
 * Exits 0 when both runs match the loop and the totals behave, 1
 * otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tarn.h>

#include "example.h"

#define USAGE "heat [N TILE STEPS]"
#define C 0.2
#define HOT 100.0

/* One Euler step on a tile: `in` is the tile with its halo of radius 1. */
static int euler_step(const double *in, size_t ld_in, double *out,
                      size_t ld_out, size_t rows, size_t cols, size_t radius,
                      void *arg) {
  (void)radius;
  (void)arg;
  for (size_t q = 0; q < cols; q++)
    for (size_t p = 0; p < rows; p++) {
      const double *u = in + p + q * ld_in;
      double north = u[-1], south = u[1];
      double west = u[-(ptrdiff_t)ld_in], east = u[ld_in];
      out[p + q * ld_out] =
          u[0] + C * (north + south + west + east - 4.0 * u[0]);
    }
  return 0;
}

/* The hot square: the top left quarter, against two of the walls. */
static double initial(size_t i, size_t j, size_t n) {
  return i < (n + 1) / 2 && j < (n + 1) / 2 ? HOT : 0.0;
}

static int fill_initial(const tarn_block *b, void *arg) {
  size_t n = *(const size_t *)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++)
      b->data[0][p + q * b->ld] = initial(b->row + p, b->col + q, n);
  return 0;
}

/* The same steps by a plain loop; `wrap` or cold walls. */
static double *serial(size_t n, size_t steps, int wrap) {
  double *u = malloc(n * n * sizeof *u), *v = malloc(n * n * sizeof *v);
  if (u == NULL || v == NULL) {
    fprintf(stderr, "heat: out of memory\n");
    exit(1);
  }
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) u[i + j * n] = initial(i, j, n);
  for (size_t s = 0; s < steps; s++) {
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < n; i++) {
        /* neighbours, wrapped or 0 beyond the walls */
        size_t up = (i + n - 1) % n, down = (i + 1) % n;
        size_t left = (j + n - 1) % n, right = (j + 1) % n;
        double north = wrap || i > 0 ? u[up + j * n] : 0.0;
        double south = wrap || i + 1 < n ? u[down + j * n] : 0.0;
        double west = wrap || j > 0 ? u[i + left * n] : 0.0;
        double east = wrap || j + 1 < n ? u[i + right * n] : 0.0;
        double c = u[i + j * n];
        v[i + j * n] = c + C * (north + south + west + east - 4.0 * c);
      }
    double *t = u;
    u = v;
    v = t;
  }
  free(v);
  return u;
}

/* One run: `steps` steps under boundary `kind`; prints and checks it. */
static int run(tarn_rt *rt, size_t n, size_t tile, size_t steps,
               tarn_boundary_kind kind) {
  int wrap = kind == TARN_BOUNDARY_WRAP;
  tarn_stencil s;
  CHECK(tarn_stencil_init(&s, 1, kind, 0.0));
  tarn_matrix *u = NULL, *v = NULL;
  CHECK(tarn_matrix_zeros(rt, n, n, tile, tile, &u));
  CHECK(tarn_matrix_zeros(rt, n, n, tile, tile, &v));
  const tarn_access write[] = {TARN_WRITE};
  CHECK(tarn_matrix_apply(&u, write, 1, fill_initial, &n));
  double before;
  CHECK(tarn_matrix_sum(u, &before));
  for (size_t k = 0; k < steps; k++) { /* submitted, not waited for */
    CHECK(tarn_stencil_apply(&s, u, euler_step, NULL, &v));
    tarn_matrix *t = u;
    u = v;
    v = t;
  }
  double after;
  CHECK(tarn_matrix_sum(u, &after)); /* waits for the last step */
  double *got = malloc(n * n * sizeof *got);
  if (got == NULL) example_fail("malloc", TARN_ENOMEM);
  CHECK(tarn_matrix_to_buffer(u, got, n));
  double *want = serial(n, steps, wrap);
  int same = memcmp(got, want, n * n * sizeof *got) == 0;
  int totals = wrap ? fabs(after - before) <= 1e-9 * before : after < before;
  printf(
      "  %-19s total heat %.10g -> %.10g (%s), %s the plain loop's "
      "bits\n",
      wrap ? "torus (Wrap):" : "cold walls (Pad 0):", before, after,
      wrap ? "kept" : "lost through the walls", same ? "equal to" : "NOT");
  free(got);
  free(want);
  tarn_matrix_destroy(u);
  tarn_matrix_destroy(v);
  return same && totals;
}

int main(int argc, char **argv) {
  example_start(argc, argv, 3, USAGE);
  size_t n = example_size(argc, argv, 1, 1024, USAGE),
         tile = example_size(argc, argv, 2, 256, USAGE),
         steps = example_size(argc, argv, 3, 100, USAGE);
  if (tile > n) tile = n;
  CHECK(tarn_rt_create(NULL, &example_rt));
  printf("heat: %zu x %zu grid in %zu x %zu tiles, %zu steps, %u workers\n", n,
         n, tile, tile, steps, tarn_rt_workers(example_rt));
  int ok = run(example_rt, n, tile, steps, TARN_BOUNDARY_WRAP);
  ok &= run(example_rt, n, tile, steps, TARN_BOUNDARY_PAD);
  return example_finish("heat", ok);
}
