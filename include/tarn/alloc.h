/* tarn/alloc.h: the slab set, a bump allocator for task temporaries.
 *
 * A slab set reserves N slabs of S bytes each with one mapping of address
 * space; a page is backed by memory only when it is first touched. A thread
 * claims a whole slab (tarn_slab_acquire), allocates from it by bumping a
 * pointer (tarn_slab_alloc), frees everything since a mark at once
 * (tarn_slab_mark / tarn_slab_reset, last in, first out) and hands the slab
 * back (tarn_slab_release), which resets it and returns its pages above a
 * retained high-water mark to the operating system.
 *
 * Thread-safety: tarn_slab_set_create, _destroy, tarn_slab_acquire,
 * tarn_slab_release and tarn_slab_set_stats_get may be called from any thread
 * at once (destroy only once nothing else uses the set). A claimed slab belongs
 * to one thread at a time: tarn_slab_alloc, _mark, _reset, _used and
 * _available on one slab must not run concurrently. A slab may be handed to
 * another thread together with a happens-before edge (a mutex, a queue).
 */
#ifndef TARN_ALLOC_H
#define TARN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/status.h"

#include "tarn/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits and defaults. */
#define TARN_SLAB_COUNT_MAX 4096
#define TARN_SLAB_COUNT_DEFAULT 128
#define TARN_SLAB_SIZE_DEFAULT ((size_t)64 << 20)    /* 64 MiB */
#define TARN_SLAB_RETAIN_DEFAULT ((size_t)256 << 10) /* 256 KiB */

typedef struct tarn_slab_set tarn_slab_set;
typedef struct tarn_slab tarn_slab;

typedef struct tarn_slab_set_options {
  /* Number of slabs, 1 to TARN_SLAB_COUNT_MAX. Default 128. */
  size_t count;
  /* Bytes per slab, rounded up to the page size. Default 64 MiB. */
  size_t slab_size;
  /* Bytes at the start of a slab whose pages stay backed when the slab is
   * released (the high-water mark); pages above it are given back with
   * madvise(MADV_DONTNEED). Rounded up to the page size, at most slab_size.
   * Default 256 KiB. */
  size_t retain_bytes;
} tarn_slab_set_options;

/* Fills `options` with the defaults above. Thread-safe. */
TARN_API void tarn_slab_set_options_init(tarn_slab_set_options *options);

/* Reserves a slab set. `options` may be NULL for the defaults. On success
 * *set owns the reservation until tarn_slab_set_destroy and 0 is returned.
 * Returns TARN_EINVAL for a count of 0 or above TARN_SLAB_COUNT_MAX, a slab
 * size of 0, or a total size that overflows; TARN_ENOMEM when the system
 * refuses the reservation (overcommit rules, ulimit -v) or the bookkeeping
 * cannot be allocated. *set is untouched on failure. Thread-safe. */
TARN_API int tarn_slab_set_create(const tarn_slab_set_options *options,
                                  tarn_slab_set **set);

/* Unmaps the whole set. Every slab of it, claimed or not, and every pointer
 * allocated from one, is invalid afterwards. NULL is a no-op. Must not run
 * concurrently with any other call on the set.
 *
 * The set's handle keeps a magic word: while the heap has not reused its
 * memory, a destroyed set handed to this call or to tarn_slab_acquire,
 * tarn_slab_release or tarn_slab_set_stats_get is refused (TARN_EINVAL;
 * here a no-op) and reported on stderr as "tarn: slab set <address> used
 * after tarn_slab_set_destroy", and so is, quietly, memory that never held
 * a set; nothing of it is written. Using a destroyed set stays a bug that
 * this only makes likelier to be seen. */
TARN_API void tarn_slab_set_destroy(tarn_slab_set *set);

/* Claims a free slab: finds a set bit in the set's free mask and clears it
 * with compare-and-swap. Never blocks. On success *slab is empty, belongs to
 * the caller until tarn_slab_release, and 0 is returned. Returns TARN_EBUSY
 * at once when every slab was claimed during the scan, TARN_EINVAL for a NULL
 * argument or a set that is not live (tarn_slab_set_destroy). Thread-safe and
 * lock-free. */
TARN_API int tarn_slab_acquire(tarn_slab_set *set, tarn_slab **slab);

/* Hands a claimed slab back to `set`: resets it (every pointer allocated
 * from it becomes invalid, every mark stale) and gives its pages above the
 * retained high-water mark back to the system. Returns 0; TARN_EINVAL when
 * `slab` is not a slab of `set` or `set` is not live (nothing is touched);
 * TARN_EMISUSE when the slab is not claimed, for example when it is released
 * twice (nothing is touched). Thread-safe; releasing a slab that another thread
 * has meanwhile claimed again cannot be told from a first release and is the
 * caller's bug. */
TARN_API int tarn_slab_release(tarn_slab_set *set, tarn_slab *slab);

/* Gives the pages of a claimed slab above what is in use, and above the
 * set's retained bytes, back to the system, as a release does, while the
 * caller keeps the slab and everything allocated from it: for an owner
 * that holds a slab through idle spells (the runtime's workers, before
 * they sleep). Pages given back come back zeroed at their next use.
 * Returns 0, or TARN_EINVAL for NULL. Not thread-safe (the slab's owner
 * only). */
TARN_API int tarn_slab_trim(tarn_slab *slab);

/* A position in a slab to reset to. Treat as opaque; copy freely. */
typedef struct tarn_mark {
  const tarn_slab *slab;
  uint64_t serial;
  size_t offset;
} tarn_mark;

/* Records the slab's current position in *mark, so that tarn_slab_reset can
 * free everything allocated after it. A mark takes 16 bytes of the slab,
 * after up to 7 of padding that align it to 8. Returns 0, TARN_ENOSPC when
 * those are not left, TARN_EINVAL for a
 * NULL argument. Not thread-safe (the slab's owner only). */
TARN_API int tarn_slab_mark(tarn_slab *slab, tarn_mark *mark);

/* Frees everything allocated from `slab` since `mark` (last in, first out):
 * pointers allocated after it become invalid, marks taken after it become
 * stale, and `mark` itself stays valid, so a loop may reset to it each time
 * round. Returns 0; TARN_EINVAL when `mark` is from another slab;
 * TARN_ESTALE when `mark` was freed by an earlier reset or the slab has been
 * released since. Nothing changes on failure. Not thread-safe (the slab's
 * owner only). */
TARN_API int tarn_slab_reset(tarn_slab *slab, const tarn_mark *mark);

/* Frees everything allocated from `slab` since `mark` and the mark itself:
 * the slab is as it was before tarn_slab_mark (its padding given back
 * too: tarn_slab_used is what it was then), and `mark` and the marks
 * taken after it become stale. A mark that is reset but never unmarked
 * keeps its 16 bytes, so code that marks and frees once per job (the
 * runtime, once per task) unmarks. Returns and fails as tarn_slab_reset;
 * nothing changes on failure. Not thread-safe (the slab's owner only). */
TARN_API int tarn_slab_unmark(tarn_slab *slab, const tarn_mark *mark);

/* Bytes of `slab` in use (allocations, their alignment padding and marks). */
TARN_API size_t tarn_slab_used(const tarn_slab *slab);

/* Bytes left in `slab` for one allocation aligned to 1. */
TARN_API size_t tarn_slab_available(const tarn_slab *slab);

typedef struct tarn_slab_set_stats {
  size_t count;           /* slabs in the set */
  size_t slab_size;       /* bytes per slab, after rounding */
  size_t retain_bytes;    /* pages kept backed on release, after rounding */
  size_t claimed;         /* slabs claimed at the moment of the call */
  uint64_t acquires;      /* successful tarn_slab_acquire calls so far */
  uint64_t trimmed_bytes; /* bytes given back with madvise so far: the
                             address ranges discarded, touched or not (an
                             upper bound on the memory returned) */
} tarn_slab_set_stats;

/* Fills *stats. `claimed` is a snapshot that concurrent calls may have
 * changed by the time it returns. Returns 0 or TARN_EINVAL for NULL or a set
 * that is not live (*stats untouched). Thread-safe. */
TARN_API int tarn_slab_set_stats_get(const tarn_slab_set *set,
                                     tarn_slab_set_stats *stats);

/* Out-of-line allocation: the same contract as tarn_slab_alloc, which calls
 * it for everything its inline fast path does not handle. */
TARN_API int tarn_slab_alloc_slow(tarn_slab *slab, size_t size, size_t align,
                                  void **out);

/* The first bytes of every tarn_slab. Public only so that the common case of
 * tarn_slab_alloc is inlined into the caller (a few instructions, no call);
 * its fields are private to tarn. `fast_end` is the end of the slab, or 0
 * when every allocation must take the out-of-line path (builds that poison
 * memory for AddressSanitizer). */
struct tarn__slab_bump {
  uintptr_t cur;
  uintptr_t fast_end;
  size_t max_align;
};

/* Allocates `size` bytes aligned to `align` (a power of two, at most the
 * page size) from a claimed slab by bumping its pointer. On success *out
 * points at the block, valid until a reset to an earlier mark or the
 * release of the slab, and 0 is returned. Returns TARN_EINVAL for a size of
 * 0, an alignment that is not a power of two or is above the page size, or a
 * NULL argument; TARN_ENOSPC when the slab has not that much left. *out and
 * the slab are untouched on failure. Not thread-safe (the slab's owner
 * only). */
static inline int tarn_slab_alloc(tarn_slab *slab, size_t size, size_t align,
                                  void **out) {
  if (slab != TARN__NULL && out != TARN__NULL) {
    struct tarn__slab_bump *b =
        TARN__REINTERPRET(struct tarn__slab_bump *, slab);
    uintptr_t start =
        (b->cur + (align - 1)) & ~TARN__CONVERT(uintptr_t, align - 1);
    /* One test covers the common case; anything unusual (size 0, a bad
     * alignment, too little room, poisoning builds) goes out of line. */
    if ((align & (align - 1)) == 0 && align - 1 < b->max_align &&
        start <= b->fast_end && size - 1 < b->fast_end - start) {
      b->cur = start + size;
      *out = TARN__REINTERPRET(void *, start);
      return 0;
    }
  }
  return tarn_slab_alloc_slow(slab, size, align, out);
}

/* Freeing one block of a slab is a no-op: memory comes back with
 * tarn_slab_reset or tarn_slab_release. Present so that code written against
 * malloc/free reads the same. */
static inline void tarn_slab_free(tarn_slab *slab, void *block) {
  (void)slab;
  (void)block;
}

#ifdef __cplusplus
}
#endif

#endif
