/* logdet.c: the determinant of A from factors made before, as a logarithm
 * and a sign (tarn_matrix_lu_logdet, tarn_matrix_cholesky_logdet; see
 * tarn/linalg.h).
 *
 * det A is the product of a factor's diagonal (U's, times the sign of the
 * row interchanges; L's, squared), which over- or underflows a double
 * long before its logarithm does. One task per diagonal tile multiplies
 * its elements' magnitudes as a mantissa in [0.5, 1) and a binary
 * exponent (frexp scales exactly: no logarithm per element), and counts
 * the negative ones, into an array of the caller's; the caller combines
 * the tiles in order and takes one logarithm at the end, so the result
 * does not depend on the number of workers. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "tarn/linalg.h"

/* A product of magnitudes: mant 2^exp (mant in [0.5, 1), or 1 while
 * empty), with flags for a factor that was 0, infinite or a NaN, and the
 * count of negative factors. */
struct product {
  double mant;
  long exp;
  size_t negatives;
  bool zero, inf, nan;
};

/* x times the finite, nonzero magnitude 2^e m (m in [0.5, 1)). */
static void scale_by(struct product *x, double m, long e) {
  int renorm;
  x->mant = frexp(x->mant * m, &renorm);
  x->exp += e + renorm;
}

static void times_element(struct product *p, double v) {
  if (isnan(v)) {
    p->nan = true;
    return;
  }
  p->negatives += signbit(v) != 0;
  if (v == 0) {
    p->zero = true;
  } else if (isinf(v)) {
    p->inf = true;
  } else {
    int e;
    double m = frexp(fabs(v), &e);
    scale_by(p, m, e);
  }
}

static void times_product(struct product *p, const struct product *q) {
  scale_by(p, q->mant, q->exp);
  p->negatives += q->negatives;
  p->zero |= q->zero;
  p->inf |= q->inf;
  p->nan |= q->nan;
}

/* log of the product's magnitude: -inf for a zero, +inf for an infinite
 * factor, NaN for a NaN or both. */
static double log_of(const struct product *p) {
  if (p->nan || (p->zero && p->inf)) return NAN;
  if (p->zero) return -INFINITY;
  if (p->inf) return INFINITY;
  return log(p->mant) + (double)p->exp * 0x1.62e42fefa39efp-1; /* ln 2 */
}

/* What one diagonal tile's task needs; owned by the task. */
struct diag_job {
  size_t n, ld;            /* the diagonal's length, the tile's rows */
  struct product *product; /* where it goes, in the caller's array */
};

static int k_diagonal(tarn_task *t, void *arg) {
  const struct diag_job *j = arg;
  const double *a = tarn_task_data(t, 0);
  struct product p = {.mant = 1};
  for (size_t i = 0; i < j->n; i++) times_element(&p, a[i + i * j->ld]);
  *j->product = p;
  return 0;
}

/* The product of the diagonal of the square `a` (square tiles), waited
 * for in a region of its own. */
static int diagonal_product(tarn_matrix *a, struct product *out) {
  /* a task per diagonal tile: the first is the largest */
  if (!tarn__task_fits(a->rt, tarn__tile_charge_at(a, 0, 0)))
    return TARN_ENOMEM;
  struct product *part = calloc(a->nt, sizeof *part);
  if (part == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    free(part);
    return rc;
  }
  for (size_t k = 0; rc == 0 && k < a->nt; k++) {
    struct diag_job j = {.n = tarn__tile_cols(a, k),
                         .ld = tarn__tile_rows(a, k),
                         .product = &part[k]};
    tarn_dep dep = {tarn__tile(a, k, k), TARN_READ};
    rc = tarn__submit_owned(a->rt, k_diagonal, &j, sizeof j, &dep, 1, 0,
                            "diagonal");
  }
  int wrc = tarn_region_wait(region, NULL);
  if (rc == 0) rc = wrc;
  if (rc == 0) {
    *out = (struct product){.mant = 1};
    for (size_t k = 0; k < a->nt; k++) times_product(out, &part[k]);
  }
  free(part);
  return rc;
}

int tarn_matrix_lu_logdet(tarn_matrix *lu, const size_t *piv, double *logabsdet,
                          int *sign) {
  if (piv == NULL || logabsdet == NULL || sign == NULL ||
      !tarn__factor_shape_ok(lu))
    return TARN_EINVAL;
  size_t swaps = 0;
  for (size_t i = 0; i < lu->m; i++) {
    if (piv[i] < i || piv[i] >= lu->m) return TARN_EINVAL;
    swaps += piv[i] != i;
  }
  struct product p;
  int rc = diagonal_product(lu, &p);
  if (rc != 0) return rc;
  *logabsdet = log_of(&p);
  *sign = p.nan || p.zero ? 0 : (swaps + p.negatives) % 2 ? -1 : 1;
  return 0;
}

int tarn_matrix_cholesky_logdet(tarn_matrix *l, double *logdet) {
  if (logdet == NULL || !tarn__factor_shape_ok(l)) return TARN_EINVAL;
  struct product p;
  int rc = diagonal_product(l, &p);
  if (rc == 0) *logdet = 2 * log_of(&p);
  return rc;
}
