/* checksum_avx2.c: XXH3-64 built with -mavx2; called only where the
 * processor has AVX2 (see checksum.c). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "pool/checksum.h"

uint64_t tarn__checksum_avx2(const void *data, size_t size);

uint64_t tarn__checksum_avx2(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}
