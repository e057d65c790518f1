/* rt.c: the task runtime. Submission infers dependencies from each ref's
 * state (its last writer and the readers since), kept in the ref's owner
 * slot behind a small lock of its own; a task's refs are locked together,
 * in address order. A task waits on a count of unfinished predecessors
 * (plus one while it is being submitted); a finished task closes its
 * successor list with an atomic exchange and readies every successor whose
 * count reaches zero. Ready tasks are pushed to a worker's lock-free inbox;
 * a worker moves its inbox into its queue (a skew heap by priority, then
 * submission order, beside a list of the tasks that came in that order,
 * behind a spin lock) and pops; idle workers steal, spin
 * a little, then sleep. No lock is shared by every task.
 *
 * Invariants:
 * - A task is freed when it has finished and no ref state names it:
 *   `refcount` counts one for its run plus one per ref-state slot.
 * - A successor edge is added only while the predecessor's list is open; an
 *   edge to a finished predecessor is not added (and carries its failure).
 * - Every task submitted to a region is counted in the region until it
 *   finishes, run, failed or cancelled; tasks submitted by a task join its
 *   region. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool/pool_internal.h"
#include "prim/prim.h"
#include "rt/rt_internal.h"
#include "tarn/rt.h"

#define CLOSED ((struct edge *)(uintptr_t)1)
/* How long an idle worker looks for work before sleeping, in ns. */
#define IDLE_SPIN_NS 1000000
/* Looks a region's waiter takes (yielding between them) before sleeping. */
#define DRAIN_SPINS 200
/* How long a worker sleeps before it gives its scratch pages back by
 * default, in ms (tarn_rt_options.idle_trim_ms; see give_back_at_rest). */
#define IDLE_TRIM_MS_DEFAULT 20
/* The scratch a worker keeps resident through its rests (the slabs'
 * retain_bytes; the rest goes back): what one task of tarn's own kernels
 * takes by design (a gathered LU panel of up to 1 MiB and its pivots, a
 * column of B up to 1 MiB copied by a solve), so that a program calling
 * them in bursts more than idle_trim_ms apart does not fault those pages
 * in again at every burst. */
#define SCRATCH_RETAIN_BYTES ((size_t)2 << 20)

/* tarn_rt_options.work_tile: the default and the largest accepted. */
#define WORK_TILE_DEFAULT 256
#define WORK_TILE_MAX 4096
/* Spare task structs kept through a rest (see spare_trim). */
#define SPARE_KEEP 4096
/* A program thread checks its region against max_unfinished once every
 * this many submissions to it (see throttle). */
#define THROTTLE_EVERY 64
/* region_wait_for's target for a region's every task. */
#define ALL_FINISHED UINT64_MAX
/* When the workers fill the cores, the guest helps with a region of
 * several tasks only while the workers' recent tasks took less than this
 * on average, in ns, and takes a region's only task only while they took
 * less than WORKERS_BUSY_MAX_NS (see guest_worthwhile). */
#define GUEST_TASK_MAX_NS 50000
#define WORKERS_BUSY_MAX_NS 500000

/* A resting worker gives back what the work left again this many times,
 * each after twice the wait before (see worker_main). */
#define REST_REPEATS 6

/* The wait before a rest's first give-back adapts to a program that works
 * in bursts (rest_adapt): it doubles, up to REST_WAIT_MAX_NS (or
 * idle_trim_ns when that is longer), each time the program's next work
 * comes within REST_SOON times the wait after a rest gave back, and halves
 * back towards idle_trim_ns each time it comes later. */
#define REST_SOON 4
#define REST_WAIT_MAX_NS UINT64_C(1000000000)

/* A worker that shared its task's work waits for the helpers still in a
 * range by spinning on its processor for at most this long (see
 * tarn_task_parallel_for), then yields it. */
#define HELP_SPIN_MAX_NS 50000

/* With pinned workers, worker 0 times the round trip of one cache line to
 * worker 1 (time_round_trip) at most once every ROUND_TRIP_EVERY_NS
 * (ROUND_TRIP_FIRST_EVERY_NS until the first figure, for the first
 * ROUND_TRIP_FIRST_ASKS asks at most), while both look for work:
 * ROUND_TRIP_ROUNDS trips, each answer of worker 1 awaited at most
 * ROUND_TRIP_WAIT_NS. From CORES_FAR_NS on (the median of the last
 * ROUND_TRIP_KEPT) the two share no cache (tarn__task_far). */
#define ROUND_TRIP_EVERY_NS 100000000
#define ROUND_TRIP_FIRST_EVERY_NS 1000000
#define ROUND_TRIP_FIRST_ASKS 1000
#define ROUND_TRIP_ROUNDS 64
#define ROUND_TRIP_WAIT_NS 20000
#define ROUND_TRIP_KEPT 3 /* median_of_three */
#define CORES_FAR_NS 200

/* A worker times one task in this many for its recent mean (see run). */
#define RECENT_SAMPLE_EVERY 8
/* The guest takes a region's only task while such regions recently took
 * less than this on average, in ns (see guest_worthwhile); or less than
 * LONE_SERIAL_MAX_NS when the last such task shared no work
 * (lone_worthwhile). */
#define LONE_TASK_MAX_NS 50000
#define LONE_SERIAL_MAX_NS 500000
/* How long a region's only task waits for its waiter in rt->lone before
 * the workers take it, in ns (see hold_for_waiter). */
#define LONE_HOLD_NS 20000
/* The scale of rt->lone_share: 1 when every recent region had one task. */
#define LONE_SHARE_ONE 1024
/* Processors 0 .. CPU_TABLE - 1 are the ones workers are pinned to (the
 * first CPU_TABLE of the affinity mask). */
enum { CPU_TABLE = 1024 };

/* A successor edge: one of the successor's in_edges, or malloc'ed when it
 * has more predecessors than those (edge_on_heap tells which). `to` is the
 * successor's address (64-byte aligned) plus, in its low bits, 1 + the
 * index of the predecessor's slot whose reference the successor takes
 * over when the predecessor ends (0: none; see track). `next` is the next
 * edge of the predecessor's list plus, in its low bit, EDGE_DATA when the
 * successor reads what the predecessor writes: only such an edge carries
 * the predecessor's failure (see edge_next, edge_data). */
struct edge {
  uintptr_t to;
  struct edge *next;
};

enum { EDGE_DATA = 1 };

enum { lend_bits = 63 }; /* slots 0..61 can lend */

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* A lock for a few instructions' worth of work (a queue push or pop):
 * spins, then yields, never sleeps in the kernel. */
static void spin_lock(atomic_bool *l) {
  for (unsigned n = 0;; n++) {
    if (!atomic_load_explicit(l, memory_order_relaxed) &&
        !atomic_exchange_explicit(l, true, memory_order_acquire))
      return;
    if (n >= 64)
      sched_yield();
    else
      cpu_relax();
  }
}

static void spin_unlock(atomic_bool *l) {
  atomic_store_explicit(l, false, memory_order_release);
}

struct slot {
  tarn_ref *ref;
  void *data;
  tarn_access mode;
  bool pinned;
  bool unpinned; /* every access to it was TARN_AFTER: ordered, never pinned */
  bool held;     /* the task holds a reference to `ref` (released at its end) */
  /* In the ref's demand (tarn__ref_demand) and its state's uses
   * (count_use) until the end. */
  bool counted;
  uint64_t use_seq;                 /* the task's seq, while counted */
  struct slot *use_prev, *use_next; /* in ref_state.uses */
};

enum { inline_slots = 4 };

/* A task's fields in the order the two sides touch them. The submitting
 * thread writes a task and a worker then reads and writes it, so every
 * cache line of it that both touch crosses between cores once per task
 * (and back when the memory is reused): the first line holds what
 * submitting, readying, running and finishing all use, the second the
 * rest of that and the first predecessor edge, the third the first slot,
 * so a task of one ref and one predecessor (a chain) crosses in three
 * lines. Tasks are 64-byte aligned (task_alloc). */
struct tarn_task {
  _Atomic int pending;
  _Atomic int refcount;
  atomic_bool cancel;
  bool failed;
  uint16_t nin; /* in_edges used */
  uint32_t n;   /* slots */
  tarn_task_fn fn;
  void *arg;
  _Atomic(struct edge *) successors;
  struct slot *slots;
  tarn_region *region;
  tarn_rt *rt;
  /* Second line. */
  void (*arg_free)(void *arg);
  uint64_t seq;
  tarn_task *left, *right; /* in a worker's queue; `left` also links the
                              held tasks (tarn_rt.held) */
  int priority;
  bool turn; /* let go by retry_held, not yet through acquire_data */
  /* Not zeroed when the task is made: written as they are used. */
  struct edge in_edges[inline_slots]; /* its first edges from predecessors */
  struct slot inline_slots_[inline_slots];
  const char *name;
};

_Static_assert(offsetof(struct tarn_task, in_edges) + sizeof(struct edge) <=
                   128,
               "a task's first edge is in its second cache line");
_Static_assert(offsetof(struct tarn_task, inline_slots_) +
                       offsetof(struct slot, use_seq) <=
                   192,
               "what every task uses of its first slot is in its third "
               "cache line (the uses' links only under a memory limit)");

static tarn_task *edge_task(const struct edge *e) {
  return (tarn_task *)(e->to & ~(uintptr_t)lend_bits);
}

/* The predecessor's slot lent through `e`, or -1. */
static long edge_lent_slot(const struct edge *e) {
  return (long)(e->to & lend_bits) - 1;
}

/* The next edge of the predecessor's list, or NULL. */
static struct edge *edge_next(const struct edge *e) {
  return (struct edge *)((uintptr_t)e->next & ~(uintptr_t)EDGE_DATA);
}

/* Whether the successor reads data the predecessor writes (a failure of
 * the predecessor cancels it). */
static bool edge_data(const struct edge *e) {
  return ((uintptr_t)e->next & EDGE_DATA) != 0;
}

/* Whether `e`, an edge to edge_task(e), was malloc'ed. */
static bool edge_on_heap(const struct edge *e) {
  uintptr_t at = (uintptr_t)e, first = (uintptr_t)edge_task(e)->in_edges;
  return at - first >= sizeof edge_task(e)->in_edges;
}

/* A ref's dependency state, in its owner slot; `lock` guards the rest.
 * `writer_slot` is the writer's slot of this ref; `writer_lent`, whether
 * a later task already takes over the writer's reference to it. */
struct ref_state {
  atomic_bool lock;
  bool writer_lent;
  uint32_t writer_slot;
  tarn_task *writer;
  tarn_task **readers;
  size_t nreaders, cap;
  /* The slots of the tasks not yet ended that use the ref and count in
   * its demand, by seq: the first is its next use (tarn__ref_next_use). */
  struct slot *uses, *uses_tail;
};

/* A region's state (tarn_region.state). */
enum { REGION_LIVE, REGION_CANCELLED, REGION_SPARE };

/* Waited regions kept untouched before the oldest is reused: a handle
 * already waited for is refused by tarn_region_cancel (TARN_EMISUSE)
 * until this many regions of its runtime were waited after it, instead
 * of cancelling a region that reuses its memory (320 bytes each). */
#define REGION_QUARANTINE 16

/* tarn_region_cancel is one compare-exchange on the state, which a signal
 * handler may make only when it is lock-free. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a region's state is lock-free");

struct tarn_region {
  tarn_rt *rt;
  tarn_region *parent;                /* the thread's enclosing region */
  tarn_region *prev_live, *next_live; /* in rt->live, or rt->spare_regions */
  /* REGION_LIVE from begin; REGION_CANCELLED by tarn_region_cancel: its
   * tasks, and those of the regions begun inside it, are cancelled
   * instead of run; REGION_SPARE once waited, so that a late cancel is
   * refused. On the line every task of the region reads before it runs,
   * written at begin, cancel and retirement only. */
  atomic_int state;
  /* The enclosing region when it is of the same runtime (else NULL),
   * whose cancel reaches this one. Set at begin and never changed, unlike
   * `parent` (tarn_rt_destroy of another runtime rewrites that), and it
   * outlives this region's tasks: workers may follow it. */
  tarn_region *cancel_parent;
  /* The region is done when finished == submitted. The submitters write
   * one line, the workers the other, so a submitting thread never waits
   * for a line a worker holds. Tasks that ran = submitted - not_run. */
  _Alignas(64) _Atomic uint64_t submitted;
  _Alignas(64) _Atomic uint64_t finished;
  _Alignas(64) atomic_int error;
  /* Set while a thread drains the region: only then does a finishing
   * task read `submitted` (the submitters' line) to see if it was the
   * last. Written twice per wait, so this line stays in every cache. */
  atomic_bool waiting;
  /* The lowest `finished` count a submitter held back by max_unfinished
   * sleeps for (see region_wait_for), or 0: the finisher that reaches it
   * clears it and wakes the sleepers. Written only while one is held. */
  _Atomic uint64_t wake_at;
  _Atomic uint64_t not_run, cancelled, failed;
  /* The pool's peaks (resident, live) before the last region begun inside
   * this one reset them; the owning thread's only. */
  size_t peak, live_peak;
  /* tarn__ticks at the region's first submission, on the thread that
   * began it (region_now); what a region of one task took is counted from
   * there (region_drain). Not at tarn_region_begin: a clock read costs 30
   * ns where the kernel keeps time by its hypervisor's clock, and the
   * first submission reads it anyway when it holds its task
   * (hold_for_waiter). */
  uint64_t first_ticks;
  /* Begun by an arg_free (on a worker or the guest), which waits for it. */
  bool in_arg_free;
  /* A task of the region offered its work to idle workers (share_work):
   * read when a region of one task is waited for (rt->lone_shared). */
  atomic_bool shared;
  /* With eager_free off: refs released when the region ends. */
  pthread_mutex_t keep_lock;
  tarn_ref **kept;
  size_t nkept, capkept;
};

/* A task's work shared with idle workers (tarn_task_parallel_for):
 * `nchunks` ranges of `chunk` indexes, claimed from the front by
 * even-numbered workers and from the back by odd-numbered ones: `claimed`
 * holds how many were taken from the front (low 32 bits) and from the back
 * (high 32 bits). Lives on the posting worker's stack while it is in that
 * worker's `help` slot. */
struct help {
  tarn_task *task; /* the task whose work it is */
  tarn_range_fn body;
  void *arg;
  size_t count, chunk, nchunks;
  _Atomic uint64_t claimed;
  atomic_int error; /* the first non-zero status of a body */
};

/* A worker thread, or the runtime's guest: the one thread at a time that
 * runs queued tasks while it waits for a region (region_drain). The guest
 * has no queue of its own: what it readies goes to the workers'. */
struct worker {
  tarn_rt *rt;
  unsigned index;
  bool guest;
  int cpu; /* the processor it is pinned to, or -1 */
  pthread_t thread;
  atomic_bool lock;
  /* The queue, under lock: a skew heap and a list of tasks in queue order
   * (linked through `left`), popped from whichever has the first task. */
  tarn_task *top, *sorted, *sorted_tail;
  atomic_bool has_tasks; /* top or sorted != NULL, readable without the lock */
  /* The highest priority queued here (INT_MIN: none), best effort: raised
   * by every push, set from the queue by every pop (a push racing with a
   * pop may be missed until the next one). */
  atomic_int queued_max;
  /* Tasks pushed to this worker, not yet in `top`: a lock-free stack that
   * any worker takes whole with one exchange. */
  _Alignas(64) _Atomic(tarn_task *) inbox;
  tarn_slab *scratch;
  tarn_task *free_tasks; /* finished tasks kept for reuse, by this worker */
  size_t nfree;
  atomic_bool active; /* pinning for or running a task */
  /* The work this worker shares now, or NULL; and how many other workers
   * may be looking at it (a helper counts itself before it reads `help`,
   * the owner clears `help` and then waits for the count to drop). */
  _Alignas(64) _Atomic(struct help *) help;
  /* Looking for work or asleep: could help (read by sharing workers). */
  atomic_bool idle;
  atomic_uint help_users;
  /* Counters written by this worker only, on a line of their own: the
   * waiting thread reads recent_ticks at every region of one task
   * (lone_worthwhile), and the line above changes whenever this worker
   * helps (`idle`), which made that read a miss (0.06 us of a 5.5 us
   * region of one shared 256 x 256 assign). */
  _Alignas(64) _Atomic uint64_t run, stolen, run_ns, wait_ns;
  /* How long its recent tasks ran, in ticks (tarn__ticks): a running mean
   * of one task in RECENT_SAMPLE_EVERY, the last sample weighing 1/8.
   * Written by this worker only. */
  _Atomic uint64_t recent_ticks;
  /* arg_free calls running on this thread (nested ones too): the regions
   * they begin are theirs to wait for, and tarn_rt_destroy leaves such
   * regions alone meanwhile. Written by this worker only. */
  atomic_int arg_frees;
} __attribute__((aligned(64)));

struct tarn_rt {
  /* Read by every task, written once: a line of their own, so that the
   * submitters' counters below never evict it from the workers' caches. */
  tarn_pool *pool;
  tarn_slab_set *slabs;
  struct worker *workers; /* nworkers threads, then the guest */
  unsigned nworkers;
  int eager_free;
  bool workers_fill_cores; /* nworkers >= the processors allowed */
  bool pinned;             /* the workers are pinned (cpu_side is set) */
  /* workers 0 and 1 are pinned to two processors (time_round_trip) */
  bool round_trip_pair;
  bool may_spill; /* the pool has a limit: data may be on disk */
  /* tarn__magic_live(RT_LIVE) from tarn_rt_create, TARN__MAGIC_DEAD once
   * tarn_rt_destroy frees the struct (rt_ok, prim.h). */
  uint32_t magic;
  /* GUEST_TASK_MAX_NS, WORKERS_BUSY_MAX_NS, HELP_SPIN_MAX_NS,
   * LONE_TASK_MAX_NS, LONE_SERIAL_MAX_NS and LONE_HOLD_NS in ticks
   * (tarn__ticks). */
  uint64_t guest_max_ticks, busy_max_ticks, help_spin_max_ticks;
  uint64_t lone_max_ticks, lone_serial_max_ticks, lone_hold_ticks;
  uint64_t idle_trim_ns; /* rest before give_back_at_rest; 0: never */
  /* The rest's wait now: idle_trim_ns, adapted (rest_adapt). */
  _Atomic uint64_t rest_wait_ns;
  /* tarn__clock_ns when the last rest first gave back, until the work
   * after it was seen (rest_adapt); 0 otherwise. */
  _Atomic uint64_t gave_back_at;
  uint64_t max_unfinished; /* a region's bound for submitters; 0: none */
  size_t work_tile;        /* tarn_rt_options.work_tile (linalg's) */
  /* Written by submitters that are not workers, per task. */
  _Alignas(64) atomic_bool spare_lock; /* spare: tasks for such submitters */
  tarn_task *spare;
  size_t nspare;
  struct task_chunk *chunks; /* every chunk, the one being carved first */
  _Atomic uint64_t seq;
  atomic_uint next_worker;
  /* Sleeping. */
  _Alignas(64) atomic_int sleepers; /* read by every push */
  pthread_mutex_t idle_lock;
  pthread_cond_t idle;
  uint64_t wakeups; /* signals sent, under idle_lock */
  atomic_bool stopping;
  /* Tasks waiting for memory. */
  pthread_mutex_t held_lock;
  /* Tasks held back for memory, linked through their `left` (a held task
   * is in no queue): holding one allocates nothing, so a failed
   * allocation cannot keep a task from waiting for memory. */
  tarn_task *held, *held_tail; /* first in, first retried */
  atomic_size_t held_count; /* the list's length, also read without the lock */
  /* Whether a task let go by retry_held has not yet been through
   * acquire_data: one at a time has its turn (0 or 1, changed under
   * held_lock). The line for memory is the held tasks and that one; while
   * it is not empty, a task that needs room joins it instead of trying
   * (acquire_data). */
  atomic_size_t turns;
  /* Times a worker left the active set under a limit (a task's end, or a
   * task held back after it let go of what it had pinned): a task that
   * failed to pin alone fails only if none left meanwhile. */
  _Atomic uint64_t leaves;

  /* Regions and completion. */
  pthread_mutex_t done_lock;
  pthread_cond_t done;
  tarn_region root;  /* tasks submitted outside any region */
  tarn_region *live; /* begun, not yet waited (done_lock) */
  /* Orders the regions' peaks: the pool's window read and restarted, and
   * folded into the live regions' peak and live_peak (see
   * tarn_region_begin). Taken with no other lock held. */
  pthread_mutex_t peaks_lock;
  /* Waited, kept for reuse, the last waited first (done_lock); only the
   * oldest is reused, once more than REGION_QUARANTINE are kept. */
  tarn_region *spare_regions, *spare_oldest;
  size_t spares;
  _Alignas(64) _Atomic uint64_t submitted; /* by submitters */
  _Alignas(64) _Atomic uint64_t cancelled, failed, held_back, prefetches;
  _Atomic uint64_t task_pinned_peak; /* under a limit (note_pinned) */
  /* How long the recent waits for regions of one task took, in ticks: a
   * running mean that weighs the last 1/2 when it was shorter, 1/8 when
   * longer (region_drain). */
  _Atomic uint64_t lone_ticks;
  /* Which share of the recent waits were for regions of one task, in
   * 1/LONE_SHARE_ONE: a running mean that weighs the last 1/8. */
  _Atomic uint32_t lone_share;
  /* Whether the last region of one task waited for shared its work with
   * idle workers (region_drain; lone_worthwhile). */
  atomic_bool lone_shared;
  /* A waiting thread is the guest. Set and cleared at every wait, so on
   * a line of its own: beside `stopping`, which idle workers read at every
   * look, each wait cost two misses (0.2 us of a 5.5 us region of one
   * shared 256 x 256 assign). */
  _Alignas(64) atomic_bool guest_busy;
  /* The processor the guest ran on when it last shared a task's work
   * (tarn_task_parallel_for), or -1. */
  atomic_int guest_cpu;
  /* A region's only task, held for the thread that waits for the region
   * (hold_for_waiter), and when it was put there (tarn__ticks). */
  _Alignas(64) _Atomic(tarn_task *) lone;
  _Atomic uint64_t lone_since;
  /* The round trip between workers 0 and 1 (time_round_trip): the ball
   * they pass, on a line of its own (BALL_*), the last ROUND_TRIP_KEPT
   * trips in ns and when worker 0 last timed them (written by worker 0
   * only), and whether their median is CORES_FAR_NS or more, or the
   * setting tarn__rt_cores_far_set made (CORES_*). */
  _Alignas(64) atomic_int ball;
  _Alignas(64) uint64_t round_trip_at;
  uint32_t round_trips[ROUND_TRIP_KEPT]; /* a ring: the next at next % 3 */
  unsigned round_trip_next;
  unsigned round_trip_asks;  /* up to ROUND_TRIP_FIRST_ASKS */
  atomic_uint round_trip_ns; /* the median; 0 until timed */
  atomic_int cores_far;
  /* With pinned workers: by processor, 1 when the (first) worker pinned
   * there claims shared ranges from the back (help_claim). */
  unsigned char cpu_side[CPU_TABLE];
};

/* rt->ball: at rest; asked by worker 0; answered (and back) by worker 1;
 * thrown by worker 0. */
enum { BALL_REST, BALL_ASKED, BALL_BACK, BALL_THROWN };
/* rt->cores_far: measured near or far, or set by tarn__rt_cores_far_set
 * (near, far). */
enum { CORES_NEAR, CORES_FAR, CORES_SET_NEAR, CORES_SET_FAR };

#define RT_LIVE 0x72756e74u /* "runt" */
_Static_assert(offsetof(struct tarn_rt, magic) >= TARN__MAGIC_MIN_OFFSET,
               "the runtime's magic word lies past what free overwrites");

/* Whether `rt` is a live runtime: false for NULL, and false with a line
 * on stderr (as the pool reports a released ref) for one already
 * destroyed, while its memory is not reused (tarn__magic_ok). */
static bool rt_ok(const tarn_rt *rt) {
  return rt != NULL &&
         tarn__magic_ok(rt, rt->magic, RT_LIVE, "runtime", "tarn_rt_destroy");
}

bool tarn__rt_ok(const tarn_rt *rt) { return rt_ok(rt); }

size_t tarn__rt_work_tile(const tarn_rt *rt) { return rt->work_tile; }

static TARN_THREAD_LOCAL tarn_task *current_task;
/* The task whose ranges this thread runs now (help_run), or NULL: a body
 * that splits its range again makes one call, on whichever thread. */
static TARN_THREAD_LOCAL tarn_task *ranging_task;

/* What the mark run() takes on its worker's slab for each task costs
 * (tarn_slab_mark, alloc.h): each slab has that much beyond scratch_bytes,
 * so that a task may take all of scratch_bytes. */
#define TASK_MARK_BYTES 16
static TARN_THREAD_LOCAL struct worker *current_worker;
static TARN_THREAD_LOCAL tarn_region *current_region;
/* On the guest: current_region when the thread became it (its program's
 * regions, which no task code it runs may join); NULL otherwise. */
static TARN_THREAD_LOCAL tarn_region *program_regions;
/* The region whose end this thread waits for (region_drain), or NULL. */
static TARN_THREAD_LOCAL tarn_region *draining;
/* While an arg_free runs: where its task's finish keeps the successor it
 * readied to run next (see finish), for worker_wait_for to run. */
static TARN_THREAD_LOCAL tarn_task **readied_next;

/* In a child of fork, the thread that forked is the only one: whatever
 * task, worker or regions it was in belong to runtimes whose other
 * threads are gone (their handles are refused there, prim.h). It starts
 * as a program thread outside any, so that runtimes the child makes work
 * (a child forked in a task must still exit or exec before the task
 * returns: the worker's loop it would return into is the parent's). */
static void forked_thread_reset(void) {
  current_task = NULL;
  ranging_task = NULL;
  current_worker = NULL;
  current_region = NULL;
  program_regions = NULL;
  draining = NULL;
  readied_next = NULL;
}

static pthread_once_t fork_reset_once = PTHREAD_ONCE_INIT;

static void fork_reset_watch(void) {
  (void)pthread_atfork(NULL, NULL, forked_thread_reset);
}

/* ---- options ------------------------------------------------------------ */

/* The number in the environment variable `name` into *out when it is
 * set: all digits (no sign, no space), from min to max. Returns 0, also
 * when unset or empty (*out untouched), or TARN_EINVAL. */
static int env_count(const char *name, unsigned long min, unsigned long max,
                     unsigned *out) {
  const char *text = getenv(name);
  if (text == NULL || *text == '\0') return 0;
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' || v < min ||
      v > max)
    return TARN_EINVAL;
  *out = (unsigned)v;
  return 0;
}

/* The runtime's variables into `o`, each on its own (a bad one keeps its
 * default only); the name of the first that is not valid, or NULL. */
static const char *env_runtime(tarn_rt_options *o) {
  const char *bad = NULL;
  if (env_count("TARN_WORKERS", 1, 1024, &o->workers) != 0)
    bad = "TARN_WORKERS";
  if (tarn__env_flag("TARN_PIN_WORKERS", &o->pin_workers) != 0 && bad == NULL)
    bad = "TARN_PIN_WORKERS";
  if (env_count("TARN_IDLE_TRIM_MS", 0, 86400000, /* a day */
                &o->idle_trim_ms) != 0 &&
      bad == NULL)
    bad = "TARN_IDLE_TRIM_MS";
  if (env_count("TARN_MAX_UNFINISHED", 0, UINT_MAX, &o->max_unfinished) != 0 &&
      bad == NULL)
    bad = "TARN_MAX_UNFINISHED";
  if (env_count("TARN_WORK_TILE", 0, WORK_TILE_MAX, &o->work_tile) != 0 &&
      bad == NULL)
    bad = "TARN_WORK_TILE";
  return bad;
}

int tarn_rt_options_init(tarn_rt_options *o) {
  if (o == NULL) return TARN_EINVAL;
  memset(o, 0, sizeof *o);
  int rc = tarn_pool_options_init(&o->pool);
  o->scratch_bytes = (size_t)64 << 20;
  o->eager_free = 1;
  o->workers = tarn__cpu_count();
  /* Pinned, unless a CPU quota left fewer workers than processors: the
   * quota's time may come from any of them, and the runtimes of several
   * such processes (containers on one host) would all pin to the same
   * first ones. */
  o->pin_workers = o->workers >= tarn__cpus_allowed(NULL, 0);
  o->idle_trim_ms = IDLE_TRIM_MS_DEFAULT;
  o->work_tile = WORK_TILE_DEFAULT;
  if (env_runtime(o) != NULL) rc = TARN_EINVAL;
  return rc;
}

int tarn_env_check(const char **name) {
  const char *bad = NULL;
  tarn__pool_env_check(&bad);
  if (bad == NULL) {
    tarn_rt_options scratch;
    memset(&scratch, 0, sizeof scratch);
    bad = env_runtime(&scratch);
  }
  if (name != NULL) *name = bad;
  return bad != NULL ? TARN_EINVAL : 0;
}

/* ---- tasks and edges ---------------------------------------------------- */

/* Finished tasks are kept for reuse instead of going back to malloc,
 * whose arena lock the submitting thread and the workers would otherwise
 * take for every task: a worker keeps its own list and hands batches to
 * the runtime's spare list, from which other threads take. */
enum { keep_local = 128, batch = 64 };

/* Task structs come from chunks the runtime maps itself, not from malloc:
 * TASK_CHUNK_BYTES each, aligned to that size so that a task's chunk is
 * its address rounded down, carved slot by slot from the first chunk of
 * rt->chunks (under spare_lock) when no spare task is left. At rest, the
 * chunks all of whose carved slots are spare go back to the system whole
 * (spare_trim), without the heap's locks: from the heap, a burst's structs
 * came back only through malloc_trim, which held the heap locked for 16 to
 * 126 ms after a burst of 300000 tasks (any malloc of the program waiting
 * meanwhile), and the structs, interleaved with the program's blocks, kept
 * its free memory in pieces. Invariant: a chunk other than the first never
 * gets another slot carved (`carved` is fixed once it is not first), and
 * only spare_trim, one thread at a time (guest_busy), unlinks chunks. */
#define TASK_CHUNK_BYTES ((size_t)256 << 10)
#define TASK_SLOT ((sizeof(tarn_task) + 63) / 64 * 64)

struct task_chunk {
  struct task_chunk *next; /* rt->chunks, under spare_lock */
  size_t carved;           /* slots handed out (the first chunk's grows) */
  size_t spare;            /* spare_trim's count of its spare slots */
};

#define CHUNK_HEAD ((sizeof(struct task_chunk) + 63) / 64 * 64)
#define CHUNK_SLOTS ((TASK_CHUNK_BYTES - CHUNK_HEAD) / TASK_SLOT)

static struct task_chunk *chunk_of(const tarn_task *t) {
  return (struct task_chunk *)((uintptr_t)t &
                               ~(uintptr_t)(TASK_CHUNK_BYTES - 1));
}

/* A slot of the first chunk, under spare_lock (held, and held again on
 * return); maps a new first chunk when it is full. NULL when the system
 * has no memory for one. */
static tarn_task *task_carve(tarn_rt *rt) {
  struct task_chunk *c = rt->chunks;
  if (c == NULL || c->carved == CHUNK_SLOTS) {
    spin_unlock(&rt->spare_lock); /* no system call under a spin lock */
    void *base = NULL;
    int rc = tarn__vm_map_aligned(TASK_CHUNK_BYTES, TASK_CHUNK_BYTES, &base);
    spin_lock(&rt->spare_lock);
    if (rc != 0) return NULL;
    c = base; /* first now: a chunk another thread put first meanwhile
                 gets no more slots, and spare_trim unmaps it once its
                 few are spare */
    c->carved = 0;
    c->next = rt->chunks;
    rt->chunks = c;
  }
  return (tarn_task *)(void *)((char *)c + CHUNK_HEAD +
                               c->carved++ * TASK_SLOT);
}

/* Asks for the three lines of a task that submitting writes. */
static void prefetch_task(const tarn_task *t) {
  const char *at = (const char *)t;
  tarn__prefetch_write(at);
  tarn__prefetch_write(at + 64);
  tarn__prefetch_write(at + 128);
}

static tarn_task *task_alloc(tarn_rt *rt) {
  struct worker *w = current_worker;
  tarn_task *t = NULL;
  if (w != NULL && w->rt == rt && w->free_tasks != NULL) {
    t = w->free_tasks;
    w->free_tasks = t->left;
    w->nfree--;
  } else {
    spin_lock(&rt->spare_lock);
    if ((t = rt->spare) != NULL) {
      rt->spare = t->left;
      rt->nspare--;
      /* The next one was freed by a worker, its lines are in that core's
       * cache: ask for them now, for the next submission. */
      if (rt->spare != NULL) prefetch_task(rt->spare);
    }
    if (t == NULL) t = task_carve(rt);
    spin_unlock(&rt->spare_lock);
  }
  return t;
}

static void spare_push(tarn_rt *rt, tarn_task *first, tarn_task *last,
                       size_t n) {
  spin_lock(&rt->spare_lock);
  last->left = rt->spare;
  rt->spare = first;
  rt->nspare += n;
  spin_unlock(&rt->spare_lock);
}

static void task_free(tarn_task *t) {
  if (t->slots != t->inline_slots_) free(t->slots);
  tarn_rt *rt = t->rt;
  struct worker *w = current_worker;
  if (w == NULL || w->rt != rt) {
    spare_push(rt, t, t, 1);
    return;
  }
  t->left = w->free_tasks;
  w->free_tasks = t;
  if (++w->nfree < keep_local) return;
  tarn_task *first = w->free_tasks, *last = first;
  for (size_t i = 1; i < batch; i++) last = last->left;
  w->free_tasks = last->left;
  w->nfree -= batch;
  spare_push(rt, first, last, batch);
}

static void task_unref(tarn_task *t) {
  if (atomic_fetch_sub(&t->refcount, 1) == 1) task_free(t);
}

/* Makes `t` wait for `pred` unless pred has finished already. With
 * `lend` >= 0, pred's reference in its slot `lend` goes to `t` when pred
 * ends: sets *lent when so (pred had not ended). With `data` (t reads
 * what pred writes), pred's failure cancels t. */
static int add_edge(tarn_task *pred, tarn_task *t, long lend, bool *lent,
                    bool data) {
  if (pred == NULL || pred == t) return 0;
  struct edge *e;
  bool heap = t->nin >= inline_slots;
  if (!heap)
    e = &t->in_edges[t->nin++];
  else if ((e = malloc(sizeof *e)) == NULL)
    return TARN_ENOMEM;
  bool lending = lend >= 0 && lend < lend_bits - 1;
  e->to = (uintptr_t)t | (lending ? (uintptr_t)lend + 1 : 0);
  atomic_fetch_add(&t->pending, 1);
  struct edge *head = atomic_load(&pred->successors);
  do {
    if (head == CLOSED) {
      if (heap) free(e);
      if (pred->failed && data) atomic_store(&t->cancel, true);
      atomic_fetch_sub(&t->pending, 1); /* never 0: submission holds 1 */
      return 0;
    }
    e->next = (struct edge *)((uintptr_t)head | (data ? EDGE_DATA : 0));
  } while (!atomic_compare_exchange_weak(&pred->successors, &head, e));
  if (lending) *lent = true;
  return 0;
}

static void ref_state_free(void *ctx, void *owner) {
  (void)ctx;
  struct ref_state *st = owner;
  if (st->writer != NULL) task_unref(st->writer);
  for (size_t i = 0; i < st->nreaders; i++) task_unref(st->readers[i]);
  free(st->readers);
  free(st);
}

/* The ref's dependency state, made on first use. */
static struct ref_state *state_of(tarn_ref *ref) {
  struct ref_state *st = tarn__ref_owner(ref, NULL);
  if (st != NULL) return st;
  struct ref_state *mine = calloc(1, sizeof *mine);
  if (mine == NULL) return NULL;
  st = tarn__ref_owner(ref, mine);
  if (st != mine) free(mine); /* another submitter installed one first */
  return st;
}

/* Counts slot `s` of `t` in its ref's demand (tarn__ref_demand) and puts
 * it in the ref's uses (its state `st`, locked), in seq order (a later
 * submitter's task may have been put there first), telling the pool when
 * it is now the first. */
static void count_use(tarn_task *t, struct ref_state *st, struct slot *s) {
  tarn__ref_demand(s->ref, 1);
  s->counted = true;
  s->use_seq = t->seq;
  struct slot *after = st->uses_tail;
  while (after != NULL && after->use_seq > s->use_seq) after = after->use_prev;
  s->use_prev = after;
  s->use_next = after != NULL ? after->use_next : st->uses;
  if (s->use_next != NULL)
    s->use_next->use_prev = s;
  else
    st->uses_tail = s;
  if (after != NULL) {
    after->use_next = s;
  } else {
    st->uses = s;
    tarn__ref_next_use(s->ref, s->use_seq);
  }
}

/* Takes slot `s` (counted) out of its ref's uses: the next one becomes the
 * ref's next use when `s` was first. The ref is alive. */
static void uses_remove(struct slot *s) {
  struct ref_state *st = tarn__ref_owner(s->ref, NULL);
  spin_lock(&st->lock);
  if (s->use_prev != NULL) {
    s->use_prev->use_next = s->use_next;
  } else {
    st->uses = s->use_next;
    tarn__ref_next_use(s->ref,
                       st->uses != NULL ? st->uses->use_seq : UINT64_MAX);
  }
  if (s->use_next != NULL)
    s->use_next->use_prev = s->use_prev;
  else
    st->uses_tail = s->use_prev;
  spin_unlock(&st->lock);
}

/* Whether `t`'s access in `mode` to the ref of state `st` (locked) takes
 * over the reference of the ref's writer instead of retaining its own:
 * when the access waits for that writer, and no earlier task took it. */
static bool may_inherit(const struct ref_state *st, tarn_access mode) {
  return st->writer != NULL && !st->writer_lent &&
         (!(mode & TARN_WRITE) || st->nreaders == 0);
}

/* Drops the readers that have ended from the ref's state `st` (locked):
 * a later writer needs no edge from them (add_edge adds none). Without
 * this a ref read again and again, never written, kept every task that
 * ever read it, until its next writer or its release: 10000 regions of
 * one gemv on the same matrix held 10000 tasks, and the writer that came
 * then walked them all. */
static void prune_readers(struct ref_state *st) {
  size_t kept = 0;
  for (size_t i = 0; i < st->nreaders; i++) {
    tarn_task *r = st->readers[i];
    if (atomic_load(&r->successors) == CLOSED)
      task_unref(r);
    else
      st->readers[kept++] = r;
  }
  st->nreaders = kept;
}

/* Records `t`'s access to its slot `slot` in the ref's state `st`
 * (locked), adding the edges that submission order implies. When
 * may_inherit, the edge from the writer carries the writer's reference;
 * sets *inherited when it will (the writer had not ended).
 *
 * Handing references on is what keeps a chain of tasks on one ref from
 * moving the ref's count between the submitting core and the worker's for
 * every task: a task that waits for the ref's writer anyway is kept alive
 * by the writer's reference, and then holds it.
 *
 * Failures follow the data: an edge from the writer to a task that reads
 * the ref carries the writer's failure; an edge from a reader to a later
 * writer does not (the reader changed nothing), nor does one from the
 * writer to a task that only writes (it replaces the bytes). A task that
 * reads and writes after readers waits for those readers and for the
 * writer as well, so a failed writer still cancels it. */
static int track(tarn_task *t, struct ref_state *st, uint32_t slot,
                 bool *inherited) {
  tarn_access mode = t->slots[slot].mode;
  bool reads = (mode & TARN_READ) != 0;
  long lend = -1;
  if (may_inherit(st, mode)) lend = (long)st->writer_slot;
  int rc = 0;
  if (mode & TARN_WRITE) {
    /* (with readers, lend is -1: see may_inherit) */
    if (st->nreaders == 0 || reads)
      rc = add_edge(st->writer, t, lend, inherited, reads);
    for (size_t i = 0; i < st->nreaders && rc == 0; i++)
      rc = add_edge(st->readers[i], t, -1, inherited, false);
    if (rc != 0) return rc;
    for (size_t i = 0; i < st->nreaders; i++) task_unref(st->readers[i]);
    st->nreaders = 0;
    if (st->writer != NULL) task_unref(st->writer);
    st->writer = t;
    st->writer_slot = slot;
    st->writer_lent = false;
    atomic_fetch_add(&t->refcount, 1);
    return 0;
  }
  if (st->nreaders == st->cap) {
    prune_readers(st);
    if (st->cap == 0 || st->nreaders > st->cap / 2) { /* room to grow */
      size_t cap = st->cap ? 2 * st->cap : 4;
      tarn_task **r = realloc(st->readers, cap * sizeof *r);
      if (r == NULL) return TARN_ENOMEM;
      st->readers = r;
      st->cap = cap;
    }
  }
  rc = add_edge(st->writer, t, lend, inherited, true);
  if (rc != 0) return rc;
  if (*inherited) st->writer_lent = true;
  st->readers[st->nreaders++] = t;
  atomic_fetch_add(&t->refcount, 1);
  return 0;
}

/* ---- queues and sleeping ------------------------------------------------ */

static bool before(const tarn_task *a, const tarn_task *b) {
  return a->priority != b->priority ? a->priority > b->priority
                                    : a->seq < b->seq;
}

/* The queues are skew heaps threaded through the tasks: push and pop
 * never allocate, so readying a task cannot fail. */
static tarn_task *merge(tarn_task *a, tarn_task *b) {
  tarn_task *root = NULL, **at = &root;
  while (a != NULL && b != NULL) {
    if (before(b, a)) {
      tarn_task *x = a;
      a = b;
      b = x;
    }
    *at = a;
    tarn_task *rest = a->right;
    a->right = a->left;
    at = &a->left;
    a = rest;
  }
  *at = a != NULL ? a : b;
  return root;
}

/* Moves the inbox `in` (newest first) into `w`'s queue, in the order the
 * tasks were pushed: each task that comes after the sorted list's last goes
 * to the end of that list, in constant time, the others into the heap. Tasks
 * pushed in queue order (independent tasks of one priority, submitted in a
 * loop) then never enter the heap, whose pops walk cold tasks: with 300000 such
 * tasks queued at once, one worker ran 0.49 M tasks/s through the heap
 * alone. Under w->lock. */
static void queue_inbox(struct worker *w, tarn_task *in) {
  tarn_task *pushed = NULL;
  while (in != NULL) { /* reverse: oldest first */
    tarn_task *next = in->left;
    in->left = pushed;
    pushed = in;
    in = next;
  }
  while (pushed != NULL) {
    tarn_task *next = pushed->left;
    pushed->left = pushed->right = NULL;
    if (w->sorted == NULL) {
      w->sorted = w->sorted_tail = pushed;
    } else if (!before(pushed, w->sorted_tail)) {
      w->sorted_tail->left = pushed;
      w->sorted_tail = pushed;
    } else {
      w->top = merge(w->top, pushed);
    }
    pushed = next;
  }
}

/* Pops the first task of `w`'s queue after moving its inbox in, or NULL.
 * A queue that looks empty is not locked (a task pushed meanwhile is found
 * by the next look, or by the sleep protocol: see wake()). */
static tarn_task *queue_pop(struct worker *w) {
  bool queued = atomic_load(&w->has_tasks);
  if (!queued && atomic_load(&w->inbox) == NULL) return NULL;
  tarn_task *in = atomic_exchange(&w->inbox, NULL);
  spin_lock(&w->lock);
  tarn_task *t = w->top;
  if (in != NULL && in->left == NULL && t == NULL && w->sorted == NULL) {
    t = in; /* one task pushed, none queued: a chain's common case */
  } else {
    queue_inbox(w, in);
    t = w->top;
    if (w->sorted != NULL && (t == NULL || before(w->sorted, t))) {
      t = w->sorted;
      w->sorted = t->left;
      if (w->sorted == NULL) w->sorted_tail = NULL;
    } else if (t != NULL) {
      w->top = merge(t->left, t->right);
    }
  }
  int max = INT_MIN; /* the sorted list's first has its highest priority */
  if (w->top != NULL) max = w->top->priority;
  if (w->sorted != NULL && w->sorted->priority > max) max = w->sorted->priority;
  atomic_store_explicit(&w->has_tasks, w->top != NULL || w->sorted != NULL,
                        memory_order_relaxed);
  atomic_store_explicit(&w->queued_max, max, memory_order_relaxed);
  spin_unlock(&w->lock);
  return t;
}

/* After a push: wakes a sleeping worker, if any. A worker counts itself in
 * `sleepers` before its last look at the queues (both seq_cst), so either
 * it sees the task or this sees it and signals; pushes cost no shared
 * write while every worker is awake. */
static void wake(tarn_rt *rt) {
  if (atomic_load(&rt->sleepers) == 0) return;
  pthread_mutex_lock(&rt->idle_lock);
  rt->wakeups++;
  pthread_cond_signal(&rt->idle);
  pthread_mutex_unlock(&rt->idle_lock);
}

/* Puts a ready task in worker w's queue and wakes a sleeper. */
static void enqueue(tarn_rt *rt, struct worker *w, tarn_task *t) {
  int max = atomic_load_explicit(&w->queued_max, memory_order_relaxed);
  while (t->priority > max && !atomic_compare_exchange_weak_explicit(
                                  &w->queued_max, &max, t->priority,
                                  memory_order_relaxed, memory_order_relaxed))
    continue;
  tarn_task *head = atomic_load_explicit(&w->inbox, memory_order_relaxed);
  do t->left = head; /* seq_cst exchange: see wake() */
  while (!atomic_compare_exchange_weak(&w->inbox, &head, t));
  wake(rt);
}

/* The next worker in round robin, for tasks that program threads push. */
static struct worker *next_worker(tarn_rt *rt) {
  return &rt->workers[atomic_fetch_add_explicit(&rt->next_worker, 1,
                                                memory_order_relaxed) %
                      rt->nworkers];
}

/* Whether the workers' recent tasks took less than max_ticks on average
 * (tarn__ticks). */
static bool tasks_short(const tarn_rt *rt, uint64_t max_ticks) {
  uint64_t sum = 0;
  for (unsigned i = 0; i < rt->nworkers; i++)
    sum += atomic_load_explicit(&rt->workers[i].recent_ticks,
                                memory_order_relaxed);
  return sum < max_ticks * rt->nworkers;
}

/* Whether every worker is looking for work or asleep. */
static bool workers_idle(const tarn_rt *rt) {
  for (unsigned i = 0; i < rt->nworkers; i++)
    if (!atomic_load_explicit(&rt->workers[i].idle, memory_order_relaxed))
      return false;
  return true;
}

/* Whether a waiter runs its region's only task itself, as the guest (see
 * guest_worthwhile): with pinned workers or a processor to spare, while
 * such regions took less than LONE_TASK_MAX_NS, or less than
 * LONE_SERIAL_MAX_NS when the last one's task shared no work and no
 * worker has a task (the guest would run beside it on its core), and, when
 * the workers fill the cores, while they are not kept busy by long tasks
 * of other regions (WORKERS_BUSY_MAX_NS).
 *
 * A task that shares no work loses nothing on the guest: the worker
 * pinned to the guest's processor only yields it while it looks for work,
 * and the hand-off to a worker and back costs a sched_yield's period on
 * each side (1.2 us a call on the virtual machine of 2026-12-06): a
 * region of one task running the N=1024 triangular solve's kernels on
 * 512 tiles (59 to 61 us inside the task) took 61.2 to 63.2 us on the
 * guest against 67.1 to 67.9 on a worker, whose hand-off took 2.8 us
 * from submission to the task's start and 3.8 to 4.2 from its end to the
 * wait's return (docs/rt.md). One that shares its work keeps the shorter
 * bound (see
 * guest_worthwhile: a shared Cholesky of one 256 tile ran 4 % slower on
 * the guest). */
static bool lone_worthwhile(const tarn_rt *rt) {
  uint64_t lone = atomic_load_explicit(&rt->lone_ticks, memory_order_relaxed);
  bool serial = !atomic_load_explicit(&rt->lone_shared, memory_order_relaxed);
  return (rt->pinned || !rt->workers_fill_cores) &&
         (lone < rt->lone_max_ticks ||
          (serial && lone < rt->lone_serial_max_ticks && workers_idle(rt))) &&
         (!rt->workers_fill_cores || tasks_short(rt, rt->busy_max_ticks));
}

/* Holds `t`, just pushed by a program thread as the first task of its
 * region, in rt->lone for the thread's wait to run as the guest (see
 * guest_worthwhile), while the guest would take it (lone_worthwhile) and
 * most recent waits were for regions of one task (rt->lone_share): a
 * worker that took the task instead would run it beside a waiter spinning
 * on the cores (a region of one 256 x 256 gemv took 6.2 to 6.7 us when a
 * worker took its task, a third of the time, and 5.0 when the waiter did).
 * A program that does something else before it waits leaves the task
 * there for LONE_HOLD_NS, then idle workers take it (lone_take), or a
 * worker before it sleeps; the next submission of any task sends it to
 * them at once, before its own work (release_held: a sum of one tile in
 * two tasks took 0.5 us longer when the first waited for the second's
 * submission, and the share keeps such regions from holding at all).
 * Returns whether it holds `t`. */
static bool hold_for_waiter(tarn_rt *rt, tarn_task *t) {
  if (t->region == &rt->root ||
      atomic_load_explicit(&t->region->submitted, memory_order_relaxed) != 1 ||
      atomic_load_explicit(&rt->lone_share, memory_order_relaxed) <
          LONE_SHARE_ONE / 2 ||
      !lone_worthwhile(rt) ||
      atomic_load_explicit(&rt->lone, memory_order_relaxed) != NULL)
    return false;
  atomic_store_explicit(&rt->lone_since, t->region->first_ticks,
                        memory_order_relaxed);
  tarn_task *none = NULL;
  if (!atomic_compare_exchange_strong(&rt->lone, &none, t)) return false;
  wake(rt); /* a sleeping worker looks again (seq_cst: see wake()) */
  return true;
}

/* The task held in rt->lone, or NULL; with `patient`, only once it has
 * waited LONE_HOLD_NS. */
static tarn_task *lone_take(tarn_rt *rt, bool patient) {
  if (atomic_load(&rt->lone) == NULL) return NULL;
  if (patient && tarn__ticks() < atomic_load_explicit(&rt->lone_since,
                                                      memory_order_relaxed) +
                                     rt->lone_hold_ticks)
    return NULL;
  return atomic_exchange(&rt->lone, NULL);
}

/* Whether `r` or a region of its runtime it was begun in was cancelled. */
static bool region_stopped(const tarn_region *r) {
  for (; r != NULL; r = r->cancel_parent)
    if (atomic_load_explicit(&r->state, memory_order_relaxed) ==
        REGION_CANCELLED)
      return true;
  return false;
}

/* Whether `t` will end cancelled instead of running: it was cancelled (by
 * a failed predecessor) or its region was. run() and prefetch_reads() ask
 * the same question, so a task that will not run reads nothing ahead. */
static bool task_stopped(const tarn_task *t) {
  return atomic_load(&t->cancel) || region_stopped(t->region);
}

/* Starts reading back, off the workers, the spilled data that `t` reads
 * (data it only writes, or only orders itself after, is not read back at
 * all), unless it was cancelled or its region was. A task held back for
 * memory is pushed again at its turn (retry_held), maybe after its region
 * was cancelled: its read ahead would then read data that no task uses,
 * pushing out other data to make room (the reader thread got to it before
 * the cancelled task ended, which test_rt's
 * tasks_waiting_for_memory_can_be_cancelled once saw under load). */
static void prefetch_reads(tarn_rt *rt, const tarn_task *t) {
  if (task_stopped(t)) return;
  for (size_t i = 0; i < t->n; i++)
    if (t->slots[i].mode != TARN_WRITE && !t->slots[i].unpinned &&
        tarn_ref_prefetch(t->slots[i].ref) == 1)
      atomic_fetch_add_explicit(&rt->prefetches, 1, memory_order_relaxed);
}

/* Queues a ready task: on the calling worker, else round robin, unless it
 * is held for its waiter (hold_for_waiter). Under a limit, the spilled
 * data it reads starts coming back at once (prefetch_reads). */
static void push(tarn_rt *rt, tarn_task *t) {
  if (rt->may_spill) prefetch_reads(rt, t);
  struct worker *w = current_worker;
  if (w == NULL && hold_for_waiter(rt, t)) return;
  if (w == NULL || w->rt != rt || w->guest) w = next_worker(rt);
  enqueue(rt, w, t);
}

/* Sends a task held for its waiter to the workers (hold_for_waiter). */
static void release_held(tarn_rt *rt) {
  tarn_task *held = lone_take(rt, false);
  if (held != NULL) enqueue(rt, next_worker(rt), held);
}

/* Takes the first task of `v`'s queue for `self` (another worker, or the
 * guest), or NULL. `v` may have looked at its queue while this emptied
 * its inbox, found nothing and gone to sleep: what is left there would
 * then wait for the next push (or, when the guest leaves a region's last
 * task to the workers, for ever). So a sleeper is woken for it; the fence
 * orders the store of has_tasks (in queue_pop) before the read of the
 * sleepers, as a sleeper's count orders its own read (see wake()). */
static tarn_task *steal(struct worker *self, struct worker *v,
                        bool idle_locked) {
  tarn_task *t = queue_pop(v);
  if (t == NULL) return NULL;
  atomic_store_explicit(
      &self->stolen,
      atomic_load_explicit(&self->stolen, memory_order_relaxed) + 1,
      memory_order_relaxed);
  if (atomic_load_explicit(&v->has_tasks, memory_order_relaxed)) {
    tarn_rt *rt = self->rt;
    atomic_thread_fence(memory_order_seq_cst);
    if (!idle_locked) {
      wake(rt);
    } else if (atomic_load(&rt->sleepers) > 1) { /* others than self */
      rt->wakeups++;
      pthread_cond_signal(&rt->idle);
    }
  }
  return t;
}

/* The first task of self's queue, else one stolen from another worker's,
 * or NULL. `idle_locked`: the caller holds rt->idle_lock (sleep_or_take's
 * last look). */
static tarn_task *take(struct worker *self, bool idle_locked) {
  tarn_task *t = queue_pop(self);
  if (t != NULL) return t;
  tarn_rt *rt = self->rt;
  for (unsigned k = 1; k < rt->nworkers; k++) {
    t = steal(self, &rt->workers[(self->index + k) % rt->nworkers],
              idle_locked);
    if (t != NULL) return t;
  }
  return NULL;
}

/* ---- finishing ------------------------------------------------------------
 */

/* Counts a finished task in its region and wakes the waiter when it was
 * the last, or the submitters held back (region_wait_for) when it reached
 * r->wake_at. Region memory is reused, never freed before the runtime, so
 * the reads after the count are safe even once the waiter has returned
 * (at worst they wake it for nothing). The seq_cst increment and loads:
 * a task's children are counted in `submitted` before the task's own
 * `finished`, so the last finisher sees every submission; the waiter sets
 * `waiting` before it compares the counts, and the last finisher reads it
 * after its increment, so either the waiter sees the last count or the
 * finisher sees the waiter. A waiter that finishes its region's last task
 * itself (as the guest) wakes nobody: it looks at the count again before
 * it sleeps. That, and ticks for the clock reads of a region of one task
 * (17 ns to read here against 30 for CLOCK_MONOTONIC), took the fastest of
 * 100,000 regions of one empty task from 0.52-0.56 us to 0.49-0.53 (four
 * alternated runs of a program outside the repository, 2026-12-03). */
static void region_done(tarn_rt *rt, tarn_region *r, int status, bool ran) {
  /* The first failure's status; a cancellation's only while no task has
   * failed (a failing task readies the tasks it cancels before it counts
   * itself, so one of them may end first). */
  int seen = 0;
  while (status != 0 &&
         !atomic_compare_exchange_weak(&r->error, &seen, status) &&
         (seen == 0 || (seen == TARN_ECANCELED && status != TARN_ECANCELED)))
    continue;
  if (status != 0) {
    atomic_fetch_add(status == TARN_ECANCELED ? &r->cancelled : &r->failed, 1);
    if (!ran) atomic_fetch_add(&r->not_run, 1);
  }
  uint64_t finished = atomic_fetch_add(&r->finished, 1) + 1;
  uint64_t wake_at = atomic_load(&r->wake_at);
  if ((wake_at != 0 && finished >= wake_at &&
       atomic_compare_exchange_strong(&r->wake_at, &wake_at, 0)) ||
      (atomic_load(&r->waiting) && r != draining &&
       finished == atomic_load(&r->submitted))) {
    pthread_mutex_lock(&rt->done_lock);
    pthread_cond_broadcast(&rt->done);
    pthread_mutex_unlock(&rt->done_lock);
  }
}

/* Keeps `ref` until the region ends (eager freeing off). */
static void keep(tarn_region *r, tarn_ref *ref) {
  pthread_mutex_lock(&r->keep_lock);
  if (r->nkept == r->capkept) {
    size_t cap = r->capkept ? 2 * r->capkept : 64;
    tarn_ref **k = realloc(r->kept, cap * sizeof *k);
    if (k == NULL) { /* cannot keep it: free it eagerly after all */
      pthread_mutex_unlock(&r->keep_lock);
      tarn_ref_release(ref);
      return;
    }
    r->kept = k;
    r->capkept = cap;
  }
  r->kept[r->nkept++] = ref;
  pthread_mutex_unlock(&r->keep_lock);
}

/* Gives the task held back for memory longest its turn to try again,
 * unless one has it already. One at a time: when the tasks that fit in
 * the limit are few, every held task retried at once pinned its inputs
 * and failed for its output, and the inputs it let go were pushed out by
 * the others and read again (2A+1 on 2 MiB tiles under a limit of two:
 * 7 to 17 reads of the 4 input tiles instead of 4). A task that gets its
 * data in its turn passes the turn on (acquire_data), so the held tasks
 * go as fast as room allows. */
static void retry_held(tarn_rt *rt) {
  if (atomic_load(&rt->held_count) == 0) return;
  pthread_mutex_lock(&rt->held_lock);
  tarn_task *t = atomic_load(&rt->turns) == 0 ? rt->held : NULL;
  if (t != NULL) {
    rt->held = t->left;
    if (rt->held == NULL) rt->held_tail = NULL;
    t->turn = true;
    atomic_store(&rt->turns, 1); /* before the count: in_line() sees one */
    atomic_fetch_sub(&rt->held_count, 1);
  }
  pthread_mutex_unlock(&rt->held_lock);
  if (t != NULL) push(rt, t);
}

/* Ends `t`'s turn (through acquire_data, or cancelled): out of the line
 * for memory. */
static void end_turn(tarn_rt *rt, tarn_task *t) {
  pthread_mutex_lock(&rt->held_lock);
  t->turn = false;
  atomic_store(&rt->turns, 0);
  pthread_mutex_unlock(&rt->held_lock);
}

/* Whether tasks wait in line for memory (a hint, read without the lock). */
static bool in_line(tarn_rt *rt) {
  return atomic_load(&rt->held_count) > 0 || atomic_load(&rt->turns) > 0;
}

/* Whether `t` may run before everything queued on `w`: nothing queued
 * there has a higher priority (among equal priorities the successor goes
 * first: its inputs were just written, on this core). */
static bool runs_first(struct worker *w, const tarn_task *t) {
  return t->priority >=
         atomic_load_explicit(&w->queued_max, memory_order_relaxed);
}

/* Ends a task that ran (status from its function or its data) or was
 * cancelled on worker `w`: drops its refs, readies or cancels its
 * successors. The successor of the highest priority among those readied
 * (the first of them on a tie) goes to *next instead of a queue when
 * nothing queued on `w` has a higher priority: the worker runs it at
 * once (a chain stays on one core, with no queue or steal in between, and
 * a consumer runs while its producer's output is in this core's cache);
 * the others are pushed. */
static void finish(struct worker *w, tarn_task *t, int status, bool ran,
                   tarn_task **next) {
  tarn_rt *rt = t->rt;
  for (size_t i = 0; i < t->n; i++) {
    /* Alive: held, or lent to a successor, which cannot end before t. */
    if (t->slots[i].pinned) tarn_ref_unpin(t->slots[i].ref);
    if (!t->slots[i].counted) continue;
    uses_remove(&t->slots[i]);
    tarn__ref_demand(t->slots[i].ref, -1);
  }
  t->failed = status != 0;
  if (status == TARN_ECANCELED) /* release: as w->run */
    atomic_fetch_add_explicit(&rt->cancelled, 1, memory_order_release);
  else if (status != 0)
    atomic_fetch_add_explicit(&rt->failed, 1, memory_order_release);
  /* Closed: no successor can be added, so none can take a reference. */
  struct edge *first = atomic_exchange(&t->successors, CLOSED);
  for (struct edge *e = first; e != NULL; e = edge_next(e)) {
    long lent = edge_lent_slot(e);
    if (lent >= 0) t->slots[lent].held = false; /* the successor's now */
  }
  for (size_t i = 0; i < t->n; i++) {
    if (!t->slots[i].held) continue;
    if (rt->eager_free)
      tarn_ref_release(t->slots[i].ref);
    else
      keep(t->region, t->slots[i].ref);
  }
  struct edge *e = first;
  while (e != NULL) {
    /* Read everything first: once readied, the successor (and the edge
     * inside it) may run and be gone. */
    struct edge *after = edge_next(e);
    tarn_task *succ = edge_task(e);
    bool heap = edge_on_heap(e);
    if (t->failed && edge_data(e)) atomic_store(&succ->cancel, true);
    if (heap) free(e);
    if (atomic_fetch_sub(&succ->pending, 1) == 1) {
      /* among the successors readied here too, the highest first (until
       * 2026-12-05 the first readied: the last submitted, whatever its
       * priority) */
      if (*next != NULL && succ->priority > (*next)->priority) {
        push(rt, *next);
        *next = NULL;
      }
      if (*next == NULL && runs_first(w, succ))
        *next = succ;
      else
        push(rt, succ);
    }
    e = after;
  }
  if (t->arg_free != NULL) {
    /* An arg_free that waits for a region it began runs tasks meanwhile
     * (worker_wait_for): the successor kept in *next too, which no other
     * thread can reach and that region's tasks may follow. */
    tarn_task **was = readied_next;
    readied_next = next;
    /* on the worker's own line: no shared count bounced between the
     * workers for every task with an arg_free (most of linalg's) */
    int running = atomic_load_explicit(&w->arg_frees, memory_order_relaxed);
    atomic_store_explicit(&w->arg_frees, running + 1, memory_order_relaxed);
    t->arg_free(t->arg);
    atomic_store_explicit(&w->arg_frees, running, memory_order_relaxed);
    readied_next = was;
  }
  tarn_region *region = t->region;
  task_unref(t);
  region_done(rt, region, status, ran);
}

/* ---- running --------------------------------------------------------------
 */

static void unpin_all(tarn_task *t) {
  for (size_t i = 0; i < t->n; i++)
    if (t->slots[i].pinned) {
      tarn_ref_unpin(t->slots[i].ref);
      t->slots[i].pinned = false;
    }
}

/* Unpins what pin_all pinned for a task that will not run now: a slot
 * pinned only for writing holds nothing yet, and its bytes are given back
 * (tarn__ref_unpin_unwritten) rather than left as dirty data to write out
 * at eviction. */
static void unpin_unrun(tarn_task *t) {
  for (size_t i = 0; i < t->n; i++) {
    struct slot *s = &t->slots[i];
    if (!s->pinned) continue;
    if (s->mode == TARN_WRITE)
      tarn__ref_unpin_unwritten(s->ref);
    else
      tarn_ref_unpin(s->ref);
    s->pinned = false;
  }
}

/* Pins a task's data without waiting: what it reads first, then what it
 * only writes, whose pin takes fresh room (evicting, maybe, what a read
 * needs next) and has nothing to read. Returns 0 or the first failure. */
static int pin_all(tarn_task *t) {
  bool outputs = false;
  for (int pass = 0; pass < 1 + outputs; pass++)
    for (size_t i = 0; i < t->n; i++) {
      struct slot *s = &t->slots[i];
      if (s->pinned || s->unpinned) continue;
      if (pass == 0 && s->mode == TARN_WRITE) {
        outputs = true; /* the second pass's */
        continue;
      }
      int rc = tarn_ref_pin(s->ref, s->mode, 0, &s->data);
      if (rc != 0) return rc;
      s->pinned = true;
    }
  return 0;
}

/* Whether a worker other than `self` is pinning for or running a task. */
static bool others_active(const struct worker *self) {
  tarn_rt *rt = self->rt;
  for (unsigned i = 0; i <= rt->nworkers; i++) /* the guest too */
    if (&rt->workers[i] != self && atomic_load(&rt->workers[i].active))
      return true;
  return false;
}

/* Under a memory limit, holds `t` back until memory frees (without one,
 * acquire_data fails the task instead). Returns true when held, false when
 * no other worker is active and no other task has its turn, so that
 * nothing would retry it (the caller then tries alone). Held behind a
 * turn even with every worker idle: trying alone meanwhile, a new task
 * pushed out the input the turn's task had read (a worker between a
 * task's end and the turn's task looks idle). held_count is stored before
 * `active` is cleared and the others are read here, and the reverse in
 * task_done (all seq_cst): one of the two sides sees the other; a task's end
 * that sees the count waits for the lock, and finds `t` in line.
 *
 * A task that had its turn (retry_held) goes first again, so that it
 * retries next, while the inputs it read are likely still in memory; a
 * new one goes last. */
static bool hold(struct worker *w, tarn_task *t) {
  tarn_rt *rt = w->rt;
  pthread_mutex_lock(&rt->held_lock);
  atomic_fetch_add(&rt->held_count, 1);
  atomic_fetch_add(&rt->leaves, 1);
  atomic_store(&w->active, false);
  /* Another task's turn: it passes the turn on (or ends) whatever runs. */
  bool turn_out = !t->turn && atomic_load(&rt->turns) > 0;
  if (!turn_out && !others_active(w)) {
    atomic_fetch_sub(&rt->held_count, 1);
    atomic_store(&w->active, true);
    pthread_mutex_unlock(&rt->held_lock);
    return false;
  }
  if (t->turn) { /* first */
    t->left = rt->held;
    rt->held = t;
    if (rt->held_tail == NULL) rt->held_tail = t;
    t->turn = false; /* over: the next is given at a task's end */
    atomic_store(&rt->turns, 0);
  } else { /* last */
    t->left = NULL;
    if (rt->held_tail != NULL)
      rt->held_tail->left = t;
    else
      rt->held = t;
    rt->held_tail = t;
  }
  atomic_fetch_add_explicit(&rt->held_back, 1, memory_order_relaxed);
  pthread_mutex_unlock(&rt->held_lock);
  return true;
}

static int pin_data(struct worker *w, tarn_task *t);

/* Whether pinning `t`'s data may need room: some of it is not resident
 * (a hint, read without the pool's lock). */
static bool needs_room(const tarn_task *t) {
  for (size_t i = 0; i < t->n; i++) {
    const struct slot *s = &t->slots[i];
    if (!s->pinned && !s->unpinned && !tarn__ref_resident_hint(s->ref))
      return true;
  }
  return false;
}

/* Under a memory limit, raises the peak of what one task pinned (the
 * charges of its pinned refs) to t's. */
static void note_pinned(tarn_rt *rt, const tarn_task *t) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->slots[i].pinned) bytes += tarn__ref_charge(t->slots[i].ref);
  uint64_t seen =
      atomic_load_explicit(&rt->task_pinned_peak, memory_order_relaxed);
  while (bytes > seen && !atomic_compare_exchange_weak_explicit(
                             &rt->task_pinned_peak, &seen, bytes,
                             memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* Pins a task's data; the worker is active from here on. Returns 0, a
 * status that fails the task, or 1 when the task was held back. */
static int acquire_data(struct worker *w, tarn_task *t) {
  /* seq_cst only where tasks may be held back (see hold). */
  atomic_store_explicit(
      &w->active, true,
      w->rt->may_spill ? memory_order_seq_cst : memory_order_relaxed);
  /* While tasks wait for memory, one that needs room waits behind them
   * (retry_held lets them go in turn): trying too, it would push out the
   * inputs they pinned and let go, and fail as they did. */
  tarn_rt *rt = w->rt;
  if (rt->may_spill && !t->turn && in_line(rt) && needs_room(t) && hold(w, t))
    return 1;
  int rc = pin_data(w, t);
  if (rc == 0 && rt->may_spill) note_pinned(rt, t);
  if (rc == 1 || !t->turn) return rc; /* held back, or never waited */
  end_turn(rt, t);
  /* Through after waiting: the next in line may fit too. */
  if (rc == 0) retry_held(rt);
  return rc;
}

/* acquire_data's tries. */
static int pin_data(struct worker *w, tarn_task *t) {
  for (;;) {
    int rc = pin_all(t);
    if (rc != TARN_ENOMEM) return rc;
    unpin_unrun(t);
    /* Without a limit the heap itself is out of memory: no task's end is
     * sure to make room, and two workers retrying while each sees the
     * other active would never stop. The task fails. */
    if (!w->rt->may_spill) return TARN_ENOMEM;
    if (hold(w, t)) return 1;
    /* No other task was active, so every other task's data was unpinned:
     * one more try. */
    uint64_t leaves = atomic_load(&w->rt->leaves);
    uint64_t reads = tarn__pool_reads_ended(w->rt->pool);
    rc = pin_all(t);
    if (rc != TARN_ENOMEM) return rc;
    unpin_unrun(t);
    /* Another worker (or the guest) may have begun pinning meanwhile and
     * held part of the room when this tried: it will retry the held tasks
     * when it ends, so hold this one back again; if it ended, or let go
     * of its pins and was held back, already, try again (`leaves` counts
     * before the active set is left, so one of the two is seen). An
     * object being read back (a prefetch) holds room that can be taken
     * once it is in: wait for any such read, and try again if one ended
     * since this try began. Alone all along, with nothing in flight, the
     * task does not fit and fails. */
    if (!others_active(w) && atomic_load(&w->rt->leaves) == leaves &&
        !tarn__pool_reads_settle(w->rt->pool, reads))
      return TARN_ENOMEM;
  }
}

/* The worker leaves the active set: the room its task held may fit the
 * task held back longest (retry_held). */
static void task_done(struct worker *w) {
  if (!w->rt->may_spill) {
    atomic_store_explicit(&w->active, false, memory_order_relaxed);
    return;
  }
  atomic_fetch_add(&w->rt->leaves, 1); /* before `active` is cleared */
  atomic_store(&w->active, false);
  retry_held(w->rt);
}

static void add_relaxed(_Atomic uint64_t *c, uint64_t v) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                        memory_order_relaxed);
}

/* Asks for the lines of `t`'s first successor that finish() and run()
 * will touch, while `t` runs: the submitter wrote them on another core,
 * and recycled tasks lie in no order the hardware prefetcher could follow.
 * The successor's address is guessed from its edge (its first in-edge, as
 * in a chain); a wrong guess costs nothing but the hint. */
static void prefetch_successor(const tarn_task *t) {
  const struct edge *e =
      atomic_load_explicit(&t->successors, memory_order_relaxed);
  if (e == NULL || e == CLOSED) return;
  tarn__prefetch_write(e);
  prefetch_task(
      (const tarn_task *)((const char *)e - offsetof(tarn_task, in_edges)));
}

/* Successor edges of a running task that prefetch_ahead looks at, at
 * most: a task with many successors (a broadcast) costs no more. */
#define AHEAD_EDGES 16

/* Under a memory limit, while `t` runs: the spilled data read by the
 * successors that wait for `t` alone (pending 1: `t` is their last
 * predecessor) starts coming back, so that it is there when `t` ends and
 * they become ready. Only push() would ask otherwise, when a successor is
 * readied, which for a chain of tasks (the k-loop of a tile of a product,
 * a Cholesky's updates of one tile) leaves the read no time to overlap
 * anything: the next task runs at once on this worker and waits for it.
 * The successors stay alive while `t` runs (they wait for it), and their
 * slots were written before their edges were published (add_edge's
 * compare-and-swap, this load's acquire). */
static void prefetch_ahead(tarn_rt *rt, tarn_task *t) {
  const struct edge *e =
      atomic_load_explicit(&t->successors, memory_order_acquire);
  for (int k = 0; k < AHEAD_EDGES && e != NULL && e != CLOSED;
       k++, e = edge_next(e)) {
    const tarn_task *s = edge_task(e);
    if (atomic_load_explicit(&s->pending, memory_order_relaxed) == 1)
      prefetch_reads(rt, s);
  }
}

/* Whether a worker's task number `ran` (from 0) is timed for its recent
 * mean: one in RECENT_SAMPLE_EVERY (a power of two), the first included,
 * at gaps of 5, 8 or 13 rather than every 8th (the numbers whose multiple
 * of the golden ratio, modulo 1, falls under 1/8), so that a workload
 * with a long task every 8 is not sampled at the same place each time. */
static bool recent_sample(uint64_t ran) {
  return ran * UINT64_C(0x9E3779B97F4A7C15) <
         UINT64_MAX / RECENT_SAMPLE_EVERY + 1;
}

/* Runs `t` on `w`; returns the successor to run next, or NULL (see
 * finish). A task whose region was cancelled ends as one cancelled by a
 * failed predecessor does (rule 4 of rt.h). */
static tarn_task *run(struct worker *w, tarn_task *t) {
  tarn_task *next = NULL;
  if (task_stopped(t)) {
    if (t->turn) { /* its turn, now over: the next one's */
      end_turn(t->rt, t);
      retry_held(t->rt);
    }
    finish(w, t, TARN_ECANCELED, false, &next);
    return next;
  }
  uint64_t t0 = tarn__clock_coarse_ns();
  int rc = acquire_data(w, t);
  uint64_t t1 = tarn__clock_coarse_ns();
  add_relaxed(&w->wait_ns, t1 - t0);
  if (rc == 1) return NULL; /* held back */
  if (rc != 0) {
    unpin_all(t);
    finish(w, t, rc, false, &next);
    task_done(w);
    return next;
  }
  prefetch_successor(t);
  if (w->rt->may_spill) prefetch_ahead(w->rt, t);
  tarn_mark mark;
  bool marked = tarn_slab_mark(w->scratch, &mark) == 0;
  /* The recent mean (tasks_short) times one task in RECENT_SAMPLE_EVERY,
   * from the first, in precise ticks. The coarse clock that times the
   * rest reads 0 or a whole tick (4 ms here) for a short task: right as a
   * sum over many tasks, but a running mean of it fell towards zero
   * between the tasks that spanned a tick, and the guest took tasks of 75
   * to 200 us beside busy workers. Ticks for every task cost the
   * one-worker chain of `tarn bench rt` 0.04 us a task (docs/rt.md). */
  uint64_t ran = atomic_load_explicit(&w->run, memory_order_relaxed);
  bool sample = recent_sample(ran);
  uint64_t s0 = sample ? tarn__ticks() : 0;
  current_task = t;
  rc = t->fn(t, t->arg);
  current_task = NULL;
  if (sample) {
    uint64_t took = tarn__ticks() - s0;
    uint64_t recent =
        atomic_load_explicit(&w->recent_ticks, memory_order_relaxed);
    atomic_store_explicit(&w->recent_ticks, recent - recent / 8 + took / 8,
                          memory_order_relaxed);
  }
  if (marked) tarn_slab_unmark(w->scratch, &mark);
  add_relaxed(&w->run_ns, tarn__clock_coarse_ns() - t1);
  /* Release: a snapshot that sees this count sees the task's submission
   * counted (tarn_rt_stats_get). */
  atomic_store_explicit(&w->run, ran + 1, memory_order_release);
  unpin_all(t);
  finish(w, t, rc, true, &next);
  task_done(w);
  return next;
}

/* ---- sharing a task's work ----------------------------------------------
 */

/* Claims the next range of `h` for worker `w`: its index into *chunk,
 * or false when none is left. Workers pinned to processors then get the
 * same part of a shared tile each time it is shared (with two: worker 0
 * the first half, worker 1 the second), which stays in that processor's
 * cache between the tasks (the N=256 radius-1 stencils took 1 to 8 % less
 * time in six alternating runs). The guest, whose thread is not pinned,
 * claims from the side of the worker pinned to the processor it shares
 * the work from (rt->guest_cpu, read when it posted the work): the two
 * share that processor and its cache, and the worker on the other
 * processor takes the other side. */
static bool help_claim(struct help *h, const struct worker *w, size_t *chunk) {
  bool back = (w->index & 1) != 0;
  if (w->guest && w->rt->pinned) { /* the side of the worker it shares with */
    int cpu = atomic_load_explicit(&w->rt->guest_cpu, memory_order_relaxed);
    if (cpu >= 0 && cpu < (int)sizeof w->rt->cpu_side)
      back = w->rt->cpu_side[cpu] != 0;
  }
  uint64_t seen = atomic_load_explicit(&h->claimed, memory_order_relaxed);
  for (;;) {
    uint64_t front = seen & UINT32_MAX, from_back = seen >> 32;
    if (front + from_back >= h->nchunks) return false;
    uint64_t next = back ? seen + ((uint64_t)1 << 32) : seen + 1;
    if (atomic_compare_exchange_weak_explicit(&h->claimed, &seen, next,
                                              memory_order_relaxed,
                                              memory_order_relaxed)) {
      *chunk = back ? h->nchunks - 1 - (size_t)from_back : (size_t)front;
      return true;
    }
  }
}

/* Runs ranges of `h` on worker `w` until none is left. Returns how long
 * the longest of them took, in ticks (0 when it ran none). */
static uint64_t help_run(struct help *h, const struct worker *w) {
  size_t k;
  uint64_t longest = 0;
  tarn_task *outer = ranging_task;
  ranging_task = h->task;
  while (help_claim(h, w, &k)) {
    size_t begin = k * h->chunk;
    size_t end = h->count - begin > h->chunk ? begin + h->chunk : h->count;
    uint64_t t0 = tarn__ticks();
    int rc = h->body(h->arg, begin, end);
    uint64_t took = tarn__ticks() - t0;
    if (took > longest) longest = took;
    if (rc != 0) {
      int zero = 0;
      atomic_compare_exchange_strong(&h->error, &zero, rc);
    }
  }
  ranging_task = outer;
  return longest;
}

/* Whether some worker shares work now. */
static bool help_wanted(const tarn_rt *rt) {
  for (unsigned i = 0; i <= rt->nworkers; i++) /* the guest too */
    if (atomic_load(&rt->workers[i].help) != NULL) return true;
  return false;
}

/* Whether `self` is pinned to the processor the guest shares work from:
 * helping there would put two threads computing on one processor, and
 * the kernel then runs one of them only at its next tick. Regions of one
 * shared 256 x 256 fill took 4 or 8 ms instead of 5 us about once in 1600
 * (the mean 7.4 to 8.2 us a region against a median of 5.1; a program
 * outside the repository, 2026-12-01) while such a worker helped; with it
 * left out, none took over 65 us in 10000, for a mean of 5.0. */
static bool beside_guest(const struct worker *self, const struct worker *v) {
  return v->guest && self->cpu >= 0 &&
         atomic_load_explicit(&self->rt->guest_cpu, memory_order_relaxed) ==
             self->cpu;
}

/* An idle worker joins the first shared work it finds, unless it would
 * compete with the guest for its processor (beside_guest). Returns
 * whether it ran any. */
static bool help_others(struct worker *self) {
  tarn_rt *rt = self->rt;
  unsigned slots = rt->nworkers + 1; /* the guest too */
  for (unsigned k = 1; k < slots; k++) {
    struct worker *v = &rt->workers[(self->index + k) % slots];
    if (atomic_load_explicit(&v->help, memory_order_relaxed) == NULL ||
        beside_guest(self, v))
      continue;
    atomic_fetch_add(&v->help_users, 1);
    struct help *h = atomic_load(&v->help);
    if (h != NULL) {
      atomic_store_explicit(&self->idle, false, memory_order_relaxed);
      help_run(h, self);
      atomic_store_explicit(&self->idle, true, memory_order_relaxed);
    }
    atomic_fetch_sub(&v->help_users, 1);
    if (h != NULL) return true;
  }
  return false;
}

/* Whether a worker other than `self` is looking for work or asleep (a
 * worker between two of its tasks is not). */
static bool others_idle(const struct worker *self) {
  tarn_rt *rt = self->rt;
  for (unsigned i = 0; i < rt->nworkers; i++)
    if (&rt->workers[i] != self &&
        atomic_load_explicit(&rt->workers[i].idle, memory_order_relaxed))
      return true;
  return false;
}

/* tarn_task_parallel_for, and with `lead` (tarn__task_parallel_for_lead)
 * lead(lead_arg) on this thread once the ranges are offered. */
static int share_work(tarn_task *t, size_t count, size_t grain,
                      tarn_range_fn body, void *arg, int (*lead)(void *),
                      void *lead_arg) {
  if (body == NULL || grain == 0) return TARN_EINVAL;
  if (t == NULL || (t != current_task && t != ranging_task))
    return TARN_EMISUSE;
  struct worker *w = current_worker;
  int lead_rc = 0;
  /* Alone, too little work, already sharing (a body that splits again,
   * here or on a helper), or nobody idle: one call (after the lead). */
  if (count == 0 || t == ranging_task || (w->rt->nworkers < 2 && !w->guest) ||
      count / grain < 2 ||
      atomic_load_explicit(&w->help, memory_order_relaxed) != NULL ||
      !others_idle(w)) {
    if (lead != NULL) lead_rc = lead(lead_arg);
    int rc = count == 0 ? 0 : body(arg, 0, count);
    return lead_rc != 0 ? lead_rc : rc;
  }
  /* For the waiter of a region of one task (lone_worthwhile). */
  atomic_store_explicit(&t->region->shared, true, memory_order_relaxed);
  /* Ranges of at least `grain`, about two per worker, so that a helper
   * that arrives late still finds one. */
  size_t parts = 2 * (size_t)w->rt->nworkers;
  /* rounded up without count + parts - 1, which wraps for a count near
   * SIZE_MAX (the ranges then covered nothing, or ran one item each) */
  size_t chunk = count / parts + (count % parts != 0);
  if (chunk < grain) chunk = grain;
  struct help h = {.task = t,
                   .body = body,
                   .arg = arg,
                   .count = count,
                   .chunk = chunk,
                   .nchunks = count / chunk + (count % chunk != 0)};
  atomic_init(&h.claimed, 0);
  atomic_init(&h.error, 0);
  if (w->guest) /* before `help`, which publishes it (help_claim,
                   beside_guest) */
    atomic_store_explicit(&w->rt->guest_cpu, sched_getcpu(),
                          memory_order_relaxed);
  atomic_store(&w->help, &h);
  wake(w->rt);
  if (lead != NULL) lead_rc = lead(lead_arg);
  uint64_t longest = help_run(&h, w);
  atomic_store(&w->help, NULL);
  /* Helpers that saw `h` finish their range before they uncount. A
   * helper's last range began at most one range ago: spin (without
   * giving up the processor) for twice the longest range this thread ran,
   * at most HELP_SPIN_MAX_NS, then yield. Yielding at once handed the
   * processor to the idle worker pinned beside the guest, and the kernel
   * gave it back only microseconds later: a region of one shared 256 x 256
   * tarn_matrix_gemv took 11 to 14 us instead of 6 to 7 in about half the
   * runs of a program outside the repository (those where the program's
   * thread ran on the first processor), the guest waiting 5.7 to 7.4 us
   * for a helper that ended 2.5 us after it. */
  uint64_t spin = 2 * longest;
  if (spin > w->rt->help_spin_max_ticks) spin = w->rt->help_spin_max_ticks;
  uint64_t spin_from = tarn__ticks();
  for (unsigned n = 0; atomic_load(&w->help_users) != 0; n++)
    if (n < 64 || tarn__ticks() - spin_from < spin)
      cpu_relax();
    else
      sched_yield();
  return lead_rc != 0 ? lead_rc : atomic_load(&h.error);
}

int tarn_task_parallel_for(tarn_task *t, size_t count, size_t grain,
                           tarn_range_fn body, void *arg) {
  return share_work(t, count, grain, body, arg, NULL, NULL);
}

bool tarn__task_alone(tarn_task *t) {
  if (t == NULL || t != current_task) return false;
  const struct worker *self = current_worker;
  const tarn_rt *rt = self->rt;
  for (unsigned i = 0; i < rt->nworkers; i++)
    if (&rt->workers[i] != self &&
        !atomic_load_explicit(&rt->workers[i].idle, memory_order_relaxed))
      return false;
  return self->guest ||
         !atomic_load_explicit(&rt->guest_busy, memory_order_relaxed);
}

bool tarn__task_far(tarn_task *t) {
  if (t == NULL) return false;
  int state = atomic_load_explicit(&t->rt->cores_far, memory_order_relaxed);
  return state == CORES_FAR || state == CORES_SET_FAR;
}

unsigned tarn__rt_round_trip_ns(tarn_rt *rt) {
  return atomic_load_explicit(&rt->round_trip_ns, memory_order_relaxed);
}

void tarn__rt_cores_far_set(tarn_rt *rt, int far) {
  atomic_store(&rt->cores_far, far < 0    ? CORES_NEAR
                               : far == 0 ? CORES_SET_NEAR
                                          : CORES_SET_FAR);
}

bool tarn__task_last(tarn_task *t) {
  if (t == NULL || t != current_task) return false;
  tarn_region *r = t->region;
  /* `submitted` lies on the submitters' line: read once per call, by the
   * shared kernels only, after the cheaper test */
  return r != &t->rt->root &&
         atomic_load_explicit(&r->waiting, memory_order_relaxed) &&
         atomic_load_explicit(&r->submitted, memory_order_relaxed) -
                 atomic_load_explicit(&r->finished, memory_order_relaxed) ==
             1;
}

int tarn__task_parallel_for_lead(tarn_task *t, size_t count, size_t grain,
                                 tarn_range_fn body, void *arg,
                                 int (*lead)(void *), void *lead_arg) {
  if (lead == NULL) return TARN_EINVAL;
  return share_work(t, count, grain, body, arg, lead, lead_arg);
}

/* A task for idle worker `w`: from the queues, else one held for its
 * waiter too long (hold_for_waiter). */
static tarn_task *take_or_lone(struct worker *w) {
  tarn_task *t = take(w, false);
  return t != NULL ? t : lone_take(w->rt, true);
}

/* Gives back the chunks of spare task structs beyond SPARE_KEEP: the
 * runtime keeps the structs of ended tasks for reuse, as many as were
 * ever in flight, which after a burst of 180000 tasks queued at once held
 * 90 MB (capping them as tasks end instead cost the chain and
 * random-graph rows 5 to 8 %). The spare list is taken whole, so that
 * submitters meanwhile carve fresh slots rather than wait; each chunk's
 * spare slots are counted, and a chunk (not the first: it is being
 * carved) whose every carved slot is in the list is unmapped, its tasks
 * dropped from the list, while more than SPARE_KEEP remain. Slots in
 * flight, in a worker's own list or freed since keep their chunk. One
 * thread at a time (guest_busy). */
static void spare_trim(tarn_rt *rt) {
  spin_lock(&rt->spare_lock);
  if (rt->nspare <= SPARE_KEEP) {
    spin_unlock(&rt->spare_lock);
    return;
  }
  tarn_task *list = rt->spare;
  size_t n = rt->nspare;
  rt->spare = NULL;
  rt->nspare = 0;
  struct task_chunk *first = rt->chunks;
  spin_unlock(&rt->spare_lock);
  /* Chunks after `first` are linked only by this thread (prepending
   * changes nothing after it). */
  for (struct task_chunk *c = first; c != NULL; c = c->next) c->spare = 0;
  for (tarn_task *t = list; t != NULL; t = t->left) chunk_of(t)->spare++;
  size_t kept = n;
  for (struct task_chunk *c = first->next; c != NULL; c = c->next)
    if (c->spare == c->carved && kept - c->carved >= SPARE_KEEP) {
      kept -= c->carved;
      c->spare = SIZE_MAX; /* going */
    }
  /* The list without the going chunks' tasks. */
  tarn_task *head = NULL, *tail = NULL;
  for (tarn_task *t = list, *next; t != NULL; t = next) {
    next = t->left;
    if (chunk_of(t)->spare == SIZE_MAX) continue;
    t->left = NULL;
    if (tail == NULL)
      head = t;
    else
      tail->left = t;
    tail = t;
  }
  struct task_chunk *going = NULL;
  spin_lock(&rt->spare_lock);
  if (tail != NULL) {
    tail->left = rt->spare;
    rt->spare = head;
    rt->nspare += kept;
  }
  for (struct task_chunk **at = &first->next; *at != NULL;) {
    struct task_chunk *c = *at;
    if (c->spare != SIZE_MAX) {
      at = &c->next;
      continue;
    }
    *at = c->next;
    c->next = going;
    going = c;
  }
  spin_unlock(&rt->spare_lock);
  while (going != NULL) {
    struct task_chunk *next = going->next;
    tarn__vm_unreserve(going, TASK_CHUNK_BYTES);
    going = next;
  }
}

/* Unmaps every chunk of task structs (the runtime's end). */
static void chunks_free(tarn_rt *rt) {
  while (rt->chunks != NULL) {
    struct task_chunk *next = rt->chunks->next;
    tarn__vm_unreserve(rt->chunks, TASK_CHUNK_BYTES);
    rt->chunks = next;
  }
}

/* Gives back what the work left, once a worker has slept for the
 * rest's wait (rt->rest_wait_ns): the scratch pages above what is retained, the
 * worker's own and, when no thread is the guest (its slab is used only
 * while guest_busy is held), the guest's, the chunks of spare task
 * structs, the pool's cache of freed buffers, the spill file's free space
 * and the heap's free pages. So a burst of large
 * scratch (LU's panels: 16 MiB each at N=4096) does not stay resident,
 * outside the memory limit, once the work is done, while short idle
 * spells inside a job (waiting for a panel) do not give back pages the
 * next task faults in again. */
static void give_back_at_rest(struct worker *w) {
  tarn_slab_trim(w->scratch);
  tarn_rt *rt = w->rt;
  if (atomic_load(&rt->guest_busy) || atomic_exchange(&rt->guest_busy, true))
    return;
  tarn_slab_trim(rt->workers[rt->nworkers].scratch);
  spare_trim(rt);
  /* The pool's cache of freed buffers, and the spill file's free extents
   * (on tmpfs, memory too): before the heap's trim, since the cached
   * buffers under 2 MiB go back to the heap. */
  tarn__pool_trim(rt->pool);
  /* And the heap's free pages (one worker per rest: the one that took the
   * guest's slot): ref handles and buffers of 68 KiB to 2 MiB come from
   * the heap, whose free memory glibc keeps otherwise.
   * Two matrices of 8192 x 8192 in tiles of 100, made, summed and
   * destroyed, left 917 MiB of RSS; 285 MiB once trimmed while the pool
   * kept its cache (256 MiB), 6 MiB now. Only when tarn freed 1 MiB or
   * more to the heap since the last trim (tarn__heap_trim). */
  (void)tarn__heap_trim();
  atomic_store(&rt->guest_busy, false);
}

/* Off only in tests (tarn__rt_rests_adapt). */
static atomic_bool rests_adapt = true;

void tarn__rt_rests_adapt(bool on) {
  atomic_store_explicit(&rests_adapt, on, memory_order_relaxed);
}

uint64_t tarn__rt_rest_wait_ns(tarn_rt *rt) {
  return atomic_load_explicit(&rt->rest_wait_ns, memory_order_relaxed);
}

/* Called by a worker that gave back at rest and was then woken for work
 * (whether it or another thread runs it): adapts
 * the wait before the next rest's first give-back to how soon the program
 * came back after this one's (once per rest: the first such worker). A
 * program that works in bursts a little further apart than the wait
 * faulted back in, at every burst, all that the rest gave back: the pool's
 * cache of freed buffers, the heap's pages, scratch. A copy and an LU of
 * 1024 x 1024 in tiles of 128 every 30 ms took 26.4 ms each (2123 page
 * faults, about 13 us each on this machine) with a fixed wait of 20 ms,
 * against 12.4 ms (108) never giving back; now 12.7 (docs/rt.md, "What a
 * rest gives back"). The wait grows until such bursts no longer see a
 * give-back, and shrinks again for a program that stays away longer. */
static void rest_adapt(tarn_rt *rt) {
  uint64_t at =
      atomic_exchange_explicit(&rt->gave_back_at, 0, memory_order_relaxed);
  if (at == 0 || !atomic_load_explicit(&rests_adapt, memory_order_relaxed))
    return;
  uint64_t away = tarn__clock_ns() - at;
  uint64_t wait = atomic_load_explicit(&rt->rest_wait_ns, memory_order_relaxed);
  uint64_t most =
      rt->idle_trim_ns > REST_WAIT_MAX_NS ? rt->idle_trim_ns : REST_WAIT_MAX_NS;
  if (away / REST_SOON < wait)
    wait = wait < most / 2 ? wait * 2 : most;
  else
    wait = wait / 2 > rt->idle_trim_ns ? wait / 2 : rt->idle_trim_ns;
  atomic_store_explicit(&rt->rest_wait_ns, wait, memory_order_relaxed);
}

/* Sleeps until a push signals, unless a last look finds a task; with a
 * nonzero `until` (tarn__clock_ns), at most until then, and *timed_out
 * tells whether it woke for that. */
static tarn_task *sleep_or_take(struct worker *w, uint64_t until,
                                bool *timed_out) {
  tarn_rt *rt = w->rt;
  *timed_out = false;
  pthread_mutex_lock(&rt->idle_lock);
  atomic_fetch_add(&rt->sleepers, 1);
  tarn_task *t = take(w, true);
  if (t == NULL) t = lone_take(rt, false); /* not left there asleep */
  uint64_t seen = rt->wakeups;
  struct timespec deadline = {(time_t)(until / 1000000000u),
                              (long)(until % 1000000000u)};
  while (t == NULL && rt->wakeups == seen && !atomic_load(&rt->stopping) &&
         !help_wanted(rt)) {
    if (until == 0) {
      pthread_cond_wait(&rt->idle, &rt->idle_lock);
    } else if (pthread_cond_timedwait(&rt->idle, &rt->idle_lock, &deadline) ==
               ETIMEDOUT) {
      *timed_out = true;
      break;
    }
  }
  atomic_fetch_sub(&rt->sleepers, 1);
  pthread_mutex_unlock(&rt->idle_lock);
  return t;
}

/* rt->ball from `from` to `to` if it is `from`; whether it was. */
static bool ball_pass(tarn_rt *rt, int from, int to) {
  return atomic_compare_exchange_strong(&rt->ball, &from, to);
}

/* Spins until rt->ball is `value` (true) or ROUND_TRIP_WAIT_NS pass
 * (false), reading the clock once every 256 looks. */
static bool ball_wait(tarn_rt *rt, int value) {
  uint64_t from = tarn__clock_ns();
  for (unsigned n = 1;; n++) {
    if (atomic_load_explicit(&rt->ball, memory_order_acquire) == value)
      return true;
    if (n % 256 == 0 && tarn__clock_ns() - from > ROUND_TRIP_WAIT_NS)
      return false;
    cpu_relax();
  }
}

/* The middle one of v[0], v[1], v[2]. */
static uint32_t median_of_three(const uint32_t v[3]) {
  uint32_t lo = v[0] < v[1] ? v[0] : v[1], hi = v[0] < v[1] ? v[1] : v[0];
  return v[2] < lo ? lo : v[2] > hi ? hi : v[2];
}

/* The round trip of one cache line between workers 0 and 1, for
 * tarn__task_far: on a virtual machine the host moves its processors,
 * and on the 2-vCPU AMD EPYC of 2026-12-07 the trip took 55 to 96 ns in
 * some minutes and 325 to 410 in others, while /sys said one L3 cache for
 * both throughout (docs/rt.md, "Cores far apart"). Worker 0, looking for
 * work, asks, and worker 1 answers from its own idle loop
 * (answer_round_trip); without an answer within ROUND_TRIP_WAIT_NS
 * (worker 1 asleep, or busy) worker 0 takes the ball back and asks again
 * at its next turn (below). A throw not sent back within that time
 * (worker 1 preempted) ends the timing, unrecorded. Each change of the
 * ball is a compare-and-swap by the one whose turn it is, so a ball taken
 * back is never answered, nor an answered one taken back. A task readied
 * meanwhile waits for the trips (64 of 400 ns). */
static void time_round_trip(struct worker *w) {
  tarn_rt *rt = w->rt;
  if (w->index != 0 || !rt->round_trip_pair) return; /* before the clock */
  uint64_t now = tarn__clock_ns();
  /* Until the first figure, often: on a loaded machine most asks go
   * unanswered (worker 1, yielding between its looks, waits out another
   * thread's time slice), and at one ask in 100 ms the two timings of a
   * first figure took over 20 s beside two CPU hogs (docs/rt.md). Not
   * for ever: an ask waits up to ROUND_TRIP_WAIT_NS for a worker 1 that
   * may be asleep (its `idle` says so too). */
  uint64_t every =
      atomic_load_explicit(&rt->round_trip_ns, memory_order_relaxed) == 0 &&
              rt->round_trip_asks < ROUND_TRIP_FIRST_ASKS
          ? ROUND_TRIP_FIRST_EVERY_NS
          : ROUND_TRIP_EVERY_NS;
  if (now - rt->round_trip_at < every ||
      !atomic_load_explicit(&rt->workers[1].idle, memory_order_relaxed))
    return;
  rt->round_trip_at = now;
  if (rt->round_trip_asks < ROUND_TRIP_FIRST_ASKS) rt->round_trip_asks++;
  if (!ball_pass(rt, BALL_REST, BALL_ASKED)) return;
  if (!ball_wait(rt, BALL_BACK)) {
    if (ball_pass(rt, BALL_ASKED, BALL_REST)) return; /* no answer */
    /* else worker 1 answered just now */
  }
  uint64_t t0 = tarn__clock_ns();
  for (int i = 0; i < ROUND_TRIP_ROUNDS; i++) {
    atomic_store_explicit(&rt->ball, BALL_THROWN, memory_order_release);
    if (!ball_wait(rt, BALL_BACK) && ball_pass(rt, BALL_THROWN, BALL_REST))
      return; /* worker 1 stopped answering: it will not now */
  }
  uint64_t trip = (tarn__clock_ns() - t0) / ROUND_TRIP_ROUNDS;
  atomic_store_explicit(&rt->ball, BALL_REST, memory_order_release);
  rt->round_trips[rt->round_trip_next++ % ROUND_TRIP_KEPT] =
      trip > UINT32_MAX ? UINT32_MAX : (uint32_t)trip;
  uint32_t median = median_of_three(rt->round_trips);
  atomic_store_explicit(&rt->round_trip_ns, median, memory_order_relaxed);
  int state = atomic_load_explicit(&rt->cores_far, memory_order_relaxed);
  if (state == CORES_NEAR || state == CORES_FAR) /* not set: measured */
    atomic_compare_exchange_strong(
        &rt->cores_far, &state,
        median >= CORES_FAR_NS ? CORES_FAR : CORES_NEAR);
}

/* Worker 1's part of time_round_trip, when asked: the ball sent back
 * until worker 0 has thrown it ROUND_TRIP_ROUNDS times, or stops. */
static void answer_round_trip(struct worker *w) {
  tarn_rt *rt = w->rt;
  if (w->index != 1 ||
      atomic_load_explicit(&rt->ball, memory_order_relaxed) != BALL_ASKED ||
      !ball_pass(rt, BALL_ASKED, BALL_BACK))
    return;
  for (int i = 0; i < ROUND_TRIP_ROUNDS; i++)
    if (!ball_wait(rt, BALL_THROWN) || !ball_pass(rt, BALL_THROWN, BALL_BACK))
      return; /* taken back */
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  tarn_rt *rt = w->rt;
  current_worker = w;
  for (;;) {
    tarn_task *t = take_or_lone(w);
    /* Idle: look again for IDLE_SPIN_NS before going to sleep, yielding
     * the core between looks (the submitting thread may need it: the
     * workers are as many as the cores). Waking a sleeping thread costs
     * about 0.2 ms here, and work often comes back sooner. */
    uint64_t idle_since = t == NULL ? tarn__clock_ns() : 0;
    if (t == NULL) atomic_store_explicit(&w->idle, true, memory_order_relaxed);
    while (t == NULL && !atomic_load(&rt->stopping) &&
           tarn__clock_ns() - idle_since < IDLE_SPIN_NS) {
      if (help_others(w)) {
        idle_since = tarn__clock_ns();
      } else {
        time_round_trip(w);
        answer_round_trip(w);
        sched_yield();
      }
      t = take_or_lone(w);
    }
    /* Asleep: give back what the work left after the rest's wait (the
     * option's idle_trim_ns, adapted: rest_adapt), and again after twice
     * that wait each time, REST_REPEATS times, for what the program frees
     * meanwhile (a matrix destroyed while the first rest ran, which on a
     * slow machine left its spill space and heap pages until the next
     * work); then sleep until work comes. */
    uint64_t wait =
        atomic_load_explicit(&rt->rest_wait_ns, memory_order_relaxed);
    bool gave_back = false;
    for (int k = 0; t == NULL && !atomic_load(&rt->stopping); k++) {
      bool timed_out;
      uint64_t until =
          wait != 0 && k <= REST_REPEATS ? tarn__clock_ns() + wait : 0;
      t = sleep_or_take(w, until, &timed_out);
      if (t != NULL || !timed_out) { /* work came (or the end) */
        if (gave_back && !atomic_load(&rt->stopping)) rest_adapt(rt);
        break;
      }
      give_back_at_rest(w);
      if (!gave_back) { /* dates the rest, unless another worker did */
        uint64_t none = 0;
        atomic_compare_exchange_strong_explicit(
            &rt->gave_back_at, &none, tarn__clock_ns(), memory_order_relaxed,
            memory_order_relaxed);
        gave_back = true;
      }
      wait *= 2;
    }
    if (t != NULL) {
      atomic_store_explicit(&w->idle, false, memory_order_relaxed);
      while (t != NULL) t = run(w, t);
    } else if (atomic_load(&rt->stopping)) {
      break;
    }
  }
  return NULL;
}

/* ---- submitting -----------------------------------------------------------
 */

/* The task whose code runs on this thread now: a range of a task's
 * tarn_task_parallel_for run here as a helper, else the task run here;
 * NULL on a program thread. A helper's own current_task is not set (the
 * range is not its task), yet the range's body is that task's code. */
static tarn_task *task_here(void) {
  return ranging_task != NULL ? ranging_task : current_task;
}

/* The region a task submitted now belongs to. Task code (a task, or a
 * range of one on a helper) submits into its task's region, or into the
 * root of another runtime: never into the regions the thread running it
 * has open, for a program thread waiting for a region runs tasks of any
 * region and of other runtimes' tasks (until 2026-12-05 a task of one
 * runtime run there submitted to another runtime into that thread's
 * open region of it, cancelled with it, where on a worker the same
 * submission went to the root; and a range run there submitted into the
 * thread's region, not its task's). */
static tarn_region *region_now(tarn_rt *rt) {
  tarn_task *task = task_here();
  if (task != NULL) return task->rt == rt ? task->region : &rt->root;
  /* Else the thread's regions: on a worker or the guest, outside a task
   * (a task's arg_free, run as the task ends), only those that code
   * began, not the guest's program's (program_regions, NULL but on the
   * guest: then the root, as on a worker). */
  for (tarn_region *r = current_region; r != NULL && r != program_regions;
       r = r->parent)
    if (r->rt == rt) return r;
  return &rt->root;
}

/* A task of at most this many accesses matches them to its refs and
 * orders its refs by scans, quadratic in the count; beyond, by sorting
 * them once (sort_slots). By scans (until 2026-12-06) a task of 4160
 * accesses (an LU solve's factor of 64 x 64 tiles and B's tile column)
 * took about 5 ms to submit, and `tarn bench rt`'s task reading 1000 refs
 * 420 to 620 us against 68 to 79 by sorting. */
#define SCAN_MAX 32

/* An access's ref and its index among the accesses. */
struct keyed {
  uintptr_t ref;
  size_t index;
};

/* By ref address, then index. */
static int keyed_cmp(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->ref != y->ref) return x->ref < y->ref ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Whether dep is a valid access of a task of `rt`. */
static bool dep_valid(const tarn_rt *rt, const tarn_dep *dep) {
  tarn_access mode = dep->mode;
  return dep->ref != NULL &&
         (mode == TARN_AFTER ||
          (mode >= TARN_READ && mode <= TARN_READ_WRITE)) &&
         tarn__ref_pool(dep->ref) == rt->pool;
}

/* For a task of ndeps (> SCAN_MAX) accesses, by one sort of them by ref:
 * the slot of each access into slot_of (slots numbered in the order of
 * each ref's first access, as fill_slots' scan numbers them) and the
 * slots in their refs' address order into order. Returns 0, or
 * TARN_ENOMEM. */
static int sort_slots(const tarn_dep *deps, size_t ndeps, size_t *slot_of,
                      size_t *order) {
  struct keyed *by_ref = malloc(ndeps * sizeof *by_ref);
  if (by_ref == NULL) return TARN_ENOMEM;
  for (size_t i = 0; i < ndeps; i++)
    by_ref[i] = (struct keyed){(uintptr_t)deps[i].ref, i};
  qsort(by_ref, ndeps, sizeof *by_ref, keyed_cmp);
  /* slot_of[i]: first the index of the ref's first access (the first of
   * its run in by_ref); then, in the order of the accesses, a first access
   * takes the next slot, and any other the slot of its first. */
  for (size_t k = 0, first = 0; k < ndeps; k++) {
    if (by_ref[k].ref != by_ref[first].ref) first = k;
    slot_of[by_ref[k].index] = by_ref[first].index;
  }
  for (size_t i = 0, n = 0; i < ndeps; i++)
    slot_of[i] = slot_of[i] == i ? n++ : slot_of[slot_of[i]];
  for (size_t k = 0, n = 0; k < ndeps; k++)
    if (k == 0 || by_ref[k].ref != by_ref[k - 1].ref)
      order[n++] = slot_of[by_ref[k].index];
  free(by_ref);
  return 0;
}

/* Copies the accesses, one slot per ref with the modes merged, the slots
 * in the order of each ref's first access; and the slots in their refs'
 * address order into order (room for ndeps), the order in which track_all
 * locks them. */
static int fill_slots(tarn_task *t, const tarn_dep *deps, size_t ndeps,
                      size_t *order) {
  t->slots = t->inline_slots_;
  for (size_t i = 0; i < ndeps; i++)
    if (!dep_valid(t->rt, &deps[i])) return TARN_EINVAL;
  if (ndeps > inline_slots) {
    t->slots = malloc(ndeps * sizeof *t->slots);
    if (t->slots == NULL) return TARN_ENOMEM;
  }
  size_t *slot_of = NULL;
  if (ndeps > SCAN_MAX) {
    slot_of = malloc(ndeps * sizeof *slot_of);
    int rc =
        slot_of == NULL ? TARN_ENOMEM : sort_slots(deps, ndeps, slot_of, order);
    if (rc != 0) {
      free(slot_of);
      return rc;
    }
  }
  for (size_t i = 0; i < ndeps; i++) {
    bool after = deps[i].mode == TARN_AFTER;
    size_t k = 0;
    if (slot_of != NULL)
      k = slot_of[i];
    else
      while (k < t->n && t->slots[k].ref != deps[i].ref) k++;
    if (k == t->n)
      t->slots[t->n++] =
          (struct slot){.ref = deps[i].ref, .mode = 0, .unpinned = true};
    if (!after) t->slots[k].mode |= deps[i].mode;
    t->slots[k].unpinned &= after;
  }
  bool sorted = slot_of != NULL;
  free(slot_of);
  for (size_t i = 0; !sorted && i < t->n; i++) {
    size_t k = i; /* insertion sort by ref address */
    while (k > 0 &&
           (uintptr_t)t->slots[order[k - 1]].ref > (uintptr_t)t->slots[i].ref) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = i;
  }
  /* TARN_AFTER is ordered as a read is, where the task has no other
   * access to the ref; with one, that one decides (until 2026-12-05 the
   * read was added to it: TARN_AFTER with TARN_WRITE was a read-write,
   * cancelled after a failed writer and read back under a limit) */
  for (size_t k = 0; k < t->n; k++)
    if (t->slots[k].unpinned) t->slots[k].mode = TARN_READ;
  return 0;
}

/* Retains the refs of `t` whose writer's reference it will not take over
 * (states locked). Returns 0, or TARN_EINVAL for a dead ref, with every
 * reference it took given back. */
static int retain_own(tarn_task *t, struct ref_state **states) {
  for (size_t i = 0; i < t->n; i++) {
    struct slot *s = &t->slots[i];
    if (may_inherit(states[i], s->mode)) continue;
    if (tarn_ref_retain(s->ref) != 0) {
      for (size_t k = 0; k < i; k++)
        if (t->slots[k].held) {
          tarn_ref_release(t->slots[k].ref);
          t->slots[k].held = false;
        }
      return TARN_EINVAL;
    }
    s->held = true;
  }
  return 0;
}

/* Tracks every access of `t` while holding the states of all its refs,
 * locked in `order` (fill_slots': their refs' address order; until
 * 2026-12-06 the states' own addresses): concurrent submitters on shared
 * refs are then
 * ordered the same way on every ref (no cycle), and submitters on
 * different refs never wait for each other. Each slot ends up holding a
 * reference to its ref, its own or its writer's (track), and, when the
 * runtime counts uses, counted in the ref's demand and uses (count_use),
 * under the same locks. Returns 0; or
 * TARN_EINVAL (a dead ref) or TARN_ENOMEM with `t` in no ref's graph and
 * holding nothing (*tracked false); or TARN_ENOMEM half-way (*tracked
 * true: the slots that hold a reference say so). */
static int track_all(tarn_task *t, const size_t *order, bool *tracked) {
  *tracked = false;
  struct ref_state *st[inline_slots], **states = st;
  if (t->n > inline_slots) {
    states = malloc(t->n * sizeof *states);
    if (states == NULL) return TARN_ENOMEM;
  }
  int rc = 0;
  for (size_t i = 0; i < t->n && rc == 0; i++)
    if ((states[i] = state_of(t->slots[i].ref)) == NULL) rc = TARN_ENOMEM;
  if (rc == 0) {
    for (size_t k = 0; k < t->n; k++) spin_lock(&states[order[k]]->lock);
    rc = retain_own(t, states);
    *tracked = rc == 0;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
      struct slot *s = &t->slots[i];
      bool inherited = false;
      rc = track(t, states[i], (uint32_t)i, &inherited);
      if (inherited) s->held = true;
      /* Its writer ended before the edge was made: a reference of its
       * own after all (the caller holds one, so the ref is alive). */
      if (rc == 0 && !s->held)
        rc = tarn_ref_retain(s->ref) == 0 ? 0 : TARN_EINVAL;
      if (rc == 0)
        s->held = true;
      else if (states[i]->writer == t)
        states[i]->writer_lent = true; /* it has no reference to lend */
    }
    /* Counted before it can end: it waits for its submission's hold. Under
     * a memory limit, its refs count it as a future user too, so that
     * eviction takes refs no task will use before these, and those used
     * last before the others; also once the pool reads refs from a source
     * (an opened file's tiles), so that a read fills the neighbours tasks
     * will use (tarn__ref_fill_begin). Work in memory alone pays nothing
     * for it. */
    tarn_rt *rt = t->rt;
    if (rt->may_spill || tarn__pool_has_sources(rt->pool))
      for (size_t i = 0; i < t->n; i++)
        if (t->slots[i].held && !t->slots[i].unpinned)
          count_use(t, states[i], &t->slots[i]);
    for (size_t k = t->n; k-- > 0;) spin_unlock(&states[order[k]]->lock);
  }
  if (states != st) free(states);
  return rc;
}

static void throttle(tarn_region *r, uint64_t submitted);

static int submit_failed(const tarn_task_desc *d, int rc) {
  if (d != NULL && d->arg_free != NULL) d->arg_free(d->arg);
  return rc;
}

int tarn_task_submit(tarn_rt *rt, const tarn_task_desc *d) {
  if (d == NULL || d->fn == NULL || !rt_ok(rt) ||
      (d->ndeps > 0 && d->deps == NULL) || d->ndeps > UINT32_MAX)
    return submit_failed(d, TARN_EINVAL);
  if (atomic_load_explicit(&rt->lone, memory_order_relaxed) != NULL)
    release_held(rt);
  tarn_task *t = task_alloc(rt);
  if (t == NULL) return submit_failed(d, TARN_ENOMEM);
  memset(t, 0, offsetof(tarn_task, in_edges));
  t->rt = rt;
  t->fn = d->fn;
  t->arg = d->arg;
  t->arg_free = d->arg_free;
  t->priority = d->priority;
  t->name = d->name;
  /* The slots in their refs' address order: track_all's locking order. */
  size_t order_inline[SCAN_MAX], *order = order_inline;
  if (d->ndeps > SCAN_MAX) order = malloc(d->ndeps * sizeof *order);
  int rc =
      order == NULL ? TARN_ENOMEM : fill_slots(t, d->deps, d->ndeps, order);
  bool tracked = false;
  if (rc == 0) {
    atomic_init(&t->pending, 1);
    atomic_init(&t->refcount, 1);
    t->region = region_now(rt);
    t->seq = atomic_fetch_add_explicit(&rt->seq, 1, memory_order_relaxed);
    rc = track_all(t, order, &tracked);
  }
  if (order != order_inline) free(order);
  if (rc != 0 && !tracked) {
    task_free(t);
    return submit_failed(d, rc);
  }
  tarn_region *r = t->region;
  uint64_t submitted = atomic_fetch_add(&r->submitted, 1) + 1;
  if (submitted == 1 && r != &rt->root) r->first_ticks = tarn__ticks();
  atomic_fetch_add_explicit(&rt->submitted, 1, memory_order_relaxed);
  /* Failed half-way through tracking: the task is in the graph for some
   * refs, so it stays, cancelled (it and its dependants report
   * TARN_ECANCELED), and the caller gets the status. */
  if (rc != 0) atomic_store(&t->cancel, true);
  if (atomic_fetch_sub(&t->pending, 1) == 1) push(rt, t);
  /* never on a worker or the guest, in a task or not (a task's arg_free
   * submitting was held back on its worker, waiting for tasks only that
   * worker could run, until 2026-12-05) */
  if (submitted % THROTTLE_EVERY == 0 && rt->max_unfinished != 0 &&
      task_here() == NULL && current_worker == NULL)
    throttle(r, submitted);
  return rc;
}

int tarn_task_submit_items(tarn_rt *rt, tarn_task_fn fn,
                           const tarn_item *items) {
  if (items == NULL) return TARN_EINVAL;
  size_t n = 0, ndeps = 0;
  for (; items[n].tag != TARN__ITEM_END; n++)
    if (items[n].tag == TARN__ITEM_DEP) ndeps++;
  tarn_dep inline_deps[16];
  tarn_dep *deps = inline_deps;
  if (ndeps > 16 && (deps = malloc(ndeps * sizeof *deps)) == NULL)
    return TARN_ENOMEM;
  tarn_task_desc d = {fn, NULL, deps, 0, 0, NULL, NULL};
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    const tarn_item *it = &items[i];
    switch (it->tag) {
      case TARN__ITEM_DEP:
        deps[d.ndeps++] = (tarn_dep){it->ref, (tarn_access)it->value};
        break;
      case TARN__ITEM_ARG:
        d.arg = it->ptr;
        break;
      case TARN__ITEM_PRIORITY:
        d.priority = it->value;
        break;
      case TARN__ITEM_NAME:
        d.name = (const char *)it->ptr;
        break;
      default:
        rc = TARN_EINVAL;
        break;
    }
  }
  if (rc == 0) rc = tarn_task_submit(rt, &d);
  if (deps != inline_deps) free(deps);
  return rc;
}

/* ---- inside a task --------------------------------------------------------
 */

void *tarn_task_data(tarn_task *t, size_t i) {
  return t != NULL && i < t->n ? t->slots[i].data : NULL;
}

size_t tarn_task_size(tarn_task *t, size_t i) {
  return t != NULL && i < t->n ? tarn_ref_size(t->slots[i].ref) : 0;
}

int tarn_task_scratch(tarn_task *t, size_t size, size_t align, void **out) {
  /* A task runs on the thread that calls this, its worker's. */
  if (t == NULL || t != current_task) return TARN_EINVAL;
  return tarn_slab_alloc(current_worker->scratch, size, align, out);
}

tarn_rt *tarn_task_rt(tarn_task *t) { return t != NULL ? t->rt : NULL; }

int tarn_task_cancelled(const tarn_task *t) {
  return t != NULL && region_stopped(t->region);
}

/* ---- regions --------------------------------------------------------------
 */

static void region_init(tarn_region *r, tarn_rt *rt) {
  memset(r, 0, sizeof *r);
  r->rt = rt;
  pthread_mutex_init(&r->keep_lock, NULL);
}

/* Makes the calling thread the runtime's guest, unless another thread is
 * (or it runs a task already). Returns the guest, or NULL. */
static struct worker *guest_enter(tarn_rt *rt) {
  if (current_worker != NULL || atomic_load(&rt->guest_busy) ||
      atomic_exchange(&rt->guest_busy, true))
    return NULL;
  struct worker *g = &rt->workers[rt->nworkers];
  current_worker = g;
  program_regions = current_region;
  return g;
}

static void guest_leave(struct worker *g) {
  if (g == NULL) return;
  current_worker = NULL;
  program_regions = NULL;
  atomic_store(&g->rt->guest_busy, false);
}

/* The task held for a waiter (hold_for_waiter), else the first task the
 * guest finds queued on an idle worker (one looking for work, asleep, or
 * off its core meanwhile), or NULL. Busy workers'
 * queues are left to them: taking from them would put one more thread on
 * the cores than there are, and make two threads take turns at one
 * queue's lock. */
static tarn_task *guest_take(struct worker *g) {
  tarn_rt *rt = g->rt;
  tarn_task *held = lone_take(rt, false);
  if (held != NULL) return held;
  unsigned start = atomic_load_explicit(&rt->next_worker, memory_order_relaxed);
  for (unsigned k = 0; k < rt->nworkers; k++) {
    struct worker *v = &rt->workers[(start + k) % rt->nworkers];
    if (!atomic_load_explicit(&v->idle, memory_order_relaxed)) continue;
    tarn_task *t = steal(g, v, false);
    if (t != NULL) return t;
  }
  return NULL;
}

/* Whether the guest should look for tasks while waiting for `r` (some of
 * its tasks are unfinished).
 * - While two or more of its tasks are unfinished. It does not take the
 *   last task of a larger region: the workers are busy with the others,
 *   and it would run as a third thread on two cores (N=1024 elementwise
 *   rows, 4 tasks of 75 us, up to 12 % slower when it did).
 * - Or when the region has one task and the workers are pinned or leave a
 *   processor to spare, while such regions are short (LONE_TASK_MAX_NS).
 *   It takes that task and shares its work with the workers like any
 *   owner, so the region needs no hand-off to a worker and back: claiming
 *   the side of the worker it shares a core with (help_claim), a region
 *   of one shared assign on a 256 x 256 tile takes 5.1 to 5.5 us instead
 *   of 6.1 to 6.5. Unpinned, the guest's side of the ranges is not its
 *   processor's (a region of one shared 256 x 256 fill: 7.3 to 10.0 us
 *   instead of 6.0 to 6.3, in the rt suite; N=256 update 10.5 us against
 *   9.4), unless a processor is left to it: with one unpinned worker on
 *   two processors, a region of one 256 x 256 radius-1 sum took 18.5 to
 *   19.2 us when the guest shared it, 35.5 to 36.0 when the worker ran it
 *   alone. Long, the hand-off
 *   it saves (a microsecond) does not pay: a Cholesky of one 256 tile,
 *   180 us of shared blocks, took 4 % longer on the guest, with the
 *   worker on its core spinning beside it.
 * - When the workers fill the cores, only while tasks are short
 *   (GUEST_TASK_MAX_NS). The guest stands in for a worker that is idle or
 *   asleep, saving a hand-off or a wake-up, which matters for tasks of
 *   microseconds. That worker still wakes up and runs tasks, so a task the
 *   guest took runs as a third thread on two cores until it ends, and the
 *   kernel may leave it off the cores for a whole tick: in a 2 x 2 tile
 *   matmul (8 tasks of 3.4 ms), a range of 0.9 ms the guest ran took 5 ms,
 *   and the region ended 1 ms late; an assign of 64 tiles of 512 x 512
 *   (tasks of 60 to 120 us) took 8.0 ms, two 4 ms ticks, instead of 4.1,
 *   in most regions while the guest took tasks under 0.5 ms. */
static bool guest_worthwhile(tarn_region *r) {
  tarn_rt *rt = r->rt;
  uint64_t submitted =
      atomic_load_explicit(&r->submitted, memory_order_relaxed);
  uint64_t unfinished =
      submitted - atomic_load_explicit(&r->finished, memory_order_relaxed);
  if (unfinished >= 2)
    return !rt->workers_fill_cores || tasks_short(rt, rt->guest_max_ticks);
  return submitted == 1 && lone_worthwhile(rt);
}

/* Whether `r` has `target` finished tasks, or with ALL_FINISHED, whether
 * every task submitted to it has finished. */
static bool region_reached(tarn_region *r, uint64_t target) {
  uint64_t finished = atomic_load(&r->finished);
  return target == ALL_FINISHED ? finished == atomic_load(&r->submitted)
                                : finished >= target;
}

/* Lowers r->wake_at to `target` unless it is lower (and not 0). */
static void wake_at_least_at(tarn_region *r, uint64_t target) {
  uint64_t seen = atomic_load(&r->wake_at);
  while ((seen == 0 || seen > target) &&
         !atomic_compare_exchange_weak(&r->wake_at, &seen, target))
    continue;
}

/* region_wait_for on a worker of r's runtime, or its guest, outside a
 * task (an arg_free that waits for a region it began): what it submitted
 * went to its own queue, which no one else takes while it is busy (the
 * guest takes only idle workers' tasks; with one worker there is no one),
 * and the successor its task's end readied waits in readied_next, so it
 * runs tasks as in its loop instead of sleeping: it hung, and
 * tarn_rt_destroy with it. The tasks it runs are task code of their own:
 * their arg_free's submissions skip the waiting one's regions
 * (program_regions). Looks with yields, then with short sleeps while
 * other workers run what is left. */
static bool worker_wait_for(struct worker *w, tarn_region *r, uint64_t target,
                            uint64_t deadline) {
  tarn_region *was = program_regions;
  program_regions = current_region;
  bool reached = true;
  for (int idle = 0; !region_reached(r, target); idle++) {
    if (deadline != 0 && tarn__clock_ns() >= deadline) {
      reached = false;
      break;
    }
    tarn_task *t = NULL;
    if (readied_next != NULL && *readied_next != NULL) {
      t = *readied_next;
      *readied_next = NULL;
    } else {
      t = take_or_lone(w);
    }
    if (t != NULL) {
      while (t != NULL) t = run(w, t);
      idle = 0;
    } else if (idle < DRAIN_SPINS) {
      sched_yield();
    } else {
      nanosleep(&(struct timespec){0, 50000}, NULL);
    }
  }
  program_regions = was;
  return reached;
}

/* Waits until region_reached(r, target). Meanwhile the thread runs queued
 * tasks as the guest (any region's: a task it takes runs to its end, so
 * the wait may last that long): a program's thread that only waits would
 * take a core from the workers for nothing, and a small region's second
 * task then runs at once instead of after the first. Then it sleeps until
 * the finisher that gets there wakes it: the region's last (r->waiting)
 * or, for a count, the one that reaches r->wake_at; the seq_cst store and
 * load on each side (as in region_done) mean that either the sleeper sees
 * the count or the finisher sees what the sleeper waits for. With a
 * `deadline` (tarn__clock_ns; 0: none) it gives up once that has passed
 * (a task it took still runs to its end first). Once the target is
 * reached it returns without done_lock, which only orders a sleep with
 * the finisher's wake (an empty region, begun and waited, took 160 ns
 * with it, 130 without; a region's memory outlives any finisher still
 * reading it: see region_done). Returns whether the target was reached. */
static bool region_wait_for(tarn_region *r, uint64_t target, int spins,
                            uint64_t deadline) {
  tarn_rt *rt = r->rt;
  if (current_worker != NULL && current_worker->rt == rt)
    return worker_wait_for(current_worker, r, target, deadline);
  if (region_reached(r, target)) return true;
  struct worker *g = spins > 0 ? guest_enter(rt) : NULL;
  /* A short region ends sooner than a sleeping thread wakes: look for a
   * while (yielding) before sleeping on the condition variable. */
  bool late = false;
  for (int spin = 0; spin < spins; spin++) {
    if (region_reached(r, target)) break;
    if (deadline != 0 && tarn__clock_ns() >= deadline) {
      late = true;
      break;
    }
    tarn_task *t = g != NULL && guest_worthwhile(r) ? guest_take(g) : NULL;
    if (t != NULL) {
      while (t != NULL) t = run(g, t);
      spin = 0;
      continue;
    }
    sched_yield(); /* the workers get the core when they need it */
  }
  guest_leave(g);
  if (region_reached(r, target)) return true;
  struct timespec until = {(time_t)(deadline / 1000000000u),
                           (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&rt->done_lock);
  for (;;) {
    if (region_reached(r, target)) {
      late = false;
      break;
    }
    if (late) break;
    if (target != ALL_FINISHED) {
      /* Another sleeper's lower count may stand: that finisher wakes
       * everyone, and this one sets its own again. */
      wake_at_least_at(r, target);
      if (region_reached(r, target)) break;
    }
    if (deadline == 0)
      pthread_cond_wait(&rt->done, &rt->done_lock);
    else if (pthread_cond_timedwait(&rt->done, &rt->done_lock, &until) ==
             ETIMEDOUT)
      late = true; /* one more look at the count, then give up */
  }
  pthread_mutex_unlock(&rt->done_lock);
  return !late;
}

/* Holds back a program thread whose submission left `submitted` tasks in
 * its region `r`, while more than rt->max_unfinished of them have not
 * finished: it runs tasks or waits until an eighth of them have (a band,
 * so that it does not stop at every submission, narrow, so that the
 * runtime still sees far ahead: see docs/rt.md, "Backpressure"). A
 * program that submits faster than the tasks run then keeps about
 * max_unfinished task structs, not every task of its loop (3 million
 * queued empty tasks held 1.1 GB). */
static void throttle(tarn_region *r, uint64_t submitted) {
  uint64_t max = r->rt->max_unfinished;
  uint64_t finished = atomic_load(&r->finished);
  if (finished >= submitted || submitted - finished <= max) return;
  region_wait_for(r, submitted - (max - max / 8),
                  r->rt->workers_fill_cores ? 0 : DRAIN_SPINS, 0);
}

/* Waits until every task of the region has finished (region_wait_for),
 * then releases the refs it kept. Returns false, changing nothing else,
 * when `deadline` (0: none) passed first. */
static bool region_drain(tarn_region *r, uint64_t deadline) {
  tarn_rt *rt = r->rt;
  atomic_store(&r->waiting, true);
  /* Not saved and restored: a drain nested in this one (a task the guest
   * runs destroying another runtime) leaves NULL, which only costs the
   * outer region's last finisher a broadcast. */
  draining = r;
  bool done = region_wait_for(r, ALL_FINISHED, DRAIN_SPINS, deadline);
  draining = NULL;
  atomic_store(&r->waiting, false); /* a finisher may still wake it: no harm */
  if (!done) return false;
  bool lone = atomic_load(&r->submitted) == 1;
  if (r != &rt->root) {
    uint32_t share =
        atomic_load_explicit(&rt->lone_share, memory_order_relaxed);
    atomic_store_explicit(&rt->lone_share,
                          share - share / 8 + (lone ? LONE_SHARE_ONE / 8 : 0),
                          memory_order_relaxed);
  }
  if (r != &rt->root && lone) {
    /* A region of one task: how long it took feeds rt->lone_ticks, falling
     * fast and rising slowly. A long region the guest runs costs it a few
     * percent (LONE_TASK_MAX_NS), a short one handed to a worker a third
     * of its time: with 1/8 both ways, an N=256 matvec right after 256 x
     * 256 matmuls (220 us) went to a worker for its first ten regions,
     * 5.5 to 7 us each instead of 3.8 to 4.0. */
    uint64_t took = tarn__ticks() - r->first_ticks;
    uint64_t mean = atomic_load_explicit(&rt->lone_ticks, memory_order_relaxed);
    mean = took < mean ? mean - (mean - took) / 2 : mean + (took - mean) / 8;
    atomic_store_explicit(&rt->lone_ticks, mean, memory_order_relaxed);
    atomic_store_explicit(
        &rt->lone_shared,
        atomic_load_explicit(&r->shared, memory_order_relaxed),
        memory_order_relaxed);
  }
  for (size_t i = 0; i < r->nkept; i++) tarn_ref_release(r->kept[i]);
  free(r->kept);
  r->kept = NULL;
  r->nkept = r->capkept = 0;
  return true;
}

static void list_unlink(tarn_region **head, tarn_region *r) {
  if (r->prev_live != NULL)
    r->prev_live->next_live = r->next_live;
  else
    *head = r->next_live;
  if (r->next_live != NULL) r->next_live->prev_live = r->prev_live;
}

static void list_link(tarn_region **head, tarn_region *r) {
  r->prev_live = NULL;
  r->next_live = *head;
  if (*head != NULL) (*head)->prev_live = r;
  *head = r;
}

/* Moves a drained region from the live list to the spare list, marked
 * spare (a cancel is refused from now on). */
static void region_retire(tarn_region *r) {
  tarn_rt *rt = r->rt;
  pthread_mutex_lock(&rt->done_lock);
  atomic_store_explicit(&r->state, REGION_SPARE, memory_order_relaxed);
  list_unlink(&rt->live, r);
  list_link(&rt->spare_regions, r);
  if (rt->spare_oldest == NULL) rt->spare_oldest = r;
  rt->spares++;
  pthread_mutex_unlock(&rt->done_lock);
}

/* The oldest spare region, taken off the spare list, when more than
 * REGION_QUARANTINE are kept; else NULL. Under done_lock. */
static tarn_region *spare_take(tarn_rt *rt) {
  tarn_region *r = rt->spare_oldest;
  if (rt->spares <= REGION_QUARANTINE) return NULL;
  rt->spare_oldest = r->prev_live;
  list_unlink(&rt->spare_regions, r);
  rt->spares--;
  return r;
}

/* Raises `r`'s peaks to `peak` (resident) and `live`. */
static void region_fold_peaks(tarn_region *r, size_t peak, size_t live) {
  if (peak > r->peak) r->peak = peak;
  if (live > r->live_peak) r->live_peak = live;
}

int tarn_region_begin(tarn_rt *rt, tarn_region **out) {
  if (out == NULL || !rt_ok(rt)) return TARN_EINVAL;
  if (task_here() != NULL) return TARN_EDEADLK;
  /* Set before the region is linked, under done_lock, where
   * tarn_rt_destroy reads it (set after, destroy could take an arg_free's
   * region for an abandoned one and retire it twice). */
  bool in_arg_free = current_worker != NULL;
  /* The pool's peaks restart here; every region still open keeps them
   * first, those of other threads too (until 2026-12-05 only the
   * enclosing one: a region begun on another thread wiped what an open
   * region had seen). The window is read and restarted under peaks_lock,
   * and handed to the open regions under done_lock, the lock that also
   * links the new one. */
  pthread_mutex_lock(&rt->peaks_lock);
  size_t peak, live;
  tarn__pool_peaks(rt->pool, true, &peak, &live);
  /* A spare region is reset and moved to the live list under one lock.
   * Plain stores suffice: the region reaches other threads only through
   * its tasks, and a submission publishes them. */
  pthread_mutex_lock(&rt->done_lock);
  for (tarn_region *open = rt->live; open != NULL; open = open->next_live)
    region_fold_peaks(open, peak, live);
  tarn_region *r = spare_take(rt);
  if (r != NULL) {
    atomic_store_explicit(&r->submitted, 0, memory_order_relaxed);
    atomic_store_explicit(&r->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&r->error, 0, memory_order_relaxed);
    atomic_store_explicit(&r->not_run, 0, memory_order_relaxed);
    atomic_store_explicit(&r->cancelled, 0, memory_order_relaxed);
    atomic_store_explicit(&r->failed, 0, memory_order_relaxed);
    /* A held-back thread's, never reached. */
    atomic_store_explicit(&r->wake_at, 0, memory_order_relaxed);
    atomic_store_explicit(&r->state, REGION_LIVE, memory_order_relaxed);
    atomic_store_explicit(&r->shared, false, memory_order_relaxed);
    r->in_arg_free = in_arg_free;
    list_link(&rt->live, r);
  }
  pthread_mutex_unlock(&rt->done_lock);
  if (r == NULL && (r = aligned_alloc(64, sizeof *r)) != NULL) {
    region_init(r, rt);
    r->in_arg_free = in_arg_free;
    pthread_mutex_lock(&rt->done_lock);
    list_link(&rt->live, r);
    pthread_mutex_unlock(&rt->done_lock);
  }
  if (r != NULL) r->peak = r->live_peak = 0;
  pthread_mutex_unlock(&rt->peaks_lock);
  if (r == NULL) return TARN_ENOMEM;
  r->parent = current_region;
  /* the nearest enclosing region of this runtime, past any of another
   * (until 2026-12-05 only the parent itself: a region of another
   * runtime between them hid this one from the outer one's cancel) */
  tarn_region *up = r->parent;
  while (up != NULL && up != program_regions && up->rt != rt) up = up->parent;
  /* not past the guest's program's regions: an arg_free's region is not
   * cancelled with a region of the program's that its task is not in */
  r->cancel_parent = up != program_regions ? up : NULL;
  current_region = r;
  *out = r;
  return 0;
}

/* tarn_region_wait, giving up at `deadline` (0: never). */
static int region_wait(tarn_region *r, uint64_t deadline,
                       tarn_region_stats *stats) {
  if (r == NULL) return TARN_EINVAL;
  if (task_here() != NULL) return TARN_EDEADLK;
  /* Also a region begun before a fork, in the child (forked_thread_reset) */
  if (r != current_region) return TARN_EMISUSE;
  if (!region_drain(r, deadline)) return TARN_ETIMEDOUT;
  current_region = r->parent;
  size_t peak = 0, live = 0;
  if (stats != NULL || (r->parent != NULL && r->parent->rt == r->rt)) {
    pthread_mutex_lock(&r->rt->peaks_lock);
    tarn__pool_peaks(r->rt->pool, false, &peak, &live);
    region_fold_peaks(r, peak, live);
    if (r->parent != NULL && r->parent->rt == r->rt) /* its pool's only */
      region_fold_peaks(r->parent, r->peak, r->live_peak);
    peak = r->peak;
    live = r->live_peak;
    pthread_mutex_unlock(&r->rt->peaks_lock);
  }
  if (stats != NULL)
    *stats = (tarn_region_stats){
        atomic_load(&r->submitted),
        atomic_load(&r->submitted) - atomic_load(&r->not_run),
        atomic_load(&r->cancelled),
        atomic_load(&r->failed),
        peak,
        live};
  int rc = atomic_load(&r->error);
  region_retire(r);
  return rc;
}

int tarn_region_wait(tarn_region *r, tarn_region_stats *stats) {
  return region_wait(r, 0, stats);
}

int tarn_region_wait_timed(tarn_region *r, uint64_t timeout_ns,
                           tarn_region_stats *stats) {
  uint64_t now = tarn__clock_ns();
  /* A timeout past the clock's range waits for ever. */
  uint64_t deadline = timeout_ns < UINT64_MAX - now ? now + timeout_ns : 0;
  return region_wait(r, deadline, stats);
}

int tarn_region_cancel(tarn_region *r) {
  if (r == NULL) return TARN_EINVAL;
  /* Lock-free (a _Static_assert above): safe in a signal handler. */
  int state = REGION_LIVE;
  if (atomic_compare_exchange_strong(&r->state, &state, REGION_CANCELLED) ||
      state == REGION_CANCELLED)
    return 0;
  return TARN_EMISUSE; /* waited already */
}

static void regions_free(tarn_region *r) {
  while (r != NULL) {
    tarn_region *next = r->next_live;
    pthread_mutex_destroy(&r->keep_lock);
    free(r);
    r = next;
  }
}

/* ---- create and destroy ---------------------------------------------------
 */

static void stop_workers(tarn_rt *rt, unsigned started) {
  atomic_store(&rt->stopping, true);
  pthread_mutex_lock(&rt->idle_lock);
  rt->wakeups++;
  pthread_cond_broadcast(&rt->idle);
  pthread_mutex_unlock(&rt->idle_lock);
  for (unsigned i = 0; i < started; i++)
    pthread_join(rt->workers[i].thread, NULL);
  for (unsigned i = 0; i <= rt->nworkers; i++) { /* the guest too */
    tarn_slab_release(rt->slabs, rt->workers[i].scratch);
    rt->workers[i].free_tasks = NULL; /* in the chunks, unmapped at the end */
  }
}

static void rt_free(tarn_rt *rt) {
  tarn__pool_destroy(rt->pool);
  tarn_slab_set_destroy(rt->slabs);
  pthread_mutex_destroy(&rt->idle_lock);
  pthread_cond_destroy(&rt->idle);
  pthread_mutex_destroy(&rt->held_lock);
  pthread_mutex_destroy(&rt->done_lock);
  pthread_mutex_destroy(&rt->peaks_lock);
  pthread_cond_destroy(&rt->done);
  pthread_mutex_destroy(&rt->root.keep_lock);
  chunks_free(rt);
  regions_free(rt->spare_regions);
  free(rt->workers);
  tarn__magic_free(rt, &rt->magic);
}

/* Starts worker `w`'s thread, pinned to processor `cpu` (when >= 0). A pin
 * the system refuses (the processor went offline or out of the mask
 * meanwhile) leaves the thread unpinned. Returns pthread_create's status. */
static int start_worker(struct worker *w, int cpu) {
  w->cpu = cpu;
  pthread_attr_t attr;
  if (cpu >= 0 && pthread_attr_init(&attr) == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (rc == 0) rc = pthread_create(&w->thread, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc == 0) return 0;
  }
  return pthread_create(&w->thread, NULL, worker_main, w);
}

int tarn_rt_create(const tarn_rt_options *options, tarn_rt **out) {
  tarn_rt_options o;
  int rc = tarn_rt_options_init(&o);
  if (options != NULL)
    o = *options;
  else if (rc != 0)
    return rc;
  if (out == NULL || o.workers == 0 || o.workers > 1024 ||
      o.scratch_bytes == 0 || o.scratch_bytes > SIZE_MAX - TASK_MARK_BYTES ||
      o.work_tile > WORK_TILE_MAX)
    return TARN_EINVAL;
  pthread_once(&fork_reset_once, fork_reset_watch);
  tarn_rt *rt = aligned_alloc(64, sizeof *rt);
  if (rt == NULL) return TARN_ENOMEM;
  memset(rt, 0, sizeof *rt);
  rt->magic = tarn__magic_live(RT_LIVE); /* the program sees it whole only */
  rt->nworkers = o.workers;
  /* The processors, not a CPU quota (tarn__cpu_count): a thread more than
   * the quota shares its time with the others, where a thread more than
   * the processors takes turns with a worker for whole scheduler ticks. */
  rt->workers_fill_cores = o.workers >= tarn__cpus_allowed(NULL, 0);
  atomic_init(&rt->guest_cpu, -1);
  tarn__ticks_init();
  rt->guest_max_ticks = tarn__ns_to_ticks(GUEST_TASK_MAX_NS);
  rt->busy_max_ticks = tarn__ns_to_ticks(WORKERS_BUSY_MAX_NS);
  rt->help_spin_max_ticks = tarn__ns_to_ticks(HELP_SPIN_MAX_NS);
  rt->lone_max_ticks = tarn__ns_to_ticks(LONE_TASK_MAX_NS);
  rt->lone_serial_max_ticks = tarn__ns_to_ticks(LONE_SERIAL_MAX_NS);
  rt->lone_hold_ticks = tarn__ns_to_ticks(LONE_HOLD_NS);
  rt->eager_free = o.eager_free;
  rt->may_spill = o.pool.mem_limit != 0;
  rt->idle_trim_ns = (uint64_t)o.idle_trim_ms * 1000000u;
  atomic_init(&rt->rest_wait_ns, rt->idle_trim_ns);
  atomic_init(&rt->gave_back_at, 0);
  rt->max_unfinished = o.max_unfinished;
  rt->work_tile = o.work_tile;
  pthread_mutex_init(&rt->idle_lock, NULL);
  pthread_condattr_t monotonic; /* sleep_or_take's, timed waits' deadlines */
  pthread_condattr_init(&monotonic);
  pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
  pthread_cond_init(&rt->idle, &monotonic);
  pthread_mutex_init(&rt->held_lock, NULL);
  pthread_mutex_init(&rt->done_lock, NULL);
  pthread_mutex_init(&rt->peaks_lock, NULL);
  pthread_cond_init(&rt->done, &monotonic); /* timed region waits */
  pthread_condattr_destroy(&monotonic);
  region_init(&rt->root, rt);
  tarn_slab_set_options so;
  tarn_slab_set_options_init(&so);
  so.count = o.workers + 1; /* and the guest */
  so.slab_size = o.scratch_bytes + TASK_MARK_BYTES;
  so.retain_bytes = SCRATCH_RETAIN_BYTES;
  rt->workers = aligned_alloc(64, (o.workers + 1) * sizeof *rt->workers);
  if (rt->workers == NULL) rc = TARN_ENOMEM;
  if (rc == 0) rc = tarn_pool_create(&o.pool, &rt->pool);
  if (rc == 0) rc = tarn_slab_set_create(&so, &rt->slabs);
  if (rc != 0) {
    rt_free(rt);
    return rc;
  }
  tarn__pool_set_owner_free(rt->pool, ref_state_free, NULL);
  /* Every worker is ready before any starts: workers steal from all. */
  for (unsigned i = 0; i <= o.workers; i++) {
    struct worker *w = &rt->workers[i];
    memset(w, 0, sizeof *w);
    atomic_init(&w->queued_max, INT_MIN);
    w->rt = rt;
    w->index = i;
    w->guest = i == o.workers;
    w->cpu = -1; /* start_worker sets a pinned worker's */
    tarn_slab_acquire(rt->slabs, &w->scratch); /* count == workers + 1 */
  }
  int cpus[CPU_TABLE];
  unsigned ncpus = o.pin_workers ? tarn__cpus_allowed(cpus, CPU_TABLE) : 0;
  if (ncpus > CPU_TABLE) ncpus = CPU_TABLE;
  rt->pinned = ncpus > 0;
  /* written before any worker starts: time_round_trip reads it */
  rt->round_trip_pair = o.workers >= 2 && ncpus >= 2 && cpus[0] != cpus[1];
  for (unsigned i = o.workers < ncpus ? o.workers : ncpus; i-- > 0;)
    if (cpus[i] >= 0 && cpus[i] < (int)sizeof rt->cpu_side)
      rt->cpu_side[cpus[i]] = (unsigned char)(i & 1);
  unsigned started = 0;
  while (started < o.workers &&
         start_worker(&rt->workers[started],
                      ncpus > 0 ? cpus[started % ncpus] : -1) == 0)
    started++;
  if (started < o.workers) {
    stop_workers(rt, started);
    rt_free(rt);
    return TARN_ENOMEM;
  }
  *out = rt;
  return 0;
}

int tarn_rt_destroy(tarn_rt *rt) {
  if (rt == NULL) return 0;
  if (!rt_ok(rt)) return TARN_EINVAL;
  /* From a task, or from an arg_free on one of the runtime's workers or
   * its guest (it would wait for the task ending, then join itself). */
  if (task_here() != NULL ||
      (current_worker != NULL && current_worker->rt == rt))
    return TARN_EDEADLK;
  /* Regions never waited: their tasks run to the end, then they go. An
   * arg_free's regions are its own to wait for and retire while arg_free
   * calls run (draining and retiring one too freed it twice); once none
   * runs, any left are abandoned and go as the others. */
  for (;;) {
    pthread_mutex_lock(&rt->done_lock);
    /* An arg_free's count is stored before it begins a region, which is
     * linked under done_lock: seeing the region, this sees the count. */
    bool arg_frees = false;
    for (unsigned i = 0; i <= rt->nworkers; i++) /* the guest too */
      arg_frees |= atomic_load_explicit(&rt->workers[i].arg_frees,
                                        memory_order_relaxed) > 0;
    tarn_region *r = rt->live;
    while (r != NULL && arg_frees && r->in_arg_free) r = r->next_live;
    bool left = rt->live != NULL;
    pthread_mutex_unlock(&rt->done_lock);
    if (r != NULL) {
      region_drain(r, 0);
      region_retire(r);
    } else if (left) {
      nanosleep(&(struct timespec){0, 100000}, NULL);
    } else {
      break;
    }
  }
  /* The calling thread's stack of regions loses this runtime's: its next
   * submission to another runtime, or a wait of an enclosing region of
   * another runtime, must not meet a freed one. */
  for (tarn_region **link = &current_region; *link != NULL;) {
    if ((*link)->rt == rt)
      *link = (*link)->parent;
    else
      link = &(*link)->parent;
  }
  region_drain(&rt->root, 0);
  stop_workers(rt, rt->nworkers);
  int rc = atomic_load(&rt->root.error);
  rt_free(rt);
  return rc;
}

tarn_pool *tarn_rt_pool(tarn_rt *rt) { return rt_ok(rt) ? rt->pool : NULL; }

unsigned tarn_rt_workers(const tarn_rt *rt) {
  return rt_ok(rt) ? rt->nworkers : 0;
}

int tarn_rt_stats_get(tarn_rt *rt, tarn_rt_stats *s) {
  if (s == NULL || !rt_ok(rt)) return TARN_EINVAL;
  memset(s, 0, sizeof *s);
  /* The ends first, the submissions last: each task is counted submitted
   * before it can run or end, and these acquire loads see what came
   * before the counts they read, so none of run, cancelled and failed
   * passes submitted in a snapshot taken while tasks run. */
  for (unsigned i = 0; i <= rt->nworkers; i++) { /* the guest too */
    struct worker *w = &rt->workers[i];
    s->run += atomic_load_explicit(&w->run, memory_order_acquire);
    s->stolen += atomic_load_explicit(&w->stolen, memory_order_relaxed);
    s->run_ns += atomic_load_explicit(&w->run_ns, memory_order_relaxed);
    s->data_wait_ns += atomic_load_explicit(&w->wait_ns, memory_order_relaxed);
  }
  s->cancelled = atomic_load_explicit(&rt->cancelled, memory_order_acquire);
  s->failed = atomic_load_explicit(&rt->failed, memory_order_acquire);
  s->held_back = atomic_load(&rt->held_back);
  s->prefetches = atomic_load(&rt->prefetches);
  s->task_pinned_peak = atomic_load(&rt->task_pinned_peak);
  s->submitted = atomic_load(&rt->submitted);
  return 0;
}
