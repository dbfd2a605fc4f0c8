// mapped: host memory mapped for the device (cudaHostAllocMapped), which
// kernels write in place and the host reads after a synchronize, and the
// other way round (cuDNN keeps a status word so).  Prints only what does
// not depend on where it runs, so that local and remote runs compare.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"mapped"
#define N	4096
#define CK(x)	check((x), #x, __LINE__)

static void
check(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	printf(NAME ": %s (line %d): %s\n", what, line, cudaGetErrorName(e));
	exit(2);
}

#define TESTUTIL	(TU_SET_U32)
#include "testutil.h"

static int nfail;

// XLA's timer: a kernel that holds its stream until the host writes want
// into page-locked memory it was given by its host pointer, or until
// cycles pass; it says which in *out (1 released, 3 timed out).
__global__ void
spin_u32(volatile unsigned *flag, unsigned want, long long cycles,
    unsigned *out)
{
	long long t0 = clock64();

	while (*flag != want && clock64() - t0 < cycles)
		;
	*out = *flag == want ? 1 : 3;
}

static void
expect(const char *what, const unsigned *p, unsigned v)
{
	int i, bad = 0;

	for (i = 0; i < N; i++)
		if (p[i] != (v ^ (unsigned)i))
			bad++;
	printf("%-44s %s\n", what, bad ? "WRONG" : "ok");
	if (bad)
		nfail++;
}

int
main(void)
{
	unsigned *h, *d, *other, *back, *in;
	int i;

	back = (unsigned *)malloc(N * sizeof *back);
	CK(cudaHostAlloc((void **)&h, N * sizeof *h, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&d, h, 0));
	CK(cudaMalloc((void **)&other, N * sizeof *other));
	CK(cudaMalloc((void **)&in, N * sizeof *in));

	set_u32<<<N / 256, 256>>>(d, 7, N);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	expect("a kernel's writes, read by the host", h, 7);

	for (i = 0; i < N; i++)
		h[i] = 11u ^ (unsigned)i;
	CK(cudaMemcpy(other, d, N * sizeof *d, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(back, other, N * sizeof *back, cudaMemcpyDeviceToHost));
	expect("the host's writes, read by the device", back, 11);

	// With unified addressing the host pointer is a device pointer too.
	if (d == h) {
		set_u32<<<N / 256, 256>>>(h, 13, N);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(0));
	} else {
		// Not so remotely where the address was taken: the same, by d.
		set_u32<<<N / 256, 256>>>(d, 13, N);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(0));
	}
	expect("through the host pointer, after a stream sync", h, 13);

	// PyTorch's .cpu(): a copy to pageable memory in the stream, then a
	// sync of that stream (answered by the client when nothing was sent
	// since the copy): the kernels' writes to mapped memory are seen.
	// Each round's input goes first: a copy in, then a sync.
	for (int r = 0; r < 3; r++) {
		for (i = 0; i < N; i++)
			back[i] = (60u + r) ^ (unsigned)i;
		CK(cudaMemcpyAsync(in, back, N * sizeof *back,
		    cudaMemcpyHostToDevice, 0));
		CK(cudaStreamSynchronize(0));
		set_u32<<<N / 256, 256>>>(d, 20 + r, N);
		set_u32<<<N / 256, 256>>>(other, 30 + r, N);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(back, other, N * sizeof *back,
		    cudaMemcpyDeviceToHost, 0));
		CK(cudaStreamSynchronize(0));
		expect("a copy, then a sync: the copy", back, 30 + r);
		expect("a copy, then a sync: mapped memory", h, 20 + r);
		CK(cudaMemcpy(back, in, N * sizeof *back,
		    cudaMemcpyDeviceToHost));
		expect("a copy, then a sync: the input", back, 60 + r);
	}
	// Work after the copy: the sync waits for it.
	CK(cudaMemcpyAsync(back, other, N * sizeof *back,
	    cudaMemcpyDeviceToHost, 0));
	set_u32<<<N / 256, 256>>>(d, 40, N);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(0));
	expect("a copy, a kernel, then a sync: mapped", h, 40);
	// Host writes after a copy, read by the next kernel's copy.
	CK(cudaMemcpyAsync(back, other, N * sizeof *back,
	    cudaMemcpyDeviceToHost, 0));
	for (i = 0; i < N; i++)
		h[i] = 50u ^ (unsigned)i;
	CK(cudaStreamSynchronize(0));
	CK(cudaMemcpy(other, d, N * sizeof *d, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(back, other, N * sizeof *back, cudaMemcpyDeviceToHost));
	expect("host writes after a copy and a sync", back, 50);

	// A small mapped buffer after a small allocation (whose device side
	// would not start a page): with unified addressing its host pointer
	// is its device pointer, which a kernel may be given.
	unsigned *tiny, *small, *sd;
	int sbad = 0;
	CK(cudaMalloc((void **)&tiny, 100));
	CK(cudaHostAlloc((void **)&small, 64 * sizeof *small,
	    cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&sd, small, 0));
	printf("%-44s %d\n", "small mapped: host pointer is device pointer",
	    sd == small);
	set_u32<<<1, 64>>>(small, 70, 64);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	for (i = 0; i < 64; i++)
		sbad += small[i] != (70u ^ (unsigned)i);
	printf("%-44s %s\n", "small mapped: a kernel's writes through it",
	    sbad ? "WRONG" : "ok");
	nfail += sbad != 0;
	CK(cudaFreeHost(small));
	CK(cudaFree(tiny));

	// Page-locked memory without the mapped flag is the device's too with
	// unified addressing, and programs pass its host pointer to kernels:
	// a small buffer, written, read and written again by kernels.
	unsigned *port;
	sbad = 0;
	CK(cudaHostAlloc((void **)&port, 64 * sizeof *port,
	    cudaHostAllocPortable));
	set_u32<<<1, 64>>>(port, 90, 64);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	for (i = 0; i < 64; i++)
		sbad += port[i] != (90u ^ (unsigned)i);
	for (i = 0; i < 64; i++)
		port[i] = 91u ^ (unsigned)i;
	CK(cudaMemcpy(other, port, 64 * sizeof *port,
	    cudaMemcpyDefault));
	CK(cudaMemcpy(back, other, 64 * sizeof *back,
	    cudaMemcpyDeviceToHost));
	for (i = 0; i < 64; i++)
		sbad += back[i] != (91u ^ (unsigned)i);
	printf("%-44s %s\n", "small pinned: kernels use its host pointer",
	    sbad ? "WRONG" : "ok");
	nfail += sbad != 0;

	// The host releases a kernel that waits on it (XLA's delay kernel):
	// the host's write must reach it while it runs, at the latest when the
	// host waits for what follows it.  About a second of cycles at most.
	// Its answer goes to a buffer of its own, which the host leaves alone.
	cudaStream_t ns;
	cudaEvent_t ev;
	unsigned *res;
	CK(cudaHostAlloc((void **)&res, sizeof *res, cudaHostAllocPortable));
	CK(cudaStreamCreateWithFlags(&ns, cudaStreamNonBlocking));
	CK(cudaEventCreate(&ev));
	port[0] = 1;
	*res = 0;
	spin_u32<<<1, 1, 0, ns>>>(port, 2, 2000000000ll, res);
	CK(cudaGetLastError());
	set_u32<<<N / 256, 256, 0, ns>>>(other, 95, N);
	CK(cudaEventRecord(ev, ns));
	port[0] = 2;
	CK(cudaEventSynchronize(ev));
	printf("%-44s %s\n", "small pinned: a waiting kernel released",
	    *res == 1 ? "yes" : *res == 3 ? "no, it timed out" : "WRONG");
	CK(cudaFreeHost(res));
	CK(cudaMemcpy(back, other, N * sizeof *back, cudaMemcpyDeviceToHost));
	expect("small pinned: the work after it", back, 95);
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(ns));
	CK(cudaFreeHost(port));

	CK(cudaFreeHost(h));
	CK(cudaFree(other));
	CK(cudaFree(in));
	free(back);
	printf(NAME ": %s\n", nfail ? "FAIL" : "ok");
	return nfail ? 1 : 0;
}
