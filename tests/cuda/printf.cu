// printf: device printf reaches the program's stdout where a local run
// prints it: at the synchronizing call that flushes the device's buffer,
// after the host lines printed before that call and before those printed
// after it.  The kernels print values only (no addresses), in an order that
// does not depend on timing: one thread prints, or blocks take turns.
//  1. a kernel's line around a launch and cudaDeviceSynchronize;
//  2. four blocks in turn, after cudaDeviceSynchronize and after
//     cudaStreamSynchronize; a line after cudaEventSynchronize and after a
//     blocking device-to-host copy;
//  3. over 1 MiB of device output in four launches, the printf FIFO raised;
//  4. a line flushed by cudaDeviceReset.
// Output is compared byte for byte (tests/gpu/run, tests/bats/remote.bats).
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"printf"
#define CK(x)	check((x), __FILE__, __LINE__)
#define SPEW_LAUNCHES	4
#define SPEW_LINES	8000

#define TESTUTIL	(TU_CHECK)
#include "testutil.h"

__global__ void
pf_hello(int v, float f)
{
	printf("dev: hello %d %.3f %s\n", v, f, "literal");
}

// Block b prints once blocks 0..b-1 have: their lines come first.
__global__ void
pf_ordered(unsigned *turn, int round)
{
	if (threadIdx.x != 0)
		return;
	while (atomicAdd(turn, 0) != blockIdx.x)
		;
	printf("dev: round %d block %u of %u, %u threads\n", round,
	    blockIdx.x, gridDim.x, blockDim.x);
	__threadfence();
	atomicAdd(turn, 1);
}

__global__ void
pf_spew(int launch, int n)
{
	for (int i = 0; i < n; i++)
		printf("dev: spew %d line %05d value %08x\n", launch, i,
		    (unsigned)launch * 2654435761u ^ (unsigned)i * 40503u);
}

int
main(void)
{
	cudaStream_t s;
	cudaEvent_t e;
	unsigned *turn, h = 0;
	int k;

	printf("host: start\n");
	CK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 16u << 20));

	pf_hello<<<1, 1>>>(7, 2.5f);
	CK(cudaGetLastError());
	printf("host: launched hello\n");
	CK(cudaDeviceSynchronize());
	printf("host: after cudaDeviceSynchronize\n");

	CK(cudaMalloc(&turn, sizeof *turn));
	CK(cudaMemset(turn, 0, sizeof *turn));
	pf_ordered<<<4, 32>>>(turn, 1);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	printf("host: after round 1\n");

	CK(cudaStreamCreate(&s));
	CK(cudaMemsetAsync(turn, 0, sizeof *turn, s));
	pf_ordered<<<4, 64, 0, s>>>(turn, 2);
	CK(cudaGetLastError());
	printf("host: round 2 queued on a stream\n");
	CK(cudaStreamSynchronize(s));
	printf("host: after cudaStreamSynchronize\n");

	CK(cudaEventCreate(&e));
	pf_hello<<<1, 1, 0, s>>>(8, 0.25f);
	CK(cudaGetLastError());
	CK(cudaEventRecord(e, s));
	printf("host: event recorded\n");
	CK(cudaEventSynchronize(e));
	printf("host: after cudaEventSynchronize\n");

	pf_hello<<<1, 1>>>(9, -1.5f);
	CK(cudaGetLastError());
	printf("host: before a blocking copy\n");
	CK(cudaMemcpy(&h, turn, sizeof h, cudaMemcpyDeviceToHost));
	printf("host: after a blocking copy, turn %u\n", h);

	for (k = 1; k <= SPEW_LAUNCHES; k++) {
		pf_spew<<<1, 1>>>(k, SPEW_LINES);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		printf("host: spew %d done\n", k);
	}

	CK(cudaEventDestroy(e));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(turn));
	pf_hello<<<1, 1>>>(10, 1e3f);
	CK(cudaGetLastError());
	printf("host: before cudaDeviceReset\n");
	CK(cudaDeviceReset());
	printf("host: after cudaDeviceReset\n");
	printf(NAME ": ok\n");
	return 0;
}
