/* tarn/pool.h: the memory pool. A pool stores objects behind references
 * (refs) and always knows which are in use, so it frees an object the
 * moment its last reference goes and moves idle objects to disk when a
 * memory limit is reached.
 *
 * Two counts per ref, kept apart: the reference count (retain/release:
 * who holds the handle; it decides when the object dies) and the pin count
 * (pin/unpin: who uses the bytes now; it decides whether the object may
 * leave RAM). A pinned object is never evicted and never moved.
 *
 * Lifecycle rules:
 * 1. A ref starts with one reference and no pin.
 * 2. tarn_ref_pin makes the object resident (reading it back from the spill
 *    store if needed) and returns its address, valid until the matching
 *    tarn_ref_unpin.
 * 3. The last tarn_ref_release frees the object at once when it is
 *    unpinned, else at its last unpin. The handle is invalid after it.
 * 4. tarn_ref_escape returns the address for an access whose end is
 *    unknown: the object is never evicted again and lives until its last
 *    release.
 * 5. Resident bytes (live objects, objects being read back, the recycling
 *    cache) never exceed the limit: a call that needs room first empties the
 *    recycling cache, then evicts unpinned objects, then fails with
 *    TARN_ENOMEM or waits for an unpin, as the caller asked. The only bytes
 *    outside the limit are the short-lived staging buffers of objects of a
 *    user kind or of compressed blocks while they are written or read, and
 *    whatever a source (tarn_ref_create_from) uses while it reads.
 *
 * Every function is thread-safe unless it says otherwise. */
#ifndef TARN_POOL_H
#define TARN_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/export.h"
#include "tarn/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_pool tarn_pool;
typedef struct tarn_ref tarn_ref;

/* How a pin uses the bytes. A TARN_WRITE pin of a spilled object does not
 * read it back: its bytes are undefined until the caller writes them (they
 * may be a freed object's), and any it leaves unwritten go to the spill
 * file as they are when the object is pushed out. A pin
 * with TARN_WRITE makes the spilled copy stale; a TARN_READ pin keeps it, so
 * the object can later be dropped without being written again. */
typedef enum tarn_access {
  TARN_READ = 1,
  TARN_WRITE = 2,
  TARN_READ_WRITE = 3
} tarn_access;

/* A kind says how to free an object the pool does not allocate itself and,
 * optionally, how to copy it to and from the spill store. A kind without
 * save and load is freed but never spilled. The kind must outlive every
 * ref of it. Its functions are called without any pool lock held, from any
 * thread. */
typedef struct tarn_kind {
  const char *name;
  /* Frees `object` of `size` bytes. Required. */
  void (*free)(void *ctx, void *object, size_t size);
  /* Copies the spill image of `object` (`size` bytes) to `dst`. Returns 0
   * or a negative TARN_E* code; the calls waiting for the room get
   * TARN_ENOSPC or TARN_ENOMEM as returned, any other failure as TARN_EIO
   * (and the object stays in RAM). Optional (with load). */
  int (*save)(void *ctx, const void *object, size_t size, void *dst);
  /* Makes a new object from its spill image `src` (`size` bytes) and
   * returns it in *object. Returns 0 or a negative TARN_E* code. */
  int (*load)(void *ctx, const void *src, size_t size, void **object);
  void *ctx;
} tarn_kind;

/* Objects allocated with malloc (freed with free, spilled by copying). */
TARN_API extern const tarn_kind tarn_kind_malloc;

/* The spill store's storage. The default is a file that is unlinked as soon
 * as it is opened; a caller may give its own (tests inject failures this
 * way). Functions are called from the pool's I/O threads and from pinning
 * threads, concurrently for distinct ranges, without any pool lock held. */
typedef struct tarn_storage {
  void *ctx;
  /* Writes up to `len` bytes at `offset`. Returns the bytes written (a
   * short count is continued) or a negative errno (ENOSPC, EIO, ...). */
  long (*write)(void *ctx, const void *buf, size_t len, uint64_t offset);
  /* Reads up to `len` bytes at `offset`. Returns the bytes read (a short
   * count is continued; 0 is an error) or a negative errno. */
  long (*read)(void *ctx, void *buf, size_t len, uint64_t offset);
  /* Optional: the range holds nothing the pool needs any more. */
  void (*discard)(void *ctx, uint64_t offset, size_t len);
  /* Optional: called once by tarn_pool_destroy. */
  void (*close)(void *ctx);
} tarn_storage;

/* Which unpinned object makes room. Under a runtime (tarn/rt.h), either
 * policy first evicts objects that no submitted, unfinished task uses, and
 * only then the others. */
typedef enum tarn_evict_policy {
  /* CLOCK (second chance): an approximation of least recently used that
   * needs no lock on pin. The default. */
  TARN_EVICT_CLOCK = 0,
  /* Largest unpinned object first: fewest evictions per byte freed. */
  TARN_EVICT_LARGEST = 1
} tarn_evict_policy;

typedef struct tarn_pool_options {
  /* Limit on resident bytes; 0 = none. Default 0, or TARN_MEM_LIMIT from
   * the environment, as tarn_pool_limit_parse reads it (512M, 2G, 75%). */
  size_t mem_limit;
  /* Directory in which the private spill file is made. Default
   * TARN_SPILL_DIR from the environment, else TMPDIR, else /tmp; but when
   * that one is kept in memory (tmpfs, as /tmp is on many systems) and
   * /var/tmp is not and may be written, /var/tmp (see
   * tarn_pool_stats.io_mode). The
   * string is copied. A pool without a limit (and without a storage of the
   * caller's) never spills and makes no file: the directory is not used,
   * and need not exist (it may be NULL). Where it is used, NULL or an
   * empty string is refused (TARN_EINVAL). */
  const char *spill_dir;
  tarn_evict_policy policy;
  /* Compress spilled blocks with zstd. Default off. */
  int compress;
  /* Threads that write evicted objects. Default 2, at most 64. A pool
   * without a limit (and without a storage of the caller's) starts none,
   * nor the thread that reads prefetched objects back. */
  unsigned io_threads;
  /* Most bytes of freed buffers kept for reuse. Default 256 MiB. */
  size_t cache_bytes;
  /* 1 (the default, or TARN_HUGE_PAGES=1): buffers of 2 MiB or more (a
   * 512 x 512 tile of doubles) are mapped on a 2 MiB boundary and offered
   * to the kernel for transparent huge pages, so a task streaming through
   * them does not miss the TLB every 4 KiB (docs/pool.md, "Huge pages").
   * The memory charged is the same; where the kernel's THP setting is
   * "never" nothing changes. 0 (or TARN_HUGE_PAGES=0): every buffer on the
   * system's small pages. */
  int huge_pages;
  /* NULL for the default spill file. The struct is copied; its ctx must
   * outlive the pool. */
  const tarn_storage *storage;
} tarn_pool_options;

/* Fills `options` with the defaults, then applies TARN_MEM_LIMIT,
 * TARN_HUGE_PAGES (0 or 1) and TARN_SPILL_DIR from the environment (a
 * variable set to the empty string counts as unset). Returns 0, or
 * TARN_EINVAL when an environment variable cannot be parsed (the defaults
 * are kept for it). */
TARN_API int tarn_pool_options_init(tarn_pool_options *options);

/* Reads a memory limit as TARN_MEM_LIMIT is read: a number of bytes, or
 * with a K, M, G or T suffix (powers of 1024; "Ki", "KB", "KiB" too), or
 * a share of the memory the process may use, "N%" with N from 1 to 100:
 * N percent of the machine's memory, or of its control groups' memory
 * limit when that is lower (cgroup v2 memory.max or memory.high, v1
 * memory.limit_in_bytes, the tightest over the process's group and the
 * groups above it: a container given 4 GiB reads "50%" as 2 GiB). So one
 * setting fits a program that runs in containers of different sizes. The
 * limit counts only the pool's data: leave room for the rest of the
 * process (the runtime's scratch, BLAS's buffers, the program's own).
 * Returns 0 and *bytes, or TARN_EINVAL for NULL arguments or text of
 * another form (*bytes untouched). Thread-safe. */
TARN_API int tarn_pool_limit_parse(const char *text, size_t *bytes);

/* Creates a pool. `options` may be NULL (tarn_pool_options_init's values).
 * On success *pool owns its I/O threads and spill file until
 * tarn_pool_destroy. Returns TARN_EINVAL for bad options or environment;
 * when the spill file cannot be made (only with a limit or a storage of
 * the caller's): TARN_ENOENT (the spill directory does not exist, or
 * its path with the file's, 24 bytes more, passes PATH_MAX),
 * TARN_EACCES (it may not be written), TARN_ENOSPC, TARN_EBUSY (no file
 * descriptor left to the process or the system), or TARN_EIO;
 * TARN_ENOMEM. A child of fork may create pools of its own; its calls
 * on a pool or ref made before the fork are refused as on destroyed ones
 * (docs/rt.md, "Processes that fork"). */
TARN_API int tarn_pool_create(const tarn_pool_options *options,
                              tarn_pool **pool);

/* Frees every object still in the pool (a leak the caller made: reported in
 * the return value) and the spill store, leaving nothing on disk. Returns
 * 0, or the number of refs that were still alive as a positive count;
 * TARN_EMISUSE, changing nothing, for a runtime's pool (tarn_rt_pool: the
 * runtime destroys it); TARN_EINVAL for a pool already destroyed. NULL is
 * a no-op. No other call on the pool may run concurrently or after.
 *
 * A pool already destroyed is refused by every call of this header that
 * takes one (TARN_EINVAL, or 0, and a line on stderr) so long as its
 * memory is not reused: a safety net, not a contract. */
TARN_API int tarn_pool_destroy(tarn_pool *pool);

/* Allocates `size` bytes (page-aligned, contents undefined) as a new ref
 * with one reference, unpinned. Makes room under the limit first, waiting
 * up to `timeout_ns` for an unpin when nothing can be evicted (0: fail at
 * once). Returns 0 and *ref; TARN_EINVAL for size 0; TARN_ENOMEM when no
 * room could be made; TARN_EIO or TARN_ENOSPC when evicting to make room
 * failed to write (two writes failed during the call: one failed write is
 * made up for by writing another object, or the same one again; the
 * objects stay resident and intact). */
TARN_API int tarn_ref_alloc(tarn_pool *pool, size_t size, uint64_t timeout_ns,
                            tarn_ref **ref);

/* Makes a ref of `size` bytes that has no memory until its first pin
 * (a temporary a task will write): the pin allocates, under the limit like
 * tarn_ref_alloc, and a first pin that reads sees zeros. Returns 0 and
 * *ref, TARN_EINVAL for size 0, TARN_ENOMEM. */
TARN_API int tarn_ref_create(tarn_pool *pool, size_t size, tarn_ref **ref);

/* Where the bytes of a ref made by tarn_ref_create_from come from until
 * something writes them (a file the pool may read again, a generator),
 * and, with `write`, where they go back (the object's home in a file of
 * the caller's). */
typedef struct tarn_source {
  /* Fills `dst` with the object's `size` bytes; returns 0 or a negative
   * TARN_E* code, which the pin that asked returns. Called when a pin
   * reads the object and the pool holds no copy of it: at its first read
   * and after each time the pool dropped it to make room, so it must give
   * the same bytes every time (a source that finds its data changed
   * should fail, say with TARN_ESTALE). Called without any pool lock
   * held, from the pinning thread or the pool's reader thread, never
   * twice at once for one ref. Required. */
  int (*read)(void *ctx, void *dst, size_t size);
  /* Called once, when the ref dies (also when it was never read), without
   * any pool lock held. Optional. */
  void (*release)(void *ctx);
  void *ctx;
  /* Optional: stores the object's `size` bytes from `src` where read will
   * find them. With it, an object written since it was last read or
   * stored is stored here, not in the spill store, when the pool needs
   * room (from an I/O thread) or at tarn_ref_flush, and is read back
   * through read afterwards: the source is its home. Returns 0 or a
   * negative TARN_E* code; on failure the object stays in RAM, as after a
   * failed spill write (tarn_pool_stats.write_failures, last_error), and
   * the calls waiting for its room get TARN_ENOSPC or TARN_ENOMEM as
   * returned, any other failure as TARN_EIO (tarn_ref_flush returns it as
   * it is).
   * Called as read is, never at the same time as read for one ref. */
  int (*write)(void *ctx, const void *src, size_t size);
} tarn_source;

/* Makes a ref of `size` bytes whose bytes `source` gives: it has no
 * memory until its first pin, which allocates (under the limit, like
 * tarn_ref_alloc) and, when it reads, calls source->read. Until the
 * object is first pinned with TARN_WRITE (or escaped), making room drops
 * it without writing it to the spill store, and a later pin reads it from
 * the source again: data loaded from a file costs no spill write and no
 * spill space. From the first write on it is an ordinary object, unless
 * the source has `write`: then it goes back to the source instead of the
 * spill store, and stays the source's (an escaped object stays in RAM
 * until tarn_ref_flush stores it). The struct is copied; its ctx belongs
 * to the ref from a successful call on (source->release is called when
 * the ref dies). Returns 0 and *ref; TARN_EINVAL for size 0 or a NULL
 * source or read; TARN_ENOMEM (on failure the ctx stays the caller's). */
TARN_API int tarn_ref_create_from(tarn_pool *pool, size_t size,
                                  const tarn_source *source, tarn_ref **ref);

/* Stores the object through its source's write now when the source does
 * not hold its current bytes (it was written since it was last read or
 * stored), so that the caller may rely on the source (say, flush and
 * rename its file). The caller must see to it that nothing writes the
 * object meanwhile (a task that reads it may run). Waits for a store or a
 * read back in flight. Returns 0, also when there was nothing to store;
 * the status of source->write (the object stays as it was); TARN_EINVAL
 * for a ref whose source has no write, or that has no source; TARN_EMISUSE
 * on a dead ref. Thread-safe. */
TARN_API int tarn_ref_flush(tarn_ref *ref);

/* tarn_ref_flush in two steps, for a caller that stores the bytes itself
 * (several objects in one call, say). Returns 1 with the object pinned and
 * its address in *data when its home does not hold its current bytes; 0
 * when it does (nothing pinned); the errors of tarn_ref_flush. After a 1,
 * the caller stores the bytes where source->read finds them and calls
 * tarn_ref_flush_end with the status of that store: 0 makes the home the
 * object's copy again, an error leaves it as it was; either way it unpins.
 * One flush of a ref at a time: another tarn_ref_flush_begin (or
 * tarn_ref_flush) waits for this one's end. tarn_ref_flush_end without a
 * begin that returned 1 changes nothing and returns TARN_EINVAL (a ref
 * without a home) or TARN_EMISUSE. Thread-safe. */
TARN_API int tarn_ref_flush_begin(tarn_ref *ref, void **data);
TARN_API int tarn_ref_flush_end(tarn_ref *ref, int status);

/* Hands `object` of `size` bytes and `kind` to the pool as a new ref with
 * one reference; the pool frees it with kind->free. On failure the object
 * stays the caller's. Returns as tarn_ref_alloc, and TARN_EINVAL for a NULL
 * object or kind, a kind without free, or with only one of save and load. */
TARN_API int tarn_ref_adopt(tarn_pool *pool, void *object, size_t size,
                            const tarn_kind *kind, uint64_t timeout_ns,
                            tarn_ref **ref);

/* Adds a reference. Returns 0, or TARN_EMISUSE when the ref is dead. */
TARN_API int tarn_ref_retain(tarn_ref *ref);

/* Drops a reference; the last one frees the object (now, or at its last
 * unpin) and invalidates the handle. Returns 0, or TARN_EMISUSE for a
 * release past zero (detected while the ref is pinned, and always in debug
 * builds). */
TARN_API int tarn_ref_release(tarn_ref *ref);

/* Makes the object resident and returns its address in *data, valid until
 * the matching tarn_ref_unpin. `mode` says how the bytes are used (see
 * tarn_access). Waits up to `timeout_ns` for room when nothing can be
 * evicted. Returns 0; TARN_ENOMEM; TARN_EIO when the spilled copy cannot
 * be read or fails its checksum (the ref keeps its spilled copy and a
 * later pin may try again); TARN_EIO or TARN_ENOSPC when evicting to make
 * room failed to write, as for tarn_ref_alloc; the status of a failed
 * source->read (the ref keeps its source; a later pin tries again);
 * TARN_EMISUSE on a dead ref; TARN_EINVAL. The pool knows nothing of
 * tasks: a ref whose writing task failed or was cancelled (tarn/rt.h,
 * rule 4) pins as any other, with what that task left: the bytes before
 * for a task that never ran or wrote nothing through a read-write pin,
 * partly written ones, or any bytes after a write-only pin (of a spilled
 * ref too: its copy on the disk is dropped then). */
TARN_API int tarn_ref_pin(tarn_ref *ref, tarn_access mode, uint64_t timeout_ns,
                          void **data);

/* Ends one pin. Returns 0, or TARN_EMISUSE when the ref is not pinned. */
TARN_API int tarn_ref_unpin(tarn_ref *ref);

/* Makes the object resident for an access whose end is unknown: returns the
 * address in *data, valid until the last release; the object is never
 * evicted again. Returns as tarn_ref_pin. */
TARN_API int tarn_ref_escape(tarn_ref *ref, uint64_t timeout_ns, void **data);

/* Starts reading a spilled object back on the pool's reader thread and
 * returns at once; a later pin finds it resident, or waits for the read
 * in flight. A no-op for an object that is not spilled. To make room
 * for the read, the reader evicts only unpinned objects that no task of a
 * runtime (tarn/rt.h) has yet to use, and skips the read when that is not
 * enough: a read ahead never pushes out data a task is waiting for. A
 * pool without a memory limit or storage has no reader thread: there the
 * object (one made from a source) is read by its next pin, and this
 * returns 0.
 * Returns 1 when a read was queued, 0 when none was needed or none can
 * be, TARN_EINVAL, TARN_ENOMEM, TARN_EMISUSE on a dead ref. */
TARN_API int tarn_ref_prefetch(tarn_ref *ref);

/* The object's size in bytes as given at alloc or adopt; 0 for NULL. */
TARN_API size_t tarn_ref_size(const tarn_ref *ref);

/* Whether the object is in RAM now (a snapshot). */
TARN_API int tarn_ref_is_resident(const tarn_ref *ref);

typedef struct tarn_pool_stats {
  size_t mem_limit;        /* the limit in force; 0 = none */
  size_t resident_bytes;   /* objects in RAM, being read, and the cache */
  size_t resident_peak;    /* highest resident_bytes since the pool was
                              made or tarn_pool_peak_reset (regions of the
                              runtime never reset it) */
  size_t pinned_bytes;     /* of which pinned or escaped */
  size_t cache_bytes;      /* of which freed buffers kept for reuse */
  size_t spilled_bytes;    /* bytes on disk holding live objects */
  size_t live_refs;        /* refs not yet freed; a ref released while
                              its write is in flight is freed after it */
  uint64_t evictions;      /* objects moved out of RAM */
  uint64_t spills;         /* objects written to the storage, at eviction
                              or ahead of it (cleanings) */
  uint64_t restores;       /* objects read back */
  uint64_t bytes_written;  /* to the storage */
  uint64_t bytes_read;     /* from the storage */
  uint64_t write_ns;       /* time in storage writes, summed over threads */
  uint64_t read_ns;        /* time in storage reads, summed over threads */
  uint64_t write_failures; /* writes that failed or were short */
  uint64_t read_failures;  /* reads that failed or failed the checksum */
  uint64_t cache_hits;     /* buffers (new objects, read backs) the cache
                              served */
  uint64_t cache_misses;   /* the same that needed fresh memory */
  int last_error; /* status of the last storage failure (a write, a read,
                     a flush), or 0 */
  /* How spilled bytes leave memory: "direct" (O_DIRECT), "fadvise"
   * (written pages dropped from the page cache), "memory" (they do not:
   * the spill file is on a file system kept in memory, tmpfs or ramfs, so
   * the limit bounds the pool's objects but spilling frees nothing; give a
   * spill_dir on a disk), "custom" (a caller's storage), "none" (no limit:
   * nothing is spilled, no file was made). Static string. */
  const char *io_mode;
  /* Bytes held by live objects: resident_bytes less cache_bytes (objects in
   * RAM, being written or read back). Freed buffers kept in the recycling
   * cache are not counted, so this is what a program's data occupies. */
  size_t live_bytes;
  size_t live_peak; /* highest live_bytes so far */
  /* Of the spills, objects written ahead of eviction while the pool was
   * above 3/4 of its limit and an I/O thread had nothing else to do: they
   * stayed in RAM, clean, and their eviction later writes nothing
   * (docs/pool.md, "Cleaning"). */
  uint64_t cleanings;
  /* Objects read from their source (tarn_ref_create_from) and the bytes
   * and time it took; their drops to make room count in evictions. */
  uint64_t source_reads;
  uint64_t source_bytes_read;
  uint64_t source_read_ns;
  /* Objects stored in their home (at eviction, cleaning or a flush, also
   * by a caller between tarn_ref_flush_begin and _end), the bytes, and the
   * time of the stores the pool made itself (a caller's is its own). Not
   * in spills. */
  uint64_t source_writes;
  uint64_t source_bytes_written;
  uint64_t source_write_ns;
} tarn_pool_stats;

/* The limit on resident bytes in force (options or TARN_MEM_LIMIT), fixed
 * when the pool was made; 0 for none, or for a NULL pool. Thread-safe. */
TARN_API size_t tarn_pool_mem_limit(const tarn_pool *pool);

/* Sets the peaks of resident bytes and of live bytes to their current
 * values, so that the next stats report the peaks since this call. Returns
 * 0 or TARN_EINVAL. */
TARN_API int tarn_pool_peak_reset(tarn_pool *pool);

/* Fills *stats with the counters. At rest (no I/O in flight) they agree
 * with each other; while the I/O threads work, the storage's counts
 * (bytes_written, bytes_read, spilled_bytes, write_ns, read_ns) and the
 * pool's (spills, restores, evictions, resident_bytes) are each exact
 * but may be a write or read apart, as each is counted when its own part
 * ends. Thread-safe. Returns 0 or TARN_EINVAL. */
TARN_API int tarn_pool_stats_get(tarn_pool *pool, tarn_pool_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
