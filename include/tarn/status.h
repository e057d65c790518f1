/* tarn/status.h: the status codes every fallible tarn function returns.
 * 0 is success; every failure is one of the negative TARN_E* codes below,
 * never an errno value, so a caller can switch on them portably. */
#ifndef TARN_STATUS_H
#define TARN_STATUS_H

#include "tarn/export.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TARN_OK = 0,
  /* An argument is out of range, or names another object's token. */
  TARN_EINVAL = -1,
  /* Memory or address space could not be had. */
  TARN_ENOMEM = -2,
  /* Every resource of the kind asked for is in use. */
  TARN_EBUSY = -3,
  /* A fixed-size region (a slab, a disk) is full. */
  TARN_ENOSPC = -4,
  /* The call breaks the API's contract: released twice, unpin without pin. */
  TARN_EMISUSE = -5,
  /* A token (a mark, a handle) no longer refers to anything, or a file
   * changed in place after it was opened (tarn_matrix_open_file). */
  TARN_ESTALE = -6,
  /* Storage failed: an I/O error, or data read back failed its checksum. */
  TARN_EIO = -7,
  /* The work was cancelled because work it needed failed. */
  TARN_ECANCELED = -8,
  /* A wait ran past the time the caller gave. */
  TARN_ETIMEDOUT = -9,
  /* The call would wait on itself. */
  TARN_EDEADLK = -10,
  /* A file or directory named does not exist. */
  TARN_ENOENT = -11,
  /* A file or directory named may not be read or written. */
  TARN_EACCES = -12,
  /* A file is not in the format the call reads. */
  TARN_EFORMAT = -13
};

/* A short English description of `status` ("success" for 0, a description
 * for each TARN_E* code, "unknown tarn status" for anything else). The
 * string is static; the caller owns nothing. Thread-safe. */
TARN_API const char *tarn_strerror(int status);

/* The constant's name ("TARN_EINVAL"), "TARN_OK" for 0, NULL for an unknown
 * status. Static string. Thread-safe. */
TARN_API const char *tarn_status_name(int status);

#ifdef __cplusplus
}
#endif

#endif
