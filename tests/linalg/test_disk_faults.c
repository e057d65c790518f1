/* test_disk_faults.c: linear algebra (and, last, array operations and
 * reductions) under a memory limit on a spill disk
 * that fails (tests/memdisk.h): reads that fail with EIO, writes that
 * fail with EIO or are cut short, a disk that is full. Each call either
 * succeeds with the result it gives on a sound disk, bit for bit, or
 * returns the disk's error (TARN_EIO, TARN_ENOSPC) or TARN_ENOMEM (no room
 * left once nothing can be written); it never hangs. Once the disk is
 * sound again, every matrix the call only read, and every matrix it did
 * not touch, reads back bit for bit as it was, and the same call gives
 * the same result. The products (A B, A^T A and the others) likewise.
 * And on a sound disk, what goes to it is what a task or the program wrote,
 * never bytes its buffers held before. */
#include <cblas.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memdisk.h"
#include "support.h"
#include "tarn.h"

/* Tiles of 32 x 32: no kernel shares its work, so results are the same
 * bits from run to run. */
enum { M = 192, N = 160, NB = 32, NRHS = 24 };

/* A runtime of 3 workers whose pool spills to `disk` past `limit` bytes. */
static tarn_rt *rt_on(struct memdisk *disk, size_t limit,
                      tarn_storage *storage) {
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 3;
  o.pool.mem_limit = limit;
  *storage = memdisk_storage(disk);
  o.pool.storage = storage;
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  return rt;
}

/* The faults, one per call: the kth read or write from now fails, the kth
 * write is short, or the disk is full from now on. */
enum fault { READ_FAILS, WRITE_FAILS, WRITE_SHORT, DISK_FULL, FAULTS };

static void inject(struct memdisk *d, enum fault f, int k) {
  pthread_mutex_lock(&d->lock);
  switch (f) {
    case READ_FAILS:
      d->fail_read = k;
      break;
    case WRITE_FAILS:
      d->fail_write = k;
      break;
    case WRITE_SHORT:
      d->short_write = k;
      break;
    default:
      d->full_at = 1; /* every write from now on */
      d->writes = 0;
      break;
  }
  pthread_mutex_unlock(&d->lock);
}

/* Whether the fault injected happened (the kth read or write was made;
 * for a full disk, a write was tried). */
static bool hit(struct memdisk *d, enum fault f) {
  pthread_mutex_lock(&d->lock);
  bool h = f == READ_FAILS    ? d->fail_read == 0
           : f == WRITE_FAILS ? d->fail_write == 0
           : f == WRITE_SHORT ? d->short_write == 0
                              : d->writes > 0;
  pthread_mutex_unlock(&d->lock);
  return h;
}

static void heal(struct memdisk *d) {
  pthread_mutex_lock(&d->lock);
  d->fail_read = d->fail_write = d->short_write = 0;
  d->in_short = 0;
  d->full_at = 0;
  pthread_mutex_unlock(&d->lock);
}

/* A status a call may return when the disk fails. */
static bool disk_status(int rc) {
  return rc == TARN_EIO || rc == TARN_ENOSPC || rc == TARN_ENOMEM;
}

/* After a call `what` (variant op) under fault f injected at k returned
 * rc: whether the fault happened (before heal), printed with
 * DISK_VERBOSE; rc is 0 or a status a failing disk may give. */
static bool fault_outcome(struct memdisk *d, enum fault f, int k,
                          const char *what, int op, int rc) {
  bool h = hit(d, f);
  if (getenv("DISK_VERBOSE") || (rc != 0 && !disk_status(rc)))
    print_message("%s %d, fault %d at %d: %s%s\n", what, op, (int)f, k,
                  rc == 0 ? "ok" : tarn_strerror(rc), h ? "" : " (missed)");
  assert_true(rc == 0 || disk_status(rc));
  return h;
}

/* The matrix reads back as `want` (m x n). */
static void same_bits(tarn_matrix *a, const double *want, size_t m, size_t n) {
  double *got = test_buffer_of(a);
  assert_memory_equal(got, want, m * n * sizeof *got);
  free(got);
}

/* Solves with QR's factors (both ops) while the disk fails in each way at
 * several points: a call that succeeds gives the sound disk's X; after
 * healing the factors, T, both B and an untouched matrix are intact. */
static void test_qr_solve_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  tarn_rt *rt = rt_on(disk, M * N * sizeof(double) / 4, &storage);
  tarn_matrix *f = NULL, *t = NULL, *b = NULL, *bt = NULL, *other = NULL;
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 11, &f), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, NRHS, NB, 8, 12, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, N, NRHS, NB, 8, 13, &bt), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 14, &other), 0);
  assert_int_equal(tarn_matrix_qr(f, 8, &t), 0);
  double *f0 = test_buffer_of(f), *t0 = test_buffer_of(t),
         *b0 = test_buffer_of(b), *bt0 = test_buffer_of(bt),
         *o0 = test_buffer_of(other);
  size_t trows = tarn_matrix_rows(t);
  /* the sound disk's results */
  tarn_matrix *x = NULL;
  assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_NO_TRANS, b, &x, NULL), 0);
  double *x0 = test_buffer_of(x);
  tarn_matrix_destroy(x);
  assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_TRANS, bt, &x, NULL), 0);
  double *xt0 = test_buffer_of(x);
  tarn_matrix_destroy(x);
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++)
      for (int op = 0; op < 2; op++) {
        inject(disk, (enum fault)fault, k);
        x = (tarn_matrix *)1;
        int rc =
            tarn_matrix_qr_solve(f, t, op == 0 ? TARN_NO_TRANS : TARN_TRANS,
                                 op == 0 ? b : bt, &x, NULL);
        hits += fault_outcome(disk, (enum fault)fault, k, "qr_solve", op, rc);
        if (rc == 0) {
          same_bits(x, op == 0 ? x0 : xt0, op == 0 ? N : M, NRHS);
          tarn_matrix_destroy(x);
        } else {
          assert_null(x);
        }
        heal(disk);
        same_bits(f, f0, M, N);
        same_bits(t, t0, trows, N);
        same_bits(b, b0, M, NRHS);
        same_bits(bt, bt0, N, NRHS);
        same_bits(other, o0, M, N);
      }
  assert_true(hits > 0); /* the disk did fail under the calls */
  assert_int_equal(tarn_matrix_qr_solve(f, t, TARN_NO_TRANS, b, &x, NULL), 0);
  same_bits(x, x0, N, NRHS);
  tarn_matrix_destroy(x);
  free(f0);
  free(t0);
  free(b0);
  free(bt0);
  free(o0);
  free(x0);
  free(xt0);
  tarn_matrix_destroy(f);
  tarn_matrix_destroy(t);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(bt);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* A symmetric positive definite N x N matrix: G G^T + N I, G random. */
static double *spd(tarn_rt *rt, uint64_t seed) {
  tarn_matrix *g = NULL;
  assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, seed, &g), 0);
  double *gb = test_buffer_of(g), *a = malloc(N * N * sizeof *a);
  assert_non_null(a);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0, gb, N, gb,
              N, 0.0, a, N);
  for (size_t i = 0; i < N; i++) a[i + i * N] += N;
  free(gb);
  tarn_matrix_destroy(g);
  return a;
}

/* Each mb x nb tile of the m x n matrix b holds done's values, or was's,
 * or reads as TARN_ECANCELED (its writer failed), element by element (m
 * and n multiples of the tile sides; done and was with leading dimension
 * m). */
static void tiles_done_or_kept(tarn_matrix *b, const double *done,
                               const double *was, size_t m, size_t n, size_t mb,
                               size_t nb) {
  for (size_t tj = 0; tj < n; tj += nb)
    for (size_t ti = 0; ti < m; ti += mb) {
      int solved = 0, kept = 0, cancelled = 0, cells = 0;
      for (size_t j = tj; j < tj + nb; j++)
        for (size_t i = ti; i < ti + mb; i++, cells++) {
          double v = 0;
          int rc = tarn_matrix_get(b, i, j, &v);
          if (rc == TARN_ECANCELED) {
            cancelled++;
            continue;
          }
          assert_int_equal(rc, 0);
          solved += v == done[i + j * m];
          kept += v == was[i + j * m];
        }
      assert_true(solved == cells || kept == cells || cancelled == cells);
    }
}

/* Cholesky in place, then the solve with its factor, the triangular
 * solve L X = B, the condition estimates with L and the inverse from a
 * copy of L, while the disk fails:
 * a factorisation that succeeds gives the sound disk's factor, one that
 * fails leaves A unspecified but every other matrix intact; each solve
 * leaves the factor intact, and B solved, or as it was where it can be
 * read (a tile whose writer failed reads as TARN_ECANCELED); each
 * estimate, the determinant and the inverse is the sound disk's, or the
 * disk's error. */
static void test_cholesky_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  tarn_rt *rt = rt_on(disk, N * N * sizeof(double) / 4, &storage);
  double *a = spd(rt, 21);
  tarn_matrix *l = NULL, *other = NULL, *b = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, N, &l), 0);
  assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 22, &other), 0);
  assert_int_equal(tarn_matrix_rand(rt, N, NRHS, NB, 8, 23, &b), 0);
  assert_int_equal(tarn_matrix_cholesky(l, NULL), 0);
  double *l0 = test_buffer_of(l), *o0 = test_buffer_of(other),
         *b0 = test_buffer_of(b);
  assert_int_equal(tarn_matrix_cholesky_solve(l, b, NULL), 0);
  double *x0 = test_buffer_of(b);
  tarn_matrix *bt = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, NB, 8, b0, N, &bt), 0);
  assert_int_equal(tarn_matrix_triangular_solve(l, TARN_LOWER, TARN_NO_TRANS,
                                                TARN_NON_UNIT, bt, NULL),
                   0);
  double *xt0 = test_buffer_of(bt);
  tarn_matrix_destroy(bt);
  double rcond0[2]; /* from L as a Cholesky factor, and as a triangle */
  assert_int_equal(tarn_matrix_cholesky_rcond(l, 1.0, &rcond0[0]), 0);
  assert_int_equal(tarn_matrix_triangular_rcond(l, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &rcond0[1]),
                   0);
  double logdet0 = 0;
  assert_int_equal(tarn_matrix_cholesky_logdet(l, &logdet0), 0);
  tarn_matrix *v0 = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, l0, N, &v0), 0);
  assert_int_equal(tarn_matrix_cholesky_inverse(v0, NULL), 0);
  double *inv0 = test_buffer_of(v0);
  tarn_matrix_destroy(v0);
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++) {
      tarn_matrix *w = NULL, *y = NULL, *z = NULL, *v = NULL;
      assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, N, &w), 0);
      assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, l0, N, &v), 0);
      assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, NB, 8, b0, N, &y),
                       0);
      assert_int_equal(tarn_matrix_from_buffer(rt, N, NRHS, NB, 8, b0, N, &z),
                       0);
      inject(disk, (enum fault)fault, k);
      int rc = tarn_matrix_cholesky(w, NULL);
      int rs = tarn_matrix_cholesky_solve(l, y, NULL);
      int rtri = tarn_matrix_triangular_solve(l, TARN_LOWER, TARN_NO_TRANS,
                                              TARN_NON_UNIT, z, NULL);
      double rcond[2] = {-1, -1};
      int rr[2] = {tarn_matrix_cholesky_rcond(l, 1.0, &rcond[0]),
                   tarn_matrix_triangular_rcond(l, TARN_LOWER, TARN_NON_UNIT,
                                                TARN_NORM_ONE, &rcond[1])};
      bool h = hit(disk, (enum fault)fault);
      hits += h;
      for (int e = 0; e < 2; e++) /* the sound disk's estimate, or none */
        assert_true(rr[e] == 0 ? rcond[e] == rcond0[e]
                               : disk_status(rr[e]) && rcond[e] == -1);
      double logdet = 1;
      int rl = tarn_matrix_cholesky_logdet(l, &logdet);
      assert_true(rl == 0 ? logdet == logdet0 : disk_status(rl) && logdet == 1);
      int rinv = tarn_matrix_cholesky_inverse(v, NULL);
      assert_true(rinv == 0 || disk_status(rinv));
      if (getenv("DISK_VERBOSE"))
        print_message("cholesky fault %d at %d: %s, solve %s, L solve %s%s\n",
                      fault, k, rc == 0 ? "ok" : tarn_strerror(rc),
                      rs == 0 ? "ok" : tarn_strerror(rs),
                      rtri == 0 ? "ok" : tarn_strerror(rtri),
                      h ? "" : " (missed)");
      assert_true(rc == 0 || disk_status(rc));
      assert_true(rs == 0 || disk_status(rs));
      assert_true(rtri == 0 || disk_status(rtri));
      heal(disk);
      if (rc == 0) same_bits(w, l0, N, N);
      if (rs == 0) {
        same_bits(y, x0, N, NRHS);
      } else {
        tiles_done_or_kept(y, x0, b0, N, NRHS, NB, 8);
      }
      if (rtri == 0)
        same_bits(z, xt0, N, NRHS);
      else
        tiles_done_or_kept(z, xt0, b0, N, NRHS, NB, 8);
      if (rinv == 0) same_bits(v, inv0, N, N);
      same_bits(l, l0, N, N);
      same_bits(other, o0, N, N);
      tarn_matrix_destroy(v);
      tarn_matrix_destroy(w);
      tarn_matrix_destroy(y);
      tarn_matrix_destroy(z);
    }
  assert_true(hits > 0); /* the disk did fail under the calls */
  free(a);
  free(l0);
  free(o0);
  free(b0);
  free(x0);
  free(xt0);
  free(inv0);
  tarn_matrix_destroy(l);
  tarn_matrix_destroy(other);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* A tall QR reduced by a tree of domains (3 workers: 3 domains, two
 * levels of merges), then the least-squares solve with its factors, each
 * from the same input while the disk fails in each way at several
 * points: a call that succeeds gives the sound disk's factors and T, or
 * X, bit for bit (tiles of 32: nothing shared); one that fails returns the
 * disk's error with no T or X; after healing, the input, B and an
 * untouched matrix are intact. */
static void test_tall_qr_on_a_failing_disk(void **state) {
  (void)state;
  enum { TM = 2048, TN = 32 };
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  tarn_rt *rt = rt_on(disk, TM * TN * sizeof(double) / 8 * 3, &storage);
  tarn_matrix *in = NULL, *b = NULL, *other = NULL, *w = NULL, *t = NULL,
              *x = NULL;
  assert_int_equal(tarn_matrix_rand(rt, TM, TN, NB, NB, 41, &in), 0);
  assert_int_equal(tarn_matrix_rand(rt, TM, NRHS, NB, 8, 42, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, TM, TN, NB, NB, 43, &other), 0);
  double *a = test_buffer_of(in), *b0 = test_buffer_of(b),
         *o0 = test_buffer_of(other);
  /* the sound disk's factors, T (with its merges' rows) and X */
  assert_int_equal(tarn_matrix_copy(in, &w), 0);
  assert_int_equal(tarn_matrix_qr(w, 8, &t), 0);
  size_t trows = tarn_matrix_rows(t);
  assert_int_equal(trows, (TM / NB + 2) * 8);
  assert_int_equal(tarn_matrix_qr_solve(w, t, TARN_NO_TRANS, b, &x, NULL), 0);
  double *f0 = test_buffer_of(w), *t0 = test_buffer_of(t),
         *x0 = test_buffer_of(x);
  tarn_matrix_destroy(x);
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++)
      for (int op = 0; op < 2; op++) {
        tarn_matrix *f = NULL, *tf = NULL;
        if (op == 0)
          assert_int_equal(
              tarn_matrix_from_buffer(rt, TM, TN, NB, NB, a, TM, &f), 0);
        inject(disk, (enum fault)fault, k);
        tf = x = (tarn_matrix *)1;
        int rc = op == 0
                     ? tarn_matrix_qr(f, 8, &tf)
                     : tarn_matrix_qr_solve(w, t, TARN_NO_TRANS, b, &x, NULL);
        hits += fault_outcome(disk, (enum fault)fault, k, "tall qr", op, rc);
        heal(disk);
        if (rc == 0 && op == 0) {
          same_bits(f, f0, TM, TN);
          same_bits(tf, t0, trows, TN);
          tarn_matrix_destroy(tf);
        } else if (rc == 0) {
          same_bits(x, x0, TN, NRHS);
          tarn_matrix_destroy(x);
        } else {
          assert_null(op == 0 ? tf : x);
        }
        tarn_matrix_destroy(f);
        same_bits(in, a, TM, TN);
        same_bits(b, b0, TM, NRHS);
        same_bits(other, o0, TM, TN);
        same_bits(w, f0, TM, TN);
        same_bits(t, t0, trows, TN);
      }
  assert_true(hits > 0); /* the disk did fail under the calls */
  double *bufs[] = {a, b0, o0, f0, t0, x0};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
  TEST_DESTROY_MATRICES(in, b, other, w, t);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* LU (of a square and of a wide matrix), QR and the inverse (LU, then
 * getri with its temporaries) in place, from the same input each time,
 * while the disk fails: a call that
 * succeeds gives the sound disk's factors (and pivots, and T) or inverse
 * bit for bit; one that fails returns the disk's error (QR then gives no
 * T) and leaves every other matrix intact. */
static void test_lu_and_qr_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  /* three eighths of a matrix: room for LU's first panel, its tile column
   * (sized when a copy of it sat beside it in the pool) */
  tarn_rt *rt = rt_on(disk, M * N * sizeof(double) / 8 * 3, &storage);
  tarn_matrix *in = NULL, *other = NULL, *w = NULL, *t = NULL;
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 31, &in), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 32, &other), 0);
  double *a = test_buffer_of(in), *o0 = test_buffer_of(other);
  size_t piv0[N], piv[N];
  /* the sound disk's factors: LU of the leading N x N block, QR of all */
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, M, &w), 0);
  assert_int_equal(tarn_matrix_lu(w, piv0, NULL), 0);
  double *lu0 = test_buffer_of(w);
  tarn_matrix_destroy(w);
  /* the wide N x M matrix of the same values */
  size_t pivw0[N];
  assert_int_equal(tarn_matrix_from_buffer(rt, N, M, NB, NB, a, N, &w), 0);
  assert_int_equal(tarn_matrix_lu(w, pivw0, NULL), 0);
  double *luw0 = test_buffer_of(w);
  tarn_matrix_destroy(w);
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, a, M, &w), 0);
  assert_int_equal(tarn_matrix_inverse(w, NULL), 0);
  double *inv0 = test_buffer_of(w);
  tarn_matrix_destroy(w);
  assert_int_equal(tarn_matrix_from_buffer(rt, M, N, NB, NB, a, M, &w), 0);
  assert_int_equal(tarn_matrix_qr(w, 8, &t), 0);
  double *qr0 = test_buffer_of(w), *t0 = test_buffer_of(t);
  size_t trows = tarn_matrix_rows(t);
  tarn_matrix_destroy(w);
  tarn_matrix_destroy(t);
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++)
      for (int op = 0; op < 4; op++) {
        bool lu = op == 0, inverse = op == 2, wide = op == 3;
        int made = wide ? tarn_matrix_from_buffer(rt, N, M, NB, NB, a, N, &w)
                        : tarn_matrix_from_buffer(rt, lu || inverse ? N : M, N,
                                                  NB, NB, a, M, &w);
        assert_int_equal(made, 0);
        inject(disk, (enum fault)fault, k);
        t = (tarn_matrix *)1;
        int rc = lu || wide ? tarn_matrix_lu(w, piv, NULL)
                 : inverse  ? tarn_matrix_inverse(w, NULL)
                            : tarn_matrix_qr(w, 8, &t);
        hits += hit(disk, (enum fault)fault);
        heal(disk);
        if (rc == 0 && wide) {
          same_bits(w, luw0, N, M);
          assert_memory_equal(piv, pivw0, sizeof piv);
        } else if (rc == 0 && inverse) {
          same_bits(w, inv0, N, N);
        } else if (rc == 0 && lu) {
          same_bits(w, lu0, N, N);
          assert_memory_equal(piv, piv0, sizeof piv);
        } else if (rc == 0) {
          same_bits(w, qr0, M, N);
          same_bits(t, t0, trows, N);
          tarn_matrix_destroy(t);
        } else {
          assert_true(disk_status(rc));
          if (op == 1) assert_null(t);
        }
        same_bits(in, a, M, N);
        same_bits(other, o0, M, N);
        tarn_matrix_destroy(w);
      }
  assert_true(hits > 0); /* the disk did fail under the calls */
  free(a);
  free(o0);
  free(lu0);
  free(luw0);
  free(inv0);
  free(qr0);
  free(t0);
  tarn_matrix_destroy(in);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* What LU's and QR's factors are used for, each call from the same factors
 * and inputs, while the disk fails: the solves with LU's factors (A X = B
 * and A^T X = B), tarn_matrix_solve, the row interchanges, the inverse of
 * U in place, the thin Q, Q^T C (in a region), (A^T A)^-1 from QR's R,
 * and the condition estimate and log|det| from LU's factors. A call that
 * succeeds gives the sound disk's result bit for bit; one that fails
 * returns the disk's error and gives no new matrix, no number, and each
 * tile of a matrix it solved in place holds the sound disk's result, its
 * old values, or reads as TARN_ECANCELED. The factors, the pivots and an
 * untouched matrix stay intact. */
enum {
  USE_LU_SOLVE,
  USE_LU_SOLVE_T,
  USE_SOLVE,
  USE_PERMUTE,
  USE_U_INVERSE,
  USE_Q,
  USE_QT_C,
  USE_ATA_INVERSE,
  USE_RCOND,
  USE_LOGDET,
  USES
};

struct factor_uses {
  tarn_rt *rt;
  tarn_matrix *lu, *f, *t; /* LU's factors (N x N); QR's (M x N) and T */
  tarn_matrix *w;          /* a copy of A for tarn_matrix_solve */
  tarn_matrix *other;      /* read to push the inputs out to the disk */
  size_t piv[N];
  double *a, *lu0, *b0, *c0; /* A (N x N), the factors, B (N x NRHS),
                                C (M x NRHS) */
};

/* The rows and columns of what use `op` writes (0 for a number). */
static size_t use_rows(int op) {
  return op <= USE_PERMUTE                              ? N
         : op == USE_Q || op == USE_QT_C                ? M
         : op == USE_U_INVERSE || op == USE_ATA_INVERSE ? N
                                                        : 0;
}
static size_t use_cols(int op) {
  return op <= USE_PERMUTE || op == USE_QT_C ? NRHS : N;
}

/* The matrix use `op` writes in place, a fresh copy of its input; NULL
 * for the uses that make a new one or give a number. Made before the disk
 * fails, as u->w is for tarn_matrix_solve. */
static tarn_matrix *use_input(struct factor_uses *u, int op) {
  tarn_matrix *m = NULL;
  if (op == USE_SOLVE)
    assert_int_equal(
        tarn_matrix_from_buffer(u->rt, N, N, NB, NB, u->a, N, &u->w), 0);
  if (op <= USE_PERMUTE)
    assert_int_equal(
        tarn_matrix_from_buffer(u->rt, N, NRHS, NB, 8, u->b0, N, &m), 0);
  else if (op == USE_U_INVERSE)
    assert_int_equal(
        tarn_matrix_from_buffer(u->rt, N, N, NB, NB, u->lu0, N, &m), 0);
  else if (op == USE_QT_C)
    assert_int_equal(
        tarn_matrix_from_buffer(u->rt, M, NRHS, NB, 8, u->c0, M, &m), 0);
  /* Reading a matrix larger than the limit spills what was just made, so
   * that the use reads it back from the failing disk. */
  double sum = 0;
  assert_int_equal(tarn_matrix_sum(u->other, &sum), 0);
  return m;
}

/* Runs use `op` on *io (in place) or into *io (new), or into *s. */
static int use_run(struct factor_uses *u, int op, tarn_matrix **io, double *s) {
  switch (op) {
    case USE_LU_SOLVE:
    case USE_LU_SOLVE_T:
      return tarn_matrix_lu_solve(
          u->lu, u->piv, op == USE_LU_SOLVE ? TARN_NO_TRANS : TARN_TRANS, *io,
          NULL);
    case USE_SOLVE: {
      int rc = tarn_matrix_solve(u->w, *io, NULL);
      tarn_matrix_destroy(u->w); /* A's factors, or unspecified */
      u->w = NULL;
      return rc;
    }
    case USE_PERMUTE:
      return tarn_matrix_permute_rows(*io, u->piv, N, TARN_TRANS);
    case USE_U_INVERSE:
      return tarn_matrix_triangular_inverse(*io, TARN_UPPER, TARN_NON_UNIT,
                                            NULL);
    case USE_Q:
      return tarn_matrix_qr_q(u->f, u->t, io);
    case USE_QT_C: {
      tarn_region *region = NULL;
      assert_int_equal(tarn_region_begin(u->rt, &region), 0);
      int submitted =
          tarn_matrix_qr_multiply(u->f, u->t, TARN_LEFT, TARN_TRANS, *io);
      int rc = tarn_region_wait(region, NULL);
      return submitted != 0 ? submitted : rc;
    }
    case USE_ATA_INVERSE:
      return tarn_matrix_qr_ata_inverse(u->f, io, NULL);
    case USE_RCOND:
      return tarn_matrix_lu_rcond(u->lu, u->piv, TARN_NORM_ONE, 1.0, s);
    default: {
      int sign = 0;
      return tarn_matrix_lu_logdet(u->lu, u->piv, s, &sign);
    }
  }
}

static void test_factor_uses_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  tarn_rt *rt = rt_on(disk, M * N * sizeof(double) / 8 * 3, &storage);
  struct factor_uses u = {.rt = rt};
  tarn_matrix *in = NULL, *other = NULL, *bm = NULL, *cm = NULL;
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 41, &in), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 42, &other), 0);
  u.other = other;
  assert_int_equal(tarn_matrix_rand(rt, N, NRHS, NB, 8, 43, &bm), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, NRHS, NB, 8, 44, &cm), 0);
  double *m0 = test_buffer_of(in), *o0 = test_buffer_of(other);
  u.b0 = test_buffer_of(bm);
  u.c0 = test_buffer_of(cm);
  tarn_matrix_destroy(bm);
  tarn_matrix_destroy(cm);
  /* A: the leading N x N block; its LU, and QR of all M x N */
  assert_int_equal(tarn_matrix_from_buffer(rt, N, N, NB, NB, m0, M, &u.lu), 0);
  u.a = test_buffer_of(u.lu);
  assert_int_equal(tarn_matrix_lu(u.lu, u.piv, NULL), 0);
  u.lu0 = test_buffer_of(u.lu);
  u.f = in;
  assert_int_equal(tarn_matrix_qr(u.f, 8, &u.t), 0);
  double *f0 = test_buffer_of(u.f), *t0 = test_buffer_of(u.t);
  size_t trows = tarn_matrix_rows(u.t), piv0[N];
  memcpy(piv0, u.piv, sizeof piv0);
  /* the sound disk's results */
  double *want[USES] = {0}, want_s[USES] = {0};
  for (int op = 0; op < USES; op++) {
    tarn_matrix *io = use_input(&u, op);
    assert_int_equal(use_run(&u, op, &io, &want_s[op]), 0);
    if (use_rows(op) > 0) want[op] = test_buffer_of(io);
    tarn_matrix_destroy(io);
  }
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++)
      for (int op = 0; op < USES; op++) {
        tarn_matrix *io = use_input(&u, op);
        double s = -1;
        inject(disk, (enum fault)fault, k);
        int rc = use_run(&u, op, &io, &s);
        hits += fault_outcome(disk, (enum fault)fault, k, "factor use", op, rc);
        heal(disk);
        if (rc == 0 && use_rows(op) > 0) {
          same_bits(io, want[op], use_rows(op), use_cols(op));
        } else if (rc == 0) {
          assert_memory_equal(&s, &want_s[op], sizeof s);
        } else {
          if (op <= USE_PERMUTE)
            tiles_done_or_kept(io, want[op], u.b0, N, NRHS, NB, 8);
          else if (op == USE_QT_C)
            tiles_done_or_kept(io, want[op], u.c0, M, NRHS, NB, 8);
          else if (op != USE_U_INVERSE) /* that one's content unspecified */
            assert_true(io == NULL && s == -1);
        }
        tarn_matrix_destroy(io);
        same_bits(u.lu, u.lu0, N, N);
        assert_memory_equal(u.piv, piv0, sizeof piv0);
        same_bits(u.f, f0, M, N);
        same_bits(u.t, t0, trows, N);
        same_bits(other, o0, M, N);
      }
  assert_true(hits > 0); /* the disk did fail under the calls */
  for (int op = 0; op < USES; op++) free(want[op]);
  free(m0);
  free(o0);
  free(f0);
  free(t0);
  free(u.a);
  free(u.lu0);
  free(u.b0);
  free(u.c0);
  tarn_matrix_destroy(u.lu);
  tarn_matrix_destroy(u.f);
  tarn_matrix_destroy(u.t);
  tarn_matrix_destroy(other);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* The products, each in a region of its own, from the same inputs each
 * time, while the disk fails: A B, A^T A' and A B^T into new matrices,
 * A^T A (tarn_matrix_syrk_ata), and C - A B into a given C. One that
 * succeeds gives the sound disk's result bit for bit; one that fails
 * returns the disk's error, and each tile of the given C then holds the
 * sound disk's result, its old values, or reads as TARN_ECANCELED. The
 * inputs stay intact. */
enum { PRODUCTS = 5 };

static int product(tarn_rt *rt, int op, tarn_matrix *a, tarn_matrix *a2,
                   tarn_matrix *b, tarn_matrix **out) {
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  int submitted =
      op == 0
          ? tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0, out)
      : op == 1
          ? tarn_matrix_gemm(a, TARN_TRANS, a2, TARN_NO_TRANS, 0.5, 0.0, out)
      : op == 2
          ? tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_TRANS, 1.0, 0.0, out)
      : op == 3 ? tarn_matrix_syrk_ata(a, out)
                : tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, -1.0,
                                   1.0, out);
  int rc = tarn_region_wait(region, NULL);
  return submitted != 0 ? submitted : rc;
}

static void test_products_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  tarn_rt *rt = rt_on(disk, M * N * sizeof(double) / 4, &storage);
  tarn_matrix *a = NULL, *a2 = NULL, *b = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 51, &a), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 52, &a2), 0);
  assert_int_equal(tarn_matrix_rand(rt, N, N, NB, NB, 53, &b), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 54, &c), 0);
  double *a0 = test_buffer_of(a), *a20 = test_buffer_of(a2),
         *b0 = test_buffer_of(b), *c0 = test_buffer_of(c);
  tarn_matrix_destroy(c); /* its values are C's each time */
  const size_t rows[PRODUCTS] = {M, N, M, N, M};
  double *want[PRODUCTS];
  for (int op = 0; op < PRODUCTS; op++) { /* the sound disk's results */
    tarn_matrix *out = NULL;
    if (op == 4)
      assert_int_equal(tarn_matrix_from_buffer(rt, M, N, NB, NB, c0, M, &out),
                       0);
    assert_int_equal(product(rt, op, a, a2, b, &out), 0);
    want[op] = test_buffer_of(out);
    tarn_matrix_destroy(out);
  }
  int hits = 0;
  for (int fault = 0; fault < FAULTS; fault++)
    for (int k = 1; k <= (fault == DISK_FULL ? 1 : 6); k++)
      for (int op = 0; op < PRODUCTS; op++) {
        tarn_matrix *out = NULL;
        if (op == 4)
          assert_int_equal(
              tarn_matrix_from_buffer(rt, M, N, NB, NB, c0, M, &out), 0);
        inject(disk, (enum fault)fault, k);
        int rc = product(rt, op, a, a2, b, &out);
        hits += fault_outcome(disk, (enum fault)fault, k, "product", op, rc);
        heal(disk);
        if (rc == 0) {
          same_bits(out, want[op], rows[op], N);
        } else {
          if (op == 4) tiles_done_or_kept(out, want[op], c0, M, N, NB, NB);
        }
        tarn_matrix_destroy(out);
        same_bits(a, a0, M, N);
        same_bits(a2, a20, M, N);
        same_bits(b, b0, N, N);
      }
  assert_true(hits > 0); /* the disk did fail under the calls */
  for (int op = 0; op < PRODUCTS; op++) free(want[op]);
  free(a0);
  free(a20);
  free(b0);
  free(c0);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(a2);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* Array operations in a region of the caller's (sum of two matrices, a
 * neighbourhood sum, a transpose, matrix-vector products with each
 * orientation), then the waiting sum and norms (Frobenius, one,
 * infinity), while the
 * disk fails: a region that succeeds gives the sound disk's results bit for
 * bit, one that fails returns the disk's error; the sum and the norm return
 * the sound disk's value or the disk's error, never another value; the
 * inputs stay intact. */
static void test_array_ops_on_a_failing_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage;
  /* half a matrix: a neighbourhood sum pins a tile and its 8 neighbours */
  tarn_rt *rt = rt_on(disk, M * N * sizeof(double) / 2, &storage);
  tarn_matrix *x = NULL, *y = NULL, *v = NULL, *w = NULL;
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 41, &x), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, N, NB, NB, 42, &y), 0);
  assert_int_equal(tarn_matrix_rand(rt, N, 1, NB, 1, 43, &v), 0);
  assert_int_equal(tarn_matrix_rand(rt, M, 1, NB, 1, 44, &w), 0);
  double *x0 = test_buffer_of(x), *y0 = test_buffer_of(y);
  double *v0 = test_buffer_of(v), *w0 = test_buffer_of(w);
  tarn_stencil st;
  assert_int_equal(tarn_stencil_init(&st, 1, TARN_BOUNDARY_WRAP, 0.0), 0);
  enum { OUTS = 5 };
  double *want[OUTS] = {NULL}, sum0 = 0, norm0[3] = {0, 0, 0};
  const tarn_norm kinds[3] = {TARN_NORM_FRO, TARN_NORM_ONE, TARN_NORM_INF};
  int hits = 0;
  for (int round = -1; round < FAULTS * 6; round++) {
    enum fault fault = round < 0 ? FAULTS : (enum fault)(round / 6);
    if (fault == DISK_FULL && round % 6 != 0) continue;
    tarn_matrix *out[OUTS] = {NULL};
    if (round >= 0) inject(disk, fault, round % 6 + 1);
    tarn_region *region = NULL;
    assert_int_equal(tarn_region_begin(rt, &region), 0);
    int submitted = tarn_matrix_add(x, y, &out[0]);
    if (submitted == 0) submitted = tarn_stencil_sum(&st, x, &out[1]);
    if (submitted == 0) submitted = tarn_matrix_transpose(y, &out[2]);
    if (submitted == 0)
      submitted = tarn_matrix_gemv(x, TARN_NO_TRANS, v, 1.0, 0.0, &out[3]);
    if (submitted == 0)
      submitted = tarn_matrix_gemv(y, TARN_TRANS, w, 1.0, 0.0, &out[4]);
    int rc = tarn_region_wait(region, NULL);
    if (submitted != 0) rc = submitted;
    double sum = 0, norm[3] = {0, 0, 0};
    int rs = tarn_matrix_sum(x, &sum), rn[3];
    for (int k = 0; k < 3; k++) rn[k] = tarn_matrix_norm(y, kinds[k], &norm[k]);
    bool h = round >= 0 && hit(disk, fault);
    hits += h;
    if (getenv("DISK_VERBOSE"))
      print_message(
          "array ops fault %d at %d (%d writes): %s, sum %s, norm %s%s\n",
          (int)fault, round % 6 + 1, disk->writes,
          rc == 0 ? "ok" : tarn_strerror(rc),
          rs == 0 ? "ok" : tarn_strerror(rs),
          rn[0] == 0 ? "ok" : tarn_strerror(rn[0]),
          round < 0 ? " (sound disk)"
          : h       ? ""
                    : " (missed)");
    heal(disk);
    const size_t rows[OUTS] = {M, M, N, M, N}, cols[OUTS] = {N, N, M, 1, 1};
    if (round < 0) { /* the sound disk */
      assert_int_equal(rc, 0);
      assert_int_equal(rs, 0);
      for (int k = 0; k < 3; k++) assert_int_equal(rn[k], 0);
      for (int k = 0; k < OUTS; k++) want[k] = test_buffer_of(out[k]);
      sum0 = sum;
      memcpy(norm0, norm, sizeof norm0);
    } else if (rc == 0) {
      for (int k = 0; k < OUTS; k++)
        same_bits(out[k], want[k], rows[k], cols[k]);
    } else {
      assert_true(disk_status(rc));
    }
    if (round >= 0) {
      if (rs == 0)
        assert_true(sum == sum0);
      else
        assert_true(disk_status(rs));
      for (int k = 0; k < 3; k++)
        assert_true(rn[k] == 0 ? norm[k] == norm0[k] : disk_status(rn[k]));
    }
    for (int k = 0; k < OUTS; k++) tarn_matrix_destroy(out[k]);
    same_bits(x, x0, M, N);
    same_bits(y, y0, M, N);
    same_bits(v, v0, N, 1);
    same_bits(w, w0, M, 1);
  }
  assert_true(hits > 0); /* the disk did fail under the calls */
  for (int k = 0; k < OUTS; k++) free(want[k]);
  free(x0);
  free(y0);
  free(v0);
  free(w0);
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(y);
  tarn_matrix_destroy(v);
  tarn_matrix_destroy(w);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

/* ---- only written bytes reach the disk ---------------------------------
 * A task that writes a tile without reading it gets a buffer whose bytes
 * are whatever the heap left there; a kernel that fills only part of the
 * tile (A^T A's diagonal tiles: dsyrk writes the lower triangle, the
 * mirror the upper one later) would have those bytes spilled with it under
 * a limit. Here the library's buffers come from the heap through
 * aligned_alloc, wrapped at link time (tests/CMakeLists.txt) to fill each
 * with POISON while `poisoning` is set, the pool keeps no freed buffers to
 * reuse, and no word written to the disk may be POISON; the results are
 * the bits of a run without poison. */
#define POISON (-0x1.5a5a5a5a5a5a5p+333)
/* Tiles of 96, all of one size (not small tiles: no work tiles; served by
 * the heap, not the pool's runs); the limit holds 5 of them. */
enum { OWN_OPS = 7, OWN_NB = 96, OWN_M = 4 * OWN_NB, OWN_N = 3 * OWN_NB };

void *__real_aligned_alloc(size_t align, size_t size);
static atomic_bool poisoning;
static atomic_int poisoned; /* buffers filled with POISON */

void *__wrap_aligned_alloc(size_t align, size_t size) {
  double *p = __real_aligned_alloc(align, size);
  if (p != NULL && atomic_load(&poisoning)) {
    for (size_t i = 0; i < size / sizeof *p; i++) p[i] = POISON;
    atomic_fetch_add(&poisoned, 1);
  }
  return p;
}

/* Operation op on A (OWN_M x OWN_N), B and an SPD S (OWN_N x OWN_N) into
 * *out, a new matrix: A^T A, A B, A^T A by gemm, then the Cholesky factor
 * of S, the LU factors of B and the QR factors of A (each on a copy); last
 * a copy of B left as it was by a triangular solve with a zero triangle
 * (TARN_EINVAL, info 1: the solve's tasks after the check do nothing, and
 * its copy of B, a temporary, gets zeros). */
static int own_op(tarn_rt *rt, int op, tarn_matrix *a, tarn_matrix *b,
                  tarn_matrix *s, tarn_matrix **out) {
  int info = 0, rc = 0;
  switch (op) {
    case 0:
      return tarn_matrix_syrk_ata(a, out);
    case 1:
      return tarn_matrix_gemm(a, TARN_NO_TRANS, b, TARN_NO_TRANS, 1.0, 0.0,
                              out);
    case 2:
      return tarn_matrix_gemm(a, TARN_TRANS, a, TARN_NO_TRANS, 1.0, 0.0, out);
    default: {
      rc = tarn_matrix_copy(op == 3 ? s : op == 4 || op == 6 ? b : a, out);
      if (rc == 0 && op == 3) rc = tarn_matrix_cholesky(*out, &info);
      if (rc == 0 && op == 4) {
        size_t piv[OWN_N];
        rc = tarn_matrix_lu(*out, piv, &info);
      }
      if (rc == 0 && op == 5) {
        tarn_matrix *t = NULL;
        rc = tarn_matrix_qr(*out, 8, &t);
        tarn_matrix_destroy(t);
      }
      if (rc == 0 && op == 6) {
        tarn_matrix *zero = NULL;
        rc = tarn_matrix_zeros(rt, OWN_N, OWN_N, OWN_NB, OWN_NB, &zero);
        if (rc == 0)
          rc = tarn_matrix_triangular_solve(zero, TARN_LOWER, TARN_NO_TRANS,
                                            TARN_NON_UNIT, *out, &info);
        tarn_matrix_destroy(zero);
        if (rc != TARN_EINVAL || info != 1) return TARN_EIO; /* not as said */
        return 0;
      }
      return rc == 0 && info != 0 ? TARN_EINVAL : rc;
    }
  }
}

static void test_only_written_bytes_reach_the_disk(void **state) {
  (void)state;
  struct memdisk *disk = memdisk_new();
  tarn_storage storage = memdisk_storage(disk);
  tarn_rt_options o;
  assert_int_equal(tarn_rt_options_init(&o), 0);
  o.workers = 3;
  o.pool.mem_limit = 5 * OWN_NB * OWN_NB * sizeof(double);
  o.pool.storage = &storage;
  o.pool.cache_bytes = 0; /* every buffer fresh from the heap */
  tarn_rt *rt = NULL;
  assert_int_equal(tarn_rt_create(&o, &rt), 0);
  double poison = POISON;
  pthread_mutex_lock(&disk->lock);
  memcpy(&disk->watch, &poison, sizeof disk->watch);
  pthread_mutex_unlock(&disk->lock);

  tarn_matrix *a = NULL, *b = NULL, *s = NULL;
  assert_int_equal(tarn_matrix_rand(rt, OWN_M, OWN_N, OWN_NB, OWN_NB, 61, &a),
                   0);
  assert_int_equal(tarn_matrix_rand(rt, OWN_N, OWN_N, OWN_NB, OWN_NB, 62, &b),
                   0);
  assert_int_equal(tarn_matrix_syrk_ata(a, &s), 0); /* SPD: A has rank N */
  for (int op = 0; op < OWN_OPS; op++) {
    tarn_matrix *first = NULL, *again = NULL;
    assert_int_equal(own_op(rt, op, a, b, s, &first), 0);
    double *want = test_buffer_of(first);
    tarn_matrix_destroy(first);

    pthread_mutex_lock(&disk->lock);
    disk->watched = 0;
    int writes = disk->writes;
    pthread_mutex_unlock(&disk->lock);
    atomic_store(&poisoning, true);
    atomic_store(&poisoned, 0);
    int rc = own_op(rt, op, a, b, s, &again);
    double *got = rc == 0 ? test_buffer_of(again) : NULL; /* waits */
    atomic_store(&poisoning, false);
    assert_int_equal(rc, 0);
    assert_true(atomic_load(&poisoned) > 0);
    pthread_mutex_lock(&disk->lock);
    if (disk->watched != 0 || disk->writes == writes)
      fail_msg("operation %d: %zu words of POISON in %d writes", op,
               disk->watched, disk->writes - writes);
    pthread_mutex_unlock(&disk->lock);
    size_t rows = op == 1 || op == 5 ? OWN_M : OWN_N;
    assert_memory_equal(got, want, rows * OWN_N * sizeof *got);
    tarn_matrix_destroy(again);
    free(got);
    free(want);
  }
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(s);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  memdisk_free(disk);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qr_solve_on_a_failing_disk),
      cmocka_unit_test(test_cholesky_on_a_failing_disk),
      cmocka_unit_test(test_lu_and_qr_on_a_failing_disk),
      cmocka_unit_test(test_tall_qr_on_a_failing_disk),
      cmocka_unit_test(test_factor_uses_on_a_failing_disk),
      cmocka_unit_test(test_products_on_a_failing_disk),
      cmocka_unit_test(test_array_ops_on_a_failing_disk),
      cmocka_unit_test(test_only_written_bytes_reach_the_disk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
