// vecadd [n]: the smallest whole CUDA program.  It fills two float vectors
// deterministically, adds them on the GPU, copies the sum back, checks
// every element against the same sum on the host, and prints a checksum
// and "vecadd: ok".  A float addition rounds the same way on a GPU and a
// CPU, so the check is exact and the checksum is the same on every device,
// the host backend's included.  Exits 0 when the sum is right, 1 when it
// is not, 2 when a CUDA call failed.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

__global__ void
vecAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

#define CHECK(call) do {						\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "vecadd: %s: %s\n", #call,		\
		    cudaGetErrorString(e_));				\
		exit(2);						\
	}								\
} while (0)

int
main(int argc, char **argv)
{
	int n = 1 << 20, i, bad = 0;
	float *a, *b, *c, *da, *db, *dc;
	double sum = 0;
	size_t bytes;
	char *end;

	if (argc > 1) {
		long v = strtol(argv[1], &end, 10);
		if (*end != '\0' || v < 1 || v > (1 << 28)) {
			fprintf(stderr, "vecadd: %s: bad vector length\n",
			    argv[1]);
			return 2;
		}
		n = (int)v;
	}
	bytes = (size_t)n * sizeof(float);
	a = (float *)malloc(bytes);
	b = (float *)malloc(bytes);
	c = (float *)malloc(bytes);
	if (a == NULL || b == NULL || c == NULL) {
		fprintf(stderr, "vecadd: out of memory\n");
		return 2;
	}
	for (i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)((n - i) % 777) * 0.25f;
	}
	CHECK(cudaMalloc((void **)&da, bytes));
	CHECK(cudaMalloc((void **)&db, bytes));
	CHECK(cudaMalloc((void **)&dc, bytes));
	CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemset(dc, 0, bytes));
	vecAdd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
	for (i = 0; i < n; i++) {
		if (c[i] != a[i] + b[i]) {
			if (bad++ < 5)
				fprintf(stderr, "vecadd: c[%d] = %g, not %g\n",
				    i, c[i], a[i] + b[i]);
		}
		sum += c[i];
	}
	printf("n %d checksum %.2f\n", n, sum);
	CHECK(cudaFree(da));
	CHECK(cudaFree(db));
	CHECK(cudaFree(dc));
	free(a);
	free(b);
	free(c);
	if (bad != 0) {
		printf("vecadd: %d wrong\n", bad);
		return 1;
	}
	printf("vecadd: ok\n");
	return 0;
}
