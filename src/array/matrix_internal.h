/* matrix_internal.h: the layout of a tiled matrix, for the modules of the
 * array layer (matrix.c, stencil.c, later linalg). Tile (ti, tj) is
 * tiles[ti + tj * mt], a ref of rows(ti) x cols(tj) doubles stored
 * column-major with leading dimension rows(ti). Also how a tile task
 * shares its columns with idle workers. */
#ifndef TARN_ARRAY_MATRIX_INTERNAL_H
#define TARN_ARRAY_MATRIX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prim/prim.h"
#include "tarn/matrix.h"

/* Hot loops are compiled twice, for AVX2 and for the baseline, and the
 * right one is picked when the library loads (GCC's target_clones, an
 * ifunc). Results are the same: only the vector width changes. Keep such
 * functions static: GCC 12 exports a non-static one from libtarn.so
 * whatever -fvisibility says (test_install checks the exports). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define TARN_HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TARN_HOT_CLONES
#endif

struct tarn_matrix {
  tarn_rt *rt;
  size_t m, n;   /* elements */
  size_t mb, nb; /* tile size, clamped to the matrix */
  size_t mt, nt; /* tiles down and across */
  /* The file a matrix made by tarn_matrix_create_file lives in (its
   * tiles' sources hold it; matrix_file.c's), else NULL. */
  void *file;
  /* tarn__magic_live(TARN__MATRIX_LIVE) from tarn__matrix_new until
   * tarn_matrix_destroy, which writes TARN__MAGIC_DEAD as it frees the struct
   * (tarn__magic_free). After `file`, 64 bytes in: past what glibc's free
   * writes (prim.h), so the dead word outlives the free until the memory
   * is reused. */
  uint32_t magic;
  /* Made over a file (tarn_matrix_open_file, tarn_matrix_create_file):
   * its tiles are read from it as tasks first need them. */
  bool in_file;
  tarn_ref *tiles[]; /* mt * nt, by columns */
};

#define TARN__MATRIX_LIVE 0x6d617478u /* "matx" */

/* Whether `a` is a live matrix: not NULL and holding the live word. Every
 * entry point takes its matrices through this (directly or through the
 * shape checks built on it), so a matrix already destroyed, whose memory
 * was not reused yet, or a pointer to memory that never held one, gets
 * TARN_EINVAL instead of tasks on whatever it points to; a destroyed one
 * is also reported on stderr, as the pool reports a released ref. Best
 * effort: a pointer to freed memory is still undefined behaviour, which
 * AddressSanitizer reports as such. */
bool tarn__matrix_ok(const tarn_matrix *a);

/* Rows of tile row ti, columns of tile column tj. */
size_t tarn__tile_rows(const tarn_matrix *a, size_t ti);
size_t tarn__tile_cols(const tarn_matrix *a, size_t tj);

/* The bytes the pool charges for a whole tile of `a` (mb x nb doubles,
 * rounded up to whole pages, as tarn_ref_create counts them under a
 * memory limit): what budgets against the limit count per tile. A 5 x 5
 * tile holds 200 bytes and takes a page. */
size_t tarn__tile_charge(const tarn_matrix *a);

/* The bytes the pool charges for tile (ti, tj) of `a` as it is (an edge
 * tile may be smaller): its doubles rounded up to whole pages. */
size_t tarn__tile_charge_at(const tarn_matrix *a, size_t ti, size_t tj);

/* Whether one task pinning `bytes` (what the pool charges for its tiles:
 * tarn__tile_charge_at) fits under the memory limit of rt's pool at all
 * (always so without one). A task that does not can never run: it fails,
 * and what it and the tasks after it were to write is left cancelled
 * (rule 4 of tarn/rt.h). So the operations here and in linalg check
 * their largest tasks with it first and return TARN_ENOMEM before any
 * task, their matrices unchanged. */
bool tarn__task_fits(tarn_rt *rt, size_t bytes);

/* tarn__task_fits for a task with these deps: each ref once (the runtime
 * merges a ref given twice), as the pool charges it, TARN_AFTER accesses
 * not at all (they are not pinned). Counts nothing without a limit. */
bool tarn__deps_fit(tarn_rt *rt, const tarn_dep *deps, size_t n);

/* The ref of tile (ti, tj). */
tarn_ref *tarn__tile(const tarn_matrix *a, size_t ti, size_t tj);

/* A new matrix whose tiles have no memory yet. Returns 0, TARN_EINVAL,
 * TARN_ENOMEM. */
int tarn__matrix_new(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                     tarn_matrix **out);

/* For tarn_matrix_destroy of a matrix with a file (matrix_file.c): a
 * created file never committed is removed now, before the tiles are
 * released; a read or store of a tile still in flight in the pool keeps
 * its descriptor, not its name. */
void tarn__matrix_file_forget(tarn_matrix *a);

/* Whether two matrices are live (tarn__matrix_ok) and share runtime, shape
 * and tiling. */
bool tarn__matrix_same_layout(const tarn_matrix *a, const tarn_matrix *b);

/* Submits, for every tile of `a`, a task that writes `value` over it
 * without reading it (so a failed writer before, or NaNs in it, are
 * gone). Returns 0 or the status of a submission; TARN_ENOMEM, nothing
 * submitted, under a limit below one tile. */
int tarn__matrix_fill_in(tarn_matrix *a, double value);

/* tarn_matrix_retile of a part of `a`'s elements: all of them (part
 * 'F': tarn_matrix_retile), or a triangle: those on or below the
 * diagonal ('L'), or on or above it ('U'). Reads only a's tiles that hold
 * some of them, and writes only the destination's tiles that hold some:
 * in a destination it makes, the other tiles are never written (they
 * have no memory, and read as zeros) and the other elements of those
 * tiles are zeros; in a given one, they keep their values (such a tile
 * is read and written). Same statuses as tarn_matrix_retile. */
int tarn__matrix_retile_part(tarn_matrix *a, char part, size_t mb, size_t nb,
                             tarn_matrix **out);

/* The destination of an operation: *out when given (a live matrix with
 * the layout it must have: TARN_EINVAL otherwise), else a new matrix. *made
 * says which. */
int tarn__matrix_destination(tarn_rt *rt, size_t m, size_t n, size_t mb,
                             size_t nb, tarn_matrix **out, bool *made);

/* The task data slot (tarn_task_data index) of deps[k]: the runtime merges
 * repeated refs, so it is the number of distinct refs before deps[k]'s
 * first appearance. */
size_t tarn__dep_slot(const tarn_dep *deps, size_t k);

/* tarn__dep_slot of each of the n deps into slots[], in one pass. */
void tarn__dep_slots(const tarn_dep *deps, size_t n, size_t *slots);

/* *norm = the largest column sum (rows false: the one-norm) or row sum
 * (rows true: the infinity-norm) of |a_ij| over a part of `a`: all of it
 * (part 'F'), or the lower ('L') or upper ('U') triangle of its leading
 * N x N block (M >= N), whose diagonal counts as ones when `unit` (as
 * LAPACK's dlantr). Tiles with nothing of
 * the part are not read. The tiles of each line of tiles are dealt to
 * lanes of sums (tile k of a line to lane k % lanes, up to
 * tarn_rt_workers lanes, so that lines of few tiles still keep the
 * workers busy); the tasks of one lane and line add to its sums in turn,
 * ordered by a gate ref they all write, and the caller adds the lanes in
 * a fixed order. The sums take lanes x (columns or rows) doubles of the
 * caller's memory, not the pool's. A NaN element makes a NaN. Waits in a
 * region of its own. Returns 0, TARN_ENOMEM, or the region's status. */
int tarn__matrix_line_norm(tarn_matrix *a, bool rows, char part, bool unit,
                           double *norm);

/* Runs fn(arg, q0, q1) over disjoint ranges of columns covering [0, cols)
 * of the running task's tile of `rows` rows, on this thread and on idle
 * workers (tarn_task_parallel_for), each range at least 16384 elements, so
 * that a matrix of one tile still uses every core. Call it from the task's
 * thread. Returns 0, the first non-zero status of fn, or an error of
 * tarn_task_parallel_for. */
int tarn__share_columns(tarn_task *t, size_t rows, size_t cols,
                        tarn_range_fn fn, void *arg);

/* Memory for a running task, 64-byte aligned: its worker's scratch, or the
 * heap when the slab cannot hold it (*heap says which: free it then, before
 * the task returns). NULL when neither has it. */
void *tarn__task_memory(tarn_task *t, size_t bytes, bool *heap);

/* c[k] = value for k < n: the fill of tarn_matrix_fill and
 * tarn_stencil_assign, one of the hot loops above (twice as fast in AVX2
 * as in the baseline's 16-byte stores on data in the cache). */
void tarn__fill(double *c, double value, size_t n);

#endif
