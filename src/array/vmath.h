/* vmath.h: elementwise math over arrays, vectorised where the machine
 * allows: sin through glibc's libmvec (AVX2, within 4 ulp of libm's sin)
 * when the processor has AVX2, libm's sin otherwise. Thread-safe. */
#ifndef TARN_ARRAY_VMATH_H
#define TARN_ARRAY_VMATH_H

#include <stddef.h>

/* out[k] = sin(in[k]) for k < n. `out` may equal `in`. */
void tarn__vsin(const double *in, double *out, size_t n);

#endif
