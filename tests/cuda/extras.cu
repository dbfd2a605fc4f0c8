// extras: entry points the client library answers from what it has: the
// PCI bus id, the shared-memory bank configuration, host functions and
// stream callbacks in stream order, and the stream-ordered allocator
// (cudaMallocAsync, cudaFreeAsync, the default pool's attributes), and
// the allocation granularity through cuGetProcAddress (as JAX asks it).
// Output is the same locally and remotely on one GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"extras"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK | TU_SET_U32)
#include "testutil.h"

static int order[8], norder;

static void CUDART_CB
host_fn(void *arg)
{
	order[norder++] = (int)(long)arg;
}

static void CUDART_CB
callback(cudaStream_t s, cudaError_t status, void *arg)
{
	(void)s;
	order[norder++] = status == cudaSuccess ? (int)(long)arg : -1;
}

int
main(void)
{
	char bus[64];
	cudaSharedMemConfig sc;
	cudaMemPool_t pool;
	cudaStream_t s;
	unsigned *d, *h;
	unsigned long long thr = 0, used = 0;
	int i, bad = 0, fail = 0;

	CK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
	printf("pci bus id: %s\n", bus);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CK(cudaDeviceGetSharedMemConfig(&sc));
#pragma GCC diagnostic pop
	printf("shared memory bank config: %d\n", (int)sc);

	CK(cudaStreamCreate(&s));
	h = (unsigned *)malloc(N * sizeof *h);
	CK(cudaMallocAsync(&d, N * sizeof *d, s));
	set_u32<<<N / 256, 256, 0, s>>>(d, 7, N);
	CK(cudaGetLastError());
	CK(cudaLaunchHostFunc(s, host_fn, (void *)1L));
	CK(cudaStreamAddCallback(s, callback, (void *)2L, 0));
	CK(cudaLaunchHostFunc(s, host_fn, (void *)3L));
	CK(cudaMemcpyAsync(h, d, N * sizeof *h, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	printf("host functions ran in order:");
	for (i = 0; i < norder; i++)
		printf(" %d", order[i]);
	printf("\n");
	if (norder != 3 || order[0] != 1 || order[1] != 2 || order[2] != 3)
		fail++;
	for (i = 0; i < N; i++)
		if (h[i] != (7u ^ (unsigned)i))
			bad++;
	printf("cudaMallocAsync memory written and read: %s\n",
	    bad ? "WRONG" : "ok");
	fail += bad != 0;

	CK(cudaDeviceGetDefaultMemPool(&pool, 0));
	thr = 1ull << 30;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
	    &thr));
	thr = 0;
	CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
	    &thr));
	printf("pool release threshold: %llu\n", thr);
	fail += thr != 1ull << 30;
	CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
	printf("pool in use before the free: %s\n", used >= N * sizeof *d ?
	    "at least the allocation" : "WRONG");
	fail += used < N * sizeof *d;
	CK(cudaFreeAsync(d, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaStreamDestroy(s));
	free(h);

	{
		CUresult (*gran)(size_t *, const CUmemAllocationProp *,
		    CUmemAllocationGranularity_flags) = NULL;
		cudaDriverEntryPointQueryResult q;
		CUmemAllocationProp prop;
		size_t g = 0, g2 = 0;

		CK(cudaGetDriverEntryPointByVersion(
		    "cuMemGetAllocationGranularity", (void **)&gran, 12000,
		    cudaEnableDefault, &q));
		memset(&prop, 0, sizeof prop);
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = 0;
		bad = q != cudaDriverEntryPointSuccess || gran == NULL ||
		    gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
		    CUDA_SUCCESS ||
		    gran(&g2, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
		    CUDA_SUCCESS || g != g2 || g == 0 || (g & (g - 1)) != 0 ||
		    gran(NULL, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
		    CUDA_ERROR_INVALID_VALUE ||
		    gran(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
		    CUDA_ERROR_INVALID_VALUE;
		printf("allocation granularity: %s, %zu KiB\n",
		    bad ? "WRONG" : "ok", g >> 10);
		fail += bad != 0;
	}
	if (fail) {
		printf(NAME ": FAIL %d\n", fail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
