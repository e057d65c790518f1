/* starpu_tiles.c: see starpu_tiles.h. The codelets call the tile kernels
 * of linalg_peers.h (OpenBLAS with one thread, as tarn's and the OpenMP
 * peer's), on tiles whose leading dimension is their row count. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "linalg_peers.h"
#include "starpu_tiles.h"

#define PTR(i) ((double *)STARPU_MATRIX_GET_PTR(buffers[i]))
#define ROWS(i) ((size_t)STARPU_MATRIX_GET_NX(buffers[i]))
#define COLS(i) ((size_t)STARPU_MATRIX_GET_NY(buffers[i]))

static int potrf_failed;

int bench_starpu_failed(const char *suite, const char *what, int rc) {
  fprintf(stderr, "tarn bench: %s: %s failed: %s\n", suite, what,
          strerror(-rc));
  return 1;
}

int bench_starpu_start(const char *suite, unsigned cpus) {
  struct starpu_conf conf;
  int rc = starpu_conf_init(&conf);
  if (rc != 0) return bench_starpu_failed(suite, "starpu_conf_init", rc);
  conf.ncpus = (int)cpus;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  conf.nmpi_ms = 0;
  rc = starpu_init(&conf);
  return rc == 0 ? 0 : bench_starpu_failed(suite, "starpu_init", rc);
}

static void potrf_cpu(void *buffers[], void *arg) {
  (void)arg;
  if (linalg_potrf(PTR(0), ROWS(0)) != 0)
    __atomic_store_n(&potrf_failed, 1, __ATOMIC_RELAXED);
}

/* A_ik = A_ik L_kk^-T (buffers: L_kk, A_ik). */
static void trsm_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_trsm(PTR(0), ROWS(0), PTR(1), ROWS(1));
}

/* A_jj -= A_jk A_jk^T, lower (buffers: A_jk, A_jj). */
static void syrk_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_syrk(PTR(0), ROWS(0), COLS(0), PTR(1));
}

/* A_ij -= A_ik A_jk^T (buffers: A_ik, A_jk, A_ij). */
static void gemm_nt_cpu(void *buffers[], void *arg) {
  (void)arg;
  linalg_gemm_nt(PTR(0), ROWS(0), PTR(1), ROWS(1), COLS(0), PTR(2));
}

/* C = A B + beta C (buffers: A, B, C). */
static void gemm_nn(void *buffers[], double beta) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ROWS(2),
              (int)COLS(2), (int)COLS(0), 1.0, PTR(0), (int)ROWS(0), PTR(1),
              (int)ROWS(1), beta, PTR(2), (int)ROWS(2));
}

static void gemm_first_cpu(void *buffers[], void *arg) {
  (void)arg;
  gemm_nn(buffers, 0.0);
}

static void gemm_next_cpu(void *buffers[], void *arg) {
  (void)arg;
  gemm_nn(buffers, 1.0);
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
static struct starpu_codelet gemm_first_cl = {
    .cpu_funcs = {gemm_first_cpu},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .name = "gemm_first"};
static struct starpu_codelet gemm_next_cl = {
    .cpu_funcs = {gemm_next_cpu},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_RW},
    .name = "gemm_next"};

int starpu_tiles_cholesky(size_t nt, starpu_data_handle_t *h) {
  potrf_failed = 0;
  int rc = 0;
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
  return rc;
}

int starpu_tiles_potrf_failed(void) {
  return __atomic_load_n(&potrf_failed, __ATOMIC_RELAXED);
}

int starpu_tiles_gemm(starpu_data_handle_t a, starpu_data_handle_t b,
                      starpu_data_handle_t c, int first) {
  return starpu_task_insert(first ? &gemm_first_cl : &gemm_next_cl, STARPU_R, a,
                            STARPU_R, b, first ? STARPU_W : STARPU_RW, c, 0);
}
