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
#include <cooperative_groups.h>
#include <cub/device/device_scan.cuh>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <vector>

extern "C" {
#include "hcodec.h"
}
#include "hcodec_cuda.h"

#define GOLDEN		0x9e3779b97f4a7c15ULL
#define UNPEELED	0xffffffffu
#define NOTCORE		0xffffffffu	/* cidx of a coordinate outside C */
#define POOL_MAX	4		/* sets of each kind kept for reuse */
#define SH_LANES	8192		/* lane counts in shared memory */
#define THREADS		256
#define LTHREADS	1024		/* a lane's block */
#define MRUN		8		/* mask words a thread writes at once: two uint4 */

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

/*
 * Device buffers kept across calls: a layout's own (struct lbufs) and the
 * scratch of a call (struct scratch), each taken from a pool and given
 * back when the layout is freed or the call returns, so that steady use
 * neither allocates nor frees.  A buffer only grows, where no queued work
 * can still use it (before its first use in a call, or after a
 * synchronization).
 */
struct dbuf {
	void		*p;
	size_t		 cap;
};

struct lbufs {
	int		 dev;
	struct dbuf	 ubits, wpre, ucoord, rows, cidx, order, core;
	struct dbuf	 loff, rs, lnr;
};

/* Counters on the device, and their copies on the host (pinned). */
struct dctl {
	unsigned long long err;		/* encode: first error, i << 3 | code */
	unsigned	 maxabs;	/* index */
	unsigned	 umax, fmt, bad, rounds;	/* layout */
	unsigned	 left;		/* decode */
};

struct hctl {
	unsigned long long err, total;
	unsigned	 maxabs, umax, fmt, bad, rounds, ncore, left;
};

struct scratch {
	int		 dev, nsm, smax;	/* smax: shared bytes a block */
	struct dbuf	 cells, front, flag, cpos, cnt, lane, masks, tmp;
	struct dctl	*ctl;
	struct hctl	*h;
};

struct hc_cuda_layout {
	struct hc_params p;		/* p.block is the B in use */
	size_t		 nblocks;
	uint32_t	 R, umax;
	size_t		 ncells, ucount, ncore, nwords;
	struct lbufs	*b;
	uint64_t	*ubits;		/* the union, nwords words + 1 zero */
	uint64_t	*wpre;		/* set bits before each word, + total */
	uint64_t	*ucoord;	/* U by rank: set for C only */
	uint32_t	*rows;		/* nblocks * k, NULL when R == 0 */
	uint32_t	*cidx;		/* per U: its place in C, or NOTCORE */
	uint64_t	*order;		/* lane by lane, U less C by round */
	unsigned	*loff;		/* where each lane starts in U, + |U| */
	unsigned	*rs;		/* lane t's rounds at loff[t] + t */
	unsigned	*lnr;		/* rounds in each lane */
	uint64_t	*core;		/* C, ascending */
	size_t		 nrounds;	/* the most any lane took */
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

/* A grid of at most cap blocks for n items, for grid-stride loops. */
static unsigned
grid_max(size_t n, unsigned cap)
{
	unsigned g = grid(n);

	return g < cap ? g : cap < 1 ? 1 : cap;
}

/* ---- buffers kept across calls ------------------------------------------ */

static std::mutex pool_mu;
static std::vector<struct lbufs *> pool_l;
static std::vector<struct scratch *> pool_s;

/* At least bytes (at least 8) in b; what it held is lost if it grows. */
static cudaError_t
dbuf_need(struct dbuf *b, size_t bytes)
{
	size_t want;
	cudaError_t e;

	if (bytes < 8)
		bytes = 8;
	if (b->cap >= bytes)
		return cudaSuccess;
	if (b->p != NULL)
		cudaFree(b->p);
	b->p = NULL;
	b->cap = 0;
	/* Room for a union that grows a little from call to call. */
	want = bytes + bytes / 8;
	want = (want + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
	if ((e = cudaMalloc(&b->p, want)) != cudaSuccess) {
		(void)cudaGetLastError();
		want = bytes;
		if ((e = cudaMalloc(&b->p, want)) != cudaSuccess) {
			b->p = NULL;
			return e;
		}
	}
	b->cap = want;
	return cudaSuccess;
}

static void
dbuf_free(struct dbuf *b)
{
	if (b->p != NULL)
		cudaFree(b->p);
	b->p = NULL;
	b->cap = 0;
}

static void
lbufs_destroy(struct lbufs *b)
{
	int dev = -1;

	if (b == NULL)
		return;
	if (cudaGetDevice(&dev) == cudaSuccess && dev != b->dev)
		cudaSetDevice(b->dev);
	dbuf_free(&b->ubits);
	dbuf_free(&b->wpre);
	dbuf_free(&b->ucoord);
	dbuf_free(&b->rows);
	dbuf_free(&b->cidx);
	dbuf_free(&b->order);
	dbuf_free(&b->core);
	dbuf_free(&b->loff);
	dbuf_free(&b->rs);
	dbuf_free(&b->lnr);
	if (dev >= 0 && dev != b->dev)
		cudaSetDevice(dev);
	delete b;
}

static void
scratch_destroy(struct scratch *s)
{
	int dev = -1;

	if (s == NULL)
		return;
	if (cudaGetDevice(&dev) == cudaSuccess && dev != s->dev)
		cudaSetDevice(s->dev);
	dbuf_free(&s->cells);
	dbuf_free(&s->front);
	dbuf_free(&s->flag);
	dbuf_free(&s->cpos);
	dbuf_free(&s->cnt);
	dbuf_free(&s->lane);
	dbuf_free(&s->masks);
	dbuf_free(&s->tmp);
	if (s->ctl != NULL)
		cudaFree(s->ctl);
	if (s->h != NULL)
		cudaFreeHost(s->h);
	if (dev >= 0 && dev != s->dev)
		cudaSetDevice(dev);
	delete s;
}

/* A layout's buffers for the current device, from the pool or new. */
static struct lbufs *
lbufs_take(void)
{
	struct lbufs *b = NULL;
	int dev = 0;
	size_t i;

	if (cudaGetDevice(&dev) != cudaSuccess)
		return NULL;
	{
		std::lock_guard<std::mutex> g(pool_mu);

		for (i = 0; i < pool_l.size(); i++)
			if (pool_l[i]->dev == dev) {
				b = pool_l[i];
				pool_l.erase(pool_l.begin() + (long)i);
				return b;
			}
	}
	b = new struct lbufs();
	b->dev = dev;
	return b;
}

/* Back to the pool: no queued work may still use b. */
static void
lbufs_put(struct lbufs *b)
{
	if (b == NULL)
		return;
	{
		std::lock_guard<std::mutex> g(pool_mu);

		if (pool_l.size() < POOL_MAX) {
			pool_l.push_back(b);
			return;
		}
	}
	lbufs_destroy(b);
}

/* A call's scratch for the current device, from the pool or new. */
static struct scratch *
scratch_take(void)
{
	struct scratch *s = NULL;
	int dev = 0, nsm = 0, smax = 0;
	size_t i;

	if (cudaGetDevice(&dev) != cudaSuccess)
		return NULL;
	{
		std::lock_guard<std::mutex> g(pool_mu);

		for (i = 0; i < pool_s.size(); i++)
			if (pool_s[i]->dev == dev) {
				s = pool_s[i];
				pool_s.erase(pool_s.begin() + (long)i);
				return s;
			}
	}
	s = new struct scratch();
	s->dev = dev;
	if (cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount,
	    dev) != cudaSuccess || nsm < 1)
		nsm = 1;
	s->nsm = nsm;
	if (cudaDeviceGetAttribute(&smax,
	    cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
	    smax < 0)
		smax = 0;
	s->smax = smax;
	if (cudaMalloc((void **)&s->ctl, sizeof *s->ctl) != cudaSuccess ||
	    cudaMallocHost((void **)&s->h, sizeof *s->h) != cudaSuccess) {
		(void)cudaGetLastError();
		snprintf(cuda_err, sizeof cuda_err, "scratch: out of memory");
		scratch_destroy(s);
		return NULL;
	}
	return s;
}

/* Back to the pool once its stream is synchronized. */
static void
scratch_put(struct scratch *s)
{
	if (s == NULL)
		return;
	{
		std::lock_guard<std::mutex> g(pool_mu);

		if (pool_s.size() < POOL_MAX) {
			pool_s.push_back(s);
			return;
		}
	}
	scratch_destroy(s);
}

extern "C" void
hc_cuda_trim(void)
{
	std::vector<struct lbufs *> l;
	std::vector<struct scratch *> s;
	size_t i;

	{
		std::lock_guard<std::mutex> g(pool_mu);

		l.swap(pool_l);
		s.swap(pool_s);
	}
	for (i = 0; i < l.size(); i++)
		lbufs_destroy(l[i]);
	for (i = 0; i < s.size(); i++)
		scratch_destroy(s[i]);
}

/*
 * GLEAM_HC_CUDA_PROFILE=1: the layout and decode print to stderr how long
 * each of their steps took on the GPU (CUDA events), and the lane
 * kernels the clock cycles of their phases, summed over the lanes.
 */
struct ptimer {
	cudaStream_t	 st;
	int		 n;
	cudaEvent_t	 ev[16];
	const char	*name[16];
	unsigned long long *clk, hclk[4];	/* device counters, 4 */
};

static struct ptimer *
pt_start(cudaStream_t st)
{
	static int on = -1;
	struct ptimer *p;

	if (on < 0) {
		const char *e = getenv("GLEAM_HC_CUDA_PROFILE");

		on = e != NULL && strcmp(e, "1") == 0;
	}
	if (!on)
		return NULL;
	p = new struct ptimer();
	p->st = st;
	if (cudaMalloc((void **)&p->clk, sizeof p->hclk) != cudaSuccess ||
	    cudaMemsetAsync(p->clk, 0, sizeof p->hclk, st) != cudaSuccess) {
		(void)cudaGetLastError();
		delete p;
		return NULL;
	}
	return p;
}

static void
pt_mark(struct ptimer *p, const char *name)
{
	if (p == NULL || p->n == 16 || cudaEventCreate(&p->ev[p->n]) !=
	    cudaSuccess)
		return;
	cudaEventRecord(p->ev[p->n], p->st);
	p->name[p->n++] = name;
}

static void
pt_end(struct ptimer *p, const char *what, const char *clkname)
{
	float ms;
	int i;

	if (p == NULL)
		return;
	cudaStreamSynchronize(p->st);
	fprintf(stderr, "hc_cuda %s:", what);
	for (i = 1; i < p->n; i++) {
		cudaEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]);
		fprintf(stderr, " %s %.3f ms", p->name[i], ms);
	}
	if (cudaMemcpy(p->hclk, p->clk, sizeof p->hclk,
	    cudaMemcpyDeviceToHost) == cudaSuccess)
		fprintf(stderr, "; %s cycles %llu %llu %llu over %llu lanes",
		    clkname, p->hclk[0], p->hclk[1], p->hclk[2], p->hclk[3]);
	fputc('\n', stderr);
	for (i = 0; i < p->n; i++)
		cudaEventDestroy(p->ev[i]);
	cudaFree(p->clk);
	delete p;
}

/*
 * A slot in a list that many threads append to: one atomic per group of
 * threads that arrive together (warp-aggregated), not one per thread.
 */
__device__ static unsigned
d_append(unsigned *len)
{
	cooperative_groups::coalesced_group g =
	    cooperative_groups::coalesced_threads();
	unsigned base = 0;

	if (g.thread_rank() == 0)
		base = atomicAdd(len, g.size());
	return g.shfl(base, 0) + g.thread_rank();
}

/* GLEAM_HC_CUDA_PROFILE: a lane's three phases, from thread 0. */
__device__ static void
d_clk(unsigned long long *clk, long long c0, long long c1, long long c2)
{
	if (clk == NULL || threadIdx.x != 0)
		return;
	atomicAdd(&clk[0], (unsigned long long)(c1 - c0));
	atomicAdd(&clk[1], (unsigned long long)(c2 - c1));
	atomicAdd(&clk[2], (unsigned long long)(clock64() - c2));
	atomicAdd(&clk[3], 1ULL);
}

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

/*
 * A block's k rows in an array rr of HC_MAX_K, every index known at
 * compile time (loops unrolled to HC_MAX_K), so that rr stays in
 * registers: in local memory it would go through an L1 that the lanes'
 * shared memory leaves small.
 */
__device__ static __forceinline__ void
r_put(uint32_t *rr, unsigned j, uint32_t r)
{
#pragma unroll
	for (unsigned x = 0; x < HC_MAX_K; x++)
		if (x == j)
			rr[x] = r;
}

__device__ static __forceinline__ uint32_t
r_get(const uint32_t *rr, unsigned j)
{
	uint32_t r = 0;

#pragma unroll
	for (unsigned x = 0; x < HC_MAX_K; x++)
		if (x == j)
			r = rr[x];
	return r;
}

/* Is r among rr[0 .. got)? */
__device__ static __forceinline__ bool
r_has(const uint32_t *rr, unsigned got, uint32_t r)
{
	bool has = false;

#pragma unroll
	for (unsigned x = 0; x < HC_MAX_K; x++)
		has |= x < got && rr[x] == r;
	return has;
}

/* The first j < k with rr[j] == r, or k. */
__device__ static __forceinline__ unsigned
r_find(const uint32_t *rr, unsigned k, uint32_t r)
{
	unsigned j = k;

#pragma unroll
	for (int x = HC_MAX_K - 1; x >= 0; x--)
		if ((unsigned)x < k && rr[x] == r)
			j = (unsigned)x;
	return j;
}

/* hc_block_rows, step for step; rr in registers. */
__device__ static __forceinline__ void
d_block_rows(uint64_t seed, uint64_t b, uint32_t R, unsigned k,
    uint32_t *rr)
{
	uint64_t h = d_mix(seed ^ d_mix(b + 1)), x;
	unsigned got = 0, a;
	uint32_t r;

	for (a = 0; got < k && a < 64 * k; a++) {
		x = d_mix(h + (uint64_t)(a + 1) * GOLDEN);
		r = (uint32_t)(((x >> 32) * (uint64_t)R) >> 32);
		if (!r_has(rr, got, r))
			r_put(rr, got++, r);
	}
	for (r = 0; got < k; r++)
		if (!r_has(rr, got, r))
			r_put(rr, got++, r);
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

/* Eight values a byte; the largest |v| bit pattern, one atomic a block. */
__global__ static void
k_bitmap(const float *g, size_t n, uint8_t *bits, unsigned *maxabs)
{
	__shared__ unsigned wm[THREADS / 32];
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
	if ((threadIdx.x & 31) == 0)
		wm[threadIdx.x >> 5] = m;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (unsigned x = 1; x < blockDim.x / 32; x++)
			m = wm[x] > m ? wm[x] : m;
		if (m != 0)
			atomicMax(maxabs, m);
	}
}

extern "C" int
hc_cuda_bitmap(const float *g, size_t n, uint8_t *bits, int *emax,
    void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	struct scratch *S = NULL;
	unsigned m;
	int rc = 0;

	if (emax == NULL || ((g == NULL || bits == NULL) && n > 0))
		return HC_EINVAL;
	if ((S = scratch_take()) == NULL)
		return HC_ENOMEM;
	CK(cudaMemsetAsync(&S->ctl->maxabs, 0, sizeof S->ctl->maxabs, st));
	if (n > 0) {
		k_bitmap<<<grid_max((n + 7) / 8, (unsigned)S->nsm * 16),
		    THREADS, 0, st>>>(g, n, bits, &S->ctl->maxabs);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpyAsync(&S->h->maxabs, &S->ctl->maxabs, sizeof m,
	    cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	m = S->h->maxabs;
	if (m >= 0x7f800000u) {
		*emax = HC_EXP_NONFINITE;
		rc = HC_ENONFINITE;
	} else
		*emax = m == 0 ? HC_EXP_ZERO : (int)(m >> 23) - 127;
out:
	if (rc != 0 && rc != HC_ENONFINITE)
		cudaStreamSynchronize(st);
	scratch_put(S);
	return rc;
}

/*
 * The lane kernels come in two: their cells in shared memory (*kern as
 * given, *shb their bytes) where a lane's fit in a block, else in global
 * scratch (S->cells, gbytes; *kern becomes global, *shb 0).
 */
template <typename K>
static cudaError_t
lane_kernel(struct scratch *S, K *kern, K global, size_t bytes,
    size_t gbytes, size_t *shb)
{
	if (bytes + 256 <= (size_t)S->smax) {
		*shb = bytes;
		return cudaFuncSetAttribute(*kern,
		    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
	}
	*kern = global;
	*shb = 0;
	return dbuf_need(&S->cells, gbytes);
}

/* ---- layout ------------------------------------------------------------ */

/*
 * Bits past n cleared (and noted: HC_EFORMAT), set bits a word counted
 * (cnt[nwords] = 0, so that the exclusive scan ends with |U|), and the
 * union coordinates of each lane counted, in shared memory when B fits.
 */
__global__ static void
k_popc_lanes(uint64_t *ubits, size_t nwords, size_t n, unsigned B,
    uint64_t *cnt, unsigned *lane, int shared, unsigned *fmt)
{
	extern __shared__ unsigned sh[];
	unsigned *h = shared ? sh : lane;
	unsigned t;

	if (shared) {
		for (t = threadIdx.x; t < B; t += blockDim.x)
			sh[t] = 0;
		__syncthreads();
	}
	FOR_EACH(w, nwords + 1) {
		uint64_t x = 0, lo = 64 * (uint64_t)w, keep, y;
		unsigned t0;

		if (w < nwords) {
			x = ubits[w];
			if (lo + 64 > n) {
				keep = n > lo ? n - lo : 0;	/* < 64 */
				y = keep == 0 ? 0 : ~0ULL >> (64 - keep);
				if ((x & ~y) != 0) {
					atomicOr(fmt, 1u);
					x &= y;
					ubits[w] = x;
				}
			}
		}
		cnt[w] = (uint64_t)__popcll(x);
		t0 = (unsigned)(lo % B);
		for (y = x; y != 0; y &= y - 1) {
			t = t0 + (unsigned)(__ffsll((long long)y) - 1);
			atomicAdd(&h[t % B], 1u);
		}
	}
	if (shared) {
		__syncthreads();
		for (t = threadIdx.x; t < B; t += blockDim.x)
			if (sh[t] != 0)
				atomicAdd(&lane[t], sh[t]);
	}
}

__global__ static void
k_lane_max(const unsigned *lane, unsigned B, unsigned *umax)
{
	unsigned m = 0;

	FOR_EACH(t, B)
		m = lane[t] > m ? lane[t] : m;
	m = __reduce_max_sync(0xffffffffu, m);
	if ((threadIdx.x & 31) == 0 && m != 0)
		atomicMax(umax, m);
}

__global__ static void
k_rows(uint64_t seed, size_t nblocks, uint32_t R, unsigned k, uint32_t *rows)
{
	FOR_EACH(b, nblocks) {
		uint32_t rr[HC_MAX_K];

		d_block_rows(seed, b, R, k, rr);
#pragma unroll
		for (unsigned j = 0; j < HC_MAX_K; j++)
			if (j < k)
				rows[b * k + j] = rr[j];
	}
}

/*
 * The structure splits by lane: cell (r, t) only ever holds lane t's
 * coordinates, so each lane is peeled on its own, by one block, with
 * its R cells in shared memory (or, where R of them do not fit, in a
 * region of global scratch of its own, R cells in a row).  First each lane's
 * union blocks, 32 to a mask word: masks[t * nchp + c] bit x set when
 * coordinate (32 c + x) * B + t is in U.  A warp takes 32 lanes and
 * MRUN chunks of 32 blocks; a ballot per lane turns the blocks' bits
 * into that lane's word, and each thread stores its lane's MRUN words
 * at once.
 */
__device__ static void
lane_masks_warp(const uint64_t *ubits, size_t n, unsigned B, size_t nblocks,
    size_t nchp, uint32_t *masks, size_t warp, unsigned groups, unsigned l)
{
	unsigned g, t0, tl, q, j;
	size_t run;
	uint32_t keep, mine[MRUN];

	g = (unsigned)(warp % groups);
	run = warp / groups;
	t0 = 32 * g;
	tl = B - t0 < 32 ? B - t0 : 32;
	keep = tl == 32 ? ~0u : (1u << tl) - 1;
#pragma unroll
	for (q = 0; q < MRUN; q++) {
		uint64_t b = (run * MRUN + q) * 32 + l, s, x = 0;
		uint32_t my = 0;

		s = b * B + t0;
		if (b < nblocks && s < n) {
			x = ubits[s >> 6] >> (s & 63);
			if ((s & 63) != 0)	/* ubits has a zero word past n */
				x |= ubits[(s >> 6) + 1] << (64 - (s & 63));
		}
		x &= keep;
#pragma unroll
		for (j = 0; j < 32; j++) {
			uint32_t bal = __ballot_sync(0xffffffffu,
			    (unsigned)(x >> j) & 1);

			if (j == l)
				my = bal;
		}
		mine[q] = my;
	}
	if (l < tl) {
		uint4 *d = (uint4 *)(masks + (size_t)(t0 + l) * nchp +
		    run * MRUN);

		d[0] = make_uint4(mine[0], mine[1], mine[2], mine[3]);
		d[1] = make_uint4(mine[4], mine[5], mine[6], mine[7]);
	}
}

__global__ static void
k_lane_masks(const uint64_t *ubits, size_t n, unsigned B, size_t nblocks,
    size_t nchp, uint32_t *masks)
{
	unsigned l = threadIdx.x & 31, groups = (B + 31) / 32;
	size_t nwarps = (size_t)groups * (nchp / MRUN);

	/* Warps stride the tasks: every thread of a warp takes the same. */
	FOR_EACH(tid, nwarps * 32)
		lane_masks_warp(ubits, n, B, nblocks, nchp, masks,
		    tid >> 5, groups, l);
}

/*
 * The pre-peel of lane t (= the block's index).  Each cell is a count
 * and the sum of its blocks' ids (mod 2^32): where the count is 1, the
 * sum is the one block, as the XOR of hcodec.c is.  Rounds of two
 * phases: find the pure cells (a coordinate pure in several cells is
 * taken by the first of its k rows that is pure, so no claim is
 * needed) and append their coordinates to the lane's order as b << 3 |
 * j; then take them out of their k cells.  Round r of the lane is
 * order[loff[t] + rs[loff[t] + t + r] ..  rs[... + r + 1]).  A
 * coordinate is in C when all k of its cells still count something at
 * the end: the pure cell that took a coordinate out is left empty, and
 * counts only fall.  cidx, all 0 before, gets UNPEELED for C (the rest
 * k_core_place makes NOTCORE), ucoord the coordinates of C.  The build
 * loads each block's rows from the table; the rounds, whose entries come
 * in no order, hash them again as k_rows does, sooner than wait on
 * scattered loads.
 */
template <bool SH>
__global__ static void __launch_bounds__(LTHREADS)
k_lane_peel(const uint32_t *masks, size_t nchp, size_t nch,
    const uint64_t *ubits, const uint64_t *wpre, uint64_t seed, unsigned B,
    unsigned k, size_t nblocks, uint32_t R, const uint32_t *rows,
    const unsigned *loff, unsigned *gcells, unsigned *front,
    uint64_t *order, unsigned *rs, unsigned *lnr, uint32_t *cidx,
    uint64_t *ucoord, unsigned *bad, unsigned *maxr,
    unsigned long long *clk)
{
	extern __shared__ unsigned sh[];
	__shared__ unsigned s_n, s_f, s_bad;
	const unsigned t = blockIdx.x;
	unsigned *cnt = SH ? sh : gcells + (size_t)t * 2 * R;
	unsigned *idx = cnt + R;
	unsigned *fr = front + (size_t)t * R;
	const uint32_t *m = masks + (size_t)t * nchp;
	uint64_t *ord = order + loff[t];
	unsigned *lrs = rs + loff[t] + t;
	unsigned from = 0, to, nr = 0, ffrom = 0, fto;
	long long c0 = clock64(), c1, c2;

	for (size_t r = threadIdx.x; r < R; r += blockDim.x) {
		cnt[r] = 0;
		idx[r] = 0;
	}
	if (threadIdx.x == 0) {
		s_n = 0;
		s_f = 0;
		s_bad = 0;
	}
	__syncthreads();
	for (size_t c = threadIdx.x; c < nch; c += blockDim.x)
		for (uint32_t x = m[c]; x != 0; x &= x - 1) {
			uint64_t b = 32 * c + (unsigned)(__ffs(x) - 1);
			uint32_t rr[HC_MAX_K];

#pragma unroll
			for (unsigned j = 0; j < HC_MAX_K; j++)
				rr[j] = j < k ? rows[b * k + j] : 0;
#pragma unroll
			for (unsigned j = 0; j < HC_MAX_K; j++)
				if (j < k) {
					atomicAdd(&cnt[rr[j]], 1u);
					atomicAdd(&idx[rr[j]], (unsigned)b);
				}
		}
	__syncthreads();
	/* The first front: every pure cell. */
	for (size_t c = threadIdx.x; c < R; c += blockDim.x)
		if (cnt[c] == 1)
			fr[d_append(&s_f)] = (unsigned)c;
	__syncthreads();
	fto = s_f;
	c1 = clock64();
	for (;;) {
		for (unsigned f = ffrom + threadIdx.x; f < fto; f += blockDim.x) {
			uint32_t rr[HC_MAX_K], c = fr[f];
			uint64_t b;
			unsigned j, jj;
			bool earlier;

			if (cnt[c] != 1)	/* emptied since it joined */
				continue;
			b = idx[c];
			/* The structure is local; the check costs nothing. */
			if (b >= nblocks) {
				s_bad = 1;
				continue;
			}
			d_block_rows(seed, b, R, k, rr);
			if ((j = r_find(rr, k, c)) == k) {
				s_bad = 1;
				continue;
			}
			earlier = false;
#pragma unroll
			for (jj = 0; jj < HC_MAX_K; jj++)
				if (jj < j)
					earlier |= cnt[rr[jj]] == 1;
			if (!earlier)
				ord[d_append(&s_n)] = b << 3 | j;
		}
		__syncthreads();
		to = s_n;		/* nobody appends before the next sync */
		if (to == from)
			break;
		if (threadIdx.x == 0)
			lrs[nr] = from;
		nr++;
		ffrom = fto;
		/*
		 * A cell left with one coordinate joins the next front:
		 * once ever (counts only fall), so the fronts of all rounds
		 * together fit in R.
		 */
		for (unsigned e = from + threadIdx.x; e < to; e += blockDim.x) {
			uint64_t b = ord[e] >> 3;
			uint32_t rr[HC_MAX_K];

			d_block_rows(seed, b, R, k, rr);
#pragma unroll
			for (unsigned j = 0; j < HC_MAX_K; j++)
				if (j < k) {
					if (atomicSub(&cnt[rr[j]], 1u) == 2)
						fr[d_append(&s_f)] = rr[j];
					atomicSub(&idx[rr[j]], (unsigned)b);
				}
		}
		from = to;
		__syncthreads();
		fto = s_f;		/* nobody appends before the next sync */
	}
	c2 = clock64();
	if (threadIdx.x == 0) {
		lrs[nr] = from;
		lnr[t] = nr;
		if (nr > 0)
			atomicMax(maxr, nr);
		if (s_bad)
			atomicOr(bad, 1u);
	}
	/* Most lanes peel whole; cidx is 0 (not UNPEELED) to begin with. */
	for (size_t c = threadIdx.x; from < loff[t + 1] - loff[t] && c < nch;
	    c += blockDim.x)
		for (uint32_t x = m[c]; x != 0; x &= x - 1) {
			uint64_t b = 32 * c + (unsigned)(__ffs(x) - 1);
			uint64_t i = b * B + t, pos;
			uint32_t rr[HC_MAX_K];
			unsigned j;
			bool empty;

			d_block_rows(seed, b, R, k, rr);
			empty = false;
#pragma unroll
			for (j = 0; j < HC_MAX_K; j++)
				if (j < k)
					empty |= cnt[rr[j]] == 0;
			if (!empty) {
				pos = d_rank(ubits, wpre, i);
				cidx[pos] = UNPEELED;
				ucoord[pos] = i;
			}
		}
	if (clk != NULL) {
		__syncthreads();
		d_clk(clk, c0, c1, c2);
	}
}

/* 1 for each coordinate that no round reached, and a 0 past the end. */
__global__ static void
k_core_flag(const uint32_t *label, size_t ucount, unsigned *flag)
{
	FOR_EACH(u, ucount + 1)
		flag[u] = u < ucount && label[u] == UNPEELED;
}

/* C in ascending order; label becomes cidx, the place in C or NOTCORE. */
__global__ static void
k_core_place(uint32_t *label, const unsigned *cpos, const uint64_t *ucoord,
    size_t ucount, uint64_t *core)
{
	FOR_EACH(u, ucount)
		if (label[u] == UNPEELED) {
			core[cpos[u]] = ucoord[u];
			label[u] = cpos[u];
		} else
			label[u] = NOTCORE;
}

extern "C" void
hc_cuda_layout_free(struct hc_cuda_layout *L)
{
	if (L == NULL)
		return;
	lbufs_put(L->b);
	delete L;
}

/*
 * The host waits twice: for |U| and the largest lane (to size R and the
 * buffers), and for |C| (to size it) with the pre-peel's verdict.
 * Nothing is allocated once the pools hold big enough buffers.
 */
extern "C" int
hc_cuda_layout_new(const struct hc_params *p, const uint8_t *union_bits,
    struct hc_cuda_layout **out, void *stream)
{
	cudaStream_t st = (cudaStream_t)stream;
	struct hc_cuda_layout *L = NULL;
	struct scratch *S = NULL;
	struct hctl *h;
	unsigned *flag = NULL, *cpos = NULL;
	uint64_t *cnt, R;
	size_t B, nbytes, tlen, t2, tc, nch, nchp, shb, groups;
	int rc = 0, shared;
	unsigned nsm;
	struct ptimer *pt = NULL;

	if (out == NULL || p == NULL)
		return HC_EINVAL;
	*out = NULL;
	if (p->n > HC_MAX_N || p->block > HC_MAX_BLOCK ||
	    p->k < 2 || p->k > HC_MAX_K ||
	    (p->cell_bits != 32 && p->cell_bits != 64))
		return HC_EINVAL;
	/* HC_BLOCK_AUTO: HC_BLOCK first; more once |U| is known. */
	B = p->block == HC_BLOCK_AUTO ? HC_BLOCK : p->block;
	B = p->n > 0 && p->n < B ? p->n : B;
	if ((p->n + B - 1) / B > HC_MAX_BLOCKS)
		return HC_EINVAL;
	nbytes = hc_bitmap_bytes(p->n);
	if (nbytes > 0 && union_bits == NULL)
		return HC_EINVAL;
	if ((S = scratch_take()) == NULL)
		return HC_ENOMEM;
	h = S->h;
	nsm = (unsigned)S->nsm;
	pt = pt_start(st);
	pt_mark(pt, "start");
	L = new struct hc_cuda_layout();
	L->p = *p;
	L->p.block = (unsigned)B;
	L->nblocks = (p->n + B - 1) / B;
	L->nwords = (nbytes + 7) / 8;
	if ((L->b = lbufs_take()) == NULL) {
		rc = HC_ENOMEM;
		goto out;
	}

	/* The union, its words' counts and lanes: then |U| and R. */
	CK(dbuf_need(&L->b->ubits, L->nwords * 8 + 8));
	CK(dbuf_need(&L->b->wpre, L->nwords * 8 + 8));
	CK(dbuf_need(&S->cnt, L->nwords * 8 + 8));
	CK(dbuf_need(&S->lane, (B + 1) * sizeof(unsigned)));
	L->ubits = (uint64_t *)L->b->ubits.p;
	L->wpre = (uint64_t *)L->b->wpre.p;
	cnt = (uint64_t *)S->cnt.p;
	CK(cudaMemsetAsync(S->ctl, 0, sizeof *S->ctl, st));
	CK(cudaMemsetAsync(L->ubits, 0, L->nwords * 8 + 8, st));
	if (nbytes > 0)
		CK(cudaMemcpyAsync(L->ubits, union_bits, nbytes,
		    cudaMemcpyDeviceToDevice, st));
	CK(cudaMemsetAsync(S->lane.p, 0, (B + 1) * sizeof(unsigned), st));
	shared = B <= SH_LANES;
	k_popc_lanes<<<grid_max(L->nwords + 1, nsm * 4), THREADS,
	    shared ? B * sizeof(unsigned) : 0, st>>>(L->ubits, L->nwords,
	    p->n, (unsigned)B, cnt, (unsigned *)S->lane.p, shared,
	    &S->ctl->fmt);
	CK(cudaGetLastError());
	k_lane_max<<<grid(B), THREADS, 0, st>>>((const unsigned *)S->lane.p,
	    (unsigned)B, &S->ctl->umax);
	CK(cudaGetLastError());
	tlen = 0;
	CK(cub::DeviceScan::ExclusiveSum(NULL, tlen, cnt, L->wpre,
	    (int64_t)(L->nwords + 1), st));
	CK(dbuf_need(&S->tmp, tlen));
	tlen = S->tmp.cap;
	CK(cub::DeviceScan::ExclusiveSum(S->tmp.p, tlen, cnt, L->wpre,
	    (int64_t)(L->nwords + 1), st));
	CK(cudaMemcpyAsync(&h->total, L->wpre + L->nwords, 8,
	    cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(&h->umax, &S->ctl->umax, 4, cudaMemcpyDeviceToHost,
	    st));
	CK(cudaMemcpyAsync(&h->fmt, &S->ctl->fmt, 4, cudaMemcpyDeviceToHost,
	    st));
	pt_mark(pt, "count");
	CK(cudaStreamSynchronize(st));
	pt_mark(pt, "wait");
	if (h->fmt != 0) {
		rc = HC_EFORMAT;
		goto out;
	}
	L->ucount = (size_t)h->total;
	L->umax = h->umax;
	/*
	 * HC_BLOCK_AUTO over a union too large for HC_BLOCK's lanes: the
	 * lanes counted again for hc_block_auto's B, as hc_layout_new does.
	 */
	if (p->block == HC_BLOCK_AUTO && p->n > (size_t)HC_AUTO_LANE *
	    HC_BLOCK && hc_block_auto(p->n, L->ucount) != B) {
		B = hc_block_auto(p->n, L->ucount);
		L->p.block = (unsigned)B;
		L->nblocks = (p->n + B - 1) / B;
		CK(dbuf_need(&S->lane, (B + 1) * sizeof(unsigned)));
		CK(cudaMemsetAsync(S->lane.p, 0, (B + 1) * sizeof(unsigned),
		    st));
		CK(cudaMemsetAsync(&S->ctl->umax, 0, sizeof S->ctl->umax, st));
		shared = B <= SH_LANES;
		k_popc_lanes<<<grid_max(L->nwords + 1, nsm * 4), THREADS,
		    shared ? B * sizeof(unsigned) : 0, st>>>(L->ubits,
		    L->nwords, p->n, (unsigned)B, cnt, (unsigned *)S->lane.p,
		    shared, &S->ctl->fmt);
		CK(cudaGetLastError());
		k_lane_max<<<grid(B), THREADS, 0, st>>>(
		    (const unsigned *)S->lane.p, (unsigned)B, &S->ctl->umax);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(&h->umax, &S->ctl->umax, 4,
		    cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		L->umax = h->umax;
	}
	if (L->ucount >= UNPEELED - B) {
		snprintf(cuda_err, sizeof cuda_err, "union of %zu coordinates "
		    "over the GPU layout's 2^32 - 1 - B", L->ucount);
		rc = HC_EINVAL;
		goto out;
	}
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
	}
	CK(dbuf_need(&L->b->ucoord, L->ucount * 8));
	CK(dbuf_need(&L->b->rows, L->nblocks * p->k * 4));
	CK(dbuf_need(&L->b->cidx, L->ucount * 4));
	CK(dbuf_need(&L->b->order, L->ucount * 8));
	CK(dbuf_need(&L->b->loff, (B + 1) * 4));
	CK(dbuf_need(&L->b->rs, (L->ucount + B) * 4));
	CK(dbuf_need(&L->b->lnr, B * 4));
	L->ucoord = (uint64_t *)L->b->ucoord.p;
	L->rows = L->umax > 0 ? (uint32_t *)L->b->rows.p : NULL;
	L->cidx = (uint32_t *)L->b->cidx.p;
	L->order = (uint64_t *)L->b->order.p;
	L->loff = (unsigned *)L->b->loff.p;
	L->rs = (unsigned *)L->b->rs.p;
	L->lnr = (unsigned *)L->b->lnr.p;
	L->core = (uint64_t *)L->b->core.p;
	if (L->ucount == 0)
		goto core;

	/* Rows, where each lane starts in U, each lane's blocks. */
	k_rows<<<grid(L->nblocks), THREADS, 0, st>>>(p->seed, L->nblocks,
	    L->R, p->k, L->rows);
	CK(cudaGetLastError());
	/* The scratch of both scans to come, sized while nothing runs. */
	CK(dbuf_need(&S->flag, (L->ucount + 1) * 4));
	CK(dbuf_need(&S->cpos, (L->ucount + 1) * 4));
	flag = (unsigned *)S->flag.p;
	cpos = (unsigned *)S->cpos.p;
	t2 = tc = 0;
	CK(cub::DeviceScan::ExclusiveSum(NULL, t2, (unsigned *)S->lane.p,
	    L->loff, (int64_t)(B + 1), st));
	CK(cub::DeviceScan::ExclusiveSum(NULL, tc, flag, cpos,
	    (int64_t)(L->ucount + 1), st));
	CK(dbuf_need(&S->tmp, t2 > tc ? t2 : tc));
	t2 = S->tmp.cap;
	CK(cub::DeviceScan::ExclusiveSum(S->tmp.p, t2, (unsigned *)S->lane.p,
	    L->loff, (int64_t)(B + 1), st));
	pt_mark(pt, "rows");
	nch = (L->nblocks + 31) / 32;
	nchp = (nch + MRUN - 1) / MRUN * MRUN;
	CK(dbuf_need(&S->masks, B * nchp * 4));
	groups = (B + 31) / 32;
	k_lane_masks<<<grid(groups * (nchp / MRUN) * 32), THREADS, 0, st>>>(
	    L->ubits, p->n, (unsigned)B, L->nblocks, nchp,
	    (uint32_t *)S->masks.p);
	CK(cudaGetLastError());
	pt_mark(pt, "masks");

	/* Each lane's pre-peel, in shared memory where its cells fit. */
	CK(cudaMemsetAsync(L->cidx, 0, L->ucount * 4, st));
	CK(dbuf_need(&S->front, L->ncells * 4));
	{
		auto kern = k_lane_peel<true>;

		CK(lane_kernel(S, &kern, k_lane_peel<false>,
		    (size_t)L->R * 8, L->ncells * 8, &shb));
		kern<<<(unsigned)B, LTHREADS, shb, st>>>(
		    (const uint32_t *)S->masks.p, nchp, nch, L->ubits, L->wpre,
		    p->seed, (unsigned)B, p->k, L->nblocks, L->R, L->rows,
		    L->loff, (unsigned *)S->cells.p, (unsigned *)S->front.p,
		    L->order, L->rs, L->lnr, L->cidx, L->ucoord, &S->ctl->bad,
		    &S->ctl->rounds, pt ? pt->clk : NULL);
	}
	CK(cudaGetLastError());
	pt_mark(pt, "peel");

core:
	/* C: what no round reached, in ascending order. */
	if (L->ucount > 0) {
		/* flags, then their exclusive sums: cpos[ucount] = |C|. */
		k_core_flag<<<grid(L->ucount + 1), THREADS, 0, st>>>(L->cidx,
		    L->ucount, flag);
		CK(cudaGetLastError());
		t2 = S->tmp.cap;
		CK(cub::DeviceScan::ExclusiveSum(S->tmp.p, t2, flag, cpos,
		    (int64_t)(L->ucount + 1), st));
		CK(cudaMemcpyAsync(&h->ncore, cpos + L->ucount, 4,
		    cudaMemcpyDeviceToHost, st));
		CK(cudaMemcpyAsync(&h->bad, &S->ctl->bad, 4,
		    cudaMemcpyDeviceToHost, st));
		CK(cudaMemcpyAsync(&h->rounds, &S->ctl->rounds, 4,
		    cudaMemcpyDeviceToHost, st));
		pt_mark(pt, "core");
		CK(cudaStreamSynchronize(st));
		pt_mark(pt, "wait");
		if (h->bad != 0) {
			snprintf(cuda_err, sizeof cuda_err, "layout: a pure "
			    "cell names no union coordinate");
			rc = HC_ECORRUPT;
			goto out;
		}
		L->ncore = h->ncore;
		L->nrounds = h->rounds;
	}
	CK(dbuf_need(&L->b->core, L->ncore * 8));
	L->core = (uint64_t *)L->b->core.p;
	if (L->ucount > 0) {
		k_core_place<<<grid(L->ucount), THREADS, 0, st>>>(L->cidx,
		    cpos, L->ucoord, L->ucount, L->core);
		CK(cudaGetLastError());
	}
	pt_mark(pt, "place");
	CK(cudaStreamSynchronize(st));
	*out = L;
	L = NULL;
out:
	pt_end(pt, "layout", "build/rounds/core");
	if (L != NULL) {
		cudaStreamSynchronize(st);
		if (L->b != NULL)
			lbufs_put(L->b);
		delete L;
	}
	scratch_put(S);
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
	info->nrounds = L->nrounds;
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
    const uint64_t *wpre, const uint32_t *cidx, const uint32_t *rows,
    unsigned B, unsigned k, size_t ncells, int bits, cell *payload,
    unsigned long long *err)
{
	FOR_EACH(i, n) {
		float v = g[i];
		unsigned w = __float_as_uint(v) & 0x7fffffffu;
		uint64_t q, pos, b, t;
		uint32_t ci;
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
		if ((ci = cidx[pos]) != NOTCORE) {
			payload[ncells + ci] = (cell)q;
			continue;
		}
		b = i / B;
		t = i - b * B;
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
	struct scratch *S = NULL;
	unsigned long long *derr, herr;
	size_t cb;
	double p;
	int rc = 0;

	if (L == NULL || s < HC_SCALE_MIN || s > HC_SCALE_MAX ||
	    (L->p.n > 0 && g == NULL) ||
	    (hc_cuda_layout_payload(L) > 0 && payload == NULL))
		return HC_EINVAL;
	cb = (size_t)L->p.cell_bits / 8;
	p = ldexp(1.0, s);
	if ((S = scratch_take()) == NULL)
		return HC_ENOMEM;
	derr = &S->ctl->err;
	CK(cudaMemsetAsync(derr, 0xff, sizeof *derr, st));
	if (hc_cuda_layout_payload(L) > 0)
		CK(cudaMemsetAsync(payload, 0, hc_cuda_layout_payload(L) * cb,
		    st));
	if (L->p.n > 0) {
		if (L->p.cell_bits == 32)
			k_encode<unsigned><<<grid(L->p.n), THREADS, 0, st>>>(g,
			    L->p.n, p, L->ubits, L->wpre, L->cidx, L->rows,
			    L->p.block, L->p.k, L->ncells, 32,
			    (unsigned *)payload, derr);
		else
			k_encode<unsigned long long><<<grid(L->p.n), THREADS, 0,
			    st>>>(g, L->p.n, p, L->ubits, L->wpre, L->cidx,
			    L->rows, L->p.block, L->p.k, L->ncells, 64,
			    (unsigned long long *)payload, derr);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpyAsync(&S->h->err, derr, sizeof herr,
	    cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	herr = S->h->err;
	if (herr != ~0ULL)
		rc = -(int)(herr & 7);
out:
	if (rc != 0)
		cudaStreamSynchronize(st);
	scratch_put(S);
	return rc;
}

/* ---- decode ------------------------------------------------------------ */

/*
 * Lane t's rounds replayed by one block, its R cells copied from sum
 * into shared memory (or, where they do not fit, into a region of
 * global scratch of its own).  Each entry's pure cell
 * holds it alone (no other entry of the round, nor of a later one, is
 * in it), so it is read and then cleared by a plain store: what
 * subtracting its value would leave.  The other k - 1 cells may be
 * shared within the round: atomics.  Every cell must be empty at the
 * end; one that is not means the sum was not made by this layout.
 */
template <typename cell, bool SH>
__global__ static void __launch_bounds__(LTHREADS)
k_lane_decode(const uint64_t *order, const unsigned *loff,
    const unsigned *rs, const unsigned *lnr, uint64_t seed,
    unsigned B, unsigned k, uint32_t R, int bits, const cell *sum,
    cell *gcells, float *out, cell *fixed, double pinv, unsigned *left,
    unsigned long long *clk)
{
	extern __shared__ unsigned long long shc[];
	const unsigned t = blockIdx.x;
	cell *v = SH ? (cell *)shc : gcells + (size_t)t * R;
	const uint64_t *ord = order + loff[t];
	const unsigned *lrs = rs + loff[t] + t;
	unsigned nr = lnr[t], r;
	cell any = 0;
	long long c0 = clock64(), c1, c2;

	{		/* four loads in flight a thread */
		size_t c = threadIdx.x, d = blockDim.x;

		for (; c + 3 * d < R; c += 4 * d) {
			cell a0 = sum[c * B + t], a1 = sum[(c + d) * B + t];
			cell a2 = sum[(c + 2 * d) * B + t];
			cell a3 = sum[(c + 3 * d) * B + t];

			v[c] = a0;
			v[c + d] = a1;
			v[c + 2 * d] = a2;
			v[c + 3 * d] = a3;
		}
		for (; c < R; c += d)
			v[c] = sum[c * B + t];
	}
	__syncthreads();
	c1 = clock64();
	for (r = 0; r < nr; r++) {
		unsigned from = lrs[r], to = lrs[r + 1];
		uint64_t next = from + threadIdx.x < to ?
		    ord[from + threadIdx.x] : 0;

		for (unsigned e = from + threadIdx.x; e < to; e += blockDim.x) {
			uint64_t o = next, b = o >> 3, i = b * B + t;
			unsigned js = (unsigned)(o & 7);
			uint32_t rr[HC_MAX_K];
			size_t pc;
			cell x;

			if (e + blockDim.x < to)	/* the next, early */
				next = ord[e + blockDim.x];
			d_block_rows(seed, b, R, k, rr);
			pc = r_get(rr, js);
			x = v[pc];
			v[pc] = 0;
#pragma unroll
			for (unsigned j = 0; j < HC_MAX_K; j++)
				if (j < k && j != js)
					atomicAdd(&v[rr[j]],
					    (cell)(0 - x));
			if (fixed != NULL)
				fixed[i] = x;
			else
				out[i] = d_dequantize(d_signed((uint64_t)x,
				    bits), pinv);
		}
		__syncthreads();
	}
	c2 = clock64();
	for (size_t c = threadIdx.x; c < R; c += blockDim.x)
		any |= v[c];
	if (__syncthreads_or(any != 0) && threadIdx.x == 0)
		atomicOr(left, 1u);
	d_clk(clk, c0, c1, c2);
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
static int
decode(const struct hc_cuda_layout *L, cell *sum, int s, float *out,
    cell *fixed, cudaStream_t st)
{
	struct scratch *S = NULL;
	unsigned *dleft;
	double pinv = ldexp(1.0, -s);
	size_t shb;
	unsigned B = L->p.block;
	int rc = 0;
	struct ptimer *pt = NULL;

	if ((S = scratch_take()) == NULL)
		return HC_ENOMEM;
	pt = pt_start(st);
	pt_mark(pt, "start");
	dleft = &S->ctl->left;
	if (fixed != NULL)
		CK(cudaMemsetAsync(fixed, 0, L->p.n * sizeof(cell), st));
	else if (L->p.n > 0)
		CK(cudaMemsetAsync(out, 0, L->p.n * sizeof *out, st));
	CK(cudaMemsetAsync(dleft, 0, sizeof *dleft, st));
	pt_mark(pt, "memset");
	if (L->ncells > 0) {
		auto kern = k_lane_decode<cell, true>;

		CK(lane_kernel(S, &kern, k_lane_decode<cell, false>,
		    (size_t)L->R * sizeof(cell),
		    L->ncells * sizeof(cell), &shb));
		kern<<<B, LTHREADS, shb, st>>>(L->order, L->loff, L->rs, L->lnr,
		    L->p.seed, B, L->p.k, L->R, L->p.cell_bits, sum,
		    (cell *)S->cells.p, out, fixed, pinv, dleft,
		    pt ? pt->clk : NULL);
		CK(cudaGetLastError());
	}
	pt_mark(pt, "lanes");
	if (L->ncore > 0) {
		k_decode_core<cell><<<grid(L->ncore), THREADS, 0, st>>>(L->core,
		    L->ncore, L->ncells, L->p.cell_bits, sum, out, fixed, pinv);
		CK(cudaGetLastError());
	}
	pt_mark(pt, "core");
	CK(cudaMemcpyAsync(&S->h->left, dleft, sizeof *dleft,
	    cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	rc = S->h->left != 0 ? HC_ECORRUPT : 0;
out:
	pt_end(pt, "decode", "load/rounds/check");
	if (rc != 0 && rc != HC_ECORRUPT)
		cudaStreamSynchronize(st);
	scratch_put(S);
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
