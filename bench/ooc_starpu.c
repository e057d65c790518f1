/* ooc_starpu.c: the StarPU 1.3 peer of the `ooc` suite (see ooc_peers.h),
 * built only where pkg-config finds starpu-1.3. StarPU runs with one CPU
 * worker per core, silent, unbound, its default scheduler, its files under a
 * temporary directory. Under a limit, STARPU_LIMIT_CPU_MEM (MiB) is set
 * before starpu_init and a disk node is registered with the O_DIRECT unistd
 * backend (starpu_disk_unistd_o_direct_ops) in a fresh directory under the
 * spill directory, so that, as tarn's, evicted tiles are read back from the
 * disk and not from the page cache.
 *
 * StarPU evicts only data it allocated itself, so every tile is registered
 * with home node -1 and written by fill tasks (STARPU_W) in the untimed
 * setup. The operations are starpu_tiles.c's tiled Cholesky (the tasks and
 * priorities of the linalg suite's peer) and C = A B with the task order of
 * tarn's gemm (K outermost, the first K tile only writing C); the
 * clock ends at starpu_task_wait_for_all. Spilled and restored bytes are the
 * process's disk writes and reads (/proc/self/io) during the operation. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "bench.h"
#include "ooc_peers.h"
#include "starpu_tiles.h"

#define PTR(i) ((double *)STARPU_MATRIX_GET_PTR(buffers[i]))
#define ROWS(i) ((int)STARPU_MATRIX_GET_NX(buffers[i]))
#define COLS(i) ((int)STARPU_MATRIX_GET_NY(buffers[i]))
#define LD(i) ((int)STARPU_MATRIX_GET_LD(buffers[i]))

/* Fills a tile of input `which`: arguments which, n, i0, j0. */
static void fill_cpu(void *buffers[], void *arg) {
  int which;
  size_t n, i0, j0;
  starpu_codelet_unpack_args(arg, &which, &n, &i0, &j0);
  ooc_fill(which, n, i0, j0, (size_t)ROWS(0), (size_t)COLS(0), PTR(0),
           (size_t)LD(0));
}

static struct starpu_codelet fill_cl = {.cpu_funcs = {fill_cpu},
                                        .nbuffers = 1,
                                        .modes = {STARPU_W},
                                        .name = "fill"};
/* A StarPU child: its directories and its tiles (a for Cholesky; a, b
 * and c = a b for matmul; nt * nt handles each, tile (i, j) at i + j nt). */
struct state {
  const ooc_job *job;
  size_t nt;
  char home[PATH_MAX];
  char disk[PATH_MAX];
  int started;
  starpu_data_handle_t *a, *b, *c;
};

static int starpu_failed(const char *what, int rc) {
  return bench_starpu_failed("ooc", what, rc);
}

static size_t side(const struct state *st, size_t i) {
  size_t rest = st->job->n - i * st->job->b;
  return rest < st->job->b ? rest : st->job->b;
}

/* Registers nt * nt tiles that StarPU allocates (home node -1). */
static starpu_data_handle_t *register_tiles(const struct state *st) {
  size_t nt = st->nt;
  starpu_data_handle_t *h = calloc(nt * nt, sizeof *h);
  if (h == NULL) {
    fprintf(stderr, "tarn bench: ooc: out of memory\n");
    return NULL;
  }
  for (size_t j = 0; j < nt; j++)
    for (size_t i = 0; i < nt; i++) {
      uint32_t rows = (uint32_t)side(st, i), cols = (uint32_t)side(st, j);
      starpu_matrix_data_register(&h[i + j * nt], -1, 0, rows, rows, cols,
                                  sizeof(double));
    }
  return h;
}

/* Drops the tiles without bringing them anywhere. */
static void unregister_tiles(const struct state *st, starpu_data_handle_t *h) {
  if (h == NULL) return;
  for (size_t k = 0; k < st->nt * st->nt; k++)
    starpu_data_unregister_no_coherency(h[k]);
  free(h);
}

/* Writes input `which` into the tiles h and waits. */
static int fill_tiles(const struct state *st, starpu_data_handle_t *h,
                      int which) {
  size_t n = st->job->n, nt = st->nt;
  int rc = 0;
  for (size_t j = 0; j < nt && rc == 0; j++)
    for (size_t i = 0; i < nt && rc == 0; i++) {
      size_t i0 = i * st->job->b, j0 = j * st->job->b;
      rc = starpu_task_insert(&fill_cl, STARPU_W, h[i + j * nt], STARPU_VALUE,
                              &which, sizeof which, STARPU_VALUE, &n, sizeof n,
                              STARPU_VALUE, &i0, sizeof i0, STARPU_VALUE, &j0,
                              sizeof j0, 0);
    }
  int wrc = starpu_task_wait_for_all();
  if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  return wrc == 0 ? 0 : starpu_failed("starpu_task_wait_for_all", wrc);
}

/* C = A B, K outermost as tarn_matrix_gemm submits it. */
static int insert_matmul(size_t nt, starpu_data_handle_t *a,
                         starpu_data_handle_t *b, starpu_data_handle_t *c) {
  int rc = 0;
  for (size_t k = 0; k < nt && rc == 0; k++)
    for (size_t j = 0; j < nt && rc == 0; j++)
      for (size_t i = 0; i < nt && rc == 0; i++)
        rc = starpu_tiles_gemm(a[i + k * nt], b[k + j * nt], c[i + j * nt],
                               k == 0);
  return rc;
}

/* The operation, timed into *seconds. */
static int operation(struct state *st, double *seconds) {
  uint64_t t0 = bench_now_ns();
  int rc = st->job->op == OOC_CHOLESKY
               ? starpu_tiles_cholesky(st->nt, st->a)
               : insert_matmul(st->nt, st->a, st->b, st->c);
  int wrc = starpu_task_wait_for_all();
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  if (wrc != 0) return starpu_failed("starpu_task_wait_for_all", wrc);
  if (!starpu_tiles_potrf_failed()) return 0;
  fprintf(stderr, "tarn bench: ooc: starpu cholesky: not positive definite\n");
  return 1;
}

/* One sample (a fresh input for Cholesky first); adds its counters to *f. */
static int sample(struct state *st, double *seconds, ooc_figures *f) {
  if (st->job->op == OOC_CHOLESKY && fill_tiles(st, st->a, OOC_SPD) != 0)
    return 1;
  uint64_t r0, w0, r1, w1;
  if (ooc_disk_io(&r0, &w0) != 0 || ooc_rss_peak_reset() != 0 ||
      operation(st, seconds) != 0)
    return 1;
  double peak = ooc_rss_peak();
  if (peak < 0 || ooc_disk_io(&r1, &w1) != 0) return 1;
  if (peak > f->peak_rss) f->peak_rss = peak;
  f->spilled += (double)(w1 - w0);
  f->restored += (double)(r1 - r0);
  f->disk_read += (double)(r1 - r0);
  return 0;
}

static const double *tile_get(void *ctx, size_t ti, size_t tj, size_t *ld) {
  struct state *st = ctx;
  starpu_data_handle_t h =
      (st->job->op == OOC_CHOLESKY ? st->a : st->c)[ti + tj * st->nt];
  int rc = starpu_data_acquire(h, STARPU_R);
  if (rc != 0) {
    starpu_failed("starpu_data_acquire", rc);
    return NULL;
  }
  *ld = starpu_matrix_get_local_ld(h);
  return (const double *)starpu_matrix_get_local_ptr(h);
}

static void tile_put(void *ctx, size_t ti, size_t tj) {
  struct state *st = ctx;
  starpu_data_release(
      (st->job->op == OOC_CHOLESKY ? st->a : st->c)[ti + tj * st->nt]);
}

/* Sets StarPU's environment for the job (a limit or none, no swap of the
 * user's) and starts it. */
static int start(struct state *st) {
  if (bench_starpu_environment("ooc", st->home, sizeof st->home) != 0) return 1;
  char mib[32];
  snprintf(mib, sizeof mib, "%zu", st->job->limit >> 20);
  int rc = st->job->limit > 0 ? setenv("STARPU_LIMIT_CPU_MEM", mib, 1)
                              : unsetenv("STARPU_LIMIT_CPU_MEM");
  if (rc != 0 || unsetenv("STARPU_DISK_SWAP") != 0) {
    fprintf(stderr, "tarn bench: ooc: setenv: %s\n", strerror(errno));
    return 1;
  }
  if (bench_starpu_start("ooc", (unsigned)st->job->cores) != 0) return 1;
  st->started = 1;
  return 0;
}

/* Registers the disk node (job->limit > 0): big enough for all the data
 * twice. Returns 0, or 1 with out->note set. */
static int add_disk(struct state *st, ooc_figures *out) {
  snprintf(st->disk, sizeof st->disk, "%s/tarn-bench-starpu-disk-XXXXXX",
           st->job->dir);
  if (bench_temp_dir(st->disk) == NULL) {
    snprintf(out->note, sizeof out->note,
             "not measured: cannot make a directory for the disk node: %s",
             strerror(errno));
    st->disk[0] = '\0';
    return 1;
  }
  size_t n = st->job->n;
  starpu_ssize_t size = (starpu_ssize_t)(6 * n * n * sizeof(double));
  if (size < STARPU_DISK_SIZE_MIN) size = STARPU_DISK_SIZE_MIN;
  int node =
      starpu_disk_register(&starpu_disk_unistd_o_direct_ops, st->disk, size);
  if (node >= 0) return 0;
  snprintf(out->note, sizeof out->note,
           "not measured: starpu_disk_register (O_DIRECT) failed: %s",
           strerror(-node));
  return 1;
}

static int measure(struct state *st, ooc_figures *f) {
  int matmul = st->job->op == OOC_MATMUL;
  if ((st->a = register_tiles(st)) == NULL) return 1;
  if (matmul && ((st->b = register_tiles(st)) == NULL ||
                 (st->c = register_tiles(st)) == NULL))
    return 1;
  if (matmul &&
      (fill_tiles(st, st->a, OOC_A) != 0 || fill_tiles(st, st->b, OOC_B) != 0))
    return 1;
  double warm;
  ooc_figures scratch = *f;
  if (sample(st, &warm, &scratch) != 0) return 1;
  for (size_t i = 0; i < st->job->samples; i++)
    if (sample(st, &f->seconds[i], f) != 0) return 1;
  f->spilled /= (double)st->job->samples;
  f->restored /= (double)st->job->samples;
  f->disk_read /= (double)st->job->samples;
  ooc_reader reader = {st, tile_get, tile_put};
  return ooc_residual(st->job, &reader, &f->residual);
}

int ooc_starpu_run(const ooc_job *job, ooc_figures *out) {
  struct state st;
  memset(&st, 0, sizeof st);
  st.job = job;
  st.nt = (job->n + job->b - 1) / job->b;
  snprintf(out->io_mode, sizeof out->io_mode, "%s",
           job->limit > 0 ? "o_direct" : "none");
  int failed = start(&st);
  /* Without a disk node the row is a note, not a failure. */
  if (!failed && (job->limit == 0 || add_disk(&st, out) == 0)) {
    out->base_rss = ooc_rss_now();
    failed = out->base_rss < 0 || measure(&st, out) != 0;
  }
  unregister_tiles(&st, st.a);
  unregister_tiles(&st, st.b);
  unregister_tiles(&st, st.c);
  if (st.started) starpu_shutdown();
  if (st.disk[0] != '\0') bench_remove_tree(st.disk);
  if (st.home[0] != '\0') bench_remove_tree(st.home);
  return failed;
}
