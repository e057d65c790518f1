/* rcond.c: estimates of the reciprocal condition number 1 / (||A||
 * ||A^-1||) from factors made before (tarn_matrix_lu_rcond,
 * tarn_matrix_cholesky_rcond, tarn_matrix_triangular_rcond; see
 * tarn/linalg.h), as LAPACK's dgecon, dpocon and dtrcon.
 *
 * ||A^-1|| in the one-norm is estimated by Hager's and Higham's method
 * (LAPACK's dlacn2, which drives it by reverse communication): a few
 * products A^-1 x and A^-T x, here each a tiled solve of one column with
 * the factors (at most five rounds of two, and one more). The infinity
 * norm of A^-1 is the one-norm of A^-T, so it swaps the two products. The
 * factors are only read; the vector goes between the caller's memory,
 * where dlacn2 works on it, and a matrix of one column of the factors'
 * row tiling, which the solves work on.
 *
 * On small tiles the estimates run on a copy of the factor in work tiles
 * (tarn__factor_work_tile; of Cholesky's and a triangular T's, only the
 * triangle: tarn__triangle_copy_part), made once for the norm and all
 * the solves: each solve of one vector on tiles of 16 is thousands of
 * tasks, and an estimate makes up to eleven.
 *
 * Where LAPACK scales its triangular solves against overflow (dlatrs), a
 * product here that overflows, or meets a NaN in the factors, makes the
 * estimate infinite: rcond is 0, as for an exactly singular factor. */
#include <lapacke.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "tarn/linalg.h"

/* x = A^-1 x (trans false) or A^-T x (trans true), x a one-column matrix
 * of the factors' row tiling. Returns 0, a status, or (singular) TARN_EINVAL
 * with *info > 0. */
typedef int (*inverse_fn)(void *factors, bool trans, tarn_matrix *x, int *info);

struct lu_factors {
  tarn_matrix *lu;
  const size_t *piv;
};

static int lu_inverse(void *factors, bool trans, tarn_matrix *x, int *info) {
  const struct lu_factors *f = factors;
  return tarn_matrix_lu_solve(f->lu, f->piv, trans ? TARN_TRANS : TARN_NO_TRANS,
                              x, info);
}

static int cholesky_inverse(void *factors, bool trans, tarn_matrix *x,
                            int *info) {
  (void)trans; /* A is symmetric */
  return tarn_matrix_cholesky_solve(factors, x, info);
}

struct triangle {
  tarn_matrix *t;
  tarn_uplo uplo;
  tarn_diag diag;
};

static int triangular_inverse(void *factors, bool trans, tarn_matrix *x,
                              int *info) {
  const struct triangle *f = factors;
  return tarn_matrix_triangular_solve(
      f->t, f->uplo, trans ? TARN_TRANS : TARN_NO_TRANS, f->diag, x, info);
}

/* x = op(A^-1) x through a one-column matrix of `a`'s row tiling. *finite
 * is false when the product overflowed or met a NaN, or the factors are
 * exactly singular. */
static int apply_inverse(const tarn_matrix *a, inverse_fn inverse,
                         void *factors, bool trans, double *x, bool *finite) {
  tarn_matrix *xm = NULL;
  int rc = tarn_matrix_from_buffer(a->rt, a->n, 1, a->mb, 1, x, a->n, &xm);
  int info = 0;
  if (rc == 0) rc = inverse(factors, trans, xm, &info);
  if (rc == 0) rc = tarn_matrix_to_buffer(xm, x, a->n);
  tarn_matrix_destroy(xm);
  *finite = rc == 0;
  if (rc == TARN_EINVAL && info > 0) rc = 0; /* exactly singular */
  for (size_t i = 0; *finite && i < a->n; i++) *finite = isfinite(x[i]);
  return rc;
}

/* Which check of the solves estimate makes first (solves_fit): with LU's
 * factors, with Cholesky's, with a triangle, or none (its caller made
 * it). */
enum solves_check { CHECK_LU, CHECK_CHOLESKY, CHECK_TRIANGLE, CHECKED };

/* Whether the solves with a column of a's row tiling fit under the limit,
 * as each solve checks it (with LU's factors also the column's
 * interchanges), before the column is uploaded: TARN_ENOMEM at once
 * rather than after the first upload. Returns 0, TARN_ENOMEM or a status
 * of making the column's (empty) matrix. */
static int solves_fit(const tarn_matrix *a, enum solves_check check,
                      bool lower) {
  if (check == CHECKED) return 0;
  tarn_matrix *x = NULL;
  int rc = tarn__matrix_new(a->rt, a->n, 1, a->mb, 1, &x);
  if (rc != 0) return rc;
  /* one task per tile column of the vector where it fits, else by tiles */
  enum tarn__solve_kind kind = check == CHECK_LU         ? TARN__SOLVE_LU
                               : check == CHECK_CHOLESKY ? TARN__SOLVE_CHOLESKY
                                                         : TARN__SOLVE_TRIANGLE;
  bool fits = tarn__column_solve(a, x, kind, lower) ||
              (tarn__solve_fits(a, x) &&
               (check != CHECK_LU || tarn__line_fits(x, false)));
  tarn_matrix_destroy(x);
  return fits ? 0 : TARN_ENOMEM;
}

/* *rcond = 1 / (anorm * est), est the estimate of ||A^-1|| in the one-norm
 * (inf_norm false) or the infinity-norm, or 0 when A^-1 x overflowed; the
 * solves checked first (solves_fit). */
static int estimate(const tarn_matrix *a, inverse_fn inverse, void *factors,
                    enum solves_check check, bool inf_norm, double anorm,
                    double *rcond) {
  if (anorm == 0) {
    *rcond = 0; /* as dgecon: the zero matrix is singular */
    return 0;
  }
  int fit = solves_fit(a, check, true);
  if (fit != 0) return fit;
  lapack_int n = (lapack_int)a->n, kase = 0, isave[3] = {0, 0, 0};
  double *v = malloc(a->n * sizeof *v), *x = malloc(a->n * sizeof *x);
  lapack_int *isgn = malloc(a->n * sizeof *isgn);
  double est = 0;
  bool finite = true;
  int rc = v == NULL || x == NULL || isgn == NULL ? TARN_ENOMEM : 0;
  /* dlacn2 asks for A^-1 x with kase 1 and A^-T x with kase 2, for the
   * one-norm; the infinity-norm swaps them (as dgecon's kase1). */
  lapack_int kase_inverse = inf_norm ? 2 : 1;
  while (rc == 0 && finite) {
    LAPACKE_dlacn2_work(n, v, x, isgn, &est, &kase, isave);
    if (kase == 0) break;
    rc = apply_inverse(a, inverse, factors, kase != kase_inverse, x, &finite);
  }
  if (rc == 0) *rcond = finite && est > 0 ? (1 / est) / anorm : 0;
  free(v);
  free(x);
  free(isgn);
  return rc;
}

static bool norm_ok(double anorm) { return anorm >= 0 && isfinite(anorm); }

int tarn_matrix_lu_rcond(tarn_matrix *lu, const size_t *piv, tarn_norm kind,
                         double anorm, double *rcond) {
  if (piv == NULL || rcond == NULL || !tarn__factor_shape_ok(lu) ||
      !norm_ok(anorm) || (kind != TARN_NORM_ONE && kind != TARN_NORM_INF))
    return TARN_EINVAL;
  for (size_t i = 0; i < lu->m; i++)
    if (piv[i] < i || piv[i] >= lu->m) return TARN_EINVAL;
  size_t work = tarn__factor_work_tile(lu, 'F');
  if (work != 0) { /* the same call on a copy in work tiles */
    tarn_matrix *luw = NULL;
    int rc = tarn__retile_part_waiting(lu, 'F', work, work, &luw);
    if (rc == 0) rc = tarn_matrix_lu_rcond(luw, piv, kind, anorm, rcond);
    tarn_matrix_destroy(luw);
    return rc;
  }
  struct lu_factors f = {lu, piv};
  return estimate(lu, lu_inverse, &f, CHECK_LU, kind == TARN_NORM_INF, anorm,
                  rcond);
}

int tarn_matrix_cholesky_rcond(tarn_matrix *l, double anorm, double *rcond) {
  if (rcond == NULL || !tarn__factor_shape_ok(l) || !norm_ok(anorm))
    return TARN_EINVAL;
  size_t work = tarn__factor_work_tile(l, 'L');
  if (work != 0) { /* the same call on a copy of L in work tiles */
    tarn_matrix *lw = NULL;
    int rc = tarn__retile_part_waiting(l, 'L', work, work, &lw);
    if (rc == 0) rc = tarn_matrix_cholesky_rcond(lw, anorm, rcond);
    tarn_matrix_destroy(lw);
    return rc;
  }
  return estimate(l, cholesky_inverse, l, CHECK_CHOLESKY, false, anorm, rcond);
}

int tarn_matrix_triangular_rcond(tarn_matrix *t, tarn_uplo uplo, tarn_diag diag,
                                 tarn_norm kind, double *rcond) {
  if (rcond == NULL || !tarn__triangle_shape_ok(t) ||
      (uplo != TARN_LOWER && uplo != TARN_UPPER) ||
      (diag != TARN_NON_UNIT && diag != TARN_UNIT) ||
      (kind != TARN_NORM_ONE && kind != TARN_NORM_INF))
    return TARN_EINVAL;
  /* on small tiles: the same call on a copy of its triangle
   * (tarn__triangle_copy_part) */
  char part = tarn__triangle_copy_part(t, uplo == TARN_LOWER);
  size_t work = part != 0 ? tarn__factor_work_tile(t, part) : 0;
  if (work != 0) {
    tarn_matrix *tw = NULL;
    int rc = tarn__retile_part_waiting(t, part, work, work, &tw);
    if (rc == 0) rc = tarn_matrix_triangular_rcond(tw, uplo, diag, kind, rcond);
    tarn_matrix_destroy(tw);
    return rc;
  }
  /* before the norm's tasks */
  int rc = solves_fit(t, CHECK_TRIANGLE, uplo == TARN_LOWER);
  if (rc != 0) return rc;
  double tnorm = 0;
  rc = tarn__matrix_line_norm(t, kind == TARN_NORM_INF,
                              uplo == TARN_LOWER ? 'L' : 'U', diag == TARN_UNIT,
                              &tnorm);
  if (rc != 0) return rc;
  if (!isfinite(tnorm)) { /* an infinite or NaN element */
    *rcond = 0;
    return 0;
  }
  struct triangle f = {t, uplo, diag};
  return estimate(t, triangular_inverse, &f, CHECKED, kind == TARN_NORM_INF,
                  tnorm, rcond);
}
