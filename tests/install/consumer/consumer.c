/* consumer.c: a program outside tarn's tree that uses the installed
 * library: it prints the version, allocates from a slab and uses a pool. */
#include <stdio.h>
#include <string.h>

#include <tarn.h>

int main(void) {
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
