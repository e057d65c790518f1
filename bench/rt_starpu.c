/* rt_starpu.c: the StarPU 1.3 peer of the `rt` suite (see rt_peers.h),
 * built only where pkg-config finds starpu-1.3. StarPU is started once per
 * worker count with only CPU workers, silent, unbound, with its files under
 * a temporary directory and its default scheduler; tasks go through
 * starpu_task_insert and the time ends at starpu_task_wait_for_all. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "bench.h"
#include "rt_peers.h"
#include "starpu_tiles.h"

static void empty_cpu(void *buffers[], void *arg) {
  (void)buffers;
  (void)arg;
}

static void inc_cpu(void *buffers[], void *arg) {
  (void)arg;
  uint64_t *x = (uint64_t *)STARPU_VARIABLE_GET_PTR(buffers[0]);
  *x += 1;
}

static struct starpu_codelet empty_cl = {
    .cpu_funcs = {empty_cpu}, .nbuffers = 0, .name = "empty"};
static struct starpu_codelet inc_cl = {
    .cpu_funcs = {inc_cpu}, .nbuffers = 1, .modes = {STARPU_RW}, .name = "inc"};

static char home[PATH_MAX];
static uint64_t counter, counted; /* counted: tasks run on it so far */
static starpu_data_handle_t counter_handle;

static int starpu_failed(const char *what, int rc) {
  return bench_starpu_failed("rt", what, rc);
}

int rt_starpu_open(unsigned workers) {
  if (bench_starpu_environment("rt", home, sizeof home) != 0) return 1;
  if (bench_starpu_start("rt", workers) != 0) {
    bench_remove_tree(home); /* StarPU wrote there before it failed */
    return 1;
  }
  counter = counted = 0;
  starpu_variable_data_register(&counter_handle, STARPU_MAIN_RAM,
                                (uintptr_t)&counter, sizeof counter);
  return 0;
}

void rt_starpu_close(void) {
  starpu_data_unregister(counter_handle);
  starpu_shutdown();
  bench_remove_tree(home);
}

int rt_starpu_empty(void *arg, uint64_t reps, double *seconds) {
  (void)arg;
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < reps; i++) {
    int rc = starpu_task_insert(&empty_cl, 0);
    if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  }
  int rc = starpu_task_wait_for_all();
  if (rc != 0) return starpu_failed("starpu_task_wait_for_all", rc);
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  return 0;
}

/* Reads the counter back through StarPU and checks it. */
static int check_counter(uint64_t expected) {
  int rc = starpu_data_acquire(counter_handle, STARPU_R);
  if (rc != 0) return starpu_failed("starpu_data_acquire", rc);
  uint64_t got = counter;
  starpu_data_release(counter_handle);
  if (got == expected) return 0;
  fprintf(stderr, "tarn bench: rt: starpu chain counted %llu, expected %llu\n",
          (unsigned long long)got, (unsigned long long)expected);
  return 1;
}

int rt_starpu_chain(void *arg, uint64_t reps, double *seconds) {
  (void)arg;
  uint64_t t0 = bench_now_ns();
  for (uint64_t i = 0; i < reps; i++) {
    int rc = starpu_task_insert(&inc_cl, STARPU_RW, counter_handle, 0);
    if (rc != 0) return starpu_failed("starpu_task_insert", rc);
  }
  int rc = starpu_task_wait_for_all();
  if (rc != 0) return starpu_failed("starpu_task_wait_for_all", rc);
  *seconds = (double)(bench_now_ns() - t0) * 1e-9;
  counted += reps;
  return check_counter(counted);
}
