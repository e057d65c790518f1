/* loops.h: the driver the `array` and `stencil` suites of `tarn bench`
 * share. Each of their operations on an N x N matrix runs in tarn (a
 * region timed to tarn_region_wait) and, side by side, as a plain C loop
 * and a 2-thread OpenMP loop on plain buffers, writing into fresh memory
 * (mapped inside the clock, so its page faults count) or into a buffer
 * written before (touched). Per size and operation: one round that the
 * suite checks against the C loop, then each variant's samples after a
 * warm-up of its own, the rows, and at the end of the suite the goals from
 * the medians and Dagger's published ones. A suite gives its operations,
 * its tables and four functions (loop_suite); the driver owns the order,
 * the warm-ups, the row names and the goals. */
#ifndef TARN_BENCH_LOOPS_H
#define TARN_BENCH_LOOPS_H

#include <stddef.h>

#include "bench.h"

struct tarn_rt;

/* What runs an operation: tarn, and the peers (fresh: output mapped per
 * sample; touched: a buffer written before). */
enum { V_TARN, V_OMP_FRESH, V_OMP_TOUCHED, V_C_FRESH, V_C_TOUCHED, V_COUNT };

/* Which peer rows an operation has. */
enum loop_rows {
  LOOP_ROWS_ALL,     /* a new output each time: fresh and touched rows */
  LOOP_ROWS_SCALAR,  /* a reduction: one row per peer (the *_FRESH variants,
                        named without "fresh") */
  LOOP_ROWS_TOUCHED, /* into an output made before: the touched rows only */
};

typedef struct loop_op {
  const char *name;       /* the row name, as Dagger's */
  const char *short_name; /* in the goal lines */
  enum loop_rows rows;
  double touches; /* elements read plus written, per matrix element */
} loop_op;

/* The samples of one row and what was counted around them. */
typedef struct loop_row {
  double s[BENCH_SAMPLES_MAX];
  size_t n;      /* samples taken (bench_sample_more) */
  double faults; /* minor page faults, summed over samples */
} loop_row;

/* The most operations a suite has. */
#define LOOP_OPS_MAX 8

typedef struct loop_suite {
  const char *name; /* "array": the rows' first part, and in messages */
  const loop_op *ops;
  int nops; /* at most LOOP_OPS_MAX */
  const size_t *default_sizes;
  size_t ndefault_sizes;
  /* Dagger's medians in ms, a [ndagger_sizes][nops] table. */
  const size_t *dagger_sizes;
  size_t ndagger_sizes;
  const double *dagger_ms;
  void *ctx; /* the suite's inputs for one size, passed to the functions */
  /* Makes the inputs for size n (tiles of bench_tile_size(n)). Returns 0,
   * or 1 after printing why; close is called either way. */
  int (*open)(void *ctx, struct tarn_rt *rt, size_t n, unsigned threads);
  void (*close)(void *ctx);
  /* Runs `op` once in tarn and in the C loop and compares the results.
   * Returns 0, or 1 after printing why. */
  int (*check)(void *ctx, int op);
  /* One sample of variant v of `op`: its time in seconds into *t, the
   * minor page faults added to r->faults. Returns 0, or 1 after printing
   * why. */
  int (*sample)(void *ctx, int op, int v, loop_row *r, double *t);
} loop_suite;

/* Runs the suite: every wanted size and operation (--sizes, --filter),
 * then its goals. Returns 0, or 1 when something failed (printed). */
int loop_suite_run(bench_run *run, const loop_suite *suite);

/* A peer's loop over n x n doubles: writes `out` (NULL for a reduction)
 * and returns a reduction's result (else anything). */
typedef double (*loop_kernel)(void *ctx, int op, int omp, double *out);

/* Times `kernel` for peer variant v of an operation with `rows`: into a
 * fresh mapping of n x n doubles (the fresh variants of an operation with
 * an output), else into `touched`; the time in seconds into *t, the page
 * faults added to r->faults, the kernel's result into *result. Returns 0,
 * or 1 after printing why (naming `suite`). */
int loop_peer_sample(const char *suite, enum loop_rows rows, int v, size_t n,
                     double *touched, loop_kernel kernel, void *ctx, int op,
                     loop_row *r, double *t, double *result);

#endif
