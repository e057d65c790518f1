/* stencil_peers.h: the loops of the `stencil` suite's peers (stencil.c): the
 * operations on a plain N x N column-major buffer of doubles, as one inline
 * function over a range of columns, so that the plain C loop (stencil.c)
 * and the OpenMP loop (stencil_omp.c, built with -fopenmp) run the same
 * code. The 3 x 3 neighbourhood sum maps outside indices with the boundary
 * condition only at the edges (the first and last row and column); the
 * interior is a straight loop over three columns, adding in tarn's order
 * (column j-1 first, top to bottom within a column, from 0). */
#ifndef TARN_BENCH_STENCIL_PEERS_H
#define TARN_BENCH_STENCIL_PEERS_H

#include <stddef.h>

/* The operations, in the order of BENCH.md's table. */
enum stencil_op {
  STENCIL_ASSIGN,  /* out = 1 */
  STENCIL_WRAP,    /* out = 3 x 3 sum of x, periodic */
  STENCIL_PAD,     /* out = 3 x 3 sum of x, 0 outside */
  STENCIL_CLAMP,   /* out = 3 x 3 sum of x, the edge element outside */
  STENCIL_REFLECT, /* out = 3 x 3 sum of x, edge repeated (c b a | a b c) */
  STENCIL_UPDATE,  /* out = out + x */
  STENCIL_MULTI,   /* a = 1, then out = 2 a */
  STENCIL_ALLOC,   /* out (new) = 3 x 3 sum of x, periodic */
  STENCIL_OP_COUNT
};

/* Columns per step of the OpenMP loop. */
#define STENCIL_BLOCK 32

/* The boundary condition of a neighbourhood operation, or -1 for none. */
static inline int stencil_kind(int op) {
  switch (op) {
    case STENCIL_WRAP:
    case STENCIL_ALLOC:
      return STENCIL_WRAP;
    case STENCIL_PAD:
    case STENCIL_CLAMP:
    case STENCIL_REFLECT:
      return op;
    default:
      return -1;
  }
}

/* The index that index p (-1 <= p <= n) reads under `kind`, or -1 for the
 * pad value 0. */
static inline ptrdiff_t stencil_map(ptrdiff_t p, ptrdiff_t n, int kind) {
  if (p >= 0 && p < n) return p;
  switch (kind) {
    case STENCIL_WRAP:
      return p < 0 ? p + n : p - n;
    case STENCIL_CLAMP:
      return p < 0 ? 0 : n - 1;
    case STENCIL_REFLECT: /* x[-1] = x[0], x[n] = x[n-1] */
      return p < 0 ? -1 - p : 2 * n - 1 - p;
    default:
      return -1;
  }
}

/* The neighbourhood sum of element (i, j), every index mapped. */
static inline double stencil_edge(const double *x, ptrdiff_t n, ptrdiff_t i,
                                  ptrdiff_t j, int kind) {
  double s = 0;
  for (ptrdiff_t dj = -1; dj <= 1; dj++) {
    ptrdiff_t q = stencil_map(j + dj, n, kind);
    for (ptrdiff_t di = -1; di <= 1; di++) {
      ptrdiff_t p = stencil_map(i + di, n, kind);
      s += p < 0 || q < 0 ? 0.0 : x[p + q * n];
    }
  }
  return s;
}

/* Column j of the neighbourhood sum of x into out. */
static inline void stencil_column(const double *x, double *out, size_t size,
                                  size_t j, int kind) {
  ptrdiff_t n = (ptrdiff_t)size, jj = (ptrdiff_t)j;
  double *o = out + jj * n;
  ptrdiff_t ql = stencil_map(jj - 1, n, kind),
            qr = stencil_map(jj + 1, n, kind);
  if (n < 3 || ql < 0 || qr < 0) {
    for (ptrdiff_t i = 0; i < n; i++) o[i] = stencil_edge(x, n, i, jj, kind);
    return;
  }
  const double *a = x + ql * n, *b = x + jj * n, *c = x + qr * n;
  o[0] = stencil_edge(x, n, 0, jj, kind);
  for (ptrdiff_t i = 1; i < n - 1; i++) {
    double s = a[i - 1];
    s += a[i];
    s += a[i + 1];
    s += b[i - 1];
    s += b[i];
    s += b[i + 1];
    s += c[i - 1];
    s += c[i];
    s += c[i + 1];
    o[i] = s;
  }
  o[n - 1] = stencil_edge(x, n, n - 1, jj, kind);
}

/* Does `op` for columns [j0, j1) of the n x n result `out` (and of `a` for
 * multi-expr), reading x. */
static inline void stencil_cols(int op, const double *x, double *a, double *out,
                                size_t n, size_t j0, size_t j1) {
  size_t k0 = j0 * n, k1 = j1 * n;
  switch (op) {
    case STENCIL_ASSIGN:
      for (size_t k = k0; k < k1; k++) out[k] = 1.0;
      return;
    case STENCIL_UPDATE:
      for (size_t k = k0; k < k1; k++) out[k] = out[k] + x[k];
      return;
    case STENCIL_MULTI:
      for (size_t k = k0; k < k1; k++) a[k] = 1.0;
      for (size_t k = k0; k < k1; k++) out[k] = 2.0 * a[k];
      return;
    default:
      for (size_t j = j0; j < j1; j++)
        stencil_column(x, out, n, j, stencil_kind(op));
      return;
  }
}

/* The OpenMP peer (stencil_omp.c): `#pragma omp parallel for` with
 * `threads` threads over steps of STENCIL_BLOCK columns, static
 * schedule, running stencil_cols. */
void stencil_omp_run(int op, const double *x, double *a, double *out, size_t n,
                     unsigned threads);

#endif
