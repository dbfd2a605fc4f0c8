/*
 * The batched memory calls of CUDA 12.8 and 13: copies, 3D copies,
 * prefetches and discards by the batch, each done here as the single
 * calls they stand for, in order, on the copy and prefetch paths that
 * already exist (copy.c, mapped.c).  The driver may run a batch's copies
 * in any order, so running them in order is one of its choices.  Also
 * what the driver does with a memory range for other processes or
 * engines, which has no meaning across the network.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"
#include "log.h"

/*
 * The stream of a batch: never the legacy stream (a _ptsz call's NULL is
 * the per-thread stream).  Then its id, which also checks the handle.
 */
static CUresult
batch_stream(CUstream s, int ptsz)
{
	uint64_t sid;

	if ((s == NULL && !ptsz) || s == CU_STREAM_LEGACY)
		return CUDA_ERROR_INVALID_VALUE;
	return stream_id(s, ptsz, &sid);
}

/*
 * Index arrays that split count operations among n entries: n of them,
 * the first 0, each above the one before, the last below count.
 */
static int
batch_idx_ok(const size_t *idx, size_t n, size_t count)
{
	size_t i;

	if (idx == NULL || n == 0 || n > count || idx[0] != 0)
		return 0;
	for (i = 1; i < n; i++)
		if (idx[i] <= idx[i - 1])
			return 0;
	return idx[n - 1] < count;
}

static int
batch_order_ok(CUmemcpySrcAccessOrder o, unsigned flags)
{
	return o >= CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
	    o <= CU_MEMCPY_SRC_ACCESS_ORDER_ANY &&
	    (flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) == 0;
}

/* ---- copies ------------------------------------------------------------- */

static CUresult
copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
    CUmemcpyAttributes *attrs, size_t *idx, size_t nattrs, size_t *fail,
    CUstream s, int ptsz)
{
	size_t i;
	CUresult rc;

	if (fail != NULL)
		*fail = SIZE_MAX;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL ||
	    attrs == NULL || !batch_idx_ok(idx, nattrs, count))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < nattrs; i++)
		if (!batch_order_ok(attrs[i].srcAccessOrder, attrs[i].flags))
			return CUDA_ERROR_INVALID_VALUE;
	if ((rc = batch_stream(s, ptsz)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < count; i++) {
		rc = ptsz ? cuMemcpyAsync_ptsz(dsts[i], srcs[i], sizes[i], s) :
		    cuMemcpyAsync(dsts[i], srcs[i], sizes[i], s);
		if (rc != CUDA_SUCCESS) {
			if (fail != NULL)
				*fail = i;
			return rc;
		}
	}
	return CUDA_SUCCESS;
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *fail, CUstream st) { return copy_batch(d, s, n, count, a, ai, na, fail, st, 0); }
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *fail, CUstream st) { return copy_batch(d, s, n, count, a, ai, na, fail, st, 1); }
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream st) { return copy_batch(d, s, n, count, a, ai, na, NULL, st, 0); }
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream st) { return copy_batch(d, s, n, count, a, ai, na, NULL, st, 1); }

/* Bytes of one element of an array's format and channels; 0 if unknown. */
static size_t
batch_elem(CUarray a, CUresult *rc)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	size_t b;

	if ((*rc = cuArray3DGetDescriptor_v2(&d, a)) != CUDA_SUCCESS)
		return 0;
	switch (d.Format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		b = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		b = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		b = 4;
		break;
	default:
		*rc = CUDA_ERROR_NOT_SUPPORTED;
		return 0;
	}
	return b * d.NumChannels;
}

/* One operand into the src (dst 0) or dst side of m. */
static CUresult
batch_operand(const CUmemcpy3DOperand *o, const CUextent3D *e, size_t elem,
    CUDA_MEMCPY3D *m, int dst)
{
	CUmemorytype *type = dst ? &m->dstMemoryType : &m->srcMemoryType;

	if (o->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
		if ((o->op.ptr.rowLength != 0 && o->op.ptr.rowLength <
		    e->width) || (o->op.ptr.layerHeight != 0 &&
		    o->op.ptr.layerHeight < e->height))
			return CUDA_ERROR_INVALID_VALUE;
		*type = CU_MEMORYTYPE_UNIFIED;
		*(dst ? &m->dstDevice : &m->srcDevice) = o->op.ptr.ptr;
		*(dst ? &m->dstPitch : &m->srcPitch) = elem *
		    (o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width);
		*(dst ? &m->dstHeight : &m->srcHeight) =
		    o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
	} else if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
		*type = CU_MEMORYTYPE_ARRAY;
		*(dst ? &m->dstArray : &m->srcArray) = o->op.array.array;
		*(dst ? &m->dstXInBytes : &m->srcXInBytes) = elem *
		    o->op.array.offset.x;
		*(dst ? &m->dstY : &m->srcY) = o->op.array.offset.y;
		*(dst ? &m->dstZ : &m->srcZ) = o->op.array.offset.z;
	} else
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * One operation as a CUDA_MEMCPY3D: elements are bytes between pointers,
 * else the array's elements (both arrays' the same size).
 */
static CUresult
batch_op3d(const CUDA_MEMCPY3D_BATCH_OP *op, CUDA_MEMCPY3D *m)
{
	size_t elem = 1, se = 0, de = 0;
	CUresult rc = CUDA_SUCCESS;

	if (op->extent.width == 0 || op->extent.height == 0 ||
	    op->extent.depth == 0 || !batch_order_ok(op->srcAccessOrder,
	    op->flags))
		return CUDA_ERROR_INVALID_VALUE;
	if (op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY &&
	    (se = batch_elem(op->src.op.array.array, &rc)) == 0)
		return rc;
	if (op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY &&
	    (de = batch_elem(op->dst.op.array.array, &rc)) == 0)
		return rc;
	if (se != 0 && de != 0 && se != de)
		return CUDA_ERROR_INVALID_VALUE;
	if (se != 0 || de != 0)
		elem = se != 0 ? se : de;
	memset(m, 0, sizeof *m);
	if ((rc = batch_operand(&op->src, &op->extent, elem, m, 0)) !=
	    CUDA_SUCCESS || (rc = batch_operand(&op->dst, &op->extent, elem, m,
	    1)) != CUDA_SUCCESS)
		return rc;
	m->WidthInBytes = elem * op->extent.width;
	m->Height = op->extent.height;
	m->Depth = op->extent.depth;
	return CUDA_SUCCESS;
}

static CUresult
copy3d_batch(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
    unsigned long long flags, CUstream s, int ptsz)
{
	CUDA_MEMCPY3D m;
	size_t i;
	CUresult rc;

	if (fail != NULL)
		*fail = SIZE_MAX;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (n == 0 || ops == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = batch_stream(s, ptsz)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < n; i++) {
		if ((rc = batch_op3d(&ops[i], &m)) == CUDA_SUCCESS)
			rc = ptsz ? cuMemcpy3DAsync_v2_ptsz(&m, s) :
			    cuMemcpy3DAsync_v2(&m, s);
		if (rc != CUDA_SUCCESS) {
			if (fail != NULL)
				*fail = i;
			return rc;
		}
	}
	return CUDA_SUCCESS;
}

CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, unsigned long long flags, CUstream s) { return copy3d_batch(n, ops, fail, flags, s, 0); }
CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, unsigned long long flags, CUstream s) { return copy3d_batch(n, ops, fail, flags, s, 1); }
CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s) { return copy3d_batch(n, ops, NULL, flags, s, 0); }
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags, CUstream s) { return copy3d_batch(n, ops, NULL, flags, s, 1); }

/* ---- managed memory: prefetch and discard ------------------------------- */

/*
 * A discard leaves a managed range's contents undefined until written:
 * keeping them is one of the contents it may leave, so only the ranges
 * are checked.
 */
static CUresult
discard_check(CUdeviceptr *p, size_t *n, size_t count,
    unsigned long long flags, CUstream s, int ptsz)
{
	struct alloc a;
	size_t i;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (count == 0 || p == NULL || n == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = batch_stream(s, ptsz)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < count; i++)
		if (n[i] == 0 || mem_lookup(p[i], &a) == -1 ||
		    !(a.flags & MEM_F_MANAGED) ||
		    n[i] > a.size - (p[i] - a.base))
			return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult
prefetch_batch(CUdeviceptr *p, size_t *n, size_t count, CUmemLocation *locs,
    size_t *idx, size_t nlocs, unsigned long long flags, CUstream s,
    int ptsz, int discard)
{
	size_t i, k = 0;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (count == 0 || p == NULL || n == NULL || locs == NULL ||
	    flags != 0 || !batch_idx_ok(idx, nlocs, count))
		return CUDA_ERROR_INVALID_VALUE;
	if (discard && (rc = discard_check(p, n, count, flags, s, ptsz)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((rc = batch_stream(s, ptsz)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < count; i++) {
		if (k + 1 < nlocs && idx[k + 1] == i)
			k++;
		rc = ptsz ? cuMemPrefetchAsync_v2_ptsz(p[i], n[i], locs[k], 0,
		    s) : cuMemPrefetchAsync_v2(p[i], n[i], locs[k], 0, s);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *p, size_t *n, size_t count, CUmemLocation *l, size_t *li, size_t nl, unsigned long long f, CUstream s) { return prefetch_batch(p, n, count, l, li, nl, f, s, 0, 0); }
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *p, size_t *n, size_t count, CUmemLocation *l, size_t *li, size_t nl, unsigned long long f, CUstream s) { return prefetch_batch(p, n, count, l, li, nl, f, s, 1, 0); }
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *p, size_t *n, size_t count, CUmemLocation *l, size_t *li, size_t nl, unsigned long long f, CUstream s) { return prefetch_batch(p, n, count, l, li, nl, f, s, 0, 1); }
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *p, size_t *n, size_t count, CUmemLocation *l, size_t *li, size_t nl, unsigned long long f, CUstream s) { return prefetch_batch(p, n, count, l, li, nl, f, s, 1, 1); }
CUresult cuMemDiscardBatchAsync(CUdeviceptr *p, size_t *n, size_t count, unsigned long long f, CUstream s) { return discard_check(p, n, count, f, s, 0); }
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *p, size_t *n, size_t count, unsigned long long f, CUstream s) { return discard_check(p, n, count, f, s, 1); }

/* ---- what has no meaning across the network ----------------------------- */

/*
 * Hardware decompression (Blackwell's copy engines, where the device's
 * MEM_DECOMPRESS_ALGORITHM_MASK is not 0) is not remoted: a device
 * without it answers NOT_SUPPORTED as the driver does, one with it the
 * same, with a line in the log.
 */
static CUresult
decompress(CUmemDecompressParams *p, size_t count, unsigned flags,
    size_t *err, CUstream s, int ptsz)
{
	const struct client_device *d;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if (err != NULL)
		*err = SIZE_MAX;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	/* A device without it says so before the arguments (the 580
	 * driver on an H100, nullsweep). */
	if ((d = client_device(c->device)) == NULL ||
	    d->attr[CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK] == 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (p == NULL || count == 0 || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	log_warn("cuMemBatchDecompressAsync: not remoted");
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *p, size_t n, unsigned int f, size_t *e, CUstream s) { return decompress(p, n, f, e, s, 0); }
CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams *p, size_t n, unsigned int f, size_t *e, CUstream s) { return decompress(p, n, f, e, s, 1); }

/*
 * A dma-buf is a file descriptor of the server's kernel, for another
 * device of that machine to map: nothing the client could pass on or
 * use.  Refused once the arguments are checked.
 */
CUresult
cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t n,
    CUmemRangeHandleType type, unsigned long long flags)
{
	struct alloc a;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (handle == NULL || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
	    (flags & ~(unsigned long long)
	    CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) != 0 || n == 0 ||
	    mem_lookup(p, &a) == -1 || a.host || n > a.size - (p - a.base))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_ERROR_NOT_SUPPORTED;
}
