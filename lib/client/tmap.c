/*
 * Tensor maps: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress.  The real
 * driver encodes them on the host, into a 128-byte CUtensorMap whose
 * format NVIDIA does not document, so this library cannot: each call is
 * one round trip (R_TMAP_ENCODE) in which the server's driver encodes and
 * the map comes back.  The global address is never dereferenced, only
 * encoded, and the program's device pointers already are the server's
 * addresses.  cuDNN 9 and cuBLASLt look these up for their Hopper
 * kernels; while they were missing or stubs, PyTorch's conv2d through
 * cuDNN failed with CUDNN_STATUS_INTERNAL_ERROR.
 *
 * What the driver would read through a pointer is read here and sent by
 * value; a pointer it needs and is NULL fails here, as the driver's own
 * argument checks would (the server never passes a NULL array on).  The
 * rest (enumerations, sizes, alignments) is the server's driver's to judge,
 * so that the error codes are the driver's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/*
 * Sends encoder t->which with the map's present bytes (the driver may
 * leave bytes it does not set as they were) and the map's address modulo
 * 128 (the server encodes at the same alignment, so that the driver judges
 * a misaligned map as it would here), and stores the result in *map.  The
 * map is only copied as bytes, since it may be off its type's alignment.
 */
static CUresult
tmap_call(void *map, const struct rpc_tmap *t)
{
	struct rpc_val in[5], out[1];
	struct gctx *c;
	struct pw w;
	void *keep = NULL;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	pw_init(&w);
	rpc_tmap_enc(&w, t);
	if (w.bad) {
		pw_free(&w);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(in, 0, sizeof in);
	in[0].u = gobj_id(c);
	in[1].u = t->which;
	in[2].u = (uintptr_t)map % TMAP_BYTES;
	in[3].p = map;
	in[3].len = TMAP_BYTES;
	in[4].p = w.p;
	in[4].len = (uint32_t)w.len;
	rc = remote_call(R_TMAP_ENCODE, in, out, &keep);
	pw_free(&w);
	if (rc == CUDA_SUCCESS && out[0].len != TMAP_BYTES)
		rc = CUDA_ERROR_INVALID_VALUE;	/* a server gone wrong */
	if (rc == CUDA_SUCCESS)
		memcpy(map, out[0].p, TMAP_BYTES);
	free(keep);
	return rc;
}

/* The arguments the encoders share, read into t; -1 if one is missing. */
static int
tmap_common(struct rpc_tmap *t, uint32_t which, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const cuuint32_t *estride)
{
	uint32_t i;

	memset(t, 0, sizeof *t);
	/* The rank says how much of each array there is to read. */
	if (rank < (which == TMAP_TILED ? 1u : 3u) || rank > TMAP_RANK_MAX)
		return -1;
	if (dim == NULL || estride == NULL || (stride == NULL && rank > 1))
		return -1;
	t->which = which;
	t->dtype = (uint32_t)dtype;
	t->rank = rank;
	t->addr = (uintptr_t)addr;
	for (i = 0; i < rank; i++) {
		t->dim[i] = dim[i];
		t->estride[i] = estride[i];
	}
	for (i = 0; i + 1 < rank; i++)
		t->stride[i] = stride[i];
	return 0;
}

CUresult
cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const cuuint32_t *box,
    const cuuint32_t *estride, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;
	uint32_t i;

	if (map == NULL || box == NULL || tmap_common(&t, TMAP_TILED, dtype,
	    rank, addr, dim, stride, estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < rank; i++)
		t.box[i] = box[i];
	t.interleave = (uint32_t)interleave;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, const int *lower, const int *upper,
    cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *estride,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;
	uint32_t i;

	if (map == NULL || lower == NULL || upper == NULL ||
	    tmap_common(&t, TMAP_IM2COL, dtype, rank, addr, dim, stride,
	    estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* The corners are in the spatial dimensions: all but N and C. */
	for (i = 0; i + 2 < rank; i++) {
		t.lower[i] = lower[i];
		t.upper[i] = upper[i];
	}
	t.channels = channels;
	t.pixels = pixels;
	t.interleave = (uint32_t)interleave;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapEncodeIm2colWide(CUtensorMap *map, CUtensorMapDataType dtype,
    cuuint32_t rank, void *addr, const cuuint64_t *dim,
    const cuuint64_t *stride, int lower, int upper, cuuint32_t channels,
    cuuint32_t pixels, const cuuint32_t *estride,
    CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
    CUtensorMapFloatOOBfill oobfill)
{
	struct rpc_tmap t;

	if (map == NULL || tmap_common(&t, TMAP_IM2COL_WIDE, dtype, rank,
	    addr, dim, stride, estride) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	t.lower[0] = lower;
	t.upper[0] = upper;
	t.channels = channels;
	t.pixels = pixels;
	t.interleave = (uint32_t)interleave;
	t.mode = (uint32_t)mode;
	t.swizzle = (uint32_t)swizzle;
	t.l2 = (uint32_t)l2;
	t.oobfill = (uint32_t)oobfill;
	return tmap_call(map, &t);
}

CUresult
cuTensorMapReplaceAddress(CUtensorMap *map, void *addr)
{
	struct rpc_tmap t;

	if (map == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&t, 0, sizeof t);
	t.which = TMAP_REPLACE;
	t.addr = (uintptr_t)addr;
	return tmap_call(map, &t);
}
