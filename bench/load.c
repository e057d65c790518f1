/* load.c: the time_to_load suite. A fresh process that creates a runtime,
 * runs one task and destroys it (bench/load_child.c, built as
 * bench/tarn-load) is started again and again; each sample is the wall
 * time from posix_spawn to the end of waitpid, so it holds exec, the
 * dynamic loader (libc, OpenBLAS, zstd, ...), tarn's start-up (workers,
 * pool, scratch slabs), the task and the shutdown. The child also reports
 * the part from tarn_rt_create to the end of tarn_rt_destroy, printed as
 * `runtime_ms` so the share of the loader is visible. As a floor, the
 * same is timed for /bin/true. Goal (BENCH.md): under 5 ms. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ROW "time_to_load/tarn/runtime + one task"
#define FLOOR_ROW "time_to_load/true/empty process"
#define PROCESSES_MIN 20

/* Starts `path` once; *seconds is its whole life as the parent sees it and
 * *inner what it printed (nanoseconds), when want_inner. */
static int one_process(const char *path, int want_inner, double *seconds,
                       double *inner) {
  char *argv[] = {(char *)path, NULL};
  pid_t pid;
  FILE *out;
  uint64_t t0 = bench_now_ns();
  if (bench_spawn(path, argv, &pid, &out) != 0) return 1;
  unsigned long long ns = 0;
  int parsed = fscanf(out, "%llu", &ns);
  fclose(out);
  int failed = bench_reap(pid, path);
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  if (failed) return 1;
  if (want_inner && (parsed != 1 || ns == 0)) {
    fprintf(stderr, "tarn bench: time_to_load: %s printed no time\n", path);
    return 1;
  }
  *inner = (double)ns * 1e-9;
  return 0;
}

/* Times `count` processes of `path` after one warm-up (which loads the
 * files into the page cache). */
static int time_processes(const char *path, int want_inner, size_t count,
                          double *seconds, double *inner) {
  double warm, warm_inner;
  if (one_process(path, want_inner, &warm, &warm_inner) != 0) return 1;
  for (size_t i = 0; i < count; i++)
    if (one_process(path, want_inner, &seconds[i], &inner[i]) != 0) return 1;
  return 0;
}

int bench_load(bench_run *run) {
  /* Either row alone may be wanted (until 2026-12-05 the empty process's
   * could not be: --filter for it matched nothing). */
  bool want_tarn = bench_wanted(run, ROW);
  if (!want_tarn && !bench_wanted(run, FLOOR_ROW)) return 0;
  char path[PATH_MAX + 64] = "";
  if (want_tarn) {
    int found = bench_find_program("tarn-load", path, sizeof path);
    if (found < 0) return 1;
    if (found > 0) {
      bench_note(run, ROW, "not available (bench/tarn-load was not built)");
      want_tarn = false;
    }
  }
  size_t count = run->samples < PROCESSES_MIN ? PROCESSES_MIN : run->samples;
  double *seconds = calloc(2 * count, sizeof *seconds);
  if (seconds == NULL) {
    fprintf(stderr, "tarn bench: time_to_load: out of memory\n");
    return 1;
  }
  double *inner = seconds + count;
  int failed = want_tarn ? time_processes(path, 1, count, seconds, inner) : 0;
  double tarn_ms = -1;
  if (!failed && want_tarn) {
    bench_extra extra[2] = {{"runtime_ms", bench_median(inner, count) * 1e3},
                            {"processes", (double)count}};
    const bench_result *r = bench_report(run, ROW, seconds, count, extra, 2);
    failed = r == NULL;
    if (r != NULL) tarn_ms = r->median_s * 1e3;
  }
  double floor_ms = -1;
  if (!failed && bench_wanted(run, FLOOR_ROW)) {
    const char *true_path = "/bin/true";
    failed = time_processes(true_path, 0, count, seconds, inner);
    if (!failed) {
      bench_extra extra[1] = {{"processes", (double)count}};
      const bench_result *r =
          bench_report(run, FLOOR_ROW, seconds, count, extra, 1);
      failed = r == NULL;
      if (r != NULL) floor_ms = r->median_s * 1e3;
    }
  }
  free(seconds);
  bench_goal_heading("Goals (medians of %zu processes each):", count);
  bench_goal("time_to_load, tarn runtime + one task", tarn_ms, " ms", 1, 5);
  if (floor_ms > 0 && tarn_ms > 0)
    bench_printf("  (an empty process, /bin/true: %.2f ms)\n", floor_ms);
  return failed;
}
