/* matrix.c: tiled matrices of doubles and the operations on them, as tasks
 * over tiles (see tarn/matrix.h). Tile (ti, tj) is tiles[ti + tj * mt], a
 * ref of rows(ti) * cols(tj) doubles, column-major with ld = rows(ti).
 * Each task owns a small job struct (its argument, freed by the runtime
 * when the task is done); calls that return a value wait in a region of
 * their own. A task on a large tile shares ranges of its columns with idle
 * workers (tarn__share_columns, which stencil.c uses too). */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "array/matrix_internal.h"
#include "array/vmath.h"
#include "pool/pool_internal.h"
#include "prim/prim.h"
#include "rt/rt_internal.h"
#include "tarn/matrix.h"

size_t tarn__tile_rows(const tarn_matrix *a, size_t ti) {
  size_t left = a->m - ti * a->mb;
  return left < a->mb ? left : a->mb;
}

size_t tarn__tile_cols(const tarn_matrix *a, size_t tj) {
  size_t left = a->n - tj * a->nb;
  return left < a->nb ? left : a->nb;
}

size_t tarn__tile_charge(const tarn_matrix *a) {
  return tarn__page_round(a->mb * a->nb * sizeof(double));
}

size_t tarn__tile_charge_at(const tarn_matrix *a, size_t ti, size_t tj) {
  return tarn__page_round(tarn__tile_rows(a, ti) * tarn__tile_cols(a, tj) *
                          sizeof(double));
}

bool tarn__task_fits(tarn_rt *rt, size_t bytes) {
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(rt));
  return limit == 0 || bytes <= limit;
}

/* What the pool charges for the refs a task with these deps pins while
 * it runs: each ref once (the runtime merges a ref given twice), as the
 * pool counts it (tarn__ref_charge), TARN_AFTER accesses not at all. */
static size_t deps_charge(const tarn_dep *deps, size_t n) {
  size_t charge = 0;
  for (size_t k = 0; k < n; k++) {
    bool pinned_before = deps[k].mode == TARN_AFTER;
    for (size_t i = 0; i < k && !pinned_before; i++)
      pinned_before = deps[i].ref == deps[k].ref && deps[i].mode != TARN_AFTER;
    if (!pinned_before) charge += tarn__ref_charge(deps[k].ref);
  }
  return charge;
}

bool tarn__deps_fit(tarn_rt *rt, const tarn_dep *deps, size_t n) {
  return tarn_pool_mem_limit(tarn_rt_pool(rt)) == 0 ||
         tarn__task_fits(rt, deps_charge(deps, n));
}

tarn_ref *tarn__tile(const tarn_matrix *a, size_t ti, size_t tj) {
  return a->tiles[ti + tj * a->mt];
}

/* ---- making and freeing ------------------------------------------------- */

/* The dead word outlives the free (prim.h). */
_Static_assert(offsetof(struct tarn_matrix, magic) >= TARN__MAGIC_MIN_OFFSET,
               "the magic word must lie past what free writes");

bool tarn__matrix_ok(const tarn_matrix *a) {
  return a != NULL && tarn__magic_ok(a, a->magic, TARN__MATRIX_LIVE, "matrix",
                                     "tarn_matrix_destroy");
}

void tarn_matrix_destroy(tarn_matrix *a) {
  /* a second destroy, or a pointer that never held a matrix, frees
   * nothing (tarn__matrix_ok reports the first) */
  if (!tarn__matrix_ok(a)) return;
  if (a->file != NULL) tarn__matrix_file_forget(a);
  for (size_t k = 0; k < a->mt * a->nt; k++)
    if (a->tiles[k] != NULL) tarn_ref_release(a->tiles[k]);
  tarn__magic_free(a, &a->magic);
}

/* A matrix whose tiles have no memory yet: the struct and its table of
 * tiles in one allocation (a 256 x 1 matrix made and destroyed took 183
 * ns with two, 154 with one; see SPARE_REFS in src/pool/pool.c). */
int tarn__matrix_new(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                     tarn_matrix **out) {
  if (out == NULL || m == 0 || n == 0 || mb == 0 || nb == 0 || !tarn__rt_ok(rt))
    return TARN_EINVAL;
  mb = mb < m ? mb : m;
  nb = nb < n ? nb : n;
  /* not (m + mb - 1) / mb, which wrapped for m near SIZE_MAX: 0 tiles
   * (a matrix of no tiles read out of its table) or a division by 0 */
  size_t mt = m / mb + (m % mb != 0), nt = n / nb + (n % nb != 0);
  /* A tile's bytes, and the matrix with its table of tiles, must fit in a
   * size_t. */
  if (mb > SIZE_MAX / sizeof(double) / nb ||
      mt > (SIZE_MAX - sizeof(tarn_matrix)) / nt / sizeof(tarn_ref *))
    return TARN_ENOMEM;
  tarn_matrix *a = calloc(1, sizeof *a + mt * nt * sizeof(tarn_ref *));
  if (a == NULL) return TARN_ENOMEM;
  a->rt = rt;
  a->m = m;
  a->n = n;
  a->mb = mb;
  a->nb = nb;
  a->mt = mt;
  a->nt = nt;
  a->magic = tarn__magic_live(TARN__MATRIX_LIVE);
  tarn_pool *pool = tarn_rt_pool(rt);
  for (size_t tj = 0; tj < a->nt; tj++)
    for (size_t ti = 0; ti < a->mt; ti++) {
      size_t bytes =
          tarn__tile_rows(a, ti) * tarn__tile_cols(a, tj) * sizeof(double);
      if (tarn_ref_create(pool, bytes, &a->tiles[ti + tj * a->mt]) != 0) {
        tarn_matrix_destroy(a);
        return TARN_ENOMEM;
      }
    }
  *out = a;
  return 0;
}

/* Whether a's runtime, shape and tiling are b's (neither checked live). */
static bool layout_equal(const tarn_matrix *a, const tarn_matrix *b) {
  return a->rt == b->rt && a->m == b->m && a->n == b->n && a->mb == b->mb &&
         a->nb == b->nb;
}

bool tarn__matrix_same_layout(const tarn_matrix *a, const tarn_matrix *b) {
  return tarn__matrix_ok(a) && tarn__matrix_ok(b) && layout_equal(a, b);
}

/* The destination of an operation: *out when given (checked against the
 * layout it must have), else a new matrix. *made says which. */
int tarn__matrix_destination(tarn_rt *rt, size_t m, size_t n, size_t mb,
                             size_t nb, tarn_matrix **out, bool *made) {
  if (out == NULL) return TARN_EINVAL;
  *made = *out == NULL;
  if (*made) return tarn__matrix_new(rt, m, n, mb, nb, out);
  tarn_matrix want = {
      .rt = rt, .m = m, .n = n, .mb = mb < m ? mb : m, .nb = nb < n ? nb : n};
  return tarn__matrix_ok(*out) && layout_equal(*out, &want) ? 0 : TARN_EINVAL;
}

/* ---- tile jobs ------------------------------------------------------------
 */

struct partial;

/* What one tile task needs to know; owned by the task. */
struct job {
  size_t rows, cols; /* of the tile written (or read, for reductions) */
  size_t row0, col0; /* its first element in the matrix */
  size_t n;          /* matrix columns (for rand) */
  double alpha, beta;
  uint64_t seed;
  double (*f)(double);
  double *buf; /* the caller's buffer, for from/to_buffer */
  size_t ld;
  size_t i, j;   /* element, for get */
  double *out;   /* where get writes; the line sums a norm adds to */
  char part;     /* what a norm reads: 'F' all, 'L' or 'U' a triangle */
  bool unit;     /* ... and with its diagonal taken as ones */
  size_t ia, ib; /* task data slots of the operands (refs may repeat) */
  struct partial *partial; /* where a reduction's tile task writes */
};

void tarn__dep_slots(const tarn_dep *deps, size_t n, size_t *slots) {
  size_t next = 0;
  for (size_t i = 0; i < n; i++) {
    size_t h = 0;
    while (h < i && deps[h].ref != deps[i].ref) h++;
    slots[i] = h < i ? slots[h] : next++;
  }
}

size_t tarn__dep_slot(const tarn_dep *deps, size_t k) {
  size_t slot = 0;
  for (size_t i = 0; i < k; i++) {
    bool first = true;
    for (size_t h = 0; h < i; h++) first &= deps[h].ref != deps[i].ref;
    if (deps[i].ref == deps[k].ref) return slot;
    slot += first;
  }
  return slot;
}

static int submit_job(tarn_rt *rt, tarn_task_fn fn, const struct job *proto,
                      const tarn_dep *deps, size_t ndeps) {
  struct job *j = malloc(sizeof *j);
  if (j == NULL) return TARN_ENOMEM;
  *j = *proto;
  tarn_task_desc d = {
      .fn = fn, .arg = j, .deps = deps, .ndeps = ndeps, .arg_free = free};
  return tarn_task_submit(rt, &d);
}

static struct job job_for(const tarn_matrix *a, size_t ti, size_t tj) {
  struct job j;
  memset(&j, 0, sizeof j);
  j.rows = tarn__tile_rows(a, ti);
  j.cols = tarn__tile_cols(a, tj);
  j.row0 = ti * a->mb;
  j.col0 = tj * a->nb;
  j.n = a->n;
  return j;
}

/* Submits `fn` once per tile of `out`, writing it and reading the same tile
 * of `in` when `in` is not NULL. */
static int per_tile(tarn_matrix *out, tarn_matrix *in, tarn_task_fn fn,
                    const struct job *extra) {
  for (size_t tj = 0; tj < out->nt; tj++)
    for (size_t ti = 0; ti < out->mt; ti++) {
      struct job j = job_for(out, ti, tj);
      j.alpha = extra->alpha;
      j.beta = extra->beta;
      j.seed = extra->seed;
      j.f = extra->f;
      tarn_dep deps[2] = {{tarn__tile(out, ti, tj), TARN_WRITE},
                          {NULL, TARN_READ}};
      size_t nd = 1;
      if (in != NULL)
        deps[nd++] = (tarn_dep){tarn__tile(in, ti, tj), TARN_READ};
      j.ia = nd == 2 ? tarn__dep_slot(deps, 1) : 0;
      /* the first tiles are the largest: check them before any task */
      if (ti == 0 && tj == 0 && !tarn__deps_fit(out->rt, deps, nd))
        return TARN_ENOMEM;
      int rc = submit_job(out->rt, fn, &j, deps, nd);
      if (rc != 0) return rc;
    }
  return 0;
}

/* ---- sharing a tile's columns with idle workers ------------------------- */

/* Columns per range: at least this many elements, so that a range is
 * worth handing to another worker. */
#define SHARE_ELEMENTS 16384

void *tarn__task_memory(tarn_task *t, size_t bytes, bool *heap) {
  void *p = NULL;
  *heap = false;
  if (tarn_task_scratch(t, bytes, 64, &p) == 0) return p;
  *heap = true;
  return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

int tarn__share_columns(tarn_task *t, size_t rows, size_t cols,
                        tarn_range_fn fn, void *arg) {
  size_t grain = rows >= SHARE_ELEMENTS ? 1 : SHARE_ELEMENTS / rows;
  return tarn_task_parallel_for(t, cols, grain, fn, arg);
}

/* A tile task's operands, shared with idle workers by ranges of the
 * output tile's columns: a tile alone still uses every core. */
struct tile_share {
  const struct job *j;
  double *c;
  const double *a, *b;
};

/* Runs `range` over the columns of the task's output tile (slot 0), with
 * the inputs in slots j->ia and j->ib. */
static int split_columns(tarn_task *t, const struct job *j,
                         tarn_range_fn range) {
  struct tile_share s = {j, tarn_task_data(t, 0), tarn_task_data(t, j->ia),
                         tarn_task_data(t, j->ib)};
  return tarn__share_columns(t, j->rows, j->cols, range, &s);
}

/* In AVX2, 32-byte stores: on the AMD EPYC of 2026-12-07 one core filled
 * 256 KiB in its cache in 2.24 us against 4.47 in the baseline's 16-byte
 * stores, and `tarn bench stencil`'s N=256 assign went from 5.4 to 3.3 us
 * (docs/array.md, "Stencils"). Static: GCC 12 gives a function with
 * target_clones default visibility whatever -fvisibility says, and
 * libtarn.so exported tarn__fill and its resolver. */
TARN_HOT_CLONES static void fill_n(double *c, double value, size_t n) {
  for (size_t k = 0; k < n; k++) c[k] = value;
}

void tarn__fill(double *c, double value, size_t n) { fill_n(c, value, n); }

/* The elementwise ranges copy what they need from the job into locals, or
 * pass it to a hot loop as arguments: stores through c could otherwise
 * alias the job's doubles, which keeps the compiler from vectorising. Each
 * works on columns [q0, q1). */
static int fill_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows;
  tarn__fill(s->c + q0 * rows, s->j->beta, (q1 - q0) * rows);
  return 0;
}

static int k_fill(tarn_task *t, void *arg) {
  return split_columns(t, arg, fill_range);
}

/* splitmix64: a counter-based generator, one hash per element. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

static int rand_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  const struct job *j = s->j;
  double *c = s->c;
  uint64_t key = mix(j->seed);
  /* Element (i, j) is mix(mix(key ^ j) ^ i): a hash of (seed, i, j)
   * alone, as tarn/matrix.h says. Until 2026-12-03 it hashed the index i n
   * + j, so the values moved with the matrix's width n (a random test
   * found it); one more hash per column costs nothing per element. */
  for (size_t q = q0; q < q1; q++) {
    uint64_t column = mix(key ^ (uint64_t)(j->col0 + q));
    for (size_t p = 0; p < j->rows; p++)
      c[p + q * j->rows] =
          (double)(mix(column ^ (uint64_t)(j->row0 + p)) >> 11) * 0x1.0p-53;
  }
  return 0;
}

static int k_rand(tarn_task *t, void *arg) {
  return split_columns(t, arg, rand_range);
}

/* c = alpha a + beta over n elements (c may be a). */
TARN_HOT_CLONES static void axpb_n(double *c, const double *a, double alpha,
                                   double beta, size_t n) {
  for (size_t k = 0; k < n; k++) c[k] = alpha * a[k] + beta;
}

static int axpb_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows;
  axpb_n(s->c + q0 * rows, s->a + q0 * rows, s->j->alpha, s->j->beta,
         (q1 - q0) * rows);
  return 0;
}

static int k_axpb(tarn_task *t, void *arg) {
  return split_columns(t, arg, axpb_range);
}

static int map_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows;
  double (*f)(double) = s->j->f;
  for (size_t k = q0 * rows; k < q1 * rows; k++) s->c[k] = f(s->a[k]);
  return 0;
}

static int k_map(tarn_task *t, void *arg) {
  return split_columns(t, arg, map_range);
}

static int sin_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows;
  tarn__vsin(s->a + q0 * rows, s->c + q0 * rows, (q1 - q0) * rows);
  return 0;
}

static int k_sin(tarn_task *t, void *arg) {
  return split_columns(t, arg, sin_range);
}

/* c = a + b over n elements (c may be a or b). */
TARN_HOT_CLONES static void add_n(double *c, const double *a, const double *b,
                                  size_t n) {
  for (size_t k = 0; k < n; k++) c[k] = a[k] + b[k];
}

static int add_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t off = q0 * s->j->rows;
  add_n(s->c + off, s->a + off, s->b + off, (q1 - q0) * s->j->rows);
  return 0;
}

static int k_add(tarn_task *t, void *arg) {
  return split_columns(t, arg, add_range);
}

/* ---- making matrices ---------------------------------------------------- */

/* No task: a tile's ref reads as zeros at its first pin that reads (the
 * pool clears it then) and costs nothing before; a first pin that only
 * writes skips the clearing, and its task writes the whole tile. */
int tarn_matrix_zeros(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                      tarn_matrix **out) {
  if (out == NULL) return TARN_EINVAL;
  return tarn__matrix_new(rt, m, n, mb, nb, out);
}

/* Makes a matrix and fills each tile with `fn`; on failure nothing is
 * left. */
static int make_with(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                     tarn_task_fn fn, const struct job *extra,
                     tarn_matrix **out) {
  if (out == NULL) return TARN_EINVAL;
  tarn_matrix *a = NULL;
  int rc = tarn__matrix_new(rt, m, n, mb, nb, &a);
  if (rc == 0) rc = per_tile(a, NULL, fn, extra);
  if (rc != 0) {
    tarn_matrix_destroy(a);
    return rc;
  }
  *out = a;
  return 0;
}

int tarn_matrix_fill(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                     double value, tarn_matrix **out) {
  /* +0 is what an untouched tile reads as (not -0: its sign bit is set) */
  if (value == 0.0 && !signbit(value))
    return tarn_matrix_zeros(rt, m, n, mb, nb, out);
  struct job extra = {.beta = value};
  return make_with(rt, m, n, mb, nb, k_fill, &extra, out);
}

int tarn__matrix_fill_in(tarn_matrix *a, double value) {
  struct job extra = {.beta = value};
  return per_tile(a, NULL, k_fill, &extra);
}

int tarn_matrix_rand(tarn_rt *rt, size_t m, size_t n, size_t mb, size_t nb,
                     uint64_t seed, tarn_matrix **out) {
  struct job extra = {.seed = seed};
  return make_with(rt, m, n, mb, nb, k_rand, &extra, out);
}

/* Copies between a tile and the caller's buffer: to the tile (dep 0
 * written) or from it (dep 0 read), as `fn` says. */
static int k_from_buffer(tarn_task *t, void *arg) {
  const struct job *j = arg;
  double *c = tarn_task_data(t, 0);
  for (size_t q = 0; q < j->cols; q++)
    memcpy(c + q * j->rows, j->buf + j->row0 + (j->col0 + q) * j->ld,
           j->rows * sizeof(double));
  return 0;
}

static int k_to_buffer(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *c = tarn_task_data(t, 0);
  for (size_t q = 0; q < j->cols; q++)
    memcpy(j->buf + j->row0 + (j->col0 + q) * j->ld, c + q * j->rows,
           j->rows * sizeof(double));
  return 0;
}

/* Runs `fn` on every tile of `a` in a region of its own and waits. */
static int each_tile_and_wait(tarn_matrix *a, tarn_task_fn fn, tarn_access mode,
                              double *buf, size_t ld) {
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++) {
      struct job j = job_for(a, ti, tj);
      j.buf = buf;
      j.ld = ld;
      tarn_dep dep = {tarn__tile(a, ti, tj), mode};
      rc = submit_job(a->rt, fn, &j, &dep, 1);
    }
  int wrc = tarn_region_wait(region, NULL);
  return rc != 0 ? rc : wrc;
}

/* Whether an m x n column-major buffer of leading dimension ld can be:
 * ld >= m, and its last element's offset, ld (n - 1) + m - 1 doubles, in
 * the address space (a larger ld wrapped the tasks' pointers to memory
 * outside the buffer). */
static bool buffer_spans(size_t m, size_t n, size_t ld) {
  return ld >= m && (n == 1 || ld <= (SIZE_MAX / sizeof(double) - m) / (n - 1));
}

int tarn_matrix_from_buffer(tarn_rt *rt, size_t m, size_t n, size_t mb,
                            size_t nb, const double *buf, size_t ld,
                            tarn_matrix **out) {
  if (buf == NULL || out == NULL || n == 0 || !buffer_spans(m, n, ld))
    return TARN_EINVAL;
  tarn_matrix *a = NULL;
  int rc = tarn__matrix_new(rt, m, n, mb, nb, &a);
  if (rc == 0)
    rc = each_tile_and_wait(a, k_from_buffer, TARN_WRITE, (double *)buf, ld);
  if (rc != 0) {
    tarn_matrix_destroy(a);
    return rc;
  }
  *out = a;
  return 0;
}

int tarn_matrix_to_buffer(tarn_matrix *a, double *buf, size_t ld) {
  if (!tarn__matrix_ok(a) || buf == NULL || !buffer_spans(a->m, a->n, ld))
    return TARN_EINVAL;
  return each_tile_and_wait(a, k_to_buffer, TARN_READ, buf, ld);
}

static int k_get(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *c = tarn_task_data(t, 0);
  *j->out = c[j->i + j->j * j->rows];
  return 0;
}

int tarn_matrix_get(tarn_matrix *a, size_t i, size_t j, double *v) {
  if (!tarn__matrix_ok(a) || v == NULL || i >= a->m || j >= a->n)
    return TARN_EINVAL;
  size_t ti = i / a->mb, tj = j / a->nb;
  struct job job = job_for(a, ti, tj);
  job.i = i - ti * a->mb;
  job.j = j - tj * a->nb;
  job.out = v;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) return rc;
  tarn_dep dep = {tarn__tile(a, ti, tj), TARN_READ};
  rc = submit_job(a->rt, k_get, &job, &dep, 1);
  int wrc = tarn_region_wait(region, NULL);
  return rc != 0 ? rc : wrc;
}

size_t tarn_matrix_rows(const tarn_matrix *a) {
  return tarn__matrix_ok(a) ? a->m : 0;
}
size_t tarn_matrix_cols(const tarn_matrix *a) {
  return tarn__matrix_ok(a) ? a->n : 0;
}
size_t tarn_matrix_tile_rows(const tarn_matrix *a) {
  return tarn__matrix_ok(a) ? a->mb : 0;
}
size_t tarn_matrix_tile_cols(const tarn_matrix *a) {
  return tarn__matrix_ok(a) ? a->nb : 0;
}

/* ---- elementwise operations --------------------------------------------- */

/* out = op(a) tile by tile, into *out or a new matrix with a's layout. */
static int unary(tarn_matrix *a, tarn_task_fn fn, const struct job *extra,
                 tarn_matrix **out) {
  if (!tarn__matrix_ok(a) || out == NULL) return TARN_EINVAL;
  bool made = false;
  int rc =
      tarn__matrix_destination(a->rt, a->m, a->n, a->mb, a->nb, out, &made);
  if (rc != 0) return rc;
  rc = per_tile(*out, a, fn, extra);
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

int tarn_matrix_axpb(tarn_matrix *a, double alpha, double beta,
                     tarn_matrix **out) {
  struct job extra = {.alpha = alpha, .beta = beta};
  return unary(a, k_axpb, &extra, out);
}

/* The bytes of a's columns [q0, q1) into c's: a copy keeps every bit
 * (1 * x + 0, as tarn_matrix_copy was until 2026-12-03, made -0 into +0
 * and quieted signalling NaNs). */
static int copy_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows;
  if (s->c != s->a)
    memcpy(s->c + q0 * rows, s->a + q0 * rows, (q1 - q0) * rows * sizeof *s->c);
  return 0;
}

static int k_copy(tarn_task *t, void *arg) {
  return split_columns(t, arg, copy_range);
}

int tarn_matrix_copy(tarn_matrix *a, tarn_matrix **out) {
  struct job extra = {0};
  return unary(a, k_copy, &extra, out);
}

int tarn_matrix_map(tarn_matrix *a, double (*f)(double), tarn_matrix **out) {
  if (f == NULL) return TARN_EINVAL;
  struct job extra = {.f = f};
  return unary(a, k_map, &extra, out);
}

int tarn_matrix_sin(tarn_matrix *a, tarn_matrix **out) {
  struct job extra = {.alpha = 0};
  return unary(a, k_sin, &extra, out);
}

int tarn_matrix_add(tarn_matrix *a, tarn_matrix *b, tarn_matrix **out) {
  if (out == NULL || !tarn__matrix_same_layout(a, b)) return TARN_EINVAL;
  bool made = false;
  int rc =
      tarn__matrix_destination(a->rt, a->m, a->n, a->mb, a->nb, out, &made);
  for (size_t tj = 0; rc == 0 && tj < a->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < a->mt; ti++) {
      struct job j = job_for(a, ti, tj);
      tarn_dep deps[3] = {{tarn__tile(*out, ti, tj), TARN_WRITE},
                          {tarn__tile(a, ti, tj), TARN_READ},
                          {tarn__tile(b, ti, tj), TARN_READ}};
      j.ia = tarn__dep_slot(deps, 1);
      j.ib = tarn__dep_slot(deps, 2);
      rc = ti == 0 && tj == 0 && !tarn__deps_fit(a->rt, deps, 3)
               ? TARN_ENOMEM
               : submit_job(a->rt, k_add, &j, deps, 3);
    }
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- transpose and retile ----------------------------------------------- */

/* The transpose goes by blocks of this many rows and columns, so that the
 * lines read from the tile (a few doubles of each of its columns) are used
 * whole while they are in cache. Element by element, each line was read
 * again for each output column: 3.4 GB/s against 8.7 with blocks of 8 on a
 * 512 tile, one core. Blocks of 32 write a longer run of each output
 * column: a 4096 x 4096 transpose (tarn_matrix_transpose, two workers,
 * medians of 15) took 24.6 ms in tiles of 512 against 48.4 with blocks of
 * 8, 21.4 against 41.5 in tiles of 256, 29.5 against 45.9 in tiles of
 * 1024; about 3000 x 3000 in tiles of 100 to 1000, 0.57 to 1.04x the time
 * of blocks of 8 (tiles of 128, 200, 768: 0.29 to 0.57x; of 384, 500,
 * 640: 1.03 to 1.04x; a program outside the repository, 2026-12-03). The
 * array suite's N=4096 transpose went from 1.69 to 1.73x the time of the
 * OpenMP loop into touched memory to 0.84 to 1.10x. */
#define TRANSPOSE_BLOCK 32

/* Columns [q0, q1) of the tile written (rows x cols) from the tile read
 * (cols x rows). */
static int transpose_range(void *arg, size_t q0, size_t q1) {
  const struct tile_share *s = arg;
  size_t rows = s->j->rows, cols = s->j->cols;
  double *c = s->c;
  const double *a = s->a;
  for (size_t qb = q0; qb < q1; qb += TRANSPOSE_BLOCK) {
    size_t qe = q1 - qb < TRANSPOSE_BLOCK ? q1 : qb + TRANSPOSE_BLOCK;
    for (size_t pb = 0; pb < rows; pb += TRANSPOSE_BLOCK) {
      size_t pe = rows - pb < TRANSPOSE_BLOCK ? rows : pb + TRANSPOSE_BLOCK;
      for (size_t q = qb; q < qe; q++)
        for (size_t p = pb; p < pe; p++) c[p + q * rows] = a[q + p * cols];
    }
  }
  return 0;
}

static int k_transpose(tarn_task *t, void *arg) {
  return split_columns(t, arg, transpose_range);
}

int tarn_matrix_transpose(tarn_matrix *a, tarn_matrix **out) {
  if (!tarn__matrix_ok(a) || out == NULL || *out == a) return TARN_EINVAL;
  bool made = false;
  int rc =
      tarn__matrix_destination(a->rt, a->n, a->m, a->nb, a->mb, out, &made);
  tarn_matrix *c = *out;
  for (size_t tj = 0; rc == 0 && tj < c->nt; tj++)
    for (size_t ti = 0; rc == 0 && ti < c->mt; ti++) {
      struct job j = job_for(c, ti, tj);
      tarn_dep deps[2] = {{tarn__tile(c, ti, tj), TARN_WRITE},
                          {tarn__tile(a, tj, ti), TARN_READ}};
      j.ia = 1;
      rc = ti == 0 && tj == 0 && !tarn__deps_fit(a->rt, deps, 2)
               ? TARN_ENOMEM
               : submit_job(a->rt, k_transpose, &j, deps, 2);
    }
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

/* A retile writes small tiles of the new tiling in blocks, a task each:
 * tiles under RETILE_SMALL_BYTES, as many as make about RETILE_BLOCK_SIDE
 * rows and columns (at most RETILE_BLOCK_TILES tiles), where each task
 * cost about as much as its copy (1024 x 1024 from tiles of 256 into
 * tiles of 16 took 7.4 ms in 4096 tasks, into tiles of 256 0.3). Under a
 * memory limit only where a block's tiles take at most an eighth of it. */
#define RETILE_SMALL_BYTES ((size_t)64 << 10)
#define RETILE_BLOCK_SIDE 256
#define RETILE_BLOCK_TILES 1024

/* A retile task: writes a block of tiles of the new tiling from the
 * source tiles that overlap it, whose layout the job carries: of the
 * elements of `part` ('F' all, 'L' those on or below the diagonal, 'U'
 * those on or above), only the block's tiles holding some, and only the
 * source tiles that overlap the block in some, are the task's deps. */
struct retile_job {
  size_t m, n;                   /* the matrix */
  size_t mb, nb;                 /* the new tiling */
  size_t dti0, dtj0, dtis, dtjs; /* the tiles written */
  size_t src_mb, src_nb;         /* the source tiling */
  size_t ti0, tj0, tis, tjs;     /* the source tiles that overlap them */
  char part;
  /* The destination was made by the retile: its tiles' other elements
   * are zeros (else they keep their values, and such tiles are read). */
  bool zero_rest;
  /* The task data slot of each tile written (by columns), then of each
   * source tile (by columns); NOT_A_DEP for those with nothing of part. */
  size_t slot[];
};

#define NOT_A_DEP SIZE_MAX

/* The elements [*lo, *hi) of tile `t` of size `tile` along a side of `len`. */
static void tile_span(size_t t, size_t tile, size_t len, size_t *lo,
                      size_t *hi) {
  *lo = t * tile;
  *hi = len - *lo < tile ? len : *lo + tile;
}

/* Whether the rows [r0, r1) and columns [c0, c1) hold an element of
 * `part`, and whether they hold only such. */
static bool part_any(char part, size_t r0, size_t r1, size_t c0, size_t c1) {
  if (r0 >= r1 || c0 >= c1) return false;
  return part == 'F' || (part == 'L' ? r1 - 1 >= c0 : r0 <= c1 - 1);
}

static bool part_all(char part, size_t r0, size_t r1, size_t c0, size_t c1) {
  return part == 'F' || (part == 'L' ? r0 >= c1 - 1 : r1 - 1 <= c0);
}

/* The rows [*lo, *hi) of column q in rows [r0, r1) that are in `part`. */
static void part_rows(char part, size_t q, size_t r0, size_t r1, size_t *lo,
                      size_t *hi) {
  size_t edge = part == 'L' ? q : q + 1; /* the first row after 'U''s */
  edge = edge < r0 ? r0 : edge > r1 ? r1 : edge;
  *lo = part == 'L' ? edge : r0;
  *hi = part == 'U' ? edge : r1;
}

/* Zeros the elements outside r->part of the new tile (rows [r0, r1),
 * columns [c0, c1)) at `c`. */
static void retile_zero_rest(const struct retile_job *r, size_t r0, size_t r1,
                             size_t c0, size_t c1, double *c) {
  for (size_t q = c0; q < c1; q++) {
    size_t lo, hi;
    part_rows(r->part, q, r0, r1, &lo, &hi);
    double *col = c + (q - c0) * (r1 - r0);
    memset(col, 0, (lo - r0) * sizeof(double));
    memset(col + (hi - r0), 0, (r1 - hi) * sizeof(double));
  }
}

/* Copies into the new tile (di, dj) at `c` the elements of r->part of the
 * source tiles that overlap it. */
static void retile_one(tarn_task *t, const struct retile_job *r, size_t di,
                       size_t dj, double *c) {
  size_t d_r0, d_r1, d_c0, d_c1;
  tile_span(di, r->mb, r->m, &d_r0, &d_r1);
  tile_span(dj, r->nb, r->n, &d_c0, &d_c1);
  if (r->zero_rest && !part_all(r->part, d_r0, d_r1, d_c0, d_c1))
    retile_zero_rest(r, d_r0, d_r1, d_c0, d_c1, c);
  const size_t *src_slot = r->slot + r->dtis * r->dtjs;
  for (size_t tj = d_c0 / r->src_nb; tj * r->src_nb < d_c1; tj++)
    for (size_t ti = d_r0 / r->src_mb; ti * r->src_mb < d_r1; ti++) {
      size_t s_r0, s_r1, s_c0, s_c1;
      tile_span(ti, r->src_mb, r->m, &s_r0, &s_r1);
      tile_span(tj, r->src_nb, r->n, &s_c0, &s_c1);
      /* The overlap, in matrix coordinates. */
      size_t r0 = s_r0 > d_r0 ? s_r0 : d_r0, r1 = s_r1 < d_r1 ? s_r1 : d_r1;
      size_t c0 = s_c0 > d_c0 ? s_c0 : d_c0, c1 = s_c1 < d_c1 ? s_c1 : d_c1;
      if (!part_any(r->part, r0, r1, c0, c1)) continue;
      const double *s =
          tarn_task_data(t, src_slot[(tj - r->tj0) * r->tis + (ti - r->ti0)]);
      for (size_t q = c0; q < c1; q++) {
        size_t lo, hi;
        part_rows(r->part, q, r0, r1, &lo, &hi);
        memcpy(c + (lo - d_r0) + (q - d_c0) * (d_r1 - d_r0),
               s + (lo - s_r0) + (q - s_c0) * (s_r1 - s_r0),
               (hi - lo) * sizeof(double));
      }
    }
}

static int k_retile(tarn_task *t, void *arg) {
  const struct retile_job *r = arg;
  for (size_t dj = 0; dj < r->dtjs; dj++)
    for (size_t di = 0; di < r->dtis; di++) {
      size_t slot = r->slot[dj * r->dtis + di];
      if (slot != NOT_A_DEP)
        retile_one(t, r, r->dti0 + di, r->dtj0 + dj, tarn_task_data(t, slot));
    }
  return 0;
}

/* The job of the task writing c's tiles [ti, ti + tis) x [tj, tj + tjs)
 * (c a retiled, in `part`), its slots not filled. */
static struct retile_job retile_layout(const tarn_matrix *a,
                                       const tarn_matrix *c, char part,
                                       bool made, size_t ti, size_t tj,
                                       size_t tis, size_t tjs) {
  size_t row0 = ti * c->mb, col0 = tj * c->nb;
  size_t row1 = (ti + tis - 1) * c->mb + tarn__tile_rows(c, ti + tis - 1);
  size_t col1 = (tj + tjs - 1) * c->nb + tarn__tile_cols(c, tj + tjs - 1);
  size_t ti0 = row0 / a->mb, tj0 = col0 / a->nb;
  return (struct retile_job){.m = a->m,
                             .n = a->n,
                             .mb = c->mb,
                             .nb = c->nb,
                             .dti0 = ti,
                             .dtj0 = tj,
                             .dtis = tis,
                             .dtjs = tjs,
                             .src_mb = a->mb,
                             .src_nb = a->nb,
                             .ti0 = ti0,
                             .tj0 = tj0,
                             .tis = (row1 - 1) / a->mb - ti0 + 1,
                             .tjs = (col1 - 1) / a->nb - tj0 + 1,
                             .part = part,
                             .zero_rest = made};
}

/* The deps of r's task (c's tiles it writes, then a's it reads, each by
 * columns), into deps[] and r->slot[] when deps is not NULL; returns
 * their number, and in *charge what the pool charges for them when
 * charge is not NULL. */
static size_t retile_deps(const tarn_matrix *a, const tarn_matrix *c,
                          struct retile_job *r, tarn_dep *deps,
                          size_t *charge) {
  size_t n = 0, k = 0, sum = 0;
  for (size_t dj = r->dtj0; dj < r->dtj0 + r->dtjs; dj++)
    for (size_t di = r->dti0; di < r->dti0 + r->dtis; di++, k++) {
      size_t r0, r1, c0, c1;
      tile_span(di, c->mb, c->m, &r0, &r1);
      tile_span(dj, c->nb, c->n, &c0, &c1);
      bool in = part_any(r->part, r0, r1, c0, c1);
      if (deps != NULL) r->slot[k] = in ? n : NOT_A_DEP;
      if (!in) continue;
      sum += tarn__tile_charge_at(c, di, dj);
      if (deps != NULL)
        deps[n] = (tarn_dep){tarn__tile(c, di, dj),
                             r->zero_rest || part_all(r->part, r0, r1, c0, c1)
                                 ? TARN_WRITE
                                 : TARN_READ_WRITE};
      n++;
    }
  /* the block's rows and columns */
  size_t b_r0 = r->dti0 * c->mb, b_c0 = r->dtj0 * c->nb, b_r1, b_c1, lo;
  tile_span(r->dti0 + r->dtis - 1, c->mb, c->m, &lo, &b_r1);
  tile_span(r->dtj0 + r->dtjs - 1, c->nb, c->n, &lo, &b_c1);
  for (size_t sj = r->tj0; sj < r->tj0 + r->tjs; sj++)
    for (size_t si = r->ti0; si < r->ti0 + r->tis; si++, k++) {
      size_t r0, r1, c0, c1;
      tile_span(si, a->mb, a->m, &r0, &r1);
      tile_span(sj, a->nb, a->n, &c0, &c1);
      bool in = part_any(r->part, r0 > b_r0 ? r0 : b_r0, r1 < b_r1 ? r1 : b_r1,
                         c0 > b_c0 ? c0 : b_c0, c1 < b_c1 ? c1 : b_c1);
      if (deps != NULL) r->slot[k] = in ? n : NOT_A_DEP;
      if (!in) continue;
      sum += tarn__tile_charge_at(a, si, sj);
      if (deps != NULL) deps[n] = (tarn_dep){tarn__tile(a, si, sj), TARN_READ};
      n++;
    }
  if (charge != NULL) *charge = sum;
  return n;
}

/* What the pool charges for the task writing c's tiles [ti, ti + tis) x
 * [tj, tj + tjs) of `part`: them and the tiles of a they overlap. */
static size_t retile_charge(const tarn_matrix *a, const tarn_matrix *c,
                            char part, size_t ti, size_t tj, size_t tis,
                            size_t tjs) {
  struct retile_job r = retile_layout(a, c, part, true, ti, tj, tis, tjs);
  size_t charge;
  retile_deps(a, c, &r, NULL, &charge);
  return charge;
}

/* The block of c's tiles a retile task writes, *bm x *bn: one tile, or
 * for small tiles a block (see RETILE_SMALL_BYTES), when it fits. */
static void retile_block(const tarn_matrix *a, const tarn_matrix *c, char part,
                         size_t *bm, size_t *bn) {
  *bm = *bn = 1;
  if (c->mb * c->nb * sizeof(double) >= RETILE_SMALL_BYTES) return;
  size_t m = RETILE_BLOCK_SIDE / c->mb, n = RETILE_BLOCK_SIDE / c->nb;
  if (m < 1) m = 1;
  if (n < 1) n = 1;
  if (m > c->mt) m = c->mt;
  if (n > c->nt) n = c->nt;
  while (m * n > RETILE_BLOCK_TILES) { /* tiles of a few elements */
    if (m >= n)
      m /= 2;
    else
      n /= 2;
  }
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  if (limit != 0 && retile_charge(a, c, part, 0, 0, m, n) > limit / 8) return;
  *bm = m;
  *bn = n;
}

/* Whether every retile task (a block of c's tiles and the tiles of a it
 * overlaps, as many as the alignment makes them) fits under the limit. */
static bool retile_fits(const tarn_matrix *a, const tarn_matrix *c, char part,
                        size_t bm, size_t bn) {
  size_t limit = tarn_pool_mem_limit(tarn_rt_pool(a->rt));
  for (size_t tj = 0; limit != 0 && tj < c->nt; tj += bn)
    for (size_t ti = 0; ti < c->mt; ti += bm) {
      size_t tis = c->mt - ti < bm ? c->mt - ti : bm;
      size_t tjs = c->nt - tj < bn ? c->nt - tj : bn;
      if (retile_charge(a, c, part, ti, tj, tis, tjs) > limit) return false;
    }
  return true;
}

static int submit_retile(tarn_matrix *a, tarn_matrix *c, char part, bool made,
                         size_t ti, size_t tj, size_t tis, size_t tjs) {
  struct retile_job layout = retile_layout(a, c, part, made, ti, tj, tis, tjs);
  size_t ntiles = tis * tjs + layout.tis * layout.tjs;
  struct retile_job *r = malloc(sizeof *r + ntiles * sizeof r->slot[0]);
  tarn_dep *deps = malloc(ntiles * sizeof *deps);
  if (r == NULL || deps == NULL) {
    free(r);
    free(deps);
    return TARN_ENOMEM;
  }
  *r = layout;
  size_t nd = retile_deps(a, c, r, deps, NULL);
  int rc = 0;
  bool writes = false;
  for (size_t k = 0; k < tis * tjs; k++) writes |= r->slot[k] != NOT_A_DEP;
  if (writes) {
    tarn_task_desc d = {
        .fn = k_retile, .arg = r, .deps = deps, .ndeps = nd, .arg_free = free};
    rc = tarn_task_submit(a->rt, &d);
  } else {
    free(r); /* a block with nothing of part */
  }
  free(deps);
  return rc;
}

int tarn__matrix_retile_part(tarn_matrix *a, char part, size_t mb, size_t nb,
                             tarn_matrix **out) {
  if (!tarn__matrix_ok(a) || out == NULL || *out == a) return TARN_EINVAL;
  bool made = false;
  int rc = tarn__matrix_destination(a->rt, a->m, a->n, mb, nb, out, &made);
  size_t bm = 1, bn = 1;
  if (rc == 0) retile_block(a, *out, part, &bm, &bn);
  if (rc == 0 && bm * bn > 1 && !retile_fits(a, *out, part, bm, bn))
    bm = bn = 1; /* a block of another alignment than the first's */
  if (rc == 0 && !retile_fits(a, *out, part, bm, bn)) rc = TARN_ENOMEM;
  tarn_matrix *c = rc == 0 ? *out : NULL;
  for (size_t tj = 0; rc == 0 && tj < c->nt; tj += bn)
    for (size_t ti = 0; rc == 0 && ti < c->mt; ti += bm)
      rc = submit_retile(a, c, part, made, ti, tj,
                         c->mt - ti < bm ? c->mt - ti : bm,
                         c->nt - tj < bn ? c->nt - tj : bn);
  if (rc != 0 && made) {
    tarn_matrix_destroy(*out);
    *out = NULL;
  }
  return rc;
}

int tarn_matrix_retile(tarn_matrix *a, size_t mb, size_t nb,
                       tarn_matrix **out) {
  return tarn__matrix_retile_part(a, 'F', mb, nb, out);
}

/* ---- reductions ------------------------------------------------------------
 */

/* Blocks of SUM_BLOCK elements are summed with 8 accumulators (each adds
 * every 8th element: SUM_BLOCK / 8 terms), the 8 then added in a tree;
 * blocks are combined pairwise. The rounding error is within about
 * (SUM_BLOCK / 8 + 3 + log2(n)) eps sum|x|, and the loops vectorise. */
#define SUM_BLOCK 128

TARN_HOT_CLONES static double block_sum(const double *x, size_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; n - k >= 8; k += 8)
    for (int l = 0; l < 8; l++) acc[l] += x[k + l];
  for (; k < n; k++) acc[k % 8] += x[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

TARN_HOT_CLONES static double block_sumsq(const double *x, size_t n,
                                          double inv_scale) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; n - k >= 8; k += 8)
    for (int l = 0; l < 8; l++) {
      double y = x[k + l] * inv_scale;
      acc[l] += y * y;
    }
  for (; k < n; k++) {
    double y = x[k] * inv_scale;
    acc[k % 8] += y * y;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Pairwise over blocks: squares (inv_scale given) or plain values. */
static double pairwise(const double *x, size_t n, bool squares,
                       double inv_scale) {
  if (n <= SUM_BLOCK)
    return squares ? block_sumsq(x, n, inv_scale) : block_sum(x, n);
  size_t h = n / 2;
  return pairwise(x, h, squares, inv_scale) +
         pairwise(x + h, n - h, squares, inv_scale);
}

/* A partial result: a sum, or (scale, sum of squares / scale^2). */
struct partial {
  double scale, value;
};

static int k_tile_sum(tarn_task *t, void *arg) {
  const struct job *j = arg; /* columns i..j of the tile (see reduce) */
  const double *a = (const double *)tarn_task_data(t, 0) + j->i * j->rows;
  struct partial *p = j->partial;
  p->scale = 1;
  p->value = pairwise(a, j->rows * (j->j - j->i), false, 1);
  return 0;
}

/* An unscaled sum of squares at least this large lost nothing that
 * matters to underflow (each lost square is below 2^-1022). */
#define SAFE_LOW 0x1p-900

/* An unscaled sum of squares at most this large leaves room to add the
 * other partials' (2^124 of them) without overflow: a larger one is
 * scaled, though finite (the tiles of 3e153 of a 7 x 5 matrix in tiles of
 * 3, each finite, added up to +inf). */
#define SAFE_HIGH 0x1p+900

static int k_tile_ssq(tarn_task *t, void *arg) {
  const struct job *j = arg; /* columns i..j of the tile (see reduce) */
  const double *a = (const double *)tarn_task_data(t, 0) + j->i * j->rows;
  struct partial *p = j->partial;
  size_t n = j->rows * (j->j - j->i);
  /* One unscaled pass; it is exact enough unless squares overflowed (inf)
   * or came near it, or the sum is so small that squares may have
   * underflowed. */
  double ssq = pairwise(a, n, true, 1);
  if ((ssq >= SAFE_LOW && ssq <= SAFE_HIGH) || isnan(ssq)) {
    /* NaN: squares are never negative, so only a NaN element makes one
     * (the largest magnitude below skips NaNs: the scaled pass could lose
     * them, and an all-NaN tile counted as 0). */
    p->scale = 1;
    p->value = ssq;
    return 0;
  }
  /* Again, scaled by the largest magnitude (rare). */
  double scale = 0;
  for (size_t k = 0; k < n; k++)
    scale = fabs(a[k]) > scale ? fabs(a[k]) : scale;
  p->scale = scale;
  p->value = isinf(scale) ? 1 : 0; /* an infinite element: the norm's */
  if (scale == 0 || isinf(scale)) return 0;
  if (isfinite(1 / scale)) {
    p->value = pairwise(a, n, true, 1 / scale);
    return 0;
  }
  /* Subnormal: 1 / scale overflows; divide, element by element (rare). */
  double v = 0;
  for (size_t k = 0; k < n; k++) v += (a[k] / scale) * (a[k] / scale);
  p->value = v;
  return 0;
}

/* The largest |x_k| of n elements, NaNs skipped, with 8 running maxima
 * (8 independent chains: 3.6 ms for 128 MiB of a cached tile, against
 * 5.2 for one); *odd gets whether a NaN or an infinity was seen (v - v
 * is 0 for every other value). */
TARN_HOT_CLONES static double abs_max(const double *x, size_t n, bool *odd) {
  double best[8] = {0, 0, 0, 0, 0, 0, 0, 0}, zero[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; n - k >= 8; k += 8)
    for (int l = 0; l < 8; l++) {
      double v = fabs(x[k + l]);
      best[l] = v > best[l] ? v : best[l];
      zero[l] += v - v;
    }
  for (; k < n; k++) {
    double v = fabs(x[k]);
    best[k % 8] = v > best[k % 8] ? v : best[k % 8];
    zero[k % 8] += v - v;
  }
  double m = 0, z = 0;
  for (int l = 0; l < 8; l++) {
    m = best[l] > m ? best[l] : m;
    z += zero[l];
  }
  *odd = z != 0;
  return m;
}

/* The largest magnitude of columns i..j of a tile; a NaN when one is a
 * NaN (fmax would skip it). */
static int k_tile_max(tarn_task *t, void *arg) {
  const struct job *j = arg;
  const double *a = (const double *)tarn_task_data(t, 0) + j->i * j->rows;
  size_t n = j->rows * (j->j - j->i);
  bool odd = false, nan = false;
  double best = abs_max(a, n, &odd);
  for (size_t k = 0; odd && !nan && k < n; k++) nan = isnan(a[k]); /* rare */
  j->partial->scale = 1;
  j->partial->value = nan ? NAN : best;
  return 0;
}

/* What a reduction's partials are and how two of them combine. */
enum reduction { REDUCE_SUM, REDUCE_SSQ, REDUCE_MAX };

/* The larger of two magnitudes, a NaN when either is one. */
static double max_or_nan(double x, double y) {
  if (isnan(x) || isnan(y)) return NAN;
  return x > y ? x : y;
}

/* Two partials as one: sums add; sums of squares are brought to the
 * larger scale first; maxima take the larger. A NaN (value) wins, then an
 * infinite element (scale infinity, value 1: Inf / Inf would make a NaN
 * of it). */
static struct partial combine(struct partial x, struct partial y,
                              enum reduction kind) {
  if (kind == REDUCE_SUM) return (struct partial){1, x.value + y.value};
  if (kind == REDUCE_MAX)
    return (struct partial){1, max_or_nan(x.value, y.value)};
  if (isnan(x.value) || isnan(y.value)) return (struct partial){1, NAN};
  if (isinf(x.scale) || isinf(y.scale)) return (struct partial){INFINITY, 1};
  double s = x.scale > y.scale ? x.scale : y.scale;
  double v = 0;
  if (x.scale > 0) v += x.value * (x.scale / s) * (x.scale / s);
  if (y.scale > 0) v += y.value * (y.scale / s) * (y.scale / s);
  return (struct partial){s, v};
}

/* Reduces `a` to one partial: tasks over column ranges of the tiles
 * (several per tile when there are few tiles, so every worker has work)
 * write their partials into an array of the caller's; once they are done
 * the caller combines the partials pairwise, level by level (a binary
 * tree in a fixed order). */
static int reduce(tarn_matrix *a, tarn_task_fn tile_fn, enum reduction kind,
                  struct partial *result) {
  if (!tarn__matrix_ok(a) || result == NULL) return TARN_EINVAL;
  size_t tiles = a->mt * a->nt, want = tarn_rt_workers(a->rt);
  size_t parts = tiles >= want ? 1 : (want + tiles - 1) / tiles;
  if (parts > a->nb) parts = a->nb;
  size_t count = tiles * parts;
  struct partial *part = calloc(count, sizeof *part);
  if (part == NULL) return TARN_ENOMEM;
  tarn_region *region = NULL;
  int rc = tarn_region_begin(a->rt, &region);
  if (rc != 0) {
    free(part);
    return rc;
  }
  for (size_t k = 0; rc == 0 && k < count; k++) {
    size_t tk = k / parts, ti = tk % a->mt, tj = tk / a->mt, part_k = k % parts;
    struct job j = job_for(a, ti, tj);
    size_t cols = j.cols;
    j.i = cols * part_k / parts; /* columns i..j of the tile */
    j.j = cols * (part_k + 1) / parts;
    j.partial = &part[k];
    tarn_dep dep = {tarn__tile(a, ti, tj), TARN_READ};
    if (j.j > j.i) rc = submit_job(a->rt, tile_fn, &j, &dep, 1);
  }
  int wrc = tarn_region_wait(region, NULL);
  if (rc == 0) rc = wrc;
  while (rc == 0 && count > 1) {
    size_t next = 0;
    for (size_t k = 0; k + 1 < count; k += 2)
      part[next++] = combine(part[k], part[k + 1], kind);
    if (count % 2 == 1) part[next++] = part[count - 1];
    count = next;
  }
  if (rc == 0) *result = part[0];
  free(part);
  return rc;
}

/* The sum of |x_k| over n contiguous elements, 8 accumulators as
 * block_sum (a NaN stays a NaN). */
TARN_HOT_CLONES static double abs_sum(const double *x, size_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; n - k >= 8; k += 8)
    for (int l = 0; l < 8; l++) acc[l] += fabs(x[k + l]);
  for (; k < n; k++) acc[k % 8] += fabs(x[k]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* The rows [*r0, *r1) of column c of tile job j that lie in the part of
 * the matrix a norm reads: all of them, or those of the lower (upper)
 * triangle of the leading N x N block, the diagonal left out when it is
 * taken as all ones. */
static void rows_in_part(const struct job *j, size_t c, size_t *r0,
                         size_t *r1) {
  size_t col = j->col0 + c; /* the diagonal element's row in the matrix */
  *r0 = 0;
  *r1 = j->rows;
  if (j->part == 'L') {
    size_t from = col + (j->unit ? 1 : 0); /* first row read */
    *r0 = from <= j->row0 ? 0 : from - j->row0;
    if (*r0 > j->rows) *r0 = j->rows;
    /* a triangle is the leading N x N block: no row from N on */
    size_t below = j->n <= j->row0 ? 0 : j->n - j->row0;
    if (*r1 > below) *r1 = below;
  } else if (j->part == 'U') {
    size_t to = col + (j->unit ? 0 : 1); /* past the last row read */
    *r1 = to <= j->row0 ? 0 : to - j->row0;
    if (*r1 > j->rows) *r1 = j->rows;
  }
  if (*r1 < *r0) *r1 = *r0;
}

/* A tile's line sums, shared with idle workers: columns [q0, q1) add to
 * their own sums; rows [q0, q1) to theirs (each range loops over all
 * columns), so no two ranges write one sum. */
struct line_share {
  const struct job *j;
  const double *a;
};

static int col_sums_range(void *arg, size_t q0, size_t q1) {
  const struct line_share *s = arg;
  const struct job *j = s->j;
  for (size_t c = q0; c < q1; c++) {
    size_t r0, r1;
    rows_in_part(j, c, &r0, &r1);
    j->out[c] += abs_sum(s->a + c * j->rows + r0, r1 - r0);
  }
  return 0;
}

TARN_HOT_CLONES static void add_abs_rows(double *restrict out, const double *a,
                                         size_t from, size_t to) {
  for (size_t r = from; r < to; r++) out[r] += fabs(a[r]);
}

static int row_sums_range(void *arg, size_t q0, size_t q1) {
  const struct line_share *s = arg;
  const struct job *j = s->j;
  for (size_t c = 0; c < j->cols; c++) {
    size_t r0, r1;
    rows_in_part(j, c, &r0, &r1);
    size_t from = r0 > q0 ? r0 : q0, to = r1 < q1 ? r1 : q1;
    if (from < to) add_abs_rows(j->out, s->a + c * j->rows, from, to);
  }
  return 0;
}

/* Adds |a_ij| of one tile (the part a norm reads) to the sums of its
 * columns, or of its rows, at j->out in the caller's array. Tasks adding
 * to the same sums are ordered by a gate ref they all write (see
 * tarn__matrix_line_norm). */
static int k_tile_col_sums(tarn_task *t, void *arg) {
  struct line_share s = {arg, tarn_task_data(t, 0)};
  return tarn__share_columns(t, s.j->rows, s.j->cols, col_sums_range, &s);
}

/* Row ranges shorter than this read too little of each column at a time
 * (measured on a 4096 x 4096 tile, before such tiles were summed by
 * column blocks: ranges of 4 rows took 5.0 ms for its 128 MiB; of 512,
 * 4.8; of 2048, 6.8; the column sums 1.4, and the row sums of 512 x 512
 * tiles, whose columns lie end to end, 1.6). */
#define ROW_GRAIN 512

/* A tile wider than this many columns sums its rows by blocks of this
 * many columns, each block's sums apart (see k_tile_row_sums). */
#define ROW_SUM_BLOCK 512

/* Column blocks [b0, b1) of a wide tile: block b adds the rows of its
 * columns, each column read whole, into its own sums at part + b rows. */
struct block_share {
  const struct job *j;
  const double *a;
  double *part;
};

static int row_blocks_range(void *arg, size_t b0, size_t b1) {
  const struct block_share *s = arg;
  const struct job *j = s->j;
  for (size_t b = b0; b < b1; b++) {
    double *sums = s->part + b * j->rows;
    memset(sums, 0, j->rows * sizeof *sums);
    size_t c1 =
        (b + 1) * ROW_SUM_BLOCK < j->cols ? (b + 1) * ROW_SUM_BLOCK : j->cols;
    for (size_t c = b * ROW_SUM_BLOCK; c < c1; c++) {
      size_t r0, r1;
      rows_in_part(j, c, &r0, &r1);
      if (r0 < r1) add_abs_rows(sums, s->a + c * j->rows, r0, r1);
    }
  }
  return 0;
}

/* The row sums of a tile. A tile of at most ROW_SUM_BLOCK columns is
 * shared by ranges of rows. A wider one would read each column in short
 * strided pieces that way (ranges of 512 rows of a 4096 x 4096 tile: 7.1
 * to 7.3 ms for its 128 MiB, against 1.8 to 2.1 for its column sums, and
 * 2.5 to 2.6 by blocks), so it is summed by blocks of ROW_SUM_BLOCK
 * columns: each column read whole into its block's sums in the task's
 * memory (blocks x rows doubles), the blocks shared with idle workers,
 * then added in block order. The blocks depend on the tile's shape
 * alone, so the sums do not depend on the workers. */
static int k_tile_row_sums(tarn_task *t, void *arg) {
  struct line_share s = {arg, tarn_task_data(t, 0)};
  const struct job *j = s.j;
  if (j->cols > ROW_SUM_BLOCK) {
    size_t blocks = (j->cols + ROW_SUM_BLOCK - 1) / ROW_SUM_BLOCK;
    bool heap = false;
    double *part = tarn__task_memory(t, blocks * j->rows * sizeof *part, &heap);
    if (part == NULL) return TARN_ENOMEM;
    struct block_share b = {j, s.a, part};
    int rc = tarn_task_parallel_for(t, blocks, 1, row_blocks_range, &b);
    /* a triangle's sums end at row N (tarn__matrix_line_norm) */
    size_t rows = j->rows;
    if (j->part != 'F' && j->row0 + rows > j->n)
      rows = j->n > j->row0 ? j->n - j->row0 : 0;
    for (size_t r = 0; rc == 0 && r < rows; r++) {
      double sum = part[r];
      for (size_t k = 1; k < blocks; k++) sum += part[k * j->rows + r];
      j->out[r] += sum;
    }
    if (heap) free(part);
    return rc;
  }
  /* ranges of at least ROW_GRAIN rows and SHARE_ELEMENTS elements */
  size_t grain = j->cols >= SHARE_ELEMENTS ? 1 : SHARE_ELEMENTS / j->cols;
  if (grain < ROW_GRAIN) grain = ROW_GRAIN;
  return tarn_task_parallel_for(t, j->rows, grain, row_sums_range, &s);
}

/* Whether tile (ti, tj) holds an element of the part a norm reads: its
 * first column (lower) or its last (upper) reads the most rows. */
static bool tile_in_part(const tarn_matrix *a, size_t ti, size_t tj, char part,
                         bool unit) {
  struct job j = job_for(a, ti, tj);
  j.part = part;
  j.unit = unit;
  size_t r0, r1;
  rows_in_part(&j, part == 'U' ? j.cols - 1 : 0, &r0, &r1);
  return r1 > r0;
}

int tarn__matrix_line_norm(tarn_matrix *a, bool rows, char part, bool unit,
                           double *norm) {
  size_t lines = rows ? a->mt : a->nt; /* lines of tiles */
  size_t along = rows ? a->nt : a->mt; /* tiles along each line */
  /* the sums of all lines (rows from N on hold no part of a triangle) */
  size_t len = rows && part == 'F' ? a->m : a->n;
  size_t lanes = tarn_rt_workers(a->rt);
  if (lanes > along) lanes = along;
  if (lanes == 0) lanes = 1;
  /* Each task pins its tile and its lane's gate (a page): refused before
   * any runs when the first (the largest) tile and a page do not fit. */
  if (!tarn__task_fits(a->rt,
                       tarn__tile_charge(a) + tarn__page_round(sizeof(double))))
    return TARN_ENOMEM;
  double *sums = len > SIZE_MAX / sizeof(double) / lanes
                     ? NULL
                     : calloc(lanes * len, sizeof *sums);
  tarn_ref **gates = calloc(lanes * lines, sizeof *gates);
  tarn_region *region = NULL;
  int rc = sums == NULL || gates == NULL ? TARN_ENOMEM : 0;
  for (size_t g = 0; rc == 0 && g < lanes * lines; g++)
    rc = tarn_ref_create(tarn_rt_pool(a->rt), sizeof(double), &gates[g]);
  if (rc == 0) rc = tarn_region_begin(a->rt, &region);
  for (size_t k = 0; region != NULL && rc == 0 && k < lines * along; k++) {
    size_t line = k / along, at = k % along, lane = at % lanes;
    size_t ti = rows ? line : at, tj = rows ? at : line;
    if (!tile_in_part(a, ti, tj, part, unit)) continue;
    struct job j = job_for(a, ti, tj);
    j.part = part;
    j.unit = unit;
    j.out = sums + lane * len + (rows ? j.row0 : j.col0);
    tarn_dep deps[2] = {{tarn__tile(a, ti, tj), TARN_READ},
                        {gates[lane * lines + line], TARN_READ_WRITE}};
    rc = submit_job(a->rt, rows ? k_tile_row_sums : k_tile_col_sums, &j, deps,
                    2);
  }
  if (region != NULL) {
    int wrc = tarn_region_wait(region, NULL);
    if (rc == 0) rc = wrc;
  }
  double best = 0;
  for (size_t i = 0; rc == 0 && i < len; i++) {
    double line_sum = unit ? 1 : 0;
    for (size_t l = 0; l < lanes; l++) line_sum += sums[l * len + i];
    best = max_or_nan(best, line_sum);
  }
  if (rc == 0) *norm = best;
  for (size_t g = 0; gates != NULL && g < lanes * lines; g++)
    if (gates[g] != NULL) tarn_ref_release(gates[g]);
  free(gates);
  free(sums);
  return rc;
}

int tarn_matrix_sum(tarn_matrix *a, double *sum) {
  if (sum == NULL) return TARN_EINVAL;
  struct partial p;
  int rc = reduce(a, k_tile_sum, REDUCE_SUM, &p);
  if (rc == 0) *sum = p.value;
  return rc;
}

int tarn_matrix_norm(tarn_matrix *a, tarn_norm kind, double *norm) {
  if (!tarn__matrix_ok(a) || norm == NULL) return TARN_EINVAL;
  struct partial p;
  int rc;
  switch (kind) {
    case TARN_NORM_FRO:
      rc = reduce(a, k_tile_ssq, REDUCE_SSQ, &p);
      if (rc == 0) *norm = p.scale * sqrt(p.value);
      return rc;
    case TARN_NORM_MAX:
      rc = reduce(a, k_tile_max, REDUCE_MAX, &p);
      if (rc == 0) *norm = p.value;
      return rc;
    case TARN_NORM_ONE:
      return tarn__matrix_line_norm(a, false, 'F', false, norm);
    case TARN_NORM_INF:
      return tarn__matrix_line_norm(a, true, 'F', false, norm);
  }
  return TARN_EINVAL;
}
