/* starpu_tiles.h: what the StarPU peers of `tarn bench` share (rt_starpu.c,
 * linalg_starpu.c, ooc_starpu.c; built only where pkg-config finds
 * starpu-1.3): starting StarPU with CPU workers only, reporting its
 * failures, and the tiled Cholesky and the gemm tile task on registered
 * N x N tile handles (tile (i, j) at h[i + j nt], leading dimension = its
 * rows), with the kernels of linalg_peers.h. Not thread-safe: one StarPU
 * per process, driven from one thread. */
#ifndef TARN_BENCH_STARPU_TILES_H
#define TARN_BENCH_STARPU_TILES_H

#include <stddef.h>

#include <starpu.h>

/* Prints "tarn bench: SUITE: WHAT failed: <strerror(-rc)>"; returns 1. */
int bench_starpu_failed(const char *suite, const char *what, int rc);

/* starpu_init with `cpus` CPU workers and no accelerator, after the caller
 * set the environment (bench_starpu_environment). Returns 0, or 1 after
 * printing why (naming `suite`). */
int bench_starpu_start(const char *suite, unsigned cpus);

/* Inserts the tiled Cholesky (lower) of the nt x nt tiles h: potrf, trsm,
 * syrk and gemm with tarn's priorities (the panel first). Clears the
 * not-positive-definite flag first. Returns starpu_task_insert's status. */
int starpu_tiles_cholesky(size_t nt, starpu_data_handle_t *h);

/* Whether a potrf of the last starpu_tiles_cholesky found a tile that is
 * not positive definite (read after starpu_task_wait_for_all). */
int starpu_tiles_potrf_failed(void);

/* Inserts C += A B on one tile each (C = A B when `first`: C is then only
 * written, STARPU_W). Returns starpu_task_insert's status. */
int starpu_tiles_gemm(starpu_data_handle_t a, starpu_data_handle_t b,
                      starpu_data_handle_t c, int first);

#endif
