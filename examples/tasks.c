/* tasks.c: tasks of one's own, with the data each reads and writes.
 *
 * A signal is processed in chunks. For each chunk one task generates it,
 * one squares it into a temporary, and one adds the temporary's sum to a
 * running total. The runtime orders the tasks by their data alone (the
 * three tasks of a chunk run in order; the accumulations one at a time;
 * chunks in parallel). Both the chunk and its temporary are released
 * right after their last task is submitted, so each is freed the moment
 * that task ends: the region's peak memory stays a few chunks, not the
 * whole signal. The program runs the pipeline with and without eager
 * freeing, prints both peaks, and checks the total against a serial loop.
 *
 * Then it makes one chunk's generator fail. The tasks that depend on the
 * failed data are cancelled (its square, its accumulation and, through the
 * total, every later accumulation); the other chunks' tasks run; the wait
 * returns the task's own status.
 *
 * Last, a search: the chunks are scanned in order for the first whose sum
 * of squares reaches a target, and the scan that finds it cancels the
 * region (tarn_region_cancel): the scans after it, and the generators not
 * yet begun, never run. The chunk found must be the serial loop's.
 *
 *   build/examples/tasks [CHUNKS CHUNK_DOUBLES]      (default 64 131072)
 *
 * Exits 0 when the totals, the peaks and the failure's effects are as
 * described, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tarn.h>

#include "example.h"

#define USAGE "tasks [CHUNKS CHUNK_DOUBLES]"

/* A status of this program's own: any nonzero value fails a task. */
#define BAD_CHUNK 7

struct chunk {
  size_t index, len;
  int fail; /* the generator returns BAD_CHUNK */
};

static double sample(size_t i) { return sin(0.001 * (double)i); }

/* Writes the chunk's samples into access 0. */
static int generate(tarn_task *t, void *arg) {
  const struct chunk *c = arg;
  if (c->fail) return BAD_CHUNK;
  double *v = tarn_task_data(t, 0);
  for (size_t i = 0; i < c->len; i++) v[i] = sample(c->index * c->len + i);
  return 0;
}

/* Access 1 = access 0 squared, elementwise. */
static int square(tarn_task *t, void *arg) {
  const struct chunk *c = arg;
  const double *v = tarn_task_data(t, 0);
  double *s = tarn_task_data(t, 1);
  for (size_t i = 0; i < c->len; i++) s[i] = v[i] * v[i];
  return 0;
}

/* Adds access 0's sum to the total, access 1. */
static int accumulate(tarn_task *t, void *arg) {
  const struct chunk *c = arg;
  const double *s = tarn_task_data(t, 0);
  double sum = 0;
  for (size_t i = 0; i < c->len; i++) sum += s[i];
  *(double *)tarn_task_data(t, 1) += sum;
  return 0;
}

static int zero(tarn_task *t, void *arg) {
  (void)arg;
  *(double *)tarn_task_data(t, 0) = 0;
  return 0;
}

/* The search: which chunk it found (-1: none yet), the target and the
 * region to cancel. */
struct search {
  tarn_region *region;
  double target;
  long found;
};

/* A scan: one chunk of the search. */
struct scan {
  struct search *search;
  const struct chunk *chunk;
};

/* Reads the chunk (access 0) and, through access 1 (a word every scan
 * writes, which keeps them in order), cancels the region when the chunk's
 * sum of squares reaches the target. */
static int scan_chunk(tarn_task *t, void *arg) {
  const struct scan *s = arg;
  const double *v = tarn_task_data(t, 0);
  double sum = 0;
  for (size_t i = 0; i < s->chunk->len; i++) sum += v[i] * v[i];
  if (sum >= s->search->target) {
    s->search->found = (long)s->chunk->index;
    tarn_region_cancel(s->search->region); /* the rest need not run */
  }
  return 0;
}

/* Runs the search; returns the region's status and fills *stats. */
static int search(tarn_rt *rt, struct chunk *chunks, size_t count,
                  struct search *s, tarn_region_stats *stats) {
  tarn_pool *pool = tarn_rt_pool(rt);
  struct scan *scans = calloc(count, sizeof *scans);
  tarn_ref *order = NULL;
  if (scans == NULL) return TARN_ENOMEM;
  CHECK(tarn_ref_create(pool, sizeof(double), &order));
  CHECK(tarn_region_begin(rt, &s->region));
  for (size_t c = 0; c < count; c++) {
    tarn_ref *data = NULL;
    scans[c] = (struct scan){s, &chunks[c]};
    CHECK(tarn_ref_create(pool, chunks[c].len * sizeof(double), &data));
    CHECK(tarn_submit(rt, generate, TARN_ARG(&chunks[c]), TARN_W(data)));
    CHECK(tarn_submit(rt, scan_chunk, TARN_ARG(&scans[c]), TARN_R(data),
                      TARN_RW(order)));
    CHECK(tarn_ref_release(data));
  }
  int rc = tarn_region_wait(s->region, stats);
  CHECK(tarn_ref_release(order));
  free(scans);
  return rc;
}

/* Submits the pipeline over `chunks` into a region and waits for it.
 * Returns the region's status; *stats and *total (when the total could be
 * read) are filled. */
static int pipeline(tarn_rt *rt, struct chunk *chunks, size_t count,
                    tarn_region_stats *stats, double *total) {
  tarn_pool *pool = tarn_rt_pool(rt);
  tarn_ref *sum = NULL;
  CHECK(tarn_ref_create(pool, sizeof(double), &sum));
  tarn_region *region;
  CHECK(tarn_region_begin(rt, &region));
  CHECK(tarn_submit(rt, zero, TARN_W(sum)));
  size_t bytes = chunks[0].len * sizeof(double);
  for (size_t c = 0; c < count; c++) {
    tarn_ref *data = NULL, *squares = NULL;
    /* No memory until a task first writes them. */
    CHECK(tarn_ref_create(pool, bytes, &data));
    CHECK(tarn_ref_create(pool, bytes, &squares));
    CHECK(tarn_submit(rt, generate, TARN_ARG(&chunks[c]), TARN_W(data)));
    CHECK(tarn_submit(rt, square, TARN_ARG(&chunks[c]), TARN_R(data),
                      TARN_W(squares)));
    CHECK(tarn_submit(rt, accumulate, TARN_ARG(&chunks[c]), TARN_R(squares),
                      TARN_RW(sum)));
    /* The tasks hold their own references: release ours now, and each
     * buffer goes when its last task ends. */
    CHECK(tarn_ref_release(data));
    CHECK(tarn_ref_release(squares));
  }
  int rc = tarn_region_wait(region, stats);
  void *p;
  if (rc == 0) {
    CHECK(tarn_ref_pin(sum, TARN_READ, 0, &p));
    *total = *(double *)p;
    CHECK(tarn_ref_unpin(sum));
  }
  CHECK(tarn_ref_release(sum));
  return rc;
}

int main(int argc, char **argv) {
  example_start(argc, argv, 2, USAGE);
  size_t count = example_size(argc, argv, 1, 64, USAGE);
  /* the data, count * len doubles twice over, counted in a size_t (a len
   * that wrapped it made refs of a page written far past their end) */
  size_t len = example_size_at_most(
      argc, argv, 2, 131072, SIZE_MAX / 2 / sizeof(double) / count, USAGE);
  if (count < 4) {
    fprintf(stderr, "tasks: at least 4 chunks (the fourth one fails)\n");
    return 2;
  }
  struct chunk *chunks = calloc(count, sizeof *chunks);
  if (chunks == NULL) return 1;
  for (size_t c = 0; c < count; c++) chunks[c] = (struct chunk){c, len, 0};
  double want = 0;
  for (size_t i = 0; i < count * len; i++) want += sample(i) * sample(i);
  /* What the chunks and their temporaries take as the pool counts its
   * peak: each buffer in whole pages (in bytes until 2026-12-05, which
   * printed "peak 0.1 MiB of 0.0 MiB made" for chunks of one double). */
  double page = (double)sysconf(_SC_PAGESIZE);
  double all =
      2.0 * (double)count * ceil((double)(len * sizeof(double)) / page) * page;
  int ok = 1;

  size_t peak[2];
  for (int eager = 1; eager >= 0; eager--) {
    tarn_rt_options o;
    CHECK(tarn_rt_options_init(&o));
    o.eager_free = eager;
    /* No memory limit, whatever TARN_MEM_LIMIT says: the peaks show what
     * eager freeing alone saves (under a limit, buffers kept to the end
     * would be spilled instead). */
    o.pool.mem_limit = 0;
    CHECK(tarn_rt_create(&o, &example_rt));
    tarn_rt *rt = example_rt;
    tarn_region_stats st;
    double total = 0;
    CHECK(pipeline(rt, chunks, count, &st, &total));
    int same = fabs(total - want) <= 1e-9 * want;
    peak[eager] = st.live_peak_bytes;
    printf(
        "tasks: %zu chunks of %zu doubles, eager freeing %s: %llu tasks "
        "run, total %.10g (serial %.10g)%s, peak %.1f MiB of the %.1f MiB "
        "made (buffers in whole pages)\n",
        count, len, eager ? "on " : "off", (unsigned long long)st.run, total,
        want, same ? "" : " <- differs", (double)st.live_peak_bytes / 1048576.0,
        all / 1048576.0);
    ok &= same && st.run == 1 + 3 * count;
    if (eager) {
      /* The failure: the fourth chunk's generator. */
      chunks[3].fail = 1;
      int rc = pipeline(rt, chunks, count, &st, &total);
      chunks[3].fail = 0;
      uint64_t cancelled = 1 + (count - 3); /* its square; accumulations 3.. */
      printf(
          "tasks: chunk 3 fails: wait returned %d, %llu failed, %llu "
          "cancelled, %llu run\n",
          rc, (unsigned long long)st.failed, (unsigned long long)st.cancelled,
          (unsigned long long)st.run);
      ok &= rc == BAD_CHUNK && st.failed == 1 && st.cancelled == cancelled &&
            st.run == 1 + 3 * count - cancelled; /* the failed one ran */
    }
    example_rt_destroy();
  }
  /* Without eager freeing every buffer lives to the region's end. */
  ok &= peak[0] >= (size_t)all && peak[1] < peak[0];

  /* The search: the target is the sum of squares of the middle chunk, so
   * the serial loop's answer is at most that chunk. */
  double *sums = calloc(count, sizeof *sums);
  if (sums == NULL) return 1;
  for (size_t i = 0; i < count * len; i++)
    sums[i / len] += sample(i) * sample(i);
  struct search s = {NULL, sums[count / 2], -1};
  long want_found = -1;
  for (size_t c = 0; c < count && want_found < 0; c++)
    if (sums[c] >= s.target) want_found = (long)c;
  free(sums);
  CHECK(tarn_rt_create(NULL, &example_rt));
  tarn_region_stats st;
  int rc = search(example_rt, chunks, count, &s, &st);
  size_t after = count - 1 - (size_t)s.found; /* scans past the one found */
  printf(
      "tasks: the search found chunk %ld (serial: %ld) and cancelled the "
      "region: %llu of %llu tasks run, %llu cancelled (wait returned %s)\n",
      s.found, want_found, (unsigned long long)st.run,
      (unsigned long long)st.submitted, (unsigned long long)st.cancelled,
      tarn_status_name(rc));
  ok &= rc == TARN_ECANCELED && s.found == want_found &&
        st.run + st.cancelled == st.submitted && st.cancelled >= after;
  example_rt_destroy();
  free(chunks);
  return example_finish("tasks", ok); /* the runtimes are gone already */
}
