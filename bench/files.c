/* files.c: the `files` suite of `tarn bench`: an N x N matrix saved to an
 * .npy file (tarn_matrix_to_file: written, flushed, renamed) and loaded
 * back (tarn_matrix_from_file, from the page cache, as numpy.save left
 * it: Fortran order, and C order, numpy's default), side by side with a
 * plain write + fdatasync and a plain read of the same bytes, into a
 * buffer already touched and into a fresh one (mapped for the sample,
 * its pages arriving as the read fills them), in a directory of its own
 * in the spill directory. The goals are tarn's own, as the pool's spill
 * and restore have: 0.8 of the plain calls' MB/s; the load's against the
 * read into a fresh buffer, since a load makes a new matrix (its tiles
 * come from the pool's cache, or as fresh pages once a rest of the
 * workers emptied it).
 *
 * Then the file's sum under a memory limit of a quarter of the matrix, or
 * two tiles when that is more (a runtime of its own), the job a matrix larger
 * than memory is read for: loaded (tarn_matrix_from_file: three quarters
 * spilled as it comes, read back by the sum) or opened (tarn_matrix_open_file:
 * each tile read from the file when the sum needs it), then summed; beside them
 * a plain loop reading the file through a 4 MiB buffer and summing it, the
 * floor. The goal: opening at least 2x as fast as loading, the point of
 * opening.
 *
 * Then 2A + 1 (A the opened file) written to an .npy file under the same
 * limit: computed into a new matrix and saved (tarn_matrix_to_file: the
 * result's tiles spilled as they come, read back and written), or
 * computed into a matrix created in the file and committed
 * (tarn_matrix_create_file: written tiles stored at their place in the
 * file, never spilled); beside them a plain loop reading, computing and
 * writing through a 4 MiB buffer, then fdatasync. The goal: the created
 * file at least 1.1x as fast as the save (a tile narrower than the
 * matrix is stored a column piece per call, 4 KiB for tiles of 512 in a
 * 4096-row file, which bounds it: docs/array.md).
 *
 * A size none of whose rows the filter wants is not run; the others run
 * every row and report the wanted ones. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"
#include "tarn.h"

static const size_t default_sizes[] = {1024, 4096};

enum {
  SAVE,
  LOAD,
  LOAD_C,
  WRITE,
  READ,
  READ_FRESH,
  SUM_LOADED,
  SUM_OPENED,
  SUM_PLAIN,
  MAP_SAVED,
  MAP_CREATED,
  MAP_PLAIN,
  ROW_COUNT
};

static const char *const row_names[ROW_COUNT] = {
    "save (.npy)",
    "load (.npy)",
    "load (.npy, C order)",
    "write + fdatasync",
    "read (touched buffer)",
    "read (fresh buffer)",
    "sum under a limit (load + sum)",
    "sum under a limit (open + sum)",
    "sum (read, 4 MiB buffer)",
    "2A+1 to a file under a limit (compute + save)",
    "2A+1 to a file under a limit (create + commit)",
    "2A+1 to a file (read, compute, write + fdatasync, 4 MiB buffer)"};

/* The plain loop's buffer. */
#define SUM_BUFFER ((size_t)4 << 20)

/* One size's files and buffers. */
struct ctx {
  tarn_rt *rt;
  tarn_rt *limited; /* its pool's limit: a quarter of A, 2 tiles at least */
  size_t n, b, bytes;
  double sum;      /* A's, as tarn_matrix_sum gives it */
  double *sum_buf; /* the plain loop's */
  tarn_matrix *a;
  double *buf; /* A's elements, column-major: what the plain calls move */
  char npy[4200], c_npy[4200], plain[4200], out_npy[4200];
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("files", what, status);
}

static int sys_failed(const char *what, const char *path) {
  fprintf(stderr, "tarn bench: files: %s %s: %s\n", what, path,
          strerror(errno));
  return 1;
}

/* Writes A in C order: the header numpy writes for a C-order n x n
 * float64 array, then A's rows (the columns of A's column-major buffer
 * transposed). */
static int write_c_order(struct ctx *c) {
  char dict[128];
  int len = snprintf(dict, sizeof dict,
                     "{'descr': '<f8', 'fortran_order': False, 'shape': "
                     "(%zu, %zu), }",
                     c->n, c->n);
  size_t total = (10 + (size_t)len + 1 + 63) / 64 * 64;
  unsigned char head[256];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)((total - 10) & 0xff);
  head[9] = (unsigned char)((total - 10) >> 8);
  memcpy(head + 10, dict, (size_t)len);
  memset(head + 10 + len, ' ', total - 10 - (size_t)len - 1);
  head[total - 1] = '\n';
  double *rows = malloc(c->bytes);
  FILE *f = fopen(c->c_npy, "wb");
  int failed = rows == NULL || f == NULL;
  if (!failed) {
    for (size_t i = 0; i < c->n; i++)
      for (size_t j = 0; j < c->n; j++)
        rows[i * c->n + j] = c->buf[i + j * c->n];
    failed = fwrite(head, 1, total, f) != total ||
             fwrite(rows, 1, c->bytes, f) != c->bytes;
  }
  if (f != NULL) failed |= fclose(f) != 0;
  free(rows);
  return failed ? sys_failed("cannot write", c->c_npy) : 0;
}

static int open_size(struct ctx *c, const bench_run *run, tarn_rt *rt,
                     const char *dir, size_t n) {
  memset(c, 0, sizeof *c);
  c->rt = rt;
  c->n = n;
  c->b = bench_tile_size(n);
  c->bytes = n * n * sizeof(double);
  snprintf(c->npy, sizeof c->npy, "%s/a.npy", dir);
  snprintf(c->c_npy, sizeof c->c_npy, "%s/c.npy", dir);
  snprintf(c->plain, sizeof c->plain, "%s/plain", dir);
  snprintf(c->out_npy, sizeof c->out_npy, "%s/out.npy", dir);
  c->buf = bench_buffer_alloc(c->bytes);
  if (c->buf == NULL) {
    fprintf(stderr, "tarn bench: files: out of memory for N=%zu\n", n);
    return 1;
  }
  int rc = tarn_matrix_rand(rt, n, n, c->b, c->b, 1, &c->a);
  if (rc == 0) rc = tarn_matrix_to_buffer(c->a, c->buf, n);
  if (rc == 0) rc = tarn_matrix_sum(c->a, &c->sum);
  if (rc != 0) return tarn_failed("tarn_matrix_rand", rc);
  tarn_rt_options o;
  rc = bench_rt_options(run, &o);
  /* A task of 2A+1 pins two tiles, each rounded up to whole pages. */
  size_t tile = (c->b * c->b * sizeof(double) + 65535) / 65536 * 65536;
  o.pool.mem_limit = c->bytes / 4 > 2 * tile ? c->bytes / 4 : 2 * tile;
  o.pool.spill_dir = bench_spill_dir();
  if (rc == 0) rc = tarn_rt_create(&o, &c->limited);
  if (rc != 0) return tarn_failed("tarn_rt_create (limited)", rc);
  c->sum_buf = bench_buffer_alloc(SUM_BUFFER);
  if (c->sum_buf == NULL) {
    fprintf(stderr, "tarn bench: files: out of memory for N=%zu\n", n);
    return 1;
  }
  return write_c_order(c);
}

static void close_size(struct ctx *c) {
  tarn_matrix_destroy(c->a);
  tarn_rt_destroy(c->limited);
  free(c->buf);
  free(c->sum_buf);
  unlink(c->npy);
  unlink(c->c_npy);
  unlink(c->plain);
  unlink(c->out_npy);
}

/* Loads `path` and, once (`check`), compares it with A element for
 * element; *s gets the load's seconds. */
static int load(struct ctx *c, const char *path, int check, double *s) {
  tarn_matrix *m = NULL;
  uint64_t t0 = bench_now_ns();
  int rc = tarn_matrix_from_file(c->rt, path, c->b, c->b, &m);
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  if (rc != 0) return tarn_failed("tarn_matrix_from_file", rc);
  int bad = 0;
  if (check) {
    double *back = malloc(c->bytes);
    bad = back == NULL || tarn_matrix_to_buffer(m, back, c->n) != 0 ||
          memcmp(back, c->buf, c->bytes) != 0;
    free(back);
  }
  tarn_matrix_destroy(m);
  if (bad) fprintf(stderr, "tarn bench: files: %s read back wrong\n", path);
  return bad;
}

static int plain_write(struct ctx *c, double *s) {
  uint64_t t0 = bench_now_ns();
  int fd = open(c->plain, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return sys_failed("cannot open", c->plain);
  ssize_t w = write(fd, c->buf, c->bytes);
  int failed = w != (ssize_t)c->bytes || fdatasync(fd) != 0;
  failed |= close(fd) != 0;
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  return failed ? sys_failed("cannot write", c->plain) : 0;
}

/* Reads the plain file into A's buffer (touched), or into a fresh one:
 * new pages mapped for the sample (4 KiB ones, as a plain program's large
 * malloc gets them), arriving as the read fills them, and unmapped after
 * the clock. Not malloc: glibc raises its mmap threshold to a freed
 * block's size (up to 32 MiB), so from the second sample on an 8 MiB
 * buffer came from its heap, sometimes still touched (N=1024's "fresh"
 * read took 0.6 ms, its first sample 25 ms). */
static int plain_read(struct ctx *c, bool fresh, double *s) {
  uint64_t t0 = bench_now_ns();
  double *buf = c->buf;
  if (fresh) {
    void *p = mmap(NULL, c->bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    buf = p != MAP_FAILED ? p : NULL;
  }
  int fd = buf != NULL ? open(c->plain, O_RDONLY | O_CLOEXEC) : -1;
  ssize_t r = fd >= 0 ? read(fd, buf, c->bytes) : -1;
  if (fd >= 0) close(fd);
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  if (buf != NULL) bench_escape(buf);
  if (fresh && buf != NULL) munmap(buf, c->bytes);
  return r == (ssize_t)c->bytes ? 0 : sys_failed("cannot read", c->plain);
}

/* The file at c->npy summed under the limited runtime's limit, loaded or
 * opened; the sum must be A's (the same tiles, summed in the same order). */
static int limited_sum(struct ctx *c, bool opened, double *s) {
  tarn_matrix *m = NULL;
  uint64_t t0 = bench_now_ns();
  int rc = opened ? tarn_matrix_open_file(c->limited, c->npy, c->b, c->b, &m)
                  : tarn_matrix_from_file(c->limited, c->npy, c->b, c->b, &m);
  double sum = 0;
  if (rc == 0) rc = tarn_matrix_sum(m, &sum);
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  tarn_matrix_destroy(m);
  if (rc != 0) return tarn_failed(opened ? "open + sum" : "load + sum", rc);
  if (sum != c->sum) {
    fprintf(stderr, "tarn bench: files: sum %.17g, not %.17g\n", sum, c->sum);
    return 1;
  }
  return 0;
}

/* The plain loop: the .npy file's elements read through a 4 MiB buffer
 * and summed. */
static int plain_sum(struct ctx *c, double *s) {
  uint64_t t0 = bench_now_ns();
  int fd = open(c->npy, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_failed("cannot open", c->npy);
  off_t at = (off_t)(lseek(fd, 0, SEEK_END) - (off_t)c->bytes);
  double sum = 0;
  size_t left = c->bytes;
  while (left > 0) {
    size_t want = left < SUM_BUFFER ? left : SUM_BUFFER;
    ssize_t got = pread(fd, c->sum_buf, want, at);
    if (got <= 0 || got % 8 != 0) break;
    for (size_t k = 0; k < (size_t)got / 8; k++) sum += c->sum_buf[k];
    at += got;
    left -= (size_t)got;
  }
  close(fd);
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  if (left != 0) return sys_failed("cannot read", c->npy);
  /* Summed in another order than tarn's: the same to rounding. */
  if (!(fabs(sum - c->sum) <= 1e-9 * fabs(c->sum))) {
    fprintf(stderr, "tarn bench: files: plain sum %.17g, not %.17g\n", sum,
            c->sum);
    return 1;
  }
  return 0;
}

/* 2A + 1 for the opened file A written to the file c->out_npy under the
 * limited runtime's limit: computed into a new matrix then saved, or into
 * a matrix created in the file then committed. With `check` (once), the
 * file's sum must be 2 sum(A) + N^2, to rounding. */
static int limited_result(struct ctx *c, bool created, int check, double *s) {
  tarn_matrix *a = NULL, *r = NULL;
  uint64_t t0 = bench_now_ns();
  int rc = tarn_matrix_open_file(c->limited, c->npy, c->b, c->b, &a);
  if (rc == 0 && created)
    rc = tarn_matrix_create_file(c->limited, c->out_npy, c->n, c->n, c->b, c->b,
                                 &r);
  if (rc == 0) rc = tarn_matrix_axpb(a, 2.0, 1.0, &r);
  if (rc == 0)
    rc = created ? tarn_matrix_commit_file(r)
                 : tarn_matrix_to_file(r, c->out_npy);
  if (rc == 0 && created) r = NULL; /* committed: gone */
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  tarn_matrix_destroy(r);
  tarn_matrix_destroy(a);
  if (rc != 0)
    return tarn_failed(created ? "create + commit" : "compute + save", rc);
  if (!check) return 0;
  double sum = 0, want = 2 * c->sum + (double)c->n * (double)c->n;
  rc = tarn_matrix_open_file(c->rt, c->out_npy, c->b, c->b, &r);
  if (rc == 0) rc = tarn_matrix_sum(r, &sum);
  tarn_matrix_destroy(r);
  if (rc != 0) return tarn_failed("sum of the result", rc);
  if (!(fabs(sum - want) <= 1e-9 * want)) {
    fprintf(stderr, "tarn bench: files: 2A+1 sums to %.17g, not %.17g\n", sum,
            want);
    return 1;
  }
  return 0;
}

/* The plain loop: the .npy file read through a 4 MiB buffer, 2x + 1
 * computed in place, written to the output at the same offsets (the
 * header copied), flushed. */
static int plain_result(struct ctx *c, double *s) {
  uint64_t t0 = bench_now_ns();
  int in = open(c->npy, O_RDONLY | O_CLOEXEC);
  int out = open(c->out_npy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int failed = in < 0 || out < 0;
  off_t data = failed ? 0 : lseek(in, 0, SEEK_END) - (off_t)c->bytes;
  char head[4096];
  failed = failed || data <= 0 || (size_t)data > sizeof head ||
           pread(in, head, (size_t)data, 0) != data ||
           pwrite(out, head, (size_t)data, 0) != data;
  for (off_t at = data; !failed && at < data + (off_t)c->bytes;) {
    size_t want = (size_t)(data + (off_t)c->bytes - at);
    if (want > SUM_BUFFER) want = SUM_BUFFER;
    ssize_t got = pread(in, c->sum_buf, want, at);
    failed = got != (ssize_t)want;
    for (size_t k = 0; !failed && k < want / 8; k++)
      c->sum_buf[k] = 2 * c->sum_buf[k] + 1;
    failed = failed || pwrite(out, c->sum_buf, want, at) != (ssize_t)want;
    at += (off_t)want;
  }
  failed = failed || fdatasync(out) != 0;
  if (in >= 0) close(in);
  if (out >= 0) failed |= close(out) != 0;
  *s = (double)(bench_now_ns() - t0) * 1e-9;
  return failed ? sys_failed("cannot compute 2A+1 into", c->out_npy) : 0;
}

/* One sample of every row, in turn; sample 0 (the warm-up) also checks
 * what the loads read. */
static int sample(struct ctx *c, size_t i, double t[ROW_COUNT]) {
  uint64_t t0 = bench_now_ns();
  int rc = tarn_matrix_to_file(c->a, c->npy);
  t[SAVE] = (double)(bench_now_ns() - t0) * 1e-9;
  if (rc != 0) return tarn_failed("tarn_matrix_to_file", rc);
  return plain_write(c, &t[WRITE]) || load(c, c->npy, i == 0, &t[LOAD]) ||
         load(c, c->c_npy, i == 0, &t[LOAD_C]) ||
         plain_read(c, false, &t[READ]) ||
         plain_read(c, true, &t[READ_FRESH]) ||
         limited_sum(c, false, &t[SUM_LOADED]) ||
         limited_sum(c, true, &t[SUM_OPENED]) || plain_sum(c, &t[SUM_PLAIN]) ||
         limited_result(c, false, i == 0, &t[MAP_SAVED]) ||
         limited_result(c, true, i == 0, &t[MAP_CREATED]) ||
         plain_result(c, &t[MAP_PLAIN]);
}

/* The row's name at size n into name (size 160). */
static void row_name(char *name, size_t n, int r) {
  if (r == WRITE || r == READ || r == READ_FRESH || r == SUM_PLAIN ||
      r == MAP_PLAIN)
    snprintf(name, 160, "files/plain/N=%zu/%s", n, row_names[r]);
  else
    snprintf(name, 160, "files/tarn/N=%zu (block %zu)/%s", n,
             bench_tile_size(n), row_names[r]);
}

/* Whether the filter wants any row at size n. */
static int size_wanted(bench_run *run, size_t n) {
  for (int r = 0; r < ROW_COUNT; r++) {
    char name[160];
    row_name(name, n, r);
    if (bench_wanted(run, name)) return 1;
  }
  return 0;
}

/* Runs one size; *mbps gets each row's median MB/s (-1 when unmeasured). */
static int run_size(bench_run *run, struct ctx *c, double mbps[ROW_COUNT]) {
  double t[BENCH_SAMPLES_MAX + 1][ROW_COUNT];
  for (size_t i = 0; i <= run->samples; i++)
    if (sample(c, i, t[i]) != 0) return 1;
  for (int r = 0; r < ROW_COUNT; r++) {
    double s[BENCH_SAMPLES_MAX];
    for (size_t i = 0; i < run->samples; i++) s[i] = t[i + 1][r];
    char name[160];
    row_name(name, c->n, r);
    mbps[r] = (double)c->bytes / bench_median(s, run->samples) / 1e6;
    bench_extra extra[] = {{"MBps", mbps[r]}, {"bytes", (double)c->bytes}};
    const bench_result *res =
        bench_report(run, name, s, run->samples, extra, 2);
    if (res == NULL) return 1;
    if (res->median_s < 0) mbps[r] = BENCH_SKIPPED;
  }
  return 0;
}

int bench_files(bench_run *run) {
  const size_t *sizes;
  size_t nsizes = bench_sizes(run, default_sizes, 2, &sizes);
  tarn_rt *rt = NULL;
  if (bench_rt_open(run, "files", &rt) != 0) return 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tarn-bench-files-XXXXXX", bench_spill_dir());
  if (bench_temp_dir(dir) == NULL) { /* removed by an interrupt too */
    tarn_rt_destroy(rt);
    return sys_failed("cannot make a directory in", bench_spill_dir());
  }
  double mbps[BENCH_SIZES_MAX][ROW_COUNT];
  int failed = 0;
  for (size_t k = 0; !failed && k < nsizes; k++) {
    for (int r = 0; r < ROW_COUNT; r++) mbps[k][r] = BENCH_SKIPPED;
    if (!size_wanted(run, sizes[k])) continue;
    struct ctx c;
    failed =
        open_size(&c, run, rt, dir, sizes[k]) || run_size(run, &c, mbps[k]);
    close_size(&c);
  }
  bench_remove_tree(dir); /* empty by now: close_size removed its files */
  tarn_rt_destroy(rt);
  if (failed) return 1;
  bench_printf("  (in %s)\n", bench_spill_dir());
  bench_goal_heading("Goals (tarn's own, as the pool's spill and restore):");
  for (size_t k = 0; k < nsizes; k++) {
    bench_size_goal(sizes[k], "save", "tarn / plain write (MB/s)",
                    bench_ratio(mbps[k][SAVE], mbps[k][WRITE]), "x", 0, 0.8);
    bench_size_goal(sizes[k], "load", "tarn / fresh read (MB/s)",
                    bench_ratio(mbps[k][LOAD], mbps[k][READ_FRESH]), "x", 0,
                    0.8);
    bench_size_goal(sizes[k], "2A+1 to a file under a limit",
                    "create + commit / compute + save",
                    bench_ratio(mbps[k][MAP_CREATED], mbps[k][MAP_SAVED]), "x",
                    0, 1.1);
    bench_size_goal(sizes[k], "sum under a limit", "open + sum / load + sum",
                    bench_ratio(mbps[k][SUM_OPENED], mbps[k][SUM_LOADED]), "x",
                    0, 2.0);
  }
  return 0;
}
