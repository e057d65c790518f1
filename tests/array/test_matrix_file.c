/* test_matrix_file.c: tarn_matrix_from_file, tarn_matrix_open_file and
 * tarn_matrix_to_file. NumPy's own files of every kind tarn reads come
 * back as the matrix numpy saved, loaded or opened, in any tiling and
 * under a memory limit that spills; an opened matrix reads each tile when
 * it is first used, drops unwritten tiles rather than spill them, fails
 * with TARN_ESTALE once its file changes in place, and closes its file
 * when destroyed; a
 * saved matrix loads in numpy as the same array (both when a Python with
 * numpy is installed: scripts/install-deps.sh installs one). Without
 * numpy: a save and load keeps every bit (NaN, infinities, -0,
 * subnormals); hand-made headers numpy accepts are read and those it
 * refuses get TARN_EFORMAT; the header reader survives 100000 mutated
 * headers. A failed save (a full disk, a write or flush error, a
 * directory in the way) leaves the old file and no temporary one; a
 * failed read leaves nothing; each open error has its status; a relative
 * path is the working directory's; prim's calls map every errno and move
 * buffers of any length, empty ones too.
 *
 * The library's pread, preadv, pwrite, pwritev and fdatasync are wrapped at
 * link time (CMakeLists.txt) so that the tests can make the Nth call fail. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "array/matrix_internal.h"
#include "array/npy.h"
#include "prim/prim.h"
#include "support.h"
#include "tarn.h"

/* ---- failures on demand -------------------------------------------------- */

/* The Nth read (pread, preadv), write (pwrite, pwritev) or fdatasync
 * from now fails with `fail_errno` (0: none); every call is counted. */
static atomic_int read_fails_at, write_fails_at, fdatasync_fails_at;
static atomic_int reads_seen, writes_seen;
static atomic_int fail_errno = EIO;

ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t __real_preadv(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __real_pwritev(int fd, const struct iovec *iov, int n, off_t off);
int __real_fdatasync(int fd);

/* Counts a call in *seen; whether the call is the one to fail. */
static bool fails_now(atomic_int *at, atomic_int *seen) {
  if (seen != NULL) atomic_fetch_add(seen, 1);
  int left = atomic_load(at);
  while (left > 0 && !atomic_compare_exchange_weak(at, &left, left - 1)) {
  }
  if (left == 1) errno = atomic_load(&fail_errno);
  return left == 1;
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off) {
  return fails_now(&read_fails_at, &reads_seen) ? -1
                                                : __real_pread(fd, buf, n, off);
}

ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t off) {
  return fails_now(&read_fails_at, &reads_seen)
             ? -1
             : __real_preadv(fd, iov, n, off);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off) {
  return fails_now(&write_fails_at, &writes_seen)
             ? -1
             : __real_pwrite(fd, buf, n, off);
}

ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  return fails_now(&write_fails_at, &writes_seen)
             ? -1
             : __real_pwritev(fd, iov, n, off);
}

int __wrap_fdatasync(int fd) {
  return fails_now(&fdatasync_fails_at, NULL) ? -1 : __real_fdatasync(fd);
}

/* ---- helpers ------------------------------------------------------------- */

static char dir[64];

static int setup(void **state) {
  (void)state;
  strcpy(dir, "/tmp/tarn-test-XXXXXX");
  return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* dir/name into out. */
static const char *in_dir(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
  return out;
}

/* The value every file of these tests holds at (i, j). */
static double value_at(size_t i, size_t j) {
  return (double)i * 1000.0 + (double)j + 0.1;
}

/* Whether the matrix holds f(i, j) at every (i, j): the float32 rounding
 * of value_at when `single`. */
static void assert_holds_values(tarn_matrix *a, size_t m, size_t n,
                                bool single) {
  assert_int_equal(tarn_matrix_rows(a), m);
  assert_int_equal(tarn_matrix_cols(a), n);
  double *b = test_buffer_of(a);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) {
      double want = single ? (double)(float)value_at(i, j) : value_at(i, j);
      if (b[i + j * m] != want)
        fail_msg("(%zu, %zu): %.17g, not %.17g", i, j, b[i + j * m], want);
    }
  free(b);
}

/* An m x n matrix of value_at in tiles mb x nb. */
static tarn_matrix *values_matrix(tarn_rt *rt, size_t m, size_t n, size_t mb,
                                  size_t nb) {
  double *buf = malloc(m * n * sizeof *buf);
  assert_non_null(buf);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) buf[i + j * m] = value_at(i, j);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, mb, nb, buf, m, &a), 0);
  free(buf);
  return a;
}

/* The number of entries of dir whose name holds ".tarn-" (temporaries);
 * the path of the last one seen into out when out is not NULL. */
static int temporaries(char *out, size_t size) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, ".tarn-") != NULL) {
      n++;
      if (out != NULL) snprintf(out, size, "%s/%s", dir, e->d_name);
    }
  closedir(d);
  return n;
}

/* The number of temporaries in dir. */
static int temporaries_left(void) { return temporaries(NULL, 0); }

/* Writes an .npy file by hand: magic, version major.0, the header's
 * length, `dict` padded with spaces to a multiple of 64 and a newline,
 * then `bytes` bytes of data. */
static void write_npy(const char *path, int major, const char *dict,
                      const void *data, size_t bytes) {
  size_t fixed = major == 1 ? 10 : 12, n = strlen(dict);
  size_t total = (fixed + n + 1 + 63) / 64 * 64;
  unsigned char head[512];
  assert_true(total <= sizeof head);
  memcpy(head, "\x93NUMPY", 6);
  head[6] = (unsigned char)major;
  head[7] = 0;
  size_t len = total - fixed;
  for (size_t k = 0; k < fixed - 8; k++)
    head[8 + k] = (unsigned char)(len >> (8 * k));
  memcpy(head + fixed, dict, n);
  memset(head + fixed + n, ' ', total - fixed - n - 1);
  head[total - 1] = '\n';
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(head, 1, total, f), total);
  if (bytes > 0) assert_int_equal(fwrite(data, 1, bytes, f), bytes);
  assert_int_equal(fclose(f), 0);
}

/* ---- numpy's files ------------------------------------------------------- */

/* A Python that has numpy, or NULL. Called with no runtime alive (it
 * forks). */
static const char *python_with_numpy(void) {
  static const char *const candidates[] = {"python3", "/usr/bin/python3"};
  for (size_t k = 0; k < 2; k++) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "%s -c 'import numpy' >/dev/null 2>&1",
             candidates[k]);
    if (system(cmd) == 0) return candidates[k];
  }
  return NULL;
}

/* Runs `script` (Python, with numpy as np, sys, and dir as d) and asserts
 * that it exits 0. */
static void run_python(const char *python, const char *script) {
  char path[128], cmd[512];
  FILE *f = fopen(in_dir(path, sizeof path, "script.py"), "w");
  assert_non_null(f);
  fprintf(f, "import sys\nimport numpy as np\nd = sys.argv[1]\n%s", script);
  assert_int_equal(fclose(f), 0);
  snprintf(cmd, sizeof cmd, "%s %s %s", python, path, dir);
  int status = system(cmd);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

enum { NM = 300, NN = 170 };

/* Whether the file at `path` holds the values of an NM x NN matrix, read
 * in tiles of mb x mb. */
static void assert_file_holds_values(tarn_rt *rt, const char *path, size_t mb) {
  tarn_matrix *back = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, mb, mb, &back), 0);
  assert_holds_values(back, NM, NN, false);
  tarn_matrix_destroy(back);
}

/* numpy saves the same values in every kind tarn reads. */
static const char numpy_saves[] =
    "i = np.arange(300).reshape(300, 1)\n"
    "j = np.arange(170).reshape(1, 170)\n"
    "v = i * 1000.0 + j + 0.1\n"
    "np.save(d + '/c8.npy', v)\n"
    "np.save(d + '/f8.npy', np.asfortranarray(v))\n"
    "np.save(d + '/c4.npy', v.astype('<f4'))\n"
    "np.save(d + '/fbe8.npy', np.asfortranarray(v.astype('>f8')))\n"
    "np.save(d + '/cbe4.npy', v.astype('>f4'))\n"
    "np.save(d + '/vector.npy', v[:, 0].copy())\n"
    "for major in (2, 3):\n"
    "    with open(d + '/v%d.npy' % major, 'wb') as f:\n"
    "        np.lib.format.write_array(f, v, version=(major, 0))\n";

static void numpy_files_read_as_numpy_saved_them(void **state) {
  (void)state;
  const char *python = python_with_numpy();
  if (python == NULL) {
    print_message("no Python with numpy: skipped\n");
    skip();
  }
  run_python(python, numpy_saves);
  static const struct {
    const char *name;
    bool single;
    size_t cols;
  } files[] = {{"c8.npy", false, NN},  {"f8.npy", false, NN},
               {"c4.npy", true, NN},   {"fbe8.npy", false, NN},
               {"cbe4.npy", true, NN}, {"vector.npy", false, 1},
               {"v2.npy", false, NN},  {"v3.npy", false, NN}};
  static const size_t tilings[][2] = {{NM, NN}, {64, 50}, {7, 300}, {1, 1}};
  /* Loaded, and opened (each tile read by itself when used). */
  static int (*const readers[])(tarn_rt *, const char *, size_t, size_t,
                                tarn_matrix **) = {tarn_matrix_from_file,
                                                   tarn_matrix_open_file};
  tarn_rt *rt = test_rt(3, 0);
  for (size_t r = 0; r < 2; r++)
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++)
      for (size_t t = 0; t < sizeof tilings / sizeof tilings[0]; t++) {
        /* Tiles of one element: in both element orders of float64 and
         * the vector only (51000 tiles, each opened tile read and its
         * file checked by itself, took minutes under AddressSanitizer on
         * a slow machine for the eight files). */
        if (tilings[t][0] == 1 && f >= 2 && files[f].cols != 1) continue;
        char path[128];
        tarn_matrix *a = NULL;
        assert_int_equal(
            readers[r](rt, in_dir(path, sizeof path, files[f].name),
                       tilings[t][0], tilings[t][1], &a),
            0);
        assert_holds_values(a, NM, files[f].cols, files[f].single);
        tarn_matrix_destroy(a);
      }
  assert_int_equal(tarn_rt_destroy(rt), 0);

  /* Under a limit of a quarter of the matrix: loaded tiles spill as they
   * come, opened ones are dropped and read again. */
  size_t limit = NM * NN * sizeof(double) / 4;
  rt = test_rt(2, limit);
  for (size_t r = 0; r < 2; r++)
    for (size_t f = 0; f < 5; f++) {
      char path[128];
      tarn_matrix *a = NULL;
      assert_int_equal(
          readers[r](rt, in_dir(path, sizeof path, files[f].name), 32, 32, &a),
          0);
      assert_holds_values(a, NM, NN, files[f].single);
      assert_holds_values(a, NM, NN, files[f].single);
      tarn_matrix_destroy(a);
    }
  test_rt_destroy_spilled(rt, limit);
}

static void numpy_loads_a_saved_matrix_as_the_same_array(void **state) {
  (void)state;
  const char *python = python_with_numpy();
  if (python == NULL) {
    print_message("no Python with numpy: skipped\n");
    skip();
  }
  static const size_t tilings[][2] = {{NM, NN}, {64, 50}, {7, 300}};
  for (size_t t = 0; t < 3; t++) {
    tarn_rt *rt = test_rt(3, t == 1 ? NM * NN * sizeof(double) / 4 : 0);
    tarn_matrix *a = values_matrix(rt, NM, NN, tilings[t][0], tilings[t][1]);
    char path[128], name[32];
    snprintf(name, sizeof name, "saved%zu.npy", t);
    assert_int_equal(tarn_matrix_to_file(a, in_dir(path, sizeof path, name)),
                     0);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
  assert_int_equal(temporaries_left(), 0);
  run_python(python,
             "i = np.arange(300).reshape(300, 1)\n"
             "j = np.arange(170).reshape(1, 170)\n"
             "v = i * 1000.0 + j + 0.1\n"
             "for t in range(3):\n"
             "    a = np.load(d + '/saved%d.npy' % t)\n"
             "    assert a.dtype == np.float64 and a.shape == (300, 170)\n"
             "    assert np.array_equal(a, v)\n");
}

/* ---- without numpy ------------------------------------------------------- */

static void a_save_and_load_keeps_every_bit(void **state) {
  (void)state;
  const size_t m = 97, n = 41;
  double *buf = malloc(m * n * sizeof *buf);
  assert_non_null(buf);
  const double specials[] = {NAN, -NAN,        INFINITY, -INFINITY,   -0.0,
                             0.0, DBL_MIN / 4, -DBL_MAX, DBL_TRUE_MIN};
  uint64_t x = 88172645463325252u;
  for (size_t k = 0; k < m * n; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    memcpy(&buf[k], &x, sizeof x); /* any 64 bits, NaN payloads too */
    if (k % 7 == 0) buf[k] = specials[(k / 7) % 9];
  }
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, m, n, 10, 9, buf, m, &a), 0);
  char path[128];
  in_dir(path, sizeof path, "bits.npy");
  assert_int_equal(tarn_matrix_to_file(a, path), 0);
  tarn_matrix *b = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 13, 40, &b), 0);
  assert_int_equal(tarn_matrix_tile_rows(b), 13);
  assert_int_equal(tarn_matrix_tile_cols(b), 40);
  double *back = test_buffer_of(b);
  assert_memory_equal(back, buf, m * n * sizeof *buf);

  /* The file is exactly a 64-byte-aligned header and the elements. */
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, 128 + m * n * sizeof(double));
  mode_t mask = umask(0);
  umask(mask);
  assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
  free(back);
  free(buf);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A save orders after the tasks writing the matrix; a failed writer makes
 * it TARN_ECANCELED, and the file stays as it was. */
static void a_save_waits_for_writers_and_refuses_a_failed_one(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = values_matrix(rt, 50, 60, 16, 16);
  tarn_matrix *b = NULL;
  assert_int_equal(tarn_matrix_axpb(a, 2.0, 1.0, &b), 0); /* not waited */
  char path[128];
  in_dir(path, sizeof path, "later.npy");
  assert_int_equal(tarn_matrix_to_file(b, path), 0);
  tarn_matrix *c = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 50, 60, &c), 0);
  double *got = test_buffer_of(c);
  for (size_t j = 0; j < 60; j++)
    for (size_t i = 0; i < 50; i++)
      assert_true(got[i + j * 50] == 2.0 * value_at(i, j) + 1.0);
  free(got);

  test_fail_first_tile(rt, b);
  assert_int_equal(tarn_matrix_to_file(b, path), TARN_ECANCELED);
  assert_int_equal(temporaries_left(), 0);
  tarn_matrix *d = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 64, 64, &d), 0);
  got = test_buffer_of(d);
  assert_true(got[0] == 2.0 * value_at(0, 0) + 1.0);
  free(got);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(c);
  tarn_matrix_destroy(d);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Headers numpy writes or accepts, by hand: each reads as its 2 x 3
 * array, of its element type and order. */
static void hand_made_headers_numpy_accepts_are_read(void **state) {
  (void)state;
  static const struct {
    int major;
    const char *dict;
    size_t m, n;
  } ok[] = {
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 2, 3},
      {1, "{\"shape\": (2, 3), \"descr\": \"<f8\", \"fortran_order\": False}",
       2, 3},
      {1, "{'descr':'<f8','fortran_order':False,'shape':(2L,3L)}", 2, 3},
      {2,
       "{ 'fortran_order' : False ,\n 'shape' : ( 2 , 3 , ) ,\t"
       "'descr' : '<f8' , }",
       2, 3},
      {3, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 6, 1},
  };
  double data[6] = {1, 2, 3, 4, 5, 6}; /* row-major 2 x 3 */
  tarn_rt *rt = test_rt(1, 0);
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    char path[128];
    in_dir(path, sizeof path, "hand.npy");
    write_npy(path, ok[k].major, ok[k].dict, data, sizeof data);
    tarn_matrix *a = NULL;
    int rc = tarn_matrix_from_file(rt, path, 2, 2, &a);
    if (rc != 0) fail_msg("%s: %s", ok[k].dict, tarn_status_name(rc));
    assert_int_equal(tarn_matrix_rows(a), ok[k].m);
    assert_int_equal(tarn_matrix_cols(a), ok[k].n);
    double v;
    assert_int_equal(tarn_matrix_get(a, ok[k].m - 1, ok[k].n - 1, &v), 0);
    assert_true(v == 6.0);
    if (ok[k].n == 3) {
      assert_int_equal(tarn_matrix_get(a, 1, 0, &v), 0);
      assert_true(v == 4.0); /* row-major: (1, 0) is the fourth */
    }
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Lines (a C-order row, a Fortran-order column) longer than the
 * conversion buffer (512 KiB) are read in pieces: a C-order row of 70000
 * doubles, a big-endian float32 column of 140000; in tilings that cut
 * them and that do not. */
static void long_lines_are_read_in_pieces(void **state) {
  (void)state;
  const size_t wide = 70000, tall = 140000;
  double *rows = malloc(3 * wide * sizeof *rows);
  uint32_t *column = malloc(2 * tall * sizeof *column);
  assert_non_null(rows);
  assert_non_null(column);
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < wide; j++) rows[i * wide + j] = value_at(i, j);
  for (size_t j = 0; j < 2; j++)
    for (size_t i = 0; i < tall; i++) {
      float f = (float)value_at(i, j);
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      column[j * tall + i] = __builtin_bswap32(u);
    }
  char c_path[128], f_path[128], dict[128];
  snprintf(dict, sizeof dict,
           "{'descr': '<f8', 'fortran_order': False, 'shape': (3, %zu), }",
           wide);
  write_npy(in_dir(c_path, sizeof c_path, "wide.npy"), 1, dict, rows,
            3 * wide * sizeof *rows);
  snprintf(dict, sizeof dict,
           "{'descr': '>f4', 'fortran_order': True, 'shape': (%zu, 2), }",
           tall);
  write_npy(in_dir(f_path, sizeof f_path, "tall.npy"), 1, dict, column,
            2 * tall * sizeof *column);
  free(rows);
  free(column);
  tarn_rt *rt = test_rt(2, 0);
  static const size_t c_tiles[][2] = {{3, 70000}, {2, 30000}};
  static const size_t f_tiles[][2] = {{140000, 1}, {50000, 2}};
  for (size_t t = 0; t < 2; t++) {
    tarn_matrix *a = NULL;
    assert_int_equal(
        tarn_matrix_from_file(rt, c_path, c_tiles[t][0], c_tiles[t][1], &a), 0);
    assert_holds_values(a, 3, wide, false);
    tarn_matrix_destroy(a);
    assert_int_equal(
        tarn_matrix_from_file(rt, f_path, f_tiles[t][0], f_tiles[t][1], &a), 0);
    assert_holds_values(a, tall, 2, true);
    tarn_matrix_destroy(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* Headers numpy would refuse (or tarn cannot hold) are refused, each with
 * its status, and no matrix is made. */
static void headers_numpy_refuses_are_refused(void **state) {
  (void)state;
  static const struct {
    const char *dict;
    int rc;
  } bad[] = {
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }",
       TARN_EFORMAT},
      {"{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }",
       TARN_EFORMAT},
      {"{'descr': '|f8', 'fortran_order': False, 'shape': (2, 3), }",
       TARN_EFORMAT},
      {"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (), }", TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (6), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2 3), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2, 3), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'shape': (2, 3), }", TARN_EFORMAT},
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, "
       "3), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'x': 1}",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 3), }", TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': Truely, 'shape': (2, 3), }",
       TARN_EFORMAT},
      {"{'descr: '<f8', 'fortran_order': False, 'shape': (2, 3), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }}",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3),, }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)",
       TARN_EFORMAT},
      {"['descr', '<f8']", TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': "
       "(99999999999999999999, 1), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': "
       "(4294967296, 4294967296), }",
       TARN_EFORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }",
       TARN_EFORMAT}, /* 72 bytes of data needed, 48 there */
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }",
       TARN_EINVAL},
  };
  double data[6] = {0};
  tarn_rt *rt = test_rt(1, 0);
  char path[128];
  in_dir(path, sizeof path, "bad.npy");
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    write_npy(path, 1, bad[k].dict, data, sizeof data);
    tarn_matrix *a = (tarn_matrix *)&data; /* must stay untouched */
    int rc = tarn_matrix_from_file(rt, path, 2, 2, &a);
    if (rc != bad[k].rc)
      fail_msg("%s: %s, not %s", bad[k].dict, tarn_status_name(rc),
               tarn_status_name(bad[k].rc));
    assert_ptr_equal(a, (tarn_matrix *)&data);
  }

  /* The fixed part: the magic, the version, the header's length. */
  static const struct {
    const char *bytes;
    size_t len;
  } prefixes[] = {
      {"", 0},
      {"\x93NUMPY\x01", 7},
      {"\x93NUMPZ\x01\x00\x46\x00", 10},
      {"\x93NUMPY\x04\x00\x46\x00", 10},
      {"\x93NUMPY\x01\x01\x46\x00", 10},
      {"\x93NUMPY\x02\x00\x46\x00", 10},               /* v2 needs 4 bytes */
      {"\x93NUMPY\x01\x00\xf6\x00", 10},               /* past the file's end */
      {"\x93NUMPY\x02\x00\x00\x00\x00\x10", 12},       /* 256 MiB of header */
      {"{'descr': '<f8', 'fortran_order': False", 40}, /* no magic */
  };
  for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(prefixes[k].bytes, 1, prefixes[k].len, f),
                     prefixes[k].len);
    assert_int_equal(fclose(f), 0);
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_from_file(rt, path, 2, 2, &a), TARN_EFORMAT);
    assert_null(a);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* The header reader on 100000 mutations of a valid header: it never reads
 * outside the bytes it is given (ASan), and accepts only headers whose
 * figures agree. */
static void the_header_reader_survives_mutated_headers(void **state) {
  (void)state;
  unsigned char valid[128];
  size_t len = tarn__npy_format(valid, sizeof valid, 300, 170, false);
  assert_int_equal(len, 128);
  tarn__npy h;
  assert_int_equal(tarn__npy_parse(valid, len, &h), 0);
  assert_int_equal(h.rows, 300);
  assert_int_equal(h.cols, 170);
  assert_int_equal(h.item, 8);
  assert_true(h.fortran_order && !h.big_endian);
  assert_int_equal(h.data_offset, 128);

  static const char alphabet[] = "{}()[],:'\" \n0123456789LTrueFalse<>|f48x";
  uint64_t x = 0x9e3779b97f4a7c15u;
  int accepted = 0;
  for (int round = 0; round < 100000; round++) {
    unsigned char *buf = malloc(len);
    assert_non_null(buf);
    memcpy(buf, valid, len);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t n = len - (x % 4 == 0 ? (x >> 8) % len : 0); /* cut it short */
    for (int k = 0; k < 1 + (int)(x >> 20) % 4; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at = x % len;
      buf[at] =
          (x >> 32) % 2
              ? (unsigned char)(x >> 40)
              : (unsigned char)alphabet[(x >> 40) % (sizeof alphabet - 1)];
    }
    unsigned char *cut = malloc(n > 0 ? n : 1); /* ASan sees past n */
    assert_non_null(cut);
    memcpy(cut, buf, n);
    int rc = tarn__npy_parse(cut, n, &h);
    assert_true(rc == 0 || rc == TARN_EFORMAT || rc == TARN_EINVAL);
    if (rc == 0) {
      accepted++;
      assert_true(h.data_offset <= n);
      assert_true(h.item == 4 || h.item == 8);
      assert_true(h.rows > 0 && h.cols > 0);
      assert_true(h.data_bytes == (uint64_t)h.rows * h.cols * h.item);
    }
    free(cut);
    free(buf);
  }
  assert_true(accepted > 0); /* harmless mutations (a digit) were met */
}

/* ---- failures ------------------------------------------------------------ */

/* A save that fails keeps the old file whole and leaves no temporary; a
 * load that fails makes nothing. */
static void a_failed_save_keeps_the_old_file(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *old = values_matrix(rt, 40, 30, 8, 8);
  tarn_matrix *big = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 300, 200, 64, 64, 7.0, &big), 0);
  char path[128];
  in_dir(path, sizeof path, "kept.npy");
  assert_int_equal(tarn_matrix_to_file(old, path), 0);

  /* The disk fills: a file size limit below the new file's. */
  struct rlimit was;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
  void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = {64 * 1024, was.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  int rc = tarn_matrix_to_file(big, path);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
  signal(SIGXFSZ, handler);
  assert_int_equal(rc, TARN_ENOSPC);

  /* A write fails halfway through the tiles (counted in a save that
   * works), then the flush. */
  char other[128];
  atomic_store(&writes_seen, 0);
  assert_int_equal(
      tarn_matrix_to_file(big, in_dir(other, sizeof other, "other.npy")), 0);
  int writes = atomic_load(&writes_seen);
  assert_true(writes >= 3); /* the header, then the tiles in calls */
  atomic_store(&fail_errno, EIO);
  atomic_store(&write_fails_at, writes / 2 + 1);
  assert_int_equal(tarn_matrix_to_file(big, path), TARN_EIO);
  atomic_store(&write_fails_at, 0);
  atomic_store(&fail_errno, ENOSPC);
  atomic_store(&write_fails_at, writes);
  assert_int_equal(tarn_matrix_to_file(big, path), TARN_ENOSPC);
  atomic_store(&write_fails_at, 0);
  atomic_store(&fail_errno, EIO);
  atomic_store(&fdatasync_fails_at, 1);
  assert_int_equal(tarn_matrix_to_file(big, path), TARN_EIO);
  atomic_store(&fdatasync_fails_at, 0);
  assert_int_equal(unlink(other), 0);

  /* A directory where the file should go: the rename fails. */
  char sub[128];
  assert_int_equal(mkdir(in_dir(sub, sizeof sub, "sub"), 0700), 0);
  assert_int_equal(tarn_matrix_to_file(big, sub), TARN_EINVAL);
  assert_int_equal(rmdir(sub), 0);

  assert_int_equal(temporaries_left(), 0);
  tarn_matrix *back = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 40, 30, &back), 0);
  assert_holds_values(back, 40, 30, false);

  /* A read fails halfway (counted in a load that works), in both orders
   * of the file: no matrix, nothing leaked (ASan). */
  in_dir(path, sizeof path, "big.npy");
  assert_int_equal(tarn_matrix_to_file(big, path), 0);
  for (int c_order = 0; c_order < 2; c_order++) {
    if (c_order) { /* the same bytes, read as rows of a 200 x 300 array */
      char dict[96];
      snprintf(dict, sizeof dict,
               "{'descr': '<f8', 'fortran_order': False, 'shape': (200, "
               "300), }");
      double *rows = test_buffer_of(big);
      write_npy(path, 1, dict, rows, 300 * 200 * sizeof(double));
      free(rows);
    }
    tarn_matrix *fine = NULL;
    atomic_store(&reads_seen, 0);
    assert_int_equal(tarn_matrix_from_file(rt, path, 64, 64, &fine), 0);
    tarn_matrix_destroy(fine);
    int reads = atomic_load(&reads_seen);
    assert_true(reads >= 4); /* the header's, then the tiles' */
    atomic_store(&read_fails_at, reads / 2 + 2);
    tarn_matrix *none = NULL;
    assert_int_equal(tarn_matrix_from_file(rt, path, 64, 64, &none), TARN_EIO);
    assert_null(none);
    atomic_store(&read_fails_at, 0);
  }

  tarn_matrix_destroy(old);
  tarn_matrix_destroy(big);
  tarn_matrix_destroy(back);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A tile larger than the memory limit cannot be read: TARN_ENOMEM, no
 * matrix, the file and the runtime as they were. */
static void a_tile_larger_than_the_limit_is_enomem(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = values_matrix(rt, 600, 600, 600, 600);
  char path[128];
  assert_int_equal(tarn_matrix_to_file(a, in_dir(path, sizeof path, "big.npy")),
                   0);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  rt = test_rt(2, 1u << 20); /* 1 MiB; a tile of 600 x 600 is 2.7 MiB */
  tarn_matrix *none = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 600, 600, &none),
                   TARN_ENOMEM);
  assert_null(none);
  assert_int_equal(tarn_matrix_from_file(rt, path, 100, 100, &none), 0);
  assert_holds_values(none, 600, 600, false);
  tarn_matrix_destroy(none);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  /* a tile counts in the whole pages the pool charges: 40 x 40 (12800
   * bytes, 16 KiB) never fits under 14000 bytes, whichever call opens or
   * makes the matrix; 30 x 30 (8 KiB) does */
  rt = test_rt(2, 14000);
  none = NULL;
  assert_int_equal(tarn_matrix_from_file(rt, path, 40, 40, &none), TARN_ENOMEM);
  assert_int_equal(tarn_matrix_open_file(rt, path, 40, 40, &none), TARN_ENOMEM);
  char made[128];
  assert_int_equal(
      tarn_matrix_create_file(rt, in_dir(made, sizeof made, "made.npy"), 600,
                              600, 40, 40, &none),
      TARN_ENOMEM);
  assert_null(none);
  assert_int_equal(access(made, F_OK), -1);
  assert_int_equal(temporaries_left(), 0);
  assert_int_equal(tarn_matrix_open_file(rt, path, 30, 30, &none), 0);
  assert_holds_values(none, 600, 600, false);
  tarn_matrix_destroy(none);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A relative path saves in, and loads from, the working directory (whose
 * entry the save flushes as "."). */
static void a_relative_path_is_the_working_directory(void **state) {
  (void)state;
  char was[4096];
  assert_non_null(getcwd(was, sizeof was));
  assert_int_equal(chdir(dir), 0);
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = values_matrix(rt, 30, 20, 8, 8), *b = NULL;
  int saved = tarn_matrix_to_file(a, "relative.npy");
  int loaded = tarn_matrix_from_file(rt, "relative.npy", 30, 20, &b);
  assert_int_equal(chdir(was), 0);
  assert_int_equal(saved, 0);
  assert_int_equal(loaded, 0);
  assert_holds_values(b, 30, 20, false);
  char path[128];
  assert_int_equal(access(in_dir(path, sizeof path, "relative.npy"), F_OK), 0);
  tarn_matrix_destroy(a);
  tarn_matrix_destroy(b);
  /* A created file's relative path is the working directory's at the
   * call: the commit, and a destroy without one, find it after the
   * program moved (the commit failed with TARN_ENOENT, and the destroy
   * left the temporaries behind). */
  tarn_matrix *c = NULL, *d = NULL;
  assert_int_equal(chdir(dir), 0);
  int made_c = tarn_matrix_create_file(rt, "created.npy", 30, 20, 8, 8, &c);
  int made_d = tarn_matrix_create_file(rt, "dropped.npy", 30, 20, 8, 8, &d);
  assert_int_equal(chdir(was), 0);
  assert_int_equal(made_c, 0);
  assert_int_equal(made_d, 0);
  assert_int_equal(temporaries_left(), 2);
  assert_int_equal(tarn_matrix_commit_file(c), 0); /* c is gone */
  tarn_matrix_destroy(d);
  assert_int_equal(temporaries_left(), 0);
  assert_int_equal(tarn_matrix_from_file(
                       rt, in_dir(path, sizeof path, "created.npy"), 8, 8, &c),
                   0);
  double sum = -1;
  assert_int_equal(tarn_matrix_sum(c, &sum), 0);
  assert_true(sum == 0);
  tarn_matrix_destroy(c);
  assert_int_equal(access(in_dir(path, sizeof path, "dropped.npy"), F_OK), -1);
  assert_int_equal(unlink(in_dir(path, sizeof path, "created.npy")), 0);
  /* In a working directory whose absolute name leaves no room for the
   * temporary's (about 4080 bytes), or is past PATH_MAX, a relative name
   * is kept as given and works (made absolute, it failed with TARN_ENOENT
   * or TARN_EIO). */
  char name[201];
  memset(name, 'd', 200);
  name[200] = '\0';
  assert_int_equal(chdir(dir), 0);
  int depth = 0, made[2] = {-1, -1}, committed[2] = {-1, -1};
  for (int deep = 0; deep < 2; deep++) {
    char at[PATH_MAX + 1];
    while (getcwd(at, sizeof at) != NULL &&
           strlen(at) < (deep ? PATH_MAX - 100 : PATH_MAX - 250)) {
      if (mkdir(name, 0700) != 0 || chdir(name) != 0) break;
      depth++;
    }
    if (deep) /* past PATH_MAX */
      for (int k = 0; k < 2 && mkdir(name, 0700) == 0 && chdir(name) == 0; k++)
        depth++;
    c = NULL;
    made[deep] = tarn_matrix_create_file(rt, "m.npy", 4, 4, 2, 2, &c);
    if (made[deep] == 0) committed[deep] = tarn_matrix_commit_file(c);
    unlink("m.npy");
  }
  for (; depth > 0; depth--) { /* back up, removing the chain */
    assert_int_equal(chdir(".."), 0);
    assert_int_equal(rmdir(name), 0);
  }
  assert_int_equal(chdir(was), 0);
  for (int deep = 0; deep < 2; deep++) {
    assert_int_equal(made[deep], 0);
    assert_int_equal(committed[deep], 0);
  }
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* prim's file calls: each errno's status, and buffers of every length
 * (empty ones among them) moved whole in one call's order. */
static void file_calls_map_errors_and_move_every_buffer(void **state) {
  (void)state;
  static const struct {
    int err, status;
  } map[] = {{ENOENT, TARN_ENOENT},       {ENOTDIR, TARN_ENOENT},
             {ENAMETOOLONG, TARN_ENOENT}, {ELOOP, TARN_ENOENT},
             {EACCES, TARN_EACCES},       {EPERM, TARN_EACCES},
             {EROFS, TARN_EACCES},        {ENOSPC, TARN_ENOSPC},
             {EDQUOT, TARN_ENOSPC},       {EFBIG, TARN_ENOSPC},
             {ENOMEM, TARN_ENOMEM},       {EMFILE, TARN_EBUSY},
             {ENFILE, TARN_EBUSY},        {EISDIR, TARN_EINVAL},
             {EINVAL, TARN_EINVAL},       {EIO, TARN_EIO},
             {EBADF, TARN_EIO},           {0, TARN_EIO}};
  for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
    assert_int_equal(tarn__status_of_errno(map[k].err), map[k].status);

  char path[128];
  FILE *f = fopen(in_dir(path, sizeof path, "iov.bin"), "w+b");
  assert_non_null(f);
  int fd = fileno(f);
  unsigned char out[64], back[64];
  for (int k = 0; k < 64; k++) out[k] = (unsigned char)(k * 7 + 1);
  struct iovec w[] = {
      {out, 0}, {out, 10}, {out + 10, 0}, {out + 10, 54}, {out, 0}};
  assert_int_equal(tarn__file_writev_at(fd, w, 5, 100), 0);
  memset(back, 0, sizeof back);
  struct iovec r[] = {{back, 0}, {back, 33}, {back + 33, 0}, {back + 33, 31}};
  size_t got = 0;
  assert_int_equal(tarn__file_readv_at(fd, r, 4, 100, &got), 0);
  assert_int_equal(got, 64);
  assert_memory_equal(back, out, 64);
  /* Past the end: what there is, then nothing. */
  struct iovec tail = {back, 64};
  assert_int_equal(tarn__file_readv_at(fd, &tail, 1, 132, &got), 0);
  assert_int_equal(got, 32);
  assert_memory_equal(back, out + 32, 32);
  assert_int_equal(tarn__file_read_at(fd, back, 8, 1000, &got), 0);
  assert_int_equal(got, 0);
  assert_int_equal(fclose(f), 0);
}

/* The child of open_errors_have_their_own_statuses, as a user who may
 * neither read `file` nor write in `locked`: 0 when both are refused with
 * TARN_EACCES. */
static int refused_as_another_user(const char *file, const char *locked) {
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 10;
  tarn_rt *rt = NULL;
  if (tarn_rt_create(NULL, &rt) != 0) return 11;
  tarn_matrix *a = NULL;
  int bad = tarn_matrix_from_file(rt, file, 4, 4, &a) != TARN_EACCES;
  if (tarn_matrix_zeros(rt, 4, 4, 4, 4, &a) != 0) return 12;
  char path[160];
  snprintf(path, sizeof path, "%s/x.npy", locked);
  bad |= (tarn_matrix_to_file(a, path) != TARN_EACCES) << 1;
  tarn_matrix_destroy(a);
  tarn_rt_destroy(rt);
  return bad;
}

static void open_errors_have_their_own_statuses(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(1, 0);
  tarn_matrix *a = NULL, *z = NULL;
  char path[128], file[128];
  assert_int_equal(tarn_matrix_zeros(rt, 3, 3, 3, 3, &z), 0);
  in_dir(file, sizeof file, "z.npy");
  assert_int_equal(tarn_matrix_to_file(z, file), 0);

  assert_int_equal(tarn_matrix_from_file(
                       rt, in_dir(path, sizeof path, "none.npy"), 2, 2, &a),
                   TARN_ENOENT);
  snprintf(path, sizeof path, "%s/z.npy/x.npy", dir); /* a file as a dir */
  assert_int_equal(tarn_matrix_from_file(rt, path, 2, 2, &a), TARN_ENOENT);
  assert_int_equal(tarn_matrix_to_file(z, path), TARN_ENOENT);
  assert_int_equal(
      tarn_matrix_to_file(z, in_dir(path, sizeof path, "no/such/dir/x.npy")),
      TARN_ENOENT);
  assert_int_equal(tarn_matrix_from_file(rt, dir, 2, 2, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_file(rt, "/dev/null", 2, 2, &a),
                   TARN_EINVAL);
  char fifo[128]; /* opened without waiting for a writer, then refused */
  assert_int_equal(mkfifo(in_dir(fifo, sizeof fifo, "fifo"), 0600), 0);
  assert_int_equal(tarn_matrix_from_file(rt, fifo, 2, 2, &a), TARN_EINVAL);
  assert_int_equal(unlink(fifo), 0);

  /* A symbolic link at the path is replaced, its target left alone. */
  char link[128];
  assert_int_equal(symlink(file, in_dir(link, sizeof link, "link.npy")), 0);
  tarn_matrix *seven = NULL;
  assert_int_equal(tarn_matrix_fill(rt, 2, 2, 2, 2, 7.0, &seven), 0);
  assert_int_equal(tarn_matrix_to_file(seven, link), 0);
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(stat(file, &st), 0);
  assert_int_equal(st.st_size, 128 + 9 * sizeof(double)); /* still z's */
  assert_int_equal(unlink(link), 0);
  tarn_matrix_destroy(seven);
  assert_int_equal(tarn_matrix_from_file(NULL, file, 2, 2, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_file(rt, NULL, 2, 2, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_file(rt, file, 0, 2, &a), TARN_EINVAL);
  assert_int_equal(tarn_matrix_from_file(rt, file, 2, 2, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_to_file(NULL, file), TARN_EINVAL);
  assert_int_equal(tarn_matrix_to_file(z, NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_to_file(z, ""), TARN_EINVAL);
  assert_null(a);
  tarn_matrix_destroy(z);
  assert_int_equal(tarn_rt_destroy(rt), 0);

  /* Permission: as root, in a child that drops to "nobody". */
  char locked[128];
  assert_int_equal(mkdir(in_dir(locked, sizeof locked, "locked"), 0755), 0);
  assert_int_equal(chmod(file, 0600), 0);
  assert_int_equal(chmod(dir, 0755), 0); /* nobody may pass through */
  if (geteuid() != 0) assert_int_equal(chmod(locked, 0555), 0);
  if (geteuid() != 0) assert_int_equal(chmod(file, 0000), 0);
#if defined(__SANITIZE_THREAD__)
  if (geteuid() == 0) {
    print_message("a child that changes its user: not under TSan\n");
    return;
  }
#endif
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) _exit(refused_as_another_user(file, locked));
  int status;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* From a task both calls refuse to wait on themselves. */
struct in_task {
  tarn_matrix *z;
  int from_rc, to_rc;
};

static int try_files_in_a_task(tarn_task *t, void *arg) {
  struct in_task *s = arg;
  tarn_matrix *a = NULL;
  char path[128];
  s->from_rc = tarn_matrix_from_file(
      tarn_task_rt(t), in_dir(path, sizeof path, "t.npy"), 2, 2, &a);
  s->to_rc = tarn_matrix_to_file(s->z, in_dir(path, sizeof path, "u.npy"));
  return 0;
}

static void not_from_a_task(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  struct in_task s = {NULL, 0, 0};
  assert_int_equal(tarn_matrix_zeros(rt, 3, 3, 3, 3, &s.z), 0);
  char path[128];
  assert_int_equal(tarn_matrix_to_file(s.z, in_dir(path, sizeof path, "t.npy")),
                   0);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  tarn_task_desc d = {.fn = try_files_in_a_task, .arg = &s};
  assert_int_equal(tarn_task_submit(rt, &d), 0);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(s.from_rc, TARN_EDEADLK);
  assert_int_equal(s.to_rc, TARN_EDEADLK);
  assert_int_equal(temporaries_left(), 0);
  assert_int_equal(access(in_dir(path, sizeof path, "u.npy"), F_OK), -1);
  tarn_matrix_destroy(s.z);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- matrices opened over a file ----------------------------------------- */

/* An m x n file of value_at at `path`: in C order ('<f8', written here),
 * or in Fortran order (tarn_matrix_to_file's). */
static void values_file(const char *path, size_t m, size_t n, bool fortran) {
  if (fortran) {
    tarn_rt *rt = test_rt(2, 0);
    tarn_matrix *a = values_matrix(rt, m, n, 64, 64);
    assert_int_equal(tarn_matrix_to_file(a, path), 0);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
    return;
  }
  double *rows = malloc(m * n * sizeof *rows);
  assert_non_null(rows);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) rows[i * n + j] = value_at(i, j);
  char dict[128];
  snprintf(dict, sizeof dict,
           "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu, %zu), }", m,
           n);
  write_npy(path, 1, dict, rows, m * n * sizeof *rows);
  free(rows);
}

static tarn_pool_stats pool_stats(tarn_rt *rt) {
  tarn_pool_stats s;
  assert_int_equal(tarn_pool_stats_get(tarn_rt_pool(rt), &s), 0);
  return s;
}

/* Open file descriptors of this process. */
static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* An opened matrix reads no tile until one is used, then each tile a task
 * reads, once; under a limit of a quarter of it, tiles are dropped and
 * read from the file again, never written to the spill file; once
 * written, the matrix's tiles are its own and the file stays as it was. */
static void opened_matrices_read_tiles_when_used(void **state) {
  (void)state;
  static const size_t tilings[][2] = {{NM, NN}, {64, 50}, {7, 300}};
  for (int fortran = 0; fortran < 2; fortran++) {
    char path[128];
    in_dir(path, sizeof path, fortran ? "f.npy" : "c.npy");
    values_file(path, NM, NN, fortran);
    tarn_rt *rt = test_rt(3, 0);
    for (size_t t = 0; t < 3; t++) {
      uint64_t before = pool_stats(rt).source_reads;
      tarn_matrix *a = NULL;
      assert_int_equal(
          tarn_matrix_open_file(rt, path, tilings[t][0], tilings[t][1], &a), 0);
      assert_int_equal(pool_stats(rt).source_reads, before);
      double v = 0;
      assert_int_equal(tarn_matrix_get(a, NM - 1, NN - 1, &v), 0);
      assert_true(v == value_at(NM - 1, NN - 1));
      assert_int_equal(pool_stats(rt).source_reads, before + 1);
      assert_holds_values(a, NM, NN, false);
      size_t tiles = (NM + tilings[t][0] - 1) / tilings[t][0] *
                     ((NN + tilings[t][1] - 1) / tilings[t][1]);
      assert_int_equal(pool_stats(rt).source_reads, before + tiles);
      assert_holds_values(a, NM, NN, false); /* resident: no read */
      assert_int_equal(pool_stats(rt).source_reads, before + tiles);
      tarn_matrix_destroy(a);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);

    size_t limit = NM * NN * sizeof(double) / 4;
    rt = test_rt(2, limit);
    tarn_matrix *a = NULL;
    assert_int_equal(tarn_matrix_open_file(rt, path, 32, 32, &a), 0);
    assert_holds_values(a, NM, NN, false);
    assert_holds_values(a, NM, NN, false);
    tarn_pool_stats s = pool_stats(rt);
    size_t tiles = 10 * 6;
    assert_true(s.source_reads > tiles); /* dropped, then read again */
    assert_true(s.evictions > 0);
    assert_int_equal(s.bytes_written, 0);
    assert_true(s.resident_peak <= limit);
    /* Written in place, the tiles spill; the file is unchanged. */
    tarn_matrix *same = a;
    assert_int_equal(tarn_matrix_axpb(a, 0.0, 7.0, &same), 0);
    double *b = test_buffer_of(a);
    for (size_t k = 0; k < (size_t)NM * NN; k++)
      if (b[k] != 7.0) fail_msg("element %zu: %g", k, b[k]);
    free(b);
    assert_true(pool_stats(rt).bytes_written > 0);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_matrix_open_file(rt, path, 50, 50, &a), 0);
    assert_holds_values(a, NM, NN, false);
    tarn_matrix_destroy(a);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A file replaced by a rename leaves an opened matrix as it was (saving
 * an opened matrix over its own file included); a file changed in place fails
 * the reads of its tiles with TARN_ESTALE, and the tiles read before keep their
 * elements. */
static void a_file_changed_in_place_is_estale(void **state) {
  (void)state;
  char path[128];
  in_dir(path, sizeof path, "f.npy");
  values_file(path, NM, NN, true);
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL, *b = NULL, *zeros = NULL;
  assert_int_equal(tarn_matrix_open_file(rt, path, 64, 50, &a), 0);
  assert_int_equal(tarn_matrix_zeros(rt, NM, NN, 64, 64, &zeros), 0);
  assert_int_equal(tarn_matrix_to_file(zeros, path), 0);
  assert_holds_values(a, NM, NN, false); /* the old file's elements */
  tarn_matrix_destroy(a);
  /* Opened and saved over its own file: the save reads the tiles from the
   * old file while it writes the new one. */
  values_file(path, NM, NN, true);
  assert_int_equal(tarn_matrix_open_file(rt, path, 64, 50, &a), 0);
  assert_int_equal(tarn_matrix_to_file(a, path), 0);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_matrix_from_file(rt, path, 64, 64, &a), 0);
  assert_holds_values(a, NM, NN, false);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_matrix_to_file(zeros, path), 0);

  assert_int_equal(tarn_matrix_open_file(rt, path, 64, 50, &b), 0);
  double v = 1;
  assert_int_equal(tarn_matrix_get(b, 0, 0, &v), 0);
  assert_true(v == 0.0);
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  double one = 1.0;
  assert_int_equal(pwrite(fd, &one, sizeof one, 128 + 8 * NM * 100), 8);
  /* The same second as the first write may keep the time: move it. */
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  assert_int_equal(futimens(fd, times), 0);
  assert_int_equal(close(fd), 0);
  double *buf = malloc((size_t)NM * NN * sizeof *buf);
  assert_non_null(buf);
  assert_int_equal(tarn_matrix_to_buffer(b, buf, NM), TARN_ESTALE);
  assert_int_equal(tarn_matrix_get(b, 0, 0, &v), 0); /* read before */
  assert_true(v == 0.0);
  double sum = 0;
  assert_int_equal(tarn_matrix_sum(b, &sum), TARN_ESTALE);
  free(buf);
  tarn_matrix_destroy(b);

  /* Cut short: the size tells. */
  assert_int_equal(tarn_matrix_open_file(rt, path, 64, 50, &b), 0);
  assert_int_equal(truncate(path, 1000), 0);
  assert_int_equal(tarn_matrix_sum(b, &sum), TARN_ESTALE);
  tarn_matrix_destroy(b);
  tarn_matrix_destroy(zeros);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A tile whose read fails fails the operation that needed it (TARN_EIO)
 * and stays unread: the next use reads it. Opening fails as loading does,
 * leaving no file open; a destroyed matrix closes its file. */
static void opened_files_fail_cleanly(void **state) {
  (void)state;
  char path[128], bad[128];
  in_dir(path, sizeof path, "f.npy");
  values_file(path, NM, NN, true);
  int fds = open_fds();
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_open_file(rt, path, 64, 50, &a), 0);
  atomic_store(&read_fails_at, 3);
  double sum = 0;
  assert_int_equal(tarn_matrix_sum(a, &sum), TARN_EIO);
  atomic_store(&read_fails_at, 0);
  assert_holds_values(a, NM, NN, false);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(open_fds(), fds);

  rt = test_rt(2, 256u << 10); /* a tile of 300 x 170 is 0.4 MiB */
  int with_rt = open_fds();    /* its spill file among them */
  tarn_matrix *none = NULL;
  assert_int_equal(tarn_matrix_open_file(
                       rt, in_dir(bad, sizeof bad, "none.npy"), 8, 8, &none),
                   TARN_ENOENT);
  write_npy(in_dir(bad, sizeof bad, "bad.npy"), 1,
            "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 3), }",
            "123456781234567812345678123456781234567812345678123456781234567"
            "812345678",
            72);
  assert_int_equal(tarn_matrix_open_file(rt, bad, 8, 8, &none), TARN_EFORMAT);
  assert_int_equal(tarn_matrix_open_file(rt, path, 512, 512, &none),
                   TARN_ENOMEM);
  assert_int_equal(tarn_matrix_open_file(NULL, path, 8, 8, &none), TARN_EINVAL);
  assert_int_equal(tarn_matrix_open_file(rt, path, 0, 8, &none), TARN_EINVAL);
  assert_int_equal(tarn_matrix_open_file(rt, path, 8, 8, NULL), TARN_EINVAL);
  assert_null(none);
  assert_int_equal(open_fds(), with_rt);
  assert_int_equal(tarn_matrix_open_file(rt, path, 100, 100, &none), 0);
  assert_holds_values(none, NM, NN, false);
  tarn_matrix_destroy(none);
  assert_int_equal(tarn_rt_destroy(rt), 0);
  assert_int_equal(open_fds(), fds);
}

/* The sum of value_at over an m x n matrix, in the order tarn_matrix_sum
 * would not use: compared within rounding. */
static double values_sum(size_t m, size_t n) {
  double sum = 0;
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < m; i++) sum += value_at(i, j);
  return sum;
}

/* The read of an opened tile brings the tiles of its band (its tile
 * column in a Fortran-order file, its tile row in a C-order one) that
 * tasks will use, in the same calls, a line of the band a call: a sum
 * makes far fewer read calls than a line of a tile a call and reads each
 * tile from the file; under a memory limit, it stays under it and writes
 * nothing to the spill file. A lone tile used (one element) brings no
 * other. */
static void an_opened_tile_read_brings_its_band(void **state) {
  (void)state;
  enum { mb = 50, nb = 40 }; /* 6 x 5 tiles, the last ones narrower */
  size_t tiles = 6 * 5;
  double want = values_sum(NM, NN);
  for (int layout = 0; layout < 4; layout++) {
    int fortran = layout % 2;
    size_t limit = layout < 2 ? NM * NN * sizeof(double) / 4 * 3 : 0;
    char path[128];
    in_dir(path, sizeof path, fortran ? "f.npy" : "c.npy");
    values_file(path, NM, NN, fortran);
    /* A line piece per call, tile by tile: each tile's columns (Fortran)
     * or rows (C). */
    size_t alone = fortran ? 6 * NN : 5 * NM;
    tarn_rt *rt = test_rt(2, limit);
    /* Which tiles the reads meet being read already depends on timing
     * (and, under the limit, which tiles of a C-order band the sum, going
     * down tile columns, finds dropped again): the fewest calls of three
     * sums. */
    int fewest = INT_MAX;
    for (int run = 0; run < 3; run++) {
      tarn_matrix *a = NULL;
      assert_int_equal(tarn_matrix_open_file(rt, path, mb, nb, &a), 0);
      uint64_t read_before = pool_stats(rt).source_reads;
      int before = atomic_load(&reads_seen);
      double v = 0;
      assert_int_equal(tarn_matrix_get(a, 60, 45, &v), 0);
      assert_true(v == value_at(60, 45));
      assert_int_equal(atomic_load(&reads_seen) - before, fortran ? nb : mb);
      assert_int_equal(pool_stats(rt).source_reads - read_before, 1);

      before = atomic_load(&reads_seen);
      double sum = 0;
      assert_int_equal(tarn_matrix_sum(a, &sum), 0);
      assert_true(fabs(sum - want) <= 1e-12 * want);
      int calls = atomic_load(&reads_seen) - before;
      if (calls < fewest) fewest = calls;
      assert_true(pool_stats(rt).source_reads - read_before >= tiles);
      assert_holds_values(a, NM, NN, false);
      tarn_matrix_destroy(a);
    }
    print_message(
        "%s order, %s: %d read calls for the sum at fewest (%zu "
        "tile by tile)\n",
        fortran ? "Fortran" : "C", limit ? "a limit" : "no limit", fewest,
        alone);
    assert_true((size_t)fewest < alone / 4 * 3); /* about alone / 10 */
    tarn_pool_stats s = pool_stats(rt);
    if (limit != 0) assert_true(s.resident_peak <= limit);
    assert_int_equal(s.bytes_written, 0);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

static atomic_bool gate_open;

/* Holds its worker until the test opens the gate. */
static int wait_for_gate(tarn_task *task, void *arg) {
  (void)task, (void)arg;
  while (!atomic_load(&gate_open)) sched_yield();
  return 0;
}

static int touch_nothing(tarn_task *task, void *arg) {
  (void)task, (void)arg;
  return 0;
}

/* Under a memory limit a read fills only the neighbours that the runtime
 * asked the pool to read ahead (for ready tasks, and for those that wait
 * only for a running one): tiles whose tasks still wait for two others
 * stay unread (they would take room that the work in between needs), and
 * each is read once its task is ready. */
static void under_a_limit_only_wanted_neighbours_are_filled(void **state) {
  (void)state;
  char path[128];
  in_dir(path, sizeof path, "f.npy");
  values_file(path, NM, NN, true);
  tarn_rt *rt = test_rt(3, NM * NN * sizeof(double) / 2);
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_open_file(rt, path, 50, 40, &a), 0);
  tarn_ref *gate[2] = {NULL, NULL};
  for (int g = 0; g < 2; g++)
    assert_int_equal(tarn_ref_alloc(tarn_rt_pool(rt), 8, 0, &gate[g]), 0);
  atomic_store(&gate_open, false);
  tarn_region *region = NULL;
  assert_int_equal(tarn_region_begin(rt, &region), 0);
  for (int g = 0; g < 2; g++) /* two workers held */
    assert_int_equal(tarn_submit(rt, wait_for_gate, TARN_RW(gate[g])), 0);
  for (size_t k = 1; k < 6; k++) /* tiles (1..5, 0): after both gates */
    assert_int_equal(tarn_submit(rt, touch_nothing, TARN_R(tarn__tile(a, k, 0)),
                                 TARN_R(gate[0]), TARN_R(gate[1])),
                     0);
  assert_int_equal(tarn_submit(rt, touch_nothing, TARN_R(tarn__tile(a, 0, 0))),
                   0);
  for (int i = 0; i < 5000 && pool_stats(rt).source_reads < 1; i++)
    usleep(1000);
  usleep(50000); /* time for a fill, if one were to come */
  assert_int_equal(pool_stats(rt).source_reads, 1);
  atomic_store(&gate_open, true);
  assert_int_equal(tarn_region_wait(region, NULL), 0);
  assert_int_equal(pool_stats(rt).source_reads, 6);
  for (int g = 0; g < 2; g++) assert_int_equal(tarn_ref_release(gate[g]), 0);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A failed read of a band leaves every tile it was to fill unread: no
 * task gets their bytes, and the next use reads them again. The sum during
 * the failure gets TARN_EIO, or, when the read that failed was the pool's
 * read ahead (the task's own pin then reads the tile again), the file's
 * sum. */
static void a_failed_band_read_leaves_its_tiles_unread(void **state) {
  (void)state;
  char path[128];
  in_dir(path, sizeof path, "f.npy");
  values_file(path, NM, NN, true);
  double want = values_sum(NM, NN);
  for (int limited = 0; limited < 2; limited++) {
    tarn_rt *rt = test_rt(2, limited ? NM * NN * sizeof(double) / 2 : 0);
    static const int fail_at[] = {1, 2, 3, 5, 8, 13};
    for (size_t f = 0; f < sizeof fail_at / sizeof *fail_at; f++) {
      tarn_matrix *a = NULL;
      assert_int_equal(tarn_matrix_open_file(rt, path, 50, 40, &a), 0);
      atomic_store(&read_fails_at, fail_at[f]);
      double sum = 0;
      int rc = tarn_matrix_sum(a, &sum);
      bool failed = atomic_exchange(&read_fails_at, 0) == 0;
      /* The read that failed was a task's (without a limit always: no
       * read ahead), or there were fewer reads than that. */
      if (rc != TARN_EIO) {
        assert_true(limited || !failed);
        assert_int_equal(rc, 0);
        assert_true(fabs(sum - want) <= 1e-12 * want);
      }
      assert_int_equal(tarn_matrix_sum(a, &sum), 0);
      assert_true(fabs(sum - want) <= 1e-12 * want);
      assert_holds_values(a, NM, NN, false);
      tarn_matrix_destroy(a);
    }
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }
}

/* A Cholesky factorisation of an opened matrix reads only the tiles of
 * the lower triangle: the others are never read from the file. */
static void a_factorisation_reads_only_the_tiles_it_uses(void **state) {
  (void)state;
  enum { n = 200, nb = 50 };
  tarn_rt *rt = test_rt(2, 0);
  double *spd = malloc(n * n * sizeof *spd);
  assert_non_null(spd);
  for (size_t j = 0; j < n; j++)
    for (size_t i = 0; i < n; i++)
      spd[i + j * n] = (i == j ? n : 0.0) + 1.0 / (1.0 + (double)(i + j));
  tarn_matrix *a = NULL;
  assert_int_equal(tarn_matrix_from_buffer(rt, n, n, nb, nb, spd, n, &a), 0);
  char path[128];
  assert_int_equal(tarn_matrix_to_file(a, in_dir(path, sizeof path, "a.npy")),
                   0);
  tarn_matrix_destroy(a);
  uint64_t before = pool_stats(rt).source_reads;
  assert_int_equal(tarn_matrix_open_file(rt, path, nb, nb, &a), 0);
  int info = -1;
  assert_int_equal(tarn_matrix_cholesky(a, &info), 0);
  assert_int_equal(info, 0);
  assert_int_equal(pool_stats(rt).source_reads - before, 4 * 5 / 2);
  /* L(0, 0) is sqrt(A(0, 0)). */
  double l00 = 0;
  assert_int_equal(tarn_matrix_get(a, 0, 0, &l00), 0);
  assert_true(fabs(l00 - sqrt(spd[0])) < 1e-12);
  free(spd);
  tarn_matrix_destroy(a);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* ---- matrices created in a file ----------------------------------------- */

/* The (last) temporary file in dir, into out; false when there is none. */
static bool the_temporary(char *out, size_t size) {
  return temporaries(out, size) > 0;
}

/* A created matrix lives in a temporary file beside its path until the
 * commit puts it in place; under a limit its written tiles go to that
 * file, never to the spill file; tiles never written are zeros; a matrix
 * destroyed without a commit leaves nothing, and an old file at the path
 * as it was. */
static void a_created_file_holds_the_matrix_once_committed(void **state) {
  (void)state;
  char path[128], temp[512], input[128];
  in_dir(path, sizeof path, "c.npy");
  values_file(in_dir(input, sizeof input, "v.npy"), NM, NN, true);
  /* Without a limit; under a quarter of the matrix; and in tiles of one
   * page under a limit of 32 of them, so that the commit's bands (an
   * eighth of the limit: 4 tiles) hold tiles stored before beside tiles
   * never pushed out. */
  static const struct {
    size_t limit, mb, nb;
  } rounds[] = {
      {0, 64, 50}, {NM * NN * sizeof(double) / 4, 64, 50}, {128 << 10, 16, 32}};
  for (size_t round = 0; round < 3; round++) {
    unlink(path); /* the round before's commit */
    size_t limit = rounds[round].limit, mb = rounds[round].mb,
           nb = rounds[round].nb;
    bool limited = limit > 0;
    tarn_rt *rt = test_rt(2, limit);
    tarn_matrix *v = NULL, *c = NULL; /* v opened: nothing of it spills */
    assert_int_equal(tarn_matrix_open_file(rt, input, mb, nb, &v), 0);
    assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, mb, nb, &c), 0);
    assert_true(the_temporary(temp, sizeof temp));
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(tarn_matrix_axpb(v, 1.0, 0.0, &c), 0); /* c = v */
    assert_holds_values(c, NM, NN, false);
    tarn_pool_stats s = pool_stats(rt);
    if (limited) {
      assert_true(s.source_writes > 0);
      assert_int_equal(s.bytes_written, 0);
      assert_true(s.resident_peak <= limit);
    }
    assert_int_equal(tarn_matrix_commit_file(c), 0);
    assert_false(the_temporary(temp, sizeof temp));
    assert_file_holds_values(rt, path, 32);
    tarn_matrix_destroy(v);
    assert_int_equal(tarn_rt_destroy(rt), 0);
  }

  /* Never written: zeros. Not committed: nothing left, the old file
   * (the values, from above) as it was. */
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *z = NULL, *c = NULL;
  assert_int_equal(tarn_matrix_create_file(rt, path, 30, 20, 8, 8, &z), 0);
  double v = 1, sum = 1;
  assert_int_equal(tarn_matrix_get(z, 29, 19, &v), 0);
  assert_true(v == 0.0);
  assert_int_equal(tarn_matrix_sum(z, &sum), 0);
  assert_true(sum == 0.0);
  tarn_matrix_destroy(z);
  assert_false(the_temporary(temp, sizeof temp));
  assert_int_equal(tarn_matrix_from_file(rt, path, 64, 64, &c), 0);
  assert_holds_values(c, NM, NN, false);
  tarn_matrix_destroy(c);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A commit that fails (a store, the flush, a failed writer) keeps the
 * matrix and its temporary file, and the old file at the path: a second
 * commit then puts the matrix in place. A tile whose bytes on the disk
 * changed is TARN_EIO, not wrong elements. Bad arguments and a disk too
 * small are refused at once. */
static void a_failed_commit_keeps_the_matrix(void **state) {
  (void)state;
  char path[128], temp[512];
  in_dir(path, sizeof path, "c.npy");
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *v = values_matrix(rt, NM, NN, 64, 50), *c = NULL;
  assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c), 0);
  assert_int_equal(tarn_matrix_axpb(v, 1.0, 0.0, &c), 0);
  atomic_store(&fail_errno, EIO);
  atomic_store(&write_fails_at, 3); /* a store of the commit's */
  assert_int_equal(tarn_matrix_commit_file(c), TARN_EIO);
  atomic_store(&write_fails_at, 0);
  atomic_store(&fdatasync_fails_at, 1);
  assert_int_equal(tarn_matrix_commit_file(c), TARN_EIO);
  atomic_store(&fdatasync_fails_at, 0);
  assert_true(the_temporary(temp, sizeof temp));
  assert_int_equal(access(path, F_OK), -1);
  assert_holds_values(c, NM, NN, false);
  assert_int_equal(tarn_matrix_commit_file(c), 0);
  assert_file_holds_values(rt, path, 64);

  /* A writer failed: nothing is committed. */
  assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c), 0);
  test_fail_first_tile(rt, c);
  assert_int_equal(tarn_matrix_commit_file(c), TARN_ECANCELED);
  tarn_matrix_destroy(c);
  assert_false(the_temporary(temp, sizeof temp));
  assert_file_holds_values(rt, path, 64); /* the file committed before */
  tarn_matrix_destroy(v);
  assert_int_equal(tarn_rt_destroy(rt), 0);

  /* Stored, dropped, then changed on the disk: TARN_EIO when read back.
   * A limit of two tiles: the second sum reads most tiles from the file,
   * each with its first element changed. */
  rt = test_rt(2, 64u << 10);
  assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c), 0);
  assert_int_equal(tarn_matrix_axpb(c, 0.0, 3.0, &c), 0); /* all 3 */
  double sum = 0;
  assert_int_equal(tarn_matrix_sum(c, &sum), 0);
  assert_true(sum == 3.0 * NM * NN);
  assert_true(the_temporary(temp, sizeof temp));
  int fd = open(temp, O_WRONLY);
  assert_true(fd >= 0);
  double bad = 4.0;
  for (size_t j = 0; j < NN; j += 50)
    for (size_t i = 0; i < NM; i += 64)
      assert_int_equal(pwrite(fd, &bad, sizeof bad, 128 + 8 * (j * NM + i)), 8);
  assert_int_equal(close(fd), 0);
  assert_int_equal(tarn_matrix_sum(c, &sum), TARN_EIO);
  tarn_matrix_destroy(c);

  /* Refused at once. */
  char nowhere[160];
  snprintf(nowhere, sizeof nowhere, "%s/none/c.npy", dir);
  assert_int_equal(tarn_matrix_create_file(rt, nowhere, 8, 8, 8, 8, &c),
                   TARN_ENOENT);
  assert_int_equal(tarn_matrix_create_file(rt, "", 8, 8, 8, 8, &c),
                   TARN_EINVAL);
  assert_int_equal(tarn_matrix_create_file(rt, path, 0, 8, 8, 8, &c),
                   TARN_EINVAL);
  /* More bytes than a file's size (an off_t) holds, whether or not they
   * wrap a uint64_t with the header (2^61 - 1 rows did: a file of 128
   * bytes was "committed"). */
  static const size_t too_many[][2] = {{((size_t)1 << 61) - 1, 1},
                                       {(size_t)1 << 60, 1},
                                       {(size_t)1 << 30, (size_t)1 << 30},
                                       {SIZE_MAX, SIZE_MAX}};
  for (int k = 0; k < 4; k++) {
    c = NULL;
    assert_int_equal(
        tarn_matrix_create_file(rt, path, too_many[k][0], too_many[k][1],
                                (size_t)1 << 20, 1, &c),
        TARN_EINVAL);
    assert_null(c);
  }
  assert_false(the_temporary(temp, sizeof temp));
  assert_int_equal(tarn_matrix_create_file(rt, path, 600, 600, 600, 600, &c),
                   TARN_ENOMEM); /* a tile over the limit */
  struct rlimit was;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
  void (*handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = {64 * 1024, was.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  int rc = tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
  signal(SIGXFSZ, handler);
  assert_int_equal(rc, TARN_ENOSPC);
  assert_false(the_temporary(temp, sizeof temp));
  assert_int_equal(tarn_matrix_commit_file(NULL), TARN_EINVAL);
  assert_int_equal(tarn_matrix_commit_file(v = values_matrix(rt, 8, 8, 8, 8)),
                   TARN_EINVAL);
  tarn_matrix_destroy(v);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* After the rename only the directory's flush can fail, and its failure
 * is TARN_EIO, the status matrix.h keeps for "the file is in place and the
 * matrix gone": also when the directory cannot be opened for want of a
 * file descriptor (it was TARN_EBUSY, which told the caller to call again
 * on a matrix already destroyed). A path that has become a directory
 * fails the rename: TARN_EINVAL, the matrix kept, as a save to it. */
static void after_the_rename_only_eio(void **state) {
  (void)state;
  char path[128], temp[512];
  in_dir(path, sizeof path, "c.npy");
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *v = values_matrix(rt, NM, NN, 64, 50), *c = NULL;

  assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c), 0);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_int_equal(tarn_matrix_to_file(v, path), TARN_EINVAL);
  assert_true(the_temporary(temp, sizeof temp)); /* c's alone */
  assert_int_equal(temporaries_left(), 1);
  assert_int_equal(tarn_matrix_axpb(v, 1.0, 0.0, &c), 0);
  assert_int_equal(tarn_matrix_commit_file(c), TARN_EINVAL);
  assert_true(the_temporary(temp, sizeof temp));
  assert_holds_values(c, NM, NN, false);
  assert_int_equal(rmdir(path), 0);

  /* Every descriptor under a lowered limit taken: the commit's stores,
   * flush and rename need none, the directory's open one. */
  struct rlimit was;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
  struct rlimit few = {256, was.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &few), 0);
  int taken[256], n = 0;
  while (n < 256 && (taken[n] = open("/dev/null", O_RDONLY)) >= 0) n++;
  assert_true(n < 256);
  int rc = tarn_matrix_commit_file(c);
  while (n > 0) close(taken[--n]);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
  assert_int_equal(rc, TARN_EIO);
  assert_false(the_temporary(temp, sizeof temp));
  assert_file_holds_values(rt, path, 64);
  tarn_matrix_destroy(v);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

/* A path that names a directory (one there, or ending in '/', "." or
 * "..") is refused with TARN_EINVAL before a byte is written, by a save
 * and by create_file alike: the rename would fail only after the whole
 * file, as TARN_EIO for "." (EBUSY) or TARN_ENOENT for "sub/" (ENOTDIR),
 * and an EIO from a commit says the matrix is gone. A symbolic link to a
 * directory is not followed: the save replaces the link. */
static void a_path_naming_a_directory_is_refused_first(void **state) {
  (void)state;
  tarn_rt *rt = test_rt(2, 0);
  tarn_matrix *v = values_matrix(rt, NM, NN, 64, 50), *c = NULL;
  char sub[128], path[256];
  assert_int_equal(mkdir(in_dir(sub, sizeof sub, "sub"), 0700), 0);
  static const char *const names[] = {"sub", "sub/", "sub/.", "sub/..",
                                      ".",   "..",   "sub//", "sub/./"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    in_dir(path, sizeof path, names[i]);
    atomic_store(&writes_seen, 0);
    assert_int_equal(tarn_matrix_to_file(v, path), TARN_EINVAL);
    assert_int_equal(atomic_load(&writes_seen), 0);
    c = v;
    assert_int_equal(tarn_matrix_create_file(rt, path, NM, NN, 64, 50, &c),
                     TARN_EINVAL);
    assert_ptr_equal(c, v); /* *out untouched */
    assert_int_equal(temporaries_left(), 0);
  }
  DIR *d = opendir(sub);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) entries++;
  closedir(d);
  assert_int_equal(entries, 2); /* "." and "..": nothing made inside */

  char link[128];
  assert_int_equal(symlink(sub, in_dir(link, sizeof link, "link")), 0);
  assert_int_equal(tarn_matrix_to_file(v, link), 0);
  struct stat st;
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(lstat(sub, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_file_holds_values(rt, link, 64);
  assert_int_equal(rmdir(sub), 0);
  tarn_matrix_destroy(v);
  assert_int_equal(tarn_rt_destroy(rt), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          a_created_file_holds_the_matrix_once_committed, setup, teardown),
      cmocka_unit_test_setup_teardown(a_failed_commit_keeps_the_matrix, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(opened_matrices_read_tiles_when_used,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_file_changed_in_place_is_estale, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(an_opened_tile_read_brings_its_band,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_failed_band_read_leaves_its_tiles_unread, setup, teardown),
      cmocka_unit_test_setup_teardown(
          under_a_limit_only_wanted_neighbours_are_filled, setup, teardown),
      cmocka_unit_test_setup_teardown(opened_files_fail_cleanly, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          a_factorisation_reads_only_the_tiles_it_uses, setup, teardown),
      cmocka_unit_test_setup_teardown(numpy_files_read_as_numpy_saved_them,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          numpy_loads_a_saved_matrix_as_the_same_array, setup, teardown),
      cmocka_unit_test_setup_teardown(a_save_and_load_keeps_every_bit, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          a_save_waits_for_writers_and_refuses_a_failed_one, setup, teardown),
      cmocka_unit_test_setup_teardown(hand_made_headers_numpy_accepts_are_read,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(long_lines_are_read_in_pieces, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(headers_numpy_refuses_are_refused, setup,
                                      teardown),
      cmocka_unit_test(the_header_reader_survives_mutated_headers),
      cmocka_unit_test_setup_teardown(a_failed_save_keeps_the_old_file, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(open_errors_have_their_own_statuses,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(not_from_a_task, setup, teardown),
      cmocka_unit_test_setup_teardown(a_tile_larger_than_the_limit_is_enomem,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_path_naming_a_directory_is_refused_first, setup, teardown),
      cmocka_unit_test_setup_teardown(a_relative_path_is_the_working_directory,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(
          file_calls_map_errors_and_move_every_buffer, setup, teardown),
      cmocka_unit_test_setup_teardown(after_the_rename_only_eio, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
