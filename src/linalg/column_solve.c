/* column_solve.c: the linear solves as one task per tile column of B
 * (linalg_internal.h, tarn__column_solve): each task pins the factor's
 * tiles that the solve reads and B's tile column, and solves that column
 * in place, tile by tile, with the kernels that share their work with
 * idle workers. tarn_matrix_triangular_solve, tarn_matrix_cholesky_solve
 * and tarn_matrix_lu_solve (and so the condition estimates) take this
 * path for a factor of one tile column, and for a few right-hand sides
 * when the factor's tiles take at most TARN__COLUMN_SOLVE_BYTES; always
 * only where the task fits under the memory limit.
 *
 * Why: a solve with a few right-hand sides reads each element of the
 * factor once, bound by memory; its tiled form (solve.c, lu.c) is a chain
 * of trsm and gemm tasks that no core can share, on a copy Y of B, after
 * a task per diagonal tile that checks it, and those tasks and the copy
 * cost more than the kernels of a 1024 x 1024 factor in 512 tiles
 * (`tarn bench linalg --sizes 1024`: trtrs 74 us against LAPACKE's 63,
 * getrs 139 against 124-150, 2026-12-06; docs/linalg.md, "Few
 * right-hand sides").
 *
 * Invariant: a task finds any exact zero on the diagonal it divides by
 * before B keeps anything (it checks first, or solves first from a saved
 * copy of its tile column and puts the copy back when it finds one: see
 * k_column_solve), and writes nothing once *failed is not 0 (a zero was
 * found, by it or by the task of another tile column, or a submission
 * failed): so each tile column of B holds X or its values before the
 * call, unless its task failed (its tiles then read as TARN_ECANCELED:
 * rule 4 of tarn/rt.h). */
#define _GNU_SOURCE /* fegetexcept */
#include <cblas.h>
#include <fenv.h>
#include <lapacke.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"

/* The factor's tiles that a solve reads, in the order of its task's deps:
 * tiles (i, k) column by column, only i >= k (lower), i <= k (upper) or
 * all (LU's square factors), rows below the order n not at all. */
static size_t factor_tiles(size_t nt, enum tarn__solve_kind kind) {
  return kind == TARN__SOLVE_LU ? nt * nt : nt * (nt + 1) / 2;
}

/* Whether the solve reads the factor's lower triangle (not for LU, which
 * reads all of it); `lower`: a triangle's side. */
static bool reads_lower(enum tarn__solve_kind kind, bool lower) {
  return kind == TARN__SOLVE_CHOLESKY ||
         (kind == TARN__SOLVE_TRIANGLE && lower);
}

/* The tile rows [*from, *to) of tile column k of the factor (nt tile
 * columns) that the solve reads. */
static void rows_read(enum tarn__solve_kind kind, bool lower, size_t nt,
                      size_t k, size_t *from, size_t *to) {
  bool all = kind == TARN__SOLVE_LU, below = reads_lower(kind, lower);
  *from = all || !below ? 0 : k;
  *to = all || below ? nt : k + 1;
}

/* The task data slot of the factor's tile (i, k). */
static size_t factor_slot(const struct tarn__column_job *j, size_t i,
                          size_t k) {
  size_t nt = j->tiles;
  if (j->kind == TARN__SOLVE_LU) return i + k * nt;
  if (reads_lower(j->kind, j->lower)) return k * nt - k * (k - 1) / 2 + (i - k);
  return k * (k + 1) / 2 + i;
}

/* The width of tile column k of the factor: the height of B's tile row
 * k. */
static int width(const struct tarn__column_job *j, size_t k) {
  size_t left = j->n - k * j->nb;
  return (int)(left < j->nb ? left : j->nb);
}

/* The leading dimension of the factor's tiles in tile row i. */
static int factor_ld(const struct tarn__column_job *j, size_t i) {
  size_t left = j->t_m - i * j->t_mb;
  return (int)(left < j->t_mb ? left : j->t_mb);
}

static double *factor(tarn_task *t, const struct tarn__column_job *j, size_t i,
                      size_t k) {
  return tarn_task_data(t, factor_slot(j, i, k));
}

static double *b_tile(tarn_task *t, const struct tarn__column_job *j,
                      size_t i) {
  return tarn_task_data(t, factor_tiles(j->tiles, j->kind) + i);
}

/* op(T) X = B on the task's tile column of B, T the factor's lower or
 * upper triangle (unit: its diagonal taken as ones): down the tile rows
 * for L and U^T, up them for U and L^T; each step a trsm on the diagonal
 * tile, then B_i -= op(T)_ik X_k for the tile rows still to come (the
 * kernels share a large tile's work with idle workers). */
static int triangle_pass(tarn_task *t, const struct tarn__column_job *j,
                         bool lower, bool trans, bool unit) {
  size_t nt = j->tiles;
  bool forward = lower != trans;
  for (size_t step = 0; step < nt; step++) {
    size_t k = forward ? step : nt - 1 - step;
    int nk = width(j, k);
    double *bk = b_tile(t, j, k);
    int rc = tarn__trsm_shared(
        t, CblasLeft, lower ? CblasLower : CblasUpper,
        trans ? CblasTrans : CblasNoTrans, unit ? CblasUnit : CblasNonUnit, nk,
        j->nrhs, 1.0, factor(t, j, k, k), factor_ld(j, k), bk, nk);
    size_t from = forward ? k + 1 : 0, to = forward ? nt : k;
    for (size_t i = from; rc == 0 && i < to; i++) {
      /* op(T)_ik is T's tile (i, k), or the transpose of (k, i) */
      size_t ti = trans ? k : i, tk = trans ? i : k;
      int ni = width(j, i);
      rc = tarn__gemm_shared(t, trans, false, ni, j->nrhs, nk, -1.0,
                             factor(t, j, ti, tk), factor_ld(j, ti), bk, nk,
                             1.0, b_tile(t, j, i), ni);
    }
    if (rc != 0) return rc;
  }
  return 0;
}

/* LU's interchanges on the task's tile column of B, in place: rows i and
 * piv[i] swapped for i = 0, 1, ..., or in the reverse order when
 * `reverse`; a division finds each row's tile. */
static void swap_rows_in_tiles(tarn_task *t, const struct tarn__column_job *j,
                               bool reverse) {
  for (size_t step = 0; step < j->n; step++) {
    size_t r = reverse ? j->n - 1 - step : step, p = j->piv[r];
    if (p == r) continue;
    double *br = b_tile(t, j, r / j->nb), *bp = b_tile(t, j, p / j->nb);
    size_t ldr = (size_t)width(j, r / j->nb), ldp = (size_t)width(j, p / j->nb);
    br += r % j->nb;
    bp += p % j->nb;
    for (size_t c = 0; c < (size_t)j->nrhs; c++) {
      double v = br[c * ldr];
      br[c * ldr] = bp[c * ldp];
      bp[c * ldp] = v;
    }
  }
}

/* The interchanges of swap_rows_in_tiles, on B's column gathered into
 * scratch and put back, where a row is at its index: in place, the
 * division and the tile's lookup per row took 9.0 us of a 140 us solve of
 * order 1024 in 512 tiles with one right-hand side, gathered 1.5 us (the
 * task's clock, means of 4000; a program outside the repository,
 * 2026-12-06). Where scratch has no room (the copy that lets the solve
 * check the diagonal after it may have taken it all), in place. */
static void swap_rows(tarn_task *t, const struct tarn__column_job *j,
                      bool reverse) {
  size_t n = j->n, nrhs = (size_t)j->nrhs;
  double *x = NULL;
  if (tarn_task_scratch(t, n * nrhs * sizeof *x, _Alignof(double),
                        (void **)&x) != 0) {
    swap_rows_in_tiles(t, j, reverse);
    return;
  }
  size_t slot0 = factor_tiles(j->tiles, j->kind); /* B's first tile */
  tarn__tile_column_copy(t, slot0, j->nb, n, 0, nrhs, x, false);
  for (size_t step = 0; step < n; step++) {
    size_t r = reverse ? n - 1 - step : step, p = j->piv[r];
    if (p == r) continue;
    for (size_t c = 0; c < nrhs; c++) {
      double v = x[c * n + r];
      x[c * n + r] = x[c * n + p];
      x[c * n + p] = v;
    }
  }
  tarn__tile_column_copy(t, slot0, j->nb, n, 0, nrhs, x, true);
}

/* LU's solve of one vector on one tile: dgetrs in one call (the
 * interchanges, both triangles), 9 us at N = 256; the passes above add a
 * call's cost each. With more right-hand sides the passes: OpenBLAS's
 * dgetrs then solves with its dtrsm, slower here than trsm_blocked
 * (linalg.c). A region of one tarn_matrix_lu_solve on one tile, medians
 * of four rounds of 401 alternated in one process (2026-12-07): order 256
 * with 2, 4, 8 and 64 right-hand sides 21.9, 32.3, 51.6 and 368 us by the
 * passes against 52.9, 69.5, 106 and 684 by dgetrs; order 512 67.9,
 * 95.3, 171 and 1318 against 157, 219, 346 and 2215. */
static void one_tile_getrs(tarn_task *t, const struct tarn__column_job *j,
                           lapack_int *ipiv) {
  int n = width(j, 0);
  for (int i = 0; i < n; i++) ipiv[i] = (lapack_int)j->piv[i] + 1;
  LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, j->trans ? 'T' : 'N', n, j->nrhs,
                      factor(t, j, 0, 0), factor_ld(j, 0), ipiv,
                      b_tile(t, j, 0), n);
}

/* The bytes of B's tile column up to which a task solves first and
 * checks the diagonal only when the solution is not finite (see
 * k_column_solve). */
#define SPECULATE_MAX_BYTES ((size_t)1 << 20)

/* Copies B's tile column into `saved` (to_saved) or back. Tile i holds
 * width(i) x nrhs doubles, contiguous (its leading dimension is its
 * height). */
static void copy_column(tarn_task *t, const struct tarn__column_job *j,
                        double *saved, bool to_saved) {
  for (size_t i = 0; i < j->tiles; i++) {
    size_t count = (size_t)width(j, i) * (size_t)j->nrhs;
    double *tile = b_tile(t, j, i);
    memcpy(to_saved ? saved : tile, to_saved ? tile : saved,
           count * sizeof *tile);
    saved += count;
  }
}

/* Whether every element of B's tile column is finite (no infinity, no
 * NaN): the exponent bits, all in the high 32 bits of each, not all ones.
 * Compared as 32-bit words, the loop runs in vectors without SSE4.1's
 * 64-bit compare: 78 to 98 cycles for 256 elements against 281 to 317
 * as 64-bit words, 320 to 369 for 1024 against 1008 to 1050 (a program
 * outside the repository, 2026-12-06). */
static bool column_finite(tarn_task *t, const struct tarn__column_job *j) {
  uint32_t bad = 0, exponent = UINT32_C(0x7ff00000);
  for (size_t i = 0; i < j->tiles; i++) {
    const double *tile = b_tile(t, j, i);
    size_t count = (size_t)width(j, i) * (size_t)j->nrhs;
    for (size_t e = 0; e < count; e++) {
      uint64_t bits;
      memcpy(&bits, tile + e, sizeof bits);
      uint32_t high = (uint32_t)(bits >> 32);
      bad |= (uint32_t)((high & exponent) == exponent);
    }
  }
  return bad == 0;
}

/* The first exact zero on the diagonals of the factor's tiles, lowered
 * into *first (tarn__diagonal_check). */
static void check_diagonal(tarn_task *t, const struct tarn__column_job *j,
                           atomic_int *first) {
  for (size_t k = 0; k < j->tiles; k++)
    tarn__diagonal_check(factor(t, j, k, k), width(j, k), factor_ld(j, k),
                         k * j->nb, first);
}

/* The solve on the task's tile column of B; `ipiv`: scratch for LU's
 * pivots on one tile (one_tile_getrs). */
static int solve(tarn_task *t, const struct tarn__column_job *j,
                 lapack_int *ipiv) {
  switch (j->kind) {
    case TARN__SOLVE_TRIANGLE:
      return triangle_pass(t, j, j->lower, j->trans, j->unit);
    case TARN__SOLVE_CHOLESKY: {
      int rc = triangle_pass(t, j, true, false, false);
      return rc != 0 ? rc : triangle_pass(t, j, true, true, false);
    }
    case TARN__SOLVE_LU:
      break;
  }
  if (j->tiles == 1 && j->nrhs == 1) {
    one_tile_getrs(t, j, ipiv);
    return 0;
  }
  int rc = 0;
  if (!j->trans) { /* L U X = P B */
    swap_rows(t, j, false);
    rc = triangle_pass(t, j, true, false, true);
    if (rc == 0) rc = triangle_pass(t, j, false, false, false);
  } else { /* U^T L^T P X = B */
    rc = triangle_pass(t, j, false, true, false);
    if (rc == 0) rc = triangle_pass(t, j, true, true, true);
    if (rc == 0) swap_rows(t, j, true);
  }
  return rc;
}

/* The task of a tile column of B (deps: the factor's tiles, factor_slot,
 * then B's tile column). The check of the diagonal for an exact zero
 * reads an element per column, each on its own cache line: 4.6 us of a
 * 63 us task for a 1024 x 1024 triangle in 512 tiles (two diagonal
 * tiles), where the solve takes 58. So a column of up to
 * SPECULATE_MAX_BYTES is saved in scratch and solved first: a zero on the
 * diagonal makes its element of X an infinity or NaN (a division by
 * zero, 0 / 0 included: OpenBLAS's dtrsv and dtrsm kernels divide, or
 * multiply by the reciprocal, whatever the element; the reference
 * dtrsv skips a zero one, which would hide the zero, and
 * a_singular_factor_with_zero_b_is_refused in test_triangular.c would
 * fail), and nothing the solve does after makes a non-finite element
 * finite again (it is only divided, and has products subtracted from
 * it). A finite X then proves the diagonal has no zero; else
 * the diagonal is checked, and B restored from the copy when it has one
 * (an X that overflowed, or non-finite input in B, stays). A larger
 * column, one whose copy finds no scratch, or a thread that traps
 * division by zero or invalid operations, is checked first. */
static int k_column_solve(tarn_task *t, void *arg) {
  const struct tarn__column_job *j = arg;
  if (atomic_load(j->failed) != 0) return 0;
  lapack_int *ipiv = NULL; /* before the copy: the copy may do without */
  if (j->kind == TARN__SOLVE_LU && j->tiles == 1 && j->nrhs == 1) {
    int rc = tarn_task_scratch(t, j->n * sizeof *ipiv, _Alignof(lapack_int),
                               (void **)&ipiv);
    if (rc != 0) return rc;
  }
  if (j->kind == TARN__SOLVE_TRIANGLE && j->unit) return solve(t, j, ipiv);
  size_t bytes = j->n * (size_t)j->nrhs * sizeof(double);
  double *saved = NULL;
  /* A program that traps division by zero (feenableexcept) gets the
   * check first, as LAPACK's solvers check, and no trap. */
  if (bytes > SPECULATE_MAX_BYTES ||
      (fegetexcept() & (FE_DIVBYZERO | FE_INVALID)) != 0 ||
      tarn_task_scratch(t, bytes, _Alignof(double), (void **)&saved) != 0) {
    check_diagonal(t, j, j->failed);
    return atomic_load(j->failed) != 0 ? 0 : solve(t, j, ipiv);
  }
  copy_column(t, j, saved, true);
  int rc = solve(t, j, ipiv);
  if (rc != 0 || column_finite(t, j)) return rc;
  atomic_int zero = 0;
  check_diagonal(t, j, &zero);
  if (atomic_load(&zero) == 0) return 0;
  copy_column(t, j, saved, false);
  check_diagonal(t, j, j->failed); /* *failed gets the zero's order */
  return 0;
}

/* The factor's tiles of such a task into deps (factor_slot's order);
 * returns their count. */
static size_t factor_deps(tarn_matrix *t, const struct tarn__column_job *j,
                          tarn_dep *deps) {
  size_t n = 0;
  for (size_t k = 0; k < t->nt; k++) {
    size_t from, to;
    rows_read(j->kind, j->lower, t->nt, k, &from, &to);
    for (size_t i = from; i < to; i++)
      deps[n++] = (tarn_dep){tarn__tile(t, i, k), TARN_READ};
  }
  return n;
}

/* What such a task pins: the factor's tiles and B's first (widest) tile
 * column, as the pool charges them. */
static size_t column_charge(const tarn_matrix *t, const tarn_matrix *b,
                            enum tarn__solve_kind kind, bool lower) {
  size_t bytes = 0;
  for (size_t k = 0; k < t->nt; k++) {
    size_t from, to;
    rows_read(kind, lower, t->nt, k, &from, &to);
    for (size_t i = from; i < to; i++) bytes += tarn__tile_charge_at(t, i, k);
  }
  for (size_t i = 0; i < b->mt; i++) bytes += tarn__tile_charge_at(b, i, 0);
  return bytes;
}

bool tarn__column_solve(const tarn_matrix *t, const tarn_matrix *b,
                        enum tarn__solve_kind kind, bool lower) {
  if (t->nt > 1 && b->n > TARN__COLUMN_SOLVE_RHS) return false;
  size_t bytes = column_charge(t, b, kind, lower);
  return (t->nt == 1 || bytes <= TARN__COLUMN_SOLVE_BYTES) &&
         tarn__task_fits(t->rt, bytes);
}

/* Deps of a solve's task kept on the stack: a factor of up to 2 x 2 tiles
 * with B's tile column (a malloc and a free fewer a call). */
#define INLINE_DEPS 8

int tarn__column_solve_run(tarn_matrix *t, tarn_matrix *b,
                           struct tarn__column_job job, int *info) {
  tarn__blas_init();
  size_t nfactor = factor_tiles(t->nt, job.kind), ndeps = nfactor + b->mt;
  tarn_dep inline_deps[INLINE_DEPS];
  tarn_dep *deps =
      ndeps <= INLINE_DEPS ? inline_deps : malloc(ndeps * sizeof *deps);
  if (deps == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(t->rt, &region);
  if (rc != 0) {
    if (deps != inline_deps) free(deps);
    return rc;
  }
  atomic_int failed = 0;
  job.tiles = t->nt;
  job.n = t->n;
  job.nb = tarn__triangle_row_tile(t);
  job.t_m = t->m;
  job.t_mb = t->mb;
  job.failed = &failed;
  factor_deps(t, &job, deps);
  /* The tasks read their job in this frame, as they read `failed`: the
   * region is waited for before it ends. Every tile column of B but the
   * last has the same width. */
  struct tarn__column_job last = job;
  job.nrhs = (int)tarn__tile_cols(b, 0);
  last.nrhs = (int)tarn__tile_cols(b, b->nt - 1);
  int submitted = 0;
  for (size_t jb = 0; submitted == 0 && jb < b->nt; jb++) {
    for (size_t i = 0; i < b->mt; i++)
      deps[nfactor + i] = (tarn_dep){tarn__tile(b, i, jb), TARN_READ_WRITE};
    submitted = tarn_task_submit(
        t->rt, &(tarn_task_desc){.fn = k_column_solve,
                                 .arg = jb + 1 == b->nt ? &last : &job,
                                 .deps = deps,
                                 .ndeps = ndeps,
                                 .name = "solve"});
  }
  if (submitted != 0) atomic_store(&failed, -1);
  rc = tarn__region_outcome(region, submitted, &failed, info);
  if (deps != inline_deps) free(deps);
  return rc;
}
