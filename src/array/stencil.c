/* stencil.c: neighbourhood operations on tiled matrices (tarn/stencil.h).
 * One task per output tile writes that tile and reads every distinct input
 * tile its halo maps to under the boundary conditions. The task first maps
 * each halo row and column to where it reads (an index of a source tile,
 * or the pad value); only the 2r outside the tile go through the boundary
 * condition.
 *
 * The built-in sum of radius 1 copies nothing: a halo column's rows inside
 * the tile's rows are a column of a source tile of the same tile row (or a
 * column of the pad value), so the inner rows of each output column are
 * summed straight from three source columns, and only the first and last
 * row read the halo rows above and below, gathered a chunk of columns at
 * a time. A user's kernel, and the sum of a larger radius (whose
 * (2r+1)^2 terms per element dwarf a copy), get the tile with its halo
 * assembled in the worker's scratch memory, run by run of consecutive
 * source rows. Either way the tile's columns are shared with idle workers
 * (tarn__share_columns), and each element's terms are added in the
 * documented order.
 *
 * Each task owns its job struct (freed by the runtime when the task is
 * done). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "array/vmath.h"
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
  tarn_stencil_fn fn; /* NULL: the built-in sum */
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
 * dimension to set[] (distinct, in order of first appearance). The tile's
 * own indexes are one tile: only the first of them is looked at. */
static int source_tiles(size_t first, size_t count, size_t r, size_t size,
                        size_t tile, tarn_boundary_kind kind, size_t *set,
                        size_t *nset) {
  *nset = 0;
  for (size_t k = 0; k < count + 2 * r; k++) {
    if (k > r && k < r + count) continue;
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

/* Where halo index h of one dimension (0 .. count + 2r - 1; index h - r of
 * the tile) reads: index `local` of source tile set[tile], or the pad
 * value (tile == PAD). */
#define PAD SIZE_MAX
struct loc {
  size_t tile, local;
};

/* Blocks of a task's memory at most (sources_memory): the halo's row and
 * column tables, then the halo's runs and the halo, or the sum's column
 * table and pad column. */
#define HEAP_BLOCKS 4

/* Fills out[] for the halo of one dimension. The tile's own indexes need
 * no mapping; only the 2r outside ones go through the boundary
 * condition. */
static void map_halo(size_t first, size_t count, size_t r, size_t size,
                     size_t tile, tarn_boundary_kind kind, const size_t *set,
                     size_t nset, struct loc *out) {
  size_t own = index_in(set, nset, first / tile);
  for (size_t h = 0; h < count + 2 * r; h++) {
    if (h >= r && h - r < count) {
      out[h] = (struct loc){own, h - r};
      continue;
    }
    ptrdiff_t src =
        map_index((ptrdiff_t)(first + h) - (ptrdiff_t)r, size, kind);
    out[h] = src < 0 ? (struct loc){PAD, 0}
                     : (struct loc){index_in(set, nset, (size_t)src / tile),
                                    (size_t)src % tile};
  }
}

/* What a stencil task reads, worked out once before its columns are
 * shared: the source tiles' data and where every halo row and column
 * reads. */
struct sources {
  const struct sjob *j;
  size_t r, rows, cols, hr, hc;           /* hr, hc: halo rows, columns */
  const double *data[MAX_SIDE][MAX_SIDE]; /* tile (srt[a], sct[b]) */
  size_t ld[MAX_SIDE];                    /* rows of tile row srt[a] */
  struct loc *hrow, *hcol;                /* hr and hc entries */
  void *heap[HEAP_BLOCKS]; /* the task's memory from the heap (sources_free) */
  size_t nheap;
};

/* The task's memory (tarn__task_memory: its worker's scratch, else the
 * heap, as a tall tile's tables need: 1.5 million rows took 72 MB of
 * them, past the 64 MiB slab, and the task failed with TARN_ENOSPC until
 * 2026-12-05); NULL when neither has it. */
static void *sources_memory(tarn_task *t, struct sources *m, size_t bytes) {
  bool heap = false;
  void *p = tarn__task_memory(t, bytes, &heap);
  if (heap && p != NULL) m->heap[m->nheap++] = p;
  return p;
}

static void sources_free(struct sources *m) {
  for (size_t k = 0; k < m->nheap; k++) free(m->heap[k]);
  m->nheap = 0;
}

static int sources_init(tarn_task *t, const struct sjob *j, struct sources *m) {
  size_t r = j->st.radius;
  *m = (struct sources){.j = j,
                        .r = r,
                        .rows = j->rows,
                        .cols = j->cols,
                        .hr = j->rows + 2 * r,
                        .hc = j->cols + 2 * r};
  for (size_t a = 0; a < j->nrt; a++) {
    size_t left = j->m - j->srt[a] * j->mb;
    m->ld[a] = left < j->mb ? left : j->mb;
    for (size_t b = 0; b < j->nct; b++)
      m->data[a][b] = tarn_task_data(t, j->slot[a][b]);
  }
  struct loc *locs = sources_memory(t, m, (m->hr + m->hc) * sizeof *locs);
  if (locs == NULL) return TARN_ENOMEM;
  m->hrow = locs;
  m->hcol = locs + m->hr;
  map_halo(j->row0, j->rows, r, j->m, j->mb, j->st.rows.kind, j->srt, j->nrt,
           m->hrow);
  map_halo(j->col0, j->cols, r, j->n, j->nb, j->st.cols.kind, j->sct, j->nct,
           m->hcol);
  return 0;
}

/* ---- the tile with its halo: a user's kernel, a sum of radius > 1 ------- */

/* A run of consecutive halo rows that read consecutive rows of one source
 * tile row (or the pad value, when tile is PAD). */
struct run {
  size_t start, len; /* halo rows */
  size_t tile;       /* index into srt[] */
  size_t local;      /* first row within the source tile */
};

/* Fills runs[] for the rows of the tile's halo; returns their count. */
static size_t row_runs(const struct sources *m, struct run *runs) {
  size_t nruns = 0;
  for (size_t k = 0; k < m->hr; k++) {
    struct loc at = m->hrow[k];
    struct run *last = nruns > 0 ? &runs[nruns - 1] : NULL;
    if (last != NULL && last->tile == at.tile &&
        (at.tile == PAD || last->local + last->len == at.local)) {
      last->len++;
    } else {
      runs[nruns++] = (struct run){k, 1, at.tile, at.local};
    }
  }
  return nruns;
}

/* The halo, assembled by ranges of halo columns shared with idle workers,
 * and the output tile. */
struct halo_share {
  const struct sources *m;
  const struct run *runs;
  size_t nruns;
  double *halo; /* hr doubles per halo column */
  double *out;  /* the output tile */
};

/* Assembles halo column c into dst (hr doubles), run by run. */
static void halo_column(const struct halo_share *s, size_t c, double *dst) {
  const struct sources *m = s->m;
  struct loc col = m->hcol[c];
  for (size_t u = 0; u < s->nruns; u++) {
    const struct run *ru = &s->runs[u];
    if (ru->tile == PAD || col.tile == PAD) {
      double v = ru->tile == PAD ? m->j->st.rows.pad : m->j->st.cols.pad;
      for (size_t k = 0; k < ru->len; k++) dst[ru->start + k] = v;
      continue;
    }
    const double *src =
        m->data[ru->tile][col.tile] + ru->local + col.local * m->ld[ru->tile];
    memcpy(dst + ru->start, src, ru->len * sizeof *dst);
  }
}

/* Halo columns [c0, c1). */
static int halo_range(void *arg, size_t c0, size_t c1) {
  const struct halo_share *s = arg;
  for (size_t c = c0; c < c1; c++) halo_column(s, c, s->halo + c * s->m->hr);
  return 0;
}

/* Rows of an output column that sum_halo adds up in registers at once:
 * eight AVX2 vectors, enough independent sums to hide the adder's latency
 * (each row's (2r+1)^2 terms are one chain, in the documented order). */
enum { SUM_HALO_ROWS = 32 };

/* The built-in sum of any radius on the assembled halo, n output columns:
 * each block of SUM_HALO_ROWS rows of an output column is summed in
 * registers over the (2r+1)^2 shifted input columns, in the documented
 * order, and stored once. Adding each shifted column to the whole output
 * column in L1 instead (a load and a store per term) took 1.63 to 1.81
 * ms for a 512 x 512 tile of radius 2 against 0.66 to 0.72 this way, 4.74
 * to 5.43 against 1.80 to 1.88 at radius 4, the same bits (one core, a
 * program outside the repository, 2026-12-03). */
TARN_HOT_CLONES static void sum_halo(const double *in, size_t ld_in,
                                     double *out, size_t rows, size_t n,
                                     size_t radius) {
  ptrdiff_t r = (ptrdiff_t)radius, ld = (ptrdiff_t)ld_in;
  for (size_t q = 0; q < n; q++) {
    double *o = out + q * rows;
    const double *left = in + ((ptrdiff_t)q - r) * ld; /* column q - r */
    size_t p0 = 0;
    for (; rows - p0 >= SUM_HALO_ROWS; p0 += SUM_HALO_ROWS) {
      double acc[SUM_HALO_ROWS];
      for (size_t i = 0; i < SUM_HALO_ROWS; i++) acc[i] = 0.0;
      for (ptrdiff_t dq = 0; dq <= 2 * r; dq++) {
        const double *col = left + dq * ld + (ptrdiff_t)p0;
        for (ptrdiff_t dp = -r; dp <= r; dp++)
          for (size_t i = 0; i < SUM_HALO_ROWS; i++)
            acc[i] += col[dp + (ptrdiff_t)i];
      }
      for (size_t i = 0; i < SUM_HALO_ROWS; i++) o[p0 + i] = acc[i];
    }
    for (size_t p = p0; p < rows; p++) {
      double acc = 0.0;
      for (ptrdiff_t dq = 0; dq <= 2 * r; dq++)
        for (ptrdiff_t dp = -r; dp <= r; dp++)
          acc += left[dq * ld + (ptrdiff_t)p + dp];
      o[p] = acc;
    }
  }
}

/* The built-in sum over output columns [q0, q1) of the assembled halo. */
static int sum_halo_range(void *arg, size_t q0, size_t q1) {
  const struct halo_share *s = arg;
  const struct sources *m = s->m;
  size_t r = m->r;
  sum_halo(s->halo + r + (r + q0) * m->hr, m->hr, s->out + q0 * m->rows,
           m->rows, q1 - q0, r);
  return 0;
}

/* Assembles the halo and runs the kernel on it: the built-in sum shared
 * by columns with idle workers, a user's kernel on the whole tile in one
 * call (it may not expect to run concurrently). */
static int halo_tile(tarn_task *t, struct sources *m) {
  const struct sjob *j = m->j;
  struct run *runs = sources_memory(t, m, m->hr * sizeof *runs);
  /* A halo larger than the scratch slab (large tiles) comes from the heap. */
  double *halo =
      runs == NULL ? NULL : sources_memory(t, m, m->hr * m->hc * sizeof *halo);
  if (halo == NULL) return TARN_ENOMEM;
  double *out = tarn_task_data(t, 0);
  struct halo_share s = {m, runs, row_runs(m, runs), halo, out};
  int rc = tarn__share_columns(t, m->hr, m->hc, halo_range, &s);
  size_t r = m->r;
  if (rc == 0)
    rc = j->fn == NULL
             ? tarn__share_columns(t, m->rows, m->cols, sum_halo_range, &s)
             : j->fn(halo + r + r * m->hr, m->hr, out, m->rows, m->rows,
                     m->cols, r, j->arg);
  return rc;
}

/* ---- the sum of radius 1: the sources read in place --------------------- */

/* The first and last row of an output column, from its three source
 * columns (l, c, r: rows 0 .. rows - 1) and the elements of the halo rows
 * above (t) and below (b) in those columns; in the documented order. */
static void edges1(const double *l, const double *c, const double *r,
                   const double *t, const double *b, double *o, size_t rows) {
  size_t z = rows - 1;
  if (rows == 1) {
    o[0] = 0.0 + t[0] + l[0] + b[0] + t[1] + c[0] + b[1] + t[2] + r[0] + b[2];
    return;
  }
  o[0] = 0.0 + t[0] + l[0] + l[1] + t[1] + c[0] + c[1] + t[2] + r[0] + r[1];
  o[z] = 0.0 + l[z - 1] + l[z] + b[0] + c[z - 1] + c[z] + b[1] + r[z - 1] +
         r[z] + b[2];
}

/* A sum task's work, shared with idle workers by ranges of output columns,
 * so that a matrix of one tile still uses every core. */
struct sum_share {
  const struct sources *m;
  const double *const *col; /* halo column c's rows 0 .. rows - 1 */
  double *out;
};

/* The element of halo row h, outside the tile's rows (0: above, rows + 1:
 * below), in halo column c. The rows' pad comes first. */
static double outside_at(const struct sources *m, size_t h, size_t c) {
  struct loc row = m->hrow[h], col = m->hcol[c];
  if (row.tile == PAD) return m->j->st.rows.pad;
  if (col.tile == PAD) return m->j->st.cols.pad;
  return m->data[row.tile][col.tile][row.local + col.local * m->ld[row.tile]];
}

/* Output columns per chunk of sum1_range. The halo rows' elements lie a
 * source column apart (a page, for a tile of 512 rows): each load misses
 * the cache, and on small pages the TLB. So a chunk's are gathered first,
 * in a loop of independent loads whose misses overlap, rather than one
 * at a time between the columns' sums. */
enum { SUM1_CHUNK = 64 };

/* Output columns [q0, q1): the inner rows straight from the source
 * columns, the first and last row with the halo rows above and below. */
static int sum1_range(void *arg, size_t q0, size_t q1) {
  const struct sum_share *s = arg;
  const struct sources *m = s->m;
  size_t rows = m->rows, below = rows + 1;
  double t[SUM1_CHUNK + 2], b[SUM1_CHUNK + 2];
  for (size_t c0 = q0; c0 < q1; c0 += SUM1_CHUNK) {
    size_t c1 = q1 - c0 < SUM1_CHUNK ? q1 : c0 + SUM1_CHUNK;
    for (size_t c = c0; c < c1 + 2; c++) {
      t[c - c0] = outside_at(m, 0, c);
      b[c - c0] = outside_at(m, below, c);
    }
    for (size_t q = c0; q < c1; q++) {
      const double *const *col = s->col + q;
      double *o = s->out + q * rows;
      /* rows 1 .. rows - 2: element p - 1 from rows p - 1 .. p + 1 */
      if (rows > 2) tarn__vsum3(col[0], col[1], col[2], o + 1, rows - 2);
      edges1(col[0], col[1], col[2], t + (q - c0), b + (q - c0), o, rows);
    }
  }
  return 0;
}

/* The built-in sum of radius 1 of one tile, without copying the tile or
 * its halo: a halo column's rows 0 .. rows - 1 are a column of a source
 * tile of the same tile row, or a column of the columns' pad value; only
 * the table of those columns is made. */
static int sum1_tile(tarn_task *t, struct sources *m) {
  const double **col = sources_memory(t, m, m->hc * sizeof *col);
  if (col == NULL) return TARN_ENOMEM;
  double *pad = NULL;
  size_t own = m->hrow[m->r].tile; /* the tile's own tile row */
  for (size_t c = 0; c < m->hc; c++) {
    struct loc cl = m->hcol[c];
    if (cl.tile != PAD) {
      col[c] = m->data[own][cl.tile] + cl.local * m->rows;
      continue;
    }
    if (pad == NULL) {
      if ((pad = sources_memory(t, m, m->rows * sizeof *pad)) == NULL)
        return TARN_ENOMEM;
      for (size_t p = 0; p < m->rows; p++) pad[p] = m->j->st.cols.pad;
    }
    col[c] = pad;
  }
  struct sum_share s = {m, col, tarn_task_data(t, 0)};
  return tarn__share_columns(t, m->rows, m->cols, sum1_range, &s);
}

static int k_stencil(tarn_task *t, void *arg) {
  const struct sjob *j = arg;
  struct sources m;
  int rc = sources_init(t, j, &m);
  if (rc == 0)
    rc = j->fn == NULL && m.r == 1 ? sum1_tile(t, &m) : halo_tile(t, &m);
  sources_free(&m);
  return rc;
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

/* Whether every tile's task (the tile of o and the tiles of a its halo
 * reads, fewer at a boundary that pads) fits under the limit. */
static bool stencil_fits(const tarn_stencil *s, const tarn_matrix *a,
                         const tarn_matrix *o) {
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  for (size_t tj = 0; limit != 0 && tj < a->nt; tj++)
    for (size_t ti = 0; ti < a->mt; ti++) {
      size_t srt[MAX_SIDE], sct[MAX_SIDE], nrt, nct;
      if (source_tiles(ti * a->mb, tarn__tile_rows(a, ti), s->radius, a->m,
                       a->mb, s->rows.kind, srt, &nrt) != 0 ||
          source_tiles(tj * a->nb, tarn__tile_cols(a, tj), s->radius, a->n,
                       a->nb, s->cols.kind, sct, &nct) != 0)
        return true; /* refused as it is submitted */
      size_t charge = tarn__tile_charge_at(o, ti, tj);
      for (size_t b = 0; b < nct; b++)
        for (size_t h = 0; h < nrt; h++)
          charge += tarn__tile_charge_at(a, srt[h], sct[b]);
      if (charge > limit) return false;
    }
  return true;
}

/* Submits a task per output tile: `fn` on the tile with its halo, or the
 * built-in sum when fn is NULL; none when one could never fit under the
 * memory limit (TARN_ENOMEM). */
static int submit_all(const tarn_stencil *s, tarn_matrix *a, tarn_stencil_fn fn,
                      void *arg, tarn_matrix **out) {
  if (s == NULL || !tarn__matrix_ok(a) || out == NULL || *out == a ||
      !stencil_ok(s, a))
    return TARN_EINVAL;
  bool made = false;
  int rc =
      tarn__matrix_destination(a->rt, a->m, a->n, a->mb, a->nb, out, &made);
  if (rc != 0) return rc;
  if (!stencil_fits(s, a, *out)) rc = TARN_ENOMEM;
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++)
      rc = submit_tile(s, a, *out, fn, arg, ti, tj);
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

int tarn_stencil_apply(const tarn_stencil *s, tarn_matrix *a,
                       tarn_stencil_fn fn, void *arg, tarn_matrix **out) {
  if (fn == NULL) return TARN_EINVAL;
  return submit_all(s, a, fn, arg, out);
}

int tarn_stencil_sum(const tarn_stencil *s, tarn_matrix *a, tarn_matrix **out) {
  return submit_all(s, a, NULL, NULL, out);
}

/* ---- elementwise -------------------------------------------------------- */

struct fjob {
  size_t rows, cols;
  double value;
};

struct assign_share {
  double *c;
  size_t rows;
  double value;
};

/* Columns [q0, q1). */
static int assign_range(void *arg, size_t q0, size_t q1) {
  const struct assign_share *s = arg;
  tarn__fill(s->c + q0 * s->rows, s->value, (q1 - q0) * s->rows);
  return 0;
}

static int k_assign(tarn_task *t, void *arg) {
  const struct fjob *j = arg;
  struct assign_share s = {tarn_task_data(t, 0), j->rows, j->value};
  return tarn__share_columns(t, j->rows, j->cols, assign_range, &s);
}

int tarn_stencil_assign(tarn_matrix *b, double value) {
  if (!tarn__matrix_ok(b)) return TARN_EINVAL;
  /* the first tile is the largest (a limit below it: the tasks would
   * fail and leave b cancelled, as until 2026-12-05) */
  if (!tarn__task_fits(b->rt, tarn__tile_charge_at(b, 0, 0)))
    return TARN_ENOMEM;
  for (size_t tj = 0; tj < b->nt; tj++)
    for (size_t ti = 0; ti < b->mt; ti++) {
      struct fjob *j = malloc(sizeof *j);
      if (j == NULL) return TARN_ENOMEM;
      *j = (struct fjob){tarn__tile_rows(b, ti), tarn__tile_cols(b, tj), value};
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
  return tarn_matrix_add(b, a, &b); /* refuses what is not a live pair */
}
