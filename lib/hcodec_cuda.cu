/*
 * hcodec_cuda: the kernels of the homomorphic codec (hcodec_cuda.h).
 *
 * Everything that decides a number is integer arithmetic or a correctly
 * rounded double operation named by its intrinsic, so that no contraction
 * or fast-math flag can make the GPU differ from hcodec.c: the cells are
 * wrapping integer sums, whose order does not matter, and the layout's
 * 2-core is unique whatever order peeling takes.
 */
#include <cuda_runtime.h>
#include <cub/device/device_scan.cuh>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

extern "C" {
#include "hcodec.h"
}
#include "hcodec_cuda.h"

#define GOLDEN		0x9e3779b97f4a7c15ULL
#define UNPEELED	0xffffffffu
#define THREADS		256

static char cuda_err[256] = "no error";

extern "C" const char *
hc_cuda_error(void)
{
	return cuda_err;
}

/* A failed CUDA call: its text kept for hc_cuda_error, HC_EINVAL out. */
#define CK(call) do {							\
	cudaError_t ck_e = (call);					\
	if (ck_e != cudaSuccess) {					\
		snprintf(cuda_err, sizeof cuda_err, "%s: %s", #call,	\
		    cudaGetErrorString(ck_e));				\
		rc = ck_e == cudaErrorMemoryAllocation ? HC_ENOMEM :	\
		    HC_EINVAL;						\
		goto out;						\
	}								\
} while (0)

struct hc_cuda_layout {
	struct hc_params p;		/* p.block is the B in use */
	size_t		 nblocks;
	uint32_t	 R, umax;
	size_t		 ncells, ucount, ncore, nwords;
	uint64_t	*ubits;		/* the union, nwords words */
	uint64_t	*wpre;		/* set bits before each word */
	uint64_t	*ucoord;	/* U, ascending */
	uint32_t	*rows;		/* nblocks * k */
	uint32_t	*label;		/* per U: round, or UNPEELED (in C) */
	uint8_t		*jsel;		/* per U: the row of its pure cell */
	uint64_t	*cpos;		/* per U: its place in C if there */
	uint64_t	*core;		/* C, ascending */
	uint32_t	*order;		/* U less C by round */
	std::vector<size_t> rstart;	/* rounds' starts in order, + end */
};

static unsigned
grid(size_t n)
{
	size_t g = (n + THREADS - 1) / THREADS;

	return (unsigned)(g < 1 ? 1 : g > 1048576 ? 1048576 : g);
}

/* Grid-stride loops: any n with a bounded grid. */
#define FOR_EACH(i, n)							\
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;	\
	    i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- numbers, exactly as hcodec.c ---------------------------------------- */

__device__ static uint64_t
d_mix(uint64_t z)
{
	z ^= z >> 30;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 27;
	z *= 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z;
}

/* hc_block_rows, line for line. */
__device__ static void
d_block_rows(uint64_t seed, uint64_t b, uint32_t R, unsigned k,
    uint32_t *out)
{
	uint64_t h = d_mix(seed ^ d_mix(b + 1)), x;
	unsigned got = 0, a, j;
	uint32_t r;

	for (a = 0; got < k && a < 64 * k; a++) {
		x = d_mix(h + (uint64_t)(a + 1) * GOLDEN);
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
}

/* hc_quantize_p: round(v * p), half to even, by integer means. */
__device__ static int
d_quantize(float v, double p, int bits, uint64_t *q)
{
	double x, f, lim;
	long long t;

	if ((__float_as_uint(v) & 0x7f800000u) == 0x7f800000u)
		return HC_ENONFINITE;
	x = __dmul_rn((double)v, p);
	lim = bits == 32 ? 2147483648.0 : 9223372036854775808.0;
	if (!(x < lim && x > -lim))
		return HC_ERANGE;
	t = __double2ll_rz(x);
	f = __dsub_rn(x, __ll2double_rn(t));
	if (f > 0.5 || (f == 0.5 && ((unsigned long long)t & 1)))
		t++;
	else if (f < -0.5 || (f == -0.5 && ((unsigned long long)t & 1)))
		t--;
	if (bits == 32 && (t > 2147483647LL || t < -2147483647LL))
		return HC_ERANGE;
	*q = (uint64_t)t;
	return 0;
}

/* hc_dequantize_p. */
__device__ static float
d_dequantize(long long q, double pinv)
{
	const long long e53 = 1LL << 53;

	if (q > -e53 && q < e53)
		return __double2float_rn(__dmul_rn(__ll2double_rn(q), pinv));
	return __double2float_rn(__dmul_rn((double)__ll2float_rn(q), pinv));
}

__device__ static long long
d_signed(uint64_t c, int bits)
{
	return bits == 32 ? (long long)(int32_t)(uint32_t)c : (long long)c;
}

/* Where coordinate i (a set bit) sits in U. */
__device__ static uint64_t
d_rank(const uint64_t *ubits, const uint64_t *wpre, uint64_t i)
{
	uint64_t w = i >> 6, m = (i & 63) ? ubits[w] << (64 - (i & 63)) : 0;

	return wpre[w] + (uint64_t)__popcll(m);
}

/* ---- index ------------------------------------------------------------- */

/* Eight values a byte; the largest |v| bit pattern by atomicMax. */
__global__ static void
k_bitmap(const float *g, size_t n, uint8_t *bits, unsigned *maxabs)
{
	unsigned m = 0;

	FOR_EACH(i, (n + 7) / 8) {
		unsigned byte = 0, w;
		size_t base = 8 * i;
		int j;

		if (base + 8 <= n && ((uintptr_t)(g + base) & 15) == 0) {
			float4 a = ((const float4 *)(g + base))[0];
			float4 b = ((const float4 *)(g + base))[1];
			float v[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };

			for (j = 0; j < 8; j++) {
				w = __float_as_uint(v[j]) & 0x7fffffffu;
				byte |= (unsigned)(w != 0) << j;
				m = w > m ? w : m;
			}
		} else
			for (j = 0; j < 8 && base + j < n; j++) {
				w = __float_as_uint(g[base + j]) & 0x7fffffffu;
				byte |= (unsigned)(w != 0) << j;
				m = w > m ? w : m;
			}
		bits[i] = (uint8_t)byte;
	}
	m = __reduce_max_sync(0xffffffffu, m);
	if ((threadIdx.x & 31) == 0 && m != 0)
		atomicMax(maxabs, m);
}

extern "C" int
hc_cuda_bitmap(const float *g, size_t n, uint8_t *bits, int *emax,
    void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	unsigned *dmax = NULL, m = 0;
	int rc = 0;

	if (emax == NULL || ((g == NULL || bits == NULL) && n > 0))
		return HC_EINVAL;
	CK(cudaMallocAsync((void **)&dmax, sizeof *dmax, st));
	CK(cudaMemsetAsync(dmax, 0, sizeof *dmax, st));
	if (n > 0) {
		k_bitmap<<<grid((n + 7) / 8), THREADS, 0, st>>>(g, n, bits,
		    dmax);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpyAsync(&m, dmax, sizeof m, cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	if (m >= 0x7f800000u) {
		*emax = HC_EXP_NONFINITE;
		rc = HC_ENONFINITE;
	} else
		*emax = m == 0 ? HC_EXP_ZERO : (int)(m >> 23) - 127;
out:
	if (dmax != NULL)
		cudaFreeAsync(dmax, st);
	return rc;
}

/* ---- layout ------------------------------------------------------------ */

__global__ static void
k_popc(const uint64_t *ubits, size_t nwords, uint64_t *cnt)
{
	FOR_EACH(w, nwords)
		cnt[w] = (uint64_t)__popcll(ubits[w]);
}

/* U in ascending order, and how many coordinates each lane holds. */
__global__ static void
k_enumerate(const uint64_t *ubits, const uint64_t *wpre, size_t nwords,
    unsigned B, uint64_t *ucoord, unsigned *lane)
{
	FOR_EACH(w, nwords) {
		uint64_t x = ubits[w], pos = wpre[w], i;

		while (x != 0) {
			i = 64 * (uint64_t)w + (uint64_t)(__ffsll((long long)x) - 1);
			x &= x - 1;
			ucoord[pos++] = i;
			atomicAdd(&lane[i % B], 1u);
		}
	}
}

__global__ static void
k_lane_max(const unsigned *lane, unsigned B, unsigned *umax)
{
	FOR_EACH(t, B)
		atomicMax(umax, lane[t]);
}

__global__ static void
k_rows(uint64_t seed, size_t nblocks, uint32_t R, unsigned k, uint32_t *rows)
{
	FOR_EACH(b, nblocks)
		d_block_rows(seed, b, R, k, rows + b * k);
}

/* Counts and block-id XORs of every cell, from U alone. */
__global__ static void
k_structure(const uint64_t *ucoord, size_t ucount, unsigned B, unsigned k,
    const uint32_t *rows, unsigned *count, unsigned *idx)
{
	FOR_EACH(u, ucount) {
		uint64_t i = ucoord[u], b = i / B, t = i % B;

		for (unsigned j = 0; j < k; j++) {
			size_t c = (size_t)rows[b * k + j] * B + t;

			atomicAdd(&count[c], 1u);
			atomicXor(&idx[c], (unsigned)b);
		}
	}
}

__global__ static void
k_pure(const unsigned *count, size_t ncells, unsigned *front, unsigned *nf)
{
	FOR_EACH(c, ncells)
		if (count[c] == 1)
			front[atomicAdd(nf, 1u)] = (unsigned)c;
}

/*
 * Phase one of a round: each pure cell names its coordinate, which takes
 * this round as its label (the first cell to name it wins) and joins the
 * order.  Counts do not change in this phase.
 */
__global__ static void
k_peel_find(const unsigned *front, unsigned nf, const unsigned *count,
    const unsigned *idx, const uint64_t *ubits, const uint64_t *wpre,
    const uint32_t *rows, unsigned B, unsigned k, size_t nblocks,
    uint32_t round, uint32_t *label, uint8_t *jsel, uint32_t *order,
    unsigned *norder, unsigned *bad)
{
	FOR_EACH(f, nf) {
		unsigned c = front[f], j;
		uint64_t b, t, i, pos;

		if (count[c] != 1)
			continue;
		b = idx[c];
		t = c % B;
		i = b * B + t;
		/* The structure is local; the check costs nothing. */
		if (b >= nblocks || !((ubits[i >> 6] >> (i & 63)) & 1)) {
			atomicOr(bad, 1u);
			continue;
		}
		pos = d_rank(ubits, wpre, i);
		if (atomicCAS(&label[pos], UNPEELED, round) != UNPEELED)
			continue;
		for (j = 0; j < k && rows[b * k + j] != c / B; j++)
			;
		jsel[pos] = (uint8_t)j;
		order[atomicAdd(norder, 1u)] = (uint32_t)pos;
	}
}

/* Phase two: the round's coordinates leave their k cells. */
__global__ static void
k_peel_apply(const uint32_t *order, unsigned from, unsigned to,
    const uint64_t *ucoord, const uint32_t *rows, unsigned B, unsigned k,
    unsigned *count, unsigned *idx, unsigned *front, unsigned *nf)
{
	FOR_EACH(e, (size_t)(to - from)) {
		uint64_t i = ucoord[order[from + e]], b = i / B, t = i % B;

		for (unsigned j = 0; j < k; j++) {
			size_t c = (size_t)rows[b * k + j] * B + t;

			atomicXor(&idx[c], (unsigned)b);
			if (atomicSub(&count[c], 1u) == 2)
				front[atomicAdd(nf, 1u)] = (unsigned)c;
		}
	}
}

__global__ static void
k_core_flag(const uint32_t *label, size_t ucount, uint64_t *flag)
{
	FOR_EACH(u, ucount)
		flag[u] = label[u] == UNPEELED;
}

__global__ static void
k_core_place(const uint32_t *label, const uint64_t *cpos,
    const uint64_t *ucoord, size_t ucount, uint64_t *core)
{
	FOR_EACH(u, ucount)
		if (label[u] == UNPEELED)
			core[cpos[u]] = ucoord[u];
}

/* Exclusive prefix sums of n u64 into out, total in *sum (host). */
static int
scan_u64(const uint64_t *in, uint64_t *out, size_t n, uint64_t *sum,
    cudaStream_t st)
{
	void *tmp = NULL;
	size_t tlen = 0;
	uint64_t last[2] = { 0, 0 };
	int rc = 0;

	*sum = 0;
	if (n == 0)
		return 0;
	CK(cub::DeviceScan::ExclusiveSum(NULL, tlen, in, out, (int64_t)n, st));
	CK(cudaMallocAsync(&tmp, tlen + 1, st));
	CK(cub::DeviceScan::ExclusiveSum(tmp, tlen, in, out, (int64_t)n, st));
	CK(cudaMemcpyAsync(&last[0], out + n - 1, 8, cudaMemcpyDeviceToHost,
	    st));
	CK(cudaMemcpyAsync(&last[1], in + n - 1, 8, cudaMemcpyDeviceToHost,
	    st));
	CK(cudaStreamSynchronize(st));
	*sum = last[0] + last[1];
out:
	if (tmp != NULL)
		cudaFreeAsync(tmp, st);
	return rc;
}

extern "C" void
hc_cuda_layout_free(struct hc_cuda_layout *L)
{
	if (L == NULL)
		return;
	cudaFree(L->ubits);
	cudaFree(L->wpre);
	cudaFree(L->ucoord);
	cudaFree(L->rows);
	cudaFree(L->label);
	cudaFree(L->jsel);
	cudaFree(L->cpos);
	cudaFree(L->core);
	cudaFree(L->order);
	delete L;
}

extern "C" int
hc_cuda_layout_new(const struct hc_params *p, const uint8_t *union_bits,
    struct hc_cuda_layout **out, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	struct hc_cuda_layout *L = NULL;
	unsigned *lane = NULL, *dumax = NULL, *count = NULL, *idx = NULL;
	unsigned *front[2] = { NULL, NULL }, *ctr = NULL, hctr[4];
	uint64_t *cnt = NULL, *flag = NULL, total, R;
	size_t B, nbytes;
	uint8_t last = 0;
	unsigned nf, from, to, cur = 0;
	uint32_t round;
	int rc = 0;

	if (out == NULL || p == NULL)
		return HC_EINVAL;
	*out = NULL;
	if (p->n > HC_MAX_N || p->block < 1 || p->block > HC_MAX_BLOCK ||
	    p->k < 2 || p->k > HC_MAX_K ||
	    (p->cell_bits != 32 && p->cell_bits != 64))
		return HC_EINVAL;
	B = p->n > 0 && p->n < p->block ? p->n : p->block;
	if ((p->n + B - 1) / B > HC_MAX_BLOCKS)
		return HC_EINVAL;
	nbytes = hc_bitmap_bytes(p->n);
	if (nbytes > 0 && union_bits == NULL)
		return HC_EINVAL;
	L = new struct hc_cuda_layout();
	L->p = *p;
	L->p.block = (unsigned)B;
	L->nblocks = (p->n + B - 1) / B;
	L->nwords = (nbytes + 7) / 8;
	L->rstart.push_back(0);
	if (nbytes > 0) {
		CK(cudaMemcpyAsync(&last, union_bits + nbytes - 1, 1,
		    cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		if (p->n % 8 != 0 && (last >> (p->n % 8)) != 0) {
			rc = HC_EFORMAT;
			goto out;
		}
	}
	CK(cudaMalloc((void **)&L->ubits, L->nwords * 8 + 8));
	CK(cudaMemsetAsync(L->ubits, 0, L->nwords * 8 + 8, st));
	if (nbytes > 0)
		CK(cudaMemcpyAsync(L->ubits, union_bits, nbytes,
		    cudaMemcpyDeviceToDevice, st));
	CK(cudaMalloc((void **)&L->wpre, L->nwords * 8 + 8));
	CK(cudaMallocAsync((void **)&cnt, L->nwords * 8 + 8, st));
	if (L->nwords > 0) {
		k_popc<<<grid(L->nwords), THREADS, 0, st>>>(L->ubits,
		    L->nwords, cnt);
		CK(cudaGetLastError());
	}
	if ((rc = scan_u64(cnt, L->wpre, L->nwords, &total, st)) != 0)
		goto out;
	L->ucount = (size_t)total;
	if (L->ucount >= UNPEELED) {
		snprintf(cuda_err, sizeof cuda_err, "union of %zu coordinates "
		    "over the GPU layout's 2^32 - 1", L->ucount);
		rc = HC_EINVAL;
		goto out;
	}

	/* U, lane counts, R. */
	CK(cudaMalloc((void **)&L->ucoord, L->ucount * 8 + 8));
	CK(cudaMallocAsync((void **)&lane, B * sizeof *lane, st));
	CK(cudaMallocAsync((void **)&dumax, sizeof *dumax, st));
	CK(cudaMemsetAsync(lane, 0, B * sizeof *lane, st));
	CK(cudaMemsetAsync(dumax, 0, sizeof *dumax, st));
	if (L->nwords > 0) {
		k_enumerate<<<grid(L->nwords), THREADS, 0, st>>>(L->ubits,
		    L->wpre, L->nwords, (unsigned)B, L->ucoord, lane);
		CK(cudaGetLastError());
	}
	k_lane_max<<<grid(B), THREADS, 0, st>>>(lane, (unsigned)B, dumax);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(&L->umax, dumax, 4, cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	if (L->umax > 0) {
		R = ((uint64_t)L->umax * 5 + 3) / 4 + 2;
		if (R < p->k)
			R = p->k;
		L->R = (uint32_t)R;
		L->ncells = (size_t)R * B;
		if (L->ncells >= UNPEELED) {
			snprintf(cuda_err, sizeof cuda_err, "%zu cells over the "
			    "GPU layout's 2^32 - 1", L->ncells);
			rc = HC_EINVAL;
			goto out;
		}
		CK(cudaMalloc((void **)&L->rows, L->nblocks * p->k * 4));
		k_rows<<<grid(L->nblocks), THREADS, 0, st>>>(p->seed,
		    L->nblocks, L->R, p->k, L->rows);
		CK(cudaGetLastError());
	}

	/* The structure, then the pre-peel in rounds. */
	CK(cudaMalloc((void **)&L->label, L->ucount * 4 + 4));
	CK(cudaMalloc((void **)&L->jsel, L->ucount + 1));
	CK(cudaMalloc((void **)&L->order, L->ucount * 4 + 4));
	CK(cudaMemsetAsync(L->label, 0xff, L->ucount * 4 + 4, st));
	if (L->ucount > 0) {
		CK(cudaMallocAsync((void **)&count, L->ncells * 4, st));
		CK(cudaMallocAsync((void **)&idx, L->ncells * 4, st));
		CK(cudaMallocAsync((void **)&front[0], L->ncells * 4 +
		    (size_t)p->k * L->ucount * 4, st));
		CK(cudaMallocAsync((void **)&front[1], L->ncells * 4 +
		    (size_t)p->k * L->ucount * 4, st));
		CK(cudaMallocAsync((void **)&ctr, 4 * sizeof *ctr, st));
		CK(cudaMemsetAsync(count, 0, L->ncells * 4, st));
		CK(cudaMemsetAsync(idx, 0, L->ncells * 4, st));
		/* ctr: [0] front[cur] length, [1] order length, [2] bad,
		   [3] the next front's length */
		CK(cudaMemsetAsync(ctr, 0, 4 * sizeof *ctr, st));
		k_structure<<<grid(L->ucount), THREADS, 0, st>>>(L->ucoord,
		    L->ucount, (unsigned)B, p->k, L->rows, count, idx);
		CK(cudaGetLastError());
		k_pure<<<grid(L->ncells), THREADS, 0, st>>>(count, L->ncells,
		    front[0], &ctr[0]);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(hctr, ctr, sizeof hctr,
		    cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		nf = hctr[0];
		for (round = 0; nf > 0; round++) {
			from = hctr[1];
			k_peel_find<<<grid(nf), THREADS, 0, st>>>(front[cur], nf,
			    count, idx, L->ubits, L->wpre, L->rows, (unsigned)B,
			    p->k, L->nblocks, round, L->label, L->jsel,
			    L->order, &ctr[1], &ctr[2]);
			CK(cudaGetLastError());
			CK(cudaMemcpyAsync(hctr, ctr, sizeof hctr,
			    cudaMemcpyDeviceToHost, st));
			CK(cudaStreamSynchronize(st));
			to = hctr[1];
			if (hctr[2] != 0) {
				snprintf(cuda_err, sizeof cuda_err, "layout: a "
				    "pure cell names no union coordinate");
				rc = HC_ECORRUPT;
				goto out;
			}
			if (to == from)
				break;
			L->rstart.push_back(to);
			CK(cudaMemsetAsync(&ctr[3], 0, 4, st));
			k_peel_apply<<<grid(to - from), THREADS, 0, st>>>(
			    L->order, from, to, L->ucoord, L->rows, (unsigned)B,
			    p->k, count, idx, front[cur ^ 1], &ctr[3]);
			CK(cudaGetLastError());
			CK(cudaMemcpyAsync(hctr, ctr, sizeof hctr,
			    cudaMemcpyDeviceToHost, st));
			CK(cudaStreamSynchronize(st));
			nf = hctr[3];
			cur ^= 1;
		}
	}

	/* C: what no round reached, in ascending order. */
	CK(cudaMalloc((void **)&L->cpos, L->ucount * 8 + 8));
	CK(cudaMallocAsync((void **)&flag, L->ucount * 8 + 8, st));
	if (L->ucount > 0) {
		k_core_flag<<<grid(L->ucount), THREADS, 0, st>>>(L->label,
		    L->ucount, flag);
		CK(cudaGetLastError());
	}
	if ((rc = scan_u64(flag, L->cpos, L->ucount, &total, st)) != 0)
		goto out;
	L->ncore = (size_t)total;
	CK(cudaMalloc((void **)&L->core, L->ncore * 8 + 8));
	if (L->ncore > 0) {
		k_core_place<<<grid(L->ucount), THREADS, 0, st>>>(L->label,
		    L->cpos, L->ucoord, L->ucount, L->core);
		CK(cudaGetLastError());
	}
	CK(cudaStreamSynchronize(st));
	*out = L;
	L = NULL;
out:
	if (lane != NULL)
		cudaFreeAsync(lane, st);
	if (dumax != NULL)
		cudaFreeAsync(dumax, st);
	if (cnt != NULL)
		cudaFreeAsync(cnt, st);
	if (count != NULL)
		cudaFreeAsync(count, st);
	if (idx != NULL)
		cudaFreeAsync(idx, st);
	if (front[0] != NULL)
		cudaFreeAsync(front[0], st);
	if (front[1] != NULL)
		cudaFreeAsync(front[1], st);
	if (ctr != NULL)
		cudaFreeAsync(ctr, st);
	if (flag != NULL)
		cudaFreeAsync(flag, st);
	cudaStreamSynchronize(st);
	hc_cuda_layout_free(L);
	return rc;
}

extern "C" void
hc_cuda_layout_info(const struct hc_cuda_layout *L,
    struct hc_cuda_layout_info *info)
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
	info->nrounds = L->rstart.size() - 1;
}

extern "C" size_t
hc_cuda_layout_payload(const struct hc_cuda_layout *L)
{
	return L->ncells + L->ncore;
}

extern "C" int
hc_cuda_layout_core(const struct hc_cuda_layout *L, uint64_t *core)
{
	int rc = 0;

	if (L->ncore > 0)
		CK(cudaMemcpy(core, L->core, L->ncore * 8,
		    cudaMemcpyDeviceToHost));
out:
	return rc;
}

extern "C" int
hc_cuda_layout_rows(const struct hc_cuda_layout *L, uint32_t *rows)
{
	int rc = 0;

	if (L->rows != NULL)
		CK(cudaMemcpy(rows, L->rows, L->nblocks * L->p.k * 4,
		    cudaMemcpyDeviceToHost));
out:
	return rc;
}

/* ---- encode ------------------------------------------------------------ */

/*
 * The first offending coordinate wins, as in hcodec_fast.c's walk: the
 * error is kept as i << 3 | code, and atomicMin keeps the smallest i.
 */
__device__ static void
d_fail(unsigned long long *err, uint64_t i, int code)
{
	atomicMin(err, (unsigned long long)(i << 3 | (uint64_t)(-code)));
}

template <typename cell>
__global__ static void
k_encode(const float *g, size_t n, double p, const uint64_t *ubits,
    const uint64_t *wpre, const uint32_t *label, const uint64_t *cpos,
    const uint32_t *rows, unsigned B, unsigned k, size_t ncells, int bits,
    cell *payload, unsigned long long *err)
{
	FOR_EACH(i, n) {
		float v = g[i];
		unsigned w = __float_as_uint(v) & 0x7fffffffu;
		uint64_t q, pos, b, t;
		int rc;

		if (w == 0)
			continue;
		if (w >= 0x7f800000u) {
			d_fail(err, i, HC_ENONFINITE);
			continue;
		}
		if (!((ubits[i >> 6] >> (i & 63)) & 1)) {
			d_fail(err, i, HC_ESUPPORT);
			continue;
		}
		if ((rc = d_quantize(v, p, bits, &q)) != 0) {
			d_fail(err, i, rc);
			continue;
		}
		pos = d_rank(ubits, wpre, i);
		if (label[pos] == UNPEELED) {
			payload[ncells + cpos[pos]] = (cell)q;
			continue;
		}
		b = i / B;
		t = i % B;
		for (unsigned j = 0; j < k; j++)
			atomicAdd(&payload[(size_t)rows[b * k + j] * B + t],
			    (cell)q);
	}
}

extern "C" int
hc_cuda_encode(const struct hc_cuda_layout *L, const float *g, int s,
    void *payload, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	unsigned long long *derr = NULL, herr = ~0ULL;
	size_t cb;
	double p;
	int rc = 0;

	if (L == NULL || s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (L->p.n > 0 && g == NULL) ||
	    (hc_cuda_layout_payload(L) > 0 && payload == NULL))
		return HC_EINVAL;
	cb = (size_t)L->p.cell_bits / 8;
	p = ldexp(1.0, s);
	CK(cudaMallocAsync((void **)&derr, sizeof *derr, st));
	CK(cudaMemsetAsync(derr, 0xff, sizeof *derr, st));
	if (hc_cuda_layout_payload(L) > 0)
		CK(cudaMemsetAsync(payload, 0, hc_cuda_layout_payload(L) * cb,
		    st));
	if (L->p.n > 0) {
		if (L->p.cell_bits == 32)
			k_encode<unsigned><<<grid(L->p.n), THREADS, 0, st>>>(g,
			    L->p.n, p, L->ubits, L->wpre, L->label, L->cpos,
			    L->rows, L->p.block, L->p.k, L->ncells, 32,
			    (unsigned *)payload, derr);
		else
			k_encode<unsigned long long><<<grid(L->p.n), THREADS, 0,
			    st>>>(g, L->p.n, p, L->ubits, L->wpre, L->label,
			    L->cpos, L->rows, L->p.block, L->p.k, L->ncells, 64,
			    (unsigned long long *)payload, derr);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpyAsync(&herr, derr, sizeof herr, cudaMemcpyDeviceToHost,
	    st));
	CK(cudaStreamSynchronize(st));
	if (herr != ~0ULL)
		rc = -(int)(herr & 7);
out:
	if (derr != NULL)
		cudaFreeAsync(derr, st);
	return rc;
}

/* ---- decode ------------------------------------------------------------ */

template <typename cell>
__global__ static void
k_decode_round(const uint32_t *order, unsigned from, unsigned to,
    const uint64_t *ucoord, const uint8_t *jsel, const uint32_t *rows,
    unsigned B, unsigned k, int bits, cell *sum, float *out, cell *fixed,
    double pinv)
{
	FOR_EACH(e, (size_t)(to - from)) {
		uint32_t pos = order[from + e];
		uint64_t i = ucoord[pos], b = i / B, t = i % B;
		cell v = sum[(size_t)rows[b * k + jsel[pos]] * B + t];

		for (unsigned j = 0; j < k; j++)
			atomicAdd(&sum[(size_t)rows[b * k + j] * B + t],
			    (cell)(0 - v));
		if (fixed != NULL)
			fixed[i] = v;
		else
			out[i] = d_dequantize(d_signed((uint64_t)v, bits), pinv);
	}
}

template <typename cell>
__global__ static void
k_decode_core(const uint64_t *core, size_t ncore, size_t ncells, int bits,
    const cell *sum, float *out, cell *fixed, double pinv)
{
	FOR_EACH(c, ncore) {
		cell v = sum[ncells + c];

		if (fixed != NULL)
			fixed[core[c]] = v;
		else
			out[core[c]] = d_dequantize(d_signed((uint64_t)v, bits),
			    pinv);
	}
}

template <typename cell>
__global__ static void
k_leftover(const cell *sum, size_t ncells, unsigned *left)
{
	cell any = 0;

	FOR_EACH(c, ncells)
		any |= sum[c];
	if (any != 0)
		atomicOr(left, 1u);
}

template <typename cell>
static int
decode(const struct hc_cuda_layout *L, cell *sum, int s, float *out,
    cell *fixed, cudaStream_t st)
{
	unsigned *dleft = NULL, left = 0;
	double pinv = ldexp(1.0, -s);
	size_t r;
	int rc = 0;

	if (fixed != NULL)
		CK(cudaMemsetAsync(fixed, 0, L->p.n * sizeof(cell), st));
	else if (L->p.n > 0)
		CK(cudaMemsetAsync(out, 0, L->p.n * sizeof *out, st));
	CK(cudaMallocAsync((void **)&dleft, sizeof *dleft, st));
	CK(cudaMemsetAsync(dleft, 0, sizeof *dleft, st));
	for (r = 0; r + 1 < L->rstart.size(); r++) {
		unsigned from = (unsigned)L->rstart[r];
		unsigned to = (unsigned)L->rstart[r + 1];

		k_decode_round<cell><<<grid(to - from), THREADS, 0, st>>>(
		    L->order, from, to, L->ucoord, L->jsel, L->rows,
		    L->p.block, L->p.k, L->p.cell_bits, sum, out, fixed, pinv);
		CK(cudaGetLastError());
	}
	if (L->ncore > 0) {
		k_decode_core<cell><<<grid(L->ncore), THREADS, 0, st>>>(L->core,
		    L->ncore, L->ncells, L->p.cell_bits, sum, out, fixed, pinv);
		CK(cudaGetLastError());
	}
	if (L->ncells > 0) {
		k_leftover<cell><<<grid(L->ncells), THREADS, 0, st>>>(sum,
		    L->ncells, dleft);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpyAsync(&left, dleft, sizeof left, cudaMemcpyDeviceToHost,
	    st));
	CK(cudaStreamSynchronize(st));
	rc = left != 0 ? HC_ECORRUPT : 0;
out:
	if (dleft != NULL)
		cudaFreeAsync(dleft, st);
	return rc;
}

extern "C" int
hc_cuda_decode(const struct hc_cuda_layout *L, void *sum, int s, float *out,
    void *stream)
{
	if (L == NULL || s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (hc_cuda_layout_payload(L) > 0 && sum == NULL) ||
	    (L->p.n > 0 && out == NULL))
		return HC_EINVAL;
	if (L->p.cell_bits == 32)
		return decode<unsigned>(L, (unsigned *)sum, s, out, NULL,
		    (cudaStream_t)stream);
	return decode<unsigned long long>(L, (unsigned long long *)sum, s, out,
	    NULL, (cudaStream_t)stream);
}

extern "C" int
hc_cuda_decode_fixed(const struct hc_cuda_layout *L, void *sum, void *fixed,
    void *stream)
{
	if (L == NULL || (hc_cuda_layout_payload(L) > 0 && sum == NULL) ||
	    (L->p.n > 0 && fixed == NULL))
		return HC_EINVAL;
	if (L->p.cell_bits == 32)
		return decode<unsigned>(L, (unsigned *)sum, 0, NULL,
		    (unsigned *)fixed, (cudaStream_t)stream);
	return decode<unsigned long long>(L, (unsigned long long *)sum, 0, NULL,
	    (unsigned long long *)fixed, (cudaStream_t)stream);
}

template <typename cell>
__global__ static void
k_merge_sum(cell *acc, const cell *in, size_t n)
{
	FOR_EACH(i, n)
		acc[i] += in[i];
}

extern "C" int
hc_cuda_merge_sum(void *acc, const void *in, size_t ncells, int cell_bits,
    void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	int rc = 0;

	if ((cell_bits != 32 && cell_bits != 64) ||
	    (ncells > 0 && (acc == NULL || in == NULL)))
		return HC_EINVAL;
	if (ncells == 0)
		return 0;
	if (cell_bits == 32)
		k_merge_sum<unsigned><<<grid(ncells), THREADS, 0, st>>>(
		    (unsigned *)acc, (const unsigned *)in, ncells);
	else
		k_merge_sum<unsigned long long><<<grid(ncells), THREADS, 0,
		    st>>>((unsigned long long *)acc,
		    (const unsigned long long *)in, ncells);
	CK(cudaGetLastError());
out:
	return rc;
}
