/* bench.h: the harness every `tarn bench` suite shares. A run context
 * collects result records (a name, the per-sample times in seconds and a few
 * named extra figures), prints a table row for each as it arrives and writes
 * them all as BENCH.md's JSON at the end. Also a monotonic clock, a
 * calibration helper that sizes a sample to a target time, and a compiler
 * barrier that keeps measured work from being optimised away. Header-only
 * parts (bench_escape) are usable without bench.c. */
#ifndef TARN_BENCH_H
#define TARN_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define BENCH_SAMPLES_MIN 3
#define BENCH_SAMPLES_DEFAULT 5
#define BENCH_SAMPLES_MAX 1000

/* Without --samples, an array, stencil or linalg row samples for at least
 * this long: a median of 5 samples of a row of a millisecond or less is at
 * the mercy of one burst of the hypervisor's steal. */
#define BENCH_ROW_MIN_S 0.1
#define BENCH_EXTRA_MAX 8
#define BENCH_SIZES_MAX 16 /* matrix sizes of a run (--sizes) */
#define BENCH_KEY_MAX 32

/* One extra figure of a result, such as {"ns_per_op", 1.1}. */
typedef struct bench_extra {
  char key[BENCH_KEY_MAX];
  double value;
} bench_extra;

/* One benchmark's result: the samples and their summary, owned by the run. */
typedef struct bench_result {
  char *name;
  double *samples; /* seconds, in the order measured */
  size_t nsamples;
  double median_s, min_s, max_s;
  bench_extra extra[BENCH_EXTRA_MAX];
  size_t nextra;
} bench_result;

/* A whole `tarn bench` invocation: its settings and the results so far. */
/* At most this many suites in a run (tarn bench runs ten). */
#define BENCH_SUITES_MAX 16

typedef struct bench_run {
  size_t samples; /* samples per benchmark, at least BENCH_SAMPLES_MIN */
  /* The array, stencil and linalg suites' rows take samples, beyond
   * `samples`, until they have run this long (up to BENCH_SAMPLES_MAX;
   * bench_sample_more); 0: exactly `samples`. */
  double row_min_s;
  const size_t *sizes; /* N of the array and stencil suites; NULL: default */
  size_t nsizes;
  unsigned workers;  /* tarn's workers and peers' threads; 0: all cores */
  size_t mem_limit;  /* tarn's pool limit in bytes (--mem-limit); 0: none */
  void *filter;      /* compiled --filter (regex_t), or NULL: every name */
  const char *suite; /* name of the suite running now, for progress */
  unsigned suite_index, suite_count; /* progress: suites done and in all */
  int progress;       /* draw a progress bar on stderr (a terminal) */
  int progress_shown; /* a bar is on the screen and must be cleared */
  bench_result *results;
  size_t count, cap;
  size_t matched; /* names bench_wanted let through (recorded or not) */
  int header_printed;
  /* The share of the CPU time each suite wanted that the hypervisor took
   * (bench_steal_end), in the order they ran; -1 where /proc/stat could
   * not be read. */
  struct {
    const char *suite;
    double share;
  } steal[BENCH_SUITES_MAX];
  size_t nsteal;
  /* The cache line's round trip before and after each suite
   * (bench_cores_end), in ns; only suites where both were measured. */
  struct {
    const char *suite;
    double before_ns, after_ns;
  } cores[BENCH_SUITES_MAX];
  size_t ncores;
} bench_run;

/* The processors' time so far, from the first line of /proc/stat, in
 * clock ticks: `busy` the time they ran anything (user, nice, system, irq,
 * softirq), `steal` the time a hypervisor gave them to other machines
 * while they had work. `ok` is 0 when it could not be read. */
typedef struct bench_cpu_times {
  unsigned long long busy, steal;
  int ok;
} bench_cpu_times;

/* The share of the CPU time taken by a hypervisor from which a suite's
 * rows are said to have run on a machine shared with others (the steal
 * line, and a note of tarn bench compare). */
#define BENCH_STEAL_NOTABLE 0.05

/* Reads *t now (t->ok says whether it could). */
void bench_cpu_times_read(bench_cpu_times *t);

/* After a suite that began at `before`: the share of the CPU time the
 * suite's threads wanted that the hypervisor took (steal over steal plus
 * busy), printed as a line "steal: ..." and kept in run->steal for the
 * JSON file (machine.steal). A virtual machine whose host is busy runs
 * some rows at a fraction of their speed; this says how much of that the
 * run met. Nothing is printed when /proc/stat cannot be read. */
void bench_steal_end(bench_run *run, const char *suite,
                     const bench_cpu_times *before);

/* The median round trip of one cache line between two threads pinned to
 * the first two processors this process may run on, in ns (about 8 ms of
 * spinning on both); -1 where it may run on fewer than two, or the
 * threads could not be started or pinned. On a virtual machine the host
 * places the virtual processors where it likes and moves them: on the
 * 2-vCPU AMD EPYC here it read 55 to 96 ns in some minutes and 325 to 410
 * in others, while /sys said one L3 cache for both all along. Far apart,
 * work split between the two pays less: a region of one 256 x 256
 * tarn_matrix_lu_inverse took 530 us on two workers and 740 on one while
 * it read 55 ns, 1110 and 775 while it read 400 (docs/bench.md). */
double bench_core_round_trip_ns(void);

/* From this round trip on, the cores line says that the processors share
 * no cache. */
#define BENCH_CORES_FAR_NS 200

/* After a suite whose round trip read `before_ns` (bench_core_round_trip_
 * ns) before it began: pauses BENCH_QUIESCE_BLAS_S (OpenBLAS's threads
 * still spin after the suite), measures it again, prints a line "cores:
 * ..." with both and keeps them in run->cores for the JSON file
 * (machine.core_round_trip_ns). Nothing when either reads -1. */
void bench_cores_end(bench_run *run, const char *suite, double before_ns);

/* A measured operation: performs `reps` repetitions of the work and stores
 * the time they took in *seconds (the function times only the work, not its
 * setup). Returns 0, or non-zero after printing why to stderr. */
typedef int (*bench_fn)(void *arg, uint64_t reps, double *seconds);

/* The time of a sample that bench_calibrate aims at. */
#define BENCH_TARGET_S 0.030

/* Keeps the compiler from deleting or sinking work: `p` escapes and every
 * store before this point must have happened. Emits no instruction. */
static inline void bench_escape(void *p) {
  __asm__ __volatile__("" : : "r"(p) : "memory");
}

/* Monotonic time in nanoseconds. */
uint64_t bench_now_ns(void);

/* Starts a run with `samples` samples per benchmark. */
void bench_run_init(bench_run *run, size_t samples);

/* Frees every result of the run and its filter. */
void bench_run_free(bench_run *run);

/* Compiles `regex` (POSIX extended) as the run's filter. Returns 0, or 2
 * after printing why. */
int bench_set_filter(bench_run *run, const char *regex);

/* Whether the benchmark `name` is to be measured (it matches the filter,
 * or there is none). Suites ask before measuring, so that a filtered-out
 * benchmark costs nothing; also updates the progress bar with `name`. */
int bench_wanted(bench_run *run, const char *name);

/* Fills *options for a runtime of the run: tarn_rt_options_init, then
 * --workers and --mem-limit. Returns 0 or a tarn status. */
struct tarn_rt_options;
struct tarn_rt;
int bench_rt_options(const bench_run *run, struct tarn_rt_options *options);

/* Starts the runtime of a suite with bench_rt_options. Returns 0, or 1
 * after printing why (naming `suite`). */
int bench_rt_open(const bench_run *run, const char *suite, struct tarn_rt **rt);

/* The matrix sizes of a suite: --sizes when given, else `defaults`; sets
 * *sizes and returns their count, at most BENCH_SIZES_MAX. */
size_t bench_sizes(const bench_run *run, const size_t *defaults,
                   size_t ndefaults, const size_t **sizes);

/* A goal line of one operation at one size: "N=<n> <op>: <label>" (see
 * bench_goal). */
void bench_size_goal(size_t n, const char *op, const char *label, double value,
                     const char *unit, int at_most, double limit);

/* A seed table's median in ms for size n and operation op: `medians` is a
 * [nsizes][ops] table of the sizes in `sizes`; -1 when n is not there. */
double bench_seed_ms(size_t n, const size_t *sizes, size_t nsizes,
                     const double *medians, size_t ops, size_t op);

/* The workers tarn's runtime starts by default (the processors the process
 * may run on, at most its CPU quota): the peers' threads without
 * --workers, so that both sides get the same cores. */
unsigned bench_default_threads(void);

/* Threads the peers of the run use: --workers, or bench_default_threads. */
unsigned bench_threads(const bench_run *run);

/* Clears the progress bar (before anything is printed to stdout). */
void bench_progress_clear(bench_run *run);

/* printf for the suites' tables and goal lines: clears the progress bar
 * first and flushes stdout after, so the two never mix on a terminal. */
int bench_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Why a write of bench_printf's to stdout failed (an errno value), or 0
 * when none did: it flushes every time, so the caller's final fflush
 * finds nothing left to fail on, only the stream's error flag. */
int bench_output_errno(void);

/* Runs fn with a doubling number of repetitions until one call takes a
 * sixth of `target_s`, then sets *reps so that a call takes about target_s.
 * The calls double as warm-up. Returns 0 or fn's failure. */
int bench_calibrate(bench_fn fn, void *arg, double target_s, uint64_t *reps);

/* Calibrates fn (bench_calibrate, BENCH_TARGET_S), runs one warm-up, then
 * run->samples samples of *reps repetitions into samples[]. Returns 0 or
 * fn's failure. */
int bench_measure(bench_run *run, bench_fn fn, void *arg, uint64_t *reps,
                  double *samples);

/* The median, minimum and maximum of n values, 0 < n <= BENCH_SAMPLES_MAX. */
void bench_summary(const double *values, size_t n, double *median, double *min,
                   double *max);

/* Records a result (copying name, samples and extras), prints its table
 * row and returns the stored record, or NULL after printing why. A name the
 * filter rejects is neither recorded nor printed: the record returned then
 * has a median of -1 (not measured). */
const bench_result *bench_report(bench_run *run, const char *name,
                                 const double *samples, size_t n,
                                 const bench_extra *extra, size_t nextra);

/* Prints a table row that carries a message instead of figures, for a
 * benchmark that was skipped. */
void bench_note(bench_run *run, const char *name, const char *message);

/* Writes the machine description and every result as JSON in BENCH.md's
 * format to `out`, a file opened for writing whose name is `path` (for
 * messages). The caller closes it. Returns 0, or -1 after printing why. */
int bench_write_json(const bench_run *run, FILE *out, const char *path);

/* Prints "tarn bench: SUITE: WHAT: <tarn_strerror(status)>" to stderr and
 * returns 1. */
int bench_tarn_failed(const char *suite, const char *what, int status);

/* BENCH.md's tile size for an N x N matrix: N up to 512, else N split into
 * the fewest equal tiles of at most 512. */
size_t bench_tile_size(size_t n);

/* A buffer of `bytes` for a peer's whole matrix or vector, on a 64-byte
 * boundary as tarn's tiles and the tiled peers' are (glibc's malloc puts a
 * large block 16 bytes past a page: OpenBLAS's dgemv on a 256 x 256 matrix
 * took 7.5 us there against 4.6 us aligned). NULL when out of memory;
 * free() frees it. */
void *bench_buffer_alloc(size_t bytes);

/* Minor page faults of the process so far (getrusage), 0 if unknown. */
double bench_minor_faults(void);

/* The directory tarn's pools spill to by default (tarn_pool_options_init's
 * spill_dir: TARN_SPILL_DIR, TMPDIR or /tmp, or /var/tmp for one kept in
 * memory), where the peers' files go too. */
const char *bench_spill_dir(void);

/* Whether a is within tol (relative, plus tol absolute) of b. */
int bench_close(double a, double b, double tol);

/* Prepares the environment StarPU reads at starpu_init: quiet, workers not
 * bound to cores, and its home (performance models, traces) in a fresh
 * directory of the spill directory (bench_temp_dir), whose path goes to
 * dir (size bytes). Returns 0, or 1 after printing why (naming `suite`). */
int bench_starpu_environment(const char *suite, char *dir, size_t size);

/* mkdtemp(template), and the directory made is registered for removal by
 * an interrupt (bench_catch_interrupts) until bench_remove_tree removes it.
 * Returns template, or NULL with errno set as mkdtemp. Not thread-safe: a
 * suite's main thread makes and removes its directories. */
char *bench_temp_dir(char *template);

/* Removes the directory tree `dir` (as made by bench_temp_dir), printing
 * what cannot be removed, and forgets it. */
void bench_remove_tree(const char *dir);

/* From now on a SIGINT or SIGTERM removes the directories of bench_temp_dir
 * that still exist, with what they hold, and the process then dies of the
 * signal (the status a shell reports is 130 or 143). A signal ignored when
 * the process started (a background job of a script) stays ignored. */
void bench_catch_interrupts(void);

/* Sets `path` to the helper program `name` (e.g. "tarn-burst-glibc") next
 * to this executable: <dir>/bench/ in a build tree, <dir>/../libexec/tarn/
 * once installed. Returns 0, 1 when there is none, -1 after printing why the
 * search failed. */
int bench_find_program(const char *name, char *path, size_t size);

/* Starts `path` with `argv` (argv[0] first, NULL-terminated) and its
 * stdout on a pipe that *out reads; *pid is the child. Returns 0, or 1
 * after printing why. */
int bench_spawn(const char *path, char *const argv[], pid_t *pid, FILE **out);

/* Waits for the child `pid` started from `path`. Returns 0 when it exited
 * with status 0, else 1 after printing how it ended. */
int bench_reap(pid_t pid, const char *path);

/* Pauses for `seconds`. `tarn bench` pauses BENCH_QUIESCE_BLAS_S before
 * each suite, and the linalg suite before each variant, so that OpenBLAS's
 * idle threads (they spin about 2^28 cycles when the library starts and
 * after each multithreaded call) do not share the cores with what is
 * measured next. */
#define BENCH_QUIESCE_BLAS_S 0.2
void bench_quiesce(double seconds);

/* The array and stencil suites warm each variant up for this long (at
 * least one round) before its samples: on this 2-vCPU machine a core that
 * idled takes a few rounds to come back, and a party that followed another
 * (libgomp's threads spin about 17 ms after a region) finds it busy. A
 * pause instead made libgomp's regions take 8 ms instead of 0.5 ms here. */
#define BENCH_WARMUP_S 0.05

/* When a warm-up begun now ends: bench_now_ns() + BENCH_WARMUP_S. */
uint64_t bench_warmup_until(void);

/* Whether a row that has taken `taken` samples since `since_ns`
 * (bench_now_ns) takes another: up to run->samples, then while it has
 * sampled for under run->row_min_s, up to BENCH_SAMPLES_MAX. */
int bench_sample_more(const bench_run *run, size_t taken, uint64_t since_ns);

/* The same for a row measured in `rounds` rounds, in round `round` (from
 * 0), having taken `taken` samples in `wall_s` seconds of sampling so far:
 * up to the round's even share of run->samples and of run->row_min_s (the
 * budgets above), up to BENCH_SAMPLES_MAX. */
int bench_round_more(const bench_run *run, size_t taken, double wall_s,
                     int round, int rounds);

/* The median of n values, 0 < n <= BENCH_SAMPLES_MAX. */
double bench_median(const double *values, size_t n);

/* The figure of a row that the filter rejected: negative zero. It is not
 * below 0, so a suite's `figure < 0` failure checks let it through, and
 * bench_goal and bench_ratio treat it as not measured. */
#define BENCH_SKIPPED (-0.0)

/* Records a result whose samples each did `ops` operations, with the extras
 * `per_op` (median seconds per operation times `scale`, e.g. 1e9 for
 * "ns_per_op") and "ops". Returns that per-operation figure, -1 after a
 * failure, or BENCH_SKIPPED when the filter rejects the name. */
double bench_report_ops(bench_run *run, const char *name, const double *samples,
                        uint64_t ops, const char *per_op, double scale);

/* Sets the heading of a suite's goal lines ("Goals (...):"), printed
 * after an empty line before the first goal line that is printed (none
 * when a filter leaves every goal unmeasured). */
void bench_goal_heading(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/* Prints one line of a suite's goals: `value` (negative when it was not
 * measured) against `limit`, as at most or at least, and whether it is met.
 */
void bench_goal(const char *what, double value, const char *unit, int at_most,
                double limit);

/* a / b, or -1 when either is not a positive figure (BENCH_SKIPPED is
 * not). */
double bench_ratio(double a, double b);

/* Two threads doing the same work at once: this one and a helper, released
 * together by a barrier for every call of bench_duo_fn. `work(arg, reps)`
 * returns 0 or non-zero after printing why; arg[0] is this thread's, arg[1]
 * the helper's. */
typedef struct bench_duo {
  int (*work)(void *arg, uint64_t reps);
  void *arg[2];
  void *impl; /* the helper thread and its barriers */
} bench_duo;

/* Starts the helper. Returns 0, or 1 after printing why. */
int bench_duo_open(bench_duo *duo, int (*work)(void *, uint64_t), void *mine,
                   void *theirs);

/* A bench_fn over a bench_duo: both threads do `reps` at once; *seconds is
 * the slower one's, so reps / seconds is the rate per thread. */
int bench_duo_fn(void *duo, uint64_t reps, double *seconds);

/* Stops the helper. */
void bench_duo_close(bench_duo *duo);

/* Measures `work` on two threads at once (bench_measure over a bench_duo)
 * and reports it as `name` with ns_per_op per thread. Returns that figure,
 * -1 after a failure, or BENCH_SKIPPED. */
double bench_duo_report(bench_run *run, const char *name,
                        int (*work)(void *, uint64_t), void *mine,
                        void *theirs);

/* The suites. Each prints its rows and returns 0, or 1 when a measurement
 * failed (after printing why). */
int bench_alloc(bench_run *run);
int bench_pool(bench_run *run);
int bench_rt(bench_run *run);
int bench_array(bench_run *run);
int bench_stencil(bench_run *run);
int bench_linalg(bench_run *run);
int bench_ooc(bench_run *run);
int bench_eager(bench_run *run);
int bench_files(bench_run *run);
int bench_load(bench_run *run);

/* The ooc suite measures each configuration in a fresh process (its peak
 * resident set is the process's own): it starts this executable as
 * `tarn bench BENCH_OOC_CHILD ARGS...`, which runs bench_ooc_child(ARGS)
 * and exits with its status. Not for users; not in the help. */
#define BENCH_OOC_CHILD "__ooc-child"
int bench_ooc_child(int argc, char **argv);

/* `tarn bench compare BASE.json NEW.json [--threshold P]
 * [--fail-on-regression] [--svg FILE]`: argv holds the arguments after
 * "compare". Returns the process's exit status. */
int bench_compare(int argc, char **argv);

#endif
