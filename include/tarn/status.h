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
  TARN_EINVAL = -1, /* an argument is out of range or names a foreign object */
  TARN_ENOMEM = -2, /* memory or address space could not be had */
  TARN_EBUSY = -3,  /* every resource of the kind asked for is in use */
  TARN_ENOSPC = -4, /* a fixed-size region (a slab, a disk) is full */
  TARN_ESTATE = -5, /* the object is not in a state that allows the call */
  TARN_ESTALE =
      -6,        /* a token (a mark, a handle) no longer refers to anything */
  TARN_EIO = -7, /* the operating system reported an I/O error */
  TARN_ECORRUPT = -8, /* data read back failed its checksum */
  TARN_ECANCELED =
      -9, /* the work was cancelled because work it needed failed */
  TARN_ETIMEDOUT = -10, /* a wait ran past the time the caller gave */
  TARN_EDEADLK = -11    /* the call would wait on itself */
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
