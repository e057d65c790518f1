/* test_triangular.c: tarn_matrix_triangular_solve (op(T) X = B, T lower or
 * upper, unit or not, op(T) T or its transpose) by its scaled residual
 * against the dense op(T), for every combination, on sizes that are and
 * are not multiples of the tile, one tile and many, one right-hand side
 * and many, tiles large enough to be shared with idle workers (1 to 3
 * workers); with NaNs in every element of `t` the solve must not read
 * (the other triangle, and the diagonal when unit), so that reading one
 * shows. The factors of tarn_matrix_cholesky (L, then L^T) and of
 * tarn_matrix_qr of a square matrix (R after Q^T B) solve A X = B; several
 * threads solve with one T at once; a zero on the diagonal is refused
 * with info and B unchanged (but not with a unit diagonal, not read); bad
 * arguments are refused and change nothing; a failed task on B before
 * gives TARN_ECANCELED with T unchanged; under a memory limit that spills,
 * the residuals are as small, and a solve called while other work pins
 * the whole limit waits for its room. */
#define _GNU_SOURCE
#include <cblas.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "support.h"
#include "tarn.h"

/* An n x n `t` (column-major, ld n) whose triangle `uplo` is well
 * conditioned (diagonal in [1.5, 2.5], small entries off it), NaN
 * elsewhere and, when unit, on the diagonal; *dense gets op(T) in full
 * (zeros outside the triangle, ones on the diagonal when unit). */
static double *triangle(size_t n, tarn_uplo uplo, tarn_trans trans,
                        tarn_diag diag, uint64_t seed, double **dense) {
  double *t = malloc(n * n * sizeof *t), *d = calloc(n * n, sizeof *d);
  assert_non_null(t);
  assert_non_null(d);
  uint64_t x = seed * 2654435761u + 1;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      bool in = uplo == TARN_LOWER ? i > j : i < j;
      double v = i == j ? 2.0 + test_rnd(&x) : test_rnd(&x) / (double)n;
      if (i == j && diag == TARN_UNIT) {
        t[i + j * n] = NAN;
        v = 1.0;
      } else {
        t[i + j * n] = in || i == j ? v : NAN;
      }
      if (in || i == j) {
        if (trans == TARN_TRANS)
          d[j + i * n] = v;
        else
          d[i + j * n] = v;
      }
    }
  *dense = d;
  return t;
}

/* The shape of one solve: T the leading n x n block of an m x n `t` (m
 * == n: all of it) in mb x nb tiles, B n x nrhs in mb x cb tiles. */
struct shape {
  size_t m, n, mb, nb, nrhs, cb;
};

/* Solves op(T) X = B for one shape and combination; checks the residual
 * against the dense op(T), and that the solve read no NaN (below T's
 * block, every row of `t` is NaN) and changed nothing of `t`. */
static void check_solve(tarn_rt *rt, struct shape sh, tarn_uplo uplo,
                        tarn_trans trans, tarn_diag diag, uint64_t seed) {
  size_t m = sh.m, n = sh.n;
  double *dense = NULL, *t = triangle(n, uplo, trans, diag, seed, &dense);
  double *tall = malloc(m * n * sizeof *tall);
  assert_non_null(tall);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) tall[i + j * m] = i < n ? t[i + j * n] : NAN;
  tarn_matrix *tm = NULL, *b = NULL;
  assert_int_equal(
      tarn_matrix_from_buffer(rt, m, n, sh.mb, sh.nb, tall, m, &tm), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, sh.nrhs, sh.mb, sh.cb, seed + 1, &b),
                   0);
  double *rhs = test_buffer_of(b);
  int info = 5;
  assert_int_equal(
      tarn_matrix_triangular_solve(tm, uplo, trans, diag, b, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b);
  double r = test_solve_residual(dense, x, rhs, n, sh.nrhs);
  if (!(r < 20))
    print_error(
        "triangular %zu x %zu in %zu x %zu, nrhs %zu cb %zu, uplo %d trans %d "
        "diag %d: %g\n",
        m, n, sh.mb, sh.nb, sh.nrhs, sh.cb, uplo, trans, diag, r);
  assert_true(r < 20);
  double *t1 = test_buffer_of(tm); /* T is only read */
  assert_memory_equal(tall, t1, m * n * sizeof *tall);
  free(t);
  free(tall);
  free(t1);
  free(dense);
  free(rhs);
  free(x);
  tarn_matrix_destroy(tm);
  tarn_matrix_destroy(b);
}

/* Every combination of uplo, trans and diag on one shape. */
static void check_combinations(tarn_rt *rt, struct shape sh, uint64_t seed) {
  for (int u = 0; u < 2; u++)
    for (int tr = 0; tr < 2; tr++)
      for (int d = 0; d < 2; d++)
        check_solve(rt, sh, (tarn_uplo)u, (tarn_trans)tr, (tarn_diag)d,
                    seed + (uint64_t)(4 * u + 2 * tr + d));
}

/* A square `t`: the solve sizes' shape. */
static void check_all(tarn_rt *rt, size_t n, size_t nb, size_t nrhs, size_t cb,
                      uint64_t seed) {
  check_combinations(rt, (struct shape){n, n, nb, nb, nrhs, cb}, seed);
}

static void test_triangular_sizes(void **state) {
  (void)state;
  test_solve_sizes(check_all, 300);
}

/* T as the leading n x n block of an m x n `t` (m > n, as the R of a tall
 * QR), the rows below it all NaN: every combination solves as with a
 * square `t`, and reads none of those rows. */
static void check_tall(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                       size_t nrhs, uint64_t seed) {
  check_combinations(rt, (struct shape){m, n, mb, nb, nrhs, 2}, seed);
}

static void test_triangular_tall(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  /* the block's last tile row shared with rows below it, or not; one tile
   * column; tiles of 3 */
  check_tall(rt, 150, 100, 32, 32, 5, 40);
  check_tall(rt, 100, 64, 32, 32, 3, 50);
  check_tall(rt, 70, 50, 50, 50, 2, 60);
  check_tall(rt, 45, 7, 3, 3, 4, 70);
  /* one tile column in row bands (tiles 64 x 7, 40 x 30): the block lies
   * in the first tile */
  check_tall(rt, 300, 7, 64, 7, 3, 80);
  check_tall(rt, 100, 30, 40, 30, 2, 90);
  /* Refused: a t wider than tall, with B of either side's rows; tiles of
   * 8 x 4 on 20 x 8 (the block's diagonal crosses tiles); bands of 16
   * rows of a 20 x 18 t, whose first tile does not hold the block; B in
   * tiles of another size than t's first (clamped to 7 rows). */
  tarn_matrix *t[5] = {NULL}, *b[5] = {NULL};
  assert_int_equal(tarn_matrix_rand(rt, 10, 12, 4, 4, 1, &t[0]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 2, 4, 1, 2, &b[0]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 10, 12, 4, 4, 1, &t[1]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 10, 2, 4, 1, 2, &b[1]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 20, 8, 8, 4, 1, &t[2]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 8, 2, 8, 1, 2, &b[2]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 20, 18, 16, 18, 1, &t[3]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 18, 2, 16, 1, 2, &b[3]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 20, 7, 16, 7, 1, &t[4]), 0);
  assert_int_equal(tarn_matrix_rand(rt, 7, 2, 4, 1, 2, &b[4]), 0);
  for (int k = 0; k < 5; k++) {
    int info = 5;
    assert_int_equal(
        tarn_matrix_triangular_solve(t[k], TARN_UPPER, TARN_NO_TRANS, TARN_UNIT,
                                     b[k], &info),
        TARN_EINVAL);
    assert_int_equal(info, 0);
    tarn_matrix_destroy(t[k]);
    tarn_matrix_destroy(b[k]);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The Cholesky factor L of A: L Y = B, then L^T X = Y, solves A X = B. */
static void test_triangular_cholesky_factor(void **state) {
  (void)state;
  size_t n = 150, nb = 40, nrhs = 7;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 5, &a), 0);
  double *r = test_buffer_of(a), *spd = malloc(n * n * sizeof *spd);
  assert_non_null(spd);
  /* A = R^T R + n I: symmetric positive definite */
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)n,
              1.0, r, (int)n, r, (int)n, 0.0, spd, (int)n);
  for (size_t i = 0; i < n; i++) spd[i + i * n] += (double)n;
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, spd, n, &a), 0);
  assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, 3, 6, &b), 0);
  double *rhs = test_buffer_of(b);
  assert_int_equal(tarn_matrix_triangular_solve(a, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, NULL),
                   0);
  assert_int_equal(tarn_matrix_triangular_solve(a, TARN_LOWER, TARN_TRANS,
                                                TARN_NON_UNIT, b, NULL),
                   0);
  double *x = test_buffer_of(b);
  assert_true(test_solve_residual(spd, x, rhs, n, nrhs) < 20);
  free(r);
  free(spd);
  free(rhs);
  free(x);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* QR of a square A: R X = Q^T B solves A X = B; the reflectors below R's
 * diagonal are not read. */
static void test_triangular_qr_factor(void **state) {
  (void)state;
  size_t n = 120, nb = 32, nrhs = 4;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *a = NULL, *t = NULL, *q = NULL, *b = NULL, *y = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 7, &a), 0);
  double *a0 = test_buffer_of(a);
  assert_int_equal(tarn_matrix_qr(a, 0, &t), 0);
  assert_int_equal(tarn_matrix_qr_q(a, t, &q), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, nrhs, 8, &b), 0);
  double *rhs = test_buffer_of(b);
  assert_int_equal(
      tarn_matrix_gemm(q, TARN_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, &y), 0);
  int info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(a, TARN_UPPER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, y, &info),
                   0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(y);
  assert_true(test_solve_residual(a0, x, rhs, n, nrhs) < 50);
  free(a0);
  free(rhs);
  free(x);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(q);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(y);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int lower_solve_fn(void *ctx, tarn_matrix *a, tarn_matrix *b,
                          int *info) {
  (void)ctx;
  return tarn_matrix_triangular_solve(a, TARN_LOWER, TARN_NO_TRANS,
                                      TARN_NON_UNIT, b, info);
}

/* Three threads solve with one T at once. */
static void test_triangular_concurrent(void **state) {
  (void)state;
  size_t n = 160, nb = 40;
  tarn_rt *rt = test_rt(2, 0);
  double *dense = NULL,
         *t = triangle(n, TARN_LOWER, TARN_NO_TRANS, TARN_NON_UNIT, 9, &dense);
  tarn_matrix *tm = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, t, n, &tm), 0);
  test_solves_at_once(rt, lower_solve_fn, NULL, tm, dense, n, nb);
  free(t);
  free(dense);
  tarn_matrix_destroy(tm);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Zeros on the diagonal at p and at a row of a later tile: every
 * combination with a non-unit diagonal refuses with info p + 1 (the first
 * zero, whichever way the solve walks) and B unchanged; with a unit
 * diagonal (not read) the same T solves. */
static void check_singular(tarn_rt *rt, size_t nrhs) {
  size_t n = 12, p = 5, later = 10;
  tarn_matrix *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, 4, 2, 2, &b), 0);
  double *b0 = test_buffer_of(b);
  for (int u = 0; u < 2; u++)
    for (int tr = 0; tr < 2; tr++) {
      double *dense = NULL, *t = triangle(n, (tarn_uplo)u, (tarn_trans)tr,
                                          TARN_NON_UNIT, 11, &dense);
      t[p + p * n] = 0.0;
      t[later + later * n] = 0.0;
      tarn_matrix *tm = NULL;
      assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, t, n, &tm), 0);
      int info = 0;
      assert_int_equal(
          tarn_matrix_triangular_solve(tm, (tarn_uplo)u, (tarn_trans)tr,
                                       TARN_NON_UNIT, b, &info),
          TARN_EINVAL);
      assert_int_equal(info, (int)(p + 1));
      double *b1 = test_buffer_of(b);
      assert_memory_equal(b0, b1, n * nrhs * sizeof *b0);
      free(b1);
      /* a unit diagonal is not read: the zeros do not matter */
      info = 5;
      assert_int_equal(
          tarn_matrix_triangular_solve(tm, (tarn_uplo)u, (tarn_trans)tr,
                                       TARN_UNIT, b, &info),
          0);
      assert_int_equal(info, 0);
      for (size_t i = 0; i < n; i++) dense[i + i * n] = 1.0;
      double *x = test_buffer_of(b);
      assert_true(test_solve_residual(dense, x, b0, n, nrhs) < 20);
      /* back to B's values for the next combination */
      tarn_matrix_destroy(b);
      assert_int_equal(tarn_matrix_from_buffer(rt, n, nrhs, 4, 2, b0, n, &b),
                       0);
      free(x);
      free(t);
      free(dense);
      tarn_matrix_destroy(tm);
    }
  free(b0);
  tarn_matrix_destroy(b);
}

/* Both ways a solve goes: a few right-hand sides in one task per tile
 * column of B (solved first, B put back from a copy when a zero is
 * found), more by tiles (the diagonal checked first). */
static void test_triangular_singular(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  check_singular(rt, 3);
  check_singular(rt, 12);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Infinities and NaNs in B are solved, not taken for a zero on T's
 * diagonal (a solve in one task per tile column of B checks the diagonal
 * only when X is not finite): with B's last element of column 0 infinite
 * and its element 5 of column 1 NaN, L X = B returns 0, the rows above
 * them as for a finite B to the bit, and those elements not finite. */
static void non_finite_right_hand_sides_are_solved(void **state) {
  (void)state;
  enum { N = 40, NB = 16, NRHS = 2 };
  tarn_rt *rt = test_rt(2, 0);
  double *dense = NULL,
         *t = triangle(N, TARN_LOWER, TARN_NO_TRANS, TARN_NON_UNIT, 31, &dense);
  double b0[N * NRHS], bad[N * NRHS];
  uint64_t x = 77;
  for (size_t i = 0; i < N * NRHS; i++) b0[i] = bad[i] = test_rnd(&x);
  bad[N - 1] = INFINITY;
  bad[5 + N] = NAN;
  tarn_matrix *tm = NULL, *fin = NULL, *inf = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, t, N, &tm), 0);
  assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, NB, 1, b0, N, &fin), 0);
  assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, NB, 1, bad, N, &inf),
                   0);
  int info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(tm, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, fin, &info),
                   0);
  assert_int_equal(info, 0);
  info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(tm, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, inf, &info),
                   0);
  assert_int_equal(info, 0);
  double *xf = test_buffer_of(fin), *xi = test_buffer_of(inf);
  assert_true(test_solve_residual(dense, xf, b0, N, NRHS) < 20);
  assert_memory_equal(xf, xi, (N - 1) * sizeof *xf);
  assert_false(isfinite(xi[N - 1]));
  assert_memory_equal(xf + N, xi + N, 5 * sizeof *xf);
  assert_false(isfinite(xi[5 + N]));
  free(xf);
  free(xi);
  free(t);
  free(dense);
  TEST_DESTROY_MATRICES(tm, fin, inf);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A zero on the factor's diagonal with B all zeros: X's element there is
 * 0 / 0 (a solve of few right-hand sides finds the zero by the NaN it
 * leaves, see tarn/linalg.h; a BLAS that skipped the division of a zero
 * would leave 0 and hide it). Every solve refuses with info 31 and B
 * still all +0, by a triangle (both, both ways), LU's factors (both
 * ways) and a Cholesky factor, of one tile and of 3 x 3 tiles, with 1
 * and 3 right-hand sides. */
static void a_singular_factor_with_zero_b_is_refused(void **state) {
  (void)state;
  enum { N = 40 };
  tarn_rt *rt = test_rt(2, 0);
  double t[N * N], zeros[N * 3] = {0};
  size_t piv[N];
  for (size_t j = 0; j < N; j++) {
    piv[j] = j;
    for (size_t i = 0; i < N; i++)
      t[i + j * N] = i == j ? 2.0 : 1.0 / (double)(1 + i + j);
  }
  t[30 + 30 * N] = 0.0;
  for (size_t nb = 16; nb <= 64; nb += 48)
    for (size_t nrhs = 1; nrhs <= 3; nrhs += 2)
      for (int way = 0; way < 7; way++) {
        tarn_matrix *tm = NULL, *b = NULL;
        assert_int_equal(tarn_matrix_from_buffer(rt, N, N, nb, nb, t, N, &tm),
                         0);
        assert_int_equal(
            tarn_matrix_from_buffer(rt, N, nrhs, nb, 1, zeros, N, &b), 0);
        tarn_trans op = way % 2 ? TARN_TRANS : TARN_NO_TRANS;
        int info = 0, rc;
        if (way < 4)
          rc = tarn_matrix_triangular_solve(tm,
                                            way < 2 ? TARN_LOWER : TARN_UPPER,
                                            op, TARN_NON_UNIT, b, &info);
        else if (way < 6)
          rc = tarn_matrix_lu_solve(tm, piv, op, b, &info);
        else
          rc = tarn_matrix_cholesky_solve(tm, b, &info);
        assert_int_equal(rc, TARN_EINVAL);
        assert_int_equal(info, 31);
        test_matrix_holds(b, zeros); /* bit for bit: +0, not -0 */
        TEST_DESTROY_MATRICES(tm, b);
      }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A program that traps division by zero and invalid operations
 * (feenableexcept before the runtime is made: its workers inherit the
 * traps) gets info for a zero on the diagonal, not SIGFPE: a solve of
 * few right-hand sides then checks the diagonal first instead of
 * solving first, and a good triangle still solves. Before, the solve divided by
 * the zero and the test died of SIGFPE. */
static void a_program_that_traps_division_by_zero_gets_info(void **state) {
  (void)state;
  enum { N = 16, NRHS = 2 };
  int before = fegetexcept();
  assert_true(feenableexcept(FE_DIVBYZERO | FE_INVALID) != -1);
  tarn_rt *rt = test_rt(2, 0);
  double *dense = NULL,
         *t = triangle(N, TARN_LOWER, TARN_NO_TRANS, TARN_NON_UNIT, 7, &dense);
  double b0[N * NRHS];
  uint64_t x = 3;
  for (size_t i = 0; i < N * NRHS; i++) b0[i] = test_rnd(&x);
  tarn_matrix *good = NULL, *bad = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, 8, 8, t, N, &good), 0);
  t[5 + 5 * N] = 0.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, 8, 8, t, N, &bad), 0);
  assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, 8, 1, b0, N, &b), 0);
  int info = 0;
  assert_int_equal(tarn_matrix_triangular_solve(bad, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, 6);
  test_matrix_holds(b, b0);
  info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(good, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, &info),
                   0);
  assert_int_equal(info, 0);
  double *xs = test_buffer_of(b);
  assert_true(test_solve_residual(dense, xs, b0, N, NRHS) < 20);
  free(xs);
  free(t);
  free(dense);
  TEST_DESTROY_MATRICES(good, bad, b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  fedisableexcept(FE_ALL_EXCEPT);
  if (before != -1) feenableexcept(before);
}

/* The tasks one triangular solve submits (tarn_rt_stats' count). */
static uint64_t solve_tasks(tarn_rt *rt, tarn_matrix *t, tarn_matrix *b) {
  tarn_rt_stats before, after;
  assert_int_equal(tarn_rt_stats_get(rt, &before), 0);
  int info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(t, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, &info),
                   0);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_rt_stats_get(rt, &after), 0);
  return after.submitted - before.submitted;
}

/* Which way a solve goes, as tarn/linalg.h says ("Solves of few
 * right-hand sides"): a factor of several tiles with B of up to 8
 * columns in one task per tile column of B (two here), with 9 columns by
 * tiles; a factor whose triangle's tiles pass 16 MiB (2048 x 2048 in 512
 * tiles: 20 MiB) by tiles with one column too. Each solves to a small
 * residual. */
static void few_right_hand_sides_go_in_one_task_per_tile_column(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t cases[][4] = {
      /* n, tile, nrhs, B's column tile */
      {96, 32, 8, 4},
      {96, 32, 9, 5},
      {2048, 512, 1, 1},
  };
  for (size_t c = 0; c < 3; c++) {
    size_t n = cases[c][0], nb = cases[c][1], nrhs = cases[c][2];
    double *dense = NULL, *t = triangle(n, TARN_LOWER, TARN_NO_TRANS,
                                        TARN_NON_UNIT, 40 + c, &dense);
    tarn_matrix *tm = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, t, n, &tm), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, cases[c][3], 9, &b), 0);
    double *rhs = test_buffer_of(b);
    uint64_t tasks = solve_tasks(rt, tm, b);
    if (c == 0)
      assert_int_equal(tasks, 2);
    else
      assert_true(tasks > 6); /* a trsm and a check per diagonal tile */
    double *x = test_buffer_of(b);
    assert_true(test_solve_residual(dense, x, rhs, n, nrhs) < 20);
    free(x);
    free(rhs);
    free(t);
    free(dense);
    TEST_DESTROY_MATRICES(tm, b);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Bad shapes and unknown uplo, trans or diag values are refused with
 * *info 0 and B unchanged; the good call then still works. */
static void test_triangular_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12;
  double *dense = NULL,
         *t = triangle(n, TARN_LOWER, TARN_NO_TRANS, TARN_NON_UNIT, 13, &dense);
  tarn_matrix *tm = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, t, n, &tm), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, 2, 4, 1, 2, &b), 0);
  test_solve_refuses_bad_shapes(rt, lower_solve_fn, NULL, tm, b);
  double *b0 = test_buffer_of(b);
  static const int bad[][3] = {{2, 0, 0},  {-1, 0, 0}, {0, 2, 0},
                               {0, -1, 0}, {0, 0, 2},  {0, 0, -1}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    int info = 5;
    assert_int_equal(tarn_matrix_triangular_solve(
                         tm, (tarn_uplo)bad[k][0], (tarn_trans)bad[k][1],
                         (tarn_diag)bad[k][2], b, &info),
                     TARN_EINVAL);
    assert_int_equal(info, 0);
  }
  double *b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, n * 2 * sizeof *b0);
  assert_int_equal(lower_solve_fn(NULL, tm, b, NULL), 0);
  double *x = test_buffer_of(b);
  assert_true(test_solve_residual(dense, x, b0, n, 2) < 20);
  free(t);
  free(dense);
  free(b0);
  free(b1);
  free(x);
  tarn_matrix_destroy(tm);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A task that failed on a tile of B before: TARN_ECANCELED, T unchanged. */
static void test_triangular_after_failure(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 12;
  double *dense = NULL,
         *t = triangle(n, TARN_UPPER, TARN_NO_TRANS, TARN_NON_UNIT, 15, &dense);
  tarn_matrix *tm = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, t, n, &tm), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, 3, 4, 3, 16, &b), 0);
  test_fail_first_tile(rt, b);
  int info = 5;
  assert_int_equal(tarn_matrix_triangular_solve(tm, TARN_UPPER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, &info),
                   TARN_ECANCELED);
  assert_int_equal(info, 0);
  double *t1 = test_buffer_of(tm);
  assert_memory_equal(t, t1, n * n * sizeof *t);
  free(t);
  free(t1);
  free(dense);
  tarn_matrix_destroy(tm);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of a quarter of T, so that tiles spill and come
 * back: every combination still solves. */
static void test_triangular_mem_limit(void **state) {
  (void)state;
  size_t n = 400, nb = 50, limit = n * n * sizeof(double) / 4;
  tarn_rt *rt = test_rt(3, limit);
  check_all(rt, n, nb, 60, 20, 17);
  test_rt_destroy_spilled(rt, limit);
}

/* A task that pins the whole limit until told to end. */
struct hog {
  atomic_int started, release;
};

static int hog_task(tarn_task *task, void *arg) {
  (void)task;
  struct hog *h = arg;
  atomic_store(&h->started, 1);
  for (int i = 0; i < 10000 && !atomic_load(&h->release); i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  return 0;
}

static void *release_later(void *arg) {
  nanosleep(&(struct timespec){0, 100000000}, NULL);
  atomic_store(&((struct hog *)arg)->release, 1);
  return NULL;
}

/* A solve called while a task of other work pins the whole limit waits
 * for the room, as every task does (rt.h, rule 3): it returned
 * TARN_ENOMEM at once (its ordering ref took memory on the program
 * thread, without waiting). */
static void test_triangular_waits_for_room(void **state) {
  (void)state;
  size_t limit = 256 * 1024, n = 64, nrhs = 8;
  tarn_rt *rt = test_rt(2, limit);
  double *dense = NULL,
         *t = triangle(n, TARN_LOWER, TARN_NO_TRANS, TARN_NON_UNIT, 41, &dense);
  tarn_matrix *tm = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, n, n, t, n, &tm), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, n, nrhs, 42, &b), 0);
  double *rhs = test_buffer_of(b);
  tarn_ref *big = NULL;
  assert_int_equal(tarn_ref_create(tarn_rt_pool(rt), limit, &big), 0);
  struct hog h;
  atomic_init(&h.started, 0);
  atomic_init(&h.release, 0);
  assert_int_equal(tarn_submit(rt, hog_task, TARN_ARG(&h), TARN_W(big)), 0);
  tarn_ref_release(big);
  while (!atomic_load(&h.started))
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  pthread_t releaser;
  assert_int_equal(pthread_create(&releaser, NULL, release_later, &h), 0);
  int info = 5;
  int rc = tarn_matrix_triangular_solve(tm, TARN_LOWER, TARN_NO_TRANS,
                                        TARN_NON_UNIT, b, &info);
  atomic_store(&h.release, 1);
  pthread_join(releaser, NULL);
  assert_int_equal(rc, 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b);
  assert_true(test_solve_residual(dense, x, rhs, n, nrhs) < 20);
  free(t);
  free(dense);
  free(rhs);
  free(x);
  tarn_matrix_destroy(tm);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triangular_sizes),
      cmocka_unit_test(test_triangular_tall),
      cmocka_unit_test(test_triangular_cholesky_factor),
      cmocka_unit_test(test_triangular_qr_factor),
      cmocka_unit_test(test_triangular_concurrent),
      cmocka_unit_test(test_triangular_singular),
      cmocka_unit_test(non_finite_right_hand_sides_are_solved),
      cmocka_unit_test(a_singular_factor_with_zero_b_is_refused),
      cmocka_unit_test(a_program_that_traps_division_by_zero_gets_info),
      cmocka_unit_test(few_right_hand_sides_go_in_one_task_per_tile_column),
      cmocka_unit_test(test_triangular_bad),
      cmocka_unit_test(test_triangular_after_failure),
      cmocka_unit_test(test_triangular_mem_limit),
      cmocka_unit_test(test_triangular_waits_for_room),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
