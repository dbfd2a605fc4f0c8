// The kernels of bench/workloads/infer.cu, also replayed from a CUDA graph
// by graph-replay.cu: one definition, so that both run the same code and
// the host backend's implementations (tests/cuda/host-kernels.c, by
// mangled name) apply to both.  Their arithmetic is infer-math.h's.
#ifndef GLEAM_INFER_KERNELS_CUH
#define GLEAM_INFER_KERNELS_CUH

#include "infer-math.h"

// x[t] = tok[ids[t]] + pos[t % seq]; an id out of range wraps.
__global__ void
embed(float *x, const int *ids, const float *tok, const float *pos,
    int ntok, int seq, int d, int vocab)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < ntok * d) {
		int t = i / d, j = i % d;
		unsigned id = (unsigned)ids[t] % (unsigned)vocab;

		x[i] = im_add(tok[(size_t)id * d + j], pos[(t % seq) * d + j]);
	}
}

// y[r][j] += b[j]
__global__ void
add_bias(float *y, const float *b, int rows, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < rows * n)
		y[i] = im_add(y[i], b[i % n]);
}

// y[r][j] = gelu(y[r][j] + b[j])
__global__ void
bias_gelu(float *y, const float *b, int rows, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < rows * n)
		y[i] = im_gelu(im_add(y[i], b[i % n]));
}

// x[r][j] += y[r][j] + b[j]
__global__ void
bias_residual(float *x, const float *y, const float *b, int rows, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < rows * n)
		x[i] = im_add(x[i], im_add(y[i], b[i % n]));
}

// The block's tree over part[], as im_tree_sum/im_tree_max do it.
__device__ static void
block_tree(float *part, int max)
{
	int t = threadIdx.x;

	__syncthreads();
	for (int s = IM_RED_THREADS / 2; s > 0; s >>= 1) {
		if (t < s)
			part[t] = max ? im_max(part[t], part[t + s]) :
			    im_add(part[t], part[t + s]);
		__syncthreads();
	}
}

// out[r] = layernorm(in[r * in_stride ...]) * g + b; one block a row.
__global__ void
layernorm(const float *in, int in_stride, float *out, const float *g,
    const float *b, int rows, int n)
{
	__shared__ float part[IM_RED_THREADS];
	int r = blockIdx.x, t = threadIdx.x, j;
	const float *x = in + (size_t)r * in_stride;
	float *y = out + (size_t)r * n, s, mean, rstd, d;

	if (blockDim.x != IM_RED_THREADS || r >= rows)
		return;
	for (s = 0.0f, j = t; j < n; j += IM_RED_THREADS)
		s = im_add(s, x[j]);
	part[t] = s;
	block_tree(part, 0);
	mean = im_div(part[0], (float)n);
	__syncthreads();
	for (s = 0.0f, j = t; j < n; j += IM_RED_THREADS) {
		d = im_sub(x[j], mean);
		s = im_add(s, im_mul(d, d));
	}
	part[t] = s;
	block_tree(part, 0);
	rstd = im_div(1.0f, im_sqrt(im_add(im_div(part[0], (float)n),
	    IM_LN_EPS)));
	for (j = t; j < n; j += IM_RED_THREADS)
		y[j] = im_add(im_mul(im_mul(im_sub(x[j], mean), rstd), g[j]),
		    b[j]);
}

// p[r] = softmax(scale * p[r]), in place; one block a row.
__global__ void
softmax(float *p, int rows, int n, float scale)
{
	__shared__ float part[IM_RED_THREADS];
	int r = blockIdx.x, t = threadIdx.x, j;
	float *x = p + (size_t)r * n, s, m;

	if (blockDim.x != IM_RED_THREADS || r >= rows)
		return;
	for (s = -INFINITY, j = t; j < n; j += IM_RED_THREADS)
		s = im_max(s, im_mul(x[j], scale));
	part[t] = s;
	block_tree(part, 1);
	m = part[0];
	__syncthreads();
	for (s = 0.0f, j = t; j < n; j += IM_RED_THREADS) {
		x[j] = im_exp(im_sub(im_mul(x[j], scale), m));
		s = im_add(s, x[j]);
	}
	part[t] = s;
	block_tree(part, 0);
	for (j = t; j < n; j += IM_RED_THREADS)
		x[j] = im_div(x[j], part[0]);
}

// C[z] = A[z] op(B[z]) for z = blockIdx.z: M x K times K x N, row-major,
// B transposed (N x K) if transb.  Tiles through shared memory; each
// thread sums its element over k in order, as im_gemm_elem.
__global__ void
gemm_tiled(const float *A, int lda, long long sa, const float *B, int ldb,
    long long sb, int transb, float *C, int ldc, long long sc, int M, int N,
    int K)
{
	__shared__ float as[IM_TILE][IM_TILE], bs[IM_TILE][IM_TILE + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * IM_TILE + ty, col = blockIdx.x * IM_TILE + tx;
	float acc = 0.0f;

	if (blockDim.x != IM_TILE || blockDim.y != IM_TILE)
		return;
	A += blockIdx.z * sa;
	B += blockIdx.z * sb;
	C += blockIdx.z * sc;
	for (int k0 = 0; k0 < K; k0 += IM_TILE) {
		int ka = k0 + tx, kb = k0 + ty, kend = K - k0;

		as[ty][tx] = row < M && ka < K ? A[(size_t)row * lda + ka] :
		    0.0f;
		bs[ty][tx] = kb < K && col < N ? (transb ?
		    B[(size_t)col * ldb + kb] : B[(size_t)kb * ldb + col]) :
		    0.0f;
		__syncthreads();
		if (kend > IM_TILE)
			kend = IM_TILE;
		for (int kk = 0; kk < kend; kk++)
			acc = im_add(acc, im_mul(as[ty][kk], bs[kk][tx]));
		__syncthreads();
	}
	if (row < M && col < N)
		C[(size_t)row * ldc + col] = acc;
}

#endif
