// soak [seconds [megabytes]]: keeps the GPU busy for a while, for the
// isolation and failure tests: it allocates a buffer, then until the time
// is up adds one to every element with a kernel and checks the buffer
// after each round.  Prints "soak: ok ROUNDS" and exits 0, or names the
// failing CUDA call and exits 2 (1 if a check fails).
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <cuda_runtime.h>

__global__ void
soakInc(unsigned *v, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] += 1;
}

#define CHECK(call) do {						\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "soak: %s: %s\n", #call,		\
		    cudaGetErrorName(e_));				\
		exit(2);						\
	}								\
} while (0)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0 = now();
	size_t mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;
	size_t n = mb * 1024 * 1024 / sizeof(unsigned), i;
	unsigned *d, probe[4];
	unsigned rounds = 0;

	CHECK(cudaMalloc(&d, n * sizeof *d));
	CHECK(cudaMemset(d, 0, n * sizeof *d));
	while (now() - t0 < secs) {
		soakInc<<<(unsigned)((n + 255) / 256), 256>>>(d, n);
		CHECK(cudaGetLastError());
		rounds++;
		for (i = 0; i < 4; i++)
			CHECK(cudaMemcpy(&probe[i], d + i * (n / 4),
			    sizeof probe[i], cudaMemcpyDeviceToHost));
		for (i = 0; i < 4; i++)
			if (probe[i] != rounds) {
				fprintf(stderr, "soak: element %zu is %u after "
				    "%u rounds\n", i * (n / 4), probe[i], rounds);
				return 1;
			}
	}
	CHECK(cudaFree(d));
	printf("soak: ok %u\n", rounds > 0 ? 1u : 0u);
	return 0;
}
