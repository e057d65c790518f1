/* test_trsm.c: tarn's blocked triangular solve (the tile kernel under
 * Cholesky, LU and solve) against cblas_dtrsm, for every side, triangle,
 * transpose and diagonal, orders below and above the blocking, and alpha
 * 1, 0 and -2.5, and with 1 to 5 right-hand sides (solved a vector at a
 * time): the same solution to within a small multiple of the rounding
 * error. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <cmocka.h>

#include "linalg/linalg_internal.h"

static double rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return (double)(*x >> 11) * 0x1p-53 - 0.5;
}

/* A well-conditioned triangle of order n (leading dimension ld): a strong
 * diagonal, small entries off it, garbage in the other half (never read). */
static double *triangle(int n, int ld, CBLAS_UPLO uplo, uint64_t *seed) {
  double *t = malloc((size_t)ld * n * sizeof *t);
  assert_non_null(t);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < ld; i++) {
      bool inside = uplo == CblasLower ? i >= j : i <= j;
      t[i + (size_t)j * ld] = i == j            ? 2 + rnd(seed)
                              : inside && i < n ? rnd(seed) / n
                                                : NAN;
    }
  return t;
}

static void check(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans,
                  CBLAS_DIAG diag, int m, int n, double alpha, uint64_t seed) {
  int order = side == CblasLeft ? m : n;
  int ldt = order + 3, ldb = m + 5;
  double *t = triangle(order, ldt, uplo, &seed);
  size_t count = (size_t)ldb * n;
  double *want = malloc(count * sizeof *want),
         *got = malloc(count * sizeof *got);
  assert_non_null(want);
  assert_non_null(got);
  for (size_t i = 0; i < count; i++) want[i] = rnd(&seed);
  memcpy(got, want, count * sizeof *got);
  cblas_dtrsm(CblasColMajor, side, uplo, trans, diag, m, n, alpha, t, ldt, want,
              ldb);
  tarn__trsm(side, uplo, trans, diag, m, n, alpha, t, ldt, got, ldb);
  double err = 0, scale = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < ldb; i++) {
      size_t k = i + (size_t)j * ldb;
      if (i >= m) { /* outside B: untouched */
        assert_memory_equal(&got[k], &want[k], sizeof got[k]);
        continue;
      }
      err = fmax(err, fabs(got[k] - want[k]));
      scale = fmax(scale, fabs(want[k]));
    }
  /* Both are backward stable substitutions of a triangle with condition
   * number about 2: they agree to a few hundred ulps of the largest entry. */
  if (!(err <= 256 * 0x1p-52 * (scale > 0 ? scale : 1) * order)) {
    print_error("side %d uplo %d trans %d diag %d m %d n %d alpha %g: %g\n",
                side, uplo, trans, diag, m, n, alpha, err);
    fail();
  }
  free(t);
  free(want);
  free(got);
}

static void blocked_trsm_matches_dtrsm(void **state) {
  (void)state;
  static const int sizes[] = {1, 7, 32, 33, 100, 257};
  static const double alphas[] = {1.0, 0.0, -2.5};
  const CBLAS_SIDE sides[] = {CblasLeft, CblasRight};
  const CBLAS_UPLO uplos[] = {CblasLower, CblasUpper};
  const CBLAS_TRANSPOSE transes[] = {CblasNoTrans, CblasTrans};
  const CBLAS_DIAG diags[] = {CblasNonUnit, CblasUnit};
  uint64_t seed = 1;
  for (int s = 0; s < 2; s++)
    for (int u = 0; u < 2; u++)
      for (int tr = 0; tr < 2; tr++)
        for (int d = 0; d < 2; d++)
          for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++)
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
              int order = sizes[i], other = sizes[(i + 2) % 6];
              int m = sides[s] == CblasLeft ? order : other;
              int n = sides[s] == CblasLeft ? other : order;
              check(sides[s], uplos[u], transes[tr], diags[d], m, n, alphas[a],
                    seed++);
            }
}

/* Few right-hand sides are solved a vector at a time (dtrsv): every
 * variant with 1 to 5 of them, on triangles of 33 to 512, around the
 * choice between that and the blocked solve. */
static void few_right_hand_sides_match_dtrsm(void **state) {
  (void)state;
  static const int orders[] = {33, 257, 512};
  static const double alphas[] = {1.0, -2.5};
  const CBLAS_SIDE sides[] = {CblasLeft, CblasRight};
  const CBLAS_UPLO uplos[] = {CblasLower, CblasUpper};
  const CBLAS_TRANSPOSE transes[] = {CblasNoTrans, CblasTrans};
  const CBLAS_DIAG diags[] = {CblasNonUnit, CblasUnit};
  uint64_t seed = 7;
  for (int s = 0; s < 2; s++)
    for (int u = 0; u < 2; u++)
      for (int tr = 0; tr < 2; tr++)
        for (int d = 0; d < 2; d++)
          for (size_t o = 0; o < sizeof orders / sizeof orders[0]; o++)
            for (int rhs = 1; rhs <= 5; rhs++) {
              bool left = sides[s] == CblasLeft;
              check(sides[s], uplos[u], transes[tr], diags[d],
                    left ? orders[o] : rhs, left ? rhs : orders[o],
                    alphas[rhs % 2], seed++);
            }
}

int main(void) {
  /* cblas_dtrsm, the reference, on one thread as tarn's kernels run: with
   * OpenBLAS's threads ThreadSanitizer reports races inside OpenBLAS
   * (its threads' synchronisation is not instrumented). */
  tarn__blas_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocked_trsm_matches_dtrsm),
      cmocka_unit_test(few_right_hand_sides_match_dtrsm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
