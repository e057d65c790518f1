/* linalg.c: tiled linear algebra (see tarn/linalg.h). Each tile kernel is
 * one task calling OpenBLAS/LAPACKE on pinned tiles (column-major, ld =
 * the tile's own row count, see array/matrix_internal.h); each task owns a
 * small job struct freed by the runtime when it is done. OpenBLAS is set
 * to one thread once, on the first call. */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "tarn/linalg.h"

/* In libopenblas (not every cblas.h declares it). */
extern void openblas_set_num_threads(int);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single_thread(void) { openblas_set_num_threads(1); }

void tarn__blas_init(void) { pthread_once(&blas_once, blas_single_thread); }

bool tarn__blas_sized(const tarn_matrix *a) {
  return a->mb <= INT_MAX && a->nb <= INT_MAX;
}

void *tarn__task_memory(tarn_task *t, size_t bytes, bool *heap) {
  void *p = NULL;
  *heap = false;
  if (tarn_task_scratch(t, bytes, 64, &p) == 0) return p;
  *heap = true;
  return malloc(bytes);
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

/* ---- gemm --------------------------------------------------------------- */

/* A gemm tile task's operands, shared with idle workers by ranges of C's
 * columns (or rows, for a tall C such as a matrix-vector product). */
struct gemm_share {
  const struct job *j;
  const double *a, *b;
  double *c;
  bool by_rows;
};

/* Columns or rows [begin, end) of C = alpha op(A) op(B) + beta C. */
static int gemm_range(void *arg, size_t begin, size_t end) {
  const struct gemm_share *g = arg;
  const struct job *j = g->j;
  size_t lda = (size_t)j->lda, ldb = (size_t)j->ldb, ldc = (size_t)j->ldc;
  const double *a = g->a, *b = g->b;
  double *c = g->c;
  int m = j->m, n = j->n;
  if (g->by_rows) { /* rows of op(A) and C */
    a += j->ta ? begin * lda : begin;
    c += begin;
    m = (int)(end - begin);
  } else { /* columns of op(B) and C */
    b += j->tb ? begin : begin * ldb;
    c += begin * ldc;
    n = (int)(end - begin);
  }
  cblas_dgemm(CblasColMajor, j->ta ? CblasTrans : CblasNoTrans,
              j->tb ? CblasTrans : CblasNoTrans, m, n, j->k, j->alpha, a,
              j->lda, b, j->ldb, j->beta, c, j->ldc);
  return 0;
}

/* Ranges below this many rows or columns are not worth a helper. */
#define GEMM_GRAIN 64

static int k_gemm(tarn_task *t, void *arg) {
  const struct job *j = arg;
  struct gemm_share g = {j, tarn_task_data(t, j->sa), tarn_task_data(t, j->sb),
                         tarn_task_data(t, j->sc), j->m > j->n};
  return tarn_task_parallel_for(t, (size_t)(g.by_rows ? j->m : j->n),
                                GEMM_GRAIN, gemm_range, &g);
}

int tarn_matrix_gemm(tarn_matrix *a, tarn_trans ta, tarn_matrix *b,
                     tarn_trans tb, double alpha, double beta,
                     tarn_matrix **c) {
  if (a == NULL || b == NULL || c == NULL || a->rt != b->rt) return TARN_EINVAL;
  if ((ta != TARN_NO_TRANS && ta != TARN_TRANS) ||
      (tb != TARN_NO_TRANS && tb != TARN_TRANS))
    return TARN_EINVAL;
  if (*c == a || *c == b || !tarn__blas_sized(a) || !tarn__blas_sized(b))
    return TARN_EINVAL;
  bool tra = ta == TARN_TRANS, trb = tb == TARN_TRANS;
  /* op(A) is M x K in tiles am x ak; op(B) is K x N in tiles bk x bn. */
  size_t m = tra ? a->n : a->m, ka = tra ? a->m : a->n;
  size_t am = tra ? a->nb : a->mb, ak = tra ? a->mb : a->nb;
  size_t kb = trb ? b->n : b->m, n = trb ? b->m : b->n;
  size_t bk = trb ? b->nb : b->mb, bn = trb ? b->mb : b->nb;
  size_t kt = tra ? a->mt : a->nt;
  if (ka != kb || ak != bk) return TARN_EINVAL;
  tarn__blas_init();
  bool made = false;
  if (*c == NULL) beta = 0;
  int rc = tarn__matrix_destination(a->rt, m, n, am, bn, c, &made);
  if (rc != 0) return rc;
  tarn_matrix *cm = *c;
  /* k outermost: the first layer of every C tile is ready at once. */
  for (size_t k = 0; rc == 0 && k < kt; k++)
    for (size_t tj = 0; rc == 0 && tj < cm->nt; tj++)
      for (size_t ti = 0; rc == 0 && ti < cm->mt; ti++) {
        bool first = k == 0;
        tarn_dep deps[3] = {
            {tarn__tile(cm, ti, tj),
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
            .alpha = alpha,
            .beta = first ? beta : 1.0,
            .sc = tarn__dep_slot(deps, 0),
            .sa = tarn__dep_slot(deps, 1),
            .sb = tarn__dep_slot(deps, 2)};
        rc = submit_job(a->rt, k_gemm, &j, deps, 3, 0, "gemm");
      }
  if (rc != 0 && made) {
    tarn_matrix_destroy(*c);
    *c = NULL;
  }
  return rc;
}

/* ---- Cholesky ----------------------------------------------------------- */

static int k_potrf(tarn_task *t, void *arg) {
  const struct job *j = arg;
  double *a = tarn_task_data(t, 0);
  lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', j->n, a, j->lda);
  if (info == 0) return 0;
  if (info > 0) {
    int expected = 0;
    atomic_compare_exchange_strong(j->info, &expected,
                                   (int)(j->offset + (size_t)info));
  }
  return TARN_EINVAL;
}

/* A_ik = A_ik L_kk^-T (deps: L_kk, A_ik). */
static int k_trsm(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *l = tarn_task_data(t, 0);
  double *b = tarn_task_data(t, 1);
  cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit,
              j->m, j->n, 1.0, l, j->lda, b, j->ldb);
  return 0;
}

/* A_ii -= A_ik A_ik^T, lower triangle (deps: A_ik, A_ii). */
static int k_syrk(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *a = tarn_task_data(t, 0);
  double *c = tarn_task_data(t, 1);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, j->n, j->k, -1.0, a,
              j->lda, 1.0, c, j->ldc);
  return 0;
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
  if (a == NULL || a->m != a->n || a->mb != a->nb || !tarn__blas_sized(a))
    return TARN_EINVAL;
  tarn__blas_init();
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  atomic_int failed = 0;
  int submitted = submit_cholesky(a, &failed);
  /* Always wait: tasks already submitted point at `failed`. */
  rc = tarn_region_wait(region, NULL);
  int order = atomic_load(&failed);
  if (order > 0) {
    if (info != NULL) *info = order;
    return TARN_EINVAL;
  }
  return submitted != 0 ? submitted : rc;
}
