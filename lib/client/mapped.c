/*
 * Host memory: pinned (ordinary memory here), registered, and mapped
 * (mapped.h).
 */
#include <sys/mman.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"
#include "mapped.h"
#include "log.h"

/*
 * Mapped host memory (CU_MEMHOSTALLOC_DEVICEMAP), which kernels read and
 * write in place (cuDNN keeps a status word so): the GPU is on another
 * machine, so the memory is a device allocation on the server with a
 * host copy here, kept coherent at the points where a program may look:
 * before work that may read it (launches, copies, memsets) the host side
 * goes to the device if it changed since (a shadow copy tells); after the
 * host waited for the device (a synchronize, a query that found the work
 * done, a blocking copy) the device side comes back.  The host copy is
 * mapped at the device allocation's own address where that address is
 * free here, so that, with unified addressing, the host pointer is the
 * device pointer too, as on a GPU; else cuMemHostGetDevicePointer gives
 * the device's.  Meant for small buffers: MAPPED_MAX bytes in all.
 * The device side comes back only if device work that could have written
 * it was sent since it last came back (map_gen): a kernel, or a copy or
 * memset whose destination may be a mapped buffer.
 */
#define MAPPED_MAX	(16u << 20)

struct mapped {
	uint8_t		*host, *shadow;
	CUdeviceptr	 dev;
	size_t		 size;
	struct gctx	*ctx;
	int		 fixed;		/* host == dev: mmap'd there */
	int		 reg;		/* host is the program's, registered */
};

static pthread_mutex_t	 map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapped	 maps[MAPPED_N];
static int		 nmaps;
static size_t		 mapped_bytes;
static int		 mapped_on;	/* nmaps > 0, read without the lock */
static __thread int	 in_mapped;	/* our own copies: no hooks */
static uint64_t		 map_gen;	/* device work that may write them */
static uint64_t		 map_pulled;	/* map_gen when last pulled */

/* Device work that may write a mapped buffer: the next pull fetches them. */
static void
mapped_touch(const struct rpc_desc *d, const struct rpc_val *in)
{
	uint64_t len;
	int i, hit = 0;

	if (!(d->flags & RPC_F_WRITES_DEV))
		return;
	if (d->flags & RPC_F_DST_RANGE) {
		/* Inputs into ordinary device memory leave them alone. */
		len = d->req[4] == 'B' ? in[4].len : in[4].u;
		pthread_mutex_lock(&map_lock);
		for (i = 0; i < nmaps && !hit; i++)
			hit = in[3].u < maps[i].dev + maps[i].size &&
			    maps[i].dev < in[3].u + len;
		pthread_mutex_unlock(&map_lock);
		if (!hit)
			return;
	}
	__atomic_add_fetch(&map_gen, 1, __ATOMIC_ACQ_REL);
}

static void
mapped_push_locked(void)
{
	struct rpc_val in[5];
	int i;

	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];

		if (!m->ctx->live || memcmp(m->host, m->shadow, m->size) == 0)
			continue;
		memcpy(m->shadow, m->host, m->size);
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev;
		in[4].p = m->shadow;
		in[4].len = (uint32_t)m->size;
		rpost(R_MEM_HTOD, in, 0);
	}
}

/* The host side of changed buffers to the device. */
static void
mapped_push(void)
{
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	mapped_push_locked();
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
}

void
mapped_before_send(uint16_t type, const struct rpc_val *in)
{
	const struct rpc_desc *d;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped ||
	    (d = rpc_lookup(type)) == NULL)
		return;
	/* Work that may read mapped host memory sees its host writes. */
	if ((d->flags & RPC_F_READS_DEV) || ((d->flags & RPC_F_WRITES_DEV) &&
	    !(d->flags & RPC_F_FROM_HOST)))
		mapped_push();
	mapped_touch(d, in);
}

int
client_mapped_pull_begin(struct mpull *mp)
{
	struct rpc_val in[5];
	int i;

	mp->n = 0;
	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped)
		return 0;
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	/* Host writes since the last push first, or they would be lost. */
	mapped_push_locked();
	mp->gen = __atomic_load_n(&map_gen, __ATOMIC_ACQUIRE);
	if (mp->gen == map_pulled) {
		pthread_mutex_unlock(&map_lock);
		in_mapped = 0;
		return 0;
	}
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		struct rwait *w = &mp->w[mp->n];

		if (!m->ctx->live)
			continue;
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev;
		in[4].u = m->size;
		memset(w, 0, sizeof *w);
		w->beside = 1;
		if (rsend(R_MEM_DTOH, in, 0, w) != CUDA_SUCCESS)
			break;
		mp->idx[mp->n++] = i;
	}
	/* map_lock stays held until the end: the buffers stay put. */
	return 1;
}

void
client_mapped_pull_end(struct mpull *mp, int ok, uint64_t qstart,
    uint64_t *qend)
{
	struct rpc_val out[1];
	uint64_t at = qstart;
	void *keep;
	int i, all = 1;

	for (i = 0; i < mp->n; i++) {
		struct mapped *m = &maps[mp->idx[i]];
		CUresult rc = rwait(&mp->w[i], out, &keep);

		if (rc == CUDA_SUCCESS && ok && out[0].len == m->size) {
			memcpy(m->host, out[0].p, m->size);
			memcpy(m->shadow, out[0].p, m->size);
		} else
			all = 0;
		free(keep);
		/* Contiguous with the call it went beside? */
		if (mp->w[i].qstart != at)
			at = 0;
		else
			at = mp->w[i].qend;
	}
	if (all && ok)
		map_pulled = mp->gen;
	*qend = at;
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
}

static CUresult
mapped_alloc(void **pp, size_t size, unsigned flags)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	struct mapped m;
	CUresult rc;
	void *p;

	memset(&m, 0, sizeof m);
	if ((rc = ctx_need(&m.ctx)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if (nmaps == MAPPED_N || mapped_bytes + len > MAPPED_MAX) {
		pthread_mutex_unlock(&map_lock);
		log_warn("cuMemHostAlloc: mapped host memory is emulated for "
		    "%u buffers and %u MiB in all: refused", MAPPED_N,
		    MAPPED_MAX >> 20);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&map_lock);
	if ((rc = cuMemAlloc_v2(&m.dev, len)) != CUDA_SUCCESS)
		return rc;
	m.size = size;
	p = mmap((void *)(uintptr_t)m.dev, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != (void *)(uintptr_t)m.dev) {
		munmap(p, len);		/* an old kernel's hint, not ours */
		p = MAP_FAILED;
	}
	if (p != MAP_FAILED)
		m.fixed = 1;
	else if (posix_memalign(&p, 4096, len) != 0) {
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	} else
		memset(p, 0, len);
	m.host = p;
	if ((m.shadow = calloc(1, len)) == NULL ||
	    (!m.fixed && mem_add((uintptr_t)p, size, m.ctx, 1, flags) == -1)) {
		free(m.shadow);
		if (m.fixed)
			munmap(p, len);
		else
			free(p);
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* Both sides start as zeros: the device's is written once. */
	pthread_mutex_lock(&map_lock);
	maps[nmaps++] = m;
	mapped_bytes += len;
	__atomic_store_n(&mapped_on, 1, __ATOMIC_RELEASE);
	in_mapped = 1;
	{
		struct rpc_val in[5];

		in[0].u = gobj_id(m.ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m.dev;
		in[4].p = m.shadow;
		in[4].len = (uint32_t)m.size;
		rpost(R_MEM_HTOD, in, 0);
	}
	in_mapped = 0;
	pthread_mutex_unlock(&map_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

/* The mapped buffer holding p, removed; 0 if there was one. */
static int
mapped_free(void *p)
{
	struct mapped m;
	int i;

	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++)
		if (maps[i].host == p)
			break;
	if (i == nmaps) {
		pthread_mutex_unlock(&map_lock);
		return -1;
	}
	m = maps[i];
	maps[i] = maps[--nmaps];
	mapped_bytes -= (m.size + 4095) & ~(size_t)4095;
	if (nmaps == 0)
		__atomic_store_n(&mapped_on, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_lock);
	if (m.ctx->live)
		cuMemFree_v2(m.dev);
	else
		mem_del(m.dev, 0);
	if (m.reg)
		mem_del((uintptr_t)m.host, 2);
	else if (m.fixed)
		munmap(m.host, (m.size + 4095) & ~(size_t)4095);
	else {
		mem_del((uintptr_t)m.host, 1);
		free(m.host);
	}
	free(m.shadow);
	return 0;
}

/*
 * Registered host memory mapped for the device (cuMemHostRegister with
 * CU_MEMHOSTREGISTER_DEVICEMAP): as mapped memory of cuMemHostAlloc, but
 * the host side is the program's own memory, whose bytes go to the
 * device buffer first; the device pointer differs from the host one.
 */
static CUresult
mapped_register(void *p, size_t size, unsigned flags)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	struct rpc_val in[5];
	struct mapped m;
	CUresult rc;

	memset(&m, 0, sizeof m);
	if ((rc = ctx_need(&m.ctx)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if (nmaps == MAPPED_N || mapped_bytes + len > MAPPED_MAX) {
		pthread_mutex_unlock(&map_lock);
		log_warn("cuMemHostRegister: mapped host memory is emulated "
		    "for %u buffers and %u MiB in all: refused", MAPPED_N,
		    MAPPED_MAX >> 20);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&map_lock);
	if ((rc = cuMemAlloc_v2(&m.dev, len)) != CUDA_SUCCESS)
		return rc;
	m.size = size;
	m.host = p;
	m.reg = 1;
	if ((m.shadow = malloc(len)) == NULL ||
	    mem_add((uintptr_t)p, size, m.ctx, 2, flags) == -1) {
		free(m.shadow);
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(m.shadow, p, size);
	pthread_mutex_lock(&map_lock);
	maps[nmaps++] = m;
	mapped_bytes += len;
	__atomic_store_n(&mapped_on, 1, __ATOMIC_RELEASE);
	in_mapped = 1;
	in[0].u = gobj_id(m.ctx);
	in[1].u = 0;
	in[2].u = 0;
	in[3].u = m.dev;
	in[4].p = m.shadow;
	in[4].len = (uint32_t)m.size;
	rpost(R_MEM_HTOD, in, 0);
	in_mapped = 0;
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

/* Is p the start of registered memory mapped for the device? */
static int
mapped_is_reg(void *p)
{
	int i, r = 0;

	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps && !r; i++)
		r = maps[i].reg && maps[i].host == p;
	pthread_mutex_unlock(&map_lock);
	return r;
}

CUresult
cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	uint8_t *b = p;
	int i;

	if (d == NULL || p == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++)
		if (b >= maps[i].host && b < maps[i].host + maps[i].size) {
			*d = maps[i].dev + (CUdeviceptr)(b - maps[i].host);
			pthread_mutex_unlock(&map_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&map_lock);
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuMemHostGetDevicePointer(CUdeviceptr_v1 *d, void *p, unsigned int flags)
{
	CUdeviceptr v;
	CUresult rc;

	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemHostGetDevicePointer_v2(&v, p, flags)) ==
	    CUDA_SUCCESS)
		*d = (CUdeviceptr_v1)v;
	return rc;
}

/* Host memory: ordinary memory, remembered so it can be recognised. */
CUresult
cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	void *p;

	if (pp == NULL || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
		return mapped_alloc(pp, size, flags);
	if (posix_memalign(&p, 4096, size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (mem_add((uintptr_t)p, size, ctx_current(), 1, flags) == -1) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocHost_v2(void **pp, size_t size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemAllocHost(void **pp, unsigned int size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemFreeHost(void *p)
{
	/* Copies on their way into it land first. */
	rdrain_detached();
	if (!mapped_is_reg(p) && mapped_free(p) == 0)
		return CUDA_SUCCESS;
	if (mem_del((uintptr_t)p, 1) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	free(p);
	return CUDA_SUCCESS;
}

CUresult
cuMemHostGetFlags(unsigned int *flags, void *p)
{
	struct alloc a;

	if (flags == NULL || mem_lookup((uintptr_t)p, &a) == -1 || !a.host)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = a.flags;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	struct alloc a;

	if (p == NULL || size == 0 || (flags & ~(unsigned)(
	    CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
	    CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTREGISTER_IOMEMORY) {
		log_warn("cuMemHostRegister: I/O memory cannot be mapped for "
		    "a GPU on another machine");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (mem_lookup((uintptr_t)p, &a) == 0 ||
	    mem_lookup((uintptr_t)p + size - 1, &a) == 0)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (flags & CU_MEMHOSTREGISTER_DEVICEMAP)
		return mapped_register(p, size, flags);
	if (mem_add((uintptr_t)p, size, ctx_current(), 2, flags) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	return cuMemHostRegister_v2(p, size, flags);
}

CUresult
cuMemHostUnregister(void *p)
{
	rdrain_detached();
	/* Device writes were brought back at the last synchronization. */
	if (mapped_is_reg(p) && mapped_free(p) == 0)
		return CUDA_SUCCESS;
	if (mem_del((uintptr_t)p, 2) == -1)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	return CUDA_SUCCESS;
}
