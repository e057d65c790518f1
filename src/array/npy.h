/* npy.h: NumPy's .npy file format (numpy.lib.format), as far as tarn's
 * matrices need it: the header of a 1-D or 2-D array of float64 or
 * float32, read, and the header of a 2-D float64 array in Fortran order,
 * written. Pure functions over bytes; the files themselves are
 * matrix_file.c's.
 *
 * A file is the magic "\x93NUMPY", a major and a minor version byte, the
 * header's length (2 bytes little-endian in version 1.0, 4 in 2.0 and
 * 3.0), the header (a Python dict literal with the keys 'descr',
 * 'fortran_order' and 'shape', padded with spaces, ending in a newline),
 * then the elements, nothing between them. */
#ifndef TARN_ARRAY_NPY_H
#define TARN_ARRAY_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a header says of the array after it. */
typedef struct tarn__npy {
  size_t rows, cols;    /* shape (m, n); a 1-D array (m,) is m x 1 */
  size_t item;          /* bytes an element: 8 (float64) or 4 (float32) */
  bool big_endian;      /* '>' in 'descr' */
  bool fortran_order;   /* column-major elements, else row-major */
  uint64_t data_offset; /* where the elements begin: the header's end */
  uint64_t data_bytes;  /* rows * cols * item */
} tarn__npy;

/* The most bytes a header may take, magic to newline: far above any 2-D
 * header (numpy's own stay under 128 bytes), so a file claiming more is
 * refused rather than read. */
#define TARN__NPY_HEADER_MAX ((size_t)1 << 16)

/* The header's end (where the elements begin) from the file's first `len`
 * bytes. Returns 0 and *end; TARN_EFORMAT when they do not begin an .npy
 * file of version 1.0, 2.0 or 3.0 or say a header longer than
 * TARN__NPY_HEADER_MAX. */
int tarn__npy_header_end(const unsigned char *buf, size_t len, uint64_t *end);

/* Reads a whole header: `buf` holds the file's first `len` bytes, at least
 * up to the end tarn__npy_header_end gave. Returns 0 and *out;
 * TARN_EFORMAT when the header does not parse as numpy writes it, has a
 * 'descr' other than '<f8', '>f8', '<f4' or '>f4', a shape of other than
 * 1 or 2 dimensions, or elements whose bytes do not fit in a uint64_t;
 * TARN_EINVAL for a dimension of 0 (tarn has no empty matrices). *out is
 * untouched on failure. */
int tarn__npy_parse(const unsigned char *buf, size_t len, tarn__npy *out);

/* The header of a rows x cols float64 array in Fortran order, its bytes
 * big-endian ('>f8') or little-endian ('<f8'), version 1.0, padded to a
 * multiple of 64 bytes: written to buf (size >= 128 always suffices) and
 * its length returned, 0 when it does not fit. */
size_t tarn__npy_format(unsigned char *buf, size_t size, size_t rows,
                        size_t cols, bool big_endian);

#endif
