/*
 * The arithmetic of bench/workloads/infer.cu's own kernels (its -K mode),
 * shared by three implementations that must agree bit for bit: the CUDA
 * kernels, their host implementations for gleam-serve's host backend
 * (tests/cuda/host-kernels.c), and the program's CPU reference (-R).
 *
 * Every float operation is a single IEEE operation rounded to nearest:
 * __fadd_rn and friends in device code, which nvcc never contracts into an
 * FMA; plain operators on the host, where the including file must be
 * compiled with -ffp-contract=off (x86-64 uses SSE, so there is no excess
 * precision).  Nothing calls the C library's or CUDA's transcendental
 * functions, whose last bits differ: exp is a polynomial written here.
 * Sums run in one fixed order per output element, and a row's reductions
 * follow the tree of IM_RED_THREADS threads that the kernels use.
 *
 * C and CUDA C++ both include this file.
 */
#ifndef GLEAM_INFER_MATH_H
#define GLEAM_INFER_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define IM_HD	__host__ __device__ static inline
#else
#define IM_HD	static inline
#endif

/* Threads of the layernorm and softmax blocks: one block a row. */
#define IM_RED_THREADS	256
/* The tiled GEMM's tile: blocks of IM_TILE x IM_TILE threads. */
#define IM_TILE		16
/* Layernorm's epsilon. */
#define IM_LN_EPS	1e-5f

IM_HD float
im_add(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fadd_rn(a, b);
#else
	return a + b;
#endif
}

IM_HD float
im_sub(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fsub_rn(a, b);
#else
	return a - b;
#endif
}

IM_HD float
im_mul(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fmul_rn(a, b);
#else
	return a * b;
#endif
}

IM_HD float
im_div(float a, float b)
{
#ifdef __CUDA_ARCH__
	return __fdiv_rn(a, b);
#else
	return a / b;
#endif
}

IM_HD float
im_sqrt(float a)
{
#ifdef __CUDA_ARCH__
	return __fsqrt_rn(a);
#else
	return sqrtf(a);
#endif
}

/* 2^k for -126 <= k <= 127, built from its bits. */
IM_HD float
im_pow2(int k)
{
	uint32_t u = (uint32_t)(k + 127) << 23;
	float f;

#ifdef __CUDA_ARCH__
	f = __uint_as_float(u);
#else
	memcpy(&f, &u, sizeof f);
#endif
	return f;
}

/*
 * e^x, to a few ulp, for x clamped to [-80, 80] (the result stays a
 * normal number): x = k ln 2 + r with |r| <= ln 2 / 2, then 2^k times a
 * degree-7 Taylor polynomial of e^r.
 */
IM_HD float
im_exp(float x)
{
	/* Hexadecimal: the same bits whichever compiler reads them. */
	const float log2e = 0x1.715476p+0f, ln2_hi = 0x1.62e4p-1f,
	    ln2_lo = 0x1.7f7d1cp-20f;
	float k, r, p;

	if (!(x > -80.0f))	/* NaN too */
		x = -80.0f;
	if (x > 80.0f)
		x = 80.0f;
	k = floorf(im_add(im_mul(x, log2e), 0.5f));
	r = im_sub(x, im_mul(k, ln2_hi));
	r = im_sub(r, im_mul(k, ln2_lo));
	p = 0x1.a01a02p-13f;				/* 1/7! */
	p = im_add(im_mul(p, r), 0x1.6c16c2p-10f);	/* 1/6! */
	p = im_add(im_mul(p, r), 0x1.111112p-7f);	/* 1/5! */
	p = im_add(im_mul(p, r), 0x1.555556p-5f);	/* 1/4! */
	p = im_add(im_mul(p, r), 0x1.555556p-3f);	/* 1/3! */
	p = im_add(im_mul(p, r), 0.5f);
	p = im_add(im_mul(p, r), 1.0f);
	p = im_add(im_mul(p, r), 1.0f);
	return im_mul(p, im_pow2((int)k));
}

/* GELU in its sigmoid form (Hendrycks and Gimpel): x sigma(1.702 x). */
IM_HD float
im_gelu(float x)
{
	return im_div(x, im_add(1.0f, im_exp(im_mul(-0x1.b3b646p+0f, x))));
}

/* The larger of a and b; a when they compare equal. */
IM_HD float
im_max(float a, float b)
{
	return b > a ? b : a;
}

/* The reduction tree of one block: part[0] ends up holding the total. */
IM_HD void
im_tree_sum(float *part)
{
	for (int s = IM_RED_THREADS / 2; s > 0; s >>= 1)
		for (int t = 0; t < s; t++)
			part[t] = im_add(part[t], part[t + s]);
}

IM_HD void
im_tree_max(float *part)
{
	for (int s = IM_RED_THREADS / 2; s > 0; s >>= 1)
		for (int t = 0; t < s; t++)
			part[t] = im_max(part[t], part[t + s]);
}

/*
 * One row of layernorm on the host, as a block of IM_RED_THREADS threads
 * computes it: thread t sums elements t, t + IM_RED_THREADS, ... in order,
 * then the tree adds the partial sums.
 */
static inline void
im_layernorm_row(const float *in, float *out, const float *g,
    const float *b, int n)
{
	float part[IM_RED_THREADS], mean, rstd, d;
	int t, j;

	for (t = 0; t < IM_RED_THREADS; t++)
		for (part[t] = 0.0f, j = t; j < n; j += IM_RED_THREADS)
			part[t] = im_add(part[t], in[j]);
	im_tree_sum(part);
	mean = im_div(part[0], (float)n);
	for (t = 0; t < IM_RED_THREADS; t++)
		for (part[t] = 0.0f, j = t; j < n; j += IM_RED_THREADS) {
			d = im_sub(in[j], mean);
			part[t] = im_add(part[t], im_mul(d, d));
		}
	im_tree_sum(part);
	rstd = im_div(1.0f, im_sqrt(im_add(im_div(part[0], (float)n),
	    IM_LN_EPS)));
	for (j = 0; j < n; j++)
		out[j] = im_add(im_mul(im_mul(im_sub(in[j], mean), rstd), g[j]),
		    b[j]);
}

/* One row of softmax(scale * p) on the host, in place, as the kernel. */
static inline void
im_softmax_row(float *p, int n, float scale)
{
	float part[IM_RED_THREADS], m, sum;
	int t, j;

	for (t = 0; t < IM_RED_THREADS; t++)
		for (part[t] = -INFINITY, j = t; j < n; j += IM_RED_THREADS)
			part[t] = im_max(part[t], im_mul(p[j], scale));
	im_tree_max(part);
	m = part[0];
	for (j = 0; j < n; j++)
		p[j] = im_exp(im_sub(im_mul(p[j], scale), m));
	for (t = 0; t < IM_RED_THREADS; t++)
		for (part[t] = 0.0f, j = t; j < n; j += IM_RED_THREADS)
			part[t] = im_add(part[t], p[j]);
	im_tree_sum(part);
	sum = part[0];
	for (j = 0; j < n; j++)
		p[j] = im_div(p[j], sum);
}

/*
 * One element of C = A op(B): the sum over k = 0, 1, ... of
 * A[i][k] B'[k][j], where B'[k][j] is B[k * ldb + j], or B[j * ldb + k]
 * when transposed.
 */
static inline float
im_gemm_elem(const float *a, const float *b, int ldb, int transb, int k,
    int j)
{
	float acc = 0.0f;

	for (int kk = 0; kk < k; kk++)
		acc = im_add(acc, im_mul(a[kk], transb ? b[(long)j * ldb + kk] :
		    b[(long)kk * ldb + j]));
	return acc;
}

#endif
