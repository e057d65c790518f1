/* tarn/export.h: TARN_API marks the functions the shared library exports;
 * everything else in libtarn is hidden. */
#ifndef TARN_EXPORT_H
#define TARN_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TARN_API __attribute__((visibility("default")))
#else
#define TARN_API
#endif

/* Casts and the null pointer in the headers' macros and inline code, as
 * each language writes them (C++ code built with -Wold-style-cast or
 * -Wzero-as-null-pointer-constant sees no warning from tarn's headers). */
#ifdef __cplusplus
#define TARN__REINTERPRET(type, x) reinterpret_cast<type>(x)
#define TARN__CONVERT(type, x) static_cast<type>(x)
#define TARN__NULL nullptr
#else
#define TARN__REINTERPRET(type, x) ((type)(x))
#define TARN__CONVERT(type, x) ((type)(x))
#define TARN__NULL NULL
#endif

#endif
