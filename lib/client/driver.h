/*
 * The CUDA driver API as the client library defines it: every exported
 * name declared at its own ABI, with default visibility.
 */
#ifndef GLEAM_CLIENT_DRIVER_H
#define GLEAM_CLIENT_DRIVER_H

/*
 * cuda.h maps each name to its newest ABI (#define cuMemAlloc
 * cuMemAlloc_v2).  Built the way the driver itself is, with
 * __CUDA_API_VERSION_INTERNAL, it undoes that mapping and declares every
 * exported symbol under its own name: the unsuffixed legacy ABIs, the _v2,
 * _v3 ... and the _ptds/_ptsz per-thread variants.
 * __CUDA_API_PUSH_VISIBILITY_DEFAULT exports them through
 * -fvisibility=hidden.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT 1
#include <cuda.h>
#include <cudaProfiler.h>

#include "interop.h"
#include "entry-points.h"

/* What cuDriverGetVersion reports; the integrity check hashes it too. */
#define CLIENT_DRIVER_VERSION	13000

#endif
