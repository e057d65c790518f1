/* pool_internal.h: what the pool offers the layers above it and nobody
 * else: one pointer slot per ref for the runtime's state, freed through a
 * callback when the ref dies, a count of the tasks that will use a ref
 * (which eviction reads), and a cheap read of the peaks. */
#ifndef TARN_POOL_INTERNAL_H
#define TARN_POOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tarn/pool.h"

/* Checks the pool's environment variables (tarn_env_check): returns 0
 * when each is unset, empty or valid, else TARN_EINVAL with *name (when
 * `name` is not NULL) the first that is not; *name is NULL otherwise. */
int tarn__pool_env_check(const char **name);

/* Sets the function that frees a ref's owner slot when the ref dies (called
 * without the pool lock, from whichever thread releases it). A pool with
 * one belongs to the layer that set it: tarn_pool_destroy refuses it
 * (TARN_EMISUSE), and that layer destroys it with tarn__pool_destroy. */
void tarn__pool_set_owner_free(tarn_pool *pool,
                               void (*owner_free)(void *ctx, void *owner),
                               void *ctx);

/* tarn_pool_destroy without its checks, for the layer that owns the pool
 * (tarn__pool_set_owner_free). NULL is a no-op. */
int tarn__pool_destroy(tarn_pool *pool);

/* The ref's owner state. When the slot is empty and `install` is not NULL,
 * puts `install` there (atomically: of racing installers one wins).
 * Returns what the slot holds afterwards. Thread-safe. */
void *tarn__ref_owner(tarn_ref *ref, void *install);

/* The pool a ref belongs to. */
tarn_pool *tarn__ref_pool(const tarn_ref *ref);

/* The bytes the ref counts against the pool's limit while resident (its
 * size in whole pages, or what tarn_ref_adopt was told); fixed for the
 * ref's life. */
size_t tarn__ref_charge(const tarn_ref *ref);

/* Adds `delta` (+1 or -1) to the count of tasks submitted and not yet
 * ended that use `ref` (alive). The runtime counts while the pool has a
 * limit or refs made by tarn_ref_create_from; eviction then
 * takes refs that no such task uses before the others, since those are
 * known to be needed again, and a source's read fills only neighbours a
 * task will use (tarn__ref_fill_begin). A hint: only which ref is evicted
 * or filled depends on it. Thread-safe, lock-free. */
void tarn__ref_demand(tarn_ref *ref, int delta);

/* Sets the submission order (the runtime's task sequence number) of the
 * first task not yet ended that uses `ref` (alive), UINT64_MAX when none
 * does, which the runtime keeps alongside tarn__ref_demand. Among refs
 * that tasks will use, eviction takes those whose next use comes last
 * (Belady's choice, from the submitted graph). A hint, as the demand is.
 * Thread-safe, lock-free. */
void tarn__ref_next_use(tarn_ref *ref, uint64_t seq);

/* Whether the pool has made a ref by tarn_ref_create_from (once true, it
 * stays so). Thread-safe, lock-free. */
bool tarn__pool_has_sources(const tarn_pool *pool);

/* Takes back a TARN_WRITE pin whose holder wrote nothing and whose old
 * bytes nobody will read: the runtime's task that pinned its output but
 * could not pin the rest of its data, and waits to try again (only tasks
 * that wait for it may read the ref). When this was the last pin and the
 * object's bytes exist nowhere else, they are freed and the ref is left
 * empty (read as zeros, like a new ref), so that eviction does not write
 * bytes that mean nothing; otherwise it is a plain tarn_ref_unpin.
 * Thread-safe. */
void tarn__ref_unpin_unwritten(tarn_ref *ref);

/* Whether `ref`'s object is in RAM and pinnable without the pool's lock:
 * a hint for the runtime (it may change at once). Thread-safe, lock-free. */
bool tarn__ref_resident_hint(const tarn_ref *ref);

/* How many reads back have ended so far on threads other than the
 * caller, counting those that brought an object in and a read ahead's
 * that failed (it gave its room back): the mark for
 * tarn__pool_reads_settle. The caller's own reads are left out: they are
 * its own tries, not room another thread gave back. Thread-safe,
 * lock-free. */
uint64_t tarn__pool_reads_ended(tarn_pool *pool);

/* Waits until no object is being read back (a prefetch, another thread's
 * pin): each leaves an object that can then be evicted. Returns whether
 * there was one to wait for, or another thread's ended since `since` (a
 * value of tarn__pool_reads_ended taken before the caller found no room). For
 * the runtime's last try at a task's data when nothing else runs; never called
 * from the pool's own threads. Thread-safe. */
bool tarn__pool_reads_settle(tarn_pool *pool, uint64_t since);

/* Lets the caller give `ref` its bytes while it reads another ref's from
 * the same place (a source that reads a band of a file's tiles at once):
 * when `ref` came from a source that still holds its bytes, has none in
 * RAM, is not being read, a submitted task will use it (tarn__ref_demand;
 * under a memory limit, the runtime asked for it to be read ahead:
 * tarn_ref_prefetch), and the pool has room for it without a write or
 * dropping what a task will use (its cache, free room under its limit,
 * or room of clean objects no task uses), returns a buffer of its size
 * for the caller to fill, the ref being read meanwhile (a pin waits for
 * it; it stays alive); else NULL. The caller then calls
 * tarn__ref_fill_end(ref, buf, filled): with `filled`, the ref is in RAM
 * and clean (dropped without a write when room is needed, read from its
 * source again after); without, as it was before. Takes the pool's lock
 * and never waits for I/O. Thread-safe. */
void *tarn__ref_fill_begin(tarn_ref *ref);
void tarn__ref_fill_end(tarn_ref *ref, void *buf, bool filled);

/* The peaks of resident and of live bytes since the last reset by this
 * call (the runtime's regions' window: kept apart from the peaks that
 * tarn_pool_stats_get reports and tarn_pool_peak_reset resets, which it
 * never touches); with `reset`, then resets them to the current values,
 * under the same lock (no peak is lost between the read and the reset).
 * Thread-safe. */
void tarn__pool_peaks(tarn_pool *pool, bool reset, size_t *resident_peak,
                      size_t *live_peak);

/* Gives back the buffers the recycling cache keeps and the spill file's
 * unused space (tarn__store_trim): for the runtime's idle moments.
 * Thread-safe. */
void tarn__pool_trim(tarn_pool *pool);

#endif
