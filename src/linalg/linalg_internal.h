/* linalg_internal.h: what the linalg layer's modules (linalg.c, lu.c,
 * qr.c) share: OpenBLAS set to one thread, BLAS-sized tiles, submitting a
 * tile task that owns a copy of its job, and task working memory. */
#ifndef TARN_LINALG_INTERNAL_H
#define TARN_LINALG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "array/matrix_internal.h"
#include "tarn/rt.h"

/* Sets OpenBLAS to one thread for the process, once. Thread-safe. */
void tarn__blas_init(void);

/* Whether every tile side of `a` fits a BLAS int. */
bool tarn__blas_sized(const tarn_matrix *a);

/* Submits `fn` with a malloc'ed copy of the `size` bytes at `proto` as its
 * argument (freed by the runtime when the task is done). Returns as
 * tarn_task_submit, or TARN_ENOMEM. */
int tarn__submit_owned(tarn_rt *rt, tarn_task_fn fn, const void *proto,
                       size_t size, const tarn_dep *deps, size_t ndeps,
                       int priority, const char *name);

/* Memory for a task: its worker's scratch, or the heap when the slab is
 * too small (*heap says which: free it then). NULL when neither has it. */
void *tarn__task_memory(tarn_task *t, size_t bytes, bool *heap);

#endif
