/*
 * Entry points answered from what the library already has: the PCI bus
 * id from the device's attributes, the shared-memory bank configuration
 * (Hopper has one), host functions in stream order, and the stream-ordered
 * allocator over ordinary allocations.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"

CUresult
cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (id == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((d = client_device(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	/* The driver's form: domain:bus:device.function, truncated to len. */
	snprintf(id, (size_t)len, "%04x:%02x:%02x.0",
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
	return CUDA_SUCCESS;
}

/* Bank size: a setting from before Kepler; the driver keeps and ignores it. */
static CUsharedconfig	 smem_config = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;

CUresult
cuCtxGetSharedMemConfig(CUsharedconfig *c)
{
	struct gctx *g;
	CUresult rc;

	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&g)) != CUDA_SUCCESS)
		return rc;
	*c = smem_config == CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ?
	    CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE : smem_config;
	return CUDA_SUCCESS;
}

CUresult
cuCtxSetSharedMemConfig(CUsharedconfig c)
{
	struct gctx *g;
	CUresult rc;

	if ((rc = ctx_need(&g)) != CUDA_SUCCESS)
		return rc;
	if ((unsigned)c > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	smem_config = c;
	return CUDA_SUCCESS;
}

CUresult
cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c)
{
	if (gobj_check(f, GK_FUNC) == NULL && gobj_check(f, GK_KERNEL) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)c > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * A host function runs once the work queued before it is done, and work
 * queued after it waits for it: here the stream is synchronized and the
 * function called on the calling thread, which keeps both promises.
 */
static CUresult
host_fn(CUstream s, int ptsz, CUhostFn fn, void *data)
{
	CUresult rc;

	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = ptsz ? cuStreamSynchronize_ptsz(s) : cuStreamSynchronize(s);
	if (rc != CUDA_SUCCESS)
		return rc;
	fn(data);
	return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) { return host_fn(s, 0, fn, data); }
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data) { return host_fn(s, 1, fn, data); }

/* A callback also learns the stream's status. */
static CUresult
stream_callback(CUstream s, int ptsz, CUstreamCallback cb, void *data,
    unsigned flags)
{
	CUresult rc;

	if (cb == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = ptsz ? cuStreamSynchronize_ptsz(s) : cuStreamSynchronize(s);
	if (rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_INVALID_CONTEXT
	    || rc == CUDA_ERROR_DEVICE_UNAVAILABLE || rc ==
	    CUDA_ERROR_NOT_INITIALIZED)
		return rc;
	cb(s, rc, data);
	return CUDA_SUCCESS;
}

CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags) { return stream_callback(s, 0, cb, data, flags); }
CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *data, unsigned int flags) { return stream_callback(s, 1, cb, data, flags); }

/*
 * The stream-ordered allocator over ordinary allocations: memory from
 * cuMemAllocAsync is usable at once (so also in stream order), and
 * cuMemFreeAsync goes in order with the stream's other work, since every
 * call reaches the server in the order it was made.  Each device has its
 * default pool, whose attributes are kept here.
 */
#define POOL_DEVS	64
static struct gpool {
	uint64_t	 magic;
	int		 device;
	uint64_t	 threshold;
	int		 reuse[3];
	uint64_t	 used, used_high;
} pools[POOL_DEVS];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
#define POOL_MAGIC	0x676c6d706f6f6cull	/* "glmpool" */

static struct gpool *
pool_of(CUdevice dev)
{
	if (dev < 0 || dev >= POOL_DEVS || client_device(dev) == NULL)
		return NULL;
	pthread_mutex_lock(&pool_lock);
	if (pools[dev].magic != POOL_MAGIC) {
		pools[dev].magic = POOL_MAGIC;
		pools[dev].device = dev;
		pools[dev].reuse[0] = pools[dev].reuse[1] =
		    pools[dev].reuse[2] = 1;
	}
	pthread_mutex_unlock(&pool_lock);
	return &pools[dev];
}

static struct gpool *
pool_check(CUmemoryPool p)
{
	struct gpool *g = (struct gpool *)p;

	if (g < pools || g >= pools + POOL_DEVS || g->magic != POOL_MAGIC)
		return NULL;
	return g;
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
	if ((g = pool_of(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = (CUmemoryPool)g;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetMemPool(CUmemoryPool *out, CUdevice dev)
{
	return cuDeviceGetDefaultMemPool(out, dev);
}

CUresult
cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	struct gpool *g = pool_check(p);

	if (g == NULL || v == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
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
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)v = g->used;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)v = g->used_high;
		break;
	default:
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	struct gpool *g = pool_check(p);
	CUresult rc = CUDA_SUCCESS;

	if (g == NULL || v == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
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
		else
			g->used_high = g->used;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

CUresult
cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	(void)keep;
	return pool_check(p) == NULL ? CUDA_ERROR_INVALID_VALUE :
	    CUDA_SUCCESS;
}

static CUresult
alloc_async(CUdeviceptr *dptr, size_t n, CUstream s, int ptsz)
{
	struct gctx *c;
	struct gpool *g;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = cuMemAlloc_v2(dptr, n)) != CUDA_SUCCESS)
		return rc;
	if ((g = pool_of(c->device)) != NULL) {
		pthread_mutex_lock(&pool_lock);
		g->used += n;
		if (g->used > g->used_high)
			g->used_high = g->used;
		pthread_mutex_unlock(&pool_lock);
	}
	return CUDA_SUCCESS;
}

static CUresult
free_async(CUdeviceptr p, CUstream s, int ptsz)
{
	struct gctx *c;
	struct gpool *g;
	size_t base, size;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if (!mem_is_device(p, &base, &size) || base != p)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemFree_v2(p)) != CUDA_SUCCESS)
		return rc;
	if ((g = pool_of(c->device)) != NULL) {
		pthread_mutex_lock(&pool_lock);
		g->used = g->used > size ? g->used - size : 0;
		pthread_mutex_unlock(&pool_lock);
	}
	return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, s, 0); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, s, 1); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return free_async(p, s, 0); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return free_async(p, s, 1); }

CUresult
cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool p,
    CUstream s)
{
	if (pool_check(p) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(d, n, s, 0);
}

CUresult
cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p,
    CUstream s)
{
	if (pool_check(p) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(d, n, s, 1);
}
