// graphs_host: host functions in graphs (runtime API).  Prints only what
// does not depend on timing or addresses:
//  1. an explicit graph kernel -> host node A -> kernel -> host node B,
//     launched three times on a stream: after the synchronization every
//     callback has run (A's sleeps first), in order, on one thread that
//     is not the program's; the kernels' checksum;
//  2. the host node's parameters read back (which function, which data),
//     set on the graph's node (a new exec runs the new function) and on
//     an exec's node;
//  3. cudaLaunchHostFunc on a capturing stream: the captured graph's node
//     types, two launches' callbacks in order, the values they saw;
//  4. a launch that nobody synchronizes: its callback runs all the same
//     (the program waits for a flag, up to 10 s);
//  5. codes: a host node with no function; on stderr, what a CUDA call
//     made inside a callback returned (the driver may refuse it; through
//     Gleam it is refused: a callback must not wait for itself).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define NAME	"graphs_host"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

#define TESTUTIL	(TU_CHECK | TU_SOAKINC | TU_FNV32)
#include "testutil.h"

// The callbacks' log: what ran, in order.
static char	 trail[256];
static int	 ncalls;
static pthread_t main_thread;
static int	 on_main;
static int	 nested = -1;	// a CUDA call's code inside a callback
static int	 tag_a = 'A', tag_b = 'B', tag_c = 'C', tag_x = 'x', tag_y = 'y';

static void
note(void *p)
{
	size_t n = strlen(trail);

	if (n + 1 < sizeof trail) {
		trail[n] = (char)*(int *)p;
		trail[n + 1] = '\0';
	}
	ncalls++;
	if (pthread_equal(pthread_self(), main_thread))
		on_main++;
}

// A slow one: a synchronization must wait for it all the same.
static void CUDART_CB
cb_slow(void *p)
{
	usleep(20000);
	note(p);
}

static void CUDART_CB
cb_note(void *p)
{
	note(p);
}

static volatile int flag;

static void CUDART_CB
cb_flag(void *p)
{
	(void)p;
	flag = 1;
}

static void CUDART_CB
cb_nested(void *p)
{
	nested = (int)cudaStreamQuery(0);
	note(p);
}

static const char *
type_name(cudaGraphNodeType t)
{
	switch (t) {
	case cudaGraphNodeTypeKernel: return "kernel";
	case cudaGraphNodeTypeHost: return "host";
	case cudaGraphNodeTypeMemset: return "memset";
	case cudaGraphNodeTypeEmpty: return "empty";
	default: return "other";
	}
}

static void
reset(void)
{
	trail[0] = '\0';
	ncalls = 0;
}

int
main(void)
{
	cudaGraph_t g, cg;
	cudaGraphExec_t ge, ge2, ce;
	cudaGraphNode_t k1, h1, k2, h2, nodes[8];
	cudaKernelNodeParams kp;
	cudaHostNodeParams hp, q;
	cudaStream_t s;
	unsigned *du, h[N];
	size_t nn = N, n;
	void *kargs[2];

	main_thread = pthread_self();
	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&du, N * sizeof *du));
	CK(cudaMemset(du, 0, N * sizeof *du));
	kargs[0] = &du;
	kargs[1] = &nn;

	// 1. kernel -> A (slow) -> kernel -> B, three launches.
	CK(cudaGraphCreate(&g, 0));
	kp = cudaKernelNodeParams();
	kp.func = (void *)soakInc;
	kp.gridDim = dim3(N / 256);
	kp.blockDim = dim3(256);
	kp.kernelParams = kargs;
	CK(cudaGraphAddKernelNode(&k1, g, NULL, 0, &kp));
	hp.fn = cb_slow;
	hp.userData = &tag_a;
	CK(cudaGraphAddHostNode(&h1, g, &k1, 1, &hp));
	CK(cudaGraphAddKernelNode(&k2, g, &h1, 1, &kp));
	hp.fn = cb_note;
	hp.userData = &tag_b;
	CK(cudaGraphAddHostNode(&h2, g, &k2, 1, &hp));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 3; i++)
		CK(cudaGraphLaunch(ge, s));
	CK(cudaStreamSynchronize(s));
	printf("launches: callbacks %d \"%s\", on the program's thread %d\n",
	    ncalls, trail, on_main);
	CK(cudaMemcpy(h, du, sizeof h, cudaMemcpyDeviceToHost));
	printf("launches: value %u, checksum %08x\n", h[0], fnv(h, sizeof h));

	// 2. Parameters read back, set on the graph, set on an exec.
	CK(cudaGraphHostNodeGetParams(h1, &q));
	printf("host node params: %s, data %c\n", q.fn == cb_slow ? "cb_slow" :
	    "?", *(int *)q.userData);
	hp.fn = cb_note;
	hp.userData = &tag_c;
	CK(cudaGraphHostNodeSetParams(h1, &hp));
	CK(cudaGraphHostNodeGetParams(h1, &q));
	printf("host node set: %s, data %c\n", q.fn == cb_note ? "cb_note" :
	    "?", *(int *)q.userData);
	reset();
	CK(cudaGraphInstantiate(&ge2, g, 0));
	CK(cudaGraphLaunch(ge2, s));
	CK(cudaGraphLaunch(ge, s));		// the old exec keeps A
	CK(cudaStreamSynchronize(s));
	printf("graph set: new exec, old exec: \"%s\"\n", trail);
	hp.userData = &tag_x;
	CK(cudaGraphExecHostNodeSetParams(ge, h2, &hp));
	reset();
	CK(cudaGraphLaunch(ge, s));
	CK(cudaDeviceSynchronize());
	printf("exec set: \"%s\"\n", trail);

	// 3. Captured host functions.
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	soakInc<<<N / 256, 256, 0, s>>>(du, N);
	CK(cudaLaunchHostFunc(s, cb_note, &tag_x));
	soakInc<<<N / 256, 256, 0, s>>>(du, N);
	CK(cudaLaunchHostFunc(s, cb_nested, &tag_y));
	CK(cudaStreamEndCapture(s, &cg));
	n = 8;
	CK(cudaGraphGetNodes(cg, nodes, &n));
	printf("captured:");
	for (size_t i = 0; i < n; i++) {
		cudaGraphNodeType t;

		CK(cudaGraphNodeGetType(nodes[i], &t));
		printf(" %s", type_name(t));
	}
	printf("\n");
	CK(cudaGraphInstantiate(&ce, cg, 0));
	reset();
	CK(cudaGraphLaunch(ce, s));
	CK(cudaGraphLaunch(ce, s));
	CK(cudaStreamSynchronize(s));
	printf("captured launches: callbacks %d \"%s\"\n", ncalls, trail);
	fprintf(stderr, NAME ": a CUDA call in a callback: %d\n", nested);
	CK(cudaMemcpy(h, du, sizeof h, cudaMemcpyDeviceToHost));
	printf("captured launches: value %u, checksum %08x\n", h[0],
	    fnv(h, sizeof h));

	// 4. No synchronization: the callback comes anyway.
	hp.fn = cb_flag;
	hp.userData = NULL;
	CK(cudaGraphExecHostNodeSetParams(ge, h2, &hp));
	CK(cudaGraphLaunch(ge, s));
	for (int i = 0; i < 1000 && !flag; i++)
		usleep(10000);
	printf("a launch nobody waits for: its callback %s\n",
	    flag ? "ran" : "did not run");
	CK(cudaStreamSynchronize(s));

	// 5. Refused.
	hp.fn = NULL;
	printf("host node with no function: %s\n",
	    cudaGetErrorName(cudaGraphAddHostNode(&h1, g, NULL, 0, &hp)));
	(void)cudaGetLastError();

	CK(cudaGraphExecDestroy(ce));
	CK(cudaGraphExecDestroy(ge2));
	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(cg));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(du));
	CK(cudaStreamDestroy(s));
	printf(NAME ": ok\n");
	return 0;
}
