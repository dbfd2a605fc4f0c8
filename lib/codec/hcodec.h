/*
 * hcodec: lossless homomorphic compression of sparse float32 gradients, as
 * ref/homomorphic.md specifies; gleam-hcodec(3) is the manual.
 *
 * W workers each hold a gradient of n floats, mostly zero.  Each compresses
 * its own in rounds whose messages are merged without decoding (OR of
 * bitmaps, MAX of exponents, wrapping integer SUM of cells), by gleam-reduce
 * or by any sum-allreduce, and the merged round 2 decodes to the sum,
 * bit-identical to a dense sum of the same fixed-point numbers:
 *
 *	round 0+1	hc_bitmap: the nonzero bitmap (merged by OR) and the
 *			largest exponent (merged by MAX); hc_scale turns the
 *			merged exponent and W into the scale s
 *	layout		hc_layout_new, from the merged bitmap alone: rows,
 *			hashes, the 2-core C; identical on every worker
 *	round 2		hc_encode: the payload, R*B sketch cells then |C|
 *			core values (merged by SUM)
 *	decode		hc_decode: peeling, exact
 *
 * Numbers.  A value v becomes q = round(v * 2^s), rounded half to even,
 * independent of the floating-point environment; q must fit the cell with
 * |q| <= 2^(bits-1) - 1 or the call fails with HC_ERANGE.  The exponent of
 * a nonzero finite v is its biased IEEE exponent field less 127
 * (floor(log2|v|) for a normal v, -127 for a subnormal one), so that
 * |v| < 2^(e+1).  The scale from the largest exponent E of all workers is
 *
 *	s = min(149, bits - 3 - ceil(log2 W) - E)
 *
 * so that W * 2^(E+1) * 2^s <= 2^(bits-2): every q and every sum of W of
 * them fits with a bit to spare, even after rounding up.  At s = 149 every
 * float is an integer multiple of 2^-s, so small gradients quantize without
 * loss.  A fixed-point sum q converts back to the float nearest q * 2^-s
 * (half to even; +-Inf when beyond FLT_MAX), in the default rounding mode.
 * Intermediate sums wrap as two's complement (unsigned arithmetic here);
 * only the final per-coordinate sums must fit.
 *
 * Zeros.  +0 and -0 are zero: not in the bitmap, decoded as +0.  A value
 * that rounds to q = 0 is still a nonzero of the bitmap.  A gradient that
 * is zero everywhere has exponent HC_EXP_ZERO; a union that is empty has
 * R = 0 rows and an empty round 2.
 *
 * NaN and Inf.  Never silently encoded: hc_exponent and hc_bitmap return
 * HC_ENONFINITE and set the exponent to HC_EXP_NONFINITE, which exceeds any
 * finite exponent, so the worker can still take part in round 0 and the
 * MAX tells every worker; hc_scale then returns HC_ENONFINITE everywhere
 * and all workers skip the step together.  hc_encode and hc_dense_fixed
 * return HC_ENONFINITE too.
 *
 * Blocks.  Coordinate i is lane t = i mod B of block b = i / B.  When n is
 * below the block size, B is n (hc_layout_info tells the B in use); when n
 * is not a multiple of B the last block is short and its missing lanes
 * never hold a coordinate.  Cells are R * B all the same.  The default
 * block, HC_BLOCK_AUTO, lets the layout choose B from n and the union
 * alone (so every worker chooses alike): HC_BLOCK, doubled while the
 * union has more than HC_AUTO_LANE coordinates a lane, so that a lane's
 * cells fit a GPU thread block's shared memory (hcodec_cuda.h) even for
 * unions of hundreds of millions.  hc_block_auto tells which.
 *
 * On the wire, little-endian: the exponent as an int32 (MAX), the bitmap
 * as ceil(n / 8) bytes, bit i in bit i & 7 of byte i >> 3, spare bits zero
 * (OR), the payload as R * B sketch cells, cell (r, t) at r * B + t, then
 * the |C| core values in ascending coordinate order, all two's complement
 * of cell_bits (SUM, wrapping, cell by cell: any chunking works).
 *
 * Two implementations sit behind the API: HC_IMPL_FAST (the default) and
 * HC_IMPL_REF, a plain transcription of the specification that the tests
 * compare bit for bit with the fast one.  Both give the same layout (R,
 * rows, 2-core), payload and decoded sums.  A layout is read-only once
 * made, so threads may share one.  Functions return 0 or a negative HC_E*
 * code; none prints or exits.
 */
#ifndef GLEAM_HCODEC_H
#define GLEAM_HCODEC_H

#include <stddef.h>
#include <stdint.h>

#define HC_BLOCK		1024	/* lanes per block, B, for most unions */
#define HC_BLOCK_AUTO		0	/* B from n and |U|: the default */
#define HC_AUTO_LANE		20480	/* union coordinates a lane, at most */
#define HC_K			3	/* default rows per block, k */
#define HC_MAX_BLOCK		65536
#define HC_MAX_K		8
#define HC_MAX_N		((size_t)1 << 40)
#define HC_MAX_BLOCKS		((size_t)1 << 31)	/* n / B, rounded up */
#define HC_MAX_WORKERS		(1 << 20)
#define HC_EXP_ZERO		(-150)	/* exponent of an all-zero gradient */
#define HC_EXP_NONFINITE	128	/* exponent of one holding NaN or Inf */
#define HC_SCALE_MIN		(-200)	/* s outside these is HC_EINVAL */
#define HC_SCALE_MAX		149
#define HC_THREADS_MAX		64

enum hc_impl {
	HC_IMPL_FAST = 0,	/* per-lane peeling, replayed schedule */
	HC_IMPL_REF = 1		/* the specification, literally */
};

enum hc_error {
	HC_OK = 0,
	HC_EINVAL = -1,		/* a parameter out of range, a NULL buffer */
	HC_ENOMEM = -2,		/* out of memory */
	HC_ENONFINITE = -3,	/* a NaN or an Inf in a gradient */
	HC_ERANGE = -4,		/* a value does not fit the cell at this scale */
	HC_ESIZE = -5,		/* merged objects of different sizes */
	HC_EFORMAT = -6,	/* a bitmap with bits set past n */
	HC_ESUPPORT = -7,	/* a nonzero outside the union bitmap */
	HC_ECORRUPT = -8	/* summed cells are not a consistent sketch */
};

/* What fixes a layout; every worker must use the same. */
struct hc_params {
	size_t		n;		/* values in the gradient */
	unsigned	block;		/* B, 1..HC_MAX_BLOCK, or HC_BLOCK_AUTO */
	unsigned	k;		/* distinct rows per block, 2..HC_MAX_K */
	int		cell_bits;	/* 32 or 64 */
	uint64_t	seed;		/* of the row hash */
	int		impl;		/* enum hc_impl */
	/*
	 * HC_IMPL_FAST: threads the layout, encode and decode may use, 1 to
	 * HC_THREADS_MAX (0 counts as 1); the results do not depend on it.
	 * Not part of what workers must agree on.
	 */
	int		threads;
};

/*
 * What hc_layout_info exposes of a layout, for the CUDA kernels and the
 * tests.  Pointers stay valid until hc_layout_free.
 */
struct hc_layout_info {
	size_t		 n;
	unsigned	 block;		/* B in use: min(params.block, n) */
	unsigned	 k;
	int		 cell_bits;
	size_t		 nblocks;	/* ceil(n / B) */
	uint32_t	 rows;		/* R; 0 for an empty union */
	uint32_t	 max_lane;	/* max_t u_t */
	size_t		 cells;		/* R * B */
	size_t		 union_count;	/* |U| */
	size_t		 core_count;	/* |C| */
	const uint32_t	*block_rows;	/* k rows of block b at [b * k] */
	const uint64_t	*core;		/* C, ascending coordinates */
	/*
	 * The fast implementation's peeling schedule (NULL for HC_IMPL_REF):
	 * entries b << 20 | t << 4 | j, one per coordinate of U outside C,
	 * in rounds; round r is peel[round_start[r] .. round_start[r + 1]),
	 * ascending coordinates within a round.  Cell (block_rows[b * k + j],
	 * t) holds coordinate b * B + t alone once the earlier rounds are
	 * peeled, and no entry of a round writes a cell that another reads,
	 * so a round can run in parallel (with atomic adds).
	 */
	size_t		 nrounds;
	const size_t	*round_start;	/* nrounds + 1 */
	const uint64_t	*peel;
};

struct hc_layout;

void		hc_params_init(struct hc_params *, size_t n, int cell_bits);
const char	*hc_strerror(int);

/* Round 0 and 1: the largest exponent, the nonzero bitmap. */
size_t		hc_bitmap_bytes(size_t n);
int		hc_exponent(const float *g, size_t n, int *emax);
int		hc_bitmap(const float *g, size_t n, uint8_t *bits, int *emax);
/* The same on up to threads threads. */
int		hc_bitmap_threads(const float *g, size_t n, uint8_t *bits,
		    int *emax, int threads);
int		hc_scale(int emax, int workers, int cell_bits, int *s);

/* What the aggregator does; sizes are what each side declares. */
int		hc_merge_or(uint8_t *acc, size_t acc_nbits, const uint8_t *in,
		    size_t in_nbits);
int		hc_merge_max(int *acc, int in);
int		hc_merge_sum(void *acc, size_t acc_ncells, const void *in,
		    size_t in_ncells, int cell_bits);

/* The layout: from the merged bitmap, nothing sent. */
int		hc_layout_new(const struct hc_params *, const uint8_t *union_bits,
		    struct hc_layout **);
/* The same in the memory of *layout, an old layout or NULL: per tensor. */
int		hc_layout_renew(const struct hc_params *,
		    const uint8_t *union_bits, struct hc_layout **layout);
void		hc_layout_free(struct hc_layout *);
size_t		hc_layout_cells(const struct hc_layout *);
size_t		hc_layout_core(const struct hc_layout *);
size_t		hc_layout_payload(const struct hc_layout *);
void		hc_layout_info(const struct hc_layout *, struct hc_layout_info *);
int		hc_block_rows(uint64_t seed, uint64_t b, uint32_t rows,
		    unsigned k, uint32_t *out);
/* The B that HC_BLOCK_AUTO takes for n values and a union of u. */
unsigned	hc_block_auto(size_t n, size_t u);

/* Round 2 and decoding.  hc_decode* peel in place: sum is spent. */
int		hc_encode(const struct hc_layout *, const float *g, int s,
		    void *payload);
int		hc_decode(const struct hc_layout *, void *sum, int s, float *out);
int		hc_decode_fixed(const struct hc_layout *, void *sum, void *fixed);

/* The fixed-point numbers, one at a time and dense, for tests and peers. */
int		hc_quantize(float v, int s, int cell_bits, int64_t *q);
float		hc_dequantize(int64_t q, int s);
int		hc_dense_fixed(const float *const *g, int workers, size_t n,
		    int s, int cell_bits, void *fixed);
int		hc_fixed_to_float(const void *fixed, size_t n, int cell_bits,
		    int s, float *out);

#endif
