/* consumer.c: a program outside tarn's tree that uses the installed
 * library: it prints the version and allocates from a slab. */
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
  printf("tarn %s %s %s\n", tarn_version(), p,
         tarn_strerror(tarn_slab_release(set, slab)));
  tarn_slab_set_destroy(set);
  return 0;
}
