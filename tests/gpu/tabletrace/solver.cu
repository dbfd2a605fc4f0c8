// cuSOLVER through tabletrace: Cholesky (potrf) of a 64x64 SPD matrix,
// checked by L L^T = A.
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "solver: %s: %d\n", #x, e_); exit(1); } } while (0)

int
main(void)
{
	const int n = 64;
	double *a = (double *)malloc(sizeof *a * n * n);
	double *l = (double *)malloc(sizeof *l * n * n);
	double *da, *work, err = 0;
	int *dinfo, info = -1, lwork, i, j, k;
	cusolverDnHandle_t h;

	for (i = 0; i < n; i++)		// column-major; symmetric, dominant
		for (j = 0; j < n; j++)
			a[i + j * n] = i == j ? n + 1.0 : 1.0 / (1 + i + j);
	CK(cudaMalloc(&da, sizeof *da * n * n));
	CK(cudaMalloc(&dinfo, sizeof *dinfo));
	CK(cudaMemcpy(da, a, sizeof *da * n * n, cudaMemcpyHostToDevice));
	CK(cusolverDnCreate(&h));
	CK(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, da, n,
	    &lwork));
	CK(cudaMalloc(&work, sizeof *work * (lwork ? lwork : 1)));
	CK(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, da, n, work, lwork,
	    dinfo));
	CK(cudaMemcpy(&info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(l, da, sizeof *l * n * n, cudaMemcpyDeviceToHost));
	CK(cusolverDnDestroy(h));
	for (i = 0; i < n; i++)
		for (j = 0; j <= i; j++) {
			double s = 0;
			for (k = 0; k <= j; k++)
				s += l[i + k * n] * l[j + k * n];
			err = fmax(err, fabs(s - a[i + j * n]));
		}
	printf("solver: potrf info %d, max err %.3g\n", info, err);
	return info == 0 && err < 1e-9 ? 0 : 1;
}
