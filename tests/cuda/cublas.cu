// cublas: cuBLAS on a stream of its own (cublasSetStream).  cublasSgemm
// 256x256x256 and 123x77x45 (B transposed, alpha 3, beta 2, ldc padded
// past m: the padding must stay untouched); cublasGemmEx with FP16 inputs,
// FP32 compute and FP32 output, and with FP16 output.  Integer-valued
// inputs make the exact result representable whatever the summation
// order, so those are checked against the CPU; fractional inputs, whose
// rounding depends on cuBLAS's order, only print checksums and bits.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define NAME	"cublas"
#define CK(x)	check((x), __FILE__, __LINE__)
#define BK(x)	bcheck((x), __FILE__, __LINE__)
#define S	256

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_FNVLL)
#include "testutil.h"

static void
bcheck(cublasStatus_t s, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	printf(NAME ": cuBLAS error at %s:%d: %s: %s\n", file, line,
	    cublasGetStatusName(s), cublasGetStatusString(s));
	exit(2);
}

static unsigned
fbits(float f)
{
	unsigned u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

// Integers in [-r, r].
static float
ival(unsigned seed, int i, int r)
{
	return (float)((int)(((unsigned)i * 2654435761u + seed) % (2 * r + 1)) -
	    r);
}

// Multiples of 1/4096 in [-0.5, 0.5).
static float
fval(unsigned seed, int i)
{
	return (float)(((unsigned)i * 2654435761u + seed) >> 20) / 4096.0f -
	    0.5f;
}

// C = alpha op(A) op(B) + beta C on the CPU, column-major, exact for
// integer inputs.
static void
cpu_gemm(int tb, int m, int n, int k, float alpha, const float *a, int lda,
    const float *b, int ldb, float beta, float *c, int ldc)
{
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;

			for (int l = 0; l < k; l++)
				s += (double)a[i + l * lda] *
				    (tb ? b[j + l * ldb] : b[l + j * ldb]);
			c[i + j * ldc] = (float)(alpha * s + beta * c[i + j * ldc]);
		}
}

static void
report(const char *what, const float *c, const float *want, int n)
{
	int bad = 0;

	printf("%-24s fnv1a64 %016llx c[0] %a (%08x) c[%d] %a (%08x)", what,
	    fnv(c, n * sizeof(*c)), c[0], fbits(c[0]), n - 1, c[n - 1],
	    fbits(c[n - 1]));
	if (want == NULL) {
		printf("\n");
		return;
	}
	for (int i = 0; i < n; i++)
		if (fbits(c[i]) != fbits(want[i]) && bad++ < 3)
			printf("\n  [%d] %a, want %a", i, c[i], want[i]);
	printf(bad ? " MISMATCH\n" : " ok\n");
	if (bad)
		nfail++;
}

static void
sgemm(cublasHandle_t h, int exact)
{
	static float a[S * S], b[S * S], c[S * S], want[S * S];
	float one = 1, zero = 0, *da, *db, *dc;

	for (int i = 0; i < S * S; i++) {
		a[i] = exact ? ival(1, i, 8) : fval(1, i);
		b[i] = exact ? ival(2, i, 8) : fval(2, i);
	}
	CK(cudaMalloc(&da, sizeof(a)));
	CK(cudaMalloc(&db, sizeof(b)));
	CK(cudaMalloc(&dc, sizeof(c)));
	BK(cublasSetMatrix(S, S, sizeof(float), a, S, da, S));
	BK(cublasSetMatrix(S, S, sizeof(float), b, S, db, S));
	BK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, S, S, S, &one, da, S, db,
	    S, &zero, dc, S));
	BK(cublasGetMatrix(S, S, sizeof(float), dc, S, c, S));
	if (exact)
		cpu_gemm(0, S, S, S, 1, a, S, b, S, 0, want, S);
	report(exact ? "sgemm 256 integer" : "sgemm 256 fraction", c,
	    exact ? want : NULL, S * S);
	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
}

// 123x77x45, B stored transposed (77x45), C with ldc 130.
static void
sgemm_odd(cublasHandle_t h, cudaStream_t s)
{
	enum { M = 123, NN = 77, K = 45, LDC = 130 };
	static float a[M * K], b[NN * K], c[LDC * NN], want[LDC * NN];
	float alpha = 3, beta = 2, *da, *db, *dc;

	for (int i = 0; i < M * K; i++)
		a[i] = ival(3, i, 5);
	for (int i = 0; i < NN * K; i++)
		b[i] = ival(4, i, 5);
	for (int i = 0; i < LDC * NN; i++)
		c[i] = want[i] = ival(5, i, 100);
	CK(cudaMalloc(&da, sizeof(a)));
	CK(cudaMalloc(&db, sizeof(b)));
	CK(cudaMalloc(&dc, sizeof(c)));
	CK(cudaMemcpyAsync(da, a, sizeof(a), cudaMemcpyHostToDevice, s));
	CK(cudaMemcpyAsync(db, b, sizeof(b), cudaMemcpyHostToDevice, s));
	CK(cudaMemcpyAsync(dc, c, sizeof(c), cudaMemcpyHostToDevice, s));
	BK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, M, NN, K, &alpha, da, M,
	    db, NN, &beta, dc, LDC));
	CK(cudaMemcpyAsync(c, dc, sizeof(c), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	cpu_gemm(1, M, NN, K, alpha, a, M, b, NN, beta, want, LDC);
	report("sgemm 123x77x45 ldc 130", c, want, LDC * NN);
	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
}

// FP16 inputs, FP32 compute; FP32 or FP16 output.
static void
gemmex(cublasHandle_t h, int exact, int out16)
{
	static __half ha[S * S], hb[S * S], hc[S * S];
	static float a[S * S], b[S * S], c[S * S], want[S * S];
	float one = 1, zero = 0;
	void *da, *db, *dc;
	int r = out16 ? 2 : 4;
	char what[32];

	for (int i = 0; i < S * S; i++) {
		ha[i] = __float2half(exact ? ival(6, i, r) : fval(6, i));
		hb[i] = __float2half(exact ? ival(7, i, r) : fval(7, i));
		a[i] = __half2float(ha[i]);
		b[i] = __half2float(hb[i]);
	}
	CK(cudaMalloc(&da, sizeof(ha)));
	CK(cudaMalloc(&db, sizeof(hb)));
	CK(cudaMalloc(&dc, sizeof(c)));
	CK(cudaMemcpy(da, ha, sizeof(ha), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, hb, sizeof(hb), cudaMemcpyHostToDevice));
	BK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, S, S, S, &one, da,
	    CUDA_R_16F, S, db, CUDA_R_16F, S, &zero, dc,
	    out16 ? CUDA_R_16F : CUDA_R_32F, S, CUBLAS_COMPUTE_32F,
	    CUBLAS_GEMM_DEFAULT));
	if (out16) {
		CK(cudaMemcpy(hc, dc, sizeof(hc), cudaMemcpyDeviceToHost));
		for (int i = 0; i < S * S; i++)
			c[i] = __half2float(hc[i]);
		printf("gemmex f16 out %s: fnv1a64 of halves %016llx\n",
		    exact ? "integer" : "fraction", fnv(hc, sizeof(hc)));
	} else
		CK(cudaMemcpy(c, dc, sizeof(c), cudaMemcpyDeviceToHost));
	if (exact)
		cpu_gemm(0, S, S, S, 1, a, S, b, S, 0, want, S);
	snprintf(what, sizeof(what), "gemmex f16>%s %s", out16 ? "f16" : "f32",
	    exact ? "integer" : "fraction");
	report(what, c, exact ? want : NULL, S * S);
	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
}

int
main()
{
	cublasHandle_t h;
	cudaStream_t s;

	CK(cudaStreamCreate(&s));
	BK(cublasCreate(&h));
	BK(cublasSetStream(h, s));
	sgemm(h, 1);
	sgemm(h, 0);
	sgemm_odd(h, s);
	gemmex(h, 1, 0);
	gemmex(h, 0, 0);
	gemmex(h, 1, 1);
	gemmex(h, 0, 1);
	BK(cublasDestroy(h));
	CK(cudaStreamDestroy(s));
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
