/* compare.c: `tarn bench compare BASE.json NEW.json`. Reads two result files
 * of `tarn bench --json` (BENCH.md's format) with jansson, prints a table of
 * every benchmark's median time in each file with its spread [min..max] and
 * the ratio base / new, then the regressions, improvements and changes
 * within noise beyond a threshold, and draws the ratios as an SVG picture by
 * running gnuplot (where it is installed) on a generated script.
 *
 * The rule: with t = PERCENT / 100, a benchmark is a regression when
 * new / base > 1 + t and an improvement when base / new > 1 + t, provided
 * the two spreads [min_s, max_s] do not overlap. A change beyond the
 * threshold whose spreads overlap is "within noise" and counts as neither.
 * A file without min_s / max_s has no spread: its median alone. A result
 * whose extra counts the operations of a sample ("ops", "tasks" or
 * "regions") in both files is compared per operation, since a calibrated
 * benchmark chooses that count anew in every run. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"

extern char **environ;

#define PROG "tarn bench compare"
#define DEFAULT_THRESHOLD 25.0
#define MAX_THRESHOLD 1000.0
#define CELL_MAX 96

static const char help_text[] =
    "usage: tarn bench compare BASE.json NEW.json [options]\n"
    "\n"
    "Compares two result files of 'tarn bench --json FILE'. Prints a table\n"
    "of every benchmark's median time in BASE and in NEW with its spread\n"
    "[min..max], and the ratio base / new (above 1: NEW is faster) with its\n"
    "spread [base min / new max .. base max / new min]; then the\n"
    "regressions and improvements beyond the threshold.\n"
    "\n"
    "With t = PERCENT / 100, a benchmark is a regression when new / base is\n"
    "above 1 + t, and an improvement when base / new is above 1 + t, when\n"
    "the two spreads do not overlap. A change beyond the threshold whose\n"
    "spreads overlap is listed as within noise and counts as neither.\n"
    "A benchmark in one file only is shown as 'only in base' or 'only in\n"
    "new'. Times are median_s, min_s and max_s; divided by the extra \"ops\"\n"
    "(or \"tasks\", \"regions\"), the operations of one sample, where both\n"
    "files have it, since a calibrated benchmark chooses that count anew\n"
    "in every run.\n"
    "Files from different machines, page settings or tarn settings\n"
    "(workers, mem_limit, max_unfinished, ...) are compared, with a note.\n"
    "Where both files hold the goals their runs printed, the goals met in\n"
    "each are counted, and those met in one and missed in the other listed.\n"
    "\n"
    "options:\n"
    "  --threshold PERCENT   the threshold, 0 to 1000 (default 25)\n"
    "  --fail-on-regression  exit with status 1 when there is a regression\n"
    "  --svg FILE            draw the ratios into FILE with gnuplot (default:\n"
    "                        NEW's name with .json replaced by -compare.svg);\n"
    "                        without gnuplot, a note and no picture\n"
    "  -h, --help            print this help\n"
    "\n"
    "Exit status: 0; 1 for a regression with --fail-on-regression, or for a\n"
    "file that cannot be read or is not a result file; 2 for a command line\n"
    "it does not understand. A picture that cannot be drawn is reported but\n"
    "does not change the exit status.\n";

/* The extras that count the operations of one sample, and the unit of a
 * time divided by them. A calibrated benchmark chooses that count anew in
 * every run, so its times compare only per operation. */
static const struct {
  const char *key, *unit;
} counts[] = {{"ops", "op"}, {"tasks", "task"}, {"regions", "region"}};
enum { count_keys = sizeof counts / sizeof counts[0] };

/* One benchmark of a result file; `name` points into the file's JSON. */
typedef struct entry {
  const char *name;
  double median, min, max; /* seconds; min = max = median without spread */
  int spread;              /* the file gave min_s or max_s */
  int count_key;           /* index in counts[], or -1: no count */
  double count;            /* the operations of a sample, > 0 */
  const char *per;         /* times are per this unit ("op"), or NULL */
} entry;

/* The runtime settings a result file's machine may record (bench.c,
 * settings_json), by the names of their option fields. */
static const char *const setting_keys[] = {
    "workers", "pin_workers", "mem_limit", "max_unfinished", "idle_trim_ms"};
enum { SETTINGS = sizeof setting_keys / sizeof *setting_keys };

/* A result file, read and checked. */
typedef struct result_file {
  const char *path;
  json_t *doc;
  json_t *index; /* name -> position in entries (the first of a name) */
  entry *entries;
  size_t count;
  const char *cpu, *date;        /* NULL: unknown */
  json_int_t cores;              /* 0: unknown */
  const char *thp;               /* the kernel's THP setting; NULL: unknown */
  int huge_pages;                /* tarn's huge_pages: 0, 1, or -1: unknown */
  const char *blas_core;         /* OpenBLAS's kernels; NULL: unknown */
  json_int_t settings[SETTINGS]; /* of setting_keys; -1: unknown */
  json_t *steal; /* machine.steal: suite -> share taken (bench.c); or NULL */
  json_t *goals; /* the "goals" array (bench.c's goal_json); or NULL */
} result_file;

enum verdict {
  UNCHANGED,
  REGRESSION,
  IMPROVEMENT,
  NOISE_SLOWER,
  NOISE_FASTER,
  ONLY_BASE,
  ONLY_NEW,
  NO_RATIO,
  VERDICTS
};

static const char *const verdict_text[VERDICTS] = {"",
                                                   "REGRESSION",
                                                   "improvement",
                                                   "slower, within noise",
                                                   "faster, within noise",
                                                   "only in base",
                                                   "only in new",
                                                   "no ratio (a zero time)"};

/* One line of the table: a benchmark in base, in new or in both. base and
 * new (NULL: absent) point to the row's own copies b and n, whose times
 * are per operation where both count operations the same way. */
typedef struct row {
  entry b, n;
  const entry *base, *new;
  enum verdict verdict;
  double ratio, lo, hi; /* base / new and its spread, when both are > 0 */
} row;

/* The command line. */
typedef struct options {
  const char *base, *new, *svg; /* svg NULL: the default name */
  double threshold;             /* percent */
  int fail_on_regression, help;
} options;

/* The formatted cells of one table line. */
typedef struct cells {
  const char *name;
  char base[CELL_MAX], new[CELL_MAX], ratio[CELL_MAX];
  const char *verdict;
} cells;

/* Prints "tarn bench compare: MESSAGE" and a hint; returns exit status 2. */
static int usage_error(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
static int usage_error(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fputs(PROG ": ", stderr);
  vfprintf(stderr, format, ap);
  va_end(ap);
  fputs("\nRun 'tarn bench compare --help' for usage.\n", stderr);
  return 2;
}

/* Prints "tarn bench compare: PATH: MESSAGE"; returns exit status 1. */
static int file_error(const char *path, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static int file_error(const char *path, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  fprintf(stderr, PROG ": %s: ", path);
  vfprintf(stderr, format, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

static int out_of_memory(void) {
  fputs(PROG ": out of memory\n", stderr);
  return 1;
}

static int print_help(void) {
  fputs(help_text, stdout);
  return fflush(stdout) == 0 ? 0 : 1;
}

/* Parses --threshold's PERCENT ("25" or "25%"). Returns 0 or status 2. */
static int parse_threshold(const char *text, double *percent) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (end != text && *end == '%') end++;
  if (errno != 0 || end == text || *end != '\0' ||
      !(v >= 0 && v <= MAX_THRESHOLD))
    return usage_error(
        "--threshold must be a percentage from 0 to %g, not '%s'",
        MAX_THRESHOLD, text);
  *percent = v;
  return 0;
}

/* Whether argv[*i] is the option `name` with a value, as "NAME=VALUE" or
 * "NAME VALUE" (then *i moves to the value). *value is NULL when the value
 * is missing. */
static int value_option(const char *name, int argc, char **argv, int *i,
                        const char **value) {
  size_t n = strlen(name);
  const char *arg = argv[*i];
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0') return 0;
  *value = *i + 1 < argc ? argv[++*i] : NULL;
  return 1;
}

/* Parses one option argv[*i]. Returns 0 or exit status 2. */
static int parse_option(int argc, char **argv, int *i, options *o) {
  const char *arg = argv[*i], *value = NULL;
  if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
    o->help = 1;
    return 0;
  }
  if (strcmp(arg, "--fail-on-regression") == 0) {
    o->fail_on_regression = 1;
    return 0;
  }
  if (value_option("--threshold", argc, argv, i, &value)) {
    if (value == NULL) return usage_error("--threshold needs a PERCENT");
    return parse_threshold(value, &o->threshold);
  }
  if (value_option("--svg", argc, argv, i, &value)) {
    if (value == NULL || *value == '\0')
      return usage_error("--svg needs a FILE");
    o->svg = value;
    return 0;
  }
  return usage_error("unknown option '%s'", arg);
}

/* Parses the arguments after "compare". Returns 0 or exit status 2. */
static int parse_args(int argc, char **argv, options *o) {
  *o = (options){.threshold = DEFAULT_THRESHOLD};
  int files = 0, options_end = 0;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (!options_end && strcmp(arg, "--") == 0) {
      options_end = 1;
    } else if (!options_end && arg[0] == '-' && arg[1] != '\0') {
      int rc = parse_option(argc, argv, &i, o);
      if (rc != 0 || o->help) return rc;
    } else if (files == 0) {
      o->base = arg;
      files++;
    } else if (files == 1) {
      o->new = arg;
      files++;
    } else {
      return usage_error("one BASE and one NEW file, not also '%s'", arg);
    }
  }
  if (files < 2)
    return usage_error("needs two result files: BASE.json NEW.json");
  return 0;
}

/* Prints "tarn bench compare: PATH: results[I] ("NAME"): WHAT"; returns
 * exit status 1. */
static int result_error(const result_file *f, size_t i, const char *name,
                        const char *what) {
  return file_error(f->path, "results[%zu] (\"%s\"): %s", i, name, what);
}

/* Reads the number `key` of results[i], a non-negative number. Returns 1,
 * 0 when it is absent, or -1 after printing why. */
static int member_number(const result_file *f, size_t i, json_t *r,
                         const char *key, const char *name, double *value) {
  json_t *v = json_object_get(r, key);
  if (v == NULL) return 0;
  if (!json_is_number(v) || json_number_value(v) < 0) {
    file_error(f->path, "results[%zu] (\"%s\"): \"%s\" is not a number >= 0", i,
               name, key);
    return -1;
  }
  *value = json_number_value(v);
  return 1;
}

/* Sets e's count of operations from its extras: the first of counts[]
 * that is a number above zero. */
static void read_count(entry *e, json_t *extra) {
  e->count_key = -1;
  for (int k = 0; k < count_keys && e->count_key < 0; k++) {
    json_t *v = json_object_get(extra, counts[k].key);
    if (json_is_number(v) && json_number_value(v) > 0) {
      e->count_key = k;
      e->count = json_number_value(v);
    }
  }
}

/* Checks results[i] and adds it to f's entries, unless its name came
 * before. Returns 0 or 1 after printing why. */
static int read_result(result_file *f, size_t i, json_t *r) {
  if (!json_is_object(r))
    return file_error(f->path, "results[%zu] is not an object", i);
  json_t *name = json_object_get(r, "name");
  if (!json_is_string(name))
    return file_error(f->path, "results[%zu] has no \"name\" string", i);
  entry e = {.name = json_string_value(name)};
  int median = member_number(f, i, r, "median_s", e.name, &e.median);
  if (median == 0) return result_error(f, i, e.name, "no \"median_s\"");
  int min = member_number(f, i, r, "min_s", e.name, &e.min);
  int max = member_number(f, i, r, "max_s", e.name, &e.max);
  if (median < 0 || min < 0 || max < 0) return 1;
  json_t *samples = json_object_get(r, "samples");
  json_t *extra = json_object_get(r, "extra");
  if (samples != NULL && !json_is_integer(samples))
    return result_error(f, i, e.name, "\"samples\" is not an integer");
  if (extra != NULL && !json_is_object(extra))
    return result_error(f, i, e.name, "\"extra\" is not an object");
  read_count(&e, extra);
  e.spread = min || max;
  if (!min || e.min > e.median) e.min = e.median;
  if (!max || e.max < e.median) e.max = e.median;
  if (json_object_get(f->index, e.name) != NULL) {
    fprintf(stderr,
            "%s: warning: %s: \"%s\" appears again (results[%zu]); "
            "the first one is used\n",
            PROG, f->path, e.name, i);
    return 0;
  }
  if (json_object_set_new(f->index, e.name,
                          json_integer((json_int_t)f->count)) != 0)
    return out_of_memory();
  f->entries[f->count++] = e;
  return 0;
}

/* Parses f->path into f->doc. Returns 0 or 1 after printing why. */
static int load_json(result_file *f) {
  FILE *in = fopen(f->path, "r");
  if (in == NULL)
    return file_error(f->path, "cannot open: %s", strerror(errno));
  json_error_t error;
  errno = 0;
  f->doc = json_loadf(in, 0, &error);
  int read_errno = ferror(in) ? (errno != 0 ? errno : EIO) : 0;
  fclose(in);
  if (f->doc != NULL) return 0;
  if (read_errno != 0)
    return file_error(f->path, "cannot read: %s", strerror(read_errno));
  if (error.line < 1) return file_error(f->path, "cannot read: %s", error.text);
  return file_error(f->path, "not valid JSON: line %d, column %d: %s",
                    error.line, error.column, error.text);
}

/* Reads and checks the result file f->path. Returns 0 or 1 after printing
 * why. */
static int read_file(result_file *f) {
  if (load_json(f) != 0) return 1;
  if (!json_is_object(f->doc))
    return file_error(f->path, "not a result file: not a JSON object");
  json_t *results = json_object_get(f->doc, "results");
  if (!json_is_array(results))
    return file_error(f->path, "not a result file: no \"results\" array");
  size_t n = json_array_size(results);
  f->entries = calloc(n > 0 ? n : 1, sizeof *f->entries);
  f->index = json_object();
  if (f->entries == NULL || f->index == NULL) return out_of_memory();
  for (size_t i = 0; i < n; i++)
    if (read_result(f, i, json_array_get(results, i)) != 0) return 1;
  json_t *machine = json_object_get(f->doc, "machine");
  f->cpu = json_string_value(json_object_get(machine, "cpu"));
  f->date = json_string_value(json_object_get(machine, "date"));
  json_t *cores = json_object_get(machine, "cores");
  f->cores = json_is_integer(cores) ? json_integer_value(cores) : 0;
  f->thp = json_string_value(json_object_get(machine, "thp"));
  json_t *huge = json_object_get(machine, "huge_pages");
  f->huge_pages = json_is_integer(huge) ? (json_integer_value(huge) != 0) : -1;
  f->blas_core = json_string_value(json_object_get(machine, "blas_core"));
  f->steal = json_object_get(machine, "steal");
  if (!json_is_object(f->steal)) f->steal = NULL;
  f->goals = json_object_get(f->doc, "goals");
  if (!json_is_array(f->goals)) f->goals = NULL;
  for (size_t k = 0; k < SETTINGS; k++) {
    json_t *v = json_object_get(machine, setting_keys[k]);
    f->settings[k] = json_is_integer(v) && json_integer_value(v) >= 0
                         ? json_integer_value(v)
                         : -1;
  }
  return 0;
}

static void free_file(result_file *f) {
  json_decref(f->doc);
  json_decref(f->index);
  free(f->entries);
}

/* The entry of f named `name`, or NULL. */
static const entry *find_entry(const result_file *f, const char *name) {
  json_t *at = json_object_get(f->index, name);
  return at == NULL ? NULL : &f->entries[json_integer_value(at)];
}

/* Sets r's ratio, its spread and its verdict. */
static void classify(row *r, double threshold) {
  const entry *b = r->base, *n = r->new;
  if (n == NULL || b == NULL) {
    r->verdict = n == NULL ? ONLY_BASE : ONLY_NEW;
    return;
  }
  if (!(b->median > 0 && n->median > 0)) {
    r->verdict = NO_RATIO;
    return;
  }
  r->ratio = b->median / n->median;
  r->lo = b->min / n->max;
  r->hi = n->min > 0 ? b->max / n->min : r->ratio;
  double limit = 1 + threshold / 100;
  int overlap = b->min <= n->max && n->min <= b->max;
  if (n->median / b->median > limit)
    r->verdict = overlap ? NOISE_SLOWER : REGRESSION;
  else if (r->ratio > limit)
    r->verdict = overlap ? NOISE_FASTER : IMPROVEMENT;
  else
    r->verdict = UNCHANGED;
}

/* Divides e's times by its count of operations. */
static void per_operation(entry *e) {
  e->median /= e->count;
  e->min /= e->count;
  e->max /= e->count;
  e->per = counts[e->count_key].unit;
}

/* Fills r with copies of the entries b and n (either may be NULL): times
 * per operation where both count operations with the same key, or where
 * the one present counts them. */
static void fill_row(row *r, const entry *b, const entry *n) {
  if (b != NULL) {
    r->b = *b;
    r->base = &r->b;
  }
  if (n != NULL) {
    r->n = *n;
    r->new = &r->n;
  }
  int bk = b != NULL ? b->count_key : -1, nk = n != NULL ? n->count_key : -1;
  if (b != NULL && n != NULL && bk != nk) return;
  if (bk >= 0) per_operation(&r->b);
  if (nk >= 0) per_operation(&r->n);
}

/* The rows: base's benchmarks in its order, then those only in new.
 * Returns NULL when out of memory. */
static row *match_rows(const result_file *base, const result_file *new,
                       double threshold, size_t *count) {
  row *rows = calloc(base->count + new->count + 1, sizeof *rows);
  if (rows == NULL) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < base->count; i++, n++)
    fill_row(&rows[n], &base->entries[i],
             find_entry(new, base->entries[i].name));
  for (size_t i = 0; i < new->count; i++)
    if (find_entry(base, new->entries[i].name) == NULL)
      fill_row(&rows[n++], NULL, &new->entries[i]);
  for (size_t i = 0; i < n; i++) classify(&rows[i], threshold);
  *count = n;
  return rows;
}

/* Formats v with about 3 significant digits and no exponent for the
 * values of a table: 123, 12.3, 1.23, 0.123. */
static void format_number(char *buf, size_t size, double v) {
  if (v >= 99.95)
    snprintf(buf, size, "%.0f", v);
  else if (v >= 9.995)
    snprintf(buf, size, "%.1f", v);
  else if (v >= 0.9995)
    snprintf(buf, size, "%.2f", v);
  else
    snprintf(buf, size, "%#.3g", v);
}

/* The unit that shows the time s with 1 to 3 digits before the point. */
static const char *time_unit(double s, double *scale) {
  static const struct {
    const char *name;
    double scale;
  } units[] = {{"s", 1}, {"ms", 1e3}, {"us", 1e6}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (s >= 0.9995 / units[i].scale) {
      *scale = units[i].scale;
      return units[i].name;
    }
  *scale = 1e9;
  return "ns";
}

/* "4.21 ms", or "4.21 ms [4.12..4.30]" for an entry with a spread; the
 * unit is "ns/op" for a time per operation. */
static void format_time(char *buf, size_t size, const entry *e) {
  if (e == NULL) {
    snprintf(buf, size, "-");
    return;
  }
  double scale;
  const char *unit = time_unit(e->median, &scale);
  char med[24], lo[24], hi[24];
  format_number(med, sizeof med, e->median * scale);
  const char *slash = e->per != NULL ? "/" : "", *per = e->per ? e->per : "";
  if (!e->spread) {
    snprintf(buf, size, "%s %s%s%s", med, unit, slash, per);
    return;
  }
  format_number(lo, sizeof lo, e->min * scale);
  format_number(hi, sizeof hi, e->max * scale);
  snprintf(buf, size, "%s %s%s%s [%s..%s]", med, unit, slash, per, lo, hi);
}

/* Whether r has a ratio (both files hold it, with times above zero). */
static int has_ratio(const row *r) {
  return r->verdict != ONLY_BASE && r->verdict != ONLY_NEW &&
         r->verdict != NO_RATIO;
}

/* "0.979", or "0.979 [0.950..1.01]" when either side has a spread. */
static void format_ratio(char *buf, size_t size, const row *r) {
  if (!has_ratio(r)) {
    snprintf(buf, size, "-");
    return;
  }
  char ratio[24], lo[24], hi[24];
  format_number(ratio, sizeof ratio, r->ratio);
  if (!r->base->spread && !r->new->spread) {
    snprintf(buf, size, "%s", ratio);
    return;
  }
  format_number(lo, sizeof lo, r->lo);
  format_number(hi, sizeof hi, r->hi);
  snprintf(buf, size, "%s [%s..%s]", ratio, lo, hi);
}

/* The columns a UTF-8 string takes on a terminal (one per character). */
static size_t text_width(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* Prints s, then spaces up to `width` columns. */
static void print_padded(const char *s, size_t width) {
  fputs(s, stdout);
  for (size_t w = text_width(s); w < width; w++) putchar(' ');
}

/* Prints the cells of one line, two spaces apart, without trailing
 * blanks. */
static void print_line(const char *const *text, const size_t *width,
                       size_t columns) {
  size_t last = columns;
  while (last > 0 && text[last - 1][0] == '\0') last--;
  for (size_t c = 0; c < last; c++) {
    if (c + 1 < last)
      print_padded(text[c], width[c] + 2);
    else
      fputs(text[c], stdout);
  }
  putchar('\n');
}

/* Prints the table: name, base, new, base / new and the verdict. Returns
 * 0, or 1 when out of memory. */
static int print_table(const row *rows, size_t n) {
  enum { columns = 5 };
  cells *c = calloc(n > 0 ? n : 1, sizeof *c);
  if (c == NULL) return out_of_memory();
  const char *head[columns] = {"name", "base", "new", "base / new", ""};
  size_t width[columns];
  for (size_t k = 0; k < columns; k++) width[k] = text_width(head[k]);
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    c[i].name = r->base != NULL ? r->base->name : r->new->name;
    format_time(c[i].base, sizeof c[i].base, r->base);
    format_time(c[i].new, sizeof c[i].new, r->new);
    format_ratio(c[i].ratio, sizeof c[i].ratio, r);
    c[i].verdict = verdict_text[r->verdict];
    const char *text[columns] = {c[i].name, c[i].base, c[i].new, c[i].ratio,
                                 c[i].verdict};
    for (size_t k = 0; k < columns; k++)
      if (text_width(text[k]) > width[k]) width[k] = text_width(text[k]);
  }
  print_line(head, width, columns);
  for (size_t i = 0; i < n; i++) {
    const char *text[columns] = {c[i].name, c[i].base, c[i].new, c[i].ratio,
                                 c[i].verdict};
    print_line(text, width, columns);
  }
  free(c);
  return 0;
}

/* Prints "LABEL PATH (cpu, N cores, date)", then ", huge pages on|off",
 * ", THP setting" and ", BLAS kernels" when the file says. */
static void print_machine(const char *label, const result_file *f) {
  printf("%s %s (%s, ", label, f->path, f->cpu ? f->cpu : "unknown cpu");
  if (f->cores > 0)
    printf("%lld cores, ", (long long)f->cores);
  else
    fputs("unknown cores, ", stdout);
  printf("%s", f->date ? f->date : "unknown date");
  if (f->huge_pages >= 0)
    printf(", huge pages %s", f->huge_pages ? "on" : "off");
  if (f->thp != NULL) printf(", THP %s", f->thp);
  if (f->blas_core != NULL) printf(", BLAS %s", f->blas_core);
  puts(")");
}

/* Whether two optional strings differ (one known, the other not, counts). */
static int differ(const char *a, const char *b) {
  return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

/* A note naming the runtime settings both files record with different
 * values ("workers 2 -> 1"), when there are any. */
static void print_settings_note(const result_file *base,
                                const result_file *new) {
  char changed[512];
  int used = 0;
  for (size_t k = 0; k < SETTINGS; k++) {
    json_int_t b = base->settings[k], n = new->settings[k];
    if (b < 0 || n < 0 || b == n || used >= (int)sizeof changed) continue;
    int wrote = snprintf(changed + used, sizeof changed - (size_t)used,
                         "%s%s %lld -> %lld", used > 0 ? ", " : "",
                         setting_keys[k], (long long)b, (long long)n);
    if (wrote > 0) used += wrote;
  }
  if (used > 0)
    printf(
        "note: tarn's settings differ (%s): the ratios compare the settings "
        "as well as the code\n",
        changed);
}

/* Into buf: "SUITE N %" for each suite of `f` whose share of CPU time the
 * hypervisor took (machine.steal) is at least BENCH_STEAL_NOTABLE, ", "
 * between; "" when none. */
static void notable_steal(const result_file *f, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  const char *suite;
  json_t *share;
  if (f->steal == NULL) return;
  json_object_foreach(f->steal, suite, share) {
    double v = json_number_value(share);
    if (!json_is_number(share) || v < BENCH_STEAL_NOTABLE || used >= size)
      continue;
    int wrote = snprintf(buf + used, size - used, "%s%s %.0f %%",
                         used > 0 ? ", " : "", suite, v * 100);
    if (wrote > 0) used += (size_t)wrote;
  }
}

/* A note naming the suites during which a hypervisor took a notable share
 * of the CPU time, in either file. */
static void print_steal_note(const result_file *base, const result_file *new) {
  char b[512], n[512];
  notable_steal(base, b, sizeof b);
  notable_steal(new, n, sizeof n);
  if (b[0] == '\0' && n[0] == '\0') return;
  printf(
      "note: a hypervisor took CPU time while suites ran (base: %s; new: %s): "
      "their rows ran slower for that alone, by as much as it took\n",
      b[0] != '\0' ? b : "none notable", n[0] != '\0' ? n : "none notable");
}

/* The two files' machines, and a note when they differ. */
static void print_header(const result_file *base, const result_file *new) {
  print_machine("base:", base);
  print_machine("new: ", new);
  int cpu = differ(base->cpu, new->cpu);
  int cores = base->cores != new->cores;
  if (cpu || cores)
    printf(
        "note: the machines differ (%s%s%s): the ratios compare the "
        "machines as well as the code\n",
        cpu ? "cpu" : "", cpu && cores ? ", " : "", cores ? "cores" : "");
  int huge = base->huge_pages >= 0 && new->huge_pages >= 0 &&
             base->huge_pages != new->huge_pages;
  int thp = base->thp != NULL && new->thp != NULL;
  thp = thp && differ(base->thp, new->thp);
  if (huge || thp)
    printf(
        "note: the pages differ (%s%s%s): the ratios compare tarn's tiles on "
        "huge and small pages as well as the code\n",
        huge ? "tarn's huge pages" : "", huge && thp ? ", " : "",
        thp ? "the kernel's THP setting" : "");
  if (base->blas_core != NULL && new->blas_core != NULL &&
      differ(base->blas_core, new->blas_core))
    printf(
        "note: OpenBLAS's kernels differ (%s -> %s): the ratios compare the "
        "kernels as well as the code\n",
        base->blas_core, new->blas_core);
  print_settings_note(base, new);
  print_steal_note(base, new);
  putchar('\n');
}

/* Prints the rows of verdict v1 or v2 under `title`, one a line with the
 * factor: "NAME: 2.00x slower (2.00 ms -> 4.00 ms)". */
static void print_section(const row *rows, size_t n, enum verdict v1,
                          enum verdict v2, const char *title) {
  int shown = 0;
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (r->verdict != v1 && r->verdict != v2) continue;
    if (!shown++) printf("\n%s:\n", title);
    int slower = r->ratio < 1;
    char factor[24], base[CELL_MAX], new[CELL_MAX];
    format_number(factor, sizeof factor, slower ? 1 / r->ratio : r->ratio);
    entry b = r->b, m = r->n;
    b.spread = m.spread = 0;
    format_time(base, sizeof base, &b);
    format_time(new, sizeof new, &m);
    printf("  %s: %sx %s (%s -> %s)\n", r->base->name, factor,
           slower ? "slower" : "faster", base, new);
  }
}

/* The summary line and the lists of regressions, improvements and changes
 * within noise. */
static void print_summary(const row *rows, size_t n, const size_t *count,
                          double threshold) {
  char limit[24], title[160];
  format_number(limit, sizeof limit, 1 + threshold / 100);
  printf(
      "\nthreshold %g %%: %zu regression%s, %zu improvement%s, %zu within "
      "noise, %zu unchanged, %zu only in base, %zu only in new",
      threshold, count[REGRESSION], count[REGRESSION] == 1 ? "" : "s",
      count[IMPROVEMENT], count[IMPROVEMENT] == 1 ? "" : "s",
      count[NOISE_SLOWER] + count[NOISE_FASTER], count[UNCHANGED],
      count[ONLY_BASE], count[ONLY_NEW]);
  if (count[NO_RATIO] > 0) printf(", %zu without a ratio", count[NO_RATIO]);
  putchar('\n');
  snprintf(title, sizeof title,
           "regressions (new / base above %s, spreads apart)", limit);
  print_section(rows, n, REGRESSION, REGRESSION, title);
  snprintf(title, sizeof title,
           "improvements (base / new above %s, spreads apart)", limit);
  print_section(rows, n, IMPROVEMENT, IMPROVEMENT, title);
  snprintf(title, sizeof title,
           "within noise (beyond %g %% but the spreads overlap; not counted)",
           threshold);
  print_section(rows, n, NOISE_SLOWER, NOISE_FASTER, title);
}

/* ---- goals ---------------------------------------------------------------
 *
 * A file of `tarn bench --json` holds the goal lines the run printed
 * ("goals": suite, name, value, unit, at_most, limit, met; met null when
 * not measured). Where both files have them: how many each met, and the
 * goals met in one and missed in the other (same suite and name, measured
 * in both). A goal entry that lacks a field counts as not measured. */

/* Goal g's suite and name into *suite and *name, and its state: 1 met, 0
 * missed, -1 not measured or not readable. */
static int goal_state(json_t *g, const char **suite, const char **name) {
  *suite = json_string_value(json_object_get(g, "suite"));
  *name = json_string_value(json_object_get(g, "name"));
  json_t *met = json_object_get(g, "met");
  if (*suite == NULL || *name == NULL || !json_is_boolean(met)) return -1;
  return json_is_true(met) ? 1 : 0;
}

/* The goal of `goals` with that suite and name, or NULL. */
static json_t *find_goal(json_t *goals, const char *suite, const char *name) {
  size_t i;
  json_t *g;
  json_array_foreach(goals, i, g) {
    const char *s, *n;
    (void)goal_state(g, &s, &n);
    if (s != NULL && n != NULL && strcmp(s, suite) == 0 && strcmp(n, name) == 0)
      return g;
  }
  return NULL;
}

/* "1.06x" or "not measured": goal g's figure. */
static void goal_figure(char *buf, size_t size, json_t *g) {
  json_t *v = json_object_get(g, "value");
  const char *unit = json_string_value(json_object_get(g, "unit"));
  if (json_is_number(v))
    snprintf(buf, size, "%.2f%s", json_number_value(v), unit ? unit : "");
  else
    snprintf(buf, size, "not measured");
}

/* "<= 1.1x": goal g's bound. */
static void goal_bound(char *buf, size_t size, json_t *g) {
  json_t *limit = json_object_get(g, "limit");
  const char *unit = json_string_value(json_object_get(g, "unit"));
  snprintf(buf, size, "%s %g%s",
           json_is_true(json_object_get(g, "at_most")) ? "<=" : ">=",
           json_is_number(limit) ? json_number_value(limit) : 0.0,
           unit ? unit : "");
}

/* Counts the goals of `goals` met and judged (met or missed). */
static void count_goals(json_t *goals, size_t *met, size_t *judged) {
  size_t i;
  json_t *g;
  *met = *judged = 0;
  json_array_foreach(goals, i, g) {
    const char *s, *n;
    int state = goal_state(g, &s, &n);
    if (state < 0) continue;
    (*judged)++;
    *met += (size_t)state;
  }
}

/* The goals of new met (want 1) or missed (want 0) that base judged the
 * other way, under `title`; nothing when there are none. */
static void print_goal_changes(const result_file *base, const result_file *new,
                               int want, const char *title) {
  size_t i, shown = 0;
  json_t *g;
  json_array_foreach(new->goals, i, g) {
    const char *s, *n;
    if (goal_state(g, &s, &n) != want) continue;
    json_t *was = find_goal(base->goals, s, n);
    const char *bs, *bn;
    if (was == NULL || goal_state(was, &bs, &bn) != !want) continue;
    char before[32], after[32], bound[40];
    goal_figure(before, sizeof before, was);
    goal_figure(after, sizeof after, g);
    goal_bound(bound, sizeof bound, g);
    if (shown++ == 0) printf("\n%s:\n", title);
    printf("  %s: %s  %s -> %s  (goal %s)\n", s, n, before, after, bound);
  }
}

/* The goals' counts and changes, where both files have goals. */
static void print_goals(const result_file *base, const result_file *new) {
  if (base->goals == NULL || new->goals == NULL) return;
  size_t bmet, bjudged, nmet, njudged;
  count_goals(base->goals, &bmet, &bjudged);
  count_goals(new->goals, &nmet, &njudged);
  printf("\ngoals: %zu of %zu met in base, %zu of %zu in new\n", bmet, bjudged,
         nmet, njudged);
  print_goal_changes(base, new, 1, "goals met in new, missed in base");
  print_goal_changes(base, new, 0, "goals missed in new, met in base");
}

/* Writes s as a gnuplot single-quoted string: ' doubled, control
 * characters as '?', and % doubled where the string is a format (a tic's
 * label is: a name with a % failed the whole picture, "Bad format
 * character"). */
static void gnuplot_string(FILE *out, const char *s, bool format) {
  fputc('\'', out);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '\'')
      fputs("''", out);
    else if (ch == '%' && format)
      fputs("%%", out);
    else
      fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, out);
  }
  fputc('\'', out);
}

/* The colour of a bar, 0xRRGGBB. */
static long bar_colour(enum verdict v) {
  switch (v) {
    case REGRESSION:
      return 0xd62728;
    case IMPROVEMENT:
      return 0x2ca02c;
    case NOISE_SLOWER:
    case NOISE_FASTER:
      return 0xff9f40;
    default:
      return 0x8c8c8c;
  }
}

/* Writes the gnuplot script that draws the rows with a ratio (there are
 * `drawn`) as horizontal bars from 1 to base / new on a log scale, with
 * the spread as whiskers, into the SVG file `svg`. */
static void write_script(FILE *out, const row *rows, size_t n, size_t drawn,
                         const options *o, const char *svg) {
  double limit = 1 + o->threshold / 100, lo = 1 / limit, hi = limit;
  size_t longest = 0;
  for (size_t i = 0; i < n; i++) {
    if (!has_ratio(&rows[i])) continue;
    if (rows[i].lo < lo) lo = rows[i].lo;
    if (rows[i].hi > hi) hi = rows[i].hi;
    size_t w = text_width(rows[i].base->name);
    if (w > longest) longest = w;
  }
  size_t width = 700 + 7 * longest, height = 140 + 20 * drawn;
  width = width < 900 ? 900 : width > 2400 ? 2400 : width;
  fputs("set encoding utf8\n", out);
  fprintf(out,
          "set terminal svg size %zu,%zu dynamic noenhanced "
          "font 'sans,11' background '#ffffff'\n",
          width, height);
  fputs("set output ", out);
  gnuplot_string(out, svg, false);
  fputs("\nset title ", out);
  char title[1024];
  snprintf(title, sizeof title,
           "base / new, above 1: new is faster (base %s, new %s)", o->base,
           o->new);
  gnuplot_string(out, title, false);
  fprintf(out,
          "\nset xlabel 'base / new (log scale; bars from 1, whiskers: the "
          "spread; dashed: the threshold, %g %%)'\n",
          o->threshold);
  fprintf(
      out,
      "set logscale x 2\nset format x '%%g'\nset xrange [%g:%g]\nset "
      "yrange [%zu-0.5:-0.5]\n"
      "set key off\nset grid xtics lt 1 lc rgb '#dddddd'\nset ytics scale 0\n"
      "set style fill solid 0.7 noborder\n",
      lo / 1.35, hi * 1.35, drawn);
  fputs(
      "set arrow from first 1, graph 0 to first 1, graph 1 nohead lw 2 "
      "lc rgb '#000000'\n",
      out);
  fprintf(out,
          "set arrow from first %g, graph 0 to first %g, graph 1 nohead dt 2 "
          "lc rgb '#999999'\n"
          "set arrow from first %g, graph 0 to first %g, graph 1 nohead dt 2 "
          "lc rgb '#999999'\n",
          limit, limit, 1 / limit, 1 / limit);
  size_t y = 0;
  fputs("$data << EOD\n", out);
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (!has_ratio(r)) continue;
    fprintf(out, "%zu %.17g %.17g %.17g %.17g %.17g %ld\n", y++, r->ratio,
            r->lo, r->hi, r->ratio < 1 ? r->ratio : 1,
            r->ratio < 1 ? 1 : r->ratio, bar_colour(r->verdict));
  }
  fputs("EOD\n", out);
  y = 0;
  for (size_t i = 0; i < n; i++) {
    if (!has_ratio(&rows[i])) continue;
    fputs(y == 0 ? "set ytics (" : "set ytics add (", out);
    gnuplot_string(out, rows[i].base->name, true);
    fprintf(out, " %zu)\n", y++);
  }
  /* A labels plot whose points are all undefined crashes gnuplot 5.4: a
   * clause for the labels on either side only where there are some. */
  size_t faster = 0;
  for (size_t i = 0; i < n; i++)
    faster += has_ratio(&rows[i]) && rows[i].ratio >= 1;
  fputs(
      "plot $data using 2:1:5:6:($1-0.35):($1+0.35):7 with boxxyerror "
      "lc rgb variable, \\\n"
      "     $data using 2:1:3:4 with xerrorbars pt 7 ps 0.4 lc rgb '#333333'",
      out);
  if (faster > 0)
    fputs(
        ", \\\n     $data using ($2 < 1 ? NaN : $4 * 1.04):1:"
        "(sprintf('%#.3g', $2)) with labels left font ',9'",
        out);
  if (faster < drawn)
    fputs(
        ", \\\n     $data using ($2 < 1 ? $3 / 1.04 : NaN):1:"
        "(sprintf('%#.3g', $2)) with labels right font ',9'",
        out);
  fputc('\n', out);
}

/* Starts gnuplot with its standard input from a pipe (*to: the writing
 * end), its standard output on /dev/null (where it draws when the SVG file
 * cannot be opened) and its messages on stderr. Returns 0 or an errno
 * value. */
static int start_gnuplot(pid_t *pid, int *to) {
  int fds[2];
  if (pipe(fds) != 0) return errno;
  posix_spawn_file_actions_t actions;
  int rc = posix_spawn_file_actions_init(&actions);
  if (rc == 0) {
    if (fds[0] != STDIN_FILENO) {
      posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
      posix_spawn_file_actions_addclose(&actions, fds[0]);
    }
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
                                     O_WRONLY, 0);
    char name[] = "gnuplot";
    char *args[] = {name, NULL};
    fflush(stdout);
    fflush(stderr);
    rc = posix_spawnp(pid, name, &actions, NULL, args, environ);
    posix_spawn_file_actions_destroy(&actions);
  }
  close(fds[0]);
  if (rc != 0) {
    close(fds[1]);
    return rc;
  }
  *to = fds[1];
  return 0;
}

/* Draws the picture into `svg` with gnuplot; prints where it is, or one
 * line saying why there is none. The exit status does not depend on it. */
static void draw_picture(const row *rows, size_t n, const options *o,
                         const char *svg) {
  size_t drawn = 0;
  for (size_t i = 0; i < n; i++) drawn += has_ratio(&rows[i]);
  if (drawn == 0) {
    fputs("no picture: no benchmark has a time in both files\n", stderr);
    return;
  }
  pid_t pid = 0;
  int to = -1;
  int rc = start_gnuplot(&pid, &to);
  if (rc == ENOENT) {
    fputs(
        "no picture: gnuplot is not installed (apt-get install gnuplot-nox)\n",
        stderr);
    return;
  }
  if (rc != 0) {
    fprintf(stderr, "no picture: cannot run gnuplot: %s\n", strerror(rc));
    return;
  }
  /* gnuplot may quit early; a failed write is then an error, not SIGPIPE. */
  struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &old);
  FILE *out = fdopen(to, "w");
  int failed = out == NULL;
  if (out != NULL) {
    write_script(out, rows, n, drawn, o, svg);
    failed = ferror(out);
    failed |= fclose(out) != 0;
  } else {
    close(to);
  }
  sigaction(SIGPIPE, &old, NULL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
  if (failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    unlink(svg); /* what gnuplot began, never a whole picture */
    fprintf(stderr, "no picture: gnuplot failed to draw %s\n", svg);
  } else
    printf("\npicture: %s\n", svg);
}

/* NEW's name with .json replaced by (or, without it, followed by)
 * -compare.svg; NULL when out of memory. */
static char *default_svg(const char *new_path) {
  static const char suffix[] = "-compare.svg";
  size_t n = strlen(new_path);
  if (n > 5 && strcmp(new_path + n - 5, ".json") == 0) n -= 5;
  char *svg = malloc(n + sizeof suffix);
  if (svg == NULL) return NULL;
  memcpy(svg, new_path, n);
  memcpy(svg + n, suffix, sizeof suffix);
  return svg;
}

/* Compares the two files that have been read. Returns the exit status. */
static int compare(const result_file *base, const result_file *new,
                   const options *o) {
  size_t n = 0, count[VERDICTS] = {0};
  row *rows = match_rows(base, new, o->threshold, &n);
  char *svg = o->svg != NULL ? NULL : default_svg(new->path);
  if (rows == NULL || (o->svg == NULL && svg == NULL)) {
    free(rows);
    return out_of_memory();
  }
  for (size_t i = 0; i < n; i++) count[rows[i].verdict]++;
  print_header(base, new);
  int rc = print_table(rows, n);
  if (rc == 0) {
    print_summary(rows, n, count, o->threshold);
    print_goals(base, new);
    draw_picture(rows, n, o, o->svg != NULL ? o->svg : svg);
  }
  free(svg);
  free(rows);
  if (fflush(stdout) != 0) rc = 1;
  if (rc == 0 && o->fail_on_regression && count[REGRESSION] > 0) {
    fprintf(stderr,
            "%s: %zu regression%s beyond %g %% (--fail-on-regression)\n", PROG,
            count[REGRESSION], count[REGRESSION] == 1 ? "" : "s", o->threshold);
    rc = 1;
  }
  return rc;
}

int bench_compare(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc != 0) return rc;
  if (o.help) return print_help();
  result_file base = {.path = o.base}, new = {.path = o.new};
  int base_rc = read_file(&base), new_rc = read_file(&new);
  rc = base_rc || new_rc ? 1 : compare(&base, &new, &o);
  free_file(&base);
  free_file(&new);
  return rc;
}
