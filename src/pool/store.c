/* store.c: the spill store of store.h. Blocks live in 4096-byte-aligned
 * extents of one storage: the private spill file (O_DIRECT, or written
 * pages synced and dropped from the page cache) or a caller's tarn_storage.
 * Extents come from an address-ordered first-fit free list, with a bump
 * offset `end` past the highest extent in use.
 * Invariant (under `lock`): the free ranges are sorted, disjoint, coalesced
 * and all end below `end`, so each is followed by an extent in use; hence
 * nfree <= live <= cap and freeing never allocates. The lock guards only
 * this bookkeeping and the counters; no I/O runs while it is held. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "pool/checksum.h"
#include "pool/store.h"
#include "prim/prim.h"
#include "tarn/status.h"

#define ALIGN ((size_t)4096)          /* extent, offset and O_DIRECT unit */
#define MAX_END ((uint64_t)INT64_MAX) /* largest file offset (off_t) */
#define ZSTD_LEVEL 1

typedef struct range {
  uint64_t offset, len;
} range;

struct tarn__store {
  tarn_storage io;   /* the caller's storage, or the spill file's */
  int fd;            /* the spill file; -1 with a caller's storage */
  atomic_int direct; /* fd is O_DIRECT: I/O in whole aligned units */
  bool in_memory;    /* fd is on tmpfs or ramfs: spilling frees no memory */
  int compress;      /* try zstd on every write */
  bool custom;       /* a caller's storage */
  pthread_mutex_t lock;
  range *free;  /* free ranges below end, sorted by offset */
  size_t nfree; /* ranges in free */
  size_t cap;   /* room in free; kept >= live */
  size_t live;  /* extents handed out and not yet freed */
  uint64_t end; /* first byte past the highest extent in use */
  bool freed;   /* extents freed since the last tarn__store_trim */
  tarn__store_counters counters;
};

static uint64_t round_up(uint64_t n) {
  return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

/* The status for a storage call's result that is not progress: a negative
 * errno, 0 (no progress) or a count past the request. */
static int status_of(long neg_errno) {
  if (neg_errno == -ENOSPC || neg_errno == -EDQUOT) return TARN_ENOSPC;
  return TARN_EIO;
}

/* ---- the spill file as a tarn_storage ---------------------------------- */

/* The aligned range around [offset, offset + n): whole extents' units. */
static void aligned_span(uint64_t offset, size_t n, off_t *lo, off_t *len) {
  uint64_t first = offset & ~(uint64_t)(ALIGN - 1);
  *lo = (off_t)first;
  *len = (off_t)(round_up(offset + n) - first);
}

/* A file system may accept O_DIRECT at open and refuse it on I/O (EINVAL):
 * then the file goes on without it, flushing and dropping written pages
 * (the "fadvise" mode), and the call is tried again. Returns whether the
 * call may be retried. */
static bool leave_direct(tarn__store *s, int err) {
  if (err != EINVAL || !atomic_load(&s->direct)) return false;
  int flags = fcntl(s->fd, F_GETFL);
  if (flags < 0 || fcntl(s->fd, F_SETFL, flags & ~O_DIRECT) != 0) return false;
  atomic_store(&s->direct, 0);
  return true;
}

static long file_write(void *ctx, const void *buf, size_t len,
                       uint64_t offset) {
  tarn__store *s = ctx;
  ssize_t n = pwrite(s->fd, buf, len, (off_t)offset);
  if (n < 0 && leave_direct(s, errno))
    n = pwrite(s->fd, buf, len, (off_t)offset);
  if (n < 0) return -errno;
  if (atomic_load(&s->direct) || n == 0) return n;
  off_t lo, span;
  aligned_span(offset, (size_t)n, &lo, &span);
  unsigned flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                   SYNC_FILE_RANGE_WAIT_AFTER;
  if (sync_file_range(s->fd, lo, span, flags) != 0) return -errno;
  (void)posix_fadvise(s->fd, lo, span, POSIX_FADV_DONTNEED); /* a hint */
  return n;
}

static long file_read(void *ctx, void *buf, size_t len, uint64_t offset) {
  tarn__store *s = ctx;
  ssize_t n = pread(s->fd, buf, len, (off_t)offset);
  if (n < 0 && leave_direct(s, errno))
    n = pread(s->fd, buf, len, (off_t)offset);
  if (n < 0) return -errno;
  if (!atomic_load(&s->direct) && n > 0) {
    off_t lo, span;
    aligned_span(offset, (size_t)n, &lo, &span);
    (void)posix_fadvise(s->fd, lo, span, POSIX_FADV_DONTNEED);
  }
  return n;
}

static void file_close(void *ctx) { close(((tarn__store *)ctx)->fd); }

/* Opens `path` (new), trying O_DIRECT first, and unlinks it. */
static int open_unlinked(tarn__store *s, const char *path) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
  atomic_store(&s->direct, 1);
  s->fd = open(path, flags | O_DIRECT, 0600);
  if (s->fd < 0 && errno == EINVAL) { /* e.g. tmpfs before Linux 6.6 */
    atomic_store(&s->direct, 0);
    s->fd = open(path, flags, 0600);
  }
  if (s->fd < 0) return tarn__status_of_errno(errno);
  if (unlink(path) == 0) return 0;
  int err = errno;
  close(s->fd);
  s->fd = -1;
  errno = err;
  return TARN_EIO;
}

/* Makes the spill file in a fresh 0700 directory under `dir`, then removes
 * both names. On failure errno says why, the status is its
 * (tarn__status_of_errno: TARN_ENOENT for a missing directory, TARN_EACCES
 * for one that may not be written), and nothing is left behind. */
static int open_file(tarn__store *s, const char *dir) {
  static const char sub[] = "/tarn-spill-XXXXXX", leaf[] = "/spill";
  size_t dlen = strlen(dir) + sizeof sub - 1;
  char *path = malloc(dlen + sizeof leaf);
  if (path == NULL) return TARN_ENOMEM;
  memcpy(path, dir, dlen - (sizeof sub - 1));
  memcpy(path + dlen - (sizeof sub - 1), sub, sizeof sub);
  int rc = TARN_EIO;
  if (mkdtemp(path) == NULL) {
    rc = tarn__status_of_errno(errno); /* TARN_ENOENT: no such directory */
    goto out;
  }
  memcpy(path + dlen, leaf, sizeof leaf);
  rc = open_unlinked(s, path);
  int err = errno;
  path[dlen] = '\0';
  if (rmdir(path) != 0 && rc == 0) {
    err = errno;
    close(s->fd);
    s->fd = -1;
    rc = TARN_EIO;
  }
  errno = err;
out:
  free(path);
  if (rc == 0) {
    s->io = (tarn_storage){s, file_write, file_read, NULL, file_close};
    s->in_memory = tarn__fs_in_memory(NULL, s->fd) == 1;
  }
  return rc;
}

/* ---- extents ----------------------------------------------------------- */

static void remove_range(tarn__store *s, size_t i) {
  memmove(&s->free[i], &s->free[i + 1], (s->nfree - i - 1) * sizeof(range));
  s->nfree--;
}

static void insert_range(tarn__store *s, size_t i, range r) {
  memmove(&s->free[i + 1], &s->free[i], (s->nfree - i) * sizeof(range));
  s->free[i] = r;
  s->nfree++;
}

/* Makes room for one more extent in use (and so one more free range). */
static int reserve_live(tarn__store *s) {
  if (s->live < s->cap) return 0;
  size_t cap = s->cap ? 2 * s->cap : 16;
  range *p = realloc(s->free, cap * sizeof(range));
  if (p == NULL) return TARN_ENOMEM;
  s->free = p;
  s->cap = cap;
  return 0;
}

/* Takes `len` bytes: the lowest free range that fits, else the end. */
static int extent_alloc(tarn__store *s, uint64_t len, uint64_t *offset) {
  pthread_mutex_lock(&s->lock);
  int rc = reserve_live(s);
  if (rc != 0) goto out;
  size_t i = 0;
  while (i < s->nfree && s->free[i].len < len) i++;
  if (i < s->nfree) {
    *offset = s->free[i].offset;
    s->free[i].offset += len;
    s->free[i].len -= len;
    if (s->free[i].len == 0) remove_range(s, i);
  } else if (len <= MAX_END - s->end) {
    *offset = s->end;
    s->end += len;
  } else {
    rc = TARN_ENOSPC;
    goto out;
  }
  s->live++;
  s->counters.stored_bytes += len;
out:
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* Returns [offset, offset + len) to the free list, coalescing it with its
 * neighbours and lowering `end` when it is the last extent. A range that
 * is not in use (a double free) is ignored. */
static void extent_free(tarn__store *s, uint64_t offset, uint64_t len) {
  pthread_mutex_lock(&s->lock);
  size_t i = 0; /* the first free range above offset */
  while (i < s->nfree && s->free[i].offset < offset) i++;
  range *prev = i > 0 ? &s->free[i - 1] : NULL;
  range *next = i < s->nfree ? &s->free[i] : NULL;
  if (len > s->end || offset > s->end - len ||
      (prev && prev->offset + prev->len > offset) ||
      (next && offset + len > next->offset)) {
    pthread_mutex_unlock(&s->lock);
    return;
  }
  range r = {offset, len};
  if (prev && prev->offset + prev->len == offset) {
    r.offset = prev->offset;
    r.len += prev->len;
    remove_range(s, --i);
  }
  if (i < s->nfree && r.offset + r.len == s->free[i].offset) {
    r.len += s->free[i].len;
    remove_range(s, i);
  }
  if (r.offset + r.len == s->end) {
    s->end = r.offset;
  } else {
    insert_range(s, i, r);
  }
  s->live--;
  s->counters.stored_bytes -= len;
  s->freed = true;
  pthread_mutex_unlock(&s->lock);
}

void tarn__store_trim(tarn__store *s) {
  if (s == NULL || s->custom) return;
  pthread_mutex_lock(&s->lock); /* no extent changes hands meanwhile */
  if (s->freed) {
    for (size_t i = 0; i < s->nfree; i++)
      (void)fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      (off_t)s->free[i].offset, (off_t)s->free[i].len);
    (void)ftruncate(s->fd, (off_t)s->end);
    s->freed = false;
  }
  pthread_mutex_unlock(&s->lock);
}

/* Tells a caller's storage the range is unused, then frees it. Discard
 * runs first: once freed, the extent may be written by another block. */
static void release_extent(tarn__store *s, uint64_t offset, uint64_t len) {
  if (s->io.discard != NULL) s->io.discard(s->io.ctx, offset, (size_t)len);
  extent_free(s, offset, len);
}

/* ---- I/O loops and counters -------------------------------------------- */

/* Bytes moved for `packed` stored bytes: whole units with O_DIRECT. */
static size_t io_len(const tarn__store *s, size_t packed) {
  return atomic_load(&s->direct) ? (size_t)round_up(packed) : packed;
}

static int write_all(const tarn__store *s, const char *buf, size_t len,
                     uint64_t offset, uint64_t *moved) {
  size_t done = 0;
  while (done < len) {
    long n = s->io.write(s->io.ctx, buf + done, len - done, offset + done);
    if (n == -EINTR) continue;
    if (n <= 0 || (size_t)n > len - done) {
      *moved = done;
      return status_of(n);
    }
    done += (size_t)n;
  }
  *moved = done;
  return 0;
}

static int read_all(const tarn__store *s, char *buf, size_t len,
                    uint64_t offset, uint64_t *moved) {
  size_t done = 0;
  while (done < len) {
    long n = s->io.read(s->io.ctx, buf + done, len - done, offset + done);
    if (n == -EINTR) continue;
    if (n <= 0 || (size_t)n > len - done) {
      *moved = done;
      return status_of(n);
    }
    done += (size_t)n;
  }
  *moved = done;
  return 0;
}

/* Adds one storage call's outcome to the counters. */
static void record(tarn__store *s, int writing, int rc, uint64_t moved,
                   uint64_t ns) {
  tarn__store_counters *c = &s->counters;
  pthread_mutex_lock(&s->lock);
  *(writing ? &c->bytes_written : &c->bytes_read) += moved;
  *(writing ? &c->write_ns : &c->read_ns) += ns;
  if (rc != 0) {
    (*(writing ? &c->write_failures : &c->read_failures))++;
    c->last_error = rc;
  }
  pthread_mutex_unlock(&s->lock);
}

/* ---- images: raw or compressed ----------------------------------------- */

static void *staging_alloc(size_t bytes) {
  void *p = NULL;
  return posix_memalign(&p, ALIGN, bytes) == 0 ? p : NULL;
}

/* Sets *out and *packed to the bytes to store for `data`: a zstd image in
 * *staging (aligned, zero-padded to a unit) when it saves at least one
 * extent unit, else `data` itself with *staging NULL. */
static int pack(const tarn__store *s, const void *data, size_t size,
                void **staging, const void **out, size_t *packed) {
  *staging = NULL;
  *out = data;
  *packed = size;
  size_t room = (size_t)round_up(size) - ALIGN;
  if (!s->compress || room == 0) return 0;
  void *buf = staging_alloc(room);
  if (buf == NULL) return TARN_ENOMEM;
  size_t n = ZSTD_compress(buf, room, data, size, ZSTD_LEVEL);
  if (ZSTD_isError(n)) { /* it did not fit in room: store it raw */
    free(buf);
    return 0;
  }
  memset((char *)buf + n, 0, (size_t)round_up(n) - n);
  *staging = buf;
  *out = buf;
  *packed = n;
  return 0;
}

/* Turns the bytes read back into the image at `data` and checks it. */
static int unpack(const tarn__block *b, const void *staging, void *data) {
  if (staging != NULL) {
    size_t n = ZSTD_decompress(data, b->size, staging, b->packed);
    if (ZSTD_isError(n) || n != b->size) return TARN_EIO;
  }
  return tarn__checksum(data, b->size) == b->checksum ? 0 : TARN_EIO;
}

static int block_valid(const tarn__block *b) {
  return b->size > 0 && b->packed > 0 && b->packed <= b->size &&
         b->offset % ALIGN == 0 && b->extent == round_up(b->packed);
}

/* ---- store.h ----------------------------------------------------------- */

int tarn__store_open(const char *dir, const tarn_storage *custom, int compress,
                     tarn__store **out) {
  if (out == NULL || (custom == NULL && dir == NULL) ||
      (custom != NULL && (custom->write == NULL || custom->read == NULL)))
    return TARN_EINVAL;
  tarn__store *s = calloc(1, sizeof *s);
  if (s == NULL) return TARN_ENOMEM;
  s->fd = -1;
  s->compress = compress != 0;
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    free(s);
    return TARN_ENOMEM;
  }
  int rc = 0;
  if (custom != NULL) {
    s->io = *custom;
    s->custom = true;
  } else {
    rc = open_file(s, dir);
  }
  if (rc != 0) {
    int err = errno;
    pthread_mutex_destroy(&s->lock);
    free(s);
    errno = err;
    return rc;
  }
  *out = s;
  return 0;
}

void tarn__store_close(tarn__store *store) {
  if (store == NULL) return;
  if (store->io.close != NULL) store->io.close(store->io.ctx);
  pthread_mutex_destroy(&store->lock);
  free(store->free);
  free(store);
}

const char *tarn__store_io_mode(const tarn__store *store) {
  if (store == NULL) return "none";
  if (store->custom) return "custom";
  if (store->in_memory) return "memory";
  return atomic_load(&store->direct) ? "direct" : "fadvise";
}

int tarn__store_write(tarn__store *store, const void *data, size_t size,
                      tarn__block *block) {
  if (store == NULL || data == NULL || block == NULL || size == 0 ||
      size > SIZE_MAX - ALIGN)
    return TARN_EINVAL;
  void *staging;
  const void *image;
  size_t packed;
  int rc = pack(store, data, size, &staging, &image, &packed);
  if (rc != 0) {
    record(store, 1, rc, 0, 0); /* a failed write too, before any byte */
    return rc;
  }
  uint64_t offset, extent = round_up(packed), moved = 0;
  rc = extent_alloc(store, extent, &offset);
  if (rc != 0) {
    record(store, 1, rc, 0, 0);
    goto out;
  }
  uint64_t t0 = tarn__clock_ns();
  rc = write_all(store, image, io_len(store, packed), offset, &moved);
  record(store, 1, rc, moved, tarn__clock_ns() - t0);
  if (rc != 0) {
    release_extent(store, offset, extent);
    goto out;
  }
  *block = (tarn__block){offset, (size_t)extent, size, packed,
                         tarn__checksum(data, size)};
out:
  free(staging);
  return rc;
}

int tarn__store_read(tarn__store *store, const tarn__block *block, void *data) {
  if (store == NULL || block == NULL || data == NULL || !block_valid(block))
    return TARN_EINVAL;
  void *staging = NULL;
  if (block->packed != block->size) {
    staging = staging_alloc(block->extent);
    if (staging == NULL) {
      record(store, 0, TARN_ENOMEM, 0, 0); /* a failed read, before any */
      return TARN_ENOMEM;
    }
  }
  uint64_t moved = 0, t0 = tarn__clock_ns();
  int rc = read_all(store, staging ? staging : data,
                    io_len(store, block->packed), block->offset, &moved);
  uint64_t ns = tarn__clock_ns() - t0;
  if (rc == 0) rc = unpack(block, staging, data);
  record(store, 0, rc, moved, ns);
  free(staging);
  return rc;
}

void tarn__store_free(tarn__store *store, const tarn__block *block) {
  if (store == NULL || block == NULL || !block_valid(block)) return;
  release_extent(store, block->offset, block->extent);
}

void tarn__store_counters_get(tarn__store *store, tarn__store_counters *c) {
  if (store == NULL) {
    *c = (tarn__store_counters){0};
    return;
  }
  pthread_mutex_lock(&store->lock);
  *c = store->counters;
  pthread_mutex_unlock(&store->lock);
}
