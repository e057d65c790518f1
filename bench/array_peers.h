/* array_peers.h: the loops of the `array` suite's peers (array.c): the
 * operations on a plain N x N column-major buffer of doubles, as one inline
 * function over a range of columns, so that the plain C loop (array.c) and
 * the OpenMP loop (array_omp.c, built with -fopenmp) run the same code.
 * Reductions use four partial sums (a single chain would be bound by the
 * add latency, not by memory); the transpose goes in ARRAY_BLOCK x
 * ARRAY_BLOCK blocks; sin is libm's. */
#ifndef TARN_BENCH_ARRAY_PEERS_H
#define TARN_BENCH_ARRAY_PEERS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The operations, in the order of BENCH.md's table. */
enum array_op {
  ARRAY_RAND,      /* out = uniform random numbers (tarn_matrix_rand's hash) */
  ARRAY_ADD,       /* out = x + x */
  ARRAY_AXPB,      /* out = 1 * x + 1 */
  ARRAY_SIN,       /* out = sin(x) */
  ARRAY_SUM,       /* returns the sum of x */
  ARRAY_NORM,      /* returns the sum of x^2 (the caller takes the root) */
  ARRAY_TRANSPOSE, /* out = x^T */
  ARRAY_OP_COUNT
};

/* Columns per step of the OpenMP loop, and the transpose's block. */
#define ARRAY_BLOCK 32

/* tarn_matrix_rand's generator (src/array/matrix.c): splitmix64. */
static inline uint64_t array_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

/* Does `op` for columns [j0, j1) of the n x n result (of x, for the
 * reductions) and returns the partial sum of a reduction, else 0. */
static inline double array_cols(int op, uint64_t seed, const double *x,
                                double *out, size_t n, size_t j0, size_t j1) {
  size_t k0 = j0 * n, k1 = j1 * n;
  switch (op) {
    case ARRAY_RAND: {
      uint64_t key = array_mix(seed);
      for (size_t j = j0; j < j1; j++) {
        uint64_t column = array_mix(key ^ (uint64_t)j);
        for (size_t i = 0; i < n; i++)
          out[i + j * n] =
              (double)(array_mix(column ^ (uint64_t)i) >> 11) * 0x1.0p-53;
      }
      return 0;
    }
    case ARRAY_ADD:
      for (size_t k = k0; k < k1; k++) out[k] = x[k] + x[k];
      return 0;
    case ARRAY_AXPB:
      for (size_t k = k0; k < k1; k++) out[k] = 1.0 * x[k] + 1.0;
      return 0;
    case ARRAY_SIN:
      for (size_t k = k0; k < k1; k++) out[k] = sin(x[k]);
      return 0;
    case ARRAY_SUM: {
      double s[4] = {0, 0, 0, 0};
      size_t k = k0;
      for (; k + 4 <= k1; k += 4)
        for (int h = 0; h < 4; h++) s[h] += x[k + h];
      for (; k < k1; k++) s[0] += x[k];
      return (s[0] + s[1]) + (s[2] + s[3]);
    }
    case ARRAY_NORM: {
      double s[4] = {0, 0, 0, 0};
      size_t k = k0;
      for (; k + 4 <= k1; k += 4)
        for (int h = 0; h < 4; h++) s[h] += x[k + h] * x[k + h];
      for (; k < k1; k++) s[0] += x[k] * x[k];
      return (s[0] + s[1]) + (s[2] + s[3]);
    }
    case ARRAY_TRANSPOSE:
      for (size_t jb = j0; jb < j1; jb += ARRAY_BLOCK) {
        size_t je = jb + ARRAY_BLOCK < j1 ? jb + ARRAY_BLOCK : j1;
        for (size_t ib = 0; ib < n; ib += ARRAY_BLOCK) {
          size_t ie = ib + ARRAY_BLOCK < n ? ib + ARRAY_BLOCK : n;
          for (size_t j = jb; j < je; j++)
            for (size_t i = ib; i < ie; i++) out[i + j * n] = x[j + i * n];
        }
      }
      return 0;
    default:
      return 0;
  }
}

/* The OpenMP peer (array_omp.c): `#pragma omp parallel for` with
 * `threads` threads over steps of ARRAY_BLOCK columns, static
 * schedule, a reduction(+) for the sums. Returns as array_cols. */
double array_omp_run(int op, uint64_t seed, const double *x, double *out,
                     size_t n, unsigned threads);

#endif
