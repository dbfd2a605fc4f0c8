// ptrattr: every pointer attribute (cuPointerGetAttribute) of every kind
// of memory a program meets: cuMemAlloc's, a small one, the stream-ordered
// allocator's, pinned, mapped and managed memory, a virtual memory mapping,
// a module's global and ordinary host memory, each at an offset inside.
// Prints the code and a value that does not depend on where things are
// (an address as its offset from the allocation, an id as nonzero), so
// that a local and a remote run compare: the real driver's answers are
// the truth.  Also cuPointerGetAttributes of them all at once.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"ptrattr"
#define CK(x)	checkcu((x), #x, __FILE__, __LINE__)
#define RT(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_CHECKCU)
#include "testutil.h"

__device__ unsigned g_words[64];

struct kind {
	const char	*name;
	CUdeviceptr	 base;		/* the allocation's start */
	size_t		 off;		/* where it is asked */
};

static CUcontext ctx;
static CUmemoryPool defpool;

// The value of attribute a at p, in terms that compare across machines.
static void
say(const struct kind *k, int a)
{
	CUdeviceptr p = k->base + k->off;
	unsigned char v[16];
	unsigned long long u;
	CUresult e;
	const char *s = NULL;

	memset(v, 0, sizeof v);
	e = cuPointerGetAttribute(v, (CUpointer_attribute)a, p);
	if (e != CUDA_SUCCESS) {
		cuGetErrorName(e, &s);
		printf("%-8s %2d: %s\n", k->name, a, s ? s : "?");
		return;
	}
	memcpy(&u, v, sizeof u);
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		printf("%-8s %2d: %s\n", k->name, a, u == 0 ? "null" :
		    u == (unsigned long long)(uintptr_t)ctx ? "current" :
		    "another");
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		printf("%-8s %2d: %s\n", k->name, a, u == 0 ? "null" :
		    u == p ? "itself" : "elsewhere");
		break;
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: {
		// Where the driver's mapping starts depends on what else it
		// packed into it before (other allocations, the process's
		// history): only that it holds p compares across machines.
		size_t msz = 0;

		if (cuPointerGetAttribute(&msz,
		    CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p) == CUDA_SUCCESS &&
		    u <= p && p - u < msz)
			printf("%-8s %2d: below, within its mapping\n",
			    k->name, a);
		else
			printf("%-8s %2d: %s\n", k->name, a, u == 0 ? "null" :
			    "elsewhere");
		break;
	}
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		// A pool's mapping is a chunk of the pool's own choosing
		// (32 MiB on driver 580; Gleam's pools, made of cuMemAlloc
		// blocks, map 2 MiB: gleam-client(7)): only that it holds
		// the allocation (1 MiB, below) compares.
		if (strcmp(k->name, "async") == 0 && u >= (1u << 20))
			printf("%-8s %2d: a pool's chunk, holds it\n",
			    k->name, a);
		else
			printf("%-8s %2d: %llu\n", k->name, a, u);
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		if (u <= p && p - u < (1ull << 40))
			printf("%-8s %2d: %llu below\n", k->name, a,
			    (unsigned long long)(p - u));
		else
			printf("%-8s %2d: %s\n", k->name, a, u == 0 ? "null" :
			    "elsewhere");
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		printf("%-8s %2d: %s\n", k->name, a, u != 0 ? "nonzero" : "0");
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		printf("%-8s %2d: %s\n", k->name, a, u == 0 ? "null" :
		    u == (unsigned long long)(uintptr_t)defpool ?
		    "the default pool" : "another pool");
		break;
	default:
		printf("%-8s %2d: %llu\n", k->name, a, u);
		break;
	}
}

int
main(void)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	CUdeviceptr d, small, va;
	size_t gran;
	void *async, *pinned, *mapped, *managed, *global;
	char *plain;
	struct kind k[9];
	int n = 0, i, a;

	RT(cudaFree(0));
	CK(cuCtxGetCurrent(&ctx));
	CK(cuDeviceGetDefaultMemPool(&defpool, 0));

	CK(cuMemAlloc(&d, 1 << 20));
	CK(cuMemAlloc(&small, 100));
	RT(cudaMallocAsync(&async, 1 << 20, 0));
	RT(cudaStreamSynchronize(0));
	RT(cudaMallocHost(&pinned, 4096));
	RT(cudaHostAlloc(&mapped, 4096, cudaHostAllocMapped));
	RT(cudaMallocManaged(&managed, 1 << 16));
	RT(cudaGetSymbolAddress(&global, g_words));
	plain = (char *)malloc(4096);

	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gran, &prop,
	    CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
	CK(cuMemCreate(&h, gran, &prop, 0));
	CK(cuMemMap(va, gran, 0, h, 0));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(va, gran, &acc, 1));

	k[n++] = (struct kind){ "device", d, 4096 };
	k[n++] = (struct kind){ "small", small, 16 };
	k[n++] = (struct kind){ "async", (CUdeviceptr)async, 256 };
	k[n++] = (struct kind){ "pinned", (CUdeviceptr)pinned, 64 };
	k[n++] = (struct kind){ "mapped", (CUdeviceptr)mapped, 64 };
	k[n++] = (struct kind){ "managed", (CUdeviceptr)managed, 512 };
	k[n++] = (struct kind){ "vmm", va, 4096 };
	k[n++] = (struct kind){ "global", (CUdeviceptr)global, 8 };
	k[n++] = (struct kind){ "pageable", (CUdeviceptr)plain, 64 };

	for (i = 0; i < n; i++)
		for (a = CU_POINTER_ATTRIBUTE_CONTEXT;
		    a <= CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE; a++)
			if (a != CU_POINTER_ATTRIBUTE_P2P_TOKENS)
				say(&k[i], a);

	// All at once: what cuPointerGetAttributes answers for each kind.
	for (i = 0; i < n; i++) {
		CUpointer_attribute at[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
		    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		    CU_POINTER_ATTRIBUTE_IS_MANAGED };
		unsigned mt = 99;
		int ord = 99, man = 99;
		void *data[3] = { &mt, &ord, &man };
		CUresult e = cuPointerGetAttributes(3, at, data,
		    k[i].base + k[i].off);
		const char *s = NULL;

		cuGetErrorName(e, &s);
		printf("%-8s all: %s type %u ordinal %d managed %d\n",
		    k[i].name, s ? s : "?", mt, ord, man);
	}

	// The flags of host memory, as cudart and the driver give them.
	for (i = 3; i <= 4; i++) {
		unsigned fl = 99;
		CUresult e = cuMemHostGetFlags(&fl,
		    (void *)(k[i].base + k[i].off));
		const char *s = NULL;

		cuGetErrorName(e, &s);
		printf("%-8s flags: %s %u\n", k[i].name, s ? s : "?", fl);
	}

	CK(cuMemUnmap(va, gran));
	CK(cuMemRelease(h));
	CK(cuMemAddressFree(va, 2 * gran));
	free(plain);
	RT(cudaFree(managed));
	RT(cudaFreeHost(mapped));
	RT(cudaFreeHost(pinned));
	RT(cudaFreeAsync(async, 0));
	RT(cudaStreamSynchronize(0));
	CK(cuMemFree(small));
	CK(cuMemFree(d));
	printf(NAME ": ok\n");
	return 0;
}
