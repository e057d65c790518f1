/* inverse.c: explicit inverses in place, from a triangle or from factors
 * made before (tarn_matrix_triangular_inverse, tarn_matrix_cholesky_inverse,
 * tarn_matrix_lu_inverse; and tarn_matrix_inverse, LU then its inverse;
 * see tarn/linalg.h), as LAPACK's dtrtri, dpotri
 * and dgetri, by the tile algorithms of PLASMA (Agullo, Bouwmeester,
 * Dongarra, Kurzak, Langou, Rosenberg: "Towards an efficient tile matrix
 * inversion of symmetric positive definite matrices on multicore
 * architectures", 2010).
 *
 * Every call first checks the diagonal it will divide by for an exact
 * zero, in a region of its own, so a singular input is refused before any
 * tile is written (tarn_matrix_inverse leaves that to its LU, which
 * reports such a zero itself). Then, in a second region:
 *
 * - trtri (T^-1 in T's triangle): for each tile column k of a lower T,
 *   T_ik = -T_ik T_kk^-1 below the diagonal tile (trsm), T_ij += T_ik T_kj
 *   left of column k below it (gemm), T_kj = T_kk^-1 T_kj left of the
 *   diagonal tile (trsm), then T_kk = T_kk^-1 (in halves, recursively:
 *   trsm on the block off the diagonal, shared with idle workers on a
 *   large tile, then each half, the two on two threads where a worker is
 *   idle; dtrtri from order TRIANGLE_BASE down); an upper T the same,
 *   transposed. The runtime orders each tile's readers and writers
 *   as they were submitted, so the gemm of step k reads T_kj before that
 *   step's trsm rewrites it.
 * - lauum (L^T L in the lower triangle, L = the inverse of Cholesky's
 *   factor): for each tile row k, A_jj += L_kj^T L_kj (syrk) and A_ij +=
 *   L_ki^T L_kj (gemm) for j < i < k, L_kj = L_kk^T L_kj (trmm), then
 *   L_kk^T L_kk on the diagonal tile (in halves, recursively, as dlauum's
 *   blocks: syrk and trmm shared with idle workers; dlauum from order
 *   TRIANGLE_BASE down); tarn__submit_mirror then fills the upper half.
 * - getri (A^-1 = U^-1 L^-1 P): trtri on U, then X L = U^-1 column by
 *   column of tiles from the right: tile column k of L goes to a
 *   temporary W (and zeros in A), X_rk -= X_ri W_ik for the columns i > k
 *   done before (gemm), X_rk = X_rk W_kk^-1 (trsm with W's unit lower
 *   triangle); last, one task per tile row interchanges its columns as
 *   the pivots say, in reverse order.
 *
 * Each task owns a small job struct freed by the runtime when it is done;
 * the trsm, gemm, syrk and trmm kernels share their work with idle
 * workers.
 * On small tiles the inverses run on a copy in work tiles (inverse_work;
 * tarn/linalg.h, "Small tiles"): the Cholesky and LU inverses' copied
 * back whole, a triangle's only its triangle, once the call on the copy
 * succeeded; (A^T A)^-1 is the same call on a copy of R, its result
 * retiled. */
#include <cblas.h>
#include <lapacke.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "rt/rt_internal.h"
#include "tarn/linalg.h"

/* What one tile task needs; owned by the task. Sizes and leading
 * dimensions in BLAS's meaning; slots are tarn_task_data indices. */
struct inv_job {
  int m, n, k;
  int lda, ldb, ldc;
  CBLAS_SIDE side;
  CBLAS_UPLO uplo;
  CBLAS_TRANSPOSE ta, tb;
  CBLAS_DIAG diag;
  double alpha;
  size_t sa, sb, sc;
  size_t offset;       /* check: the diagonal tile's first row */
  atomic_int *first;   /* check: where a zero's 1-based order goes */
  const size_t *piv;   /* interchange: the pivots (the caller's, read) */
  size_t count;        /* interchange: the pivots (the matrix's order) */
  size_t tile_columns; /* interchange: columns per tile (the last tile's
                          may be fewer) */
};

static int submit(tarn_matrix *a, tarn_task_fn fn, const struct inv_job *j,
                  const tarn_dep *deps, size_t ndeps, int priority,
                  const char *name) {
  return tarn__submit_owned(a->rt, fn, j, sizeof *j, deps, ndeps, priority,
                            name);
}

/* Priorities: the work of early steps first, and in a step the tile
 * kernels the next ones wait for (the diagonal tile, the trsm) before the
 * updates. */
static int step_priority(const tarn_matrix *a, size_t k, int rank) {
  size_t p = 4 * (a->nt - (k < a->nt ? k : a->nt)) + (size_t)rank;
  return p > (1u << 24) ? 1 << 24 : (int)p;
}

/* The side of T's triangle's tile (i, i): T's tile columns give the
 * triangle's sizes, its tile rows the leading dimensions (a tall T's
 * block, see tarn__triangle_shape_ok). */
static int side_of(const tarn_matrix *a, size_t i) {
  return (int)tarn__tile_cols(a, i);
}

static int ld_of(const tarn_matrix *a, size_t i) {
  return (int)tarn__tile_rows(a, i);
}

/* ---- the kernels -------------------------------------------------------- */

static int k_check(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  tarn__diagonal_check(tarn_task_data(t, 0), j->n, j->lda, j->offset, j->first);
  return 0;
}

static int k_trsm(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return tarn__trsm_shared(t, j->side, j->uplo, j->ta, j->diag, j->m, j->n,
                           j->alpha, tarn_task_data(t, j->sa), j->lda,
                           tarn_task_data(t, j->sb), j->ldb);
}

static int k_gemm(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return tarn__gemm_shared(t, j->ta == CblasTrans, j->tb == CblasTrans, j->m,
                           j->n, j->k, j->alpha, tarn_task_data(t, j->sa),
                           j->lda, tarn_task_data(t, j->sb), j->ldb, 1.0,
                           tarn_task_data(t, j->sc), j->ldc);
}

/* The lower triangle of C (dep 1) += A^T A (dep 0, k x n). */
static int k_syrk(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return tarn__syrk_shared(t, CblasTrans, j->n, j->k, 1.0, tarn_task_data(t, 0),
                           j->lda, 1.0, tarn_task_data(t, 1), j->ldc);
}

/* B (dep 1) = L^T B, L the lower triangle of dep 0. */
static int k_trmm(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return tarn__trmm_shared(t, CblasLeft, CblasLower, CblasTrans, CblasNonUnit,
                           j->m, j->n, 1.0, tarn_task_data(t, 0), j->lda,
                           tarn_task_data(t, 1), j->ldb);
}

/* Triangles of this order or less are inverted (trtri) or multiplied
 * (lauum) by one LAPACK call; larger ones recursively in halves, where
 * most of the work is trsm, syrk and trmm on blocks, shared with idle
 * workers on a large tile. OpenBLAS's dtrtri and dlauum run their own
 * unblocked loops (level 2 BLAS) on small blocks: on one core a 256
 * triangle took 794 us by dtrtri against 594 in halves down to 16 (591
 * to 32, 599 to 64), and 274 by dlauum against 209 (222, 290; medians of
 * 201, a program outside the repository, 2026-12-06). */
#define TRIANGLE_BASE 16

/* Far apart (tarn__task_far), triangles of this order or less invert
 * their halves one after the other on the task's thread. */
#define FAR_HALVES_MAX 256

/* The order of the first half of a triangle of order n: 8-aligned for the
 * kernels, as tarn__trsm's blocks. */
static int first_half(int n) { return (n / 2 + 7) / 8 * 8; }

static lapack_int dtrtri(CBLAS_UPLO uplo, CBLAS_DIAG diag, int n, double *a,
                         int lda) {
  return LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, uplo == CblasLower ? 'L' : 'U',
                             diag == CblasUnit ? 'U' : 'N', n, a, lda);
}

/* T^-1 in place, T (n x n at a) with no zero on its diagonal (checked
 * before), in task `t`: the block off the diagonal, B, becomes -T11^-1 B
 * T22^-1 (upper) or -T22^-1 B T11^-1 (lower) by two trsm shared with
 * idle workers, then T11 and T22 are inverted the same way, one on each
 * of two threads where a worker is idle (inside those ranges the
 * runtime runs each nested split as one plain call). */
static int trtri_halves(tarn_task *t, CBLAS_UPLO uplo, CBLAS_DIAG diag, int n,
                        double *a, int lda);

/* The halves of a triangle (trtri_halves): the first h rows and columns,
 * and the rest. */
struct trtri_halves {
  tarn_task *task;
  CBLAS_UPLO uplo;
  CBLAS_DIAG diag;
  int n, h, lda;
  double *a;
};

/* Halves [begin, end) inverted. */
static int trtri_halves_range(void *arg, size_t begin, size_t end) {
  const struct trtri_halves *s = arg;
  int rc = 0;
  for (size_t q = begin; rc == 0 && q < end; q++) {
    size_t at = q == 0 ? 0 : (size_t)s->h;
    int n = q == 0 ? s->h : s->n - s->h;
    rc = trtri_halves(s->task, s->uplo, s->diag, n,
                      s->a + at + at * (size_t)s->lda, s->lda);
  }
  return rc;
}

static int trtri_halves(tarn_task *t, CBLAS_UPLO uplo, CBLAS_DIAG diag, int n,
                        double *a, int lda) {
  if (n <= TRIANGLE_BASE)
    return dtrtri(uplo, diag, n, a, lda) == 0 ? 0 : TARN_EINVAL;
  int h = first_half(n), n2 = n - h;
  double *a11 = a, *a22 = a + h + (size_t)h * (size_t)lda;
  /* B: A21 (n2 x h) of a lower T, A12 (h x n2) of an upper one */
  bool lower = uplo == CblasLower;
  double *b = lower ? a + h : a + (size_t)h * (size_t)lda;
  int m = lower ? n2 : h, cols = lower ? h : n2;
  int rc =
      tarn__trsm_shared(t, lower ? CblasRight : CblasLeft, uplo, CblasNoTrans,
                        diag, m, cols, -1.0, a11, lda, b, lda);
  if (rc == 0)
    rc = tarn__trsm_shared(t, lower ? CblasLeft : CblasRight, uplo,
                           CblasNoTrans, diag, m, cols, 1.0, a22, lda, b, lda);
  if (rc != 0) return rc;
  struct trtri_halves s = {t, uplo, diag, n, h, lda, a};
  /* far apart, halves of a tile of 256 or less on this thread (tarn__task_
   * far; linalg.c's FAR_SHARE_MIN_MADDS: a 256 x 256 LU inverse took 1126
   * to 1284 us shared, 736 to 975 not) */
  if (n <= FAR_HALVES_MAX && tarn__task_far(t))
    return trtri_halves_range(&s, 0, 2);
  return tarn_task_parallel_for(t, 2, 1, trtri_halves_range, &s);
}

/* The diagonal tile's triangle inverted in place. */
static int k_trtri(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return trtri_halves(t, j->uplo, j->diag, j->n, tarn_task_data(t, 0), j->lda);
}

/* The lower triangle of A (n x n at a) = L^T L, L its lower triangle, as
 * dlauum('L'), in halves: with L = [L11 0; L21 L22], A11 = L11^T L11 +
 * L21^T L21, A21 = L22^T L21, A22 = L22^T L22, in that order (each step
 * reads what the next overwrites); the syrk and trmm shared with idle
 * workers. */
static int lauum_halves(tarn_task *t, int n, double *a, int lda) {
  if (n <= TRIANGLE_BASE)
    return LAPACKE_dlauum_work(LAPACK_COL_MAJOR, 'L', n, a, lda) == 0
               ? 0
               : TARN_EINVAL;
  int h = first_half(n), n2 = n - h;
  double *a21 = a + h, *a22 = a + h + (size_t)h * (size_t)lda;
  int rc = lauum_halves(t, h, a, lda);
  if (rc == 0)
    rc = tarn__syrk_shared(t, CblasTrans, h, n2, 1.0, a21, lda, 1.0, a, lda);
  if (rc == 0)
    rc = tarn__trmm_shared(t, CblasLeft, CblasLower, CblasTrans, CblasNonUnit,
                           n2, h, 1.0, a22, lda, a21, lda);
  return rc == 0 ? lauum_halves(t, n2, a22, lda) : rc;
}

/* The lower triangle of the diagonal tile = L^T L, L its lower triangle. */
static int k_lauum(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  return lauum_halves(t, j->n, tarn_task_data(t, 0), j->lda);
}

/* getri: L's part of tile (i, k) (dep 0, m x n) into W (dep 1), zeros in
 * its place: all of a tile below the diagonal, the strictly lower
 * triangle of the diagonal tile (j->diag CblasUnit). */
static int k_take(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  double *a = tarn_task_data(t, 0), *w = tarn_task_data(t, 1);
  size_t m = (size_t)j->m, n = (size_t)j->n;
  memcpy(w, a, m * n * sizeof *a);
  for (size_t c = 0; c < n; c++) {
    size_t r0 = j->diag == CblasUnit ? c + 1 : 0;
    if (r0 < m) memset(a + r0 + c * m, 0, (m - r0) * sizeof *a);
  }
  return 0;
}

/* qr_ata_inverse: tile (i, j), i >= j, of the lower triangle of R^T (dep
 * 0, m x n, ld m) from tile (j, i) of R (dep 1, n x m at the top of a
 * tile of lda rows): its transpose, and on the diagonal (j->diag
 * CblasUnit) the upper triangle's only, zeros above the diagonal. */
static int k_transpose_r(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  double *c = tarn_task_data(t, 0);
  const double *r = tarn_task_data(t, 1);
  size_t m = (size_t)j->m, n = (size_t)j->n, lda = (size_t)j->lda;
  bool diagonal = j->diag == CblasUnit;
  for (size_t q = 0; q < n; q++)
    for (size_t p = 0; p < m; p++)
      c[p + q * m] = diagonal && p < q ? 0.0 : r[q + p * lda];
  return 0;
}

/* getri: the column interchanges of the pivots, in reverse order, on one
 * tile row of j->m rows (its tiles, in order, are its deps). */
static int k_interchange(tarn_task *t, void *arg) {
  const struct inv_job *j = arg;
  size_t rows = (size_t)j->m, nb = j->tile_columns;
  for (size_t c = j->count; c-- > 0;) {
    size_t p = j->piv[c];
    if (p == c) continue;
    double *x = (double *)tarn_task_data(t, c / nb) + (c % nb) * rows;
    double *y = (double *)tarn_task_data(t, p / nb) + (p % nb) * rows;
    cblas_dswap((int)rows, x, 1, y, 1);
  }
  return 0;
}

/* ---- the steps ---------------------------------------------------------- */

/* Checks the diagonal of T's triangle (its first N rows) for an exact zero,
 * in a region of its own, after the tasks `before(a, arg)` submits there
 * (when not NULL). Returns 0; TARN_EINVAL with *info (when not NULL) the
 * 1-based order of the first zero; a status of the runtime. */
static int check_diagonal_after(tarn_matrix *a,
                                int (*before)(tarn_matrix *, const void *),
                                const void *arg, int *info) {
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  atomic_int first = 0;
  int submitted = before != NULL ? before(a, arg) : 0;
  for (size_t k = 0; submitted == 0 && k < a->nt; k++) {
    struct inv_job j = {.n = side_of(a, k),
                        .lda = ld_of(a, k),
                        .offset = k * a->nb,
                        .first = &first};
    tarn_dep dep = {tarn__tile(a, k, k), TARN_READ};
    submitted = submit(a, k_check, &j, &dep, 1, 0, "check");
  }
  if (submitted != 0) atomic_store(&first, -1);
  return tarn__region_outcome(region, submitted, &first, info);
}

static int check_diagonal(tarn_matrix *a, int *info) {
  return check_diagonal_after(a, NULL, NULL, info);
}

/* Submits the trsm of job *j (side, triangle, sizes, alpha and leading
 * dimensions set) on tile `b` with the triangle in tile `tri`. */
static int submit_trsm(tarn_matrix *a, struct inv_job *j, tarn_ref *tri,
                       tarn_ref *b, int priority) {
  tarn_dep d[2] = {{tri, TARN_READ}, {b, TARN_READ_WRITE}};
  j->ta = CblasNoTrans;
  j->sa = 0;
  j->sb = 1;
  return submit(a, k_trsm, j, d, 2, priority, "trsm");
}

/* Submits the gemm of job *j (transposes, sizes, alpha and leading
 * dimensions set): tile `c` += alpha op(tile a) op(tile b). */
static int submit_gemm(tarn_matrix *a, struct inv_job *j, tarn_ref *c,
                       tarn_ref *ta, tarn_ref *tb, int priority) {
  tarn_dep d[3] = {{c, TARN_READ_WRITE}, {ta, TARN_READ}, {tb, TARN_READ}};
  j->sc = 0;
  j->sa = 1;
  j->sb = 2;
  return submit(a, k_gemm, j, d, 3, priority, "gemm");
}

/* The tile of T's triangle at (i, j) of its lower form: (i, j) of a lower
 * T, (j, i) of an upper one. */
static tarn_ref *tri_tile(tarn_matrix *a, bool lower, size_t i, size_t j) {
  return lower ? tarn__tile(a, i, j) : tarn__tile(a, j, i);
}

/* Step k of trtri (see the file's comment), for a lower T or, transposed,
 * an upper one. */
static int submit_trtri_step(tarn_matrix *a, bool lower, bool unit, size_t k) {
  CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
  CBLAS_DIAG diag = unit ? CblasUnit : CblasNonUnit;
  int nk = side_of(a, k), ldk = ld_of(a, k);
  tarn_ref *akk = tarn__tile(a, k, k);
  int rc = 0;
  /* T_ik = -T_ik T_kk^-1 below (lower), T_ki = -T_kk^-1 T_ki right (upper) */
  for (size_t i = k + 1; rc == 0 && i < a->nt; i++) {
    int ni = side_of(a, i), ldi = ld_of(a, i);
    struct inv_job j = {.side = lower ? CblasRight : CblasLeft,
                        .uplo = uplo,
                        .diag = diag,
                        .m = lower ? ni : nk,
                        .n = lower ? nk : ni,
                        .alpha = -1.0,
                        .lda = ldk,
                        .ldb = lower ? ldi : ldk};
    rc = submit_trsm(a, &j, akk, tri_tile(a, lower, i, k),
                     step_priority(a, k, 2));
  }
  /* T_ij += T_ik T_kj (lower; upper: T_ji += T_jk T_ki), i > k > j */
  for (size_t i = k + 1; rc == 0 && i < a->nt; i++)
    for (size_t jj = 0; rc == 0 && jj < k; jj++) {
      int ni = side_of(a, i), nj = side_of(a, jj);
      int ldi = ld_of(a, i), ldj = ld_of(a, jj);
      struct inv_job j = {.ta = CblasNoTrans,
                          .tb = CblasNoTrans,
                          .m = lower ? ni : nj,
                          .n = lower ? nj : ni,
                          .k = nk,
                          .alpha = 1.0,
                          .lda = lower ? ldi : ldj,
                          .ldb = ldk,
                          .ldc = lower ? ldi : ldj};
      rc = submit_gemm(a, &j, tri_tile(a, lower, i, jj),
                       lower ? tarn__tile(a, i, k) : tarn__tile(a, jj, k),
                       lower ? tarn__tile(a, k, jj) : tarn__tile(a, k, i),
                       step_priority(a, k, 0));
    }
  /* T_kj = T_kk^-1 T_kj left (lower), T_jk = T_jk T_kk^-1 above (upper) */
  for (size_t jj = 0; rc == 0 && jj < k; jj++) {
    int nj = side_of(a, jj), ldj = ld_of(a, jj);
    struct inv_job j = {.side = lower ? CblasLeft : CblasRight,
                        .uplo = uplo,
                        .diag = diag,
                        .m = lower ? nk : nj,
                        .n = lower ? nj : nk,
                        .alpha = 1.0,
                        .lda = ldk,
                        .ldb = lower ? ldk : ldj};
    rc = submit_trsm(a, &j, akk, tri_tile(a, lower, k, jj),
                     step_priority(a, k, 1));
  }
  if (rc != 0) return rc;
  tarn_dep d[1] = {{akk, TARN_READ_WRITE}};
  struct inv_job j = {.uplo = uplo, .diag = diag, .n = nk, .lda = ldk};
  return submit(a, k_trtri, &j, d, 1, step_priority(a, k, 3), "trtri");
}

static int submit_trtri(tarn_matrix *a, bool lower, bool unit) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < a->nt; k++)
    rc = submit_trtri_step(a, lower, unit, k);
  return rc;
}

/* lauum on the lower triangle of a (see the file's comment). */
static int submit_lauum(tarn_matrix *a) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < a->nt; k++) {
    int nk = side_of(a, k);
    for (size_t j = 0; rc == 0 && j < k; j++) {
      int nj = side_of(a, j);
      tarn_dep s[2] = {{tarn__tile(a, k, j), TARN_READ},
                       {tarn__tile(a, j, j), TARN_READ_WRITE}};
      struct inv_job y = {.n = nj, .k = nk, .lda = nk, .ldc = nj};
      rc = submit(a, k_syrk, &y, s, 2, step_priority(a, k, 0), "syrk");
      for (size_t i = j + 1; rc == 0 && i < k; i++) {
        int ni = side_of(a, i);
        struct inv_job x = {.ta = CblasTrans,
                            .tb = CblasNoTrans,
                            .m = ni,
                            .n = nj,
                            .k = nk,
                            .alpha = 1.0,
                            .lda = nk,
                            .ldb = nk,
                            .ldc = ni};
        rc = submit_gemm(a, &x, tarn__tile(a, i, j), tarn__tile(a, k, i),
                         tarn__tile(a, k, j), step_priority(a, k, 0));
      }
    }
    for (size_t j = 0; rc == 0 && j < k; j++) {
      tarn_dep d[2] = {{tarn__tile(a, k, k), TARN_READ},
                       {tarn__tile(a, k, j), TARN_READ_WRITE}};
      struct inv_job x = {.m = nk, .n = side_of(a, j), .lda = nk, .ldb = nk};
      rc = submit(a, k_trmm, &x, d, 2, step_priority(a, k, 1), "trmm");
    }
    if (rc != 0) return rc;
    tarn_dep d[1] = {{tarn__tile(a, k, k), TARN_READ_WRITE}};
    struct inv_job x = {.n = nk, .lda = nk};
    rc = submit(a, k_lauum, &x, d, 1, step_priority(a, k, 2), "lauum");
  }
  return rc;
}

/* Step k of getri's X L = U^-1 (see the file's comment); w holds the
 * step's temporaries, tiles k .. nt - 1 of L's tile column k. */
static int submit_getri_step(tarn_matrix *a, size_t k, tarn_ref **w) {
  size_t nt = a->nt;
  int nk = side_of(a, k);
  int rc = 0;
  for (size_t i = k; rc == 0 && i < nt; i++) {
    int ni = side_of(a, i);
    rc = tarn_ref_create(tarn_rt_pool(a->rt),
                         (size_t)ni * (size_t)nk * sizeof(double), &w[i]);
    if (rc != 0) break;
    tarn_dep d[2] = {{tarn__tile(a, i, k), TARN_READ_WRITE},
                     {w[i], TARN_WRITE}};
    struct inv_job j = {
        .m = ni, .n = nk, .diag = i == k ? CblasUnit : CblasNonUnit};
    rc = submit(a, k_take, &j, d, 2, step_priority(a, nt - 1 - k, 3), "take");
  }
  for (size_t r = 0; rc == 0 && r < nt; r++) {
    int nr = side_of(a, r);
    for (size_t i = k + 1; rc == 0 && i < nt; i++) {
      int ni = side_of(a, i);
      struct inv_job j = {.ta = CblasNoTrans,
                          .tb = CblasNoTrans,
                          .m = nr,
                          .n = nk,
                          .k = ni,
                          .alpha = -1.0,
                          .lda = nr,
                          .ldb = ni,
                          .ldc = nr};
      rc = submit_gemm(a, &j, tarn__tile(a, r, k), tarn__tile(a, r, i), w[i],
                       step_priority(a, nt - 1 - k, 0));
    }
    if (rc != 0) break;
    struct inv_job j = {.side = CblasRight,
                        .uplo = CblasLower,
                        .diag = CblasUnit,
                        .m = nr,
                        .n = nk,
                        .alpha = 1.0,
                        .lda = nk,
                        .ldb = nr};
    rc = submit_trsm(a, &j, w[k], tarn__tile(a, r, k),
                     step_priority(a, nt - 1 - k, 2));
  }
  return rc;
}

/* getri after the trtri of U: the steps from the last tile column to the
 * first, then the interchanges. */
static int submit_getri(tarn_matrix *a, const size_t *piv) {
  size_t nt = a->nt;
  tarn_ref **w = calloc(nt, sizeof *w);
  tarn_dep *deps = malloc(nt * sizeof *deps);
  int rc = w == NULL || deps == NULL ? TARN_ENOMEM : 0;
  for (size_t k = nt; rc == 0 && k-- > 0;) {
    rc = submit_getri_step(a, k, w);
    for (size_t i = k; i < nt && w[i] != NULL; i++) {
      tarn_ref_release(w[i]); /* the tasks hold their own references */
      w[i] = NULL;
    }
  }
  for (size_t r = 0; rc == 0 && r < nt; r++) {
    for (size_t c = 0; c < nt; c++)
      deps[c] = (tarn_dep){tarn__tile(a, r, c), TARN_READ_WRITE};
    struct inv_job j = {
        .m = ld_of(a, r), .piv = piv, .count = a->n, .tile_columns = a->nb};
    rc = submit(a, k_interchange, &j, deps, nt, 0, "interchange");
  }
  free(deps);
  free(w);
  return rc;
}

/* ---- the calls ---------------------------------------------------------- */

/* Runs `fn` (submitting an inverse's tasks into a region of their own) and
 * waits for it. */
static int run_region(tarn_matrix *a, int (*fn)(tarn_matrix *, const void *),
                      const void *arg) {
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  int submitted = fn(a, arg);
  rc = tarn_region_wait(region, NULL); /* always: tasks were submitted */
  return submitted != 0 ? submitted : rc;
}

struct triangle_args {
  bool lower, unit;
};

static int triangle_tasks(tarn_matrix *a, const void *arg) {
  const struct triangle_args *t = arg;
  return submit_trtri(a, t->lower, t->unit);
}

static int cholesky_tasks(tarn_matrix *a, const void *arg) {
  (void)arg;
  int rc = submit_trtri(a, true, false);
  if (rc == 0) rc = submit_lauum(a);
  return rc == 0 ? tarn__submit_mirror(a) : rc;
}

static int lu_tasks(tarn_matrix *a, const void *arg) {
  int rc = submit_trtri(a, false, false);
  return rc == 0 ? submit_getri(a, arg) : rc;
}

/* The inverse on a copy of `a` in work tiles of w (tarn/linalg.h, "Small
 * tiles"; the room counted for the part copied): `part` of `a` copied
 * ('L' or 'U': a triangle, 'F': all), inverted there by `invert` (the
 * public call, on the copy, with `arg`), and `back` of it copied back
 * once that succeeded ('F': all, which the Cholesky and LU inverses fill;
 * a triangle: the triangular inverse's, the other triangle's elements
 * neither read nor written), so a zero on the diagonal, or any failure
 * before the copy back, leaves `a` as it was. */
static int inverse_work(tarn_matrix *a, char part, char back, size_t w,
                        int (*invert)(tarn_matrix *aw, const void *arg,
                                      int *info),
                        const void *arg, int *info) {
  tarn_matrix *aw = NULL;
  int rc = tarn__retile_part_waiting(a, part, w, w, &aw);
  if (rc == 0) rc = invert(aw, arg, info);
  if (rc == 0) rc = tarn__retile_part_waiting(aw, back, a->mb, a->nb, &a);
  tarn_matrix_destroy(aw);
  return rc;
}

static int cholesky_invert(tarn_matrix *lw, const void *arg, int *info) {
  (void)arg;
  return tarn_matrix_cholesky_inverse(lw, info);
}

static int lu_invert(tarn_matrix *luw, const void *piv, int *info) {
  return tarn_matrix_lu_inverse(luw, piv, info);
}

static int triangle_invert(tarn_matrix *tw, const void *arg, int *info) {
  const struct triangle_args *t = arg;
  return tarn_matrix_triangular_inverse(tw, t->lower ? TARN_LOWER : TARN_UPPER,
                                        t->unit ? TARN_UNIT : TARN_NON_UNIT,
                                        info);
}

/* The triangular inverse goes on a copy in work tiles only for tiles
 * smaller than this: alone (no lauum or getri after it) it has little to
 * gain from larger tiles, and at N = 1024 on 2 workers its tasks in tiles
 * of 64 took 5.3 to 5.4 ms against 6.3 to 6.5 on a copy in tiles of 256,
 * where in tiles of 32 they took 7.7 to 7.9 against 6.4 to 6.8, and in
 * tiles of 16 27 to 28 against 7.6 to 8.3 (medians of 21, a program
 * outside the repository, 2026-12-06). */
#define TRIANGLE_COPY_TILE_MAX 64

int tarn_matrix_triangular_inverse(tarn_matrix *t, tarn_uplo uplo,
                                   tarn_diag diag, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__triangle_shape_ok(t) ||
      (uplo != TARN_LOWER && uplo != TARN_UPPER) ||
      (diag != TARN_NON_UNIT && diag != TARN_UNIT))
    return TARN_EINVAL;
  if (!tarn__triangle_fits(t, uplo == TARN_LOWER)) return TARN_ENOMEM;
  tarn__blas_init();
  struct triangle_args args = {uplo == TARN_LOWER, diag == TARN_UNIT};
  /* in tiles under TRIANGLE_COPY_TILE_MAX: on a copy of its triangle
   * (tarn__triangle_copy_part) */
  char part = tarn__triangle_copy_part(t, args.lower);
  size_t work = part != 0 && t->nb < TRIANGLE_COPY_TILE_MAX
                    ? tarn__factor_work_tile(t, part)
                    : 0;
  if (work != 0)
    return inverse_work(t, part, part, work, triangle_invert, &args, info);
  if (!args.unit) {
    int rc = check_diagonal(t, info);
    if (rc != 0) return rc;
  }
  return run_region(t, triangle_tasks, &args);
}

int tarn_matrix_cholesky_inverse(tarn_matrix *l, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__factor_shape_ok(l)) return TARN_EINVAL;
  if (!tarn__triangle_fits(l, true)) return TARN_ENOMEM;
  tarn__blas_init();
  size_t work = tarn__factor_work_tile(l, 'F');
  if (work != 0)
    return inverse_work(l, 'L', 'F', work, cholesky_invert, NULL, info);
  int rc = check_diagonal(l, info);
  return rc != 0 ? rc : run_region(l, cholesky_tasks, NULL);
}

/* qr_ata_inverse: the lower triangle of c = R^T, from R in the top of `r`
 * (the factor of tarn_matrix_qr). */
static int transpose_r_tasks(tarn_matrix *c, const void *arg) {
  tarn_matrix *r = (tarn_matrix *)arg;
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < c->nt; j++)
    for (size_t i = j; rc == 0 && i < c->nt; i++) {
      tarn_dep d[2] = {{tarn__tile(c, i, j), TARN_WRITE},
                       {tarn__tile(r, j, i), TARN_READ}};
      struct inv_job x = {.m = side_of(c, i),
                          .n = side_of(c, j),
                          .lda = ld_of(r, j),
                          .diag = i == j ? CblasUnit : CblasNonUnit};
      rc = submit(c, k_transpose_r, &x, d, 2, 0, "transpose");
    }
  return rc;
}

int tarn_matrix_qr_ata_inverse(tarn_matrix *a, tarn_matrix **c, int *info) {
  if (info != NULL) *info = 0;
  if (c != NULL) *c = NULL;
  if (c == NULL || !tarn__triangle_shape_ok(a)) return TARN_EINVAL;
  tarn__blas_init();
  tarn_matrix *out = NULL;
  int rc = tarn__matrix_new(a->rt, a->n, a->n, a->nb, a->nb, &out);
  /* the largest tasks: R's tile into c's, and the Cholesky inverse's */
  if (rc == 0 && (!tarn__task_fits(a->rt, tarn__tile_charge_at(out, 0, 0) +
                                              tarn__tile_charge_at(a, 0, 0)) ||
                  !tarn__triangle_fits(out, true)))
    rc = TARN_ENOMEM;
  /* On small tiles, the same call on a copy of R in work tiles (the room
   * counted for R's triangle and the whole result), its result retiled
   * into out's tiles. */
  size_t work = 0;
  if (rc == 0)
    work = tarn__work_tile(a->rt, a->n, a->n, a->n,
                           (double)a->nb * (double)a->nb * (double)a->nb,
                           (tarn_matrix *[]){a, out}, 2, 'U');
  if (rc == 0 && work != 0) {
    tarn_matrix *rw = NULL, *cw = NULL;
    rc = tarn__retile_part_waiting(a, 'U', work, work, &rw);
    if (rc == 0) rc = tarn_matrix_qr_ata_inverse(rw, &cw, info);
    if (rc == 0) rc = tarn__retile_waiting(cw, out->mb, out->nb, &out);
    tarn_matrix_destroy(rw);
    tarn_matrix_destroy(cw);
  } else if (rc == 0) {
    /* R^T is the Cholesky factor of A^T A = R^T R */
    rc = check_diagonal_after(out, transpose_r_tasks, a, info);
    if (rc == 0) rc = run_region(out, cholesky_tasks, NULL);
  }
  if (rc != 0) {
    tarn_matrix_destroy(out);
    return rc;
  }
  *c = out;
  return 0;
}

/* Whether the LU inverse's largest tasks fit (tarn__task_fits): trtri's
 * on U (tarn__triangle_fits), getri's take and trsm (tile (0, 0) and a
 * temporary of its size: larger than the gemm where the edge tiles are
 * small, and the only such task of one tile), its gemm (tiles (0, 0) and
 * (0, 1) of the factors and the temporary of L's tile (1, 0)) and an
 * interchange's tile row. */
static bool lu_inverse_fits(const tarn_matrix *lu) {
  bool fits = tarn__line_fits(lu, true) && tarn__triangle_fits(lu, false) &&
              tarn__task_fits(lu->rt, 2 * tarn__tile_charge_at(lu, 0, 0));
  if (lu->nt >= 2)
    fits = fits && tarn__task_fits(lu->rt, tarn__tile_charge_at(lu, 0, 0) +
                                               tarn__tile_charge_at(lu, 0, 1) +
                                               tarn__tile_charge_at(lu, 1, 0));
  return fits;
}

int tarn_matrix_inverse(tarn_matrix *a, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__factor_shape_ok(a)) return TARN_EINVAL;
  if (!tarn__lu_fits(a) || !lu_inverse_fits(a)) return TARN_ENOMEM;
  size_t *piv = malloc(a->m * sizeof *piv);
  if (piv == NULL) return TARN_ENOMEM;
  /* LU reports an exact zero on U's diagonal itself: no check after it */
  int rc = tarn_matrix_lu(a, piv, info);
  size_t work = rc == 0 ? tarn__factor_work_tile(a, 'F') : 0;
  if (rc == 0)
    rc = work != 0 ? inverse_work(a, 'F', 'F', work, lu_invert, piv, NULL)
                   : run_region(a, lu_tasks, piv);
  free(piv);
  return rc;
}

int tarn_matrix_lu_inverse(tarn_matrix *lu, const size_t *piv, int *info) {
  if (info != NULL) *info = 0;
  if (piv == NULL || !tarn__factor_shape_ok(lu)) return TARN_EINVAL;
  for (size_t i = 0; i < lu->m; i++)
    if (piv[i] < i || piv[i] >= lu->m) return TARN_EINVAL;
  if (!lu_inverse_fits(lu)) return TARN_ENOMEM;
  tarn__blas_init();
  size_t work = tarn__factor_work_tile(lu, 'F');
  if (work != 0) return inverse_work(lu, 'F', 'F', work, lu_invert, piv, info);
  int rc = check_diagonal(lu, info);
  return rc != 0 ? rc : run_region(lu, lu_tasks, piv);
}
