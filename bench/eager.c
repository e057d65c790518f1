/* eager.c: the `eager` suite of `tarn bench` (BENCH.md's goal "eager
 * freeing"): three workloads with temporaries, each run with eager freeing
 * on (tarn_rt_options.eager_free = 1, the default: a ref is freed when its
 * last task ends) and off (0: the runtime keeps its references until the
 * region ends), reporting the time and the peak pool memory of each, and
 * the live set computed from the workload's operations.
 *
 * - stencil x8: B_k = the 3 x 3 Wrap neighbourhood sum of B_{k-1}, k = 1..8;
 *   the program destroys B_{k-1} right after submitting the step that
 *   reads it.
 * - qr x3: orthogonal (subspace) iteration, three times X = A Q, X = QR
 *   (tarn_matrix_qr, giving the T factors), Q = the thin Q of X
 *   (tarn_matrix_qr_q); Q and then X and T are destroyed as soon as their
 *   last reader is submitted (the QR calls wait, so that is after they
 *   return). A is destroyed after the last product is submitted.
 * - array chain: y = sin(x), z = 2y + 1, w = z + x, s = sum(w), each
 *   intermediate destroyed right after the operation that reads it last.
 *
 * Peak pool memory is the pool's peak of live bytes during the region
 * (tarn_region_stats.live_peak_bytes): the bytes of objects alive, without
 * the pool's recycling cache of freed buffers. The cache counts as resident
 * (tarn_region_stats.peak_bytes, reported as resident_mib for reference):
 * here each mode has a runtime of its own and every sample repeats the same
 * allocations, so the cache only holds buffers the next allocations take
 * back and the resident peak happens to equal the live one; but a region
 * that follows a different one starts with the earlier one's freed buffers
 * in the cache (up to 256 MiB) and its resident peak counts them (stencil
 * x8 at N=1024 right after one at N=4096 in one runtime: 204 MiB resident,
 * 16 MiB live). The cache stays on (the default), so the times are those a
 * program sees.
 *
 * Each sample makes its inputs in a region of its own (untimed, waited),
 * then times one region from tarn_region_begin to tarn_region_wait. The two
 * modes have a runtime each (bench_rt_options, eager_free set) and their
 * samples alternate, after one warm-up sample each that also checks the
 * result. Peak figures are the largest over the samples. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tarn.h"

#define STENCIL_STEPS 8
#define QR_STEPS 3
#define MiB ((double)(1u << 20))

/* ---- the live set, computed from the operations ------------------------
 *
 * A workload is described as the sequence of its operations, in program
 * order, each with the matrices it uses (reads or writes), plus the matrices
 * that exist before the region (inputs) and those the program keeps after
 * it (results). Run one operation after another, a matrix occupies memory
 * from its first use (tiles get memory when first written; an input from
 * the start) to its last use (the program releases it right after
 * submitting its last reader; a result to the end). The live set is the
 * largest sum, over the operations, of the bytes of the matrices alive
 * while that operation runs: an operation needs its inputs and its output
 * at once. The bytes of a matrix are those the pool charges for its tiles
 * (each tile rounded up to whole pages).
 *
 * The runtime works by tiles, not by whole operations, so it can do better
 * and worse than this. Better: an input tile is freed when its last reader
 * tile ends, before the whole operation is done (in the array chain, y's
 * tiles go while z's are made, so about two matrices and a tile are live
 * where the operation-level count says three). Worse: with two workers, a
 * tile task of step k+1 may start as soon as the tiles it reads are written,
 * while tiles of step k-1 still wait for their last reader; then tiles of
 * three consecutive matrices are live (a stencil step has two). So the
 * parallel schedule can exceed the sequential live set; the scheduler runs
 * the oldest ready task first, so such overlap is limited to the few tasks
 * at a step's boundary, and the goal's 10 % above the live set is the room
 * for it (at N=4096, 12 tiles of 512 x 512 over two matrices). In practice
 * tile-level freeing wins: measured peaks are at or below the live set. The
 * pool counts a task's output tile from the task's start, but not the
 * workers' scratch memory, where stencil halos and QR work arrays live. */

enum { PLAN_MATS = 32, PLAN_OPS = 16, PLAN_USES = 4 };

struct plan {
  size_t bytes[PLAN_MATS];
  int input[PLAN_MATS], result[PLAN_MATS];
  size_t nmats;
  int use[PLAN_OPS][PLAN_USES]; /* matrix indices, -1 unused */
  size_t nops;
};

/* The bytes the pool charges for an m x n matrix of mb x nb tiles. */
static size_t matrix_bytes(size_t m, size_t n, size_t mb, size_t nb) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
  for (size_t i = 0; i < m; i += mb)
    for (size_t j = 0; j < n; j += nb) {
      size_t rows = m - i < mb ? m - i : mb, cols = n - j < nb ? n - j : nb;
      size_t tile = rows * cols * sizeof(double);
      total += (tile + page - 1) / page * page;
    }
  return total;
}

static int plan_matrix(struct plan *p, size_t bytes, int input) {
  if (p->nmats == PLAN_MATS) return -1;
  p->bytes[p->nmats] = bytes;
  p->input[p->nmats] = input;
  p->result[p->nmats] = 0;
  return (int)p->nmats++;
}

/* Appends an operation using the matrices a, b, c (-1: none). */
static void plan_op(struct plan *p, int a, int b, int c) {
  if (p->nops == PLAN_OPS) return;
  int *u = p->use[p->nops++];
  u[0] = a;
  u[1] = b;
  u[2] = c;
  u[3] = -1;
}

/* The live set (see above) and the bytes of every matrix (what keeping all
 * of them to the end costs). */
static void plan_sets(const struct plan *p, size_t *live, size_t *all) {
  long first[PLAN_MATS], last[PLAN_MATS];
  *all = 0;
  for (size_t m = 0; m < p->nmats; m++) {
    first[m] = p->input[m] ? -1 : (long)p->nops;
    last[m] = p->result[m] ? (long)p->nops : -1;
    *all += p->bytes[m];
  }
  for (size_t o = 0; o < p->nops; o++)
    for (int k = 0; k < PLAN_USES; k++) {
      int m = p->use[o][k];
      if (m < 0) continue;
      if ((long)o < first[m]) first[m] = (long)o;
      if ((long)o > last[m]) last[m] = (long)o;
    }
  *live = 0;
  for (size_t o = 0; o < p->nops; o++) {
    size_t sum = 0;
    for (size_t m = 0; m < p->nmats; m++)
      if (first[m] <= (long)o && (long)o <= last[m]) sum += p->bytes[m];
    if (sum > *live) *live = sum;
  }
}

/* ---- the workloads -------------------------------------------------------
 */

/* One sample's matrices: inputs made in setup (the run takes them over),
 * the result the run leaves (destroyed after the clock), and a scalar. */
struct state {
  tarn_rt *rt;
  size_t n, b;
  tarn_matrix *a, *x; /* inputs */
  tarn_matrix *result;
  double value;  /* the run's scalar result (array chain) */
  double expect; /* what the check wants, computed in setup */
};

struct workload {
  const char *label; /* in the row name */
  /* Makes the inputs (waited for); with `check`, also s->expect. */
  int (*setup)(struct state *s, int check);
  /* Submits the workload into the current region (may call waiting
   * operations); returns the first failure. */
  int (*run)(struct state *s);
  /* Compares the result with s->expect; 0 or 1 after printing why. */
  int (*check)(const struct state *s);
  void (*plan)(struct plan *p, size_t n, size_t b);
};

static int tarn_failed(const char *what, int status) {
  return bench_tarn_failed("eager", what, status);
}

/* Makes a as rand(seed_a) and, when x is wanted, x as rand(seed_x), in a
 * region of their own, and waits. */
static int make_inputs(struct state *s, uint64_t seed_a, int with_x,
                       uint64_t seed_x) {
  tarn_region *region;
  int rc = tarn_region_begin(s->rt, &region);
  if (rc != 0) return tarn_failed("tarn_region_begin", rc);
  int made = tarn_matrix_rand(s->rt, s->n, s->n, s->b, s->b, seed_a, &s->a);
  if (made == 0 && with_x)
    made = tarn_matrix_rand(s->rt, s->n, s->n, s->b, s->b, seed_x, &s->x);
  rc = tarn_region_wait(region, NULL);
  if (made != 0 || rc != 0)
    return tarn_failed("making the inputs", made != 0 ? made : rc);
  return 0;
}

static int expect_close(const struct state *s, const char *what, double got,
                        double tol) {
  if (bench_close(got, s->expect, tol)) return 0;
  fprintf(stderr, "tarn bench: eager: N=%zu %s is %.17g, not %.17g\n", s->n,
          what, got, s->expect);
  return 1;
}

/* stencil x8. Wrap keeps the total: each element goes into 9 sums, so
 * sum(B_8) = 9^8 sum(B_0). */
static int stencil_setup(struct state *s, int check) {
  if (make_inputs(s, 1, 0, 0) != 0) return 1;
  if (!check) return 0;
  double sum;
  int rc = tarn_matrix_sum(s->a, &sum);
  if (rc != 0) return tarn_failed("tarn_matrix_sum", rc);
  s->expect = sum * pow(9.0, STENCIL_STEPS);
  return 0;
}

static int stencil_run(struct state *s) {
  tarn_stencil st;
  int rc = tarn_stencil_init(&st, 1, TARN_BOUNDARY_WRAP, 0.0);
  tarn_matrix *cur = s->a;
  s->a = NULL;
  for (int k = 0; k < STENCIL_STEPS && rc == 0; k++) {
    tarn_matrix *next = NULL;
    rc = tarn_stencil_sum(&st, cur, &next);
    tarn_matrix_destroy(cur); /* its tiles go when the step's tasks end */
    cur = next;
  }
  s->result = cur;
  return rc;
}

static int stencil_check(const struct state *s) {
  double sum;
  int rc = tarn_matrix_sum(s->result, &sum);
  if (rc != 0) return tarn_failed("tarn_matrix_sum", rc);
  return expect_close(s, "stencil x8: sum(B_8)", sum, 1e-9);
}

static void stencil_plan(struct plan *p, size_t n, size_t b) {
  size_t m = matrix_bytes(n, n, b, b);
  int prev = plan_matrix(p, m, 1); /* B_0 */
  for (int k = 0; k < STENCIL_STEPS; k++) {
    int next = plan_matrix(p, m, 0);
    plan_op(p, prev, next, -1);
    prev = next;
  }
  if (prev >= 0) p->result[prev] = 1;
}

/* qr x3: Q holds orthonormal columns, so ||Q||_F = sqrt(N). */
static int qr_setup(struct state *s, int check) {
  s->expect = sqrt((double)s->n);
  (void)check;
  return make_inputs(s, 2, 1, 3); /* A, and Q_0 in x */
}

static int qr_run(struct state *s) {
  tarn_matrix *a = s->a, *q = s->x;
  s->a = s->x = NULL;
  int rc = 0;
  for (int k = 1; k <= QR_STEPS && rc == 0; k++) {
    tarn_matrix *x = NULL, *t = NULL;
    rc = tarn_matrix_gemm(a, TARN_NO_TRANS, q, TARN_NO_TRANS, 1.0, 0.0, &x);
    tarn_matrix_destroy(q);
    q = NULL;
    if (k == QR_STEPS) {
      tarn_matrix_destroy(a);
      a = NULL;
    }
    if (rc == 0) rc = tarn_matrix_qr(x, 0, &t);
    if (rc == 0) rc = tarn_matrix_qr_q(x, t, &q);
    tarn_matrix_destroy(t);
    tarn_matrix_destroy(x);
  }
  tarn_matrix_destroy(a);
  s->result = q;
  return rc;
}

static int qr_check(const struct state *s) {
  double norm;
  int rc = tarn_matrix_norm(s->result, TARN_NORM_FRO, &norm);
  if (rc != 0) return tarn_failed("tarn_matrix_norm", rc);
  return expect_close(s, "qr x3: ||Q||_F", norm, 1e-8);
}

static void qr_plan(struct plan *p, size_t n, size_t b) {
  size_t m = matrix_bytes(n, n, b, b);
  size_t ib = b < 32 ? b : 32, mt = (n + b - 1) / b;
  /* as tarn_matrix_qr's for a square X (no tree, tarn/linalg.h) */
  size_t tbytes = matrix_bytes(mt * ib, n, ib, b);
  int a = plan_matrix(p, m, 1), q = plan_matrix(p, m, 1);
  for (int k = 0; k < QR_STEPS; k++) {
    int x = plan_matrix(p, m, 0), t = plan_matrix(p, tbytes, 0);
    plan_op(p, a, q, x);  /* X = A Q */
    plan_op(p, x, t, -1); /* QR of X, T made */
    q = plan_matrix(p, m, 0);
    plan_op(p, x, t, q); /* the thin Q */
  }
  if (q >= 0) p->result[q] = 1;
}

/* array chain: s = sum(2 sin(x) + 1 + x), checked against a plain loop
 * (libm's sin; tarn's is within 4 ulp of it) summed in long double. */
static int chain_setup(struct state *s, int check) {
  if (make_inputs(s, 4, 0, 0) != 0) return 1;
  if (!check) return 0;
  size_t count = s->n * s->n;
  double *buf = malloc(count * sizeof *buf);
  if (buf == NULL) {
    fprintf(stderr, "tarn bench: eager: out of memory\n");
    return 1;
  }
  int rc = tarn_matrix_to_buffer(s->a, buf, s->n);
  long double sum = 0;
  for (size_t k = 0; rc == 0 && k < count; k++)
    sum += 2.0 * sin(buf[k]) + 1.0 + buf[k];
  free(buf);
  if (rc != 0) return tarn_failed("tarn_matrix_to_buffer", rc);
  s->expect = (double)sum;
  return 0;
}

static int chain_run(struct state *s) {
  tarn_matrix *x = s->a, *y = NULL, *z = NULL, *w = NULL;
  s->a = NULL;
  int rc = tarn_matrix_sin(x, &y);
  if (rc == 0) rc = tarn_matrix_axpb(y, 2.0, 1.0, &z);
  tarn_matrix_destroy(y);
  if (rc == 0) rc = tarn_matrix_add(z, x, &w);
  tarn_matrix_destroy(z);
  tarn_matrix_destroy(x);
  if (rc == 0) rc = tarn_matrix_sum(w, &s->value); /* waits */
  tarn_matrix_destroy(w);
  return rc;
}

static int chain_check(const struct state *s) {
  return expect_close(s, "array chain: sum(w)", s->value, 1e-9);
}

static void chain_plan(struct plan *p, size_t n, size_t b) {
  size_t m = matrix_bytes(n, n, b, b);
  int x = plan_matrix(p, m, 1), y = plan_matrix(p, m, 0);
  int z = plan_matrix(p, m, 0), w = plan_matrix(p, m, 0);
  plan_op(p, x, y, -1); /* y = sin(x) */
  plan_op(p, y, z, -1); /* z = 2y + 1 */
  plan_op(p, z, x, w);  /* w = z + x */
  plan_op(p, w, -1, -1);
}

enum { W_STENCIL, W_QR, W_CHAIN, W_COUNT };

static const struct workload workloads[W_COUNT] = {
    [W_STENCIL] = {"stencil x8", stencil_setup, stencil_run, stencil_check,
                   stencil_plan},
    [W_QR] = {"qr x3", qr_setup, qr_run, qr_check, qr_plan},
    [W_CHAIN] = {"array chain", chain_setup, chain_run, chain_check,
                 chain_plan},
};

/* Default sizes by workload (--sizes replaces them for all three). QR runs
 * at N=1024 only: at N=2048 one sample of three iterations takes about
 * 1.5 s on 2 cores, at 4096 about eight times that. */
static const size_t stencil_sizes[] = {1024, 4096};
static const size_t qr_sizes[] = {1024};
static const size_t chain_sizes[] = {1024, 4096};

/* ---- measuring -------------------------------------------------------- */

enum { M_EAGER, M_KEPT, M_COUNT };
static const char *const mode_names[M_COUNT] = {"eager", "kept"};

/* One mode of one workload at one size: its runtime and its figures. */
struct mode {
  tarn_rt *rt;
  int wanted;
  char name[160];
  double s[BENCH_SAMPLES_MAX];
  size_t peak;     /* largest live_peak_bytes over the samples */
  size_t resident; /* largest peak_bytes (with the cache) */
};

/* One sample: inputs (untimed), the workload's region (timed); with
 * `check`, the result is checked after the clock. */
static int sample(struct mode *m, const struct workload *w, size_t n, size_t b,
                  int check, double *t) {
  struct state s = {.rt = m->rt, .n = n, .b = b};
  int failed = w->setup(&s, check);
  tarn_region_stats st;
  memset(&st, 0, sizeof st);
  uint64_t t0 = bench_now_ns(), t1 = t0;
  if (!failed) {
    tarn_region *region;
    int rc = tarn_region_begin(m->rt, &region);
    if (rc != 0) {
      failed = tarn_failed("tarn_region_begin", rc);
    } else {
      int ran = w->run(&s);
      rc = tarn_region_wait(region, &st);
      t1 = bench_now_ns();
      if (ran != 0 || rc != 0)
        failed = tarn_failed(w->label, ran != 0 ? ran : rc);
    }
  }
  if (!failed) {
    *t = (double)(t1 - t0) * 1e-9;
    if (st.live_peak_bytes > m->peak) m->peak = st.live_peak_bytes;
    if (st.peak_bytes > m->resident) m->resident = st.peak_bytes;
    if (check) failed = w->check(&s);
  }
  tarn_matrix_destroy(s.a);
  tarn_matrix_destroy(s.x);
  tarn_matrix_destroy(s.result);
  return failed;
}

static int mode_open(bench_run *run, struct mode *m, int eager) {
  tarn_rt_options o;
  int rc = bench_rt_options(run, &o);
  if (rc != 0) return tarn_failed("tarn_rt_options_init", rc);
  o.eager_free = eager;
  rc = tarn_rt_create(&o, &m->rt);
  return rc == 0 ? 0 : tarn_failed("tarn_rt_create", rc);
}

/* What the goals need from one workload at one size. */
struct figure {
  size_t n;
  int w;
  double eager_over_live; /* -1: not measured */
  double saving;          /* kept peak / eager peak, -1: not measured */
};

static int report(bench_run *run, const struct mode *m, size_t live,
                  size_t all) {
  bench_extra extra[5] = {
      {"peak_mib", (double)m->peak / MiB},
      {"live_mib", (double)live / MiB},
      {"peak_over_live", (double)m->peak / (double)live},
      {"all_mib", (double)all / MiB},
      {"resident_mib", (double)m->resident / MiB},
  };
  return bench_report(run, m->name, m->s, run->samples, extra, 5) == NULL;
}

/* Both modes of workload w at size n: a warm-up sample each (checked),
 * then the samples, alternating between the modes. */
static int measure(bench_run *run, int wi, size_t n, struct figure *f) {
  const struct workload *w = &workloads[wi];
  size_t b = bench_tile_size(n);
  struct mode modes[M_COUNT];
  memset(modes, 0, sizeof modes);
  *f = (struct figure){n, wi, -1, -1};
  int any = 0, failed = 0;
  for (int k = 0; k < M_COUNT; k++) {
    struct mode *m = &modes[k];
    snprintf(m->name, sizeof m->name, "eager/tarn/N=%zu (block %zu)/%s (%s)", n,
             b, w->label, mode_names[k]);
    m->wanted = bench_wanted(run, m->name);
    any |= m->wanted;
  }
  if (!any) return 0;
  for (int k = 0; k < M_COUNT && !failed; k++)
    if (modes[k].wanted) failed = mode_open(run, &modes[k], k == M_EAGER);
  for (size_t i = 0; i <= run->samples && !failed; i++)
    for (int k = 0; k < M_COUNT && !failed; k++) {
      struct mode *m = &modes[k];
      if (!m->wanted) continue;
      double t = 0;
      failed = sample(m, w, n, b, i == 0, &t);
      if (i > 0) m->s[i - 1] = t;
    }
  for (int k = 0; k < M_COUNT; k++) {
    int rc = tarn_rt_destroy(modes[k].rt);
    if (rc != 0 && !failed) failed = tarn_failed("tarn_rt_destroy", rc);
  }
  if (failed) return 1;
  struct plan p;
  memset(&p, 0, sizeof p);
  w->plan(&p, n, b);
  size_t live, all;
  plan_sets(&p, &live, &all);
  for (int k = 0; k < M_COUNT; k++)
    if (modes[k].wanted && report(run, &modes[k], live, all) != 0) return 1;
  if (modes[M_EAGER].wanted)
    f->eager_over_live = (double)modes[M_EAGER].peak / (double)live;
  if (modes[M_EAGER].wanted && modes[M_KEPT].wanted)
    f->saving =
        bench_ratio((double)modes[M_KEPT].peak, (double)modes[M_EAGER].peak);
  return 0;
}

static void print_goals(const struct figure *f, size_t count) {
  size_t shown = 0; /* figures not filtered out: without any, no heading */
  for (size_t i = 0; i < count; i++)
    shown += !(f[i].eager_over_live < 0 && f[i].saving < 0);
  if (shown == 0) return;
  bench_printf(
      "\nGoals (peak: the pool's live bytes, its recycling cache left "
      "out; live set: from the operations, run one after another):\n");
  for (size_t i = 0; i < count; i++) {
    if (f[i].eager_over_live < 0 && f[i].saving < 0) continue;
    char what[96];
    snprintf(what, sizeof what, "N=%zu %s eager: peak / live set", f[i].n,
             workloads[f[i].w].label);
    bench_goal(what, f[i].eager_over_live, "x", 1, 1.1);
    if (f[i].saving < 0) continue;
    char figure[32];
    snprintf(what, sizeof what, "N=%zu %s: kept peak / eager peak", f[i].n,
             workloads[f[i].w].label);
    snprintf(figure, sizeof figure, "%.2fx", f[i].saving);
    bench_printf("  %-42s %12s   (what eager freeing saves)\n", what, figure);
  }
}

int bench_eager(bench_run *run) {
  static const struct {
    const size_t *sizes;
    size_t count;
  } defaults[W_COUNT] = {
      [W_STENCIL] = {stencil_sizes, sizeof stencil_sizes / sizeof(size_t)},
      [W_QR] = {qr_sizes, sizeof qr_sizes / sizeof(size_t)},
      [W_CHAIN] = {chain_sizes, sizeof chain_sizes / sizeof(size_t)},
  };
  static struct figure figures[W_COUNT * BENCH_SIZES_MAX];
  size_t count = 0;
  int failed = 0;
  for (int w = 0; w < W_COUNT && !failed; w++) {
    const size_t *sizes;
    size_t nsizes =
        bench_sizes(run, defaults[w].sizes, defaults[w].count, &sizes);
    for (size_t s = 0; s < nsizes && !failed; s++)
      failed = measure(run, w, sizes[s], &figures[count++]);
  }
  print_goals(figures, count);
  return failed;
}
