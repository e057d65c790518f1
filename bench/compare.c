/* compare.c: placeholder until `tarn bench compare` is written. */
#include <stdio.h>

#include "bench.h"

int bench_compare(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fputs("tarn bench compare: not built yet\n", stderr);
  return 2;
}
