/*
 * hcodec internals shared by hcodec.c (the API, the numbers, the merges),
 * hcodec_ref.c (the specification, literally) and hcodec_fast.c.
 */
#ifndef GLEAM_HCODEC_INT_H
#define GLEAM_HCODEC_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hcodec.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hcodec: the payload is little-endian in memory; port hc_merge_sum first"
#endif

#define HC_PEEL_B_SHIFT	20
#define HC_PEEL_T_SHIFT	4
#define HC_CORE_LABEL	UINT32_MAX	/* a coordinate peeling never reaches */

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

	/* HC_IMPL_REF: count and block-id XOR of each cell, C left out. */
	uint32_t	*count;
	uint32_t	*idx;
};

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
int	hc_fast_encode(const struct hc_layout *, const float *, double, void *);
int	hc_fast_decode(const struct hc_layout *, void *, void *, float *,
	    double);

#endif
