/* test_cgroup.c: the limits of the process's control groups
 * (src/prim/cgroup.c) and what tarn makes of them: the CPU quota
 * (tarn__cpu_quota), which bounds the runtime's default workers, and the
 * memory limit (tarn__memory_limit), against which a memory limit given as
 * a share ("50%", tarn_pool_limit_parse) is taken. Most tests build a tree
 * of their own that stands for "/" (its proc/self/cgroup,
 * proc/self/mountinfo and the groups' files), one layout each: cgroup v2,
 * v1, both, a container's view of its group, and files that are not as
 * the kernel writes them. The last tests make real groups when this
 * process may (root, a writable controller): a quota of half a processor,
 * in which a runtime starts one unpinned worker, and a memory limit of
 * 256 MiB, of which "50%" is 128 MiB; they start this program again
 * inside the group, and are skipped elsewhere. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "prim/prim.h"
#include "tarn/pool.h"
#include "tarn/rt.h"

extern char **environ;

/* ---- a tree that stands for "/" ------------------------------------------ */

static char root[PATH_MAX];

static int make_root(void **state) {
  (void)state;
  strcpy(root, "/tmp/tarn-test-XXXXXX");
  return mkdtemp(root) == NULL ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static int remove_root(void **state) {
  (void)state;
  return nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes `text` to root/rel, making the directories on the way. */
static void put(const char *rel, const char *text) {
  char path[PATH_MAX];
  assert_true(snprintf(path, sizeof path, "%s/%s", root, rel) <
              (int)sizeof path);
  for (char *p = path + strlen(root) + 1; *p != '\0'; p++)
    if (*p == '/') {
      *p = '\0';
      assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

/* A mountinfo line for a file system of type `fstype` with options
 * `options`, mounted at `at`, showing group `top` there. */
static void mount_line(char *out, size_t size, int id, const char *top,
                       const char *at, const char *fstype,
                       const char *options) {
  snprintf(out, size, "%d 23 0:%d %s %s rw,relatime shared:9 - %s %s %s\n", id,
           id, top, at, fstype, fstype, options);
}

/* The usual unified layout: the process in group `group`, cgroup2 mounted
 * at /sys/fs/cgroup showing the whole hierarchy, among other mounts. */
static void v2_layout(const char *group) {
  char text[PATH_MAX + 32], line[512], mounts[2048] = "";
  snprintf(text, sizeof text, "0::%s\n", group);
  put("proc/self/cgroup", text);
  mount_line(line, sizeof line, 21, "/", "/", "ext4", "rw");
  strcat(mounts, line);
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup", "cgroup2",
             "rw,nsdelegate");
  strcat(mounts, line);
  put("proc/self/mountinfo", mounts);
}

/* ---- cgroup v2 ------------------------------------------------------------
 */

static void no_quota_reads_as_none(void **state) {
  (void)state;
  v2_layout("/job");
  put("sys/fs/cgroup/job/cpu.max", "max 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
}

static void a_quota_counts_whole_processors_rounded_up(void **state) {
  (void)state;
  v2_layout("/job");
  static const struct {
    const char *max;
    unsigned cpus;
  } cases[] = {{"200000 100000\n", 2}, {"250000 100000\n", 3},
               {"50000 100000\n", 1},  {"1000 100000\n", 1},
               {"400000 50000\n", 8},  {"100000 100000 0\n", 1}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    put("sys/fs/cgroup/job/cpu.max", cases[i].max);
    assert_int_equal(tarn__cpu_quota(root), cases[i].cpus);
  }
}

static void the_tightest_group_on_the_way_up_counts(void **state) {
  (void)state;
  v2_layout("/a/b/c");
  put("sys/fs/cgroup/a/b/c/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/a/b/cpu.max", "150000 100000\n");
  put("sys/fs/cgroup/a/cpu.max", "400000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 2);
  put("sys/fs/cgroup/a/b/c/cpu.max", "100000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 1);
  /* Above the mount's top nothing is read. */
  put("sys/fs/cgroup/a/b/c/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/a/cpu.max", "max 100000\n");
  put("sys/fs/cpu.max", "100000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
}

/* A container without a cgroup namespace of its own: /proc/self/cgroup
 * names its group in the host's hierarchy, which the mount shows at its
 * top. */
static void a_container_sees_its_group_at_the_mount_top(void **state) {
  (void)state;
  char line[512];
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr/app\n");
  mount_line(line, sizeof line, 31, "/kubepods/pod1/ctr", "/sys/fs/cgroup",
             "cgroup2", "rw");
  put("proc/self/mountinfo", line);
  put("sys/fs/cgroup/app/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/cpu.max", "300000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 3);
  /* A group outside what the mount shows: nothing to read. */
  put("proc/self/cgroup", "0::/kubepods/pod2/app\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  /* A prefix of the top that is not a whole component is not below it. */
  put("proc/self/cgroup", "0::/kubepods/pod1/ctrx\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  /* Nor is a group outside the process's cgroup namespace. */
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup", "cgroup2", "rw");
  put("proc/self/mountinfo", line);
  put("sys/fs/cgroup/app/cpu.max", "100000 100000\n");
  put("sys/fs/app/cpu.max", "100000 100000\n"); /* where "/.." leads */
  put("proc/self/cgroup", "0::/../app\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  put("proc/self/cgroup", "0::/app\n");
  assert_int_equal(tarn__cpu_quota(root), 1);
}

/* Two mounts of the unified hierarchy: a bind mount of a subtree listed
 * before the whole one. The whole one shows the groups above the
 * subtree's top, and their limits count: the mount showing the most of
 * the way up is read, whichever comes first. */
static void the_mount_showing_most_groups_above_is_read(void **state) {
  (void)state;
  char line[512], mounts[1024] = "";
  put("proc/self/cgroup", "0::/a/b/c\n");
  mount_line(line, sizeof line, 41, "/a/b", "/mnt/sub", "cgroup2", "rw");
  strcat(mounts, line);
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup", "cgroup2", "rw");
  strcat(mounts, line);
  put("proc/self/mountinfo", mounts);
  put("mnt/sub/c/cpu.max", "400000 100000\n");
  put("mnt/sub/c/memory.max", "1073741824\n");
  put("sys/fs/cgroup/a/b/c/cpu.max", "400000 100000\n");
  put("sys/fs/cgroup/a/b/c/memory.max", "1073741824\n");
  put("sys/fs/cgroup/a/cpu.max", "100000 100000\n");
  put("sys/fs/cgroup/a/memory.max", "268435456\n");
  assert_int_equal(tarn__cpu_quota(root), 1);
  assert_int_equal(tarn__memory_limit(root), (size_t)256 << 20);
  /* The same in the other order. */
  char *second = strchr(mounts, '\n') + 1; /* (snprintf may not overlap) */
  memmove(mounts, second, strlen(second) + 1);
  mount_line(line, sizeof line, 41, "/a/b", "/mnt/sub", "cgroup2", "rw");
  strcat(mounts, line);
  put("proc/self/mountinfo", mounts);
  assert_int_equal(tarn__cpu_quota(root), 1);
  assert_int_equal(tarn__memory_limit(root), (size_t)256 << 20);
  /* A mount that does not show the group at all is passed over for one
   * that shows it with fewer groups above. */
  put("proc/self/cgroup", "0::/x/y\n");
  mount_line(line, sizeof line, 51, "/x/y", "/mnt/xy", "cgroup2", "rw");
  put("proc/self/mountinfo", line);
  put("mnt/xy/cpu.max", "200000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 2);
}

/* Only a component that is exactly ".." leads outside the namespace: a
 * group's name may begin with two dots, and its limits and its parents'
 * count. */
static void a_group_name_may_begin_with_two_dots(void **state) {
  (void)state;
  v2_layout("/jobs/..hidden");
  put("sys/fs/cgroup/jobs/..hidden/memory.max", "max\n");
  put("sys/fs/cgroup/jobs/memory.max", "1073741824\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)1 << 30);
  v2_layout("/jobs/...");
  put("sys/fs/cgroup/jobs/.../memory.max", "2147483648\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)1 << 30);
  put("sys/fs/cgroup/jobs/memory.max", "max\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)2 << 30);
  v2_layout("/jobs/../jobs/...");
  assert_int_equal(tarn__memory_limit(root), 0);
  v2_layout("/jobs/...hidden/..");
  put("sys/fs/cgroup/jobs/...hidden/memory.max", "1073741824\n");
  assert_int_equal(tarn__memory_limit(root), 0);
}

/* mountinfo writes a space in a mount point as \040. */
static void an_escaped_mount_point_is_read(void **state) {
  (void)state;
  char line[512];
  put("proc/self/cgroup", "0::/job\n");
  mount_line(line, sizeof line, 31, "/", "/cg\\040root", "cgroup2", "rw");
  put("proc/self/mountinfo", line);
  put("cg root/job/cpu.max", "200000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 2);
}

/* The files are read whole, however long (a host with many mounts), and
 * a last line without its newline counts. */
static void long_files_and_unended_lines_are_read(void **state) {
  (void)state;
  put("proc/self/cgroup", "0::/job");
  size_t cap = 64 << 10, len = 0;
  char *mounts = malloc(cap), line[512];
  assert_non_null(mounts);
  for (int i = 0; i < 400; i++) {
    char at[64];
    snprintf(at, sizeof at, "/mnt/volume-%d", i);
    mount_line(line, sizeof line, 100 + i, "/", at, "ext4", "rw");
    assert_true(len + strlen(line) < cap);
    strcpy(mounts + len, line);
    len += strlen(line);
  }
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup", "cgroup2", "rw");
  line[strcspn(line, "\n")] = '\0';
  strcpy(mounts + len, line);
  assert_true(strlen(mounts) > 16384);
  put("proc/self/mountinfo", mounts);
  free(mounts);
  put("sys/fs/cgroup/job/cpu.max", "300000 100000");
  assert_int_equal(tarn__cpu_quota(root), 3);
}

/* ---- cgroup v1 ------------------------------------------------------------
 */

static void v1_layout(void) {
  char line[512], mounts[2048] = "";
  put("proc/self/cgroup",
      "5:cpuset:/elsewhere\n"
      "4:cpu,cpuacct:/batch/job\n"
      "3:memory:/batch/job\n"
      "0::/\n");
  mount_line(line, sizeof line, 30, "/", "/sys/fs/cgroup/cpuset", "cgroup",
             "rw,cpuset");
  strcat(mounts, line);
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup",
             "rw,cpu,cpuacct");
  strcat(mounts, line);
  mount_line(line, sizeof line, 32, "/", "/sys/fs/cgroup/unified", "cgroup2",
             "rw");
  strcat(mounts, line);
  put("proc/self/mountinfo", mounts);
}

static void a_v1_quota_is_its_quota_over_its_period(void **state) {
  (void)state;
  v1_layout();
  const char *dir = "sys/fs/cgroup/cpu,cpuacct/batch/job";
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  put(path, "-1\n");
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  put(path, "100000\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  put(path, "150000\n");
  assert_int_equal(tarn__cpu_quota(root), 2);
  /* A parent's tighter quota counts; the cpuset and cpuacct-only
   * hierarchies are not the cpu controller's. */
  put("sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_quota_us", "50000\n");
  put("sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_period_us", "100000\n");
  put("sys/fs/cgroup/cpuset/elsewhere/cpu.cfs_quota_us", "1000\n");
  put("sys/fs/cgroup/cpuset/elsewhere/cpu.cfs_period_us", "100000\n");
  assert_int_equal(tarn__cpu_quota(root), 1);
}

/* Both hierarchies (a "hybrid" host): the tighter of the two. */
static void with_both_hierarchies_the_tighter_counts(void **state) {
  (void)state;
  v1_layout();
  put("sys/fs/cgroup/cpu,cpuacct/batch/job/cpu.cfs_quota_us", "300000\n");
  put("sys/fs/cgroup/cpu,cpuacct/batch/job/cpu.cfs_period_us", "100000\n");
  assert_int_equal(tarn__cpu_quota(root), 3);
  put("proc/self/cgroup", "4:cpu,cpuacct:/batch/job\n0::/svc\n");
  put("sys/fs/cgroup/unified/svc/cpu.max", "200000 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 2);
  put("sys/fs/cgroup/unified/svc/cpu.max", "max 100000\n");
  assert_int_equal(tarn__cpu_quota(root), 3);
}

/* ---- the memory limit ------------------------------------------------------
 */

static void a_v2_memory_limit_is_the_tightest_of_max_and_high(void **state) {
  (void)state;
  v2_layout("/a/job");
  put("sys/fs/cgroup/a/job/memory.max", "max\n");
  put("sys/fs/cgroup/a/job/memory.high", "max\n");
  assert_int_equal(tarn__memory_limit(root), 0);
  put("sys/fs/cgroup/a/job/memory.max", "4294967296\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)4 << 30);
  put("sys/fs/cgroup/a/job/memory.high", "3221225472\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)3 << 30);
  put("sys/fs/cgroup/a/memory.max", "1073741824\n"); /* the parent's */
  assert_int_equal(tarn__memory_limit(root), (size_t)1 << 30);
  /* The CPU quota is another file: none here. */
  assert_int_equal(tarn__cpu_quota(root), 0);
}

static void a_v1_memory_limit_and_its_unlimited_value(void **state) {
  (void)state;
  char line[512], mounts[2048] = "";
  put("proc/self/cgroup", "4:cpu,cpuacct:/x\n3:memory:/batch/job\n0::/\n");
  mount_line(line, sizeof line, 31, "/", "/sys/fs/cgroup/cpu,cpuacct", "cgroup",
             "rw,cpu,cpuacct");
  strcat(mounts, line);
  mount_line(line, sizeof line, 32, "/", "/sys/fs/cgroup/memory", "cgroup",
             "rw,memory");
  strcat(mounts, line);
  put("proc/self/mountinfo", mounts);
  const char *file = "sys/fs/cgroup/memory/batch/job/memory.limit_in_bytes";
  put(file, "9223372036854771712\n"); /* what v1 reads with no limit */
  assert_int_equal(tarn__memory_limit(root), 0);
  put(file, "536870912\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)512 << 20);
  /* The cpu hierarchy's files are not the memory controller's. */
  put("sys/fs/cgroup/cpu,cpuacct/x/memory.limit_in_bytes", "1048576\n");
  assert_int_equal(tarn__memory_limit(root), (size_t)512 << 20);
  put(file, "max\n");
  assert_int_equal(tarn__memory_limit(root), 0);
}

/* A limit as bytes or as a share of the memory the process may use. */
static void a_limit_reads_as_bytes_or_a_share_of_memory(void **state) {
  (void)state;
  static const struct {
    const char *text;
    size_t bytes;
  } sizes[] = {{"4096", 4096},
               {"512M", (size_t)512 << 20},
               {"2G", (size_t)2 << 30},
               {"3KiB", 3072},
               {"1t", (size_t)1 << 40}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t bytes = 0;
    assert_int_equal(tarn_pool_limit_parse(sizes[i].text, &bytes), 0);
    assert_int_equal(bytes, sizes[i].bytes);
  }
  size_t usable = tarn__memory_usable();
  assert_true(usable > 0);
  size_t half = 0, all = 0, one = 0;
  assert_int_equal(tarn_pool_limit_parse("50%", &half), 0);
  assert_int_equal(tarn_pool_limit_parse("100%", &all), 0);
  assert_int_equal(tarn_pool_limit_parse("1%", &one), 0);
  assert_int_equal(all, usable);
  assert_true(half >= usable / 2 - 1 && half <= usable / 2 + 1);
  assert_true(one >= usable / 100 - 1 && one <= usable / 100 + 1);
  static const char *const bad[] = {
      "0%",  "101%", "%",  "50.5%", "-5%", "5 %",   "50%%",
      "%50", "",     "5Q", "-1",    " 5",  "1000%", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    size_t bytes = 7;
    assert_int_equal(tarn_pool_limit_parse(bad[i], &bytes), TARN_EINVAL);
    assert_int_equal(bytes, 7); /* untouched */
  }
  size_t bytes = 0;
  assert_int_equal(tarn_pool_limit_parse(NULL, &bytes), TARN_EINVAL);
  assert_int_equal(tarn_pool_limit_parse("1G", NULL), TARN_EINVAL);
  /* TARN_MEM_LIMIT takes the same forms. */
  tarn_pool_options o;
  setenv("TARN_MEM_LIMIT", "25%", 1);
  assert_int_equal(tarn_pool_options_init(&o), 0);
  assert_true(o.mem_limit >= usable / 4 - 1 && o.mem_limit <= usable / 4 + 1);
  setenv("TARN_MEM_LIMIT", "250%", 1);
  assert_int_equal(tarn_pool_options_init(&o), TARN_EINVAL);
  unsetenv("TARN_MEM_LIMIT");
}

/* ---- what is not as the kernel writes it ----------------------------------
 */

static void files_not_as_documented_read_as_no_quota(void **state) {
  (void)state;
  v2_layout("/job");
  static const char *const bad[] = {
      "",           "abc 100000\n",     "100000\n",
      "0 100000\n", "100000 0\n",       "-100000 100000\n",
      "1,1\n",      "100000 100000x\n", "99999999999999999999999 100000\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    put("sys/fs/cgroup/job/cpu.max", bad[i]);
    assert_int_equal(tarn__cpu_quota(root), 0);
  }
  /* No mountinfo line for the hierarchy, or no such files at all. */
  put("sys/fs/cgroup/job/cpu.max", "100000 100000\n");
  put("proc/self/mountinfo", "21 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  put("proc/self/mountinfo", "garbage\n\n - \n1 2 3\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  put("proc/self/cgroup", "no colons here\n0:\n::\n");
  assert_int_equal(tarn__cpu_quota(root), 0);
  assert_int_equal(tarn__cpu_quota("/nonexistent-root-for-tarn"), 0);
}

/* ---- real groups ----------------------------------------------------------
 */

/* The child's exit status when the kernel would not let it join the group
 * (some hierarchies refuse a process in a group with children): skipped. */
#define CANNOT_JOIN 10

/* Whether the comma-separated `list` has the element `name`. */
static bool names(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

/* In a group with a quota of half a processor: one worker, unpinned where
 * there are other processors. */
static int check_cpu_quota(void) {
  unsigned allowed = tarn__cpus_allowed(NULL, 0);
  if (tarn__cpu_quota(NULL) != 1) return 11;
  tarn_rt_options o;
  if (tarn_rt_options_init(&o) != 0 || o.workers != 1) return 12;
  if (o.pin_workers != (allowed <= 1)) return 13;
  tarn_rt *rt = NULL;
  if (tarn_rt_create(NULL, &rt) != 0) return 14;
  int rc = tarn_rt_workers(rt) == 1 ? 0 : 15;
  if (tarn_rt_destroy(rt) != 0) rc = 16;
  return rc;
}

/* In a group limited to 256 MiB: "50%" is 128 MiB, as TARN_MEM_LIMIT. */
static int check_memory_limit(void) {
  size_t limit = (size_t)256 << 20, bytes = 0;
  if (tarn__memory_limit(NULL) != limit || tarn__memory_usable() != limit)
    return 11;
  if (tarn_pool_limit_parse("50%", &bytes) != 0 || bytes != limit / 2)
    return 12;
  setenv("TARN_MEM_LIMIT", "25%", 1);
  tarn_pool_options o;
  if (tarn_pool_options_init(&o) != 0 || o.mem_limit != limit / 4) return 13;
  return 0;
}

/* The child: joins the group whose cgroup.procs is `procs`, then checks
 * what the `kind` of its limit ("cpu" or "memory") makes tarn do. Exits 0
 * when right. */
static int child_in_group(const char *procs, const char *kind) {
  FILE *f = fopen(procs, "w");
  if (f == NULL) return CANNOT_JOIN;
  bool joined = fprintf(f, "%d\n", (int)getpid()) >= 0;
  if (fclose(f) != 0 || !joined) return CANNOT_JOIN;
  return strcmp(kind, "cpu") == 0 ? check_cpu_quota() : check_memory_limit();
}

/* Writes `text` to the file `name` of directory `dir`. */
static bool write_to(const char *dir, const char *name, const char *text) {
  char path[PATH_MAX + 32];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return false;
  FILE *f = fopen(path, "w");
  if (f == NULL) return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

/* A limit to set on a new group: where the controller's v1 hierarchy is
 * usually mounted, and what to write in v1 and in v2. */
struct real_limit {
  const char *controller;
  const char *v1_mounts[2];
  const char *v1_file, *v1_text, *v2_file, *v2_text;
};

static const struct real_limit half_a_processor = {
    "cpu",
    {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"},
    "cpu.cfs_quota_us",
    "50000\n",
    "cpu.max",
    "50000 100000\n"};
static const struct real_limit memory_256m = {"memory",
                                              {"/sys/fs/cgroup/memory", NULL},
                                              "memory.limit_in_bytes",
                                              "268435456\n",
                                              "memory.max",
                                              "268435456\n"};

/* A new group under this process's own in a writable hierarchy of the
 * limit's controller, with the limit set, into dir; false when this
 * process may not make one. */
static bool make_group(const struct real_limit *l, char *dir, size_t size,
                       char *procs, size_t psize) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (f == NULL) return false;
  char line[PATH_MAX + 64], v1[PATH_MAX] = "", v2[PATH_MAX] = "";
  bool has_v1 = false, has_v2 = false;
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL) continue;
    *c2 = '\0';
    if (strncmp(line, "0:", 2) == 0 && c1[1] == '\0') {
      snprintf(v2, sizeof v2, "%s", c2 + 1);
      has_v2 = true;
    } else if (names(c1 + 1, l->controller)) {
      snprintf(v1, sizeof v1, "%s", c2 + 1);
      has_v1 = true;
    }
  }
  fclose(f);
  for (int k = 0; k < 3; k++) {
    bool unified = k == 2;
    const char *base = unified ? "/sys/fs/cgroup" : l->v1_mounts[k];
    if (base == NULL || (unified ? !has_v2 : !has_v1)) continue;
    const char *group = unified ? v2 : v1;
    if (snprintf(dir, size, "%s%s/tarn-test-XXXXXX", base,
                 strcmp(group, "/") == 0 ? "" : group) >= (int)size ||
        mkdtemp(dir) == NULL)
      continue;
    bool ok = unified ? write_to(dir, l->v2_file, l->v2_text)
                      : write_to(dir, l->v1_file, l->v1_text);
    if (ok && !unified && strcmp(l->controller, "cpu") == 0)
      ok = write_to(dir, "cpu.cfs_period_us", "100000\n");
    if (ok && snprintf(procs, psize, "%s/cgroup.procs", dir) < (int)psize)
      return true;
    rmdir(dir);
  }
  return false;
}

/* Runs this program again in a new group with limit `l` (checking it with
 * child_in_group), without the TARN_ variables a test run may set;
 * skipped where the group cannot be made or joined. */
static void run_in_a_real_group(const struct real_limit *l) {
  char dir[PATH_MAX], procs[PATH_MAX];
  if (geteuid() != 0 || !make_group(l, dir, sizeof dir, procs, sizeof procs)) {
    skip();
    return;
  }
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char **env = calloc(n + 1, sizeof *env);
  assert_non_null(env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TARN_", 5) != 0) env[k++] = environ[i];
  char *argv[] = {"test_cgroup", "--in-group", procs, (char *)l->controller,
                  NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env);
  free(env);
  int status = -1;
  if (rc == 0) assert_int_equal(waitpid(pid, &status, 0), pid);
  int removed = rmdir(dir); /* empty once the child is gone */
  assert_int_equal(rc, 0);
  assert_true(WIFEXITED(status));
  assert_int_equal(removed, 0);
  if (WEXITSTATUS(status) == CANNOT_JOIN) {
    skip();
    return;
  }
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void a_real_quota_of_half_a_processor_gives_one_worker(void **state) {
  (void)state;
  run_in_a_real_group(&half_a_processor);
}

static void a_real_memory_limit_is_what_a_share_is_taken_of(void **state) {
  (void)state;
  run_in_a_real_group(&memory_256m);
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--in-group") == 0)
    return child_in_group(argv[2], argv[3]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_quota_reads_as_none, make_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(
          a_quota_counts_whole_processors_rounded_up, make_root, remove_root),
      cmocka_unit_test_setup_teardown(the_tightest_group_on_the_way_up_counts,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(
          a_container_sees_its_group_at_the_mount_top, make_root, remove_root),
      cmocka_unit_test_setup_teardown(long_files_and_unended_lines_are_read,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(
          the_mount_showing_most_groups_above_is_read, make_root, remove_root),
      cmocka_unit_test_setup_teardown(a_group_name_may_begin_with_two_dots,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(an_escaped_mount_point_is_read, make_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(a_v1_quota_is_its_quota_over_its_period,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(with_both_hierarchies_the_tighter_counts,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(
          a_v2_memory_limit_is_the_tightest_of_max_and_high, make_root,
          remove_root),
      cmocka_unit_test_setup_teardown(a_v1_memory_limit_and_its_unlimited_value,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(files_not_as_documented_read_as_no_quota,
                                      make_root, remove_root),
      cmocka_unit_test(a_limit_reads_as_bytes_or_a_share_of_memory),
      cmocka_unit_test(a_real_quota_of_half_a_processor_gives_one_worker),
      cmocka_unit_test(a_real_memory_limit_is_what_a_share_is_taken_of),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
