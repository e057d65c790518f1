/* rt_omp.c: the OpenMP peer of the `rt` suite (see rt_peers.h), the only
 * file built with -fopenmp. Tasks are created by one thread inside a single
 * region of a parallel region of the given thread count; the parallel
 * region starts before the clock, the time ends at the taskwait. */
#include <omp.h>
#include <stdio.h>

#include "bench.h"
#include "rt_peers.h"

int rt_omp_empty(void *arg, uint64_t reps, double *seconds) {
  int threads = *(const int *)arg;
  uint64_t t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < reps; i++) {
#pragma omp task
      { bench_escape(NULL); }
    }
#pragma omp taskwait
    t1 = bench_now_ns();
  }
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}

int rt_omp_chain(void *arg, uint64_t reps, double *seconds) {
  int threads = *(const int *)arg;
  uint64_t t0 = 0, t1 = 0, x = 0;
#pragma omp parallel num_threads(threads) shared(x)
#pragma omp single
  {
    t0 = bench_now_ns();
    for (uint64_t i = 0; i < reps; i++) {
#pragma omp task shared(x) depend(inout : x)
      x += 1;
    }
#pragma omp taskwait
    t1 = bench_now_ns();
  }
  if (x != reps) {
    fprintf(stderr,
            "tarn bench: rt: openmp chain counted %llu, expected %llu\n",
            (unsigned long long)x, (unsigned long long)reps);
    return 1;
  }
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}

int rt_omp_fill(void *arg, uint64_t reps, double *seconds) {
  const struct rt_omp_fill *f = arg;
  long n = (long)f->n;
  double *block = f->block;
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < reps; i++) {
    double value = (double)(i + 1);
#pragma omp parallel for schedule(static) num_threads(f->threads)
    for (long c = 0; c < n; c++)
      for (long r = 0; r < n; r++) block[r + c * n] = value;
    bench_escape(block);
  }
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  if (reps > 0 && block[n * n - 1] != (double)reps) {
    fprintf(stderr, "tarn bench: rt: openmp fill holds %g, expected %g\n",
            block[n * n - 1], (double)reps);
    return 1;
  }
  return 0;
}
