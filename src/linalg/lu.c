/* lu.c: tiled LU with partial pivoting and the linear solves built on it
 * (see tarn/linalg.h). Right-looking, one panel per tile column: the panel
 * task factors the whole tile column from the diagonal tile down, in place
 * across its tiles, and records the pivots; swap tasks apply them to the
 * other tile columns, trsm and gemm tasks update the rest. A solve carries
 * a copy of B along as tile columns right of A's (the forward solve), then
 * solves with U into B (solve.c); a solve with factors given applies all
 * interchanges to the copy first, then the forward and backward solves.
 * The kernels share their work with idle workers (tarn_task_parallel_for):
 * the panel's by blocks of columns (the next block factored while the
 * others update the columns beyond it) or, in a narrow panel, its
 * recursion's large gemms by rows; the swaps by columns; trsm and gemm as
 * linalg_internal.h says. The same swap
 * tasks apply a set of interchanges alone to any matrix
 * (tarn_matrix_permute_rows). Each task owns a small job struct freed by
 * the runtime when it is done. */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"
#include "rt/rt_internal.h"
#include "tarn/linalg.h"

/* What one tile task needs; owned by the task. */
struct lu_job {
  int n;             /* panel: its columns; swap: the tile column's */
  size_t tb;         /* tile size of the matrix (rows of a full tile) */
  size_t row0;       /* panel / swap: the first row of the tile row k */
  size_t rows;       /* panel / swap: rows from row0 to the end */
  size_t first;      /* swap: first interchange to apply (global row) */
  size_t count;      /* swap: number of interchanges */
  size_t ntiles;     /* panel / swap: tiles in the column from row0 */
  size_t slot0;      /* swap: data slot of the first tile */
  size_t *piv_out;   /* panel: where its pivots go */
  const size_t *piv; /* swap: the pivots it applies */
  atomic_int *info;  /* panel: the first exactly zero pivot (1-based) */
  bool reverse;      /* swap: the interchanges in reverse order (P^T) */
  atomic_int *skip;  /* swap: nothing to do unless it holds 0 (or NULL) */
};

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct lu_job *proto,
                      const tarn_dep *deps, size_t ndeps, int priority,
                      const char *name) {
  return tarn__submit_owned(rt, fn, proto, sizeof *proto, deps, ndeps, priority,
                            name);
}

/* ---- the panel ----------------------------------------------------------- */

/* A panel (the tile column from the diagonal tile down) is factored where
 * it lies, across its tiles, without a copy: row r of the panel is row
 * r % tb of its tile r / tb (task data slot), whose leading dimension is
 * its rows. The first tile holds every row of the panel's upper part (a
 * panel is no wider than its first tile is tall, but for the last panel of
 * a wide matrix, which is one tile).
 *
 * Panels from PANEL_BLOCKED columns on are factored by blocks of PANEL_NB
 * columns, right-looking with a lookahead of one block: while idle workers
 * update the columns right of the next block (the block's interchanges,
 * trsm and gemm, by ranges of columns), the panel's thread updates the
 * next block and factors it, so that those factorisations, each on one
 * core, do not leave the other cores idle; the interchanges on the columns
 * left of each block come last, for all blocks at once (shared by
 * columns). A narrower panel is one block. A block is factored by one
 * LAPACKE_dgetrf_work when the panel is one unit (below), else recursively as
 * LAPACK's dgetrf2 (the left half of its columns; their interchanges and
 * trsm on the right half, and its trailing gemm, shared by rows when the
 * block is the whole panel; the right half; its interchanges on the left
 * half), down to BASE_COLUMNS columns
 * factored one by one (pivot search, interchange, scaling, rank-one
 * update, a BLAS call per unit: a tile, or TILE_UNIT rows of a tile in
 * a tall, narrow panel of fewer than BASE_SHARE_TILES tiles, tile_units;
 * in a tall panel that may share, 16 columns shared with idle workers by
 * units, one step per column: columns_factor). Pivots and info are
 * dgetrf's, and do not depend on the sharing.
 *
 * Until 2026-12-04 a panel of several tiles was copied into one pool
 * temporary for dgetrf and back: under a memory limit that pinned twice
 * the tile column. A panel of short tiles, of 1 MiB at most, still is,
 * into the task's scratch (panel_gathered, below). */
#define PANEL_BLOCKED 129
#define PANEL_NB 64
#define BASE_COLUMNS 8

/* Ranges of columns (updates, interchanges) below this many are not worth
 * a helper. */
#define COLUMN_GRAIN 32

/* A recursive block's trailing updates of at least this many multiply-adds
 * are shared with idle workers, by pieces of ROW_PIECE rows (from the
 * block's first row below its top), a dgemm each (per tile), so that the
 * factors do not depend on how the pieces were dealt: a dgemm split in
 * rows keeps its bits with OpenBLAS's Haswell kernels, not with its
 * SkylakeX and Cooperlake ones (C -= A B of 100 x 100 x 100 split at row
 * 50 differs in the last bits). Pieces of 4096 rows, as the base's units:
 * 65536 x 64 in one tile on 2 workers, best of 9, four alternated runs,
 * 7.5 to 7.6 ms against 7.6 to 7.9 in ranges as the workers took them;
 * in pieces of 2048 rows, 8.5 to 8.9. */
#define SHARE_MADDS ((double)(1 << 22))
#define ROW_PIECE 4096

/* One interchange in a tile column: the two rows' first elements and the
 * leading dimensions of their tiles. */
struct swap_rows {
  double *a, *b;
  size_t lda, ldb;
};

/* A tile column of a task (data slots from slot0: its tiles from the job's
 * row0 down). A panel task uses slot0 0. */
struct panel {
  tarn_task *t;
  const struct lu_job *j;
};

/* Rows in tile i of the job's tile column from row0 down (the last may be
 * short): the leading dimension of that tile. */
static size_t panel_tile_rows(const struct panel *q, size_t i) {
  size_t left = q->j->rows - i * q->j->tb;
  return left < q->j->tb ? left : q->j->tb;
}

/* A panel being factored, and the step of its blocked factorisation: the
 * block [k, k + w) last factored, the width of the next one, and where the
 * columns that the step shares begin. */
struct panel_lu {
  struct panel q;
  size_t rows, cols;
  lapack_int *ipiv;     /* 1-based, relative to the panel */
  struct swap_rows *at; /* at[k]: rows k and ipiv[k] - 1, column 0 (set
                         * as each pivot is found, several units only) */
  int info;             /* the first exactly zero pivot (1-based), or 0 */
  bool share;           /* whether the recursion may share its updates */
  bool share_columns;   /* and its base columns (columns_factor) */
  /* The units the base columns' steps go by (columns_factor): each tile
   * of the panel in per_tile units of unit_rows rows (the last of a tile
   * may be shorter), one per tile but in a tall, narrow panel
   * (tile_units). */
  size_t per_tile, unit_rows;
  /* Each unit's candidate pivot for the column being searched when base
   * columns are searched (columns_factor): |element| and row. */
  double *unit_max;
  size_t *unit_best;
  int nb;     /* columns of every block but the last */
  int k, w;   /* the block just factored */
  int next;   /* the next block's width */
  size_t far; /* k + w + next: the first column the step shares */
};

/* The address of element (r, c) of the panel; its tile's leading
 * dimension to *ld, and to *run the rows from r to the end of its tile or
 * to `end`, whichever comes first. */
static double *panel_at(const struct panel_lu *s, size_t r, size_t c,
                        size_t end, size_t *ld, size_t *run) {
  size_t tb = s->q.j->tb, i = r / tb, tile_end = (i + 1) * tb;
  *ld = panel_tile_rows(&s->q, i);
  *run = (end < tile_end ? end : tile_end) - r;
  return (double *)tarn_task_data(s->q.t, i) + (r - i * tb) + c * *ld;
}

/* The unit holding row r of the panel. */
static size_t unit_of(const struct panel_lu *s, size_t r) {
  size_t tb = s->q.j->tb;
  return r / tb * s->per_tile + r % tb / s->unit_rows;
}

/* The units of the panel from the one holding row `from` to the last. */
static size_t units_from(const struct panel_lu *s, size_t from) {
  return unit_of(s, s->rows - 1) + 1 - unit_of(s, from);
}

/* Rows a and b of column 0, for an interchange. */
static struct swap_rows panel_rows(const struct panel_lu *s, size_t a,
                                   size_t b) {
  struct swap_rows r;
  size_t run;
  r.a = panel_at(s, a, 0, a + 1, &r.lda, &run);
  r.b = panel_at(s, b, 0, b + 1, &r.ldb, &run);
  return r;
}

/* The n interchanges of `rows`, in order, on columns [c0, c1), column by
 * column: a row's elements lie a tile's leading dimension apart, in one
 * set of the L1 cache, while a column's interchanges touch one column. */
static void swap_columns(const struct swap_rows *rows, size_t n, size_t c0,
                         size_t c1) {
  for (size_t c = c0; c < c1; c++)
    for (size_t i = 0; i < n; i++) {
      const struct swap_rows *r = &rows[i];
      double v = r->a[c * r->lda];
      r->a[c * r->lda] = r->b[c * r->ldb];
      r->b[c * r->ldb] = v;
    }
}

/* The interchanges of block [k0, k1) (its rows in at[]) on columns
 * [c0, c1), in order: one LAPACKE_dlaswp_work in a panel of one unit. */
static void block_swaps(const struct panel_lu *s, size_t k0, size_t k1,
                        size_t c0, size_t c1) {
  if (units_from(s, 0) == 1) {
    size_t ld, run;
    double *a = panel_at(s, 0, c0, 1, &ld, &run);
    LAPACKE_dlaswp_work(LAPACK_COL_MAJOR, (lapack_int)(c1 - c0), a,
                        (lapack_int)ld, (lapack_int)k0 + 1, (lapack_int)k1,
                        s->ipiv, 1);
  } else {
    swap_columns(s->at + k0, k1 - k0, c0, c1);
  }
}

/* One step of columns [c0, c_end) factored column by column, on the rows
 * of one unit (a tile, or TILE_UNIT rows of one: tile_units) from
 * `from` on (from the unit's first row, or `from` when it lies in the
 * unit): column c, whose pivot was found and interchanged
 * (unless c is SIZE_MAX: the block's first step), divided by the pivot d
 * when `scale`, its rank-one update of columns (c, c_end); then the
 * search for the pivot of column `next` (unless SIZE_MAX). Each unit's
 * work is the same BLAS calls whichever thread does it and whatever other
 * units go with it: the factors do not depend on how steps are shared. */
struct column_step {
  struct panel_lu *s;
  size_t from, c, c_end, next;
  bool scale;
  double d;
};

/* The step on unit i of the panel (unit i % per_tile of tile
 * i / per_tile); its pivot candidate to s->unit_max[i], s->unit_best[i]
 * when it searches. Every unit of the panel has rows (tile_units). */
static void column_step_unit(const struct column_step *st, size_t i) {
  struct panel_lu *s = st->s;
  size_t tb = s->q.j->tb, tile = i / s->per_tile;
  size_t r = tile * tb + i % s->per_tile * s->unit_rows, end = r + s->unit_rows;
  if (end > s->rows) end = s->rows; /* panel_at ends runs at the tile's end */
  if (r < st->from) r = st->from;
  size_t ld, run, c = st->c;
  if (c != SIZE_MAX) {
    double *x = panel_at(s, r, c, end, &ld, &run);
    if (st->scale && fabs(st->d) >= DBL_MIN)
      cblas_dscal((int)run, 1.0 / st->d, x, 1);
    else if (st->scale)
      for (size_t e = 0; e < run; e++) x[e] /= st->d;
    if (c + 1 < st->c_end) {
      size_t ldu, one;
      const double *u = panel_at(s, c, c + 1, c + 1, &ldu, &one);
      cblas_dger(CblasColMajor, (int)run, (int)(st->c_end - c - 1), -1.0, x, 1,
                 u, (int)ldu, x + ld, (int)ld);
    }
  }
  if (st->next != SIZE_MAX) {
    const double *p = panel_at(s, r, st->next, end, &ld, &run);
    size_t k = cblas_idamax((int)run, p, 1);
    s->unit_max[i] = fabs(p[k]);
    s->unit_best[i] = r + k;
  }
}

/* Units [first + begin, first + end) of a step (first: the unit of
 * st->from). */
static int column_step_range(void *arg, size_t begin, size_t end) {
  const struct column_step *st = arg;
  size_t first = unit_of(st->s, st->from);
  for (size_t i = first + begin; i < first + end; i++) column_step_unit(st, i);
  return 0;
}

/* Base columns are shared by ranges of units (columns_factor) when the
 * panel may share (its block is the whole panel), has BASE_SHARE_ROWS
 * rows or more and BASE_SHARE_TILES tiles as units, or SPLIT_SHARE_ROWS
 * rows or more in units of TILE_UNIT rows (tile_units): a column's step
 * is then long enough to be worth a helper. They are BASE_COLUMNS_SHARED
 * wide then, fewer levels of the recursion's gemms of a tile's rows each
 * (65536 x 64 in tiles of 64 on 2 workers: 15 to 18 ms against 17 to 21
 * with 8, 18 to 22 with 32). Units of TILE_UNIT rows share from twice as
 * many rows (likely as each is 512 KiB of a 16-column base, and a helper
 * that takes another core's unit at a step reads it from that core's
 * cache): 16384 x 64 in one tile or two took 2.2 to 2.4 ms
 * unshared against 2.7 to 3.0 shared, 24576 x 64 3.2 to 3.6 against 3.6
 * to 4.2, 32768 x 64 the same either way, 49152 x 64 5.5 to 6.2 shared
 * against 6.3 to 7.1 (medians of 21, 2 workers). */
#define BASE_SHARE_TILES 4
#define BASE_SHARE_ROWS 16384
#define SPLIT_SHARE_ROWS 32768
#define BASE_COLUMNS_SHARED 16

/* Runs step st on the units from st->from down (st->from < the panel's
 * rows; shared with idle workers when the panel's base columns are);
 * returns the pivot row of column st->next, the first of the largest
 * |element| (as idamax), or a status < 0. */
static long long column_step_run(struct column_step *st) {
  struct panel_lu *s = st->s;
  size_t first = unit_of(s, st->from), units = units_from(s, st->from);
  int rc = s->share_columns
               ? tarn_task_parallel_for(s->q.t, units, 1, column_step_range, st)
               : column_step_range(st, 0, units);
  if (rc != 0) return rc;
  if (st->next == SIZE_MAX) return 0;
  /* From the first unit's candidate, a later one only when larger: as
   * idamax on the whole column, a NaN first stays the pivot (from -1, a
   * first unit's NaN lost to a later zero, and a matrix dgetrf factors
   * was found singular in tiles but not in one) */
  size_t best = s->unit_best[first];
  double max = s->unit_max[first];
  for (size_t i = first + 1; i < first + units; i++)
    if (s->unit_max[i] > max) {
      max = s->unit_max[i];
      best = s->unit_best[i];
    }
  return (long long)best;
}

/* Columns [c0, c0 + w) from row c0 down, column by column, as dgetf2: the
 * pivot of a column searched in each unit (one idamax per unit), its
 * interchange, then the column's scaling and rank-one update fused with
 * the search for the next column's pivot, unit by unit; the steps shared
 * by units with idle workers when the panel is tall (BASE_SHARE_ROWS).
 * Returns 0 or a status of tarn_task_parallel_for. */
static int columns_factor(struct panel_lu *s, size_t c0, size_t w) {
  size_t c_end = c0 + w, ld, run;
  struct column_step st = {
      .s = s, .from = c0, .c = SIZE_MAX, .c_end = c_end, .next = c0};
  for (size_t c = c0; c < c_end; c++) {
    long long found = column_step_run(&st);
    if (found < 0) return (int)found;
    size_t p = (size_t)found;
    s->ipiv[c] = (lapack_int)p + 1;
    s->at[c] = panel_rows(s, c, p);
    st.scale = *panel_at(s, p, c, p + 1, &ld, &run) != 0.0;
    if (st.scale) {
      if (p != c) swap_columns(&s->at[c], 1, c0, c_end);
      st.d = *panel_at(s, c, c, c + 1, &ld, &run);
    } else if (s->info == 0) {
      s->info = (int)c + 1;
    }
    st.from = c + 1;
    st.c = c;
    st.next = c + 1 < c_end ? c + 1 : SIZE_MAX;
  }
  long long rc = st.from < s->rows ? column_step_run(&st) : 0;
  return rc < 0 ? (int)rc : 0;
}

/* Columns [c1, c2) less their columns [k0, k0 + kw) times rows
 * [k0, k0 + kw) of [c1, c2) (in the first tile), on rows from r0 on. */
struct gemm_rows {
  const struct panel_lu *s;
  size_t r0, k0, kw, c1, c2;
};

/* Rows [r0 + begin, r0 + end) of a gemm_rows, a dgemm per tile. */
static int gemm_rows_range(void *arg, size_t begin, size_t end) {
  const struct gemm_rows *g = arg;
  size_t ldu, ld, run, r1 = g->r0 + end;
  const double *u = panel_at(g->s, g->k0, g->c1, g->k0 + 1, &ldu, &run);
  for (size_t r = g->r0 + begin; r < r1; r += run) {
    double *l = panel_at(g->s, r, g->k0, r1, &ld, &run);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)run,
                (int)(g->c2 - g->c1), (int)g->kw, -1.0, l, (int)ld, u, (int)ldu,
                1.0, l + (g->c1 - g->k0) * ld, (int)ld);
  }
  return 0;
}

/* The same over pieces [begin, end) of ROW_PIECE rows: a dgemm per piece
 * and tile, whichever thread runs it and whatever pieces go with it. */
static int gemm_pieces_range(void *arg, size_t begin, size_t end) {
  const struct gemm_rows *g = arg;
  size_t rows = g->s->rows - g->r0;
  for (size_t p = begin; p < end; p++) {
    size_t lo = p * ROW_PIECE,
           hi = rows - lo < ROW_PIECE ? rows : lo + ROW_PIECE;
    gemm_rows_range(arg, lo, hi);
  }
  return 0;
}

/* LU of columns [c0, c0 + w) from row c0 down, recursively as dgetrf2:
 * pivots to ipiv[c0, c0 + w), relative to the panel. Returns 0 or a
 * status of tarn_task_parallel_for. */
static int recursive_factor(struct panel_lu *s, size_t c0, size_t w) {
  if (w <= (s->share_columns ? BASE_COLUMNS_SHARED : BASE_COLUMNS))
    return columns_factor(s, c0, w);
  size_t n1 = w / 2, c1 = c0 + n1, c2 = c0 + w, ld, run;
  int rc = recursive_factor(s, c0, n1);
  if (rc != 0) return rc;
  swap_columns(s->at + c0, n1, c1, c2);
  double *l11 = panel_at(s, c0, c0, c1, &ld, &run);
  tarn__trsm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)n1,
             (int)(w - n1), 1.0, l11, (int)ld, l11 + n1 * ld, (int)ld);
  struct gemm_rows g = {
      .s = s, .r0 = c1, .k0 = c0, .kw = n1, .c1 = c1, .c2 = c2};
  size_t rows = s->rows - c1;
  rc = s->share && (double)rows * (double)(w - n1) * (double)n1 >= SHARE_MADDS
           ? tarn_task_parallel_for(s->q.t, (rows - 1) / ROW_PIECE + 1, 1,
                                    gemm_pieces_range, &g)
           : gemm_rows_range(&g, 0, rows);
  if (rc == 0) rc = recursive_factor(s, c1, w - n1);
  if (rc == 0) swap_columns(s->at + c1, w - n1, c0, c1);
  return rc;
}

/* The interchanges of a panel of `rows` rows and `cols` columns. */
static size_t panel_pivot_count(size_t rows, size_t cols) {
  return rows < cols ? rows : cols;
}

/* Factors block [k, k + w) from row k down: pivots to ipiv[k, k + w),
 * relative to the panel (and their rows to at[] in a panel of several
 * units), and the first zero pivot to s->info when there was none before
 * (blocks are factored in order). */
static int block_factor(struct panel_lu *s, int k, int w) {
  size_t ld, run, pivots = panel_pivot_count(s->rows - (size_t)k, (size_t)w);
  if (units_from(s, 0) == 1) {
    double *a = panel_at(s, (size_t)k, (size_t)k, s->rows, &ld, &run);
    lapack_int i = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, (int)s->rows - k, w, a,
                                       (lapack_int)ld, s->ipiv + k);
    if (i < 0) return TARN_EINVAL;
    if (i > 0 && s->info == 0) s->info = k + (int)i;
    for (size_t c = (size_t)k; c < (size_t)k + pivots; c++) s->ipiv[c] += k;
    return 0;
  }
  return recursive_factor(s, (size_t)k, (size_t)w);
}

/* Updates columns [c0, c1) of the panel, right of block [k, k + w) just
 * factored: the block's interchanges, U12 = L11^-1 A12 and
 * A22 -= L21 U12. */
static void block_update(const struct panel_lu *s, int k, int w, size_t c0,
                         size_t c1) {
  size_t ld, run, k0 = (size_t)k, kw = (size_t)w;
  block_swaps(s, k0, k0 + kw, c0, c1);
  double *akk = panel_at(s, k0, k0, k0 + 1, &ld, &run);
  tarn__trsm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, w, (int)(c1 - c0),
             1.0, akk, (int)ld, akk + (c0 - k0) * ld, (int)ld);
  struct gemm_rows g = {
      .s = s, .r0 = k0 + kw, .k0 = k0, .kw = kw, .c1 = c0, .c2 = c1};
  gemm_rows_range(&g, 0, s->rows - k0 - kw);
}

/* The step's lead, on the panel task's thread: the next block's columns
 * updated by the block just factored, then the next block factored. */
static int panel_lead(void *arg) {
  struct panel_lu *s = arg;
  int k1 = s->k + s->w;
  block_update(s, s->k, s->w, (size_t)k1, (size_t)(k1 + s->next));
  return block_factor(s, k1, s->next);
}

/* The step's shared part: columns [far + begin, far + end) updated by the
 * block just factored. */
static int panel_update_range(void *arg, size_t begin, size_t end) {
  const struct panel_lu *s = arg;
  block_update(s, s->k, s->w, s->far + begin, s->far + end);
  return 0;
}

/* The interchanges of the blocks right of each column, for the columns
 * [begin, end) left of the last block: a column of block b gets those of
 * rows (b + 1) nb ... on, in order, as dgetrf's interchanges on the
 * columns left of each block. */
static int panel_swap_left(void *arg, size_t begin, size_t end) {
  const struct panel_lu *s = arg;
  size_t nb = (size_t)s->nb, n = panel_pivot_count(s->rows, s->cols);
  for (size_t c = begin; c < end;) {
    size_t block_end = (c / nb + 1) * nb,
           c1 = end < block_end ? end : block_end;
    block_swaps(s, block_end, n, c, c1);
    c = c1;
  }
  return 0;
}

/* LU with partial pivoting of the panel in place, as dgetrf (see above).
 * Returns 0, TARN_EINVAL when LAPACK refuses its arguments, or a status
 * of tarn_task_parallel_for. */
static int panel_getrf(struct panel_lu *s) {
  int n = (int)s->cols;
  int nb = n < PANEL_BLOCKED || s->rows < s->cols ? n : PANEL_NB;
  s->nb = nb;
  s->share = nb == n; /* a lead may not share (it runs in a shared step) */
  s->share_columns =
      s->share && (s->per_tile == 1 ? units_from(s, 0) >= BASE_SHARE_TILES &&
                                          s->rows >= BASE_SHARE_ROWS
                                    : s->rows >= SPLIT_SHARE_ROWS);
  int rc = block_factor(s, 0, nb);
  for (int k = 0, w = nb; rc == 0 && k + w < n; k += w, w = s->next) {
    s->k = k;
    s->w = w;
    s->next = n - k - w < nb ? n - k - w : nb;
    s->far = (size_t)(k + w + s->next);
    rc = tarn__task_parallel_for_lead(s->q.t, (size_t)n - s->far, COLUMN_GRAIN,
                                      panel_update_range, s, panel_lead, s);
  }
  size_t last = n <= nb ? 0 : (size_t)(n - 1) / (size_t)nb * (size_t)nb;
  if (rc == 0 && last > 0)
    rc = tarn_task_parallel_for(s->q.t, last, COLUMN_GRAIN, panel_swap_left, s);
  return rc;
}

/* ---- kernels ------------------------------------------------------------ */

/* Records a panel's pivots (0-based, global) and its first zero pivot. */
static void panel_pivots(const struct lu_job *j, const lapack_int *ipiv,
                         int info) {
  if (info > 0) {
    /* Panels run in order: the first failure is the smallest index. */
    int expected = 0;
    atomic_compare_exchange_strong(j->info, &expected,
                                   (int)(j->row0 + (size_t)info));
  }
  for (size_t c = 0; c < panel_pivot_count(j->rows, (size_t)j->n); c++)
    j->piv_out[j->row0 + c] = j->row0 + (size_t)ipiv[c] - 1;
}

/* A narrow panel (under PANEL_BLOCKED columns) of BASE_SHARE_ROWS rows or
 * more in fewer than BASE_SHARE_TILES tiles goes by units of TILE_UNIT
 * rows (the last of each tile shorter), never across a tile's end,
 * instead of one unit per tile: factored recursively, its recursion's
 * gemms shared by rows and, from SPLIT_SHARE_ROWS rows on, its base
 * columns' steps by units, where a panel of one tile was one
 * LAPACKE_dgetrf_work on the panel's thread and one of two or three tiles
 * shared no base column (too few units). Units of a fixed height, so that
 * the factors do not depend on the workers, taken on one worker too.
 * Medians on 2 workers: 65536 x 64 as one tile 7.6 to 7.7 ms (was
 * dgetrf's 12.2 to 12.6; docs/linalg.md, "One tall tile"), in two tiles
 * 7.9 (was 8.6), 65536 x 128 in two 22.9 (was 24.7), 16384 x 64 as one
 * tile 2.3 (was 2.8 with its base columns shared, 3.2 to 3.3 by dgetrf). */
#define TILE_UNIT 4096
_Static_assert(BASE_SHARE_ROWS / (BASE_SHARE_TILES - 1) > TILE_UNIT,
               "a tall panel's tile holds two units or more (tile_units)");

/* Sets s->per_tile and s->unit_rows for job j (above): every unit of
 * the panel has rows. Such a panel's tiles are taller than TILE_UNIT (it
 * has BASE_SHARE_ROWS rows in fewer than BASE_SHARE_TILES tiles), so a
 * tile holds two units or more. */
static void tile_units(struct panel_lu *s, const struct lu_job *j) {
  s->per_tile = 1;
  s->unit_rows = j->tb;
  if (j->n < PANEL_BLOCKED && j->rows >= BASE_SHARE_ROWS &&
      j->rows >= (size_t)j->n && j->ntiles < BASE_SHARE_TILES) {
    size_t h = j->rows < j->tb ? j->rows : j->tb;
    s->per_tile = (h - 1) / TILE_UNIT + 1;
    s->unit_rows = TILE_UNIT;
  }
}

/* Off only in tests (tarn__lu_gather_short_panels). */
static atomic_bool gather_short_panels = true;

void tarn__lu_gather_short_panels(bool on) {
  atomic_store_explicit(&gather_short_panels, on, memory_order_relaxed);
}

/* Whether a panel of rows x cols in ntiles tiles of tb rows (the last
 * may be shorter) qualifies to be gathered (panel_gathered, below). */
static bool panel_gathers(size_t rows, size_t cols, size_t tb, size_t ntiles) {
  return ntiles >= 2 && tb <= TARN__GATHER_TILE_ROWS &&
         rows < BASE_SHARE_ROWS &&
         cols <= TARN__GATHER_BYTES_MAX / sizeof(double) / rows &&
         atomic_load_explicit(&gather_short_panels, memory_order_relaxed);
}

/* A panel of two tiles or more, each at most TARN__GATHER_TILE_ROWS rows
 * high, and of at most TARN__GATHER_BYTES_MAX, is gathered into one
 * column-major block of the task's memory, factored there by
 * LAPACKE_dgetrf2_work and scattered back (panel_gathered). In place, its base
 * columns made a BLAS call per tile and column (idamax, the scaling, the
 * rank-one update), which for tiles of 32 rows cost more than the arithmetic.
 * Medians of `tarn_matrix_lu` on 2 workers, in place -> gathered (a program
 * outside the repository, 2026-12-06): 4096 x 32 in tiles of 32 0.56 to 0.60 ->
 * 0.35 ms (LAPACKE_dgetrf 0.23 to 0.29), 256 x 32 in tiles of 32 31 to 32
 * -> 23 to 27 us, 2048 x 64 in tiles of 64 0.46 -> 0.38 to 0.42 ms; 1024 x
 * 1024 in tiles of 32 or 64 level (31 and 13 to 14.5 ms both ways), and
 * 1024 x 128 in tiles of 128, whose calls are long enough, 0.58 in place
 * against 0.61 gathered, hence the height. dgetrf2, not dgetrf: it divides
 * by a subnormal pivot as the panels in place do, where OpenBLAS's dgetrf
 * scales by its reciprocal, which overflows (test_lu_subnormal_pivots),
 * and took as long. The choice depends on the shape alone, so a run under
 * a memory limit gives the bits of a run without one (the copy, at most
 * 1 MiB, is scratch, outside the pool's limit as every kernel's work
 * memory is: docs/pool.md); but where the memory for the copy cannot be
 * had, the panel is factored in place. Not a panel that shares its base
 * columns with idle workers in place (BASE_SHARE_ROWS rows or more). The
 * pivots and info are dgetrf's on the panel, as in place.
 *
 * Factors the panel of job j gathered, when it qualifies: returns
 * whether it did, and then its status in *rc (0, or TARN_EINVAL when
 * LAPACK refuses its arguments). */
static bool panel_gathered(tarn_task *t, const struct lu_job *j, int *rc) {
  size_t rows = j->rows, cols = (size_t)j->n;
  if (!panel_gathers(rows, cols, j->tb, j->ntiles)) return false;
  size_t bytes = rows * cols * sizeof(double);
  size_t room =
      (panel_pivot_count(rows, cols) * sizeof(lapack_int) + 63) / 64 * 64;
  bool heap;
  char *mem = tarn__task_memory(t, room + bytes, &heap);
  if (mem == NULL) return false;
  lapack_int *ipiv = (lapack_int *)(void *)mem;
  double *copy = (double *)(void *)(mem + room);
  tarn__tile_column_copy(t, 0, j->tb, rows, 0, cols, copy, false);
  lapack_int info =
      LAPACKE_dgetrf2_work(LAPACK_COL_MAJOR, (lapack_int)rows, (lapack_int)cols,
                           copy, (lapack_int)rows, ipiv);
  *rc = info < 0 ? TARN_EINVAL : 0;
  if (info >= 0) {
    tarn__tile_column_copy(t, 0, j->tb, rows, 0, cols, copy, true);
    panel_pivots(j, ipiv, (int)info);
  }
  if (heap) free(mem);
  return true;
}

/* Factors tile column k from its diagonal tile down in place (deps: tiles
 * (k..,k), slots 0..ntiles-1); pivots to piv[row0..row0+min(rows, n)). */
static int k_panel(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  int gathered_rc;
  if (panel_gathered(t, j, &gathered_rc)) return gathered_rc;
  size_t cols = (size_t)j->n;
  size_t room = (cols * sizeof(lapack_int) + 63) / 64 * 64;
  bool heap;
  struct panel_lu s = {.q = {.t = t, .j = j}, .rows = j->rows, .cols = cols};
  tile_units(&s, j);
  /* at[] and each unit's pivot candidate, for a panel of several units */
  size_t units = units_from(&s, 0);
  size_t swaps = units > 1 ? cols : 0, candidates = units > 1 ? units : 0;
  size_t at_bytes = swaps * sizeof(struct swap_rows);
  size_t max_bytes = candidates * sizeof(double);
  char *mem = tarn__task_memory(
      t, room + at_bytes + max_bytes + candidates * sizeof(size_t), &heap);
  if (mem == NULL) return TARN_ENOMEM;
  s.ipiv = (lapack_int *)(void *)mem;
  s.at = (struct swap_rows *)(void *)(mem + room);
  s.unit_max = (double *)(void *)(mem + room + at_bytes);
  s.unit_best = (size_t *)(void *)(mem + room + at_bytes + max_bytes);
  int rc = panel_getrf(&s);
  if (rc == 0) panel_pivots(j, s.ipiv, s.info);
  if (heap) free(mem);
  return rc;
}

/* Interchanges are applied to this many columns at a time: the columns'
 * segments stay in cache meanwhile. Not more: each row's elements in the
 * columns lie a tile's leading dimension apart (4 KiB for 512 rows), in
 * one set of the L1 cache, and 16 of them thrash its 12 ways (the swaps
 * took 9 % of LU's time with 16 columns, 5 % with 4). */
#define SWAP_COLS 4

/* Prefetches columns [c0, c1) of the tiles of a swap task's tile column
 * into the L2 cache: the interchanges touch most of their lines, and a
 * sequential sweep reads them faster than the random rows' misses do (the
 * swaps' share of LU's time fell from 5 % to 4.3 %). */
static void prefetch_columns(const struct panel *q, size_t c0, size_t c1) {
  const struct lu_job *j = q->j;
  for (size_t i = 0; i < j->ntiles; i++) {
    size_t r = panel_tile_rows(q, i);
    const char *tile = tarn_task_data(q->t, j->slot0 + i);
    for (const char *p = tile + c0 * r * sizeof(double),
                    *e = tile + c1 * r * sizeof(double);
         p < e; p += 64)
      __builtin_prefetch(p, 1, 2);
  }
}

/* Applies interchanges first..first+count of piv (in reverse order with
 * j->reverse) to columns [begin, end) of the rows row0.. of a tile column
 * (deps from slot0: its tiles from row0 down). The rows of each
 * interchange are found once (a division per row), then swapped SWAP_COLS
 * columns at a time. */
static int swap_range(void *arg, size_t begin, size_t end) {
  const struct panel *q = arg;
  const struct lu_job *j = q->j;
  size_t tb = j->tb, n = 0;
  if (j->count == 0) return 0;
  struct swap_rows *rows = malloc(j->count * sizeof *rows);
  if (rows == NULL) return TARN_ENOMEM;
  for (size_t at = 0; at < j->count; at++) {
    size_t s = j->reverse ? j->first + j->count - 1 - at : j->first + at;
    size_t a = s - j->row0, b = j->piv[s] - j->row0;
    if (a == b) continue;
    size_t ta = a / tb, tbb = b / tb;
    rows[n].lda = panel_tile_rows(q, ta);
    rows[n].ldb = panel_tile_rows(q, tbb);
    rows[n].a = (double *)tarn_task_data(q->t, j->slot0 + ta) + a % tb;
    rows[n].b = (double *)tarn_task_data(q->t, j->slot0 + tbb) + b % tb;
    n++;
  }
  for (size_t c0 = begin; c0 < end; c0 += SWAP_COLS) {
    size_t c1 = end - c0 < SWAP_COLS ? end : c0 + SWAP_COLS;
    prefetch_columns(q, c0, c1);
    for (size_t i = 0; i < n; i++) {
      const struct swap_rows *r = &rows[i];
      for (size_t c = c0; c < c1; c++) {
        double v = r->a[c * r->lda];
        r->a[c * r->lda] = r->b[c * r->ldb];
        r->b[c * r->ldb] = v;
      }
    }
  }
  free(rows);
  return 0;
}

/* The interchanges of k_swap's job on its tile column, shared by columns;
 * nothing once skipped. */
static int k_swap(tarn_task *t, void *arg) {
  const struct lu_job *j = arg;
  if (j->skip != NULL && atomic_load(j->skip) != 0) return 0;
  struct panel q = {.t = t, .j = j};
  return tarn_task_parallel_for(t, (size_t)j->n, COLUMN_GRAIN, swap_range, &q);
}

/* ---- LU ------------------------------------------------------------------ */

/* Priorities: the panel on top; for tile column j after panel k, its swap,
 * trsm and updates by the distance of j from the panel (the next column
 * first: it holds the next panel); swaps of the finished columns last. */
enum { PRIO_TOP = 1 << 24 };

static int column_priority(size_t k, size_t j, int stage) {
  size_t p = 1 + 3 * (j - k - 1) + (size_t)stage;
  return p >= PRIO_TOP ? 0 : PRIO_TOP - (int)p;
}

/* Swap task for tile column j of `m` (A, or a solve's Y: A's row tiling)
 * after panel k (deps: A(k,k) to order it after the panel, unpinned, and
 * tiles (k..mt-1, j) of m): the `count` interchanges from row k mb on
 * (panel k's, or all from there). */
static int submit_swap(tarn_matrix *a, tarn_matrix *m, size_t k, size_t j,
                       size_t count, const size_t *piv, tarn_dep *deps,
                       int priority) {
  size_t mt = a->mt, nt = mt - k;
  deps[0] = (tarn_dep){tarn__tile(a, k, k), TARN_AFTER};
  for (size_t i = k; i < mt; i++)
    deps[1 + i - k] = (tarn_dep){tarn__tile(m, i, j), TARN_READ_WRITE};
  struct lu_job s = {.n = (int)tarn__tile_cols(m, j),
                     .tb = a->mb,
                     .row0 = k * a->mb,
                     .rows = a->m - k * a->mb,
                     .first = k * a->mb,
                     .count = count,
                     .ntiles = nt,
                     .slot0 = 1,
                     .piv = piv};
  return submit_job(a->rt, k_swap, &s, deps, nt + 1, priority, "laswp");
}

/* Panel k's elimination in tile column j of `m` (A right of the panel,
 * or a solve's copy Y of B: A's row tiling), its rows already
 * interchanged: L_kk^-1 on tile row k, and the gemm below. `at` is the
 * column's place right of the panel for the priorities (Y's columns come
 * after all of A's). With `check`, the trsm checks U's diagonal in the
 * tile A(k,k) into it. */
static int submit_eliminate(tarn_matrix *a, tarn_matrix *m, size_t k, size_t j,
                            size_t at, atomic_int *check) {
  return tarn__submit_forward_step(a, TARN__LOWER_UNIT, m, k, j, check,
                                   column_priority(k, at, 1),
                                   column_priority(k, at, 2), 0);
}

/* The interchanges of panel k of A. */
static size_t panel_count(const tarn_matrix *a, size_t k) {
  return panel_pivot_count(a->m - k * a->mb, tarn__tile_cols(a, k));
}

/* Panel k's updates of tile column j in one task (k_column_update). */
struct column_update {
  struct lu_job swap; /* the interchanges: the column's tiles from slot p */
  size_t p;           /* tiles from tile row k down */
  int nk, ldk;        /* L_kk's triangle: nk x nk, leading dimension ldk */
  int kcols;          /* the gemm's inner size: tile column k's width */
};

/* Panel k's updates of tile column j of `m` in one task (deps: the
 * panel's tiles (k.., k), read, then the column's (k.., j)), with the
 * calls its separate tasks make (submit_swap, submit_eliminate), in the
 * same order on each tile, so the same bits: the interchanges, L_kk^-1 on
 * tile row k, and the gemm of each tile below. Where tiles are short, a
 * task per tile cost more than its gemm: N=1024 LU in tiles of 32 ran
 * some eleven thousand tasks (see coalesce_updates). */
static int k_column_update(tarn_task *t, void *arg) {
  const struct column_update *u = arg;
  struct panel q = {.t = t, .j = &u->swap};
  int rc = tarn_task_parallel_for(t, (size_t)u->swap.n, COLUMN_GRAIN,
                                  swap_range, &q);
  if (rc != 0) return rc;
  int nj = u->swap.n, h0 = (int)panel_tile_rows(&q, 0);
  double *ukj = tarn_task_data(t, u->p);
  rc = tarn__trsm_shared(t, CblasLeft, CblasLower, CblasNoTrans, CblasUnit,
                         u->nk, nj, 1.0, tarn_task_data(t, 0), u->ldk, ukj, h0);
  for (size_t x = 1; rc == 0 && x < u->p; x++) {
    int hx = (int)panel_tile_rows(&q, x);
    rc = tarn__gemm_shared(t, false, false, hx, nj, u->kcols, -1.0,
                           tarn_task_data(t, x), hx, ukj, h0, 1.0,
                           tarn_task_data(t, u->p + x), hx);
  }
  return rc;
}

/* Whether panel k's updates of tile column j of `m` go in one task
 * (k_column_update): short tiles (TARN__GATHER_TILE_ROWS rows or fewer),
 * two tile rows or more from k, at least twice as many tile columns to
 * update after panel k (`columns`) as workers, so that the column tasks
 * keep them busy (else each column's tiles are tasks the workers share:
 * 16384 x 128 in tiles of 64, one column to update, took 12.9 ms in one
 * task against 11.4 in tasks per tile), and the task's tiles (two tile
 * columns from row k) at most an eighth of a memory limit. The bits are
 * those of the separate tasks either way. Best of five LUs on 2 workers,
 * tasks per tile -> per column (a program outside the repository,
 * 2026-12-06): N=1024 in tiles of 32 30.2-31.8 -> 25.1-26.8 ms, N=2048 in
 * 32 226 -> 180-194, in 64 97-99 -> 91-93, 4096 x 512 in 32 41-43 ->
 * 33.5-33.9, N=512 in 32 4.4 -> 3.7-3.9. */
static bool coalesce_updates(const tarn_matrix *a, const tarn_matrix *m,
                             size_t k, size_t j, size_t columns) {
  if (a->mb > TARN__GATHER_TILE_ROWS || a->mt - k < 2 ||
      columns < 2 * (size_t)tarn_rt_workers(a->rt) ||
      !atomic_load_explicit(&gather_short_panels, memory_order_relaxed))
    return false;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt)), bytes = 0;
  for (size_t i = k; limit != 0 && i < a->mt; i++)
    bytes += tarn__tile_charge_at(a, i, k) + tarn__tile_charge_at(m, i, j);
  return limit == 0 || bytes <= limit / 8;
}

/* Panel k's updates of tile column j of `m`, one of `columns` tile
 * columns it updates: its interchanges, then its elimination
 * (submit_eliminate); in one task where coalesce_updates says. `deps`:
 * room for 2 (mt - k). */
static int submit_update(tarn_matrix *a, tarn_matrix *m, size_t k, size_t j,
                         size_t at, size_t columns, const size_t *piv,
                         tarn_dep *deps) {
  if (!coalesce_updates(a, m, k, j, columns)) {
    int rc = submit_swap(a, m, k, j, panel_count(a, k), piv, deps,
                         column_priority(k, at, 0));
    return rc != 0 ? rc : submit_eliminate(a, m, k, j, at, NULL);
  }
  size_t p = a->mt - k;
  for (size_t x = 0; x < p; x++) {
    deps[x] = (tarn_dep){tarn__tile(a, k + x, k), TARN_READ};
    deps[p + x] = (tarn_dep){tarn__tile(m, k + x, j), TARN_READ_WRITE};
  }
  int nk = (int)tarn__tile_cols(a, k), ldk = (int)tarn__tile_rows(a, k);
  struct column_update u = {.swap = {.n = (int)tarn__tile_cols(m, j),
                                     .tb = a->mb,
                                     .row0 = k * a->mb,
                                     .rows = a->m - k * a->mb,
                                     .first = k * a->mb,
                                     .count = panel_count(a, k),
                                     .ntiles = p,
                                     .slot0 = p,
                                     .piv = piv},
                            .p = p,
                            .nk = ldk < nk ? ldk : nk,
                            .ldk = ldk,
                            .kcols = nk};
  return tarn__submit_owned(a->rt, k_column_update, &u, sizeof u, deps, 2 * p,
                            column_priority(k, at, 0), "update");
}

/* LU's tasks, a panel for each of the first min(mt, nt) tile columns;
 * with y (a solve's copy of B), the forward solve L Y = P Y
 * carried along: each panel's updates of Y are submitted with those of A's
 * tile columns, so they fill the cores while the factorisation's last
 * panels leave them idle. */
static int submit_lu(tarn_matrix *a, size_t *piv, atomic_int *info,
                     tarn_dep *deps, tarn_matrix *y) {
  size_t mt = a->mt, panels = mt < a->nt ? mt : a->nt;
  for (size_t k = 0; k < panels; k++) {
    int nk = (int)tarn__tile_cols(a, k);
    for (size_t i = k; i < mt; i++)
      deps[i - k] = (tarn_dep){tarn__tile(a, i, k), TARN_READ_WRITE};
    struct lu_job p = {.n = nk,
                       .tb = a->mb,
                       .row0 = k * a->mb,
                       .rows = a->m - k * a->mb,
                       .ntiles = mt - k,
                       .piv_out = piv,
                       .info = info};
    int rc = submit_job(a->rt, k_panel, &p, deps, mt - k, PRIO_TOP, "getrf");
    size_t columns = a->nt - k - 1 + (y != NULL ? y->nt : 0);
    for (size_t j = k + 1; rc == 0 && j < a->nt; j++)
      rc = submit_update(a, a, k, j, j, columns, piv, deps);
    for (size_t jb = 0; rc == 0 && y != NULL && jb < y->nt; jb++)
      rc = submit_update(a, y, k, jb, a->nt + jb, columns, piv, deps);
    /* The left part, as dgetrf does: off the critical path. */
    for (size_t j = 0; rc == 0 && j < k; j++)
      rc = submit_swap(a, a, k, j, panel_count(a, k), piv, deps, 0);
    if (rc != 0) return rc;
  }
  return 0;
}

/* The forward solve L Y = P Y alone, with factors and pivots given (as
 * dgetrs): every interchange on each tile column of Y first (the factors'
 * L has had the later panels' interchanges applied to its rows), then each
 * panel's elimination, whose trsm tasks check U's diagonal into *check. */
static int submit_forward(tarn_matrix *a, tarn_matrix *y, const size_t *piv,
                          tarn_dep *deps, atomic_int *check) {
  for (size_t jb = 0; jb < y->nt; jb++) {
    int rc = submit_swap(a, y, 0, jb, a->m, piv, deps,
                         column_priority(0, 1 + jb, 0));
    if (rc != 0) return rc;
  }
  for (size_t k = 0; k < a->mt; k++)
    for (size_t jb = 0; jb < y->nt; jb++) {
      int rc = submit_eliminate(a, y, k, jb, k + 1 + jb, check);
      if (rc != 0) return rc;
    }
  return 0;
}

/* piv's first npiv interchanges, in order or in reverse order, on each
 * tile column of b: a task per tile column, which B's
 * tiles alone order (deps: b->mt entries of room), doing nothing once
 * *skip (when not NULL) is not 0. */
static int submit_row_swaps(tarn_matrix *b, const size_t *piv, size_t npiv,
                            bool reverse, atomic_int *skip, tarn_dep *deps) {
  int rc = 0;
  for (size_t jb = 0; rc == 0 && jb < b->nt; jb++) {
    for (size_t i = 0; i < b->mt; i++)
      deps[i] = (tarn_dep){tarn__tile(b, i, jb), TARN_READ_WRITE};
    struct lu_job s = {.n = (int)tarn__tile_cols(b, jb),
                       .tb = b->mb,
                       .rows = b->m,
                       .count = npiv,
                       .ntiles = b->mt,
                       .slot0 = 0,
                       .piv = piv,
                       .reverse = reverse,
                       .skip = skip};
    rc = submit_job(b->rt, k_swap, &s, deps, b->mt, 0, "laswp");
  }
  return rc;
}

/* A^T X = B with the factors (P A = L U, so A^T = U^T L^T P): the forward
 * solve U^T Z = Y on Y, whose trsm tasks check U's diagonal into *failed;
 * the backward solve L^T W = Z (unit L) from Y into a new W; P^T on W,
 * the interchanges in reverse order on each tile column (after its
 * backward tasks, which wrote all of it); then W into B, a copy per tile.
 * Every task from the backward pass on does nothing once *failed is not
 * 0, and B is written by the copies alone, each after all of its tile
 * column's work and reading B's tile first (a copy that does nothing
 * must leave it: a write-only pin of a spilled tile has other bytes): so
 * each tile of B holds X or what it held, whenever a submission fails or
 * U is singular. (Until 2026-12-05 the backward pass wrote W into B
 * and the interchanges followed there: a submission failing after it
 * began left W, not X, in B's tiles, the interchanges skipped.) */
static int submit_trans(tarn_matrix *a, tarn_matrix *y, tarn_matrix *b,
                        const size_t *piv, tarn_dep *deps, atomic_int *failed) {
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < a->mt; k++)
    for (size_t jb = 0; rc == 0 && jb < y->nt; jb++)
      rc = tarn__submit_forward_step(a, TARN__UPPER_TRANS, y, k, jb, failed,
                                     column_priority(k, k + 1 + jb, 1),
                                     column_priority(k, k + 1 + jb, 2), 0);
  tarn_matrix *w = NULL;
  if (rc == 0) rc = tarn__matrix_new(b->rt, b->m, b->n, b->mb, b->nb, &w);
  if (rc == 0) rc = tarn__submit_backward(a, true, true, y, w, failed, true);
  if (rc == 0) rc = submit_row_swaps(w, piv, w->m, true, failed, deps);
  for (size_t jb = 0; rc == 0 && jb < b->nt; jb++)
    for (size_t i = 0; rc == 0 && i < b->mt; i++)
      rc = tarn__submit_copy_unless(w, b, i, jb, NULL, failed, TARN_READ_WRITE);
  tarn_matrix_destroy(w); /* its tiles go when their last task ends */
  return rc;
}

/* ---- waiting for LU and solve -------------------------------------------- */

/* In a region of its own, waited for: the LU of A (pivots to factor_piv);
 * with B, the solve of A X = B as well. Or, with given_piv instead, the
 * solve alone with the factors in A. Y = B, the forward solve on Y
 * (carried along with the factorisation when there is one), the backward
 * solve from Y into B. B is written by the backward pass only, whose
 * tasks do nothing unless U's diagonal has no zero (found by the panels,
 * or by the forward pass's trsm tasks when the factors are given: every
 * backward task on a column of B waits for all of them on that column of
 * Y) and every task was submitted. */
static int lu_region(tarn_matrix *a, size_t *factor_piv,
                     const size_t *given_piv, bool trans, tarn_matrix *b,
                     int *info) {
  tarn__blas_init();
  tarn_dep *deps = malloc(2 * (a->mt + 1) * sizeof *deps);
  if (deps == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    free(deps);
    return rc;
  }
  atomic_int failed = 0;
  tarn_matrix *y = NULL;
  int submitted = b != NULL ? tarn_matrix_copy(b, &y) : 0;
  if (submitted == 0 && trans)
    submitted = submit_trans(a, y, b, given_piv, deps, &failed);
  else if (submitted == 0)
    submitted = factor_piv != NULL
                    ? submit_lu(a, factor_piv, &failed, deps, y)
                    : submit_forward(a, y, given_piv, deps, &failed);
  if (submitted == 0 && b != NULL && !trans)
    submitted = tarn__submit_backward(a, false, false, y, b, &failed, false);
  /* A backward task that has not run yet leaves B alone; the ones that did
   * (none, unless the backward pass began) cannot be undone. */
  if (submitted != 0) atomic_store(&failed, -1);
  tarn_matrix_destroy(y); /* its tiles go when their last task ends */
  /* (tasks already submitted point at the pivots too) */
  rc = tarn__region_outcome(region, submitted, &failed, info);
  free(deps);
  return rc;
}

/* Whether `a` can be factored by tarn_matrix_lu: square tiles (after
 * clamping to the matrix), or one tile row or column whose tile holds its
 * every row or column, so that each diagonal tile starts on the diagonal;
 * sizes LAPACK's int takes. */
static bool lu_shape_ok(const tarn_matrix *a) {
  return tarn__blas_sized(a) && a->m <= INT_MAX && a->n <= INT_MAX &&
         (a->mb == a->nb || (a->nt == 1 && a->n <= a->mb) ||
          (a->mt == 1 && a->m <= a->nb));
}

bool tarn__lu_fits(const tarn_matrix *a) {
  bool fits = tarn__line_fits(a, false);
  if (a->nt >= 2)
    fits = fits && tarn__task_fits(a->rt, tarn__tile_charge_at(a, 0, 0) +
                                              tarn__tile_charge_at(a, 0, 1));
  if (a->mt >= 2 && a->nt >= 2)
    fits = fits && tarn__task_fits(a->rt, tarn__tile_charge_at(a, 1, 1) +
                                              tarn__tile_charge_at(a, 1, 0) +
                                              tarn__tile_charge_at(a, 0, 1));
  return fits;
}

/* The work tile of an LU of `a` (tarn__work_tile), with B copied too when
 * not NULL: an update's task multiplies a tile by a tile of the panel's
 * row (mb x nb x nb). None for an LU of one tile column whose panel is
 * gathered: its one task factors a column-major copy already, and copies
 * into work tiles of 256 rows would be factored in place, by the base
 * columns' calls per tile (4096 x 32 in tiles of 32 on 2 workers, medians
 * of 101: 486 us through work tiles, 333 gathered; docs/linalg.md,
 * "Panels of short tiles"). */
static size_t lu_work_tile(tarn_matrix *a, tarn_matrix *b) {
  if (b == NULL && a->nt == 1 && panel_gathers(a->m, a->n, a->mb, a->mt))
    return 0;
  return tarn__work_tile(a->rt, a->m, a->n, a->n,
                         (double)a->mb * (double)a->nb * (double)a->nb,
                         (tarn_matrix *[]){a, b}, b != NULL ? 2 : 1, 'F');
}

int tarn_matrix_lu(tarn_matrix *a, size_t *piv, int *info) {
  if (info != NULL) *info = 0;
  if (piv == NULL || !lu_shape_ok(a)) return TARN_EINVAL;
  if (!tarn__lu_fits(a)) return TARN_ENOMEM;
  size_t work = lu_work_tile(a, NULL);
  if (work != 0) return tarn__lu_work(a, piv, work, info);
  return lu_region(a, piv, NULL, false, NULL, info);
}

int tarn_matrix_solve(tarn_matrix *a, tarn_matrix *b, int *info) {
  if (info != NULL) *info = 0;
  if (!tarn__solve_shapes_ok(a, b)) return TARN_EINVAL;
  if (!tarn__lu_fits(a) || !tarn__line_fits(b, false) ||
      !tarn__solve_fits(a, b))
    return TARN_ENOMEM;
  size_t work = lu_work_tile(a, b);
  if (work != 0) return tarn__solve_work(a, b, work, info);
  size_t *piv = malloc(a->m * sizeof *piv);
  if (piv == NULL) return TARN_ENOMEM;
  int rc = lu_region(a, piv, NULL, false, b, info);
  free(piv);
  return rc;
}

/* An LU solve's arguments but B, for its pieces. */
struct lu_solve {
  tarn_matrix *lu;
  const size_t *piv;
  tarn_trans ta;
};

static int lu_piece(void *ctx, tarn_matrix *piece, int *info) {
  const struct lu_solve *s = ctx;
  return tarn_matrix_lu_solve(s->lu, s->piv, s->ta, piece, info);
}

static int lu_work(void *ctx, tarn_matrix *luw, tarn_matrix *bw, int *info) {
  const struct lu_solve *s = ctx;
  return tarn_matrix_lu_solve(luw, s->piv, s->ta, bw, info);
}

int tarn_matrix_lu_solve(tarn_matrix *lu, const size_t *piv, tarn_trans ta,
                         tarn_matrix *b, int *info) {
  if (info != NULL) *info = 0;
  if (piv == NULL || !tarn__solve_shapes_ok(lu, b) ||
      (ta != TARN_NO_TRANS && ta != TARN_TRANS))
    return TARN_EINVAL;
  for (size_t i = 0; i < lu->m; i++)
    if (piv[i] < i || piv[i] >= lu->m) return TARN_EINVAL;
  if (tarn__column_solve(lu, b, TARN__SOLVE_LU, false))
    return tarn__column_solve_run(
        lu, b,
        (struct tarn__column_job){
            .kind = TARN__SOLVE_LU, .trans = ta == TARN_TRANS, .piv = piv},
        info);
  struct lu_solve ctx = {lu, piv, ta};
  size_t work = tarn__solve_work_tile(lu, 'F', b, 2);
  if (work != 0)
    return tarn__solve_in_work_tiles(lu, 'F', b, work, lu_work, &ctx, info);
  size_t cols = tarn__solve_piece_cols(lu, b);
  if (cols != 0) return tarn__solve_in_pieces(b, cols, lu_piece, &ctx, info);
  if (!tarn__line_fits(b, false) || !tarn__solve_fits(lu, b))
    return TARN_ENOMEM;
  return lu_region(lu, NULL, piv, ta == TARN_TRANS, b, info);
}

int tarn_matrix_permute_rows(tarn_matrix *b, const size_t *piv, size_t npiv,
                             tarn_trans trans) {
  if (piv == NULL || !tarn__blas_sized(b) || npiv > b->m ||
      (trans != TARN_NO_TRANS && trans != TARN_TRANS))
    return TARN_EINVAL;
  for (size_t i = 0; i < npiv; i++)
    if (piv[i] < i || piv[i] >= b->m) return TARN_EINVAL;
  if (!tarn__line_fits(b, false)) return TARN_ENOMEM;
  tarn_dep *deps = malloc(b->mt * sizeof *deps);
  if (deps == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(b->rt, &region);
  if (rc != 0) {
    free(deps);
    return rc;
  }
  int submitted =
      submit_row_swaps(b, piv, npiv, trans == TARN_TRANS, NULL, deps);
  rc = tarn_region_wait(region, NULL); /* always: tasks were submitted */
  free(deps);
  return submitted != 0 ? submitted : rc;
}
