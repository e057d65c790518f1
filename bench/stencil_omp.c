/* stencil_omp.c: the OpenMP peer of the `stencil` suite (stencil_peers.h),
 * built with -fopenmp in an object library of its own: a parallel for over
 * steps of STENCIL_BLOCK columns running the same inline loop as the plain
 * C peer. */
#include <omp.h>

#include "stencil_peers.h"

void stencil_omp_run(int op, const double *x, double *a, double *out, size_t n,
                     unsigned threads) {
  long steps = (long)((n + STENCIL_BLOCK - 1) / STENCIL_BLOCK);
#pragma omp parallel for num_threads((int)threads) schedule(static)
  for (long c = 0; c < steps; c++) {
    size_t j0 = (size_t)c * STENCIL_BLOCK;
    size_t j1 = j0 + STENCIL_BLOCK < n ? j0 + STENCIL_BLOCK : n;
    stencil_cols(op, x, a, out, n, j0, j1);
  }
}
