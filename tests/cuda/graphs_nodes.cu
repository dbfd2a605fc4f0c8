// graphs_nodes: a graph's nodes (runtime API).  Prints only what does not
// depend on timing or addresses, so a local and a remote run print the
// same:
//  1. a capture of a memset, a kernel, a device-to-device copy and a
//     second kernel: the nodes' types in cudaGraphGetNodes order, each
//     node's dependencies and dependents (as indices in that order), the
//     roots and the edges;
//  2. the kernel nodes' parameters read back: the function, the grid, the
//     block, shared memory, the argument values (pointers as which buffer
//     they are);
//  3. the graph instantiated and launched (a checksum), then new
//     parameters set on the exec's kernel node and launched (a checksum),
//     then on the graph's node, read back, instantiated again, launched;
//  4. a graph built explicitly: memset -> kernel -> device-to-device copy
//     -> event record, an empty node and a child graph (one kernel) after
//     it; counts, launch, checksums; edges added and removed, a node
//     destroyed (counts);
//  5. codes: a kernel node's parameters asked of a memset node, an edge
//     added twice; a memcpy node with a host pointer prints "ok or
//     refused" (the client refuses it: a node's host pointer would be the
//     client process's).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"graphs_nodes"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024
#define MAXN	16

#define TESTUTIL	(TU_CHECK | TU_VECADD | TU_SOAKINC | TU_FNV32)
#include "testutil.h"

static float *da, *db, *dc;
static unsigned *du, *du2, *du3;
static cudaStream_t s;

static unsigned
sum_u32(const unsigned *d)
{
	unsigned h[N];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	return fnv(h, sizeof h);
}

static unsigned
sum_f32(const float *d)
{
	float h[N];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	return fnv(h, sizeof h);
}

static const char *
type_name(cudaGraphNodeType t)
{
	switch (t) {
	case cudaGraphNodeTypeKernel:	return "kernel";
	case cudaGraphNodeTypeMemcpy:	return "memcpy";
	case cudaGraphNodeTypeMemset:	return "memset";
	case cudaGraphNodeTypeHost:	return "host";
	case cudaGraphNodeTypeGraph:	return "graph";
	case cudaGraphNodeTypeEmpty:	return "empty";
	case cudaGraphNodeTypeWaitEvent: return "wait-event";
	case cudaGraphNodeTypeEventRecord: return "event-record";
	default:			return "other";
	}
}

static const char *
which(const void *p)
{
	if (p == da) return "da";
	if (p == db) return "db";
	if (p == dc) return "dc";
	if (p == du) return "du";
	if (p == du2) return "du2";
	if (p == du3) return "du3";
	return "?";
}

static int
index_of(cudaGraphNode_t *v, size_t n, cudaGraphNode_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return (int)i;
	return -1;
}

static void
sort_ints(int *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

// The graph's nodes, roots, each node's dependencies and dependents (the
// indices sorted), the edges (sorted); returns the node count.
static size_t
show(const char *tag, cudaGraph_t g, cudaGraphNode_t *v)
{
	cudaGraphNode_t r[MAXN], a[MAXN], b[MAXN];
	size_t n = 0, nr = 0, ne = 0, k;
	int x[MAXN];

	CK(cudaGraphGetNodes(g, NULL, &n));
	if (n > MAXN) {
		printf(NAME ": FAIL %zu nodes\n", n);
		exit(1);
	}
	CK(cudaGraphGetNodes(g, v, &n));
	CK(cudaGraphGetRootNodes(g, NULL, &nr));
	CK(cudaGraphGetRootNodes(g, r, &nr));
	CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &ne));
	printf("%s: %zu nodes, %zu roots, %zu edges\n", tag, n, nr, ne);
	for (size_t i = 0; i < n; i++) {
		cudaGraphNodeType t;

		CK(cudaGraphNodeGetType(v[i], &t));
		k = MAXN;
		CK(cudaGraphNodeGetDependencies(v[i], a, NULL, &k));
		printf("  node %zu %-12s deps [", i, type_name(t));
		for (size_t j = 0; j < k; j++)
			x[j] = index_of(v, n, a[j]);
		sort_ints(x, k);
		for (size_t j = 0; j < k; j++)
			printf("%s%d", j ? " " : "", x[j]);
		k = MAXN;
		CK(cudaGraphNodeGetDependentNodes(v[i], a, NULL, &k));
		printf("] dependents [");
		for (size_t j = 0; j < k; j++)
			x[j] = index_of(v, n, a[j]);
		sort_ints(x, k);
		for (size_t j = 0; j < k; j++)
			printf("%s%d", j ? " " : "", x[j]);
		printf("]\n");
	}
	for (size_t i = 0; i < nr; i++)
		x[i] = index_of(v, n, r[i]);
	sort_ints(x, nr);
	printf("  roots [");
	for (size_t i = 0; i < nr; i++)
		printf("%s%d", i ? " " : "", x[i]);
	printf("]\n");
	if (ne > MAXN)
		ne = MAXN;
	CK(cudaGraphGetEdges(g, a, b, NULL, &ne));
	for (size_t i = 0; i < ne; i++)
		x[i] = index_of(v, n, a[i]) * 100 + index_of(v, n, b[i]);
	sort_ints(x, ne);
	printf("  edges [");
	for (size_t i = 0; i < ne; i++)
		printf("%s%d->%d", i ? " " : "", x[i] / 100, x[i] % 100);
	printf("]\n");
	return n;
}

static void
show_kernel(cudaGraphNode_t node)
{
	cudaKernelNodeParams p;

	CK(cudaGraphKernelNodeGetParams(node, &p));
	printf("  kernel %s grid %u,%u,%u block %u,%u,%u shmem %u",
	    p.func == (void *)vecAdd ? "vecAdd" :
	    p.func == (void *)soakInc ? "soakInc" : "?",
	    p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x, p.blockDim.y,
	    p.blockDim.z, p.sharedMemBytes);
	if (p.func == (void *)vecAdd)
		printf(" args %s %s %s %d\n",
		    which(*(void **)p.kernelParams[0]),
		    which(*(void **)p.kernelParams[1]),
		    which(*(void **)p.kernelParams[2]),
		    *(int *)p.kernelParams[3]);
	else if (p.func == (void *)soakInc)
		printf(" args %s %zu\n", which(*(void **)p.kernelParams[0]),
		    *(size_t *)p.kernelParams[1]);
	else
		printf("\n");
}

int
main(void)
{
	cudaGraphNode_t v[MAXN], kn[MAXN];
	cudaGraph_t g, eg, child;
	cudaGraphExec_t ge, ge2, ege;
	cudaEvent_t ev;
	float h[N];
	size_t n, nk = 0;

	for (int i = 0; i < N; i++)
		h[i] = (float)i * 0.5f;
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CK(cudaMalloc(&da, N * sizeof *da));
	CK(cudaMalloc(&db, N * sizeof *db));
	CK(cudaMalloc(&dc, N * sizeof *dc));
	CK(cudaMalloc(&du, N * sizeof *du));
	CK(cudaMalloc(&du2, N * sizeof *du2));
	CK(cudaMalloc(&du3, N * sizeof *du3));
	CK(cudaMemcpy(da, h, sizeof h, cudaMemcpyHostToDevice));
	for (int i = 0; i < N; i++)
		h[i] = (float)(N - i);
	CK(cudaMemcpy(db, h, sizeof h, cudaMemcpyHostToDevice));
	CK(cudaMemset(du3, 0, N * sizeof *du3));

	// 1. A capture, its nodes.
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaMemsetAsync(du, 3, N * sizeof *du, s));
	vecAdd<<<N / 256, 256, 0, s>>>(da, db, dc, N);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(du, dc, N / 2 * sizeof *du,
	    cudaMemcpyDeviceToDevice, s));
	soakInc<<<N / 128, 128, 0, s>>>(du, N);
	CK(cudaGetLastError());
	CK(cudaStreamEndCapture(s, &g));
	n = show("captured", g, v);

	// 2. Kernel nodes' parameters.
	for (size_t i = 0; i < n; i++) {
		cudaGraphNodeType t;

		CK(cudaGraphNodeGetType(v[i], &t));
		if (t == cudaGraphNodeTypeKernel) {
			kn[nk++] = v[i];
			show_kernel(v[i]);
		}
	}
	if (nk != 2) {
		printf(NAME ": FAIL %zu kernel nodes\n", nk);
		return 1;
	}
	// The same work captured again, listed and read as ggml does each
	// token (the capture's end may bring the listing along).
	{
		cudaGraph_t g2;
		cudaGraphNode_t v2[MAXN];
		size_t n2;

		CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
		vecAdd<<<N / 256, 256, 0, s>>>(da, db, dc, N);
		CK(cudaGetLastError());
		soakInc<<<N / 128, 128, 0, s>>>(du3, N);
		CK(cudaGetLastError());
		CK(cudaStreamEndCapture(s, &g2));
		n2 = show("recaptured", g2, v2);
		for (size_t i = 0; i < n2; i++)
			show_kernel(v2[i]);
		CK(cudaGraphDestroy(g2));
	}

	// 3. Launch, new parameters on the exec, on the graph.
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("launch: du %08x dc %08x\n", sum_u32(du), sum_f32(dc));
	{
		cudaKernelNodeParams p;
		void *args[4];
		int half = N / 2;

		CK(cudaGraphKernelNodeGetParams(kn[0], &p));
		args[0] = &db;
		args[1] = &db;
		args[2] = &dc;
		args[3] = &half;
		p.kernelParams = args;
		CK(cudaGraphExecKernelNodeSetParams(ge, kn[0], &p));
		CK(cudaMemset(dc, 0, N * sizeof *dc));
		CK(cudaGraphLaunch(ge, s));
		CK(cudaStreamSynchronize(s));
		printf("exec set (db+db, n/2): du %08x dc %08x\n", sum_u32(du),
		    sum_f32(dc));
		printf("graph's node unchanged:\n");
		show_kernel(kn[0]);

		p.gridDim = dim3(N / 512);
		p.blockDim = dim3(512);
		args[0] = &da;
		args[1] = &da;
		CK(cudaGraphKernelNodeSetParams(kn[0], &p));
		printf("graph set (da+da, n/2, 2x512):\n");
		show_kernel(kn[0]);
		CK(cudaGraphInstantiate(&ge2, g, 0));
		CK(cudaMemset(dc, 0, N * sizeof *dc));
		CK(cudaGraphLaunch(ge2, s));
		CK(cudaStreamSynchronize(s));
		printf("relaunch: du %08x dc %08x\n", sum_u32(du), sum_f32(dc));
	}

	// 4. A graph built explicitly.
	{
		cudaGraphNode_t ms, k1, cp, er, em, ch, ck;
		cudaMemsetParams mp;
		cudaKernelNodeParams kp;
		size_t nn = N;
		void *kargs[2] = { &du2, &nn };
		void *cargs[4] = { &da, &db, &dc, NULL };
		int nint = N;
		cudaError_t e;

		cargs[3] = &nint;
		CK(cudaGraphCreate(&eg, 0));
		mp = cudaMemsetParams();
		mp.dst = du2;
		mp.value = 0x01020304;
		mp.elementSize = 4;
		mp.width = N;
		mp.height = 1;
		CK(cudaGraphAddMemsetNode(&ms, eg, NULL, 0, &mp));
		kp = cudaKernelNodeParams();
		kp.func = (void *)soakInc;
		kp.gridDim = dim3(N / 256);
		kp.blockDim = dim3(256);
		kp.kernelParams = kargs;
		CK(cudaGraphAddKernelNode(&k1, eg, &ms, 1, &kp));
		CK(cudaGraphAddMemcpyNode1D(&cp, eg, &k1, 1, du3, du2,
		    N / 4 * sizeof *du3, cudaMemcpyDeviceToDevice));
		CK(cudaGraphAddEventRecordNode(&er, eg, &cp, 1, ev));
		CK(cudaGraphAddEmptyNode(&em, eg, &ms, 1));
		CK(cudaGraphCreate(&child, 0));
		kp.func = (void *)vecAdd;
		kp.gridDim = dim3(N / 256);
		kp.blockDim = dim3(256);
		kp.kernelParams = cargs;
		CK(cudaGraphAddKernelNode(&ck, child, NULL, 0, &kp));
		CK(cudaGraphAddChildGraphNode(&ch, eg, &em, 1, child));
		show("explicit", eg, v);
		CK(cudaMemset(dc, 0, N * sizeof *dc));
		CK(cudaGraphInstantiate(&ege, eg, 0));
		CK(cudaGraphLaunch(ege, s));
		CK(cudaStreamSynchronize(s));
		printf("explicit launch: du2 %08x du3 %08x dc %08x event %s\n",
		    sum_u32(du2), sum_u32(du3), sum_f32(dc),
		    cudaGetErrorName(cudaEventQuery(ev)));

		// Edges added and removed, a node destroyed.
		CK(cudaGraphAddDependencies(eg, &k1, &em, NULL, 1));
		show("edge k1->empty added", eg, v);
		e = cudaGraphAddDependencies(eg, &k1, &em, NULL, 1);
		printf("the same edge again: %s\n", cudaGetErrorName(e));
		CK(cudaGraphRemoveDependencies(eg, &k1, &em, NULL, 1));
		CK(cudaGraphDestroyNode(em));
		show("empty node destroyed", eg, v);

		// 5. Codes.
		e = cudaGraphKernelNodeGetParams(ms, &kp);
		printf("kernel params of a memset node: %s\n",
		    cudaGetErrorName(e));
		e = cudaGraphAddMemcpyNode1D(&cp, eg, NULL, 0, du3, h,
		    sizeof h, cudaMemcpyHostToDevice);
		printf("host-pointer memcpy node: %s\n",
		    e == cudaSuccess || e == cudaErrorNotSupported ?
		    "ok or refused" : cudaGetErrorName(e));
		cudaGetLastError();
		CK(cudaGraphExecDestroy(ege));
		CK(cudaGraphDestroy(child));
		CK(cudaGraphDestroy(eg));
	}

	CK(cudaGraphExecDestroy(ge2));
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(s));
	printf(NAME ": ok\n");
	return 0;
}
