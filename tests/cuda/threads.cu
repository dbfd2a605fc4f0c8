// threads: CUDA from 8 host threads at once, each with its own stream,
// 50 rounds each of cudaMalloc, async copy in, kernel, async copy out,
// stream synchronise, cudaFree; the pinned buffer of each thread is
// allocated and freed concurrently too.  Each thread checks its results
// against the CPU; the main thread prints them in thread order.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME		"threads"
#define NTHREADS	8
#define ROUNDS		50
#define N		(64 * 1024 + 3)

struct worker {
	pthread_t		t;
	int			id;
	int			bad;		// rounds with a wrong result
	unsigned long long	digest;		// over every round's output
	char			err[200];	// the first CUDA error
};

#define WK(x)	do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess) {					\
		snprintf(w->err, sizeof(w->err),			\
		    NAME ": CUDA error at %s:%d: %s: %s", __FILE__,	\
		    __LINE__, cudaGetErrorName(e_),			\
		    cudaGetErrorString(e_));				\
		return NULL;						\
	}								\
} while (0)

// p[i] = p[i] * 31 + (id << 16) + round
__global__ void
mix_u32(unsigned *p, unsigned id, unsigned round, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = p[i] * 31 + (id << 16) + round;
}

static void *
work(void *arg)
{
	struct worker *w = (struct worker *)arg;
	cudaStream_t s;
	unsigned *host, *d;
	unsigned long long h = 0xcbf29ce484222325ULL;

	WK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	WK(cudaMallocHost(&host, N * sizeof(unsigned)));
	for (int r = 0; r < ROUNDS; r++) {
		int bad = 0;

		for (int i = 0; i < N; i++)
			host[i] = (unsigned)i * 2654435761u + w->id + r;
		WK(cudaMalloc(&d, N * sizeof(unsigned)));
		WK(cudaMemcpyAsync(d, host, N * sizeof(unsigned),
		    cudaMemcpyHostToDevice, s));
		mix_u32<<<(N + 255) / 256, 256, 0, s>>>(d, w->id, r, N);
		WK(cudaGetLastError());
		WK(cudaMemcpyAsync(host, d, N * sizeof(unsigned),
		    cudaMemcpyDeviceToHost, s));
		WK(cudaStreamSynchronize(s));
		WK(cudaFree(d));
		for (int i = 0; i < N; i++) {
			unsigned v = (unsigned)i * 2654435761u + w->id + r;

			if (host[i] != v * 31 + ((unsigned)w->id << 16) + r)
				bad = 1;
			h = (h ^ host[i]) * 0x100000001b3ULL;
		}
		w->bad += bad;
	}
	w->digest = h;
	WK(cudaFreeHost(host));
	WK(cudaStreamDestroy(s));
	return NULL;
}

int
main()
{
	struct worker w[NTHREADS] = {};
	int i, err = 0, bad = 0;

	for (i = 0; i < NTHREADS; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].t, NULL, work, &w[i]) != 0) {
			printf(NAME ": FAIL pthread_create\n");
			return 1;
		}
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(w[i].t, NULL);
	for (i = 0; i < NTHREADS; i++) {
		if (w[i].err[0] != '\0') {
			printf("%s (thread %d)\n", w[i].err, i);
			err = 1;
			continue;
		}
		printf("thread %d: %d rounds, digest %016llx, %s\n", i, ROUNDS,
		    w[i].digest, w[i].bad ? "MISMATCH" : "ok");
		bad += w[i].bad;
	}
	if (err)
		return 2;
	if (bad) {
		printf(NAME ": FAIL %d rounds wrong\n", bad);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
