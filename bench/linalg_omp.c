/* linalg_omp.c: the OpenMP peer of the `linalg` suite (see linalg_peers.h),
 * built with -fopenmp: the same right-looking tiled Cholesky as tarn's and
 * StarPU's, one task per tile kernel with depend(in/inout) on the tiles,
 * created by one thread inside a single region of LINALG_PEER_THREADS
 * threads. The parallel region starts before the clock; the time ends at
 * the taskwait. */
#include <omp.h>
#include <stdio.h>

#include "bench.h"
#include "linalg_peers.h"

int linalg_omp_cholesky(linalg_tiles *t, double *seconds) {
  uint64_t t0 = 0, t1 = 0;
  int bad = 0;
  size_t nt = t->nt;
  double **a = t->tile;
#pragma omp parallel num_threads(LINALG_PEER_THREADS) shared(bad)
#pragma omp single
  {
    t0 = bench_now_ns();
    for (size_t k = 0; k < nt; k++) {
      size_t nk = linalg_side(t, k);
      double *akk = a[k + k * nt];
#pragma omp task depend(inout : akk[0]) shared(bad)
      {
        if (linalg_potrf(akk, nk) != 0) {
#pragma omp atomic write
          bad = 1;
        }
      }
      for (size_t i = k + 1; i < nt; i++) {
        double *aik = a[i + k * nt];
        size_t mi = linalg_side(t, i);
#pragma omp task depend(in : akk[0]) depend(inout : aik[0])
        linalg_trsm(akk, nk, aik, mi);
      }
      for (size_t j = k + 1; j < nt; j++) {
        double *ajk = a[j + k * nt];
        size_t mj = linalg_side(t, j);
        double *ajj = a[j + j * nt];
#pragma omp task depend(in : ajk[0]) depend(inout : ajj[0])
        linalg_syrk(ajk, mj, nk, ajj);
        for (size_t i = j + 1; i < nt; i++) {
          double *aik = a[i + k * nt];
          double *aij = a[i + j * nt];
          size_t mi = linalg_side(t, i);
#pragma omp task depend(in : aik[0], ajk[0]) depend(inout : aij[0])
          linalg_gemm_nt(aik, mi, ajk, mj, nk, aij);
        }
      }
    }
#pragma omp taskwait
    t1 = bench_now_ns();
  }
  if (bad) {
    fprintf(stderr,
            "tarn bench: linalg: openmp cholesky: not positive "
            "definite\n");
    return 1;
  }
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}
