/* demo.c: `tarn demo`, what tarn is for in one run. A linear system whose
 * matrix is several times larger than the memory tarn may use is built,
 * factored by tiled Cholesky (or LU with partial pivoting) and solved. Tiles
 * that no running task needs go to the spill file and come back when a task
 * pins them again; a status line shows it happening (on a terminal), and the
 * end reports each phase's time, what the pool wrote and read, the process's
 * peak RSS against the matrix's size, and the scaled residual of the answer.
 *
 * The matrix is an exponential covariance, A(i, j) = exp(-|i - j| / 64),
 * plus 1 on the diagonal (positive definite, condition below 130), made by
 * tasks tile by tile: it never exists in one buffer. The check builds A a
 * second time the same way and computes r = A x - b.
 *
 * Ctrl-C (SIGINT) or SIGTERM cancels the phase's region from the signal
 * handler (tarn_region_cancel): the tasks that began run to their end,
 * the others never run, and the demo cleans up and exits 128 + the
 * signal's number.
 *
 * Exit status: 0 when the run succeeded, stayed within its memory limit and
 * the residual is at rounding level; 1 otherwise; 2 for a bad command line;
 * 130 (143) when interrupted. The process's state lives in main's frame and
 * the progress thread's argument; only what the signal handler needs is
 * global. */
#define _POSIX_C_SOURCE 200809L
#include "demo.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "tarn.h"

#define MIB 1048576.0

static const char demo_usage[] =
    "usage: tarn demo [--size N] [--tile B] [--mem-limit SIZE] [--workers W]\n"
    "                 [--solver cholesky|lu]\n"
    "  Solves A x = b by tiled Cholesky (or LU with partial pivoting, whose\n"
    "  panels need the limit to hold a tile column, N x B doubles) for an\n"
    "  N x N matrix (default 8192, 512 MiB) in B x B tiles (default 512)\n"
    "  under a memory limit (default a quarter of the matrix, or what a\n"
    "  task needs when more; bytes or with K, M, G, or N% of the memory\n"
    "  the process may use), so that\n"
    "  tiles are spilled to disk (TARN_SPILL_DIR, else TMPDIR, else /tmp;\n"
    "  /var/tmp instead when that one is kept in memory and /var/tmp on a\n"
    "  disk may be written)\n"
    "  and read back. W workers (default: one per core). Prints each phase\n"
    "  and checks the answer; exit status 0 when it is right. Ctrl-C stops\n"
    "  it cleanly (the running tasks end, the others are cancelled; status\n"
    "  130).\n";

struct demo_args {
  size_t n, tile, limit;
  unsigned workers;
  bool lu; /* --solver lu: tarn_matrix_solve instead of Cholesky */
};

/* Prints "tarn demo: MESSAGE" and the usage to stderr; returns exit
 * status 2. */
static int demo_usage_error(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
static int demo_usage_error(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fputs("tarn demo: ", stderr);
  vfprintf(stderr, format, ap);
  va_end(ap);
  fprintf(stderr, "\n%s", demo_usage);
  return 2;
}

/* The options that take a value, each the next argument. */
static bool is_option(const char *arg) {
  static const char *const options[] = {"--size", "--tile", "--mem-limit",
                                        "--solver", "--workers"};
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    if (strcmp(arg, options[i]) == 0) return true;
  return false;
}

/* Sets the option `arg` of *a from its value `v`. Returns 0 or exit status
 * 2 after saying why. */
static int parse_option(const char *arg, const char *v, struct demo_args *a) {
  long long n = 0;
  if (strcmp(arg, "--size") == 0) {
    if (!tarn_args_count(v, 1, 1 << 20, &n))
      return demo_usage_error("--size must be from 1 to 1048576, not '%s'", v);
    a->n = (size_t)n;
  } else if (strcmp(arg, "--tile") == 0) {
    if (!tarn_args_count(v, 1, 1 << 15, &n))
      return demo_usage_error("--tile must be from 1 to 32768, not '%s'", v);
    a->tile = (size_t)n;
  } else if (strcmp(arg, "--mem-limit") == 0) {
    if (tarn_pool_limit_parse(v, &a->limit) != 0 || a->limit == 0)
      return demo_usage_error(
          "--mem-limit must be a size such as 128M, or 10%% of the memory, "
          "not '%s'",
          v);
  } else if (strcmp(arg, "--solver") == 0) {
    if (strcmp(v, "cholesky") != 0 && strcmp(v, "lu") != 0)
      return demo_usage_error("--solver must be cholesky or lu, not '%s'", v);
    a->lu = strcmp(v, "lu") == 0;
  } else { /* --workers */
    if (!tarn_args_count(v, 1, 1024, &n))
      return demo_usage_error("--workers must be from 1 to 1024, not '%s'", v);
    a->workers = (unsigned)n;
  }
  return 0;
}

/* Parses the arguments after "demo" into *a. Returns 0, -1 after printing
 * the usage for --help, or exit status 2 after saying what is wrong: the
 * option's name is checked before its value (`--bogus` was taken for an
 * option missing its value until 2026-12-05). */
static int parse_args(int argc, char **argv, struct demo_args *a) {
  *a = (struct demo_args){8192, 512, 0, 0, false};
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      fputs(demo_usage, stdout);
      return -1;
    }
    if (!is_option(arg)) return demo_usage_error("unknown option '%s'", arg);
    if (i + 1 == argc) return demo_usage_error("%s needs a value", arg);
    int bad = parse_option(arg, argv[++i], a);
    if (bad != 0) return bad;
  }
  if (a->tile > a->n) a->tile = a->n;
  return 0;
}

/* Seconds on the benchmarks' monotonic clock. */
static double now_s(void) { return (double)bench_now_ns() * 1e-9; }

/* ---- the status line ---------------------------------------------------- */

struct progress {
  tarn_rt *rt;
  const char *_Atomic phase;
  atomic_bool stop;
  double began;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
};

/* Redraws the status line on stderr every quarter second until stopped. */
static void *progress_main(void *arg) {
  struct progress *p = arg;
  pthread_mutex_lock(&p->lock);
  while (!atomic_load(&p->stop)) {
    tarn_rt_stats rs;
    tarn_pool_stats ps;
    if (tarn_rt_stats_get(p->rt, &rs) == 0 &&
        tarn_pool_stats_get(tarn_rt_pool(p->rt), &ps) == 0)
      fprintf(stderr,
              "\r  %-8s %6.1f s  %7llu tasks  resident %6.1f of %.1f MiB  "
              "written %7.1f MiB  read %7.1f MiB ",
              atomic_load(&p->phase), now_s() - p->began,
              (unsigned long long)rs.run, (double)ps.resident_bytes / MIB,
              (double)ps.mem_limit / MIB, (double)ps.bytes_written / MIB,
              (double)ps.bytes_read / MIB);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&p->wake, &p->lock, &until);
  }
  pthread_mutex_unlock(&p->lock);
  fputs("\r\033[K", stderr); /* clears the line */
  return NULL;
}

/* Starts the status line's thread; false (nothing left to undo) when it
 * cannot. */
static bool progress_start(struct progress *p) {
  if (pthread_mutex_init(&p->lock, NULL) != 0) return false;
  if (pthread_cond_init(&p->wake, NULL) != 0) {
    pthread_mutex_destroy(&p->lock);
    return false;
  }
  if (pthread_create(&p->thread, NULL, progress_main, p) != 0) {
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    return false;
  }
  return true;
}

/* Stops the thread of progress_start and clears its line. */
static void progress_stop(struct progress *p) {
  pthread_mutex_lock(&p->lock);
  atomic_store(&p->stop, true);
  pthread_cond_signal(&p->wake);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->lock);
}

/* ---- the tile kernels --------------------------------------------------- */

static int fill_covariance(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows; p++) {
      double d = fabs((double)(b->row + p) - (double)(b->col + q));
      b->data[0][p + q * b->ld] = exp(-d / 64.0) + (d == 0 ? 1.0 : 0.0);
    }
  return 0;
}

/* x_true(i) = sin(i / 100). */
static int fill_solution(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t p = 0; p < b->rows; p++)
    b->data[0][p] = sin((double)(b->row + p) / 100.0);
  return 0;
}

/* data[0] -= data[1]. */
static int subtract(const tarn_block *b, void *arg) {
  (void)arg;
  for (size_t p = 0; p < b->rows; p++) b->data[0][p] -= b->data[1][p];
  return 0;
}

/* ---- the run ------------------------------------------------------------ */

struct demo {
  const struct demo_args *args;
  tarn_rt *rt;
  struct progress *progress; /* NULL when standard error is no terminal */
  tarn_region *region;       /* the current phase's */
  tarn_matrix *a, *want, *b, *x, *a2, *r;
  double norm_a, norm_x, norm_r, norm_want, norm_err;
  const char *failed;    /* the call or phase that failed */
  const char *spill_dir; /* for the hints */
};

/* ---- interrupts ----------------------------------------------------------
 *
 * The region a SIGINT or SIGTERM cancels (the current phase's, or NULL),
 * and the signal that came (0: none): all a handler may reach. A signal
 * that lands after a phase's wait returned and before the pointer is
 * cleared finds a region already waited for, which refuses the cancel
 * (TARN_EMISUSE); `interrupted` stops the next phase then. */
static _Atomic(tarn_region *) interruptible;
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
  interrupted = sig;
  tarn_region *r = atomic_load(&interruptible);
  if (r != NULL) tarn_region_cancel(r);
}

/* Records the first failure: what failed and its status, printed with a
 * hint where the status has a likely cause; after an interrupt, that. */
static void failed(struct demo *d, const char *what, int rc) {
  if (d->failed != NULL) return;
  if (interrupted) {
    d->failed = "interrupted";
    fprintf(stderr,
            "\ntarn demo: interrupted: the tasks that had begun ran to "
            "their end, the others were cancelled\n");
    return;
  }
  d->failed = what;
  fprintf(stderr, "\ntarn demo: %s: %s\n", what, tarn_strerror(rc));
  if (rc == TARN_ENOSPC || rc == TARN_EIO)
    fprintf(stderr,
            "tarn demo: the spill file in %s could not be written: give "
            "TARN_SPILL_DIR a file system with room, or a larger "
            "--mem-limit\n",
            d->spill_dir);
}

/* Runs `call` unless an earlier one failed; records its failure. */
#define STEP(d, call)                        \
  do {                                       \
    if ((d)->failed == NULL) {               \
      int rc_ = (call);                      \
      if (rc_ != 0) failed((d), #call, rc_); \
    }                                        \
  } while (0)

/* Starts phase `name`: its status-line label and a region for its tasks.
 * Returns the clock. */
static double phase(struct demo *d, const char *name) {
  if (d->progress != NULL) atomic_store(&d->progress->phase, name);
  STEP(d, tarn_region_begin(d->rt, &d->region));
  if (d->region != NULL) {
    atomic_store(&interruptible, d->region);
    if (interrupted) tarn_region_cancel(d->region); /* came just before */
  }
  return now_s();
}

/* Ends a phase: waits for its region (every task it submitted) and prints
 * its time, and its rate when `flops` is not 0. */
static void phase_end(struct demo *d, const char *name, double t0,
                      double flops) {
  if (d->region != NULL) {
    int rc = tarn_region_wait(d->region, NULL);
    atomic_store(&interruptible, NULL);
    d->region = NULL;
    if (rc != 0) failed(d, name, rc);
  }
  if (interrupted) failed(d, name, TARN_ECANCELED);
  double t = now_s() - t0;
  if (d->progress != NULL) {
    pthread_mutex_lock(&d->progress->lock); /* not while a line is drawn */
    fputs("\r\033[K", stderr);
  }
  if (d->failed == NULL && flops > 0)
    printf("  %-34s %7.2f s  %6.1f GFLOP/s\n", name, t, flops / t * 1e-9);
  else if (d->failed == NULL)
    printf("  %-34s %7.2f s\n", name, t);
  fflush(stdout);
  if (d->progress != NULL) pthread_mutex_unlock(&d->progress->lock);
}

static void run(struct demo *d) {
  size_t n = d->args->n, tb = d->args->tile;
  const tarn_access write[] = {TARN_WRITE};
  double t0 = phase(d, "build");
  STEP(d, tarn_matrix_zeros(d->rt, n, n, tb, tb, &d->a));
  STEP(d, tarn_matrix_zeros(d->rt, n, 1, tb, 1, &d->want));
  STEP(d, tarn_matrix_apply(&d->a, write, 1, fill_covariance, NULL));
  STEP(d, tarn_matrix_apply(&d->want, write, 1, fill_solution, NULL));
  STEP(d, tarn_matrix_gemv(d->a, TARN_NO_TRANS, d->want, 1.0, 0.0, &d->b));
  STEP(d, tarn_matrix_copy(d->b, &d->x));
  phase_end(d, "build A and b = A x_true", t0, 0);

  int info = 0;
  double nd = (double)n;
  if (d->args->lu) { /* one region: the factorisation carries x along */
    t0 = phase(d, "factor and solve");
    STEP(d, tarn_matrix_solve(d->a, d->x, &info));
    phase_end(d, "P A = L U, then x (LU solve)", t0,
              2.0 * nd * nd * nd / 3.0 + 2.0 * nd * nd);
  } else {
    t0 = phase(d, "factor");
    STEP(d, tarn_matrix_cholesky(d->a, &info));
    phase_end(d, "factor A = L L^T (Cholesky)", t0, nd * nd * nd / 3.0);

    t0 = phase(d, "solve");
    STEP(d, tarn_matrix_cholesky_solve(d->a, d->x, &info));
    phase_end(d, "solve L L^T x = b", t0, 2.0 * nd * nd);
  }

  /* The factor is no longer needed: its tiles go now, not at the end. */
  tarn_matrix_destroy(d->a);
  d->a = NULL;
  t0 = phase(d, "check");
  STEP(d, tarn_matrix_zeros(d->rt, n, n, tb, tb, &d->a2));
  STEP(d, tarn_matrix_apply(&d->a2, write, 1, fill_covariance, NULL));
  STEP(d, tarn_matrix_copy(d->b, &d->r));
  STEP(d, tarn_matrix_gemv(d->a2, TARN_NO_TRANS, d->x, 1.0, -1.0, &d->r));
  STEP(d, tarn_matrix_norm(d->a2, TARN_NORM_FRO, &d->norm_a));
  STEP(d, tarn_matrix_norm(d->x, TARN_NORM_FRO, &d->norm_x));
  STEP(d, tarn_matrix_norm(d->r, TARN_NORM_FRO, &d->norm_r));
  STEP(d, tarn_matrix_norm(d->want, TARN_NORM_FRO, &d->norm_want));
  tarn_matrix *const diff[] = {d->want, d->x};
  const tarn_access modes[] = {TARN_READ_WRITE, TARN_READ};
  STEP(d, tarn_matrix_apply(diff, modes, 2, subtract, NULL));
  STEP(d, tarn_matrix_norm(d->want, TARN_NORM_FRO, &d->norm_err));
  phase_end(d, "check: A again, r = A x - b", t0, 0);
}

static void destroy_matrices(struct demo *d) {
  tarn_matrix *all[] = {d->a, d->want, d->b, d->x, d->a2, d->r};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
}

/* Prints the pool's and the process's figures and the answer's check;
 * returns whether all is as it must be. */
static int report(struct demo *d, double seconds) {
  tarn_pool_stats ps;
  tarn_rt_stats rs;
  if (tarn_pool_stats_get(tarn_rt_pool(d->rt), &ps) != 0 ||
      tarn_rt_stats_get(d->rt, &rs) != 0)
    return 0;
  struct rusage ru;
  double rss =
      getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0.0;
  double n = (double)d->args->n, matrix = n * n * 8.0 / MIB;
  /* N = 1: x_true = sin(0) = 0, so b, x and r are 0 and both ratios 0/0;
   * a zero difference is no error whatever it is divided by */
  double residual = d->norm_r == 0
                        ? 0
                        : d->norm_r / (d->norm_a * d->norm_x * DBL_EPSILON * n);
  double error = d->norm_err == 0 ? 0 : d->norm_err / d->norm_want;
  printf("  %-34s %7.2f s  %llu tasks, %llu held back for memory\n", "in all",
         seconds, (unsigned long long)rs.run, (unsigned long long)rs.held_back);
  printf("  pool: peak %.1f MiB resident under a limit of %.1f MiB\n",
         (double)ps.resident_peak / MIB, (double)ps.mem_limit / MIB);
  printf(
      "        %.1f MiB written to disk (%llu spills), %.1f MiB read back "
      "(%llu restores), %s I/O\n",
      (double)ps.bytes_written / MIB, (unsigned long long)ps.spills,
      (double)ps.bytes_read / MIB, (unsigned long long)ps.restores, ps.io_mode);
  if (strcmp(ps.io_mode, "memory") == 0)
    printf(
        "        (the spill directory %s is kept in memory, so spilling freed "
        "none: set TARN_SPILL_DIR to a directory on a disk)\n",
        d->spill_dir);
  printf("  process: peak RSS %.1f MiB, for a matrix of %.1f MiB\n", rss,
         matrix);
  printf(
      "  ||A x - b|| / (||A|| ||x|| eps N) = %.2g, "
      "||x - x_true|| / ||x_true|| = %.2g\n",
      residual, error);
  int ok = ps.resident_peak <= ps.mem_limit && residual < 1.0 && error < 1e-8 &&
           ps.write_failures == 0 && ps.read_failures == 0;
  printf("tarn demo: %s\n", ok ? "ok" : "FAILED");
  return ok;
}

/* Whether a limit of `limit` bytes holds `need`; if not, says so, naming
 * `what`. */
static bool limit_holds(size_t limit, double need, const char *what) {
  if ((double)limit >= need) return true;
  /* in KiB below a MiB, so that the two figures differ where they do */
  double unit = need < MIB ? 1024.0 : MIB;
  const char *name = need < MIB ? "KiB" : "MiB";
  fprintf(stderr,
          "tarn demo: the memory limit (%.1f %s) must hold %s (%.1f %s): "
          "give a larger --mem-limit or a smaller --tile\n",
          (double)limit / unit, name, what, need / unit, name);
  return false;
}

/* What the pool charges for `rows` x `cols` doubles: whole pages. */
static double pages_of(double rows, double cols) {
  double page = (double)sysconf(_SC_PAGESIZE);
  return ceil(rows * cols * 8.0 / page) * page;
}

/* What the pool charges for the first tile column of an n x n matrix in
 * tiles of `tile`: each tile's bytes rounded up to whole pages (as
 * tarn_matrix_lu checks before it submits anything). */
static double column_charge(size_t n, size_t tile) {
  double charge = 0.0, cols = (double)(tile < n ? tile : n);
  for (size_t r = 0; r < n; r += tile)
    charge += pages_of((double)(n - r < tile ? n - r : tile), cols);
  return charge;
}

int tarn_demo(int argc, char **argv) {
  struct demo_args args;
  int bad = parse_args(argc, argv, &args);
  if (bad != 0) return bad < 0 ? 0 : bad;
  if (!tarn_args_environment("demo")) return 2;
  double n = (double)args.n, matrix = n * n * 8.0;
  /* A task pins three tiles, in whole pages (until 2026-12-05 in bytes:
   * 300 x 300 in tiles of 100 under 240000 bytes passed, and Cholesky
   * failed); LU's panel its tile column. */
  double side = (double)(args.tile < args.n ? args.tile : args.n);
  double tile = pages_of(side, side);
  if (args.limit == 0) { /* a quarter of the matrix, or what a task needs */
    double need = 3.0 * tile, column = column_charge(args.n, args.tile);
    if (args.lu && column > need) need = column;
    args.limit = (size_t)(matrix / 4.0 > need ? matrix / 4.0 : need);
  }
  if (!limit_holds(args.limit, 3.0 * tile, "the three tiles a task pins") ||
      (args.lu && !limit_holds(args.limit, column_charge(args.n, args.tile),
                               "LU's panel, a tile column")))
    return 2;
  tarn_rt_options o;
  int rc = tarn_rt_options_init(&o);
  if (rc != 0) {
    fprintf(stderr, "tarn demo: the environment: %s\n", tarn_strerror(rc));
    return 2;
  }
  o.pool.mem_limit = args.limit;
  if (args.workers != 0) o.workers = args.workers;
  struct demo d = {.args = &args, .spill_dir = o.pool.spill_dir};
  rc = tarn_rt_create(&o, &d.rt);
  if (rc != 0) {
    fprintf(stderr, "tarn demo: tarn_rt_create: %s\n", tarn_strerror(rc));
    if (rc == TARN_EIO || rc == TARN_ENOENT || rc == TARN_EACCES ||
        rc == TARN_ENOSPC)
      fprintf(stderr,
              "tarn demo: the spill file could not be made in %s (set "
              "TARN_SPILL_DIR to a writable directory)\n",
              o.pool.spill_dir);
    return 1;
  }
  /* From here on an interrupt stops the run cleanly (the line below says
   * so to a script that waits for it). */
  struct sigaction on = {.sa_handler = on_interrupt}, was_int, was_term;
  sigemptyset(&on.sa_mask);
  sigaction(SIGINT, &on, &was_int);
  sigaction(SIGTERM, &on, &was_term);
  printf(
      "tarn demo: A x = b by %s, A %zu x %zu (%.1f MiB) in %zu x "
      "%zu tiles, memory limit %.1f MiB (%.2g of A), %u worker%s\n",
      args.lu ? "LU" : "Cholesky", args.n, args.n, matrix / MIB, args.tile,
      args.tile, (double)args.limit / MIB, (double)args.limit / matrix,
      tarn_rt_workers(d.rt), tarn_rt_workers(d.rt) == 1 ? "" : "s");
  fflush(stdout);

  struct progress progress = {.rt = d.rt, .phase = "", .began = now_s()};
  if (isatty(STDERR_FILENO) && progress_start(&progress))
    d.progress = &progress;
  double t0 = now_s();
  run(&d);
  double seconds = now_s() - t0;
  if (d.progress != NULL) progress_stop(&progress);
  int ok = d.failed == NULL && report(&d, seconds);
  if (interrupted)
    printf("tarn demo: interrupted after %.2f s\n", seconds);
  else if (d.failed != NULL)
    printf("tarn demo: FAILED (%s)\n", d.failed);
  destroy_matrices(&d);
  rc = tarn_rt_destroy(d.rt);
  if (rc != 0) {
    fprintf(stderr, "tarn demo: tarn_rt_destroy: %s\n", tarn_strerror(rc));
    ok = 0;
  }
  sigaction(SIGINT, &was_int, NULL);
  sigaction(SIGTERM, &was_term, NULL);
  if (interrupted) return 128 + interrupted;
  return ok ? 0 : 1;
}
