/* vmath.h: loops over arrays, vectorised by hand where the machine
 * allows (the processor's AVX2, checked once): sin through glibc's libmvec
 * (within 4 ulp of libm's sin), libm's sin otherwise; and the column sums
 * of the radius-1 stencil. Thread-safe. */
#ifndef TARN_ARRAY_VMATH_H
#define TARN_ARRAY_VMATH_H

#include <stddef.h>

/* out[k] = sin(in[k]) for k < n. `out` may equal `in`. */
void tarn__vsin(const double *in, double *out, size_t n);

/* o[p] = 0.0 + c0[p] + c0[p + 1] + c0[p + 2] + c1[p] + c1[p + 1] + c1[p + 2]
 * + c2[p] + c2[p + 1] + c2[p + 2] for p < n, added in that order (the
 * same bits on every path). `o` must not overlap the sources. Each store
 * of the AVX2 path comes after the loads of the next rows: see vmath.c. */
void tarn__vsum3(const double *c0, const double *c1, const double *c2,
                 double *o, size_t n);

#endif
