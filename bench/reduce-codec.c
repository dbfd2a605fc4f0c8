/*
 * bench/reduce-codec: what the homomorphic codec costs one worker's CPU,
 * stage by stage, as gleam-reduce's workers run it: W gradients of n
 * values like `gleam-reduce bench` makes (independent supports of the
 * given density), then for each of `reps` steps the bitmap of each, their
 * OR, the layout (hc_layout_renew, in the last step's memory), each
 * worker's encode, the aggregator's sum of the W payloads and one decode.
 * Buffers are reused from step to step, as hreduce reuses them.  Prints
 * the median over the steps of each stage, per worker (the bitmap and the
 * encode averaged over the W workers), in milliseconds.
 *
 *	cc -O2 -g -D_GNU_SOURCE -Ilib/common -Ilib/codec -o build/bench/reduce-codec \
 *	    bench/reduce-codec.c lib/libgleam.a -lpthread -lm
 *	build/bench/reduce-codec [n [density [W [reps [impl [threads]]]]]]
 *
 * Defaults: n 2097152, density 0.01, W 8, reps 21, impl fast (or ref),
 * threads 1 (hc_params.threads, and hc_bitmap_threads).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hcodec.h"
#include "util.h"

#define STAGES	5

static const char *const stage[STAGES] = {
	"bitmap", "layout", "encode", "agg sum", "decode"
};

/* gleam-reduce bench's gradient: gleam-reduce/bench.c, overlap 0. */
#define mix splitmix64_at

static void
gradient(float *g, size_t n, double density, int w)
{
	uint64_t shared = mix(1 ^ mix(1)), own = mix(shared ^ mix((uint64_t)w +
	    0x1000)), th = (uint64_t)(density * 18446744073709551615.0), x;
	size_t i;

	for (i = 0; i < n; i++) {
		x = mix(own + i);
		if (density > 0 && x < th) {
			x = mix(x);
			g[i] = (float)(((double)(x >> 40) + 0.5) / 16777216.0 *
			    2.0 - 1.0);
		} else
			g[i] = 0;
	}
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *
xmalloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (p == NULL) {
		perror("malloc");
		exit(2);
	}
	return p;
}

int
main(int argc, char *argv[])
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 2097152;
	double density = argc > 2 ? atof(argv[2]) : 0.01;
	int W = argc > 3 ? atoi(argv[3]) : 8;
	int reps = argc > 4 ? atoi(argv[4]) : 21;
	int ref = argc > 5 && strcmp(argv[5], "ref") == 0;
	int threads = argc > 6 ? atoi(argv[6]) : 1;
	struct hc_layout *L = NULL;
	struct hc_layout_info li;
	struct hc_params p;
	size_t nb = hc_bitmap_bytes(n), pb = 0, cap = 0;
	float **g, *out;
	uint8_t **bm, *u;
	void **pay = NULL;
	double *t[STAGES], t0, t1;
	int r, w, e, emax, s, i, rc;

	if (W < 1 || reps < 1 || density < 0 || density > 1) {
		fprintf(stderr, "usage: reduce-codec [n [density [W [reps "
		    "[fast|ref]]]]]\n");
		return 2;
	}
	g = xmalloc((size_t)W * sizeof *g);
	bm = xmalloc((size_t)W * sizeof *bm);
	pay = calloc((size_t)W, sizeof *pay);
	for (w = 0; w < W; w++) {
		g[w] = xmalloc(n * sizeof **g);
		gradient(g[w], n, density, w);
		bm[w] = xmalloc(nb);
	}
	u = xmalloc(nb);
	out = xmalloc(n * sizeof *out);
	memset(out, 0, n * sizeof *out);
	for (i = 0; i < STAGES; i++)
		t[i] = xmalloc((size_t)reps * sizeof *t[i]);
	for (r = 0; r < reps; r++) {
		emax = HC_EXP_ZERO;
		t0 = now_s();
		for (w = 0; w < W; w++) {
			hc_bitmap_threads(g[w], n, bm[w], &e, threads);
			hc_merge_max(&emax, e);
		}
		t[0][r] = (now_s() - t0) / W;
		memcpy(u, bm[0], nb);
		for (w = 1; w < W; w++)
			hc_merge_or(u, n, bm[w], n);
		hc_params_init(&p, n, 32);
		p.seed = 1;
		p.impl = ref ? HC_IMPL_REF : HC_IMPL_FAST;
		p.threads = threads;
		if (hc_scale(emax, W, 32, &s) != 0)
			return 1;
		t0 = now_s();
		if ((rc = hc_layout_renew(&p, u, &L)) != 0) {
			fprintf(stderr, "layout: %s\n", hc_strerror(rc));
			return 1;
		}
		t[1][r] = now_s() - t0;
		pb = hc_layout_payload(L) * 4;
		if (pb > cap) {
			for (w = 0; w < W; w++) {
				free(pay[w]);
				pay[w] = xmalloc(pb);
			}
			cap = pb;
		}
		t0 = now_s();
		for (w = 0; w < W; w++)
			if ((rc = hc_encode(L, g[w], s, pay[w])) != 0) {
				fprintf(stderr, "encode: %s\n", hc_strerror(rc));
				return 1;
			}
		t1 = now_s();
		t[2][r] = (t1 - t0) / W;
		for (w = 1; w < W; w++)
			hc_merge_sum(pay[0], pb / 4, pay[w], pb / 4, 32);
		t0 = now_s();
		t[3][r] = t0 - t1;
		if ((rc = hc_decode(L, pay[0], s, out)) != 0) {
			fprintf(stderr, "decode: %s\n", hc_strerror(rc));
			return 1;
		}
		t[4][r] = now_s() - t0;
	}
	hc_layout_info(L, &li);
	printf("n %zu, density %g, W %d, %s: union %.2f%%, |C| %zu, "
	    "payload %zu bytes, R %u, %zu rounds; median of %d steps, ms\n",
	    n, density, W, ref ? "ref" : "fast",
	    100.0 * (double)li.union_count / (double)(n ? n : 1),
	    li.core_count, pb, li.rows, li.nrounds, reps);
	for (i = 0, t0 = 0; i < STAGES; i++) {
		qsort(t[i], (size_t)reps, sizeof *t[i], dcmp);
		printf("%s %.3f%s", stage[i], t[i][reps / 2] * 1e3,
		    i < STAGES - 1 ? ", " : "");
		if (i != 3)
			t0 += t[i][reps / 2];
	}
	printf("; a worker: %.3f\n", t0 * 1e3);
	hc_layout_free(L);
	for (w = 0; w < W; w++) {
		free(g[w]);
		free(bm[w]);
		free(pay[w]);
	}
	for (i = 0; i < STAGES; i++)
		free(t[i]);
	free(g);
	free(bm);
	free(pay);
	free(u);
	free(out);
	return 0;
}
