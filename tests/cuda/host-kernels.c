/*
 * Host implementations of the kernels of the programs in tests/cuda/, for
 * gleam-serve's host backend (gleam-host-kernel.h): with host_kernels
 * naming this object, those programs run end to end on a machine without
 * a GPU.  Each kernel is written as its .cu has it, thread by thread, and
 * checks every access with GLEAM_HOST_OK first, as a GPU would fault.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gleam-host-kernel.h"

GLEAM_HOST_KERNEL_LIBRARY;

#define ASSERT_LINE	35	/* of the assert in assert.cu */

typedef struct gleam_host_dim dim;

/*
 * Every thread of the grid, block by block: the body sees the block and
 * thread indices and dimensions by their CUDA names, and i, the global
 * index in x as a kernel computes it (blockIdx.x * blockDim.x +
 * threadIdx.x, in unsigned arithmetic).
 */
#define FOR_EACH_THREAD(g, b)						\
	for (unsigned bz_ = 0; bz_ < (g)->z; bz_++)			\
	for (unsigned by_ = 0; by_ < (g)->y; by_++)			\
	for (unsigned bx_ = 0; bx_ < (g)->x; bx_++)			\
	for (unsigned tz_ = 0; tz_ < (b)->z; tz_++)			\
	for (unsigned ty_ = 0; ty_ < (b)->y; ty_++)			\
	for (unsigned tx_ = 0, i = bx_ * (b)->x; tx_ < (b)->x; tx_++, i++)

#define ARG(t, k)	(*(t *)args[k])
#define OK(p, n)	GLEAM_HOST_OK((p), (n))

/* ---- vecadd.cu --------------------------------------------------------- */

static void
vec_add(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const float *x = ARG(const float *, 0), *y = ARG(const float *, 1);
	float *z = ARG(float *, 2);
	int n = ARG(int, 3);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&x[(int)i], 4) && OK(&y[(int)i], 4) &&
		    OK(&z[(int)i], 4))
			z[(int)i] = x[(int)i] + y[(int)i];
}

static const struct gleam_host_param vec_add_p[] = {
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(int)
};

/* ---- u32 kernels of errors.cu, fork.cu, streams.cu, threads.cu --------- */

/* p[i] = v ^ i */
static void
set_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), v = ARG(unsigned, 1);
	int n = ARG(int, 2);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = v ^ i;
}

/*
 * mapped.cu's spin_u32: waits for the host to write want, or times out,
 * and says which in *out.  A launch here runs to its end before the next call is
 * read, so no write of the host's can come while it waits: it looks once.
 */
static void
spin_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *flag = ARG(unsigned *, 0), want = ARG(unsigned, 1);
	unsigned *out = ARG(unsigned *, 3);

	(void)g;
	(void)b;
	(void)shmem;
	if (OK(flag, 4) && OK(out, 4))
		*out = *flag == want ? 1 : 3;
}

/* Reverses p[0..blockDim.x) through dynamic shared memory. */
static void
smem_rev(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), *buf, t;

	if ((buf = calloc(1, shmem ? shmem : 1)) == NULL) {
		OK(NULL, 1);
		return;
	}
	for (unsigned blk = 0; blk < g->x * g->y * g->z; blk++) {
		/* Each block, its threads up to __syncthreads, then on. */
		for (t = 0; t < b->x; t++)
			if ((t + 1) * 4 <= shmem && OK(&p[t], 4))
				buf[t] = p[t];
			else
				OK(NULL, 1);	/* out of shared memory */
		for (t = 0; t < b->x; t++)
			if ((b->x - t) * 4 <= shmem && OK(&p[t], 4))
				p[t] = buf[b->x - 1 - t];
	}
	free(buf);
}

/* *p = v */
static void
poke_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), v = ARG(unsigned, 1);

	FOR_EACH_THREAD(g, b)
		if (OK(p, 4))
			*p = v;
}

/* p[i] = i * mul + add */
static void
iota_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), mul = ARG(unsigned, 1),
	    add = ARG(unsigned, 2);
	int n = ARG(int, 3);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = i * mul + add;
}

/* p[i] = base + i * 2654435761 */
static void
fill_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), base = ARG(unsigned, 1);
	int n = ARG(int, 2);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = base + i * 2654435761u;
}

/* out += a + 3b + 5c + 7d */
static void
sum4_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *out = ARG(unsigned *, 0);
	const unsigned *w = ARG(const unsigned *, 1),
	    *x = ARG(const unsigned *, 2), *y = ARG(const unsigned *, 3),
	    *z = ARG(const unsigned *, 4);
	int n = ARG(int, 5);

	FOR_EACH_THREAD(g, b) {
		int k = (int)i;

		if (k < n && OK(&out[k], 4) && OK(&w[k], 4) && OK(&x[k], 4) &&
		    OK(&y[k], 4) && OK(&z[k], 4))
			out[k] += w[k] + 3 * x[k] + 5 * y[k] + 7 * z[k];
	}
}

/* p = p * mul + add */
static void
affine_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), mul = ARG(unsigned, 1),
	    add = ARG(unsigned, 2);
	int n = ARG(int, 3);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = p[(int)i] * mul + add;
}

/* p[i] = p[i] * 31 + (id << 16) + round */
static void
mix_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), id = ARG(unsigned, 1),
	    round = ARG(unsigned, 2);
	int n = ARG(int, 3);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = p[(int)i] * 31 + (id << 16) + round;
}

static const struct gleam_host_param p_u32_u32_int[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(unsigned),
	GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param p_u32_u32_u32_int[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(unsigned),
	GLEAM_HOST_PARAM(unsigned), GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param p_ptr[] = {
	GLEAM_HOST_PARAM(unsigned *)
};
static const struct gleam_host_param p_ptr_u32[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(unsigned)
};
static const struct gleam_host_param sum4_u32_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(const unsigned *),
	GLEAM_HOST_PARAM(const unsigned *), GLEAM_HOST_PARAM(const unsigned *),
	GLEAM_HOST_PARAM(const unsigned *), GLEAM_HOST_PARAM(int)
};

/* ---- globals.cu -------------------------------------------------------- */

#define G_N	4096
#define G_NCOEF	64

static const unsigned g_init_value[8] = { 1, 2, 3, 5, 8, 13, 21, 34 };

/* A global of the launching module; NULL (and a fault) if there is none. */
static void *
global(const char *name)
{
	void *p = gleam_host_global_ptr(name);

	if (p == NULL)
		OK(NULL, 1);
	return p;
}

/* out[i] = in[i] * c_coef[i % NCOEF] + c_bias + g_init[i % 8] */
static void
apply_coef(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *out = ARG(unsigned *, 0);
	const unsigned *in = ARG(const unsigned *, 1);
	int n = ARG(int, 2);
	const unsigned *coef = global("c_coef"), *bias = global("c_bias"),
	    *init = global("g_init");

	if (coef == NULL || bias == NULL || init == NULL)
		return;
	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&out[(int)i], 4) && OK(&in[(int)i], 4))
			out[(int)i] = in[(int)i] * coef[(int)i % G_NCOEF] +
			    *bias + init[(int)i % 8];
}

/* g_table[i] = g_table[i] * 3 + k; g_sum += the old g_table[i] */
static void
table_step(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned k = ARG(unsigned, 0), *table = global("g_table");
	unsigned long long *sum = global("g_sum");

	if (table == NULL || sum == NULL)
		return;
	FOR_EACH_THREAD(g, b)
		if ((int)i < G_N) {
			*sum += table[(int)i];
			table[(int)i] = table[(int)i] * 3 + k;
		}
}

static const struct gleam_host_param apply_coef_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(const unsigned *),
	GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param table_step_p[] = {
	GLEAM_HOST_PARAM(unsigned)
};

/* ---- memcpy.cu and memset.cu ------------------------------------------- */

/* dst[i] = src[i] ^ k */
static void
xor_u8(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned char *dst = ARG(unsigned char *, 0), k;
	const unsigned char *src = ARG(const unsigned char *, 1);
	unsigned n = ARG(unsigned, 3);

	k = ARG(unsigned char, 2);
	FOR_EACH_THREAD(g, b)
		if (i < n && OK(&dst[i], 1) && OK(&src[i], 1))
			dst[i] = src[i] ^ k;
}

/* *count += the number of bytes of p[0..n) equal to v */
static void
count_u8(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const unsigned char *p = ARG(const unsigned char *, 0);
	unsigned char v = ARG(unsigned char, 1);
	unsigned n = ARG(unsigned, 2), *count = ARG(unsigned *, 3);

	FOR_EACH_THREAD(g, b)
		if (i < n && OK(&p[i], 1) && p[i] == v && OK(count, 4))
			(*count)++;
}

static const struct gleam_host_param xor_u8_p[] = {
	GLEAM_HOST_PARAM(unsigned char *),
	GLEAM_HOST_PARAM(const unsigned char *),
	GLEAM_HOST_PARAM(unsigned char), GLEAM_HOST_PARAM(unsigned)
};
static const struct gleam_host_param count_u8_p[] = {
	GLEAM_HOST_PARAM(const unsigned char *),
	GLEAM_HOST_PARAM(unsigned char), GLEAM_HOST_PARAM(unsigned),
	GLEAM_HOST_PARAM(unsigned *)
};

/* ---- params.cu --------------------------------------------------------- */

/* The scalar types of many_scalars, and the bits params.cu records. */
enum { T_C, T_SC, T_UC, T_S, T_US, T_I, T_U, T_LL, T_ULL, T_F, T_D, T_P };

static const unsigned char ms_type[] = {
	T_C, T_D, T_S, T_I, T_SC, T_LL, T_F, T_P, T_UC, T_US,
	T_F, T_D, T_C, T_I, T_U, T_S, T_LL, T_C, T_F, T_D,
	T_P, T_S, T_C, T_ULL, T_F, T_I, T_C, T_D, T_UC, T_F,
	T_S, T_LL, T_C, T_P, T_I, T_D, T_SC, T_US, T_F
};
#define MS_N	(sizeof ms_type)

/* Integers as C promotes them, widened; floating point as its bits. */
static unsigned long long
bits(int type, const void *p)
{
	unsigned long long u = 0;

	switch (type) {
	case T_C:	return (unsigned long long)(long long)*(const char *)p;
	case T_SC:	return (unsigned long long)(long long)
			    *(const signed char *)p;
	case T_UC:	return *(const unsigned char *)p;
	case T_S:	return (unsigned long long)(long long)*(const short *)p;
	case T_US:	return *(const unsigned short *)p;
	case T_I:	return (unsigned long long)(long long)*(const int *)p;
	case T_U:	return *(const unsigned *)p;
	case T_F:	memcpy(&u, p, 4); return u;
	default:	memcpy(&u, p, 8); return u;	/* 8-byte types */
	}
}

static void
many_scalars(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned long long *out = ARG(unsigned long long *, MS_N);
	size_t k;

	if (!OK(out, MS_N * sizeof *out))
		return;
	/* Only thread 0 of block 0 writes. */
	for (k = 0; k < MS_N; k++)
		out[k] = bits(ms_type[k], args[k]);
}

static struct gleam_host_param many_scalars_p[MS_N + 1];

/* Fills many_scalars_p from ms_type when the object is loaded. */
__attribute__((constructor)) static void
many_scalars_init(void)
{
	static const struct gleam_host_param t[] = {
		[T_C] = GLEAM_HOST_PARAM(char),
		[T_SC] = GLEAM_HOST_PARAM(signed char),
		[T_UC] = GLEAM_HOST_PARAM(unsigned char),
		[T_S] = GLEAM_HOST_PARAM(short),
		[T_US] = GLEAM_HOST_PARAM(unsigned short),
		[T_I] = GLEAM_HOST_PARAM(int),
		[T_U] = GLEAM_HOST_PARAM(unsigned),
		[T_LL] = GLEAM_HOST_PARAM(long long),
		[T_ULL] = GLEAM_HOST_PARAM(unsigned long long),
		[T_F] = GLEAM_HOST_PARAM(float),
		[T_D] = GLEAM_HOST_PARAM(double),
		[T_P] = GLEAM_HOST_PARAM(const void *),
	};
	size_t k;

	for (k = 0; k < MS_N; k++)
		many_scalars_p[k] = t[ms_type[k]];
	many_scalars_p[MS_N] = (struct gleam_host_param)
	    GLEAM_HOST_PARAM(unsigned long long *);
}

struct padded {
	char	c;
	double	d;
	int	i;
	short	s[3];
};

struct al16 {
	unsigned long long	x;
	int			y;
} __attribute__((aligned(16)));

struct big {
	unsigned	w[256];
};

struct huge {
	unsigned	w[2048];
};

/* out[0..10) = tag, p.c, p.d, p.i, p.s[0..3), tag2, q.x, q.y */
static void
two_structs(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const struct padded *p = args[1];
	const struct al16 *q = args[3];
	unsigned long long *out = ARG(unsigned long long *, 4);

	if (!OK(out, 10 * sizeof *out))
		return;
	out[0] = bits(T_C, args[0]);
	out[1] = bits(T_C, &p->c);
	out[2] = bits(T_D, &p->d);
	out[3] = bits(T_I, &p->i);
	out[4] = bits(T_S, &p->s[0]);
	out[5] = bits(T_S, &p->s[1]);
	out[6] = bits(T_S, &p->s[2]);
	out[7] = bits(T_S, args[2]);
	out[8] = bits(T_ULL, &q->x);
	out[9] = bits(T_I, &q->y);
}

/* out[i] = b.w[i], one thread a word */
static void
big_struct(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const struct big *s = args[0];
	unsigned *out = ARG(unsigned *, 1);

	FOR_EACH_THREAD(g, b)
		if (i < 256 && OK(&out[i], 4))
			out[i] = s->w[i];
}

/* out[i] = h.w[i] ^ key, one thread a word */
static void
huge_struct(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned key = ARG(unsigned, 0), *out = ARG(unsigned *, 2);
	const struct huge *h = args[1];

	FOR_EACH_THREAD(g, b)
		if (i < 2048 && OK(&out[i], 4))
			out[i] = h->w[i] ^ key;
}

/* g_noparams += 1 for every thread */
static void
no_params(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *count = global("g_noparams");

	if (count == NULL)
		return;
	FOR_EACH_THREAD(g, b) {
		(void)i;
		(*count)++;
	}
}

static const struct gleam_host_param two_structs_p[] = {
	GLEAM_HOST_PARAM(char), GLEAM_HOST_PARAM(struct padded),
	GLEAM_HOST_PARAM(short), GLEAM_HOST_PARAM(struct al16),
	GLEAM_HOST_PARAM(unsigned long long *)
};
static const struct gleam_host_param big_struct_p[] = {
	GLEAM_HOST_PARAM(struct big), GLEAM_HOST_PARAM(unsigned *)
};
static const struct gleam_host_param huge_struct_p[] = {
	GLEAM_HOST_PARAM(unsigned), GLEAM_HOST_PARAM(struct huge),
	GLEAM_HOST_PARAM(unsigned *)
};

/* ---- bench/workloads/infer.cu, its -K mode ----------------------------- */

/*
 * The arithmetic is infer-math.h's, shared with the CUDA kernels and the
 * program's CPU reference; this file is built with -ffp-contract=off so
 * that the results are the GPU's bit for bit.
 */
#include "../../bench/workloads/infer-math.h"

/* The thread's index as the kernel has it, or -1 (a fault) if negative. */
static int
infer_index(unsigned i)
{
	if ((int)i < 0) {
		OK(NULL, 1);
		return -1;
	}
	return (int)i;
}

/* x[t] = tok[ids[t] % vocab] + pos[t % seq] */
static void
infer_embed(const dim *g, const dim *b, unsigned shmem, void **args)
{
	float *x = ARG(float *, 0);
	const int *ids = ARG(const int *, 1);
	const float *tok = ARG(const float *, 2), *pos = ARG(const float *, 3);
	int ntok = ARG(int, 4), seq = ARG(int, 5), d = ARG(int, 6),
	    vocab = ARG(int, 7), total = (int)((unsigned)ntok * (unsigned)d);

	FOR_EACH_THREAD(g, b) {
		int k, t, j;
		unsigned id;

		if ((int)i >= total || (k = infer_index(i)) < 0)
			continue;
		if (vocab == 0 || seq == 0) {	/* a GPU reads garbage */
			OK(NULL, 1);
			return;
		}
		t = k / d;
		j = k % d;
		if (!OK(&ids[t], 4))
			continue;
		id = (unsigned)ids[t] % (unsigned)vocab;
		if (OK(&tok[(size_t)id * d + j], 4) &&
		    OK(&pos[(t % seq) * d + j], 4) && OK(&x[k], 4))
			x[k] = im_add(tok[(size_t)id * d + j],
			    pos[(t % seq) * d + j]);
	}
}

/*
 * add_bias (0), bias_gelu (1), bias_residual (2): y[i] += b[i % n],
 * y[i] = gelu(y[i] + b[i % n]), x[i] += y[i] + b[i % n].
 */
static void
infer_bias(int which, const dim *g, const dim *b, void **args)
{
	float *x = ARG(float *, 0);
	const float *y = which == 2 ? ARG(const float *, 1) : NULL;
	const float *bias = ARG(const float *, which == 2 ? 2 : 1);
	int rows = ARG(int, which == 2 ? 3 : 2), n = ARG(int, which == 2 ? 4 : 3);
	int total = (int)((unsigned)rows * (unsigned)n);

	FOR_EACH_THREAD(g, b) {
		int k;

		if ((int)i >= total || (k = infer_index(i)) < 0 ||
		    !OK(&x[k], 4) || !OK(&bias[k % n], 4))
			continue;
		if (which == 0)
			x[k] = im_add(x[k], bias[k % n]);
		else if (which == 1)
			x[k] = im_gelu(im_add(x[k], bias[k % n]));
		else if (OK(&y[k], 4))
			x[k] = im_add(x[k], im_add(y[k], bias[k % n]));
	}
}

static void
infer_add_bias(const dim *g, const dim *b, unsigned shmem, void **args)
{
	infer_bias(0, g, b, args);
}

static void
infer_bias_gelu(const dim *g, const dim *b, unsigned shmem, void **args)
{
	infer_bias(1, g, b, args);
}

static void
infer_bias_residual(const dim *g, const dim *b, unsigned shmem, void **args)
{
	infer_bias(2, g, b, args);
}

/* One block a row, IM_RED_THREADS threads a block (else nothing runs). */
static void
infer_layernorm(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const float *in = ARG(const float *, 0);
	int stride = ARG(int, 1), rows = ARG(int, 5), n = ARG(int, 6);
	float *out = ARG(float *, 2);
	const float *gam = ARG(const float *, 3), *bet = ARG(const float *, 4);

	if (b->x != IM_RED_THREADS || b->y != 1 || b->z != 1 || n <= 0)
		return;
	for (unsigned z = 0; z < g->z; z++)
	for (unsigned y = 0; y < g->y; y++)
	for (unsigned r = 0; r < g->x && (int)r < rows && (int)r >= 0; r++) {
		const float *x = in + (size_t)r * stride;
		float *o = out + (size_t)r * n;

		if (OK(x, (size_t)n * 4) && OK(o, (size_t)n * 4) &&
		    OK(gam, (size_t)n * 4) && OK(bet, (size_t)n * 4))
			im_layernorm_row(x, o, gam, bet, n);
	}
}

/* In place, one block a row, as infer_layernorm. */
static void
infer_softmax(const dim *g, const dim *b, unsigned shmem, void **args)
{
	float *p = ARG(float *, 0), scale = ARG(float, 3);
	int rows = ARG(int, 1), n = ARG(int, 2);

	if (b->x != IM_RED_THREADS || b->y != 1 || b->z != 1 || n <= 0)
		return;
	for (unsigned z = 0; z < g->z; z++)
	for (unsigned y = 0; y < g->y; y++)
	for (unsigned r = 0; r < g->x && (int)r < rows && (int)r >= 0; r++)
		if (OK(p + (size_t)r * n, (size_t)n * 4))
			im_softmax_row(p + (size_t)r * n, n, scale);
}

/*
 * C[z] = A[z] op(B[z]), an element a thread of IM_TILE x IM_TILE blocks;
 * the span of each row of A and column of B it reads is checked at once.
 */
static void
infer_gemm(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const float *A0 = ARG(const float *, 0), *B0 = ARG(const float *, 3);
	float *C0 = ARG(float *, 7);
	int lda = ARG(int, 1), ldb = ARG(int, 4), transb = ARG(int, 6),
	    ldc = ARG(int, 8), M = ARG(int, 10), N = ARG(int, 11),
	    K = ARG(int, 12);
	long long sa = ARG(long long, 2), sb = ARG(long long, 5),
	    sc = ARG(long long, 9);

	if (b->x != IM_TILE || b->y != IM_TILE)
		return;
	for (unsigned z = 0; z < g->z; z++)
	for (unsigned by = 0; by < g->y; by++)
	for (unsigned bx = 0; bx < g->x; bx++)
	for (unsigned ty = 0; ty < IM_TILE; ty++)
	for (unsigned tx = 0; tx < IM_TILE; tx++) {
		int row = (int)(by * IM_TILE + ty), col = (int)(bx * IM_TILE + tx);
		const float *A = A0 + z * sa, *B = B0 + z * sb, *a;
		float *c = C0 + z * sc + (size_t)row * ldc + col;

		if (row >= M || col >= N || row < 0 || col < 0)
			continue;
		a = A + (size_t)row * lda;
		if (K > 0 && (!OK(a, (size_t)K * 4) || !(transb ?
		    OK(B + (size_t)col * ldb, (size_t)K * 4) :
		    OK(B + col, ((size_t)(K - 1) * ldb + 1) * 4))))
			continue;
		if (OK(c, 4))
			*c = im_gemm_elem(a, B, ldb, transb, K, col);
	}
}

static const struct gleam_host_param infer_embed_p[] = {
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(const int *),
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param infer_bias_p[] = {
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param infer_bias_residual_p[] = {
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param infer_layernorm_p[] = {
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param infer_softmax_p[] = {
	GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(float)
};
static const struct gleam_host_param infer_gemm_p[] = {
	GLEAM_HOST_PARAM(const float *), GLEAM_HOST_PARAM(int),
	GLEAM_HOST_PARAM(long long), GLEAM_HOST_PARAM(const float *),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(long long),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(float *),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(long long),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int)
};

/* ---- soak.cu ----------------------------------------------------------- */

static void
soak_inc(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *v = ARG(unsigned *, 0);
	size_t n = ARG(size_t, 1);

	FOR_EACH_THREAD(g, b)
		if (i < n && OK(&v[i], 4))
			v[i] += 1;
}

static const struct gleam_host_param soak_inc_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(size_t)
};

/* ---- graphs_cond.cu: conditional nodes --------------------------------- */

/* cudaGraphSetConditional, on a backend that has it. */
static void
set_cond(unsigned long long h, unsigned v)
{
	if (gleam_host_set_conditional != NULL)
		gleam_host_set_conditional(h, v);
}

/* Thread 0 sets the condition h to v. */
static void
cond_set(const dim *g, const dim *b, unsigned shmem, void **args)
{
	(void)g;
	(void)b;
	(void)shmem;
	set_cond(ARG(unsigned long long, 0), ARG(unsigned, 1));
}

/* Thread 0 counts a turn in *c and sets h to *c < limit. */
static void
cond_count(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *c = ARG(unsigned *, 1), limit = ARG(unsigned, 2);

	(void)g;
	(void)b;
	(void)shmem;
	if (!OK(c, 4))
		return;
	*c += 1;
	set_cond(ARG(unsigned long long, 0), *c < limit);
}

/* Thread 0: *p += k. */
static void
cond_add(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0);

	(void)g;
	(void)b;
	(void)shmem;
	if (OK(p, 4))
		*p += ARG(unsigned, 1);
}

static const struct gleam_host_param cond_set_p[] = {
	GLEAM_HOST_PARAM(unsigned long long), GLEAM_HOST_PARAM(unsigned)
};
static const struct gleam_host_param cond_count_p[] = {
	GLEAM_HOST_PARAM(unsigned long long), GLEAM_HOST_PARAM(unsigned *),
	GLEAM_HOST_PARAM(unsigned)
};

/* ---- printf.cu and assert.cu: device output ------------------------- */

static void
pf_hello(const dim *g, const dim *b, unsigned shmem, void **args)
{
	FOR_EACH_THREAD(g, b)
		gleam_host_printf("dev: hello %d %.3f %s\n", ARG(int, 0),
		    (double)ARG(float, 1), "literal");
}

static const struct gleam_host_param pf_hello_p[] = {
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(float)
};

/* Blocks take turns through *turn; thread 0 of each prints. */
static void
pf_ordered(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *turn = ARG(unsigned *, 0);
	int round = ARG(int, 1);

	FOR_EACH_THREAD(g, b) {
		if (tx_ != 0 || ty_ != 0 || tz_ != 0 || !OK(turn, 4) ||
		    *turn != bx_)
			continue;
		gleam_host_printf("dev: round %d block %u of %u, %u "
		    "threads\n", round, bx_, g->x, b->x);
		(*turn)++;
	}
}

static const struct gleam_host_param pf_ordered_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(int)
};

static void
pf_spew(const dim *g, const dim *b, unsigned shmem, void **args)
{
	int launch = ARG(int, 0), n = ARG(int, 1);

	FOR_EACH_THREAD(g, b)
		for (int k = 0; k < n; k++)
			gleam_host_printf("dev: spew %d line %05d value "
			    "%08x\n", launch, k, (unsigned)launch *
			    2654435761u ^ (unsigned)k * 40503u);
}

static const struct gleam_host_param p_int_int[] = {
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(int)
};

/* assert(p[i] != 3u), with the message a GPU prints. */
static void
check_vals(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const unsigned *p = ARG(const unsigned *, 0);
	int n = ARG(int, 1);
	char msg[256];

	FOR_EACH_THREAD(g, b) {
		if (i == 0)
			gleam_host_printf("dev: checking %d values\n", n);
		if (i < (unsigned)n && OK(&p[i], 4) && p[i] == 3u) {
			snprintf(msg, sizeof msg, "tests/cuda/assert.cu:%d: "
			    "void check_vals(const unsigned int *, int): "
			    "block: [%u,%u,%u], thread: [%u,%u,%u] "
			    "Assertion `p[i] != 3u` failed.\n", ASSERT_LINE,
			    bx_, by_, bz_, tx_, ty_, tz_);
			gleam_host_assert_fail(msg);
			return;
		}
	}
}

static const struct gleam_host_param check_vals_p[] = {
	GLEAM_HOST_PARAM(const unsigned *), GLEAM_HOST_PARAM(int)
};

/* ---- modules.cu -------------------------------------------------------- */

/* p[i] += g_bias + i, i < n */
static void
mk_add(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), *bias = global("g_bias");
	int n = ARG(int, 1);

	if (bias == NULL)
		return;
	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] += *bias + i;
}

/* p[i] *= k, i < n */
static void
mk_scale(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), k = ARG(unsigned, 1);
	int n = ARG(int, 2);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] *= k;
}

static const struct gleam_host_param mk_add_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(int)
};

/* ---- migrate.cu -------------------------------------------------------- */

static void
mig_fill(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), seed = ARG(unsigned, 1);
	int n = ARG(int, 2);

	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&p[(int)i], 4))
			p[(int)i] = (seed ^ i) * 2654435761u + (i >> 3);
}

static void
mig_mix(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *dst = ARG(unsigned *, 0), k = ARG(unsigned, 3), j;
	const unsigned *src = ARG(const unsigned *, 1);
	int m = ARG(int, 2), n = ARG(int, 4);

	FOR_EACH_THREAD(g, b) {
		if ((int)i >= n || m <= 0)
			continue;
		j = i * 7u % (unsigned)m;
		if (OK(&dst[(int)i], 4) && OK(&src[j], 4))
			dst[(int)i] = dst[(int)i] * 33u + (src[j] ^ k);
	}
}

/* Each block's 16 * blockDim.x words reversed by threads, plus one. */
static void
mig_smem(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *p = ARG(unsigned *, 0), *buf, n = b->x * 16, base, t, j;

	if (shmem < n * 4 || (buf = malloc(n * 4)) == NULL) {
		OK(NULL, 1);
		return;
	}
	for (unsigned bx = 0; bx < g->x; bx++) {
		base = bx * n;
		if (!OK(&p[base], n * 4))
			break;
		memcpy(buf, &p[base], n * 4);
		for (t = 0; t < b->x; t++)
			for (j = 0; j < 16; j++)
				p[base + t * 16 + j] =
				    buf[(b->x - 1 - t) * 16 + j] + 1;
	}
	free(buf);
}

static void
mig_glob(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned k = ARG(unsigned, 0), *v = global("g_mig");

	if (v == NULL)
		return;
	FOR_EACH_THREAD(g, b)
		if (i < 16)
			v[i] = v[i] * 5u + k + i;
}

static const struct gleam_host_param mig_mix_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(const unsigned *),
	GLEAM_HOST_PARAM(int), GLEAM_HOST_PARAM(unsigned), GLEAM_HOST_PARAM(int)
};

static const struct gleam_host_param p_u32[] = {
	GLEAM_HOST_PARAM(unsigned)
};

/* ---- managed_big.cu ---------------------------------------------------- */

/* out[i] = src[i * stride], i < n */
static void
gather_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *out = ARG(unsigned *, 0);
	const unsigned *src = ARG(const unsigned *, 1);
	unsigned long long stride = ARG(unsigned long long, 2);
	int n = ARG(int, 3);

	(void)shmem;
	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&out[i], 4) && OK(&src[i * stride], 4))
			out[i] = src[i * stride];
}

/* dst[i * stride] = v ^ i, i < n */
static void
scatter_u32(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned *dst = ARG(unsigned *, 0);
	unsigned long long stride = ARG(unsigned long long, 1);
	unsigned v = ARG(unsigned, 2);
	int n = ARG(int, 3);

	(void)shmem;
	FOR_EACH_THREAD(g, b)
		if ((int)i < n && OK(&dst[i * stride], 4))
			dst[i * stride] = v ^ i;
}

static const struct gleam_host_param gather_u32_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(const unsigned *),
	GLEAM_HOST_PARAM(unsigned long long), GLEAM_HOST_PARAM(int)
};
static const struct gleam_host_param scatter_u32_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(unsigned long long),
	GLEAM_HOST_PARAM(unsigned), GLEAM_HOST_PARAM(int)
};

/* ---- noctx.cu ---------------------------------------------------------- */

/* p[threadIdx.x] += 1 */
static void
bump(const dim *g, const dim *b, unsigned shmem, void **args)
{
	unsigned char *p = ARG(unsigned char *, 0);

	FOR_EACH_THREAD(g, b)
		if (OK(&p[tx_], 1))
			p[tx_] += 1;
}

static const struct gleam_host_param spin_u32_p[] = {
	GLEAM_HOST_PARAM(unsigned *), GLEAM_HOST_PARAM(unsigned),
	GLEAM_HOST_PARAM(long long), GLEAM_HOST_PARAM(unsigned *)
};

/* ---- bench/step-phases.cu ------------------------------------------------- */

/* The last of the step's kernels writes the token from the position;
 * the GPU's spin is not imitated. */
static void
step_phase(const dim *g, const dim *b, unsigned shmem, void **args)
{
	const int *pos = ARG(const int *, 0);
	int *tok = ARG(int *, 1), last = ARG(int, 3);

	(void)g;
	(void)b;
	(void)shmem;
	if (last && OK(pos, 4) && OK(tok, 4))
		*tok = *pos * 7 + 3;
}

static const struct gleam_host_param step_phase_p[] = {
	GLEAM_HOST_PARAM(const int *), GLEAM_HOST_PARAM(int *),
	GLEAM_HOST_PARAM(long long), GLEAM_HOST_PARAM(int)
};

/* ---- the tables -------------------------------------------------------- */

#define K(name, params, fn)						\
	{ name, sizeof params / sizeof params[0], params, fn }

const struct gleam_host_kernel gleam_host_kernels[] = {
	K("_Z6vecAddPKfS0_Pfi", vec_add_p, vec_add),
	K("mk_add", mk_add_p, mk_add),
	K("mk_scale", p_u32_u32_int, mk_scale),
	K("_Z7set_u32Pjji", p_u32_u32_int, set_u32),
	K("_Z8spin_u32PVjjxPj", spin_u32_p, spin_u32),
	K("_Z4bumpPh", p_ptr, bump),
	K("_Z10gather_u32PjPKjyi", gather_u32_p, gather_u32),
	K("_Z11scatter_u32Pjyji", scatter_u32_p, scatter_u32),
	K("_Z8smem_revPj", p_ptr, smem_rev),
	K("_Z8poke_u32Pjj", p_ptr_u32, poke_u32),
	K("_Z8iota_u32Pjjji", p_u32_u32_u32_int, iota_u32),
	K("_Z8fill_u32Pjji", p_u32_u32_int, fill_u32),
	K("_Z8sum4_u32PjPKjS1_S1_S1_i", sum4_u32_p, sum4_u32),
	K("_Z10affine_u32Pjjji", p_u32_u32_u32_int, affine_u32),
	K("_Z7mix_u32Pjjji", p_u32_u32_u32_int, mix_u32),
	K("_Z10apply_coefPjPKji", apply_coef_p, apply_coef),
	K("_Z10table_stepj", table_step_p, table_step),
	K("_Z6xor_u8PhPKhhj", xor_u8_p, xor_u8),
	K("_Z8count_u8PKhhjPj", count_u8_p, count_u8),
	K("_Z12many_scalarscdsiaxfPKihtfdcijsxcfdPKvscyficdhfsxcPKfidatfPy",
	    many_scalars_p, many_scalars),
	K("_Z11two_structsc6paddeds4al16Py", two_structs_p, two_structs),
	K("_Z10big_struct3bigPj", big_struct_p, big_struct),
	K("_Z11huge_structj4hugePj", huge_struct_p, huge_struct),
	{ "_Z9no_paramsv", 0, NULL, no_params },
	K("_Z5embedPfPKiPKfS3_iiii", infer_embed_p, infer_embed),
	K("_Z8add_biasPfPKfii", infer_bias_p, infer_add_bias),
	K("_Z9bias_geluPfPKfii", infer_bias_p, infer_bias_gelu),
	K("_Z13bias_residualPfPKfS1_ii", infer_bias_residual_p,
	    infer_bias_residual),
	K("_Z9layernormPKfiPfS0_S0_ii", infer_layernorm_p, infer_layernorm),
	K("_Z7softmaxPfiif", infer_softmax_p, infer_softmax),
	K("_Z10gemm_tiledPKfixS0_ixiPfixiii", infer_gemm_p, infer_gemm),
	K("_Z7soakIncPjm", soak_inc_p, soak_inc),
	K("_Z7condSetyj", cond_set_p, cond_set),
	K("_Z9condCountyPjj", cond_count_p, cond_count),
	K("_Z7condAddPjj", p_ptr_u32, cond_add),
	K("_Z8pf_helloif", pf_hello_p, pf_hello),
	K("_Z10pf_orderedPji", pf_ordered_p, pf_ordered),
	K("_Z7pf_spewii", p_int_int, pf_spew),
	K("_Z10check_valsPKji", check_vals_p, check_vals),
	K("_Z8mig_fillPjji", p_u32_u32_int, mig_fill),
	K("_Z7mig_mixPjPKjiji", mig_mix_p, mig_mix),
	K("_Z8mig_smemPj", p_ptr, mig_smem),
	K("_Z8mig_globj", p_u32, mig_glob),
	K("_Z10step_phasePKiPixi", step_phase_p, step_phase),
	{ NULL, 0, NULL, NULL }
};

/*
 * The programs' globals, for images that do not show them (a compressed
 * fat binary); a real image's symbol table comes first.
 */
const struct gleam_host_global gleam_host_globals[] = {
	{ "c_coef", G_NCOEF * sizeof(unsigned), NULL },
	{ "c_bias", sizeof(unsigned), NULL },
	{ "g_init", sizeof g_init_value, g_init_value },
	{ "g_table", G_N * sizeof(unsigned), NULL },
	{ "g_sum", sizeof(unsigned long long), NULL },
	{ "g_noparams", sizeof(unsigned), NULL },
	{ "g_mig", 16 * sizeof(unsigned), NULL },
	{ NULL, 0, NULL }
};
