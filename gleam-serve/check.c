/* Wire arguments, checked once before dispatch, whatever the backend. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto.h"
#include "rpc.h"

int
check_memset_span(const struct rcall *c, uint64_t *span)
{
	uint64_t pitch = c->in[4].u, w = c->in[7].u, h = c->in[8].u, row, t;

	if (__builtin_mul_overflow(w, c->in[6].u, &row))
		return -1;
	if (h <= 1) {
		*span = row;
		return 0;
	}
	if (__builtin_mul_overflow(pitch, h - 1, &t) ||
	    __builtin_add_overflow(t, row, &t))
		return -1;
	*span = t;
	return 0;
}

/* in: ctx, stream, async, dptr, pitch, value, element, width, height */
static int
check_memset(const struct rcall *c)
{
	uint64_t el = c->in[6].u, w = c->in[7].u, h = c->in[8].u, span;

	if (el != 1 && el != 2 && el != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if (w == 0 || h == 0)
		return CUDA_SUCCESS;		/* nothing to set */
	/* Rows may not overlap: the driver refuses a pitch under a row. */
	if (h > 1 && c->in[4].u / el < w)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_memset_span(c, &span) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * The bytes that one side's addressing reaches from its origin:
 * ((z + depth - 1) * height + y + rows - 1) * pitch + x + width.
 * -1 if that does not fit in 64 bits.
 */
static int
check_span3d(uint64_t x, uint64_t y, uint64_t z, uint64_t pitch,
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

/* A side's memory type, with an array's fields as the client sends them. */
static int
copy3d_type(uint64_t type, uint64_t ptr, uint64_t pitch, uint64_t height)
{
	if (type == CU_MEMORYTYPE_ARRAY)
		return ptr != 0 && pitch == 0 && height == 0;
	return type == CU_MEMORYTYPE_HOST || type == CU_MEMORYTYPE_DEVICE;
}

int
check_copy3d(const struct rcall *c, CUDA_MEMCPY3D *m, uint64_t *srcspan,
    uint64_t *dstspan, int *empty)
{
	struct pr r;
	uint64_t f[20];
	int i;

	*empty = 1;
	memset(m, 0, sizeof *m);
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < 20; i++)
		f[i] = pr_u64(&r);
	if (pr_done(&r) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* f: srcType, srcX, srcY, srcZ, srcPtr, srcPitch, srcHeight,
	 *    dstType, dstX, dstY, dstZ, dstPtr, dstPitch, dstHeight,
	 *    width, height, depth, and three zeros.  An array side's
	 *    pointer is the array's id, its pitch and height 0. */
	if (f[14] == 0 || f[15] == 0 || f[16] == 0)
		return CUDA_SUCCESS;
	if (!copy3d_type(f[0], f[4], f[5], f[6]) ||
	    !copy3d_type(f[7], f[11], f[12], f[13]) ||
	    f[14] > CHECK_COPY_MAX || f[15] > CHECK_COPY_MAX ||
	    f[16] > CHECK_COPY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	m->srcMemoryType = (CUmemorytype)f[0];
	m->srcXInBytes = f[1]; m->srcY = f[2]; m->srcZ = f[3];
	m->srcDevice = f[4];
	m->srcPitch = f[5]; m->srcHeight = f[6];
	m->dstMemoryType = (CUmemorytype)f[7];
	m->dstXInBytes = f[8]; m->dstY = f[9]; m->dstZ = f[10];
	m->dstDevice = f[11];
	m->dstPitch = f[12]; m->dstHeight = f[13];
	m->WidthInBytes = f[14]; m->Height = f[15]; m->Depth = f[16];
	*srcspan = *dstspan = 0;
	if (f[0] != CU_MEMORYTYPE_ARRAY && (m->srcPitch < m->WidthInBytes ||
	    (m->Depth > 1 && m->srcHeight < m->Height) ||
	    check_span3d(m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
	    m->srcHeight, m, srcspan) == -1))
		return CUDA_ERROR_INVALID_VALUE;
	if (f[7] != CU_MEMORYTYPE_ARRAY && (m->dstPitch < m->WidthInBytes ||
	    (m->Depth > 1 && m->dstHeight < m->Height) ||
	    check_span3d(m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
	    m->dstHeight, m, dstspan) == -1))
		return CUDA_ERROR_INVALID_VALUE;
	/* An array's extent is its backend's to check; no sum may wrap. */
	if ((f[0] == CU_MEMORYTYPE_ARRAY && (f[1] > CHECK_COPY_MAX ||
	    f[2] > CHECK_COPY_MAX || f[3] > CHECK_COPY_MAX)) ||
	    (f[7] == CU_MEMORYTYPE_ARRAY && (f[8] > CHECK_COPY_MAX ||
	    f[9] > CHECK_COPY_MAX || f[10] > CHECK_COPY_MAX)))
		return CUDA_ERROR_INVALID_VALUE;
	/* A host side is the request's blob, or the reply's, from 0. */
	if (f[0] == CU_MEMORYTYPE_HOST && (f[4] != 0 || *srcspan >
	    c->in[4].len))
		return CUDA_ERROR_INVALID_VALUE;
	if (f[7] == CU_MEMORYTYPE_HOST && (f[11] != 0 ||
	    *dstspan > CHECK_COPY_MAX))
		return CUDA_ERROR_INVALID_VALUE;
	*empty = 0;
	return CUDA_SUCCESS;
}

int
check_format(uint64_t format, uint64_t channels, unsigned *elsize)
{
	unsigned bytes, n = 0;

	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:		bytes = 1; break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:			bytes = 2; break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:		bytes = 4; break;
	/* The normalized formats name their channels. */
	case CU_AD_FORMAT_UNORM_INT8X1:
	case CU_AD_FORMAT_SNORM_INT8X1:		bytes = 1; n = 1; break;
	case CU_AD_FORMAT_UNORM_INT8X2:
	case CU_AD_FORMAT_SNORM_INT8X2:		bytes = 1; n = 2; break;
	case CU_AD_FORMAT_UNORM_INT8X4:
	case CU_AD_FORMAT_SNORM_INT8X4:		bytes = 1; n = 4; break;
	case CU_AD_FORMAT_UNORM_INT16X1:
	case CU_AD_FORMAT_SNORM_INT16X1:	bytes = 2; n = 1; break;
	case CU_AD_FORMAT_UNORM_INT16X2:
	case CU_AD_FORMAT_SNORM_INT16X2:	bytes = 2; n = 2; break;
	case CU_AD_FORMAT_UNORM_INT16X4:
	case CU_AD_FORMAT_SNORM_INT16X4:	bytes = 2; n = 4; break;
	default:
		/* Block-compressed, YUV and packed formats: their layout is
		 * the driver's; their channels too. */
		if ((format >= CU_AD_FORMAT_BC1_UNORM &&
		    format <= CU_AD_FORMAT_Y410) ||
		    (format >= CU_AD_FORMAT_NV12 &&
		    format <= CU_AD_FORMAT_YUV444_16bit_SemiPlanar) ||
		    format == CU_AD_FORMAT_UNORM_INT_101010_2) {
			*elsize = 0;
			return CUDA_SUCCESS;
		}
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (n != 0 ? channels != n :
	    channels != 1 && channels != 2 && channels != 4)
		return CUDA_ERROR_INVALID_VALUE;
	*elsize = bytes * (unsigned)channels;
	return CUDA_SUCCESS;
}

/* Mipmap levels of an extent: 1 + log2 of its largest side. */
static unsigned
check_levels(uint64_t w, uint64_t h, uint64_t d)
{
	uint64_t m = w > h ? w : h;
	unsigned n = 1;

	if (d > m)
		m = d;
	while (m > 1) {
		m >>= 1;
		n++;
	}
	return n;
}

/* in: ctx, id, width, height, depth, format, channels, flags, levels */
static int
check_array(const struct rcall *c)
{
	uint64_t w = c->in[2].u, h = c->in[3].u, d = c->in[4].u,
	    fl = c->in[7].u, lv = c->in[8].u, layers;
	unsigned el;
	int rc;

	if (c->in[1].u == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = check_format(c->in[5].u, c->in[6].u, &el)) != CUDA_SUCCESS)
		return rc;
	if ((fl & ~(uint64_t)CHECK_ARRAY_FLAGS) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* Deferred mapping's memory is mapped by calls not remoted. */
	if (fl & CUDA_ARRAY3D_DEFERRED_MAPPING)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (w == 0 || w > CHECK_COPY_MAX || h > CHECK_COPY_MAX ||
	    d > CHECK_COPY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	/* 1D (height and depth 0), 2D (depth 0), 3D; layered: depth layers
	 * of a 1D (height 0) or 2D array. */
	if (!(fl & CUDA_ARRAY3D_LAYERED) && h == 0 && d != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((fl & CUDA_ARRAY3D_LAYERED) && d == 0)
		return CUDA_ERROR_INVALID_VALUE;
	layers = fl & CUDA_ARRAY3D_LAYERED ? d : 1;
	if (fl & CUDA_ARRAY3D_CUBEMAP) {
		if (w != h || (fl & CUDA_ARRAY3D_LAYERED ? d % 6 != 0 :
		    d != 6))
			return CUDA_ERROR_INVALID_VALUE;
		layers = d;
	}
	if ((fl & CUDA_ARRAY3D_TEXTURE_GATHER) && (h == 0 || d != 0))
		return CUDA_ERROR_INVALID_VALUE;
	(void)layers;
	if (lv != 0 && lv > check_levels(w, h, fl & (CUDA_ARRAY3D_LAYERED |
	    CUDA_ARRAY3D_CUBEMAP) ? 0 : d))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

int
check_tex(const struct rcall *c, struct rpc_res *r, struct rpc_texd *t,
    struct rpc_view *v)
{
	int surf = c->in[2].u != 0, i;
	unsigned el;

	memset(t, 0, sizeof *t);
	memset(v, 0, sizeof *v);
	if (c->in[1].u == 0 || c->in[2].u > 1 ||
	    rpc_res_dec(&c->in[3], r) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* A surface has no texture or view descriptor. */
	if (surf ? c->in[4].len != 0 || c->in[5].len != 0 ||
	    r->type != CU_RESOURCE_TYPE_ARRAY :
	    rpc_texd_dec(&c->in[4], t) == -1 ||
	    (c->in[5].len != 0 && rpc_view_dec(&c->in[5], v) == -1))
		return CUDA_ERROR_INVALID_VALUE;
	if (r->flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	switch (r->type) {
	case CU_RESOURCE_TYPE_ARRAY:
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if (r->h == 0 || r->format != 0 || r->channels != 0 ||
		    r->width != 0 || r->height != 0 || r->pitch != 0)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
	case CU_RESOURCE_TYPE_PITCH2D:
		/* A view is for arrays only. */
		if (r->h == 0 || c->in[5].len != 0 ||
		    check_format(r->format, r->channels, &el) != CUDA_SUCCESS ||
		    el == 0 || r->width == 0)
			return CUDA_ERROR_INVALID_VALUE;
		/* A pitch under a row the real driver (580) takes, if it
		 * keeps the texture pitch alignment (32); the backends bound
		 * what the rows span. */
		if (r->type == CU_RESOURCE_TYPE_LINEAR ? r->height != 0 ||
		    r->pitch != 0 : r->height == 0 || r->width >
		    CHECK_COPY_MAX || r->pitch == 0 || r->pitch % 32 != 0)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (surf)
		return CUDA_SUCCESS;
	for (i = 0; i < 3; i++)
		if (t->addr[i] > CU_TR_ADDRESS_MODE_BORDER)
			return CUDA_ERROR_INVALID_VALUE;
	if (t->filter > CU_TR_FILTER_MODE_LINEAR ||
	    t->mipfilter > CU_TR_FILTER_MODE_LINEAR ||
	    (t->flags & ~(uint32_t)CHECK_TEX_FLAGS) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[5].len != 0 && (v->format > CU_RES_VIEW_FORMAT_UNSIGNED_BC7 ||
	    v->firstmip > v->lastmip ||
	    v->firstlayer > v->lastlayer))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* in[first..first+5]: grid and block, as every GPU so far bounds them. */
static int
check_geometry(const struct rcall *c, int first)
{
	uint64_t gx = c->in[first].u, gy = c->in[first + 1].u,
	    gz = c->in[first + 2].u, bx = c->in[first + 3].u,
	    by = c->in[first + 4].u, bz = c->in[first + 5].u;

	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (gx > 2147483647u || gy > 65535 || gz > 65535 || bx > 1024 ||
	    by > 1024 || bz > 64 || bx * by * bz > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

int
check_attrs(const struct rpc_val *v, int *rc)
{
	struct pr r;
	uint32_t id;
	int i, n;

	*rc = CUDA_ERROR_INVALID_VALUE;
	if (v->len % CHECK_ATTR_LEN != 0 ||
	    v->len / CHECK_ATTR_LEN > CHECK_ATTRS_MAX)
		return -1;
	n = (int)(v->len / CHECK_ATTR_LEN);
	pr_init(&r, v->p, v->len);
	for (i = 0; i < n; i++) {
		id = pr_u32(&r);
		(void)pr_take(&r, CHECK_ATTR_LEN - 4);
		switch (id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
			break;
		default:
			*rc = CUDA_ERROR_NOT_SUPPORTED;
			return -1;
		}
	}
	*rc = CUDA_SUCCESS;
	return n;
}

/*
 * in: ctx, function, grid[3], block[3], shmem, stream, then flags or
 * attributes, then params (both launches).
 */
static int
check_launch(const struct rcall *c, int ex)
{
	int rc;

	if ((rc = check_geometry(c, 2)) != CUDA_SUCCESS)
		return rc;
	if (c->in[8].u > CHECK_SHMEM_MAX || c->in[11].len > CHECK_ARGMAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (ex && check_attrs(&c->in[10], &rc) == -1)
		return rc;
	return CUDA_SUCCESS;
}

/* in: function, attribute, value: the attributes a client may set. */
static int
check_func_attr(const struct rcall *c)
{
	return check_attr_value(c->in[1].u, (int64_t)c->in[2].u);
}

int
check_attr_value(uint64_t attr, int64_t v)
{
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		return v < 0 || v > CHECK_SHMEM_MAX ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return v < -1 || v > 100 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;	/* read-only, or no attribute */
}

/*
 * Virtual memory management: sizes that are not zero and ranges that do
 * not wrap; no flags where the driver reserves them (must be 0); access
 * descriptors of 12 bytes each, VMM_ACCESS_MAX at most.
 */
static int
check_vmm(const struct rcall *c)
{
	uint64_t t;

	switch (c->d->type) {
	case R_VMM_RESERVE:
		/* in: ctx, size, alignment, address hint, flags */
		if (c->in[1].u == 0 || (c->in[2].u & (c->in[2].u - 1)) != 0 ||
		    __builtin_add_overflow(c->in[1].u, c->in[2].u, &t))
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case R_VMM_FREE:
	case R_VMM_UNMAP:
		/* in: ctx, va, size */
		if (c->in[1].u == 0 || c->in[2].u == 0 ||
		    __builtin_add_overflow(c->in[1].u, c->in[2].u, &t))
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case R_VMM_CREATE:
		/* in: ctx, handle id, size, flags, ... */
		if (c->in[1].u == 0 || c->in[2].u == 0 || c->in[3].u != 0)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case R_VMM_MAP:
		/* in: ctx, va, size, offset, handle id, flags */
		if (c->in[1].u == 0 || c->in[2].u == 0 || c->in[5].u != 0 ||
		    __builtin_add_overflow(c->in[1].u, c->in[2].u, &t) ||
		    __builtin_add_overflow(c->in[3].u, c->in[2].u, &t))
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case R_VMM_SET_ACCESS:
		/* in: ctx, va, size, descriptors */
		if (c->in[1].u == 0 || c->in[2].u == 0 ||
		    __builtin_add_overflow(c->in[1].u, c->in[2].u, &t) ||
		    c->in[3].len == 0 || c->in[3].len % CHECK_ACCESS_LEN != 0 ||
		    c->in[3].len / CHECK_ACCESS_LEN > CHECK_ACCESS_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	}
	return CUDA_SUCCESS;
}

int
check_jit_opts(const struct rpc_val *v, int *opt, uint64_t *val,
    unsigned *n)
{
	struct pr r;
	unsigned i;

	if (v->len % RPC_JIT_OPT_LEN != 0 ||
	    v->len / RPC_JIT_OPT_LEN > RPC_JIT_OPTS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*n = v->len / RPC_JIT_OPT_LEN;
	pr_init(&r, v->p, v->len);
	for (i = 0; i < *n; i++) {
		opt[i] = (int)pr_u32(&r);
		val[i] = pr_u64(&r);
		switch (opt[i]) {
		case CU_JIT_GLOBAL_SYMBOL_NAMES:
		case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
		case CU_JIT_REFERENCED_KERNEL_NAMES:
		case CU_JIT_REFERENCED_VARIABLE_NAMES:
			/* Their values point into the client. */
			return CUDA_ERROR_INVALID_VALUE;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			if (val[i] > RPC_JIT_LOG_MAX)
				return CUDA_ERROR_INVALID_VALUE;
			break;
		}
		if (opt[i] < 0 || opt[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* in: ctx, stream, flags, operations */
static int
check_memops(const struct rcall *c)
{
	struct pr r;
	uint32_t i, n, type;

	if (c->in[3].len == 0 || c->in[3].len % RPC_MEMOP_LEN != 0 ||
	    c->in[3].len / RPC_MEMOP_LEN > RPC_MEMOPS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	n = c->in[3].len / RPC_MEMOP_LEN;
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < n; i++) {
		type = pr_u32(&r);
		(void)pr_take(&r, RPC_MEMOP_LEN - 4);
		if (type < CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
		    type > CU_STREAM_MEM_OP_BARRIER)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * A graph node's request, field f of c, decoded into *sub as a call of
 * type (on no stream) and checked as one: CUDA_SUCCESS or the CUresult.
 * sub NULL: checked only.
 */
int
check_graph_sub(const struct rcall *c, int f, uint16_t type,
    struct rcall *sub)
{
	struct rcall tmp;
	int sf = type == R_LAUNCH ? 9 : type == R_EVENT_RECORD ? 2 : 1;

	if (sub == NULL)
		sub = &tmp;
	memset(sub, 0, sizeof *sub);
	sub->cl = c->cl;
	sub->d = rpc_lookup(type);
	if (rpc_unpack(c->in[f].p, c->in[f].len, sub->d->req, sub->in) ==
	    -1 || sub->in[sf].u != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* A copy node's sides are device memory: no host data travels. */
	if (type == R_MEM_3D && sub->in[4].len != 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	return check_call(sub);
}

/* The call a node of graph-node type t stands for, or 0. */
uint16_t
check_graph_call(uint64_t t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL:		return R_LAUNCH;
	case CU_GRAPH_NODE_TYPE_MEMSET:		return R_MEMSET;
	case CU_GRAPH_NODE_TYPE_MEMCPY:		return R_MEM_3D;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:	return R_EVENT_RECORD;
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:	return R_STREAM_WAIT_EVENT;
	case CU_GRAPH_NODE_TYPE_HOST:		return R_HOST_FUNC;
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:	return R_STREAM_MEMOP;
	}
	return 0;
}

static int
check_graph_add(const struct rcall *c)
{
	uint16_t call = check_graph_call(c->in[2].u);

	if (c->in[3].len % 8 != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (call != 0)
		return check_graph_sub(c, 4, call, NULL);
	if (c->in[2].u == CU_GRAPH_NODE_TYPE_EMPTY)
		return c->in[4].len == 0 ? CUDA_SUCCESS :
		    CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u == CU_GRAPH_NODE_TYPE_GRAPH ||
	    c->in[2].u == CU_GRAPH_NODE_TYPE_MEM_FREE)
		return c->in[4].len == 8 ? CUDA_SUCCESS :
		    CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		return check_memalloc(&c->in[4], NULL);
	if (c->in[2].u == CU_GRAPH_NODE_TYPE_CONDITIONAL)
		return check_cond(&c->in[4], NULL);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * A conditional node's request (rpc.h, RPC_SIG_COND) decoded into v (room
 * for its 4 fields; NULL: checked only): a type and a size the driver
 * takes (if: 1 or 2 bodies, while: 1, switch: 1 or more), an id for each
 * body, none 0.
 */
int
check_cond(const struct rpc_val *f, struct rpc_val *v)
{
	struct rpc_val tmp[RPC_MAX_FIELDS];
	struct pr r;
	uint32_t i;

	if (v == NULL)
		v = tmp;
	if (rpc_unpack(f->p, f->len, RPC_SIG_COND, v) == -1 || v[0].u == 0)
		return CUDA_ERROR_INVALID_VALUE;
	switch (v[1].u) {
	case CU_GRAPH_COND_TYPE_IF:
		if (v[2].u != 1 && v[2].u != 2)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_GRAPH_COND_TYPE_WHILE:
		if (v[2].u != 1)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_GRAPH_COND_TYPE_SWITCH:
		if (v[2].u == 0 || v[2].u > RPC_COND_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (v[3].len != v[2].u * 8)
		return CUDA_ERROR_INVALID_VALUE;
	pr_init(&r, v[3].p, v[3].len);
	for (i = 0; i < v[2].u; i++)
		if (pr_u64(&r) == 0)
			return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * A memory allocation node's request (rpc.h, RPC_SIG_MEMALLOC) decoded
 * into v (room for its 7 fields; NULL: checked only): its address must
 * be 0, the access descriptors whole and few.
 */
int
check_memalloc(const struct rpc_val *f, struct rpc_val *v)
{
	struct rpc_val tmp[RPC_MAX_FIELDS];

	if (v == NULL)
		v = tmp;
	if (rpc_unpack(f->p, f->len, RPC_SIG_MEMALLOC, v) == -1 ||
	    v[0].u != 0 || v[6].len % 12 != 0 ||
	    v[6].len / 12 > RPC_MEMALLOC_ACCESS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Edge data: whole entries, one per node, or none. */
static int
check_edges(const struct rpc_val *nodes, const struct rpc_val *edges)
{
	if (nodes->len % 8 != 0 || nodes->len / 8 > RPC_CAPDEPS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (edges->len != 0 && edges->len != nodes->len / 8 * RPC_EDGE_LEN)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * R_STREAM_ATTR: ctx, stream, op, attribute, source, value: a stream
 * attribute, whose value a set gives at its exact length.
 */
static int
check_stream_attr(const struct rcall *c)
{
	size_t len = rpc_sattr_len((uint32_t)c->in[3].u);

	if (c->in[2].u > SATTR_COPY)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u == SATTR_COPY)
		return c->in[5].len == 0 ? CUDA_SUCCESS :
		    CUDA_ERROR_INVALID_VALUE;
	if (len == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return c->in[5].len == (c->in[2].u == SATTR_SET ? len : 0) ?
	    CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/*
 * R_SM_SPLIT: op, groups, flags, minimum count, input, group parameters,
 * wanted.  A structured split's parameters are one per group, or none;
 * a split by count has none.
 */
static int
check_sm_split(const struct rcall *c)
{
	uint64_t groups = c->in[1].u;

	if (c->in[0].u > SPLIT_STRUCTURED || groups > RPC_DEVRES_MAX ||
	    c->in[4].len != RPC_DEVRES_LEN ||
	    (c->in[6].u & ~(uint64_t)(SPLIT_WANT_RESULT |
	    SPLIT_WANT_REMAINDER)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[0].u == SPLIT_BY_COUNT)
		return c->in[5].len != 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	if (c->in[5].len != 0 && c->in[5].len != groups * RPC_SMGROUP_LEN)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* R_KNODE_ATTR: as R_STREAM_ATTR's, for a kernel node. */
static int
check_knode_attr(const struct rcall *c)
{
	size_t len = rpc_kattr_len((uint32_t)c->in[3].u);

	if (c->in[2].u > SATTR_COPY)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u == SATTR_COPY)
		return c->in[6].len == 0 ? CUDA_SUCCESS :
		    CUDA_ERROR_INVALID_VALUE;
	if (len == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return c->in[6].len == (c->in[2].u == SATTR_SET ? len : 0) ?
	    CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* R_TEXREF_NEW: ctx, id, module, surface, name. */
static int
check_texref_new(const struct rcall *c)
{
	if (c->in[1].u == 0 || c->in[3].u > 1)
		return CUDA_ERROR_INVALID_VALUE;
	/* A created reference is a texture's and has no name. */
	if (c->in[2].u == 0 ? c->in[3].u != 0 || c->in[4].len != 0 :
	    c->in[4].len == 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * R_TEXREF_SET (set) and R_TEXREF_GET: the operation, its index and the
 * data's exact length.  The values are the driver's to judge (the client
 * checked a setter's, which goes one-way).
 */
static int
check_texref(const struct rcall *c, int set)
{
	uint64_t op = c->in[1].u, idx = c->in[2].u;
	uint32_t len = set ? c->in[5].len : 0;
	unsigned el;

	if (op >= TREF_OPS || (!set && op == TREF_ADDRESS2D))
		return CUDA_ERROR_INVALID_VALUE;
	if (op == TREF_ADDRMODE ? idx > 2 : (op != TREF_ARRAY &&
	    op != TREF_MIPMAP && idx != 0) || (!set && idx != 0 &&
	    op != TREF_ADDRMODE))
		return CUDA_ERROR_INVALID_VALUE;
	if (set && len != (op == TREF_ADDRESS2D ? RPC_TREF2D_LEN :
	    op == TREF_BORDER ? RPC_TREF_BORDER_LEN : 0))
		return CUDA_ERROR_INVALID_VALUE;
	if (set && op == TREF_FORMAT)
		return check_format(c->in[3].u, c->in[4].u, &el);
	return CUDA_SUCCESS;
}

/* R_DEV_QUERY: which, device, arguments of that query's exact length. */
static int
check_dev_query(const struct rcall *c)
{
	uint32_t len = c->in[2].len;

	if ((int32_t)c->in[1].u < 0)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (c->in[0].u) {
	case DEVQ_TEX1D:
		return len == 8 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case DEVQ_P2P_ATOMIC:
		if (len < 4)
			return CUDA_ERROR_INVALID_VALUE;
		len -= 4;
		/* FALLTHROUGH */
	case DEVQ_HOST_ATOMIC:
		return len % 4 != 0 || len / 4 > RPC_ATOMIC_OPS_MAX ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

int
check_call(const struct rcall *c)
{
	int jo[RPC_JIT_OPTS_MAX];
	uint64_t jv[RPC_JIT_OPTS_MAX];
	unsigned jn;
	struct rpc_tmap t;
	struct rpc_res res;
	struct rpc_texd texd;
	struct rpc_view view;
	CUDA_MEMCPY3D m;
	uint64_t a, b;
	unsigned f;
	int rc, empty;

	switch (c->d->type) {
	case R_PTR_ATTR:
		/* Only those the client cannot tell itself: sizes and
		 * addresses of the driver's mappings and (a VMM range's)
		 * reservations. */
		return c->in[1].u != CU_POINTER_ATTRIBUTE_MAPPING_SIZE &&
		    c->in[1].u != CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR &&
		    c->in[1].u != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
		    c->in[1].u != CU_POINTER_ATTRIBUTE_RANGE_SIZE ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_CTX_CREATE:
	case R_PRIMARY_RETAIN:
		/* A CUdevice is an int. */
		return (int32_t)c->in[1].u < 0 ? CUDA_ERROR_INVALID_DEVICE :
		    CUDA_SUCCESS;
	case R_MEM_ALLOC:
	case R_MEM_ALLOC_HOST:
		return c->in[1].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_MEM_ALLOC_PITCH:
		f = (unsigned)c->in[3].u;
		if (c->in[1].u == 0 || c->in[2].u == 0 ||
		    (f != 4 && f != 8 && f != 16))
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_MEM_POOL:
		return c->in[1].u == 0 || c->in[1].u > c->in[2].u ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_MEM_MAP:
		return c->in[2].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_MEM_DTOH:
		return c->in[4].u > CHECK_COPY_MAX ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_MEM_3D:
		return check_copy3d(c, &m, &a, &b, &empty);
	case R_MEMSET:
		return check_memset(c);
	case R_MODULE_LOAD:
	case R_LIBRARY_LOAD:
		/* After remote.c put a staged or cached image in its place. */
		return c->in[2].len == 0 ? CUDA_ERROR_INVALID_IMAGE :
		    CUDA_SUCCESS;
	case R_LAUNCH:
		return check_launch(c, 0);
	case R_LAUNCH_EX:
		return check_launch(c, 1);
	case R_OCC_CLUSTERS:
		/* what: 0 max active clusters, 1 max potential cluster size */
		if (c->in[0].u > 1)
			return CUDA_ERROR_INVALID_VALUE;
		return check_attrs(&c->in[9], &rc) == -1 ? rc : CUDA_SUCCESS;
	case R_STREAM_CREATE:
		/* Ids 0, 1 and 2 are the special streams. */
		if (c->in[1].u <= 2 || (c->in[2].u & ~(uint64_t)
		    CU_STREAM_NON_BLOCKING) != 0)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_STREAM_WAIT_EVENT:
		return c->in[3].u != 0 && c->in[3].u != CU_EVENT_WAIT_EXTERNAL ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_EVENT_CREATE:
		f = (unsigned)c->in[2].u;
		if ((f & ~(unsigned)(CU_EVENT_BLOCKING_SYNC |
		    CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) != 0 ||
		    ((f & CU_EVENT_INTERPROCESS) &&
		    !(f & CU_EVENT_DISABLE_TIMING)))
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_FUNC_SET_ATTR:
		return check_func_attr(c);
	case R_FUNC_SET_CACHE:
		return c->in[1].u > CU_FUNC_CACHE_PREFER_EQUAL ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_OCCUPANCY:
		/* in: function, block size (an int), shmem, flags */
		if ((int32_t)c->in[1].u <= 0 ||
		    c->in[3].u > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_CAPTURE_BEGIN:
		/* The legacy and per-thread streams are never captured here
		 * (the client gives each thread a stream of its own). */
		if (c->in[1].u <= 2)
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		return c->in[2].u > CU_STREAM_CAPTURE_MODE_RELAXED ||
		    c->in[3].u == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_GRAPH_CREATE:
		return c->in[0].u == 0 || c->in[1].u != 0 ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_GRAPH_INSTANTIATE:
		return c->in[1].u == 0 || (c->in[3].u & ~(uint64_t)(
		    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
		    CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
		    CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
		    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)) != 0 ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_GRAPH_CLONE:
		return c->in[0].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_GRAPH_COUNT:
		return c->in[1].u > 2 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_GRAPH_ADD:
		return check_graph_add(c);
	case R_GRAPH_EDGES:
		return c->in[1].u > 1 || c->in[2].len % 16 != 0 ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_KNODE_SET:
		return check_graph_sub(c, 3, R_LAUNCH, NULL);
	case R_NODE_SET:
		if (c->in[3].u == CU_GRAPH_NODE_TYPE_GRAPH)
			return c->in[4].len == 8 ? CUDA_SUCCESS :
			    CUDA_ERROR_INVALID_VALUE;
		if (c->in[3].u == CU_GRAPH_NODE_TYPE_KERNEL ||
		    check_graph_call(c->in[3].u) == 0)
			return CUDA_ERROR_INVALID_VALUE;
		return check_graph_sub(c, 4, check_graph_call(c->in[3].u),
		    NULL);
	case R_HOST_FUNC:
		/* A callback id: the client's, never 0. */
		return c->in[2].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_NODE_ENABLED:
		return c->in[3].u > 1 || c->in[4].u > 1 ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_GRAPH_MEM:
		return c->in[1].u > 2 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_STREAM_MEMOP:
		return check_memops(c);
	case R_LINK_CREATE:
		return check_jit_opts(&c->in[2], jo, jv, &jn);
	case R_MODULE_LOAD_EX:
		/* After remote.c put a staged or cached image in its place. */
		if (c->in[2].len == 0)
			return CUDA_ERROR_INVALID_IMAGE;
		if (c->in[3].u > 1)
			return CUDA_ERROR_INVALID_VALUE;
		return check_jit_opts(&c->in[4], jo, jv, &jn);
	case R_LINK_ADD:
		/* After remote.c put a staged input in its place. */
		if (c->in[1].u >= CU_JIT_NUM_INPUT_TYPES || c->in[2].len == 0)
			return CUDA_ERROR_INVALID_VALUE;
		return check_jit_opts(&c->in[4], jo, jv, &jn);
	case R_TMAP_ENCODE:
		/* The map's offset from 128-byte alignment, the map, and
		 * arguments of the rank that sizes every array read. */
		if (c->in[2].u >= TMAP_BYTES || c->in[3].len != TMAP_BYTES ||
		    rpc_tmap_dec((uint32_t)c->in[1].u, c->in[4].p,
		    c->in[4].len, &t) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_ARRAY_CREATE:
		return check_array(c);
	case R_ARRAY_DESTROY:
	case R_TEX_DESTROY:
		return c->in[1].u > 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_MIPMAP_LEVEL:
		return c->in[2].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_ARRAY_MEMREQ:
		return c->in[1].u > 1 || (int32_t)c->in[2].u < 0 ?
		    CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
	case R_TEX_CREATE:
		return check_tex(c, &res, &texd, &view);
	case R_VMM_RESERVE:
	case R_VMM_FREE:
	case R_VMM_CREATE:
	case R_VMM_MAP:
	case R_VMM_UNMAP:
	case R_VMM_SET_ACCESS:
		return check_vmm(c);
	case R_CTX_OP:
		/* in: ctx, op, event, a, b; the flush's target and scope */
		if (c->in[1].u > CTXOP_GREEN_WAIT)
			return CUDA_ERROR_INVALID_VALUE;
		if (c->in[1].u == CTXOP_FLUSH && (c->in[3].u !=
		    CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
		    (c->in[4].u != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
		    c->in[4].u != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)))
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_DEV_QUERY:
		return check_dev_query(c);
	case R_STREAM_ATTR:
		return check_stream_attr(c);
	case R_KNODE_ATTR:
		return check_knode_attr(c);
	case R_TEXREF_NEW:
		return check_texref_new(c);
	case R_TEXREF_SET:
		return check_texref(c, 1);
	case R_TEXREF_GET:
		return check_texref(c, 0);
	case R_ARRAY_SPARSE:
		return c->in[1].u > 1 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_MAP_ARRAY:
		/* Whole entries, at least one; each the backend's to read. */
		return c->in[2].len == 0 || c->in[2].len % RPC_MAPINFO_LEN ||
		    c->in[2].len / RPC_MAPINFO_LEN > RPC_MAPINFO_MAX ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_CAPTURE_TO_GRAPH:
		/* As R_CAPTURE_BEGIN, into the graph named. */
		if (c->in[1].u <= 2)
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		if (c->in[2].u > CU_STREAM_CAPTURE_MODE_RELAXED)
			return CUDA_ERROR_INVALID_VALUE;
		return check_edges(&c->in[4], &c->in[5]);
	case R_UOBJ_CREATE:
	case R_UOBJ_RELEASE:
		return c->in[0].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_GRAPH_UOBJ:
		return c->in[2].u == 0 || c->in[2].u > INT32_MAX ||
		    c->in[3].u > 1 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_CHILD_GRAPH:
		return c->in[2].u == 0 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	case R_COND_HANDLE:
		return c->in[3].u & ~(uint64_t)CU_GRAPH_COND_ASSIGN_DEFAULT ?
		    CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	case R_CAPTURE_DEPS:
		if (c->in[2].u > CAPDEPS_SET ||
		    (c->in[2].u == CAPDEPS_GET && c->in[3].len != 0))
			return CUDA_ERROR_INVALID_VALUE;
		return check_edges(&c->in[3], &c->in[4]);
	case R_DEV_RESOURCE:
		/* in: which, device, ctx, stream, type */
		if (c->in[0].u > DEVRES_STREAM)
			return CUDA_ERROR_INVALID_VALUE;
		return c->in[0].u == DEVRES_DEVICE && (int32_t)c->in[1].u < 0 ?
		    CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
	case R_SM_SPLIT:
		return check_sm_split(c);
	case R_RES_DESC:
		if (c->in[0].u == 0 || c->in[1].len % RPC_DEVRES_LEN != 0 ||
		    c->in[1].len / RPC_DEVRES_LEN > RPC_DEVRES_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	case R_GREEN_CREATE:
		if (c->in[0].u == 0)
			return CUDA_ERROR_INVALID_VALUE;
		return (int32_t)c->in[2].u < 0 ? CUDA_ERROR_INVALID_DEVICE :
		    CUDA_SUCCESS;
	case R_GREEN_STREAM:
		/* As R_STREAM_CREATE's; the flags are the driver's to judge. */
		return c->in[1].u <= 2 ? CUDA_ERROR_INVALID_VALUE :
		    CUDA_SUCCESS;
	}
	return CUDA_SUCCESS;
}

int
check_dispatch(struct rcall *c, const backend_fn *fn)
{
	int rc;

	if ((rc = check_call(c)) != CUDA_SUCCESS)
		return rc;
	return fn[c->d->type - R_OPEN](c);
}

/*
 * R_GRAPH_NODES' last part: the parameters of the listing's kernel nodes,
 * each as the backend's R_KNODE_GET (get) answers it, so that a client
 * that reads them all after each capture (ggml, per token) asks once, not
 * node by node.  A node get refuses is left out: the client asks for it
 * and hears why.  GRAPH_KNODES_BYTES bounds the parameter bytes sent.
 */
#define GRAPH_KNODES_BYTES	(1u << 20)

void
graph_knodes_put(struct rcall *c, backend_fn get, const uint64_t *node,
    const uint32_t *type, size_t n)
{
	struct rcall sub;
	struct pw w;
	size_t i, bytes = 0;
	uint32_t k = 0;
	int j;

	pw_init(&w);
	for (i = 0; i < n; i++) {
		if (type[i] != CU_GRAPH_NODE_TYPE_KERNEL)
			continue;
		memset(&sub, 0, sizeof sub);
		sub.cl = c->cl;
		sub.d = rpc_lookup(R_KNODE_GET);
		sub.in[0].u = c->in[0].u;
		sub.in[1].u = node[i];
		if (get(&sub) == CUDA_SUCCESS &&
		    bytes + sub.out[8].len <= GRAPH_KNODES_BYTES) {
			pw_u32(&w, (uint32_t)i);
			pw_u64(&w, sub.out[0].u);
			for (j = 1; j <= 7; j++)
				pw_u32(&w, (uint32_t)sub.out[j].u);
			pw_u32(&w, sub.out[8].len);
			pw_bytes(&w, sub.out[8].p, sub.out[8].len);
			bytes += sub.out[8].len;
			k++;
		}
		free(sub.scratch);
		pw_free(&sub.blob);
	}
	if (!w.bad) {
		pw_u32(&c->blob, k);
		pw_bytes(&c->blob, w.p, w.len);
	} else
		pw_u32(&c->blob, 0);
	pw_free(&w);
}

/*
 * R_CAPTURE_END's reply: the new graph's listing as R_GRAPH_NODES (list,
 * the backend's) answers it for graph id; nothing where that fails (the
 * client asks again, and hears why).
 */
void
graph_listing_put(struct rcall *c, backend_fn list, uint64_t id)
{
	struct rcall sub;

	memset(&sub, 0, sizeof sub);
	sub.cl = c->cl;
	sub.d = rpc_lookup(R_GRAPH_NODES);
	sub.in[0].u = id;
	pw_init(&sub.blob);
	if (id != 0 && list(&sub) == CUDA_SUCCESS && !sub.blob.bad) {
		c->blob = sub.blob;
		c->out[0].p = c->blob.p;
		c->out[0].len = (uint32_t)c->blob.len;
	} else
		pw_free(&sub.blob);
	free(sub.scratch);
}

void
rclient_touch(struct rclient *cl, struct robj *o)
{
	o->touched = 1;
	if (o->listed || cl->streams_over)
		return;
	if (cl->nstreams == RSTREAMS_MAX) {
		cl->streams_over = 1;
		return;
	}
	o->listed = 1;
	cl->streams[cl->nstreams++] = o->id;
}

void
idle_report(struct rcall *c, const struct robj *ctx, uint64_t waited,
    int (*capturing)(struct robj *), int (*idle)(struct robj *))
{
	struct rclient *cl = c->cl;
	struct robj *o, *os[RSTREAMS_MAX];
	uint32_t i, j;
	int pass, cap = 0, w;

	if (cl->streams_over || ctx == NULL || c->blob.len != 0)
		return;
	/* The list without the streams destroyed since; any capturing? */
	for (i = j = 0; i < cl->nstreams; i++)
		if ((o = robj_get(cl, cl->streams[i], RK_STREAM)) != NULL &&
		    o->listed) {
			cl->streams[j] = cl->streams[i];
			os[j++] = o;
			w = o->ctx == ctx && (waited == IDLE_WAITED_ALL ||
			    o->id == waited);
			cap |= o->cap != NULL || (o->touched && !w &&
			    capturing != NULL && capturing(o));
		}
	cl->nstreams = j;
	if (cap)
		return;
	/* The ones just found idle first: the client keeps a few. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < cl->nstreams; i++) {
			o = os[i];
			if (o->ctx != ctx || o->touched != (pass == 0))
				continue;
			/* Synchronized: idle, and the client knows. */
			if (waited == IDLE_WAITED_ALL || o->id == waited) {
				o->touched = 0;
				continue;
			}
			if (pass == 0 && idle != NULL && idle(o) != 1)
				continue;
			o->touched = 0;
			pw_u64(&c->blob, ctx->id);
			pw_u64(&c->blob, o->id);
		}
	if (c->blob.bad) {
		pw_free(&c->blob);
		return;
	}
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
}
