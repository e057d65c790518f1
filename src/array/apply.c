/* apply.c: tarn_matrix_apply, a user kernel over the same tile of several
 * matrices (see tarn/matrix.h). One task per tile position accesses the
 * tile of every matrix; its columns are shared with idle workers
 * (tarn__share_columns), each range handed to the kernel as a tarn_block.
 * Invariant: a job's slot[i] is the task data slot of matrices[i]'s tile
 * (repeated matrices share a slot), and the blocks given to the kernel for
 * one task cover the tile's columns once. */
#include <stdlib.h>

#include "array/matrix_internal.h"
#include "tarn/matrix.h"

/* One tile position's task; owned by the task. */
struct apply_job {
  tarn_block_fn fn;
  void *arg;
  size_t count;
  size_t rows, cols; /* the tile's */
  size_t row, col;   /* its element (0, 0) in the matrix */
  size_t slot[TARN_MATRIX_APPLY_MAX];
};

/* A running task's tiles, shared by column ranges. */
struct apply_share {
  const struct apply_job *j;
  double *tile[TARN_MATRIX_APPLY_MAX];
};

/* Columns [q0, q1) of the tiles, as one block. */
static int apply_range(void *arg, size_t q0, size_t q1) {
  const struct apply_share *s = arg;
  const struct apply_job *j = s->j;
  double *data[TARN_MATRIX_APPLY_MAX];
  for (size_t i = 0; i < j->count; i++) data[i] = s->tile[i] + q0 * j->rows;
  tarn_block b = {.data = data,
                  .ld = j->rows,
                  .rows = j->rows,
                  .cols = q1 - q0,
                  .row = j->row,
                  .col = j->col + q0};
  return j->fn(&b, j->arg);
}

static int k_apply(tarn_task *t, void *arg) {
  const struct apply_job *j = arg;
  struct apply_share s = {.j = j};
  for (size_t i = 0; i < j->count; i++)
    s.tile[i] = tarn_task_data(t, j->slot[i]);
  return tarn__share_columns(t, j->rows, j->cols, apply_range, &s);
}

static bool mode_valid(tarn_access mode) {
  return mode == TARN_READ || mode == TARN_WRITE || mode == TARN_READ_WRITE;
}

int tarn_matrix_apply(tarn_matrix *const *matrices, const tarn_access *modes,
                      size_t count, tarn_block_fn fn, void *arg) {
  if (matrices == NULL || modes == NULL || fn == NULL || count == 0 ||
      count > TARN_MATRIX_APPLY_MAX)
    return TARN_EINVAL;
  const tarn_matrix *first = matrices[0];
  for (size_t i = 0; i < count; i++)
    if (!mode_valid(modes[i]) || !tarn__matrix_same_layout(matrices[i], first))
      return TARN_EINVAL;
  for (size_t tj = 0; tj < first->nt; tj++)
    for (size_t ti = 0; ti < first->mt; ti++) {
      tarn_dep deps[TARN_MATRIX_APPLY_MAX];
      for (size_t i = 0; i < count; i++)
        deps[i] = (tarn_dep){tarn__tile(matrices[i], ti, tj), modes[i]};
      /* the first tiles are the largest: checked before any task */
      if (ti == 0 && tj == 0 && !tarn__deps_fit(first->rt, deps, count))
        return TARN_ENOMEM;
      struct apply_job *j = malloc(sizeof *j);
      if (j == NULL) return TARN_ENOMEM;
      *j = (struct apply_job){.fn = fn,
                              .arg = arg,
                              .count = count,
                              .rows = tarn__tile_rows(first, ti),
                              .cols = tarn__tile_cols(first, tj),
                              .row = ti * first->mb,
                              .col = tj * first->nb};
      for (size_t i = 0; i < count; i++) j->slot[i] = tarn__dep_slot(deps, i);
      tarn_task_desc d = {.fn = k_apply,
                          .arg = j,
                          .deps = deps,
                          .ndeps = count,
                          .name = "apply",
                          .arg_free = free};
      int rc = tarn_task_submit(first->rt, &d);
      if (rc != 0) return rc;
    }
  return 0;
}
