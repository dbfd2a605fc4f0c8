// vmm: the driver's virtual memory management, as JAX's allocator and
// ggml's pool use it: granularity, a reservation, two allocations mapped
// side by side with access set over both at once, a kernel writing across
// the seam, pointer queries on mapped memory, the handle retained from an
// address, properties from a handle, then both unmapped and mapped again
// the other way round at the same addresses (their bytes kept), and the
// codes of refused arguments.  Prints checksums, offsets and codes only,
// so that a local and a remote run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"vmm"
#define CK(x)	checkcu((x), #x, __FILE__, __LINE__)
#define RT(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_CHECKCU | TU_FNV64 | TU_SET_U32)
#include "testutil.h"

// The checksum of n bytes of device memory at d.
static uint64_t
sum_dev(CUdeviceptr d, size_t n)
{
	void *h = malloc(n);
	uint64_t s;

	CK(cuMemcpyDtoH(h, d, n));
	s = fnv(h, n);
	free(h);
	return s;
}

static CUresult
code(const char *what, CUresult rc)
{
	printf("%-48s %d\n", what, (int)rc);
	return rc;
}

int
main(void)
{
	CUmemGenericAllocationHandle h1, h2, hr;
	CUmemAllocationProp prop, got;
	CUmemAccessDesc acc;
	CUmemLocation loc;
	CUdeviceptr va, va2, base;
	unsigned long long flags;
	size_t gmin, grec, g, size;
	unsigned mt;
	int nf = 0;

	RT(cudaFree(0));
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gmin, &prop,
	    CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CK(cuMemGetAllocationGranularity(&grec, &prop,
	    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	printf("granularity: minimum %zu recommended %zu\n", gmin, grec);
	g = gmin;

	// Refused before anything exists.
	code("reserve 0 bytes", cuMemAddressReserve(&va, 0, 0, 0, 0));
	code("create 0 bytes", cuMemCreate(&h1, 0, &prop, 0));
	code("create half a granule", cuMemCreate(&h1, g / 2, &prop, 0));
	code("create with flags 1", cuMemCreate(&h1, g, &prop, 1));

	CK(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
	printf("reserved: aligned %d\n", va % g == 0);
	CK(cuMemCreate(&h1, 2 * g, &prop, 0));
	CK(cuMemCreate(&h2, 2 * g, &prop, 0));
	memset(&got, 0xff, sizeof got);
	CK(cuMemGetAllocationPropertiesFromHandle(&got, h1));
	printf("properties: type %d location %d/%d handle types %d "
	    "compression %d\n", (int)got.type, (int)got.location.type,
	    got.location.id, (int)got.requestedHandleTypes,
	    (int)got.allocFlags.compressionType);

	code("map off the granule", cuMemMap(va + 4096, 2 * g, 0, h1, 0));
	code("map with flags 1", cuMemMap(va, 2 * g, 0, h1, 1));
	code("map past the allocation", cuMemMap(va, 4 * g, 0, h1, 0));
	CK(cuMemMap(va, 2 * g, 0, h1, 0));
	code("map over a mapping", cuMemMap(va, 2 * g, 0, h2, 0));
	CK(cuMemMap(va + 2 * g, 2 * g, 0, h2, 0));
	memset(&acc, 0, sizeof acc);
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = 0;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	code("set access, no descriptors", cuMemSetAccess(va, 4 * g, &acc,
	    0));
	CK(cuMemSetAccess(va, 4 * g, &acc, 1));
	loc = acc.location;
	flags = 99;
	CK(cuMemGetAccess(&flags, &loc, va + 2 * g + 64));
	printf("access: %llu\n", flags);

	// Each allocation written, then a kernel across the seam.
	set_u32<<<(int)(2 * g / 4 / 256), 256>>>((unsigned *)va, 1,
	    (int)(2 * g / 4));
	set_u32<<<(int)(2 * g / 4 / 256), 256>>>((unsigned *)(va + 2 * g), 2,
	    (int)(2 * g / 4));
	set_u32<<<(int)(g / 4 / 256), 256>>>((unsigned *)(va + g + g / 2), 3,
	    (int)(g / 4));
	RT(cudaGetLastError());
	RT(cudaDeviceSynchronize());
	printf("whole range: %016llx\n", (unsigned long long)sum_dev(va,
	    4 * g));
	printf("first: %016llx second: %016llx\n",
	    (unsigned long long)sum_dev(va, 2 * g),
	    (unsigned long long)sum_dev(va + 2 * g, 2 * g));

	// Pointer queries on mapped memory.
	CK(cuMemGetAddressRange(&base, &size, va + 2 * g + 100));
	printf("address range: base +%llu size %zu\n",
	    (unsigned long long)(base - va), size);
	CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
	    va + 100));
	printf("memory type: %u\n", mt);
	CK(cuMemRetainAllocationHandle(&hr, (void *)(va + 2 * g)));
	printf("retained the second: %d\n", hr == h2);
	CK(cuMemRelease(hr));
	memset(&got, 0, sizeof got);
	CK(cuMemGetAllocationPropertiesFromHandle(&got, h2));
	printf("second's location: %d/%d\n", (int)got.location.type,
	    got.location.id);
	code("cuMemFree of a mapping", cuMemFree(va));
	code("unmap half a mapping", cuMemUnmap(va, g));

	// Released while mapped: the memory stays until it is unmapped.
	CK(cuMemRelease(h1));
	printf("after release: %016llx\n", (unsigned long long)sum_dev(va,
	    2 * g));
	CK(cuMemRetainAllocationHandle(&h1, (void *)va));

	// Both unmapped at once, then the other way round.
	CK(cuMemUnmap(va, 4 * g));
	CK(cuMemMap(va, 2 * g, 0, h2, 0));
	CK(cuMemMap(va + 2 * g, 2 * g, 0, h1, 0));
	CK(cuMemSetAccess(va, 4 * g, &acc, 1));
	printf("swapped: first %016llx second %016llx\n",
	    (unsigned long long)sum_dev(va, 2 * g),
	    (unsigned long long)sum_dev(va + 2 * g, 2 * g));
	// Half of one allocation mapped elsewhere, at an offset into it: the
	// H200's driver (580) refuses any offset but 0 (NOT_SUPPORTED).
	CK(cuMemAddressReserve(&va2, 2 * g, 0, 0, 0));
	if (code("map at an offset into an allocation",
	    cuMemMap(va2, g, g, h2, 0)) == CUDA_SUCCESS) {
		CK(cuMemSetAccess(va2, g, &acc, 1));
		set_u32<<<(int)(g / 4 / 256), 256>>>((unsigned *)va2, 4,
		    (int)(g / 4));
		RT(cudaDeviceSynchronize());
		printf("offset mapping: %016llx through the first: %016llx\n",
		    (unsigned long long)sum_dev(va2, g),
		    (unsigned long long)sum_dev(va + g, g));
		CK(cuMemUnmap(va2, g));
	}

	CK(cuMemUnmap(va, 2 * g));
	CK(cuMemUnmap(va + 2 * g, 2 * g));
	CK(cuMemRelease(h1));
	CK(cuMemRelease(h2));
	CK(cuMemAddressFree(va2, 2 * g));
	CK(cuMemAddressFree(va, 4 * g));

	// Two reservations that meet (as a growing allocator makes them,
	// asking for the next range at the end of the last), each with an
	// allocation mapped: a memset and a copy across where they meet.
	{
		CUdeviceptr r1 = 0, r2 = 0, want;
		CUmemGenericAllocationHandle a1, a2;
		unsigned char hb[64];
		int meet;

		CK(cuMemAddressReserve(&r1, 2 * g, 0, 0, 0));
		CK(cuMemAddressFree(r1, 2 * g));
		CK(cuMemAddressReserve(&r1, g, 0, r1, 0));
		want = r1 + g;
		CK(cuMemAddressReserve(&r2, g, 0, want, 0));
		meet = r2 == want;
		printf("reservations meet: %d\n", meet);
		CK(cuMemCreate(&a1, g, &prop, 0));
		CK(cuMemCreate(&a2, g, &prop, 0));
		CK(cuMemMap(r1, g, 0, a1, 0));
		CK(cuMemMap(r2, g, 0, a2, 0));
		CK(cuMemSetAccess(r1, g, &acc, 1));
		CK(cuMemSetAccess(r2, g, &acc, 1));
		if (meet) {
			memset(hb, 9, sizeof hb);
			code("memset across two reservations",
			    cuMemsetD8(r2 - 32, 5, 64));
			code("copy across two reservations",
			    cuMemcpyHtoD(r2 - 32, hb, sizeof hb));
		}
		CK(cuMemUnmap(r1, g));
		CK(cuMemUnmap(r2, g));
		CK(cuMemRelease(a1));
		CK(cuMemRelease(a2));
		CK(cuMemAddressFree(r1, g));
		CK(cuMemAddressFree(r2, g));
	}
	RT(cudaDeviceSynchronize());
	if (nf)
		printf(NAME ": FAIL\n");
	else
		printf(NAME ": ok\n");
	return nf ? 1 : 0;
}
