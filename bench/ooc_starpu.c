/* ooc_starpu.c: placeholder until the StarPU peer of the ooc suite is
 * written. */
#include "bench.h"
