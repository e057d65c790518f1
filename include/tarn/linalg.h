/* tarn/linalg.h: dense linear algebra on tiled matrices (tarn/matrix.h),
 * as tasks whose tile kernels call OpenBLAS (CBLAS) and LAPACKE with one
 * BLAS thread per task: the runtime's workers are the parallelism. The
 * first call of this module sets OpenBLAS to one thread for the process.
 *
 * Results: tarn_matrix_gemm and tarn_matrix_gemv update a matrix given
 * in *c or *y in place (NULL there: a new one), as tarn/matrix.h's
 * operations do. tarn_matrix_qr (its T factors), tarn_matrix_qr_q,
 * tarn_matrix_qr_solve, tarn_matrix_qr_ata_inverse and
 * tarn_matrix_syrk_ata always make a new matrix,
 * as the constructors do: they set the pointer without reading it, so a
 * matrix it held is not written, nor freed (destroy it first, or keep
 * another pointer to it).
 *
 * Errors: a call that finds LAPACK's info (a matrix that is not positive
 * definite, an exactly singular one) sets *info and returns TARN_EINVAL,
 * with its outputs as each call says; when a task of the same call failed
 * for the runtime (TARN_ENOMEM, TARN_ENOSPC, TARN_EIO: memory or the
 * spill disk), that status is returned instead, *info still set, and the
 * outputs are as that status leaves them.
 *
 * Inputs whose writer failed: TARN_ECANCELED, where a call below says
 * "when a task submitted before to write A failed", means a tile of A the
 * call reads (a call that reads one triangle does not see a failed tile
 * of the other, which stays cancelled, unless it works on copies in work
 * tiles: "Small tiles" below). What the call was to write then
 * reads as TARN_ECANCELED too (rule 4): a solve's B, which goes through
 * the factor, is lost with it (write it anew); a factorisation's A is.
 * The same holds for a call whose region the program cancels (inside a
 * region the program began and cancelled, a call's own region is
 * cancelled with it: tarn/rt.h).
 *
 * Memory limit: each task pins its tiles while it runs (a product's and
 * Cholesky's three, a QR update's three and a T tile, or in QR's gathered
 * layout a domain's tiles and the same rows of a tile column with a T
 * tile, LU's panel and interchanges a tile column, its updates three, or
 * with short tiles under a limit eight times as large two tile columns
 * from the panel's row down). A limit
 * that cannot hold one task's tiles can never run it: the call returns
 * TARN_ENOMEM, and by the runtime's rule 4 (tarn/rt.h) the matrices that task
 * and the ones after it were to write read as TARN_ECANCELED until written
 * anew. So every call here checks its largest tasks first (each tile's bytes
 * rounded up to whole pages, as the pool charges them) and returns
 * TARN_ENOMEM before any task, its matrices unchanged and no new one
 * made, under a limit that could never run one of them; each check is
 * exact: the largest task is one the call submits (tarn_rt_stats'
 * task_pinned_peak shows what a run pinned).
 *
 * Solves of few right-hand sides: tarn_matrix_cholesky_solve,
 * tarn_matrix_triangular_solve and tarn_matrix_lu_solve (so the
 * condition estimates too) with a factor of one tile column, or with B of
 * at most 8 columns and a factor whose tiles the solve reads take at most
 * 16 MiB as the pool charges them (whole pages a tile: N = 1024 in 512
 * tiles is 8 MiB of LU's factors; in tiles of 16, 16 MiB), run one task
 * per tile column of B. It pins the
 * factor's tiles the solve reads (a triangle, or all of LU's) with that
 * tile column of B, and solves the column in place, tile by tile, with
 * no temporary: such a solve reads the factor once, bound by memory, and
 * a task per tile and a copy of B cost more than the kernels (at N = 1024
 * in 512 tiles with one right-hand side: docs/linalg.md); as its
 * region's last task it shares its updates from 256 x 256 on, and its
 * triangles' solves of no more vectors than the workers, with the idle
 * workers (one vector a worker). A solve goes so
 * only when that task fits under the memory limit; else by tiles, as each
 * call says. Each such task finds an exact zero on the factor's diagonal
 * before B keeps anything: a tile column of up to 1 MiB is solved first,
 * and put back from a copy when X is not finite and the diagonal holds a
 * zero (a zero always leaves an infinity or NaN in X); a larger one, or
 * one in a program that traps division by zero or invalid operations
 * (feenableexcept; the workers inherit the traps of the thread that made
 * the runtime), is checked first. So B is unchanged when the factor is
 * singular, as by tiles.
 *
 * Solves of many right-hand sides in pieces: the same three by tiles, and
 * tarn_matrix_qr_solve (whose factor's tile columns are A's), with a
 * factor of two tile columns or more but no more than the runtime's
 * workers, and B of fewer tile columns than P, the workers or B's
 * columns / 32 if fewer (P 2 or more), solve a copy of B in tiles of B's
 * columns / P (rounded up: the pieces), then copy X into B's tiles (the
 * QR solve: into its new X), a task per tile, once that solve succeeded.
 * Each worker then runs the chain of a piece of its own where the steps
 * on B's few tile columns would each share one kernel with the idle
 * workers (N = 1024 in 512 tiles with 256 right-hand sides on 2 workers:
 * 11 to 17 % less time, the QR solve 13 to 17 %; docs/linalg.md, "Many
 * right-hand sides in pieces"). The copy is one more temporary of B's
 * size, taken only where three copies of B take at most an eighth of
 * the memory limit (or there is none). What a call promises of B's tiles
 * on failure is unchanged.
 *
 * Small tiles: tarn_matrix_gemm (not a product by a single column, which
 * is tarn_matrix_gemv's), tarn_matrix_syrk_ata, tarn_matrix_cholesky,
 * tarn_matrix_lu, tarn_matrix_solve, the inverses
 * (tarn_matrix_cholesky_inverse, tarn_matrix_lu_inverse,
 * tarn_matrix_inverse, tarn_matrix_qr_ata_inverse, on a copy of R, and
 * tarn_matrix_triangular_inverse in tiles under 64 x 64) and the condition
 * estimates from LU's and Cholesky's factors and of a triangle (whose solves
 * run on one copy of the factor, nothing copied back), where one of their tasks
 * would multiply at most 64^3 multiply-adds (tiles of 64 x 64 or less: a kernel
 * too small for BLAS's rate, and a task that costs about as much as its
 * arithmetic), work on copies of their operands in tiles of the
 * runtime's work tile (tarn_rt_options.work_tile, default 256, clamped
 * to the matrix; 0 turns this off) and copy the result back into the
 * caller's tiles, which keep their tiling. On 2 workers at N = 1024 in
 * tiles of 32, the product went from 73-80 to 24 ms, LU from 25-28 to
 * 12, Cholesky from 14-15 to 6 (docs/linalg.md, "Small tiles"). The copies
 * take the operands' size again (and A^T A's result's; a triangle's work
 * tiles for the calls below that read one); under a memory limit
 * they are made only where they take at most an eighth of it as the pool
 * charges them (so the bits of a result, which depend on the tiles it is
 * computed in, may differ with the limit), without one only where they
 * take at most an eighth of the memory the process may use (the
 * machine's, or its control groups'), and never for a matrix made
 * over a file (tarn_matrix_open_file, tarn_matrix_create_file), whose
 * tiles the call reads only as its tasks need them. A call on copies
 * writes the caller's matrices only by the copy back, once the call on
 * the copies returned its result (for LU and the solve, A's factors also
 * when A is singular): so a matrix that is not positive definite, or a
 * failure before the copy back, leaves A as it was (a factorisation's
 * A is otherwise unspecified then). An LU whose panel becomes one work
 * tile factors it as a panel of one tile (a subnormal pivot's infinities:
 * tarn_matrix_lu); an LU of one tile column in tiles of at most 64 rows
 * and 1 MiB in all is not copied: its one task factors a column-major copy
 * of its own. A call that reads one triangle (Cholesky's, its solve,
 * a triangular solve, inverse or estimate) copies only the tiles that hold
 * some of it (the triangular inverse and estimate of a tall matrix's
 * leading block, only of its upper triangle, a QR's R: a lower one goes
 * by the matrix's tiles), and a Cholesky or a triangular inverse writes back
 * only the tiles of its triangle (in diagonal tiles, only that triangle): the
 * tiles read and written are those of the call on the caller's tiles, and so is
 * what a failed writer of a tile of the other triangle does to it (nothing).
 * The solves with factors made before (tarn_matrix_cholesky_solve,
 * tarn_matrix_triangular_solve with a square T or a tall matrix's upper one,
 * tarn_matrix_lu_solve) go on copies too, for factors in tiles under 32 x 32
 * and a B of 64 columns or more, and (Cholesky's and LU's, which pass over the
 * copy twice) in tiles under 64 x 64 and a B of 256 columns or more (the
 * factor is copied at every call: a program that solves many times with
 * one factor does better to retile it, and B, once with tarn_matrix_retile,
 * docs/linalg.md): X is copied back once the solve succeeded. Waiting calls
 * wait for their copies too; a product's copies are tasks of the caller's
 * region.
 *
 * Thread-safety: as tarn/matrix.h (calls on different matrices from any
 * threads; calls on one matrix ordered by the caller). */
#ifndef TARN_LINALG_H
#define TARN_LINALG_H

#include "tarn/export.h"
#include "tarn/matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether an operand is used as it is or transposed. */
typedef enum { TARN_NO_TRANS, TARN_TRANS } tarn_trans;

/* Which triangle of a matrix an operation reads. */
typedef enum { TARN_LOWER, TARN_UPPER } tarn_uplo;

/* Which side of a matrix an operator multiplies it from: op(Q) C
 * (TARN_LEFT) or C op(Q) (TARN_RIGHT). */
typedef enum { TARN_LEFT, TARN_RIGHT } tarn_side;

/* Whether a triangle's diagonal is read (TARN_NON_UNIT) or taken as all
 * ones and not read (TARN_UNIT: the L that tarn_matrix_lu leaves). */
typedef enum { TARN_NON_UNIT, TARN_UNIT } tarn_diag;

/* C = alpha op(A) op(B) + beta C, where op(X) is X or its transpose.
 *
 * op(A) is M x K and op(B) is K x N; their tilings must match: the tile
 * size of op(A) along K equals that of op(B) along K. When *c is NULL a new
 * M x N matrix is made there (tiles: op(A)'s along M by op(B)'s along N),
 * owned by the caller, and beta is ignored (treated as 0); otherwise *c
 * must have that shape and tiling and is updated in place. As in BLAS, a
 * beta of 0 does not read C (NaNs in it do not propagate), and an alpha of
 * 0 (or -0) reads neither A nor B: no product runs, C becomes beta C to
 * the bit (left as it is for beta 1; zeros for beta 0; zeros when made
 * here), whatever A and B hold or whether their writers failed. A and B
 * may be the same matrix; C may be neither.
 *
 * With tiles of 64 x 64 or less, on copies in work tiles ("Small tiles"
 * above). One task per C tile and K tile, in K order on each C tile (one tile
 * of A, B and C pinned at a time); when op(B) has one column, the tasks are
 * tarn_matrix_gemv's. When C has fewer tiles than twice the workers (on 2
 * workers or more) and K has 4 tiles or more, each C tile's K tiles go in
 * groups (2 or more each) side by side, about twice the workers' chains
 * in all (at most 64 groups; under a memory limit, only when their
 * temporaries fit as all of C would): the first group into C's tile, each
 * other into a temporary tile in the pool, then one task adds the
 * temporaries into C's tile (freeing them); the sums' order, and C's last
 * bits (the sign of an exact zero too), then depend on the workers.
 *
 * Submits and returns at once (results ordered as the runtime's rules
 * say). Returns 0; TARN_EINVAL for NULL arguments, a bad tarn_trans value,
 * shapes or tilings that do not match, matrices of different runtimes, C
 * the same as A or B, a tile too large for BLAS (over INT_MAX elements
 * along a side); TARN_ENOMEM, and so at once, C unchanged, under a memory
 * limit below one task's tiles (a tile of C, one of op(A) and one of
 * op(B), or one of A for both when A and B are the same matrix and the
 * task reads that tile twice). On failure a matrix made here is freed (*c
 * left NULL); tasks already submitted on a given C still run. */
TARN_API int tarn_matrix_gemm(tarn_matrix *a, tarn_trans ta, tarn_matrix *b,
                              tarn_trans tb, double alpha, double beta,
                              tarn_matrix **c);

/* y = alpha op(A) x + beta y, a matrix-vector product. x is a matrix of
 * one column whose tile rows match op(A)'s tiles along K. When *y is NULL
 * a new column is made there (tiles: op(A)'s along M), owned by the
 * caller, and beta is ignored (treated as 0); otherwise *y must be that
 * column and is updated in place. tarn_matrix_gemm(a, ta, x,
 * TARN_NO_TRANS, ...) is the same product.
 *
 * One task per tile of x and, unless y has two or three tiles but fewer
 * than the runtime has workers, per tile of y. With such a y, when a
 * layer's tiles of A take at most 8 MiB and, under a memory limit, such a
 * task's tiles (a layer of A, y and a tile of x, in the whole pages the
 * pool charges) at most an eighth of it, each task updates all of y,
 * and its dgemv calls are split with idle workers in lanes of interleaved
 * columns, so that every core reads the same tile of A at a time.
 * Otherwise, when y has fewer tiles than workers and x 4 tiles or more,
 * each tile of y's chain over x goes in groups side by side, summed into
 * y as tarn_matrix_gemm's groups are (under a limit only when a group's
 * task and the temporaries take an eighth of it). Each
 * tile of A is read once; a task pins at most three of them. With small
 * tiles (y's tile height times A's tile width under 65536: a tile's
 * dgemv costs about what a task does), a task takes instead a block of
 * tiles of y and of x, up to 32 tiles of A (about 512K multiply-adds;
 * under a memory limit only when a block's tiles, with the temporaries
 * below, take at most an eighth of it), each of its tiles of y summed over
 * its tiles of x in order; blocks of x follow one another on a block of
 * y, and when the blocks of y are fewer than twice the workers and x has
 * 4 blocks or more, they go in groups side by side, summed into y as
 * tarn_matrix_gemm's groups are. Returns as tarn_matrix_gemm, and
 * TARN_EINVAL when x or a given *y has more than one column. */
TARN_API int tarn_matrix_gemv(tarn_matrix *a, tarn_trans ta, tarn_matrix *x,
                              double alpha, double beta, tarn_matrix **y);

/* Cholesky factorisation in place: the lower triangle of A (with its
 * diagonal) becomes L, lower triangular with a positive diagonal, such
 * that A = L L^T. Only the lower triangle of A is read; the strictly upper
 * triangle is left as it was. A must be square with square tiles (mb == nb
 * after clamping to the matrix).
 *
 * With tiles of 64 x 64 or less, on a copy in work tiles ("Small tiles" above;
 * not positive definite, A is then left as it was). Right-looking tiled
 * algorithm: for each tile column k, potrf on the
 * diagonal tile, trsm on the tiles below it, syrk and gemm on the trailing
 * matrix, with priorities that favour the critical path (potrf, then
 * trsm, then the updates of the next tile columns).
 *
 * Waits for the factorisation (in a region of its own), so it must not be
 * called from a task (TARN_EDEADLK). *info (when `info` is not NULL) gets
 * 0, or LAPACK's info: k > 0 when the leading minor of order k is not
 * positive definite (its pivot is <= 0, or a NaN: a NaN anywhere in the
 * lower triangle reaches the pivot of its row, as in LAPACK's dpotrf,
 * though OpenBLAS's own lets it through); then the call returns
 * TARN_EINVAL, the tasks after the failing one are cancelled, and the
 * content of A is unspecified.
 * Returns 0; TARN_EINVAL for a NULL or non-square matrix, non-square tiles
 * or tiles too large for LAPACK, and for a matrix that is not positive
 * definite (*info > 0); TARN_ECANCELED when a task submitted before to
 * write A failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime;
 * TARN_ENOMEM at once, A unchanged, under a memory limit below one task's
 * tiles (three from three tile columns on: the "Memory limit" above). */
TARN_API int tarn_matrix_cholesky(tarn_matrix *a, int *info);

/* Solves A X = B in place with the Cholesky factor L of A (A = L L^T, as
 * tarn_matrix_cholesky leaves it in the lower triangle; as LAPACK's
 * dpotrs): B (n x nrhs) becomes X. Only the lower triangle of `l` is read,
 * so several solves with one factor may run at once. By tiles, a copy Y
 * of B (a temporary of B's size, freed as its last task ends) gets the
 * forward solve L Y = B; the backward solve L^T X = Y then writes X into
 * B. A factor of one tile, or B of a few columns, goes in one task per
 * tile column of B instead ("Solves of few right-hand sides" above); a
 * wide B with a factor of few tile columns, in pieces ("Solves of many
 * right-hand sides in pieces" above). B must have the factor's row
 * tiling (B's mb equals its); its column
 * tiling is free.
 *
 * Waits (a region of its own; from a task: TARN_EDEADLK). *info (when not
 * NULL) gets 0, or k > 0 when L(k-1, k-1) is exactly zero (the forward
 * solve checks L's diagonal before the backward solve writes B); the call
 * then returns TARN_EINVAL with B unchanged. Returns 0; TARN_EINVAL for
 * NULL arguments, a non-square `l` or tiles, shapes or tilings that do
 * not match, `l` and B the same, different runtimes, a zero on L's
 * diagonal; TARN_ECANCELED when a task submitted before to write
 * `l` or B failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime
 * (memory or the spill disk failed, or a submission did). Then each tile of
 * B holds X, or its values before the call, or reads as TARN_ECANCELED
 * until written again (a tile whose task failed: tarn/rt.h, rule 4); no
 * tile holds anything else. TARN_ENOMEM at once, B unchanged, under a
 * memory limit below one task's tiles (by tiles: a diagonal tile of the
 * factor and two of B's, or a tile of the factor and two of B's first
 * tile column; the task of one tile column of B pins more, and is taken
 * only where it fits). */
TARN_API int tarn_matrix_cholesky_solve(tarn_matrix *l, tarn_matrix *b,
                                        int *info);

/* Solves op(T) X = B in place with a triangular T, as LAPACK's dtrtrs:
 * B (n x nrhs) becomes X. T is the lower or upper triangle (`uplo`) of
 * the n x n matrix `t`, or of the leading n x n block of an m x n `t`
 * with m > n, with its diagonal or (TARN_UNIT) with ones there, and op(T)
 * is T or its transpose (`trans`). Only that triangle of `t` is read (and
 * its diagonal only with TARN_NON_UNIT), so what tarn_matrix_cholesky (L:
 * TARN_LOWER), tarn_matrix_lu (L: TARN_LOWER with TARN_UNIT, U:
 * TARN_UPPER) and tarn_matrix_qr (R: TARN_UPPER, also of a tall matrix)
 * leave serves as it is, and several solves with one `t` may run at
 * once. `t` must have m >= n and square tiles (mb == nb after clamping to
 * the matrix), or one tile column whose first tile holds the block (mb >=
 * n: a tall matrix in row bands); B must have its row tiling (B's mb
 * equals its, clamped to n); B's column tiling is free.
 *
 * Tasks, in one region: with TARN_NON_UNIT, one task per diagonal tile
 * first checks it for an exact zero; after them, a copy Y of B (a
 * temporary of B's size, freed as its last task ends) gets the solve by
 * tiles, down the tile rows for L X = B and U^T X = B, up them for U X =
 * B and L^T X = B: a trsm solves each tile of X from Y's into B, and
 * gemm tasks update Y's tiles still to come with it. When `t` has one
 * tile column (so B has one tile row), or B a few columns, one task per
 * tile column of B instead ("Solves of few right-hand sides" above); a
 * wide B with a `t` of few tile columns, in pieces ("Solves of many
 * right-hand sides in pieces" above).
 *
 * Waits (a region of its own; from a task: TARN_EDEADLK). *info (when not
 * NULL) gets 0, or k > 0 when T(k-1, k-1) is exactly zero, the first such
 * (T is singular); the call then returns TARN_EINVAL with B unchanged.
 * NaNs and infinities are not looked for: they spread into X, as in
 * dtrtrs. Returns 0; TARN_EINVAL for NULL arguments, an unknown uplo,
 * trans or diag value, a `t` wider than tall or of other tiles, shapes
 * or tilings that do not match, `t` and B the same, different runtimes,
 * a zero on T's diagonal; TARN_ECANCELED when a task submitted before to write
 * `t` or B failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime, B's
 * tiles then as for tarn_matrix_cholesky_solve (and TARN_ENOMEM at once,
 * B unchanged, as there). */
TARN_API int tarn_matrix_triangular_solve(tarn_matrix *t, tarn_uplo uplo,
                                          tarn_trans trans, tarn_diag diag,
                                          tarn_matrix *b, int *info);

/* LU factorisation with partial pivoting in place, as LAPACK's dgetrf:
 * P A = L U for an M x N A (square or not), where L (M x min(M, N), unit
 * lower triangular or trapezoidal, its diagonal not stored) goes below
 * the diagonal of A and U (min(M, N) x N, upper triangular or
 * trapezoidal) on and above it (with tiles whose update multiplies at
 * most 64^3, on a copy in work tiles: "Small tiles" above). A's tiles must be
 * square (mb == nb after clamping to the matrix), unless A has one tile column
 * (N <= mb) or one tile row (M <= nb). piv (min(M, N) entries, owned by the
 * caller) gets the interchanges, 0-based: row i was interchanged with row
 * piv[i] >= i, in the order i = 0, 1, ... (tarn_matrix_permute_rows applies
 * them, npiv = min(M, N), to any matrix of M rows). Only a square A's factors
 * serve the solves, estimates, determinants and inverses below. A pivot whose
 * reciprocal overflows (below about 5.6e-309, subnormal) in a panel of one tile
 * gives infinities in L below it, and NaN where the entry there is 0, as
 * OpenBLAS's dgetrf (and LAPACKE_dgetrf on the whole matrix) does: it scales by
 * the reciprocal; a panel of several tiles divides, as netlib's dgetrf2
 * (docs/linalg.md).
 *
 * Right-looking tiled algorithm: for each of the first min(mt, nt) tile
 * columns k, one task factors
 * the whole tile column from its diagonal tile down, in place across its
 * tiles (from 129 columns on blocked by 64 columns, the next block
 * factored while idle workers update the columns beyond it; narrower, one
 * block; a block is one LAPACKE_dgetrf_work when the column is one tile,
 * else factored recursively as LAPACK's dgetrf2 over the tiles, its
 * columns one by one at the base, shared by tiles with idle workers in a
 * panel of 16384 rows or more; a narrow panel of one to three tiles and
 * 16384 rows or more goes by units of 4096 rows of its tiles, shared from
 * 32768 rows on), then for
 * every other tile column a task applies the panel's interchanges (to the
 * left columns too, as dgetrf does), trsm on the tiles right of the
 * diagonal tile and gemm on the trailing matrix; the panel has the
 * highest priority, then the work of the next tile columns. The panel
 * needs no workspace but its pivots: under a memory limit it pins its
 * tile column, (M - k mb) x nb doubles, and nothing beside it; so does
 * each task of its interchanges on another tile column; a trsm of the
 * updates pins two tiles (tiles (0, 0) and (0, 1) first: more than the
 * column of one tile row) and a gemm three (more than a column of two).
 * A limit below the first tile column or those tiles (what the pool
 * charges for them: each rounded up to whole pages) could never run
 * them: the call then returns TARN_ENOMEM at once, before any task, A
 * unchanged. Like every tile
 * kernel here, the panel shares its trailing updates with idle workers
 * (tarn_task_parallel_for), so a split product may round differently in
 * the last bits from one run to the next, as multithreaded LAPACK does.
 *
 * Waits for the factorisation (in a region of its own), so it must not be
 * called from a task (TARN_EDEADLK). *info (when `info` is not NULL) gets
 * 0, or LAPACK's info: k > 0 when U(k-1, k-1) (1-based U(k, k)) is
 * exactly zero (k <= min(M, N); a square A is then singular); the
 * factorisation is still completed
 * (A holds L and U, piv is filled, as dgetrf), and the call returns
 * TARN_EINVAL. Returns 0; TARN_EINVAL for a NULL matrix or piv,
 * non-square tiles (but for one tile row or column, above), sizes too
 * large for LAPACK, and an exactly zero pivot (*info > 0); TARN_ECANCELED
 * when a task submitted before to write A failed; TARN_ENOMEM, TARN_ENOSPC,
 * TARN_EIO from the runtime. */
TARN_API int tarn_matrix_lu(tarn_matrix *a, size_t *piv, int *info);

/* Solves op(A) X = B in place with the factors of a tarn_matrix_lu (as
 * LAPACK's dgetrs): B (n x nrhs) becomes X, op(A) being A (ta
 * TARN_NO_TRANS) or A^T (TARN_TRANS). `lu` holds L and U as
 * tarn_matrix_lu left them and piv (n entries, owned by the caller) its
 * interchanges; both are only read, so several solves with one
 * factorisation may run at once. A copy Y of B (a temporary of B's size,
 * freed as its last task ends) gets the interchanges and the forward
 * (unit L) solve by tiles; the backward (U) solve then writes X into B.
 * For A^T X = B (A^T = U^T L^T P): the forward solve with U^T on Y, the
 * backward solve with the unit L^T from Y into a second temporary W of
 * B's size, the interchanges in reverse order on W, then W copied into B
 * tile by tile (so a call that fails leaves each tile of B X or as it
 * was: twice B's size in temporaries, which spill as any tile under a
 * memory limit). When `lu` is one tile (so B has one tile row), or B
 * has a few columns, one task per tile column of B instead ("Solves of
 * few right-hand sides" above; on one tile, for one vector, it runs
 * dgetrs); a wide B with factors of few tile columns, in pieces ("Solves
 * of many right-hand sides in pieces" above).
 * B must have the factors' row tiling (B's mb equals theirs); its column
 * tiling is free.
 *
 * Waits (a region of its own; from a task: TARN_EDEADLK). *info (when not
 * NULL) gets 0, or k > 0 when U(k-1, k-1) is exactly zero (as
 * tarn_matrix_lu reports a singular A; the forward solve checks U's
 * diagonal before the backward solve writes B); the call then returns
 * TARN_EINVAL with B unchanged. Returns 0; TARN_EINVAL for NULL
 * arguments, an unknown ta, a non-square `lu` or tiles, shapes or tilings that
 * do not match, `lu` and B the same, different runtimes, a pivot piv[i] outside
 * [i, n) (checked before anything is submitted), a zero on U's diagonal;
 * TARN_ECANCELED when a task submitted before to write `lu` or B failed;
 * TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime, B's tiles then as
 * for tarn_matrix_cholesky_solve; TARN_ENOMEM at once, before any task,
 * under a memory limit below a tile column of B (the interchanges' tasks
 * pin one). */
TARN_API int tarn_matrix_lu_solve(tarn_matrix *lu, const size_t *piv,
                                  tarn_trans ta, tarn_matrix *b, int *info);

/* B = P B (trans TARN_NO_TRANS) or P^T B (TARN_TRANS) in place, P being
 * the permutation of the npiv row interchanges piv in the form
 * tarn_matrix_lu gives them (as LAPACK's dlaswp with k1 = 1, k2 = npiv):
 * row i with row piv[i] >= i, for i = 0, 1, ..., npiv - 1 in order, or in
 * reverse order for P^T. npiv is at most B's rows (an M x N LU's pivots:
 * min(M, N)); piv stays the caller's. With LU's factors (P A = L U), P B and
 * triangular solves with L (TARN_UNIT) and U make the solve of
 * tarn_matrix_lu_solve, and P^T (L U) gives A back. Any tiling of B; one
 * task per tile column of B (all its tiles at once), its interchanges
 * shared by columns with idle workers.
 *
 * Waits (a region of its own; from a task: TARN_EDEADLK). Returns 0;
 * TARN_EINVAL for a NULL B or piv, an unknown trans, tiles too large for
 * BLAS, npiv above B's rows, a pivot piv[i] outside [i, m) (checked
 * before anything is submitted, B unchanged); TARN_ECANCELED when a task
 * submitted before to write B failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO
 * from the runtime; TARN_ENOMEM at once, B unchanged, under a memory
 * limit below a tile column of B. */
TARN_API int tarn_matrix_permute_rows(tarn_matrix *b, const size_t *piv,
                                      size_t npiv, tarn_trans trans);

/* Solves A X = B in place: B (n x nrhs) becomes X. A is factored as by
 * tarn_matrix_lu, so A is overwritten by its factors L and U (the pivots
 * are kept internally and dropped). A copy Y of B (a temporary of B's
 * size, freed as its last task ends) gets each panel's interchanges and
 * forward (unit L) updates along with A's tile columns, so the forward
 * solve runs during the factorisation; the backward (U) solve by tiles
 * then writes X into B (with small tiles, on copies of A and B in work
 * tiles: "Small tiles" above). B must have A's row tiling (B's mb equals A's);
 * its column tiling is free. A and B must be different matrices of one
 * runtime.
 *
 * Waits (one region of its own; from a task: TARN_EDEADLK). *info (when
 * not NULL) is as for tarn_matrix_lu; a singular A gives *info > 0 and
 * TARN_EINVAL with B left unchanged (A holds its factors). Returns 0;
 * TARN_EINVAL for NULL arguments, shapes or tilings that do not match,
 * A and B the same, different runtimes, a singular A; TARN_ECANCELED,
 * TARN_ENOMEM, TARN_ENOSPC, TARN_EIO as tarn_matrix_lu (TARN_ENOMEM at
 * once, A and B unchanged, under a limit below LU's largest task or a
 * tile column of B). */
TARN_API int tarn_matrix_solve(tarn_matrix *a, tarn_matrix *b, int *info);

/* ---- condition estimates ---------------------------------------------
 *
 * How far a solve with factors made before can be trusted: an estimate
 * of the reciprocal condition number rcond = 1 / (||A|| ||A^-1||) in the
 * one-norm or the infinity-norm, as LAPACK's dgecon, dpocon and dtrcon. A
 * solution's relative error is at most about eps / rcond; rcond near
 * eps (2.2e-16) or below means A is singular to working precision.
 * ||A^-1|| is estimated as LAPACK does (Hager's and Higham's method,
 * through LAPACK's dlacn2): from at most eleven tiled solves of one
 * column with the factors, O(n^2) work each, against the factorisation's
 * O(n^3). The estimate is a lower bound of ||A^-1|| that is almost always
 * within a factor of 3 of it, so rcond is rarely more than 3 times too
 * large, never too small.
 *
 * The factors are only read (several estimates, and solves, with one
 * factorisation may run at once). Each call waits (regions of its own;
 * from a task: TARN_EDEADLK). *rcond is 0 when a factor has an exact zero
 * on its diagonal, and when a product with A^-1 overflows or meets a NaN
 * in the factors (LAPACK scales its solves against overflow; these do
 * not, and report 0, "singular to working precision", instead). It is
 * set only when the call returns 0. Each returns 0; TARN_EINVAL for NULL
 * arguments, a factor that is not square or not in square tiles, and the
 * other bad input named below; TARN_ECANCELED when a task submitted
 * before to write the factor failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO
 * from the runtime. */

/* rcond of A from its LU factors and pivots (tarn_matrix_lu's), in the
 * one-norm (kind TARN_NORM_ONE) or the infinity-norm (TARN_NORM_INF).
 * anorm is that norm of A itself, taken before the factorisation
 * overwrote it (tarn_matrix_norm). anorm 0 gives rcond 0. TARN_EINVAL
 * also for another kind, an anorm that is negative, infinite or a NaN,
 * and a pivot piv[i] outside [i, n). */
TARN_API int tarn_matrix_lu_rcond(tarn_matrix *lu, const size_t *piv,
                                  tarn_norm kind, double anorm, double *rcond);

/* rcond of a symmetric positive definite A from its Cholesky factor
 * (tarn_matrix_cholesky's lower triangle), in the one-norm, which is the
 * infinity-norm of a symmetric matrix. anorm as for tarn_matrix_lu_rcond:
 * ||A||_1 taken before the factorisation. */
TARN_API int tarn_matrix_cholesky_rcond(tarn_matrix *l, double anorm,
                                        double *rcond);

/* rcond of the triangular matrix T: the lower or upper triangle of `t`
 * (of its leading n x n block when `t` is m x n with m > n), with its own
 * diagonal or a unit one (as tarn_matrix_triangular_solve, which reads
 * the same elements and no others), in the one-norm or the infinity-norm
 * (kind). ||T|| is computed here (as dlantr), by tiles that hold a part
 * of the triangle. A NaN or infinite element of T gives rcond 0. On the
 * factor of tarn_matrix_qr (TARN_UPPER, TARN_NON_UNIT), this is the
 * condition of R, and so of the least-squares problem's A (R's singular
 * values are A's). TARN_EINVAL also for a `t` wider than tall or of
 * other tiles (as for tarn_matrix_triangular_solve), an unknown uplo,
 * diag or kind. */
TARN_API int tarn_matrix_triangular_rcond(tarn_matrix *t, tarn_uplo uplo,
                                          tarn_diag diag, tarn_norm kind,
                                          double *rcond);

/* ---- determinants ----------------------------------------------------
 *
 * det A from factors made before, as log|det A| and its sign (NumPy's
 * slogdet): the product of a factor's diagonal over- or underflows a
 * double long before its logarithm does (a 300 x 300 diagonal of 1e-10
 * has det 1e-3000). One task per diagonal tile multiplies its elements as
 * a mantissa and a binary exponent (exact scaling, one logarithm at the
 * end); the result does not depend on the tiling's tasks' order or the
 * number of workers. The factor is only read. Each call waits (a region
 * of its own; from a task: TARN_EDEADLK) and sets its results only when it
 * returns 0; TARN_EINVAL for NULL arguments and a factor that is not
 * square or not in square tiles; TARN_ECANCELED when a task submitted
 * before to write the factor failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO
 * from the runtime. */

/* log|det A| into *logabsdet and the sign of det A (1 or -1) into *sign,
 * from the LU factors and pivots of tarn_matrix_lu (det A = (-1)^s
 * prod u_ii, s the number of rows interchanged). An exact zero on U's
 * diagonal (a singular A, as tarn_matrix_lu reports it) gives -infinity
 * and sign 0; an infinite element +infinity (with a zero as well, a
 * NaN); a NaN gives a NaN and sign 0. TARN_EINVAL also for a pivot
 * piv[i] outside [i, n). */
TARN_API int tarn_matrix_lu_logdet(tarn_matrix *lu, const size_t *piv,
                                   double *logabsdet, int *sign);

/* log det A = 2 sum log l_ii of a symmetric positive definite A into
 * *logdet, from its Cholesky factor (tarn_matrix_cholesky's lower
 * triangle; det A > 0). Zeros, infinities and NaNs on the diagonal as for
 * tarn_matrix_lu_logdet (a factor's diagonal is positive). */
TARN_API int tarn_matrix_cholesky_logdet(tarn_matrix *l, double *logdet);

/* ---- inverses ------------------------------------------------------------
 *
 * Explicit inverses in place, as LAPACK's dtrtri, dpotri and dgetri, by
 * PLASMA's tile algorithms (trsm, gemm, syrk, trmm and the LAPACK kernel
 * on tiles, each task holding at most three tiles but for getri's last
 * step, which holds one tile row). A solve with the factors
 * (tarn_matrix_lu_solve, tarn_matrix_cholesky_solve) is cheaper and more
 * accurate than multiplying by an inverse; take these when A^-1 itself is
 * wanted, as the covariance of a least-squares fit is.
 *
 * Each call first checks the diagonal it divides by for an exact zero (in
 * a region of its own): *info (when not NULL) then gets k > 0, the first
 * zero being T(k-1, k-1), and the call returns TARN_EINVAL with the matrix
 * unchanged. NaNs and infinities are not looked for; they spread, as in
 * LAPACK. Then the inverse's tasks run in a second region. Each call
 * waits (from a task: TARN_EDEADLK). Returns 0; TARN_EINVAL for NULL
 * arguments, a matrix not square or not in square tiles (but see
 * tarn_matrix_triangular_inverse), tiles too large for LAPACK, an unknown
 * enum value, a zero on the diagonal; TARN_ECANCELED when a task
 * submitted before to write the matrix failed; TARN_ENOMEM, TARN_ENOSPC,
 * TARN_EIO from the runtime, and then the matrix's content is unspecified
 * (a tile whose task failed reads as TARN_ECANCELED until written again,
 * tarn/rt.h, rule 4); but TARN_ENOMEM at once, before either region and
 * the matrix unchanged, under a memory limit below the largest task's
 * tiles (three, or the LU inverse's tile row, or its tile (0, 0) with a
 * temporary of that size: the "Memory limit" above;
 * tarn_matrix_inverse checks LU's and the inverse's before it factors). */

/* T^-1 over T in place, as dtrtri: T is the lower or upper triangle
 * (`uplo`) of `t`, with its diagonal or (TARN_UNIT) ones there (not read,
 * not written, and nothing is singular). The other triangle is neither
 * read nor written. `t` is square, or m x n with m > n and T in its
 * leading n x n block, with the tilings tarn_matrix_triangular_solve
 * takes, so the R of a tall tarn_matrix_qr is inverted in place (its
 * reflectors below R not read). */
TARN_API int tarn_matrix_triangular_inverse(tarn_matrix *t, tarn_uplo uplo,
                                            tarn_diag diag, int *info);

/* A^-1 in place from A's Cholesky factor L (the lower triangle of `l`,
 * as tarn_matrix_cholesky leaves it), as dpotri followed by the mirror:
 * L^-1 (trtri), A^-1 = L^-T L^-1 in the lower triangle (lauum), then the
 * lower triangle copied into the upper, so all of `l` holds the symmetric
 * A^-1. */
TARN_API int tarn_matrix_cholesky_inverse(tarn_matrix *l, int *info);

/* A^-1 in place from tarn_matrix_lu's factors and pivots, as dgetri:
 * U^-1 (trtri), then X L = U^-1 solved by tile columns from the right
 * (each tile column of L first goes to a temporary of the pool, freed as
 * its last task ends), then the columns interchanged as piv says, in
 * reverse order (one task per tile row). piv (n entries) stays the
 * caller's and is only read. TARN_EINVAL also for a pivot piv[i] outside
 * [i, n) (checked before anything is submitted); TARN_ENOMEM at once, the
 * factors unchanged, under a memory limit below a tile row of them or
 * the three tiles of a gemm (tiles (0, 0) and (0, 1) of the factors and
 * a temporary of tile (1, 0)'s size). */
TARN_API int tarn_matrix_lu_inverse(tarn_matrix *lu, const size_t *piv,
                                    int *info);

/* A^-1 in place of A, as NumPy's inv: tarn_matrix_lu (pivots kept
 * internally), then tarn_matrix_lu_inverse. A singular A (an exact zero
 * on U's diagonal) gives *info > 0, as tarn_matrix_lu reports it, and
 * TARN_EINVAL with A holding its LU factors (as tarn_matrix_solve leaves
 * it). Other failures as for tarn_matrix_lu and tarn_matrix_lu_inverse;
 * TARN_ENOMEM also when the pivots' n entries cannot be allocated. */
TARN_API int tarn_matrix_inverse(tarn_matrix *a, int *info);

/* (A^T A)^-1 from the factor `a` of tarn_matrix_qr (A M x N, M >= N, as
 * that call left it): A^T A = R^T R, so R^T is its Cholesky factor, and
 * (A^T A)^-1 = R^-1 R^-T; times the noise's variance, the covariance of
 * least-squares coefficients. *c gets a new N x N matrix in tiles of a's
 * column width (both triangles written), owned by the caller; `a` is only
 * read (R, on and above the diagonal of its top N rows; the reflectors
 * are not read). Tasks: R^T into c's lower triangle and the check of its
 * diagonal, then tarn_matrix_cholesky_inverse's. A zero on R's diagonal
 * (A rank deficient) gives TARN_EINVAL with *info its 1-based order and
 * *c NULL. Returns as the inverses above; TARN_EINVAL also for an `a`
 * QR does not take or a wide one (M < N), and a NULL c; on failure *c is
 * NULL. */
TARN_API int tarn_matrix_qr_ata_inverse(tarn_matrix *a, tarn_matrix **c,
                                        int *info);

/* Householder QR factorisation in place, in compact WY form (LAPACK's
 * dgeqrt): A = Q R with Q orthogonal, as the tile algorithm of PLASMA and
 * Chameleon. A is M x N with M, N >= 1 (square, tall or wide), and its
 * tiles are square (mb == nb after clamping to the matrix), or it has one
 * tile column no wider than its tiles are tall (N <= mb), or one tile row
 * no taller than they are wide (M <= nb). R (min(M, N) x N, upper
 * triangular, or trapezoidal when M < N) goes on and above the diagonal
 * of A's top min(M, N) rows; below the diagonal A holds the Householder
 * vectors: those of each diagonal tile below its diagonal (unit diagonal
 * not stored), those of each tile folded into another tile's R in that
 * whole tile, and those of a head merged into another head (below) on
 * and above the head's diagonal, its own below it; or, in the gathered
 * layout (below), those of each domain below the diagonal of all its
 * rows.
 *
 * ib is the inner block size (1 <= ib <= nb; 0 picks min(16, nb) for
 * an A at least 16 times as tall as wide, M >= 16 N, whose work is
 * mostly its panels', else min(32, nb)). *t
 * gets a new matrix, owned by the caller (free it with
 * tarn_matrix_destroy), that holds the triangular block reflector factors
 * needed to apply Q: it is ((mt + f - 1) ib) x N with tiles of ib x nb,
 * where mt is A's number of tile rows and f the fan of the trees below (1
 * when no tile column has one). Its tile (i, k), i < mt, holds the T of
 * tile (i, k) of A (dgeqrt's for the diagonal tile and the heads, dtpqrt's
 * for the others; ib x cols, leading dimension ib, zeros elsewhere);
 * tiles with i < k are zero; tile (mt + d - 1, k) holds the T of the merge
 * of tile column k's domain d. In the gathered layout (A's tiles 64 rows
 * high or less, two tile rows or more, below) T is ((2 f - 1) ib) x N
 * instead (2 f - 1 < mt): tile (d, k) holds the T of tile column k's
 * domain d (dgeqrt's on the domain's rows), tile (f + d - 1, k) that of
 * its merge. Pass it with A to tarn_matrix_qr_q, tarn_matrix_qr_solve or
 * tarn_matrix_qr_multiply: they read the tree and the layout from T's
 * shape, so factors saved and read back into a runtime of other workers,
 * or of another memory limit, apply the same way.
 *
 * Tasks, for each of the first min(mt, nt) tile columns k (those with a
 * diagonal tile; in a wide A the last one may be wider than tall, and
 * holds min(M, N) - k nb reflectors): geqrt on the diagonal tile, gemqrt
 * on the tiles right of it, tpqrt of each tile below against the diagonal
 * tile's R, and tpmqrt on the pairs of tiles of the trailing columns (a
 * flat tree); the panel (geqrt, tpqrt) has the highest priority, then the
 * next tile columns. A tall tile column whose chain of tpqrts would leave
 * workers idle (on 2 workers or more: 4 tiles and 2048 rows or more from
 * the diagonal down, at least 4 times the tile columns from k on, and
 * those no more than the workers) is reduced by a tree instead: cut into f
 * domains of consecutive tiles (f the workers, at most 64; domains of 2
 * tiles or more; a short last tile is never a domain's first), each
 * reduced flat into its first tile (its head: geqrt, then tpqrt of the
 * others) side by side, then the heads' R merged pairwise, a binary tree,
 * into the diagonal tile (tpqrt of a triangle on a triangle); the same
 * flops. Short tiles (64 rows or fewer), where the tpqrt and tpmqrt of
 * each tile are a few level-2 calls per column on vectors of a tile's
 * height, slower than their arithmetic: each domain (the whole tile
 * column when it has no tree) is gathered, one task copying its tiles
 * into one block of its memory and factoring it there as dgeqrt does
 * (the gathered layout), and its reflectors are applied to each tile
 * column right of it by one task on that column's tiles over the same
 * rows, gathered too (dgemqrt); where every domain's copy takes at most
 * 1 MiB and, under a memory limit, the largest such task (a domain's
 * tiles and another tile column's over its rows, with a T tile) takes at
 * most an eighth of it, with the workers' fan or else the first larger
 * one, up to 64, whose trees cut the domains down to that (T's f), and
 * 2 f - 1 < mt: else the flat layout, whose bits
 * under a limit are those of a run without one that keeps it too (the
 * two layouts' R differ in the last bits, as two orders of the same sums
 * do). A tall, narrow
 * tile of a flat tile column (16384 rows or
 * more, 2 to 128 columns, on 2 workers or more) is factored
 * recursively instead of by dgeqrt or dtpqrt (and its Q applied by its
 * rows too, to a C of fewer than 128 columns from the left or rows from
 * the right), its products over rows shared
 * with idle workers by units of 4096 rows (the same T layout; the same bits
 * whatever the workers, from 2 on; dgeqrt's to the last bits).
 * Work arrays (ib x nb doubles) are taken from the task's scratch
 * memory. Every other kernel but the merges shares its updates by columns
 * with idle workers, so a split product may round differently in the last bits
 * from one run to the next, as multithreaded LAPACK does; and the factors
 * of a tall A depend on the workers (its R up to the signs of its rows,
 * and the product Q R, do not). Pass A and t to tarn_matrix_qr_solve for
 * least squares.
 *
 * Waits for the factorisation (in a region of its own), so it must not be
 * called from a task (TARN_EDEADLK). Returns 0; TARN_EINVAL for NULL
 * arguments, tiles that are not square (but for one tile row or column,
 * above), ib > nb, sizes too large for LAPACK; TARN_ECANCELED when a task
 * submitted before to write A failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from
 * the runtime. On failure *t is NULL and the content of A is unspecified,
 * but for TARN_ENOMEM at once, A unchanged, under a memory limit below one
 * task's tiles (tpmqrt's three and a T tile: the "Memory limit" above). */
TARN_API int tarn_matrix_qr(tarn_matrix *a, size_t ib, tarn_matrix **t);

/* The explicit thin Q (M x min(M, N), orthonormal columns) of a
 * factorisation by tarn_matrix_qr, from A (as that call left it) and its
 * T factors `t`: the reflectors applied to the first min(M, N) columns of
 * the identity (gemqrt
 * and tpmqrt tasks). *q gets a new matrix with A's tiling, owned by the
 * caller; A and t are only read. Then A's input equals Q R.
 *
 * Waits (a region of its own; from a task: TARN_EDEADLK). Returns 0;
 * TARN_EINVAL for NULL arguments, a matrix tarn_matrix_qr does not take,
 * a t whose shape or tiling is not the one tarn_matrix_qr makes for A,
 * different runtimes; TARN_ECANCELED, TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from
 * the runtime (then *q is NULL). */
TARN_API int tarn_matrix_qr_q(tarn_matrix *a, tarn_matrix *t, tarn_matrix **q);

/* LAPACK's dgels with the factors of A (M x N, M >= N) made by
 * tarn_matrix_qr: `a` as that call left it and its T factors `t`. With
 * ta TARN_NO_TRANS, the least-squares problem min ||A X - B||_2: B is M x
 * nrhs with A's row tiling (B's mb equals A's), and *x gets a new N x
 * nrhs matrix in tiles of A's column width by B's column width (for M ==
 * N, the solution of A X = B). With TARN_TRANS, the minimum-norm solution
 * of the underdetermined A^T X = B: B is N x nrhs in row tiles of A's
 * column width (B's mb equals A's nb), and *x gets a new M x nrhs matrix
 * with A's row tiling. B's column tiling is free. *x is owned by the
 * caller. A must have full rank. a, t and B are only read, so several
 * threads may solve with one factorisation at once.
 *
 * Tasks, in one region. Least squares: a copy Y of B (a temporary, freed
 * as its last task ends), Y = Q^T Y by gemqrt and tpmqrt on Y's tiles
 * (the reflectors in the order tarn_matrix_qr made them), then the
 * backward solve R X = Y (its first N rows) by trsm and gemm tiles into X.
 * Minimum norm: X = [B; 0], the forward solve R^T Y = B on X's first N
 * rows by trsm and gemm tiles, then X = Q X (the reflectors in reverse
 * order). Each trsm first checks its diagonal tile of R for an exact zero
 * (A is rank deficient); *info (when not NULL; else 0) then gets the
 * 1-based index of the first zero, as dtrtrs reports it, and the call
 * returns TARN_EINVAL with *x NULL. Nearly rank-deficient matrices are not
 * detected (as in dgels). With an A of no more tile columns than the
 * workers and a wide B of few tile columns, in pieces of B's columns as
 * the other solves ("Solves of many right-hand sides in pieces" above):
 * B's copy in pieces solved into an X in pieces, copied into *x.
 *
 * Waits (from a task: TARN_EDEADLK). Returns 0; TARN_EINVAL for NULL
 * arguments, a and t that tarn_matrix_qr did not make so (as for
 * tarn_matrix_qr_q), a wide A (M < N), an unknown ta, a B of other rows
 * or row tiles, B the
 * same as a or t, different runtimes, a zero on R's diagonal;
 * TARN_ECANCELED when a task submitted before to write a, t or B failed;
 * TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime. On failure *x is NULL.
 */
TARN_API int tarn_matrix_qr_solve(tarn_matrix *a, tarn_matrix *t, tarn_trans ta,
                                  tarn_matrix *b, tarn_matrix **x, int *info);

/* C = op(Q) C (side TARN_LEFT) or C = C op(Q) (TARN_RIGHT) in place, where
 * op(Q) is Q (trans TARN_NO_TRANS) or Q^T (TARN_TRANS) and Q is the whole
 * M x M orthogonal factor of a factorisation by tarn_matrix_qr (LAPACK's
 * dormqr): `a` as that call left it and its T factors `t`, only read.
 * From the left C is M x ncols with A's row tiling (C's mb equals A's)
 * and any column tiling; from the right C is nrows x M with A's row
 * tiling as its column tiling (C's nb equals A's mb) and any row tiling.
 * Q^T applied to B gives [R X; 0] + Q^T r for the least-squares solution X
 * and its residual r = B - A X, so the norm of its last M - N rows is the
 * residual's; Q applied to [I; 0] (min(M, N) columns) gives the thin Q of
 * tarn_matrix_qr_q. Q is never formed.
 *
 * Tasks: gemqrt and tpmqrt on C's tiles (on its tile columns from the
 * left, on its tile rows from the right), the reflectors in the order
 * tarn_matrix_qr made them for Q^T from the left and Q from the right, in
 * reverse for the others; each shared with idle workers by columns (from
 * the left) or rows (from the right), or by the reflectors' rows for a
 * tall tile's on fewer than 128 of them (tarn_matrix_qr), so a split may
 * round differently in the last bits from run to run, as in the
 * factorisation. Their work arrays come from the task's scratch memory.
 *
 * Submits and returns at once (results ordered as the runtime's rules
 * say). Returns 0; TARN_EINVAL for NULL arguments, a and t that
 * tarn_matrix_qr did not make so (as for tarn_matrix_qr_q), an unknown side
 * or trans, a C whose size or tiling along Q does not match, C the same
 * as a or t, different runtimes, tiles too large for BLAS; TARN_ENOMEM
 * (with nothing submitted, C unchanged, under a memory limit below one
 * task's tiles: tpmqrt's reflectors and T tile and two tiles of C, or
 * gemqrt's and one tile of C). On
 * failure tasks already submitted on C still run. Thread-safe as any
 * submission: several threads may apply one factorisation's Q to their
 * own matrices at once. */
TARN_API int tarn_matrix_qr_multiply(tarn_matrix *a, tarn_matrix *t,
                                     tarn_side side, tarn_trans trans,
                                     tarn_matrix *c);

/* C = A^T A, full (both triangles), N x N for an M x N matrix A. *c gets
 * a new matrix, owned by the caller, with tiles nb x nb (A's column
 * tiling); any tiling of A is taken (tiles whose update multiplies at most
 * 64^3, on a copy in work tiles: "Small tiles" above). Tasks: for each tile of
 * the lower half, syrk (diagonal tiles, lower triangle) or gemm over A's tile
 * rows in order, the last of which also mirrors its tile into the upper half (a
 * diagonal tile's upper triangle, or tile (j, i) from (i, j)); under a memory
 * limit that the lower half does not fit in, by blocks of it, then one task per
 * tile that mirrors it. A tall A whose C has fewer tiles than twice the workers
 * (on 2 workers or more) has each tile's updates cut into groups of A's tile
 * rows (2 or more each) run side by side, about twice the workers' chains in
 * all (at most 64 groups; under a memory limit, only when their temporaries and
 * a tile row of A per group fit in seven eighths of it): the first group into
 * the tile, each other into a temporary tile in the pool, then one task adds
 * the temporaries into the tile (freeing them) and mirrors it; so the sums'
 * order, and C's last bits, depend on the workers.
 *
 * Submits and returns at once (results ordered as the runtime's rules
 * say). Returns 0; TARN_EINVAL for NULL arguments or tiles too large for
 * BLAS; TARN_ENOMEM, and so at once under a memory limit below the
 * largest task's tiles (an update of C's tile (1, 0) with A's tiles (0,
 * 0) and (0, 1), or of C's tile (0, 0) with A's (0, 0), or the mirror of
 * C's tile (1, 0) into (0, 1)). On failure *c is NULL
 * (a matrix made here is freed; tasks already submitted still run). */
TARN_API int tarn_matrix_syrk_ata(tarn_matrix *a, tarn_matrix **c);

#ifdef __cplusplus
}
#endif

#endif
