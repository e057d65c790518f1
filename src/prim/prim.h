/* prim.h: every operating-system call tarn makes, behind one small layer.
 * This is the only place with platform-specific code; the layers above call
 * these functions and never mmap, madvise or clock_gettime directly. */
#ifndef TARN_PRIM_H
#define TARN_PRIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* A thread-local variable of tarn's own, in the initial-exec model where
 * the compiler has one: in libtarn.so each access is then a load relative
 * to the thread pointer, instead of a call to __tls_get_addr (a region of
 * one task made fourteen such calls: linked with libtarn.so, a region of
 * one empty task with three refs took 3,030 instructions instead of 3,190
 * under callgrind, and 0.51 us instead of 0.53 in ten alternated runs of
 * 200,000; a program linked with libtarn.a had the fast access already).
 * The model takes the variables from the static TLS block, which a
 * library loaded by dlopen may use only while glibc's reserve for that
 * lasts: tarn's come to 64 bytes, and test_dlopen loads libtarn.so that
 * way. */
#if defined(__GNUC__)
#define TARN_THREAD_LOCAL \
  _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define TARN_THREAD_LOCAL _Thread_local
#endif

/* The system page size in bytes (a power of two), read once. Thread-safe. */
size_t tarn__page_size(void);

/* `bytes` rounded up to whole pages (the caller sees that it does not
 * overflow). Thread-safe. */
size_t tarn__page_round(size_t bytes);

/* Reserves `bytes` of readable, writable address space that is backed by
 * memory only when touched (MAP_NORESERVE). Returns 0 and *out, or
 * TARN_ENOMEM when the system refuses. Thread-safe. */
int tarn__vm_reserve(size_t bytes, void **out);

/* Unmaps a reservation made by tarn__vm_reserve, or a mapping made by
 * tarn__vm_map_huge. Thread-safe. */
void tarn__vm_unreserve(void *base, size_t bytes);

/* The size of a transparent huge page on x86-64 and arm64 with 4 KiB
 * pages. */
#define TARN_HUGE_PAGE ((size_t)2 << 20)

/* Maps `bytes` of readable, writable memory (zeros, backed only when
 * touched) starting on a TARN_HUGE_PAGE boundary, and asks the kernel for
 * transparent huge pages (madvise MADV_HUGEPAGE) on its whole huge pages;
 * a tail shorter than one stays on small pages, so no page ever covers
 * memory outside the mapping. One TLB entry then covers 2 MiB, where a
 * stream through memory otherwise misses the TLB every 4 KiB. Where the
 * kernel has no huge pages the advice is ignored. Returns 0 and *out, or
 * TARN_ENOMEM. Free with tarn__vm_unreserve(base, bytes). Thread-safe. */
int tarn__vm_map_huge(size_t bytes, void **out);

/* Maps `bytes` (a multiple of the page) of readable, writable memory
 * (zeros, backed only when touched) starting on an `align` boundary (a
 * power of two, at least the page), on small pages: the kernel is asked
 * not to back it with transparent huge pages, so a mapping used in part
 * holds only the pages touched. Returns 0 and *out, or TARN_ENOMEM. Free
 * with tarn__vm_unreserve(base, bytes). Thread-safe. */
int tarn__vm_map_aligned(size_t bytes, size_t align, void **out);

/* Gives the pages of [base, base + bytes) back to the system; the range
 * stays reserved and reads as zeros when touched again. `base` and `bytes`
 * are page-aligned. Returns 0 or TARN_EINVAL. Thread-safe. */
int tarn__vm_discard(void *base, size_t bytes);

/* Counts `bytes` that tarn gave back to the C library's heap (freed
 * buffers and ref handles), for tarn__heap_trim; each thread adds its
 * count once it reaches 64 KiB. Thread-safe. */
void tarn__heap_freed(size_t bytes);

/* Handles with a magic word (the runtime, the pool, a ref, a matrix, a
 * slab set): live while in use, TARN__MAGIC_DEAD once destroyed. The
 * live word is the type's constant plus the forks counted when the handle
 * was made (tarn__magic_live), so in a child of fork every handle made
 * before the fork reads as not live: its threads are gone and its locks
 * may be held for ever, and the child's calls on it are refused instead
 * of hanging (docs/rt.md, "Processes that fork"). The word lies at least
 * TARN__MAGIC_MIN_OFFSET bytes into its block, past what the heap's free
 * writes at a block's start (glibc: up to four pointers, fd, bk and, in
 * its large bins, fd_nextsize and bk_nextsize), so the dead word outlives
 * the free until the memory is reused. */
#define TARN__MAGIC_DEAD 0xdeadbeefu
#define TARN__MAGIC_MIN_OFFSET (4 * sizeof(void *))

/* How many forks lie between this process and the one of its line that
 * first called tarn__magic_live: each child adds one (pthread_atfork);
 * nothing else writes it. */
extern _Atomic uint32_t tarn__forks_seen;

/* The live magic word of a handle of `type_live` made now. Counts forks
 * from its first call on. Thread-safe. */
uint32_t tarn__magic_live(uint32_t type_live);

/* Reports on stderr a handle whose magic word reads TARN__MAGIC_DEAD, as
 * "tarn: <what> <handle> used after <after>", or one made before this
 * process forked (`type_live` plus an earlier count of forks); nothing for
 * any other word. Thread-safe. */
void tarn__magic_report(const void *handle, uint32_t magic, uint32_t type_live,
                        const char *what, const char *after);

/* Whether the handle `handle`, whose magic word reads `magic`, is live
 * (`magic` is `type_live` plus the forks seen); else false, reported by
 * tarn__magic_report. Inline: a ref's pin and unpin ask it. Thread-safe. */
static inline bool tarn__magic_ok(const void *handle, uint32_t magic,
                                  uint32_t type_live, const char *what,
                                  const char *after) {
  uint32_t forks =
      atomic_load_explicit(&tarn__forks_seen, memory_order_relaxed);
  if (magic == type_live + forks) return true;
  tarn__magic_report(handle, magic, type_live, what, after);
  return false;
}

/* Writes TARN__MAGIC_DEAD to `*magic`, a word inside `block`, then frees
 * `block`. The store is volatile: a plain one right before free is a dead
 * store the compiler removes (GCC did, in tarn_matrix_destroy). */
void tarn__magic_free(void *block, uint32_t *magic);

/* Gives the C library's free heap memory back to the system (glibc's
 * malloc_trim: whole free pages in every arena, not only at their tops),
 * when tarn has given the heap at least 1 MiB (tarn__heap_freed) since
 * the last trim; nothing elsewhere. Returns whether it trimmed.
 * Thread-safe; holds the heap's locks for the whole trim (126 ms over 143
 * MB of free heap here, and as long again when nothing new was freed), so
 * for idle moments. */
bool tarn__heap_trim(void);

/* The environment variable `name` as a flag: "0" or "1" into *out.
 * Returns 0, also when it is unset or empty (*out untouched), or
 * TARN_EINVAL for anything else. Thread-safe as getenv is. */
int tarn__env_flag(const char *name, int *out);

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC, which condition
 * variables waiting on deadlines from it must use too). Thread-safe. */
uint64_t tarn__clock_ns(void);

/* Monotonic time in nanoseconds from the kernel's tick (a few ms
 * resolution, a few ns to read): for sums over many short intervals, whose
 * rounding errors cancel out on average. Thread-safe. */
uint64_t tarn__clock_coarse_ns(void);

/* Ticks: a precise count of time, fast to read, for timing tasks. Where
 * the kernel keeps its own time by the processor's time-stamp counter
 * (x86-64 with the "tsc" clocksource, which the kernel uses only when the
 * counter runs at a constant rate and agrees across processors), a tick
 * is one count of it (about 7 ns to read here, against 16 for
 * CLOCK_MONOTONIC). Elsewhere a tick is a nanosecond of tarn__clock_ns.
 * tarn__ticks_init must have run before any other tarn__ticks function;
 * afterwards they are thread-safe. */

/* Chooses the counter and, for the time-stamp counter, measures its rate
 * against CLOCK_MONOTONIC over about 50 us (the first call only; later
 * calls return at once). Thread-safe. */
void tarn__ticks_init(void);

/* Whether ticks come from the time-stamp counter (set by tarn__ticks_init,
 * never changed afterwards). */
extern atomic_bool tarn__ticks_tsc;

#if defined(__x86_64__)
/* The time-stamp counter (rdtsc). Thread-safe. */
static inline uint64_t tarn__tsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t)hi << 32 | lo;
}

/* The counter's ticks per nanosecond over about 50 us of CLOCK_MONOTONIC
 * (within about 0.1 %): what tarn__ticks_init measures when the kernel
 * keeps time by the counter, callable wherever there is one (the tests
 * check it on machines whose kernel keeps time otherwise, as under a
 * hypervisor's clock). 0 when, three times, an end could not be read
 * within 2000 ticks (the thread lost its processor) or the rate is not
 * that of a processor (0.05 to 20 GHz). Thread-safe. */
double tarn__tsc_rate(void);
#endif

/* The tick count now. Thread-safe. */
static inline uint64_t tarn__ticks(void) {
#if defined(__x86_64__)
  if (atomic_load_explicit(&tarn__ticks_tsc, memory_order_relaxed))
    return tarn__tsc();
#endif
  return tarn__clock_ns();
}

/* A span of ticks in nanoseconds, and nanoseconds in ticks. */
uint64_t tarn__ticks_to_ns(uint64_t ticks);
uint64_t tarn__ns_to_ticks(uint64_t ns);

/* Asks for the cache line of `p` for writing, ahead of a load followed by
 * a compare-exchange on it: the load then does not fetch the line shared
 * only for the exchange to fetch it again exclusive (two transfers between
 * cores instead of one). A hint: no effect on what the program computes.
 * Thread-safe. */
static inline void tarn__prefetch_write(const void *p) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1);
#endif
}

/* The processors the calling thread may run on (its affinity mask, which
 * taskset, cpusets and containers narrow): how many there are (at least
 * 1), and the first `max` of their numbers in increasing order into cpus
 * (NULL when max is 0). When the mask cannot be read: the online
 * processors, numbered 0 to n - 1. Thread-safe. */
unsigned tarn__cpus_allowed(int *cpus, unsigned max);

/* The CPU time the control groups of the calling process allow it, in
 * whole processors rounded up (a quota of 1.5 processors gives 2), or 0
 * when none is set or it cannot be read: the least of cgroup v2's cpu.max
 * and v1's cpu.cfs_quota_us / cpu.cfs_period_us over the process's group
 * and every group above it (src/prim/cgroup.c). A container limited to 2
 * CPUs (docker --cpus=2, a Kubernetes CPU limit) usually still has every
 * processor of the host in its affinity mask. `root` is the directory
 * that stands for "/" in every path read (NULL: "/" itself; tests pass a
 * tree of their own). Reads the files afresh at every call. Thread-safe. */
unsigned tarn__cpu_quota(const char *root);

/* The memory the control groups of the calling process let it use, in
 * bytes, or 0 when none is set or it cannot be read: the least of cgroup
 * v2's memory.max and memory.high, or v1's memory.limit_in_bytes, over
 * the process's group and every group above it (src/prim/cgroup.c). A
 * container given 4 GiB is killed past it, however much the host has.
 * `root` as for tarn__cpu_quota. Reads the files afresh at every call.
 * Thread-safe. */
size_t tarn__memory_limit(const char *root);

/* The memory the process may use, in bytes: the machine's (its physical
 * pages), at most tarn__memory_limit(NULL); 0 when neither can be read.
 * Thread-safe. */
size_t tarn__memory_usable(void);

/* The processors the process may use: tarn__cpus_allowed's count, at most
 * tarn__cpu_quota(NULL) as read at the first call in the process (at
 * least 1). Thread-safe. */
unsigned tarn__cpu_count(void);

/* Whether the file system that holds `path` (or the open file `fd`,
 * with path NULL) keeps its files in memory (tmpfs, ramfs): 1, 0 when it
 * does not, -1 when that cannot be told. A file there takes memory as
 * the process's own pages do, so spilling to it frees none. Thread-safe. */
int tarn__fs_in_memory(const char *path, int fd);

/* Whether files may be made in directory `path` by this process (it may
 * be written and searched, on a file system not mounted read-only).
 * Thread-safe. */
bool tarn__dir_writable(const char *path);

/* ---- files the user names (src/prim/file.c) ---------------------------- */

/* The tarn status for the errno of a failed file call: TARN_ENOENT (no
 * such file or directory, a name too long), TARN_EACCES (permission,
 * a read-only file system), TARN_ENOSPC (the disk or quota full, a file
 * past RLIMIT_FSIZE), TARN_ENOMEM, TARN_EBUSY (too many open files),
 * TARN_EINVAL (a directory where a file was meant), else TARN_EIO. */
int tarn__status_of_errno(int err);

/* Opens the regular file `path` for reading: returns 0, *fd and its *size
 * in bytes; a status of tarn__status_of_errno, or TARN_EINVAL when it is
 * not a regular file (a directory, a pipe). Thread-safe. */
int tarn__file_open_read(const char *path, int *fd, uint64_t *size);

/* What tells that a file's contents changed: its size and its
 * modification time (ns since the epoch), as fstat reports them. */
typedef struct tarn__file_stamp {
  uint64_t size;
  uint64_t mtime_ns;
} tarn__file_stamp;

/* The stamp of the open file `fd`. Returns 0 or a status. Thread-safe. */
int tarn__file_stamp_get(int fd, tarn__file_stamp *stamp);

/* Closes fd (a negative fd is a no-op). */
void tarn__file_close(int fd);

/* Reads `len` bytes at `offset` of fd into buf, again after a signal or a
 * short read, until done or the end of the file: returns 0 and the bytes
 * read in *got (fewer than len only at the end of the file), or a status.
 * Thread-safe: calls on one fd may run at once. */
int tarn__file_read_at(int fd, void *buf, size_t len, uint64_t offset,
                       size_t *got);

/* Writes all `len` bytes of buf at `offset` of fd: returns 0 or a status
 * (TARN_ENOSPC when the disk is full). Thread-safe as tarn__file_read_at. */
int tarn__file_write_at(int fd, const void *buf, size_t len, uint64_t offset);

/* As tarn__file_read_at and tarn__file_write_at, for the bytes of `count`
 * buffers that follow each other in the file from `offset` (preadv,
 * pwritev: one call for many buffers, any count). iov[] is used up: its
 * entries are changed as the bytes move. */
int tarn__file_readv_at(int fd, struct iovec *iov, size_t count,
                        uint64_t offset, size_t *got);
int tarn__file_writev_at(int fd, struct iovec *iov, size_t count,
                         uint64_t offset);

/* Asks the kernel to start writing the dirty pages of `len` bytes of fd
 * from `offset` to the disk, without waiting for them (Linux's
 * sync_file_range; elsewhere nothing): a hint that overlaps the disk's
 * work with the caller's, so that the flush at the end (fdatasync) finds
 * less to do. Promises nothing about durability; errors are ignored (the
 * flush reports them). May wait while the device's queue is full.
 * Thread-safe. */
void tarn__file_start_writeback(int fd, uint64_t offset, uint64_t len);

/* `path` made absolute against the working directory now (as it is when
 * it begins with '/'), in *out (malloc'ed, the caller's): for a name used
 * later, after the program may have changed directory. Kept as given
 * where the working directory cannot be named or the absolute name would
 * not fit PATH_MAX with a temporary's suffix. Returns 0 or TARN_ENOMEM. */
int tarn__path_absolute(const char *path, char **out);

/* A file being written to replace `path` whole: the bytes go to a new
 * file beside it (`path` + ".tarn-" + 16 random hexadecimal digits, made
 * with O_EXCL, mode 0666 less the umask) that becomes `path` only once
 * complete and on the disk. */
typedef struct tarn__file_replace {
  int fd;           /* the new file, open for reading and writing */
  const char *path; /* the caller's, kept until commit or abort */
  char temp[4096];  /* the new file's name until then ("" once renamed) */
} tarn__file_replace;

/* Makes the new file. Returns 0, or a status (TARN_EINVAL when `path`
 * names a directory: it is one, or ends in '/', "." or "..";
 * TARN_ENOENT when the directory does not exist, TARN_EACCES when it may
 * not be written); nothing is left behind then. */
int tarn__file_replace_begin(const char *path, tarn__file_replace *r);

/* Claims `bytes` of disk for fd (fallocate; on a file system without it,
 * the size only): returns 0, or TARN_ENOSPC when they do not fit. */
int tarn__file_reserve(int fd, uint64_t bytes);

/* Flushes the new file to the disk (fdatasync), renames it over `path` and
 * flushes the directory. Returns 0: `path` is the new file. On a failure
 * before the rename, the new file is removed and `path` is as it was; a
 * failure to flush the directory after it (its open included) is
 * TARN_EIO, with the new file in place; no other status comes after the
 * rename. Either way the replace is over. */
int tarn__file_replace_commit(tarn__file_replace *r);

/* As tarn__file_replace_commit, but the new file stays open (r->fd) and
 * nothing is removed on a failure: before the rename (r->temp still
 * names the new file) `path` is as it was and the new file is whole,
 * short of what the failed flush lost; a failure to flush the directory
 * after it is TARN_EIO with r->temp "" and the new file in place. For a
 * file whose contents live on in the caller. */
int tarn__file_replace_publish(tarn__file_replace *r);

/* Removes the new file (unless it was renamed into place) and keeps it
 * open: reads and writes of r->fd still work, on a file no name reaches.
 * `path` is as it was. */
void tarn__file_replace_unlink(tarn__file_replace *r);

/* Closes and removes the new file (unless it was renamed into place or
 * removed); `path` is as it was. */
void tarn__file_replace_abort(tarn__file_replace *r);

#endif
