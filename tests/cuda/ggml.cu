// ggml: the driver used the way llama.cpp's ggml CUDA backend uses it
// during greedy decoding, on a toy decoder with deterministic weights.
//
// - A pool like ggml_cuda_pool_vmm: a range of min(32 GiB, device memory)
//   reserved with cuMemAddressReserve when the pool first grows, grown on
//   demand by cuMemCreate of granularity-rounded pieces (the recommended
//   granularity) mapped at the end of what is mapped, the handle released
//   at once (the mapping keeps the memory, as ggml does), access set over
//   the new piece; buffers handed out bump-style, 128-byte aligned, and
//   given back in LIFO order; everything unmapped only at exit, then the
//   range freed.  Temporaries come from it while a step is enqueued, that
//   is inside the capture when the step is captured, as ggml's ops do.
// - Weights (fp16) generated on the device by an integer hash: embedding
//   (tied to the output), per layer an RMS norm gain, and an MLP of two
//   matrices; a one-head attention over a KV cache of normed states.
// - Matrix products by cublasGemmEx, FP16 in, FP32 compute and out, on the
//   decode stream, with a workspace of our own (cublasSetWorkspace) so
//   that capture needs no allocation.
// - The prompt in one eager step (ggml does not use graphs for batches of
//   several tokens), then one token per step: cudaStreamBeginCapture
//   (relaxed), the step, cudaStreamEndCapture; the first time
//   cudaGraphInstantiate, later ggml's reading of the nodes' kernel
//   parameters (cuBLAS's are refused by cudart) and cudaGraphExecUpdate,
//   destroyed and instantiated again when the update is refused;
//   cudaGraphLaunch; then the 4-byte token copied to pinned memory and the
//   stream synchronised.  The next step reads the token from device
//   memory.  -G (or GGML_CUDA_DISABLE_GRAPHS set, ggml's own variable)
//   enqueues every step directly; -U updates without reading the nodes
//   back.  -R reuses the graph, as llama.cpp does since 2025 in a steady
//   single-sequence decode (its graph kept while the KV length padded to
//   256 holds): captured with the step's kernels reading the position
//   from device memory and attending over the padded length (the keys
//   past the position zero, their weights masked), captured again (and
//   the executable updated) only when the padded length grows; each token
//   copies its position in (llama.cpp's inputs, set before the compute),
//   launches the graph and reads the token back.
//
// Prints the parts as tests/frameworks/fwcommon.py does ("NAME sha=HEX
// sum=FLOAT n=COUNT", then "ggml: done") and the figures behind them, for
// a byte-for-byte comparison of a local and a remote run.  -b N (or
// GGML_BENCH=N): N tokens timed after a warm-up, tokens_per_s and
// ms_per_token printed.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define NAME	"ggml"
#define CK(x)	check((x), #x, __FILE__, __LINE__)
#define CU(x)	checkcu((x), #x, __FILE__, __LINE__)
#define BK(x)	checkblas((x), #x, __LINE__)
#define KCK()	CK(cudaGetLastError())

#define NT		256		// threads of the per-column kernels
#define POOL_ALIGN	128		// ggml_cuda_pool_vmm's alignment
#define POOL_MAX	(1ull << 35)	// ggml's CUDA_POOL_VMM_MAX_SIZE
#define MAXMAP		64
#define WORKSPACE	(32u << 20)	// cuBLAS's advice for Hopper
#define WARMUP		8		// decode steps before a bench's clock

#define TESTUTIL	(TU_CHECK_WHAT | TU_CHECKCU)
#include "testutil.h"

static void
checkblas(cublasStatus_t s, const char *what, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", __FILE__, line,
	    cublasGetStatusName(s), what);
	exit(2);
}

static void
fail(const char *msg)
{
	printf(NAME ": FAIL %s\n", msg);
	exit(1);
}

// Device and host alike: a 32-bit integer mixer, so that every weight is
// a function of its seed and index only.
__host__ __device__ static inline uint32_t
mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

__device__ static inline float
unit(uint32_t seed, size_t i)	// in [-1, 1), multiples of 2^-15
{
	uint32_t h = mix32(mix32(seed ^ (uint32_t)(i >> 32)) ^ (uint32_t)i);

	return (float)((int)(h & 0xffff) - 32768) / 32768.0f;
}

// p[i] = base + scale * unit(seed, i), rounded to fp16.
__global__ void
fill_f16(__half *p, size_t n, uint32_t seed, float base, float scale)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride)
		p[i] = __float2half_rn(base + scale * unit(seed, i));
}

// Sums of the fp16 bit patterns, plain and weighted by index: integer
// additions, so the order of the atomics does not matter.
__global__ void
bitsum_f16(const __half *p, size_t n, unsigned long long *acc)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	unsigned long long a = 0, b = 0;

	for (; i < n; i += stride) {
		unsigned long long v = __half_as_ushort(p[i]);

		a += v;
		b += v * (mix32((uint32_t)i) | 1u);
	}
	atomicAdd(&acc[0], a);
	atomicAdd(&acc[1], b);
}

// x[:, j] = emb[:, tok[pos + j]] plus a term of the position.
__device__ static void
embed_at(float *x, const __half *emb, const int *tok, int pos, int d, int i,
    int j)
{
	int t = tok[pos + j];

	x[(size_t)j * d + i] = __half2float(emb[(size_t)t * d + i]) +
	    0.25f * (float)((int)(mix32((uint32_t)(pos + j) * (uint32_t)d +
	    (uint32_t)i) & 0xff) - 128) / 128.0f;
}

__global__ void
embed(float *x, const __half *emb, const int *tok, int pos, int d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;

	if (i < d && j < n)
		embed_at(x, emb, tok, pos, d, i, j);
}

// -R: one token, its position *pp read from device memory.
__global__ void
embed_r(float *x, const __half *emb, const int *tok, const int *pp, int d)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < d)
		embed_at(x, emb, tok, *pp, d, i, 0);
}

// A block's sum of v in a fixed order (blockDim.x == NT).
__device__ static float
block_sum(float v, float *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int s = NT / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s)
			sh[threadIdx.x] += sh[threadIdx.x + s];
		__syncthreads();
	}
	v = sh[0];
	__syncthreads();
	return v;
}

__device__ static float
block_max(float v, float *sh)
{
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int s = NT / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s)
			sh[threadIdx.x] = fmaxf(sh[threadIdx.x],
			    sh[threadIdx.x + s]);
		__syncthreads();
	}
	v = sh[0];
	__syncthreads();
	return v;
}

// y[:, j] = x[:, j] / rms(x[:, j]) * g, a block a column.
__global__ void
rmsnorm(const float *x, const __half *g, float *y, int d)
{
	__shared__ float sh[NT];
	const float *xc = x + (size_t)blockIdx.x * d;
	float *yc = y + (size_t)blockIdx.x * d;
	float ss = 0, r;

	for (int i = threadIdx.x; i < d; i += NT)
		ss += xc[i] * xc[i];
	ss = block_sum(ss, sh);
	r = rsqrtf(ss / (float)d + 1e-5f);
	for (int i = threadIdx.x; i < d; i += NT)
		yc[i] = xc[i] * r * __half2float(g[i]);
}

// FP32 to FP16, as ggml converts src1 for cuBLAS.
__global__ void
to_f16(const float *x, __half *y, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = __float2half_rn(x[i]);
}

// The KV cache's columns [pos, pos + n) = x: dst moves every token, as
// the destination of ggml's copy into the cache does.
__global__ void
kv_store(const __half *x, __half *dst, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = x[i];
}

// -R: the column at position *pp of the cache kv (d rows).
__global__ void
kv_store_r(const __half *x, __half *kv, const int *pp, int d)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < d)
		kv[(size_t)*pp * d + i] = x[i];
}

// Causal softmax of the scores s (nkv x n, column j is the token at pos +
// j, which sees keys 0..pos + j) into fp16 p, a block a column.
__device__ static void
softmax_col(const float *s, __half *p, int nkv, int pos, int j)
{
	__shared__ float sh[NT];
	int valid = pos + j + 1;
	const float *sc = s + (size_t)j * nkv;
	__half *pc = p + (size_t)j * nkv;
	float m = -INFINITY, sum = 0;

	for (int k = threadIdx.x; k < valid; k += NT)
		m = fmaxf(m, sc[k]);
	m = block_max(m, sh);
	for (int k = threadIdx.x; k < valid; k += NT)
		sum += expf(sc[k] - m);
	sum = block_sum(sum, sh);
	for (int k = threadIdx.x; k < nkv; k += NT)
		pc[k] = __float2half_rn(k < valid ? expf(sc[k] - m) / sum : 0.0f);
}

__global__ void
softmax(const float *s, __half *p, int nkv, int pos)
{
	softmax_col(s, p, nkv, pos, blockIdx.x);
}

// -R: one column over the padded length nkv, the position *pp's.
__global__ void
softmax_r(const float *s, __half *p, int nkv, const int *pp)
{
	softmax_col(s, p, nkv, *pp, 0);
}

// y = fp16(silu(h)).
__global__ void
silu_f16(const float *h, __half *y, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = __float2half_rn(h[i] / (1.0f + expf(-h[i])));
}

// The residual: x += t.
__global__ void
add(float *x, const float *t, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] += t[i];
}

// tok[at] = the lowest index of the greatest logit (one block).
__device__ static void
argmax_at(const float *l, int v, int *tok, int at)
{
	__shared__ float bv[NT];
	__shared__ int bi[NT];
	float best = -INFINITY;
	int bidx = v;

	for (int i = threadIdx.x; i < v; i += NT)
		if (l[i] > best) {
			best = l[i];
			bidx = i;
		}
	bv[threadIdx.x] = best;
	bi[threadIdx.x] = bidx;
	__syncthreads();
	for (int s = NT / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s) {
			float ov = bv[threadIdx.x + s];
			int oi = bi[threadIdx.x + s];

			if (ov > bv[threadIdx.x] ||
			    (ov == bv[threadIdx.x] && oi < bi[threadIdx.x])) {
				bv[threadIdx.x] = ov;
				bi[threadIdx.x] = oi;
			}
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		tok[at] = bi[0] < v ? bi[0] : 0;
}

__global__ void
argmax(const float *l, int v, int *tok, int at)
{
	argmax_at(l, v, tok, at);
}

// -R: the token after position *pp.
__global__ void
argmax_r(const float *l, int v, int *tok, const int *pp)
{
	argmax_at(l, v, tok, *pp + 1);
}

static unsigned
blocks(size_t n)
{
	return (unsigned)((n + NT - 1) / NT);
}

// The VMM pool, after ggml_cuda_pool_vmm.
struct pool {
	int		 dev;
	CUdeviceptr	 base;		// 0 until the first growth
	size_t		 reserved;	// the range's length
	size_t		 gran;
	size_t		 size;		// mapped
	size_t		 used;
	size_t		 peak;
	int		 first_grow;	// the step of the first growth
	int		 last_grow;
	int		 nmap;
	struct {
		CUdeviceptr	at;
		size_t		len;
	}		 map[MAXMAP];
};

static int cur_step;	// the step's position, for the pool's record

static void
pool_init(struct pool *p, int dev)
{
	CUmemAllocationProp prop;
	size_t freeb, total;

	memset(p, 0, sizeof(*p));
	p->dev = dev;
	p->first_grow = p->last_grow = -1;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	CU(cuMemGetAllocationGranularity(&p->gran, &prop,
	    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	if (p->gran == 0)
		fail("allocation granularity 0");
	CK(cudaMemGetInfo(&freeb, &total));
	p->reserved = total < POOL_MAX ? total : POOL_MAX;
	p->reserved -= p->reserved % p->gran;
}

// size bytes at the top of the pool, mapping more first if needed.
static void *
pool_alloc(struct pool *p, size_t size, size_t *actual)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUmemGenericAllocationHandle h;
	size_t avail, grow;
	void *ptr;

	size = (size + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
	avail = p->size - p->used;
	if (size > avail) {
		grow = (size - avail + p->gran - 1) / p->gran * p->gran;
		if (p->size + grow > p->reserved)
			fail("pool: reservation exhausted");
		if (p->nmap == MAXMAP)
			fail("pool: too many mappings");
		memset(&prop, 0, sizeof(prop));
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = p->dev;
		CU(cuMemCreate(&h, grow, &prop, 0));
		if (p->base == 0)
			CU(cuMemAddressReserve(&p->base, p->reserved, 0, 0, 0));
		CU(cuMemMap(p->base + p->size, grow, 0, h, 0));
		// The mapping keeps the memory: the handle can go.
		CU(cuMemRelease(h));
		memset(&access, 0, sizeof(access));
		access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		access.location.id = p->dev;
		access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		CU(cuMemSetAccess(p->base + p->size, grow, &access, 1));
		p->map[p->nmap].at = p->base + p->size;
		p->map[p->nmap].len = grow;
		p->nmap++;
		p->size += grow;
		if (p->first_grow < 0)
			p->first_grow = cur_step;
		p->last_grow = cur_step;
	}
	ptr = (void *)(uintptr_t)(p->base + p->used);
	*actual = size;
	p->used += size;
	if (p->used > p->peak)
		p->peak = p->used;
	return ptr;
}

static void
pool_free(struct pool *p, void *ptr, size_t size)
{
	if (size > p->used)
		fail("pool: freed more than is used");
	p->used -= size;
	if ((uintptr_t)ptr != (uintptr_t)(p->base + p->used))
		fail("pool: buffers freed out of order");
}

static void
pool_destroy(struct pool *p)
{
	if (p->base == 0)
		return;
	for (int i = 0; i < p->nmap; i++)
		CU(cuMemUnmap(p->map[i].at, p->map[i].len));
	CU(cuMemAddressFree(p->base, p->reserved));
}

// A buffer from the pool, released in reverse order by put().
struct tmp {
	void	*ptr;
	size_t	 len;
};

static struct tmp
get(struct pool *p, size_t size)
{
	struct tmp t;

	t.ptr = pool_alloc(p, size, &t.len);
	return t;
}

static void
put(struct pool *p, struct tmp t)
{
	pool_free(p, t.ptr, t.len);
}

struct layer {
	__half	*g1, *g2;	// norm gains (d)
	__half	*w1;		// f x d
	__half	*w2;		// d x f
	__half	*kv;		// d x ctx
};

struct model {
	int		 v, d, f, nl, ctx, pmax;	// pmax: widest step
	__half		*emb;		// d x v, tied to the output
	__half		*gout;
	struct layer	*l;
	int		*tok;		// ctx + 1 tokens on the device
	int		*posd;		// -R: the step's position, on the device
	float		*x, *y, *h, *t;	// residual, normed, ffn, product
	float		*logits;
	void		*ws;
	cudaStream_t	 st;
	cublasHandle_t	 blas;
	struct pool	 pool;
};

struct graph {
	cudaGraph_t	 g;
	cudaGraphExec_t	 x;
	long		 captures, inst, updates, refused_updates;
	int		 npad;		// -R: the padded length captured
	size_t		 nodes, knodes, kread, krefused;
	cudaError_t	 kcode;		// the first refused read's code
};

// C (m x n, fp32) = alpha op(A) B, A and B fp16, FP32 compute.
static void
gemm(struct model *m, cublasOperation_t ta, int rows, int n, int k,
    float alpha, const __half *a, int lda, const __half *b, int ldb,
    float *c, int ldc)
{
	float beta = 0;

	BK(cublasGemmEx(m->blas, ta, CUBLAS_OP_N, rows, n, k, &alpha, a,
	    CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &beta, c, CUDA_R_32F, ldc,
	    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Enqueues the step of tokens [pos, pos + n) on m->st: the next token
// goes to tok[pos + n].  Pool buffers live as long as ggml's would.
// A step of n tokens at pos; with npad > 0 (-R) one token whose position
// the kernels read from m->posd, attending over npad keys.
static void
enqueue(struct model *m, int pos, int n, int npad)
{
	struct pool *p = &m->pool;
	cudaStream_t st = m->st;
	size_t dn = (size_t)m->d * n, fn = (size_t)m->f * n;
	int d = m->d, nkv = npad > 0 ? npad : pos + n;
	dim3 eg(blocks(d), n);

	if (npad > 0)
		embed_r<<<blocks(d), NT, 0, st>>>(m->x, m->emb, m->tok,
		    m->posd, d);
	else
		embed<<<eg, NT, 0, st>>>(m->x, m->emb, m->tok, pos, d, n);
	KCK();
	for (int i = 0; i < m->nl; i++) {
		struct layer *l = &m->l[i];
		struct tmp q, s, pr, a, hh;

		// Attention: one head as wide as the model, keys and
		// values both the normed states.
		rmsnorm<<<n, NT, 0, st>>>(m->x, l->g1, m->y, d);
		KCK();
		q = get(p, dn * sizeof(__half));
		to_f16<<<blocks(dn), NT, 0, st>>>(m->y, (__half *)q.ptr, dn);
		KCK();
		if (npad > 0)
			kv_store_r<<<blocks(d), NT, 0, st>>>((__half *)q.ptr,
			    l->kv, m->posd, d);
		else
			kv_store<<<blocks(dn), NT, 0, st>>>((__half *)q.ptr,
			    l->kv + (size_t)pos * d, dn);
		KCK();
		s = get(p, (size_t)nkv * n * sizeof(float));
		gemm(m, CUBLAS_OP_T, nkv, n, d, 1.0f / (float)d, l->kv, d,
		    (__half *)q.ptr, d, (float *)s.ptr, nkv);
		pr = get(p, (size_t)nkv * n * sizeof(__half));
		if (npad > 0)
			softmax_r<<<1, NT, 0, st>>>((float *)s.ptr,
			    (__half *)pr.ptr, nkv, m->posd);
		else
			softmax<<<n, NT, 0, st>>>((float *)s.ptr,
			    (__half *)pr.ptr, nkv, pos);
		KCK();
		gemm(m, CUBLAS_OP_N, d, n, nkv, 1.0f, l->kv, d,
		    (__half *)pr.ptr, nkv, m->t, d);
		put(p, pr);
		put(p, s);
		put(p, q);
		add<<<blocks(dn), NT, 0, st>>>(m->x, m->t, dn);
		KCK();

		// MLP.
		rmsnorm<<<n, NT, 0, st>>>(m->x, l->g2, m->y, d);
		KCK();
		a = get(p, dn * sizeof(__half));
		to_f16<<<blocks(dn), NT, 0, st>>>(m->y, (__half *)a.ptr, dn);
		KCK();
		gemm(m, CUBLAS_OP_N, m->f, n, d, 1.0f, l->w1, m->f,
		    (__half *)a.ptr, d, m->h, m->f);
		hh = get(p, fn * sizeof(__half));
		silu_f16<<<blocks(fn), NT, 0, st>>>(m->h, (__half *)hh.ptr, fn);
		KCK();
		gemm(m, CUBLAS_OP_N, d, n, m->f, 1.0f, l->w2, d,
		    (__half *)hh.ptr, m->f, m->t, d);
		put(p, hh);
		put(p, a);
		add<<<blocks(dn), NT, 0, st>>>(m->x, m->t, dn);
		KCK();
	}

	// Logits of the last token only, as llama.cpp asks by default.
	{
		struct tmp a;
		float *xl = m->x + (size_t)(n - 1) * d;

		rmsnorm<<<1, NT, 0, st>>>(xl, m->gout, m->y, d);
		KCK();
		a = get(p, (size_t)d * sizeof(__half));
		to_f16<<<blocks(d), NT, 0, st>>>(m->y, (__half *)a.ptr, d);
		KCK();
		gemm(m, CUBLAS_OP_T, m->v, 1, d, 1.0f, m->emb, d,
		    (__half *)a.ptr, d, m->logits, m->v);
		put(p, a);
		if (npad > 0)
			argmax_r<<<1, NT, 0, st>>>(m->logits, m->v, m->tok,
			    m->posd);
		else
			argmax<<<1, NT, 0, st>>>(m->logits, m->v, m->tok,
			    pos + n);
		KCK();
	}
}

// What ggml reads of a captured graph before updating the executable:
// every node's type, every kernel node's parameters (cudart refuses
// those of kernels it did not register, cuBLAS's; ggml clears the error).
static void
inspect(struct graph *g)
{
	cudaGraphNode_t *nodes;
	size_t n = 0;

	CK(cudaGraphGetNodes(g->g, NULL, &n));
	if ((nodes = (cudaGraphNode_t *)calloc(n ? n : 1,
	    sizeof(*nodes))) == NULL)
		fail("out of memory");
	if (n > 0)
		CK(cudaGraphGetNodes(g->g, nodes, &n));
	g->nodes = n;
	g->knodes = g->kread = g->krefused = 0;
	for (size_t i = 0; i < n; i++) {
		cudaGraphNodeType type;
		cudaKernelNodeParams kp;
		cudaError_t e;

		CK(cudaGraphNodeGetType(nodes[i], &type));
		if (type != cudaGraphNodeTypeKernel)
			continue;
		g->knodes++;
		e = cudaGraphKernelNodeGetParams(nodes[i], &kp);
		if (e == cudaSuccess)
			g->kread++;
		else {
			if (g->krefused++ == 0 && g->kcode == cudaSuccess)
				g->kcode = e;
			(void)cudaGetLastError();
		}
	}
	free(nodes);
}

static int noread;	// -U: no reading of the nodes back
static int reuse;	// -R: the graph reused while the padded length holds
static int hpos;	// -R: the position, copied in before each launch

// -R: the KV length a step at pos attends over, padded as llama.cpp pads
// n_kv (256), within the cache.
static int
padded(const struct model *m, int pos)
{
	int n = (pos + 1 + 255) / 256 * 256;

	return n < m->ctx ? n : m->ctx;
}

// One step as ggml_backend_cuda_graph_compute runs it, then the token
// read back as llama.cpp reads its output.  Returns the new token.
static int
step(struct model *m, struct graph *g, int graphs, int pos, int n, int *htok)
{
	cudaGraphExecUpdateResultInfo info;
	cudaError_t e;

	cur_step = pos;
	if (graphs && n == 1 && reuse) {
		int npad = padded(m, pos);

		if (g->x == NULL || npad != g->npad) {
			if (g->g != NULL)
				CK(cudaGraphDestroy(g->g));
			CK(cudaStreamBeginCapture(m->st,
			    cudaStreamCaptureModeRelaxed));
			enqueue(m, pos, 1, npad);
			CK(cudaStreamEndCapture(m->st, &g->g));
			g->captures++;
			g->npad = npad;
			e = g->x == NULL ? cudaErrorGraphExecUpdateFailure :
			    cudaGraphExecUpdate(g->x, g->g, &info);
			if (e == cudaSuccess)
				g->updates++;
			else {
				if (g->x != NULL) {
					(void)cudaGetLastError();
					CK(cudaGraphExecDestroy(g->x));
					g->x = NULL;
					g->refused_updates++;
				}
				CK(cudaGraphInstantiate(&g->x, g->g, 0));
				g->inst++;
			}
		}
		hpos = pos;
		CK(cudaMemcpyAsync(m->posd, &hpos, sizeof(int),
		    cudaMemcpyHostToDevice, m->st));
		CK(cudaGraphLaunch(g->x, m->st));
	} else if (graphs && n == 1) {
		if (g->g != NULL) {
			CK(cudaGraphDestroy(g->g));
			g->g = NULL;
		}
		CK(cudaStreamBeginCapture(m->st, cudaStreamCaptureModeRelaxed));
		enqueue(m, pos, n, 0);
		CK(cudaStreamEndCapture(m->st, &g->g));
		g->captures++;
		if (g->x == NULL) {
			CK(cudaGraphInstantiate(&g->x, g->g, 0));
			g->inst++;
		} else {
			if (!noread)
				inspect(g);
			e = cudaGraphExecUpdate(g->x, g->g, &info);
			if (e == cudaErrorGraphExecUpdateFailure) {
				(void)cudaGetLastError();
				CK(cudaGraphExecDestroy(g->x));
				g->x = NULL;
				CK(cudaGraphInstantiate(&g->x, g->g, 0));
				g->inst++;
				g->refused_updates++;
			} else {
				CK(e);
				g->updates++;
			}
		}
		CK(cudaGraphLaunch(g->x, m->st));
	} else
		enqueue(m, pos, n, 0);
	if (m->pool.used != 0)
		fail("pool: buffers still held after a step");
	CK(cudaMemcpyAsync(htok, m->tok + pos + n, sizeof(int),
	    cudaMemcpyDeviceToHost, m->st));
	CK(cudaStreamSynchronize(m->st));
	if (*htok < 0 || *htok >= m->v)
		fail("a token out of the vocabulary");
	return *htok;
}

static uint64_t
fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = (const unsigned char *)p;

	while (n-- > 0)
		h = (h ^ *b++) * 1099511628211ull;
	return h;
}

#define FNV0	1469598103934665603ull

static __half *
weights(size_t n, uint32_t seed, float base, float scale, size_t *total)
{
	__half *p;

	CK(cudaMalloc(&p, n * sizeof(__half)));
	fill_f16<<<1024, NT>>>(p, n, seed, base, scale);
	KCK();
	*total += n;
	return p;
}

static void
bitsum(const __half *p, size_t n, unsigned long long *acc)
{
	bitsum_f16<<<1024, NT>>>(p, n, acc);
	KCK();
}

static void
model_init(struct model *m, int v, int d, int nl, int ctx, int pmax)
{
	size_t total = 0;
	unsigned long long *acc, h[2];
	float sd = sqrtf(3.0f / (float)d), sf;

	memset(m, 0, sizeof(*m));
	m->v = v;
	m->d = d;
	m->f = 2 * d;
	m->nl = nl;
	m->ctx = ctx;
	m->pmax = pmax;
	sf = sqrtf(3.0f / (float)m->f);
	CK(cudaStreamCreateWithFlags(&m->st, cudaStreamNonBlocking));
	if ((m->l = (struct layer *)calloc(nl, sizeof(*m->l))) == NULL)
		fail("out of memory");
	m->emb = weights((size_t)d * v, 1, 0, 1, &total);
	m->gout = weights(d, 2, 1, 0.125f, &total);
	for (int i = 0; i < nl; i++) {
		struct layer *l = &m->l[i];

		l->g1 = weights(d, 100 + 4 * i, 1, 0.125f, &total);
		l->g2 = weights(d, 101 + 4 * i, 1, 0.125f, &total);
		l->w1 = weights((size_t)m->f * d, 102 + 4 * i, 0, sd, &total);
		l->w2 = weights((size_t)d * m->f, 103 + 4 * i, 0, sf, &total);
		CK(cudaMalloc(&l->kv, (size_t)d * ctx * sizeof(__half)));
		CK(cudaMemset(l->kv, 0, (size_t)d * ctx * sizeof(__half)));
	}
	CK(cudaMalloc(&m->posd, sizeof(int)));
	CK(cudaMemset(m->posd, 0, sizeof(int)));
	CK(cudaMalloc(&m->tok, (size_t)(ctx + 1) * sizeof(int)));
	CK(cudaMemset(m->tok, 0, (size_t)(ctx + 1) * sizeof(int)));
	CK(cudaMalloc(&m->x, (size_t)d * pmax * sizeof(float)));
	CK(cudaMalloc(&m->y, (size_t)d * pmax * sizeof(float)));
	CK(cudaMalloc(&m->t, (size_t)d * pmax * sizeof(float)));
	CK(cudaMalloc(&m->h, (size_t)m->f * pmax * sizeof(float)));
	CK(cudaMalloc(&m->logits, (size_t)v * sizeof(float)));
	CK(cudaMalloc(&m->ws, WORKSPACE));

	// The weights' checksum, on the device.
	CK(cudaMalloc(&acc, 2 * sizeof(*acc)));
	CK(cudaMemset(acc, 0, 2 * sizeof(*acc)));
	bitsum(m->emb, (size_t)d * v, acc);
	bitsum(m->gout, d, acc);
	for (int i = 0; i < nl; i++) {
		bitsum(m->l[i].g1, d, acc);
		bitsum(m->l[i].g2, d, acc);
		bitsum(m->l[i].w1, (size_t)m->f * d, acc);
		bitsum(m->l[i].w2, (size_t)d * m->f, acc);
	}
	CK(cudaMemcpy(h, acc, sizeof(h), cudaMemcpyDeviceToHost));
	CK(cudaFree(acc));
	printf(NAME ": weights %zu bytes\n", total * sizeof(__half));
	printf("weights sha=%016llx sum=%.17g n=%zu\n",
	    h[1] ^ (h[0] << 32 | h[0] >> 32), (double)h[0], total);

	BK(cublasCreate(&m->blas));
	BK(cublasSetStream(m->blas, m->st));
	// After cublasSetStream, which resets the workspace to the default.
	BK(cublasSetWorkspace(m->blas, m->ws, WORKSPACE));
	CK(cudaDeviceSynchronize());
}

static void
model_free(struct model *m)
{
	BK(cublasDestroy(m->blas));
	for (int i = 0; i < m->nl; i++) {
		CK(cudaFree(m->l[i].g1));
		CK(cudaFree(m->l[i].g2));
		CK(cudaFree(m->l[i].w1));
		CK(cudaFree(m->l[i].w2));
		CK(cudaFree(m->l[i].kv));
	}
	free(m->l);
	CK(cudaFree(m->emb));
	CK(cudaFree(m->gout));
	CK(cudaFree(m->tok));
	CK(cudaFree(m->posd));
	CK(cudaFree(m->x));
	CK(cudaFree(m->y));
	CK(cudaFree(m->t));
	CK(cudaFree(m->h));
	CK(cudaFree(m->logits));
	CK(cudaFree(m->ws));
	CK(cudaStreamDestroy(m->st));
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
usage(void)
{
	fprintf(stderr, "usage: ggml [-GRU] [-b tokens] [-d dim] [-l layers] "
	    "[-n tokens] [-p prompt] [-v vocab]\n");
	exit(2);
}

// A number in [lo, hi], the whole string.
static int
num(const char *s, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *v >= lo && *v <= hi;
}

static long
optnum(const char *s, long lo, long hi, char opt)
{
	long v;

	if (!num(s, lo, hi, &v)) {
		fprintf(stderr, NAME ": -%c: want %ld to %ld, not \"%s\"\n",
		    opt, lo, hi, s);
		usage();
	}
	return v;
}

int
main(int argc, char **argv)
{
	struct model m;
	struct graph g;
	long v = 32000, d = 2048, nl = 4, ntok = 64, np = 4, bench = 0, x;
	int graphs = 1, ch, pos, *htok, *gen, *ptok, nok;
	const char *env;
	float *logits;
	double lsum = 0, t0, t1;
	char msg[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	// The environment ranks below the flags; a bad value is ignored.
	if ((env = getenv("GGML_BENCH")) != NULL && *env != '\0') {
		if (num(env, 1, 65536, &x))
			bench = x;
		else
			fprintf(stderr, NAME ": GGML_BENCH=%s ignored\n", env);
	}
	if ((env = getenv("GGML_CUDA_DISABLE_GRAPHS")) != NULL && *env != '\0')
		graphs = 0;
	while ((ch = getopt(argc, argv, "GRUb:d:l:n:p:v:")) != -1) {
		switch (ch) {
		case 'G':
			graphs = 0;
			break;
		case 'R':
			reuse = 1;
			break;
		case 'U':
			noread = 1;
			break;
		case 'b':
			bench = optnum(optarg, 1, 65536, 'b');
			break;
		case 'd':
			d = optnum(optarg, 64, 16384, 'd');
			if (d % 64 != 0) {
				fprintf(stderr, NAME ": -d: a multiple of 64\n");
				usage();
			}
			break;
		case 'l':
			nl = optnum(optarg, 1, 256, 'l');
			break;
		case 'n':
			ntok = optnum(optarg, 1, 65536, 'n');
			break;
		case 'p':
			np = optnum(optarg, 1, 1024, 'p');
			break;
		case 'v':
			v = optnum(optarg, 2, 1 << 20, 'v');
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	// A bench's clock starts after the prompt and WARMUP decode steps.
	if (bench > 0)
		ntok = 1 + WARMUP + bench;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	printf(NAME ": vocab %ld dim %ld ffn %ld layers %ld prompt %ld "
	    "tokens %ld graphs %s\n", v, d, 2 * d, nl, np, ntok,
	    !graphs ? "off" : reuse ? "reused" : "on");
	model_init(&m, (int)v, (int)d, (int)nl, (int)(np + ntok), (int)np);
	pool_init(&m.pool, 0);
	memset(&g, 0, sizeof(g));
	CK(cudaMallocHost(&htok, sizeof(int)));
	if ((gen = (int *)calloc(ntok, sizeof(int))) == NULL ||
	    (ptok = (int *)calloc(np, sizeof(int))) == NULL ||
	    (logits = (float *)calloc(v, sizeof(float))) == NULL)
		fail("out of memory");

	// The prompt: tokens of a hash, copied on the decode stream (it does
	// not wait for the legacy one), then one eager step.
	for (long i = 0; i < np; i++)
		ptok[i] = (int)(mix32(0x70726f6du + (uint32_t)i) % (uint32_t)v);
	CK(cudaMemcpyAsync(m.tok, ptok, np * sizeof(int),
	    cudaMemcpyHostToDevice, m.st));
	gen[0] = step(&m, &g, graphs, 0, (int)np, htok);

	// Decode: a token a step.
	t0 = now();
	for (pos = (int)np; pos < np + ntok - 1; pos++) {
		if (bench > 0 && pos == np + WARMUP) {
			CK(cudaDeviceSynchronize());
			t0 = now();
		}
		gen[pos - np + 1] = step(&m, &g, graphs, pos, 1, htok);
	}
	t1 = now();
	CK(cudaMemcpy(logits, m.logits, (size_t)v * sizeof(float),
	    cudaMemcpyDeviceToHost));

	// The device's last token is the host's argmax of the logits.
	nok = 0;
	for (long i = 0; i < v; i++) {
		if (!std::isfinite(logits[i]))
			fail("logits not finite");
		if (logits[i] > logits[nok])
			nok = (int)i;
		lsum += fabs((double)logits[i]);
	}
	if (nok != gen[ntok - 1]) {
		snprintf(msg, sizeof(msg), "last token %d, argmax of the "
		    "logits %d", gen[ntok - 1], nok);
		fail(msg);
	}

	{
		long s = 0;

		for (long i = 0; i < ntok; i++)
			s += gen[i];
		printf("tokens sha=%016llx sum=%ld n=%ld\n",
		    (unsigned long long)fnv(gen, ntok * sizeof(int), FNV0), s,
		    ntok);
	}
	printf("logits sha=%016llx sum=%.17g n=%ld\n",
	    (unsigned long long)fnv(logits, v * sizeof(float), FNV0), lsum, v);
	{
		uint64_t f[6] = { m.pool.gran, m.pool.reserved, m.pool.size,
		    (uint64_t)m.pool.nmap, m.pool.peak,
		    (uint64_t)m.pool.first_grow };

		printf("pool sha=%016llx sum=%zu n=%d\n",
		    (unsigned long long)fnv(f, sizeof(f), FNV0), m.pool.size,
		    m.pool.nmap);
	}
	{
		uint64_t f[8] = { (uint64_t)g.captures, (uint64_t)g.inst,
		    (uint64_t)g.updates, (uint64_t)g.refused_updates, g.nodes,
		    g.knodes, g.kread, (uint64_t)g.kcode };

		printf("graphs sha=%016llx sum=%ld n=%ld\n",
		    (unsigned long long)fnv(f, sizeof(f), FNV0), g.captures,
		    g.inst);
	}
	if (bench == 0) {
		for (long i = 0; i < ntok; i += 16) {
			printf(NAME ": tokens %ld-%ld:", i,
			    i + 15 < ntok ? i + 15 : ntok - 1);
			for (long j = i; j < i + 16 && j < ntok; j++)
				printf(" %d", gen[j]);
			printf("\n");
		}
	}
	printf(NAME ": logits [0] %a [%ld] %a argmax %d\n", logits[0], v - 1,
	    logits[v - 1], nok);
	printf(NAME ": pool granularity %zu reserved %zu mapped %zu in %d "
	    "mappings, peak %zu, grew at positions %d to %d\n", m.pool.gran,
	    m.pool.reserved, m.pool.size, m.pool.nmap, m.pool.peak,
	    m.pool.first_grow, m.pool.last_grow);
	printf(NAME ": graphs captured %ld instantiated %ld updated %ld "
	    "update refused %ld\n", g.captures, g.inst, g.updates,
	    g.refused_updates);
	printf(NAME ": graph nodes %zu kernel %zu params read %zu refused "
	    "%zu (%s)\n", g.nodes, g.knodes, g.kread, g.krefused,
	    g.krefused ? cudaGetErrorName(g.kcode) : "none");

	if (m.pool.nmap == 0 || m.pool.size % m.pool.gran != 0 ||
	    m.pool.peak > m.pool.size)
		fail("pool figures");
	// -R: one capture per padded length the decode reached.
	long want = 0;
	for (int q = (int)np, prev = -1; q < np + ntok - 1; q++)
		if (!reuse || padded(&m, q) != prev) {
			want++;
			prev = padded(&m, q);
		}
	if (graphs && (g.captures != want ||
	    (ntok > 1 && g.inst < 1) ||
	    g.inst + g.updates != g.captures))
		fail("graph counts");
	if (bench > 0) {
		printf("mode: %s\n", !graphs ? "eager" : reuse ? "replay" :
		    noread ? "update" : "graphs");
		printf("tokens: %ld\n", bench);
		printf("ms_per_token: %.4f\n", (t1 - t0) * 1e3 / bench);
		printf("tokens_per_s: %.2f\n", bench / (t1 - t0));
	}
	printf(NAME ": done\n");

	if (g.x != NULL)
		CK(cudaGraphExecDestroy(g.x));
	if (g.g != NULL)
		CK(cudaGraphDestroy(g.g));
	pool_destroy(&m.pool);
	model_free(&m);
	CK(cudaFreeHost(htok));
	free(gen);
	free(ptok);
	free(logits);
	printf(NAME ": ok\n");
	return 0;
}
