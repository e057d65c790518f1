/* test_threads.c: the linear algebra from several program threads at once
 * on one runtime, as a server handling requests would call it. Each thread
 * factors matrices of its own (Cholesky of A^T A + n I built by syrk_ata,
 * LU with its pivots, QR applied as Q^T to a B, a solve through LU), twice in
 * a row, while the others do the same; under a memory limit far below the
 * data, so tiles spill and come back under every thread's tasks. Every
 * result must have the bits of the same call made alone on a runtime
 * without a limit: tiles of 32 are too small for any kernel to share its
 * work, so nothing depends on timing. And the same jobs in a child of
 * fork, made while the parent's threads run theirs, on a runtime of the
 * child's own, its calls on the parent's handles refused (docs/rt.md,
 * "Processes that fork"). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"

enum { kinds = 4, threads = 8, rounds = 2, tile = 32 };

/* What one call produced: its output's elements (and LU's pivots). */
struct result {
  double *values;
  size_t count;
  size_t *piv;
  int rc;
  /* The argument of the job's tarn_matrix_apply. Its tasks may run after
   * the call that waits for the factorisation (Cholesky does not wait for
   * the tiles above the diagonal), so it lives as long as the runtime. */
  double shift;
};

/* Adds *arg to the diagonal of a block. */
static int add_diagonal(const tarn_block *b, void *arg) {
  double v = *(const double *)arg;
  for (size_t q = 0; q < b->cols; q++) {
    size_t j = b->col + q;
    if (j >= b->row && j < b->row + b->rows)
      b->data[0][(j - b->row) + q * b->ld] += v;
  }
  return 0;
}

/* Job `kind` on an n x n input from `seed`, into *out. Fails the result's
 * rc (no assertion: it runs on program threads). */
static void job(tarn_rt *rt, int kind, size_t n, uint64_t seed,
                struct result *out) {
  memset(out, 0, sizeof *out);
  tarn_matrix *a = NULL, *spd = NULL, *t = NULL, *b = NULL, *keep = NULL;
  int info = 0;
  int rc = tarn_matrix_rand(rt, n, n, tile, tile, seed, &a);
  if (rc == 0 && kind == 0) { /* Cholesky of A^T A + n I */
    rc = tarn_matrix_syrk_ata(a, &spd);
    out->shift = (double)n;
    tarn_matrix *const m[] = {spd};
    const tarn_access rw[] = {TARN_READ_WRITE};
    if (rc == 0) rc = tarn_matrix_apply(m, rw, 1, add_diagonal, &out->shift);
    if (rc == 0) rc = tarn_matrix_cholesky(spd, &info);
    keep = spd;
  } else if (rc == 0 && kind == 1) { /* LU */
    out->piv = malloc(n * sizeof *out->piv);
    rc = out->piv == NULL ? TARN_ENOMEM : tarn_matrix_lu(a, out->piv, &info);
    keep = a;
  } else if (rc == 0 && kind == 2) { /* QR, then Q^T B with its factors */
    rc = tarn_matrix_qr(a, 8, &t);
    if (rc == 0) rc = tarn_matrix_rand(rt, n, 3, tile, 3, seed + 1, &b);
    if (rc == 0) rc = tarn_matrix_qr_multiply(a, t, TARN_LEFT, TARN_TRANS, b);
    keep = b;
  } else if (rc == 0) { /* A X = B for three right-hand sides */
    rc = tarn_matrix_rand(rt, n, 3, tile, 3, seed + 1, &b);
    if (rc == 0) rc = tarn_matrix_solve(a, b, &info);
    keep = b;
  }
  if (rc == 0) {
    size_t rows = tarn_matrix_rows(keep), cols = tarn_matrix_cols(keep);
    out->count = rows * cols;
    out->values = malloc(out->count * sizeof *out->values);
    rc = out->values == NULL ? TARN_ENOMEM
                             : tarn_matrix_to_buffer(keep, out->values, rows);
  }
  out->rc = rc;
  tarn_matrix *const all[] = {a, spd, t, b};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
}

static size_t size_of(int thread) { return 70 + 23 * (size_t)thread; }

struct worker_arg {
  tarn_rt *rt;
  int thread;
  struct result got[rounds];
};

static void *thread_main(void *arg) {
  struct worker_arg *w = arg;
  for (int r = 0; r < rounds; r++)
    job(w->rt, w->thread % kinds, size_of(w->thread), 900 + (uint64_t)w->thread,
        &w->got[r]);
  return NULL;
}

static void free_result(struct result *r) {
  free(r->values);
  free(r->piv);
}

/* The jobs of every thread at once, on a runtime under JOBS_LIMIT (1 MiB:
 * the inputs alone are about 2.4 MiB), and what each must give: the bits
 * of the same job run alone without a limit. */
#define JOBS_LIMIT ((size_t)1 << 20)
struct jobs {
  tarn_rt *rt;
  struct result want[threads];
  struct worker_arg w[threads];
  pthread_t th[threads];
};

/* Runs each job alone for j->want, then starts them all at once on
 * `threads` program threads, on a new runtime j->rt under JOBS_LIMIT. */
static void jobs_start(struct jobs *j) {
  tarn_rt *alone = test_rt(2, 0);
  for (int i = 0; i < threads; i++) {
    job(alone, i % kinds, size_of(i), 900 + (uint64_t)i, &j->want[i]);
    assert_int_equal(j->want[i].rc, 0);
  }
  assert_int_equal(tarn_rt_destroy(alone), 0);
  j->rt = test_rt(2, JOBS_LIMIT);
  for (int i = 0; i < threads; i++) {
    j->w[i] = (struct worker_arg){.rt = j->rt, .thread = i};
    assert_int_equal(pthread_create(&j->th[i], NULL, thread_main, &j->w[i]), 0);
  }
}

/* Joins the threads of jobs_start and asserts that each result has the
 * bits of its `want`; frees every result and destroys the runtime, which
 * must have spilled. */
static void jobs_check(struct jobs *j) {
  for (int i = 0; i < threads; i++) {
    assert_int_equal(pthread_join(j->th[i], NULL), 0);
    for (int r = 0; r < rounds; r++) {
      struct result *got = &j->w[i].got[r];
      assert_int_equal(got->rc, 0);
      assert_int_equal(got->count, j->want[i].count);
      assert_memory_equal(got->values, j->want[i].values,
                          got->count * sizeof *got->values);
      if (j->want[i].piv != NULL)
        assert_memory_equal(got->piv, j->want[i].piv,
                            size_of(i) * sizeof *got->piv);
      free_result(got);
    }
    free_result(&j->want[i]);
  }
  test_rt_destroy_spilled(j->rt, JOBS_LIMIT);
}

static void factorisations_from_threads_match_one_at_a_time(void **state) {
  (void)state;
  struct jobs j;
  jobs_start(&j);
  jobs_check(&j);
}

/* The sanitizers' allocators of GCC 12 are not safe to use after a fork
 * of a process with threads: AddressSanitizer's takes no lock around the
 * fork (LLVM added that in December 2023, pull request 75290), and a child
 * here waited for ever on a size class's lock that a thread of the parent
 * held at the fork (two runs of three); ThreadSanitizer ends a child that
 * starts threads after such a fork (its die_after_fork). The release
 * build runs the fork test; the sanitizer builds skip it. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FORK_TESTED 0
#else
#define FORK_TESTED 1
#endif

#if FORK_TESTED
/* Handles the parent made before the fork, for its child to be refused. */
struct before_fork {
  tarn_rt *rt;
  tarn_matrix *matrix;
  tarn_ref *ref;
  tarn_region *region; /* begun on the forking thread, not waited yet */
};

static int nothing(tarn_task *t, void *arg) {
  (void)t;
  (void)arg;
  return 0;
}

/* The child's calls on its parent's handles: each refused, none waiting
 * for threads that are gone, each named on stderr. Returns 0 when so,
 * else the child's exit status. */
static int child_refused(const struct before_fork *b) {
  FILE *err = tmpfile();
  if (err == NULL || fflush(stderr) != 0 || dup2(fileno(err), 2) < 0) return 50;
  void *data = NULL;
  double sum = 0;
  tarn_region *region = NULL;
  int status = 0;
  if (tarn_region_wait(b->region, NULL) != TARN_EMISUSE)
    status = 51;
  else if (tarn_submit(b->rt, nothing, TARN_R(b->ref)) != TARN_EINVAL)
    status = 52;
  else if (tarn_region_begin(b->rt, &region) != TARN_EINVAL)
    status = 53;
  else if (tarn_ref_pin(b->ref, TARN_READ, 0, &data) != TARN_EMISUSE)
    status = 54;
  else if (tarn_matrix_sum(b->matrix, &sum) != TARN_EINVAL)
    status = 55;
  else if (tarn_rt_pool(b->rt) != NULL || tarn_rt_destroy(b->rt) != TARN_EINVAL)
    status = 56;
  tarn_matrix_destroy(b->matrix); /* refused too: nothing freed, no wait */
  char text[4096] = {0};
  fflush(stderr);
  rewind(err);
  size_t got = fread(text, 1, sizeof text - 1, err);
  if (status == 0 && (got == 0 || !strstr(text, "runtime") ||
                      !strstr(text, "ref") || !strstr(text, "matrix") ||
                      !strstr(text, "made before this process forked")))
    status = 57;
  return status;
}

/* The child's side of the fork test: its parent's handles refused, then
 * every kind of job on a runtime of its own under JOBS_LIMIT, each result
 * against `want`. No cmocka here (its failures jump back into the
 * parent's copy of the test): returns the child's exit status, 0 when
 * every call was refused as it should be and every result has the bits
 * of `want`'s. */
static int child_jobs(const struct before_fork *b, const struct result *want) {
  int refused = child_refused(b);
  if (refused != 0) return refused;
  tarn_rt_options o;
  tarn_rt *rt = NULL;
  if (tarn_rt_options_init(&o) != 0) return 2;
  o.workers = 2;
  o.pool.mem_limit = JOBS_LIMIT;
  if (tarn_rt_create(&o, &rt) != 0) return 3;
  int status = 0;
  for (int i = 0; i < threads && status == 0; i++) {
    struct result got;
    job(rt, i % kinds, size_of(i), 900 + (uint64_t)i, &got);
    if (got.rc != 0 || got.count != want[i].count ||
        memcmp(got.values, want[i].values, got.count * sizeof *got.values))
      status = 10 + i;
    else if (want[i].piv != NULL &&
             memcmp(got.piv, want[i].piv, size_of(i) * sizeof *got.piv))
      status = 30 + i;
    free_result(&got);
  }
  return tarn_rt_destroy(rt) != 0 && status == 0 ? 4 : status;
}

/* Waits up to two minutes for `child` to end, its status in *status;
 * false (and the child killed) when it has not: a child that hangs fails
 * the test instead of holding it until ctest's timeout. */
static bool child_exited(pid_t child, int *status) {
  for (int ms = 0; ms < 120000; ms += 10) {
    pid_t got = waitpid(child, status, WNOHANG);
    if (got == child) return true;
    if (got < 0) return false;
    nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
  }
  kill(child, SIGKILL);
  waitpid(child, status, 0);
  return false;
}
#endif

/* A program that forks (a Python pool of processes, a server that forks
 * per request) while its threads compute on a runtime: the child's calls
 * on the parent's handles are refused, it makes a runtime of its own, with
 * its own spill file, and computes what a runtime made before any fork
 * computes; the parent's runtime, its workers busy at the fork and its
 * tiles spilled, goes on undisturbed. Skipped in the sanitizer builds
 * (FORK_TESTED). */
static void a_child_of_fork_computes_on_a_runtime_of_its_own(void **state) {
  (void)state;
#if !FORK_TESTED
  skip();
#else
  struct jobs j;
  jobs_start(&j);
  struct before_fork b = {.rt = j.rt};
  assert_int_equal(tarn_matrix_rand(j.rt, 64, 64, 32, 32, 5, &b.matrix), 0);
  assert_int_equal(tarn_ref_alloc(tarn_rt_pool(j.rt), 4096, 0, &b.ref), 0);
  assert_int_equal(tarn_region_begin(j.rt, &b.region), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) _exit(child_jobs(&b, j.want));
  double sum = 0; /* the parent's own go on */
  assert_int_equal(tarn_region_wait(b.region, NULL), 0);
  assert_int_equal(tarn_matrix_sum(b.matrix, &sum), 0);
  tarn_matrix_destroy(b.matrix);
  assert_int_equal(tarn_ref_release(b.ref), 0);
  int status = -1;
  assert_true(child_exited(child, &status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  jobs_check(&j);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(factorisations_from_threads_match_one_at_a_time),
      cmocka_unit_test(a_child_of_fork_computes_on_a_runtime_of_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
