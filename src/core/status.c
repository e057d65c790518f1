/* status.c: the table of status codes and their descriptions, and the
 * version functions. The table is indexed by -status and covers every
 * TARN_E* code of tarn/status.h. */
#include <stddef.h>

#include "tarn/status.h"
#include "tarn/version.h"

static const struct {
  const char *name;
  const char *text;
} status_table[] = {
    {"TARN_OK", "success"},
    {"TARN_EINVAL", "invalid argument"},
    {"TARN_ENOMEM", "out of memory or address space"},
    {"TARN_EBUSY", "every resource is in use"},
    {"TARN_ENOSPC", "no space left"},
    {"TARN_EMISUSE", "misuse: the call breaks the API contract"},
    {"TARN_ESTALE",
     "stale: a token no longer refers to anything, or a file changed"},
    {"TARN_EIO", "input/output error or checksum mismatch"},
    {"TARN_ECANCELED", "cancelled because work it depends on failed"},
    {"TARN_ETIMEDOUT", "timed out"},
    {"TARN_EDEADLK", "the call would wait on itself"},
    {"TARN_ENOENT", "no such file or directory"},
    {"TARN_EACCES", "permission denied"},
    {"TARN_EFORMAT", "the file is not in the format expected"},
};

enum { status_count = sizeof status_table / sizeof status_table[0] };

const char *tarn_strerror(int status) {
  if (status > 0 || status <= -status_count) return "unknown tarn status";
  return status_table[-status].text;
}

const char *tarn_status_name(int status) {
  if (status > 0 || status <= -status_count) return NULL;
  return status_table[-status].name;
}

const char *tarn_version(void) { return TARN_VERSION_STRING; }

int tarn_version_number(void) { return TARN_VERSION; }
