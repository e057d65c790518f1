/* example.h: what the example programs share: a check that ends the
 * program cleanly when a call fails, and reading sizes from the command
 * line. Each example includes it once (its definitions are static). */
#ifndef TARN_EXAMPLE_H
#define TARN_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include <tarn.h>

/* The example's runtime, destroyed before a failing program exits. */
static tarn_rt *example_rt;

/* Prints the failed call and its status, then exits with 1; for
 * TARN_EINVAL, also the environment variable of tarn's that is not valid,
 * if one is not (tarn_env_check). The runtime is destroyed first: that
 * waits for the tasks still running (those submitted before the failed
 * call). exit() with tasks running would run the libraries' destructors,
 * OpenBLAS's among them, under those tasks. */
static void example_fail(const char *call, int rc) {
  const char *name = NULL;
  if (rc == TARN_EINVAL && tarn_env_check(&name) != 0)
    fprintf(stderr, "%s: %s (%s=\"%s\" in the environment is not valid)\n",
            call, tarn_strerror(rc), name, getenv(name));
  else
    fprintf(stderr, "%s: %s\n", call, tarn_strerror(rc));
  (void)tarn_rt_destroy(example_rt);
  exit(1);
}

#define CHECK(call)                         \
  do {                                      \
    int rc_ = (call);                       \
    if (rc_ != 0) example_fail(#call, rc_); \
  } while (0)

/* Destroys the example's runtime (waiting for its tasks); exits as
 * example_fail when that reports an error. */
static void example_rt_destroy(void) {
  tarn_rt *rt = example_rt;
  example_rt = NULL;
  CHECK(tarn_rt_destroy(rt));
}

/* The end of an example: destroys the runtime, prints "NAME: ok" or
 * "NAME: FAILED" and returns the exit status (0 when ok). */
static int example_finish(const char *name, int ok) {
  example_rt_destroy();
  printf("%s: %s\n", name, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

/* argv[i] as a positive number, or `fallback` when there is no argv[i];
 * prints `usage` and exits with 2 when argv[i] is not one. */
static size_t example_size(int argc, char **argv, int i, size_t fallback,
                           const char *usage) {
  if (argc <= i) return fallback;
  char *end;
  unsigned long long v = strtoull(argv[i], &end, 10);
  if (argv[i][0] < '0' || argv[i][0] > '9' || *end != '\0' || v == 0) {
    fprintf(stderr, "usage: %s (positive numbers)\n", usage);
    exit(2);
  }
  return (size_t)v;
}

#endif
