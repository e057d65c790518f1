/* linalg_starpu.c: the StarPU 1.3 peer of the `linalg` suite (see
 * linalg_peers.h), built only where pkg-config finds starpu-1.3. StarPU
 * runs with LINALG_PEER_THREADS CPU workers, silent, unbound, its files
 * under a temporary directory, its default scheduler. Each tile is
 * registered with starpu_matrix_data_register before the clock; the tasks
 * are starpu_tiles.c's (priorities as tarn's: potrf, then trsm, then the
 * updates; the first gemm on a C tile only writes it) and the clock ends at
 * starpu_task_wait_for_all; the tiles are unregistered after it. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "bench.h"
#include "linalg_peers.h"
#include "starpu_tiles.h"

static char home[PATH_MAX];

static int starpu_failed(const char *what, int rc) {
  return bench_starpu_failed("linalg", what, rc);
}

int linalg_starpu_open(void) {
  if (bench_starpu_environment("linalg", home, sizeof home) != 0) return 1;
  if (bench_starpu_start("linalg", (unsigned)LINALG_PEER_THREADS) == 0)
    return 0;
  bench_remove_tree(home); /* StarPU wrote there before it failed */
  return 1;
}

void linalg_starpu_close(void) {
  starpu_shutdown();
  bench_remove_tree(home);
}

/* Registers every tile of t into h (nt * nt handles). */
static starpu_data_handle_t *register_tiles(const linalg_tiles *t) {
  starpu_data_handle_t *h = malloc(t->nt * t->nt * sizeof *h);
  if (h == NULL) {
    fprintf(stderr, "tarn bench: linalg: out of memory\n");
    return NULL;
  }
  for (size_t j = 0; j < t->nt; j++)
    for (size_t i = 0; i < t->nt; i++) {
      size_t mi = linalg_side(t, i), nj = linalg_side(t, j);
      starpu_matrix_data_register(
          &h[i + j * t->nt], STARPU_MAIN_RAM, (uintptr_t)t->tile[i + j * t->nt],
          (uint32_t)mi, (uint32_t)mi, (uint32_t)nj, sizeof(double));
    }
  return h;
}

static void unregister_tiles(const linalg_tiles *t, starpu_data_handle_t *h) {
  for (size_t k = 0; k < t->nt * t->nt; k++) starpu_data_unregister(h[k]);
  free(h);
}

int linalg_starpu_cholesky(linalg_tiles *t, double *seconds) {
  size_t nt = t->nt;
  starpu_data_handle_t *h = register_tiles(t);
  if (h == NULL) return 1;
  uint64_t t0 = bench_now_ns();
  int rc = starpu_tiles_cholesky(nt, h);
  int wrc = starpu_task_wait_for_all();
  uint64_t t1 = bench_now_ns();
  unregister_tiles(t, h);
  if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  if (wrc != 0) return starpu_failed("starpu_task_wait_for_all", wrc);
  if (starpu_tiles_potrf_failed()) {
    fprintf(stderr,
            "tarn bench: linalg: starpu cholesky: not positive "
            "definite\n");
    return 1;
  }
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}

int linalg_starpu_gemm(linalg_tiles *a, linalg_tiles *b, linalg_tiles *c,
                       double *seconds) {
  size_t nt = c->nt;
  starpu_data_handle_t *ha = register_tiles(a);
  starpu_data_handle_t *hb = b == a ? ha : register_tiles(b);
  starpu_data_handle_t *hc = register_tiles(c);
  if (ha == NULL || hb == NULL || hc == NULL) return 1;
  int rc = 0;
  uint64_t t0 = bench_now_ns();
  for (size_t j = 0; j < nt && rc == 0; j++)
    for (size_t i = 0; i < nt && rc == 0; i++)
      for (size_t k = 0; k < nt && rc == 0; k++)
        rc = starpu_tiles_gemm(ha[i + k * nt], hb[k + j * nt], hc[i + j * nt],
                               k == 0);
  int wrc = starpu_task_wait_for_all();
  uint64_t t1 = bench_now_ns();
  unregister_tiles(c, hc);
  if (hb != ha) unregister_tiles(b, hb);
  unregister_tiles(a, ha);
  if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  if (wrc != 0) return starpu_failed("starpu_task_wait_for_all", wrc);
  *seconds = (double)(t1 - t0) * 1e-9;
  return 0;
}
