/*
 * Virtual memory management: cuMemAddressReserve, cuMemCreate, cuMemMap
 * and the rest (JAX's allocator, ggml's pool).  Addresses are the
 * server's, as cuMemAlloc's are.  A CUmemGenericAllocationHandle is the
 * address of a struct gvmem here, which is also its id on the server
 * (gleam-protocol(5), R_VMM_CREATE): its properties and its count of
 * handles are kept here, so cuMemGetAllocationPropertiesFromHandle and
 * cuMemRetainAllocationHandle need no round trip.  Each mapping is in the
 * allocation registry (alloc.c) as device memory, which cuMemFree
 * refuses, so that copies, memsets, the weight cache and pointer queries
 * treat it as they treat cuMemAlloc's.  The server releases an
 * allocation once the program released every handle to it and unmapped
 * it everywhere.  Sharing with other processes (POSIX file descriptors,
 * fabric handles) is not offered: the memory is on another machine.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"
#include "io.h"
#include "log.h"

#define GVMEM_MAGIC	0x676c6d766d656dull	/* "glmvmem" */

struct gvmem {
	uint64_t		 magic;
	size_t			 size;
	CUmemAllocationProp	 prop;
	int			 refs;		/* handles not released */
	int			 nmaps;		/* mappings of it */
	struct gctx		*ctx;		/* where it was made */
};

struct gmap {
	CUdeviceptr		 va;
	size_t			 size;
	struct gvmem		*h;
};

static pthread_mutex_t	 vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gvmem	**hs;		/* live allocations */
static size_t		 nhs, hcap;
static struct gmap	*maps;
static size_t		 nmaps, mcap;

/* A round trip; out may be NULL where the reply has no fields. */
static CUresult
vcall(uint16_t type, const struct rpc_val *in, struct rpc_val *out)
{
	struct rpc_val none[RPC_MAX_FIELDS];
	void *keep;
	CUresult rc;

	rc = remote_call(type, in, out != NULL ? out : none, &keep);
	free(keep);
	return rc;
}

/* The allocation h names, or NULL; with vmm_lock held. */
static struct gvmem *
vmm_handle(CUmemGenericAllocationHandle h)
{
	size_t i;

	for (i = 0; i < nhs; i++)
		if ((CUmemGenericAllocationHandle)(uintptr_t)hs[i] == h)
			return hs[i];
	return NULL;
}

/*
 * A live context to name in a call about g: the current one, g's, or an
 * active primary context of device dev (-1: any device).  The driver
 * answers this family without a current context; the server is told of
 * one all the same.
 */
static struct gctx *
vmm_ctx_on(const struct gvmem *g, int dev)
{
	struct gctx *c = ctx_current();

	if (c != NULL && c->live)
		return c;
	if (g != NULL && g->ctx->live)
		return g->ctx;
	return ctx_primary_live(dev);
}

static struct gctx *
vmm_ctx(const struct gvmem *g)
{
	return vmm_ctx_on(g, -1);
}

/*
 * Forgets g once nothing names it (with vmm_lock held), telling the
 * server if it may still hold it.
 */
static void
vmm_forget(struct gvmem *g)
{
	struct rpc_val in[2];
	struct gctx *c;
	size_t i;

	if (g->refs > 0 || g->nmaps > 0)
		return;
	for (i = 0; i < nhs; i++)
		if (hs[i] == g) {
			hs[i] = hs[--nhs];
			break;
		}
	g->magic = 0;
	/*
	 * With no live context to name, the server keeps it until the
	 * client goes; so does this struct, whose address is its id there
	 * and must not name a new allocation.
	 */
	if ((c = vmm_ctx(g)) == NULL)
		return;
	in[0].u = gobj_id(c);
	in[1].u = (uintptr_t)g;
	vcall(R_VMM_RELEASE, in, NULL);
	free(g);
}

CUresult
cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
    CUdeviceptr addr, unsigned long long flags)
{
	struct rpc_val in[5], out[1];
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ptr == NULL || size == 0 || (align & (align - 1)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = vmm_ctx(NULL)) == NULL)
		return ctx_none(__func__);
	in[0].u = gobj_id(c);
	in[1].u = size;
	in[2].u = align;
	in[3].u = addr;
	in[4].u = flags;
	rc = vcall(R_VMM_RESERVE, in, out);
	if (rc == CUDA_SUCCESS)
		*ptr = out[0].u;
	return rc;
}

CUresult
cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct rpc_val in[3];
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ptr == 0 || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = vmm_ctx(NULL)) == NULL)
		return ctx_none(__func__);
	in[0].u = gobj_id(c);
	in[1].u = ptr;
	in[2].u = size;
	rc = vcall(R_VMM_FREE, in, NULL);
	return rc;
}

CUresult
cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct rpc_val in[11];
	struct gvmem *g, **nh;
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (handle == NULL || prop == NULL || size == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = vmm_ctx_on(NULL, prop->location.type ==
	    CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1)) == NULL)
		return ctx_none(__func__);
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&vmm_lock);
	if (nhs == hcap) {
		size_t cap = hcap ? hcap * 2 : 16;

		if ((nh = realloc(hs, cap * sizeof *nh)) == NULL) {
			pthread_mutex_unlock(&vmm_lock);
			free(g);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		hs = nh;
		hcap = cap;
	}
	pthread_mutex_unlock(&vmm_lock);
	in[0].u = gobj_id(c);
	in[1].u = (uintptr_t)g;
	in[2].u = size;
	in[3].u = flags;
	in[4].u = (uint32_t)prop->type;
	in[5].u = (uint32_t)prop->location.type;
	in[6].u = (uint64_t)(int64_t)prop->location.id;
	in[7].u = (uint32_t)prop->requestedHandleTypes;
	in[8].u = prop->allocFlags.compressionType;
	in[9].u = prop->allocFlags.gpuDirectRDMACapable;
	in[10].u = prop->allocFlags.usage;
	rc = vcall(R_VMM_CREATE, in, NULL);
	if (rc != CUDA_SUCCESS) {
		free(g);
		return rc;
	}
	g->magic = GVMEM_MAGIC;
	g->size = size;
	g->prop = *prop;
	g->refs = 1;
	g->ctx = c;
	pthread_mutex_lock(&vmm_lock);
	hs[nhs++] = g;		/* room was made above */
	pthread_mutex_unlock(&vmm_lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)g;
	return CUDA_SUCCESS;
}

CUresult
cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct gvmem *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&vmm_lock);
	if ((g = vmm_handle(h)) == NULL || g->refs == 0) {
		pthread_mutex_unlock(&vmm_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	g->refs--;
	vmm_forget(g);
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
    CUmemGenericAllocationHandle h, unsigned long long flags)
{
	struct rpc_val in[6];
	struct gmap *nm;
	struct gvmem *g;
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ptr == 0 || size == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The H200's driver (580) maps an allocation only from its start. */
	if (offset != 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&vmm_lock);
	g = vmm_handle(h);
	if (g == NULL || (c = vmm_ctx(g)) == NULL) {
		pthread_mutex_unlock(&vmm_lock);
		return g == NULL ? CUDA_ERROR_INVALID_HANDLE :
		    CUDA_ERROR_INVALID_CONTEXT;
	}
	if (nmaps == mcap) {
		size_t cap = mcap ? mcap * 2 : 16;

		if ((nm = realloc(maps, cap * sizeof *nm)) == NULL) {
			pthread_mutex_unlock(&vmm_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		maps = nm;
		mcap = cap;
	}
	/* Held across the call: the handle stays while it is mapped. */
	in[0].u = gobj_id(c);
	in[1].u = ptr;
	in[2].u = size;
	in[3].u = offset;
	in[4].u = (uintptr_t)g;
	in[5].u = flags;
	rc = vcall(R_VMM_MAP, in, NULL);
	if (rc == CUDA_SUCCESS) {
		if (mem_add(ptr, size, c, 0, MEM_F_VMM) == -1)
			log_warn("cuMemMap: out of memory for the registry");
		maps[nmaps++] = (struct gmap){ ptr, size, g };
		g->nmaps++;
	}
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

CUresult
cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct rpc_val in[3];
	struct gctx *c;
	size_t i;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ptr == 0 || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	if ((c = vmm_ctx(NULL)) == NULL) {
		pthread_mutex_unlock(&vmm_lock);
		return ctx_none(__func__);
	}
	/* Copies on their way out of it land first. */
	rdrain_detached();
	in[0].u = gobj_id(c);
	in[1].u = ptr;
	in[2].u = size;
	rc = vcall(R_VMM_UNMAP, in, NULL);
	if (rc == CUDA_SUCCESS) {
		for (i = 0; i < nmaps; ) {
			struct gmap m = maps[i];

			if (m.va < ptr || m.va - ptr >= size) {
				i++;
				continue;
			}
			maps[i] = maps[--nmaps];
			mem_del(m.va, 0);
			m.h->nmaps--;
			vmm_forget(m.h);
		}
	}
	pthread_mutex_unlock(&vmm_lock);
	return rc;
}

CUresult
cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
    size_t count)
{
	struct rpc_val in[4];
	uint8_t b[64 * 12];
	struct gctx *c;
	size_t i;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ptr == 0 || size == 0 || desc == NULL || count == 0 ||
	    count > sizeof b / 12)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = vmm_ctx(NULL)) == NULL)
		return ctx_none(__func__);
	for (i = 0; i < count; i++) {
		uint32_t v[3];
		int k;

		v[0] = (uint32_t)desc[i].location.type;
		v[1] = (uint32_t)desc[i].location.id;
		v[2] = (uint32_t)desc[i].flags;
		for (k = 0; k < 12; k++)
			b[i * 12 + k] = (uint8_t)(v[k / 4] >> (8 * (k % 4)));
	}
	in[0].u = gobj_id(c);
	in[1].u = ptr;
	in[2].u = size;
	in[3].p = b;
	in[3].len = (uint32_t)(count * 12);
	rc = vcall(R_VMM_SET_ACCESS, in, NULL);
	return rc;
}

CUresult
cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
    CUdeviceptr ptr)
{
	struct rpc_val in[4], out[1];
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (flags == NULL || location == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c = vmm_ctx(NULL)) == NULL)
		return ctx_none(__func__);
	in[0].u = gobj_id(c);
	in[1].u = (uint32_t)location->type;
	in[2].u = (uint64_t)(int64_t)location->id;
	in[3].u = ptr;
	rc = vcall(R_VMM_GET_ACCESS, in, out);
	if (rc == CUDA_SUCCESS)
		*flags = out[0].u;
	return rc;
}

CUresult
cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
    void *addr)
{
	uint64_t a = (uintptr_t)addr;
	CUresult rc;
	size_t i;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (handle == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	for (i = 0; i < nmaps; i++)
		if (a >= maps[i].va && a - maps[i].va < maps[i].size) {
			maps[i].h->refs++;
			*handle = (CUmemGenericAllocationHandle)(uintptr_t)
			    maps[i].h;
			pthread_mutex_unlock(&vmm_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
    CUmemGenericAllocationHandle h)
{
	struct gvmem *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (prop == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	if ((g = vmm_handle(h)) == NULL) {
		pthread_mutex_unlock(&vmm_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	*prop = g->prop;
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

/* Sharing with another process: the memory is on another machine. */
CUresult
cuMemExportToShareableHandle(void *sh, CUmemGenericAllocationHandle h,
    CUmemAllocationHandleType type, unsigned long long flags)
{
	log_warn("cuMemExportToShareableHandle: sharing device memory with "
	    "another process is not supported by Gleam");
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *sh,
    CUmemAllocationHandleType type)
{
	log_warn("cuMemImportFromShareableHandle: sharing device memory with "
	    "another process is not supported by Gleam");
	return CUDA_ERROR_NOT_SUPPORTED;
}
