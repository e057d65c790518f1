/* test_lu.c: tiled LU with partial pivoting and the linear solves: the
 * scaled residual ||P A - L U|| on sizes that are and are not multiples of
 * the tile, square, tall and wide, one tile and many, and tiles large enough
 * for the panel to be factored by blocks with its work shared (1 to 3 workers);
 * pivots equal to LAPACKE_dgetrf's on the whole matrix; exactly singular
 * matrices (a zero column, also inside a later block of such a panel) reported
 * by info; solves with one and several right-hand sides by their residual,
 * factoring A or with factors given (also from several threads at once,
 * factors left unchanged; with many right-hand sides in pieces of B's
 * columns, the same bits as on a B tiled so); singular factors, bad
 * shapes and bad pivots refused with B unchanged; a run under a memory
 * limit that spills; the
 * row interchanges alone (tarn_matrix_permute_rows) against dlaswp, and
 * P^T L U = A with LU's factors. The tests of small tiles run twice: with
 * panels of short tiles gathered into one block and each tile column's
 * updates in one task (the default), and in place across their tiles with
 * tasks per tile (the group "small tiles, panels in place"). */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
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

#include "linalg/linalg_internal.h"
#include "support.h"
#include "tarn.h"

#include "reference.h"

static double lu_residual(const double *a, const double *f, const size_t *piv,
                          size_t n) {
  return test_lu_residual(a, f, piv, n, n);
}

/* ---- LU ----------------------------------------------------------------- */

static const size_t lu_sizes[][2] = {
    /* n, tile */
    {1, 1},    {1, 32}, {7, 32}, {32, 32}, {50, 16},  {96, 32},
    {100, 30}, {33, 8}, {64, 8}, {45, 1},  {129, 16},
};

/* A random rows x n matrix in tiles of tb (made by tasks, factored
 * without waiting in between): the residual, and the pivots against
 * dgetrf on the whole matrix (partial pivoting picks the same rows; the
 * data have no near ties). */
static void check_lu_mn(tarn_rt *rt, size_t rows, size_t n, size_t tb,
                        uint64_t seed) {
  size_t k = rows < n ? rows : n;
  tarn_matrix *m = NULL, *copy = NULL;
  assert_int_equal(tarn_matrix_rand(rt, rows, n, tb, tb, seed, &m), 0);
  assert_int_equal(tarn_matrix_copy(m, &copy), 0);
  size_t *piv = malloc(k * sizeof *piv);
  assert_non_null(piv);
  int info = -1;
  assert_int_equal(tarn_matrix_lu(m, piv, &info), 0);
  assert_int_equal(info, 0);
  double *a = test_buffer_of(copy), *f = test_buffer_of(m);
  double r = test_lu_residual(a, f, piv, rows, n);
  if (!(r < 20)) print_error("lu %zu x %zu tb %zu: %g\n", rows, n, tb, r);
  assert_true(r < 20);
  lapack_int *ipiv = malloc(k * sizeof *ipiv);
  assert_non_null(ipiv);
  assert_int_equal(
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)rows, (int)n, a, (int)rows, ipiv),
      0);
  for (size_t i = 0; i < k; i++) assert_int_equal(piv[i], ipiv[i] - 1);
  free(ipiv);
  free(a);
  free(f);
  free(piv);
  tarn_matrix_destroy(m);
  tarn_matrix_destroy(copy);
}

static void check_lu(tarn_rt *rt, size_t n, size_t nb, uint64_t seed) {
  check_lu_mn(rt, n, n, nb, seed);
}

static void test_lu_sizes(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  for (size_t s = 0; s < sizeof lu_sizes / sizeof lu_sizes[0]; s++)
    check_lu(rt, lu_sizes[s][0], lu_sizes[s][1], 100 + s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Tiles large enough for the panel to be factored by blocks of columns
 * (getrf on the block, its interchanges, trsm and gemm shared with idle
 * workers): one tile and several, with 1, 2 and 3 workers. */
static void test_lu_large_tiles(void **state) {
  (void)state;
  static const size_t sizes[][2] = {
      {300, 300}, {513, 513}, {700, 700}, {700, 300}};
  for (unsigned w = 1; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      check_lu(rt, sizes[s][0], sizes[s][1], 300 + s);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* M x N matrices, tall and wide: in tiles that do and do not divide
 * them, one tile, one tile row or column whose tiles are clamped to the
 * matrix (so not square), tiles large enough for a panel to be factored
 * by blocks (a wide matrix's last panel, wider than tall, is one call),
 * and a tall narrow panel whose recursion shares its large gemm; 1 to 3
 * workers. */
static void test_lu_rectangular(void **state) {
  (void)state;
  static const size_t sizes[][3] = {
      /* m, n, tile */
      {1, 5, 4},
      {5, 1, 4},
      {7, 30, 32},
      {30, 7, 32},
      {100, 30, 16},
      {30, 100, 16},
      {96, 64, 32},
      {64, 96, 32},
      {45, 20, 1},
      {20, 45, 1},
      {200, 50, 64},
      {50, 200, 64},
      {129, 70, 16},
      {70, 129, 16},
      {600, 300, 256},
      {300, 700, 256},
      {100, 700, 256},
      /* a narrow panel of 9 tiles: the recursion shares its first gemm */
      {1100, 128, 128}};
  for (unsigned w = 1; w <= 3; w++) {
    tarn_rt *rt = test_rt(w, 0);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      check_lu_mn(rt, sizes[s][0], sizes[s][1], sizes[s][2], 500 + s);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A NaN that heads its column's search is the pivot, as idamax on the
 * whole column makes it in dgetrf (and in one tile): in a panel of
 * several tiles a first unit's NaN lost to a later zero, and the matrix
 * was found singular (info 1, TARN_EINVAL) with a pivot row never
 * swapped. Column c holds a NaN at (c, c) and zeros below it. */
static void test_lu_nan_heading_its_column(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t cases[][3] = {/* n, column, tile */
                                    {16, 0, 16}, {16, 0, 8},  {16, 0, 4},
                                    {40, 5, 8},  {40, 5, 40}, {64, 33, 16}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t n = cases[c][0], col = cases[c][1], tb = cases[c][2];
    tarn_matrix *r = NULL, *a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, n, n, tb, tb, 70 + c, &r), 0);
    double *buf = test_buffer_of(r);
    for (size_t i = col; i < n; i++) buf[i + col * n] = 0.0;
    buf[col + col * n] = NAN;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, tb, tb, buf, n, &a), 0);
    size_t *piv = malloc(n * sizeof *piv);
    lapack_int *ipiv = malloc(n * sizeof *ipiv);
    assert_true(piv != NULL && ipiv != NULL);
    int want = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (int)n, (int)n, buf,
                                   (int)n, ipiv);
    int info = -1;
    int rc = tarn_matrix_lu(a, piv, &info);
    if (info != want || piv[col] != (size_t)(ipiv[col] - 1))
      print_error(
          "lu %zu x %zu in %zu, NaN at (%zu, %zu): info %d piv %zu, "
          "dgetrf %d piv %d\n",
          n, n, tb, col, col, info, piv[col], want, (int)ipiv[col] - 1);
    assert_int_equal(want, 0);
    assert_int_equal(info, 0);
    assert_int_equal(rc, 0);
    assert_int_equal(piv[col], col);
    double u = 0;
    assert_int_equal(tarn_matrix_get(a, col, col, &u), 0);
    assert_true(isnan(u));
    free(buf);
    free(piv);
    free(ipiv);
    tarn_matrix_destroy(r);
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A zero column p of an M x N matrix: dgetrf's info (p + 1), TARN_EINVAL,
 * and factors still complete; the solves, estimates, determinant and
 * inverse refuse the factors of a matrix that is not square. */
static void test_lu_rectangular_singular(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][4] = {/* m, n, tile, zero column */
                                    {300, 100, 32, 70}, {100, 300, 32, 80},
                                    {60, 200, 32, 59},  {40, 200, 64, 39},
                                    {200, 40, 64, 0},   {64, 96, 32, 95}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t m = cases[c][0], n = cases[c][1], tb = cases[c][2], p = cases[c][3];
    size_t k = m < n ? m : n;
    tarn_matrix *r = NULL, *a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, 40 + c, &r), 0);
    double *buf = test_buffer_of(r);
    for (size_t i = 0; i < m; i++) buf[i + p * m] = 0.0;
    assert_int_equal(tarn_matrix_from_buffer(rt, m, n, tb, tb, buf, m, &a), 0);
    size_t *piv = malloc(k * sizeof *piv);
    lapack_int *ipiv = malloc(k * sizeof *ipiv);
    double *ref = malloc(m * n * sizeof *ref);
    assert_true(piv != NULL && ipiv != NULL && ref != NULL);
    memcpy(ref, buf, m * n * sizeof *ref);
    int want =
        LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)m, (int)n, ref, (int)m, ipiv);
    int info = 0;
    int rc = tarn_matrix_lu(a, piv, &info);
    if (info != want)
      print_error("lu %zu x %zu, zero column %zu: info %d, dgetrf %d\n", m, n,
                  p, info, want);
    assert_int_equal(want, p < k ? (int)(p + 1) : 0);
    assert_int_equal(info, want);
    assert_int_equal(rc, want > 0 ? TARN_EINVAL : 0);
    double *f = test_buffer_of(a);
    assert_true(test_lu_residual(buf, f, piv, m, n) < 20);
    /* only a square matrix's factors serve the rest */
    tarn_matrix *b = NULL;
    assert_int_equal(tarn_matrix_fill(rt, m, 1, tb, 1, 1.0, &b), 0);
    double rcond = -1, logdet = -1;
    int sign = -1;
    assert_int_equal(tarn_matrix_lu_solve(a, piv, TARN_NO_TRANS, b, NULL),
                     TARN_EINVAL);
    assert_int_equal(tarn_matrix_lu_rcond(a, piv, TARN_NORM_ONE, 1.0, &rcond),
                     TARN_EINVAL);
    assert_int_equal(tarn_matrix_lu_logdet(a, piv, &logdet, &sign),
                     TARN_EINVAL);
    assert_int_equal(tarn_matrix_lu_inverse(a, piv, NULL), TARN_EINVAL);
    assert_int_equal(tarn_matrix_solve(a, b, NULL), TARN_EINVAL);
    assert_true(rcond == -1 && logdet == -1 && sign == -1);
    test_matrix_holds(a, f);
    free(f);
    free(buf);
    free(ref);
    free(piv);
    free(ipiv);
    tarn_matrix_destroy(b);
    tarn_matrix_destroy(r);
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A random m x n matrix (seed) as a buffer, for a test to edit. */
static double *random_buffer(tarn_rt *rt, size_t m, size_t n, uint64_t seed) {
  tarn_matrix *r = NULL;
  assert_int_equal(tarn_matrix_rand(rt, m, n, n, n, seed, &r), 0);
  double *buf = test_buffer_of(r);
  tarn_matrix_destroy(r);
  return buf;
}

/* The LU of the m x n buffer `a` in tb x tb tiles: the status and info
 * expected, the residual below 20; returns the factors (free them). */
static double *check_lu_of(tarn_rt *rt, const double *a, size_t m, size_t n,
                           size_t tb, int want_rc, int want_info) {
  size_t k = m < n ? m : n;
  tarn_matrix *x = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, tb, tb, a, m, &x), 0);
  size_t *piv = malloc(k * sizeof *piv);
  assert_non_null(piv);
  int info = -1;
  assert_int_equal(tarn_matrix_lu(x, piv, &info), want_rc);
  assert_int_equal(info, want_info);
  double *f = test_buffer_of(x);
  assert_true(test_lu_residual(a, f, piv, m, n) < 20);
  free(piv);
  tarn_matrix_destroy(x);
  return f;
}

/* Two zero columns in one panel of several tiles: info is the first, as
 * dgetrf's, and the factors are still complete. */
static void test_lu_two_zero_columns(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t cases[][5] = {/* m, n, tile, zero columns */
                                    {200, 40, 64, 5, 20},
                                    {256, 256, 64, 70, 90},
                                    {300, 200, 40, 0, 39}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t m = cases[c][0], n = cases[c][1];
    double *a = random_buffer(rt, m, n, 60 + c);
    for (size_t i = 0; i < m; i++)
      a[i + cases[c][3] * m] = a[i + cases[c][4] * m] = 0.0;
    free(check_lu_of(rt, a, m, n, cases[c][2], TARN_EINVAL,
                     (int)cases[c][3] + 1));
    free(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Pivots below DBL_MIN (subnormal) in panels of several tiles: the column
 * is divided by the pivot, not scaled by its reciprocal (which overflows),
 * as LAPACK's dgetf2 and dgetrf2 do: the factors are finite and match A.
 * (A panel of one tile is OpenBLAS's dgetrf, which scales: see
 * docs/linalg.md.) */
static void test_lu_subnormal_pivots(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t cases[][3] = {{96, 8, 8}, {128, 128, 32}, {120, 48, 16}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t m = cases[c][0], n = cases[c][1];
    double *a = random_buffer(rt, m, n, 70 + c);
    for (size_t i = 0; i < m; i++) a[i] = (a[i] + 0.5) * 1e-310;
    double *f = check_lu_of(rt, a, m, n, cases[c][2], 0, 0);
    for (size_t i = 0; i < m * n; i++) assert_true(isfinite(f[i]));
    /* L's first column: A's first column over the pivot, each in [-1, 1] */
    for (size_t i = 1; i < m; i++) assert_true(fabs(f[i]) <= 1.0);
    free(f);
    free(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A tall panel factored by units, m x 24 in tiles of mb x 24: of 24 rows
 * (the last of 12 rows; a unit per tile, base columns shared), or one or
 * two tiles of units of 4096 rows (the last of each tile shorter; base
 * columns shared from 32768 rows on). Two blocks of base columns. On 1,
 * 2 and 3 workers the same factors bit for bit, dgetrf's pivots and info,
 * the residual; a column's largest |element| found in three units (and
 * tiles, but for one tile) at once goes to the first row, as idamax and
 * dgetrf pick it; a zero column, info, the factorisation still
 * complete. */
static void check_lu_tall_units(size_t m, size_t mb) {
  enum { N = 24, TB = 24, ZERO = 17 };
  tarn_rt *rt = test_rt(1, 0);
  double *a = random_buffer(rt, m, N, 80);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  a[5000] = 8.0; /* column 0's largest, three times, in three units */
  a[m / 2 + 1001] = -8.0;
  a[m - 4200] = 8.0;
  for (size_t i = 0; i < m; i++) a[i + ZERO * m] = 0.0;
  double *lapack = malloc(m * N * sizeof *lapack);
  lapack_int ipiv[N];
  assert_non_null(lapack);
  memcpy(lapack, a, m * N * sizeof *a);
  assert_int_equal(LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)m, N, lapack,
                                  (lapack_int)m, ipiv),
                   ZERO + 1);
  assert_int_equal(ipiv[0] - 1, 5000);
  double *first = NULL;
  for (unsigned workers = 1; workers <= 3; workers++) {
    rt = test_rt(workers, 0);
    tarn_matrix *x = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, m, N, mb, TB, a, m, &x), 0);
    size_t piv[N];
    int info = -1;
    assert_int_equal(tarn_matrix_lu(x, piv, &info), TARN_EINVAL);
    assert_int_equal(info, ZERO + 1);
    for (size_t i = 0; i < N; i++) assert_int_equal(piv[i], ipiv[i] - 1);
    double *f = test_buffer_of(x);
    assert_true(test_lu_residual(a, f, piv, m, N) < 20);
    if (first == NULL)
      first = f;
    else {
      assert_memory_equal(f, first, m * N * sizeof *f);
      free(f);
    }
    tarn_matrix_destroy(x);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  free(first);
  free(lapack);
  free(a);
}

static void test_lu_tall_units(void **state) {
  (void)state;
  check_lu_tall_units(16500, 24);
  check_lu_tall_units(16500, 16500);
  check_lu_tall_units(33000, 16500);
  check_lu_tall_units(33000, 33000);
}

/* The LU of a random m x n matrix (seed) in tb tiles under `limit` bytes:
 * tiles spill, and the factors and pivots have the bits of a run without
 * a limit. */
static void check_lu_under_limit(size_t m, size_t n, size_t tb, size_t limit,
                                 uint64_t seed) {
  size_t k = m < n ? m : n, bytes = m * n * sizeof(double);
  double *f[2];
  size_t *piv[2];
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(3, run == 0 ? 0 : limit);
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, seed, &a), 0);
    piv[run] = malloc(k * sizeof *piv[run]);
    assert_non_null(piv[run]);
    int info = -1;
    assert_int_equal(tarn_matrix_lu(a, piv[run], &info), 0);
    assert_int_equal(info, 0);
    f[run] = test_buffer_of(a);
    tarn_matrix_destroy(a);
    if (run == 1)
      test_rt_destroy_spilled(rt, limit);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(f[0], f[1], bytes);
  assert_memory_equal(piv[0], piv[1], k * sizeof *piv[0]);
  for (int run = 0; run < 2; run++) {
    free(f[run]);
    free(piv[run]);
  }
}

/* A tall and a wide matrix under a memory limit of half the matrix. */
static void test_lu_rectangular_mem_limit(void **state) {
  (void)state;
  check_lu_under_limit(384, 160, 32, 384 * 160 * sizeof(double) / 2, 46);
  check_lu_under_limit(160, 384, 32, 384 * 160 * sizeof(double) / 2, 47);
}

/* A tall matrix of two tile columns under a limit of five eighths of it:
 * the first panel pins its tile column, half the matrix, in place (a copy
 * beside it would need the whole matrix); also one tall enough for its
 * panels to share their base columns, the same bits as without a limit. */
static void test_lu_tall_panel_in_place(void **state) {
  (void)state;
  check_lu_under_limit(1024, 64, 32, 1024 * 64 * sizeof(double) / 8 * 5, 48);
  /* 1031 x 2 tiles of 16 x 16, each in whole pages */
  check_lu_under_limit(16484, 32, 16,
                       1031 * 2 * test_tile_charge(16, 16) / 8 * 5, 49);
}

/* tarn_matrix_lu (into piv) and tarn_matrix_solve on a and b each return
 * TARN_ENOMEM with info 0, a and b unchanged and readable. */
static void check_lu_refused(tarn_matrix *a, tarn_matrix *b, size_t *piv) {
  double *a0 = test_buffer_of(a), *b0 = test_buffer_of(b);
  int info = -1;
  assert_int_equal(tarn_matrix_lu(a, piv, &info), TARN_ENOMEM);
  assert_int_equal(info, 0);
  info = -1;
  assert_int_equal(tarn_matrix_solve(a, b, &info), TARN_ENOMEM);
  assert_int_equal(info, 0);
  test_matrix_holds(a, a0);
  test_matrix_holds(b, b0);
  free(a0);
  free(b0);
}

/* Two tile rows and columns: an update's gemm pins three tiles (A(1, 1),
 * A(1, 0), A(0, 1)), more than a tile column of two. Under exactly three
 * tiles LU gives the bits of a run without a limit, spilling; a page
 * less, LU and the solve return TARN_ENOMEM before any task, A and B
 * unchanged (LU checked only the column: its first gemm failed, leaving
 * A cancelled). */
static void test_lu_limit_of_two_tile_rows(void **state) {
  (void)state;
  enum { N = 128, NB = 64 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE),
         task = 3 * test_tile_charge(NB, NB);
  check_lu_under_limit(N, N, NB, task, 54);
  for (unsigned workers = 1; workers <= 2; workers++) {
    tarn_rt *rt = test_rt(workers, task - page);
    tarn_matrix *a = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 55, &a), 0);
    assert_int_equal(tarn_matrix_rand(rt, N, 2, NB, 2, 56, &b), 0);
    size_t piv[N];
    check_lu_refused(a, b, piv);
    TEST_DESTROY_MATRICES(a, b);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A limit of exactly one tile column (512 x 64 doubles, what LU's panel
 * and each interchange task pin) is enough: the factors of a run without
 * a limit, spilling. Below it LU, the solves, the interchanges and the
 * inverse refuse at once with TARN_ENOMEM, before any task, their
 * matrices unchanged and still readable (a task that could never fit
 * would have failed part-way, its matrices left cancelled); so does
 * tarn_matrix_lu_solve for a B whose tile column exceeds the limit. */
static void test_lu_limit_of_one_column(void **state) {
  (void)state;
  enum { N = 512, NB = 64 };
  size_t column = N * NB * sizeof(double);
  check_lu_under_limit(N, N, NB, column, 50);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (unsigned workers = 1; workers <= 2; workers++) {
    tarn_rt *rt = test_rt(workers, column - page);
    tarn_matrix *a = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 51, &a), 0);
    assert_int_equal(tarn_matrix_rand(rt, N, 3, NB, 3, 52, &b), 0);
    double *a0 = test_buffer_of(a);
    size_t piv[N];
    for (size_t i = 0; i < N; i++) piv[i] = i;
    check_lu_refused(a, b, piv);
    assert_int_equal(tarn_matrix_lu_inverse(a, piv, NULL), TARN_ENOMEM);
    test_matrix_holds(a, a0);
    for (size_t i = 0; i < N; i++) assert_int_equal(piv[i], i);
    int info = -1;
    /* B of 80 columns a tile: its tile column exceeds the limit, A's not */
    tarn_matrix *wide = NULL;
    assert_int_equal(tarn_matrix_rand(rt, N, 80, NB, 80, 53, &wide), 0);
    double *w0 = test_buffer_of(wide);
    tarn_rt *rt2 = test_rt(workers, column);
    tarn_matrix *f = NULL, *w = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt2, N, N, NB, NB, a0, N, &f), 0);
    assert_int_equal(tarn_matrix_from_buffer(rt2, N, 80, NB, 80, w0, N, &w), 0);
    assert_int_equal(tarn_matrix_lu(f, piv, &info), 0);
    assert_int_equal(tarn_matrix_lu_solve(f, piv, TARN_NO_TRANS, w, &info),
                     TARN_ENOMEM);
    assert_int_equal(tarn_matrix_lu_solve(f, piv, TARN_TRANS, w, &info),
                     TARN_ENOMEM);
    assert_int_equal(tarn_matrix_permute_rows(w, piv, N, TARN_NO_TRANS),
                     TARN_ENOMEM);
    tarn_matrix *g = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt2, N, N, NB, NB, a0, N, &g), 0);
    assert_int_equal(tarn_matrix_solve(g, w, &info), TARN_ENOMEM);
    test_matrix_holds(g, a0);
    tarn_matrix_destroy(g);
    test_matrix_holds(w, w0);
    free(w0);
    free(a0);
    TEST_DESTROY_MATRICES(a, b, wide, f, w);
    assert_int_equal(tarn_rt_destroy(rt2), 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A matrix that needs pivoting everywhere: zero diagonal (a permuted
 * identity plus small noise would also do); from a caller's buffer. */
static void test_lu_zero_diagonal(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 40, nb = 8;
  double *a = malloc(n * n * sizeof *a);
  assert_non_null(a);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++)
      a[i + j * n] = i == j ? 0.0 : 1.0 / (double)(1 + (i * 7 + j * 3) % 11);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  size_t piv[40];
  assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
  double *f = test_buffer_of(m);
  assert_true(lu_residual(a, f, piv, n) < 20);
  free(a);
  free(f);
  tarn_matrix_destroy(m);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A zero column p: U(p, p) is exactly zero, info = p + 1, the call
 * returns TARN_EINVAL, and the factors are still complete. */
static void check_singular(tarn_rt *rt, size_t n, size_t nb, size_t p,
                           uint64_t seed) {
  tarn_matrix *r = NULL, *m = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, seed, &r), 0);
  double *a = test_buffer_of(r);
  for (size_t i = 0; i < n; i++) a[i + p * n] = 0.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  size_t *piv = malloc(n * sizeof *piv);
  assert_non_null(piv);
  int info = 0;
  assert_int_equal(tarn_matrix_lu(m, piv, &info), TARN_EINVAL);
  if (info != (int)(p + 1))
    print_error("singular n %zu nb %zu p %zu: info %d\n", n, nb, p, info);
  assert_int_equal(info, (int)(p + 1));
  double *f = test_buffer_of(m);
  assert_true(f[p + p * n] == 0.0);
  double res = n == 1 ? 0.0 : lu_residual(a, f, piv, n); /* 1: A = 0 */
  if (!(res < 20)) print_error("singular n %zu p %zu: %g\n", n, p, res);
  assert_true(res < 20);
  /* the runtime goes on */
  tarn_matrix *ok = NULL;
  assert_int_equal(tarn_matrix_fill(rt, n, n, nb, nb, 0.0, &ok), 0);
  double v = -1;
  assert_int_equal(tarn_matrix_get(ok, n - 1, n - 1, &v), 0);
  assert_true(v == 0.0);
  tarn_matrix_destroy(ok);
  tarn_matrix_destroy(r);
  tarn_matrix_destroy(m);
  free(a);
  free(f);
  free(piv);
}

static void test_lu_singular(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  static const size_t cases[][3] = {
      {20, 6, 0},
      {20, 6, 3},
      {20, 6, 6},
      {20, 6, 13},
      {20, 6, 19},
      {5, 5, 2},
      {1, 1, 0},
      /* in the first, a middle or the last block of a panel factored by
       * blocks, and in a later panel */
      {300, 300, 0},
      {300, 300, 70},
      {300, 300, 200},
      {300, 300, 299},
      {700, 300, 450}};
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
    check_singular(rt, cases[s][0], cases[s][1], cases[s][2], 7 + s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void test_lu_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *a = NULL, *b = NULL;
  size_t piv[8];
  int info = 5;
  assert_int_equal(tarn_matrix_lu(NULL, piv, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  /* tiles not square, with several tile rows and columns */
  assert_int_equal(tarn_matrix_rand(rt, 8, 6, 4, 2, 1, &a), 0);
  assert_int_equal(tarn_matrix_lu(a, piv, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_rand(rt, 8, 8, 4, 2, 1, &b), 0);
  assert_int_equal(tarn_matrix_lu(b, piv, &info), TARN_EINVAL);
  assert_int_equal(info, 0);
  tarn_matrix *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 8, 8, 4, 4, 1, &c), 0);
  assert_int_equal(tarn_matrix_lu(c, NULL, &info), TARN_EINVAL);
  assert_int_equal(tarn_matrix_lu(c, piv, &info), 0);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Under a memory limit of three eighths of the matrix (a panel pins its
 * tile column, a sixth of the matrix at the first; without a limit the
 * pool's peak holds A alone: no workspace): tiles spill, and the factors
 * and pivots, and a solve's solution, have the same bits. */
static void test_lu_mem_limit(void **state) {
  (void)state;
  size_t n = 192, nb = 32, nrhs = 40;
  size_t bytes = n * n * sizeof(double), limit = bytes / 8 * 3;
  double *f[2], *x[2], *y[2];
  size_t *piv[2];
  for (int run = 0; run < 2; run++) {
    tarn_rt *rt = test_rt(3, run == 0 ? 0 : limit);
    tarn_matrix *m = NULL, *m2 = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 42, &m), 0);
    piv[run] = malloc(n * sizeof *piv[run]);
    assert_non_null(piv[run]);
    assert_int_equal(tarn_matrix_lu(m, piv[run], NULL), 0);
    f[run] = test_buffer_of(m);
    if (run == 0) { /* the panels are factored in place: nothing beside A */
      tarn_pool_stats ps;
      assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
      assert_int_equal(ps.resident_peak, bytes);
    }
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, 16, 45, &b), 0);
    assert_int_equal(tarn_matrix_lu_solve(m, piv[run], TARN_NO_TRANS, b, NULL),
                     0);
    y[run] = test_buffer_of(b);
    tarn_matrix_destroy(b);
    b = NULL;
    tarn_matrix_destroy(m);
    assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 43, &m2), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, 16, 44, &b), 0);
    assert_int_equal(tarn_matrix_solve(m2, b, NULL), 0);
    x[run] = test_buffer_of(b);
    tarn_matrix_destroy(m2);
    tarn_matrix_destroy(b);
    if (run == 1)
      test_rt_destroy_spilled(rt, limit);
    else
      assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_memory_equal(f[0], f[1], bytes);
  assert_memory_equal(piv[0], piv[1], n * sizeof *piv[0]);
  assert_memory_equal(x[0], x[1], n * nrhs * sizeof *x[0]);
  assert_memory_equal(y[0], y[1], n * nrhs * sizeof *y[0]);
  for (int run = 0; run < 2; run++) {
    free(f[run]);
    free(x[run]);
    free(y[run]);
    free(piv[run]);
  }
}

/* ---- solve -------------------------------------------------------------- */

/* Solves with n x nrhs right-hand sides, B's column tiles cb: checks
 * ||A X - B||_F / (n ||A||_F ||X||_F eps) and, when `exact`, that A holds
 * the factors of tarn_matrix_lu bit for bit (kernels whose work is shared
 * with idle workers may differ in the last bits from run to run). */
static void check_solve(tarn_rt *rt, size_t n, size_t nb, size_t nrhs,
                        size_t cb, uint64_t seed, bool exact) {
  tarn_matrix *m = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, seed, &m), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, cb, seed + 1, &b), 0);
  double *a = test_buffer_of(m), *rhs = test_buffer_of(b);
  int info = -1;
  assert_int_equal(tarn_matrix_solve(m, b, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b), *f = test_buffer_of(m);
  /* A was overwritten by factors equal to tarn_matrix_lu's. */
  size_t *piv = malloc(n * sizeof *piv);
  assert_non_null(piv);
  tarn_matrix *m2 = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m2), 0);
  assert_int_equal(tarn_matrix_lu(m2, piv, NULL), 0);
  double *f2 = test_buffer_of(m2);
  if (exact) assert_memory_equal(f, f2, n * n * sizeof *f);
  assert_true(lu_residual(a, f, piv, n) < 20);
  double r = test_solve_residual(a, x, rhs, n, nrhs);
  if (!(r < 20))
    print_error("solve n %zu nb %zu nrhs %zu cb %zu: %g\n", n, nb, nrhs, cb, r);
  assert_true(r < 20);
  free(a);
  free(rhs);
  free(x);
  free(f);
  free(f2);
  free(piv);
  tarn_matrix_destroy(m);
  tarn_matrix_destroy(m2);
  tarn_matrix_destroy(b);
}

/* check_solve with the factors checked bit for bit (the small tiles'
 * kernels are not shared, so they do not depend on the schedule). */
static void check_solve_exact(tarn_rt *rt, size_t n, size_t nb, size_t nrhs,
                              size_t cb, uint64_t seed) {
  check_solve(rt, n, nb, nrhs, cb, seed, n < 500);
}

static void test_solve(void **state) {
  (void)state;
  test_solve_sizes(check_solve_exact, 200);
}

/* A singular A: TARN_EINVAL with info, B unchanged. */
static void test_solve_singular(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 24, nb = 5, p = 11;
  tarn_matrix *r = NULL, *m = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 3, &r), 0);
  double *a = test_buffer_of(r);
  for (size_t i = 0; i < n; i++) a[i + p * n] = 0.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, a, n, &m), 0);
  assert_int_equal(tarn_matrix_rand(rt, n, 3, nb, 2, 4, &b), 0);
  double *b0 = test_buffer_of(b);
  int info = 0;
  assert_int_equal(tarn_matrix_solve(m, b, &info), TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  double *b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, n * 3 * sizeof *b0);
  free(a);
  free(b0);
  free(b1);
  tarn_matrix_destroy(r);
  tarn_matrix_destroy(m);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A singular A under a limit that holds A or B but not both: the solve's
 * backward task (A, a tile of Y and one of B) cannot fit. It once ran
 * the factorisation, found the zero and said TARN_EINVAL, B then reading
 * as TARN_ECANCELED (a task that was to skip B still pinned it; found by
 * a random test), then TARN_ENOMEM with info; since 2026-12-05 the call
 * sees that task cannot fit before it submits anything: TARN_ENOMEM,
 * info 0, A and B unchanged. Without the limit, TARN_EINVAL with info
 * and B as it was. */
static void test_solve_singular_short_of_memory(void **state) {
  (void)state;
  size_t n = 42, nrhs = 44, p = 3, page = (size_t)sysconf(_SC_PAGESIZE);
  size_t a_bytes = test_tile_charge(n, n), b_bytes = test_tile_charge(n, nrhs);
  size_t limit = (a_bytes > b_bytes ? a_bytes : b_bytes) + page / 2;
  for (int limited = 0; limited < 2; limited++) {
    tarn_rt *rt = test_rt(2, limited ? limit : 0);
    tarn_matrix *r = NULL, *m = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_rand(rt, n, n, n, n, 5, &r), 0);
    double *a = test_buffer_of(r);
    for (size_t i = 0; i < n; i++) a[i + p * n] = 0.0;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, n, n, a, n, &m), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, n, n, 6, &b), 0);
    double *b0 = test_buffer_of(b);
    int info = 0;
    assert_int_equal(tarn_matrix_solve(m, b, &info),
                     limited ? TARN_ENOMEM : TARN_EINVAL);
    assert_int_equal(info, limited ? 0 : (int)(p + 1));
    test_matrix_holds(b, b0);
    if (limited) {
      test_matrix_holds(m, a);
    }
    free(a);
    free(b0);
    tarn_matrix_destroy(r);
    tarn_matrix_destroy(m);
    tarn_matrix_destroy(b);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static int solve_fn(void *ctx, tarn_matrix *a, tarn_matrix *b, int *info) {
  (void)ctx;
  return tarn_matrix_solve(a, b, info);
}

static void test_solve_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  tarn_matrix *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 4, 1, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 2, 4, 1, 2, &b), 0);
  test_solve_refuses_bad_shapes(rt, solve_fn, NULL, a, b);
  /* refused calls changed nothing: the good one still works */
  int info = 5;
  assert_int_equal(tarn_matrix_solve(a, b, &info), 0);
  assert_int_equal(info, 0);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- solve with the factors ---------------------------------------------- */

/* A random n x n A factored by tarn_matrix_lu, then n x nrhs right-hand
 * sides (column tiles cb) solved with the factors, for A X = B and for
 * A^T X = B: the residual against A or A^T, and the factors and pivots
 * unchanged by the solves. */
static void check_lu_solve(tarn_rt *rt, size_t n, size_t nb, size_t nrhs,
                           size_t cb, uint64_t seed) {
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, seed, &m), 0);
  double *a = test_buffer_of(m), *at = malloc(n * n * sizeof *at);
  size_t *piv = malloc(n * sizeof *piv), *piv0 = malloc(n * sizeof *piv0);
  assert_non_null(at);
  assert_non_null(piv);
  assert_non_null(piv0);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) at[j + i * n] = a[i + j * n];
  assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
  memcpy(piv0, piv, n * sizeof *piv);
  double *f = test_buffer_of(m);
  for (int ta = 0; ta < 2; ta++) {
    tarn_matrix *b = NULL;
    assert_int_equal(
        tarn_matrix_rand(rt, n, nrhs, nb, cb, seed + 1 + (uint64_t)ta, &b), 0);
    double *rhs = test_buffer_of(b);
    int info = -1;
    assert_int_equal(tarn_matrix_lu_solve(m, piv, (tarn_trans)ta, b, &info), 0);
    assert_int_equal(info, 0);
    double *x = test_buffer_of(b), *f1 = test_buffer_of(m);
    double r = test_solve_residual(ta ? at : a, x, rhs, n, nrhs);
    if (!(r < 20))
      print_error("lu_solve n %zu nb %zu nrhs %zu cb %zu trans %d: %g\n", n, nb,
                  nrhs, cb, ta, r);
    assert_true(r < 20);
    assert_memory_equal(f, f1, n * n * sizeof *f);
    assert_memory_equal(piv, piv0, n * sizeof *piv);
    free(f1);
    free(rhs);
    free(x);
    tarn_matrix_destroy(b);
  }
  free(a);
  free(at);
  free(f);
  free(piv);
  free(piv0);
  tarn_matrix_destroy(m);
}

static void test_lu_solve(void **state) {
  (void)state;
  test_solve_sizes(check_lu_solve, 500);
}

/* An LU solves a few right-hand sides with one task per tile column of
 * B, in place (dgetrs on one tile; the interchanges and both triangles
 * tile by tile on several, solved first and B put back from a copy when
 * X is not finite and U's diagonal has a zero): with a zero on U's
 * diagonal, both ways, TARN_EINVAL, info its 1-based order and every
 * element of B (three tile columns) as it was; factors of one tile and
 * of 3 x 3 tiles. */
static void a_column_solve_keeps_b_when_u_is_singular(void **state) {
  (void)state;
  enum { n = 40, nrhs = 5 };
  tarn_rt *rt = test_rt(2, 0);
  double f[n * n];
  size_t piv[n];
  for (size_t j = 0; j < n; j++) {
    piv[j] = j % 3 == 0 && j + 2 < n ? j + 2 : j;
    for (size_t i = 0; i < n; i++)
      f[i + j * n] = i == j ? 2.0 + (double)i : 1.0 / (double)(1 + i + j);
  }
  f[30 + 30 * n] = 0.0;
  for (size_t tile = 16; tile <= 64; tile += 48) {
    tarn_matrix *lu = NULL, *b = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, tile, tile, f, n, &lu),
                     0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, tile, 2, 9, &b), 0);
    double *before = test_buffer_of(b);
    for (int ta = 0; ta < 2; ta++) {
      int info = 0;
      assert_int_equal(tarn_matrix_lu_solve(lu, piv, (tarn_trans)ta, b, &info),
                       TARN_EINVAL);
      assert_int_equal(info, 31);
      double *after = test_buffer_of(b);
      assert_memory_equal(before, after, sizeof(double) * n * nrhs);
      free(after);
    }
    free(before);
    tarn_matrix_destroy(lu);
    tarn_matrix_destroy(b);
  }
  tarn_rt_destroy(rt);
}

/* Solves with the LU factors of a random N x N matrix in nb tiles, both
 * ways, nrhs right-hand sides, on a runtime whose workers' scratch is
 * just as large as the copy of B's tile column (1024 x nrhs doubles) that
 * lets the solve check U's diagonal after it: each to a small residual. */
enum { SHORT_N = 1024, SHORT_NRHS = 8 };
static void solve_short_of_scratch(size_t nb, size_t nrhs) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 2;
  o.scratch_bytes = SHORT_N * nrhs * sizeof(double);
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  double *a = test_random_matrix(SHORT_N, SHORT_N, 1.0, 5);
  double *at = malloc(SHORT_N * SHORT_N * sizeof *at);
  assert_non_null(at);
  for (size_t j = 0; j < SHORT_N; j++)
    for (size_t i = 0; i < SHORT_N; i++)
      at[j + i * SHORT_N] = a[i + j * SHORT_N];
  for (int ta = 0; ta < 2; ta++) {
    tarn_matrix *f = NULL, *b = NULL;
    assert_int_equal(
        tarn_matrix_from_buffer(rt, SHORT_N, SHORT_N, nb, nb, a, SHORT_N, &f),
        0);
    size_t piv[SHORT_N];
    assert_int_equal(tarn_matrix_lu(f, piv, NULL), 0);
    assert_int_equal(tarn_matrix_rand(rt, SHORT_N, nrhs, nb, nrhs, 6, &b), 0);
    double *rhs = test_buffer_of(b);
    int info = 5;
    assert_int_equal(tarn_matrix_lu_solve(f, piv, (tarn_trans)ta, b, &info), 0);
    assert_int_equal(info, 0);
    double *x = test_buffer_of(b);
    assert_true(test_solve_residual(ta ? at : a, x, rhs, SHORT_N, nrhs) < 20);
    free(x);
    free(rhs);
    TEST_DESTROY_MATRICES(f, b);
  }
  free(a);
  free(at);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A one-tile LU solve of one vector (one dgetrs) takes its pivots'
 * scratch before the copy of B's tile column: the copy is then left out
 * and the diagonal checked first. Before, the copy took it all and the
 * pivots found none: TARN_ENOSPC, B lost (TARN_ECANCELED). */
static void a_one_tile_solve_keeps_scratch_for_its_pivots(void **state) {
  (void)state;
  solve_short_of_scratch(SHORT_N, 1);
}

/* In two tiles, and in one with several right-hand sides (solved by the
 * passes, not dgetrs), the copy takes the scratch, and the interchanges,
 * which gather B's tile column into scratch of their own where there is
 * room, swap in place in its tiles (the test fails when those are
 * skipped). */
static void interchanges_without_scratch_swap_in_place(void **state) {
  (void)state;
  solve_short_of_scratch(SHORT_N / 2, SHORT_NRHS);
  solve_short_of_scratch(SHORT_N, SHORT_NRHS);
}

/* The solves with factors made before that go in pieces of B's columns
 * (linalg_internal.h, tarn__solve_piece_cols): 0 Cholesky's, 1 and 2 LU's
 * (A X = B, A^T X = B), 3 the triangle L^T of Cholesky's factor, 4 the
 * triangle U of LU's. */
enum { PIECE_SOLVES = 5 };

static int piece_solve(int kind, tarn_matrix *l, tarn_matrix *lu,
                       const size_t *piv, tarn_matrix *b, int *info) {
  switch (kind) {
    case 0:
      return tarn_matrix_cholesky_solve(l, b, info);
    case 1:
    case 2:
      return tarn_matrix_lu_solve(lu, piv, (tarn_trans)(kind - 1), b, info);
    case 3:
      return tarn_matrix_triangular_solve(l, TARN_LOWER, TARN_TRANS,
                                          TARN_NON_UNIT, b, info);
    default:
      return tarn_matrix_triangular_solve(lu, TARN_UPPER, TARN_NO_TRANS,
                                          TARN_NON_UNIT, b, info);
  }
}

/* On 3 workers, B of 96 columns in one tile column with a factor of 3
 * tile columns goes in 3 pieces of 32 columns: for each solve X is, bit
 * for bit, what the same solve leaves in a B the caller tiled so (the
 * pieces are that solve; B's own tiles get their copies), and solves A X
 * = B for Cholesky's; with a zero on the factor's diagonal every solve
 * returns TARN_EINVAL with its order in info and B unchanged; after a
 * failed task on B, TARN_ECANCELED. Under a memory limit whose eighth
 * three copies of B do not fit in, B keeps its tiling and still solves:
 * the same X but for rounding (with OpenBLAS's SkylakeX or Cooperlake
 * kernels a product on 96 columns and three on 32 differ in the last
 * bits). */
static void many_right_hand_sides_go_in_pieces(void **state) {
  (void)state;
  enum { n = 150, nb = 60, nrhs = 96 };
  double *spd = test_spd_matrix(n, 1.0, 71);
  for (size_t limit = 0; limit <= ((size_t)2 << 20); limit += (size_t)2 << 20) {
    tarn_rt *rt = test_rt(3, limit);
    tarn_matrix *l = NULL, *lu = NULL, *b = NULL, *narrow = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, spd, n, &l), 0);
    assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 72, &lu), 0);
    size_t piv[n];
    assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
    assert_int_equal(tarn_matrix_rand(rt, n, nrhs, nb, nrhs, 73, &b), 0);
    assert_int_equal(tarn__solve_piece_cols(l, b), limit == 0 ? 32 : 0);
    double *rhs = test_buffer_of(b);
    for (int kind = 0; kind < PIECE_SOLVES; kind++) {
      tarn_matrix *x = NULL;
      assert_int_equal(
          tarn_matrix_from_buffer(rt, n, nrhs, nb, nrhs, rhs, n, &x), 0);
      narrow = test_retiled(rt, x, 32);
      int info = -1;
      assert_int_equal(piece_solve(kind, l, lu, piv, x, &info), 0);
      assert_int_equal(info, 0);
      assert_int_equal(piece_solve(kind, l, lu, piv, narrow, &info), 0);
      double *got = test_buffer_of(x);
      if (limit == 0) {
        test_matrix_holds(narrow, got);
      } else { /* B's own tiles: the same X but for rounding (a BLAS call
                  on 96 columns need not round as three on 32) */
        double *want = test_buffer_of(narrow);
        for (size_t k = 0; k < n * nrhs; k++)
          assert_true(fabs(got[k] - want[k]) <= 1e-9 * (1.0 + fabs(want[k])));
        free(want);
      }
      if (kind == 0)
        assert_true(test_solve_residual(spd, got, rhs, n, nrhs) < 20);
      free(got);
      TEST_DESTROY_MATRICES(x, narrow);
    }
    /* zeros on the diagonals, in the second tile */
    double *f = test_buffer_of(l), *g = test_buffer_of(lu);
    f[70 + 70 * n] = 0.0;
    g[70 + 70 * n] = 0.0;
    tarn_matrix *ls = NULL, *lus = NULL;
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, f, n, &ls), 0);
    assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, g, n, &lus), 0);
    for (int kind = 0; kind < PIECE_SOLVES; kind++) {
      int info = 0;
      assert_int_equal(piece_solve(kind, ls, lus, piv, b, &info), TARN_EINVAL);
      assert_int_equal(info, 71);
      test_matrix_holds(b, rhs);
    }
    test_fail_first_tile(rt, b);
    int info = 5;
    assert_int_equal(tarn_matrix_cholesky_solve(l, b, &info), TARN_ECANCELED);
    assert_int_equal(info, 0);
    free(f);
    free(g);
    free(rhs);
    TEST_DESTROY_MATRICES(l, lu, b, ls, lus);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  free(spd);
}

static int lu_solve_fn(void *ctx, tarn_matrix *a, tarn_matrix *b, int *info) {
  return tarn_matrix_lu_solve(a, ctx, TARN_NO_TRANS, b, info);
}

/* Solves with one factorisation from several threads at once. */
static void test_lu_solve_concurrent(void **state) {
  (void)state;
  size_t n = 160, nb = 40;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *m = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 61, &m), 0);
  double *a = test_buffer_of(m);
  size_t *piv = malloc(n * sizeof *piv);
  assert_non_null(piv);
  assert_int_equal(tarn_matrix_lu(m, piv, NULL), 0);
  test_solves_at_once(rt, lu_solve_fn, piv, m, a, n, nb);
  free(a);
  free(piv);
  tarn_matrix_destroy(m);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The same refusal with B's tiles spilled (512 x 512 factors and 128
 * right-hand sides in tiles of 64 under 600 KB): B unchanged, both ways.
 * With TARN_TRANS, B's copies (from the temporary the interchanges end
 * on) took its tiles write-only the day they came, and wrote nothing: a
 * spilled tile came back as other bytes. */
static void test_lu_solve_singular_spilled(void **state) {
  (void)state;
  enum { N = 512, NRHS = 128, T = 64 };
  tarn_rt *rt = test_rt(2, 600 * 1000);
  double *a = test_random_matrix(N, N, 1.0, 21);
  for (size_t i = 0; i < N; i++) a[i] = 0.0; /* U(0, 0) is zero */
  tarn_matrix *f = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, T, T, a, N, &f), 0);
  size_t *piv = malloc(N * sizeof *piv);
  assert_non_null(piv);
  int info = 0;
  assert_int_equal(tarn_matrix_lu(f, piv, &info), TARN_EINVAL);
  assert_int_equal(info, 1);
  assert_int_equal(tarn_matrix_rand(rt, N, NRHS, T, T, 22, &b), 0);
  double *b0 = test_buffer_of(b);
  for (int trans = 0; trans < 2; trans++) {
    info = 0;
    assert_int_equal(tarn_matrix_lu_solve(
                         f, piv, trans ? TARN_TRANS : TARN_NO_TRANS, b, &info),
                     TARN_EINVAL);
    assert_int_equal(info, 1);
    double *b1 = test_buffer_of(b);
    assert_memory_equal(b0, b1, (size_t)N * NRHS * sizeof *b0);
    free(b1);
  }
  tarn_pool_stats st;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &st), 0);
  assert_true(st.spills > 0);
  free(b0);
  free(piv);
  free(a);
  TEST_DESTROY_MATRICES(f, b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Factors of a singular A (a zero column p: U(p, p) is zero) are refused
 * with tarn_matrix_lu's info, B unchanged; bad arguments and pivots are
 * refused and change nothing. */
static void test_lu_solve_bad(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(3, 0);
  size_t n = 12, p = 7;
  tarn_matrix *r = NULL, *sing = NULL, *a = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, 4, 4, 1, &r), 0);
  double *orig = test_buffer_of(r), *buf = test_buffer_of(r);
  for (size_t i = 0; i < n; i++) buf[i + p * n] = 0.0;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, 4, 4, buf, n, &sing), 0);
  size_t piv[12], good[12];
  int info = 0;
  assert_int_equal(tarn_matrix_lu(sing, piv, &info), TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  assert_int_equal(tarn_matrix_rand(rt, n, 2, 4, 1, 2, &b), 0);
  double *b0 = test_buffer_of(b);
  info = 0;
  assert_int_equal(tarn_matrix_lu_solve(sing, piv, TARN_NO_TRANS, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  double *b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, n * 2 * sizeof *b0);
  info = 0; /* A^T X = B: the same zero, B unchanged */
  assert_int_equal(tarn_matrix_lu_solve(sing, piv, TARN_TRANS, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, (int)(p + 1));
  free(b1);
  b1 = test_buffer_of(b);
  assert_memory_equal(b0, b1, n * 2 * sizeof *b0);

  assert_int_equal(tarn_matrix_copy(r, &a), 0);
  assert_int_equal(tarn_matrix_lu(a, good, NULL), 0);
  test_solve_refuses_bad_shapes(rt, lu_solve_fn, good, a, b);
  info = 5;
  assert_int_equal(tarn_matrix_lu_solve(a, NULL, TARN_NO_TRANS, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, 0);
  assert_int_equal(tarn_matrix_lu_solve(a, good, (tarn_trans)2, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, 0);
  size_t bad[12];
  memcpy(bad, good, sizeof bad);
  bad[5] = 4; /* before its own row */
  assert_int_equal(tarn_matrix_lu_solve(a, bad, TARN_TRANS, b, &info),
                   TARN_EINVAL);
  bad[5] = n; /* past the last row */
  assert_int_equal(tarn_matrix_lu_solve(a, bad, TARN_NO_TRANS, b, &info),
                   TARN_EINVAL);
  assert_int_equal(info, 0);
  double *b2 = test_buffer_of(b);
  assert_memory_equal(b0, b2, n * 2 * sizeof *b0);
  /* the good call still works */
  assert_int_equal(tarn_matrix_lu_solve(a, good, TARN_NO_TRANS, b, &info), 0);
  assert_int_equal(info, 0);
  double *x = test_buffer_of(b);
  assert_true(test_solve_residual(orig, x, b0, n, 2) < 20);
  free(orig);
  free(buf);
  free(b0);
  free(b1);
  free(b2);
  free(x);
  tarn_matrix_destroy(r);
  tarn_matrix_destroy(sing);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- row interchanges --------------------------------------------------- */

/* P B and P^T B by tarn_matrix_permute_rows against LAPACKE_dlaswp on the
 * same B, bit for bit: random pivots of LAPACK's form (many rows
 * interchanged, some not), all m of them or the first half, B of m x c in
 * tiles mb x nb that do and do not divide it; P^T P B is B again. */
static void test_permute_rows(void **state) {
  (void)state;
  static const size_t shapes[][4] = {/* m, c, mb, nb */
                                     {1, 1, 1, 1},
                                     {7, 3, 3, 2},
                                     {40, 1, 8, 1},
                                     {50, 9, 16, 4},
                                     {129, 17, 32, 17}};
  uint64_t x = 88172645463325252ull;
  for (unsigned workers = 1; workers <= 3; workers += 2) {
    tarn_rt *rt = test_rt(workers, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      size_t m = shapes[s][0], c = shapes[s][1];
      size_t npiv = s % 2 == 0 ? m : (m + 1) / 2;
      size_t *piv = malloc(m * sizeof *piv);
      lapack_int *ipiv = malloc(m * sizeof *ipiv);
      assert_non_null(piv);
      assert_non_null(ipiv);
      for (size_t i = 0; i < m; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        piv[i] = x % 4 == 0 ? i : i + (size_t)(x >> 8) % (m - i);
        ipiv[i] = (lapack_int)piv[i] + 1;
      }
      tarn_matrix *b = NULL;
      assert_int_equal(
          tarn_matrix_rand(rt, m, c, shapes[s][2], shapes[s][3], s, &b), 0);
      double *b0 = test_buffer_of(b);
      for (int t = 0; t < 2; t++) {
        double *want = test_buffer_of(b);
        assert_int_equal(LAPACKE_dlaswp(LAPACK_COL_MAJOR, (int)c, want, (int)m,
                                        1, (int)npiv, ipiv, t ? -1 : 1),
                         0);
        assert_int_equal(tarn_matrix_permute_rows(
                             b, piv, npiv, t ? TARN_TRANS : TARN_NO_TRANS),
                         0);
        double *got = test_buffer_of(b);
        assert_memory_equal(got, want, m * c * sizeof *got);
        free(got);
        free(want);
      }
      /* P^T (P B) = B: the second round undid the first */
      double *back = test_buffer_of(b);
      assert_memory_equal(back, b0, m * c * sizeof *back);
      free(back);
      free(b0);
      free(piv);
      free(ipiv);
      tarn_matrix_destroy(b);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* P^T (L U) from the m x n LU factors f and their min(m, n) pivots, into
 * a new matrix of tb x tb tiles (*prod) by tarn_matrix_permute_rows:
 * A (`want`) again to rounding. Returns its buffer (free it). */
static double *check_undo_lu(tarn_rt *rt, const double *f, const size_t *piv,
                             size_t m, size_t n, size_t tb, const double *want,
                             tarn_matrix **prod) {
  size_t k = m < n ? m : n;
  double *l, *u, *p = malloc(m * n * sizeof *p);
  assert_non_null(p);
  test_lu_split(f, m, n, &l, &u);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
              1.0, l, (int)m, u, (int)k, 0.0, p, (int)m);
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, tb, tb, p, m, prod), 0);
  assert_int_equal(tarn_matrix_permute_rows(*prod, piv, k, TARN_TRANS), 0);
  double *got = test_buffer_of(*prod);
  for (size_t i = 0; i < m * n; i++) p[i] = got[i] - want[i];
  assert_true(test_fro(p, m * n) <= 10 * (double)(m > n ? m : n) *
                                        test_fro(want, m * n) * DBL_EPSILON);
  free(p);
  free(l);
  free(u);
  return got;
}

/* A tall LU's min(M, N) = N pivots applied as they are (npiv N) to the M
 * rows of L U give A back (P^T (L U) = A), and so do a wide LU's M. */
static void test_permute_rows_rectangular_lu(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  static const size_t shapes[][3] = {{90, 30, 10}, {30, 90, 10}};
  for (size_t s = 0; s < 2; s++) {
    size_t m = shapes[s][0], n = shapes[s][1], tb = shapes[s][2];
    size_t k = m < n ? m : n;
    tarn_matrix *a = NULL, *prod = NULL;
    assert_int_equal(tarn_matrix_rand(rt, m, n, tb, tb, 12 + s, &a), 0);
    double *want = test_buffer_of(a);
    size_t *piv = malloc(k * sizeof *piv); /* exactly k: no room past it */
    assert_non_null(piv);
    assert_int_equal(tarn_matrix_lu(a, piv, NULL), 0);
    double *f = test_buffer_of(a);
    free(check_undo_lu(rt, f, piv, m, n, tb, want, &prod));
    free(f);
    free(piv);
    free(want);
    tarn_matrix_destroy(prod);
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* With LU's factors: P A = L U, so P^T (L U), formed from the factors, is
 * A again to rounding; bad arguments are refused with B unchanged; a
 * failed task on B gives TARN_ECANCELED. */
static void test_permute_rows_with_factors(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  size_t n = 60, nb = 16;
  tarn_matrix *a = NULL, *lu = NULL;
  assert_int_equal(tarn_matrix_rand(rt, n, n, nb, nb, 9, &a), 0);
  assert_int_equal(tarn_matrix_copy(a, &lu), 0);
  size_t piv[60];
  assert_int_equal(tarn_matrix_lu(lu, piv, NULL), 0);
  double *f = test_buffer_of(lu), *want = test_buffer_of(a);
  tarn_matrix *prod = NULL;
  double *got = check_undo_lu(rt, f, piv, n, n, nb, want, &prod);
  /* refusals: B unchanged */
  size_t bad[60];
  memcpy(bad, piv, sizeof bad);
  bad[20] = 19; /* before its row */
  assert_int_equal(tarn_matrix_permute_rows(prod, bad, n, TARN_NO_TRANS),
                   TARN_EINVAL);
  bad[20] = n; /* past the end */
  assert_int_equal(tarn_matrix_permute_rows(prod, bad, n, TARN_NO_TRANS),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_permute_rows(NULL, piv, n, TARN_NO_TRANS),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_permute_rows(prod, NULL, n, TARN_NO_TRANS),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_permute_rows(prod, piv, n, (tarn_trans)2),
                   TARN_EINVAL);
  /* more interchanges than B has rows */
  assert_int_equal(tarn_matrix_permute_rows(prod, piv, n + 1, TARN_NO_TRANS),
                   TARN_EINVAL);
  double *after = test_buffer_of(prod);
  assert_memory_equal(after, got, n * n * sizeof *got);
  test_fail_first_tile(rt, prod);
  assert_int_equal(tarn_matrix_permute_rows(prod, piv, n, TARN_NO_TRANS),
                   TARN_ECANCELED);
  free(f);
  free(want);
  free(got);
  free(after);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(lu);
  tarn_matrix_destroy(prod);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static int panels_in_place(void **state) {
  (void)state;
  tarn__lu_gather_short_panels(false);
  return 0;
}

static int panels_gathered(void **state) {
  (void)state;
  tarn__lu_gather_short_panels(true);
  return 0;
}

int main(void) {
  /* The tests of small tiles: LU's panels of short tiles are gathered into
   * one block and factored there (src/linalg/lu.c, panel_gathered), and
   * each tile column's updates go in one task (coalesce_updates), so they
   * run a second time, last, with every panel factored in place across
   * its tiles and the updates in tasks per tile. */
  const struct CMUnitTest small_tiles[] = {
      cmocka_unit_test(test_lu_sizes),
      cmocka_unit_test(test_lu_rectangular),
      cmocka_unit_test(test_lu_rectangular_singular),
      cmocka_unit_test(test_lu_nan_heading_its_column),
      cmocka_unit_test(test_lu_two_zero_columns),
      cmocka_unit_test(test_lu_subnormal_pivots),
      cmocka_unit_test(test_lu_rectangular_mem_limit),
      cmocka_unit_test(test_lu_tall_panel_in_place),
      cmocka_unit_test(test_lu_zero_diagonal),
      cmocka_unit_test(test_lu_singular),
      cmocka_unit_test(test_solve),
      cmocka_unit_test(test_solve_singular),
  };
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lu_large_tiles),
      cmocka_unit_test(test_lu_limit_of_one_column),
      cmocka_unit_test(test_lu_limit_of_two_tile_rows),
      cmocka_unit_test(test_lu_tall_units),
      cmocka_unit_test(test_solve_singular_short_of_memory),
      cmocka_unit_test(test_lu_bad),
      cmocka_unit_test(test_lu_mem_limit),
      cmocka_unit_test(test_solve_bad),
      cmocka_unit_test(test_lu_solve),
      cmocka_unit_test(a_column_solve_keeps_b_when_u_is_singular),
      cmocka_unit_test(a_one_tile_solve_keeps_scratch_for_its_pivots),
      cmocka_unit_test(interchanges_without_scratch_swap_in_place),
      cmocka_unit_test(many_right_hand_sides_go_in_pieces),
      cmocka_unit_test(test_lu_solve_concurrent),
      cmocka_unit_test(test_lu_solve_bad),
      cmocka_unit_test(test_lu_solve_singular_spilled),
      cmocka_unit_test(test_permute_rows),
      cmocka_unit_test(test_permute_rows_with_factors),
      cmocka_unit_test(test_permute_rows_rectangular_lu),
  };
  int failed =
      cmocka_run_group_tests_name("small tiles", small_tiles, NULL, NULL);
  failed += cmocka_run_group_tests_name("LU and its solves", tests, NULL, NULL);
  failed +=
      cmocka_run_group_tests_name("small tiles, panels in place", small_tiles,
                                  panels_in_place, panels_gathered);
  return failed;
}
