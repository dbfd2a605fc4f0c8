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
#include "hcpar.h"

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
 * The same layout on parts threads, entry for entry: the passes over the
 * union go by ranges of blocks (part p's blocks all come before part
 * p + 1's, so that concatenating the parts keeps ascending order), the
 * peeling by ranges of lanes (which share no cell).  Between the passes
 * the calling thread turns each part's counts into where its items go:
 *
 *	count	each block range's lane counts
 *	bucket	the rows of its blocks, its items into each lane's bucket
 *	peel	each lane range's lanes, with scratch of its own
 *	rounds	each block range's histogram of rounds by lane range, and
 *		its 2-core count
 *	fill	the schedule, each lane range's copy of it, and the 2-core,
 *		each block range at its offsets
 *
 * The copies by lane range let decode run on parts threads without
 * looking at other ranges' entries.
 */
enum { LP_COUNT, LP_BUCKET, LP_PEEL, LP_ROUNDS, LP_FILL };

struct lay_job {
	struct hc_layout *L;
	int		 stage;
	int		 parts;
	size_t		*start;		/* parts * B: a range's first item */
	size_t		*cur;		/* parts * B: its cursors */
	size_t		*off;		/* B + 1: lane offsets */
	uint8_t		*laneq;		/* B: the lane range of each lane */
	uint32_t	*items, *lab;
	uint8_t		*jsel;
	uint32_t	*scratch;	/* parts * sstride */
	size_t		 sstride;
	size_t		*hist;		/* parts * (nr + 1): by block range */
	size_t		*h3;		/* parts * parts * (nr + 1) */
	size_t		 nr;
	size_t		 ncore[HC_THREADS_MAX];
	uint32_t	 maxlab[HC_THREADS_MAX];
};

static void
lay_part(void *a, int p, int parts)
{
	struct lay_job *j = a;
	struct hc_layout *L = j->L;
	size_t B = L->p.block, b0, b1, t0, t1, i, b, t, pos, x;
	size_t nr1 = j->nr + 1, *st = j->start + (size_t)p * B;
	size_t *cu = j->cur + (size_t)p * B;
	size_t *h = j->hist != NULL ? j->hist + (size_t)p * nr1 : NULL;
	size_t *h3 = j->h3 != NULL ? j->h3 + (size_t)p * (size_t)parts * nr1 :
	    NULL;
	uint32_t *sc, m, l;
	uint64_t e;
	unsigned k = L->p.k;

	hc_share(L->nblocks, 1, p, parts, &b0, &b1);
	switch (j->stage) {
	case LP_COUNT:
		memset(st, 0, B * sizeof *st);
		HC_FOR_EACH_BIT_IN(L->ubits, L->p.n, B, b0, b1, i, b, t,
			st[t]++;
		);
		break;
	case LP_BUCKET:
		for (b = b0; b < b1; b++)
			hc_block_rows(L->p.seed, b, L->R, k, L->rows + b * k);
		memcpy(cu, st, B * sizeof *cu);
		HC_FOR_EACH_BIT_IN(L->ubits, L->p.n, B, b0, b1, i, b, t,
			j->items[cu[t]++] = (uint32_t)b;
		);
		break;
	case LP_PEEL:
		hc_share(B, 64, p, parts, &t0, &t1);
		sc = j->scratch + (size_t)p * j->sstride;
		memset(sc, 0, 2 * (size_t)L->R * sizeof *sc);
		memset(j->jsel + j->off[t0], 0, j->off[t1] - j->off[t0]);
		l = 0;
		for (t = t0; t < t1; t++) {
			if (j->off[t + 1] == j->off[t])
				continue;
			m = peel_lane(L, j->items + j->off[t], (uint32_t)
			    (j->off[t + 1] - j->off[t]), sc, sc + L->R,
			    sc + 2 * (size_t)L->R, sc + 2 * (size_t)L->R +
			    (size_t)L->umax * k, j->lab + j->off[t],
			    j->jsel + j->off[t]);
			l = m > l ? m : l;
		}
		j->maxlab[p] = l;
		break;
	case LP_ROUNDS:
		memset(h3, 0, (size_t)parts * nr1 * sizeof *h3);
		memcpy(cu, st, B * sizeof *cu);
		x = 0;
		HC_FOR_EACH_BIT_IN(L->ubits, L->p.n, B, b0, b1, i, b, t,
			pos = cu[t]++;
			if (j->lab[pos] == HC_CORE_LABEL)
				x++;
			else
				h3[(size_t)j->laneq[t] * nr1 + j->lab[pos]]++;
		);
		j->ncore[p] = x;
		break;
	case LP_FILL:
		memcpy(cu, st, B * sizeof *cu);
		x = j->ncore[p];
		HC_FOR_EACH_BIT_IN(L->ubits, L->p.n, B, b0, b1, i, b, t,
			pos = cu[t]++;
			l = j->lab[pos];
			if (l == HC_CORE_LABEL) {
				L->core[x++] = i;
				continue;
			}
			e = (uint64_t)b << HC_PEEL_B_SHIFT |
			    (uint64_t)t << HC_PEEL_T_SHIFT | j->jsel[pos];
			L->peel[h[l]++] = e;
			L->lpeel[h3[(size_t)j->laneq[t] * nr1 + l]++] = e;
		);
		break;
	}
}

int
hc_fast_layout_par(struct hc_layout *L, int parts)
{
	struct lay_job j;
	size_t B = L->p.block, t, c, r, x, nr, nr1, npeel, ncore, sum, lo, hi;
	size_t *lane, *meta, *h3;
	uint32_t maxlab = 0;
	unsigned k = L->p.k;
	int p, q;

	memset(&j, 0, sizeof j);
	j.L = L;
	j.parts = parts;
	L->ncore = L->npeel = L->nrounds = 0;
	if ((lane = hc_buf_get(&L->b_off, (B + 1) * sizeof *lane)) == NULL ||
	    (j.start = hc_buf_get(&L->b_cur, 2 * (size_t)parts * B *
	    sizeof *j.start)) == NULL ||
	    (j.laneq = hc_buf_get(&L->b_jsel, B)) == NULL ||
	    (meta = hc_buf_get(&L->b_lmeta, ((size_t)parts + 1 +
	    (size_t)parts * parts + 1) * sizeof *meta)) == NULL)
		return HC_ENOMEM;
	L->lq_start = meta;
	L->pq_off = meta + parts + 1;
	j.cur = j.start + (size_t)parts * B;
	j.off = lane;
	for (q = 0; q < parts; q++) {
		hc_share(B, 64, q, parts, &lo, &hi);
		for (t = lo; t < hi; t++)
			j.laneq[t] = (uint8_t)q;
	}
	j.stage = LP_COUNT;
	hc_par(parts, lay_part, &j);

	/* The union by block range and lane range, for encode's lists. */
	for (p = 0, sum = 0; p < parts; p++)
		for (q = 0; q < parts; q++) {
			L->pq_off[p * parts + q] = sum;
			hc_share(B, 64, q, parts, &lo, &hi);
			for (t = lo; t < hi; t++)
				sum += j.start[(size_t)p * B + t];
		}
	L->pq_off[parts * parts] = sum;
	/* Lane offsets, and where each range's items of a lane start. */
	lane[0] = 0;
	for (t = 0; t < B; t++) {
		sum = lane[t];
		for (p = 0; p < parts; p++) {
			c = j.start[(size_t)p * B + t];
			j.start[(size_t)p * B + t] = sum;
			sum += c;
		}
		lane[t + 1] = sum;
		if (sum - lane[t] > L->umax)
			L->umax = (uint32_t)(sum - lane[t]);
	}
	L->ucount = lane[B];
	if ((L->round_start = hc_buf_get(&L->b_rstart,
	    sizeof *L->round_start)) == NULL)
		return HC_ENOMEM;
	L->round_start[0] = 0;
	if (L->ucount == 0)
		return 0;
	L->R = hc_rows_for(L->umax, k);
	L->ncells = (size_t)L->R * B;
	j.sstride = 3 * (size_t)L->R + 2 * (size_t)k * L->umax + 1;
	/* jsel after laneq in the same buffer: laneq is B bytes. */
	if ((L->rows = hc_buf_get(&L->b_rows, L->nblocks * k *
	    sizeof *L->rows)) == NULL ||
	    (j.items = hc_buf_get(&L->b_items, L->ucount * sizeof *j.items)) ==
	    NULL ||
	    (j.lab = hc_buf_get(&L->b_lab, L->ucount * sizeof *j.lab)) ==
	    NULL ||
	    (j.laneq = hc_buf_get(&L->b_jsel, B + L->ucount)) == NULL ||
	    (j.scratch = hc_buf_get(&L->b_par, (size_t)parts * j.sstride *
	    sizeof *j.scratch)) == NULL)
		return HC_ENOMEM;
	for (q = 0; q < parts; q++) {
		hc_share(B, 64, q, parts, &lo, &hi);
		for (t = lo; t < hi; t++)
			j.laneq[t] = (uint8_t)q;
	}
	j.jsel = j.laneq + B;
	j.stage = LP_BUCKET;
	hc_par(parts, lay_part, &j);
	j.stage = LP_PEEL;
	hc_par(parts, lay_part, &j);

	for (p = 0; p < parts; p++)
		maxlab = j.maxlab[p] > maxlab ? j.maxlab[p] : maxlab;
	j.nr = (size_t)maxlab + 1;
	nr1 = j.nr + 1;
	if ((j.hist = hc_buf_get(&L->b_fill, ((size_t)parts +
	    (size_t)parts * parts) * nr1 * sizeof *j.hist)) == NULL)
		return HC_ENOMEM;
	j.h3 = j.hist + (size_t)parts * nr1;
	j.stage = LP_ROUNDS;
	hc_par(parts, lay_part, &j);

	for (p = 0, ncore = 0; p < parts; p++) {
		c = j.ncore[p];
		j.ncore[p] = ncore;
		ncore += c;
	}
	npeel = L->ucount - ncore;
	nr = npeel > 0 ? j.nr : 0;
	if ((L->round_start = hc_buf_get(&L->b_rstart, (nr + 1) *
	    sizeof *L->round_start)) == NULL ||
	    (L->peel = hc_buf_get(&L->b_peel, (npeel + 1) *
	    sizeof *L->peel)) == NULL ||
	    (L->lpeel = hc_buf_get(&L->b_lpeel, (npeel + 1) *
	    sizeof *L->lpeel)) == NULL ||
	    (L->core = hc_buf_get(&L->b_core, (ncore + 1) *
	    sizeof *L->core)) == NULL)
		return HC_ENOMEM;
	/* Round r's entries: block range 0's, then range 1's, and so on. */
	for (r = 0, sum = 0; r < nr; r++) {
		L->round_start[r] = sum;
		for (p = 0; p < parts; p++) {
			h3 = j.h3 + (size_t)p * (size_t)parts * nr1;
			for (q = 0, x = 0; q < parts; q++)
				x += h3[(size_t)q * nr1 + r];
			j.hist[(size_t)p * nr1 + r] = sum;
			sum += x;
		}
	}
	L->round_start[nr] = sum;
	/* Lane range q's copy: by round, then block range, then coordinate. */
	for (q = 0, sum = 0; q < parts; q++) {
		L->lq_start[q] = sum;
		for (r = 0; r < nr; r++)
			for (p = 0; p < parts; p++) {
				h3 = j.h3 + ((size_t)p * (size_t)parts +
				    (size_t)q) * nr1;
				x = h3[r];
				h3[r] = sum;
				sum += x;
			}
	}
	L->lq_start[parts] = sum;
	L->nrounds = nr;
	L->npeel = npeel;
	L->ncore = ncore;
	j.stage = LP_FILL;
	hc_par(parts, lay_part, &j);
	L->laneq = j.laneq;
	L->parts = parts;
	return 0;
}

/* Value i of g checked and rounded: 0, or why it cannot be encoded. */
static inline int
encode_value(const struct hc_layout *L, const float *g, size_t i, double p,
    uint64_t *q)
{
	if ((hc_fbits(g[i]) & 0x7fffffffu) >= 0x7f800000u)
		return HC_ENONFINITE;
	if (!hc_bit(L->ubits, i))
		return HC_ESUPPORT;
	return hc_quantize_p(g[i], p, L->p.cell_bits, q);
}

/* q into lane t of the k rows rb. */
static inline void
add_cells(const struct hc_layout *L, void *payload, const uint32_t *rb,
    size_t t, uint64_t q)
{
	size_t B = L->p.block;
	unsigned j, k = L->p.k;

	if (L->p.cell_bits == 32)
		for (j = 0; j < k; j++)
			((uint32_t *)payload)[(size_t)rb[j] * B + t] +=
			    (uint32_t)q;
	else
		for (j = 0; j < k; j++)
			((uint64_t *)payload)[(size_t)rb[j] * B + t] += q;
}

/*
 * Block by block so that lanes need no division and the k row pointers
 * are fetched once; sixteen values at a time, the nonzeros (of either
 * sign) found by hc_nz16's mask.  *where gets the coordinate of an
 * error, the first.  C's coordinates go into the sketch like the others
 * and are taken out again at the end, exactly, since the sums wrap.
 */
static int
encode_blocks(const struct hc_layout *L, const float *g, double p,
    void *payload, size_t *where)
{
	const uint32_t *rb;
	size_t b, base, len, t0, t, B = L->p.block;
	uint32_t nz;
	uint64_t q;
	int rc;

	for (b = 0; b < L->nblocks; b++) {
		base = b * B;
		len = L->p.n - base < B ? L->p.n - base : B;
		rb = L->rows != NULL ? L->rows + b * L->p.k : NULL;
		for (t0 = 0; t0 < len; t0 += 16) {
			nz = len - t0 >= 16 ? hc_nz16(g + base + t0) :
			    hc_nz_tail(g + base + t0, len - t0);
			for (; nz != 0; nz &= nz - 1) {
				t = t0 + (size_t)__builtin_ctz(nz);
				*where = base + t;
				if ((rc = encode_value(L, g, base + t, p,
				    &q)) != 0)
					return rc;
				add_cells(L, payload, rb, t, q);
			}
		}
	}
	return 0;
}

/* Zeroes the cells of lanes tlo <= t < thi in every row. */
static void
zero_lanes(const struct hc_layout *L, void *cells, size_t tlo, size_t thi)
{
	size_t r, cb = (size_t)L->p.cell_bits / 8, B = L->p.block;

	for (r = 0; r < L->R; r++)
		memset((char *)cells + ((size_t)r * B + tlo) * cb, 0,
		    (thi - tlo) * cb);
}

/*
 * Encode on a layout's parts: each block range scans its part of the
 * gradient, checks and rounds its nonzeros and lists them by lane range,
 * within room that the layout counted (the union's coordinates there);
 * then each lane range clears its cells and adds what every block range
 * listed for it.  No cell is written by two threads, and each list is in
 * coordinate order, so the sums are the serial ones.
 */
struct enc_item {
	uint32_t	b, t;
	uint64_t	q;
};

struct enc_job {
	const struct hc_layout *L;
	const float	*g;
	double		 p;
	void		*payload;
	struct enc_item	*items;		/* at the layout's pq_off */
	size_t		*len;		/* parts * parts: listed */
	int		 stage;
	int		 rc[HC_THREADS_MAX];
	size_t		 where[HC_THREADS_MAX];
};

static void
enc_part(void *a, int part, int parts)
{
	struct enc_job *j = a;
	const struct hc_layout *L = j->L;
	struct enc_item *it;
	size_t B = L->p.block, b0, b1, b, base, len, t0, t, x, e, n;
	size_t cur[HC_THREADS_MAX];	/* local: a shared line would bounce */
	uint32_t nz;
	uint64_t q;
	int rc, pp, qq;

	if (j->stage == 0) {
		hc_share(L->nblocks, 1, part, parts, &b0, &b1);
		memset(cur, 0, (size_t)parts * sizeof *cur);
		j->rc[part] = 0;
		for (b = b0; b < b1; b++) {
			base = b * B;
			len = L->p.n - base < B ? L->p.n - base : B;
			for (t0 = 0; t0 < len; t0 += 16) {
				nz = len - t0 >= 16 ? hc_nz16(j->g + base +
				    t0) : hc_nz_tail(j->g + base + t0,
				    len - t0);
				for (; nz != 0; nz &= nz - 1) {
					t = t0 + (size_t)__builtin_ctz(nz);
					j->where[part] = base + t;
					if ((rc = encode_value(L, j->g, base +
					    t, j->p, &q)) != 0) {
						j->rc[part] = rc;
						goto done;
					}
					qq = L->laneq[t];
					x = L->pq_off[(size_t)part *
					    (size_t)parts + (size_t)qq] +
					    cur[qq]++;
					j->items[x].b = (uint32_t)b;
					j->items[x].t = (uint32_t)t;
					j->items[x].q = q;
				}
			}
		}
done:
		memcpy(j->len + (size_t)part * (size_t)parts, cur,
		    (size_t)parts * sizeof *cur);
		return;
	}
	/* Stage 1: lane range `part` takes every block range's list. */
	hc_share(B, 64, part, parts, &b0, &b1);
	zero_lanes(L, j->payload, b0, b1);
	for (pp = 0; pp < parts; pp++) {
		x = L->pq_off[(size_t)pp * (size_t)parts + (size_t)part];
		n = j->len[(size_t)pp * (size_t)parts + (size_t)part];
		for (e = x; e < x + n; e++) {
			it = &j->items[e];
			add_cells(L, j->payload, L->rows + (size_t)it->b *
			    L->p.k, it->t, it->q);
		}
	}
}

/* The sketch of every coordinate, then C's values moved to the list. */
int
hc_fast_encode(const struct hc_layout *L, const float *g, double p,
    void *payload)
{
	struct enc_job ej;
	size_t c, i, b, t, where = 0;
	uint64_t q;
	unsigned j;
	int bits = L->p.cell_bits, rc = 0, parts, x;

	memset(&ej, 0, sizeof ej);
	if ((parts = L->parts) > 0 && L->ncells > 0 &&
	    (ej.items = malloc((L->ucount + 1) * sizeof *ej.items)) != NULL &&
	    (ej.len = malloc((size_t)parts * (size_t)parts *
	    sizeof *ej.len)) != NULL) {
		ej.L = L;
		ej.g = g;
		ej.p = p;
		ej.payload = payload;
		ej.stage = 0;
		hc_par(parts, enc_part, &ej);
		/* The error the serial order meets first. */
		for (x = 0; x < parts; x++)
			if (ej.rc[x] != 0 && (rc == 0 || ej.where[x] < where)) {
				rc = ej.rc[x];
				where = ej.where[x];
			}
		if (rc == 0) {
			ej.stage = 1;
			hc_par(parts, enc_part, &ej);
			hc_zero((char *)payload + L->ncells *
			    (size_t)(bits / 8), L->ncore * (size_t)(bits / 8));
		}
		free(ej.items);
		free(ej.len);
	} else {
		free(ej.items);		/* when only the second failed */
		free(ej.len);
		hc_zero(payload, hc_layout_payload(L) * (size_t)(bits / 8));
		rc = encode_blocks(L, g, p, payload, &where);
	}
	if (rc != 0)
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

/*
 * Where entry e of schedule pl (the layout's, or a lane range's copy)
 * puts its coordinate and its cells.
 */
#define ENTRY(L, pl, e, b, t, jp, rb) do {				\
	uint64_t pe_ = (pl)[e];						\
									\
	(b) = (size_t)(pe_ >> HC_PEEL_B_SHIFT);				\
	(t) = (size_t)(pe_ >> HC_PEEL_T_SHIFT) & 0xffff;		\
	(jp) = (unsigned)(pe_ & 0xf);					\
	(rb) = (L)->rows + (b) * (L)->p.k;				\
} while (0)

/* The cells of entry e, on their way into the cache. */
static inline void
decode_prefetch(const struct hc_layout *L, const uint64_t *pl,
    const void *sum, size_t e, size_t cellbytes, int all)
{
	const uint32_t *rb;
	size_t b, t;
	unsigned j, jp;

	ENTRY(L, pl, e, b, t, jp, rb);
	if (!all)
		__builtin_prefetch((const char *)sum + ((size_t)rb[jp] *
		    L->p.block + t) * cellbytes);
	else
		for (j = 0; j < L->p.k; j++)
			__builtin_prefetch((const char *)sum + ((size_t)rb[j] *
			    L->p.block + t) * cellbytes, 1);
}

/*
 * Replays n entries of schedule pl on the sums, cells of 32 or 64 bits:
 * each entry's pure cell holds its coordinate's sum, which then leaves
 * the other cells of the coordinate and stays in the pure one, which no
 * later entry touches (its one coordinate is gone).  The cells are
 * fetched a few entries ahead, since they lie anywhere in the sketch.
 * Returns how many pure cells hold a value other than 0.
 */
#define PEEL_BODY(T) do {						\
	T *s_ = sum, v_;						\
									\
	for (e = 0; e < n; e++) {					\
		if (e + DECODE_AHEAD < n)				\
			decode_prefetch(L, pl, sum, e + DECODE_AHEAD,	\
			    sizeof(T), 1);				\
		ENTRY(L, pl, e, b, t, jp, rb);				\
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
peel_sums(const struct hc_layout *L, const uint64_t *pl, size_t n, void *sum)
{
	const uint32_t *rb;
	size_t e, b, t, B = L->p.block, nz = 0;
	unsigned j, jp, k = L->p.k;

	if (L->p.cell_bits == 32)
		PEEL_BODY(uint32_t);
	else
		PEEL_BODY(uint64_t);
	return nz;
}

/* The nonzero cells of lanes tlo <= t < thi. */
static size_t
count_nonzero(const struct hc_layout *L, const void *sum, size_t tlo,
    size_t thi)
{
	size_t r, t, B = L->p.block, nz = 0;

	if (L->p.cell_bits == 32)
		for (r = 0; r < L->R; r++)
			for (t = tlo; t < thi; t++)
				nz += ((const uint32_t *)sum)[r * B + t] != 0;
	else
		for (r = 0; r < L->R; r++)
			for (t = tlo; t < thi; t++)
				nz += ((const uint64_t *)sum)[r * B + t] != 0;
	return nz;
}

/* The peeled values of n entries of pl into fixed-point cells or floats. */
static void
write_entries(const struct hc_layout *L, const uint64_t *pl, size_t n,
    const void *sum, void *fixed, float *out, double pinv)
{
	const uint32_t *rb;
	size_t e, b, t, B = L->p.block;
	unsigned jp;
	int bits = L->p.cell_bits;
	uint64_t v;

	if (fixed == NULL && bits == 32) {
		const uint32_t *s32 = sum;

		/* Far below 2^53: hc_dequantize_p is one conversion. */
		for (e = 0; e < n; e++) {
			if (e + DECODE_AHEAD < n)
				decode_prefetch(L, pl, sum, e + DECODE_AHEAD,
				    4, 0);
			ENTRY(L, pl, e, b, t, jp, rb);
			out[b * B + t] = (float)((double)(int32_t)s32[
			    (size_t)rb[jp] * B + t] * pinv);
		}
	} else
		for (e = 0; e < n; e++) {
			ENTRY(L, pl, e, b, t, jp, rb);
			v = hc_cell_get(sum, (size_t)rb[jp] * B + t, bits);
			if (fixed != NULL)
				hc_cell_put(fixed, b * B + t, v, bits);
			else
				out[b * B + t] = hc_dequantize_p(
				    hc_cell_signed(v, bits), pinv);
		}
}

/* C's summed values, from the list after the cells. */
static void
write_core(const struct hc_layout *L, const void *sum, void *fixed,
    float *out, double pinv)
{
	size_t c;
	int bits = L->p.cell_bits;
	uint64_t v;

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
 * Part of a parallel decode: lane range `part`'s copy of the schedule (in
 * the schedule's order; lanes share no cell, so the parts are
 * independent), then the count of those lanes' nonzero cells; and, once
 * every part agreed, their values out, over zeros in those lanes.
 */
struct dec_job {
	const struct hc_layout *L;
	void		*sum, *fixed;
	float		*out;
	double		 pinv;
	int		 stage;		/* 0 peel, 1 write */
	size_t		 nzp[HC_THREADS_MAX], nz[HC_THREADS_MAX];
};

static void
dec_part(void *a, int part, int parts)
{
	struct dec_job *dj = a;
	const struct hc_layout *L = dj->L;
	const uint64_t *pl = L->lpeel + L->lq_start[part];
	size_t b, tlo, thi, B = L->p.block, end;
	size_t n = L->lq_start[part + 1] - L->lq_start[part];
	size_t cb = (size_t)L->p.cell_bits / 8;

	hc_share(B, 64, part, parts, &tlo, &thi);
	if (dj->stage == 0) {
		dj->nzp[part] = peel_sums(L, pl, n, dj->sum);
		dj->nz[part] = count_nonzero(L, dj->sum, tlo, thi);
		return;
	}
	for (b = 0; b < L->nblocks; b++) {
		end = L->p.n - b * B < thi ? L->p.n - b * B : thi;
		if (end <= tlo)
			continue;
		if (dj->fixed != NULL)
			memset((char *)dj->fixed + (b * B + tlo) * cb, 0,
			    (end - tlo) * cb);
		else
			memset(dj->out + b * B + tlo, 0, (end - tlo) *
			    sizeof *dj->out);
	}
	write_entries(L, pl, n, dj->sum, dj->fixed, dj->out, dj->pinv);
}

/*
 * Peels, then checks, then writes: a consistent sketch has nothing left
 * outside the pure cells, each of which now holds its coordinate's sum;
 * anything else means the sums were not what the workers encoded, and
 * out (or fixed) is left as it was.  The schedule is local, so hostile
 * cells can give wrong numbers but never an index out of range.  A
 * layout made on threads decodes on as many, a lane range each.
 */
int
hc_fast_decode(const struct hc_layout *L, void *sum, void *fixed,
    float *out, double pinv)
{
	struct dec_job dj;
	size_t nzp = 0, nz = 0;
	int parts = L->parts, p;

	if (parts > 0 && L->ncells > 0) {
		dj.L = L;
		dj.sum = sum;
		dj.fixed = fixed;
		dj.out = out;
		dj.pinv = pinv;
		dj.stage = 0;
		hc_par(parts, dec_part, &dj);
		for (p = 0; p < parts; p++) {
			nzp += dj.nzp[p];
			nz += dj.nz[p];
		}
		if (nz != nzp)
			return HC_ECORRUPT;
		dj.stage = 1;
		hc_par(parts, dec_part, &dj);
	} else {
		nzp = peel_sums(L, L->peel, L->npeel, sum);
		nz = count_nonzero(L, sum, 0, L->p.block);
		if (nz != nzp)
			return HC_ECORRUPT;
		if (fixed != NULL)
			hc_zero(fixed, L->p.n * (size_t)(L->p.cell_bits / 8));
		else
			hc_zero(out, L->p.n * sizeof *out);
		write_entries(L, L->peel, L->npeel, sum, fixed, out, pinv);
	}
	write_core(L, sum, fixed, out, pinv);
	return 0;
}
