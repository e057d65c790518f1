/* ooc.c: placeholder until the suite is written. */
#include "bench.h"

int bench_ooc(bench_run *run) {
  bench_note(run, "ooc", "not built yet");
  return 0;
}

int bench_ooc_child(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return 2;
}
