/* linalg_peers.h: the tiled peers of the `linalg` suite of `tarn bench`
 * (linalg.c): an N x N matrix as an array of tiles (tile (i, j) at
 * tiles[i + j * nt], column-major with its own row count as leading
 * dimension, as tarn's), the tile kernels of a right-looking Cholesky
 * (potrf, trsm, syrk, gemm on OpenBLAS/LAPACKE, one BLAS thread) shared by
 * the OpenMP peer (linalg_omp.c, built with -fopenmp) and the StarPU peer
 * (linalg_starpu.c, built only where pkg-config finds starpu-1.3; then
 * TARN_BENCH_STARPU is defined for linalg.c). */
#ifndef TARN_BENCH_LINALG_PEERS_H
#define TARN_BENCH_LINALG_PEERS_H

#include <cblas.h>
#include <lapacke.h>
#include <stddef.h>

/* Threads of the OpenMP peer and CPU workers of the StarPU peer: what
 * linalg_peer_threads_set chose (--workers), else tarn's default workers
 * (bench_default_threads). */
int linalg_peer_threads(void);
void linalg_peer_threads_set(int threads);
#define LINALG_PEER_THREADS linalg_peer_threads()

/* OpenBLAS's threads for the next calls (not in every cblas.h): the suite
 * sets the peers' LAPACKE rows' threads, and 1 again for tarn. */
void openblas_set_num_threads(int threads);

/* An N x N matrix cut into nt x nt tiles of b (the last ones smaller). */
typedef struct linalg_tiles {
  size_t n, b, nt;
  double **tile; /* nt * nt tiles */
} linalg_tiles;

/* The side of tile row or column i. */
static inline size_t linalg_side(const linalg_tiles *t, size_t i) {
  size_t rest = t->n - i * t->b;
  return rest < t->b ? rest : t->b;
}

/* A[k][k] = its Cholesky factor L (lower). Returns LAPACK's info. */
static inline int linalg_potrf(double *akk, size_t nk) {
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (int)nk, akk, (int)nk);
}

/* A[i][k] = A[i][k] L[k][k]^-T. */
static inline void linalg_trsm(const double *lkk, size_t nk, double *aik,
                               size_t mi) {
  cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit,
              (int)mi, (int)nk, 1.0, lkk, (int)nk, aik, (int)mi);
}

/* A[i][i] -= A[i][k] A[i][k]^T (lower triangle). */
static inline void linalg_syrk(const double *aik, size_t mi, size_t nk,
                               double *aii) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)mi, (int)nk, -1.0,
              aik, (int)mi, 1.0, aii, (int)mi);
}

/* A[i][j] -= A[i][k] A[j][k]^T. */
static inline void linalg_gemm_nt(const double *aik, size_t mi,
                                  const double *ajk, size_t mj, size_t nk,
                                  double *aij) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)mi, (int)mj,
              (int)nk, -1.0, aik, (int)mi, ajk, (int)mj, 1.0, aij, (int)mi);
}

/* Allocates the tiles of an n x n matrix of tile size b. Returns 0 or 1
 * after printing why. */
int linalg_tiles_alloc(linalg_tiles *t, size_t n, size_t b);

/* Frees them (a zeroed struct is a no-op). */
void linalg_tiles_free(linalg_tiles *t);

/* Copies a column-major n x n buffer into the tiles, or back. */
void linalg_tiles_from(linalg_tiles *t, const double *buf);
void linalg_tiles_to(const linalg_tiles *t, double *buf);

/* OpenMP tasks with depend (LINALG_PEER_THREADS threads): tiled Cholesky
 * of t in place. The clock runs from inside the parallel region to the
 * taskwait; *seconds gets it. Returns 0, or 1 after printing why (a tile
 * that is not positive definite). */
int linalg_omp_cholesky(linalg_tiles *t, double *seconds);

/* StarPU: starts it with LINALG_PEER_THREADS CPU workers (quiet, its files
 * in a temporary directory). Returns 0, or 1 after printing why. */
int linalg_starpu_open(void);

/* StarPU: tiled Cholesky of t in place, the tiles registered before the
 * clock and unregistered after it; the clock ends at
 * starpu_task_wait_for_all. Returns 0, or 1 after printing why. */
int linalg_starpu_cholesky(linalg_tiles *t, double *seconds);

/* StarPU: C = A * B on tiles (one task per C tile and K tile, STARPU_RW on
 * the C tile), timed as linalg_starpu_cholesky. */
int linalg_starpu_gemm(linalg_tiles *a, linalg_tiles *b, linalg_tiles *c,
                       double *seconds);

/* StarPU: shuts it down and removes its files. */
void linalg_starpu_close(void);

#endif
