/*
 * hcodec, the fast implementation.  Cell (r, t) only ever holds lane t, so
 * every lane is its own small hypergraph (u_t items, R cells) and is peeled
 * alone, with counts that stay in cache.  The layout keeps the order in
 * which peeling reached each coordinate, grouped in the rounds of a
 * parallel peel; decoding replays it without counts or searches.
 */
#include <stdlib.h>
#include <string.h>

#include "hcodec.h"
#include "hcodec_int.h"

struct pending {
	uint32_t	r;	/* a cell whose count fell to 1 */
	uint32_t	label;	/* the round in which it became pure */
};

/*
 * Peels lane t: lab and jsel (indexed like the lane's items) get each
 * coordinate's round and the row j of its pure cell; what stays
 * HC_CORE_LABEL is the lane's 2-core.  The queue is first in, first out
 * and labels enter it in order, so a cell's label is the round in which a
 * synchronous peel finds it pure: the round structure the GPU needs.  The
 * items' rows are copied next to each other first, and the pushes are
 * branch-free, since which counts fall to 1 is random.
 */
static uint32_t
peel_lane(const struct hc_layout *L, const uint32_t *items, uint32_t u,
    uint32_t *cnt, uint32_t *x, uint32_t *lrows, struct pending *q,
    uint32_t *lab, uint8_t *jsel)
{
	const uint32_t *rb;
	size_t head = 0, tail = 0;
	uint32_t p, r, rr, l, maxlab = 0;
	unsigned j, k = L->p.k;

	memset(cnt, 0, L->R * sizeof *cnt);
	memset(x, 0, L->R * sizeof *x);
	for (p = 0; p < u; p++) {
		rb = L->rows + (size_t)items[p] * k;
		for (j = 0; j < k; j++) {
			lrows[(size_t)p * k + j] = rb[j];
			cnt[rb[j]]++;
			x[rb[j]] ^= p;
		}
	}
	for (r = 0; r < L->R; r++) {
		q[tail].r = r;
		q[tail].label = 0;
		tail += cnt[r] == 1;
	}
	while (head < tail) {
		r = q[head].r;
		l = q[head++].label;
		if (cnt[r] != 1)
			continue;
		p = x[r];
		rb = lrows + (size_t)p * k;
		lab[p] = l;
		maxlab = l > maxlab ? l : maxlab;
		for (j = 0; j < k; j++) {
			rr = rb[j];
			jsel[p] = rr == r ? (uint8_t)j : jsel[p];
			cnt[rr]--;
			x[rr] ^= p;
			q[tail].r = rr;
			q[tail].label = l + 1;
			tail += cnt[rr] == 1;
		}
	}
	return maxlab;
}

/*
 * Buckets the union by lane, peels each lane, then lays the schedule out
 * by round and, within a round, by coordinate, walking the union once
 * more in order with a cursor per lane.
 */
int
hc_fast_layout(struct hc_layout *L)
{
	struct hc_iter it;
	struct pending *q = NULL;
	size_t *off = NULL, *cur = NULL, *fill = NULL, B = L->p.block;
	size_t i, b, t, pos, nr, r;
	uint32_t *items = NULL, *lab = NULL, *cnt = NULL, *x = NULL, m;
	uint32_t *lrows = NULL;
	uint32_t maxlab = 0;
	uint8_t *jsel = NULL;
	int rc = HC_ENOMEM, any = 0;

	if ((L->round_start = calloc(1, sizeof *L->round_start)) == NULL)
		return HC_ENOMEM;
	if (L->ucount == 0)
		return 0;
	if ((off = calloc(B + 1, sizeof *off)) == NULL ||
	    (cur = malloc(B * sizeof *cur)) == NULL ||
	    (items = malloc(L->ucount * sizeof *items)) == NULL ||
	    (lab = malloc(L->ucount * sizeof *lab)) == NULL ||
	    (jsel = calloc(L->ucount, 1)) == NULL ||
	    (cnt = malloc(L->R * sizeof *cnt)) == NULL ||
	    (x = malloc(L->R * sizeof *x)) == NULL ||
	    (lrows = malloc((size_t)L->umax * L->p.k * sizeof *lrows)) ==
	    NULL ||
	    (q = malloc((L->R + (size_t)L->p.k * L->umax + 1) * sizeof *q)) ==
	    NULL)
		goto out;

	hc_iter_init(&it, L->ubits, L->p.n, B);
	while (hc_iter_next(&it, &i, &b, &t))
		off[t + 1]++;
	for (t = 0; t < B; t++) {
		off[t + 1] += off[t];
		cur[t] = off[t];
	}
	hc_iter_init(&it, L->ubits, L->p.n, B);
	while (hc_iter_next(&it, &i, &b, &t))
		items[cur[t]++] = (uint32_t)b;

	for (pos = 0; pos < L->ucount; pos++)
		lab[pos] = HC_CORE_LABEL;
	for (t = 0; t < B; t++) {
		if (off[t + 1] == off[t])
			continue;
		m = peel_lane(L, items + off[t], (uint32_t)(off[t + 1] -
		    off[t]), cnt, x, lrows, q, lab + off[t], jsel + off[t]);
		maxlab = m > maxlab ? m : maxlab;
	}

	/* Rounds: a histogram of labels, then their starts. */
	for (pos = 0; pos < L->ucount; pos++) {
		if (lab[pos] == HC_CORE_LABEL)
			L->ncore++;
		else
			any = 1;
	}
	nr = any ? (size_t)maxlab + 1 : 0;
	free(L->round_start);
	L->npeel = L->ucount - L->ncore;
	if ((L->round_start = calloc(nr + 1, sizeof *L->round_start)) ==
	    NULL || (fill = calloc(nr + 1, sizeof *fill)) == NULL ||
	    (L->peel = malloc((L->npeel + 1) * sizeof *L->peel)) == NULL ||
	    (L->core = malloc((L->ncore + 1) * sizeof *L->core)) == NULL)
		goto out;
	L->nrounds = nr;
	for (pos = 0; pos < L->ucount; pos++)
		if (lab[pos] != HC_CORE_LABEL)
			L->round_start[lab[pos] + 1]++;
	for (r = 0; r < nr; r++) {
		L->round_start[r + 1] += L->round_start[r];
		fill[r] = L->round_start[r];
	}

	L->ncore = 0;
	for (t = 0; t < B; t++)
		cur[t] = off[t];
	hc_iter_init(&it, L->ubits, L->p.n, B);
	while (hc_iter_next(&it, &i, &b, &t)) {
		pos = cur[t]++;
		if (lab[pos] == HC_CORE_LABEL)
			L->core[L->ncore++] = i;
		else
			L->peel[fill[lab[pos]]++] =
			    (uint64_t)b << HC_PEEL_B_SHIFT |
			    (uint64_t)t << HC_PEEL_T_SHIFT | jsel[pos];
	}
	rc = 0;
out:
	free(off);
	free(cur);
	free(fill);
	free(items);
	free(lab);
	free(jsel);
	free(cnt);
	free(x);
	free(lrows);
	free(q);
	return rc;
}

/* Sixteen zeros (of either sign) cost eight loads and ORs. */
static inline int
zero16(const float *g)
{
	uint64_t w[8];

	memcpy(w, g, sizeof w);
	return ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) &
	    0x7fffffff7fffffffULL) == 0;
}

/*
 * Block by block so that lanes need no division and the k row pointers
 * are fetched once; zeros are skipped sixteen at a time.  C's coordinates
 * go into the sketch like the others and are taken out again at the end,
 * exactly, since the sums wrap.
 */
static int
encode_blocks(const struct hc_layout *L, const float *g, double p,
    void *payload)
{
	const uint32_t *rb;
	size_t b, base, len, t0, t, m, B = L->p.block, i;
	unsigned j, k = L->p.k;
	int bits = L->p.cell_bits, rc;
	uint32_t w;
	uint64_t q;

	for (b = 0; b < L->nblocks; b++) {
		base = b * B;
		len = L->p.n - base < B ? L->p.n - base : B;
		rb = L->rows != NULL ? L->rows + b * k : NULL;
		for (t0 = 0; t0 < len; t0 += 16) {
			m = len - t0 < 16 ? len - t0 : 16;
			if (m == 16 && zero16(g + base + t0))
				continue;
			for (t = t0; t < t0 + m; t++) {
				i = base + t;
				w = hc_fbits(g[i]) & 0x7fffffffu;
				if (w == 0)
					continue;
				if (w >= 0x7f800000u)
					return HC_ENONFINITE;
				if (!hc_bit(L->ubits, i))
					return HC_ESUPPORT;
				if ((rc = hc_quantize_p(g[i], p, bits, &q)) !=
				    0)
					return rc;
				if (bits == 32)
					for (j = 0; j < k; j++)
						((uint32_t *)payload)[(size_t)
						    rb[j] * B + t] += (uint32_t)q;
				else
					for (j = 0; j < k; j++)
						((uint64_t *)payload)[(size_t)
						    rb[j] * B + t] += q;
			}
		}
	}
	return 0;
}

/* The sketch of every coordinate, then C's values moved to the list. */
int
hc_fast_encode(const struct hc_layout *L, const float *g, double p,
    void *payload)
{
	size_t c, i, b, t;
	uint64_t q;
	unsigned j;
	int bits = L->p.cell_bits, rc;

	hc_zero(payload, hc_layout_payload(L) * (size_t)(bits / 8));
	if ((rc = encode_blocks(L, g, p, payload)) != 0)
		return rc;
	for (c = 0; c < L->ncore; c++) {
		i = L->core[c];
		if ((hc_fbits(g[i]) & 0x7fffffffu) == 0)
			continue;
		if ((rc = hc_quantize_p(g[i], p, bits, &q)) != 0)
			return rc;
		b = i / L->p.block;
		t = i % L->p.block;
		for (j = 0; j < L->p.k; j++)
			hc_cell_add(payload, (size_t)L->rows[b * L->p.k + j] *
			    L->p.block + t, -q, bits);
		hc_cell_put(payload, L->ncells + c, q, bits);
	}
	return 0;
}

/*
 * Replays the schedule: each entry's pure cell holds its coordinate's sum,
 * which then leaves all k of its cells.  A consistent sketch ends all zero;
 * anything left means the sums were not what the workers encoded.  The
 * schedule is local, so hostile cells can give wrong numbers but never an
 * index out of range.
 */
int
hc_fast_decode(const struct hc_layout *L, void *sum, void *fixed,
    float *out, double pinv)
{
	const uint32_t *rb;
	size_t e, b, t, i, c, B = L->p.block;
	uint64_t v, left = 0;
	unsigned j, jp, k = L->p.k;
	int bits = L->p.cell_bits;

	if (fixed != NULL)
		hc_zero(fixed, L->p.n * (size_t)(bits / 8));
	else
		hc_zero(out, L->p.n * sizeof *out);
	for (e = 0; e < L->npeel; e++) {
		b = (size_t)(L->peel[e] >> HC_PEEL_B_SHIFT);
		t = (size_t)(L->peel[e] >> HC_PEEL_T_SHIFT) & 0xffff;
		jp = (unsigned)(L->peel[e] & 0xf);
		rb = L->rows + b * k;
		i = b * B + t;
		if (bits == 32) {
			uint32_t *s32 = sum, v32;

			v32 = s32[(size_t)rb[jp] * B + t];
			for (j = 0; j < k; j++)
				s32[(size_t)rb[j] * B + t] -= v32;
			v = v32;
		} else {
			uint64_t *s64 = sum;

			v = s64[(size_t)rb[jp] * B + t];
			for (j = 0; j < k; j++)
				s64[(size_t)rb[j] * B + t] -= v;
		}
		if (fixed != NULL)
			hc_cell_put(fixed, i, v, bits);
		else
			out[i] = hc_dequantize_p(hc_cell_signed(v, bits), pinv);
	}
	for (c = 0; c < L->ncore; c++) {
		v = hc_cell_get(sum, L->ncells + c, bits);
		if (fixed != NULL)
			hc_cell_put(fixed, L->core[c], v, bits);
		else
			out[L->core[c]] = hc_dequantize_p(hc_cell_signed(v,
			    bits), pinv);
	}
	for (c = 0; c < L->ncells; c++)
		left |= hc_cell_get(sum, c, bits);
	return left != 0 ? HC_ECORRUPT : 0;
}
