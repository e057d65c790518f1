/* os.c: the POSIX/Linux implementation of prim.h. Nothing here keeps state
 * except the page size, the tick counter's choice and rate and the CPU
 * quota, each set once and never changed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "prim/prim.h"
#include "tarn/status.h"

size_t tarn__page_size(void) {
  static atomic_size_t cached;
  size_t page = atomic_load_explicit(&cached, memory_order_relaxed);
  if (page == 0) {
    long v = sysconf(_SC_PAGESIZE);
    page = v > 0 ? (size_t)v : 4096;
    atomic_store_explicit(&cached, page, memory_order_relaxed);
  }
  return page;
}

int tarn__vm_reserve(size_t bytes, void **out) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return TARN_ENOMEM;
  *out = p;
  return 0;
}

void tarn__vm_unreserve(void *base, size_t bytes) {
  if (base != NULL) munmap(base, bytes);
}

size_t tarn__page_round(size_t bytes) {
  size_t page = tarn__page_size();
  return (bytes + page - 1) & ~(page - 1);
}

/* Maps bytes (page-rounded) on an `align` boundary: maps align more and
 * unmaps the head and the tail around the aligned start. */
static int map_on_boundary(size_t bytes, size_t align, void **out) {
  if (bytes == 0 || bytes > SIZE_MAX - align - tarn__page_size())
    return TARN_ENOMEM;
  bytes = tarn__page_round(bytes);
  size_t span = bytes + align;
  void *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return TARN_ENOMEM;
  uintptr_t base = (uintptr_t)m;
  uintptr_t start = (base + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - base, tail = span - head - bytes;
  if (head != 0) munmap(m, head);
  if (tail != 0) munmap((void *)(start + bytes), tail);
  *out = (void *)start;
  return 0;
}

int tarn__vm_map_huge(size_t bytes, void **out) {
  void *start = NULL;
  int rc = map_on_boundary(bytes, TARN_HUGE_PAGE, &start);
  if (rc != 0) return rc;
  size_t whole = tarn__page_round(bytes) & ~(TARN_HUGE_PAGE - 1);
  if (whole != 0) (void)madvise(start, whole, MADV_HUGEPAGE);
  *out = start;
  return 0;
}

int tarn__vm_map_aligned(size_t bytes, size_t align, void **out) {
  void *start = NULL;
  int rc = map_on_boundary(bytes, align, &start);
  if (rc != 0) return rc;
  (void)madvise(start, bytes, MADV_NOHUGEPAGE);
  *out = start;
  return 0;
}

int tarn__vm_discard(void *base, size_t bytes) {
  if (bytes == 0) return 0;
  return madvise(base, bytes, MADV_DONTNEED) == 0 ? 0 : TARN_EINVAL;
}

/* What tarn gave the heap since the last trim, and the least that makes
 * a trim worth its locks. */
static _Atomic size_t heap_freed;
#define HEAP_TRIM_MIN ((size_t)1 << 20)

void tarn__heap_freed(size_t bytes) {
  /* Counted per thread and added in batches: a ref's handle is freed with
   * every temporary, and one shared counter would move between the cores
   * for each. What a thread holds back (under 64 KiB) waits for its next
   * frees. */
  static TARN_THREAD_LOCAL size_t pending;
  pending += bytes;
  if (pending < ((size_t)64 << 10)) return;
  atomic_fetch_add_explicit(&heap_freed, pending, memory_order_relaxed);
  pending = 0;
}

bool tarn__heap_trim(void) {
  /* malloc_trim walks every free chunk and discards its pages again even
   * when they were discarded before: after a burst of 300000 tasks the
   * heap held 143 MB free, and each rest's trim took 2 to 126 ms with the
   * heap locked, any malloc of the program waiting meanwhile. So only
   * after tarn freed enough since the last one. */
  if (atomic_load_explicit(&heap_freed, memory_order_relaxed) < HEAP_TRIM_MIN)
    return false;
  atomic_exchange_explicit(&heap_freed, 0, memory_order_relaxed);
#ifdef __GLIBC__
  (void)malloc_trim(0);
  return true;
#else
  return false;
#endif
}

_Atomic uint32_t tarn__forks_seen;

static void fork_counted(void) {
  atomic_fetch_add_explicit(&tarn__forks_seen, 1, memory_order_relaxed);
}

static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void forks_watch(void) {
  /* Unregistered by glibc if the library is unloaded (dlclose). Without
   * the handler (no memory for it) a child's calls on the parent's
   * handles are not refused: no worse than before. */
  (void)pthread_atfork(NULL, NULL, fork_counted);
}

uint32_t tarn__magic_live(uint32_t type_live) {
  pthread_once(&forks_once, forks_watch);
  return type_live +
         atomic_load_explicit(&tarn__forks_seen, memory_order_relaxed);
}

void tarn__magic_report(const void *handle, uint32_t magic, uint32_t type_live,
                        const char *what, const char *after) {
  uint32_t forks =
      atomic_load_explicit(&tarn__forks_seen, memory_order_relaxed);
  if (magic == TARN__MAGIC_DEAD)
    fprintf(stderr, "tarn: %s %p used after %s\n", what, handle, after);
  else if (magic - type_live < forks)
    fprintf(stderr,
            "tarn: %s %p made before this process forked: a child of fork "
            "makes its own (docs/rt.md, \"Processes that fork\")\n",
            what, handle);
}

void tarn__magic_free(void *block, uint32_t *magic) {
  *(volatile uint32_t *)magic = TARN__MAGIC_DEAD;
  free(block);
}

int tarn__env_flag(const char *name, int *out) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0') return 0;
  if ((text[0] != '0' && text[0] != '1') || text[1] != '\0') return TARN_EINVAL;
  *out = text[0] - '0';
  return 0;
}

uint64_t tarn__clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tarn__clock_coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

atomic_bool tarn__ticks_tsc;

/* Ticks per nanosecond: 1 without the time-stamp counter. Written once,
 * inside pthread_once, which orders it before every tarn__ticks_init's
 * return (and so before any thread started after one). */
static double ticks_per_ns = 1;
static pthread_once_t ticks_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
/* Whether the kernel keeps time by the time-stamp counter. */
static bool kernel_uses_tsc(void) {
  FILE *f = fopen(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == NULL) return false;
  char name[32];
  bool tsc = fgets(name, sizeof name, f) != NULL && strcmp(name, "tsc\n") == 0;
  fclose(f);
  return tsc;
}

/* CLOCK_MONOTONIC and the counter at one moment: of 8 tries, each clock
 * read between two counter reads, the one with the two closest (the
 * first calls are slow: the clock's page and code are cold), the counter
 * taken halfway; *spread is that closeness in ticks. */
static void read_both(uint64_t *tsc, uint64_t *ns, uint64_t *spread) {
  *tsc = *ns = 0;
  *spread = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = tarn__tsc(), n = tarn__clock_ns(), b = tarn__tsc();
    if (b >= a && b - a < *spread) {
      *spread = b - a;
      *tsc = a + (b - a) / 2;
      *ns = n;
    }
  }
}

/* Two readings of both, 50 us of the clock apart, three tries (prim.h). */
double tarn__tsc_rate(void) {
  for (int attempt = 0; attempt < 3; attempt++) {
    uint64_t t0, n0, s0, t1, n1, s1;
    read_both(&t0, &n0, &s0);
    while (tarn__clock_ns() - n0 < 50000) continue;
    read_both(&t1, &n1, &s1);
    if (s0 > 2000 || s1 > 2000 || n1 <= n0 || t1 <= t0) continue;
    double rate = (double)(t1 - t0) / (double)(n1 - n0);
    if (rate > 0.05 && rate < 20) return rate;
  }
  return 0;
}
#endif

static void ticks_choose(void) {
#if defined(__x86_64__)
  double measured = kernel_uses_tsc() ? tarn__tsc_rate() : 0;
  if (measured > 0) {
    ticks_per_ns = measured;
    atomic_store_explicit(&tarn__ticks_tsc, true, memory_order_relaxed);
  }
#endif
}

void tarn__ticks_init(void) { pthread_once(&ticks_once, ticks_choose); }

uint64_t tarn__ticks_to_ns(uint64_t ticks) {
  return (uint64_t)((double)ticks / ticks_per_ns);
}

uint64_t tarn__ns_to_ticks(uint64_t ns) {
  return (uint64_t)((double)ns * ticks_per_ns);
}

unsigned tarn__cpus_allowed(int *cpus, unsigned max) {
  cpu_set_t set;
  unsigned n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) {
        if (n < max) cpus[n] = c;
        n++;
      }
    if (n > 0) return n;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  n = online > 0 ? (unsigned)online : 1u;
  for (unsigned c = 0; c < n && c < max; c++) cpus[c] = (int)c;
  return n;
}

/* The process's CPU quota, read once (tarn__cpu_count). */
static pthread_once_t quota_once = PTHREAD_ONCE_INIT;
static unsigned process_quota;

static void read_quota(void) { process_quota = tarn__cpu_quota(NULL); }

unsigned tarn__cpu_count(void) {
  unsigned allowed = tarn__cpus_allowed(NULL, 0);
  pthread_once(&quota_once, read_quota);
  return process_quota != 0 && process_quota < allowed ? process_quota
                                                       : allowed;
}

size_t tarn__memory_usable(void) {
  long pages = sysconf(_SC_PHYS_PAGES);
  size_t physical = pages > 0 && (size_t)pages <= SIZE_MAX / tarn__page_size()
                        ? (size_t)pages * tarn__page_size()
                        : 0;
  size_t limit = tarn__memory_limit(NULL);
  if (limit != 0 && (physical == 0 || limit < physical)) return limit;
  return physical;
}

/* From linux/magic.h, which a build may lack. */
#define FS_TMPFS_MAGIC 0x01021994
#define FS_RAMFS_MAGIC 0x858458f6

int tarn__fs_in_memory(const char *path, int fd) {
  struct statfs st;
  if ((path != NULL ? statfs(path, &st) : fstatfs(fd, &st)) != 0) return -1;
  return st.f_type == FS_TMPFS_MAGIC || st.f_type == FS_RAMFS_MAGIC;
}

bool tarn__dir_writable(const char *path) {
  return access(path, W_OK | X_OK) == 0;
}
