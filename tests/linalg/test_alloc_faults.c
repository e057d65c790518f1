/* test_alloc_faults.c: tarn when its own allocations fail. The library's
 * calls to malloc, calloc, realloc, aligned_alloc, posix_memalign, strdup
 * and mmap, and to pthread_create (a thread is memory too), are wrapped at
 * link time (-Wl,--wrap, tests/CMakeLists.txt) so that the kth of them
 * fails, or the kth and every later one. The workloads run in a child
 * process per k:
 * - the pool's (refs and adopted objects under a limit, compressed spills,
 *   pins, prefetches, an escape): every call returns 0 or TARN_ENOMEM, and
 *   once allocations work again every ref made reads back its own bytes;
 * - linear algebra's (on a runtime under a memory limit that spills, and
 *   on one without a limit: array and stencil operations, Cholesky, LU (of
 *   a square and of a wide matrix) and
 *   QR with their solves and Q^T B, a triangular solve, condition estimates,
 *   determinants, inverses, row interchanges,
 *   matrix-vector products, the sum and the norms):
 *   every call returns 0 or TARN_ENOMEM (TARN_ECANCELED for a call whose
 *   input a failed call was to write); when every call succeeded, the
 *   results are the bits of the run without faults; once allocations work
 *   again, the matrix every call only read reads back bit for bit.
 * None may hang or crash, and each frees everything (the ASan build's leak
 * check at the child's exit). The children's exit statuses tell the parent
 * which property failed. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_POPULATE_READ, dl_iterate_phdr */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tarn.h"

/* ---- the wrapped allocators --------------------------------------------- */

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
int __real_posix_memalign(void **p, size_t align, size_t size);
char *__real_strdup(const char *s);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd,
                  off_t off);
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg);

static atomic_bool armed;      /* count and fail only while the workload runs */
static atomic_long calls;      /* allocations while armed */
static atomic_long fail_at;    /* the first to fail; 0: none */
static atomic_bool fail_after; /* every later one fails too */
static atomic_long failures;   /* allocations made to fail */
static atomic_bool fail_slowly; /* the failing one after 50 ms */

static bool fails(void) {
  if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false;
  long c = atomic_fetch_add(&calls, 1) + 1, k = atomic_load(&fail_at);
  if (k == 0 || c < k || (c > k && !atomic_load(&fail_after))) return false;
  atomic_fetch_add(&failures, 1);
  if (atomic_load(&fail_slowly)) /* what was submitted before runs */
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  errno = ENOMEM;
  return true;
}

void *__wrap_malloc(size_t size) {
  return fails() ? NULL : __real_malloc(size);
}
void *__wrap_calloc(size_t count, size_t size) {
  return fails() ? NULL : __real_calloc(count, size);
}
void *__wrap_realloc(void *p, size_t size) {
  return fails() ? NULL : __real_realloc(p, size);
}
void *__wrap_aligned_alloc(size_t align, size_t size) {
  return fails() ? NULL : __real_aligned_alloc(align, size);
}
int __wrap_posix_memalign(void **p, size_t align, size_t size) {
  return fails() ? ENOMEM : __real_posix_memalign(p, align, size);
}
char *__wrap_strdup(const char *s) { return fails() ? NULL : __real_strdup(s); }
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd,
                  off_t off) {
  return fails() ? MAP_FAILED : __real_mmap(addr, len, prot, flags, fd, off);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*start)(void *), void *arg) {
  return fails() ? EAGAIN : __real_pthread_create(thread, attr, start, arg);
}

/* ---- the workload -------------------------------------------------------- */

/* Tiles of 32: no kernel shares its work, so a run gives the same bits
 * every time. A: M x N; the right-hand sides N x NRHS and M x NRHS. */
enum { M = 128, N = 96, NB = 32, NRHS = 8 };

/* What a run leaves: its results when every call succeeded. */
struct outcome {
  double chol_x[N * NRHS], lu_x[N * NRHS], qr_x[N * NRHS], tri_x[N * NRHS];
  double perm[N * NRHS];  /* P^T of a random B with LU's pivots */
  double qt_b[M * NRHS];  /* Q^T of a random B with A's QR factors */
  double at_v[N], a_w[M]; /* the matrix-vector products */
  double sum, norm;
  double norms[3];       /* S's one-norm, A's one- and infinity-norms */
  double rcond[3];       /* from S's LU and Cholesky factors, and L alone */
  double logdet[2];      /* of S, from its LU and Cholesky factors */
  int sign;              /* of det S, from its LU factors */
  double inv[4][N * N];  /* S^-1 from its LU and Cholesky factors,
                            (A^T A)^-1 from A's QR factor, and L^-1 of
                            S's Cholesky factor */
  double a[M * N];       /* A as the run left it */
  double lu_wide[N * M]; /* LU's factors of the wide A^T */
  size_t piv_wide[N];    /* and its pivots */
};

/* The child's exit statuses. */
enum verdict {
  PASSED = 0,
  BAD_STATUS = 10,     /* a call returned a status it must not */
  WRONG_RESULT = 11,   /* every call succeeded with other bits */
  INPUT_CHANGED = 12,  /* A, only read, reads back otherwise */
  DESTROY_FAILED = 13, /* tarn_rt_destroy reported an error */
  NO_RUNTIME = 14,     /* the run without faults failed */
  TILE_OTHERWISE = 15  /* a failed solve left a tile of B neither X nor B */
};

/* A call fails the run at its first non-zero status, which must be one
 * a lack of memory explains. */
#define STEP(call)                                                \
  do {                                                            \
    if (rc == 0) {                                                \
      rc = (call);                                                \
      if (rc != 0 && rc != TARN_ENOMEM && rc != TARN_ECANCELED) { \
        fprintf(stderr, "line %d: %s: %s\n", __LINE__, #call,     \
                tarn_strerror(rc));                               \
        bad = true;                                               \
      }                                                           \
    }                                                             \
  } while (0)

/* Runs the workload with the allocator armed; fills *out when every call
 * succeeded. Returns the verdict so far (BAD_STATUS or PASSED) and sets
 * *rc_out to the first failure's status. */
static enum verdict run_workload(struct outcome *out, int *rc_out,
                                 const double *a_want, bool limited) {
  bool bad = false;
  int rc = 0, info = 0;
  tarn_rt *rt = NULL;
  tarn_matrix *a = NULL, *ata = NULL, *s = NULL, *b = NULL, *lu = NULL,
              *b2 = NULL, *f = NULL, *t = NULL, *bq = NULL, *x = NULL,
              *at = NULL, *nb = NULL, *xv = NULL, *atv = NULL, *w = NULL,
              *aw = NULL, *b3 = NULL, *lui = NULL, *si = NULL, *cv = NULL,
              *pb = NULL, *qb = NULL, *luw = NULL, *li = NULL;
  size_t piv[N];
  atomic_store(&armed, true);
  tarn_rt_options o;
  STEP(tarn_rt_options_init(&o));
  o.workers = 2;
  if (limited) o.pool.mem_limit = (size_t)M * N * sizeof(double); /* spills */
  STEP(tarn_rt_create(&o, &rt));
  STEP(tarn_matrix_rand(rt, M, N, NB, NB, 1, &a));
  /* Made once this succeeds; from here on every call only reads it. */
  STEP(tarn_matrix_to_buffer(a, out->a, M));
  bool a_made = rc == 0;
  /* S = A^T A + 1 1^T: symmetric positive definite. */
  STEP(tarn_matrix_syrk_ata(a, &ata));
  STEP(tarn_matrix_axpb(ata, 1.0, 1.0, &s));
  STEP(tarn_matrix_copy(s, &lu));
  STEP(tarn_matrix_cholesky(s, &info));
  STEP(tarn_matrix_rand(rt, N, NRHS, NB, NRHS, 2, &b));
  STEP(tarn_matrix_cholesky_solve(s, b, &info));
  STEP(tarn_matrix_rand(rt, N, NRHS, NB, NRHS, 6, &b3));
  STEP(tarn_matrix_triangular_solve(s, TARN_LOWER, TARN_TRANS, TARN_NON_UNIT,
                                    b3, &info));
  STEP(tarn_matrix_norm(lu, TARN_NORM_ONE, &out->norms[0]));
  STEP(tarn_matrix_lu(lu, piv, &info));
  /* Condition estimates: each a dozen solves of one column. */
  STEP(tarn_matrix_lu_rcond(lu, piv, TARN_NORM_ONE, out->norms[0],
                            &out->rcond[0]));
  STEP(tarn_matrix_cholesky_rcond(s, out->norms[0], &out->rcond[1]));
  STEP(tarn_matrix_triangular_rcond(s, TARN_LOWER, TARN_NON_UNIT, TARN_NORM_INF,
                                    &out->rcond[2]));
  STEP(tarn_matrix_lu_logdet(lu, piv, &out->logdet[0], &out->sign));
  STEP(tarn_matrix_cholesky_logdet(s, &out->logdet[1]));
  STEP(tarn_matrix_rand(rt, N, NRHS, NB, NRHS, 7, &pb));
  STEP(tarn_matrix_permute_rows(pb, piv, N, TARN_TRANS));
  STEP(tarn_matrix_copy(lu, &lui));
  STEP(tarn_matrix_lu_inverse(lui, piv, &info));
  STEP(tarn_matrix_copy(s, &si));
  STEP(tarn_matrix_cholesky_inverse(si, &info));
  STEP(tarn_matrix_copy(s, &li));
  STEP(tarn_matrix_triangular_inverse(li, TARN_LOWER, TARN_NON_UNIT, &info));
  STEP(tarn_matrix_rand(rt, N, NRHS, NB, NRHS, 2, &b2));
  STEP(tarn_matrix_lu_solve(lu, piv, TARN_NO_TRANS, b2, &info));
  STEP(tarn_matrix_copy(a, &f));
  STEP(tarn_matrix_qr(f, 8, &t));
  STEP(tarn_matrix_qr_ata_inverse(f, &cv, &info));
  STEP(tarn_matrix_rand(rt, M, NRHS, NB, NRHS, 3, &bq));
  STEP(tarn_matrix_qr_solve(f, t, TARN_NO_TRANS, bq, &x, &info));
  STEP(tarn_matrix_rand(rt, M, NRHS, NB, NRHS, 8, &qb));
  STEP(tarn_matrix_qr_multiply(f, t, TARN_LEFT, TARN_TRANS, qb));
  /* Matrix-vector products: A^T xv, a y of three tiles, and A w, of four
   * (a task per tile: not fewer than the workers). */
  STEP(tarn_matrix_rand(rt, M, 1, NB, 1, 4, &xv));
  STEP(tarn_matrix_gemv(a, TARN_TRANS, xv, 1.0, 0.0, &atv));
  STEP(tarn_matrix_rand(rt, N, 1, NB, 1, 5, &w));
  STEP(tarn_matrix_gemv(a, TARN_NO_TRANS, w, 1.0, 0.0, &aw));
  /* Array operations and a neighbourhood sum, then two reductions. */
  STEP(tarn_matrix_transpose(a, &at));
  tarn_stencil st;
  STEP(tarn_stencil_init(&st, 1, TARN_BOUNDARY_WRAP, 0.0));
  STEP(tarn_stencil_sum(&st, at, &nb));
  STEP(tarn_matrix_copy(at, &luw));
  STEP(tarn_matrix_lu(luw, out->piv_wide, &info));
  STEP(tarn_matrix_sum(nb, &out->sum));
  STEP(tarn_matrix_norm(a, TARN_NORM_FRO, &out->norm));
  STEP(tarn_matrix_norm(a, TARN_NORM_ONE, &out->norms[1]));
  STEP(tarn_matrix_norm(a, TARN_NORM_INF, &out->norms[2]));
  if (rc == 0) {
    STEP(tarn_matrix_to_buffer(b, out->chol_x, N));
    STEP(tarn_matrix_to_buffer(b2, out->lu_x, N));
    STEP(tarn_matrix_to_buffer(x, out->qr_x, N));
    STEP(tarn_matrix_to_buffer(b3, out->tri_x, N));
    STEP(tarn_matrix_to_buffer(atv, out->at_v, N));
    STEP(tarn_matrix_to_buffer(aw, out->a_w, M));
    STEP(tarn_matrix_to_buffer(lui, out->inv[0], N));
    STEP(tarn_matrix_to_buffer(si, out->inv[1], N));
    STEP(tarn_matrix_to_buffer(cv, out->inv[2], N));
    STEP(tarn_matrix_to_buffer(li, out->inv[3], N));
    STEP(tarn_matrix_to_buffer(pb, out->perm, N));
    STEP(tarn_matrix_to_buffer(qb, out->qt_b, M));
    STEP(tarn_matrix_to_buffer(luw, out->lu_wide, N));
  }
  atomic_store(&armed, false);
  *rc_out = rc;
  enum verdict v = bad ? BAD_STATUS : PASSED;
  /* A, when it was made, with allocations working again: every call
   * only read it. */
  if (a_made && v == PASSED) {
    int got = tarn_matrix_to_buffer(a, out->a, M);
    if (got != 0) {
      fprintf(stderr, "reading A: %s\n", tarn_strerror(got));
      v = INPUT_CHANGED;
    } else if (a_want != NULL && memcmp(out->a, a_want, sizeof out->a) != 0) {
      v = INPUT_CHANGED;
    }
  }
  tarn_matrix *all[] = {a,  ata, s, b,  lu, b2,  f,  t,  bq, x,  at,  nb,
                        xv, atv, w, aw, b3, lui, si, cv, pb, qb, luw, li};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    tarn_matrix_destroy(all[i]);
  tarn_pool_stats ps;
  if (limited && a_want == NULL && v == PASSED && /* the run without faults
                                                     spills */
      (tarn_pool_stats_get(tarn_rt_pool(rt), &ps) != 0 || ps.spills == 0))
    v = NO_RUNTIME;
  if (rt != NULL) {
    int d = tarn_rt_destroy(rt);
    if (d != 0 && d != TARN_ENOMEM && d != TARN_ECANCELED) {
      fprintf(stderr, "tarn_rt_destroy: %s\n", tarn_strerror(d));
      if (v == PASSED) v = DESTROY_FAILED;
    }
  }
  return v;
}

/* Shared with the children: the reference outcome and the allocations of
 * the run without faults. */
enum { SN = 96, SNRHS = 64 }; /* the solve workload's A and B */

struct shared {
  struct outcome want;
  long calls;
  double solve_x[SN * SNRHS]; /* the solve workload's X without faults */
};

static struct shared *shared_map(void) {
  struct shared *s = __real_mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(s != MAP_FAILED);
  return s;
}

/* A workload run in a child: returns its verdict. `sh->want` holds the
 * outcome of the run without faults, which `reference` is. */
typedef enum verdict (*workload_fn)(struct shared *sh, bool reference);

/* The linear algebra workload, under a memory limit or without one: its
 * results must be the reference's bits when every call succeeded. */
static enum verdict linalg_run(struct shared *sh, bool reference,
                               bool limited) {
  static struct outcome got;
  int rc = 0;
  enum verdict v =
      run_workload(&got, &rc, reference ? NULL : sh->want.a, limited);
  if (reference) {
    if (v != PASSED || rc != 0) return NO_RUNTIME;
    sh->want = got;
    return PASSED;
  }
  if (v == PASSED && rc == 0 &&
      (memcmp(got.chol_x, sh->want.chol_x, sizeof got.chol_x) != 0 ||
       memcmp(got.lu_x, sh->want.lu_x, sizeof got.lu_x) != 0 ||
       memcmp(got.qr_x, sh->want.qr_x, sizeof got.qr_x) != 0 ||
       memcmp(got.tri_x, sh->want.tri_x, sizeof got.tri_x) != 0 ||
       memcmp(got.at_v, sh->want.at_v, sizeof got.at_v) != 0 ||
       memcmp(got.a_w, sh->want.a_w, sizeof got.a_w) != 0 ||
       memcmp(got.norms, sh->want.norms, sizeof got.norms) != 0 ||
       memcmp(got.rcond, sh->want.rcond, sizeof got.rcond) != 0 ||
       memcmp(got.logdet, sh->want.logdet, sizeof got.logdet) != 0 ||
       memcmp(got.inv, sh->want.inv, sizeof got.inv) != 0 ||
       memcmp(got.perm, sh->want.perm, sizeof got.perm) != 0 ||
       memcmp(got.qt_b, sh->want.qt_b, sizeof got.qt_b) != 0 ||
       memcmp(got.lu_wide, sh->want.lu_wide, sizeof got.lu_wide) != 0 ||
       memcmp(got.piv_wide, sh->want.piv_wide, sizeof got.piv_wide) != 0 ||
       got.sign != sh->want.sign || got.sum != sh->want.sum ||
       got.norm != sh->want.norm))
    v = WRONG_RESULT;
  return v;
}

static enum verdict linalg_workload(struct shared *sh, bool reference) {
  return linalg_run(sh, reference, true);
}

static enum verdict linalg_unlimited_workload(struct shared *sh,
                                              bool reference) {
  return linalg_run(sh, reference, false);
}

/* ---- the pool workload ---------------------------------------------------
 * Refs and adopted objects under a limit of five of them, compressed
 * spills, read back by pins and prefetches, one escaped. A call may fail
 * with TARN_ENOMEM; the data it was handed is never lost: once
 * allocations work again, every ref made reads back its own bytes. */

enum { NREFS = 16, NADOPTED = 4, REF_BYTES = 32 * 1024 };
#define PIN_TIMEOUT_NS 50000000u /* waits for writes in flight, not more */

static unsigned char pattern_byte(unsigned seed, size_t k) {
  return (unsigned char)((k * 131u + seed * 7u) ^ (k >> 9) ^ (seed << 3));
}

static void pattern_fill(unsigned char *p, unsigned seed) {
  for (size_t k = 0; k < REF_BYTES; k++) p[k] = pattern_byte(seed, k);
}

static bool pattern_holds(const unsigned char *p, unsigned seed) {
  for (size_t k = 0; k < REF_BYTES; k++)
    if (p[k] != pattern_byte(seed, k)) return false;
  return true;
}

/* Pins `r` for reading and checks its bytes. Returns the pin's status, or
 * TARN_EIO when the bytes are not the pattern. */
static int pin_and_check(tarn_ref *r, unsigned seed) {
  void *p = NULL;
  int rc = tarn_ref_pin(r, TARN_READ, PIN_TIMEOUT_NS, &p);
  if (rc != 0) return rc;
  bool holds = pattern_holds(p, seed);
  tarn_ref_unpin(r);
  return holds ? 0 : TARN_EIO;
}

static enum verdict pool_workload(struct shared *sh, bool reference) {
  (void)sh;
  enum verdict v = PASSED;
  int rc = 0;
  tarn_ref *refs[NREFS + NADOPTED] = {NULL};
#define ALLOWED(call)                                       \
  do {                                                      \
    rc = (call);                                            \
    if (rc != 0 && (rc != TARN_ENOMEM || reference)) {      \
      fprintf(stderr, "line %d: %s: %s\n", __LINE__, #call, \
              tarn_strerror(rc));                           \
      v = BAD_STATUS;                                       \
    }                                                       \
  } while (0)
  atomic_store(&armed, true);
  tarn_pool_options o;
  ALLOWED(tarn_pool_options_init(&o));
  o.mem_limit = 5 * REF_BYTES;
  o.compress = 1;
  tarn_pool *pool = NULL;
  if (rc == 0) ALLOWED(tarn_pool_create(&o, &pool));
  if (pool == NULL) {
    atomic_store(&armed, false);
    return v;
  }
  for (unsigned i = 0; i < NREFS; i++) {
    ALLOWED(tarn_ref_alloc(pool, REF_BYTES, PIN_TIMEOUT_NS, &refs[i]));
    if (rc != 0) continue;
    void *p = NULL;
    ALLOWED(tarn_ref_pin(refs[i], TARN_WRITE, PIN_TIMEOUT_NS, &p));
    if (rc != 0) { /* never written: nothing to keep */
      tarn_ref_release(refs[i]);
      refs[i] = NULL;
      continue;
    }
    pattern_fill(p, i);
    tarn_ref_unpin(refs[i]);
  }
  for (unsigned i = NREFS; i < NREFS + NADOPTED; i++) {
    unsigned char *object = __real_malloc(REF_BYTES);
    if (object == NULL) return NO_RUNTIME;
    pattern_fill(object, i);
    ALLOWED(tarn_ref_adopt(pool, object, REF_BYTES, &tarn_kind_malloc,
                           PIN_TIMEOUT_NS, &refs[i]));
    if (rc != 0) free(object); /* still the caller's */
  }
  for (int round = 0; round < 3; round++)
    for (unsigned i = 0; i < NREFS + NADOPTED; i++) {
      if (refs[i] == NULL) continue;
      if ((i + (unsigned)round) % 3 == 0) {
        unsigned j = (i + 5) % (NREFS + NADOPTED);
        if (refs[j] != NULL) {
          rc = tarn_ref_prefetch(refs[j]);
          if (rc < 0 && (rc != TARN_ENOMEM || reference)) v = BAD_STATUS;
        }
      }
      ALLOWED(pin_and_check(refs[i], i));
    }
  void *escaped = NULL;
  if (refs[1] != NULL)
    ALLOWED(tarn_ref_escape(refs[1], PIN_TIMEOUT_NS, &escaped));
  atomic_store(&armed, false);
  /* Nothing handed to the pool is lost. */
  if (escaped != NULL && !pattern_holds(escaped, 1)) v = INPUT_CHANGED;
  for (unsigned i = 0; i < NREFS + NADOPTED; i++) {
    if (refs[i] == NULL) continue;
    int got = pin_and_check(refs[i], i);
    if (got != 0) {
      fprintf(stderr, "ref %u after the fault: %s\n", i, tarn_strerror(got));
      v = INPUT_CHANGED;
    }
    tarn_ref_release(refs[i]);
  }
  tarn_pool_stats st;
  if (reference && (tarn_pool_stats_get(pool, &st) != 0 || st.spills == 0))
    v = NO_RUNTIME; /* the workload must spill and read back */
  int left = tarn_pool_destroy(pool);
  if (left != 0 && v == PASSED) v = DESTROY_FAILED;
  return v;
#undef ALLOWED
}

/* ---- a solve's right-hand sides ------------------------------------------
 * tarn_matrix_lu_solve with the factors of a random SN x SN matrix, B
 * SN x SNRHS (tiles of 32: two tile columns of B). Allocations fail only
 * during the solve, the failing one after 50 ms, so that the tasks
 * submitted before it have run. linalg.h: each tile of B then holds X, or
 * its values before the call, or reads as TARN_ECANCELED; no tile holds
 * anything else. With TARN_TRANS, B held the backward pass's W, the
 * interchanges that make it X skipped, until 2026-12-05. */

/* The column solve's tiles (src/linalg/column_solve.c): a factor of 12 x
 * 12 of them and a vector is one task of 156 accesses, which the runtime
 * merges and orders by sorting (more than 32). */
enum { SMALL_NB = 8 };

struct grabbed {
  size_t nb; /* B's tiles */
  double b[SN * SNRHS];
  bool seen[SN / SMALL_NB][SNRHS / SMALL_NB];
};

/* Copies its block of B into g->b and marks its tile seen (a tile that
 * reads as cancelled is never handed to it). */
static int grab(const tarn_block *blk, void *arg) {
  struct grabbed *g = arg;
  for (size_t q = 0; q < blk->cols; q++)
    memcpy(&g->b[blk->row + (blk->col + q) * SN], &blk->data[0][q * blk->ld],
           blk->rows * sizeof(double));
  g->seen[blk->row / g->nb][blk->col / g->nb] = true;
  return 0;
}

/* The LU solve of an SN x nrhs B with SN x SN factors, both in tiles of
 * nb, with allocations failing: each tile of B must be X or as it was. */
static enum verdict solve_run(struct shared *sh, bool reference,
                              tarn_trans trans, size_t nb, size_t nrhs) {
  tarn_rt_options o;
  tarn_rt *rt = NULL;
  tarn_matrix *a = NULL, *b = NULL;
  size_t piv[SN];
  int info = 0;
  if (tarn_rt_options_init(&o) != 0) return NO_RUNTIME;
  o.workers = 2;
  if (tarn_rt_create(&o, &rt) != 0 ||
      tarn_matrix_rand(rt, SN, SN, nb, nb, 3, &a) != 0 ||
      tarn_matrix_lu(a, piv, &info) != 0 || info != 0 ||
      tarn_matrix_rand(rt, SN, nrhs, nb, nb, 4, &b) != 0)
    return NO_RUNTIME;
  static double before[SN * SNRHS];
  if (tarn_matrix_to_buffer(b, before, SN) != 0) return NO_RUNTIME;
  atomic_store(&fail_slowly, true);
  atomic_store(&armed, true);
  int rc = tarn_matrix_lu_solve(a, piv, trans, b, &info);
  atomic_store(&armed, false);
  enum verdict v = PASSED;
  static struct grabbed g;
  memset(&g, 0, sizeof g);
  g.nb = nb;
  tarn_region *region = NULL;
  tarn_matrix *const ms[] = {b};
  const tarn_access r[] = {TARN_READ};
  if (tarn_region_begin(rt, &region) != 0 ||
      tarn_matrix_apply(ms, r, 1, grab, &g) != 0)
    v = NO_RUNTIME;
  if (region != NULL) (void)tarn_region_wait(region, NULL); /* cancelled? */
  if (reference) {
    if (rc != 0 || info != 0 || v != PASSED) return NO_RUNTIME;
    memcpy(sh->solve_x, g.b, sizeof g.b);
  } else if (rc != 0 && rc != TARN_ENOMEM && rc != TARN_ECANCELED) {
    fprintf(stderr, "lu_solve: %s\n", tarn_strerror(rc));
    v = BAD_STATUS;
  }
  for (size_t ti = 0; v == PASSED && ti < SN / nb; ti++)
    for (size_t tj = 0; v == PASSED && tj * nb < nrhs; tj++) {
      if (!g.seen[ti][tj]) continue; /* cancelled */
      bool x = true, old = true;
      for (size_t j = tj * nb; j < (tj + 1) * nb && j < nrhs; j++)
        for (size_t i = ti * nb; i < (ti + 1) * nb; i++) {
          size_t k = i + j * SN;
          x &= memcmp(&g.b[k], &sh->solve_x[k], sizeof(double)) == 0;
          old &= memcmp(&g.b[k], &before[k], sizeof(double)) == 0;
        }
      if (!x && !old) {
        fprintf(stderr,
                "lu_solve %s: %s: tile (%zu, %zu) of B neither X "
                "nor B\n",
                trans == TARN_TRANS ? "A^T" : "A", tarn_strerror(rc), ti, tj);
        v = TILE_OTHERWISE;
      }
    }
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  int d = tarn_rt_destroy(rt);
  if (d != 0 && d != TARN_ENOMEM && d != TARN_ECANCELED && v == PASSED)
    v = DESTROY_FAILED;
  return v;
}

static enum verdict solve_workload(struct shared *sh, bool reference) {
  return solve_run(sh, reference, TARN_NO_TRANS, NB, SNRHS);
}

static enum verdict solve_trans_workload(struct shared *sh, bool reference) {
  return solve_run(sh, reference, TARN_TRANS, NB, SNRHS);
}

static enum verdict column_solve_workload(struct shared *sh, bool reference) {
  return solve_run(sh, reference, TARN_NO_TRANS, SMALL_NB, 1);
}

/* In tiles of 8 with 64 right-hand sides the solve goes on copies in work
 * tiles (linalg_internal.h, TARN__SOLVE_WORK_COLS_MIN); in tiles of 32 it
 * goes by tiles (until 2026-12-06 it went on copies there too). */
static enum verdict copied_solve_workload(struct shared *sh, bool reference) {
  return solve_run(sh, reference, TARN_NO_TRANS, SMALL_NB, SNRHS);
}

/* ---- the children ---------------------------------------------------------
 */

/* The child: the workload with the kth allocation failing (and the later
 * ones when `after`). k = 0 is the run without faults, which records the
 * reference and the number of allocations in `sh`. */
static void child(workload_fn run, struct shared *sh, long k, bool after) {
  /* A hang ends the child with SIGALRM. Under Valgrind (about 1 s a
   * child there), run with --fair-sched=yes: its default lock, which runs
   * one thread at a time, does not hand it round fairly, and a child in a
   * few hundred took 6 to 144 s or met the alarm while the threads it
   * waited for starved (2026-12-07); with the option none took 4 s. */
  alarm(20);
  atomic_store(&fail_at, k);
  atomic_store(&fail_after, after);
  enum verdict v = run(sh, k == 0);
  if (k == 0) sh->calls = atomic_load(&calls);
  exit(v); /* exit, not _exit: the leak check runs at exit */
}

/* Runs the child for k in a process of its own; returns its exit status
 * (128 + the signal that ended it). */
static int run_child(workload_fn run, struct shared *sh, long k, bool after) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child(run, sh, k, after);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char *verdict_name(int v) {
  switch (v) {
    case BAD_STATUS:
      return "a call returned a status other than TARN_ENOMEM";
    case WRONG_RESULT:
      return "every call succeeded, with other bits";
    case INPUT_CHANGED:
      return "data handed to tarn changed or cannot be read";
    case DESTROY_FAILED:
      return "destroying the runtime or pool failed";
    case NO_RUNTIME:
      return "the run without faults failed";
    case TILE_OTHERWISE:
      return "a failed solve left a tile of B neither X nor its values";
    default:
      return v >= 128 ? "killed by a signal (a crash, or a hang)"
                      : "another exit status (a leak: LeakSanitizer)";
  }
}

/* Each child's leak check (LeakSanitizer, at its exit) reads every
 * loaded object's writable segments, among them the 11 MiB of the
 * sanitizers' own runtimes (libasan and libubsan), most of which no one
 * ever touched: each child faulted in some 2900 zero pages there, more
 * than half of its page faults, which cost about 10 us each on the
 * virtual machines CI runs on (2026-12-07: 408 s alone, 321 s after). Mapped
 * once in the parent (MADV_POPULATE_READ, Linux 5.14; where it fails, nothing
 * is lost but the time), the pages come to every child with fork. */
#if defined(__SANITIZE_ADDRESS__)
static int map_writable_segments(struct dl_phdr_info *info, size_t size,
                                 void *unused) {
  (void)size;
  (void)unused;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) == 0) continue;
    uintptr_t begin = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
    uintptr_t end =
        (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
    (void)madvise((void *)begin, end - begin, MADV_POPULATE_READ);
  }
  return 0;
}
#endif

/* Every allocation of the workload, failing once (all of them when there
 * are few; else a spread of them, the first ones all), then failing with
 * every later one. */
static void every_allocation_fails_in_turn(workload_fn run) {
  struct shared *sh = shared_map();
  assert_int_equal(run_child(run, sh, 0, false), PASSED);
  long total = sh->calls;
  print_message("the workload makes %ld allocations\n", total);
  assert_true(total > 20);
  /* At most about 400 runs of each kind. */
  long step = total / 400 + 1;
  int failed = 0;
  /* Five failures say enough (a hang costs the alarm's 20 s each). */
  for (int after = 0; after < 2 && failed < 5; after++)
    for (long k = 1; k <= total && failed < 5; k += (k < 64 ? 1 : step)) {
      int v = run_child(run, sh, k, after);
      if (v != PASSED) {
        print_error("allocation %ld failing%s: %s (exit status %d)\n", k,
                    after ? " with all later ones" : "", verdict_name(v), v);
        failed++;
      }
    }
  assert_int_equal(failed, 0);
  munmap(sh, sizeof *sh);
}

static void linalg_survives_failed_allocations(void **state) {
  (void)state;
  every_allocation_fails_in_turn(linalg_workload);
}

/* Without a memory limit a task whose data cannot be allocated fails at
 * once: no other task's end is sure to make room. */
static void linalg_without_a_limit_survives_failed_allocations(void **state) {
  (void)state;
  every_allocation_fails_in_turn(linalg_unlimited_workload);
}

static void a_failed_solve_leaves_each_tile_of_b_x_or_b(void **state) {
  (void)state;
  every_allocation_fails_in_turn(solve_workload);
  every_allocation_fails_in_turn(solve_trans_workload);
}

static void a_failed_solve_in_small_tiles_leaves_each_tile_x_or_b(
    void **state) {
  (void)state;
  every_allocation_fails_in_turn(column_solve_workload);
  every_allocation_fails_in_turn(copied_solve_workload);
}

static void the_pool_keeps_its_data_when_allocations_fail(void **state) {
  (void)state;
  every_allocation_fails_in_turn(pool_workload);
}

/* Runs every test, or with an argument only the one of that name: ctest
 * runs each as an entry of its own, so that the cores share them
 * (tests/CMakeLists.txt). A name that is no test's is an error, not a
 * run of nothing. */
int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_pool_keeps_its_data_when_allocations_fail),
      cmocka_unit_test(linalg_survives_failed_allocations),
      cmocka_unit_test(linalg_without_a_limit_survives_failed_allocations),
      cmocka_unit_test(a_failed_solve_leaves_each_tile_of_b_x_or_b),
      cmocka_unit_test(a_failed_solve_in_small_tiles_leaves_each_tile_x_or_b),
  };
  if (argc > 2) {
    fprintf(stderr, "usage: %s [test name]\n", argv[0]);
    return 2;
  }
  if (argc == 2) {
    size_t t = 0, n = sizeof tests / sizeof tests[0];
    while (t < n && strcmp(tests[t].name, argv[1]) != 0) t++;
    if (t == n) {
      fprintf(stderr, "%s: no test named %s\n", argv[0], argv[1]);
      return 2;
    }
    cmocka_set_test_filter(argv[1]); /* a name without * or ?: itself */
  }
#if defined(__SANITIZE_ADDRESS__)
  dl_iterate_phdr(map_writable_segments, NULL); /* once, before any child */
#endif
  return cmocka_run_group_tests(tests, NULL, NULL);
}
