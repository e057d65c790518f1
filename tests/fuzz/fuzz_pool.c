/* fuzz_pool.c: a libFuzzer target over pool operation sequences. Each input
 * byte pair is one operation (alloc, create, adopt, create_from a source
 * or a home, retain, release, pin for read or write, unpin, escape,
 * prefetch, flush) on one of eight slots of a pool with a tiny limit and
 * an in-memory storage; a simple model tracks counts and the pattern each
 * object must hold (and that each source is released once), and any
 * disagreement aborts. Built with clang (-fsanitize=fuzzer,address) by
 * scripts/test.sh when clang is present. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn.h"

enum { slots = 8 };

struct slot {
  tarn_ref *ref;
  size_t size;
  uint8_t seed;
  int refs, pins;
  unsigned char *home; /* the source's home (tarn_source.write), or NULL */
};

static unsigned char disk[4 << 20];

static long disk_write(void *ctx, const void *buf, size_t len, uint64_t off) {
  (void)ctx;
  if (off + len > sizeof disk) return -ENOSPC;
  memcpy(disk + off, buf, len);
  return (long)len;
}

static long disk_read(void *ctx, void *buf, size_t len, uint64_t off) {
  (void)ctx;
  if (off + len > sizeof disk) return -EIO;
  memcpy(buf, disk + off, len);
  return (long)len;
}

static void check(int ok) {
  if (!ok) abort();
}

/* A source of the pattern of the seed in ctx; counts the live ones. */
static int sources_alive;

static int source_read(void *ctx, void *dst, size_t size) {
  uint8_t seed = (uint8_t)(uintptr_t)ctx;
  unsigned char *p = dst;
  for (size_t i = 0; i < size; i++) p[i] = (uint8_t)(seed + i);
  return 0;
}

static void source_release(void *ctx) {
  (void)ctx;
  sources_alive--;
}

/* A home: read gives what write stored (the seed's pattern at first). */
static int home_read(void *ctx, void *dst, size_t size) {
  memcpy(dst, ctx, size);
  return 0;
}

static int home_write(void *ctx, const void *src, size_t size) {
  memcpy(ctx, src, size);
  return 0;
}

static void home_release(void *ctx) {
  free(ctx);
  sources_alive--;
}

static void pin(struct slot *s, int write) {
  unsigned char *p = NULL;
  int rc =
      tarn_ref_pin(s->ref, write ? TARN_READ_WRITE : TARN_READ, 0, (void **)&p);
  if (rc == TARN_ENOMEM) return;
  check(rc == 0);
  for (size_t i = 0; i < s->size; i++) check(p[i] == (uint8_t)(s->seed + i));
  if (write) {
    s->seed = (uint8_t)(s->seed * 31 + 7);
    for (size_t i = 0; i < s->size; i++) p[i] = (uint8_t)(s->seed + i);
  }
  s->pins++;
}

static void create(tarn_pool *pool, struct slot *s, uint8_t arg) {
  size_t size = 1 + (size_t)arg * 97;
  tarn_ref *r = NULL;
  int rc;
  if (arg % 5 >= 3) { /* its bytes come from the source (until written) */
    tarn_source src = {.read = source_read,
                       .release = source_release,
                       .ctx = (void *)(uintptr_t)arg};
    unsigned char *home = NULL;
    if (arg % 5 == 4) { /* written bytes go back home */
      home = malloc(size);
      check(home != NULL);
      check(source_read(src.ctx, home, size) == 0);
      src = (tarn_source){.read = home_read,
                          .release = home_release,
                          .ctx = home,
                          .write = home_write};
    }
    check(tarn_ref_create_from(pool, size, &src, &r) == 0);
    sources_alive++;
    *s = (struct slot){r, size, arg, 1, 0, home};
    return;
  }
  if (arg % 5 == 0) {
    rc = tarn_ref_alloc(pool, size, 0, &r);
  } else if (arg % 5 == 1) {
    rc = tarn_ref_create(pool, size, &r);
  } else {
    void *obj = malloc(size);
    check(obj != NULL);
    rc = tarn_ref_adopt(pool, obj, size, &tarn_kind_malloc, 0, &r);
    if (rc != 0) free(obj);
  }
  if (rc == TARN_ENOMEM) return;
  check(rc == 0);
  unsigned char *p = NULL;
  rc = tarn_ref_pin(r, TARN_WRITE, 0, (void **)&p);
  if (rc == TARN_ENOMEM) {
    check(tarn_ref_release(r) == 0);
    return;
  }
  check(rc == 0);
  for (size_t i = 0; i < size; i++) p[i] = (uint8_t)(arg + i);
  check(tarn_ref_unpin(r) == 0);
  *s = (struct slot){r, size, arg, 1, 0, NULL};
}

static void release(struct slot *s) {
  check(tarn_ref_release(s->ref) == 0);
  if (--s->refs > 0) return;
  if (s->pins > 0) check(tarn_ref_release(s->ref) == TARN_EMISUSE);
  for (; s->pins > 0; s->pins--) check(tarn_ref_unpin(s->ref) == 0);
  s->ref = NULL;
}

static void step(tarn_pool *pool, struct slot *s, uint8_t op, uint8_t arg) {
  if (s->ref == NULL) {
    create(pool, s, arg);
    return;
  }
  switch (op % 8) {
    case 0:
      if (s->pins < 3) pin(s, 0);
      break;
    case 1:
      if (s->pins == 0) pin(s, 1);
      break;
    case 2:
      check(tarn_ref_unpin(s->ref) == (s->pins > 0 ? 0 : TARN_EMISUSE));
      if (s->pins > 0) s->pins--;
      break;
    case 3:
      check(tarn_ref_retain(s->ref) == 0);
      s->refs++;
      break;
    case 4:
      release(s);
      break;
    case 5: {
      void *p = NULL;
      int rc = tarn_ref_escape(s->ref, 0, &p);
      check(rc == 0 || rc == TARN_ENOMEM);
      break;
    }
    case 6:
      check(tarn_ref_prefetch(s->ref) >= 0);
      break;
    default:
      if (s->home == NULL) {
        release(s);
        break;
      }
      /* Flushed, the home holds the pattern last written. */
      check(tarn_ref_flush(s->ref) == 0);
      for (size_t i = 0; i < s->size; i++)
        check(s->home[i] == (uint8_t)(s->seed + i));
      break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_pool_options o;
  tarn_pool_options_init(&o);
  o.mem_limit = 64 << 10;
  o.io_threads = 1;
  tarn_storage st = {NULL, disk_write, disk_read, NULL, NULL};
  o.storage = &st;
  tarn_pool *pool = NULL;
  check(tarn_pool_create(&o, &pool) == 0);
  struct slot s[slots];
  memset(s, 0, sizeof s);
  for (size_t i = 0; i + 1 < size; i += 2)
    step(pool, &s[data[i] % slots], (uint8_t)(data[i] / slots), data[i + 1]);
  for (int i = 0; i < slots; i++) {
    for (; s[i].ref != NULL && s[i].pins > 0; s[i].pins--)
      check(tarn_ref_unpin(s[i].ref) == 0);
    while (s[i].ref != NULL) release(&s[i]);
  }
  tarn_pool_stats stats;
  check(tarn_pool_stats_get(pool, &stats) == 0);
  check(stats.resident_peak <= o.mem_limit);
  check(tarn_pool_destroy(pool) == 0);
  check(sources_alive == 0);
  return 0;
}
