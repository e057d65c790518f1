/* test_status.c: status codes are negative and distinct, each has a name and
 * a description, and the version macros match the library. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tarn.h"

static const int codes[] = {
    TARN_EINVAL, TARN_ENOMEM, TARN_EBUSY,     TARN_ENOSPC,    TARN_EMISUSE,
    TARN_ESTALE, TARN_EIO,    TARN_ECANCELED, TARN_ETIMEDOUT, TARN_EDEADLK,
    TARN_ENOENT, TARN_EACCES, TARN_EFORMAT,
};
enum { ncodes = sizeof codes / sizeof codes[0] };

static void every_code_is_negative_named_and_described(void **state) {
  (void)state;
  for (int i = 0; i < ncodes; i++) {
    assert_true(codes[i] < 0);
    const char *name = tarn_status_name(codes[i]);
    assert_non_null(name);
    assert_int_equal(strncmp(name, "TARN_E", 6), 0);
    assert_string_not_equal(tarn_strerror(codes[i]), "unknown tarn status");
    for (int j = 0; j < i; j++) {
      assert_int_not_equal(codes[i], codes[j]);
      assert_string_not_equal(tarn_strerror(codes[i]), tarn_strerror(codes[j]));
    }
  }
  assert_string_equal(tarn_status_name(TARN_EINVAL), "TARN_EINVAL");
}

static void success_and_unknown_codes(void **state) {
  (void)state;
  assert_string_equal(tarn_strerror(0), "success");
  assert_string_equal(tarn_status_name(0), "TARN_OK");
  const int unknown[] = {1, 42, -1000, -2147483647 - 1};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_string_equal(tarn_strerror(unknown[i]), "unknown tarn status");
    assert_null(tarn_status_name(unknown[i]));
  }
}

static void version_matches_headers(void **state) {
  (void)state;
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", TARN_VERSION_MAJOR,
           TARN_VERSION_MINOR, TARN_VERSION_PATCH);
  assert_string_equal(tarn_version(), expect);
  assert_string_equal(TARN_VERSION_STRING, expect);
  assert_int_equal(tarn_version_number(), TARN_VERSION);
  assert_int_equal(TARN_VERSION, TARN_VERSION_MAJOR * 10000 +
                                     TARN_VERSION_MINOR * 100 +
                                     TARN_VERSION_PATCH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_code_is_negative_named_and_described),
      cmocka_unit_test(success_and_unknown_codes),
      cmocka_unit_test(version_matches_headers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
