/*
 * The stream-ordered allocator and its memory pools, over ordinary
 * allocations: memory from cuMemAllocAsync or cuMemAllocFromPoolAsync is
 * a cuMemAlloc (one-way from the allocation pool, pool.c, in most
 * cases), usable at once, so also in stream order; cuMemFreeAsync goes
 * in order with the stream's other work, since every call reaches the
 * server in the order it was made.  A CUmemoryPool is a struct gpool
 * here: each device's default pool, and those cuMemPoolCreate made.  A
 * pool's attributes and access are kept here; its memory figures count
 * what its allocations hold (reserved memory is what is in use, or was
 * since the last trim, up to the release threshold), not the driver's
 * granules, so they are near but not equal to a GPU's.  Pools are never
 * shared with another process (the memory is on another machine).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"
#include "log.h"

#define POOL_DEVS	64
#define POOL_MAGIC	0x676c6d706f6f6cull	/* "glmpool" */

struct gpool {
	uint64_t	 magic;
	int		 device;
	int		 made;		/* by cuMemPoolCreate */
	int		 dead;		/* destroyed, allocations out */
	CUmemPoolProps	 props;
	uint64_t	 threshold;
	int		 reuse[3];
	uint64_t	 used, used_high, reserved, reserved_high;
	unsigned char	 access[POOL_DEVS];	/* CUmemAccess_flags */
	struct gpool	*next;		/* made ones */
};

/* An allocation of a pool's, for its figures when it is freed. */
struct gpalloc {
	CUdeviceptr	 p;
	size_t		 size;
	struct gpool	*pool;
};

static pthread_mutex_t	 pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpool	 defaults[POOL_DEVS];
static struct gpool	*current[POOL_DEVS];	/* NULL: the default */
static struct gpool	*made;
static struct gpalloc	*pallocs;
static size_t		 npallocs, pacap;

static void
pool_setup(struct gpool *g, int dev)
{
	g->magic = POOL_MAGIC;
	g->device = dev;
	g->reuse[0] = g->reuse[1] = g->reuse[2] = 1;
	g->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	g->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	g->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	g->props.location.id = dev;
}

/* The default pool of dev, or NULL; with pool_lock held. */
static struct gpool *
pool_default(CUdevice dev)
{
	if (dev < 0 || dev >= POOL_DEVS || client_device(dev) == NULL)
		return NULL;
	if (defaults[dev].magic != POOL_MAGIC)
		pool_setup(&defaults[dev], dev);
	return &defaults[dev];
}

/* The pool p names, or NULL; with pool_lock held. */
static struct gpool *
pool_check(CUmemoryPool p)
{
	struct gpool *g = (struct gpool *)p, *m;

	if (g >= defaults && g < defaults + POOL_DEVS)
		return g->magic == POOL_MAGIC ? g : NULL;
	for (m = made; m != NULL; m = m->next)
		if (m == g && !m->dead)
			return m;
	return NULL;
}

/* Frees a destroyed pool once nothing of it is out; with pool_lock held. */
static void
pool_reap(struct gpool *g)
{
	struct gpool **gp;

	if (!g->dead || g->used > 0)
		return;
	for (gp = &made; *gp != NULL; gp = &(*gp)->next)
		if (*gp == g) {
			*gp = g->next;
			break;
		}
	g->magic = 0;
	free(g);
}

CUresult
cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev)
{
	struct gpool *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	g = pool_default(dev);
	pthread_mutex_unlock(&pool_lock);
	if (g == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = (CUmemoryPool)g;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev)
{
	struct gpool *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	if ((g = pool_default(dev)) != NULL && current[dev] != NULL)
		g = current[dev];
	pthread_mutex_unlock(&pool_lock);
	if (g == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = (CUmemoryPool)g;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceSetMemPool(CUdevice dev, CUmemoryPool p)
{
	struct gpool *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&pool_lock);
	if (pool_default(dev) == NULL) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_DEVICE;
	}
	/* A pool of another device's memory is not this device's pool. */
	if ((g = pool_check(p)) == NULL || g->device != dev) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	current[dev] = g == &defaults[dev] ? NULL : g;
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

/* cuMemGetDefaultMemPool and co. (CUDA 13): device memory only. */
static CUresult
pool_location(const CUmemLocation *loc, CUmemAllocationType type,
    int *dev)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (loc == NULL || type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE) {
		log_warn("memory pools of host memory are not supported by "
		    "Gleam");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*dev = loc->id;
	return CUDA_SUCCESS;
}

CUresult
cuMemGetDefaultMemPool(CUmemoryPool *out, CUmemLocation *loc,
    CUmemAllocationType type)
{
	CUresult rc;
	int dev;

	if ((rc = pool_location(loc, type, &dev)) != CUDA_SUCCESS)
		return rc;
	return cuDeviceGetDefaultMemPool(out, dev);
}

CUresult
cuMemGetMemPool(CUmemoryPool *out, CUmemLocation *loc,
    CUmemAllocationType type)
{
	CUresult rc;
	int dev;

	if ((rc = pool_location(loc, type, &dev)) != CUDA_SUCCESS)
		return rc;
	return cuDeviceGetMemPool(out, dev);
}

CUresult
cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type,
    CUmemoryPool p)
{
	CUresult rc;
	int dev;

	if ((rc = pool_location(loc, type, &dev)) != CUDA_SUCCESS)
		return rc;
	return cuDeviceSetMemPool(dev, p);
}

CUresult
cuMemPoolCreate(CUmemoryPool *out, const CUmemPoolProps *props)
{
	struct gpool *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (out == NULL || props == NULL ||
	    props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
		log_warn("cuMemPoolCreate: pools of host memory are not "
		    "supported by Gleam");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* A location that is no device is a bad value to the real driver. */
	if (client_device(props->location.id) == NULL ||
	    props->location.id >= POOL_DEVS)
		return CUDA_ERROR_INVALID_VALUE;
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pool_setup(g, props->location.id);
	g->props = *props;
	g->made = 1;
	pthread_mutex_lock(&pool_lock);
	g->next = made;
	made = g;
	pthread_mutex_unlock(&pool_lock);
	*out = (CUmemoryPool)g;
	return CUDA_SUCCESS;
}

CUresult
cuMemPoolDestroy(CUmemoryPool p)
{
	struct gpool *g;
	int d;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL || !g->made) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* A device whose current pool it was gets its default back. */
	for (d = 0; d < POOL_DEVS; d++)
		if (current[d] == g)
			current[d] = NULL;
	g->dead = 1;
	pool_reap(g);
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	struct gpool *g;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL || v == NULL) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (a) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)v = g->reuse[a - 1];
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)v = g->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(cuuint64_t *)v = g->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)v = g->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)v = g->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)v = g->used_high;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

CUresult
cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	struct gpool *g;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL || v == NULL) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (a) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		g->reuse[a - 1] = *(int *)v != 0;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		g->threshold = *(cuuint64_t *)v;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		/* Only a reset to 0 is allowed, as with the driver. */
		if (*(cuuint64_t *)v != 0)
			rc = CUDA_ERROR_INVALID_VALUE;
		else if (a == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
			g->used_high = g->used;
		else
			g->reserved_high = g->reserved;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

/* Memory kept beyond what is in use goes back down to keep. */
CUresult
cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	struct gpool *g;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (g->reserved > keep)
		g->reserved = g->used > keep ? g->used : keep;
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemPoolSetAccess(CUmemoryPool p, const CUmemAccessDesc *map, size_t n)
{
	struct gpool *g;
	size_t i;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL || (map == NULL && n > 0)) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* All checked before any is set. */
	for (i = 0; i < n; i++) {
		if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
		    map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) {
			pthread_mutex_unlock(&pool_lock);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (map[i].location.id < 0 || map[i].location.id >= POOL_DEVS ||
		    client_device(map[i].location.id) == NULL) {
			pthread_mutex_unlock(&pool_lock);
			return CUDA_ERROR_INVALID_DEVICE;
		}
		/* The pool's own device keeps its access. */
		if (map[i].location.id == g->device &&
		    map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
			pthread_mutex_unlock(&pool_lock);
			return CUDA_ERROR_INVALID_DEVICE;
		}
	}
	for (i = 0; i < n; i++)
		g->access[map[i].location.id] = (unsigned char)map[i].flags;
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool p,
    CUmemLocation *loc)
{
	struct gpool *g;

	pthread_mutex_lock(&pool_lock);
	if ((g = pool_check(p)) == NULL || flags == NULL || loc == NULL ||
	    loc->type != CU_MEM_LOCATION_TYPE_DEVICE) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (loc->id < 0 || loc->id >= POOL_DEVS ||
	    client_device(loc->id) == NULL) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_DEVICE;
	}
	*flags = (CUmemAccess_flags)g->access[loc->id];
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

/* Sharing a pool or its memory with another process. */
static CUresult
pool_no_ipc(const char *fn)
{
	log_warn("%s: sharing memory pools with another process is not "
	    "supported by Gleam", fn);
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
cuMemPoolExportToShareableHandle(void *h, CUmemoryPool p,
    CUmemAllocationHandleType type, unsigned long long flags)
{
	return pool_no_ipc(__func__);
}

CUresult
cuMemPoolImportFromShareableHandle(CUmemoryPool *p, void *h,
    CUmemAllocationHandleType type, unsigned long long flags)
{
	return pool_no_ipc(__func__);
}

CUresult
cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
	return pool_no_ipc(__func__);
}

CUresult
cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool p,
    CUmemPoolPtrExportData *data)
{
	return pool_no_ipc(__func__);
}

/* An allocation of g's (NULL: the current pool of the context's device). */
static CUresult
alloc_async(CUdeviceptr *dptr, size_t n, struct gpool *g, CUstream s,
    int ptsz)
{
	struct gpalloc *na;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = cuMemAlloc_v2(dptr, n)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&pool_lock);
	if (g == NULL && (g = pool_default(c->device)) != NULL &&
	    current[c->device] != NULL)
		g = current[c->device];
	if (g != NULL && npallocs == pacap) {
		size_t cap = pacap ? pacap * 2 : 64;

		if ((na = realloc(pallocs, cap * sizeof *na)) != NULL) {
			pallocs = na;
			pacap = cap;
		}
	}
	if (g != NULL && npallocs < pacap) {
		pallocs[npallocs++] = (struct gpalloc){ *dptr, n, g };
		g->used += n;
		if (g->used > g->used_high)
			g->used_high = g->used;
		if (g->used > g->reserved)
			g->reserved = g->used;
		if (g->reserved > g->reserved_high)
			g->reserved_high = g->reserved;
	}
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

static CUresult
free_async(CUdeviceptr p, CUstream s, int ptsz)
{
	struct gpool *g;
	struct gctx *c;
	size_t base, size, i;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	/* Nothing to free: done, as cuMemFree(0) is (the driver). */
	if (p == 0)
		return CUDA_SUCCESS;
	if (!mem_is_device(p, &base, &size) || base != p)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemFree_v2(p)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&pool_lock);
	for (i = 0; i < npallocs; i++)
		if (pallocs[i].p == p) {
			g = pallocs[i].pool;
			pallocs[i] = pallocs[--npallocs];
			g->used = g->used > size ? g->used - size : 0;
			/* Kept up to the release threshold. */
			if (g->reserved > g->used && g->reserved > g->threshold)
				g->reserved = g->used > g->threshold ?
				    g->used : g->threshold;
			pool_reap(g);
			break;
		}
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

/* The pool an allocation starting at base came from, or NULL. */
CUmemoryPool
mempool_of(CUdeviceptr base)
{
	CUmemoryPool r = NULL;
	size_t i;

	pthread_mutex_lock(&pool_lock);
	for (i = 0; i < npallocs; i++)
		if (pallocs[i].p == base) {
			r = (CUmemoryPool)pallocs[i].pool;
			break;
		}
	pthread_mutex_unlock(&pool_lock);
	return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, NULL, s, 0); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, NULL, s, 1); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return free_async(p, s, 0); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return free_async(p, s, 1); }

static CUresult
alloc_from(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s, int ptsz)
{
	struct gpool *g;

	pthread_mutex_lock(&pool_lock);
	g = pool_check(p);
	pthread_mutex_unlock(&pool_lock);
	if (g == NULL || d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(d, n, g, s, ptsz);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) { return alloc_from(d, n, p, s, 0); }
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) { return alloc_from(d, n, p, s, 1); }
