/* tarn/export.h: TARN_API marks the functions the shared library exports;
 * everything else in libtarn is hidden. */
#ifndef TARN_EXPORT_H
#define TARN_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TARN_API __attribute__((visibility("default")))
#else
#define TARN_API
#endif

#endif
