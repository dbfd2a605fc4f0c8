// greenctx: green contexts through the driver API: the device's SM
// resource, splits by count (a query, two groups and the remainder), the
// codes of refused arguments, descriptors, two green contexts, their
// resources and ids, a stream made in one with a kernel launched in it,
// a kernel in the context cuCtxFromGreenCtx gives (its default stream),
// events recorded by one green context and waited for by the other, the
// green context of a stream, and, where the driver has them (CUDA 13.1),
// a stream's resources and a structured split.  Prints counts,
// checksums, codes and ids as relations only, so that a local and a
// remote run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <dlfcn.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"greenctx"
#define N	4096
#define CK(x)	checkcu((x), #x, __FILE__, __LINE__)
#define RT(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_CHECKCU | TU_SET_U32 | TU_FNV64)
#include "testutil.h"

// The checksum of the buffer, copied back in the primary context.
static uint64_t
sum_dev(unsigned *d)
{
	static unsigned h[N];

	RT(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
	return fnv(h, sizeof h);
}

static void
code(const char *what, CUresult rc)
{
	printf("%-48s %d\n", what, (int)rc);
}

// CUDA 13.1's structured split: its group parameters.
struct group_params {
	unsigned smCount, coscheduledSmCount, preferredCoscheduledSmCount;
	unsigned flags, reserved[12];
};
typedef CUresult (*split_fn)(CUdevResource *, unsigned,
    const CUdevResource *, CUdevResource *, unsigned, void *);
typedef CUresult (*stream_res_fn)(CUstream, CUdevResource *,
    CUdevResourceType);

// A function of CUDA 13.1, or NULL where the driver lacks it: by its
// symbol, as the CUDA 13.0 headers do not declare it (cuGetProcAddress
// refuses versions past the driver's).
static void *
newer(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

int
main(void)
{
	CUdevResource dev, res[4], rem, other[2], got;
	CUdevResourceDesc d0, d1, dbad;
	CUgreenCtx g0, g1, gs, gbad;
	CUcontext prim, c0, c1, c0again, cs;
	CUstream s0, sbad;
	CUevent e;
	unsigned long long id0, id1, id0again, idcur;
	unsigned n;
	unsigned *d;
	int blocks = (N + 255) / 256;
	CUdevice cd;

	// Line by line: a crash (seen with the real driver) shows where.
	setvbuf(stdout, NULL, _IOLBF, 0);

	RT(cudaFree(0));
	CK(cuCtxGetCurrent(&prim));
	RT(cudaMalloc(&d, N * sizeof *d));

	// The device's SMs.
	CK(cuDeviceGetDevResource(0, &dev, CU_DEV_RESOURCE_TYPE_SM));
	printf("device: type %d sms %u min %u alignment %u\n", (int)dev.type,
	    dev.sm.smCount, dev.sm.minSmPartitionSize,
	    dev.sm.smCoscheduledAlignment);
	code("resource of device 99", cuDeviceGetDevResource(99, &got,
	    CU_DEV_RESOURCE_TYPE_SM));
	code("resource of type 0", cuDeviceGetDevResource(0, &got,
	    CU_DEV_RESOURCE_TYPE_INVALID));
	code("resource into NULL", cuDeviceGetDevResource(0, NULL,
	    CU_DEV_RESOURCE_TYPE_SM));

	// Splits by count: a query, then two groups and the remainder.
	CK(cuDevSmResourceSplitByCount(NULL, &n, &dev, NULL, 0, 16));
	printf("split by 16, query: %u groups\n", n);
	n = 2;
	CK(cuDevSmResourceSplitByCount(res, &n, &dev, &rem, 0, 16));
	printf("split by 16 into 2: %u groups of %u and %u, remainder %u\n",
	    n, res[0].sm.smCount, res[1].sm.smCount, rem.sm.smCount);
	n = 2;
	CK(cuDevSmResourceSplitByCount(res + 2, &n, &dev, NULL, 0, 20));
	printf("split by 20 into 2: %u groups of %u\n", n, res[2].sm.smCount);
	n = 2;
	code("split by more than the device has",
	    cuDevSmResourceSplitByCount(other, &n, &dev, NULL, 0,
	    dev.sm.smCount + 1));
	code("split with no group count",
	    cuDevSmResourceSplitByCount(other, NULL, &dev, NULL, 0, 8));
	code("split of no input", cuDevSmResourceSplitByCount(other, &n, NULL,
	    NULL, 0, 8));
	n = 2;
	code("split of a split's result",
	    cuDevSmResourceSplitByCount(other, &n, &res[0], NULL, 0, 8));

	// Descriptors: one group each; two splits' groups together refused.
	CK(cuDevResourceGenerateDesc(&d0, &res[0], 1));
	CK(cuDevResourceGenerateDesc(&d1, &res[1], 1));
	other[0] = res[0];
	other[1] = res[2];
	code("descriptor of two splits' groups",
	    cuDevResourceGenerateDesc(&dbad, other, 2));
	// (No resources at all is not asked about: the real driver (580)
	// crashes on it.)

	// Two green contexts.
	code("green context with flags 0", cuGreenCtxCreate(&gbad, d0, 0, 0));
	code("green context on device 99", cuGreenCtxCreate(&gbad, d0, 99,
	    CU_GREEN_CTX_DEFAULT_STREAM));
	CK(cuGreenCtxCreate(&g0, d0, 0, CU_GREEN_CTX_DEFAULT_STREAM));
	CK(cuGreenCtxCreate(&g1, d1, 0, CU_GREEN_CTX_DEFAULT_STREAM));
	CK(cuGreenCtxGetDevResource(g0, &got, CU_DEV_RESOURCE_TYPE_SM));
	printf("green context 0: sms %u\n", got.sm.smCount);
	CK(cuCtxFromGreenCtx(&c0, g0));
	CK(cuCtxFromGreenCtx(&c1, g1));
	CK(cuCtxFromGreenCtx(&c0again, g0));
	printf("contexts: the same for the same green context %d, two "
	    "differ %d, not the primary %d\n", c0 == c0again, c0 != c1,
	    c0 != prim);
	CK(cuCtxGetDevResource(c1, &got, CU_DEV_RESOURCE_TYPE_SM));
	printf("context of green context 1: sms %u\n", got.sm.smCount);
	CK(cuCtxGetDevResource(prim, &got, CU_DEV_RESOURCE_TYPE_SM));
	printf("primary context: sms %u\n", got.sm.smCount);
	CK(cuGreenCtxGetId(g0, &id0));
	CK(cuGreenCtxGetId(g1, &id1));
	CK(cuGreenCtxGetId(g0, &id0again));
	printf("ids: the same again %d, two differ %d\n", id0 == id0again,
	    id0 != id1);

	// A stream in green context 0, a kernel in it.
	code("green stream with flags 0", cuGreenCtxStreamCreate(&sbad, g0,
	    0, 0));
	CK(cuGreenCtxStreamCreate(&s0, g0, CU_STREAM_NON_BLOCKING, 0));
	CK(cuStreamGetGreenCtx(s0, &gs));
	CK(cuStreamGetCtx(s0, &cs));
	printf("stream: its green context %d, its context %d\n", gs == g0,
	    cs == c0);
	CK(cuStreamGetGreenCtx(NULL, &gs));
	printf("legacy stream in the primary context: green context %d\n",
	    gs != NULL);
	CK(cuCtxPushCurrent(c0));
	CK(cuCtxGetDevice(&cd));
	CK(cuGreenCtxGetId(NULL, &idcur));
	CK(cuStreamGetGreenCtx(NULL, &gs));
	printf("green context 0 current: device %d, id its own %d, legacy "
	    "stream's green context %d\n", (int)cd, idcur == id0, gs == g0);
	set_u32<<<blocks, 256, 0, (cudaStream_t)s0>>>(d, 0x1234u, N);
	RT(cudaGetLastError());
	CK(cuStreamSynchronize(s0));
	// The context's own default stream.
	set_u32<<<blocks, 256>>>(d + N / 2, 0x5678u, N / 2);
	RT(cudaGetLastError());
	CK(cuCtxSynchronize());

	// Green context 0 records, green context 1 waits, so does s0.
	CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CK(cuGreenCtxRecordEvent(g0, e));
	CK(cuGreenCtxWaitEvent(g1, e));
	CK(cuStreamWaitEvent(s0, e, 0));
	CK(cuEventSynchronize(e));
	printf("event recorded by one green context, waited for by the "
	    "other: %d\n", (int)cuEventQuery(e));

	// CUDA 13.1, where the driver has it.
	stream_res_fn sres = (stream_res_fn)newer("cuStreamGetDevResource");
	CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
	if (sres != NULL)
		rc = sres(s0, &got, CU_DEV_RESOURCE_TYPE_SM);
	if (rc == CUDA_SUCCESS)
		printf("stream resources: sms %u\n", got.sm.smCount);
	else if (rc == CUDA_ERROR_NOT_SUPPORTED)
		printf("stream resources: not in this driver\n");
	else
		code("stream resources", rc);
	CK(cuCtxPopCurrent(&cs));
	printf("popped the green context's: %d\n", cs == c0);
	printf("kernels in the green context: checksum %016llx\n",
	    (unsigned long long)sum_dev(d));

	split_fn split = (split_fn)newer("cuDevSmResourceSplit");
	struct group_params gp[2];
	memset(gp, 0, sizeof gp);
	gp[0].smCount = 16;
	gp[0].coscheduledSmCount = 8;
	gp[1].coscheduledSmCount = 8;	// as many as are left
	rc = CUDA_ERROR_NOT_SUPPORTED;
	if (split != NULL)
		rc = split(other, 2, &dev, &rem, 0, gp);
	if (rc == CUDA_SUCCESS)
		printf("structured split: groups of %u and %u (asked %u and "
		    "%u), remainder %u\n", other[0].sm.smCount,
		    other[1].sm.smCount, gp[0].smCount, gp[1].smCount,
		    rem.sm.smCount);
	else if (rc == CUDA_ERROR_NOT_SUPPORTED)
		printf("structured split: not in this driver\n");
	else
		code("structured split", rc);

	CK(cuEventDestroy(e));
	CK(cuStreamDestroy(s0));
	CK(cuGreenCtxDestroy(g1));
	CK(cuGreenCtxDestroy(g0));
	CK(cuCtxGetCurrent(&cs));
	printf("current after: the primary %d\n", cs == prim);
	RT(cudaFree(d));
	printf(NAME ": ok\n");
	return 0;
}
