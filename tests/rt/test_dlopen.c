/* test_dlopen.c: libtarn.so loaded with dlopen, as a plugin or a Python
 * extension loads it, runs tasks on every thread of the program: the one
 * that loaded it, one started before, and the runtime's workers. A library
 * loaded late whose thread-local variables use the initial-exec model (as
 * tarn's do: prim.h) takes them from glibc's reserve in each thread's
 * static TLS, set up by dlopen for the threads already running; the load
 * fails when the reserve is too small. The test is not linked with tarn;
 * its one argument is the library's path. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "tarn/rt.h"

static const char *library_path;

/* The library's functions this test calls, looked up by name. */
struct api {
  void *handle;
  int (*rt_create)(const tarn_rt_options *, tarn_rt **);
  int (*rt_options_init)(tarn_rt_options *);
  int (*rt_destroy)(tarn_rt *);
  int (*region_begin)(tarn_rt *, tarn_region **);
  int (*region_wait)(tarn_region *, tarn_region_stats *);
  int (*task_submit)(tarn_rt *, const tarn_task_desc *);
};

static struct api api;

static void *symbol(const char *name) {
  void *f = dlsym(api.handle, name);
  if (f == NULL) fail_msg("dlsym %s: %s", name, dlerror());
  return f;
}

/* Each task counts itself and records whether a region may begin inside
 * it: it may not (TARN_EDEADLK), which the library can tell only from its
 * thread-local state. */
struct counts {
  tarn_rt *rt;
  atomic_int ran;
  atomic_int refused;
};

static int count_task(tarn_task *task, void *arg) {
  (void)task;
  struct counts *c = arg;
  tarn_region *inner = NULL;
  atomic_fetch_add(&c->ran, 1);
  if (api.region_begin(c->rt, &inner) == TARN_EDEADLK)
    atomic_fetch_add(&c->refused, 1);
  return 0;
}

enum { regions = 200, per_region = 3 };

/* Regions of a few tasks each from the calling thread; 0 when every task
 * ran and was refused a region of its own. */
static int run_regions(tarn_rt *rt) {
  struct counts c = {.rt = rt};
  atomic_init(&c.ran, 0);
  atomic_init(&c.refused, 0);
  for (int r = 0; r < regions; r++) {
    tarn_region *region = NULL;
    if (api.region_begin(rt, &region) != 0) return -1;
    for (int t = 0; t < per_region; t++) {
      tarn_task_desc d = {.fn = count_task, .arg = &c};
      if (api.task_submit(rt, &d) != 0) return -1;
    }
    if (api.region_wait(region, NULL) != 0) return -1;
  }
  int want = regions * per_region;
  return atomic_load(&c.ran) == want && atomic_load(&c.refused) == want ? 0
                                                                        : -1;
}

/* A thread started before the library was loaded: waits for it, then runs
 * its regions. */
struct early {
  pthread_barrier_t loaded;
  tarn_rt *rt;
  int rc;
};

static void *early_thread(void *arg) {
  struct early *e = arg;
  pthread_barrier_wait(&e->loaded);
  e->rc = run_regions(e->rt);
  return NULL;
}

static void loaded_library_runs_tasks_on_every_thread(void **state) {
  (void)state;
  struct early e = {.rc = -1};
  assert_int_equal(pthread_barrier_init(&e.loaded, NULL, 2), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, early_thread, &e), 0);

  api.handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (api.handle == NULL) fail_msg("dlopen %s: %s", library_path, dlerror());
  *(void **)&api.rt_create = symbol("tarn_rt_create");
  *(void **)&api.rt_options_init = symbol("tarn_rt_options_init");
  *(void **)&api.rt_destroy = symbol("tarn_rt_destroy");
  *(void **)&api.region_begin = symbol("tarn_region_begin");
  *(void **)&api.region_wait = symbol("tarn_region_wait");
  *(void **)&api.task_submit = symbol("tarn_task_submit");

  tarn_rt_options o;
  assert_int_equal(api.rt_options_init(&o), 0);
  o.workers = 2;
  assert_int_equal(api.rt_create(&o, &e.rt), 0);
  pthread_barrier_wait(&e.loaded);
  assert_int_equal(run_regions(e.rt), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(e.rc, 0);
  assert_int_equal(api.rt_destroy(e.rt), 0);
  assert_int_equal(dlclose(api.handle), 0);
  pthread_barrier_destroy(&e.loaded);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LIBTARN_SO\n", argv[0]);
    return 2;
  }
  library_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(loaded_library_runs_tasks_on_every_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
