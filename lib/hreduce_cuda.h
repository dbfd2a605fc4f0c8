/*
 * hr_allreduce for a gradient in GPU memory: the codec's work on the GPU
 * (hcodec_cuda.h), only the compressed rounds cross PCIe and the network
 * (hr_reduce_raw of hreduce.h).  The sum is the one hr_allreduce gives,
 * bit for bit.  Every rank must call it for the same tensors in the same
 * order, and not mix it with hr_submit for one tensor.  On HR_ENONFINITE
 * and round failures grad is left as it was; if the merged sketch does
 * not decode (HR_ECODEC, a broken aggregator) grad is lost.  A rank that
 * fails on its own between the rounds (out of GPU memory) sends no ABORT:
 * the others fail at the aggregator's timeout.  Build with
 * nvcc and link the CUDA runtime; gleam-hreduce(3).
 */
#ifndef GLEAM_HREDUCE_CUDA_H
#define GLEAM_HREDUCE_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hr_ctx;

int	hr_allreduce_cuda(struct hr_ctx *, float *grad, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
