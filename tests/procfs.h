/* procfs.h: what /proc tells the tests about their own process (include
 * after <cmocka.h>): the spill file's size and the space it occupies. */
#ifndef TARN_TESTS_PROCFS_H
#define TARN_TESTS_PROCFS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* The size of the process's spill file and the bytes it occupies on disk
 * (st_blocks), found through /proc/self/fd as its one open, deleted file
 * with "tarn" in its path; -1 and -1 when there is none. */
static inline void test_spill_file_usage(off_t *size, off_t *used) {
  *size = *used = -1;
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char path[300], target[512];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    struct stat st;
    if (strstr(target, "tarn") == NULL || strstr(target, "(deleted)") == NULL ||
        stat(path, &st) != 0)
      continue;
    *size = st.st_size;
    *used = (off_t)st.st_blocks * 512;
  }
  closedir(d);
}

#endif
