/*
 * gleam-reduce bench -g: the workers' gradients in GPU memory, HOMO's
 * codec on the GPU (hreduce_cuda.h).  Linked instead of nogpu.c by
 * bench/reduce-cuda-build, which builds that gleam-reduce.
 */
#include <cuda_runtime.h>

#include <stddef.h>

extern "C" {
#include "hreduce.h"
#include "bench.h"
}
#include "hreduce_cuda.h"

static cudaError_t last;

static int
g_alloc(float **p, size_t n)
{
	*p = NULL;
	last = cudaMalloc((void **)p, n * sizeof **p + 4);
	return last == cudaSuccess ? 0 : last == cudaErrorMemoryAllocation ?
	    HR_ENOMEM : HR_EINVAL;
}

static void
g_release(float *p)
{
	cudaFree(p);
}

static int
g_put(float *dev, const float *host, size_t n)
{
	last = cudaMemcpy(dev, host, n * sizeof *host, cudaMemcpyHostToDevice);
	return last == cudaSuccess ? 0 : HR_EINVAL;
}

static int
g_get(float *host, const float *dev, size_t n)
{
	last = cudaMemcpy(host, dev, n * sizeof *host, cudaMemcpyDeviceToHost);
	return last == cudaSuccess ? 0 : HR_EINVAL;
}

static int
g_many(struct hr_ctx *x, float *const *grads, const size_t *ns, size_t count)
{
	return hr_allreduce_many_cuda(x, grads, ns, count, NULL, NULL);
}

static const char *
g_error(void)
{
	return cudaGetErrorString(last);
}

static const struct bench_gpu gpu = {
	g_alloc, g_release, g_put, g_get, g_many, g_error
};

extern "C" const struct bench_gpu *const bench_gpu = &gpu;
