// infer: the CUDA C inference workload of bench/infer.  A transformer-like
// network (token and position embeddings, then layers of pre-norm
// single-head self-attention and a GELU MLP, then a final layernorm of each
// sequence's last token) whose weights come from a model file that "infer
// -g" writes from a seeded generator.
//
// Loading reads the file, then gives every tensor its own cudaMalloc and
// cudaMemcpy, as a framework moving a state dict to the GPU does.  Each
// inference step copies the token ids in (cudaMemcpyAsync), runs the
// network on the legacy default stream (cuBLAS GEMMs, or with -K this
// program's own tiled GEMM kernel, plus its kernels for bias, GELU,
// layernorm, softmax and residual add), and copies the outputs back with
// one synchronous cudaMemcpy.  It prints timings and a checksum of every
// output as YAML keys on standard output.
//
// With -K no cuBLAS call is made and every kernel has a host
// implementation in tests/cuda/host-kernels.c, so the whole program runs
// on gleam-serve's host backend.  The -K kernels and -R, the same network
// on the CPU, share their arithmetic (infer-math.h) and agree bit for bit.
#include <cerrno>
#include <cstdarg>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "infer-math.h"

#define NAME		"infer"

// Exit codes, as in lib/exitcode.h where they apply.
#define EX_CUDA		1	// a CUDA or cuBLAS call failed
#define EX_USAGE	2
#define EX_MODEL	3	// not a valid model file
#define EX_IO		6

#define CK(x)		ck((x), __FILE__, __LINE__)
#define BK(x)		bk((x), __FILE__, __LINE__)

// The model file: a 48-byte little-endian header, then float32 tensors.
#define MAGIC		"GLEAMMDL"
#define VERSION		1
#define HDR_SIZE	48
#define MAX_DIM		8192
#define MAX_LAYERS	4096
#define MAX_VOCAB	(1 << 22)
#define MAX_POS		8192
#define DEF_VOCAB	8192
#define DEF_POS		1024
#define LT		12	// tensors per layer

enum mode { M_CUBLAS, M_KERNELS, M_REFERENCE };

struct model {
	uint32_t	 dim, layers, vocab, max_pos;
	uint64_t	 seed, data_bytes;
	int		 ntensors;
	size_t		*count;		// elements of each tensor
	size_t		*off;		// element offset of each tensor
	float		*host;		// all tensors, as read
	float		**dev;		// each tensor on the GPU (not -R)
};

// Tensor k of layer l; the embeddings come first, the final norm last.
enum { L_LN1G, L_LN1B, L_WQKV, L_BQKV, L_WO, L_BO, L_LN2G, L_LN2B, L_W1,
    L_B1, L_W2, L_B2 };
#define T_TOK		0
#define T_POS		1
#define T_LAYER(l, k)	(2 + (l) * LT + (k))
#define T_LNF_G(m)	(2 + (int)(m)->layers * LT)
#define T_LNF_B(m)	(T_LNF_G(m) + 1)

static enum mode mode = M_CUBLAS;
static cublasHandle_t blas;

// cuBLAS, opened when the mode needs it: loading it costs half a second,
// and -K, -R and -g then run where it is not installed.
static struct {
	decltype(&cublasCreate_v2)		create;
	decltype(&cublasSgemm_v2)		sgemm;
	decltype(&cublasSgemmStridedBatched)	sgemm_batched;
	decltype(&cublasGetStatusString)	status_string;
} cb;

static void
ck(cudaError_t e, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    cudaGetErrorName(e), cudaGetErrorString(e));
	exit(EX_CUDA);
}

static void
bk(cublasStatus_t s, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	fprintf(stderr, NAME ": cuBLAS error at %s:%d: %s\n", file, line,
	    cb.status_string(s));
	exit(EX_CUDA);
}

static void
usage(FILE *f, int rc)
{
	fprintf(f,
	    "usage: infer -g [-d dim] [-l layers] [-S seed] [-s size] model\n"
	    "       infer [-KR] [-b batch] [-n steps] [-q seqlen] [-S seed]"
	    " [-w warmup] model\n");
	exit(rc);
}

#include "workload.h"

// A size in bytes with an optional k, m or g (powers of 1024).
static uint64_t
size_arg(const char *s)
{
	char *end;
	double v;
	uint64_t mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end != '\0' && end[1] == '\0')
		switch (*end++ | 0x20) {
		case 'k': mul = 1ULL << 10; break;
		case 'm': mul = 1ULL << 20; break;
		case 'g': mul = 1ULL << 30; break;
		default: end--; break;
		}
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) ||
	    v * mul > 64.0 * (1ULL << 30)) {
		fprintf(stderr, NAME ": -s %s: not a size from 1 to 64g\n", s);
		usage(stderr, EX_USAGE);
	}
	return (uint64_t)(v * mul);
}

// Finds the cuBLAS functions this program calls.
static void
blas_open(void)
{
	char name[32];
	void *h;

	snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
	if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) == NULL)
		fatal(EX_CUDA, "%s", dlerror());
	cb.create = (decltype(cb.create))dlsym(h, "cublasCreate_v2");
	cb.sgemm = (decltype(cb.sgemm))dlsym(h, "cublasSgemm_v2");
	cb.sgemm_batched = (decltype(cb.sgemm_batched))dlsym(h,
	    "cublasSgemmStridedBatched");
	cb.status_string = (decltype(cb.status_string))dlsym(h,
	    "cublasGetStatusString");
	if (cb.create == NULL || cb.sgemm == NULL || cb.sgemm_batched == NULL ||
	    cb.status_string == NULL)
		fatal(EX_CUDA, "%s: a cuBLAS function is missing", name);
}

// ---- the model file -----------------------------------------------------

// Fills in the tensor table from the dimensions; 0, or -1 if too big.
static int
model_layout(struct model *m)
{
	uint64_t d = m->dim, total = 0;
	int i, k;

	m->ntensors = 2 + (int)m->layers * LT + 2;
	m->count = (size_t *)calloc(m->ntensors, sizeof *m->count);
	m->off = (size_t *)calloc(m->ntensors, sizeof *m->off);
	if (m->count == NULL || m->off == NULL)
		return -1;
	m->count[T_TOK] = m->vocab * d;
	m->count[T_POS] = m->max_pos * d;
	for (uint32_t l = 0; l < m->layers; l++) {
		static const int mul[LT] = { 1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 4,
		    1 };	// times d, and once more d for the matrices

		for (k = 0; k < LT; k++) {
			uint64_t n = mul[k] * d;

			if (k == L_WQKV || k == L_WO || k == L_W1 || k == L_W2)
				n *= d;
			m->count[T_LAYER(l, k)] = n;
		}
	}
	m->count[T_LNF_G(m)] = m->count[T_LNF_B(m)] = d;
	for (i = 0; i < m->ntensors; i++) {
		m->off[i] = total;
		total += m->count[i];
	}
	m->data_bytes = total * sizeof(float);
	return m->data_bytes > 64ULL << 30 ? -1 : 0;
}

// Uniform in [-1, 1), from 24 random bits.
static float
uniform(uint64_t *s)
{
	return (float)(splitmix(s) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Tensor i's scale and offset: values are off + scale * uniform.
static void
tensor_init(const struct model *m, int i, float *scale, float *off)
{
	int k = (i - 2) % LT;

	*off = 0.0f;
	if (i == T_TOK)
		*scale = 1.0f;
	else if (i == T_POS)
		*scale = 0.1f;
	else if (i >= T_LNF_G(m))
		*scale = 0.1f, *off = i == T_LNF_G(m) ? 1.0f : 0.0f;
	else if (k == L_LN1G || k == L_LN2G)
		*scale = 0.1f, *off = 1.0f;
	else if (k == L_LN1B || k == L_LN2B)
		*scale = 0.1f;
	else if (k == L_WQKV || k == L_WO || k == L_W1)
		*scale = 1.0f / sqrtf((float)m->dim);
	else if (k == L_W2)
		*scale = 1.0f / sqrtf(4.0f * m->dim);
	else
		*scale = 0.02f;		// biases
}

static void
put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void
put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t
get32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t
get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

// infer -g: writes the model, tensor by tensor, from the seed.
static int
model_generate(const char *path, uint32_t dim, uint32_t layers,
    uint64_t size, uint64_t seed)
{
	struct model m;
	unsigned char hdr[HDR_SIZE];
	uint64_t per_layer = 12ULL * dim * dim + 13ULL * dim, rest;
	static float buf[1 << 16];
	FILE *f;
	int i;

	memset(&m, 0, sizeof m);
	m.dim = dim;
	m.vocab = DEF_VOCAB;
	m.max_pos = DEF_POS;
	rest = size / 4;
	if (layers == 0) {
		// The size picks the layers, at least one.
		uint64_t fixed = (uint64_t)(m.vocab + m.max_pos) * dim + 2 * dim;

		m.layers = rest > fixed + per_layer ?
		    (uint32_t)((rest - fixed) / per_layer) : 1;
		if (m.layers > MAX_LAYERS)
			m.layers = MAX_LAYERS;
	} else {
		m.layers = layers;
		if (size != 0) {
			// The size picks the vocabulary.
			uint64_t fixed = (uint64_t)m.max_pos * dim + 2 * dim +
			    layers * per_layer;

			m.vocab = rest > fixed + dim ?
			    (uint32_t)((rest - fixed) / dim) : 1;
			if (m.vocab > MAX_VOCAB)
				m.vocab = MAX_VOCAB;
		}
	}
	if (model_layout(&m) == -1)
		fatal(EX_USAGE, "%s: the model would be too large", path);
	if ((f = fopen(path, "wb")) == NULL)
		fatal(EX_IO, "%s: %s", path, strerror(errno));
	memset(hdr, 0, sizeof hdr);
	memcpy(hdr, MAGIC, 8);
	put32(hdr + 8, VERSION);
	put32(hdr + 12, m.dim);
	put32(hdr + 16, m.layers);
	put32(hdr + 20, m.vocab);
	put32(hdr + 24, m.max_pos);
	put64(hdr + 32, seed);
	put64(hdr + 40, m.data_bytes);
	if (fwrite(hdr, sizeof hdr, 1, f) != 1)
		goto fail;
	for (i = 0; i < m.ntensors; i++) {
		uint64_t s = seed ^ (0x632be59bd9b4e019ULL * (i + 1));
		size_t left = m.count[i], n, j;
		float scale, off;

		tensor_init(&m, i, &scale, &off);
		while (left > 0) {
			n = left < sizeof buf / sizeof buf[0] ? left :
			    sizeof buf / sizeof buf[0];
			for (j = 0; j < n; j++)
				buf[j] = off + scale * uniform(&s);
			if (fwrite(buf, sizeof buf[0], n, f) != n)
				goto fail;
			left -= n;
		}
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto fail;
	}
	printf("model: %s\ndim: %u\nlayers: %u\nvocab: %u\nmax_pos: %u\n"
	    "seed: %llu\nmodel_bytes: %llu\n", path, m.dim, m.layers, m.vocab,
	    m.max_pos, (unsigned long long)seed,
	    (unsigned long long)(HDR_SIZE + m.data_bytes));
	return 0;
fail:
	fprintf(stderr, NAME ": %s: %s\n", path, strerror(errno));
	if (f != NULL)
		fclose(f);
	unlink(path);
	return EX_IO;
}

// Reads and checks the model file into m->host.
static void
model_read(const char *path, struct model *m)
{
	unsigned char hdr[HDR_SIZE];
	struct stat sb;
	size_t got, want;
	FILE *f;

	if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &sb) == -1)
		fatal(EX_IO, "%s: %s", path, strerror(errno));
	if (fread(hdr, sizeof hdr, 1, f) != 1 || memcmp(hdr, MAGIC, 8) != 0)
		fatal(EX_MODEL, "%s: not a model file", path);
	if (get32(hdr + 8) != VERSION)
		fatal(EX_MODEL, "%s: unknown model file version", path);
	memset(m, 0, sizeof *m);
	m->dim = get32(hdr + 12);
	m->layers = get32(hdr + 16);
	m->vocab = get32(hdr + 20);
	m->max_pos = get32(hdr + 24);
	m->seed = get64(hdr + 32);
	if (m->dim < 1 || m->dim > MAX_DIM || m->layers < 1 ||
	    m->layers > MAX_LAYERS || m->vocab < 1 || m->vocab > MAX_VOCAB ||
	    m->max_pos < 1 || m->max_pos > MAX_POS)
		fatal(EX_MODEL, "%s: dimensions out of range", path);
	if (model_layout(m) == -1)
		fatal(EX_MODEL, "%s: dimensions out of range", path);
	if (get64(hdr + 40) != m->data_bytes ||
	    (uint64_t)sb.st_size != HDR_SIZE + m->data_bytes)
		fatal(EX_MODEL, "%s: size does not match its header", path);
	want = m->data_bytes;
	if ((m->host = (float *)malloc(want)) == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	got = fread(m->host, 1, want, f);
	if (got != want)
		fatal(ferror(f) ? EX_IO : EX_MODEL, "%s: short read", path);
	fclose(f);
}

// Every tensor to the GPU: one allocation and one copy each.
static void
model_upload(struct model *m)
{
	m->dev = (float **)calloc(m->ntensors, sizeof *m->dev);
	if (m->dev == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	for (int i = 0; i < m->ntensors; i++) {
		size_t bytes = m->count[i] * sizeof(float);

		CK(cudaMalloc((void **)&m->dev[i], bytes));
		CK(cudaMemcpy(m->dev[i], m->host + m->off[i], bytes,
		    cudaMemcpyHostToDevice));
	}
	CK(cudaDeviceSynchronize());
}

// Tensor i: on the GPU, or on the host for -R.
static float *
W(const struct model *m, int i)
{
	return mode == M_REFERENCE ? m->host + m->off[i] : m->dev[i];
}

// ---- kernels ------------------------------------------------------------

#include "infer-kernels.cuh"

// ---- the operations, by mode --------------------------------------------

#define BLOCKS(n)	(((n) + 255) / 256)

// C = A op(B), batch times, as gemm_tiled describes.
static void
op_gemm(const float *A, int lda, long long sa, const float *B, int ldb,
    long long sb, int transb, float *C, int ldc, long long sc, int M, int N,
    int K, int batch)
{
	static const float one = 1.0f, zero = 0.0f;

	switch (mode) {
	case M_CUBLAS:
		// Row-major C = A B is column-major C^T = B^T A^T.
		if (batch == 1)
			BK(cb.sgemm(blas, transb ? CUBLAS_OP_T : CUBLAS_OP_N,
			    CUBLAS_OP_N, N, M, K, &one, B, ldb, A, lda, &zero,
			    C, ldc));
		else
			BK(cb.sgemm_batched(blas, transb ?
			    CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K,
			    &one, B, ldb, sb, A, lda, sa, &zero, C, ldc, sc,
			    batch));
		break;
	case M_KERNELS: {
		dim3 grid((N + IM_TILE - 1) / IM_TILE,
		    (M + IM_TILE - 1) / IM_TILE, batch), block(IM_TILE, IM_TILE);

		gemm_tiled<<<grid, block>>>(A, lda, sa, B, ldb, sb, transb, C,
		    ldc, sc, M, N, K);
		CK(cudaGetLastError());
		break;
	}
	case M_REFERENCE:
		for (int z = 0; z < batch; z++)
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++)
					C[z * sc + (size_t)i * ldc + j] =
					    im_gemm_elem(A + z * sa +
					    (size_t)i * lda, B + z * sb, ldb,
					    transb, K, j);
		break;
	}
}

// The elementwise kernels: 0 add_bias, 1 bias_gelu, 2 bias_residual.
static void
op_bias(int which, float *x, const float *y, const float *b, int rows, int n)
{
	if (mode != M_REFERENCE) {
		if (which == 0)
			add_bias<<<BLOCKS(rows * n), 256>>>(x, b, rows, n);
		else if (which == 1)
			bias_gelu<<<BLOCKS(rows * n), 256>>>(x, b, rows, n);
		else
			bias_residual<<<BLOCKS(rows * n), 256>>>(x, y, b, rows,
			    n);
		CK(cudaGetLastError());
		return;
	}
	for (int i = 0; i < rows * n; i++)
		if (which == 0)
			x[i] = im_add(x[i], b[i % n]);
		else if (which == 1)
			x[i] = im_gelu(im_add(x[i], b[i % n]));
		else
			x[i] = im_add(x[i], im_add(y[i], b[i % n]));
}

static void
op_layernorm(const float *in, int in_stride, float *out, const float *g,
    const float *b, int rows, int n)
{
	if (mode != M_REFERENCE) {
		layernorm<<<rows, IM_RED_THREADS>>>(in, in_stride, out, g, b,
		    rows, n);
		CK(cudaGetLastError());
		return;
	}
	for (int r = 0; r < rows; r++)
		im_layernorm_row(in + (size_t)r * in_stride, out + (size_t)r * n,
		    g, b, n);
}

static void
op_softmax(float *p, int rows, int n, float scale)
{
	if (mode != M_REFERENCE) {
		softmax<<<rows, IM_RED_THREADS>>>(p, rows, n, scale);
		CK(cudaGetLastError());
		return;
	}
	for (int r = 0; r < rows; r++)
		im_softmax_row(p + (size_t)r * n, n, scale);
}

static void
op_embed(float *x, const int *ids, const float *tok, const float *pos,
    int ntok, int seq, int d, int vocab)
{
	if (mode != M_REFERENCE) {
		embed<<<BLOCKS(ntok * d), 256>>>(x, ids, tok, pos, ntok, seq, d,
		    vocab);
		CK(cudaGetLastError());
		return;
	}
	for (int i = 0; i < ntok * d; i++) {
		int t = i / d, j = i % d;
		unsigned id = (unsigned)ids[t] % (unsigned)vocab;

		x[i] = im_add(tok[(size_t)id * d + j], pos[(t % seq) * d + j]);
	}
}

// ---- inference ----------------------------------------------------------

struct acts {
	int	 nseq, seq, ntok;
	int	*ids;
	float	*x, *h, *qkv, *scores, *att, *y, *u, *out;
};

static void *
buf_alloc(size_t bytes)
{
	void *p;

	if (mode == M_REFERENCE) {
		if ((p = calloc(1, bytes)) == NULL)
			fatal(EX_IO, "%s", strerror(ENOMEM));
	} else
		CK(cudaMalloc(&p, bytes));
	return p;
}

static void
acts_alloc(struct acts *a, const struct model *m, int nseq, int seq)
{
	size_t t = (size_t)nseq * seq, d = m->dim;

	a->nseq = nseq;
	a->seq = seq;
	a->ntok = (int)t;
	a->ids = (int *)buf_alloc(t * sizeof(int));
	a->x = (float *)buf_alloc(t * d * sizeof(float));
	a->h = (float *)buf_alloc(t * d * sizeof(float));
	a->qkv = (float *)buf_alloc(t * 3 * d * sizeof(float));
	a->scores = (float *)buf_alloc(t * seq * sizeof(float));
	a->att = (float *)buf_alloc(t * d * sizeof(float));
	a->y = (float *)buf_alloc(t * d * sizeof(float));
	a->u = (float *)buf_alloc(t * 4 * d * sizeof(float));
	a->out = (float *)buf_alloc(nseq * d * sizeof(float));
}

// One forward pass over a->ids; the result in a->out.
static void
forward(const struct model *m, struct acts *a)
{
	int d = (int)m->dim, T = a->ntok, S = a->seq;
	float scale = 1.0f / sqrtf((float)d);

	op_embed(a->x, a->ids, W(m, T_TOK), W(m, T_POS), T, S, d,
	    (int)m->vocab);
	for (int l = 0; l < (int)m->layers; l++) {
		// Attention: each sequence's S x S scores from Q and K.
		op_layernorm(a->x, d, a->h, W(m, T_LAYER(l, L_LN1G)),
		    W(m, T_LAYER(l, L_LN1B)), T, d);
		op_gemm(a->h, d, 0, W(m, T_LAYER(l, L_WQKV)), 3 * d, 0, 0,
		    a->qkv, 3 * d, 0, T, 3 * d, d, 1);
		op_bias(0, a->qkv, NULL, W(m, T_LAYER(l, L_BQKV)), T, 3 * d);
		op_gemm(a->qkv, 3 * d, (long long)S * 3 * d, a->qkv + d, 3 * d,
		    (long long)S * 3 * d, 1, a->scores, S, (long long)S * S, S,
		    S, d, a->nseq);
		op_softmax(a->scores, T, S, scale);
		op_gemm(a->scores, S, (long long)S * S, a->qkv + 2 * d, 3 * d,
		    (long long)S * 3 * d, 0, a->att, d, (long long)S * d, S, d,
		    S, a->nseq);
		op_gemm(a->att, d, 0, W(m, T_LAYER(l, L_WO)), d, 0, 0, a->y, d,
		    0, T, d, d, 1);
		op_bias(2, a->x, a->y, W(m, T_LAYER(l, L_BO)), T, d);
		// The MLP.
		op_layernorm(a->x, d, a->h, W(m, T_LAYER(l, L_LN2G)),
		    W(m, T_LAYER(l, L_LN2B)), T, d);
		op_gemm(a->h, d, 0, W(m, T_LAYER(l, L_W1)), 4 * d, 0, 0, a->u,
		    4 * d, 0, T, 4 * d, d, 1);
		op_bias(1, a->u, NULL, W(m, T_LAYER(l, L_B1)), T, 4 * d);
		op_gemm(a->u, 4 * d, 0, W(m, T_LAYER(l, L_W2)), d, 0, 0, a->y,
		    d, 0, T, d, 4 * d, 1);
		op_bias(2, a->x, a->y, W(m, T_LAYER(l, L_B2)), T, d);
	}
	// Each sequence's last token, normalised.
	op_layernorm(a->x + (size_t)(S - 1) * d, S * d, a->out,
	    W(m, T_LNF_G(m)), W(m, T_LNF_B(m)), a->nseq, d);
}

static int
run(const char *path, int nseq, int seq, int steps, int warmup,
    uint64_t seed)
{
	struct model m;
	struct acts a;
	double t0, t1, t2, t3, *lat, sum = 0.0, first = 0.0;
	int *ids, ntok = nseq * seq, total = warmup + steps;
	float *out;
	uint64_t h = 0xcbf29ce484222325ULL, s = seed;
	char device[256] = "cpu";

	t0 = now_s();
	if (mode != M_REFERENCE) {
		cudaDeviceProp prop;

		CK(cudaFree(0));
		CK(cudaGetDeviceProperties(&prop, 0));
		snprintf(device, sizeof device, "%s", prop.name);
		if (mode == M_CUBLAS) {
			blas_open();
			BK(cb.create(&blas));
		}
	}
	t1 = now_s();
	model_read(path, &m);
	if (seq > (int)m.max_pos)
		fatal(EX_USAGE, "-q %d: longer than the model's %u positions",
		    seq, m.max_pos);
	if ((long long)ntok * 4 * m.dim > INT_MAX ||
	    (long long)ntok * seq > INT_MAX)
		fatal(EX_USAGE, "%s: batch too large for this model", path);
	t2 = now_s();
	if (mode != M_REFERENCE)
		model_upload(&m);
	t3 = now_s();

	acts_alloc(&a, &m, nseq, seq);
	ids = (int *)malloc(ntok * sizeof *ids);
	out = (float *)malloc((size_t)nseq * m.dim * sizeof *out);
	lat = (double *)malloc((total + 1) * sizeof *lat);
	if (ids == NULL || out == NULL || lat == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	for (int k = 0; k < total; k++) {
		double ts;

		for (int t = 0; t < ntok; t++)
			ids[t] = (int)(splitmix(&s) % m.vocab);
		ts = now_s();	// the step: input in, network, output out
		if (mode == M_REFERENCE) {
			memcpy(a.ids, ids, ntok * sizeof *ids);
			forward(&m, &a);
			memcpy(out, a.out, (size_t)nseq * m.dim * sizeof *out);
		} else {
			CK(cudaMemcpyAsync(a.ids, ids, ntok * sizeof *ids,
			    cudaMemcpyHostToDevice, 0));
			forward(&m, &a);
			CK(cudaMemcpy(out, a.out, (size_t)nseq * m.dim *
			    sizeof *out, cudaMemcpyDeviceToHost));
		}
		h = fnv(h, out, (size_t)nseq * m.dim * sizeof *out);
		lat[k] = now_s() - ts;
		if (k == 0)
			first = lat[k];
	}
	for (int k = warmup; k < total; k++)
		sum += lat[k];
	qsort(lat + warmup, steps, sizeof *lat, cmp_double);

	printf("workload: infer\n");
	printf("item: sequence\n");
	printf("mode: %s\n", mode == M_CUBLAS ? "cublas" :
	    mode == M_KERNELS ? "kernels" : "reference");
	printf("device: \"%s\"\n", device);
	printf("model_bytes: %llu\n",
	    (unsigned long long)(HDR_SIZE + m.data_bytes));
	printf("dim: %u\nlayers: %u\nvocab: %u\n", m.dim, m.layers, m.vocab);
	printf("batch: %d\nseq_len: %d\nsteps: %d\nwarmup: %d\n", nseq, seq,
	    steps, warmup);
	printf("input_bytes: %zu\n", ntok * sizeof *ids);
	printf("output_bytes: %zu\n", (size_t)nseq * m.dim * sizeof *out);
	printf("init_s: %.6f\n", t1 - t0);
	printf("load_read_s: %.6f\n", t2 - t1);
	printf("load_upload_s: %.6f\n", t3 - t2);
	printf("load_s: %.6f\n", t3 - t1);
	printf("first_step_ms: %.3f\n", first * 1e3);
	if (steps > 0) {
		printf("step_ms: %.3f\n", (steps % 2 ? lat[warmup + steps / 2] :
		    (lat[warmup + steps / 2 - 1] + lat[warmup + steps / 2]) / 2)
		    * 1e3);
		printf("step_ms_mean: %.3f\n", sum / steps * 1e3);
		printf("step_ms_min: %.3f\n", lat[warmup] * 1e3);
		printf("step_ms_max: %.3f\n", lat[warmup + steps - 1] * 1e3);
		printf("items_per_s: %.2f\n", nseq * steps / sum);
		printf("tokens_per_s: %.1f\n", (double)ntok * steps / sum);
	}
	if (total > 0) {
		// Comparable across modes, whose last bits differ.
		double abs_sum = 0.0;

		for (size_t i = 0; i < (size_t)nseq * m.dim; i++)
			abs_sum += fabs(out[i]);
		printf("output_abs_mean: %.9g\n", abs_sum / (nseq * m.dim));
	}
	printf("checksum: \"%016llx\"\n", (unsigned long long)h);
	return 0;
}

int
main(int argc, char *argv[])
{
	int ch, gen = 0, nseq = 8, seq = 128, steps = 20, warmup = 2;
	uint32_t dim = 1024, layers = 0;
	uint64_t seed = 1, size = 0;
	int genonly = 0, runonly = 0, modes = 0;

	while ((ch = getopt(argc, argv, "b:d:ghKl:n:q:RS:s:w:")) != -1) {
		if (strchr("dls", ch) != NULL)
			genonly = ch;
		else if (strchr("bKnqRw", ch) != NULL)
			runonly = ch;
		switch (ch) {
		case 'b':
			nseq = (int)num(optarg, 1, 65535, ch);	// a grid's z
			break;
		case 'd':
			dim = (uint32_t)num(optarg, 1, MAX_DIM, ch);
			break;
		case 'g':
			gen = 1;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		case 'K':
			mode = M_KERNELS;
			modes++;
			break;
		case 'l':
			layers = (uint32_t)num(optarg, 1, MAX_LAYERS, ch);
			break;
		case 'n':
			steps = (int)num(optarg, 0, 1000000, ch);
			break;
		case 'q':
			seq = (int)num(optarg, 1, MAX_POS, ch);
			break;
		case 'R':
			mode = M_REFERENCE;
			modes++;
			break;
		case 'S':
			seed = (uint64_t)num(optarg, 0, LLONG_MAX, ch);
			break;
		case 's':
			size = size_arg(optarg);
			break;
		case 'w':
			warmup = (int)num(optarg, 0, 1000000, ch);
			break;
		default:
			usage(stderr, EX_USAGE);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 1)
		usage(stderr, EX_USAGE);
	if (gen ? runonly != 0 : genonly != 0) {
		fprintf(stderr, NAME ": -%c %s -g\n", gen ? runonly : genonly,
		    gen ? "does not go with" : "needs");
		usage(stderr, EX_USAGE);
	}
	if (modes > 1) {
		fprintf(stderr, NAME ": -K and -R exclude each other\n");
		usage(stderr, EX_USAGE);
	}
	if (gen) {
		if (layers == 0 && size == 0)
			size = 256ULL << 20;
		return model_generate(argv[0], dim, layers, size, seed);
	}
	return run(argv[0], nseq, seq, steps, warmup, seed);
}
