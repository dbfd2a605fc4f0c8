/*
 * bench/reduce-cuda: the CUDA codec (lib/hcodec_cuda.cu) against the CPU
 * codec (lib/hcodec.c), and its throughput.  Built by bench/reduce-cuda-build;
 * needs a GPU.
 *
 *	reduce-cuda test
 *		W workers' random sparse gradients of many sizes, densities,
 *		supports and cell widths, through both codecs: the bitmap
 *		and exponent, the layout (R, rows, 2-core), each worker's
 *		payload, the decoded sum and the fixed-point sum must be
 *		identical bit for bit, and the decoded sum must equal the
 *		dense fixed-point sum; NaN and Inf are refused alike.
 *		Prints "reduce-cuda test: N passed, N failed"; exits 1 on
 *		any failure.
 *	reduce-cuda bench [n [density [W [runs]]]]
 *		Times each stage on the GPU (CUDA events, medians of runs)
 *		and prints, as YAML, the dense gradient bytes per second of
 *		index, layout, encode and decode, and of encode+decode as a
 *		worker does them (index + layout + encode + decode).  The
 *		payload buffer is allocated once and kept, as a worker keeps
 *		it: its allocation is outside the stages' times.
 *		Defaults: n 2^28, density 0.01, W 8, runs 5.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

extern "C" {
#include "hcodec.h"
#include "util.h"
}
#include "hcodec_cuda.h"

static int pass, fail;
static unsigned case_block;	/* B of the next cases; 0: the default */

#define CHECK(c, ...) do {						\
	if (c)								\
		pass++;							\
	else {								\
		fail++;							\
		fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #c);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

#define CU(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "%s: %s\n", #call,			\
		    cudaGetErrorString(e_));				\
		exit(1);						\
	}								\
} while (0)

enum support { SUP_RANDOM, SUP_SAME, SUP_DISJOINT, SUP_ZERO };

#define rnd splitmix64

static void
gen(float *g, size_t n, double density, enum support sup, int W, int w,
    uint64_t seed)
{
	uint64_t s1 = seed * 7919, s2 = seed * 104729 + (uint64_t)w * 31337;
	uint64_t th = (uint64_t)(density * 18446744073709551615.0);
	size_t i;
	int on;

	for (i = 0; i < n; i++) {
		switch (sup) {
		case SUP_SAME:
			on = rnd(&s1) < th;
			break;
		case SUP_DISJOINT:
			on = (int)(i % (size_t)W) == w && rnd(&s2) < th;
			break;
		case SUP_ZERO:
			on = 0;
			break;
		default:
			on = rnd(&s2) < th;
		}
		g[i] = on ? (float)ldexp((double)(rnd(&s2) >> 40) + 1,
		    (int)(rnd(&s2) % 40) - 60) * ((rnd(&s2) & 1) ? 1 : -1) : 0;
	}
}

/* One case through both codecs; every stage compared. */
static void
one_case(size_t n, double density, enum support sup, int W, int bits,
    uint64_t seed)
{
	std::vector<std::vector<float> > g((size_t)W, std::vector<float>(n));
	std::vector<uint8_t> ub(hc_bitmap_bytes(n) + 1, 0), bits_c, bits_g;
	std::vector<const float *> gp((size_t)W);
	struct hc_params p;
	struct hc_layout *L = NULL;
	struct hc_cuda_layout *GL = NULL;
	struct hc_layout_info li;
	struct hc_cuda_layout_info gi;
	size_t nb = hc_bitmap_bytes(n), cb = (size_t)bits / 8, pl;
	float *dg = NULL, *dout = NULL;
	uint8_t *dbits = NULL;
	void *dpay = NULL, *dsum = NULL, *dfix = NULL;
	int w, e, eg, emax = HC_EXP_ZERO, s, rc, rcg;
	char what[160];

	snprintf(what, sizeof what, "n %zu density %g support %d W %d %d-bit "
	    "B %u", n, density, (int)sup, W, bits, case_block);
	for (w = 0; w < W; w++) {
		gen(g[w].data(), n, density, sup, W, w, seed);
		gp[w] = g[w].data();
	}
	CU(cudaMalloc((void **)&dg, n * 4 + 4));
	CU(cudaMalloc((void **)&dbits, nb + 8));
	bits_c.resize(nb + 1);
	bits_g.resize(nb + 1);
	/* Round 0 and 1, worker by worker. */
	for (w = 0; w < W; w++) {
		rc = hc_bitmap(gp[w], n, bits_c.data(), &e);
		CU(cudaMemcpy(dg, gp[w], n * 4, cudaMemcpyHostToDevice));
		rcg = hc_cuda_bitmap(dg, n, dbits, &eg, NULL);
		CU(cudaMemcpy(bits_g.data(), dbits, nb, cudaMemcpyDeviceToHost));
		CHECK(rc == rcg && e == eg && memcmp(bits_c.data(),
		    bits_g.data(), nb) == 0, "%s: bitmap of worker %d", what, w);
		hc_merge_or(ub.data(), n, bits_c.data(), n);
		hc_merge_max(&emax, e);
	}
	if (hc_scale(emax, W, bits, &s) != 0)
		s = 0;
	/* The layout. */
	hc_params_init(&p, n, bits);
	p.seed = seed;
	if (case_block != 0)
		p.block = case_block;
	CU(cudaMemcpy(dbits, ub.data(), nb, cudaMemcpyHostToDevice));
	rc = hc_layout_new(&p, ub.data(), &L);
	rcg = hc_cuda_layout_new(&p, dbits, &GL, NULL);
	CHECK(rc == 0 && rcg == 0, "%s: layouts %d %d (%s)", what, rc, rcg,
	    hc_cuda_error());
	if (rc != 0 || rcg != 0)
		goto out;
	/* A second layout while the first is alive: buffers of its own. */
	{
		struct hc_cuda_layout *GL2 = NULL;
		struct hc_cuda_layout_info g2, g1;

		rcg = hc_cuda_layout_new(&p, dbits, &GL2, NULL);
		hc_cuda_layout_info(GL, &g1);
		if (rcg == 0)
			hc_cuda_layout_info(GL2, &g2);
		CHECK(rcg == 0 && memcmp(&g1, &g2, sizeof g1) == 0,
		    "%s: a second layout (%d)", what, rcg);
		if (rcg == 0 && g1.core_count == g2.core_count &&
		    g1.core_count > 0) {
			std::vector<uint64_t> c1(g1.core_count),
			    c2(g1.core_count);

			CHECK(hc_cuda_layout_core(GL, c1.data()) == 0 &&
			    hc_cuda_layout_core(GL2, c2.data()) == 0 &&
			    c1 == c2, "%s: a second layout's core", what);
		}
		hc_cuda_layout_free(GL2);
	}
	hc_layout_info(L, &li);
	hc_cuda_layout_info(GL, &gi);
	/* HC_BLOCK_AUTO (case_block 0) must choose alike on both sides. */
	CHECK(case_block != 0 || (li.block == hc_block_auto(n,
	    li.union_count) || li.block == n), "%s: auto B %u", what,
	    li.block);
	CHECK(li.rows == gi.rows && li.cells == gi.cells &&
	    li.union_count == gi.union_count && li.core_count == gi.core_count &&
	    li.max_lane == gi.max_lane && li.block == gi.block,
	    "%s: R %u/%u, |U| %zu/%zu, |C| %zu/%zu", what, li.rows, gi.rows,
	    li.union_count, gi.union_count, li.core_count, gi.core_count);
	if (li.cells != gi.cells || li.core_count != gi.core_count)
		goto out;
	{
		std::vector<uint64_t> core(gi.core_count + 1);
		std::vector<uint32_t> rows(gi.nblocks * gi.k + 1);

		CHECK(hc_cuda_layout_core(GL, core.data()) == 0 &&
		    (li.core_count == 0 || memcmp(core.data(), li.core,
		    li.core_count * 8) == 0), "%s: the 2-core", what);
		CHECK(hc_cuda_layout_rows(GL, rows.data()) == 0 &&
		    (li.rows == 0 || memcmp(rows.data(), li.block_rows,
		    li.nblocks * li.k * 4) == 0), "%s: block rows", what);
	}
	/* Round 2: each worker's payload, summed on both sides. */
	pl = hc_layout_payload(L);
	{
		std::vector<uint8_t> pc(pl * cb + 1), pg(pl * cb + 1),
		    sum(pl * cb + 1, 0), fixed_c(n * cb + 1), fixed_g(n * cb + 1),
		    dense(n * cb + 1);
		std::vector<float> out_c(n + 1), out_g(n + 1);

		CU(cudaMalloc(&dpay, pl * cb + 8));
		CU(cudaMalloc(&dsum, pl * cb + 8));
		CU(cudaMalloc(&dfix, n * cb + 8));
		CU(cudaMalloc((void **)&dout, n * 4 + 4));
		CU(cudaMemset(dsum, 0, pl * cb + 8));
		for (w = 0; w < W; w++) {
			rc = hc_encode(L, gp[w], s, pc.data());
			CU(cudaMemcpy(dg, gp[w], n * 4, cudaMemcpyHostToDevice));
			rcg = hc_cuda_encode(GL, dg, s, dpay, NULL);
			CU(cudaMemcpy(pg.data(), dpay, pl * cb,
			    cudaMemcpyDeviceToHost));
			CHECK(rc == 0 && rcg == 0 && memcmp(pc.data(), pg.data(),
			    pl * cb) == 0, "%s: payload of worker %d (%d %d)",
			    what, w, rc, rcg);
			hc_merge_sum(sum.data(), pl, pc.data(), pl, bits);
			CHECK(hc_cuda_merge_sum(dsum, dpay, pl, bits, NULL) == 0,
			    "%s: merge", what);
		}
		/* Decode: float and fixed point, against the dense sum. */
		CU(cudaMemcpy(dpay, dsum, pl * cb, cudaMemcpyDeviceToDevice));
		std::vector<uint8_t> sum2(sum), sum3(sum);
		rc = hc_decode(L, sum.data(), s, out_c.data());
		rcg = hc_cuda_decode(GL, dsum, s, dout, NULL);
		CU(cudaMemcpy(out_g.data(), dout, n * 4, cudaMemcpyDeviceToHost));
		CHECK(rc == 0 && rcg == 0 && memcmp(out_c.data(), out_g.data(),
		    n * 4) == 0, "%s: decoded sums (%d %d)", what, rc, rcg);
		rc = hc_decode_fixed(L, sum2.data(), fixed_c.data());
		rcg = hc_cuda_decode_fixed(GL, dpay, dfix, NULL);
		CU(cudaMemcpy(fixed_g.data(), dfix, n * cb,
		    cudaMemcpyDeviceToHost));
		CHECK(hc_dense_fixed(gp.data(), W, n, s, bits, dense.data()) ==
		    0 && rc == 0 && rcg == 0 && memcmp(fixed_g.data(),
		    dense.data(), n * cb) == 0 && memcmp(fixed_c.data(),
		    dense.data(), n * cb) == 0, "%s: fixed-point sums", what);
		/*
		 * A sum that this layout did not make: one cell off by one.
		 * Whether decoding can tell is the same for both codecs.
		 */
		if (gi.cells > 0) {
			size_t c = (size_t)(seed * 2654435761u) % gi.cells;

			sum3[c * cb]++;
			CU(cudaMemcpy(dsum, sum3.data(), pl * cb,
			    cudaMemcpyHostToDevice));
			rc = hc_decode(L, sum3.data(), s, out_c.data());
			rcg = hc_cuda_decode(GL, dsum, s, dout, NULL);
			CHECK(rc == rcg && (rc == 0 || rc == HC_ECORRUPT),
			    "%s: a sum one off in cell %zu (%d %d)", what, c,
			    rc, rcg);
		}
	}
out:
	hc_layout_free(L);
	hc_cuda_layout_free(GL);
	cudaFree(dg);
	cudaFree(dbits);
	cudaFree(dpay);
	cudaFree(dsum);
	cudaFree(dfix);
	cudaFree(dout);
}

/* NaN and Inf: the same exponent and the same refusal. */
static void
nonfinite(void)
{
	float h[1000], *d;
	uint8_t *db, bits[125];
	struct hc_params p;
	struct hc_cuda_layout *GL = NULL;
	void *dpay;
	int e, rc, k;
	float bad[2] = { NAN, -INFINITY };

	CU(cudaMalloc((void **)&d, sizeof h));
	CU(cudaMalloc((void **)&db, sizeof bits));
	CU(cudaMalloc(&dpay, 1 << 20));
	for (k = 0; k < 2; k++) {
		memset(h, 0, sizeof h);
		h[17] = 1;
		h[500] = bad[k];
		CU(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
		rc = hc_cuda_bitmap(d, 1000, db, &e, NULL);
		CHECK(rc == HC_ENONFINITE && e == HC_EXP_NONFINITE,
		    "bitmap of a NaN/Inf: %d %d", rc, e);
		CU(cudaMemcpy(bits, db, sizeof bits, cudaMemcpyDeviceToHost));
		hc_params_init(&p, 1000, 32);
		CHECK(hc_cuda_layout_new(&p, db, &GL, NULL) == 0, "layout");
		CHECK(hc_cuda_encode(GL, d, 10, dpay, NULL) == HC_ENONFINITE,
		    "encode of a NaN/Inf");
		hc_cuda_layout_free(GL);
		GL = NULL;
	}
	/* A nonzero outside the union, and bits past n. */
	memset(h, 0, sizeof h);
	CU(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
	hc_cuda_bitmap(d, 1000, db, &e, NULL);
	hc_params_init(&p, 1000, 32);
	CHECK(hc_cuda_layout_new(&p, db, &GL, NULL) == 0, "empty layout");
	h[3] = 2;
	CU(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
	CHECK(hc_cuda_encode(GL, d, 10, dpay, NULL) == HC_ESUPPORT,
	    "nonzero outside the union");
	hc_cuda_layout_free(GL);
	GL = NULL;
	hc_params_init(&p, 999, 32);	/* 125 bytes; bit 999 is past n */
	memset(bits, 0, sizeof bits);
	bits[125 - 1] = 0x80;
	CU(cudaMemcpy(db, bits, sizeof bits, cudaMemcpyHostToDevice));
	CHECK(hc_cuda_layout_new(&p, db, &GL, NULL) == HC_EFORMAT,
	    "bits past n");
	cudaFree(d);
	cudaFree(db);
	cudaFree(dpay);
}

/*
 * HC_BLOCK_AUTO over unions larger than HC_AUTO_LANE * HC_BLOCK: B of
 * 2048 (75 % of 30 M) and 4096 (97 % of 50 M), both cell widths; and
 * B = 16384, whose lanes the layout counts in global memory, as
 * HC_BLOCK_AUTO's unions of more than 168 M coordinates make it do.
 */
static void
test_auto(void)
{
	one_case(30000001, 0.5, SUP_RANDOM, 2, 32, 900);
	one_case(30000001, 0.5, SUP_RANDOM, 2, 64, 901);
	one_case(50000017, 0.83, SUP_RANDOM, 2, 32, 902);
	/* More lanes than the lane count keeps in shared memory. */
	case_block = 16384;
	one_case(10000019, 0.2, SUP_RANDOM, 2, 32, 903);
	case_block = 0;
}

static int
test(int auto_only)
{
	static const size_t sizes[] = { 1, 7, 1000, 1024, 1025, 4099,
	    100003, 1 << 20, 10000019 };
	static const double dens[] = { 0.00001, 0.001, 0.01, 0.1, 0.5 };
	static const int Ws[] = { 1, 2, 5, 16 };
	size_t i, j;

	test_auto();
	if (auto_only)
		goto done;
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		one_case(sizes[i], 0.05, SUP_RANDOM, 3, 32, i + 1);
	for (i = 0; i < sizeof dens / sizeof dens[0]; i++) {
		one_case(2000003, dens[i], SUP_RANDOM, 4, 32, 100 + i);
		one_case(300007, dens[i], SUP_RANDOM, 2, 64, 200 + i);
	}
	for (j = 0; j < sizeof Ws / sizeof Ws[0]; j++) {
		one_case(200000, 0.02, SUP_SAME, Ws[j], 32, 300 + j);
		one_case(200000, 0.3, SUP_DISJOINT, Ws[j], 32, 400 + j);
		one_case(50000, 0, SUP_ZERO, Ws[j], 32, 500 + j);
	}
	/*
	 * Blocks of other sizes: B not a multiple of 32 (lanes' words
	 * straddle the union's), one lane, and lanes whose cells do not
	 * fit in shared memory (B = 64, a union of about 36 %: R about
	 * 70000), through the global-memory path of layout and decode.
	 */
	case_block = 100;
	one_case(1000003, 0.05, SUP_RANDOM, 3, 32, 800);
	case_block = 37;
	one_case(200001, 0.3, SUP_RANDOM, 2, 64, 801);
	case_block = 1;
	one_case(5003, 0.1, SUP_RANDOM, 2, 32, 802);
	case_block = 64;
	one_case(10000019, 0.2, SUP_RANDOM, 2, 32, 803);
	one_case(10000019, 0.2, SUP_RANDOM, 2, 64, 804);
	case_block = 0;
	/* Hundreds of millions of values. */
	one_case(300000007, 0.001, SUP_RANDOM, 2, 32, 600);
	/* The pools emptied: buffers made afresh. */
	hc_cuda_trim();
	one_case(100003, 0.05, SUP_RANDOM, 3, 64, 700);
	nonfinite();
done:
	printf("reduce-cuda test: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}

static double
median(std::vector<float> v)
{
	std::sort(v.begin(), v.end());
	return v.size() % 2 ? v[v.size() / 2] :
	    (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

static int
bench(size_t n, double density, int W, int runs)
{
	std::vector<float> h(n);
	std::vector<float> t_idx, t_lay, t_enc, t_dec;
	struct hc_params p;
	struct hc_cuda_layout *GL;
	struct hc_cuda_layout_info gi;
	cudaEvent_t ev[6];
	float *dg, *dout, ms;
	uint8_t *db;
	void *dpay = NULL;
	size_t paycap = 0, pl;
	double bytes = 4.0 * (double)n;
	int e, s, r, i;

	/* One worker's gradient; the union as W independent supports make. */
	gen(h.data(), n, 1 - pow(1 - density, W), SUP_RANDOM, W, 0, 1);
	CU(cudaMalloc((void **)&dg, n * 4));
	CU(cudaMalloc((void **)&dout, n * 4));
	CU(cudaMalloc((void **)&db, hc_bitmap_bytes(n) + 8));
	CU(cudaMemcpy(dg, h.data(), n * 4, cudaMemcpyHostToDevice));
	for (i = 0; i < 6; i++)
		CU(cudaEventCreate(&ev[i]));
	hc_params_init(&p, n, 32);
	for (r = 0; r <= runs; r++) {
		CU(cudaEventRecord(ev[0]));
		if (hc_cuda_bitmap(dg, n, db, &e, NULL) != 0)
			return 1;
		CU(cudaEventRecord(ev[1]));
		if (hc_cuda_layout_new(&p, db, &GL, NULL) != 0) {
			fprintf(stderr, "layout: %s\n", hc_cuda_error());
			return 1;
		}
		CU(cudaEventRecord(ev[2]));
		hc_cuda_layout_info(GL, &gi);
		hc_scale(e, W, 32, &s);
		pl = hc_cuda_layout_payload(GL) * 4 + 4;
		if (pl > paycap) {	/* the warm-up run, as a rule */
			cudaFree(dpay);
			CU(cudaMalloc(&dpay, pl));
			paycap = pl;
		}
		CU(cudaEventRecord(ev[5]));
		if (hc_cuda_encode(GL, dg, s, dpay, NULL) != 0)
			return 1;
		CU(cudaEventRecord(ev[3]));
		if (hc_cuda_decode(GL, dpay, s, dout, NULL) != 0)
			return 1;
		CU(cudaEventRecord(ev[4]));
		CU(cudaEventSynchronize(ev[4]));
		if (r > 0) {	/* the first run warms up */
			cudaEventElapsedTime(&ms, ev[0], ev[1]);
			t_idx.push_back(ms);
			cudaEventElapsedTime(&ms, ev[1], ev[2]);
			t_lay.push_back(ms);
			cudaEventElapsedTime(&ms, ev[5], ev[3]);
			t_enc.push_back(ms);
			cudaEventElapsedTime(&ms, ev[3], ev[4]);
			t_dec.push_back(ms);
		}
		hc_cuda_layout_free(GL);
	}
	cudaFree(dpay);
	double ti = median(t_idx) / 1e3, tl = median(t_lay) / 1e3,
	    te = median(t_enc) / 1e3, td = median(t_dec) / 1e3;
	printf("n: %zu\ndensity: %g\nworkers: %d\nunion_density: %.6f\n"
	    "block: %u\ncore: %zu\nrounds: %zu\nruns: %d\n"
	    "index_Bps: %.4g\nlayout_Bps: %.4g\nencode_Bps: %.4g\n"
	    "decode_Bps: %.4g\nencode_decode_Bps: %.4g\n",
	    n, density, W, (double)gi.union_count / (double)n, gi.block,
	    gi.core_count,
	    gi.nrounds, runs, bytes / ti, bytes / tl, bytes / te, bytes / td,
	    bytes / (ti + tl + te + td));
	return 0;
}

int
main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "test") == 0)
		return test(argc > 2 && strcmp(argv[2], "auto") == 0);
	if (argc >= 2 && strcmp(argv[1], "bench") == 0)
		return bench(argc > 2 ? strtoull(argv[2], NULL, 0) :
		    (size_t)1 << 28, argc > 3 ? atof(argv[3]) : 0.01,
		    argc > 4 ? atoi(argv[4]) : 8, argc > 5 ? atoi(argv[5]) : 5);
	fprintf(stderr, "usage: reduce-cuda test [auto]\n"
	    "       reduce-cuda bench [n [density [workers [runs]]]]\n");
	return 2;
}
