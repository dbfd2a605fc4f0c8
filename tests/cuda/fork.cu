// fork: CUDA initialised, then fork(2).  The child calls cudaMalloc and
// must get either a clean CUDA error or a working context of its own (a
// kernel runs and its result comes back); it must neither hang (an alarm
// kills it after 60 s) nor crash, and it leaves through exit(3), so that
// cudart's teardown runs in the child too.  The parent then checks that
// its own allocation, made before the fork, still holds its data and that
// its context still runs kernels.
//
// With NVIDIA's driver a forked child of an initialised process cannot
// use CUDA: cudaMalloc returns cudaErrorInitializationError ("initialization
// error").  A remoting client may do the same, or give the child a
// connection and context of its own; the output names the case.
#include <sys/wait.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"fork"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK)
#include "testutil.h"

// p[i] = i * mul + add
__global__ void
iota_u32(unsigned *p, unsigned mul, unsigned add, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = (unsigned)i * mul + add;
}

// Run iota_u32 into d and check it; the number of wrong entries.
static int
iota_check(unsigned *d, unsigned mul, unsigned add)
{
	static unsigned host[N];
	int bad = 0;

	iota_u32<<<N / 256, 256>>>(d, mul, add, N);
	CK(cudaGetLastError());
	CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (host[i] != (unsigned)i * mul + add)
			bad++;
	return bad;
}

static void
child(void)
{
	cudaError_t e;
	unsigned *d;

	alarm(60);
	e = cudaMalloc(&d, N * sizeof(unsigned));
	if (e != cudaSuccess) {
		printf("child: cudaMalloc: %s (clean error)\n",
		    cudaGetErrorName(e));
		exit(0);
	}
	// A context of its own: it must work.
	if (iota_check(d, 5, 9) != 0) {
		printf("child: own context, WRONG kernel result\n");
		exit(1);
	}
	CK(cudaFree(d));
	printf("child: cudaMalloc: cudaSuccess (own working context)\n");
	exit(0);
}

int
main()
{
	unsigned *d, *d2, host[N];
	int status, bad;
	pid_t pid;

	CK(cudaMalloc(&d, N * sizeof(unsigned)));
	bad = iota_check(d, 3, 1);
	printf("parent before fork: %s\n", bad ? "WRONG" : "ok");

	fflush(stdout);
	if ((pid = fork()) == -1) {
		printf(NAME ": FAIL fork\n");
		return 1;
	}
	if (pid == 0)
		child();
	if (waitpid(pid, &status, 0) == -1) {
		printf(NAME ": FAIL waitpid\n");
		return 1;
	}
	if (WIFSIGNALED(status)) {
		printf(NAME ": FAIL child killed by signal %d%s\n",
		    WTERMSIG(status),
		    WTERMSIG(status) == SIGALRM ? " (hung)" : "");
		return 1;
	}
	if (WEXITSTATUS(status) != 0) {
		printf(NAME ": FAIL child exit status %d\n",
		    WEXITSTATUS(status));
		return 1;
	}

	// The allocation from before the fork still holds its data; the
	// context still runs kernels and allocates.
	CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (host[i] != (unsigned)i * 3 + 1)
			bad++;
	CK(cudaMalloc(&d2, N * sizeof(unsigned)));
	bad += iota_check(d2, 7, 2);
	bad += iota_check(d, 11, 4);
	CK(cudaFree(d2));
	CK(cudaFree(d));
	printf("parent after fork: %s\n", bad ? "WRONG" : "ok");
	if (bad) {
		printf(NAME ": FAIL parent results wrong\n");
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
