/* test_cpu_quota.c: the CPU quota of the process's control groups
 * (tarn__cpu_quota, src/prim/cgroup.c) and what the runtime makes of it.
 * Most tests build a tree of their own that stands for "/" (its
 * proc/self/cgroup, proc/self/mountinfo and the groups' quota files), one
 * layout each: cgroup v2, v1, both, a container's view of its group, and
 * files that are not as the kernel writes them. The last test makes a
 * real group with a quota of half a processor when this process may
 * (root, a writable cpu controller), starts this program again inside it,
 * and checks that the runtime there starts one worker, unpinned; it is
 * skipped elsewhere. */
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

/* ---- a real group ----------------------------------------------------------
 */

/* The child's exit status when the kernel would not let it join the group
 * (some hierarchies refuse a process in a group with children): skipped. */
#define CANNOT_JOIN 10

/* Whether the comma-separated `list` has the element "cpu". */
static bool names_cpu(const char *list) {
  for (const char *p = list; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len == 3 && strncmp(p, "cpu", 3) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

/* The child: joins the group whose cgroup.procs is `procs`, then checks
 * the runtime's defaults and a runtime with them. Exits 0 when right. */
static int child_in_group(const char *procs) {
  FILE *f = fopen(procs, "w");
  if (f == NULL) return CANNOT_JOIN;
  bool joined = fprintf(f, "%d\n", (int)getpid()) >= 0;
  if (fclose(f) != 0 || !joined) return CANNOT_JOIN;
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

/* A new group under this process's own in a writable cpu hierarchy, with
 * a quota of half a processor, into dir; false when this process may not
 * make one. */
static bool make_group(char *dir, size_t size, char *procs, size_t psize) {
  static const char *const v1_mounts[] = {"/sys/fs/cgroup/cpu",
                                          "/sys/fs/cgroup/cpu,cpuacct"};
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
    } else if (names_cpu(c1 + 1)) {
      snprintf(v1, sizeof v1, "%s", c2 + 1);
      has_v1 = true;
    }
  }
  fclose(f);
  for (int k = 0; k < 3; k++) {
    bool unified = k == 2;
    if (unified ? !has_v2 : !has_v1) continue;
    const char *base = unified ? "/sys/fs/cgroup" : v1_mounts[k];
    const char *group = unified ? v2 : v1;
    if (snprintf(dir, size, "%s%s/tarn-test-XXXXXX", base,
                 strcmp(group, "/") == 0 ? "" : group) >= (int)size ||
        mkdtemp(dir) == NULL)
      continue;
    bool ok = unified ? write_to(dir, "cpu.max", "50000 100000\n")
                      : write_to(dir, "cpu.cfs_period_us", "100000\n") &&
                            write_to(dir, "cpu.cfs_quota_us", "50000\n");
    if (ok && snprintf(procs, psize, "%s/cgroup.procs", dir) < (int)psize)
      return true;
    rmdir(dir);
  }
  return false;
}

static void a_real_quota_of_half_a_processor_gives_one_worker(void **state) {
  (void)state;
  char dir[PATH_MAX], procs[PATH_MAX];
  if (geteuid() != 0 || !make_group(dir, sizeof dir, procs, sizeof procs)) {
    skip();
    return;
  }
  /* This program again, in the group, without the TARN_ variables a test
   * run may set. */
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char **env = calloc(n + 1, sizeof *env);
  assert_non_null(env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "TARN_", 5) != 0) env[k++] = environ[i];
  char *argv[] = {"test_cpu_quota", "--in-group", procs, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env);
  free(env);
  int status = -1;
  if (rc == 0) assert_int_equal(waitpid(pid, &status, 0), pid);
  int removed = rmdir(dir); /* empty once the child is gone */
  assert_int_equal(rc, 0);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == CANNOT_JOIN) {
    assert_int_equal(removed, 0);
    skip();
    return;
  }
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(removed, 0);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--in-group") == 0)
    return child_in_group(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_quota_reads_as_none, make_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(
          a_quota_counts_whole_processors_rounded_up, make_root, remove_root),
      cmocka_unit_test_setup_teardown(the_tightest_group_on_the_way_up_counts,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(
          a_container_sees_its_group_at_the_mount_top, make_root, remove_root),
      cmocka_unit_test_setup_teardown(an_escaped_mount_point_is_read, make_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(a_v1_quota_is_its_quota_over_its_period,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(with_both_hierarchies_the_tighter_counts,
                                      make_root, remove_root),
      cmocka_unit_test_setup_teardown(files_not_as_documented_read_as_no_quota,
                                      make_root, remove_root),
      cmocka_unit_test(a_real_quota_of_half_a_processor_gives_one_worker),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
