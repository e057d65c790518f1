/* checksum.c: XXH3-64 with a run-time choice of the AVX2 build (in
 * checksum_avx2.c, compiled with -mavx2 on x86-64) or this portable one. */
#define XXH_INLINE_ALL
#include <stdatomic.h>
#include <xxhash.h>

#include "pool/checksum.h"

#ifdef TARN_HAVE_AVX2_CHECKSUM
uint64_t tarn__checksum_avx2(const void *data, size_t size);
#endif

uint64_t tarn__checksum_portable(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}

typedef uint64_t (*checksum_fn)(const void *, size_t);

static checksum_fn choose(void) {
#ifdef TARN_HAVE_AVX2_CHECKSUM
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return tarn__checksum_avx2;
#endif
  return tarn__checksum_portable;
}

uint64_t tarn__checksum(const void *data, size_t size) {
  static _Atomic(checksum_fn) chosen;
  checksum_fn fn = atomic_load_explicit(&chosen, memory_order_relaxed);
  if (fn == NULL) {
    fn = choose();
    atomic_store_explicit(&chosen, fn, memory_order_relaxed);
  }
  return fn(data, size);
}
