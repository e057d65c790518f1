/* consumer.c: a program outside tarn's tree that uses the installed
 * library: it prints the version, allocates from a slab, uses a pool and
 * submits a task with tarn_submit's items as strict C code writes them (a
 * pointer to const from a call, a priority of another integer type). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <tarn.h>

static const double three = 3.0;

static const double *the_three(void) { return &three; }

static int set_three(tarn_task *t, void *arg) {
  *(double *)tarn_task_data(t, 0) = *(const double *)arg;
  return 0;
}

/* 0 when a task given the_three() wrote 3. */
static int submit_with_items(void) {
  tarn_rt *rt = NULL;
  tarn_ref *x = NULL;
  tarn_region *region = NULL;
  size_t level = 2;
  void *bytes = NULL;
  if (tarn_rt_create(NULL, &rt) != 0) return 1;
  int rc = tarn_ref_alloc(tarn_rt_pool(rt), sizeof(double), 0, &x);
  if (rc == 0) rc = tarn_region_begin(rt, &region);
  if (rc == 0)
    rc = tarn_submit(rt, set_three, TARN_ARG(the_three()), TARN_W(x),
                     TARN_PRIORITY(level));
  if (region != NULL && tarn_region_wait(region, NULL) != 0) rc = 1;
  if (rc == 0 && (rc = tarn_ref_pin(x, TARN_READ, 0, &bytes)) == 0) {
    rc = *(double *)bytes == 3.0 ? 0 : 1;
    tarn_ref_unpin(x);
  }
  if (x != NULL) tarn_ref_release(x);
  return tarn_rt_destroy(rt) != 0 || rc != 0;
}

int main(void) {
  if (submit_with_items() != 0) {
    fprintf(stderr, "consumer: a task failed\n");
    return 1;
  }
  tarn_slab_set *set = NULL;
  tarn_slab *slab = NULL;
  char *p = NULL;
  if (tarn_slab_set_create(NULL, &set) != 0 ||
      tarn_slab_acquire(set, &slab) != 0 ||
      tarn_slab_alloc(slab, 32, 16, (void **)&p) != 0) {
    fprintf(stderr, "consumer: tarn failed\n");
    return 1;
  }
  strcpy(p, "slab ok");
  tarn_pool *pool = NULL;
  tarn_ref *ref = NULL;
  void *bytes = NULL;
  if (tarn_pool_create(NULL, &pool) != 0 ||
      tarn_ref_alloc(pool, 64, 0, &ref) != 0 ||
      tarn_ref_pin(ref, TARN_WRITE, 0, &bytes) != 0 ||
      tarn_ref_unpin(ref) != 0 || tarn_ref_release(ref) != 0 ||
      tarn_pool_destroy(pool) != 0) {
    fprintf(stderr, "consumer: tarn pool failed\n");
    return 1;
  }
  printf("tarn %s %s %s\n", tarn_version(), p,
         tarn_strerror(tarn_slab_release(set, slab)));
  tarn_slab_set_destroy(set);
  return 0;
}
