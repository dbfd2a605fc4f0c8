/*
 * Unit tests for lib/hcodec.c: full rounds of W workers through both
 * implementations, decoded sums against the dense fixed-point sum bit for
 * bit, the 2-core, the round structure of the schedule, the numbers
 * (rounding, scale, conversion back) and every error code.
 */
#include <sys/wait.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hcodec.h"
#include "t.h"
#include "util.h"

enum support { SUP_RANDOM, SUP_SAME, SUP_DISJOINT };

struct tcase {
	size_t		n;
	unsigned	block;
	unsigned	k;
	int		bits;
	int		W;
	double		density;
	enum support	sup;
	int		elo, ehi;	/* exponents of the values */
	uint64_t	seed;
};

static size_t trips, cores_seen, cores_total, rounds_max;

#define rnd splitmix64

static double
rnd_unit(uint64_t *st)
{
	return (double)(rnd(st) >> 11) / 9007199254740992.0;
}

/* A nonzero value: random sign, mantissa and exponent, now and then tiny. */
static float
rnd_value(uint64_t *st, int elo, int ehi)
{
	uint64_t r = rnd(st);
	float m = 1.0f + (float)((r >> 8) & 0x7fffff) / 8388608.0f;
	int e = elo + (int)((r >> 40) % (uint64_t)(ehi - elo + 1));

	if ((r & 63) == 0)
		e = elo - 20;
	if ((r & 1023) == 1)
		return (r & 2) ? 0x1p-149f : -0x1p-140f;
	return (r & 4) ? -ldexpf(m, e) : ldexpf(m, e);
}

static uint32_t
fbits(float v)
{
	uint32_t w;

	memcpy(&w, &v, sizeof w);
	return w;
}

static int
bit_test(const uint8_t *b, size_t i)
{
	return (b[i / 8] >> (i % 8)) & 1;
}

static int
cellbytes(int bits)
{
	return bits / 8;
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL) {
		perror("calloc");
		exit(2);
	}
	return p;
}

static float **
gradients(const struct tcase *tc)
{
	float **g = xcalloc((size_t)tc->W, sizeof *g);
	uint64_t st = tc->seed;
	size_t i;
	int w;

	for (w = 0; w < tc->W; w++)
		g[w] = xcalloc(tc->n, sizeof **g);
	for (i = 0; i < tc->n; i++) {
		if (rnd_unit(&st) >= tc->density)
			continue;
		switch (tc->sup) {
		case SUP_RANDOM:
			for (w = 0; w < tc->W; w++)
				if (rnd_unit(&st) < 0.7 || w == 0)
					g[w][i] = rnd_value(&st, tc->elo,
					    tc->ehi);
			break;
		case SUP_SAME:
			for (w = 0; w < tc->W; w++)
				g[w][i] = rnd_value(&st, tc->elo, tc->ehi);
			break;
		case SUP_DISJOINT:
			w = (int)(rnd(&st) % (uint64_t)tc->W);
			g[w][i] = rnd_value(&st, tc->elo, tc->ehi);
			break;
		}
	}
	return g;
}

/*
 * Plays the schedule as a GPU would, a round at a time: every entry's cell
 * must hold its coordinate alone when its round starts, and a round must be
 * in ascending coordinates.
 */
static int
schedule_ok(const struct hc_layout_info *in, const uint8_t *ubits)
{
	uint32_t *cnt;
	uint64_t e, prev;
	size_t i, r, x, b, t, c;
	unsigned j;
	int ok = 1;

	if (in->peel == NULL)
		return in->union_count == in->core_count ? 1 : 0;
	if (in->round_start[0] != 0 || in->round_start[in->nrounds] +
	    in->core_count != in->union_count)
		return 0;
	cnt = xcalloc(in->cells, sizeof *cnt);
	for (i = 0; i < in->n; i++) {
		if (!((ubits[i / 8] >> (i % 8)) & 1))
			continue;
		for (c = 0; c < in->core_count && in->core[c] != i; c++)
			;
		if (c < in->core_count)
			continue;
		for (j = 0; j < in->k; j++)
			cnt[(size_t)in->block_rows[i / in->block * in->k + j] *
			    in->block + i % in->block]++;
	}
	for (r = 0; r < in->nrounds && ok; r++) {
		prev = 0;
		for (x = in->round_start[r]; x < in->round_start[r + 1]; x++) {
			e = in->peel[x];
			b = (size_t)(e >> 20);
			t = (size_t)(e >> 4) & 0xffff;
			j = (unsigned)(e & 15);
			i = b * in->block + t;
			if (j >= in->k || i >= in->n ||
			    !((ubits[i / 8] >> (i % 8)) & 1) ||
			    (x > in->round_start[r] && i <= prev) ||
			    cnt[(size_t)in->block_rows[b * in->k + j] *
			    in->block + t] != 1)
				ok = 0;
			prev = i;
		}
		for (x = in->round_start[r]; x < in->round_start[r + 1]; x++) {
			e = in->peel[x];
			b = (size_t)(e >> 20);
			t = (size_t)(e >> 4) & 0xffff;
			for (j = 0; j < in->k; j++)
				cnt[(size_t)in->block_rows[b * in->k + j] *
				    in->block + t]--;
		}
	}
	for (c = 0; c < in->cells && ok; c++)
		if (cnt[c] != 0)
			ok = 0;
	free(cnt);
	return ok;
}

/* Each fixed-point sum is within W half-units of the float64 sum. */
static int
error_ok(const struct tcase *tc, float **g, const float *out, int s)
{
	double sum, mag, tol;
	size_t i;
	int w;

	for (i = 0; i < tc->n; i++) {
		sum = mag = 0;
		for (w = 0; w < tc->W; w++) {
			sum += g[w][i];
			mag += fabs(g[w][i]);
		}
		if (isinf(out[i]))
			continue;
		tol = tc->W * ldexp(0.5, -s) + mag * 0x1p-50 +
		    fabs(sum) * 0x1p-23;
		if (fabs((double)out[i] - sum) > tol) {
			fprintf(stderr, "coordinate %zu: %.9g, not %.9g\n", i,
			    (double)out[i], sum);
			return 0;
		}
	}
	return 1;
}

/*
 * A whole round: bitmaps and exponents merged, the scale, then for each
 * implementation the layout, W payloads, their sum and its decoding.
 */
static void
round_trip(const struct tcase *tc)
{
	struct hc_params p;
	struct hc_layout *L[2] = { NULL, NULL };
	struct hc_layout_info info[2];
	float **g = gradients(tc), *out[2], *dense_f;
	uint8_t *ub, *bw;
	void *pay[2], *sum[2], *spent, *fixed[2], *dense;
	size_t nb = hc_bitmap_bytes(tc->n), np, cb = (size_t)cellbytes(tc->bits);
	int e, emax = HC_EXP_ZERO, s, w, m, ok;
	const float *const *cg = (const float *const *)g;

	ub = xcalloc(nb, 1);
	bw = xcalloc(nb, 1);
	ok = 1;
	for (w = 0; w < tc->W; w++) {
		ok &= hc_bitmap(g[w], tc->n, bw, &e) == 0;
		ok &= hc_merge_or(ub, tc->n, bw, tc->n) == 0;
		ok &= hc_merge_max(&emax, e) == 0;
	}
	CHECK(ok);
	CHECK(hc_scale(emax, tc->W, tc->bits, &s) == 0);

	for (m = 0; m < 2; m++) {
		hc_params_init(&p, tc->n, tc->bits);
		p.block = tc->block;
		p.k = tc->k;
		p.seed = tc->seed;
		p.impl = m == 0 ? HC_IMPL_FAST : HC_IMPL_REF;
		CHECK(hc_layout_new(&p, ub, &L[m]) == 0);
		if (L[m] == NULL)
			goto out;
		hc_layout_info(L[m], &info[m]);
	}
	CHECK(info[0].rows == info[1].rows && info[0].cells == info[1].cells);
	CHECK(info[0].core_count == info[1].core_count &&
	    (info[0].core_count == 0 || memcmp(info[0].core, info[1].core,
	    info[0].core_count * sizeof *info[0].core) == 0));
	CHECK(schedule_ok(&info[0], ub));
	trips++;
	cores_total += info[0].core_count;
	if (info[0].core_count > 0)
		cores_seen++;
	if (info[0].nrounds > rounds_max)
		rounds_max = info[0].nrounds;

	np = hc_layout_payload(L[0]);
	dense = xcalloc(tc->n, cb);
	dense_f = xcalloc(tc->n, sizeof *dense_f);
	spent = xcalloc(np, cb);
	CHECK(hc_dense_fixed(cg, tc->W, tc->n, s, tc->bits, dense) == 0);
	CHECK(hc_fixed_to_float(dense, tc->n, tc->bits, s, dense_f) == 0);
	for (m = 0; m < 2; m++) {
		pay[m] = xcalloc(np, cb);
		sum[m] = xcalloc(np, cb);
		fixed[m] = xcalloc(tc->n, cb);
		out[m] = xcalloc(tc->n, sizeof *out[m]);
	}
	ok = 1;
	for (w = 0; w < tc->W; w++) {
		for (m = 0; m < 2; m++) {
			ok &= hc_encode(L[m], g[w], s, pay[m]) == 0;
			ok &= hc_merge_sum(sum[m], np, pay[m], np,
			    tc->bits) == 0;
		}
		ok &= memcmp(pay[0], pay[1], np * cb) == 0;
	}
	CHECK(ok);
	CHECK(memcmp(sum[0], sum[1], np * cb) == 0);
	for (m = 0; m < 2; m++) {
		memcpy(spent, sum[m], np * cb);
		CHECK(hc_decode_fixed(L[m], spent, fixed[m]) == 0);
		CHECK(memcmp(fixed[m], dense, tc->n * cb) == 0);
		memcpy(spent, sum[m], np * cb);
		CHECK(hc_decode(L[m], spent, s, out[m]) == 0);
		CHECK(memcmp(out[m], dense_f, tc->n * sizeof *dense_f) == 0);
	}
	CHECK(error_ok(tc, g, out[0], s));
	if (t_fail > 0 && getenv("HC_VERBOSE") != NULL)
		fprintf(stderr, "case n=%zu B=%u k=%u bits=%d W=%d d=%g "
		    "sup=%d: R=%u core=%zu rounds=%zu\n", tc->n, tc->block,
		    tc->k, tc->bits, tc->W, tc->density, tc->sup,
		    info[0].rows, info[0].core_count, info[0].nrounds);
	for (m = 0; m < 2; m++) {
		free(pay[m]);
		free(sum[m]);
		free(fixed[m]);
		free(out[m]);
	}
	free(dense);
	free(dense_f);
	free(spent);
out:
	hc_layout_free(L[0]);
	hc_layout_free(L[1]);
	for (w = 0; w < tc->W; w++)
		free(g[w]);
	free(g);
	free(ub);
	free(bw);
}

static void
test_round_trips(void)
{
	static const size_t small[] = { 1, 7, 8, 9, 100, 1023, 1024, 1025,
	    3 * 1024 + 5, 20000 };
	static const double dens[] = { 0, 0.00001, 0.001, 0.01, 0.1, 0.5, 1.0 };
	static const int ws[] = { 1, 2, 5, 16 };
	struct tcase tc;
	size_t a, d, w;
	uint64_t seed = 1;

	/* Many sizes, densities, W and supports, both cell types. */
	for (a = 0; a < sizeof small / sizeof small[0]; a++)
		for (d = 0; d < sizeof dens / sizeof dens[0]; d++)
			for (w = 0; w < sizeof ws / sizeof ws[0]; w++) {
				memset(&tc, 0, sizeof tc);
				tc.n = small[a];
				tc.block = HC_BLOCK;
				tc.k = HC_K;
				tc.bits = (a + d + w) % 2 ? 64 : 32;
				tc.W = ws[w];
				tc.density = dens[d];
				tc.sup = (enum support)((a + d + w) % 3);
				tc.elo = -12;
				tc.ehi = 4;
				tc.seed = seed++;
				round_trip(&tc);
			}

	/* Other blocks and k, small blocks giving big R. */
	{
		static const unsigned blocks[] = { 1, 3, 7, 64, 4096, 65536 };
		static const unsigned ks[] = { 2, 3, 4, 8 };

		for (a = 0; a < sizeof blocks / sizeof blocks[0]; a++)
			for (d = 0; d < sizeof ks / sizeof ks[0]; d++) {
				memset(&tc, 0, sizeof tc);
				tc.n = 5000 + a;
				tc.block = blocks[a];
				tc.k = ks[d];
				tc.bits = d % 2 ? 64 : 32;
				tc.W = 3;
				tc.density = 0.05 * (double)(d + 1);
				tc.sup = (enum support)(a % 3);
				tc.elo = -3;
				tc.ehi = 3;
				tc.seed = seed++;
				round_trip(&tc);
			}
	}

	/* Wide exponents: rounding everywhere, values that round to 0. */
	memset(&tc, 0, sizeof tc);
	tc.n = 50000;
	tc.block = 512;
	tc.k = 3;
	tc.bits = 32;
	tc.W = 7;
	tc.density = 0.2;
	tc.sup = SUP_RANDOM;
	tc.elo = -60;
	tc.ehi = 60;
	tc.seed = seed++;
	round_trip(&tc);
	tc.bits = 64;
	tc.seed = seed++;
	round_trip(&tc);
	/* Near FLT_MAX: the float sums overflow to Inf both ways. */
	tc.elo = 120;
	tc.ehi = 127;
	tc.W = 16;
	tc.seed = seed++;
	round_trip(&tc);
	/* Subnormals only: s is 149, nothing rounds. */
	tc.elo = -149 + 20;
	tc.ehi = -127;
	tc.seed = seed++;
	round_trip(&tc);

	/* Large: a few million, sparse to half dense. */
	memset(&tc, 0, sizeof tc);
	tc.block = HC_BLOCK;
	tc.k = HC_K;
	tc.elo = -20;
	tc.ehi = 0;
	tc.n = (size_t)1 << 20;
	tc.W = 4;
	tc.bits = 32;
	tc.sup = SUP_RANDOM;
	tc.density = 0.00001;
	tc.seed = seed++;
	round_trip(&tc);
	tc.density = 0.01;
	tc.seed = seed++;
	round_trip(&tc);
	tc.density = 0.5;
	tc.W = 2;
	tc.bits = 64;
	tc.seed = seed++;
	round_trip(&tc);
	tc.n = 3 * ((size_t)1 << 20) + 123;
	tc.density = 0.01;
	tc.W = 2;
	tc.bits = 32;
	tc.sup = SUP_DISJOINT;
	tc.seed = seed++;
	round_trip(&tc);
}

/*
 * A 2-core on purpose: blocks 0 and 1 drawn to the same rows put both
 * items of every lane in the same k cells, where peeling cannot start.
 * The whole union then travels densely, and still decodes exactly.
 */
static void
test_core(void)
{
	struct hc_params p;
	struct hc_layout *L;
	struct hc_layout_info in;
	uint32_t r0[HC_K], r1[HC_K];
	uint64_t seed;
	uint8_t ub[2] = { 0xff, 0x00 };
	float g0[16], g1[16], out[16];
	const float *gs[2] = { g0, g1 };
	int32_t pay[64], sum[64], fixed[16], dense[16];
	size_t i, found = 0;
	int s, same, m;

	/* B = 4, u_t = 2 in every lane: R = ceil(2.5) + 2 = 5. */
	for (seed = 0; seed < 1000 && !found; seed++) {
		hc_block_rows(seed, 0, 5, 3, r0);
		hc_block_rows(seed, 1, 5, 3, r1);
		same = 0;
		for (i = 0; i < 3; i++)
			same += r1[i] == r0[0] || r1[i] == r0[1] ||
			    r1[i] == r0[2];
		if (same == 3)
			found = 1;
	}
	CHECK(found);
	seed--;
	for (i = 0; i < 16; i++) {
		g0[i] = i < 8 ? (float)i - 3.25f : 0;
		g1[i] = i < 8 && i % 3 ? 1.0f / (float)(i + 1) : 0;
	}
	CHECK(hc_scale(2, 2, 32, &s) == 0);
	CHECK(hc_dense_fixed(gs, 2, 16, s, 32, dense) == 0);
	for (m = 0; m < 2; m++) {
		hc_params_init(&p, 16, 32);
		p.block = 4;
		p.seed = seed;
		p.impl = m;
		CHECK(hc_layout_new(&p, ub, &L) == 0);
		if (L == NULL)
			return;
		hc_layout_info(L, &in);
		CHECK(in.rows == 5 && in.cells == 20);
		CHECK(in.core_count == 8);
		for (i = 0; i < in.core_count; i++)
			CHECK(in.core[i] == i);
		CHECK(hc_layout_payload(L) == 28);
		memset(sum, 0, sizeof sum);
		CHECK(hc_encode(L, g0, s, pay) == 0);
		CHECK(hc_merge_sum(sum, 28, pay, 28, 32) == 0);
		CHECK(hc_encode(L, g1, s, pay) == 0);
		CHECK(hc_merge_sum(sum, 28, pay, 28, 32) == 0);
		/* Nothing in the sketch: C left it. */
		for (i = 0; i < 20; i++)
			CHECK(sum[i] == 0);
		memcpy(pay, sum, sizeof sum);
		CHECK(hc_decode_fixed(L, pay, fixed) == 0);
		CHECK(memcmp(fixed, dense, sizeof dense) == 0);
		CHECK(hc_decode(L, sum, s, out) == 0);
		for (i = 0; i < 16; i++)
			CHECK(out[i] == hc_dequantize(dense[i], s));
		hc_layout_free(L);
	}

	/*
	 * Cores that arise by chance (one lane, few items, small R; k = 2
	 * gives big ones): round_trip compares them across implementations.
	 */
	cores_seen = 0;
	for (i = 0; i < 200; i++) {
		struct tcase tc;

		memset(&tc, 0, sizeof tc);
		tc.n = 12 + i % 20;
		tc.block = 1;
		tc.k = i % 4 == 0 ? 2 : 3;
		tc.bits = 32 << (i % 2);
		tc.W = 1 + (int)(i % 4);
		tc.density = 0.6;
		tc.sup = (enum support)(i % 3);
		tc.elo = -4;
		tc.ehi = 4;
		tc.seed = 1000 + i;
		round_trip(&tc);
	}
	CHECK(cores_seen > 20);
}

static void
test_numbers(void)
{
	int64_t q;
	int s, e;
	float v;
	static const float ties[] = { 0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f,
	    -2.5f, -3.5f, 2.4999998f, 2.5000002f };
	static const int64_t want[] = { 0, 2, 2, 4, 0, -2, -2, -4, 2, 3 };
	size_t i;

	/* Half to even, both signs. */
	for (i = 0; i < sizeof ties / sizeof ties[0]; i++) {
		CHECK(hc_quantize(ties[i], 0, 32, &q) == 0);
		CHECK(q == want[i]);
	}
	CHECK(hc_quantize(5.0f, -1, 32, &q) == 0 && q == 2);
	CHECK(hc_quantize(7.0f, -1, 64, &q) == 0 && q == 4);
	CHECK(hc_quantize(0x1p-149f, 149, 32, &q) == 0 && q == 1);
	CHECK(hc_quantize(-0.0f, 10, 32, &q) == 0 && q == 0);
	CHECK(hc_quantize(1.0f, 31, 32, &q) == HC_ERANGE);
	CHECK(hc_quantize(0x1p31f, 0, 32, &q) == HC_ERANGE);
	CHECK(hc_quantize(0x1.fffffep30f, 0, 32, &q) == 0 &&
	    q == 0x7fffff80);
	CHECK(hc_quantize(-0x1.fffffep30f, 0, 32, &q) == 0 &&
	    q == -0x7fffff80);
	CHECK(hc_quantize(1.0f, 63, 64, &q) == HC_ERANGE);
	CHECK(hc_quantize(-1.0f, 62, 64, &q) == 0 && q == -((int64_t)1 << 62));
	CHECK(hc_quantize(NAN, 0, 32, &q) == HC_ENONFINITE);
	CHECK(hc_quantize(-INFINITY, 0, 64, &q) == HC_ENONFINITE);
	CHECK(hc_quantize(1.0f, 150, 64, &q) == HC_EINVAL);
	CHECK(hc_quantize(1.0f, 0, 16, &q) == HC_EINVAL);

	/* Back to float: one correct rounding, also above 2^53. */
	CHECK(hc_dequantize(3, 1) == 1.5f);
	CHECK(hc_dequantize(-3, 1) == -1.5f);
	CHECK(hc_dequantize(1, 149) == 0x1p-149f);
	CHECK(hc_dequantize(3, 150) == 0x1p-148f);	/* a tie, to even */
	v = hc_dequantize(((int64_t)1 << 60) + ((int64_t)1 << 36) + 1, 0);
	CHECK(v == 0x1p60f + 0x1p37f);	/* double rounding gives 2^60 */
	v = hc_dequantize(((int64_t)1 << 60) + ((int64_t)1 << 36), 0);
	CHECK(v == 0x1p60f);
	v = hc_dequantize(-(((int64_t)1 << 60) + ((int64_t)1 << 36) + 1), 10);
	CHECK(v == -(0x1p50f + 0x1p27f));
	CHECK(isinf(hc_dequantize(INT64_MAX, -100)));
	CHECK(hc_dequantize(0, 5) == 0 && !signbit(hc_dequantize(0, 5)));

	/* Exponents. */
	{
		float z[3] = { 0.0f, -0.0f, 0.0f }, one = -3.0f;
		float sub = 0x1p-149f, big = FLT_MAX, q3 = 0.75f;
		float bad[4] = { 1, 2, NAN, 3 };

		CHECK(hc_exponent(z, 3, &e) == 0 && e == HC_EXP_ZERO);
		CHECK(hc_exponent(z, 0, &e) == 0 && e == HC_EXP_ZERO);
		CHECK(hc_exponent(&one, 1, &e) == 0 && e == 1);
		CHECK(hc_exponent(&sub, 1, &e) == 0 && e == -127);
		CHECK(hc_exponent(&big, 1, &e) == 0 && e == 127);
		CHECK(hc_exponent(&q3, 1, &e) == 0 && e == -1);
		CHECK(hc_exponent(bad, 4, &e) == HC_ENONFINITE &&
		    e == HC_EXP_NONFINITE);
		bad[2] = -INFINITY;
		CHECK(hc_exponent(bad, 4, &e) == HC_ENONFINITE &&
		    e == HC_EXP_NONFINITE);
	}

	/* The scale rule. */
	CHECK(hc_scale(0, 1, 32, &s) == 0 && s == 29);
	CHECK(hc_scale(0, 16, 32, &s) == 0 && s == 25);
	CHECK(hc_scale(0, 17, 32, &s) == 0 && s == 24);
	CHECK(hc_scale(0, 1, 64, &s) == 0 && s == 61);
	CHECK(hc_scale(HC_EXP_ZERO, 4, 32, &s) == 0 && s == 149);
	CHECK(hc_scale(-127, 1, 32, &s) == 0 && s == 149);
	CHECK(hc_scale(127, 1, 32, &s) == 0 && s == -98);
	CHECK(hc_scale(127, HC_MAX_WORKERS, 32, &s) == 0 && s == -118);
	CHECK(hc_scale(HC_EXP_NONFINITE, 2, 32, &s) == HC_ENONFINITE);
	CHECK(hc_scale(0, 0, 32, &s) == HC_EINVAL);
	CHECK(hc_scale(0, HC_MAX_WORKERS + 1, 32, &s) == HC_EINVAL);
	CHECK(hc_scale(129, 1, 32, &s) == HC_EINVAL);
	CHECK(hc_scale(-151, 1, 32, &s) == HC_EINVAL);
	CHECK(hc_scale(0, 1, 48, &s) == HC_EINVAL);

	/* W copies of the largest value of an exponent, either sign, fit. */
	{
		static const int wsz[] = { 1, 2, 3, 16, 128, 129, 1000,
		    HC_MAX_WORKERS };
		static const int exps[] = { -126, -20, 0, 127 };
		size_t a, b;
		int bits, ok = 1;
		float top;

		for (bits = 32; bits <= 64; bits += 32)
			for (a = 0; a < sizeof wsz / sizeof wsz[0]; a++)
				for (b = 0; b < sizeof exps / sizeof exps[0];
				    b++) {
					top = ldexpf(0x1.fffffep0f, exps[b]);
					ok &= hc_scale(exps[b], wsz[a], bits,
					    &s) == 0;
					ok &= hc_quantize(-top, s, bits,
					    &q) == 0;
					ok &= fabs((double)q) * wsz[a] <=
					    ldexp(1, bits - 2);
				}
		CHECK(ok);
	}
}

static void
test_bitmap_and_merges(void)
{
	float g[9] = { 0, 1, 0, -0.0f, 0, 0, 0, 0, 2 };
	uint8_t b[2], acc[2], c[3];
	int32_t x[3] = { INT32_MAX, -1, 5 }, y[3] = { 1, -1, -5 };
	int64_t x64[2] = { INT64_MAX, 0 }, y64[2] = { 1, -7 };
	unsigned char raw[13];
	int e;

	CHECK(hc_bitmap_bytes(0) == 0 && hc_bitmap_bytes(1) == 1 &&
	    hc_bitmap_bytes(8) == 1 && hc_bitmap_bytes(9) == 2);
	CHECK(hc_bitmap(g, 9, b, &e) == 0 && e == 1);
	CHECK(b[0] == 0x02 && b[1] == 0x01);
	g[3] = NAN;
	CHECK(hc_bitmap(g, 9, b, &e) == HC_ENONFINITE &&
	    e == HC_EXP_NONFINITE);
	CHECK(b[0] == 0x0a && b[1] == 0x01);
	CHECK(hc_bitmap(g, 9, b, NULL) == HC_ENONFINITE);

	/* OR, in one piece or in chunks, sizes checked. */
	acc[0] = 0x10;
	acc[1] = 0x00;
	CHECK(hc_merge_or(acc, 9, b, 9) == 0);
	CHECK(acc[0] == 0x1a && acc[1] == 0x01);
	CHECK(hc_merge_or(acc, 10, b, 9) == HC_ESIZE);
	CHECK(hc_merge_or(acc, 9, b, 10) == HC_ESIZE);
	CHECK(hc_merge_or(acc, 8, b, 8) == 0);
	CHECK(hc_merge_or(acc + 1, 1, b + 1, 1) == 0);
	c[0] = 0;
	c[1] = 0x02;
	CHECK(hc_merge_or(acc + 1, 1, c + 1, 1) == HC_EFORMAT);
	CHECK(hc_merge_or(NULL, 0, NULL, 0) == 0);

	/* MAX of exponents keeps the NaN marker. */
	e = HC_EXP_ZERO;
	CHECK(hc_merge_max(&e, -3) == 0 && e == -3);
	CHECK(hc_merge_max(&e, -30) == 0 && e == -3);
	CHECK(hc_merge_max(&e, HC_EXP_NONFINITE) == 0 &&
	    e == HC_EXP_NONFINITE);
	CHECK(hc_merge_max(&e, 500) == HC_EFORMAT);
	CHECK(hc_merge_max(&e, -151) == HC_EFORMAT);

	/* Sums wrap; sizes and cell types checked; any alignment. */
	CHECK(hc_merge_sum(x, 3, y, 3, 32) == 0);
	CHECK(x[0] == INT32_MIN && x[1] == -2 && x[2] == 0);
	CHECK(hc_merge_sum(x64, 2, y64, 2, 64) == 0);
	CHECK(x64[0] == INT64_MIN && x64[1] == -7);
	CHECK(hc_merge_sum(x, 3, y, 2, 32) == HC_ESIZE);
	CHECK(hc_merge_sum(x, 2, y, 3, 32) == HC_ESIZE);
	CHECK(hc_merge_sum(x, 2, y, 2, 16) == HC_EINVAL);
	memset(raw, 0, sizeof raw);
	raw[1] = 7;
	raw[5] = 0xff;
	raw[6] = 0xff;
	raw[7] = 0xff;
	raw[8] = 0xff;
	CHECK(hc_merge_sum(raw + 1, 3, raw + 1, 3, 32) == 0);
	CHECK(raw[1] == 14 && raw[5] == 0xfe && raw[8] == 0xff);
}

/* Union of two blocks; g has what the case needs. */
static struct hc_layout *
small_layout(int impl, size_t n, const uint8_t *ub, int bits)
{
	struct hc_params p;
	struct hc_layout *L = NULL;

	hc_params_init(&p, n, bits);
	p.block = 16;
	p.seed = 42;
	p.impl = impl;
	if (hc_layout_new(&p, ub, &L) != 0)
		return NULL;
	return L;
}

static void
test_errors(void)
{
	struct hc_params p;
	struct hc_layout *L;
	struct hc_layout_info in;
	float g[40], out[40];
	uint8_t ub[5];
	uint32_t pay[4096], sum[4096], fixed[40], *cnt;
	size_t i, np, c;
	int m, s;

	/* Parameters. */
	memset(ub, 0, sizeof ub);
	hc_params_init(&p, 40, 32);
	CHECK(hc_layout_new(&p, ub, NULL) == HC_EINVAL);
	p.block = HC_MAX_BLOCK + 1;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.block = 16;
	p.k = 1;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.k = HC_MAX_K + 1;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.k = 3;
	p.cell_bits = 16;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.cell_bits = 32;
	p.impl = 7;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.impl = 0;
	p.n = HC_MAX_N + 1;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EINVAL);
	p.n = 40;
	CHECK(hc_layout_new(&p, NULL, &L) == HC_EINVAL);
	/* A bit past n: 40 bits are 5 whole bytes, 37 are not. */
	ub[4] = 0x20;
	p.n = 37;
	CHECK(hc_layout_new(&p, ub, &L) == HC_EFORMAT);
	p.n = 38;
	CHECK(hc_layout_new(&p, ub, &L) == 0);
	hc_layout_free(L);
	CHECK(strcmp(hc_strerror(HC_ECORRUPT), "summed cells are not a "
	    "consistent sketch") == 0);
	CHECK(strcmp(hc_strerror(12345), "unknown error") == 0);

	/* The empty union: nothing to send; zeros decode. */
	memset(ub, 0, sizeof ub);
	memset(g, 0, sizeof g);
	g[3] = -0.0f;
	for (m = 0; m < 2; m++) {
		L = small_layout(m, 40, ub, 32);
		CHECK(L != NULL);
		if (L == NULL)
			continue;
		CHECK(hc_layout_payload(L) == 0 && hc_layout_cells(L) == 0);
		CHECK(hc_encode(L, g, 149, NULL) == 0);
		memset(out, 0xff, sizeof out);
		CHECK(hc_decode(L, NULL, 149, out) == 0);
		for (i = 0; i < 40; i++)
			CHECK(fbits(out[i]) == 0);
		g[5] = 1;
		CHECK(hc_encode(L, g, 0, NULL) == HC_ESUPPORT);
		g[5] = 0;
		hc_layout_free(L);
	}

	/* NaN, Inf, out of range, outside the union: the same for both. */
	ub[0] = 0x0f;
	ub[2] = 0x80;
	for (i = 0; i < 40; i++)
		g[i] = (bit_test(ub, i)) ? (float)i + 0.25f : 0;
	for (m = 0; m < 2; m++) {
		L = small_layout(m, 40, ub, 32);
		CHECK(L != NULL);
		if (L == NULL)
			continue;
		np = hc_layout_payload(L);
		CHECK(np <= 4096);
		CHECK(hc_encode(L, g, 10, pay) == 0);
		CHECK(hc_encode(L, g, 27, pay) == HC_ERANGE);
		CHECK(hc_encode(L, g, 150, pay) == HC_EINVAL);
		g[2] = NAN;
		CHECK(hc_encode(L, g, 10, pay) == HC_ENONFINITE);
		g[2] = INFINITY;
		CHECK(hc_encode(L, g, 10, pay) == HC_ENONFINITE);
		g[2] = 2.25f;
		g[30] = 1e-30f;
		CHECK(hc_encode(L, g, 10, pay) == HC_ESUPPORT);
		g[30] = 0;

		/*
		 * A cell that no coordinate uses: a change there is
		 * certainly seen.  Decoding still ends.
		 */
		CHECK(hc_encode(L, g, 10, pay) == 0);
		hc_layout_info(L, &in);
		cnt = xcalloc(in.cells, sizeof *cnt);
		for (i = 0; i < 40; i++)
			if (bit_test(ub, i))
				for (c = 0; c < in.k; c++)
					cnt[(size_t)in.block_rows[i / 16 * in.k +
					    c] * 16 + i % 16]++;
		for (c = 0; c < in.cells && cnt[c] != 0; c++)
			;
		CHECK(c < in.cells);
		memcpy(sum, pay, np * 4);
		CHECK(hc_decode_fixed(L, sum, fixed) == 0);
		memcpy(sum, pay, np * 4);
		sum[c] += 1;
		CHECK(hc_decode_fixed(L, sum, fixed) == HC_ECORRUPT);
		memcpy(sum, pay, np * 4);
		sum[c] -= 5;
		CHECK(hc_decode(L, sum, 10, out) == HC_ECORRUPT);
		free(cnt);

		CHECK(hc_scale(5, 2, 32, &s) == 0);
		CHECK(hc_decode(L, sum, -201, out) == HC_EINVAL);
		hc_layout_free(L);
	}

	/* The dense reference refuses what the encoder refuses. */
	{
		const float *gs[1] = { g };
		int32_t d[40];

		g[7] = NAN;
		CHECK(hc_dense_fixed(gs, 1, 40, 0, 32, d) == HC_ENONFINITE);
		g[7] = 1e10f;
		CHECK(hc_dense_fixed(gs, 1, 40, 0, 32, d) == HC_ERANGE);
		CHECK(hc_dense_fixed(gs, 1, 40, 0, 64, pay) == 0);
		CHECK(hc_dense_fixed(gs, 0, 40, 0, 32, d) == HC_EINVAL);
		CHECK(hc_fixed_to_float(d, 40, 32, 1000, out) == HC_EINVAL);
	}
}

/* The geometry: B clamped to n, R from the fullest lane. */
static void
test_layout_shape(void)
{
	struct hc_params p;
	struct hc_layout *L;
	struct hc_layout_info in;
	uint8_t ub[512];
	uint32_t rows[8];
	size_t i;

	memset(ub, 0, sizeof ub);
	for (i = 0; i < 4096; i++)
		ub[i / 8] |= (uint8_t)(1u << (i % 8));
	hc_params_init(&p, 4096, 64);
	CHECK(hc_layout_new(&p, ub, &L) == 0);
	hc_layout_info(L, &in);
	CHECK(in.block == 1024 && in.nblocks == 4);
	CHECK(in.max_lane == 4 && in.rows == 7 && in.cells == 7 * 1024);
	CHECK(in.union_count == 4096);
	CHECK(in.cell_bits == 64 && in.k == 3);
	for (i = 0; i < 4; i++) {
		CHECK(hc_block_rows(p.seed, i, 7, 3, rows) == 0);
		CHECK(memcmp(rows, in.block_rows + 3 * i, 3 * 4) == 0);
	}
	hc_layout_free(L);

	/* One lane fuller than the rest sets R. */
	memset(ub, 0, sizeof ub);
	for (i = 0; i < 400; i++)
		ub[(i * 10) / 8] |= (uint8_t)(1u << ((i * 10) % 8));
	hc_params_init(&p, 4096, 32);
	p.block = 10;
	CHECK(hc_layout_new(&p, ub, &L) == 0);
	hc_layout_info(L, &in);
	CHECK(in.block == 10 && in.nblocks == 410 && in.max_lane == 400);
	CHECK(in.rows == 502 && in.cells == 5020);
	hc_layout_free(L);

	hc_params_init(&p, 5, 32);
	ub[0] = 0x1f;
	CHECK(hc_layout_new(&p, ub, &L) == 0);
	hc_layout_info(L, &in);
	CHECK(in.block == 5 && in.nblocks == 1 && in.rows == 4);
	hc_layout_free(L);

	/* Rows are distinct and in range even when R is k. */
	for (i = 0; i < 1000; i++) {
		CHECK(hc_block_rows(i, i * 7, 3, 3, rows) == 0);
		CHECK(rows[0] != rows[1] && rows[1] != rows[2] &&
		    rows[0] != rows[2] && rows[0] < 3 && rows[1] < 3 &&
		    rows[2] < 3);
	}
	CHECK(hc_block_rows(1, 2, 7, 8, rows) == HC_EINVAL);
	CHECK(hc_block_rows(1, 2, 8, 8, rows) == 0);
	hc_params_init(&p, 0, 32);
	CHECK(hc_layout_new(&p, NULL, &L) == 0);
	CHECK(hc_layout_payload(L) == 0);
	CHECK(hc_decode(L, NULL, 0, NULL) == 0);
	hc_layout_free(L);
}

/*
 * hc_bitmap, sixteen values at a time where it can, against a value by
 * value reading of the same gradient: every length up to 200 and some
 * above, zeros of both signs, subnormals, NaN and Inf anywhere.
 */
static void
test_bitmap_sizes(void)
{
	static const size_t big[] = { 255, 256, 257, 1000, 4097, 65535 };
	uint64_t st = 99;
	uint32_t w, m;
	uint8_t *b = xcalloc(8200, 1), *want = xcalloc(8200, 1);
	float *g = xcalloc(65536, sizeof *g);
	size_t n, i, c;
	int e, rc, ewant, rcwant, ok = 1;

	for (c = 0; c < 200 + sizeof big / sizeof big[0]; c++) {
		n = c < 200 ? c : big[c - 200];
		for (i = 0; i < n; i++) {
			switch (rnd(&st) % 8) {
			case 0:
				g[i] = rnd_value(&st, -20, 20);
				break;
			case 1:
				g[i] = -0.0f;
				break;
			case 2:
				g[i] = (rnd(&st) % 64) == 0 ? 1e-42f : 0;
				break;
			default:
				g[i] = 0;
			}
		}
		if (c % 5 == 4 && n > 0)
			g[rnd(&st) % n] = c % 10 == 4 ? NAN : -INFINITY;
		memset(want, 0, hc_bitmap_bytes(n));
		for (i = 0, m = 0; i < n; i++) {
			memcpy(&w, &g[i], 4);
			w &= 0x7fffffffu;
			if (w != 0)
				want[i / 8] |= (uint8_t)(1u << (i % 8));
			m = w > m ? w : m;
		}
		rcwant = m >= 0x7f800000u ? HC_ENONFINITE : 0;
		ewant = rcwant ? HC_EXP_NONFINITE : m == 0 ? HC_EXP_ZERO :
		    (int)(m >> 23) - 127;
		memset(b, 0xa5, hc_bitmap_bytes(n));
		rc = hc_bitmap(g, n, b, &e);
		ok &= rc == rcwant && e == ewant && memcmp(b, want,
		    hc_bitmap_bytes(n)) == 0;
		ok &= hc_exponent(g, n, &e) == rcwant && e == ewant;
	}
	CHECK(ok);
	free(b);
	free(want);
	free(g);
}

/* Everything of a layout that decoding and the GPU read, compared. */
static int
layouts_equal(const struct hc_layout *a, const struct hc_layout *b)
{
	struct hc_layout_info x, y;

	hc_layout_info(a, &x);
	hc_layout_info(b, &y);
	if (x.n != y.n || x.block != y.block || x.k != y.k ||
	    x.cell_bits != y.cell_bits || x.nblocks != y.nblocks ||
	    x.rows != y.rows || x.max_lane != y.max_lane ||
	    x.cells != y.cells || x.union_count != y.union_count ||
	    x.core_count != y.core_count || x.nrounds != y.nrounds)
		return 0;
	if (x.rows > 0 && memcmp(x.block_rows, y.block_rows, x.nblocks *
	    x.k * sizeof *x.block_rows) != 0)
		return 0;
	if (x.core_count > 0 && memcmp(x.core, y.core, x.core_count *
	    sizeof *x.core) != 0)
		return 0;
	if ((x.round_start == NULL) != (y.round_start == NULL))
		return 0;
	if (x.round_start != NULL && (memcmp(x.round_start, y.round_start,
	    (x.nrounds + 1) * sizeof *x.round_start) != 0 ||
	    (x.round_start[x.nrounds] > 0 && memcmp(x.peel, y.peel,
	    x.round_start[x.nrounds] * sizeof *x.peel) != 0)))
		return 0;
	return 1;
}

/*
 * hc_layout_renew in the memory of one layout, case after case, larger
 * and smaller, both implementations, a refused one in between: each must
 * be the layout that hc_layout_new makes, and encode and decode alike.
 */
static void
test_renew(void)
{
	static const size_t ns[] = { 5000, 300000, 1000, 0, 70001, 1,
	    300000, 2048, 123457 };
	static const unsigned blocks[] = { 1024, 1000, 64, 16, 4096, 1024,
	    1024, 7, 1024 };
	struct hc_layout *kept = NULL, *L = NULL;
	struct hc_params p;
	struct tcase tc;
	float **g, *out[2];
	uint8_t *ub, *bw;
	void *pay[2];
	size_t c, nb, np;
	int e, emax, s, w, m, ok;

	for (c = 0; c < 2 * sizeof ns / sizeof ns[0]; c++) {
		memset(&tc, 0, sizeof tc);
		tc.n = ns[c % (sizeof ns / sizeof ns[0])];
		tc.block = blocks[c % (sizeof ns / sizeof ns[0])];
		tc.k = 2 + (unsigned)(c % 3);
		tc.bits = c % 4 == 3 ? 64 : 32;
		tc.W = 1 + (int)(c % 4);
		tc.density = c % 2 ? 0.02 : 0.3;
		tc.sup = SUP_RANDOM;
		tc.elo = -10;
		tc.ehi = 3;
		tc.seed = 1000 + c;
		g = gradients(&tc);
		nb = hc_bitmap_bytes(tc.n);
		ub = xcalloc(nb, 1);
		bw = xcalloc(nb, 1);
		emax = HC_EXP_ZERO;
		for (w = 0; w < tc.W; w++) {
			hc_bitmap(g[w], tc.n, bw, &e);
			hc_merge_or(ub, tc.n, bw, tc.n);
			hc_merge_max(&emax, e);
		}
		hc_scale(emax, tc.W, tc.bits, &s);
		hc_params_init(&p, tc.n, tc.bits);
		p.block = tc.block;
		p.k = tc.k;
		p.seed = tc.seed;
		p.impl = c == 4 ? HC_IMPL_REF : HC_IMPL_FAST;
		CHECK(hc_layout_new(&p, ub, &L) == 0);
		CHECK(hc_layout_renew(&p, ub, &kept) == 0);
		if (L == NULL || kept == NULL)
			goto next;
		CHECK(layouts_equal(L, kept));
		np = hc_layout_payload(L) * (size_t)(tc.bits / 8);
		ok = 1;
		for (m = 0; m < 2; m++) {
			pay[m] = xcalloc(np, 1);
			out[m] = xcalloc(tc.n, sizeof *out[m]);
			ok &= hc_encode(m ? kept : L, g[0], s, pay[m]) == 0;
		}
		ok &= memcmp(pay[0], pay[1], np) == 0;
		for (m = 0; m < 2; m++)
			ok &= hc_decode(m ? kept : L, pay[m], s, out[m]) == 0;
		ok &= memcmp(out[0], out[1], tc.n * sizeof *out[0]) == 0;
		CHECK(ok);
		for (m = 0; m < 2; m++) {
			free(pay[m]);
			free(out[m]);
		}
		if (c == 6) {
			/* Refused: the old one is freed, NULL in its place. */
			ub[0] = 0xff;
			p.n = 3;
			CHECK(hc_layout_renew(&p, ub, &kept) == HC_EFORMAT &&
			    kept == NULL);
			CHECK(hc_layout_renew(NULL, ub, &kept) == HC_EINVAL &&
			    kept == NULL);
		}
next:
		hc_layout_free(L);
		L = NULL;
		for (w = 0; w < tc.W; w++)
			free(g[w]);
		free(g);
		free(ub);
		free(bw);
	}
	CHECK(hc_layout_renew(&p, NULL, NULL) == HC_EINVAL);
	hc_layout_free(kept);
}

/*
 * Sums that are not a consistent sketch: HC_ECORRUPT, and out or fixed
 * as they were, bit for bit, in both implementations, whichever cell of
 * the sketch changed.
 */
static void
test_corrupt_untouched(void)
{
	struct hc_layout *L;
	struct hc_params p;
	struct tcase tc;
	float **g, *out;
	uint8_t *ub, *bw, *fixed;
	uint32_t *pay, *sum;
	size_t nb, np, c, i;
	int e, emax = HC_EXP_ZERO, s, m, ok = 1, rc;

	memset(&tc, 0, sizeof tc);
	tc.n = 20000;
	tc.block = 256;
	tc.k = 3;
	tc.bits = 32;
	tc.W = 1;
	tc.density = 0.05;
	tc.sup = SUP_RANDOM;
	tc.elo = -3;
	tc.ehi = 2;
	tc.seed = 77;
	g = gradients(&tc);
	nb = hc_bitmap_bytes(tc.n);
	ub = xcalloc(nb, 1);
	bw = xcalloc(nb, 1);
	hc_bitmap(g[0], tc.n, bw, &e);
	hc_merge_or(ub, tc.n, bw, tc.n);
	hc_merge_max(&emax, e);
	hc_scale(emax, 1, 32, &s);
	out = xcalloc(tc.n, sizeof *out);
	fixed = xcalloc(tc.n, 4);
	for (m = 0; m < 2; m++) {
		hc_params_init(&p, tc.n, 32);
		p.block = tc.block;
		p.seed = 5;
		p.impl = m ? HC_IMPL_REF : HC_IMPL_FAST;
		L = NULL;
		CHECK(hc_layout_new(&p, ub, &L) == 0);
		if (L == NULL)
			continue;
		np = hc_layout_cells(L);
		pay = xcalloc(hc_layout_payload(L), 4);
		sum = xcalloc(hc_layout_payload(L), 4);
		CHECK(hc_encode(L, g[0], s, pay) == 0);
		for (c = 0; c < np; c += np / 97 + 1) {
			memcpy(sum, pay, hc_layout_payload(L) * 4);
			sum[c] += 1u << (c % 32);
			for (i = 0; i < tc.n; i++)
				out[i] = 3.0f;
			memset(fixed, 0x5a, tc.n * 4);
			rc = hc_decode(L, sum, s, out);
			ok &= rc == HC_ECORRUPT;
			for (i = 0; i < tc.n; i++)
				ok &= out[i] == 3.0f;
			memcpy(sum, pay, hc_layout_payload(L) * 4);
			sum[c] -= 1;
			rc = hc_decode_fixed(L, sum, fixed);
			ok &= rc == HC_ECORRUPT;
			for (i = 0; i < tc.n * 4; i++)
				ok &= fixed[i] == 0x5a;
		}
		free(pay);
		free(sum);
		hc_layout_free(L);
	}
	CHECK(ok);
	free(out);
	free(fixed);
	free(ub);
	free(bw);
	free(g[0]);
	free(g);
}

/*
 * The layout, encode, decode and bitmap on threads are the serial ones
 * entry for entry and byte for byte, whatever the number of parts, with
 * blocks that are and are not a multiple of the part size, n not a
 * multiple of B, renewed layouts, and errors: the first one in coordinate
 * order wins, as alone; a corrupt sum leaves the output alone.  Then
 * once more in a forked child, which has none of the pool's threads.
 */
static int
threads_case(size_t n, unsigned block, int bits, double density, int W,
    int threads, uint64_t seed)
{
	struct hc_params p;
	struct hc_layout *L[2] = { NULL, NULL };
	struct tcase tc;
	float **g, *out[2];
	uint8_t *ub, *bw[2];
	void *pay[2], *sum, *spent, *fixed[2];
	size_t nb, np, cb = (size_t)cellbytes(bits), i, a, b;
	int e[2], emax = HC_EXP_ZERO, s, w, m, ok = 1, rc[2];

	memset(&tc, 0, sizeof tc);
	tc.n = n;
	tc.block = block;
	tc.k = 3;
	tc.bits = bits;
	tc.W = W;
	tc.density = density;
	tc.sup = SUP_RANDOM;
	tc.elo = -4;
	tc.ehi = 3;
	tc.seed = seed;
	g = gradients(&tc);
	nb = hc_bitmap_bytes(n);
	ub = xcalloc(nb, 1);
	bw[0] = xcalloc(nb, 1);
	bw[1] = xcalloc(nb, 1);
	for (w = 0; w < W; w++) {
		ok &= hc_bitmap(g[w], n, bw[0], &e[0]) == 0;
		ok &= hc_bitmap_threads(g[w], n, bw[1], &e[1], threads) == 0;
		ok &= e[0] == e[1] && memcmp(bw[0], bw[1], nb) == 0;
		hc_merge_or(ub, n, bw[0], n);
		hc_merge_max(&emax, e[0]);
	}
	hc_scale(emax, W, bits, &s);
	for (m = 0; m < 2; m++) {
		hc_params_init(&p, n, bits);
		p.block = block;
		p.seed = seed;
		p.threads = m == 0 ? 1 : threads;
		/* Renewed in a layout of another shape first. */
		ok &= hc_layout_renew(&p, ub, &L[m]) == 0;
		p.n = (n / 2) & ~(size_t)7;	/* whole bytes of ub */
		ok &= hc_layout_renew(&p, ub, &L[m]) == 0;
		p.n = n;
		ok &= hc_layout_renew(&p, ub, &L[m]) == 0;
	}
	if (!ok || L[0] == NULL || L[1] == NULL) {
		ok = 0;
		goto out;
	}
	ok &= layouts_equal(L[0], L[1]);
	np = hc_layout_payload(L[0]);
	sum = xcalloc(np, cb);
	spent = xcalloc(np, cb);
	for (m = 0; m < 2; m++) {
		pay[m] = xcalloc(np, cb);
		fixed[m] = xcalloc(n, cb);
		out[m] = xcalloc(n, sizeof *out[m]);
	}
	for (w = 0; w < W; w++) {
		for (m = 0; m < 2; m++) {
			/* Garbage first: encode must clear every cell. */
			memset(pay[m], 0xa5, np * cb);
			ok &= hc_encode(L[m], g[w], s, pay[m]) == 0;
		}
		ok &= memcmp(pay[0], pay[1], np * cb) == 0;
		ok &= hc_merge_sum(sum, np, pay[0], np, bits) == 0;
	}
	for (m = 0; m < 2; m++) {
		memcpy(spent, sum, np * cb);
		memset(out[m], 0xa5, n * sizeof *out[m]);
		ok &= hc_decode(L[m], spent, s, out[m]) == 0;
		memcpy(spent, sum, np * cb);
		memset(fixed[m], 0xa5, n * cb);
		ok &= hc_decode_fixed(L[m], spent, fixed[m]) == 0;
	}
	ok &= memcmp(out[0], out[1], n * sizeof *out[0]) == 0;
	ok &= memcmp(fixed[0], fixed[1], n * cb) == 0;
	/* A corrupt cell: refused alike, the output as it was. */
	if (hc_layout_cells(L[0]) > 0) {
		for (m = 0; m < 2; m++) {
			memcpy(spent, sum, np * cb);
			((uint8_t *)spent)[(hc_layout_cells(L[0]) / 3) * cb] ^=
			    4;
			memset(out[m], 0x5a, n * sizeof *out[m]);
			rc[m] = hc_decode(L[m], spent, s, out[m]);
		}
		ok &= rc[0] == HC_ECORRUPT && rc[1] == HC_ECORRUPT;
		for (i = 0; i < n * sizeof *out[0]; i++)
			ok &= ((uint8_t *)out[1])[i] == 0x5a;
	}
	/*
	 * Two errors in lanes of different parts: an Inf late in a low lane
	 * and a value outside the union early in a high lane; alone, the
	 * earlier coordinate's error is the answer.
	 */
	a = n - n % block - block + 3;		/* last full block, lane 3 */
	for (b = block - 1; b < n && bit_test(ub, b); b += block)
		;
	if (a > b && b < n) {
		g[0][a] = INFINITY;
		g[0][b] = 1.0f;
		for (m = 0; m < 2; m++)
			rc[m] = hc_encode(L[m], g[0], s, pay[m]);
		ok &= rc[0] == HC_ESUPPORT && rc[1] == rc[0];
		g[0][b] = 0.0f;
		for (m = 0; m < 2; m++)
			rc[m] = hc_encode(L[m], g[0], s, pay[m]);
		ok &= rc[0] == rc[1] && rc[0] != 0;
	}
	for (m = 0; m < 2; m++) {
		free(pay[m]);
		free(fixed[m]);
		free(out[m]);
	}
	free(sum);
	free(spent);
out:
	hc_layout_free(L[0]);
	hc_layout_free(L[1]);
	for (w = 0; w < W; w++)
		free(g[w]);
	free(g);
	free(ub);
	free(bw[0]);
	free(bw[1]);
	if (!ok && getenv("HC_VERBOSE") != NULL)
		fprintf(stderr, "threads case n=%zu B=%u bits=%d d=%g W=%d "
		    "threads=%d failed\n", n, block, bits, density, W,
		    threads);
	return ok;
}

static void
test_threads(int quick)
{
	static const struct {
		size_t		n;
		unsigned	block;
		int		bits;
		double		density;
		int		W;
	} cs[] = {
		{ 262144, 1024, 32, 0.01, 8 },
		{ 262144 + 12345, 1024, 32, 0.05, 3 },
		{ 1048576, 1024, 64, 0.001, 4 },
		{ 1048576 + 7, 4096, 32, 0.3, 2 },
		{ 600000, 128, 32, 0.02, 5 },
		{ 600000, 64, 32, 0.02, 2 },	/* one part: alone */
		{ 300000, 1000, 32, 0.02, 2 },	/* B % 64 != 0: alone */
		{ 786432, 1024, 32, 0.6, 2 },	/* a large 2-core */
		{ 262144, 1024, 32, 0.0, 2 },	/* all zeros */
	};
	static const int th[] = { 2, 3, 4, 7, 64 };
	size_t c, x;
	pid_t pid;
	int status, ok = 1;

	for (c = 0; c < sizeof cs / sizeof cs[0]; c++)
		for (x = 0; x < sizeof th / sizeof th[0]; x++)
			/* Under TSan a few cases say enough, slowly. */
			if (!quick || (c % 2 == 0 && x % 2 == 1))
				ok &= threads_case(cs[c].n, cs[c].block,
				    cs[c].bits, cs[c].density, cs[c].W, th[x],
				    1000 + c * 10 + x);
	CHECK(ok);
	fflush(NULL);
	if ((pid = fork()) == 0)
		_exit(threads_case(262144, 1024, 32, 0.01, 4, 4, 99) ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
	    WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * HC_BLOCK_AUTO: HC_BLOCK up to HC_AUTO_LANE union coordinates a lane,
 * then doubled; the layout applies it (hc_layout_info's block), also in
 * a renewed layout's memory.
 */
static void
test_block_auto(void)
{
	struct hc_params p;
	struct hc_layout *L = NULL;
	struct hc_layout_info li;
	size_t n = (size_t)HC_AUTO_LANE * HC_BLOCK + 1000, nb;
	uint8_t *ub;

	CHECK(hc_block_auto(10, 10) == HC_BLOCK);
	CHECK(hc_block_auto(HC_MAX_N, (size_t)HC_AUTO_LANE * HC_BLOCK) ==
	    HC_BLOCK);
	CHECK(hc_block_auto(HC_MAX_N, (size_t)HC_AUTO_LANE * HC_BLOCK + 1) ==
	    2 * HC_BLOCK);
	CHECK(hc_block_auto(HC_MAX_N, (size_t)HC_AUTO_LANE * 9000) == 16384);
	CHECK(hc_block_auto(HC_MAX_N, HC_MAX_N) == HC_MAX_BLOCK);
	hc_params_init(&p, 1000, 32);
	CHECK(p.block == HC_BLOCK_AUTO);

	/* A full union just over HC_AUTO_LANE * HC_BLOCK: B = 2048. */
	nb = hc_bitmap_bytes(n);
	ub = xcalloc(nb, 1);
	memset(ub, 0xff, nb);
	if (n % 8 != 0)
		ub[nb - 1] = (uint8_t)((1u << (n % 8)) - 1);
	hc_params_init(&p, n, 32);
	CHECK(hc_layout_renew(&p, ub, &L) == 0);
	if (L != NULL) {
		hc_layout_info(L, &li);
		CHECK(li.block == 2 * HC_BLOCK && li.union_count == n);
		CHECK(li.nblocks == (n + li.block - 1) / li.block);
	}
	/* And a sparse union of the same n keeps HC_BLOCK. */
	memset(ub, 0, nb);
	ub[0] = ub[nb / 2] = 1;
	CHECK(hc_layout_renew(&p, ub, &L) == 0);
	if (L != NULL) {
		hc_layout_info(L, &li);
		CHECK(li.block == HC_BLOCK && li.union_count == 2);
	}
	hc_layout_free(L);
	free(ub);
}

int
main(void)
{
	/* Under ThreadSanitizer (make tsan), only what runs on threads. */
	if (getenv("HC_TEST_THREADS_ONLY") != NULL) {
		test_threads(1);
		return t_done("hcodec threads");
	}
	test_numbers();
	test_bitmap_and_merges();
	test_layout_shape();
	test_errors();
	test_core();
	test_round_trips();
	test_bitmap_sizes();
	test_renew();
	test_block_auto();
	test_corrupt_untouched();
	test_threads(0);
	printf("hcodec: %zu round trips, %zu coordinates in 2-cores, at most "
	    "%zu peeling rounds\n", trips, cores_total, rounds_max);
	return t_done("hcodec");
}
