/* ooc_peers.h: what the `ooc` suite of `tarn bench` (ooc.c) shares with its
 * StarPU peer (ooc_starpu.c, built only where pkg-config finds starpu-1.3;
 * then TARN_BENCH_STARPU is defined for ooc.c). A child process measures one
 * configuration (an ooc_job) and fills an ooc_figures; the inputs are the
 * same for both peers (ooc_fill), and so is the check of the result
 * (ooc_residual, reading the result tile by tile through an ooc_reader).
 * The process figures (resident set, bytes read from disk) come from
 * /proc/self. */
#ifndef TARN_BENCH_OOC_PEERS_H
#define TARN_BENCH_OOC_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

/* The operations of the suite. */
enum { OOC_CHOLESKY, OOC_MATMUL, OOC_OPS };

/* The inputs: an SPD matrix (Cholesky's A), and matmul's A and B. */
enum { OOC_SPD, OOC_A, OOC_B };

/* One configuration, measured in a process of its own. */
typedef struct ooc_job {
  int op;          /* OOC_CHOLESKY or OOC_MATMUL */
  size_t n, b;     /* N x N matrices of b x b tiles */
  size_t limit;    /* memory limit in bytes; 0: none (in core) */
  size_t samples;  /* measured samples, after one warm-up */
  unsigned cores;  /* workers (tarn) or CPU workers (StarPU) */
  const char *dir; /* where spilled data goes */
} ooc_job;

/* What a child measured. Byte counts are per sample (the mean of the
 * measured samples); the peak is the largest of them. */
typedef struct ooc_figures {
  double seconds[BENCH_SAMPLES_MAX];
  double base_rss;  /* resident set before the inputs were made */
  double peak_rss;  /* highest resident set during a timed operation */
  double spilled;   /* bytes written to the spill store */
  double restored;  /* bytes read back from it */
  double disk_read; /* bytes the process read from the disk */
  double residual;  /* scaled residual of the result (ooc_residual) */
  char io_mode[32]; /* how spilled bytes leave memory */
  char note[160];   /* non-empty: not measured, and why */
} ooc_figures;

/* Element (i, j) of the N x N input `which` (OOC_SPD: symmetric, entries
 * in [0, 1) plus N on the diagonal, so diagonally dominant; OOC_A, OOC_B:
 * uniform in [0, 1)). Depends only on (which, n, i, j). */
double ooc_element(int which, size_t n, size_t i, size_t j);

/* Fills rows i0.. and columns j0.. (rows x cols) of input `which` into dst,
 * column-major with leading dimension ld. */
void ooc_fill(int which, size_t n, size_t i0, size_t j0, size_t rows,
              size_t cols, double *dst, size_t ld);

/* Reads a result tile by tile: get returns tile (ti, tj), column-major
 * with leading dimension *ld (NULL after printing why it failed); put
 * ends that access. */
typedef struct ooc_reader {
  void *ctx;
  const double *(*get)(void *ctx, size_t ti, size_t tj, size_t *ld);
  void (*put)(void *ctx, size_t ti, size_t tj);
} ooc_reader;

/* Checks the result of job->op against the inputs on a random vector x:
 * Cholesky ||L (L^T x) - A x|| / (||A||_F ||x|| n eps) from the lower
 * triangle of the factor; matmul ||C x - A (B x)|| / (||A||_F ||B||_F
 * ||x|| n eps). Stores it in *residual. Returns 0, or 1 when a tile could
 * not be read. */
int ooc_residual(const ooc_job *job, const ooc_reader *reader,
                 double *residual);

/* The flops of job->op at job->n. */
double ooc_flops(int op, size_t n);

/* The process's resident set now and its high-water mark (bytes, from
 * /proc/self/status VmRSS and VmHWM; -1 after printing why not). */
double ooc_rss_now(void);
double ooc_rss_peak(void);

/* Restarts the high-water mark at the current resident set (writes 5 to
 * /proc/self/clear_refs). Returns 0, or 1 after printing why not. */
int ooc_rss_peak_reset(void);

/* Bytes the process has read from and written to the storage layer
 * (/proc/self/io read_bytes, write_bytes). Returns 0, or 1 after printing
 * why not. */
int ooc_disk_io(uint64_t *read_bytes, uint64_t *write_bytes);

/* Runs job on StarPU (in this process, which must not have started StarPU
 * before) and fills *out: with job->limit, STARPU_LIMIT_CPU_MEM and a disk
 * node in a temporary directory under job->dir. Returns 0 (out->note set
 * when StarPU's out-of-core could not run), or 1 after printing why. */
int ooc_starpu_run(const ooc_job *job, ooc_figures *out);

#endif
