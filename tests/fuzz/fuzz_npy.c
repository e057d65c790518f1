/* fuzz_npy.c: a libFuzzer target for the .npy header reader
 * (src/array/npy.c): any bytes as a file's start. It must return 0,
 * TARN_EFORMAT or TARN_EINVAL, read nothing outside the bytes (ASan), and
 * accept only headers whose figures agree. Seeds: numpy's own files in
 * tests/fuzz/npy/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "array/npy.h"
#include "tarn/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn__npy h;
  int rc = tarn__npy_parse(data, size, &h);
  if (rc != 0 && rc != TARN_EFORMAT && rc != TARN_EINVAL) abort();
  if (rc == 0 && (h.data_offset > size || h.rows == 0 || h.cols == 0 ||
                  (h.item != 4 && h.item != 8) ||
                  h.data_bytes != (uint64_t)h.rows * h.cols * h.item))
    abort();
  return 0;
}
