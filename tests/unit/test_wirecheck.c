/*
 * gleam-serve's wire checks (check.c): hostile arguments of every kind
 * are refused with the real driver's CUresult before any backend code
 * runs, through check_call, through check_dispatch (a spy backend that
 * counts what reaches it) and through the host backend's own call table,
 * where a context the client never made shows that the backend was not
 * reached (it would answer CUDA_ERROR_INVALID_CONTEXT).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "backend.h"
#include "check.h"
#include "log.h"
#include "t.h"

#define U(x)	((uint64_t)(x))
#define NOCTX	U(99)		/* a context the client never made */

static struct rclient	 cl;
static struct rcall	 c;
static struct pw	 req;
static int		 spied;

static int
spy(struct rcall *rc)
{
	(void)rc;
	spied++;
	return CUDA_SUCCESS;
}

/*
 * Packs and unpacks type's request from the arguments (uint64_t for
 * numbers, a pointer and an unsigned length for blobs and strings) into
 * c, as remote.c decodes a frame.  -1 if it does not pack.
 */
static int
decode(int type, va_list ap)
{
	const struct rpc_desc *d = rpc_lookup((uint16_t)type);
	struct rpc_val v[RPC_MAX_FIELDS];
	int i;

	free(c.scratch);
	pw_free(&c.blob);
	pw_free(&req);
	memset(&c, 0, sizeof c);
	memset(v, 0, sizeof v);
	for (i = 0; d->req[i] != '\0'; i++) {
		if (d->req[i] == 'B' || d->req[i] == 'S') {
			v[i].p = va_arg(ap, const void *);
			v[i].len = va_arg(ap, unsigned);
		} else
			v[i].u = va_arg(ap, uint64_t);
	}
	pw_init(&req);
	if (rpc_pack(&req, d->req, v) == -1 ||
	    rpc_unpack(req.p, req.len, d->req, c.in) == -1)
		return -1;
	c.cl = &cl;
	c.d = d;
	pw_init(&c.blob);
	return 0;
}

/* check_call's answer for the call. */
static int
chk(int type, ...)
{
	va_list ap;
	int rc;

	va_start(ap, type);
	rc = decode(type, ap);
	va_end(ap);
	return rc == -1 ? -1 : check_call(&c);
}

/* check_dispatch to the spy: the answer, -2 if it reached the spy and
 * still failed (it never does). */
static int
dispatch(int type, ...)
{
	static backend_fn fns[RPC_NCALLS];
	va_list ap;
	int i, rc, before = spied;

	for (i = 0; i < RPC_NCALLS; i++)
		fns[i] = spy;
	va_start(ap, type);
	rc = decode(type, ap);
	va_end(ap);
	if (rc == -1)
		return -1;
	rc = check_dispatch(&c, fns);
	if (rc != CUDA_SUCCESS && spied != before)
		return -2;
	return rc;
}

/* Through the host backend's table, as remote.c dispatches. */
static int
host(int type, ...)
{
	va_list ap;
	int rc;

	va_start(ap, type);
	rc = decode(type, ap);
	va_end(ap);
	if (rc == -1 || backend_host.call[type - R_OPEN] == NULL)
		return -1;
	return backend_host.call[type - R_OPEN](&c);
}

/* A 3D copy descriptor's 20 fields (check_copy3d). */
static void
desc3d(uint8_t *out, const uint64_t f[20])
{
	int i, j;

	for (i = 0; i < 20; i++)
		for (j = 0; j < 8; j++)
			out[i * 8 + j] = (uint8_t)(f[i] >> (8 * j));
}

static void
test_memset(void)
{
	/* ctx, stream, async, dptr, pitch, value, element, width, height */
#define MS(fn, pitch, el, w, h) fn(R_MEMSET, NOCTX, U(0), U(0),	\
	U(0x10000), U(pitch), U(0), U(el), U(w), U(h))
	/* pitch * (h - 1) + w * el wraps around 2^64 */
	CHECK(MS(chk, 1ull << 62, 1, 16, 5) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, UINT64_MAX / 2 + 1, 4, 1, 3) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* the product alone wraps to something small */
	CHECK(MS(chk, 1ull << 63, 1, 1, 3) == CUDA_ERROR_INVALID_VALUE);
	/* pitch * (h - 1) fits, the row on top of it does not */
	CHECK(MS(chk, UINT64_MAX - 8, 4, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	/* w * el wraps: a "small" row under the pitch */
	CHECK(MS(chk, 64, 4, 1ull << 62, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, 0, 2, (1ull << 63) + 1, 1) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* element size not 1, 2 or 4 */
	CHECK(MS(chk, 64, 0, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, 64, 3, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, 64, 8, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, 64, U(1) << 32, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	/* a width over the pitch */
	CHECK(MS(chk, 64, 1, 65, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(chk, 64, 4, 17, 2) == CUDA_ERROR_INVALID_VALUE);
	/* what is fine: one row ignores the pitch; empty sets nothing */
	CHECK(MS(chk, 64, 4, 16, 2) == CUDA_SUCCESS);
	CHECK(MS(chk, 0, 1, 100, 1) == CUDA_SUCCESS);
	CHECK(MS(chk, 0, 1, 0, 9) == CUDA_SUCCESS);
	CHECK(MS(chk, 1ull << 62, 1, 16, 0) == CUDA_SUCCESS);
	/* refused before the backend: no spy, no context asked for */
	CHECK(MS(dispatch, 1ull << 62, 1, 16, 5) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(dispatch, 64, 3, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(host, 1ull << 62, 1, 16, 5) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(host, 64, 1, 65, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(host, 64, 3, 4, 2) == CUDA_ERROR_INVALID_VALUE);
	CHECK(MS(host, 64, 4, 16, 2) == CUDA_ERROR_INVALID_CONTEXT);
	{
		uint64_t span;

		CHECK(MS(chk, 256, 4, 10, 3) == CUDA_SUCCESS);
		CHECK(check_memset_span(&c, &span) == 0 && span == 552);
	}
#undef MS
}

static void
test_copy3d(void)
{
	uint8_t d[160], host8[64];
	uint64_t f[20];

#define C3(fn, blob, n) fn(R_MEM_3D, NOCTX, U(0), U(0), d,		\
	(unsigned)sizeof d, (blob), (unsigned)(n))
	/* device to device, 1 KiB rows, as a base to spoil */
#define BASE() do {							\
	memset(f, 0, sizeof f);						\
	f[0] = CU_MEMORYTYPE_DEVICE; f[4] = 0x10000;			\
	f[5] = 1024; f[6] = 8;						\
	f[7] = CU_MEMORYTYPE_DEVICE; f[11] = 0x20000;			\
	f[12] = 1024; f[13] = 8;					\
	f[14] = 512; f[15] = 8; f[16] = 2;				\
} while (0)
	BASE();
	desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_SUCCESS);
	CHECK(C3(host, NULL, 0) == CUDA_ERROR_INVALID_CONTEXT);
	/* huge extents */
	BASE(); f[14] = f[5] = f[12] = 1ull << 40; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[15] = UINT64_MAX; f[6] = f[13] = UINT64_MAX; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[16] = (1u << 30) + 1; desc3d(d, f);
	CHECK(C3(dispatch, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	/* extents that fit, with addressing that wraps around 2^64 */
	BASE(); f[3] = UINT64_MAX; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[5] = 1ull << 40; f[6] = 1ull << 30; f[16] = 1u << 20;
	desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[8] = UINT64_MAX - 100; desc3d(d, f);
	CHECK(C3(host, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	/* a width over a pitch, rows over a height */
	BASE(); f[5] = 511; desc3d(d, f);
	CHECK(C3(host, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[13] = 7; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	/* no such memory type */
	BASE(); f[0] = CU_MEMORYTYPE_ARRAY; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[7] = 0; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	/* a host source longer than the blob that carries it */
	BASE(); f[0] = CU_MEMORYTYPE_HOST; f[4] = 0; f[5] = 8; f[6] = 8;
	f[14] = 8; f[15] = 8; f[16] = 1; desc3d(d, f);
	memset(host8, 0, sizeof host8);
	CHECK(C3(chk, host8, 64) == CUDA_SUCCESS);
	CHECK(C3(chk, host8, 63) == CUDA_ERROR_INVALID_VALUE);
	CHECK(C3(host, host8, 63) == CUDA_ERROR_INVALID_VALUE);
	/* a host side is the blob itself: no pointer of the client's */
	f[4] = 0x1000; desc3d(d, f);
	CHECK(C3(chk, host8, 64) == CUDA_ERROR_INVALID_VALUE);
	/* a host destination over the reply's limit */
	BASE(); f[7] = CU_MEMORYTYPE_HOST; f[11] = 0; f[12] = 1u << 20;
	f[13] = 1u << 10; f[16] = 2; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	/* a descriptor that is not 160 bytes */
	CHECK(chk(R_MEM_3D, NOCTX, U(0), U(0), d, 159u, NULL, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* nothing to copy */
	BASE(); f[15] = 0; f[5] = 0; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_SUCCESS);
	/* an array side: an id, no pitch or height; its extent is the
	 * backend's, but no offset past 2^30 */
	BASE(); f[0] = CU_MEMORYTYPE_ARRAY; f[4] = 77; f[5] = f[6] = 0;
	desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_SUCCESS);
	CHECK(C3(host, NULL, 0) == CUDA_ERROR_INVALID_CONTEXT);
	f[4] = 0; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	f[4] = 77; f[6] = 8; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	f[6] = 0; f[1] = (1u << 30) + 1; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	f[1] = 0; f[3] = UINT64_MAX; desc3d(d, f);
	CHECK(C3(dispatch, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
	BASE(); f[7] = CU_MEMORYTYPE_ARRAY; f[11] = 5; f[12] = f[13] = 0;
	f[0] = CU_MEMORYTYPE_ARRAY; f[4] = 6; f[5] = f[6] = 0; desc3d(d, f);
	CHECK(C3(chk, NULL, 0) == CUDA_SUCCESS);
#undef BASE
#undef C3
}

static void
test_launch(void)
{
	static uint8_t params[CHECK_ARGMAX + 4];
	uint8_t attrs[3 * CHECK_ATTR_LEN];

	/* ctx, function, grid[3], block[3], shmem, stream, flags, params */
#define L(fn, gx, gy, gz, bx, by, bz, sh, n) fn(R_LAUNCH, NOCTX, U(5),	\
	U(gx), U(gy), U(gz), U(bx), U(by), U(bz), U(sh), U(0), U(0),	\
	params, (unsigned)(n))
	CHECK(L(chk, 1, 1, 1, 32, 1, 1, 0, 8) == CUDA_SUCCESS);
	CHECK(L(host, 1, 1, 1, 32, 1, 1, 0, 8) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(L(chk, 0, 1, 1, 32, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 0, 1, 32, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 0, 32, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 0, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1, 0, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(host, 1, 1, 1, 1, 1, 0, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 2147483648u, 1, 1, 1, 1, 1, 0, 8) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 2147483647u, 65535, 65535, 1, 1, 1, 0, 8) ==
	    CUDA_SUCCESS);
	CHECK(L(chk, 1, 65536, 1, 1, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 65536, 1, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1025, 1, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1, 1025, 1, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1, 1, 65, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 32, 32, 2, 0, 8) == CUDA_ERROR_INVALID_VALUE);
	CHECK(L(dispatch, 1, 1, 1, 1024, 1024, 64, 0, 8) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1024, 1, 1, 0, 8) == CUDA_SUCCESS);
	/* shared memory over any GPU's limit */
	CHECK(L(chk, 1, 1, 1, 1, 1, 1, CHECK_SHMEM_MAX, 8) == CUDA_SUCCESS);
	CHECK(L(host, 1, 1, 1, 1, 1, 1, CHECK_SHMEM_MAX + 1, 8) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(L(chk, 1, 1, 1, 1, 1, 1, UINT32_MAX, 8) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* parameters over the driver's limit */
	CHECK(L(chk, 1, 1, 1, 1, 1, 1, 0, CHECK_ARGMAX) == CUDA_SUCCESS);
	CHECK(L(host, 1, 1, 1, 1, 1, 1, 0, CHECK_ARGMAX + 4) ==
	    CUDA_ERROR_INVALID_VALUE);
#undef L

	/* cuLaunchKernelEx: the same geometry, and its attributes */
	memset(attrs, 0, sizeof attrs);
#define LX(fn, bx, n) fn(R_LAUNCH_EX, NOCTX, U(5), U(1), U(1), U(1),	\
	U(bx), U(1), U(1), U(0), U(0), attrs, (unsigned)(n), params, 8u)
	CHECK(LX(chk, 32, 0) == CUDA_SUCCESS);
	CHECK(LX(chk, 32, 3 * CHECK_ATTR_LEN) == CUDA_SUCCESS);
	CHECK(LX(chk, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(LX(dispatch, 2048, 0) == CUDA_ERROR_INVALID_VALUE);
	/* a blob that is not whole attributes */
	CHECK(LX(chk, 32, CHECK_ATTR_LEN - 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(LX(dispatch, 32, 2 * CHECK_ATTR_LEN + 4) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* an attribute whose value is a handle: never from a client */
	attrs[CHECK_ATTR_LEN] = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
	CHECK(LX(chk, 32, 2 * CHECK_ATTR_LEN) == CUDA_ERROR_NOT_SUPPORTED);
	attrs[CHECK_ATTR_LEN] = CU_LAUNCH_ATTRIBUTE_PRIORITY;
	CHECK(LX(chk, 32, 2 * CHECK_ATTR_LEN) == CUDA_SUCCESS);
#undef LX
	{
		/* more attributes than a call takes */
		static uint8_t many[(CHECK_ATTRS_MAX + 1) * CHECK_ATTR_LEN];

		CHECK(chk(R_LAUNCH_EX, NOCTX, U(5), U(1), U(1), U(1), U(1),
		    U(1), U(1), U(0), U(0), many, (unsigned)sizeof many,
		    params, 8u) == CUDA_ERROR_INVALID_VALUE);
		CHECK(chk(R_OCC_CLUSTERS, U(0), U(5), U(1), U(1), U(1), U(1),
		    U(1), U(1), U(0), many, (unsigned)sizeof many) ==
		    CUDA_ERROR_INVALID_VALUE);
		CHECK(chk(R_OCC_CLUSTERS, U(2), U(5), U(1), U(1), U(1), U(1),
		    U(1), U(1), U(0), many, 0u) == CUDA_ERROR_INVALID_VALUE);
	}
}

/* Virtual memory management: sizes, wrapping ranges, reserved flags. */
static void
test_vmm(void)
{
	uint8_t acc[13] = { 0 };

	CHECK(chk(R_VMM_RESERVE, NOCTX, U(0), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_RESERVE, NOCTX, U(2 << 20), U(3), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_RESERVE, NOCTX, U(2 << 20), U(0), U(0), U(0)) ==
	    CUDA_SUCCESS);
	CHECK(chk(R_VMM_FREE, NOCTX, U(1 << 21), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_UNMAP, NOCTX, U(UINT64_MAX - 1), U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_CREATE, NOCTX, U(0), U(1 << 21), U(0), U(1), U(1),
	    U(0), U(0), U(0), U(0), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_VMM_CREATE, NOCTX, U(5), U(1 << 21), U(1), U(1),
	    U(1), U(0), U(0), U(0), U(0), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_CREATE, NOCTX, U(5), U(1 << 21), U(0), U(1), U(1),
	    U(0), U(0), U(0), U(0), U(0)) == CUDA_SUCCESS);
	CHECK(chk(R_VMM_MAP, NOCTX, U(1 << 21), U(1 << 21), U(UINT64_MAX),
	    U(5), U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_MAP, NOCTX, U(1 << 21), U(1 << 21), U(0), U(5),
	    U(1)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_MAP, NOCTX, U(1 << 21), U(1 << 21), U(0), U(5),
	    U(0)) == CUDA_SUCCESS);
	CHECK(chk(R_VMM_SET_ACCESS, NOCTX, U(1 << 21), U(1 << 21), acc,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_SET_ACCESS, NOCTX, U(1 << 21), U(1 << 21), acc,
	    13u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_VMM_SET_ACCESS, NOCTX, U(1 << 21), U(1 << 21), acc,
	    12u) == CUDA_SUCCESS);
	/* The host backend: no such context. */
	CHECK(host(R_VMM_RESERVE, NOCTX, U(2 << 20), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
}

static void
test_others(void)
{
	uint8_t map[TMAP_BYTES], args[8];

	/* allocations */
	CHECK(chk(R_MEM_ALLOC, NOCTX, U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_MEM_ALLOC, NOCTX, U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_MEM_ALLOC, NOCTX, U(1)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(chk(R_MEM_ALLOC_HOST, NOCTX, U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_MEM_ALLOC_HOST, NOCTX, U(4096)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(host(R_MEM_ALLOC_PITCH, NOCTX, U(0), U(8), U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_ALLOC_PITCH, NOCTX, U(64), U(0), U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_ALLOC_PITCH, NOCTX, U(64), U(8), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_ALLOC_PITCH, NOCTX, U(64), U(8), U(16)) ==
	    CUDA_SUCCESS);
	CHECK(dispatch(R_MEM_POOL, NOCTX, U(0), U(4)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_POOL, NOCTX, U(5), U(4)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_MAP, NOCTX, U(0x1000), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* a copy back larger than a reply */
	CHECK(host(R_MEM_DTOH, NOCTX, U(0), U(0), U(0x1000),
	    U(CHECK_COPY_MAX) + 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MEM_DTOH, NOCTX, U(0), U(0), U(0x1000), UINT64_MAX) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* devices, streams, events, functions */
	CHECK(chk(R_CTX_CREATE, U(3), U(0xffffffff), U(0)) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(host(R_PRIMARY_RETAIN, U(3), U(0x80000000)) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(host(R_STREAM_CREATE, NOCTX, U(2), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_STREAM_CREATE, NOCTX, U(3), U(2), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_STREAM_CREATE, NOCTX, U(3), U(1), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(chk(R_STREAM_WAIT_EVENT, NOCTX, U(0), U(4), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_EVENT_CREATE, NOCTX, U(4), U(0x10)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_EVENT_CREATE, NOCTX, U(4), U(CU_EVENT_INTERPROCESS)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_FUNC_SET_ATTR, U(5), U(CU_FUNC_ATTRIBUTE_NUM_REGS),
	    U(1)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_FUNC_SET_ATTR, U(5),
	    U(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
	    U(0xffffffff)) == CUDA_ERROR_INVALID_VALUE);	/* -1 */
	CHECK(chk(R_FUNC_SET_ATTR, U(5),
	    U(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), U(101)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_FUNC_SET_ATTR, U(5),
	    U(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT), U(50)) ==
	    CUDA_ERROR_INVALID_HANDLE);
	CHECK(host(R_FUNC_SET_CACHE, U(5), U(9)) == CUDA_ERROR_INVALID_VALUE);
	/* Pointer attributes: only the driver's mappings and ranges. */
	CHECK(chk(R_PTR_ATTR, U(5), U(CU_POINTER_ATTRIBUTE_MAPPING_SIZE),
	    U(0x1000)) == CUDA_SUCCESS);
	CHECK(chk(R_PTR_ATTR, U(5), U(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR),
	    U(0x1000)) == CUDA_SUCCESS);
	CHECK(chk(R_PTR_ATTR, U(5), U(CU_POINTER_ATTRIBUTE_P2P_TOKENS),
	    U(0x1000)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_PTR_ATTR, U(5), U(CU_POINTER_ATTRIBUTE_CONTEXT),
	    U(0x1000)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_PTR_ATTR, NOCTX, U(CU_POINTER_ATTRIBUTE_MAPPING_SIZE),
	    U(0x1000)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(host(R_OCCUPANCY, U(5), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_OCCUPANCY, U(5), U(0x80000000), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_OCCUPANCY, U(5), U(128), U(0), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* images and tensor maps: blobs whose length the call fixes */
	CHECK(host(R_MODULE_LOAD, NOCTX, U(6), NULL, 0u) ==
	    CUDA_ERROR_INVALID_IMAGE);
	CHECK(chk(R_LIBRARY_LOAD, NOCTX, U(6), NULL, 0u) ==
	    CUDA_ERROR_INVALID_IMAGE);
	memset(map, 0, sizeof map);
	memset(args, 0, sizeof args);
	CHECK(host(R_TMAP_ENCODE, NOCTX, U(TMAP_REPLACE), U(0), map,
	    (unsigned)sizeof map, args, 8u) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(host(R_TMAP_ENCODE, NOCTX, U(TMAP_REPLACE), U(0), map,
	    (unsigned)sizeof map - 1, args, 8u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TMAP_ENCODE, NOCTX, U(TMAP_REPLACE), U(TMAP_BYTES), map,
	    (unsigned)sizeof map, args, 8u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_TMAP_ENCODE, NOCTX, U(TMAP_REPLACE), U(0), map,
	    (unsigned)sizeof map, args, 7u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TMAP_ENCODE, NOCTX, U(7), U(0), map,
	    (unsigned)sizeof map, args, 8u) == CUDA_ERROR_INVALID_VALUE);
}

/* Stream memory operations and the JIT linker's option lists. */
static void
test_memops_jit(void)
{
	uint8_t ops[2 * RPC_MEMOP_LEN], opts[3 * RPC_JIT_OPT_LEN];
	uint32_t t;
	uint64_t v;

	memset(ops, 0, sizeof ops);
	t = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	memcpy(ops, &t, 4);
	t = CU_STREAM_MEM_OP_BARRIER;
	memcpy(ops + RPC_MEMOP_LEN, &t, 4);
	CHECK(chk(R_STREAM_MEMOP, NOCTX, U(0), U(0), ops,
	    (unsigned)sizeof ops) == CUDA_SUCCESS);
	CHECK(chk(R_STREAM_MEMOP, NOCTX, U(0), U(0), ops, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_STREAM_MEMOP, NOCTX, U(0), U(0), ops,
	    (unsigned)sizeof ops - 1) == CUDA_ERROR_INVALID_VALUE);
	t = 7;
	memcpy(ops + RPC_MEMOP_LEN, &t, 4);
	CHECK(chk(R_STREAM_MEMOP, NOCTX, U(0), U(0), ops,
	    (unsigned)sizeof ops) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_STREAM_MEMOP, NOCTX, U(0), U(0), ops,
	    (unsigned)RPC_MEMOP_LEN) == CUDA_ERROR_INVALID_CONTEXT);

	/* An info log of 100 bytes, and the verbose flag. */
	t = CU_JIT_INFO_LOG_BUFFER; v = 0;
	memcpy(opts, &t, 4); memcpy(opts + 4, &v, 8);
	t = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES; v = 100;
	memcpy(opts + 12, &t, 4); memcpy(opts + 16, &v, 8);
	t = CU_JIT_LOG_VERBOSE; v = 1;
	memcpy(opts + 24, &t, 4); memcpy(opts + 28, &v, 8);
	CHECK(chk(R_LINK_CREATE, NOCTX, U(8), opts, (unsigned)sizeof opts) ==
	    CUDA_SUCCESS);
	CHECK(chk(R_LINK_CREATE, NOCTX, U(8), opts,
	    (unsigned)sizeof opts - 1) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_LINK_ADD, U(8), U(CU_JIT_INPUT_PTX), "x", 1u, "n", 1u,
	    opts, (unsigned)sizeof opts) == CUDA_SUCCESS);
	CHECK(chk(R_LINK_ADD, U(8), U(CU_JIT_NUM_INPUT_TYPES), "x", 1u, "n",
	    1u, opts, (unsigned)sizeof opts) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_LINK_ADD, U(8), U(CU_JIT_INPUT_PTX), "x", 0u, "n", 1u,
	    opts, (unsigned)sizeof opts) == CUDA_ERROR_INVALID_VALUE);
	/* A log too large, an option that points into the client, none. */
	v = RPC_JIT_LOG_MAX + 1ull;
	memcpy(opts + 16, &v, 8);
	CHECK(chk(R_LINK_CREATE, NOCTX, U(8), opts, (unsigned)sizeof opts) ==
	    CUDA_ERROR_INVALID_VALUE);
	v = 100;
	memcpy(opts + 16, &v, 8);
	t = CU_JIT_GLOBAL_SYMBOL_NAMES;
	memcpy(opts + 24, &t, 4);
	CHECK(chk(R_LINK_CREATE, NOCTX, U(8), opts, (unsigned)sizeof opts) ==
	    CUDA_ERROR_INVALID_VALUE);
	t = CU_JIT_NUM_OPTIONS;
	memcpy(opts + 24, &t, 4);
	CHECK(chk(R_LINK_CREATE, NOCTX, U(8), opts, (unsigned)sizeof opts) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* The host backend has no JIT. */
	CHECK(host(R_LINK_CREATE, NOCTX, U(8), opts, 0u) ==
	    CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
}

/* R_ARRAY_CREATE and R_TEX_CREATE: shapes, formats, descriptors. */
static void
test_arrays(void)
{
	struct rpc_res r;
	struct rpc_texd t;
	struct rpc_view v;
	struct pw rb, tb, vb;

	/* ctx, id, width, height, depth, format, channels, flags, levels */
#define AC(fn, w, h, d, f, n, fl, lv) fn(R_ARRAY_CREATE, NOCTX, U(9),	\
	U(w), U(h), U(d), U(f), U(n), U(fl), U(lv))
	CHECK(AC(chk, 64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_SUCCESS);
	CHECK(AC(host, 64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	/* formats and channels */
	CHECK(AC(chk, 64, 0, 0, 0x55, 1, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 64, 0, 0, CU_AD_FORMAT_FLOAT, 3, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 64, 0, 0, CU_AD_FORMAT_FLOAT, 0, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 64, 0, 0, CU_AD_FORMAT_UNORM_INT8X2, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 64, 0, 0, CU_AD_FORMAT_UNORM_INT8X2, 2, 0, 0) ==
	    CUDA_SUCCESS);
	CHECK(AC(chk, 64, 64, 0, CU_AD_FORMAT_NV12, 3, 0, 0) ==
	    CUDA_SUCCESS);
	/* shapes: width 0, depth without height, cubemaps, layers */
	CHECK(AC(chk, 0, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 0, 4, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 0, 4, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED,
	    0) == CUDA_SUCCESS);
	CHECK(AC(chk, 8, 8, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED,
	    0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 4, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP,
	    0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 8, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP,
	    0) == CUDA_SUCCESS);
	CHECK(AC(chk, 8, 8, 7, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP,
	    0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 8, 12, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP |
	    CUDA_ARRAY3D_LAYERED, 0) == CUDA_SUCCESS);
	CHECK(AC(chk, U(1) << 40, 1, 0, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* flags: unknown, and memory mapped by calls not remoted */
	CHECK(AC(chk, 8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0x10000, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 8, 8, 0, CU_AD_FORMAT_FLOAT, 1,
	    CUDA_ARRAY3D_DEFERRED_MAPPING, 0) == CUDA_ERROR_NOT_SUPPORTED);
	/* mipmap levels: 1 + log2 of the largest side, layers aside */
	CHECK(AC(chk, 64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0, 7) ==
	    CUDA_SUCCESS);
	CHECK(AC(chk, 64, 32, 0, CU_AD_FORMAT_FLOAT, 1, 0, 8) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(chk, 4, 4, 64, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED,
	    4) == CUDA_ERROR_INVALID_VALUE);
	/* id 0 */
	CHECK(chk(R_ARRAY_CREATE, NOCTX, U(0), U(8), U(8), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(AC(dispatch, 8, 0, 4, CU_AD_FORMAT_FLOAT, 1, 0, 0) ==
	    CUDA_ERROR_INVALID_VALUE);
#undef AC

	/* ctx, surface, resource, texture, view */
	pw_init(&rb);
	pw_init(&tb);
	pw_init(&vb);
#define TEX(fn, surf, tl, vl) fn(R_TEX_CREATE, NOCTX, U(9), U(surf), rb.p, \
	(unsigned)rb.len, tb.p, (unsigned)(tl), vb.p, (unsigned)(vl))
#define ENC() do {							\
	rb.len = tb.len = vb.len = 0;					\
	rpc_res_enc(&rb, &r);						\
	rpc_texd_enc(&tb, &t);						\
	rpc_view_enc(&vb, &v);						\
} while (0)
	memset(&r, 0, sizeof r);
	memset(&t, 0, sizeof t);
	memset(&v, 0, sizeof v);
	r.type = CU_RESOURCE_TYPE_ARRAY;
	r.h = 5;
	ENC();
	CHECK(rb.len == RPC_RES_LEN && tb.len == RPC_TEXD_LEN &&
	    vb.len == RPC_VIEW_LEN);
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_SUCCESS);
	CHECK(TEX(chk, 0, tb.len, vb.len) == CUDA_SUCCESS);
	CHECK(TEX(host, 0, tb.len, 0) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(TEX(chk, 1, 0, 0) == CUDA_SUCCESS);
	/* lengths: a texture without its descriptor, a surface with one */
	CHECK(TEX(chk, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(TEX(chk, 0, tb.len - 1, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(TEX(chk, 1, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(TEX(chk, 2, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	rb.len--;
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	/* resources: no array id, flags, stray fields, unknown type */
	r.h = 0; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.h = 5; r.flags = 1; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.flags = 0; r.pitch = 4; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.pitch = 0; r.type = 4; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	/* linear and pitched memory: format, size, pitch; a surface over
	 * them; a view of them */
	r.type = CU_RESOURCE_TYPE_LINEAR; r.h = 0x10000;
	r.format = CU_AD_FORMAT_FLOAT; r.channels = 1; r.width = 1024; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_SUCCESS);
	CHECK(TEX(chk, 0, tb.len, vb.len) == CUDA_ERROR_INVALID_VALUE);
	CHECK(TEX(chk, 1, 0, 0) == CUDA_ERROR_INVALID_VALUE);
	r.channels = 3; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.channels = 1; r.format = CU_AD_FORMAT_BC1_UNORM; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.type = CU_RESOURCE_TYPE_PITCH2D; r.format = CU_AD_FORMAT_FLOAT;
	r.width = 16; r.height = 16; r.pitch = 64; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_SUCCESS);
	r.pitch = 63; ENC();		/* not the pitch alignment */
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	r.pitch = 32; ENC();		/* under a row: the driver takes it */
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_SUCCESS);
	r.pitch = 64; r.height = 0; ENC();
	CHECK(TEX(dispatch, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	/* texture descriptors: modes, flags; views: levels, formats */
	r.type = CU_RESOURCE_TYPE_ARRAY; r.h = 5; r.format = r.channels = 0;
	r.width = r.height = r.pitch = 0;
	t.addr[2] = 4; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	t.addr[2] = 0; t.filter = 2; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	t.filter = 1; t.flags = 0x80; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_ERROR_INVALID_VALUE);
	t.flags = CU_TRSF_NORMALIZED_COORDINATES; v.firstmip = 2;
	v.lastmip = 1; ENC();
	CHECK(TEX(chk, 0, tb.len, 0) == CUDA_SUCCESS);
	CHECK(TEX(chk, 0, tb.len, vb.len) == CUDA_ERROR_INVALID_VALUE);
	v.firstmip = 0; v.format = 0x23; ENC();
	CHECK(TEX(host, 0, tb.len, vb.len) == CUDA_ERROR_INVALID_VALUE);
	/* id 0 */
	CHECK(chk(R_TEX_CREATE, NOCTX, U(0), U(0), rb.p, (unsigned)rb.len,
	    tb.p, (unsigned)tb.len, NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
#undef TEX
#undef ENC
	pw_free(&rb);
	pw_free(&tb);
	pw_free(&vb);
	/* destroy: the kind is 0 or 1 */
	CHECK(chk(R_TEX_DESTROY, U(5), U(2)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_ARRAY_DESTROY, U(5), U(2)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MIPMAP_LEVEL, U(5), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
}

/* Texture references, sparse properties, array mappings (issue 24). */
static void
test_texref(void)
{
	uint8_t b[RPC_MAPINFO_LEN * 2];

	memset(b, 0, sizeof b);
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(5), U(0), U(0), "", 0u) ==
	    CUDA_SUCCESS);
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(0), U(0), U(0), "", 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* a created one is a texture's, without a name; a module's has one */
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(5), U(0), U(1), "", 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(5), U(0), U(0), "t", 1u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(5), U(9), U(1), "", 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_NEW, NOCTX, U(5), U(9), U(2), "t", 1u) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* ops, indices, data lengths, a format's channels */
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_OPS), U(0), U(0), U(0), NULL,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_ADDRMODE), U(2), U(0), U(0),
	    NULL, 0u) == CUDA_SUCCESS);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_ADDRMODE), U(3), U(0), U(0),
	    NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_FILTER), U(1), U(0), U(0),
	    NULL, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_BORDER), U(0), U(0), U(0), b,
	    (unsigned)RPC_TREF_BORDER_LEN) == CUDA_SUCCESS);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_BORDER), U(0), U(0), U(0), b,
	    12u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_ADDRESS2D), U(0), U(0), U(0),
	    b, (unsigned)RPC_TREF2D_LEN) == CUDA_SUCCESS);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_FLAGS), U(0), U(0), U(0), b,
	    1u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_SET, U(5), U(TREF_FORMAT), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(3), NULL, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_GET, U(5), U(TREF_BORDER), U(0)) == CUDA_SUCCESS);
	CHECK(chk(R_TEXREF_GET, U(5), U(TREF_ADDRESS2D), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_TEXREF_GET, U(5), U(TREF_ARRAY), U(1)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* sparse properties; whole map entries, at least one */
	CHECK(chk(R_ARRAY_SPARSE, U(5), U(2)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MAP_ARRAY, NOCTX, U(0), b, (unsigned)sizeof b) ==
	    CUDA_SUCCESS);
	CHECK(chk(R_MAP_ARRAY, NOCTX, U(0), b, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_MAP_ARRAY, NOCTX, U(0), b, (unsigned)sizeof b - 1) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* a sparse array passes to the backend; deferred mapping does not */
	CHECK(chk(R_ARRAY_CREATE, NOCTX, U(9), U(8), U(8), U(0),
	    U(CU_AD_FORMAT_FLOAT), U(1), U(CUDA_ARRAY3D_SPARSE), U(0)) ==
	    CUDA_SUCCESS);
}

/* A context's operations and the device queries (issue 24). */
static void
test_ctxop_devquery(void)
{
	uint32_t a[RPC_ATOMIC_OPS_MAX + 2];

	memset(a, 0, sizeof a);
	CHECK(chk(R_CTX_OP, NOCTX, U(CTXOP_RECORD), U(5), U(0), U(0)) ==
	    CUDA_SUCCESS);
	CHECK(chk(R_CTX_OP, NOCTX, U(CTXOP_FLUSH), U(0),
	    U(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX),
	    U(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)) == CUDA_SUCCESS);
	CHECK(dispatch(R_CTX_OP, NOCTX, U(CTXOP_GREEN_WAIT + 1), U(0), U(0),
	    U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_CTX_OP, NOCTX, U(CTXOP_FLUSH), U(0), U(1),
	    U(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_CTX_OP, NOCTX, U(CTXOP_FLUSH), U(0), U(0), U(7)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_CTX_OP, NOCTX, U(CTXOP_RESET_L2), U(0), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);

	CHECK(chk(R_DEV_QUERY, U(DEVQ_TEX1D), U(0), a, 8u) == CUDA_SUCCESS);
	CHECK(dispatch(R_DEV_QUERY, U(DEVQ_TEX1D), U(0), a, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_DEV_QUERY, U(DEVQ_TEX1D), U(-1), a, 8u) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(chk(R_DEV_QUERY, U(DEVQ_P2P_ATOMIC), U(0), a, 12u) ==
	    CUDA_SUCCESS);
	CHECK(dispatch(R_DEV_QUERY, U(DEVQ_P2P_ATOMIC), U(0), a, 2u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_DEV_QUERY, U(DEVQ_P2P_ATOMIC), U(0), a,
	    (unsigned)(4 * (RPC_ATOMIC_OPS_MAX + 2))) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_DEV_QUERY, U(DEVQ_HOST_ATOMIC), U(0), a,
	    (unsigned)(4 * RPC_ATOMIC_OPS_MAX)) == CUDA_SUCCESS);
	CHECK(dispatch(R_DEV_QUERY, U(DEVQ_HOST_ATOMIC), U(0), a, 6u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_DEV_QUERY, U(3), U(0), a, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
}

/* Stream attributes at their lengths; capture dependencies' nodes. */
static void
test_capdeps(void)
{
	uint8_t v[64], ed[16];

	memset(v, 0, sizeof v);
	memset(ed, 0, sizeof ed);
	CHECK(chk(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_SET), U(3), U(0), v,
	    4u) == CUDA_SUCCESS);
	CHECK(chk(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_SET), U(1), U(0), v,
	    32u) == CUDA_SUCCESS);
	CHECK(chk(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_GET), U(9), U(0), v,
	    0u) == CUDA_SUCCESS);
	CHECK(chk(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_COPY), U(0), U(11), v,
	    0u) == CUDA_SUCCESS);
	CHECK(dispatch(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_SET), U(1), U(0),
	    v, 8u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_SET), U(2), U(0),
	    v, 4u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_STREAM_ATTR, NOCTX, U(10), U(SATTR_GET), U(3), U(0),
	    v, 4u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_STREAM_ATTR, NOCTX, U(10), U(3), U(3), U(0), v,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_CAPTURE_TO_GRAPH, NOCTX, U(10), U(0), U(5), v, 16u, ed,
	    16u) == CUDA_SUCCESS);
	CHECK(chk(R_CAPTURE_TO_GRAPH, NOCTX, U(10), U(0), U(5), v, 0u, ed,
	    0u) == CUDA_SUCCESS);
	CHECK(dispatch(R_CAPTURE_TO_GRAPH, NOCTX, U(2), U(0), U(5), v, 0u, ed,
	    0u) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CHECK(dispatch(R_CAPTURE_TO_GRAPH, NOCTX, U(10), U(0), U(5), v, 16u,
	    ed, 8u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_CAPTURE_TO_GRAPH, NOCTX, U(10), U(3), U(5), v, 8u,
	    ed, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_CAPTURE_DEPS, NOCTX, U(10), U(CAPDEPS_GET), v, 0u, ed,
	    0u) == CUDA_SUCCESS);
	CHECK(chk(R_CAPTURE_DEPS, NOCTX, U(10), U(CAPDEPS_SET), v, 8u, ed,
	    8u) == CUDA_SUCCESS);
	CHECK(dispatch(R_CAPTURE_DEPS, NOCTX, U(10), U(CAPDEPS_GET), v, 8u,
	    ed, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_CAPTURE_DEPS, NOCTX, U(10), U(CAPDEPS_ADD), v, 12u,
	    ed, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_CAPTURE_DEPS, NOCTX, U(10), U(3), v, 0u, ed, 0u) ==
	    CUDA_ERROR_INVALID_VALUE);
}

/* A conditional node's request: handle, type, size, nid body ids. */
static void
cond_req(struct pw *w, uint64_t h, uint32_t type, uint32_t size,
    uint32_t nid, uint64_t first)
{
	struct rpc_val v[4];
	struct pw ids;
	uint32_t i;

	pw_init(&ids);
	for (i = 0; i < nid; i++)
		pw_u64(&ids, first + i);
	memset(v, 0, sizeof v);
	v[0].u = h;
	v[1].u = type;
	v[2].u = size;
	v[3].p = ids.p;
	v[3].len = (uint32_t)ids.len;
	pw_init(w);
	rpc_pack(w, RPC_SIG_COND, v);
	pw_free(&ids);
}

/* Conditional nodes: sizes by type, body ids; handles' flags; a child
 * graph node's graph set. */
/* Green contexts: resources whole, splits' parameters one a group. */
static void
green_checks(void)
{
	static uint8_t res[RPC_DEVRES_LEN], par[2 * RPC_SMGROUP_LEN];

	CHECK(chk(R_DEV_RESOURCE, U(DEVRES_DEVICE), U(0), U(0), U(0),
	    U(1)) == CUDA_SUCCESS);
	CHECK(dispatch(R_DEV_RESOURCE, U(4), U(0), U(0), U(0), U(1)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_DEV_RESOURCE, U(DEVRES_DEVICE), U(0xffffffff), U(0),
	    U(0), U(1)) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(chk(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(2), U(0), U(16), res,
	    (uint32_t)sizeof res, res, 0u, U(3)) == CUDA_SUCCESS);
	CHECK(dispatch(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(2), U(0), U(16), res,
	    (uint32_t)sizeof res - 1, res, 0u, U(3)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(2), U(0), U(16), res,
	    (uint32_t)sizeof res, par, (uint32_t)sizeof par, U(3)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(RPC_DEVRES_MAX + 1),
	    U(0), U(16), res, (uint32_t)sizeof res, res, 0u, U(1)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(2), U(0), U(16), res,
	    (uint32_t)sizeof res, res, 0u, U(4)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_SM_SPLIT, U(SPLIT_STRUCTURED), U(2), U(0), U(0), res,
	    (uint32_t)sizeof res, par, (uint32_t)sizeof par, U(3)) ==
	    CUDA_SUCCESS);
	CHECK(dispatch(R_SM_SPLIT, U(SPLIT_STRUCTURED), U(1), U(0), U(0),
	    res, (uint32_t)sizeof res, par, (uint32_t)sizeof par, U(3)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_RES_DESC, U(5), res, (uint32_t)sizeof res) ==
	    CUDA_SUCCESS);
	CHECK(dispatch(R_RES_DESC, U(5), res, 100u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_RES_DESC, U(0), res, 0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_GREEN_CREATE, U(5), U(6), U(0xffffffff), U(1)) ==
	    CUDA_ERROR_INVALID_DEVICE);
	CHECK(dispatch(R_GREEN_STREAM, U(5), U(2), U(1), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_CTX_OP, U(2), U(CTXOP_GREEN_WAIT), U(3), U(0), U(0)) ==
	    CUDA_SUCCESS);
	CHECK(dispatch(R_CTX_OP, U(2), U(CTXOP_GREEN_WAIT + 1), U(3), U(0),
	    U(0)) == CUDA_ERROR_INVALID_VALUE);
	/* The host backend: what it refuses before any context. */
	CHECK(host(R_DEV_RESOURCE, U(DEVRES_DEVICE), U(0), U(0), U(0),
	    U(0)) == CUDA_ERROR_INVALID_RESOURCE_TYPE);
	CHECK(host(R_DEV_RESOURCE, U(DEVRES_GREEN), U(0), U(77), U(0),
	    U(1)) == CUDA_ERROR_INVALID_CONTEXT);
	CHECK(host(R_SM_SPLIT, U(SPLIT_BY_COUNT), U(2), U(0), U(16), res,
	    (uint32_t)sizeof res, res, 0u, U(3)) ==
	    CUDA_ERROR_INVALID_RESOURCE_TYPE);	/* all zero: type 0 */
	CHECK(host(R_GREEN_CREATE, U(5), U(6), U(0), U(1)) ==
	    CUDA_ERROR_INVALID_VALUE);	/* no such descriptor */
	CHECK(host(R_GREEN_DESTROY, U(5)) == CUDA_ERROR_INVALID_CONTEXT);
}

static void
test_cond(void)
{
	struct pw w;
	uint64_t id = 77;
	static const struct {
		uint32_t	 type, size, nid;
		uint64_t	 h, first;
		int		 rc;
	} t[] = {
		{ CU_GRAPH_COND_TYPE_IF, 1, 1, 5, 100, CUDA_SUCCESS },
		{ CU_GRAPH_COND_TYPE_IF, 2, 2, 5, 100, CUDA_SUCCESS },
		{ CU_GRAPH_COND_TYPE_WHILE, 1, 1, 5, 100, CUDA_SUCCESS },
		{ CU_GRAPH_COND_TYPE_SWITCH, 7, 7, 5, 100, CUDA_SUCCESS },
		{ CU_GRAPH_COND_TYPE_IF, 3, 3, 5, 100,
		    CUDA_ERROR_INVALID_VALUE },
		{ CU_GRAPH_COND_TYPE_WHILE, 2, 2, 5, 100,
		    CUDA_ERROR_INVALID_VALUE },
		{ CU_GRAPH_COND_TYPE_SWITCH, 0, 0, 5, 100,
		    CUDA_ERROR_INVALID_VALUE },
		{ CU_GRAPH_COND_TYPE_SWITCH, RPC_COND_MAX + 1,
		    RPC_COND_MAX + 1, 5, 100, CUDA_ERROR_INVALID_VALUE },
		{ 3, 1, 1, 5, 100, CUDA_ERROR_INVALID_VALUE },
		{ CU_GRAPH_COND_TYPE_IF, 2, 1, 5, 100,
		    CUDA_ERROR_INVALID_VALUE },	/* an id short */
		{ CU_GRAPH_COND_TYPE_IF, 1, 2, 5, 100,
		    CUDA_ERROR_INVALID_VALUE },	/* one too many */
		{ CU_GRAPH_COND_TYPE_IF, 1, 1, 0, 100,
		    CUDA_ERROR_INVALID_VALUE },	/* no handle */
		{ CU_GRAPH_COND_TYPE_IF, 1, 1, 5, 0,
		    CUDA_ERROR_INVALID_VALUE },	/* id 0 */
	};
	size_t i;

	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		cond_req(&w, t[i].h, t[i].type, t[i].size, t[i].nid,
		    t[i].first);
		if (t[i].rc == CUDA_SUCCESS)
			CHECK(chk(R_GRAPH_ADD, U(1), U(2),
			    U(CU_GRAPH_NODE_TYPE_CONDITIONAL), &id, 0u, w.p,
			    (unsigned)w.len) == CUDA_SUCCESS);
		else
			CHECK(dispatch(R_GRAPH_ADD, U(1), U(2),
			    U(CU_GRAPH_NODE_TYPE_CONDITIONAL), &id, 0u, w.p,
			    (unsigned)w.len) == t[i].rc);
		pw_free(&w);
	}
	/* Truncated. */
	CHECK(dispatch(R_GRAPH_ADD, U(1), U(2),
	    U(CU_GRAPH_NODE_TYPE_CONDITIONAL), &id, 0u, &id, 4u) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_COND_HANDLE, NOCTX, U(2), U(1),
	    U(CU_GRAPH_COND_ASSIGN_DEFAULT)) == CUDA_SUCCESS);
	CHECK(chk(R_COND_HANDLE, NOCTX, U(2), U(0), U(0)) == CUDA_SUCCESS);
	CHECK(dispatch(R_COND_HANDLE, NOCTX, U(2), U(0), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* The host backend: no such context. */
	CHECK(host(R_COND_HANDLE, NOCTX, U(2), U(0), U(0)) ==
	    CUDA_ERROR_INVALID_CONTEXT);
	CHECK(chk(R_UOBJ_CREATE, U(4)) == CUDA_SUCCESS);
	CHECK(dispatch(R_UOBJ_CREATE, U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_UOBJ_RELEASE, U(0)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_GRAPH_UOBJ, U(2), U(4), U(1), U(1)) == CUDA_SUCCESS);
	CHECK(dispatch(R_GRAPH_UOBJ, U(2), U(4), U(0), U(1)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_GRAPH_UOBJ, U(2), U(4), U(0x80000000), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_GRAPH_UOBJ, U(2), U(4), U(1), U(2)) ==
	    CUDA_ERROR_INVALID_VALUE);
	/* The host backend: a user object twice, a release of none. */
	CHECK(host(R_UOBJ_CREATE, U(900)) == CUDA_SUCCESS);
	CHECK(host(R_UOBJ_CREATE, U(900)) == CUDA_ERROR_INVALID_VALUE);
	CHECK(host(R_UOBJ_RELEASE, U(900)) == CUDA_SUCCESS);
	CHECK(host(R_UOBJ_RELEASE, U(900)) == CUDA_ERROR_INVALID_VALUE);
	/* Kernel node attributes at their lengths, as streams'. */
	CHECK(chk(R_KNODE_ATTR, U(2), U(3), U(SATTR_SET), U(2), U(0), U(0),
	    &id, 4u) == CUDA_SUCCESS);
	CHECK(chk(R_KNODE_ATTR, U(2), U(3), U(SATTR_SET), U(4), U(0), U(0),
	    t, 12u) == CUDA_SUCCESS);
	CHECK(chk(R_KNODE_ATTR, U(2), U(3), U(SATTR_COPY), U(0), U(2), U(5),
	    &id, 0u) == CUDA_SUCCESS);
	CHECK(dispatch(R_KNODE_ATTR, U(2), U(3), U(SATTR_SET), U(3), U(0),
	    U(0), &id, 4u) == CUDA_ERROR_INVALID_VALUE);	/* a stream's */
	CHECK(dispatch(R_KNODE_ATTR, U(2), U(3), U(SATTR_GET), U(12), U(0),
	    U(0), &id, 0u) == CUDA_ERROR_INVALID_VALUE);	/* an event */
	CHECK(dispatch(R_KNODE_ATTR, U(2), U(3), U(SATTR_SET), U(2), U(0),
	    U(0), &id, 8u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_KNODE_ATTR, U(2), U(3), U(SATTR_COPY), U(0), U(2),
	    U(5), &id, 4u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(dispatch(R_KNODE_ATTR, U(2), U(3), U(3), U(2), U(0), U(0), &id,
	    0u) == CUDA_ERROR_INVALID_VALUE);
	CHECK(rpc_sattr_len(2) == 0 && rpc_kattr_len(2) == 4);
	CHECK(rpc_sattr_len(3) == 4 && rpc_kattr_len(3) == 0);
	CHECK(rpc_sattr_len(1) == 32 && rpc_kattr_len(1) == 32);
	CHECK(chk(R_CHILD_GRAPH, U(2), U(3), U(5)) == CUDA_SUCCESS);
	CHECK(dispatch(R_CHILD_GRAPH, U(2), U(3), U(0)) ==
	    CUDA_ERROR_INVALID_VALUE);
	CHECK(chk(R_NODE_SET, U(2), U(0), U(3), U(CU_GRAPH_NODE_TYPE_GRAPH),
	    &id, 8u) == CUDA_SUCCESS);
	CHECK(dispatch(R_NODE_SET, U(2), U(0), U(3),
	    U(CU_GRAPH_NODE_TYPE_GRAPH), &id, 4u) == CUDA_ERROR_INVALID_VALUE);
	green_checks();
}

int
main(void)
{
	log_init("test_wirecheck", LL_ERROR);
	htab_init(&cl.objs);
	snprintf(cl.addr, sizeof cl.addr, "test");
	test_memset();
	test_copy3d();
	test_launch();
	test_others();
	test_memops_jit();
	test_vmm();
	test_arrays();
	test_texref();
	test_ctxop_devquery();
	test_capdeps();
	test_cond();
	/* What passed reached the spy; what failed never did. */
	CHECK(spied == 0);
	free(c.scratch);
	pw_free(&c.blob);
	pw_free(&req);
	htab_free(&cl.objs);
	return t_done("wirecheck");
}
