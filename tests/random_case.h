/* random_case.h: the frame of the seeded random tests (test_random,
 * test_random_array). A case draws everything from a splitmix64 generator
 * seeded by (seed, case) alone, so it runs the same alone as in the batch;
 * it describes itself as it draws, and a failed check prints that
 * description with the line that reruns it. main runs each seed's cases
 * as a cmocka test, then checks that the run spilled and read back.
 *
 * Include after <cmocka.h>, "support.h" and "tarn.h", once the test has
 * defined `struct tcase` with at least these members:
 *   uint64_t seed, rng; unsigned index, workers; bool limited;
 *   size_t limit; char desc[...]; tarn_rt *rt;
 * The test then defines run_case(seed, index), which calls case_begin,
 * draws and runs its case (its runtime made by test_rt with c->workers and
 * c->limit) and calls case_finish.
 *
 * Environment: TARN_RANDOM_SEED=S runs seed S alone, TARN_RANDOM_CASE=C
 * case C alone, TARN_RANDOM_COUNT=N N cases per seed (default 240, or the
 * test's RANDOM_CASES_PER_SEED, defined before the include), and
 * TARN_RANDOM_VERBOSE=1 prints each case's description as it passes. */
#ifndef TARN_TESTS_RANDOM_CASE_H
#define TARN_TESTS_RANDOM_CASE_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the generator ------------------------------------------------------ */

static uint64_t next64(struct tcase *c) {
  uint64_t z = (c->rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static double unit(struct tcase *c) { return (next64(c) >> 11) * 0x1p-53; }
static double real(struct tcase *c) { return 2 * unit(c) - 1; } /* [-1, 1) */
static bool chance(struct tcase *c, double p) { return unit(c) < p; }
static size_t range(struct tcase *c, size_t lo, size_t hi) {
  return lo + (size_t)(next64(c) % (hi - lo + 1));
}
static size_t min_z(size_t a, size_t b) { return a < b ? a : b; }
static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }
static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* The environment variable `name` as a number, or `otherwise`. */
static long env_or(const char *name, long otherwise) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? strtol(v, NULL, 10) : otherwise;
}

/* ---- description and failures ------------------------------------------- */

static const char *random_program = "the test"; /* argv[0]'s last part */

static void describe(struct tcase *c, const char *fmt, ...) {
  size_t len = strlen(c->desc);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->desc + len, sizeof c->desc - len, fmt, ap);
  va_end(ap);
}

static void case_failed(const struct tcase *c, const char *file, int line,
                        const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *slash = strrchr(file, '/');
  fail_msg("%s:%d: %s\n  seed %" PRIu64
           " case %u: %s\n  rerun: TARN_RANDOM_SEED=%" PRIu64
           " TARN_RANDOM_CASE=%u %s",
           slash != NULL ? slash + 1 : file, line, what, c->seed, c->index,
           c->desc, c->seed, c->index, random_program);
}

/* A check of case c: on failure the case's description and rerun line. */
#define CHECK(c, cond, ...)                                         \
  do {                                                              \
    if (!(cond)) case_failed((c), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

static const char *sname(int status) {
  const char *s = tarn_status_name(status);
  return s != NULL ? s : "an unknown status";
}

/* `call` returns `want`. */
#define CALL(c, want, call)                                                \
  do {                                                                     \
    int rc_ = (call);                                                      \
    CHECK((c), rc_ == (want), "%s returned %s, not %s", #call, sname(rc_), \
          sname(want));                                                    \
  } while (0)

/* ---- a case's beginning and end, and the run's totals ------------------- */

static struct {
  unsigned cases, limited, spilled;
  uint64_t spills, restores;
} totals;

/* Case `index` of `seed`: its generator, workers (1 to 3) and whether it
 * runs under a limit (two in five). */
static void case_begin(struct tcase *c, uint64_t seed, unsigned index) {
  c->seed = seed;
  c->index = index;
  c->rng = seed * 0x9e3779b97f4a7c15u;
  c->rng = next64(c) ^ ((uint64_t)index * 0xd1b54a32d192ed03u);
  c->workers = (unsigned)range(c, 1, 3);
  c->limited = chance(c, 0.4);
}

/* The pool stayed within the case's limit; counts its spills; destroys
 * its runtime. */
static void case_finish(struct tcase *c) {
  tarn_pool_stats ps;
  CALL(c, 0, tarn_pool_stats_get(tarn_rt_pool(c->rt), &ps));
  CHECK(c, c->limit == 0 || ps.resident_peak <= c->limit,
        "resident peak %zu over the limit", ps.resident_peak);
  if (env_or("TARN_RANDOM_VERBOSE", 0) != 0)
    fprintf(stderr, "case %u: %s\n", c->index, c->desc);
  totals.cases++;
  totals.limited += c->limit != 0;
  totals.spilled += ps.spills != 0;
  totals.spills += ps.spills;
  totals.restores += ps.restores;
  CALL(c, 0, tarn_rt_destroy(c->rt));
}

/* ---- the run ------------------------------------------------------------ */

static void run_case(uint64_t seed, unsigned index); /* the test's */

#ifndef RANDOM_CASES_PER_SEED
#define RANDOM_CASES_PER_SEED 240
#endif

static const uint64_t random_seeds[] = {1, 2, 3, 4};
enum {
  RANDOM_SEEDS = sizeof random_seeds / sizeof random_seeds[0],
  RANDOM_COUNT = RANDOM_CASES_PER_SEED
};

static void test_seed(void **state) {
  uint64_t seed = *(const uint64_t *)*state;
  long one = env_or("TARN_RANDOM_CASE", -1);
  if (one >= 0) {
    run_case(seed, (unsigned)one);
    return;
  }
  long count = env_or("TARN_RANDOM_COUNT", RANDOM_COUNT);
  for (long i = 0; i < count; i++) run_case(seed, (unsigned)i);
}

/* Over the whole run (of 100 cases or more: fewer may not spill) some
 * limited cases spilled and read tiles back. */
static void test_spilled(void **state) {
  (void)state;
  print_message("%u cases, %u under a limit, %u spilled: %" PRIu64
                " spills, %" PRIu64 " restores\n",
                totals.cases, totals.limited, totals.spilled, totals.spills,
                totals.restores);
  if (totals.cases < 100) skip();
  assert_true(totals.spills > 0);
  assert_true(totals.restores > 0);
}

/* A test per seed (only TARN_RANDOM_SEED's when it is set), then the
 * spill check. */
int main(int argc, char **argv) {
  (void)argc;
  const char *slash = argv[0] != NULL ? strrchr(argv[0], '/') : NULL;
  if (argv[0] != NULL) random_program = slash != NULL ? slash + 1 : argv[0];
  static uint64_t chosen;
  static char names[RANDOM_SEEDS][32];
  struct CMUnitTest tests[RANDOM_SEEDS + 1];
  const uint64_t *list = random_seeds;
  size_t count = 0, nseeds = RANDOM_SEEDS;
  if (env_or("TARN_RANDOM_SEED", -1) >= 0) {
    chosen = (uint64_t)env_or("TARN_RANDOM_SEED", -1);
    list = &chosen, nseeds = 1;
  }
  for (size_t s = 0; s < nseeds; s++) {
    snprintf(names[s], sizeof names[s], "seed %" PRIu64, list[s]);
    tests[count++] =
        (struct CMUnitTest){names[s], test_seed, NULL, NULL, (void *)&list[s]};
  }
  tests[count++] = (struct CMUnitTest)cmocka_unit_test(test_spilled);
  return _cmocka_run_group_tests(random_program, tests, count, NULL, NULL);
}

#endif
