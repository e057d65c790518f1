/* linalg_internal.h: what the linalg layer's modules (linalg.c, gemv.c,
 * inverse.c, logdet.c, lu.c, qr.c, qr_tall.c, rcond.c, solve.c,
 * work_tiles.c) share: OpenBLAS set to one thread, BLAS-sized tiles,
 * submitting a tile task that owns a copy of its job, task working
 * memory, the tile kernels that share their work with idle workers (gemm,
 * trsm, syrk and a blocked Cholesky of one tile, split by
 * tarn_task_parallel_for), the parts of the linear solves, and the
 * operations on small tiles worked on in larger ones. */
#ifndef TARN_LINALG_INTERNAL_H
#define TARN_LINALG_INTERNAL_H

#include <cblas.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "array/matrix_internal.h"
#include "tarn/linalg.h"
#include "tarn/rt.h"

/* Sets OpenBLAS to one thread for the process, once. Thread-safe. */
void tarn__blas_init(void);

/* Whether `a` is a live matrix (tarn__matrix_ok: not NULL, not destroyed)
 * whose every tile side fits a BLAS int. The shape checks below start
 * with it. */
bool tarn__blas_sized(const tarn_matrix *a);

/* tarn__task_fits for a task pinning a whole tile column of m (with
 * `row`, a tile row), its first and widest: LU's panels and
 * interchanges. */
bool tarn__line_fits(const tarn_matrix *m, bool row);

/* tarn__task_fits for LU's largest tasks on a: a panel's tile column
 * (tarn__line_fits), with two tile columns or more an update's trsm
 * (tiles (0, 0) and (0, 1): more than the column of one tile row), and
 * with two tile rows and columns or more an update's gemm (tiles (1, 1),
 * (1, 0) and (0, 1): more than a column of two tiles). */
bool tarn__lu_fits(const tarn_matrix *a);

/* Tiles at most this many rows high are short: a BLAS or LAPACK call per
 * tile and column costs more than its arithmetic, so LU's panels
 * (lu.c) and QR's domains (qr.c) of such tiles are gathered into one
 * column-major block of the task's memory, of at most
 * TARN__GATHER_BYTES_MAX, and factored there by one call. */
#define TARN__GATHER_TILE_ROWS 64
#define TARN__GATHER_BYTES_MAX ((size_t)1 << 20)

/* For tests: whether LU gathers a panel of short tiles into its task's
 * memory and factors it there (true, the default; panel_gathered in lu.c)
 * and updates each tile column after a panel in one task
 * (coalesce_updates), or factors the panel in place and updates by tasks
 * per tile, as for other tiles, so that both ways can be checked on the
 * same shapes. Thread-safe; a panel that runs meanwhile goes either
 * way. */
void tarn__lu_gather_short_panels(bool on);

/* For tests: whether tarn_matrix_qr may gather the domains of short tiles
 * (true, the default; see "gathered domains" in qr.c) or keeps every tile
 * column's steps on its tiles, so that both layouts can be checked on the
 * same shapes. Thread-safe; read once per factorisation. */
void tarn__qr_gather_short_columns(bool on);

/* tarn__task_fits for the tasks of the tile algorithms on a's lower (or
 * upper, transposed) triangle that Cholesky, trtri and lauum share: a
 * diagonal tile's, two tiles' (tiles (0, 0) or (1, 1) with (1, 0)), and
 * from three tile columns on a gemm's three (tiles (2, 0), (2, 1) and
 * (1, 0)); an edge tile may be smaller than these. */
bool tarn__triangle_fits(const tarn_matrix *a, bool lower);

/* tarn__task_fits for the largest tasks of a triangular solve with T
 * (lower or upper) into B through a copy Y of B: a step's trsm (T's
 * first diagonal tile, a tile of Y and one of B). An update pins T's tile
 * (1, 0) or (0, 1) and two tiles of B's first tile column, each no larger
 * than the trsm's (only a last tile is smaller), so the trsm's check
 * holds for it. */
bool tarn__solve_fits(const tarn_matrix *t, const tarn_matrix *b);

/* ---- many right-hand sides in pieces (solve.c) --------------------------- */

/* The width of the column pieces that a tiled solve with factor t (a
 * triangle, Cholesky's, LU's or QR's A) runs B in, or 0 for B's own
 * tiling: when B has fewer tile columns than the pieces, at most one a
 * worker and TARN__SOLVE_PIECE_COLS_MIN columns or more each, and the
 * factor has two tile columns or more but no more than the workers; and
 * when the solve's tasks on B's own tiles fit (tarn__solve_fits) and,
 * under a memory limit, three copies of B take at most an eighth of it.
 * With so few tile columns of the factor each step of a solve on a narrow
 * B is one trsm or gemm shared by columns with the idle workers, a wait
 * for them at every step; in pieces each worker runs a chain of its own
 * (see tarn__solve_in_pieces). On 2 workers, medians of 7 against
 * LAPACKE's two threads (a program outside the repository, 2026-12-06):
 * N = 1024 in 512 tiles with 256 right-hand sides, the Cholesky solve 8.3
 * to 8.9 ms -> 7.3 to 7.4 (LAPACKE 7.4 to 7.8), the LU solve 8.7 to 9.0
 * -> 7.5 to 7.6, the triangular 4.3 to 4.5 -> 3.9; N = 600 in 300 tiles
 * with 100, 1.6 -> 1.35 and 1.7 -> 1.4 ms. Where the factor has more tile
 * columns, a step's gemms on the tile rows below keep the workers busy
 * and the copies cost more than the waits: N = 2048 in 512 tiles with 256
 * took 33 to 36 ms for the Cholesky solve, 38 in pieces of 128. */
#define TARN__SOLVE_PIECE_COLS_MIN 32
size_t tarn__solve_piece_cols(const tarn_matrix *t, const tarn_matrix *b);

/* tarn_matrix_retile(from, mb, nb, to) in a region of its own, waited
 * for: its status, or the first failed task's. */
int tarn__retile_waiting(tarn_matrix *from, size_t mb, size_t nb,
                         tarn_matrix **to);

/* The same of a part of from's elements: all ('F'), or the triangle on
 * and below ('L') or on and above ('U') the diagonal
 * (tarn__matrix_retile_part: only the tiles holding some of it are read
 * and written). */
int tarn__retile_part_waiting(tarn_matrix *from, char part, size_t mb,
                              size_t nb, tarn_matrix **to);

/* Runs `solve` (a public solve, on its context `ctx`) on a copy of B in
 * tiles of `cols` columns (tarn__retile_waiting), then, when it
 * returns 0, copies X back into B's tiles (a task per tile of B, waited
 * for). So B is written only after the solve succeeded, each tile by one
 * task: it holds X, its values before the call, or (that task failed)
 * reads as TARN_ECANCELED, as the solves promise. Returns the copies'
 * or the solve's status. */
int tarn__solve_in_pieces(tarn_matrix *b, size_t cols,
                          int (*solve)(void *ctx, tarn_matrix *piece,
                                       int *info),
                          void *ctx, int *info);

/* ---- small tiles on a copy in work tiles (work_tiles.c) ------------------ */

/* The tile size an operation on small tiles works in, or 0 for the
 * caller's tiles: the runtime's work tile (tarn_rt_options.work_tile)
 * when the operation's task multiplies at most 64^3 multiply-adds
 * (`task_madds`), a task of work tiles would multiply more (the work tile
 * clamped to the product's sides m, n and k: so never again for the
 * copies), none of its matrices `ops` (the nops matrices copied, the same
 * one listed twice counted once) lives in a file, and the copies take at
 * most an eighth of the pool's memory limit as the pool charges them, as
 * does each task that copies a work tile there or back (without a limit,
 * an eighth of the memory the process may use: tarn__memory_usable).
 * ops[0] is copied whole (part0 'F') or as a triangle ('L', 'U': only
 * the work tiles holding some of it). Thread-safe. */
size_t tarn__work_tile(tarn_rt *rt, size_t m, size_t n, size_t k,
                       double task_madds, tarn_matrix *const *ops, size_t nops,
                       char part0);

/* tarn__work_tile for a call on the square matrix `a` (square tiles), or
 * on a tall one's leading n x n block, alone, whose tasks multiply tiles
 * of `a` (a tile's order cubed): the Cholesky, the inverses and the
 * condition estimates. `part` as part0. */
size_t tarn__factor_work_tile(tarn_matrix *a, char part);

/* The part of `t` (tarn__triangle_shape_ok) a call on its triangle T
 * (the lower one when `lower`) copies into work tiles: T's triangle of a
 * square t ('L', 'U'); of a tall t (T its leading block), the upper
 * triangle ('U': only elements of T, in t's top rows: a QR's R), but not
 * the lower (0: its elements below T's rows, the reflectors of a QR,
 * would be copied and written back too), which goes by t's tiles. */
char tarn__triangle_copy_part(const tarn_matrix *t, bool lower);

/* The operations on copies of their operands in tiles of w x w, the
 * result copied back into the caller's tiles (the public call's checks
 * made before): tarn_matrix_gemm into C (asynchronous, as it), A^T A into
 * *c (made, in A's column tiles), and the waiting tarn_matrix_cholesky,
 * tarn_matrix_lu (the factors copied back also for a singular A) and
 * tarn_matrix_solve (A's factors copied back also for a singular A, B
 * only on success). Return the public call's statuses. */
int tarn__gemm_work(tarn_matrix *a, tarn_trans ta, tarn_matrix *b,
                    tarn_trans tb, double alpha, double beta, tarn_matrix *c,
                    size_t w);
int tarn__ata_work(tarn_matrix *a, size_t w, tarn_matrix **c);
int tarn__cholesky_work(tarn_matrix *a, size_t w, int *info);
int tarn__lu_work(tarn_matrix *a, size_t *piv, size_t w, int *info);
int tarn__solve_work(tarn_matrix *a, tarn_matrix *b, size_t w, int *info);

/* Solves with factors made before go on copies in work tiles only where
 * the factor's copy, read once more than the solve reads it, is a small
 * part of the work: for a factor in tiles under 32 x 32 and a B of
 * TARN__SOLVE_WORK_COLS_MIN columns or more; in tiles of 32 x 32 to 63 x
 * 63, only for the solves of two passes over the factor (Cholesky's L
 * then L^T, LU's L then U: the copy serves both) and a B of
 * TARN__SOLVE_WORK_COLS_WIDE columns or more. N = 1024 on 2 workers
 * (medians of 11, on tiles against on copies, two alternated runs,
 * 2026-12-06, ms; a program outside the repository): in tiles of 24 all
 * three solves gain from 64 columns (the triangular 2.2-2.5 -> 1.8-2.0,
 * Cholesky's 4.3 -> 2.7-2.9, LU's 7.1-7.2 -> 4.9-5.0); in tiles of 32
 * the triangular solve loses with 64 (1.3 -> 1.9-2.0) and is level with
 * 256 (5.7-6.2 -> 5.6-5.8), Cholesky's and LU's are level with 64 and
 * gain with 256 (14.7-14.8 -> 10.5-11.3, 9.8-11.2 -> 9.2); in tiles of
 * 48 the triangular solve loses with 256 too (3.9-4.4 -> 5.1-5.2),
 * Cholesky's gains (11.2-11.4 -> 10.4). Until then the bound was tiles
 * under 64 and 64 columns for all three, when the solve on tiles of 32
 * took 2.80 ms with 64 right-hand sides against 1.16 on copies. */
#define TARN__SOLVE_WORK_COLS_MIN 64
#define TARN__SOLVE_WORK_COLS_WIDE 256

/* The work tile of a solve with the factor t (square, or tall with its
 * leading block's upper triangle read) into b, of `passes` passes over
 * the factor (1: a triangular solve; 2: Cholesky's, LU's), by the bounds
 * above (and tarn__work_tile: a task multiplies a tile of t by one of b),
 * or 0: also for a tall t whose triangle is not copied alone
 * (tarn__triangle_copy_part: a lower one). `part` is the part of t the
 * solve reads (tarn__solve_in_work_tiles). */
size_t tarn__solve_work_tile(tarn_matrix *t, char part, tarn_matrix *b,
                             int passes);

/* Runs `solve` (a public solve, on its context `ctx`) on copies of the
 * part of the factor t it reads (as tarn__retile_part_waiting: 'F' all,
 * 'L' or 'U' a triangle) and of B in tiles of w x w, then, when it
 * returns 0, copies X back into B's tiles (waited for). So B is written
 * only after the solve succeeded, as tarn__solve_in_pieces, and the
 * tiles of t read are those the solve reads on t's own tiles. Returns
 * the copies' or the solve's status. */
int tarn__solve_in_work_tiles(tarn_matrix *t, char part, tarn_matrix *b,
                              size_t w,
                              int (*solve)(void *ctx, tarn_matrix *tw,
                                           tarn_matrix *bw, int *info),
                              void *ctx, int *info);

/* ---- solves in one task per tile column of B (column_solve.c) ---------- */

/* What a solve's factor is: a triangle (tarn_matrix_triangular_solve),
 * Cholesky's L (L then L^T), LU's square factors with their
 * interchanges. */
enum tarn__solve_kind {
  TARN__SOLVE_TRIANGLE,
  TARN__SOLVE_CHOLESKY,
  TARN__SOLVE_LU
};

/* The right-hand sides at most that a factor of several tile columns
 * solves in one task per tile column of B: a few vectors, bound by
 * memory (see column_solve.c); wider, the tiled solve shares the work by
 * tiles. And the bytes at most that such a task pins: beyond them one
 * core streaming the factor is slower than the tiles' tasks side by side
 * on two (with one right-hand side, N = 2048 in 512 tiles took as long
 * both ways, N = 4096 1.6x as long in one task; N = 1024, 8 MiB, less
 * time in one: column_solve.c): 16 MiB takes N = 1024 (8 MiB of LU's
 * factors), not 2048 (20 MiB of its triangle). */
#define TARN__COLUMN_SOLVE_RHS 8
#define TARN__COLUMN_SOLVE_BYTES ((size_t)16 << 20)

/* Whether the solve with factor t (its lower triangle when `lower`, for
 * TARN__SOLVE_TRIANGLE) takes B in one task per tile column of B, solved
 * in place (tarn__column_solve_run): when t has one tile column, or B at
 * most TARN__COLUMN_SOLVE_RHS columns, and such a task, pinning the
 * factor's tiles that the solve reads and B's first tile column, fits
 * under the memory limit, and pins at most TARN__COLUMN_SOLVE_BYTES with
 * several tile columns. Else the solve goes by tiles. */
bool tarn__column_solve(const tarn_matrix *t, const tarn_matrix *b,
                        enum tarn__solve_kind kind, bool lower);

/* A task of such a solve: `kind`, and for a triangle its side, op and
 * diagonal (lower, trans, unit), for LU op (trans) and the pivots (piv,
 * 0-based as tarn_matrix_lu's); the rest is filled in by
 * tarn__column_solve_run: the factor's tile columns, order, tile width,
 * rows and tile rows, the columns of the task's tile column of B, and
 * *failed (a zero on the diagonal, its 1-based order, or a failed
 * submission, -1), after which a task writes nothing. */
struct tarn__column_job {
  enum tarn__solve_kind kind;
  bool lower, trans, unit;
  const size_t *piv;
  size_t tiles, n, nb, t_m, t_mb;
  int nrhs;
  atomic_int *failed;
};

/* Runs such a solve in a region of its own, waited for: one task per tile
 * column of B, each checking the factor's diagonal (unless a unit
 * triangle) before it writes B, so a tile column of B holds X or its
 * values before the call. Returns as tarn__region_outcome, or
 * TARN_ENOMEM. */
int tarn__column_solve_run(tarn_matrix *t, tarn_matrix *b,
                           struct tarn__column_job job, int *info);

/* Copies columns col0 .. col0 + cols - 1 of a tile column that task `t`
 * holds in its data slots slot0, slot0 + 1, ... (tiles of tb rows, the
 * last shorter, `rows` in all, each with its height as leading dimension)
 * into the rows x cols column-major `block` (leading dimension rows), or
 * with `to_tiles` the block back into the tiles: LU's gathered panels
 * (lu.c), the column solve's gathered interchanges (column_solve.c) and
 * QR's gathered domains (qr.c). */
void tarn__tile_column_copy(tarn_task *t, size_t slot0, size_t tb, size_t rows,
                            size_t col0, size_t cols, double *block,
                            bool to_tiles);

/* Submits `fn` with a malloc'ed copy of the `size` bytes at `proto` as its
 * argument (freed by the runtime when the task is done). Returns as
 * tarn_task_submit, or TARN_ENOMEM. */
int tarn__submit_owned(tarn_rt *rt, tarn_task_fn fn, const void *proto,
                       size_t size, const tarn_dep *deps, size_t ndeps,
                       int priority, const char *name);

/* Waits for `region`, into which a factorisation or solve submitted its
 * tasks (`submitted`: the status of that submission), and gives the call's
 * status: the submission's failure; else, when *failed (LAPACK's info) is
 * positive, *info (when `info` is not NULL) set to it and TARN_EINVAL,
 * unless a task failed for the runtime (TARN_ENOMEM, TARN_ENOSPC,
 * TARN_EIO: its status then); else the region's status. */
int tarn__region_outcome(tarn_region *region, int submitted, atomic_int *failed,
                         int *info);

/* ---- tile kernels shared with idle workers --------------------------------
 * Each does what the BLAS call of its name does (column-major, one BLAS
 * thread per call), from inside the running task `t`: it splits its output
 * into disjoint parts with tarn_task_parallel_for, so idle workers compute
 * some of them; with no idle worker, or little work, it is one plain BLAS
 * call. The results may differ from the plain call's in the last bits.
 * Each returns 0 or the status of tarn_task_parallel_for. */

/* C = alpha op(A) op(B) + beta C (C m x n, inner size k), split by rows
 * of C, or by columns when C has more columns than rows. */
int tarn__gemm_shared(tarn_task *t, bool ta, bool tb, int m, int n, int k,
                      double alpha, const double *a, int lda, const double *b,
                      int ldb, double beta, double *c, int ldc);

/* A product that updates a grid of mt x nt output tiles (ctile bytes each)
 * layer by layer, a layer reading atile bytes per tile row and btile per
 * tile column of its outputs, and `whole` bytes for all its outputs and
 * one layer: under a memory limit of `rt`'s pool that `whole` takes more
 * than seven eighths of, the block of *bm x *bn output tiles (about as
 * many rows as columns, one tile at least) that fits in half the limit
 * with its layer, and true: the caller then goes block by block, layer by
 * layer (see tarn_matrix_gemm). Else all of the grid, and false. */
bool tarn__limit_blocks(tarn_rt *rt, double whole, double ctile, double atile,
                        double btile, size_t mt, size_t nt, size_t *bm,
                        size_t *bn);

/* The priority of a blocked product's layer `layer` (counted over its
 * blocks, tarn__limit_blocks): each layer before the next. */
int tarn__layer_priority(size_t layer);

/* ---- groups of layers -----------------------------------------------------
 * An output tile that a long chain of layers accumulates (a tile of a
 * product whose inner dimension has many tiles: tarn_matrix_gemm,
 * tarn_matrix_syrk_ata) can take them in groups side by side: the first
 * group into the tile, each other into a temporary tile of its own, then
 * one task adds the temporaries into the tile. */

/* Groups for `tiles` output tiles of `layers` layers each on `workers`
 * workers: 1, or, when the tiles are fewer than twice the workers (two or
 * more), about twice the workers' chains in all, each group of two layers
 * at least, at most 64 groups. */
size_t tarn__layer_groups(size_t tiles, size_t layers, unsigned workers);

/* The chain of `layers` layers of one output tile (`tile`, `bytes`
 * bytes) in `groups` groups side by side: group g's layers [k0, k1)
 * (consecutive, as even as they divide), each submitted by layer(ctx, k, k0,
 * k1, sum) in order, into the tile for group 0 (sum NULL) and into a temporary
 * of its own for each other group (a pool ref without memory until its first
 * layer writes it); then sum(ctx, deps, temps) submits the sum task: deps[0] is
 * the tile (read-write), deps[1 .. temps] the temporaries (read), and deps has
 * room for one more. The temporaries are released here (the tasks hold their
 * own references). Returns 0, TARN_ENOMEM, or a submission's status. */
int tarn__submit_grouped(
    tarn_rt *rt, tarn_ref *tile, size_t bytes, size_t layers, size_t groups,
    int (*layer)(void *ctx, size_t k, size_t k0, size_t k1, tarn_ref *sum),
    int (*sum)(void *ctx, tarn_dep *deps, size_t temps), void *ctx);

/* Submits the sum task of a tile in groups (for tarn__submit_grouped's
 * `sum`): deps[0], an m x n tile, += deps[1 .. temps]. */
int tarn__submit_tile_sum(tarn_rt *rt, tarn_dep *deps, size_t temps, size_t m,
                          size_t n);

/* c += w, both m x n with leading dimension m; only on and below the
 * diagonal when `lower`. */
void tarn__tile_add(double *c, const double *w, size_t m, size_t n, bool lower);

/* Submits y = alpha op(A) op(x) + beta y (gemv.c): x is one column (or,
 * with tx, one row), y one column with op(A)'s tiling along M, all checked
 * by the caller (tarn_matrix_gemm), beta 0 when y is new. Returns 0 or
 * the first submission's failure (tasks already submitted still run). */
int tarn__gemv_submit(tarn_matrix *a, bool ta, tarn_matrix *x, bool tx,
                      double alpha, double beta, tarn_matrix *y);

/* B = alpha op(T)^-1 B (CblasLeft) or alpha B op(T)^-1 (CblasRight), as
 * cblas_dtrsm, blocked so that most of the work is dgemm (see
 * trsm_blocked). Thread-safe. */
void tarn__trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans,
                CBLAS_DIAG diag, int m, int n, double alpha, const double *tri,
                int ldt, double *b, int ldb);

/* tarn__trsm (B is m x n) in task `t`, split with idle workers by columns
 * of B (CblasLeft) or rows of B (CblasRight). */
int tarn__trsm_shared(tarn_task *t, CBLAS_SIDE side, CBLAS_UPLO uplo,
                      CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
                      double alpha, const double *tri, int ldt, double *b,
                      int ldb);

/* B = alpha op(T) B (CblasLeft) or alpha B op(T) (CblasRight), B m x n,
 * as cblas_dtrmm, in task `t`, split with idle workers by columns of B
 * (left) or rows (right): the same bits either way. */
int tarn__trmm_shared(tarn_task *t, CBLAS_SIDE side, CBLAS_UPLO uplo,
                      CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n,
                      double alpha, const double *tri, int ldt, double *b,
                      int ldb);

/* The lower triangle of C (n x n) = alpha op(A) op(A)^T + beta C, where
 * op(A) is A (n x k, CblasNoTrans) or A^T (A k x n, CblasTrans); split
 * into the dsyrk of its two diagonal blocks of order n/2 (a quarter of the
 * work each) and the dgemm of the block below them (half; in column ranges
 * when there are more than 3 workers). The strictly upper triangle is not
 * touched. */
int tarn__syrk_shared(tarn_task *t, CBLAS_TRANSPOSE trans, int n, int k,
                      double alpha, const double *a, int lda, double beta,
                      double *c, int ldc);

/* Cholesky A = L L^T of the lower triangle of the n x n A in place, as
 * LAPACK's dpotrf('L'). A large tile (see POTRF_BLOCKED in linalg.c) is
 * factored right-looking by blocks of columns: dpotrf on the diagonal
 * block (one plain call) and the trsm below it, then the update of the
 * trailing matrix, shared, the next block factored meanwhile on this
 * thread (a lookahead of one block); a small one by one
 * LAPACKE_dpotrf_work. *info gets
 * LAPACK's info (k > 0: the leading minor of order k is not positive definite;
 * the rest of A is then unspecified). Returns 0 (also when *info > 0),
 * TARN_EINVAL when LAPACK refuses its arguments, or a status of
 * tarn_task_parallel_for. */
int tarn__potrf_shared(tarn_task *t, int n, double *a, int lda, int *info);

/* Submits the tasks that copy the lower half of the square `c` (square
 * tiles) into its upper half: tile (j, i) = tile (i, j)^T for i > j, and
 * each diagonal tile's upper triangle from its lower (qr.c, as
 * tarn_matrix_syrk_ata does). Each task shares its columns with idle
 * workers. Returns 0 or the first submission's failure (tasks already
 * submitted still run). */
int tarn__submit_mirror(tarn_matrix *c);

/* ---- linear solves (solve.c) ----------------------------------------- */

/* Whether `a` is a live matrix that can be factored: square, with square tiles,
 * of sizes BLAS and LAPACK's int info take. */
bool tarn__factor_shape_ok(const tarn_matrix *a);

/* Whether `t` is a live matrix that holds a triangle T, its leading n x n
 * block: M >= N (a QR's R is the top of an M x N factor), the block's diagonal
 * in the diagonal tiles (square tiles, or one tile column whose first
 * tile holds the block), sizes BLAS and LAPACK's int take. The solves'
 * tile loops take the triangle's sizes from T's tile columns and the
 * leading dimensions from its tile rows, so they work on that block as
 * they are. */
bool tarn__triangle_shape_ok(const tarn_matrix *t);

/* The row tiling of an n-row B solved with such a T: its mb, clamped to
 * n (one tile when the block lies in T's first tile). */
size_t tarn__triangle_row_tile(const tarn_matrix *t);

/* Whether A X = B can be solved with A or its factors: both live and
 * different, of one runtime, A as tarn__factor_shape_ok, B with A's rows
 * and row tiling and BLAS-sized tiles. */
bool tarn__solve_shapes_ok(const tarn_matrix *a, const tarn_matrix *b);

/* Scans the diagonal of the n x n tile `t` (leading dimension ld, its
 * first row `offset` in the matrix) for an exactly zero element: *first
 * is lowered to its 1-based order in the matrix, unless *first already
 * holds a smaller order or is negative (a failed submission). Thread-safe
 * (several tiles' checks race on *first). */
void tarn__diagonal_check(const double *t, int n, int ld, size_t offset,
                          atomic_int *first);

/* The triangle a forward solve takes from T: its lower triangle, LU's
 * unit lower L (the diagonal not stored; a trapezoid as tall as T, see
 * tarn__submit_forward_step), or the transpose of its upper triangle. */
typedef enum {
  TARN__LOWER,
  TARN__LOWER_UNIT,
  TARN__UPPER_TRANS
} tarn__forward_op;

/* Submits step k of a forward solve L Y = Y on tile column j of `m`:
 * Y_kj = L_kk^-1 Y_kj, then Y_ij -= L_ik Y_kj for each tile row i below,
 * L being op(T). T has square tiles (or one tile column) and the
 * triangle is of its first N rows: L_kk is nk x nk (nk the width of T's
 * tile column k) at the top of tile (k, k); m has T's row tiling, and only
 * the first nk rows of its tile row k are solved. TARN__LOWER_UNIT takes
 * LU's L of an M x N T (any M and N): nk is the smaller of tile (k, k)'s
 * height and width, and the gemm goes down all of T's tile rows, each
 * with its tile's every row. With `check`, the trsm
 * first checks T_kk's diagonal for an exact zero into it
 * (tarn__diagonal_check). The trsm gets `trsm_priority`; the gemm of the
 * next tile row `gemm_priority`, each one further down `gemm_step` less.
 * Returns 0 or a status of tarn_task_submit. */
int tarn__submit_forward_step(tarn_matrix *t, tarn__forward_op op,
                              tarn_matrix *m, size_t k, size_t j,
                              atomic_int *check, int trsm_priority,
                              int gemm_priority, int gemm_step);

/* Submits a task that copies tile (i, j) of `from` into the same tile of
 * `to` (same tiling), after the writers of `gate` when not NULL, unless
 * *flag is not 0 when it starts (then it writes nothing). `to_mode` is
 * TARN_WRITE for a temporary, TARN_READ_WRITE for a tile whose bytes must
 * stay when nothing is copied (a write-only pin of a spilled tile gets
 * other bytes). Returns 0 or a status of tarn_task_submit. */
int tarn__submit_copy_unless(tarn_matrix *from, tarn_matrix *to, size_t i,
                             size_t j, tarn_ref *gate, atomic_int *flag,
                             tarn_access to_mode);

/* Submits the backward solve op(T) X = Y from Y into B, up T's tile
 * columns. op(T) is the upper triangle of T's first N rows, or the
 * transpose of the lower triangle of the square T when `lower`; with a
 * unit diagonal (not stored, nor checked) when `unit`. T has
 * square tiles (or one tile column); Y has T's rows and row tiling, B
 * T's N rows in tiles of T's column width, and both the same columns
 * (only Y's first N rows are read). B's tiles are written by one trsm task
 * each, which does nothing once *dropped is not 0 (read when it starts); Y
 * is updated on the way. When `fresh`, B is a new matrix (its tiles are
 * written, not updated) and each trsm task first checks its diagonal tile
 * of T for an exact zero into *dropped (tarn__diagonal_check; not with a
 * unit diagonal): no forward pass did. Returns 0 or a status of
 * tarn_task_submit (the tasks submitted before it still run). */
int tarn__submit_backward(tarn_matrix *t, bool lower, bool unit, tarn_matrix *y,
                          tarn_matrix *b, atomic_int *dropped, bool fresh);

/* ---- QR of one tall tile (qr_tall.c) -------------------------------- */

/* Whether qr.c's geqrt or tpqrt kernel factors an m x n tile by
 * tarn__qr_tall instead of LAPACK's dgeqrt or dtpqrt: tall (16384 rows or more)
 * and narrow (2 to 128 columns). */
bool tarn__qr_tall_wanted(size_t m, size_t n);

/* The QR of the m x n tile at a (lda; m >= n) from inside the running
 * task `task`, as LAPACKE_dgeqrt_work with inner block ib leaves it (R
 * and the reflectors in A, each block's T in tt, ldt >= ib, which the
 * caller has zeroed); or, with r not NULL, of [R; A], R the n x n upper
 * triangle at r (ldr), as LAPACKE_dtpqrt_work with l = 0 leaves it (R
 * in r, the reflectors in A, T in tt). Its products over A's rows are
 * shared with idle workers by units of rows: the factors do not depend
 * on the workers, and differ from LAPACK's in the last bits. Returns 0,
 * TARN_ENOMEM, TARN_EINVAL (LAPACK refused dlarfg's arguments), or a
 * status of tarn_task_parallel_for. */
int tarn__qr_tall(tarn_task *task, double *r, size_t ldr, double *a, size_t m,
                  size_t n, size_t lda, double *tt, size_t ldt, size_t ib);

/* C = op(Q) C, or with `right` C op(Q), from inside the running task
 * `task` (op: Q^T with `trans`), as LAPACKE_dgemqrt_work with inner
 * block ib: Q the k reflectors at v (ldv, m rows) that tarn__qr_tall or
 * dgeqrt left, with their T in tt (ldt), C at c (ldc) m x ncols from the
 * left, ncols x m from the right; or, with top not NULL, as
 * LAPACKE_dtpmqrt_work with l = 0: [A; C] = op(Q) [A; C], or [A C] =
 * [A C] op(Q), A the top k rows (from the right the first k columns) at
 * top (ldtop) and Q the reflectors of a pair. Its products over the
 * reflectors' rows are shared with idle workers by units of rows, as in
 * tarn__qr_tall. Returns 0, TARN_ENOMEM, or a status of
 * tarn_task_parallel_for. */
int tarn__qr_tall_apply(tarn_task *task, bool right, bool trans,
                        const double *v, size_t ldv, size_t k, size_t ib,
                        const double *tt, size_t ldt, double *top, size_t ldtop,
                        double *c, size_t m, size_t ncols, size_t ldc);

#endif
