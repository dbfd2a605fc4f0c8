/*
 * libFuzzer target: what a worker decodes of an aggregator's answer, the
 * merged bitmap (hc_layout_new) and the summed payload (hc_decode,
 * hc_decode_fixed), whatever the bytes.  Both implementations run and must
 * agree: the same layout and 2-core, the same verdict on the payload and,
 * when it is consistent, the same numbers.  Then a real round of two
 * workers over the same union must decode to the dense fixed-point sum.
 *
 * Input: flags, n (2 bytes), block, seed, then the bitmap, then payload
 * bytes, repeated as needed to fill the payload.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hcodec.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static const unsigned blocks[] = { 1, 2, 3, 7, 8, 16, 33, 64, 100, 1024 };

/* Two worker gradients on the union, values from the input bytes. */
static void
workers(const uint8_t *ub, size_t n, const uint8_t *src, size_t len,
    float *g0, float *g1)
{
	size_t i;
	int8_t a, b;

	for (i = 0; i < n; i++) {
		g0[i] = g1[i] = 0;
		if (!((ub[i / 8] >> (i % 8)) & 1) || len == 0)
			continue;
		a = (int8_t)src[(2 * i) % len];
		b = (int8_t)src[(2 * i + 1) % len];
		g0[i] = (float)a * 0.375f;
		g1[i] = (float)b / 3.0f;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_params p;
	struct hc_layout *L[2] = { NULL, NULL };
	struct hc_layout_info in[2];
	const uint8_t *rest;
	uint8_t *ub = NULL, *acc = NULL;
	void *pay = NULL, *sum = NULL, *work = NULL, *fx[2] = { NULL, NULL };
	float *out[2] = { NULL, NULL }, *g0 = NULL, *g1 = NULL;
	const float *gs[2];
	size_t n, nb, np, cb, i, restlen;
	int bits, rc[2], r2[2], m, e0, e1, s;

	if (size < 5)
		return 0;
	bits = data[0] & 1 ? 64 : 32;
	cb = (size_t)bits / 8;
	n = ((size_t)data[1] | (size_t)data[2] << 8) % 2048;
	nb = hc_bitmap_bytes(n);
	if ((ub = calloc(nb + 1, 1)) == NULL)
		goto out;
	for (i = 0; i < nb && 5 + i < size; i++)
		ub[i] = data[5 + i];
	rest = data + 5 + (nb < size - 5 ? nb : size - 5);
	restlen = size - (size_t)(rest - data);

	/* The merge helpers check the sizes they are given. */
	if ((acc = calloc(nb + 1, 1)) == NULL)
		goto out;
	ENSURE(hc_merge_or(acc, n, ub, n + (data[4] & 1)) ==
	    ((data[4] & 1) ? HC_ESIZE : (n % 8 && ub[nb - 1] >> (n % 8) ?
	    HC_EFORMAT : 0)));

	for (m = 0; m < 2; m++) {
		hc_params_init(&p, n, bits);
		p.block = blocks[data[3] % (sizeof blocks / sizeof blocks[0])];
		p.k = 2 + (data[0] >> 1) % 3;
		p.seed = data[4];
		p.impl = m;
		rc[m] = hc_layout_new(&p, ub, &L[m]);
		if (rc[m] == 0)
			hc_layout_info(L[m], &in[m]);
	}
	ENSURE(rc[0] == rc[1]);
	if (rc[0] != 0) {
		ENSURE(rc[0] == HC_EFORMAT);
		goto out;
	}
	ENSURE(in[0].rows == in[1].rows && in[0].cells == in[1].cells);
	ENSURE(in[0].core_count == in[1].core_count);
	for (i = 0; i < in[0].core_count; i++)
		ENSURE(in[0].core[i] == in[1].core[i]);
	np = hc_layout_payload(L[0]);

	/* Hostile sums: the same verdict, the same numbers if consistent. */
	if ((pay = calloc(np + 1, cb)) == NULL ||
	    (sum = calloc(np + 1, cb)) == NULL ||
	    (work = calloc(np + 1, cb)) == NULL ||
	    (fx[0] = calloc(n + 1, cb)) == NULL ||
	    (fx[1] = calloc(n + 1, cb)) == NULL ||
	    (out[0] = calloc(n + 1, sizeof *out[0])) == NULL ||
	    (out[1] = calloc(n + 1, sizeof *out[1])) == NULL ||
	    (g0 = calloc(n + 1, sizeof *g0)) == NULL ||
	    (g1 = calloc(n + 1, sizeof *g1)) == NULL)
		goto out;
	for (i = 0; i < np * cb && restlen > 0; i++)
		((uint8_t *)pay)[i] = rest[i % restlen];
	s = (int)(data[4] % 40);
	for (m = 0; m < 2; m++) {
		memcpy(work, pay, np * cb);
		rc[m] = hc_decode_fixed(L[m], work, fx[m]);
		memcpy(work, pay, np * cb);
		r2[m] = hc_decode(L[m], work, s, out[m]);
		ENSURE(rc[m] == 0 || rc[m] == HC_ECORRUPT);
		ENSURE(r2[m] == rc[m]);
	}
	ENSURE(rc[0] == rc[1]);
	if (rc[0] == 0) {
		ENSURE(memcmp(fx[0], fx[1], n * cb) == 0);
		ENSURE(memcmp(out[0], out[1], n * sizeof *out[0]) == 0);
	}

	/* A real round of two workers on this union decodes exactly. */
	workers(ub, n, rest, restlen, g0, g1);
	ENSURE(hc_exponent(g0, n, &e0) == 0 && hc_exponent(g1, n, &e1) == 0);
	ENSURE(hc_merge_max(&e0, e1) == 0);
	ENSURE(hc_scale(e0, 2, bits, &s) == 0);
	gs[0] = g0;
	gs[1] = g1;
	for (m = 0; m < 2; m++) {
		memset(sum, 0, np * cb);
		ENSURE(hc_encode(L[m], g0, s, pay) == 0);
		ENSURE(hc_merge_sum(sum, np, pay, np, bits) == 0);
		ENSURE(hc_encode(L[m], g1, s, pay) == 0);
		ENSURE(hc_merge_sum(sum, np, pay, np, bits) == 0);
		ENSURE(hc_decode_fixed(L[m], sum, fx[m]) == 0);
	}
	ENSURE(memcmp(fx[0], fx[1], n * cb) == 0);
	ENSURE(hc_dense_fixed(gs, 2, n, s, bits, fx[1]) == 0);
	ENSURE(memcmp(fx[0], fx[1], n * cb) == 0);
out:
	hc_layout_free(L[0]);
	hc_layout_free(L[1]);
	free(ub);
	free(acc);
	free(pay);
	free(sum);
	free(work);
	free(fx[0]);
	free(fx[1]);
	free(out[0]);
	free(out[1]);
	free(g0);
	free(g1);
	return 0;
}
