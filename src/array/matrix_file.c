/* matrix_file.c: tiled matrices to and from .npy files (npy.h), one task
 * per band of tiles (below), each reading or writing its tiles' elements
 * at their offsets in the file, so bands are read and written in parallel
 * and a matrix larger than the memory limit passes through the pool like
 * any other (tiles spilled while others are read). An opened matrix's
 * tiles are instead read when a task first uses them, by the pool's
 * sources (tarn_ref_create_from), from the file kept open, each with the
 * tiles of its band that tasks will use and the pool has room for.
 *
 * Invariants: from_file and to_file wait for their tasks before they
 * return, so the jobs and the header they point to live on the caller's
 * side; an opened file lives as long as a tile's source does (counted); a
 * file being saved exists only under its temporary name until every tile
 * is in it and on the disk (prim's tarn__file_replace), so `path` holds
 * the old file or the whole new one, never a part. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "array/npy.h"
#include "pool/checksum.h"
#include "pool/pool_internal.h"
#include "prim/prim.h"
#include "rt/rt_internal.h"
#include "tarn/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN true
#else
#define HOST_BIG_ENDIAN false
#endif

/* ---- bands of tiles -------------------------------------------------------
 *
 * A task reads or writes a band: up to BAND_MAX tiles side by side along
 * the file's order, the tiles of one tile column for a Fortran-order file
 * (its columns run down the matrix), of one tile row for a C-order one.
 * The file holds the band as `lines` (its columns, or its rows), each a
 * contiguous run of elements cut into one piece per tile; when the band
 * spans the matrix's whole height (width), its lines follow each other in
 * the file too. A tile alone would move a line piece at a time: 4 KiB a
 * call for tiles of 512, where a band of 8 moves 32 KiB, or, spanning the
 * matrix, up to IOV_BATCH (256) pieces in one preadv/pwritev. The band's
 * tiles are all pinned while its task runs, so a band holds at most
 * BAND_BYTES, and an eighth of the pool's memory limit. */

#define BAND_MAX 64
#define BAND_BYTES ((size_t)32 << 20)

/* Pieces (iovec entries) a call moves at most, on the task's stack. */
#define IOV_BATCH 256

/* Elements converted a buffer at a time when the file's are not the
 * host's doubles, or not in its order: whole lines in a buffer of
 * CONVERT_BYTES, or a longer line in pieces of CONVERT_ELEMENTS. */
#define CONVERT_BYTES ((size_t)512 << 10)
#define CONVERT_ELEMENTS 8192

/* One band task's job. */
struct band {
  int fd;
  const tarn__npy *h;
  bool fortran;           /* lines are columns (else rows) */
  size_t count;           /* tiles in the band */
  size_t piece[BAND_MAX]; /* each tile's share of a line, in elements */
  size_t line_len;        /* elements of a line: the pieces' sum */
  size_t lines;           /* the band's lines */
  size_t rows;            /* the tiles' rows (C order: all the same) */
  uint64_t first;         /* the array index of line 0's first element */
  uint64_t stride;        /* array elements from a line to the next */
  const tarn_matrix *a;   /* the matrix (NULL for a tile's band of one) */
  size_t across, t0;      /* tile k is tile t0 + k along tile line `across` */
  atomic_size_t *done;    /* a save's tiles written, per tile line */
};

/* A band task's job and its tiles' memory, shared by ranges of lines. */
struct band_share {
  const struct band *b;
  double *tile[BAND_MAX];
};

/* Where element `pos` of tile k's piece of line `line` lives. */
static double *in_tile(const struct band_share *s, size_t k, size_t pos,
                       size_t line) {
  const struct band *b = s->b;
  return b->fortran ? s->tile[k] + line * b->piece[k] + pos
                    : s->tile[k] + pos * b->rows + line;
}

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

/* Lines [l0, l1) of a Fortran-order band of the host's doubles, moved
 * straight between the tiles and the file: each call takes a line's
 * pieces, or several lines' when they follow each other in the file. */
static int move_lines_direct(const struct band_share *s, size_t l0, size_t l1,
                             bool write) {
  const struct band *b = s->b;
  struct iovec iov[IOV_BATCH];
  size_t per = b->line_len == b->stride ? IOV_BATCH / b->count : 1;
  for (size_t l = l0; l < l1; l += per) {
    size_t n = l1 - l < per ? l1 - l : per, used = 0, bytes = 0;
    for (size_t line = l; line < l + n; line++)
      for (size_t k = 0; k < b->count; k++) {
        iov[used++] = (struct iovec){in_tile(s, k, 0, line), b->piece[k] * 8};
        bytes += b->piece[k] * 8;
      }
    uint64_t at = b->h->data_offset + (b->first + l * b->stride) * 8;
    size_t got = bytes;
    int rc = write ? tarn__file_writev_at(b->fd, iov, used, at)
                   : tarn__file_readv_at(b->fd, iov, used, at, &got);
    if (rc != 0) return rc;
    if (got != bytes) return TARN_EFORMAT; /* the file shrank */
  }
  return 0;
}

/* Lines [l0, l1) read through a buffer and converted: float32, the other
 * byte order, or C order (a line's pieces strided in the tiles), element
 * by element: for lines too long for read_lines_blocked's buffer. */
static int read_lines_converted(const struct band_share *s, size_t l0,
                                size_t l1) {
  const struct band *b = s->b;
  size_t item = b->h->item;
  bool swap = b->h->big_endian != HOST_BIG_ENDIAN;
  unsigned char *buf = malloc(CONVERT_ELEMENTS * item);
  if (buf == NULL) return TARN_ENOMEM;
  int rc = 0;
  for (size_t line = l0; rc == 0 && line < l1; line++) {
    size_t k = 0, pos = 0;
    for (size_t e0 = 0; rc == 0 && e0 < b->line_len; e0 += CONVERT_ELEMENTS) {
      size_t n = b->line_len - e0 < CONVERT_ELEMENTS ? b->line_len - e0
                                                     : CONVERT_ELEMENTS;
      uint64_t at =
          b->h->data_offset + (b->first + line * b->stride + e0) * item;
      size_t got;
      rc = tarn__file_read_at(b->fd, buf, n * item, at, &got);
      if (rc == 0 && got != n * item) rc = TARN_EFORMAT; /* it shrank */
      for (size_t e = 0; rc == 0 && e < n; e++) {
        *in_tile(s, k, pos, line) = decode(buf + e * item, item, swap);
        if (++pos == b->piece[k]) {
          pos = 0;
          k++;
        }
      }
    }
  }
  free(buf);
  return rc;
}

/* Lines [l0, l1) read a block of whole lines at a time into a buffer of
 * CONVERT_BYTES, then converted tile by tile: in C order a tile's column
 * gets the block's elements of it together (a line's elements lie a tile
 * column apart in the tile: one at a time, every one would be a cache
 * miss). */
static int read_lines_blocked(const struct band_share *s, size_t l0,
                              size_t l1) {
  const struct band *b = s->b;
  size_t item = b->h->item, line_bytes = b->line_len * item;
  bool swap = b->h->big_endian != HOST_BIG_ENDIAN;
  size_t block = CONVERT_BYTES / line_bytes;
  unsigned char *buf = malloc(block * line_bytes);
  if (buf == NULL) return TARN_ENOMEM;
  bool together = b->line_len == b->stride; /* lines follow each other */
  int rc = 0;
  for (size_t l = l0; rc == 0 && l < l1; l += block) {
    size_t n = l1 - l < block ? l1 - l : block, got;
    for (size_t i = 0; rc == 0 && i < n; i += together ? n : 1) {
      size_t bytes = together ? n * line_bytes : line_bytes;
      uint64_t at = b->h->data_offset + (b->first + (l + i) * b->stride) * item;
      rc = tarn__file_read_at(b->fd, buf + i * line_bytes, bytes, at, &got);
      if (rc == 0 && got != bytes) rc = TARN_EFORMAT; /* it shrank */
    }
    const unsigned char *piece = buf;
    for (size_t k = 0; rc == 0 && k < b->count; k++) {
      if (b->fortran) { /* line i's piece is the tile's column l + i */
        for (size_t i = 0; i < n; i++) {
          double *dst = in_tile(s, k, 0, l + i);
          const unsigned char *src = piece + i * line_bytes;
          for (size_t q = 0; q < b->piece[k]; q++)
            dst[q] = decode(src + q * item, item, swap);
        }
      } else { /* element q of lines l .. l + n: column q's run */
        for (size_t q = 0; q < b->piece[k]; q++) {
          double *dst = in_tile(s, k, q, l);
          for (size_t i = 0; i < n; i++)
            dst[i] = decode(piece + i * line_bytes + q * item, item, swap);
        }
      }
      piece += b->piece[k] * item;
    }
  }
  free(buf);
  return rc;
}

static int read_lines(void *arg, size_t l0, size_t l1) {
  const struct band_share *s = arg;
  const tarn__npy *h = s->b->h;
  if (s->b->fortran && h->item == 8 && h->big_endian == HOST_BIG_ENDIAN)
    return move_lines_direct(s, l0, l1, false);
  if (s->b->line_len * h->item <= CONVERT_BYTES)
    return read_lines_blocked(s, l0, l1);
  return read_lines_converted(s, l0, l1);
}

/* A file being written is always the host's doubles in Fortran order. */
static int write_lines(void *arg, size_t l0, size_t l1) {
  return move_lines_direct(arg, l0, l1, true);
}

/* Runs `fn` over the band's lines, shared with idle workers. */
static int band_task(tarn_task *t, const struct band *b, tarn_range_fn fn) {
  struct band_share s = {.b = b};
  for (size_t k = 0; k < b->count; k++) s.tile[k] = tarn_task_data(t, k);
  return tarn__share_columns(t, b->line_len, b->lines, fn, &s);
}

static int k_read_band(tarn_task *t, void *arg) {
  return band_task(t, arg, read_lines);
}

/* Starts the disk's writing of tile column tj of a file being written
 * (the host's doubles in Fortran order, header h, tiles nb wide), one run
 * of the file, once all its tiles are in it: the disk's work then
 * overlaps what the tasks do next instead of all waiting for the flush at
 * the end. Only whole tile columns: written back piece by piece, a claimed
 * (fallocate) file's extents are split and converted a piece at a time,
 * which measured far slower than the one flush. */
static void column_writeback(int fd, const tarn__npy *h, size_t nb, size_t tj) {
  uint64_t cols = h->cols - tj * nb < nb ? h->cols - tj * nb : nb;
  tarn__file_start_writeback(fd, h->data_offset + tj * nb * h->rows * 8,
                             cols * h->rows * 8);
}

static int k_write_band(tarn_task *t, void *arg) {
  const struct band *b = arg;
  int rc = band_task(t, arg, write_lines);
  if (rc == 0 &&
      atomic_fetch_add(&b->done[b->across], b->count) + b->count == b->a->mt)
    column_writeback(b->fd, b->h, b->a->nb, b->across);
  return rc;
}

/* Tiles a band may hold: BAND_BYTES, an eighth of the memory limit (in
 * what the pool charges, whole pages a tile), at least one tile and at
 * most BAND_MAX. */
static size_t band_tiles(const tarn_matrix *a) {
  size_t budget = BAND_BYTES;
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  if (limit > 0 && limit / 8 < budget) budget = limit / 8;
  size_t k = budget / tarn__tile_charge(a);
  return k < 1 ? 1 : k > BAND_MAX ? BAND_MAX : k;
}

/* Band `t0 .. t0 + count` along tile column (Fortran) or row (C) `across`
 * of `a`, and its tiles' accesses in deps. */
static void band_of(const tarn_matrix *a, const tarn__npy *h, int fd,
                    size_t across, size_t t0, size_t count, tarn_access mode,
                    struct band *b, tarn_dep *deps) {
  bool fortran = h->fortran_order;
  *b = (struct band){.fd = fd,
                     .h = h,
                     .fortran = fortran,
                     .count = count,
                     .a = a,
                     .across = across,
                     .t0 = t0};
  for (size_t k = 0; k < count; k++) {
    size_t ti = fortran ? t0 + k : across, tj = fortran ? across : t0 + k;
    b->piece[k] = fortran ? tarn__tile_rows(a, ti) : tarn__tile_cols(a, tj);
    b->line_len += b->piece[k];
    deps[k] = (tarn_dep){tarn__tile(a, ti, tj), mode};
  }
  if (fortran) {
    b->lines = tarn__tile_cols(a, across);
    b->first = (uint64_t)across * a->nb * a->m + t0 * a->mb;
    b->stride = a->m;
  } else {
    b->lines = b->rows = tarn__tile_rows(a, across);
    b->first = (uint64_t)across * a->mb * a->n + t0 * a->nb;
    b->stride = a->n;
  }
}

/* The index in a->tiles of band b's tile q. */
static size_t band_tile_index(const struct band *b, size_t q) {
  size_t ti = b->fortran ? b->t0 + q : b->across;
  size_t tj = b->fortran ? b->across : b->t0 + q;
  return ti + tj * b->a->mt;
}

/* Runs fn on every band of `a` (its tiles accessed with `mode`) against
 * the file `fd` of header `h`, in a region of its own, and waits. */
static int each_band(tarn_matrix *a, tarn_task_fn fn, tarn_access mode, int fd,
                     const tarn__npy *h) {
  size_t along = h->fortran_order ? a->mt : a->nt;
  size_t across = h->fortran_order ? a->nt : a->mt;
  size_t per = band_tiles(a), per_line = (along + per - 1) / per;
  struct band *bands = malloc(across * per_line * sizeof *bands);
  atomic_size_t *done = calloc(across, sizeof *done);
  tarn_region *region = NULL;
  int rc = bands == NULL || done == NULL ? TARN_ENOMEM
                                         : tarn_region_begin(a->rt, &region);
  struct band *b = bands;
  for (size_t x = 0; rc == 0 && x < across; x++)
    for (size_t t0 = 0; rc == 0 && t0 < along; t0 += per, b++) {
      tarn_dep deps[BAND_MAX];
      size_t count = along - t0 < per ? along - t0 : per;
      band_of(a, h, fd, x, t0, count, mode, b, deps);
      b->done = done;
      tarn_task_desc d = {.fn = fn, .arg = b, .deps = deps, .ndeps = count};
      rc = tarn_task_submit(a->rt, &d);
    }
  int wrc = region != NULL ? tarn_region_wait(region, NULL) : 0;
  free(bands);
  free(done);
  return rc != 0 ? rc : wrc;
}

/* Reads and checks the header of the open file `fd` of `size` bytes. */
static int read_header(int fd, uint64_t size, tarn__npy *h) {
  /* A header takes at most TARN__NPY_HEADER_MAX bytes: one read holds it
   * (and tarn__npy_parse refuses one that ends past what was read). */
  size_t want =
      size < TARN__NPY_HEADER_MAX ? (size_t)size : TARN__NPY_HEADER_MAX;
  unsigned char *head = malloc(want > 0 ? want : 1);
  if (head == NULL) return TARN_ENOMEM;
  size_t got;
  int rc = tarn__file_read_at(fd, head, want, 0, &got);
  if (rc == 0) rc = tarn__npy_parse(head, got, h);
  free(head);
  if (rc == 0 && size - h->data_offset < h->data_bytes) rc = TARN_EFORMAT;
  return rc;
}

int tarn_matrix_from_file(tarn_rt *rt, const char *path, size_t mb, size_t nb,
                          tarn_matrix **out) {
  if (path == NULL || out == NULL || mb == 0 || nb == 0 || !tarn__rt_ok(rt))
    return TARN_EINVAL;
  int fd;
  uint64_t size;
  int rc = tarn__file_open_read(path, &fd, &size);
  if (rc != 0) return rc;
  tarn__npy h;
  tarn_matrix *a = NULL;
  rc = read_header(fd, size, &h);
  if (rc == 0) rc = tarn__matrix_new(rt, h.rows, h.cols, mb, nb, &a);
  if (rc == 0) rc = each_band(a, k_read_band, TARN_WRITE, fd, &h);
  tarn__file_close(fd);
  if (rc != 0) {
    tarn_matrix_destroy(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* ---- matrices opened over a file, or created in one ------------------------
 *
 * Each tile is a ref made from a source that reads the tile as a band
 * (read_lines), of one tile or, for an opened file, of it and the
 * neighbours the pool lets it fill (opened_read), so every format
 * from_file reads is read the same way.
 *
 * An opened file is the caller's: its stamp (size, modification time) is
 * taken when it is opened and checked before and after every read, so a
 * file changed in place fails the read with TARN_ESTALE rather than mix
 * old tiles with new ones.
 *
 * A created file is tarn's, under a temporary name until the commit: the
 * tiles' sources also write (tarn_source.write), so the pool stores a
 * written tile at its place in the file rather than in the spill file.
 * Each stored tile's checksum is kept and checked when it is read back:
 * bytes the disk lost (a failed write-back the kernel reported to no one)
 * fail the read with TARN_EIO instead of coming back wrong. */

struct backing_file {
  atomic_size_t users; /* tiles' sources, and the caller while it makes them */
  int fd;
  tarn__npy h;
  tarn__file_stamp stamp; /* at the open (opened files) */
  size_t mb, nb, mt;      /* the matrix's tiling */
  /* Created files: the temporary file (its name "" once the commit
   * renamed it into place or a destroy removed it; else the last user
   * removes it) and its path (copied), each tile's checksum once stored
   * (stored[k]). */
  tarn__file_replace *replace;
  char *path;
  uint64_t *sums;
  bool *stored;
  atomic_size_t *column_stored; /* tiles of tile column tj stored */
  /* Opened files: each tile's ref while it lives (NULL before it is made
   * and once its source is released), under tiles_lock: a tile's read
   * fills its band's neighbours too (tile_read). */
  pthread_mutex_t tiles_lock;
  tarn_ref **tiles;
};

struct tile_source {
  struct backing_file *file;
  size_t ti, tj;
};

static void backing_drop(struct backing_file *f) {
  if (atomic_fetch_sub(&f->users, 1) != 1) return;
  if (f->replace == NULL)
    tarn__file_close(f->fd);
  else /* removed unless committed (or removed) before: temp is "" then */
    tarn__file_replace_abort(f->replace);
  free(f->replace);
  free(f->path);
  free(f->sums);
  free(f->stored);
  free(f->column_stored);
  if (f->tiles != NULL) {
    pthread_mutex_destroy(&f->tiles_lock);
    free(f->tiles);
  }
  free(f);
}

/* TARN_ESTALE when the file's stamp is no longer the one at the open. */
static int backing_check(const struct backing_file *f) {
  tarn__file_stamp now;
  int rc = tarn__file_stamp_get(f->fd, &now);
  if (rc != 0) return rc;
  return now.size == f->stamp.size && now.mtime_ns == f->stamp.mtime_ns
             ? 0
             : TARN_ESTALE;
}

/* Tile k of a created file is no longer (or not yet) all in the file.
 * Called only while the tile's bytes are being stored: the pool stores a
 * ref once at a time, so stored[k] has one writer at a time. */
static void mark_unstored(struct backing_file *f, size_t k) {
  if (!f->stored[k]) return;
  f->stored[k] = false;
  atomic_fetch_sub(&f->column_stored[k / f->mt], 1);
}

/* Tile k of a created file, whose bytes are `tile`, is all in the file;
 * when that completes its tile column, the disk starts writing the
 * column. */
static void mark_stored(struct backing_file *f, size_t k, const void *tile,
                        size_t size) {
  f->sums[k] = tarn__checksum(tile, size);
  if (f->stored[k]) return;
  f->stored[k] = true;
  size_t tj = k / f->mt;
  if (atomic_fetch_add(&f->column_stored[tj], 1) + 1 == f->mt)
    column_writeback(f->fd, &f->h, f->nb, tj);
}

/* The neighbours a tile's read fills at most: as a band task holds. */
#define FILL_BYTES BAND_BYTES

/* Tile `at` along the band direction of tile `t` (its tile column in a
 * Fortran-order file, its tile row in a C-order one): its index in the
 * matrix's tiles, and its elements along a line (its piece). */
static size_t along_index(const struct tile_source *t, size_t at) {
  const struct backing_file *f = t->file;
  return f->h.fortran_order ? at + t->tj * f->mt : t->ti + at * f->mt;
}

static size_t along_piece(const struct tile_source *t, size_t at) {
  const struct backing_file *f = t->file;
  size_t total = f->h.fortran_order ? f->h.rows : f->h.cols;
  size_t step = f->h.fortran_order ? f->mb : f->nb;
  size_t left = total - at * step;
  return left < step ? left : step;
}

/* Tiles [lo, hi) along the band direction of `t`, with `t` among them:
 * each of the others is a neighbour whose ref the pool let this read fill
 * (tarn__ref_fill_begin: a task will use it, under a limit the runtime
 * asked for it to be read ahead, nobody reads it, and the pool has room
 * for it), as far as such neighbours follow one another from
 * `t`, within BAND_MAX tiles and FILL_BYTES. fill[k] is tile lo + k's
 * buffer (NULL for t); ref[k] its ref. */
static void fill_neighbours(const struct tile_source *t, size_t own, size_t *lo,
                            size_t *hi, tarn_ref **ref, void **fill) {
  struct backing_file *f = t->file;
  size_t count = f->h.fortran_order ? f->mt : (f->h.cols + f->nb - 1) / f->nb;
  size_t at = f->h.fortran_order ? t->ti : t->tj;
  size_t bytes = own;
  tarn_ref *up[BAND_MAX], *down[BAND_MAX];
  void *up_buf[BAND_MAX], *down_buf[BAND_MAX];
  size_t nup = 0, ndown = 0;
  pthread_mutex_lock(&f->tiles_lock);
  for (int dir = 0; dir < 2; dir++)
    for (size_t i = 1; 1 + nup + ndown < BAND_MAX; i++) {
      if (dir == 0 ? at + i >= count : i > at) break;
      size_t k = dir == 0 ? at + i : at - i;
      tarn_ref *r = f->tiles[along_index(t, k)];
      if (r == NULL || bytes >= FILL_BYTES ||
          tarn_ref_size(r) > FILL_BYTES - bytes)
        break;
      void *buf = tarn__ref_fill_begin(r);
      if (buf == NULL) break;
      bytes += tarn_ref_size(r);
      if (dir == 0) {
        up[nup] = r;
        up_buf[nup++] = buf;
      } else {
        down[ndown] = r;
        down_buf[ndown++] = buf;
      }
    }
  pthread_mutex_unlock(&f->tiles_lock);
  *lo = at - ndown;
  *hi = at + 1 + nup;
  size_t k = 0;
  for (size_t i = ndown; i-- > 0; k++) {
    ref[k] = down[i];
    fill[k] = down_buf[i];
  }
  ref[k] = NULL;
  fill[k++] = NULL;
  for (size_t i = 0; i < nup; i++, k++) {
    ref[k] = up[i];
    fill[k] = up_buf[i];
  }
}

/* The band of tiles [lo, hi) along the band direction of tile `t`, over
 * the memory in `tile` (tile lo + k at tile[k]). */
static void along_band(const struct tile_source *t, size_t lo, size_t hi,
                       double *const *tile, struct band *b,
                       struct band_share *s) {
  const struct backing_file *f = t->file;
  const tarn__npy *h = &f->h;
  *b = (struct band){
      .fd = f->fd, .h = h, .fortran = h->fortran_order, .count = hi - lo};
  for (size_t k = 0; k < b->count; k++) {
    b->piece[k] = along_piece(t, lo + k);
    b->line_len += b->piece[k];
  }
  if (b->fortran) {
    size_t cols = h->cols - t->tj * f->nb;
    b->lines = cols < f->nb ? cols : f->nb;
    b->first = (uint64_t)t->tj * f->nb * h->rows + lo * f->mb;
    b->stride = h->rows;
  } else {
    size_t rows = h->rows - t->ti * f->mb;
    b->lines = b->rows = rows < f->mb ? rows : f->mb;
    b->first = (uint64_t)t->ti * f->mb * h->cols + lo * f->nb;
    b->stride = h->cols;
  }
  *s = (struct band_share){.b = b};
  for (size_t k = 0; k < b->count; k++) s->tile[k] = tile[k];
}

/* The band of one that tile `t` is, over `tile`'s memory. */
static void tile_band(const struct tile_source *t, double *tile, struct band *b,
                      struct band_share *s) {
  size_t at = t->file->h.fortran_order ? t->ti : t->tj;
  along_band(t, at, at + 1, &tile, b, s);
}

/* An opened file's tile, with the neighbours along its band that tasks
 * will use, while the pool has room for them (fill_neighbours): a
 * tile alone moves a line piece per call (4 KiB for tiles of 512), its
 * band of 8 tiles 32 KiB, so a sum over a 4096 x 4096 file in 512 tiles
 * under a limit of a quarter of it made 8 times fewer calls. */
static int opened_read(const struct tile_source *t, void *dst, size_t size) {
  tarn_ref *ref[BAND_MAX];
  void *fill[BAND_MAX];
  double *tile[BAND_MAX];
  size_t lo, hi;
  fill_neighbours(t, size, &lo, &hi, ref, fill);
  for (size_t k = 0; k < hi - lo; k++)
    tile[k] = fill[k] != NULL ? fill[k] : dst;
  struct band b;
  struct band_share s;
  along_band(t, lo, hi, tile, &b, &s);
  int rc = backing_check(t->file);
  if (rc == 0) rc = read_lines(&s, 0, b.lines);
  if (rc == 0 || rc == TARN_EFORMAT) { /* EFORMAT: it shrank meanwhile */
    int now = backing_check(t->file);
    if (now != 0) rc = now;
  }
  for (size_t k = 0; k < hi - lo; k++)
    if (fill[k] != NULL) tarn__ref_fill_end(ref[k], fill[k], rc == 0);
  return rc;
}

static int tile_read(void *ctx, void *dst, size_t size) {
  const struct tile_source *t = ctx;
  const struct backing_file *f = t->file;
  if (f->replace == NULL) return opened_read(t, dst, size);
  /* created: the checksum tells */
  struct band b;
  struct band_share s;
  tile_band(t, dst, &b, &s);
  size_t k = t->ti + t->tj * f->mt;
  int rc = read_lines(&s, 0, b.lines);
  if (rc == 0 && f->stored[k] && tarn__checksum(dst, size) != f->sums[k])
    rc = TARN_EIO;
  return rc;
}

/* Stores a tile of a created file at its place (the host's doubles in
 * Fortran order, as written) and keeps its checksum. */
static int tile_write(void *ctx, const void *src, size_t size) {
  const struct tile_source *t = ctx;
  struct backing_file *f = t->file;
  size_t k = t->ti + t->tj * f->mt;
  struct band b;
  struct band_share s;
  tile_band(t, (double *)src, &b, &s); /* only read from: a write */
  mark_unstored(f, k);                 /* until the bytes are all there */
  int rc = move_lines_direct(&s, 0, b.lines, true);
  if (rc == 0) mark_stored(f, k, src, size);
  return rc;
}

static void tile_release(void *ctx) {
  struct tile_source *t = ctx;
  struct backing_file *f = t->file;
  if (f->tiles != NULL) { /* no fill takes it from here on */
    pthread_mutex_lock(&f->tiles_lock);
    f->tiles[t->ti + t->tj * f->mt] = NULL;
    pthread_mutex_unlock(&f->tiles_lock);
  }
  backing_drop(f);
  free(t);
}

/* Makes tile (ti, tj) of `a` (over `f`) a ref read from the file (and
 * stored in it, for a created file), in place of the empty one
 * tarn__matrix_new made. */
static int file_tile(tarn_matrix *a, struct backing_file *f, size_t ti,
                     size_t tj) {
  struct tile_source *t = malloc(sizeof *t);
  if (t == NULL) return TARN_ENOMEM;
  *t = (struct tile_source){f, ti, tj};
  tarn_source src = {.read = tile_read,
                     .release = tile_release,
                     .ctx = t,
                     .write = f->replace != NULL ? tile_write : NULL};
  tarn_ref **slot = &a->tiles[ti + tj * a->mt], *r = NULL;
  atomic_fetch_add(&f->users, 1);
  int rc =
      tarn_ref_create_from(tarn_rt_pool(a->rt), tarn_ref_size(*slot), &src, &r);
  if (rc != 0) {
    atomic_fetch_sub(&f->users, 1); /* the caller's use remains */
    free(t);
    return rc;
  }
  tarn_ref_release(*slot);
  *slot = r;
  if (f->tiles != NULL) {
    pthread_mutex_lock(&f->tiles_lock);
    f->tiles[ti + tj * f->mt] = r;
    pthread_mutex_unlock(&f->tiles_lock);
  }
  return 0;
}

/* The matrix of f's header over the file `f` (its fd and header set): a
 * new matrix whose tiles are sources of it. Drops the caller's use of
 * `f` (the tiles keep it). */
static int file_matrix(tarn_rt *rt, struct backing_file *f, size_t mb,
                       size_t nb, tarn_matrix **out) {
  tarn_matrix *a = NULL;
  int rc = tarn__matrix_new(rt, f->h.rows, f->h.cols, mb, nb, &a);
  /* no tile could ever be read: its charge, in whole pages (until
   * 2026-12-05 its bytes: a tile of 12800 bytes passed under a limit of
   * 14000, which its 16384 never fit, and each read failed) */
  if (rc == 0 && !tarn__task_fits(rt, tarn__tile_charge_at(a, 0, 0)))
    rc = TARN_ENOMEM;
  if (rc == 0) {
    a->in_file = true;
    f->mb = a->mb;
    f->nb = a->nb;
    f->mt = a->mt;
    if (f->replace != NULL) {
      f->sums = calloc(a->mt * a->nt, sizeof *f->sums);
      f->stored = calloc(a->mt * a->nt, sizeof *f->stored);
      f->column_stored = calloc(a->nt, sizeof *f->column_stored);
      if (f->sums == NULL || f->stored == NULL || f->column_stored == NULL)
        rc = TARN_ENOMEM;
      a->file = f;
    } else if ((f->tiles = calloc(a->mt * a->nt, sizeof *f->tiles)) == NULL ||
               pthread_mutex_init(&f->tiles_lock, NULL) != 0) {
      free(f->tiles);
      f->tiles = NULL;
      rc = TARN_ENOMEM;
    }
  }
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++)
      rc = file_tile(a, f, ti, tj);
  if (rc != 0) tarn_matrix_destroy(a);
  backing_drop(f);
  if (rc == 0) *out = a;
  return rc;
}

int tarn_matrix_open_file(tarn_rt *rt, const char *path, size_t mb, size_t nb,
                          tarn_matrix **out) {
  if (path == NULL || out == NULL || mb == 0 || nb == 0 || !tarn__rt_ok(rt))
    return TARN_EINVAL;
  struct backing_file *f = calloc(1, sizeof *f);
  if (f == NULL) return TARN_ENOMEM;
  atomic_init(&f->users, 1);
  uint64_t size;
  int rc = tarn__file_open_read(path, &f->fd, &size);
  if (rc != 0) {
    free(f);
    return rc;
  }
  rc = tarn__file_stamp_get(f->fd, &f->stamp);
  if (rc == 0) rc = read_header(f->fd, size, &f->h);
  if (rc != 0) {
    backing_drop(f);
    return rc;
  }
  return file_matrix(rt, f, mb, nb, out);
}

/* Whether a file can hold m x n doubles after a header: its size must fit
 * an off_t (a size past it wrapped: 2^61 - 1 rows of 1 "reserved" 120
 * bytes, and the commit left a header alone). 4096 is more than any
 * header tarn writes. */
static bool file_holds(size_t m, size_t n) {
  return m <= ((uint64_t)INT64_MAX - 4096) / 8 / n;
}

int tarn_matrix_create_file(tarn_rt *rt, const char *path, size_t m, size_t n,
                            size_t mb, size_t nb, tarn_matrix **out) {
  if (path == NULL || path[0] == '\0' || out == NULL || m == 0 || n == 0 ||
      mb == 0 || nb == 0 || !file_holds(m, n) || !tarn__rt_ok(rt))
    return TARN_EINVAL;
  struct backing_file *f = calloc(1, sizeof *f);
  if (f == NULL) return TARN_ENOMEM;
  atomic_init(&f->users, 1);
  /* absolute: the commit and a destroy's unlink come later, perhaps
   * after the program changed directory */
  int made = tarn__path_absolute(path, &f->path);
  f->replace = malloc(sizeof *f->replace);
  if (made != 0 || f->replace == NULL) {
    if (made == 0) free(f->path);
    free(f->replace);
    free(f);
    return made != 0 ? made : TARN_ENOMEM;
  }
  unsigned char header[128];
  size_t hl = tarn__npy_format(header, sizeof header, m, n, HOST_BIG_ENDIAN);
  f->h = (tarn__npy){.rows = m,
                     .cols = n,
                     .item = 8,
                     .big_endian = HOST_BIG_ENDIAN,
                     .fortran_order = true,
                     .data_offset = hl,
                     .data_bytes = (uint64_t)m * n * 8};
  int rc = tarn__file_replace_begin(f->path, f->replace);
  if (rc != 0) {
    f->replace->temp[0] = '\0'; /* nothing was made */
    f->replace->fd = -1;
    backing_drop(f);
    return rc;
  }
  f->fd = f->replace->fd;
  /* The whole file's space first: a full disk is found now, and a tile's
   * store later finds none (where the file system can claim space; else
   * a store may fail with TARN_ENOSPC, and the tile stays in memory).
   * Unwritten tiles read as zeros. */
  rc = tarn__file_reserve(f->fd, hl + f->h.data_bytes);
  if (rc == 0) rc = tarn__file_write_at(f->fd, header, hl, 0);
  if (rc != 0) {
    backing_drop(f);
    return rc;
  }
  return file_matrix(rt, f, mb, nb, out);
}

void tarn__matrix_file_forget(tarn_matrix *a) {
  struct backing_file *f = a->file;
  /* The tiles still hold f: no backing_drop runs meanwhile. A committed
   * file's temp is "" already. */
  tarn__file_replace_unlink(f->replace);
}

/* The commit's task for a band of a created file's tiles (accessed
 * TARN_AFTER: none is pinned or read back for it): the tiles the file
 * does not hold yet are stored, all of the band's lines in as few calls
 * as the file's layout allows when every tile needs it (a matrix never
 * pushed out of memory), else tile by tile. */
static int k_commit_band(tarn_task *t, void *arg) {
  (void)t;
  const struct band *b = arg;
  struct backing_file *f = b->a->file;
  tarn_ref *ref[BAND_MAX];
  void *data[BAND_MAX];
  size_t needed = 0, k = 0;
  int rc = 0;
  for (; k < b->count; k++) {
    ref[k] = b->a->tiles[band_tile_index(b, k)];
    data[k] = NULL;
    int r = tarn_ref_flush_begin(ref[k], &data[k]);
    if (r < 0) {
      rc = r;
      break;
    }
    needed += r == 1;
  }
  if (rc == 0 && needed == b->count) {
    struct band_share s = {.b = b};
    for (size_t q = 0; q < b->count; q++) {
      s.tile[q] = data[q];
      mark_unstored(f, band_tile_index(b, q)); /* until all are there */
    }
    rc = move_lines_direct(&s, 0, b->lines, true);
    for (size_t q = 0; rc == 0 && q < b->count; q++)
      mark_stored(f, band_tile_index(b, q), data[q], tarn_ref_size(ref[q]));
    for (size_t q = 0; q < b->count; q++) tarn_ref_flush_end(ref[q], rc);
    return rc;
  }
  for (size_t q = 0; q < k; q++) { /* the tiles begun, one by one */
    if (data[q] == NULL) continue;
    int r = rc;
    if (r == 0) {
      size_t at = band_tile_index(b, q);
      struct tile_source ts = {f, at % f->mt, at / f->mt};
      r = tile_write(&ts, data[q], tarn_ref_size(ref[q]));
      if (r != 0) rc = r;
    }
    tarn_ref_flush_end(ref[q], r);
  }
  return rc;
}

int tarn_matrix_commit_file(tarn_matrix *a) {
  if (!tarn__matrix_ok(a) || a->file == NULL) return TARN_EINVAL;
  struct backing_file *f = a->file;
  /* Every tile the file does not hold yet, stored once its writers are
   * done: a task per band, ordered after them without reading a tile. */
  int rc = each_band(a, k_commit_band, TARN_AFTER, f->fd, &f->h);
  if (rc == 0) rc = tarn__file_replace_publish(f->replace);
  if (f->replace->temp[0] != '\0') return rc; /* not in place: kept */
  tarn_matrix_destroy(a); /* in place, whatever the directory's flush said */
  return rc;
}

int tarn_matrix_to_file(tarn_matrix *a, const char *path) {
  if (!tarn__matrix_ok(a) || path == NULL || path[0] == '\0')
    return TARN_EINVAL;
  if (!file_holds(a->m, a->n)) return TARN_EINVAL;
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
  if (rc == 0) rc = each_band(a, k_write_band, TARN_READ, r.fd, &h);
  if (rc != 0) {
    tarn__file_replace_abort(&r);
    return rc;
  }
  return tarn__file_replace_commit(&r);
}
