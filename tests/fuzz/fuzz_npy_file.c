/* fuzz_npy_file.c: a libFuzzer target over whole .npy files. The input's
 * first byte picks the tile rows mb (1 + byte % 8) and whether to round
 * trip (byte >= 128), its second the tile columns nb (1 + byte % 8), and
 * the rest is written as a file and read by tarn_matrix_from_file and
 * tarn_matrix_open_file under a 64 KiB memory limit (so opened tiles are
 * dropped and read again). Both must return what the header reader
 * (src/array/npy.c) and the file's length say, leave *out NULL on failure,
 * and on success give, bit for bit, the elements an independent decoder
 * here reads, and the same sum; with the round trip, tarn_matrix_to_file's
 * file, opened with the tiles transposed, holds the same elements. Files
 * and spill file live in a private directory removed at exit. Seeds in
 * tests/fuzz/npy_files/ (see tests/fuzz/README.md). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/npy.h"
#include "tarn.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tarn_rt *rt;
static char dir[PATH_MAX], in_path[PATH_MAX], out_path[PATH_MAX];

/* At exit (libFuzzer ends a timed run with exit()). */
static void cleanup(void) {
  int rc = tarn_rt_destroy(rt);
  unlink(in_path);
  unlink(out_path);
  rmdir(dir);
  if (rc != 0) {
    fprintf(stderr, "tarn_rt_destroy: %d\n", rc);
    abort();
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  if (strlen(tmp) + 32 > sizeof dir) abort();
  snprintf(dir, sizeof dir, "%s/tarn-fuzz-XXXXXX", tmp);
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    abort();
  }
  snprintf(in_path, sizeof in_path, "%s/in.npy", dir);
  snprintf(out_path, sizeof out_path, "%s/out.npy", dir);
  tarn_rt_options o;
  if (tarn_rt_options_init(&o) != 0) abort();
  o.workers = 2;
  o.pin_workers = 0;
  o.idle_trim_ms = 0;
  o.scratch_bytes = 1 << 20;
  o.pool.mem_limit = 64 << 10;
  o.pool.io_threads = 1;
  o.pool.spill_dir = dir;
  int rc = tarn_rt_create(&o, &rt);
  if (rc != 0) {
    fprintf(stderr, "tarn_rt_create: %d\n", rc);
    rmdir(dir);
    abort();
  }
  atexit(cleanup);
  return 0;
}

/* The element at p, as the header says it is stored. */
static double decode(const unsigned char *p, const tarn__npy *h) {
  const uint16_t one = 1;
  int host_big = *(const unsigned char *)&one == 0;
  unsigned char b[8];
  for (size_t i = 0; i < h->item; i++)
    b[i] = p[h->big_endian == host_big ? i : h->item - 1 - i];
  if (h->item == 8) {
    double d;
    memcpy(&d, b, 8);
    return d;
  }
  float f;
  memcpy(&f, b, 4);
  return (double)f;
}

/* Equal bits, or both NaN. */
static int same(double a, double b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

static void mismatch(const char *what, size_t i, size_t j, double got,
                     double want) {
  fprintf(stderr, "%s: (%zu, %zu) is %a, want %a\n", what, i, j, got, want);
  abort();
}

static void expect(int ok, const char *what, int rc) {
  if (ok) return;
  fprintf(stderr, "%s: %d\n", what, rc);
  abort();
}

/* `a` (m x n) holds the file's elements; its column-major copy to buf. */
static void check_elements(const char *what, tarn_matrix *a, double *buf,
                           const unsigned char *elements, const tarn__npy *h) {
  size_t m = h->rows, n = h->cols;
  expect(tarn_matrix_rows(a) == m && tarn_matrix_cols(a) == n, what, 0);
  int rc = tarn_matrix_to_buffer(a, buf, m);
  expect(rc == 0, what, rc);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      size_t k = h->fortran_order ? i + j * m : i * n + j;
      double want = decode(elements + k * h->item, h);
      if (!same(buf[i + j * m], want))
        mismatch(what, i, j, buf[i + j * m], want);
    }
}

/* `b` written to a file and opened again with mb and nb swapped holds the
 * elements in want (m x n, column-major). */
static void round_trip(tarn_matrix *b, size_t mb, size_t nb, double *buf,
                       const double *want) {
  size_t m = tarn_matrix_rows(b), n = tarn_matrix_cols(b);
  int rc = tarn_matrix_to_file(b, out_path);
  expect(rc == 0, "tarn_matrix_to_file", rc);
  tarn_matrix *c = NULL;
  rc = tarn_matrix_open_file(rt, out_path, nb, mb, &c);
  expect(rc == 0, "tarn_matrix_open_file of the written file", rc);
  expect(tarn_matrix_rows(c) == m && tarn_matrix_cols(c) == n,
         "written file's shape", 0);
  rc = tarn_matrix_to_buffer(c, buf, m);
  expect(rc == 0, "tarn_matrix_to_buffer of the written file", rc);
  for (size_t k = 0; k < m * n; k++)
    if (!same(buf[k], want[k]))
      mismatch("round trip", k % m, k / m, buf[k], want[k]);
  tarn_matrix_destroy(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t mb = 1 + data[0] % 8, nb = 1 + data[1] % 8;
  const uint8_t *file = data + 2;
  size_t len = size - 2;
  FILE *fp = fopen(in_path, "wb");
  expect(fp != NULL, "fopen", 0);
  expect(fwrite(file, 1, len, fp) == len, "fwrite", 0);
  expect(fclose(fp) == 0, "fclose", 0);

  tarn__npy h;
  int want = tarn__npy_parse(file, len, &h);
  if (want == 0 && len - h.data_offset < h.data_bytes) want = TARN_EFORMAT;
  tarn_matrix *a = NULL, *b = NULL;
  int rc = tarn_matrix_from_file(rt, in_path, mb, nb, &a);
  expect(rc == want && (rc == 0) == (a != NULL), "tarn_matrix_from_file", rc);
  rc = tarn_matrix_open_file(rt, in_path, mb, nb, &b);
  expect(rc == want && (rc == 0) == (b != NULL), "tarn_matrix_open_file", rc);
  if (want != 0) return 0;

  size_t m = h.rows, n = h.cols;
  double *ba = malloc(m * n * sizeof *ba), *bb = malloc(m * n * sizeof *bb);
  expect(ba != NULL && bb != NULL, "malloc", 0);
  const unsigned char *elements = file + h.data_offset;
  check_elements("tarn_matrix_from_file", a, ba, elements, &h);
  check_elements("tarn_matrix_open_file", b, bb, elements, &h);
  /* A second pass over the opened matrix, whose tiles may have been
   * dropped and are read again. */
  double sa = 0, sb = 0;
  rc = tarn_matrix_sum(a, &sa);
  expect(rc == 0, "tarn_matrix_sum", rc);
  rc = tarn_matrix_sum(b, &sb);
  expect(rc == 0, "tarn_matrix_sum of the opened matrix", rc);
  if (!same(sa, sb)) {
    fprintf(stderr, "sums differ: %a, opened %a\n", sa, sb);
    abort();
  }
  if (data[0] >= 128) round_trip(b, mb, nb, ba, bb);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  free(ba);
  free(bb);
  return 0;
}
