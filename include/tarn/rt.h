/* tarn/rt.h: the task runtime. A program submits tasks, each a function
 * with the refs it reads and writes; the runtime infers the dependencies
 * from submission order (as if the tasks ran one after another), runs
 * independent tasks in parallel on one worker per core, pins each task's
 * refs while it runs, and frees a temporary the moment its last task ends.
 *
 * Lifecycle rules:
 * 1. A read waits for the last write of that ref submitted before it; a
 *    write waits for the last write and for every read submitted since.
 *    Reads of one ref run in parallel. The same ref twice in one task is one
 *    access with both modes.
 * 2. A task holds a reference to each of its refs from submission until it
 *    ends, so the program may release a ref right after submitting the last
 *    task that uses it: the ref is freed when that task ends.
 * 3. Before a task runs its refs are pinned (spilled ones read back; reading
 *    starts as soon as the task is ready); after it returns they are
 *    unpinned. Under a memory limit, a task whose data does not fit waits
 *    until running tasks free memory, in line with the others that wait
 *    (first come, first tried); it fails with TARN_ENOMEM only when
 *    nothing else runs and it still does not fit. Pins the program holds
 *    itself (tarn_ref_pin, tarn_ref_escape outside tasks) take room as
 *    tasks' do, but tasks do not wait for them: a program that pins
 *    while tasks run under a tight limit may make a task fail.
 * 4. A task that returns a nonzero status fails; every task that reads a
 *    ref it was to write, directly or through other such tasks, is
 *    cancelled (reports TARN_ECANCELED, never runs), and so is every task
 *    that reads a ref a cancelled task was to write. A ref stays so until a
 *    task writes it without reading it (TARN_WRITE). The mark is the
 *    runtime's, for tasks: the program's own tarn_ref_pin of such a ref
 *    succeeds and shows what the failed task left (tarn/pool.h,
 *    tarn_ref_pin; the region's wait, or a matrix call's TARN_ECANCELED,
 *    is what says they are not the result). A task that only
 *    waits for a failed one (a write after its read, a write-only access
 *    after its write) still runs, as do independent tasks.
 * 5. tarn_region_wait blocks until every task submitted in the region (and
 *    every task those tasks submitted) is done, and returns the status of
 *    the first task that failed (TARN_ECANCELED when its only errors are
 *    cancellations).
 *    Meanwhile the waiting thread may run tasks queued on idle workers (of
 *    any region), so task functions run on it too.
 * 6. tarn_region_cancel cancels a region's tasks that have not started, as
 *    rule 4 cancels a failed task's readers; tarn_region_wait_timed waits
 *    with a limit.
 *
 * Every function is thread-safe unless it says otherwise.
 *
 * A runtime already destroyed is refused by every call that takes one
 * (TARN_EINVAL, or NULL or 0, and a line on stderr) so long as its memory
 * is not reused: a safety net, not a contract; using a freed runtime is
 * still undefined. */
#ifndef TARN_RT_H
#define TARN_RT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/alloc.h"
#include "tarn/export.h"
#include "tarn/pool.h"
#include "tarn/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_rt tarn_rt;
typedef struct tarn_task tarn_task;
typedef struct tarn_region tarn_region;

/* A task's function. `task` gives its data (tarn_task_data) and scratch
 * memory; returns 0, or a status that fails the task. */
typedef int (*tarn_task_fn)(tarn_task *task, void *arg);

typedef struct tarn_rt_options {
  /* Worker threads. Default: TARN_WORKERS from the environment, else the
   * number of processors the creating thread may run on (its affinity
   * mask: taskset and cpusets narrow it), at most the CPU quota of the
   * process's control groups rounded up (cgroup v2 cpu.max, v1
   * cpu.cfs_quota_us: a container given 2 CPUs by docker --cpus=2 or a
   * Kubernetes limit may still run on every processor of its host, and
   * one spinning worker per processor would spend the quota waiting).
   * At most 1024. */
  unsigned workers;
  /* The runtime's pool (memory limit, spill directory, ...). */
  tarn_pool_options pool;
  /* Bytes of scratch each worker's slab offers a task: one block of this
   * size aligned to at most 16 bytes, or blocks that add up to it less
   * what their alignment skips. Default 64 MiB. */
  size_t scratch_bytes;
  /* Free a ref when its last task ends (1, the default), or keep the
   * runtime's references until the end of the region (0: for measuring
   * what eager freeing saves). */
  int eager_free;
  /* Pin worker i to the i-th processor the creating thread may run on
   * (modulo their number), so that the kernel never puts two workers on
   * one core while another core is left to a thread that only waits (1,
   * or TARN_PIN_WORKERS=1), or let the kernel place them (0, or
   * TARN_PIN_WORKERS=0: for a machine shared with other busy programs).
   * Default 1, except when a CPU quota makes the default workers fewer
   * than those processors: then 0, since the quota's time may come from
   * any processor, and the runtimes of several such processes on one host
   * would all pin to the same first ones. The program's own threads are
   * never pinned. Pinned to two processors, workers 0 and 1 also time a
   * cache line's round trip between them while both are idle (64 trips,
   * every 100 ms at most, every 1 ms until the first figure): while it
   * reads 200 ns or more (a virtual machine's host may move its
   * processors apart), tarn/linalg.h's kernels split less of a small
   * tile's work (docs/rt.md, "Cores far apart"). */
  int pin_workers;
  /* Milliseconds the workers rest (asleep, without work) before they give
   * back what the work left: scratch pages (each worker keeps its first
   * 2 MiB, what one task of tarn's own kernels takes), spare task structs, the
   * pool's cache of freed buffers, the spill file's free space and the
   * heap's free pages (when tarn freed 1 MiB or more to the heap since the
   * last trim); and again after twice the wait each time, six more times,
   * for what the program frees meanwhile. The wait adapts to a program
   * that works in bursts: each time its next work comes within four times
   * the wait after a rest gave back, the next rests wait twice as long (at
   * most a second, or this value when longer), and each time it comes
   * later, half as long (at least this value). So bursts up to about five
   * times this value apart soon stop faulting back in what a rest gave
   * back. Default 20, or TARN_IDLE_TRIM_MS from the environment (at most
   * 86400000, a day); 0: never, for a program that works in bursts
   * further apart and would rather keep those pages than fault them in
   * again at each burst. */
  unsigned idle_trim_ms;
  /* Backpressure: the most tasks a region may hold unfinished before a
   * program thread that submits to it runs tasks, or waits, until an
   * eighth of them have finished (checked by the program thread that
   * makes a region's 64th, 128th, ... submission, so the bound may be
   * passed by 63 for each thread that submits into the region at once).
   * A loop that submits faster than its tasks run then
   * keeps about this many tasks in memory (some 450 bytes each, plus their
   * edges) instead of all of them. Tasks that tasks submit are never held
   * back. Default 0, no bound, or TARN_MAX_UNFINISHED from the
   * environment: a bound also hides the program's later submissions from
   * the runtime, which then cannot run a tile's whole chain of operations
   * at once and must spill more under a memory limit (docs/rt.md,
   * "Backpressure"). A program whose tasks wait for something its thread
   * does after submitting them must not set one: a held-back thread would
   * wait for them forever. */
  unsigned max_unfinished;
  /* Linear algebra on small tiles (tarn/linalg.h, "Small tiles"): where a
   * task of tarn_matrix_gemm, tarn_matrix_syrk_ata, tarn_matrix_cholesky,
   * tarn_matrix_lu or tarn_matrix_solve (or, for 64 right-hand sides or
   * more and tiles under 64 x 64, of a solve with factors made before)
   * would multiply at most 64^3
   * multiply-adds (tiles of 64 x 64 or less: a kernel too small for
   * BLAS's rate, and a task a microsecond or two of its own), the call works on
   * a copy of its operands in tiles of work_tile x work_tile (clamped to the
   * matrix) and copies the result back into the caller's tiles; only where
   * the copies take at most an eighth of the pool's memory limit (without
   * one, of the memory the process may use: the machine's, or its control
   * groups'). Default 256, or TARN_WORK_TILE from the environment; at most
   * 4096; 0: never, every operation runs on the caller's tiles. */
  unsigned work_tile;
} tarn_rt_options;

/* Fills `options` with the defaults (and the pool's, from the
 * environment; a variable set to the empty string counts as unset).
 * Returns 0, or TARN_EINVAL when TARN_WORKERS, TARN_IDLE_TRIM_MS,
 * TARN_MAX_UNFINISHED, TARN_WORK_TILE (all digits, no sign or space),
 * TARN_PIN_WORKERS or
 * a pool variable cannot be parsed. */
TARN_API int tarn_rt_options_init(tarn_rt_options *options);

/* Checks the environment variables tarn reads: TARN_MEM_LIMIT,
 * TARN_HUGE_PAGES, TARN_WORKERS, TARN_PIN_WORKERS, TARN_IDLE_TRIM_MS,
 * TARN_MAX_UNFINISHED and TARN_WORK_TILE (TARN_SPILL_DIR takes any path).
 * Returns 0 when each is unset, empty or valid; else TARN_EINVAL, the status
 * with which tarn_rt_options_init, tarn_pool_options_init and the create
 * functions given NULL options fail, and *name (when `name` is not NULL) is the
 * first variable in that order that is not valid, a static string, so a
 * program can say which (*name is NULL on 0). Reads the environment only;
 * thread-safe as getenv is. */
TARN_API int tarn_env_check(const char **name);

/* Starts a runtime: its pool, its scratch slabs and its workers. `options`
 * may be NULL. Returns 0, TARN_EINVAL, TARN_ENOMEM, or a status of
 * tarn_pool_create's for the spill file (TARN_ENOENT when its directory
 * does not exist, TARN_EACCES, TARN_ENOSPC, TARN_EBUSY, TARN_EIO). A
 * child of fork may create runtimes of its own; its calls on one made
 * before the fork are refused as on a destroyed one (docs/rt.md,
 * "Processes that fork"). */
TARN_API int tarn_rt_create(const tarn_rt_options *options, tarn_rt **rt);

/* Waits for every submitted task, stops the workers and destroys the pool
 * (refs the program still holds are freed then). Regions not waited for
 * are drained and freed: their handles are invalid afterwards, and the
 * calling thread's regions of other runtimes enclose its tasks again (an
 * error path may destroy a runtime without waiting). Their errors are not
 * reported. Returns the first error of a task outside any region, or 0;
 * TARN_EDEADLK, changing nothing, from a task (a task of the runtime
 * would wait for itself) or an arg_free the runtime runs, and TARN_EINVAL for a
 * runtime already destroyed. NULL is a no-op. Must not be called while another
 * thread uses the runtime: a region another thread began must be waited for, or
 * that thread ended, first. A program destroys its runtimes before it
 * returns from main or calls exit(), also on its error paths: exit() runs
 * the libraries' destructors (OpenBLAS's among them) while tasks
 * submitted before may still run on the workers. */
TARN_API int tarn_rt_destroy(tarn_rt *rt);

/* The runtime's pool: make refs here. Owned by the runtime, which destroys
 * it (tarn_pool_destroy refuses it with TARN_EMISUSE). NULL for a NULL or
 * destroyed runtime. */
TARN_API tarn_pool *tarn_rt_pool(tarn_rt *rt);

/* Number of workers; 0 for a NULL or destroyed runtime. */
TARN_API unsigned tarn_rt_workers(const tarn_rt *rt);

/* ---- submitting --------------------------------------------------------- */

/* One access of a task: a ref and how the task uses it. */
typedef struct tarn_dep {
  tarn_ref *ref;
  tarn_access mode; /* TARN_READ, TARN_WRITE, TARN_READ_WRITE, TARN_AFTER */
} tarn_dep;

/* An access mode for tarn_dep beside tarn_access's three: the task is
 * ordered as a reader of the ref would be (after the writers submitted
 * before it, before those submitted after; a failed writer cancels it),
 * but the ref is not pinned for it (tarn_task_data gives NULL; a spilled
 * ref is not read back) nor counted as in use. For a task that needs only
 * the order: storing the ref with tarn_ref_flush (tarn/pool.h), telling
 * someone it is ready. With another access to the same ref in the task,
 * that one decides. */
#define TARN_AFTER ((tarn_access)4)

typedef struct tarn_task_desc {
  tarn_task_fn fn;
  void *arg;
  const tarn_dep *deps;
  size_t ndeps;
  /* Higher runs first among the ready tasks of a worker's queue (each
   * worker has its own; a worker whose queue is empty steals from the
   * others, so across workers the order is best effort). Default 0. */
  int priority;
  /* A label kept in the task for debuggers (gdb prints it with the task);
   * tarn itself does not read it. The string must outlive the task. */
  const char *name;
  /* Called with `arg` once the task is done, whether it ran, failed or was
   * cancelled (and when submission fails), so a task can own its
   * argument. Optional. When the task ends it runs on the thread that
   * ends it (a worker, or a waiting program thread): a task it submits
   * then goes to a region it began itself, else to the runtime's root
   * region, and is never held back (max_unfinished); it may wait for
   * such a region (a worker then runs tasks meanwhile), not destroy the
   * runtime (TARN_EDEADLK). When submission fails it runs at once on the
   * submitting thread. */
  void (*arg_free)(void *arg);
} tarn_task_desc;

/* Submits a task. The runtime retains each ref until the task ends (the
 * caller keeps its own references). Returns 0; TARN_EINVAL for a NULL or
 * destroyed runtime, a NULL fn, a NULL ref, a bad mode, or a ref of
 * another pool; TARN_ENOMEM. A task submitted from a task (or from a
 * range of its tarn_task_parallel_for, whichever thread runs it) belongs
 * to that task's region; submitted from a task to another runtime, to
 * that runtime's root (whose tasks tarn_rt_destroy waits for), never to
 * a region the thread running the task has open. Thread-safe. With
 * tarn_rt_options.max_unfinished set, a program thread (not a task) may run
 * queued tasks or wait here first, until its region holds fewer unfinished
 * tasks. A submission takes time O(n log n) in the task's n accesses (a
 * task of thousands of accesses is fine: docs/rt.md, "Dependencies"). */
TARN_API int tarn_task_submit(tarn_rt *rt, const tarn_task_desc *desc);

/* Items of tarn_submit, a compact form of tarn_task_submit:
 *   tarn_submit(rt, axpy, TARN_ARG(&alpha), TARN_R(x), TARN_RW(y),
 *               TARN_PRIORITY(1), TARN_NAME("axpy"));  */
typedef struct tarn_item {
  int tag;
  tarn_ref *ref;
  void *ptr;
  int value;
} tarn_item;

enum {
  TARN__ITEM_END = 0,
  TARN__ITEM_DEP = 1,
  TARN__ITEM_ARG = 2,
  TARN__ITEM_PRIORITY = 3,
  TARN__ITEM_NAME = 4
};

/* An item: a compound literal in C; in C++ (which has none) a braced
 * temporary, and tarn_submit's array a lambda's local. TARN_ARG and
 * TARN_NAME take pointers to const too, without a cast-qual warning in
 * the caller's code (through uintptr_t in C; in C++ through const void *,
 * so nullptr works). */
#ifdef __cplusplus
#define TARN__ITEM(tag, ref, ptr, value) \
  (tarn_item{(tag), (ref), (ptr), (value)})
#define TARN__PTR(p) const_cast<void *>(static_cast<const void *>(p))
#else
#define TARN__ITEM(tag, ref, ptr, value) \
  ((tarn_item){(tag), (ref), (ptr), (value)})
#define TARN__PTR(p) ((void *)(uintptr_t)(const void *)(p))
#endif
#define TARN_R(r) TARN__ITEM(TARN__ITEM_DEP, (r), TARN__NULL, TARN_READ)
#define TARN_W(r) TARN__ITEM(TARN__ITEM_DEP, (r), TARN__NULL, TARN_WRITE)
#define TARN_RW(r) TARN__ITEM(TARN__ITEM_DEP, (r), TARN__NULL, TARN_READ_WRITE)
#define TARN_ARG(p) TARN__ITEM(TARN__ITEM_ARG, TARN__NULL, TARN__PTR(p), 0)
#define TARN_PRIORITY(n)                                  \
  TARN__ITEM(TARN__ITEM_PRIORITY, TARN__NULL, TARN__NULL, \
             TARN__CONVERT(int, (n)))
#define TARN_NAME(s) TARN__ITEM(TARN__ITEM_NAME, TARN__NULL, TARN__PTR(s), 0)
#define TARN_END TARN__ITEM(TARN__ITEM_END, TARN__NULL, TARN__NULL, 0)

/* Submits `fn` with the items that follow (at least one). Returns as
 * tarn_task_submit. From C and from C++ (11 or later). */
#ifdef __cplusplus
#define tarn_submit(rt, fn, ...)                             \
  ([&]() -> int {                                            \
    const tarn_item tarn__items[] = {__VA_ARGS__, TARN_END}; \
    return tarn_task_submit_items((rt), (fn), tarn__items);  \
  }())
#else
#define tarn_submit(rt, fn, ...) \
  tarn_task_submit_items((rt), (fn), (const tarn_item[]){__VA_ARGS__, TARN_END})
#endif

/* The function behind tarn_submit: `items` ends with TARN_END. */
TARN_API int tarn_task_submit_items(tarn_rt *rt, tarn_task_fn fn,
                                    const tarn_item *items);

/* ---- inside a task ------------------------------------------------------ */

/* The pinned address of the task's i-th access (in submission order, after
 * merging repeated refs), valid while the task runs; NULL when i is out of
 * range. */
TARN_API void *tarn_task_data(tarn_task *task, size_t i);

/* The size of the task's i-th ref, 0 when out of range. */
TARN_API size_t tarn_task_size(tarn_task *task, size_t i);

/* Scratch memory from the worker's slab, freed when the task ends. Call it
 * from the task's own thread (not from a tarn_task_parallel_for body).
 * Returns 0, TARN_EINVAL (also when `task` is not running on this thread)
 * or TARN_ENOSPC (see tarn_slab_alloc). */
TARN_API int tarn_task_scratch(tarn_task *task, size_t size, size_t align,
                               void **out);

/* The runtime running the task (to submit further tasks). */
TARN_API tarn_rt *tarn_task_rt(tarn_task *task);

/* A piece of a task's own work over the index range [begin, end). Returns
 * 0 or a status that fails the task. */
typedef int (*tarn_range_fn)(void *arg, size_t begin, size_t end);

/* Splits the running task's own work over the workers that are idle: runs
 * body(arg, begin, end) over disjoint ranges that cover [0, count), each
 * at least `grain` long (the last may be shorter), on the calling worker
 * and, at the same time, on any worker that has nothing else to do, and
 * returns when every range is done. With no idle worker, or when count is
 * below 2 * grain, it is a single call body(arg, 0, count) on this thread
 * (none when count is 0).
 * For a task whose data is one large tile (a gemm, an elementwise
 * operation, a stencil on a single tile) when there are fewer ready tasks
 * than workers. The bodies may read the task's data (tarn_task_data,
 * tarn_task_size) but must not submit tasks, wait or take scratch (take it
 * before, in the task); they run concurrently with each other, so they
 * must write disjoint memory. A body may call tarn_task_parallel_for
 * again with the same task, on whichever thread runs it; while the outer
 * ranges are shared, that call is the single call body(arg, 0, count) on
 * its thread. Returns 0, the first non-zero status of a body (the other
 * ranges still run), TARN_EINVAL for a NULL body or grain 0, or
 * TARN_EMISUSE when `task` is neither running on this thread nor the
 * task whose range this thread runs. */
TARN_API int tarn_task_parallel_for(tarn_task *task, size_t count, size_t grain,
                                    tarn_range_fn body, void *arg);

/* ---- regions ------------------------------------------------------------ */

/* Starts a region on the calling thread: tasks it submits until
 * tarn_region_wait belong to it. Regions nest per thread. Returns 0,
 * TARN_EINVAL, TARN_ENOMEM, or TARN_EDEADLK from inside a task (a range
 * of one's tarn_task_parallel_for included). */
TARN_API int tarn_region_begin(tarn_rt *rt, tarn_region **region);

/* Task counts: `run` tasks whose function was called, whatever it
 * returned; `failed` tasks that returned nonzero but TARN_ECANCELED
 * (counted in `run` too) or whose data could not be pinned (not run);
 * `cancelled` tasks not run because data they read came from a failed or
 * cancelled task or their region was cancelled, and tasks that ran and
 * returned TARN_ECANCELED (a long task stopping at a cancel: counted in
 * `run` too, so run + cancelled + the failed not run may exceed
 * submitted). */
typedef struct tarn_region_stats {
  uint64_t submitted, run, cancelled, failed;
  size_t peak_bytes; /* the pool's peak resident bytes during the region
                        (live objects and the recycling cache) */
  /* The pool's peak of live bytes during the region: objects only, not the
   * recycling cache (tarn_pool_stats.live_peak). What the region's data
   * needed at most. */
  size_t live_peak_bytes;
} tarn_region_stats;

/* Blocks until every task of the region is done, fills *stats when not
 * NULL, ends the region and frees it. While it waits, the calling thread
 * runs tasks queued on idle workers (one waiting thread at a time; see
 * docs/rt.md, "The waiting thread"); a task it takes runs to its end. Returns
 * the first error of its tasks (a task's own status, TARN_ENOMEM or TARN_EIO
 * from its data, or the status of a failed source of it: tarn/pool.h,
 * tarn_ref_create_from; TARN_ECANCELED only when no task failed but some were
 * cancelled), or 0. Returns TARN_EDEADLK, changing nothing, when called
 * from a task (or a range of one); TARN_EMISUSE when `region` is not the
 * calling thread's innermost. */
TARN_API int tarn_region_wait(tarn_region *region, tarn_region_stats *stats);

/* tarn_region_wait for at most `timeout_ns` nanoseconds (0: only looks):
 * returns TARN_ETIMEDOUT, changing nothing, when tasks of the region are
 * still unfinished then (a task the waiting thread took runs to its end
 * first, so it may return later than that); the region stays the
 * thread's innermost, its tasks go on, and a later wait (or
 * tarn_region_cancel, then a wait) ends it. Otherwise as
 * tarn_region_wait. */
TARN_API int tarn_region_wait_timed(tarn_region *region, uint64_t timeout_ns,
                                    tarn_region_stats *stats);

/* Cancels the region: each of its tasks that has not started is
 * cancelled when its turn comes instead of run (reports TARN_ECANCELED,
 * as under rule 4), and so are the tasks submitted to it afterwards and
 * those of the regions of its runtime begun inside it (tarn_matrix_sum's
 * own, say). A running task runs to its end; a long one may check
 * tarn_task_cancelled and return early. Rule 4 holds for what the
 * cancelled tasks were to write: a task that reads such a ref, in any
 * region, is cancelled too, until a task writes it anew. tarn_region_wait still
 * waits for the running tasks and returns TARN_ECANCELED when some task was
 * cancelled or returned it (or the status of a task that failed first); 0
 * when none was: every task had started before the cancel, and each ran to
 * its end with 0. Call it between
 * tarn_region_begin and the return of tarn_region_wait, from any thread, a
 * task, or a signal handler: it is one lock-free compare-exchange. After
 * the wait the handle is refused: TARN_EMISUSE, nothing changed, until the
 * runtime reuses its memory, which it does only once 16 more of its
 * regions were waited for (it keeps the last 16 waited regions aside and
 * reuses the oldest beyond them); a cancel later than that may reach a
 * region begun since, as with any freed handle.
 * Returns 0 (also for a region cancelled already), TARN_EINVAL for NULL,
 * TARN_EMISUSE for a region already waited for. */
TARN_API int tarn_region_cancel(tarn_region *region);

/* 1 when the running task's region, or a region of its runtime it was
 * begun in, was cancelled (tarn_region_cancel), else 0 (also for NULL):
 * a long task may check it now and then and return TARN_ECANCELED
 * early. */
TARN_API int tarn_task_cancelled(const tarn_task *task);

/* ---- statistics --------------------------------------------------------- */

/* Counts since the runtime began; submitted, run, cancelled and failed
 * as in tarn_region_stats. */
typedef struct tarn_rt_stats {
  uint64_t submitted, run, cancelled, failed, stolen;
  uint64_t held_back;    /* times a task waited for memory to run */
  uint64_t prefetches;   /* read-backs started when a task became ready */
  uint64_t run_ns;       /* time in task functions, summed over workers */
  uint64_t data_wait_ns; /* time pinning data, summed over workers */
  /* Under a memory limit, the most one task pinned at once: the bytes
   * its refs count against the limit (each ref once: the pool's buffers
   * in whole pages, an adopted object at its size).
   * No limit below it could have run that task. 0 without a limit. */
  uint64_t task_pinned_peak;
} tarn_rt_stats;

/* A snapshot of the counters, read one by one while tasks may run but
 * never showing a task ended before it was submitted: run, cancelled and
 * failed are each at most submitted. They count as tarn_region_stats
 * does (a task that ran and returned TARN_ECANCELED is in run and in
 * cancelled; one whose data could not be pinned in failed alone), so
 * submitted - run - cancelled is not the tasks left to end: wait on a
 * region (tarn_region_wait_timed) to know that. Thread-safe. Returns 0 or
 * TARN_EINVAL. */
TARN_API int tarn_rt_stats_get(tarn_rt *rt, tarn_rt_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
