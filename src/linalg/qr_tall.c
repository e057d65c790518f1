/* qr_tall.c: the QR of one tall, narrow tile, or of a triangle on top of
 * one (as dtpqrt), shared with idle workers by units of rows (qr.c's
 * geqrt and tpqrt kernels call it for such a tile: see
 * tarn__qr_tall_wanted). LAPACK's dgeqrt factors such a tile by blocks of
 * ib columns, each block by dgeqrt3 and its update of the columns right
 * of it by dlarfb, on the calling thread alone: a tall matrix held as one
 * tile was factored on one core. Here the whole tile is factored as
 * dgeqrt3 factors a block, recursively (the left half, its reflectors
 * applied to the right half, the right half, then the T block that joins
 * them), and the products over the tile's rows are shared: those that
 * reduce over rows (V^T C) as one partial product per unit of UNIT_ROWS
 * rows, summed in unit order on the calling thread; those that update
 * rows (C -= V W, a column scaled) by units. The units are fixed by row
 * number, so the factors do not depend on the workers; they differ from
 * LAPACK's in the last bits (the sums go in another order). Invariant,
 * when done: A holds R on and above its diagonal and the reflectors V
 * below (unit diagonal implied), or for a pair the triangle holds R and
 * the tile V (the reflectors' top part the identity), and T's block of
 * every ib columns is the block of the full T that LAPACK's blocks would
 * have (a T of a run of reflectors is the diagonal block of the T of a
 * longer run), as dgeqrt and dtpqrt leave them. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/linalg_internal.h"

/* Rows of a unit: a partial product per unit of a reduction. */
#define UNIT_ROWS 4096

/* A tile from this many rows on, under TALL_COLUMNS_MAX columns, goes
 * this way (tarn__qr_tall_wanted). */
#define TALL_ROWS 16384
#define TALL_COLUMNS_MAX 128

/* The tile being factored: m x n at a (lda), below the n x n upper
 * triangle at r (ldr) when r is not NULL (a pair, as dtpqrt), the full
 * n x n T at t (ldt n), and a partial product per unit (unit_count(m)
 * of them, `room` doubles each). A reflector of column c is e_c + v below the
 * diagonal in the tile's column c (alone: V unit lower trapezoidal), or
 * e_c in the triangle + the tile's whole column c (a pair: V's top part
 * the identity). */
struct tall_qr {
  tarn_task *task;
  double *a, *r, *t, *partial;
  size_t m, n, lda, ldr, room;
};

/* A product over rows [r0, m) of an m-row matrix X (p columns at x, ldx,
 * or `cols` for the _NN and _NT kinds) and Y (at y, ldy: m rows of
 * `cols` columns; for the _NN and _NT kinds p rows of m columns, a unit
 * of X's rows being one of Y's columns), by units (see unit_rows):
 * PRODUCT_TN: partial u = X_u^T Y_u (p x cols); UPDATE: Y_u -= X_u W (W
 * p x cols at w, ldw); PRODUCT_NN: partial u = Y_u X_u (p x cols);
 * UPDATE_NT: Y_u -= W X_u^T (W p x cols); SCALE: Y's first column times
 * s; NORM: partial u = the 2-norm of X's first column. */
enum unit_kind { PRODUCT_TN, UPDATE, PRODUCT_NN, UPDATE_NT, SCALE, NORM };

struct unit_op {
  const struct tall_qr *q;
  enum unit_kind kind;
  size_t r0, p, cols, ldx, ldy, ldw;
  const double *x, *w;
  double *y;
  double s;
};

/* The units of m rows, the first unit of rows from r0, and rows
 * [*begin, *end) of unit u. */
static size_t unit_count(size_t m) { return (m - 1) / UNIT_ROWS + 1; }

static size_t first_unit(size_t r0) { return r0 / UNIT_ROWS; }

static void unit_rows(const struct unit_op *op, size_t u, size_t *begin,
                      size_t *end) {
  size_t b = u * UNIT_ROWS, e = b + UNIT_ROWS;
  *begin = b > op->r0 ? b : op->r0;
  *end = e < op->q->m ? e : op->q->m;
}

/* Units [first + begin, first + end) of op (first: the unit of op->r0). */
static int unit_range(void *arg, size_t begin, size_t end) {
  const struct unit_op *op = arg;
  const struct tall_qr *q = op->q;
  size_t first = first_unit(op->r0);
  for (size_t u = first + begin; u < first + end; u++) {
    size_t r, e;
    unit_rows(op, u, &r, &e);
    int rows = (int)(e - r), ldx = (int)op->ldx, ldy = (int)op->ldy;
    bool across = op->kind == PRODUCT_NN || op->kind == UPDATE_NT;
    const double *x = op->x != NULL ? op->x + r : NULL;
    double *y = op->y != NULL ? op->y + (across ? r * op->ldy : r) : NULL;
    double *part = q->partial + u * q->room;
    switch (op->kind) {
      case PRODUCT_TN:
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)op->p,
                    (int)op->cols, rows, 1.0, x, ldx, y, ldy, 0.0, part,
                    (int)op->p);
        break;
      case UPDATE:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows,
                    (int)op->cols, (int)op->p, -1.0, x, ldx, op->w,
                    (int)op->ldw, 1.0, y, ldy);
        break;
      case PRODUCT_NN:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)op->p,
                    (int)op->cols, rows, 1.0, y, ldy, x, ldx, 0.0, part,
                    (int)op->p);
        break;
      case UPDATE_NT:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)op->p, rows,
                    (int)op->cols, -1.0, op->w, (int)op->ldw, x, ldx, 1.0, y,
                    ldy);
        break;
      case SCALE:
        cblas_dscal(rows, op->s, y, 1);
        break;
      case NORM:
        *part = cblas_dnrm2(rows, x, 1);
        break;
    }
  }
  return 0;
}

/* Runs op over its units, shared with idle workers. */
static int units_run(const struct unit_op *op) {
  size_t count = unit_count(op->q->m) - first_unit(op->r0);
  return tarn_task_parallel_for(op->q->task, count, 1, unit_range, (void *)op);
}

/* out (p x q, ldo) += the partial products of the units from row r0 on,
 * in unit order. */
static void partial_sum(const struct tall_qr *q, size_t r0, size_t p,
                        size_t cols, double *out, size_t ldo) {
  for (size_t u = first_unit(r0); u < unit_count(q->m); u++) {
    const double *part = q->partial + u * q->room;
    for (size_t c = 0; c < cols; c++)
      for (size_t i = 0; i < p; i++) out[i + c * ldo] += part[i + c * p];
  }
}

/* The reflector of column c, as dlarfg: alpha the diagonal element (of
 * the triangle, for a pair), x the tile's rows below it (all of them, for
 * a pair); its tau to *tau. The norm of x is the units' norms
 * combined (scaled by the largest, against overflow); a beta so small
 * that dlarfg would rescale x goes to dlarfg itself, on this thread. */
static int reflector(const struct tall_qr *q, size_t c, double *tau) {
  double *alpha = q->r != NULL ? q->r + c + c * q->ldr : q->a + c + c * q->lda;
  size_t x0 = q->r != NULL ? 0 : c + 1; /* x: rows x0 .. m - 1 of column c */
  *tau = 0.0;
  if (x0 >= q->m) return 0;
  double *col = q->a + c * q->lda;
  struct unit_op op = {.q = q, .kind = NORM, .r0 = x0, .x = col};
  int rc = units_run(&op);
  if (rc != 0) return rc;
  /* a unit's NaN norm is the largest, so that it reaches beta, tau and
   * x as in dlarfg (where dnrm2 gives NaN), even when it is x's only
   * element that is not zero */
  double big = 0.0, sum = 0.0;
  for (size_t u = first_unit(x0); u < unit_count(q->m); u++) {
    double v = q->partial[u * q->room];
    if (v > big || isnan(v)) big = v;
    if (isnan(v)) break;
  }
  if (big == 0.0) return 0;
  for (size_t u = first_unit(x0); u < unit_count(q->m) && !isinf(big); u++) {
    double v = q->partial[u * q->room] / big;
    sum += v * v;
  }
  /* an infinite unit norm: x's norm is infinite, as dnrm2 gives it (the
   * scaled sum was inf / inf, and R's diagonal NaN where dgeqrt's is
   * infinite) */
  double xnorm = isinf(big) ? big : big * sqrt(sum);
  double beta = -copysign(hypot(*alpha, xnorm), *alpha);
  if (fabs(beta) < DBL_MIN / (DBL_EPSILON / 2)) { /* dlarfg's safmin */
    lapack_int info = LAPACKE_dlarfg_work((lapack_int)(q->m - x0 + 1), alpha,
                                          q->a + x0 + c * q->lda, 1, tau);
    return info == 0 ? 0 : TARN_EINVAL;
  }
  *tau = (beta - *alpha) / beta;
  op = (struct unit_op){
      .q = q, .kind = SCALE, .r0 = x0, .y = col, .s = 1.0 / (*alpha - beta)};
  rc = units_run(&op);
  *alpha = beta;
  return rc;
}

/* Runs op over rows [r0, m) of the tile, when there are any, and adds
 * its partial products (PRODUCT_TN, PRODUCT_NN) to out (op->p x op->cols,
 * ldo). */
static int rows_run(struct unit_op *op, size_t r0, double *out, size_t ldo) {
  if (r0 >= op->q->m) return 0;
  op->r0 = r0;
  int rc = units_run(op);
  if (rc == 0 && (op->kind == PRODUCT_TN || op->kind == PRODUCT_NN))
    partial_sum(op->q, r0, op->p, op->cols, out, ldo);
  return rc;
}

/* QR of columns [c0, c0 + n) from row c0 down (a pair: of those columns
 * of the triangle and the tile), as dgeqrt3 (dtpqrt's blocks, by the same
 * recursion): T of their reflectors (n x n, upper) at t (ldt q->n). */
static int factor(const struct tall_qr *q, size_t c0, size_t n, double *t) {
  if (n == 1) return reflector(q, c0, t);
  size_t n1 = n / 2, n2 = n - n1, c1 = c0 + n1, ldt = q->n, lda = q->lda;
  bool pair = q->r != NULL;
  /* V1's top part (alone: its unit lower triangle in the tile's rows c0
   * .. c1; a pair: the identity) and A2's rows c0 .. c1 (the triangle's
   * for a pair) */
  double *v1 = q->a + c0 + c0 * lda;
  size_t ld2 = pair ? q->ldr : lda;
  double *a2 = pair ? q->r + c0 + c1 * ld2 : q->a + c0 + c1 * lda;
  double *t12 = t + n1 * ldt, *t22 = t + n1 + n1 * ldt;
  int rc = factor(q, c0, n1, t);
  if (rc != 0) return rc;
  /* W = V1^T A2 in T12's place: V1's top part on A2's rows c0 .. c1,
   * then the tile's rows below, by units */
  for (size_t j = 0; j < n2; j++)
    memcpy(t12 + j * ldt, a2 + j * ld2, n1 * sizeof *t12);
  if (!pair)
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasUnit,
                (int)n1, (int)n2, 1.0, v1, (int)lda, t12, (int)ldt);
  struct unit_op op = {.q = q,
                       .kind = PRODUCT_TN,
                       .x = q->a + c0 * lda,
                       .ldx = lda,
                       .y = q->a + c1 * lda,
                       .ldy = lda,
                       .p = n1,
                       .cols = n2};
  if ((rc = rows_run(&op, pair ? 0 : c1, t12, ldt)) != 0) return rc;
  /* A2 -= V1 T1^T W */
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit,
              (int)n1, (int)n2, 1.0, t, (int)ldt, t12, (int)ldt);
  op.kind = UPDATE;
  op.w = t12;
  op.ldw = ldt;
  if ((rc = rows_run(&op, pair ? 0 : c1, NULL, 0)) != 0) return rc;
  if (!pair)
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit,
                (int)n1, (int)n2, 1.0, v1, (int)lda, t12, (int)ldt);
  for (size_t j = 0; j < n2; j++)
    for (size_t i = 0; i < n1; i++) a2[i + j * ld2] -= t12[i + j * ldt];
  rc = factor(q, c1, n2, t22);
  if (rc != 0) return rc;
  /* T12 = -T1 V1^T V2 T2: alone, V1's rows c1 .. c1 + n2 on V2's
   * triangle (a pair: the identities' product, zero), then the tile's
   * rows below, by units */
  for (size_t j = 0; j < n2; j++)
    for (size_t i = 0; i < n1; i++)
      t12[i + j * ldt] = pair ? 0.0 : v1[n1 + j + i * lda];
  if (!pair)
    cblas_dtrmm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasUnit,
                (int)n1, (int)n2, 1.0, q->a + c1 + c1 * lda, (int)lda, t12,
                (int)ldt);
  op.kind = PRODUCT_TN;
  if ((rc = rows_run(&op, pair ? 0 : c0 + n, t12, ldt)) != 0) return rc;
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit,
              (int)n1, (int)n2, -1.0, t, (int)ldt, t12, (int)ldt);
  cblas_dtrmm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit,
              (int)n1, (int)n2, 1.0, t22, (int)ldt, t12, (int)ldt);
  return 0;
}

/* C = op(Q) C (from the left) or C op(Q) (from the right) by rows of the
 * reflectors (tarn__qr_tall_apply): block [i, i + kb) of the reflectors
 * at v (ldv), its T at tb (ldt), on C at c (ldc): from the left its rows,
 * from the right its columns, i .. m alone or 0 .. m for a pair, ncols
 * of the other; for a pair also rows (columns) i .. i + kb of the top at
 * top (ldtop). W at w is kb x ncols from the left, ncols x kb from the
 * right. As dlarfb and dtprfb: from the left W = V^T C, W = op(T) W,
 * C -= V W; from the right W = C V, W = W op(T), C -= W V^T. */
static int apply_block(const struct tall_qr *q, bool right, bool trans,
                       const double *v, size_t ldv, const double *tb,
                       size_t ldt, size_t i, size_t kb, double *top,
                       size_t ldtop, double *c, size_t ncols, size_t ldc,
                       double *w) {
  bool pair = top != NULL;
  const double *vb = v + i * ldv; /* the block's columns, from row 0 */
  /* the part of C the block's top part meets: the top's, or C's own */
  size_t ldct = pair ? ldtop : ldc;
  double *ctop = (pair ? top : c) + (right ? i * ldct : i);
  size_t wm = right ? ncols : kb, wn = right ? kb : ncols, ldw = wm;
  CBLAS_SIDE side = right ? CblasRight : CblasLeft;
  for (size_t j = 0; j < wn; j++)
    memcpy(w + j * ldw, ctop + j * ldct, wm * sizeof *w);
  /* W = V1^T W, or W V1: the unit lower triangle on top of the block */
  if (!pair)
    cblas_dtrmm(CblasColMajor, side, CblasLower,
                right ? CblasNoTrans : CblasTrans, CblasUnit, (int)wm, (int)wn,
                1.0, vb + i, (int)ldv, w, (int)ldw);
  struct unit_op op = {.q = q,
                       .kind = right ? PRODUCT_NN : PRODUCT_TN,
                       .x = vb,
                       .ldx = ldv,
                       .y = c,
                       .ldy = ldc,
                       .p = wm,
                       .cols = wn,
                       .w = w,
                       .ldw = ldw};
  int rc = rows_run(&op, pair ? 0 : i + kb, w, ldw);
  if (rc != 0) return rc;
  cblas_dtrmm(CblasColMajor, side, CblasUpper,
              trans ? CblasTrans : CblasNoTrans, CblasNonUnit, (int)wm, (int)wn,
              1.0, tb, (int)ldt, w, (int)ldw);
  op.kind = right ? UPDATE_NT : UPDATE;
  if ((rc = rows_run(&op, pair ? 0 : i + kb, NULL, 0)) != 0) return rc;
  if (!pair)
    cblas_dtrmm(CblasColMajor, side, CblasLower,
                right ? CblasTrans : CblasNoTrans, CblasUnit, (int)wm, (int)wn,
                1.0, vb + i, (int)ldv, w, (int)ldw);
  for (size_t j = 0; j < wn; j++)
    for (size_t r = 0; r < wm; r++) ctop[r + j * ldct] -= w[r + j * ldw];
  return 0;
}

int tarn__qr_tall_apply(tarn_task *task, bool right, bool trans,
                        const double *v, size_t ldv, size_t k, size_t ib,
                        const double *tt, size_t ldt, double *top, size_t ldtop,
                        double *c, size_t m, size_t ncols, size_t ldc) {
  size_t units = unit_count(m), step = ib > 0 ? ib : k;
  size_t room = step * ncols;
  bool heap;
  double *mem =
      tarn__task_memory(task, (units + 1) * room * sizeof *mem, &heap);
  if (mem == NULL) return TARN_ENOMEM;
  struct tall_qr q = {
      .task = task, .partial = mem + room, .m = m, .room = room};
  size_t blocks = (k + step - 1) / step;
  /* Q = H_1 ... H_k: Q^T C and C Q take the blocks forwards, Q C and
   * C Q^T backwards */
  bool forwards = trans != right;
  int rc = 0;
  for (size_t b = 0; rc == 0 && b < blocks; b++) {
    size_t i = (forwards ? b : blocks - 1 - b) * step;
    size_t kb = k - i < step ? k - i : step;
    rc = apply_block(&q, right, trans, v, ldv, tt + i * ldt, ldt, i, kb, top,
                     ldtop, c, ncols, ldc, mem);
  }
  if (heap) free(mem);
  return rc;
}

bool tarn__qr_tall_wanted(size_t m, size_t n) {
  return m >= TALL_ROWS && n >= 2 && n <= TALL_COLUMNS_MAX;
}

int tarn__qr_tall(tarn_task *task, double *r, size_t ldr, double *a, size_t m,
                  size_t n, size_t lda, double *tt, size_t ldt, size_t ib) {
  size_t units = unit_count(m), half = n / 2;
  size_t room = half * (n - half) > 1 ? half * (n - half) : 1;
  size_t doubles = n * n + units * room;
  bool heap;
  double *mem = tarn__task_memory(task, doubles * sizeof *mem, &heap);
  if (mem == NULL) return TARN_ENOMEM;
  memset(mem, 0, n * n * sizeof *mem);
  struct tall_qr q = {.task = task,
                      .a = a,
                      .r = r,
                      .ldr = ldr,
                      .t = mem,
                      .partial = mem + n * n,
                      .m = m,
                      .n = n,
                      .lda = lda,
                      .room = room};
  int rc = factor(&q, 0, n, q.t);
  /* T's diagonal blocks of ib columns, where LAPACK puts its blocks' */
  size_t step = ib > 0 ? ib : n;
  for (size_t i = 0; rc == 0 && i < n; i += step) {
    size_t w = n - i < step ? n - i : step;
    for (size_t j = 0; j < w; j++)
      memcpy(tt + (i + j) * ldt, q.t + i + (i + j) * n, w * sizeof *tt);
  }
  if (heap) free(mem);
  return rc;
}
