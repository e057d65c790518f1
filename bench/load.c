/* load.c: placeholder until the suite is written. */
#include "bench.h"

int bench_load(bench_run *run) {
  bench_note(run, "load", "not built yet");
  return 0;
}
