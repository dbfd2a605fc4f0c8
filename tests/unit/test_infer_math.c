/*
 * Unit tests for bench/workloads/infer-math.h, the arithmetic that infer's
 * kernels, their host implementations and its CPU reference share: each
 * function against the same computation in double precision.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../bench/workloads/infer-math.h"
#include "t.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Uniform in [-1, 1). */
static float
uni(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)(rng >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static double
relerr(double got, double want)
{
	return fabs(got - want) / (fabs(want) > 1e-30 ? fabs(want) : 1e-30);
}

int
main(void)
{
	static float a[4 * 37], b[37 * 5], p[1000], o[1000], q[1000],
	    g[1000], z[1000];
	double worst = 0.0, s, m, v;
	int i, j, k, ok;

	/* exp: within 4 ulp over its whole range; exact at 0; clamped. */
	for (i = -8000; i <= 8000; i++) {
		double x = i / 100.0, e = relerr(im_exp((float)x), exp((float)x));

		if (e > worst)
			worst = e;
	}
	CHECK(worst < 4 * 1.1920929e-7);
	CHECK(im_exp(0.0f) == 1.0f);
	CHECK(im_exp(-1000.0f) == im_exp(-80.0f));
	CHECK(im_exp(1000.0f) == im_exp(80.0f));
	CHECK(im_exp(NAN) == im_exp(-80.0f));
	CHECK(isnormal(im_exp(-80.0f)) && isfinite(im_exp(80.0f)));
	CHECK(im_pow2(-126) == 0x1p-126f && im_pow2(127) == 0x1p127f &&
	    im_pow2(0) == 1.0f);

	/* GELU, x sigma(1.702 x). */
	CHECK(im_gelu(0.0f) == 0.0f);
	for (ok = 1, i = -600; i <= 600; i++) {
		double x = i / 50.0, want = x / (1.0 + exp(-1.702 * x));

		if (fabs(im_gelu((float)x) - want) > 1e-6 * (1 + fabs(want)))
			ok = 0;
	}
	CHECK(ok);

	/* The reduction tree: exact on integers. */
	for (i = 0; i < IM_RED_THREADS; i++)
		p[i] = (float)i;
	im_tree_sum(p);
	CHECK(p[0] == 32640.0f);
	for (i = 0; i < IM_RED_THREADS; i++)
		p[i] = (float)((i * 37) % 256);
	im_tree_max(p);
	CHECK(p[0] == 255.0f);

	/* Layernorm of 1000 (4 elements a thread, some 3): mean 0, var 1. */
	for (i = 0; i < 1000; i++) {
		p[i] = 3.0f + 2.0f * uni();
		g[i] = 1.0f;
		z[i] = 0.0f;
	}
	im_layernorm_row(p, o, g, z, 1000);
	for (s = 0.0, i = 0; i < 1000; i++)
		s += p[i];
	m = s / 1000;
	for (v = 0.0, i = 0; i < 1000; i++)
		v += (p[i] - m) * (p[i] - m);
	v /= 1000;
	for (ok = 1, i = 0; i < 1000; i++)
		if (fabs(o[i] - (p[i] - m) / sqrt(v + 1e-5)) > 1e-4)
			ok = 0;
	CHECK(ok);
	/* Gain and bias apply after the normalisation. */
	for (i = 0; i < 1000; i++) {
		g[i] = 2.0f;
		z[i] = 0.5f;
	}
	im_layernorm_row(p, q, g, z, 1000);
	CHECK(fabs(q[7] - (2.0 * o[7] + 0.5)) < 2e-4);

	/* Softmax of 300 with a scale: sums to 1, matches double. */
	for (i = 0; i < 300; i++)
		o[i] = p[i] = 4.0f * uni();
	im_softmax_row(p, 300, 0.5f);
	for (m = -INFINITY, i = 0; i < 300; i++)
		m = fmax(m, 0.5 * o[i]);
	for (s = 0.0, i = 0; i < 300; i++)
		s += exp(0.5 * o[i] - m);
	for (v = 0.0, ok = 1, i = 0; i < 300; i++) {
		v += p[i];
		if (relerr(p[i], exp(0.5 * o[i] - m) / s) > 1e-5)
			ok = 0;
	}
	CHECK(ok);
	CHECK(fabs(v - 1.0) < 1e-5);

	/* A GEMM element, B plain (37 x 5) and transposed (5 x 37). */
	for (i = 0; i < 4 * 37; i++)
		a[i] = uni();
	for (i = 0; i < 37 * 5; i++)
		b[i] = uni();
	for (ok = 1, i = 0; i < 4; i++)
		for (j = 0; j < 5; j++) {
			double want = 0.0, wantt = 0.0;

			for (k = 0; k < 37; k++) {
				want += (double)a[i * 37 + k] * b[k * 5 + j];
				wantt += (double)a[i * 37 + k] * b[j * 37 + k];
			}
			if (fabs(im_gemm_elem(a + i * 37, b, 5, 0, 37, j) - want) >
			    1e-5 || fabs(im_gemm_elem(a + i * 37, b, 37, 1, 37,
			    j) - wantt) > 1e-5)
				ok = 0;
		}
	CHECK(ok);
	/* Integers are exact; the order is k = 0, 1, ...: the first term. */
	for (i = 0; i < 37; i++)
		a[i] = (float)(i % 7), b[i] = (float)(i % 5);
	CHECK(im_gemm_elem(a, b, 1, 0, 37, 0) == 211.0f);
	CHECK(im_gemm_elem(a, b, 1, 0, 0, 0) == 0.0f);
	a[0] = 1e20f, a[1] = 1.0f, b[0] = 1.0f, b[1] = 1.0f, a[2] = -1e20f,
	    b[2] = 1.0f;
	CHECK(im_gemm_elem(a, b, 1, 0, 3, 0) == 0.0f);	/* 1 is absorbed */
	return t_done("test_infer_math");
}
