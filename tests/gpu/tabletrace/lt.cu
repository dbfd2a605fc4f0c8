// cuBLASLt through tabletrace: an FP32 and an FP16 matmul (the FP16 one
// takes the cluster kernels that ask for table 1734dc26), checked against
// the CPU on a few entries.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "lt: %s: %d\n", #x, e_); exit(1); } } while (0)

// C = A B, column-major, m x k times k x n, type t; returns max error on
// a sample of C against double precision.
static double
matmul(cublasLtHandle_t lt, cudaDataType_t t, int m, int n, int k)
{
	size_t es = t == CUDA_R_16F ? 2 : 4, ws = 32 << 20;
	float *fa = (float *)malloc(sizeof(float) * m * k);
	float *fb = (float *)malloc(sizeof(float) * k * n);
	void *ha = malloc(es * m * k), *hb = malloc(es * k * n);
	void *hc = malloc(es * m * n), *da, *db, *dc, *dw;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
	float alpha = 1, beta = 0;
	double err = 0;
	int i, j, p;

	for (i = 0; i < m * k; i++)
		fa[i] = (float)((i * 7 % 13) - 6) / 8;
	for (i = 0; i < k * n; i++)
		fb[i] = (float)((i * 5 % 11) - 5) / 8;
	for (i = 0; i < m * k; i++)
		if (t == CUDA_R_16F)
			((__half *)ha)[i] = __float2half(fa[i]);
		else
			((float *)ha)[i] = fa[i];
	for (i = 0; i < k * n; i++)
		if (t == CUDA_R_16F)
			((__half *)hb)[i] = __float2half(fb[i]);
		else
			((float *)hb)[i] = fb[i];
	CK(cudaMalloc(&da, es * m * k));
	CK(cudaMalloc(&db, es * k * n));
	CK(cudaMalloc(&dc, es * m * n));
	CK(cudaMalloc(&dw, ws));
	CK(cudaMemcpy(da, ha, es * m * k, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, hb, es * k * n, cudaMemcpyHostToDevice));
	CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CK(cublasLtMatrixLayoutCreate(&la, t, m, k, m));
	CK(cublasLtMatrixLayoutCreate(&lb, t, k, n, k));
	CK(cublasLtMatrixLayoutCreate(&lc, t, m, n, m));
	CK(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dc, lc, dc,
	    lc, NULL, dw, ws, 0));
	CK(cudaMemcpy(hc, dc, es * m * n, cudaMemcpyDeviceToHost));
	for (i = 0; i < m; i += 37)
		for (j = 0; j < n; j += 41) {
			double s = 0, c;
			for (p = 0; p < k; p++)
				s += (double)fa[i + p * m] * fb[p + j * k];
			c = t == CUDA_R_16F ?
			    __half2float(((__half *)hc)[i + j * m]) :
			    ((float *)hc)[i + j * m];
			err = fmax(err, fabs(c - s) / (1 + fabs(s)));
		}
	cublasLtMatrixLayoutDestroy(la);
	cublasLtMatrixLayoutDestroy(lb);
	cublasLtMatrixLayoutDestroy(lc);
	cublasLtMatmulDescDestroy(op);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	cudaFree(dw);
	return err;
}

int
main(void)
{
	cublasLtHandle_t lt;
	double e32, e16;

	CK(cublasLtCreate(&lt));
	e32 = matmul(lt, CUDA_R_32F, 256, 256, 256);
	e16 = matmul(lt, CUDA_R_16F, 1024, 1024, 1024);
	CK(cublasLtDestroy(lt));
	printf("lt: fp32 rel err %.3g, fp16 rel err %.3g\n", e32, e16);
	return e32 < 1e-4 && e16 < 1e-2 ? 0 : 1;
}
