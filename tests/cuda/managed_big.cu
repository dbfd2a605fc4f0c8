// managed_big [MiB [sparse]]: a large cudaMallocManaged allocation (1024 MiB
// unless told) touched sparsely: the host writes one word in each of K
// blocks far apart, a kernel reads them, a kernel writes them, the host
// reads them back; threads write and read their own words while the main
// thread launches kernels on another buffer and synchronizes; a SIGSEGV
// handler of the program's own, installed before and after, gets its own
// faults and never the client's.  With "sparse", only the first part:
// then the host touched K + 2 blocks and wrote K.  Prints values and counts only, so that
// a local and a remote run compare.
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define NAME	"managed_big"
#define K	64		/* words touched, one per block */
#define NT	4		/* threads */
#define ROUNDS	20
#define CK(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_SET_U32)
#include "testutil.h"

__global__ void
gather_u32(unsigned *out, const unsigned *src, unsigned long long stride,
    int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = src[i * stride];
}

__global__ void
scatter_u32(unsigned *dst, unsigned long long stride, unsigned v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i * stride] = v ^ (unsigned)i;
}

static unsigned *big;
static unsigned long long stride;	/* words between touched ones */
static volatile sig_atomic_t own_faults[2];
static sigjmp_buf own_jmp;
static int bad_threads;

static void
own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	own_faults[0]++;
	siglongjmp(own_jmp, 1);
}

static void
own_handler2(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	own_faults[1]++;
	siglongjmp(own_jmp, 1);
}

// A fault of the program's own: a read of a page it made unreadable.
static int
own_fault(volatile unsigned *p)
{
	if (sigsetjmp(own_jmp, 1) == 0) {
		(void)*p;
		return 0;
	}
	return 1;
}

// Thread t owns words K + t, K + t + NT, ...: writes, reads back, again.
static void *
toucher(void *arg)
{
	long t = (long)arg;
	int r, j, bad = 0;

	for (r = 0; r < ROUNDS; r++) {
		for (j = K + (int)t; j < 2 * K; j += NT)
			big[j * stride] = 1000u * (unsigned)r + (unsigned)j;
		for (j = K + (int)t; j < 2 * K; j += NT)
			if (big[j * stride] != 1000u * (unsigned)r + (unsigned)j)
				bad++;
	}
	__atomic_add_fetch(&bad_threads, bad, __ATOMIC_SEQ_CST);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sigaction sa, old;
	unsigned long long mib = 1024, words;
	unsigned *out, *other, h[2 * K];
	pthread_t tid[NT];
	volatile unsigned *guard;
	int i, bad, r;

	// Line by line: a crash (seen with the real driver) shows where.
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc > 1)
		mib = strtoull(argv[1], NULL, 10);
	words = mib << 18;
	stride = words / (2 * K);
	// The program's own handler first, as a crash reporter would be.
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = own_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	guard = (volatile unsigned *)mmap(NULL, 4096, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CK(cudaMallocManaged((void **)&big, words * sizeof *big));
	CK(cudaMallocManaged((void **)&other, 4096 * sizeof *other));
	CK(cudaMalloc((void **)&out, 2 * K * sizeof *out));
	printf("allocated: %llu MiB\n", mib);

	// Sparse host writes, read by a kernel.
	for (i = 0; i < K; i++)
		big[i * stride] = 0x5000u + (unsigned)i;
	gather_u32<<<1, K>>>(out, big, stride, K);
	CK(cudaGetLastError());
	CK(cudaMemcpy(h, out, K * sizeof *out, cudaMemcpyDeviceToHost));
	for (i = bad = 0; i < K; i++)
		bad += h[i] != 0x5000u + (unsigned)i;
	printf("kernel read the host's sparse writes: %s\n", bad ? "WRONG" :
	    "ok");
	r = own_fault(guard);
	printf("own handler before: %d, its fault: %d\n", r,
	    (int)own_faults[0]);

	// Sparse kernel writes, read by the host.
	scatter_u32<<<1, K>>>(big, stride, 0x7700u, K);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	for (i = bad = 0; i < K; i++)
		bad += big[i * stride] != (0x7700u ^ (unsigned)i);
	printf("host read the kernel's sparse writes: %s\n", bad ? "WRONG" :
	    "ok");
	printf("untouched words are zero: %d\n", big[stride / 2] == 0 &&
	    big[words - 1] == 0);

	if (argc > 2 && strcmp(argv[2], "sparse") == 0) {
		printf(NAME ": ok\n");
		return 0;
	}
	// A handler installed now gets the program's faults, and the old
	// one is reported as the one before.
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = own_handler2;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	printf("the old handler is the program's: %d\n",
	    (old.sa_flags & SA_SIGINFO) && old.sa_sigaction == own_handler);

	// Threads write and read their words while kernels run and the
	// device is synchronized.
	for (i = 0; i < NT; i++)
		pthread_create(&tid[i], NULL, toucher, (void *)(long)i);
	for (r = 0; r < ROUNDS; r++) {
		set_u32<<<4096 / 256, 256>>>(other, (unsigned)r, 4096);
		CK(cudaDeviceSynchronize());
	}
	for (i = 0; i < NT; i++)
		pthread_join(tid[i], NULL);
	printf("threads read their own writes: %s\n", bad_threads ? "WRONG" :
	    "ok");
	printf("other buffer: %u\n", other[4095]);
	gather_u32<<<1, 2 * K>>>(out, big, stride, 2 * K);
	CK(cudaMemcpy(h, out, 2 * K * sizeof *out, cudaMemcpyDeviceToHost));
	for (i = K, bad = 0; i < 2 * K; i++)
		bad += h[i] != 1000u * (ROUNDS - 1) + (unsigned)i;
	printf("kernel read the threads' last writes: %s\n", bad ? "WRONG" :
	    "ok");
	r = own_fault(guard);
	printf("own handler after: %d, its fault: %d, the first's: %d\n", r,
	    (int)own_faults[1], (int)own_faults[0]);

	CK(cudaFree(big));
	CK(cudaFree(other));
	CK(cudaFree(out));
	printf(NAME ": ok\n");
	return 0;
}
