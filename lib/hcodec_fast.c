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

/*
 * Peels lane t: lab and jsel (indexed like the lane's items) get each
 * coordinate's round and the row j of its pure cell; what stays
 * HC_CORE_LABEL is the lane's 2-core.  The queue is first in, first out,
 * so it holds the cells of one round after another: a cell's round is
 * the one in which a synchronous peel finds it pure, the round structure
 * the GPU needs, and it is known from where the cell sits in the queue.
 * The items' rows are copied next to each other first, and the pushes are
 * branch-free, since which counts fall to 1 is random.  cnt and x are all
 * zero on entry and are left so: peeling takes every coordinate but the
 * 2-core's back out of them, and the 2-core's rows are cleared at the end.
 */
static uint32_t
peel_lane(const struct hc_layout *L, const uint32_t *items, uint32_t u,
    uint32_t *cnt, uint32_t *x, uint32_t *lrows, uint32_t *q,
    uint32_t *lab, uint8_t *jsel)
{
	const uint32_t *rb;
	size_t head = 0, tail = 0, end;
	uint32_t p, r, rr, v, l = 0, maxlab = 0;
	unsigned j, js, k = L->p.k;

	for (p = 0; p < u; p++) {
		rb = L->rows + (size_t)items[p] * k;
		lab[p] = HC_CORE_LABEL;
		for (j = 0; j < k; j++) {
			lrows[(size_t)p * k + j] = rb[j];
			cnt[rb[j]]++;
			x[rb[j]] ^= p;
		}
	}
	for (r = 0; r < L->R; r++) {
		q[tail] = r;
		tail += cnt[r] == 1;
	}
	end = tail;
	while (head < tail) {
		if (head == end) {
			l++;
			end = tail;
		}
		/*
		 * A queued cell held one coordinate when it was queued and may
		 * have lost it since, through another of its cells: its count
		 * is 1 or 0, and with 0 its x is 0 too.  Which is random, so
		 * rather than branch, v masks every effect of a cell found
		 * empty (p is then 0 and its rows are only read).
		 */
		r = q[head++];
		v = cnt[r];
		p = x[r];
		rb = lrows + (size_t)p * k;
		js = 0;
		for (j = 0; j < k; j++) {
			rr = rb[j];
			js = rr == r ? j : js;
			cnt[rr] -= v;
			x[rr] ^= p;
			q[tail] = rr;
			tail += v & (cnt[rr] == 1);
		}
		lab[p] = v ? l : lab[p];
		jsel[p] = v ? (uint8_t)js : jsel[p];
		maxlab = v ? l : maxlab;
	}
	for (p = 0; p < u; p++)
		if (lab[p] == HC_CORE_LABEL)
			for (j = 0; j < k; j++) {
				cnt[lrows[(size_t)p * k + j]] = 0;
				x[lrows[(size_t)p * k + j]] = 0;
			}
	return maxlab;
}

/*
 * Buckets the union by lane (the lane counts come from hc_layout_new),
 * peels each lane, then lays the schedule out by round and, within a
 * round, by coordinate, walking the union once more in order with a
 * cursor per lane.  Every array lives in the layout's buffers.
 */
int
hc_fast_layout(struct hc_layout *L)
{
	size_t *off = L->b_off.p, *cur, *fill, B = L->p.block;
	size_t i, b, t, pos, nr, r, ucount = L->ucount;
	uint32_t *items, *lab, *cnt, *x, *lrows, *q, m, maxlab = 0;
	uint8_t *jsel;
	int any = 0;

	L->ncore = L->npeel = L->nrounds = 0;
	if ((L->round_start = hc_buf_get(&L->b_rstart,
	    sizeof *L->round_start)) == NULL)
		return HC_ENOMEM;
	L->round_start[0] = 0;
	if (ucount == 0)
		return 0;
	if ((cur = hc_buf_get(&L->b_cur, B * sizeof *cur)) == NULL ||
	    (items = hc_buf_get(&L->b_items, ucount * sizeof *items)) ==
	    NULL ||
	    (lab = hc_buf_get(&L->b_lab, ucount * sizeof *lab)) == NULL ||
	    (jsel = hc_buf_get(&L->b_jsel, ucount)) == NULL ||
	    (cnt = hc_buf_get(&L->b_cnt, L->R * sizeof *cnt)) == NULL ||
	    (x = hc_buf_get(&L->b_x, L->R * sizeof *x)) == NULL ||
	    (lrows = hc_buf_get(&L->b_lrows, (size_t)L->umax * L->p.k *
	    sizeof *lrows)) == NULL ||
	    (q = hc_buf_get(&L->b_q, (L->R + (size_t)L->p.k * L->umax + 1) *
	    sizeof *q)) == NULL)
		return HC_ENOMEM;

	/* off[t + 1] holds lane t's count: offsets, then the buckets. */
	for (t = 0; t < B; t++) {
		off[t + 1] += off[t];
		cur[t] = off[t];
	}
	HC_FOR_EACH_BIT(L->ubits, L->p.n, B, i, b, t,
		items[cur[t]++] = (uint32_t)b;
	);

	memset(jsel, 0, ucount);
	memset(cnt, 0, L->R * sizeof *cnt);
	memset(x, 0, L->R * sizeof *x);
	for (t = 0; t < B; t++) {
		if (off[t + 1] == off[t])
			continue;
		m = peel_lane(L, items + off[t], (uint32_t)(off[t + 1] -
		    off[t]), cnt, x, lrows, q, lab + off[t], jsel + off[t]);
		maxlab = m > maxlab ? m : maxlab;
	}

	/* Rounds: a histogram of labels, then their starts. */
	for (pos = 0; pos < ucount; pos++) {
		if (lab[pos] == HC_CORE_LABEL)
			L->ncore++;
		else
			any = 1;
	}
	nr = any ? (size_t)maxlab + 1 : 0;
	L->npeel = ucount - L->ncore;
	if ((L->round_start = hc_buf_get(&L->b_rstart, (nr + 1) *
	    sizeof *L->round_start)) == NULL ||
	    (fill = hc_buf_get(&L->b_fill, (nr + 1) * sizeof *fill)) ==
	    NULL ||
	    (L->peel = hc_buf_get(&L->b_peel, (L->npeel + 1) *
	    sizeof *L->peel)) == NULL ||
	    (L->core = hc_buf_get(&L->b_core, (L->ncore + 1) *
	    sizeof *L->core)) == NULL)
		return HC_ENOMEM;
	L->nrounds = nr;
	memset(L->round_start, 0, (nr + 1) * sizeof *L->round_start);
	for (pos = 0; pos < ucount; pos++)
		if (lab[pos] != HC_CORE_LABEL)
			L->round_start[lab[pos] + 1]++;
	for (r = 0; r < nr; r++) {
		L->round_start[r + 1] += L->round_start[r];
		fill[r] = L->round_start[r];
	}

	L->ncore = 0;
	for (t = 0; t < B; t++)
		cur[t] = off[t];
	HC_FOR_EACH_BIT(L->ubits, L->p.n, B, i, b, t,
		pos = cur[t]++;
		if (lab[pos] == HC_CORE_LABEL)
			L->core[L->ncore++] = i;
		else
			L->peel[fill[lab[pos]]++] =
			    (uint64_t)b << HC_PEEL_B_SHIFT |
			    (uint64_t)t << HC_PEEL_T_SHIFT | jsel[pos];
	);
	return 0;
}

/*
 * Block by block so that lanes need no division and the k row pointers
 * are fetched once; sixteen values at a time, the nonzeros (of either
 * sign) found by hc_nz16's mask.  C's coordinates go into the sketch like
 * the others and are taken out again at the end, exactly, since the sums
 * wrap.
 */
static int
encode_blocks(const struct hc_layout *L, const float *g, double p,
    void *payload)
{
	const uint32_t *rb;
	size_t b, base, len, t0, t, B = L->p.block, i;
	unsigned j, k = L->p.k;
	int bits = L->p.cell_bits, rc;
	uint32_t w, nz;
	uint64_t q;

	for (b = 0; b < L->nblocks; b++) {
		base = b * B;
		len = L->p.n - base < B ? L->p.n - base : B;
		rb = L->rows != NULL ? L->rows + b * k : NULL;
		for (t0 = 0; t0 < len; t0 += 16) {
			nz = len - t0 >= 16 ? hc_nz16(g + base + t0) :
			    hc_nz_tail(g + base + t0, len - t0);
			for (; nz != 0; nz &= nz - 1) {
				t = t0 + (size_t)__builtin_ctz(nz);
				i = base + t;
				w = hc_fbits(g[i]) & 0x7fffffffu;
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

/* Entries ahead whose cells decoding asks the memory for. */
#define DECODE_AHEAD	8

/* Where schedule entry e's coordinate and its cells are. */
#define ENTRY(L, e, b, t, jp, rb) do {					\
	uint64_t pe_ = (L)->peel[e];					\
									\
	(b) = (size_t)(pe_ >> HC_PEEL_B_SHIFT);				\
	(t) = (size_t)(pe_ >> HC_PEEL_T_SHIFT) & 0xffff;		\
	(jp) = (unsigned)(pe_ & 0xf);					\
	(rb) = (L)->rows + (b) * (L)->p.k;				\
} while (0)

/* The cells of schedule entry e, on their way into the cache. */
static inline void
decode_prefetch(const struct hc_layout *L, const void *sum, size_t e,
    size_t cellbytes, int all)
{
	const uint32_t *rb;
	size_t b, t;
	unsigned j, jp;

	ENTRY(L, e, b, t, jp, rb);
	if (!all)
		__builtin_prefetch((const char *)sum + ((size_t)rb[jp] *
		    L->p.block + t) * cellbytes);
	else
		for (j = 0; j < L->p.k; j++)
			__builtin_prefetch((const char *)sum + ((size_t)rb[j] *
			    L->p.block + t) * cellbytes, 1);
}

/*
 * Replays the schedule on the sums, cells of 32 or 64 bits: each entry's
 * pure cell holds its coordinate's sum, which then leaves the other cells
 * of the coordinate and stays in the pure one, which no later entry
 * touches (its one coordinate is gone).  The cells are fetched a few
 * entries ahead, since they lie anywhere in the sketch.  Returns how many
 * pure cells hold a value other than 0.
 */
#define PEEL_BODY(T) do {						\
	T *s_ = sum, v_;						\
									\
	for (e = 0; e < n; e++) {					\
		if (e + DECODE_AHEAD < n)				\
			decode_prefetch(L, sum, e + DECODE_AHEAD,	\
			    sizeof(T), 1);				\
		ENTRY(L, e, b, t, jp, rb);				\
		v_ = s_[(size_t)rb[jp] * B + t];			\
		if (k == 3) {						\
			s_[(size_t)rb[0] * B + t] -= v_;		\
			s_[(size_t)rb[1] * B + t] -= v_;		\
			s_[(size_t)rb[2] * B + t] -= v_;		\
		} else							\
			for (j = 0; j < k; j++)				\
				s_[(size_t)rb[j] * B + t] -= v_;	\
		s_[(size_t)rb[jp] * B + t] = v_;			\
		nz += v_ != 0;						\
	}								\
} while (0)

static size_t
peel_sums(const struct hc_layout *L, void *sum)
{
	const uint32_t *rb;
	size_t e, b, t, B = L->p.block, n = L->npeel, nz = 0;
	unsigned j, jp, k = L->p.k;

	if (L->p.cell_bits == 32)
		PEEL_BODY(uint32_t);
	else
		PEEL_BODY(uint64_t);
	return nz;
}

/* The peeled values into fixed-point cells or floats, zeros elsewhere. */
static void
write_out(const struct hc_layout *L, const void *sum, void *fixed,
    float *out, double pinv)
{
	const uint32_t *rb;
	size_t e, b, t, c, B = L->p.block, n = L->npeel;
	unsigned jp;
	int bits = L->p.cell_bits;
	uint64_t v;

	if (fixed != NULL)
		hc_zero(fixed, L->p.n * (size_t)(bits / 8));
	else
		hc_zero(out, L->p.n * sizeof *out);
	if (fixed == NULL && bits == 32) {
		const uint32_t *s32 = sum;

		/* Far below 2^53: hc_dequantize_p is one conversion. */
		for (e = 0; e < n; e++) {
			if (e + DECODE_AHEAD < n)
				decode_prefetch(L, sum, e + DECODE_AHEAD, 4, 0);
			ENTRY(L, e, b, t, jp, rb);
			out[b * B + t] = (float)((double)(int32_t)s32[
			    (size_t)rb[jp] * B + t] * pinv);
		}
	} else
		for (e = 0; e < n; e++) {
			ENTRY(L, e, b, t, jp, rb);
			v = hc_cell_get(sum, (size_t)rb[jp] * B + t, bits);
			if (fixed != NULL)
				hc_cell_put(fixed, b * B + t, v, bits);
			else
				out[b * B + t] = hc_dequantize_p(
				    hc_cell_signed(v, bits), pinv);
		}
	for (c = 0; c < L->ncore; c++) {
		v = hc_cell_get(sum, L->ncells + c, bits);
		if (fixed != NULL)
			hc_cell_put(fixed, L->core[c], v, bits);
		else
			out[L->core[c]] = hc_dequantize_p(hc_cell_signed(v,
			    bits), pinv);
	}
}

/*
 * Peels, then checks, then writes: a consistent sketch has nothing left
 * outside the pure cells, each of which now holds its coordinate's sum;
 * anything else means the sums were not what the workers encoded, and
 * out (or fixed) is left as it was.  The schedule is local, so hostile
 * cells can give wrong numbers but never an index out of range.
 */
int
hc_fast_decode(const struct hc_layout *L, void *sum, void *fixed,
    float *out, double pinv)
{
	size_t nzp, nz = 0, c;
	int bits = L->p.cell_bits;

	nzp = peel_sums(L, sum);
	if (bits == 32)
		for (c = 0; c < L->ncells; c++)
			nz += ((const uint32_t *)sum)[c] != 0;
	else
		for (c = 0; c < L->ncells; c++)
			nz += ((const uint64_t *)sum)[c] != 0;
	if (nz != nzp)
		return HC_ECORRUPT;
	write_out(L, sum, fixed, out, pinv);
	return 0;
}
