// graphs: CUDA graphs through stream capture (runtime API).  Prints only
// what does not depend on timing or addresses, so a local and a remote run
// print the same:
//  1. a capture of a memset, a kernel, a device-to-device copy and a
//     second kernel: the capture status during it, the end's code, the
//     graph's node, root and edge counts;
//  2. the graph instantiated and launched 10 times, its input changed
//     before each launch: a checksum of each result;
//  3. cudaGraphExecUpdate with a graph of the same shape (other values)
//     and one of another shape: codes and update results, and a launch;
//  4. cudaGraphClone and cudaGraphDebugDotPrint (the file's line count);
//  5. calls illegal during a capture (cudaMalloc, stream and device
//     synchronization, a synchronous copy, capture of the legacy stream):
//     the codes they return and the capture's end's code;
//  6. thread-local and global capture mode seen from a second thread.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define NAME	"graphs"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	1024

#define TESTUTIL	(TU_CHECK | TU_VECADD | TU_SOAKINC)
#include "testutil.h"

static float *da, *db, *dc;
static unsigned *du;
static cudaStream_t s;

static unsigned
sum_u32(const unsigned *d)
{
	unsigned h[N], x = 0;

	CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		x = x * 31 + h[i];
	return x;
}

// Memset du to v, c = a + b, du[0..N/2) <- c's bits, du += 1 (twice when
// shape is 1).
static void
work(int v, int shape)
{
	CK(cudaMemsetAsync(du, v, N * sizeof *du, s));
	vecAdd<<<N / 256, 256, 0, s>>>(da, db, dc, N);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(du, dc, N / 2 * sizeof *du,
	    cudaMemcpyDeviceToDevice, s));
	soakInc<<<N / 256, 256, 0, s>>>(du, N);
	if (shape)
		soakInc<<<N / 256, 256, 0, s>>>(du, N);
	CK(cudaGetLastError());
}

static cudaGraph_t
capture(int v, int shape)
{
	cudaStreamCaptureStatus st;
	cudaGraph_t g;

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	work(v, shape);
	CK(cudaStreamIsCapturing(s, &st));
	printf("capturing: status %d\n", (int)st);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaStreamIsCapturing(s, &st));
	printf("after end: status %d\n", (int)st);
	return g;
}

static void
counts(const char *what, cudaGraph_t g)
{
	size_t n, r, e;

	CK(cudaGraphGetNodes(g, NULL, &n));
	CK(cudaGraphGetRootNodes(g, NULL, &r));
	CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &e));
	printf("%s: %zu nodes, %zu roots, %zu edges\n", what, n, r, e);
}

static void
set_input(int k)
{
	float h[N];

	for (int i = 0; i < N; i++)
		h[i] = (float)(i * (k + 1));
	CK(cudaMemcpy(da, h, sizeof h, cudaMemcpyHostToDevice));
}

// Begins a capture, makes one illegal call, ends: both codes.
static void
illegal(const char *what, int which)
{
	cudaGraph_t g = NULL;
	cudaError_t e = cudaSuccess, end;
	void *p = NULL;
	unsigned h[4] = { 0 };

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	vecAdd<<<N / 256, 256, 0, s>>>(da, db, dc, N);
	switch (which) {
	case 0:
		e = cudaMalloc(&p, 256);
		break;
	case 1:
		e = cudaStreamSynchronize(s);
		break;
	case 2:
		e = cudaDeviceSynchronize();
		break;
	case 3:
		e = cudaMemcpy(du, h, sizeof h, cudaMemcpyHostToDevice);
		break;
	case 4:
		e = cudaStreamQuery(s);
		break;
	}
	end = cudaStreamEndCapture(s, &g);
	printf("%-28s %s, end %s, graph %s\n", what, cudaGetErrorName(e),
	    cudaGetErrorName(end), g != NULL ? "yes" : "no");
	if (g != NULL)
		cudaGraphDestroy(g);
	if (p != NULL)
		cudaFree(p);
	cudaGetLastError();
}

struct other {
	int relax;
	cudaError_t e;
};

static void *
other_thread(void *arg)
{
	struct other *o = (struct other *)arg;
	cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
	void *p = NULL;

	if (o->relax)
		cudaThreadExchangeStreamCaptureMode(&m);
	o->e = cudaMalloc(&p, 256);
	if (p != NULL)
		cudaFree(p);
	cudaGetLastError();
	return NULL;
}

static void
modes(const char *what, cudaStreamCaptureMode mode, int relax)
{
	struct other o = { relax, cudaSuccess };
	cudaGraph_t g = NULL;
	cudaError_t end;
	pthread_t t;

	CK(cudaStreamBeginCapture(s, mode));
	vecAdd<<<N / 256, 256, 0, s>>>(da, db, dc, N);
	pthread_create(&t, NULL, other_thread, &o);
	pthread_join(t, NULL);
	end = cudaStreamEndCapture(s, &g);
	printf("%-28s other thread's cudaMalloc %s, end %s\n", what,
	    cudaGetErrorName(o.e), cudaGetErrorName(end));
	if (g != NULL)
		cudaGraphDestroy(g);
	cudaGetLastError();
}

// CUDA 13.1's node ids, through the driver's entry points: whether the
// lookup worked, and each id distinct among g's nodes.
static void
node_ids(cudaGraph_t g)
{
	typedef int (*lid_fn)(cudaGraphNode_t, unsigned *);
	typedef int (*tid_fn)(cudaGraphNode_t, unsigned long long *);
	typedef int (*gpa_fn)(const char *, void **, int, unsigned long long,
	    int *);
	cudaGraphNode_t nodes[64];
	unsigned lid[64];
	unsigned long long tid[64];
	size_t n = 64, i, j;
	void *fl = NULL, *ft = NULL, *lib, *gpa;
	int same_l = 0, same_t = 0, rc = 0, e1 = -1, e2 = -1, q1 = -1, q2 = -1;

	// The driver's own lookup: cudart 13.0 asks for no later version.
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	gpa = lib != NULL ? dlsym(lib, "cuGetProcAddress_v2") : NULL;
	if (gpa != NULL) {
		e1 = ((gpa_fn)gpa)("cuGraphNodeGetLocalId", &fl, 13010, 0, &q1);
		e2 = ((gpa_fn)gpa)("cuGraphNodeGetToolsId", &ft, 13010, 0, &q2);
	}
	// A 13.0 driver answers INVALID_VALUE for version 13010: the
	// exported symbols then.
	if (lib != NULL && fl == NULL)
		fl = dlsym(lib, "cuGraphNodeGetLocalId");
	if (lib != NULL && ft == NULL)
		ft = dlsym(lib, "cuGraphNodeGetToolsId");
	printf("node ids: lookups %d %d\n", e1, e2);
	if (fl == NULL || ft == NULL) {
		printf("node ids: no entry points (%d %d, %d %d)\n", e1, q1,
		    e2, q2);
		return;
	}
	CK(cudaGraphGetNodes(g, nodes, &n));
	for (i = 0; i < n && rc == 0; i++)
		if ((rc = ((lid_fn)fl)(nodes[i], &lid[i])) == 0)
			rc = ((tid_fn)ft)(nodes[i], &tid[i]);
	// A library that has them for a later driver, in front of a 13.0
	// one, says NOT_SUPPORTED: as if it had none.
	if (rc == 801) {	// CUDA_ERROR_NOT_SUPPORTED
		printf("node ids: no entry points (%d %d, %d %d)\n", e1, q1,
		    e2, q2);
		return;
	}
	for (i = 0; rc == 0 && i < n; i++)
		for (j = i + 1; j < n; j++) {
			same_l += lid[i] == lid[j];
			same_t += tid[i] == tid[j];
		}
	printf("node ids: %zu nodes, code %d, %d local and %d tools ids "
	    "repeated, NULL answers %d\n", n, rc, same_l, same_t,
	    ((lid_fn)fl)(nodes[0], NULL));
}

int
main(void)
{
	cudaGraph_t g, g2, g3, gc;
	cudaGraphExec_t x, xc;
	cudaGraphExecUpdateResultInfo info;
	cudaStreamCaptureStatus st;
	unsigned long long flags;
	float h[N];
	char path[64];
	FILE *f;
	int lines, c;

	CK(cudaMalloc(&da, N * sizeof *da));
	CK(cudaMalloc(&db, N * sizeof *db));
	CK(cudaMalloc(&dc, N * sizeof *dc));
	CK(cudaMalloc(&du, N * sizeof *du));
	CK(cudaStreamCreate(&s));
	for (int i = 0; i < N; i++)
		h[i] = 0.5f * i;
	CK(cudaMemcpy(db, h, sizeof h, cudaMemcpyHostToDevice));
	set_input(0);

	// 1.
	CK(cudaStreamIsCapturing(s, &st));
	printf("before: status %d\n", (int)st);
	g = capture(7, 0);
	counts("graph", g);

	// 2.
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphExecGetFlags(x, &flags));
	printf("exec flags %llu\n", flags);
	CK(cudaGraphUpload(x, s));
	for (int k = 0; k < 10; k++) {
		set_input(k);
		CK(cudaGraphLaunch(x, s));
		CK(cudaStreamSynchronize(s));
		printf("launch %d: %08x\n", k, sum_u32(du));
	}

	// 3.
	g2 = capture(9, 0);
	CK(cudaGraphExecUpdate(x, g2, &info));
	printf("update same shape: result %d\n", (int)info.result);
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("updated launch: %08x\n", sum_u32(du));
	g3 = capture(9, 1);
	counts("graph3", g3);
	printf("update other shape: %s, result %d\n",
	    cudaGetErrorName(cudaGraphExecUpdate(x, g3, &info)),
	    (int)info.result);
	cudaGetLastError();

	// 4.
	CK(cudaGraphClone(&gc, g3));
	counts("clone", gc);
	CK(cudaGraphInstantiateWithFlags(&xc, gc,
	    cudaGraphInstantiateFlagAutoFreeOnLaunch));
	CK(cudaGraphExecGetFlags(xc, &flags));
	printf("clone exec flags %llu\n", flags);
	CK(cudaGraphLaunch(xc, s));
	CK(cudaStreamSynchronize(s));
	printf("clone launch: %08x\n", sum_u32(du));
	snprintf(path, sizeof path, "/tmp/graphs-%d.dot", (int)getpid());
	CK(cudaGraphDebugDotPrint(g, path, 0));
	lines = 0;
	if ((f = fopen(path, "r")) != NULL) {
		while ((c = getc(f)) != EOF)
			lines += c == '\n';
		fclose(f);
	}
	unlink(path);
	printf("dot file: %d lines\n", lines);
	node_ids(g);

	// 5.
	illegal("cudaMalloc", 0);
	illegal("cudaStreamSynchronize", 1);
	illegal("cudaDeviceSynchronize", 2);
	illegal("cudaMemcpy (legacy stream)", 3);
	illegal("cudaStreamQuery", 4);
	printf("%-28s %s\n", "capture of legacy stream",
	    cudaGetErrorName(cudaStreamBeginCapture(cudaStreamLegacy,
	    cudaStreamCaptureModeGlobal)));
	cudaGetLastError();
	{
		cudaGraph_t gn = NULL;
		printf("%-28s %s\n", "end without capture",
		    cudaGetErrorName(cudaStreamEndCapture(s, &gn)));
		cudaGetLastError();
	}

	// 6.
	modes("global", cudaStreamCaptureModeGlobal, 0);
	modes("global, other relaxed", cudaStreamCaptureModeGlobal, 1);
	modes("thread-local", cudaStreamCaptureModeThreadLocal, 0);
	modes("relaxed", cudaStreamCaptureModeRelaxed, 0);

	// The graph still runs after all that.
	set_input(3);
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	printf("final launch: %08x\n", sum_u32(du));

	CK(cudaGraphExecDestroy(xc));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(gc));
	CK(cudaGraphDestroy(g3));
	CK(cudaGraphDestroy(g2));
	CK(cudaGraphDestroy(g));
	CK(cudaStreamDestroy(s));
	printf(NAME ": ok\n");
	return 0;
}
