/* tarn/version.h: the library's version, as macros for the headers a program
 * was compiled against and as a function for the library it runs with. */
#ifndef TARN_VERSION_H
#define TARN_VERSION_H

#define TARN_VERSION_MAJOR 0
#define TARN_VERSION_MINOR 1
#define TARN_VERSION_PATCH 0

/* One integer that orders versions: major * 10000 + minor * 100 + patch. */
#define TARN_VERSION \
  (TARN_VERSION_MAJOR * 10000 + TARN_VERSION_MINOR * 100 + TARN_VERSION_PATCH)

#define TARN__STR2(x) #x
#define TARN__STR(x) TARN__STR2(x)
/* "major.minor.patch" */
#define TARN_VERSION_STRING     \
  TARN__STR(TARN_VERSION_MAJOR) \
  "." TARN__STR(TARN_VERSION_MINOR) "." TARN__STR(TARN_VERSION_PATCH)

#include "tarn/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version string of the library linked at run time, "major.minor.patch".
 * The string is static; the caller owns nothing. Thread-safe. */
TARN_API const char *tarn_version(void);

/* TARN_VERSION of the library linked at run time. Thread-safe. */
TARN_API int tarn_version_number(void);

#ifdef __cplusplus
}
#endif

#endif
