/* gemv.c: the matrix-vector product y = alpha op(A) x + beta y on tiled
 * matrices (tarn_matrix_gemv, and tarn_matrix_gemm when op(B) has one
 * column).
 *
 * One task per tile of x, a layer of the sum over K. When y has two or
 * three tiles (at most GROUP_MAX) but fewer than the runtime has workers,
 * and the layer's tiles of op(A) are small (GROUP_BYTES_MAX), the layer's
 * task updates all of y: it pins about what a gemm task does. Otherwise
 * there is one task per tile of y and layer,
 * whose kernel is gemm's (tarn__gemm_shared: one dgemv, shared only for
 * tiles of 2048 x 2048 or more). Layers follow one another on
 * each tile of y (their tasks write it); the tasks of one layer run side
 * by side.
 *
 * A task of several tiles is split with idle workers in lanes: lane l of
 * L (L = the runtime's workers) takes the columns l, l + L, l + 2L, ... of
 * each tile, so that every core reads the same tile of A at the same time.
 * Read from cache that is faster than a tile per core: two threads
 * computing a 1024 x 1024 product in 512 tiles, outside tarn, took 128 to
 * 150 us in lanes, 154 to 177 with a tile row each, and OpenBLAS's own
 * two threads on the whole matrix 133 to 137 (transposed: 144 to 155, 161
 * to 164, 157). In tarn the waits between tasks and lanes eat that gain
 * (the benchmark at N=1024: 147 to 150 us against 143 to 152 with a task
 * per tile, docs/linalg.md); what lanes bring is every core on a short y,
 * where a task per tile of y had only two or three tasks to run at a time.
 * Where those tasks fill the workers, lanes lose: on a 2-core machine of
 * 2026-12-02, a 1024 x 1024 product in 512 tiles took 73 to 74 us with a
 * task per tile against 88 to 96 in lanes (medians of 400 alternated
 * products; transposed 79 against 102 to 106; 768 in 256 tiles, three
 * tiles of y, 55 against 81), since the layers of a task per tile overlap
 * and no helper is woken and waited for. So a y of as many tiles as there
 * are workers, or more, keeps a task per tile.
 * On one tile, lanes lost to halves of the rows (N=256: 4.9 to 6.2 us
 * against 4.6 to 4.8), which now lose to one call (docs/linalg.md), hence
 * gemm's kernel there. Lanes write partial sums
 * into the task's scratch (lane 0 of a product without transpose writes y
 * itself), which the task adds into y once every lane is done. With no
 * idle worker a task is one dgemv per tile, into y.
 *
 * Small tiles go by blocks instead ("blocks of small tiles" below): a
 * task per block of tiles of y and of K, blocks of K in groups side by
 * side when the blocks of y are few. Large tiles of a y of fewer tiles
 * than workers over a long K go in groups too ("groups of layers").
 *
 * Invariant: each element of a task's tiles of y (or of a group's
 * temporaries) is written once per layer (by the task's thread, or by
 * lane 0 and then the gather), only after the layer before it on that
 * tile (the runtime's order on y's tiles; in a block, the order of its
 * tiles of K), and with beta 0 never read first. */
#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "array/matrix_internal.h"
#include "linalg/linalg_internal.h"

/* Tiles of y (and of op(A) in a layer) per task at most: a gemm task pins
 * three tiles. */
#define GROUP_MAX 3

/* A layer's tiles of A make one task only up to this many bytes (four 512
 * x 512 tiles), and under a memory limit up to an eighth of it: larger
 * tiles keep a core busy each, and under a limit a task of one tile waits
 * less for room. */
#define GROUP_BYTES_MAX ((size_t)8 << 20)

/* Below this many multiply-adds a task is one dgemv per tile: helpers would
 * cost about what they save (the work of a 181 x 181 tile). */
#define LANES_MIN_MADDS ((double)(1 << 15))

/* Columns of every tile that each lane takes at least. */
#define LANE_MIN_COLUMNS 8

/* A task of the product; owned by the task. */
struct gemv_job {
  bool ta;            /* op(A) = A^T: the tiles are A(k, j) */
  int ntiles;         /* tiles of y in the group */
  int lanes;          /* the runtime's workers */
  int kn;             /* the layer's size along K (x's tile) */
  int out[GROUP_MAX]; /* each tile of y: its rows */
  size_t sy[GROUP_MAX], sa[GROUP_MAX], sx; /* task data slots */
  double alpha, beta; /* beta: the layer's (1 after the first) */
};

/* A task's operands while its lanes run. Lane l's partial sums of tile g
 * are at part + l * stride + off[g]: y's rows without transpose, the
 * lane's outputs packed (ceil(rows / L)) with it. */
struct gemv_lanes {
  const struct gemv_job *j;
  const double *a[GROUP_MAX], *x;
  double *y[GROUP_MAX];
  double *part;
  size_t stride, off[GROUP_MAX];
  atomic_bool split; /* some lane ran on its own: gather */
};

/* The rows and columns of the task's g-th tile of A as stored (A(k, j)
 * transposed: K rows, y's rows as columns). */
static int tile_rows(const struct gemv_job *j, int g) {
  return j->ta ? j->kn : j->out[g];
}

static int tile_cols(const struct gemv_job *j, int g) {
  return j->ta ? j->out[g] : j->kn;
}

/* Lane `l`'s columns of a tile of `cols` columns: l, l + L, ... */
static int lane_columns(int cols, int l, int lanes) {
  return (cols - l + lanes - 1) / lanes;
}

/* Lanes [begin, end) of the task; all of them at once: one dgemv per tile,
 * straight into y. */
static int gemv_lane_range(void *arg, size_t begin, size_t end) {
  struct gemv_lanes *s = arg;
  const struct gemv_job *j = s->j;
  int lanes = j->lanes;
  CBLAS_TRANSPOSE trans = j->ta ? CblasTrans : CblasNoTrans;
  if (begin == 0 && end == (size_t)lanes) {
    for (int g = 0; g < j->ntiles; g++) {
      int rows = tile_rows(j, g);
      cblas_dgemv(CblasColMajor, trans, rows, tile_cols(j, g), j->alpha,
                  s->a[g], rows, s->x, 1, j->beta, s->y[g], 1);
    }
    return 0;
  }
  atomic_store_explicit(&s->split, true, memory_order_relaxed);
  for (size_t l = begin; l < end; l++) {
    int lane = (int)l;
    for (int g = 0; g < j->ntiles; g++) {
      int rows = tile_rows(j, g);
      int cols = lane_columns(tile_cols(j, g), lane, lanes);
      /* Transposed, the lane's outputs into its partial sums; else its
       * columns' sum: lane 0's into y, the others' into theirs. */
      bool direct = !j->ta && lane == 0;
      cblas_dgemv(CblasColMajor, trans, rows, cols, j->alpha,
                  s->a[g] + l * (size_t)rows, rows * lanes,
                  j->ta ? s->x : s->x + lane, j->ta ? 1 : lanes,
                  direct ? j->beta : 0.0,
                  direct ? s->y[g] : s->part + l * s->stride + s->off[g], 1);
    }
  }
  return 0;
}

/* Adds the lanes' partial sums into y (after every lane is done). */
static void gemv_lanes_gather(const struct gemv_lanes *s) {
  const struct gemv_job *j = s->j;
  int lanes = j->lanes;
  for (int g = 0; g < j->ntiles; g++) {
    double *y = s->y[g];
    const double *part = s->part + s->off[g];
    int n = j->out[g];
    if (j->ta) { /* output c is lane c % L's (c / L)-th */
      for (int c = 0; c < n; c++) {
        double v = part[(size_t)(c % lanes) * s->stride + (size_t)(c / lanes)];
        y[c] = j->beta == 0 ? v : v + j->beta * y[c];
      }
    } else {
      for (int l = 1; l < lanes; l++) {
        const double *p = part + (size_t)l * s->stride;
        for (int i = 0; i < n; i++) y[i] += p[i];
      }
    }
  }
}

/* Whether the task is worth lanes: more than one worker, enough work, and
 * LANE_MIN_COLUMNS columns of every tile for each lane (so the partial
 * sums take at most 1 / LANE_MIN_COLUMNS of the task's tiles of A). */
static bool lanes_worthwhile(const struct gemv_job *j) {
  double madds = 0;
  int lanes = j->lanes;
  if (lanes < 2 || INT_MAX / lanes < LANE_MIN_COLUMNS) return false;
  for (int g = 0; g < j->ntiles; g++) {
    int rows = tile_rows(j, g), cols = tile_cols(j, g);
    if (cols < LANE_MIN_COLUMNS * lanes || rows > INT_MAX / lanes) return false;
    madds += (double)rows * cols;
  }
  return madds >= LANES_MIN_MADDS;
}

static int k_gemv(tarn_task *t, void *arg) {
  const struct gemv_job *j = arg;
  size_t lanes = (size_t)j->lanes;
  if (j->ntiles == 1) { /* one tile of y: gemm's kernel, shared by rows */
    return tarn__gemm_shared(t, j->ta, false, j->out[0], 1, j->kn, j->alpha,
                             tarn_task_data(t, j->sa[0]), tile_rows(j, 0),
                             tarn_task_data(t, j->sx), j->kn, j->beta,
                             tarn_task_data(t, j->sy[0]), j->out[0]);
  }
  struct gemv_lanes s = {.j = j, .x = tarn_task_data(t, j->sx)};
  atomic_init(&s.split, false);
  for (int g = 0; g < j->ntiles; g++) {
    s.a[g] = tarn_task_data(t, j->sa[g]);
    s.y[g] = tarn_task_data(t, j->sy[g]);
    s.off[g] = s.stride;
    s.stride +=
        j->ta ? ((size_t)j->out[g] + lanes - 1) / lanes : (size_t)j->out[g];
  }
  bool heap = false;
  if (lanes_worthwhile(j))
    s.part = tarn__task_memory(t, lanes * s.stride * sizeof(double), &heap);
  if (s.part == NULL) /* one lane, or no memory for theirs */
    return gemv_lane_range(&s, 0, lanes);
  int rc = tarn_task_parallel_for(t, lanes, 1, gemv_lane_range, &s);
  if (rc == 0 && atomic_load(&s.split)) gemv_lanes_gather(&s);
  if (heap) free(s.part);
  return rc;
}

/* ---- blocks of small tiles ------------------------------------------------
 *
 * Where a tile's dgemv is small (under BLOCK_MADDS multiply-adds: one of
 * 128 x 128 takes about 3 us, what a task itself costs), a task takes a
 * block of tiles of y and of K at once, up to BLOCK_TILES tiles of A and
 * about BLOCK_TARGET multiply-adds: each of its tiles of y summed over its
 * K tiles in order. Blocks of K follow one another on a block of y; when
 * the blocks of y are fewer than twice the workers and K has 4 blocks or
 * more, their chains go in groups side by side (tarn__layer_groups): each
 * group but the first into temporaries of its own, which one task per
 * tile of y then adds into it. A^T x of a tall A (or A x of a wide one)
 * was a chain of one task per tile of K on one tile of y, and A x of a
 * tall A one task per tile of y. */

#define BLOCK_MADDS ((double)(1 << 16))
#define BLOCK_TARGET ((double)(1 << 19))
#define BLOCK_TILES 32

/* A block's task; owned by the task. */
struct block_job {
  bool ta;                /* op(A) = A^T: the tiles are A(k, j) */
  int ny, nk;             /* tiles of y and of K */
  int out[BLOCK_TILES];   /* each tile of y: its rows */
  int kn[BLOCK_TILES];    /* each tile of K: its size */
  size_t sy[BLOCK_TILES]; /* slots: y's tiles (or temporaries) */
  size_t sx[BLOCK_TILES]; /* x's tiles */
  size_t sa[BLOCK_TILES]; /* A's tiles, sa[g * nk + k] */
  double alpha, beta;     /* beta: at the block's first tile of K */
};

static int k_gemv_block(tarn_task *t, void *arg) {
  const struct block_job *j = arg;
  CBLAS_TRANSPOSE trans = j->ta ? CblasTrans : CblasNoTrans;
  for (int g = 0; g < j->ny; g++) {
    double *y = tarn_task_data(t, j->sy[g]);
    for (int k = 0; k < j->nk; k++) {
      int rows = j->ta ? j->kn[k] : j->out[g];
      int cols = j->ta ? j->out[g] : j->kn[k];
      cblas_dgemv(CblasColMajor, trans, rows, cols, j->alpha,
                  tarn_task_data(t, j->sa[(size_t)g * (size_t)j->nk + k]), rows,
                  tarn_task_data(t, j->sx[k]), 1, k == 0 ? j->beta : 1.0, y, 1);
    }
  }
  return 0;
}

/* The product's operands, shared by its two ways in groups: by blocks of
 * small tiles (ny tiles of y and nk of K per task, groups of K's blocks
 * per block of y) and by large tiles ("groups of layers" below); ti: the
 * tile of y whose chain tarn__submit_grouped is submitting. */
struct product {
  tarn_matrix *a, *x, *y;
  bool ta, tx;
  double alpha, beta;
  unsigned workers;
  size_t kt, ny, nk, groups, ti;
};

/* A's tile for y's tile ti and K's tile k, and x's tile k. */
static tarn_ref *a_tile(const struct product *b, size_t ti, size_t k) {
  return b->ta ? tarn__tile(b->a, k, ti) : tarn__tile(b->a, ti, k);
}

static tarn_ref *x_tile(const struct product *b, size_t k) {
  return b->tx ? tarn__tile(b->x, 0, k) : tarn__tile(b->x, k, 0);
}

/* The task of y's tiles [t0, t0 + ny) (into out[], y's or temporaries)
 * and K's tiles [k0, k1); `first`: the chain's first (beta, or 0 into a
 * temporary: `fresh`). */
static int submit_block(const struct product *b, size_t t0, size_t ny,
                        tarn_ref *const *out, size_t k0, size_t k1, bool first,
                        bool fresh) {
  size_t nk = k1 - k0, n = ny + nk + ny * nk;
  tarn_dep deps[2 * BLOCK_TILES + BLOCK_TILES] = {{0}};
  size_t slots[2 * BLOCK_TILES + BLOCK_TILES];
  double beta = !first ? 1.0 : fresh ? 0.0 : b->beta;
  struct block_job j = {.ta = b->ta,
                        .ny = (int)ny,
                        .nk = (int)nk,
                        .alpha = b->alpha,
                        .beta = beta};
  for (size_t g = 0; g < ny; g++) {
    deps[g] =
        (tarn_dep){out[g], first && beta == 0 ? TARN_WRITE : TARN_READ_WRITE};
    j.out[g] = (int)tarn__tile_rows(b->y, t0 + g);
  }
  for (size_t k = 0; k < nk; k++) {
    deps[ny + k] = (tarn_dep){x_tile(b, k0 + k), TARN_READ};
    j.kn[k] = (int)(b->ta ? tarn__tile_rows(b->a, k0 + k)
                          : tarn__tile_cols(b->a, k0 + k));
    for (size_t g = 0; g < ny; g++)
      deps[ny + nk + g * nk + k] =
          (tarn_dep){a_tile(b, t0 + g, k0 + k), TARN_READ};
  }
  tarn__dep_slots(deps, n, slots);
  for (size_t g = 0; g < ny; g++) j.sy[g] = slots[g];
  for (size_t k = 0; k < nk; k++) j.sx[k] = slots[ny + k];
  for (size_t i = 0; i < ny * nk; i++) j.sa[i] = slots[ny + nk + i];
  return tarn__submit_owned(b->a->rt, k_gemv_block, &j, sizeof j, deps, n, 0,
                            "gemv");
}

/* Tile b->ti of y whose chain of K's blocks goes in groups
 * (tarn__submit_grouped: its layers are the blocks of K). */
static int y_group_layer(void *ctx, size_t kb, size_t kb0, size_t kb1,
                         tarn_ref *sum) {
  const struct product *b = ctx;
  (void)kb1;
  tarn_ref *out = sum != NULL ? sum : tarn__tile(b->y, b->ti, 0);
  size_t k0 = kb * b->nk, k1 = k0 + b->nk < b->kt ? k0 + b->nk : b->kt;
  return submit_block(b, b->ti, 1, &out, k0, k1, kb == kb0, sum != NULL);
}

/* The sum of tile p->ti's groups, blocks or layers alike. */
static int y_group_sum(void *ctx, tarn_dep *deps, size_t temps) {
  const struct product *p = ctx;
  return tarn__submit_tile_sum(p->a->rt, deps, temps,
                               tarn__tile_rows(p->y, p->ti), 1);
}

/* y's tiles [t0, t0 + ny): their chain of K's blocks; in b->groups groups
 * side by side, then their sum, when there are groups (ny is then 1,
 * blocks_plan). */
static int submit_y_block(const struct product *b, size_t t0, size_t ny) {
  size_t kblocks = (b->kt + b->nk - 1) / b->nk;
  if (b->groups > 1) {
    struct product yg = *b;
    yg.ti = t0;
    return tarn__submit_grouped(b->a->rt, tarn__tile(b->y, t0, 0),
                                tarn__tile_rows(b->y, t0) * sizeof(double),
                                kblocks, b->groups, y_group_layer, y_group_sum,
                                &yg);
  }
  tarn_ref *out[BLOCK_TILES];
  for (size_t g = 0; g < ny; g++) out[g] = tarn__tile(b->y, t0 + g, 0);
  int rc = 0;
  for (size_t kb = 0; rc == 0 && kb < kblocks; kb++) {
    size_t k0 = kb * b->nk, k1 = k0 + b->nk < b->kt ? k0 + b->nk : b->kt;
    rc = submit_block(b, t0, ny, out, k0, k1, kb == 0, false);
  }
  return rc;
}

/* Whether the product goes by blocks of small tiles, and their shape into
 * *b: tiles of A under BLOCK_MADDS, more than one tile of y or K, and
 * (under a memory limit) a block's tiles, and all the groups' of a block
 * of y at once, in an eighth of it. */
static bool blocks_plan(struct product *b, unsigned workers, size_t limit) {
  size_t mt = b->y->mt, kt = b->kt;
  double tile = (double)b->y->mb *
                (double)(b->ta ? b->a->mb : b->a->nb); /* the largest */
  if (tile >= BLOCK_MADDS || (mt == 1 && kt == 1)) return false;
  size_t per = (size_t)(BLOCK_TARGET / tile);
  if (per > BLOCK_TILES) per = BLOCK_TILES;
  if (per < 1) per = 1;
  b->nk = kt < per ? kt : per;
  size_t ny = per / b->nk, spread = mt / (2 * (size_t)(workers ? workers : 1));
  /* enough blocks of y for the workers, when y has that many tiles */
  if (ny > spread) ny = spread < 1 ? 1 : spread;
  b->ny = ny < mt ? ny : mt;
  /* groups only for blocks of one tile of y: blocks of more are at least
   * twice the workers already (the spread above) */
  size_t kblocks = (kt + b->nk - 1) / b->nk;
  b->groups = b->ny == 1 ? tarn__layer_groups(mt, kblocks, workers) : 1;
  if (limit == 0) return true;
  size_t pinned = b->ny * b->nk * tarn__tile_charge(b->a) +
                  b->nk * tarn__tile_charge(b->x) +
                  b->ny * b->groups * tarn__tile_charge(b->y);
  return pinned <= limit / 8;
}

/* ---- groups of layers ------------------------------------------------------
 *
 * A y of fewer tiles than workers over a K of 4 tiles or more, in tiles
 * too large for blocks: each tile's chain of layers is cut
 * into groups side by side (tarn__submit_grouped, as gemm's), the first
 * group into y with the caller's beta, each other into a temporary with
 * beta 0, then one task adds the temporaries into y. A^T x of a tall A in
 * tall tiles is such a chain: one dgemv of a tile per layer, on one core
 * until then. */

/* Layer k of y's tiles [t0, t0 + n) into out[0 .. n): the first layer of
 * each output (`first`) scales it by beta, or writes a temporary (`temp`)
 * with beta 0; the others add to it. */
static int submit_layer(const struct product *l, size_t t0, size_t n, size_t k,
                        tarn_ref *const *out, bool first, bool temp) {
  tarn_matrix *a = l->a, *y = l->y;
  double beta = !first ? 1.0 : temp ? 0.0 : l->beta;
  tarn_dep deps[2 * GROUP_MAX + 1];
  struct gemv_job j = {
      .ta = l->ta,
      .ntiles = (int)n,
      .lanes = l->workers > 0 && l->workers <= INT_MAX ? (int)l->workers : 1,
      .kn = (int)(l->ta ? tarn__tile_rows(a, k) : tarn__tile_cols(a, k)),
      .alpha = l->alpha,
      .beta = beta};
  for (size_t g = 0; g < n; g++) {
    size_t ti = t0 + g;
    deps[g] = (tarn_dep){out[g], beta == 0 ? TARN_WRITE : TARN_READ_WRITE};
    deps[n + g] = (tarn_dep){a_tile(l, ti, k), TARN_READ};
    j.out[g] = (int)tarn__tile_rows(y, ti);
  }
  deps[2 * n] = (tarn_dep){x_tile(l, k), TARN_READ};
  for (size_t g = 0; g < n; g++) {
    j.sy[g] = tarn__dep_slot(deps, g);
    j.sa[g] = tarn__dep_slot(deps, n + g);
  }
  j.sx = tarn__dep_slot(deps, 2 * n);
  return tarn__submit_owned(a->rt, k_gemv, &j, sizeof j, deps, 2 * n + 1, 0,
                            "gemv");
}

static int tile_group_layer(void *ctx, size_t k, size_t k0, size_t k1,
                            tarn_ref *sum) {
  const struct product *l = ctx;
  (void)k1;
  tarn_ref *out = sum != NULL ? sum : tarn__tile(l->y, l->ti, 0);
  return submit_layer(l, l->ti, 1, k, &out, k == k0, sum != NULL);
}

int tarn__gemv_submit(tarn_matrix *a, bool ta, tarn_matrix *x, bool tx,
                      double alpha, double beta, tarn_matrix *y) {
  size_t kt = ta ? a->mt : a->nt, mt = y->mt;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  unsigned workers = tarn_rt_workers(a->rt);
  struct product p = {.a = a,
                      .x = x,
                      .y = y,
                      .ta = ta,
                      .tx = tx,
                      .alpha = alpha,
                      .beta = beta,
                      .workers = workers,
                      .kt = kt};
  if (blocks_plan(&p, workers, limit)) {
    int rc = 0;
    for (size_t t0 = 0; rc == 0 && t0 < mt; t0 += p.ny)
      rc = submit_y_block(&p, t0, mt - t0 < p.ny ? mt - t0 : p.ny);
    return rc;
  }
  /* The first layer's tiles of A are the largest. */
  size_t layer = y->m * (ta ? tarn__tile_rows(a, 0) : tarn__tile_cols(a, 0)) *
                 sizeof(double);
  /* Under a limit, what a task of all of y pins as the pool charges it
   * (whole pages a tile): a layer of A, y and a tile of x. Counted in
   * bytes, a 4 x 27 product in 2 x 2 tiles took one task of five pages
   * under a limit of under five, which could never run. */
  size_t pinned =
      mt * (tarn__tile_charge(a) + tarn__tile_charge(y)) + tarn__tile_charge(x);
  bool grouped = mt >= 2 && mt <= GROUP_MAX && mt < workers &&
                 layer <= GROUP_BYTES_MAX &&
                 (limit == 0 || pinned <= limit / 8);
  size_t per = grouped ? mt : 1; /* tiles of y per task */
  /* Fewer tiles of y than workers over a long K: each tile's chain in
   * groups side by side ("groups of layers" above; as many chains as
   * workers already fill them: 16384 x 1024 in 512 tiles, A^T x, took
   * 3.5 to 3.8 ms in groups against 3.0 to 3.2); under a limit only when
   * a group's task and every temporary take an eighth of it. */
  size_t groups =
      grouped || mt >= workers ? 1 : tarn__layer_groups(mt, kt, workers);
  if (groups > 1 && limit != 0 &&
      groups * (tarn__tile_charge(a) + tarn__tile_charge(x)) +
              mt * groups * tarn__tile_charge(y) >
          limit / 8)
    groups = 1;
  int rc = 0;
  if (groups > 1) {
    for (size_t ti = 0; rc == 0 && ti < mt; ti++) {
      p.ti = ti;
      rc = tarn__submit_grouped(a->rt, tarn__tile(y, ti, 0),
                                tarn__tile_rows(y, ti) * sizeof(double), kt,
                                groups, tile_group_layer, y_group_sum, &p);
    }
    return rc;
  }
  tarn_ref *out[GROUP_MAX];
  for (size_t k = 0; rc == 0 && k < kt; k++)
    for (size_t t0 = 0; rc == 0 && t0 < mt; t0 += per) {
      size_t n = mt - t0 < per ? mt - t0 : per;
      for (size_t g = 0; g < n; g++) out[g] = tarn__tile(y, t0 + g, 0);
      rc = submit_layer(&p, t0, n, k, out, k == 0, false);
    }
  return rc;
}
