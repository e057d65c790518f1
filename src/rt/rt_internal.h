/* rt_internal.h: what the runtime offers the layers above it beyond
 * tarn/rt.h. Nothing here is public API; the rules of tarn/rt.h apply. */
#ifndef TARN_RT_INTERNAL_H
#define TARN_RT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tarn/rt.h"

/* tarn_task_parallel_for with a lead: once the ranges of [0, count) are
 * offered to idle workers, this thread first runs lead(lead_arg), then
 * takes the ranges that are left, so that the lead (the next step of a
 * blocked factorisation, on its critical path) overlaps the shared work.
 * lead must not touch what the bodies write. With no idle worker, or too
 * little work, it is lead(lead_arg) then body(arg, 0, count) on this
 * thread (body not at all when count is 0). Returns 0, lead's non-zero
 * status, else the first non-zero status of a body, TARN_EINVAL for a
 * NULL body or lead or grain 0, or TARN_EMISUSE when `task` is not running
 * on this thread. */
int tarn__task_parallel_for_lead(tarn_task *task, size_t count, size_t grain,
                                 tarn_range_fn body, void *arg,
                                 int (*lead)(void *), void *lead_arg);

/* Whether the running task `task` is alone: no other worker runs a task or
 * helps with one (each looks for work or sleeps), and, for a task on a
 * worker, no program thread waits as the guest. A hint, not a promise:
 * another may start at once. False when `task` is not running on this
 * thread. */
bool tarn__task_alone(tarn_task *task);

/* Whether the runtime of `task` found the processors of its first two
 * workers far apart: the median of the last three round trips of a cache
 * line between them (timed while both look for work, every 100 ms at
 * most, every 1 ms until the first figure, by pinned workers only) took
 * 200 ns or more, so they share no cache and work split between them
 * pays less (docs/rt.md, "Cores far apart"); or what
 * tarn__rt_cores_far_set says. False until timed, with unpinned workers,
 * or one. A hint: the host of a virtual machine moves its processors at
 * any time. */
bool tarn__task_far(tarn_task *task);

/* The median of the last three round trips tarn__task_far judges by, in
 * ns (0 standing in for those not yet timed: 0 until two were).
 * Thread-safe. */
unsigned tarn__rt_round_trip_ns(tarn_rt *rt);

/* For tests and measurements: far 1 makes tarn__task_far true, 0 false,
 * whatever the round trips say; -1 returns it to them (from the next
 * trip timed). Thread-safe. */
void tarn__rt_cores_far_set(tarn_rt *rt, int far);

/* Whether the running task `task` is the last of its region: a thread
 * waits for the region (tarn_region_wait, or a call of the layers above
 * that waits for its own) and no other task of it is unfinished, so the
 * region has no work for the other workers but what `task` shares. A
 * hint, not a promise: a task of another region may come at once. False
 * when `task` is not running on this thread, and for tasks submitted
 * outside any region. */
bool tarn__task_last(tarn_task *task);

/* Whether `rt` is a live runtime, as the public calls taking one check it:
 * false for NULL, and false with a line on stderr for a runtime already
 * destroyed (while its memory is not reused). Thread-safe. */
bool tarn__rt_ok(const tarn_rt *rt);

/* For tests: off, the wait before a rest's first give-back stays
 * tarn_rt_options.idle_trim_ms; on (the default) it adapts to a program
 * that works in bursts (rest_adapt in rt.c). Thread-safe. */
void tarn__rt_rests_adapt(bool on);

/* The wait before a rest's first give-back now, in ns (idle_trim_ms,
 * adapted). Thread-safe. */
uint64_t tarn__rt_rest_wait_ns(tarn_rt *rt);

/* tarn_rt_options.work_tile as `rt` was made with (0: linalg works on
 * the caller's tiles). Thread-safe: fixed for the runtime's life. */
size_t tarn__rt_work_tile(const tarn_rt *rt);

#endif
