/*
 * Device allocations and the registry of memory the program holds.
 * Device allocations live on the server (their addresses are the
 * server's); pinned host memory is ordinary memory here, since nothing on
 * this machine can DMA into it.  The registry answers unified-address
 * questions (cuMemcpy's direction, pointer attributes) with no round trip.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "log.h"
#include "mapped.h"
#include "pool.h"

/*
 * Device bytes that host-to-device copies have written, per allocation,
 * as a few ranges (client.h's struct alloc): ranges closer than WR_GAP
 * merge (an allocator's padding between tensors), and when WR_MAX are
 * held the closest two do.
 */
#define WR_GAP	(64u << 10)

static pthread_mutex_t	 mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc	*allocs;	/* sorted by base */
static size_t		 nallocs, acap;

/* Index of the last allocation with base <= p, or -1. */
static long
mem_find(uint64_t p)
{
	size_t lo = 0, hi = nallocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

int
mem_add(uint64_t base, uint64_t size, struct gctx *ctx, int host,
    unsigned flags)
{
	struct alloc *na;
	long i;

	pthread_mutex_lock(&mem_lock);
	if (nallocs == acap) {
		size_t cap = acap ? acap * 2 : 64;
		if ((na = realloc(allocs, cap * sizeof *na)) == NULL) {
			pthread_mutex_unlock(&mem_lock);
			return -1;
		}
		allocs = na;
		acap = cap;
	}
	i = mem_find(base) + 1;
	memmove(&allocs[i + 1], &allocs[i], (nallocs - (size_t)i) *
	    sizeof *allocs);
	allocs[i] = (struct alloc){ base, size, ctx, host, flags, 0, {{0, 0}} };
	nallocs++;
	pthread_mutex_unlock(&mem_lock);
	log_trace("memory: 0x%llx+%llu: %s (flags 0x%x)",
	    (unsigned long long)base, (unsigned long long)size,
	    host == 0 ? "device" : host == 1 ? "host, this library's" :
	    "host, registered", flags);
	return 0;
}

/* Removes the allocation starting at base of that kind; -1 if none. */
int
mem_del(uint64_t base, int host)
{
	long i;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(base);
	if (i < 0 || allocs[i].base != base || allocs[i].host != host) {
		pthread_mutex_unlock(&mem_lock);
		return -1;
	}
	memmove(&allocs[i], &allocs[i + 1], (nallocs - (size_t)i - 1) *
	    sizeof *allocs);
	nallocs--;
	pthread_mutex_unlock(&mem_lock);
	log_trace("memory: 0x%llx: gone", (unsigned long long)base);
	return 0;
}

/* The allocation holding p, copied out; 0 if found. */
int
mem_lookup(uint64_t p, struct alloc *out)
{
	long i;
	int rc = -1;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(p);
	if (i >= 0 && p - allocs[i].base < (allocs[i].size ?
	    allocs[i].size : 1)) {
		*out = allocs[i];
		rc = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

/*
 * Did a host-to-device copy put bytes in [p, p + n) before?  Records this
 * one either way.  Weights are written once, into memory no copy wrote;
 * a program's inputs overwrite the buffer of the step before: the weight
 * cache takes only the first kind (a name looked up, stored and missed for
 * bytes that never recur costs round trips).  0 for memory not known.
 */
int
mem_rewritten(CUdeviceptr p, size_t n)
{
	struct alloc *a;
	struct wrange r;
	long i;
	int j, k, hit = 0;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(p);
	if (i < 0 || (a = &allocs[i])->host || p - a->base >= a->size ||
	    n > a->size - (p - a->base)) {
		pthread_mutex_unlock(&mem_lock);
		return 0;
	}
	r.lo = p - a->base;
	r.hi = r.lo + n;
	for (j = 0; j < a->nw; j++)
		if (r.lo < a->w[j].hi && a->w[j].lo < r.hi)
			hit = 1;
	/* Merge every range within WR_GAP of the new one into it. */
	for (j = k = 0; j < a->nw; j++) {
		if (a->w[j].lo <= r.hi + WR_GAP && r.lo <= a->w[j].hi + WR_GAP) {
			if (a->w[j].lo < r.lo)
				r.lo = a->w[j].lo;
			if (a->w[j].hi > r.hi)
				r.hi = a->w[j].hi;
		} else
			a->w[k++] = a->w[j];
	}
	a->nw = k;
	for (j = a->nw; j > 0 && a->w[j - 1].lo > r.lo; j--)
		a->w[j] = a->w[j - 1];
	a->w[j] = r;
	if (++a->nw == WR_MAX) {
		/* Full: the two closest neighbours become one. */
		int best = 0;

		for (j = 1; j + 1 < a->nw; j++)
			if (a->w[j + 1].lo - a->w[j].hi <
			    a->w[best + 1].lo - a->w[best].hi)
				best = j;
		a->w[best].hi = a->w[best + 1].hi;
		memmove(&a->w[best + 1], &a->w[best + 2],
		    (size_t)(a->nw - best - 2) * sizeof a->w[0]);
		a->nw--;
	}
	pthread_mutex_unlock(&mem_lock);
	return hit;
}

int
mem_is_device(CUdeviceptr p, size_t *base, size_t *size)
{
	struct alloc a;

	if (mem_lookup(p, &a) == -1 || a.host)
		return 0;
	if (base != NULL)
		*base = a.base;
	if (size != NULL)
		*size = a.size;
	return 1;
}

CUresult
cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	struct rpc_val in[2], out[1];
	CUdeviceptr pa;
	struct gctx *c;
	void *keep;
	CUresult rc;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = capture_gate()) != CUDA_SUCCESS)
		return rc;
	if (pool_alloc(c, size, &pa, &rc)) {
		if (rc != CUDA_SUCCESS)
			return rc;
		if (mem_add(pa, size, c, 0, 0) == -1)
			return CUDA_ERROR_OUT_OF_MEMORY;
		*dptr = pa;
		return CUDA_SUCCESS;
	}
	in[0].u = gobj_id(c);
	in[1].u = size;
	rc = remote_call(R_MEM_ALLOC, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	*dptr = out[0].u;
	if (mem_add(out[0].u, size, c, 0, 0) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
    size_t height, unsigned int elem)
{
	struct rpc_val in[4], out[2];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if (dptr == NULL || pitch == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = capture_gate()) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = width;
	in[2].u = height;
	in[3].u = elem;
	rc = remote_call(R_MEM_ALLOC_PITCH, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	*dptr = out[0].u;
	*pitch = (size_t)out[1].u;
	mem_add(out[0].u, out[1].u * height, c, 0, 0);
	return CUDA_SUCCESS;
}

CUresult
cuMemFree_v2(CUdeviceptr p)
{
	struct gctx *c;
	struct alloc a;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (p == 0)
		return CUDA_SUCCESS;
	if ((rc = capture_gate()) != CUDA_SUCCESS)
		return rc;
	/* The allocation's own context, which need not be current. */
	if (mem_lookup(p, &a) == -1 || a.host || a.base != p ||
	    (a.flags & (MEM_F_VMM | MEM_F_GLOBAL)))
		return CUDA_ERROR_INVALID_VALUE;
	c = a.ctx;
	if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if ((a.flags & MEM_F_MANAGED) && mapped_managed_free(p) == 0)
		return CUDA_SUCCESS;
	if ((rc = pool_free(c, p, a.size)) == CUDA_SUCCESS)
		mem_del(p, 0);
	return rc;
}

CUresult
cuMemGetInfo_v2(size_t *freep, size_t *totalp)
{
	struct rpc_val in[1], out[2];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	rc = remote_call(R_MEM_GET_INFO, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* The pool's stock is this context's to allocate. */
	if (freep != NULL)
		*freep = (size_t)(out[0].u + pool_stock(c));
	if (totalp != NULL)
		*totalp = (size_t)out[1].u;
	return CUDA_SUCCESS;
}

CUresult
cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	struct gctx *c;
	struct alloc a;
	CUresult rc;

	/* Nothing asked: done, before anything else (the driver answers so
	 * even before cuInit). */
	if (base == NULL && size == NULL)
		return CUDA_SUCCESS;
	/* The driver asks for a context here, though the answer needs none. */
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (mem_lookup(p, &a) == -1 || a.host)
		return CUDA_ERROR_NOT_FOUND;
	if (base != NULL)
		*base = a.base;
	if (size != NULL)
		*size = a.size;
	return CUDA_SUCCESS;
}

/* ---- pointer attributes ------------------------------------------------ */

/*
 * SYNC_MEMOPS, the one attribute a program sets: kept for
 * cuPointerGetAttribute.  A synchronous copy here returns once the
 * server has done it, so unsetting it loosens nothing that could be seen.
 */
CUresult
cuPointerSetAttribute(const void *value, CUpointer_attribute attr,
    CUdeviceptr p)
{
	CUresult rc;
	long i;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (value == NULL || attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	i = mem_find(p);
	if (i < 0 || allocs[i].host || p - allocs[i].base >= (allocs[i].size ?
	    allocs[i].size : 1)) {
		pthread_mutex_unlock(&mem_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	allocs[i].flags &= ~(MEM_F_NOSYNC | MEM_F_SYNCOPS);
	allocs[i].flags |= *(const unsigned *)value ? MEM_F_SYNCOPS :
	    MEM_F_NOSYNC;
	pthread_mutex_unlock(&mem_lock);
	return CUDA_SUCCESS;
}

/*
 * What only the driver knows of memory on the server: the size and base of
 * its mapping (the pieces it maps memory in, several allocations to one),
 * a VMM range's reservation.  Host memory here answers for itself: one
 * mapping of 2 MiB pieces, as the driver maps page-locked memory.
 */
static CUresult
ptr_attr_server(void *data, CUpointer_attribute attr, CUdeviceptr p,
    const struct alloc *a, int mapped, CUdeviceptr dp)
{
	struct rpc_val in[3], out[1];
	struct gctx *c = a->ctx;
	void *keep;
	CUresult rc;

	if (a->host && !mapped) {
		uint64_t sz = (a->size + (2u << 20) - 1) &
		    ~(uint64_t)((2u << 20) - 1);

		if (attr == CU_POINTER_ATTRIBUTE_MAPPING_SIZE)
			*(size_t *)data = sz;
		else
			*(CUdeviceptr *)data = a->base;
		return CUDA_SUCCESS;
	}
	if (c == NULL && (rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = (uint64_t)attr;
	in[2].u = mapped ? dp : p;
	rc = remote_call(R_PTR_ATTR, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (attr == CU_POINTER_ATTRIBUTE_MAPPING_SIZE ||
	    attr == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
		*(size_t *)data = (size_t)out[0].u;
	else
		*(CUdeviceptr *)data = (CUdeviceptr)out[0].u;
	return CUDA_SUCCESS;
}

static CUresult
ptr_attr(void *data, CUpointer_attribute attr, CUdeviceptr p, int strict)
{
	struct alloc a;
	CUdeviceptr hp = 0, dp = 0;
	int mapped = mapped_describe(p, &a, &hp, &dp);
	int found = mapped || mem_lookup(p, &a) == 0;

	/* cuMemAlloc's own (or a piece of the client's slab of it), as the
	 * driver tells it from the rest (the H100's answers, ptrattr.cu):
	 * not a pool's, a mapping's, managed memory or a module's global. */
	int plain = found && !a.host && !(a.flags & (MEM_F_VMM |
	    MEM_F_MANAGED | MEM_F_GLOBAL)) && mempool_of(a.base) == NULL;

	if (!found && strict) {
		log_debug("cuPointerGetAttribute (attribute %d, 0x%llx in "
		    "no allocation this library knows): %d", (int)attr,
		    (unsigned long long)p, CUDA_ERROR_INVALID_VALUE);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		/* A pool's or a mapping's memory is no context's. */
		*(CUcontext *)data = found && !(a.flags & MEM_F_VMM) &&
		    (a.host || mempool_of(a.base) == NULL) ?
		    (CUcontext)a.ctx : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = !found ? 0 : a.host ? CU_MEMORYTYPE_HOST :
		    CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (mapped) {
			*(CUdeviceptr *)data = dp;
			break;
		}
		if (found && a.host)
			return CUDA_ERROR_NOT_SUPPORTED;	/* not mapped */
		*(CUdeviceptr *)data = found ? p : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (mapped) {
			*(void **)data = (void *)(uintptr_t)hp;
			break;
		}
		/* Managed memory's host side is at its address. */
		if (found && !a.host && !(a.flags & MEM_F_MANAGED))
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = found ? (void *)p : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = found && !a.host &&
		    (a.flags & MEM_F_MANAGED) != 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		/* Pinned host memory too: unified addressing maps it. */
		*(int *)data = found;
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		*(int *)data = plain;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		/* cuMemCreate's handle types (none by cuMemAlloc). */
		*(unsigned long long *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = found && a.ctx != NULL ? a.ctx->device : -2;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		/* A VMM range's is its reservation, which the server knows. */
		if (found && (a.flags & MEM_F_VMM))
			return ptr_attr_server(data, attr, p, &a, 0, 0);
		if (attr == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
			*(size_t *)data = found ? a.size : 0;
		else
			*(CUdeviceptr *)data = found ? a.base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		if (!found)
			return CUDA_ERROR_INVALID_VALUE;
		return ptr_attr_server(data, attr, p, &a, mapped, dp);
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = found ? a.base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		/* Off unless set, but for managed memory. */
		*(int *)data = found && ((a.flags & MEM_F_SYNCOPS) ||
		    ((a.flags & MEM_F_MANAGED) && !(a.flags & MEM_F_NOSYNC)));
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		/* Documented: the pool it came from, else NULL. */
		*(CUmemoryPool *)data = found && !a.host ?
		    mempool_of(a.base) : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		/* Documented: unique in the process per physical allocation
		 * (while it lives): its start here. */
		*(unsigned long long *)data = found ? a.base : 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult
cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
	if (data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return ptr_attr(data, attr, p, 1);
}

CUresult
cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs,
    void **data, CUdeviceptr p)
{
	unsigned i;

	if (attrs == NULL || data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		if (data[i] == NULL)
			continue;
		/* Unknown memory reads as unregistered host memory. */
		if (ptr_attr(data[i], attrs[i], p, 0) != CUDA_SUCCESS &&
		    attrs[i] != CU_POINTER_ATTRIBUTE_DEVICE_POINTER &&
		    attrs[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * cuMemGetAllocationGranularity: JAX and ggml ask before each reservation.
 * The answer depends only on the properties and the option, so each is
 * asked once and kept (GRAN_MAX of them; past that every one asks).
 */
#define GRAN_MAX	32
#define GRAN_KEY	8		/* the request's fields */

static pthread_mutex_t	 gran_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint64_t	 key[GRAN_KEY];
	uint64_t	 bytes;
} grans[GRAN_MAX];
static int		 ngrans;

CUresult
cuMemGetAllocationGranularity(size_t *granularity,
    const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option)
{
	struct rpc_val in[GRAN_KEY], out[1];
	void *keep;
	CUresult rc;
	int i, j;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (granularity == NULL || prop == NULL ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	    option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	memset(in, 0, sizeof in);
	in[0].u = (uint32_t)option;
	in[1].u = (uint32_t)prop->type;
	in[2].u = (uint32_t)prop->location.type;
	in[3].u = (uint64_t)(int64_t)prop->location.id;
	in[4].u = (uint32_t)prop->requestedHandleTypes;
	in[5].u = prop->allocFlags.compressionType;
	in[6].u = prop->allocFlags.gpuDirectRDMACapable;
	in[7].u = prop->allocFlags.usage;
	pthread_mutex_lock(&gran_lock);
	for (i = 0; i < ngrans; i++) {
		for (j = 0; j < GRAN_KEY && grans[i].key[j] == in[j].u; j++)
			;
		if (j == GRAN_KEY) {
			*granularity = (size_t)grans[i].bytes;
			pthread_mutex_unlock(&gran_lock);
			return CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&gran_lock);
	rc = remote_call(R_MEM_GRANULARITY, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	*granularity = (size_t)out[0].u;
	pthread_mutex_lock(&gran_lock);
	if (ngrans < GRAN_MAX) {
		for (j = 0; j < GRAN_KEY; j++)
			grans[ngrans].key[j] = in[j].u;
		grans[ngrans++].bytes = out[0].u;
	}
	pthread_mutex_unlock(&gran_lock);
	return CUDA_SUCCESS;
}
