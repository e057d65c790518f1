/* load_child.c: the process that `tarn bench time_to_load` starts again and
 * again (build/bench/tarn-load). It does what a program that uses tarn for
 * one task does: create a runtime with the default options (a worker per
 * core, the pool, the scratch slabs), submit one task that writes a ref,
 * wait for it, destroy the runtime, exit. It prints the nanoseconds from
 * just before tarn_rt_create to just after tarn_rt_destroy on stdout, so
 * the parent can tell the runtime's share of the process's whole life.
 * Exit status 0, or 1 after printing why to stderr. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "tarn.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The one task: writes 42 into its ref. */
static int store_answer(tarn_task *task, void *arg) {
  (void)arg;
  *(int *)tarn_task_data(task, 0) = 42;
  return 0;
}

static int failed(const char *what, int status) {
  fprintf(stderr, "tarn-load: %s: %s\n", what, tarn_strerror(status));
  return 1;
}

int main(void) {
  uint64_t t0 = now_ns();
  tarn_rt *rt;
  int rc = tarn_rt_create(NULL, &rt);
  if (rc != 0) return failed("tarn_rt_create", rc);
  tarn_ref *ref;
  rc = tarn_ref_alloc(tarn_rt_pool(rt), sizeof(int), 0, &ref);
  if (rc != 0) {
    tarn_rt_destroy(rt);
    return failed("tarn_ref_alloc", rc);
  }
  tarn_region *region;
  rc = tarn_region_begin(rt, &region);
  if (rc == 0) rc = tarn_submit(rt, store_answer, TARN_W(ref));
  int wait_rc = rc == 0 ? tarn_region_wait(region, NULL) : 0;
  if (rc == 0) rc = wait_rc;
  int answer = 0;
  if (rc == 0) {
    void *p;
    rc = tarn_ref_pin(ref, TARN_READ, UINT64_MAX, &p);
    if (rc == 0) {
      answer = *(int *)p;
      tarn_ref_unpin(ref);
    }
  }
  tarn_ref_release(ref);
  int destroy_rc = tarn_rt_destroy(rt);
  uint64_t t1 = now_ns();
  if (rc != 0) return failed("running the task", rc);
  if (destroy_rc != 0) return failed("tarn_rt_destroy", destroy_rc);
  if (answer != 42) {
    fprintf(stderr, "tarn-load: the task's result is %d, not 42\n", answer);
    return 1;
  }
  printf("%llu\n", (unsigned long long)(t1 - t0));
  return fflush(stdout) == 0 ? 0 : 1;
}
