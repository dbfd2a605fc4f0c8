// errors: error paths and their codes, as CUDA 13.0 with driver 580 gives
// them on an H200.  Without arguments, non-sticky errors, each followed by
// a check that the context still works: a block of 2048 threads and a grid
// of 65536 in y (cudaErrorInvalidValue, not the cudaErrorInvalidConfiguration
// of older releases; from cudaPeekAtLastError, then cudaGetLastError, which
// clears it), too much dynamic shared memory, then the same launch allowed
// by cudaFuncSetAttribute(MaxDynamicSharedMemorySize), cudaFree of pointers
// not from cudaMalloc, a 1 PB cudaMalloc (cudaErrorMemoryAllocation), and
// cudaMemcpy to and from a bad device address; a failed API call sets the
// last error too.  With the argument "fault", a kernel writes to an invalid
// address: the next synchronising call returns cudaErrorIllegalAddress and
// the error is sticky: cudaGetLastError returns it once, but every later
// call that needs the context fails with it; that is the expected outcome
// and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"errors"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_SET_U32)
#include "testutil.h"

static void
expect(const char *what, cudaError_t got, cudaError_t want)
{
	printf("%-40s %s", what, cudaGetErrorName(got));
	if (got != want) {
		printf(" WRONG, want %s\n", cudaGetErrorName(want));
		nfail++;
	} else
		printf(" ok\n");
}

// An API call that failed also sets the last error: cudaGetLastError
// returns it once, then success.
static void
expect_call(const char *what, cudaError_t got, cudaError_t want)
{
	expect(what, got, want);
	expect("  then cudaGetLastError", cudaGetLastError(), want);
	expect("  then cudaGetLastError again", cudaGetLastError(),
	    cudaSuccess);
}

// Reverses p[0..blockDim.x) through dynamic shared memory.
__global__ void
smem_rev(unsigned *p)
{
	extern __shared__ unsigned buf[];
	unsigned i = threadIdx.x;

	buf[i] = p[i];
	__syncthreads();
	p[i] = buf[blockDim.x - 1 - i];
}

// *p = v
__global__ void
poke_u32(unsigned *p, unsigned v)
{
	*p = v;
}

// The context still works: no pending error, a kernel runs and its
// result comes back.
static void
still_works(const char *after)
{
	static unsigned host[N];
	static unsigned round;
	unsigned *d;
	int bad = 0;

	round++;
	CK(cudaGetLastError());
	CK(cudaMalloc(&d, sizeof(host)));
	set_u32<<<N / 256, 256>>>(d, round * 0x01000193u, N);
	CK(cudaGetLastError());
	CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
	CK(cudaFree(d));
	for (int i = 0; i < N; i++)
		if (host[i] != (round * 0x01000193u ^ (unsigned)i))
			bad++;
	printf("%-40s %s\n", after, bad ? "BROKEN" : "works");
	if (bad)
		nfail++;
}

static int
nonsticky(void)
{
	unsigned host[256], *d, *junk;
	void *big = NULL;
	int bad;

	still_works("before anything");

	set_u32<<<1, 2048>>>(NULL, 0, 0);
	expect("block of 2048: cudaPeekAtLastError", cudaPeekAtLastError(),
	    cudaErrorInvalidValue);
	expect("block of 2048: cudaGetLastError", cudaGetLastError(),
	    cudaErrorInvalidValue);
	expect("  then cudaGetLastError", cudaGetLastError(), cudaSuccess);
	still_works("after a block of 2048");

	set_u32<<<dim3(1, 65536), 32>>>(NULL, 0, 0);
	expect("grid y 65536: cudaGetLastError", cudaGetLastError(),
	    cudaErrorInvalidValue);
	still_works("after a grid y of 65536");

	CK(cudaMalloc(&d, sizeof(host)));
	for (int i = 0; i < 256; i++)
		host[i] = i * 7;
	CK(cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice));
	smem_rev<<<1, 256, 1 << 20>>>(d);
	expect("1 MiB dynamic shared memory", cudaGetLastError(),
	    cudaErrorInvalidValue);
	smem_rev<<<1, 256, 100 << 10>>>(d);
	expect("100 KiB dynamic shared memory", cudaGetLastError(),
	    cudaErrorInvalidValue);
	still_works("after too much shared memory");
	CK(cudaFuncSetAttribute(smem_rev,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10));
	smem_rev<<<1, 256, 100 << 10>>>(d);
	expect("100 KiB after cudaFuncSetAttribute", cudaGetLastError(),
	    cudaSuccess);
	CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
	bad = 0;
	for (int i = 0; i < 256; i++)
		if (host[i] != (unsigned)(255 - i) * 7)
			bad++;
	printf("%-40s %s\n", "smem_rev result", bad ? "WRONG" : "ok");
	if (bad)
		nfail++;

	expect_call("cudaFree(0x1234)", cudaFree((void *)0x1234),
	    cudaErrorInvalidValue);
	still_works("after cudaFree(0x1234)");
	expect_call("cudaFree(d + 1)", cudaFree(d + 1),
	    cudaErrorInvalidValue);
	still_works("after cudaFree(d + 1)");
	if ((junk = (unsigned *)malloc(64)) == NULL) {
		printf(NAME ": FAIL out of host memory\n");
		exit(1);
	}
	expect_call("cudaFree(malloc'd)", cudaFree(junk),
	    cudaErrorInvalidValue);
	free(junk);
	still_works("after cudaFree(malloc'd)");
	CK(cudaFree(d));

	expect_call("cudaMalloc(1 PB)", cudaMalloc(&big, 1ULL << 50),
	    cudaErrorMemoryAllocation);
	still_works("after cudaMalloc(1 PB)");

	expect_call("cudaMemcpy HtoD to 0x10",
	    cudaMemcpy((void *)0x10, host, 16, cudaMemcpyHostToDevice),
	    cudaErrorInvalidValue);
	still_works("after cudaMemcpy HtoD to 0x10");
	expect_call("cudaMemcpy DtoH from 0x10",
	    cudaMemcpy(host, (void *)0x10, 16, cudaMemcpyDeviceToHost),
	    cudaErrorInvalidValue);
	still_works("after cudaMemcpy DtoH from 0x10");

	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}

static int
fault(void)
{
	void *d, *d2 = NULL;
	unsigned host[4];

	still_works("before the fault");
	CK(cudaMalloc(&d, 64));
	poke_u32<<<1, 1>>>((unsigned *)0x8, 1);
	expect("launch of the faulting kernel", cudaGetLastError(),
	    cudaSuccess);
	expect("cudaDeviceSynchronize",
	    cudaDeviceSynchronize(), cudaErrorIllegalAddress);
	expect("then cudaGetLastError", cudaGetLastError(),
	    cudaErrorIllegalAddress);
	// The sticky error stays in the context, not in the last error.
	expect("then cudaGetLastError again", cudaGetLastError(),
	    cudaSuccess);
	expect("then cudaMalloc", cudaMalloc(&d2, 64),
	    cudaErrorIllegalAddress);
	expect("then cudaMemcpy DtoH",
	    cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost),
	    cudaErrorIllegalAddress);
	set_u32<<<1, 32>>>((unsigned *)d, 0, 0);
	expect("then a launch", cudaGetLastError(), cudaErrorIllegalAddress);
	expect("then cudaDeviceSynchronize", cudaDeviceSynchronize(),
	    cudaErrorIllegalAddress);
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}

int
main(int argc, char *argv[])
{
	if (argc == 2 && strcmp(argv[1], "fault") == 0)
		return fault();
	if (argc != 1) {
		fprintf(stderr, "usage: errors [fault]\n");
		return 2;
	}
	return nonsticky();
}
