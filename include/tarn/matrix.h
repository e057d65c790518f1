/* tarn/matrix.h: tiled matrices of doubles on the task runtime.
 *
 * An M x N matrix is cut into mb x nb tiles (the last row and column of
 * tiles may be smaller); each tile is a ref in the runtime's pool, stored
 * column-major with its own row count as leading dimension, so tiles can be
 * spilled and are pinned only while a task uses them. A tile's memory
 * arrives when it is first written.
 *
 * Operations submit one task per tile and return at once: the results are
 * ordered after everything submitted before them (the runtime's rules), so
 * a program chains operations without waiting. Calls that hand a value to
 * the caller (tarn_matrix_get, _to_buffer, _sum, _norm) wait for the tasks
 * they need (from inside a task they return TARN_EDEADLK). An operation
 * writes into *out when it is not NULL (same shape and tiling, else
 * TARN_EINVAL), else makes a new matrix there.
 *
 * Bad input gets a status and changes nothing: sizes of 0, a matrix of
 * another runtime, shapes or tilings that do not match, and, as far as
 * can be seen, a matrix already destroyed (reported on stderr while its
 * memory is not reused: docs/array.md, "Errors"). A tile size larger
 * than the matrix is clamped to the matrix.
 *
 * Memory limit: each task pins its tiles while it runs (an elementwise
 * operation's tile of each matrix, a matrix given twice once; a retile's
 * output tile and every tile of the input it overlaps). A limit that
 * cannot hold one task's tiles (each rounded up to whole pages, as the
 * pool charges them) could never run it: the operations check their
 * largest task first and return TARN_ENOMEM before any task, every
 * matrix unchanged and no new one made (a = a + b would otherwise lose a:
 * by the runtime's rule 4 a task that fails leaves what it was to write
 * cancelled).
 *
 * Thread-safety: calls on different matrices may run from any threads;
 * calls on one matrix are ordered by the caller (as tasks on shared refs
 * are ordered by submission). */
#ifndef TARN_MATRIX_H
#define TARN_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/export.h"
#include "tarn/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_matrix tarn_matrix;

/* A new M x N matrix of mb x nb tiles whose elements are all 0. It runs no
 * task and holds no memory until used: a tile's memory arrives, cleared,
 * with the first task that reads it, or uncleared with a first task that
 * only writes it (which writes it whole), so a matrix that a kernel will
 * fill costs one pass, not two, and nothing is spilled for it before.
 * Returns 0, TARN_EINVAL for a size of 0, TARN_ENOMEM (also when a tile's
 * bytes or the number of tiles cannot be counted in a size_t). */
TARN_API int tarn_matrix_zeros(tarn_rt *rt, size_t m, size_t n, size_t mb,
                               size_t nb, tarn_matrix **out);

/* A new matrix whose elements are all `value` (+0: as tarn_matrix_zeros,
 * no task). */
TARN_API int tarn_matrix_fill(tarn_rt *rt, size_t m, size_t n, size_t mb,
                              size_t nb, double value, tarn_matrix **out);

/* A new matrix of uniform random numbers in [0, 1): element (i, j) is a
 * hash of (seed, i, j), so the values do not depend on the tiling or the
 * number of workers. */
TARN_API int tarn_matrix_rand(tarn_rt *rt, size_t m, size_t n, size_t mb,
                              size_t nb, uint64_t seed, tarn_matrix **out);

/* A new matrix copied from the caller's column-major buffer (leading
 * dimension ld >= m). Waits until the copy is done: the buffer is free to
 * change when it returns. Returns 0; TARN_EINVAL for NULL, a size of 0, or
 * an ld below m or so large that the buffer would pass the end of the
 * address space; TARN_ENOMEM (also under a memory limit below one tile);
 * TARN_EDEADLK from a task. */
TARN_API int tarn_matrix_from_buffer(tarn_rt *rt, size_t m, size_t n, size_t mb,
                                     size_t nb, const double *buf, size_t ld,
                                     tarn_matrix **out);

/* Copies the matrix into the caller's column-major buffer (ld >= rows),
 * after every task submitted before on it. Waits. Returns 0; TARN_EINVAL
 * as tarn_matrix_from_buffer; TARN_ECANCELED when a task that was to write
 * the matrix failed (the tiles it left are not copied, the others are: the
 * buffer is then partly written); TARN_EIO when a tile cannot be read back
 * from the disk; TARN_ENOMEM (also under a memory limit below one tile);
 * TARN_EDEADLK from a task. */
TARN_API int tarn_matrix_to_buffer(tarn_matrix *a, double *buf, size_t ld);

/* ---- files ---------------------------------------------------------------
 *
 * Matrices go to and come from NumPy's .npy files (what numpy.save writes
 * and numpy.load reads), one task per band of tiles (those of a tile
 * column, or row, up to 32 MiB) reading or writing their elements in
 * place in the file: bands move in parallel, and a matrix larger than the
 * memory limit goes through the pool's limit like any other
 * (docs/array.md, "Files"). */

/* A new matrix of mb x nb tiles read from the .npy file `path`: a 2-D
 * array of shape (m, n), or a 1-D array (m,) read as an m x 1 matrix, of
 * float64 or float32 ('descr' '<f8', '>f8', '<f4' or '>f4'; a float32 is
 * read as the same number in a double), its elements in either order
 * ('fortran_order' True or False). Headers of format versions 1.0, 2.0
 * and 3.0 are read; bytes after the elements are ignored. Waits until
 * every tile is read (not from a task: TARN_EDEADLK); the file may change
 * once it returns. Returns 0 and *out; TARN_EINVAL for a NULL argument, a
 * tile size of 0, an array with a dimension of 0, or a path that is not a
 * regular file; TARN_ENOENT when the file does not exist; TARN_EACCES
 * when it may not be read; TARN_EFORMAT when it is not such an .npy file
 * (another format or element type, a header that does not parse, an array
 * of 0 or more than 2 dimensions, fewer bytes than the header says);
 * TARN_EIO when reading fails; TARN_ENOMEM (also for a tile larger than
 * the memory limit), TARN_ENOSPC from the runtime. On failure *out is
 * untouched and nothing is left behind. Thread-safe. */
TARN_API int tarn_matrix_from_file(tarn_rt *rt, const char *path, size_t mb,
                                   size_t nb, tarn_matrix **out);

/* A new matrix of mb x nb tiles over the .npy file `path` (the files
 * tarn_matrix_from_file reads), whose tiles are read from the file only
 * when a task first reads them, one tile at a time, instead of all at
 * once. Until a tile is written, the pool drops it when it needs room
 * (no spill write, no spill space) and reads it from the file again when
 * it is next used; a written tile is the matrix's own, spilled like any
 * other, and never reaches the file (tarn_matrix_to_file writes a file).
 * So a matrix larger than the memory limit costs only the reads of the
 * tiles a job uses, and tiles it never reads (the upper triangle, for a
 * Cholesky factorisation) are never read at all. The file is kept open
 * until the matrix is destroyed; renaming or replacing it (as
 * tarn_matrix_to_file does) changes nothing for the matrix, but it must
 * not be changed in place: each tile read checks the file's size and
 * modification time against those at this call, and fails with
 * TARN_ESTALE when they differ, so the operation reading it fails rather
 * than mix old elements with new. A read that fails (TARN_ESTALE,
 * TARN_EIO) fails the task that needed the tile, as any task failure
 * does (tarn/rt.h); the tile is left unread and a later use tries again.
 * Returns at once (no tile is read here): 0 and *out; the same errors as
 * tarn_matrix_from_file for the file and its header (and TARN_ENOMEM for
 * a tile larger than the memory limit). Thread-safe. */
TARN_API int tarn_matrix_open_file(tarn_rt *rt, const char *path, size_t mb,
                                   size_t nb, tarn_matrix **out);

/* A new m x n matrix of zeros, of mb x nb tiles, whose home is a new .npy
 * file that tarn_matrix_commit_file puts at `path` (the file
 * tarn_matrix_to_file writes: format 1.0, the host's float64, Fortran
 * order). Until then the file exists only under a temporary name beside
 * `path` (`path` + ".tarn-" + 16 hexadecimal digits), made here with its
 * whole size claimed on the disk where the file system can (a full disk
 * is then found now, not while tiles are stored). When the pool needs room, a
 * tile written since it was last stored goes to its place in that file, not to
 * the spill file, and is read back from there; so a result larger than the
 * memory limit is written to the disk once, where computing it and then saving
 * it with tarn_matrix_to_file writes it to the spill file, reads it back and
 * writes it again. Each stored tile's checksum is kept and checked when it
 * is read back (TARN_EIO when the bytes on the disk are not those
 * stored). Destroying the matrix without a commit removes the file. A
 * relative `path` is taken against the working directory at this call
 * (the commit and the removal find it wherever the program is then),
 * where its absolute name fits PATH_MAX.
 * Returns at once: 0 and *out; TARN_EINVAL for a NULL argument, an empty
 * path, a path that names a directory (as for tarn_matrix_to_file), a
 * size or tile size of 0, or more bytes than a file's size (an
 * off_t) holds;
 * TARN_ENOENT when the directory does not exist; TARN_EACCES when no file
 * may be made in it; TARN_ENOSPC when the disk (or a quota, or the file
 * size limit) cannot hold the file (the file size limit only where the
 * program ignores or catches SIGXFSZ, as for tarn_matrix_to_file); TARN_EIO;
 * TARN_ENOMEM (also for a tile larger than the memory limit). Thread-safe. */
TARN_API int tarn_matrix_create_file(tarn_rt *rt, const char *path, size_t m,
                                     size_t n, size_t mb, size_t nb,
                                     tarn_matrix **out);

/* Puts the file of a matrix made by tarn_matrix_create_file in place and
 * destroys the matrix: after every task submitted before that writes it,
 * stores the tiles the file does not hold yet (nothing is read back for
 * the others), flushes the file to the disk, renames it over `path` and
 * flushes the directory. On success `path` holds the whole matrix (an old
 * file there is replaced) and the matrix is gone, as after
 * tarn_matrix_destroy (open the file to use it again). On a failure before
 * the rename the matrix and its temporary file stay as they were: the
 * call may be made again, or the matrix saved elsewhere with
 * tarn_matrix_to_file. Waits (not from a task: TARN_EDEADLK). Returns 0;
 * TARN_EINVAL for NULL, a matrix not made by tarn_matrix_create_file, or
 * a `path` that is now a directory or a mount point (the rename fails:
 * the matrix stays);
 * TARN_ECANCELED when a task submitted before to write the matrix failed;
 * TARN_ENOSPC, TARN_EIO when storing or flushing fails; TARN_EACCES,
 * TARN_ENOENT when the rename fails; TARN_EIO when only the directory's
 * flush failed, after the rename (its open too, for want of a file
 * descriptor or of the right to read the directory: the file is then in
 * place and the matrix gone, so only TARN_EIO may mean that). Not
 * concurrently with other calls on the matrix. */
TARN_API int tarn_matrix_commit_file(tarn_matrix *a);

/* Writes the matrix, after every task submitted before on it, to the .npy
 * file `path`: format 1.0, shape (rows, cols), the host's float64 ('<f8'
 * on x86-64 and arm64), Fortran order, which numpy.load reads as the same
 * array. The file is written under a temporary name beside `path` (`path`
 * + ".tarn-" + 16 hexadecimal digits), its disk space claimed first where
 * the file system can, flushed to the disk, then renamed over `path`: on
 * success `path` holds the whole matrix, on failure it is as it was (an
 * old file there stays) and the temporary file is gone. A new file gets
 * mode 0666 less the umask; a symbolic link at `path` is replaced by the
 * file, not followed. Waits (not from a task: TARN_EDEADLK).
 * Returns 0; TARN_EINVAL for a NULL argument, an empty path or a path
 * that names a directory (one there, or a path ending in '/', "." or
 * "..": refused before anything is written) or a mount point; TARN_ENOENT when
 * the directory does not exist; TARN_EACCES when no new file may be made in it
 * (even where `path` itself may be written); TARN_ENOSPC when the disk, a quota
 * or the process's file size limit is reached (the last only where the program
 * ignores or catches SIGXFSZ: else the kernel stops the process, and the
 * temporary file stays; tarn leaves signal dispositions to the program);
 * TARN_EIO when writing or flushing fails (after the rename, only the
 * directory's flush can fail: the new file is then in place); TARN_ECANCELED
 * when a task submitted before to write the matrix failed; TARN_ENOMEM.
 * Thread-safe, as the other operations on a matrix. */
TARN_API int tarn_matrix_to_file(tarn_matrix *a, const char *path);

/* Element (i, j), after every task submitted before on it. Waits. Returns
 * 0; TARN_EINVAL when (i, j) is outside the matrix; as
 * tarn_matrix_to_buffer for its tile (TARN_ECANCELED when a task that was
 * to write it failed, TARN_EIO, TARN_ENOMEM, TARN_EDEADLK). */
TARN_API int tarn_matrix_get(tarn_matrix *a, size_t i, size_t j, double *v);

/* Frees the matrix: its tiles go as soon as the tasks using them end.
 * NULL is a no-op; a matrix destroyed already is reported on stderr and
 * not freed again, as long as its memory was not reused. Destroy a
 * matrix before its runtime: tarn_rt_destroy frees the tiles' refs with
 * its pool, and a matrix destroyed after it would release freed refs. */
TARN_API void tarn_matrix_destroy(tarn_matrix *a);

/* The matrix's rows and columns, and its tiles' rows (mb) and columns
 * (nb): the size of a full tile, not the number of tiles (the last tile
 * row or column may be smaller). 0 for a NULL matrix. Thread-safe. */
TARN_API size_t tarn_matrix_rows(const tarn_matrix *a);
TARN_API size_t tarn_matrix_cols(const tarn_matrix *a);
TARN_API size_t tarn_matrix_tile_rows(const tarn_matrix *a);
TARN_API size_t tarn_matrix_tile_cols(const tarn_matrix *a);

/* The matrix with another tiling (a copy). */
TARN_API int tarn_matrix_retile(tarn_matrix *a, size_t mb, size_t nb,
                                tarn_matrix **out);

/* *out = a + b (same shape and tiling: see tarn_matrix_retile). */
TARN_API int tarn_matrix_add(tarn_matrix *a, tarn_matrix *b, tarn_matrix **out);

/* *out = alpha * a + beta, elementwise. */
TARN_API int tarn_matrix_axpb(tarn_matrix *a, double alpha, double beta,
                              tarn_matrix **out);

/* *out = f(a), elementwise. `f` must be safe to call from any thread. */
TARN_API int tarn_matrix_map(tarn_matrix *a, double (*f)(double),
                             tarn_matrix **out);

/* *out = sin(a), elementwise, with a vectorised sin where the machine has
 * one (glibc's libmvec with AVX2: within 4 ulp of libm's sin, about five
 * times faster); elsewhere libm's sin. */
TARN_API int tarn_matrix_sin(tarn_matrix *a, tarn_matrix **out);

/* *out = a (a copy with a's tiling, bit for bit: -0 and NaN payloads
 * included). */
TARN_API int tarn_matrix_copy(tarn_matrix *a, tarn_matrix **out);

/* *out = the transpose of a (N x M, tiles nb x mb). */
TARN_API int tarn_matrix_transpose(tarn_matrix *a, tarn_matrix **out);

/* ---- user kernels over several matrices ---------------------------------
 *
 * tarn_matrix_apply runs one kernel over the same tile of several matrices
 * in one task per tile, so a sequence of elementwise statements (A = 1,
 * then B = 2 A) is one pass over memory instead of one per statement. */

/* The maximum number of matrices of one tarn_matrix_apply. */
#define TARN_MATRIX_APPLY_MAX 16

/* A block of columns of one tile position, handed to a tarn_block_fn:
 * data[i] is matrix i's block, column-major with leading dimension ld
 * (the tile's rows), `rows` x `cols` elements; its element (p, q) is the
 * matrix element (row + p, col + q). */
typedef struct tarn_block {
  double *const *data;
  size_t ld;
  size_t rows, cols;
  size_t row, col;
} tarn_block;

/* A user kernel: reads the blocks of the matrices given TARN_READ or
 * TARN_READ_WRITE and writes every element of the blocks of those given
 * TARN_WRITE (their previous contents are undefined) or, as it likes, of
 * those given TARN_READ_WRITE. It must not write the blocks of matrices
 * given TARN_READ, nor keep any pointer. Runs on worker threads,
 * concurrently on other blocks (also of the same tile: a tile's columns
 * are shared with idle workers). Returns 0, or a nonzero status that
 * fails the tile's task (and cancels what depends on it). */
typedef int (*tarn_block_fn)(const tarn_block *block, void *arg);

/* For every tile position, one task that runs fn over the blocks, at that
 * position, of matrices[0..count-1] (same runtime, shape and tiling),
 * matrix i accessed with modes[i]. fn is called once or more per tile, on
 * column blocks that together cover the tile once. A matrix given twice
 * is one access (its modes combined), its block the same memory. `arg` is
 * passed to fn as is and must stay valid until the tasks are done: until
 * the wait of a region begun before the call, or a call that waits for
 * every tile of a matrix written (tarn_matrix_to_buffer, tarn_matrix_norm,
 * ...). A call that waits for part of a matrix does not wait for them
 * all: tarn_matrix_cholesky, for one, touches only the lower triangle's
 * tiles, so the tasks on the tiles above it may still run after it.
 * Returns 0; TARN_EINVAL for a NULL argument or matrix, a count of 0 or
 * above TARN_MATRIX_APPLY_MAX, an unknown mode, or matrices of different
 * runtimes, shapes or tilings (nothing is submitted then); TARN_ENOMEM.
 * Thread-safety as the other operations. */
TARN_API int tarn_matrix_apply(tarn_matrix *const *matrices,
                               const tarn_access *modes, size_t count,
                               tarn_block_fn fn, void *arg);

/* The sum of all elements. Each tile is summed in blocks of 128 with 8
 * accumulators, blocks pairwise, then the tile sums are combined in a
 * binary tree, so the rounding error grows with log2 of the element count,
 * not with the count: the result is within about (log2(M N) + 19) eps
 * sum|a_ij| of the exact sum. Waits (in a region of its own: not from a
 * task). Returns 0 and *sum; TARN_EINVAL for a NULL argument; TARN_EDEADLK
 * from a task; TARN_ECANCELED when a task submitted before to write A
 * failed; TARN_ENOMEM, TARN_ENOSPC, TARN_EIO from the runtime. */
TARN_API int tarn_matrix_sum(tarn_matrix *a, double *sum);

/* Which norm tarn_matrix_norm computes (LAPACK's dlange: 'F', '1', 'I',
 * 'M'). */
typedef enum {
  TARN_NORM_FRO, /* sqrt(sum a_ij^2), the Frobenius norm */
  TARN_NORM_ONE, /* max_j sum_i |a_ij|, the largest column sum */
  TARN_NORM_INF, /* max_i sum_j |a_ij|, the largest row sum */
  TARN_NORM_MAX  /* max |a_ij| (not a matrix norm) */
} tarn_norm;

/* A norm of `a` into *norm.
 *
 * TARN_NORM_FRO: per tile a sum of squares (scaled by the tile's largest
 * element when its squares could overflow or underflow), combined as for
 * tarn_matrix_sum with the scales reconciled; within about
 * (log2(M N) + 21) eps of the exact norm.
 * TARN_NORM_ONE, TARN_NORM_INF: each tile adds |a_ij| to the sums of its
 * columns (rows), the tiles of a tile column (row) in turn on one to
 * tarn_rt_workers lanes; within about (M + 8) eps (N + 8 for rows) of the
 * exact sum. They take that many lanes times N (M) doubles of the
 * caller's memory while they run, and each task pins a page beside its
 * tile (what orders a lane's tasks): under a memory limit below a tile
 * and a page, TARN_ENOMEM before any task.
 * TARN_NORM_MAX: exact.
 *
 * A NaN when an element is a NaN, else +infinity when one is infinite (as
 * LAPACK's dlange since 3.10). Waits, and returns, as tarn_matrix_sum;
 * TARN_EINVAL for an unknown kind. */
TARN_API int tarn_matrix_norm(tarn_matrix *a, tarn_norm kind, double *norm);

#ifdef __cplusplus
}
#endif

#endif
