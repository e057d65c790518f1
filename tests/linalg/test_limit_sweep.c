/* test_limit_sweep.c: every linalg call under every memory limit, a page
 * apart, from the first that holds its operands' upload up to a little
 * past the first that runs it. At each limit the call either returns 0,
 * its matrices readable afterwards (none left cancelled by a task that
 * could never fit) and as a run without a limit leaves them (within
 * 1e-10 of the largest element: a product without a limit may add its
 * groups of layers in another order), or TARN_ENOMEM with every matrix it
 * was given as it was, no new one made and no task submitted: nothing is
 * lost (nor any work done) to a limit a
 * task can never run under, and the tightest limit that runs a call
 * gives its result. Where a limit was refused and the next page runs,
 * some task of that run pinned more than the refused limit (tarn_rt_stats'
 * task_pinned_peak): no check refuses a limit the largest task fits
 * under. Shapes with edge tiles, tall and wide, one tile row
 * or column, so that each call's check of its largest tasks
 * (linalg_internal.h, tarn__task_fits) is seen to cover every task it
 * submits. */
#include <lapacke.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linalg/linalg_internal.h"
#include "support.h"
#include "tarn.h"

/* The host operands of one shape (M x N in tiles of NB; square ones N x
 * N), made once: A general, S SPD with its Cholesky factor L and LU
 * factors and pivots, B and C right-hand sides of NRHS columns, and the
 * QR factors of A (QA, and T of QT's shape). */
struct operands {
  size_t m, n, nb;
  double *a, *s, *l, *lu, *b, *c, *qa, *qt;
  size_t *piv;
  size_t qt_m, qt_n, qt_mb, qt_nb;
};

enum { NRHS = 40, RHS_TILE = 20, QR_IB = 8, SLOTS = 3 };

/* One run: the matrices handed to the call, the host data each started
 * from, and the call's new matrix. */
struct run {
  tarn_rt *rt;
  tarn_matrix *m[SLOTS];
  const double *from[SLOTS];
  tarn_matrix *out;
  bool uploaded;
  uint64_t submitted; /* tasks submitted by the uploads */
};

/* Uploads `buf` (rows x cols, tiles mb x nb) into slot k; a limit below
 * its tiles refuses it, and the run is skipped. */
static void put(struct run *r, size_t k, size_t rows, size_t cols, size_t mb,
                size_t nb, const double *buf) {
  if (!r->uploaded) return;
  if (tarn_matrix_from_buffer(r->rt, rows, cols, mb, nb, buf, rows, &r->m[k]) !=
      0) {
    r->uploaded = false;
    return;
  }
  r->from[k] = buf;
  tarn_rt_stats st;
  assert_int_equal(tarn_rt_stats_get(r->rt, &st), 0);
  r->submitted = st.submitted;
}

/* The operations; each uploads its operands and returns the call's
 * status (or anything when r->uploaded turned false). */
typedef int (*sweep_op)(const struct operands *o, struct run *r);

#define SQUARE(o, r, k, buf) put(r, k, (o)->n, (o)->n, (o)->nb, (o)->nb, buf)
#define GENERAL(o, r, k, buf) put(r, k, (o)->m, (o)->n, (o)->nb, (o)->nb, buf)
#define RHS(o, r, k, rows, buf) put(r, k, rows, NRHS, (o)->nb, RHS_TILE, buf)
#define FACTORS(o, r)                                                 \
  do {                                                                \
    GENERAL(o, r, 0, (o)->qa);                                        \
    put(r, 1, (o)->qt_m, (o)->qt_n, (o)->qt_mb, (o)->qt_nb, (o)->qt); \
  } while (0)

static int op_gemm(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->a);
  RHS(o, r, 1, o->m, o->b);
  RHS(o, r, 2, o->n, o->c);
  return r->uploaded ? tarn_matrix_gemm(r->m[0], TARN_TRANS, r->m[1],
                                        TARN_NO_TRANS, 1.0, 1.0, &r->m[2])
                     : 0;
}
static int op_gemv(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->a);
  put(r, 1, o->n, 1, o->nb, 1, o->b);
  put(r, 2, o->m, 1, o->nb, 1, o->c);
  return r->uploaded ? tarn_matrix_gemv(r->m[0], TARN_NO_TRANS, r->m[1], 1.0,
                                        1.0, &r->m[2])
                     : 0;
}
static int op_syrk_ata(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->a);
  return r->uploaded ? tarn_matrix_syrk_ata(r->m[0], &r->out) : 0;
}
static int op_cholesky(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->s);
  return r->uploaded ? tarn_matrix_cholesky(r->m[0], NULL) : 0;
}
static int op_lu(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->a);
  size_t piv[256];
  assert_true(o->m <= 256 && o->n <= 256);
  return r->uploaded ? tarn_matrix_lu(r->m[0], piv, NULL) : 0;
}
static int op_solve(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->s);
  RHS(o, r, 1, o->n, o->b);
  return r->uploaded ? tarn_matrix_solve(r->m[0], r->m[1], NULL) : 0;
}
static int op_lu_solve(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->lu);
  RHS(o, r, 1, o->n, o->b);
  return r->uploaded
             ? tarn_matrix_lu_solve(r->m[0], o->piv, TARN_TRANS, r->m[1], NULL)
             : 0;
}
static int op_cholesky_solve(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  RHS(o, r, 1, o->n, o->b);
  return r->uploaded ? tarn_matrix_cholesky_solve(r->m[0], r->m[1], NULL) : 0;
}
static int op_triangular_solve(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  RHS(o, r, 1, o->n, o->b);
  return r->uploaded
             ? tarn_matrix_triangular_solve(r->m[0], TARN_LOWER, TARN_TRANS,
                                            TARN_NON_UNIT, r->m[1], NULL)
             : 0;
}
static int op_permute_rows(const struct operands *o, struct run *r) {
  RHS(o, r, 0, o->n, o->b);
  return r->uploaded
             ? tarn_matrix_permute_rows(r->m[0], o->piv, o->n, TARN_NO_TRANS)
             : 0;
}
static int op_triangular_inverse(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  return r->uploaded ? tarn_matrix_triangular_inverse(r->m[0], TARN_LOWER,
                                                      TARN_NON_UNIT, NULL)
                     : 0;
}
static int op_cholesky_inverse(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  return r->uploaded ? tarn_matrix_cholesky_inverse(r->m[0], NULL) : 0;
}
static int op_lu_inverse(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->lu);
  return r->uploaded ? tarn_matrix_lu_inverse(r->m[0], o->piv, NULL) : 0;
}
static int op_inverse(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->s);
  return r->uploaded ? tarn_matrix_inverse(r->m[0], NULL) : 0;
}
/* QR gathers the domains of short tiles only where their largest task
 * takes at most an eighth of the limit (src/linalg/qr.c), which none of
 * the sweep's limits allows: its runs keep the flat layout, and so does
 * the run without a limit they are compared with. */
static int op_qr(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->a);
  if (!r->uploaded) return 0;
  bool unlimited = tarn_pool_mem_limit(tarn_rt_pool(r->rt)) == 0;
  tarn__qr_gather_short_columns(!unlimited);
  int rc = tarn_matrix_qr(r->m[0], QR_IB, &r->out);
  tarn__qr_gather_short_columns(true);
  return rc;
}
static int op_qr_multiply(const struct operands *o, struct run *r) {
  FACTORS(o, r);
  RHS(o, r, 2, o->m, o->b);
  return r->uploaded ? tarn_matrix_qr_multiply(r->m[0], r->m[1], TARN_LEFT,
                                               TARN_TRANS, r->m[2])
                     : 0;
}
static int op_qr_q(const struct operands *o, struct run *r) {
  FACTORS(o, r);
  return r->uploaded ? tarn_matrix_qr_q(r->m[0], r->m[1], &r->out) : 0;
}
static int op_qr_solve(const struct operands *o, struct run *r) {
  FACTORS(o, r);
  RHS(o, r, 2, o->m, o->b);
  return r->uploaded ? tarn_matrix_qr_solve(r->m[0], r->m[1], TARN_NO_TRANS,
                                            r->m[2], &r->out, NULL)
                     : 0;
}
static int op_qr_min_norm(const struct operands *o, struct run *r) {
  FACTORS(o, r);
  RHS(o, r, 2, o->n, o->b);
  return r->uploaded ? tarn_matrix_qr_solve(r->m[0], r->m[1], TARN_TRANS,
                                            r->m[2], &r->out, NULL)
                     : 0;
}
static int op_lu_rcond(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->lu);
  double rcond;
  return r->uploaded
             ? tarn_matrix_lu_rcond(r->m[0], o->piv, TARN_NORM_ONE, 1.0, &rcond)
             : 0;
}
static int op_cholesky_rcond(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  double rcond;
  return r->uploaded ? tarn_matrix_cholesky_rcond(r->m[0], 1.0, &rcond) : 0;
}
static int op_triangular_rcond(const struct operands *o, struct run *r) {
  SQUARE(o, r, 0, o->l);
  double rcond;
  return r->uploaded
             ? tarn_matrix_triangular_rcond(r->m[0], TARN_LOWER, TARN_NON_UNIT,
                                            TARN_NORM_INF, &rcond)
             : 0;
}
static int op_qr_ata_inverse(const struct operands *o, struct run *r) {
  GENERAL(o, r, 0, o->qa);
  return r->uploaded ? tarn_matrix_qr_ata_inverse(r->m[0], &r->out, NULL) : 0;
}

/* Which shapes an operation takes. */
enum { ANY, SQUARE_ONLY, TALL };

static const struct {
  const char *name;
  sweep_op op;
  int shapes;
} ops[] = {
    {"gemm", op_gemm, ANY},
    {"gemv", op_gemv, ANY},
    {"syrk_ata", op_syrk_ata, ANY},
    {"cholesky", op_cholesky, SQUARE_ONLY},
    {"lu", op_lu, ANY},
    {"solve", op_solve, SQUARE_ONLY},
    {"lu_solve", op_lu_solve, SQUARE_ONLY},
    {"cholesky_solve", op_cholesky_solve, SQUARE_ONLY},
    {"triangular_solve", op_triangular_solve, SQUARE_ONLY},
    {"permute_rows", op_permute_rows, SQUARE_ONLY},
    {"triangular_inverse", op_triangular_inverse, SQUARE_ONLY},
    {"cholesky_inverse", op_cholesky_inverse, SQUARE_ONLY},
    {"lu_inverse", op_lu_inverse, SQUARE_ONLY},
    {"inverse", op_inverse, SQUARE_ONLY},
    {"qr", op_qr, ANY},
    {"qr_multiply", op_qr_multiply, ANY},
    {"qr_q", op_qr_q, ANY},
    {"qr_solve", op_qr_solve, TALL},
    {"qr_min_norm", op_qr_min_norm, TALL},
    {"lu_rcond", op_lu_rcond, SQUARE_ONLY},
    {"cholesky_rcond", op_cholesky_rcond, SQUARE_ONLY},
    {"triangular_rcond", op_triangular_rcond, SQUARE_ONLY},
    {"qr_ata_inverse", op_qr_ata_inverse, TALL},
};

/* The matrix's elements in a malloc'ed buffer (ld its rows), or NULL
 * when it does not read back. */
static double *contents(tarn_matrix *x) {
  size_t count = tarn_matrix_rows(x) * tarn_matrix_cols(x);
  double *got = malloc(count * sizeof *got);
  assert_non_null(got);
  if (tarn_matrix_to_buffer(x, got, tarn_matrix_rows(x)) != 0) {
    free(got);
    return NULL;
  }
  return got;
}

/* What a run left: each slot's matrix and the new one (NULL where none),
 * as buffers. */
struct outcome {
  double *m[SLOTS + 1];
  size_t count[SLOTS + 1];
  uint64_t pinned_peak; /* tarn_rt_stats' task_pinned_peak */
};

static void outcome_free(struct outcome *w) {
  for (size_t s = 0; s <= SLOTS; s++) free(w->m[s]);
}

/* Whether `got` holds what `want` does, each element within 1e-10 of the
 * largest (a product in groups of layers, which only a run without a limit
 * makes, adds in another order). */
static bool outcome_matches(const struct outcome *got,
                            const struct outcome *want) {
  for (size_t s = 0; s <= SLOTS; s++) {
    if ((got->m[s] == NULL) != (want->m[s] == NULL) ||
        got->count[s] != want->count[s])
      return false;
    double most = 1.0, diff = 0.0;
    for (size_t i = 0; i < want->count[s]; i++) {
      most = fmax(most, fabs(want->m[s][i]));
      diff = fmax(diff, fabs(got->m[s][i] - want->m[s][i]));
    }
    if (!(diff <= 1e-10 * most)) return false;
  }
  return true;
}

/* Operation k under `limit` (0: none) on `workers`: returns whether it ran
 * (0), its matrices then in *got; fails the test on anything but 0 with
 * readable matrices that match `want` (when not NULL) or TARN_ENOMEM with
 * the matrices as given. *uploaded says whether the operands fit. */
static bool sweep_run(const struct operands *o, size_t k, unsigned workers,
                      size_t limit, bool *uploaded, struct outcome *got,
                      const struct outcome *want) {
  struct run r = {.rt = test_rt(workers, limit), .uploaded = true};
  int rc = ops[k].op(o, &r);
  *uploaded = r.uploaded;
  *got = (struct outcome){{NULL}, {0}, 0};
  bool ok = true;
  if (!r.uploaded) {
    rc = TARN_ENOMEM;
  } else if (rc == 0) {
    for (size_t s = 0; s <= SLOTS; s++) {
      tarn_matrix *x = s < SLOTS ? r.m[s] : r.out;
      if (x == NULL) continue;
      got->m[s] = contents(x);
      got->count[s] = tarn_matrix_rows(x) * tarn_matrix_cols(x);
      ok = ok && got->m[s] != NULL;
    }
    ok = ok && (want == NULL || outcome_matches(got, want));
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(r.rt, &st), 0);
    got->pinned_peak = st.task_pinned_peak;
  } else {
    /* refused before any task of its own */
    tarn_rt_stats st;
    assert_int_equal(tarn_rt_stats_get(r.rt, &st), 0);
    ok = rc == TARN_ENOMEM && r.out == NULL && st.submitted == r.submitted;
    for (size_t s = 0; s < SLOTS; s++) {
      if (r.m[s] == NULL) continue;
      double *now = contents(r.m[s]);
      size_t count = tarn_matrix_rows(r.m[s]) * tarn_matrix_cols(r.m[s]);
      ok =
          ok && now != NULL && memcmp(now, r.from[s], count * sizeof *now) == 0;
      free(now);
    }
  }
  if (!ok)
    print_error(
        "%s of %zu x %zu in tiles of %zu on %u workers under %zu "
        "bytes: status %d, matrices %s\n",
        ops[k].name, o->m, o->n, o->nb, workers, limit, rc,
        rc == 0 ? "unreadable or not as without a limit"
                : "changed, or tasks submitted");
  assert_true(ok);
  for (size_t s = 0; s < SLOTS; s++) tarn_matrix_destroy(r.m[s]);
  tarn_matrix_destroy(r.out);
  assert_int_equal(tarn_rt_destroy(r.rt), 0);
  return rc == 0;
}

static void make_operands(struct operands *o, size_t m, size_t n, size_t nb,
                          uint64_t seed) {
  size_t rows = m > n ? m : n;
  *o = (struct operands){.m = m, .n = n, .nb = nb};
  o->a = test_random_matrix(m, n, 0.0, seed);
  o->b = test_random_matrix(rows, NRHS, 0.0, seed + 1);
  o->c = test_random_matrix(rows, NRHS, 0.0, seed + 2);
  o->s = test_spd_matrix(n, 1.0, seed + 3);
  o->l = malloc(n * n * sizeof *o->l);
  o->lu = malloc(n * n * sizeof *o->lu);
  o->piv = malloc(n * sizeof *o->piv);
  lapack_int *ipiv = malloc(n * sizeof *ipiv);
  assert_true(o->l && o->lu && o->piv && ipiv);
  memcpy(o->l, o->s, n * n * sizeof *o->l);
  memcpy(o->lu, o->s, n * n * sizeof *o->lu);
  assert_int_equal(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, o->l, (int)n),
                   0);
  assert_int_equal(
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, (int)n, (int)n, o->lu, (int)n, ipiv), 0);
  for (size_t i = 0; i < n; i++) o->piv[i] = (size_t)ipiv[i] - 1;
  free(ipiv);
  /* QR's factors, made without a limit */
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *qa = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, nb, nb, o->a, m, &qa), 0);
  assert_int_equal(tarn_matrix_qr(qa, QR_IB, &t), 0);
  o->qa = test_buffer_of(qa);
  o->qt = test_buffer_of(t);
  o->qt_m = tarn_matrix_rows(t);
  o->qt_n = tarn_matrix_cols(t);
  o->qt_mb = tarn_matrix_tile_rows(t);
  o->qt_nb = tarn_matrix_tile_cols(t);
  TEST_DESTROY_MATRICES(qa, t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

static void free_operands(struct operands *o) {
  double *all[] = {o->a, o->s, o->l, o->lu, o->b, o->c, o->qa, o->qt};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) free(all[k]);
  free(o->piv);
}

/* Every operation the shape takes, on 1 and 2 workers, page by page from
 * the first limit its operands upload under to two pages past the first
 * it runs under (which must come before the operands' size and a margin). */
static void sweep_shape(size_t m, size_t n, size_t nb, uint64_t seed) {
  struct operands o;
  make_operands(&o, m, n, nb, seed);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t most =
      (m * n + 2 * (m > n ? m : n) * NRHS) * sizeof(double) / page + 64;
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    if ((ops[k].shapes == SQUARE_ONLY && m != n) ||
        (ops[k].shapes == TALL && m < n))
      continue;
    for (unsigned workers = 1; workers <= 2; workers++) {
      struct outcome want, got;
      bool uploaded;
      assert_true(sweep_run(&o, k, workers, 0, &uploaded, &want, NULL));
      size_t first = 0;
      bool refused = false; /* the limit a page below: uploaded, refused */
      for (size_t p = 1; p <= most && (first == 0 || p <= first + 2); p++) {
        bool ran = sweep_run(&o, k, workers, p * page, &uploaded, &got, &want);
        if (ran && first == 0) {
          first = p;
          /* the check refused no limit its largest task fits under */
          if (refused && !(got.pinned_peak > (p - 1) * page))
            print_error(
                "%s of %zu x %zu in tiles of %zu refused %zu bytes, "
                "but no task pinned more than %llu\n",
                ops[k].name, m, n, nb, (p - 1) * page,
                (unsigned long long)got.pinned_peak);
          assert_true(!refused || got.pinned_peak > (p - 1) * page);
        }
        refused = uploaded && !ran;
        outcome_free(&got);
      }
      outcome_free(&want);
      if (first == 0)
        print_error("%s of %zu x %zu in tiles of %zu never ran\n", ops[k].name,
                    m, n, nb);
      assert_true(first > 0);
    }
  }
  free_operands(&o);
}

/* Square, with an edge tile of 16 (80 = 2 x 32 + 16), and of three
 * whole tile columns (a gemm of three whole tiles in the triangle's
 * algorithms, where the edge tiles of 80 make it no larger than a syrk's
 * two). */
static void test_sweep_square(void **state) {
  (void)state;
  sweep_shape(80, 80, 32, 1);
  sweep_shape(96, 96, 32, 4);
}

/* Three tile rows by two tile columns, the transposed shape, and one
 * tile column or row. */
static void test_sweep_tall_and_wide(void **state) {
  (void)state;
  sweep_shape(96, 64, 32, 2);
  sweep_shape(64, 96, 32, 3);
  sweep_shape(96, 24, 32, 5);
  sweep_shape(24, 96, 32, 6);
}

/* One tile, and whole tiles with edge tiles of 2 (66 = 64 + 2; 130 = 2 x
 * 64 + 2): where the edge tiles are that small, a task of two whole tiles
 * is larger than one of three that takes edge tiles, which is the largest
 * with the shapes above. */
static void test_sweep_small_edges(void **state) {
  (void)state;
  sweep_shape(32, 32, 32, 7);
  sweep_shape(66, 66, 64, 8);
  sweep_shape(130, 66, 64, 9);
  sweep_shape(66, 130, 64, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sweep_square),
      cmocka_unit_test(test_sweep_tall_and_wide),
      cmocka_unit_test(test_sweep_small_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
