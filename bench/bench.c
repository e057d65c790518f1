/* bench.c: the shared harness of `tarn bench` (see bench.h): the clock,
 * calibration, the summary of samples, the human table printed as results
 * arrive, and the JSON file of BENCH.md with a description of the machine
 * (CPU model, online cores, operating system, tarn version, date). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "blas_core.h"
#include "tarn.h"

extern char **environ;

#define NAME_WIDTH 46

uint64_t bench_now_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    perror("tarn bench: clock_gettime(CLOCK_MONOTONIC)");
    exit(1);
  }
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every goal line printed in the run, for the JSON file's "goals"
 * (run_json): its suite (set when the suite ends, goal_tally_end), what it
 * judges, the figure (negative: not measured) and the goal. */
struct goal_line {
  char suite[32], what[96], unit[16];
  double value, limit;
  int at_most, measured, met;
};
static struct goal_line *goal_lines;
static size_t goal_count, goal_cap;
/* A goal line that found no memory to be kept: the file then says nothing
 * of goals rather than a part of them. */
static bool goal_lines_lost;

void bench_run_init(bench_run *run, size_t samples) {
  memset(run, 0, sizeof *run);
  run->samples = samples;
}

void bench_run_free(bench_run *run) {
  bench_progress_clear(run);
  if (run->filter != NULL) {
    regfree(run->filter);
    free(run->filter);
  }
  for (size_t i = 0; i < run->count; i++) {
    free(run->results[i].name);
    free(run->results[i].samples);
  }
  free(run->results);
  memset(run, 0, sizeof *run);
  free(goal_lines);
  goal_lines = NULL;
  goal_count = goal_cap = 0;
  goal_lines_lost = false;
}

/* Whether a --filter is in force: goals that were not measured are then
 * left out instead of printed as "not measured". */
static int filtered;

int bench_set_filter(bench_run *run, const char *regex) {
  regex_t *re = malloc(sizeof *re);
  if (re == NULL) {
    fprintf(stderr, "tarn bench: out of memory\n");
    return 2;
  }
  int rc = regcomp(re, regex, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[256];
    regerror(rc, re, why, sizeof why);
    free(re);
    fprintf(stderr, "tarn: --filter '%s' is not a regular expression: %s\n",
            regex, why);
    return 2;
  }
  if (run->filter != NULL) {
    regfree(run->filter);
    free(run->filter);
  }
  run->filter = re;
  filtered = 1;
  return 0;
}

/* The run whose progress bar is on the screen, or NULL. */
static bench_run *progress_owner;

/* Draws "[#####.....] 3/7 suites  NAME" on stderr, over the last bar. */
static void progress_draw(bench_run *run, const char *name) {
  enum { width = 24 };
  unsigned total = run->suite_count ? run->suite_count : 1;
  unsigned filled = run->suite_index * width / total;
  char bar[width + 1];
  for (unsigned i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
  bar[width] = '\0';
  fprintf(stderr, "\r\033[K[%s] %u/%u  %.60s", bar, run->suite_index, total,
          name);
  fflush(stderr);
  run->progress_shown = 1;
  progress_owner = run;
}

void bench_progress_clear(bench_run *run) {
  if (!run->progress_shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  run->progress_shown = 0;
  progress_owner = NULL;
}

/* Why the first write of bench_printf's that failed did (0: none did). */
static int output_errno;

int bench_printf(const char *format, ...) {
  if (progress_owner != NULL) bench_progress_clear(progress_owner);
  va_list ap;
  va_start(ap, format);
  int n = vprintf(format, ap);
  va_end(ap);
  if (fflush(stdout) != 0 && output_errno == 0) output_errno = errno;
  return n;
}

int bench_output_errno(void) { return output_errno; }

int bench_wanted(bench_run *run, const char *name) {
  if (run->filter != NULL && regexec(run->filter, name, 0, NULL, 0) != 0)
    return 0;
  run->matched++;
  if (run->progress) {
    fflush(stdout);
    progress_draw(run, name);
  }
  return 1;
}

int bench_rt_options(const bench_run *run, struct tarn_rt_options *options) {
  int rc = tarn_rt_options_init(options);
  if (rc != 0) return rc;
  if (run->workers > 0) options->workers = run->workers;
  if (run->mem_limit > 0) options->pool.mem_limit = run->mem_limit;
  return 0;
}

int bench_rt_open(const bench_run *run, const char *suite, tarn_rt **rt) {
  tarn_rt_options o;
  int rc = bench_rt_options(run, &o);
  if (rc == 0) rc = tarn_rt_create(&o, rt);
  return rc == 0 ? 0 : bench_tarn_failed(suite, "tarn_rt_create", rc);
}

size_t bench_sizes(const bench_run *run, const size_t *defaults,
                   size_t ndefaults, const size_t **sizes) {
  size_t n = ndefaults;
  *sizes = defaults;
  if (run->sizes != NULL) {
    *sizes = run->sizes;
    n = run->nsizes;
  }
  return n < BENCH_SIZES_MAX ? n : BENCH_SIZES_MAX;
}

void bench_size_goal(size_t n, const char *op, const char *label, double value,
                     const char *unit, int at_most, double limit) {
  char what[96];
  snprintf(what, sizeof what, "N=%zu %s: %s", n, op, label);
  bench_goal(what, value, unit, at_most, limit);
}

double bench_seed_ms(size_t n, const size_t *sizes, size_t nsizes,
                     const double *medians, size_t ops, size_t op) {
  for (size_t k = 0; k < nsizes; k++)
    if (sizes[k] == n) return medians[k * ops + op];
  return -1;
}

unsigned bench_default_threads(void) {
  tarn_rt_options o;
  return tarn_rt_options_init(&o) == 0 && o.workers > 0 ? o.workers : 1;
}

unsigned bench_threads(const bench_run *run) {
  return run->workers > 0 ? run->workers : bench_default_threads();
}

int bench_measure(bench_run *run, bench_fn fn, void *arg, uint64_t *reps,
                  double *samples) {
  double warm;
  if (bench_calibrate(fn, arg, BENCH_TARGET_S, reps) != 0 ||
      fn(arg, *reps, &warm) != 0)
    return 1;
  for (size_t i = 0; i < run->samples; i++)
    if (fn(arg, *reps, &samples[i]) != 0) return 1;
  return 0;
}

int bench_calibrate(bench_fn fn, void *arg, double target_s, uint64_t *reps) {
  uint64_t n = 1;
  for (;;) {
    double t = 0;
    if (fn(arg, n, &t) != 0) return 1;
    if (t >= target_s / 6 || n >= UINT64_MAX / 4) {
      double scaled = (double)n * target_s / (t > 0 ? t : target_s);
      *reps = scaled < 1 ? 1 : (uint64_t)scaled;
      return 0;
    }
    n *= 2;
  }
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void bench_summary(const double *values, size_t n, double *median, double *min,
                   double *max) {
  double sorted[BENCH_SAMPLES_MAX];
  if (n > BENCH_SAMPLES_MAX) n = BENCH_SAMPLES_MAX;
  memcpy(sorted, values, n * sizeof *values);
  qsort(sorted, n, sizeof *sorted, compare_double);
  *min = sorted[0];
  *max = sorted[n - 1];
  *median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* Formats seconds with a unit that keeps 3 to 4 significant digits. */
static const char *format_time(char *buf, size_t size, double s) {
  if (s >= 1)
    snprintf(buf, size, "%.3f s", s);
  else if (s >= 1e-3)
    snprintf(buf, size, "%.3f ms", s * 1e3);
  else if (s >= 1e-6)
    snprintf(buf, size, "%.3f us", s * 1e6);
  else
    snprintf(buf, size, "%.1f ns", s * 1e9);
  return buf;
}

static void thp_setting(char *buf, size_t size);

/* One line saying what the suites run under, from the options after
 * --workers, --mem-limit and the TARN_ variables: a limit or a bound set
 * in the shell changes every row, so the table says so. */
static void print_settings(const bench_run *run) {
  tarn_rt_options o;
  if (bench_rt_options(run, &o) != 0) return; /* no suite can start */
  char limit[64], bound[64], thp[32];
  size_t mib = (size_t)1 << 20;
  if (o.pool.mem_limit == 0)
    snprintf(limit, sizeof limit, "no memory limit");
  else if (o.pool.mem_limit % mib == 0)
    snprintf(limit, sizeof limit, "memory limit %zu MiB",
             o.pool.mem_limit / mib);
  else
    snprintf(limit, sizeof limit, "memory limit %zu bytes", o.pool.mem_limit);
  if (o.max_unfinished == 0)
    snprintf(bound, sizeof bound, "no bound on unfinished tasks");
  else
    snprintf(bound, sizeof bound, "at most %u unfinished tasks",
             o.max_unfinished);
  thp_setting(thp, sizeof thp);
  bench_printf(
      "settings: %u worker%s%s, %s%s, %s, idle trim %u ms, huge pages %s "
      "(THP %s)\n",
      o.workers, o.workers == 1 ? "" : "s",
      o.pin_workers ? ", pinned" : ", not pinned", limit,
      run->mem_limit == 0 ? " (the ooc suite sets its own)" : "", bound,
      o.idle_trim_ms, o.pool.huge_pages ? "on" : "off", thp);
  char blas[160];
  bench_printf("blas: %s\n", blas_core_describe(blas, sizeof blas));
}

static void print_header(bench_run *run) {
  bench_progress_clear(run);
  if (run->header_printed) return;
  run->header_printed = 1;
  print_settings(run);
  bench_printf("%-*s %11s %11s %11s  %s\n", NAME_WIDTH, "name", "median", "min",
               "max", "extra");
}

static void print_row(bench_run *run, const bench_result *r) {
  char med[32], lo[32], hi[32];
  print_header(run);
  bench_printf("%-*s %11s %11s %11s ", NAME_WIDTH, r->name,
               format_time(med, sizeof med, r->median_s),
               format_time(lo, sizeof lo, r->min_s),
               format_time(hi, sizeof hi, r->max_s));
  for (size_t i = 0; i < r->nextra; i++) {
    double v = r->extra[i].value;
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v)
      bench_printf(" %s=%.0f", r->extra[i].key, v);
    else
      bench_printf(" %s=%.3g", r->extra[i].key, v);
  }
  bench_printf("\n");
  fflush(stdout);
}

void bench_note(bench_run *run, const char *name, const char *message) {
  print_header(run);
  bench_printf("%-*s %s\n", NAME_WIDTH, name, message);
  fflush(stdout);
}

static bench_result *append_result(bench_run *run) {
  if (run->count == run->cap) {
    size_t cap = run->cap ? run->cap * 2 : 16;
    bench_result *grown = realloc(run->results, cap * sizeof *grown);
    if (grown == NULL) return NULL;
    run->results = grown;
    run->cap = cap;
  }
  bench_result *r = &run->results[run->count];
  memset(r, 0, sizeof *r);
  return r;
}

const bench_result *bench_report(bench_run *run, const char *name,
                                 const double *samples, size_t n,
                                 const bench_extra *extra, size_t nextra) {
  if (n == 0 || n > BENCH_SAMPLES_MAX || nextra > BENCH_EXTRA_MAX) {
    fprintf(stderr, "tarn bench: %s: bad result (%zu samples, %zu extras)\n",
            name, n, nextra);
    return NULL;
  }
  if (run->filter != NULL && regexec(run->filter, name, 0, NULL, 0) != 0) {
    /* Measured by a suite that cannot skip single rows: not recorded. */
    static const bench_result unwanted = {
        .median_s = -1, .min_s = -1, .max_s = -1};
    return &unwanted;
  }
  bench_result *r = append_result(run);
  if (r == NULL || (r->name = strdup(name)) == NULL ||
      (r->samples = malloc(n * sizeof *samples)) == NULL) {
    if (r != NULL) free(r->name);
    fprintf(stderr, "tarn bench: %s: out of memory\n", name);
    return NULL;
  }
  memcpy(r->samples, samples, n * sizeof *samples);
  r->nsamples = n;
  memcpy(r->extra, extra, nextra * sizeof *extra);
  r->nextra = nextra;
  bench_summary(samples, n, &r->median_s, &r->min_s, &r->max_s);
  run->count++;
  print_row(run, r);
  return r;
}

/* The first "model name" (x86) or "Processor"/"cpu model" line's value. */
static void cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    char *colon = strchr(line, ':');
    if (colon == NULL) continue;
    if (strncmp(line, "model name", 10) != 0 &&
        strncmp(line, "Processor", 9) != 0 &&
        strncmp(line, "cpu model", 9) != 0)
      continue;
    char *value = colon + 1 + strspn(colon + 1, " \t");
    value[strcspn(value, "\n")] = '\0';
    snprintf(buf, size, "%s", value);
    break;
  }
  fclose(f);
}

/* The kernel's transparent huge page setting, the bracketed word of
 * /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise",
 * "never"), or "unknown". */
static void thp_setting(char *buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == NULL) return;
  char line[128];
  if (fgets(line, sizeof line, f) != NULL) {
    char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;
    if (close != NULL)
      snprintf(buf, size, "%.*s", (int)(close - open - 1), open + 1);
  }
  fclose(f);
}

/* Adds `value` under `key` to `obj`; returns -1 when jansson fails. */
static int set_new(json_t *obj, const char *key, json_t *value) {
  return value == NULL ? -1 : json_object_set_new(obj, key, value);
}

/* The runtime settings every suite starts from (the environment's TARN_
 * variables, then --workers and --mem-limit), added to `m` under the names
 * of their option fields; "mem_limit" in bytes, 0 for none (the ooc suite
 * sets its own). Nothing is added when the environment cannot be parsed:
 * no suite could start then. Returns -1 when jansson fails. */
static int settings_json(json_t *m, const bench_run *run) {
  tarn_rt_options o;
  if (bench_rt_options(run, &o) != 0) return 0;
  json_int_t limit = o.pool.mem_limit > (size_t)LLONG_MAX
                         ? LLONG_MAX
                         : (json_int_t)o.pool.mem_limit;
  const struct {
    const char *key;
    json_int_t value;
  } settings[] = {{"workers", o.workers},
                  {"pin_workers", o.pin_workers},
                  {"mem_limit", limit},
                  {"max_unfinished", o.max_unfinished},
                  {"idle_trim_ms", o.idle_trim_ms}};
  for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
    if (set_new(m, settings[i].key, json_integer(settings[i].value)) != 0)
      return -1;
  return 0;
}

void bench_cpu_times_read(bench_cpu_times *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen("/proc/stat", "r");
  if (f == NULL) return;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  /* "cpu  user nice system idle iowait irq softirq steal guest ...": guest
   * time is counted in user already. */
  if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice,
             &system, &idle, &iowait, &irq, &softirq, &steal) == 8) {
    t->busy = user + nice + system + irq + softirq;
    t->steal = steal;
    t->ok = 1;
  }
  fclose(f);
}

/* Keeps a goal line for the JSON file. */
static void goal_keep(const char *what, double value, const char *unit,
                      int at_most, double limit, int measured, int met) {
  if (goal_count == goal_cap) {
    size_t cap = goal_cap > 0 ? 2 * goal_cap : 64;
    struct goal_line *grown = realloc(goal_lines, cap * sizeof *grown);
    if (grown == NULL) {
      goal_lines_lost = true;
      return;
    }
    goal_lines = grown;
    goal_cap = cap;
  }
  struct goal_line *g = &goal_lines[goal_count++];
  memset(g, 0, sizeof *g);
  snprintf(g->what, sizeof g->what, "%s", what);
  snprintf(g->unit, sizeof g->unit, "%s", unit);
  g->value = value;
  g->limit = limit;
  g->at_most = at_most;
  g->measured = measured;
  g->met = met;
}

/* Ends the suite's goal lines with their count ("36 of 43 goals met"),
 * when it printed any: the lines kept since the last suite ended, which
 * get the suite's name. Where a line found no memory to be kept, no count
 * (it would leave that line out). */
static void goal_tally_end(const char *suite) {
  unsigned met = 0, missed = 0, unmeasured = 0;
  for (size_t i = goal_count; i > 0 && goal_lines[i - 1].suite[0] == '\0';
       i--) {
    struct goal_line *g = &goal_lines[i - 1];
    snprintf(g->suite, sizeof g->suite, "%s", suite);
    if (!g->measured)
      unmeasured++;
    else if (g->met)
      met++;
    else
      missed++;
  }
  if (goal_lines_lost || met + missed + unmeasured == 0) return;
  char note[48] = "";
  if (unmeasured > 0)
    snprintf(note, sizeof note, " (%u not measured)", unmeasured);
  bench_printf("  %u of %u goals met%s\n", met, met + missed, note);
}

void bench_steal_end(bench_run *run, const char *suite,
                     const bench_cpu_times *before) {
  goal_tally_end(suite);
  bench_cpu_times after;
  bench_cpu_times_read(&after);
  double share = -1;
  if (before->ok && after.ok && after.busy >= before->busy &&
      after.steal >= before->steal) {
    unsigned long long busy = after.busy - before->busy,
                       steal = after.steal - before->steal;
    share = busy + steal > 0 ? (double)steal / (double)(busy + steal) : 0;
  }
  if (run->nsteal < BENCH_SUITES_MAX) {
    run->steal[run->nsteal].suite = suite;
    run->steal[run->nsteal].share = share;
    run->nsteal++;
  }
  if (share < 0) return;
  bench_progress_clear(run);
  bench_printf(
      "steal: the hypervisor took %.1f %% of the CPU time %s wanted "
      "(/proc/stat)%s\n",
      share * 100, suite,
      share >= BENCH_STEAL_NOTABLE
          ? "; its rows ran on a machine shared with others"
          : "");
}

/* Adds machine.steal to `m`: each suite's share (bench_steal_end), where
 * known; nothing when none is. Returns -1 when jansson fails. */
static int add_steal(json_t *m, const bench_run *run) {
  json_t *o = NULL;
  for (size_t i = 0; i < run->nsteal; i++) {
    if (run->steal[i].share < 0) continue;
    if (o == NULL && (o = json_object()) == NULL) return -1;
    if (set_new(o, run->steal[i].suite, json_real(run->steal[i].share)) != 0) {
      json_decref(o);
      return -1;
    }
  }
  return o == NULL ? 0 : set_new(m, "steal", o);
}

void bench_cores_end(bench_run *run, const char *suite, double before_ns) {
  if (before_ns < 0) return;
  bench_quiesce(BENCH_QUIESCE_BLAS_S);
  double after_ns = bench_core_round_trip_ns();
  if (after_ns < 0) return;
  if (run->ncores < BENCH_SUITES_MAX) {
    run->cores[run->ncores].suite = suite;
    run->cores[run->ncores].before_ns = before_ns;
    run->cores[run->ncores].after_ns = after_ns;
    run->ncores++;
  }
  bench_progress_clear(run);
  bench_printf(
      "cores: a cache line's round trip between the first two processors "
      "took %.0f ns before %s and %.0f after",
      before_ns, suite, after_ns);
  if (before_ns >= BENCH_CORES_FAR_NS || after_ns >= BENCH_CORES_FAR_NS)
    bench_printf(
        "; at %d ns or more they share no cache, and work split "
        "between them pays less",
        BENCH_CORES_FAR_NS);
  bench_printf("\n");
}

/* Adds machine.core_round_trip_ns to `m`: each suite's [before, after]
 * (bench_cores_end); nothing when none was measured. Returns -1 when
 * jansson fails. */
static int add_cores(json_t *m, const bench_run *run) {
  if (run->ncores == 0) return 0;
  json_t *o = json_object();
  if (o == NULL) return -1;
  for (size_t i = 0; i < run->ncores; i++) {
    json_t *pair = json_pack("[ff]", round(run->cores[i].before_ns),
                             round(run->cores[i].after_ns));
    if (set_new(o, run->cores[i].suite, pair) != 0) {
      json_decref(o);
      return -1;
    }
  }
  return set_new(m, "core_round_trip_ns", o);
}

static json_t *machine_json(const bench_run *run) {
  char cpu[256], os[400], date[32], thp[32];
  cpu_model(cpu, sizeof cpu);
  thp_setting(thp, sizeof thp);
  /* tarn's own setting, as every suite's pool gets it (TARN_HUGE_PAGES). */
  tarn_pool_options pool;
  tarn_pool_options_init(&pool);
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
  else
    snprintf(os, sizeof os, "unknown");
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm) == NULL ||
      strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(date, sizeof date, "unknown");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  json_t *m = json_object();
  if (m == NULL || set_new(m, "cpu", json_string(cpu)) != 0 ||
      set_new(m, "cores", json_integer(cores > 0 ? cores : 1)) != 0 ||
      set_new(m, "os", json_string(os)) != 0 ||
      set_new(m, "tarn", json_string(tarn_version())) != 0 ||
      set_new(m, "date", json_string(date)) != 0 ||
      set_new(m, "thp", json_string(thp)) != 0 ||
      set_new(m, "huge_pages", json_integer(pool.huge_pages)) != 0 ||
      set_new(m, "blas_core", json_string(blas_core_name())) != 0 ||
      set_new(m, "blas_core_forced", json_integer(blas_core_forced())) != 0 ||
      settings_json(m, run) != 0 || add_steal(m, run) != 0 ||
      add_cores(m, run) != 0) {
    json_decref(m);
    return NULL;
  }
  return m;
}

static json_t *result_json(const bench_result *r) {
  json_t *o = json_object();
  json_t *extra = json_object();
  if (o == NULL || extra == NULL) {
    json_decref(o);
    json_decref(extra);
    return NULL;
  }
  for (size_t i = 0; i < r->nextra; i++)
    if (set_new(extra, r->extra[i].key, json_real(r->extra[i].value)) != 0) {
      json_decref(o);
      json_decref(extra);
      return NULL;
    }
  if (set_new(o, "name", json_string(r->name)) != 0 ||
      set_new(o, "median_s", json_real(r->median_s)) != 0 ||
      set_new(o, "min_s", json_real(r->min_s)) != 0 ||
      set_new(o, "max_s", json_real(r->max_s)) != 0 ||
      set_new(o, "samples", json_integer((json_int_t)r->nsamples)) != 0 ||
      set_new(o, "extra", extra) != 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* A goal line as the JSON file's "goals" hold it: {"suite", "name",
 * "value" (null when not measured, or not a finite number), "unit",
 * "at_most", "limit", "met" (null when not measured)}. */
static json_t *goal_json(const struct goal_line *g) {
  json_t *o = json_object();
  if (o == NULL) return NULL;
  bool measured = g->measured, met = g->met;
  if (set_new(o, "suite", json_string(g->suite)) != 0 ||
      set_new(o, "name", json_string(g->what)) != 0 ||
      set_new(o, "value",
              measured && isfinite(g->value) ? json_real(g->value)
                                             : json_null()) != 0 ||
      set_new(o, "unit", json_string(g->unit)) != 0 ||
      set_new(o, "at_most", json_boolean(g->at_most)) != 0 ||
      set_new(o, "limit", json_real(g->limit)) != 0 ||
      set_new(o, "met", measured ? json_boolean(met) : json_null()) != 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *run_json(const bench_run *run) {
  json_t *doc = json_object();
  json_t *results = json_array();
  if (doc == NULL || results == NULL) {
    json_decref(doc);
    json_decref(results);
    return NULL;
  }
  if (set_new(doc, "machine", machine_json(run)) != 0 ||
      set_new(doc, "results", results) != 0) {
    json_decref(doc);
    return NULL;
  }
  for (size_t i = 0; i < run->count; i++) {
    json_t *r = result_json(&run->results[i]);
    if (r == NULL || json_array_append_new(results, r) != 0) {
      json_decref(doc);
      return NULL;
    }
  }
  if (goal_count > 0 && !goal_lines_lost) {
    json_t *goals = json_array();
    if (set_new(doc, "goals", goals) != 0) {
      json_decref(doc);
      return NULL;
    }
    for (size_t i = 0; i < goal_count; i++) {
      json_t *g = goal_json(&goal_lines[i]);
      if (g == NULL || json_array_append_new(goals, g) != 0) {
        json_decref(doc);
        return NULL;
      }
    }
  }
  return doc;
}

int bench_write_json(const bench_run *run, FILE *out, const char *path) {
  json_t *doc = run_json(run);
  if (doc == NULL) {
    fprintf(stderr, "tarn bench: cannot build the JSON document\n");
    return -1;
  }
  errno = 0;
  int rc = json_dumpf(doc, out, JSON_INDENT(2));
  json_decref(doc);
  if (rc == 0 && fputc('\n', out) == EOF) rc = -1;
  if (rc != 0) {
    fprintf(stderr, "tarn bench: cannot write %s: %s\n", path,
            errno ? strerror(errno) : "write failed");
    return -1;
  }
  return 0;
}

double bench_median(const double *values, size_t n) {
  double median, min, max;
  bench_summary(values, n, &median, &min, &max);
  return median;
}

double bench_report_ops(bench_run *run, const char *name, const double *samples,
                        uint64_t ops, const char *per_op, double scale) {
  bench_extra extra[2] = {{"", 0}, {"ops", (double)ops}};
  snprintf(extra[0].key, sizeof extra[0].key, "%s", per_op);
  extra[0].value = bench_median(samples, run->samples) * scale / (double)ops;
  const bench_result *r =
      bench_report(run, name, samples, run->samples, extra, 2);
  if (r == NULL) return -1;
  return r->median_s < 0 ? BENCH_SKIPPED : extra[0].value;
}

/* The heading bench_goal_heading set, printed before the next goal line;
 * empty once printed. */
static char goal_heading[160];

void bench_goal_heading(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(goal_heading, sizeof goal_heading, format, ap);
  va_end(ap);
}

void bench_goal(const char *what, double value, const char *unit, int at_most,
                double limit) {
  char goal[32], figure[32];
  snprintf(goal, sizeof goal, "%s %g%s", at_most ? "<=" : ">=", limit, unit);
  if ((value < 0 || signbit(value)) && filtered) return;
  if (goal_heading[0] != '\0') {
    bench_printf("\n%s\n", goal_heading);
    goal_heading[0] = '\0';
  }
  int measured = !(value < 0 || signbit(value));
  int met = measured && (at_most ? value <= limit : value >= limit);
  goal_keep(what, value, unit, at_most, limit, measured, met);
  if (!measured) {
    bench_printf("  %-42s %12s   goal %s\n", what, "not measured", goal);
    return;
  }
  snprintf(figure, sizeof figure, "%.2f%s", value, unit);
  bench_printf("  %-42s %12s   goal %-9s %s\n", what, figure, goal,
               met ? "met" : "NOT met");
}

double bench_ratio(double a, double b) { return a > 0 && b > 0 ? a / b : -1; }

struct duo_impl {
  pthread_barrier_t start, done;
  pthread_t helper;
  uint64_t reps; /* written before `start`, 0 tells the helper to quit */
  double helper_s;
  int helper_failed;
};

static void *duo_helper(void *arg) {
  bench_duo *d = arg;
  struct duo_impl *m = d->impl;
  for (;;) {
    pthread_barrier_wait(&m->start);
    if (m->reps == 0) return NULL;
    uint64_t t0 = bench_now_ns();
    m->helper_failed = d->work(d->arg[1], m->reps);
    m->helper_s = (double)(bench_now_ns() - t0) * 1e-9;
    pthread_barrier_wait(&m->done);
  }
}

int bench_duo_open(bench_duo *d, int (*work)(void *, uint64_t), void *mine,
                   void *theirs) {
  struct duo_impl *m = calloc(1, sizeof *m);
  if (m == NULL) {
    fprintf(stderr, "tarn bench: out of memory\n");
    return 1;
  }
  *d = (bench_duo){work, {mine, theirs}, m};
  int rc = pthread_barrier_init(&m->start, NULL, 2);
  if (rc != 0) goto fail;
  rc = pthread_barrier_init(&m->done, NULL, 2);
  if (rc != 0) goto fail_start;
  rc = pthread_create(&m->helper, NULL, duo_helper, d);
  if (rc == 0) return 0;
  pthread_barrier_destroy(&m->done);
fail_start:
  pthread_barrier_destroy(&m->start);
fail:
  free(m);
  fprintf(stderr, "tarn bench: cannot start a second thread: %s\n",
          strerror(rc));
  return 1;
}

int bench_duo_fn(void *arg, uint64_t reps, double *seconds) {
  bench_duo *d = arg;
  struct duo_impl *m = d->impl;
  m->reps = reps;
  pthread_barrier_wait(&m->start);
  uint64_t t0 = bench_now_ns();
  int failed = d->work(d->arg[0], reps);
  double own = (double)(bench_now_ns() - t0) * 1e-9;
  pthread_barrier_wait(&m->done);
  if (failed || m->helper_failed) return 1;
  *seconds = own > m->helper_s ? own : m->helper_s;
  return 0;
}

double bench_duo_report(bench_run *run, const char *name,
                        int (*work)(void *, uint64_t), void *mine,
                        void *theirs) {
  bench_duo d;
  if (bench_duo_open(&d, work, mine, theirs) != 0) return -1;
  uint64_t reps = 0;
  double s[BENCH_SAMPLES_MAX];
  int failed = bench_measure(run, bench_duo_fn, &d, &reps, s);
  bench_duo_close(&d);
  if (failed) return -1;
  return bench_report_ops(run, name, s, reps, "ns_per_op", 1e9);
}

void bench_duo_close(bench_duo *d) {
  struct duo_impl *m = d->impl;
  m->reps = 0;
  pthread_barrier_wait(&m->start);
  pthread_join(m->helper, NULL);
  pthread_barrier_destroy(&m->start);
  pthread_barrier_destroy(&m->done);
  free(m);
}

int bench_tarn_failed(const char *suite, const char *what, int status) {
  fprintf(stderr, "tarn bench: %s: %s: %s\n", suite, what,
          tarn_strerror(status));
  return 1;
}

size_t bench_tile_size(size_t n) {
  if (n <= 512) return n;
  size_t tiles = (n + 511) / 512;
  return (n + tiles - 1) / tiles;
}

void *bench_buffer_alloc(size_t bytes) {
  if (bytes == 0 || bytes > SIZE_MAX - 63) return NULL;
  return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

double bench_minor_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_minflt : 0;
}

const char *bench_spill_dir(void) {
  tarn_pool_options o;
  (void)tarn_pool_options_init(&o); /* a bad variable keeps the default */
  return o.spill_dir;
}

int bench_close(double a, double b, double tol) {
  return fabs(a - b) <= tol * (1 + fabs(b));
}

/* ---- temporary directories and interrupts --------------------------------
 *
 * The directories the suites make for their files (files: the .npy files
 * it saves and loads, 129 MiB at N = 2048; StarPU's home; the disk node of
 * the ooc suite's StarPU child) are kept in fixed slots while they exist.
 * A SIGINT or SIGTERM removes them before the process dies of it: they
 * were left behind until 2026-12-05. The handler calls only what a signal
 * handler may (open, openat, lseek, unlinkat, rmdir, close, strcmp,
 * sigaction, raise, and getdents64, a bare system call that touches no
 * state of the C library's), and reads a slot only after its flag, stored
 * with release order once the path is in place, says it is in use. A
 * suite makes at most three at once; one more than the slots hold would
 * be made but not removed by an interrupt. */

#define TEMP_DIRS_MAX 8
#define TEMP_DIR_DEPTH 8 /* StarPU's home: .starpu/sampling/bus/FILE */

static char temp_dirs[TEMP_DIRS_MAX][PATH_MAX];
static atomic_int temp_dir_used[TEMP_DIRS_MAX];

char *bench_temp_dir(char *template) {
  if (mkdtemp(template) == NULL) return NULL;
  for (int i = 0; i < TEMP_DIRS_MAX; i++)
    if (atomic_load_explicit(&temp_dir_used[i], memory_order_relaxed) == 0 &&
        strlen(template) < sizeof temp_dirs[i]) {
      strcpy(temp_dirs[i], template);
      atomic_store_explicit(&temp_dir_used[i], 1, memory_order_release);
      break;
    }
  return template;
}

/* Forgets `dir`, which bench_remove_tree has removed. */
static void temp_dir_forget(const char *dir) {
  for (int i = 0; i < TEMP_DIRS_MAX; i++)
    if (atomic_load_explicit(&temp_dir_used[i], memory_order_relaxed) != 0 &&
        strcmp(temp_dirs[i], dir) == 0)
      atomic_store_explicit(&temp_dir_used[i], 0, memory_order_relaxed);
}

/* Removes what the directory open as `fd` holds, `depth` levels down from
 * a registered one; async-signal-safe. A few passes, as a worker may add
 * a file while the first one runs. */
static void empty_dir_at(int fd, int depth) {
  char buf[2048] __attribute__((aligned(8)));
  for (int pass = 0; pass < 4; pass++) {
    int found = 0;
    ssize_t n;
    lseek(fd, 0, SEEK_SET);
    while ((n = getdents64(fd, buf, sizeof buf)) > 0)
      for (ssize_t at = 0; at < n;) {
        struct dirent64 *e = (struct dirent64 *)(void *)(buf + at);
        at += e->d_reclen;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
          continue;
        found = 1;
        if (unlinkat(fd, e->d_name, 0) == 0 || errno != EISDIR ||
            depth >= TEMP_DIR_DEPTH)
          continue;
        int sub = openat(fd, e->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        empty_dir_at(sub, depth + 1);
        close(sub);
        unlinkat(fd, e->d_name, AT_REMOVEDIR);
      }
    if (!found) return;
  }
}

/* The handler of bench_catch_interrupts. */
static void on_interrupt(int sig) {
  for (int i = 0; i < TEMP_DIRS_MAX; i++) {
    if (atomic_load_explicit(&temp_dir_used[i], memory_order_acquire) == 0)
      continue;
    int fd =
        open(temp_dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    empty_dir_at(fd, 0);
    close(fd);
    rmdir(temp_dirs[i]);
  }
  /* dies of the signal once the handler returns (it is blocked until then) */
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

void bench_catch_interrupts(void) {
  static const int signals[] = {SIGINT, SIGTERM};
  struct sigaction on = {.sa_handler = on_interrupt}, was;
  sigfillset(&on.sa_mask); /* one cleanup at a time, not interrupted */
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
    if (sigaction(signals[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
      sigaction(signals[i], &on, NULL);
}

int bench_starpu_environment(const char *suite, char *dir, size_t size) {
  /* under the spill directory, which a user sets for the bench's files
   * (TARN_SPILL_DIR), not a fixed /tmp */
  int n = snprintf(dir, size, "%s/tarn-bench-starpu-XXXXXX", bench_spill_dir());
  if (n < 0 || (size_t)n >= size) {
    fprintf(stderr, "tarn bench: %s: the spill directory's path is too long\n",
            suite);
    return 1;
  }
  if (bench_temp_dir(dir) == NULL) {
    fprintf(stderr, "tarn bench: %s: cannot make %s: %s\n", suite, dir,
            strerror(errno));
    return 1;
  }
  /* STARPU_CATCH_SIGNALS=0: starpu_init installs its own SIGINT handler
   * and never restores the one before it; from the second start on it
   * saved its own, and a Ctrl-C was dropped (the suite ran on for minutes,
   * its temporary directories kept) */
  if (setenv("STARPU_SILENT", "1", 1) != 0 ||
      setenv("STARPU_CATCH_SIGNALS", "0", 1) != 0 ||
      setenv("STARPU_WORKERS_NOBIND", "1", 1) != 0 ||
      setenv("STARPU_HOME", dir, 1) != 0 ||
      setenv("STARPU_PERF_MODEL_DIR", dir, 1) != 0) {
    fprintf(stderr, "tarn bench: %s: setenv: %s\n", suite, strerror(errno));
    return 1;
  }
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  if (remove(path) == 0) return 0;
  fprintf(stderr, "tarn bench: cannot remove %s: %s\n", path, strerror(errno));
  return 1;
}

void bench_remove_tree(const char *dir) {
  nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  temp_dir_forget(dir);
}

int bench_find_program(const char *name, char *path, size_t size) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len < 0) {
    fprintf(stderr, "tarn bench: readlink(/proc/self/exe): %s\n",
            strerror(errno));
    return -1;
  }
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash != NULL) *slash = '\0';
  const char *dirs[] = {"bench", "../libexec/tarn"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    int n = snprintf(path, size, "%s/%s/%s", exe, dirs[i], name);
    if (n > 0 && (size_t)n < size && access(path, X_OK) == 0) return 0;
  }
  return 1;
}

int bench_spawn(const char *path, char *const argv[], pid_t *pid, FILE **out) {
  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "tarn bench: pipe: %s\n", strerror(errno));
    return 1;
  }
  posix_spawn_file_actions_t fa;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc != 0) goto fail;
  rc = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_addclose(&fa, fds[0]);
  if (rc == 0) rc = posix_spawn_file_actions_addclose(&fa, fds[1]);
  if (rc == 0) rc = posix_spawn(pid, path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) goto fail;
  close(fds[1]);
  if ((*out = fdopen(fds[0], "r")) != NULL) return 0;
  rc = errno;
  close(fds[0]); /* the child ends on a broken pipe */
  waitpid(*pid, NULL, 0);
  fprintf(stderr, "tarn bench: reading from %s: %s\n", path, strerror(rc));
  return 1;
fail:
  close(fds[0]);
  close(fds[1]);
  fprintf(stderr, "tarn bench: cannot start %s: %s\n", path, strerror(rc));
  return 1;
}

int bench_reap(pid_t pid, const char *path) {
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno == EINTR) continue;
    fprintf(stderr, "tarn bench: waitpid: %s\n", strerror(errno));
    return 1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status))
    fprintf(stderr, "tarn bench: %s failed with exit status %d\n", path,
            WEXITSTATUS(status));
  else
    fprintf(stderr, "tarn bench: %s died of signal %d\n", path,
            WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return 1;
}

uint64_t bench_warmup_until(void) {
  return bench_now_ns() + (uint64_t)(BENCH_WARMUP_S * 1e9);
}

int bench_sample_more(const bench_run *run, size_t taken, uint64_t since_ns) {
  if (taken < run->samples) return 1;
  return taken < BENCH_SAMPLES_MAX &&
         (double)(bench_now_ns() - since_ns) * 1e-9 < run->row_min_s;
}

int bench_round_more(const bench_run *run, size_t taken, double wall_s,
                     int round, int rounds) {
  size_t want = (run->samples * (size_t)(round + 1) + (size_t)rounds - 1) /
                (size_t)rounds;
  double want_s = run->row_min_s * (round + 1) / rounds;
  return taken < BENCH_SAMPLES_MAX && (taken < want || wall_s < want_s);
}

void bench_quiesce(double seconds) {
  struct timespec ts = {(time_t)seconds,
                        (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) continue;
}
