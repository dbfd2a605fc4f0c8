// NPP through tabletrace: a signal add (nppsAdd_32f_Ctx).
#include <cuda_runtime.h>
#include <npp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "npp: %s: %d\n", #x, e_); exit(1); } } while (0)

int
main(void)
{
	const int n = 4096;
	float *h = (float *)malloc(sizeof *h * n), *d1, *d2, *d3;
	NppStreamContext c;
	int dev, i;

	memset(&c, 0, sizeof c);
	CK(cudaGetDevice(&dev));
	c.hStream = 0;
	c.nCudaDeviceId = dev;
	CK(cudaDeviceGetAttribute(&c.nMultiProcessorCount,
	    cudaDevAttrMultiProcessorCount, dev));
	CK(cudaDeviceGetAttribute(&c.nMaxThreadsPerMultiProcessor,
	    cudaDevAttrMaxThreadsPerMultiProcessor, dev));
	CK(cudaDeviceGetAttribute(&c.nMaxThreadsPerBlock,
	    cudaDevAttrMaxThreadsPerBlock, dev));
	CK(cudaDeviceGetAttribute(&i, cudaDevAttrMaxSharedMemoryPerBlock, dev));
	c.nSharedMemPerBlock = (size_t)i;
	CK(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMajor,
	    cudaDevAttrComputeCapabilityMajor, dev));
	CK(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMinor,
	    cudaDevAttrComputeCapabilityMinor, dev));
	for (i = 0; i < n; i++)
		h[i] = (float)i;
	CK(cudaMalloc(&d1, sizeof *h * n));
	CK(cudaMalloc(&d2, sizeof *h * n));
	CK(cudaMalloc(&d3, sizeof *h * n));
	CK(cudaMemcpy(d1, h, sizeof *h * n, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d2, h, sizeof *h * n, cudaMemcpyHostToDevice));
	CK(nppsAdd_32f_Ctx(d1, d2, d3, n, c));
	CK(cudaMemcpy(h, d3, sizeof *h * n, cudaMemcpyDeviceToHost));
	for (i = 0; i < n; i++)
		if (h[i] != 2.0f * i) {
			fprintf(stderr, "npp: h[%d] = %g\n", i, h[i]);
			return 1;
		}
	printf("npp: add ok\n");
	return 0;
}
