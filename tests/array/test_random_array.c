/* test_random_array.c: a seeded random differential test of the tiled
 * matrix and stencil operations (tarn/matrix.h, tarn/stencil.h) against
 * plain C loops on whole column-major arrays. Each case runs one of:
 * zeros, fill or from_buffer read back by to_buffer and get; rand; retile,
 * copy or transpose; add, axpb, map, sin, tarn_stencil_assign or
 * _update_add; tarn_matrix_apply; sum and the four norms; tarn_stencil_sum
 * or _apply under every boundary condition; or the bad input each header
 * refuses (TARN_EINVAL, nothing changed). Sizes go up to 70 (now and then
 * 600), in tiles that do and do not divide them (or one tile), on 1 to 3
 * workers; some cases run under a memory limit 1 to 4 pages above what the
 * case's largest task pins, so tiles spill and are read back (the run
 * checks that some did and that no pool passed its limit). Moves of data
 * keep every bit, -0 and NaN payloads included; elementwise results and
 * stencils equal the loops' bit for bit (NaN for NaN); sin, the sum and the
 * norms are held to the bounds the header states.
 *
 * Everything a case draws comes from a splitmix64 generator seeded by
 * (seed, case) alone, so a case runs the same alone as in the batch. A
 * failure prints the seed, the case and all its parameters; rerun it with
 *   TARN_RANDOM_SEED=S TARN_RANDOM_CASE=C build/tests/test_random_array
 * and run more cases per seed with TARN_RANDOM_COUNT=N (default 240). */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"
#include "tarn.h"

#define EPS DBL_EPSILON

/* ---- a case (its generator, failures and run: random_case.h) ----------- */

struct tcase {
  uint64_t seed, rng;
  unsigned index, workers;
  bool limited;
  size_t m, n, mb, nb; /* the case's matrix and its tiles */
  size_t need;         /* the pool's charge of the largest task's tiles */
  size_t limit;
  char desc[480];
  tarn_rt *rt;
};

#include "random_case.h"

/* `call` is refused with TARN_EINVAL and leaves its destination `out` as
 * it was, `was`. */
#define REFUSE(c, call, out, was)                                    \
  do {                                                               \
    CALL((c), TARN_EINVAL, (call));                                  \
    CHECK((c), (out) == (was), "%s changed its destination", #call); \
  } while (0)

/* A tile size for a dimension d: one tile (at or past d, which tarn
 * clamps) or up to 12 tiles that divide d or not. */
static size_t draw_tile(struct tcase *c, size_t d) {
  size_t lo = cdiv(d, 12), hi = max_z(min_z(d, 32), d / 3);
  return chance(c, 0.15) ? d + range(c, 0, 4) : range(c, lo, hi);
}

/* A dimension into *d, mostly up to 70, now and then up to 600 (tiles
 * large enough that idle workers share their columns, rows of more than
 * 512 columns), and a tile size for it into *t, now and then dividing d. */
static void draw_dim(struct tcase *c, size_t *d, size_t *t) {
  double u = unit(c);
  *d = range(c, 1, u < 0.2 ? 8 : u < 0.95 ? 70 : 600);
  *t = draw_tile(c, *d);
  if (chance(c, 0.3) && *d >= *t) *d -= *d % *t;
}

/* ---- the runtime and its memory limit ----------------------------------- */

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* The pool's charge of a full tile of an m x n matrix in mb x nb tiles:
 * whole pages. */
static size_t charge(size_t m, size_t n, size_t mb, size_t nb) {
  size_t p = page_size();
  return cdiv(min_z(mb, m) * min_z(nb, n) * sizeof(double), p) * p;
}

/* A task of the case pins `bytes`: the limit must hold them. */
static void pins(struct tcase *c, size_t bytes) {
  c->need = max_z(c->need, bytes);
}

/* A retile task from tiles mb x nb to tiles mb2 x nb2 pins one new tile and
 * the old tiles it overlaps. */
static size_t retile_pins(size_t m, size_t n, size_t mb, size_t nb, size_t mb2,
                          size_t nb2) {
  size_t a = min_z(mb, m), b = min_z(nb, n);
  size_t rows = min_z(cdiv(min_z(mb2, m), a) + 1, cdiv(m, a));
  size_t cols = min_z(cdiv(min_z(nb2, n), b) + 1, cdiv(n, b));
  return rows * cols * charge(m, n, mb, nb) + charge(m, n, mb2, nb2);
}

/* The case's runtime, once its operation has counted the pins: under a
 * limit, the largest task's pins and 1 to 4 pages more, so every task fits
 * and the rest spills. */
static void start(struct tcase *c) {
  if (c->limited) c->limit = c->need + range(c, 1, 4) * page_size();
  describe(c, "; %u workers, limit %zu", c->workers, c->limit);
  c->rt = test_rt(c->workers, c->limit);
}

/* ---- host arrays -------------------------------------------------------- */

static const double MARK = -1234.5; /* in no array the test makes */

static double *alloc_buf(size_t count) {
  double *p = calloc(count, sizeof *p);
  assert_non_null(p);
  return p;
}

/* An element: mostly in [-1, 1); now and then -0, +0, a small integer or
 * a subnormal; with `special` also an infinity or a NaN of any sign and
 * payload, quiet or signalling. */
static double element(struct tcase *c, bool special) {
  double u = unit(c);
  if (u < 0.03) return -0.0;
  if (u < 0.05) return 0.0;
  if (u < 0.08) return (double)range(c, 0, 20) - 10;
  if (u < 0.10) return 0x1p-1060 * (double)range(c, 1, 1000);
  if (special && u < 0.12) return chance(c, 0.5) ? INFINITY : -INFINITY;
  if (special && u < 0.15) {
    uint64_t bits = next64(c) | 0x7ff0000000000000u;
    if ((bits & 0x000fffffffffffffu) == 0) bits |= 1; /* not an infinity */
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
  }
  return real(c);
}

static double *random_buf(struct tcase *c, size_t count, bool special) {
  double *p = alloc_buf(count);
  for (size_t k = 0; k < count; k++) p[k] = element(c, special);
  return p;
}

/* A new matrix of the m x n values a, from a buffer of leading dimension
 * m to m + 2 (its padding rows MARK). */
static tarn_matrix *upload(struct tcase *c, const double *a, size_t m, size_t n,
                           size_t mb, size_t nb) {
  size_t ld = m + range(c, 0, 2);
  double *buf = alloc_buf(ld * n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < ld; i++)
      buf[i + j * ld] = i < m ? a[i + j * m] : MARK;
  tarn_matrix *x = NULL;
  CALL(c, 0, tarn_matrix_from_buffer(c->rt, m, n, mb, nb, buf, ld, &x));
  free(buf);
  return x;
}

static double *download(struct tcase *c, tarn_matrix *a) {
  size_t m = tarn_matrix_rows(a);
  double *p = alloc_buf(m * tarn_matrix_cols(a));
  CALL(c, 0, tarn_matrix_to_buffer(a, p, m));
  return p;
}

static bool same_bits(double x, double y) {
  return memcmp(&x, &y, sizeof x) == 0;
}

/* a holds want, bit for bit, or (when `bits` is false) NaN where want
 * has a NaN. */
static void check_matrix(struct tcase *c, tarn_matrix *a, const double *want,
                         bool bits, const char *what) {
  size_t m = tarn_matrix_rows(a), n = tarn_matrix_cols(a);
  double *got = download(c, a);
  for (size_t k = 0; k < m * n; k++)
    CHECK(c,
          same_bits(got[k], want[k]) ||
              (!bits && isnan(got[k]) && isnan(want[k])),
          "%s: element (%zu, %zu) is %a, not %a", what, k % m, k / m, got[k],
          want[k]);
  free(got);
}

/* `a` is m x n in tiles mb x nb, clamped to the matrix. */
static void check_layout(struct tcase *c, const tarn_matrix *a, size_t m,
                         size_t n, size_t mb, size_t nb) {
  CHECK(c,
        tarn_matrix_rows(a) == m && tarn_matrix_cols(a) == n &&
            tarn_matrix_tile_rows(a) == min_z(mb, m) &&
            tarn_matrix_tile_cols(a) == min_z(nb, n),
        "the result is %zu x %zu in tiles of %zu x %zu", tarn_matrix_rows(a),
        tarn_matrix_cols(a), tarn_matrix_tile_rows(a),
        tarn_matrix_tile_cols(a));
}

/* A destination: NULL for a new matrix, or a given m x n one of MARKs. */
static tarn_matrix *destination(struct tcase *c, bool given, size_t m, size_t n,
                                size_t mb, size_t nb) {
  tarn_matrix *o = NULL;
  if (given) CALL(c, 0, tarn_matrix_fill(c->rt, m, n, mb, nb, MARK, &o));
  return o;
}

/* ---- making matrices and reading them back ------------------------------ */

/* zeros, fill (any value: -0, infinities, NaN payloads) or from_buffer,
 * read back by to_buffer with ld m to m + 3 (the padding rows untouched)
 * and by get, bit for bit. */
static void op_make(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  int how = (int)range(c, 0, 2);
  double v = element(c, true);
  size_t ld = m + range(c, 0, 3);
  static const char *const hows[] = {"zeros", "fill", "from_buffer"};
  describe(c, "%s (value %a), read back with ld %zu", hows[how], v, ld);
  pins(c, charge(m, n, mb, nb));
  start(c);
  double *want = random_buf(c, m * n, true), *buf = alloc_buf(ld * n);
  tarn_matrix *a = NULL;
  if (how == 0) CALL(c, 0, tarn_matrix_zeros(c->rt, m, n, mb, nb, &a));
  if (how == 1) CALL(c, 0, tarn_matrix_fill(c->rt, m, n, mb, nb, v, &a));
  if (how == 2) a = upload(c, want, m, n, mb, nb);
  for (size_t k = 0; how < 2 && k < m * n; k++) want[k] = how == 0 ? 0.0 : v;
  check_layout(c, a, m, n, mb, nb);
  for (size_t k = 0; k < ld * n; k++) buf[k] = MARK;
  CALL(c, 0, tarn_matrix_to_buffer(a, buf, ld));
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < ld; i++) {
      double w = i < m ? want[i + j * m] : MARK;
      CHECK(c, same_bits(buf[i + j * ld], w),
            "to_buffer (%zu, %zu) is %a, not %a", i, j, buf[i + j * ld], w);
    }
  for (int k = 0; k < 6; k++) { /* the last element, and five others */
    size_t i = k ? range(c, 0, m - 1) : m - 1,
           j = k ? range(c, 0, n - 1) : n - 1;
    double g = MARK;
    CALL(c, 0, tarn_matrix_get(a, i, j, &g));
    CHECK(c, same_bits(g, want[i + j * m]), "get(%zu, %zu) is %a, not %a", i, j,
          g, want[i + j * m]);
  }
  free(want), free(buf);
  tarn_matrix_destroy(a);
}

/* rand's element (i, j) depends on (seed, i, j) alone: the same in a
 * larger matrix in other tiles, in [0, 1); seed + 1 gives others. */
static void op_rand(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  uint64_t seed = next64(c);
  size_t m2 = m + range(c, 0, 5), n2 = n + range(c, 0, 5);
  size_t mb2 = draw_tile(c, m2), nb2 = draw_tile(c, n2);
  describe(c, "rand seed %" PRIu64 ", again %zu x %zu in tiles %zu x %zu", seed,
           m2, n2, mb2, nb2);
  pins(c, max_z(charge(m2, n2, mb2, nb2), charge(m, n, mb, nb)));
  start(c);
  tarn_matrix *a = NULL, *b = NULL, *d = NULL;
  CALL(c, 0, tarn_matrix_rand(c->rt, m, n, mb, nb, seed, &a));
  CALL(c, 0, tarn_matrix_rand(c->rt, m2, n2, mb2, nb2, seed, &b));
  CALL(c, 0, tarn_matrix_rand(c->rt, m, n, mb, nb, seed + 1, &d));
  check_layout(c, a, m, n, mb, nb);
  double *x = download(c, a), *y = download(c, b), *z = download(c, d);
  bool other = false;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      double v = x[i + j * m];
      CHECK(c, v >= 0 && v < 1, "element (%zu, %zu) is %a", i, j, v);
      CHECK(c, same_bits(v, y[i + j * m2]),
            "element (%zu, %zu) is %a, but %a in the larger matrix", i, j, v,
            y[i + j * m2]);
      other |= v != z[i + j * m];
    }
  CHECK(c, other, "seed + 1 gave the same elements");
  free(x), free(y), free(z);
  tarn_matrix_destroy(a), tarn_matrix_destroy(b), tarn_matrix_destroy(d);
}

/* ---- moving data: retile, copy, transpose ------------------------------- */

/* retile to other tiles, copy, or transpose, into a new matrix or a given
 * one (a copy also into itself), then back again (retile to a's tiles, a
 * copy, the transpose): bit for bit, -0 and NaN payloads included. */
static void op_move(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  int how = (int)range(c, 0, 2), into = (int)range(c, 0, how == 1 ? 2 : 1);
  size_t mb2 = draw_tile(c, m), nb2 = draw_tile(c, n);
  static const char *const hows[] = {"retile", "copy", "transpose"};
  static const char *const intos[] = {"new", "given", "itself"};
  describe(c, "%s into %s (retile to %zu x %zu) and back", hows[how],
           intos[into], mb2, nb2);
  bool t = how == 2;
  size_t om = t ? n : m, on = t ? m : n;
  size_t omb = how == 0 ? mb2 : t ? nb : mb, onb = how == 0 ? nb2 : t ? mb : nb;
  pins(c, 2 * charge(m, n, mb, nb));
  pins(c, retile_pins(m, n, mb, nb, mb2, nb2));
  pins(c, retile_pins(m, n, mb2, nb2, mb, nb));
  start(c);
  double *want = random_buf(c, m * n, true), *wantt = alloc_buf(m * n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) wantt[j + i * n] = want[i + j * m];
  tarn_matrix *a = upload(c, want, m, n, mb, nb), *back = NULL;
  tarn_matrix *o = into == 2 ? a : destination(c, into == 1, om, on, omb, onb);
  tarn_matrix *given = o;
  if (how == 0) CALL(c, 0, tarn_matrix_retile(a, mb2, nb2, &o));
  if (how == 1) CALL(c, 0, tarn_matrix_copy(a, &o));
  if (how == 2) CALL(c, 0, tarn_matrix_transpose(a, &o));
  CHECK(c, into == 0 || o == given, "%s replaced the given matrix", hows[how]);
  check_layout(c, o, om, on, omb, onb);
  if (how == 0) CALL(c, 0, tarn_matrix_retile(o, mb, nb, &back));
  if (how == 1) CALL(c, 0, tarn_matrix_copy(o, &back));
  if (how == 2) CALL(c, 0, tarn_matrix_transpose(o, &back));
  check_matrix(c, o, t ? wantt : want, true, hows[how]);
  check_matrix(c, back, want, true, "back again");
  check_matrix(c, a, want, true, "the source");
  free(want), free(wantt);
  if (o != a) tarn_matrix_destroy(o);
  tarn_matrix_destroy(a), tarn_matrix_destroy(back);
}

/* ---- elementwise operations --------------------------------------------- */

static double cube_less_half(double x) { return x * x * x - 0.5; }
static double abs_plus_one(double x) { return fabs(x) + 1; }
static double negate(double x) { return -x; }
static double (*const fs[])(double) = {cube_less_half, abs_plus_one, negate};

/* A scalar for alpha and beta: 0, -0, 1, -1 or any in [-4, 4). */
static double scalar(struct tcase *c) {
  static const double special[] = {0.0, -0.0, 1.0, -1.0};
  size_t k = range(c, 0, 6);
  return k < 4 ? special[k] : 4 * real(c);
}

/* add (a + b, or a + a), axpb, map or sin into a new matrix, a given one
 * or a itself; or on b in place, tarn_stencil_assign of any value and
 * _update_add (b += a, or a += a): the loop's values (NaN for NaN; assign's
 * bit for bit), sin within 4 ulp of libm's. */
static void op_elementwise(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  static const char *const hows[] = {"add", "axpb",   "map",
                                     "sin", "assign", "update_add"};
  static const char *const intos[] = {"new", "given", "a", "b"};
  int how = (int)range(c, 0, 5), f = (int)range(c, 0, 2);
  int into = how < 4 ? (int)range(c, 0, 2) : 3;
  bool twice = (how == 0 || how == 5) && chance(c, 0.25);
  double alpha = scalar(c), beta = scalar(c), v = element(c, true);
  describe(c, "%s%s into %s, alpha %a beta %a, f %d, value %a", hows[how],
           twice ? " of a and a" : "", intos[into], alpha, beta, f, v);
  pins(c, 3 * charge(m, n, mb, nb));
  start(c);
  double *x = random_buf(c, m * n, true), *y = random_buf(c, m * n, true);
  double *want = alloc_buf(m * n);
  if (twice) memcpy(y, x, m * n * sizeof *y);
  tarn_matrix *a = upload(c, x, m, n, mb, nb);
  tarn_matrix *b = twice ? a : upload(c, y, m, n, mb, nb);
  tarn_matrix *o = into < 2    ? destination(c, into, m, n, mb, nb)
                   : into == 2 ? a
                               : b;
  tarn_matrix *given = o;
  for (size_t k = 0; k < m * n; k++) {
    double r[] = {x[k] + y[k], alpha * x[k] + beta, fs[f](x[k]), sin(x[k]),
                  v,           y[k] + x[k]};
    want[k] = r[how];
  }
  if (how == 0) CALL(c, 0, tarn_matrix_add(a, b, &o));
  if (how == 1) CALL(c, 0, tarn_matrix_axpb(a, alpha, beta, &o));
  if (how == 2) CALL(c, 0, tarn_matrix_map(a, fs[f], &o));
  if (how == 3) CALL(c, 0, tarn_matrix_sin(a, &o));
  if (how == 4) CALL(c, 0, tarn_stencil_assign(b, v));
  if (how == 5) CALL(c, 0, tarn_stencil_update_add(b, a));
  CHECK(c, into == 0 || o == given, "%s replaced the given matrix", hows[how]);
  check_layout(c, o, m, n, mb, nb);
  if (how != 3) check_matrix(c, o, want, how == 4, hows[how]);
  double *got = how == 3 ? download(c, o) : NULL;
  for (size_t k = 0; got != NULL && k < m * n; k++)
    CHECK(c,
          (isnan(got[k]) && isnan(want[k])) ||
              fabs(got[k] - want[k]) <=
                  4 * EPS * fabs(want[k]) + 4 * DBL_TRUE_MIN,
          "sin(%a) is %a, libm's %a", x[k], got[k], want[k]);
  if (o != a && !twice) check_matrix(c, a, x, true, "a (read)");
  free(x), free(y), free(want), free(got);
  if (o != a && o != b) tarn_matrix_destroy(o);
  if (b != a) tarn_matrix_destroy(b);
  tarn_matrix_destroy(a);
}

/* ---- user kernels over several matrices --------------------------------- */

struct apply_arg {
  size_t m, n;
  size_t count, twin; /* a fourth matrix repeats the one in slot twin */
};

/* b = a + row + 1024 col and c = 2 c + b for each element (a read, b
 * written, c read and written): an element visited twice or never shows.
 * Fails on a block outside the matrix (-101) or a repeated matrix whose
 * block is not the same memory (-102). */
static int fused(const tarn_block *blk, void *arg) {
  const struct apply_arg *s = arg;
  if (blk->ld < blk->rows || blk->row + blk->rows > s->m ||
      blk->col + blk->cols > s->n)
    return -101;
  if (s->count == 4 && blk->data[3] != blk->data[s->twin]) return -102;
  const double *a = blk->data[0];
  double *b = blk->data[1], *c = blk->data[2];
  for (size_t q = 0; q < blk->cols; q++)
    for (size_t p = 0; p < blk->rows; p++) {
      size_t k = p + q * blk->ld;
      b[k] = a[k] + (double)(blk->row + p) + 1024.0 * (double)(blk->col + q);
      c[k] = 2 * c[k] + b[k];
    }
  return 0;
}

/* tarn_matrix_apply of `fused` over a (read), b (written) and c (read and
 * written), now and then with a or c given again (read), in a region
 * whose wait reports no failure: the loop's values. */
static void op_apply(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  size_t again = range(c, 0, 2); /* none, a, c */
  static const char *const agains[] = {"", ", a", ", c"};
  describe(c, "apply over a, b, c%s", agains[again]);
  pins(c, 3 * charge(m, n, mb, nb));
  start(c);
  double *x = random_buf(c, m * n, true), *z = random_buf(c, m * n, true);
  double *wb = alloc_buf(m * n), *wc = alloc_buf(m * n);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      size_t k = i + j * m;
      wb[k] = x[k] + (double)i + 1024.0 * (double)j;
      wc[k] = 2 * z[k] + wb[k];
    }
  tarn_matrix *a = upload(c, x, m, n, mb, nb), *cm = upload(c, z, m, n, mb, nb);
  tarn_matrix *b = destination(c, true, m, n, mb, nb);
  tarn_matrix *const ms[] = {a, b, cm, again == 1 ? a : cm};
  const tarn_access modes[] = {TARN_READ, TARN_WRITE, TARN_READ_WRITE,
                               TARN_READ};
  struct apply_arg arg = {m, n, again == 0 ? 3 : 4, again == 1 ? 0 : 2};
  tarn_region *region = NULL;
  CALL(c, 0, tarn_region_begin(c->rt, &region));
  CALL(c, 0, tarn_matrix_apply(ms, modes, arg.count, fused, &arg));
  CALL(c, 0, tarn_region_wait(region, NULL));
  check_matrix(c, a, x, true, "a (read)");
  check_matrix(c, b, wb, false, "b (written)");
  check_matrix(c, cm, wc, false, "c (read and written)");
  free(x), free(z), free(wb), free(wc);
  tarn_matrix_destroy(a), tarn_matrix_destroy(b), tarn_matrix_destroy(cm);
}
/* ---- reductions --------------------------------------------------------- */

/* The sum and the four norms of a matrix of element()s scaled by 1, 2^600
 * or 2^-600, now and then with one NaN or infinity, against sums in long
 * double: within the bounds tarn/matrix.h states, the largest element
 * exactly; with a NaN each result a NaN, with an infinity the sum that
 * infinity and each norm +infinity. */
static void op_reduce(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb, mn = m * n;
  static const double scales[] = {1, 0x1p600, 0x1p-600};
  double scale = scales[range(c, 0, 2)];
  int plant = chance(c, 0.2) ? (int)range(c, 1, 3) : 0; /* NaN, +inf, -inf */
  size_t at = range(c, 0, mn - 1);
  static const char *const plants[] = {"", ", a NaN", ", +inf", ", -inf"};
  describe(c, "sum and norms, scale %a%s at %zu", scale, plants[plant], at);
  pins(c, charge(m, n, mb, nb) + page_size()); /* a tile, a line sum's gate */
  start(c);
  double *x = random_buf(c, mn, false);
  for (size_t k = 0; k < mn; k++) x[k] *= scale;
  if (plant) x[at] = plant == 1 ? NAN : plant == 2 ? INFINITY : -INFINITY;
  tarn_matrix *a = upload(c, x, m, n, mb, nb);
  long double sum = 0, abs = 0, ssq = 0, big = 0, one = 0, inf = 0;
  for (size_t j = 0; j < n; j++) {
    long double col = 0;
    for (size_t i = 0; i < m; i++) {
      long double e = fabsl(x[i + j * m]);
      sum += x[i + j * m], abs += e, ssq += e * e, col += e,
          big = fmaxl(big, e);
    }
    one = fmaxl(one, col);
  }
  for (size_t i = 0; i < m; i++) {
    long double row = 0;
    for (size_t j = 0; j < n; j++) row += fabsl(x[i + j * m]);
    inf = fmaxl(inf, row);
  }
  double lg = log2((double)mn);
  double want[5] = {(double)sum, sqrtl(ssq), (double)one, (double)inf,
                    (double)big};
  double tol[5] = {(lg + 19) * EPS * (double)abs + (double)mn * DBL_TRUE_MIN,
                   (lg + 21) * EPS * want[1], (double)(m + 8) * EPS * want[2],
                   (double)(n + 8) * EPS * want[3], 0};
  static const char *const names[5] = {"sum", "the Frobenius norm",
                                       "the one norm", "the infinity norm",
                                       "the largest element"};
  static const tarn_norm kinds[4] = {TARN_NORM_FRO, TARN_NORM_ONE,
                                     TARN_NORM_INF, TARN_NORM_MAX};
  for (int k = 0; k < 5; k++) {
    double got = MARK;
    if (k == 0) CALL(c, 0, tarn_matrix_sum(a, &got));
    if (k > 0) CALL(c, 0, tarn_matrix_norm(a, kinds[k - 1], &got));
    if (plant == 1)
      CHECK(c, isnan(got), "%s is %a with a NaN", names[k], got);
    else if (plant)
      CHECK(c, got == (k == 0 ? x[at] : INFINITY), "%s is %a with %a", names[k],
            got, x[at]);
    else
      CHECK(c, fabs(got - want[k]) <= tol[k],
            "%s is %.17g, not %.17g (bound %g)", names[k], got, want[k],
            tol[k]);
  }
  free(x);
  tarn_matrix_destroy(a);
}

/* ---- stencils ----------------------------------------------------------- */

/* The index that p reads in a dimension of size n, reflecting one step at
 * a time (another route than tarn's modulo), or -1 for the pad value. */
static ptrdiff_t ref_index(ptrdiff_t p, ptrdiff_t n, tarn_boundary_kind k) {
  while (p < 0 || p >= n) {
    if (k == TARN_BOUNDARY_PAD) return -1;
    if (k == TARN_BOUNDARY_CLAMP) return p < 0 ? 0 : n - 1;
    if (k == TARN_BOUNDARY_MIRROR && n == 1) return 0;
    if (k == TARN_BOUNDARY_WRAP) p = p < 0 ? p + n : p - n;
    if (k == TARN_BOUNDARY_REFLECT) p = p < 0 ? -1 - p : 2 * n - 1 - p;
    if (k == TARN_BOUNDARY_MIRROR) p = p < 0 ? -p : 2 * n - 2 - p;
  }
  return p;
}

/* Element (i, j) of the m x n x extended under s: the rows' pad first. */
static double ref_at(const double *x, size_t m, size_t n, const tarn_stencil *s,
                     ptrdiff_t i, ptrdiff_t j) {
  ptrdiff_t p = ref_index(i, (ptrdiff_t)m, s->rows.kind);
  if (p < 0) return s->rows.pad;
  ptrdiff_t q = ref_index(j, (ptrdiff_t)n, s->cols.kind);
  if (q < 0) return s->cols.pad;
  return x[p + q * (ptrdiff_t)m];
}

static double weight(ptrdiff_t dp, ptrdiff_t dq, ptrdiff_t r) {
  return (double)(dp + r + 1) + 0.5 * (double)(dq + r);
}

struct kernel_arg {
  size_t radius, mb, nb;
};

/* A user kernel: each neighbour weighted by its place, added column by
 * column from 0. Fails (-103) on a call its stencil and tiles rule out. */
static int weighted(const double *in, size_t ld_in, double *out, size_t ld_out,
                    size_t rows, size_t cols, size_t radius, void *arg) {
  const struct kernel_arg *k = arg;
  if (radius != k->radius || rows > k->mb || cols > k->nb ||
      ld_in < rows + 2 * radius || ld_out < rows)
    return -103;
  ptrdiff_t r = (ptrdiff_t)radius, ld = (ptrdiff_t)ld_in;
  for (size_t q = 0; q < cols; q++)
    for (size_t p = 0; p < rows; p++) {
      double acc = 0;
      for (ptrdiff_t dq = -r; dq <= r; dq++)
        for (ptrdiff_t dp = -r; dp <= r; dp++)
          acc += weight(dp, dq, r) *
                 in[(ptrdiff_t)p + dp + ((ptrdiff_t)q + dq) * ld];
      out[p + q * ld_out] = acc;
    }
  return 0;
}

/* tarn_stencil_sum, or _apply of `weighted`, of radius 1 to 3 (now and
 * then to 8), at most the tile's sides, under any boundary condition per
 * dimension (by tarn_stencil_init, or each its own), into a new or a given
 * matrix, in a region whose wait reports no failure: apply's values bit for
 * bit (the kernel adds its terms in the loop's order, from +0); the sum's
 * within (2r + 1)^2 eps of the sum of its terms' magnitudes (the header
 * does not say in which order it adds them). */
static void op_stencil(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb;
  size_t mbe = min_z(mb, m), nbe = min_z(nb, n), rmax = min_z(mbe, nbe);
  bool user = chance(c, 0.4), same = chance(c, 0.4), given = chance(c, 0.4);
  size_t r = range(c, 1, min_z(rmax, chance(c, 0.8) ? 3 : 8));
  tarn_boundary_kind rk = (tarn_boundary_kind)range(c, 0, 4);
  tarn_boundary_kind ck = same ? rk : (tarn_boundary_kind)range(c, 0, 4);
  double rpad = element(c, false), cpad = same ? rpad : element(c, false);
  describe(
      c,
      "stencil %s radius %zu, rows kind %d pad %a, cols kind %d pad %a%s, %s",
      user ? "apply" : "sum", r, (int)rk, rpad, (int)ck, cpad,
      same ? " (init)" : "", given ? "given" : "new");
  pins(c, (min_z(cdiv(m, mbe), 5) * min_z(cdiv(n, nbe), 5) + 1) *
              charge(m, n, mb, nb));
  start(c);
  tarn_stencil s = {r, {rk, rpad}, {ck, cpad}};
  if (same) {
    CALL(c, 0, tarn_stencil_init(&s, r, rk, rpad));
    CHECK(c,
          s.radius == r && s.rows.kind == rk && s.cols.kind == rk &&
              same_bits(s.rows.pad, rpad) && same_bits(s.cols.pad, rpad),
          "tarn_stencil_init set radius %zu, kinds %d %d", s.radius,
          (int)s.rows.kind, (int)s.cols.kind);
  }
  double *x = random_buf(c, m * n, false), *want = alloc_buf(m * n);
  double *mag = alloc_buf(m * n);
  struct kernel_arg ka = {r, mbe, nbe};
  tarn_matrix *a = upload(c, x, m, n, mb, nb);
  ptrdiff_t pr = (ptrdiff_t)r;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      double acc = 0, abs = 0;
      for (ptrdiff_t dq = -pr; dq <= pr; dq++)
        for (ptrdiff_t dp = -pr; dp <= pr; dp++) {
          double e = ref_at(x, m, n, &s, (ptrdiff_t)i + dp, (ptrdiff_t)j + dq);
          acc += user ? weight(dp, dq, pr) * e : e;
          abs += fabs(e);
        }
      want[i + j * m] = acc;
      mag[i + j * m] = abs;
    }
  tarn_matrix *o = destination(c, given, m, n, mb, nb), *given_o = o;
  tarn_region *region = NULL;
  CALL(c, 0, tarn_region_begin(c->rt, &region));
  if (user) CALL(c, 0, tarn_stencil_apply(&s, a, weighted, &ka, &o));
  if (!user) CALL(c, 0, tarn_stencil_sum(&s, a, &o));
  CALL(c, 0, tarn_region_wait(region, NULL));
  CHECK(c, !given || o == given_o, "the stencil replaced the given matrix");
  check_layout(c, o, m, n, mb, nb);
  if (user) check_matrix(c, o, want, true, "stencil_apply");
  double *got = user ? NULL : download(c, o);
  double terms = (double)((2 * r + 1) * (2 * r + 1));
  for (size_t k = 0; got != NULL && k < m * n; k++)
    CHECK(c, fabs(got[k] - want[k]) <= terms * EPS * mag[k],
          "stencil_sum: element (%zu, %zu) is %a, not %a (bound %g)", k % m,
          k / m, got[k], want[k], terms * EPS * mag[k]);
  free(x), free(want), free(mag), free(got);
  tarn_matrix_destroy(a), tarn_matrix_destroy(o);
}

/* ---- bad input ---------------------------------------------------------- */

/* Bad input a user can give to each operation, refused with TARN_EINVAL
 * and changing nothing: sizes and tile sizes of 0, NULL, ld < m, elements
 * outside the matrix, operands and destinations of another shape, tiling or
 * runtime, a destination that may not be the source, unknown norms and
 * access modes, apply's counts of 0 and past TARN_MATRIX_APPLY_MAX, bad
 * stencils (radius 0 or past the tile, unknown kinds). *out stays NULL (or
 * the given matrix), get's *v and to_buffer's buffer untouched, a and the
 * given matrix keep their elements. */
static void op_refuse(struct tcase *c) {
  size_t m = c->m, n = c->n, mb = c->mb, nb = c->nb,
         rmax = min_z(min_z(mb, m), min_z(nb, n));
  describe(c, "bad input");
  pins(c, charge(m + 1, n, mb, nb));
  start(c);
  double *x = random_buf(c, m * n, true), *buf = alloc_buf(m * n), v = MARK;
  double *zero = alloc_buf((m + 1) * n);
  for (size_t k = 0; k < m * n; k++) buf[k] = MARK;
  tarn_rt *rt2 = test_rt(1, 0);
  tarn_matrix *a = upload(c, x, m, n, mb, nb), *o = NULL, *self = a,
              *other = NULL;
  tarn_matrix *tall = NULL, *tall0;
  CALL(c, 0, tarn_matrix_zeros(c->rt, m + 1, n, mb, nb, &tall));
  CALL(c, 0, tarn_matrix_zeros(rt2, m, n, mb, nb, &other));
  tall0 = tall;
  REFUSE(c, tarn_matrix_zeros(c->rt, 0, n, mb, nb, &o), o, NULL);
  REFUSE(c, tarn_matrix_fill(c->rt, m, n, 0, nb, 1.0, &o), o, NULL);
  REFUSE(c, tarn_matrix_rand(c->rt, m, 0, mb, nb, 1, &o), o, NULL);
  REFUSE(c, tarn_matrix_from_buffer(c->rt, m, n, mb, nb, NULL, m, &o), o, NULL);
  if (m > 1)
    REFUSE(c, tarn_matrix_from_buffer(c->rt, m, n, mb, nb, x, m - 1, &o), o,
           NULL);
  CALL(c, TARN_EINVAL, tarn_matrix_get(a, m, 0, &v));
  CALL(c, TARN_EINVAL, tarn_matrix_get(a, 0, n, &v));
  CALL(c, TARN_EINVAL, tarn_matrix_to_buffer(a, NULL, m));
  if (m > 1) CALL(c, TARN_EINVAL, tarn_matrix_to_buffer(a, buf, m - 1));
  CALL(c, TARN_EINVAL, tarn_matrix_sum(a, NULL));
  CALL(c, TARN_EINVAL, tarn_matrix_norm(NULL, TARN_NORM_FRO, &v));
  CALL(c, TARN_EINVAL, tarn_matrix_norm(a, (tarn_norm)4, &v));
  CHECK(c, same_bits(v, MARK), "a refused call wrote %a", v);
  for (size_t k = 0; k < m * n; k++)
    CHECK(c, same_bits(buf[k], MARK), "a refused to_buffer wrote %a", buf[k]);
  REFUSE(c, tarn_matrix_retile(a, 0, nb, &o), o, NULL);
  REFUSE(c, tarn_matrix_retile(a, mb, nb, &self), self, a);
  REFUSE(c, tarn_matrix_retile(a, mb, nb, &tall), tall, tall0);
  REFUSE(c, tarn_matrix_copy(NULL, &o), o, NULL);
  REFUSE(c, tarn_matrix_copy(a, &tall), tall, tall0);
  REFUSE(c, tarn_matrix_transpose(a, &self), self, a);
  REFUSE(c, tarn_matrix_transpose(a, &tall), tall, tall0);
  REFUSE(c, tarn_matrix_add(a, tall, &o), o, NULL);
  REFUSE(c, tarn_matrix_add(a, other, &o), o, NULL);
  REFUSE(c, tarn_matrix_add(a, a, &tall), tall, tall0);
  REFUSE(c, tarn_matrix_axpb(NULL, 2, 1, &o), o, NULL);
  REFUSE(c, tarn_matrix_axpb(a, 2, 1, &tall), tall, tall0);
  REFUSE(c, tarn_matrix_map(a, NULL, &o), o, NULL);
  REFUSE(c, tarn_matrix_sin(a, &tall), tall, tall0);
  if (mb < m) {
    tarn_matrix *tiles = NULL;
    CALL(c, 0, tarn_matrix_zeros(c->rt, m, n, mb + 1, nb, &tiles));
    REFUSE(c, tarn_matrix_add(a, tiles, &o), o, NULL);
    tarn_matrix_destroy(tiles);
  }
  tarn_matrix *ms[TARN_MATRIX_APPLY_MAX + 1];
  tarn_access modes[TARN_MATRIX_APPLY_MAX + 1];
  for (size_t k = 0; k <= TARN_MATRIX_APPLY_MAX; k++)
    ms[k] = a, modes[k] = TARN_READ;
  struct apply_arg arg = {m, n, 1, 0};
  CALL(c, TARN_EINVAL, tarn_matrix_apply(ms, modes, 0, fused, &arg));
  CALL(c, TARN_EINVAL,
       tarn_matrix_apply(ms, modes, TARN_MATRIX_APPLY_MAX + 1, fused, &arg));
  CALL(c, TARN_EINVAL, tarn_matrix_apply(ms, modes, 2, NULL, &arg));
  modes[1] = (tarn_access)7;
  CALL(c, TARN_EINVAL, tarn_matrix_apply(ms, modes, 2, fused, &arg));
  ms[1] = tall, modes[1] = TARN_WRITE;
  CALL(c, TARN_EINVAL, tarn_matrix_apply(ms, modes, 2, fused, &arg));
  tarn_stencil s, z;
  CALL(c, 0, tarn_stencil_init(&s, 1, TARN_BOUNDARY_CLAMP, 0));
  CALL(c, TARN_EINVAL, tarn_stencil_init(NULL, 1, TARN_BOUNDARY_WRAP, 0));
  CALL(c, TARN_EINVAL, tarn_stencil_init(&z, 0, TARN_BOUNDARY_WRAP, 0));
  CALL(c, TARN_EINVAL, tarn_stencil_init(&z, 1, (tarn_boundary_kind)5, 0));
  z = s, z.radius = rmax + 1;
  REFUSE(c, tarn_stencil_sum(&z, a, &o), o, NULL);
  z = s, z.cols.kind = (tarn_boundary_kind)-1;
  REFUSE(c, tarn_stencil_sum(&z, a, &o), o, NULL);
  REFUSE(c, tarn_stencil_sum(&s, a, &self), self, a);
  REFUSE(c, tarn_stencil_sum(&s, a, &tall), tall, tall0);
  REFUSE(c, tarn_stencil_apply(&s, a, NULL, NULL, &o), o, NULL);
  CALL(c, TARN_EINVAL, tarn_stencil_assign(NULL, 1));
  CALL(c, TARN_EINVAL, tarn_stencil_update_add(tall, a));
  CALL(c, TARN_EINVAL, tarn_stencil_update_add(a, other));
  check_matrix(c, a, x, true, "a after the refusals");
  check_matrix(c, tall, zero, true, "a refused destination");
  free(x), free(buf), free(zero);
  tarn_matrix_destroy(a), tarn_matrix_destroy(tall), tarn_matrix_destroy(other);
  CALL(c, 0, tarn_rt_destroy(rt2));
}

/* ---- the run ------------------------------------------------------------ */

/* The operations, those that cover several calls more often. */
static void (*const ops[])(struct tcase *c) = {
    op_make,  op_rand,   op_move,    op_move,    op_elementwise, op_elementwise,
    op_apply, op_reduce, op_stencil, op_stencil, op_elementwise, op_refuse};
enum { NOPS = sizeof ops / sizeof ops[0] };

/* Case `index` of `seed`: operation index mod NOPS, everything else from
 * the generator. */
static void run_case(uint64_t seed, unsigned index) {
  struct tcase c = {0};
  case_begin(&c, seed, index);
  draw_dim(&c, &c.m, &c.mb);
  draw_dim(&c, &c.n, &c.nb);
  describe(&c, "%zu x %zu in tiles of %zu x %zu; ", c.m, c.n, c.mb, c.nb);
  ops[index % NOPS](&c);
  case_finish(&c);
}
