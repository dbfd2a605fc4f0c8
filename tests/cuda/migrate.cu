// migrate [rounds [ms]]: a program to be moved to another server mid-run
// (tests/gpu/run's migrate-gpu, tests/bats/migrate.bats).  Each round
// allocates a buffer (sizes from 64 bytes, which share the driver's
// granules, to 5 MiB), fills it on one stream, and on a second, ordered
// by an event, mixes it with the oldest buffer still live; a kernel with
// more than 48 KiB of dynamic shared memory (an attribute set once, at
// the start) reverses blocks of a buffer kept all run; the oldest buffer
// is freed once six are live.  So memory of every age, streams, events
// and attributes live across the move.  One line of checksums a round
// (FNV-1a of whole buffers read back), then "migrate: ok".  ms: a pause
// after each round (0), so that a move lands mid-run.  Built as
// migrate_g with MIGRATE_GLOBALS: a __device__ array stepped each round
// and read back by cudaMemcpyFromSymbol too.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <cuda_runtime.h>

#define NLIVE	6
#define SMEM	(64 * 1024)		// over the 48 KiB default
#define BIG	(1u << 20)		// elements of the buffer kept all run

static const size_t sizes[] = { 64, 4000, (1 << 20) + 12, 3 << 20, 256,
    (5 << 20) + 4, 96 << 10 };

__global__ void
mig_fill(unsigned *p, unsigned seed, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = (seed ^ (unsigned)i) * 2654435761u + ((unsigned)i >> 3);
}

__global__ void
mig_mix(unsigned *dst, const unsigned *src, int m, unsigned k, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = dst[i] * 33u + (src[(unsigned)i * 7u % (unsigned)m] ^ k);
}

// Reverses each block's part of p through dynamic shared memory.
__global__ void
mig_smem(unsigned *p)
{
	extern __shared__ unsigned buf[];
	unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x * 16;

	for (unsigned j = 0; j < 16; j++)
		buf[t * 16 + j] = p[base + t * 16 + j];
	__syncthreads();
	for (unsigned j = 0; j < 16; j++)
		p[base + t * 16 + j] = buf[(blockDim.x - 1 - t) * 16 + j] + 1;
}

#ifdef MIGRATE_GLOBALS
__device__ unsigned g_mig[16];

__global__ void
mig_glob(unsigned k)
{
	g_mig[threadIdx.x] = g_mig[threadIdx.x] * 5u + k + threadIdx.x;
}
#endif

#define CHECK(call) do {						\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		printf("migrate: CUDA error at %s:%d: %s: %s\n",	\
		    __FILE__, __LINE__, cudaGetErrorName(e_),		\
		    cudaGetErrorString(e_));				\
		exit(2);						\
	}								\
} while (0)

// The host buffer, at file scope: a run cut off by its server exits at
// CHECK, and the leak check at exit (make asan) must still find it.
static unsigned char *host;

static unsigned
fnv(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned h = 2166136261u;

	while (n-- > 0)
		h = (h ^ *b++) * 16777619u;
	return h;
}

// FNV-1a of n bytes of device memory at d.
static unsigned
sum(const void *d, size_t n, unsigned char *buf)
{
	CHECK(cudaMemcpy(buf, d, n, cudaMemcpyDeviceToHost));
	return fnv(buf, n);
}

static unsigned
blocks(size_t n)
{
	return (unsigned)((n + 255) / 256);
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	int ms = argc > 2 ? atoi(argv[2]) : 0;
	unsigned *live[NLIVE] = { 0 }, *big;
	size_t lsize[NLIVE] = { 0 }, max = 6 << 20;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	struct timespec pause = { ms / 1000, (long)(ms % 1000) * 1000000 };
	int lo, hi, r, nlive = 0, oldest = 0;

	if (rounds < 1 || ms < 0) {
		fprintf(stderr, "usage: migrate [rounds [ms]]\n");
		return 1;
	}
	if ((host = (unsigned char *)malloc(max > BIG * 4 ? max : BIG * 4)) ==
	    NULL)
		return 1;
	CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithPriority(&s2, cudaStreamDefault, hi));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CHECK(cudaFuncSetAttribute(mig_smem,
	    cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
	CHECK(cudaMalloc(&big, BIG * sizeof *big));
	mig_fill<<<blocks(BIG), 256, 0, s1>>>(big, 12345u, (int)BIG);
	CHECK(cudaGetLastError());
	CHECK(cudaStreamSynchronize(s1));
	for (r = 0; r < rounds; r++) {
		size_t n = sizes[r % (sizeof sizes / sizeof sizes[0])];
		int e = (int)(n / sizeof(unsigned)), slot;
		unsigned *p, *old;
		int m;

		if (nlive == NLIVE) {
			CHECK(cudaFree(live[oldest]));
			live[oldest] = NULL;
			oldest = (oldest + 1) % NLIVE;
			nlive--;
		}
		slot = (oldest + nlive) % NLIVE;
		CHECK(cudaMalloc(&p, n));
		live[slot] = p;
		lsize[slot] = n;
		nlive++;
		old = live[oldest];
		m = (int)(lsize[oldest] / sizeof(unsigned));
		mig_fill<<<blocks(e), 256, 0, s1>>>(p, (unsigned)r, e);
		CHECK(cudaGetLastError());
		CHECK(cudaEventRecord(ev, s1));
		CHECK(cudaStreamWaitEvent(s2, ev, 0));
		if (old != p) {
			mig_mix<<<blocks(e), 256, 0, s2>>>(p, old, m,
			    (unsigned)r * 77u, e);
			CHECK(cudaGetLastError());
		}
		// 256 threads of 16 words each a block: 64 KiB of it.
		mig_smem<<<4, 256, SMEM, s2>>>(big + (size_t)(r % 64) * 16384);
		CHECK(cudaGetLastError());
#ifdef MIGRATE_GLOBALS
		mig_glob<<<1, 16, 0, s2>>>((unsigned)r);
		CHECK(cudaGetLastError());
#endif
		CHECK(cudaStreamSynchronize(s2));
		printf("round %d: new %zu %08x old %zu %08x big %08x", r, n,
		    sum(p, n, host), lsize[oldest], sum(old, lsize[oldest],
		    host), sum(big, BIG * sizeof *big, host));
#ifdef MIGRATE_GLOBALS
		{
			unsigned g[16];

			CHECK(cudaMemcpyFromSymbol(g, g_mig, sizeof g));
			printf(" glob %08x", fnv(g, sizeof g));
		}
#endif
		printf("\n");
		fflush(stdout);
		if (ms > 0)
			nanosleep(&pause, NULL);
	}
	while (nlive-- > 0) {
		CHECK(cudaFree(live[oldest]));
		oldest = (oldest + 1) % NLIVE;
	}
	CHECK(cudaFree(big));
	CHECK(cudaEventDestroy(ev));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	free(host);
	printf("migrate: ok\n");
	return 0;
}
