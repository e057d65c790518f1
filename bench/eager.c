/* eager.c: placeholder until the suite is written. */
#include "bench.h"

int bench_eager(bench_run *run) {
  bench_note(run, "eager", "not built yet");
  return 0;
}
