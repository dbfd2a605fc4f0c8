// cuRAND through tabletrace: a million uniform floats from the host API.
#include <cuda_runtime.h>
#include <curand.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "rand: %s: %d\n", #x, e_); exit(1); } } while (0)

int
main(void)
{
	const size_t n = 1 << 20;
	float *d, *h = (float *)malloc(sizeof *h * n);
	double sum = 0;
	curandGenerator_t g;
	size_t i;

	CK(cudaMalloc(&d, sizeof *d * n));
	CK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT));
	CK(curandSetPseudoRandomGeneratorSeed(g, 1234));
	CK(curandGenerateUniform(g, d, n));
	CK(cudaMemcpy(h, d, sizeof *d * n, cudaMemcpyDeviceToHost));
	CK(curandDestroyGenerator(g));
	for (i = 0; i < n; i++) {
		if (!(h[i] > 0 && h[i] <= 1)) {
			fprintf(stderr, "rand: h[%zu] = %g\n", i, h[i]);
			return 1;
		}
		sum += h[i];
	}
	printf("rand: mean %.4f\n", sum / n);
	return sum / n > 0.49 && sum / n < 0.51 ? 0 : 1;
}
