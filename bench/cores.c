/* cores.c: how far apart the first two processors are, measured as the
 * round trip of one cache line between two threads pinned to them
 * (bench_core_round_trip_ns, bench.h). Invariant: the measuring threads
 * are the only ones this file starts, and both are joined before it
 * returns; the caller's own affinity is never changed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bench.h"

/* Round trips in each timed batch, and batches (the median is kept: a
 * batch in which the hypervisor paused one thread reads high). */
#define BOUNCE_ROUNDS 2000
#define BOUNCE_BATCHES 7

struct bounce {
  _Alignas(64) atomic_int line; /* 1: the ball is with the answerer */
  _Alignas(64) atomic_int ready;
  atomic_int failed;
  int cpu[2];
  double batch_ns[BOUNCE_BATCHES];
};

static int pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Both threads pinned, or either failed to be: whether to go on. */
static bool meet(struct bounce *b, int cpu) {
  if (pin_self(cpu) != 0) atomic_store(&b->failed, 1);
  atomic_fetch_add(&b->ready, 1);
  while (atomic_load(&b->ready) < 2) continue;
  return atomic_load(&b->failed) == 0;
}

static void *answer(void *arg) {
  struct bounce *b = arg;
  if (!meet(b, b->cpu[1])) return NULL;
  for (int i = 0; i < (BOUNCE_BATCHES + 1) * BOUNCE_ROUNDS; i++) {
    while (atomic_load_explicit(&b->line, memory_order_acquire) != 1) continue;
    atomic_store_explicit(&b->line, 0, memory_order_release);
  }
  return NULL;
}

static void *serve(void *arg) {
  struct bounce *b = arg;
  if (!meet(b, b->cpu[0])) return NULL;
  for (int batch = -1; batch < BOUNCE_BATCHES; batch++) { /* -1: warm-up */
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < BOUNCE_ROUNDS; i++) {
      atomic_store_explicit(&b->line, 1, memory_order_release);
      while (atomic_load_explicit(&b->line, memory_order_acquire) != 0)
        continue;
    }
    if (batch >= 0)
      b->batch_ns[batch] =
          (double)(bench_now_ns() - t0) / (double)BOUNCE_ROUNDS;
  }
  return NULL;
}

static int compare_ns(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_core_round_trip_ns(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  struct bounce *b = aligned_alloc(64, sizeof *b);
  if (b == NULL) return -1;
  atomic_init(&b->line, 0);
  atomic_init(&b->ready, 0);
  atomic_init(&b->failed, 0);
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
    if (CPU_ISSET(cpu, &allowed)) b->cpu[found++] = cpu;
  double ns = -1;
  pthread_t server, answerer;
  if (found == 2 && pthread_create(&answerer, NULL, answer, b) == 0) {
    if (pthread_create(&server, NULL, serve, b) == 0) {
      pthread_join(server, NULL);
      if (atomic_load(&b->failed) == 0) {
        qsort(b->batch_ns, BOUNCE_BATCHES, sizeof b->batch_ns[0], compare_ns);
        ns = b->batch_ns[BOUNCE_BATCHES / 2];
      }
    } else { /* the answerer waits for a second thread: release it */
      atomic_store(&b->failed, 1);
      atomic_fetch_add(&b->ready, 1);
    }
    pthread_join(answerer, NULL);
  }
  free(b);
  return ns;
}
