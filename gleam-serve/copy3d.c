/* Checking R_MEM_3D's descriptor (gleam-protocol(5)). */
#include <stdlib.h>
#include <string.h>

#include "copy3d.h"

#define COPY3D_MAX	(1u << 30)	/* a side's extent, and a reply */

/*
 * The bytes that one side's addressing reaches from its origin:
 * ((z + depth - 1) * height + y + rows - 1) * pitch + x + width.
 * -1 if that does not fit in 64 bits.
 */
static int
copy3d_span(uint64_t x, uint64_t y, uint64_t z, uint64_t pitch,
    uint64_t height, const CUDA_MEMCPY3D *m, uint64_t *span)
{
	uint64_t t;

	if (__builtin_add_overflow(z, m->Depth - 1, &t) ||
	    __builtin_mul_overflow(t, height, &t) ||
	    __builtin_add_overflow(t, y, &t) ||
	    __builtin_add_overflow(t, m->Height - 1, &t) ||
	    __builtin_mul_overflow(t, pitch, &t) ||
	    __builtin_add_overflow(t, x, &t) ||
	    __builtin_add_overflow(t, m->WidthInBytes, &t))
		return -1;
	*span = t;
	return 0;
}

int
copy3d_prepare(struct rcall *c, CUDA_MEMCPY3D *m, int *empty)
{
	struct pr r;
	uint64_t f[20], span;
	int i;

	*empty = 1;
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < 20; i++)
		f[i] = pr_u64(&r);
	if (pr_done(&r) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* f: srcType, srcX, srcY, srcZ, srcPtr, srcPitch, srcHeight,
	 *    dstType, dstX, dstY, dstZ, dstPtr, dstPitch, dstHeight,
	 *    width, height, depth, and three zeros. */
	if (f[14] == 0 || f[15] == 0 || f[16] == 0)
		return CUDA_SUCCESS;
	if ((f[0] != CU_MEMORYTYPE_HOST && f[0] != CU_MEMORYTYPE_DEVICE) ||
	    (f[7] != CU_MEMORYTYPE_HOST && f[7] != CU_MEMORYTYPE_DEVICE) ||
	    f[14] > COPY3D_MAX || f[15] > COPY3D_MAX || f[16] > COPY3D_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	memset(m, 0, sizeof *m);
	m->srcMemoryType = (CUmemorytype)f[0];
	m->srcXInBytes = f[1]; m->srcY = f[2]; m->srcZ = f[3];
	m->srcPitch = f[5]; m->srcHeight = f[6];
	m->dstMemoryType = (CUmemorytype)f[7];
	m->dstXInBytes = f[8]; m->dstY = f[9]; m->dstZ = f[10];
	m->dstPitch = f[12]; m->dstHeight = f[13];
	m->WidthInBytes = f[14]; m->Height = f[15]; m->Depth = f[16];
	if (m->srcPitch < m->WidthInBytes || m->dstPitch < m->WidthInBytes ||
	    (m->Depth > 1 && (m->srcHeight < m->Height ||
	    m->dstHeight < m->Height)))
		return CUDA_ERROR_INVALID_VALUE;
	if (copy3d_span(m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
	    m->srcHeight, m, &span) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (f[0] == CU_MEMORYTYPE_HOST) {
		if (f[4] != 0 || span > c->in[4].len)
			return CUDA_ERROR_INVALID_VALUE;
		m->srcHost = c->in[4].p;
	} else {
		if (rmem_check(c->cl, f[4], span) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		m->srcDevice = f[4];
	}
	if (copy3d_span(m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
	    m->dstHeight, m, &span) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (f[7] == CU_MEMORYTYPE_HOST) {
		if (span > COPY3D_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		if ((c->scratch = calloc(1, span)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->dstHost = c->scratch;
		c->out[0].p = c->scratch;
		c->out[0].len = (uint32_t)span;
	} else {
		if (rmem_check(c->cl, f[11], span) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		m->dstDevice = f[11];
	}
	*empty = 0;
	return CUDA_SUCCESS;
}
