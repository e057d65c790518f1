/* blas_core.h: which OpenBLAS kernels the `tarn` command runs, for the
 * settings line of `tarn bench`, its JSON and `tarn version`. See
 * blas_core.c. Thread-safe once OpenBLAS is loaded (it is before main). */
#ifndef TARN_BENCH_BLAS_CORE_H
#define TARN_BENCH_BLAS_CORE_H

#include <stddef.h>

/* The kernels OpenBLAS runs ("Haswell", "SkylakeX", ...; "unknown" when it
 * does not say). */
const char *blas_core_name(void);

/* Whether the OPENBLAS_CORETYPE variable chose them (set and not empty). */
int blas_core_forced(void);

/* Writes into `buf` a line saying which OpenBLAS and kernels run, and
 * whether the variable chose them ("OpenBLAS 0.3.21, Haswell kernels (set
 * by OPENBLAS_CORETYPE)"). Returns buf. */
const char *blas_core_describe(char *buf, size_t size);

#endif
