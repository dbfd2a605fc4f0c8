// graphs_deps: stream attributes and a capture's dependencies (runtime
// API).  Prints only what does not depend on timing or addresses:
//  1. stream attributes: a synchronization policy and an access policy
//     window set and read back, copied to another stream; the priority
//     attribute against cudaStreamGetPriority; a launch-only attribute
//     on a stream (code);
//  2. a capture's open ends (cudaStreamGetCaptureInfo): how many, their
//     type, the same node handles as the graph's afterwards; replaced
//     and added to (cudaStreamUpdateCaptureDependencies): the edges the
//     next kernels got; the graph launched (checksum);
//  3. a capture into a graph of the program's after its empty node
//     (cudaStreamBeginCaptureToGraph): the same graph back, its nodes
//     and edge; launched (checksum);
//  4. codes: dependencies updated on a stream that does not capture, a
//     capture into a graph after another graph's node;
//  5. edge data: a programmatic edge between two kernel nodes
//     (cudaGraphAddDependencies with data), one more made with its node
//     (cudaGraphAddNode), read back (the ends alone: a lossy query), one
//     removed, the graph launched (every quarter its count).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"graphs_deps"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

#define TESTUTIL	(TU_CHECK | TU_SOAKINC)
#include "testutil.h"

// Every element of d is want.
static int
all_are(const unsigned *d, unsigned want)
{
	static unsigned h[N];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (h[i] != want)
			return 0;
	return 1;
}

static void
attributes(unsigned *d)
{
	cudaStream_t s, t;
	cudaStreamAttrValue v, w;
	int lo, hi, prio;
	cudaError_t e;

	CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
	CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, hi));
	CK(cudaStreamCreate(&t));
	memset(&v, 0, sizeof v);
	v.syncPolicy = cudaSyncPolicyYield;
	CK(cudaStreamSetAttribute(s, cudaStreamAttributeSynchronizationPolicy,
	    &v));
	memset(&w, 0, sizeof w);
	CK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy,
	    &w));
	printf("sync policy: %d\n", (int)w.syncPolicy);
	memset(&v, 0, sizeof v);
	v.accessPolicyWindow.base_ptr = d;
	v.accessPolicyWindow.num_bytes = 4096;
	v.accessPolicyWindow.hitRatio = 0.5f;
	v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	CK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow,
	    &v));
	memset(&w, 0, sizeof w);
	CK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow,
	    &w));
	printf("window: %s, %zu bytes, hit ratio %.2f, hit %d, miss %d\n",
	    w.accessPolicyWindow.base_ptr == d ? "d" : "elsewhere",
	    w.accessPolicyWindow.num_bytes,
	    (double)w.accessPolicyWindow.hitRatio,
	    (int)w.accessPolicyWindow.hitProp,
	    (int)w.accessPolicyWindow.missProp);
	CK(cudaStreamCopyAttributes(t, s));
	memset(&w, 0, sizeof w);
	CK(cudaStreamGetAttribute(t, cudaStreamAttributeSynchronizationPolicy,
	    &w));
	printf("copied sync policy: %d\n", (int)w.syncPolicy);
	memset(&w, 0, sizeof w);
	CK(cudaStreamGetAttribute(t, cudaStreamAttributeAccessPolicyWindow,
	    &w));
	printf("copied window: %zu bytes\n", w.accessPolicyWindow.num_bytes);
	CK(cudaStreamGetPriority(s, &prio));
	memset(&w, 0, sizeof w);
	CK(cudaStreamGetAttribute(s, cudaStreamAttributePriority, &w));
	printf("priority attribute matches: %d\n", w.priority == prio);
	e = cudaStreamSetAttribute(s, cudaLaunchAttributeCooperative, &v);
	printf("cooperative on a stream: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaStreamDestroy(s));
	CK(cudaStreamDestroy(t));
}

static int
has(const cudaGraphNode_t *v, size_t n, cudaGraphNode_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static void
dependencies(unsigned *d)
{
	cudaStream_t s;
	cudaStreamCaptureStatus st;
	cudaGraph_t g, cg;
	cudaGraphExec_t x;
	cudaGraphNode_t k1, k2, k3, k4, nodes[8], from[8], to[8];
	const cudaGraphNode_t *deps;
	const cudaGraphEdgeData *ed;
	cudaGraphNodeType type;
	unsigned long long id;
	size_t n, ne;
	cudaError_t e;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMemset(d, 0, N * sizeof *d));
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaStreamGetCaptureInfo(s, &st, &id, &cg, &deps, &ed, &n));
	printf("before any work: %zu open ends\n", n);
	soakInc<<<N / 256, 256, 0, s>>>(d, N);
	CK(cudaGetLastError());
	CK(cudaStreamGetCaptureInfo(s, &st, &id, &cg, &deps, &ed, &n));
	CK(cudaGraphNodeGetType(deps[0], &type));
	printf("after a kernel: %zu open end, a kernel: %d\n", n,
	    type == cudaGraphNodeTypeKernel);
	k1 = deps[0];
	soakInc<<<N / 256, 256, 0, s>>>(d, N);
	CK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &n));
	k2 = deps[0];
	printf("after another: %zu open end, a new node: %d\n", n, k2 != k1);
	// The next kernel after k1 alone, then after it and k2.
	CK(cudaStreamUpdateCaptureDependencies(s, &k1, NULL, 1,
	    cudaStreamSetCaptureDependencies));
	CK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &n));
	printf("set: %zu open end, k1: %d\n", n, n == 1 && deps[0] == k1);
	soakInc<<<N / 256, 256, 0, s>>>(d, N);
	CK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &n));
	k3 = deps[0];
	CK(cudaStreamUpdateCaptureDependencies(s, &k2, NULL, 1,
	    cudaStreamAddCaptureDependencies));
	CK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &n));
	printf("added: %zu open ends, k3 and k2: %d\n", n,
	    n == 2 && has(deps, n, k3) && has(deps, n, k2));
	soakInc<<<N / 256, 256, 0, s>>>(d, N);
	CK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, NULL, &n));
	k4 = deps[0];
	CK(cudaStreamEndCapture(s, &g));
	printf("the capture's graph: %d\n", g == cg);
	n = 8;
	CK(cudaGraphGetNodes(g, nodes, &n));
	printf("nodes: %zu, the ends' handles among them: %d\n", n,
	    has(nodes, n, k1) && has(nodes, n, k2) && has(nodes, n, k3) &&
	    has(nodes, n, k4));
	ne = 8;
	CK(cudaGraphGetEdges(g, from, to, NULL, &ne));
	// In order of the nodes' numbers, whatever the driver's order.
	int pair[8];

	for (size_t i = 0; i < ne; i++) {
		cudaGraphNode_t a = from[i], b = to[i];

		pair[i] = (a == k1 ? 1 : a == k2 ? 2 : a == k3 ? 3 : 4) * 10 +
		    (b == k1 ? 1 : b == k2 ? 2 : b == k3 ? 3 : 4);
	}
	for (size_t i = 1; i < ne; i++)
		for (size_t j = i; j > 0 && pair[j - 1] > pair[j]; j--) {
			int t = pair[j];

			pair[j] = pair[j - 1];
			pair[j - 1] = t;
		}
	printf("edges: %zu", ne);
	for (size_t i = 0; i < ne; i++)
		printf(" k%d->k%d", pair[i] / 10, pair[i] % 10);
	printf("\n");
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("launched: every element 4: %d\n", all_are(d, 4));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// Not capturing: nothing to update.
	e = cudaStreamUpdateCaptureDependencies(s, &k1, NULL, 0,
	    cudaStreamSetCaptureDependencies);
	printf("update with no capture: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaStreamDestroy(s));
}

static void
into_graph(unsigned *d)
{
	cudaStream_t s;
	cudaGraph_t g, h, got;
	cudaGraphExec_t x;
	cudaGraphNode_t empty, other, nodes[4], from[4], to[4];
	cudaGraphNodeType t0, t1;
	size_t n, ne;
	cudaError_t e;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMemset(d, 0, N * sizeof *d));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddEmptyNode(&empty, g, NULL, 0));
	CK(cudaStreamBeginCaptureToGraph(s, g, &empty, NULL, 1,
	    cudaStreamCaptureModeGlobal));
	soakInc<<<N / 256, 256, 0, s>>>(d, N);
	CK(cudaGetLastError());
	CK(cudaStreamEndCapture(s, &got));
	printf("captured into: the same graph: %d\n", got == g);
	n = 4;
	CK(cudaGraphGetNodes(g, nodes, &n));
	ne = 4;
	CK(cudaGraphGetEdges(g, from, to, NULL, &ne));
	CK(cudaGraphNodeGetType(from[0], &t0));
	CK(cudaGraphNodeGetType(to[0], &t1));
	printf("into: %zu nodes, %zu edge, empty first: %d, kernel after: "
	    "%d\n", n, ne, from[0] == empty && t0 == cudaGraphNodeTypeEmpty,
	    t1 == cudaGraphNodeTypeKernel);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("into: launched twice: every element 2: %d\n", all_are(d, 2));
	CK(cudaGraphExecDestroy(x));

	// After a node of another graph: refused, and nothing captures.
	CK(cudaGraphCreate(&h, 0));
	CK(cudaGraphAddEmptyNode(&other, h, NULL, 0));
	e = cudaStreamBeginCaptureToGraph(s, g, &other, NULL, 1,
	    cudaStreamCaptureModeGlobal);
	printf("into after another graph's node: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	cudaStreamCaptureStatus st;
	CK(cudaStreamIsCapturing(s, &st));
	printf("capturing after that: %d\n", (int)st);
	CK(cudaGraphDestroy(h));
	CK(cudaGraphDestroy(g));
	CK(cudaStreamDestroy(s));
}

// The element counts of d's four quarters, as "a b c d" (each the value
// every element of the quarter has, or -1).
static void
quarters(const unsigned *d, char *out, size_t len)
{
	static unsigned h[N];
	int q[4];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	for (int k = 0; k < 4; k++) {
		q[k] = (int)h[k * N / 4];
		for (int i = k * N / 4; i < (k + 1) * N / 4; i++)
			if (h[i] != (unsigned)q[k])
				q[k] = -1;
	}
	snprintf(out, len, "%d %d %d %d", q[0], q[1], q[2], q[3]);
}

static void
kparams(cudaKernelNodeParams *p, unsigned **d, size_t *n, void **args)
{
	*p = cudaKernelNodeParams();
	args[0] = d;
	args[1] = n;
	p->func = (void *)soakInc;
	p->gridDim = dim3(N / 4 / 256);
	p->blockDim = dim3(256);
	p->kernelParams = args;
}

static void
edge_data(unsigned *d)
{
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t k1, k2, k3, from[4], to[4], deps[4];
	cudaGraphEdgeData ed, got[4];
	cudaKernelNodeParams p1, p2;
	cudaGraphNodeParams np = {};
	unsigned *q1 = d, *q2 = d + N / 4, *q3 = d + N / 2;
	void *a1[2], *a2[2], *a3[2];
	size_t quarter = N / 4, ne, n;
	char qs[64];

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMemset(d, 0, N * sizeof *d));
	CK(cudaGraphCreate(&g, 0));
	kparams(&p1, &q1, &quarter, a1);
	kparams(&p2, &q2, &quarter, a2);
	CK(cudaGraphAddKernelNode(&k1, g, NULL, 0, &p1));
	CK(cudaGraphAddKernelNode(&k2, g, NULL, 0, &p2));
	memset(&ed, 0, sizeof ed);
	ed.from_port = cudaGraphKernelNodePortProgrammatic;
	ed.type = cudaGraphDependencyTypeProgrammatic;
	CK(cudaGraphAddDependencies(g, &k1, &k2, &ed, 1));
	// A third kernel after the second, its edge made with the node.
	np.type = cudaGraphNodeTypeKernel;
	a3[0] = &q3;
	a3[1] = &quarter;
	np.kernel.func = (void *)soakInc;
	np.kernel.gridDim = dim3(N / 4 / 256);
	np.kernel.blockDim = dim3(256);
	np.kernel.kernelParams = a3;
	ed.from_port = cudaGraphKernelNodePortLaunchCompletion;
	CK(cudaGraphAddNode(&k3, g, &k2, &ed, 1, &np));
	ne = 0;
	CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &ne));
	printf("edge data: %zu edges counted\n", ne);
	ne = 4;
	printf("edge data: the ends alone: %s\n",
	    cudaGetErrorName(cudaGraphGetEdges(g, from, to, NULL, &ne)));
	(void)cudaGetLastError();
	ne = 4;
	memset(got, 0xff, sizeof got);
	CK(cudaGraphGetEdges(g, from, to, got, &ne));
	for (size_t i = 0; i < ne; i++)
		printf("edge data: k%d->k%d port %d to %d type %d\n",
		    from[i] == k1 ? 1 : from[i] == k2 ? 2 : 3,
		    to[i] == k1 ? 1 : to[i] == k2 ? 2 : 3,
		    (int)got[i].from_port, (int)got[i].to_port,
		    (int)got[i].type);
	n = 4;
	memset(got, 0xff, sizeof got);
	CK(cudaGraphNodeGetDependencies(k3, deps, got, &n));
	printf("edge data: k3 after k2 %d, type %d\n", n == 1 &&
	    deps[0] == k2, (int)got[0].type);
	// Removing takes the edge's data; the default names no such edge.
	printf("edge data: removed as a default edge: %s\n",
	    cudaGetErrorName(cudaGraphRemoveDependencies(g, &k1, &k2, NULL,
	    1)));
	(void)cudaGetLastError();
	// The H200's driver (580) removed it as a default edge above, so
	// this finds none: its code.
	ed.from_port = cudaGraphKernelNodePortProgrammatic;
	printf("edge data: removed again with its data: %s\n",
	    cudaGetErrorName(cudaGraphRemoveDependencies(g, &k1, &k2, &ed,
	    1)));
	(void)cudaGetLastError();
	ne = 0;
	CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &ne));
	printf("edge data: %zu edge after the removal\n", ne);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	quarters(d, qs, sizeof qs);
	printf("edge data: launched twice: quarters %s\n", qs);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaStreamDestroy(s));
}

int
main(void)
{
	unsigned *d;

	CK(cudaMalloc(&d, N * sizeof *d));
	attributes(d);
	dependencies(d);
	into_graph(d);
	edge_data(d);
	CK(cudaFree(d));
	printf(NAME ": ok\n");
	return 0;
}
