/*
 * hcodec, the reference implementation: ref/homomorphic.md transcribed as
 * plainly as possible, for the tests to hold the fast one against.  Every
 * cell carries the count of union coordinates in it and the XOR of their
 * block ids; peeling takes any cell whose count is 1, from one queue over
 * the whole sketch.
 */
#include <stdlib.h>
#include <string.h>

#include "hcodec.h"
#include "hcodec_int.h"

static size_t
cell_of(const struct hc_layout *L, size_t b, size_t t, unsigned j)
{
	return (size_t)L->rows[b * L->p.k + j] * L->p.block + t;
}

/* Puts coordinate (b, t) into the count and idx of its k cells. */
static void
structure_add(const struct hc_layout *L, uint32_t *count, uint32_t *idx,
    size_t b, size_t t)
{
	size_t c;
	unsigned j;

	for (j = 0; j < L->p.k; j++) {
		c = cell_of(L, b, t, j);
		count[c]++;
		idx[c] ^= (uint32_t)b;
	}
}

/*
 * Peels count and idx, marking each coordinate reached in done; with vals,
 * the values too: a pure cell's value is its coordinate's, which leaves
 * all k cells of the coordinate, the pure one included, so that a
 * consistent sketch ends all zero.  Each pass through the loop either
 * skips a queued cell or peels a new coordinate, and a cell is queued only
 * when a count falls to 1, so the queue is bounded and the loop ends.
 */
static int
peel(const struct hc_layout *L, uint32_t *count, uint32_t *idx,
    uint8_t *done, void *vals, void *fixed)
{
	size_t *queue, head = 0, tail = 0, c, cc, b, t, i;
	int bits = L->p.cell_bits, rc = 0;
	uint64_t v = 0;
	unsigned j;

	queue = malloc((L->ncells + (size_t)L->p.k * L->ucount + 1) *
	    sizeof *queue);
	if (queue == NULL)
		return HC_ENOMEM;
	for (c = 0; c < L->ncells; c++)
		if (count[c] == 1)
			queue[tail++] = c;
	while (head < tail) {
		c = queue[head++];
		if (count[c] != 1)
			continue;
		b = idx[c];
		t = c % L->p.block;
		i = b * L->p.block + t;
		/* The structure is local, so these hold; check anyway. */
		for (j = 0; j < L->p.k && b < L->nblocks &&
		    cell_of(L, b, t, j) != c; j++)
			;
		if (b >= L->nblocks || j == L->p.k || i >= L->p.n ||
		    !hc_bit(L->ubits, i) || hc_bit(done, i)) {
			rc = HC_ECORRUPT;
			break;
		}
		hc_bit_set(done, i);
		if (vals != NULL) {
			v = hc_cell_get(vals, c, bits);
			hc_cell_put(fixed, i, v, bits);
		}
		for (j = 0; j < L->p.k; j++) {
			cc = cell_of(L, b, t, j);
			count[cc]--;
			idx[cc] ^= (uint32_t)b;
			if (vals != NULL)
				hc_cell_add(vals, cc, -v, bits);
			if (count[cc] == 1)
				queue[tail++] = cc;
		}
	}
	free(queue);
	return rc;
}

/* Counts and idx from the union, a peel to find the 2-core. */
int
hc_ref_layout(struct hc_layout *L)
{
	uint8_t *done = NULL;
	size_t i, nc = 0;
	int rc = HC_ENOMEM;

	if ((L->count = calloc(L->ncells + 1, sizeof *L->count)) == NULL ||
	    (L->idx = calloc(L->ncells + 1, sizeof *L->idx)) == NULL ||
	    (done = calloc(hc_bitmap_bytes(L->p.n) + 1, 1)) == NULL)
		goto out;
	for (i = 0; i < L->p.n; i++)
		if (hc_bit(L->ubits, i))
			structure_add(L, L->count, L->idx, i / L->p.block,
			    i % L->p.block);
	if ((rc = peel(L, L->count, L->idx, done, NULL, NULL)) != 0)
		goto out;

	for (i = 0; i < L->p.n; i++)
		if (hc_bit(L->ubits, i) && !hc_bit(done, i))
			L->ncore++;
	rc = HC_ENOMEM;
	if ((L->core = hc_buf_get(&L->b_core, (L->ncore + 1) *
	    sizeof *L->core)) == NULL)
		goto out;
	for (i = 0; i < L->p.n; i++)
		if (hc_bit(L->ubits, i) && !hc_bit(done, i))
			L->core[nc++] = i;

	/* What decoding starts from: the structure without C. */
	memset(L->count, 0, L->ncells * sizeof *L->count);
	memset(L->idx, 0, L->ncells * sizeof *L->idx);
	for (i = 0; i < L->p.n; i++)
		if (hc_bit(done, i))
			structure_add(L, L->count, L->idx, i / L->p.block,
			    i % L->p.block);
	rc = 0;
out:
	free(done);
	return rc;
}

/* Coordinate by coordinate: C's values to the list, others to k cells. */
int
hc_ref_encode(const struct hc_layout *L, const float *g, double p,
    void *payload)
{
	int bits = L->p.cell_bits, rc;
	size_t i, pos;
	uint64_t q;
	uint32_t w;
	unsigned j;

	hc_zero(payload, hc_layout_payload(L) * (size_t)(bits / 8));
	for (i = 0; i < L->p.n; i++) {
		w = hc_fbits(g[i]) & 0x7fffffffu;
		if (w == 0)
			continue;
		if (w >= 0x7f800000u)
			return HC_ENONFINITE;
		if (!hc_bit(L->ubits, i))
			return HC_ESUPPORT;
		if ((rc = hc_quantize_p(g[i], p, bits, &q)) != 0)
			return rc;
		if ((pos = hc_core_find(L, i)) != SIZE_MAX) {
			hc_cell_put(payload, L->ncells + pos, q, bits);
			continue;
		}
		for (j = 0; j < L->p.k; j++)
			hc_cell_add(payload, cell_of(L, i / L->p.block,
			    i % L->p.block, j), q, bits);
	}
	return 0;
}

/* Peels a copy of the structure along with the values, then checks. */
int
hc_ref_decode(const struct hc_layout *L, void *sum, void *fixed)
{
	uint32_t *count = NULL, *idx = NULL;
	uint8_t *done = NULL;
	int bits = L->p.cell_bits, rc = HC_ENOMEM;
	size_t c, j;

	hc_zero(fixed, L->p.n * (size_t)(bits / 8));
	if ((count = malloc((L->ncells + 1) * sizeof *count)) == NULL ||
	    (idx = malloc((L->ncells + 1) * sizeof *idx)) == NULL ||
	    (done = calloc(hc_bitmap_bytes(L->p.n) + 1, 1)) == NULL)
		goto out;
	if (L->ncells > 0) {
		memcpy(count, L->count, L->ncells * sizeof *count);
		memcpy(idx, L->idx, L->ncells * sizeof *idx);
	}
	if ((rc = peel(L, count, idx, done, sum, fixed)) != 0)
		goto out;
	for (j = 0; j < L->ncore; j++)
		hc_cell_put(fixed, L->core[j], hc_cell_get(sum, L->ncells + j,
		    bits), bits);
	for (c = 0; c < L->ncells; c++)
		if (count[c] != 0 || hc_cell_get(sum, c, bits) != 0)
			rc = HC_ECORRUPT;
out:
	free(count);
	free(idx);
	free(done);
	return rc;
}
