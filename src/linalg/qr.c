/* qr.c: tiled Householder QR in compact WY form and the explicit thin Q
 * (see tarn/linalg.h). The tile algorithm of PLASMA / Chameleon: for each
 * tile column k with a diagonal tile (the first min(mt, nt); a wide
 * matrix's last diagonal tile is wider than tall and holds as many
 * reflectors as rows), geqrt factors the diagonal tile, gemqrt applies
 * its reflectors to the tiles right of it, tpqrt folds each tile below
 * into the diagonal tile's R, and tpmqrt applies those reflectors to the
 * pairs of tiles (k, n), (m, n): a flat reduction tree; a tall tile
 * column is reduced by a tree of domains instead ("the reduction tree"
 * below), whose steps the factorisation and every apply take in the
 * same order. The kernels are
 * LAPACKE's *_work functions; their work arrays come from the task's
 * scratch memory (or the heap when it does not fit). gemqrt and tpmqrt
 * share their work with idle workers by ranges of the columns they update
 * (tarn_task_parallel_for); geqrt and tpqrt run by blocks of ib columns,
 * as LAPACK's do, and share each block's update of the columns right of
 * it the same way, the next block factored meanwhile on the task's own
 * thread (tarn__task_parallel_for_lead); but a tall, narrow tile of a
 * flat tile column is factored by qr_tall.c, by rows shared with idle
 * workers (qr_job.tall), and a domain of short tiles is gathered into one
 * block and factored and applied there ("gathered domains" below). The
 * least-squares solve
 * (tarn_matrix_qr_solve) applies Q^T with the same gemqrt and tpmqrt tasks,
 * then the backward solve of solve.c; tarn_matrix_qr_multiply applies Q or
 * Q^T alone, to a matrix of the caller's, from either side. Each task owns a
 * small job struct freed by the runtime when it is done. Also here: C = A^T A
 * by syrk and gemm tiles (tarn_matrix_syrk_ata), whose kernels and mirroring
 * share their work with idle workers (tarn__syrk_shared, tarn__gemm_shared,
 * tarn_task_parallel_for).
 */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "rt/rt_internal.h"
#include "tarn/linalg.h"

/* What one tile task needs; owned by the task. */
struct qr_job {
  int m, n, k;     /* the LAPACK op's sizes */
  int ib;          /* inner block size for this tile column (<= k) */
  int l;           /* tpqrt's and tpmqrt's l: 0, or the triangle's order */
  int lda, ldb;    /* leading dimensions: the top / the lower tile */
  int ldv;         /* an update's: of the reflectors' tile */
  int ldt;         /* leading dimension of the T tile */
  char trans;      /* 'T' (factorising) or 'N' (forming Q) */
  char side;       /* an update's: 'L' (Q from the left) or 'R' */
  int a, b, v, tt; /* data slots of the operands */
  bool tall;       /* by rows: geqrt or tpqrt by tarn__qr_tall
                    * (submit_step_factor), gemqrt or tpmqrt by
                    * tarn__qr_tall_apply (submit_step_apply) */
  int span, tb;    /* a gathered domain's: its tiles, their height */
};

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct qr_job *proto,
                      const tarn_dep *deps, size_t ndeps, int priority,
                      const char *name) {
  return tarn__submit_owned(rt, fn, proto, sizeof *proto, deps, ndeps, priority,
                            name);
}

/* ---- kernels ------------------------------------------------------------ */

/* A reflector update's operands, shared by ranges of the columns it
 * updates from the left, of the rows from the right (each column, or row,
 * is transformed alone): work is ib x that count, and a range uses its
 * own part of it. */
struct apply_share {
  const struct qr_job *j;
  const double *v, *tt;
  double *a, *b; /* b: tpmqrt's lower tile */
  double *work;
};

/* Columns below this many per range are not worth a helper. */
#define APPLY_GRAIN 64

/* Where a range's part of a tile of C (leading dimension ld) begins:
 * column `begin` from the left, row `begin` from the right. */
static size_t range_offset(const struct qr_job *j, size_t begin, int ld) {
  return j->side == 'R' ? begin : begin * (size_t)ld;
}

/* Columns (from the left; rows from the right) [begin, end) of gemqrt's
 * C, m x n. */
static int gemqrt_range(void *arg, size_t begin, size_t end) {
  const struct apply_share *s = arg;
  const struct qr_job *j = s->j;
  bool right = j->side == 'R';
  lapack_int count = (lapack_int)(end - begin);
  lapack_int info = LAPACKE_dgemqrt_work(
      LAPACK_COL_MAJOR, j->side, j->trans, right ? count : j->m,
      right ? j->n : count, j->k, j->ib, s->v, j->ldv, s->tt, j->ldt,
      s->a + range_offset(j, begin, j->lda), j->lda,
      s->work + begin * (size_t)j->ib);
  return info == 0 ? 0 : TARN_EINVAL;
}

/* Runs `range` over the j->n columns (from the right: j->m rows) of an
 * apply task, shared with idle workers: the reflectors (slot v) and their
 * T (slot tt), the tile A (slot a) and, for a pair, the tile B (slot b),
 * with a work array of ib x that count doubles, each range using its own
 * part of it. With j->tall, by the reflectors' rows instead: C's rows
 * from the left, its columns from the right (tarn__qr_tall_apply). */
static int apply_run(tarn_task *t, const struct qr_job *j, bool pair,
                     tarn_range_fn range, const double *v, const double *tt,
                     double *a, double *b);

static int apply_shared(tarn_task *t, const struct qr_job *j, bool pair,
                        tarn_range_fn range) {
  bool right = j->side == 'R';
  if (j->tall) /* C's tall side is its rows from the left, columns else */
    return tarn__qr_tall_apply(
        t, right, j->trans == 'T', tarn_task_data(t, (size_t)j->v),
        (size_t)j->ldv, (size_t)j->k, (size_t)j->ib,
        tarn_task_data(t, (size_t)j->tt), (size_t)j->ldt,
        pair ? tarn_task_data(t, (size_t)j->a) : NULL, (size_t)j->lda,
        tarn_task_data(t, (size_t)(pair ? j->b : j->a)),
        (size_t)(right ? j->n : j->m), (size_t)(right ? j->m : j->n),
        (size_t)(pair ? j->ldb : j->lda));
  return apply_run(t, j, pair, range, tarn_task_data(t, (size_t)j->v),
                   tarn_task_data(t, (size_t)j->tt),
                   tarn_task_data(t, (size_t)j->a),
                   pair ? tarn_task_data(t, (size_t)j->b) : NULL);
}

/* apply_shared's ranges over C's columns (rows from the right), with the
 * operands at v, tt, a and b (NULL but for a pair) and j's sizes. */
static int apply_run(tarn_task *t, const struct qr_job *j, bool pair,
                     tarn_range_fn range, const double *v, const double *tt,
                     double *a, double *b) {
  bool heap;
  size_t count = (size_t)(j->side == 'R' ? j->m : j->n);
  struct apply_share s = {
      .j = j,
      .v = v,
      .tt = tt,
      .a = a,
      .b = pair ? b : NULL,
      .work =
          tarn__task_memory(t, (size_t)j->ib * count * sizeof *s.work, &heap)};
  if (s.work == NULL) return TARN_ENOMEM;
  int rc = tarn_task_parallel_for(t, count, APPLY_GRAIN, range, &s);
  if (heap) free(s.work);
  return rc;
}

/* C = op(Q) C, or C op(Q) (j->side), for the reflectors of a diagonal
 * tile (slot v, k of them, ldv) and their T (slot tt); C is m x n (slot
 * a, lda); shared by columns (rows from the right) of C, or by the
 * reflectors' rows with j->tall (tarn__qr_tall_apply). */
static int k_gemqrt(tarn_task *t, void *arg) {
  return apply_shared(t, arg, false, gemqrt_range);
}

/* Columns (from the left; rows from the right) [begin, end) of tpmqrt's A
 * and B. */
static int tpmqrt_range(void *arg, size_t begin, size_t end) {
  const struct apply_share *s = arg;
  const struct qr_job *j = s->j;
  bool right = j->side == 'R';
  lapack_int count = (lapack_int)(end - begin);
  lapack_int info = LAPACKE_dtpmqrt_work(
      LAPACK_COL_MAJOR, j->side, j->trans, right ? count : j->m,
      right ? j->n : count, j->k, j->l, j->ib, s->v, j->ldv, s->tt, j->ldt,
      s->a + range_offset(j, begin, j->lda), j->lda,
      s->b + range_offset(j, begin, j->ldb), j->ldb,
      s->work + begin * (size_t)j->ib);
  return info == 0 ? 0 : TARN_EINVAL;
}

/* From the left, [A; B] = op(Q) [A; B], A the top k rows of a tile (slot
 * a, lda) and B an m x n tile (slot b, ldb); from the right, [A B] = [A B]
 * op(Q), A the first k columns of a tile of m rows and B an m x n tile. Q is
 * the reflectors of a tile below the diagonal (slot v, k of them, ldv)
 * with their T (slot tt). Shared by columns (rows from the right), or by
 * the reflectors' rows (B's rows, or columns from the right) with j->tall
 * (tarn__qr_tall_apply). */
static int k_tpmqrt(tarn_task *t, void *arg) {
  return apply_shared(t, arg, true, tpmqrt_range);
}

/* A panel's state (see panel): the tiles, T, the work array (ib x n), the
 * block [i, i + w) just factored and the width of the next one. */
struct panel_qr {
  const struct qr_job *j;
  bool pair;
  double *a, *b, *tt, *work;
  int i, w, next;
};

/* A block of 2 to GEQR2_COLUMNS columns of a diagonal tile is factored by
 * dgeqr2 and its T formed by dlarft (the steps dgeqrf takes on a panel of
 * up to 32 columns), not by dgeqrt, which is the recursive dgeqrt3 and
 * forms T as it goes: the same reflectors and T up to rounding (I - V T
 * V^T is the product of the block's reflectors either way), in less
 * time. One thread, medians of 1001 (a program outside the repository,
 * 2026-12-06), dgeqrt with ib = w against dgeqr2 + dlarft: 256 x 32 73.9
 * against 52.1 us, 256 x 16 30.7 against 15.5, 512 x 32 129 against 101,
 * 4096 x 32 898 against 780, 4096 x 16 349 against 216, 32 x 32 27.4
 * against 13.6. A wider block (ib up to the tile) keeps dgeqrt, whose
 * recursion is level 3 where dgeqr2 is level 2; a block of one column
 * too (its work is the w x w the caller gives, 2 w needed). */
#define GEQR2_COLUMNS 32

/* Block [i, i + w)'s QR alone, as dgeqrt and dtpqrt do it (on a diagonal
 * tile dgeqr2 and dlarft, above, or for a wider block dgeqrt, which is
 * dgeqrt3; or dtpqrt, which is dtpqrt2), its T into the block's columns of
 * tt, with `work` (w x w). */
static int block_qr(const struct panel_qr *p, int i, int w, double *work) {
  const struct qr_job *j = p->j;
  size_t lda = (size_t)j->lda, ldb = (size_t)j->ldb, ldt = (size_t)j->ldt;
  double *r = p->a + (size_t)i + (size_t)i * lda, *ti = p->tt + (size_t)i * ldt;
  lapack_int info;
  if (p->pair) {
    info =
        LAPACKE_dtpqrt_work(LAPACK_COL_MAJOR, j->m, w, 0, w, r, j->lda,
                            p->b + (size_t)i * ldb, j->ldb, ti, j->ldt, work);
  } else if (w >= 2 && w <= GEQR2_COLUMNS) {
    double *tau = work; /* then dgeqr2's work: 2 w of the w x w */
    info = LAPACKE_dgeqr2_work(LAPACK_COL_MAJOR, j->m - i, w, r, j->lda, tau,
                               work + w);
    if (info == 0)
      info = LAPACKE_dlarft_work(LAPACK_COL_MAJOR, 'F', 'C', j->m - i, w, r,
                                 j->lda, tau, ti, j->ldt);
  } else {
    info = LAPACKE_dgeqrt_work(LAPACK_COL_MAJOR, j->m - i, w, w, r, j->lda, ti,
                               j->ldt, work);
  }
  return info == 0 ? 0 : TARN_EINVAL;
}

/* *s (with its job *sub): block [i, i + w)'s reflectors applied to the
 * `cols` columns from column c0 (dgemqrt or dtpmqrt with one block, which
 * is the dlarfb or dtprfb that dgeqrt and dtpqrt call), with `work` (w x
 * cols), for gemqrt_range or tpmqrt_range. */
static void block_apply(const struct panel_qr *p, int i, int w, int c0,
                        int cols, double *work, struct qr_job *sub,
                        struct apply_share *s) {
  const struct qr_job *j = p->j;
  size_t lda = (size_t)j->lda, ldb = (size_t)j->ldb;
  double *r = p->a + (size_t)i + (size_t)i * lda;
  *sub = (struct qr_job){.m = p->pair ? j->m : j->m - i,
                         .n = cols,
                         .k = w,
                         .ib = w,
                         .lda = j->lda,
                         .ldb = j->ldb,
                         .ldv = p->pair ? j->ldb : j->lda,
                         .ldt = j->ldt,
                         .trans = 'T',
                         .side = 'L'};
  *s = (struct apply_share){.j = sub,
                            .v = p->pair ? p->b + (size_t)i * ldb : r,
                            .tt = p->tt + (size_t)i * (size_t)j->ldt,
                            .a = p->a + (size_t)i + (size_t)c0 * lda,
                            .b = p->pair ? p->b + (size_t)c0 * ldb : NULL,
                            .work = work};
}

/* The step's lead, on the panel task's thread: the next block's columns
 * transformed by the block just factored, then the next block's QR. Both
 * use the first w x w of the work array. */
static int panel_qr_lead(void *arg) {
  const struct panel_qr *p = arg;
  struct qr_job sub;
  struct apply_share s;
  int k1 = p->i + p->w;
  block_apply(p, p->i, p->w, k1, p->next, p->work, &sub, &s);
  int rc = (p->pair ? tpmqrt_range : gemqrt_range)(&s, 0, (size_t)p->next);
  return rc != 0 ? rc : block_qr(p, k1, p->next, p->work);
}

/* A panel kernel, as LAPACK's dgeqrt and dtpqrt run: for each block of ib
 * columns, the block's QR alone (block_qr), then its reflectors applied to
 * the columns right of it (block_apply), with a lookahead of one block:
 * idle workers transform the columns beyond the next block, by ranges of
 * columns, while the panel's thread transforms the next block and factors
 * it (tarn__task_parallel_for_lead). Every column gets the same
 * transformations, in the same order, as in one dgeqrt or dtpqrt. T (slot
 * tt, ldt x n) is zeroed first so that the tile's bits do not depend on
 * what was there. Without `pair`: the QR of the m x n diagonal tile (slot
 * a). With it: the QR of [R; B], R the upper triangle of the diagonal tile
 * (slot a, n x n on top, lda), B the m x n tile below (slot b, ldb). */
static int panel_run(tarn_task *t, const struct qr_job *j, bool pair, double *a,
                     double *b, double *tt) {
  struct panel_qr p = {.j = j, .pair = pair, .a = a, .b = b, .tt = tt};
  memset(p.tt, 0, (size_t)j->ldt * (size_t)j->n * sizeof *p.tt);
  if (j->tall)
    return tarn__qr_tall(t, pair ? p.a : NULL, (size_t)j->lda, pair ? p.b : p.a,
                         (size_t)j->m, (size_t)j->n,
                         (size_t)(pair ? j->ldb : j->lda), p.tt, (size_t)j->ldt,
                         (size_t)j->ib);
  bool heap;
  p.work = tarn__task_memory(t, (size_t)j->ib * (size_t)j->n * sizeof *p.work,
                             &heap);
  if (p.work == NULL) return TARN_ENOMEM;
  tarn_range_fn range = pair ? tpmqrt_range : gemqrt_range;
  int cols = pair || j->m > j->n ? j->n : j->m;
  int w = j->ib < cols ? j->ib : cols;
  int rc = block_qr(&p, 0, w, p.work);
  for (int i = 0; rc == 0 && j->n > i + w; i += w, w = p.next) {
    p.i = i;
    p.w = w;
    p.next = cols - i - w < j->ib ? cols - i - w : j->ib;
    int far = i + w + p.next;
    struct qr_job sub;
    struct apply_share rest; /* the columns beyond the next block */
    block_apply(&p, i, w, far, j->n - far, p.work + (size_t)w * (size_t)w, &sub,
                &rest);
    rc = p.next > 0 ? tarn__task_parallel_for_lead(t, (size_t)(j->n - far),
                                                   APPLY_GRAIN, range, &rest,
                                                   panel_qr_lead, &p)
                    : tarn_task_parallel_for(t, (size_t)(j->n - far),
                                             APPLY_GRAIN, range, &rest);
    if (p.next == 0) break;
  }
  if (heap) free(p.work);
  return rc;
}

/* panel_run on the task's data: the tile (slot a), for a pair the tile
 * below (slot b), and T (slot tt). */
static int panel(tarn_task *t, const struct qr_job *j, bool pair) {
  return panel_run(t, j, pair, tarn_task_data(t, (size_t)j->a),
                   pair ? tarn_task_data(t, (size_t)j->b) : NULL,
                   tarn_task_data(t, (size_t)j->tt));
}

/* QR of the diagonal tile (panel without a pair). */
static int k_geqrt(tarn_task *t, void *arg) { return panel(t, arg, false); }

/* QR of [R; B] (panel with a pair). */
static int k_tpqrt(tarn_task *t, void *arg) { return panel(t, arg, true); }

/* QR of [R1; R2], two n x n upper triangles on top of two tiles (slots a
 * and b, lda and ldb): one dtpqrt with l = n, which leaves R in R1, writes
 * its reflectors over R2 (on and above its diagonal only) and their T
 * (slot tt, zeroed first, as in panel). Not shared: a merge costs a third
 * of a tpqrt. */
static int k_tpqrt_tt(tarn_task *t, void *arg) {
  const struct qr_job *j = arg;
  double *tt = tarn_task_data(t, (size_t)j->tt);
  memset(tt, 0, (size_t)j->ldt * (size_t)j->n * sizeof *tt);
  bool heap;
  double *work =
      tarn__task_memory(t, (size_t)j->ib * (size_t)j->n * sizeof *work, &heap);
  if (work == NULL) return TARN_ENOMEM;
  lapack_int info = LAPACKE_dtpqrt_work(LAPACK_COL_MAJOR, j->m, j->n, j->l,
                                        j->ib, tarn_task_data(t, (size_t)j->a),
                                        j->lda, tarn_task_data(t, (size_t)j->b),
                                        j->ldb, tt, j->ldt, work);
  if (heap) free(work);
  return info == 0 ? 0 : TARN_EINVAL;
}

/* ---- gathered domains ------------------------------------------------------
 * A domain of short tiles (see "gathered domains" below) is factored and
 * applied as one block: its tiles copied into a column-major block of the
 * task's memory, one dgeqrt-like panel (panel_run) or one dgemqrt there,
 * and the block copied back. j->span tiles of j->tb rows (the last may be
 * shorter), j->m rows in all. */

/* Lines [l0, l1) of C's tiles over a domain (slots 0 ..): from the left
 * its columns, tiles of h x lines stacked down into the m x (l1 - l0)
 * `block` (tarn__tile_column_copy); from the right its rows, tiles of
 * lines x h side by side into the (l1 - l0) x m `block`. With to_tiles,
 * the block back. */
static void line_copy(tarn_task *t, const struct qr_job *j, size_t l0,
                      size_t l1, double *block, bool to_tiles) {
  size_t rows = (size_t)j->m, lines = (size_t)j->n, tb = (size_t)j->tb;
  size_t w = l1 - l0;
  if (j->side != 'R') {
    tarn__tile_column_copy(t, 0, tb, rows, l0, w, block, to_tiles);
    return;
  }
  for (size_t x = 0; x * tb < rows; x++) {
    size_t h = rows - x * tb < tb ? rows - x * tb : tb;
    double *tile = tarn_task_data(t, x);
    for (size_t c = 0; c < h; c++) { /* block column x tb + c */
      double *tp = tile + c * lines + l0, *bp = block + (x * tb + c) * w;
      memcpy(to_tiles ? tp : bp, to_tiles ? bp : tp, w * sizeof *tp);
    }
  }
}

/* QR of a gathered domain (deps: its tiles of tile column k, slots 0 ..
 * span - 1, then T's tile, slot span): j->m x j->n, inner block j->ib. */
static int k_geqrt_gathered(tarn_task *t, void *arg) {
  const struct qr_job *j = arg;
  size_t rows = (size_t)j->m, cols = (size_t)j->n;
  bool heap;
  double *block = tarn__task_memory(t, rows * cols * sizeof *block, &heap);
  if (block == NULL) return TARN_ENOMEM;
  tarn__tile_column_copy(t, 0, (size_t)j->tb, rows, 0, cols, block, false);
  struct qr_job g = *j;
  g.lda = j->m;
  int rc =
      panel_run(t, &g, false, block, NULL, tarn_task_data(t, (size_t)j->span));
  if (rc == 0)
    tarn__tile_column_copy(t, 0, (size_t)j->tb, rows, 0, cols, block, true);
  if (heap) free(block);
  return rc;
}

/* A gathered domain's reflectors (j->k of them, its tiles in slots span ..
 * 2 span - 1, T in slot 2 span) applied to C's tiles over the domain
 * (slots 0 .. span - 1: j->n lines, columns from the left, rows from the
 * right), by chunks of lines whose copy takes at most
 * TARN__GATHER_BYTES_MAX (each line is transformed alone), each shared by
 * ranges of its lines with idle workers (apply_run). */
static int k_gemqrt_gathered(tarn_task *t, void *arg) {
  const struct qr_job *j = arg;
  size_t rows = (size_t)j->m, lines = (size_t)j->n, kk = (size_t)j->k;
  size_t span = (size_t)j->span;
  bool right = j->side == 'R';
  size_t chunk = TARN__GATHER_BYTES_MAX / (rows * sizeof(double));
  if (chunk == 0) chunk = 1;
  if (chunk > lines) chunk = lines;
  bool heap;
  double *v = tarn__task_memory(t, rows * (kk + chunk) * sizeof(double), &heap);
  if (v == NULL) return TARN_ENOMEM;
  double *c = v + rows * kk;
  tarn__tile_column_copy(t, span, (size_t)j->tb, rows, 0, kk, v, false);
  const double *tt = tarn_task_data(t, 2 * span);
  int rc = 0;
  for (size_t l0 = 0; rc == 0 && l0 < lines; l0 += chunk) {
    size_t l1 = lines - l0 < chunk ? lines : l0 + chunk;
    int w = (int)(l1 - l0);
    line_copy(t, j, l0, l1, c, false);
    struct qr_job sub = {.m = right ? w : j->m,
                         .n = right ? j->m : w,
                         .k = j->k,
                         .ib = j->ib,
                         .lda = right ? w : j->m,
                         .ldv = j->m,
                         .ldt = j->ldt,
                         .trans = j->trans,
                         .side = j->side};
    rc = apply_run(t, &sub, false, gemqrt_range, v, tt, c, NULL);
    if (rc == 0) line_copy(t, j, l0, l1, c, true);
  }
  if (heap) free(v);
  return rc;
}

/* Writes the tile of the identity at tile (ti, tj) (dep 0: rows x cols,
 * j->m x j->n; j->k: the global row minus the global column of its first
 * element, as a diagonal offset). */
static int k_eye(tarn_task *t, void *arg) {
  const struct qr_job *j = arg;
  double *c = tarn_task_data(t, 0);
  size_t rows = (size_t)j->m, cols = (size_t)j->n;
  memset(c, 0, rows * cols * sizeof *c);
  /* element (i, q) is on the diagonal when i + off == q */
  long off = (long)j->k;
  for (size_t q = 0; q < cols; q++) {
    long i = (long)q - off;
    if (i >= 0 && (size_t)i < rows) c[(size_t)i + q * rows] = 1.0;
  }
  return 0;
}

/* ---- task graph ---------------------------------------------------------- */

/* Priorities: the panel (geqrt, tpqrt) on top; the updates of tile column
 * n after panel k by the distance of n from the panel (the next column
 * first: it holds the next panel). */
enum { PRIO_TOP = 1 << 24 };

static int column_priority(size_t k, size_t n) {
  size_t p = 1 + (n - k - 1);
  return p >= PRIO_TOP ? 0 : PRIO_TOP - (int)p;
}

/* The reflectors of diagonal tile k: its width, or its height when it is
 * wider than tall (the last tile row of a wide A). */
static int reflectors(const tarn_matrix *a, size_t k) {
  size_t w = tarn__tile_cols(a, k), h = tarn__tile_rows(a, k);
  return (int)(h < w ? h : w);
}

/* The inner block size for tile column k: at most its reflectors. */
static int inner(const tarn_matrix *a, size_t k, size_t ib) {
  size_t w = (size_t)reflectors(a, k);
  return (int)(ib < w ? ib : w);
}

/* The tile columns with a diagonal tile: min(mt, nt). */
static size_t panels(const tarn_matrix *a) {
  return a->mt < a->nt ? a->mt : a->nt;
}

/* Tile x of c's tile line `n` (a tile column from the left, a row from
 * the right): tile (x, n) from the left, (n, x) from the right. */
static tarn_ref *line_tile(tarn_matrix *c, char side, size_t x, size_t n) {
  return side == 'R' ? tarn__tile(c, n, x) : tarn__tile(c, x, n);
}

/* ---- the reduction tree ----------------------------------------------------
 *
 * Tile column k's tiles k .. mt - 1 are reduced to one R, in tile k, by
 * steps. Flat (one domain): geqrt on tile k, then tpqrt of each tile below
 * against its R. When the tile column is tall beside what is right of it
 * (TREE_MIN tiles and TREE_ROWS rows or more, and TREE_TALL times as
 * many tiles as tile columns from k on), its chain of tpqrts would be the
 * critical path while the few columns right of it leave workers idle: it is cut
 * into up to `fan` domains of h consecutive tiles (h >= 2), each reduced flat
 * into its first tile (its head: geqrt, then tpqrt of the others against it),
 * side by side; then the heads' R are merged pairwise, a binary tree, into tile
 * k, by tpqrt of one triangle on another (l = the triangle's order). A
 * merged head keeps its geqrt's reflectors below its diagonal and its
 * merge's on and above it. The same flops as the flat tree: a geqrt and a
 * merge cost what one tpqrt does.
 *
 * The fan is the runtime's workers (at most TREE_FAN) when some tile
 * column is tall, else 1 (flat everywhere), and T records it: T has mt +
 * fan - 1 tile rows, tile (mt + d - 1, k) holding the T of the merge of
 * tile column k's domain d (d >= 1). The applies read the fan from T's
 * shape, so factors saved and read back apply the same way on any
 * runtime.
 *
 * Gathered domains. A tpqrt of a short tile (TARN__GATHER_TILE_ROWS rows
 * or fewer) is a few level-2 calls per column on vectors of a tile's
 * height, slower than its arithmetic: 4096 x 32 in tiles of 32 took 1.3
 * to 2.2 ms against dgeqrf's 0.6. So where every tile is short and no
 * domain's copy takes more than TARN__GATHER_BYTES_MAX, each domain is
 * one step: its tiles gathered into one block and factored there as a
 * tall tile is (geqrt's panel: dgeqr2 and dlarft by blocks of ib
 * columns), its reflectors applied to each tile line of C in one task
 * the same way (dgemqrt on C's lines over the domain, gathered); the
 * merges stay. Such a domain's reflectors fill its tiles below R (a unit
 * lower trapezoid over all its rows) and its T is dgeqrt's. T records
 * this layout too: it has 2 fan - 1 tile rows (fewer than mt, which a
 * flat layout's T never has), tile (d, k) holding the T of tile column
 * k's domain d and tile (fan + d - 1, k) that of its merge. Where the
 * runtime's fan leaves a domain over TARN__GATHER_BYTES_MAX, the first
 * larger fan whose trees cut them all down to it is the factorisation's
 * (layout_for). A factorisation gathers only where its largest gathered
 * task (a domain and the same rows of another tile column, with a T
 * tile) takes at most an eighth of a memory limit: under a tighter limit
 * it keeps the flat layout, whose tasks pin three tiles, and its bits
 * differ from a run that gathered. */

enum {
  TREE_MIN = 4,     /* tiles in the tile column for a tree */
  TREE_ROWS = 2048, /* ... and rows */
  TREE_TALL = 4,    /* ... and this many times the tile columns from k on */
  TREE_FAN = 64,    /* the most domains */
};

/* Tile column k's tree: domains of h tiles from tile k, d of them (the
 * last may hold more: a short last tile is never a head); d == 1 is flat.
 * T of domain i's merge at tile row t0 + i - 1 of T. */
struct tree {
  size_t k, end, h, d, t0;
  bool gathered; /* each domain one step (gathered domains) */
};

/* Whether tile column k of `a` is reduced by a tree of domains with the
 * fan `fan`: it is tall, and the tile columns from k on are no more than
 * the fan (more keep the workers busy with their updates, and a flat tree
 * was faster there: 4096 x 1024 in tiles of 256, two workers). */
static bool tree_used(const tarn_matrix *a, size_t k, size_t fan) {
  size_t p = a->mt - k, cols = a->nt - k;
  return fan >= 2 && cols <= fan && p >= TREE_MIN && p >= TREE_TALL * cols &&
         a->m - k * a->mb >= TREE_ROWS;
}

/* Whether some tile column of `a` has a tree with the fan `fan`. */
static bool trees(const tarn_matrix *a, size_t fan) {
  for (size_t k = 0; k < panels(a); k++)
    if (tree_used(a, k, fan)) return true;
  return false;
}

/* The fan of a factorisation of `a` on `workers` workers: their number,
 * at most TREE_FAN, when some tile column has a tree, else 1. */
static size_t tree_fan(const tarn_matrix *a, size_t workers) {
  size_t fan = workers < TREE_FAN ? workers : TREE_FAN;
  return trees(a, fan) ? fan : 1;
}

/* The tree of tile column k (k < panels(a)) with the fan `fan`, its
 * domains gathered or not. */
static struct tree tree_of(const tarn_matrix *a, size_t k, size_t fan,
                           bool gathered) {
  size_t p = a->mt - k;
  struct tree tr = {.k = k,
                    .end = a->mt,
                    .h = p,
                    .d = 1,
                    .t0 = gathered ? fan : a->mt,
                    .gathered = gathered};
  if (!tree_used(a, k, fan)) return tr;
  tr.h = (p + fan - 1) / fan;
  if (tr.h < 2) tr.h = 2;
  tr.d = (p + tr.h - 1) / tr.h;
  /* a head holds a whole triangle: a short last tile joins the domain
   * before it */
  if (tarn__tile_rows(a, k + (tr.d - 1) * tr.h) < tarn__tile_cols(a, k)) tr.d--;
  return tr;
}

/* One step of a tree: geqrt on tile `row` (a head: top == row), tpqrt of
 * tile `row` against head `top`'s R, or the merge of head `row`'s R into
 * head `top`'s (merge); a gathered domain's geqrt on its `span` tiles from
 * `row` (span 1: one tile). Its T in T's tile row `trow`. */
struct qr_step {
  size_t top, row, span, trow;
  bool merge;
};

/* The steps of tr: its tiles in order (each domain's head, then the
 * tiles below it), or its gathered domains, then the merges, level by
 * level. */
static size_t tree_steps(const struct tree *tr) {
  return (tr->gathered ? tr->d : tr->end - tr->k) + tr->d - 1;
}

/* Step i (< tree_steps) of tr; steps in order make the factorisation. */
static struct qr_step tree_step(const struct tree *tr, size_t i) {
  size_t p = tr->end - tr->k, firsts = tr->gathered ? tr->d : p;
  if (i < firsts && tr->gathered) {
    size_t top = tr->k + i * tr->h;
    return (struct qr_step){.top = top,
                            .row = top,
                            .span = i + 1 < tr->d ? tr->h : tr->end - top,
                            .trow = i};
  }
  if (i < firsts) {
    size_t dom = i / tr->h < tr->d - 1 ? i / tr->h : tr->d - 1;
    return (struct qr_step){.top = tr->k + dom * tr->h,
                            .row = tr->k + i,
                            .span = 1,
                            .trow = tr->k + i};
  }
  size_t q = i - firsts;
  for (size_t s = 1; s < tr->d; s *= 2)
    for (size_t t = 0; t + s < tr->d; t += 2 * s)
      if (q-- == 0)
        return (struct qr_step){.top = tr->k + t * tr->h,
                                .row = tr->k + (t + s) * tr->h,
                                .span = 1,
                                .trow = tr->t0 + t + s - 1,
                                .merge = true};
  return (struct qr_step){.top = tr->k, .row = tr->k}; /* not reached */
}

/* The rows of step st's span of tiles (st.span tiles from st.row). */
static size_t span_rows(const tarn_matrix *a, struct qr_step st) {
  size_t from = st.row * a->mb, to = (st.row + st.span) * a->mb;
  return (to < a->m ? to : a->m) - from;
}

/* How T lays out a factorisation's T factors: the fan of its trees, its
 * domains gathered or not (see "gathered domains" above). */
struct layout {
  size_t fan;
  bool gathered;
};

/* Off only in tests (tarn__qr_gather_short_columns). */
static atomic_bool gather_short_columns = true;

void tarn__qr_gather_short_columns(bool on) {
  atomic_store_explicit(&gather_short_columns, on, memory_order_relaxed);
}

/* Whether a's domains with the fan `fan` may be gathered: short tiles, two
 * tile rows or more, fewer T tile rows gathered (2 fan - 1) than flat
 * (mt + fan - 1 >= mt), and no domain's copy above
 * TARN__GATHER_BYTES_MAX. */
static bool gatherable(const tarn_matrix *a, size_t fan) {
  if (a->mb > TARN__GATHER_TILE_ROWS || a->mt < 2 || 2 * fan - 1 >= a->mt)
    return false;
  for (size_t k = 0; k < panels(a); k++) {
    struct tree tr = tree_of(a, k, fan, true);
    size_t cols = tarn__tile_cols(a, k);
    for (size_t i = 0; i < tr.d; i++)
      if (span_rows(a, tree_step(&tr, i)) * cols * sizeof(double) >
          TARN__GATHER_BYTES_MAX)
        return false;
  }
  return true;
}

/* The charge of c's tiles over step st's span on c's tile line n (a tile
 * column from the left, a row from the right). */
static size_t span_charge(const tarn_matrix *c, char side, struct qr_step st,
                          size_t n) {
  size_t bytes = 0;
  for (size_t x = st.row; x < st.row + st.span; x++)
    bytes += side == 'R' ? tarn__tile_charge_at(c, n, x)
                         : tarn__tile_charge_at(c, x, n);
  return bytes;
}

/* The largest task of applying a's gathered domains (fan `fan`) to c's
 * first tile line from `side`: a domain's tiles, c's over the same rows
 * and a T tile of tee bytes. */
static size_t gathered_apply_bytes(const tarn_matrix *a, const tarn_matrix *c,
                                   char side, size_t fan, size_t tee) {
  size_t most = 0;
  for (size_t k = 0; k < panels(a); k++) {
    struct tree tr = tree_of(a, k, fan, true);
    for (size_t i = 0; i < tr.d; i++) {
      struct qr_step st = tree_step(&tr, i);
      size_t bytes = span_charge(a, 'L', st, k) + span_charge(c, side, st, 0);
      if (bytes + tee > most) most = bytes + tee;
    }
  }
  return most;
}

/* The layout T's shape records for a (see "gathered domains"), into *lay;
 * false when it is none that tarn_matrix_qr makes. */
static bool layout_of(const tarn_matrix *a, const tarn_matrix *tm,
                      struct layout *lay) {
  if (tm->mt >= a->mt) {
    *lay = (struct layout){.fan = tm->mt - a->mt + 1};
  } else {
    *lay = (struct layout){.fan = (tm->mt + 1) / 2, .gathered = true};
    if (tm->mt % 2 == 0 || !gatherable(a, lay->fan)) return false;
  }
  return lay->fan == 1 || (lay->fan <= TREE_FAN && trees(a, lay->fan));
}

/* Whether step st of tree tr, on a tile of `rows` rows and `cols`
 * columns of a, goes by rows (qr_tall.c): a tall, narrow tile of a flat
 * tile column (not a tree's, whose domains keep the workers busy), not a
 * merge, with workers to share it. */
static bool by_rows(const tarn_matrix *a, const struct tree *tr,
                    struct qr_step st, int rows, int cols) {
  return !st.merge && tr->d == 1 && tarn_rt_workers(a->rt) >= 2 &&
         tarn__qr_tall_wanted((size_t)rows, (size_t)cols);
}

/* A gathered domain's step on tile line n of c (see submit_step_apply;
 * deps: room for 2 span + 1). */
static int submit_gathered_apply(tarn_matrix *a, tarn_matrix *tm,
                                 tarn_matrix *c, char side, size_t k,
                                 struct qr_step st, size_t n, char trans,
                                 int ibk, int priority, tarn_dep *deps) {
  bool right = side == 'R';
  for (size_t x = 0; x < st.span; x++) {
    deps[x] = (tarn_dep){line_tile(c, side, st.row + x, n), TARN_READ_WRITE};
    deps[st.span + x] = (tarn_dep){tarn__tile(a, st.row + x, k), TARN_READ};
  }
  deps[2 * st.span] = (tarn_dep){tarn__tile(tm, st.trow, k), TARN_READ};
  struct qr_job u = {
      .m = (int)span_rows(a, st),
      .n = right ? (int)tarn__tile_rows(c, n) : (int)tarn__tile_cols(c, n),
      .k = reflectors(a, k),
      .ib = ibk,
      .ldt = (int)tm->mb,
      .trans = trans,
      .side = side,
      .span = (int)st.span,
      .tb = (int)a->mb};
  return submit_job(a->rt, k_gemqrt_gathered, &u, deps, 2 * st.span + 1,
                    priority, "gemqrt");
}

/* Applies the reflectors of step st of tile column k (their V in a, T in
 * tm) to tile line n of c (a itself when factorising, Q when forming it):
 * from `side` with `trans`, inner block size ibk. A head's: gemqrt on c's
 * tile `row`; a tile's or a merge's: tpmqrt on c's tiles `top` and `row`
 * (a merge's on the first k rows, or columns, of both); a gathered
 * domain's: gemqrt on c's tiles over the domain, gathered. `deps`: room
 * for them (step_deps). */
static int submit_step_apply(tarn_matrix *a, tarn_matrix *tm, tarn_matrix *c,
                             char side, const struct tree *tr,
                             struct qr_step st, size_t n, char trans, int ibk,
                             int priority, tarn_dep *deps) {
  size_t k = tr->k;
  if (st.span > 1)
    return submit_gathered_apply(a, tm, c, side, k, st, n, trans, ibk, priority,
                                 deps);
  bool right = side == 'R', head = st.top == st.row;
  int rr = (int)tarn__tile_rows(a, st.row), kk = reflectors(a, k);
  int lines = right ? (int)tarn__tile_rows(c, n) : (int)tarn__tile_cols(c, n);
  tarn_dep *d = deps;
  d[0] = (tarn_dep){line_tile(c, side, st.row, n), TARN_READ_WRITE};
  d[1] = (tarn_dep){tarn__tile(a, st.row, k), TARN_READ};
  d[2] = (tarn_dep){tarn__tile(tm, st.trow, k), TARN_READ};
  d[3] = (tarn_dep){line_tile(c, side, st.top, n), TARN_READ_WRITE};
  /* the part of c's tile `row` the reflectors touch: k rows of a merge */
  int part = st.merge ? kk : rr;
  struct qr_job u = {.m = right ? lines : part,
                     .n = right ? part : lines,
                     .k = kk,
                     .ib = ibk,
                     .l = st.merge ? kk : 0,
                     .ldv = rr,
                     .ldt = (int)tm->mb,
                     .trans = trans,
                     .side = side,
                     .b = 0,
                     .v = 1,
                     .tt = 2,
                     .a = 3};
  /* on lines of C too few to share: by the reflectors' rows */
  u.tall = lines < 2 * APPLY_GRAIN && by_rows(a, tr, st, rr, kk);
  if (head) {
    u.a = 0;
    u.lda = right ? lines : rr;
    return submit_job(a->rt, k_gemqrt, &u, d, 3, priority, "gemqrt");
  }
  u.lda = right ? lines : (int)tarn__tile_rows(a, st.top);
  u.ldb = right ? lines : rr;
  return submit_job(a->rt, k_tpmqrt, &u, d, 4, priority, "tpmqrt");
}

/* Factors step st of tile column k (ck columns, inner block size ibk):
 * geqrt on a head, tpqrt of a tile against its head, a merge, or a
 * gathered domain's geqrt on its tiles; T into tm. `deps`: room for
 * them (step_deps). */
static int submit_step_factor(tarn_matrix *a, tarn_matrix *tm,
                              const struct tree *tr, struct qr_step st, int ibk,
                              tarn_dep *deps) {
  size_t k = tr->k;
  int ck = (int)tarn__tile_cols(a, k), rr = (int)tarn__tile_rows(a, st.row);
  if (st.span > 1) {
    for (size_t x = 0; x < st.span; x++)
      deps[x] = (tarn_dep){tarn__tile(a, st.row + x, k), TARN_READ_WRITE};
    deps[st.span] = (tarn_dep){tarn__tile(tm, st.trow, k), TARN_READ_WRITE};
    struct qr_job g = {.m = (int)span_rows(a, st),
                       .n = ck,
                       .ib = ibk,
                       .ldt = (int)tm->mb,
                       .span = (int)st.span,
                       .tb = (int)a->mb};
    return submit_job(a->rt, k_geqrt_gathered, &g, deps, st.span + 1, PRIO_TOP,
                      "geqrt");
  }
  tarn_dep *d = deps;
  d[0] = (tarn_dep){tarn__tile(a, st.row, k), TARN_READ_WRITE};
  d[1] = (tarn_dep){tarn__tile(tm, st.trow, k), TARN_READ_WRITE};
  d[2] = (tarn_dep){tarn__tile(a, st.top, k), TARN_READ_WRITE};
  struct qr_job g = {.m = rr,
                     .n = ck,
                     .ib = ibk,
                     .lda = (int)tarn__tile_rows(a, st.top),
                     .ldb = rr,
                     .ldt = (int)tm->mb,
                     .a = 2,
                     .b = 0,
                     .tt = 1};
  g.tall = by_rows(a, tr, st, rr, ck);
  if (st.top == st.row) {
    g.a = 0;
    return submit_job(a->rt, k_geqrt, &g, d, 2, PRIO_TOP, "geqrt");
  }
  if (!st.merge) return submit_job(a->rt, k_tpqrt, &g, d, 3, PRIO_TOP, "tpqrt");
  g.m = g.l = reflectors(a, k);
  return submit_job(a->rt, k_tpqrt_tt, &g, d, 3, PRIO_TOP, "tpqrt_tt");
}

/* Room for the deps of any step's task on a: a tpmqrt's four, a gathered
 * domain's apply 2 mt + 1 at most. */
static tarn_dep *step_deps(const tarn_matrix *a) {
  return malloc((2 * a->mt + 2) * sizeof(tarn_dep));
}

static int submit_qr(tarn_matrix *a, tarn_matrix *tm, size_t ib,
                     struct layout lay) {
  tarn_dep *deps = step_deps(a);
  if (deps == NULL) return TARN_ENOMEM;
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < panels(a); k++) {
    struct tree tr = tree_of(a, k, lay.fan, lay.gathered);
    int ibk = inner(a, k, ib);
    for (size_t i = 0; rc == 0 && i < tree_steps(&tr); i++) {
      struct qr_step st = tree_step(&tr, i);
      rc = submit_step_factor(a, tm, &tr, st, ibk, deps);
      for (size_t n = k + 1; rc == 0 && n < a->nt; n++)
        rc = submit_step_apply(a, tm, a, 'L', &tr, st, n, 'T', ibk,
                               column_priority(k, n), deps);
    }
  }
  free(deps);
  return rc;
}

/* Applies Q^T or Q (trans 'T' or 'N') to c: from the left (side 'L') to
 * its tile columns (c has A's row tiling), from the right ('R') to its
 * tile rows (c's column tiling is A's row tiling). Q^T from the left and
 * Q from the right take the reflectors in the order the factorisation
 * made them, the others in reverse order: tile column k's steps, each on
 * every line of c. With `from_k`, only c's tile columns from k on (forming
 * Q, whose columns left of k those reflectors leave as they are; from the
 * left only); else all. */
static int submit_apply(tarn_matrix *a, tarn_matrix *tm, tarn_matrix *c,
                        char side, char trans, bool from_k) {
  bool in_order = (side == 'R') == (trans == 'N');
  size_t lines = side == 'R' ? c->mt : c->nt;
  struct layout lay;
  if (!layout_of(a, tm, &lay)) return TARN_EINVAL; /* checked before */
  tarn_dep *deps = step_deps(a);
  if (deps == NULL) return TARN_ENOMEM;
  int rc = 0;
  for (size_t step = 0; rc == 0 && step < panels(a); step++) {
    size_t k = in_order ? step : panels(a) - 1 - step;
    struct tree tr = tree_of(a, k, lay.fan, lay.gathered);
    size_t steps = tree_steps(&tr);
    int ibk = inner(a, k, (size_t)tm->mb);
    for (size_t b = 0; rc == 0 && b < steps; b++) {
      struct qr_step st = tree_step(&tr, in_order ? b : steps - 1 - b);
      for (size_t j = from_k ? k : 0; rc == 0 && j < lines; j++)
        rc = submit_step_apply(a, tm, c, side, &tr, st, j, trans, ibk,
                               PRIO_TOP - 1, deps);
    }
  }
  free(deps);
  return rc;
}

/* Q (M x min(M, N), a's tiling) = H_0 ... H_{K-1} [I; 0]: the identity's
 * tiles, then the reflectors in reverse order on tile columns k.. of Q. */
static int submit_q(tarn_matrix *a, tarn_matrix *tm, tarn_matrix *q) {
  size_t mt = a->mt, nt = q->nt;
  for (size_t tj = 0; tj < nt; tj++)
    for (size_t ti = 0; ti < mt; ti++) {
      tarn_dep d = {tarn__tile(q, ti, tj), TARN_WRITE};
      struct qr_job e = {.m = (int)tarn__tile_rows(q, ti),
                         .n = (int)tarn__tile_cols(q, tj),
                         .k = (int)((long)(ti * q->mb) - (long)(tj * q->nb))};
      int rc = submit_job(a->rt, k_eye, &e, &d, 1, PRIO_TOP, "eye");
      if (rc != 0) return rc;
    }
  return submit_apply(a, tm, q, 'L', 'N', true);
}

/* ---- public -------------------------------------------------------------- */

/* Whether `a` is a matrix QR takes: square tiles, or one tile column no
 * wider than a tile is tall, or one tile row no taller than a tile is
 * wide (so that each diagonal tile starts on the diagonal); sizes LAPACK
 * can take. */
static bool qr_shape(const tarn_matrix *a) {
  return tarn__blas_sized(a) && a->n > 0 &&
         (a->mb == a->nb || (a->nt == 1 && a->mb >= a->nb) ||
          (a->mt == 1 && a->nb >= a->mb)) &&
         a->m <= INT_MAX && a->n <= INT_MAX;
}

/* Submits the tasks of `submit` in a region of its own and waits for them
 * all (tasks already submitted point at the matrices). */
static int run_waiting(tarn_rt *rt,
                       int (*submit)(tarn_matrix *, tarn_matrix *,
                                     tarn_matrix *),
                       tarn_matrix *a, tarn_matrix *b, tarn_matrix *c) {
  tarn_region *region = NULL;
  int rc = tarn_region_begin(rt, &region);
  if (rc != 0) return rc;
  int submitted = submit(a, b, c);
  rc = tarn_region_wait(region, NULL);
  return submitted != 0 ? submitted : rc;
}

/* The inner block size that ib 0 picks: 16 for a matrix 16 times as tall
 * as wide or more, else 32 (at most nb). A tall matrix's work is its
 * panels' (tpqrt, mostly level-2 within each block of ib columns, and T's
 * extra ib / 2 flops per element), where ib 16 took 65536 x 64 in tiles of
 * 64 on 2 workers to 49 to 52 ms from 60 to 62, 16384 x 128 in 128 to 17
 * to 20 from 21 to 24, and 16384 x 256 in 128 to 53 to 55 from 59 to 61;
 * the trailing updates (tpmqrt, level 3 by blocks of ib) are most of the
 * rest's, where ib 32 was as fast at 4096 x 1024 and 8192 x 2048 and
 * faster on square ones (2048 x 2048 in 128: 185 to 192 ms against 202
 * to 220; N=4096 in 512: 1256 to 1309 against 1336 to 1402). */
static size_t default_inner(const tarn_matrix *a) {
  size_t ib = a->m / 16 >= a->n ? 16 : 32;
  return a->nb < ib ? a->nb : ib;
}

/* Whether QR's largest tasks fit under the limit (tarn__task_fits), each
 * with a T tile of `tee` bytes: geqrt on the first tile; with two tile
 * rows, tpqrt on the first two of column 0; with two tile columns, its
 * gemqrt on tile (0, 1); with both, tpmqrt on tiles (0, 1) and (1, 1)
 * with the reflectors of tile (1, 0). */
static bool qr_fits(const tarn_matrix *a, size_t tee) {
  size_t a00 = tarn__tile_charge_at(a, 0, 0), a10 = 0, a01 = 0;
  bool fits = tarn__task_fits(a->rt, a00 + tee);
  if (a->mt >= 2) {
    a10 = tarn__tile_charge_at(a, 1, 0);
    fits = fits && tarn__task_fits(a->rt, a00 + a10 + tee);
  }
  if (a->nt >= 2) {
    a01 = tarn__tile_charge_at(a, 0, 1);
    fits = fits && tarn__task_fits(a->rt, a00 + a01 + tee);
  }
  if (a->mt >= 2 && a->nt >= 2)
    fits = fits && tarn__task_fits(
                       a->rt, a10 + a01 + tee + tarn__tile_charge_at(a, 1, 1));
  return fits;
}

/* The layout of a's factorisation on its runtime (T's tiles of tee
 * bytes): gathered with the runtime's fan (tree_fan), or else with the
 * first larger fan whose trees cut every domain down to what may be
 * gathered (gatherable: TARN__GATHER_BYTES_MAX; 16384 x 32 in tiles of 32
 * on 2 workers gets 4 domains of 4096 rows) and, under a memory limit,
 * to a largest task (applying a domain to another of A's tile columns)
 * of at most an eighth of it; else flat, with the runtime's fan. */
static struct layout layout_for(const tarn_matrix *a, size_t tee) {
  struct layout flat = {.fan = tree_fan(a, tarn_rt_workers(a->rt))};
  if (!atomic_load_explicit(&gather_short_columns, memory_order_relaxed))
    return flat;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  for (size_t f = flat.fan; f <= TREE_FAN && 2 * f - 1 < a->mt; f++) {
    if ((f != flat.fan && !trees(a, f)) || !gatherable(a, f)) continue;
    if (limit != 0 && gathered_apply_bytes(a, a, 'L', f, tee) > limit / 8)
      continue; /* a larger fan's domains may fit */
    return (struct layout){.fan = f, .gathered = true};
  }
  return flat;
}

int tarn_matrix_qr(tarn_matrix *a, size_t ib, tarn_matrix **t) {
  if (t != NULL) *t = NULL;
  if (t == NULL || !qr_shape(a) || ib > a->nb) return TARN_EINVAL;
  if (ib == 0) ib = default_inner(a);
  /* T's tiles: ib x nb */
  size_t tee = tarn__page_round(ib * tarn__tile_cols(a, 0) * sizeof(double));
  if (!qr_fits(a, tee)) return TARN_ENOMEM;
  struct layout lay = layout_for(a, tee);
  tarn__blas_init();
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  /* T's zeros in the region too, so that their tasks' failures are the
   * region's (the tiles with i < k are written by nothing else) */
  tarn_matrix *tm = NULL;
  size_t rows = (lay.gathered ? 2 * lay.fan - 1 : a->mt + lay.fan - 1) * ib;
  int submitted = tarn_matrix_zeros(a->rt, rows, a->n, ib, a->nb, &tm);
  if (submitted == 0) submitted = submit_qr(a, tm, ib, lay);
  rc = tarn_region_wait(region, NULL);
  if (submitted != 0) rc = submitted;
  if (rc != 0) {
    tarn_matrix_destroy(tm);
    return rc;
  }
  *t = tm;
  return 0;
}

/* Whether a (QR's factors) and t (their T factors) are what
 * tarn_matrix_qr makes: two matrices of one runtime, a of a shape QR
 * takes, t of the shape and tiling made for it. */
static bool qr_factors_ok(const tarn_matrix *a, const tarn_matrix *t) {
  struct layout lay;
  return qr_shape(a) && tarn__matrix_ok(t) && a != t && a->rt == t->rt &&
         t->n == a->n && t->nb == a->nb && t->mb != 0 && t->mb <= a->nb &&
         t->m == t->mt * t->mb && layout_of(a, t, &lay);
}

/* Whether applying Q (A's reflectors, T) to C from the left or the right
 * fits under the limit (tarn__task_fits): gemqrt with the first tile's
 * reflectors and T tile on one tile of C and, with two tile rows,
 * tpmqrt with tile (1, 0)'s on two (where tile row 1 is short, the
 * smaller of the two); with gathered domains, the largest domain's tiles
 * with C's first tile line over the same rows and a T tile (a merge's
 * tpmqrt pins less). */
static bool apply_fits(const tarn_matrix *a, const tarn_matrix *t,
                       const tarn_matrix *c, bool right) {
  struct layout lay;
  if (layout_of(a, t, &lay) && lay.gathered)
    return tarn__task_fits(
        a->rt, gathered_apply_bytes(a, c, right ? 'R' : 'L', lay.fan,
                                    tarn__tile_charge_at(t, 0, 0)));
  size_t c00 = tarn__tile_charge_at(c, 0, 0);
  bool fits = tarn__task_fits(a->rt, tarn__tile_charge_at(a, 0, 0) +
                                         tarn__tile_charge_at(t, 0, 0) + c00);
  if (a->mt >= 2)
    fits = fits &&
           tarn__task_fits(a->rt, tarn__tile_charge_at(a, 1, 0) +
                                      tarn__tile_charge_at(t, 1, 0) + c00 +
                                      tarn__tile_charge_at(c, !right, right));
  return fits;
}

int tarn_matrix_qr_q(tarn_matrix *a, tarn_matrix *t, tarn_matrix **q) {
  if (q != NULL) *q = NULL;
  if (q == NULL || !qr_factors_ok(a, t)) return TARN_EINVAL;
  tarn__blas_init();
  tarn_matrix *out = NULL;
  int rc = tarn__matrix_new(a->rt, a->m, a->m < a->n ? a->m : a->n, a->mb,
                            a->nb, &out);
  if (rc != 0) return rc;
  rc = apply_fits(a, t, out, false) ? run_waiting(a->rt, submit_q, a, t, out)
                                    : TARN_ENOMEM;
  if (rc != 0) {
    tarn_matrix_destroy(out);
    return rc;
  }
  *q = out;
  return 0;
}

/* Least squares: Y = Q^T Y (Y a copy of B, with A's row tiling), the
 * reflectors in the order the factorisation made them, on every tile
 * column of Y; then the backward solve R X = Y's first N rows into the
 * new X, whose trsm tasks check R's diagonal into *failed. */
static int submit_least_squares(tarn_matrix *a, tarn_matrix *tm, tarn_matrix *b,
                                tarn_matrix *x, atomic_int *failed) {
  tarn_matrix *y = NULL;
  int rc = tarn_matrix_copy(b, &y);
  if (rc == 0) rc = submit_apply(a, tm, y, 'L', 'T', false);
  if (rc == 0) rc = tarn__submit_backward(a, false, false, y, x, failed, true);
  tarn_matrix_destroy(y); /* its tiles go when their last task ends */
  return rc;
}

/* Tile (k, j) of Y (dep 0, m x n, ld m) = tile (k, j) of B (dep 1, k x n,
 * ld k) on top of zeros; all zeros when j->k is 0 (no dep 1). */
static int k_pad(tarn_task *t, void *arg) {
  const struct qr_job *j = arg;
  double *y = tarn_task_data(t, 0);
  const double *b = j->k > 0 ? tarn_task_data(t, 1) : NULL;
  size_t m = (size_t)j->m, k = (size_t)j->k;
  for (size_t c = 0; c < (size_t)j->n; c++) {
    if (k > 0) memcpy(y + c * m, b + c * k, k * sizeof *y);
    memset(y + c * m + k, 0, (m - k) * sizeof *y);
  }
  return 0;
}

/* Minimum norm: X = Q [R^-T B; 0] in the new X (M x nrhs, A's row tiling):
 * B's tiles on top of zeros, the forward solve R^T Y = B in place (its
 * trsm tasks check R's diagonal into *failed), then the reflectors in
 * reverse order, as in forming Q. */
static int submit_min_norm(tarn_matrix *a, tarn_matrix *tm, tarn_matrix *b,
                           tarn_matrix *x, atomic_int *failed) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < a->mt; k++)
    for (size_t j = 0; rc == 0 && j < x->nt; j++) {
      bool top = k < a->nt;
      tarn_dep d2[2] = {{tarn__tile(x, k, j), TARN_WRITE},
                        {top ? tarn__tile(b, k, j) : NULL, TARN_READ}};
      struct qr_job p = {.m = (int)tarn__tile_rows(x, k),
                         .n = (int)tarn__tile_cols(x, j),
                         .k = top ? (int)tarn__tile_rows(b, k) : 0};
      rc = submit_job(a->rt, k_pad, &p, d2, top ? 2 : 1, PRIO_TOP, "pad");
    }
  for (size_t k = 0; rc == 0 && k < a->nt; k++)
    for (size_t j = 0; rc == 0 && j < x->nt; j++)
      rc = tarn__submit_forward_step(a, TARN__UPPER_TRANS, x, k, j, failed,
                                     PRIO_TOP, PRIO_TOP - 1, 1);
  return rc != 0 ? rc : submit_apply(a, tm, x, 'L', 'N', false);
}

/* Whether a QR solve's largest tasks fit (tarn__task_fits), into X from
 * B. Least squares: B's copy Y (a tile of each), Q^T on Y (apply_fits),
 * the backward solve's trsm (R's first tile, a tile of Y and one of X; an
 * update's tiles, Y's (0, 0), R's (0, 1) and X's (1, 0), are no larger).
 * Minimum norm: B on top of zeros in X (a tile of each), the
 * forward solve's trsm (R's first tile, X's) and, with two tile columns,
 * an update (X's tiles (0, 0) and (1, 0), R's (0, 1)), Q on X. */
static bool qr_solve_fits(const tarn_matrix *a, const tarn_matrix *t,
                          const tarn_matrix *b, const tarn_matrix *x,
                          bool trans) {
  size_t a00 = tarn__tile_charge_at(a, 0, 0),
         b00 = tarn__tile_charge_at(b, 0, 0),
         x00 = tarn__tile_charge_at(x, 0, 0);
  bool two = a->nt >= 2 && x->mt >= 2;
  if (trans)
    return tarn__task_fits(a->rt, x00 + b00) &&
           tarn__task_fits(a->rt, a00 + x00) &&
           (!two ||
            tarn__task_fits(a->rt, x00 + tarn__tile_charge_at(a, 0, 1) +
                                       tarn__tile_charge_at(x, 1, 0))) &&
           apply_fits(a, t, x, false);
  return tarn__task_fits(a->rt, 2 * b00) && apply_fits(a, t, b, false) &&
         tarn__task_fits(a->rt, a00 + b00 + x00);
}

/* The QR solve of B in pieces of `cols` columns (linalg_internal.h,
 * tarn__solve_piece_cols): B copied into such tiles, solved into X in
 * them, and X copied into a new matrix of the tiling the call promises
 * (*x; NULL on failure). B is only read, as by tiles. */
static int qr_solve_in_pieces(tarn_matrix *a, tarn_matrix *t, tarn_trans ta,
                              tarn_matrix *b, size_t cols, tarn_matrix **x,
                              int *info) {
  tarn_matrix *pieces = NULL, *xp = NULL;
  int rc = tarn__retile_waiting(b, b->mb, cols, &pieces);
  if (rc == 0) rc = tarn_matrix_qr_solve(a, t, ta, pieces, &xp, info);
  if (rc == 0) rc = tarn__retile_waiting(xp, xp->mb, b->nb, x);
  tarn_matrix_destroy(pieces);
  tarn_matrix_destroy(xp);
  if (rc != 0) {
    tarn_matrix_destroy(*x);
    *x = NULL;
  }
  return rc;
}

int tarn_matrix_qr_solve(tarn_matrix *a, tarn_matrix *t, tarn_trans ta,
                         tarn_matrix *b, tarn_matrix **x, int *info) {
  if (x != NULL) *x = NULL;
  if (info != NULL) *info = 0;
  if (x == NULL || !qr_factors_ok(a, t) || a->m < a->n ||
      !tarn__blas_sized(b) || b == a || b == t || b->rt != a->rt ||
      (ta != TARN_NO_TRANS && ta != TARN_TRANS))
    return TARN_EINVAL;
  bool trans = ta == TARN_TRANS;
  /* B has op(A)'s rows in op(A)'s row tiling */
  if (b->m != (trans ? a->n : a->m) || b->mb != (trans ? a->nb : a->mb))
    return TARN_EINVAL;
  tarn__blas_init();
  tarn_matrix *out = NULL;
  int rc = tarn__matrix_new(a->rt, trans ? a->m : a->n, b->n,
                            trans ? a->mb : a->nb, b->nb, &out);
  if (rc != 0) return rc;
  if (!qr_solve_fits(a, t, b, out, trans)) {
    tarn_matrix_destroy(out);
    return TARN_ENOMEM;
  }
  size_t cols = tarn__solve_piece_cols(a, b);
  if (cols != 0) {
    tarn_matrix_destroy(out);
    return qr_solve_in_pieces(a, t, ta, b, cols, x, info);
  }
  tarn_region *region = NULL;
  rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    tarn_matrix_destroy(out);
    return rc;
  }
  atomic_int failed = 0;
  int submitted = trans ? submit_min_norm(a, t, b, out, &failed)
                        : submit_least_squares(a, t, b, out, &failed);
  if (submitted != 0) atomic_store(&failed, -1);
  rc = tarn__region_outcome(region, submitted, &failed, info);
  if (rc != 0) {
    tarn_matrix_destroy(out);
    return rc;
  }
  *x = out;
  return 0;
}

int tarn_matrix_qr_multiply(tarn_matrix *a, tarn_matrix *t, tarn_side side,
                            tarn_trans trans, tarn_matrix *c) {
  if (!qr_factors_ok(a, t) || !tarn__blas_sized(c) || c == a || c == t ||
      c->rt != a->rt || (side != TARN_LEFT && side != TARN_RIGHT) ||
      (trans != TARN_NO_TRANS && trans != TARN_TRANS))
    return TARN_EINVAL;
  /* From the left C has Q's rows in A's row tiling; from the right, Q's
   * rows as its columns, in that tiling */
  bool right = side == TARN_RIGHT;
  if ((right ? c->n : c->m) != a->m || (right ? c->nb : c->mb) != a->mb)
    return TARN_EINVAL;
  if (!apply_fits(a, t, c, right)) return TARN_ENOMEM;
  tarn__blas_init();
  return submit_apply(a, t, c, right ? 'R' : 'L',
                      trans == TARN_TRANS ? 'T' : 'N', false);
}

/* ---- A^T A ----------------------------------------------------------------
 */

/* Kept here with QR, its companion (normal equations versus QR). */

struct ata_job {
  int m, n, k;     /* C tile m x n, inner size k (rows of A's tiles used) */
  int r0, lda;     /* the first of those rows; the A tiles' rows */
  bool first;      /* beta 0: C not read */
  bool diagonal;   /* syrk on a diagonal tile / mirror of a diagonal tile */
  bool mirror;     /* the tile's last update: it mirrors the tile too */
  bool zero_upper; /* a diagonal tile's first update, not its last, under a
                      memory limit: its upper triangle zeroed (k_ata) */
};

/* A mirror task's tiles, shared by ranges of the written tile's columns. */
struct mirror_share {
  const struct ata_job *j;
  double *c;
  const double *s;
};

/* Columns [begin, end) of the upper part: of a diagonal tile's upper
 * triangle from its lower (reads only below the diagonal), or of tile
 * (j, i) = tile (i, j)^T. */
static int mirror_range(void *arg, size_t begin, size_t end) {
  const struct mirror_share *ms = arg;
  double *c = ms->c;
  size_t m = (size_t)ms->j->m, n = (size_t)ms->j->n;
  if (ms->j->diagonal) {
    for (size_t q = begin; q < end; q++)
      for (size_t i = 0; i < q; i++) c[i + q * n] = c[q + i * n];
    return 0;
  }
  for (size_t q = begin; q < end; q++)
    for (size_t i = 0; i < n; i++) c[i + q * n] = ms->s[q + i * m];
  return 0;
}

/* Columns of a tile below this many per range are not worth a helper. */
#define MIRROR_GRAIN 64

/* The upper part from the lower: a diagonal tile's upper triangle from its
 * lower (in c; s NULL), or tile (j, i) = tile (i, j)^T (c written, n x m;
 * s read, m x n); shared by columns. */
static int mirror_tile(tarn_task *t, const struct ata_job *j, double *c,
                       const double *s) {
  struct mirror_share ms = {j, c, s};
  return tarn_task_parallel_for(t, (size_t)(j->diagonal ? j->n : j->m),
                                MIRROR_GRAIN, mirror_range, &ms);
}

/* A mirror on its own: deps 0 (written) and 1 (read, off the diagonal). */
static int k_mirror(tarn_task *t, void *arg) {
  const struct ata_job *j = arg;
  return mirror_tile(t, j, tarn_task_data(t, 0),
                     j->diagonal ? NULL : tarn_task_data(t, 1));
}

/* Zeros the strictly upper triangle of the n x n tile c (ld n). */
static void zero_upper(double *c, int n) {
  for (size_t q = 1; q < (size_t)n; q++)
    memset(c + q * (size_t)n, 0, q * sizeof *c);
}

/* C(i, j) = A(k, i)^T A(k, j) + beta C(i, j) (deps: C, A(k, i), A(k, j));
 * on a diagonal tile syrk of its lower triangle (deps: C, A(k, i)); both
 * shared with idle workers. The last update of a tile then fills its
 * upper mirror while the tile is still in cache: a diagonal tile's upper
 * triangle, or tile (j, i) (dep 3, written). A diagonal tile's first
 * update (or a group's temporary's) writes a tile it does not read, of
 * which dsyrk fills the lower triangle: under a memory limit the upper
 * one is zeroed until the mirror fills it, so that a tile pushed out of
 * memory meanwhile takes no earlier object's bytes (its buffer's) to the
 * spill file (found by Valgrind's memcheck on examples/out_of_core: the
 * spill's pwrite of uninitialised bytes). On a 512 tile, 1 MiB of
 * stores, where a dsyrk of 128 rows does 34 million flops; without a
 * limit nothing leaves memory, and the mirror writes the triangle. */
static int k_ata(tarn_task *t, void *arg) {
  const struct ata_job *j = arg;
  double *c = tarn_task_data(t, 0);
  const double *ai = (const double *)tarn_task_data(t, 1) + j->r0;
  double beta = j->first ? 0.0 : 1.0;
  int rc;
  if (j->zero_upper) zero_upper(c, j->n);
  if (j->diagonal)
    rc = tarn__syrk_shared(t, CblasTrans, j->n, j->k, 1.0, ai, j->lda, beta, c,
                           j->n);
  else
    rc = tarn__gemm_shared(t, true, false, j->m, j->n, j->k, 1.0, ai, j->lda,
                           (const double *)tarn_task_data(t, 2) + j->r0, j->lda,
                           beta, c, j->m);
  if (rc != 0 || !j->mirror) return rc;
  return j->diagonal ? mirror_tile(t, j, c, NULL)
                     : mirror_tile(t, j, tarn_task_data(t, 3), c);
}

static int submit_ata_job(tarn_rt *rt, tarn_task_fn fn,
                          const struct ata_job *proto, const tarn_dep *deps,
                          size_t ndeps, int priority, const char *name) {
  return tarn__submit_owned(rt, fn, proto, sizeof *proto, deps, ndeps, priority,
                            name);
}

/* The priority of update k (of mt; or piece k of mt pieces) of C's tile
 * (i, j): the work left in that tile's chain of updates, in dsyrk tiles
 * (or pieces; a gemm's is twice a dsyrk's), so
 * that the longest chains run first among queued tasks. Workers start
 * what comes while the tasks are being submitted, so submit_ata also
 * submits the longest chains first: a 2 x 2 tile product (N=1024) that
 * started both diagonal chains before the off-diagonal one ran its last
 * gemm alone on one core while the other had nothing left, 8.2 to 8.3 ms
 * instead of 6.8 (in half the regions, traced in a program of its own). */
static int ata_priority(size_t k, size_t mt, bool diagonal) {
  size_t left = (mt - k) * (diagonal ? 1 : 2);
  return left > (size_t)INT_MAX ? INT_MAX : (int)left;
}

/* An update of C's tile (i, j), i >= j, by rows [r0, r1) of A's tile row
 * k: C(i, j) (+)= A(k, i)^T A(k, j) on those rows (beta 0 when `first`),
 * into `sum` instead when not NULL (a group's temporary, ata_groups);
 * with `mirror`, then the tile's mirror (its last update). */
static int submit_ata_update(tarn_matrix *a, tarn_matrix *c, tarn_ref *sum,
                             size_t i, size_t j, size_t k, size_t r0, size_t r1,
                             bool first, int priority, bool mirror) {
  bool diagonal = i == j;
  tarn_ref *out = sum != NULL ? sum : tarn__tile(c, i, j);
  tarn_dep d[4] = {{out, first ? TARN_WRITE : TARN_READ_WRITE},
                   {tarn__tile(a, k, i), TARN_READ},
                   {tarn__tile(a, k, j), TARN_READ},
                   {tarn__tile(c, j, i), TARN_WRITE}};
  struct ata_job g = {.m = (int)tarn__tile_cols(a, i),
                      .n = (int)tarn__tile_cols(a, j),
                      .k = (int)(r1 - r0),
                      .r0 = (int)r0,
                      .lda = (int)tarn__tile_rows(a, k),
                      .first = first,
                      .diagonal = diagonal,
                      .mirror = mirror,
                      .zero_upper = diagonal && first && !mirror &&
                                    tarn_pool_mem_limit(tarn_rt_pool(a->rt))};
  size_t ndeps = diagonal ? 2 : mirror ? 4 : 3;
  return submit_ata_job(a->rt, k_ata, &g, d, ndeps, priority,
                        diagonal ? "syrk" : "gemm");
}

/* The updates of C's tile (i, j), i >= j, by the mt tile rows of A, each
 * in `split` pieces of its rows (the empty ones left out), the last of
 * which mirrors it while the tile is in cache: a 512 tile's transpose took
 * about 0.45 ms there, and 1.3 ms in a mirror task of its own, which ran
 * at the end, once the tile had left the cache. */
static int submit_ata_tile(tarn_matrix *a, tarn_matrix *c, size_t i, size_t j,
                           size_t split) {
  int rc = 0;
  size_t steps = a->mt * split;
  bool first = true;
  for (size_t s = 0; rc == 0 && s < steps; s++) {
    size_t k = s / split, piece = s % split, rows = tarn__tile_rows(a, k);
    size_t r0 = piece * rows / split, r1 = (piece + 1) * rows / split;
    if (r1 == r0) continue; /* never the last piece: r0 < rows there */
    rc = submit_ata_update(a, c, NULL, i, j, k, r0, r1, first,
                           ata_priority(s, steps, i == j), s + 1 == steps);
    first = false;
  }
  return rc;
}

/* Under a memory limit that C's lower triangle and one layer of updates (a
 * tile row of A) do not fit in (tarn__limit_blocks): C's lower tiles by
 * square blocks of b x b tiles, block column by block column, each block
 * layer by layer, as tarn_matrix_gemm goes, so that a block stays resident
 * while A's tile rows stream through once per block instead of every tile
 * of C being written out and read back for its next update. A^T A of 2048
 * x 2048 in tiles of 64 under 16 MB (C's triangle is 17 MiB) read 2,450
 * to 2,490 tiles back instead of 8,800 to 12,800 tile by tile (the
 * chains' order, as in core), in 1.4 to 1.8 s instead of 2.3 to 4.3. */
static int submit_ata_blocks(tarn_matrix *a, tarn_matrix *c, size_t b) {
  size_t nt = a->nt, layer = 0;
  int rc = 0;
  for (size_t j0 = 0; rc == 0 && j0 < nt; j0 += b)
    for (size_t i0 = j0; rc == 0 && i0 < nt; i0 += b, layer += a->mt) {
      size_t i1 = i0 + b < nt ? i0 + b : nt, j1 = j0 + b < nt ? j0 + b : nt;
      for (size_t k = 0; rc == 0 && k < a->mt; k++)
        for (size_t j = j0; rc == 0 && j < j1; j++)
          for (size_t i = i0 > j ? i0 : j; rc == 0 && i < i1; i++)
            rc = submit_ata_update(a, c, NULL, i, j, k, 0,
                                   tarn__tile_rows(a, k), k == 0,
                                   tarn__layer_priority(layer + k), false);
    }
  return rc;
}

int tarn__submit_mirror(tarn_matrix *c) {
  for (size_t j = 0; j < c->nt; j++)
    for (size_t i = j; i < c->nt; i++) {
      tarn_dep d[2] = {
          {tarn__tile(c, j, i), i == j ? TARN_READ_WRITE : TARN_WRITE},
          {tarn__tile(c, i, j), TARN_READ}};
      struct ata_job g = {.m = (int)tarn__tile_cols(c, i),
                          .n = (int)tarn__tile_cols(c, j),
                          .diagonal = i == j};
      int rc =
          submit_ata_job(c->rt, k_mirror, &g, d, i == j ? 1 : 2, 0, "mirror");
      if (rc != 0) return rc;
    }
  return 0;
}

/* A tile row's updates of a tile of C are split by rows into this many
 * pieces at most, each of ATA_PIECE_ROWS rows at least (a dgemm of 512 x
 * 512 by 128 runs as fast as by 512). */
#define ATA_SPLIT_MAX 4
#define ATA_PIECE_ROWS 128

/* Pieces per tile row of A in the updates of C's tiles: 1, or more when
 * C's lower triangle has fewer tiles than twice the workers (but more than
 * one), so that the chains of updates, one per tile of C and of unequal
 * lengths (a gemm tile is twice a syrk tile), end nearly together: in a 2
 * x 2 tile product each worker otherwise ends with a whole update, the
 * other idle. N=1024 in tiles of 512 on 2 workers: 13.0 to 13.3 ms in
 * pieces of 128 rows against 13.5 to 14.1 whole (medians of 41 products,
 * three alternated runs, 2026-12-04); N=1536 and 2048 in tiles of 512 and
 * N=1024 in tiles of 256 gained nothing from pieces. */
static size_t ata_split(const tarn_matrix *a) {
  size_t tiles = a->nt * (a->nt + 1) / 2;
  if (a->nt < 2 || tiles >= 2 * (size_t)tarn_rt_workers(a->rt)) return 1;
  size_t split = a->mb / ATA_PIECE_ROWS;
  return split < 1 ? 1 : split > ATA_SPLIT_MAX ? ATA_SPLIT_MAX : split;
}

/* C's tile (i, j) = the sum of a group's temporary per dep 1 .. j->k (a
 * diagonal tile's lower triangle only: dsyrk writes no more), then its
 * mirror (dep j->k + 1 off the diagonal). */
static int k_ata_sum(tarn_task *t, void *arg) {
  const struct ata_job *j = arg;
  double *c = tarn_task_data(t, 0);
  for (size_t g = 1; g <= (size_t)j->k; g++)
    tarn__tile_add(c, tarn_task_data(t, g), (size_t)j->m, (size_t)j->n,
                   j->diagonal);
  return j->diagonal
             ? mirror_tile(t, j, c, NULL)
             : mirror_tile(t, j, tarn_task_data(t, (size_t)j->k + 1), c);
}

/* Groups of A's tile rows for C's chains of updates (tarn__layer_groups
 * over C's lower tiles): A^T A of a tall, narrow A is one chain per tile
 * of C, mt updates long, and a chain shares each update's kernel with
 * idle workers, but a 128 x 128 dsyrk is little to share. */
static size_t ata_groups(const tarn_matrix *a) {
  return tarn__layer_groups(a->nt * (a->nt + 1) / 2, a->mt,
                            tarn_rt_workers(a->rt));
}

/* A tile (i, j) of C in groups (tarn__submit_grouped). */
struct ata_group {
  tarn_matrix *a, *c;
  size_t i, j;
};

static int ata_group_layer(void *ctx, size_t k, size_t k0, size_t k1,
                           tarn_ref *sum) {
  const struct ata_group *ag = ctx;
  return submit_ata_update(
      ag->a, ag->c, sum, ag->i, ag->j, k, 0, tarn__tile_rows(ag->a, k), k == k0,
      ata_priority(k - k0, k1 - k0, ag->i == ag->j), false);
}

/* The sum, which also mirrors the tile (tile (j, i) written off the
 * diagonal). */
static int ata_group_sum(void *ctx, tarn_dep *deps, size_t temps) {
  const struct ata_group *ag = ctx;
  bool diagonal = ag->i == ag->j;
  if (!diagonal)
    deps[temps + 1] = (tarn_dep){tarn__tile(ag->c, ag->j, ag->i), TARN_WRITE};
  struct ata_job s = {.m = (int)tarn__tile_cols(ag->a, ag->i),
                      .n = (int)tarn__tile_cols(ag->a, ag->j),
                      .k = (int)temps,
                      .diagonal = diagonal,
                      .mirror = true};
  return submit_ata_job(ag->a->rt, k_ata_sum, &s, deps,
                        temps + 1 + (diagonal ? 0 : 1), 0, "sum");
}

/* C's tile (i, j) in `groups` groups of A's tile rows side by side: the
 * first into the tile, each other into a temporary of its own (a pool
 * ref, freed as the sum ends), then one task adds them into the tile and
 * mirrors it. */
static int submit_ata_grouped(tarn_matrix *a, tarn_matrix *c, size_t i,
                              size_t j, size_t groups) {
  struct ata_group ag = {a, c, i, j};
  size_t bytes = tarn__tile_cols(a, i) * tarn__tile_cols(a, j) * sizeof(double);
  return tarn__submit_grouped(a->rt, tarn__tile(c, i, j), bytes, a->mt, groups,
                              ata_group_layer, ata_group_sum, &ag);
}

/* The tiles off the diagonal first (their chains are twice as long), then
 * the diagonal's, each mirrored by its last update; under a memory limit
 * that C does not fit in, by blocks (submit_ata_blocks), then the mirrors
 * as tasks of their own (a last update that also wrote the mirror would
 * pin one more tile than the blocks are sized for). */
static int submit_ata(tarn_matrix *a, tarn_matrix *c) {
  size_t nt = a->nt;
  double nd = (double)nt;
  double ctile = (double)tarn__tile_charge(c);
  double atile = (double)tarn__tile_charge(a);
  double lower = nd * (nd + 1) / 2 * ctile;
  size_t bm, bn, groups = ata_groups(a);
  int rc = 0;
  /* groups, when their temporaries fit beside C under a limit */
  if (groups > 1 &&
      !tarn__limit_blocks(a->rt,
                          lower * (double)groups + (double)groups * nd * atile,
                          ctile, atile, atile, nt, nt, &bm, &bn)) {
    for (size_t j = 0; rc == 0 && j < nt; j++)
      for (size_t i = j; rc == 0 && i < nt; i++)
        rc = submit_ata_grouped(a, c, i, j, groups);
    return rc;
  }
  if (tarn__limit_blocks(a->rt, lower + nd * atile, ctile, atile, atile, nt, nt,
                         &bm, &bn)) {
    rc = submit_ata_blocks(a, c, bm < bn ? bm : bn);
    return rc == 0 ? tarn__submit_mirror(c) : rc;
  }
  size_t split = ata_split(a);
  for (size_t j = 0; rc == 0 && j < nt; j++)
    for (size_t i = j + 1; rc == 0 && i < nt; i++)
      rc = submit_ata_tile(a, c, i, j, split);
  for (size_t j = 0; rc == 0 && j < nt; j++)
    rc = submit_ata_tile(a, c, j, j, split);
  return rc;
}

/* Whether A^T A's largest tasks under a limit fit (tarn__task_fits) with
 * C = `c`: an update of C's tile (0, 0) with A's tile (0, 0) and, with
 * two tile columns, of C's tile (1, 0) with A's (0, 0) and (0, 1) (where
 * tile column 1 is narrow, the smaller of the two), and the mirror of C's
 * tile (1, 0) into (0, 1) (the largest where A's tile rows are short;
 * every way of submitting has a task that pins both: the blocks' mirror
 * tasks, an update that mirrors, a group's sum). */
static bool ata_fits(const tarn_matrix *a, const tarn_matrix *c) {
  size_t a00 = tarn__tile_charge_at(a, 0, 0);
  bool fits = tarn__task_fits(a->rt, tarn__tile_charge_at(c, 0, 0) + a00);
  if (a->nt >= 2) {
    size_t c10 = tarn__tile_charge_at(c, 1, 0);
    fits = fits &&
           tarn__task_fits(a->rt, c10 + a00 + tarn__tile_charge_at(a, 0, 1)) &&
           tarn__task_fits(a->rt, c10 + tarn__tile_charge_at(c, 0, 1));
  }
  return fits;
}

int tarn_matrix_syrk_ata(tarn_matrix *a, tarn_matrix **c) {
  if (c != NULL) *c = NULL;
  if (c == NULL || !tarn__blas_sized(a)) return TARN_EINVAL;
  tarn__blas_init();
  tarn_matrix *out = NULL;
  int rc = tarn__matrix_new(a->rt, a->n, a->n, a->nb, a->nb, &out);
  if (rc == 0 && !ata_fits(a, out)) rc = TARN_ENOMEM;
  /* an update: a tile of C (nb x nb) from a tile row of A (mb) */
  size_t work =
      rc != 0 ? 0
              : tarn__work_tile(a->rt, a->n, a->n, a->m,
                                (double)a->nb * (double)a->nb * (double)a->mb,
                                (tarn_matrix *[]){a, out}, 2, 'F');
  if (work != 0) {
    rc = tarn__ata_work(a, work, &out);
  } else if (rc == 0) {
    rc = submit_ata(a, out);
  }
  if (rc != 0) {
    tarn_matrix_destroy(out);
    return rc;
  }
  *c = out;
  return 0;
}
