// cuSPARSE through tabletrace: y = A x with A a 4x4 CSR matrix (SpMV).
#include <cuda_runtime.h>
#include <cusparse.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x) do { int e_ = (int)(x); if (e_ != 0) { \
	fprintf(stderr, "sparse: %s: %d\n", #x, e_); exit(1); } } while (0)

int
main(void)
{
	// [[1 0 2 0] [0 3 0 0] [4 0 5 6] [0 7 0 8]]
	int rows[] = { 0, 2, 3, 6, 8 }, cols[] = { 0, 2, 1, 0, 2, 3, 1, 3 };
	float vals[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, x[] = { 1, 2, 3, 4 };
	float y[4], want[] = { 7, 6, 43, 46 }, alpha = 1, beta = 0;
	int *drows, *dcols, i;
	float *dvals, *dx, *dy;
	void *buf;
	size_t bufsz;
	cusparseHandle_t h;
	cusparseSpMatDescr_t A;
	cusparseDnVecDescr_t vx, vy;

	CK(cudaMalloc(&drows, sizeof rows));
	CK(cudaMalloc(&dcols, sizeof cols));
	CK(cudaMalloc(&dvals, sizeof vals));
	CK(cudaMalloc(&dx, sizeof x));
	CK(cudaMalloc(&dy, sizeof y));
	CK(cudaMemcpy(drows, rows, sizeof rows, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dcols, cols, sizeof cols, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dvals, vals, sizeof vals, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
	CK(cusparseCreate(&h));
	CK(cusparseCreateCsr(&A, 4, 4, 8, drows, dcols, dvals,
	    CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
	    CUDA_R_32F));
	CK(cusparseCreateDnVec(&vx, 4, dx, CUDA_R_32F));
	CK(cusparseCreateDnVec(&vy, 4, dy, CUDA_R_32F));
	CK(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
	    A, vx, &beta, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bufsz));
	CK(cudaMalloc(&buf, bufsz ? bufsz : 1));
	CK(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, vx,
	    &beta, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buf));
	CK(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost));
	CK(cusparseDestroySpMat(A));
	CK(cusparseDestroyDnVec(vx));
	CK(cusparseDestroyDnVec(vy));
	CK(cusparseDestroy(h));
	for (i = 0; i < 4; i++)
		if (fabsf(y[i] - want[i]) > 1e-4f) {
			fprintf(stderr, "sparse: y[%d] = %g, want %g\n", i,
			    y[i], want[i]);
			return 1;
		}
	printf("sparse: spmv ok\n");
	return 0;
}
