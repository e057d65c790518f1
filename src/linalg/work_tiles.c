/* work_tiles.c: the products and factorisations of matrices in small
 * tiles, run on a copy in larger tiles (tarn_rt_options.work_tile; see
 * tarn/linalg.h, "Small tiles").
 *
 * A task of tiles of 64 x 64 or less multiplies too little for BLAS to
 * reach its rate and costs about as much to run as its arithmetic: on 2
 * workers a product of order 1024 in tiles of 32 took 75 ms and in tiles
 * of 16 403 ms, against 24 in tiles of 256 (LU 27 and 69 to 97 ms against
 * 11 to 13, Cholesky 14 and 54 to 64 against 5); in tiles of 64 the
 * product took 28 to 30 ms, and at order 2048 251 to 259 against 184 to
 * 187 on copies. Copying the operands into tiles of 256 costs about a
 * millisecond a matrix at order 1024. So tarn_matrix_gemm,
 * tarn_matrix_syrk_ata, tarn_matrix_cholesky, tarn_matrix_lu and
 * tarn_matrix_solve copy their operands into work tiles
 * (tarn_matrix_retile), call themselves on the copies (whose tasks are
 * large: the call does not come back here), and copy the result into the
 * caller's tiles.
 *
 * A Cholesky and the solves with a triangle copy only the tiles holding
 * some of that triangle, and a Cholesky copies back only its lower
 * triangle (tarn__matrix_retile_part), so they read and write the
 * caller's tiles as the call on those tiles does.
 *
 * Invariant: the caller's matrices are written only by the copy back,
 * which starts only once the call on the copies returned what the call
 * promises to leave in them (its result, or LU's factors of a singular
 * matrix); a call that fails before leaves them as they were. The copies
 * are freed as their last task ends. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include "linalg/linalg_internal.h"
#include "prim/prim.h"
#include "rt/rt_internal.h"
#include "tarn/linalg.h"
#include "tarn/pool.h"

/* A task of at most this many multiply-adds is small (a product of tiles
 * of 64 x 64 or less). */
#define SMALL_TASK_MADDS ((double)64 * 64 * 64)

static size_t clamp(size_t w, size_t n) { return w < n ? w : n; }

/* What the pool charges (whole pages a tile) for `a` in work tiles of w x
 * w, all of them (part 'F') or those holding some of a triangle ('L',
 * 'U': the diagonal's and those on one side; of a tall `a`, the upper
 * one's lie in its top tile rows, the lower one's reach its last), and
 * in *task the largest copy's task: a work tile with the caller's tiles
 * it overlaps (one more each way where they do not line up), or a
 * caller's tile with the work tiles it overlaps, whichever is more. */
static double work_charge(const tarn_matrix *a, size_t w, char part,
                          double *task) {
  size_t wm = clamp(w, a->m), wn = clamp(w, a->n);
  double tile = (double)tarn__page_round(wm * wn * sizeof(double));
  double rows = (double)((a->m + wm - 1) / wm),
         cols = (double)((a->n + wn - 1) / wn);
  double tiles = rows * cols;
  if (part != 'F') { /* tile column j holds min(j + 1, rows) above, rows -
                        min(j, rows) below */
    tiles = 0;
    for (double j = 0; j < cols; j++)
      tiles += part == 'U' ? fmin(j + 1, rows) : rows - fmin(j, rows);
  }
  double over = (double)((wm + a->mb - 1) / a->mb + 1) *
                (double)((wn + a->nb - 1) / a->nb + 1);
  double out = tile + over * (double)tarn__tile_charge(a);
  double back = (double)tarn__tile_charge(a) + 4 * tile;
  *task = out > back ? out : back;
  return tiles * tile;
}

/* The memory the process may use (tarn__memory_usable), read once: 0
 * when it cannot be read. */
static size_t usable_memory(void) {
  static _Atomic size_t usable = SIZE_MAX; /* not read yet */
  size_t u = atomic_load_explicit(&usable, memory_order_relaxed);
  if (u == SIZE_MAX) {
    u = tarn__memory_usable();
    atomic_store_explicit(&usable, u, memory_order_relaxed);
  }
  return u;
}

size_t tarn__work_tile(tarn_rt *rt, size_t m, size_t n, size_t k,
                       double task_madds, tarn_matrix *const *ops, size_t nops,
                       char part0) {
  size_t w = tarn__rt_work_tile(rt);
  if (w == 0 || task_madds > SMALL_TASK_MADDS) return 0;
  /* the work tiles' task must be larger: never for a matrix of one tile
   * (a copy could not change its tasks), and never a second time */
  if ((double)clamp(w, m) * (double)clamp(w, n) * (double)clamp(w, k) <=
      task_madds)
    return 0;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(rt));
  double copies = 0, largest = 0;
  for (size_t i = 0; i < nops; i++) {
    bool again = false;
    for (size_t j = 0; j < i; j++) again = again || ops[j] == ops[i];
    /* a matrix in a file is read tile by tile as its tasks need it (a
     * Cholesky only its lower triangle): not copied whole */
    if (ops[i]->in_file) return 0;
    double task = 0;
    if (!again) copies += work_charge(ops[i], w, i == 0 ? part0 : 'F', &task);
    if (task > largest) largest = task;
  }
  /* without a limit, at most an eighth of the memory the process may use
   * (the machine's, or its control groups'): a matrix of gigabytes in
   * small tiles is not doubled */
  double room = limit != 0 ? (double)limit : (double)usable_memory();
  return room == 0 || (copies <= room / 8 && largest <= room / 8) ? w : 0;
}

size_t tarn__factor_work_tile(tarn_matrix *a, char part) {
  /* the work is on the n x n factor (a tall a's leading block): so the
   * copy, whose tiles are clamped to n, is never copied again */
  return tarn__work_tile(a->rt, a->n, a->n, a->n,
                         (double)a->nb * (double)a->nb * (double)a->nb, &a, 1,
                         part);
}

char tarn__triangle_copy_part(const tarn_matrix *t, bool lower) {
  if (t->m == t->n) return lower ? 'L' : 'U';
  return lower ? 0 : 'U';
}

/* Destroys the copies that were made (NULL for the others). */
static void copies_destroy(tarn_matrix *x, tarn_matrix *y, tarn_matrix *z) {
  tarn_matrix_destroy(x);
  tarn_matrix_destroy(y);
  tarn_matrix_destroy(z);
}

int tarn__gemm_work(tarn_matrix *a, tarn_trans ta, tarn_matrix *b,
                    tarn_trans tb, double alpha, double beta, tarn_matrix *c,
                    size_t w) {
  tarn_matrix *aw = NULL, *bw = NULL, *cw = NULL;
  int rc = tarn_matrix_retile(a, w, w, &aw);
  if (rc == 0 && b != a) rc = tarn_matrix_retile(b, w, w, &bw);
  /* C is read only for a beta other than 0 (BLAS's rule: its NaNs do not
   * reach the result otherwise) */
  if (rc == 0 && beta != 0.0) rc = tarn_matrix_retile(c, w, w, &cw);
  if (rc == 0)
    rc = tarn_matrix_gemm(aw, ta, b != a ? bw : aw, tb, alpha, beta, &cw);
  if (rc == 0) rc = tarn_matrix_retile(cw, c->mb, c->nb, &c);
  copies_destroy(aw, bw, cw);
  return rc;
}

int tarn__ata_work(tarn_matrix *a, size_t w, tarn_matrix **c) {
  tarn_matrix *aw = NULL, *cw = NULL;
  int rc = tarn_matrix_retile(a, w, w, &aw);
  if (rc == 0) rc = tarn_matrix_syrk_ata(aw, &cw);
  if (rc == 0) rc = tarn_matrix_retile(cw, a->nb, a->nb, c);
  copies_destroy(aw, cw, NULL);
  return rc;
}

int tarn__cholesky_work(tarn_matrix *a, size_t w, int *info) {
  tarn_matrix *aw = NULL;
  /* the lower triangle, read and written as on A's own tiles */
  int rc = tarn__retile_part_waiting(a, 'L', w, w, &aw);
  if (rc == 0) rc = tarn_matrix_cholesky(aw, info);
  if (rc == 0) rc = tarn__retile_part_waiting(aw, 'L', a->mb, a->nb, &a);
  copies_destroy(aw, NULL, NULL);
  return rc;
}

/* LU's call on the copy: the factors are the result also when A is
 * singular (*info > 0, TARN_EINVAL), as tarn_matrix_lu promises. */
static bool factors_made(int rc, int info) {
  return rc == 0 || (rc == TARN_EINVAL && info > 0);
}

int tarn__lu_work(tarn_matrix *a, size_t *piv, size_t w, int *info) {
  tarn_matrix *aw = NULL;
  int found = 0;
  int rc = tarn__retile_waiting(a, w, w, &aw);
  if (rc == 0) rc = tarn_matrix_lu(aw, piv, &found);
  if (factors_made(rc, found)) {
    int back = tarn__retile_waiting(aw, a->mb, a->nb, &a);
    if (back != 0) rc = back;
  }
  if (info != NULL) *info = found;
  copies_destroy(aw, NULL, NULL);
  return rc;
}

int tarn__solve_work(tarn_matrix *a, tarn_matrix *b, size_t w, int *info) {
  tarn_matrix *aw = NULL, *bw = NULL;
  int found = 0;
  int rc = tarn__retile_waiting(a, w, w, &aw);
  if (rc == 0) rc = tarn__retile_waiting(b, w, w, &bw);
  if (rc == 0) rc = tarn_matrix_solve(aw, bw, &found);
  /* A holds its factors also when singular; B then stays as it was */
  if (factors_made(rc, found)) {
    int back = tarn__retile_waiting(aw, a->mb, a->nb, &a);
    if (back == 0 && rc == 0) back = tarn__retile_waiting(bw, b->mb, b->nb, &b);
    if (back != 0) rc = back;
  }
  if (info != NULL) *info = found;
  copies_destroy(aw, bw, NULL);
  return rc;
}

size_t tarn__solve_work_tile(tarn_matrix *t, char part, tarn_matrix *b,
                             int passes) {
  bool small = t->mb * t->nb < 32 * 32 && b->n >= TARN__SOLVE_WORK_COLS_MIN;
  bool wide = t->mb * t->nb < 64 * 64 && passes >= 2 &&
              b->n >= TARN__SOLVE_WORK_COLS_WIDE;
  if ((!small && !wide) ||
      (t->m != t->n && part != tarn__triangle_copy_part(t, part == 'L')))
    return 0;
  return tarn__work_tile(t->rt, t->n, b->n, t->n,
                         (double)t->mb * (double)t->nb * (double)b->nb,
                         (tarn_matrix *[]){t, b}, 2, part);
}

int tarn__solve_in_work_tiles(tarn_matrix *t, char part, tarn_matrix *b,
                              size_t w,
                              int (*solve)(void *ctx, tarn_matrix *tw,
                                           tarn_matrix *bw, int *info),
                              void *ctx, int *info) {
  tarn_matrix *tw = NULL, *bw = NULL;
  int rc = tarn__retile_part_waiting(t, part, w, w, &tw);
  if (rc == 0) rc = tarn__retile_waiting(b, w, w, &bw);
  if (rc == 0) rc = solve(ctx, tw, bw, info);
  if (rc == 0) rc = tarn__retile_waiting(bw, b->mb, b->nb, &b);
  copies_destroy(tw, bw, NULL);
  return rc;
}
