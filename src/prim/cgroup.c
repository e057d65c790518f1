/* cgroup.c: the limits the calling process's control groups set on it
 * (tarn__cpu_quota and tarn__memory_limit in prim.h).
 *
 * A container given "2 CPUs" (docker --cpus, a Kubernetes CPU limit)
 * usually still lets its threads run on every processor of the host: only
 * the kernel's bandwidth control, a quota of CPU time per period, stops
 * it. So the processors a thread may run on over-count what it gets, and
 * one worker per processor would be throttled. A container given 4 GiB is
 * killed when it uses more, however much the host has. Both limits are
 * read the way the kernel documents them (Documentation/admin-guide/
 * cgroup-v2.rst: cpu.max, memory.max, memory.high; cgroup-v1: CFS
 * bandwidth's cpu.cfs_quota_us and cpu.cfs_period_us, the memory
 * controller's memory.limit_in_bytes):
 *
 * 1. /proc/self/cgroup: the process's group in the unified hierarchy (the
 *    line "0::PATH") and in the v1 hierarchy that has the controller (a
 *    line "N:...,cpu,...:PATH", or memory);
 * 2. /proc/self/mountinfo: where each of those hierarchies is mounted (a
 *    cgroup2 file system; a cgroup one whose options name the
 *    controller), and which of its groups the mount shows at its top (a
 *    container without its own cgroup namespace sees its group mounted as
 *    the top);
 * 3. the limit files of the group and of every group above it up to the
 *    mount's top: the tightest limit among them, in either hierarchy.
 *
 * Nothing here keeps state; every file is read afresh. Any file that is
 * missing or not as documented counts as no limit.
 *
 * A runtime reads these as it starts (tarn_rt_options_init), so they are
 * read with open and read into small buffers, not with stdio, getline or
 * zeroed path buffers: in a fresh process each first touch of a page is a
 * fault (about 12 us each on the virtual machine tarn is measured on),
 * and the quota took 0.4 to 0.8 ms with 18 faults that way, where the four
 * files themselves take 0.2 to 0.3 ms to read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prim/prim.h"

/* A limit, amount / per: microseconds of CPU time per period, or bytes per
 * 1 (per 0: none). */
struct limit {
  uint64_t amount, per;
};

/* Whether `a` allows less than `b` (b may be none). */
static bool tighter(struct limit a, struct limit b) {
  if (a.per == 0) return false;
  if (b.per == 0) return true;
  return (double)a.amount / (double)a.per < (double)b.amount / (double)b.per;
}

/* `text` as a positive decimal number, trailing white space allowed. */
static bool parse_count(const char *text, uint64_t *out) {
  if (*text < '0' || *text > '9') return false;
  char *end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  while (*end == ' ' || *end == '\n' || *end == '\t') end++;
  if (*end != '\0' || v == 0 || v == ULLONG_MAX) return false;
  *out = v;
  return true;
}

/* Files larger than this (a mountinfo of a host with a great many mounts
 * stays far below) are not read. */
#define FILE_MAX ((size_t)64 << 20)

/* The whole of file `path`, NUL-terminated, in a buffer the caller frees;
 * NULL when it cannot be opened or read, is larger than FILE_MAX, or
 * memory runs out. /proc files tell no size, so the buffer grows. */
static char *read_whole(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf != NULL) {
    if (len + 1 == cap) {
      char *bigger = cap < FILE_MAX ? realloc(buf, 2 * cap) : NULL;
      if (bigger == NULL) break;
      buf = bigger;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (n == 0) {
      buf[len] = '\0';
      close(fd);
      return buf;
    }
    len += (size_t)n;
  }
  free(buf);
  close(fd);
  return NULL;
}

/* The first line of file `path` into buf (without its newline; what does
 * not fit is cut); false when the file is empty or cannot be read. */
static bool read_line(const char *path, char *buf, size_t size) {
  char *text = read_whole(path);
  bool ok = text != NULL && text[0] != '\0';
  if (ok) {
    size_t len = strcspn(text, "\n");
    if (len >= size) len = size - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
  }
  free(text);
  return ok;
}

/* The next line of the text at *rest, NUL-terminated in place (its
 * newline replaced); *rest moves past it. NULL at the end. */
static char *next_line(char **rest) {
  char *line = *rest;
  if (*line == '\0') return NULL;
  char *end = line + strcspn(line, "\n");
  *rest = *end == '\n' ? end + 1 : end;
  *end = '\0';
  return line;
}

/* The number in the first line of the file `name` of directory `dir`. */
static bool read_count(const char *dir, const char *name, uint64_t *out) {
  char path[PATH_MAX], line[128];
  return snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
         read_line(path, line, sizeof line) && parse_count(line, out);
}

/* The CPU quota set in group directory `dir`: cpu.max ("QUOTA PERIOD", or
 * "max PERIOD" for none; the line starts with them) in v2,
 * cpu.cfs_quota_us (-1 for none) and cpu.cfs_period_us in v1. */
static struct limit cpu_in(const char *dir, bool v2) {
  struct limit none = {0, 0}, q = {0, 0};
  if (!v2)
    return read_count(dir, "cpu.cfs_quota_us", &q.amount) &&
                   read_count(dir, "cpu.cfs_period_us", &q.per)
               ? q
               : none;
  char path[PATH_MAX], line[128];
  if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path ||
      !read_line(path, line, sizeof line))
    return none;
  /* Fields after the period, if a kernel ever adds some, are left. */
  char *save = NULL, *quota = strtok_r(line, " ", &save);
  char *period = strtok_r(NULL, " ", &save);
  if (quota == NULL || period == NULL || !parse_count(quota, &q.amount) ||
      !parse_count(period, &q.per))
    return none;
  return q;
}

/* Byte counts from here up mean no limit: v1's memory.limit_in_bytes
 * reads 0x7ffffffffffff000 (with 4 KiB pages) when none is set. */
#define NO_MEMORY_LIMIT ((uint64_t)1 << 62)

/* The memory limit set in group directory `dir`, in bytes: the tighter of
 * memory.max and memory.high ("max" for none) in v2, memory.limit_in_bytes
 * in v1. */
static struct limit memory_in(const char *dir, bool v2) {
  struct limit best = {0, 0}, q = {0, 1};
  static const char *const v2_files[] = {"memory.max", "memory.high"};
  static const char *const v1_files[] = {"memory.limit_in_bytes"};
  const char *const *files = v2 ? v2_files : v1_files;
  for (int i = 0; i < (v2 ? 2 : 1); i++)
    if (read_count(dir, files[i], &q.amount) && q.amount < NO_MEMORY_LIMIT &&
        tighter(q, best))
      best = q;
  return best;
}

/* What a controller's limits are read with: its v1 name and its files. */
struct controller {
  const char *v1_name;
  struct limit (*limit_in)(const char *dir, bool v2);
};

static const struct controller cpu_controller = {"cpu", cpu_in};
static const struct controller memory_controller = {"memory", memory_in};

/* Whether the comma-separated `list` has the element `name`. */
static bool list_has(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len;
    if (*p == ',') p++;
  }
  return false;
}

/* The process's group paths from /proc/self/cgroup: the unified one
 * (v2, "0::PATH") and the v1 one with the controller. */
struct groups {
  char v2[PATH_MAX], v1[PATH_MAX];
  bool has_v2, has_v1;
};

static bool read_groups(const char *root, const char *v1_name,
                        struct groups *g) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/proc/self/cgroup", root) >=
      (int)sizeof path)
    return false;
  char *text = read_whole(path);
  if (text == NULL) return false;
  char *rest = text, *line;
  while ((line = next_line(&rest)) != NULL) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL || c2[1] != '/' || strlen(c2 + 1) >= PATH_MAX) continue;
    *c1 = *c2 = '\0';
    if (strcmp(line, "0") == 0 && c1[1] == '\0') {
      strcpy(g->v2, c2 + 1);
      g->has_v2 = true;
    } else if (list_has(c1 + 1, v1_name)) {
      strcpy(g->v1, c2 + 1);
      g->has_v1 = true;
    }
  }
  free(text);
  return g->has_v1 || g->has_v2;
}

/* Undoes mountinfo's octal escapes (\040 for a space, ...) in place. */
static void unescape(char *s) {
  char *out = s;
  for (char *p = s; *p != '\0'; p++) {
    if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
        p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
      *out++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
      p += 3;
    } else {
      *out++ = *p;
    }
  }
  *out = '\0';
}

/* Whether `path` has a component that is exactly "..": a group outside
 * the process's cgroup namespace. A group's own name may start with two
 * dots ("/jobs/..hidden"). */
static bool climbs(const char *path) {
  for (const char *c = strstr(path, "/.."); c != NULL; c = strstr(c + 1, "/.."))
    if (c[3] == '/' || c[3] == '\0') return true;
  return false;
}

/* What of group `group` lies below group `top` (a mount's top): "" for
 * `top` itself, else a path beginning with '/'. NULL when `group` is not
 * below `top` (a process outside its cgroup namespace sees its group as
 * "/../..."). */
static const char *below_top(const char *top, const char *group) {
  if (climbs(group)) return NULL;
  size_t n = strcmp(top, "/") == 0 ? 0 : strlen(top);
  if (strncmp(group, top, n) != 0 || (group[n] != '/' && group[n] != '\0'))
    return NULL;
  const char *below = group + n;
  return strcmp(below, "/") == 0 ? "" : below;
}

/* Which hierarchy's directory a mount may give, and the best one so far:
 * the mount showing the most groups above the process's (the shortest
 * `shown`, the length of the part of the group path at the mount's top).
 * A bind mount of a subtree may come first in mountinfo; the full mount
 * after it shows the groups above, whose limits count too. */
struct group_dir {
  const char *group; /* the process's group in the hierarchy */
  char *dir;         /* out: the group's directory, "" for none */
  size_t *top_len;   /* out: the length of dir's mount point part */
  size_t shown;      /* SIZE_MAX while dir is "" */
};

/* Takes the mount of top group `top` at `mount_point` for `d` when it
 * shows the process's group with more groups above than the best so far. */
static void consider_mount(const char *root, const char *mount_point,
                           const char *top, struct group_dir *d) {
  const char *below = below_top(top, d->group);
  if (below == NULL) return;
  size_t shown = strlen(d->group) - strlen(below);
  size_t prefix = strlen(root) + strlen(mount_point);
  if (shown >= d->shown || prefix + strlen(below) >= PATH_MAX) return;
  snprintf(d->dir, PATH_MAX, "%s%s%s", root, mount_point, below);
  *d->top_len = prefix;
  d->shown = shown;
}

/* Finds the group directories of `g` from /proc/self/mountinfo: fields
 * 4 (the group at the mount's top) and 5 (the mount point), then after
 * the " - " separator the file system type and its options. */
static void find_dirs(const char *root, const char *v1_name,
                      const struct groups *g, char *v2_dir, char *v1_dir,
                      size_t *v2_top_len, size_t *v1_top_len) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/proc/self/mountinfo", root) >=
      (int)sizeof path)
    return;
  char *text = read_whole(path);
  if (text == NULL) return;
  struct group_dir v2 = {g->v2, v2_dir, v2_top_len, SIZE_MAX};
  struct group_dir v1 = {g->v1, v1_dir, v1_top_len, SIZE_MAX};
  char *rest = text, *line;
  while ((line = next_line(&rest)) != NULL) {
    char *sep = strstr(line, " - ");
    if (sep == NULL) continue;
    *sep = '\0';
    char *fields[5], *save = NULL, *tok = strtok_r(line, " ", &save);
    int nf = 0;
    for (; tok != NULL && nf < 5; tok = strtok_r(NULL, " ", &save))
      fields[nf++] = tok;
    char *fstype = strtok_r(sep + 3, " ", &save);
    (void)strtok_r(NULL, " ", &save); /* the source */
    char *options = strtok_r(NULL, " ", &save);
    if (nf < 5 || fstype == NULL) continue;
    unescape(fields[3]);
    unescape(fields[4]);
    if (strcmp(fstype, "cgroup2") == 0 && g->has_v2)
      consider_mount(root, fields[4], fields[3], &v2);
    else if (strcmp(fstype, "cgroup") == 0 && options != NULL &&
             list_has(options, v1_name) && g->has_v1)
      consider_mount(root, fields[4], fields[3], &v1);
  }
  free(text);
}

/* The tightest limit in directory `dir` and its parents, down to its first
 * `top_len` characters (the mount point). */
static struct limit limit_up(const struct controller *c, char *dir,
                             size_t top_len, bool v2) {
  struct limit best = {0, 0};
  for (int depth = 0; depth < 256; depth++) {
    struct limit q = c->limit_in(dir, v2);
    if (tighter(q, best)) best = q;
    size_t len = strlen(dir);
    if (len <= top_len) break;
    char *slash = strrchr(dir, '/');
    if (slash == NULL || (size_t)(slash - dir) < top_len) break;
    *slash = '\0';
  }
  return best;
}

/* The tightest limit of controller `c` on the process (per 0: none). */
static struct limit tightest(const char *root, const struct controller *c) {
  struct limit best = {0, 0};
  if (root == NULL) root = "";
  /* Not calloc: zeroing 16 KiB would touch four pages that the paths,
   * tens of bytes, leave alone. */
  struct groups *g = malloc(sizeof *g);
  char *dirs = malloc(2 * (size_t)PATH_MAX);
  if (g != NULL) g->has_v1 = g->has_v2 = false;
  if (g != NULL && dirs != NULL && read_groups(root, c->v1_name, g)) {
    char *v2_dir = dirs, *v1_dir = dirs + PATH_MAX;
    v2_dir[0] = v1_dir[0] = '\0';
    size_t v2_top = 0, v1_top = 0;
    find_dirs(root, c->v1_name, g, v2_dir, v1_dir, &v2_top, &v1_top);
    if (v2_dir[0] != '\0') best = limit_up(c, v2_dir, v2_top, true);
    if (v1_dir[0] != '\0') {
      struct limit q = limit_up(c, v1_dir, v1_top, false);
      if (tighter(q, best)) best = q;
    }
  }
  free(dirs);
  free(g);
  return best;
}

unsigned tarn__cpu_quota(const char *root) {
  struct limit q = tightest(root, &cpu_controller);
  if (q.per == 0) return 0;
  uint64_t whole = q.amount / q.per + (q.amount % q.per != 0 ? 1 : 0);
  return whole > UINT_MAX ? UINT_MAX : (unsigned)whole;
}

size_t tarn__memory_limit(const char *root) {
  struct limit q = tightest(root, &memory_controller);
  return q.per == 0 ? 0 : q.amount > SIZE_MAX ? SIZE_MAX : (size_t)q.amount;
}
