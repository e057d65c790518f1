/* file.c: files named by the user (matrices saved and loaded), as prim.h
 * declares: reads and writes at offsets that finish what they start, and
 * a file replaced whole or not at all (written under a temporary name
 * beside it, flushed, then renamed over it). Keeps no state; every errno
 * becomes a tarn status here and nowhere else. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prim/prim.h"
#include "tarn/status.h"

int tarn__status_of_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:
      return TARN_ENOENT;
    case EACCES:
    case EPERM:
    case EROFS:
      return TARN_EACCES;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return TARN_ENOSPC;
    case ENOMEM:
      return TARN_ENOMEM;
    case EMFILE:
    case ENFILE:
      return TARN_EBUSY;
    case EISDIR:
    case EINVAL:
      return TARN_EINVAL;
    default:
      return TARN_EIO;
  }
}

int tarn__file_open_read(const char *path, int *fd, uint64_t *size) {
  /* O_NONBLOCK: a FIFO's open would wait for a writer; a regular file
   * ignores it. */
  int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f < 0) return tarn__status_of_errno(errno);
  struct stat st;
  if (fstat(f, &st) != 0) {
    int err = errno;
    close(f);
    return tarn__status_of_errno(err);
  }
  if (!S_ISREG(
          st.st_mode)) { /* a directory, a pipe: nothing to read at offsets */
    close(f);
    return TARN_EINVAL;
  }
  *fd = f;
  *size = (uint64_t)st.st_size;
  return 0;
}

int tarn__file_stamp_get(int fd, tarn__file_stamp *stamp) {
  struct stat st;
  if (fstat(fd, &st) != 0) return tarn__status_of_errno(errno);
  stamp->size = (uint64_t)st.st_size;
  stamp->mtime_ns =
      (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
  return 0;
}

void tarn__file_close(int fd) {
  if (fd >= 0) close(fd);
}

/* Moves `n` bytes past the start of iov[0..*count), dropping the buffers
 * done; returns the new start. */
static struct iovec *advance(struct iovec *iov, size_t *count, size_t n) {
  while (*count > 0 && n >= iov->iov_len) {
    n -= iov->iov_len;
    iov++;
    (*count)--;
  }
  if (*count > 0) {
    iov->iov_base = (char *)iov->iov_base + n;
    iov->iov_len -= n;
  }
  return iov;
}

/* One call takes at most this many buffers (Linux's IOV_MAX). */
#define IOV_CHUNK 1024

/* Reads (or writes) the bytes of iov[0..count) from (to) the file at
 * `offset`, again after a signal or a short transfer, until done or, for
 * a read, the end of the file: returns 0 and the bytes moved in *done, or
 * a status (a write that makes no progress: TARN_ENOSPC). */
static int transfer(int fd, struct iovec *iov, size_t count, uint64_t offset,
                    bool write, size_t *done) {
  *done = 0;
  while (count > 0) {
    if (iov->iov_len == 0) {
      iov = advance(iov, &count, 0);
      continue;
    }
    int n = count < IOV_CHUNK ? (int)count : IOV_CHUNK;
    off_t at = (off_t)(offset + *done);
    ssize_t r = write ? pwritev(fd, iov, n, at) : preadv(fd, iov, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return tarn__status_of_errno(errno);
    if (r == 0) return write ? TARN_ENOSPC : 0; /* a read: the file's end */
    *done += (size_t)r;
    iov = advance(iov, &count, (size_t)r);
  }
  return 0;
}

int tarn__file_read_at(int fd, void *buf, size_t len, uint64_t offset,
                       size_t *got) {
  struct iovec iov = {buf, len};
  return transfer(fd, &iov, 1, offset, false, got);
}

int tarn__file_write_at(int fd, const void *buf, size_t len, uint64_t offset) {
  struct iovec iov = {(void *)buf, len}; /* pwritev only reads it */
  size_t done;
  return transfer(fd, &iov, 1, offset, true, &done);
}

int tarn__file_readv_at(int fd, struct iovec *iov, size_t count,
                        uint64_t offset, size_t *got) {
  return transfer(fd, iov, count, offset, false, got);
}

int tarn__file_writev_at(int fd, struct iovec *iov, size_t count,
                         uint64_t offset) {
  size_t done;
  return transfer(fd, iov, count, offset, true, &done);
}

void tarn__file_start_writeback(int fd, uint64_t offset, uint64_t len) {
#ifdef SYNC_FILE_RANGE_WRITE
  (void)sync_file_range(fd, (off_t)offset, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
  (void)offset;
  (void)len;
#endif
}

int tarn__path_absolute(const char *path, char **out) {
  char cwd[PATH_MAX] = "";
  size_t len = strlen(path);
  /* Kept as given where the working directory cannot be named (gone, or
   * longer than PATH_MAX) or the absolute name leaves no room for a
   * temporary's suffix (tarn__file_replace, 23 bytes): a relative name
   * that opens should not fail for its directory's length. */
  if (path[0] != '/' && (getcwd(cwd, sizeof cwd) == NULL ||
                         strlen(cwd) + 1 + len + 23 > sizeof cwd))
    cwd[0] = '\0';
  size_t head = strlen(cwd);
  char *abs = malloc(head + 1 + len + 1);
  if (abs == NULL) return TARN_ENOMEM;
  memcpy(abs, cwd, head);
  if (head > 0 && cwd[head - 1] != '/') abs[head++] = '/';
  memcpy(abs + head, path, len + 1);
  *out = abs;
  return 0;
}

/* A name for the temporary file: `path`, a dot, "tarn-" and 16 random
 * hexadecimal digits. Returns 0, TARN_ENOENT when it would be too long. */
static int temporary_name(const char *path, char *out, size_t size) {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
    r = ((uint64_t)getpid() << 32) ^ tarn__clock_ns(); /* O_EXCL decides */
  int n = snprintf(out, size, "%s.tarn-%016llx", path, (unsigned long long)r);
  return n > 0 && (size_t)n < size ? 0 : TARN_ENOENT;
}

/* Whether `path` names a directory: its last component is empty (a
 * trailing '/'), "." or "..", or it is one now (a symbolic link is not
 * followed: the rename replaces a link, whatever it points to). Such a path is
 * refused before anything is written: the rename would fail only after the
 * whole file, and not always as EISDIR (EBUSY for
 * "." and "..", ENOTDIR for "dir/"). */
static bool names_directory(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *last = slash != NULL ? slash + 1 : path;
  if (strcmp(last, "") == 0 || strcmp(last, ".") == 0 ||
      strcmp(last, "..") == 0)
    return true;
  struct stat st;
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The status of a failed rename over the caller's path: as any errno,
 * but EBUSY (the path is a mount point or in use as a directory) is a
 * path that cannot be replaced, TARN_EINVAL, not a failing disk. */
static int rename_status(int err) {
  return err == EBUSY ? TARN_EINVAL : tarn__status_of_errno(err);
}

int tarn__file_replace_begin(const char *path, tarn__file_replace *r) {
  r->fd = -1;
  r->path = path;
  if (names_directory(path)) return TARN_EINVAL;
  for (int attempt = 0; attempt < 16; attempt++) {
    int rc = temporary_name(path, r->temp, sizeof r->temp);
    if (rc != 0) return rc;
    /* 0666 less the umask, as any program's new file. */
    r->fd = open(r->temp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (r->fd >= 0) return 0;
    if (errno != EEXIST) return tarn__status_of_errno(errno);
  }
  return TARN_EIO; /* sixteen random names all taken: something is wrong */
}

int tarn__file_reserve(int fd, uint64_t bytes) {
  if (fallocate(fd, 0, 0, (off_t)bytes) == 0) return 0;
  if (errno != EOPNOTSUPP && errno != ENOSYS)
    return tarn__status_of_errno(errno);
  /* A file system without fallocate: set the size, claim space on write. */
  return ftruncate(fd, (off_t)bytes) == 0 ? 0 : tarn__status_of_errno(errno);
}

/* Flushes the directory that holds `path`, so that a rename in it is on
 * the disk. Called only after the rename: whatever fails here (the
 * directory's open too: no descriptor left, a directory that may be
 * written but not read) is TARN_EIO, the one status that tells the caller
 * the new file is in place; a TARN_EBUSY or TARN_EACCES would say nothing
 * happened. Returns 0 or TARN_EIO. */
static int sync_directory(const char *path) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (slash == NULL) {
    strcpy(dir, ".");
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof dir) return TARN_EIO;
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return TARN_EIO;
  int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : TARN_EIO;
  close(fd);
  return rc;
}

int tarn__file_replace_commit(tarn__file_replace *r) {
  int rc = 0;
  if (fdatasync(r->fd) != 0) rc = tarn__status_of_errno(errno);
  if (close(r->fd) != 0 && rc == 0) rc = tarn__status_of_errno(errno);
  r->fd = -1;
  if (rc == 0 && rename(r->temp, r->path) != 0) rc = rename_status(errno);
  if (rc != 0) {
    unlink(r->temp);
    return rc;
  }
  return sync_directory(r->path);
}

int tarn__file_replace_publish(tarn__file_replace *r) {
  if (fdatasync(r->fd) != 0) return tarn__status_of_errno(errno);
  if (rename(r->temp, r->path) != 0) return rename_status(errno);
  r->temp[0] = '\0';
  return sync_directory(r->path);
}

void tarn__file_replace_unlink(tarn__file_replace *r) {
  if (r->temp[0] != '\0') unlink(r->temp);
  r->temp[0] = '\0';
}

void tarn__file_replace_abort(tarn__file_replace *r) {
  if (r->fd >= 0) close(r->fd);
  r->fd = -1;
  tarn__file_replace_unlink(r);
}
