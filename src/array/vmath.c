/* vmath.c: the vectorised loops of vmath.h. The AVX2 paths use the
 * compiler's intrinsics (x86-64, GCC or Clang); sin calls libmvec's
 * _ZGVdN4v_sin (glibc's vector ABI name for a 4-lane sin), linked through
 * libm. Which path runs is decided once, at first use. */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "array/vmath.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TARN_HAVE_AVX2 1
#if defined(__GLIBC__)
#define TARN_HAVE_LIBMVEC 1
#endif
#endif

#ifdef TARN_HAVE_LIBMVEC
__attribute__((target("avx2"))) __m256d _ZGVdN4v_sin(__m256d x);

__attribute__((target("avx2"))) static void vsin_avx2(const double *in,
                                                      double *out, size_t n) {
  size_t k = 0;
  for (; n - k >= 4; k += 4)
    _mm256_storeu_pd(out + k, _ZGVdN4v_sin(_mm256_loadu_pd(in + k)));
  for (; k < n; k++) out[k] = sin(in[k]);
}
#endif

#ifdef TARN_HAVE_AVX2
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

/* One element of tarn__vsum3, in its order. */
static inline double sum3_at(const double *c0, const double *c1,
                             const double *c2, size_t p) {
  return 0.0 + c0[p] + c0[p + 1] + c0[p + 2] + c1[p] + c1[p + 1] + c1[p + 2] +
         c2[p] + c2[p + 1] + c2[p + 2];
}

#ifdef TARN_HAVE_AVX2
/* Four rows at a time, each vector stored only after the next four rows'
 * loads. In the stencil, output column j and source column j (c1) are
 * tiles of 2 MiB on huge pages, so o[p] and c1[p + 1] lie at the same
 * offset in their pages: stored right away, a vector is still in the
 * store buffer when the next rows load its twin, and the processor makes
 * that load wait as if it read the stored bytes (it seems to compare more
 * of the physical address than the page offset: on small pages, whose
 * physical addresses are unrelated, the same loads do not wait).
 * On this machine a 512 x 512 tile took 1.10 to 1.24 ms that way against
 * 0.25 to 0.29 on small pages; one vector later, 0.25 on either (a
 * program outside the repository, 2026-12-03). */
__attribute__((target("avx2"))) static void vsum3_avx2(const double *c0,
                                                       const double *c1,
                                                       const double *c2,
                                                       double *o, size_t n) {
  size_t p = 0;
  __m256d last = _mm256_setzero_pd();
  for (; n - p >= 4; p += 4) {
    __m256d s = _mm256_add_pd(_mm256_setzero_pd(), _mm256_loadu_pd(c0 + p));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c0 + p + 1));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c0 + p + 2));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c1 + p));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c1 + p + 1));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c1 + p + 2));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c2 + p));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c2 + p + 1));
    s = _mm256_add_pd(s, _mm256_loadu_pd(c2 + p + 2));
    if (p > 0) _mm256_storeu_pd(o + p - 4, last);
    last = s;
  }
  if (p > 0) _mm256_storeu_pd(o + p - 4, last);
  for (; p < n; p++) o[p] = sum3_at(c0, c1, c2, p);
}
#endif

void tarn__vsum3(const double *c0, const double *c1, const double *c2,
                 double *o, size_t n) {
#ifdef TARN_HAVE_AVX2
  if (have_avx2()) {
    vsum3_avx2(c0, c1, c2, o, n);
    return;
  }
#endif
  for (size_t p = 0; p < n; p++) o[p] = sum3_at(c0, c1, c2, p);
}
