/* test_matrix.c: every matrix operation against a naive serial loop on
 * many shapes (sizes not divisible by the tile, 1 x 1 tiles, one tile,
 * tall, wide, tiles larger than the matrix), in place and into given
 * matrices, under a memory limit that forces spilling, and every bad input
 * refused; user kernels over several matrices (tarn_matrix_apply) with
 * every access mode, a matrix given twice and a failing kernel; a
 * destroyed matrix and memory that never held one refused by every call
 * (the destroyed block kept from the heap by the wrapped free,
 * dead_handles.h), and the constructors refusing a destroyed runtime.
 * Elementwise results are compared exactly; reductions within their stated
 * bound. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "array/matrix_internal.h"
#include "dead_handles.h"
#include "destroyed.h"
#include "support.h"
#include "tarn.h"

static const size_t shapes[][4] = {
    {1, 1, 1, 1},
    {5, 7, 2, 3},
    {10, 10, 10, 10},
    {17, 3, 4, 2},
    {3, 17, 2, 4},
    {9, 9, 20, 20},
    {64, 48, 16, 16},
    {33, 65, 8, 8},
    {12, 12, 1, 1},
    /* tiles whose sides are not multiples of the transpose's 32 x 32 blocks,
     * and one tile large enough to be shared by column ranges */
    {45, 70, 19, 13},
    {300, 301, 300, 301},
    /* tiles wider than 512 columns: the row sums by column blocks (three
     * of one tile, two and one of the other's tiles) */
    {30, 1300, 30, 1300},
    {70, 1100, 40, 600},
};
enum { nshapes = sizeof shapes / sizeof shapes[0] };

static double square_plus_one(double x) { return x * x + 1; }

/* tarn_matrix_apply's kernel of check_shape: with blocks of a (read), b
 * (read), c (written), d (read and written) and n (counts the visits),
 * c = a + b + (i / 2 + j / 4) for element (i, j), then d = 2 d + c, and
 * n = n + 1. */
static int fused_statements(const tarn_block *blk, void *arg) {
  (void)arg;
  const double *a = blk->data[0], *b = blk->data[1];
  double *c = blk->data[2], *d = blk->data[3], *n = blk->data[4];
  for (size_t q = 0; q < blk->cols; q++)
    for (size_t p = 0; p < blk->rows; p++) {
      size_t k = p + q * blk->ld;
      c[k] = a[k] + b[k] +
             ((double)(blk->row + p) * 0.5 + (double)(blk->col + q) * 0.25);
      d[k] = 2 * d[k] + c[k];
      n[k] += 1;
    }
  return 0;
}

/* A matrix given twice (read, then read and written): one block. */
static int increment_through_the_second(const tarn_block *blk, void *arg) {
  (void)arg;
  if (blk->data[0] != blk->data[1]) return -5;
  for (size_t q = 0; q < blk->cols; q++)
    for (size_t p = 0; p < blk->rows; p++)
      blk->data[1][p + q * blk->ld] = blk->data[0][p + q * blk->ld] + 1;
  return 0;
}

static void check_shape(tarn_rt *rt, const size_t *s) {
  size_t m = s[0], n = s[1], mb = s[2], nb = s[3];
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, nb, 7, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, m, n, mb, nb, 8, &b), 0);
  double *x = test_buffer_of(a), *y = test_buffer_of(b);
  /* Random values do not depend on the tiling. */
  tarn_matrix *other = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, 1 + mb / 2, nb + 1, 7, &other),
                   0);
  double *z = test_buffer_of(other);
  assert_memory_equal(x, z, m * n * sizeof *x);
  for (size_t k = 0; k < m * n; k++) assert_true(x[k] >= 0 && x[k] < 1);
  assert_true(x[0] != y[0]); /* another seed, other numbers */
  /* get */
  for (size_t j = 0; j < n; j += 1 + n / 5)
    for (size_t i = 0; i < m; i += 1 + m / 5) {
      double v;
      assert_int_equal(tarn_matrix_get(a, i, j, &v), 0);
      assert_true(v == x[i + j * m]);
    }
  /* add, axpb, map, sin, copy: exact */
  assert_int_equal(tarn_matrix_add(a, b, &c), 0);
  double *r = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) assert_true(r[k] == x[k] + y[k]);
  free(r);
  assert_int_equal(tarn_matrix_axpb(a, 2.5, -1.0, &c), 0); /* into c */
  r = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) assert_true(r[k] == 2.5 * x[k] + -1.0);
  free(r);
  assert_int_equal(tarn_matrix_map(a, square_plus_one, &c), 0);
  r = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) assert_true(r[k] == square_plus_one(x[k]));
  free(r);
  assert_int_equal(tarn_matrix_sin(a, &c), 0);
  r = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) /* libmvec: within 4 ulp */
    assert_true(fabs(r[k] - sin(x[k])) <= 4 * 0x1.0p-52 * fabs(sin(x[k])));
  free(r);
  /* In place: c = c + c, then c = 3 c + 1. */
  assert_int_equal(tarn_matrix_copy(a, &c), 0);
  assert_int_equal(tarn_matrix_add(c, c, &c), 0);
  assert_int_equal(tarn_matrix_axpb(c, 3, 1, &c), 0);
  r = test_buffer_of(c);
  for (size_t k = 0; k < m * n; k++) assert_true(r[k] == 3 * (x[k] + x[k]) + 1);
  free(r);
  /* apply: several statements over five matrices in one pass, each
   * element visited once, blocks placed right */
  {
    tarn_matrix *cc = NULL, *d = NULL, *cnt = NULL;
    assert_int_equal(tarn_matrix_zeros(rt, m, n, mb, nb, &cc), 0);
    assert_int_equal(tarn_matrix_copy(a, &d), 0);
    assert_int_equal(tarn_matrix_fill(rt, m, n, mb, nb, 7, &cnt), 0);
    tarn_matrix *const ms[] = {a, b, cc, d, cnt};
    const tarn_access modes[] = {TARN_READ, TARN_READ, TARN_WRITE,
                                 TARN_READ_WRITE, TARN_READ_WRITE};
    assert_int_equal(tarn_matrix_apply(ms, modes, 5, fused_statements, NULL),
                     0);
    double *rc = test_buffer_of(cc), *rd = test_buffer_of(d),
           *rn = test_buffer_of(cnt);
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < m; i++) {
        size_t k = i + j * m;
        double want = x[k] + y[k] + ((double)i * 0.5 + (double)j * 0.25);
        assert_true(rc[k] == want);
        assert_true(rd[k] == 2 * x[k] + want);
        assert_true(rn[k] == 8);
      }
    tarn_matrix *const twice[] = {cnt, cnt};
    const tarn_access read_then_write[] = {TARN_READ, TARN_READ_WRITE};
    assert_int_equal(tarn_matrix_apply(twice, read_then_write, 2,
                                       increment_through_the_second, NULL),
                     0);
    free(rn);
    rn = test_buffer_of(cnt);
    for (size_t k = 0; k < m * n; k++) assert_true(rn[k] == 9);
    free(rc);
    free(rd);
    free(rn);
    tarn_matrix_destroy(cc);
    tarn_matrix_destroy(d);
    tarn_matrix_destroy(cnt);
  }
  /* transpose and retile */
  tarn_matrix *t = NULL, *re = NULL;
  assert_int_equal(tarn_matrix_transpose(a, &t), 0);
  assert_int_equal(tarn_matrix_rows(t), n);
  r = test_buffer_of(t);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) assert_true(r[j + i * n] == x[i + j * m]);
  free(r);
  assert_int_equal(tarn_matrix_retile(a, 3, 5, &re), 0);
  r = test_buffer_of(re);
  assert_memory_equal(r, x, m * n * sizeof *x);
  free(r);
  /* from_buffer round trip */
  tarn_matrix *f = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, nb, mb, y, m, &f), 0);
  r = test_buffer_of(f);
  assert_memory_equal(r, y, m * n * sizeof *y);
  free(r);
  /* reductions against a long double loop */
  long double exact = 0, sq = 0, absum = 0;
  for (size_t k = 0; k < m * n; k++) {
    exact += x[k];
    absum += fabs(x[k]);
    sq += (long double)x[k] * x[k];
  }
  double sum = 0, norm = 0, eps = 0x1.0p-52;
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);
  double bound = (log2((double)(m * n)) + 19) * eps * (double)absum;
  assert_true(fabs(sum - (double)exact) <= bound);
  assert_int_equal(tarn_matrix_norm(a, TARN_NORM_FRO, &norm), 0);
  assert_true(fabs(norm - sqrt((double)sq)) <=
              (log2((double)(m * n)) + 21) * eps * sqrt((double)sq));
  /* The one-, infinity- and max-norms of 2 A - 1 (both signs), against
   * plain loops over its elements. */
  tarn_matrix *d = NULL;
  assert_int_equal(tarn_matrix_axpb(a, 2.0, -1.0, &d), 0);
  double *e = test_buffer_of(d), largest = 0;
  long double col_max = 0, row_max = 0;
  for (size_t j = 0; j < n; j++) {
    long double col = 0;
    for (size_t i = 0; i < m; i++) col += fabs(e[i + j * m]);
    col_max = col > col_max ? col : col_max;
  }
  for (size_t i = 0; i < m; i++) {
    long double row = 0;
    for (size_t j = 0; j < n; j++) row += fabs(e[i + j * m]);
    row_max = row > row_max ? row : row_max;
  }
  for (size_t k = 0; k < m * n; k++)
    largest = fabs(e[k]) > largest ? fabs(e[k]) : largest;
  double one = -1, inf = -1, max = -1;
  assert_int_equal(tarn_matrix_norm(d, TARN_NORM_ONE, &one), 0);
  assert_int_equal(tarn_matrix_norm(d, TARN_NORM_INF, &inf), 0);
  assert_int_equal(tarn_matrix_norm(d, TARN_NORM_MAX, &max), 0);
  assert_true(fabs(one - (double)col_max) <= (m + 8) * eps * (double)col_max);
  assert_true(fabs(inf - (double)row_max) <= (n + 8) * eps * (double)row_max);
  assert_true(max == largest);
  free(e);
  tarn_matrix_destroy(d);
  free(x);
  free(y);
  free(z);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  tarn_matrix_destroy(other);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(re);
  tarn_matrix_destroy(f);
}

static void every_operation_matches_a_serial_loop(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  for (size_t s = 0; s < nshapes; s++) check_shape(rt, shapes[s]);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void spilled_tiles_give_the_same_results(void **state) {
  (void)state;
  /* Tiles of 16 x 16 doubles take a 4 KiB page each; three 64 x 48
   * matrices and their temporaries need well over 64 KiB. */
  tarn_rt *rt = test_rt(2, 64 << 10);
  check_shape(rt, shapes[6]);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_true(ps.resident_peak <= 64 << 10);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Adds the block of matrix 1 into that of matrix 0. */
static int add_second_into_first(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++)
      b->data[0][p + q * b->ld] += b->data[1][p + q * b->ld];
  return 0;
}

/* A retile into small tiles writes them in blocks, a task each: 301 x
 * 203 from tiles of 64 into tiles of 16 x 8 (19 x 26 = 494 tiles, in
 * blocks of 16 x 32: 2 tasks) and of 7 x 5 (43 x 41 = 1763, blocks of
 * 36 x 28 clamped to 1024 tiles: a few tasks), and from those back into
 * 13 x 11; each the same bits. Under a limit that holds a tile's task but
 * not a block's (256 KiB), or whose eighth does not hold a block's (4
 * MiB: a block of 16 x 8 tiles takes 2 MiB of pages), one task per tile,
 * the same bits. */
static void a_retile_into_small_tiles_goes_in_blocks(void **state) {
  (void)state;
  enum { M = 301, N = 203 };
  static const size_t tilings[][3] = {{16, 8, 2}, {7, 5, 8}, {13, 11, 6}};
  static const size_t limits[] = {0, (size_t)256 << 10, (size_t)4 << 20};
  for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
    bool limited = limits[l] != 0;
    tarn_rt *rt = test_rt(2, limits[l]);
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, M, N, 64, 64, 9, &a), 0);
    double *want = test_buffer_of(a);
    tarn_matrix *from = a;
    for (size_t k = 0; k < sizeof tilings / sizeof *tilings; k++) {
      size_t mb = tilings[k][0], nb = tilings[k][1];
      size_t tiles = ((M + mb - 1) / mb) * ((N + nb - 1) / nb);
      tarn_matrix *out = NULL;
      tarn_region *region = NULL;
      uint64_t before = test_tasks_submitted(rt);
      assert_int_equal(tarn_region_begin(rt, &region), 0);
      assert_int_equal(tarn_matrix_retile(from, mb, nb, &out), 0);
      assert_int_equal(tarn_region_wait(region, NULL), 0);
      uint64_t tasks = test_tasks_submitted(rt) - before;
      if (limited)
        assert_int_equal(tasks, tiles);
      else
        assert_true(tasks <= tilings[k][2]);
      test_matrix_holds(out, want);
      if (from != a) tarn_matrix_destroy(from);
      from = out;
    }
    tarn_matrix_destroy(from);
    tarn_matrix_destroy(a);
    free(want);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Whether element (i, j) is in the triangle: on or below the diagonal
 * (lower), or on or above it. */
static bool in_triangle(bool lower, size_t i, size_t j) {
  return lower ? i >= j : i <= j;
}

/* Fail on the block holding the top right element of a 61 x 53 matrix,
 * or the bottom left: in the tilings below, a tile above the diagonal
 * and one below it. */
static int fail_top_right(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row == 0 && blk->col + blk->cols == 53 ? -79 : 0;
}

static int fail_bottom_left(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row + blk->rows == 61 && blk->col == 0 ? -79 : 0;
}

/* What the pool charges for the tiles of an m x n matrix in mb x nb
 * tiles that hold an element of the triangle. */
static size_t triangle_charge(bool lower, size_t m, size_t n, size_t mb,
                              size_t nb) {
  size_t charge = 0;
  for (size_t c0 = 0; c0 < n; c0 += nb)
    for (size_t r0 = 0; r0 < m; r0 += mb) {
      size_t rows = m - r0 < mb ? m - r0 : mb, cols = n - c0 < nb ? n - c0 : nb;
      if (lower ? r0 + rows - 1 >= c0 : r0 <= c0 + cols - 1)
        charge += test_tile_charge(rows, cols);
    }
  return charge;
}

/* The retile of a's lower or upper triangle (tarn__matrix_retile_part)
 * waited for. */
static void retile_triangle(tarn_rt *rt, tarn_matrix *a, bool lower, size_t mb,
                            size_t nb, tarn_matrix **out) {
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn__matrix_retile_part(a, lower ? 'L' : 'U', mb, nb, out),
                   0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
}

/* The retile of a triangle (array/matrix_internal.h) of 61 x 53 from
 * tiles of 7 x 5 into 16 x 8 and 13 x 11, both triangles: into a new
 * matrix, the triangle's elements and zeros elsewhere, the new tiles
 * with nothing of the triangle given no memory; into a given matrix, its
 * other elements as they were, bit for bit, also under a limit that has
 * its tiles spilled and read back. A failed writer of a source
 * tile with nothing of the triangle does not reach the copy, and one of
 * such a tile of the given matrix leaves it failed (not written). */
static void a_triangle_retile_touches_only_its_tiles(void **state) {
  (void)state;
  enum { M = 61, N = 53 };
  static const size_t tilings[][2] = {{16, 8}, {13, 11}};
  tarn_pool_stats ps;
  for (int spill = 0; spill < 2; spill++)
    for (int lower = 0; lower < 2; lower++)
      for (size_t k = 0; k < 2; k++) {
        /* 64 KiB: the tiles (a page each) spill and are read back */
        tarn_rt *rt = test_rt(2, spill ? (size_t)64 << 10 : 0);
        size_t mb = tilings[k][0], nb = tilings[k][1];
        tarn_matrix *a = NULL, *made = NULL, *given = NULL;
        assert_int_equal(tarn_matrix_rand(rt, M, N, 7, 5, 9, &a), 0);
        assert_int_equal(tarn_matrix_fill(rt, M, N, mb, nb, -2.5, &given), 0);
        double *av = test_buffer_of(a), *gv = test_buffer_of(given);
        double *want_made = malloc(M * N * sizeof *want_made),
               *want_given = malloc(M * N * sizeof *want_given);
        assert_non_null(want_made);
        assert_non_null(want_given);
        for (size_t j = 0; j < N; j++)
          for (size_t i = 0; i < M; i++) {
            bool in = in_triangle(lower, i, j);
            want_made[i + j * M] = in ? av[i + j * M] : 0.0;
            want_given[i + j * M] = in ? av[i + j * M] : gv[i + j * M];
          }
        assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
        size_t before = ps.resident_bytes - ps.cache_bytes;
        retile_triangle(rt, a, lower, mb, nb, &made);
        assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
        if (!spill)
          assert_int_equal(ps.resident_bytes - ps.cache_bytes - before,
                           triangle_charge(lower, M, N, mb, nb));
        test_matrix_holds(made, want_made);
        retile_triangle(rt, a, lower, mb, nb, &given);
        test_matrix_holds(given, want_given);
        /* failed tiles off the triangle, in a and in given */
        tarn_block_fn fail = lower ? fail_top_right : fail_bottom_left;
        test_fail_by(rt, a, fail, -79);
        test_fail_by(rt, given, fail, -79);
        tarn_matrix_destroy(made);
        made = NULL;
        retile_triangle(rt, a, lower, mb, nb, &made);
        test_matrix_holds(made, want_made);
        retile_triangle(rt, a, lower, mb, nb, &given);
        double v = 0;
        assert_int_equal(
            tarn_matrix_get(given, lower ? 0 : M - 1, lower ? N - 1 : 0, &v),
            TARN_ECANCELED);
        TEST_DESTROY_MATRICES(a, made, given);
        free(av);
        free(gv);
        free(want_made);
        free(want_given);
        assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
        assert_true(spill ? ps.restores > 0 : ps.spills == 0);
        assert_int_equal(tarn_rt_destroy(rt), 0);
      }
}

/* Under a limit below one task's tiles each operation returns TARN_ENOMEM
 * before any task, every matrix as it was; each went ahead, and the task
 * that could never fit failed, leaving what it was to write cancelled (a
 * = a + b lost a). At exactly those tiles each runs, right. 64 x 64 in
 * tiles of 32 (8 KiB a tile): a + b into a and a kernel adding b into a
 * (two tiles: a is pinned once), the transpose and 2a + 1 into a given c
 * (two), the retile into tiles of 48 into a given c (its 48 x 48 tile
 * and the four of a it overlaps). */
static void operations_refuse_a_limit_below_one_task(void **state) {
  (void)state;
  enum { N = 64, NB = 32, OPS = 5 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE), tile = test_tile_charge(NB, NB);
  for (int op = 0; op < OPS; op++)
    for (int below = 0; below < 2; below++) {
      size_t need = op == 4 ? test_tile_charge(48, 48) + 4 * tile : 2 * tile;
      tarn_rt *rt = test_rt(2, need - (below ? page : 0));
      tarn_matrix *a = NULL, *b = NULL, *c = NULL;
      size_t cb = op == 4 ? 48 : NB;
      assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 1, &a), 0);
      assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 2, &b), 0);
      assert_int_equal(tarn_matrix_rand(rt, N, N, cb, cb, 3, &c), 0);
      double *a0 = test_buffer_of(a), *b0 = test_buffer_of(b),
             *c0 = test_buffer_of(c);
      int rc;
      if (op == 0) {
        rc = tarn_matrix_add(a, b, &a);
      } else if (op == 1) {
        tarn_matrix *ms[2] = {a, b};
        tarn_access modes[2] = {TARN_READ_WRITE, TARN_READ};
        rc = tarn_matrix_apply(ms, modes, 2, add_second_into_first, NULL);
      } else if (op == 2) {
        rc = tarn_matrix_transpose(a, &c);
      } else if (op == 3) {
        rc = tarn_matrix_axpb(a, 2.0, 1.0, &c);
      } else {
        rc = tarn_matrix_retile(a, 48, 48, &c);
      }
      assert_int_equal(rc, below ? TARN_ENOMEM : 0);
      double *want_a = malloc(N * N * sizeof *want_a),
             *want_c = malloc(N * N * sizeof *want_c);
      assert_non_null(want_a);
      assert_non_null(want_c);
      memcpy(want_a, a0, N * N * sizeof *want_a);
      memcpy(want_c, c0, N * N * sizeof *want_c);
      for (size_t j = 0; !below && j < N; j++)
        for (size_t i = 0; i < N; i++) {
          size_t k = i + j * N;
          if (op <= 1) want_a[k] = a0[k] + b0[k];
          if (op == 2) want_c[k] = a0[j + i * N];
          if (op == 3) want_c[k] = 2.0 * a0[k] + 1.0;
          if (op == 4) want_c[k] = a0[k];
        }
      test_matrix_holds(a, want_a);
      test_matrix_holds(b, b0);
      test_matrix_holds(c, want_c);
      double *all[] = {a0, b0, c0, want_a, want_c};
      for (size_t k = 0; k < 5; k++) free(all[k]);
      TEST_DESTROY_MATRICES(a, b, c);
      assert_int_equal(tarn_rt_destroy(rt), 0);
    }
  /* The one and infinity norms pin a page beside each tile (matrix.h):
   * under a tile and a page they are right, spilling; under a tile alone
   * refused. */
  for (int below = 0; below < 2; below++) {
    tarn_rt *rt = test_rt(2, tile + (below ? 0 : page));
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 4, &a), 0);
    double *a0 = test_buffer_of(a);
    for (int rows = 0; rows < 2; rows++) {
      double want = 0, got = -1;
      for (size_t l = 0; l < N; l++) {
        double line = 0;
        for (size_t k = 0; k < N; k++)
          line += fabs(rows ? a0[l + k * N] : a0[k + l * N]);
        want = line > want ? line : want;
      }
      int rc = tarn_matrix_norm(a, rows ? TARN_NORM_INF : TARN_NORM_ONE, &got);
      assert_int_equal(rc, below ? TARN_ENOMEM : 0);
      assert_true(below ? got == -1 : fabs(got - want) <= 1e-13 * want);
    }
    free(a0);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* Zeros cost nothing until used: a matrix far larger than the limit is
 * made at once, writes nothing to the disk, holds memory only for the
 * tiles read, and reads as zeros (also after a kernel wrote part of it). */
/* Adds 1 to the elements of the first 300 x 200 tile (a block may be a
 * part of a tile's columns: its own row and col say where it is). */
static int ones_on_the_first_tile(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++)
      b->data[0][p + q * b->ld] +=
          b->row + p < 300 && b->col + q < 200 ? 1.0 : 0.0;
  return 0;
}

static void zeros_cost_nothing_until_used(void **state) {
  (void)state;
  size_t limit = 4 << 20;
  tarn_rt *rt = test_rt(2, limit);
  tarn_matrix *z = NULL, *small = NULL;
  /* 80 GB of zeros in 2 MB tiles, under a 4 MiB limit; two tiles read. */
  assert_int_equal(tarn_matrix_zeros(rt, 100000, 100000, 1000, 250, &z), 0);
  double v = -1;
  assert_int_equal(tarn_matrix_get(z, 99999, 12345, &v), 0);
  assert_true(v == 0.0);
  assert_int_equal(tarn_matrix_get(z, 0, 0, &v), 0);
  assert_true(v == 0.0);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_int_equal(ps.bytes_written, 0);
  assert_true(ps.resident_peak <= 2 * (1000 * 250 * sizeof(double) + 4096));
  tarn_matrix_destroy(z);
  /* Read-write by a kernel: the tiles it reads are zeros. */
  assert_int_equal(tarn_matrix_zeros(rt, 700, 600, 300, 200, &small), 0);
  tarn_matrix *const m[] = {small};
  const tarn_access rw[] = {TARN_READ_WRITE};
  assert_int_equal(tarn_matrix_apply(m, rw, 1, ones_on_the_first_tile, NULL),
                   0);
  double sum = -1;
  assert_int_equal(tarn_matrix_sum(small, &sum), 0);
  assert_true(sum == 300.0 * 200.0);
  tarn_matrix_destroy(small);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Element (i, j) of tarn_matrix_rand depends on (seed, i, j) alone: a 4
 * x 3 matrix is the first columns of a 4 x 5 and the first rows of a 9 x
 * 3 of the same seed, whatever the tiles (the values once moved with the
 * width: found by a random test). Another seed gives other values. */
static void random_values_depend_on_the_element_alone(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *small = NULL, *wide = NULL, *tall = NULL, *other = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 4, 3, 4, 3, 42, &small), 0);
  assert_int_equal(tarn_matrix_rand(rt, 4, 5, 3, 2, 42, &wide), 0);
  assert_int_equal(tarn_matrix_rand(rt, 9, 3, 2, 1, 42, &tall), 0);
  assert_int_equal(tarn_matrix_rand(rt, 4, 3, 4, 3, 43, &other), 0);
  double *s = test_buffer_of(small), *w = test_buffer_of(wide);
  double *t = test_buffer_of(tall), *o = test_buffer_of(other);
  size_t same_as_other = 0;
  for (size_t j = 0; j < 3; j++)
    for (size_t i = 0; i < 4; i++) {
      assert_true(s[i + j * 4] == w[i + j * 4]);
      assert_true(s[i + j * 4] == t[i + j * 9]);
      same_as_other += s[i + j * 4] == o[i + j * 4];
    }
  assert_int_equal(same_as_other, 0);
  free(s);
  free(w);
  free(t);
  free(o);
  tarn_matrix_destroy(small);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(tall);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A copy keeps every bit: -0 stays -0 and a NaN keeps its payload (1 * x
 * + 0, as tarn_matrix_copy once was, made -0 into +0: found by a random
 * test), into a new matrix and into a given one. */
static void a_copy_keeps_every_bit(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  double in[6] = {-0.0, 1.5, -2.0, 0.0, -0.0, 3.0};
  uint64_t payload = 0x7ff4000000000123u; /* a signalling NaN */
  memcpy(&in[3], &payload, sizeof payload);
  tarn_matrix *a = NULL, *c = NULL, *d = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, 3, 2, 2, 1, in, 3, &a), 0);
  assert_int_equal(tarn_matrix_copy(a, &c), 0);
  assert_int_equal(tarn_matrix_fill(rt, 3, 2, 2, 1, 7.0, &d), 0);
  assert_int_equal(tarn_matrix_copy(a, &d), 0);
  double *x = test_buffer_of(c), *y = test_buffer_of(d);
  assert_memory_equal(x, in, sizeof in);
  assert_memory_equal(y, in, sizeof in);
  free(x);
  free(y);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(c);
  tarn_matrix_destroy(d);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void constants_and_zeros(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *z = NULL, *k = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 7, 5, 3, 3, &z), 0);
  assert_int_equal(tarn_matrix_fill(rt, 7, 5, 3, 3, 4.25, &k), 0);
  double *a = test_buffer_of(z), *b = test_buffer_of(k), sum = 0;
  for (size_t i = 0; i < 35; i++) {
    assert_true(a[i] == 0);
    assert_true(b[i] == 4.25);
  }
  assert_int_equal(tarn_matrix_sum(k, &sum), 0);
  assert_true(sum == 35 * 4.25);
  /* fill with +0 is zeros (no task); with -0 it keeps the sign. */
  tarn_matrix *pz = NULL, *nz = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 7, 5, 3, 3, 0.0, &pz), 0);
  assert_int_equal(tarn_matrix_fill(rt, 7, 5, 3, 3, -0.0, &nz), 0);
  double *p0 = test_buffer_of(pz), *n0 = test_buffer_of(nz);
  for (size_t i = 0; i < 35; i++) {
    assert_true(p0[i] == 0 && !signbit(p0[i]));
    assert_true(n0[i] == 0 && signbit(n0[i]));
  }
  free(p0);
  free(n0);
  tarn_matrix_destroy(pz);
  tarn_matrix_destroy(nz);
  assert_int_equal(tarn_matrix_tile_rows(k), 3);
  /* The norm neither overflows nor underflows at the ends of the range,
   * nor when each tile's sum of squares is finite and their sum is not
   * (3e153: 8.1e307 a tile of 9, 3.15e308 in all; it gave +inf). */
  const double extremes[] = {1e300, 1e-300, 0x1p-1070, 3e153, 2e154};
  for (int e = 0; e < 5; e++) {
    tarn_matrix *x = NULL;
    double norm = 0;
    assert_int_equal(tarn_matrix_fill(rt, 7, 5, 3, 3, extremes[e], &x), 0);
    assert_int_equal(tarn_matrix_norm(x, TARN_NORM_FRO, &norm), 0);
    assert_true(fabs(norm - extremes[e] * sqrt(35.0)) <=
                1e-14 * extremes[e] * sqrt(35.0) + 8 * 0x1p-1074);
    tarn_matrix_destroy(x);
  }
  /* A NaN makes each norm a NaN, an infinity (and no NaN) +infinity: in
   * one tile of several, in several, or everywhere; in a one-tile matrix
   * too. Until 2026-12-02 an infinity gave a NaN (Inf / Inf when the
   * scales were reconciled) and an all-NaN tile counted as 0. */
  static const struct {
    size_t at[3]; /* elements set, column-major in 7 x 5 (35: none) */
    double v[3];
    int want; /* 1: +inf, 2: NaN */
  } specials[] = {
      {{4, 35, 35}, {INFINITY, 0, 0}, 1},
      {{4, 33, 35}, {-INFINITY, INFINITY, 0}, 1},
      {{0, 34, 35}, {NAN, 0, 0}, 2},
      {{4, 20, 33}, {INFINITY, NAN, -INFINITY}, 2},
  };
  for (size_t e = 0; e < sizeof specials / sizeof specials[0]; e++)
    for (int whole = 0; whole < 3; whole++) {
      double x[35];
      for (size_t i = 0; i < 35; i++) x[i] = 0.25 * (double)(i % 4);
      for (int k = 0; k < 3; k++)
        if (specials[e].at[k] < 35) x[specials[e].at[k]] = specials[e].v[k];
      if (whole == 2) /* every element the first special */
        for (size_t i = 0; i < 35; i++) x[i] = specials[e].v[0];
      size_t tile = whole == 1 ? 7 : 3;
      tarn_matrix *m = NULL;
      assert_int_equal(tarn_matrix_from_buffer(rt, 7, 5, tile, tile, x, 7, &m),
                       0);
      int nan_wanted =
          whole == 2 ? isnan(specials[e].v[0]) : specials[e].want == 2;
      for (int kind = TARN_NORM_FRO; kind <= TARN_NORM_MAX; kind++) {
        double norm = 0;
        assert_int_equal(tarn_matrix_norm(m, (tarn_norm)kind, &norm), 0);
        if (nan_wanted)
          assert_true(isnan(norm));
        else
          assert_true(isinf(norm) && norm > 0);
      }
      tarn_matrix_destroy(m);
    }
  free(a);
  free(b);
  tarn_matrix_destroy(z);
  tarn_matrix_destroy(k);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void bad_input_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0), *other_rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *b = NULL, *w = NULL, *foreign = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 0, 5, 2, 2, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_zeros(rt, 5, 5, 0, 2, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_zeros(NULL, 5, 5, 2, 2, &c), TARN_EINVAL);
  /* A tile whose bytes overflow a size_t (2^32 + 1 by 2^32 doubles, whose
   * product wraps to 2^32), and too many tiles to count. */
  size_t big = (size_t)1 << 32;
  assert_int_equal(tarn_matrix_zeros(rt, big + 1, big, big + 1, big, &c),
                   TARN_ENOMEM);
  assert_int_equal(tarn_matrix_zeros(rt, SIZE_MAX, SIZE_MAX, 1, 1, &c),
                   TARN_ENOMEM);
  /* Tile counts near SIZE_MAX: (m + mb - 1) / mb wrapped to 0 tiles (a
   * matrix "made" whose reads left its table) or divided by 0. */
  assert_int_equal(tarn_matrix_zeros(rt, SIZE_MAX, 1, 2, 1, &c), TARN_ENOMEM);
  assert_int_equal(tarn_matrix_zeros(rt, 1, SIZE_MAX, 1, 2, &c), TARN_ENOMEM);
  assert_int_equal(tarn_matrix_rand(rt, SIZE_MAX - 2, 1, 8, 1, 1, &c),
                   TARN_ENOMEM);
  assert_int_equal(tarn_matrix_fill(rt, SIZE_MAX - 2, 1, 8, 1, 2.0, &c),
                   TARN_ENOMEM);
  assert_null(c);
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 1, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 4, 6, 2, 2, 1, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 3, 2, 1, &w), 0);
  assert_int_equal(tarn_matrix_rand(other_rt, 6, 4, 2, 2, 1, &foreign), 0);
  assert_int_equal(tarn_matrix_add(a, b, &c), TARN_EINVAL);       /* shape */
  assert_int_equal(tarn_matrix_add(a, w, &c), TARN_EINVAL);       /* tiling */
  assert_int_equal(tarn_matrix_add(a, foreign, &c), TARN_EINVAL); /* rt */
  assert_null(c);
  assert_int_equal(tarn_matrix_axpb(a, 1, 1, &b), TARN_EINVAL); /* out */
  assert_int_equal(tarn_matrix_transpose(a, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_retile(a, 1, 1, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_map(a, NULL, &c), TARN_EINVAL);
  double v;
  assert_int_equal(tarn_matrix_get(a, 6, 0, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_get(a, 0, 4, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_get(a, 0, 0, NULL), TARN_EINVAL);
  /* The reductions: no matrix, or nowhere to put the result (a sound
   * matrix: the refusal comes before any work). */
  assert_int_equal(tarn_matrix_sum(NULL, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_sum(a, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_norm(NULL, TARN_NORM_FRO, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_norm(a, TARN_NORM_FRO, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_norm(a, (tarn_norm)4, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_norm(a, (tarn_norm)-1, &v), TARN_EINVAL);
  double buf[24];
  assert_int_equal(tarn_matrix_to_buffer(a, buf, 5), TARN_EINVAL); /* ld */
  assert_int_equal(tarn_matrix_from_buffer(rt, 6, 4, 2, 2, buf, 5, &c),
                   TARN_EINVAL);
  /* an ld no buffer can have: the tasks' pointers wrapped (a read of
   * other memory, returned as the matrix) */
  assert_int_equal(tarn_matrix_to_buffer(a, buf, SIZE_MAX / 4), TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_from_buffer(rt, 6, 4, 2, 2, buf, SIZE_MAX / 4, &c),
      TARN_EINVAL);
  assert_null(c);
  /* b is untouched by the refused operation. */
  double after[24], before[24];
  assert_int_equal(tarn_matrix_to_buffer(b, after, 4), 0);
  tarn_matrix *fresh = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 4, 6, 2, 2, 1, &fresh), 0);
  assert_int_equal(tarn_matrix_to_buffer(fresh, before, 4), 0);
  assert_memory_equal(after, before, sizeof after);
  tarn_matrix_destroy(fresh);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(w);
  tarn_matrix_destroy(foreign);
  tarn_matrix_destroy(NULL);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(other_rt), 0);
}

/* Fails on the block that holds element (0, 0) of the matrix. */
static int fail_at_the_origin(const tarn_block *blk, void *arg) {
  (void)arg;
  if (blk->row == 0 && blk->col == 0) return -77;
  for (size_t q = 0; q < blk->cols; q++)
    for (size_t p = 0; p < blk->rows; p++) blk->data[0][p + q * blk->ld] = 1;
  return 0;
}

static int write_ones(const tarn_block *blk, void *arg) {
  (void)arg;
  for (size_t q = 0; q < blk->cols; q++)
    for (size_t p = 0; p < blk->rows; p++) blk->data[0][p + q * blk->ld] = 1;
  return 0;
}

/* A kernel's status fails its tile's task and comes back from the region;
 * the other tiles are written. */
static void an_apply_kernel_failure_reaches_the_region(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 6, 6, 3, 3, &a), 0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_matrix *const ms[] = {a};
  const tarn_access w[] = {TARN_READ_WRITE};
  assert_int_equal(tarn_matrix_apply(ms, w, 1, fail_at_the_origin, NULL), 0);
  assert_int_equal(tarn_region_wait(region, NULL), -77);
  double v = 0;
  assert_int_equal(tarn_matrix_get(a, 5, 5, &v), 0);
  assert_true(v == 1);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void bad_apply_input_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0), *other_rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *wide = NULL, *retiled = NULL, *foreign = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 6, 4, 2, 2, &a), 0);
  assert_int_equal(tarn_matrix_zeros(rt, 6, 5, 2, 2, &wide), 0);
  assert_int_equal(tarn_matrix_zeros(rt, 6, 4, 3, 2, &retiled), 0);
  assert_int_equal(tarn_matrix_zeros(other_rt, 6, 4, 2, 2, &foreign), 0);
  const tarn_access rw[TARN_MATRIX_APPLY_MAX + 1] = {
      TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE,
      TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE,
      TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE,
      TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE, TARN_READ_WRITE,
      TARN_READ_WRITE};
  tarn_matrix *many[TARN_MATRIX_APPLY_MAX + 1];
  for (size_t i = 0; i <= TARN_MATRIX_APPLY_MAX; i++) many[i] = a;
  tarn_matrix *const one[] = {a};
  assert_int_equal(tarn_matrix_apply(NULL, rw, 1, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(one, NULL, 1, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(one, rw, 1, NULL, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(one, rw, 0, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_apply(many, rw, TARN_MATRIX_APPLY_MAX + 1, write_ones, NULL),
      TARN_EINVAL);
  const tarn_access bad_modes[][1] = {{(tarn_access)0}, {(tarn_access)4}};
  for (int k = 0; k < 2; k++)
    assert_int_equal(tarn_matrix_apply(one, bad_modes[k], 1, write_ones, NULL),
                     TARN_EINVAL);
  tarn_matrix *const with_null[] = {a, NULL};
  tarn_matrix *const shape[] = {a, wide};
  tarn_matrix *const tiling[] = {a, retiled};
  tarn_matrix *const runtime[] = {a, foreign};
  assert_int_equal(tarn_matrix_apply(with_null, rw, 2, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(shape, rw, 2, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(tiling, rw, 2, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(runtime, rw, 2, write_ones, NULL),
                   TARN_EINVAL);
  /* Nothing ran: a is still zeros. The most matrices allowed do run. */
  double sum = -1;
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);
  assert_true(sum == 0);
  assert_int_equal(
      tarn_matrix_apply(many, rw, TARN_MATRIX_APPLY_MAX, write_ones, NULL), 0);
  assert_int_equal(tarn_matrix_sum(a, &sum), 0);
  assert_true(sum == 24);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(wide);
  tarn_matrix_destroy(retiled);
  tarn_matrix_destroy(foreign);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(other_rt), 0);
}

static int copy_centre(const double *in, size_t ld_in, double *out,
                       size_t ld_out, size_t rows, size_t cols, size_t radius,
                       void *arg) {
  (void)arg;
  for (size_t q = 0; q < cols; q++)
    for (size_t p = 0; p < rows; p++)
      out[p + q * ld_out] = in[(p + radius) + (q + radius) * ld_in];
  return 0;
}

/* Calls of matrix.h and stencil.h given `bad` where a matrix goes, beside
 * the sound 6 x 4 matrix `a` (tiles 2 x 2, the layout of `bad` when it is
 * a destroyed matrix): each is refused with TARN_EINVAL, makes no matrix
 * and leaves `bad` as the destination it was given. */
static void matrix_calls_refuse(tarn_matrix *a, tarn_matrix *bad) {
  tarn_matrix *c = NULL, *out = bad;
  double v = -1, buf[24];
  assert_int_equal(tarn_matrix_rows(bad), 0);
  assert_int_equal(tarn_matrix_cols(bad), 0);
  assert_int_equal(tarn_matrix_tile_rows(bad), 0);
  assert_int_equal(tarn_matrix_tile_cols(bad), 0);
  assert_int_equal(tarn_matrix_to_buffer(bad, buf, 6), TARN_EINVAL);
  assert_int_equal(tarn_matrix_get(bad, 0, 0, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_sum(bad, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_norm(bad, TARN_NORM_ONE, &v), TARN_EINVAL);
  assert_true(v == -1);
  assert_int_equal(tarn_matrix_commit_file(bad), TARN_EINVAL);
  char path[64];
  snprintf(path, sizeof path, "/tmp/tarn-test-refused-%ld.npy", (long)getpid());
  assert_int_equal(tarn_matrix_to_file(bad, path), TARN_EINVAL);
  assert_int_equal(access(path, F_OK), -1); /* no file made */
  /* as the operand */
  assert_int_equal(tarn_matrix_axpb(bad, 2, 1, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_copy(bad, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_map(bad, fabs, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_sin(bad, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_transpose(bad, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_retile(bad, 3, 3, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_add(bad, a, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_add(a, bad, &c), TARN_EINVAL);
  tarn_stencil s;
  assert_int_equal(tarn_stencil_init(&s, 1, TARN_BOUNDARY_WRAP, 0), 0);
  assert_int_equal(tarn_stencil_sum(&s, bad, &c), TARN_EINVAL);
  assert_int_equal(tarn_stencil_apply(&s, bad, copy_centre, NULL, &c),
                   TARN_EINVAL);
  assert_int_equal(tarn_stencil_assign(bad, 1), TARN_EINVAL);
  assert_int_equal(tarn_stencil_update_add(bad, a), TARN_EINVAL);
  assert_int_equal(tarn_stencil_update_add(a, bad), TARN_EINVAL);
  tarn_matrix *const ms[] = {a, bad}, *const alone[] = {bad};
  const tarn_access modes[] = {TARN_READ_WRITE, TARN_READ};
  assert_int_equal(tarn_matrix_apply(ms, modes, 2, write_ones, NULL),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_apply(alone, modes, 1, write_ones, NULL),
                   TARN_EINVAL);
  assert_null(c);
  /* as the destination given */
  assert_int_equal(tarn_matrix_axpb(a, 2, 1, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_copy(a, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_add(a, a, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_retile(a, 2, 2, &out), TARN_EINVAL);
  assert_int_equal(tarn_stencil_sum(&s, a, &out), TARN_EINVAL);
  assert_ptr_equal(out, bad);
  tarn_matrix_destroy(bad); /* frees nothing */
}

/* A matrix already destroyed (its memory not reused yet) and memory that
 * never held a matrix are refused by every call of matrix.h and
 * stencil.h, change nothing, and are not freed by tarn_matrix_destroy.
 * The destroyed one keeps its runtime, layout and tiles (white box,
 * destroyed.h), so only the word tarn_matrix_destroy leaves can refuse
 * it. */
static void destroyed_matrices_and_junk_are_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *dead = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 3, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 4, &dead), 0);
  double *a_before = test_buffer_of(a), *dead_before = test_buffer_of(dead);
  test_mark_destroyed(dead, true);
  matrix_calls_refuse(a, dead);
  test_mark_destroyed(dead, false);
  static const unsigned char fills[] = {0x00, 0x5a, 0xff};
  for (size_t f = 0; f < sizeof fills; f++) {
    struct test_junk junk;
    matrix_calls_refuse(a, test_junk_matrix(&junk, fills[f]));
    assert_true(test_junk_untouched(&junk, fills[f]));
  }
  double *a_after = test_buffer_of(a), *dead_after = test_buffer_of(dead);
  assert_memory_equal(a_after, a_before, 24 * sizeof(double));
  assert_memory_equal(dead_after, dead_before, 24 * sizeof(double));
  free(a_before);
  free(a_after);
  free(dead_before);
  free(dead_after);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(dead);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* tarn_matrix_destroy leaves the dead word in the memory it frees (a
 * plain store of it right before free was removed by the compiler as a
 * dead store, and the word stayed live), and every call refuses the
 * matrix so destroyed while its memory is not reused: the block is kept
 * from the heap (dead_handles.h), so the test reads no freed memory. */
static void a_destroyed_matrix_is_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(1, 0);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 3, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 4, &b), 0);
  test_keep_when_freed(b);
  tarn_matrix_destroy(b);
  assert_true(test_was_freed());
  assert_int_equal(b->magic, TARN__MAGIC_DEAD);
  matrix_calls_refuse(a, b);
  test_free_kept(b);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A .npy file the constructors that read one are given, and a path where
 * none may appear. */
static char saved_npy[64], made_npy[64];

/* The constructors given `bad` where the runtime goes: TARN_EINVAL, no
 * matrix, no file made. from_file and open_file get a sound .npy, so only
 * the runtime can refuse them. */
static void constructors_refuse(void *bad_rt) {
  tarn_rt *bad = bad_rt;
  const double buf[24] = {1};
  tarn_matrix *out = NULL;
  assert_int_equal(tarn_matrix_zeros(bad, 6, 4, 2, 2, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_fill(bad, 6, 4, 2, 2, 0.0, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_fill(bad, 6, 4, 2, 2, 1.5, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_rand(bad, 6, 4, 2, 2, 3, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_buffer(bad, 6, 4, 2, 2, buf, 6, &out),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_file(bad, saved_npy, 2, 2, &out),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_open_file(bad, saved_npy, 2, 2, &out),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_create_file(bad, made_npy, 6, 4, 2, 2, &out),
                   TARN_EINVAL);
  /* refused before the disk is asked for the space (8 TiB: TARN_ENOSPC
   * where the file system claims space up front) */
  assert_int_equal(tarn_matrix_create_file(bad, made_npy, (size_t)1 << 20,
                                           (size_t)1 << 20, 1024, 1024, &out),
                   TARN_EINVAL);
  assert_int_equal(access(made_npy, F_OK), -1); /* no file made */
  assert_null(out);
}

/* The constructors refuse a runtime already destroyed (kept from the
 * heap, dead_handles.h) and memory that never held one, which they leave
 * as it was. */
static void constructors_refuse_a_runtime_that_is_not_live(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(1, 0);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 6, 4, 2, 2, 3, &a), 0);
  snprintf(saved_npy, sizeof saved_npy, "/tmp/tarn-test-saved-%ld.npy",
           (long)getpid());
  snprintf(made_npy, sizeof made_npy, "/tmp/tarn-test-made-%ld.npy",
           (long)getpid());
  assert_int_equal(tarn_matrix_to_file(a, saved_npy), 0);
  tarn_matrix_destroy(a);
  tarn_rt *gone = test_rt(1, 0);
  test_keep_when_freed(gone);
  assert_int_equal(tarn_rt_destroy(gone), 0);
  assert_true(test_was_freed());
  constructors_refuse(gone);
  test_free_kept(gone);
  test_each_junk(constructors_refuse);
  assert_int_equal(unlink(saved_npy), 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_operation_matches_a_serial_loop),
      cmocka_unit_test(spilled_tiles_give_the_same_results),
      cmocka_unit_test(operations_refuse_a_limit_below_one_task),
      cmocka_unit_test(a_retile_into_small_tiles_goes_in_blocks),
      cmocka_unit_test(a_triangle_retile_touches_only_its_tiles),
      cmocka_unit_test(constants_and_zeros),
      cmocka_unit_test(random_values_depend_on_the_element_alone),
      cmocka_unit_test(a_copy_keeps_every_bit),
      cmocka_unit_test(zeros_cost_nothing_until_used),
      cmocka_unit_test(bad_input_is_refused),
      cmocka_unit_test(an_apply_kernel_failure_reaches_the_region),
      cmocka_unit_test(bad_apply_input_is_refused),
      cmocka_unit_test(destroyed_matrices_and_junk_are_refused),
      cmocka_unit_test(a_destroyed_matrix_is_refused),
      cmocka_unit_test(constructors_refuse_a_runtime_that_is_not_live),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
