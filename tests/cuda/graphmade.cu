// graphmade: what a program reads of, and does to, the graphs it captures,
// where Gleam's client makes a capture's listing itself (a capture of
// kernel launches alone, on one stream, by one thread, once the program
// has listed a graph: gleam-client(7)), so that a local run and a remote
// one compare line by line.  Each capture is a chain of four launches on
// n words: a fill, an affine map of the second half, a mix of the first
// half, an affine map of all (by cudaLaunchKernelEx with an attribute of
// the node alone, as cuBLAS launches).  The program lists the graphs
// (nodes, roots, edges, each node's neighbours and kernel parameters,
// nodes named by their place in the listing), runs them and checks the
// words against the CPU's, and changes them: a kernel node's parameters
// set, a node found in a clone, a node destroyed, an empty node and an
// edge added; captures with a memset or a fork onto a second stream (whose
// listings are the server's) and one destroyed unlisted.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"graphmade"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096
#define NODES	16

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_FILL_U32 | TU_AFFINE_U32 | TU_MIX_U32)
#include "testutil.h"

static cudaStream_t s, s2;
static cudaEvent_t fork_ev, join_ev;
static unsigned *d, *e, host[N];
static int nbad;

enum { PLAIN, MEMSET, FORK, PSS };

// The chain of step k on s (with a memset captured first, or the second
// half's map forked onto s2).
static void
chain(unsigned k, int how)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute a;
	cudaStream_t t = how == FORK ? s2 : s;

	if (how == MEMSET)
		CK(cudaMemsetAsync(e, 0, N * sizeof *e, s));
	fill_u32<<<N / 256, 256, 0, s>>>(d, 1000u * k + 1, N);
	if (how == FORK) {
		CK(cudaEventRecord(fork_ev, s));
		CK(cudaStreamWaitEvent(s2, fork_ev, 0));
	}
	affine_u32<<<N / 512, 256, 0, t>>>(d + N / 2, 3, k, N / 2);
	mix_u32<<<N / 512, 256, 0, s>>>(d, 5, k, N / 2);
	if (how == FORK) {
		CK(cudaEventRecord(join_ev, s2));
		CK(cudaStreamWaitEvent(s, join_ev, 0));
	}
	memset(&a, 0, sizeof a);
	a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
	a.val.programmaticStreamSerializationAllowed = how == PSS;
	cfg.gridDim = dim3(N / 256);
	cfg.blockDim = dim3(256);
	cfg.stream = s;
	cfg.attrs = &a;
	cfg.numAttrs = 1;
	CK(cudaLaunchKernelEx(&cfg, affine_u32, d, 2u * k + 1, 9u, N));
}

static cudaGraph_t
capture(unsigned k, int how)
{
	cudaGraph_t g;

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
	chain(k, how);
	CK(cudaStreamEndCapture(s, &g));
	return g;
}

// The words of step k's chain with the mix's id mix (0: the last map only
// as far as the graph still has it: last 0 leaves it out).
static void
want(unsigned k, unsigned mix, int last, unsigned *w)
{
	for (unsigned i = 0; i < N; i++) {
		unsigned v = 1000u * k + 1 + i * 2654435761u;

		if (i >= N / 2)
			v = v * 3 + k;
		else
			v = v * 31 + (mix << 16) + k;
		if (last)
			v = v * (2u * k + 1) + 9;
		w[i] = v;
	}
}

static void
run(const char *what, cudaGraphExec_t x, unsigned k, unsigned mix, int last)
{
	static unsigned w[N];

	CK(cudaGraphLaunch(x, s));
	CK(cudaMemcpyAsync(host, d, N * sizeof *d, cudaMemcpyDeviceToHost,
	    s));
	CK(cudaStreamSynchronize(s));
	want(k, mix, last, w);
	if (memcmp(host, w, sizeof w) != 0)
		nbad++;
	printf("%s: %08x %s\n", what, fnv(host, sizeof host),
	    memcmp(host, w, sizeof w) == 0 ? "ok" : "MISMATCH");
}

static int
index_of(cudaGraphNode_t *v, size_t n, cudaGraphNode_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return (int)i;
	return -1;
}

static const char *
kname(void *f)
{
	return f == (void *)fill_u32 ? "fill" : f == (void *)affine_u32 ?
	    "affine" : f == (void *)mix_u32 ? "mix" : "?";
}

static const char *
pname(unsigned *p)
{
	return p == d ? "d" : p == d + N / 2 ? "d+h" : "?";
}

// A kernel node's parameters as a line: function, geometry, arguments.
static void
show_kernel(cudaGraphNode_t node)
{
	cudaKernelNodeParams kp;
	void **a;

	CK(cudaGraphKernelNodeGetParams(node, &kp));
	a = kp.kernelParams;
	printf(" %s grid %u block %u shmem %u args %s", kname(kp.func),
	    kp.gridDim.x, kp.blockDim.x, kp.sharedMemBytes,
	    pname(*(unsigned **)a[0]));
	if (kp.func == (void *)fill_u32)
		printf(" %u %d", *(unsigned *)a[1], *(int *)a[2]);
	else
		printf(" %u %u %d", *(unsigned *)a[1], *(unsigned *)a[2],
		    *(int *)a[3]);
}

// g's listing, the nodes named by their place in it.
static void
show(const char *what, cudaGraph_t g)
{
	cudaGraphNode_t v[NODES], r[NODES], from[NODES], to[NODES];
	cudaGraphEdgeData ed[NODES];
	size_t n = NODES, nr = NODES, ne = NODES, i;

	CK(cudaGraphGetNodes(g, v, &n));
	CK(cudaGraphGetRootNodes(g, r, &nr));
	CK(cudaGraphGetEdges(g, from, to, ed, &ne));
	printf("%s: %zu nodes, %zu roots, %zu edges; roots", what, n, nr, ne);
	for (i = 0; i < nr; i++)
		printf(" %d", index_of(v, n, r[i]));
	printf("; edges");
	for (i = 0; i < ne; i++) {
		printf(" %d>%d", index_of(v, n, from[i]),
		    index_of(v, n, to[i]));
		// an edge's data where it is not the default
		if (ed[i].from_port != 0 || ed[i].to_port != 0 ||
		    ed[i].type != 0)
			printf("(port %d to %d type %d)", ed[i].from_port,
			    ed[i].to_port, ed[i].type);
	}
	printf("\n");
	for (i = 0; i < n; i++) {
		cudaGraphNodeType type;
		size_t nd = 0, nt = 0;

		CK(cudaGraphNodeGetType(v[i], &type));
		CK(cudaGraphNodeGetDependencies(v[i], NULL, NULL, &nd));
		CK(cudaGraphNodeGetDependentNodes(v[i], NULL, NULL, &nt));
		printf("  node %zu: type %d, %zu in, %zu out,", i, (int)type,
		    nd, nt);
		if (type == cudaGraphNodeTypeKernel)
			show_kernel(v[i]);
		printf("\n");
	}
}

static size_t
nodes(cudaGraph_t g, cudaGraphNode_t *v)
{
	size_t n = NODES;

	CK(cudaGraphGetNodes(g, v, &n));
	return n;
}

int
main(void)
{
	cudaGraphNode_t v[NODES], w[NODES], found, empty;
	cudaGraphExecUpdateResultInfo info;
	cudaGraphExec_t x;
	cudaKernelNodeParams kp;
	cudaGraph_t g, c;
	unsigned id;

	CK(cudaMalloc(&d, N * sizeof *d));
	CK(cudaMalloc(&e, N * sizeof *e));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming));

	// Before any listing: the first the program asks for.
	g = capture(0, PLAIN);
	show("capture 0", g);
	CK(cudaGraphDestroy(g));

	// Listed after other work was sent, run, then a node's
	// parameters set, the graph updated and run again.
	g = capture(1, PLAIN);
	show("capture 1", g);
	CK(cudaMemsetAsync(e, 1, N * sizeof *e, s2));
	show("capture 1 after a memset elsewhere", g);
	CK(cudaGraphInstantiate(&x, g, 0));
	run("capture 1 run", x, 1, 5, 1);
	nodes(g, v);
	CK(cudaGraphKernelNodeGetParams(v[2], &kp));
	id = 8;
	kp.kernelParams[1] = &id;
	CK(cudaGraphKernelNodeSetParams(v[2], &kp));
	printf("capture 1 node 2 set:");
	show_kernel(v[2]);
	printf("\n");
	CK(cudaGraphExecUpdate(x, g, &info));
	run("capture 1 updated run", x, 1, 8, 1);
	CK(cudaGraphExecDestroy(x));

	// A node found in a clone; a node destroyed.
	CK(cudaGraphClone(&c, g));
	CK(cudaGraphNodeFindInClone(&found, v[1], c));
	printf("capture 1's node 1 in a clone:");
	show_kernel(found);
	printf("\n");
	CK(cudaGraphDestroy(c));
	CK(cudaGraphDestroyNode(v[3]));
	show("capture 1 less node 3", g);
	CK(cudaGraphInstantiate(&x, g, 0));
	run("capture 1 less node 3 run", x, 1, 8, 0);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// Changed unlisted: an empty node after the last, an edge.
	g = capture(2, PLAIN);
	CK(cudaGraphClone(&c, g));
	nodes(c, w);
	CK(cudaGraphDestroy(c));
	printf("capture 2 cloned, listed\n");
	nodes(g, v);
	CK(cudaGraphAddEmptyNode(&empty, g, &v[3], 1));
	show("capture 2 and an empty node", g);
	CK(cudaGraphDestroy(g));
	g = capture(3, PLAIN);
	nodes(g, v);
	CK(cudaGraphAddDependencies(g, &v[0], &v[3], NULL, 1));
	show("capture 3 and an edge", g);
	CK(cudaGraphInstantiate(&x, g, 0));
	run("capture 3 run", x, 3, 5, 1);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// The server's listings: a memset captured, a fork.
	g = capture(4, MEMSET);
	show("capture 4 with a memset", g);
	CK(cudaGraphDestroy(g));
	g = capture(5, FORK);
	show("capture 5 forked", g);
	CK(cudaGraphInstantiate(&x, g, 0));
	run("capture 5 run", x, 5, 5, 1);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// The last launch with programmatic serialization: the edge into it
	// a programmatic one, as the server's driver makes it (the client
	// learns it from the first such listing, then makes the next).
	for (unsigned k = 8; k < 10; k++) {
		char what[64];

		g = capture(k, PSS);
		snprintf(what, sizeof what, "capture %u serialized", k);
		show(what, g);
		CK(cudaGraphInstantiate(&x, g, 0));
		snprintf(what, sizeof what, "capture %u run", k);
		run(what, x, k, 5, 1);
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));
	}

	// Destroyed unlisted; instantiated, run, listed after.
	g = capture(6, PLAIN);
	CK(cudaGraphDestroy(g));
	g = capture(7, PLAIN);
	CK(cudaGraphInstantiate(&x, g, 0));
	run("capture 7 run", x, 7, 5, 1);
	show("capture 7", g);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	CK(cudaEventDestroy(fork_ev));
	CK(cudaEventDestroy(join_ev));
	CK(cudaStreamDestroy(s2));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(e));
	CK(cudaFree(d));
	if (nbad) {
		printf(NAME ": %d runs wrong\n", nbad);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
