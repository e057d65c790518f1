/* runs.h: page runs, the pool's allocator for small bytes buffers.
 *
 * A buffer of 1 to RUNS_MAX_PAGES pages is a slot of a run: a mapping of
 * RUNS_BYTES on a RUNS_BYTES boundary whose first page holds the run's
 * header and whose other pages are cut into slots of one size. The heap's
 * page-aligned allocation puts up to a page of padding before each buffer
 * (8 KiB of RSS for a 4 KiB buffer, measured with glibc); a slot has none,
 * so the memory a pool counts against its limit is the memory it holds.
 * Slots are page-aligned, as tarn_ref_alloc promises and O_DIRECT needs.
 *
 * Invariants, under the allocator's lock: a run is in its size class's
 * list of open runs exactly when it has a free slot; a run with no slot in
 * use is unmapped unless it is the only open run of its class. */
#ifndef TARN_POOL_RUNS_H
#define TARN_POOL_RUNS_H

#include <stdbool.h>
#include <stddef.h>

#define RUNS_BYTES ((size_t)2 << 20)
#define RUNS_MAX_PAGES 16

typedef struct tarn__runs tarn__runs;

/* A new allocator for pages of `page` bytes, in *out; *out is NULL (and 0
 * returned) when runs do not pay on this system: pages over 16 KiB (fewer
 * than eight slots of the largest size per run) or an AddressSanitizer
 * build, where the heap's red zones around each buffer catch a kernel
 * that writes past its tile. Returns 0 or TARN_ENOMEM. */
int tarn__runs_create(size_t page, tarn__runs **out);

/* Whether `runs` (possibly NULL) serves buffers of `cap` bytes (decided by
 * cap alone, so a free needs no record of where a buffer came from). */
bool tarn__runs_serves(const tarn__runs *runs, size_t cap);

/* A page-aligned slot of `cap` bytes, which runs serve, or NULL when the
 * system has no memory. Its bytes are undefined. Thread-safe. */
void *tarn__runs_alloc(tarn__runs *runs, size_t cap);

/* Gives back a slot of tarn__runs_alloc (its run knows its size).
 * Thread-safe. */
void tarn__runs_free(tarn__runs *runs, void *buf);

/* Unmaps every run (slots still in use included). NULL is a no-op. */
void tarn__runs_destroy(tarn__runs *runs);

#endif
