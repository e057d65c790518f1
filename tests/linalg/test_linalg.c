/* test_linalg.c: tiled gemm, gemv and Cholesky against OpenBLAS/LAPACKE on the
 * whole matrix: gemm for the four transpose combinations on sizes that are
 * and are not multiples of the tile, one tile and many, tiles large enough
 * to be shared with idle workers, rectangular, A as
 * both operands, beta 0 over NaNs; gemv against cblas_dgemv, both
 * orientations, a short y in lanes and a long one by tiles, also under a
 * memory limit that spills, and columns of two refused; Cholesky by its scaled
 * residual, the order of a failing leading minor, bad shapes refused, and a run
 * under a memory limit smaller than the matrix that spills and gives the same
 * bits; tiles large enough to be factored by blocks with their work
 * shared (1 to 3 workers), and failing minors inside such tiles; the solve
 * with a Cholesky factor by its residual (the factor unchanged, also from
 * several threads at once), a zero on the factor's diagonal and bad
 * shapes refused with B unchanged, and the same bits under the limit.
 * Every linalg call that waits refuses to run in a task (TARN_EDEADLK),
 * and every one refuses a destroyed matrix. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "destroyed.h"
#include "rt/rt_internal.h"
#include "support.h"
#include "tarn.h"

/* ---- gemm --------------------------------------------------------------- */

/* Checks C = alpha op(A) op(B) + beta C0 for one shape: M x N x K, tiles
 * of A mb x nb in A's own orientation, B's tiles chosen to match. */
static void check_gemm(tarn_rt *rt, size_t m, size_t n, size_t k, size_t t1,
                       size_t t2, size_t t3, tarn_trans ta, tarn_trans tb,
                       bool given) {
  bool tra = ta == TARN_TRANS, trb = tb == TARN_TRANS;
  /* op(A): m x k tiles t1 x t2; op(B): k x n tiles t2 x t3. */
  size_t ar = tra ? k : m, ac = tra ? m : k, amb = tra ? t2 : t1,
         anb = tra ? t1 : t2;
  size_t br = trb ? n : k, bc = trb ? k : n, bmb = trb ? t3 : t2,
         bnb = trb ? t2 : t3;
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, ar, ac, amb, anb, 11, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, br, bc, bmb, bnb, 12, &b), 0);
  double alpha = 1.5, beta = given ? -0.75 : 0.0;
  if (given) assert_int_equal(tarn_matrix_rand(rt, m, n, t1, t3, 13, &c), 0);
  double *x = test_buffer_of(a), *y = test_buffer_of(b);
  double *ref = calloc(m * n, sizeof *ref);
  assert_non_null(ref);
  if (given) assert_int_equal(tarn_matrix_to_buffer(c, ref, m), 0);
  double c0 = test_fro(ref, m * n);
  assert_int_equal(tarn_matrix_gemm(a, ta, b, tb, alpha, beta, &c), 0);
  assert_int_equal(tarn_matrix_rows(c), m);
  assert_int_equal(tarn_matrix_cols(c), n);
  cblas_dgemm(CblasColMajor, tra ? CblasTrans : CblasNoTrans,
              trb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, x,
              (int)ar, y, (int)br, beta, ref, (int)m);
  double *z = test_buffer_of(c);
  for (size_t q = 0; q < m * n; q++) z[q] -= ref[q];
  double bound = (fabs(alpha) * test_fro(x, ar * ac) * test_fro(y, br * bc) +
                  fabs(beta) * c0) *
                 (double)(k + 2) * DBL_EPSILON;
  double r = test_fro(z, m * n) / bound;
  if (!(r < 10))
    print_error("gemm %zux%zux%zu tiles %zu,%zu,%zu ta %d tb %d: %g\n", m, n, k,
                t1, t2, t3, ta, tb, r);
  assert_true(r < 10);
  free(x);
  free(y);
  free(z);
  free(ref);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
}

static const size_t gemm_shapes[][6] = {
    /* m, n, k, tile m, tile k, tile n */
    {1, 1, 1, 1, 1, 1},
    {8, 8, 8, 8, 8, 8},
    {7, 5, 3, 16, 16, 16},
    {64, 48, 32, 16, 16, 16},
    {37, 29, 41, 8, 6, 5},
    {50, 3, 70, 7, 9, 2},
    {3, 50, 20, 2, 20, 11},
    {33, 33, 33, 32, 32, 32},
    /* tiles large enough to be shared: by columns, and by rows (C at
     * least twice as tall as wide) */
    {300, 200, 150, 300, 150, 200},
    {130, 400, 90, 130, 45, 400},
    {420, 150, 100, 420, 100, 150},
    /* matrix-vector products: one tile, shared in halves of its rows */
    {300, 1, 300, 300, 300, 1},
    /* one task per layer of a y of two tiles (fewer than the three
     * workers), split in lanes of columns with idle workers */
    {200, 1, 500, 100, 500, 1},
    /* three tiles of y, as many as the workers: a task per tile (test_gemv
     * has them in lanes with four workers) */
    {1000, 1, 900, 400, 300, 1},
    /* each in lanes one way, and with too few columns for three lanes
     * (8 each at least) the other: two dot products, and two columns */
    {2, 1, 40000, 1, 40000, 1},
    {80000, 1, 2, 40000, 2, 1},
    {1, 1, 40000, 1, 40000, 1}, /* one dot product: one tile */
    /* and one task per tile of a longer y */
    {1300, 1, 700, 300, 350, 1},
    /* C of fewer tiles than twice the workers, K of many: each tile's
     * layers in groups side by side, summed into it (6 groups of one
     * tile, 3 of two tiles with a short last layer, 2 of four tiles) */
    {20, 30, 400, 20, 16, 30},
    {40, 35, 301, 20, 32, 35},
    {64, 64, 100, 32, 8, 32},
};

static void test_gemm_transposes(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int given = 0; given < 2; given++) {
          const size_t *g = gemm_shapes[s];
          check_gemm(rt, g[0], g[1], g[2], g[3], g[4], g[5], (tarn_trans)ta,
                     (tarn_trans)tb, given);
        }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A as both operands: A A^T and A^T A, the same tile read twice by a task
 * (merged refs). */
static void test_gemm_same_operand(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t m = 23, n = 17;
  tarn_matrix *a = NULL, *c = NULL, *d = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, 5, 5, 3, &a), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, a, TARN_TRANS, 1.0, 0.0, &c), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_TRANS, a, TARN_NO_TRANS, 1.0, 0.0, &d), 0);
  double *x = test_buffer_of(a), *zc = test_buffer_of(c),
         *zd = test_buffer_of(d);
  double *rc = malloc(m * m * sizeof *rc), *rd = malloc(n * n * sizeof *rd);
  assert_non_null(rc);
  assert_non_null(rd);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m, (int)m, (int)n,
              1.0, x, (int)m, x, (int)m, 0.0, rc, (int)m);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, x, (int)m, x, (int)m, 0.0, rd, (int)n);
  double na = test_fro(x, m * n);
  for (size_t q = 0; q < m * m; q++) zc[q] -= rc[q];
  for (size_t q = 0; q < n * n; q++) zd[q] -= rd[q];
  assert_true(test_fro(zc, m * m) / (na * na * (double)n * DBL_EPSILON) < 10);
  assert_true(test_fro(zd, n * n) / (na * na * (double)m * DBL_EPSILON) < 10);
  free(x);
  free(zc);
  free(zd);
  free(rc);
  free(rd);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(c);
  tarn_matrix_destroy(d);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* beta 0 does not read C: NaNs there vanish. */
/* y = op(A) x with beta 0 over a given y of NaNs, A (m x n in mb x nb
 * tiles) of twos and x of halves: every element of y is K exactly, the
 * task or group that writes y first reading none of it. */
static void check_gemv_over_nans(tarn_rt *rt, size_t m, size_t n, size_t mb,
                                 size_t nb, tarn_trans ta) {
  bool t = ta == TARN_TRANS;
  size_t k = t ? m : n, rows = t ? n : m;
  tarn_matrix *a = NULL, *x = NULL, *y = NULL;
  assert_int_equal(tarn_matrix_fill(rt, m, n, mb, nb, 2.0, &a), 0);
  assert_int_equal(tarn_matrix_fill(rt, k, 1, t ? mb : nb, 1, 0.5, &x), 0);
  assert_int_equal(tarn_matrix_fill(rt, rows, 1, t ? nb : mb, 1, NAN, &y), 0);
  assert_int_equal(tarn_matrix_gemv(a, ta, x, 1.0, 0.0, &y), 0);
  double *z = test_buffer_of(y);
  for (size_t q = 0; q < rows; q++) assert_true(z[q] == (double)k);
  free(z);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(y);
}

static void test_gemm_beta_zero(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 9, 6, 4, 4, 2.0, &a), 0);
  assert_int_equal(tarn_matrix_fill(rt, 6, 7, 4, 3, 0.5, &b), 0);
  assert_int_equal(tarn_matrix_fill(rt, 9, 7, 4, 3, NAN, &c), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, &c), 0);
  double *z = test_buffer_of(c);
  for (size_t q = 0; q < 9 * 7; q++) assert_true(z[q] == 6.0);
  free(z);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  /* and for y = A x in blocks of small tiles whose groups' first block
   * writes y (4 x 4000 in tiles of 4 x 16: 250 tiles of K) */
  check_gemv_over_nans(rt, 4, 4000, 4, 16, TARN_NO_TRANS);
  /* and for y = A^T x in tiles too large for blocks, its chain in groups
   * whose first writes y (4096 x 300 in tiles of 256 x 300: 16 of K) */
  check_gemv_over_nans(rt, 4096, 300, 256, 300, TARN_TRANS);
  /* x^T x as A^T x with A = x: a block's tiles of A and of x are the
   * same refs (3000 x 1 in tiles of 16: 188 tiles of K) */
  assert_int_equal(tarn_matrix_rand(rt, 3000, 1, 16, 1, 5, &a), 0);
  c = NULL;
  assert_int_equal(tarn_matrix_gemv(a, TARN_TRANS, a, 1.0, 0.0, &c), 0);
  z = test_buffer_of(a);
  double *dot = test_buffer_of(c), want = cblas_ddot(3000, z, 1, z, 1);
  assert_true(fabs(dot[0] - want) <= 3002 * DBL_EPSILON * want);
  free(z);
  free(dot);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(c);
  /* and for a C whose layers go in groups (one tile, 25 layers) */
  a = b = c = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 6, 200, 6, 8, 2.0, &a), 0);
  assert_int_equal(tarn_matrix_fill(rt, 200, 5, 8, 5, 0.5, &b), 0);
  assert_int_equal(tarn_matrix_fill(rt, 6, 5, 6, 5, NAN, &c), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, &c), 0);
  z = test_buffer_of(c);
  for (size_t q = 0; q < 6 * 5; q++) assert_true(z[q] == 200.0);
  free(z);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  /* The same for matrix-vector products, both orientations of A, on one
   * tile (whole, in halves, in calls without OpenBLAS's lock), three small
   * tiles, and two in lanes: y = A x with y all NaN, x all 0.5. */
  static const size_t shapes[][3] = {{9, 6, 4},
                                     {300, 300, 300},
                                     {3, 20000, 3},
                                     {600, 600, 300},
                                     {250, 200, 250}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++) {
      size_t m = shapes[s][0], k = shapes[s][1], t = shapes[s][2];
      tarn_matrix *x = NULL, *y = NULL;
      assert_int_equal(tarn_matrix_fill(rt, ta ? k : m, ta ? m : k, ta ? k : t,
                                        ta ? t : k, 2.0, &a),
                       0);
      assert_int_equal(tarn_matrix_fill(rt, k, 1, k, 1, 0.5, &x), 0);
      assert_int_equal(tarn_matrix_fill(rt, m, 1, t, 1, NAN, &y), 0);
      assert_int_equal(tarn_matrix_gemv(a, (tarn_trans)ta, x, 1.0, 0.0, &y), 0);
      double *v = test_buffer_of(y);
      for (size_t q = 0; q < m; q++) assert_true(v[q] == (double)k);
      free(v);
      tarn_matrix_destroy(a);
      tarn_matrix_destroy(x);
      tarn_matrix_destroy(y);
    }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* alpha 0 is BLAS's quick return: C = beta C to the bit, A and B never
 * read (all NaN here; then A's writer failed). On shapes whose products
 * go in groups (5 x 5 x 40 in tiles of 4 on 3 workers) or lanes (y of 4
 * over 1000 in tiles of 8) the -0s of C became +0 (the groups' +0
 * temporaries added in), and a failed A cancelled C. */
static void check_alpha_zero(tarn_rt *rt, size_t m, size_t n, size_t k,
                             size_t t) {
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_fill(rt, m, k, t, t, NAN, &a), 0);
  assert_int_equal(tarn_matrix_fill(rt, k, n, t, t, NAN, &b), 0);
  static const double alphas[] = {0.0, -0.0}, betas[] = {1.0, -2.0, 0.0};
  for (int s = 0; s < 2; s++)
    for (int u = 0; u < 3; u++) {
      double beta = betas[u];
      double *before = test_random_matrix(m, n, 1.0, 7);
      for (size_t q = 0; q < m * n; q += 3) before[q] = -0.0;
      assert_int_equal(tarn_matrix_from_buffer(rt, m, n, t, t, before, m, &c),
                       0);
      assert_int_equal(tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS,
                                        alphas[s], beta, &c),
                       0);
      double *after = test_buffer_of(c);
      for (size_t q = 0; q < m * n; q++) {
        double want = beta == 0.0 ? 0.0 : beta * before[q];
        if (memcmp(&after[q], &want, sizeof want) != 0)
          fail_msg("%zu x %zu x %zu, alpha %g, beta %g: C[%zu] %a, not %a", m,
                   n, k, alphas[s], beta, q, after[q], want);
      }
      free(before);
      free(after);
      tarn_matrix_destroy(c);
      c = NULL;
    }
  /* a new C: zeros, whatever beta */
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 0.0, 5.0, &c), 0);
  double sum = 1.0;
  assert_int_equal(tarn_matrix_sum(c, &sum), 0);
  assert_true(sum == 0.0 && !signbit(sum));
  tarn_matrix_destroy(c);
  /* A's writer failed: C is still beta C */
  test_fail_first_tile(rt, a);
  assert_int_equal(tarn_matrix_fill(rt, m, n, t, t, 3.0, &c), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 0.0, 1.0, &c), 0);
  assert_int_equal(tarn_matrix_sum(c, &sum), 0);
  assert_true(sum == 3.0 * (double)(m * n));
  TEST_DESTROY_MATRICES(a, b, c);
}

static void test_gemm_alpha_zero(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  check_alpha_zero(rt, 5, 5, 40, 4);   /* groups */
  check_alpha_zero(rt, 4, 1, 1000, 8); /* a product with x: gemv's */
  check_alpha_zero(rt, 30, 30, 500, 16);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* y = alpha op(A) x + beta y0 against cblas_dgemv on the whole matrix:
 * op(A) m x k in tiles t1 x t2, x and y of one column. */
static void check_gemv(tarn_rt *rt, size_t m, size_t k, size_t t1, size_t t2,
                       tarn_trans ta, bool given) {
  bool tra = ta == TARN_TRANS;
  size_t ar = tra ? k : m, ac = tra ? m : k;
  tarn_matrix *a = NULL, *x = NULL, *y = NULL;
  assert_int_equal(
      tarn_matrix_rand(rt, ar, ac, tra ? t2 : t1, tra ? t1 : t2, 21, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, k, 1, t2, 1, 22, &x), 0);
  double alpha = -1.25, beta = given ? 0.5 : 0.0;
  if (given) assert_int_equal(tarn_matrix_rand(rt, m, 1, t1, 1, 23, &y), 0);
  double *av = test_buffer_of(a), *xv = test_buffer_of(x);
  double *ref = calloc(m, sizeof *ref);
  assert_non_null(ref);
  if (given) assert_int_equal(tarn_matrix_to_buffer(y, ref, m), 0);
  double y0 = test_fro(ref, m);
  assert_int_equal(tarn_matrix_gemv(a, ta, x, alpha, beta, &y), 0);
  assert_int_equal(tarn_matrix_rows(y), m);
  assert_int_equal(tarn_matrix_cols(y), 1);
  cblas_dgemv(CblasColMajor, tra ? CblasTrans : CblasNoTrans, (int)ar, (int)ac,
              alpha, av, (int)ar, xv, 1, beta, ref, 1);
  double *z = test_buffer_of(y);
  for (size_t i = 0; i < m; i++) z[i] -= ref[i];
  double bound = (fabs(alpha) * test_fro(av, ar * ac) * test_fro(xv, k) +
                  fabs(beta) * y0) *
                 (double)(k + 2) * DBL_EPSILON;
  assert_true(test_fro(z, m) / bound < 10);
  free(av);
  free(xv);
  free(z);
  free(ref);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(y);
}

/* gemv for both orientations of A, into a new and a given column, on one
 * tile, many, and sizes that are not multiples of the tile; bad columns
 * refused. */
static void test_gemv(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t shapes[][4] = {
      /* m, k, tile m, tile k */
      {1, 1, 1, 1},
      {9, 9, 9, 9},
      {37, 41, 8, 6},
      {50, 70, 7, 9},
      {300, 300, 300, 300},
      {200, 500, 100, 500},
      {1000, 900, 400, 300},
      {80000, 2, 40000, 2},
      {1300, 700, 300, 350},
      /* one tile small enough for dgemv calls that skip OpenBLAS's lock */
      {256, 256, 256, 256},
      {250, 200, 250, 200},
      /* small tiles: a task per block of tiles of y and of K; a long K's
       * blocks in groups side by side, their temporaries summed into y
       * (one tile of y: 188 tiles of K in 6 blocks, 3 groups; 100 in 4
       * blocks, 2 groups), y of many tiles (188) and of some (14) */
      {20, 3000, 20, 16},
      {100, 5000, 100, 50},
      {3000, 40, 16, 20},
      {700, 900, 50, 60},
      /* tiles too large for blocks, y of fewer tiles than the workers (3)
       * over a long K: each tile's chain in groups (one tile of y, 12 of
       * K: 6 groups; two of y, 8 of K: 2 groups each) */
      {300, 3000, 300, 250},
      {600, 2000, 300, 250},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int given = 0; given < 2; given++)
        check_gemv(rt, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                   (tarn_trans)ta, given);
  /* a y of three tiles: with four workers a task per layer in lanes, with
   * one a task per tile; and blocks of small tiles with one worker (no
   * groups) and four */
  for (unsigned w = 1; w <= 4; w += 3) {
    tarn_rt *rw = test_rt(w, 0);
    for (int ta = 0; ta < 2; ta++) {
      check_gemv(rw, 1000, 900, 400, 300, (tarn_trans)ta, ta == 1);
      check_gemv(rw, 40, 3000, 20, 16, (tarn_trans)ta, ta == 0);
    }
    assert_int_equal(tarn_rt_destroy(rw), 0);
  }
  tarn_matrix *a = NULL, *x = NULL, *x2 = NULL, *y2 = NULL, *y = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 8, 6, 4, 3, 1, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 1, 3, 1, 2, &x), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 2, 3, 1, 3, &x2), 0);
  assert_int_equal(tarn_matrix_zeros(rt, 8, 2, 4, 1, &y2), 0);
  tarn_trans no = TARN_NO_TRANS;
  assert_int_equal(tarn_matrix_gemv(a, no, x2, 1, 0, &y), TARN_EINVAL);
  assert_null(y);
  assert_int_equal(tarn_matrix_gemv(a, no, x, 1, 0, &y2), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(a, no, NULL, 1, 0, &y), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(a, no, x, 1, 0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(NULL, no, x, 1, 0, &y), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(a, TARN_TRANS, x, 1, 0, &y),
                   TARN_EINVAL); /* A^T is 6 x 8 */
  assert_null(y);
  double sum = -1;
  assert_int_equal(tarn_matrix_sum(y2, &sum), 0);
  assert_true(sum == 0); /* the refused call left y2 alone */
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(x2);
  tarn_matrix_destroy(y2);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void test_gemm_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0), *rt2 = test_rt(3, 0);
  tarn_matrix *a = NULL, *b = NULL, *c = NULL, *other = NULL, *wrong = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 8, 6, 4, 3, 1, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 5, 3, 5, 2, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt2, 6, 5, 3, 5, 2, &other), 0);
  tarn_trans no = TARN_NO_TRANS, tr = TARN_TRANS;
  /* K differs */
  assert_int_equal(tarn_matrix_gemm(a, tr, b, no, 1, 0, &c), TARN_EINVAL);
  assert_null(c);
  /* K tiling differs */
  tarn_matrix *b2 = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 6, 5, 2, 5, 2, &b2), 0);
  assert_int_equal(tarn_matrix_gemm(a, no, b2, no, 1, 0, &c), TARN_EINVAL);
  assert_null(c);
  /* other runtime */
  assert_int_equal(tarn_matrix_gemm(a, no, other, no, 1, 0, &c), TARN_EINVAL);
  /* bad trans, NULLs */
  assert_int_equal(tarn_matrix_gemm(a, (tarn_trans)7, b, no, 1, 0, &c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemm(NULL, no, b, no, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemm(a, no, NULL, no, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemm(a, no, b, no, 1, 0, NULL), TARN_EINVAL);
  /* given C: wrong shape, wrong tiling, aliasing an operand */
  assert_int_equal(tarn_matrix_zeros(rt, 8, 6, 4, 5, &wrong), 0);
  assert_int_equal(tarn_matrix_gemm(a, no, b, no, 1, 0, &wrong), TARN_EINVAL);
  tarn_matrix_destroy(wrong);
  wrong = NULL;
  assert_int_equal(tarn_matrix_zeros(rt, 8, 5, 4, 3, &wrong), 0);
  assert_int_equal(tarn_matrix_gemm(a, no, b, no, 1, 0, &wrong), TARN_EINVAL);
  tarn_matrix *sq = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 6, 6, 3, 3, 4, &sq), 0);
  tarn_matrix *alias = sq;
  assert_int_equal(tarn_matrix_gemm(sq, no, sq, no, 1, 1, &alias), TARN_EINVAL);
  /* and the good call still works */
  assert_int_equal(tarn_matrix_gemm(a, no, b, no, 1, 0, &c), 0);
  assert_int_equal(tarn_matrix_rows(c), 8);
  assert_int_equal(tarn_matrix_cols(c), 5);
  assert_int_equal(tarn_matrix_tile_rows(c), 4);
  assert_int_equal(tarn_matrix_tile_cols(c), 5);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(b2);
  tarn_matrix_destroy(c);
  tarn_matrix_destroy(sq);
  tarn_matrix_destroy(wrong);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(tarn_rt_destroy(rt2), 0);
}

/* ---- Cholesky ----------------------------------------------------------- */

/* An SPD matrix G G^T + n I in a buffer (G of splitmix-like numbers). */
static double *spd(size_t n, uint64_t seed) {
  double *g = malloc(n * n * sizeof *g), *a = calloc(n * n, sizeof *a);
  assert_non_null(g);
  assert_non_null(a);
  uint64_t x = seed * 0x9e3779b97f4a7c15u + 1;
  for (size_t k = 0; k < n * n; k++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    g[k] = (double)(x >> 11) * 0x1.0p-53 - 0.5;
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
              1.0, g, (int)n, g, (int)n, 0.0, a, (int)n);
  for (size_t i = 0; i < n; i++) a[i + i * n] += (double)n;
  free(g);
  return a;
}

/* ||A - L L^T||_F / (n ||A||_F eps), L the lower triangle of `f`; also
 * checks that the strictly upper triangle of f is A's. */
static double chol_residual(const double *a, const double *f, size_t n) {
  double *l = calloc(n * n, sizeof *l), *r = malloc(n * n * sizeof *r);
  assert_non_null(l);
  assert_non_null(r);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      if (i >= j)
        l[i + j * n] = f[i + j * n];
      else
        assert_true(f[i + j * n] == a[i + j * n]);
    }
  memcpy(r, a, n * n * sizeof *r);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
              -1.0, l, (int)n, l, (int)n, 1.0, r, (int)n);
  double res =
      test_fro(r, n * n) / ((double)n * test_fro(a, n * n) * DBL_EPSILON);
  free(l);
  free(r);
  return res;
}

static double *factor(tarn_rt *rt, const double *a, size_t n, size_t nb) {
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky(m, &info), 0);
  assert_int_equal(info, 0);
  double *f = test_buffer_of(m);
  tarn_matrix_destroy(m);
  return f;
}

static void test_cholesky_sizes(void **state) {
  (void)state;
  static const size_t sizes[][2] = {{1, 1},   {8, 8},   {10, 16}, {64, 16},
                                    {70, 16}, {33, 8},  {50, 7},  {12, 1},
                                    {96, 32}, {100, 33}};
  tarn_rt *rt = test_rt(3, 0);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s][0], nb = sizes[s][1];
    double *a = spd(n, s + 1);
    double *f = factor(rt, a, n, nb);
    double r = chol_residual(a, f, n);
    if (!(r < 10)) print_error("cholesky n %zu nb %zu: %g\n", n, nb, r);
    assert_true(r < 10);
    free(a);
    free(f);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Chained without waiting: A = G G^T by tarn's gemm, copied, then
 * factored; G is n x 2n of full rank, so A is positive definite. */
static void test_cholesky_after_gemm(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 45, nb = 10;
  tarn_matrix *g = NULL, *a = NULL, *copy = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, 2 * n, nb, nb, 5, &g), 0);
  assert_int_equal(
      tarn_matrix_gemm(g, TARN_NO_TRANS, g, TARN_TRANS, 1.0, 0.0, &a), 0);
  assert_int_equal(tarn_matrix_copy(a, &copy), 0);
  double *x = test_buffer_of(copy);
  assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
  double *f = test_buffer_of(a);
  assert_true(chol_residual(x, f, n) < 10);
  free(x);
  free(f);
  tarn_matrix_destroy(g);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(copy);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The identity with one negative diagonal element at p: the leading
 * minor of order p + 1 is the first that is not positive definite. */
static void test_cholesky_not_spd(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][3] = {
      {20, 6, 0}, {20, 6, 3}, {20, 6, 13}, {20, 6, 19}, {5, 5, 2}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    size_t n = cases[s][0], nb = cases[s][1], p = cases[s][2];
    double *a = calloc(n * n, sizeof *a);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++) a[i + i * n] = i == p ? -1.0 : 1.0;
    tarn_matrix *m = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
    int info = 0;
    assert_int_equal(tarn_matrix_cholesky(m, &info), TARN_EINVAL);
    assert_int_equal(info, (int)(p + 1));
    /* the runtime goes on: later work on the matrix runs */
    tarn_matrix *ok = NULL;
    assert_int_equal(tarn_matrix_fill(rt, n, n, nb, nb, 0.0, &ok), 0);
    double v = -1;
    assert_int_equal(tarn_matrix_get(ok, n - 1, n - 1, &v), 0);
    assert_true(v == 0.0);
    tarn_matrix_destroy(ok);
    tarn_matrix_destroy(m);
    free(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Tiles large enough to be factored by blocks of columns (potrf on the
 * diagonal block, trsm and syrk shared with idle workers): one tile and
 * several, with 1, 2 and 3 workers. */
static void test_cholesky_large_tiles(void **state) {
  (void)state;
  static const size_t sizes[][2] = {
      {300, 300}, {513, 513}, {700, 700}, {700, 300}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s][0], nb = sizes[s][1];
    double *a = spd(n, 40 + s);
    for (unsigned w = 1; w <= 3; w++) {
      tarn_rt *rt = test_rt(w, 0);
      double *f = factor(rt, a, n, nb);
      double r = chol_residual(a, f, n);
      if (!(r < 10))
        print_error("cholesky n %zu nb %zu workers %u: %g\n", n, nb, w, r);
      assert_true(r < 10);
      free(f);
      assert_int_equal(tarn_rt_destroy(rt), 0);
    }
    free(a);
  }
}

/* An SPD matrix whose diagonal element p is made -1: the leading minor of
 * order p + 1 is the first that is not positive definite, in the first,
 * a middle or the last block of a tile factored by blocks, or in a later
 * tile. */
static void test_cholesky_not_spd_blocked(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][3] = {
      {300, 300, 0},   {300, 300, 127}, {300, 300, 128}, {300, 300, 200},
      {300, 300, 299}, {700, 300, 450}, {700, 300, 699}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    size_t n = cases[s][0], nb = cases[s][1], p = cases[s][2];
    double *a = spd(n, 60 + s);
    a[p + p * n] = -1.0;
    tarn_matrix *m = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
    int info = 0;
    assert_int_equal(tarn_matrix_cholesky(m, &info), TARN_EINVAL);
    if (info != (int)(p + 1))
      print_error("not spd n %zu nb %zu p %zu: info %d\n", n, nb, p, info);
    assert_int_equal(info, (int)(p + 1));
    tarn_matrix_destroy(m);
    free(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* An SPD matrix with a NaN at (i, j) and (j, i), i >= j: LAPACK's
 * dpotrf reports the first NaN pivot, here column i's (L(i, j) is NaN, so
 * its pivot A(i, i) - sum L(i, k)^2 is), as not positive definite; the
 * call fails instead of leaving an L of NaNs. One tile below and above
 * the size factored by blocks, and several tiles. NaNs in the upper
 * triangle alone change nothing. */
static void test_cholesky_nan(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][4] = {{20, 20, 0, 0},       {20, 20, 13, 4},
                                    {20, 6, 13, 13},      {20, 6, 19, 2},
                                    {300, 300, 0, 0},     {300, 300, 127, 5},
                                    {300, 300, 200, 200}, {300, 300, 299, 130},
                                    {700, 300, 450, 20},  {700, 300, 699, 699}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
    size_t n = cases[s][0], nb = cases[s][1], i = cases[s][2], j = cases[s][3];
    double *a = spd(n, 80 + s);
    a[i + j * n] = NAN;
    a[j + i * n] = NAN;
    tarn_matrix *m = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
    int info = 0;
    int rc = tarn_matrix_cholesky(m, &info);
    if (rc != TARN_EINVAL || info != (int)(i + 1))
      print_error("nan n %zu nb %zu at (%zu, %zu): rc %d info %d\n", n, nb, i,
                  j, rc, info);
    assert_int_equal(rc, TARN_EINVAL);
    assert_int_equal(info, (int)(i + 1));
    tarn_matrix_destroy(m);
    free(a);
  }
  /* NaNs in the strictly upper triangle only: not read, so no failure
   * and no NaN in L (a check of the whole tile would fail here). */
  static const size_t upper[][2] = {{20, 20}, {20, 6}, {300, 300}, {700, 300}};
  for (size_t s = 0; s < sizeof upper / sizeof upper[0]; s++) {
    size_t n = upper[s][0], nb = upper[s][1];
    double *a = spd(n, 90 + s);
    for (size_t j = 1; j < n; j++)
      for (size_t i = 0; i < j; i++) a[i + j * n] = NAN;
    double *f = factor(rt, a, n, nb); /* status 0, info 0 */
    for (size_t j = 0; j < n; j++)
      for (size_t i = j; i < n; i++) assert_false(isnan(f[i + j * n]));
    free(f);
    free(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void test_cholesky_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *a = NULL, *b = NULL;
  int info = 5;
  assert_int_equal(tarn_matrix_cholesky(NULL, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_rand(rt, 8, 6, 2, 2, 1, &a), 0);
  assert_int_equal(tarn_matrix_cholesky(a, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_rand(rt, 8, 8, 4, 2, 1, &b), 0);
  assert_int_equal(tarn_matrix_cholesky(b, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* X for the n x nrhs right-hand sides of seed `seed` (column tiles cb),
 * solved with the factor f (n x n, tiles nb) by tarn_matrix_cholesky_solve;
 * the right-hand sides go to *rhs. Checks that the factor is unchanged. */
static double *chol_solve(tarn_rt *rt, const double *f, size_t n, size_t nb,
                          size_t nrhs, size_t cb, uint64_t seed, double **rhs) {
  tarn_matrix *l = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, f, n, &l), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, cb, seed, &b), 0);
  *rhs = test_buffer_of(b);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky_solve(l, b, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b);
  test_matrix_holds(l, f);
  tarn_matrix_destroy(l);
  tarn_matrix_destroy(b);
  return x;
}

/* The SPD matrix of `seed` (n x n in nb tiles) factored and solved for
 * 40 right-hand sides (column tiles of cb) without a limit and under
 * `limit` (`workers` each): under the limit tiles spill, never more than
 * `limit` resident, and the factor and X have the bits of the run
 * without it (each tile sees the same kernels in the same order whatever
 * the schedule); the residuals. Returns A (the caller's to free) and the
 * factor in *f. */
static double *check_cholesky_under_limit(size_t n, size_t nb, size_t cb,
                                          size_t limit, unsigned workers,
                                          uint64_t seed, double **f) {
  double *a = spd(n, seed), *rhs0 = NULL, *rhs1 = NULL;
  tarn_rt *rt = test_rt(workers, 0);
  double *f0 = factor(rt, a, n, nb);
  double *x0 = chol_solve(rt, f0, n, nb, 40, cb, seed - 1, &rhs0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  rt = test_rt(workers, limit);
  double *f1 = factor(rt, a, n, nb);
  double *x1 = chol_solve(rt, f1, n, nb, 40, cb, seed - 1, &rhs1);
  test_rt_destroy_spilled(rt, limit);
  assert_true(chol_residual(a, f1, n) < 10);
  assert_memory_equal(f0, f1, n * n * sizeof *f0);
  assert_true(test_solve_residual(a, x1, rhs1, n, 40) < 20);
  assert_memory_equal(x0, x1, n * 40 * sizeof *x0);
  free(f1);
  free(x0);
  free(x1);
  free(rhs0);
  free(rhs1);
  *f = f0;
  return a;
}

/* Under a memory limit of a quarter of the matrix. */
static void test_cholesky_mem_limit(void **state) {
  (void)state;
  double *f = NULL, *a = check_cholesky_under_limit(
                        256, 32, 16, 256 * 256 * sizeof(double) / 4, 3, 99, &f);
  free(a);
  free(f);
}

/* A limit of exactly Cholesky's largest task, a gemm's three tiles (64 x
 * 64 doubles, 96 KiB; A 256 x 256, 512 KiB), is enough: the factor has
 * the bits of a run without a limit, spilling, and a solve whose largest
 * task fits (B in tiles of 64 x 40) solves. A page less, and
 * tarn_matrix_cholesky refuses with TARN_ENOMEM before any task, A
 * unchanged and readable (a gemm that could never run would have failed
 * part-way and left A cancelled); so do the Cholesky and triangular solves
 * under the three tiles when B's tiles make their largest task larger
 * (64 x 80: the factor's diagonal tile and two of B, 112 KiB), B
 * unchanged. */
static void test_limit_of_one_task(void **state) {
  (void)state;
  enum { N = 256, NB = 64 };
  size_t task = 3 * NB * NB * sizeof(double),
         page = (size_t)sysconf(_SC_PAGESIZE);
  double *f0 = NULL,
         *a = check_cholesky_under_limit(N, NB, 40, task, 2, 97, &f0);
  for (unsigned workers = 1; workers <= 2; workers++) {
    tarn_rt *rt = test_rt(workers, task - page);
    tarn_matrix *m = NULL, *l = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, N, &m), 0);
    int info = -1;
    assert_int_equal(tarn_matrix_cholesky(m, &info), TARN_ENOMEM);
    assert_int_equal(info, 0);
    test_matrix_holds(m, a);
    tarn_matrix_destroy(m);
    assert_int_equal(tarn_rt_destroy(rt), 0);
    rt = test_rt(workers, task);
    assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, f0, N, &l), 0);
    assert_int_equal(tarn_matrix_rand(rt, N, 80, NB, 80, 95, &b), 0);
    double *b0 = test_buffer_of(b);
    assert_int_equal(tarn_matrix_cholesky_solve(l, b, &info), TARN_ENOMEM);
    assert_int_equal(tarn_matrix_triangular_solve(l, TARN_LOWER, TARN_NO_TRANS,
                                                  TARN_NON_UNIT, b, &info),
                     TARN_ENOMEM);
    test_matrix_holds(b, b0);
    free(b0);
    TEST_DESTROY_MATRICES(l, b);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  free(a);
  free(f0);
}

/* gemv under a memory limit of a quarter of A: tiles spill and come back,
 * the products still match dgemv on the whole matrix, for a y of two
 * tiles (fewer than the three workers) whose layers take under an eighth
 * of the limit (a task per layer, in lanes) or more (a task per tile), and
 * of nine (a task per tile). */
static void test_gemv_mem_limit(void **state) {
  (void)state;
  size_t n = 900;
  tarn_rt *rt = test_rt(3, n * n * sizeof(double) / 4);
  static const size_t tiles[][2] = {{450, 24}, {450, 100}, {100, 300}};
  for (size_t s = 0; s < 3; s++)
    for (int ta = 0; ta < 2; ta++)
      check_gemv(rt, n, n, tiles[s][0], tiles[s][1], (tarn_trans)ta, ta == 1);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_true(ps.resident_peak <= n * n * sizeof(double) / 4);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* gemv in blocks of small tiles under a limit of half of A (16384 x 64
 * in tiles of 32: 8 MiB, 1024 tiles), where a block's 32 tiles and its
 * groups' temporaries fit in an eighth of it: right both ways, spilled,
 * never past the limit. */
static void test_gemv_blocks_mem_limit(void **state) {
  (void)state;
  size_t bytes = 16384 * 64 * sizeof(double);
  tarn_rt *rt = test_rt(3, bytes / 2);
  for (int ta = 0; ta < 2; ta++)
    check_gemv(rt, ta ? 64 : 16384, ta ? 16384 : 64, 32, 32, (tarn_trans)ta,
               ta == 1);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_true(ps.resident_peak <= bytes / 2);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* gemv of tiny tiles under a limit of just under five pages, with three
 * workers: y = A x of 4 x 27 in 2 x 2 tiles (y has two tiles) is right.
 * A task of all of y pins five tiles of a page each (what the pool
 * charges, however few bytes they hold); counted in bytes, gemv chose it,
 * and the task, which could never fit, was tried again for ever. */
static void test_gemv_tiny_tiles_tight_limit(void **state) {
  (void)state;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  tarn_rt *rt = test_rt(3, 5 * page - 1);
  for (int ta = 0; ta < 2; ta++)
    for (int given = 0; given < 2; given++)
      check_gemv(rt, 4, 27, 2, 2, (tarn_trans)ta, given == 1);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* gemm under a memory limit that C does not fit in: the products are
 * right for every transpose, with tiles that do and do not divide the
 * sizes, resident bytes never pass the limit, and C goes by blocks that
 * stay resident while A's and B's tiles stream through (docs/linalg.md):
 * 384 x 384 x 384 in tiles of 32 under 512 KiB (64 tiles; C has 144) is
 * blocks of 5 x 4 tiles (20 with their layer of 9 in half the limit), 3
 * block rows by 3 block columns, so each tile of A is read back at most
 * once per block column and each tile of B once per block row: 864
 * tiles, where a C read back for every k (as before the blocks) read
 * 2,200 to 2,300. Twice as much is allowed for the runtime's order:
 * under ThreadSanitizer, whose slow workers run the layers further out of
 * order, it once read 1,422 (release runs read 779 to 921); without the
 * blocks, or without eviction by next use, it read 1,855 to 2,000. */
static void test_gemm_mem_limit(void **state) {
  (void)state;
  size_t limit = 512 * 1024;
  tarn_rt *rt = test_rt(3, limit);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      check_gemm(rt, 384, 384, 384, 32, 32, 32, (tarn_trans)ta, (tarn_trans)tb,
                 ta == tb);
      check_gemm(rt, 250, 270, 230, 24, 40, 32, (tarn_trans)ta, (tarn_trans)tb,
                 ta != tb);
      /* K of 4000 (A and B each over twice the limit): C's one tile in
       * groups of layers whose temporaries fit */
      check_gemm(rt, 40, 40, 4000, 40, 40, 40, (tarn_trans)ta, (tarn_trans)tb,
                 ta != tb);
    }
  tarn_matrix *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 384, 384, 32, 32, 21, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 384, 384, 32, 32, 22, &b), 0);
  uint64_t since = test_restores(rt);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, &c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  test_reads_within(rt, since, 864 * 2, limit, "gemm");
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A product's task pins a tile of C, one of op(A) and one of op(B) (one
 * of A, when A and B are the same matrix and the task reads that tile
 * twice: rule 1 of tarn/rt.h). Under exactly those tiles gemm (each
 * transpose, into a given C) and gemv are right, spilling; a page less,
 * each returns TARN_ENOMEM before any task, a given C or y unchanged and
 * a new one not made (each went ahead, and the task that could never fit
 * failed, leaving C cancelled). A^T A of a one-tile A runs under two
 * tiles; A A^T of more tiles needs three. */
static void test_product_limit_of_one_task(void **state) {
  (void)state;
  enum { N = 256, NB = 64 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t task = 3 * test_tile_charge(NB, NB);
  size_t vtask = test_tile_charge(NB, NB) + 2 * test_tile_charge(NB, 1);
  size_t limits[] = {task, vtask, 2 * test_tile_charge(NB, NB)};
  tarn_rt *rt = test_rt(2, limits[0]);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      check_gemm(rt, N, N, N, NB, NB, NB, (tarn_trans)ta, (tarn_trans)tb, true);
  test_rt_destroy_spilled(rt, limits[0]);
  rt = test_rt(2, limits[1]);
  for (int ta = 0; ta < 2; ta++)
    check_gemv(rt, N, N, NB, NB, (tarn_trans)ta, true);
  test_rt_destroy_spilled(rt, limits[1]);
  for (size_t l = 0; l < 3; l++)
    for (unsigned workers = 1; workers <= 2; workers++) {
      /* at the limit (A^T A of one tile; the others above), then a page
       * below it */
      for (int below = l < 2; below < 2; below++) {
        rt = test_rt(workers, limits[l] - (below ? page : 0));
        size_t n = l == 2 ? NB : N;
        tarn_matrix *a = NULL, *b = NULL, *c = NULL, *made = NULL;
        assert_int_equal(tarn_matrix_rand(rt, n, n, NB, NB, 30, &a), 0);
        assert_int_equal(
            tarn_matrix_rand(rt, n, l == 1 ? 1 : n, NB, NB, 31, &b), 0);
        assert_int_equal(
            tarn_matrix_rand(rt, n, l == 1 ? 1 : n, NB, NB, 32, &c), 0);
        double *c0 = test_buffer_of(c);
        int want = below ? TARN_ENOMEM : 0;
        tarn_matrix *rhs = l == 2 ? a : b;
        if (l == 1) {
          assert_int_equal(tarn_matrix_gemv(a, TARN_NO_TRANS, b, 1.0, 1.0, &c),
                           want);
          assert_int_equal(tarn_matrix_gemv(a, TARN_TRANS, b, 1.0, 0.0, &made),
                           want);
        } else {
          assert_int_equal(
              tarn_matrix_gemm(a, TARN_TRANS, rhs, TARN_NO_TRANS, 1.0, 1.0, &c),
              want);
          /* A A^T: a task reads two tiles of A (one, twice, on C's
           * diagonal when K is one tile) */
          assert_int_equal(tarn_matrix_gemm(a, TARN_NO_TRANS, a, TARN_TRANS,
                                            1.0, 0.0, &made),
                           want);
        }
        if (below) {
          assert_null(made);
          test_matrix_holds(c, c0);
        } else {
          /* A^T A + C0 and A A^T, as BLAS has them */
          double *x = test_buffer_of(a), *got = test_buffer_of(c),
                 *other = test_buffer_of(made);
          double bound =
              10 * (double)(n + 2) * DBL_EPSILON *
              (test_fro(x, n * n) * test_fro(x, n * n) + test_fro(c0, n * n));
          cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n,
                      (int)n, 1.0, x, (int)n, x, (int)n, 1.0, c0, (int)n);
          for (size_t q = 0; q < n * n; q++) got[q] -= c0[q];
          assert_true(test_fro(got, n * n) < bound);
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n,
                      (int)n, 1.0, x, (int)n, x, (int)n, 0.0, c0, (int)n);
          for (size_t q = 0; q < n * n; q++) other[q] -= c0[q];
          assert_true(test_fro(other, n * n) < bound);
          free(x);
          free(got);
          free(other);
        }
        free(c0);
        TEST_DESTROY_MATRICES(a, b, c, made);
        assert_int_equal(tarn_rt_destroy(rt), 0);
      }
    }
}

/* ---- solve with the Cholesky factor ----------------------------------------
 */

static void check_chol_solve(tarn_rt *rt, size_t n, size_t nb, size_t nrhs,
                             size_t cb, uint64_t seed) {
  double *a = spd(n, seed), *f = factor(rt, a, n, nb), *rhs = NULL;
  double *x = chol_solve(rt, f, n, nb, nrhs, cb, seed + 1, &rhs);
  double r = test_solve_residual(a, x, rhs, n, nrhs);
  if (!(r < 20))
    print_error("cholesky_solve n %zu nb %zu nrhs %zu cb %zu: %g\n", n, nb,
                nrhs, cb, r);
  assert_true(r < 20);
  free(a);
  free(f);
  free(rhs);
  free(x);
}

/* n x n products alone in regions of their own, `rounds` times, each
 * against dgemm: with the cores far apart such a product is its region's
 * last task and is split as near (linalg.c, FAR_SHARE_MIN_MADDS). */
static void check_gemm_alone(tarn_rt *rt, size_t n, int rounds) {
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, n, n, 21, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, n, n, n, 22, &b), 0);
  double *x = test_buffer_of(a), *y = test_buffer_of(b);
  double *ref = calloc(n * n, sizeof *ref);
  assert_non_null(ref);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n,
              1.0, x, (int)n, y, (int)n, 0.0, ref, (int)n);
  double bound =
      test_fro(x, n * n) * test_fro(y, n * n) * (double)(n + 2) * DBL_EPSILON;
  for (int i = 0; i < rounds; i++) {
    tarn_matrix *c = NULL;
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(
        tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, &c), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    double *z = test_buffer_of(c);
    for (size_t q = 0; q < n * n; q++) z[q] -= ref[q];
    assert_true(test_fro(z, n * n) < 10 * bound);
    free(z);
    tarn_matrix_destroy(c);
  }
  free(x);
  free(y);
  free(ref);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
}

/* With the runtime's cores far apart (tarn__rt_cores_far_set: kernels
 * below 2^25 multiply-adds unshared, a region's last product by a vector
 * and its last few vectors not split; linalg.c, share_min), the kernels
 * that sharing would split run whole on their task's thread: one tile of
 * 300 and 513 factored by blocks (a pivot that is not positive definite
 * still found), several, products and solves by one and two vectors; and
 * a product alone in its region, split still (check_gemm_alone); on 2 and
 * 3 workers. */
static void test_cores_far_apart(void **state) {
  (void)state;
  static const size_t sizes[][2] = {{300, 300}, {513, 513}, {700, 300}};
  for (unsigned w = 2; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    tarn__rt_cores_far_set(rt, 1);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t n = sizes[s][0], nb = sizes[s][1];
      double *a = spd(n, 80 + s);
      double *f = factor(rt, a, n, nb);
      assert_true(chol_residual(a, f, n) < 10);
      a[200 + 200 * n] = -1.0;
      tarn_matrix *m = NULL;
      assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
      int info = 0;
      assert_int_equal(tarn_matrix_cholesky(m, &info), TARN_EINVAL);
      assert_int_equal(info, 201);
      tarn_matrix_destroy(m);
      free(a);
      free(f);
    }
    check_gemv(rt, 256, 256, 256, 256, TARN_NO_TRANS, false);
    check_gemv(rt, 600, 600, 300, 300, TARN_TRANS, true);
    check_gemm(rt, 256, 256, 256, 256, 256, 256, TARN_NO_TRANS, TARN_TRANS,
               true);
    check_gemm_alone(rt, 256, 20);
    check_chol_solve(rt, 600, 300, 1, 1, 90);
    check_chol_solve(rt, 512, 512, 2, 2, 92);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static void test_cholesky_solve(void **state) {
  (void)state;
  test_solve_sizes(check_chol_solve, 700);
}

static int cholesky_solve_fn(void *ctx, tarn_matrix *a, tarn_matrix *b,
                             int *info) {
  (void)ctx;
  return tarn_matrix_cholesky_solve(a, b, info);
}

/* Solves with one factor from several threads at once. */
static void test_cholesky_solve_concurrent(void **state) {
  (void)state;
  size_t n = 160, nb = 40;
  tarn_rt *rt = test_rt(2, 0);
  double *a = spd(n, 81), *f = factor(rt, a, n, nb);
  tarn_matrix *l = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, f, n, &l), 0);
  test_solves_at_once(rt, cholesky_solve_fn, NULL, l, a, n, nb);
  free(a);
  free(f);
  tarn_matrix_destroy(l);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A factor with a zero on its diagonal (the first at p, in a later tile)
 * is refused with info p + 1 and B unchanged; bad arguments are refused
 * and change nothing. */
static void test_cholesky_solve_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 12, p = 6;
  double *a = spd(n, 91), *f = factor(rt, a, n, 4);
  f[p + p * n] = 0.0;
  f[9 + 9 * n] = 0.0;
  tarn_matrix *sing = NULL, *l = NULL, *b = NULL, *wide = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, f, n, &sing), 0);
  /* two columns: one task per tile column of B; twelve: by tiles */
  assert_int_equal(tarn_matrix_rand(rt, n, 12, 4, 5, 3, &wide), 0);
  double *w0 = test_buffer_of(wide);
  int info = 0;
  assert_int_equal(tarn_matrix_cholesky_solve(sing, wide, &info), TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  test_matrix_holds(wide, w0);
  free(w0);
  tarn_matrix_destroy(wide);
  assert_int_equal(tarn_matrix_rand(rt, n, 2, 4, 1, 2, &b), 0);
  double *b0 = test_buffer_of(b);
  info = 0;
  assert_int_equal(tarn_matrix_cholesky_solve(sing, b, &info), TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  double *b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, n * 2 * sizeof *b0);

  free(f);
  f = factor(rt, a, n, 4);
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, f, n, &l), 0);
  test_solve_refuses_bad_shapes(rt, cholesky_solve_fn, NULL, l, b);
  /* the good call still works */
  assert_int_equal(tarn_matrix_cholesky_solve(l, b, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b);
  assert_true(test_solve_residual(a, x, b0, n, 2) < 20);
  free(a);
  free(f);
  free(b0);
  free(b1);
  free(x);
  tarn_matrix_destroy(sing);
  tarn_matrix_destroy(l);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A task that failed on a tile of B before: the solve reports
 * TARN_ECANCELED (its tasks that depend on that tile are cancelled; so
 * are later tasks on B's tiles they would have written), and the factor
 * is unchanged. */
static void test_cholesky_solve_after_failure(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12, nb = 4;
  double *a = spd(n, 93), *f = factor(rt, a, n, nb);
  tarn_matrix *l = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, f, n, &l), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, 3, nb, 3, 94, &b), 0);
  test_fail_first_tile(rt, b);
  int info = 5;
  assert_int_equal(tarn_matrix_cholesky_solve(l, b, &info), TARN_ECANCELED);
  assert_int_equal(info, 0);
  double *f1 = test_buffer_of(l);
  assert_memory_equal(f, f1, n * n * sizeof *f);
  free(a);
  free(f);
  free(f1);
  tarn_matrix_destroy(l);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The matrices a task hands to the linalg calls that wait. */
struct in_task {
  tarn_matrix *a, *b, *f, *t;
  size_t piv[12];
  int rc[21];
};

/* Calls every linalg function that waits, from a task. */
static int call_waiting(tarn_task *task, void *arg) {
  (void)task;
  struct in_task *s = arg;
  tarn_matrix *t = NULL, *q = NULL, *x = NULL;
  s->rc[0] = tarn_matrix_cholesky(s->a, NULL);
  s->rc[1] = tarn_matrix_lu(s->a, s->piv, NULL);
  s->rc[2] = tarn_matrix_solve(s->a, s->b, NULL);
  s->rc[3] = tarn_matrix_lu_solve(s->f, s->piv, TARN_NO_TRANS, s->b, NULL);
  s->rc[4] = tarn_matrix_cholesky_solve(s->f, s->b, NULL);
  s->rc[5] = tarn_matrix_qr(s->a, 0, &t);
  s->rc[6] = tarn_matrix_qr_q(s->f, s->t, &q);
  s->rc[7] = tarn_matrix_qr_solve(s->f, s->t, TARN_NO_TRANS, s->b, &x, NULL);
  s->rc[8] = tarn_matrix_qr_solve(s->f, s->t, TARN_TRANS, s->b, &x, NULL);
  s->rc[9] = tarn_matrix_triangular_solve(s->f, TARN_LOWER, TARN_NO_TRANS,
                                          TARN_NON_UNIT, s->b, NULL);
  double rcond = -1;
  s->rc[10] = tarn_matrix_lu_rcond(s->f, s->piv, TARN_NORM_ONE, 1.0, &rcond);
  s->rc[11] = tarn_matrix_cholesky_rcond(s->f, 1.0, &rcond);
  s->rc[12] = tarn_matrix_triangular_rcond(s->f, TARN_UPPER, TARN_NON_UNIT,
                                           TARN_NORM_INF, &rcond);
  int sign = 5;
  s->rc[13] = tarn_matrix_lu_logdet(s->f, s->piv, &rcond, &sign);
  s->rc[14] = tarn_matrix_cholesky_logdet(s->f, &rcond);
  s->rc[15] = tarn_matrix_lu_inverse(s->a, s->piv, NULL);
  s->rc[16] = tarn_matrix_cholesky_inverse(s->a, NULL);
  s->rc[17] = tarn_matrix_triangular_inverse(s->a, TARN_UPPER, TARN_UNIT, NULL);
  s->rc[18] = tarn_matrix_inverse(s->a, NULL);
  s->rc[19] = tarn_matrix_qr_ata_inverse(s->f, &x, NULL);
  s->rc[20] = tarn_matrix_permute_rows(s->b, s->piv, tarn_matrix_rows(s->b),
                                       TARN_NO_TRANS);
  if (rcond != -1 || sign != 5) return -2;
  return t == NULL && q == NULL && x == NULL ? 0 : -1;
}

/* Every linalg call that waits refuses to run in a task (TARN_EDEADLK:
 * the task would wait for tasks that may need its worker), and leaves its
 * matrices as they were. */
/* LU's panel copy (a tile column of 144 x 48 here) and QR's workspace
 * (ib x nb doubles, 32 x 120) larger than the workers' scratch (16 KiB)
 * come from the heap: the same factors, bit for bit, as with the default
 * scratch. Tiles too small for any kernel to share its work (with the
 * waiting thread either), so that the bits do not depend on timing. */
enum { LU_N = 144, LU_NB = 48, QR_M = 360, QR_N = 240, QR_NB = 120 };

static void test_workspace_larger_than_the_scratch(void **state) {
  (void)state;
  double *factors[2][2];
  size_t piv[2][LU_N];
  for (int small = 0; small < 2; small++) {
    tarn_rt_options o;
    assert_int_equal(tarn_rt_options_init(&o), 0);
    o.workers = 2;
    if (small) o.scratch_bytes = 16 << 10;
    tarn_rt *rt = NULL;
    assert_int_equal(tarn_rt_create(&o, &rt), 0);
    tarn_matrix *a = NULL, *q = NULL, *t = NULL;
    assert_int_equal(tarn_matrix_rand(rt, LU_N, LU_N, LU_NB, LU_NB, 3, &a), 0);
    int info = -1;
    assert_int_equal(tarn_matrix_lu(a, piv[small], &info), 0);
    assert_int_equal(info, 0);
    factors[small][0] = test_buffer_of(a);
    assert_int_equal(tarn_matrix_rand(rt, QR_M, QR_N, QR_NB, QR_NB, 4, &q), 0);
    assert_int_equal(tarn_matrix_qr(q, 32, &t), 0);
    factors[small][1] = test_buffer_of(q);
    tarn_matrix_destroy(a);
    tarn_matrix_destroy(q);
    tarn_matrix_destroy(t);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(factors[0][0], factors[1][0],
                      LU_N * LU_N * sizeof(double));
  assert_memory_equal(piv[0], piv[1], sizeof piv[0]);
  assert_memory_equal(factors[0][1], factors[1][1],
                      QR_M * QR_N * sizeof(double));
  for (int i = 0; i < 2; i++) {
    free(factors[i][0]);
    free(factors[i][1]);
  }
}

static void test_waiting_calls_in_a_task(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct in_task s = {0};
  size_t n = 12;
  double *spd = malloc(n * n * sizeof *spd);
  assert_non_null(spd);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) spd[i + j * n] = i == j ? 2.0 * n : 1.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, spd, n, &s.a), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, 2, 4, 1, 3, &s.b), 0);
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, spd, n, &s.f), 0);
  assert_int_equal(tarn_matrix_qr(s.f, 0, &s.t), 0);
  for (size_t i = 0; i < n; i++) s.piv[i] = i;
  double *a0 = test_buffer_of(s.a), *b0 = test_buffer_of(s.b),
         *f0 = test_buffer_of(s.f);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_submit(rt, call_waiting, TARN_ARG(&s)), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  for (size_t k = 0; k < sizeof s.rc / sizeof s.rc[0]; k++)
    assert_int_equal(s.rc[k], TARN_EDEADLK);
  double *a1 = test_buffer_of(s.a), *b1 = test_buffer_of(s.b),
         *f1 = test_buffer_of(s.f);
  assert_memory_equal(a0, a1, n * n * sizeof *a0);
  assert_memory_equal(b0, b1, n * 2 * sizeof *b0);
  assert_memory_equal(f0, f1, n * n * sizeof *f0);
  free(spd);
  free(a0);
  free(b0);
  free(f0);
  free(a1);
  free(b1);
  free(f1);
  tarn_matrix_destroy(s.a);
  tarn_matrix_destroy(s.b);
  tarn_matrix_destroy(s.f);
  tarn_matrix_destroy(s.t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- destroyed matrices ------------------------------------------------ */

enum { LIVE_A, LIVE_CHOL, LIVE_LU, LIVE_QR, LIVE_T, LIVE_B, LIVE_X, NLIVE };

/* Every call of linalg.h given m[k + NLIVE], the destroyed twin of the
 * sound operand m[k] (same runtime, layout and values), and sound
 * operands elsewhere, as each call takes them: A SPD, its Cholesky
 * factor, its LU factors (pivots piv), its QR factors and T factors, B
 * of two columns, x of one. Each is refused with TARN_EINVAL and makes no
 * matrix; with the twins live, each call would run. */
static void linalg_calls_refuse(tarn_matrix **m, const size_t *piv) {
  tarn_matrix *a = m[LIVE_A], *l = m[LIVE_CHOL], *lu = m[LIVE_LU],
              *qa = m[LIVE_QR], *t = m[LIVE_T], *b = m[LIVE_B], *x = m[LIVE_X];
  tarn_matrix *da = m[NLIVE + LIVE_A], *dl = m[NLIVE + LIVE_CHOL],
              *dlu = m[NLIVE + LIVE_LU], *dqa = m[NLIVE + LIVE_QR],
              *dt = m[NLIVE + LIVE_T], *db = m[NLIVE + LIVE_B],
              *dx = m[NLIVE + LIVE_X];
  tarn_trans no = TARN_NO_TRANS, tr = TARN_TRANS;
  tarn_matrix *c = NULL, *out = db, *outx = dx;
  size_t piv2[6];
  int info = 0, sign = 0;
  double v = -1;
  /* multiply: a destroyed operand, a destroyed C given */
  assert_int_equal(tarn_matrix_gemm(da, no, b, no, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemm(a, no, db, no, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemm(a, no, b, no, 1, 0, &out), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(da, no, x, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(a, no, dx, 1, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_gemv(a, no, x, 1, 0, &outx), TARN_EINVAL);
  assert_int_equal(tarn_matrix_syrk_ata(da, &c), TARN_EINVAL);
  assert_ptr_equal(out, db);
  assert_ptr_equal(outx, dx);
  /* factorisations and solves */
  assert_int_equal(tarn_matrix_cholesky(da, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_solve(dl, b, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_solve(l, db, &info), TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_triangular_solve(dl, TARN_LOWER, no, TARN_NON_UNIT, b, &info),
      TARN_EINVAL);
  assert_int_equal(
      tarn_matrix_triangular_solve(l, TARN_LOWER, no, TARN_NON_UNIT, db, &info),
      TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu(da, piv2, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_solve(dlu, piv, no, b, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_solve(lu, piv, tr, db, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_permute_rows(db, piv, tarn_matrix_rows(b), no),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_solve(da, b, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_solve(a, db, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  /* QR */
  assert_int_equal(tarn_matrix_qr(da, 0, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(dqa, t, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_q(qa, dt, &c), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(dqa, t, no, b, &c, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(qa, dt, no, b, &c, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_solve(qa, t, no, db, &c, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(dqa, t, TARN_LEFT, tr, b),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(qa, dt, TARN_LEFT, tr, b),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_multiply(qa, t, TARN_LEFT, tr, db),
                   TARN_EINVAL);
  /* estimates, determinants, inverses */
  assert_int_equal(tarn_matrix_lu_rcond(dlu, piv, TARN_NORM_ONE, 1, &v),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_rcond(dl, 1, &v), TARN_EINVAL);
  assert_int_equal(tarn_matrix_triangular_rcond(dl, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &v),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_logdet(dlu, piv, &v, &sign), TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_logdet(dl, &v), TARN_EINVAL);
  assert_true(v == -1);
  assert_int_equal(
      tarn_matrix_triangular_inverse(dl, TARN_LOWER, TARN_NON_UNIT, &info),
      TARN_EINVAL);
  assert_int_equal(tarn_matrix_cholesky_inverse(dl, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu_inverse(dlu, piv, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_inverse(da, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_qr_ata_inverse(dqa, &c, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_null(c);
}

/* A matrix already destroyed, whose memory the heap has not reused, is
 * refused by every call of linalg.h, as operand or as the destination
 * given, and neither it nor the sound operands beside it change. White
 * box (destroyed.h): each destroyed operand is a live twin marked as
 * tarn_matrix_destroy marks it, so only that mark can refuse it. Memory
 * that never held a matrix is refused too. */
static void test_destroyed_matrices_refused(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *m[2 * NLIVE] = {NULL};
  double *spd = test_spd_matrix(6, 1, 5);
  size_t piv[6];
  int info = -1;
  assert_int_equal(tarn_matrix_from_buffer(rt, 6, 6, 2, 2, spd, 6, &m[LIVE_A]),
                   0);
  assert_int_equal(tarn_matrix_copy(m[LIVE_A], &m[LIVE_CHOL]), 0);
  assert_int_equal(tarn_matrix_cholesky(m[LIVE_CHOL], &info), 0);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_copy(m[LIVE_A], &m[LIVE_LU]), 0);
  assert_int_equal(tarn_matrix_lu(m[LIVE_LU], piv, &info), 0);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_copy(m[LIVE_A], &m[LIVE_QR]), 0);
  assert_int_equal(tarn_matrix_qr(m[LIVE_QR], 0, &m[LIVE_T]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 2, 2, 2, 6, &m[LIVE_B]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 6, 1, 2, 1, 7, &m[LIVE_X]), 0);
  double *before[2 * NLIVE];
  for (size_t k = 0; k < NLIVE; k++) {
    assert_int_equal(tarn_matrix_copy(m[k], &m[NLIVE + k]), 0);
    before[k] = test_buffer_of(m[k]);
    before[NLIVE + k] = test_buffer_of(m[NLIVE + k]);
    test_mark_destroyed(m[NLIVE + k], true);
  }
  linalg_calls_refuse(m, piv);
  /* junk in the slot of each destroyed twin in turn */
  struct test_junk junk;
  tarn_matrix *j = test_junk_matrix(&junk, 0x5a);
  for (size_t k = 0; k < NLIVE; k++) {
    tarn_matrix *twin = m[NLIVE + k];
    m[NLIVE + k] = j;
    linalg_calls_refuse(m, piv);
    m[NLIVE + k] = twin;
  }
  assert_true(test_junk_untouched(&junk, 0x5a));
  for (size_t k = 0; k < NLIVE; k++) test_mark_destroyed(m[NLIVE + k], false);
  for (size_t k = 0; k < 2 * NLIVE; k++) {
    double *after = test_buffer_of(m[k]);
    size_t bytes =
        tarn_matrix_rows(m[k]) * tarn_matrix_cols(m[k]) * sizeof(double);
    assert_memory_equal(after, before[k], bytes);
    free(after);
    free(before[k]);
  }
  for (size_t k = 0; k < 2 * NLIVE; k++) tarn_matrix_destroy(m[k]);
  free(spd);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_transposes),
      cmocka_unit_test(test_gemm_same_operand),
      cmocka_unit_test(test_gemm_beta_zero),
      cmocka_unit_test(test_gemm_alpha_zero),
      cmocka_unit_test(test_gemm_bad),
      cmocka_unit_test(test_gemv),
      cmocka_unit_test(test_gemv_mem_limit),
      cmocka_unit_test(test_gemv_blocks_mem_limit),
      cmocka_unit_test(test_gemv_tiny_tiles_tight_limit),
      cmocka_unit_test(test_gemm_mem_limit),
      cmocka_unit_test(test_product_limit_of_one_task),
      cmocka_unit_test(test_cholesky_sizes),
      cmocka_unit_test(test_cholesky_after_gemm),
      cmocka_unit_test(test_cholesky_not_spd),
      cmocka_unit_test(test_cholesky_large_tiles),
      cmocka_unit_test(test_cholesky_not_spd_blocked),
      cmocka_unit_test(test_cholesky_nan),
      cmocka_unit_test(test_cholesky_bad),
      cmocka_unit_test(test_cholesky_mem_limit),
      cmocka_unit_test(test_limit_of_one_task),
      cmocka_unit_test(test_cholesky_solve),
      cmocka_unit_test(test_cores_far_apart),
      cmocka_unit_test(test_cholesky_solve_concurrent),
      cmocka_unit_test(test_cholesky_solve_bad),
      cmocka_unit_test(test_cholesky_solve_after_failure),
      cmocka_unit_test(test_waiting_calls_in_a_task),
      cmocka_unit_test(test_workspace_larger_than_the_scratch),
      cmocka_unit_test(test_destroyed_matrices_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
