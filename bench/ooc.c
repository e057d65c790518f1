/* ooc.c: the `ooc` suite of `tarn bench` ("larger than memory"): tiled
 * Cholesky and matrix multiply (C = A B) on N x N matrices whose data does
 * not fit the memory limit (--mem-limit, else 2/3 of the data, rounded down
 * to a MiB), against the same run with no limit, on tarn and on StarPU 1.3
 * (ooc_starpu.c: STARPU_LIMIT_CPU_MEM and an O_DIRECT disk node).
 *
 * Each configuration runs in a fresh process (`tarn bench __ooc-child`,
 * bench_ooc_child) so that its resident set is its own. The child builds
 * the inputs in an untimed setup (which spills under the limit), then for a
 * warm-up and each sample restarts the kernel's high-water mark of the
 * resident set (/proc/self/clear_refs) and times the operation alone. It
 * reports the samples, the peak resident set of the timed operations
 * (VmHWM, getrusage's ru_maxrss but restartable, so that the setup's
 * whole-matrix buffers do not count), the resident set before any input
 * was made, the bytes spilled and restored per sample, the bytes
 * the process read from the disk (/proc/self/io), and a scaled residual of
 * the result, computed after the figures are taken. The parent prints a
 * row per configuration and the goals of BENCH.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bench.h"
#include "ooc_peers.h"
#include "tarn.h"

/* In libopenblas (not every cblas.h declares it). */
extern void openblas_set_num_threads(int);

#define MIB (1024.0 * 1024.0)
/* N of `tarn bench ooc` (8 x 8 tiles of 512, 128 MiB a matrix: about a
 * minute for the suite on 2 cores) and of the run of every suite, told
 * apart by run->suite_count (4 x 4 tiles: under 10 s). */
#define SUITE_N 4096
#define ALL_SUITES_N 2048
/* Peak RSS allowed beyond the limit and the child's resident set before
 * its inputs exist (OpenBLAS's packing buffers and the stacks of each
 * worker, the allocator's slack): MARGIN_FIXED_MIB + MARGIN_WORKER_MIB per
 * worker. Measured on 2 cores at N=2048 and 4096, in core and limited:
 * 1.9, 3.3 to 5.1 and 6.1 to 8.2 MiB for 1, 2 and 4 workers. */
#define MARGIN_FIXED_MIB 8.0
#define MARGIN_WORKER_MIB 4.0
/* A scaled residual above this is a wrong result. */
#define RESIDUAL_MAX 10.0

enum { SEED_SPD = 21, SEED_A = 22, SEED_B = 23, SEED_X = 24 };

static const char *const op_names[OOC_OPS] = {"cholesky", "matmul (A*B)"};

/* ---- inputs, the residual and the process's figures (ooc_peers.h) ----- */

/* splitmix64's finaliser. */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1) from (seed, i, j). */
static double unit(uint64_t seed, size_t i, size_t j) {
  uint64_t h = mix(seed ^ mix(((uint64_t)i << 32) ^ (uint64_t)j));
  return (double)(h >> 11) * 0x1p-53;
}

double ooc_element(int which, size_t n, size_t i, size_t j) {
  if (which == OOC_SPD)
    return (i > j ? unit(SEED_SPD, i, j) : unit(SEED_SPD, j, i)) +
           (i == j ? (double)n : 0.0);
  return unit(which == OOC_A ? SEED_A : SEED_B, i, j);
}

void ooc_fill(int which, size_t n, size_t i0, size_t j0, size_t rows,
              size_t cols, double *dst, size_t ld) {
  for (size_t c = 0; c < cols; c++)
    for (size_t r = 0; r < rows; r++)
      dst[r + c * ld] = ooc_element(which, n, i0 + r, j0 + c);
}

double ooc_flops(int op, size_t n) {
  double x = (double)n;
  return op == OOC_CHOLESKY ? x * x * x / 3 : 2 * x * x * x;
}

/* y = M x for the input `which` (n x n), made element by element; returns
 * ||M||_F. */
static double input_times(int which, size_t n, const double *x, double *y) {
  double norm2 = 0;
  memset(y, 0, n * sizeof *y);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      double a = ooc_element(which, n, i, j);
      y[i] += a * x[j];
      norm2 += a * a;
    }
  return sqrt(norm2);
}

/* out += T in (transposed: out += T^T in) over the tile (ti, tj) of the
 * result; lower: only the elements on and below the matrix's diagonal. */
static int tile_times(const ooc_job *job, const ooc_reader *r, size_t ti,
                      size_t tj, int transposed, int lower, const double *in,
                      double *out) {
  size_t ld, i0 = ti * job->b, j0 = tj * job->b;
  size_t rows = job->n - i0 < job->b ? job->n - i0 : job->b;
  size_t cols = job->n - j0 < job->b ? job->n - j0 : job->b;
  const double *t = r->get(r->ctx, ti, tj, &ld);
  if (t == NULL) return 1;
  for (size_t c = 0; c < cols; c++)
    for (size_t k = 0; k < rows; k++) {
      size_t i = i0 + k, j = j0 + c;
      if (lower && i < j) continue;
      if (transposed)
        out[j] += t[k + c * ld] * in[i];
      else
        out[i] += t[k + c * ld] * in[j];
    }
  r->put(r->ctx, ti, tj);
  return 0;
}

/* out = R in (or R^T in), R the result read through r (lower: its lower
 * triangle). */
static int result_times(const ooc_job *job, const ooc_reader *r, int transposed,
                        int lower, const double *in, double *out) {
  size_t nt = (job->n + job->b - 1) / job->b;
  memset(out, 0, job->n * sizeof *out);
  for (size_t tj = 0; tj < nt; tj++)
    for (size_t ti = lower ? tj : 0; ti < nt; ti++)
      if (tile_times(job, r, ti, tj, transposed, lower, in, out) != 0) return 1;
  return 0;
}

static double norm2(const double *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i] * v[i];
  return sqrt(s);
}

int ooc_residual(const ooc_job *job, const ooc_reader *reader,
                 double *residual) {
  size_t n = job->n;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  double *w = malloc(n * sizeof *w), *z = malloc(n * sizeof *z);
  int failed = x == NULL || y == NULL || w == NULL || z == NULL;
  if (failed) fprintf(stderr, "tarn bench: ooc: out of memory\n");
  double scale = 0;
  if (!failed) {
    for (size_t i = 0; i < n; i++) x[i] = unit(SEED_X, i, 0) - 0.5;
    if (job->op == OOC_CHOLESKY) {
      scale = input_times(OOC_SPD, n, x, y);
      failed = result_times(job, reader, 1, 1, x, w) != 0 ||
               result_times(job, reader, 0, 1, w, z) != 0;
    } else {
      scale = input_times(OOC_B, n, x, w);
      scale *= input_times(OOC_A, n, w, y);
      failed = result_times(job, reader, 0, 0, x, z) != 0;
    }
  }
  if (!failed) {
    for (size_t i = 0; i < n; i++) z[i] -= y[i];
    *residual = norm2(z, n) / (scale * norm2(x, n) * (double)n * DBL_EPSILON);
  }
  free(x);
  free(y);
  free(w);
  free(z);
  return failed;
}

/* The value of the line "KEY: value" of a /proc/self file, or -1. */
static double proc_field(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "tarn bench: ooc: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[256];
  size_t len = strlen(key);
  double value = -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, key, len) == 0 && line[len] == ':') {
      value = strtod(line + len + 1, NULL);
      break;
    }
  fclose(f);
  if (value < 0) fprintf(stderr, "tarn bench: ooc: no %s in %s\n", key, path);
  return value;
}

double ooc_rss_now(void) {
  double kib = proc_field("/proc/self/status", "VmRSS");
  return kib < 0 ? -1 : kib * 1024;
}

double ooc_rss_peak(void) {
  double kib = proc_field("/proc/self/status", "VmHWM");
  return kib < 0 ? -1 : kib * 1024;
}

int ooc_rss_peak_reset(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "5", 1) != 1) {
    fprintf(stderr, "tarn bench: ooc: cannot restart the peak RSS: %s\n",
            strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  close(fd);
  return 0;
}

int ooc_disk_io(uint64_t *read_bytes, uint64_t *write_bytes) {
  double r = proc_field("/proc/self/io", "read_bytes");
  double w = proc_field("/proc/self/io", "write_bytes");
  if (r < 0 || w < 0) return 1;
  *read_bytes = (uint64_t)r;
  *write_bytes = (uint64_t)w;
  return 0;
}

/* ---- the child: tarn ---------------------------------------------------- */

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("ooc", what, status);
}

/* A private anonymous mapping of `bytes` (munmap gives it back at once,
 * whatever malloc's thresholds), or NULL after printing why. */
static double *map_buffer(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) return p;
  fprintf(stderr, "tarn bench: ooc: cannot map %zu bytes: %s\n", bytes,
          strerror(errno));
  return NULL;
}

/* *out = the input `which` as a tiled matrix, through a whole-matrix
 * buffer that is unmapped before returning. */
static int make_input(tarn_rt *rt, const ooc_job *job, int which,
                      tarn_matrix **out) {
  size_t n = job->n, bytes = n * n * sizeof(double);
  double *buf = map_buffer(bytes);
  if (buf == NULL) return 1;
  ooc_fill(which, n, 0, 0, n, n, buf, n);
  *out = NULL;
  int rc = tarn_matrix_from_buffer(rt, n, n, job->b, job->b, buf, n, out);
  munmap(buf, bytes);
  return rc == 0 ? 0 : tarn_failed("tarn_matrix_from_buffer", rc);
}

/* A tarn child's matrices: Cholesky's a, or matmul's a, b and c = a b. */
struct tarn_child {
  tarn_rt *rt;
  tarn_matrix *a, *b, *c;
};

/* The operation, timed into *seconds. */
static int tarn_operation(struct tarn_child *t, const ooc_job *job,
                          double *seconds) {
  int rc, info = 0;
  uint64_t t0 = bench_now_ns();
  if (job->op == OOC_CHOLESKY) {
    rc = tarn_matrix_cholesky(t->a, &info);
  } else {
    tarn_region *region;
    rc = tarn_region_begin(t->rt, &region);
    if (rc != 0) return tarn_failed("tarn_region_begin", rc);
    int submitted = tarn_matrix_gemm(t->a, TARN_NO_TRANS, t->b, TARN_NO_TRANS,
                                     1.0, 0.0, &t->c);
    rc = tarn_region_wait(region, NULL);
    if (submitted != 0) rc = submitted;
  }
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  if (rc == 0) return 0;
  if (info > 0)
    fprintf(stderr, "tarn bench: ooc: cholesky: leading minor %d\n", info);
  size_t task_bytes = 3 * job->b * job->b * sizeof(double);
  if (rc == TARN_ENOMEM && job->limit > 0 && job->limit < task_bytes)
    fprintf(stderr,
            "tarn bench: ooc: the limit (%zu bytes) is below the 3 tiles a "
            "task pins (%zu bytes)\n",
            job->limit, task_bytes);
  return tarn_failed(op_names[job->op], rc);
}

/* One sample (for Cholesky, a fresh input first): times the operation
 * into *s and adds its counters to *f (tarn_measure divides them by the
 * samples at the end). */
static int tarn_sample(struct tarn_child *t, const ooc_job *job, double *s,
                       ooc_figures *f) {
  if (job->op == OOC_CHOLESKY) {
    tarn_matrix_destroy(t->a);
    t->a = NULL;
    if (make_input(t->rt, job, OOC_SPD, &t->a) != 0) return 1;
  } else {
    tarn_matrix_destroy(t->c);
    t->c = NULL;
  }
  tarn_pool *pool = tarn_rt_pool(t->rt);
  tarn_pool_stats s0, s1;
  uint64_t r0, r1, w0, w1;
  int rc = tarn_pool_peak_reset(pool);
  if (rc != 0) return tarn_failed("tarn_pool_peak_reset", rc);
  rc = tarn_pool_stats_get(pool, &s0);
  if (rc != 0) return tarn_failed("tarn_pool_stats_get", rc);
  if (ooc_disk_io(&r0, &w0) != 0 || ooc_rss_peak_reset() != 0 ||
      tarn_operation(t, job, s) != 0)
    return 1;
  double peak = ooc_rss_peak();
  rc = tarn_pool_stats_get(pool, &s1);
  if (rc != 0) return tarn_failed("tarn_pool_stats_get", rc);
  if (peak < 0 || ooc_disk_io(&r1, &w1) != 0) return 1;
  if (peak > f->peak_rss) f->peak_rss = peak;
  f->spilled += (double)(s1.bytes_written - s0.bytes_written);
  f->restored += (double)(s1.bytes_read - s0.bytes_read);
  f->disk_read += (double)(r1 - r0);
  snprintf(f->io_mode, sizeof f->io_mode, "%s", s1.io_mode);
  return 0;
}

/* A whole result in a column-major buffer, read as tiles. */
struct buffer_view {
  const ooc_job *job;
  const double *buf;
};

static const double *buffer_get(void *ctx, size_t ti, size_t tj, size_t *ld) {
  const struct buffer_view *v = ctx;
  *ld = v->job->n;
  return v->buf + ti * v->job->b + tj * v->job->b * v->job->n;
}

static void buffer_put(void *ctx, size_t ti, size_t tj) {
  (void)ctx;
  (void)ti;
  (void)tj;
}

/* The residual of the result, copied into a whole-matrix buffer. */
static int tarn_residual(struct tarn_child *t, const ooc_job *job,
                         double *residual) {
  size_t bytes = job->n * job->n * sizeof(double);
  double *buf = map_buffer(bytes);
  if (buf == NULL) return 1;
  tarn_matrix *result = job->op == OOC_CHOLESKY ? t->a : t->c;
  int rc = tarn_matrix_to_buffer(result, buf, job->n);
  int failed = rc != 0 ? tarn_failed("tarn_matrix_to_buffer", rc) : 0;
  struct buffer_view view = {job, buf};
  ooc_reader reader = {&view, buffer_get, buffer_put};
  if (!failed) failed = ooc_residual(job, &reader, residual);
  munmap(buf, bytes);
  return failed;
}

/* Fills *f: the resident set before the inputs, the samples after a
 * warm-up, then the residual of the last result. */
static int tarn_measure(struct tarn_child *t, const ooc_job *job,
                        ooc_figures *f) {
  f->base_rss = ooc_rss_now();
  if (f->base_rss < 0) return 1;
  if (job->op == OOC_MATMUL && (make_input(t->rt, job, OOC_A, &t->a) != 0 ||
                                make_input(t->rt, job, OOC_B, &t->b) != 0))
    return 1;
  double warm;
  ooc_figures scratch = *f;
  if (tarn_sample(t, job, &warm, &scratch) != 0) return 1;
  for (size_t i = 0; i < job->samples; i++)
    if (tarn_sample(t, job, &f->seconds[i], f) != 0) return 1;
  f->spilled /= (double)job->samples;
  f->restored /= (double)job->samples;
  f->disk_read /= (double)job->samples;
  return tarn_residual(t, job, &f->residual);
}

static int tarn_run(const ooc_job *job, ooc_figures *f) {
  tarn_rt_options options;
  int rc = tarn_rt_options_init(&options);
  if (rc != 0) return tarn_failed("tarn_rt_options_init", rc);
  options.workers = job->cores;
  options.pool.mem_limit = job->limit;
  options.pool.spill_dir = job->dir;
  struct tarn_child t = {NULL, NULL, NULL, NULL};
  rc = tarn_rt_create(&options, &t.rt);
  if (rc != 0) return tarn_failed("tarn_rt_create", rc);
  int failed = tarn_measure(&t, job, f);
  tarn_matrix_destroy(t.a);
  tarn_matrix_destroy(t.b);
  tarn_matrix_destroy(t.c);
  rc = tarn_rt_destroy(t.rt);
  if (rc != 0 && !failed) failed = tarn_failed("tarn_rt_destroy", rc);
  return failed;
}

/* ---- the child: arguments and output ------------------------------------ */

/* Parses a size argument; returns 0 or 1 after printing why. */
static int parse_size(const char *text, const char *what, size_t *v) {
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    fprintf(stderr, "tarn bench: %s: bad %s '%s'\n", BENCH_OOC_CHILD, what,
            text);
    return 1;
  }
  *v = (size_t)x;
  return 0;
}

/* argv: PEER OP N B LIMIT SAMPLES CORES DIR PARENT, as run_child passes
 * them; PARENT (the parent's pid) goes to *parent. */
static int parse_job(int argc, char **argv, int *starpu, ooc_job *job,
                     size_t *parent) {
  size_t cores = 0;
  if (argc != 9) {
    fprintf(stderr, "tarn bench: %s: expected 9 arguments, got %d\n",
            BENCH_OOC_CHILD, argc);
    return 1;
  }
  *starpu = strcmp(argv[0], "starpu") == 0;
  job->op = strcmp(argv[1], "matmul") == 0 ? OOC_MATMUL : OOC_CHOLESKY;
  job->dir = argv[7];
  if ((!*starpu && strcmp(argv[0], "tarn") != 0) ||
      (job->op == OOC_CHOLESKY && strcmp(argv[1], "cholesky") != 0)) {
    fprintf(stderr, "tarn bench: %s: bad peer or operation\n", BENCH_OOC_CHILD);
    return 1;
  }
  if (parse_size(argv[2], "N", &job->n) != 0 ||
      parse_size(argv[3], "block", &job->b) != 0 ||
      parse_size(argv[4], "limit", &job->limit) != 0 ||
      parse_size(argv[5], "samples", &job->samples) != 0 ||
      parse_size(argv[6], "cores", &cores) != 0 ||
      parse_size(argv[8], "parent", parent) != 0)
    return 1;
  job->cores = (unsigned)cores;
  if (job->n == 0 || job->b == 0 || job->b > job->n || job->cores == 0 ||
      job->samples == 0 || job->samples > BENCH_SAMPLES_MAX) {
    fprintf(stderr, "tarn bench: %s: bad sizes\n", BENCH_OOC_CHILD);
    return 1;
  }
  return 0;
}

/* Writes *f in the protocol read_figures reads. */
static void print_figures(const ooc_job *job, const ooc_figures *f) {
  if (f->note[0] != '\0') {
    bench_printf("note %s\n", f->note);
    return;
  }
  bench_printf("io_mode %s\n", f->io_mode[0] ? f->io_mode : "none");
  for (size_t i = 0; i < job->samples; i++)
    bench_printf("sample %.9g\n", f->seconds[i]);
  bench_printf("base_rss %.0f\npeak_rss %.0f\n", f->base_rss, f->peak_rss);
  bench_printf("spilled %.0f\nrestored %.0f\ndisk_read %.0f\n", f->spilled,
               f->restored, f->disk_read);
  bench_printf("residual %.6g\nend\n", f->residual);
}

/* Makes the child die of SIGTERM (whose handler removes its directories,
 * bench_catch_interrupts) when its parent dies: one interrupted or killed
 * left it running, with StarPU's disk node, until its job ended. Returns
 * 0, or 1 when the parent, whose pid was `parent`, is gone already. */
static int die_with_parent(size_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    fprintf(stderr, "tarn bench: %s: prctl(PR_SET_PDEATHSIG): %s\n",
            BENCH_OOC_CHILD, strerror(errno));
    return 1;
  }
  /* a parent that died before the prctl sent nothing: the child has been
   * given to another process since */
  return (size_t)getppid() == parent ? 0 : 1;
}

int bench_ooc_child(int argc, char **argv) {
  int starpu = 0;
  ooc_job job;
  size_t parent = 0;
  if (parse_job(argc, argv, &starpu, &job, &parent) != 0) return 2;
  if (die_with_parent(parent) != 0) return 1;
  openblas_set_num_threads(1); /* one BLAS thread per task, as tarn sets */
  static ooc_figures f;
  memset(&f, 0, sizeof f);
  int failed;
  if (starpu) {
#ifdef TARN_BENCH_STARPU
    failed = ooc_starpu_run(&job, &f);
#else
    snprintf(f.note, sizeof f.note, "not built (install libstarpu-dev)");
    failed = 0;
#endif
  } else {
    failed = tarn_run(&job, &f);
  }
  if (failed) return 1;
  if (f.note[0] == '\0' && !(f.residual <= RESIDUAL_MAX)) {
    fprintf(stderr,
            "tarn bench: ooc: %s %s N=%zu: scaled residual %g is above %g\n",
            starpu ? "starpu" : "tarn", op_names[job.op], job.n, f.residual,
            RESIDUAL_MAX);
    return 1;
  }
  print_figures(&job, &f);
  return 0;
}

/* ---- the parent --------------------------------------------------------- */

enum { V_TARN_CORE, V_TARN_LIMIT, V_STARPU_CORE, V_STARPU_LIMIT, VARIANTS };

/* One configuration's outcome: measured, its median, what the child said. */
struct row {
  int measured;
  double median;
  ooc_figures f;
};

struct size_rows {
  size_t n, b;
  size_t limit[OOC_OPS];
  struct row r[OOC_OPS][VARIANTS];
};

static int is_starpu(int v) {
  return v == V_STARPU_CORE || v == V_STARPU_LIMIT;
}
static int is_limited(int v) {
  return v == V_TARN_LIMIT || v == V_STARPU_LIMIT;
}

static void row_name(char *buf, size_t size, const struct size_rows *s, int op,
                     int v) {
  char what[48];
  if (is_limited(v))
    snprintf(what, sizeof what, "limit %.0f MiB", (double)s->limit[op] / MIB);
  else
    snprintf(what, sizeof what, "in core");
  snprintf(buf, size, "ooc/%s/N=%zu (block %zu)/%s (%s)",
           is_starpu(v) ? "starpu" : "tarn", s->n, s->b, op_names[op], what);
}

/* Reads the child's output into *f. Returns 0, or 1 when it is out of
 * protocol. */
static int read_figures(FILE *in, size_t samples, ooc_figures *f) {
  char line[256];
  size_t got = 0;
  int ended = 0;
  while (!ended && fgets(line, sizeof line, in) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    char *value = strchr(line, ' ');
    if (value != NULL) *value++ = '\0';
    if (strcmp(line, "end") == 0) {
      ended = 1;
    } else if (value == NULL) {
      return 1;
    } else if (strcmp(line, "note") == 0) {
      snprintf(f->note, sizeof f->note, "%s", value);
      return 0;
    } else if (strcmp(line, "io_mode") == 0) {
      snprintf(f->io_mode, sizeof f->io_mode, "%s", value);
    } else if (strcmp(line, "sample") == 0) {
      if (got == samples) return 1;
      f->seconds[got++] = strtod(value, NULL);
    } else {
      static const char *const keys[] = {"base_rss", "peak_rss",  "spilled",
                                         "restored", "disk_read", "residual"};
      double *fields[] = {&f->base_rss, &f->peak_rss,  &f->spilled,
                          &f->restored, &f->disk_read, &f->residual};
      size_t k = 0;
      while (k < 6 && strcmp(line, keys[k]) != 0) k++;
      if (k == 6) return 1;
      *fields[k] = strtod(value, NULL);
    }
  }
  return ended && got == samples ? 0 : 1;
}

/* Runs one configuration in a child process; fills *f. */
static int run_child(const ooc_job *job, int starpu, ooc_figures *f) {
  char n[24], b[24], limit[24], samples[24], cores[24], parent[24];
  snprintf(n, sizeof n, "%zu", job->n);
  snprintf(b, sizeof b, "%zu", job->b);
  snprintf(limit, sizeof limit, "%zu", job->limit);
  snprintf(samples, sizeof samples, "%zu", job->samples);
  snprintf(cores, sizeof cores, "%u", job->cores);
  snprintf(parent, sizeof parent, "%ld", (long)getpid());
  char *argv[] = {"tarn",
                  "bench",
                  BENCH_OOC_CHILD,
                  starpu ? "starpu" : "tarn",
                  job->op == OOC_CHOLESKY ? "cholesky" : "matmul",
                  n,
                  b,
                  limit,
                  samples,
                  cores,
                  (char *)job->dir,
                  parent,
                  NULL};
  const char *self = "/proc/self/exe";
  pid_t pid;
  FILE *in;
  if (bench_spawn(self, argv, &pid, &in) != 0) return 1;
  memset(f, 0, sizeof *f);
  int bad = read_figures(in, job->samples, f);
  fclose(in);
  if (bench_reap(pid, "tarn bench " BENCH_OOC_CHILD) != 0) return 1;
  if (bad) {
    fprintf(stderr, "tarn bench: ooc: the child's output is out of protocol\n");
    return 1;
  }
  return 0;
}

/* Measures and reports one configuration (when the filter wants it). */
static int measure(bench_run *run, struct size_rows *s, int op, int v) {
  char name[160];
  row_name(name, sizeof name, s, op, v);
  if (!bench_wanted(run, name)) return 0;
  ooc_job job = {.op = op,
                 .n = s->n,
                 .b = s->b,
                 .limit = is_limited(v) ? s->limit[op] : 0,
                 .samples = run->samples,
                 .cores = bench_threads(run),
                 .dir = bench_spill_dir()};
  struct row *r = &s->r[op][v];
  if (run_child(&job, is_starpu(v), &r->f) != 0) return 1;
  if (r->f.note[0] != '\0') {
    bench_note(run, name, r->f.note);
    return 0;
  }
  const ooc_figures *f = &r->f;
  double median = bench_median(f->seconds, run->samples);
  bench_extra extra[BENCH_EXTRA_MAX] = {
      {"GFLOP_per_s", ooc_flops(op, s->n) / median * 1e-9},
      {"limit_mib", (double)job.limit / MIB},
      {"peak_rss_mib", f->peak_rss / MIB},
      {"base_rss_mib", f->base_rss / MIB},
      {"spilled_mib", f->spilled / MIB},
      {"restored_mib", f->restored / MIB},
      {"disk_read_mib", f->disk_read / MIB},
      {"residual", f->residual}};
  const bench_result *res =
      bench_report(run, name, f->seconds, run->samples, extra, 8);
  if (res == NULL) return 1;
  r->measured = res->median_s > 0;
  r->median = res->median_s;
  return 0;
}

static double median_of(const struct row *r) {
  return r->measured ? r->median : -1;
}

static double margin_mib(unsigned workers) {
  return MARGIN_FIXED_MIB + MARGIN_WORKER_MIB * workers;
}

/* Peak RSS of a row against the limit + the child's base RSS + the margin
 * (not measured when the row was not). */
static void rss_goal(const char *what, const struct row *r, size_t limit,
                     unsigned workers) {
  double peak = r->measured ? r->f.peak_rss / MIB : -1;
  double allowed =
      (double)limit / MIB + r->f.base_rss / MIB + margin_mib(workers);
  bench_goal(what, peak, " MiB", 1, round(allowed * 10) / 10);
}

static void print_goals(const struct size_rows *sizes, size_t count,
                        unsigned workers) {
  for (size_t k = 0; k < count; k++) {
    const struct size_rows *s = &sizes[k];
    const char *mode = s->r[OOC_CHOLESKY][V_TARN_LIMIT].f.io_mode;
    if (mode[0] == '\0') mode = s->r[OOC_MATMUL][V_TARN_LIMIT].f.io_mode;
    bench_goal_heading(
        "Goals (ooc N=%zu; RSS allowed: limit + RSS before the inputs + "
        "%.0f MiB; tarn spill I/O: %s, in %s):",
        s->n, margin_mib(workers), mode[0] ? mode : "not measured",
        bench_spill_dir());
    for (int op = 0; op < OOC_OPS; op++) {
      const struct row *r = s->r[op];
      char what[96];
      const char *short_name = op == OOC_CHOLESKY ? "cholesky" : "matmul";
      snprintf(what, sizeof what, "%s: tarn limited / in-core rate",
               short_name);
      bench_goal(
          what,
          bench_ratio(median_of(&r[V_TARN_CORE]), median_of(&r[V_TARN_LIMIT])),
          "x", 0, 0.85);
      snprintf(what, sizeof what, "%s: starpu limited / tarn limited time",
               short_name);
      bench_goal(what,
                 bench_ratio(median_of(&r[V_STARPU_LIMIT]),
                             median_of(&r[V_TARN_LIMIT])),
                 "x", 0, 1);
      snprintf(what, sizeof what, "%s: tarn limited peak RSS", short_name);
      rss_goal(what, &r[V_TARN_LIMIT], s->limit[op], workers);
      snprintf(what, sizeof what, "%s: tarn restores read from disk",
               short_name);
      const ooc_figures *f = &r[V_TARN_LIMIT].f;
      bench_goal(what,
                 r[V_TARN_LIMIT].measured
                     ? bench_ratio(f->disk_read, f->restored)
                     : -1,
                 "x", 0, 0.95);
    }
  }
}

/* The limit for `op` at N=n in tiles of b: --mem-limit, else 2/3 of the
 * data (one matrix for Cholesky; A, B and C for matmul) and at least the
 * three tiles one task of either pins (a gemm's: at N of 512 or less one
 * tile is the whole matrix, and 2/3 of three of them fell below three
 * from N = 210 on, so every --sizes of such an N failed), in whole MiB
 * (StarPU's unit), rounded down but for that floor. */
static size_t limit_for(const bench_run *run, int op, size_t n, size_t b) {
  size_t data = n * n * sizeof(double) * (op == OOC_CHOLESKY ? 1 : 3);
  size_t limit = run->mem_limit > 0 ? run->mem_limit : data / 3 * 2;
  size_t mib = limit >> 20;
  if (run->mem_limit == 0) {
    size_t side = b < n ? b : n, page = (size_t)sysconf(_SC_PAGESIZE);
    size_t tile = (side * side * sizeof(double) + page - 1) / page * page;
    size_t floor_mib = (3 * tile + ((size_t)1 << 20) - 1) >> 20;
    if (mib < floor_mib) mib = floor_mib;
  }
  return (mib > 0 ? mib : 1) << 20;
}

int bench_ooc(bench_run *run) {
  static const size_t suite_size[] = {SUITE_N}, all_size[] = {ALL_SUITES_N};
  const size_t *sizes;
  size_t count = bench_sizes(run, run->suite_count == 1 ? suite_size : all_size,
                             1, &sizes);
  static struct size_rows rows[BENCH_SIZES_MAX];
  memset(rows, 0, sizeof rows);
  int failed = 0;
  for (size_t k = 0; k < count && !failed; k++) {
    struct size_rows *s = &rows[k];
    s->n = sizes[k];
    s->b = bench_tile_size(sizes[k]);
    for (int op = 0; op < OOC_OPS && !failed; op++) {
      s->limit[op] = limit_for(run, op, s->n, s->b);
      for (int v = 0; v < VARIANTS && !failed; v++)
        failed = measure(run, s, op, v);
    }
  }
  print_goals(rows, count, bench_threads(run));
  return failed;
}
