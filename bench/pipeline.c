/* pipeline.c: `tarn-pipeline`, the measurement behind docs/rt.md,
 * "Backpressure": ROUNDS rounds of three elementwise operations (B = A + A,
 * C = B / 2 + 1, A = C - 1) on an N x N matrix of ones in T x T tiles,
 * submitted without waiting and with each intermediate matrix released
 * right after its reader is submitted, under a memory limit, then the sum
 * of A (N * N when right). The runtime's options come from the environment,
 * so TARN_MAX_UNFINISHED sets the bound under test.
 *
 * Usage: tarn-pipeline [N [T [LIMIT_MIB [ROUNDS]]]] (default 2048 16 8 5;
 * LIMIT_MIB 0: no limit). Prints the time, the tasks, the bytes spilled and
 * the process's peak RSS on one line; exit status 0 when the sum is right,
 * 1 on a tarn error or a wrong sum, 2 for a bad command line. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "tarn.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int failed(const char *what, int rc) {
  fprintf(stderr, "tarn-pipeline: %s: %s\n", what, tarn_strerror(rc));
  return 1;
}

/* Parses argv[i] as a count into *v when present. */
static int count_arg(int argc, char **argv, int i, size_t *v) {
  if (i >= argc) return 0;
  char *end = NULL;
  unsigned long long n = strtoull(argv[i], &end, 10);
  if (argv[i][0] < '0' || argv[i][0] > '9' || *end != '\0') return 1;
  *v = (size_t)n;
  return 0;
}

/* One round on *a (replaced by the round's result). */
static int round_of(tarn_matrix **a) {
  tarn_matrix *b = NULL, *c = NULL, *next = NULL;
  int rc = tarn_matrix_add(*a, *a, &b);
  if (rc == 0) rc = tarn_matrix_axpb(b, 0.5, 1.0, &c);
  tarn_matrix_destroy(b);
  if (rc == 0) rc = tarn_matrix_axpb(c, 1.0, -1.0, &next);
  tarn_matrix_destroy(c);
  if (rc != 0) return failed("an elementwise operation", rc);
  tarn_matrix_destroy(*a);
  *a = next;
  return 0;
}

int main(int argc, char **argv) {
  size_t n = 2048, tile = 16, limit_mib = 8, rounds = 5;
  if (count_arg(argc, argv, 1, &n) || count_arg(argc, argv, 2, &tile) ||
      count_arg(argc, argv, 3, &limit_mib) ||
      count_arg(argc, argv, 4, &rounds) || argc > 5 || n == 0 || tile == 0) {
    fprintf(stderr, "usage: tarn-pipeline [N [T [LIMIT_MIB [ROUNDS]]]]\n");
    return 2;
  }
  tarn_rt_options o;
  int rc = tarn_rt_options_init(&o);
  if (rc != 0) return failed("tarn_rt_options_init", rc);
  o.pool.mem_limit = limit_mib << 20;
  tarn_rt *rt = NULL;
  if ((rc = tarn_rt_create(&o, &rt)) != 0) return failed("tarn_rt_create", rc);
  tarn_matrix *a = NULL;
  double sum = 0, t0 = now_s();
  rc = tarn_matrix_fill(rt, n, n, tile, tile, 1.0, &a);
  if (rc != 0) failed("tarn_matrix_fill", rc);
  for (size_t r = 0; rc == 0 && r < rounds; r++) rc = round_of(&a);
  if (rc == 0 && (rc = tarn_matrix_sum(a, &sum)) != 0)
    failed("tarn_matrix_sum", rc);
  double took = now_s() - t0;
  tarn_rt_stats rs = {0};
  tarn_pool_stats ps = {0};
  tarn_rt_stats_get(rt, &rs);
  tarn_pool_stats_get(tarn_rt_pool(rt), &ps);
  tarn_matrix_destroy(a);
  int end = tarn_rt_destroy(rt);
  if (rc != 0) return 1;
  if (end != 0) return failed("tarn_rt_destroy", end);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf(
      "N=%zu T=%zu limit %zu MiB, max_unfinished %u: %.2f s, %llu tasks, "
      "%.0f MiB spilled, peak RSS %.0f MiB, sum %s\n",
      n, tile, limit_mib, o.max_unfinished, took,
      (unsigned long long)rs.submitted, (double)ps.bytes_written / 1048576.0,
      (double)ru.ru_maxrss / 1024.0,
      sum == (double)n * (double)n ? "right" : "WRONG");
  return sum == (double)n * (double)n ? 0 : 1;
}
