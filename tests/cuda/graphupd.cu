// graphupd: cudaGraphExecUpdate every step, as ggml's CUDA backend runs a
// decode.  Each step captures, on two streams joined by events, a fill of
// n words, then an affine map of their second half beside a mix of their
// first half, then an affine map of them all, with that step's arguments
// and n (so the grids change too; the last launch with an attribute, as
// cuBLAS's); lists the graph's nodes and reads their
// kernel parameters (ggml's check); updates the executable graph (or,
// where the update is refused, instantiates it again); launches it and
// reads the words back.  Step 6 captures one kernel more (another
// topology), step 12 another function at the mix's node, step 13 the mix
// again; at step 16 an empty node is added to the captured graph (its
// launches as before, its topology not).  Prints each step's update code and result, a checksum and
// whether the words are what the CPU computes, so that a local run and a
// remote one compare line by line.  Through Gleam the updates of a graph
// of the same shape go one-way (gleam-client(7)); a stale update would
// show as a MISMATCH.
//
// usage: graphupd [-ns]
// -n: the nodes are not listed (as llama.cpp does now: only the update);
// -s: all on one stream, no events (the same words).  graphupd_ns.cu is
// this program with -ns set (tests/gpu/run runs programs without
// arguments).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <cuda_runtime.h>

#define NAME	"graphupd"
#define CK(x)	check((x), __FILE__, __LINE__)
#define NMAX	(8192 + 20 * 256)
#define STEPS	20

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_FILL_U32 | TU_AFFINE_U32 | TU_MIX_U32)
#include "testutil.h"

static cudaStream_t s, s2;
static int lone;		// -s
static cudaEvent_t fork_ev, join_ev;
static unsigned *d, host[NMAX], want[NMAX];

static unsigned
grid(int n)
{
	return (unsigned)((n + 255) / 256);
}

// The last affine map by cudaLaunchKernelEx with a launch attribute, as
// cuBLAS launches: its value union holding other bytes each step beyond
// the member set (cuBLAS's stack did), which must not make each step's
// capture look new to the client.
static void
affine_ex(int k, int n)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute a;

	memset(&a, 0x5b + 17 * k, sizeof a);
	a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	a.val.programmaticStreamSerializationAllowed = 0;
	cfg.gridDim = dim3(grid(n));
	cfg.blockDim = dim3(256);
	cfg.stream = s;
	cfg.attrs = &a;
	cfg.numAttrs = 1;
	CK(cudaLaunchKernelEx(&cfg, affine_u32, d, 2u * k + 1, 9u, n));
}

// What step k computes, on the device (captured on s and s2) and here.
static void
enqueue(int k, int n, int extra, int swap)
{
	int h = n / 2;

	cudaStream_t t = lone ? s : s2;

	fill_u32<<<grid(n), 256, 0, s>>>(d, 1000u * k + 1, n);
	if (!lone) {
		CK(cudaEventRecord(fork_ev, s));
		CK(cudaStreamWaitEvent(s2, fork_ev, 0));
	}
	affine_u32<<<grid(n - h), 256, 0, t>>>(d + h, 3, k, n - h);
	if (swap)
		affine_u32<<<grid(h), 256, 0, s>>>(d, 7, k, h);
	else
		mix_u32<<<grid(h), 256, 0, s>>>(d, 5, k, h);
	if (!lone) {
		CK(cudaEventRecord(join_ev, s2));
		CK(cudaStreamWaitEvent(s, join_ev, 0));
	}
	affine_ex(k, n);
	if (extra)
		mix_u32<<<grid(n), 256, 0, s>>>(d, 6, k, n);
	for (int i = 0; i < n; i++) {
		unsigned v = 1000u * k + 1 + (unsigned)i * 2654435761u;

		if (i >= h)
			v = v * 3 + k;
		else if (swap)
			v = v * 7 + k;
		else
			v = v * 31 + (5u << 16) + k;
		v = v * (2u * k + 1) + 9;
		if (extra)
			v = v * 31 + (6u << 16) + k;
		want[i] = v;
	}
}

// ggml's reading of the nodes' kernel parameters: the count of kernel
// nodes whose parameters it could read.
static int
inspect(cudaGraph_t g)
{
	cudaGraphNode_t nodes[16];
	size_t n = 0, i;
	int ok = 0;

	CK(cudaGraphGetNodes(g, NULL, &n));
	if (n > 16)
		n = 16;
	CK(cudaGraphGetNodes(g, nodes, &n));
	for (i = 0; i < n; i++) {
		cudaGraphNodeType type;
		cudaKernelNodeParams kp;

		CK(cudaGraphNodeGetType(nodes[i], &type));
		if (type == cudaGraphNodeTypeKernel &&
		    cudaGraphKernelNodeGetParams(nodes[i], &kp) == cudaSuccess &&
		    kp.blockDim.x == 256)
			ok++;
	}
	return ok;
}

int
main(int argc, char **argv)
{
	cudaGraphExecUpdateResultInfo info;
	cudaGraph_t g = NULL;
	cudaGraphExec_t x = NULL;
#ifdef GRAPHUPD_NS
	int k, n, bad = 0, nolist = 1, ch;

	lone = 1;
#else
	int k, n, bad = 0, nolist = 0, ch;
#endif

	while ((ch = getopt(argc, argv, "ns")) != -1) {
		switch (ch) {
		case 'n':
			nolist = 1;
			break;
		case 's':
			lone = 1;
			break;
		default:
			fprintf(stderr, "usage: graphupd [-ns]\n");
			return 2;
		}
	}

	CK(cudaMalloc(&d, NMAX * sizeof *d));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming));
	for (k = 0; k < STEPS; k++) {
		cudaError_t e = cudaSuccess;
		int listed = 0, ok;

		n = 8192 + 256 * k + 3 * k;
		if (g != NULL)
			CK(cudaGraphDestroy(g));
		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
		enqueue(k, n, k == 6, k == 12);
		CK(cudaStreamEndCapture(s, &g));
		if (k == 16) {
			cudaGraphNode_t empty;

			CK(cudaGraphAddEmptyNode(&empty, g, NULL, 0));
		}
		info.result = cudaGraphExecUpdateSuccess;
		if (x == NULL)
			CK(cudaGraphInstantiate(&x, g, 0));
		else {
			listed = nolist ? 0 : inspect(g);
			e = cudaGraphExecUpdate(x, g, &info);
			if (e == cudaErrorGraphExecUpdateFailure) {
				(void)cudaGetLastError();
				CK(cudaGraphExecDestroy(x));
				CK(cudaGraphInstantiate(&x, g, 0));
			} else
				CK(e);
		}
		CK(cudaGraphLaunch(x, s));
		CK(cudaMemcpyAsync(host, d, n * sizeof *d,
		    cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		ok = memcmp(host, want, n * sizeof *d) == 0;
		bad += !ok;
		printf("step %2d: n %d, %d kernel nodes read, update %s "
		    "(result %d), %08x %s\n", k, n, listed, cudaGetErrorName(e),
		    (int)info.result, fnv(host, n * sizeof *d),
		    ok ? "ok" : "MISMATCH");
	}
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(fork_ev));
	CK(cudaEventDestroy(join_ev));
	CK(cudaStreamDestroy(s2));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(d));
	if (bad) {
		printf(NAME ": %d steps wrong\n", bad);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
