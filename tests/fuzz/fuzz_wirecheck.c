/*
 * Fuzz target: the wire checks (gleam-serve/check.c) on every call's
 * request as the server decodes it.  The first byte picks the call; what
 * rpc_unpack takes goes to check_dispatch, and what passes reaches a
 * backend that re-does the arithmetic the backends rely on: a memset's
 * span and a 3D copy's spans must fit, a host side must lie in its
 * blob or under the reply's limit, an array side's offsets stay under
 * 2^30, a texture's descriptors decode whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* What a backend may assume of a call that check_call passed. */
static int
fuzz_backend(struct rcall *c)
{
	CUDA_MEMCPY3D m;
	struct rpc_res r;
	struct rpc_texd t;
	struct rpc_view v;
	uint64_t span, a, b;
	unsigned el;
	int empty;

	switch (c->d->type) {
	case R_MEMSET:
		if (c->in[7].u != 0 && c->in[8].u != 0 &&
		    check_memset_span(c, &span) == -1)
			abort();
		break;
	case R_MEM_3D:
		if (check_copy3d(c, &m, &a, &b, &empty) != CUDA_SUCCESS)
			abort();
		if (!empty && ((m.srcMemoryType == CU_MEMORYTYPE_HOST &&
		    a > c->in[4].len) || (m.dstMemoryType ==
		    CU_MEMORYTYPE_HOST && b > CHECK_COPY_MAX)))
			abort();
		/* An array side's offsets: no sum with an extent wraps. */
		if (!empty && ((m.srcMemoryType == CU_MEMORYTYPE_ARRAY &&
		    (m.srcXInBytes > CHECK_COPY_MAX || m.srcY > CHECK_COPY_MAX ||
		    m.srcZ > CHECK_COPY_MAX || m.srcDevice == 0)) ||
		    (m.dstMemoryType == CU_MEMORYTYPE_ARRAY &&
		    (m.dstXInBytes > CHECK_COPY_MAX || m.dstY > CHECK_COPY_MAX ||
		    m.dstZ > CHECK_COPY_MAX || m.dstDevice == 0))))
			abort();
		break;
	case R_TEX_CREATE:
		/* Decoded whole; a pitched resource's rows fit its pitch. */
		if (check_tex(c, &r, &t, &v) != CUDA_SUCCESS ||
		    (r.type == CU_RESOURCE_TYPE_PITCH2D &&
		    (check_format(r.format, r.channels, &el) != CUDA_SUCCESS ||
		    el == 0 || r.width > CHECK_COPY_MAX ||
		    r.width * el > r.pitch)))
			abort();
		break;
	case R_MEM_DTOH:
		if (c->in[4].u > CHECK_COPY_MAX)
			abort();
		break;
	case R_LAUNCH:
	case R_LAUNCH_EX:
		if (c->in[2].u == 0 || c->in[5].u * c->in[6].u * c->in[7].u >
		    1024 || c->in[8].u > CHECK_SHMEM_MAX ||
		    c->in[11].len > CHECK_ARGMAX)
			abort();
		break;
	}
	return CUDA_SUCCESS;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static backend_fn fns[RPC_NCALLS];
	struct rclient cl;
	struct rcall c;
	int i;

	if (size < 1)
		return 0;
	for (i = 0; i < RPC_NCALLS; i++)
		fns[i] = fuzz_backend;
	memset(&cl, 0, sizeof cl);
	memset(&c, 0, sizeof c);
	c.cl = &cl;
	c.d = rpc_lookup((uint16_t)(R_OPEN + data[0] % RPC_NCALLS));
	if (rpc_unpack(data + 1, size - 1, c.d->req, c.in) == -1)
		return 0;
	(void)check_dispatch(&c, fns);
	return 0;
}
