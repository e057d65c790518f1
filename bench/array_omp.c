/* array_omp.c: the OpenMP peer of the `array` suite (array_peers.h), the
 * suite's only file built with -fopenmp: a parallel for over steps of
 * ARRAY_BLOCK columns running the same inline loop as the plain C peer. */
#include <omp.h>

#include "array_peers.h"

double array_omp_run(int op, uint64_t seed, const double *x, double *out,
                     size_t n, unsigned threads) {
  double s = 0;
  long steps = (long)((n + ARRAY_BLOCK - 1) / ARRAY_BLOCK);
#pragma omp parallel for num_threads((int)threads) schedule(static) \
    reduction(+ : s)
  for (long c = 0; c < steps; c++) {
    size_t j0 = (size_t)c * ARRAY_BLOCK;
    size_t j1 = j0 + ARRAY_BLOCK < n ? j0 + ARRAY_BLOCK : n;
    s += array_cols(op, seed, x, out, n, j0, j1);
  }
  return s;
}
