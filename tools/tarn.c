/* tarn.c: the `tarn` command. Subcommands: `version` (the library's
 * version), `help` (usage), `demo` (tools/demo.c: a linear system larger
 * than the memory limit), `bench [SUITE] [options]`, which runs one
 * benchmark suite, or every suite, through the harness of bench/bench.h, and
 * `bench compare BASE NEW`, which compares two JSON files of results. Exit
 * status 0 on success, 1 when a benchmark or the JSON file failed (compare:
 * a regression with --fail-on-regression) or standard output could not be
 * written, 2 for a command line it does not understand. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "blas_core.h"
#include "demo.h"
#include "tarn.h"

static const char usage_text[] =
    "usage: tarn <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  version           print the version of the tarn library, and the\n"
    "                    OpenBLAS and kernels the command runs\n"
    "  help              print this help (also --help, -h)\n"
    "  demo [options]    solve a linear system several times larger than\n"
    "                    tarn's memory limit, showing the spills as they\n"
    "                    happen (run 'tarn demo --help' for the options)\n"
    "  bench [SUITE] [options]\n"
    "                    run the benchmark suite SUITE, or every suite in\n"
    "                    this order: alloc, pool, rt, array, stencil, "
    "linalg,\n"
    "                    ooc (larger than memory), eager (eager freeing),\n"
    "                    files (.npy save and load), time_to_load; a table\n"
    "                    is printed as results come\n"
    "    --samples N     samples per benchmark, at least 3 (default 5;\n"
    "                    without it, array, stencil and linalg rows sample\n"
    "                    for 0.1 s at least)\n"
    "    --sizes LIST    matrix sizes N, comma-separated (default: array and\n"
    "                    stencil 256,1024,4096; linalg 256,1024; files\n"
    "                    1024,4096; ooc and eager their own small sizes)\n"
    "    --filter REGEX  measure only the benchmarks whose name matches the\n"
    "                    POSIX extended regular expression REGEX\n"
    "    --workers N     tarn's workers and the peers' threads (default:\n"
    "                    one per processor, at most the CPU quota)\n"
    "    --mem-limit SIZE  memory limit of tarn's pool, bytes or with K, M,\n"
    "                    G suffix, or N% of the memory the process may use\n"
    "                    (default none; ooc sets its own: 2/3 of the data)\n"
    "    --json FILE     also write every result to FILE as JSON\n"
    "    A progress bar is drawn on standard error when it is a terminal.\n"
    "  bench compare BASE.json NEW.json [--threshold PERCENT]\n"
    "                [--fail-on-regression] [--svg FILE]\n"
    "                    compare two result files (run 'tarn bench compare\n"
    "                    --help' for details)\n";

/* Limits of --sizes. */
#define MAX_SIZE 32768

struct suite {
  const char *name;
  int (*run)(bench_run *run);
};

static const struct suite suites[] = {
    {"alloc", bench_alloc},     {"pool", bench_pool},
    {"rt", bench_rt},           {"array", bench_array},
    {"stencil", bench_stencil}, {"linalg", bench_linalg},
    {"ooc", bench_ooc},         {"eager", bench_eager},
    {"files", bench_files},     {"time_to_load", bench_load}};
enum { suite_count = sizeof suites / sizeof suites[0] };

/* Prints "tarn: MESSAGE" and a hint to stderr; returns exit status 2. */
static int usage_error(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fputs("tarn: ", stderr);
  vfprintf(stderr, format, ap);
  va_end(ap);
  fputs("\nRun 'tarn help' for usage.\n", stderr);
  return 2;
}

static bool is_help(const char *arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Prints the usage to stdout; main's check_output says whether it was
 * written. */
static int print_usage(void) {
  fputs(usage_text, stdout);
  return 0;
}

static const struct suite *find_suite(const char *name) {
  for (size_t i = 0; i < suite_count; i++)
    if (strcmp(suites[i].name, name) == 0) return &suites[i];
  return NULL;
}

/* The parsed arguments of `tarn bench`. */
struct bench_args {
  const struct suite *suite; /* NULL: every suite */
  size_t samples;
  int samples_given; /* --samples was on the command line */
  const char *json;
  size_t
      sizes[BENCH_SIZES_MAX]; /* array and stencil sizes; nsizes 0: default */
  size_t nsizes;
  const char *filter;
  unsigned workers;
  size_t mem_limit;
  int help;
};

static int parse_samples(const char *text, size_t *samples) {
  long long v;
  if (!tarn_args_count(text, BENCH_SAMPLES_MIN, BENCH_SAMPLES_MAX, &v))
    return usage_error("--samples must be an integer from %d to %d, not '%s'",
                       BENCH_SAMPLES_MIN, BENCH_SAMPLES_MAX, text);
  *samples = (size_t)v;
  return 0;
}

/* Whether `v` is among the first n of sizes. */
static bool has_size(const size_t *sizes, size_t n, long long v) {
  for (size_t i = 0; i < n; i++)
    if (sizes[i] == (size_t)v) return true;
  return false;
}

/* Parses "256,1024,4096" into a->sizes. Returns 0 or exit status 2. A size
 * given twice is refused: its rows would be measured twice under one
 * name, and the JSON file would hold two results of that name. */
static int parse_sizes(const char *text, struct bench_args *a) {
  const char *p = text;
  a->nsizes = 0;
  for (;;) {
    char *end = NULL;
    errno = 0;
    /* each size starts with a digit, as args.h reads numbers: strtoll
     * would take a sign or spaces before it */
    long long v = isdigit((unsigned char)*p) ? strtoll(p, &end, 10) : 0;
    if (errno != 0 || end == p || v < 1 || v > MAX_SIZE ||
        (*end != ',' && *end != '\0') || a->nsizes == BENCH_SIZES_MAX)
      return usage_error(
          "--sizes must be up to %d comma-separated integers from 1 to %d, "
          "not '%s'",
          BENCH_SIZES_MAX, MAX_SIZE, text);
    if (has_size(a->sizes, a->nsizes, v))
      return usage_error("--sizes gives %lld twice, in '%s'", v, text);
    a->sizes[a->nsizes++] = (size_t)v;
    if (*end == '\0') return 0;
    p = end + 1;
  }
}

/* Parses --workers: 1 to 1024. */
static int parse_workers(const char *text, unsigned *workers) {
  long long v;
  if (!tarn_args_count(text, 1, 1024, &v))
    return usage_error("--workers must be an integer from 1 to 1024, not '%s'",
                       text);
  *workers = (unsigned)v;
  return 0;
}

/* Parses --mem-limit as TARN_MEM_LIMIT (tarn_pool_limit_parse: bytes, a
 * number with K, M, G or T, or a share of the memory such as 50%), at
 * least 1 MiB. */
static int parse_mem_limit(const char *text, size_t *bytes) {
  if (tarn_pool_limit_parse(text, bytes) != 0 || *bytes < ((size_t)1 << 20))
    return usage_error(
        "--mem-limit must be a size of at least 1M, such as 512M, 2G or 50%% "
        "(of the memory), not '%s'",
        text);
  return 0;
}

/* Parses argv[0..argc) after "bench". Returns 0 or exit status 2. */
static int parse_bench(int argc, char **argv, struct bench_args *a) {
  memset(a, 0, sizeof *a);
  a->samples = BENCH_SAMPLES_DEFAULT;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (is_help(arg)) {
      a->help = 1;
    } else if (strcmp(arg, "--samples") == 0 || strcmp(arg, "--json") == 0 ||
               strcmp(arg, "--sizes") == 0 || strcmp(arg, "--filter") == 0 ||
               strcmp(arg, "--workers") == 0 ||
               strcmp(arg, "--mem-limit") == 0) {
      if (i + 1 == argc) return usage_error("%s needs a value", arg);
      const char *value = argv[++i];
      int bad = 0;
      if (strcmp(arg, "--json") == 0)
        a->json = value;
      else if (strcmp(arg, "--filter") == 0)
        a->filter = value;
      else if (strcmp(arg, "--sizes") == 0)
        bad = parse_sizes(value, a);
      else if (strcmp(arg, "--workers") == 0)
        bad = parse_workers(value, &a->workers);
      else if (strcmp(arg, "--mem-limit") == 0)
        bad = parse_mem_limit(value, &a->mem_limit);
      else {
        bad = parse_samples(value, &a->samples);
        a->samples_given = 1;
      }
      if (bad) return 2;
    } else if (arg[0] == '-') {
      return usage_error("unknown option '%s' for bench", arg);
    } else if (a->suite != NULL) {
      return usage_error("one suite at a time: '%s' after '%s'", arg,
                         a->suite->name);
    } else if ((a->suite = find_suite(arg)) == NULL) {
      return usage_error(
          "unknown benchmark suite '%s' (suites: alloc, pool, rt, array, "
          "stencil, linalg, ooc, eager, files, time_to_load)",
          arg);
    }
  }
  return 0;
}

/* Opens the JSON file before the run, so a bad path fails at once. */
static int open_json(const char *path, FILE **out) {
  *out = NULL;
  if (path == NULL) return 0;
  *out = fopen(path, "w");
  if (*out != NULL) return 0;
  fprintf(stderr, "tarn bench: cannot open %s: %s\n", path, strerror(errno));
  return 1;
}

static int finish_json(const bench_run *run, FILE *out, const char *path) {
  if (out == NULL) return 0;
  int failed = bench_write_json(run, out, path) != 0;
  if (fclose(out) != 0 && !failed) {
    fprintf(stderr, "tarn bench: cannot write %s: %s\n", path, strerror(errno));
    failed = 1;
  }
  return failed;
}

static int cmd_bench(int argc, char **argv) {
  if (argc > 0 && strcmp(argv[0], "compare") == 0)
    return bench_compare(argc - 1, argv + 1);
  /* the temporary directories go with an interrupt (the child's too) */
  bench_catch_interrupts();
  if (argc > 0 && strcmp(argv[0], BENCH_OOC_CHILD) == 0)
    return bench_ooc_child(argc - 1, argv + 1);
  struct bench_args a;
  if (parse_bench(argc, argv, &a) != 0) return 2;
  if (a.help) return print_usage();
  if (!tarn_args_environment("bench")) return 2;
  bench_run run;
  bench_run_init(&run, a.samples);
  if (!a.samples_given) run.row_min_s = BENCH_ROW_MIN_S;
  if (a.filter != NULL && bench_set_filter(&run, a.filter) != 0) {
    bench_run_free(&run);
    return 2;
  }
  FILE *json;
  if (open_json(a.json, &json) != 0) {
    bench_run_free(&run);
    return 1;
  }
  if (a.nsizes > 0) {
    run.sizes = a.sizes;
    run.nsizes = a.nsizes;
  }
  run.workers = a.workers;
  run.mem_limit = a.mem_limit;
  run.progress = isatty(STDERR_FILENO);
  run.suite_count = a.suite == NULL ? suite_count : 1;
  int failed = 0;
  for (size_t i = 0; i < suite_count; i++)
    if (a.suite == NULL || a.suite == &suites[i]) {
      run.suite = suites[i].name;
      /* OpenBLAS's threads spin after the library starts and after each
       * multithreaded call (bench.h); a suite that shares the cores with
       * them measured time_to_load at 6.5-8.9 ms instead of 3.8-3.9. */
      bench_quiesce(BENCH_QUIESCE_BLAS_S);
      double round_trip_ns = bench_core_round_trip_ns();
      bench_cpu_times before;
      bench_cpu_times_read(&before);
      failed |= suites[i].run(&run) != 0;
      bench_steal_end(&run, suites[i].name, &before);
      bench_cores_end(&run, suites[i].name, round_trip_ns);
      run.suite_index++;
    }
  /* a filter that matched no row measured nothing: say so, rather than a
   * table with no row (the status is left as it is: a script may run
   * every suite with a filter some of them do not match); a row that
   * matched and failed has said why */
  if (a.filter != NULL && run.count == 0 && run.matched == 0 && !failed)
    fprintf(stderr, "tarn bench: no benchmark matched --filter '%s'\n",
            a.filter);
  failed |= finish_json(&run, json, a.json);
  bench_run_free(&run);
  return failed;
}

/* `tarn version [--help]`: argv holds the arguments after "version". */
static int cmd_version(int argc, char **argv) {
  if (argc == 1 && is_help(argv[0])) {
    fputs(
        "usage: tarn version\n"
        "  prints the version of the tarn library, and the OpenBLAS and\n"
        "  kernels the command runs\n",
        stdout);
    return 0;
  }
  if (argc > 0) return usage_error("version takes no arguments");
  char blas[160];
  printf("%s\nblas: %s\n", tarn_version(),
         blas_core_describe(blas, sizeof blas));
  return 0;
}

/* Opens /dev/null onto each of descriptors 0, 1 and 2 that is closed. A
 * command started with `>&-` would otherwise give descriptor 1 to the
 * first file it opens (the pool's spill file, the --json file), and
 * printf would write into that file. Returns false when one cannot be
 * opened. */
static bool open_standard_descriptors(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    /* the lowest free descriptor: fd, as those below it are open */
    int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened != fd) {
      if (opened >= 0) close(opened);
      return false;
    }
  }
  return true;
}

/* Checks that everything the command printed reached stdout (a full disk
 * loses it, and a script must not read exit status 0 then): when it did
 * not, says so on stderr and returns 1 in place of a `status` of 0. Else
 * returns `status`. */
static int check_output(int status) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return status;
  /* the bench flushed each line itself: its own failure says why */
  int why = errno != 0 ? errno : bench_output_errno();
  if (why == 0) why = EIO;
  fprintf(stderr, "tarn: write error: %s\n", strerror(why));
  return status != 0 ? status : 1;
}

static int run_command(int argc, char **argv) {
  if (argc < 2) return usage_error("no command given");
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0 || is_help(cmd)) return print_usage();
  if (strcmp(cmd, "version") == 0) return cmd_version(argc - 2, argv + 2);
  if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 2, argv + 2);
  if (strcmp(cmd, "demo") == 0) return tarn_demo(argc - 2, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}

int main(int argc, char **argv) {
  if (!open_standard_descriptors()) return 1;
  return check_output(run_command(argc, argv));
}
