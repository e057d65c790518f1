/* lu.c: tiled LU with partial pivoting and the linear solve built on it
 * (see tarn/linalg.h). Right-looking, one panel per tile column: the panel
 * task factors the whole tile column (copied into one contiguous buffer)
 * with LAPACKE_dgetrf_work and records the pivots; swap tasks apply them
 * to the other tile columns, trsm and gemm tasks update the rest. Each
 * task owns a small job struct freed by the runtime when it is done.
 * blas_init, submit_job and blas_sized are copies of linalg.c's. */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "tarn/linalg.h"

/* What one tile task needs; owned by the task. */
struct lu_job {
  int m, n, k;       /* the tile op's sizes (BLAS meaning) */
  int lda, ldb, ldc; /* leading dimensions of the tiles */
  bool upper;        /* trsm: U (non-unit) instead of unit L */
  size_t tb;         /* tile size of the matrix (rows of a full tile) */
  size_t row0;       /* panel / swap: the first row of the tile row k */
  size_t rows;       /* panel / swap: rows from row0 to the end */
  size_t first;      /* swap: first interchange to apply (global row) */
  size_t count;      /* swap: number of interchanges */
  size_t ntiles;     /* panel / swap: tiles in the column from row0 */
  size_t slot0;      /* swap: data slot of the first tile */
  size_t *piv;       /* panel: where pivots go; swap: where they are */
  atomic_int *info;  /* panel: the first exactly zero pivot (1-based) */
};

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct lu_job *proto,
                      const tarn_dep *deps, size_t ndeps, int priority,
                      const char *name) {
  return tarn__submit_owned(rt, fn, proto, sizeof *proto, deps, ndeps, priority,
                            name);
}

/* ---- kernels ------------------------------------------------------------ */

/* Factors tile column k from its diagonal tile down (deps: tiles (k..,k),
 * slots 0..ntiles-1); pivots to piv[row0..row0+n). */
static int k_panel(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  size_t rows = j->rows, cols = (size_t)j->n;
  bool heap_a, heap_p;
  double *p = tarn__task_memory(t, rows * cols * sizeof *p, &heap_a);
  lapack_int *ipiv = tarn__task_memory(t, cols * sizeof *ipiv, &heap_p);
  int rc = 0;
  if (p == NULL || ipiv == NULL) {
    rc = TARN_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < j->ntiles; i++) {
    const double *tile = tarn_task_data(t, i);
    size_t r = rows - i * j->tb < j->tb ? rows - i * j->tb : j->tb;
    for (size_t c = 0; c < cols; c++)
      memcpy(p + i * j->tb + c * rows, tile + c * r, r * sizeof *p);
  }
  lapack_int info =
      LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (lapack_int)rows, (lapack_int)cols,
                          p, (lapack_int)rows, ipiv);
  if (info < 0) {
    rc = TARN_EINVAL;
    goto out;
  }
  if (info > 0) {
    /* Panels run in order: the first failure is the smallest index. */
    int expected = 0;
    atomic_compare_exchange_strong(j->info, &expected,
                                   (int)(j->row0 + (size_t)info));
  }
  for (size_t c = 0; c < cols; c++)
    j->piv[j->row0 + c] = j->row0 + (size_t)ipiv[c] - 1;
  for (size_t i = 0; i < j->ntiles; i++) {
    double *tile = tarn_task_data(t, i);
    size_t r = rows - i * j->tb < j->tb ? rows - i * j->tb : j->tb;
    for (size_t c = 0; c < cols; c++)
      memcpy(tile + c * r, p + i * j->tb + c * rows, r * sizeof *p);
  }
out:
  if (heap_a) free(p);
  if (heap_p) free(ipiv);
  return rc;
}

/* Applies interchanges first..first+count of piv to the rows row0.. of a
 * tile column of `n` columns (deps from slot0: its tiles from row0 down). */
static int k_swap(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  size_t tb = j->tb, ncols = (size_t)j->n;
  for (size_t q = j->first; q < j->first + j->count; q++) {
    size_t a = q - j->row0, b = j->piv[q] - j->row0;
    if (a == b) continue;
    size_t ta = a / tb, tbb = b / tb;
    size_t ra = j->rows - ta * tb < tb ? j->rows - ta * tb : tb;
    size_t rb = j->rows - tbb * tb < tb ? j->rows - tbb * tb : tb;
    double *xa = (double *)tarn_task_data(t, j->slot0 + ta) + a % tb;
    double *xb = (double *)tarn_task_data(t, j->slot0 + tbb) + b % tb;
    for (size_t c = 0; c < ncols; c++) {
      double v = xa[c * ra];
      xa[c * ra] = xb[c * rb];
      xb[c * rb] = v;
    }
  }
  return 0;
}

/* B = L^-1 B (unit lower) or U^-1 B (deps: the diagonal tile, B). */
static int k_trsm(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  const double *l = tarn_task_data(t, 0);
  double *b = tarn_task_data(t, 1);
  cblas_dtrsm(CblasColMajor, CblasLeft, j->upper ? CblasUpper : CblasLower,
              CblasNoTrans, j->upper ? CblasNonUnit : CblasUnit, j->m, j->n,
              1.0, l, j->lda, b, j->ldb);
  return 0;
}

/* C -= A B (deps: C, A, B). */
static int k_gemm(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  double *c = tarn_task_data(t, 0);
  const double *a = tarn_task_data(t, 1), *b = tarn_task_data(t, 2);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, j->m, j->n, j->k, -1.0,
              a, j->lda, b, j->ldb, 1.0, c, j->ldc);
  return 0;
}

/* ---- LU ------------------------------------------------------------------ */

/* Priorities: the panel on top; for tile column j after panel k, its swap,
 * trsm and updates by the distance of j from the panel (the next column
 * first: it holds the next panel); swaps of the finished columns last. */
enum { PRIO_TOP = 1 << 24 };

static int column_priority(size_t k, size_t j, int stage) {
  size_t p = 1 + 3 * (j - k - 1) + (size_t)stage;
  return p >= PRIO_TOP ? 0 : PRIO_TOP - (int)p;
}

/* Swap task for tile column j after panel k (deps: A(k,k) to order it
 * after the panel, tiles (k..mt-1, j)). */
static int submit_swap(tarn_matrix *a, size_t k, size_t j, size_t *piv,
                       tarn_dep *deps, int priority) {
  size_t mt = a->mt, nt = mt - k;
  deps[0] = (tarn_dep){tarn__tile(a, k, k), TARN_READ};
  for (size_t i = k; i < mt; i++)
    deps[1 + i - k] = (tarn_dep){tarn__tile(a, i, j), TARN_READ_WRITE};
  struct lu_job s = {.n = (int)tarn__tile_cols(a, j),
                     .tb = a->mb,
                     .row0 = k * a->mb,
                     .rows = a->m - k * a->mb,
                     .first = k * a->mb,
                     .count = tarn__tile_cols(a, k),
                     .ntiles = nt,
                     .slot0 = 1,
                     .piv = piv};
  return submit_job(a->rt, k_swap, &s, deps, nt + 1, priority, "laswp");
}

static int submit_lu(tarn_matrix *a, size_t *piv, atomic_int *info,
                     tarn_dep *deps) {
  size_t mt = a->mt;
  for (size_t k = 0; k < mt; k++) {
    int nk = (int)tarn__tile_rows(a, k);
    for (size_t i = k; i < mt; i++)
      deps[i - k] = (tarn_dep){tarn__tile(a, i, k), TARN_READ_WRITE};
    struct lu_job p = {.n = nk,
                       .tb = a->mb,
                       .row0 = k * a->mb,
                       .rows = a->m - k * a->mb,
                       .ntiles = mt - k,
                       .piv = piv,
                       .info = info};
    int rc = submit_job(a->rt, k_panel, &p, deps, mt - k, PRIO_TOP, "getrf");
    if (rc != 0) return rc;
    for (size_t j = k + 1; j < mt; j++) {
      int nj = (int)tarn__tile_cols(a, j);
      rc = submit_swap(a, k, j, piv, deps, column_priority(k, j, 0));
      if (rc != 0) return rc;
      tarn_ref *akj = tarn__tile(a, k, j);
      tarn_dep d2[2] = {{tarn__tile(a, k, k), TARN_READ},
                        {akj, TARN_READ_WRITE}};
      struct lu_job s = {.m = nk, .n = nj, .lda = nk, .ldb = nk};
      rc = submit_job(a->rt, k_trsm, &s, d2, 2, column_priority(k, j, 1),
                      "trsm");
      if (rc != 0) return rc;
      for (size_t i = k + 1; i < mt; i++) {
        int ni = (int)tarn__tile_rows(a, i);
        tarn_dep d3[3] = {{tarn__tile(a, i, j), TARN_READ_WRITE},
                          {tarn__tile(a, i, k), TARN_READ},
                          {akj, TARN_READ}};
        struct lu_job g = {
            .m = ni, .n = nj, .k = nk, .lda = ni, .ldb = nk, .ldc = ni};
        rc = submit_job(a->rt, k_gemm, &g, d3, 3, column_priority(k, j, 2),
                        "gemm");
        if (rc != 0) return rc;
      }
    }
    /* The left part, as dgetrf does: off the critical path. */
    for (size_t j = 0; j < k; j++) {
      rc = submit_swap(a, k, j, piv, deps, 0);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

int tarn_matrix_lu(tarn_matrix *a, size_t *piv, int *info) {
  if (info != NULL) *info = 0;
  if (a == NULL || piv == NULL || a->m != a->n || a->mb != a->nb ||
      !tarn__blas_sized(a) || a->m > INT_MAX)
    return TARN_EINVAL;
  tarn__blas_init();
  tarn_dep *deps = malloc((a->mt + 1) * sizeof *deps);
  if (deps == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    free(deps);
    return rc;
  }
  atomic_int failed = 0;
  int submitted = submit_lu(a, piv, &failed, deps);
  /* Always wait: tasks already submitted point at `failed` and piv. */
  rc = tarn_region_wait(region, NULL);
  free(deps);
  if (submitted != 0) return submitted;
  if (rc != 0) return rc;
  int order = atomic_load(&failed);
  if (order > 0) {
    if (info != NULL) *info = order;
    return TARN_EINVAL;
  }
  return 0;
}

/* ---- solve --------------------------------------------------------------- */

static int submit_solve(tarn_matrix *a, tarn_matrix *b, size_t *piv,
                        tarn_dep *deps) {
  size_t mt = a->mt;
  int rc = 0;
  /* P B: all n interchanges on each tile column of B (a's diagonal tile
   * is not needed for ordering: the factorisation is done). */
  for (size_t j = 0; j < b->nt; j++) {
    for (size_t i = 0; i < mt; i++)
      deps[i] = (tarn_dep){tarn__tile(b, i, j), TARN_READ_WRITE};
    struct lu_job s = {.n = (int)tarn__tile_cols(b, j),
                       .tb = b->mb,
                       .row0 = 0,
                       .rows = b->m,
                       .first = 0,
                       .count = b->m,
                       .ntiles = mt,
                       .slot0 = 0,
                       .piv = piv};
    rc = submit_job(a->rt, k_swap, &s, deps, mt, PRIO_TOP, "laswp");
    if (rc != 0) return rc;
  }
  /* L Y = P B walking down the tile rows, then U X = Y walking up. */
  for (int pass = 0; pass < 2; pass++)
    for (size_t step = 0; step < mt; step++) {
      size_t k = pass == 0 ? step : mt - 1 - step;
      int nk = (int)tarn__tile_rows(a, k);
      tarn_ref *akk = tarn__tile(a, k, k);
      for (size_t j = 0; j < b->nt; j++) {
        int nj = (int)tarn__tile_cols(b, j);
        tarn_ref *bkj = tarn__tile(b, k, j);
        tarn_dep d2[2] = {{akk, TARN_READ}, {bkj, TARN_READ_WRITE}};
        struct lu_job s = {
            .m = nk, .n = nj, .lda = nk, .ldb = nk, .upper = pass == 1};
        rc = submit_job(a->rt, k_trsm, &s, d2, 2, PRIO_TOP - 1, "trsm");
        if (rc != 0) return rc;
        size_t lo = pass == 0 ? k + 1 : 0, hi = pass == 0 ? mt : k;
        for (size_t i = lo; i < hi; i++) {
          int ni = (int)tarn__tile_rows(a, i);
          tarn_dep d3[3] = {{tarn__tile(b, i, j), TARN_READ_WRITE},
                            {tarn__tile(a, i, k), TARN_READ},
                            {bkj, TARN_READ}};
          struct lu_job g = {
              .m = ni, .n = nj, .k = nk, .lda = ni, .ldb = nk, .ldc = ni};
          rc = submit_job(a->rt, k_gemm, &g, d3, 3, 0, "gemm");
          if (rc != 0) return rc;
        }
      }
    }
  return 0;
}

int tarn_matrix_solve(tarn_matrix *a, tarn_matrix *b, int *info) {
  if (info != NULL) *info = 0;
  if (a == NULL || b == NULL || a == b || a->rt != b->rt || b->m != a->m ||
      b->mb != a->mb || !tarn__blas_sized(b))
    return TARN_EINVAL;
  if (a->m != a->n || a->mb != a->nb || !tarn__blas_sized(a) || a->m > INT_MAX)
    return TARN_EINVAL;
  size_t *piv = malloc(a->m * sizeof *piv);
  tarn_dep *deps = malloc((a->mt + 1) * sizeof *deps);
  int rc = piv == NULL || deps == NULL ? TARN_ENOMEM : 0;
  if (rc == 0) rc = tarn_matrix_lu(a, piv, info);
  tarn_region *region = NULL;
  if (rc == 0) rc = tarn_region_begin(a->rt, &region);
  if (rc == 0) {
    int submitted = submit_solve(a, b, piv, deps);
    rc = tarn_region_wait(region, NULL);
    if (submitted != 0) rc = submitted;
  }
  free(piv);
  free(deps);
  return rc;
}
