/* environ.h: environment variables a test sets, and puts back as the
 * test program found them (include after <cmocka.h>), so that the other
 * tests run under what the shell set. */
#ifndef TARN_TESTS_ENVIRON_H
#define TARN_TESTS_ENVIRON_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Copies the values of names[0..n) into saved[0..n) (NULL: unset), then
 * unsets them. */
static inline void test_env_save(const char *const *names, size_t n,
                                 char **saved) {
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(names[i]);
    saved[i] = v != NULL ? strdup(v) : NULL;
    assert_true(v == NULL || saved[i] != NULL);
    unsetenv(names[i]);
  }
}

/* Puts back what test_env_save saved, and frees it. */
static inline void test_env_restore(const char *const *names, size_t n,
                                    char **saved) {
  for (size_t i = 0; i < n; i++) {
    if (saved[i] != NULL)
      setenv(names[i], saved[i], 1);
    else
      unsetenv(names[i]);
    free(saved[i]);
  }
}

#endif
