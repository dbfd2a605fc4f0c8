// noctx: driver calls from a thread with no current context, as the
// threads that frameworks start make them (PyTorch's autograd workers,
// cuBLAS's and cuDNN's own lookups, a JAX allocator): with the primary
// context current in the main thread, a second thread asks for the
// current context, device, memory, copies, streams, events, virtual
// memory and pinned memory before any runtime call, then one runtime call
// (which makes the primary context current there) and the current context
// again.  Also what names its context by the main thread's stream, event
// or address: async copies, memsets, event records and waits, host
// functions, synchronizations, a free.  Prints the codes and flags only,
// so that a local and a remote run compare: the real driver's answers are
// the truth.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <pthread.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"noctx"
#define CK(x)	checkcu((x), #x, __FILE__, __LINE__)
#define RT(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_CHECKCU)
#include "testutil.h"

static CUdeviceptr dev_buf;		/* the main thread's, 1 MiB */
static CUcontext main_ctx;
static CUstream main_s;			/* the main thread's stream */
static CUevent main_e;			/* and event */
static CUdeviceptr main_free;		/* freed by the worker */

static CUfunction bump_fn;		/* bump, as a driver function */

__global__ void
bump(unsigned char *p)
{
	p[threadIdx.x] += 1;
}

static void CUDA_CB
host_fn(void *arg)
{
	*(int *)arg = 1;
}

static CUresult
code(const char *what, CUresult rc)
{
	printf("%-44s %d\n", what, (int)rc);
	return rc;
}

static void *
worker(void *arg)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	CUdeviceptr p = 0, va = 0, base;
	CUcontext cur = (CUcontext)1;
	CUstream s;
	CUevent e;
	unsigned char buf[16];
	unsigned flags = 0;
	size_t fr = 0, tot = 0, g = 0, sz;
	void *hp = NULL;
	int dev = -1, active = -1, ord = -1, v = 0;
	bool have_va, have_h;

	(void)arg;
	code("cuCtxGetCurrent", cuCtxGetCurrent(&cur));
	printf("%-44s %d\n", "  current is NULL", cur == NULL);
	code("cuCtxGetDevice", cuCtxGetDevice(&dev));
	code("cuDeviceGetAttribute (SM count)", cuDeviceGetAttribute(&v,
	    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	code("cuDevicePrimaryCtxGetState",
	    cuDevicePrimaryCtxGetState(0, &flags, &active));
	printf("%-44s %d\n", "  active", active);
	code("cuMemGetInfo", cuMemGetInfo(&fr, &tot));
	code("cuCtxSynchronize", cuCtxSynchronize());
	if (code("cuMemAlloc", cuMemAlloc(&p, 4096)) == CUDA_SUCCESS)
		code("cuMemFree", cuMemFree(p));
	memset(buf, 7, sizeof buf);
	code("cuMemcpyHtoD (the main thread's)",
	    cuMemcpyHtoD(dev_buf, buf, sizeof buf));
	code("cuMemcpyDtoH (the main thread's)",
	    cuMemcpyDtoH(buf, dev_buf, sizeof buf));
	code("cuMemsetD8", cuMemsetD8(dev_buf, 1, sizeof buf));
	code("cuPointerGetAttribute (ordinal)", cuPointerGetAttribute(&ord,
	    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_buf));
	printf("%-44s %d\n", "  ordinal", ord);
	code("cuMemGetAddressRange", cuMemGetAddressRange(&base, &sz,
	    dev_buf + 100));
	if (code("cuStreamCreate", cuStreamCreate(&s, 0)) == CUDA_SUCCESS)
		code("cuStreamDestroy", cuStreamDestroy(s));
	code("cuStreamSynchronize (NULL stream)", cuStreamSynchronize(NULL));
	if (code("cuEventCreate", cuEventCreate(&e, 0)) == CUDA_SUCCESS)
		code("cuEventDestroy", cuEventDestroy(e));
	if (code("cuMemAllocHost", cuMemAllocHost(&hp, 4096)) == CUDA_SUCCESS)
		code("cuMemFreeHost", cuMemFreeHost(hp));

	// What names its context by a stream, an event or an address:
	// what frameworks' worker threads do with the main thread's.
	static int ran;
	CUcontext sc = NULL;
	code("cuStreamGetCtx (the main thread's stream)",
	    cuStreamGetCtx(main_s, &sc));
	printf("%-44s %d\n", "  it is the main thread's", sc == main_ctx);
	code("cuMemcpyHtoDAsync (its stream)", cuMemcpyHtoDAsync(dev_buf, buf,
	    sizeof buf, main_s));
	code("cuMemsetD8Async (its stream)", cuMemsetD8Async(dev_buf + 16, 5,
	    16, main_s));
	code("cuEventRecord (its event, its stream)", cuEventRecord(main_e,
	    main_s));
	code("cuStreamWaitEvent", cuStreamWaitEvent(main_s, main_e, 0));
	code("cuLaunchHostFunc (its stream)", cuLaunchHostFunc(main_s,
	    host_fn, &ran));
	{
		CUdeviceptr at = dev_buf + 64;
		void *kargs[] = { &at };

		code("cuLaunchKernel (its stream)", cuLaunchKernel(bump_fn,
		    1, 1, 1, 16, 1, 1, 0, main_s, kargs, NULL));
	}
	code("cuStreamSynchronize (its stream)", cuStreamSynchronize(main_s));
	printf("%-44s %d\n", "  the host function ran", ran);
	code("cuStreamQuery (its stream)", cuStreamQuery(main_s));
	code("cuEventSynchronize (its event)", cuEventSynchronize(main_e));
	code("cuEventQuery (its event)", cuEventQuery(main_e));
	code("cuMemFree (the main thread's)", cuMemFree(main_free));

	// Virtual memory management.
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	code("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity(&g,
	    &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if (g == 0)
		g = 2 << 20;
	have_va = code("cuMemAddressReserve",
	    cuMemAddressReserve(&va, g, 0, 0, 0)) == CUDA_SUCCESS;
	have_h = code("cuMemCreate", cuMemCreate(&h, g, &prop, 0)) ==
	    CUDA_SUCCESS;
	if (have_va && have_h &&
	    code("cuMemMap", cuMemMap(va, g, 0, h, 0)) == CUDA_SUCCESS) {
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		code("cuMemSetAccess", cuMemSetAccess(va, g, &acc, 1));
		code("cuMemUnmap", cuMemUnmap(va, g));
	}
	if (have_h)
		code("cuMemRelease", cuMemRelease(h));
	if (have_va)
		code("cuMemAddressFree", cuMemAddressFree(va, g));

	// A runtime call makes the device's primary context current here.
	RT(cudaMemset((void *)dev_buf, 2, 16));
	cur = NULL;
	code("cuCtxGetCurrent after cudaMemset", cuCtxGetCurrent(&cur));
	printf("%-44s %d\n", "  it is the main thread's", cur == main_ctx);
	code("cuCtxGetDevice after cudaMemset", cuCtxGetDevice(&dev));
	printf("%-44s %d\n", "  device", dev);
	return NULL;
}

int
main(void)
{
	pthread_t t;
	unsigned char b[16];

	RT(cudaFree(0));
	CK(cuCtxGetCurrent(&main_ctx));
	CK(cuMemAlloc(&dev_buf, 1 << 20));
	CK(cuMemsetD8(dev_buf, 0, 1 << 20));
	CK(cuMemAlloc(&main_free, 4096));
	CK(cuStreamCreate(&main_s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&main_e, CU_EVENT_DISABLE_TIMING));
	RT(cudaGetFuncBySymbol(&bump_fn, (const void *)bump));
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		printf(NAME ": pthread_create failed\n");
		return 1;
	}
	pthread_join(t, NULL);
	CK(cuMemcpyDtoH(b, dev_buf, sizeof b));
	printf("main: first byte %d\n", b[0]);
	CK(cuMemcpyDtoH(b, dev_buf + 64, sizeof b));
	printf("main: the worker's kernel ran %d\n", b[0]);
	CK(cuStreamDestroy(main_s));
	CK(cuEventDestroy(main_e));
	CK(cuMemFree(dev_buf));
	printf(NAME ": ok\n");
	return 0;
}
