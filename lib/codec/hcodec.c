/*
 * hcodec: the API of the homomorphic codec, the fixed-point numbers, the
 * merges and what the two implementations share (parameters, rows, the
 * union's lane counts).  hcodec_ref.c and hcodec_fast.c do the peeling.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hcodec.h"
#include "hcodec_int.h"
#include "hcpar.h"

#define HC_GOLDEN	0x9e3779b97f4a7c15ULL

void
hc_params_init(struct hc_params *p, size_t n, int cell_bits)
{
	memset(p, 0, sizeof *p);
	p->n = n;
	p->block = HC_BLOCK_AUTO;
	p->k = HC_K;
	p->cell_bits = cell_bits;
	p->impl = HC_IMPL_FAST;
	p->threads = 1;
}

const char *
hc_strerror(int e)
{
	switch (e) {
	case HC_OK:
		return "no error";
	case HC_EINVAL:
		return "invalid parameter";
	case HC_ENOMEM:
		return "out of memory";
	case HC_ENONFINITE:
		return "NaN or infinity in the gradient";
	case HC_ERANGE:
		return "value does not fit the cell at this scale";
	case HC_ESIZE:
		return "merged objects differ in size";
	case HC_EFORMAT:
		return "bitmap has bits set past its end";
	case HC_ESUPPORT:
		return "nonzero value outside the union bitmap";
	case HC_ECORRUPT:
		return "summed cells are not a consistent sketch";
	}
	return "unknown error";
}

size_t
hc_bitmap_bytes(size_t n)
{
	return n / 8 + (n % 8 != 0);
}

/* The exponent that round 0 sends, from the largest |v| bit pattern. */
static int
exponent_of(uint32_t maxabs, int *emax)
{
	if (maxabs >= 0x7f800000u) {
		*emax = HC_EXP_NONFINITE;
		return HC_ENONFINITE;
	}
	if (maxabs == 0)
		*emax = HC_EXP_ZERO;
	else
		*emax = (int)(maxabs >> 23) - 127;
	return 0;
}

/*
 * Bit patterns without the sign order like magnitudes, and NaN and Inf sit
 * above every finite value, so one integer max finds both.  Sixteen zeros,
 * the common case, cost one OR.
 */
int
hc_exponent(const float *g, size_t n, int *emax)
{
	uint32_t m = 0, w[16], any;
	size_t i;
	int j;

	if (emax == NULL || (g == NULL && n > 0))
		return HC_EINVAL;
	for (i = 0; i + 16 <= n; i += 16) {
		memcpy(w, g + i, sizeof w);
		any = 0;
		for (j = 0; j < 16; j++)
			any |= w[j];
		if ((any & 0x7fffffffu) == 0)
			continue;
		for (j = 0; j < 16; j++) {
			w[j] &= 0x7fffffffu;
			m = w[j] > m ? w[j] : m;
		}
	}
	for (; i < n; i++) {
		memcpy(w, g + i, sizeof w[0]);
		w[0] &= 0x7fffffffu;
		m = w[0] > m ? w[0] : m;
	}
	return exponent_of(m, emax);
}

/*
 * The largest of four magnitudes' bit patterns and m, as signed numbers,
 * which they are: below 2^31.  SSE2 has no 32-bit max.
 */
#if defined(__SSE2__)
static inline __m128i
max4(__m128i m, __m128i a)
{
	__m128i gt = _mm_cmpgt_epi32(a, m);

	return _mm_or_si128(_mm_and_si128(gt, a), _mm_andnot_si128(gt, m));
}
#endif

/*
 * Sixteen values make two bytes, a group of sixteen zeros (the common
 * case) costs an OR and a compare; eight at a time without SSE2.
 */
static uint32_t
bitmap_max(const float *g, size_t n, uint8_t *bits)
{
	uint32_t w[8], m = 0, any, nz;
	size_t i = 0, nb = n / 8;
	unsigned byte;
	int j;

#if defined(__SSE2__)
	{
		const __m128i abs = _mm_set1_epi32(0x7fffffff);
		__m128i mx = _mm_setzero_si128(), a;
		uint32_t lanes[4];

		for (; 2 * i + 2 <= nb; i++) {
			if ((nz = hc_nz16(g + 16 * i)) == 0) {
				bits[2 * i] = 0;
				bits[2 * i + 1] = 0;
				continue;
			}
			bits[2 * i] = (uint8_t)nz;
			bits[2 * i + 1] = (uint8_t)(nz >> 8);
			for (j = 0; j < 16; j += 4) {
				a = _mm_and_si128(_mm_loadu_si128(
				    (const __m128i *)(g + 16 * i + (size_t)j)),
				    abs);
				mx = max4(mx, a);
			}
		}
		i *= 2;
		memcpy(lanes, &mx, sizeof lanes);
		for (j = 0; j < 4; j++)
			m = lanes[j] > m ? lanes[j] : m;
	}
#endif
	for (; i < nb; i++) {
		memcpy(w, g + 8 * i, sizeof w);
		any = 0;
		for (j = 0; j < 8; j++) {
			w[j] &= 0x7fffffffu;
			any |= w[j];
		}
		if (any == 0) {
			bits[i] = 0;
			continue;
		}
		byte = 0;
		for (j = 0; j < 8; j++) {
			byte |= (unsigned)(w[j] != 0) << j;
			m = w[j] > m ? w[j] : m;
		}
		bits[i] = (uint8_t)byte;
	}
	if (n % 8 != 0) {
		byte = 0;
		for (j = 0; j < (int)(n % 8); j++) {
			memcpy(&w[0], g + 8 * nb + j, sizeof w[0]);
			w[0] &= 0x7fffffffu;
			byte |= (unsigned)(w[0] != 0) << j;
			m = w[0] > m ? w[0] : m;
		}
		bits[nb] = (uint8_t)byte;
	}
	return m;
}

int
hc_bitmap(const float *g, size_t n, uint8_t *bits, int *emax)
{
	uint32_t m;

	if ((g == NULL || bits == NULL) && n > 0)
		return HC_EINVAL;
	m = bitmap_max(g, n, bits);
	if (emax == NULL)
		return m >= 0x7f800000u ? HC_ENONFINITE : 0;
	return exponent_of(m, emax);
}

/* Parts of whole bytes of 16-value groups; the last takes the rest. */
struct bitmap_job {
	const float	*g;
	size_t		 n;
	uint8_t		*bits;
	uint32_t	 m[HC_THREADS_MAX];
};

static void
bitmap_part(void *a, int part, int nparts)
{
	struct bitmap_job *j = a;
	size_t per = (j->n / (size_t)nparts + 127) & ~(size_t)127;
	size_t lo = per * (size_t)part, hi = lo + per;

	if (part == nparts - 1 || hi > j->n)
		hi = j->n;
	j->m[part] = lo < hi ? bitmap_max(j->g + lo, hi - lo, j->bits +
	    lo / 8) : 0;
}

int
hc_bitmap_threads(const float *g, size_t n, uint8_t *bits, int *emax,
    int threads)
{
	struct bitmap_job j;
	uint32_t m = 0;
	int i;

	if ((g == NULL || bits == NULL) && n > 0)
		return HC_EINVAL;
	/* Below a few hundred thousand values a thread costs more. */
	if (threads > (int)(n >> 18))
		threads = (int)(n >> 18);
	if (threads <= 1)
		return hc_bitmap(g, n, bits, emax);
	if (threads > HC_THREADS_MAX)
		threads = HC_THREADS_MAX;
	j.g = g;
	j.n = n;
	j.bits = bits;
	hc_par(threads, bitmap_part, &j);
	for (i = 0; i < threads; i++)
		m = j.m[i] > m ? j.m[i] : m;
	if (emax == NULL)
		return m >= 0x7f800000u ? HC_ENONFINITE : 0;
	return exponent_of(m, emax);
}

/* The scale rule of hcodec.h, with a bit to spare for rounding up. */
int
hc_scale(int emax, int workers, int cell_bits, int *s)
{
	int l = 0, v;

	if (s == NULL || (cell_bits != 32 && cell_bits != 64) ||
	    workers < 1 || workers > HC_MAX_WORKERS)
		return HC_EINVAL;
	if (emax == HC_EXP_NONFINITE)
		return HC_ENONFINITE;
	if (emax < HC_EXP_ZERO || emax > 127)
		return HC_EINVAL;
	while ((1 << l) < workers)
		l++;
	v = cell_bits - 3 - l - emax;
	*s = v > HC_SCALE_MAX ? HC_SCALE_MAX : v;
	return 0;
}

/* Whole words where it can; the last byte's spare bits must be zero. */
int
hc_merge_or(uint8_t *acc, size_t acc_nbits, const uint8_t *in,
    size_t in_nbits)
{
	uint64_t a, b;
	size_t i = 0, nbytes;

	if (acc_nbits != in_nbits)
		return HC_ESIZE;
	nbytes = hc_bitmap_bytes(in_nbits);
	if (nbytes > 0 && (acc == NULL || in == NULL))
		return HC_EINVAL;
	if (in_nbits % 8 != 0 && (in[nbytes - 1] >> (in_nbits % 8)) != 0)
		return HC_EFORMAT;
	for (; i + 8 <= nbytes; i += 8) {
		memcpy(&a, acc + i, 8);
		memcpy(&b, in + i, 8);
		a |= b;
		memcpy(acc + i, &a, 8);
	}
	for (; i < nbytes; i++)
		acc[i] |= in[i];
	return 0;
}

int
hc_merge_max(int *acc, int in)
{
	if (acc == NULL)
		return HC_EINVAL;
	if (in < HC_EXP_ZERO || in > HC_EXP_NONFINITE)
		return HC_EFORMAT;
	if (in > *acc)
		*acc = in;
	return 0;
}

/*
 * Wrapping sums of little-endian cells; memcpy lets acc and in sit at any
 * alignment inside a receive buffer.
 */
int
hc_merge_sum(void *acc, size_t acc_ncells, const void *in,
    size_t in_ncells, int cell_bits)
{
	unsigned char *a = acc;
	const unsigned char *b = in;
	uint32_t x32, y32;
	uint64_t x64, y64;
	size_t i;

	if (cell_bits != 32 && cell_bits != 64)
		return HC_EINVAL;
	if (acc_ncells != in_ncells)
		return HC_ESIZE;
	if (in_ncells > 0 && (acc == NULL || in == NULL))
		return HC_EINVAL;
	if (cell_bits == 32) {
		for (i = 0; i < in_ncells; i++) {
			memcpy(&x32, a + 4 * i, 4);
			memcpy(&y32, b + 4 * i, 4);
			x32 += y32;
			memcpy(a + 4 * i, &x32, 4);
		}
	} else {
		for (i = 0; i < in_ncells; i++) {
			memcpy(&x64, a + 8 * i, 8);
			memcpy(&y64, b + 8 * i, 8);
			x64 += y64;
			memcpy(a + 8 * i, &x64, 8);
		}
	}
	return 0;
}

/*
 * The float nearest q * pinv.  Below 2^53, q is exact as a double and the
 * one rounding is the conversion to float; above, (float)q rounds once and
 * the power of two scales it exactly (the result is far from subnormal,
 * since s <= 149).
 */
float
hc_dequantize_p(int64_t q, double pinv)
{
	const int64_t e53 = (int64_t)1 << 53;

	if (q > -e53 && q < e53)
		return (float)((double)q * pinv);
	return (float)((double)(float)q * pinv);
}

int
hc_quantize(float v, int s, int cell_bits, int64_t *q)
{
	uint64_t u;
	int rc;

	if (q == NULL || (cell_bits != 32 && cell_bits != 64) ||
	    s < HC_SCALE_MIN || s > HC_SCALE_MAX)
		return HC_EINVAL;
	if ((rc = hc_quantize_p(v, ldexp(1.0, s), cell_bits, &u)) != 0)
		return rc;
	*q = (int64_t)u;
	return 0;
}

float
hc_dequantize(int64_t q, int s)
{
	return hc_dequantize_p(q, ldexp(1.0, -s));
}

/* The dense allreduce that a decoded sum must equal, bit for bit. */
int
hc_dense_fixed(const float *const *g, int workers, size_t n, int s,
    int cell_bits, void *fixed)
{
	double p;
	uint64_t q;
	size_t i;
	int w, rc;

	if ((cell_bits != 32 && cell_bits != 64) || workers < 1 ||
	    s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (n > 0 && (g == NULL || fixed == NULL)))
		return HC_EINVAL;
	for (w = 0; w < workers; w++)
		if (n > 0 && g[w] == NULL)
			return HC_EINVAL;
	hc_zero(fixed, n * (size_t)(cell_bits / 8));
	p = ldexp(1.0, s);
	for (w = 0; w < workers; w++) {
		for (i = 0; i < n; i++) {
			if ((hc_fbits(g[w][i]) & 0x7fffffffu) == 0)
				continue;
			if ((rc = hc_quantize_p(g[w][i], p, cell_bits, &q)) != 0)
				return rc;
			hc_cell_add(fixed, i, q, cell_bits);
		}
	}
	return 0;
}

int
hc_fixed_to_float(const void *fixed, size_t n, int cell_bits, int s,
    float *out)
{
	double pinv;
	size_t i;

	if ((cell_bits != 32 && cell_bits != 64) || s < HC_SCALE_MIN ||
	    s > HC_SCALE_MAX || (n > 0 && (fixed == NULL || out == NULL)))
		return HC_EINVAL;
	pinv = ldexp(1.0, -s);
	for (i = 0; i < n; i++)
		out[i] = hc_dequantize_p(hc_cell_signed(hc_cell_get(fixed, i,
		    cell_bits), cell_bits), pinv);
	return 0;
}

/* The splitmix64 finalizer: a bijection that mixes every bit. */
static uint64_t
hc_mix(uint64_t z)
{
	z ^= z >> 30;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 27;
	z *= 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z;
}

/*
 * The k distinct rows of block b among R: draws from a counter-based hash,
 * a repeat re-drawn; after 64 * k draws, which no sane R reaches, the
 * smallest unused rows, so that the answer is always defined and found.
 * The CUDA kernels and gleam-hcodec(3) repeat this exactly.
 */
int
hc_block_rows(uint64_t seed, uint64_t b, uint32_t R, unsigned k,
    uint32_t *out)
{
	uint64_t h, x;
	uint32_t r;
	unsigned got = 0, a, j;

	if (out == NULL || k < 1 || k > HC_MAX_K || R < k)
		return HC_EINVAL;
	h = hc_mix(seed ^ hc_mix(b + 1));
	for (a = 0; got < k && a < 64 * k; a++) {
		x = hc_mix(h + (uint64_t)(a + 1) * HC_GOLDEN);
		r = (uint32_t)(((x >> 32) * (uint64_t)R) >> 32);
		for (j = 0; j < got && out[j] != r; j++)
			;
		if (j == got)
			out[got++] = r;
	}
	for (r = 0; got < k; r++) {
		for (j = 0; j < got && out[j] != r; j++)
			;
		if (j == got)
			out[got++] = r;
	}
	return 0;
}

/* Where coordinate i sits in C, by bisection; SIZE_MAX if not there. */
size_t
hc_core_find(const struct hc_layout *L, uint64_t i)
{
	size_t lo = 0, hi = L->ncore, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (L->core[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < L->ncore && L->core[lo] == i ? lo : SIZE_MAX;
}

unsigned
hc_block_auto(size_t n, size_t u)
{
	size_t B = HC_BLOCK;

	(void)n;
	while (u > (size_t)HC_AUTO_LANE * B && B < HC_MAX_BLOCK)
		B *= 2;
	return (unsigned)B;
}

/* The union's coordinates, counted only where HC_BLOCK_AUTO needs them. */
static size_t
union_count(const uint8_t *ubits, size_t n)
{
	size_t i, nb = hc_bitmap_bytes(n), u = 0;
	uint64_t w;

	for (i = 0; i + 8 <= nb; i += 8) {
		memcpy(&w, ubits + i, 8);
		u += (size_t)__builtin_popcountll(w);
	}
	for (; i < nb; i++)
		u += (size_t)__builtin_popcount(ubits[i]);
	return u;
}

/* Every size the layout derives from p fits its integer types. */
static int
params_check(const struct hc_params *p)
{
	size_t B;

	if (p == NULL || p->n > HC_MAX_N || p->block > HC_MAX_BLOCK ||
	    p->k < 2 || p->k > HC_MAX_K ||
	    (p->cell_bits != 32 && p->cell_bits != 64) ||
	    (p->impl != HC_IMPL_FAST && p->impl != HC_IMPL_REF) ||
	    p->threads < 0 || p->threads > HC_THREADS_MAX)
		return HC_EINVAL;
	/* HC_BLOCK_AUTO's smallest B: the most blocks it can make. */
	B = p->block == HC_BLOCK_AUTO ? HC_BLOCK : p->block;
	B = p->n > 0 && p->n < B ? p->n : B;
	if ((p->n + B - 1) / B > HC_MAX_BLOCKS)
		return HC_EINVAL;
	return 0;
}

/*
 * What both implementations need: B, the union's lane counts and so R,
 * the rows of every block.  Then the implementation peels.  L is a fresh
 * zeroed layout, or an old one whose buffers are reused.
 */
static int
layout_make(const struct hc_params *p, const uint8_t *ubits,
    struct hc_layout *L, struct hc_layout **out)
{
	size_t nbytes, i, b, t, B, *lane;
	int rc, parts;

	if ((rc = params_check(p)) != 0)
		goto fail;
	nbytes = hc_bitmap_bytes(p->n);
	rc = HC_EINVAL;
	if (nbytes > 0 && ubits == NULL)
		goto fail;
	rc = HC_EFORMAT;
	if (p->n % 8 != 0 && (ubits[nbytes - 1] >> (p->n % 8)) != 0)
		goto fail;
	rc = HC_ENOMEM;
	if (L == NULL && (L = calloc(1, sizeof *L)) == NULL)
		goto fail;
	L->p = *p;
	/* Only a union of more than HC_AUTO_LANE * HC_BLOCK makes B grow. */
	B = p->block;
	if (B == HC_BLOCK_AUTO)
		B = p->n > (size_t)HC_AUTO_LANE * HC_BLOCK ?
		    hc_block_auto(p->n, union_count(ubits, p->n)) : HC_BLOCK;
	B = p->n > 0 && p->n < B ? p->n : B;
	L->p.block = (unsigned)B;
	L->nblocks = (p->n + B - 1) / B;
	L->R = L->umax = 0;
	L->ncells = L->ucount = L->ncore = L->npeel = L->nrounds = 0;
	L->rows = NULL;
	L->core = NULL;
	L->peel = NULL;
	L->round_start = NULL;
	L->parts = 0;
	L->lpeel = NULL;
	L->lq_start = L->pq_off = NULL;
	L->laneq = NULL;
	/* lane[t + 1] counts lane t; the fast layout turns it into offsets. */
	if ((L->ubits = hc_buf_get(&L->b_ubits, nbytes)) == NULL ||
	    (lane = hc_buf_get(&L->b_off, (B + 1) * sizeof *lane)) == NULL)
		goto fail;
	if (nbytes > 0)
		memcpy(L->ubits, ubits, nbytes);
	if ((parts = hc_parts(L)) > 0) {
		if ((rc = hc_fast_layout_par(L, parts)) != 0)
			goto fail;
		*out = L;
		return 0;
	}
	memset(lane, 0, (B + 1) * sizeof *lane);
	HC_FOR_EACH_BIT(L->ubits, p->n, B, i, b, t, lane[t + 1]++;);
	for (t = 0; t < B; t++) {
		L->ucount += lane[t + 1];
		if (lane[t + 1] > L->umax)
			L->umax = (uint32_t)lane[t + 1];
	}

	if (L->umax > 0) {
		L->R = hc_rows_for(L->umax, p->k);
		L->ncells = (size_t)L->R * B;
		if ((L->rows = hc_buf_get(&L->b_rows, L->nblocks * p->k *
		    sizeof *L->rows)) == NULL)
			goto fail;
		for (b = 0; b < L->nblocks; b++)
			hc_block_rows(p->seed, b, L->R, p->k,
			    L->rows + b * p->k);
	}
	rc = p->impl == HC_IMPL_REF ? hc_ref_layout(L) : hc_fast_layout(L);
	if (rc != 0)
		goto fail;
	*out = L;
	return 0;
fail:
	hc_layout_free(L);
	return rc;
}

int
hc_layout_new(const struct hc_params *p, const uint8_t *ubits,
    struct hc_layout **out)
{
	if (out == NULL)
		return HC_EINVAL;
	*out = NULL;
	return layout_make(p, ubits, NULL, out);
}

/*
 * The same, in the memory of *io, a layout no longer needed (or NULL):
 * the fast implementation's buffers only grow, so a worker that makes a
 * layout per tensor touches no fresh pages once they are large enough.
 */
int
hc_layout_renew(const struct hc_params *p, const uint8_t *ubits,
    struct hc_layout **io)
{
	struct hc_layout *old;

	if (io == NULL)
		return HC_EINVAL;
	old = *io;
	*io = NULL;
	if (old != NULL && (old->p.impl != HC_IMPL_FAST || p == NULL ||
	    p->impl != HC_IMPL_FAST)) {
		hc_layout_free(old);
		old = NULL;
	}
	return layout_make(p, ubits, old, io);
}

void
hc_layout_free(struct hc_layout *L)
{
	struct hc_buf *bufs[18];
	size_t i;

	if (L == NULL)
		return;
	bufs[0] = &L->b_ubits;
	bufs[1] = &L->b_rows;
	bufs[2] = &L->b_core;
	bufs[3] = &L->b_peel;
	bufs[4] = &L->b_rstart;
	bufs[5] = &L->b_off;
	bufs[6] = &L->b_cur;
	bufs[7] = &L->b_items;
	bufs[8] = &L->b_lab;
	bufs[9] = &L->b_jsel;
	bufs[10] = &L->b_cnt;
	bufs[11] = &L->b_x;
	bufs[12] = &L->b_lrows;
	bufs[13] = &L->b_q;
	bufs[14] = &L->b_fill;
	bufs[15] = &L->b_par;
	bufs[16] = &L->b_lpeel;
	bufs[17] = &L->b_lmeta;
	for (i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		free(bufs[i]->p);
	free(L->count);
	free(L->idx);
	free(L);
}

size_t
hc_layout_cells(const struct hc_layout *L)
{
	return L->ncells;
}

size_t
hc_layout_core(const struct hc_layout *L)
{
	return L->ncore;
}

size_t
hc_layout_payload(const struct hc_layout *L)
{
	return L->ncells + L->ncore;
}

void
hc_layout_info(const struct hc_layout *L, struct hc_layout_info *info)
{
	memset(info, 0, sizeof *info);
	info->n = L->p.n;
	info->block = L->p.block;
	info->k = L->p.k;
	info->cell_bits = L->p.cell_bits;
	info->nblocks = L->nblocks;
	info->rows = L->R;
	info->max_lane = L->umax;
	info->cells = L->ncells;
	info->union_count = L->ucount;
	info->core_count = L->ncore;
	info->block_rows = L->rows;
	info->core = L->core;
	info->nrounds = L->nrounds;
	info->round_start = L->round_start;
	info->peel = L->peel;
}

int
hc_encode(const struct hc_layout *L, const float *g, int s, void *payload)
{
	double p;

	if (L == NULL || s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (L->p.n > 0 && g == NULL) ||
	    (hc_layout_payload(L) > 0 && payload == NULL))
		return HC_EINVAL;
	p = ldexp(1.0, s);
	if (L->p.impl == HC_IMPL_REF)
		return hc_ref_encode(L, g, p, payload);
	return hc_fast_encode(L, g, p, payload);
}

int
hc_decode_fixed(const struct hc_layout *L, void *sum, void *fixed)
{
	size_t len;
	void *tmp;
	int rc;

	if (L == NULL || (hc_layout_payload(L) > 0 && sum == NULL) ||
	    (L->p.n > 0 && fixed == NULL))
		return HC_EINVAL;
	if (L->p.impl != HC_IMPL_REF)
		return hc_fast_decode(L, sum, fixed, NULL, 0);
	/* The reference writes as it peels: fixed only once it is right. */
	len = L->p.n * (size_t)(L->p.cell_bits / 8);
	if ((tmp = malloc(len + 1)) == NULL)
		return HC_ENOMEM;
	if ((rc = hc_ref_decode(L, sum, tmp)) == 0 && len > 0)
		memcpy(fixed, tmp, len);
	free(tmp);
	return rc;
}

int
hc_decode(const struct hc_layout *L, void *sum, int s, float *out)
{
	void *fixed;
	int rc;

	if (L == NULL || s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (hc_layout_payload(L) > 0 && sum == NULL) ||
	    (L->p.n > 0 && out == NULL))
		return HC_EINVAL;
	if (L->p.impl != HC_IMPL_REF)
		return hc_fast_decode(L, sum, NULL, out, ldexp(1.0, -s));
	/* The reference goes through the dense fixed-point sum. */
	if ((fixed = malloc(L->p.n * (size_t)(L->p.cell_bits / 8) + 1)) ==
	    NULL)
		return HC_ENOMEM;
	if ((rc = hc_ref_decode(L, sum, fixed)) == 0)
		rc = hc_fixed_to_float(fixed, L->p.n, L->p.cell_bits, s, out);
	free(fixed);
	return rc;
}
