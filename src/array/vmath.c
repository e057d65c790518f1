/* vmath.c: the vectorised loops of vmath.h. The AVX2 path calls libmvec's
 * _ZGVdN4v_sin (glibc's vector ABI name for a 4-lane sin), linked through
 * libm; which path runs is decided once, at first use. */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "array/vmath.h"

#if defined(__x86_64__) && defined(__GLIBC__) && \
    (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TARN_HAVE_LIBMVEC 1

__attribute__((target("avx2"))) __m256d _ZGVdN4v_sin(__m256d x);

__attribute__((target("avx2"))) static void vsin_avx2(const double *in,
                                                      double *out, size_t n) {
  size_t k = 0;
  for (; n - k >= 4; k += 4)
    _mm256_storeu_pd(out + k, _ZGVdN4v_sin(_mm256_loadu_pd(in + k)));
  for (; k < n; k++) out[k] = sin(in[k]);
}

static bool have_avx2(void) {
  static atomic_int known; /* 0 unknown, 1 no, 2 yes */
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (v == 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx2") ? 2 : 1;
    atomic_store_explicit(&known, v, memory_order_relaxed);
  }
  return v == 2;
}
#endif

void tarn__vsin(const double *in, double *out, size_t n) {
#ifdef TARN_HAVE_LIBMVEC
  if (have_avx2()) {
    vsin_avx2(in, out, n);
    return;
  }
#endif
  for (size_t k = 0; k < n; k++) out[k] = sin(in[k]);
}
