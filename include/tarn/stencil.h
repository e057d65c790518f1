/* tarn/stencil.h: neighbourhood operations on tiled matrices. Each output
 * tile is one task that reads its own tile of the input and the tiles
 * around it within the radius, assembles the tile with its halo in the
 * worker's scratch memory, and runs a kernel on it (the built-in radius-1
 * sum reads the source tiles in place instead, with only the edge rows and
 * columns looked up through the halo). At the matrix edge a boundary
 * condition supplies the missing elements, per dimension.
 *
 * Like the operations of tarn/matrix.h, these submit tasks and return at
 * once; results are ordered after everything submitted before them, so two
 * calls in a row (A = 1, then B = 2 A) run in that order. Thread-safety as
 * for tarn/matrix.h. */
#ifndef TARN_STENCIL_H
#define TARN_STENCIL_H

#include <stddef.h>

#include "tarn/export.h"
#include "tarn/matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an index p outside 0..n-1 of a dimension of size n reads. */
typedef enum tarn_boundary_kind {
  TARN_BOUNDARY_WRAP,    /* x[p mod n] (periodic) */
  TARN_BOUNDARY_PAD,     /* the value `pad` */
  TARN_BOUNDARY_CLAMP,   /* x[0] or x[n-1] */
  TARN_BOUNDARY_REFLECT, /* edge repeated: x[-1-p], x[2n-1-p]
                          * (c b a | a b c d | d c b) */
  TARN_BOUNDARY_MIRROR   /* edge not repeated: x[-p], x[2n-2-p]
                          * (d c b | a b c d | c b a) */
} tarn_boundary_kind;

typedef struct tarn_boundary {
  tarn_boundary_kind kind;
  double pad; /* for TARN_BOUNDARY_PAD */
} tarn_boundary;

/* A stencil: its radius (the neighbourhood of element (i, j) is rows
 * i-r..i+r, columns j-r..j+r) and the boundary condition along the row
 * index i (`rows`: above row 0 and below row M-1) and along the column
 * index j (`cols`). An element outside in rows with a Pad row condition
 * reads the rows' pad; else one outside in columns with a Pad column
 * condition reads the columns' pad. Reflections farther than the matrix
 * size fold back again (as the periodic extension of the reflected
 * sequence). */
typedef struct tarn_stencil {
  size_t radius;
  tarn_boundary rows, cols;
} tarn_stencil;

/* Sets *s to radius `radius` with the same condition in both dimensions.
 * Returns 0, or TARN_EINVAL for a NULL s, a radius of 0 or an unknown
 * kind. */
TARN_API int tarn_stencil_init(tarn_stencil *s, size_t radius,
                               tarn_boundary_kind kind, double pad);

/* A user kernel. `in` points at element (0, 0) of the input tile inside a
 * buffer that holds the tile with its halo: in[p + q * ld_in] is valid for
 * p in -radius..rows+radius-1 and q in -radius..cols+radius-1
 * (column-major). The kernel writes all of out[p + q * ld_out] for p <
 * rows, q < cols. It runs on a worker thread, concurrently with other tiles,
 * and must not keep `in` or `out`. Returns 0, or a nonzero status that fails
 * the task (and cancels what depends on it). */
typedef int (*tarn_stencil_fn)(const double *in, size_t ld_in, double *out,
                               size_t ld_out, size_t rows, size_t cols,
                               size_t radius, void *arg);

/* *out = fn applied to every tile of `a` with its halo under `s`. *out, when
 * not NULL, must have a's shape and tiling and must not be `a` (the tasks
 * read neighbouring tiles); when NULL a new matrix is made there (the
 * caller owns it). `arg` is passed to fn as is and must stay valid until
 * the tasks are done. Returns 0; TARN_EINVAL for a NULL argument, an
 * invalid stencil, a radius larger than the tile rows or columns, *out ==
 * a, or a layout mismatch; TARN_ENOMEM, and so at once, *out unchanged,
 * under a memory limit below one task's tiles (the output tile and every
 * input tile its halo reads: tarn/matrix.h). The tile with its halo, (mb + 2r)
 * (nb + 2r) doubles, is assembled in the worker's scratch, or on the heap
 * when the scratch cannot hold it (a task fails with TARN_ENOMEM when
 * neither can). */
TARN_API int tarn_stencil_apply(const tarn_stencil *s, tarn_matrix *a,
                                tarn_stencil_fn fn, void *arg,
                                tarn_matrix **out);

/* *out = the sum of the (2r+1) x (2r+1) neighbourhood of each element,
 * added column by column (offset j-r first), top to bottom within a
 * column, starting from 0. Returns as tarn_stencil_apply. */
TARN_API int tarn_stencil_sum(const tarn_stencil *s, tarn_matrix *a,
                              tarn_matrix **out);

/* b = value for every element, in place. Returns 0, TARN_EINVAL for a NULL
 * b, TARN_ENOMEM. */
TARN_API int tarn_stencil_assign(tarn_matrix *b, double value);

/* b = b + a elementwise, in place (same shape and tiling, else
 * TARN_EINVAL). Returns 0, TARN_EINVAL, TARN_ENOMEM. */
TARN_API int tarn_stencil_update_add(tarn_matrix *b, tarn_matrix *a);

#ifdef __cplusplus
}
#endif

#endif
