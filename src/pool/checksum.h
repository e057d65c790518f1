/* checksum.h: the spill store's block checksum, XXH3-64 from libxxhash's
 * header. The value is the same on every machine; the code path is chosen
 * once, at first use: AVX2 where the processor has it (twice the speed of
 * the SSE2 build Debian ships), else the portable one. Thread-safe. */
#ifndef TARN_POOL_CHECKSUM_H
#define TARN_POOL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

uint64_t tarn__checksum(const void *data, size_t size);

/* The portable build alone, whatever the processor has: what a machine
 * without AVX2 computes (the tests compare the two). Thread-safe. */
uint64_t tarn__checksum_portable(const void *data, size_t size);

#endif
