/*
 * hcodec internals shared by hcodec.c (the API, the numbers, the merges),
 * hcodec_ref.c (the specification, literally) and hcodec_fast.c.
 */
#ifndef GLEAM_HCODEC_INT_H
#define GLEAM_HCODEC_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hcodec.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hcodec: the payload is little-endian in memory; port hc_merge_sum first"
#endif

#define HC_PEEL_B_SHIFT	20
#define HC_PEEL_T_SHIFT	4
#define HC_CORE_LABEL	UINT32_MAX	/* a coordinate peeling never reaches */

/*
 * A buffer that keeps its memory: a layout made again with
 * hc_layout_renew reuses what the last one allocated, so that successive
 * tensors touch no fresh pages.
 */
struct hc_buf {
	void		*p;
	size_t		 cap;		/* bytes */
};

struct hc_layout {
	struct hc_params p;		/* p.block is the B in use */
	size_t		 nblocks;
	uint32_t	 R;
	uint32_t	 umax;
	size_t		 ncells;	/* R * B */
	size_t		 ucount;
	uint8_t		*ubits;		/* a copy of the union */
	uint32_t	*rows;		/* nblocks * k */
	uint64_t	*core;		/* ncore, ascending */
	size_t		 ncore;

	/* HC_IMPL_FAST: the peeling schedule. */
	uint64_t	*peel;
	size_t		 npeel;
	size_t		*round_start;
	size_t		 nrounds;

	/*
	 * A layout made on threads (hc_fast_layout_par), for encode and
	 * decode on as many: parts ranges of lanes, lane range q's entries
	 * of the schedule, in its order, at lpeel[lq_start[q] ..
	 * lq_start[q + 1]), and the union's coordinates that fall in block
	 * range p and lane range q, counted, at pq_off[p * parts + q ..].
	 * parts is 0 in a layout made alone.
	 */
	int		 parts;
	uint64_t	*lpeel;
	size_t		*lq_start;	/* parts + 1 */
	size_t		*pq_off;	/* parts * parts + 1 */
	const uint8_t	*laneq;		/* B: the lane range of each lane */

	/* HC_IMPL_REF: count and block-id XOR of each cell, C left out. */
	uint32_t	*count;
	uint32_t	*idx;

	/*
	 * HC_IMPL_FAST: where the arrays above live, and the fast layout's
	 * scratch: lane offsets (the union's lane counts, B + 1), the
	 * union's block ids by lane, each one's round and pure row, the
	 * peeling counters, queue and round cursors.
	 */
	struct hc_buf	 b_ubits, b_rows, b_core, b_peel, b_rstart;
	struct hc_buf	 b_off, b_cur, b_items, b_lab, b_jsel, b_cnt, b_x,
			 b_lrows, b_q, b_fill, b_par, b_lpeel, b_lmeta;
};

/* At least bytes of b (its contents lost); NULL when out of memory. */
static inline void *
hc_buf_get(struct hc_buf *b, size_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	if (bytes > b->cap) {
		free(b->p);
		b->cap = 0;
		if ((b->p = malloc(bytes)) == NULL)
			return NULL;
		b->cap = bytes;
	}
	return b->p;
}

static inline int
hc_bit(const uint8_t *bits, size_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void
hc_bit_set(uint8_t *bits, size_t i)
{
	bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* memset for buffers that may be NULL when empty. */
static inline void
hc_zero(void *p, size_t len)
{
	if (len > 0)
		memset(p, 0, len);
}

/* The bits of a float: zero tests must not treat -0 or NaN as numbers. */
static inline uint32_t
hc_fbits(float v)
{
	uint32_t w;

	memcpy(&w, &v, sizeof w);
	return w;
}

/*
 * Walks the set bits of a bitmap in ascending order and tells the block
 * and lane of each without a division: blocks only advance, so the walk
 * costs O(n / 64 + set bits + blocks).
 */
struct hc_iter {
	const uint8_t	*bits;
	size_t		 nbytes;
	size_t		 next;		/* byte index of the next word */
	uint64_t	 word;		/* bits not yet returned */
	size_t		 wbase;		/* coordinate of word's bit 0 */
	size_t		 B;
	size_t		 b;		/* current block and its first lane */
	size_t		 base;
};

static inline void
hc_iter_init(struct hc_iter *it, const uint8_t *bits, size_t n, size_t B)
{
	memset(it, 0, sizeof *it);
	it->bits = bits;
	it->nbytes = (n + 7) / 8;
	it->B = B;
}

static inline int
hc_iter_next(struct hc_iter *it, size_t *i, size_t *b, size_t *t)
{
	size_t left, j;
	int bit;

	while (it->word == 0) {
		if (it->next >= it->nbytes)
			return 0;
		left = it->nbytes - it->next;
		if (left >= 8)
			memcpy(&it->word, it->bits + it->next, 8);
		else {
			it->word = 0;
			for (j = 0; j < left; j++)
				it->word |= (uint64_t)it->bits[it->next + j] <<
				    (8 * j);
		}
		it->wbase = it->next * 8;
		it->next += 8;
	}
	bit = __builtin_ctzll(it->word);
	it->word &= it->word - 1;
	*i = it->wbase + (size_t)bit;
	while (*i >= it->base + it->B) {
		it->b++;
		it->base += it->B;
	}
	*b = it->b;
	*t = *i - it->base;
	return 1;
}

/*
 * Which of the 16 values at g are nonzero (of either sign): bit j for
 * g[j].  Gradients are mostly zeros, so this is most of what scanning
 * one costs: four compares and four masks with SSE2.
 */
static inline uint32_t
hc_nz16(const float *g)
{
#if defined(__SSE2__)
	const __m128i abs = _mm_set1_epi32(0x7fffffff);
	const __m128i zero = _mm_setzero_si128();
	__m128i a, b, c, d;

	a = _mm_and_si128(_mm_loadu_si128((const __m128i *)g), abs);
	b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(g + 4)), abs);
	c = _mm_and_si128(_mm_loadu_si128((const __m128i *)(g + 8)), abs);
	d = _mm_and_si128(_mm_loadu_si128((const __m128i *)(g + 12)), abs);
	if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_or_si128(_mm_or_si128(a, b),
	    _mm_or_si128(c, d)), zero)) == 0xffff)
		return 0;
	return ~((uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
	    _mm_cmpeq_epi32(a, zero))) |
	    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
	    _mm_cmpeq_epi32(b, zero))) << 4 |
	    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
	    _mm_cmpeq_epi32(c, zero))) << 8 |
	    (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(
	    _mm_cmpeq_epi32(d, zero))) << 12) & 0xffffu;
#else
	uint64_t w[8];
	uint32_t m = 0, x;
	int j;

	memcpy(w, g, sizeof w);
	if (((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) &
	    0x7fffffff7fffffffULL) == 0)
		return 0;
	for (j = 0; j < 16; j++) {
		memcpy(&x, g + j, 4);
		m |= (uint32_t)((x & 0x7fffffffu) != 0) << j;
	}
	return m;
#endif
}

/* The same for the last m < 16 values. */
static inline uint32_t
hc_nz_tail(const float *g, size_t m)
{
	uint32_t r = 0, x;
	size_t j;

	for (j = 0; j < m; j++) {
		memcpy(&x, g + j, 4);
		r |= (uint32_t)((x & 0x7fffffffu) != 0) << j;
	}
	return r;
}

/* Word w of a bitmap of n bits, zeros past its end. */
static inline uint64_t
hc_word(const uint8_t *bits, size_t nbytes, size_t w)
{
	uint64_t x = 0;
	size_t off = w * 8;

	if (nbytes - off >= 8)
		memcpy(&x, bits + off, 8);
	else
		memcpy(&x, bits + off, nbytes - off);
	return x;
}

/*
 * Runs the statements that follow for every set bit of a bitmap of n bits
 * in blocks of B, in ascending order, with i, b and t set to the
 * coordinate, its block and its lane.  When B is a multiple of 64 no
 * block starts inside a word, so it goes a word at a time and the block
 * only advances between words; otherwise through hc_iter.  A
 * statement, not an expression: "break" leaves only the inner loop.
 */
#define HC_FOR_EACH_BIT(bits, n, B, i, b, t, ...) do {			\
	if ((B) % 64 == 0) {						\
		size_t nby_ = ((n) + 7) / 8, nw_ = (nby_ + 7) / 8, w_;	\
		size_t b_ = 0, tb_ = 0;					\
		uint64_t x_;						\
		for (w_ = 0; w_ < nw_; w_++) {				\
			x_ = hc_word((bits), nby_, w_);			\
			for (; x_ != 0; x_ &= x_ - 1) {			\
				(t) = tb_ + (size_t)__builtin_ctzll(x_); \
				(b) = b_;				\
				(i) = w_ * 64 + (size_t)__builtin_ctzll(x_); \
				__VA_ARGS__				\
			}						\
			if ((tb_ += 64) == (B)) {			\
				tb_ = 0;				\
				b_++;					\
			}						\
		}							\
	} else {							\
		struct hc_iter it_;					\
									\
		hc_iter_init(&it_, (bits), (n), (B));			\
		while (hc_iter_next(&it_, &(i), &(b), &(t))) {		\
			__VA_ARGS__					\
		}							\
	}								\
} while (0)

/*
 * The same for the blocks b0 <= b < b1 only, B a multiple of 64: a part
 * of a parallel pass.
 */
#define HC_FOR_EACH_BIT_IN(bits, n, B, b0, b1, i, b, t, ...) do {	\
	size_t nby_ = ((n) + 7) / 8, nw_ = (nby_ + 7) / 8;		\
	size_t wpb_ = (B) / 64, w_ = (b0) * wpb_, we_ = (b1) * wpb_;	\
	size_t tb_;							\
	uint64_t x_;							\
	if (we_ > nw_)							\
		we_ = nw_;						\
	for (; w_ < we_; w_++) {					\
		x_ = hc_word((bits), nby_, w_);				\
		tb_ = (w_ % wpb_) * 64;					\
		for (; x_ != 0; x_ &= x_ - 1) {				\
			(t) = tb_ + (size_t)__builtin_ctzll(x_);	\
			(b) = w_ / wpb_;				\
			(i) = w_ * 64 + (size_t)__builtin_ctzll(x_);	\
			__VA_ARGS__					\
		}							\
	}								\
} while (0)

/* Rows for the largest lane: peeling succeeds below 0.818 items a cell. */
static inline uint32_t
hc_rows_for(uint32_t umax, unsigned k)
{
	uint64_t R = ((uint64_t)umax * 5 + 3) / 4 + 2;

	return (uint32_t)(R < k ? k : R);
}

/*
 * How many parts a parallel pass over L takes: none (0) when it runs
 * alone, that is with one thread, B not a multiple of 64, or too little
 * work for a thread to pay.
 */
static inline int
hc_parts(const struct hc_layout *L)
{
	int t = L->p.threads;

	if (t <= 1 || L->p.impl != HC_IMPL_FAST || L->p.block % 64 != 0 ||
	    L->p.n < ((size_t)1 << 18))
		return 0;
	if ((size_t)t > L->p.block / 64)
		t = (int)(L->p.block / 64);
	if ((size_t)t > (L->p.n >> 17))
		t = (int)(L->p.n >> 17);
	return t > 1 ? t : 0;
}

/* Part p's share [lo, hi) of [0, n), in units of align. */
static inline void
hc_share(size_t n, size_t align, int p, int parts, size_t *lo, size_t *hi)
{
	size_t units = (n + align - 1) / align;

	*lo = units * (size_t)p / (size_t)parts * align;
	*hi = units * (size_t)(p + 1) / (size_t)parts * align;
	if (*lo > n)
		*lo = n;
	if (*hi > n)
		*hi = n;
}

/* Cells are stored unsigned so that sums wrap without undefined behaviour. */
static inline void
hc_cell_add(void *cells, size_t c, uint64_t q, int bits)
{
	if (bits == 32)
		((uint32_t *)cells)[c] += (uint32_t)q;
	else
		((uint64_t *)cells)[c] += q;
}

static inline uint64_t
hc_cell_get(const void *cells, size_t c, int bits)
{
	if (bits == 32)
		return ((const uint32_t *)cells)[c];
	return ((const uint64_t *)cells)[c];
}

static inline void
hc_cell_put(void *cells, size_t c, uint64_t q, int bits)
{
	if (bits == 32)
		((uint32_t *)cells)[c] = (uint32_t)q;
	else
		((uint64_t *)cells)[c] = q;
}

/* A cell's bits as the signed number they hold. */
static inline int64_t
hc_cell_signed(uint64_t c, int bits)
{
	if (bits == 32)
		return (int32_t)(uint32_t)c;
	return (int64_t)c;
}

/*
 * round(v * p), half to even, by integer means so that no rounding mode
 * can change it.  v * p is exact: p is a power of two within range.
 */
static inline int
hc_quantize_p(float v, double p, int bits, uint64_t *q)
{
	double x, f, lim;
	int64_t t;

	if ((hc_fbits(v) & 0x7f800000u) == 0x7f800000u)
		return HC_ENONFINITE;
	x = (double)v * p;
	lim = bits == 32 ? 2147483648.0 : 9223372036854775808.0;
	if (!(x < lim && x > -lim))
		return HC_ERANGE;
	t = (int64_t)x;
	f = x - (double)t;
	if (f > 0.5 || (f == 0.5 && ((uint64_t)t & 1)))
		t++;
	else if (f < -0.5 || (f == -0.5 && ((uint64_t)t & 1)))
		t--;
	if (bits == 32 && (t > INT32_MAX || t < -INT32_MAX))
		return HC_ERANGE;
	*q = (uint64_t)t;
	return 0;
}

float	hc_dequantize_p(int64_t q, double pinv);
size_t	hc_core_find(const struct hc_layout *, uint64_t i);

int	hc_ref_layout(struct hc_layout *);
int	hc_ref_encode(const struct hc_layout *, const float *, double, void *);
int	hc_ref_decode(const struct hc_layout *, void *, void *);

int	hc_fast_layout(struct hc_layout *);
int	hc_fast_layout_par(struct hc_layout *, int parts);
int	hc_fast_encode(const struct hc_layout *, const float *, double, void *);
int	hc_fast_decode(const struct hc_layout *, void *, void *, float *,
	    double);

#endif
