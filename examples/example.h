/* example.h: what the example programs share: the start of main (the
 * standard descriptors, --help and the count of arguments), a check that
 * ends the program cleanly when a call fails, the check that the output
 * was written, and reading sizes from the command line. Each example
 * includes it once (its definitions are static). */
#ifndef TARN_EXAMPLE_H
#define TARN_EXAMPLE_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tarn.h>

/* The example's runtime, destroyed before a failing program exits. */
static tarn_rt *example_rt;

/* What example_fail runs after the runtime is destroyed, before it exits:
 * removes what the example made for itself (out_of_core's temporary
 * directory), or NULL for nothing. */
static void (*example_cleanup)(void);

/* Opens /dev/null onto each of descriptors 0, 1 and 2 that is closed: a
 * program started with `>&-` would otherwise give descriptor 1 to the
 * first file it opens (the pool's spill file, out_of_core's r.npy), and
 * printf would write into that file. Exits with 1 when it cannot. */
static void example_standard_descriptors(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    /* the lowest free descriptor: fd, as those below it are open */
    if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) exit(1);
  }
}

/* Whether everything the example printed reached stdout (a full disk
 * loses it); says so on stderr, naming the example, when it did not. */
static int example_output_written(const char *name) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return 1;
  fprintf(stderr, "%s: write error: %s\n", name,
          strerror(errno != 0 ? errno : EIO));
  return 0;
}

/* The start of an example's main, before anything is opened or printed:
 * the standard descriptors; given -h or --help, prints "usage: USAGE" to
 * stdout and exits with 0; with more than `max_args` arguments, prints it
 * to stderr and exits with 2 (extra arguments were ignored until
 * 2026-12-05). `usage` starts with the example's name. */
static void example_start(int argc, char **argv, int max_args,
                          const char *usage) {
  example_standard_descriptors();
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: %s\n", usage);
      exit(example_output_written(argv[0]) ? 0 : 1);
    }
  if (argc - 1 > max_args) {
    fprintf(stderr, "usage: %s (at most %d arguments, not '%s')\n", usage,
            max_args, argv[max_args + 1]);
    exit(2);
  }
}

/* Prints the failed call and its status, then exits with 1; for
 * TARN_EINVAL, also the environment variable of tarn's that is not valid,
 * if one is not (tarn_env_check). The runtime is destroyed first: that
 * waits for the tasks still running (those submitted before the failed
 * call). exit() with tasks running would run the libraries' destructors,
 * OpenBLAS's among them, under those tasks. The destroy's own status is
 * printed too when it differs: a call that reads data a failed task was
 * to write returns TARN_ECANCELED, and the failed task's status (a tile
 * too large for the machine's memory: TARN_ENOMEM) comes back from the
 * destroy, outside any region. */
static void example_fail(const char *call, int rc) {
  const char *name = NULL;
  if (rc == TARN_EINVAL && tarn_env_check(&name) != 0)
    fprintf(stderr, "%s: %s (%s=\"%s\" in the environment is not valid)\n",
            call, tarn_strerror(rc), name, getenv(name));
  else
    fprintf(stderr, "%s: %s\n", call, tarn_strerror(rc));
  tarn_rt *rt = example_rt;
  example_rt = NULL;
  int destroyed = tarn_rt_destroy(rt);
  if (destroyed != 0 && destroyed != rc)
    fprintf(stderr, "(the failed task's own status: %s)\n",
            tarn_strerror(destroyed));
  if (example_cleanup != NULL) example_cleanup();
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
 * "NAME: FAILED" and returns the exit status: 0 when ok and everything it
 * printed was written (a full disk lost it, and the status was 0). */
static int example_finish(const char *name, int ok) {
  example_rt_destroy();
  printf("%s: %s\n", name, ok ? "ok" : "FAILED");
  return example_output_written(name) && ok ? 0 : 1;
}

/* argv[i] as a positive number of at most `max`, or `fallback` when there
 * is no argv[i]; prints `usage` and exits with 2 when argv[i] is not one
 * (a number too large for an unsigned long long was taken as its largest
 * value until 2026-12-05). */
static size_t example_size_at_most(int argc, char **argv, int i,
                                   size_t fallback, size_t max,
                                   const char *usage) {
  if (argc <= i) return fallback;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(argv[i], &end, 10);
  if (argv[i][0] < '0' || argv[i][0] > '9' || *end != '\0' || v == 0 ||
      errno == ERANGE || v > max) {
    fprintf(stderr, "usage: %s (positive numbers, at most %zu)\n", usage, max);
    exit(2);
  }
  return (size_t)v;
}

/* example_size_at_most with a bound of its own: 2^32, more than any size
 * of these examples, so that their products of sizes (elements, bytes)
 * cannot wrap a size_t. */
static size_t example_size(int argc, char **argv, int i, size_t fallback,
                           const char *usage) {
  return example_size_at_most(argc, argv, i, fallback, (size_t)1 << 32, usage);
}

#endif
