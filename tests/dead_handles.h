/* dead_handles.h: help for the tests of refused handles (include once per
 * test program, after <cmocka.h>, in a program linked with
 * -Wl,--wrap=free, see tests/CMakeLists.txt).
 *
 * A handle the library destroyed is freed memory: handing it back is
 * undefined, and AddressSanitizer reports it. To see what the library
 * does with one, the test names the block before the destroy
 * (test_keep_when_freed): the wrapped free keeps it instead of freeing it,
 * the library's own dead word is left in it, and the test frees it last
 * (test_free_kept). test_each_junk hands the calls memory that never held
 * a handle. */
#ifndef TARN_TESTS_DEAD_HANDLES_H
#define TARN_TESTS_DEAD_HANDLES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void __real_free(void *p);
void __wrap_free(void *p);

static _Atomic(void *) test_kept_block; /* workers free too */
static atomic_bool test_kept;

void __wrap_free(void *p) {
  if (p != NULL && p == atomic_load(&test_kept_block)) {
    atomic_store(&test_kept, true);
    return;
  }
  __real_free(p);
}

/* The next free of `block` keeps it. */
static inline void test_keep_when_freed(void *block) {
  atomic_store(&test_kept, false);
  atomic_store(&test_kept_block, block);
}

/* Whether the block named to test_keep_when_freed was freed (and kept). */
static inline bool test_was_freed(void) { return atomic_load(&test_kept); }

/* Stops keeping and frees the kept `block`. */
static inline void test_free_kept(void *block) {
  atomic_store(&test_kept_block, NULL);
  __real_free(block);
}

/* Calls `calls` with 64 KiB of 0x00, then 0x5a, then 0xff, aligned as a
 * handle, and checks that no byte of it was written. */
static inline void test_each_junk(void (*calls)(void *junk)) {
  enum { junk_bytes = 1 << 16 };
  unsigned char *junk = aligned_alloc(64, junk_bytes);
  assert_non_null(junk);
  static const unsigned char fills[] = {0x00, 0x5a, 0xff};
  for (size_t f = 0; f < sizeof fills; f++) {
    memset(junk, fills[f], junk_bytes);
    calls(junk);
    for (size_t k = 0; k < junk_bytes; k++) assert_int_equal(junk[k], fills[f]);
  }
  free(junk);
}

#endif
