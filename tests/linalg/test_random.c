/* test_random.c: a seeded random differential test of the linear algebra
 * against CBLAS and LAPACKE on whole column-major matrices. Each case runs
 * one operation on a runtime of its own: gemm (four transposes, beta 0
 * over a C of NaNs), gemv (both transposes, y in lanes or by tiles), A^T A,
 * Cholesky and its solve, LU (pivots and factors against dgetrf), the LU
 * solves and tarn_matrix_solve, QR with its Q, both least-squares
 * solves and (A^T A)^-1 from R, the triangular solve, the four inverses, Q
 * applied alone from either side, the row interchanges (against dlaswp), and
 * from factors log|det| and the condition estimates (against dgecon, dpocon,
 * dtrcon); now and then on a singular, indefinite or rank-deficient input,
 * whose error is checked instead: TARN_EINVAL, LAPACK's info, B (or the matrix
 * inverted) bit for bit unchanged, rcond 0. Sizes go up to 70, in tiles of
 * 1 to 32 that do and do not divide them (or one tile), on 1 to 3 workers
 * (now and then a tall QR or LU of thousands of rows, below);
 * some cases run under a memory limit a few pages above what the case's
 * largest task pins, so tiles spill and are read back (the run checks that
 * some did, and that no pool passed its limit). Results are held to scaled
 * errors and residuals, each bound stated where it is checked.
 *
 * Everything a case draws comes from a splitmix64 generator seeded by
 * (seed, case) alone, so a case runs the same alone as in the batch. A
 * failure prints the seed, the case and all its parameters; rerun it with
 *   TARN_RANDOM_SEED=S TARN_RANDOM_CASE=C build/tests/test_random
 * and run more cases per seed with TARN_RANDOM_COUNT=N (default 360), or
 * larger ones with TARN_RANDOM_SCALE=K (random_scale). */
#include <cblas.h>
#include <float.h>
#include <inttypes.h>
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
#include "rt/rt_internal.h"
#include "support.h"
#include "tarn.h"

#include "reference.h"

#define EPS DBL_EPSILON

/* ---- a case (its generator, failures and run: random_case.h) ----------- */

struct tcase {
  uint64_t seed, rng;
  unsigned index, workers;
  bool limited;
  size_t max_tile, max_col; /* the pool's charge of the largest tile, and
                               of a tile column with a contiguous copy */
  size_t limit;
  char desc[480];
  tarn_rt *rt;
};

/* 30 cases of each of the 12 operations per seed. */
#define RANDOM_CASES_PER_SEED 360
#include "random_case.h"

/* TARN_RANDOM_SCALE=K (1 to 16; default 1) multiplies every size limit
 * and the largest tile by K: sizes up to 70 K in tiles up to 32 K, so the
 * kernels that split larger tiles (from 128: "Sharing a tile's work" in
 * docs/linalg.md) and the work tiles of several tiles run too. Cases take
 * about K^3 times longer; the suite runs K = 1. Read once. */
static size_t random_scale(void) {
  static long scale;
  if (scale == 0) {
    long k = env_or("TARN_RANDOM_SCALE", 1);
    scale = k < 1 ? 1 : k > 16 ? 16 : k;
  }
  return (size_t)scale;
}

/* A dimension of 1 to `max` (times random_scale) into *d and a tile size
 * for it into *t: one tile (a size at or past the dimension, which tarn
 * clamps), or at most 12 tiles along it that divide it or not. */
static void draw_dim(struct tcase *c, size_t max, size_t *d, size_t *t) {
  size_t k = random_scale();
  max *= k;
  *d = chance(c, 0.2) ? range(c, 1, min_z(8, max)) : range(c, 1, max);
  double u = unit(c);
  if (u < 0.15) {
    *t = *d + range(c, 0, 8);
    return;
  }
  *t = range(c, cdiv(*d, 12), 32 * k);
  if (u < 0.45 && *d >= *t) *d -= *d % *t; /* a multiple of the tile */
}

/* Counts an m x n matrix in mb x nb tiles into the case's largest task:
 * the pool charges whole pages per tile, and an LU panel (or its
 * interchanges on a tile column) pins a tile column, the interchanges of
 * an inverse a tile row. */
static void footprint(struct tcase *c, size_t m, size_t n, size_t mb,
                      size_t nb) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t mbe = min_z(mb, m), nbe = min_z(nb, n);
  size_t tile = cdiv(mbe * nbe * sizeof(double), page) * page;
  size_t col = cdiv(m, mbe) * tile;
  c->max_tile = max_z(c->max_tile, tile);
  c->max_col = max_z(c->max_col, max_z(col, cdiv(n, nbe) * tile));
}

/* The case's runtime, once the operation has counted its matrices: under
 * a limit, the largest task's pins (a tile column, and four tiles) and 0
 * to 4 pages more, so every task fits and the rest spills. A third of the
 * cases each run the operations on their own tiles, in work tiles of 64
 * (several, for the larger matrices) and of 256 (tarn/linalg.h, "Small
 * tiles"; under a limit where the copies fit). A quarter of those on 2
 * workers or more run with the cores set far apart
 * (tarn__rt_cores_far_set: smaller kernels unshared). */
static void start(struct tcase *c) {
  static const unsigned work_tiles[] = {0, 64, 256};
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (c->limited)
    c->limit = c->max_col + 4 * c->max_tile + range(c, 0, 4) * page;
  unsigned work = work_tiles[c->index % 3];
  bool far = c->index % 4 == 1 && c->workers > 1;
  describe(c, "; %u workers, limit %zu, work tile %u%s", c->workers, c->limit,
           work, far ? ", cores far apart" : "");
  if (random_scale() > 1) /* the rerun line needs it too */
    describe(c, "; TARN_RANDOM_SCALE=%zu", random_scale());
  c->rt = test_rt_work(c->workers, c->limit, work);
  if (far) tarn__rt_cores_far_set(c->rt, 1);
}

/* ---- host matrices ------------------------------------------------------ */

static double *alloc_buf(size_t count) {
  double *p = calloc(count, sizeof *p);
  assert_non_null(p);
  return p;
}
static double *random_buf(struct tcase *c, size_t count) {
  double *p = alloc_buf(count);
  for (size_t i = 0; i < count; i++) p[i] = real(c);
  return p;
}
static double *copy_buf(const double *a, size_t count) {
  double *p = alloc_buf(count);
  memcpy(p, a, count * sizeof *p);
  return p;
}
static double fro_diff(const double *a, const double *b, size_t count) {
  double s = 0;
  for (size_t i = 0; i < count; i++) s += (a[i] - b[i]) * (a[i] - b[i]);
  return sqrt(s);
}

static tarn_matrix *upload(struct tcase *c, size_t m, size_t n, size_t mb,
                           size_t nb, const double *buf) {
  tarn_matrix *a = NULL;
  CALL(c, 0, tarn_matrix_from_buffer(c->rt, m, n, mb, nb, buf, m, &a));
  return a;
}
static double *download(struct tcase *c, tarn_matrix *a) {
  double *p = alloc_buf(tarn_matrix_rows(a) * tarn_matrix_cols(a));
  CALL(c, 0, tarn_matrix_to_buffer(a, p, tarn_matrix_rows(a)));
  return p;
}
/* a still holds the m x n values want, bit for bit. */
static void check_unchanged(struct tcase *c, tarn_matrix *a, const double *want,
                            const char *name) {
  size_t count = tarn_matrix_rows(a) * tarn_matrix_cols(a);
  double *got = download(c, a);
  CHECK(c, memcmp(got, want, count * sizeof *got) == 0,
        "%s changed by a call that only reads it or failed", name);
  free(got);
}

static enum CBLAS_TRANSPOSE cblas_trans(tarn_trans t) {
  return t == TARN_TRANS ? CblasTrans : CblasNoTrans;
}

/* ||op(A) X - B||_F / (n ||A||_F ||X||_F eps) for the n x n A. */
static double solve_residual(tarn_trans ta, size_t n, size_t nrhs,
                             const double *a, const double *x,
                             const double *b) {
  double *r = copy_buf(b, n * nrhs);
  cblas_dgemm(CblasColMajor, cblas_trans(ta), CblasNoTrans, (int)n, (int)nrhs,
              (int)n, 1.0, a, (int)n, x, (int)n, -1.0, r, (int)n);
  double res = test_fro(r, n * nrhs) /
               ((double)n * test_fro(a, n * n) * test_fro(x, n * nrhs) * EPS);
  free(r);
  return res;
}

/* A scalar for alpha and beta: 0, 1, -1 or any in [-2, 2). */
static double scalar(struct tcase *c) {
  static const double special[] = {0.0, 1.0, -1.0};
  size_t k = range(c, 0, 4);
  return k < 3 ? special[k] : 2 * real(c);
}

/* A region of the caller's around a call that submits and returns, when
 * `use`: its wait then reports no failure. */
static tarn_region *begin_region(struct tcase *c, bool use) {
  tarn_region *r = NULL;
  if (use) CALL(c, 0, tarn_region_begin(c->rt, &r));
  return r;
}
static void end_region(struct tcase *c, tarn_region *r) {
  if (r != NULL) CALL(c, 0, tarn_region_wait(r, NULL));
}

/* ---- products ----------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C by gemm, or with B one column x by gemv
 * (y then in two or three tiles now and then: lanes of columns when
 * fewer than the workers); C given, or new (and beta unused). Its error
 * against dgemm or dgemv within 10 (|alpha| ||A|| ||B|| + |beta| ||C0||)
 * (k + 2) eps; a C of NaNs with beta 0 is not read. Products and A^T A
 * run now and then in a region of the caller's. */
static void product(struct tcase *c, bool gemv) {
  size_t m, n = 1, k, tm, tn = 1, tk;
  draw_dim(c, 70, &m, &tm);
  if (!gemv) draw_dim(c, 70, &n, &tn);
  draw_dim(c, 70, &k, &tk);
  if (gemv && m >= 2 && chance(c, 0.3)) tm = cdiv(m, range(c, 2, 3));
  tarn_trans ta = (tarn_trans)range(c, 0, 1);
  tarn_trans tb = gemv ? TARN_NO_TRANS : (tarn_trans)range(c, 0, 1);
  double alpha = scalar(c), beta = scalar(c);
  bool given = chance(c, 0.6), nans = given && chance(c, 0.3);
  bool region = chance(c, 0.3);
  if (nans) beta = 0.0;
  size_t ar = ta ? k : m, ac = ta ? m : k, amb = ta ? tk : tm,
         anb = ta ? tm : tk;
  size_t br = tb ? n : k, bc = tb ? k : n, bmb = tb ? tn : tk,
         bnb = gemv ? range(c, 1, 3)
               : tb ? tk
                    : tn;
  describe(c,
           "%s m %zu n %zu k %zu, tiles m %zu n %zu k %zu, B tile cols %zu, "
           "ta %d tb %d, alpha %g beta %g, C %s%s",
           gemv ? "gemv" : "gemm", m, n, k, tm, tn, tk, bnb, ta, tb, alpha,
           beta,
           nans    ? "of NaNs"
           : given ? "given"
                   : "new",
           region ? ", in a region" : "");
  footprint(c, ar, ac, amb, anb);
  footprint(c, br, bc, bmb, bnb);
  footprint(c, m, n, tm, tn);
  start(c);
  double *a = random_buf(c, ar * ac), *b = random_buf(c, br * bc);
  double *c0 = random_buf(c, m * n), *want = alloc_buf(m * n);
  if (nans)
    for (size_t i = 0; i < m * n; i++) c0[i] = NAN;
  tarn_matrix *A = upload(c, ar, ac, amb, anb, a);
  tarn_matrix *B = upload(c, br, bc, bmb, bnb, b);
  tarn_matrix *C = given ? upload(c, m, n, tm, tn, c0) : NULL;
  tarn_region *r = begin_region(c, region);
  if (gemv)
    CALL(c, 0, tarn_matrix_gemv(A, ta, B, alpha, beta, &C));
  else
    CALL(c, 0, tarn_matrix_gemm(A, ta, B, tb, alpha, beta, &C));
  end_region(c, r);
  double *got = download(c, C);
  CHECK(c,
        tarn_matrix_tile_rows(C) == min_z(tm, m) &&
            tarn_matrix_tile_cols(C) == min_z(tn, n),
        "C in tiles of %zu x %zu", tarn_matrix_tile_rows(C),
        tarn_matrix_tile_cols(C));
  double beta_used = given ? beta : 0.0;
  if (given && !nans) memcpy(want, c0, m * n * sizeof *want);
  if (gemv)
    cblas_dgemv(CblasColMajor, cblas_trans(ta), (int)ar, (int)ac, alpha, a,
                (int)ar, b, 1, beta_used, want, 1);
  else
    cblas_dgemm(CblasColMajor, cblas_trans(ta), cblas_trans(tb), (int)m, (int)n,
                (int)k, alpha, a, (int)ar, b, (int)br, beta_used, want, (int)m);
  double scale = fabs(alpha) * test_fro(a, ar * ac) * test_fro(b, br * bc) +
                 (nans ? 0.0 : fabs(beta_used) * test_fro(c0, m * n));
  double err =
      fro_diff(got, want, m * n) / ((scale + DBL_MIN) * (double)(k + 2) * EPS);
  CHECK(c, err < 10, "||C - %s|| / bound = %g", gemv ? "dgemv" : "dgemm", err);
  free(a), free(b), free(c0), free(want), free(got);
  tarn_matrix_destroy(A), tarn_matrix_destroy(B), tarn_matrix_destroy(C);
}
static void op_gemm(struct tcase *c) { product(c, false); }
static void op_gemv(struct tcase *c) { product(c, true); }

/* C = A^T A against dgemm, within 10 ||A||^2 (m + 2) eps, and exactly
 * symmetric (the upper half is the lower's mirror). */
static void op_ata(struct tcase *c) {
  size_t m, n, mb, nb;
  draw_dim(c, 70, &m, &mb);
  draw_dim(c, 70, &n, &nb);
  bool region = chance(c, 0.3);
  describe(c, "syrk_ata m %zu n %zu, tiles %zu x %zu%s", m, n, mb, nb,
           region ? ", in a region" : "");
  footprint(c, m, n, mb, nb);
  footprint(c, n, n, nb, nb);
  start(c);
  double *a = random_buf(c, m * n), *want = alloc_buf(n * n);
  tarn_matrix *A = upload(c, m, n, mb, nb, a), *C = NULL;
  tarn_region *r = begin_region(c, region);
  CALL(c, 0, tarn_matrix_syrk_ata(A, &C));
  end_region(c, r);
  double *got = download(c, C);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, a, (int)m, a, (int)m, 0.0, want, (int)n);
  double fa = test_fro(a, m * n);
  double err = fro_diff(got, want, n * n) / (fa * fa * (double)(m + 2) * EPS);
  CHECK(c, err < 10, "||A^T A - dgemm|| / bound = %g", err);
  for (size_t j = 0; j < n; j++)
    for (size_t i = j + 1; i < n; i++)
      CHECK(c, memcmp(&got[i + j * n], &got[j + i * n], sizeof *got) == 0,
            "C(%zu, %zu) = %.17g but C(%zu, %zu) = %.17g", i, j, got[i + j * n],
            j, i, got[j + i * n]);
  free(a), free(want), free(got);
  tarn_matrix_destroy(A), tarn_matrix_destroy(C);
}

/* ---- Cholesky ----------------------------------------------------------- */

/* Square tiles for an n x n factor: t, and a tile past n (clamped to the
 * same) now and then for the columns. */
static size_t other_clamped(struct tcase *c, size_t n, size_t t) {
  return t >= n ? n + range(c, 0, 5) : t;
}

/* A = G G^T / n + I (G's elements in [-1, 1)): condition below 2. */
static double *spd_buf(struct tcase *c, size_t n) {
  double *g = random_buf(c, n * n), *a = alloc_buf(n * n);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
              1.0 / (double)n, g, (int)n, g, (int)n, 0.0, a, (int)n);
  for (size_t i = 0; i < n; i++) a[i + i * n] += 1.0;
  free(g);
  return a;
}

/* Cholesky of an SPD A whose strict upper triangle holds NaNs (not read,
 * left as it was): ||A - L L^T|| / (n ||A|| eps) < 30 and L within 30 n
 * eps of dpotrf's (A's condition is below 2); then the solve with nrhs
 * right-hand sides, its residual below 30. Variants: A(k, k) < 0 gives
 * TARN_EINVAL with dpotrf's info; a zero at L(k, k) makes the solve give
 * TARN_EINVAL, info k + 1 and B unchanged. */
static void op_cholesky(struct tcase *c) {
  size_t n, t, nrhs, bnb;
  draw_dim(c, 70, &n, &t);
  draw_dim(c, 40, &nrhs, &bnb);
  size_t nb = other_clamped(c, n, t), bmb = other_clamped(c, n, t);
  int variant = chance(c, 0.7) ? 0 : (int)range(c, 1, 2);
  size_t k = range(c, 0, n - 1);
  static const char *const variants[] = {"SPD", "A(k, k) < 0",
                                         "L(k, k) = 0 in the solve"};
  describe(c,
           "cholesky n %zu, tiles %zu x %zu, nrhs %zu in %zu x %zu, %s, k %zu",
           n, t, nb, nrhs, bmb, bnb, variants[variant], k);
  footprint(c, n, n, t, nb);
  footprint(c, n, nrhs, bmb, bnb);
  start(c);
  double *a = spd_buf(c, n), *h = copy_buf(a, n * n);
  double *b = random_buf(c, n * nrhs);
  if (variant == 1) a[k + k * n] = h[k + k * n] = -1.0 - unit(c);
  for (size_t j = 1; j < n; j++)
    for (size_t i = 0; i < j; i++) h[i + j * n] = NAN;
  tarn_matrix *L = upload(c, n, n, t, nb, h);
  int info = -1;
  int rc = tarn_matrix_cholesky(L, &info);
  double *ref = copy_buf(a, n * n);
  int ref_info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, ref, (int)n);
  if (variant == 1) {
    CHECK(c, rc == TARN_EINVAL && info == ref_info && info > 0,
          "cholesky of an indefinite A returned %s, info %d (dpotrf: %d)",
          sname(rc), info, ref_info);
  } else {
    CHECK(c, rc == 0 && info == 0, "cholesky returned %s, info %d", sname(rc),
          info);
    double *f = download(c, L), *l = alloc_buf(n * n), *r = copy_buf(a, n * n);
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < n; i++) {
        CHECK(c, i >= j || memcmp(&f[i + j * n], &h[i + j * n], sizeof *f) == 0,
              "the strict upper triangle changed at (%zu, %zu)", i, j);
        if (i >= j) l[i + j * n] = f[i + j * n];
        if (i < j) ref[i + j * n] = 0.0;
      }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
                -1.0, l, (int)n, l, (int)n, 1.0, r, (int)n);
    double res = test_fro(r, n * n) / ((double)n * test_fro(a, n * n) * EPS);
    CHECK(c, res < 30, "||A - L L^T|| / (n ||A|| eps) = %g", res);
    double dif =
        fro_diff(l, ref, n * n) / ((double)n * test_fro(ref, n * n) * EPS);
    CHECK(c, dif < 30, "||L - dpotrf's|| / (n ||L|| eps) = %g", dif);
    tarn_matrix *B = upload(c, n, nrhs, bmb, bnb, b);
    if (variant == 2) { /* a factor with a zero on its diagonal */
      f[k + k * n] = 0.0;
      tarn_matrix_destroy(L);
      L = upload(c, n, n, t, nb, f);
      CALL(c, TARN_EINVAL, tarn_matrix_cholesky_solve(L, B, &info));
      CHECK(c, info == (int)k + 1, "info %d", info);
      check_unchanged(c, B, b, "B");
    } else {
      CALL(c, 0, tarn_matrix_cholesky_solve(L, B, &info));
      check_unchanged(c, L, f, "the factor");
      double *x = download(c, B);
      res = solve_residual(TARN_NO_TRANS, n, nrhs, a, x, b);
      CHECK(c, res < 30, "||A X - B|| / (n ||A|| ||X|| eps) = %g", res);
      free(x);
    }
    tarn_matrix_destroy(B);
    free(f), free(l), free(r);
  }
  free(a), free(h), free(b), free(ref);
  tarn_matrix_destroy(L);
}

/* ---- LU ----------------------------------------------------------------- */

/* LU of a random m x n A, square or (in half the cases) not, in square
 * tiles or one tile row or column: the residual below 30, the pivots
 * dgetrf's, and for a square A the factors within 30 n eps / rcond of
 * dgetrf's (their perturbation is bounded by A's condition). In 8 cases
 * of 100 a tall A whose panels share their base columns with idle
 * workers (tarn/linalg.h): 16384 to 17000 rows, up to 40 columns, square
 * tiles of 16 to 64, or (half of them) 16384 to 34000 rows in one, two or
 * three tiles, whose steps go by units of rows. Variant:
 * a zero column p gives dgetrf's info (p + 1 when p < min(m, n), and
 * TARN_EINVAL) and factors still complete. */
static void op_lu(struct tcase *c) {
  size_t n, t;
  draw_dim(c, 70, &n, &t);
  size_t nb = other_clamped(c, n, t);
  size_t m = chance(c, 0.5) ? range(c, 1, 90) : n;
  if (chance(c, 0.08)) {
    n = range(c, 1, 40);
    m = range(c, 16384, 17000);
    t = nb = range(c, 16, 64);
    if (chance(c, 0.5)) { /* 1 to 3 tiles: their steps go by row units */
      m = range(c, 16384, 34000);
      size_t tiles = range(c, 1, 3);
      t = (m - 1) / tiles + 1;
      nb = n; /* one tile column */
    }
  }
  bool singular = chance(c, 0.25);
  size_t p = range(c, 0, n - 1), k = min_z(m, n);
  describe(c, "lu %zu x %zu, tiles %zu x %zu, %s %zu", m, n, t, nb,
           singular ? "zero column" : "regular, p", p);
  footprint(c, m, n, t, nb);
  start(c);
  double *a = random_buf(c, m * n);
  if (singular)
    for (size_t i = 0; i < m; i++) a[i + p * m] = 0.0;
  tarn_matrix *A = upload(c, m, n, t, nb, a);
  size_t *piv = calloc(k, sizeof *piv);
  lapack_int *ipiv = calloc(k, sizeof *ipiv);
  assert_true(piv != NULL && ipiv != NULL);
  int info = -1;
  int rc = tarn_matrix_lu(A, piv, &info);
  double *f = download(c, A), *ref = copy_buf(a, m * n);
  int ref_info =
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)m, (int)n, ref, (int)m, ipiv);
  CHECK(c, ref_info == (singular && p < k ? (int)p + 1 : 0), "dgetrf's info %d",
        ref_info);
  CHECK(c, rc == (ref_info > 0 ? TARN_EINVAL : 0) && info == ref_info,
        "lu returned %s, info %d (dgetrf: %d)", sname(rc), info, ref_info);
  for (size_t i = 0; i < k; i++)
    CHECK(c, piv[i] >= i && piv[i] < m, "piv[%zu] = %zu", i, piv[i]);
  double res = test_lu_residual(a, f, piv, m, n);
  CHECK(c, res < 30, "||P A - L U|| / (max(m, n) ||A|| eps) = %g", res);
  if (!singular) {
    for (size_t i = 0; i < k; i++)
      CHECK(c, piv[i] == (size_t)ipiv[i] - 1, "piv[%zu] = %zu, dgetrf's %d", i,
            piv[i], (int)ipiv[i] - 1);
  }
  if (!singular && m == n) {
    double rcond = 0, anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', (int)n,
                                             (int)n, a, (int)n);
    LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', (int)n, ref, (int)n, anorm, &rcond);
    double dif = fro_diff(f, ref, n * n) * rcond /
                 ((double)n * test_fro(ref, n * n) * EPS);
    CHECK(c, dif < 30,
          "||LU - dgetrf's|| rcond / (n ||LU|| eps) = %g (rcond %g)", dif,
          rcond);
  }
  free(a), free(f), free(ref), free(piv), free(ipiv);
  tarn_matrix_destroy(A);
}

/* op(A) X = B by tarn_matrix_lu and tarn_matrix_lu_solve (either
 * transpose; the factors and pivots only read) or tarn_matrix_solve: the
 * residual below 30. Variant: a zero column p of A gives TARN_EINVAL,
 * info p + 1 and B unchanged. */
static void op_solve(struct tcase *c) {
  size_t n, t, nrhs, bnb;
  draw_dim(c, 70, &n, &t);
  draw_dim(c, 40, &nrhs, &bnb);
  size_t nb = other_clamped(c, n, t), bmb = other_clamped(c, n, t);
  int how = (int)range(c, 0, 2); /* lu_solve N, lu_solve T, solve */
  bool singular = chance(c, 0.25);
  size_t p = range(c, 0, n - 1);
  tarn_trans ta = how == 1 ? TARN_TRANS : TARN_NO_TRANS;
  static const char *const hows[] = {"lu_solve N", "lu_solve T", "solve"};
  describe(c, "%s n %zu, tiles %zu x %zu, nrhs %zu in %zu x %zu, %s %zu",
           hows[how], n, t, nb, nrhs, bmb, bnb,
           singular ? "zero column" : "regular, p", p);
  footprint(c, n, n, t, nb);
  footprint(c, n, nrhs, bmb, bnb);
  start(c);
  double *a = random_buf(c, n * n), *b = random_buf(c, n * nrhs);
  if (singular)
    for (size_t i = 0; i < n; i++) a[i + p * n] = 0.0;
  tarn_matrix *A = upload(c, n, n, t, nb, a);
  tarn_matrix *B = upload(c, n, nrhs, bmb, bnb, b);
  int want = singular ? TARN_EINVAL : 0, info = -1;
  if (how == 2) {
    CALL(c, want, tarn_matrix_solve(A, B, &info));
  } else {
    size_t *piv = calloc(2 * n, sizeof *piv), *piv0 = piv + n;
    assert_non_null(piv);
    CALL(c, want, tarn_matrix_lu(A, piv, NULL));
    memcpy(piv0, piv, n * sizeof *piv);
    double *f = download(c, A);
    CALL(c, want, tarn_matrix_lu_solve(A, piv, ta, B, &info));
    check_unchanged(c, A, f, "the factors");
    CHECK(c, memcmp(piv, piv0, n * sizeof *piv) == 0, "the pivots changed");
    free(f), free(piv);
  }
  CHECK(c, info == (singular ? (int)p + 1 : 0), "info %d", info);
  if (singular) {
    check_unchanged(c, B, b, "B");
  } else {
    double *x = download(c, B);
    double res = solve_residual(ta, n, nrhs, a, x, b);
    CHECK(c, res < 30, "||op(A) X - B|| / (n ||A|| ||X|| eps) = %g", res);
    free(x);
  }
  free(a), free(b);
  tarn_matrix_destroy(A), tarn_matrix_destroy(B);
}

/* ---- QR ----------------------------------------------------------------- */

/* An m x n A for QR: n up to nmax, m from n (three times in ten) to mmax,
 * in square tiles (the columns' maybe past n) or, now and then, one tile
 * column of mb >= n rows; an inner block size ib (0: the default). */
static void draw_qr(struct tcase *c, size_t nmax, size_t mmax, size_t *m,
                    size_t *n, size_t *mb, size_t *nb, size_t *ib) {
  size_t t;
  draw_dim(c, nmax, n, &t);
  mmax *= random_scale();
  *m = *n + (chance(c, 0.3) ? 0 : range(c, 1, mmax - *n));
  *mb = t;
  *nb = other_clamped(c, *n, t);
  if (t < *n && chance(c, 0.2)) *mb = range(c, *n, *m), *nb = *n;
  *ib = range(c, 0, min_z(*nb, *n));
}

/* Now and then (op_qr) a tall A whose tile columns QR reduces by trees
 * on 2 workers or more (tarn/linalg.h): 2048 to 2600 rows, up to 40
 * columns, square tiles of 16 to 64 (one tile column when the tile is
 * wider than A; otherwise up to three, the first flat when they outnumber
 * the workers); or (a quarter of them) 16384 to 34000 rows in one tile
 * column whose first tile, of 16384 rows or more, is factored by rows. */
static void draw_tall_qr(struct tcase *c, size_t *m, size_t *n, size_t *mb,
                         size_t *nb, size_t *ib) {
  *n = range(c, 1, 40);
  *m = range(c, 2048, 2600);
  *mb = *nb = range(c, 16, 64);
  if (chance(c, 0.25)) { /* a tall head factored by rows, one tile or two */
    *m = range(c, 16384, 34000);
    *mb = chance(c, 0.5) ? *m : range(c, 16384, *m);
    *nb = *n;
  }
  *ib = range(c, 0, min_z(*nb, *n));
}

/* Q of the factors A, T of an m x n matrix (m >= n, A's tile height mb)
 * from the right on a random C of cr rows (cr x m, A's row tiling as its
 * column tiling): the first n columns of C Q are C Q_1 (q: the thin Q,
 * checked before), and (C Q) Q^T = C, both within 30 m ||C|| eps. */
static void check_right_q(struct tcase *c, tarn_matrix *A, tarn_matrix *T,
                          const double *q, size_t m, size_t n, size_t mb,
                          size_t cr) {
  double *c0 = random_buf(c, cr * m), *want = alloc_buf(cr * n);
  tarn_matrix *C = upload(c, cr, m, cr, mb, c0);
  CALL(c, 0, tarn_matrix_qr_multiply(A, T, TARN_RIGHT, TARN_NO_TRANS, C));
  double *got = download(c, C), fc = test_fro(c0, cr * m);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)cr, (int)n,
              (int)m, 1.0, c0, (int)cr, q, (int)m, 0.0, want, (int)cr);
  double res = fro_diff(got, want, cr * n) / ((double)m * fc * EPS + DBL_MIN);
  CHECK(c, res < 30, "||(C Q)_1 - C Q_1|| / (m ||C|| eps) = %g", res);
  free(got);
  CALL(c, 0, tarn_matrix_qr_multiply(A, T, TARN_RIGHT, TARN_TRANS, C));
  got = download(c, C);
  res = fro_diff(got, c0, cr * m) / ((double)m * fc * EPS + DBL_MIN);
  CHECK(c, res < 30, "||C Q Q^T - C|| / (m ||C|| eps) = %g", res);
  free(got), free(c0), free(want);
  tarn_matrix_destroy(C);
}

/* QR of an m x n A (m >= n; square tiles, or one tile column; tall, with
 * trees, in 15 cases of 100): ||A - Q
 * R|| / (m ||A|| eps) and ||Q^T Q - I|| / (m eps) below 30 with the thin Q
 * of tarn_matrix_qr_q; Q from the right on a C of 1 to 8 rows
 * (check_right_q). Then least squares (ta N: ||A^T r|| / (||A|| (||A||
 * ||X|| + ||r||) m eps) < 30, r = B - A X) or the minimum-norm solution of
 * A^T X = B (ta T: the residual below 30, and X in the range of A: ||X -
 * Q Q^T X|| / (||X|| m eps) < 30). Variant: a zero column p (rank
 * deficient) makes the solve give TARN_EINVAL, info p + 1, no X, and B
 * unchanged. Last, (A^T A)^-1 from R (below). */
static void op_qr(struct tcase *c) {
  size_t m, n, mb, nb, ib, nrhs, bnb;
  draw_qr(c, 50, 70, &m, &n, &mb, &nb, &ib);
  if (chance(c, 0.15)) draw_tall_qr(c, &m, &n, &mb, &nb, &ib);
  draw_dim(c, 20, &nrhs, &bnb);
  tarn_trans ta = (tarn_trans)range(c, 0, 1);
  bool deficient = chance(c, 0.2);
  size_t p = range(c, 0, n - 1), cr = range(c, 1, 8);
  describe(c,
           "qr m %zu n %zu, tiles %zu x %zu, ib %zu, solve ta %d nrhs %zu "
           "tile cols %zu, %s %zu, C Q on %zu rows",
           m, n, mb, nb, ib, ta, nrhs, bnb,
           deficient ? "zero column" : "full rank, p", p, cr);
  /* ib 0: 16 for m >= 16 n, else 32 (tarn/linalg.h) */
  size_t nbe = min_z(nb, n),
         ibe = ib != 0 ? ib : min_z(m / 16 >= n ? 16 : 32, nbe);
  size_t brows = ta ? n : m, bmb = ta ? nbe : mb, xrows = ta ? m : n;
  footprint(c, m, n, mb, nb);
  /* T: a tree's merges add up to workers - 1 tile rows */
  footprint(c, (cdiv(m, min_z(mb, m)) + c->workers - 1) * ibe, n, ibe, nbe);
  footprint(c, brows, nrhs, bmb, bnb);
  footprint(c, xrows, nrhs, ta ? mb : nbe, bnb);
  footprint(c, n, n, nbe, nbe); /* (A^T A)^-1 */
  footprint(c, cr, m, cr, mb);  /* C of C Q */
  start(c);
  double *a = random_buf(c, m * n), *b = random_buf(c, brows * nrhs);
  if (deficient)
    for (size_t i = 0; i < m; i++) a[i + p * m] = 0.0;
  tarn_matrix *A = upload(c, m, n, mb, nb, a), *T = NULL, *Q = NULL;
  tarn_matrix *B = upload(c, brows, nrhs, bmb, bnb, b), *X = NULL;
  CALL(c, 0, tarn_matrix_qr(A, ib, &T));
  CALL(c, 0, tarn_matrix_qr_q(A, T, &Q));
  double *f = download(c, A), *q = download(c, Q);
  double *r = alloc_buf(n * n), *d = copy_buf(a, m * n), *g = alloc_buf(n * n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i <= j; i++) r[i + j * n] = f[i + j * m];
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)n,
              -1.0, q, (int)m, r, (int)n, 1.0, d, (int)m);
  double res =
      test_fro(d, m * n) / ((double)m * test_fro(a, m * n) * EPS + DBL_MIN);
  CHECK(c, res < 30, "||A - Q R|| / (m ||A|| eps) = %g", res);
  for (size_t i = 0; i < n; i++) g[i + i * n] = -1.0;
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
              1.0, q, (int)m, q, (int)m, 1.0, g, (int)n);
  res = test_fro(g, n * n) / ((double)m * EPS);
  CHECK(c, res < 30, "||Q^T Q - I|| / (m eps) = %g", res);
  check_right_q(c, A, T, q, m, n, mb, cr);
  int info = -1;
  if (deficient) {
    CALL(c, TARN_EINVAL, tarn_matrix_qr_solve(A, T, ta, B, &X, &info));
    CHECK(c, info == (int)p + 1 && X == NULL, "info %d, X %p", info, (void *)X);
    check_unchanged(c, B, b, "B");
  } else {
    CALL(c, 0, tarn_matrix_qr_solve(A, T, ta, B, &X, &info));
    check_unchanged(c, B, b, "B");
    double *x = download(c, X);
    double fa = test_fro(a, m * n), fx = test_fro(x, xrows * nrhs);
    if (ta == TARN_NO_TRANS) { /* r = B - A X, then A^T r */
      double *rr = copy_buf(b, m * nrhs), *atr = alloc_buf(n * nrhs);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)nrhs,
                  (int)n, -1.0, a, (int)m, x, (int)n, 1.0, rr, (int)m);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nrhs,
                  (int)m, 1.0, a, (int)m, rr, (int)m, 0.0, atr, (int)n);
      res = test_fro(atr, n * nrhs) /
            (fa * (fa * fx + test_fro(rr, m * nrhs)) * (double)m * EPS);
      CHECK(c, res < 30, "||A^T r|| / (||A|| (||A|| ||X|| + ||r||) m eps) = %g",
            res);
      free(rr), free(atr);
    } else { /* A^T X = B, and X = Q Q^T X (Q checked above) */
      double *rr = copy_buf(b, n * nrhs), *w = alloc_buf(n * nrhs),
             *z = copy_buf(x, m * nrhs);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nrhs,
                  (int)m, 1.0, a, (int)m, x, (int)m, -1.0, rr, (int)n);
      res = test_fro(rr, n * nrhs) / (fa * fx * (double)m * EPS);
      CHECK(c, res < 30, "||A^T X - B|| / (||A|| ||X|| m eps) = %g", res);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nrhs,
                  (int)m, 1.0, q, (int)m, x, (int)m, 0.0, w, (int)n);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)nrhs,
                  (int)n, -1.0, q, (int)m, w, (int)n, 1.0, z, (int)m);
      res = test_fro(z, m * nrhs) / (fx * (double)m * EPS);
      CHECK(c, res < 30, "||X - Q Q^T X|| / (||X|| m eps) = %g", res);
      free(rr), free(w), free(z);
    }
    free(x);
  }
  /* (A^T A)^-1 from R (A only read): symmetric bit for bit, ||A^T A V -
   * I|| / (m ||A^T A|| ||V|| eps) < 30 (the QR's backward error grows
   * with m); rank deficient: TARN_EINVAL, info p + 1 and no matrix. */
  tarn_matrix *V = NULL;
  info = -1;
  if (deficient) {
    CALL(c, TARN_EINVAL, tarn_matrix_qr_ata_inverse(A, &V, &info));
    CHECK(c, info == (int)p + 1 && V == NULL, "(A^T A)^-1: info %d, V %p", info,
          (void *)V);
  } else {
    CALL(c, 0, tarn_matrix_qr_ata_inverse(A, &V, &info));
    double *v = download(c, V), *ata = alloc_buf(n * n);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)m,
                1.0, a, (int)m, a, (int)m, 0.0, ata, (int)n);
    for (size_t j = 0; j < n; j++)
      for (size_t i = j + 1; i < n; i++)
        CHECK(c, memcmp(&v[i + j * n], &v[j + i * n], sizeof *v) == 0,
              "V(%zu, %zu) is not V(%zu, %zu)", i, j, j, i);
    res = test_inverse_residual(ata, v, n) * (double)n / (double)m;
    CHECK(c, info == 0 && res < 30,
          "info %d, ||A^T A V - I|| / (m ||A^T A|| ||V|| eps) = %g", info, res);
    free(v), free(ata);
  }
  check_unchanged(c, A, f, "A's factors");
  free(a), free(b), free(f), free(q), free(r), free(d), free(g);
  tarn_matrix_destroy(A), tarn_matrix_destroy(T), tarn_matrix_destroy(Q);
  tarn_matrix_destroy(B), tarn_matrix_destroy(X), tarn_matrix_destroy(V);
}

/* ---- triangular solve --------------------------------------------------- */

/* Whether a triangular operation on the leading n x n block of a `t`
 * reads (and an inverse writes) its element (i, j): T's triangle, and its
 * diagonal with TARN_NON_UNIT. */
static bool in_triangle(size_t i, size_t j, size_t n, tarn_uplo uplo,
                        tarn_diag diag) {
  if (i >= n) return false;
  return i == j ? diag == TARN_NON_UNIT : (uplo == TARN_LOWER) == (i > j);
}

/* An m x n t (m >= n) whose leading n x n block holds a triangle T with a
 * diagonal of 1.5 to 2.5 in magnitude (or a unit one, not stored) and
 * off-diagonal elements below 1 / n in magnitude (a condition below 5),
 * NaN in every other element; *clean gets T alone, n x n, with its unit
 * diagonal written and zeros in the other triangle. */
static double *triangle_buf(struct tcase *c, size_t m, size_t n, tarn_uplo uplo,
                            tarn_diag diag, double **clean) {
  double *tt = alloc_buf(m * n), *t = alloc_buf(n * n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      bool on = i == j, read = in_triangle(i, j, n, uplo, diag);
      double v = on ? (1.5 + unit(c)) * (chance(c, 0.5) ? -1 : 1)
                    : real(c) / (double)n;
      tt[i + j * m] = read ? v : NAN;
      if (i < n) t[i + j * n] = read ? v : on ? 1.0 : 0.0;
    }
  *clean = t;
  return tt;
}

/* op(T) X = B, T a triangle of the leading n x n block of an m x n t
 * (square tiles, or one tile column whose first tile holds the block),
 * with NaNs in every element the solve must not read: within 30 n eps of
 * dtrsm's X (T has a diagonal of 1.5 to 2.5 in magnitude, or a unit one,
 * and off-diagonal elements below 1 / n: a condition below 5). Variant:
 * zeros at T(k, k) and later give TARN_EINVAL, info k + 1, B unchanged. */
static void op_triangular(struct tcase *c) {
  size_t n, t, nrhs, bnb;
  draw_dim(c, 60, &n, &t);
  size_t m = n + (chance(c, 0.6) ? 0 : range(c, 1, 10));
  size_t mb = t, nb = other_clamped(c, n, t);
  if (t >= n) mb = range(c, n, m + 4); /* one tile column */
  draw_dim(c, 40, &nrhs, &bnb);
  tarn_uplo uplo = (tarn_uplo)range(c, 0, 1);
  tarn_trans trans = (tarn_trans)range(c, 0, 1);
  tarn_diag diag = (tarn_diag)range(c, 0, 1);
  bool singular = diag == TARN_NON_UNIT && chance(c, 0.25);
  size_t k = range(c, 0, n - 1);
  describe(c,
           "triangular_solve m %zu n %zu, tiles %zu x %zu, %s %s %s, nrhs "
           "%zu tile cols %zu, %s %zu",
           m, n, mb, nb, uplo ? "upper" : "lower", trans ? "T" : "N",
           diag ? "unit" : "non-unit", nrhs, bnb,
           singular ? "zero diagonal from" : "regular, k", k);
  footprint(c, m, n, mb, nb);
  footprint(c, n, nrhs, min_z(mb, n), bnb);
  start(c);
  double *clean, *tt = triangle_buf(c, m, n, uplo, diag, &clean);
  if (singular) {
    tt[k + k * m] = 0.0;
    if (k + 1 < n) tt[n - 1 + (n - 1) * m] = 0.0;
  }
  double *b = random_buf(c, n * nrhs), *want = copy_buf(b, n * nrhs);
  tarn_matrix *T = upload(c, m, n, mb, nb, tt);
  tarn_matrix *B = upload(c, n, nrhs, min_z(mb, n), bnb, b);
  int info = -1;
  if (singular) {
    CALL(c, TARN_EINVAL,
         tarn_matrix_triangular_solve(T, uplo, trans, diag, B, &info));
    CHECK(c, info == (int)k + 1, "info %d", info);
    check_unchanged(c, B, b, "B");
  } else {
    CALL(c, 0, tarn_matrix_triangular_solve(T, uplo, trans, diag, B, &info));
    CHECK(c, info == 0, "info %d", info);
    double *x = download(c, B);
    cblas_dtrsm(CblasColMajor, CblasLeft, uplo ? CblasUpper : CblasLower,
                cblas_trans(trans), diag ? CblasUnit : CblasNonUnit, (int)n,
                (int)nrhs, 1.0, clean, (int)n, want, (int)n);
    double dif = fro_diff(x, want, n * nrhs) /
                 ((double)n * test_fro(want, n * nrhs) * EPS);
    CHECK(c, dif < 30, "||X - dtrsm's|| / (n ||X|| eps) = %g", dif);
    free(x);
  }
  free(tt), free(clean), free(b), free(want);
  tarn_matrix_destroy(T), tarn_matrix_destroy(B);
}

/* ---- inverses ----------------------------------------------------------- */

/* A triangle's matrix for n and its tile t: m = n, or now and then up to
 * 10 rows more below the triangle's block; one tile column (mb from n to
 * m + 4) when t >= n; either triangle, unit diagonal or not. */
static void draw_triangle(struct tcase *c, size_t n, size_t t, size_t *m,
                          size_t *mb, tarn_uplo *uplo, tarn_diag *diag) {
  if (chance(c, 0.4)) *m += range(c, 1, 10);
  if (t >= n) *mb = range(c, n, *m + 4); /* one tile column */
  *uplo = (tarn_uplo)range(c, 0, 1);
  *diag = (tarn_diag)range(c, 0, 1);
}

/* The inverses in place, the residual below 30: of a triangle of an m x
 * n t as op_triangular draws it (square tiles, or one tile column),
 * every element it must not read a NaN left as it was, bit for bit; from
 * dpotrf's L (its strict upper triangle NaN), X symmetric bit for bit;
 * from dgetrf's factors and pivots; and of A itself (tarn_matrix_inverse).
 * Variant: a zero on the diagonal the inverse divides by (T's, L's, U's at
 * k, or a zero column k of A) gives TARN_EINVAL and info k + 1, the matrix
 * unchanged bit for bit (tarn_matrix_inverse: it holds A's factors). */
static void op_inverse(struct tcase *c) {
  size_t n, t;
  draw_dim(c, 60, &n, &t);
  int kind = (int)range(c, 0, 3);
  size_t m = n, mb = t, nb = other_clamped(c, n, t);
  tarn_uplo uplo = TARN_LOWER;
  tarn_diag diag = TARN_NON_UNIT;
  if (kind == 0) draw_triangle(c, n, t, &m, &mb, &uplo, &diag);
  bool singular = diag == TARN_NON_UNIT && chance(c, 0.25);
  size_t k = range(c, 0, n - 1);
  static const char *const kinds[] = {"triangular_inverse", "cholesky_inverse",
                                      "lu_inverse", "inverse"};
  describe(c, "%s m %zu n %zu, tiles %zu x %zu, %s %s, %s %zu", kinds[kind], m,
           n, mb, nb, uplo ? "upper" : "lower", diag ? "unit" : "non-unit",
           singular ? "zero diagonal at" : "regular, k", k);
  footprint(c, m, n, mb, nb);
  start(c);
  double *a, *h; /* the n x n matrix inverted, and what is uploaded */
  size_t *piv = calloc(n, sizeof *piv);
  lapack_int *ipiv = calloc(n, sizeof *ipiv);
  assert_true(piv != NULL && ipiv != NULL);
  if (kind == 0) {
    h = triangle_buf(c, m, n, uplo, diag, &a);
  } else if (kind == 1) {
    a = spd_buf(c, n);
    h = copy_buf(a, n * n);
    assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, h, (int)n),
                     0);
    for (size_t j = 1; j < n; j++)
      for (size_t i = 0; i < j; i++) h[i + j * n] = NAN;
  } else {
    a = random_buf(c, n * n);
    if (kind == 3 && singular)
      for (size_t i = 0; i < n; i++) a[i + k * n] = 0.0;
    h = copy_buf(a, n * n);
    if (kind == 2) {
      assert_int_equal(
          LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, h, (int)n, ipiv), 0);
      for (size_t i = 0; i < n; i++) piv[i] = (size_t)ipiv[i] - 1;
    }
  }
  if (singular && kind != 3) h[k + k * m] = 0.0;
  tarn_matrix *M = upload(c, m, n, mb, nb, h);
  int info = -1, rc;
  if (kind == 0)
    rc = tarn_matrix_triangular_inverse(M, uplo, diag, &info);
  else if (kind == 1)
    rc = tarn_matrix_cholesky_inverse(M, &info);
  else if (kind == 2)
    rc = tarn_matrix_lu_inverse(M, piv, &info);
  else
    rc = tarn_matrix_inverse(M, &info);
  if (singular) {
    CHECK(c, rc == TARN_EINVAL && info == (int)k + 1,
          "%s of a singular matrix returned %s, info %d", kinds[kind],
          sname(rc), info);
    if (kind != 3) check_unchanged(c, M, h, "a singular matrix");
  } else {
    CHECK(c, rc == 0 && info == 0, "%s returned %s, info %d", kinds[kind],
          sname(rc), info);
    double *got = download(c, M), *x = alloc_buf(n * n);
    for (size_t j = 0; j < n; j++)
      for (size_t i = 0; i < m; i++) {
        bool written = kind != 0 || in_triangle(i, j, n, uplo, diag);
        CHECK(
            c,
            written || memcmp(&got[i + j * m], &h[i + j * m], sizeof *got) == 0,
            "(%zu, %zu) outside the triangle changed", i, j);
        if (i < n) x[i + j * n] = written ? got[i + j * m] : i == j ? 1.0 : 0.0;
        CHECK(c,
              kind != 1 || i >= j ||
                  memcmp(&got[i + j * n], &got[j + i * n], sizeof *got) == 0,
              "X(%zu, %zu) is not X(%zu, %zu)", i, j, j, i);
      }
    double res = test_inverse_residual(a, x, n);
    CHECK(c, res < 30, "||A X - I|| / (n ||A|| ||X|| eps) = %g", res);
    free(got), free(x);
  }
  free(a), free(h), free(piv), free(ipiv);
  tarn_matrix_destroy(M);
}

/* ---- Q applied alone ---------------------------------------------------- */

/* op(Q) C or C op(Q) (tarn_matrix_qr_multiply) with the factors of
 * tarn_matrix_qr of an m x n A drawn as op_qr does, or (three cases in
 * ten) of its transpose's shape, wide. The whole m x m Q, made
 * by applying it to the identity from the left, is first checked as A's:
 * ||Q^T Q - I|| / (m eps) and ||A - Q_1 R|| / (max(m, n) ||A|| eps) below
 * 30 (Q_1 its first min(m, n) columns, R upper triangular or trapezoidal);
 * then the product for a random C (either side,
 * either transpose) within 30 m ||C|| eps of dgemm's with that Q, and the
 * factors unchanged bit for bit (only read). */
static void op_qr_multiply(struct tcase *c) {
  size_t m, n, mb, nb, ib, other, ot;
  draw_qr(c, 40, 60, &m, &n, &mb, &nb, &ib);
  draw_dim(c, 30, &other, &ot);
  tarn_side side = (tarn_side)range(c, 0, 1);
  tarn_trans trans = (tarn_trans)range(c, 0, 1);
  if (chance(c, 0.3)) { /* wide: the tall shape's transpose */
    size_t s = m;
    m = n, n = s, s = mb, mb = nb, nb = s;
  }
  size_t k = min_z(m, n);
  describe(c,
           "qr_multiply m %zu n %zu, tiles %zu x %zu, ib %zu, %s %s, C's "
           "other side %zu in tiles of %zu",
           m, n, mb, nb, ib, side ? "right" : "left", trans ? "T" : "N", other,
           ot);
  /* ib 0: 16 for m >= 16 n, else 32 (tarn/linalg.h) */
  size_t nbe = min_z(nb, n),
         ibe = ib != 0 ? ib : min_z(m / 16 >= n ? 16 : 32, nbe);
  size_t cr = side ? other : m, cc = side ? m : other;
  size_t cmb = side ? ot : mb, cnb = side ? mb : ot;
  footprint(c, m, n, mb, nb);
  footprint(c, cdiv(m, min_z(mb, m)) * ibe, n, ibe, nbe); /* T */
  footprint(c, m, m, mb, mb);                             /* Q */
  footprint(c, cr, cc, cmb, cnb);
  start(c);
  double *a = random_buf(c, m * n), *c0 = random_buf(c, cr * cc);
  double *id = alloc_buf(m * m);
  for (size_t i = 0; i < m; i++) id[i + i * m] = 1.0;
  tarn_matrix *A = upload(c, m, n, mb, nb, a), *T = NULL;
  tarn_matrix *Q = upload(c, m, m, mb, mb, id),
              *C = upload(c, cr, cc, cmb, cnb, c0);
  CALL(c, 0, tarn_matrix_qr(A, ib, &T));
  double *f = download(c, A), *tf = download(c, T);
  CALL(c, 0, tarn_matrix_qr_multiply(A, T, TARN_LEFT, TARN_NO_TRANS, Q));
  CALL(c, 0, tarn_matrix_qr_multiply(A, T, side, trans, C));
  double *q = download(c, Q), *got = download(c, C);
  double *g = copy_buf(id, m * m), *d = copy_buf(a, m * n),
         *r = alloc_buf(k * n);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)m,
              1.0, q, (int)m, q, (int)m, -1.0, g, (int)m);
  double res = test_fro(g, m * m) / ((double)m * EPS);
  CHECK(c, res < 30, "||Q^T Q - I|| / (m eps) = %g", res);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i <= j && i < k; i++) r[i + j * k] = f[i + j * m];
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
              -1.0, q, (int)m, r, (int)k, 1.0, d, (int)m);
  res = test_fro(d, m * n) /
        ((double)max_z(m, n) * test_fro(a, m * n) * EPS + DBL_MIN);
  CHECK(c, res < 30, "||A - Q_1 R|| / (max(m, n) ||A|| eps) = %g", res);
  double *want = alloc_buf(cr * cc);
  if (side == TARN_LEFT)
    cblas_dgemm(CblasColMajor, cblas_trans(trans), CblasNoTrans, (int)m,
                (int)cc, (int)m, 1.0, q, (int)m, c0, (int)m, 0.0, want, (int)m);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, cblas_trans(trans), (int)cr,
                (int)m, (int)m, 1.0, c0, (int)cr, q, (int)m, 0.0, want,
                (int)cr);
  double dif = fro_diff(got, want, cr * cc) /
               ((double)m * test_fro(c0, cr * cc) * EPS + DBL_MIN);
  CHECK(c, dif < 30, "||op(Q) C - dgemm's|| / (m ||C|| eps) = %g", dif);
  check_unchanged(c, A, f, "A's factors");
  check_unchanged(c, T, tf, "the T factors");
  free(a), free(c0), free(id), free(f), free(tf), free(q), free(got);
  free(g), free(d), free(r), free(want);
  tarn_matrix_destroy(A), tarn_matrix_destroy(T), tarn_matrix_destroy(Q);
  tarn_matrix_destroy(C);
}

/* ---- row interchanges --------------------------------------------------- */

/* B = P B or P^T B (tarn_matrix_permute_rows) for npiv random
 * interchanges (row i with one of i .. m - 1, or with itself now and
 * then; npiv m, or from 0 to m in 3 cases of 10), in any tiling: bit for
 * bit what dlaswp gives, forward or backward. Variant: a pivot outside
 * [i, m) among the npiv, or npiv m + 1, gives TARN_EINVAL with B
 * unchanged. */
static void op_permute(struct tcase *c) {
  size_t m, n, mb, nb;
  draw_dim(c, 70, &m, &mb);
  draw_dim(c, 40, &n, &nb);
  tarn_trans trans = (tarn_trans)range(c, 0, 1);
  size_t npiv = chance(c, 0.3) ? range(c, 0, m) : m;
  bool bad = chance(c, 0.15);
  size_t k = range(c, 0, m - 1);
  size_t *piv = calloc(m + 1, sizeof *piv);
  lapack_int *ipiv = calloc(m, sizeof *ipiv);
  assert_true(piv != NULL && ipiv != NULL);
  for (size_t i = 0; i < m; i++) {
    piv[i] = chance(c, 0.2) ? i : range(c, i, m - 1);
    ipiv[i] = (lapack_int)piv[i] + 1;
  }
  if (bad && k < npiv)
    piv[k] = k > 0 && chance(c, 0.5) ? range(c, 0, k - 1) : m;
  else if (bad)
    npiv = m + 1; /* one more interchange than rows */
  describe(c, "permute_rows m %zu n %zu, tiles %zu x %zu, %s, npiv %zu, %s %zu",
           m, n, mb, nb, trans ? "P^T" : "P", npiv,
           bad ? "bad pivot at" : "good, k", k);
  footprint(c, m, n, mb, nb);
  start(c);
  double *b = random_buf(c, m * n), *want = copy_buf(b, m * n);
  tarn_matrix *B = upload(c, m, n, mb, nb, b);
  if (bad) {
    CALL(c, TARN_EINVAL, tarn_matrix_permute_rows(B, piv, npiv, trans));
    check_unchanged(c, B, b, "B");
  } else {
    CALL(c, 0, tarn_matrix_permute_rows(B, piv, npiv, trans));
    if (npiv > 0)
      assert_int_equal(LAPACKE_dlaswp(LAPACK_COL_MAJOR, (int)n, want, (int)m, 1,
                                      (int)npiv, ipiv, trans ? -1 : 1),
                       0);
    double *got = download(c, B);
    CHECK(c, memcmp(got, want, m * n * sizeof *got) == 0,
          "%s B is not what dlaswp gives", trans ? "P^T" : "P");
    free(got);
  }
  free(piv), free(ipiv), free(b), free(want);
  tarn_matrix_destroy(B);
}

/* ---- determinants and condition estimates ---------------------------------
 */

/* rcond from factors against LAPACK's estimate on the same factors
 * (dgecon, dpocon, dtrcon; the same method, so equal but for the
 * rounding of the solves: within 1e-6 relatively), or, should the two
 * estimates have taken different paths, within what an estimate promises:
 * from the true rcond (of the explicit inverse) to three times it. */
static void check_rcond(struct tcase *c, double got, double lapack,
                        double truth) {
  bool close = fabs(got - lapack) <= 1e-6 * lapack;
  bool bounded = got >= truth * (1 - 1e-6) && got <= 3 * truth;
  CHECK(c, close || bounded, "rcond %.17g, LAPACK's %.17g, the truth %.17g",
        got, lapack, truth);
}

/* log|det A| and its sign from factors (tarn_matrix_lu_logdet from
 * dgetrf's factors and pivots, tarn_matrix_cholesky_logdet from dpotrf's
 * L with its strict upper triangle NaN) against the sum of the logarithms
 * of the diagonal's magnitudes, within 1e-12 of that sum's terms'
 * magnitudes (each logarithm and each addition rounds once), the sign
 * exact; and rcond from the same factors (tarn_matrix_lu_rcond in the
 * one-norm or the infinity-norm, tarn_matrix_cholesky_rcond) or of a
 * triangle drawn as op_triangular does (tarn_matrix_triangular_rcond),
 * checked by check_rcond; the factors unchanged bit for bit. Variant: an
 * exact zero at the factor's (k, k) gives rcond 0, and log|det| -infinity
 * with sign 0. */
static void op_queries(struct tcase *c) {
  size_t n, t;
  draw_dim(c, 60, &n, &t);
  int kind = (int)range(c, 0, 2); /* lu, cholesky, triangular */
  size_t m = n, mb = t, nb = other_clamped(c, n, t);
  tarn_uplo uplo = TARN_LOWER;
  tarn_diag diag = TARN_NON_UNIT;
  if (kind == 2) draw_triangle(c, n, t, &m, &mb, &uplo, &diag);
  tarn_norm kind_norm =
      kind == 1 || chance(c, 0.5) ? TARN_NORM_ONE : TARN_NORM_INF;
  char norm = kind_norm == TARN_NORM_ONE ? '1' : 'I';
  bool singular = diag == TARN_NON_UNIT && chance(c, 0.2);
  size_t k = range(c, 0, n - 1);
  static const char *const kinds[] = {"lu", "cholesky", "triangular"};
  describe(c,
           "%s logdet and rcond m %zu n %zu, tiles %zu x %zu, %s %s, "
           "norm %c, %s %zu",
           kinds[kind], m, n, mb, nb, uplo ? "upper" : "lower",
           diag ? "unit" : "non-unit", norm,
           singular ? "zero diagonal at" : "regular, k", k);
  footprint(c, m, n, mb, nb);
  start(c);
  double *a, *h; /* the matrix, and its factor as uploaded */
  size_t *piv = calloc(n, sizeof *piv);
  lapack_int *ipiv = calloc(n, sizeof *ipiv);
  assert_true(piv != NULL && ipiv != NULL);
  if (kind == 2) {
    h = triangle_buf(c, m, n, uplo, diag, &a);
  } else {
    a = kind == 0 ? random_buf(c, n * n) : spd_buf(c, n);
    h = copy_buf(a, n * n);
    if (kind == 0) {
      assert_int_equal(
          LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, h, (int)n, ipiv), 0);
      for (size_t i = 0; i < n; i++) piv[i] = (size_t)ipiv[i] - 1;
    } else {
      assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, h, (int)n),
                       0);
      for (size_t j = 1; j < n; j++)
        for (size_t i = 0; i < j; i++) h[i + j * n] = NAN;
    }
  }
  if (singular) h[k + k * m] = 0.0;
  tarn_matrix *F = upload(c, m, n, mb, nb, h);
  double rcond = -1.0, lapack = -1.0;
  int ni = (int)n, ldh = (int)m;
  if (kind == 0) {
    double anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, norm, ni, ni, a, ni);
    CALL(c, 0, tarn_matrix_lu_rcond(F, piv, kind_norm, anorm, &rcond));
    if (!singular)
      assert_int_equal(
          LAPACKE_dgecon(LAPACK_COL_MAJOR, norm, ni, h, ni, anorm, &lapack), 0);
  } else if (kind == 1) {
    double anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', ni, ni, a, ni);
    CALL(c, 0, tarn_matrix_cholesky_rcond(F, anorm, &rcond));
    if (!singular)
      assert_int_equal(
          LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', ni, h, ni, anorm, &lapack), 0);
  } else {
    CALL(c, 0, tarn_matrix_triangular_rcond(F, uplo, diag, kind_norm, &rcond));
    if (!singular)
      assert_int_equal(LAPACKE_dtrcon(LAPACK_COL_MAJOR, norm, uplo ? 'U' : 'L',
                                      diag ? 'U' : 'N', ni, h, ldh, &lapack),
                       0);
  }
  if (singular)
    CHECK(c, rcond == 0.0, "rcond %g of a singular factor", rcond);
  else
    check_rcond(c, rcond, lapack, test_true_rcond(a, n, norm));
  if (kind != 2) { /* log|det A| = sum log|d_i| (Cholesky: 2 sum log l_ii) */
    double logdet = NAN, want = 0.0, scale = 1.0;
    int sign = 7, want_sign = 1;
    for (size_t i = 0; i < n; i++) {
      double d = h[i + i * n], term = log(fabs(d)) * (kind == 1 ? 2 : 1);
      want += term;
      scale += fabs(term);
      if (d < 0) want_sign = -want_sign;
      if (kind == 0 && piv[i] != i) want_sign = -want_sign;
    }
    if (kind == 0) {
      CALL(c, 0, tarn_matrix_lu_logdet(F, piv, &logdet, &sign));
    } else {
      CALL(c, 0, tarn_matrix_cholesky_logdet(F, &logdet));
      sign = singular ? 0 : 1;
    }
    if (singular)
      CHECK(c, logdet == -INFINITY && sign == 0,
            "log|det| %g, sign %d of a singular factor", logdet, sign);
    else
      CHECK(c, fabs(logdet - want) <= 1e-12 * scale && sign == want_sign,
            "log|det| %.17g, sign %d against %.17g, %d", logdet, sign, want,
            want_sign);
  }
  check_unchanged(c, F, h, "the factor");
  free(a), free(h), free(piv), free(ipiv);
  tarn_matrix_destroy(F);
}

/* ---- the run ------------------------------------------------------------ */

static void (*const ops[])(struct tcase *c) = {
    op_gemm, op_gemv,       op_ata,     op_cholesky,    op_lu,      op_solve,
    op_qr,   op_triangular, op_inverse, op_qr_multiply, op_permute, op_queries};
enum { NOPS = sizeof ops / sizeof ops[0] };

/* Case `index` of `seed`: operation index mod NOPS, everything else from
 * the generator. */
static void run_case(uint64_t seed, unsigned index) {
  struct tcase c = {0};
  case_begin(&c, seed, index);
  /* LU's panels and QR's domains of short tiles gathered into one block
   * in every other round of the operations, factored in place across
   * their tiles in the others (tarn__lu_gather_short_panels,
   * tarn__qr_gather_short_columns; by the index, not drawn, so a case
   * draws what it drew before) */
  bool gathered = index / NOPS % 2 == 0;
  tarn__lu_gather_short_panels(gathered);
  tarn__qr_gather_short_columns(gathered);
  if (!gathered) describe(&c, "LU's panels and QR's domains in place; ");
  ops[index % NOPS](&c);
  case_finish(&c);
}
