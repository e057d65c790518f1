/* linalg_starpu.c: the StarPU 1.3 peer of the `linalg` suite (see
 * linalg_peers.h), built only where pkg-config finds starpu-1.3. StarPU
 * runs with LINALG_PEER_THREADS CPU workers, silent, unbound, its files
 * under a temporary directory, its default scheduler. Each tile is
 * registered with starpu_matrix_data_register before the clock; tasks go
 * through starpu_task_insert (STARPU_R / STARPU_RW, priorities as tarn's:
 * potrf, then trsm, then the updates) and the clock ends at
 * starpu_task_wait_for_all; the tiles are unregistered after it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "bench.h"
#include "linalg_peers.h"

static char home[64];
static int potrf_failed;

#define PTR(i) ((double *)STARPU_MATRIX_GET_PTR(buffers[i]))
#define ROWS(i) ((size_t)STARPU_MATRIX_GET_NX(buffers[i]))
#define COLS(i) ((size_t)STARPU_MATRIX_GET_NY(buffers[i]))

static void potrf_cpu(void *buffers[], void *arg) {
  (void)arg;
  if (linalg_potrf(PTR(0), ROWS(0)) != 0)
    __atomic_store_n(&potrf_failed, 1, __ATOMIC_RELAXED);
}

static void trsm_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_trsm(PTR(0), ROWS(0), PTR(1), ROWS(1));
}

static void syrk_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_syrk(PTR(0), ROWS(0), COLS(0), PTR(1));
}

static void gemm_nt_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_gemm_nt(PTR(0), ROWS(0), PTR(1), ROWS(1), COLS(0), PTR(2));
}

/* C = A B + beta C, beta passed by value. */
static void gemm_nn_cpu(void *buffers[], void *arg) {
  double beta;
  starpu_codelet_unpack_args(arg, &beta);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ROWS(2),
              (int)COLS(2), (int)COLS(0), 1.0, PTR(0), (int)ROWS(0), PTR(1),
              (int)ROWS(1), beta, PTR(2), (int)ROWS(2));
}

static struct starpu_codelet potrf_cl = {.cpu_funcs = {potrf_cpu},
                                         .nbuffers = 1,
                                         .modes = {STARPU_RW},
                                         .name = "potrf"};
static struct starpu_codelet trsm_cl = {.cpu_funcs = {trsm_cpu},
                                        .nbuffers = 2,
                                        .modes = {STARPU_R, STARPU_RW},
                                        .name = "trsm"};
static struct starpu_codelet syrk_cl = {.cpu_funcs = {syrk_cpu},
                                        .nbuffers = 2,
                                        .modes = {STARPU_R, STARPU_RW},
                                        .name = "syrk"};
static struct starpu_codelet gemm_nt_cl = {
    .cpu_funcs = {gemm_nt_cpu},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .name = "gemm_nt"};
static struct starpu_codelet gemm_nn_cl = {
    .cpu_funcs = {gemm_nn_cpu},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .name = "gemm_nn"};

static int starpu_failed(const char *what, int rc) {
  fprintf(stderr, "tarn bench: linalg: %s failed: %s\n", what, strerror(-rc));
  return 1;
}

int linalg_starpu_open(void) {
  if (bench_starpu_environment("linalg", home, sizeof home) != 0) return 1;
  struct starpu_conf conf;
  int rc = starpu_conf_init(&conf);
  if (rc != 0) return starpu_failed("starpu_conf_init", rc);
  conf.ncpus = LINALG_PEER_THREADS;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  conf.nmpi_ms = 0;
  rc = starpu_init(&conf);
  return rc == 0 ? 0 : starpu_failed("starpu_init", rc);
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
  potrf_failed = 0;
  int rc = 0;
  uint64_t t0 = bench_now_ns();
  for (size_t k = 0; k < nt && rc == 0; k++) {
    int top = STARPU_MAX_PRIO;
    rc = starpu_task_insert(&potrf_cl, STARPU_RW, h[k + k * nt],
                            STARPU_PRIORITY, top, 0);
    for (size_t i = k + 1; i < nt && rc == 0; i++)
      rc = starpu_task_insert(&trsm_cl, STARPU_R, h[k + k * nt], STARPU_RW,
                              h[i + k * nt], STARPU_PRIORITY, top - 1, 0);
    for (size_t j = k + 1; j < nt && rc == 0; j++) {
      int prio = j == k + 1 ? top - 2 : STARPU_DEFAULT_PRIO;
      rc = starpu_task_insert(&syrk_cl, STARPU_R, h[j + k * nt], STARPU_RW,
                              h[j + j * nt], STARPU_PRIORITY, prio, 0);
      for (size_t i = j + 1; i < nt && rc == 0; i++)
        rc = starpu_task_insert(&gemm_nt_cl, STARPU_R, h[i + k * nt], STARPU_R,
                                h[j + k * nt], STARPU_RW, h[i + j * nt],
                                STARPU_PRIORITY, prio, 0);
    }
  }
  int wrc = starpu_task_wait_for_all();
  uint64_t t1 = bench_now_ns();
  unregister_tiles(t, h);
  if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  if (wrc != 0) return starpu_failed("starpu_task_wait_for_all", wrc);
  if (potrf_failed) {
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
      for (size_t k = 0; k < nt && rc == 0; k++) {
        double beta = k == 0 ? 0.0 : 1.0;
        rc = starpu_task_insert(&gemm_nn_cl, STARPU_R, ha[i + k * nt], STARPU_R,
                                hb[k + j * nt], STARPU_RW, hc[i + j * nt],
                                STARPU_VALUE, &beta, sizeof beta, 0);
      }
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
