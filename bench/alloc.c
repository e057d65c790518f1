/* alloc.c: the `alloc` suite of `tarn bench`. Bursts of 4096 blocks of 64
 * bytes, 16-byte aligned: tarn's bump allocation against a bare pointer
 * increment over the same slab memory (interleaved in this process), and
 * glibc, mimalloc and jemalloc malloc+free each in a process of its own
 * (tarn-burst-NAME, see burst.c). Then acquire+release of a slab, by one
 * thread and by two at once, and the goals checked against the
 * medians of the run. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "tarn.h"

#define BLOCK 64
#define ALIGN 16
#define BURST 4096
#define BURST_NAME(who, what) "alloc/" who "/" what " 64B (burst 4096)"
#define PAIR_NAME "alloc/tarn/acquire+release"
#define DUO_NAME "alloc/tarn/acquire+release (2 threads)"

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("alloc", what, status);
}

/* ---- bursts in this process: tarn's bump allocation and the bare limit -- */

struct bursts {
  tarn_slab_set *set;
  tarn_slab *slab;
  tarn_mark mark; /* bursts start here and reset to it */
  void *ptrs[BURST];
};

static int bursts_open(struct bursts *b) {
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = 1;
  o.slab_size = (size_t)1 << 20;
  o.retain_bytes = o.slab_size;
  int rc = tarn_slab_set_create(&o, &b->set);
  if (rc != 0) return tarn_failed("tarn_slab_set_create", rc);
  rc = tarn_slab_acquire(b->set, &b->slab);
  if (rc == 0) rc = tarn_slab_mark(b->slab, &b->mark);
  if (rc != 0) {
    tarn_slab_set_destroy(b->set);
    return tarn_failed("tarn_slab_acquire/mark", rc);
  }
  return 0;
}

static void bursts_close(struct bursts *b) { tarn_slab_set_destroy(b->set); }

/* `reps` bursts of tarn_slab_alloc; every block is written and kept in
 * ptrs, then freed (a no-op) and the slab reset to the mark. */
static int bump_fn(void *arg, uint64_t reps, double *seconds) {
  struct bursts *b = arg;
  uint64_t t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++) {
    for (size_t i = 0; i < BURST; i++) {
      void *block;
      int rc = tarn_slab_alloc(b->slab, BLOCK, ALIGN, &block);
      if (rc != 0) return tarn_failed("tarn_slab_alloc", rc);
      *(unsigned char *)block = (unsigned char)i;
      b->ptrs[i] = block;
    }
    bench_escape(b->ptrs);
    for (size_t i = 0; i < BURST; i++) tarn_slab_free(b->slab, b->ptrs[i]);
    int rc = tarn_slab_reset(b->slab, &b->mark);
    if (rc != 0) return tarn_failed("tarn_slab_reset", rc);
  }
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  return 0;
}

/* The same bursts over the same slab memory with nothing but p =
 * align16(p) + 64: the limit any bump allocator can reach. */
static int bare_fn(void *arg, uint64_t reps, double *seconds) {
  struct bursts *b = arg;
  void *region;
  int rc = tarn_slab_alloc(b->slab, BURST * BLOCK, ALIGN, &region);
  if (rc != 0) return tarn_failed("tarn_slab_alloc", rc);
  uint64_t t0 = bench_now_ns();
  for (uint64_t r = 0; r < reps; r++) {
    uintptr_t p = (uintptr_t)region;
    for (size_t i = 0; i < BURST; i++) {
      uintptr_t block = (p + (ALIGN - 1)) & ~(uintptr_t)(ALIGN - 1);
      p = block + BLOCK;
      *(unsigned char *)block = (unsigned char)i;
      b->ptrs[i] = (void *)block;
    }
    bench_escape(b->ptrs);
  }
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  rc = tarn_slab_reset(b->slab, &b->mark);
  return rc == 0 ? 0 : tarn_failed("tarn_slab_reset", rc);
}

/* Median ns per block of bump and bare, measured with samples interleaved
 * after calibration and one warm-up each. */
static int run_bursts(bench_run *run, double *bump_ns, double *bare_ns) {
  struct bursts b;
  if (bursts_open(&b) != 0) return 1;
  uint64_t bump_reps = 0, bare_reps = 0;
  double warm, bump_s[BENCH_SAMPLES_MAX], bare_s[BENCH_SAMPLES_MAX];
  int rc = bench_calibrate(bump_fn, &b, BENCH_TARGET_S, &bump_reps) ||
           bench_calibrate(bare_fn, &b, BENCH_TARGET_S, &bare_reps) ||
           bump_fn(&b, bump_reps, &warm) || bare_fn(&b, bare_reps, &warm);
  for (size_t i = 0; rc == 0 && i < run->samples; i++)
    rc = bump_fn(&b, bump_reps, &bump_s[i]) ||
         bare_fn(&b, bare_reps, &bare_s[i]);
  bursts_close(&b);
  if (rc != 0) return 1;
  *bump_ns = bench_report_ops(run, BURST_NAME("tarn", "bump"), bump_s,
                              bump_reps * BURST, "ns_per_op", 1e9);
  *bare_ns = bench_report_ops(run, BURST_NAME("bare", "increment"), bare_s,
                              bare_reps * BURST, "ns_per_op", 1e9);
  return *bump_ns < 0 || *bare_ns < 0;
}

/* ---- malloc peers, each in a process of its own ------------------------ */

/* Reads burst.c's output: the allocator's name, ops per sample, then
 * `samples` lines of seconds. Returns 0 or 1 for output out of protocol. */
static int read_burst(FILE *in, const char *name, size_t samples, uint64_t *ops,
                      double *seconds) {
  char who[64];
  unsigned long long n = 0;
  if (fscanf(in, "allocator %63s ops %llu", who, &n) != 2 ||
      strcmp(who, name) != 0 || n == 0)
    return 1;
  for (size_t i = 0; i < samples; i++)
    if (fscanf(in, " sample %lf", &seconds[i]) != 1 || !(seconds[i] > 0))
      return 1;
  *ops = n;
  return 0;
}

/* Runs one malloc peer and reports it. *ns is its median ns per block, or
 * -1 when it is not available or failed. Returns 1 on failure. */
static int run_peer(bench_run *run, const char *name, const char *row,
                    double *ns) {
  char path[PATH_MAX + 64], program[64];
  *ns = -1;
  snprintf(program, sizeof program, "tarn-burst-%s", name);
  int found = bench_find_program(program, path, sizeof path);
  if (found < 0) return 1;
  if (found > 0) {
    bench_note(run, row,
               "not available (install libmimalloc-dev / libjemalloc-dev "
               "and rebuild)");
    return 0;
  }
  pid_t pid;
  FILE *in;
  char count[32];
  snprintf(count, sizeof count, "%zu", run->samples);
  char *argv[] = {path, count, NULL};
  if (bench_spawn(path, argv, &pid, &in) != 0) return 1;
  uint64_t ops = 0;
  double seconds[BENCH_SAMPLES_MAX];
  int bad = read_burst(in, name, run->samples, &ops, seconds);
  fclose(in);
  if (bench_reap(pid, path) != 0) return 1;
  if (bad) {
    fprintf(stderr, "tarn bench: alloc: %s: unexpected output\n", path);
    return 1;
  }
  *ns = bench_report_ops(run, row, seconds, ops, "ns_per_op", 1e9);
  return *ns < 0;
}

/* ---- acquire+release, one thread and two ------------------------------- */

/* `reps` acquire+release pairs on `set`. */
static int pairs(tarn_slab_set *set, uint64_t reps) {
  for (uint64_t r = 0; r < reps; r++) {
    tarn_slab *s;
    int rc = tarn_slab_acquire(set, &s);
    if (rc != 0) return tarn_failed("tarn_slab_acquire", rc);
    rc = tarn_slab_release(set, s);
    if (rc != 0) return tarn_failed("tarn_slab_release", rc);
  }
  return 0;
}

static int pair_fn(void *arg, uint64_t reps, double *seconds) {
  uint64_t t0 = bench_now_ns();
  if (pairs(arg, reps) != 0) return 1;
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  return 0;
}

static int pairs_work(void *set, uint64_t reps) { return pairs(set, reps); }

/* Median ns per pair per thread with two threads on `set`. */
static int run_duo(bench_run *run, tarn_slab_set *set, double *ns) {
  *ns = bench_duo_report(run, DUO_NAME, pairs_work, set, set);
  return *ns < 0;
}

/* Median ns per pair for one thread, and per pair per thread for two, on a
 * slab set with the default options. */
static int run_pairs(bench_run *run, double *alone_ns, double *duo_ns) {
  tarn_slab_set *set;
  int rc = tarn_slab_set_create(NULL, &set);
  if (rc != 0) return tarn_failed("tarn_slab_set_create", rc);
  uint64_t reps = 0;
  double s[BENCH_SAMPLES_MAX];
  int failed = bench_measure(run, pair_fn, set, &reps, s);
  if (!failed) {
    *alone_ns = bench_report_ops(run, PAIR_NAME, s, reps, "ns_per_op", 1e9);
    failed = *alone_ns < 0 || run_duo(run, set, duo_ns);
  }
  tarn_slab_set_destroy(set);
  return failed;
}

/* ---- goals ------------------------------------------------------------- */

struct figures {
  double bump, bare, glibc, mimalloc, jemalloc, alone, duo; /* ns, or -1 */
};

static void print_goals(const struct figures *f) {
  bench_goal_heading("Goals (ratios of the medians above, ns per operation):");
  bench_goal("tarn bump / bare increment", bench_ratio(f->bump, f->bare), "x",
             1, 1.5);
  bench_goal("glibc malloc+free / tarn bump", bench_ratio(f->glibc, f->bump),
             "x", 0, 15);
  bench_goal("mimalloc malloc+free / tarn bump",
             bench_ratio(f->mimalloc, f->bump), "x", 0, 3);
  bench_goal("acquire+release, one thread", f->alone, " ns", 1, 25);
  bench_goal("acquire+release, 2 threads / one thread",
             bench_ratio(f->duo, f->alone), "x", 1, 2);
  fflush(stdout);
}

int bench_alloc(bench_run *run) {
  struct figures f = {-1, -1, -1, -1, -1, -1, -1};
  int failed = run_bursts(run, &f.bump, &f.bare);
  failed |=
      run_peer(run, "glibc", BURST_NAME("glibc", "malloc+free"), &f.glibc);
  failed |= run_peer(run, "mimalloc", BURST_NAME("mimalloc", "malloc+free"),
                     &f.mimalloc);
  failed |= run_peer(run, "jemalloc", BURST_NAME("jemalloc", "malloc+free"),
                     &f.jemalloc);
  failed |= run_pairs(run, &f.alone, &f.duo);
  print_goals(&f);
  return failed;
}
