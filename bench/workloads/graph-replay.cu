// graph-replay: issue 24's graph-replay workload (bench/graph-replay).  A
// decode-step-like network: token embeddings, then L layers of a pre-norm
// GELU MLP with a residual add (x += gelu(layernorm(x) W1 + b1) W2 + b2),
// d x d weights, on B rows.  Its kernels (embed, layernorm, the tiled GEMM,
// bias+GELU, bias+residual) are bench/workloads/infer.cu's -K kernels, with
// the same code (infer-kernels.cuh, arithmetic in infer-math.h), so their
// host implementations in tests/cuda/host-kernels.c run it on
// gleam-serve's host backend, and -R, the same network on the CPU,
// agrees bit for bit.
//
// Every step copies 4 KiB of token ids in (cudaMemcpyAsync host to
// device), runs the network, copies 4 KiB of the output back
// (cudaMemcpyAsync device to host) and synchronizes the stream.  By
// default the network's kernels are captured once into a CUDA graph,
// instantiated, and each step launches the graph (one cudaGraphLaunch);
// with -e (eager) each step launches the 1 + 5L kernels one by one.  Both
// modes compute the same bits.
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>

#include <cuda_runtime.h>

#include "infer-math.h"

#define NAME		"graph-replay"

#define EX_CUDA		1	// a CUDA call failed
#define EX_USAGE	2
#define EX_IO		6

#define CK(x)		ck((x), __FILE__, __LINE__)

#define IO_BYTES	4096	// copied in, and back, each step
#define NIDS		(IO_BYTES / (int)sizeof(int))
#define VOCAB		1024
#define BLOCKS(n)	(((n) + 255) / 256)

enum mode { M_GRAPH, M_EAGER, M_REFERENCE };

static enum mode mode = M_GRAPH;

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
usage(FILE *f, int rc)
{
	fprintf(f, "usage: graph-replay [-epR] [-b batch] [-d dim] [-l layers]"
	    " [-n steps] [-S seed] [-w warmup]\n");
	exit(rc);
}

#include "workload.h"

// Uniform in [-a, a), from the top 24 bits: exact in a float.
static float
uniform(uint64_t *s, float a)
{
	float u = (float)(splitmix(s) >> 40) / 16777216.0f;	// [0, 1)

	return (2.0f * u - 1.0f) * a;
}

// ---- kernels: infer.cu's own (infer-kernels.cuh) ----------------------

#include "infer-kernels.cuh"

// ---- the network ---------------------------------------------------------

// Per layer: ln gain, ln bias, W1, b1, W2, b2.
enum { P_LNG, P_LNB, P_W1, P_B1, P_W2, P_B2, NP };

struct net {
	int		 d, layers, rows;
	float		*tok, *pos;		// VOCAB x d, rows x d
	float		**p;			// layers * NP tensors
	int		*ids;			// NIDS
	float		*x, *h, *u;		// rows x d each
};

static size_t
p_count(int k, int d)
{
	return k == P_W1 || k == P_W2 ? (size_t)d * d : (size_t)d;
}

// The weights from the seed, on the host.
static void
net_host(struct net *n, uint64_t seed)
{
	uint64_t s = seed;
	int d = n->d;
	float a;

	n->tok = (float *)malloc((size_t)VOCAB * d * sizeof(float));
	n->pos = (float *)malloc((size_t)n->rows * d * sizeof(float));
	n->p = (float **)calloc((size_t)n->layers * NP, sizeof *n->p);
	if (n->tok == NULL || n->pos == NULL || n->p == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	for (size_t i = 0; i < (size_t)VOCAB * d; i++)
		n->tok[i] = uniform(&s, 1.0f);
	for (size_t i = 0; i < (size_t)n->rows * d; i++)
		n->pos[i] = uniform(&s, 0.1f);
	// Weights of variance 1/d (uniform in +-sqrt(3/d)): the activations
	// keep their scale through a layer.
	a = sqrtf(3.0f / (float)d);
	for (int l = 0; l < n->layers; l++)
		for (int k = 0; k < NP; k++) {
			size_t c = p_count(k, d);
			float *t = (float *)malloc(c * sizeof *t);

			if (t == NULL)
				fatal(EX_IO, "%s", strerror(ENOMEM));
			for (size_t i = 0; i < c; i++)
				t[i] = k == P_LNG ? 1.0f + uniform(&s, 0.1f) :
				    k == P_W1 || k == P_W2 ? uniform(&s, a) :
				    uniform(&s, 0.1f);
			n->p[l * NP + k] = t;
		}
	n->ids = (int *)calloc(NIDS, sizeof(int));
	n->x = (float *)malloc((size_t)n->rows * d * sizeof(float));
	n->h = (float *)malloc((size_t)n->rows * d * sizeof(float));
	n->u = (float *)malloc((size_t)n->rows * d * sizeof(float));
	if (n->ids == NULL || n->x == NULL || n->h == NULL || n->u == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
}

static float *
upload(const float *h, size_t count)
{
	float *dp;

	CK(cudaMalloc((void **)&dp, count * sizeof *dp));
	CK(cudaMemcpy(dp, h, count * sizeof *dp, cudaMemcpyHostToDevice));
	return dp;
}

// The device copy of a host network (weights uploaded, buffers fresh).
static void
net_device(const struct net *h, struct net *g)
{
	size_t act = (size_t)h->rows * h->d;

	*g = *h;
	g->tok = upload(h->tok, (size_t)VOCAB * h->d);
	g->pos = upload(h->pos, act);
	g->p = (float **)calloc((size_t)h->layers * NP, sizeof *g->p);
	if (g->p == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	for (int i = 0; i < h->layers * NP; i++)
		g->p[i] = upload(h->p[i], p_count(i % NP, h->d));
	CK(cudaMalloc((void **)&g->ids, IO_BYTES));
	CK(cudaMemset(g->ids, 0, IO_BYTES));
	CK(cudaMalloc((void **)&g->x, act * sizeof(float)));
	CK(cudaMalloc((void **)&g->h, act * sizeof(float)));
	CK(cudaMalloc((void **)&g->u, act * sizeof(float)));
	CK(cudaDeviceSynchronize());
}

// The network's kernels on stream s: 1 + 5 layers of them.
static void
forward_gpu(const struct net *n, cudaStream_t s)
{
	int d = n->d, r = n->rows;
	dim3 grid((d + IM_TILE - 1) / IM_TILE, (r + IM_TILE - 1) / IM_TILE, 1),
	    block(IM_TILE, IM_TILE);

	embed<<<BLOCKS(r * d), 256, 0, s>>>(n->x, n->ids, n->tok, n->pos, r,
	    r, d, VOCAB);
	CK(cudaGetLastError());
	for (int l = 0; l < n->layers; l++) {
		float *const *p = n->p + l * NP;

		layernorm<<<r, IM_RED_THREADS, 0, s>>>(n->x, d, n->h, p[P_LNG],
		    p[P_LNB], r, d);
		CK(cudaGetLastError());
		gemm_tiled<<<grid, block, 0, s>>>(n->h, d, 0, p[P_W1], d, 0, 0,
		    n->u, d, 0, r, d, d);
		CK(cudaGetLastError());
		bias_gelu<<<BLOCKS(r * d), 256, 0, s>>>(n->u, p[P_B1], r, d);
		CK(cudaGetLastError());
		gemm_tiled<<<grid, block, 0, s>>>(n->u, d, 0, p[P_W2], d, 0, 0,
		    n->h, d, 0, r, d, d);
		CK(cudaGetLastError());
		bias_residual<<<BLOCKS(r * d), 256, 0, s>>>(n->x, n->h,
		    p[P_B2], r, d);
		CK(cudaGetLastError());
	}
}

// The same on the CPU (-R), with the kernels' arithmetic.
static void
forward_cpu(struct net *n)
{
	int d = n->d, r = n->rows;

	for (int t = 0; t < r; t++) {
		unsigned id = (unsigned)n->ids[t] % (unsigned)VOCAB;

		for (int j = 0; j < d; j++)
			n->x[(size_t)t * d + j] = im_add(n->tok[(size_t)id * d
			    + j], n->pos[(size_t)t * d + j]);
	}
	for (int l = 0; l < n->layers; l++) {
		float *const *p = n->p + l * NP;

		for (int t = 0; t < r; t++)
			im_layernorm_row(n->x + (size_t)t * d,
			    n->h + (size_t)t * d, p[P_LNG], p[P_LNB], d);
		for (int t = 0; t < r; t++)
			for (int j = 0; j < d; j++)
				n->u[(size_t)t * d + j] = im_gelu(im_add(
				    im_gemm_elem(n->h + (size_t)t * d, p[P_W1],
				    d, 0, d, j), p[P_B1][j]));
		for (int t = 0; t < r; t++)
			for (int j = 0; j < d; j++)
				n->h[(size_t)t * d + j] = im_gemm_elem(n->u +
				    (size_t)t * d, p[P_W2], d, 0, d, j);
		for (int i = 0; i < r * d; i++)
			n->x[i] = im_add(n->x[i], im_add(n->h[i],
			    p[P_B2][i % d]));
	}
}

int
main(int argc, char *argv[])
{
	int ch, rows = 8, d = 1024, layers = 8, steps = 200, warmup = 20;
	int pinned = 0, total, nout;
	uint64_t seed = 1, s;
	struct net hn, gn;
	cudaStream_t st = 0;
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	double capture = 0.0, first = 0.0, sum = 0.0, *lat, t0;
	int *ids;
	float *out;
	uint64_t h = 0xcbf29ce484222325ULL;
	char device[256] = "cpu";

	while ((ch = getopt(argc, argv, "b:d:ehl:n:pRS:w:")) != -1) {
		switch (ch) {
		case 'b':
			rows = (int)num(optarg, 1, 4096, ch);
			break;
		case 'd':
			d = (int)num(optarg, 1, 8192, ch);
			break;
		case 'e':
			mode = M_EAGER;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		case 'l':
			layers = (int)num(optarg, 0, 1024, ch);
			break;
		case 'n':
			steps = (int)num(optarg, 0, 10000000, ch);
			break;
		case 'p':
			pinned = 1;
			break;
		case 'R':
			mode = M_REFERENCE;
			break;
		case 'S':
			seed = (uint64_t)num(optarg, 0, LLONG_MAX, ch);
			break;
		case 'w':
			warmup = (int)num(optarg, 0, 10000000, ch);
			break;
		default:
			usage(stderr, EX_USAGE);
		}
	}
	if (optind != argc)
		usage(stderr, EX_USAGE);
	if (rows > NIDS)
		fatal(EX_USAGE, "-b %d: more rows than the %d ids of a step",
		    rows, NIDS);
	if ((long long)rows * d > INT_MAX / 2)
		fatal(EX_USAGE, "-b %d -d %d: too large", rows, d);
	total = warmup + steps;
	// The output read back each step: the first 4 KiB of x.
	nout = rows * d < IO_BYTES / (int)sizeof(float) ? rows * d :
	    IO_BYTES / (int)sizeof(float);

	hn.d = d;
	hn.layers = layers;
	hn.rows = rows;
	net_host(&hn, seed);
	if (mode != M_REFERENCE) {
		cudaDeviceProp prop;

		CK(cudaFree(0));
		CK(cudaGetDeviceProperties(&prop, 0));
		snprintf(device, sizeof device, "%s", prop.name);
		net_device(&hn, &gn);
		CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	}
	if (pinned && mode != M_REFERENCE) {
		CK(cudaMallocHost((void **)&ids, IO_BYTES));
		CK(cudaMallocHost((void **)&out, IO_BYTES));
	} else {
		ids = (int *)malloc(IO_BYTES);
		out = (float *)malloc(IO_BYTES);
	}
	lat = (double *)malloc((total + 1) * sizeof *lat);
	if (ids == NULL || out == NULL || lat == NULL)
		fatal(EX_IO, "%s", strerror(ENOMEM));
	memset(out, 0, IO_BYTES);

	if (mode == M_GRAPH) {
		t0 = now_s();
		CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
		forward_gpu(&gn, st);
		CK(cudaStreamEndCapture(st, &graph));
		CK(cudaGraphInstantiate(&exec, graph, 0));
		capture = now_s() - t0;
	}

	s = seed ^ 0x5bd1e995ULL;
	for (int k = 0; k < total; k++) {
		double ts;

		for (int i = 0; i < NIDS; i++)
			ids[i] = (int)(splitmix(&s) % VOCAB);
		ts = now_s();	// the step: ids in, network, output back
		if (mode == M_REFERENCE) {
			memcpy(hn.ids, ids, IO_BYTES);
			forward_cpu(&hn);
			memcpy(out, hn.x, nout * sizeof *out);
		} else {
			CK(cudaMemcpyAsync(gn.ids, ids, IO_BYTES,
			    cudaMemcpyHostToDevice, st));
			if (mode == M_GRAPH)
				CK(cudaGraphLaunch(exec, st));
			else
				forward_gpu(&gn, st);
			CK(cudaMemcpyAsync(out, gn.x, nout * sizeof *out,
			    cudaMemcpyDeviceToHost, st));
			CK(cudaStreamSynchronize(st));
		}
		h = fnv(h, out, nout * sizeof *out);
		lat[k] = now_s() - ts;
		if (k == 0)
			first = lat[k];
	}
	for (int k = warmup; k < total; k++)
		sum += lat[k];
	qsort(lat + warmup, steps, sizeof *lat, cmp_double);

	printf("workload: graph-replay\n");
	printf("mode: %s\n", mode == M_GRAPH ? "graph" : mode == M_EAGER ?
	    "eager" : "reference");
	printf("device: \"%s\"\n", device);
	printf("dim: %d\nlayers: %d\nbatch: %d\nvocab: %d\n", d, layers, rows,
	    VOCAB);
	printf("kernels_per_step: %d\n", 1 + 5 * layers);
	printf("pinned: %s\n", pinned ? "true" : "false");
	printf("steps: %d\nwarmup: %d\n", steps, warmup);
	printf("input_bytes: %d\n", IO_BYTES);
	printf("output_bytes: %zu\n", nout * sizeof *out);
	if (mode == M_GRAPH)
		printf("capture_ms: %.3f\n", capture * 1e3);
	if (total > 0)
		printf("first_step_ms: %.3f\n", first * 1e3);
	if (steps > 0) {
		printf("step_ms: %.4f\n", (steps % 2 ? lat[warmup + steps / 2] :
		    (lat[warmup + steps / 2 - 1] + lat[warmup + steps / 2]) / 2)
		    * 1e3);
		printf("step_ms_mean: %.4f\n", sum / steps * 1e3);
		printf("step_ms_min: %.4f\n", lat[warmup] * 1e3);
		printf("step_ms_max: %.4f\n", lat[warmup + steps - 1] * 1e3);
		printf("steps_per_s: %.1f\n", steps / sum);
	}
	if (total > 0) {
		double abs_sum = 0.0;

		for (int i = 0; i < nout; i++)
			abs_sum += fabs(out[i]);
		printf("output_abs_mean: %.9g\n", abs_sum / nout);
	}
	printf("checksum: \"%016llx\"\n", (unsigned long long)h);
	if (mode == M_GRAPH) {
		CK(cudaGraphExecDestroy(exec));
		CK(cudaGraphDestroy(graph));
	}
	return 0;
}
