/* test_work_tiles.c: linear algebra on matrices of small tiles, run on
 * copies in work tiles (tarn_rt_options.work_tile; tarn/linalg.h, "Small
 * tiles"). The products (all four transposes, beta 0 and not, C given or
 * made, A times itself), A^T A, Cholesky, LU (square, wide, singular),
 * the solve, the inverses (a triangle's, and (A^T A)^-1 from QR's R, too)
 * and the condition estimates leave the caller's matrices in their own tiles
 * holding the same bits as the same calls on copies the test makes in work
 * tiles itself, in far fewer tasks than tile by tile; with work_tile 0, or
 * under a memory limit the copies do not fit in, they go tile by tile. A
 * matrix that is not positive definite, and a singular system, leave what
 * the calls promise (A as it was; LU's factors; B as it was); a failed
 * writer cancels the result; a matrix in a file is not copied (a Cholesky
 * reads only its lower triangle's tiles). The other linalg tests run
 * their tiled algorithms on their small tiles (tests/support.h, test_rt). */
#define _GNU_SOURCE
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linalg/linalg_internal.h"
#include "support.h"
#include "tarn.h"

#include "reference.h"

/* Tiles of 16: a task of 16^3 multiply-adds is small. Work tiles of 48:
 * the matrices below take several, and their kernels are too small to be
 * shared with idle workers, which could change their last bits (docs/
 * linalg.md): the copies' results are compared bit for bit. */
enum { WORK = 48, TILE = 16 };

/* A tiles x tiles matrix of the m x n buffer `v` (ld m). */
static tarn_matrix *upload(tarn_rt *rt, const double *v, size_t m, size_t n,
                           size_t tiles) {
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, tiles, tiles, v, m, &a),
                   0);
  return a;
}

/* Asserts that `a` is in tiles of TILE (clamped to it) and holds the bits
 * of `want`. */
static void same_matrix(tarn_matrix *a, tarn_matrix *want) {
  size_t m = tarn_matrix_rows(a), n = tarn_matrix_cols(a);
  assert_int_equal(tarn_matrix_tile_rows(a), m < TILE ? m : TILE);
  assert_int_equal(tarn_matrix_tile_cols(a), n < TILE ? n : TILE);
  double *w = test_buffer_of(want);
  test_matrix_holds(a, w);
  free(w);
}

/* ---- products ------------------------------------------------------------ */

/* C = 0.75 op(A) op(B) + beta C with M = 150, N = 130, K = 170 in tiles of
 * 16 (C given when `given`); returns the tasks it took. Checks C's tiles,
 * with `work` its bits against the product of copies in work tiles, and
 * its values against cblas_dgemm. */
static uint64_t check_product(tarn_rt *rt, tarn_trans ta, tarn_trans tb,
                              double beta, bool given, bool work) {
  enum { M = 150, N = 130, K = 170 };
  bool tra = ta == TARN_TRANS, trb = tb == TARN_TRANS;
  size_t am = tra ? K : M, an = tra ? M : K, bm = trb ? N : K, bn = trb ? K : N;
  double *av = test_random_matrix(am, an, 0, 11),
         *bv = test_random_matrix(bm, bn, 0, 12),
         *cv = test_random_matrix(M, N, 0, 13);
  tarn_matrix *a = upload(rt, av, am, an, TILE),
              *b = upload(rt, bv, bm, bn, TILE),
              *c = given ? upload(rt, cv, M, N, TILE) : NULL;
  /* the reference first: the same product of copies in work tiles */
  tarn_matrix *aw = test_retiled_to(rt, a, WORK, WORK),
              *bw = test_retiled_to(rt, b, WORK, WORK),
              *cw = given ? test_retiled_to(rt, c, WORK, WORK) : NULL;
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_matrix_gemm(aw, ta, bw, tb, 0.75, beta, &cw), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_matrix_gemm(a, ta, b, tb, 0.75, beta, &c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  uint64_t tasks = test_tasks_submitted(rt) - before;
  if (work) same_matrix(c, cw);
  double *ref = given ? cv : calloc(M * N, sizeof *ref);
  assert_non_null(ref);
  cblas_dgemm(CblasColMajor, tra ? CblasTrans : CblasNoTrans,
              trb ? CblasTrans : CblasNoTrans, M, N, K, 0.75, av, (int)am, bv,
              (int)bm, given ? beta : 0.0, ref, M);
  double *got = test_buffer_of(c);
  for (size_t i = 0; i < (size_t)M * N; i++)
    assert_true(fabs(got[i] - ref[i]) <= 1e-12 * K);
  free(got);
  if (!given) free(ref);
  TEST_DESTROY_MATRICES(a, b, c, aw, bw, cw);
  free(av);
  free(bv);
  free(cv);
  return tasks;
}

/* A product of A with itself into a new C. */
typedef int (*self_product)(tarn_matrix *a, tarn_matrix **c);

static int a_times_its_transpose(tarn_matrix *a, tarn_matrix **c) {
  return tarn_matrix_gemm(a, TARN_NO_TRANS, a, TARN_TRANS, 1.0, 0.0, c);
}

/* `product` of a random m x n A (seed) in tiles of TILE, in a region of
 * its own: C in tiles of TILE with the bits of the same product of a
 * copy of A in work tiles, in at most max_tasks tasks. */
static void check_self_product(tarn_rt *rt, size_t m, size_t n, uint64_t seed,
                               self_product product, uint64_t max_tasks) {
  double *av = test_random_matrix(m, n, 0, seed);
  tarn_matrix *a = upload(rt, av, m, n, TILE), *c = NULL, *cw = NULL;
  tarn_matrix *aw = test_retiled_to(rt, a, WORK, WORK);
  uint64_t tasks[2];
  for (int on = 0; on < 2; on++) {
    tarn_region *region = NULL;
    uint64_t before = test_tasks_submitted(rt);
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    assert_int_equal(product(on ? a : aw, on ? &c : &cw), 0);
    assert_int_equal(tarn_region_wait(region, NULL), 0);
    tasks[on] = test_tasks_submitted(rt) - before;
  }
  assert_true(tasks[1] <= max_tasks);
  same_matrix(c, cw);
  TEST_DESTROY_MATRICES(a, c, aw, cw);
  free(av);
}

/* Tile by tile the product takes 10 x 9 x 11 = 990 tasks; in work tiles
 * of 48 (4 x 3 of C, 4 along K), 48 products and the copies, each a task
 * or two (a retile into small tiles goes in blocks of them: A's, B's, C's
 * when read, and C's back). */
static void products_of_small_tiles_run_in_work_tiles(void **state) {
  (void)state;
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      uint64_t tasks =
          check_product(rt, (tarn_trans)ta, (tarn_trans)tb, 0.0, true, true);
      assert_true(tasks <= 48 + 8);
      tasks =
          check_product(rt, (tarn_trans)ta, (tarn_trans)tb, -0.5, true, true);
      assert_true(tasks <= 48 + 8);
      check_product(rt, (tarn_trans)ta, (tarn_trans)tb, 0.0, false, true);
    }
  /* A times itself: one copy of A serves both operands */
  check_self_product(rt, 150, 170, 14, a_times_its_transpose, 64 + 8);
  assert_int_equal(tarn_rt_destroy(rt), 0);

  /* work_tile 0: tile by tile */
  rt = test_rt_work(2, 0, 0);
  assert_true(
      check_product(rt, TARN_NO_TRANS, TARN_NO_TRANS, 0.0, true, false) >= 990);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A^T A of 170 x 150 in tiles of 16: C in tiles of 16 x 16 with the bits
 * of A^T A of a copy in work tiles, in few tasks. */
static void a_transposed_times_a_of_small_tiles(void **state) {
  (void)state;
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  check_self_product(rt, 170, 150, 15, tarn_matrix_syrk_ata, 40 + 8);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- factorisations ----------------------------------------------------- */

/* Cholesky of the n x n SPD buffer `spd` (with A(k, k) = -1 when k >= 0):
 * its status and info, A in its tiles against the call on a copy in work
 * tiles (the factor), or against `spd` itself (not positive definite: A as
 * it was). Returns the tasks the call took. */
static uint64_t check_cholesky(tarn_rt *rt, double *spd, size_t n, long k) {
  if (k >= 0) spd[k + k * n] = -1.0;
  tarn_matrix *a = upload(rt, spd, n, n, TILE),
              *aw = test_retiled_to(rt, a, WORK, WORK);
  int want_info = -1, info = -1;
  int want = tarn_matrix_cholesky(aw, &want_info);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(tarn_matrix_cholesky(a, &info), want);
  uint64_t tasks = test_tasks_submitted(rt) - before;
  assert_int_equal(info, want_info);
  if (k >= 0) {
    assert_int_equal(want, TARN_EINVAL);
    assert_true(info > 0 && info <= k + 1);
    test_matrix_holds(a, spd);
  } else {
    assert_int_equal(want, 0);
    same_matrix(a, aw);
  }
  TEST_DESTROY_MATRICES(a, aw);
  return tasks;
}

/* LU of the m x n buffer `v`: status, info, pivots and factors against
 * the call on a copy in work tiles (a singular A's factors too), and P A
 * = L U. */
static void check_lu(tarn_rt *rt, const double *v, size_t m, size_t n,
                     int want_rc, int want_info) {
  size_t k = m < n ? m : n;
  tarn_matrix *a = upload(rt, v, m, n, TILE),
              *aw = test_retiled_to(rt, a, WORK, WORK);
  size_t *piv = malloc(k * sizeof *piv), *want_piv = malloc(k * sizeof *piv);
  assert_non_null(piv);
  assert_non_null(want_piv);
  int info = -1, wi = -1;
  assert_int_equal(tarn_matrix_lu(aw, want_piv, &wi), want_rc);
  assert_int_equal(wi, want_info);
  assert_int_equal(tarn_matrix_lu(a, piv, &info), want_rc);
  assert_int_equal(info, want_info);
  assert_memory_equal(piv, want_piv, k * sizeof *piv);
  same_matrix(a, aw);
  double *f = test_buffer_of(a);
  assert_true(test_lu_residual(v, f, piv, m, n) < 20);
  free(f);
  free(piv);
  free(want_piv);
  TEST_DESTROY_MATRICES(a, aw);
}

/* A X = B with A 150 x 150 (column `zero` zeroed when >= 0) and B of 7
 * columns, both in tiles of 16: status, info, A and B against the call on
 * copies in work tiles; singular: A holds its factors, B as it was. */
static void check_solve(tarn_rt *rt, long zero) {
  enum { N = 150, NRHS = 7 };
  double *av = test_random_matrix(N, N, 2.0, 16),
         *bv = test_random_matrix(N, NRHS, 0, 17);
  if (zero >= 0)
    for (size_t i = 0; i < N; i++) av[i + (size_t)zero * N] = 0.0;
  tarn_matrix *a = upload(rt, av, N, N, TILE),
              *b = upload(rt, bv, N, NRHS, TILE);
  tarn_matrix *aw = test_retiled_to(rt, a, WORK, WORK),
              *bw = test_retiled_to(rt, b, WORK, WORK);
  int info = -1, wi = -1;
  int want = tarn_matrix_solve(aw, bw, &wi);
  assert_int_equal(tarn_matrix_solve(a, b, &info), want);
  assert_int_equal(info, wi);
  same_matrix(a, aw);
  if (zero >= 0) {
    assert_int_equal(want, TARN_EINVAL);
    assert_int_equal(info, zero + 1);
    test_matrix_holds(b, bv);
  } else {
    assert_int_equal(want, 0);
    same_matrix(b, bw);
    double *x = test_buffer_of(b);
    assert_true(test_solve_residual(av, x, bv, N, NRHS) < 20);
    free(x);
  }
  TEST_DESTROY_MATRICES(a, b, aw, bw);
  free(av);
  free(bv);
}

static void factorisations_of_small_tiles_run_in_work_tiles(void **state) {
  (void)state;
  enum { N = 150 };
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  double *spd = test_spd_matrix(N, 1.0, 18);
  /* tile by tile 10 potrf, 45 trsm, 45 syrk and 120 gemm tasks; in work
   * tiles 4 + 6 + 6 + 4 tasks and a copy there and back */
  assert_true(check_cholesky(rt, spd, N, -1) <= 20 + 8);
  check_cholesky(rt, spd, N, 100); /* not positive definite */
  free(spd);
  double *v = test_random_matrix(N, N, 0, 19);
  check_lu(rt, v, N, N, 0, 0);
  for (size_t i = 0; i < N; i++) v[i + 70 * N] = 0.0;
  check_lu(rt, v, N, N, TARN_EINVAL, 71); /* singular: factors still */
  free(v);
  v = test_random_matrix(120, 170, 0, 20);
  check_lu(rt, v, 120, 170, 0, 0);
  free(v);
  check_solve(rt, -1);
  check_solve(rt, 40);
  assert_int_equal(tarn_rt_destroy(rt), 0);

  rt = test_rt_work(2, 0, 0); /* tile by tile */
  spd = test_spd_matrix(N, 1.0, 18);
  tarn_matrix *a = upload(rt, spd, N, N, TILE);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
  assert_true(test_tasks_submitted(rt) - before >= 220);
  tarn_matrix_destroy(a);
  free(spd);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* An LU of one tile column whose panel is gathered (tiles of at most 64
 * rows, at most 1 MiB: src/linalg/lu.c) is not copied into work tiles: its
 * one task factors a column-major copy of the panel already. 600 x 16 in
 * tiles of 16: one task, and the bits, pivots and info of the call with
 * work tiles off, under a limit too; a panel factored in place
 * (tarn__lu_gather_short_panels off) is copied. */
static void a_gathered_tile_column_is_not_copied(void **state) {
  (void)state;
  enum { M = 600 };
  double *v = test_random_matrix(M, TILE, 0, 23);
  size_t piv[2][TILE];
  double *f[2];
  for (int work = 0; work < 2; work++) {
    tarn_rt *rt = test_rt_work(2, work ? (size_t)1 << 20 : 0, work ? WORK : 0);
    tarn_matrix *a = upload(rt, v, M, TILE, TILE);
    uint64_t before = test_tasks_submitted(rt);
    int info = -1;
    assert_int_equal(tarn_matrix_lu(a, piv[work], &info), 0);
    assert_int_equal(info, 0);
    assert_int_equal(test_tasks_submitted(rt) - before, 1);
    f[work] = test_buffer_of(a);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(piv[0], piv[1], sizeof piv[0]);
  assert_memory_equal(f[0], f[1], (size_t)M * TILE * sizeof(double));
  assert_true(test_lu_residual(v, f[1], piv[1], M, TILE) < 20);
  free(f[0]);
  free(f[1]);

  /* in place, by the panel's calls per tile: copied (its copy tasks, and
   * then the bits of the call on a copy in work tiles) */
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  tarn__lu_gather_short_panels(false);
  tarn_matrix *a = upload(rt, v, M, TILE, TILE);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(tarn_matrix_lu(a, piv[0], NULL), 0);
  assert_true(test_tasks_submitted(rt) - before > 1);
  tarn_matrix_destroy(a);
  check_lu(rt, v, M, TILE, 0, 0);
  tarn__lu_gather_short_panels(true);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  free(v);
}

/* A solve with factors of 150 x 150 in tiles of 16 into `b` (in tiles of
 * 16, `cols` columns; kind 0 Cholesky's, 1 and 2 the triangular solve
 * with L and L^T, 3 and 4 LU's both ways): status and info against the
 * same call on copies in work tiles, B's bits against that call's X when
 * `copied` (else its values), or B as it was when the factor is singular.
 * Returns the tasks it took. */
static uint64_t check_factor_solve(tarn_rt *rt, tarn_matrix *l, tarn_matrix *lu,
                                   const size_t *piv, int kind, size_t cols,
                                   bool copied, int want_rc) {
  enum { N = 150 };
  double *bv = test_random_matrix(N, cols, 0, 30 + (uint64_t)kind);
  tarn_matrix *b = upload(rt, bv, N, cols, TILE);
  tarn_matrix *f = kind >= 3 ? lu : l, *fw = test_retiled_to(rt, f, WORK, WORK),
              *bw = test_retiled_to(rt, b, WORK, WORK);
  int wi = -1, info = -1, want = 0, got = 0;
  uint64_t before = 0;
  for (int on = 0; on < 2; on++) {
    tarn_matrix *x = on ? b : bw, *g = on ? f : fw;
    if (on) before = test_tasks_submitted(rt);
    int *i = on ? &info : &wi;
    int rc;
    if (kind == 0)
      rc = tarn_matrix_cholesky_solve(g, x, i);
    else if (kind <= 2)
      rc = tarn_matrix_triangular_solve(g, TARN_LOWER,
                                        kind == 1 ? TARN_NO_TRANS : TARN_TRANS,
                                        TARN_NON_UNIT, x, i);
    else
      rc = tarn_matrix_lu_solve(g, piv, kind == 3 ? TARN_NO_TRANS : TARN_TRANS,
                                x, i);
    if (on)
      got = rc;
    else
      want = rc;
  }
  uint64_t tasks = test_tasks_submitted(rt) - before;
  assert_int_equal(want, want_rc);
  assert_int_equal(got, want_rc);
  assert_int_equal(info, wi);
  if (want_rc != 0) {
    test_matrix_holds(b, bv);
  } else if (copied) {
    same_matrix(b, bw);
  } else { /* by tiles: the same X but for rounding */
    double *x = test_buffer_of(b), *y = test_buffer_of(bw);
    for (size_t k = 0; k < N * cols; k++)
      assert_true(fabs(x[k] - y[k]) <= 1e-9 * (1.0 + fabs(y[k])));
    free(x);
    free(y);
  }
  TEST_DESTROY_MATRICES(b, fw, bw);
  free(bv);
  return tasks;
}

/* The solves with factors of small tiles, with 70 right-hand sides, run
 * on copies: X with the bits of the same call on copies, in a few tasks;
 * with U singular, TARN_EINVAL and B as it was. With 40 right-hand sides
 * (under 64), or with work_tile 0, tile by tile. */
static void solves_of_many_columns_run_in_work_tiles(void **state) {
  (void)state;
  enum { N = 150 };
  double *spd = test_spd_matrix(N, 1.0, 24),
         *av = test_random_matrix(N, N, 2.0, 25);
  size_t piv[N];
  uint64_t tiled[2] = {0, 0};
  for (int work = 1; work >= 0; work--) {
    tarn_rt *rt = test_rt_work(2, 0, work ? WORK : 0);
    tarn_matrix *l = upload(rt, spd, N, N, TILE),
                *lu = upload(rt, av, N, N, TILE);
    assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
    assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
    for (int kind = 0; kind < 5; kind++) {
      uint64_t tasks = check_factor_solve(rt, l, lu, piv, kind, 70, work, 0);
      if (work)
        assert_true(tasks <= 80);
      else
        tiled[kind % 2] = tasks;
    }
    if (work) {
      assert_true(check_factor_solve(rt, l, lu, piv, 1, 40, false, 0) >= 200);
      /* U(70, 70) = 0: singular, both ways */
      double *f = test_buffer_of(lu);
      f[70 + 70 * N] = 0.0;
      tarn_matrix *sing = upload(rt, f, N, N, TILE);
      check_factor_solve(rt, l, sing, piv, 3, 70, true, TARN_EINVAL);
      check_factor_solve(rt, l, sing, piv, 4, 70, true, TARN_EINVAL);
      tarn_matrix_destroy(sing);
      free(f);
    }
    TEST_DESTROY_MATRICES(l, lu);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_true(tiled[0] >= 300 && tiled[1] >= 300);
  free(spd);
  free(av);
}

/* Solve kind `kind` (as check_factor_solve's: 0 Cholesky's, 1 the
 * triangular with L, 3 LU's) with factor f into x. */
static int solve_kind(int kind, tarn_matrix *f, const size_t *piv,
                      tarn_matrix *x) {
  if (kind == 0) return tarn_matrix_cholesky_solve(f, x, NULL);
  if (kind == 1)
    return tarn_matrix_triangular_solve(f, TARN_LOWER, TARN_NO_TRANS,
                                        TARN_NON_UNIT, x, NULL);
  return tarn_matrix_lu_solve(f, piv, TARN_NO_TRANS, x, NULL);
}

/* Factors of 150 x 150 in tiles of 32: a solve goes on copies only where
 * the factor's copy pays (linalg_internal.h, TARN__SOLVE_WORK_COLS_WIDE):
 * Cholesky's and LU's with 256 right-hand sides (two passes over the
 * copy), in fewer tasks than with work_tile 0 and with the bits of the
 * same solve on copies the test makes; with 64, and the triangular solve
 * (one pass) with 256, the tasks of work_tile 0. */
static void solves_on_tiles_of_32_are_copied_only_when_wide(void **state) {
  (void)state;
  enum { N = 150, T32 = 32 };
  static const struct {
    int kind;
    size_t cols;
    bool copied;
  } cases[] = {{0, 256, true}, {3, 256, true},  {0, 64, false},
               {3, 64, false}, {1, 256, false}, {1, 64, false}};
  enum { CASES = sizeof cases / sizeof cases[0] };
  double *spd = test_spd_matrix(N, 1.0, 24),
         *av = test_random_matrix(N, N, 2.0, 25);
  size_t piv[N];
  uint64_t tasks[2][CASES];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    tarn_matrix *l = upload(rt, spd, N, N, T32),
                *lu = upload(rt, av, N, N, T32);
    assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
    assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
    for (size_t c = 0; c < CASES; c++) {
      double *bv = test_random_matrix(N, cases[c].cols, 0, 40 + c);
      tarn_matrix *f = cases[c].kind == 3 ? lu : l,
                  *b = upload(rt, bv, N, cases[c].cols, T32),
                  *fw = test_retiled_to(rt, f, WORK, WORK),
                  *bw = test_retiled_to(rt, b, WORK, WORK);
      assert_int_equal(solve_kind(cases[c].kind, fw, piv, bw), 0);
      uint64_t before = test_tasks_submitted(rt);
      assert_int_equal(solve_kind(cases[c].kind, f, piv, b), 0);
      tasks[by_tiles][c] = test_tasks_submitted(rt) - before;
      if (!by_tiles && cases[c].copied) {
        double *x = test_buffer_of(bw);
        test_matrix_holds(b, x);
        free(x);
      }
      TEST_DESTROY_MATRICES(b, fw, bw);
      free(bv);
    }
    TEST_DESTROY_MATRICES(l, lu);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (size_t c = 0; c < CASES; c++) {
    print_message("solve %d with %zu columns: %llu tasks, %llu by tiles\n",
                  cases[c].kind, cases[c].cols, (unsigned long long)tasks[0][c],
                  (unsigned long long)tasks[1][c]);
    if (cases[c].copied)
      assert_true(tasks[0][c] < tasks[1][c]);
    else
      assert_int_equal(tasks[0][c], tasks[1][c]);
  }
  free(spd);
  free(av);
}

/* ---- inverses ------------------------------------------------------------ */

/* Which inverse check_inverse runs: Cholesky's from L, LU's from its
 * factors and pivots, tarn_matrix_inverse from A. */
enum inverse_kind { INV_CHOLESKY, INV_LU, INV_WHOLE };

static int invert(enum inverse_kind kind, tarn_matrix *a, const size_t *piv,
                  int *info) {
  switch (kind) {
    case INV_CHOLESKY:
      return tarn_matrix_cholesky_inverse(a, info);
    case INV_LU:
      return tarn_matrix_lu_inverse(a, piv, info);
    case INV_WHOLE:
      break;
  }
  return tarn_matrix_inverse(a, info);
}

/* The inverse of the n x n buffer `v` in tiles of 16: status, info and
 * (`copied`: the call goes on copies) bits against the same call on a
 * copy in work tiles the test makes itself, or (want_info > 0: a zero on
 * the diagonal) TARN_EINVAL with the matrix as it was. Returns the tasks
 * it took. */
static uint64_t check_inverse(tarn_rt *rt, enum inverse_kind kind,
                              const double *v, size_t n, const size_t *piv,
                              int want_info, bool copied) {
  tarn_matrix *a = upload(rt, v, n, n, TILE),
              *aw = test_retiled_to(rt, a, WORK, WORK);
  int info_w = -1, info = -1;
  int want = invert(kind, aw, piv, &info_w);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(invert(kind, a, piv, &info), want);
  uint64_t tasks = test_tasks_submitted(rt) - before;
  assert_int_equal(info, info_w);
  assert_int_equal(info, want_info);
  if (want_info > 0) {
    assert_int_equal(want, TARN_EINVAL);
    if (kind != INV_WHOLE) test_matrix_holds(a, v);
  } else {
    assert_int_equal(want, 0);
    if (copied) same_matrix(a, aw);
  }
  TEST_DESTROY_MATRICES(a, aw);
  return tasks;
}

/* The inverses of 150 x 150 matrices in tiles of 16 go on copies in work
 * tiles, and a zero on the diagonal leaves the factor as it was; with
 * work_tile 0 they go tile by tile, in many more tasks. */
static void inverses_of_small_tiles_run_in_work_tiles(void **state) {
  (void)state;
  enum { N = 150 };
  uint64_t tasks[2][3];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    double *spd = test_spd_matrix(N, 1.0, 18);
    tarn_matrix *l = upload(rt, spd, N, N, TILE);
    assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
    double *lv = test_buffer_of(l);
    tasks[by_tiles][0] =
        check_inverse(rt, INV_CHOLESKY, lv, N, NULL, 0, !by_tiles);
    double *v = test_random_matrix(N, N, 0, 21);
    size_t piv[N];
    tarn_matrix *lu = upload(rt, v, N, N, TILE);
    assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
    double *luv = test_buffer_of(lu);
    tasks[by_tiles][1] = check_inverse(rt, INV_LU, luv, N, piv, 0, !by_tiles);
    tasks[by_tiles][2] = check_inverse(rt, INV_WHOLE, v, N, NULL, 0, !by_tiles);
    if (!by_tiles) {
      lv[100 + 100 * N] = 0.0;
      luv[70 + 70 * N] = 0.0;
      check_inverse(rt, INV_CHOLESKY, lv, N, NULL, 101, true);
      check_inverse(rt, INV_LU, luv, N, piv, 71, true);
      for (size_t i = 0; i < N; i++) v[i + 70 * N] = 0.0; /* singular */
      check_inverse(rt, INV_WHOLE, v, N, NULL, 71, true);
    }
    TEST_DESTROY_MATRICES(l, lu);
    free(spd);
    free(lv);
    free(v);
    free(luv);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (int k = 0; k < 3; k++) {
    print_message("inverse %d: %llu tasks on copies, %llu by tiles\n", k,
                  (unsigned long long)tasks[0][k],
                  (unsigned long long)tasks[1][k]);
    assert_true(4 * tasks[0][k] < tasks[1][k]);
  }
}

/* The condition estimates from LU's and Cholesky's factors of 150 x 150
 * in tiles of 16 solve on a copy of the factor in work tiles: the bits of
 * the same call on a copy the test makes, in fewer tasks than the call
 * with work_tile 0 (here each of its solves is one task of the whole
 * factor; at N = 1024 in tiles of 16, thousands), whose estimate may
 * differ in its last bits. */
static void condition_estimates_of_small_tiles_run_on_copies(void **state) {
  (void)state;
  enum { N = 150 };
  uint64_t tasks[2][2];
  double got[2][2];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    double *spd = test_spd_matrix(N, 1.0, 18),
           *v = test_random_matrix(N, N, 0, 21);
    tarn_matrix *l = upload(rt, spd, N, N, TILE),
                *lu = upload(rt, v, N, N, TILE);
    size_t piv[N];
    assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
    assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
    tarn_matrix *lw = test_retiled_to(rt, l, WORK, WORK),
                *luw = test_retiled_to(rt, lu, WORK, WORK);
    double want[2];
    assert_int_equal(tarn_matrix_cholesky_rcond(lw, 2.0, &want[0]), 0);
    assert_int_equal(
        tarn_matrix_lu_rcond(luw, piv, TARN_NORM_INF, 3.0, &want[1]), 0);
    uint64_t before = test_tasks_submitted(rt);
    assert_int_equal(tarn_matrix_cholesky_rcond(l, 2.0, &got[by_tiles][0]), 0);
    tasks[by_tiles][0] = test_tasks_submitted(rt) - before;
    before = test_tasks_submitted(rt);
    assert_int_equal(
        tarn_matrix_lu_rcond(lu, piv, TARN_NORM_INF, 3.0, &got[by_tiles][1]),
        0);
    tasks[by_tiles][1] = test_tasks_submitted(rt) - before;
    for (int k = 0; k < 2; k++) {
      if (!by_tiles) assert_memory_equal(&got[0][k], &want[k], sizeof want[k]);
      assert_true(got[by_tiles][k] > 0 && got[by_tiles][k] <= 1);
    }
    TEST_DESTROY_MATRICES(l, lu, lw, luw);
    free(spd);
    free(v);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (int k = 0; k < 2; k++) {
    print_message("rcond %d: %llu tasks on a copy, %llu by tiles\n", k,
                  (unsigned long long)tasks[0][k],
                  (unsigned long long)tasks[1][k]);
    assert_true(tasks[0][k] < tasks[1][k]);
    assert_true(fabs(got[0][k] - got[1][k]) <= 1e-12 * got[1][k]);
  }
}

/* ---- triangles ----------------------------------------------------------- */

/* An m x n matrix (m >= n) whose leading n x n block's triangle (`lower`
 * or upper) is that of the Cholesky factor of an SPD matrix, NaNs
 * elsewhere (the rows below the block too), `zero` (when not negative) on
 * the diagonal at (zero, zero). */
static double *triangle_with_nans(size_t m, size_t n, bool lower, long zero) {
  double *spd = test_spd_matrix(n, 1.0, 31);
  lapack_int info =
      LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, spd, (lapack_int)n);
  assert_int_equal(info, 0);
  double *t = malloc(m * n * sizeof *t);
  assert_non_null(t);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      bool in = i < n && (lower ? i >= j : i <= j);
      t[i + j * m] = !in ? NAN : lower ? spd[i + j * n] : spd[j + i * n];
    }
  if (zero >= 0) t[(size_t)zero + (size_t)zero * m] = 0.0;
  free(spd);
  return t;
}

/* T^-1 of the n x n triangle of an m x n matrix in tiles of `tile` on
 * `rt`: status and info against the same call on a whole copy the test
 * makes in work tiles, the matrix's bits too when `copied` (the NaNs
 * around the triangle kept: neither read nor written), as it was for a
 * zero on the diagonal. Returns the tasks it took. */
static uint64_t check_triangular_inverse(tarn_rt *rt, size_t m, size_t n,
                                         size_t tile, bool lower,
                                         tarn_diag diag, long zero,
                                         bool copied) {
  double *v = triangle_with_nans(m, n, lower, zero);
  tarn_matrix *t = upload(rt, v, m, n, tile),
              *tw = test_retiled_to(rt, t, WORK, WORK);
  tarn_uplo uplo = lower ? TARN_LOWER : TARN_UPPER;
  int info_w = -1, info = -1;
  int want = tarn_matrix_triangular_inverse(tw, uplo, diag, &info_w);
  uint64_t before = test_tasks_submitted(rt);
  assert_int_equal(tarn_matrix_triangular_inverse(t, uplo, diag, &info), want);
  uint64_t tasks = test_tasks_submitted(rt) - before;
  assert_int_equal(info, info_w);
  if (zero >= 0 && diag == TARN_NON_UNIT) {
    assert_int_equal(want, TARN_EINVAL);
    assert_int_equal(info, zero + 1);
    test_matrix_holds(t, v);
  } else {
    assert_int_equal(want, 0);
    if (copied) {
      double *w = test_buffer_of(tw);
      test_matrix_holds(t, w);
      free(w);
    }
  }
  TEST_DESTROY_MATRICES(t, tw);
  free(v);
  return tasks;
}

/* The triangular inverse of 150 x 150 in tiles of 16 goes on a copy of
 * its triangle in work tiles: lower and upper, with its diagonal or a unit
 * one, the bits of the call on a copy, the other triangle's NaNs kept; a
 * zero on the diagonal leaves T as it was (with a unit diagonal the zero is
 * not read); with work_tile 0 it goes tile by tile, in many more tasks.
 * So does the upper T of a tall 300 x 150 matrix (a QR's R), the NaNs
 * below it kept; a tall matrix's lower T (the rows below it would be
 * copied) and a T in tiles of 64 (whose tasks are as fast as the copy's)
 * go by their own tiles. */
static void triangular_inverses_of_small_tiles_run_on_copies(void **state) {
  (void)state;
  enum { N = 150 };
  uint64_t tasks[2][3];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    for (int lower = 0; lower < 2; lower++) {
      tasks[by_tiles][lower] = check_triangular_inverse(
          rt, N, N, TILE, lower, TARN_NON_UNIT, -1, !by_tiles);
      if (by_tiles) continue;
      check_triangular_inverse(rt, N, N, TILE, lower, TARN_UNIT, -1, true);
      check_triangular_inverse(rt, N, N, TILE, lower, TARN_NON_UNIT, 100, true);
      check_triangular_inverse(rt, N, N, TILE, lower, TARN_UNIT, 100, true);
    }
    tasks[by_tiles][2] = check_triangular_inverse(rt, 2 * N, N, TILE, false,
                                                  TARN_NON_UNIT, -1, !by_tiles);
    if (!by_tiles)
      check_triangular_inverse(rt, 2 * N, N, TILE, false, TARN_NON_UNIT, 100,
                               true);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (int k = 0; k < 3; k++) {
    print_message(
        "triangular inverse %d: %llu tasks on a copy, %llu by tiles\n", k,
        (unsigned long long)tasks[0][k], (unsigned long long)tasks[1][k]);
    assert_true(4 * tasks[0][k] < tasks[1][k]);
  }
  /* by their own tiles: the same tasks as with work_tile 0 */
  uint64_t own[2][2];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : 256);
    own[by_tiles][0] = check_triangular_inverse(rt, 2 * N, N, TILE, true,
                                                TARN_NON_UNIT, -1, false);
    own[by_tiles][1] = check_triangular_inverse(rt, 4 * 64, 4 * 64, 64, true,
                                                TARN_NON_UNIT, -1, false);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_int_equal(own[0][0], own[1][0]);
  assert_int_equal(own[0][1], own[1][1]);
}

/* The condition estimate of a 150 x 150 triangle in tiles of 16 runs on a
 * copy of the triangle in work tiles: lower and upper (and the upper of a
 * tall 300 x 150 matrix, a QR's R), each norm, the bits
 * of the same call on a whole copy the test makes (NaNs in the other
 * triangle: not read), in fewer tasks than with work_tile 0, within
 * 1e-12 relative of that call's estimate. */
static void triangle_condition_estimates_run_on_copies(void **state) {
  (void)state;
  enum { N = 150, CASES = 6 };
  uint64_t tasks[2][CASES];
  double got[2][CASES];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    for (int k = 0; k < CASES; k++) {
      /* lower, upper, then the upper T of a tall 300 x 150 matrix */
      bool lower = k < 2;
      size_t m = k < 4 ? N : 2 * N;
      tarn_norm kind = k % 2 ? TARN_NORM_INF : TARN_NORM_ONE;
      tarn_uplo uplo = lower ? TARN_LOWER : TARN_UPPER;
      double *v = triangle_with_nans(m, N, lower, -1);
      tarn_matrix *t = upload(rt, v, m, N, TILE),
                  *tw = test_retiled_to(rt, t, WORK, WORK);
      double want = 0;
      assert_int_equal(
          tarn_matrix_triangular_rcond(tw, uplo, TARN_NON_UNIT, kind, &want),
          0);
      uint64_t before = test_tasks_submitted(rt);
      assert_int_equal(tarn_matrix_triangular_rcond(t, uplo, TARN_NON_UNIT,
                                                    kind, &got[by_tiles][k]),
                       0);
      tasks[by_tiles][k] = test_tasks_submitted(rt) - before;
      if (!by_tiles) assert_memory_equal(&got[0][k], &want, sizeof want);
      assert_true(got[by_tiles][k] > 0 && got[by_tiles][k] <= 1);
      TEST_DESTROY_MATRICES(t, tw);
      free(v);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (int k = 0; k < CASES; k++) {
    print_message("triangle rcond %d: %llu tasks on a copy, %llu by tiles\n", k,
                  (unsigned long long)tasks[0][k],
                  (unsigned long long)tasks[1][k]);
    assert_true(tasks[0][k] < tasks[1][k]);
    assert_true(fabs(got[0][k] - got[1][k]) <= 1e-12 * got[1][k]);
  }
}

/* Solves with the upper triangle of a tall 300 x 150 matrix in tiles of
 * 16 (a QR's R, NaNs elsewhere) and 70 right-hand sides run on copies of
 * the triangle and of B: X with the bits of the same solve on whole copies
 * the test makes, T as it was, in a few tasks; with work_tile 0, tile by
 * tile. The lower triangle of a tall matrix goes by tiles either way. */
static void tall_triangular_solves_run_on_copies(void **state) {
  (void)state;
  enum { M = 300, N = 150, NRHS = 70 };
  double *bv = test_random_matrix(N, NRHS, 0, 37);
  uint64_t tasks[2][3];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    for (int k = 0; k < 3; k++) {
      bool lower = k == 2;
      tarn_trans trans = k == 1 ? TARN_TRANS : TARN_NO_TRANS;
      tarn_uplo uplo = lower ? TARN_LOWER : TARN_UPPER;
      double *v = triangle_with_nans(M, N, lower, -1);
      tarn_matrix *t = upload(rt, v, M, N, TILE),
                  *tw = test_retiled_to(rt, t, WORK, WORK),
                  *b = upload(rt, bv, N, NRHS, TILE),
                  *bw = test_retiled_to(rt, b, WORK, WORK);
      assert_int_equal(tarn_matrix_triangular_solve(tw, uplo, trans,
                                                    TARN_NON_UNIT, bw, NULL),
                       0);
      uint64_t before = test_tasks_submitted(rt);
      assert_int_equal(
          tarn_matrix_triangular_solve(t, uplo, trans, TARN_NON_UNIT, b, NULL),
          0);
      tasks[by_tiles][k] = test_tasks_submitted(rt) - before;
      double *x = test_buffer_of(bw);
      if (!by_tiles && !lower) test_matrix_holds(b, x);
      test_matrix_holds(t, v);
      free(x);
      TEST_DESTROY_MATRICES(t, tw, b, bw);
      free(v);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  for (int k = 0; k < 3; k++)
    print_message("tall triangular solve %d: %llu tasks, %llu by tiles\n", k,
                  (unsigned long long)tasks[0][k],
                  (unsigned long long)tasks[1][k]);
  assert_true(tasks[0][0] <= 80 && tasks[1][0] >= 300);
  assert_true(tasks[0][1] <= 80 && tasks[1][1] >= 300);
  assert_int_equal(tasks[0][2], tasks[1][2]);
  free(bv);
}

/* A tall matrix narrower than the work tile (300 x 40 in tiles of 16,
 * work tiles of 48): the copy of its upper triangle is one tile column of
 * 48 x 40, which is not copied again (the calls on it once recursed
 * without end); the inverse, the estimate and a solve of 70 columns have
 * the bits of the same calls on a whole copy the test makes. */
static void a_narrow_tall_triangle_is_copied_once(void **state) {
  (void)state;
  enum { M = 300, N = 40, NRHS = 70 };
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  double *v = triangle_with_nans(M, N, false, -1),
         *bv = test_random_matrix(N, NRHS, 0, 39);
  tarn_matrix *t = upload(rt, v, M, N, TILE),
              *tw = test_retiled_to(rt, t, WORK, WORK),
              *b = upload(rt, bv, N, NRHS, TILE),
              *bw = test_retiled_to(rt, b, WORK, WORK);
  double got = 0, want = 0;
  assert_int_equal(tarn_matrix_triangular_rcond(tw, TARN_UPPER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &want),
                   0);
  assert_int_equal(tarn_matrix_triangular_rcond(t, TARN_UPPER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &got),
                   0);
  assert_memory_equal(&got, &want, sizeof got);
  assert_int_equal(tarn_matrix_triangular_solve(tw, TARN_UPPER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, bw, NULL),
                   0);
  assert_int_equal(tarn_matrix_triangular_solve(t, TARN_UPPER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, b, NULL),
                   0);
  double *x = test_buffer_of(bw);
  test_matrix_holds(b, x);
  free(x);
  assert_int_equal(
      tarn_matrix_triangular_inverse(tw, TARN_UPPER, TARN_NON_UNIT, NULL), 0);
  assert_int_equal(
      tarn_matrix_triangular_inverse(t, TARN_UPPER, TARN_NON_UNIT, NULL), 0);
  double *w = test_buffer_of(tw);
  test_matrix_holds(t, w);
  free(w);
  TEST_DESTROY_MATRICES(t, tw, b, bw);
  free(v);
  free(bv);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* (A^T A)^-1 from the QR factor of A 200 x 150 in tiles of 16 runs on a
 * copy of R in work tiles: its result in tiles of 16 holds the bits of the
 * call on the factor retiled by the test into work tiles, in far fewer
 * tasks than with work_tile 0; a zero on R's diagonal gives TARN_EINVAL,
 * its order in info and no result, as there. */
static void qr_covariance_of_small_tiles_runs_on_a_copy(void **state) {
  (void)state;
  enum { M = 200, N = 150 };
  uint64_t tasks[2];
  for (int by_tiles = 0; by_tiles < 2; by_tiles++) {
    tarn_rt *rt = test_rt_work(2, 0, by_tiles ? 0 : WORK);
    double *v = test_random_matrix(M, N, 0, 35);
    tarn_matrix *f = upload(rt, v, M, N, TILE), *t = NULL;
    assert_int_equal(tarn_matrix_qr(f, 0, &t), 0);
    tarn_matrix *fw = test_retiled_to(rt, f, WORK, WORK), *c = NULL, *cw = NULL;
    int info = -1, info_w = -1;
    assert_int_equal(tarn_matrix_qr_ata_inverse(fw, &cw, &info_w), 0);
    uint64_t before = test_tasks_submitted(rt);
    assert_int_equal(tarn_matrix_qr_ata_inverse(f, &c, &info), 0);
    tasks[by_tiles] = test_tasks_submitted(rt) - before;
    assert_int_equal(info, 0);
    if (!by_tiles) same_matrix(c, cw);
    TEST_DESTROY_MATRICES(c, cw, fw);
    if (!by_tiles) { /* R(90, 90) = 0 */
      double *fv = test_buffer_of(f);
      fv[90 + 90 * M] = 0.0;
      tarn_matrix *sing = upload(rt, fv, M, N, TILE),
                  *singw = test_retiled_to(rt, sing, WORK, WORK);
      assert_int_equal(tarn_matrix_qr_ata_inverse(singw, &cw, &info_w),
                       TARN_EINVAL);
      c = (tarn_matrix *)&info; /* must become NULL */
      assert_int_equal(tarn_matrix_qr_ata_inverse(sing, &c, &info),
                       TARN_EINVAL);
      assert_null(c);
      assert_int_equal(info, 91);
      assert_int_equal(info_w, 91);
      TEST_DESTROY_MATRICES(sing, singw);
      free(fv);
    }
    TEST_DESTROY_MATRICES(f, t);
    free(v);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  print_message("(A^T A)^-1: %llu tasks on a copy, %llu by tiles\n",
                (unsigned long long)tasks[0], (unsigned long long)tasks[1]);
  assert_true(2 * tasks[0] < tasks[1]);
}

/* Under a memory limit the copies (and each task copying a work tile)
 * must take at most an eighth of it: the Cholesky of A of 150 x 150 (176
 * KiB, 100 tiles of a page) goes tile by tile under 1 MiB and in work
 * tiles under 1.75 MiB (only its lower triangle is copied) and 16 MiB,
 * each to the bits of the call without a limit that goes the same way. */
static void the_copies_need_room_under_a_limit(void **state) {
  (void)state;
  enum { N = 150 };
  double *spd = test_spd_matrix(N, 1.0, 21);
  double *want[2];
  for (int work = 0; work < 2; work++) {
    tarn_rt *rt = test_rt_work(2, 0, work ? WORK : 0);
    tarn_matrix *a = upload(rt, spd, N, N, TILE);
    assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
    want[work] = test_buffer_of(a);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  /* 1.75 MiB: an eighth holds the lower triangle's 10 work tiles (whole
   * tiles of 20 KiB: 200 KiB), not all 16 */
  static const size_t limits[3] = {(size_t)1 << 20, (size_t)7 << 18,
                                   (size_t)16 << 20};
  for (int l = 0; l < 3; l++) {
    int work = l > 0;
    tarn_rt *rt = test_rt_work(2, limits[l], WORK);
    tarn_matrix *a = upload(rt, spd, N, N, TILE);
    uint64_t before = test_tasks_submitted(rt);
    assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
    uint64_t tasks = test_tasks_submitted(rt) - before;
    /* under 1.75 MiB the copies go a tile a task (a block of them takes
     * more than an eighth): 10 work tiles out, 55 of A's back */
    assert_true(l == 0 ? tasks >= 220 : tasks <= (l == 1 ? 20 + 65 : 20 + 8));
    test_matrix_holds(a, want[work]);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  free(want[0]);
  free(want[1]);
  free(spd);
}

/* Fails on the block that holds element (0, N - 1) of a 150 x 150
 * matrix: a tile of its strictly upper triangle. */
static int fail_at_the_top_right(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row == 0 && blk->col + blk->cols == 150 ? -78 : 0;
}

/* ... and the one that holds element (N - 1, 0), below it. */
static int fail_at_the_bottom_left(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row + blk->rows == 150 && blk->col == 0 ? -78 : 0;
}

/* A failed task that wrote A's first tile: the factorisations return
 * TARN_ECANCELED, and a product that reads A leaves C reading as
 * cancelled. A failed writer of a tile of the strictly upper triangle
 * does not reach a Cholesky on copies, which copy only the lower
 * triangle's tiles (as on A's own tiles): the same factor as without
 * it, that tile left failed; nor the solves with 70 right-hand sides with
 * that factor, or with an upper triangle whose bottom left tile failed:
 * the same X as with a factor without a failed tile. */
static void a_failed_writer_cancels_the_work(void **state) {
  (void)state;
  enum { N = 150 };
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  double *spd = test_spd_matrix(N, 1.0, 22);
  tarn_matrix *a = upload(rt, spd, N, N, TILE), *c = NULL;
  test_fail_first_tile(rt, a);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky(a, &info), TARN_ECANCELED);
  size_t piv[N];
  assert_int_equal(tarn_matrix_lu(a, piv, &info), TARN_ECANCELED);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(
      tarn_matrix_gemm(a, TARN_NO_TRANS, a, TARN_NO_TRANS, 1.0, 0.0, &c), 0);
  assert_int_equal(tarn_region_wait(region, NULL), TARN_ECANCELED);
  double sum = 0;
  assert_int_equal(tarn_matrix_sum(c, &sum), TARN_ECANCELED);
  tarn_matrix *u = upload(rt, spd, N, N, TILE),
              *l = upload(rt, spd, N, N, TILE);
  test_fail_by(rt, u, fail_at_the_top_right, -78);
  assert_int_equal(tarn_matrix_cholesky(u, &info), 0);
  assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
  double got = 0, want = 0;
  for (size_t i = 0; i < N; i += 7)
    for (size_t j = 0; j <= i; j += 5) {
      assert_int_equal(tarn_matrix_get(u, i, j, &got), 0);
      assert_int_equal(tarn_matrix_get(l, i, j, &want), 0);
      assert_true(memcmp(&got, &want, sizeof got) == 0);
    }
  assert_int_equal(tarn_matrix_get(u, 0, N - 1, &got), TARN_ECANCELED);
  /* the solves with a triangle likewise: X as with a factor that has no
   * failed tile */
  tarn_matrix *up = upload(rt, spd, N, N, TILE),
              *clean = upload(rt, spd, N, N, TILE);
  test_fail_by(rt, up, fail_at_the_bottom_left, -78);
  double *bv = test_random_matrix(N, 70, 0, 28);
  for (int kind = 0; kind < 3; kind++) {
    tarn_matrix *b[2] = {upload(rt, bv, N, 70, TILE),
                         upload(rt, bv, N, 70, TILE)};
    for (int failed = 0; failed < 2; failed++)
      if (kind == 0)
        assert_int_equal(
            tarn_matrix_cholesky_solve(failed ? u : l, b[failed], &info), 0);
      else
        assert_int_equal(
            tarn_matrix_triangular_solve(
                kind == 1 ? (failed ? u : l) : (failed ? up : clean),
                kind == 1 ? TARN_LOWER : TARN_UPPER, TARN_NO_TRANS,
                TARN_NON_UNIT, b[failed], &info),
            0);
    double *x = test_buffer_of(b[0]);
    test_matrix_holds(b[1], x);
    free(x);
    TEST_DESTROY_MATRICES(b[0], b[1]);
  }
  TEST_DESTROY_MATRICES(a, c, u, l, up, clean);
  free(bv);
  free(spd);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The Cholesky, its solve and the triangular solves read only their
 * triangle's tiles on copies too, and write back only the lower
 * triangle's: with NaNs on the other side, in tiles of 16 (work tiles
 * of 48 hold three) and of 10 (tiles straddle the work tiles), A's
 * triangle holds the bits of the call on a whole copy the test makes, the
 * NaNs theirs, and X the bits of the solves on whole copies. */
static void triangles_are_copied_alone(void **state) {
  (void)state;
  enum { N = 150, NRHS = 70 };
  static const size_t tilings[] = {TILE, 10};
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  double *spd = test_spd_matrix(N, 1.0, 26),
         *bv = test_random_matrix(N, NRHS, 0, 27);
  for (size_t j = 1; j < N; j++)
    for (size_t i = 0; i < j; i++) spd[i + j * N] = NAN;
  for (size_t k = 0; k < 2; k++) {
    size_t tile = tilings[k];
    tarn_matrix *a = upload(rt, spd, N, N, tile),
                *aw = test_retiled_to(rt, a, WORK, WORK);
    assert_int_equal(tarn_matrix_cholesky(aw, NULL), 0);
    uint64_t before = test_tasks_submitted(rt);
    assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
    assert_true(test_tasks_submitted(rt) - before <= 28);
    double *want = test_buffer_of(aw);
    test_matrix_holds(a, want);
    free(want);
    /* L^T, upper, with NaNs below */
    tarn_matrix *ut = NULL, *utw = NULL;
    assert_int_equal(tarn_matrix_transpose(a, &ut), 0);
    assert_int_equal(tarn_matrix_transpose(aw, &utw), 0);
    for (int kind = 0; kind < 3; kind++) {
      tarn_matrix *b = upload(rt, bv, N, NRHS, tile),
                  *bw = test_retiled_to(rt, b, WORK, WORK);
      for (int on = 0; on < 2; on++) {
        tarn_matrix *x = on ? b : bw;
        before = test_tasks_submitted(rt);
        if (kind == 0)
          assert_int_equal(tarn_matrix_cholesky_solve(on ? a : aw, x, NULL), 0);
        else
          assert_int_equal(tarn_matrix_triangular_solve(
                               kind == 1 ? (on ? a : aw) : (on ? ut : utw),
                               kind == 1 ? TARN_LOWER : TARN_UPPER,
                               TARN_NO_TRANS, TARN_NON_UNIT, x, NULL),
                           0);
        if (on) assert_true(test_tasks_submitted(rt) - before <= 80);
      }
      double *x = test_buffer_of(bw);
      test_matrix_holds(b, x);
      free(x);
      TEST_DESTROY_MATRICES(b, bw);
    }
    TEST_DESTROY_MATRICES(a, aw, ut, utw);
  }
  free(spd);
  free(bv);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A matrix in a file is read tile by tile as its tasks need it: its
 * Cholesky in tiles of 16 reads only the 55 tiles of its lower triangle,
 * where a copy would read all 100. */
static void a_matrix_in_a_file_is_not_copied(void **state) {
  (void)state;
  enum { N = 150 };
  char dir[] = "/tmp/tarn-work-tiles-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a.npy", dir);
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  double *spd = test_spd_matrix(N, 1.0, 23);
  tarn_matrix *a = upload(rt, spd, N, N, TILE);
  assert_int_equal(tarn_matrix_to_file(a, path), 0);
  tarn_matrix_destroy(a);
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  uint64_t before = ps.source_reads;
  assert_int_equal(tarn_matrix_open_file(rt, path, TILE, TILE, &a), 0);
  assert_int_equal(tarn_matrix_cholesky(a, NULL), 0);
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_int_equal(ps.source_reads - before, 10 * 11 / 2);
  tarn_matrix_destroy(a);
  free(spd);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

/* Without a memory limit the copies must take at most an eighth of the
 * memory the process may use: a matrix of 2^20 x 2^20 doubles (8 TiB,
 * made without memory: its tiles are not written) in tiles of 16 would be
 * worked on its tiles, one of 1024 x 1024 on copies. */
static void no_limit_still_bounds_the_copies(void **state) {
  (void)state;
  tarn_rt *rt = test_rt_work(2, 0, WORK);
  const double madds = (double)TILE * TILE * TILE;
  tarn_matrix *huge = NULL, *small = NULL;
  assert_int_equal(tarn__matrix_new(rt, (size_t)1 << 20, (size_t)1 << 20,
                                    (size_t)1 << 16, (size_t)1 << 16, &huge),
                   0);
  assert_int_equal(tarn__matrix_new(rt, 1024, 1024, TILE, TILE, &small), 0);
  for (int lower = 0; lower < 2; lower++) {
    char part = lower ? 'L' : 'F';
    assert_int_equal(tarn__work_tile(rt, (size_t)1 << 20, (size_t)1 << 20,
                                     (size_t)1 << 20, madds, &huge, 1, part),
                     0);
    assert_int_equal(
        tarn__work_tile(rt, 1024, 1024, 1024, madds, &small, 1, part), WORK);
  }
  TEST_DESTROY_MATRICES(huge, small);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(products_of_small_tiles_run_in_work_tiles),
      cmocka_unit_test(a_transposed_times_a_of_small_tiles),
      cmocka_unit_test(factorisations_of_small_tiles_run_in_work_tiles),
      cmocka_unit_test(a_gathered_tile_column_is_not_copied),
      cmocka_unit_test(solves_of_many_columns_run_in_work_tiles),
      cmocka_unit_test(solves_on_tiles_of_32_are_copied_only_when_wide),
      cmocka_unit_test(inverses_of_small_tiles_run_in_work_tiles),
      cmocka_unit_test(condition_estimates_of_small_tiles_run_on_copies),
      cmocka_unit_test(triangular_inverses_of_small_tiles_run_on_copies),
      cmocka_unit_test(triangle_condition_estimates_run_on_copies),
      cmocka_unit_test(tall_triangular_solves_run_on_copies),
      cmocka_unit_test(a_narrow_tall_triangle_is_copied_once),
      cmocka_unit_test(qr_covariance_of_small_tiles_runs_on_a_copy),
      cmocka_unit_test(the_copies_need_room_under_a_limit),
      cmocka_unit_test(a_failed_writer_cancels_the_work),
      cmocka_unit_test(triangles_are_copied_alone),
      cmocka_unit_test(a_matrix_in_a_file_is_not_copied),
      cmocka_unit_test(no_limit_still_bounds_the_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
