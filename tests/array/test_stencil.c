/* test_stencil.c: every stencil operation against a naive serial loop on
 * plain column-major buffers: many shapes (sizes not divisible by the tile,
 * 1 x 1 tiles, one tile, tall, wide), every boundary condition with radius
 * 1 and 2, different conditions per dimension, a user kernel, the
 * elementwise built-ins and their ordering, a memory limit that forces
 * spilling, and every bad input refused. The built-in sum reads the source
 * tiles in place and treats the first and last rows apart, so tiles of 1,
 * 2 and 3 rows or columns (no inner rows), tall and wide single tiles that
 * idle workers share, 1, 2 and 3 workers, and signed zeros (the sum starts
 * from +0) get cases of their own. Results are compared bit for bit (the
 * reference adds in the same order as the library). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"
#include "tarn.h"

static const size_t shapes[][4] = {
    {1, 1, 1, 1},   {5, 7, 2, 3},   {10, 10, 10, 10}, {17, 3, 4, 2},
    {3, 17, 2, 4},  {9, 9, 20, 20}, {64, 48, 16, 16}, {33, 65, 8, 8},
    {12, 12, 1, 1}, {40, 2, 3, 2},  {2, 40, 2, 3},    {7, 11, 3, 5},
    {100, 1, 7, 1}, {1, 100, 1, 9}, {13, 13, 2, 2},
};
enum { nshapes = sizeof shapes / sizeof shapes[0] };

static const tarn_boundary_kind kinds[] = {
    TARN_BOUNDARY_WRAP, TARN_BOUNDARY_PAD, TARN_BOUNDARY_CLAMP,
    TARN_BOUNDARY_REFLECT, TARN_BOUNDARY_MIRROR};
enum { nkinds = sizeof kinds / sizeof kinds[0] };

/* ---- the reference ------------------------------------------------------ */

/* The index p of x[0..n-1] reads, reflecting one step at a time (a
 * different route from the library's), or -1 for the pad value. */
static ptrdiff_t ref_index(ptrdiff_t p, ptrdiff_t n, tarn_boundary_kind k) {
  for (;;) {
    if (p >= 0 && p < n) return p;
    switch (k) {
      case TARN_BOUNDARY_PAD:
        return -1;
      case TARN_BOUNDARY_CLAMP:
        return p < 0 ? 0 : n - 1;
      case TARN_BOUNDARY_WRAP:
        p = p < 0 ? p + n : p - n;
        break;
      case TARN_BOUNDARY_REFLECT: /* x[1-p], x[2n+1-p] in 1-based terms */
        p = p < 0 ? -1 - p : 2 * n - 1 - p;
        break;
      case TARN_BOUNDARY_MIRROR: /* x[2-p], x[2n-p] in 1-based terms */
        if (n == 1) return 0;
        p = p < 0 ? -p : 2 * n - 2 - p;
        break;
    }
  }
}

static double ref_at(const double *x, size_t m, size_t n, const tarn_stencil *s,
                     ptrdiff_t i, ptrdiff_t j) {
  ptrdiff_t p = ref_index(i, (ptrdiff_t)m, s->rows.kind);
  if (p < 0) return s->rows.pad;
  ptrdiff_t q = ref_index(j, (ptrdiff_t)n, s->cols.kind);
  if (q < 0) return s->cols.pad;
  return x[p + q * (ptrdiff_t)m];
}

static double *ref_sum(const double *x, size_t m, size_t n,
                       const tarn_stencil *s) {
  double *y = malloc(m * n * sizeof *y);
  assert_non_null(y);
  ptrdiff_t r = (ptrdiff_t)s->radius;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      double sum = 0.0;
      for (ptrdiff_t dj = -r; dj <= r; dj++)
        for (ptrdiff_t di = -r; di <= r; di++)
          sum += ref_at(x, m, n, s, (ptrdiff_t)i + di, (ptrdiff_t)j + dj);
      y[i + j * m] = sum;
    }
  return y;
}

/* The 5-point Laplacian, as a user kernel and as a reference. */
static int laplace(const double *in, size_t ld_in, double *out, size_t ld_out,
                   size_t rows, size_t cols, size_t radius, void *arg) {
  (void)radius;
  double h = *(const double *)arg;
  for (size_t q = 0; q < cols; q++)
    for (size_t p = 0; p < rows; p++) {
      const double *c = in + p + q * ld_in;
      out[p + q * ld_out] =
          (c[-1] + c[1] + c[-(ptrdiff_t)ld_in] + c[ld_in] - 4 * c[0]) * h;
    }
  return 0;
}

static double *ref_laplace(const double *x, size_t m, size_t n,
                           const tarn_stencil *s, double h) {
  double *y = malloc(m * n * sizeof *y);
  assert_non_null(y);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      ptrdiff_t pi = (ptrdiff_t)i, pj = (ptrdiff_t)j;
      y[i + j * m] =
          (ref_at(x, m, n, s, pi - 1, pj) + ref_at(x, m, n, s, pi + 1, pj) +
           ref_at(x, m, n, s, pi, pj - 1) + ref_at(x, m, n, s, pi, pj + 1) -
           4 * ref_at(x, m, n, s, pi, pj)) *
          h;
    }
  return y;
}

/* ---- helpers ------------------------------------------------------------ */

static tarn_stencil make_stencil(size_t r, tarn_boundary_kind rk, double rpad,
                                 tarn_boundary_kind ck, double cpad) {
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(&s, r, rk, rpad), 0);
  s.cols = (tarn_boundary){ck, cpad};
  return s;
}

/* Checks tarn_stencil_sum of a random matrix of shape sh under s, into a
 * new matrix and into a given one; or that it is refused when the radius
 * exceeds the (clamped) tile. */
static void check_sum(tarn_rt *rt, const size_t *sh, const tarn_stencil *s) {
  size_t m = sh[0], n = sh[1], mb = sh[2], nb = sh[3];
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, nb, 11, &a), 0);
  size_t tm = tarn_matrix_tile_rows(a), tn = tarn_matrix_tile_cols(a);
  if (s->radius > tm || s->radius > tn) {
    assert_int_equal(tarn_stencil_sum(s, a, &b), TARN_EINVAL);
    assert_null(b);
    tarn_matrix_destroy(a);
    return;
  }
  double *x = test_buffer_of(a);
  double *want = ref_sum(x, m, n, s);
  assert_int_equal(tarn_stencil_sum(s, a, &b), 0);
  assert_int_equal(tarn_matrix_fill(rt, m, n, mb, nb, -1, &c), 0);
  assert_int_equal(tarn_stencil_sum(s, a, &c), 0);
  double *y = test_buffer_of(b), *z = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) {
    if (memcmp(&y[k], &want[k], sizeof *y) != 0)
      fail_msg(
          "%zux%zu/%zux%zu r=%zu kinds %d,%d: element %zu: %.17g != "
          "%.17g",
          m, n, mb, nb, s->radius, (int)s->rows.kind, (int)s->cols.kind, k,
          y[k], want[k]);
  }
  assert_memory_equal(y, z, m * n * sizeof *y);
  free(x);
  free(y);
  free(z);
  free(want);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
}

/* ---- tests -------------------------------------------------------------- */

static void sum_every_shape_every_boundary(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t sh = 0; sh < nshapes; sh++)
    for (size_t k = 0; k < nkinds; k++)
      for (size_t r = 1; r <= 2; r++) {
        tarn_stencil s = make_stencil(r, kinds[k], 0.5, kinds[k], 0.5);
        check_sum(rt, shapes[sh], &s);
      }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void sum_with_a_condition_per_dimension(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t sh = 0; sh < nshapes; sh++)
    for (size_t k1 = 0; k1 < nkinds; k1++)
      for (size_t k2 = 0; k2 < nkinds; k2++) {
        if (k1 == k2) continue;
        tarn_stencil s =
            make_stencil(1 + (k1 + k2) % 2, kinds[k1], 2.25, kinds[k2], -3.5);
        check_sum(rt, shapes[sh], &s);
      }
  /* Both padded with different values: the rows' pad wins at corners. */
  tarn_stencil s =
      make_stencil(2, TARN_BOUNDARY_PAD, 1.0, TARN_BOUNDARY_PAD, 100.0);
  check_sum(rt, shapes[1], &s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void larger_radii(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  /* Radius up to the tile size, and as large as the whole (one-tile)
   * dimension: reflections fold back more than once. */
  static const size_t big[][4] = {
      {20, 30, 5, 6}, {21, 22, 7, 7}, {4, 5, 4, 5}, {2, 3, 5, 5}, {3, 3, 3, 3}};
  for (size_t sh = 0; sh < sizeof big / sizeof big[0]; sh++)
    for (size_t k = 0; k < nkinds; k++)
      for (size_t r = 3; r <= 7; r++) {
        tarn_stencil s =
            make_stencil(r, kinds[k], 0.75, kinds[nkinds - 1 - k], 1.5);
        check_sum(rt, big[sh], &s);
      }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void integer_inputs_sum_exactly(void **state) {
  (void)state;
  /* Small integers: every order of addition gives the same sum, so the
   * comparison does not depend on matching the library's order. */
  tarn_rt *rt = test_rt(2, 0);
  size_t m = 23, n = 19;
  double *x = malloc(m * n * sizeof *x);
  assert_non_null(x);
  for (size_t k = 0; k < m * n; k++) x[k] = (double)((k * 7919) % 23) - 11;
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, 4, 5, x, m, &a), 0);
  for (size_t k = 0; k < nkinds; k++) {
    tarn_stencil s = make_stencil(2, kinds[k], 3, kinds[k], 3);
    double *want = ref_sum(x, m, n, &s);
    assert_int_equal(tarn_stencil_sum(&s, a, &b), 0);
    double *y = test_buffer_of(b);
    assert_memory_equal(y, want, m * n * sizeof *y);
    free(y);
    free(want);
  }
  free(x);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The laplace kernel with step h on a random matrix of shape d
 * ({m, n, mb, nb}) under s, against the serial loop, bit for bit. */
static void check_laplace(tarn_rt *rt, const size_t *d, const tarn_stencil *s,
                          double h) {
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, d[0], d[1], d[2], d[3], 5, &a), 0);
  assert_int_equal(tarn_stencil_apply(s, a, laplace, &h, &b), 0);
  double *x = test_buffer_of(a), *y = test_buffer_of(b);
  double *want = ref_laplace(x, d[0], d[1], s, h);
  assert_memory_equal(y, want, d[0] * d[1] * sizeof *y);
  free(x);
  free(y);
  free(want);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
}

static void user_kernel_laplacian(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t sh = 0; sh < nshapes; sh++)
    for (size_t k = 0; k < nkinds; k++) {
      tarn_stencil s =
          make_stencil(1, kinds[k], 0.5, kinds[(k + 2) % nkinds], -0.5);
      check_laplace(rt, shapes[sh], &s, 0.25);
    }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A tile with its halo larger than the workers' scratch (16 KiB here,
 * tiles of 100 x 130) is assembled on the heap: the same results. So are
 * the tables of where each halo row reads, larger than the scratch for a
 * tall tile (1500 x 3: 24 KiB; until 2026-12-05 its tasks failed with
 * TARN_ENOSPC, and a tile of 1.5 million rows failed so with the default
 * scratch). */
static void halos_larger_than_the_scratch_come_from_the_heap(void **state) {
  (void)state;
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.scratch_bytes = 16 << 10;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  static const size_t shape[4] = {300, 260, 100, 130},
                      tall[4] = {1500, 3, 1500, 3};
  for (size_t k = 0; k < nkinds; k++) {
    tarn_stencil s = make_stencil(1, kinds[k], 0.5, kinds[k], 0.5);
    check_laplace(rt, shape, &s, 0.5);
    tarn_stencil big = make_stencil(4, kinds[k], 0.5, kinds[k], 0.5);
    check_sum(rt, shape, &big);
    check_laplace(rt, tall, &s, 0.5);
    check_sum(rt, tall, &s);
    tarn_stencil two = make_stencil(2, kinds[k], 0.5, kinds[k], 0.5);
    check_sum(rt, tall, &two);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int failing(const double *in, size_t ld_in, double *out, size_t ld_out,
                   size_t rows, size_t cols, size_t radius, void *arg) {
  (void)in, (void)ld_in, (void)out, (void)ld_out, (void)rows, (void)cols;
  (void)radius, (void)arg;
  return TARN_EIO;
}

static void a_failing_kernel_fails_its_tasks(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 8, 8, 4, 4, 1, &a), 0);
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_WRAP, 0), 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_stencil_apply(&s, a, failing, NULL, &b), 0);
  assert_int_equal(tarn_region_wait(region, NULL), TARN_EIO);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_rt_destroy(rt);
}

static void elementwise_builtins_and_ordering(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t sh = 0; sh < nshapes; sh++) {
    const size_t *d = shapes[sh];
    size_t m = d[0], n = d[1], mn = m * n;
    tarn_matrix *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, d[2], d[3], 3, &a), 0);
    assert_int_equal(tarn_matrix_rand(rt, m, n, d[2], d[3], 4, &b), 0);
    double *x = test_buffer_of(a), *y = test_buffer_of(b);
    /* update: B = B + A */
    assert_int_equal(tarn_stencil_update_add(b, a), 0);
    double *z = test_buffer_of(b);
    for (size_t k = 0; k < mn; k++) assert_true(z[k] == y[k] + x[k]);
    free(z);
    /* assign: B = 1.5 */
    assert_int_equal(tarn_stencil_assign(b, 1.5), 0);
    z = test_buffer_of(b);
    for (size_t k = 0; k < mn; k++) assert_true(z[k] == 1.5);
    free(z);
    /* multi-expr: A = 1, then B = 2 A, submitted without waiting. */
    assert_int_equal(tarn_stencil_assign(a, 1), 0);
    assert_int_equal(tarn_matrix_axpb(a, 2, 0, &b), 0);
    z = test_buffer_of(b);
    for (size_t k = 0; k < mn; k++) assert_true(z[k] == 2);
    free(z);
    /* alloc: a new matrix from the Wrap neighbourhood sum, then the input
     * overwritten right away: the sum still sees the old values. */
    tarn_stencil s;
    assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_WRAP, 0), 0);
    tarn_matrix_destroy(a);
    a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, d[2], d[3], 9, &a), 0);
    free(x);
    x = test_buffer_of(a);
    double *want = ref_sum(x, m, n, &s);
    assert_int_equal(tarn_stencil_sum(&s, a, &c), 0);
    assert_int_equal(tarn_stencil_assign(a, 7), 0);
    /* and a chained stencil on the result, also unwaited */
    tarn_matrix *e = NULL;
    assert_int_equal(tarn_stencil_sum(&s, c, &e), 0);
    z = test_buffer_of(c);
    assert_memory_equal(z, want, mn * sizeof *z);
    double *want2 = ref_sum(z, m, n, &s), *w = test_buffer_of(e);
    assert_memory_equal(w, want2, mn * sizeof *w);
    free(z);
    z = test_buffer_of(a);
    for (size_t k = 0; k < mn; k++) assert_true(z[k] == 7);
    free(x);
    free(y);
    free(z);
    free(w);
    free(want);
    free(want2);
    tarn_matrix_destroy(a);
    tarn_matrix_destroy(b);
    tarn_matrix_destroy(c);
    tarn_matrix_destroy(e);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A stencil's task pins its output tile and every tile its halo reads:
 * 96 x 96 in tiles of 32 with a radius of 1 and periodic boundaries, ten
 * tiles. Under exactly ten the sum is right, spilling; a page less it
 * returns TARN_ENOMEM before any task, a given output unchanged (it went
 * ahead, and each task, never fitting, failed, leaving the output
 * cancelled). */
static void a_limit_below_one_task_is_refused(void **state) {
  (void)state;
  size_t page = (size_t)sysconf(_SC_PAGESIZE),
         task = 10 * test_tile_charge(32, 32);
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_WRAP, 0), 0);
  tarn_rt *rt = test_rt(2, task);
  check_sum(rt, (const size_t[4]){96, 96, 32, 32}, &s);
  test_rt_destroy_spilled(rt, task);
  rt = test_rt(2, task - page);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 96, 96, 32, 32, 12, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 96, 96, 32, 32, 13, &b), 0);
  double *a0 = test_buffer_of(a), *b0 = test_buffer_of(b);
  assert_int_equal(tarn_stencil_sum(&s, a, &b), TARN_ENOMEM);
  test_matrix_holds(a, a0);
  test_matrix_holds(b, b0);
  free(a0);
  free(b0);
  TEST_DESTROY_MATRICES(a, b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  /* tarn_stencil_assign checks its first tile too: under a page less than
   * it, TARN_ENOMEM, and the edge tile (20 x 20, which fits) still holds
   * its zeros (the call returned 0, and the tiles whose tasks could not
   * fit read as TARN_ECANCELED) */
  rt = test_rt(2, test_tile_charge(40, 40) - page);
  tarn_matrix *z = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 100, 100, 40, 40, &z), 0);
  assert_int_equal(tarn_stencil_assign(z, 5), TARN_ENOMEM);
  double v = -1;
  assert_int_equal(tarn_matrix_get(z, 99, 99, &v), 0);
  assert_true(v == 0.0);
  tarn_matrix_destroy(z);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void spilled_tiles_give_the_same_results(void **state) {
  (void)state;
  /* 16 x 16 tiles take a 4 KiB page each; a 64 x 48 matrix is 48 KiB, so
   * an input, two outputs and a chained result do not fit in 64 KiB. */
  tarn_rt *rt = test_rt(2, 64 << 10);
  const size_t sh[4] = {64, 48, 16, 16};
  for (size_t k = 0; k < nkinds; k++) {
    tarn_stencil s = make_stencil(2, kinds[k], 0.5, kinds[(k + 1) % nkinds], 1);
    check_sum(rt, sh, &s);
  }
  double h = 1;
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_REFLECT, 0), 0);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 64, 48, 16, 16, 1, &a), 0);
  assert_int_equal(tarn_stencil_apply(&s, a, laplace, &h, &b), 0);
  double *x = test_buffer_of(a), *y = test_buffer_of(b);
  double *want = ref_laplace(x, 64, 48, &s, h);
  assert_memory_equal(y, want, 64 * 48 * sizeof *y);
  free(x);
  free(y);
  free(want);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_true(ps.resident_peak <= 64 << 10);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Radius 1 (and 2 where the tile allows) under every condition, alike and
 * different per dimension, on tiles of 1 to 3 rows and columns: a single
 * tile, and several with a smaller last one. */
static void sum_small_tiles_every_boundary(void **state) {
  (void)state;
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t tr = 1; tr <= 3; tr++)
      for (size_t tc = 1; tc <= 3; tc++) {
        const size_t sh[2][4] = {{tr, tc, tr, tc},
                                 {2 * tr + 1, 3 * tc + 2, tr, tc}};
        for (size_t k = 0; k < nkinds; k++)
          for (size_t r = 1; r <= 2; r++)
            for (size_t v = 0; v < 2; v++) {
              tarn_stencil same = make_stencil(r, kinds[k], 0.5, kinds[k], 0.5);
              tarn_stencil mixed = make_stencil(r, kinds[k], 2.25,
                                                kinds[(k + 1) % nkinds], -3.5);
              check_sum(rt, sh[v], &same);
              check_sum(rt, sh[v], &mixed);
            }
      }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Tall and wide single tiles, large enough that idle workers share their
 * columns, under every condition, with 1, 2 and 3 workers. */
static void sum_tall_and_wide_single_tiles(void **state) {
  (void)state;
  static const size_t big[][4] = {
      {1000, 40, 1000, 40}, {24, 2100, 24, 2100}, {2, 9000, 2, 9000},
      {9000, 2, 9000, 2},   {1, 33000, 1, 33000}, {33000, 1, 33000, 1},
      {3, 12000, 3, 12000}, {300, 301, 300, 301}, {300, 301, 150, 151}};
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t sh = 0; sh < sizeof big / sizeof big[0]; sh++)
      for (size_t k = 0; k < nkinds; k++)
        for (size_t r = 1; r <= 2; r++) {
          tarn_stencil s =
              make_stencil(r, kinds[k], 0.25, kinds[(k + 3) % nkinds], 4.0);
          check_sum(rt, big[sh], &s);
        }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* The sum starts from +0, so a neighbourhood of negative zeros (inside,
 * outside, or a pad of -0) sums to +0, bit for bit as the reference: with
 * some +0 among them, and with none (then only the start makes it +0),
 * also in tiles tall enough for the vector path's rows. */
static void signed_zeros_sum_from_plus_zero(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t sh[][4] = {
      {8, 8, 8, 8}, {9, 7, 4, 3}, {5, 6, 2, 2}, {37, 5, 37, 5}, {40, 6, 20, 3}};
  for (size_t i = 0; i < 2 * sizeof sh / sizeof sh[0]; i++) {
    size_t m = sh[i / 2][0], n = sh[i / 2][1], mb = sh[i / 2][2],
           nb = sh[i / 2][3];
    double *x = malloc(m * n * sizeof *x);
    assert_non_null(x);
    for (size_t k = 0; k < m * n; k++)
      x[k] = i % 2 == 0 && k % 5 == 3 ? 0.0 : -0.0;
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, m, n, mb, nb, x, m, &a), 0);
    for (size_t k = 0; k < nkinds; k++)
      for (size_t r = 1; r <= 2; r++) {
        tarn_stencil s =
            make_stencil(r, kinds[k], -0.0, kinds[(k + 1) % nkinds], -0.0);
        tarn_matrix *b = NULL;
        assert_int_equal(tarn_stencil_sum(&s, a, &b), 0);
        double *y = test_buffer_of(b), *want = ref_sum(x, m, n, &s);
        assert_memory_equal(y, want, m * n * sizeof *y);
        for (size_t e = 0; e < m * n; e++) assert_false(signbit(y[e]));
        free(y);
        free(want);
        tarn_matrix_destroy(b);
      }
    free(x);
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* update, assign and multi-expr on single tiles that idle workers share
 * (and on small ones they do not), with 1, 2 and 3 workers. */
static void elementwise_shared_by_workers(void **state) {
  (void)state;
  static const size_t sh[][4] = {{300, 300, 300, 300},
                                 {1000, 40, 1000, 40},
                                 {7, 9000, 7, 9000},
                                 {100, 100, 100, 100},
                                 {600, 500, 300, 250}};
  for (unsigned workers = 1; workers <= 3; workers++) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
      const size_t *d = sh[i];
      size_t mn = d[0] * d[1];
      tarn_matrix *a = NULL, *b = NULL;
      assert_int_equal(tarn_matrix_rand(rt, d[0], d[1], d[2], d[3], 3, &a), 0);
      assert_int_equal(tarn_matrix_rand(rt, d[0], d[1], d[2], d[3], 4, &b), 0);
      double *x = test_buffer_of(a), *y = test_buffer_of(b);
      assert_int_equal(tarn_stencil_update_add(b, a), 0);
      double *z = test_buffer_of(b);
      for (size_t k = 0; k < mn; k++) assert_true(z[k] == y[k] + x[k]);
      free(z);
      assert_int_equal(tarn_stencil_assign(a, -2.5), 0);
      assert_int_equal(tarn_matrix_axpb(a, 2, 0, &b), 0);
      z = test_buffer_of(b);
      for (size_t k = 0; k < mn; k++) assert_true(z[k] == -5);
      free(z);
      z = test_buffer_of(a);
      for (size_t k = 0; k < mn; k++) assert_true(z[k] == -2.5);
      free(x);
      free(y);
      free(z);
      tarn_matrix_destroy(a);
      tarn_matrix_destroy(b);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void bad_input_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *b = NULL, *other = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 10, 12, 3, 4, 1, &a), 0);
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(NULL, 1, TARN_BOUNDARY_WRAP, 0),
                   TARN_EINVAL);
  assert_int_equal(tarn_stencil_init(&s, 0, TARN_BOUNDARY_WRAP, 0),
                   TARN_EINVAL);
  assert_int_equal(tarn_stencil_init(&s, 1, (tarn_boundary_kind)42, 0),
                   TARN_EINVAL);
  assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_CLAMP, 0), 0);
  /* radius 0, larger than the tile rows (3), an unknown kind */
  tarn_stencil z = s;
  z.radius = 0;
  assert_int_equal(tarn_stencil_sum(&z, a, &b), TARN_EINVAL);
  z.radius = 4;
  assert_int_equal(tarn_stencil_sum(&z, a, &b), TARN_EINVAL);
  z.radius = 3;
  assert_int_equal(tarn_stencil_sum(&z, a, &b), 0);
  tarn_matrix_destroy(b);
  b = NULL;
  z = s;
  z.cols.kind = (tarn_boundary_kind)-1;
  assert_int_equal(tarn_stencil_sum(&z, a, &b), TARN_EINVAL);
  assert_null(b);
  /* NULL arguments, out == a */
  assert_int_equal(tarn_stencil_sum(NULL, a, &b), TARN_EINVAL);
  assert_int_equal(tarn_stencil_sum(&s, NULL, &b), TARN_EINVAL);
  assert_int_equal(tarn_stencil_sum(&s, a, NULL), TARN_EINVAL);
  assert_int_equal(tarn_stencil_apply(&s, a, NULL, NULL, &b), TARN_EINVAL);
  assert_null(b);
  tarn_matrix *same = a;
  assert_int_equal(tarn_stencil_sum(&s, a, &same), TARN_EINVAL);
  /* outputs of another shape or tiling */
  assert_int_equal(tarn_matrix_zeros(rt, 10, 11, 3, 4, &other), 0);
  assert_int_equal(tarn_stencil_sum(&s, a, &other), TARN_EINVAL);
  assert_int_equal(tarn_matrix_zeros(rt, 10, 12, 4, 3, &t), 0);
  assert_int_equal(tarn_stencil_sum(&s, a, &t), TARN_EINVAL);
  assert_int_equal(tarn_stencil_update_add(other, a), TARN_EINVAL);
  assert_int_equal(tarn_stencil_update_add(NULL, a), TARN_EINVAL);
  assert_int_equal(tarn_stencil_update_add(a, NULL), TARN_EINVAL);
  assert_int_equal(tarn_stencil_assign(NULL, 1), TARN_EINVAL);
  /* nothing changed */
  double *x = test_buffer_of(a);
  for (size_t k = 0; k < 120; k++) assert_true(x[k] == 1);
  free(x);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(other);
  tarn_matrix_destroy(t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sum_every_shape_every_boundary),
      cmocka_unit_test(sum_with_a_condition_per_dimension),
      cmocka_unit_test(larger_radii),
      cmocka_unit_test(integer_inputs_sum_exactly),
      cmocka_unit_test(user_kernel_laplacian),
      cmocka_unit_test(halos_larger_than_the_scratch_come_from_the_heap),
      cmocka_unit_test(a_failing_kernel_fails_its_tasks),
      cmocka_unit_test(elementwise_builtins_and_ordering),
      cmocka_unit_test(spilled_tiles_give_the_same_results),
      cmocka_unit_test(a_limit_below_one_task_is_refused),
      cmocka_unit_test(sum_small_tiles_every_boundary),
      cmocka_unit_test(sum_tall_and_wide_single_tiles),
      cmocka_unit_test(signed_zeros_sum_from_plus_zero),
      cmocka_unit_test(elementwise_shared_by_workers),
      cmocka_unit_test(bad_input_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
