/* tarn.h: the whole public API of tarn, a C11 library for task-parallel work
 * on data whose memory has an explicit lifetime. Each section is a header of
 * its own under tarn/, one per layer (see docs/ and DESIGN.md). */
#ifndef TARN_H
#define TARN_H

#include "tarn/alloc.h"
#include "tarn/linalg.h"
#include "tarn/matrix.h"
#include "tarn/pool.h"
#include "tarn/rt.h"
#include "tarn/status.h"
#include "tarn/stencil.h"
#include "tarn/version.h"

#endif
