/* memdisk.h: an in-memory spill storage (tarn_storage) with injectable
 * faults, for the tests of what a failing disk does (include after
 * <cmocka.h>): writes past an offset fail with ENOSPC, the Nth write or
 * read fails with EIO, every write fails with EIO, the Nth write is short
 * then ENOSPC, one read or write in N fails at random (a write with EIO
 * or ENOSPC, a read with EIO); every stored
 * byte can be flipped; the 8-byte words written that hold a given value
 * are counted. Thread-safe: one lock around each call. */
#ifndef TARN_TESTS_MEMDISK_H
#define TARN_TESTS_MEMDISK_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn.h"

struct memdisk {
  pthread_mutex_t lock;
  unsigned char *bytes;
  size_t cap;     /* bytes allocated */
  size_t full_at; /* writes past this offset fail with ENOSPC; 0 = never */
  int fail_write; /* the Nth write call from now fails with EIO (1 = next) */
  int write_eio;  /* while nonzero, every write fails with EIO */
  unsigned fail_one_in; /* one call in this many fails at random; 0 = none */
  uint64_t rng;         /* its generator's state (nonzero) */
  int short_write;      /* the Nth write writes half, then ENOSPC */
  int fail_read;        /* the Nth read fails with EIO */
  int writes, reads;
  int in_short;
  uint64_t watch; /* when nonzero, the words written equal to it ... */
  size_t watched; /* ... are counted here (words at 8-byte steps of each
                     write's start, as a block's doubles lie) */
};

/* Whether this call fails at random (lock held). */
static inline int memdisk_chance(struct memdisk *d) {
  if (d->fail_one_in == 0) return 0;
  d->rng ^= d->rng << 13;
  d->rng ^= d->rng >> 7;
  d->rng ^= d->rng << 17;
  return d->rng % d->fail_one_in == 0;
}

static inline long memdisk_write(void *ctx, const void *buf, size_t len,
                                 uint64_t off) {
  struct memdisk *d = ctx;
  pthread_mutex_lock(&d->lock);
  long rc = (long)len;
  d->writes++;
  if (d->in_short) {
    d->in_short = 0;
    rc = -ENOSPC;
  } else if (memdisk_chance(d)) {
    rc = d->rng & 256 ? -EIO : -ENOSPC;
  } else if (d->write_eio || (d->fail_write > 0 && --d->fail_write == 0)) {
    rc = -EIO;
  } else if (d->full_at != 0 && off + len > d->full_at) {
    rc = -ENOSPC;
  } else if (d->short_write > 0 && --d->short_write == 0) {
    rc = (long)(len / 2);
    d->in_short = 1;
  }
  if (rc > 0) {
    if (off + (size_t)rc > d->cap) {
      size_t cap = (off + (size_t)rc) * 2;
      d->bytes = realloc(d->bytes, cap);
      memset(d->bytes + d->cap, 0, cap - d->cap);
      d->cap = cap;
    }
    memcpy(d->bytes + off, buf, (size_t)rc);
    for (size_t i = 0; d->watch != 0 && i + 8 <= (size_t)rc; i += 8) {
      uint64_t w;
      memcpy(&w, (const unsigned char *)buf + i, sizeof w);
      d->watched += w == d->watch;
    }
  }
  pthread_mutex_unlock(&d->lock);
  return rc;
}

static inline long memdisk_read(void *ctx, void *buf, size_t len,
                                uint64_t off) {
  struct memdisk *d = ctx;
  pthread_mutex_lock(&d->lock);
  long rc = (long)len;
  d->reads++;
  if ((d->fail_read > 0 && --d->fail_read == 0) || memdisk_chance(d))
    rc = -EIO;
  else if (off + len > d->cap)
    rc = -EIO;
  else
    memcpy(buf, d->bytes + off, len);
  pthread_mutex_unlock(&d->lock);
  return rc;
}

static inline void memdisk_flip_all(struct memdisk *d) {
  pthread_mutex_lock(&d->lock);
  for (size_t i = 0; i < d->cap; i++) d->bytes[i] ^= 0x40;
  pthread_mutex_unlock(&d->lock);
}

static inline struct memdisk *memdisk_new(void) {
  struct memdisk *d = calloc(1, sizeof *d);
  assert_non_null(d);
  pthread_mutex_init(&d->lock, NULL);
  return d;
}

static inline void memdisk_free(struct memdisk *d) {
  pthread_mutex_destroy(&d->lock);
  free(d->bytes);
  free(d);
}

/* The storage of a pool (tarn_pool_options.storage) backed by `d`. */
static inline tarn_storage memdisk_storage(struct memdisk *d) {
  return (tarn_storage){.ctx = d, .write = memdisk_write, .read = memdisk_read};
}

#endif
