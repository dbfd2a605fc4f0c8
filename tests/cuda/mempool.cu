// mempool: memory pools of the stream-ordered allocator: the default and
// the current pool of a device, a pool made with cudaMemPoolCreate, its
// attributes (and the refused ones), allocation from it in stream order
// with a kernel writing there, its figures before and after the free,
// trimming, the device's current pool switched to it and back, access,
// and the codes of refused arguments.  Prints checksums, relations and
// codes only, so that a local and a remote run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"mempool"
#define N	(1 << 18)	/* unsigned ints: 1 MiB */
#define CK(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_FNV64 | TU_CODE | TU_SET_U32)
#include "testutil.h"

static cuuint64_t
attr64(cudaMemPool_t p, cudaMemPoolAttr a)
{
	cuuint64_t v = 0;

	CK(cudaMemPoolGetAttribute(p, a, &v));
	return v;
}

int
main(void)
{
	cudaMemPool_t def, cur, pool;
	cudaMemPoolProps props;
	cudaMemAccessDesc acc;
	cudaMemAccessFlags fl;
	cudaMemLocation loc;
	cudaStream_t s;
	cuuint64_t v;
	unsigned *d, *h;
	int reuse, i;

	h = (unsigned *)malloc(N * sizeof *h);
	CK(cudaFree(0));
	CK(cudaStreamCreate(&s));
	CK(cudaDeviceGetDefaultMemPool(&def, 0));
	CK(cudaDeviceGetMemPool(&cur, 0));
	printf("current is the default: %d\n", cur == def);

	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypeInvalid;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	code("create with no allocation type", cudaMemPoolCreate(&pool,
	    &props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.id = 99;
	code("create on device 99", cudaMemPoolCreate(&pool, &props));
	props.location.id = 0;
	CK(cudaMemPoolCreate(&pool, &props));
	printf("a new pool: %d\n", pool != def);

	v = 1 << 20;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &v));
	printf("release threshold: %llu\n", (unsigned long long)attr64(pool,
	    cudaMemPoolAttrReleaseThreshold));
	for (i = 0; i < 3; i++) {
		static const cudaMemPoolAttr a[3] = {
			cudaMemPoolReuseFollowEventDependencies,
			cudaMemPoolReuseAllowOpportunistic,
			cudaMemPoolReuseAllowInternalDependencies
		};
		CK(cudaMemPoolGetAttribute(pool, a[i], &reuse));
		printf("reuse %d: %d\n", i, reuse);
	}
	reuse = 0;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic,
	    &reuse));
	CK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic,
	    &reuse));
	printf("opportunistic after set 0: %d\n", reuse);
	v = 5;
	code("set used high to 5", cudaMemPoolSetAttribute(pool,
	    cudaMemPoolAttrUsedMemHigh, &v));
	v = 0;
	code("set used high to 0", cudaMemPoolSetAttribute(pool,
	    cudaMemPoolAttrUsedMemHigh, &v));
	code("set used current", cudaMemPoolSetAttribute(pool,
	    cudaMemPoolAttrUsedMemCurrent, &v));

	// From the pool, in stream order, written by a kernel.
	CK(cudaMallocFromPoolAsync((void **)&d, N * sizeof *d, pool, s));
	set_u32<<<N / 256, 256, 0, s>>>(d, 0x5a5a, N);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(h, d, N * sizeof *h, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	printf("from the pool: %016llx\n", (unsigned long long)fnv(h,
	    N * sizeof *h));
	printf("in use >= 1 MiB: %d reserved >= in use: %d\n",
	    attr64(pool, cudaMemPoolAttrUsedMemCurrent) >= N * sizeof *d,
	    attr64(pool, cudaMemPoolAttrReservedMemCurrent) >=
	    attr64(pool, cudaMemPoolAttrUsedMemCurrent));
	CK(cudaFreeAsync(d, s));
	CK(cudaStreamSynchronize(s));
	printf("in use after the free: %llu high >= 1 MiB: %d\n",
	    (unsigned long long)attr64(pool, cudaMemPoolAttrUsedMemCurrent),
	    attr64(pool, cudaMemPoolAttrUsedMemHigh) >= N * sizeof *d);
	CK(cudaMemPoolTrimTo(pool, 0));
	printf("reserved after trimming to 0: %llu\n", (unsigned long long)
	    attr64(pool, cudaMemPoolAttrReservedMemCurrent));

	// The device's current pool.
	CK(cudaDeviceSetMemPool(0, pool));
	CK(cudaDeviceGetMemPool(&cur, 0));
	printf("current is the new pool: %d\n", cur == pool);
	CK(cudaMallocAsync((void **)&d, N * sizeof *d, s));
	printf("cudaMallocAsync takes from it: %d\n", attr64(pool,
	    cudaMemPoolAttrUsedMemCurrent) >= N * sizeof *d);
	CK(cudaFreeAsync(d, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaDeviceSetMemPool(0, def));
	CK(cudaDeviceGetMemPool(&cur, 0));
	printf("current is the default again: %d\n", cur == def);

	// Access.
	memset(&loc, 0, sizeof loc);
	loc.type = cudaMemLocationTypeDevice;
	loc.id = 0;
	CK(cudaMemPoolGetAccess(&fl, pool, &loc));
	printf("access of device 0: %d\n", (int)fl);
	memset(&acc, 0, sizeof acc);
	acc.location = loc;
	acc.flags = cudaMemAccessFlagsProtReadWrite;
	code("set access read-write for device 0", cudaMemPoolSetAccess(pool,
	    &acc, 1));
	acc.location.id = 99;
	code("set access for device 99", cudaMemPoolSetAccess(pool, &acc,
	    1));

	// Not shared with another process (none asked for at creation).
	{
		int fd = -1;

		printf("export refused: %d\n",
		    cudaMemPoolExportToShareableHandle(&fd, pool,
		    cudaMemHandleTypePosixFileDescriptor, 0) != cudaSuccess);
		cudaGetLastError();
	}

	code("destroy the pool", cudaMemPoolDestroy(pool));
	CK(cudaDeviceSynchronize());
	free(h);
	printf(NAME ": ok\n");
	return 0;
}
