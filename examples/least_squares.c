/* least_squares.c: fitting a polynomial by QR, on tiles.
 *
 * Observations y_i = p(t_i) + noise at M points t_i in [-1, 1], with p of
 * degree D and known coefficients. The design matrix A (M x (D + 1),
 * A(i, j) = t_i^j) is filled by a user kernel on its tiles, factored as
 * A = Q R (tarn_matrix_qr), and the least-squares coefficients come from
 * tarn_matrix_qr_solve. The program checks what a least-squares solution
 * must satisfy: the residual r = A c - y is orthogonal to A's columns
 * (||A^T r|| is at rounding level), the residual is no
 * larger than the noise, and the coefficients are the known ones to
 * within what the noise allows. It prints A's reciprocal condition
 * number, which tarn_matrix_triangular_rcond estimates from R, and each
 * coefficient's standard error, sigma sqrt(((A^T A)^-1)_jj), where
 * tarn_matrix_qr_ata_inverse gives (A^T A)^-1 = R^-1 R^-T from the
 * factor. A fourth check: every coefficient lies within 6 standard
 * errors of the known one, the noise's estimated sigma is within 6 of its
 * own standard deviations (about 0.45 / sqrt(M - D - 1) of sigma for
 * uniform noise) of the true NOISE / sqrt(3), and (A^T A) times its
 * inverse is I to rounding. A fifth: the residual comes again from the
 * factor alone, with Q applied and never formed (tarn_matrix_qr_multiply):
 * Q^T y holds R c on top, and Q applied to it with those rows zeroed is
 * y - A c, which must match -r to rounding.
 *
 *   build/examples/least_squares [M DEGREE TILE_ROWS]   (default 200000 5 8192)
 *
 * Exits 0 when the five checks pass, 1 otherwise. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tarn.h>

#include "example.h"

#define USAGE "least_squares [M DEGREE TILE_ROWS]"

#define NOISE 1e-3

struct problem {
  size_t m, degree;
  const double *coef; /* p's coefficients, degree + 1 of them */
};

static double point(const struct problem *p, size_t i) {
  return -1.0 + 2.0 * (double)i / (double)(p->m - 1);
}

/* Noise in [-NOISE, NOISE], from the point's index alone (so that the
 * tiles can be filled in any order, on any worker). */
static double noise(size_t i) {
  uint64_t z = i * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return NOISE * (2.0 * (double)(z >> 11) / 9007199254740992.0 - 1.0);
}

/* Fills a block of A (data[0]) and of y (data[1], one column). */
static int fill_design(const tarn_block *b, void *arg) {
  const struct problem *p = arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t r = 0; r < b->rows; r++) {
      double t = point(p, b->row + r), power = 1.0;
      for (size_t j = 0; j < b->col + q; j++) power *= t;
      b->data[0][r + q * b->ld] = power;
    }
  return 0;
}

/* Zeroes the rows above *arg (a size_t) of a block of one matrix. */
static int zero_top_rows(const tarn_block *b, void *arg) {
  size_t top = *(const size_t *)arg;
  for (size_t q = 0; q < b->cols; q++)
    for (size_t p = 0; p < b->rows && b->row + p < top; p++)
      b->data[0][p + q * b->ld] = 0.0;
  return 0;
}

static int fill_observations(const tarn_block *b, void *arg) {
  const struct problem *p = arg;
  for (size_t r = 0; r < b->rows; r++) {
    double t = point(p, b->row + r), v = 0;
    for (size_t j = p->degree + 1; j-- > 0;) v = v * t + p->coef[j];
    b->data[0][r] = v + noise(b->row + r);
  }
  return 0;
}

int main(int argc, char **argv) {
  static const double known[] = {0.5,  -1.25, 2.0, 0.75, -3.0, 1.5,
                                 0.25, -0.5,  1.0, 2.5,  -1.0};
  example_start(argc, argv, 3, USAGE);
  size_t m = example_size(argc, argv, 1, 200000, USAGE),
         degree = example_size(argc, argv, 2, 5, USAGE),
         tile = example_size(argc, argv, 3, 8192, USAGE);
  size_t n = degree + 1;
  if (n > sizeof known / sizeof known[0] || m < 2 * n || tile < n) {
    fprintf(stderr,
            "least_squares: degree at most 10, M at least 2(D+1), "
            "TILE_ROWS at least D+1\n");
    return 2;
  }
  struct problem prob = {m, degree, known};
  CHECK(tarn_rt_create(NULL, &example_rt));
  tarn_rt *rt = example_rt;

  /* A: tiles of `tile` rows and all n columns (one tile column, which QR
   * takes with tiles that are not square); y: the same row tiles. */
  tarn_matrix *a = NULL, *y = NULL, *t = NULL, *c = NULL, *r = NULL,
              *at_r = NULL;
  CHECK(tarn_matrix_zeros(rt, m, n, tile, n, &a));
  CHECK(tarn_matrix_zeros(rt, m, 1, tile, 1, &y));
  tarn_matrix *const design[] = {a};
  tarn_matrix *const observed[] = {y};
  const tarn_access write[] = {TARN_WRITE};
  CHECK(tarn_matrix_apply(design, write, 1, fill_design, &prob));
  CHECK(tarn_matrix_apply(observed, write, 1, fill_observations, &prob));

  tarn_matrix *qr = NULL; /* A is kept for the checks; QR works on a copy */
  CHECK(tarn_matrix_copy(a, &qr));
  CHECK(tarn_matrix_qr(qr, 0, &t));
  int info = 0;
  CHECK(tarn_matrix_qr_solve(qr, t, TARN_NO_TRANS, y, &c, &info));
  /* R's condition is A's: how much the noise can move the coefficients.
   * R is the top of the factor; the reflectors below it are not read. */
  double rcond = 0;
  CHECK(tarn_matrix_triangular_rcond(qr, TARN_UPPER, TARN_NON_UNIT,
                                     TARN_NORM_ONE, &rcond));

  /* r = A c - y, then A^T r. */
  CHECK(tarn_matrix_copy(y, &r));
  CHECK(tarn_matrix_gemv(a, TARN_NO_TRANS, c, 1.0, -1.0, &r));
  CHECK(tarn_matrix_gemv(a, TARN_TRANS, r, 1.0, 0.0, &at_r));
  /* The residual again, from the factor alone (Q never formed): Q^T y =
   * [R c; Q^T (y - A c)], so Q applied to it with its top n rows zeroed
   * is y - A c = -r. */
  tarn_matrix *qy = NULL, *twice = NULL;
  CHECK(tarn_matrix_copy(y, &qy));
  CHECK(tarn_matrix_qr_multiply(qr, t, TARN_LEFT, TARN_TRANS, qy));
  tarn_matrix *const rotated[] = {qy};
  const tarn_access update[] = {TARN_READ_WRITE};
  CHECK(tarn_matrix_apply(rotated, update, 1, zero_top_rows, &n));
  CHECK(tarn_matrix_qr_multiply(qr, t, TARN_LEFT, TARN_NO_TRANS, qy));
  CHECK(tarn_matrix_add(qy, r, &twice));
  double norm_a, norm_c, norm_y, norm_r, norm_atr, norm_twice;
  CHECK(tarn_matrix_norm(twice, TARN_NORM_FRO, &norm_twice));
  CHECK(tarn_matrix_norm(a, TARN_NORM_FRO, &norm_a));
  CHECK(tarn_matrix_norm(c, TARN_NORM_FRO, &norm_c));
  CHECK(tarn_matrix_norm(y, TARN_NORM_FRO, &norm_y));
  CHECK(tarn_matrix_norm(r, TARN_NORM_FRO, &norm_r));
  CHECK(tarn_matrix_norm(at_r, TARN_NORM_FRO, &norm_atr));

  /* The coefficients' covariance is sigma^2 (A^T A)^-1, and (A^T A)^-1 =
   * R^-1 R^-T comes from the factor (only read). Checked against A^T A
   * itself: (A^T A) C = I to rounding, relative to ||A^T A|| ||C||. */
  tarn_matrix *cov = NULL, *ata = NULL, *prod = NULL;
  CHECK(tarn_matrix_qr_ata_inverse(qr, &cov, &info));
  CHECK(tarn_matrix_syrk_ata(a, &ata));
  CHECK(tarn_matrix_gemm(ata, TARN_NO_TRANS, cov, TARN_NO_TRANS, 1.0, 0.0,
                         &prod));
  double inv_err = 0, ata_max, cov_max;
  CHECK(tarn_matrix_norm(ata, TARN_NORM_MAX, &ata_max));
  CHECK(tarn_matrix_norm(cov, TARN_NORM_MAX, &cov_max));
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++) {
      double v;
      CHECK(tarn_matrix_get(prod, i, j, &v));
      inv_err = fmax(inv_err, fabs(v - (i == j)));
    }
  inv_err /= (double)n * ata_max * cov_max * DBL_EPSILON;
  double sigma = norm_r / sqrt((double)(m - n)), true_sigma = NOISE / sqrt(3.0);
  /* sigma^2's estimate has a relative deviation of sqrt(0.8 / (M - n))
   * for uniform noise (E e^4 = NOISE^4 / 5), sigma's half that */
  double sigma_allowed = 6 * 0.45 / sqrt((double)(m - n)) * true_sigma;

  printf("least_squares: %zu points, degree %zu, %u workers\n", m, degree,
         tarn_rt_workers(rt));
  double worst = 0, worst_z = 0;
  for (size_t j = 0; j < n; j++) {
    double got, sum = 0;
    CHECK(tarn_matrix_get(c, j, 0, &got));
    CHECK(tarn_matrix_get(cov, j, j, &sum));
    double se = sigma * sqrt(sum);
    worst = fmax(worst, fabs(got - known[j]));
    worst_z = fmax(worst_z, fabs(got - known[j]) / se);
    printf("  c%zu = %+.6f +- %.2g (known %+.6f)\n", j, got, se, known[j]);
  }
  /* A^T r of a backward-stable solution is at rounding level against
   * ||A|| (||A|| ||c|| + ||y||), as LAPACK's tests of dgels measure it. */
  double orth = norm_atr /
                (norm_a * (norm_a * norm_c + norm_y) * DBL_EPSILON * (double)m);
  /* Both residuals carry the rounding of A c - y, about eps (||A|| ||c|| +
   * ||y||) per element at most. */
  double agree =
      norm_twice / ((norm_a * norm_c + norm_y) * DBL_EPSILON * sqrt((double)m));
  double noise_norm = NOISE * sqrt((double)m);
  /* The noise moves each coefficient by about NOISE / sqrt(M) times a
   * factor that grows with the degree (the monomials' conditioning on
   * [-1, 1]): 4^D is a bound with room to spare. */
  double allowed = NOISE / sqrt((double)m) * pow(4.0, (double)degree);
  int ok = orth < 1.0 && norm_r <= noise_norm && worst <= allowed &&
           rcond > 0 && rcond <= 1 && inv_err <= 10 && worst_z <= 6.0 &&
           fabs(sigma - true_sigma) <= sigma_allowed && agree < 1.0;
  printf(
      "  ||A^T r|| / (||A|| (||A|| ||c|| + ||y||) eps M) = %.3g (must be "
      "< 1)\n",
      orth);
  printf("  ||r|| = %.4g, noise at most %.4g\n", norm_r, noise_norm);
  printf(
      "  ||Q [0; (Q^T y)_bottom] + r|| / ((||A|| ||c|| + ||y||) eps sqrt(M)) = "
      "%.3g (must be < 1)\n",
      agree);
  printf("  largest coefficient error %.3g (allowed %.3g)\n", worst, allowed);
  printf(
      "  largest error in standard errors %.2f (allowed 6); sigma %.4g "
      "(true %.4g, allowed +- %.2g)\n",
      worst_z, sigma, true_sigma, sigma_allowed);
  printf(
      "  |A^T A (A^T A)^-1 - I| / (n |A^T A| |(A^T A)^-1| eps) = %.2g (must "
      "be <= 10)\n",
      inv_err);
  printf(
      "  rcond(A) = rcond(R) = %.3g, estimated from R (the monomials' "
      "conditioning: it falls as the degree grows)\n",
      rcond);

  tarn_matrix *const all[] = {a,    y,   qr,  t,    c,  r,
                              at_r, cov, ata, prod, qy, twice};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tarn_matrix_destroy(all[i]);
  return example_finish("least_squares", ok);
}
