/* test_slab.c: the slab set's rules as a user sees them: options and their
 * limits, claiming and releasing slabs, bump allocation with alignment,
 * marks and resets, memory given back on release, and every bad input
 * (a destroyed set and memory that never held one among them, with
 * dead_handles.h) refused with its status and nothing changed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dead_handles.h"
#include "tarn.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#define MiB ((size_t)1 << 20)

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static tarn_slab_set *make_set(size_t count, size_t slab_size) {
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = count;
  o.slab_size = slab_size;
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(&o, &set), 0);
  assert_non_null(set);
  return set;
}

static tarn_slab *acquire(tarn_slab_set *set) {
  tarn_slab *slab = NULL;
  assert_int_equal(tarn_slab_acquire(set, &slab), 0);
  assert_non_null(slab);
  return slab;
}

static void *alloc(tarn_slab *slab, size_t size, size_t align) {
  void *p = NULL;
  assert_int_equal(tarn_slab_alloc(slab, size, align, &p), 0);
  assert_non_null(p);
  return p;
}

static size_t claimed(const tarn_slab_set *set) {
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  return st.claimed;
}

static void defaults(void **state) {
  (void)state;
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  assert_int_equal(o.count, 128);
  assert_int_equal(o.slab_size, 64 * MiB);
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(NULL, &set), 0);
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_int_equal(st.count, 128);
  assert_int_equal(st.slab_size, 64 * MiB);
  assert_int_equal(st.retain_bytes, TARN_SLAB_RETAIN_DEFAULT);
  assert_int_equal(st.claimed, 0);
  tarn_slab *slab = acquire(set);
  assert_int_equal(tarn_slab_used(slab), 0);
  assert_int_equal(tarn_slab_available(slab), 64 * MiB);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
  tarn_slab_set_destroy(NULL);
}

static void bad_options_are_refused(void **state) {
  (void)state;
  const struct {
    size_t count, size;
  } bad[] = {
      {0, MiB},
      {TARN_SLAB_COUNT_MAX + 1, MiB},
      {SIZE_MAX, MiB},
      {1, 0},
      {1, SIZE_MAX},                         /* rounding up overflows */
      {4096, SIZE_MAX / 2048},               /* count * size overflows */
      {3, (SIZE_MAX / 2) & ~(size_t)0xffff}, /* likewise, page-aligned */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn_slab_set_options o;
    tarn_slab_set_options_init(&o);
    o.count = bad[i].count;
    o.slab_size = bad[i].size;
    tarn_slab_set *set = (tarn_slab_set *)&o; /* must stay untouched */
    assert_int_equal(tarn_slab_set_create(&o, &set), TARN_EINVAL);
    assert_ptr_equal(set, &o);
  }
  assert_int_equal(tarn_slab_set_create(NULL, NULL), TARN_EINVAL);
}

static void sizes_round_up_to_pages(void **state) {
  (void)state;
  size_t page = page_size();
  const size_t asked[] = {1, page - 1, page, page + 1, 3 * page + 17};
  const size_t got[] = {page, page, page, 2 * page, 4 * page};
  for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
    tarn_slab_set_options o;
    tarn_slab_set_options_init(&o);
    o.count = 3;
    o.slab_size = asked[i];
    o.retain_bytes = SIZE_MAX; /* clamped to the slab size */
    tarn_slab_set *set = NULL;
    assert_int_equal(tarn_slab_set_create(&o, &set), 0);
    tarn_slab_set_stats st;
    assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
    assert_int_equal(st.slab_size, got[i]);
    assert_int_equal(st.retain_bytes, got[i]);
    tarn_slab *slab = acquire(set);
    assert_int_equal(tarn_slab_available(slab), got[i]);
    /* The whole rounded size is usable. */
    char *p = alloc(slab, got[i], 1);
    memset(p, 0xab, got[i]);
    assert_int_equal(tarn_slab_release(set, slab), 0);
    tarn_slab_set_destroy(set);
  }
}

static void refused_reservation_is_enomem(void **state) {
  (void)state;
  /* 4096 slabs of 64 GiB: more address space than x86-64 user space has. */
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = 4096;
  o.slab_size = (size_t)1 << 36;
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(&o, &set), TARN_ENOMEM);
  assert_null(set);
}

static void ulimit_v_is_enomem(void **state) {
  (void)state;
#ifdef SANITIZED
  skip(); /* sanitizers reserve terabytes of shadow: ulimit -v cannot apply */
#else
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The default set reserves 8 GiB; allow the child 256 MiB more than it
     * has mapped now. */
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f == NULL || fscanf(f, "%lu", &pages) != 1) _exit(3);
    fclose(f);
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = pages * page_size() + 256 * MiB;
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(4);
    tarn_slab_set *set = NULL;
    int rc = tarn_slab_set_create(NULL, &set);
    _exit(rc == TARN_ENOMEM && set == NULL ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
#endif
}

static void acquire_until_busy_then_release(void **state) {
  (void)state;
  /* 130 slabs: three mask words, the last one partial. */
  enum { n = 130 };
  tarn_slab_set *set = make_set(n, 1);
  tarn_slab *slabs[n];
  for (size_t i = 0; i < n; i++) {
    slabs[i] = acquire(set);
    for (size_t j = 0; j < i; j++) assert_ptr_not_equal(slabs[i], slabs[j]);
  }
  assert_int_equal(claimed(set), n);
  tarn_slab *none = (tarn_slab *)set;
  assert_int_equal(tarn_slab_acquire(set, &none), TARN_EBUSY);
  assert_ptr_equal(none, set);
  /* A released slab is the one the next acquire finds. */
  assert_int_equal(tarn_slab_release(set, slabs[77]), 0);
  assert_int_equal(claimed(set), n - 1);
  assert_ptr_equal(acquire(set), slabs[77]);
  assert_int_equal(tarn_slab_acquire(set, &none), TARN_EBUSY);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(tarn_slab_release(set, slabs[i]), 0);
  assert_int_equal(claimed(set), 0);
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_int_equal(st.acquires, n + 1);
  assert_int_equal(tarn_slab_acquire(NULL, &none), TARN_EINVAL);
  assert_int_equal(tarn_slab_acquire(set, NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_set_stats_get(NULL, &st), TARN_EINVAL);
  assert_int_equal(tarn_slab_set_stats_get(set, NULL), TARN_EINVAL);
  tarn_slab_set_destroy(set);
}

static void release_twice_is_refused(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(2, 1);
  tarn_slab *a = acquire(set);
  tarn_slab *b = acquire(set);
  assert_int_equal(tarn_slab_release(set, a), 0);
  assert_int_equal(tarn_slab_release(set, a), TARN_EMISUSE);
  assert_int_equal(claimed(set), 1);
  /* b is untouched by the refused release, and a is handed out once. */
  char *p = alloc(b, 16, 1);
  strcpy(p, "still here");
  assert_ptr_equal(acquire(set), a);
  tarn_slab *none = NULL;
  assert_int_equal(tarn_slab_acquire(set, &none), TARN_EBUSY);
  assert_string_equal(p, "still here");
  assert_int_equal(tarn_slab_release(set, a), 0);
  assert_int_equal(tarn_slab_release(set, b), 0);
  tarn_slab_set_destroy(set);
}

static void release_into_another_set_is_refused(void **state) {
  (void)state;
  tarn_slab_set *one = make_set(4, 1);
  tarn_slab_set *two = make_set(4, 1);
  tarn_slab *slab = acquire(one);
  char *p = alloc(slab, 8, 8);
  strcpy(p, "mine");
  assert_int_equal(tarn_slab_release(two, slab), TARN_EINVAL);
  /* Not a slab at all: a pointer into the middle of one. */
  tarn_slab *inside = (tarn_slab *)((char *)slab + 8);
  assert_int_equal(tarn_slab_release(one, inside), TARN_EINVAL);
  assert_int_equal(tarn_slab_release(one, NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_release(NULL, slab), TARN_EINVAL);
  assert_int_equal(claimed(one), 1);
  assert_int_equal(claimed(two), 0);
  assert_string_equal(p, "mine");
  assert_int_equal(tarn_slab_used(slab), 8);
  assert_int_equal(tarn_slab_release(one, slab), 0);
  tarn_slab_set_destroy(one);
  tarn_slab_set_destroy(two);
}

/* The set's calls on `set`, which is not a live set: each refuses it and
 * leaves its outputs alone; a destroy is a no-op. */
static void set_calls_refuse(void *set) {
  tarn_slab *slab = (tarn_slab *)(uintptr_t)0x1000, *out = slab;
  assert_int_equal(tarn_slab_acquire(set, &out), TARN_EINVAL);
  assert_ptr_equal(out, slab);
  assert_int_equal(tarn_slab_release(set, slab), TARN_EINVAL);
  tarn_slab_set_stats st;
  memset(&st, 0x5a, sizeof st);
  assert_int_equal(tarn_slab_set_stats_get(set, &st), TARN_EINVAL);
  assert_int_equal(st.count, (size_t)0x5a5a5a5a5a5a5a5aULL);
  tarn_slab_set_destroy(set);
}

/* A destroyed set (its block kept from the heap: dead_handles.h) and
 * memory that never held a set are refused by every call, a second
 * destroy included, without a write to them; a set beside it is
 * untouched. */
static void a_destroyed_set_is_refused(void **state) {
  (void)state;
  tarn_slab_set *kept = make_set(2, 1), *gone = make_set(3, 1);
  tarn_slab *mine = acquire(kept);
  char *p = alloc(mine, 16, 1);
  strcpy(p, "kept");
  acquire(gone);
  test_keep_when_freed(gone);
  tarn_slab_set_destroy(gone);
  assert_true(test_was_freed());
  set_calls_refuse(gone);
  test_free_kept(gone);
  test_each_junk(set_calls_refuse);
  assert_int_equal(claimed(kept), 1);
  assert_string_equal(p, "kept");
  assert_int_equal(tarn_slab_release(kept, mine), 0);
  tarn_slab_set_destroy(kept);
}

static void allocations_are_aligned_and_disjoint(void **state) {
  (void)state;
  size_t page = page_size();
  tarn_slab_set *set = make_set(1, 4 * MiB);
  tarn_slab *slab = acquire(set);
  char *prev_end = NULL;
  size_t sizes[] = {1, 3, 8, 24, 100, 4096, 5000};
  for (size_t align = 1; align <= page; align *= 2) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t before = tarn_slab_used(slab);
      char *p = alloc(slab, sizes[k], align);
      assert_int_equal((uintptr_t)p % align, 0);
      if (prev_end != NULL) assert_true(p >= prev_end);
      assert_true(tarn_slab_used(slab) >= before + sizes[k]);
      assert_true(tarn_slab_used(slab) < before + sizes[k] + align);
      memset(p, (int)k, sizes[k]);
      prev_end = p + sizes[k];
    }
  }
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void bad_allocations_change_nothing(void **state) {
  (void)state;
  size_t page = page_size();
  tarn_slab_set *set = make_set(1, 64 * 1024);
  tarn_slab *slab = acquire(set);
  alloc(slab, 3, 1);
  size_t used = tarn_slab_used(slab);
  const struct {
    size_t size, align;
    int status;
  } bad[] = {
      {0, 8, TARN_EINVAL},
      {8, 0, TARN_EINVAL},
      {8, 3, TARN_EINVAL},
      {8, 24, TARN_EINVAL},
      {8, 2 * page, TARN_EINVAL},
      {8, SIZE_MAX, TARN_EINVAL},
      {SIZE_MAX, 1, TARN_ENOSPC},
      {SIZE_MAX - 3, 16, TARN_ENOSPC},
      {64 * 1024, 1, TARN_ENOSPC},
      {64 * 1024 - 3 + 1, 1, TARN_ENOSPC},
      {64 * 1024 - 3, 8, TARN_ENOSPC}, /* fits only without the padding */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *p = &used;
    assert_int_equal(tarn_slab_alloc(slab, bad[i].size, bad[i].align, &p),
                     bad[i].status);
    assert_ptr_equal(p, &used);
    assert_int_equal(tarn_slab_used(slab), used);
  }
  assert_int_equal(tarn_slab_alloc(NULL, 8, 8, &(void *){NULL}), TARN_EINVAL);
  assert_int_equal(tarn_slab_alloc(slab, 8, 8, NULL), TARN_EINVAL);
  /* Exactly what is left fits; then nothing does. */
  size_t left = tarn_slab_available(slab);
  assert_int_equal(left, 64 * 1024 - 3);
  memset(alloc(slab, left, 1), 1, left);
  assert_int_equal(tarn_slab_available(slab), 0);
  void *p = NULL;
  assert_int_equal(tarn_slab_alloc(slab, 1, 1, &p), TARN_ENOSPC);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void free_is_a_no_op(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, 1);
  tarn_slab *slab = acquire(set);
  char *a = alloc(slab, 32, 16);
  strcpy(a, "kept");
  size_t used = tarn_slab_used(slab);
  tarn_slab_free(slab, a);
  assert_int_equal(tarn_slab_used(slab), used);
  char *b = alloc(slab, 32, 16);
  assert_true(b >= a + 32);
  assert_string_equal(a, "kept");
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void reset_returns_everything_since_the_mark(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, MiB);
  tarn_slab *slab = acquire(set);
  char *keep = alloc(slab, 10, 1);
  strcpy(keep, "below");
  tarn_mark m;
  assert_int_equal(tarn_slab_mark(slab, &m), 0);
  size_t at_mark = tarn_slab_used(slab);
  char *first = NULL;
  for (int round = 0; round < 3; round++) {
    char *p = alloc(slab, 1000, 8);
    alloc(slab, 5000, 64);
    if (first == NULL) first = p;
    assert_ptr_equal(p, first); /* the same memory, round after round */
    assert_true(tarn_slab_used(slab) > at_mark + 6000);
    assert_int_equal(tarn_slab_reset(slab, &m), 0);
    assert_int_equal(tarn_slab_used(slab), at_mark);
  }
  assert_string_equal(keep, "below");
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

/* tarn_slab_unmark frees the mark too: a million mark, allocate, unmark
 * rounds in a slab of 64 KiB leave it as it was, to the byte, the padding
 * that aligned the mark's header included (it stayed, up to 7 bytes; a
 * reset keeps its mark's 16 bytes, so the same loop with reset instead
 * fills the slab after 4096 rounds). The mark is stale afterwards, an
 * inner mark with it; bad arguments change nothing. */
static void unmark_returns_the_mark_too(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, 64 * 1024);
  tarn_slab *slab = acquire(set);
  alloc(slab, 3, 1); /* unaligned below the marks */
  size_t before = tarn_slab_used(slab);
  for (int round = 0; round < 1000000; round++) {
    tarn_mark m;
    assert_int_equal(tarn_slab_mark(slab, &m), 0);
    alloc(slab, 100, 8);
    assert_int_equal(tarn_slab_unmark(slab, &m), 0);
  }
  size_t used = tarn_slab_used(slab);
  assert_int_equal(used, before);
  tarn_mark outer, inner;
  assert_int_equal(tarn_slab_mark(slab, &outer), 0);
  alloc(slab, 10, 1);
  assert_int_equal(tarn_slab_mark(slab, &inner), 0);
  assert_int_equal(tarn_slab_unmark(slab, &outer), 0);
  assert_int_equal(tarn_slab_used(slab), used);
  assert_int_equal(tarn_slab_unmark(slab, &outer), TARN_ESTALE);
  assert_int_equal(tarn_slab_reset(slab, &inner), TARN_ESTALE);
  assert_int_equal(tarn_slab_unmark(NULL, &outer), TARN_EINVAL);
  assert_int_equal(tarn_slab_unmark(slab, NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_used(slab), used);
  /* A reset keeps the mark: unmark still frees it afterwards. */
  tarn_mark m;
  assert_int_equal(tarn_slab_mark(slab, &m), 0);
  alloc(slab, 100, 8);
  assert_int_equal(tarn_slab_reset(slab, &m), 0);
  assert_true(tarn_slab_used(slab) > used);
  assert_int_equal(tarn_slab_unmark(slab, &m), 0);
  assert_int_equal(tarn_slab_used(slab), used);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void nested_marks_are_last_in_first_out(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, MiB);
  tarn_slab *slab = acquire(set);
  tarn_mark outer, inner;
  assert_int_equal(tarn_slab_mark(slab, &outer), 0);
  size_t at_outer = tarn_slab_used(slab);
  alloc(slab, 100, 8);
  assert_int_equal(tarn_slab_mark(slab, &inner), 0);
  size_t at_inner = tarn_slab_used(slab);
  alloc(slab, 100, 8);
  assert_int_equal(tarn_slab_reset(slab, &inner), 0);
  assert_int_equal(tarn_slab_used(slab), at_inner);
  assert_int_equal(tarn_slab_reset(slab, &outer), 0);
  assert_int_equal(tarn_slab_used(slab), at_outer);
  /* inner was freed by the reset to outer: stale, even once the bump
   * pointer is far above where it stood. */
  assert_int_equal(tarn_slab_reset(slab, &inner), TARN_ESTALE);
  alloc(slab, 4000, 8);
  size_t used = tarn_slab_used(slab);
  assert_int_equal(tarn_slab_reset(slab, &inner), TARN_ESTALE);
  assert_int_equal(tarn_slab_used(slab), used);
  /* Skipping levels: a reset to outer pops inner marks it jumps over. */
  tarn_mark a, b;
  assert_int_equal(tarn_slab_mark(slab, &a), 0);
  alloc(slab, 10, 1);
  assert_int_equal(tarn_slab_mark(slab, &b), 0);
  assert_int_equal(tarn_slab_reset(slab, &outer), 0);
  assert_int_equal(tarn_slab_used(slab), at_outer);
  assert_int_equal(tarn_slab_reset(slab, &b), TARN_ESTALE);
  assert_int_equal(tarn_slab_reset(slab, &a), TARN_ESTALE);
  /* A new mark where a stale one stood is a different mark. */
  tarn_mark again;
  alloc(slab, 100, 8);
  assert_int_equal(tarn_slab_mark(slab, &again), 0);
  assert_int_equal(tarn_slab_reset(slab, &inner), TARN_ESTALE);
  assert_int_equal(tarn_slab_reset(slab, &again), 0);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void foreign_and_old_marks_are_refused(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(2, MiB);
  tarn_slab *one = acquire(set);
  tarn_slab *two = acquire(set);
  tarn_mark m1, m2;
  assert_int_equal(tarn_slab_mark(one, &m1), 0);
  assert_int_equal(tarn_slab_mark(two, &m2), 0);
  alloc(two, 64, 8);
  size_t used = tarn_slab_used(two);
  assert_int_equal(tarn_slab_reset(two, &m1), TARN_EINVAL);
  tarn_mark zero;
  memset(&zero, 0, sizeof zero);
  assert_int_equal(tarn_slab_reset(two, &zero), TARN_EINVAL);
  assert_int_equal(tarn_slab_reset(two, NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_reset(NULL, &m2), TARN_EINVAL);
  assert_int_equal(tarn_slab_mark(two, NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_mark(NULL, &m2), TARN_EINVAL);
  assert_int_equal(tarn_slab_used(two), used);
  /* A mark from before a release is stale, even on the same slab at the
   * same offset. */
  assert_int_equal(tarn_slab_release(set, one), 0);
  tarn_slab *back = acquire(set);
  assert_ptr_equal(back, one);
  assert_int_equal(tarn_slab_reset(back, &m1), TARN_ESTALE);
  tarn_mark fresh;
  assert_int_equal(tarn_slab_mark(back, &fresh), 0);
  assert_int_equal(fresh.offset, m1.offset);
  assert_int_equal(tarn_slab_reset(back, &m1), TARN_ESTALE);
  assert_int_equal(tarn_slab_reset(back, &fresh), 0);
  assert_int_equal(tarn_slab_release(set, back), 0);
  assert_int_equal(tarn_slab_release(set, two), 0);
  tarn_slab_set_destroy(set);
}

static void mark_in_a_full_slab_is_enospc(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, 1);
  tarn_slab *slab = acquire(set);
  size_t left = tarn_slab_available(slab);
  alloc(slab, left - 8, 1);
  tarn_mark m;
  assert_int_equal(tarn_slab_mark(slab, &m), TARN_ENOSPC);
  assert_int_equal(tarn_slab_used(slab), left - 8);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static void release_resets_the_slab(void **state) {
  (void)state;
  tarn_slab_set *set = make_set(1, MiB);
  tarn_slab *slab = acquire(set);
  alloc(slab, 5000, 8);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  slab = acquire(set);
  assert_int_equal(tarn_slab_used(slab), 0);
  assert_int_equal(tarn_slab_available(slab), MiB);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

static size_t resident_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  assert_non_null(f);
  unsigned long size = 0, resident = 0;
  assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
  fclose(f);
  return resident * page_size();
}

/* A set of one slab of `size` bytes that retains 1 MiB. */
static tarn_slab_set *one_slab_retaining_a_mib(size_t size) {
  tarn_slab_set_options o;
  tarn_slab_set_options_init(&o);
  o.count = 1;
  o.slab_size = size;
  o.retain_bytes = MiB;
  tarn_slab_set *set = NULL;
  assert_int_equal(tarn_slab_set_create(&o, &set), 0);
  return set;
}

static void resident_memory_falls_after_release(void **state) {
  (void)state;
  tarn_slab_set *set = one_slab_retaining_a_mib(256 * MiB);
  size_t before = resident_bytes();
  tarn_slab *slab = acquire(set);
  char *p = alloc(slab, 128 * MiB, 64);
  memset(p, 0x5a, 128 * MiB);
  size_t touched = resident_bytes();
  assert_true(touched >= before + 120 * MiB);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  size_t after = resident_bytes();
  /* Only the retained megabyte stays (plus sanitizer shadow and noise). */
  assert_true(after <= before + 40 * MiB);
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_int_equal(st.trimmed_bytes, 127 * MiB);
  /* The pages above the retained mark came back from the system: fresh. */
  slab = acquire(set);
  char *q = alloc(slab, 128 * MiB, 64);
  assert_ptr_equal(q, p);
  for (size_t off = MiB; off < 128 * MiB; off += 4096 * 7)
    assert_int_equal(q[off], 0);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

/* tarn_slab_trim gives back the pages above what is in use (and above
 * the retained bytes) while the owner keeps the slab: what is allocated
 * keeps its bytes, what was freed comes back zeroed. */
static void trim_keeps_what_is_in_use(void **state) {
  (void)state;
  tarn_slab_set *set = one_slab_retaining_a_mib(64 * MiB);
  tarn_slab *slab = acquire(set);
  char *keep = alloc(slab, 3 * MiB, 64);
  memset(keep, 0x5a, 3 * MiB);
  tarn_mark m;
  assert_int_equal(tarn_slab_mark(slab, &m), 0);
  char *tmp = alloc(slab, 20 * MiB, 4096);
  memset(tmp, 0x33, 20 * MiB);
  assert_int_equal(tarn_slab_trim(slab), 0); /* all in use: nothing */
  tarn_slab_set_stats st;
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_int_equal(st.trimmed_bytes, 0);
  assert_int_equal(tmp[20 * MiB - 1], 0x33);
  assert_int_equal(tarn_slab_unmark(slab, &m), 0);
  assert_int_equal(tarn_slab_trim(slab), 0);
  assert_int_equal(tarn_slab_set_stats_get(set, &st), 0);
  assert_true(st.trimmed_bytes >= 19 * MiB && st.trimmed_bytes <= 21 * MiB);
  for (size_t off = 0; off < 3 * MiB; off += 4093)
    assert_int_equal(keep[off], 0x5a);
  char *again = alloc(slab, 20 * MiB, 4096); /* where the mark was */
  assert_ptr_equal(again, keep + 3 * MiB);
  for (size_t off = 0; off < 20 * MiB; off += 4096 * 7)
    assert_int_equal(again[off], 0);
  assert_int_equal(tarn_slab_trim(NULL), TARN_EINVAL);
  assert_int_equal(tarn_slab_release(set, slab), 0);
  tarn_slab_set_destroy(set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults),
      cmocka_unit_test(bad_options_are_refused),
      cmocka_unit_test(sizes_round_up_to_pages),
      cmocka_unit_test(refused_reservation_is_enomem),
      cmocka_unit_test(ulimit_v_is_enomem),
      cmocka_unit_test(acquire_until_busy_then_release),
      cmocka_unit_test(release_twice_is_refused),
      cmocka_unit_test(release_into_another_set_is_refused),
      cmocka_unit_test(a_destroyed_set_is_refused),
      cmocka_unit_test(allocations_are_aligned_and_disjoint),
      cmocka_unit_test(bad_allocations_change_nothing),
      cmocka_unit_test(free_is_a_no_op),
      cmocka_unit_test(reset_returns_everything_since_the_mark),
      cmocka_unit_test(nested_marks_are_last_in_first_out),
      cmocka_unit_test(unmark_returns_the_mark_too),
      cmocka_unit_test(foreign_and_old_marks_are_refused),
      cmocka_unit_test(mark_in_a_full_slab_is_enospc),
      cmocka_unit_test(release_resets_the_slab),
      cmocka_unit_test(resident_memory_falls_after_release),
      cmocka_unit_test(trim_keeps_what_is_in_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
