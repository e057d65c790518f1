/* npy.c: reading and writing .npy headers (see npy.h). The reader takes
 * the dict literal as numpy.lib.format writes it and as its reader
 * accepts it: keys in any order, either quote, any whitespace, a trailing
 * comma, Python 2's 'L' after a dimension; anything else is refused, never
 * guessed. It reads only inside the bytes it is given. */
#include <stdio.h>
#include <string.h>

#include "array/npy.h"
#include "tarn/status.h"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

int tarn__npy_header_end(const unsigned char *buf, size_t len, uint64_t *end) {
  if (len < 10 || memcmp(buf, magic, sizeof magic) != 0) return TARN_EFORMAT;
  unsigned major = buf[6], minor = buf[7];
  if (minor != 0 || major < 1 || major > 3) return TARN_EFORMAT;
  uint64_t header, fixed;
  if (major == 1) {
    header = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
    fixed = 10;
  } else {
    if (len < 12) return TARN_EFORMAT;
    header = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 |
             (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
    fixed = 12;
  }
  if (fixed + header > TARN__NPY_HEADER_MAX) return TARN_EFORMAT;
  *end = fixed + header;
  return 0;
}

/* ---- the dict literal ---------------------------------------------------- */

/* A cursor over the header's text [p, end). */
struct scan {
  const char *p, *end;
};

static void skip_space(struct scan *s) {
  while (s->p < s->end &&
         (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

/* Consumes `c` after any whitespace. */
static bool take(struct scan *s, char c) {
  skip_space(s);
  if (s->p == s->end || *s->p != c) return false;
  s->p++;
  return true;
}

/* Consumes the word `w` after any whitespace. */
static bool take_word(struct scan *s, const char *w) {
  skip_space(s);
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return false;
  s->p += n;
  return true;
}

/* A quoted string without escapes: its text in [*text, *text + *n). */
static bool take_string(struct scan *s, const char **text, size_t *n) {
  skip_space(s);
  if (s->p == s->end || (*s->p != '\'' && *s->p != '"')) return false;
  char quote = *s->p++;
  const char *start = s->p;
  while (s->p < s->end && *s->p != quote) {
    if (*s->p == '\\' || *s->p == '\n') return false;
    s->p++;
  }
  if (s->p == s->end) return false;
  *text = start;
  *n = (size_t)(s->p - start);
  s->p++;
  return true;
}

static bool string_is(const char *text, size_t n, const char *w) {
  return n == strlen(w) && memcmp(text, w, n) == 0;
}

/* A dimension: decimal digits, then Python 2's 'L' if any. */
static bool take_dimension(struct scan *s, size_t *out) {
  skip_space(s);
  if (s->p == s->end || *s->p < '0' || *s->p > '9') return false;
  size_t v = 0;
  while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
    size_t digit = (size_t)(*s->p - '0');
    if (v > (SIZE_MAX - digit) / 10) return false;
    v = v * 10 + digit;
    s->p++;
  }
  if (s->p < s->end && *s->p == 'L') s->p++;
  *out = v;
  return true;
}

/* A tuple of dimensions as Python writes it: "()", "(m,)", "(m, n)" with
 * a trailing comma allowed; "(m)" is not a tuple. At most `max` of them
 * are kept; *count says how many there were. */
static bool take_shape(struct scan *s, size_t *dims, size_t max,
                       size_t *count) {
  if (!take(s, '(')) return false;
  size_t k = 0;
  bool comma = false;
  while (!take(s, ')')) {
    if (k > 0 && !comma) return false;
    size_t d;
    if (!take_dimension(s, &d)) return false;
    if (k < max) dims[k] = d;
    k++;
    comma = take(s, ',');
  }
  if (k == 1 && !comma) return false;
  *count = k;
  return true;
}

/* The element type of 'descr': float64 or float32 of either byte order. */
static bool read_descr(const char *text, size_t n, tarn__npy *h) {
  if (n != 3 || (text[0] != '<' && text[0] != '>') || text[1] != 'f')
    return false;
  if (text[2] != '8' && text[2] != '4') return false;
  h->big_endian = text[0] == '>';
  h->item = text[2] == '8' ? 8 : 4;
  return true;
}

int tarn__npy_parse(const unsigned char *buf, size_t len, tarn__npy *out) {
  uint64_t end;
  int rc = tarn__npy_header_end(buf, len, &end);
  if (rc != 0) return rc;
  if (len < end) return TARN_EFORMAT;
  size_t fixed = buf[6] == 1 ? 10 : 12;
  struct scan s = {(const char *)buf + fixed, (const char *)buf + end};

  tarn__npy h = {0};
  bool have_descr = false, have_order = false, have_shape = false;
  size_t dims[2] = {0, 0}, ndims = 0;
  if (!take(&s, '{')) return TARN_EFORMAT;
  while (!take(&s, '}')) {
    const char *key;
    size_t n;
    if (!take_string(&s, &key, &n) || !take(&s, ':')) return TARN_EFORMAT;
    if (string_is(key, n, "descr") && !have_descr) {
      const char *v;
      size_t vn;
      if (!take_string(&s, &v, &vn) || !read_descr(v, vn, &h))
        return TARN_EFORMAT;
      have_descr = true;
    } else if (string_is(key, n, "fortran_order") && !have_order) {
      if (take_word(&s, "True"))
        h.fortran_order = true;
      else if (!take_word(&s, "False"))
        return TARN_EFORMAT;
      have_order = true;
    } else if (string_is(key, n, "shape") && !have_shape) {
      if (!take_shape(&s, dims, 2, &ndims)) return TARN_EFORMAT;
      have_shape = true;
    } else {
      return TARN_EFORMAT; /* a key repeated or unknown */
    }
    if (!take(&s, ',')) {
      if (!take(&s, '}')) return TARN_EFORMAT;
      break;
    }
  }
  skip_space(&s);
  if (s.p != s.end || !have_descr || !have_order || !have_shape)
    return TARN_EFORMAT;
  if (ndims < 1 || ndims > 2) return TARN_EFORMAT;
  h.rows = dims[0];
  h.cols = ndims == 2 ? dims[1] : 1;
  if (h.rows == 0 || h.cols == 0) return TARN_EINVAL;
  if (h.rows > UINT64_MAX / h.cols || h.rows * h.cols > UINT64_MAX / h.item)
    return TARN_EFORMAT;
  h.data_offset = end;
  h.data_bytes = (uint64_t)h.rows * h.cols * h.item;
  if (h.data_bytes > UINT64_MAX - end) return TARN_EFORMAT;
  *out = h;
  return 0;
}

size_t tarn__npy_format(unsigned char *buf, size_t size, size_t rows,
                        size_t cols, bool big_endian) {
  char dict[128];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '%cf8', 'fortran_order': True, 'shape': (%zu, "
                   "%zu), }",
                   big_endian ? '>' : '<', rows, cols);
  if (n < 0 || (size_t)n >= sizeof dict) return 0;
  /* magic, version, length, dict, spaces, newline: a multiple of 64. */
  size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
  if (total > size) return 0;
  memcpy(buf, magic, sizeof magic);
  buf[6] = 1;
  buf[7] = 0;
  buf[8] = (unsigned char)((total - 10) & 0xff);
  buf[9] = (unsigned char)((total - 10) >> 8);
  memcpy(buf + 10, dict, (size_t)n);
  memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
  buf[total - 1] = '\n';
  return total;
}
