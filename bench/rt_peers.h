/* rt_peers.h: the peers of the `rt` suite of `tarn bench`, each in its own
 * source file so that its flags stay there: OpenMP tasks (rt_omp.c, built
 * with -fopenmp) and StarPU (rt_starpu.c, built only where pkg-config finds
 * starpu-1.3; TARN_BENCH_STARPU is defined then). Every measuring function
 * is a bench_fn: `reps` tasks per call, *seconds the time to completion. */
#ifndef TARN_BENCH_RT_PEERS_H
#define TARN_BENCH_RT_PEERS_H

#include <stddef.h>
#include <stdint.h>

/* OpenMP: `arg` points to an int, the number of threads. Empty tasks in a
 * single region, timed to the taskwait. */
int rt_omp_empty(void *arg, uint64_t reps, double *seconds);

/* OpenMP: a chain of tasks with depend(inout: x), each doing x += 1. */
int rt_omp_chain(void *arg, uint64_t reps, double *seconds);

/* OpenMP: `arg` points to a struct rt_omp_fill. reps parallel regions of
 * `threads` threads, each a parallel for (static schedule) over the n
 * columns of the n x n block, setting them to the region's number. */
struct rt_omp_fill {
  int threads;
  size_t n;
  double *block;
};
int rt_omp_fill(void *arg, uint64_t reps, double *seconds);

/* StarPU: starts it with `workers` CPU workers (quietly, its files in a
 * temporary directory). Returns 0, or 1 after printing why. */
int rt_starpu_open(unsigned workers);

/* StarPU: empty tasks (no buffers), timed to starpu_task_wait_for_all.
 * `arg` is unused. Needs rt_starpu_open. */
int rt_starpu_empty(void *arg, uint64_t reps, double *seconds);

/* StarPU: a chain of tasks with STARPU_RW on one registered variable,
 * each doing x += 1. Needs rt_starpu_open. */
int rt_starpu_chain(void *arg, uint64_t reps, double *seconds);

/* StarPU: unregisters its data and shuts it down. */
void rt_starpu_close(void);

#endif
