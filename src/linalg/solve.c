/* solve.c: what the linear solves share (linalg_internal.h: the shape
 * checks, the check of a factor's diagonal, a forward step and the
 * backward solve, used by the LU, Cholesky and QR solves) and the solve
 * with a Cholesky factor (tarn_matrix_cholesky_solve, see tarn/linalg.h).
 *
 * A solve of few right-hand sides, or with a factor of one tile column,
 * goes in one task per tile column of B instead (column_solve.c); a solve
 * of many with a factor of few tile columns, on a copy of B in pieces of
 * its columns ("many right-hand sides in pieces" below). By
 * tiles, the Cholesky solve runs, in one region, on a copy Y of B: the forward
 * solve L Y = B by tile rows (trsm on tile row k, gemm on the rows below;
 * each trsm first checks its diagonal tile for an exact zero), then the
 * backward solve L^T X = Y walking up (trsm from Y's tile row k into B's,
 * gemm with L's tile transposed on Y's rows above). B is written only by
 * the backward trsm tasks, each tile once, and they do nothing once a zero
 * was found or a submission failed. Every backward task on a column of B
 * waits for the forward pass on that column of Y, which checked every
 * diagonal tile: so a zero leaves B unchanged. Each task owns a small job
 * struct freed by the runtime when it is done. */
#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "tarn/linalg.h"

bool tarn__factor_shape_ok(const tarn_matrix *a) {
  return tarn__blas_sized(a) && a->m == a->n && a->mb == a->nb &&
         a->m <= INT_MAX;
}

bool tarn__triangle_shape_ok(const tarn_matrix *t) {
  return tarn__blas_sized(t) && t->m >= t->n &&
         (t->mb == t->nb || (t->nt == 1 && t->mb >= t->n)) && t->n <= INT_MAX;
}

size_t tarn__triangle_row_tile(const tarn_matrix *t) {
  return t->mb < t->n ? t->mb : t->n;
}

bool tarn__solve_shapes_ok(const tarn_matrix *a, const tarn_matrix *b) {
  return tarn__factor_shape_ok(a) && tarn__blas_sized(b) && a != b &&
         a->rt == b->rt && b->m == a->m && b->mb == a->mb;
}

/* What one tile task needs; owned by the task. */
struct solve_job {
  int m, n, k;       /* the tile op's sizes (BLAS meaning) */
  int lda, ldb, ldc; /* leading dimensions of the tiles */
  /* gemm: transpose the factor's tile; trsm: the tile's triangle
   * transposed (forward: upper, backward: lower) */
  bool ta;
  bool unit;    /* the triangle has a unit diagonal (not stored) */
  bool check;   /* backward: check the diagonal tile first */
  bool forward; /* k_solve_into: a forward step (L or U^T), not backward */
  /* k_solve_into, k_copy: the output tile is written, not read (zeroed
   * when the task has nothing to do) */
  bool fresh;
  size_t offset; /* the diagonal tile's first row in the matrix */
  /* forward: where a zero on the diagonal goes; backward: nothing to do
   * unless it holds 0 (see tarn__submit_backward), and the zero found by
   * the check */
  atomic_int *flag;
};

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct solve_job *p,
                      const tarn_dep *deps, size_t ndeps, int priority,
                      const char *name) {
  return tarn__submit_owned(rt, fn, p, sizeof *p, deps, ndeps, priority, name);
}

/* ---- the diagonal check -------------------------------------------------- */

void tarn__diagonal_check(const double *t, int n, int ld, size_t offset,
                          atomic_int *first) {
  for (size_t i = 0; i < (size_t)n; i++) {
    if (t[i + i * (size_t)ld] != 0.0) continue;
    int order = (int)(offset + i + 1), seen = atomic_load(first);
    /* Lowered, unless it holds a smaller order or a failed submission. */
    while ((seen == 0 || (seen > 0 && order < seen)) &&
           !atomic_compare_exchange_weak(first, &seen, order))
      continue;
    return;
  }
}

/* ---- the Cholesky solve ------------------------------------------------- */

/* Y_kj = L_kk^-1 Y_kj, L_kk lower (unit when j->unit) or the transpose
 * of an upper triangle (j->ta) (deps: T_kk, Y_kj), after the diagonal
 * check of the tile when `flag` is set. */
static int k_forward(tarn_task *t, void *arg) {
  const struct solve_job *j = arg;
  if (j->flag != NULL)
    tarn__diagonal_check(tarn_task_data(t, 0), j->m, j->lda, j->offset,
                         j->flag);
  return tarn__trsm_shared(t, CblasLeft, j->ta ? CblasUpper : CblasLower,
                           j->ta ? CblasTrans : CblasNoTrans,
                           j->unit ? CblasUnit : CblasNonUnit, j->m, j->n, 1.0,
                           tarn_task_data(t, 0), j->lda, tarn_task_data(t, 1),
                           j->ldb);
}

/* A task with nothing to do (a zero was found, or a submission failed):
 * a tile it was to write without reading (`fresh`) gets zeros, so that
 * if it is pushed out of memory before the call's matrices go, its
 * buffer's earlier bytes do not go to the spill file (as A^T A's
 * diagonal tiles, qr.c). Returns 0. */
static int skipped(tarn_task *t, size_t slot, bool fresh) {
  if (fresh) memset(tarn_task_data(t, slot), 0, tarn_task_size(t, slot));
  return 0;
}

/* B_kj = op(T_kk)^-1 Y_kj (deps: T_kk, Y_kj, B_kj; ldc is Y's), op(T)
 * U or L^T, or with j->forward L or U^T (unit when j->unit); once
 * dropped (which a fresh solve's check of T_kk's diagonal may do) only
 * the zeros of `skipped`. */
static int k_solve_into(tarn_task *t, void *arg) {
  const struct solve_job *j = arg;
  const double *tkk = tarn_task_data(t, 0), *y = tarn_task_data(t, 1);
  if (j->check) tarn__diagonal_check(tkk, j->m, j->lda, j->offset, j->flag);
  if (atomic_load(j->flag) != 0) return skipped(t, 2, j->fresh);
  double *b = tarn_task_data(t, 2);
  for (int c = 0; c < j->n; c++)
    memcpy(b + (size_t)c * (size_t)j->ldb, y + (size_t)c * (size_t)j->ldc,
           (size_t)j->m * sizeof *b);
  bool lower = j->ta != j->forward; /* backward: L^T; forward: L */
  return tarn__trsm_shared(t, CblasLeft, lower ? CblasLower : CblasUpper,
                           j->ta ? CblasTrans : CblasNoTrans,
                           j->unit ? CblasUnit : CblasNonUnit, j->m, j->n, 1.0,
                           tkk, j->lda, b, j->ldb);
}

/* Y_ij -= op(T_x) X_kj (deps: Y_ij, the factor's tile, X_kj); in the
 * backward pass nothing once dropped (X_kj was not written). */
static int k_update(tarn_task *t, void *arg) {
  const struct solve_job *j = arg;
  if (j->flag != NULL && atomic_load(j->flag) != 0) return 0;
  return tarn__gemm_shared(t, j->ta, false, j->m, j->n, j->k, -1.0,
                           tarn_task_data(t, 1), j->lda, tarn_task_data(t, 2),
                           j->ldb, 1.0, tarn_task_data(t, 0), j->ldc);
}

/* Priorities: a step's trsm on top, then its updates by their distance
 * from the next step's tile row. */
enum { PRIO_TOP = 1 << 24 };

static int update_priority(size_t distance) {
  return distance >= PRIO_TOP ? 0 : PRIO_TOP - (int)distance;
}

/* Submits Y_ij -= T' Z_kj, T' being T's tile (i, k), or the transpose of
 * its tile (k, i) when `transposed`: ni x nk, with ni and nk the widths of
 * T's tile columns i and k. A tile row of T is taller than that only at
 * the bottom of a tall T, so only the triangle's rows of Y and Z take part;
 * with `all_rows` (LU's L, a trapezoid) ni is the height of T's tile row
 * i instead, and every row of Y's tile takes part. With `skip`, the task
 * does nothing once it is not 0. */
static int submit_update(tarn_matrix *t, bool transposed, tarn_matrix *y,
                         size_t i, size_t k, size_t j, tarn_matrix *z,
                         atomic_int *skip, int priority, bool all_rows) {
  tarn_dep d3[3] = {
      {tarn__tile(y, i, j), TARN_READ_WRITE},
      {transposed ? tarn__tile(t, k, i) : tarn__tile(t, i, k), TARN_READ},
      {tarn__tile(z, k, j), TARN_READ}};
  struct solve_job g = {
      .m = (int)(all_rows ? tarn__tile_rows(t, i) : tarn__tile_cols(t, i)),
      .n = (int)tarn__tile_cols(y, j),
      .k = (int)tarn__tile_cols(t, k),
      .lda = (int)tarn__tile_rows(t, transposed ? k : i),
      .ldb = (int)tarn__tile_rows(z, k),
      .ldc = (int)tarn__tile_rows(y, i),
      .ta = transposed,
      .flag = skip};
  return submit_job(t->rt, k_update, &g, d3, 3, priority, "gemm");
}

int tarn__submit_forward_step(tarn_matrix *t, tarn__forward_op op,
                              tarn_matrix *m, size_t k, size_t j,
                              atomic_int *check, int trsm_priority,
                              int gemm_priority, int gemm_step) {
  bool upper = op == TARN__UPPER_TRANS, trapezoid = op == TARN__LOWER_UNIT;
  /* L_kk is nk x nk at the top of T's tile (k, k), of ldk rows; LU's L
   * is as tall as T, and its last diagonal tile in a wide T as wide as
   * that tile is tall */
  int nk = (int)tarn__tile_cols(t, k), ldk = (int)tarn__tile_rows(t, k);
  if (trapezoid && ldk < nk) nk = ldk;
  int nj = (int)tarn__tile_cols(m, j), ldm = (int)tarn__tile_rows(m, k);
  tarn_ref *mkj = tarn__tile(m, k, j);
  tarn_dep d2[2] = {{tarn__tile(t, k, k), TARN_READ}, {mkj, TARN_READ_WRITE}};
  struct solve_job s = {.m = nk,
                        .n = nj,
                        .lda = ldk,
                        .ldb = ldm,
                        .ta = upper,
                        .unit = op == TARN__LOWER_UNIT,
                        .offset = k * t->nb,
                        .flag = check};
  int rc = submit_job(t->rt, k_forward, &s, d2, 2, trsm_priority, "trsm");
  int priority = gemm_priority;
  for (size_t i = k + 1; rc == 0 && i < (trapezoid ? t->mt : t->nt); i++) {
    /* Y_ij -= L_ik Y_kj: L_ik is T_ik, or T_ki^T */
    rc = submit_update(t, upper, m, i, k, j, m, NULL, priority, trapezoid);
    priority = priority > gemm_step ? priority - gemm_step : 0;
  }
  return rc;
}

/* The forward solve L Y = B on Y, down the tile rows; its trsm tasks
 * check L's diagonal tiles into *failed. */
static int submit_forward(tarn_matrix *l, tarn_matrix *y, atomic_int *failed) {
  for (size_t k = 0; k < l->mt; k++)
    for (size_t j = 0; j < y->nt; j++) {
      int rc = tarn__submit_forward_step(l, TARN__LOWER, y, k, j, failed,
                                         PRIO_TOP, update_priority(1), 1);
      if (rc != 0) return rc;
    }
  return 0;
}

/* Step k on tile column j of a solve op(T) X = Y from Y into B: the trsm
 * X_kj = op(T)_kk^-1 Y_kj into B (k_solve_into; `s` says which triangle,
 * direction, check and flag; the sizes are filled here), then Y_ij -=
 * op(T)_ik X_kj for Y's tile rows still to come: below k going forward,
 * above it going backward. B's tile is written when `fresh`, else
 * updated. */
static int submit_step_into(tarn_matrix *t, tarn_matrix *y, tarn_matrix *b,
                            size_t k, size_t j, struct solve_job s,
                            bool fresh) {
  tarn_dep d3[3] = {
      {tarn__tile(t, k, k), TARN_READ},
      {tarn__tile(y, k, j), TARN_READ},
      {tarn__tile(b, k, j), fresh ? TARN_WRITE : TARN_READ_WRITE}};
  /* T_kk's triangle is nk x nk, at the top of a tile of ldk rows */
  s.m = (int)tarn__tile_cols(t, k);
  s.n = (int)tarn__tile_cols(b, j);
  s.lda = (int)tarn__tile_rows(t, k);
  s.ldb = (int)tarn__tile_rows(b, k);
  s.ldc = (int)tarn__tile_rows(y, k);
  s.offset = k * t->nb;
  s.fresh = fresh;
  int rc = submit_job(t->rt, k_solve_into, &s, d3, 3, PRIO_TOP, "trsm");
  size_t from = s.forward ? k + 1 : 0, to = s.forward ? t->nt : k;
  for (size_t i = from; rc == 0 && i < to; i++)
    rc = submit_update(t, s.ta, y, i, k, j, b, s.flag,
                       update_priority(s.forward ? i - k : k - i), false);
  return rc;
}

int tarn__submit_backward(tarn_matrix *t, bool lower, bool unit, tarn_matrix *y,
                          tarn_matrix *b, atomic_int *dropped, bool fresh) {
  struct solve_job s = {
      .ta = lower, .unit = unit, .check = fresh && !unit, .flag = dropped};
  for (size_t step = 0; step < t->nt; step++)
    for (size_t j = 0; j < b->nt; j++) {
      /* up T's tile rows: op(T) is U, or L^T */
      int rc = submit_step_into(t, y, b, t->nt - 1 - step, j, s, fresh);
      if (rc != 0) return rc;
    }
  return 0;
}

bool tarn__solve_fits(const tarn_matrix *t, const tarn_matrix *b) {
  return tarn__task_fits(
      t->rt, tarn__tile_charge_at(t, 0, 0) + 2 * tarn__tile_charge_at(b, 0, 0));
}

/* ---- many right-hand sides in pieces ------------------------------------ */

size_t tarn__solve_piece_cols(const tarn_matrix *t, const tarn_matrix *b) {
  size_t workers = tarn_rt_workers(b->rt);
  size_t pieces = b->n / TARN__SOLVE_PIECE_COLS_MIN;
  if (pieces > workers) pieces = workers;
  if (pieces < 2 || b->nt >= pieces || t->nt < 2 || t->nt > workers) return 0;
  size_t cols = (b->n + pieces - 1) / pieces;
  /* a limit below the solve's tasks: refused by tiles, before any copy */
  if (cols >= b->nb || !tarn__solve_fits(t, b)) return 0;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(b->rt));
  double bytes = (double)b->m * (double)b->n * (double)sizeof(double);
  return limit == 0 || 3.0 * bytes <= (double)limit / 8 ? cols : 0;
}

int tarn__retile_part_waiting(tarn_matrix *from, char part, size_t mb,
                              size_t nb, tarn_matrix **to) {
  tarn_region *region = NULL;
  int rc = tarn_region_begin(from->rt, &region);
  if (rc != 0) return rc;
  int submitted = tarn__matrix_retile_part(from, part, mb, nb, to);
  rc = tarn_region_wait(region, NULL);
  return submitted != 0 ? submitted : rc;
}

int tarn__retile_waiting(tarn_matrix *from, size_t mb, size_t nb,
                         tarn_matrix **to) {
  return tarn__retile_part_waiting(from, 'F', mb, nb, to);
}

int tarn__solve_in_pieces(tarn_matrix *b, size_t cols,
                          int (*solve)(void *ctx, tarn_matrix *piece,
                                       int *info),
                          void *ctx, int *info) {
  tarn_matrix *pieces = NULL;
  int rc = tarn__retile_waiting(b, b->mb, cols, &pieces);
  if (rc == 0) rc = solve(ctx, pieces, info);
  if (rc == 0) rc = tarn__retile_waiting(pieces, b->mb, b->nb, &b);
  tarn_matrix_destroy(pieces);
  return rc;
}

/* ---- the Cholesky solve, public ------------------------------------------ */

static int cholesky_piece(void *l, tarn_matrix *piece, int *info) {
  return tarn_matrix_cholesky_solve(l, piece, info);
}

static int cholesky_work(void *ctx, tarn_matrix *lw, tarn_matrix *bw,
                         int *info) {
  (void)ctx;
  return tarn_matrix_cholesky_solve(lw, bw, info);
}

int tarn_matrix_cholesky_solve(tarn_matrix *l, tarn_matrix *b, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__solve_shapes_ok(l, b)) return TARN_EINVAL;
  if (tarn__column_solve(l, b, TARN__SOLVE_CHOLESKY, true))
    return tarn__column_solve_run(
        l, b, (struct tarn__column_job){.kind = TARN__SOLVE_CHOLESKY}, info);
  size_t work = tarn__solve_work_tile(l, 'L', b, 2);
  if (work != 0)
    return tarn__solve_in_work_tiles(l, 'L', b, work, cholesky_work, NULL,
                                     info);
  size_t cols = tarn__solve_piece_cols(l, b);
  if (cols != 0) return tarn__solve_in_pieces(b, cols, cholesky_piece, l, info);
  if (!tarn__solve_fits(l, b)) return TARN_ENOMEM;
  tarn__blas_init();
  tarn_region *region = NULL;
  int rc = tarn_region_begin(l->rt, &region);
  if (rc != 0) return rc;
  atomic_int failed = 0;
  tarn_matrix *y = NULL;
  int submitted = tarn_matrix_copy(b, &y);
  if (submitted == 0) submitted = submit_forward(l, y, &failed);
  if (submitted == 0)
    submitted = tarn__submit_backward(l, true, false, y, b, &failed, false);
  if (submitted != 0) atomic_store(&failed, -1);
  tarn_matrix_destroy(y); /* its tiles go when their last task ends */
  return tarn__region_outcome(region, submitted, &failed, info);
}

/* ---- the triangular solve ------------------------------------------------ */

/* Checks the diagonal of T_kk (deps: T_kk, the gate) for an exact zero
 * into j->flag. */
static int k_check(tarn_task *t, void *arg) {
  const struct solve_job *j = arg;
  tarn__diagonal_check(tarn_task_data(t, 0), j->m, j->lda, j->offset, j->flag);
  return 0;
}

/* Copies tile 0 (of B) into tile 1 (of Y; j->m x j->n, both of leading
 * dimension j->m), unless *j->flag holds anything but 0 (T was found
 * singular, or a submission failed; then `skipped`): after the checks,
 * as the gate orders. */
static int k_copy(tarn_task *t, void *arg) {
  const struct solve_job *j = arg;
  if (atomic_load(j->flag) != 0) return skipped(t, 1, j->fresh);
  memcpy(tarn_task_data(t, 1), tarn_task_data(t, 0),
         (size_t)j->m * (size_t)j->n * sizeof(double));
  return 0;
}

int tarn__submit_copy_unless(tarn_matrix *from, tarn_matrix *to, size_t i,
                             size_t j, tarn_ref *gate, atomic_int *flag,
                             tarn_access to_mode) {
  tarn_dep d3[3] = {{tarn__tile(from, i, j), TARN_READ},
                    {tarn__tile(to, i, j), to_mode},
                    {gate, TARN_AFTER}};
  struct solve_job c = {.m = (int)tarn__tile_rows(from, i),
                        .n = (int)tarn__tile_cols(from, j),
                        .fresh = to_mode == TARN_WRITE,
                        .flag = flag};
  return submit_job(from->rt, k_copy, &c, d3, gate != NULL ? 3 : 2, PRIO_TOP,
                    "copy");
}

/* The solve's tasks: the checks of T's diagonal tiles (unless unit), then
 * the copy Y of B, then the forward or backward solve from Y into B; every
 * task after the checks does nothing once *failed is not 0 (a zero was
 * found, or a submission failed), so a singular T costs its checks. */
static int submit_triangular(tarn_matrix *t, bool forward, bool lower,
                             bool unit, tarn_matrix *b, tarn_matrix *y,
                             tarn_ref *gate, atomic_int *failed) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && !unit && k < t->nt; k++) {
    tarn_dep d2[2] = {{tarn__tile(t, k, k), TARN_READ},
                      {gate, TARN_READ_WRITE}};
    struct solve_job c = {.m = (int)tarn__tile_cols(t, k),
                          .lda = (int)tarn__tile_rows(t, k),
                          .offset = k * t->nb,
                          .flag = failed};
    rc = submit_job(t->rt, k_check, &c, d2, 2, PRIO_TOP, "check");
  }
  for (size_t i = 0; rc == 0 && i < b->mt; i++)
    for (size_t j = 0; rc == 0 && j < b->nt; j++)
      rc = tarn__submit_copy_unless(b, y, i, j, gate, failed, TARN_WRITE);
  if (rc != 0 || !forward)
    return rc != 0 ? rc
                   : tarn__submit_backward(t, lower, unit, y, b, failed, false);
  /* L or U^T, down the tile rows */
  struct solve_job s = {
      .ta = !lower, .unit = unit, .forward = true, .flag = failed};
  for (size_t k = 0; rc == 0 && k < t->nt; k++)
    for (size_t j = 0; rc == 0 && j < b->nt; j++)
      rc = submit_step_into(t, y, b, k, j, s, false);
  return rc;
}

/* A triangular solve's arguments but B, for its pieces. */
struct triangle_solve {
  tarn_matrix *t;
  tarn_uplo uplo;
  tarn_trans trans;
  tarn_diag diag;
};

static int triangle_piece(void *ctx, tarn_matrix *piece, int *info) {
  const struct triangle_solve *s = ctx;
  return tarn_matrix_triangular_solve(s->t, s->uplo, s->trans, s->diag, piece,
                                      info);
}

static int triangle_work(void *ctx, tarn_matrix *tw, tarn_matrix *bw,
                         int *info) {
  const struct triangle_solve *s = ctx;
  return tarn_matrix_triangular_solve(tw, s->uplo, s->trans, s->diag, bw, info);
}

int tarn_matrix_triangular_solve(tarn_matrix *t, tarn_uplo uplo,
                                 tarn_trans trans, tarn_diag diag,
                                 tarn_matrix *b, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__triangle_shape_ok(t) || !tarn__blas_sized(b) || b == t ||
      b->rt != t->rt || b->m != t->n || b->mb != tarn__triangle_row_tile(t) ||
      (uplo != TARN_LOWER && uplo != TARN_UPPER) ||
      (trans != TARN_NO_TRANS && trans != TARN_TRANS) ||
      (diag != TARN_NON_UNIT && diag != TARN_UNIT))
    return TARN_EINVAL;
  bool lower = uplo == TARN_LOWER;
  if (tarn__column_solve(t, b, TARN__SOLVE_TRIANGLE, lower))
    return tarn__column_solve_run(
        t, b,
        (struct tarn__column_job){.kind = TARN__SOLVE_TRIANGLE,
                                  .lower = lower,
                                  .trans = trans == TARN_TRANS,
                                  .unit = diag == TARN_UNIT},
        info);
  struct triangle_solve ctx = {t, uplo, trans, diag};
  size_t work = tarn__solve_work_tile(t, lower ? 'L' : 'U', b, 1);
  if (work != 0)
    return tarn__solve_in_work_tiles(t, lower ? 'L' : 'U', b, work,
                                     triangle_work, &ctx, info);
  size_t cols = tarn__solve_piece_cols(t, b);
  if (cols != 0)
    return tarn__solve_in_pieces(b, cols, triangle_piece, &ctx, info);
  if (!tarn__solve_fits(t, b)) return TARN_ENOMEM;
  tarn__blas_init();
  /* L X = B and U^T X = B go down T's tile rows, U X = B and L^T X = B up */
  bool forward = lower == (trans == TARN_NO_TRANS);
  /* Orders the copy Y of B after every check. Made without memory (a
   * check pins it): the program thread could not wait for room while
   * tasks of other calls hold the limit. */
  tarn_ref *gate = NULL;
  int rc = tarn_ref_create(tarn_rt_pool(t->rt), sizeof(double), &gate);
  if (rc != 0) return rc;
  tarn_region *region = NULL;
  rc = tarn_region_begin(t->rt, &region);
  if (rc != 0) {
    tarn_ref_release(gate);
    return rc;
  }
  atomic_int failed = 0;
  tarn_matrix *y = NULL;
  int submitted = tarn__matrix_new(t->rt, b->m, b->n, b->mb, b->nb, &y);
  if (submitted == 0)
    submitted = submit_triangular(t, forward, lower, diag == TARN_UNIT, b, y,
                                  gate, &failed);
  if (submitted != 0) atomic_store(&failed, -1);
  tarn_matrix_destroy(y); /* its tiles go when their last task ends */
  tarn_ref_release(gate);
  return tarn__region_outcome(region, submitted, &failed, info);
}
