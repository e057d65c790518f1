/* destroyed.h: white-box help for the tests of refused matrices (include
 * after <cmocka.h>): a matrix marked as tarn_matrix_destroy leaves its
 * memory until the heap reuses it, on a matrix that stays allocated, so a
 * test can hand every entry point a destroyed matrix without undefined
 * behaviour and see it refused; and memory that never held a matrix. */
#ifndef TARN_TESTS_DESTROYED_H
#define TARN_TESTS_DESTROYED_H

#include <stdbool.h>
#include <string.h>

#include "array/matrix_internal.h"

/* Marks `a` destroyed (dead) or live again: the word tarn_matrix_destroy
 * writes before it frees the struct. Layout, runtime and tiles stay as
 * they are, so only that word can make a call refuse it. */
static inline void test_mark_destroyed(tarn_matrix *a, bool dead) {
  a->magic = dead ? TARN__MAGIC_DEAD : TARN__MATRIX_LIVE;
}

/* 512 bytes that never held a matrix, all `byte`, as a matrix pointer. */
struct test_junk {
  _Alignas(64) unsigned char bytes[512];
};
static inline tarn_matrix *test_junk_matrix(struct test_junk *j,
                                            unsigned char byte) {
  memset(j->bytes, byte, sizeof j->bytes);
  return (tarn_matrix *)(void *)j->bytes;
}

/* Whether every byte of the junk is still `byte`: nothing wrote to it. */
static inline bool test_junk_untouched(const struct test_junk *j,
                                       unsigned char byte) {
  for (size_t i = 0; i < sizeof j->bytes; i++)
    if (j->bytes[i] != byte) return false;
  return true;
}

#endif
