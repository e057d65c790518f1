/* matrix_file.c: tiled matrices to and from .npy files (npy.h), one task
 * per tile, each reading or writing its own tile's elements at their
 * offsets in the file, so tiles are read and written in parallel and a
 * matrix larger than the memory limit passes through the pool like any
 * other (tiles spilled while others are read).
 *
 * Invariants: both calls wait for their tasks before they return, so the
 * jobs and the header they point to live on the caller's side; a file
 * being saved exists only under its temporary name until every tile is
 * in it and on the disk (prim's tarn__file_replace), so `path` holds the
 * old file or the whole new one, never a part. */
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "array/npy.h"
#include "prim/prim.h"
#include "tarn/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN true
#else
#define HOST_BIG_ENDIAN false
#endif

/* What one tile task needs: the file, what its header says, and the
 * tile's place. */
struct file_job {
  int fd;
  const tarn__npy *h;
  size_t rows, cols; /* of the tile */
  size_t row0, col0; /* its first element in the matrix */
};

/* A tile task's job and tile, shared by ranges of the tile's columns. */
struct file_share {
  const struct file_job *j;
  double *c;
};

/* Elements converted a buffer at a time when the file's are not the
 * host's doubles. */
#define CONVERT_ELEMENTS 8192

/* One element of the file as a double: float64 or float32, byte-swapped
 * when the file's order is not the host's. */
static double decode(const unsigned char *p, size_t item, bool swap) {
  if (item == 8) {
    uint64_t u;
    memcpy(&u, p, 8);
    if (swap) u = __builtin_bswap64(u);
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  uint32_t u;
  memcpy(&u, p, 4);
  if (swap) u = __builtin_bswap32(u);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Reads `count` runs of `len` elements from the file, run i starting at
 * element first + i * stride of the array, into dst: element e of run i
 * goes to dst[i * run_step + e * elem_step]. Returns 0, TARN_EFORMAT when
 * the file ends early (it shrank since its size was checked), or the
 * read's status. */
static int read_runs(const struct file_job *j, uint64_t first, size_t count,
                     size_t len, size_t stride, double *dst, size_t run_step,
                     size_t elem_step) {
  const tarn__npy *h = j->h;
  size_t item = h->item;
  bool swap = h->big_endian != HOST_BIG_ENDIAN;
  size_t got;
  if (item == 8 && !swap && elem_step == 1) { /* straight into the tile */
    bool merged = len == stride && run_step == len;
    size_t runs = merged ? 1 : count, each = merged ? count * len : len;
    for (size_t i = 0; i < runs; i++) {
      uint64_t at = h->data_offset + (first + (uint64_t)i * stride) * 8;
      int rc =
          tarn__file_read_at(j->fd, dst + i * run_step, each * 8, at, &got);
      if (rc != 0) return rc;
      if (got != each * 8) return TARN_EFORMAT;
    }
    return 0;
  }
  unsigned char *buf = malloc(CONVERT_ELEMENTS * item);
  if (buf == NULL) return TARN_ENOMEM;
  int rc = 0;
  /* Runs that follow each other in the file are read together. */
  size_t per =
      len == stride && len < CONVERT_ELEMENTS ? CONVERT_ELEMENTS / len : 1;
  for (size_t i = 0; rc == 0 && i < count; i += per) {
    size_t runs = count - i < per ? count - i : per;
    size_t total = runs * len; /* elements from run i on, in file order */
    for (size_t e0 = 0; rc == 0 && e0 < total; e0 += CONVERT_ELEMENTS) {
      size_t n = total - e0 < CONVERT_ELEMENTS ? total - e0 : CONVERT_ELEMENTS;
      uint64_t at = h->data_offset + (first + (uint64_t)i * stride + e0) * item;
      rc = tarn__file_read_at(j->fd, buf, n * item, at, &got);
      if (rc == 0 && got != n * item) rc = TARN_EFORMAT;
      size_t run = i + e0 / len, pos = e0 % len;
      for (size_t e = 0; rc == 0 && e < n; e++) {
        dst[run * run_step + pos * elem_step] =
            decode(buf + e * item, item, swap);
        if (++pos == len) {
          pos = 0;
          run++;
        }
      }
    }
  }
  free(buf);
  return rc;
}

/* Reads columns [q0, q1) of the task's tile. */
static int read_columns(void *arg, size_t q0, size_t q1) {
  const struct file_share *s = arg;
  const struct file_job *j = s->j;
  const tarn__npy *h = j->h;
  double *dst = s->c + q0 * j->rows;
  if (h->fortran_order) /* runs are the tile's columns */
    return read_runs(j, (uint64_t)(j->col0 + q0) * h->rows + j->row0, q1 - q0,
                     j->rows, h->rows, dst, j->rows, 1);
  /* runs are the tile's rows, each cut to the range */
  return read_runs(j, (uint64_t)j->row0 * h->cols + j->col0 + q0, j->rows,
                   q1 - q0, h->cols, dst, 1, j->rows);
}

static int k_read_tile(tarn_task *t, void *arg) {
  const struct file_job *j = arg;
  struct file_share s = {j, tarn_task_data(t, 0)};
  return tarn__share_columns(t, j->rows, j->cols, read_columns, &s);
}

/* Writes columns [q0, q1) of the task's tile, in the file's order (the
 * host's doubles, Fortran order: a column is one run). */
static int write_columns(void *arg, size_t q0, size_t q1) {
  const struct file_share *s = arg;
  const struct file_job *j = s->j;
  const tarn__npy *h = j->h;
  bool whole = j->rows == h->rows; /* columns follow each other */
  size_t runs = whole ? 1 : q1 - q0,
         each = whole ? (q1 - q0) * j->rows : j->rows;
  for (size_t i = 0; i < runs; i++) {
    uint64_t first = (uint64_t)(j->col0 + q0 + i) * h->rows + j->row0;
    int rc = tarn__file_write_at(j->fd, s->c + (q0 + i) * j->rows, each * 8,
                                 h->data_offset + first * 8);
    if (rc != 0) return rc;
  }
  return 0;
}

static int k_write_tile(tarn_task *t, void *arg) {
  const struct file_job *j = arg;
  struct file_share s = {j, tarn_task_data(t, 0)};
  return tarn__share_columns(t, j->rows, j->cols, write_columns, &s);
}

/* Runs fn on every tile of `a` (access `mode`) against the file `fd` of
 * header `h`, in a region of its own, and waits. */
static int each_tile_of_file(tarn_matrix *a, tarn_task_fn fn, tarn_access mode,
                             int fd, const tarn__npy *h) {
  size_t tiles = a->mt * a->nt;
  struct file_job *jobs = malloc(tiles * sizeof *jobs);
  if (jobs == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    free(jobs);
    return rc;
  }
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++) {
      struct file_job *j = &jobs[ti + tj * a->mt];
      *j = (struct file_job){
          fd,         h,         tarn__tile_rows(a, ti), tarn__tile_cols(a, tj),
          ti * a->mb, tj * a->nb};
      tarn_dep dep = {tarn__tile(a, ti, tj), mode};
      tarn_task_desc d = {.fn = fn, .arg = j, .deps = &dep, .ndeps = 1};
      rc = tarn_task_submit(a->rt, &d);
    }
  int wrc = tarn_region_wait(region, NULL);
  free(jobs);
  return rc != 0 ? rc : wrc;
}

/* Reads and checks the header of the open file `fd` of `size` bytes. */
static int read_header(int fd, uint64_t size, tarn__npy *h) {
  unsigned char prefix[TARN__NPY_PREFIX];
  size_t got;
  int rc = tarn__file_read_at(fd, prefix, sizeof prefix, 0, &got);
  if (rc != 0) return rc;
  uint64_t end;
  rc = tarn__npy_header_end(prefix, got, &end);
  if (rc != 0) return rc;
  if (end > size) return TARN_EFORMAT;
  unsigned char *header = malloc((size_t)end);
  if (header == NULL) return TARN_ENOMEM;
  rc = tarn__file_read_at(fd, header, (size_t)end, 0, &got);
  if (rc == 0) rc = got == end ? tarn__npy_parse(header, got, h) : TARN_EFORMAT;
  free(header);
  if (rc == 0 && size - h->data_offset < h->data_bytes) rc = TARN_EFORMAT;
  return rc;
}

int tarn_matrix_from_file(tarn_rt *rt, const char *path, size_t mb, size_t nb,
                          tarn_matrix **out) {
  if (rt == NULL || path == NULL || out == NULL || mb == 0 || nb == 0)
    return TARN_EINVAL;
  int fd;
  uint64_t size;
  int rc = tarn__file_open_read(path, &fd, &size);
  if (rc != 0) return rc;
  tarn__npy h;
  tarn_matrix *a = NULL;
  rc = read_header(fd, size, &h);
  if (rc == 0) rc = tarn__matrix_new(rt, h.rows, h.cols, mb, nb, &a);
  if (rc == 0) rc = each_tile_of_file(a, k_read_tile, TARN_WRITE, fd, &h);
  tarn__file_close(fd);
  if (rc != 0) {
    tarn_matrix_destroy(a);
    return rc;
  }
  *out = a;
  return 0;
}

int tarn_matrix_to_file(tarn_matrix *a, const char *path) {
  if (a == NULL || path == NULL || path[0] == '\0') return TARN_EINVAL;
  if (a->m > UINT64_MAX / 8 / a->n) return TARN_EINVAL; /* no file holds it */
  unsigned char header[128];
  size_t hl =
      tarn__npy_format(header, sizeof header, a->m, a->n, HOST_BIG_ENDIAN);
  if (hl == 0) return TARN_EINVAL; /* cannot happen: 2 numbers fit */
  tarn__npy h = {.rows = a->m,
                 .cols = a->n,
                 .item = 8,
                 .big_endian = HOST_BIG_ENDIAN,
                 .fortran_order = true,
                 .data_offset = hl,
                 .data_bytes = (uint64_t)a->m * a->n * 8};
  tarn__file_replace r;
  int rc = tarn__file_replace_begin(path, &r);
  if (rc != 0) return rc;
  rc = tarn__file_reserve(r.fd, hl + h.data_bytes);
  if (rc == 0) rc = tarn__file_write_at(r.fd, header, hl, 0);
  if (rc == 0) rc = each_tile_of_file(a, k_write_tile, TARN_READ, r.fd, &h);
  if (rc != 0) {
    tarn__file_replace_abort(&r);
    return rc;
  }
  return tarn__file_replace_commit(&r);
}
