/*
 * hreduce for gradients in GPU memory: the codec's work on the GPU
 * (hcodec_cuda.h), only the bitmap and the sketch crossing PCIe, through
 * the context's window like hr_submit's tensors, so that successive
 * tensors pipeline (round 1 of one while round 2 of another is at the
 * aggregator) and a group may mix ranks that reduce from host memory with
 * ranks that reduce from the GPU.  The sum is hr_allreduce's, bit for
 * bit.  HR_SCHEME_HOMO only (HR_EINVAL otherwise).
 *
 *	hr_submit_cuda(ctx, grad, n, stream)	a ticket for hr_wait
 *	hr_allreduce_cuda(ctx, grad, n, stream)	submit and wait
 *	hr_allreduce_many_cuda(...)		a list, the window kept full
 *
 * The codec's work is queued on stream (NULL: the default stream), after
 * whatever the caller queued there before (the kernels that made the
 * gradient); hr_wait returns once the decoded sum is in grad.  The
 * context does its GPU work on a thread of its own, on the GPU current
 * at its first hr_submit_cuda, while the caller's thread keeps the
 * socket going.  On
 * HR_ENONFINITE and round failures grad is left as it was; if the merged
 * sketch does not decode (HR_ECODEC, a broken aggregator) grad is lost.
 * A rank whose GPU fails (out of memory) aborts the round at every rank.
 * Build with nvcc and link the CUDA runtime; gleam-hreduce(3).
 */
#ifndef GLEAM_HREDUCE_CUDA_H
#define GLEAM_HREDUCE_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hr_ctx;

int	hr_submit_cuda(struct hr_ctx *, float *grad, size_t n, void *stream);
int	hr_allreduce_cuda(struct hr_ctx *, float *grad, size_t n, void *stream);
/* rcs (count of them, may be NULL) gets each tensor's result. */
int	hr_allreduce_many_cuda(struct hr_ctx *, float *const *grads,
	    const size_t *ns, size_t count, int *rcs, void *stream);

#ifdef __cplusplus
}
#endif

#endif
