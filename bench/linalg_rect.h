/* linalg_rect.h: the linalg suite's rows for LU and QR of rectangular
 * matrices (linalg_rect.c), run after its square rows. */
#ifndef TARN_BENCH_LINALG_RECT_H
#define TARN_BENCH_LINALG_RECT_H

#include <stddef.h>

#include "bench.h"

struct tarn_rt;

/* Measures tarn_matrix_lu and tarn_matrix_qr of an n x n/8 and an n/8 x n
 * matrix (tiles of BENCH.md's size for n/8) against LAPACKE's dgetrf and
 * dgeqrf with one thread and the peers' threads, each checked first; the
 * rows --filter wants, on runtime `rt`. Returns 0, or 1 after printing
 * why (a failed check too). */
int linalg_rect_rows(bench_run *run, struct tarn_rt *rt, size_t n);

/* Reports a failed tarn_matrix_lu of a matrix of `rows` rows in tiles
 * `tile` wide; for TARN_ENOMEM, what a memory limit must hold (a panel
 * pins its tile column, tarn/linalg.h; an update three tiles). Returns
 * 1. */
int linalg_lu_failed(size_t rows, size_t tile, int status);

#endif
