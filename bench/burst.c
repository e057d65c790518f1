/* burst.c: the malloc+free burst of `tarn bench alloc` for one malloc, run
 * in a process of its own. Built once per malloc with BURST_GLIBC,
 * BURST_MIMALLOC or BURST_JEMALLOC (the latter two linked so that they
 * replace malloc); it first checks that the intended malloc really serves
 * malloc() and fails loudly otherwise. Usage: tarn-burst-NAME [SAMPLES].
 * Output, one item a line: "allocator NAME", "ops N" (blocks allocated and
 * freed per sample), then SAMPLES lines "sample SECONDS". */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#if defined(BURST_GLIBC)
#include <malloc.h>
#define ALLOCATOR "glibc"
#elif defined(BURST_MIMALLOC)
#include <mimalloc.h>
#define ALLOCATOR "mimalloc"
#elif defined(BURST_JEMALLOC)
#include <jemalloc/jemalloc.h>
#define ALLOCATOR "jemalloc"
#else
#error "define one of BURST_GLIBC, BURST_MIMALLOC, BURST_JEMALLOC"
#endif

#define PROG "tarn-burst-" ALLOCATOR
#define BLOCK 64
#define BURST 4096

static void *ptrs[BURST];

static uint64_t now_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
    perror(PROG ": clock_gettime(CLOCK_MONOTONIC)");
    exit(1);
  }
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(BURST_GLIBC)
/* glibc's own statistics must see a 1 MiB block that malloc hands out. */
static int allocator_in_effect(void) {
  const size_t bytes = (size_t)1 << 20;
  struct mallinfo2 before = mallinfo2();
  void *p = malloc(bytes);
  bench_escape(p);
  struct mallinfo2 after = mallinfo2();
  free(p);
  return p != NULL && after.uordblks + after.hblkhd >=
                          before.uordblks + before.hblkhd + bytes;
}
#elif defined(BURST_MIMALLOC)
/* A block from malloc must lie in mimalloc's heap. */
static int allocator_in_effect(void) {
  void *p = malloc(BLOCK);
  bench_escape(p);
  int ok = p != NULL && mi_is_in_heap_region(p);
  free(p);
  return ok;
}
#else
/* jemalloc's per-thread count of allocated bytes must grow with malloc. */
static int allocator_in_effect(void) {
  uint64_t *allocated = NULL;
  size_t len = sizeof allocated;
  if (mallctl("thread.allocatedp", &allocated, &len, NULL, 0) != 0) {
    fprintf(stderr, PROG ": mallctl(\"thread.allocatedp\") failed\n");
    return 0;
  }
  uint64_t before = *allocated;
  void *p = malloc(BLOCK);
  bench_escape(p);
  uint64_t after = *allocated;
  free(p);
  return p != NULL && after - before >= BLOCK;
}
#endif

/* Checks the malloc in effect and the alignment of a 64-byte block. */
static int check_allocator(void) {
  if (!allocator_in_effect()) {
    fprintf(stderr, PROG ": malloc is not " ALLOCATOR
                         "'s in this process (another "
                         "malloc, a sanitizer or LD_PRELOAD replaced it)\n");
    return 1;
  }
  void *p = malloc(BLOCK);
  bench_escape(p);
  int misaligned = p == NULL || (uintptr_t)p % 16 != 0;
  free(p);
  if (misaligned) {
    fprintf(stderr, PROG ": malloc(%d) is not 16-byte aligned\n", BLOCK);
    return 1;
  }
  return 0;
}

/* `reps` bursts: BURST blocks allocated, written and kept, then all freed.
 * The same per-block work as the bump and bare loops of alloc.c. */
static int burst(uint64_t reps, double *seconds) {
  uint64_t t0 = now_ns();
  for (uint64_t r = 0; r < reps; r++) {
    for (size_t i = 0; i < BURST; i++) {
      void *block = malloc(BLOCK);
      if (block == NULL) {
        fprintf(stderr, PROG ": malloc(%d) failed\n", BLOCK);
        return 1;
      }
      *(unsigned char *)block = (unsigned char)i;
      ptrs[i] = block;
    }
    bench_escape(ptrs);
    for (size_t i = 0; i < BURST; i++) free(ptrs[i]);
  }
  *seconds = (double)(now_ns() - t0) * 1e-9;
  return 0;
}

/* The rule of bench_calibrate: double until a run takes a sixth of the
 * target, then scale to the target. */
static int calibrate(uint64_t *reps) {
  for (uint64_t n = 1;; n *= 2) {
    double t = 0;
    if (burst(n, &t) != 0) return 1;
    if (t >= BENCH_TARGET_S / 6 || n >= UINT64_MAX / 4) {
      double scaled = (double)n * BENCH_TARGET_S / (t > 0 ? t : 1);
      *reps = scaled < 1 ? 1 : (uint64_t)scaled;
      return 0;
    }
  }
}

static int parse_samples(int argc, char **argv, size_t *samples) {
  *samples = BENCH_SAMPLES_DEFAULT;
  if (argc == 1) return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(argv[1], &end, 10);
  if (argc > 2 || errno != 0 || end == argv[1] || *end != '\0' ||
      v < BENCH_SAMPLES_MIN || v > BENCH_SAMPLES_MAX) {
    fprintf(stderr, "usage: " PROG " [SAMPLES]  (SAMPLES %d to %d)\n",
            BENCH_SAMPLES_MIN, BENCH_SAMPLES_MAX);
    return 2;
  }
  *samples = (size_t)v;
  return 0;
}

int main(int argc, char **argv) {
  size_t n = 0;
  int rc = parse_samples(argc, argv, &n);
  if (rc != 0) return rc;
  if (check_allocator() != 0) return 1;
  uint64_t reps = 0;
  double warm = 0, samples[BENCH_SAMPLES_MAX];
  if (calibrate(&reps) != 0 || burst(reps, &warm) != 0) return 1;
  for (size_t i = 0; i < n; i++)
    if (burst(reps, &samples[i]) != 0) return 1;

  printf("allocator %s\nops %llu\n", ALLOCATOR,
         (unsigned long long)(reps * BURST));
  for (size_t i = 0; i < n; i++) printf("sample %.9e\n", samples[i]);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    perror(PROG ": writing the results");
    return 1;
  }
  return 0;
}
