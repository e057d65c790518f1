/* support.h: helpers the matrix, stencil and linalg tests share (include
 * after <cmocka.h>): a runtime with a given number of
 * workers and memory limit and the check that it spilled, what the pool
 * charges for a tile, a task that
 * fails on a matrix's first tile, a matrix copied out to a fresh buffer, the
 * Frobenius norm of a buffer, random and SPD test matrices, and for the
 * linear solves: the scaled
 * residual, the table of solve sizes, solves from several threads at once
 * and the bad shapes every solve refuses. Failures are cmocka
 * assertions. */
#ifndef TARN_TESTS_SUPPORT_H
#define TARN_TESTS_SUPPORT_H

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tarn.h"

/* A runtime of `workers` workers whose pool has the memory limit `limit`
 * (0: none), whose linear algebra works in tiles of `work_tile` where the
 * caller's are small (tarn_rt_options.work_tile; 0: never). */
static inline tarn_rt *test_rt_work(unsigned workers, size_t limit,
                                    unsigned work_tile) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = workers;
  o.pool.mem_limit = limit;
  o.work_tile = work_tile;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

/* test_rt_work with no work tiles: the tests of the tiled algorithms run
 * them on the small tiles they choose (tests/linalg/test_work_tiles.c
 * tests the copies into work tiles). */
static inline tarn_rt *test_rt(unsigned workers, size_t limit) {
  return test_rt_work(workers, limit, 0);
}

/* What the pool charges for a tile of rows x cols doubles: whole pages. */
static inline size_t test_tile_charge(size_t rows, size_t cols) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (rows * cols * sizeof(double) + page - 1) / page * page;
}

/* The matrix in a malloc'ed column-major buffer (ld = rows); the caller
 * frees it. Waits for the tasks writing the matrix. */
static inline double *test_buffer_of(tarn_matrix *a) {
  size_t m = tarn_matrix_rows(a), n = tarn_matrix_cols(a);
  double *b = malloc(m * n * sizeof *b);
  assert_non_null(b);
  assert_int_equal(tarn_matrix_to_buffer(a, b, m), 0);
  return b;
}

/* Asserts that `a` reads back as `want` (column-major, ld its rows), bit
 * for bit: what a refused or failed call must leave. */
static inline void test_matrix_holds(tarn_matrix *a, const double *want) {
  double *got = test_buffer_of(a);
  assert_memory_equal(got, want,
                      tarn_matrix_rows(a) * tarn_matrix_cols(a) * sizeof *got);
  free(got);
}

/* The next of a xorshift sequence in *x, as a double in [-0.5, 0.5). */
static inline double test_rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return (double)(*x >> 11) * 0x1p-53 - 0.5;
}

/* A malloc'ed m x n matrix (ld m) of test_rnd values from `seed`, with
 * `shift` added to its diagonal; the caller frees it. */
static inline double *test_random_matrix(size_t m, size_t n, double shift,
                                         uint64_t seed) {
  double *a = malloc(m * n * sizeof *a);
  assert_non_null(a);
  uint64_t x = seed * 2654435761u + 3;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++)
      a[i + j * m] = test_rnd(&x) + (i == j ? shift : 0.0);
  return a;
}

/* A malloc'ed symmetric positive definite n x n A = G G^T / n + s I, G
 * test_random_matrix(n, n, 0, seed); the caller frees it. */
static inline double *test_spd_matrix(size_t n, double s, uint64_t seed) {
  double *g = test_random_matrix(n, n, 0.0, seed),
         *a = malloc(n * n * sizeof *a);
  assert_non_null(a);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      double v = 0;
      for (size_t k = 0; k < n; k++) v += g[i + k * n] * g[j + k * n];
      a[i + j * n] = v / (double)n + (i == j ? s : 0.0);
    }
  free(g);
  return a;
}

/* `a` (of `rt`) in tiles of mb x nb: a new matrix, waited for (the
 * caller destroys it). */
static inline tarn_matrix *test_retiled_to(tarn_rt *rt, tarn_matrix *a,
                                           size_t mb, size_t nb) {
  tarn_region *region = NULL;
  tarn_matrix *out = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  assert_int_equal(tarn_matrix_retile(a, mb, nb, &out), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  return out;
}

/* `a` (of `rt`) in tiles of its rows by `cols` columns (test_retiled_to). */
static inline tarn_matrix *test_retiled(tarn_rt *rt, tarn_matrix *a,
                                        size_t cols) {
  return test_retiled_to(rt, a, tarn_matrix_tile_rows(a), cols);
}

/* The tasks `rt` has had submitted so far. */
static inline uint64_t test_tasks_submitted(tarn_rt *rt) {
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(rt, &st), 0);
  return st.submitted;
}

/* Destroys each of the matrices given (a NULL one is skipped, as
 * tarn_matrix_destroy skips it). */
#define TEST_DESTROY_MATRICES(...)                                           \
  do {                                                                       \
    tarn_matrix *test_all_[] = {__VA_ARGS__};                                \
    for (size_t test_k_ = 0; test_k_ < sizeof test_all_ / sizeof *test_all_; \
         test_k_++)                                                          \
      tarn_matrix_destroy(test_all_[test_k_]);                               \
  } while (0)

/* Destroys `rt` after checking that its pool spilled and never held more
 * than `limit` bytes resident (a run under a memory limit). */
static inline void test_rt_destroy_spilled(tarn_rt *rt, size_t limit) {
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  assert_true(ps.spills > 0);
  assert_true(ps.resident_peak <= limit);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The objects the pool of `rt` has read back so far (for
 * test_reads_within). */
static inline uint64_t test_restores(tarn_rt *rt) {
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  return ps.restores;
}

/* Checks that the pool of `rt` read back at most `bound` objects since its
 * count was `since` (test_restores) for `what`, and never held more than
 * `limit` bytes resident. */
static inline void test_reads_within(tarn_rt *rt, uint64_t since,
                                     uint64_t bound, size_t limit,
                                     const char *what) {
  tarn_pool_stats ps;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &ps), 0);
  uint64_t reads = ps.restores - since;
  if (!(reads <= bound))
    print_error("%s under the limit read back %llu objects, more than %llu\n",
                what, (unsigned long long)reads, (unsigned long long)bound);
  assert_true(reads <= bound);
  assert_true(ps.resident_peak <= limit);
}

/* Fails on the block that holds element (0, 0) of the matrix. */
static inline int test_fail_at_the_origin(const tarn_block *blk, void *arg) {
  (void)arg;
  return blk->row == 0 && blk->col == 0 ? -77 : 0;
}

/* The kernel `fail` run over b, reading and writing it, waited for: the
 * region fails with `status`, the status fail returns on the blocks it
 * fails on, whose tiles are then as a failed task left them (rt.h, rule
 * 4). */
static inline void test_fail_by(tarn_rt *rt, tarn_matrix *b, tarn_block_fn fail,
                                int status) {
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_matrix *const ms[] = {b};
  const tarn_access rw[] = {TARN_READ_WRITE};
  assert_int_equal(tarn_matrix_apply(ms, rw, 1, fail, NULL), 0);
  assert_int_equal(tarn_region_wait(region, NULL), status);
}

/* A task that reads and writes b's first tile fails (status -77). */
static inline void test_fail_first_tile(tarn_rt *rt, tarn_matrix *b) {
  test_fail_by(rt, b, test_fail_at_the_origin, -77);
}

/* sqrt(sum x[k]^2) over n values. */
static inline double test_fro(const double *x, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += x[k] * x[k];
  return sqrt(s);
}

/* ||A X - B||_F / (n ||A||_F ||X||_F eps) for the n x n A and the n x
 * nrhs X and B (column-major, ld = n). */
static inline double test_solve_residual(const double *a, const double *x,
                                         const double *b, size_t n,
                                         size_t nrhs) {
  double *r = malloc(n * nrhs * sizeof *r);
  assert_non_null(r);
  memcpy(r, b, n * nrhs * sizeof *r);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)nrhs,
              (int)n, 1.0, a, (int)n, x, (int)n, -1.0, r, (int)n);
  double res = test_fro(r, n * nrhs) / ((double)n * test_fro(a, n * n) *
                                        test_fro(x, n * nrhs) * DBL_EPSILON);
  free(r);
  return res;
}

/* A check of one solve: A n x n in tiles nb, nrhs right-hand sides in
 * column tiles cb, inputs from `seed`. */
typedef void (*test_solve_check)(tarn_rt *rt, size_t n, size_t nb, size_t nrhs,
                                 size_t cb, uint64_t seed);

/* Runs `check` on sizes that are and are not multiples of the tile, one
 * tile and many, one right-hand side and many (3 workers); then on tiles
 * whose kernels share their work, with 1 to 3 workers. Seeds from seed0. */
static inline void test_solve_sizes(test_solve_check check, uint64_t seed0) {
  static const size_t cases[][4] = {
      /* n, tile, nrhs, rhs column tile */
      {1, 1, 1, 1},   {7, 32, 1, 1},    {32, 32, 3, 2}, {50, 16, 1, 1},
      {50, 16, 9, 4}, {100, 30, 17, 6}, {33, 8, 40, 7}, {64, 8, 64, 64},
      {45, 1, 2, 1},  {129, 16, 5, 5},
  };
  tarn_rt *rt = test_rt(3, 0);
  for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
    check(rt, cases[s][0], cases[s][1], cases[s][2], cases[s][3],
          seed0 + 2 * s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  for (unsigned w = 1; w <= 3; w++) {
    rt = test_rt(w, 0);
    check(rt, 513, 513, 200, 200, seed0 + 40);
    check(rt, 700, 300, 130, 130, seed0 + 42);
    /* one right-hand side: one task, whose updates of 300 x 300 it shares
     * with the idle workers as its region's last (tarn__gemm_shared); two
     * on one tile of 512: a vector a worker (tarn__trsm_shared), and LU's
     * by its passes instead of one dgetrs */
    check(rt, 600, 300, 1, 1, seed0 + 44);
    check(rt, 512, 512, 2, 2, seed0 + 46);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A solve under test: B (in place) with A or its factors, which `ctx`
 * holds with whatever else the call needs. */
typedef int (*test_solve_fn)(void *ctx, tarn_matrix *a, tarn_matrix *b,
                             int *info);

struct test_solver {
  test_solve_fn solve;
  void *ctx;
  tarn_matrix *a, *b;
  int rc;
};

static inline void *test_solver_main(void *arg) {
  struct test_solver *s = arg;
  s->rc = s->solve(s->ctx, s->a, s->b, NULL);
  return NULL;
}

/* Three threads solve at once with `a` (n x n in tiles nb, the factors of
 * the matrix `orig`), six right-hand sides each: each X by its residual
 * against orig. */
static inline void test_solves_at_once(tarn_rt *rt, test_solve_fn solve,
                                       void *ctx, tarn_matrix *a,
                                       const double *orig, size_t n,
                                       size_t nb) {
  enum { threads = 3, nrhs = 6 };
  struct test_solver s[threads];
  pthread_t th[threads];
  double *rhs[threads];
  for (int i = 0; i < threads; i++) {
    s[i] = (struct test_solver){.solve = solve, .ctx = ctx, .a = a};
    assert_int_equal(
        tarn_matrix_rand(rt, n, nrhs, nb, 2, 62 + (uint64_t)i, &s[i].b), 0);
    rhs[i] = test_buffer_of(s[i].b);
  }
  for (int i = 0; i < threads; i++)
    assert_int_equal(pthread_create(&th[i], NULL, test_solver_main, &s[i]), 0);
  for (int i = 0; i < threads; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(s[i].rc, 0);
    double *x = test_buffer_of(s[i].b);
    assert_true(test_solve_residual(orig, x, rhs[i], n, nrhs) < 20);
    free(x);
    free(rhs[i]);
    tarn_matrix_destroy(s[i].b);
  }
}

/* Operands for the refusals of the calls that read factors made before:
 * a sound 12 x 12 *a in tiles of 4, a 12 x 13 *wide, a 12 x 12 *oblong in
 * tiles of 4 x 3, and piv[0..12) the identity. */
static inline void test_factor_operands(tarn_rt *rt, tarn_matrix **a,
                                        tarn_matrix **wide,
                                        tarn_matrix **oblong, size_t *piv) {
  for (size_t i = 0; i < 12; i++) piv[i] = i;
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 4, 1, a), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 13, 4, 4, 2, wide), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 3, 3, oblong), 0);
}

/* `solve` refuses, with TARN_EINVAL and *info 0, every bad operand next
 * to the good 12 x 12 `a` (tiles 4) and 12 x 2 `b` (tiles 4 x 1) of `rt`:
 * NULL, a as both, a rectangular or non-square-tiled A, a B of other rows,
 * other row tiles or another runtime; b is unchanged after them. */
static inline void test_solve_refuses_bad_shapes(tarn_rt *rt,
                                                 test_solve_fn solve, void *ctx,
                                                 tarn_matrix *a,
                                                 tarn_matrix *b) {
  tarn_rt *rt2 = test_rt(1, 0);
  tarn_matrix *rect = NULL, *tiles = NULL, *rows = NULL, *rowtile = NULL,
              *other = NULL;
  assert_int_equal(tarn_matrix_rand(rt, 12, 10, 4, 4, 1, &rect), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 12, 4, 3, 1, &tiles), 0);
  assert_int_equal(tarn_matrix_rand(rt, 10, 2, 4, 1, 2, &rows), 0);
  assert_int_equal(tarn_matrix_rand(rt, 12, 2, 3, 1, 2, &rowtile), 0);
  assert_int_equal(tarn_matrix_rand(rt2, 12, 2, 4, 1, 2, &other), 0);
  double *b0 = test_buffer_of(b);
  tarn_matrix *const bad[][2] = {{NULL, b},    {a, NULL},  {a, a},
                                 {rect, b},    {tiles, b}, {a, rows},
                                 {a, rowtile}, {a, other}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    int info = 5;
    assert_int_equal(solve(ctx, bad[k][0], bad[k][1], &info), TARN_EINVAL);
    assert_int_equal(info, 0);
  }
  test_matrix_holds(b, b0);
  free(b0);
  tarn_matrix_destroy(rect);
  tarn_matrix_destroy(tiles);
  tarn_matrix_destroy(rows);
  tarn_matrix_destroy(rowtile);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt2), 0);
}

#endif
