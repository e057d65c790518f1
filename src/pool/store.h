/* store.h: the spill store. Blocks of bytes in one storage (a private file
 * unlinked as soon as it is opened, or a caller's tarn_storage), each with
 * an xxHash checksum that is checked on every read, optionally compressed
 * with zstd. Space is reused: freed blocks' extents serve later writes.
 * Every function is thread-safe; no lock is held during I/O. */
#ifndef TARN_POOL_STORE_H
#define TARN_POOL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/pool.h"

typedef struct tarn__store tarn__store;

/* Where one written block lives. Owned by the caller (the pool keeps it in
 * the ref); passed back to read and free. */
typedef struct tarn__block {
  uint64_t offset;   /* of the extent in the storage */
  size_t extent;     /* bytes of storage the block occupies */
  size_t size;       /* bytes of the image */
  size_t packed;     /* bytes stored: the compressed size, or size */
  uint64_t checksum; /* xxHash (XXH3 64) of the image */
} tarn__block;

typedef struct tarn__store_counters {
  uint64_t bytes_written, bytes_read; /* to and from the storage */
  uint64_t write_ns, read_ns;         /* time in storage calls */
  uint64_t write_failures, read_failures;
  size_t stored_bytes; /* bytes of live blocks' extents */
  int last_error;      /* status of the last failure, or 0 */
} tarn__store_counters;

/* Opens a store. With `custom` NULL, makes a private spill file in `dir`:
 * a directory of mode 0700 with an unpredictable name, a file in it opened
 * with O_DIRECT where the file system allows it, then both removed at once,
 * so nothing is left on disk even if the process is killed. Without
 * O_DIRECT, written pages are flushed and dropped from the page cache
 * (sync_file_range + posix_fadvise DONTNEED). Returns 0; when the file
 * cannot be made (errno kept), the status of errno (TARN_ENOENT for a
 * missing directory, TARN_EACCES, TARN_ENOSPC, TARN_EIO); TARN_ENOMEM. */
int tarn__store_open(const char *dir, const tarn_storage *custom, int compress,
                     tarn__store **out);

/* Closes the storage (custom: its close) and frees the store. NULL ok. */
void tarn__store_close(tarn__store *store);

/* Gives the spill file's unused space back to the file system: punches
 * holes in the free extents and cuts the file at the highest extent in
 * use, when extents were freed since the last call (the file otherwise
 * keeps its largest size until it is closed; on tmpfs that is memory).
 * Holds the store's lock meanwhile, so for idle moments; a file system
 * that cannot punch holes keeps them. Nothing for a caller's storage (its
 * discard hears of each freed extent) or a NULL store. */
void tarn__store_trim(tarn__store *store);

/* "direct", "fadvise" or "custom"; "none" for a NULL store (a pool
 * without a limit opens none). Static string. */
const char *tarn__store_io_mode(const tarn__store *store);

/* Writes `size` bytes at `data` as a new block and fills *block. `data` is
 * page-aligned and readable for the size rounded up to the page size.
 * Returns 0; TARN_ENOSPC or TARN_EIO when the storage fails or writes
 * short (nothing is then stored and the extent is freed again);
 * TARN_ENOMEM. */
int tarn__store_write(tarn__store *store, const void *data, size_t size,
                      tarn__block *block);

/* Reads `block` into `data` (page-aligned, writable for block->size rounded
 * up to the page size) and checks its checksum. Returns 0, or TARN_EIO when
 * the storage fails, reads short or the checksum does not match (data then
 * holds garbage the caller must not use); TARN_ENOMEM. */
int tarn__store_read(tarn__store *store, const tarn__block *block, void *data);

/* Frees the block's extent for reuse (and tells a custom storage's
 * discard). */
void tarn__store_free(tarn__store *store, const tarn__block *block);

/* A snapshot of the counters (all 0 for a NULL store). */
void tarn__store_counters_get(tarn__store *store, tarn__store_counters *c);

#endif
