// graphs_more: more graph node kinds and their parameters (runtime API).
// Prints only what does not depend on timing or addresses:
//  1. a graph of a memory allocation node, a memset of it, a kernel on
//     it, a copy out of it and a free node: the allocation's parameters
//     (bytes, type, location), the free node's address the same, two
//     launches' checksums;
//  2. the memset node's parameters read back, set on the graph's node and
//     on the exec's (checksums);
//  3. the copy node's parameters read back (width, which buffers);
//  4. an event record node's event read back, set, read again; set on
//     the exec;
//  5. the kernel node disabled in the exec, launched (checksum), enabled;
//  6. the device's graph memory trimmed (code);
//  7. codes: memset parameters of a kernel node, a free node of an
//     address that is no allocation;
//  8. a clone's node found from the original's (its type and grid), the
//     code of a graph asked as its own clone; graph and exec ids and a
//     node's graph (CUDA 13.1 entry points, by dlsym) where the driver
//     library has them, checked silently (stderr says they were).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>

#include <cuda_runtime.h>

#define NAME	"graphs_more"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

#define TESTUTIL	(TU_CHECK | TU_SOAKINC | TU_FNV32)
#include "testutil.h"

static unsigned *du, *du2;
static void *dmem;

static unsigned
sum_u32(const unsigned *d)
{
	unsigned h[N];

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	return fnv(h, sizeof h);
}

static const char *
which(const void *p)
{
	if (p == du) return "du";
	if (p == du2) return "du2";
	if (p == dmem) return "alloc";
	return "?";
}

int
main(void)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaGraphNode_t an, ms, kn, cp, fn, er;
	cudaMemAllocNodeParams ap;
	cudaMemsetParams mp;
	cudaKernelNodeParams kp;
	cudaMemcpy3DParms m;
	cudaEvent_t ev, ev2, got;
	cudaStream_t s;
	cudaError_t e;
	size_t nn = N;
	void *kargs[2] = { &dmem, &nn };
	void *dp;
	unsigned on;

	CK(cudaStreamCreate(&s));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&ev2, cudaEventDisableTiming));
	CK(cudaMalloc(&du, N * sizeof *du));
	CK(cudaMalloc(&du2, N * sizeof *du2));
	CK(cudaMemset(du, 0, N * sizeof *du));
	CK(cudaMemset(du2, 0, N * sizeof *du2));

	// 1. alloc -> memset -> kernel -> copy out -> free, event record.
	CK(cudaGraphCreate(&g, 0));
	memset(&ap, 0, sizeof ap);
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = 0;
	ap.bytesize = N * sizeof(unsigned);
	CK(cudaGraphAddMemAllocNode(&an, g, NULL, 0, &ap));
	dmem = ap.dptr;
	mp = cudaMemsetParams();
	mp.dst = dmem;
	mp.value = 5;
	mp.elementSize = 4;
	mp.width = N;
	mp.height = 1;
	CK(cudaGraphAddMemsetNode(&ms, g, &an, 1, &mp));
	kp = cudaKernelNodeParams();
	kp.func = (void *)soakInc;
	kp.gridDim = dim3(N / 256);
	kp.blockDim = dim3(256);
	kp.kernelParams = kargs;
	CK(cudaGraphAddKernelNode(&kn, g, &ms, 1, &kp));
	CK(cudaGraphAddMemcpyNode1D(&cp, g, &kn, 1, du, dmem,
	    N * sizeof *du, cudaMemcpyDeviceToDevice));
	CK(cudaGraphAddMemFreeNode(&fn, g, &cp, 1, dmem));
	CK(cudaGraphAddEventRecordNode(&er, g, &fn, 1, ev));
	{
		cudaMemAllocNodeParams q;

		CK(cudaGraphMemAllocNodeGetParams(an, &q));
		printf("alloc node: %zu bytes, type %d, location %d/%d, "
		    "address %s\n", q.bytesize, (int)q.poolProps.allocType,
		    (int)q.poolProps.location.type, q.poolProps.location.id,
		    which(q.dptr));
	}
	CK(cudaGraphMemFreeNodeGetParams(fn, &dp));
	printf("free node: address %s\n", which(dp));
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("launch: du %08x event %s\n", sum_u32(du),
	    cudaGetErrorName(cudaEventQuery(ev)));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("again: du %08x\n", sum_u32(du));

	// 2. The memset node's parameters.
	memset(&mp, 0, sizeof mp);
	CK(cudaGraphMemsetNodeGetParams(ms, &mp));
	printf("memset node: dst %s value %u element %u width %zu height "
	    "%zu\n", which(mp.dst), mp.value, mp.elementSize, mp.width,
	    mp.height);
	mp.value = 9;
	CK(cudaGraphExecMemsetNodeSetParams(ge, ms, &mp));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("exec memset 9: du %08x\n", sum_u32(du));
	mp.value = 0x11;
	mp.width = N / 2;
	CK(cudaGraphMemsetNodeSetParams(ms, &mp));
	memset(&mp, 0, sizeof mp);
	CK(cudaGraphMemsetNodeGetParams(ms, &mp));
	printf("graph memset: value %u width %zu\n", mp.value, mp.width);

	// 3. The copy node's parameters.
	memset(&m, 0, sizeof m);
	CK(cudaGraphMemcpyNodeGetParams(cp, &m));
	printf("memcpy node: %s -> %s, %zu bytes x %zu x %zu\n",
	    which(m.srcPtr.ptr), which(m.dstPtr.ptr), m.extent.width,
	    m.extent.height, m.extent.depth);
	m.dstPtr.ptr = du2;
	CK(cudaGraphExecMemcpyNodeSetParams(ge, cp, &m));

	// 4. The event node's event.
	CK(cudaGraphEventRecordNodeGetEvent(er, &got));
	printf("event node: %s\n", got == ev ? "ev" : got == ev2 ? "ev2" :
	    "?");
	CK(cudaGraphEventRecordNodeSetEvent(er, ev2));
	CK(cudaGraphEventRecordNodeGetEvent(er, &got));
	printf("event node set: %s\n", got == ev ? "ev" : got == ev2 ? "ev2" :
	    "?");
	CK(cudaGraphExecEventRecordNodeSetEvent(ge, er, ev2));

	// 5. The kernel node disabled, enabled.
	CK(cudaGraphNodeGetEnabled(ge, kn, &on));
	printf("kernel node enabled: %u\n", on);
	CK(cudaGraphNodeSetEnabled(ge, kn, 0));
	CK(cudaGraphNodeGetEnabled(ge, kn, &on));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("disabled (%u), copy to du2: du2 %08x du %08x event %s\n", on,
	    sum_u32(du2), sum_u32(du), cudaGetErrorName(cudaEventQuery(ev2)));
	CK(cudaGraphNodeSetEnabled(ge, kn, 1));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("enabled: du2 %08x\n", sum_u32(du2));

	// 6. Trim.
	printf("trim: %s\n", cudaGetErrorName(cudaDeviceGraphMemTrim(0)));

	// 7. Codes.
	e = cudaGraphMemsetNodeGetParams(kn, &mp);
	printf("memset params of a kernel node: %s\n", cudaGetErrorName(e));
	e = cudaGraphAddMemFreeNode(&fn, g, NULL, 0, (void *)0x1000);
	printf("free node of no allocation: %s\n", cudaGetErrorName(e));
	cudaGetLastError();

	// 8. Clones, ids.
	{
		typedef int (*graph_id_fn)(void *, unsigned *);
		typedef int (*node_graph_fn)(void *, void **);
		cudaGraph_t g3, g4;
		cudaGraphNode_t k3, k4;
		cudaGraphNodeType t;
		void *lib, *f1 = NULL, *f2 = NULL, *f3 = NULL;

		CK(cudaGraphCreate(&g3, 0));
		kargs[0] = &du2;
		CK(cudaGraphAddKernelNode(&k3, g3, NULL, 0, &kp));
		CK(cudaGraphClone(&g4, g3));
		CK(cudaGraphNodeFindInClone(&k4, k3, g4));
		CK(cudaGraphNodeGetType(k4, &t));
		kp = cudaKernelNodeParams();
		CK(cudaGraphKernelNodeGetParams(k4, &kp));
		printf("clone's node: %s grid %u, %s\n",
		    t == cudaGraphNodeTypeKernel ? "kernel" : "?", kp.gridDim.x,
		    k4 == k3 ? "the original's" : "its own");
		e = cudaGraphNodeFindInClone(&k4, k3, g3);
		printf("a graph as its own clone: %s\n", cudaGetErrorName(e));
		cudaGetLastError();
		// The CUDA 13.1 entry points, from the driver's library where
		// it has them (580 has not: a local run skips them).
		if ((lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) !=
		    NULL && (f1 = dlsym(lib, "cuGraphGetId")) != NULL &&
		    (f2 = dlsym(lib, "cuGraphExecGetId")) != NULL &&
		    (f3 = dlsym(lib, "cuGraphNodeGetContainingGraph")) != NULL) {
			unsigned a = 0, a2 = 1, b = 0, x = 0;
			void *cg = NULL;

			if (((graph_id_fn)f1)(g3, &a) != 0 ||
			    ((graph_id_fn)f1)(g3, &a2) != 0 ||
			    ((graph_id_fn)f1)(g4, &b) != 0 ||
			    ((graph_id_fn)f2)(ge, &x) != 0 ||
			    ((node_graph_fn)f3)(k4, &cg) != 0 ||
			    a != a2 || a == b || cg != (void *)g4) {
				printf(NAME ": FAIL graph ids %u %u %u, node's "
				    "graph %s\n", a, a2, b,
				    cg == (void *)g4 ? "right" : "wrong");
				return 1;
			}
			fprintf(stderr, NAME ": graph ids checked\n");
		}
		if (lib != NULL)
			dlclose(lib);
		cudaGetLastError();
		CK(cudaGraphDestroy(g4));
		CK(cudaGraphDestroy(g3));
	}

	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(ev));
	CK(cudaEventDestroy(ev2));
	CK(cudaStreamDestroy(s));
	printf(NAME ": ok\n");
	return 0;
}
