/*
 * gleam-serve's host backend, driven through its call table as remote.c
 * drives it, without a client library or a socket: each request is packed
 * and unpacked by the call's signature and each reply packed, so the
 * fields are what the wire gives.  The kernels come from the test kernel
 * library (tests/cuda/host-kernels.c): GLEAM_HOST_KERNELS, else
 * host-kernels.so beside this program, else build/tests/host-kernels.so
 * (from the top of the tree).  Built with AddressSanitizer, it also shows
 * that a client going away leaks nothing.
 */
#include <sys/mman.h>

#include <elf.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "backend.h"
#include "host.h"
#include "log.h"
#include "t.h"

#define BUDGET		(64u << 20)
#define N		3000		/* floats in the vectors */

static struct rclient	 cl;
static struct rcall	 c;
static struct pw	 req;
static int		 oneway;	/* the next call's FL_ONEWAY */

#define U(x)	((uint64_t)(x))
#define STR(s)	(s), (unsigned)strlen(s)

/*
 * Calls type with the request's fields: uint64_t for numbers, a pointer
 * and an unsigned length for blobs and strings.  Returns the CUresult;
 * c.out holds the reply's fields until the next call.
 */
static int
call(int type, ...)
{
	const struct rpc_desc *d = rpc_lookup((uint16_t)type);
	struct rpc_val v[RPC_MAX_FIELDS];
	struct pw rep;
	va_list ap;
	int i, rc;

	free(c.scratch);
	pw_free(&c.blob);
	pw_free(&req);
	memset(&c, 0, sizeof c);
	memset(v, 0, sizeof v);
	va_start(ap, type);
	for (i = 0; d->req[i] != '\0'; i++) {
		if (d->req[i] == 'B' || d->req[i] == 'S') {
			v[i].p = va_arg(ap, const void *);
			v[i].len = va_arg(ap, unsigned);
		} else
			v[i].u = va_arg(ap, uint64_t);
	}
	va_end(ap);
	pw_init(&req);
	if (rpc_pack(&req, d->req, v) == -1 ||
	    rpc_unpack(req.p, req.len, d->req, c.in) == -1) {
		fprintf(stderr, "%s: cannot pack the request\n", d->name);
		return -1;
	}
	c.cl = &cl;
	c.d = d;
	c.oneway = oneway;
	pw_init(&c.blob);
	rc = backend_host.call[type - R_OPEN](&c);
	pw_init(&rep);
	if (rc == 0 && rpc_pack(&rep, d->rep, c.out) == -1) {
		fprintf(stderr, "%s: cannot pack the reply\n", d->name);
		rc = -1;
	}
	pw_free(&rep);
	return rc;
}

/* What remote.c does when a client is gone. */
static void
client_end(void)
{
	size_t i = 0;
	uint64_t k;
	void *v;

	backend_host.client_free(&cl);
	while (htab_next(&cl.objs, &i, &k, &v))
		robj_free(v);
	htab_free(&cl.objs);
	free(cl.ranges);
	memset(&cl, 0, sizeof cl);
}

static void
client_start(void)
{
	memset(&cl, 0, sizeof cl);
	htab_init(&cl.objs);
	snprintf(cl.addr, sizeof cl.addr, "test");
	CHECK(backend_host.client_new(&cl) == 0);
}

/*
 * The GPU tier under isolation: process: an exported entry is read-only
 * for whoever holds its descriptor (a worker, the server): a writable
 * mapping, a write, a resize and an mprotect to writable are refused;
 * a copy from it still serves (into dst, n bytes of device memory).
 */
static void
test_gpu_tier(uint64_t dst, size_t n)
{
	struct rcall g;
	uint8_t *src, *back;
	uint64_t asize = 0;
	void *m;
	size_t i;
	int dev = -1, fd = -1;

	src = malloc(n);
	back = malloc(n);
	for (i = 0; i < n; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(&g, 0, sizeof g);
	g.cl = &cl;
	g.in[0].u = 1;			/* ctx, stream, sync, dptr */
	g.in[3].u = dst;
	CHECK(backend_host.gpu_export(&g, src, n, &dev, &fd, &asize) == 0);
	CHECK(dev == 0 && fd >= 0 && asize >= n);
	if (fd < 0)
		goto out;
	errno = 0;
	CHECK(mmap(NULL, asize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) ==
	    MAP_FAILED && errno == EPERM);
	CHECK(mmap(NULL, asize, PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
	errno = 0;
	CHECK(pwrite(fd, "x", 1, 0) == -1 && errno == EPERM);
	CHECK(ftruncate(fd, 0) == -1 && ftruncate(fd, (off_t)asize * 2) == -1);
	m = mmap(NULL, asize, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	if (m != MAP_FAILED) {
		CHECK(memcmp(m, src, n) == 0);
		CHECK(mprotect(m, asize, PROT_READ | PROT_WRITE) == -1);
		munmap(m, asize);
	}
	/* A private copy may be written: it is the writer's alone. */
	m = mmap(NULL, asize, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(m != MAP_FAILED);
	if (m != MAP_FAILED) {
		((uint8_t *)m)[0] ^= 0xff;
		munmap(m, asize);
	}
	/* What a copy from it gives is what was kept. */
	CHECK(backend_host.gpu_import(&g, 0, fd, asize, n) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), U(dst), U(n)) == 0 &&
	    c.out[0].len == n && memcmp(c.out[0].p, src, n) == 0);
	CHECK(backend_host.gpu_import(&g, 1, fd, asize, n) ==
	    CUDA_ERROR_INVALID_DEVICE);
	close(fd);
out:
	free(src);
	free(back);
}

/* A function of a function table: its parameters, -1 if not there. */
static int
ftab_find(const void *blob, size_t len, const char *want, uint32_t *off,
    uint32_t *size, int32_t *attr)
{
	struct pr r;
	char name[RPC_STRING_MAX + 1];
	uint32_t n, i, j, np, na, found = 0, got = 0;

	pr_init(&r, blob, len);
	n = pr_u32(&r);
	for (i = 0; i < n && !r.bad; i++) {
		pr_str(&r, name, RPC_STRING_MAX);
		np = pr_u32(&r);
		found = strcmp(name, want) == 0;
		for (j = 0; j < np && !r.bad; j++) {
			uint32_t o = pr_u32(&r), s = pr_u32(&r);
			if (found && j < 64) {
				off[j] = o;
				size[j] = s;
			}
		}
		na = pr_u32(&r);
		for (j = 0; j < na && !r.bad; j++) {
			uint32_t a = pr_u32(&r);
			if (found && j < CU_FUNC_ATTRIBUTE_MAX)
				attr[j] = (int32_t)a;
		}
		if (found)
			got = np + 1;
		found = 0;
	}
	if (pr_done(&r) == -1)
		return -2;
	return (int)got - 1;
}

/* The device description: one device with an H200's attributes. */
static void
test_describe(void)
{
	struct pw w;
	struct pr r;
	char name[256];
	uint8_t uuid[16];
	uint32_t ndev = 0, version = 0, na, a, attr[CU_DEVICE_ATTRIBUTE_MAX];

	pw_init(&w);
	CHECK(backend_host.describe(&w, &ndev, &version) == 0);
	CHECK(ndev == 1);
	CHECK(version == 13000);
	pr_init(&r, w.p, w.len);
	CHECK(pr_u32(&r) == 1);
	pr_str(&r, name, sizeof name - 1);
	CHECK_STR(name, "Gleam host backend (H200 attributes)");
	pr_bytes(&r, uuid, sizeof uuid);
	CHECK(pr_u64(&r) == BUDGET);
	na = pr_u32(&r);
	CHECK(na == CU_DEVICE_ATTRIBUTE_MAX);
	for (a = 0; a < na && a < CU_DEVICE_ATTRIBUTE_MAX; a++)
		attr[a] = pr_u32(&r);
	CHECK(pr_done(&r) == 0);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] == 132);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] == 9);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR] == 0);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK] == 1024);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] == 64);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] == 2147483647);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE] == 32);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE] == 62914560);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING] == 1);
	CHECK(attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] ==
	    232448);
	pw_free(&w);
}

/* Contexts: the primary one's references, an explicit one. */
static void
test_contexts(void)
{
	CHECK(call(R_PRIMARY_RETAIN, U(1), U(1)) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(call(R_PRIMARY_RETAIN, U(1), U(0)) == 0);
	CHECK(call(R_PRIMARY_RETAIN, U(1), U(0)) == 0);
	CHECK(call(R_PRIMARY_RELEASE, U(1)) == 0);
	CHECK(call(R_CTX_SYNC, U(1)) == 0);
	CHECK(call(R_CTX_SYNC, U(99)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_CTX_CREATE, U(5), U(0), U(0)) == 0);
	CHECK(call(R_CTX_CREATE, U(5), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);		/* the id is taken */
	CHECK(call(R_CTX_SET_LIMIT, U(1), U(CU_LIMIT_STACK_SIZE), U(4096)) ==
	    0);
	CHECK(call(R_CTX_SET_LIMIT, U(1), U(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH),
	    U(4)) == CUDA_ERROR_UNSUPPORTED_LIMIT);
	CHECK(call(R_CTX_SET_LIMIT, U(1), U(CU_LIMIT_SHMEM_SIZE), U(4)) ==
	    CUDA_ERROR_NOT_PERMITTED);
	CHECK(call(R_CTX_SET_LIMIT, U(1), U(CU_LIMIT_MAX), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
}

/* Allocation, copies, frees and the budget. */
/* cuMemGetAllocationGranularity: 2 MiB both ways on the one device. */
static void
test_granularity(void)
{
	CHECK(call(R_MEM_GRANULARITY, U(CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 2u << 20);
	CHECK(call(R_MEM_GRANULARITY, U(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 2u << 20);
	CHECK(call(R_MEM_GRANULARITY, U(2), U(CU_MEM_ALLOCATION_TYPE_PINNED),
	    U(CU_MEM_LOCATION_TYPE_DEVICE), U(0), U(0), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_GRANULARITY, U(0), U(CU_MEM_ALLOCATION_TYPE_PINNED),
	    U(CU_MEM_LOCATION_TYPE_DEVICE), U(7), U(0), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_DEVICE);
}

/* The device queries: a texture's width, the CPU's atomics, no peer. */
static void
test_dev_query(void)
{
	uint32_t a[3] = { CU_AD_FORMAT_FLOAT, 4, 0 }, ops[2] = {
	    CU_ATOMIC_OPERATION_CAS, CU_ATOMIC_OPERATION_FLOAT_MAX };
	uint32_t v;
	uint64_t w;

	CHECK(call(R_DEV_QUERY, U(DEVQ_TEX1D), U(0), a, 8u) == 0);
	CHECK(c.out[0].len == 8);
	memcpy(&w, c.out[0].p, 8);
	CHECK(w == (1u << 28) / 16);
	a[1] = 3;
	CHECK(call(R_DEV_QUERY, U(DEVQ_TEX1D), U(0), a, 8u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_DEV_QUERY, U(DEVQ_TEX1D), U(1), a, 8u) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(call(R_DEV_QUERY, U(DEVQ_HOST_ATOMIC), U(0), ops, 8u) == 0);
	CHECK(c.out[0].len == 8);
	memcpy(&v, c.out[0].p, 4);
	CHECK(v == (CU_ATOMIC_CAPABILITY_SIGNED | CU_ATOMIC_CAPABILITY_UNSIGNED
	    | CU_ATOMIC_CAPABILITY_SCALAR_32 | CU_ATOMIC_CAPABILITY_SCALAR_64));
	memcpy(&v, (const char *)c.out[0].p + 4, 4);
	CHECK(v == (CU_ATOMIC_CAPABILITY_SCALAR_32 |
	    CU_ATOMIC_CAPABILITY_SCALAR_64));
	ops[1] = CU_ATOMIC_OPERATION_MAX;
	CHECK(call(R_DEV_QUERY, U(DEVQ_HOST_ATOMIC), U(0), ops, 8u) ==
	    CUDA_ERROR_INVALID_VALUE);
	a[0] = 0;
	CHECK(call(R_DEV_QUERY, U(DEVQ_P2P_ATOMIC), U(0), a, 8u) ==
	    CUDA_ERROR_INVALID_DEVICE);
}

/* One-way allocation's calls (pool.c over the host backend's mmap). */
static void
test_pool(void)
{
	static unsigned char a[1 << 16];
	uint64_t va, size, gran, before, m = 1u << 20;
	size_t i;

	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	before = c.out[0].u;
	/* Bad requests: no context, need over want, nothing, too much. */
	CHECK(call(R_MEM_POOL, U(99), U(m), U(m)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_MEM_POOL, U(1), U(4 * m), U(2 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_POOL, U(1), U(0), U(2 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_POOL, U(1), U(1) << 50, U(1) << 50) ==
	    CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(call(R_MEM_POOL, U(1), U(BUDGET), U(BUDGET)) ==
	    CUDA_ERROR_OUT_OF_MEMORY);		/* over what is left */
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == before);		/* and nothing kept */
	/* 3 MiB needed, 8 wanted: 8 made, in granules of 2 MiB. */
	CHECK(call(R_MEM_POOL, U(1), U(3 * m), U(8 * m)) == 0);
	CHECK(c.out[0].u == 8 * m);
	gran = c.out[1].u;
	va = c.out[2].u;
	size = c.out[3].u;
	CHECK(gran == 2 * m && va % gran == 0 && size >= 2 * BUDGET);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == before - 8 * m);
	/* Maps: unaligned, outside, more than the stock, then a good one,
	 * then over it. */
	CHECK(call(R_MEM_MAP, U(1), va + 4096, U(4 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_MAP, U(1), va, U(3 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_MAP, U(1), va - gran, U(4 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_MAP, U(1), va + size, U(2 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_MAP, U(1), va, U(10 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_MAP, U(1), va, U(4 * m)) == 0);
	CHECK(call(R_MEM_MAP, U(1), va + 2 * m, U(2 * m)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* It is memory: copies in and out, within its bounds only. */
	for (i = 0; i < sizeof a; i++)
		a[i] = (unsigned char)(i * 13);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), va + 3 * m, a,
	    (unsigned)sizeof a) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), va + 3 * m,
	    U(sizeof a)) == 0);
	CHECK(c.out[0].len == sizeof a && memcmp(c.out[0].p, a,
	    sizeof a) == 0);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), va + 4 * m - 8, a, 16u) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* Trims: more than the stock (4 MiB), unaligned, then 2 MiB. */
	CHECK(call(R_MEM_TRIM, U(1), U(6 * m)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_TRIM, U(1), U(m)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_TRIM, U(1), U(2 * m)) == 0);
	/* Frees: not the start, the start, twice. */
	CHECK(call(R_MEM_FREE, U(1), va + gran) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_FREE, U(1), va) == 0);
	CHECK(call(R_MEM_FREE, U(1), va) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), va, U(16)) ==
	    CUDA_ERROR_INVALID_VALUE);		/* gone */
	/* Its granules are stock again: 6 MiB map where 4 did. */
	CHECK(call(R_MEM_MAP, U(1), va + 2 * m, U(6 * m)) == 0);
	CHECK(call(R_MEM_FREE, U(1), va + 2 * m) == 0);
	CHECK(call(R_MEM_TRIM, U(1), U(6 * m)) == 0);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == before);
}

static void
test_memory(uint64_t *da, uint64_t *db, uint64_t *dc)
{
	static float a[N], b[N];
	uint64_t p, q, before, f;
	int i;

	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[1].u == BUDGET);
	before = c.out[0].u;
	CHECK(call(R_MEM_ALLOC, U(1), U(N * 4)) == 0);
	*da = c.out[0].u;
	CHECK(call(R_MEM_ALLOC, U(1), U(N * 4)) == 0);
	*db = c.out[0].u;
	CHECK(call(R_MEM_ALLOC, U(1), U(N * 4)) == 0);
	*dc = c.out[0].u;
	CHECK(*da % 256 == 0 && *db % 256 == 0 && *dc % 256 == 0);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	f = (N * 4 + 255) / 256 * 256;
	CHECK(c.out[0].u == before - 3 * f);
	CHECK(call(R_MEM_ALLOC, U(1), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_ALLOC, U(1), U(1) << 50) ==
	    CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(call(R_MEM_ALLOC, U(1), U(BUDGET)) ==
	    CUDA_ERROR_OUT_OF_MEMORY);		/* over what is left */
	CHECK(call(R_MEM_ALLOC, U(99), U(16)) == CUDA_ERROR_INVALID_CONTEXT);
	/* Page-locked memory of the server's: the host's memory here, as
	 * any; a range of the client's, freed by cuMemFree. */
	CHECK(call(R_MEM_ALLOC_HOST, U(1), U(4096)) == 0);
	q = c.out[0].u;
	CHECK(q != 0);
	CHECK(call(R_MEMSET, U(1), U(0), U(0), U(q), U(4096), U(7), U(1),
	    U(4096), U(1)) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), U(q + 4092), U(4)) == 0);
	CHECK(c.out[0].len == 4 && memcmp(c.out[0].p, "\7\7\7\7", 4) == 0);
	CHECK(call(R_MEM_FREE, U(1), U(q)) == 0);
	CHECK(call(R_MEM_FREE, U(1), U(q)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_ALLOC_HOST, U(99), U(16)) ==
	    CUDA_ERROR_INVALID_CONTEXT);

	for (i = 0; i < N; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)((N - i) % 777) * 0.25f;
	}
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), *da, a, (unsigned)sizeof a) ==
	    0);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(1), *db, b, (unsigned)sizeof b) ==
	    0);
	/* Past the end, before the start, nowhere, on a stream not there. */
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), *da + N * 4 - 2, a, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), *da - 4, a, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), U(0x10), a, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_HTOD, U(1), U(77), U(0), *da, a, 4u) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), *da + 4, U(N * 4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), *da, U(N * 4)) == 0);
	CHECK(c.out[0].len == N * 4 && memcmp(c.out[0].p, a, N * 4) == 0);

	/* Device to device, in bounds and not. */
	CHECK(call(R_MEM_ALLOC, U(1), U(64)) == 0);
	p = c.out[0].u;
	CHECK(call(R_MEM_DTOD, U(1), U(0), U(0), p, *da + 8, U(64)) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), p, U(64)) == 0);
	CHECK(memcmp(c.out[0].p, &a[2], 64) == 0);
	CHECK(call(R_MEM_DTOD, U(1), U(0), U(0), p, *da, U(65)) ==
	    CUDA_ERROR_INVALID_VALUE);

	/* Frees: wrong pointers, twice, and NULL. */
	CHECK(call(R_MEM_FREE, U(1), U(0x1234)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_FREE, U(1), p + 4) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_FREE, U(1), p) == 0);
	CHECK(call(R_MEM_FREE, U(1), p) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_FREE, U(1), U(0)) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), p, U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);

	/* Memory of the explicit context, freed through the primary one. */
	CHECK(call(R_MEM_ALLOC, U(5), U(100)) == 0);
	q = c.out[0].u;
	CHECK(call(R_MEM_FREE, U(1), q) == 0);
	/* And memory that goes with its context. */
	CHECK(call(R_MEM_ALLOC, U(5), U(100)) == 0);
	q = c.out[0].u;
	CHECK(call(R_MEM_HTOD, U(5), U(0), U(0), q, a, 100u) == 0);
	CHECK(call(R_CTX_DESTROY, U(5)) == 0);
	CHECK(call(R_CTX_DESTROY, U(5)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), q, a, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == before - 3 * f);
}

/* Pitched memory, 2D memsets and a 2D copy through R_MEM_3D. */
/*
 * Virtual memory management (vmm.c over the host backend's memory
 * files): mappings are the client's memory, adjacent ones as one range;
 * bytes stay with their allocation when it is mapped elsewhere.
 */
static void
test_vmm(void)
{
	const uint64_t g = 2u << 20;
	uint8_t acc[12] = { CU_MEM_LOCATION_TYPE_DEVICE, 0, 0, 0, 0, 0, 0, 0,
	    CU_MEM_ACCESS_FLAGS_PROT_READWRITE, 0, 0, 0 };
	uint64_t va, before;

	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	before = c.out[0].u;

	CHECK(call(R_VMM_RESERVE, U(1), U(g + 4096), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_RESERVE, U(1), U(4 * g), U(0), U(0), U(0)) == 0);
	va = c.out[0].u;
	CHECK(va % g == 0);
	CHECK(call(R_VMM_CREATE, U(1), U(500), U(2 * g), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	CHECK(call(R_VMM_CREATE, U(1), U(500), U(2 * g), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_CREATE, U(1), U(501), U(2 * g), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(3), U(0), U(0), U(0), U(0)) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(call(R_VMM_CREATE, U(1), U(501), U(g + 1), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_CREATE, U(1), U(501), U(2 * g), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	/* Only into the client's reservation, of its allocations. */
	CHECK(call(R_VMM_MAP, U(1), U(va + 4 * g), U(g), U(0), U(500),
	    U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_MAP, U(1), U(va), U(g), U(0), U(502), U(0)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	/* Past the allocation: NOT_SUPPORTED, as the H200's 580 driver. */
	CHECK(call(R_VMM_MAP, U(1), U(va), U(4 * g), U(0), U(500), U(0)) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	CHECK(call(R_VMM_MAP, U(1), U(va + 4096), U(g), U(0), U(500),
	    U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_MAP, U(1), U(va), U(2 * g), U(0), U(500), U(0)) ==
	    0);
	CHECK(call(R_VMM_MAP, U(1), U(va + g), U(2 * g), U(0), U(501),
	    U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(rmem_check(&cl, va, 2 * g) == 0);
	CHECK(rmem_check(&cl, va, 2 * g + 1) == -1);
	CHECK(call(R_VMM_MAP, U(1), U(va + 2 * g), U(2 * g), U(0), U(501),
	    U(0)) == 0);
	CHECK(rmem_check(&cl, va + g, 2 * g) == 0);
	CHECK(call(R_VMM_SET_ACCESS, U(1), U(va), U(4 * g), acc, 12u) == 0);
	CHECK(call(R_VMM_GET_ACCESS, U(1), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(va + 3 * g)) == 0);
	CHECK(c.out[0].u == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	memset((void *)(uintptr_t)va, 0x11, 2 * g);
	memset((void *)(uintptr_t)(va + 2 * g), 0x22, 2 * g);
	/* cuMemFree does not free a mapping. */
	CHECK(call(R_MEM_FREE, U(1), U(va)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_UNMAP, U(1), U(va), U(g)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_FREE, U(1), U(va), U(4 * g)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* Released while mapped: the bytes stay until unmapped. */
	CHECK(call(R_VMM_RELEASE, U(1), U(500)) == 0);
	CHECK(call(R_VMM_RELEASE, U(1), U(500)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(((uint8_t *)(uintptr_t)va)[g] == 0x11);
	CHECK(call(R_VMM_UNMAP, U(1), U(va), U(4 * g)) == 0);
	CHECK(rmem_check(&cl, va, 1) == -1);
	CHECK(rmem_check(&cl, va + 2 * g, 1) == -1);
	CHECK(call(R_VMM_MAP, U(1), U(va + g), U(g), U(g), U(501), U(0)) ==
	    0);
	CHECK(((uint8_t *)(uintptr_t)(va + g))[5] == 0x22);
	CHECK(call(R_VMM_FREE, U(1), U(va), U(4 * g)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_UNMAP, U(1), U(va + g), U(g)) == 0);
	CHECK(call(R_VMM_RELEASE, U(1), U(501)) == 0);
	CHECK(call(R_VMM_FREE, U(1), U(va), U(2 * g)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_VMM_FREE, U(1), U(va), U(4 * g)) == 0);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == before);	/* the budget is back */
}

static void
test_pitch(void)
{
	uint64_t p, pitch, d[20];
	uint8_t host[8 * 100], back[8 * 100];
	const uint8_t *row;
	uint16_t v;
	int i, ok;

	CHECK(call(R_MEM_ALLOC_PITCH, U(1), U(100), U(8), U(4)) == 0);
	p = c.out[0].u;
	pitch = c.out[1].u;
	CHECK(pitch == 512 && p % 256 == 0);
	CHECK(call(R_MEM_ALLOC_PITCH, U(1), U(100), U(8), U(3)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEM_ALLOC_PITCH, U(1), U(0), U(8), U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);

	/* 50 halves of 0xabcd in each of 8 rows, then a row too many. */
	CHECK(call(R_MEMSET, U(1), U(0), U(0), p, pitch, U(0xabcd), U(2),
	    U(50), U(8)) == 0);
	CHECK(call(R_MEMSET, U(1), U(0), U(0), p, pitch, U(0), U(2), U(50),
	    U(9)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEMSET, U(1), U(0), U(0), p, pitch, U(0), U(3), U(50),
	    U(8)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MEMSET, U(1), U(0), U(0), p, U(4), U(0), U(2), U(50),
	    U(8)) == CUDA_ERROR_INVALID_VALUE);	/* pitch under the width */
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), p, U(pitch * 8)) == 0);
	ok = 1;
	for (i = 0; i < 8; i++) {
		row = (const uint8_t *)c.out[0].p + i * pitch;
		memcpy(&v, row + 98, 2);
		ok &= v == 0xabcd && row[100] == 0;
	}
	CHECK(ok);

	/* Host 100 x 8 (pitch 100) to device at (x 12, y 0), and back. */
	for (i = 0; i < (int)sizeof host; i++)
		host[i] = (uint8_t)(i * 7);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_HOST; d[5] = 100; d[6] = 8;
	d[7] = CU_MEMORYTYPE_DEVICE; d[8] = 12; d[11] = p; d[12] = pitch;
	d[13] = 8;
	d[14] = 88; d[15] = 8; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, host,
	    (unsigned)sizeof host) == 0);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_DEVICE; d[1] = 12; d[4] = p; d[5] = pitch;
	d[6] = 8;
	d[7] = CU_MEMORYTYPE_HOST; d[12] = 100; d[13] = 8;
	d[14] = 88; d[15] = 8; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	CHECK(c.out[0].len == 7 * 100 + 88);
	memset(back, 0, sizeof back);
	memcpy(back, c.out[0].p, c.out[0].len < sizeof back ?
	    c.out[0].len : sizeof back);
	ok = 1;
	for (i = 0; i < 8; i++)
		ok &= memcmp(back + i * 100, host + i * 100, 88) == 0;
	CHECK(ok);
	/* A row past the allocation; a pitch that wraps the span. */
	d[15] = 9;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	d[15] = 8;
	d[5] = UINT64_MAX / 4;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	d[5] = pitch;
	d[2] = UINT64_MAX / pitch + 1;	/* srcY: wraps to a small span */
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	d[2] = 0;
	d[14] = 0;			/* nothing to copy */
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	CHECK(call(R_MEM_FREE, U(1), p) == 0);
}

/*
 * Arrays as the host backend lays them out: copies in and out of a 2D
 * array at offsets, out of its bounds, array to array; a mipmapped
 * array's levels; texture and surface objects made and destroyed; what
 * is refused.
 */
static void
test_arrays(void)
{
	uint64_t d[20], tex, p;
	uint8_t host[10 * 6 * 4], back[sizeof host];
	struct rpc_res r;
	struct rpc_texd t;
	struct pw rb, tb;
	int i, ok;

	/* 10 x 6 floats, a 3D array of 4 x 2 x 3 uchar4 */
	CHECK(call(R_ARRAY_CREATE, U(1), U(80), U(10), U(6), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(0)) == 0);
	CHECK(call(R_ARRAY_CREATE, U(1), U(81), U(4), U(2), U(3),
	    U(CU_AD_FORMAT_UNSIGNED_INT8), U(4), U(CUDA_ARRAY3D_SURFACE_LDST),
	    U(0)) == 0);
	/* the same id again; no such context; a format laid out by the
	 * driver alone */
	CHECK(call(R_ARRAY_CREATE, U(1), U(80), U(10), U(6), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_ARRAY_CREATE, U(99), U(82), U(10), U(6), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_ARRAY_CREATE, U(1), U(82), U(64), U(64), U(0),
	    U(CU_AD_FORMAT_NV12), U(3), U(0), U(0)) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	/* larger than the budget */
	CHECK(call(R_ARRAY_CREATE, U(1), U(82), U(1u << 20), U(1u << 10),
	    U(0), U(CU_AD_FORMAT_FLOAT), U(4), U(0), U(0)) ==
	    CUDA_ERROR_OUT_OF_MEMORY);

	/* Host (packed 10 x 6 floats) into array 80, whole. */
	for (i = 0; i < (int)sizeof host; i++)
		host[i] = (uint8_t)(i * 13 + 1);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_HOST; d[5] = 40; d[6] = 6;
	d[7] = CU_MEMORYTYPE_ARRAY; d[11] = 80;
	d[14] = 40; d[15] = 6; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, host,
	    (unsigned)sizeof host) == 0);
	/* 3 x 2 floats at (x 4, y 3) back */
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_ARRAY; d[1] = 16; d[2] = 3; d[4] = 80;
	d[7] = CU_MEMORYTYPE_HOST; d[12] = 12; d[13] = 2;
	d[14] = 12; d[15] = 2; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	CHECK(c.out[0].len == 24 &&
	    memcmp(c.out[0].p, host + 3 * 40 + 16, 12) == 0 &&
	    memcmp((const uint8_t *)c.out[0].p + 12, host + 4 * 40 + 16,
	    12) == 0);
	/* past the width, the height; a 2D array has one slice */
	d[1] = 32;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	d[1] = 16; d[2] = 5;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	d[2] = 3; d[3] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	/* an array that is none; one of another kind's id */
	d[3] = 0; d[4] = 83;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_HANDLE);
	d[4] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == CUDA_ERROR_INVALID_HANDLE);
	/* array 80 to device memory, to array 81 (all 24 bytes of each of
	 * its 3 slices: 4 uchar4 x 2 rows from 80's rows), then back */
	CHECK(call(R_MEM_ALLOC, U(1), U(240)) == 0);
	p = c.out[0].u;
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_ARRAY; d[4] = 80;
	d[7] = CU_MEMORYTYPE_DEVICE; d[11] = p; d[12] = 40; d[13] = 6;
	d[14] = 40; d[15] = 6; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_DEVICE; d[4] = p; d[5] = 16; d[6] = 2;
	d[7] = CU_MEMORYTYPE_ARRAY; d[11] = 81;
	d[14] = 16; d[15] = 2; d[16] = 3;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_ARRAY; d[4] = 81;
	d[7] = CU_MEMORYTYPE_HOST; d[12] = 16; d[13] = 2;
	d[14] = 16; d[15] = 2; d[16] = 3;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	CHECK(c.out[0].len == 96 && memcmp(c.out[0].p, host, 96) == 0);
	/* array to array: 81's slice 2 row 1 to 80's row 0 at x 8 */
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_ARRAY; d[2] = 1; d[3] = 2; d[4] = 81;
	d[7] = CU_MEMORYTYPE_ARRAY; d[8] = 8; d[11] = 80;
	d[14] = 16; d[15] = 1; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_ARRAY; d[4] = 80;
	d[7] = CU_MEMORYTYPE_HOST; d[12] = 40; d[13] = 6;
	d[14] = 40; d[15] = 6; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, NULL,
	    0u) == 0);
	memcpy(back, host, sizeof back);
	memcpy(back + 8, host + 5 * 16, 16);
	CHECK(c.out[0].len == sizeof back &&
	    memcmp(c.out[0].p, back, sizeof back) == 0);
	CHECK(call(R_MEM_FREE, U(1), p) == 0);

	/* A mipmapped 16 x 8 of 5 levels: extents halved down to 1. */
	CHECK(call(R_ARRAY_CREATE, U(1), U(84), U(16), U(8), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(5)) == 0);
	ok = 1;
	for (i = 0; i < 5; i++) {
		ok &= call(R_MIPMAP_LEVEL, U(84), U(i), U(90 + i)) == 0;
		ok &= c.out[0].u == (16u >> i) && c.out[1].u ==
		    (8u >> i ? 8u >> i : 1) && c.out[2].u == 0;
	}
	CHECK(ok);
	CHECK(call(R_MIPMAP_LEVEL, U(84), U(4), U(94)) == 0);
	CHECK(call(R_MIPMAP_LEVEL, U(84), U(5), U(95)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_MIPMAP_LEVEL, U(84), U(3), U(94)) ==
	    CUDA_ERROR_INVALID_VALUE);	/* another level's id */
	CHECK(call(R_MIPMAP_LEVEL, U(80), U(0), U(95)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	/* level 1 (8 x 4) written and read as an array */
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_HOST; d[5] = 32; d[6] = 4;
	d[7] = CU_MEMORYTYPE_ARRAY; d[11] = 91;
	d[14] = 32; d[15] = 4; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, host,
	    128u) == 0);
	d[15] = 5;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, host,
	    160u) == CUDA_ERROR_INVALID_VALUE);
	/* a level is its mipmapped array's, not destroyed by itself */
	CHECK(call(R_ARRAY_DESTROY, U(91), U(0)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_ARRAY_MEMREQ, U(84), U(1), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);

	/* Texture and surface objects. */
	pw_init(&rb);
	pw_init(&tb);
	memset(&r, 0, sizeof r);
	memset(&t, 0, sizeof t);
	r.type = CU_RESOURCE_TYPE_ARRAY;
	r.h = 80;
	rpc_res_enc(&rb, &r);
	rpc_texd_enc(&tb, &t);
	CHECK(call(R_TEX_CREATE, U(1), U(100), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == 0);
	tex = c.out[0].u;
	CHECK(tex != 0);
	/* a surface needs an array for load and store */
	CHECK(call(R_TEX_CREATE, U(1), U(101), U(1), rb.p, (unsigned)rb.len, NULL, 0u,
	    NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	r.h = 81;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(101), U(1), rb.p, (unsigned)rb.len, NULL, 0u,
	    NULL, 0u) == 0);
	CHECK(c.out[0].u != tex);
	CHECK(call(R_TEX_DESTROY, U(101), U(1)) == 0);
	/* a texture's handle is no surface's; twice is once too many */
	CHECK(call(R_TEX_DESTROY, U(100), U(1)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_TEX_DESTROY, U(100), U(0)) == 0);
	CHECK(call(R_TEX_DESTROY, U(100), U(0)) == CUDA_ERROR_INVALID_VALUE);
	/* over a mipmapped array, by the wrong kind, a destroyed array */
	r.type = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
	r.h = 84;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(102), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == 0);
	tex = c.out[0].u;
	/* an id in use */
	CHECK(call(R_TEX_CREATE, U(1), U(102), U(0), rb.p, (unsigned)rb.len,
	    tb.p, (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	r.h = 80;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(103), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_ARRAY_DESTROY, U(81), U(0)) == 0);
	CHECK(call(R_ARRAY_DESTROY, U(81), U(0)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	r.type = CU_RESOURCE_TYPE_ARRAY;
	r.h = 81;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(103), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_HANDLE);
	/* linear memory: inside the client's, pitch aligned */
	CHECK(call(R_MEM_ALLOC, U(1), U(4096)) == 0);
	p = c.out[0].u;
	memset(&r, 0, sizeof r);
	r.type = CU_RESOURCE_TYPE_LINEAR;
	r.h = p;
	r.format = CU_AD_FORMAT_FLOAT;
	r.channels = 1;
	r.width = 4096;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(104), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == 0);
	CHECK(call(R_TEX_DESTROY, U(104), U(0)) == 0);
	r.width = 4100;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(105), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	r.type = CU_RESOURCE_TYPE_PITCH2D;
	r.width = 16;
	r.height = 16;
	r.pitch = 80;		/* not a multiple of 32 */
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(105), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	r.pitch = 64;
	rb.len = 0;
	rpc_res_enc(&rb, &r);
	CHECK(call(R_TEX_CREATE, U(1), U(105), U(0), rb.p, (unsigned)rb.len, tb.p,
	    (unsigned)tb.len, NULL, 0u) == 0);
	CHECK(call(R_TEX_DESTROY, U(105), U(0)) == 0);
	CHECK(call(R_MEM_FREE, U(1), p) == 0);
	pw_free(&rb);
	pw_free(&tb);
	/* The mipmapped array goes with its levels; the texture stays (the
	 * client ends with it held). */
	CHECK(call(R_ARRAY_DESTROY, U(84), U(1)) == 0);
	CHECK(call(R_MIPMAP_LEVEL, U(84), U(0), U(96)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	memset(d, 0, sizeof d);
	d[0] = CU_MEMORYTYPE_HOST; d[5] = 32; d[6] = 4;
	d[7] = CU_MEMORYTYPE_ARRAY; d[11] = 91;
	d[14] = 32; d[15] = 4; d[16] = 1;
	CHECK(call(R_MEM_3D, U(1), U(0), U(0), d, (unsigned)sizeof d, host,
	    128u) == CUDA_ERROR_INVALID_HANDLE);
	(void)tex;
}

/* Texture references' state, and sparse arrays refused (issue 24). */
static void
test_texref(void)
{
	uint8_t border[RPC_TREF_BORDER_LEN], desc[RPC_TREF2D_LEN];
	uint8_t map[RPC_MAPINFO_LEN];
	uint64_t p, pitch;
	struct rpc_mapinfo mi;
	struct pw w;

	CHECK(call(R_TEXREF_NEW, U(1), U(200), U(0), U(0), STR("")) == 0);
	CHECK(call(R_TEXREF_NEW, U(1), U(200), U(0), U(0), STR("")) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* a module's: none found by name; no module */
	CHECK(call(R_MODULE_LOAD, U(1), U(201), STR("x")) == 0);
	CHECK(call(R_TEXREF_NEW, U(1), U(202), U(201), U(0), STR("tex")) ==
	    CUDA_ERROR_NOT_FOUND);
	CHECK(call(R_TEXREF_NEW, U(1), U(202), U(299), U(1), STR("s")) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_MODULE_UNLOAD, U(201)) == 0);
	/* defaults, then set and read back */
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_FORMAT), U(0)) == 0 &&
	    c.out[0].u == CU_AD_FORMAT_UNSIGNED_INT8 && c.out[1].u == 1);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_FORMAT), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(2), NULL, 0u) == 0);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ADDRMODE), U(2),
	    U(CU_TR_ADDRESS_MODE_BORDER), U(0), NULL, 0u) == 0);
	/* A mode past the last is taken, as the driver 580 takes it. */
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ADDRMODE), U(0), U(9),
	    U(0), NULL, 0u) == 0);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_FLAGS), U(0), U(0x100),
	    U(0), NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	memset(border, 0x3f, sizeof border);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_BORDER), U(0), U(0), U(0),
	    border, (unsigned)sizeof border) == 0);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_FORMAT), U(0)) == 0 &&
	    c.out[0].u == CU_AD_FORMAT_FLOAT && c.out[1].u == 2);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_ADDRMODE), U(2)) == 0 &&
	    c.out[0].u == CU_TR_ADDRESS_MODE_BORDER);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_BORDER), U(0)) == 0 &&
	    c.out[2].len == sizeof border &&
	    memcmp(c.out[2].p, border, sizeof border) == 0);
	/* bound to nothing, then to an array (its format taken over) */
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_ARRAY), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_ARRAY_CREATE, U(1), U(203), U(16), U(0), U(0),
	    U(CU_AD_FORMAT_UNSIGNED_INT16), U(4), U(0), U(0)) == 0);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ARRAY),
	    U(CU_TRSA_OVERRIDE_FORMAT), U(203), U(0), NULL, 0u) == 0);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_ARRAY), U(0)) == 0 &&
	    c.out[0].u == 203);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_FORMAT), U(0)) == 0 &&
	    c.out[0].u == CU_AD_FORMAT_UNSIGNED_INT16 && c.out[1].u == 4);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_ADDRESS), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* pitched memory: its rows in the client's memory, aligned */
	CHECK(call(R_MEM_ALLOC_PITCH, U(1), U(128), U(16), U(4)) == 0);
	p = c.out[0].u;
	pitch = c.out[1].u;
	pw_init(&w);
	pw_u64(&w, 32);
	pw_u64(&w, 16);
	pw_u32(&w, CU_AD_FORMAT_FLOAT);
	pw_u32(&w, 1);
	memcpy(desc, w.p, sizeof desc);
	pw_free(&w);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ADDRESS2D), U(0), p, pitch,
	    desc, (unsigned)sizeof desc) == 0);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ADDRESS2D), U(0), p,
	    pitch + 1, desc, (unsigned)sizeof desc) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_TEXREF_SET, U(200), U(TREF_ADDRESS2D), U(0), p,
	    pitch * 4, desc, (unsigned)sizeof desc) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_TEXREF_GET, U(200), U(TREF_ADDRESS), U(0)) == 0 &&
	    c.out[0].u == p);
	/* sparse: refused where made; none to ask or map */
	CHECK(call(R_ARRAY_CREATE, U(1), U(204), U(1024), U(1024), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(CUDA_ARRAY3D_SPARSE), U(0)) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	CHECK(call(R_ARRAY_SPARSE, U(203), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_ARRAY_SPARSE, U(204), U(0)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	memset(&mi, 0, sizeof mi);
	mi.restype = CU_RESOURCE_TYPE_ARRAY;
	mi.res = 203;
	mi.memop = CU_MEM_OPERATION_TYPE_MAP;
	mi.mem = 299;
	pw_init(&w);
	rpc_mapinfo_enc(&w, &mi);
	CHECK(w.len == sizeof map);
	memcpy(map, w.p, sizeof map);
	pw_free(&w);
	CHECK(call(R_MAP_ARRAY, U(1), U(0), map, (unsigned)sizeof map) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_MAP_ARRAY, U(1), U(0), map, 7u) ==
	    CUDA_ERROR_INVALID_VALUE);
	mi.memop = CU_MEM_OPERATION_TYPE_UNMAP;
	pw_init(&w);
	rpc_mapinfo_enc(&w, &mi);
	memcpy(map, w.p, sizeof map);
	pw_free(&w);
	CHECK(call(R_MAP_ARRAY, U(1), U(0), map, (unsigned)sizeof map) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_TEXREF_DESTROY, U(200)) == 0);
	CHECK(call(R_TEXREF_DESTROY, U(200)) == CUDA_ERROR_INVALID_HANDLE);
	/* one left for the client's end to free */
	CHECK(call(R_TEXREF_NEW, U(1), U(205), U(0), U(0), STR("")) == 0);
	CHECK(call(R_ARRAY_DESTROY, U(203), U(0)) == 0);
	CHECK(call(R_MEM_FREE, U(1), p) == 0);
}

/*
 * A small cubin: a kernel without a host implementation, vecAdd (which
 * has one), a global with an initial value and one without.
 */
static size_t
make_cubin(uint8_t *buf, size_t cap)
{
	static const char strs[] = "\0_Z9imageonlyv\0g_elfinit\0g_elfzero\0"
	    "_Z6vecAddPKfS0_Pfi";
	Elf64_Ehdr eh;
	Elf64_Shdr sh[6];
	Elf64_Sym sym[5];
	size_t off = sizeof eh, stroff, symoff, textoff, initoff, shoff;

	memset(buf, 0, cap);
	memset(&eh, 0, sizeof eh);
	memset(sh, 0, sizeof sh);
	memset(sym, 0, sizeof sym);
	stroff = off;
	off += sizeof strs;
	off = (off + 7) & ~(size_t)7;
	symoff = off;
	sym[1].st_name = 1;
	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym[1].st_other = 0x10;
	sym[1].st_shndx = 3;
	sym[2].st_name = 15;
	sym[2].st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
	sym[2].st_shndx = 4;
	sym[2].st_size = 8;
	sym[3].st_name = 25;
	sym[3].st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
	sym[3].st_shndx = 5;
	sym[3].st_value = 16;
	sym[3].st_size = 64;
	sym[4].st_name = 35;
	sym[4].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym[4].st_other = 0x10;
	sym[4].st_shndx = 3;
	off += sizeof sym;
	textoff = off;
	off += 16;
	initoff = off;
	off += 8;
	shoff = (off + 7) & ~(size_t)7;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = stroff;
	sh[1].sh_size = sizeof strs;
	sh[2].sh_type = SHT_SYMTAB;
	sh[2].sh_offset = symoff;
	sh[2].sh_size = sizeof sym;
	sh[2].sh_link = 1;
	sh[2].sh_entsize = sizeof sym[0];
	sh[3].sh_type = SHT_PROGBITS;
	sh[3].sh_offset = textoff;
	sh[3].sh_size = 16;
	sh[4].sh_type = SHT_PROGBITS;
	sh[4].sh_offset = initoff;
	sh[4].sh_size = 8;
	sh[5].sh_type = SHT_NOBITS;
	sh[5].sh_size = 80;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_machine = 190;
	eh.e_shoff = shoff;
	eh.e_shentsize = sizeof sh[0];
	eh.e_shnum = 6;
	if (shoff + sizeof sh > cap)
		return 0;
	memcpy(buf, &eh, sizeof eh);
	memcpy(buf + stroff, strs, sizeof strs);
	memcpy(buf + symoff, sym, sizeof sym);
	memcpy(buf + initoff, "ELFINIT!", 8);
	memcpy(buf + shoff, sh, sizeof sh);
	return shoff + sizeof sh;
}

/* Modules: the function table, functions, globals, a cubin's contents. */
static void
test_modules(void)
{
	static const char fake[] = "not a real image";
	uint8_t img[4096], *cubin = img + 40;
	uint32_t off[64], size[64];
	int32_t attr[CU_FUNC_ATTRIBUTE_MAX];
	uint64_t g;
	size_t n, len;
	int bad;

	CHECK(call(R_MODULE_LOAD, U(1), U(30), fake, 0u) ==
	    CUDA_ERROR_INVALID_IMAGE);
	CHECK(call(R_MODULE_LOAD, U(1), U(30), fake, (unsigned)sizeof fake) ==
	    0);
	memset(attr, 0, sizeof attr);
	CHECK(ftab_find(c.out[0].p, c.out[0].len, "_Z6vecAddPKfS0_Pfi", off,
	    size, attr) == 4);
	CHECK(off[0] == 0 && off[1] == 8 && off[2] == 16 && off[3] == 24);
	CHECK(size[0] == 8 && size[1] == 8 && size[2] == 8 && size[3] == 4);
	CHECK(attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] == 1024);
	CHECK(attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] == 49152);
	CHECK(ftab_find(c.out[0].p, c.out[0].len,
	    "_Z11huge_structj4hugePj", off, size, attr) == 3);
	CHECK(off[0] == 0 && off[1] == 4 && off[2] == 8200 &&
	    size[1] == 8192);
	CHECK(ftab_find(c.out[0].p, c.out[0].len,
	    "_Z11two_structsc6paddeds4al16Py", off, size, attr) == 5);
	CHECK(off[1] == 8 && off[2] == 40 && off[3] == 48 && off[4] == 64);
	CHECK(ftab_find(c.out[0].p, c.out[0].len, "_Z9no_paramsv", off, size,
	    attr) == 0);
	CHECK(ftab_find(c.out[0].p, c.out[0].len, "_Z9imageonlyv", off, size,
	    attr) == -1);
	CHECK(call(R_MODULE_LOAD, U(1), U(30), fake, (unsigned)sizeof fake) ==
	    CUDA_ERROR_INVALID_VALUE);		/* the id is taken */

	CHECK(call(R_MODULE_GET_FUNC, U(30), U(31),
	    STR("_Z6vecAddPKfS0_Pfi")) == 0);
	CHECK(call(R_MODULE_GET_FUNC, U(30), U(32), STR("nope")) ==
	    CUDA_ERROR_NOT_FOUND);
	CHECK(call(R_MODULE_GET_FUNC, U(39), U(32), STR("nope")) ==
	    CUDA_ERROR_INVALID_HANDLE);

	/* Globals of the kernel library's table, with an initial value. */
	CHECK(call(R_MODULE_GET_GLOBAL, U(30), STR("g_init")) == 0);
	g = c.out[0].u;
	CHECK(c.out[1].u == 32);
	CHECK(call(R_MODULE_GET_GLOBAL, U(30), STR("g_init")) == 0);
	CHECK(c.out[0].u == g);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), g, U(8)) == 0);
	CHECK(((const uint32_t *)c.out[0].p)[1] == 2);
	CHECK(call(R_MODULE_GET_GLOBAL, U(30), STR("nope")) ==
	    CUDA_ERROR_NOT_FOUND);
	CHECK(call(R_MEM_FREE, U(1), g) == CUDA_ERROR_INVALID_VALUE);

	/* A fat binary of the same cubin twice, behind a header. */
	memset(img, 0x5a, sizeof img);
	len = make_cubin(cubin, 1500);
	CHECK(len > 0);
	memcpy(cubin + 1600, cubin, len);
	n = 1600 + len + 40;
	CHECK(call(R_MODULE_LOAD, U(1), U(40), img, (unsigned)n) == 0);
	CHECK(ftab_find(c.out[0].p, c.out[0].len, "_Z9imageonlyv", off, size,
	    attr) == 0);
	CHECK(ftab_find(c.out[0].p, c.out[0].len, "_Z6vecAddPKfS0_Pfi", off,
	    size, attr) == 4);
	CHECK(call(R_MODULE_GET_FUNC, U(40), U(41), STR("_Z9imageonlyv")) ==
	    0);
	CHECK(call(R_MODULE_GET_GLOBAL, U(40), STR("g_elfinit")) == 0);
	g = c.out[0].u;
	CHECK(c.out[1].u == 8);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), g, U(8)) == 0);
	CHECK(memcmp(c.out[0].p, "ELFINIT!", 8) == 0);
	CHECK(call(R_MODULE_GET_GLOBAL, U(40), STR("g_elfzero")) == 0);
	CHECK(c.out[1].u == 64);
	CHECK(call(R_LAUNCH, U(1), U(41), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), NULL, 0u) == CUDA_ERROR_NOT_SUPPORTED);
	CHECK(call(R_MODULE_UNLOAD, U(40)) == 0);
	CHECK(call(R_MODULE_UNLOAD, U(40)) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), g, U(8)) ==
	    CUDA_ERROR_INVALID_VALUE);		/* its global went with it */
	CHECK(call(R_LAUNCH, U(1), U(41), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), NULL, 0u) == CUDA_ERROR_INVALID_HANDLE);

	/* Every truncation of the image, and one with junk sections. */
	bad = 0;
	for (n = 1; n < 40 + len; n++) {
		if (call(R_MODULE_LOAD, U(1), U(50), img, (unsigned)n) != 0 ||
		    call(R_MODULE_UNLOAD, U(50)) != 0)
			bad++;
	}
	CHECK(bad == 0);
	((Elf64_Shdr *)(cubin + ((Elf64_Ehdr *)cubin)->e_shoff))[2].sh_size =
	    UINT64_MAX - 7;
	((Elf64_Shdr *)(cubin + ((Elf64_Ehdr *)cubin)->e_shoff))[4].sh_offset =
	    UINT64_MAX - 3;
	CHECK(call(R_MODULE_LOAD, U(1), U(50), img, (unsigned)(40 + len)) ==
	    0);
	CHECK(call(R_MODULE_UNLOAD, U(50)) == 0);
}

/* vecAdd end to end, and the launch checks. */
static void
test_launch(uint64_t da, uint64_t db, uint64_t dc)
{
	static float a[N], b[N];
	uint8_t args[28];
	int32_t n = N;
	const float *got;
	int i, ok;

	memcpy(args, &da, 8);
	memcpy(args + 8, &db, 8);
	memcpy(args + 16, &dc, 8);
	memcpy(args + 24, &n, 4);
	CHECK(call(R_LAUNCH, U(1), U(31), U((N + 255) / 256), U(1), U(1),
	    U(256), U(1), U(1), U(0), U(0), U(0), args, 28u) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), dc, U(N * 4)) == 0);
	got = c.out[0].p;
	ok = 1;
	for (i = 0; i < N; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)((N - i) % 777) * 0.25f;
		ok &= got[i] == a[i] + b[i];
	}
	CHECK(ok);

#define L(gx, gy, gz, bx, by, bz, sh, len)				\
	call(R_LAUNCH, U(1), U(31), U(gx), U(gy), U(gz), U(bx), U(by),	\
	    U(bz), U(sh), U(0), U(0), args, (unsigned)(len))
	CHECK(L(1, 1, 1, 1024, 1, 1, 0, 28) == 0);
	CHECK(L(1, 1, 1, 1025, 1, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 1, 512, 3, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 1, 1, 1, 65, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 1, 0, 1, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(0, 1, 1, 1, 1, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 65536, 1, 1, 1, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 65536, 1, 1, 1, 0, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(2147483648u, 1, 1, 1, 1, 1, 0, 28) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 1, 1, 1, 1, 49152, 28) == 0);
	CHECK(L(1, 1, 1, 1, 1, 1, 49153, 28) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(1, 1, 1, 1, 1, 1, 0, 24) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_FUNC_SET_ATTR, U(31),
	    U(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), U(100000)) ==
	    0);
	CHECK(L(1, 1, 1, 1, 1, 1, 100000, 28) == 0);
	CHECK(call(R_FUNC_SET_ATTR, U(31),
	    U(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), U(232449)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_FUNC_SET_ATTR, U(31), U(CU_FUNC_ATTRIBUTE_NUM_REGS),
	    U(1)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_FUNC_SET_CACHE, U(31), U(CU_FUNC_CACHE_PREFER_L1)) == 0);
#undef L
	CHECK(call(R_LAUNCH, U(1), U(31), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), args, 28u) == 0);
	CHECK(call(R_LAUNCH, U(1), U(77), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), args, 28u) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_LAUNCH, U(1), U(31), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(77), U(0), args, 28u) == CUDA_ERROR_INVALID_HANDLE);
	/* Cooperative: at most 8 blocks of 256 on each of 132 SMs. */
	CHECK(call(R_LAUNCH, U(1), U(31), U(132 * 8), U(1), U(1), U(256),
	    U(1), U(1), U(0), U(0), U(1), args, 28u) == 0);
	CHECK(call(R_LAUNCH, U(1), U(31), U(132 * 8 + 1), U(1), U(1), U(256),
	    U(1), U(1), U(0), U(0), U(1), args, 28u) ==
	    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	CHECK(call(R_OCCUPANCY, U(31), U(256), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 8);
	CHECK(call(R_OCCUPANCY, U(31), U(1024), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 2);
	CHECK(call(R_OCCUPANCY, U(31), U(32), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 32);
	CHECK(call(R_OCCUPANCY, U(31), U(96), U(20000), U(0)) == 0);
	CHECK(c.out[0].u == 11);		/* an H200's answers */
	CHECK(call(R_OCCUPANCY, U(31), U(640), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 3);
	CHECK(call(R_OCCUPANCY, U(31), U(1025), U(0), U(0)) == 0);
	CHECK(c.out[0].u == 0);
	CHECK(call(R_OCCUPANCY, U(31), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_OCCUPANCY, U(31), U(128), U(0), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
}

/* Kernels that use globals, a library's kernel, and a fault. */
static void
test_globals_library(void)
{
	static const char fake[] = "another image";
	uint32_t coef[64], in[256], bias = 1000, got;
	uint64_t gc, gb, din, dout, g1, g2;
	uint8_t args[20];
	int32_t n = 256;
	const uint32_t *out;
	int i, ok;

	CHECK(call(R_MODULE_GET_FUNC, U(30), U(33),
	    STR("_Z10apply_coefPjPKji")) == 0);
	CHECK(call(R_MODULE_GET_GLOBAL, U(30), STR("c_coef")) == 0);
	gc = c.out[0].u;
	CHECK(call(R_MODULE_GET_GLOBAL, U(30), STR("c_bias")) == 0);
	gb = c.out[0].u;
	for (i = 0; i < 64; i++)
		coef[i] = (uint32_t)i * 3 + 1;
	for (i = 0; i < 256; i++)
		in[i] = (uint32_t)i * 11;
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), gc, coef,
	    (unsigned)sizeof coef) == 0);
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), gb, &bias, 4u) == 0);
	CHECK(call(R_MEM_ALLOC, U(1), U(sizeof in)) == 0);
	din = c.out[0].u;
	CHECK(call(R_MEM_ALLOC, U(1), U(sizeof in)) == 0);
	dout = c.out[0].u;
	CHECK(call(R_MEM_HTOD, U(1), U(0), U(0), din, in,
	    (unsigned)sizeof in) == 0);
	memcpy(args, &dout, 8);
	memcpy(args + 8, &din, 8);
	memcpy(args + 16, &n, 4);
	CHECK(call(R_LAUNCH, U(1), U(33), U(2), U(1), U(1), U(128), U(1),
	    U(1), U(0), U(0), U(0), args, 20u) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), dout, U(sizeof in)) == 0);
	out = c.out[0].p;
	ok = 1;
	for (i = 0; i < 256; i++) {
		static const uint32_t init[8] = { 1, 2, 3, 5, 8, 13, 21, 34 };
		ok &= out[i] == in[i] * coef[i % 64] + bias + init[i % 8];
	}
	CHECK(ok);

	/* A library: its kernel, and its global per context. */
	CHECK(call(R_LIBRARY_LOAD, U(1), U(60), fake, (unsigned)sizeof fake) ==
	    0);
	CHECK(call(R_LIBRARY_GET_KERNEL, U(60), U(61), STR("_Z9no_paramsv")) ==
	    0);
	CHECK(call(R_LAUNCH, U(1), U(61), U(3), U(1), U(1), U(64), U(1), U(1),
	    U(0), U(0), U(0), NULL, 0u) == 0);
	CHECK(call(R_LIBRARY_GET_GLOBAL, U(1), U(60), STR("g_noparams")) == 0);
	g1 = c.out[0].u;
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), g1, U(4)) == 0);
	memcpy(&got, c.out[0].p, 4);
	CHECK(got == 3 * 64);
	CHECK(call(R_CTX_CREATE, U(6), U(0), U(0)) == 0);
	CHECK(call(R_LIBRARY_GET_GLOBAL, U(6), U(60), STR("g_noparams")) == 0);
	g2 = c.out[0].u;
	CHECK(g2 != g1);
	CHECK(call(R_LAUNCH, U(6), U(33), U(2), U(1), U(1), U(128), U(1),
	    U(1), U(0), U(0), U(0), args, 20u) ==
	    CUDA_ERROR_INVALID_HANDLE);		/* another context's */
	CHECK(call(R_LAUNCH, U(6), U(61), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), NULL, 0u) == 0);
	CHECK(call(R_CTX_DESTROY, U(6)) == 0);
	CHECK(call(R_MEM_DTOH, U(1), U(0), U(0), g2, U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_LAUNCH, U(1), U(61), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), NULL, 0u) == 0);	/* outlives the context */
	CHECK(call(R_LIBRARY_GET_GLOBAL, U(1), U(60), STR("g_noparams")) == 0);
	CHECK(c.out[0].u == g1);
}

/* Does the last synchronization's reply name stream sid of ctx idle? */
static int
idle_named(uint64_t ctx, uint64_t sid)
{
	struct pr r;
	uint32_t i;

	if (c.out[0].len % 16 != 0)
		return -1;
	pr_init(&r, c.out[0].p, c.out[0].len);
	for (i = 0; i < c.out[0].len / 16; i++)
		if (pr_u64(&r) == ctx && pr_u64(&r) == sid)
			return 1;
	return 0;
}

/* The idle streams a synchronization's reply names (gleam-protocol(5)). */
static void
test_idle_report(void)
{
	CHECK(call(R_STREAM_CREATE, U(1), U(90), U(1), U(0)) == 0);
	CHECK(call(R_STREAM_CREATE, U(1), U(91), U(1), U(0)) == 0);
	CHECK(call(R_STREAM_CREATE, U(1), U(92), U(1), U(0)) == 0);
	CHECK(call(R_CTX_CREATE, U(8), U(0), U(0)) == 0);
	CHECK(call(R_STREAM_CREATE, U(8), U(93), U(1), U(0)) == 0);
	CHECK(call(R_EVENT_CREATE, U(1), U(94), U(0)) == 0);
	/* Named by calls: work on 90 and 91, and 93 in another context. */
	CHECK(call(R_EVENT_RECORD, U(1), U(94), U(90)) == 0);
	CHECK(call(R_STREAM_WAIT_EVENT, U(1), U(91), U(94), U(0)) == 0);
	CHECK(call(R_STREAM_WAIT_EVENT, U(8), U(93), U(94), U(0)) == 0);
	CHECK(call(R_STREAM_SYNC, U(1), U(90)) == 0);
	/* The one synchronized is not named: the client knows it idle. */
	CHECK(idle_named(1, 90) == 0 && idle_named(1, 91) == 1);
	/* Never named: not known.  Another context's: not this one's. */
	CHECK(idle_named(1, 92) == 0 && idle_named(8, 93) == 0);
	/* Found idle before and named by nothing since: named again, by an
	 * event's synchronization and another stream's too. */
	CHECK(call(R_EVENT_SYNC, U(94)) == 0);
	CHECK(idle_named(1, 90) == 1 && idle_named(1, 91) == 1);
	CHECK(call(R_STREAM_SYNC, U(1), U(91)) == 0);
	CHECK(idle_named(1, 90) == 1 && idle_named(1, 91) == 0);
	/* A context's synchronization names none of its own streams (all
	 * idle: the client knows), nor another context's. */
	CHECK(call(R_CTX_SYNC, U(1)) == 0);
	CHECK(c.out[0].len == 0);
	CHECK(call(R_CTX_SYNC, U(8)) == 0);
	CHECK(idle_named(8, 93) == 0 && idle_named(1, 90) == 0);
	/* A destroyed stream is not named. */
	CHECK(call(R_STREAM_DESTROY, U(91)) == 0);
	CHECK(call(R_EVENT_SYNC, U(94)) == 0);
	CHECK(idle_named(1, 90) == 1 && idle_named(1, 91) == 0);
	/* While a stream captures, none is named; after, again. */
	CHECK(call(R_CAPTURE_BEGIN, U(1), U(92), U(CU_STREAM_CAPTURE_MODE_RELAXED),
	    U(95)) == 0);
	CHECK(call(R_STREAM_SYNC, U(1), U(90)) == 0);
	CHECK(c.out[0].len == 0);
	CHECK(call(R_CAPTURE_END, U(1), U(92), U(0)) == 0);
	CHECK(call(R_STREAM_SYNC, U(1), U(90)) == 0);
	CHECK(idle_named(1, 90) == 0 && idle_named(1, 92) == 1);
	/* A failed synchronization names none. */
	CHECK(call(R_STREAM_SYNC, U(1), U(91)) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(c.out[0].len == 0);
	CHECK(call(R_STREAM_DESTROY, U(90)) == 0);
	CHECK(call(R_STREAM_DESTROY, U(92)) == 0);
	CHECK(call(R_STREAM_DESTROY, U(93)) == 0);
	CHECK(call(R_EVENT_DESTROY, U(94)) == 0);
	CHECK(call(R_CTX_DESTROY, U(8)) == 0);
}

static void
test_streams_events(void)
{
	union { uint32_t u; float f; } ms;

	CHECK(call(R_STREAM_CREATE, U(1), U(2), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_STREAM_CREATE, U(1), U(70), U(1), U((uint32_t)-1)) == 0);
	CHECK(call(R_STREAM_SYNC, U(1), U(70)) == 0);
	CHECK(call(R_STREAM_QUERY, U(1), U(70)) == 0);
	CHECK(call(R_EVENT_CREATE, U(1), U(71), U(0)) == 0);
	CHECK(call(R_EVENT_CREATE, U(1), U(72), U(0)) == 0);
	CHECK(call(R_EVENT_CREATE, U(1), U(73), U(CU_EVENT_DISABLE_TIMING)) ==
	    0);
	CHECK(call(R_EVENT_CREATE, U(1), U(74), U(8)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(call(R_EVENT_QUERY, U(71)) == 0);
	CHECK(call(R_EVENT_ELAPSED, U(71), U(72)) ==
	    CUDA_ERROR_INVALID_HANDLE);		/* not recorded */
	CHECK(call(R_EVENT_RECORD, U(1), U(71), U(70)) == 0);
	CHECK(call(R_EVENT_RECORD, U(1), U(72), U(0)) == 0);
	CHECK(call(R_EVENT_RECORD, U(1), U(73), U(2)) == 0);
	CHECK(call(R_EVENT_RECORD, U(1), U(72), U(79)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_STREAM_WAIT_EVENT, U(1), U(70), U(72), U(0)) == 0);
	CHECK(call(R_STREAM_WAIT_EVENT, U(1), U(70), U(72), U(1)) ==
	    CUDA_ERROR_ILLEGAL_STATE);
	CHECK(call(R_EVENT_SYNC, U(72)) == 0);
	CHECK(call(R_EVENT_ELAPSED, U(71), U(72)) == 0);
	ms.u = (uint32_t)c.out[0].u;
	CHECK(ms.f >= 0 && ms.f < 1000);
	CHECK(call(R_EVENT_ELAPSED, U(71), U(73)) ==
	    CUDA_ERROR_INVALID_HANDLE);		/* no timing */
	/* A context's record and wait, its L2 and RDMA flush. */
	CHECK(call(R_CTX_OP, U(1), U(CTXOP_RECORD), U(72), U(0), U(0)) == 0);
	CHECK(call(R_EVENT_QUERY, U(72)) == 0);
	CHECK(call(R_CTX_OP, U(1), U(CTXOP_WAIT), U(72), U(0), U(0)) == 0);
	CHECK(call(R_CTX_OP, U(1), U(CTXOP_WAIT), U(79), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_CTX_OP, U(99), U(CTXOP_RECORD), U(72), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_CTX_OP, U(1), U(CTXOP_RESET_L2), U(0), U(0), U(0)) == 0);
	CHECK(call(R_CTX_OP, U(1), U(CTXOP_FLUSH), U(0), U(0),
	    U(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER)) == 0);
	CHECK(call(R_EVENT_DESTROY, U(72)) == 0);
	CHECK(call(R_EVENT_DESTROY, U(72)) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_STREAM_DESTROY, U(70)) == 0);
	CHECK(call(R_STREAM_DESTROY, U(70)) == CUDA_ERROR_INVALID_HANDLE);
}

/*
 * cuGraphExecUpdate: a refused update is a reply field of a call that
 * succeeds; sent one-way (the client predicted success and said so), the
 * exec is made anew from the graph, and only what cannot be mended (no
 * such exec) is the call's error, which the client reports later.
 */
static void
test_gexec_update(void)
{
	int i;

	CHECK(call(R_GRAPH_CREATE, U(180), U(0)) == 0);
	CHECK(call(R_GRAPH_CREATE, U(181), U(0)) == 0);
	CHECK(call(R_GRAPH_ADD, U(0), U(180), U(CU_GRAPH_NODE_TYPE_EMPTY),
	    NULL, 0u, NULL, 0u) == 0);
	for (i = 0; i < 2; i++)
		CHECK(call(R_GRAPH_ADD, U(0), U(181),
		    U(CU_GRAPH_NODE_TYPE_EMPTY), NULL, 0u, NULL, 0u) == 0);
	CHECK(call(R_GRAPH_INSTANTIATE, U(1), U(182), U(180), U(0), U(0)) == 0);
	CHECK(call(R_GEXEC_UPDATE, U(182), U(180)) == 0);
	CHECK(c.out[0].u == CUDA_SUCCESS &&
	    c.out[1].u == CU_GRAPH_EXEC_UPDATE_SUCCESS);
	CHECK(call(R_GEXEC_UPDATE, U(182), U(181)) == 0);
	CHECK(c.out[0].u == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE &&
	    c.out[1].u == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
	oneway = 1;
	CHECK(call(R_GEXEC_UPDATE, U(182), U(180)) == 0);
	CHECK(call(R_GEXEC_UPDATE, U(182), U(181)) == 0);
	CHECK(call(R_GEXEC_UPDATE, U(189), U(181)) == CUDA_ERROR_INVALID_VALUE);
	oneway = 0;
	/* The exec holds the two-node graph now: an update with it keeps
	 * the topology, one with the first graph does not. */
	CHECK(call(R_GEXEC_UPDATE, U(182), U(181)) == 0);
	CHECK(c.out[0].u == CUDA_SUCCESS);
	CHECK(call(R_GEXEC_UPDATE, U(182), U(180)) == 0);
	CHECK(c.out[0].u == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	CHECK(call(R_GEXEC_DESTROY, U(182)) == 0);
	CHECK(call(R_GRAPH_DESTROY, U(181)) == 0);
	CHECK(call(R_GRAPH_DESTROY, U(180)) == 0);
}

/* A kernel writing outside the client's memory: sticky, as on a GPU. */
static void
test_fault(void)
{
	uint8_t args[12];
	uint64_t p = 8;
	uint32_t v = 1;

	CHECK(call(R_MODULE_GET_FUNC, U(30), U(34), STR("_Z8poke_u32Pjj")) ==
	    0);
	memcpy(args, &p, 8);
	memcpy(args + 8, &v, 4);
	CHECK(call(R_LAUNCH, U(1), U(34), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), args, 12u) == 0);	/* as a GPU's: it ran */
	CHECK(call(R_CTX_SYNC, U(1)) == CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK(call(R_LAUNCH, U(1), U(34), U(1), U(1), U(1), U(1), U(1), U(1),
	    U(0), U(0), U(0), args, 12u) == CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK(call(R_MEM_ALLOC, U(1), U(64)) == CUDA_ERROR_ILLEGAL_ADDRESS);
	CHECK(call(R_EVENT_SYNC, U(71)) == CUDA_ERROR_ILLEGAL_ADDRESS);
	/* A reset gives a fresh context. */
	CHECK(call(R_PRIMARY_RESET, U(1)) == 0);
	CHECK(call(R_CTX_SYNC, U(1)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(call(R_EVENT_SYNC, U(71)) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(call(R_MODULE_GET_FUNC, U(30), U(35), STR("_Z8poke_u32Pjj")) ==
	    CUDA_ERROR_INVALID_HANDLE);		/* its modules went too */
	CHECK(call(R_PRIMARY_RETAIN, U(1), U(0)) == 0);
	CHECK(call(R_MEM_ALLOC, U(1), U(64)) == 0);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == BUDGET - 256);	/* the reset freed the rest */
}

/*
 * Tensor maps: the host backend has no encoder (801), but first checks a
 * request as the cuda backend does, so that a malformed one fails
 * (CUDA_ERROR_INVALID_VALUE) before any driver would see it.
 */
static int
tmap_call(uint64_t ctx, uint32_t which, uint64_t off, const void *map,
    unsigned maplen, const struct rpc_tmap *t, int cut, int extra)
{
	struct pw w;
	int rc;

	pw_init(&w);
	if (t != NULL)
		rpc_tmap_enc(&w, t);
	while (extra-- > 0)
		pw_u8(&w, 0);
	if (w.bad || (size_t)cut > w.len)
		return -1;
	rc = call(R_TMAP_ENCODE, U(ctx), U(which), U(off), map, maplen,
	    w.p, (unsigned)(w.len - (size_t)cut));
	pw_free(&w);
	return rc;
}

static void
test_tmap(void)
{
	uint8_t map[TMAP_BYTES + 1];
	struct rpc_tmap t, d;
	struct pw w;
	uint32_t r;

	memset(map, 0, sizeof map);
	memset(&t, 0, sizeof t);
	t.which = TMAP_TILED;
	t.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	t.rank = 2;
	t.addr = 0x7f0000000000ull;
	t.dim[0] = 256;
	t.dim[1] = 128;
	t.stride[0] = 1024;
	t.box[0] = 32;
	t.box[1] = 16;
	t.estride[0] = t.estride[1] = 1;

	/* Well-formed: no encoder here. */
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	CHECK(tmap_call(1, TMAP_TILED, 127, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	/* A context it does not have. */
	CHECK(tmap_call(99, TMAP_TILED, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	/* The map: an offset past alignment, the wrong size. */
	CHECK(tmap_call(1, TMAP_TILED, 128, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0xffffffffu, map, TMAP_BYTES, &t, 0,
	    0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES - 1, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES + 1, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0, NULL, 0, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* The arguments: one byte short, one too many, none, another which. */
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES, &t, 1, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES, &t, 0, 1) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_TILED, 0, map, TMAP_BYTES, NULL, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_IM2COL, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);	/* rank 2: too small for im2col */
	CHECK(tmap_call(1, 4, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, 0xffffffffu, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	/*
	 * Ranks the encoder does not take, each with arrays as long as it
	 * says (the encoder writes at most 5: patch the count in).
	 */
	for (r = 0; r < 8; r++) {
		uint8_t buf[256];
		size_t i;

		pw_init(&w);
		pw_u32(&w, t.dtype);
		pw_u32(&w, r);
		pw_u64(&w, t.addr);
		for (i = 0; i < r; i++)
			pw_u64(&w, 64);
		for (i = 0; i + 1 < r; i++)
			pw_u64(&w, 1024);
		for (i = 0; i < 2 * r + 4; i++)
			pw_u32(&w, 1);
		CHECK(!w.bad && w.len <= sizeof buf);
		memcpy(buf, w.p, w.len);
		CHECK(call(R_TMAP_ENCODE, U(1), U(TMAP_TILED), U(0), map,
		    (unsigned)TMAP_BYTES, buf, (unsigned)w.len) ==
		    (r >= 1 && r <= 5 ? CUDA_ERROR_NOT_SUPPORTED :
		    CUDA_ERROR_INVALID_VALUE));
		pw_free(&w);
	}

	/* Im2col, wide and replace, and each decodes to what was encoded. */
	t.which = TMAP_IM2COL;
	t.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	t.rank = 4;
	t.dim[2] = 32;
	t.dim[3] = 2;
	t.stride[1] = 4096;
	t.stride[2] = 131072;
	t.box[0] = t.box[1] = 0;
	t.lower[0] = t.lower[1] = -1;
	t.upper[0] = t.upper[1] = -1;
	t.channels = 64;
	t.pixels = 128;
	t.estride[2] = t.estride[3] = 1;
	t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
	CHECK(tmap_call(1, TMAP_IM2COL, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	pw_init(&w);
	rpc_tmap_enc(&w, &t);
	CHECK(rpc_tmap_dec(TMAP_IM2COL, w.p, w.len, &d) == 0 &&
	    memcmp(&d, &t, sizeof t) == 0);
	CHECK(rpc_tmap_dec(TMAP_TILED, w.p, w.len, &d) == -1);
	pw_free(&w);

	t.which = TMAP_IM2COL_WIDE;
	t.lower[1] = t.upper[1] = 0;
	t.mode = CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128;
	CHECK(tmap_call(1, TMAP_IM2COL_WIDE, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	pw_init(&w);
	rpc_tmap_enc(&w, &t);
	CHECK(rpc_tmap_dec(TMAP_IM2COL_WIDE, w.p, w.len, &d) == 0 &&
	    memcmp(&d, &t, sizeof t) == 0);
	pw_free(&w);

	memset(&t, 0, sizeof t);
	t.which = TMAP_REPLACE;
	t.addr = 0x7f0000001000ull;
	CHECK(tmap_call(1, TMAP_REPLACE, 0, map, TMAP_BYTES, &t, 0, 0) ==
	    CUDA_ERROR_NOT_SUPPORTED);
	CHECK(tmap_call(1, TMAP_REPLACE, 0, map, TMAP_BYTES, &t, 1, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(tmap_call(1, TMAP_REPLACE, 0, map, TMAP_BYTES, &t, 0, 1) ==
	    CUDA_ERROR_INVALID_VALUE);
	pw_init(&w);
	rpc_tmap_enc(&w, &t);
	CHECK(w.len == 8 && rpc_tmap_dec(TMAP_REPLACE, w.p, w.len, &d) == 0 &&
	    memcmp(&d, &t, sizeof t) == 0);
	pw_free(&w);
}

int
main(int argc, char *argv[])
{
	char path[4096], err[256];
	const char *k = getenv("GLEAM_HOST_KERNELS");
	uint64_t da, db, dc, va;

	log_init("test_host_backend", LL_ERROR);
	if (k == NULL) {
		/* dirname may change its argument: give it a copy. */
		snprintf(err, sizeof err, "%s", argv[0]);
		snprintf(path, sizeof path, "%s/host-kernels.so",
		    dirname(err));
		k = access(path, F_OK) == 0 ? path :
		    "build/tests/host-kernels.so";
	}
	host_backend_configure(k, BUDGET);
	if (backend_host.init(err, sizeof err) == -1) {
		fprintf(stderr, "host backend: %s\n", err);
		CHECK(0);
		return t_done("host_backend");
	}
	test_describe();
	client_start();
	test_contexts();
	test_memory(&da, &db, &dc);
	test_gpu_tier(dc, N * 4);
	test_pool();
	test_granularity();
	test_dev_query();
	test_vmm();
	test_pitch();
	test_arrays();
	test_texref();
	test_modules();
	test_launch(da, db, dc);
	test_globals_library();
	test_streams_events();
	test_idle_report();
	test_gexec_update();
	test_tmap();
	test_fault();

	/* A client that goes with everything still held: nothing leaks. */
	CHECK(call(R_MEM_ALLOC, U(1), U(1000)) == 0);
	CHECK(call(R_CTX_CREATE, U(7), U(0), U(0)) == 0);
	CHECK(call(R_MEM_ALLOC, U(7), U(1000)) == 0);
	CHECK(call(R_EVENT_CREATE, U(7), U(75), U(0)) == 0);
	CHECK(call(R_ARRAY_CREATE, U(7), U(79), U(8), U(8), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(0)) == 0);
	CHECK(call(R_ARRAY_CREATE, U(1), U(74), U(8), U(8), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(3)) == 0);
	CHECK(call(R_MIPMAP_LEVEL, U(74), U(1), U(73)) == 0);
	CHECK(call(R_MODULE_LOAD, U(7), U(76), STR("x")) == 0);
	CHECK(call(R_MODULE_GET_GLOBAL, U(76), STR("g_table")) == 0);
	CHECK(call(R_VMM_RESERVE, U(7), U(4u << 20), U(0), U(0), U(0)) == 0);
	va = c.out[0].u;
	CHECK(call(R_VMM_CREATE, U(7), U(77), U(2u << 20), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	CHECK(call(R_VMM_CREATE, U(7), U(78), U(2u << 20), U(0),
	    U(CU_MEM_ALLOCATION_TYPE_PINNED), U(CU_MEM_LOCATION_TYPE_DEVICE),
	    U(0), U(0), U(0), U(0), U(0)) == 0);
	CHECK(call(R_VMM_MAP, U(7), U(va), U(2u << 20), U(0), U(77), U(0)) ==
	    0);
	free(c.scratch);
	c.scratch = NULL;
	pw_free(&c.blob);
	pw_free(&req);
	client_end();
	client_start();
	CHECK(call(R_PRIMARY_RETAIN, U(1), U(0)) == 0);
	CHECK(call(R_MEM_GET_INFO, U(1)) == 0);
	CHECK(c.out[0].u == BUDGET);	/* the budget is whole again */
	free(c.scratch);
	c.scratch = NULL;
	pw_free(&c.blob);
	pw_free(&req);
	client_end();
	return t_done("host_backend");
}
