// assert: a failed device assert.  Its message ("FILE:LINE: FUNCTION:
// block: [..], thread: [..] Assertion `...` failed.") goes to stderr; the
// synchronizing call after it returns cudaErrorAssert (710), and so does
// every later call that needs the context (sticky).  stdout carries the
// kernel's printf and the codes, compared byte for byte with a local run's.
#include <cassert>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"assert"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	8

static void
check(cudaError_t e, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    cudaGetErrorName(e), cudaGetErrorString(e));
	exit(2);
}

// Only p[5] is 3: one thread fails, one message.
__global__ void
check_vals(const unsigned *p, int n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i == 0)
		printf("dev: checking %d values\n", n);
	if (i < (unsigned)n)
		assert(p[i] != 3u);
}

static void
code(const char *what, cudaError_t e)
{
	printf("%-28s %d %s\n", what, (int)e, cudaGetErrorName(e));
}

int
main(void)
{
	unsigned h[N] = { 1, 2, 4, 5, 6, 3, 7, 8 };
	unsigned *d;
	void *q = NULL;
	cudaError_t e, again;

	CK(cudaMalloc(&d, sizeof h));
	CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
	// The message is on stderr: what came before it is out first.
	fflush(stdout);
	check_vals<<<1, N>>>(d, N);
	code("launch", cudaGetLastError());
	printf("host: before sync\n");
	e = cudaDeviceSynchronize();
	code("sync after the assert", e);
	again = cudaDeviceSynchronize();
	code("sync again", again);
	code("cudaMalloc after", cudaMalloc(&q, 256));
	code("cudaGetLastError", cudaGetLastError());
	if (e != cudaErrorAssert || again != cudaErrorAssert) {
		printf(NAME ": FAIL: expected cudaErrorAssert\n");
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
