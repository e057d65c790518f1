/* args.c: numbers from the tarn command's arguments, and the check of
 * tarn's environment variables every subcommand makes (see args.h). */
#include "args.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/rt.h"

/* Leading digits of `text` into *v; *end past them. False when `text` does
 * not start with a digit or the number overflows. */
static bool digits(const char *text, unsigned long long *v, char **end) {
  if (text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  *v = strtoull(text, end, 10);
  return errno == 0;
}

bool tarn_args_count(const char *text, long long min, long long max,
                     long long *out) {
  unsigned long long v;
  char *end;
  if (!digits(text, &v, &end) || *end != '\0' || v < (unsigned long long)min ||
      v > (unsigned long long)max)
    return false;
  *out = (long long)v;
  return true;
}

bool tarn_args_environment(const char *command) {
  const char *name = NULL;
  if (tarn_env_check(&name) == 0) return true;
  const char *value = getenv(name);
  fprintf(stderr,
          "tarn %s: %s=\"%s\" in the environment is not valid (the README's "
          "\"Environment\" says what each variable takes)\n",
          command, name, value != NULL ? value : "");
  return false;
}
