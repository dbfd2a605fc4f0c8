/*
 * Host memory: pinned (ordinary memory here), registered, and mapped
 * (mapped.h).
 */
#include <sys/mman.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"
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
	int		 managed;	/* cuMemAllocManaged's (host == dev) */
	int		 read_mostly;	/* cuMemAdvise's, for its queries */
	int		 preferred, prefetched;	/* devices, or -2 */
};

static pthread_mutex_t	 map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapped	 maps[MAPPED_N];
static int		 nmaps;
static size_t		 mapped_bytes;
static int		 mapped_on;	/* nmaps > 0, read without the lock */
static __thread int	 in_mapped;	/* our own copies: no hooks */
static uint64_t		 map_gen;	/* device work that may write them */
static uint64_t		 map_pulled;	/* map_gen when last pulled */

/*
 * Does a call that writes device memory write a mapped buffer?  Where its
 * row says where (RPC_F_DST_RANGE), only if that range meets one.
 */
static int
mapped_hit(const struct rpc_desc *d, const struct rpc_val *in)
{
	uint64_t len;
	int i, hit = 0;

	if (!(d->flags & RPC_F_WRITES_DEV))
		return 0;
	if (!(d->flags & RPC_F_DST_RANGE))
		return 1;
	/* Inputs into ordinary device memory leave them alone. */
	len = d->req[4] == 'B' ? in[4].len : in[4].u;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps && !hit; i++)
		hit = in[3].u < maps[i].dev + maps[i].size &&
		    maps[i].dev < in[3].u + len;
	pthread_mutex_unlock(&map_lock);
	return hit;
}

/* Device work that may write a mapped buffer: the next pull fetches them. */
static void
mapped_touch(int hit)
{
	if (hit)
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
	int hit;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped ||
	    (d = rpc_lookup(type)) == NULL)
		return;
	/*
	 * Work that may read mapped host memory sees its host writes; a
	 * copy from the host into a mapped buffer goes after them, or a
	 * later push of the whole buffer would undo it.
	 */
	hit = mapped_hit(d, in);
	if ((d->flags & RPC_F_READS_DEV) || ((d->flags & RPC_F_WRITES_DEV) &&
	    (!(d->flags & RPC_F_FROM_HOST) || hit)))
		mapped_push();
	mapped_touch(hit);
}

void
mapped_host_write(CUdeviceptr dst, const void *src, size_t n)
{
	int i;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		uint64_t lo, hi;

		if (dst >= m->dev + m->size || m->dev >= dst + n)
			continue;
		lo = dst > m->dev ? dst : m->dev;
		hi = dst + n < m->dev + m->size ? dst + n : m->dev + m->size;
		/*
		 * Into both sides: a push of the host's other changes
		 * (before the copy is sent) then carries these bytes too.
		 */
		memmove(m->host + (lo - m->dev), (const uint8_t *)src +
		    (lo - dst), hi - lo);
		memcpy(m->shadow + (lo - m->dev), m->host + (lo - m->dev),
		    hi - lo);
	}
	pthread_mutex_unlock(&map_lock);
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
mapped_alloc(void **pp, size_t size, unsigned flags, int managed)
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
	else if (managed) {
		/* Managed memory is one pointer for both sides, or none. */
		log_warn("cuMemAllocManaged: the device's address is taken "
		    "here: refused");
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	} else if (posix_memalign(&p, 4096, len) != 0) {
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	} else
		memset(p, 0, len);
	m.host = p;
	m.managed = managed;
	m.preferred = m.prefetched = -2;
	if (managed) {
		/* Its registry entry says so (pointer queries, cuMemFree). */
		mem_del(m.dev, 0);
		mem_add(m.dev, size, m.ctx, 0, MEM_F_MANAGED);
	}
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
	if (m.managed) {
		/* cuMemFree would come back here. */
		mem_del(m.dev, 0);
		if (m.ctx->live)
			mem_add(m.dev, m.size, m.ctx, 0, 0);
	}
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
	struct alloc a;
	int i, tries;

	if (d == NULL || p == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (tries = 0; tries < 2; tries++) {
		pthread_mutex_lock(&map_lock);
		for (i = 0; i < nmaps; i++)
			if (b >= maps[i].host &&
			    b < maps[i].host + maps[i].size) {
				*d = maps[i].dev +
				    (CUdeviceptr)(b - maps[i].host);
				pthread_mutex_unlock(&map_lock);
				return CUDA_SUCCESS;
			}
		pthread_mutex_unlock(&map_lock);
		/*
		 * On a GPU with unified addressing every registration is
		 * mapped, DEVICEMAP or not (the H200's driver gives the
		 * pointer): one registered without it becomes mapped
		 * memory when its device pointer is first asked for, so
		 * registrations for copies alone stay cheap.
		 */
		if (tries > 0 || mem_lookup((uintptr_t)p, &a) == -1 ||
		    a.host != 2 || mem_del(a.base, 2) == -1)
			break;
		if (mapped_register((void *)(uintptr_t)a.base, a.size,
		    a.flags | CU_MEMHOSTREGISTER_DEVICEMAP) != CUDA_SUCCESS) {
			/* Too large to mirror: registered as before. */
			mem_add(a.base, a.size, a.ctx, 2, a.flags);
			break;
		}
	}
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
		return mapped_alloc(pp, size, flags, 0);
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

/* ---- managed memory ---------------------------------------------------- */

/*
 * cuMemAllocManaged: mapped memory whose host side sits at its device
 * address, so that one pointer serves the host and kernels, coherent at
 * the same points (gleam-client(7)): the host's writes go to the device
 * before work that may read them, the device's come back after the host
 * waited for it.  Advice and prefetches are kept for their queries and
 * change nothing else.
 */
CUresult
mapped_managed_alloc(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	void *p;
	CUresult rc;

	if ((rc = mapped_alloc(&p, size, flags, 1)) == CUDA_SUCCESS)
		*dptr = (uintptr_t)p;
	return rc;
}

int
mapped_managed_free(CUdeviceptr p)
{
	return mapped_free((void *)(uintptr_t)p);
}

CUresult
cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (dptr == NULL || size == 0 || (flags != CU_MEM_ATTACH_GLOBAL &&
	    flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	return mapped_managed_alloc(dptr, size, flags);
}

/* The managed buffer holding [p, p + n), or NULL; with map_lock held. */
static struct mapped *
managed_find(CUdeviceptr p, size_t n)
{
	int i;

	for (i = 0; i < nmaps; i++)
		if (maps[i].managed && p >= maps[i].dev &&
		    p - maps[i].dev < maps[i].size &&
		    n <= maps[i].size - (p - maps[i].dev))
			return &maps[i];
	return NULL;
}

/* A location as a device number: -1 the host, -2 none; -3 if invalid. */
static int
managed_loc(CUmemLocation l)
{
	switch (l.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return client_device(l.id) != NULL ? l.id : -3;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return -1;
	default:
		return -3;
	}
}

CUresult
cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice,
    CUmemLocation loc)
{
	struct mapped *m;
	CUresult rc;
	int dev = -2;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
	    advice == CU_MEM_ADVISE_SET_ACCESSED_BY ||
	    advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		if ((dev = managed_loc(loc)) == -3)
			return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (advice) {
	case CU_MEM_ADVISE_SET_READ_MOSTLY:
	case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
		m->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
		break;
	case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
		m->preferred = dev;
		break;
	case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
		m->preferred = -2;
		break;
	case CU_MEM_ADVISE_SET_ACCESSED_BY:
	case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
		break;
	default:
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

CUresult
cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
{
	CUmemLocation l;

	l.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST :
	    CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = dev == CU_DEVICE_CPU ? 0 : dev;
	return cuMemAdvise_v2(p, n, advice, l);
}

/* Prefetching changes nothing here: both sides are kept whole. */
static CUresult
prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags,
    CUstream s, int ptsz)
{
	struct mapped *m;
	uint64_t sid;
	CUresult rc;
	int dev;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (n == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((dev = managed_loc(loc)) == -3)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	m->prefetched = dev;
	pthread_mutex_unlock(&map_lock);
	return CUDA_SUCCESS;
}

static CUmemLocation
dev_loc(CUdevice dev)
{
	CUmemLocation l;

	l.type = dev == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST :
	    CU_MEM_LOCATION_TYPE_DEVICE;
	l.id = dev == CU_DEVICE_CPU ? 0 : dev;
	return l;
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) { return prefetch(p, n, dev_loc(dev), 0, s, 0); }
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dev, CUstream s) { return prefetch(p, n, dev_loc(dev), 0, s, 1); }
CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s) { return prefetch(p, n, l, f, s, 0); }
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation l, unsigned int f, CUstream s) { return prefetch(p, n, l, f, s, 1); }

CUresult
cuMemRangeGetAttribute(void *data, size_t len, CUmem_range_attribute a,
    CUdeviceptr p, size_t n)
{
	struct mapped *m;
	CUresult rc;
	size_t i;
	int v;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (data == NULL || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	if ((m = managed_find(p, n)) == NULL) {
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (a) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		v = m->read_mostly;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		v = m->preferred;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		v = m->prefetched;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
		/* No device has been told: every entry is none. */
		pthread_mutex_unlock(&map_lock);
		if (len == 0 || len % 4 != 0)
			return CUDA_ERROR_INVALID_VALUE;
		for (i = 0; i < len / 4; i++)
			((int *)data)[i] = CU_DEVICE_INVALID;
		return CUDA_SUCCESS;
	default:
		pthread_mutex_unlock(&map_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&map_lock);
	if (len != 4)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)data = v;
	return CUDA_SUCCESS;
}

CUresult
cuMemRangeGetAttributes(void **data, size_t *lens,
    CUmem_range_attribute *attrs, size_t na, CUdeviceptr p, size_t n)
{
	size_t i;
	CUresult rc;

	if (data == NULL || lens == NULL || attrs == NULL || na == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < na; i++)
		if ((rc = cuMemRangeGetAttribute(data[i], lens[i], attrs[i], p,
		    n)) != CUDA_SUCCESS)
			return rc;
	return CUDA_SUCCESS;
}

CUresult
cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n,
    unsigned int flags)
{
	struct mapped *m;
	uint64_t sid;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, 0, &sid)) != CUDA_SUCCESS)
		return rc;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	m = managed_find(p, n ? n : 1);
	pthread_mutex_unlock(&map_lock);
	return m != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t n,
    unsigned int flags)
{
	return cuStreamAttachMemAsync(s, p, n, flags);
}
