/* blas_core.c: which OpenBLAS kernels the `tarn` command runs.
 *
 * OpenBLAS built for every x86-64 processor (DYNAMIC_ARCH, as Debian's)
 * picks its kernels once, when it is loaded, from the processor, unless
 * the OPENBLAS_CORETYPE variable names them. The choice moves every
 * linalg figure, tarn's and the peers' alike (they share the process): on
 * this machine (2 cores of an AMD EPYC with AVX-512) OpenBLAS 0.3.21
 * chooses its Cooperlake kernels, and the environment sets
 * OPENBLAS_CORETYPE=Haswell; dgemm on 4096 x 4096 with two threads ran at
 * 93 GFLOP/s with Haswell's kernels and 160 with SkylakeX's (2026-12-01,
 * outside tarn). So the benchmark says which kernels ran, and whether the
 * variable chose them, next to its figures. tarn itself never sets it: the
 * kernels are the machine's owner's choice.
 *
 * Invariant: nothing here changes OpenBLAS's state; it only reads it. */
#define _POSIX_C_SOURCE 200809L
#include "blas_core.h"

#include <stdio.h>
#include <stdlib.h>

/* OpenBLAS's own (declared in its cblas.h, which tarn's headers avoid). */
extern char *openblas_get_corename(void);
extern char *openblas_get_config(void);

const char *blas_core_name(void) {
  const char *name = openblas_get_corename();
  return name != NULL && name[0] != '\0' ? name : "unknown";
}

int blas_core_forced(void) {
  const char *v = getenv("OPENBLAS_CORETYPE");
  return v != NULL && v[0] != '\0';
}

const char *blas_core_describe(char *buf, size_t size) {
  /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its first two words. */
  const char *config = openblas_get_config();
  if (config == NULL) config = "OpenBLAS";
  int words = 0, len = 0;
  while (config[len] != '\0' && !(config[len] == ' ' && ++words == 2)) len++;
  snprintf(buf, size, "%.*s, %s kernels%s", len, config, blas_core_name(),
           blas_core_forced() ? " (set by OPENBLAS_CORETYPE)"
                              : " (OpenBLAS's choice)");
  return buf;
}
