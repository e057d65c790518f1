/* stencil.c: neighbourhood operations on tiled matrices (tarn/stencil.h).
 * One task per output tile writes that tile and reads every distinct input
 * tile its halo maps to under the boundary conditions; the task copies the
 * tile and its halo into the worker's scratch memory, run by run of
 * consecutive source rows, and hands the buffer to the kernel. Each task
 * owns its job struct (freed by the runtime when the task is done). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "tarn/stencil.h"

/* At most 2 tiles on each side plus the own tile (the radius is at most the
 * tile size, and only the last tile is smaller); room to spare. */
enum { MAX_SIDE = 8 };

/* What one stencil task needs; owned by the task. */
struct sjob {
  size_t rows, cols; /* of the tile written */
  size_t row0, col0; /* its first element */
  size_t m, n, mb, nb;
  tarn_stencil st;
  tarn_stencil_fn fn;
  void *arg;
  size_t nrt, nct; /* distinct source tile rows, columns */
  size_t srt[MAX_SIDE], sct[MAX_SIDE];
  size_t slot[MAX_SIDE][MAX_SIDE]; /* data slot of tile (srt[a], sct[b]) */
};

static bool kind_ok(tarn_boundary_kind k) {
  return k == TARN_BOUNDARY_WRAP || k == TARN_BOUNDARY_PAD ||
         k == TARN_BOUNDARY_CLAMP || k == TARN_BOUNDARY_REFLECT ||
         k == TARN_BOUNDARY_MIRROR;
}

int tarn_stencil_init(tarn_stencil *s, size_t radius, tarn_boundary_kind kind,
                      double pad) {
  if (s == NULL || radius == 0 || !kind_ok(kind)) return TARN_EINVAL;
  s->radius = radius;
  s->rows = (tarn_boundary){kind, pad};
  s->cols = s->rows;
  return 0;
}

static ptrdiff_t mod(ptrdiff_t p, ptrdiff_t n) {
  ptrdiff_t r = p % n;
  return r < 0 ? r + n : r;
}

/* The index that index p of a dimension of size n reads, or -1 for the
 * pad value. */
static ptrdiff_t map_index(ptrdiff_t p, size_t size, tarn_boundary_kind kind) {
  ptrdiff_t n = (ptrdiff_t)size;
  if (p >= 0 && p < n) return p;
  switch (kind) {
    case TARN_BOUNDARY_WRAP:
      return mod(p, n);
    case TARN_BOUNDARY_CLAMP:
      return p < 0 ? 0 : n - 1;
    case TARN_BOUNDARY_REFLECT: /* period 2n: 0..n-1, n-1..0 */
      p = mod(p, 2 * n);
      return p < n ? p : 2 * n - 1 - p;
    case TARN_BOUNDARY_MIRROR: /* period 2n-2: 0..n-1, n-2..1 */
      if (n == 1) return 0;
      p = mod(p, 2 * n - 2);
      return p < n ? p : 2 * n - 2 - p;
    default:
      return -1;
  }
}

/* Adds the tile index of every source index of the halo range of one
 * dimension to set[] (distinct, in order of first appearance). */
static int source_tiles(size_t first, size_t count, size_t r, size_t size,
                        size_t tile, tarn_boundary_kind kind, size_t *set,
                        size_t *nset) {
  *nset = 0;
  for (size_t k = 0; k < count + 2 * r; k++) {
    ptrdiff_t src =
        map_index((ptrdiff_t)(first + k) - (ptrdiff_t)r, size, kind);
    if (src < 0) continue;
    size_t t = (size_t)src / tile, h = 0;
    while (h < *nset && set[h] != t) h++;
    if (h < *nset) continue;
    if (*nset == MAX_SIDE) return TARN_EINVAL; /* cannot happen */
    set[(*nset)++] = t;
  }
  return 0;
}

static size_t index_in(const size_t *set, size_t nset, size_t t) {
  size_t h = 0;
  while (h < nset && set[h] != t) h++;
  return h;
}

/* A run of consecutive halo rows that read consecutive rows of one source
 * tile row (or the pad value, when tile is SIZE_MAX). */
struct run {
  size_t start, len; /* halo rows */
  size_t tile;       /* index into srt[] */
  size_t local;      /* first row within the source tile */
};

/* Fills runs[] for the rows of the tile's halo; returns their count. */
static size_t row_runs(const struct sjob *j, struct run *runs) {
  size_t r = j->st.radius, hr = j->rows + 2 * r, nruns = 0;
  for (size_t k = 0; k < hr; k++) {
    ptrdiff_t src = map_index((ptrdiff_t)(j->row0 + k) - (ptrdiff_t)r, j->m,
                              j->st.rows.kind);
    size_t tile = SIZE_MAX, local = 0;
    if (src >= 0) {
      tile = index_in(j->srt, j->nrt, (size_t)src / j->mb);
      local = (size_t)src % j->mb;
    }
    struct run *last = nruns > 0 ? &runs[nruns - 1] : NULL;
    if (last != NULL && last->tile == tile &&
        (tile == SIZE_MAX || last->local + last->len == local)) {
      last->len++;
    } else {
      runs[nruns++] = (struct run){k, 1, tile, local};
    }
  }
  return nruns;
}

/* Assembles halo column c (0 .. cols + 2r - 1) into dst (rows + 2r
 * doubles), run by run. */
static void halo_column(tarn_task *t, const struct sjob *j,
                        const struct run *runs, size_t nruns, size_t c,
                        double *dst) {
  ptrdiff_t srcc = map_index((ptrdiff_t)(j->col0 + c) - (ptrdiff_t)j->st.radius,
                             j->n, j->st.cols.kind);
  size_t b = 0, lc = 0;
  if (srcc >= 0) {
    b = index_in(j->sct, j->nct, (size_t)srcc / j->nb);
    lc = (size_t)srcc % j->nb;
  }
  for (size_t u = 0; u < nruns; u++) {
    const struct run *ru = &runs[u];
    if (ru->tile == SIZE_MAX || srcc < 0) {
      double v = ru->tile == SIZE_MAX ? j->st.rows.pad : j->st.cols.pad;
      for (size_t k = 0; k < ru->len; k++) dst[ru->start + k] = v;
      continue;
    }
    size_t ti = j->srt[ru->tile];
    size_t ld = j->m - ti * j->mb < j->mb ? j->m - ti * j->mb : j->mb;
    const double *src = tarn_task_data(t, j->slot[ru->tile][b]);
    memcpy(dst + ru->start, src + ru->local + lc * ld, ru->len * sizeof *dst);
  }
}

/* The radius-1 sum of the 3 halo columns c0, c1, c2 (each rows + 2 long,
 * element 1 the tile's row 0) into o: each element's 9 terms in order. */
TARN_HOT_CLONES static void sum3(const double *c0, const double *c1,
                                 const double *c2, double *o, size_t rows) {
  for (size_t p = 0; p < rows; p++)
    o[p] = 0.0 + c0[p] + c0[p + 1] + c0[p + 2] + c1[p] + c1[p + 1] + c1[p + 2] +
           c2[p] + c2[p + 1] + c2[p + 2];
}

static int sum_kernel(const double *in, size_t ld_in, double *out,
                      size_t ld_out, size_t rows, size_t cols, size_t radius,
                      void *arg);

/* A stencil task's work, shared with idle workers by ranges of columns
 * (tarn_task_parallel_for), so that a matrix of one tile still uses every
 * core. */
struct stencil_share {
  tarn_task *t;
  const struct sjob *j;
  const struct run *runs;
  size_t nruns;
  size_t hr;    /* halo rows */
  double *halo; /* the whole halo, hr per column; or the rings */
  double *out;
  size_t grain; /* of the rolling sum: ring k serves the range at k grains */
};

/* Columns per range: at least this many elements of output. */
#define SHARE_ELEMENTS 16384

static size_t share_grain(size_t rows) {
  return rows >= SHARE_ELEMENTS ? 1 : SHARE_ELEMENTS / rows;
}

/* The built-in radius-1 sum without the whole halo, output columns [q0,
 * q1): three halo columns turn in a ring (small enough for L1), so the
 * tile is read once from memory and the output written once. */
static int rolling_range(void *arg, size_t q0, size_t q1) {
  const struct stencil_share *s = arg;
  const struct sjob *j = s->j;
  size_t hr = s->hr;
  double *ring = s->halo + (q0 / s->grain) * 3 * hr;
  halo_column(s->t, j, s->runs, s->nruns, q0, ring + (q0 % 3) * hr);
  halo_column(s->t, j, s->runs, s->nruns, q0 + 1, ring + ((q0 + 1) % 3) * hr);
  for (size_t q = q0; q < q1; q++) {
    halo_column(s->t, j, s->runs, s->nruns, q + 2, ring + ((q + 2) % 3) * hr);
    sum3(ring + (q % 3) * hr, ring + ((q + 1) % 3) * hr,
         ring + ((q + 2) % 3) * hr, s->out + q * j->rows, j->rows);
  }
  return 0;
}

static int sum_rolling(tarn_task *t, const struct sjob *j, struct run *runs,
                       size_t nruns) {
  size_t hr = j->rows + 2, grain = share_grain(j->rows);
  size_t rings = (j->cols - 1) / grain + 1;
  double *ring = NULL;
  int rc =
      tarn_task_scratch(t, rings * 3 * hr * sizeof *ring, 64, (void **)&ring);
  if (rc != 0) return rc;
  struct stencil_share s = {
      t, j, runs, nruns, hr, ring, tarn_task_data(t, 0), grain};
  return tarn_task_parallel_for(t, j->cols, grain, rolling_range, &s);
}

/* Halo columns [c0, c1). */
static int halo_range(void *arg, size_t c0, size_t c1) {
  const struct stencil_share *s = arg;
  for (size_t c = c0; c < c1; c++)
    halo_column(s->t, s->j, s->runs, s->nruns, c, s->halo + c * s->hr);
  return 0;
}

/* The built-in sum of any radius over output columns [q0, q1). */
static int sum_range(void *arg, size_t q0, size_t q1) {
  const struct stencil_share *s = arg;
  const struct sjob *j = s->j;
  size_t r = j->st.radius;
  return sum_kernel(s->halo + r + (r + q0) * s->hr, s->hr,
                    s->out + q0 * j->rows, j->rows, j->rows, q1 - q0, r, NULL);
}

static int k_stencil(tarn_task *t, void *arg) {
  const struct sjob *j = arg;
  size_t r = j->st.radius;
  size_t hr = j->rows + 2 * r, hc = j->cols + 2 * r;
  struct run *runs = NULL;
  int rc = tarn_task_scratch(t, hr * sizeof *runs, _Alignof(struct run),
                             (void **)&runs);
  if (rc != 0) return rc;
  size_t nruns = row_runs(j, runs);
  if (j->fn == sum_kernel && r == 1) return sum_rolling(t, j, runs, nruns);
  double *halo = NULL;
  rc = tarn_task_scratch(t, hr * hc * sizeof *halo, 64, (void **)&halo);
  if (rc != 0) return rc;
  double *out = tarn_task_data(t, 0);
  struct stencil_share s = {t, j, runs, nruns, hr, halo, out, 0};
  size_t grain = share_grain(hr);
  rc = tarn_task_parallel_for(t, hc, grain, halo_range, &s);
  if (rc != 0) return rc;
  /* The built-in kernel is split by columns too; a user's kernel gets the
   * whole tile in one call (it may not expect to run concurrently). */
  if (j->fn == sum_kernel)
    return tarn_task_parallel_for(t, j->cols, grain, sum_range, &s);
  return j->fn(halo + r + r * hr, hr, out, j->rows, j->rows, j->cols, r,
               j->arg);
}

/* The built-in kernel of tarn_stencil_sum (radius 1 takes sum_rolling
 * instead). */
TARN_HOT_CLONES static int sum_kernel(const double *in, size_t ld_in,
                                      double *out, size_t ld_out, size_t rows,
                                      size_t cols, size_t radius, void *arg) {
  (void)arg;
  ptrdiff_t r = (ptrdiff_t)radius, ld = (ptrdiff_t)ld_in;
  /* A column of the output stays in L1 while the (2r+1)^2 shifted input
   * columns are added to it, in the documented order. */
  for (size_t q = 0; q < cols; q++) {
    double *o = out + q * ld_out;
    for (size_t p = 0; p < rows; p++) o[p] = 0.0;
    for (ptrdiff_t dq = -r; dq <= r; dq++) {
      const double *col = in + ((ptrdiff_t)q + dq) * ld;
      for (ptrdiff_t dp = -r; dp <= r; dp++) {
        const double *x = col + dp;
        for (size_t p = 0; p < rows; p++) o[p] += x[p];
      }
    }
  }
  return 0;
}

static bool stencil_ok(const tarn_stencil *s, const tarn_matrix *a) {
  return s->radius >= 1 && s->radius <= a->mb && s->radius <= a->nb &&
         kind_ok(s->rows.kind) && kind_ok(s->cols.kind);
}

/* Submits the task of output tile (ti, tj). */
static int submit_tile(const tarn_stencil *s, tarn_matrix *a, tarn_matrix *o,
                       tarn_stencil_fn fn, void *arg, size_t ti, size_t tj) {
  struct sjob *j = calloc(1, sizeof *j);
  if (j == NULL) return TARN_ENOMEM;
  j->rows = tarn__tile_rows(a, ti);
  j->cols = tarn__tile_cols(a, tj);
  j->row0 = ti * a->mb;
  j->col0 = tj * a->nb;
  j->m = a->m;
  j->n = a->n;
  j->mb = a->mb;
  j->nb = a->nb;
  j->st = *s;
  j->fn = fn;
  j->arg = arg;
  int rc = source_tiles(j->row0, j->rows, s->radius, a->m, a->mb, s->rows.kind,
                        j->srt, &j->nrt);
  if (rc == 0)
    rc = source_tiles(j->col0, j->cols, s->radius, a->n, a->nb, s->cols.kind,
                      j->sct, &j->nct);
  if (rc != 0) {
    free(j);
    return rc;
  }
  /* The tiles are distinct and none is o's, so slots follow the deps. */
  tarn_dep deps[1 + MAX_SIDE * MAX_SIDE];
  size_t nd = 0;
  deps[nd++] = (tarn_dep){tarn__tile(o, ti, tj), TARN_WRITE};
  for (size_t b = 0; b < j->nct; b++)
    for (size_t h = 0; h < j->nrt; h++) {
      j->slot[h][b] = nd;
      deps[nd++] = (tarn_dep){tarn__tile(a, j->srt[h], j->sct[b]), TARN_READ};
    }
  tarn_task_desc d = {.fn = k_stencil,
                      .arg = j,
                      .deps = deps,
                      .ndeps = nd,
                      .name = "stencil",
                      .arg_free = free};
  return tarn_task_submit(a->rt, &d);
}

int tarn_stencil_apply(const tarn_stencil *s, tarn_matrix *a,
                       tarn_stencil_fn fn, void *arg, tarn_matrix **out) {
  if (s == NULL || a == NULL || fn == NULL || out == NULL || *out == a ||
      !stencil_ok(s, a))
    return TARN_EINVAL;
  bool made = false;
  int rc =
      tarn__matrix_destination(a->rt, a->m, a->n, a->mb, a->nb, out, &made);
  if (rc != 0) return rc;
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++)
      rc = submit_tile(s, a, *out, fn, arg, ti, tj);
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

int tarn_stencil_sum(const tarn_stencil *s, tarn_matrix *a, tarn_matrix **out) {
  return tarn_stencil_apply(s, a, sum_kernel, NULL, out);
}

/* ---- elementwise -------------------------------------------------------- */

struct fjob {
  size_t count;
  double value;
};

struct assign_share {
  double *c;
  double value;
};

static int assign_range(void *arg, size_t k0, size_t k1) {
  const struct assign_share *s = arg;
  double *c = s->c;
  double value = s->value; /* locals: c cannot alias them */
  for (size_t k = k0; k < k1; k++) c[k] = value;
  return 0;
}

static int k_assign(tarn_task *t, void *arg) {
  const struct fjob *j = arg;
  struct assign_share s = {tarn_task_data(t, 0), j->value};
  return tarn_task_parallel_for(t, j->count, SHARE_ELEMENTS, assign_range, &s);
}

int tarn_stencil_assign(tarn_matrix *b, double value) {
  if (b == NULL) return TARN_EINVAL;
  for (size_t tj = 0; tj < b->nt; tj++)
    for (size_t ti = 0; ti < b->mt; ti++) {
      struct fjob *j = malloc(sizeof *j);
      if (j == NULL) return TARN_ENOMEM;
      j->count = tarn__tile_rows(b, ti) * tarn__tile_cols(b, tj);
      j->value = value;
      tarn_dep dep = {tarn__tile(b, ti, tj), TARN_WRITE};
      tarn_task_desc d = {.fn = k_assign,
                          .arg = j,
                          .deps = &dep,
                          .ndeps = 1,
                          .name = "assign",
                          .arg_free = free};
      int rc = tarn_task_submit(b->rt, &d);
      if (rc != 0) return rc;
    }
  return 0;
}

int tarn_stencil_update_add(tarn_matrix *b, tarn_matrix *a) {
  if (b == NULL || a == NULL) return TARN_EINVAL;
  return tarn_matrix_add(b, a, &b);
}
