/*
 * The host backend: remoted calls executed in host memory, for machines
 * without a GPU (CI).  It lets real nvcc-built programs, with the real
 * cudart, run end to end through the client library anywhere; it is a
 * test backend, never a result.
 *
 * One device, described with an H200's attributes under a name that says
 * it is none.  Device memory is host memory and a device pointer is the
 * host address, so that host kernels use pointer arguments as they are.
 * Everything runs to completion when it is called: streams are only ids,
 * events only timestamps.  A kernel runs if the library named by
 * host_kernels registers a host implementation of its mangled name
 * (gleam-host-kernel.h); of a module's image only its cubins' symbol
 * tables are read, for the names of its kernels and its globals' sizes
 * and initial values.
 *
 * Ownership: a context owns its allocations (struct hctx), a module or a
 * library its kernels and globals (struct hmod), the backend the kernel
 * table.  Whatever frees memory first takes its range out of the client's
 * map (backend.h), so that no later copy or kernel argument check can
 * reach it: a stale range here would be a write into the server's heap.
 */
#include <sys/mman.h>
#include <sys/random.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "backend.h"
#include "check.h"
#include "pool.h"
#include "copy3d.h"
#include "gleam-host-kernel.h"
#include "host.h"
#include "vmm.h"
#include "log.h"
#include "util.h"

#define HOST_NAME	"Gleam host backend (H200 attributes)"
#define HOST_VERSION	13000		/* the driver version reported */
#define HOST_ALIGN	256		/* of allocations, as the driver's */
#define HOST_PITCH	512		/* of cuMemAllocPitch's rows */
#define HOST_ARGMAX	32764		/* bytes of parameters, CUDA 12.1+ */
#define HOST_PALIGN	256		/* the largest parameter alignment */
#define HOST_MAXPARAMS	4096		/* the client's limit */
#define HOST_COPYMAX	(1u << 30)	/* the largest global */

/*
 * What an H200 (SXM, compute capability 9.0) reports, by attribute, as one
 * read with driver 13000 did; only where it sits is left out (PCI bus,
 * device and domain 0).
 */
static const int host_attr[CU_DEVICE_ATTRIBUTE_MAX] = {
#define A(a, v)	[CU_DEVICE_ATTRIBUTE_##a] = (v)
	A(MAX_THREADS_PER_BLOCK, 1024),
	A(MAX_BLOCK_DIM_X, 1024),
	A(MAX_BLOCK_DIM_Y, 1024),
	A(MAX_BLOCK_DIM_Z, 64),
	A(MAX_GRID_DIM_X, 2147483647),
	A(MAX_GRID_DIM_Y, 65535),
	A(MAX_GRID_DIM_Z, 65535),
	A(MAX_SHARED_MEMORY_PER_BLOCK, 49152),
	A(TOTAL_CONSTANT_MEMORY, 65536),
	A(WARP_SIZE, 32),
	A(MAX_PITCH, 2147483647),
	A(MAX_REGISTERS_PER_BLOCK, 65536),
	A(CLOCK_RATE, 1980000),
	A(TEXTURE_ALIGNMENT, 512),
	A(GPU_OVERLAP, 1),
	A(MULTIPROCESSOR_COUNT, 132),
	A(KERNEL_EXEC_TIMEOUT, 0),
	A(INTEGRATED, 0),
	A(CAN_MAP_HOST_MEMORY, 1),
	A(COMPUTE_MODE, 0),
	A(MAXIMUM_TEXTURE1D_WIDTH, 131072),
	A(MAXIMUM_TEXTURE2D_WIDTH, 131072),
	A(MAXIMUM_TEXTURE2D_HEIGHT, 65536),
	A(MAXIMUM_TEXTURE3D_WIDTH, 16384),
	A(MAXIMUM_TEXTURE3D_HEIGHT, 16384),
	A(MAXIMUM_TEXTURE3D_DEPTH, 16384),
	A(MAXIMUM_TEXTURE2D_LAYERED_WIDTH, 32768),
	A(MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, 32768),
	A(MAXIMUM_TEXTURE2D_LAYERED_LAYERS, 2048),
	A(SURFACE_ALIGNMENT, 512),
	A(CONCURRENT_KERNELS, 1),
	A(ECC_ENABLED, 1),
	A(PCI_BUS_ID, 0),
	A(PCI_DEVICE_ID, 0),
	A(TCC_DRIVER, 0),
	A(MEMORY_CLOCK_RATE, 3201000),
	A(GLOBAL_MEMORY_BUS_WIDTH, 6016),
	A(L2_CACHE_SIZE, 62914560),
	A(MAX_THREADS_PER_MULTIPROCESSOR, 2048),
	A(ASYNC_ENGINE_COUNT, 3),
	A(UNIFIED_ADDRESSING, 1),
	A(MAXIMUM_TEXTURE1D_LAYERED_WIDTH, 32768),
	A(MAXIMUM_TEXTURE1D_LAYERED_LAYERS, 2048),
	A(CAN_TEX2D_GATHER, 1),
	A(MAXIMUM_TEXTURE2D_GATHER_WIDTH, 32768),
	A(MAXIMUM_TEXTURE2D_GATHER_HEIGHT, 32768),
	A(MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, 8192),
	A(MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, 8192),
	A(MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, 32768),
	A(PCI_DOMAIN_ID, 0),
	A(TEXTURE_PITCH_ALIGNMENT, 32),
	A(MAXIMUM_TEXTURECUBEMAP_WIDTH, 32768),
	A(MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, 32768),
	A(MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, 2046),
	A(MAXIMUM_SURFACE1D_WIDTH, 32768),
	A(MAXIMUM_SURFACE2D_WIDTH, 131072),
	A(MAXIMUM_SURFACE2D_HEIGHT, 65536),
	A(MAXIMUM_SURFACE3D_WIDTH, 16384),
	A(MAXIMUM_SURFACE3D_HEIGHT, 16384),
	A(MAXIMUM_SURFACE3D_DEPTH, 16384),
	A(MAXIMUM_SURFACE1D_LAYERED_WIDTH, 32768),
	A(MAXIMUM_SURFACE1D_LAYERED_LAYERS, 2048),
	A(MAXIMUM_SURFACE2D_LAYERED_WIDTH, 32768),
	A(MAXIMUM_SURFACE2D_LAYERED_HEIGHT, 32768),
	A(MAXIMUM_SURFACE2D_LAYERED_LAYERS, 2048),
	A(MAXIMUM_SURFACECUBEMAP_WIDTH, 32768),
	A(MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, 32768),
	A(MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, 2046),
	A(MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 268435456),
	A(MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072),
	A(MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000),
	A(MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2097120),
	A(MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, 32768),
	A(MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, 32768),
	A(COMPUTE_CAPABILITY_MAJOR, 9),
	A(COMPUTE_CAPABILITY_MINOR, 0),
	A(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, 32768),
	A(STREAM_PRIORITIES_SUPPORTED, 1),
	A(GLOBAL_L1_CACHE_SUPPORTED, 1),
	A(LOCAL_L1_CACHE_SUPPORTED, 1),
	A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472),
	A(MAX_REGISTERS_PER_MULTIPROCESSOR, 65536),
	A(MANAGED_MEMORY, 1),
	A(MULTI_GPU_BOARD, 0),
	A(MULTI_GPU_BOARD_GROUP_ID, 0),
	A(HOST_NATIVE_ATOMIC_SUPPORTED, 0),
	A(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2),
	A(PAGEABLE_MEMORY_ACCESS, 0),
	A(CONCURRENT_MANAGED_ACCESS, 1),
	A(COMPUTE_PREEMPTION_SUPPORTED, 1),
	A(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1),
	A(CAN_USE_STREAM_MEM_OPS_V1, 0),
	A(CAN_USE_64_BIT_STREAM_MEM_OPS_V1, 0),
	A(CAN_USE_STREAM_WAIT_VALUE_NOR_V1, 0),
	A(COOPERATIVE_LAUNCH, 1),
	A(COOPERATIVE_MULTI_DEVICE_LAUNCH, 1),
	A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448),
	A(CAN_FLUSH_REMOTE_WRITES, 0),
	A(HOST_REGISTER_SUPPORTED, 1),
	A(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0),
	A(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST, 0),
	A(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1),
	A(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1),
	A(HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 0),
	A(HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 0),
	A(MAX_BLOCKS_PER_MULTIPROCESSOR, 32),
	A(GENERIC_COMPRESSION_SUPPORTED, 1),
	A(MAX_PERSISTING_L2_CACHE_SIZE, 39321600),
	A(MAX_ACCESS_POLICY_WINDOW_SIZE, 134217728),
	A(GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1),
	A(RESERVED_SHARED_MEMORY_PER_BLOCK, 1024),
	A(SPARSE_CUDA_ARRAY_SUPPORTED, 0),	/* not emulated */
	A(READ_ONLY_HOST_REGISTER_SUPPORTED, 1),
	A(TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 1),
	A(MEMORY_POOLS_SUPPORTED, 1),
	A(GPU_DIRECT_RDMA_SUPPORTED, 1),
	A(GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, 1),
	A(GPU_DIRECT_RDMA_WRITES_ORDERING, 100),
	A(MEMPOOL_SUPPORTED_HANDLE_TYPES, 9),
	A(CLUSTER_LAUNCH, 1),
	A(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 1),
	A(CAN_USE_64_BIT_STREAM_MEM_OPS, 1),
	A(CAN_USE_STREAM_WAIT_VALUE_NOR, 1),
	A(DMA_BUF_SUPPORTED, 1),
	A(IPC_EVENT_SUPPORTED, 1),
	A(MEM_SYNC_DOMAIN_COUNT, 4),
	A(TENSOR_MAP_ACCESS_SUPPORTED, 1),
	A(HANDLE_TYPE_FABRIC_SUPPORTED, 1),
	A(UNIFIED_FUNCTION_POINTERS, 1),
	A(NUMA_CONFIG, 0),
	A(NUMA_ID, -1),
	A(MULTICAST_SUPPORTED, 0),
	A(MPS_ENABLED, 0),
	A(HOST_NUMA_ID, 0),
	A(D3D12_CIG_SUPPORTED, 0),
	A(MEM_DECOMPRESS_ALGORITHM_MASK, 0),
	A(MEM_DECOMPRESS_MAXIMUM_LENGTH, 0),
	A(VULKAN_CIG_SUPPORTED, 0),
	A(GPU_PCI_DEVICE_ID, 590680286),
	A(GPU_PCI_SUBSYSTEM_ID, 415174878),
	A(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1),
	A(HOST_NUMA_MEMORY_POOLS_SUPPORTED, 1),
	A(HOST_NUMA_MULTINODE_IPC_SUPPORTED, 0),
	A(HOST_MEMORY_POOLS_SUPPORTED, 1),
	A(HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1),
	A(HOST_ALLOC_DMA_BUF_SUPPORTED, 0),
	A(ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED, 0),
#undef A
};

/* "gleam\0host" in a version 4 UUID: fixed, so runs compare. */
static const uint8_t host_uuid[16] = {
	0x67, 0x6c, 0x65, 0x61, 0x6d, 0x00, 0x40, 0x00,
	0x80, 0x68, 0x6f, 0x73, 0x74, 0x00, 0x00, 0x01
};

#define HOST_SMS	132
#define HOST_MAXDYN	49152		/* dynamic shared memory by default */

/* A kernel the backend knows: registered, or seen in an image only. */
struct hkern {
	char		*name;
	gleam_host_fn	*fn;		/* NULL: no host implementation */
	uint32_t	 nparams, argbytes;
	uint32_t	*offset, *size;
};

/*
 * Pages mapped at the addresses a migrated client's allocations had
 * (host_mig_load), shared by the allocations in them: unmapped with the
 * last.
 */
struct hrun {
	uint64_t	 base, len;
	unsigned	 refs;
};

/* An allocation, device memory or a global. */
struct halloc {
	void		*raw;		/* what calloc or mmap gave */
	uint64_t	 size;		/* counted against the budget */
	uint64_t	 maplen;	/* mmap's length, or 0: calloc's */
	struct hrun	*run;		/* or the pages it lies in */
};

/* A context: the allocations it owns. */
struct hctx {
	struct htab	 allocs;	/* device pointer -> struct halloc */
	int		 fault;		/* a kernel faulted: its sticky error */
};

/* One kernel of a module or library, as a CUfunction or CUkernel. */
struct hfunc {
	const struct hkern *k;
	int		 maxdyn;	/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_... */
	int		 carveout;
};

/* A global an image declares. */
struct hsym {
	char		*name;
	uint64_t	 size;
	uint8_t		*init;		/* its initial value, or NULL: zero */
};

/* A global's instance: one per module, or per library and context. */
struct hglob {
	struct hglob	*next;
	const char	*name;		/* the hsym's or the library's */
	uint64_t	 size;
	const void	*ctx;		/* the context robj it belongs to */
	struct halloc	*a;
	uint64_t	 base;
};

/* A module or a library. */
struct hmod {
	struct hfunc	*f;
	size_t		 nf;
	struct hkern	*extra;		/* kernels with no implementation */
	size_t		 nextra, xcap;
	struct hsym	*sym;		/* its globals, by name */
	size_t		 nsym, scap;
	struct hglob	*globals;
};

struct hevent {
	unsigned	 flags;
	int		 recorded;
	struct timespec	 t;
	uint64_t	 capgraph;	/* the graph a capture recorded it in */
	uint64_t	 capid;		/* and which capture */
};

static struct {
	char		 path[1024];
	uint64_t	 budget;
	uint64_t	 used;		/* atomic: bytes handed out */
	void		*dl;
	struct hkern	*k;		/* the registered kernels */
	size_t		 nk;
	const struct gleam_host_global *globals;
	size_t		 nglobals;
	int		 ready;
} host = { .budget = HOST_BUDGET_DEFAULT };

/* The launch running on this thread: what gleam_host_global_ptr reads. */
static __thread struct {
	struct rclient	*cl;
	struct hmod	*m;
	const void	*ctx;
	int		 fault;		/* the kernel reached outside */
	int		 assert_;	/* it failed an assert */
} host_cur;

/*
 * A client's device output (gleam_host_printf, gleam_host_assert_fail):
 * records of u8 stream (1 stdout, 2 stderr), u32 length and the bytes,
 * written out with this process's stdio at the client's next
 * synchronizing call, as the driver flushes its printf buffer.
 */
#define HOST_OUTMAX	(8u << 20)	/* bytes held, as a printf FIFO */

struct hclient {
	struct pw	 out;
};

void
host_backend_configure(const char *kernels, uint64_t budget)
{
	if (kernels == NULL)
		kernels = "";
	/* A file name alone is a file here, not a library to search for. */
	snprintf(host.path, sizeof host.path, "%s%s",
	    kernels[0] != '\0' && strchr(kernels, '/') == NULL ? "./" : "",
	    kernels);
	host.budget = budget != 0 ? budget : HOST_BUDGET_DEFAULT;
}

/* ---- memory ------------------------------------------------------------ */

struct harray;
static void	harray_free(struct harray *);

/* Takes n bytes of the budget; -1 if they are not there. */
static int
host_reserve(uint64_t n)
{
	return budget_take(&host.used, n, host.budget);
}

static void
host_unreserve(uint64_t n)
{
	budget_give(&host.used, n);
}

/*
 * Zeroed memory of at least bytes, 256-byte aligned at *base: zeroed so
 * that no client reads what another left.  Where the region of pools'
 * ranges is used (host_va_map, below), from it, page by page: a session
 * that moves finds its addresses free at the target, whatever the heap
 * of either process (under AddressSanitizer the heaps of two processes
 * lie at the same addresses); else from calloc, whose large blocks come
 * straight from the kernel, already zero.
 */
static int host_va_map(uint64_t, void **);

static int
host_alloc(uint64_t bytes, struct halloc **out, uint64_t *base)
{
	struct halloc *a;
	uint64_t n;
	void *p;

	if (bytes > host.budget)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n = (bytes + HOST_ALIGN - 1) & ~(uint64_t)(HOST_ALIGN - 1);
	if (host_reserve(n) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((a = malloc(sizeof *a)) == NULL) {
		host_unreserve(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->size = n;
	a->run = NULL;
	a->maplen = 0;
	if (host_va_map(n, &p) == 0) {
		a->raw = p;
		a->maplen = (n + 4095) & ~(uint64_t)4095;
	} else if ((a->raw = calloc(1, n + HOST_ALIGN - 1)) == NULL) {
		free(a);
		host_unreserve(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*base = ((uintptr_t)a->raw + HOST_ALIGN - 1) &
	    ~(uintptr_t)(HOST_ALIGN - 1);
	*out = a;
	return CUDA_SUCCESS;
}

static void
host_free(struct halloc *a)
{
	host_unreserve(a->size);
	if (a->run != NULL) {
		if (--a->run->refs == 0) {
			munmap((void *)(uintptr_t)a->run->base, a->run->len);
			free(a->run);
		}
	} else if (a->maplen != 0)
		munmap(a->raw, a->maplen);
	else
		free(a->raw);
	free(a);
}

/* ---- one-way allocation (pool.c): granules are budget, mapped by mmap -- */

#define HOST_GRAN	(2u << 20)

static int
hp_granule(struct robj *ctx, uint64_t *gran)
{
	*gran = HOST_GRAN;
	return CUDA_SUCCESS;
}

static int
hp_meminfo(struct robj *ctx, uint64_t *freeb, uint64_t *total)
{
	uint64_t used = __atomic_load_n(&host.used, __ATOMIC_RELAXED);

	*freeb = used < host.budget ? host.budget - used : 0;
	*total = host.budget;
	return CUDA_SUCCESS;
}

/*
 * Pools' ranges come from a region of their own, 32 to 64 TiB, far from
 * where the process maps (below the stack) and from its heap (by the
 * executable), starting at a random 64 GiB slot of it in each process.
 * Where the kernel chose, a worker's range lay where its server, from
 * which the next worker forks, mapped later, and a session could not
 * come back to the server it left (gleam-protocol(5), Migration).
 */
#if defined(__SANITIZE_THREAD__)
#define HOST_VA_REGION	0	/* ThreadSanitizer's shadow lies there */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOST_VA_REGION	0
#endif
#endif
#ifndef HOST_VA_REGION
#define HOST_VA_REGION	1
#endif
#define HOST_VA_LO	(32ull << 40)
#define HOST_VA_HI	(64ull << 40)
#define HOST_VA_SLOT	(64ull << 30)
static uint64_t host_va_next;

static int
hp_reserve_region(uint64_t size, uint64_t gran, uint64_t *va)
{
	uint64_t a, start, r, tries;
	void *p;

	if ((start = __atomic_load_n(&host_va_next, __ATOMIC_RELAXED)) == 0) {
		if (getrandom(&r, sizeof r, 0) != sizeof r)
			r = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
		start = HOST_VA_LO + r % ((HOST_VA_HI - HOST_VA_LO) /
		    HOST_VA_SLOT) * HOST_VA_SLOT;
	}
	a = (start + gran - 1) & ~(gran - 1);
	for (tries = 0; tries < 64; tries++) {
		if (a < HOST_VA_LO || a > HOST_VA_HI - size)
			a = HOST_VA_LO;
		p = mmap((void *)(uintptr_t)a, size, PROT_NONE, MAP_PRIVATE |
		    MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && (uintptr_t)p == a) {
			__atomic_store_n(&host_va_next, a + size,
			    __ATOMIC_RELAXED);
			*va = a;
			return 0;
		}
		if (p != MAP_FAILED)
			munmap(p, size);
		/* Taken (another thread's pool): past it, a slot on. */
		a = (a + size + HOST_VA_SLOT - 1) & ~(HOST_VA_SLOT - 1);
	}
	return -1;
}

/* n bytes of zeroed pages from the region, at *p: 0, or -1 (no region). */
static int
host_va_map(uint64_t n, void **p)
{
	uint64_t va;

	n = (n + 4095) & ~(uint64_t)4095;
	if (!HOST_VA_REGION || hp_reserve_region(n, 4096, &va) == -1)
		return -1;
	if (mprotect((void *)(uintptr_t)va, n, PROT_READ | PROT_WRITE) ==
	    -1) {
		munmap((void *)(uintptr_t)va, n);
		return -1;
	}
	*p = (void *)(uintptr_t)va;
	return 0;
}

static int
hp_reserve(struct robj *ctx, uint64_t size, uint64_t gran, uint64_t *va)
{
	void *p;
	uint64_t a;

	if (HOST_VA_REGION && size <= HOST_VA_HI - HOST_VA_LO &&
	    hp_reserve_region(size, gran, va) == 0)
		return CUDA_SUCCESS;
	/* Over-reserved by a granule, to align it. */
	if ((p = mmap(NULL, size + gran, PROT_NONE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = ((uintptr_t)p + gran - 1) & ~(gran - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((void *)(uintptr_t)(a + size), (uintptr_t)p + size + gran -
	    (a + size));
	*va = a;
	return CUDA_SUCCESS;
}

static void
hp_unreserve(struct robj *ctx, uint64_t va, uint64_t size)
{
	munmap((void *)(uintptr_t)va, size);
}

static int
hp_create(struct robj *ctx, uint64_t gran, void **h)
{
	static char token;

	if (host_reserve(gran) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*h = &token;
	return CUDA_SUCCESS;
}

static void
hp_release(struct robj *ctx, void *h, uint64_t gran)
{
	host_unreserve(gran);
}

static int
hp_map(struct robj *ctx, uint64_t va, uint64_t gran, void *h)
{
	return mmap((void *)(uintptr_t)va, gran, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ?
	    CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static int
hp_access(struct robj *ctx, uint64_t va, uint64_t size)
{
	return CUDA_SUCCESS;
}

/* Back to reserved addresses, the pages returned. */
static void
hp_unmap(struct robj *ctx, uint64_t va, uint64_t size)
{
	mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Exactly [va, va + size), where nothing is mapped yet. */
static int
hp_reserve_at(struct robj *ctx, uint64_t va, uint64_t size)
{
	void *p;

	p = mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((uintptr_t)p != va) {	/* a kernel without NOREPLACE */
		munmap(p, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static const struct pool_ops host_pool = {
	hp_granule, hp_meminfo, hp_reserve, hp_unreserve, hp_create,
	hp_release, hp_map, hp_access, hp_unmap, hp_reserve_at
};

/*
 * ---- virtual memory management (vmm.c) ----------------------------------
 * A reservation is a PROT_NONE mapping of host addresses; an allocation is
 * a memory file of its size, budget taken, so that its bytes outlive a
 * mapping and show through every mapping of it (as physical memory does);
 * a mapping maps the file there, shared.  Sizes, addresses and offsets
 * are multiples of the granule (2 MiB), as an H200's driver requires.
 */
struct hvmem {
	int		 fd;
	uint64_t	 size;
};

static int
hv_reserve(uint64_t size, uint64_t align, uint64_t hint, uint64_t flags,
    uint64_t *va)
{
	void *p;

	/* check_call took only powers of two (or 0) for align. */
	if (size % HOST_GRAN != 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (align < HOST_GRAN)
		align = HOST_GRAN;
	/* The hint where it is free and aligned, else anywhere. */
	if (hint != 0 && hint % align == 0) {
		p = mmap((void *)(uintptr_t)hint, size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		    MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED && (uintptr_t)p == hint) {
			*va = hint;
			return CUDA_SUCCESS;
		}
		if (p != MAP_FAILED)
			munmap(p, size);
	}
	return hp_reserve(NULL, size, align, va);
}

static int
hv_free(uint64_t va, uint64_t size)
{
	munmap((void *)(uintptr_t)va, size);
	return CUDA_SUCCESS;
}

static int
hv_create(uint64_t size, const struct vmm_prop *p, void **h)
{
	struct hvmem *m;

	if (p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    p->loctype != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->locid != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (size % HOST_GRAN != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((m = malloc(sizeof *m)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (host_reserve(size) == -1) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if ((m->fd = memfd_create("gleam-vmm", MFD_CLOEXEC)) == -1 ||
	    ftruncate(m->fd, (off_t)size) == -1) {
		if (m->fd != -1)
			close(m->fd);
		host_unreserve(size);
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->size = size;
	*h = m;
	return CUDA_SUCCESS;
}

/* Mappings keep the file's pages; the budget goes back now. */
static void
hv_release(void *h, uint64_t size)
{
	struct hvmem *m = h;

	close(m->fd);
	host_unreserve(m->size);
	free(m);
}

static int
hv_map(uint64_t va, uint64_t size, uint64_t off, void *h)
{
	struct hvmem *m = h;

	if (va % HOST_GRAN != 0 || size % HOST_GRAN != 0 ||
	    off % HOST_GRAN != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return mmap((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_FIXED, m->fd, (off_t)off) == MAP_FAILED ?
	    CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static int
hv_unmap(uint64_t va, uint64_t size)
{
	hp_unmap(NULL, va, size);
	return CUDA_SUCCESS;
}

static int
hv_set_access(uint64_t va, uint64_t size, const struct vmm_access *d,
    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (d[i].type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    d[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
		if (d[i].id != 0)
			return CUDA_ERROR_INVALID_DEVICE;
	}
	return CUDA_SUCCESS;
}

static const struct vmm_ops host_vmm = {
	hv_reserve, hv_free, hv_create, hv_release, hv_map, hv_unmap,
	hv_set_access, NULL
};

/* ---- objects ----------------------------------------------------------- */

static void
hctx_free(struct hctx *x)
{
	size_t i = 0;
	uint64_t base;
	void *v;

	if (x == NULL)
		return;
	while (htab_next(&x->allocs, &i, &base, &v))
		host_free(v);
	htab_free(&x->allocs);
	free(x);
}

static void
hglob_free(struct rclient *cl, struct hglob *g)
{
	rmem_drop(cl, g);
	host_free(g->a);
	free(g);
}

/* Frees the globals of m that belong to ctx, or all of them (ctx NULL). */
static void
hmod_drop_globals(struct rclient *cl, struct hmod *m, const void *ctx)
{
	struct hglob **gp = &m->globals, *g;

	while ((g = *gp) != NULL) {
		if (ctx == NULL || g->ctx == ctx) {
			*gp = g->next;
			hglob_free(cl, g);
		} else
			gp = &g->next;
	}
}

static void
hmod_free(struct rclient *cl, struct hmod *m)
{
	size_t i;

	if (m == NULL)
		return;
	hmod_drop_globals(cl, m, NULL);
	for (i = 0; i < m->nextra; i++)
		free(m->extra[i].name);
	for (i = 0; i < m->nsym; i++) {
		free(m->sym[i].name);
		free(m->sym[i].init);
	}
	free(m->extra);
	free(m->sym);
	free(m->f);
	free(m);
}

/*
 * Forgets every object that lived in ctx and frees what they held: the
 * context's modules (with their functions and globals), streams and
 * events, and its instances of libraries' globals.  Libraries and their
 * kernels outlive contexts, as the driver's do.
 */
static void
host_forget(struct rclient *cl, struct robj *ctx)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_LIBRARY)
			hmod_drop_globals(cl, o->h, ctx);
		if (o->ctx != ctx)
			continue;
		if (o->kind == RK_MODULE)
			hmod_free(cl, o->h);
		else if (o->kind == RK_EVENT || o->kind == RK_TEX ||
		    o->kind == RK_SURF || o->kind == RK_TEXREF ||
		    o->kind == RK_SURFREF)
			free(o->h);
		else if (o->kind == RK_MIPMAP ||
		    (o->kind == RK_ARRAY && o->parent == NULL))
			harray_free(o->h);
		robj_del(cl, id);
	}
	rmem_drop(cl, ctx);
}

/* Ends a context: its objects, then its memory. */
static void
host_ctx_end(struct rclient *cl, struct robj *o)
{
	pool_drop(cl, o, &host_pool);
	host_forget(cl, o);
	hctx_free(o->h);
	o->h = NULL;
}

/* ---- the kernel library ------------------------------------------------ */

/* Lays out parameters as C lays out a struct's members. */
static int
host_layout(struct hkern *k, const struct gleam_host_kernel *g,
    char *err, size_t errlen)
{
	uint64_t off = 0;
	uint32_t i, sz, al;

	k->nparams = g->nparams;
	if (g->nparams > 0 && g->params == NULL) {
		snprintf(err, errlen, "%s: no parameters given", g->name);
		return -1;
	}
	if (g->nparams > HOST_MAXPARAMS) {
		snprintf(err, errlen, "%s: %u parameters", g->name,
		    g->nparams);
		return -1;
	}
	k->offset = calloc(g->nparams ? g->nparams : 1, sizeof *k->offset);
	k->size = calloc(g->nparams ? g->nparams : 1, sizeof *k->size);
	if (k->offset == NULL || k->size == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < g->nparams; i++) {
		sz = g->params[i].size;
		al = g->params[i].align;
		if (sz == 0 || sz > HOST_ARGMAX || al == 0 ||
		    (al & (al - 1)) != 0 || al > HOST_PALIGN) {
			snprintf(err, errlen, "%s: parameter %u: size %u, "
			    "alignment %u", g->name, i, sz, al);
			return -1;
		}
		off = (off + al - 1) & ~(uint64_t)(al - 1);
		k->offset[i] = (uint32_t)off;
		k->size[i] = sz;
		off += sz;
		if (off > HOST_ARGMAX) {
			snprintf(err, errlen, "%s: parameters over %d bytes",
			    g->name, HOST_ARGMAX);
			return -1;
		}
	}
	k->argbytes = (uint32_t)off;
	return 0;
}

static const struct hkern *
host_kern(const char *name)
{
	size_t i;

	for (i = 0; i < host.nk; i++)
		if (strcmp(host.k[i].name, name) == 0)
			return &host.k[i];
	return NULL;
}

static int host_access(const void *, unsigned long long);
static int host_printf(const char *, ...)
    __attribute__((format(printf, 1, 2)));
static void host_assert_fail(const char *);
static void host_set_cond(unsigned long long, unsigned);
static void host_out_flush(struct rclient *);
static void *host_global_ptr(const char *);

/* Loads the kernel library and checks every entry of its tables. */
static int
host_load(char *err, size_t errlen)
{
	const struct gleam_host_kernel *ks;
	const struct gleam_host_global *gs;
	const unsigned *abi;
	void *(**gp)(const char *);
	int (**ap)(const void *, unsigned long long);
	int (**pp)(const char *, ...);
	void (**fp)(const char *);
	void (**cp)(unsigned long long, unsigned);
	size_t n, i, j;

	if ((host.dl = dlopen(host.path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	abi = dlsym(host.dl, "gleam_host_kernel_abi");
	ks = dlsym(host.dl, "gleam_host_kernels");
	gs = dlsym(host.dl, "gleam_host_globals");
	gp = dlsym(host.dl, "gleam_host_global_ptr");
	ap = dlsym(host.dl, "gleam_host_access");
	pp = dlsym(host.dl, "gleam_host_printf");
	fp = dlsym(host.dl, "gleam_host_assert_fail");
	cp = dlsym(host.dl, "gleam_host_set_conditional");
	if (abi == NULL || ks == NULL || ap == NULL) {
		snprintf(err, errlen, "%s: not a kernel library (no %s)",
		    host.path, abi == NULL ? "gleam_host_kernel_abi" :
		    ks == NULL ? "gleam_host_kernels" : "gleam_host_access");
		return -1;
	}
	if (*abi != GLEAM_HOST_KERNEL_ABI) {
		snprintf(err, errlen, "%s: kernel ABI %u, not %d", host.path,
		    *abi, GLEAM_HOST_KERNEL_ABI);
		return -1;
	}
	for (n = 0; ks[n].name != NULL; n++)
		;
	if ((host.k = calloc(n ? n : 1, sizeof *host.k)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct hkern *k = &host.k[i];
		size_t len = strlen(ks[i].name);

		host.nk = i + 1;
		if (len == 0 || len > RPC_STRING_MAX || ks[i].fn == NULL) {
			snprintf(err, errlen, "%s: kernel %zu: bad name or no "
			    "function", host.path, i);
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(host.k[j].name, ks[i].name) == 0) {
				snprintf(err, errlen, "%s: %s: registered "
				    "twice", host.path, ks[i].name);
				return -1;
			}
		if ((k->name = strdup(ks[i].name)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		k->fn = ks[i].fn;
		if (host_layout(k, &ks[i], err, errlen) == -1)
			return -1;
	}
	for (n = 0; gs != NULL && gs[n].name != NULL; n++) {
		if (gs[n].name[0] == '\0' || gs[n].size == 0 ||
		    gs[n].size > HOST_COPYMAX) {
			snprintf(err, errlen, "%s: global %zu: bad name or "
			    "size", host.path, n);
			return -1;
		}
	}
	host.globals = gs;
	host.nglobals = n;
	*ap = host_access;
	if (gp != NULL)
		*gp = host_global_ptr;
	if (pp != NULL)
		*pp = host_printf;
	if (fp != NULL)
		*fp = host_assert_fail;
	if (cp != NULL)
		*cp = host_set_cond;
	log_info("host backend: %zu kernels, %zu globals from %s", host.nk,
	    host.nglobals, host.path);
	return 0;
}

static int
host_init(char *err, size_t errlen)
{
	if (host.ready)
		return 0;
	if (host.path[0] != '\0' && host_load(err, errlen) == -1)
		return -1;
	if (host.path[0] == '\0')
		log_info("host backend: no host_kernels: launches will fail");
	host.ready = 1;
	return 0;
}

static int
host_describe(struct pw *w, uint32_t *ndev, uint32_t *version)
{
	int a;

	*version = HOST_VERSION;
	*ndev = 1;
	pw_u32(w, 1);
	pw_str(w, HOST_NAME);
	pw_bytes(w, host_uuid, sizeof host_uuid);
	pw_u64(w, host.budget);
	pw_u32(w, CU_DEVICE_ATTRIBUTE_MAX);
	for (a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
		pw_u32(w, (uint32_t)host_attr[a]);
	return w->bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static int
host_client_new(struct rclient *cl)
{
	struct hclient *hc;

	/* Everything else lives in the object table. */
	if ((hc = calloc(1, sizeof *hc)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pw_init(&hc->out);
	cl->be = hc;
	return CUDA_SUCCESS;
}

struct hgraph;
static void	hgraph_free(struct hgraph *);
struct huobj;
static void	huobj_forget(struct huobj *);

static void
host_client_free(struct rclient *cl)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;

	/* User objects first: the graphs' references free them later. */
	while (htab_next(&cl->objs, &i, &id, &v))
		if ((o = v)->kind == RK_UOBJ && o->h != NULL) {
			huobj_forget(o->h);
			o->h = NULL;
		}
	i = 0;
	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		switch (o->kind) {
		case RK_MODULE:
		case RK_LIBRARY:
			hmod_free(cl, o->h);
			break;
		case RK_EVENT:
		case RK_TEX:
		case RK_SURF:
		case RK_TEXREF:
		case RK_SURFREF:
			free(o->h);
			break;
		case RK_ARRAY:
			if (o->parent == NULL)
				harray_free(o->h);
			break;
		case RK_MIPMAP:
			harray_free(o->h);
			break;
		case RK_GRAPH:
		case RK_GEXEC:
			if (o->parent == NULL)	/* a body: its node's */
				hgraph_free(o->h);
			break;
		case RK_CTX:
			pool_drop(cl, o, &host_pool);
			hctx_free(o->h);
			free(o->green);
			o->green = NULL;
			break;
		case RK_RESDESC:
			free(o->h);
			break;
		default:
			continue;
		}
		o->h = NULL;
	}
	vmm_drop(cl, &host_vmm);
	/* Nothing is left for the ranges to name. */
	cl->nranges = 0;
	/* The contexts' end flushes, as the driver's does at exit. */
	if (cl->be != NULL) {
		host_out_flush(cl);
		pw_free(&((struct hclient *)cl->be)->out);
		free(cl->be);
		cl->be = NULL;
	}
}

/* ---- contexts ---------------------------------------------------------- */

/*
 * The context named by id; NULL if the client has none such alive, or if
 * a kernel faulted in it: then everything but its end fails, as on a GPU.
 */
static struct robj *
host_ctx(struct rcall *c, uint64_t id, int *rc)
{
	struct robj *o = robj_get(c->cl, id, RK_CTX);

	if (o == NULL || o->h == NULL) {
		*rc = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	if (((struct hctx *)o->h)->fault) {
		*rc = ((struct hctx *)o->h)->fault;
		return NULL;
	}
	return o;
}

/* An event's call: its context's sticky error, if it has one. */
static int
host_event(struct rcall *c, uint64_t id, struct hevent **e)
{
	struct robj *o = robj_get(c->cl, id, RK_EVENT);

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->ctx != NULL && o->ctx->h != NULL &&
	    ((struct hctx *)o->ctx->h)->fault)
		return ((struct hctx *)o->ctx->h)->fault;
	*e = o->h;
	return CUDA_SUCCESS;
}

/* A stream id: 0, 1 and 2 are the special streams, others the client's. */
static int
host_stream(struct rcall *c, uint64_t id)
{
	struct robj *o;

	if (id <= 2)
		return 0;
	if ((o = robj_get(c->cl, id, RK_STREAM)) == NULL)
		return -1;
	rclient_touch(c->cl, o);
	return 0;
}

#define CTX(c, i)	do {						\
	int rc_;							\
	if (host_ctx((c), (c)->in[i].u, &rc_) == NULL)			\
		return rc_;						\
} while (0)

#define STREAM(c, i)	do {						\
	if (host_stream((c), (c)->in[i].u) == -1)			\
		return CUDA_ERROR_INVALID_HANDLE;			\
} while (0)

static struct hctx *
hctx_new(void)
{
	struct hctx *x = calloc(1, sizeof *x);

	if (x != NULL)
		htab_init(&x->allocs);
	return x;
}

static int
host_ctx_create(struct rcall *c, int primary)
{
	struct robj *o;
	struct hctx *x;
	uint64_t id = c->in[0].u;
	int dev = (int)c->in[1].u;	/* both calls: id, device, ... */

	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (primary && (o = robj_get(c->cl, id, RK_CTX)) != NULL) {
		if (o->h == NULL) {
			/* Reset or released to zero: a fresh context. */
			if ((o->h = hctx_new()) == NULL)
				return CUDA_ERROR_OUT_OF_MEMORY;
		}
		o->refs++;
		return CUDA_SUCCESS;
	}
	if ((x = hctx_new()) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((o = robj_new(c->cl, id, RK_CTX, x)) == NULL) {
		hctx_free(x);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->device = dev;
	o->refs = 1;
	return CUDA_SUCCESS;
}

static int c_ctx_create(struct rcall *c) { return host_ctx_create(c, 0); }
static int c_primary_retain(struct rcall *c) { return host_ctx_create(c, 1); }

static int
c_ctx_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	/* A green context's goes with it (R_GREEN_DESTROY). */
	if (o == NULL || o->h == NULL || o->green != NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	host_ctx_end(c->cl, o);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

static int
c_primary_release(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	if (o == NULL || o->refs <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (--o->refs == 0 && o->h != NULL)
		host_ctx_end(c->cl, o);
	return CUDA_SUCCESS;
}

static int
c_primary_reset(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	if (o == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (o->h != NULL)
		host_ctx_end(c->cl, o);
	o->refs = 0;
	return CUDA_SUCCESS;
}

static int
c_ctx_sync(struct rcall *c)
{
	struct robj *ctx;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	idle_report(c, ctx, IDLE_WAITED_ALL, NULL, NULL);
	return CUDA_SUCCESS;
}

/* in: ctx, limit, value */
static int
c_ctx_set_limit(struct rcall *c)
{
	/* The answers of an H200's driver; nothing here has a use for them. */
	CTX(c, 0);
	switch (c->in[1].u) {
	case CU_LIMIT_STACK_SIZE:
	case CU_LIMIT_PRINTF_FIFO_SIZE:
	case CU_LIMIT_MALLOC_HEAP_SIZE:
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
	case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
		return CUDA_SUCCESS;
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
		return c->in[2].u <= 128 ? CUDA_SUCCESS :
		    CUDA_ERROR_INVALID_VALUE;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
	case CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED:	/* not a CIG context */
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	case CU_LIMIT_SHMEM_SIZE:
	case CU_LIMIT_CIG_ENABLED:
		return CUDA_ERROR_NOT_PERMITTED;	/* query only */
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- memory calls ------------------------------------------------------ */

/* Makes bytes (at least one) of ctx's memory, in the client's map. */
static int
host_mem_new(struct rcall *c, struct robj *ctx, uint64_t bytes,
    uint64_t *base)
{
	struct hctx *x = ctx->h;
	struct halloc *a;
	int rc;

	if ((rc = host_alloc(bytes, &a, base)) != CUDA_SUCCESS)
		return rc;
	if (htab_put(&x->allocs, *base, a) == -1) {
		host_free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rmem_add(c->cl, *base, bytes, 0, ctx) == -1) {
		htab_del(&x->allocs, *base);
		host_free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

/* in: ctx, bytes -> dptr; R_MEM_ALLOC_HOST's too (all memory here is
 * the host's). */
static int
c_mem_alloc(struct rcall *c)
{
	struct robj *ctx;
	uint64_t p;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = host_mem_new(c, ctx, c->in[1].u, &p)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = p;
	return CUDA_SUCCESS;
}

/* in: ctx, width, height, element -> dptr, pitch */
static int
c_mem_alloc_pitch(struct rcall *c)
{
	struct robj *ctx;
	uint64_t w = c->in[1].u, h = c->in[2].u, pitch, p;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (w > host.budget || h > host.budget)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pitch = (w + HOST_PITCH - 1) & ~(uint64_t)(HOST_PITCH - 1);
	if (pitch > host.budget / h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = host_mem_new(c, ctx, pitch * h, &p)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = p;
	c->out[1].u = pitch;
	return CUDA_SUCCESS;
}

/* in: ctx, dptr */
static int
c_mem_free(struct rcall *c)
{
	struct robj *ctx, *o;
	struct halloc *a;
	size_t i = 0;
	uint64_t id, p = c->in[1].u;
	void *v;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (p == 0)
		return CUDA_SUCCESS;
	if (pool_free(c->cl, p, &host_pool, &rc))
		return rc;
	if (rmem_del(c->cl, p) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* Memory of another of the client's contexts is freed too. */
	a = htab_del(&((struct hctx *)ctx->h)->allocs, p);
	while (a == NULL && htab_next(&c->cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_CTX && o->h != NULL)
			a = htab_del(&((struct hctx *)o->h)->allocs, p);
	}
	if (a == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	host_free(a);
	return CUDA_SUCCESS;
}

/* in: ctx -> free, total */
static int
c_mem_get_info(struct rcall *c)
{
	uint64_t used = __atomic_load_n(&host.used, __ATOMIC_RELAXED);

	CTX(c, 0);
	c->out[0].u = used < host.budget ? host.budget - used : 0;
	c->out[1].u = host.budget;
	return CUDA_SUCCESS;
}

/*
 * in: option, type, location type, location id, handle types,
 * compression, RDMA capable, usage -> bytes.  2 MiB both ways, as an H200
 * answers, for pinned memory on the one device.
 */
static int
c_mem_granularity(struct rcall *c)
{
	if (c->in[0].u > CU_MEM_ALLOC_GRANULARITY_RECOMMENDED ||
	    c->in[1].u != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    c->in[2].u != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[3].u != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	c->out[0].u = 2u << 20;
	return CUDA_SUCCESS;
}

/* memPool, memMap, memTrim: pool.c, in the context named first. */
static int
c_mem_pool(struct rcall *c)
{
	struct robj *ctx;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	return pool_call(c, ctx, &host_pool);
}

/* R_VMM_*: vmm.c, for a client with that context. */
static int
c_vmm(struct rcall *c)
{
	CTX(c, 0);
	return vmm_call(c, &host_vmm);
}

/* in: ctx, stream, async, dptr, data */
static int
c_mem_htod(struct rcall *c)
{
	CTX(c, 0);
	STREAM(c, 1);
	if (rmem_check(c->cl, c->in[3].u, c->in[4].len) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[4].len > 0)
		memcpy((void *)(uintptr_t)c->in[3].u, c->in[4].p,
		    c->in[4].len);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, async, dptr, bytes -> data */
static int
c_mem_dtoh(struct rcall *c)
{
	size_t n = (size_t)c->in[4].u;
	void *p;

	CTX(c, 0);
	STREAM(c, 1);
	if (rmem_check(c->cl, c->in[3].u, n) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->into == NULL && (c->scratch = malloc(n ? n : 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = c->into != NULL ? c->into : c->scratch;
	memcpy(p, (const void *)(uintptr_t)c->in[3].u, n);
	c->out[0].p = p;
	c->out[0].len = (uint32_t)n;
	return CUDA_SUCCESS;
}

/* in: ctx, stream, async, dst, src, bytes */
static int
c_mem_dtod(struct rcall *c)
{
	CTX(c, 0);
	STREAM(c, 1);
	if (rmem_check(c->cl, c->in[3].u, c->in[5].u) == -1 ||
	    rmem_check(c->cl, c->in[4].u, c->in[5].u) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[5].u > 0)
		memmove((void *)(uintptr_t)c->in[3].u,
		    (const void *)(uintptr_t)c->in[4].u, (size_t)c->in[5].u);
	return CUDA_SUCCESS;
}

/* Fills n elements of el bytes (1, 2 or 4) with v's low bytes. */
static void
host_fill(uint8_t *p, unsigned v, unsigned el, uint64_t n)
{
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = v;
	uint64_t i;

	switch (el) {
	case 1:
		memset(p, (int)(v & 0xff), (size_t)n);
		break;
	case 2:
		for (i = 0; i < n; i++)
			memcpy(p + 2 * i, &v16, 2);
		break;
	default:
		for (i = 0; i < n; i++)
			memcpy(p + 4 * i, &v32, 4);
		break;
	}
}

/* in: ctx, stream, async, dptr, pitch, value, element, width, height */
static int
c_memset(struct rcall *c)
{
	uint64_t p = c->in[3].u, pitch = c->in[4].u, w = c->in[7].u,
	    h = c->in[8].u, span, r;
	unsigned v = (unsigned)c->in[5].u, el = (unsigned)c->in[6].u;

	CTX(c, 0);
	STREAM(c, 1);
	if (h == 0 || w == 0)
		return CUDA_SUCCESS;
	/* check_call passed the element, pitch and span. */
	if (check_memset_span(c, &span) == -1 ||
	    rmem_check(c->cl, p, span) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	for (r = 0; r < h; r++)
		host_fill((uint8_t *)(uintptr_t)(p + r * pitch), v, el, w);
	return CUDA_SUCCESS;
}

/*
 * ---- arrays, textures and surfaces ---------------------------------------
 * An array is linear host memory: element (x, y, z) at ((z * rows + y) *
 * pitch + x * element size), with pitch the width times the element size
 * (no padding), rows the height (1 for a 1D array) and slices the depth
 * or layers (1 for 1D and 2D).  A mipmapped array holds its levels so,
 * each with the extent the driver gives it: every side halved down to 1,
 * layers kept.  The driver's layout is opaque; only copies in and out and
 * descriptors show, and those agree.  Texture and surface objects keep
 * their descriptors for nothing: host kernels cannot fetch through them.
 */
struct harray {
	uint64_t	 w, h, d;	/* as created: h, d may be 0 */
	unsigned	 format, channels, flags, el;
	uint64_t	 pitch, rows, slices, bytes;
	uint8_t		*data;
	unsigned	 nlevels;	/* mipmapped: its levels */
	struct harray	*levels;
};

struct htex {
	uint64_t	 h;		/* the handle given for kernels */
	struct rpc_res	 r;
	struct rpc_texd	 t;
	struct rpc_view	 v;
};

static uint64_t host_texnext = 0x1000;	/* handles of texture objects */

static void
harray_free(struct harray *a)
{
	unsigned i;

	if (a == NULL)
		return;
	for (i = 0; i < a->nlevels; i++) {
		host_unreserve(a->levels[i].bytes);
		free(a->levels[i].data);
	}
	free(a->levels);
	if (a->data != NULL) {
		host_unreserve(a->bytes);
		free(a->data);
	}
	free(a);
}

/* One array's memory for its extent; a CUresult. */
static int
harray_fill(struct harray *a)
{
	uint64_t n;

	a->pitch = a->w * a->el;
	a->rows = a->h ? a->h : 1;
	a->slices = a->d ? a->d : 1;
	if (__builtin_mul_overflow(a->pitch, a->rows, &n) ||
	    __builtin_mul_overflow(n, a->slices, &n) || n > host.budget ||
	    host_reserve(n) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Zeroed: no client reads what another left. */
	if ((a->data = calloc(1, n)) == NULL) {
		host_unreserve(n);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->bytes = n;
	return CUDA_SUCCESS;
}

/* in: ctx, id, width, height, depth, format, channels, flags, levels */
static int
c_array_create(struct rcall *c)
{
	struct robj *ctx, *o;
	struct harray *a;
	unsigned i, el;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	/* No tiles to map memory onto (see the references below). */
	if (c->in[7].u & CUDA_ARRAY3D_SPARSE)
		return CUDA_ERROR_NOT_SUPPORTED;
	check_format(c->in[5].u, c->in[6].u, &el);	/* passed check_call */
	/* Block-compressed and YUV layouts are the driver's alone. */
	if (el == 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((a = calloc(1, sizeof *a)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->w = c->in[2].u;
	a->h = c->in[3].u;
	a->d = c->in[4].u;
	a->format = (unsigned)c->in[5].u;
	a->channels = (unsigned)c->in[6].u;
	a->flags = (unsigned)c->in[7].u;
	a->el = el;
	if (c->in[8].u == 0)
		rc = harray_fill(a);
	else if ((a->levels = calloc(c->in[8].u, sizeof *a->levels)) == NULL)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		rc = CUDA_SUCCESS;
		for (i = 0; i < c->in[8].u && rc == CUDA_SUCCESS; i++) {
			struct harray *l = &a->levels[i];

			*l = *a;
			l->levels = NULL;
			l->w = a->w >> i ? a->w >> i : 1;
			l->h = a->h == 0 ? 0 : a->h >> i ? a->h >> i : 1;
			l->d = a->d == 0 || (a->flags & (CUDA_ARRAY3D_LAYERED |
			    CUDA_ARRAY3D_CUBEMAP)) ? a->d : a->d >> i ?
			    a->d >> i : 1;
			if ((rc = harray_fill(l)) == CUDA_SUCCESS)
				a->nlevels = i + 1;
		}
	}
	if (rc == CUDA_SUCCESS && (o = robj_new(c->cl, c->in[1].u,
	    c->in[8].u ? RK_MIPMAP : RK_ARRAY, a)) == NULL)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc != CUDA_SUCCESS) {
		harray_free(a);
		return rc;
	}
	o->ctx = ctx;
	return CUDA_SUCCESS;
}

/* in: id, mipmapped */
static int
c_array_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY);

	/* A level is its mipmapped array's. */
	if (o == NULL || o->parent != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (c->in[1].u)
		robj_levels_del(c->cl, o);
	harray_free(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: mipmapped array, level, id -> width, height, depth */
static int
c_mipmap_level(struct rcall *c)
{
	struct robj *mm = robj_get(c->cl, c->in[0].u, RK_MIPMAP), *o;
	struct harray *a, *l;

	if (mm == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	a = mm->h;
	if (c->in[1].u >= a->nlevels)
		return CUDA_ERROR_INVALID_VALUE;
	l = &a->levels[c->in[1].u];
	if ((o = robj_get(c->cl, c->in[2].u, RK_ARRAY)) == NULL) {
		if ((o = robj_new(c->cl, c->in[2].u, RK_ARRAY, l)) == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		o->ctx = mm->ctx;
		o->parent = mm;
	} else if (o->h != l)
		return CUDA_ERROR_INVALID_VALUE;
	c->out[0].u = l->w;
	c->out[1].u = l->h;
	c->out[2].u = l->d;
	return CUDA_SUCCESS;
}

/*
 * in: id, mipmapped, device -> size, alignment.  Only an array made for
 * deferred mapping has requirements, and the host backend makes none.
 */
static int
c_array_memreq(struct rcall *c)
{
	if (robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (c->in[2].u != 0)		/* one device */
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_ERROR_INVALID_VALUE;
}

/* in: ctx, id, surface, resource, texture, view -> handle */
static int
c_tex_create(struct rcall *c)
{
	struct robj *ctx, *o;
	struct htex *x;
	struct harray *a = NULL;
	uint64_t span;
	unsigned el;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((x = calloc(1, sizeof *x)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	check_tex(c, &x->r, &x->t, &x->v);	/* passed check_call */
	rc = CUDA_SUCCESS;
	switch (x->r.type) {
	case CU_RESOURCE_TYPE_ARRAY:
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if ((o = robj_get(c->cl, x->r.h, x->r.type ==
		    CU_RESOURCE_TYPE_ARRAY ? RK_ARRAY : RK_MIPMAP)) == NULL)
			rc = CUDA_ERROR_INVALID_HANDLE;
		else
			a = o->h;
		/* A surface needs an array made for load and store. */
		if (a != NULL && c->in[2].u &&
		    !(a->flags & CUDA_ARRAY3D_SURFACE_LDST))
			rc = CUDA_ERROR_INVALID_VALUE;
		if (a != NULL && c->in[5].len != 0 &&
		    x->v.lastmip >= (a->nlevels ? a->nlevels : 1))
			rc = CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		/*
		 * As the device attributes the host backend gives say, but
		 * for the address's alignment (512): its allocations are
		 * 256-byte aligned, and no kernel here reads through it.
		 */
		check_format(x->r.format, x->r.channels, &el);
		if (x->r.width / el > (1u << 27) ||
		    rmem_check(c->cl, x->r.h, x->r.width) == -1)
			rc = CUDA_ERROR_INVALID_VALUE;
		break;
	default:
		check_format(x->r.format, x->r.channels, &el);
		span = (x->r.height - 1) * x->r.pitch + x->r.width * el;
		if (x->r.pitch % 32 != 0 ||
		    x->r.width > 131072 || x->r.height > 65000 ||
		    x->r.pitch > CHECK_COPY_MAX ||
		    rmem_check(c->cl, x->r.h, span) == -1)
			rc = CUDA_ERROR_INVALID_VALUE;
		break;
	}
	if (rc == CUDA_SUCCESS) {
		uint64_t h = __atomic_fetch_add(&host_texnext, 1,
		    __ATOMIC_RELAXED);

		x->h = h;
		if ((o = robj_new(c->cl, c->in[1].u, c->in[2].u ? RK_SURF :
		    RK_TEX, x)) == NULL)
			rc = CUDA_ERROR_INVALID_VALUE;
		else {
			o->ctx = ctx;
			c->out[0].u = h;
			return CUDA_SUCCESS;
		}
	}
	free(x);
	return rc;
}

/* in: id, surface */
static int
c_tex_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_SURF :
	    RK_TEX);

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	free(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/*
 * ---- texture and surface references, sparse arrays ---------------------
 * A reference is its state, as the driver's setters leave it and its
 * getters read it; no host kernel fetches through one (the host backend
 * loads no PTX, and a reference lives in a module's PTX or a created
 * one).  A new reference reads as one-channel unsigned 8-bit texels,
 * wrapped, point-filtered, bound to nothing: the defaults chosen here.
 * Sparse arrays are refused where they are made (CUDA_ERROR_NOT_SUPPORTED,
 * the device's SPARSE_CUDA_ARRAY_SUPPORTED attribute 0): no array here
 * has tiles to map memory onto.
 */
#define HREF_NONE	0
#define HREF_ARRAY	1
#define HREF_MIPMAP	2
#define HREF_LINEAR	3
#define HREF_PITCH2D	4
#define HREF_TEXALIGN	512		/* TEXTURE_ALIGNMENT */
#define HREF_PITCHALIGN	32		/* TEXTURE_PITCH_ALIGNMENT */

struct htexref {
	int		 bound;		/* HREF_* */
	uint64_t	 res;		/* the array's id, or the address */
	uint32_t	 format, channels, addr[3], filter, mipfilter, aniso;
	uint32_t	 bias, minclamp, maxclamp, border[4], flags;
};

/* in: ctx, id, module (0: created), surface, name */
static int
c_texref_new(struct rcall *c)
{
	char name[RPC_STRING_MAX + 1];
	struct robj *ctx, *m = NULL, *o;
	struct htexref *t;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (c->in[2].u != 0) {
		/* A library's module is named by its library. */
		if ((m = robj_get(c->cl, c->in[2].u, RK_MODULE)) == NULL &&
		    (m = robj_get(c->cl, c->in[2].u, RK_LIBRARY)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		if (rval_str(&c->in[4], name, sizeof name) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		/* No image's references are read here (device code that
		 * never runs): none is found, as in a module without. */
		return CUDA_ERROR_NOT_FOUND;
	}
	if ((t = calloc(1, sizeof *t)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	t->format = CU_AD_FORMAT_UNSIGNED_INT8;
	t->channels = 1;
	if ((o = robj_new(c->cl, c->in[1].u, RK_TEXREF, t)) == NULL) {
		free(t);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	return CUDA_SUCCESS;
}

/* in: id */
static int
c_texref_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_TEXREF);

	if (o == NULL || o->parent != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	free(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* The reference of in[0] that op applies to, or NULL with *rc. */
static struct htexref *
host_texref(struct rcall *c, int *surf, int *rc)
{
	struct robj *o;

	*rc = CUDA_ERROR_INVALID_HANDLE;
	if ((o = robj_get(c->cl, c->in[0].u, RK_TEXREF)) == NULL &&
	    (o = robj_get(c->cl, c->in[0].u, RK_SURFREF)) == NULL)
		return NULL;
	*surf = o->kind == RK_SURFREF;
	if (*surf && c->in[1].u != TREF_ARRAY)
		return NULL;
	*rc = CUDA_SUCCESS;
	return o->h;
}

/* in: id, op, index, a, b, data -> byte offset */
static int
c_texref_set(struct rcall *c)
{
	struct htexref *t;
	struct robj *o;
	struct harray *a;
	struct pr r;
	uint64_t w, h;
	uint32_t f, n;
	unsigned el;
	int surf, rc, i;

	c->out[0].u = 0;
	if ((t = host_texref(c, &surf, &rc)) == NULL)
		return rc;
	switch (c->in[1].u) {
	case TREF_ARRAY:
	case TREF_MIPMAP:
		if ((o = robj_get(c->cl, c->in[3].u, c->in[1].u ==
		    TREF_ARRAY ? RK_ARRAY : RK_MIPMAP)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		a = o->h;
		if ((surf && (c->in[2].u != 0 ||
		    !(a->flags & CUDA_ARRAY3D_SURFACE_LDST))) ||
		    (c->in[2].u & ~(uint64_t)CU_TRSA_OVERRIDE_FORMAT))
			return CUDA_ERROR_INVALID_VALUE;
		t->bound = c->in[1].u == TREF_ARRAY ? HREF_ARRAY :
		    HREF_MIPMAP;
		t->res = c->in[3].u;
		if (c->in[2].u & CU_TRSA_OVERRIDE_FORMAT) {
			t->format = a->format;
			t->channels = a->channels;
		}
		return CUDA_SUCCESS;
	case TREF_ADDRESS:
		if (rmem_check(c->cl, c->in[3].u, c->in[4].u) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		t->bound = HREF_LINEAR;
		t->res = c->in[3].u;
		c->out[0].u = c->in[3].u % HREF_TEXALIGN;
		return CUDA_SUCCESS;
	case TREF_ADDRESS2D:
		pr_init(&r, c->in[5].p, c->in[5].len);
		w = pr_u64(&r);
		h = pr_u64(&r);
		f = pr_u32(&r);
		n = pr_u32(&r);
		if (check_format(f, n, &el) != CUDA_SUCCESS || el == 0 ||
		    w == 0 || h == 0 || w > 131072 || h > 65000 ||
		    c->in[4].u % HREF_PITCHALIGN != 0 ||
		    c->in[4].u > CHECK_COPY_MAX || w * el > c->in[4].u ||
		    rmem_check(c->cl, c->in[3].u, h * c->in[4].u) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		t->bound = HREF_PITCH2D;
		t->res = c->in[3].u;
		t->format = f;
		t->channels = n;
		return CUDA_SUCCESS;
	case TREF_FORMAT:
		t->format = (uint32_t)c->in[3].u;
		t->channels = (uint32_t)c->in[4].u;
		return CUDA_SUCCESS;
	case TREF_ADDRMODE:
		/* Any mode is taken, as the real driver takes it. */
		t->addr[c->in[2].u] = (uint32_t)c->in[3].u;
		return CUDA_SUCCESS;
	case TREF_FILTER:
	case TREF_MIPFILTER:
		*(c->in[1].u == TREF_FILTER ? &t->filter : &t->mipfilter) =
		    (uint32_t)c->in[3].u;
		return CUDA_SUCCESS;
	case TREF_BIAS:
		t->bias = (uint32_t)c->in[3].u;
		return CUDA_SUCCESS;
	case TREF_CLAMP:
		t->minclamp = (uint32_t)c->in[3].u;
		t->maxclamp = (uint32_t)c->in[4].u;
		return CUDA_SUCCESS;
	case TREF_ANISO:
		t->aniso = (uint32_t)c->in[3].u;
		return CUDA_SUCCESS;
	case TREF_BORDER:
		pr_init(&r, c->in[5].p, c->in[5].len);
		for (i = 0; i < 4; i++)
			t->border[i] = pr_u32(&r);
		return CUDA_SUCCESS;
	default:
		if (c->in[3].u & ~(uint64_t)CHECK_TEX_FLAGS)
			return CUDA_ERROR_INVALID_VALUE;
		t->flags = (uint32_t)c->in[3].u;
		return CUDA_SUCCESS;
	}
}

/* in: id, op, index -> a, b, data */
static int
c_texref_get(struct rcall *c)
{
	struct htexref *t;
	int surf, rc, i;

	c->out[0].u = c->out[1].u = 0;
	c->out[2].p = NULL;
	c->out[2].len = 0;
	if ((t = host_texref(c, &surf, &rc)) == NULL)
		return rc;
	switch (c->in[1].u) {
	case TREF_ARRAY:
	case TREF_MIPMAP:
		if (t->bound != (c->in[1].u == TREF_ARRAY ? HREF_ARRAY :
		    HREF_MIPMAP))
			return CUDA_ERROR_INVALID_VALUE;
		c->out[0].u = t->res;
		return CUDA_SUCCESS;
	case TREF_ADDRESS:
		if (t->bound != HREF_LINEAR && t->bound != HREF_PITCH2D)
			return CUDA_ERROR_INVALID_VALUE;
		c->out[0].u = t->res;
		return CUDA_SUCCESS;
	case TREF_FORMAT:
		c->out[0].u = t->format;
		c->out[1].u = t->channels;
		return CUDA_SUCCESS;
	case TREF_ADDRMODE:
		c->out[0].u = t->addr[c->in[2].u];
		return CUDA_SUCCESS;
	case TREF_FILTER:
		c->out[0].u = t->filter;
		return CUDA_SUCCESS;
	case TREF_MIPFILTER:
		c->out[0].u = t->mipfilter;
		return CUDA_SUCCESS;
	case TREF_BIAS:
		c->out[0].u = t->bias;
		return CUDA_SUCCESS;
	case TREF_CLAMP:
		c->out[0].u = t->minclamp;
		c->out[1].u = t->maxclamp;
		return CUDA_SUCCESS;
	case TREF_ANISO:
		c->out[0].u = t->aniso;
		return CUDA_SUCCESS;
	case TREF_BORDER:
		for (i = 0; i < 4; i++)
			pw_u32(&c->blob, t->border[i]);
		if (c->blob.bad)
			return CUDA_ERROR_OUT_OF_MEMORY;
		c->out[2].p = c->blob.p;
		c->out[2].len = (uint32_t)c->blob.len;
		return CUDA_SUCCESS;
	default:
		c->out[0].u = t->flags;
		return CUDA_SUCCESS;
	}
}

/* in: id, mipmapped.  No array here is sparse: the driver's answer. */
static int
c_array_sparse(struct rcall *c)
{
	if (robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_INVALID_VALUE;
}

/* in: ctx, stream, entries: each checked, and none maps a sparse array. */
static int
c_map_array(struct rcall *c)
{
	struct rpc_mapinfo e;
	uint64_t size;
	uint32_t i, n = c->in[2].len / RPC_MAPINFO_LEN;

	CTX(c, 0);
	STREAM(c, 1);
	for (i = 0; i < n; i++) {
		rpc_mapinfo_dec(&c->in[2], i, &e);	/* check_call's size */
		if (robj_get(c->cl, e.res, e.restype ==
		    CU_RESOURCE_TYPE_MIPMAPPED_ARRAY ? RK_MIPMAP :
		    RK_ARRAY) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		if (e.memop == CU_MEM_OPERATION_TYPE_MAP &&
		    vmm_handle(c->cl, e.mem, &size) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* A copy's array side: bounds checked, then the memory standing for it. */
static int
host_copy_array(struct rcall *c, CUDA_MEMCPY3D *m, int dst)
{
	struct robj *o = robj_get(c->cl, dst ? m->dstDevice : m->srcDevice,
	    RK_ARRAY);
	struct harray *a;
	size_t x = dst ? m->dstXInBytes : m->srcXInBytes,
	    y = dst ? m->dstY : m->srcY, z = dst ? m->dstZ : m->srcZ;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	a = o->h;
	/* check_copy3d bounded every term by 2^30: no sum wraps. */
	if (x + m->WidthInBytes > a->pitch || y + m->Height > a->rows ||
	    z + m->Depth > a->slices)
		return CUDA_ERROR_INVALID_VALUE;
	if (dst) {
		m->dstMemoryType = CU_MEMORYTYPE_HOST;
		m->dstDevice = 0;
		m->dstHost = a->data;
		m->dstPitch = a->pitch;
		m->dstHeight = a->rows;
	} else {
		m->srcMemoryType = CU_MEMORYTYPE_HOST;
		m->srcDevice = 0;
		m->srcHost = a->data;
		m->srcPitch = a->pitch;
		m->srcHeight = a->rows;
	}
	return CUDA_SUCCESS;
}

/* The copy copy3d_prepare checked: row by row, all in host memory. */
static void
host_copy3d(const CUDA_MEMCPY3D *m)
{
	const uint8_t *src = m->srcMemoryType == CU_MEMORYTYPE_HOST ?
	    m->srcHost : (const uint8_t *)(uintptr_t)m->srcDevice;
	uint8_t *dst = m->dstMemoryType == CU_MEMORYTYPE_HOST ?
	    m->dstHost : (uint8_t *)(uintptr_t)m->dstDevice;
	size_t z, y;

	for (z = 0; z < m->Depth; z++)
		for (y = 0; y < m->Height; y++)
			memmove(dst + ((m->dstZ + z) * m->dstHeight +
			    m->dstY + y) * m->dstPitch + m->dstXInBytes,
			    src + ((m->srcZ + z) * m->srcHeight + m->srcY +
			    y) * m->srcPitch + m->srcXInBytes,
			    m->WidthInBytes);
}

/* in: ctx, stream, async, descriptor, host data -> host data */
static int
c_mem_3d(struct rcall *c)
{
	CUDA_MEMCPY3D m;
	int rc, empty;

	CTX(c, 0);
	STREAM(c, 1);
	if ((rc = copy3d_prepare(c, &m, &empty, host_copy_array)) !=
	    CUDA_SUCCESS || empty)
		return rc;
	host_copy3d(&m);
	return CUDA_SUCCESS;
}

/* ---- modules, libraries and globals ------------------------------------ */

static int
hkern_cmp(const void *a, const void *b)
{
	return strcmp(((const struct hkern *)a)->name,
	    ((const struct hkern *)b)->name);
}

/* By name, then by the order of appearance hmod_scan put in size. */
static int
hsym_cmp(const void *a, const void *b)
{
	const struct hsym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return (x->size >> 32) < (y->size >> 32) ? -1 : 1;
}

#define HOST_EM_CUDA		190	/* e_machine of a cubin */
#define HOST_STO_ENTRY		0x10	/* st_other of a kernel */
#define HOST_MAXSYMS		(1u << 20)

/* Section i of a cubin, checked to lie inside it; -1 if it does not. */
static int
hmod_shdr(const uint8_t *e, size_t len, const Elf64_Ehdr *eh, unsigned i,
    Elf64_Shdr *sh)
{
	if (i >= eh->e_shnum)
		return -1;
	memcpy(sh, e + eh->e_shoff + (uint64_t)i * sizeof *sh, sizeof *sh);
	if (sh->sh_type != SHT_NOBITS && (sh->sh_offset > len ||
	    sh->sh_size > len - sh->sh_offset))
		return -1;
	return 0;
}

/* Adds a kernel of the image that has no host implementation. */
static int
hmod_add_kernel(struct hmod *m, const char *name)
{
	struct hkern *nk;

	if (host_kern(name) != NULL || m->nextra >= HOST_MAXSYMS)
		return 0;
	if (m->nextra == m->xcap) {
		m->xcap = m->xcap ? m->xcap * 2 : 16;
		if ((nk = realloc(m->extra, m->xcap * sizeof *nk)) == NULL)
			return -1;
		m->extra = nk;
	}
	nk = &m->extra[m->nextra];
	memset(nk, 0, sizeof *nk);
	if ((nk->name = strdup(name)) == NULL)
		return -1;
	m->nextra++;
	return 0;
}

/* Adds a global of the image, with its initial value if it has one. */
static int
hmod_add_global(struct hmod *m, const char *name, uint64_t size,
    const uint8_t *init)
{
	struct hsym *ns;

	if (m->nsym >= HOST_MAXSYMS)
		return 0;
	if (m->nsym == m->scap) {
		m->scap = m->scap ? m->scap * 2 : 16;
		if ((ns = realloc(m->sym, m->scap * sizeof *ns)) == NULL)
			return -1;
		m->sym = ns;
	}
	ns = &m->sym[m->nsym];
	memset(ns, 0, sizeof *ns);
	if ((ns->name = strdup(name)) == NULL)
		return -1;
	m->nsym++;
	ns->size = size;
	if (init != NULL) {
		if ((ns->init = malloc(size)) == NULL)
			return -1;
		memcpy(ns->init, init, size);
	}
	return 0;
}

/*
 * One cubin of an image, len bytes at most: its kernels (functions
 * marked as entries) and globals (objects in a section of their own).
 * Anything that does not lie inside the image is not a cubin: skipped.
 */
static int
hmod_cubin(struct hmod *m, const uint8_t *e, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr symsh, strsh, sh;
	Elf64_Sym sym;
	const char *strs, *name;
	uint64_t i, nsym;
	unsigned k;

	if (len < sizeof eh)
		return 0;
	memcpy(&eh, e, sizeof eh);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != HOST_EM_CUDA || eh.e_shentsize != sizeof sh ||
	    eh.e_shoff > len || eh.e_shnum > (len - eh.e_shoff) / sizeof sh)
		return 0;
	for (k = 0; k < eh.e_shnum; k++)
		if (hmod_shdr(e, len, &eh, k, &symsh) == 0 &&
		    symsh.sh_type == SHT_SYMTAB)
			break;
	if (k == eh.e_shnum || symsh.sh_entsize != sizeof sym ||
	    hmod_shdr(e, len, &eh, symsh.sh_link, &strsh) == -1 ||
	    strsh.sh_type != SHT_STRTAB || strsh.sh_size == 0)
		return 0;
	strs = (const char *)e + strsh.sh_offset;
	if (strs[strsh.sh_size - 1] != '\0')
		return 0;
	nsym = symsh.sh_size / sizeof sym;
	for (i = 0; i < nsym; i++) {
		memcpy(&sym, e + symsh.sh_offset + i * sizeof sym, sizeof sym);
		if (sym.st_name >= strsh.sh_size)
			continue;
		name = strs + sym.st_name;
		if (name[0] == '\0' || name[0] == '.' ||
		    strlen(name) > RPC_STRING_MAX)
			continue;
		if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC &&
		    (sym.st_other & HOST_STO_ENTRY)) {
			if (hmod_add_kernel(m, name) == -1)
				return -1;
			continue;
		}
		if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_size == 0 || sym.st_size > HOST_COPYMAX ||
		    sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE ||
		    hmod_shdr(e, len, &eh, sym.st_shndx, &sh) == -1)
			continue;
		if (sh.sh_type == SHT_PROGBITS && sym.st_value <= sh.sh_size &&
		    sym.st_size <= sh.sh_size - sym.st_value) {
			if (hmod_add_global(m, name, sym.st_size,
			    e + sh.sh_offset + sym.st_value) == -1)
				return -1;
		} else if (sh.sh_type == SHT_NOBITS) {
			if (hmod_add_global(m, name, sym.st_size, NULL) == -1)
				return -1;
		}
	}
	return 0;
}

/*
 * What an image shows of its kernels and globals: those of every cubin in
 * it (a fat binary holds one for each architecture, with the same names;
 * the first wins).  A compressed or PTX-only image shows nothing.
 */
static int
hmod_scan(struct hmod *m, const uint8_t *img, size_t len)
{
	const uint8_t *p = img, *end = img + len, *s;
	size_t i, j;

	while ((s = memmem(p, (size_t)(end - p), ELFMAG, SELFMAG)) != NULL) {
		if (hmod_cubin(m, s, (size_t)(end - s)) == -1)
			return -1;
		p = s + SELFMAG;
	}
	if (m->nextra > 0) {
		qsort(m->extra, m->nextra, sizeof *m->extra, hkern_cmp);
		for (i = j = 0; i < m->nextra; i++) {
			if (j > 0 && strcmp(m->extra[j - 1].name,
			    m->extra[i].name) == 0) {
				free(m->extra[i].name);
				continue;
			}
			m->extra[j++] = m->extra[i];
		}
		m->nextra = j;
	}
	if (m->nsym > 0) {
		/* Stable for equal names: the first cubin's comes first. */
		for (i = 0; i < m->nsym; i++)
			m->sym[i].size |= (uint64_t)i << 32;
		qsort(m->sym, m->nsym, sizeof *m->sym, hsym_cmp);
		for (i = j = 0; i < m->nsym; i++) {
			if (j > 0 && strcmp(m->sym[j - 1].name,
			    m->sym[i].name) == 0) {
				free(m->sym[i].name);
				free(m->sym[i].init);
				continue;
			}
			m->sym[j++] = m->sym[i];
		}
		m->nsym = j;
		for (i = 0; i < m->nsym; i++)
			m->sym[i].size &= 0xffffffffu;
	}
	return 0;
}

/*
 * A module or library for an image: every registered kernel, and those of
 * the image's own kernels that have no implementation.
 */
static struct hmod *
hmod_new(const void *img, size_t len)
{
	struct hmod *m;
	size_t i;

	if ((m = calloc(1, sizeof *m)) == NULL)
		return NULL;
	if (hmod_scan(m, img, len) == -1)
		goto fail;
	m->nf = host.nk + m->nextra;
	if ((m->f = calloc(m->nf ? m->nf : 1, sizeof *m->f)) == NULL)
		goto fail;
	for (i = 0; i < m->nf; i++) {
		m->f[i].k = i < host.nk ? &host.k[i] :
		    &m->extra[i - host.nk];
		m->f[i].maxdyn = HOST_MAXDYN;
		m->f[i].carveout = -1;
	}
	return m;
fail:
	hmod_free(NULL, m);
	return NULL;
}

/* A function's attributes, by CUfunction_attribute. */
static void
hfunc_attr(const struct hfunc *f, int32_t *attr)
{
	memset(attr, 0, CU_FUNC_ATTRIBUTE_MAX * sizeof *attr);
	attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
	attr[CU_FUNC_ATTRIBUTE_NUM_REGS] = 32;
	attr[CU_FUNC_ATTRIBUTE_PTX_VERSION] = 90;
	attr[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = 90;
	attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = f->maxdyn;
	attr[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] =
	    f->carveout;
}

/* The function table of gleam-protocol(5), into the reply. */
static void
hmod_ftab(struct rcall *c, const struct hmod *m)
{
	int32_t attr[CU_FUNC_ATTRIBUTE_MAX];
	size_t i;

	ftab_begin(&c->blob, (uint32_t)m->nf);
	for (i = 0; i < m->nf; i++) {
		hfunc_attr(&m->f[i], attr);
		ftab_add(&c->blob, m->f[i].k->name, m->f[i].k->nparams,
		    m->f[i].k->offset, m->f[i].k->size, CU_FUNC_ATTRIBUTE_MAX,
		    attr);
	}
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
}

/* in: ctx, id, image -> function table (both calls) */
static int
host_load_image(struct rcall *c, int library)
{
	struct robj *ctx, *o;
	struct hmod *m;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	/* PTX text (no cubin in it) needs a JIT compiler: none here. */
	if (memmem(c->in[2].p, c->in[2].len, ELFMAG, SELFMAG) == NULL &&
	    memmem(c->in[2].p, c->in[2].len, ".version", 8) != NULL &&
	    memmem(c->in[2].p, c->in[2].len, ".target", 7) != NULL)
		return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
	if ((m = hmod_new(c->in[2].p, c->in[2].len)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o = robj_new(c->cl, c->in[1].u, library ? RK_LIBRARY : RK_MODULE, m);
	if (o == NULL) {
		hmod_free(c->cl, m);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* A library belongs to no context: it outlives them all. */
	o->ctx = library ? NULL : ctx;
	hmod_ftab(c, m);
	return CUDA_SUCCESS;
}

static int c_module_load(struct rcall *c) { return host_load_image(c, 0); }
static int c_library_load(struct rcall *c) { return host_load_image(c, 1); }

/*
 * in: ctx, id, image, library, options -> result, function table, outputs.
 * No JIT here: the options' values come back as they went, the logs empty.
 */
static int
c_module_load_ex(struct rcall *c)
{
	int opt[RPC_JIT_OPTS_MAX];
	uint64_t val[RPC_JIT_OPTS_MAX];
	unsigned i, n;
	size_t first;
	int rc;

	if ((rc = check_jit_opts(&c->in[4], opt, val, &n)) != CUDA_SUCCESS)
		return rc;
	rc = host_load_image(c, (int)c->in[3].u);
	c->out[0].u = (uint64_t)rc;
	if (rc != CUDA_SUCCESS)
		c->blob.len = 0;
	first = c->blob.len;
	for (i = 0; i < n; i++) {
		if (opt[i] == CU_JIT_INFO_LOG_BUFFER ||
		    opt[i] == CU_JIT_ERROR_LOG_BUFFER) {
			pw_u64(&c->blob, 0);
			pw_u32(&c->blob, 0);
		} else
			pw_u64(&c->blob, val[i]);
	}
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)first;
	c->out[2].p = c->blob.p + first;
	c->out[2].len = (uint32_t)(c->blob.len - first);
	return CUDA_SUCCESS;
}

/* in: id (both calls) */
static int
host_unload(struct rcall *c, int kind)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, kind);
	size_t i = 0;
	uint64_t id;
	void *v;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	while (htab_next(&c->cl->objs, &i, &id, &v))
		if (((struct robj *)v)->parent == o) {
			if (((struct robj *)v)->kind == RK_TEXREF ||
			    ((struct robj *)v)->kind == RK_SURFREF)
				free(((struct robj *)v)->h);
			robj_del(c->cl, id);
		}
	hmod_free(c->cl, o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

static int
c_module_unload(struct rcall *c)
{
	return host_unload(c, RK_MODULE);
}

static int
c_library_unload(struct rcall *c)
{
	return host_unload(c, RK_LIBRARY);
}

/* in: module or library, id, name */
static int
host_get_func(struct rcall *c, int library)
{
	struct robj *m, *o;
	struct hmod *hm;
	char name[RPC_STRING_MAX + 1];
	size_t i;

	m = robj_get(c->cl, c->in[0].u, library ? RK_LIBRARY : RK_MODULE);
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[2], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	hm = m->h;
	for (i = 0; i < hm->nf; i++)
		if (strcmp(hm->f[i].k->name, name) == 0)
			break;
	if (i == hm->nf)
		return CUDA_ERROR_NOT_FOUND;
	o = robj_new(c->cl, c->in[1].u, library ? RK_KERNEL : RK_FUNC,
	    &hm->f[i]);
	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o->parent = m;
	o->ctx = m->ctx;
	return CUDA_SUCCESS;
}

static int c_module_get_func(struct rcall *c) { return host_get_func(c, 0); }
static int c_library_get_kernel(struct rcall *c) { return host_get_func(c, 1); }

/*
 * The instance of global name in m for ctx, made on first use with its
 * initial value, in the client's map under its own owner, so that freeing
 * it (with its module, or its context for a library) takes exactly its
 * range out.  The image's declaration comes before the kernel library's.
 */
static int
host_global(struct rclient *cl, struct hmod *m, const void *ctx,
    const char *name, struct hglob **out)
{
	const struct hsym *d = NULL;
	struct hsym lib;
	struct hglob *g;
	size_t i;
	int rc;

	for (g = m->globals; g != NULL; g = g->next)
		if (g->ctx == ctx && strcmp(g->name, name) == 0) {
			*out = g;
			return CUDA_SUCCESS;
		}
	for (i = 0; i < m->nsym; i++)
		if (strcmp(m->sym[i].name, name) == 0) {
			d = &m->sym[i];
			break;
		}
	for (i = 0; d == NULL && i < host.nglobals; i++)
		if (strcmp(host.globals[i].name, name) == 0) {
			lib.name = (char *)(uintptr_t)host.globals[i].name;
			lib.size = host.globals[i].size;
			lib.init = (uint8_t *)(uintptr_t)host.globals[i].init;
			d = &lib;
		}
	if (d == NULL)
		return CUDA_ERROR_NOT_FOUND;
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = host_alloc(d->size, &g->a, &g->base)) != CUDA_SUCCESS) {
		free(g);
		return rc;
	}
	if (rmem_add(cl, g->base, d->size, 1, g) == -1) {
		host_free(g->a);
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (d->init != NULL)
		memcpy((void *)(uintptr_t)g->base, d->init, d->size);
	g->name = d->name;
	g->size = d->size;
	g->ctx = ctx;
	g->next = m->globals;
	m->globals = g;
	*out = g;
	return CUDA_SUCCESS;
}

/* gleam_host_access: may the launching client touch [p, p + len)? */
static int
host_access(const void *p, unsigned long long len)
{
	if (host_cur.cl != NULL &&
	    rmem_check(host_cur.cl, (uintptr_t)p, len) == 0)
		return 1;
	host_cur.fault = 1;
	return 0;
}

/* Appends len bytes for stream to the launching client's device output. */
static void
host_out(int stream, const char *p, size_t len)
{
	struct hclient *hc;

	if (host_cur.cl == NULL || (hc = host_cur.cl->be) == NULL || len == 0)
		return;
	if (hc->out.len + len + 5 > HOST_OUTMAX)
		return;		/* a full FIFO drops, as a GPU's does */
	pw_u8(&hc->out, (uint8_t)stream);
	pw_u32(&hc->out, (uint32_t)len);
	pw_bytes(&hc->out, p, len);
}

/* gleam_host_printf: a device printf. */
static int
host_printf(const char *fmt, ...)
{
	char buf[4096], *p = buf;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof buf) {
		if ((p = malloc((size_t)n + 1)) == NULL)
			return -1;
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	host_out(1, p, (size_t)n);
	if (p != buf)
		free(p);
	return n;
}

/* gleam_host_assert_fail: a failed device assert. */
static void
host_assert_fail(const char *msg)
{
	if (msg != NULL)
		host_out(2, msg, strlen(msg));
	host_cur.assert_ = 1;
}

/*
 * Writes the client's device output with this process's stdio (a worker's
 * is its client's: output.h), at the calls where the driver flushes its
 * printf buffer: synchronizations, blocking copies, unloads, a context's
 * end.
 */
static void
host_out_flush(struct rclient *cl)
{
	struct hclient *hc = cl->be;
	struct pr r;
	uint32_t n;
	uint8_t s;
	const void *b;

	if (hc == NULL || hc->out.len == 0)
		return;
	pr_init(&r, hc->out.p, hc->out.len);
	while (r.off < r.len) {
		s = pr_u8(&r);
		n = pr_u32(&r);
		if ((b = pr_take(&r, n)) == NULL)
			break;
		(void)!fwrite(b, 1, n, s == 2 ? stderr : stdout);
	}
	fflush(stdout);
	fflush(stderr);
	hc->out.len = 0;
	if (hc->out.cap > (1u << 20)) {
		pw_free(&hc->out);
		pw_init(&hc->out);
	}
}

/* Does call c flush the device's output, as the driver's does? */
static int
host_flushes(const struct rcall *c)
{
	switch (c->d->type) {
	case R_CTX_SYNC:
	case R_STREAM_SYNC:
	case R_EVENT_SYNC:
	case R_MODULE_UNLOAD:
	case R_LIBRARY_UNLOAD:
	case R_CTX_DESTROY:
	case R_PRIMARY_RELEASE:
	case R_PRIMARY_RESET:
		return 1;
	case R_MEM_HTOD:
	case R_MEM_DTOH:
		return c->in[2].u == 0;		/* blocking copies */
	}
	return 0;
}

/* gleam_host_global_ptr: the launching module's instance of a global. */
static void *
host_global_ptr(const char *name)
{
	struct hglob *g;

	if (host_cur.m == NULL || name == NULL ||
	    host_global(host_cur.cl, host_cur.m, host_cur.ctx, name, &g) !=
	    CUDA_SUCCESS)
		return NULL;
	return (void *)(uintptr_t)g->base;
}

/* in: module, name -> dptr, bytes */
static int
c_module_get_global(struct rcall *c)
{
	struct robj *m = robj_get(c->cl, c->in[0].u, RK_MODULE);
	char name[RPC_STRING_MAX + 1];
	struct hglob *g;
	int rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[1], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = host_global(c->cl, m->h, m->ctx, name, &g)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = g->base;
	c->out[1].u = g->size;
	return CUDA_SUCCESS;
}

/* in: ctx, library, name -> dptr, bytes */
static int
c_library_get_global(struct rcall *c)
{
	struct robj *ctx, *l;
	char name[RPC_STRING_MAX + 1];
	struct hglob *g;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((l = robj_get(c->cl, c->in[1].u, RK_LIBRARY)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[2], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = host_global(c->cl, l->h, ctx, name, &g)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = g->base;
	c->out[1].u = g->size;
	return CUDA_SUCCESS;
}

/* ---- launches ---------------------------------------------------------- */

/* A function or a kernel, by id. */
static struct robj *
host_func(struct rcall *c, uint64_t id)
{
	struct robj *f = robj_get(c->cl, id, RK_FUNC);

	return f != NULL ? f : robj_get(c->cl, id, RK_KERNEL);
}

/*
 * Resident blocks of a kernel per multiprocessor: threads (2048 and 32
 * blocks), registers (32 a thread, allocated by warp) and shared memory
 * (each block also takes the 1 KiB the driver reserves), which gives an
 * H200's answers for small kernels.
 */
static int
host_occupancy(const struct hfunc *f, uint64_t block, uint64_t shmem)
{
	uint64_t warps = (block + 31) / 32, n = 32, t;

	if (block == 0 || block > 1024 || shmem > (uint64_t)f->maxdyn)
		return 0;
	if ((t = 64 / warps) < n)
		n = t;
	if ((t = 65536 / (warps * 32 * 32)) < n)
		n = t;
	shmem = (shmem + 127) & ~(uint64_t)127;
	if ((t = 233472 / (shmem + 1024)) < n)
		n = t;
	return (int)n;
}

/* in: ctx, function, gx, gy, gz, bx, by, bz, shmem, stream, flags, params */
static int
host_launch(struct rcall *c, uint64_t flags)
{
	_Alignas(HOST_PALIGN) uint8_t buf[4096];
	struct gleam_host_dim grid, block;
	struct robj *ctx, *f;
	const struct hfunc *hf;
	const struct hkern *k;
	void *argp[1024], **args = argp;
	uint8_t *ab = buf, *heap = NULL;
	uint64_t shmem = c->in[8].u;
	uint32_t i;
	int rc, fault;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	STREAM(c, 9);
	/* A module's function is its context's; a library's kernel anyone's. */
	if ((f = host_func(c, c->in[1].u)) == NULL ||
	    (f->kind == RK_FUNC && f->ctx != ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	hf = f->h;
	k = hf->k;
	grid = (struct gleam_host_dim){ (unsigned)c->in[2].u,
	    (unsigned)c->in[3].u, (unsigned)c->in[4].u };
	block = (struct gleam_host_dim){ (unsigned)c->in[5].u,
	    (unsigned)c->in[6].u, (unsigned)c->in[7].u };
	/* check_call bounded the geometry; this function's own limit: */
	if (shmem > (uint64_t)hf->maxdyn)
		return CUDA_ERROR_INVALID_VALUE;
	if ((flags & 1) && (uint64_t)grid.x * grid.y * grid.z >
	    (uint64_t)host_occupancy(hf, (uint64_t)block.x * block.y *
	    block.z, shmem) * HOST_SMS)
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	if (k->fn == NULL) {
		log_warn("client %s: kernel %s: no host implementation",
		    c->cl->addr, k->name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (c->in[11].len != k->argbytes)
		return CUDA_ERROR_INVALID_VALUE;
	/* The frame's bytes are not aligned for the kernel's loads. */
	if (k->argbytes > sizeof buf && (ab = heap = aligned_alloc(HOST_PALIGN,
	    (k->argbytes + HOST_PALIGN - 1) & ~(size_t)(HOST_PALIGN - 1))) ==
	    NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (k->nparams > sizeof argp / sizeof argp[0] &&
	    (args = calloc(k->nparams, sizeof *args)) == NULL) {
		free(heap);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (k->argbytes > 0)
		memcpy(ab, c->in[11].p, k->argbytes);
	for (i = 0; i < k->nparams; i++)
		args[i] = ab + k->offset[i];
	host_cur.cl = c->cl;
	host_cur.m = f->parent->h;
	host_cur.ctx = f->kind == RK_KERNEL ? (const void *)ctx :
	    f->parent->ctx;
	host_cur.fault = 0;
	host_cur.assert_ = 0;
	k->fn(&grid, &block, (unsigned)shmem, args);
	fault = host_cur.assert_ ? CUDA_ERROR_ASSERT : host_cur.fault ?
	    CUDA_ERROR_ILLEGAL_ADDRESS : 0;
	memset(&host_cur, 0, sizeof host_cur);
	if (args != argp)
		free(args);
	free(heap);
	/* A GPU's launch succeeds; the fault shows at the next call. */
	if (fault) {
		((struct hctx *)ctx->h)->fault = fault;
		log_info("client %s: kernel %s: %s, context lost",
		    c->cl->addr, k->name, fault == CUDA_ERROR_ASSERT ?
		    "device assert" : "illegal address");
	}
	return CUDA_SUCCESS;
}

/* in: ctx, function, grid[3], block[3], shmem, stream, flags, params */
static int
c_launch(struct rcall *c)
{
	return host_launch(c, c->in[10].u);
}

/*
 * cuLaunchKernelEx: as c_launch, the attributes (check_attrs' ids) in
 * place of the flags.  Cooperative counts; the rest (cluster shapes,
 * priorities, serialization and memory hints) mean nothing to a kernel
 * run on the host's CPU.
 */
static int
c_launch_ex(struct rcall *c)
{
	struct pr r;
	uint64_t flags = 0;
	uint32_t id;
	int32_t v;
	int i, n, rc;

	if ((n = check_attrs(&c->in[10], &rc)) == -1)
		return rc;
	pr_init(&r, c->in[10].p, c->in[10].len);
	for (i = 0; i < n; i++) {
		id = pr_u32(&r);
		v = (int32_t)pr_u32(&r);
		(void)pr_take(&r, CHECK_ATTR_LEN - 8);
		if (id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && v != 0)
			flags |= 1;
	}
	return host_launch(c, flags);
}

/* ---- streams and events ------------------------------------------------ */

/* in: ctx, id, flags, priority */
static int
c_stream_create(struct rcall *c)
{
	struct robj *ctx, *o;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	/* Executed at once: a stream is only an id, its handle its context. */
	if ((o = robj_new(c->cl, c->in[1].u, RK_STREAM, ctx)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o->ctx = ctx;
	o->prio = (int32_t)c->in[3].u;
	return CUDA_SUCCESS;
}

static int
c_stream_destroy(struct rcall *c)
{
	if (robj_get(c->cl, c->in[0].u, RK_STREAM) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: ctx, stream (both calls) */
static int
c_stream_sync(struct rcall *c)
{
	struct robj *ctx;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	STREAM(c, 1);
	idle_report(c, ctx, c->in[1].u, NULL, NULL);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, event, flags */
static int
c_stream_wait_event(struct rcall *c)
{
	CTX(c, 0);
	STREAM(c, 1);
	if (robj_get(c->cl, c->in[2].u, RK_EVENT) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (c->in[3].u == CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_ILLEGAL_STATE;	/* only in a capture */
	return CUDA_SUCCESS;
}

/* in: ctx, id, flags */
static int
c_event_create(struct rcall *c)
{
	struct robj *ctx, *o;
	struct hevent *e;
	unsigned flags = (unsigned)c->in[2].u;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	if ((o = robj_new(c->cl, c->in[1].u, RK_EVENT, e)) == NULL) {
		free(e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	return CUDA_SUCCESS;
}

static int
c_event_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_EVENT);

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	free(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: ctx, event, stream */
/*
 * in: ctx, stream, callback id.  Work here is done when it is called:
 * the function is reached at once, and the client runs it when the
 * notice comes (rclient_host_note).  Nothing here waits for the client,
 * so a graph's nodes after a host node do not wait for its callback
 * (gleam-serve(8)).
 */
static int
c_host_func(struct rcall *c)
{
	CTX(c, 0);
	STREAM(c, 1);
	rclient_host_note(c->cl, c->in[2].u);
	return CUDA_SUCCESS;
}

static int
c_event_record(struct rcall *c)
{
	struct robj *o;
	struct hevent *e;

	CTX(c, 0);
	if ((o = robj_get(c->cl, c->in[1].u, RK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	STREAM(c, 2);
	e = o->h;
	clock_gettime(CLOCK_MONOTONIC, &e->t);
	e->recorded = 1;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, op, event, a, b.  Work here is done when it is asked for, so
 * an event recorded for a context is recorded now, a wait has nothing to
 * wait for, and there is no L2 cache and no RDMA writer.  A green
 * context's ops need a green context's id.
 */
static int
c_ctx_op(struct rcall *c)
{
	struct robj *o = NULL, *ctx;
	struct hevent *e;
	int rc, green = c->in[1].u == CTXOP_GREEN_RECORD ||
	    c->in[1].u == CTXOP_GREEN_WAIT;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (green && ctx->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((c->in[1].u == CTXOP_RECORD || c->in[1].u == CTXOP_WAIT ||
	    green) && (o = robj_get(c->cl, c->in[2].u, RK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (c->in[1].u == CTXOP_RECORD || c->in[1].u == CTXOP_GREEN_RECORD) {
		e = o->h;
		clock_gettime(CLOCK_MONOTONIC, &e->t);
		e->recorded = 1;
	}
	return CUDA_SUCCESS;
}

/* ---- green contexts ---------------------------------------------------- */

/*
 * SM resources as this backend makes them: the driver's CUdevResource,
 * with the backend's own fields in the part that is opaque to programs.
 * The device's SMs are numbered from 0; a resource is a run of them, and
 * the results and the remainder of one split carry that split's number,
 * which a descriptor of several resources must share.  Groups follow
 * the rule the driver's documentation gives for compute capability 9.0:
 * at least 8 SMs, a multiple of 8 (2 and 2 where the split ignores
 * co-scheduling).
 */
#define HRES_MAGIC	0x53524c47u	/* "GLRS" */
#define HRES_MIN	8
#define HRES_MIN_LOOSE	2
struct hres {
	uint32_t	 magic;
	uint32_t	 first;		/* its first SM */
	uint32_t	 split;		/* the split it came from, 0 none */
};

/* A green context (a context's green field): the SMs it was given. */
struct hgreen {
	CUdevResource	 res;
};

static uint32_t	host_splits;

static void
hres_make(CUdevResource *r, uint32_t first, uint32_t count, uint32_t min,
    uint32_t split)
{
	struct hres h = { HRES_MAGIC, first, split };

	memset(r, 0, sizeof *r);
	r->type = CU_DEV_RESOURCE_TYPE_SM;
	memcpy(r->_internal_padding, &h, sizeof h);
	r->sm.smCount = count;
	r->sm.minSmPartitionSize = min;
	r->sm.smCoscheduledAlignment = min;
}

/* A resource of the wire: 0, or the error for one this backend never made. */
static int
hres_read(const struct rpc_val *v, CUdevResource *r, struct hres *h)
{
	uint32_t total = (uint32_t)
	    host_attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];

	if (v->len != sizeof *r)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(r, v->p, sizeof *r);
	if (r->type != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	memcpy(h, r->_internal_padding, sizeof *h);
	if (h->magic != HRES_MAGIC || r->sm.smCount == 0 ||
	    r->sm.smCount > total || h->first > total - r->sm.smCount)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* A context's SMs: a green context's, or the whole device (ctx NULL too). */
static void
hres_of(const struct robj *ctx, CUdevResource *r)
{
	if (ctx != NULL && ctx->green != NULL)
		*r = ((struct hgreen *)ctx->green)->res;
	else
		hres_make(r, 0, (uint32_t)
		    host_attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
		    HRES_MIN, 0);
}

/* in: which, device, ctx, stream, type -> resource */
static int
c_dev_resource(struct rcall *c)
{
	CUdevResource r;
	struct robj *ctx = NULL, *s;
	int rc;

	switch (c->in[0].u) {
	case DEVRES_DEVICE:
		if (c->in[1].u != 0)
			return CUDA_ERROR_INVALID_DEVICE;
		break;
	case DEVRES_STREAM:
		if ((ctx = host_ctx(c, c->in[2].u, &rc)) == NULL)
			return rc;
		STREAM(c, 3);
		if ((s = robj_get(c->cl, c->in[3].u, RK_STREAM)) != NULL)
			ctx = s->ctx;
		break;
	default:
		if ((ctx = host_ctx(c, c->in[2].u, &rc)) == NULL)
			return rc;
		if (c->in[0].u == DEVRES_GREEN && ctx->green == NULL)
			return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (c->in[4].u != CU_DEV_RESOURCE_TYPE_SM)
		return CUDA_ERROR_INVALID_RESOURCE_TYPE;
	hres_of(ctx, &r);
	pw_bytes(&c->blob, &r, sizeof r);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * A structured split's groups (CU_DEV_SM_RESOURCE_GROUP_PARAMS: SMs,
 * co-scheduled SMs, preferred, flags): sizes as asked, multiples of
 * their co-scheduled count; groups of 0 SMs share what the others
 * leave, evenly.  The parameters say the sizes chosen.
 */
static int
hsplit_sizes(uint32_t *p, uint32_t n, uint32_t avail, uint32_t min,
    uint32_t *size)
{
	uint32_t i, fixed = 0, nfree = 0, each, co;

	for (i = 0; i < n; i++) {
		co = p[i * 16 + 1] != 0 ? p[i * 16 + 1] : min;
		if (co % HRES_MIN_LOOSE != 0 || co > avail)
			return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
		p[i * 16 + 1] = co;
		if (p[i * 16] == 0) {
			nfree++;
			continue;
		}
		if (p[i * 16] % co != 0 || p[i * 16] < min ||
		    p[i * 16] > avail - fixed)
			return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
		fixed += p[i * 16];
	}
	for (i = 0; i < n; i++) {
		if (p[i * 16] == 0) {
			co = p[i * 16 + 1];
			each = (avail - fixed) / nfree / co * co;
			if (each < min || each == 0)
				return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
			p[i * 16] = each;
		}
		size[i] = p[i * 16];
	}
	return CUDA_SUCCESS;
}

/*
 * in: op, groups, flags, minimum count, input, group parameters, wanted
 * -> groups, results, remainder, group parameters
 */
static int
c_sm_split(struct rcall *c)
{
	CUdevResource in, r;
	struct hres h;
	uint32_t n = (uint32_t)c->in[1].u, flags = (uint32_t)c->in[2].u;
	uint32_t min, size, made, first, i, *p = NULL, *sizes = NULL;
	unsigned want = (unsigned)c->in[6].u;
	int rc;

	if ((rc = hres_read(&c->in[4], &in, &h)) != CUDA_SUCCESS)
		return rc;
	if (flags & ~(uint32_t)(CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
	    CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE))
		return CUDA_ERROR_INVALID_VALUE;
	/* A split's results are split again only once a green context has them. */
	if (h.split != 0)
		return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
	min = flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING ?
	    HRES_MIN_LOOSE : HRES_MIN;
	if (c->in[0].u == SPLIT_BY_COUNT) {
		if (c->in[3].u > in.sm.smCount)
			return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
		if ((want & SPLIT_WANT_RESULT) && n == 0)
			return CUDA_ERROR_INVALID_VALUE;
		size = (uint32_t)c->in[3].u < min ? min : (uint32_t)c->in[3].u;
		size = (size + min - 1) / min * min;
		made = in.sm.smCount / size;
		if ((want & SPLIT_WANT_RESULT) && made > n)
			made = n;
	} else {
		if (n == 0 || c->in[5].len == 0)
			return CUDA_ERROR_INVALID_VALUE;
		if ((p = malloc(c->in[5].len)) == NULL ||
		    (sizes = calloc(n, sizeof *sizes)) == NULL) {
			free(p);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(p, c->in[5].p, c->in[5].len);
		if ((rc = hsplit_sizes(p, n, in.sm.smCount, min, sizes)) !=
		    CUDA_SUCCESS) {
			free(p);
			free(sizes);
			return rc;
		}
		made = n;
		size = 0;
	}
	if (++host_splits == 0)
		host_splits = 1;
	first = h.first;
	for (i = 0; i < made; i++) {
		uint32_t k = sizes != NULL ? sizes[i] : size;

		if (want & SPLIT_WANT_RESULT) {
			hres_make(&r, first, k, min, host_splits);
			pw_bytes(&c->blob, &r, sizeof r);
		}
		first += k;
	}
	c->out[0].u = made;
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)c->blob.len;
	c->out[2].len = 0;
	c->out[3].len = 0;
	if (want & SPLIT_WANT_REMAINDER) {
		/* What the groups left, perhaps no SMs. */
		hres_make(&r, first, in.sm.smCount - (first - h.first), min,
		    host_splits);
		if ((c->scratch = malloc(sizeof r + (p != NULL ?
		    c->in[5].len : 0))) == NULL) {
			free(p);
			free(sizes);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(c->scratch, &r, sizeof r);
		c->out[2].p = c->scratch;
		c->out[2].len = sizeof r;
	}
	if (p != NULL) {
		if (c->scratch == NULL && (c->scratch = malloc(c->in[5].len)) ==
		    NULL) {
			free(p);
			free(sizes);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy((char *)c->scratch + c->out[2].len, p, c->in[5].len);
		c->out[3].p = (char *)c->scratch + c->out[2].len;
		c->out[3].len = c->in[5].len;
	}
	free(p);
	free(sizes);
	return CUDA_SUCCESS;
}

/*
 * in: id, resources.  Several must come from one split; the descriptor
 * is their SMs together.
 */
static int
c_res_desc(struct rcall *c)
{
	CUdevResource r;
	struct hres h, h0;
	struct rpc_val v;
	struct hgreen *g;
	uint32_t i, n = c->in[1].len / RPC_DEVRES_LEN, count = 0, min = 0;
	int rc;

	if (n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&h0, 0, sizeof h0);
	for (i = 0; i < n; i++) {
		v.p = (const char *)c->in[1].p + i * RPC_DEVRES_LEN;
		v.len = RPC_DEVRES_LEN;
		if ((rc = hres_read(&v, &r, &h)) != CUDA_SUCCESS)
			return rc;
		if (i == 0) {
			min = r.sm.minSmPartitionSize;
			h0 = h;
		} else if (h.split == 0 || h.split != h0.split)
			return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
		else if (h.first < h0.first)
			h0.first = h.first;
		count += r.sm.smCount;
	}
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Its own SMs from here on, to be split again. */
	hres_make(&g->res, h0.first, count, min, 0);
	if (robj_new(c->cl, c->in[0].u, RK_RESDESC, g) == NULL) {
		free(g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* in: ctx, descriptor, device, flags */
static int
c_green_create(struct rcall *c)
{
	struct robj *d = robj_get(c->cl, c->in[1].u, RK_RESDESC), *o;
	struct hgreen *g;
	struct hctx *x;

	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (c->in[3].u != CU_GREEN_CTX_DEFAULT_STREAM)
		return CUDA_ERROR_INVALID_VALUE;
	if ((g = malloc(sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*g = *(struct hgreen *)d->h;
	if ((x = hctx_new()) == NULL) {
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if ((o = robj_new(c->cl, c->in[0].u, RK_CTX, x)) == NULL) {
		hctx_free(x);
		free(g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->device = 0;
	o->refs = 1;
	o->green = g;
	return CUDA_SUCCESS;
}

/* in: ctx (a green context's) */
static int
c_green_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	if (o == NULL || o->h == NULL || o->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	host_ctx_end(c->cl, o);
	free(o->green);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: ctx (a green context's), id, flags, priority */
static int
c_green_stream(struct rcall *c)
{
	struct robj *ctx;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (ctx->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c->in[2].u != CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	return c_stream_create(c);
}

/* A CUarray_format's bytes per channel, 0 for one this backend lacks. */
static unsigned
host_format_bytes(uint32_t f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	}
	return 0;
}

/*
 * in: which, device, arguments -> answer.  One device, so no peer; the
 * host's CPU does every atomic operation, integer ones signed and
 * unsigned, on 32 and 64 bits; a linear 1D texture spans 2^28 bytes.
 */
static int
c_dev_query(struct rcall *c)
{
	struct pr r;
	uint32_t op, fmt, ch;
	unsigned b;

	if (c->in[1].u != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	pr_init(&r, c->in[2].p, c->in[2].len);
	switch (c->in[0].u) {
	case DEVQ_TEX1D:
		fmt = pr_u32(&r);
		ch = pr_u32(&r);
		if ((b = host_format_bytes(fmt)) == 0 || (ch != 1 && ch != 2 &&
		    ch != 4))
			return CUDA_ERROR_INVALID_VALUE;
		pw_u64(&c->blob, (1u << 28) / (b * ch));
		break;
	case DEVQ_P2P_ATOMIC:
		return CUDA_ERROR_INVALID_DEVICE;
	default:
		while (r.len - r.off >= 4) {
			if ((op = pr_u32(&r)) >= CU_ATOMIC_OPERATION_MAX)
				return CUDA_ERROR_INVALID_VALUE;
			pw_u32(&c->blob, CU_ATOMIC_CAPABILITY_SCALAR_32 |
			    CU_ATOMIC_CAPABILITY_SCALAR_64 |
			    (op < CU_ATOMIC_OPERATION_FLOAT_ADD ?
			    CU_ATOMIC_CAPABILITY_SIGNED |
			    CU_ATOMIC_CAPABILITY_UNSIGNED : 0));
		}
		break;
	}
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* in: event (both calls): all work is done when it is asked. */
static int
c_event_sync(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_EVENT);
	struct hevent *e;
	int rc;

	if ((rc = host_event(c, c->in[0].u, &e)) == CUDA_SUCCESS &&
	    o->ctx != NULL && o->ctx->h != NULL)
		idle_report(c, o->ctx, 0, NULL, NULL);
	return rc;
}

/* in: start, end -> milliseconds (float bits) */
static int
c_event_elapsed(struct rcall *c)
{
	struct hevent *ea, *eb;
	float ms;
	uint32_t bits;
	int rc;

	if ((rc = host_event(c, c->in[0].u, &ea)) != CUDA_SUCCESS ||
	    (rc = host_event(c, c->in[1].u, &eb)) != CUDA_SUCCESS)
		return rc;
	if (!ea->recorded || !eb->recorded ||
	    (ea->flags & CU_EVENT_DISABLE_TIMING) ||
	    (eb->flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	ms = (float)((double)(eb->t.tv_sec - ea->t.tv_sec) * 1e3 +
	    (double)(eb->t.tv_nsec - ea->t.tv_nsec) / 1e6);
	memcpy(&bits, &ms, sizeof bits);
	c->out[0].u = bits;
	return CUDA_SUCCESS;
}

/* ---- function attributes ----------------------------------------------- */

/* in: function, attribute, value */
static int
c_func_set_attr(struct rcall *c)
{
	struct robj *f = host_func(c, c->in[0].u);
	struct hfunc *hf;
	int v = (int)(int64_t)c->in[2].u;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	hf = f->h;
	/* check_call passed the attribute and its range; the device's: */
	switch (c->in[1].u) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (v > host_attr[
		    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN])
			return CUDA_ERROR_INVALID_VALUE;
		hf->maxdyn = v;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		hf->carveout = v;
		break;
	}
	return CUDA_SUCCESS;
}

/* in: function, config */
static int
c_func_set_cache(struct rcall *c)
{
	if (host_func(c, c->in[0].u) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

/* in: function, block, dynamic shmem, flags -> blocks */
static int
c_occupancy(struct rcall *c)
{
	struct robj *f = host_func(c, c->in[0].u);

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	c->out[0].u = (uint32_t)host_occupancy(f->h, c->in[1].u, c->in[2].u);
	return CUDA_SUCCESS;
}

/*
 * in: ctx, which, map offset, map, arguments.  The encoders' format is the
 * real driver's secret, so there is no map to give (CUDA_ERROR_NOT_SUPPORTED,
 * as for a driver without them); check_call refused a malformed request
 * first, as for the cuda backend.
 */
static int
c_tmap_encode(struct rcall *c)
{
	CTX(c, 0);
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define F(t, fn) [t - R_OPEN] = fn,
/*
 * The weight cache's GPU tier under isolation: process, emulated: an
 * entry's "device memory" is a memfd of the server's host memory (not
 * counted in the budget, which is each process's own), served by a copy
 * as the GPU's is by a device-to-device copy.  Once filled it is sealed
 * against writes, so that no worker that holds it (nor the server) can
 * map it writable, write it or resize it: the read-only mapping the
 * cuda backend asks the driver for (cuda.c, gx_map), enforced here by
 * the kernel.
 */
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE	0x0010
#endif
#define GTIER_SEALS	(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | \
			 F_SEAL_SEAL)

static int
host_gpu_export(struct rcall *c, const void *p, size_t len, int *device,
    int *fd, uint64_t *asize)
{
	uint64_t n = ((uint64_t)len + HOST_GRAN - 1) & ~(uint64_t)(HOST_GRAN - 1);
	void *m;
	int rc, f;

	if (host_ctx(c, c->in[0].u, &rc) == NULL)
		return rc;
	if (n == 0 || (f = memfd_create("gleam-gpu-tier", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (ftruncate(f, (off_t)n) == -1 || (m = mmap(NULL, n, PROT_WRITE,
	    MAP_SHARED, f, 0)) == MAP_FAILED) {
		close(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(m, p, len);
	munmap(m, n);
	/* FUTURE_WRITE too where the kernel has it (5.1): it also refuses
	 * mprotect to writable of a mapping made read-only. */
	if (fcntl(f, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == -1 &&
	    errno != EINVAL) {
		close(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (fcntl(f, F_ADD_SEALS, GTIER_SEALS) == -1) {
		/* Not kept rather than kept writable. */
		close(f);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*device = 0;
	*fd = f;
	*asize = n;
	return CUDA_SUCCESS;
}

static int
host_gpu_import(struct rcall *c, int device, int fd, uint64_t asize,
    size_t len)
{
	void *m;
	int rc;

	if (host_ctx(c, c->in[0].u, &rc) == NULL)
		return rc;
	if (host_stream(c, c->in[1].u) == -1)
		return CUDA_ERROR_INVALID_HANDLE;
	if (device != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (len > asize || rmem_check(c->cl, c->in[3].u, len) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((m = mmap(NULL, asize, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)c->in[3].u, m, len);
	munmap(m, asize);
	return CUDA_SUCCESS;
}

static int
host_ctx_device(struct rcall *c)
{
	int rc;

	return host_ctx(c, c->in[0].u, &rc) != NULL ? 0 : -1;
}

/* ---- graphs (issue 24) ------------------------------------------------ */

/*
 * A graph here is the list of one-way calls that a capture recorded, or
 * that explicit nodes stand for, in order, each with its own copy of its
 * fields, and the edges between its nodes; a launch replays them on the
 * launch's stream in an order the edges allow, list order first (all
 * work here is done at once, so that keeps every dependency a real graph
 * has).  A capture makes a node of each call but event records and waits
 * (as the driver does on one stream), each node after the capture's open
 * ends, which it then replaces; the streams a capture joined share one
 * set of open ends here (all its work is one stream's).  Nodes are
 * numbered from 1 per graph, their handles, kept by a clone.
 */
#define HOP_EMPTY	R_CALL_END		/* an empty node */
#define HOP_CHILD	(R_CALL_END + 1)	/* a child graph node */
#define HOP_ALLOC	(R_CALL_END + 2)	/* a memory allocation node:
						   in[] as RPC_SIG_MEMALLOC's
						   numbers, its address in[0] */
#define HOP_FREE	(R_CALL_END + 3)	/* a free node: in[0] */
#define HOP_COND	(R_CALL_END + 4)	/* a conditional node: in[0]
						   its handle, in[1] its type */

/*
 * A conditional node's condition: made on a graph (R_COND_HANDLE), copied
 * with it, set by kernels during a launch (gleam_host_set_conditional).
 */
struct hcond {
	uint64_t	 h;
	unsigned	 def, flags, value;
};

/*
 * A user object: its references, the client's one (until R_UOBJ_RELEASE)
 * and those graphs hold (and their execs and clones); the client names
 * it while any is left.  When the last goes, the client is told
 * (UOBJ_NOTICE) and runs the destructor.  cl NULL: the client is going.
 */
struct huobj {
	struct rclient	*cl;
	uint64_t	 id;
	unsigned long	 refs;
	int		 share;		/* the client's reference is held */
};

/* A graph's references to one user object. */
struct huref {
	struct huobj	*u;
	unsigned long	 n;
};

/* Turns of a while node's body before the launch fails. */
#define HOST_WHILE_MAX	(1u << 20)

struct hop {
	uint16_t	 type;
	int		 sf;		/* the field naming the stream */
	struct rpc_val	 in[RPC_MAX_FIELDS];
	uint64_t	 node;		/* its node's number, 0 if none */
	struct hgraph	*child;		/* HOP_CHILD: its own copy */
	struct hgraph	**body;		/* HOP_COND: its bodies, its own */
	uint32_t	 nbody;
	uint8_t		*kattr;		/* a kernel node's attributes set,
					   as a stream's sattr */
	int		 off;		/* an exec's node disabled */
};

struct hedge {
	uint64_t	 from, to;	/* node numbers */
	CUgraphEdgeData	 data;		/* ports, type: zero the default */
};

struct hgraph {
	struct hop	*op;
	size_t		 n, cap;
	struct hedge	*e;
	size_t		 ne, ecap;
	uint64_t	 nodes;		/* node numbers given */
	uint64_t	*ends;		/* a capture's open ends */
	size_t		 nends;
	uint64_t	 capid;		/* nonzero while a capture records */
	uint64_t	 id;		/* the client's id of a captured graph */
	int		 invalid;	/* that capture met an illegal call */
	int		 capto;		/* the program's graph, captured into
					   (cuStreamBeginCaptureToGraph) */
	struct hcond	*cond;		/* conditions made on it */
	size_t		 ncond;
	struct huref	*uref;		/* user objects' references it owns */
	size_t		 nuref;
	struct hgraph	*up;		/* a body: the graph of its node */
};

static uint64_t	 hgraph_capseq;
static uint64_t	 hcond_seq;
/* The exec a launch on this thread runs: its conditions are set. */
static __thread struct hgraph *hrun_root;

static uint32_t	hgraph_node_type(uint16_t);
static struct robj *hgraph_robj(struct rclient *, const struct hgraph *);
static void	hgraph_unname(struct rclient *, const struct hgraph *);

static int	host_call(struct rcall *);

/*
 * The field of a recordable call that names its stream, else -1: the
 * calls that are one stream's work (rpc_stream_field) but the copies to
 * the host and over the lanes, which a capture does not record here.
 */
static int
hgraph_sfield(uint16_t type)
{
	switch (type) {
	case R_MEM_DTOH:
	case R_MEM_HTOD_LANES:
	case R_MEM_DTOH_LANES:
		return -1;
	}
	return rpc_stream_field(type);
}

static int
hgraph_is_node(uint16_t type)
{
	return type != R_EVENT_RECORD && type != R_STREAM_WAIT_EVENT;
}

static const char *
hop_sig(uint16_t type)
{
	return type >= R_CALL_END ? "" : rpc_lookup(type)->req;
}

static void
hop_clear(struct hop *o, const char *sig)
{
	uint32_t k;
	int i;

	for (i = 0; sig[i] != '\0'; i++)
		if (sig[i] == 'B' || sig[i] == 'S')
			free((void *)o->in[i].p);
	hgraph_free(o->child);
	o->child = NULL;
	for (k = 0; k < o->nbody; k++)
		hgraph_free(o->body[k]);
	free(o->body);
	o->body = NULL;
	o->nbody = 0;
	free(o->kattr);
	o->kattr = NULL;
}

/* n references to u go; with the last, u does, and its client learns. */
static void
huobj_drop(struct huobj *u, unsigned long n)
{
	u->refs -= n < u->refs ? n : u->refs;
	if (u->refs > 0)
		return;
	if (u->cl != NULL) {
		rclient_host_note(u->cl, UOBJ_NOTICE | u->id);
		robj_del(u->cl, u->id);
	}
	free(u);
}

/* The client goes: u names none, and its reference goes. */
static void
huobj_forget(struct huobj *u)
{
	u->cl = NULL;
	if (u->share) {
		u->share = 0;
		huobj_drop(u, 1);
	}
}

static void
hgraph_free(struct hgraph *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->n; i++)
		hop_clear(&g->op[i], hop_sig(g->op[i].type));
	for (i = 0; i < g->nuref; i++)
		huobj_drop(g->uref[i].u, g->uref[i].n);
	free(g->uref);
	free(g->op);
	free(g->e);
	free(g->ends);
	free(g->cond);
	free(g);
}

/* The capture's open ends become the n nodes of v (numbers); 0 or -1. */
static int
hgraph_set_ends(struct hgraph *g, const uint64_t *v, size_t n)
{
	uint64_t *e = NULL;

	if (n > 0 && (e = malloc(n * sizeof *e)) == NULL)
		return -1;
	if (n > 0)
		memcpy(e, v, n * sizeof *e);
	free(g->ends);
	g->ends = e;
	g->nends = n;
	return 0;
}

/* An edge of g: 0, or -1 when out of memory. */
static int
hgraph_edge(struct hgraph *g, uint64_t from, uint64_t to,
    const CUgraphEdgeData *data)
{
	struct hedge *e;

	if (g->ne == g->ecap) {
		size_t ncap = g->ecap ? g->ecap * 2 : 16;

		if ((e = realloc(g->e, ncap * sizeof *e)) == NULL)
			return -1;
		g->e = e;
		g->ecap = ncap;
	}
	g->e[g->ne].from = from;
	g->e[g->ne].to = to;
	if (data != NULL)
		g->e[g->ne].data = *data;
	else
		memset(&g->e[g->ne].data, 0, sizeof g->e[g->ne].data);
	g->ne++;
	return 0;
}

/* A copy of one recorded call into g: 0, or -1 when out of memory. */
static int
hgraph_add(struct hgraph *g, uint16_t type, int sf, const struct rpc_val *in)
{
	const char *sig = hop_sig(type);
	struct hop *o;
	void *p;
	int i;

	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 16;

		if ((o = realloc(g->op, ncap * sizeof *o)) == NULL)
			return -1;
		g->op = o;
		g->cap = ncap;
	}
	o = &g->op[g->n];
	memset(o, 0, sizeof *o);
	o->type = type;
	o->sf = sf;
	for (i = 0; sig[i] != '\0'; i++) {
		o->in[i] = in[i];
		if (sig[i] != 'B' && sig[i] != 'S')
			continue;
		if ((p = malloc(in[i].len ? in[i].len : 1)) == NULL) {
			o->in[i].p = NULL;
			hop_clear(o, sig);
			return -1;
		}
		memcpy(p, in[i].p, in[i].len);
		o->in[i].p = p;
	}
	g->n++;
	return 0;
}

static struct hgraph *hgraph_clone(const struct hgraph *);

/* Copies of o's bodies into n, a copy of o in graph up: 0 or -1. */
static int
hop_bodies_clone(struct hop *n, const struct hop *o, struct hgraph *up)
{
	uint32_t k;

	n->nbody = 0;
	if ((n->body = calloc(o->nbody, sizeof *n->body)) == NULL)
		return -1;
	for (k = 0; k < o->nbody; k++) {
		if ((n->body[k] = hgraph_clone(o->body[k])) == NULL)
			return -1;
		n->body[k]->up = up;
		n->nbody = k + 1;
	}
	return 0;
}

static struct hgraph *
hgraph_clone(const struct hgraph *g)
{
	struct hgraph *n = calloc(1, sizeof *n);
	size_t i;

	if (n == NULL)
		return NULL;
	for (i = 0; i < g->n; i++) {
		if (hgraph_add(n, g->op[i].type, g->op[i].sf, g->op[i].in) ==
		    -1) {
			hgraph_free(n);
			return NULL;
		}
		n->op[i].node = g->op[i].node;
		n->op[i].off = g->op[i].off;
		if (g->op[i].type >= R_CALL_END)	/* numbers only */
			memcpy(n->op[i].in, g->op[i].in, sizeof n->op[i].in);
		if (g->op[i].child != NULL &&
		    (n->op[i].child = hgraph_clone(g->op[i].child)) == NULL) {
			hgraph_free(n);
			return NULL;
		}
		if (g->op[i].nbody > 0 &&
		    hop_bodies_clone(&n->op[i], &g->op[i], n) == -1) {
			hgraph_free(n);
			return NULL;
		}
		if (g->op[i].kattr != NULL) {
			if ((n->op[i].kattr = malloc(SATTR_SLOT *
			    SATTR_IDS)) == NULL) {
				hgraph_free(n);
				return NULL;
			}
			memcpy(n->op[i].kattr, g->op[i].kattr,
			    SATTR_SLOT * SATTR_IDS);
		}
	}
	if (g->ncond > 0) {
		if ((n->cond = calloc(g->ncond, sizeof *n->cond)) == NULL) {
			hgraph_free(n);
			return NULL;
		}
		memcpy(n->cond, g->cond, g->ncond * sizeof *n->cond);
		n->ncond = g->ncond;
	}
	/* A copy owns references of its own, as the driver's do. */
	if (g->nuref > 0) {
		if ((n->uref = calloc(g->nuref, sizeof *n->uref)) == NULL) {
			hgraph_free(n);
			return NULL;
		}
		for (i = 0; i < g->nuref; i++) {
			n->uref[i] = g->uref[i];
			n->uref[i].u->refs += n->uref[i].n;
		}
		n->nuref = g->nuref;
	}
	for (i = 0; i < g->ne; i++)
		if (hgraph_edge(n, g->e[i].from, g->e[i].to,
		    &g->e[i].data) == -1) {
			hgraph_free(n);
			return NULL;
		}
	n->nodes = g->nodes;
	return n;
}

/* The op of g that node number h is, or NULL. */
static struct hop *
hgraph_op(const struct hgraph *g, uint64_t h)
{
	size_t i;

	for (i = 0; h != 0 && i < g->n; i++)
		if (g->op[i].node == h)
			return &g->op[i];
	return NULL;
}

/* Ends every capture recording into g: its streams record no more. */
static void
hgraph_unjoin(struct rclient *cl, struct hgraph *g)
{
	size_t i = 0;
	uint64_t id;
	void *v;

	while (htab_next(&cl->objs, &i, &id, &v))
		if (((struct robj *)v)->kind == RK_STREAM &&
		    ((struct robj *)v)->cap == g)
			((struct robj *)v)->cap = NULL;
	g->capid = 0;
	hgraph_set_ends(g, NULL, 0);
}

/*
 * Before dispatch: a call on a capturing stream is recorded (1, *rc its
 * answer), a synchronization of one fails and spoils the capture, as the
 * driver's do; else 0, and the call runs.
 */
static int
hgraph_intercept(struct rcall *c, int *rc)
{
	uint16_t type = c->d->type;
	struct robj *so = NULL, *eo, *go;
	struct hgraph *g;
	struct hevent *e;
	int sf = hgraph_sfield(type);

	if (type == R_STREAM_SYNC || type == R_STREAM_QUERY) {
		if (c->in[1].u > 2 && (so = robj_get(c->cl, c->in[1].u,
		    RK_STREAM)) != NULL && so->cap != NULL) {
			((struct hgraph *)so->cap)->invalid = 1;
			*rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
			return 1;
		}
		return 0;
	}
	if (sf == -1 || c->in[sf].u <= 2 ||
	    (so = robj_get(c->cl, c->in[sf].u, RK_STREAM)) == NULL)
		return 0;
	if (type == R_STREAM_WAIT_EVENT && so->cap == NULL) {
		/* Waiting on an event a capture recorded joins it. */
		if ((eo = robj_get(c->cl, c->in[2].u, RK_EVENT)) == NULL)
			return 0;
		e = eo->h;
		if (e->capid != 0 && (go = robj_get(c->cl, e->capgraph,
		    RK_GRAPH)) != NULL &&
		    ((struct hgraph *)go->h)->capid == e->capid) {
			so->cap = go->h;
			/* Listed: no stream is asked about while it captures. */
			rclient_touch(c->cl, so);
			*rc = CUDA_SUCCESS;
			return 1;
		}
		return 0;
	}
	if ((g = so->cap) == NULL) {
		if (type == R_EVENT_RECORD && (eo = robj_get(c->cl,
		    c->in[1].u, RK_EVENT)) != NULL)
			((struct hevent *)eo->h)->capid = 0;
		return 0;
	}
	if ((*rc = check_call(c)) != CUDA_SUCCESS) {
		g->invalid = 1;
		return 1;
	}
	if (type == R_EVENT_RECORD) {
		if ((eo = robj_get(c->cl, c->in[1].u, RK_EVENT)) == NULL) {
			*rc = CUDA_ERROR_INVALID_HANDLE;
			return 1;
		}
		e = eo->h;
		e->capgraph = g->id;
		e->capid = g->capid;
	}
	if (hgraph_add(g, type, sf, c->in) == -1) {
		g->invalid = 1;
		*rc = CUDA_ERROR_OUT_OF_MEMORY;
		return 1;
	}
	*rc = CUDA_SUCCESS;
	if (hgraph_is_node(type)) {
		size_t i;

		g->op[g->n - 1].node = ++g->nodes;
		for (i = 0; i < g->nends; i++)
			if (hgraph_edge(g, g->ends[i], g->nodes, NULL) == -1) {
				g->invalid = 1;
				*rc = CUDA_ERROR_OUT_OF_MEMORY;
			}
		if (hgraph_set_ends(g, &g->nodes, 1) == -1) {
			g->invalid = 1;
			*rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	return 1;
}

/* in: ctx, stream, mode, graph id */
static int
c_capture_begin(struct rcall *c)
{
	struct robj *so, *go;
	struct hgraph *g;

	CTX(c, 0);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (so->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((go = robj_new(c->cl, c->in[3].u, RK_GRAPH, g)) == NULL) {
		free(g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	g->capid = ++hgraph_capseq;
	g->id = c->in[3].u;
	go->cap = so;
	so->cap = g;
	/* Listed: no stream is asked about while it captures. */
	rclient_touch(c->cl, so);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, keep */
static int	c_graph_nodes(struct rcall *);

static int
c_capture_end(struct rcall *c)
{
	struct robj *so, *go = NULL;
	struct hgraph *g;
	size_t i = 0;
	uint64_t id = 0;
	void *v;
	int rc = CUDA_SUCCESS;

	CTX(c, 0);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return c->in[1].u <= 2 ? CUDA_ERROR_ILLEGAL_STATE :
		    CUDA_ERROR_INVALID_HANDLE;
	if ((g = so->cap) == NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	while (htab_next(&c->cl->objs, &i, &id, &v))
		if (((struct robj *)v)->kind == RK_GRAPH &&
		    ((struct robj *)v)->h == g) {
			go = v;
			break;
		}
	if (go == NULL || go->cap != so)
		return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	hgraph_unjoin(c->cl, g);
	go->cap = NULL;
	if (g->invalid)
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	g->invalid = 0;
	/* A graph captured into stays the program's, whatever the end. */
	if (g->capto)
		g->capto = 0;
	else if (rc != CUDA_SUCCESS || (c->in[2].u & 1) == 0) {
		hgraph_free(g);
		robj_del(c->cl, id);
	} else if (c->in[2].u & 2)
		/* The new graph's listing, where the client asked for it. */
		graph_listing_put(c, c_graph_nodes, id);
	return rc;
}

/*
 * The n node numbers of field f (u64 each) into *v (malloc'd), each a
 * node of g; edge data (field e) only the default: 0, or the CUresult.
 */
static int
hgraph_nodes_in(struct rcall *c, const struct hgraph *g, int f, int e,
    uint64_t **v, size_t *n)
{
	const uint8_t *ed = c->in[e].p;
	struct pr r;
	size_t i;

	*n = c->in[f].len / 8;
	for (i = 0; i < c->in[e].len; i++)
		if (ed[i] != 0)
			return CUDA_ERROR_NOT_SUPPORTED;
	if ((*v = calloc(*n + 1, sizeof **v)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pr_init(&r, c->in[f].p, c->in[f].len);
	for (i = 0; i < *n; i++)
		if (hgraph_op(g, (*v)[i] = pr_u64(&r)) == NULL) {
			free(*v);
			*v = NULL;
			return CUDA_ERROR_INVALID_VALUE;
		}
	return CUDA_SUCCESS;
}

/* in: ctx, stream, mode, graph, dependencies, edge data */
static int
c_capture_to_graph(struct rcall *c)
{
	struct robj *so, *go;
	struct hgraph *g;
	uint64_t *v;
	size_t n;
	int rc;

	CTX(c, 0);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (so->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if ((go = robj_get(c->cl, c->in[3].u, RK_GRAPH)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (go->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	g = go->h;
	if ((rc = hgraph_nodes_in(c, g, 4, 5, &v, &n)) != CUDA_SUCCESS)
		return rc;
	rc = hgraph_set_ends(g, v, n) == -1 ? CUDA_ERROR_OUT_OF_MEMORY :
	    CUDA_SUCCESS;
	free(v);
	if (rc != CUDA_SUCCESS)
		return rc;
	g->capid = ++hgraph_capseq;
	g->id = c->in[3].u;
	g->capto = 1;
	g->invalid = 0;
	go->cap = so;
	so->cap = g;
	/* Listed: no stream is asked about while it captures. */
	rclient_touch(c->cl, so);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, op, nodes, edge data -> the open ends after it */
static int
c_capture_deps(struct rcall *c)
{
	struct robj *so;
	struct hgraph *g;
	uint64_t *v, *all;
	size_t n, i, k;
	int rc;

	CTX(c, 0);
	if (c->in[1].u <= 2)
		g = NULL;
	else if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	else
		g = so->cap;
	if (g == NULL) {
		if (c->in[2].u != CAPDEPS_GET)
			return CUDA_ERROR_ILLEGAL_STATE;
		pw_u32(&c->blob, 0);
		goto out;
	}
	if (c->in[2].u != CAPDEPS_GET) {
		if ((rc = hgraph_nodes_in(c, g, 3, 4, &v, &n)) != CUDA_SUCCESS)
			return rc;
		if (c->in[2].u == CAPDEPS_ADD) {
			/* The ends and the new nodes, each once. */
			if ((all = calloc(g->nends + n + 1, sizeof *all)) ==
			    NULL) {
				free(v);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			memcpy(all, g->ends, g->nends * sizeof *all);
			k = g->nends;
			for (i = 0; i < n; i++) {
				size_t j;

				for (j = 0; j < k && all[j] != v[i]; j++)
					;
				if (j == k)
					all[k++] = v[i];
			}
			free(v);
			v = all;
			n = k;
		}
		rc = hgraph_set_ends(g, v, n) == -1 ?
		    CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
		free(v);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	pw_u32(&c->blob, (uint32_t)g->nends);
	for (i = 0; i < g->nends; i++) {
		static const uint8_t zero[RPC_EDGE_LEN];
		const struct hop *o = hgraph_op(g, g->ends[i]);

		pw_u64(&c->blob, g->ends[i]);
		pw_u32(&c->blob, o != NULL ? hgraph_node_type(o->type) : 0);
		pw_bytes(&c->blob, zero, sizeof zero);
	}
out:
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, stream, op, attribute, source, value -> value.  A stream's
 * attributes are what was set, else 0 (its priority: as created, or
 * set); none changes how work runs here.
 */
static int
c_stream_attr(struct rcall *c)
{
	struct robj *so, *src;
	uint32_t a = (uint32_t)c->in[3].u;
	size_t len = rpc_sattr_len(a);
	uint8_t v[SATTR_SLOT];

	CTX(c, 0);
	if (c->in[1].u <= 2 || (so = robj_get(c->cl, c->in[1].u,
	    RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (c->in[2].u) {
	case SATTR_COPY:
		if (c->in[4].u <= 2 || (src = robj_get(c->cl, c->in[4].u,
		    RK_STREAM)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		so->prio = src->prio;
		if (src->sattr == NULL) {
			free(so->sattr);
			so->sattr = NULL;
			return CUDA_SUCCESS;
		}
		if (so->sattr == NULL &&
		    (so->sattr = malloc(SATTR_SLOT * SATTR_IDS)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(so->sattr, src->sattr, SATTR_SLOT * SATTR_IDS);
		return CUDA_SUCCESS;
	case SATTR_SET:
		if (a == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
			memcpy(&so->prio, c->in[5].p, sizeof so->prio);
			return CUDA_SUCCESS;
		}
		if (so->sattr == NULL &&
		    (so->sattr = calloc(SATTR_IDS, SATTR_SLOT)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(so->sattr + a * SATTR_SLOT, c->in[5].p, len);
		return CUDA_SUCCESS;
	}
	memset(v, 0, sizeof v);
	if (a == CU_LAUNCH_ATTRIBUTE_PRIORITY)
		memcpy(v, &so->prio, sizeof so->prio);
	else if (so->sattr != NULL)
		memcpy(v, so->sattr + a * SATTR_SLOT, len);
	pw_bytes(&c->blob, v, len);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* in: id, flags */
static int
c_graph_create(struct rcall *c)
{
	struct hgraph *g = calloc(1, sizeof *g);

	if (g == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (robj_new(c->cl, c->in[0].u, RK_GRAPH, g) == NULL) {
		free(g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* R_GRAPH_DESTROY and R_GEXEC_DESTROY: id */
static int
c_graph_destroy(struct rcall *c)
{
	int kind = c->d->type == R_GRAPH_DESTROY ? RK_GRAPH : RK_GEXEC;
	struct robj *o = robj_get(c->cl, c->in[0].u, kind);

	if (o == NULL || o->parent != NULL)	/* a body is its node's */
		return CUDA_ERROR_INVALID_VALUE;
	if (o->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (kind == RK_GRAPH)
		hgraph_unname(c->cl, o->h);
	hgraph_free(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

static int hcond_unused(const struct hgraph *, const struct hgraph *);

/* R_GRAPH_CLONE (new id, graph) and R_GRAPH_INSTANTIATE (ctx, exec id,
 * graph, flags, upload stream) */
static int
c_graph_clone(struct rcall *c)
{
	int inst = c->d->type == R_GRAPH_INSTANTIATE;
	struct robj *go, *o;
	struct hgraph *n;

	if (inst)
		CTX(c, 0);
	go = robj_get(c->cl, c->in[inst ? 2 : 1].u, RK_GRAPH);
	if (go == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (inst && go->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (inst && hcond_unused(go->h, go->h))
		return CUDA_ERROR_INVALID_VALUE;
	if (inst)
		STREAM(c, 4);
	if ((n = hgraph_clone(go->h)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((o = robj_new(c->cl, c->in[inst ? 1 : 0].u, inst ? RK_GEXEC :
	    RK_GRAPH, n)) == NULL) {
		hgraph_free(n);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* Is every edge into op o's node from a node done? */
static int
hgraph_ready(const struct hgraph *g, const struct hop *o, const char *done)
{
	size_t i, k;

	for (i = 0; o->node != 0 && i < g->ne; i++) {
		if (g->e[i].to != o->node)
			continue;
		for (k = 0; k < g->n && g->op[k].node != g->e[i].from; k++)
			;
		if (k < g->n && !done[k])
			return 0;
	}
	return 1;
}

/* The condition h of g or of a graph within it, else NULL. */
static struct hcond *
hcond_find(struct hgraph *g, uint64_t h)
{
	struct hcond *k;
	size_t i;
	uint32_t b;

	for (i = 0; i < g->ncond; i++)
		if (g->cond[i].h == h)
			return &g->cond[i];
	for (i = 0; i < g->n; i++) {
		if (g->op[i].child != NULL &&
		    (k = hcond_find(g->op[i].child, h)) != NULL)
			return k;
		for (b = 0; b < g->op[i].nbody; b++)
			if ((k = hcond_find(g->op[i].body[b], h)) != NULL)
				return k;
	}
	return NULL;
}

/* Does a conditional node of g, or of a graph within it, use h? */
static int
hcond_used(const struct hgraph *g, uint64_t h)
{
	size_t i;
	uint32_t b;

	for (i = 0; i < g->n; i++) {
		if (g->op[i].type == HOP_COND && g->op[i].in[0].u == h)
			return 1;
		if (g->op[i].child != NULL && hcond_used(g->op[i].child, h))
			return 1;
		for (b = 0; b < g->op[i].nbody; b++)
			if (hcond_used(g->op[i].body[b], h))
				return 1;
	}
	return 0;
}

/*
 * Is a condition made on g, or on a graph within it, used by no node of
 * root (the graph instantiated)?  The driver refuses to instantiate such
 * a graph (CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED).
 */
static int
hcond_unused(const struct hgraph *root, const struct hgraph *g)
{
	size_t i;
	uint32_t b;

	for (i = 0; i < g->ncond; i++)
		if (!hcond_used(root, g->cond[i].h))
			return 1;
	for (i = 0; i < g->n; i++) {
		if (g->op[i].child != NULL && hcond_unused(root, g->op[i].child))
			return 1;
		for (b = 0; b < g->op[i].nbody; b++)
			if (hcond_unused(root, g->op[i].body[b]))
				return 1;
	}
	return 0;
}

/* A launch begins: conditions that ask for it take their defaults. */
static void
hcond_reset(struct hgraph *g)
{
	size_t i;
	uint32_t b;

	for (i = 0; i < g->ncond; i++)
		if (g->cond[i].flags & CU_GRAPH_COND_ASSIGN_DEFAULT)
			g->cond[i].value = g->cond[i].def;
	for (i = 0; i < g->n; i++) {
		if (g->op[i].child != NULL)
			hcond_reset(g->op[i].child);
		for (b = 0; b < g->op[i].nbody; b++)
			hcond_reset(g->op[i].body[b]);
	}
}

/* cudaGraphSetConditional, for the kernels of a graph's launch. */
static void
host_set_cond(unsigned long long h, unsigned value)
{
	struct hcond *k;

	/* Outside a graph, or not its condition: nothing, as documented. */
	if (hrun_root != NULL && (k = hcond_find(hrun_root, h)) != NULL)
		k->value = value;
}

static int	hgraph_run(struct rclient *, struct hgraph *, uint64_t);

/* A conditional node: its bodies run as its condition says. */
static int
hcond_run(struct rclient *cl, const struct hop *o, uint64_t sid)
{
	struct hcond *k = NULL;
	unsigned long n;
	int rc = CUDA_SUCCESS;

	if (hrun_root == NULL ||
	    (k = hcond_find(hrun_root, o->in[0].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (o->in[1].u) {
	case CU_GRAPH_COND_TYPE_IF:
		if (k->value != 0)
			rc = hgraph_run(cl, o->body[0], sid);
		else if (o->nbody == 2)
			rc = hgraph_run(cl, o->body[1], sid);
		break;
	case CU_GRAPH_COND_TYPE_WHILE:
		for (n = 0; rc == CUDA_SUCCESS && k->value != 0; n++) {
			if (n == HOST_WHILE_MAX) {
				log_warn("host backend: a while node turned "
				    "%u times: the launch fails",
				    HOST_WHILE_MAX);
				return CUDA_ERROR_LAUNCH_TIMEOUT;
			}
			rc = hgraph_run(cl, o->body[0], sid);
		}
		break;
	case CU_GRAPH_COND_TYPE_SWITCH:
		if (k->value < o->nbody)
			rc = hgraph_run(cl, o->body[k->value], sid);
		break;
	}
	return rc;
}

/* Runs g's calls on stream sid, in an order its edges allow. */
static int
hgraph_run(struct rclient *cl, struct hgraph *g, uint64_t sid)
{
	struct rcall r;
	struct hop *o;
	char *done;
	size_t i, left;
	int rc = CUDA_SUCCESS;

	if ((done = calloc(g->n + 1, 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (left = g->n; left > 0 && rc == CUDA_SUCCESS; left--) {
		for (i = 0; i < g->n && (done[i] ||
		    !hgraph_ready(g, &g->op[i], done)); i++)
			;
		if (i == g->n) {
			rc = CUDA_ERROR_INVALID_VALUE;	/* a cycle */
			break;
		}
		done[i] = 1;
		o = &g->op[i];
		/* Allocation nodes' memory was made when they were added. */
		if (o->type == HOP_EMPTY || o->type == HOP_ALLOC ||
		    o->type == HOP_FREE || o->off)
			continue;
		if (o->type == HOP_CHILD) {
			rc = hgraph_run(cl, o->child, sid);
			continue;
		}
		if (o->type == HOP_COND) {
			rc = hcond_run(cl, o, sid);
			continue;
		}
		memset(&r, 0, sizeof r);
		r.cl = cl;
		r.d = rpc_lookup(o->type);
		memcpy(r.in, o->in, sizeof r.in);
		r.in[o->sf].u = sid;
		pw_init(&r.blob);
		rc = host_call(&r);
		free(r.scratch);
		pw_free(&r.blob);
	}
	free(done);
	return rc;
}

/* R_GRAPH_LAUNCH and R_GRAPH_UPLOAD: ctx, exec, stream */
static int
c_graph_launch(struct rcall *c)
{
	struct hgraph *prev;
	struct robj *eo;
	int rc;

	CTX(c, 0);
	if ((eo = robj_get(c->cl, c->in[1].u, RK_GEXEC)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	STREAM(c, 2);
	if (c->d->type == R_GRAPH_UPLOAD)
		return CUDA_SUCCESS;
	/* A graph launched from a graph runs with its own conditions. */
	prev = hrun_root;
	hrun_root = eo->h;
	hcond_reset(eo->h);
	rc = hgraph_run(c->cl, eo->h, c->in[2].u);
	hrun_root = prev;
	return rc;
}

static size_t
hgraph_nodes(const struct hgraph *g)
{
	size_t i, n = 0;

	for (i = 0; i < g->n; i++)
		n += g->op[i].node != 0;
	return n;
}

/* Has node h an edge into it? */
static int
hgraph_has_in(const struct hgraph *g, uint64_t h)
{
	size_t i;

	for (i = 0; i < g->ne; i++)
		if (g->e[i].to == h)
			return 1;
	return 0;
}

static size_t
hgraph_roots(const struct hgraph *g)
{
	size_t i, n = 0;

	for (i = 0; i < g->n; i++)
		n += g->op[i].node != 0 && !hgraph_has_in(g, g->op[i].node);
	return n;
}

/* in: exec, graph -> CUresult, update result */
static int
c_gexec_update(struct rcall *c)
{
	struct robj *eo = robj_get(c->cl, c->in[0].u, RK_GEXEC);
	struct robj *go = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	struct hgraph *e, *g, *n;
	size_t i;
	int rc = CUDA_SUCCESS, res = CU_GRAPH_EXEC_UPDATE_SUCCESS;

	if (eo == NULL || go == NULL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		res = CU_GRAPH_EXEC_UPDATE_ERROR;
		goto out;
	}
	e = eo->h;
	g = go->h;
	/* The same nodes in the same order, parameters aside. */
	if (e->n != g->n)
		res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	for (i = 0; res == 0 && i < e->n; i++)
		if (e->op[i].type != g->op[i].type)
			res = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
	/*
	 * One-way and refused all the same: the exec made anew from the
	 * graph, as cuda.c does (it says why).
	 */
	if (res != 0 && c->oneway && (n = hgraph_clone(g)) != NULL) {
		hgraph_free(e);
		eo->h = n;
		log_debug("client %s: a one-way graph update refused (%d): the "
		    "exec instantiated anew", c->cl->addr, res);
		res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	} else if (res == 0 && (n = hgraph_clone(g)) != NULL) {
		hgraph_free(e);
		eo->h = n;
	} else if (res == 0) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		res = CU_GRAPH_EXEC_UPDATE_ERROR;
	} else
		rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
out:
	c->out[0].u = (uint32_t)rc;
	c->out[1].u = (uint32_t)res;
	/* One-way: a failure is the call's (cuda.c says why). */
	if (c->oneway)
		return rc;
	return CUDA_SUCCESS;
}

/* in: graph, what -> count */
static int
c_graph_count(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	size_t n;

	if (go == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	n = hgraph_nodes(go->h);
	c->out[0].u = c->in[1].u == 0 ? n : c->in[1].u == 1 ?
	    hgraph_roots(go->h) : ((struct hgraph *)go->h)->ne;
	return CUDA_SUCCESS;
}

/* in: graph, flags -> a dot file: a node per line, then the chain. */
static int
c_graph_dot(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	const struct hgraph *g;
	char line[160];
	size_t i, k = 0;
	int len;

	if (go == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	g = go->h;
	pw_bytes(&c->blob, "digraph dot {\n", 14);
	for (i = 0; i < g->n; i++) {
		if (g->op[i].node == 0)
			continue;
		len = snprintf(line, sizeof line,
		    "\"node%llu\" [label=\"%s\"];\n",
		    (unsigned long long)g->op[i].node,
		    g->op[i].type >= R_CALL_END ? "node" :
		    rpc_lookup(g->op[i].type)->name);
		pw_bytes(&c->blob, line, (size_t)len);
	}
	for (k = 0; k < g->ne; k++) {
		len = snprintf(line, sizeof line,
		    "\"node%llu\" -> \"node%llu\";\n",
		    (unsigned long long)g->e[k].from,
		    (unsigned long long)g->e[k].to);
		pw_bytes(&c->blob, line, (size_t)len);
	}
	pw_bytes(&c->blob, "}\n", 2);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * A node's local id: its number, as the dot text names it; its tools id
 * that and its graph's id, unique in the process.
 */
/*
 * in: ctx, attribute, address -> the mapping holding it: here each range
 * of the client's is mapped on its own, in pieces of 2 MiB as the
 * driver's (the H100's answers for cuMemAlloc's memory).
 */
static int
c_ptr_attr(struct rcall *c)
{
	uint64_t base, size;

	CTX(c, 0);
	if (rmem_range(c->cl, c->in[2].u, &base, &size) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	switch (c->in[1].u) {
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		c->out[0].u = (size + (2u << 20) - 1) & ~(uint64_t)((2u << 20) -
		    1);
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		c->out[0].u = size;
		break;
	default:
		c->out[0].u = base;
	}
	return CUDA_SUCCESS;
}

static int
c_node_id(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	const struct hop *o;

	if (go == NULL || (o = hgraph_op(go->h, c->in[1].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	c->out[0].u = (uint32_t)o->node;
	c->out[1].u = c->in[0].u << 32 | (uint32_t)o->node;
	return CUDA_SUCCESS;
}

/* ---- graph nodes (issue 24) ------------------------------------------- */

/* The driver's type of an op's node. */
static uint32_t
hgraph_node_type(uint16_t type)
{
	switch (type) {
	case R_LAUNCH:
	case R_LAUNCH_EX:
		return CU_GRAPH_NODE_TYPE_KERNEL;
	case R_MEMSET:
		return CU_GRAPH_NODE_TYPE_MEMSET;
	case R_GRAPH_LAUNCH:
	case HOP_CHILD:
		return CU_GRAPH_NODE_TYPE_GRAPH;
	case HOP_EMPTY:
		return CU_GRAPH_NODE_TYPE_EMPTY;
	case HOP_ALLOC:
		return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
	case HOP_FREE:
		return CU_GRAPH_NODE_TYPE_MEM_FREE;
	case HOP_COND:
		return CU_GRAPH_NODE_TYPE_CONDITIONAL;
	case R_EVENT_RECORD:
		return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
	case R_STREAM_WAIT_EVENT:
		return CU_GRAPH_NODE_TYPE_WAIT_EVENT;
	case R_HOST_FUNC:
		return CU_GRAPH_NODE_TYPE_HOST;
	case R_STREAM_MEMOP:
		return CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
	}
	return CU_GRAPH_NODE_TYPE_MEMCPY;
}

/* The index among g's nodes of node number h. */
static uint32_t
hgraph_index(const struct hgraph *g, uint64_t h)
{
	size_t i;
	uint32_t k = 0;

	for (i = 0; i < g->n; i++)
		if (g->op[i].node == h)
			break;
		else
			k += g->op[i].node != 0;
	return k;
}

/* in: graph -> the listing (rpc.h): a node's handle is its number. */
static int	c_knode_get(struct rcall *);

static int
c_graph_nodes(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	static const CUgraphEdgeData zero;
	const struct hgraph *g;
	uint64_t *hs;
	uint32_t k = 0, *ty;
	size_t i, n;
	int special = 0;

	if (go == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	g = go->h;
	n = hgraph_nodes(g);
	hs = calloc(n + 1, sizeof *hs);
	ty = calloc(n + 1, sizeof *ty);
	if (hs == NULL || ty == NULL) {
		free(hs);
		free(ty);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pw_u32(&c->blob, (uint32_t)n);
	for (i = 0; i < g->n; i++)
		if (g->op[i].node != 0) {
			hs[k] = g->op[i].node;
			ty[k] = hgraph_node_type(g->op[i].type);
			pw_u64(&c->blob, hs[k]);
			pw_u32(&c->blob, ty[k]);
			k++;
		}
	k = 0;
	pw_u32(&c->blob, (uint32_t)hgraph_roots(g));
	for (i = 0; i < g->n; i++)
		if (g->op[i].node != 0) {
			if (!hgraph_has_in(g, g->op[i].node))
				pw_u32(&c->blob, k);
			k++;
		}
	pw_u32(&c->blob, (uint32_t)g->ne);
	for (i = 0; i < g->ne; i++) {
		pw_u32(&c->blob, hgraph_index(g, g->e[i].from));
		pw_u32(&c->blob, hgraph_index(g, g->e[i].to));
		special |= memcmp(&g->e[i].data, &zero, sizeof zero) != 0;
	}
	/* Edge data only where some edge has any. */
	pw_u32(&c->blob, special ? (uint32_t)g->ne : 0);
	for (i = 0; special && i < g->ne; i++)
		pw_bytes(&c->blob, &g->e[i].data, sizeof g->e[i].data);
	graph_knodes_put(c, c_knode_get, hs, ty, n);
	free(hs);
	free(ty);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* A graph robj of c's that no capture builds, else NULL. */
static struct hgraph *
hgraph_get(struct rcall *c, uint64_t id)
{
	struct robj *go = robj_get(c->cl, id, RK_GRAPH);

	return go == NULL || go->cap != NULL ? NULL : go->h;
}

/* The graph's robj of c's whose graph is g, else NULL. */
static struct robj *
hgraph_robj(struct rclient *cl, const struct hgraph *g)
{
	uint64_t id = robj_id_of(cl, g, RK_GRAPH);

	return id != 0 ? robj_get(cl, id, RK_GRAPH) : NULL;
}

/*
 * The client's ids of the bodies in g, and of those within them, are
 * forgotten: their node or graph goes.
 */
static void	hop_unname(struct rclient *, const struct hop *);

static void
hgraph_unname(struct rclient *cl, const struct hgraph *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		hop_unname(cl, &g->op[i]);
}

/* The ids of op o's bodies and child graph, and of those within them. */
static void
hop_unname(struct rclient *cl, const struct hop *o)
{
	struct robj *r;
	uint32_t b;

	for (b = 0; b < o->nbody; b++) {
		hgraph_unname(cl, o->body[b]);
		if ((r = hgraph_robj(cl, o->body[b])) != NULL &&
		    r->parent != NULL)
			robj_del(cl, r->id);
	}
	if (o->child != NULL) {
		hgraph_unname(cl, o->child);
		if ((r = hgraph_robj(cl, o->child)) != NULL &&
		    r->parent != NULL)
			robj_del(cl, r->id);
	}
}

/* Bodies made by hcond_bodies, unnamed and freed (on a failure). */
static void
hcond_drop(struct rclient *cl, struct hgraph **body, uint32_t n)
{
	struct robj *o;
	uint32_t k;

	for (k = 0; body != NULL && k < n; k++) {
		if (body[k] != NULL && (o = hgraph_robj(cl, body[k])) != NULL)
			robj_del(cl, o->id);
		hgraph_free(body[k]);
	}
	free(body);
}

/*
 * A conditional node's n bodies for graph g, empty, each known by the
 * client's id in ids (u64 each) and owned by the node: 0 or the CUresult.
 * The node's condition must be one made on g or a graph g is a body of.
 */
static int
hcond_bodies(struct rcall *c, struct hgraph *g, const struct rpc_val *ids,
    uint32_t n, struct hgraph ***pbody)
{
	struct robj *go = hgraph_robj(c->cl, g), *o;
	struct hgraph **body, *up;
	struct rpc_val v[RPC_MAX_FIELDS];
	struct pr r;
	uint32_t k;
	size_t i;

	rpc_unpack(c->in[4].p, c->in[4].len, RPC_SIG_COND, v);
	for (up = g; up != NULL; up = up->up) {
		for (i = 0; i < up->ncond && up->cond[i].h != v[0].u; i++)
			;
		if (i < up->ncond)
			break;
	}
	if (up == NULL || go == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((body = calloc(n, sizeof *body)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pr_init(&r, ids->p, ids->len);
	for (k = 0; k < n; k++) {
		if ((body[k] = calloc(1, sizeof *body[k])) == NULL) {
			hcond_drop(c->cl, body, n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		body[k]->up = g;
		if ((o = robj_new(c->cl, pr_u64(&r), RK_GRAPH, body[k])) ==
		    NULL) {
			hcond_drop(c->cl, body, n);
			return CUDA_ERROR_INVALID_VALUE;
		}
		o->parent = go;
	}
	*pbody = body;
	return CUDA_SUCCESS;
}

/* R_UOBJ_CREATE: id; R_UOBJ_RELEASE: id */
static int
c_uobj(struct rcall *c)
{
	struct robj *o;
	struct huobj *u;

	if (c->d->type == R_UOBJ_RELEASE) {
		if ((o = robj_get(c->cl, c->in[0].u, RK_UOBJ)) == NULL ||
		    !((struct huobj *)o->h)->share)
			return CUDA_ERROR_INVALID_VALUE;
		u = o->h;
		u->share = 0;
		huobj_drop(u, 1);	/* its name goes with the last */
		return CUDA_SUCCESS;
	}
	if ((u = calloc(1, sizeof *u)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	u->cl = c->cl;
	u->id = c->in[0].u;
	u->refs = 1;
	u->share = 1;
	if (robj_new(c->cl, c->in[0].u, RK_UOBJ, u) == NULL) {
		free(u);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* in: graph, user object, count, retain (1) or release (0) */
static int
c_graph_uobj(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	struct robj *uo = robj_get(c->cl, c->in[1].u, RK_UOBJ);
	unsigned long n = c->in[2].u;
	struct hgraph *g;
	struct huref *r;
	size_t i;

	if (go == NULL || uo == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	g = go->h;
	for (i = 0; i < g->nuref && g->uref[i].u != uo->h; i++)
		;
	if (c->in[3].u == 0) {
		/* More than the graph owns: refused, as the driver does. */
		if (i == g->nuref || g->uref[i].n < n)
			return CUDA_ERROR_INVALID_VALUE;
		if ((g->uref[i].n -= n) == 0)
			g->uref[i] = g->uref[--g->nuref];
		huobj_drop(uo->h, n);
		return CUDA_SUCCESS;
	}
	if (i == g->nuref) {
		if ((r = realloc(g->uref, (g->nuref + 1) * sizeof *r)) ==
		    NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->uref = r;
		g->uref[g->nuref].u = uo->h;
		g->uref[g->nuref].n = 0;
		g->nuref++;
	}
	g->uref[i].n += n;
	((struct huobj *)uo->h)->refs += n;
	return CUDA_SUCCESS;
}

/* in: ctx, graph, default value, flags -> the condition's handle */
static int
c_cond_handle(struct rcall *c)
{
	struct hgraph *g = hgraph_get(c, c->in[1].u);
	struct hcond *k;
	struct robj *ctx;
	int rc;

	if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((k = realloc(g->cond, (g->ncond + 1) * sizeof *k)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->cond = k;
	k = &g->cond[g->ncond++];
	/* Numbers no pointer or small integer is, unique in the process. */
	k->h = 0x6c00000000000000ULL | ++hcond_seq;
	k->def = (unsigned)c->in[2].u;
	k->flags = (unsigned)c->in[3].u;
	k->value = k->flags & CU_GRAPH_COND_ASSIGN_DEFAULT ? k->def : 0;
	c->out[0].u = k->h;
	return CUDA_SUCCESS;
}

/* in: ctx, graph, node type, dependencies, request -> node */
static int
c_graph_add(struct rcall *c)
{
	struct hgraph *g = hgraph_get(c, c->in[1].u), *child = NULL;
	struct hgraph **body = NULL;
	uint16_t call = check_graph_call(c->in[2].u), type = call;
	struct robj *f, *ctx = NULL;
	struct rcall sub;
	struct rpc_val av[RPC_MAX_FIELDS];
	uint32_t nbody = 0;
	struct pr r;
	size_t nd = c->in[3].len / 8, i;
	uint64_t h, ptr = 0;
	int rc, sf = -1;

	if (g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[0].u != 0) {
		if ((ctx = host_ctx(c, c->in[0].u, &rc)) == NULL)
			return rc;
	} else if (call != 0 ||
	    c->in[2].u == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
	    c->in[2].u == CU_GRAPH_NODE_TYPE_CONDITIONAL)
		return CUDA_ERROR_INVALID_CONTEXT;
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < nd; i++)
		if (hgraph_op(g, pr_u64(&r)) == NULL)
			return CUDA_ERROR_INVALID_VALUE;
	memset(&sub, 0, sizeof sub);
	if (call != 0) {
		if ((rc = check_graph_sub(c, 4, call, &sub)) != CUDA_SUCCESS)
			return rc;
		sf = hgraph_sfield(call);
	}
	switch (c->in[2].u) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		f = robj_get(c->cl, sub.in[1].u, RK_FUNC);
		if (f == NULL)
			f = robj_get(c->cl, sub.in[1].u, RK_KERNEL);
		if (f == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (robj_get(c->cl, sub.in[call == R_EVENT_RECORD ? 1 : 2].u,
		    RK_EVENT) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		break;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		type = HOP_EMPTY;
		break;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		pr_init(&r, c->in[4].p, c->in[4].len);
		if ((g == NULL) || (child = hgraph_get(c, pr_u64(&r))) ==
		    NULL || child == g)
			return CUDA_ERROR_INVALID_VALUE;
		if ((child = hgraph_clone(child)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		type = HOP_CHILD;
		break;
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		/*
		 * Made now and kept with the context: a graph's exec and
		 * clones run with the same address, as the driver's do.
		 */
		if ((rc = check_memalloc(&c->in[4], av)) != CUDA_SUCCESS)
			return rc;
		if (av[2].u != CU_MEM_ALLOCATION_TYPE_PINNED ||
		    av[4].u != CU_MEM_LOCATION_TYPE_DEVICE || av[5].u != 0 ||
		    av[1].u == 0)
			return CUDA_ERROR_INVALID_VALUE;
		if ((rc = host_mem_new(c, ctx, av[1].u, &ptr)) !=
		    CUDA_SUCCESS)
			return rc;
		type = HOP_ALLOC;
		break;
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		pr_init(&r, c->in[4].p, c->in[4].len);
		ptr = pr_u64(&r);
		if (rmem_check(c->cl, ptr, 1) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		type = HOP_FREE;
		break;
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		if ((rc = check_cond(&c->in[4], av)) != CUDA_SUCCESS)
			return rc;
		if ((rc = hcond_bodies(c, g, &av[3], (uint32_t)av[2].u,
		    &body)) != CUDA_SUCCESS)
			return rc;
		nbody = (uint32_t)av[2].u;
		type = HOP_COND;
		break;
	}
	if (hgraph_add(g, type, sf, sub.in) == -1) {
		hgraph_free(child);
		hcond_drop(c->cl, body, nbody);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h = ++g->nodes;
	g->op[g->n - 1].node = h;
	g->op[g->n - 1].child = child;
	g->op[g->n - 1].body = body;
	g->op[g->n - 1].nbody = nbody;
	if (type == HOP_COND) {
		g->op[g->n - 1].in[0].u = av[0].u;
		g->op[g->n - 1].in[1].u = av[1].u;
	}
	if (type == HOP_ALLOC)
		for (i = 1; i < 6; i++)
			g->op[g->n - 1].in[i].u = av[i].u;
	if (type == HOP_ALLOC || type == HOP_FREE)
		g->op[g->n - 1].in[0].u = ptr;
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < nd; i++)
		if (hgraph_edge(g, pr_u64(&r), h, NULL) == -1)
			return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].u = h;
	return CUDA_SUCCESS;
}

/*
 * Edge data the driver takes: a default edge, or one between two kernel
 * nodes whose type is programmatic (1) or default, from the default,
 * programmatic (1) or launch-completion (2) port, to the default port,
 * reserved bytes zero.
 */
static int
hedge_data_ok(const CUgraphEdgeData *d, const struct hop *from,
    const struct hop *to)
{
	static const CUgraphEdgeData zero;

	if (memcmp(d, &zero, sizeof zero) == 0)
		return 1;
	if (d->type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC ||
	    d->from_port > CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER ||
	    d->to_port != 0 || memcmp(d->reserved, zero.reserved,
	    sizeof d->reserved) != 0)
		return 0;
	return hgraph_node_type(from->type) == CU_GRAPH_NODE_TYPE_KERNEL &&
	    hgraph_node_type(to->type) == CU_GRAPH_NODE_TYPE_KERNEL;
}

/* Whether e is the edge from a to b, with data d (NULL: the default). */
static int
hedge_is(const struct hedge *e, uint64_t a, uint64_t b,
    const CUgraphEdgeData *d)
{
	static const CUgraphEdgeData zero;

	return e->from == a && e->to == b &&
	    memcmp(&e->data, d != NULL ? d : &zero, sizeof zero) == 0;
}

/*
 * Whether e is the edge a to b that a call adding or removing names with
 * data d (NULL: none given).  Removed with none, the edge whatever its
 * data (the H200's driver (580) takes a programmatic edge so).
 */
static int
hedge_named(const struct hedge *e, uint64_t a, uint64_t b,
    const CUgraphEdgeData *d, int add)
{
	if (d == NULL && !add)
		return e->from == a && e->to == b;
	return hedge_is(e, a, b, d);
}

/* in: graph, add, pairs (u64 from, u64 to) */
static int
c_graph_edges(struct rcall *c)
{
	struct hgraph *g = hgraph_get(c, c->in[0].u);
	size_t n = c->in[2].len / 16, i, k;
	CUgraphEdgeData *ed = NULL;
	const struct hop *fo, *to;
	struct pr r;
	uint64_t a, b;
	int rc = CUDA_SUCCESS;

	if (g == NULL || (c->in[3].len != 0 &&
	    c->in[3].len != n * sizeof *ed))
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[3].len != 0) {
		if ((ed = malloc(c->in[3].len)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(ed, c->in[3].p, c->in[3].len);
	}
	/* All checked before any change, as the driver does. */
	pr_init(&r, c->in[2].p, c->in[2].len);
	for (i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		a = pr_u64(&r);
		b = pr_u64(&r);
		if ((fo = hgraph_op(g, a)) == NULL ||
		    (to = hgraph_op(g, b)) == NULL || a == b ||
		    (ed != NULL && !hedge_data_ok(&ed[i], fo, to))) {
			rc = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		for (k = 0; k < g->ne; k++)
			if (hedge_named(&g->e[k], a, b, ed != NULL ? &ed[i] :
			    NULL, c->in[1].u != 0))
				break;
		if ((k < g->ne) == (c->in[1].u != 0))
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	pr_init(&r, c->in[2].p, c->in[2].len);
	for (i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		a = pr_u64(&r);
		b = pr_u64(&r);
		if (c->in[1].u) {
			if (hgraph_edge(g, a, b, ed != NULL ? &ed[i] : NULL) ==
			    -1)
				rc = CUDA_ERROR_OUT_OF_MEMORY;
			continue;
		}
		for (k = 0; k < g->ne; k++)
			if (hedge_named(&g->e[k], a, b, ed != NULL ? &ed[i] :
			    NULL, 0)) {
				memmove(&g->e[k], &g->e[k + 1],
				    (g->ne - k - 1) * sizeof *g->e);
				g->ne--;
				break;
			}
	}
	free(ed);
	return rc;
}

/* in: graph, node */
static int
c_graph_node_destroy(struct rcall *c)
{
	struct hgraph *g = hgraph_get(c, c->in[0].u);
	struct hop *o;
	size_t k;

	if (g == NULL || (o = hgraph_op(g, c->in[1].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* The H200's driver (580) keeps an allocation node. */
	if (o->type == HOP_ALLOC)
		return CUDA_ERROR_NOT_SUPPORTED;
	hop_unname(c->cl, o);
	hop_clear(o, hop_sig(o->type));
	k = (size_t)(o - g->op);
	memmove(o, o + 1, (g->n - k - 1) * sizeof *o);
	g->n--;
	for (k = 0; k < g->ne; )
		if (g->e[k].from == c->in[1].u || g->e[k].to == c->in[1].u) {
			memmove(&g->e[k], &g->e[k + 1],
			    (g->ne - k - 1) * sizeof *g->e);
			g->ne--;
		} else
			k++;
	for (k = 0; k < g->nends; )
		if (g->ends[k] == c->in[1].u)
			g->ends[k] = g->ends[--g->nends];
		else
			k++;
	return CUDA_SUCCESS;
}

/* The kernel node h of graph (or exec's graph) id: its op, or NULL. */
static struct hop *
hgraph_kop(struct rcall *c, uint64_t id, int kind, uint64_t h)
{
	struct robj *o = robj_get(c->cl, id, kind);
	struct hop *op;

	if (o == NULL || (op = hgraph_op(o->h, h)) == NULL ||
	    (op->type != R_LAUNCH && op->type != R_LAUNCH_EX))
		return NULL;
	return op;
}

/* in: graph, node -> function id, grid, block, shmem, arguments */
static int
c_knode_get(struct rcall *c)
{
	struct hop *o = hgraph_kop(c, c->in[0].u, RK_GRAPH, c->in[1].u);
	int i;

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 1; i <= 8; i++)
		c->out[i - 1].u = o->in[i].u;
	c->out[8].p = o->in[11].p;
	c->out[8].len = o->in[11].len;
	return CUDA_SUCCESS;
}

/* in: graph, exec (0: the graph's node), node, R_LAUNCH request */
static int
c_knode_set(struct rcall *c)
{
	struct hop *o;
	struct robj *f;
	struct rcall sub;
	void *p;
	int rc, i;

	if (hgraph_kop(c, c->in[0].u, RK_GRAPH, c->in[2].u) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o = c->in[1].u == 0 ? hgraph_kop(c, c->in[0].u, RK_GRAPH, c->in[2].u) :
	    hgraph_kop(c, c->in[1].u, RK_GEXEC, c->in[2].u);
	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = check_graph_sub(c, 3, R_LAUNCH, &sub)) != CUDA_SUCCESS)
		return rc;
	CTX(&sub, 0);
	f = robj_get(c->cl, sub.in[1].u, RK_FUNC);
	if (f == NULL)
		f = robj_get(c->cl, sub.in[1].u, RK_KERNEL);
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((p = malloc(sub.in[11].len + 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(p, sub.in[11].p, sub.in[11].len);
	for (i = 0; i <= 8; i++)
		o->in[i].u = sub.in[i].u;
	free((void *)o->in[11].p);
	o->in[11].p = p;
	o->in[11].len = sub.in[11].len;
	return CUDA_SUCCESS;
}

/*
 * in: graph, kernel node, op, attribute, source graph and node, value ->
 * value.  Values kept per node, that change nothing here; a copy goes
 * with the graph's copies.
 */
static int
c_knode_attr(struct rcall *c)
{
	struct hop *o = hgraph_kop(c, c->in[0].u, RK_GRAPH, c->in[1].u), *src;
	uint32_t a = (uint32_t)c->in[3].u;
	size_t len = rpc_kattr_len(a);
	uint8_t v[SATTR_SLOT];

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (c->in[2].u) {
	case SATTR_COPY:
		if ((src = hgraph_kop(c, c->in[4].u, RK_GRAPH,
		    c->in[5].u)) == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		if (src == o)
			return CUDA_SUCCESS;
		if (src->kattr == NULL) {
			free(o->kattr);
			o->kattr = NULL;
			return CUDA_SUCCESS;
		}
		if (o->kattr == NULL &&
		    (o->kattr = malloc(SATTR_SLOT * SATTR_IDS)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(o->kattr, src->kattr, SATTR_SLOT * SATTR_IDS);
		return CUDA_SUCCESS;
	case SATTR_SET:
		if (o->kattr == NULL &&
		    (o->kattr = calloc(SATTR_IDS, SATTR_SLOT)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(o->kattr + a * SATTR_SLOT, c->in[6].p, len);
		return CUDA_SUCCESS;
	}
	memset(v, 0, sizeof v);
	if (o->kattr != NULL)
		memcpy(v, o->kattr + a * SATTR_SLOT, len);
	pw_bytes(&c->blob, v, len);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* in: graph, node -> type, the request it stands for (rpc.h) */
static int
c_node_get(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	struct rpc_val v[RPC_MAX_FIELDS];
	struct hop *o;
	int i;

	if (go == NULL || (o = hgraph_op(go->h, c->in[1].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (o->type) {
	case R_MEMSET:
	case R_MEM_3D:
	case R_EVENT_RECORD:
	case R_STREAM_WAIT_EVENT:
	case R_HOST_FUNC:
	case R_STREAM_MEMOP:
		memcpy(v, o->in, sizeof v);
		v[0].u = 0;
		if (o->sf >= 0)
			v[o->sf].u = 0;
		rpc_pack(&c->blob, rpc_lookup(o->type)->req, v);
		break;
	case HOP_ALLOC:
		memset(v, 0, sizeof v);
		for (i = 0; i < 6; i++)
			v[i].u = o->in[i].u;
		rpc_pack(&c->blob, RPC_SIG_MEMALLOC, v);
		break;
	case HOP_FREE:
		pw_u64(&c->blob, o->in[0].u);
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].u = hgraph_node_type(o->type);
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * A child graph node's graph (field 4: a graph's id) replaced by a copy
 * of that graph, in g (the graph top, or an exec of it).  An exec's must
 * keep its nodes and their types, as cuGraphExecUpdate's.
 */
static int
hchild_set(struct rcall *c, struct hgraph *g, struct hgraph *top,
    uint64_t node, int exec)
{
	struct hgraph *child, *n, tmp;
	struct hop *o;
	struct pr r;
	size_t i;
	uint32_t b;

	pr_init(&r, c->in[4].p, c->in[4].len);
	if ((o = hgraph_op(g, node)) == NULL || o->type != HOP_CHILD ||
	    (child = hgraph_get(c, pr_u64(&r))) == NULL || child == top)
		return CUDA_ERROR_INVALID_VALUE;
	if (exec) {
		if (child->n != o->child->n || child->ne != o->child->ne)
			return CUDA_ERROR_INVALID_VALUE;
		for (i = 0; i < child->n; i++)
			if (child->op[i].type != o->child->op[i].type)
				return CUDA_ERROR_INVALID_VALUE;
	}
	if ((n = hgraph_clone(child)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (exec) {
		hgraph_free(o->child);
		o->child = n;
		return CUDA_SUCCESS;
	}
	/*
	 * A graph's node keeps its graph, which the client may know by an
	 * id (R_CHILD_GRAPH): the copy's contents take its place.
	 */
	hgraph_unname(c->cl, o->child);
	tmp = *o->child;
	*o->child = *n;
	*n = tmp;
	hgraph_free(n);
	for (i = 0; i < o->child->n; i++)
		for (b = 0; b < o->child->op[i].nbody; b++)
			o->child->op[i].body[b]->up = o->child;
	return CUDA_SUCCESS;
}

/* in: graph, child graph node, id: the node's graph known by that id */
static int
c_child_graph(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH), *o;
	struct hop *op;

	if (go == NULL || go->cap != NULL ||
	    (op = hgraph_op(go->h, c->in[1].u)) == NULL ||
	    op->type != HOP_CHILD || hgraph_robj(c->cl, op->child) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((o = robj_new(c->cl, c->in[2].u, RK_GRAPH, op->child)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o->parent = go;
	o->node = c->in[1].u;
	return CUDA_SUCCESS;
}

/* in: graph, exec (0: the graph's node), node, node type, request */
static int
c_node_set(struct rcall *c)
{
	struct robj *go = robj_get(c->cl, c->in[0].u, RK_GRAPH), *eo = NULL;
	uint16_t call = check_graph_call(c->in[3].u);
	struct hgraph *g;
	struct rcall sub;
	struct hop *o;
	uint64_t node = c->in[2].u;
	size_t k;
	int rc;

	if (go == NULL || hgraph_op(go->h, node) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[1].u != 0 &&
	    (eo = robj_get(c->cl, c->in[1].u, RK_GEXEC)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	g = eo != NULL ? eo->h : go->h;
	if (c->in[3].u == CU_GRAPH_NODE_TYPE_GRAPH)
		return hchild_set(c, g, go->h, node, eo != NULL);
	if ((o = hgraph_op(g, node)) == NULL || o->type != call)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = check_graph_sub(c, 4, call, &sub)) != CUDA_SUCCESS)
		return rc;
	CTX(&sub, 0);
	if ((call == R_EVENT_RECORD || call == R_STREAM_WAIT_EVENT) &&
	    robj_get(c->cl, sub.in[call == R_EVENT_RECORD ? 1 : 2].u,
	    RK_EVENT) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The new op goes at the end, then takes the old one's place. */
	k = (size_t)(o - g->op);
	if (hgraph_add(g, call, hgraph_sfield(call), sub.in) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o = &g->op[k];
	hop_clear(o, hop_sig(o->type));
	g->op[g->n - 1].node = o->node;
	g->op[g->n - 1].off = o->off;
	*o = g->op[--g->n];
	return CUDA_SUCCESS;
}

/* in: exec, graph, node, set, enabled -> enabled */
static int
c_node_enabled(struct rcall *c)
{
	struct robj *eo = robj_get(c->cl, c->in[0].u, RK_GEXEC);
	struct robj *go = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	struct hop *o;

	if (eo == NULL || go == NULL || hgraph_op(go->h, c->in[2].u) ==
	    NULL || (o = hgraph_op(eo->h, c->in[2].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* The driver's kinds: kernels, copies and memsets. */
	if (o->type != R_LAUNCH && o->type != R_LAUNCH_EX &&
	    o->type != R_MEMSET && o->type != R_MEM_3D &&
	    o->type != R_MEM_DTOD && o->type != R_MEM_HTOD)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[3].u)
		o->off = c->in[4].u == 0;
	c->out[0].u = !o->off;
	return CUDA_SUCCESS;
}

/*
 * in: clone, original graph, node -> the clone's node.  A clone keeps
 * its original's node numbers; that the graph is a clone of the other
 * is not checked here.
 */
static int
c_node_find(struct rcall *c)
{
	struct robj *n = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH);

	if (n == NULL || g == NULL || n == g ||
	    hgraph_op(g->h, c->in[2].u) == NULL ||
	    hgraph_op(n->h, c->in[2].u) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	c->out[0].u = c->in[2].u;
	return CUDA_SUCCESS;
}

/*
 * in: device, op, attribute, value -> value.  The memory of allocation
 * nodes is made when they are added and kept: nothing to trim, and no
 * pool's figures to give.
 */
static int
c_graph_mem(struct rcall *c)
{
	if (c->in[0].u != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return c->in[1].u == 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- the JIT linker and stream memory operations ----------------------- */

/*
 * No JIT here: a link, like a PTX image, is refused with the code the
 * driver gives when its PTX compiler is missing.
 */
static int
c_link(struct rcall *c)
{
	return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

/* Does a wait's condition hold (the flags' low bits say which)? */
static int
host_wait_holds(uint64_t v, uint64_t want, uint32_t flags, int wide)
{
	if (!wide) {
		v = (uint32_t)v;
		want = (uint32_t)want;
	}
	switch (flags & 3) {
	case CU_STREAM_WAIT_VALUE_GEQ:
		/* Cyclic, as the driver compares. */
		return wide ? (int64_t)(v - want) >= 0 :
		    (int32_t)(uint32_t)(v - want) >= 0;
	case CU_STREAM_WAIT_VALUE_EQ:
		return v == want;
	case CU_STREAM_WAIT_VALUE_AND:
		return (v & want) != 0;
	default:	/* NOR */
		return ((wide ? ~(v | ~want) : (uint32_t)~(v | ~want))) != 0;
	}
}

/*
 * in: ctx, stream, flags, operations.  Stream work runs here at once, in
 * the connection's order: a write lands now, and a wait whose condition
 * does not hold yet never would (nothing runs beside it), so it is logged
 * and passed rather than hung on.
 */
static int
c_stream_memop(struct rcall *c)
{
	struct pr r;
	uint32_t i, n = c->in[3].len / RPC_MEMOP_LEN, type, flags, v32;
	uint64_t addr, val, v64;
	int wide;

	CTX(c, 0);
	STREAM(c, 1);
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < n; i++) {
		type = pr_u32(&r);
		flags = pr_u32(&r);
		addr = pr_u64(&r);
		val = pr_u64(&r);
		if (type == CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES ||
		    type == CU_STREAM_MEM_OP_BARRIER)
			continue;
		wide = type == CU_STREAM_MEM_OP_WAIT_VALUE_64 ||
		    type == CU_STREAM_MEM_OP_WRITE_VALUE_64;
		if (rmem_check(c->cl, addr, wide ? 8 : 4) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		if (type == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
			v32 = (uint32_t)val;
			memcpy((void *)(uintptr_t)addr, &v32, 4);
			continue;
		}
		if (type == CU_STREAM_MEM_OP_WRITE_VALUE_64) {
			memcpy((void *)(uintptr_t)addr, &val, 8);
			continue;
		}
		if (wide)
			memcpy(&v64, (void *)(uintptr_t)addr, 8);
		else {
			memcpy(&v32, (void *)(uintptr_t)addr, 4);
			v64 = v32;
		}
		if (!host_wait_holds(v64, val, flags, wide))
			log_debug("client %s: a stream wait that would never "
			    "end, passed", c->cl->addr);
	}
	return CUDA_SUCCESS;
}

/* The host backend's calls, each behind check_call (check_dispatch). */
#define HOST_CALLS(F) \
	F(R_CTX_CREATE, c_ctx_create) \
	F(R_CTX_DESTROY, c_ctx_destroy) \
	F(R_PRIMARY_RETAIN, c_primary_retain) \
	F(R_PRIMARY_RELEASE, c_primary_release) \
	F(R_PRIMARY_RESET, c_primary_reset) \
	F(R_CTX_SYNC, c_ctx_sync) \
	F(R_CTX_SET_LIMIT, c_ctx_set_limit) \
	F(R_MEM_ALLOC, c_mem_alloc) \
	F(R_MEM_ALLOC_HOST, c_mem_alloc) \
	F(R_MEM_ALLOC_PITCH, c_mem_alloc_pitch) \
	F(R_MEM_FREE, c_mem_free) \
	F(R_MEM_GET_INFO, c_mem_get_info) \
	F(R_MEM_GRANULARITY, c_mem_granularity) \
	F(R_MEM_POOL, c_mem_pool) \
	F(R_MEM_MAP, c_mem_pool) \
	F(R_MEM_TRIM, c_mem_pool) \
	F(R_MEM_HTOD, c_mem_htod) \
	F(R_MEM_DTOH, c_mem_dtoh) \
	F(R_MEM_DTOD, c_mem_dtod) \
	F(R_MEM_3D, c_mem_3d) \
	F(R_MEMSET, c_memset) \
	F(R_MODULE_LOAD, c_module_load) \
	F(R_MODULE_UNLOAD, c_module_unload) \
	F(R_MODULE_GET_FUNC, c_module_get_func) \
	F(R_MODULE_GET_GLOBAL, c_module_get_global) \
	F(R_LIBRARY_LOAD, c_library_load) \
	F(R_LIBRARY_UNLOAD, c_library_unload) \
	F(R_LIBRARY_GET_KERNEL, c_library_get_kernel) \
	F(R_LIBRARY_GET_GLOBAL, c_library_get_global) \
	F(R_LAUNCH, c_launch) \
	F(R_LAUNCH_EX, c_launch_ex) \
	F(R_STREAM_CREATE, c_stream_create) \
	F(R_STREAM_DESTROY, c_stream_destroy) \
	F(R_STREAM_SYNC, c_stream_sync) \
	F(R_STREAM_QUERY, c_stream_sync) \
	F(R_STREAM_WAIT_EVENT, c_stream_wait_event) \
	F(R_EVENT_CREATE, c_event_create) \
	F(R_EVENT_DESTROY, c_event_destroy) \
	F(R_EVENT_RECORD, c_event_record) \
	F(R_EVENT_SYNC, c_event_sync) \
	F(R_EVENT_QUERY, c_event_sync) \
	F(R_EVENT_ELAPSED, c_event_elapsed) \
	F(R_FUNC_SET_ATTR, c_func_set_attr) \
	F(R_FUNC_SET_CACHE, c_func_set_cache) \
	F(R_OCCUPANCY, c_occupancy) \
	F(R_TMAP_ENCODE, c_tmap_encode) \
	F(R_CAPTURE_BEGIN, c_capture_begin) \
	F(R_CAPTURE_END, c_capture_end) \
	F(R_GRAPH_CREATE, c_graph_create) \
	F(R_GRAPH_DESTROY, c_graph_destroy) \
	F(R_GRAPH_INSTANTIATE, c_graph_clone) \
	F(R_GEXEC_DESTROY, c_graph_destroy) \
	F(R_GRAPH_LAUNCH, c_graph_launch) \
	F(R_GRAPH_UPLOAD, c_graph_launch) \
	F(R_GEXEC_UPDATE, c_gexec_update) \
	F(R_GRAPH_CLONE, c_graph_clone) \
	F(R_GRAPH_COUNT, c_graph_count) \
	F(R_GRAPH_DOT, c_graph_dot) \
	F(R_STREAM_MEMOP, c_stream_memop) \
	F(R_LINK_CREATE, c_link) \
	F(R_LINK_ADD, c_link) \
	F(R_LINK_COMPLETE, c_link) \
	F(R_LINK_DESTROY, c_link) \
	F(R_VMM_RESERVE, c_vmm) \
	F(R_VMM_FREE, c_vmm) \
	F(R_VMM_CREATE, c_vmm) \
	F(R_VMM_RELEASE, c_vmm) \
	F(R_VMM_MAP, c_vmm) \
	F(R_VMM_UNMAP, c_vmm) \
	F(R_VMM_SET_ACCESS, c_vmm) \
	F(R_VMM_GET_ACCESS, c_vmm) \
	/* loads with JIT options */ \
	F(R_MODULE_LOAD_EX, c_module_load_ex) \
	F(R_GRAPH_NODES, c_graph_nodes) \
	F(R_GRAPH_ADD, c_graph_add) \
	F(R_GRAPH_EDGES, c_graph_edges) \
	F(R_GRAPH_NODE_DESTROY, c_graph_node_destroy) \
	F(R_KNODE_GET, c_knode_get) \
	F(R_KNODE_SET, c_knode_set) \
	F(R_NODE_GET, c_node_get) \
	F(R_NODE_SET, c_node_set) \
	F(R_NODE_ENABLED, c_node_enabled) \
	F(R_GRAPH_MEM, c_graph_mem) \
	F(R_NODE_FIND, c_node_find) \
	F(R_NODE_ID, c_node_id) \
	F(R_PTR_ATTR, c_ptr_attr) \
	F(R_ARRAY_CREATE, c_array_create) \
	F(R_ARRAY_DESTROY, c_array_destroy) \
	F(R_MIPMAP_LEVEL, c_mipmap_level) \
	F(R_ARRAY_MEMREQ, c_array_memreq) \
	F(R_TEX_CREATE, c_tex_create) \
	F(R_TEX_DESTROY, c_tex_destroy) \
	F(R_TEXREF_NEW, c_texref_new) \
	F(R_TEXREF_DESTROY, c_texref_destroy) \
	F(R_TEXREF_SET, c_texref_set) \
	F(R_TEXREF_GET, c_texref_get) \
	F(R_ARRAY_SPARSE, c_array_sparse) \
	F(R_MAP_ARRAY, c_map_array) \
	F(R_CTX_OP, c_ctx_op) \
	F(R_DEV_QUERY, c_dev_query) \
	F(R_HOST_FUNC, c_host_func) \
	F(R_STREAM_ATTR, c_stream_attr) \
	F(R_CAPTURE_TO_GRAPH, c_capture_to_graph) \
	F(R_CAPTURE_DEPS, c_capture_deps) \
	F(R_COND_HANDLE, c_cond_handle) \
	F(R_CHILD_GRAPH, c_child_graph) \
	F(R_UOBJ_CREATE, c_uobj) \
	F(R_UOBJ_RELEASE, c_uobj) \
	F(R_GRAPH_UOBJ, c_graph_uobj) \
	F(R_KNODE_ATTR, c_knode_attr) \
	F(R_DEV_RESOURCE, c_dev_resource) \
	F(R_SM_SPLIT, c_sm_split) \
	F(R_RES_DESC, c_res_desc) \
	F(R_GREEN_CREATE, c_green_create) \
	F(R_GREEN_DESTROY, c_green_destroy) \
	F(R_GREEN_STREAM, c_green_stream)

static const backend_fn host_fn[RPC_NCALLS] = { HOST_CALLS(F) };

static int
host_call(struct rcall *c)
{
	int rc;

	if (hgraph_intercept(c, &rc))
		return rc;
	rc = check_dispatch(c, host_fn);
	if (host_flushes(c))
		host_out_flush(c->cl);
	return rc;
}

/*
 * ---- migration (migrate.h) -----------------------------------------------
 * Everything runs to completion here, so every call is a synchronization
 * point.  The state, in gleam-protocol(5)'s order: the memory this backend
 * placed (cuMemAlloc's and globals'), contexts (with their allocations and
 * pools), modules and libraries (with their images, kernels' attributes
 * and globals), functions and kernels, streams, events, and the device
 * output not yet flushed.  What is not moved (graphs, JIT links, VMM, a
 * stream being captured) makes the save fail, and the client stays.
 */
#define MIG_MAGIC	0x534d4c47u	/* "GLMS" */
#define MIG_VERSION	1
#define MIG_MAX		(1u << 20)	/* objects of a kind, allocations */

/* The requested size of the range at base (the client's map). */
static uint64_t
host_mig_size(const struct rclient *cl, uint64_t base)
{
	size_t i;

	for (i = 0; i < cl->nranges; i++)
		if (cl->ranges[i].base == base)
			return cl->ranges[i].size;
	return 0;
}

static int
host_mig_save(struct rclient *cl, struct pw *w, char *why, size_t whylen)
{
	struct hclient *hc = cl->be;
	size_t i, j, n;
	uint64_t id, base;
	void *v;
	struct robj *o;
	struct hglob *g;
	struct hmod *m;
	struct hevent *e;
	int kind, k;
	static const int order[] = { RK_CTX, RK_MODULE, RK_FUNC, RK_STREAM,
	    RK_EVENT };

	if (!vmm_empty(cl)) {
		snprintf(why, whylen, "it holds VMM memory (not moved yet)");
		return -1;
	}
	for (i = 0; htab_next(&cl->objs, &i, &id, &v);) {
		o = v;
		if (o->kind == RK_GRAPH || o->kind == RK_GEXEC ||
		    o->kind == RK_LINK || o->kind == RK_ARRAY ||
		    o->kind == RK_MIPMAP || o->kind == RK_TEX ||
		    o->kind == RK_SURF || o->kind == RK_TEXREF ||
		    o->kind == RK_SURFREF) {
			snprintf(why, whylen, "it holds %s (not moved yet)",
			    o->kind == RK_LINK ? "a JIT link" :
			    o->kind == RK_GRAPH || o->kind == RK_GEXEC ?
			    "graphs" : "arrays or texture objects");
			return -1;
		}
		if (o->kind == RK_RESDESC || (o->kind == RK_CTX &&
		    o->green != NULL)) {
			snprintf(why, whylen, "it holds green contexts (not "
			    "moved yet)");
			return -1;
		}
		if ((o->kind == RK_STREAM && o->cap != NULL) ||
		    (o->kind == RK_EVENT && ((struct hevent *)o->h)->capgraph)) {
			snprintf(why, whylen, "a stream capture is open");
			return -1;
		}
		if ((o->kind == RK_MODULE || o->kind == RK_LIBRARY) &&
		    o->img == NULL) {
			snprintf(why, whylen, "a module's image was not kept "
			    "(loaded before migration was configured)");
			return -1;
		}
	}
	pw_u32(w, MIG_MAGIC);
	pw_u32(w, MIG_VERSION);
	/* The memory placed here: every context's, every global. */
	n = 0;
	for (i = 0; htab_next(&cl->objs, &i, &id, &v);) {
		o = v;
		if (o->kind == RK_CTX && o->h != NULL)
			n += ((struct hctx *)o->h)->allocs.n;
		if (o->kind == RK_MODULE || o->kind == RK_LIBRARY)
			for (g = ((struct hmod *)o->h)->globals; g != NULL;
			    g = g->next)
				n++;
	}
	pw_u32(w, (uint32_t)n);
	for (i = 0; htab_next(&cl->objs, &i, &id, &v);) {
		o = v;
		if (o->kind == RK_CTX && o->h != NULL)
			for (j = 0; htab_next(&((struct hctx *)o->h)->allocs,
			    &j, &base, &v);) {
				pw_u64(w, base);
				pw_u64(w, host_mig_size(cl, base));
			}
		if (o->kind == RK_MODULE || o->kind == RK_LIBRARY)
			for (g = ((struct hmod *)o->h)->globals; g != NULL;
			    g = g->next) {
				pw_u64(w, g->base);
				pw_u64(w, g->size);
			}
	}
	for (k = 0; k < (int)(sizeof order / sizeof order[0]); k++) {
		kind = order[k];
		n = 0;
		for (i = 0; htab_next(&cl->objs, &i, &id, &v);) {
			o = v;
			if (o->kind == kind || (kind == RK_MODULE &&
			    o->kind == RK_LIBRARY) || (kind == RK_FUNC &&
			    o->kind == RK_KERNEL))
				n++;
		}
		pw_u32(w, (uint32_t)n);
		for (i = 0; htab_next(&cl->objs, &i, &id, &v);) {
			o = v;
			if (!(o->kind == kind || (kind == RK_MODULE &&
			    o->kind == RK_LIBRARY) || (kind == RK_FUNC &&
			    o->kind == RK_KERNEL)))
				continue;
			pw_u64(w, id);
			switch (kind) {
			case RK_CTX:
				pw_u32(w, (uint32_t)o->device);
				pw_u32(w, (uint32_t)o->refs);
				pw_u8(w, o->h != NULL);
				if (o->h == NULL)
					break;
				pw_u32(w, (uint32_t)((struct hctx *)o->h)->fault);
				pw_u32(w, (uint32_t)((struct hctx *)o->h)->
				    allocs.n);
				for (j = 0; htab_next(&((struct hctx *)o->h)->
				    allocs, &j, &base, &v);)
					pw_u64(w, base);
				pool_save(o, w);
				break;
			case RK_MODULE:
				m = o->h;
				pw_u16(w, (uint16_t)o->kind);
				pw_u64(w, o->ctx != NULL ? o->ctx->id : 0);
				pw_u32(w, (uint32_t)o->imglen);
				pw_bytes(w, o->img, o->imglen);
				pw_u32(w, (uint32_t)m->nf);
				for (j = 0; j < m->nf; j++) {
					pw_str(w, m->f[j].k->name);
					pw_u32(w, (uint32_t)m->f[j].maxdyn);
					pw_u32(w, (uint32_t)m->f[j].carveout);
				}
				for (n = 0, g = m->globals; g != NULL; g = g->next)
					n++;
				pw_u32(w, (uint32_t)n);
				for (g = m->globals; g != NULL; g = g->next) {
					pw_str(w, g->name);
					pw_u64(w, g->ctx != NULL ?
					    ((const struct robj *)g->ctx)->id : 0);
					pw_u64(w, g->base);
				}
				break;
			case RK_FUNC:
				pw_u16(w, (uint16_t)o->kind);
				pw_u64(w, o->parent->id);
				pw_str(w, ((struct hfunc *)o->h)->k->name);
				break;
			case RK_STREAM:
				pw_u64(w, o->ctx->id);
				break;
			case RK_EVENT:
				e = o->h;
				pw_u64(w, o->ctx->id);
				pw_u32(w, e->flags);
				pw_u8(w, (uint8_t)e->recorded);
				pw_u64(w, (uint64_t)e->t.tv_sec);
				pw_u32(w, (uint32_t)e->t.tv_nsec);
				break;
			}
		}
	}
	pw_u32(w, (uint32_t)hc->out.len);
	if (hc->out.len > 0)
		pw_bytes(w, hc->out.p, hc->out.len);
	if (w->bad) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

/* An allocation to be claimed by the context or global that had it. */
struct hplace {
	uint64_t	 base, size;
	struct halloc	*a;
};

static int
hplace_cmp(const void *a, const void *b)
{
	const struct hplace *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

/*
 * Maps the pages of every allocation in pl (sorted, not overlapping) at
 * their addresses, a run of pages for those that share pages; -1 if an
 * address is taken here.
 */
static int
host_mig_place(struct hplace *pl, size_t n, char *why, size_t whylen)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), lo, hi, sz;
	struct hrun *run = NULL;
	size_t i, j;
	void *p;

	for (i = 0; i < n; i = j) {
		lo = pl[i].base & ~(pg - 1);
		hi = (pl[i].base + pl[i].size + pg - 1) & ~(pg - 1);
		for (j = i + 1; j < n && pl[j].base < hi; j++) {
			uint64_t e = (pl[j].base + pl[j].size + pg - 1) &
			    ~(pg - 1);
			if (e > hi)
				hi = e;
		}
		if ((run = calloc(1, sizeof *run)) == NULL)
			goto oom;
		/* Populated: its contents come next, every page. */
		p = mmap((void *)(uintptr_t)lo, hi - lo, PROT_READ |
		    PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE |
		    MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED || (uintptr_t)p != lo) {
			if (p != MAP_FAILED)
				munmap(p, hi - lo);
			free(run);
			snprintf(why, whylen, "device addresses 0x%llx to "
			    "0x%llx are taken here", (unsigned long long)lo,
			    (unsigned long long)hi);
			return -1;
		}
		run->base = lo;
		run->len = hi - lo;
		for (; i < j; i++) {
			sz = (pl[i].size + HOST_ALIGN - 1) &
			    ~(uint64_t)(HOST_ALIGN - 1);
			if (host_reserve(sz) == -1)
				goto full;
			if ((pl[i].a = calloc(1, sizeof *pl[i].a)) == NULL) {
				host_unreserve(sz);
				goto full;
			}
			pl[i].a->size = sz;
			pl[i].a->run = run;
			run->refs++;
		}
	}
	return 0;
full:
	/* The allocations placed free the run with the last of them. */
	if (run->refs == 0) {
		munmap((void *)(uintptr_t)run->base, run->len);
		free(run);
	}
oom:
	snprintf(why, whylen, "out of device memory");
	return -1;
}

/* The allocation at base, claimed once; NULL if none or taken. */
static struct halloc *
hplace_take(struct hplace *pl, size_t n, uint64_t base, uint64_t *size)
{
	struct hplace key = { base, 0, NULL }, *f;
	struct halloc *a;

	f = bsearch(&key, pl, n, sizeof *pl, hplace_cmp);
	if (f == NULL || f->a == NULL)
		return NULL;
	a = f->a;
	f->a = NULL;
	*size = f->size;
	return a;
}

/* The object id names, of that kind; NULL otherwise (or id 0). */
static struct robj *
host_mig_obj(struct rclient *cl, uint64_t id, int kind)
{
	return id == 0 ? NULL : robj_get(cl, id, kind);
}

static int
host_mig_load(struct rclient *cl, struct pr *r, char *why, size_t whylen)
{
	struct hclient *hc = cl->be;
	struct hplace *pl = NULL;
	struct robj *o, *x;
	struct hctx *hx;
	struct hmod *m;
	struct hglob *g;
	struct hevent *e;
	struct halloc *a;
	char name[RPC_STRING_MAX + 1];
	const void *img;
	uint64_t id, cid, base, size, pid;
	uint32_t n, nn, i, j, len;
	size_t np = 0, f;
	uint16_t kind;
	int rc = -1;

	snprintf(why, whylen, "malformed state");
	if (pr_u32(r) != MIG_MAGIC || pr_u32(r) != MIG_VERSION || r->bad) {
		snprintf(why, whylen, "not a state this server reads");
		return -1;
	}
	/* The memory: placed first, claimed by what had it. */
	n = pr_u32(r);
	if (r->bad || n > MIG_MAX || n > (r->len - r->off) / 16)
		return -1;
	if ((pl = calloc(n ? n : 1, sizeof *pl)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		pl[i].base = pr_u64(r);
		pl[i].size = pr_u64(r);
		if (pl[i].base == 0 || pl[i].size == 0 ||
		    pl[i].size > host.budget ||
		    pl[i].base > UINT64_MAX - host.budget - 4096)
			goto out;
	}
	np = n;
	qsort(pl, np, sizeof *pl, hplace_cmp);
	for (f = 1; f < np; f++)
		if (pl[f].base < pl[f - 1].base + pl[f - 1].size)
			goto out;	/* overlapping */
	if (host_mig_place(pl, np, why, whylen) == -1)
		goto out;
	snprintf(why, whylen, "malformed state");
	/* Contexts. */
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		if (i >= MIG_MAX || (o = robj_new(cl, id, RK_CTX, NULL)) ==
		    NULL)
			goto out;
		o->device = (int)pr_u32(r);
		o->refs = (int)pr_u32(r);
		if (o->device != 0 || o->refs < 0)
			goto out;
		if (pr_u8(r) == 0)
			continue;
		if ((o->h = hx = hctx_new()) == NULL)
			goto out;
		hx->fault = (int)pr_u32(r);
		nn = pr_u32(r);
		for (j = 0; j < nn && !r->bad; j++) {
			base = pr_u64(r);
			if ((a = hplace_take(pl, np, base, &size)) == NULL)
				goto out;
			if (htab_put(&hx->allocs, base, a) == -1) {
				host_free(a);
				goto out;
			}
			if (rmem_add(cl, base, size, 0, o) == -1)
				goto out;
		}
		if (r->bad || pool_load(cl, o, r, &host_pool, why,
		    whylen) == -1)
			goto out;
		snprintf(why, whylen, "malformed state");
	}
	/* Modules and libraries. */
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		kind = pr_u16(r);
		cid = pr_u64(r);
		len = pr_u32(r);
		img = pr_take(r, len);
		if (r->bad || i >= MIG_MAX || (kind != RK_MODULE &&
		    kind != RK_LIBRARY))
			goto out;
		x = host_mig_obj(cl, cid, RK_CTX);
		if ((kind == RK_MODULE) != (x != NULL))
			goto out;	/* a module has a context, a library none */
		if ((m = hmod_new(img, len)) == NULL)
			goto out;
		if ((o = robj_new(cl, id, kind, m)) == NULL) {
			hmod_free(cl, m);
			goto out;
		}
		o->ctx = x;
		if ((o->img = malloc(len ? len : 1)) == NULL)
			goto out;
		memcpy(o->img, img, len);
		o->imglen = len;
		nn = pr_u32(r);
		for (j = 0; j < nn && !r->bad; j++) {
			pr_str(r, name, RPC_STRING_MAX);
			int maxdyn = (int)pr_u32(r), carve = (int)pr_u32(r);

			for (f = 0; f < m->nf; f++)
				if (strcmp(m->f[f].k->name, name) == 0) {
					m->f[f].maxdyn = maxdyn;
					m->f[f].carveout = carve;
				}
		}
		nn = pr_u32(r);
		for (j = 0; j < nn && !r->bad; j++) {
			const struct hsym *d = NULL;

			pr_str(r, name, RPC_STRING_MAX);
			cid = pr_u64(r);
			base = pr_u64(r);
			if (r->bad || (x = host_mig_obj(cl, cid, RK_CTX)) ==
			    NULL || (kind == RK_MODULE && x != o->ctx))
				goto out;
			for (f = 0; f < m->nsym && d == NULL; f++)
				if (strcmp(m->sym[f].name, name) == 0)
					d = &m->sym[f];
			for (f = 0; d == NULL && f < host.nglobals; f++)
				if (strcmp(host.globals[f].name, name) == 0)
					break;
			if (d == NULL && f == host.nglobals)
				goto out;	/* no such global */
			if ((a = hplace_take(pl, np, base, &size)) == NULL)
				goto out;
			if ((g = calloc(1, sizeof *g)) == NULL) {
				host_free(a);
				goto out;
			}
			g->name = d != NULL ? d->name : host.globals[f].name;
			g->size = d != NULL ? d->size : host.globals[f].size;
			g->ctx = x;
			g->a = a;
			g->base = base;
			g->next = m->globals;
			m->globals = g;
			if (size != g->size || rmem_add(cl, base, size, 1, g) ==
			    -1)
				goto out;
		}
	}
	/* Functions and kernels. */
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		kind = pr_u16(r);
		pid = pr_u64(r);
		pr_str(r, name, RPC_STRING_MAX);
		if (r->bad || (kind != RK_FUNC && kind != RK_KERNEL) ||
		    (x = host_mig_obj(cl, pid, kind == RK_FUNC ? RK_MODULE :
		    RK_LIBRARY)) == NULL)
			goto out;
		m = x->h;
		for (f = 0; f < m->nf; f++)
			if (strcmp(m->f[f].k->name, name) == 0)
				break;
		if (f == m->nf) {
			snprintf(why, whylen, "kernel %s is not here", name);
			goto out;
		}
		/* A server without host kernels runs none of the client's. */
		if (m->f[f].k->fn == NULL && host.nk == 0) {
			snprintf(why, whylen, "kernel %s has no host "
			    "implementation here (no host_kernels)", name);
			goto out;
		}
		if ((o = robj_new(cl, id, kind, &m->f[f])) == NULL)
			goto out;
		o->parent = x;
		o->ctx = x->ctx;
	}
	/* Streams. */
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		cid = pr_u64(r);
		if (r->bad || (x = host_mig_obj(cl, cid, RK_CTX)) == NULL ||
		    (o = robj_new(cl, id, RK_STREAM, x)) == NULL)
			goto out;
		o->ctx = x;
	}
	/* Events. */
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		cid = pr_u64(r);
		if (r->bad || (x = host_mig_obj(cl, cid, RK_CTX)) == NULL ||
		    (e = calloc(1, sizeof *e)) == NULL)
			goto out;
		e->flags = pr_u32(r);
		e->recorded = pr_u8(r) != 0;
		e->t.tv_sec = (time_t)pr_u64(r);
		e->t.tv_nsec = (long)pr_u32(r);
		if (r->bad || e->t.tv_nsec >= 1000000000 ||
		    (o = robj_new(cl, id, RK_EVENT, e)) == NULL) {
			free(e);
			goto out;
		}
		o->ctx = x;
	}
	/* The device's output not yet flushed. */
	len = pr_u32(r);
	img = pr_take(r, len);
	if (r->bad || len > HOST_OUTMAX || pr_done(r) == -1)
		goto out;
	if (len > 0)
		pw_bytes(&hc->out, img, len);
	for (f = 0; f < np; f++)
		if (pl[f].a != NULL) {
			snprintf(why, whylen, "memory at 0x%llx belongs to "
			    "nothing", (unsigned long long)pl[f].base);
			goto out;
		}
	rc = hc->out.bad ? -1 : 0;
out:
	for (f = 0; f < np; f++)
		if (pl[f].a != NULL)
			host_free(pl[f].a);
	free(pl);
	return rc;
}

/* Device memory is this process's: sent from where it lies. */
static const void *
host_mig_read(struct rclient *cl, uint64_t addr, void *buf, size_t n)
{
	return (const void *)(uintptr_t)addr;
}

static int
host_mig_write(struct rclient *cl, uint64_t addr, const void *p, size_t n)
{
	memcpy((void *)(uintptr_t)addr, p, n);
	return 0;
}

#define G(t, fn) [t - R_OPEN] = host_call,

const struct backend backend_host = {
	.name = "host",
	.gpu_export = host_gpu_export,
	.gpu_import = host_gpu_import,
	.ctx_device = host_ctx_device,
	.init = host_init,
	.describe = host_describe,
	.client_new = host_client_new,
	.client_free = host_client_free,
	.mig_save = host_mig_save,
	.mig_load = host_mig_load,
	.mig_read = host_mig_read,
	.mig_write = host_mig_write,
	.call = { HOST_CALLS(G) },
};
#undef F
#undef G
