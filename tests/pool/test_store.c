/* test_store.c: the spill store as the pool sees it: blocks written and
 * read back intact at awkward sizes, raw and compressed, through the
 * O_DIRECT file, the page-cache (fadvise) file and a caller's storage;
 * nothing left on disk; extents reused; every storage failure reported with
 * its status and counted, with nothing stored; concurrent use; and the
 * blocks' checksum, the same XXH3-64 on every machine. */
#undef _FORTIFY_SOURCE /* this file defines open() */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <xxhash.h>

#include "pool/checksum.h"
#include "pool/store.h"
#include "procfs.h"
#include "tarn/status.h"

/* posix_memalign (the store's staging buffers) wrapped at link time
 * (tests/CMakeLists.txt): fails once when memalign_fails is set. */
int __real_posix_memalign(void **p, size_t align, size_t size);
static atomic_int memalign_fails;

int __wrap_posix_memalign(void **p, size_t align, size_t size) {
  if (atomic_exchange(&memalign_fails, 0) != 0) return ENOMEM;
  return __real_posix_memalign(p, align, size);
}

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define UNIT ((size_t)4096)

static const size_t sizes[] = {1, 4095, 4096, 2 * MiB + 3};
enum { nsizes = sizeof sizes / sizeof sizes[0] };

/* ---- open() that can refuse O_DIRECT ----------------------------------
 * The store falls back to the page cache when open(O_DIRECT) fails with
 * EINVAL (tmpfs before Linux 6.6). This definition replaces libc's for the
 * test program so that path runs on any file system. */
static atomic_int refuse_direct;

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if ((flags & O_DIRECT) && atomic_load(&refuse_direct)) {
    errno = EINVAL;
    return -1;
  }
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* pwrite() that refuses O_DIRECT files with EINVAL, as some file systems
 * do although their open() accepts the flag. */
static atomic_int refuse_direct_io;

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  int flags = fcntl(fd, F_GETFL);
  if (atomic_load(&refuse_direct_io) && flags >= 0 && (flags & O_DIRECT)) {
    errno = EINVAL;
    return -1;
  }
  return (ssize_t)syscall(SYS_pwrite64, fd, buf, n, off);
}

/* ---- data -------------------------------------------------------------- */

static size_t page_round(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) / page * page;
}

/* A page-aligned buffer for `size` bytes, as the pool hands the store. */
static unsigned char *page_buffer(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *p = aligned_alloc(page, page_round(size));
  assert_non_null(p);
  memset(p, 0xA5, page_round(size));
  return p;
}

/* Deterministic bytes from `seed`: random, or runs that zstd shrinks. */
static void fill(unsigned char *p, size_t n, uint64_t seed, int compressible) {
  uint64_t x = seed * 0x9E3779B97F4A7C15u + 1;
  for (size_t i = 0; i < n; i++) {
    if (!compressible || i % 512 == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    p[i] = (unsigned char)(x >> 24);
  }
}

static int matches(const unsigned char *p, size_t n, uint64_t seed,
                   int compressible) {
  unsigned char *want = malloc(n);
  fill(want, n, seed, compressible);
  int ok = memcmp(p, want, n) == 0;
  free(want);
  return ok;
}

static tarn__store_counters counters(tarn__store *store) {
  tarn__store_counters c;
  tarn__store_counters_get(store, &c);
  return c;
}

/* Writes `size` bytes made from `seed`; returns the block. */
static tarn__block put(tarn__store *store, size_t size, uint64_t seed,
                       int compressible) {
  unsigned char *data = page_buffer(size);
  fill(data, size, seed, compressible);
  tarn__block b;
  assert_int_equal(tarn__store_write(store, data, size, &b), 0);
  free(data);
  assert_int_equal(b.size, size);
  assert_int_equal(b.offset % UNIT, 0);
  assert_int_equal(b.extent % UNIT, 0);
  assert_true(b.packed <= b.size && b.packed <= b.extent);
  return b;
}

/* Reads `b` back and checks it holds the bytes made from `seed`. */
static void check(tarn__store *store, const tarn__block *b, uint64_t seed,
                  int compressible) {
  unsigned char *data = page_buffer(b->size);
  assert_int_equal(tarn__store_read(store, b, data), 0);
  assert_true(matches(data, b->size, seed, compressible));
  free(data);
}

/* Every size, random and compressible, written, read back and freed. */
static void round_trips(tarn__store *store, int compress) {
  tarn__block blocks[2][nsizes];
  for (int kind = 0; kind < 2; kind++)
    for (size_t i = 0; i < nsizes; i++) {
      blocks[kind][i] = put(store, sizes[i], i, kind);
      size_t raw_extent = (sizes[i] + UNIT - 1) / UNIT * UNIT;
      int shrinks = compress && kind == 1 && sizes[i] > UNIT;
      if (shrinks) {
        assert_true(blocks[kind][i].packed < sizes[i]);
        assert_true(blocks[kind][i].extent < raw_extent);
      } else {
        assert_int_equal(blocks[kind][i].packed, sizes[i]);
        assert_int_equal(blocks[kind][i].extent, raw_extent);
      }
    }
  for (int kind = 0; kind < 2; kind++)
    for (size_t i = 0; i < nsizes; i++) check(store, &blocks[kind][i], i, kind);
  tarn__store_counters c = counters(store);
  assert_true(c.bytes_written > 0 && c.bytes_read > 0);
  assert_true(c.write_ns > 0 && c.read_ns > 0);
  assert_int_equal(c.write_failures + c.read_failures, 0);
  assert_int_equal(c.last_error, 0);
  for (int kind = 0; kind < 2; kind++)
    for (size_t i = 0; i < nsizes; i++)
      tarn__store_free(store, &blocks[kind][i]);
  assert_int_equal(counters(store).stored_bytes, 0);
}

static tarn__store *open_file_store(const char *dir, int compress) {
  tarn__store *store = NULL;
  assert_int_equal(tarn__store_open(dir, NULL, compress, &store), 0);
  assert_non_null(store);
  return store;
}

static const char *tmp_root(void) {
  const char *t = getenv("TMPDIR");
  return t != NULL && *t != '\0' ? t : "/tmp";
}

/* ---- the spill file ---------------------------------------------------- */

static void test_file_round_trip(void **state) {
  (void)state;
  for (int compress = 0; compress < 2; compress++) {
    tarn__store *store = open_file_store(tmp_root(), compress);
    const char *mode = tarn__store_io_mode(store);
    assert_true(strcmp(mode, "direct") == 0 || strcmp(mode, "fadvise") == 0);
    round_trips(store, compress);
    tarn__store_close(store);
  }
}

static void test_fadvise_round_trip(void **state) {
  (void)state;
  atomic_store(&refuse_direct, 1);
  tarn__store *store = open_file_store(tmp_root(), 0);
  tarn__store *packed = open_file_store(tmp_root(), 1);
  atomic_store(&refuse_direct, 0);
  assert_string_equal(tarn__store_io_mode(store), "fadvise");
  assert_string_equal(tarn__store_io_mode(packed), "fadvise");
  round_trips(store, 0);
  round_trips(packed, 1);
  tarn__store_close(store);
  tarn__store_close(packed);
}

static void test_direct_refused_at_write(void **state) {
  (void)state;
  tarn__store *store = open_file_store(tmp_root(), 0);
  if (strcmp(tarn__store_io_mode(store), "direct") != 0) {
    tarn__store_close(store); /* no O_DIRECT here: nothing to refuse */
    skip();
  }
  atomic_store(&refuse_direct_io, 1);
  round_trips(store, 0); /* the file goes on without O_DIRECT */
  atomic_store(&refuse_direct_io, 0);
  assert_string_equal(tarn__store_io_mode(store), "fadvise");
  tarn__store_counters c;
  tarn__store_counters_get(store, &c);
  assert_int_equal(c.write_failures, 0);
  tarn__store_close(store);
}

static void test_shm_round_trip(void **state) {
  (void)state;
  if (access("/dev/shm", W_OK) != 0) skip();
  tarn__store *store = open_file_store("/dev/shm", 1);
  round_trips(store, 1);
  tarn__store_close(store);
}

static size_t dir_entries(const char *path) {
  DIR *d = opendir(path);
  assert_non_null(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static void test_file_leaves_nothing(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/test_store-XXXXXX", tmp_root());
  assert_non_null(mkdtemp(dir));
  tarn__store *store = open_file_store(dir, 0);
  assert_int_equal(dir_entries(dir), 0);
  tarn__block a = put(store, 3 * UNIT, 1, 0), b = put(store, 1, 2, 0);
  assert_int_equal(dir_entries(dir), 0);
  check(store, &a, 1, 0);
  check(store, &b, 2, 0);
  tarn__store_close(store);
  assert_int_equal(dir_entries(dir), 0);
  assert_int_equal(rmdir(dir), 0);
}

static void test_open_missing_dir(void **state) {
  (void)state;
  tarn__store *store = NULL;
  errno = 0;
  assert_int_equal(tarn__store_open("/nonexistent/tarn/dir", NULL, 0, &store),
                   TARN_ENOENT);
  assert_int_equal(errno, ENOENT);
  assert_null(store);
  assert_int_equal(tarn__store_open(NULL, NULL, 0, &store), TARN_EINVAL);
}

static void test_extents_reused(void **state) {
  (void)state;
  tarn__store *store = open_file_store(tmp_root(), 0);
  tarn__block a = put(store, 2 * UNIT, 1, 0), b = put(store, UNIT, 2, 0);
  tarn__block c = put(store, UNIT + 1, 3, 0), d = put(store, 1, 4, 0);
  assert_int_equal(counters(store).stored_bytes, 6 * UNIT);
  /* A freed extent serves the next write of its size. */
  tarn__store_free(store, &b);
  assert_int_equal(counters(store).stored_bytes, 5 * UNIT);
  tarn__block b2 = put(store, UNIT, 5, 0);
  assert_int_equal(b2.offset, b.offset);
  assert_int_equal(counters(store).stored_bytes, 6 * UNIT);
  /* Neighbours coalesce: a, b2 and c free make room for 5 units at a. */
  tarn__store_free(store, &a);
  tarn__store_free(store, &c);
  tarn__store_free(store, &b2);
  assert_int_equal(counters(store).stored_bytes, UNIT);
  tarn__block big = put(store, 5 * UNIT, 6, 0);
  assert_int_equal(big.offset, a.offset);
  check(store, &d, 4, 0);
  check(store, &big, 6, 0);
  /* With everything freed, writing starts again at the beginning. */
  tarn__store_free(store, &big);
  tarn__store_free(store, &d);
  assert_int_equal(counters(store).stored_bytes, 0);
  tarn__block again = put(store, 7 * UNIT, 7, 0);
  assert_int_equal(again.offset, a.offset);
  /* A second free of a block changes nothing. */
  tarn__store_free(store, &again);
  tarn__store_free(store, &again);
  assert_int_equal(counters(store).stored_bytes, 0);
  assert_int_equal(put(store, UNIT, 8, 0).offset, a.offset);
  tarn__store_close(store);
}

/* Whether the file system of `dir` punches holes. */
static int punches_holes(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/tarn-test-punch-XXXXXX", dir);
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  unlink(path);
  int ok = ftruncate(fd, (off_t)MiB) == 0 &&
           fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                     (off_t)UNIT) == 0;
  close(fd);
  return ok;
}

/* tarn__store_trim gives freed space back: the file is cut at its highest
 * live extent and the free extents below become holes, while the live
 * blocks keep their bytes and later writes reuse the space. */
static void test_trim_gives_space_back(void **state) {
  (void)state;
  tarn__store *store = open_file_store(tmp_root(), 0);
  enum { count = 16 };
  tarn__block b[count];
  for (int i = 0; i < count; i++) b[i] = put(store, 256 * KiB, (uint64_t)i, 0);
  off_t size, used;
  test_spill_file_usage(&size, &used);
  assert_int_equal(size, (off_t)(count * 256 * KiB));
  /* Blocks 1, 3, 5, 7 and 9 to 15 freed: 5 live ones below the last. */
  for (int i = 1; i < count; i++)
    if (i % 2 == 1 || i > 8) tarn__store_free(store, &b[i]);
  tarn__store_trim(store);
  test_spill_file_usage(&size, &used);
  assert_int_equal(size, (off_t)(9 * 256 * KiB)); /* block 8 is the last */
  if (punches_holes(tmp_root()))
    assert_true(used <= (off_t)(5 * 256 * KiB + 64 * KiB));
  for (int i = 0; i <= 8; i += 2) check(store, &b[i], (uint64_t)i, 0);
  /* The space comes back for new blocks, in the holes and past the end. */
  tarn__block again[6];
  for (int i = 0; i < 6; i++) again[i] = put(store, 256 * KiB, 100u + i, 0);
  for (int i = 0; i < 6; i++) check(store, &again[i], 100u + (uint64_t)i, 0);
  for (int i = 0; i <= 8; i += 2) check(store, &b[i], (uint64_t)i, 0);
  tarn__store_trim(store); /* nothing freed since: changes nothing */
  off_t size2, used2;
  test_spill_file_usage(&size2, &used2);
  assert_true(size2 >= (off_t)(9 * 256 * KiB));
  tarn__store_trim(NULL);
  tarn__store_close(store);
}

static void test_bad_arguments(void **state) {
  (void)state;
  tarn__store *store = open_file_store(tmp_root(), 0);
  unsigned char *data = page_buffer(UNIT);
  tarn__block b;
  assert_int_equal(tarn__store_write(store, data, 0, &b), TARN_EINVAL);
  assert_int_equal(tarn__store_write(store, NULL, 1, &b), TARN_EINVAL);
  b = put(store, 100, 1, 0);
  tarn__block bad = b;
  bad.extent = 0;
  assert_int_equal(tarn__store_read(store, &bad, data), TARN_EINVAL);
  tarn__store_free(store, &bad);
  assert_int_equal(counters(store).stored_bytes, UNIT);
  free(data);
  tarn__store_close(store);
}

/* ---- a caller's storage: memory, with faults on demand ----------------- */

enum read_fault { READ_OK, READ_EIO, READ_EOF };

typedef struct mem_storage {
  pthread_mutex_t lock; /* guards the fault state and counts */
  unsigned char *bytes;
  size_t capacity;       /* the disk is full past this */
  size_t max_chunk;      /* most bytes a call moves; 0: all */
  unsigned fail_write;   /* the write call with this number fails; 0: none */
  unsigned writes;       /* write calls so far */
  int eintr;             /* the next call returns -EINTR */
  enum read_fault fault; /* what reads do */
  unsigned discards;
  size_t discarded;
  int closed;
} mem_storage;

static size_t chunk(mem_storage *m, size_t len) {
  return m->max_chunk != 0 && len > m->max_chunk ? m->max_chunk : len;
}

static long mem_write(void *ctx, const void *buf, size_t len, uint64_t off) {
  mem_storage *m = ctx;
  pthread_mutex_lock(&m->lock);
  long rc = 0;
  if (m->eintr) {
    m->eintr = 0;
    rc = -EINTR;
  } else if (++m->writes == m->fail_write) {
    rc = -EIO;
  } else if (off >= m->capacity) {
    rc = -ENOSPC;
  } else {
    size_t room = m->capacity - (size_t)off;
    rc = (long)chunk(m, len < room ? len : room);
  }
  pthread_mutex_unlock(&m->lock);
  if (rc > 0) memcpy(m->bytes + off, buf, (size_t)rc);
  return rc;
}

static long mem_read(void *ctx, void *buf, size_t len, uint64_t off) {
  mem_storage *m = ctx;
  pthread_mutex_lock(&m->lock);
  long rc = (long)chunk(m, len);
  if (m->eintr) {
    m->eintr = 0;
    rc = -EINTR;
  } else if (m->fault != READ_OK) {
    rc = m->fault == READ_EIO ? -EIO : 0;
  }
  pthread_mutex_unlock(&m->lock);
  if (rc > 0) memcpy(buf, m->bytes + off, (size_t)rc);
  return rc;
}

static void mem_discard(void *ctx, uint64_t off, size_t len) {
  mem_storage *m = ctx;
  pthread_mutex_lock(&m->lock);
  m->discards++;
  m->discarded += len;
  pthread_mutex_unlock(&m->lock);
  if (off < m->capacity)
    memset(m->bytes + off, 0,
           len < m->capacity - off ? len : m->capacity - off);
}

static void mem_close(void *ctx) { ((mem_storage *)ctx)->closed++; }

static mem_storage *mem_new(size_t capacity) {
  mem_storage *m = calloc(1, sizeof *m);
  assert_non_null(m);
  pthread_mutex_init(&m->lock, NULL);
  m->bytes = calloc(1, capacity);
  assert_non_null(m->bytes);
  m->capacity = capacity;
  return m;
}

static void mem_delete(mem_storage *m) {
  pthread_mutex_destroy(&m->lock);
  free(m->bytes);
  free(m);
}

static tarn__store *open_mem_store(mem_storage *m, int compress) {
  tarn_storage io = {m, mem_write, mem_read, mem_discard, mem_close};
  tarn__store *store = NULL;
  assert_int_equal(tarn__store_open(NULL, &io, compress, &store), 0);
  assert_string_equal(tarn__store_io_mode(store), "custom");
  return store;
}

static void test_custom_round_trip(void **state) {
  (void)state;
  for (int compress = 0; compress < 2; compress++) {
    mem_storage *m = mem_new(16 * MiB);
    tarn__store *store = open_mem_store(m, compress);
    round_trips(store, compress);
    assert_int_equal(m->discards, 2 * nsizes);
    tarn__store_close(store);
    assert_int_equal(m->closed, 1);
    mem_delete(m);
  }
}

static void test_custom_short_counts_continued(void **state) {
  (void)state;
  mem_storage *m = mem_new(16 * MiB);
  m->max_chunk = 1000;
  tarn__store *store = open_mem_store(m, 0);
  m->eintr = 1;
  tarn__block b = put(store, 3 * UNIT + 5, 1, 0);
  assert_true(m->writes > 12);
  m->eintr = 1;
  check(store, &b, 1, 0);
  tarn__store_counters c = counters(store);
  assert_int_equal(c.write_failures + c.read_failures, 0);
  assert_int_equal(c.bytes_written, 3 * UNIT + 5);
  assert_int_equal(c.bytes_read, 3 * UNIT + 5);
  tarn__store_close(store);
  mem_delete(m);
}

/* A write or read that fails before any byte moves (the compressed
 * image's staging buffer cannot be had) is a failed write or read in the
 * counters too (it was no one's: the pool counts only what the store
 * does not). */
static void test_failed_staging_is_counted(void **state) {
  (void)state;
  mem_storage *m = mem_new(16 * MiB);
  tarn__store *store = open_mem_store(m, 1);
  unsigned char *data = page_buffer(4 * UNIT);
  fill(data, 4 * UNIT, 3, 1);
  tarn__block b;
  atomic_store(&memalign_fails, 1);
  assert_int_equal(tarn__store_write(store, data, 4 * UNIT, &b), TARN_ENOMEM);
  tarn__store_counters c = counters(store);
  assert_int_equal(c.write_failures, 1);
  assert_int_equal(c.last_error, TARN_ENOMEM);
  assert_int_equal(c.stored_bytes, 0);
  assert_int_equal(tarn__store_write(store, data, 4 * UNIT, &b), 0);
  assert_true(b.packed < b.size); /* compressed: reading it needs staging */
  atomic_store(&memalign_fails, 1);
  unsigned char *back = page_buffer(4 * UNIT);
  assert_int_equal(tarn__store_read(store, &b, back), TARN_ENOMEM);
  assert_int_equal(counters(store).read_failures, 1);
  assert_int_equal(tarn__store_read(store, &b, back), 0);
  assert_memory_equal(back, data, 4 * UNIT);
  tarn__store_free(store, &b);
  free(back);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

static void test_custom_write_eio(void **state) {
  (void)state;
  mem_storage *m = mem_new(16 * MiB);
  tarn__store *store = open_mem_store(m, 0);
  tarn__block a = put(store, UNIT, 1, 0);
  m->fail_write = 2;
  unsigned char *data = page_buffer(2 * UNIT);
  fill(data, 2 * UNIT, 2, 0);
  tarn__block b;
  assert_int_equal(tarn__store_write(store, data, 2 * UNIT, &b), TARN_EIO);
  tarn__store_counters c = counters(store);
  assert_int_equal(c.write_failures, 1);
  assert_int_equal(c.last_error, TARN_EIO);
  assert_int_equal(c.stored_bytes, UNIT);
  assert_int_equal(m->discards, 1);
  /* The next write works, in the extent the failed one gave back. */
  assert_int_equal(tarn__store_write(store, data, 2 * UNIT, &b), 0);
  assert_int_equal(b.offset, a.extent);
  check(store, &b, 2, 0);
  check(store, &a, 1, 0);
  assert_int_equal(counters(store).write_failures, 1);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

static void test_custom_short_write_then_enospc(void **state) {
  (void)state;
  mem_storage *m = mem_new(6000);
  tarn__store *store = open_mem_store(m, 0);
  unsigned char *data = page_buffer(2 * UNIT);
  tarn__block b;
  assert_int_equal(tarn__store_write(store, data, 2 * UNIT, &b), TARN_ENOSPC);
  tarn__store_counters c = counters(store);
  assert_int_equal(c.write_failures, 1);
  assert_int_equal(c.last_error, TARN_ENOSPC);
  assert_int_equal(c.bytes_written, 6000);
  assert_int_equal(c.stored_bytes, 0);
  assert_int_equal(m->writes, 2);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

static void test_custom_disk_full(void **state) {
  (void)state;
  mem_storage *m = mem_new(4 * 16 * KiB);
  tarn__store *store = open_mem_store(m, 0);
  tarn__block b[4];
  for (int i = 0; i < 4; i++) b[i] = put(store, 16 * KiB, (uint64_t)i, 0);
  unsigned char *data = page_buffer(16 * KiB);
  fill(data, 16 * KiB, 9, 0);
  tarn__block extra;
  assert_int_equal(tarn__store_write(store, data, 16 * KiB, &extra),
                   TARN_ENOSPC);
  assert_int_equal(counters(store).stored_bytes, 4 * 16 * KiB);
  for (int i = 0; i < 4; i++) check(store, &b[i], (uint64_t)i, 0);
  /* Freeing a block makes room again. */
  tarn__store_free(store, &b[2]);
  assert_int_equal(tarn__store_write(store, data, 16 * KiB, &extra), 0);
  check(store, &extra, 9, 0);
  check(store, &b[3], 3, 0);
  assert_int_equal(counters(store).write_failures, 1);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

static void test_custom_corrupt_block(void **state) {
  (void)state;
  for (int compress = 0; compress < 2; compress++) {
    mem_storage *m = mem_new(16 * MiB);
    tarn__store *store = open_mem_store(m, compress);
    tarn__block b = put(store, 64 * KiB, 1, 1);
    assert_true(compress ? b.packed < b.size : b.packed == b.size);
    m->bytes[b.offset + b.packed / 2] ^= 0x10;
    unsigned char *data = page_buffer(b.size);
    assert_int_equal(tarn__store_read(store, &b, data), TARN_EIO);
    tarn__store_counters c = counters(store);
    assert_int_equal(c.read_failures, 1);
    assert_int_equal(c.last_error, TARN_EIO);
    /* Repaired, the same block reads back. */
    m->bytes[b.offset + b.packed / 2] ^= 0x10;
    check(store, &b, 1, 1);
    free(data);
    tarn__store_close(store);
    mem_delete(m);
  }
}

static void test_custom_read_errors(void **state) {
  (void)state;
  mem_storage *m = mem_new(16 * MiB);
  tarn__store *store = open_mem_store(m, 0);
  tarn__block b = put(store, 5000, 1, 0);
  unsigned char *data = page_buffer(b.size);
  m->fault = READ_EIO;
  assert_int_equal(tarn__store_read(store, &b, data), TARN_EIO);
  m->fault = READ_EOF;
  assert_int_equal(tarn__store_read(store, &b, data), TARN_EIO);
  tarn__store_counters c = counters(store);
  assert_int_equal(c.read_failures, 2);
  assert_int_equal(c.last_error, TARN_EIO);
  m->fault = READ_OK;
  check(store, &b, 1, 0);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

static void test_custom_enospc_errno_only(void **state) {
  (void)state;
  /* Any errno but ENOSPC is an I/O error. */
  mem_storage *m = mem_new(16 * MiB);
  tarn__store *store = open_mem_store(m, 1);
  m->fail_write = 1;
  tarn__block b;
  unsigned char *data = page_buffer(UNIT);
  assert_int_equal(tarn__store_write(store, data, UNIT, &b), TARN_EIO);
  assert_int_equal(counters(store).stored_bytes, 0);
  free(data);
  tarn__store_close(store);
  mem_delete(m);
}

/* ---- concurrency ------------------------------------------------------- */

enum { nthreads = 4, iterations = 150, in_flight = 4 };

typedef struct worker {
  pthread_t thread;
  tarn__store *store;
  unsigned id;
  int failures; /* checked by the main thread: cmocka is not thread-safe */
} worker;

static size_t worker_size(uint64_t seed) {
  return 1 + (seed * 7919) % (96 * KiB);
}

static int write_one(worker *w, uint64_t seed, tarn__block *b) {
  size_t size = worker_size(seed);
  unsigned char *data = page_buffer(size);
  fill(data, size, seed, seed % 2);
  int rc = tarn__store_write(w->store, data, size, b);
  free(data);
  return rc;
}

static int read_one(worker *w, uint64_t seed, const tarn__block *b) {
  unsigned char *data = page_buffer(b->size);
  int ok = tarn__store_read(w->store, b, data) == 0 &&
           b->size == worker_size(seed) &&
           matches(data, b->size, seed, seed % 2);
  free(data);
  tarn__store_free(w->store, b);
  return ok;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  tarn__block blocks[in_flight];
  for (uint64_t i = 0; i < iterations + in_flight; i++) {
    uint64_t slot = i % in_flight, seed = w->id * 100000u + i;
    if (i >= in_flight && !read_one(w, seed - in_flight, &blocks[slot]))
      w->failures++;
    if (i < iterations && write_one(w, seed, &blocks[slot]) != 0) w->failures++;
  }
  return NULL;
}

static void run_workers(tarn__store *store) {
  worker w[nthreads];
  for (unsigned i = 0; i < nthreads; i++) {
    w[i] = (worker){.store = store, .id = i + 1};
    assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
  }
  for (unsigned i = 0; i < nthreads; i++) {
    assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    assert_int_equal(w[i].failures, 0);
  }
  tarn__store_counters c = counters(store);
  assert_int_equal(c.stored_bytes, 0);
  assert_int_equal(c.write_failures + c.read_failures, 0);
}

static void test_threads_file(void **state) {
  (void)state;
  for (int compress = 0; compress < 2; compress++) {
    tarn__store *store = open_file_store(tmp_root(), compress);
    run_workers(store);
    tarn__store_close(store);
  }
}

static void test_threads_custom(void **state) {
  (void)state;
  mem_storage *m = mem_new(64 * MiB);
  tarn__store *store = open_mem_store(m, 1);
  run_workers(store);
  assert_int_equal(m->discards, nthreads * iterations);
  tarn__store_close(store);
  mem_delete(m);
}

/* ---- the checksum ------------------------------------------------------
 * A block's checksum is XXH3-64 whichever build the processor picks: the
 * AVX2 one, the portable one and libxxhash's own agree on every size
 * class of XXH3 (0, 1-3, 4-8, 9-16, 17-128, 129-240, longer; whole and
 * partial stripes and blocks) at every alignment, and on a spilled tile's
 * size. */
static void test_checksum_is_xxh3_everywhere(void **state) {
  (void)state;
  enum { longest = 4 * 1024 + 64, offsets = 8 };
  unsigned char *bytes = malloc(longest + offsets);
  assert_non_null(bytes);
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < longest + offsets; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    bytes[i] = (unsigned char)x;
  }
  assert_true(tarn__checksum(bytes, 0) == 0x2d06800538d394c2u);
  for (size_t off = 0; off < offsets; off++)
    for (size_t n = 0; n <= longest; n++) {
      uint64_t want = XXH3_64bits(bytes + off, n);
      if (tarn__checksum(bytes + off, n) != want ||
          tarn__checksum_portable(bytes + off, n) != want)
        fail_msg("checksum of %zu bytes at offset %zu is not XXH3-64's", n,
                 off);
    }
  free(bytes);

  size_t tile = 512 * 512 * sizeof(double) + 24;
  unsigned char *big = malloc(tile);
  assert_non_null(big);
  for (size_t i = 0; i < tile; i++) big[i] = (unsigned char)(i * 131 + 7);
  uint64_t want = XXH3_64bits(big, tile);
  assert_true(tarn__checksum(big, tile) == want);
  assert_true(tarn__checksum_portable(big, tile) == want);
  big[tile / 2] ^= 1; /* one bit flipped anywhere changes it */
  assert_true(tarn__checksum(big, tile) != want);
  free(big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_round_trip),
      cmocka_unit_test(test_checksum_is_xxh3_everywhere),
      cmocka_unit_test(test_trim_gives_space_back),
      cmocka_unit_test(test_fadvise_round_trip),
      cmocka_unit_test(test_direct_refused_at_write),
      cmocka_unit_test(test_shm_round_trip),
      cmocka_unit_test(test_file_leaves_nothing),
      cmocka_unit_test(test_open_missing_dir),
      cmocka_unit_test(test_extents_reused),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_custom_round_trip),
      cmocka_unit_test(test_custom_short_counts_continued),
      cmocka_unit_test(test_custom_write_eio),
      cmocka_unit_test(test_failed_staging_is_counted),
      cmocka_unit_test(test_custom_short_write_then_enospc),
      cmocka_unit_test(test_custom_disk_full),
      cmocka_unit_test(test_custom_corrupt_block),
      cmocka_unit_test(test_custom_read_errors),
      cmocka_unit_test(test_custom_enospc_errno_only),
      cmocka_unit_test(test_threads_file),
      cmocka_unit_test(test_threads_custom),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
