/* linalg.c: tiled linear algebra (see tarn/linalg.h): gemm and Cholesky,
 * and what the linalg modules share (linalg_internal.h). Each tile kernel
 * is one task calling OpenBLAS/LAPACKE on pinned tiles (column-major, ld =
 * the tile's own row count, see array/matrix_internal.h); each task owns a
 * small job struct freed by the runtime when it is done. OpenBLAS is set
 * to one thread once, on the first call. The tile kernels share their
 * work with idle workers (tarn_task_parallel_for): gemm by columns or
 * rows of C, trsm by the independent rows or columns of B, syrk by the
 * diagonal blocks and the block below them of C's lower triangle, and a
 * large potrf by blocks of columns (dpotrf on the diagonal block, then a
 * shared trsm and syrk). */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "rt/rt_internal.h"
#include "tarn/linalg.h"

/* In libopenblas (not every cblas.h declares it). */
extern void openblas_set_num_threads(int);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single_thread(void) { openblas_set_num_threads(1); }

void tarn__blas_init(void) { pthread_once(&blas_once, blas_single_thread); }

bool tarn__blas_sized(const tarn_matrix *a) {
  return tarn__matrix_ok(a) && a->mb <= INT_MAX && a->nb <= INT_MAX;
}

bool tarn__line_fits(const tarn_matrix *m, bool row) {
  size_t count = row ? m->nt : m->mt, charge = 0;
  for (size_t t = 0; t < count; t++)
    charge +=
        row ? tarn__tile_charge_at(m, 0, t) : tarn__tile_charge_at(m, t, 0);
  return tarn__task_fits(m->rt, charge);
}

/* What the pool charges for tile (i, j) of the lower form of a's
 * triangle: tile (i, j), or (j, i) of an upper one. */
static size_t triangle_charge(const tarn_matrix *a, bool lower, size_t i,
                              size_t j) {
  return lower ? tarn__tile_charge_at(a, i, j) : tarn__tile_charge_at(a, j, i);
}

bool tarn__triangle_fits(const tarn_matrix *a, bool lower) {
  size_t t00 = triangle_charge(a, lower, 0, 0);
  bool fits = tarn__task_fits(a->rt, t00);
  if (a->nt >= 2) {
    size_t t10 = triangle_charge(a, lower, 1, 0);
    fits = fits && tarn__task_fits(a->rt, t00 + t10) &&
           tarn__task_fits(a->rt, triangle_charge(a, lower, 1, 1) + t10);
    if (a->nt >= 3)
      fits = fits &&
             tarn__task_fits(a->rt, triangle_charge(a, lower, 2, 0) +
                                        triangle_charge(a, lower, 2, 1) + t10);
  }
  return fits;
}

int tarn__region_outcome(tarn_region *region, int submitted, atomic_int *failed,
                         int *info) {
  /* Always wait: tasks already submitted point at `failed`. */
  int rc = tarn_region_wait(region, NULL);
  int order = atomic_load(failed);
  if (submitted != 0) return submitted;
  if (order > 0) {
    if (info != NULL) *info = order;
    /* A singular matrix's TARN_EINVAL leaves the right-hand sides as they
     * were; a task that failed for want of memory or disk may not have
     * (one that was to skip its tile still pinned it: rule 4 of rt.h
     * leaves the tile cancelled), and says so. */
    if (rc != 0 && rc != TARN_EINVAL && rc != TARN_ECANCELED) return rc;
    return TARN_EINVAL;
  }
  return rc;
}

void tarn__tile_column_copy(tarn_task *t, size_t slot0, size_t tb, size_t rows,
                            size_t col0, size_t cols, double *block,
                            bool to_tiles) {
  for (size_t i = 0; i * tb < rows; i++) {
    size_t h = rows - i * tb < tb ? rows - i * tb : tb;
    double *tile = (double *)tarn_task_data(t, slot0 + i) + col0 * h;
    double *at = block + i * tb;
    for (size_t c = 0; c < cols; c++)
      memcpy(to_tiles ? tile + c * h : at + c * rows,
             to_tiles ? at + c * rows : tile + c * h, h * sizeof *tile);
  }
}

int tarn__submit_owned(tarn_rt *rt, tarn_task_fn fn, const void *proto,
                       size_t size, const tarn_dep *deps, size_t ndeps,
                       int priority, const char *name) {
  void *arg = malloc(size);
  if (arg == NULL) return TARN_ENOMEM;
  memcpy(arg, proto, size);
  tarn_task_desc d = {.fn = fn,
                      .arg = arg,
                      .deps = deps,
                      .ndeps = ndeps,
                      .priority = priority,
                      .name = name,
                      .arg_free = free};
  return tarn_task_submit(rt, &d);
}

/* What one tile task needs; owned by the task. */
struct job {
  int m, n, k;       /* the tile op's sizes (BLAS meaning) */
  int lda, ldb, ldc; /* leading dimensions of the tiles */
  bool ta, tb;       /* gemm: transpose A, B */
  double alpha, beta;
  size_t sa, sb, sc; /* task data slots of A, B, C */
  size_t offset;     /* potrf: the tile's first row in the matrix */
  atomic_int *info;  /* potrf: where a failure's order goes */
};

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct job *proto,
                      const tarn_dep *deps, size_t ndeps, int priority,
                      const char *name) {
  return tarn__submit_owned(rt, fn, proto, sizeof *proto, deps, ndeps, priority,
                            name);
}

/* ---- tile kernels shared with idle workers ------------------------------ */

/* Below this many multiply-adds a kernel is one plain call: a helper would
 * cost about what it saves. */
#define SHARE_MIN_MADDS ((double)(1 << 18))

/* While the runtime finds its first two workers' processors far apart
 * (tarn__task_far: they share no cache), a kernel is shared only from
 * this many multiply-adds (512 x 512 x 128; share_min), and neither a
 * region's last one-column product nor its last few vectors are split
 * (tarn__gemm_shared, triangle_shared): every line a helper reads or
 * writes then crosses the chip. On the 2-vCPU machine of 2026-12-07 in
 * such minutes (a round trip of 343 to 366 ns against 62 to 96), a 256 x
 * 256 LU inverse in a region of its own took 1126 to 1284 us with every
 * kernel shared as before and 736 to 975 with none (530 and 740 near);
 * at N = 1024 in 512 tiles sharing still paid (Cholesky 5.0 to 6.4 ms
 * against 8.7 to 8.9, the LU inverse 18.1 to 21.6 against 20.8 to 22.9).
 * But a product that is its region's last task (tarn__task_last) is
 * shared as near: it reads operands no task is writing, and writes its
 * halves of C where it wrote them the time before. A 256 x 256 product
 * alone in its region took 332 us shared in far minutes and 672 on one
 * core, where the rule as first made left it (329 shared when near;
 * LAPACKE's two threads 518 far and 348 near: the medians of 201 in the
 * 45 of 400 rounds whose round trip read far and in the 355 others, a
 * program outside the repository, 2026-12-07). This rule against
 * sharing as near: docs/linalg.md, "Cores far apart". */
#define FAR_SHARE_MIN_MADDS ((double)(1 << 25))

/* The least multiply-adds a kernel of task `t` shares. */
static double share_min(tarn_task *t) {
  return tarn__task_far(t) ? FAR_SHARE_MIN_MADDS : SHARE_MIN_MADDS;
}

/* Ranges below this many rows or columns are not worth a helper. */
#define SHARE_GRAIN 64

/* A one-column update's tile (a matrix-vector product's task on one tile
 * of y, gemv.c, and the solves' with one right-hand side) is shared from
 * GEMV_SHARE_MIN multiply-adds (a 2048 x 2048 tile), and from
 * GEMV_LAST_SHARE_MIN (256 x 256) when its task is the last of its region
 * (tarn__task_last): see tarn__gemm_shared. */
#define GEMV_SHARE_MIN ((double)(1 << 22))
#define GEMV_LAST_SHARE_MIN ((double)(1 << 16))

/* OpenBLAS's dgemv takes a process-wide lock for its work buffer unless
 * the buffer (rows + columns + 16 doubles, rounded up to 4) fits the stack
 * allowance it was built with (MAX_STACK_ALLOC: 2048 bytes in Debian's
 * build, so rows + columns <= 240). Two threads in dgemv at once then wait
 * for each other: outside tarn, two threads each computing 128 rows of a
 * 256 x 256 product took 5.1 to 5.3 us per product in one call each, 3.0
 * to 3.1 in three calls of 128 x 112 or less each (one thread on the whole
 * product: 4.8 us in one call, 5.2 in six). So a small product is split
 * into calls that take no lock when other workers may be in BLAS too, as
 * when it is shared (tarn__gemm_shared): not when its task is alone
 * (tarn__task_alone) and keeps its work (an unshared region's only product,
 * `tarn bench linalg --sizes 256 --filter matvec`: N=256 matvec 6.08-6.28
 * -> 5.06-5.62 us against LAPACKE's 4.6-4.9, three alternated runs,
 * 2026-12-02). */
#define GEMV_STACK_SUM 240      /* rows + columns of a call without the lock */
#define GEMV_PIECE_ROWS 128     /* rows of each such call */
#define GEMV_PIECES_MAX 8       /* calls per product at most */
#define GEMV_PIECES_MADDS 65536 /* multiply-adds of a product at most */

/* y = alpha op(A) x + beta y as cblas_dgemv (A m x n as stored, y unit
 * stride), in calls that take no lock (see above) when `pieces` and the
 * product is small. */
static void dgemv_call(bool pieces, bool trans, int m, int n, double alpha,
                       const double *a, int lda, const double *x, int incx,
                       double beta, double *y) {
  int rows = m < GEMV_PIECE_ROWS ? m : GEMV_PIECE_ROWS;
  int cols = GEMV_STACK_SUM - rows;
  CBLAS_TRANSPOSE op = trans ? CblasTrans : CblasNoTrans;
  if (!pieces || m < 1 || n < 1 || m + n <= GEMV_STACK_SUM ||
      (double)m * n > GEMV_PIECES_MADDS ||
      ((m + rows - 1) / rows) * ((n + cols - 1) / cols) > GEMV_PIECES_MAX) {
    cblas_dgemv(CblasColMajor, op, m, n, alpha, a, lda, x, incx, beta, y, 1);
    return;
  }
  for (int i = 0; i < m; i += rows)
    for (int j = 0; j < n; j += cols) {
      int r = m - i < rows ? m - i : rows, c = n - j < cols ? n - j : cols;
      /* Each part of y gets beta from its first call only. */
      bool first = trans ? i == 0 : j == 0;
      cblas_dgemv(CblasColMajor, op, r, c, alpha,
                  a + i + (size_t)j * (size_t)lda, lda,
                  x + (size_t)(trans ? i : j) * (size_t)incx, incx,
                  first ? beta : 1.0, y + (trans ? j : i), 1);
    }
}

/* A gemm's operands, shared by ranges of C's columns, or of its rows when
 * C is at least twice as tall as wide, in one range per worker. Columns
 * cost less when the ranges run side by side: halves of a 512 x 512 x 512
 * dgemm on the two cores took 3.66 to 3.97 ms by columns against 3.85 to
 * 4.24 by rows (NN, NT, TN, TT), of 256 x 256 x 256 0.49 to 0.55 against
 * 0.61 to 0.68 (medians of 60; a program outside the repository,
 * 2026-12-03). Four ranges instead of two cost more calls for no gain: a
 * helper that is idle joins within a microsecond. One region of
 * `tarn_matrix_gemm` on one 256 tile, side by side with OpenBLAS's two
 * threads in one process, went from 1.08 to 1.13x of its time (four
 * ranges by rows) to 0.88 to 0.91x (three alternated runs of 400). (Run
 * one after another on one core, quarters by rows had cost less than by
 * columns: 5.75 against 6.35 ms at 512, 2026-12-02.) */
struct gemm_share {
  bool ta, tb, by_rows;
  bool pieces; /* dgemv in calls without OpenBLAS's lock (dgemv_call) */
  int m, n, k, lda, ldb, ldc;
  double alpha, beta;
  const double *a, *b;
  double *c;
};

/* Columns or rows [begin, end) of C = alpha op(A) op(B) + beta C. */
static int gemm_range(void *arg, size_t begin, size_t end) {
  const struct gemm_share *g = arg;
  size_t lda = (size_t)g->lda, ldb = (size_t)g->ldb, ldc = (size_t)g->ldc;
  const double *a = g->a, *b = g->b;
  double *c = g->c;
  int m = g->m, n = g->n;
  if (g->by_rows) { /* rows of op(A) and C */
    a += g->ta ? begin * lda : begin;
    c += begin;
    m = (int)(end - begin);
  } else { /* columns of op(B) and C */
    b += g->tb ? begin : begin * ldb;
    c += begin * ldc;
    n = (int)(end - begin);
  }
  if (n == 1) { /* a matrix-vector product: gemv streams A once, gemm
                 * would pack it first */
    dgemv_call(g->pieces, g->ta, g->ta ? g->k : m, g->ta ? m : g->k, g->alpha,
               a, g->lda, b, g->tb ? g->ldb : 1, g->beta, c);
    return 0;
  }
  cblas_dgemm(CblasColMajor, g->ta ? CblasTrans : CblasNoTrans,
              g->tb ? CblasTrans : CblasNoTrans, m, n, g->k, g->alpha, a,
              g->lda, b, g->ldb, g->beta, c, g->ldc);
  return 0;
}

int tarn__gemm_shared(tarn_task *t, bool ta, bool tb, int m, int n, int k,
                      double alpha, const double *a, int lda, const double *b,
                      int ldb, double beta, double *c, int ldc) {
  struct gemm_share g = {.ta = ta,
                         .tb = tb,
                         .by_rows = n == 1 || m >= 2 * n,
                         .m = m,
                         .n = n,
                         .k = k,
                         .lda = lda,
                         .ldb = ldb,
                         .ldc = ldc,
                         .alpha = alpha,
                         .beta = beta,
                         .a = a,
                         .b = b,
                         .c = c};
  size_t count = (size_t)(g.by_rows ? m : n);
  /* A matrix-vector product (n == 1) is bound by memory, not arithmetic:
   * halves of a tile's rows on two cores stream from memory no faster than
   * one core streams the whole tile (at N=4096 in 512 tiles, sharing them
   * took 4 to 8 ms instead of 3), and where other tasks keep the cores
   * busy, even products read from cache lose when shared (N=1024 in 512
   * tiles, a task per tile of y and layer: 65 us a product against 55
   * when every task shared). But the last task of a region has the other
   * cores to itself, and halves of a product that stays in the caches
   * (a 256 x 256 tile in the cores' own, the 512 tiles of a factor of
   * order 1024 in the L3 they share) finish sooner, in calls without
   * OpenBLAS's lock (`pieces`): a region of one 256 x 256
   * product took 4.4 to 5.4 us against 5.4 to 7.2, and with one
   * right-hand side the solves of order 1024 in 512 tiles (one task,
   * tarn__column_solve) 58 to 61 us against 64 to 66 (triangular, in
   * two runs of three), 118 to 125 against 134 to 142 (LU), 127 to 137
   * against 137 to 148 (Cholesky: medians of six rounds of 401,
   * alternated in one process; a program outside the repository,
   * 2026-12-07). Sharing whenever the other workers were idle instead
   * (tarn__task_alone) gained nothing in the solves (63 us triangular,
   * 133 to 140 LU) and slowed the products of order 1024 (59 us against
   * 55). One range per worker: two of 128 rows took 4.0 to 4.4 us a
   * region where four of 64 took 4.7 to 5.6 (`tarn bench linalg --sizes
   * 256 --filter matvec`). docs/linalg.md, "The last task's product
   * shared". */
  double madds = (double)m * n * k;
  bool share = n == 1 ? madds >= GEMV_SHARE_MIN ||
                            (madds >= GEMV_LAST_SHARE_MIN &&
                             tarn__task_last(t) && !tarn__task_far(t))
                      : madds >= SHARE_MIN_MADDS &&
                            (madds >= share_min(t) || tarn__task_last(t));
  size_t workers = tarn_rt_workers(tarn_task_rt(t));
  /* only a matrix-vector product calls dgemv (gemm_range) */
  g.pieces = n == 1 && workers > 1 && (share || !tarn__task_alone(t));
  if (!share) return gemm_range(&g, 0, count);
  /* one range per worker (see struct gemm_share), at least SHARE_GRAIN */
  if (workers < 2) workers = 2; /* the waiting thread and its worker */
  size_t grain = (count + workers - 1) / workers;
  if (grain < SHARE_GRAIN) grain = SHARE_GRAIN;
  return tarn_task_parallel_for(t, count, grain, gemm_range, &g);
}

/* A trsm's or trmm's operands, shared by ranges of B's columns (left
 * side: each column is solved or multiplied alone) or rows (right side). */
struct trsm_share {
  CBLAS_SIDE side;
  CBLAS_UPLO uplo;
  CBLAS_TRANSPOSE trans;
  CBLAS_DIAG diag;
  int m, n, ldt, ldb;
  double alpha;
  const double *tri;
  double *b;
};

/* The triangle's order up to which trsm_blocked calls dtrsm itself. Not
 * more: dtrsm on a short, wide right-hand side (the left side's leaves) is
 * slower than the small dgemm updates that replace it. On a 512 tile, one
 * core: left side 35 to 38 GFLOP/s with 8, 30 to 32 with 32 (and 24 for
 * dtrsm alone); right side 50 either way. */
#define TRSM_BASE 8

/* op(T) X = B (left) or X op(T) = B (right), X over B, T of order m (left)
 * or n (right). OpenBLAS's dtrsm runs at under half the rate of its dgemm
 * here (29 against 66 GFLOP/s on a 512 tile), so the solve is blocked
 * recursively, as LAPACK's blocked solvers are: the triangle is split in
 * two, one half solved, the other half's right-hand side updated by one
 * dgemm with the off-diagonal block, the other half solved. Down to
 * TRSM_BASE most of the work is dgemm (35 to 50 GFLOP/s on a 512 tile). The
 * rounding is that of a blocked substitution, the same as dtrsm's own
 * blocking, within the same bounds. */
static void trsm_blocked(CBLAS_SIDE side, CBLAS_UPLO uplo,
                         CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
                         const double *t, int ldt, double *b, int ldb) {
  bool left = side == CblasLeft;
  int order = left ? m : n;
  if (order <= TRSM_BASE || (left ? n : m) == 0) {
    cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, n, 1.0, t, ldt, b,
                ldb);
    return;
  }
  int h = (order / 2 + 7) / 8 * 8; /* 8-aligned for the kernels */
  const double *t11 = t, *t22 = t + h + (size_t)h * ldt;
  /* op(T)'s off-diagonal block is op(off): T21 of a lower T, T12 of an
   * upper one. op(T) is upper when T is upper and not transposed, or lower
   * and transposed: its first half is then solved last. */
  const double *off = uplo == CblasLower ? t + h : t + (size_t)h * ldt;
  bool upper = (uplo == CblasUpper) == (trans == CblasNoTrans);
  int r = order - h;
  if (left) { /* B's rows split h / r */
    double *b1 = b, *b2 = b + h;
    if (upper) {
      trsm_blocked(side, uplo, trans, diag, r, n, t22, ldt, b2, ldb);
      cblas_dgemm(CblasColMajor, trans, CblasNoTrans, h, n, r, -1.0, off, ldt,
                  b2, ldb, 1.0, b1, ldb);
      trsm_blocked(side, uplo, trans, diag, h, n, t11, ldt, b1, ldb);
    } else {
      trsm_blocked(side, uplo, trans, diag, h, n, t11, ldt, b1, ldb);
      cblas_dgemm(CblasColMajor, trans, CblasNoTrans, r, n, h, -1.0, off, ldt,
                  b1, ldb, 1.0, b2, ldb);
      trsm_blocked(side, uplo, trans, diag, r, n, t22, ldt, b2, ldb);
    }
    return;
  }
  double *b1 = b, *b2 = b + (size_t)h * ldb; /* B's columns split h / r */
  if (upper) {
    trsm_blocked(side, uplo, trans, diag, m, h, t11, ldt, b1, ldb);
    cblas_dgemm(CblasColMajor, CblasNoTrans, trans, m, r, h, -1.0, b1, ldb, off,
                ldt, 1.0, b2, ldb);
    trsm_blocked(side, uplo, trans, diag, m, r, t22, ldt, b2, ldb);
  } else {
    trsm_blocked(side, uplo, trans, diag, m, r, t22, ldt, b2, ldb);
    cblas_dgemm(CblasColMajor, CblasNoTrans, trans, m, h, r, -1.0, b2, ldb, off,
                ldt, 1.0, b1, ldb);
    trsm_blocked(side, uplo, trans, diag, m, h, t11, ldt, b1, ldb);
  }
}

/* Whether `rhs` right-hand sides of a triangle of order `order` are solved
 * faster one vector at a time by dtrsv than by trsm_blocked: a vector's
 * blocked solve is some 60 small calls, each paying OpenBLAS's call and
 * dtrsm's packing. Left side, one core, a region of one
 * tarn_matrix_triangular_solve on one tile (medians of four rounds of 401,
 * alternated in one process, 2026-12-07): 1 vector 25.2 us by dtrsv
 * against 34.5 blocked on a 512 tile, 7.7 against 10.2 on 256; but 2
 * vectors 42.5 against 32.2 blocked (256: 14.6 against 11.6; 128: 6.0
 * against 5.1), 3 70.0 against 54.9, 4 98.0 against 48.2. Until then
 * up to 2 vectors, and up to order / 128, went by dtrsv, from figures of
 * 2026-12-01 whose blocked solves were three to four times slower (a 512
 * tile, 2 vectors: 118 us). The right side's blocked solve was faster
 * from 4 vectors: at 256, 10.7 by dtrsv against 16.6 blocked for 2, 21.3
 * against 15.9 for 4 (2026-12-01). */
static bool by_vectors(bool left, int order, int rhs) {
  return order > TRSM_BASE && rhs > 0 && (left ? rhs == 1 : rhs <= 2);
}

void tarn__trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans,
                CBLAS_DIAG diag, int m, int n, double alpha, const double *tri,
                int ldt, double *b, int ldb) {
  /* alpha B first, as dtrsm does (zeros, not 0 * B, for alpha 0). */
  if (alpha != 1.0)
    for (int j = 0; j < n; j++) {
      double *col = b + (size_t)j * ldb;
      if (alpha == 0.0)
        memset(col, 0, (size_t)m * sizeof *col);
      else
        cblas_dscal(m, alpha, col, 1);
    }
  if (alpha == 0.0) return;
  bool left = side == CblasLeft;
  if (!by_vectors(left, left ? m : n, left ? n : m)) {
    trsm_blocked(side, uplo, trans, diag, m, n, tri, ldt, b, ldb);
    return;
  }
  if (left) /* op(T) x = b for each column of B */
    for (int j = 0; j < n; j++)
      cblas_dtrsv(CblasColMajor, uplo, trans, diag, m, tri, ldt,
                  b + (size_t)j * ldb, 1);
  else /* x op(T) = b for each row: op(T)^T x^T = b^T */
    for (int i = 0; i < m; i++)
      cblas_dtrsv(CblasColMajor, uplo,
                  trans == CblasNoTrans ? CblasTrans : CblasNoTrans, diag, n,
                  tri, ldt, b + i, ldb);
}

/* Columns (left) or rows (right) [begin, end) of B: their first element,
 * and B's sizes narrowed to them in *m and *n. */
static double *b_range(const struct trsm_share *s, size_t begin, size_t end,
                       int *m, int *n) {
  *m = s->m;
  *n = s->n;
  if (s->side == CblasLeft) {
    *n = (int)(end - begin);
    return s->b + begin * (size_t)s->ldb;
  }
  *m = (int)(end - begin);
  return s->b + begin;
}

/* The solve on columns (left) or rows (right) [begin, end) of B. */
static int trsm_range(void *arg, size_t begin, size_t end) {
  const struct trsm_share *s = arg;
  int m, n;
  double *b = b_range(s, begin, end, &m, &n);
  tarn__trsm(s->side, s->uplo, s->trans, s->diag, m, n, s->alpha, s->tri,
             s->ldt, b, s->ldb);
  return 0;
}

/* B = alpha op(T) B (left) or alpha B op(T) (right) on columns (left) or
 * rows (right) [begin, end) of B: each is its own product, so the split
 * does not change the bits. */
static int trmm_range(void *arg, size_t begin, size_t end) {
  const struct trsm_share *s = arg;
  int m, n;
  double *b = b_range(s, begin, end, &m, &n);
  cblas_dtrmm(CblasColMajor, s->side, s->uplo, s->trans, s->diag, m, n,
              s->alpha, s->tri, s->ldt, b, s->ldb);
  return 0;
}

/* `range` (trsm_range, trmm_range) over all of B, split with idle workers
 * by columns (left) or rows (right) when the triangle's work is large. */
static int triangle_shared(tarn_task *t, tarn_range_fn range, CBLAS_SIDE side,
                           CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans,
                           CBLAS_DIAG diag, int m, int n, double alpha,
                           const double *tri, int ldt, double *b, int ldb) {
  struct trsm_share s = {.side = side,
                         .uplo = uplo,
                         .trans = trans,
                         .diag = diag,
                         .m = m,
                         .n = n,
                         .ldt = ldt,
                         .ldb = ldb,
                         .alpha = alpha,
                         .tri = tri,
                         .b = b};
  bool left = side == CblasLeft;
  size_t count = (size_t)(left ? n : m);
  double side_len = left ? m : n; /* the triangle's order */
  if ((double)m * n * side_len / 2 < share_min(t)) return range(&s, 0, count);
  /* A few vectors (no more than the workers) of a region's last task go
   * one a worker, each a solve by dtrsv (by_vectors; a trmm's, one
   * dtrmm): two vectors of an order-512 triangle took 25.8 us a region
   * against 33.6 on one core, the LU and Cholesky solves of order 1024
   * in 512 tiles with two right-hand sides 193 and 190 us against 227
   * and 242 (medians of four rounds of 401, alternated in one process,
   * 2026-12-07). Two vectors a worker, each pair blocked, lost to one
   * blocked call: 473 us against 333 for LU's solve with four. */
  size_t grain = SHARE_GRAIN;
  if (count >= 2 && count <= tarn_rt_workers(tarn_task_rt(t)) &&
      tarn__task_last(t) && !tarn__task_far(t))
    grain = 1;
  return tarn_task_parallel_for(t, count, grain, range, &s);
}

int tarn__trsm_shared(tarn_task *t, CBLAS_SIDE side, CBLAS_UPLO uplo,
                      CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
                      double alpha, const double *tri, int ldt, double *b,
                      int ldb) {
  return triangle_shared(t, trsm_range, side, uplo, trans, diag, m, n, alpha,
                         tri, ldt, b, ldb);
}

int tarn__trmm_shared(tarn_task *t, CBLAS_SIDE side, CBLAS_UPLO uplo,
                      CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
                      double alpha, const double *tri, int ldt, double *b,
                      int ldb) {
  return triangle_shared(t, trmm_range, side, uplo, trans, diag, m, n, alpha,
                         tri, ldt, b, ldb);
}

/* A syrk's operands, shared by pieces of C's lower triangle: with C11 and
 * C22 its diagonal blocks of order n1 and n - n1, C21 (n - n1 x n1) holds
 * half of the work and each of them a quarter. Pieces [0, gemms) are
 * column ranges of C21 (dgemm), piece gemms is C11, gemms + 1 is C22
 * (dsyrk); largest first. */
struct syrk_share {
  CBLAS_TRANSPOSE trans;
  int n, k, lda, ldc;
  int n1;       /* C11's order */
  size_t gemms; /* the pieces of C21 */
  double alpha, beta;
  const double *a;
  double *c;
};

/* Rows [r, n) of op(A): its first element. */
static const double *syrk_rows(const struct syrk_share *s, int r) {
  return s->trans == CblasNoTrans ? s->a + r : s->a + (size_t)r * s->lda;
}

/* The lower triangle of C (n x n) = alpha op(A) op(A)^T + beta C: one
 * dsyrk. Splitting it recursively (C11 and C22 the same way, C21 by one
 * dgemm, down to order 128), as tarn did before, ran slower on every shape
 * tarn asks for, on one core of the Intel VM of 2026-12-03 (GFLOP/s, one
 * dsyrk against split): order 512 with k 512 47.5 against 38.1, its
 * transpose 39.4 against 33.4, 1024 40.2 against 32.7, 448 with k 64 (a
 * potrf's update) 38.3 against 33.3, 256 with k 256 32.7 against 28.5
 * (/tmp programs alternating the two, docs/linalg.md). An earlier VM of
 * this project had run the split 7 % faster at 512; one dsyrk keeps
 * OpenBLAS's own blocking, without the split's narrow dgemms. */
static void syrk_lower(CBLAS_TRANSPOSE trans, int n, int k, double alpha,
                       const double *a, int lda, double beta, double *c,
                       int ldc) {
  cblas_dsyrk(CblasColMajor, CblasLower, trans, n, k, alpha, a, lda, beta, c,
              ldc);
}

/* The lower triangle of the diagonal block of C at [r0, r1). */
static void syrk_diagonal(const struct syrk_share *s, int r0, int r1) {
  syrk_lower(s->trans, r1 - r0, s->k, s->alpha, syrk_rows(s, r0), s->lda,
             s->beta, s->c + r0 + (size_t)r0 * s->ldc, s->ldc);
}

/* Pieces [begin, end) of C's lower triangle (all of it by syrk_lower when
 * the range is every piece). */
static int syrk_range(void *arg, size_t begin, size_t end) {
  const struct syrk_share *s = arg;
  if (begin == 0 && end == s->gemms + 2) {
    syrk_diagonal(s, 0, s->n);
    return 0;
  }
  CBLAS_TRANSPOSE other = s->trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
  for (size_t p = begin; p < end; p++) {
    if (p == s->gemms) {
      syrk_diagonal(s, 0, s->n1);
    } else if (p == s->gemms + 1) {
      syrk_diagonal(s, s->n1, s->n);
    } else { /* columns [c0, c1) of C21 */
      int c0 = (int)((size_t)s->n1 * p / s->gemms);
      int c1 = (int)((size_t)s->n1 * (p + 1) / s->gemms);
      cblas_dgemm(CblasColMajor, s->trans, other, s->n - s->n1, c1 - c0, s->k,
                  s->alpha, syrk_rows(s, s->n1), s->lda, syrk_rows(s, c0),
                  s->lda, s->beta, s->c + s->n1 + (size_t)c0 * s->ldc, s->ldc);
    }
  }
  return 0;
}

int tarn__syrk_shared(tarn_task *t, CBLAS_TRANSPOSE trans, int n, int k,
                      double alpha, const double *a, int lda, double beta,
                      double *c, int ldc) {
  /* C21 in as many pieces as there are workers besides those that take
   * C11 and C22 (one at least). */
  size_t workers = tarn_rt_workers(tarn_task_rt(t));
  struct syrk_share s = {.trans = trans,
                         .n = n,
                         .k = k,
                         .lda = lda,
                         .ldc = ldc,
                         .n1 = n / 2,
                         .gemms = workers > 3 ? workers - 2 : 1,
                         .alpha = alpha,
                         .beta = beta,
                         .a = a,
                         .c = c};
  size_t pieces = s.gemms + 2;
  if ((double)n * n * k / 2 < share_min(t) || n < 2 * SHARE_GRAIN)
    return syrk_range(&s, 0, pieces);
  return tarn_task_parallel_for(t, pieces, 1, syrk_range, &s);
}

/* Tiles from this order on are factored by blocks of POTRF_NB columns,
 * their updates shared. Below it one dpotrf: a tile of 256 took 1.04x
 * LAPACKE's one-thread time in one call against 1.11x to 1.20x by shared
 * blocks (`tarn bench linalg --sizes 256 --filter cholesky`, medians of
 * three alternated runs of each build, 2026-12-06); 320 came out level
 * and 384 by blocks 0.76x against 1.00x in one call (--sizes 320, 384). */
#define POTRF_BLOCKED 300
#define POTRF_NB 64

/* A blocked potrf's state (tarn__potrf_shared): the tile, the block
 * [k, k + w) just factored (its column below solved too), the next
 * block's width, where the columns the step shares begin, and LAPACK's
 * info. */
struct potrf_la {
  double *a;
  int n, lda;
  int k, w, next, far;
  int info;
};

/* Columns [c0, c1) of the trailing matrix, right of block [k, k + w):
 * their lower part less L(c0.., k..k+w) L(c0..c1, k..k+w)^T, by a syrk on
 * the diagonal block and a dgemm below it. */
static void potrf_update(const struct potrf_la *p, int c0, int c1) {
  size_t ld = (size_t)p->lda;
  const double *l = p->a + (size_t)p->k * ld; /* column k, row 0 */
  int cols = c1 - c0, below = p->n - c1;
  syrk_lower(CblasNoTrans, cols, p->w, -1.0, l + c0, p->lda, 1.0,
             p->a + c0 + (size_t)c0 * ld, p->lda);
  if (below > 0)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, below, cols, p->w,
                -1.0, l + c1, p->lda, l + c0, p->lda, 1.0,
                p->a + c1 + (size_t)c0 * ld, p->lda);
}

/* The order (from 1) of the first of the factored columns [0, w) of a
 * block whose pivot, now on the diagonal, is a NaN; 0 when none is. */
static int first_nan_pivot(const double *akk, int lda, int w) {
  for (int j = 0; j < w; j++)
    if (isnan(akk[j + (size_t)j * (size_t)lda])) return j + 1;
  return 0;
}

/* Factors block [k, k + w) (dpotrf, one plain call) and, when it is
 * positive definite, solves the column below it, L21 = A21 L11^-T (shared
 * when `t` is not NULL). Returns 0 with p->info set when the block is not
 * positive definite, or TARN_EINVAL, or a status of the sharing.
 *
 * A NaN pivot counts as not positive definite, as in LAPACK's dpotrf
 * (its DISNAN test): OpenBLAS's own dpotrf fails only on a pivot <= 0
 * and factors on through a NaN, which then spreads to every later pivot,
 * so the first NaN on the factored diagonal is the column that failed.
 * (Without this check a NaN anywhere in A's lower triangle gave info 0
 * and an L of NaNs.) */
static int potrf_block(tarn_task *t, struct potrf_la *p, int k, int w) {
  size_t ld = (size_t)p->lda;
  double *akk = p->a + k + (size_t)k * ld;
  lapack_int i = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', w, akk, p->lda);
  if (i < 0) return TARN_EINVAL;
  /* Columns before i - 1 were factored; i - 1 failed (<= 0) when i > 0. */
  int nan = first_nan_pivot(akk, p->lda, i > 0 ? (int)i - 1 : w);
  if (nan > 0) i = nan;
  if (i > 0) {
    p->info = k + (int)i;
    return 0;
  }
  int r = p->n - k - w;
  if (r == 0) return 0;
  if (t != NULL)
    return tarn__trsm_shared(t, CblasRight, CblasLower, CblasTrans,
                             CblasNonUnit, r, w, 1.0, akk, p->lda, akk + w,
                             p->lda);
  tarn__trsm(CblasRight, CblasLower, CblasTrans, CblasNonUnit, r, w, 1.0, akk,
             p->lda, akk + w, p->lda);
  return 0;
}

/* The step's lead, on the task's thread: the next block's columns updated
 * by the block just factored, then the next block factored and its column
 * solved. */
static int potrf_lead(void *arg) {
  struct potrf_la *p = arg;
  int k1 = p->k + p->w;
  potrf_update(p, k1, k1 + p->next);
  return potrf_block(NULL, p, k1, p->next);
}

/* The step's shared part: columns [far + begin, far + end). */
static int potrf_update_range(void *arg, size_t begin, size_t end) {
  const struct potrf_la *p = arg;
  potrf_update(p, p->far + (int)begin, p->far + (int)end);
  return 0;
}

int tarn__potrf_shared(tarn_task *t, int n, double *a, int lda, int *info) {
  *info = 0;
  int nb = n < POTRF_BLOCKED ? n : POTRF_NB;
  struct potrf_la p = {.a = a, .n = n, .lda = lda};
  /* Right-looking with a lookahead of one block: while idle workers update
   * the columns beyond the next block, this thread updates the next block,
   * factors it and solves the column below it. */
  /* far apart, a tile below share_min is factored on this thread */
  bool shared = (double)n * n * n / 3 >= share_min(t);
  int rc = potrf_block(shared ? t : NULL, &p, 0, nb);
  for (int k = 0, w = nb; rc == 0 && p.info == 0 && k + w < n;
       k += w, w = p.next) {
    p.k = k;
    p.w = w;
    p.next = n - k - w < nb ? n - k - w : nb;
    p.far = k + w + p.next;
    if (shared)
      rc = tarn__task_parallel_for_lead(t, (size_t)(n - p.far), SHARE_GRAIN / 2,
                                        potrf_update_range, &p, potrf_lead, &p);
    else if ((rc = potrf_lead(&p)) == 0)
      rc = potrf_update_range(&p, 0, (size_t)(n - p.far));
  }
  *info = p.info;
  return rc;
}

/* ---- gemm --------------------------------------------------------------- */

static int k_gemm(tarn_task *t, void *arg) {
  const struct job *j = arg;
  return tarn__gemm_shared(t, j->ta, j->tb, j->m, j->n, j->k, j->alpha,
                           tarn_task_data(t, j->sa), j->lda,
                           tarn_task_data(t, j->sb), j->ldb, j->beta,
                           tarn_task_data(t, j->sc), j->ldc);
}

/* A product's operands (tarn_matrix_gemm): op(A) is M x K, op(B) K x N,
 * C M x N, in tiles. */
struct gemm_plan {
  tarn_matrix *a, *b, *c;
  bool ta, tb;
  double alpha, beta;
  size_t kt;     /* tiles along K */
  size_t bm, bn; /* C's tiles per block (gemm_blocks) */
  bool ordered;  /* layers by priority, in the order submitted */
  size_t groups; /* groups of layers per tile of C (gemm_blocks) */
};

bool tarn__limit_blocks(tarn_rt *rt, double whole, double ctile, double atile,
                        double btile, size_t mt, size_t nt, size_t *bm,
                        size_t *bn) {
  *bm = mt;
  *bn = nt;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(rt));
  if (limit == 0 || whole <= (double)limit / 8 * 7) return false;
  double budget = (double)limit / 2;
  size_t m = 1, n = 1;
  /* Grown by a row or a column of tiles at a time, the shorter side
   * first, while the block and its layer fit in the budget. */
  for (;;) {
    bool rows = m <= n ? m < mt : n >= nt;
    size_t m2 = m + (rows ? 1 : 0), n2 = n + (rows ? 0 : 1);
    if (m2 > mt || n2 > nt) break;
    double need = (double)m2 * (double)n2 * ctile + (double)m2 * atile +
                  (double)n2 * btile;
    if (need > budget) break;
    m = m2;
    n = n2;
  }
  *bm = m;
  *bn = n;
  return true;
}

int tarn__layer_priority(size_t layer) {
  return layer < (size_t)INT_MAX ? -(int)layer : -INT_MAX;
}

/* Layers per group at least, and groups at most (tarn__layer_groups). */
#define GROUP_LAYERS 2
#define GROUPS_MAX 64

size_t tarn__layer_groups(size_t tiles, size_t layers, unsigned workers) {
  if (workers < 2 || tiles == 0 || tiles >= 2 * (size_t)workers) return 1;
  size_t g = (2 * (size_t)workers + tiles - 1) / tiles;
  size_t most = layers / GROUP_LAYERS;
  if (g > most) g = most;
  if (g > GROUPS_MAX) g = GROUPS_MAX;
  return g < 1 ? 1 : g;
}

/* The layers [*k0, *k1) of group g of `groups` over `layers`. */
static void group_layers(size_t layers, size_t groups, size_t g, size_t *k0,
                         size_t *k1) {
  *k0 = g * layers / groups;
  *k1 = (g + 1) * layers / groups;
}

int tarn__submit_grouped(
    tarn_rt *rt, tarn_ref *tile, size_t bytes, size_t layers, size_t groups,
    int (*layer)(void *ctx, size_t k, size_t k0, size_t k1, tarn_ref *sum),
    int (*sum)(void *ctx, tarn_dep *deps, size_t temps), void *ctx) {
  tarn_dep *d = calloc(groups + 1, sizeof *d);
  if (d == NULL) return TARN_ENOMEM;
  d[0] = (tarn_dep){tile, TARN_READ_WRITE};
  int rc = 0;
  size_t made = 1;
  for (size_t g = 0; rc == 0 && g < groups; g++) {
    size_t k0, k1;
    group_layers(layers, groups, g, &k0, &k1);
    tarn_ref *temp = NULL;
    if (g > 0) {
      rc = tarn_ref_create(tarn_rt_pool(rt), bytes, &temp);
      if (rc != 0) break;
      d[made++] = (tarn_dep){temp, TARN_READ};
    }
    for (size_t k = k0; rc == 0 && k < k1; k++)
      rc = layer(ctx, k, k0, k1, temp);
  }
  if (rc == 0) rc = sum(ctx, d, made - 1);
  for (size_t i = 1; i < made; i++)
    tarn_ref_release(d[i].ref); /* the tasks hold their own references */
  free(d);
  return rc;
}

void tarn__tile_add(double *c, const double *w, size_t m, size_t n,
                    bool lower) {
  for (size_t q = 0; q < n; q++) {
    size_t top = lower ? q : 0;
    if (top < m)
      cblas_daxpy((int)(m - top), 1.0, w + top + q * m, 1, c + top + q * m, 1);
  }
}

/* The blocks of C: all of C, unless the pool has a memory limit and all
 * of C and one layer of the product (a tile column of op(A) and a tile
 * row of op(B), what the products of one k read) take more than seven
 * eighths of it. Then C goes by blocks, each the largest of about as many
 * rows as columns of tiles that fits in half the limit with its layer
 * (one tile at least), and the layers go by priority, one after another.
 *
 * A block's tiles stay resident while the tiles of A and B it reads
 * stream through, once per block, instead of all of C being written and
 * read back for every k. With the priorities, a worker takes the rest of
 * a layer before the next layer of a tile it has just updated, so the
 * layers run in the order submitted, the order by which the pool's
 * eviction ranks the tiles in use (their next use, docs/pool.md). A
 * product of 2048 x 2048 in tiles of 64 under a limit of 16 MB (C is 32
 * MiB, blocks of 15 x 14 tiles) read 4,600 to 5,900 tiles back instead
 * of 18,000 to 22,000, in 0.8 to 1.4 s instead of 2.0 to 4.0 (0.37 s in
 * core; docs/linalg.md). When C fits, a tile's products follow one
 * another on a worker (the runtime runs a task's successor next): C's
 * tiles are made and finished a few at a time, and under the ooc suite's
 * limit (2/3 of A, B and C) that read back 80 MiB where layer by layer
 * read 180. */
static void gemm_blocks(struct gemm_plan *g) {
  tarn_matrix *c = g->c;
  /* What the pool charges: whole pages a tile (tarn__tile_charge). */
  double ctile = (double)tarn__tile_charge(c);
  double atile = (double)tarn__tile_charge(g->a);
  double btile = (double)tarn__tile_charge(g->b);
  double whole = (double)c->mt * (double)c->nt * ctile + (double)c->mt * atile +
                 (double)c->nt * btile;
  g->groups = tarn__layer_groups(c->mt * c->nt, g->kt, tarn_rt_workers(c->rt));
  /* groups, when their temporaries and layers fit as all of C would */
  if (g->groups > 1 &&
      !tarn__limit_blocks(c->rt, whole * (double)g->groups, ctile, atile, btile,
                          c->mt, c->nt, &g->bm, &g->bn)) {
    g->ordered = false;
    return;
  }
  g->groups = 1;
  g->ordered = tarn__limit_blocks(c->rt, whole, ctile, atile, btile, c->mt,
                                  c->nt, &g->bm, &g->bn);
}

/* The product of layer k into C's tile (ti, tj), or into `sum` when not
 * NULL (a group's temporary: beta 0 at its first layer), with `priority`.
 * The first layer writes with the product's beta (C not read when 0). */
static int gemm_submit_layer(const struct gemm_plan *g, size_t ti, size_t tj,
                             size_t k, tarn_ref *sum, bool first,
                             int priority) {
  tarn_matrix *a = g->a, *b = g->b, *cm = g->c;
  bool tra = g->ta, trb = g->tb;
  double beta = !first ? 1.0 : sum != NULL ? 0.0 : g->beta;
  tarn_dep deps[3] = {
      {sum != NULL ? sum : tarn__tile(cm, ti, tj),
       first && beta == 0 ? TARN_WRITE : TARN_READ_WRITE},
      {tra ? tarn__tile(a, k, ti) : tarn__tile(a, ti, k), TARN_READ},
      {trb ? tarn__tile(b, tj, k) : tarn__tile(b, k, tj), TARN_READ}};
  struct job j = {
      .m = (int)tarn__tile_rows(cm, ti),
      .n = (int)tarn__tile_cols(cm, tj),
      .k = (int)(tra ? tarn__tile_rows(a, k) : tarn__tile_cols(a, k)),
      .lda = (int)(tra ? tarn__tile_rows(a, k) : tarn__tile_rows(a, ti)),
      .ldb = (int)(trb ? tarn__tile_rows(b, tj) : tarn__tile_rows(b, k)),
      .ldc = (int)tarn__tile_rows(cm, ti),
      .ta = tra,
      .tb = trb,
      .alpha = g->alpha,
      .beta = beta,
      .sc = tarn__dep_slot(deps, 0),
      .sa = tarn__dep_slot(deps, 1),
      .sb = tarn__dep_slot(deps, 2)};
  return submit_job(a->rt, k_gemm, &j, deps, 3, priority, "gemm");
}

/* The products of C's tiles [i0, i1) x [j0, j1), k outermost; `layer`
 * counts the layers submitted before this block's. */
static int gemm_submit_block(const struct gemm_plan *g, size_t i0, size_t i1,
                             size_t j0, size_t j1, size_t layer) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < g->kt; k++)
    for (size_t tj = j0; rc == 0 && tj < j1; tj++)
      for (size_t ti = i0; rc == 0 && ti < i1; ti++)
        rc =
            gemm_submit_layer(g, ti, tj, k, NULL, k == 0,
                              g->ordered ? tarn__layer_priority(layer + k) : 0);
  return rc;
}

/* A tile (dep 0, m x n) += each group's temporary (deps 1 .. j->k). */
static int k_tile_sum(tarn_task *t, void *arg) {
  const struct job *j = arg;
  double *c = tarn_task_data(t, 0);
  for (size_t g = 1; g <= (size_t)j->k; g++)
    tarn__tile_add(c, tarn_task_data(t, g), (size_t)j->m, (size_t)j->n, false);
  return 0;
}

int tarn__submit_tile_sum(tarn_rt *rt, tarn_dep *deps, size_t temps, size_t m,
                          size_t n) {
  struct job s = {.m = (int)m, .n = (int)n, .k = (int)temps};
  return submit_job(rt, k_tile_sum, &s, deps, temps + 1, 0, "sum");
}

/* A tile of C in groups (tarn__submit_grouped): the plan and the tile. */
struct gemm_group {
  const struct gemm_plan *g;
  size_t ti, tj;
};

static int gemm_group_layer(void *ctx, size_t k, size_t k0, size_t k1,
                            tarn_ref *sum) {
  const struct gemm_group *gg = ctx;
  (void)k1;
  return gemm_submit_layer(gg->g, gg->ti, gg->tj, k, sum, k == k0, 0);
}

static int gemm_group_sum(void *ctx, tarn_dep *deps, size_t temps) {
  const struct gemm_group *gg = ctx;
  tarn_matrix *cm = gg->g->c;
  return tarn__submit_tile_sum(cm->rt, deps, temps, tarn__tile_rows(cm, gg->ti),
                               tarn__tile_cols(cm, gg->tj));
}

/* C's tile (ti, tj) in `groups` groups of the layers side by side, then
 * their sum. */
static int gemm_submit_grouped(const struct gemm_plan *g, size_t ti, size_t tj,
                               size_t groups) {
  tarn_matrix *cm = g->c;
  struct gemm_group gg = {g, ti, tj};
  size_t bytes =
      tarn__tile_rows(cm, ti) * tarn__tile_cols(cm, tj) * sizeof(double);
  return tarn__submit_grouped(cm->rt, tarn__tile(cm, ti, tj), bytes, g->kt,
                              groups, gemm_group_layer, gemm_group_sum, &gg);
}

/* Whether a product's smallest tasks (one tile of C, one of op(A) and one
 * of op(B); gemv's too) fit under the limit (tarn__task_fits). Tiles are
 * largest at the first index along each side (only the last may be
 * smaller), so tile (0, 0) of each is the largest: unless A and B are the
 * same matrix, whose tile a task reads twice is pinned once (rt.h, rule
 * 1); then each pattern of equal indices (ti, tj, k) occurs among the
 * first three of each, at its largest. */
static bool product_fits(const tarn_matrix *a, bool tra, const tarn_matrix *b,
                         bool trb, const tarn_matrix *c, size_t kt) {
  size_t most = 0, span = a == b ? 3 : 1;
  for (size_t ti = 0; ti < span && ti < c->mt; ti++)
    for (size_t tj = 0; tj < span && tj < c->nt; tj++)
      for (size_t k = 0; k < span && k < kt; k++) {
        size_t ai = tra ? k : ti, aj = tra ? ti : k;
        size_t bi = trb ? tj : k, bj = trb ? k : tj;
        size_t charge =
            tarn__tile_charge_at(c, ti, tj) + tarn__tile_charge_at(a, ai, aj);
        if (a != b || ai != bi || aj != bj)
          charge += tarn__tile_charge_at(b, bi, bj);
        if (charge > most) most = charge;
      }
  return tarn__task_fits(c->rt, most);
}

int tarn_matrix_gemm(tarn_matrix *a, tarn_trans ta, tarn_matrix *b,
                     tarn_trans tb, double alpha, double beta,
                     tarn_matrix **c) {
  if (!tarn__blas_sized(a) || !tarn__blas_sized(b) || c == NULL ||
      a->rt != b->rt || *c == a || *c == b)
    return TARN_EINVAL;
  if ((ta != TARN_NO_TRANS && ta != TARN_TRANS) ||
      (tb != TARN_NO_TRANS && tb != TARN_TRANS))
    return TARN_EINVAL;
  bool tra = ta == TARN_TRANS, trb = tb == TARN_TRANS;
  /* op(A) is M x K in tiles am x ak; op(B) is K x N in tiles bk x bn. */
  size_t m = tra ? a->n : a->m, ka = tra ? a->m : a->n;
  size_t am = tra ? a->nb : a->mb, ak = tra ? a->mb : a->nb;
  size_t kb = trb ? b->n : b->m, n = trb ? b->m : b->n;
  size_t bk = trb ? b->nb : b->mb, bn = trb ? b->mb : b->nb;
  if (ka != kb || ak != bk) return TARN_EINVAL;
  tarn__blas_init();
  bool made = false;
  if (*c == NULL) beta = 0;
  int rc = tarn__matrix_destination(a->rt, m, n, am, bn, c, &made);
  if (rc != 0) return rc;
  tarn_matrix *cm = *c;
  if (alpha == 0.0) {
    /* BLAS's quick return: A and B are not read (neither their NaNs nor
     * a failed writer of theirs reaches C) and C is beta C to the bit.
     * Until 2026-12-05 the product ran: grouped sums added +0
     * temporaries, so a -0 in C became +0 where BLAS leaves it, and a
     * cancelled A cancelled C. A new C is zeros already; beta -0.0 added
     * keeps every product's sign. */
    if (made || beta == 1.0) return 0;
    return beta == 0.0 ? tarn__matrix_fill_in(cm, 0.0)
                       : tarn_matrix_axpb(cm, beta, -0.0, c);
  }
  size_t kt = tra ? a->mt : a->nt;
  size_t work = 0;
  if (n > 1) /* a task: C's first tile times one tile of K */
    work = tarn__work_tile(a->rt, m, n, ka,
                           (double)cm->mb * (double)cm->nb * (double)ak,
                           (tarn_matrix *[]){a, b, cm}, 3, 'F');
  if (!product_fits(a, tra, b, trb, cm, kt)) {
    rc = TARN_ENOMEM;
  } else if (work != 0) {
    rc = tarn__gemm_work(a, ta, b, tb, alpha, beta, cm, work);
  } else if (n == 1) {
    rc = tarn__gemv_submit(a, tra, b, trb, alpha, beta, cm);
  } else {
    /* k outermost in each block of C (gemm_blocks; all of C in core):
     * the first layer of every C tile is ready at once. Submitting each
     * C tile's products in a row ran one worker at 77 GFLOP/s instead of
     * 68 at N=4096, two workers no faster, and read A once per tile
     * column of C when it did not fit. */
    struct gemm_plan g = {.a = a,
                          .b = b,
                          .c = cm,
                          .ta = tra,
                          .tb = trb,
                          .alpha = alpha,
                          .beta = beta,
                          .kt = kt};
    gemm_blocks(&g);
    size_t layer = 0;
    for (size_t tj = 0; g.groups > 1 && rc == 0 && tj < cm->nt; tj++)
      for (size_t ti = 0; rc == 0 && ti < cm->mt; ti++)
        rc = gemm_submit_grouped(&g, ti, tj, g.groups);
    for (size_t j0 = 0; g.groups == 1 && rc == 0 && j0 < cm->nt; j0 += g.bn)
      for (size_t i0 = 0; rc == 0 && i0 < cm->mt; i0 += g.bm, layer += g.kt)
        rc = gemm_submit_block(&g, i0, i0 + g.bm < cm->mt ? i0 + g.bm : cm->mt,
                               j0, j0 + g.bn < cm->nt ? j0 + g.bn : cm->nt,
                               layer);
  }
  if (rc != 0 && made) {
    tarn_matrix_destroy(*c);
    *c = NULL;
  }
  return rc;
}

int tarn_matrix_gemv(tarn_matrix *a, tarn_trans ta, tarn_matrix *x,
                     double alpha, double beta, tarn_matrix **y) {
  if (!tarn__matrix_ok(x) || y == NULL || x->n != 1 ||
      (*y != NULL && (!tarn__matrix_ok(*y) || (*y)->n != 1)))
    return TARN_EINVAL;
  return tarn_matrix_gemm(a, ta, x, TARN_NO_TRANS, alpha, beta, y);
}

/* ---- Cholesky ----------------------------------------------------------- */

static int k_potrf(tarn_task *t, void *arg) {
  const struct job *j = arg;
  int info = 0;
  int rc = tarn__potrf_shared(t, j->n, tarn_task_data(t, 0), j->lda, &info);
  if (rc != 0 || info == 0) return rc;
  int expected = 0;
  atomic_compare_exchange_strong(j->info, &expected,
                                 (int)(j->offset + (size_t)info));
  return TARN_EINVAL;
}

/* A_ik = A_ik L_kk^-T (deps: L_kk, A_ik). */
static int k_trsm(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *l = tarn_task_data(t, 0);
  double *b = tarn_task_data(t, 1);
  return tarn__trsm_shared(t, CblasRight, CblasLower, CblasTrans, CblasNonUnit,
                           j->m, j->n, 1.0, l, j->lda, b, j->ldb);
}

/* A_ii -= A_ik A_ik^T, lower triangle (deps: A_ik, A_ii). */
static int k_syrk(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *a = tarn_task_data(t, 0);
  double *c = tarn_task_data(t, 1);
  return tarn__syrk_shared(t, CblasNoTrans, j->n, j->k, -1.0, a, j->lda, 1.0, c,
                           j->ldc);
}

/* Priorities: potrf on top, then trsm, then the updates by the distance
 * of their tile column from the panel (the next column first, its
 * diagonal tile before the rest). */
enum { PRIO_TOP = 1 << 24 };

static int update_priority(size_t k, size_t i, size_t j) {
  size_t d = j - k - 1; /* 0 for the next tile column */
  size_t p = 2 + 2 * d + (i != j);
  return p >= PRIO_TOP ? 0 : PRIO_TOP - (int)p;
}

static int submit_cholesky(tarn_matrix *a, atomic_int *info) {
  size_t nt = a->nt;
  for (size_t k = 0; k < nt; k++) {
    int nk = (int)tarn__tile_rows(a, k);
    tarn_ref *akk = tarn__tile(a, k, k);
    struct job j = {.n = nk, .lda = nk, .offset = k * a->mb, .info = info};
    tarn_dep d1[1] = {{akk, TARN_READ_WRITE}};
    int rc = submit_job(a->rt, k_potrf, &j, d1, 1, PRIO_TOP, "potrf");
    if (rc != 0) return rc;
    for (size_t i = k + 1; i < nt; i++) {
      int ni = (int)tarn__tile_rows(a, i);
      struct job s = {.m = ni, .n = nk, .lda = nk, .ldb = ni};
      tarn_dep d2[2] = {{akk, TARN_READ},
                        {tarn__tile(a, i, k), TARN_READ_WRITE}};
      rc = submit_job(a->rt, k_trsm, &s, d2, 2, PRIO_TOP - 1, "trsm");
      if (rc != 0) return rc;
    }
    for (size_t jj = k + 1; jj < nt; jj++) {
      int nj = (int)tarn__tile_rows(a, jj);
      tarn_ref *ajk = tarn__tile(a, jj, k);
      struct job s = {.n = nj, .k = nk, .lda = nj, .ldc = nj};
      tarn_dep d2[2] = {{ajk, TARN_READ},
                        {tarn__tile(a, jj, jj), TARN_READ_WRITE}};
      rc = submit_job(a->rt, k_syrk, &s, d2, 2, update_priority(k, jj, jj),
                      "syrk");
      if (rc != 0) return rc;
      for (size_t i = jj + 1; i < nt; i++) {
        int ni = (int)tarn__tile_rows(a, i);
        /* A_ij -= A_ik A_jk^T */
        tarn_dep d3[3] = {{tarn__tile(a, i, jj), TARN_READ_WRITE},
                          {tarn__tile(a, i, k), TARN_READ},
                          {ajk, TARN_READ}};
        struct job g = {.m = ni,
                        .n = nj,
                        .k = nk,
                        .lda = ni,
                        .ldb = nj,
                        .ldc = ni,
                        .ta = false,
                        .tb = true,
                        .alpha = -1.0,
                        .beta = 1.0,
                        .sc = 0,
                        .sa = 1,
                        .sb = 2};
        rc = submit_job(a->rt, k_gemm, &g, d3, 3, update_priority(k, i, jj),
                        "gemm");
        if (rc != 0) return rc;
      }
    }
  }
  return 0;
}

int tarn_matrix_cholesky(tarn_matrix *a, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__factor_shape_ok(a)) return TARN_EINVAL;
  if (!tarn__triangle_fits(a, true)) return TARN_ENOMEM;
  tarn__blas_init();
  size_t work = tarn__factor_work_tile(a, 'L');
  if (work != 0) return tarn__cholesky_work(a, work, info);
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  atomic_int failed = 0;
  int submitted = submit_cholesky(a, &failed);
  return tarn__region_outcome(region, submitted, &failed, info);
}
