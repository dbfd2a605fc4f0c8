// graphs_cond: nodes made and set through the generic calls, and
// conditional nodes (runtime API).  Prints only what does not depend on
// timing or addresses:
//  1. cudaGraphAddNode: kernel, memset, copy, empty, child graph and
//     event record nodes, launched (values); an allocation node's
//     address given back; cudaGraphNodeSetParams on a memset node (a new
//     exec), cudaGraphExecNodeSetParams on an exec's (that exec only);
//     a child graph node's graph set on an exec
//     (cudaGraphExecChildGraphNodeSetParams); the node's own graph
//     (cudaGraphChildGraphNodeGetGraph: its nodes, the same handle, a
//     node added to it); codes: a reserved field set, parameters of
//     another node type;
//  2. conditional nodes: an if/else whose condition a kernel sets (both
//     ways, the kernel's argument set on the exec), a while whose body
//     counts its turns (twice: the default comes back at each launch),
//     one whose body a capture into it filled, a
//     switch of three bodies (in range, out of range); the node's type
//     and its bodies' nodes; a conditional node destroyed; codes: an if
//     of three bodies, a while of two, a switch of none;
//  3. batch memory-operation nodes (driver API, links -lcuda): two writes
//     launched (values), the node's parameters read back (count, types,
//     values), set on the graph (a new exec) and on an exec;
//  4. user objects: the program's references retained and released, a
//     graph's reference, an exec's, the destructor run only once the
//     last goes (waited for, up to 10 s); one moved into a graph and
//     released by it.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"graphs_cond"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

#define TESTUTIL	(TU_CHECK | TU_SOAKINC)
#include "testutil.h"

// Kernels the host backend has (tests/cuda/host-kernels.c).
__global__ void
condSet(cudaGraphConditionalHandle h, unsigned v)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		cudaGraphSetConditional(h, v);
}

__global__ void
condCount(cudaGraphConditionalHandle h, unsigned *c, unsigned limit)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		*c += 1;
		cudaGraphSetConditional(h, *c < limit);
	}
}

__global__ void
condAdd(unsigned *p, unsigned k)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		*p += k;
}

// The first element of d, and whether all N are the same.
static unsigned
first(const unsigned *d, int *same)
{
	static unsigned h[N];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	*same = 1;
	for (int i = 1; i < N; i++)
		if (h[i] != h[0])
			*same = 0;
	return h[0];
}

static unsigned
one(const unsigned *d)
{
	unsigned v;

	CK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
	return v;
}

static void
kernel_params(cudaGraphNodeParams *p, void *fn, void **args, unsigned grid,
    unsigned block)
{
	memset((void *)p, 0, sizeof *p);
	p->type = cudaGraphNodeTypeKernel;
	p->kernel.func = fn;
	p->kernel.gridDim = dim3(grid);
	p->kernel.blockDim = dim3(block);
	p->kernel.kernelParams = args;
}

static void
generic(cudaStream_t s)
{
	cudaGraph_t g, child, child2, cg, cg2;
	cudaGraphExec_t x, x2;
	cudaGraphNode_t k, ms, cp, em, ch, ev, al, c2, em2;
	cudaGraphNodeParams p = {};
	cudaEvent_t done;
	unsigned *a, *b, *c, *f;
	size_t n = N, nodes, n0, n1;
	void *args[2];
	int same;
	unsigned va, vb, vc;
	cudaError_t e;

	CK(cudaMalloc(&a, N * 4));
	CK(cudaMalloc(&b, N * 4));
	CK(cudaMalloc(&c, N * 4));
	CK(cudaMalloc(&f, N * 4));
	CK(cudaMemset(a, 0, N * 4));
	CK(cudaMemset(c, 0, N * 4));
	CK(cudaMemset(f, 0, N * 4));
	CK(cudaEventCreate(&done));

	// The child: one kernel on a.
	CK(cudaGraphCreate(&child, 0));
	args[0] = &a;
	args[1] = &n;
	kernel_params(&p, (void *)soakInc, args, N / 256, 256);
	CK(cudaGraphAddNode(&k, child, NULL, NULL, 0, &p));

	CK(cudaGraphCreate(&g, 0));
	kernel_params(&p, (void *)soakInc, args, N / 256, 256);
	CK(cudaGraphAddNode(&k, g, NULL, NULL, 0, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeMemset;
	p.memset.dst = b;
	p.memset.value = 7;
	p.memset.elementSize = 4;
	p.memset.width = N;
	p.memset.height = 1;
	CK(cudaGraphAddNode(&ms, g, NULL, NULL, 0, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeMemcpy;
	p.memcpy.copyParams.srcPtr = make_cudaPitchedPtr(b, N * 4, N * 4, 1);
	p.memcpy.copyParams.dstPtr = make_cudaPitchedPtr(c, N * 4, N * 4, 1);
	p.memcpy.copyParams.extent = make_cudaExtent(N * 4, 1, 1);
	p.memcpy.copyParams.kind = cudaMemcpyDeviceToDevice;
	CK(cudaGraphAddNode(&cp, g, &ms, NULL, 1, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEmpty;
	cudaGraphNode_t two[2] = { k, cp };
	CK(cudaGraphAddNode(&em, g, two, NULL, 2, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeGraph;
	p.graph.graph = child;
	CK(cudaGraphAddNode(&ch, g, &em, NULL, 1, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEventRecord;
	p.eventRecord.event = done;
	CK(cudaGraphAddNode(&ev, g, &ch, NULL, 1, &p));
	CK(cudaGraphGetNodes(g, NULL, &nodes));
	printf("generic nodes: %zu\n", nodes);

	// The node's own graph: one node; the same handle asked again; a
	// node added to it is the node's.
	CK(cudaGraphChildGraphNodeGetGraph(ch, &cg));
	CK(cudaGraphChildGraphNodeGetGraph(ch, &cg2));
	CK(cudaGraphGetNodes(cg, NULL, &n0));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEmpty;
	CK(cudaGraphAddNode(&em2, cg, NULL, NULL, 0, &p));
	CK(cudaGraphGetNodes(cg, NULL, &n1));
	printf("child's graph: %zu node, same handle %d, then %zu\n", n0,
	    cg == cg2, n1);

	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaEventSynchronize(done));
	va = first(a, &same);
	printf("launch: kernel and child %u (same %d)", va, same);
	vb = first(b, &same);
	printf(", memset %u (same %d)", vb, same);
	vc = first(c, &same);
	printf(", copy %u (same %d)\n", vc, same);

	// A memset node set on the graph: a new exec has it, the old not.
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeMemset;
	p.memset.dst = b;
	p.memset.value = 9;
	p.memset.elementSize = 4;
	p.memset.width = N;
	p.memset.height = 1;
	CK(cudaGraphNodeSetParams(ms, &p));
	CK(cudaGraphInstantiate(&x2, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("graph set: old exec %u", one(b));
	CK(cudaGraphLaunch(x2, s));
	CK(cudaStreamSynchronize(s));
	printf(", new exec %u", one(b));
	// And on the old exec only.
	p.memset.value = 11;
	CK(cudaGraphExecNodeSetParams(x, ms, &p));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf(", exec set %u", one(b));
	CK(cudaGraphLaunch(x2, s));
	CK(cudaStreamSynchronize(s));
	printf(", other exec %u\n", one(b));

	// The exec's child graph: the same shape, on f.
	CK(cudaGraphCreate(&child2, 0));
	args[0] = &f;
	kernel_params(&p, (void *)soakInc, args, N / 256, 256);
	CK(cudaGraphAddNode(&c2, child2, NULL, NULL, 0, &p));
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEmpty;
	CK(cudaGraphAddNode(&em2, child2, NULL, NULL, 0, &p));
	va = one(a);
	CK(cudaGraphExecChildGraphNodeSetParams(x, ch, child2));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("exec child set: a +%u, f %u\n", one(a) - va, one(f));

	// Kernel node attributes: set, read back, copied to another node.
	cudaKernelNodeAttrValue av, bv;
	memset((void *)&av, 0, sizeof av);
	av.cooperative = 1;
	CK(cudaGraphKernelNodeSetAttribute(k, cudaKernelNodeAttributeCooperative,
	    &av));
	memset((void *)&av, 0, sizeof av);
	av.accessPolicyWindow.base_ptr = a;
	av.accessPolicyWindow.num_bytes = 4096;
	av.accessPolicyWindow.hitRatio = 0.5f;
	av.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	av.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	CK(cudaGraphKernelNodeSetAttribute(k,
	    cudaKernelNodeAttributeAccessPolicyWindow, &av));
	memset((void *)&bv, 0, sizeof bv);
	CK(cudaGraphKernelNodeGetAttribute(k,
	    cudaKernelNodeAttributeCooperative, &bv));
	printf("kernel attrs: cooperative %d", bv.cooperative);
	memset((void *)&bv, 0, sizeof bv);
	CK(cudaGraphKernelNodeGetAttribute(k,
	    cudaKernelNodeAttributeAccessPolicyWindow, &bv));
	printf(", window %zu bytes, hit ratio %.2f", bv.accessPolicyWindow.num_bytes,
	    bv.accessPolicyWindow.hitRatio);
	CK(cudaGraphKernelNodeCopyAttributes(c2, k));
	memset((void *)&bv, 0, sizeof bv);
	CK(cudaGraphKernelNodeGetAttribute(c2,
	    cudaKernelNodeAttributeAccessPolicyWindow, &bv));
	printf(", copied window %zu bytes\n", bv.accessPolicyWindow.num_bytes);
	e = cudaGraphKernelNodeGetAttribute(ms,
	    cudaKernelNodeAttributeCooperative, &bv);
	printf("kernel attr of a memset node: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();

	// An allocation node's address comes back in the parameters.
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeMemAlloc;
	p.alloc.poolProps.allocType = cudaMemAllocationTypePinned;
	p.alloc.poolProps.location.type = cudaMemLocationTypeDevice;
	p.alloc.poolProps.location.id = 0;
	p.alloc.bytesize = 4096;
	CK(cudaGraphAddNode(&al, child2, NULL, NULL, 0, &p));
	printf("alloc node: address given %d\n", p.alloc.dptr != NULL);
	// The H200's driver (580) refuses to remove an allocation node.
	printf("alloc node removed: %s\n", cudaGetErrorName(
	    cudaGraphDestroyNode(al)));
	(void)cudaGetLastError();

	// Codes.
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEmpty;
	p.reserved0[1] = 1;
	e = cudaGraphAddNode(&em, g, NULL, NULL, 0, &p);
	printf("reserved field set: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeEventRecord;
	p.eventRecord.event = done;
	e = cudaGraphNodeSetParams(ms, &p);
	printf("event params on a memset node: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();

	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphExecDestroy(x2));
	CK(cudaGraphDestroy(g));
	CK(cudaGraphDestroy(child));
	CK(cudaGraphDestroy(child2));
	CK(cudaEventDestroy(done));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(f));
}

// A conditional node of type and size in g after dep (if not NULL).
static cudaError_t
cond_node(cudaGraphNode_t *n, cudaGraph_t g, cudaGraphNode_t dep,
    cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
    unsigned size, cudaGraph_t **body)
{
	cudaGraphNodeParams p = {};
	cudaError_t e;

	memset((void *)&p, 0, sizeof p);
	p.type = cudaGraphNodeTypeConditional;
	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	e = cudaGraphAddNode(n, g, dep != NULL ? &dep : NULL, NULL,
	    dep != NULL ? 1 : 0, &p);
	if (e == cudaSuccess && body != NULL)
		*body = p.conditional.phGraph_out;
	return e;
}

// A one-thread kernel node of fn with args in g.
static cudaGraphNode_t
tiny(cudaGraph_t g, void *fn, void **args)
{
	cudaGraphNodeParams p = {};
	cudaGraphNode_t n;

	kernel_params(&p, fn, args, 1, 1);
	CK(cudaGraphAddNode(&n, g, NULL, NULL, 0, &p));
	return n;
}

// Launches x and prints first and the count at p; sets the value that
// the exec's kernel node set gives the condition h to v, launches again
// and prints then and the count on the same line.
static void
relaunch(cudaGraphExec_t x, cudaStream_t s, cudaGraphNode_t set,
    cudaGraphConditionalHandle h, unsigned v, const unsigned *p,
    const char *first, const char *then)
{
	cudaKernelNodeParams kp;
	void *args[2] = { &h, &v };

	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("%s %u", first, one(p));
	CK(cudaGraphKernelNodeGetParams(set, &kp));
	kp.kernelParams = args;
	CK(cudaGraphExecKernelNodeSetParams(x, set, &kp));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf(", %s %u\n", then, one(p));
}

static void
conditionals(cudaStream_t s)
{
	cudaGraphConditionalHandle h;
	cudaGraph_t g, *body;
	cudaGraphExec_t x;
	cudaGraphNode_t set, cn;
	cudaGraphNodeType t;
	unsigned *p, v, k1 = 1, k100 = 100, k10 = 10, limit = 5;
	void *args[3];
	size_t n0, n1;
	cudaError_t e;

	CK(cudaMalloc(&p, 16));

	// if/else: a kernel sets the condition first.
	CK(cudaMemset(p, 0, 16));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
	v = 1;
	args[0] = &h;
	args[1] = &v;
	set = tiny(g, (void *)condSet, args);
	CK(cond_node(&cn, g, set, h, cudaGraphCondTypeIf, 2, &body));
	args[0] = &p;
	args[1] = &k1;
	tiny(body[0], (void *)condAdd, args);
	args[1] = &k100;
	tiny(body[1], (void *)condAdd, args);
	CK(cudaGraphNodeGetType(cn, &t));
	CK(cudaGraphGetNodes(body[0], NULL, &n0));
	CK(cudaGraphGetNodes(body[1], NULL, &n1));
	printf("if node: type conditional %d, bodies' nodes %zu %zu\n",
	    t == cudaGraphNodeTypeConditional, n0, n1);
	CK(cudaGraphInstantiate(&x, g, 0));
	relaunch(x, s, set, h, 0, p, "if: then", "else");
	CK(cudaGraphExecDestroy(x));
	// A conditional node destroyed takes its bodies; its handle, used
	// by no node now, keeps the graph from instantiating (the driver's
	// CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED).
	CK(cudaGraphDestroyNode(cn));
	e = cudaGraphInstantiate(&x, g, 0);
	printf("if destroyed, its handle unused: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	if (e == cudaSuccess)
		CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// while: the body counts its turns; the default comes back.
	CK(cudaMemset(p, 0, 16));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&h, g, 1,
	    cudaGraphCondAssignDefault));
	CK(cond_node(&cn, g, NULL, h, cudaGraphCondTypeWhile, 1, &body));
	args[0] = &h;
	args[1] = &p;
	args[2] = &limit;
	tiny(body[0], (void *)condCount, args);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("while: %u turns", one(p));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf(", again %u\n", one(p));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// A while body filled by a capture into it.
	cudaGraph_t got;
	CK(cudaMemset(p, 0, 16));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&h, g, 1,
	    cudaGraphCondAssignDefault));
	CK(cond_node(&cn, g, NULL, h, cudaGraphCondTypeWhile, 1, &body));
	CK(cudaStreamBeginCaptureToGraph(s, body[0], NULL, NULL, 0,
	    cudaStreamCaptureModeRelaxed));
	condCount<<<1, 1, 0, s>>>(h, p, 3);
	CK(cudaGetLastError());
	CK(cudaStreamEndCapture(s, &got));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("while captured: the body back %d, %u turns\n", got == body[0],
	    one(p));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	// switch of three bodies.
	CK(cudaMemset(p, 0, 16));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
	v = 2;
	args[0] = &h;
	args[1] = &v;
	set = tiny(g, (void *)condSet, args);
	CK(cond_node(&cn, g, set, h, cudaGraphCondTypeSwitch, 3, &body));
	args[0] = &p;
	args[1] = &k1;
	tiny(body[0], (void *)condAdd, args);
	args[1] = &k10;
	tiny(body[1], (void *)condAdd, args);
	args[1] = &k100;
	tiny(body[2], (void *)condAdd, args);
	CK(cudaGraphInstantiate(&x, g, 0));
	relaunch(x, s, set, h, 7, p, "switch:", "out of range");
	CK(cudaGraphExecDestroy(x));

	// Codes.
	e = cond_node(&cn, g, NULL, h, cudaGraphCondTypeIf, 3, NULL);
	printf("if of three bodies: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	e = cond_node(&cn, g, NULL, h, cudaGraphCondTypeWhile, 2, NULL);
	printf("while of two bodies: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	e = cond_node(&cn, g, NULL, h, cudaGraphCondTypeSwitch, 0, NULL);
	printf("switch of none: %s\n", cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaGraphDestroy(g));
	CK(cudaFree(p));
}

#define DK(x)	dcheck((x), __LINE__)

static void
dcheck(CUresult r, int line)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	printf(NAME ": driver error at line %d: %s\n", line,
	    name != NULL ? name : "?");
	exit(2);
}

// Two writes: a 32-bit one of v to p[0], a 64-bit one of v + 1 to p[2].
static void
memops(CUstreamBatchMemOpParams *op, unsigned *p, unsigned v)
{
	memset(op, 0, 2 * sizeof *op);
	op[0].operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	op[0].writeValue.address = (CUdeviceptr)p;
	op[0].writeValue.value = v;
	op[1].operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
	op[1].writeValue.address = (CUdeviceptr)(p + 2);
	op[1].writeValue.value64 = v + 1;
}

static void
batch(cudaStream_t s)
{
	CUDA_BATCH_MEM_OP_NODE_PARAMS bp, got;
	CUstreamBatchMemOpParams op[2];
	cudaGraphExec_t x, x2;
	unsigned *p, h[4];
	CUgraphNode n;
	CUcontext ctx;
	cudaGraph_t g;

	CK(cudaMalloc(&p, 16));
	CK(cudaMemset(p, 0, 16));
	DK(cuCtxGetCurrent(&ctx));
	CK(cudaGraphCreate(&g, 0));
	memops(op, p, 0x100);
	memset((void *)&bp, 0, sizeof bp);
	bp.ctx = ctx;
	bp.count = 2;
	bp.paramArray = op;
	DK(cuGraphAddBatchMemOpNode(&n, g, NULL, 0, &bp));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost));
	printf("batch node: %#x %#x\n", h[0], h[2]);
	memset((void *)&got, 0, sizeof got);
	DK(cuGraphBatchMemOpNodeGetParams(n, &got));
	printf("batch params: %u ops, types %d %d, values %#x %#llx\n",
	    got.count, (int)got.paramArray[0].operation,
	    (int)got.paramArray[1].operation,
	    (unsigned)got.paramArray[0].writeValue.value,
	    (unsigned long long)got.paramArray[1].writeValue.value64);
	memops(op, p, 0x200);
	DK(cuGraphBatchMemOpNodeSetParams(n, &bp));
	CK(cudaGraphInstantiate(&x2, g, 0));
	CK(cudaGraphLaunch(x2, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost));
	printf("batch set: %#x %#x", h[0], h[2]);
	memops(op, p, 0x300);
	DK(cuGraphExecBatchMemOpNodeSetParams(x, n, &bp));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(h, p, sizeof h, cudaMemcpyDeviceToHost));
	printf(", exec set %#x %#x\n", h[0], h[2]);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphExecDestroy(x2));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(p));
}

static void
dtor(void *p)
{
	__atomic_store_n((int *)p, 1, __ATOMIC_RELEASE);
}

// Whether *f became 1 within 10 s.
static int
waited(int *f)
{
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(f, __ATOMIC_ACQUIRE))
			return 1;
		usleep(1000);
	}
	return 0;
}

static int
now(int *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static void
user_objects(void)
{
	static int ran1, ran2;
	cudaUserObject_t o1, o2;
	cudaGraph_t g, g2;
	cudaGraphExec_t x;

	CK(cudaUserObjectCreate(&o1, &ran1, dtor, 1,
	    cudaUserObjectNoDestructorSync));
	CK(cudaUserObjectRetain(o1, 2));
	CK(cudaUserObjectRelease(o1, 2));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphRetainUserObject(g, o1, 1, 0));
	CK(cudaUserObjectRelease(o1, 1));
	printf("user object: held by a graph, ran %d", now(&ran1));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphDestroy(g));
	printf(", by an exec, ran %d", now(&ran1));
	CK(cudaGraphExecDestroy(x));
	printf(", all gone, ran %d\n", waited(&ran1));

	CK(cudaUserObjectCreate(&o2, &ran2, dtor, 1,
	    cudaUserObjectNoDestructorSync));
	CK(cudaGraphCreate(&g2, 0));
	CK(cudaGraphRetainUserObject(g2, o2, 1, cudaGraphUserObjectMove));
	printf("user object moved: ran %d", now(&ran2));
	CK(cudaGraphReleaseUserObject(g2, o2, 1));
	printf(", released by the graph, ran %d\n", waited(&ran2));
	CK(cudaGraphDestroy(g2));
}

int
main(void)
{
	cudaStream_t s;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	generic(s);
	conditionals(s);
	batch(s);
	user_objects();
	CK(cudaStreamDestroy(s));
	printf(NAME ": ok\n");
	return 0;
}
