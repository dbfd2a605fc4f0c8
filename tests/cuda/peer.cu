// peer: peer access and peer copies on one device (what a single-GPU
// server has): cudaDeviceCanAccessPeer of a device and itself, enabling
// and disabling peer access (their codes), cudaMemcpyPeer(Async) and
// cudaMemcpy3DPeer within device 0, a pitched allocation and the
// address range of a pointer inside it (cuMemGetAddressRange, -lcuda).
// Prints checksums, codes and offsets only, so that a local and a remote
// run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"peer"
#define N	(1 << 16)	/* bytes */
#define CK(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_FNV64)
#include "testutil.h"

static void
code(const char *what, int rc)
{
	printf("%-48s %d\n", what, rc);
	cudaGetLastError();
}

int
main(void)
{
	unsigned char *h, *back, *a, *b, *pd;
	cudaMemcpy3DPeerParms p3;
	cudaStream_t s;
	CUdeviceptr base;
	size_t pitch, size;
	int can = -1, i;

	h = (unsigned char *)malloc(N);
	back = (unsigned char *)malloc(N);
	for (i = 0; i < N; i++)
		h[i] = (unsigned char)(i * 7 + 3);
	CK(cudaFree(0));
	CK(cudaStreamCreate(&s));
	CK(cudaDeviceCanAccessPeer(&can, 0, 0));
	printf("device 0 can access itself as a peer: %d\n", can);
	code("enable peer access to device 0", cudaDeviceEnablePeerAccess(0,
	    0));
	code("disable peer access to device 0",
	    cudaDeviceDisablePeerAccess(0));

	CK(cudaMalloc((void **)&a, N));
	CK(cudaMalloc((void **)&b, N));
	CK(cudaMemcpy(a, h, N, cudaMemcpyHostToDevice));
	CK(cudaMemset(b, 0, N));
	CK(cudaMemcpyPeer(b, 0, a, 0, N / 2));
	CK(cudaMemcpyPeerAsync(b + N / 2, 0, a + 100, 0, N / 2 - 100, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(back, b, N, cudaMemcpyDeviceToHost));
	printf("peer copies: %016llx\n", (unsigned long long)fnv(back, N));

	// A 3D peer copy into a pitched allocation: 100 bytes by 64 rows.
	CK(cudaMallocPitch((void **)&pd, &pitch, 100, 64));
	printf("pitch >= 100: %d\n", pitch >= 100);
	CK(cudaMemset2D(pd, pitch, 0xee, 100, 64));
	memset(&p3, 0, sizeof p3);
	p3.srcPtr = make_cudaPitchedPtr(a, 128, 100, 64);
	p3.srcDevice = 0;
	p3.dstPtr = make_cudaPitchedPtr(pd, pitch, 100, 64);
	p3.dstDevice = 0;
	p3.extent = make_cudaExtent(90, 60, 1);
	CK(cudaMemcpy3DPeer(&p3));
	CK(cudaMemcpy2D(back, 100, pd, pitch, 100, 64,
	    cudaMemcpyDeviceToHost));
	printf("3D peer copy: %016llx\n", (unsigned long long)fnv(back,
	    100 * 64));
	code("cuMemGetAddressRange inside the pitched allocation",
	    cuMemGetAddressRange(&base, &size, (CUdeviceptr)(pd + pitch +
	    5)));
	printf("its base: +%lld size >= pitch * 64: %d\n",
	    (long long)((CUdeviceptr)pd - base), size >= pitch * 64);
	code("cuMemGetAddressRange of host memory",
	    cuMemGetAddressRange(&base, &size, (CUdeviceptr)h));

	CK(cudaFree(pd));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaStreamDestroy(s));
	free(h);
	free(back);
	printf(NAME ": ok\n");
	return 0;
}
