/* The remoting calls' table and their generic encoding. */
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

/*
 * Per call: its name, request and reply signatures, and what it does to
 * memory (rpc.h's RPC_F_*; 0: nothing the client must know of).
 */
#define RD	RPC_F_READS_DEV
#define WR	RPC_F_WRITES_DEV
#define FH	RPC_F_FROM_HOST
#define DR	RPC_F_DST_RANGE
#define WT	RPC_F_WAITS
#define PL	RPC_F_POLLS
#define TH	RPC_F_TO_HOST
#define NS	RPC_F_NO_STREAM
static const struct rpc_desc rpc_table[RPC_NCALLS] = {
#define C(t, n, q, r, f) [t - R_OPEN] = { t, n, q, r, f }
	C(R_OPEN,		"open",			"I",		"IB", 0),
	C(R_CTX_CREATE,		"cuCtxCreate",		"QII",		"", 0),
	C(R_CTX_DESTROY,	"cuCtxDestroy",		"Q",		"", 0),
	C(R_PRIMARY_RETAIN,	"cuDevicePrimaryCtxRetain", "QI",	"", 0),
	C(R_PRIMARY_RELEASE,	"cuDevicePrimaryCtxRelease", "Q",	"", 0),
	C(R_PRIMARY_RESET,	"cuDevicePrimaryCtxReset", "Q",		"", 0),
	C(R_CTX_SYNC,		"cuCtxSynchronize",	"Q",		"B", WT),
	C(R_CTX_SET_LIMIT,	"cuCtxSetLimit",	"QIQ",		"", 0),
	C(R_MEM_ALLOC,		"cuMemAlloc",		"QQ",		"Q", 0),
	C(R_MEM_ALLOC_PITCH,	"cuMemAllocPitch",	"QQQI",		"QQ", 0),
	C(R_MEM_FREE,		"cuMemFree",		"QQ",		"", 0),
	C(R_MEM_GET_INFO,	"cuMemGetInfo",		"Q",		"QQ", 0),
	C(R_MEM_HTOD,		"cuMemcpyHtoD",		"QQIQB",	"", WR|FH|DR),
	C(R_MEM_DTOH,		"cuMemcpyDtoH",		"QQIQQ",	"B", RD|WT|TH),
	C(R_MEM_DTOD,		"cuMemcpyDtoD",		"QQIQQQ",	"", RD|WR),
	C(R_MEM_3D,		"cuMemcpy3D",		"QQIBB",	"B", RD|WR|WT|TH),
	C(R_MEMSET,		"cuMemset",		"QQIQQIIQQ",	"", WR),
	C(R_MODULE_LOAD,	"cuModuleLoadData",	"QQB",		"B", 0),
	C(R_MODULE_UNLOAD,	"cuModuleUnload",	"Q",		"", 0),
	C(R_MODULE_GET_FUNC,	"cuModuleGetFunction",	"QQS",		"B", 0),
	C(R_MODULE_GET_GLOBAL,	"cuModuleGetGlobal",	"QS",		"QQ", 0),
	C(R_LIBRARY_LOAD,	"cuLibraryLoadData",	"QQB",		"B", 0),
	C(R_LIBRARY_UNLOAD,	"cuLibraryUnload",	"Q",		"", 0),
	C(R_LIBRARY_GET_KERNEL,	"cuLibraryGetKernel",	"QQS",		"B", 0),
	C(R_LIBRARY_GET_GLOBAL,	"cuLibraryGetGlobal",	"QQS",		"QQ", 0),
	C(R_LAUNCH,		"cuLaunchKernel",	"QQIIIIIIIQIB",	"", RD|WR),
	C(R_STREAM_CREATE,	"cuStreamCreate",	"QQIi",		"", 0),
	C(R_STREAM_DESTROY,	"cuStreamDestroy",	"Q",		"", 0),
	C(R_STREAM_SYNC,	"cuStreamSynchronize",	"QQ",		"B", WT),
	C(R_STREAM_QUERY,	"cuStreamQuery",	"QQ",		"", PL),
	C(R_STREAM_WAIT_EVENT,	"cuStreamWaitEvent",	"QQQI",		"", 0),
	C(R_EVENT_CREATE,	"cuEventCreate",	"QQI",		"", 0),
	C(R_EVENT_DESTROY,	"cuEventDestroy",	"Q",		"", 0),
	C(R_EVENT_RECORD,	"cuEventRecord",	"QQQ",		"", 0),
	C(R_EVENT_SYNC,		"cuEventSynchronize",	"Q",		"B", WT),
	C(R_EVENT_QUERY,	"cuEventQuery",		"Q",		"", PL),
	C(R_EVENT_ELAPSED,	"cuEventElapsedTime",	"QQ",		"I", 0),
	C(R_FUNC_SET_ATTR,	"cuFuncSetAttribute",	"QIi",		"", 0),
	C(R_FUNC_SET_CACHE,	"cuFuncSetCacheConfig",	"QI",		"", 0),
	C(R_OCCUPANCY,		"cuOccupancyMaxActiveBlocksPerMultiprocessor", "QIQI", "I", 0),
	C(R_STAGE_PUT,		"stage",		"QQB",		"", 0),
	C(R_OCC_SMEM,		"cuOccupancyAvailableDynamicSMemPerBlock", "QII", "Q", 0),
	C(R_OCC_CLUSTERS,	"cuOccupancyMaxActiveClusters", "IQIIIIIIIB", "I", 0),
	C(R_LAUNCH_EX,		"cuLaunchKernelEx",	"QQIIIIIIIQBB",	"", RD|WR),
	C(R_CACHE_HTOD,		"cacheHtoD",		"QQIQBQ",	"I", WR|FH),
	C(R_CACHE_PUT,		"cachePut",		"BQQB",		"I", 0),
	C(R_CACHE_IMAGE,	"cacheImage",		"QBQ",		"I", 0),
	C(R_TPC_MAP,		"tpcMap",		"Q",		"BB", 0),
	C(R_CACHE_HAVE,		"cacheHave",		"B",		"B", 0),
	C(R_CACHE_HELD,		"cacheHeld",		"QQIQBQ",	"", WR|FH),
	C(R_TMAP_ENCODE,	"cuTensorMapEncode",	"QIIBB",	"B", 0),
	C(R_MODEL,		"model",		"S",		"", 0),
	C(R_MEM_POOL,		"memPool",		"QQQ",		"QQQQ", NS),
	C(R_MEM_MAP,		"memMap",		"QQQ",		"", NS),
	C(R_MEM_TRIM,		"memTrim",		"QQ",		"", NS),
	C(R_LANES,		"lanes",		"I",		"IIBIB", 0),
	C(R_LANES_UP,		"lanesUp",		"I",		"I", 0),
	C(R_MEM_HTOD_LANES,	"lanesHtoD",	"QQIQQ",	"", WR|FH|DR),
	C(R_MEM_DTOH_LANES,	"lanesDtoH",	"QQIQQ",	"", RD|WT|TH),
	C(R_MEM_GRANULARITY,	"cuMemGetAllocationGranularity", "IIIiIIII", "Q", 0),
	/* graphs (issue 24) */
	C(R_CAPTURE_BEGIN,	"cuStreamBeginCapture",	"QQIQ",		"", 0),
	C(R_CAPTURE_END,	"cuStreamEndCapture",	"QQI",		"B", 0),
	C(R_GRAPH_CREATE,	"cuGraphCreate",	"QI",		"", 0),
	C(R_GRAPH_DESTROY,	"cuGraphDestroy",	"Q",		"", 0),
	C(R_GRAPH_INSTANTIATE,	"cuGraphInstantiate",	"QQQQQ",	"", 0),
	C(R_GEXEC_DESTROY,	"cuGraphExecDestroy",	"Q",		"", 0),
	C(R_GRAPH_LAUNCH,	"cuGraphLaunch",	"QQQ",		"", RD|WR),
	C(R_GRAPH_UPLOAD,	"cuGraphUpload",	"QQQ",		"", 0),
	C(R_GEXEC_UPDATE,	"cuGraphExecUpdate",	"QQ",		"II", 0),
	C(R_GRAPH_CLONE,	"cuGraphClone",		"QQ",		"", 0),
	C(R_GRAPH_COUNT,	"cuGraphGetNodes",	"QI",		"Q", 0),
	C(R_GRAPH_DOT,		"cuGraphDebugDotPrint",	"QI",		"B", 0),
	/* modules and launch */
	C(R_STREAM_MEMOP,	"cuStreamBatchMemOp",	"QQIB",		"", RD|WR),
	C(R_LINK_CREATE,	"cuLinkCreate",		"QQB",		"", 0),
	C(R_LINK_ADD,		"cuLinkAddData",	"QIBSB",	"IBB", 0),
	C(R_LINK_COMPLETE,	"cuLinkComplete",	"Q",		"IBB", 0),
	C(R_LINK_DESTROY,	"cuLinkDestroy",	"Q",		"", 0),
	/* virtual memory management */
	C(R_VMM_RESERVE,	"cuMemAddressReserve",	"QQQQQ",	"Q", NS),
	C(R_VMM_FREE,		"cuMemAddressFree",	"QQQ",		"", NS),
	C(R_VMM_CREATE,		"cuMemCreate",		"QQQQIIiIIII",	"", NS),
	C(R_VMM_RELEASE,	"cuMemRelease",		"QQ",		"", NS),
	C(R_VMM_MAP,		"cuMemMap",		"QQQQQQ",	"", NS),
	C(R_VMM_UNMAP,		"cuMemUnmap",		"QQQ",		"", NS),
	C(R_VMM_SET_ACCESS,	"cuMemSetAccess",	"QQQB",		"", NS),
	C(R_VMM_GET_ACCESS,	"cuMemGetAccess",	"QIiQ",		"Q", NS),
	/* loads with JIT options */
	C(R_MODULE_LOAD_EX,	"cuModuleLoadDataEx",	"QQBIB",	"IBB", 0),
	/* graph nodes */
	C(R_GRAPH_NODES,	"graphNodes",		"Q",		"B", 0),
	C(R_GRAPH_ADD,		"cuGraphAddNode",	"QQIBB",	"Q", 0),
	C(R_GRAPH_EDGES,	"cuGraphAddDependencies", "QIBB",	"", 0),
	C(R_GRAPH_NODE_DESTROY,	"cuGraphDestroyNode",	"QQ",		"", 0),
	C(R_KNODE_GET,		"cuGraphKernelNodeGetParams", "QQ",	"QIIIIIIIB", 0),
	C(R_KNODE_SET,		"cuGraphKernelNodeSetParams", "QQQB",	"", 0),
	C(R_NODE_GET,		"cuGraphNodeGetParams",	"QQ",		"IB", 0),
	C(R_NODE_SET,		"cuGraphNodeSetParams",	"QQQIB",	"", 0),
	C(R_NODE_ENABLED,	"cuGraphNodeSetEnabled", "QQQII",	"I", 0),
	C(R_GRAPH_MEM,		"cuDeviceGraphMemTrim",	"IIIQ",		"Q", 0),
	C(R_NODE_FIND,		"cuGraphNodeFindInClone", "QQQ",	"Q", 0),
	/* arrays, textures and surfaces */
	C(R_ARRAY_CREATE,	"cuArray3DCreate",	"QQQQQIIII",	"", 0),
	C(R_ARRAY_DESTROY,	"cuArrayDestroy",	"QI",		"", 0),
	C(R_MIPMAP_LEVEL,	"cuMipmappedArrayGetLevel", "QIQ",	"QQQ", 0),
	C(R_ARRAY_MEMREQ,	"cuArrayGetMemoryRequirements", "QIi",	"QQ", 0),
	C(R_TEX_CREATE,		"cuTexObjectCreate",	"QQIBBB",	"Q", 0),
	C(R_TEX_DESTROY,	"cuTexObjectDestroy",	"QI",		"", 0),
	/* device and context odds and ends */
	C(R_CTX_OP,		"ctxOp",		"QIQII",	"", 0),
	C(R_DEV_QUERY,		"deviceQuery",		"IiB",		"B", 0),
	C(R_HOST_FUNC,		"cuLaunchHostFunc",	"QQQ",		"", 0),
	/* stream attributes and capture dependencies */
	C(R_STREAM_ATTR,	"cuStreamGetAttribute",	"QQIIQB",	"B", 0),
	C(R_CAPTURE_TO_GRAPH,	"cuStreamBeginCaptureToGraph", "QQIQBB", "", 0),
	C(R_CAPTURE_DEPS,	"cuStreamUpdateCaptureDependencies", "QQIBB", "B", 0),
	/* conditional nodes */
	C(R_COND_HANDLE,	"cuGraphConditionalHandleCreate", "QQII", "Q", 0),
	C(R_CHILD_GRAPH,	"cuGraphChildGraphNodeGetGraph", "QQQ",	"", 0),
	/* user objects */
	C(R_UOBJ_CREATE,	"cuUserObjectCreate",	"Q",		"", 0),
	C(R_UOBJ_RELEASE,	"cuUserObjectRelease",	"Q",		"", 0),
	C(R_GRAPH_UOBJ,		"cuGraphRetainUserObject", "QQII",	"", 0),
	/* kernel node attributes */
	C(R_KNODE_ATTR,		"cuGraphKernelNodeGetAttribute", "QQIIQQB", "B", 0),
	/* green contexts */
	C(R_DEV_RESOURCE,	"cuDeviceGetDevResource", "IiQQI",	"B", 0),
	C(R_SM_SPLIT,		"cuDevSmResourceSplitByCount", "IIIIBBI", "IBBB", 0),
	C(R_RES_DESC,		"cuDevResourceGenerateDesc", "QB",	"", 0),
	C(R_GREEN_CREATE,	"cuGreenCtxCreate",	"QQiI",		"", 0),
	C(R_GREEN_DESTROY,	"cuGreenCtxDestroy",	"Q",		"", 0),
	C(R_GREEN_STREAM,	"cuGreenCtxStreamCreate", "QQIi",	"", 0),
	/* texture and surface references, sparse arrays */
	C(R_TEXREF_NEW,		"cuModuleGetTexRef",	"QQQIS",	"", 0),
	C(R_TEXREF_DESTROY,	"cuTexRefDestroy",	"Q",		"", 0),
	C(R_TEXREF_SET,		"cuTexRefSet",		"QIIQQB",	"Q", 0),
	C(R_TEXREF_GET,		"cuTexRefGet",		"QII",		"QQB", 0),
	C(R_ARRAY_SPARSE,	"cuArrayGetSparseProperties", "QI",	"QQQIQI", 0),
	C(R_MAP_ARRAY,		"cuMemMapArrayAsync",	"QQB",		"", 0),
	C(R_NODE_ID,		"cuGraphNodeGetLocalId", "QQ",		"IQ", 0),
	C(R_PTR_ATTR,		"cuPointerGetAttribute", "QIQ",		"Q", 0),
	C(R_MEM_ALLOC_HOST,	"cuMemHostAlloc",	"QQ",		"Q", 0),
#undef C
#undef RD
#undef WR
#undef FH
#undef DR
#undef WT
#undef PL
#undef TH
#undef NS
};

int
rpc_stream_field(uint16_t type)
{
	switch (type) {
	case R_LAUNCH:
	case R_LAUNCH_EX:
		return 9;
	case R_MEM_HTOD:
	case R_MEM_DTOH:
	case R_MEM_DTOD:
	case R_MEM_3D:
	case R_MEMSET:
	case R_MEM_HTOD_LANES:
	case R_MEM_DTOH_LANES:
	case R_STREAM_WAIT_EVENT:
	case R_HOST_FUNC:
	case R_STREAM_MEMOP:
		return 1;
	case R_EVENT_RECORD:
	case R_GRAPH_LAUNCH:
		return 2;
	}
	return -1;
}

const struct rpc_desc *
rpc_lookup(uint16_t type)
{
	if (type < R_OPEN || type >= R_CALL_END)
		return NULL;
	return &rpc_table[type - R_OPEN];
}

/*
 * Launch attributes' value lengths, and whether streams (LA_STREAM) or
 * kernel nodes (LA_NODE) take them (CUlaunchAttributeID numbers; the
 * common library builds without the CUDA headers).  Those that name an
 * event are left out: no handle travels as bytes.
 */
#define LA_STREAM	1
#define LA_NODE		2

static const struct {
	uint32_t	 attr;
	uint8_t		 len, where;
} lattr[] = {
	{ 1, 32, LA_STREAM | LA_NODE },	/* ACCESS_POLICY_WINDOW */
	{ 2, 4, LA_NODE },		/* COOPERATIVE */
	{ 3, 4, LA_STREAM },		/* SYNCHRONIZATION_POLICY */
	{ 4, 12, LA_NODE },		/* CLUSTER_DIMENSION: 3 u32 */
	{ 5, 4, LA_NODE },		/* CLUSTER_SCHEDULING_POLICY_... */
	{ 8, 4, LA_STREAM | LA_NODE },	/* PRIORITY */
	{ 9, 2, LA_STREAM | LA_NODE },	/* MEM_SYNC_DOMAIN_MAP: two bytes */
	{ 10, 4, LA_STREAM | LA_NODE },	/* MEM_SYNC_DOMAIN */
	{ 11, 12, LA_NODE },		/* PREFERRED_CLUSTER_DIMENSION */
	{ 13, 16, LA_NODE },		/* DEVICE_UPDATABLE_KERNEL_NODE: i32,
					   4 bytes 0, u64 device node */
	{ 14, 4, LA_NODE },		/* PREFERRED_SHARED_MEMORY_CARVEOUT */
	{ 16, 4, LA_STREAM | LA_NODE },	/* NVLINK_UTIL_CENTRIC_SCHEDULING */
};

static size_t
lattr_len(uint32_t attr, int where)
{
	size_t i;

	for (i = 0; i < sizeof lattr / sizeof lattr[0]; i++)
		if (lattr[i].attr == attr)
			return lattr[i].where & where ? lattr[i].len : 0;
	return 0;
}

size_t
rpc_sattr_len(uint32_t attr)
{
	return lattr_len(attr, LA_STREAM);
}

size_t
rpc_kattr_len(uint32_t attr)
{
	return lattr_len(attr, LA_NODE);
}

int
rpc_nfields(const char *sig)
{
	return (int)strlen(sig);
}

int
rpc_pack(struct pw *w, const char *sig, const struct rpc_val *v)
{
	for (; *sig != '\0'; sig++, v++) {
		switch (*sig) {
		case 'I':
		case 'i':
			pw_u32(w, (uint32_t)v->u);
			break;
		case 'Q':
			pw_u64(w, v->u);
			break;
		case 'B':
			pw_u32(w, v->len);
			pw_bytes(w, v->p, v->len);
			break;
		case 'S':
			if (v->len > RPC_STRING_MAX)
				return -1;
			pw_u16(w, (uint16_t)v->len);
			pw_bytes(w, v->p, v->len);
			break;
		default:
			return -1;
		}
	}
	return w->bad ? -1 : 0;
}

size_t
rpc_packed_size(const char *sig, const struct rpc_val *v)
{
	size_t n = 0;

	for (; *sig != '\0'; sig++, v++)
		switch (*sig) {
		case 'I':
		case 'i':	n += 4; break;
		case 'Q':	n += 8; break;
		case 'B':	n += 4 + (size_t)v->len; break;
		case 'S':	n += 2 + (size_t)v->len; break;
		default:	break;
		}
	return n;
}

int
rpc_unpack(const void *p, size_t len, const char *sig, struct rpc_val *v)
{
	struct pr r;
	int n = 0;

	pr_init(&r, p, len);
	for (; *sig != '\0'; sig++, v++) {
		if (++n > RPC_MAX_FIELDS)
			return -1;
		v->p = NULL;
		v->len = 0;
		switch (*sig) {
		case 'I':
			v->u = pr_u32(&r);
			break;
		case 'i':
			v->u = (uint64_t)(int64_t)(int32_t)pr_u32(&r);
			break;
		case 'Q':
			v->u = pr_u64(&r);
			break;
		case 'B':
			v->len = pr_u32(&r);
			v->p = pr_take(&r, v->len);
			break;
		case 'S':
			v->len = pr_u16(&r);
			if (v->len > RPC_STRING_MAX) {
				r.bad = 1;
				break;
			}
			v->p = pr_take(&r, v->len);
			if (v->p != NULL && memchr(v->p, '\0', v->len) != NULL)
				r.bad = 1;
			break;
		default:
			return -1;
		}
		if (r.bad)
			return -1;
	}
	return pr_done(&r);
}

void
rpc_devices_begin(struct pw *w, uint32_t n)
{
	pw_u32(w, n);
}

void
rpc_device_enc(struct pw *w, const char *name, const uint8_t uuid[16],
    uint64_t totalmem, uint32_t nattr, const int32_t *attr)
{
	uint32_t i;

	pw_str(w, name);
	pw_bytes(w, uuid, 16);
	pw_u64(w, totalmem);
	pw_u32(w, nattr);
	for (i = 0; i < nattr; i++)
		pw_u32(w, (uint32_t)attr[i]);
}

int
rpc_devices_dec(const void *p, size_t len, struct rpc_device **out,
    uint32_t *n)
{
	struct rpc_device *d;
	struct pr r;
	uint32_t i, a, na, v;

	*out = NULL;
	*n = 0;
	pr_init(&r, p, len);
	i = pr_u32(&r);
	if (r.bad || i == 0 || i > 64)
		return -1;
	if ((d = calloc(i, sizeof *d)) == NULL)
		return -1;
	*n = i;
	for (i = 0; i < *n && !r.bad; i++) {
		pr_str(&r, d[i].name, sizeof d[i].name - 1);
		pr_bytes(&r, d[i].uuid, sizeof d[i].uuid);
		d[i].totalmem = pr_u64(&r);
		na = pr_u32(&r);
		if (na > 4096)
			r.bad = 1;
		for (a = 0; a < na && !r.bad; a++) {
			v = pr_u32(&r);
			if (a < RPC_DEV_ATTR_MAX)
				d[i].attr[a] = (int32_t)v;
		}
	}
	if (pr_done(&r) == -1) {
		free(d);
		*n = 0;
		return -1;
	}
	*out = d;
	return 0;
}

void
rpc_ftab_begin(struct pw *w, uint32_t n)
{
	pw_u32(w, n);
}

void
rpc_ftab_add(struct pw *w, const char *name, uint32_t nparams,
    const uint32_t *offset, const uint32_t *size, uint32_t nattr,
    const int32_t *attr)
{
	uint32_t i;

	pw_str(w, name);
	pw_u32(w, nparams);
	for (i = 0; i < nparams; i++) {
		pw_u32(w, offset[i]);
		pw_u32(w, size[i]);
	}
	pw_u32(w, nattr);
	for (i = 0; i < nattr; i++)
		pw_u32(w, (uint32_t)attr[i]);
}

void
rpc_ftab_free(struct rpc_func *f, uint32_t n)
{
	uint32_t i;

	for (i = 0; f != NULL && i < n; i++) {
		free(f[i].name);
		free(f[i].offset);
		free(f[i].size);
	}
	free(f);
}

int
rpc_ftab_dec(const void *p, size_t len, struct rpc_func **out, uint32_t *n)
{
	char name[RPC_STRING_MAX + 1];
	struct rpc_func *f = NULL, *fi;
	struct pr r;
	uint32_t cnt, i, j, na, a, v;

	*out = NULL;
	*n = 0;
	pr_init(&r, p, len);
	cnt = pr_u32(&r);
	/* Each entry takes at least 10 bytes: no count beyond what fits. */
	if (r.bad || cnt > len / 10 + 1)
		return -1;
	if (cnt > 0 && (f = calloc(cnt, sizeof *f)) == NULL)
		return -1;
	for (i = 0; i < cnt && !r.bad; i++) {
		fi = &f[i];
		pr_str(&r, name, RPC_STRING_MAX);
		fi->nparams = pr_u32(&r);
		if (r.bad || fi->nparams > RPC_PARAMS_MAX)
			goto bad;
		if ((fi->name = strdup(name)) == NULL ||
		    (fi->offset = calloc(fi->nparams + 1, sizeof *fi->offset))
		    == NULL || (fi->size = calloc(fi->nparams + 1,
		    sizeof *fi->size)) == NULL)
			goto bad;
		for (j = 0; j < fi->nparams; j++) {
			fi->offset[j] = pr_u32(&r);
			fi->size[j] = pr_u32(&r);
			/* The packed arguments must stay small. */
			if (fi->offset[j] > 65536 || fi->size[j] > 65536)
				goto bad;
			if (fi->offset[j] + fi->size[j] > fi->argbytes)
				fi->argbytes = fi->offset[j] + fi->size[j];
		}
		na = pr_u32(&r);
		if (na > 4096)
			goto bad;
		for (a = 0; a < na && !r.bad; a++) {
			v = pr_u32(&r);
			if (a < RPC_FUNC_ATTR_MAX)
				fi->attr[a] = (int32_t)v;
		}
	}
	if (pr_done(&r) == -1)
		goto bad;
	*out = f;
	*n = cnt;
	return 0;
bad:
	rpc_ftab_free(f, cnt);
	return -1;
}

/* The corners an im2col encoder takes: rank - 2, or one for the wide one. */
static uint32_t
tmap_corners(const struct rpc_tmap *t)
{
	return t->which == TMAP_IM2COL ? t->rank - 2 : 1;
}

void
rpc_tmap_enc(struct pw *w, const struct rpc_tmap *t)
{
	uint32_t i;

	if (t->which == TMAP_REPLACE) {
		pw_u64(w, t->addr);
		return;
	}
	pw_u32(w, t->dtype);
	pw_u32(w, t->rank);
	pw_u64(w, t->addr);
	for (i = 0; i < t->rank && i < TMAP_RANK_MAX; i++)
		pw_u64(w, t->dim[i]);
	for (i = 0; i + 1 < t->rank && i < TMAP_RANK_MAX - 1; i++)
		pw_u64(w, t->stride[i]);
	if (t->which == TMAP_TILED) {
		for (i = 0; i < t->rank && i < TMAP_RANK_MAX; i++)
			pw_u32(w, t->box[i]);
	} else {
		for (i = 0; i < tmap_corners(t) && i < TMAP_RANK_MAX - 2; i++)
			pw_u32(w, (uint32_t)t->lower[i]);
		for (i = 0; i < tmap_corners(t) && i < TMAP_RANK_MAX - 2; i++)
			pw_u32(w, (uint32_t)t->upper[i]);
		pw_u32(w, t->channels);
		pw_u32(w, t->pixels);
	}
	for (i = 0; i < t->rank && i < TMAP_RANK_MAX; i++)
		pw_u32(w, t->estride[i]);
	pw_u32(w, t->interleave);
	if (t->which == TMAP_IM2COL_WIDE)
		pw_u32(w, t->mode);
	pw_u32(w, t->swizzle);
	pw_u32(w, t->l2);
	pw_u32(w, t->oobfill);
}

int
rpc_tmap_dec(uint32_t which, const void *p, size_t len, struct rpc_tmap *t)
{
	struct pr r;
	uint32_t i;

	memset(t, 0, sizeof *t);
	if (which > TMAP_REPLACE)
		return -1;
	t->which = which;
	pr_init(&r, p, len);
	if (which == TMAP_REPLACE) {
		t->addr = pr_u64(&r);
		return pr_done(&r);
	}
	t->dtype = pr_u32(&r);
	t->rank = pr_u32(&r);
	/*
	 * The rank sizes every array the driver reads: it must be one the
	 * encoder takes, so that the arrays hold all it reads.
	 */
	if (r.bad || t->rank < (which == TMAP_TILED ? 1 : 3) ||
	    t->rank > TMAP_RANK_MAX)
		return -1;
	t->addr = pr_u64(&r);
	for (i = 0; i < t->rank; i++)
		t->dim[i] = pr_u64(&r);
	for (i = 0; i + 1 < t->rank; i++)
		t->stride[i] = pr_u64(&r);
	if (which == TMAP_TILED) {
		for (i = 0; i < t->rank; i++)
			t->box[i] = pr_u32(&r);
	} else {
		for (i = 0; i < tmap_corners(t); i++)
			t->lower[i] = (int32_t)pr_u32(&r);
		for (i = 0; i < tmap_corners(t); i++)
			t->upper[i] = (int32_t)pr_u32(&r);
		t->channels = pr_u32(&r);
		t->pixels = pr_u32(&r);
	}
	for (i = 0; i < t->rank; i++)
		t->estride[i] = pr_u32(&r);
	t->interleave = pr_u32(&r);
	if (which == TMAP_IM2COL_WIDE)
		t->mode = pr_u32(&r);
	t->swizzle = pr_u32(&r);
	t->l2 = pr_u32(&r);
	t->oobfill = pr_u32(&r);
	return pr_done(&r);
}

/* R_TEX_CREATE's descriptors (rpc.h). */
void
rpc_res_enc(struct pw *w, const struct rpc_res *r)
{
	pw_u32(w, r->type);
	pw_u32(w, r->flags);
	pw_u64(w, r->h);
	pw_u32(w, r->format);
	pw_u32(w, r->channels);
	pw_u64(w, r->width);
	pw_u64(w, r->height);
	pw_u64(w, r->pitch);
}

void
rpc_texd_enc(struct pw *w, const struct rpc_texd *t)
{
	int i;

	for (i = 0; i < 3; i++)
		pw_u32(w, t->addr[i]);
	pw_u32(w, t->filter);
	pw_u32(w, t->flags);
	pw_u32(w, t->aniso);
	pw_u32(w, t->mipfilter);
	pw_u32(w, t->bias);
	pw_u32(w, t->minclamp);
	pw_u32(w, t->maxclamp);
	for (i = 0; i < 4; i++)
		pw_u32(w, t->border[i]);
}

void
rpc_view_enc(struct pw *w, const struct rpc_view *v)
{
	pw_u32(w, v->format);
	pw_u64(w, v->width);
	pw_u64(w, v->height);
	pw_u64(w, v->depth);
	pw_u32(w, v->firstmip);
	pw_u32(w, v->lastmip);
	pw_u32(w, v->firstlayer);
	pw_u32(w, v->lastlayer);
}

int
rpc_res_dec(const struct rpc_val *b, struct rpc_res *r)
{
	struct pr p;

	pr_init(&p, b->p, b->len);
	r->type = pr_u32(&p);
	r->flags = pr_u32(&p);
	r->h = pr_u64(&p);
	r->format = pr_u32(&p);
	r->channels = pr_u32(&p);
	r->width = pr_u64(&p);
	r->height = pr_u64(&p);
	r->pitch = pr_u64(&p);
	return b->len == RPC_RES_LEN ? pr_done(&p) : -1;
}

int
rpc_texd_dec(const struct rpc_val *b, struct rpc_texd *t)
{
	struct pr p;
	int i;

	pr_init(&p, b->p, b->len);
	for (i = 0; i < 3; i++)
		t->addr[i] = pr_u32(&p);
	t->filter = pr_u32(&p);
	t->flags = pr_u32(&p);
	t->aniso = pr_u32(&p);
	t->mipfilter = pr_u32(&p);
	t->bias = pr_u32(&p);
	t->minclamp = pr_u32(&p);
	t->maxclamp = pr_u32(&p);
	for (i = 0; i < 4; i++)
		t->border[i] = pr_u32(&p);
	return b->len == RPC_TEXD_LEN ? pr_done(&p) : -1;
}

int
rpc_view_dec(const struct rpc_val *b, struct rpc_view *v)
{
	struct pr p;

	pr_init(&p, b->p, b->len);
	v->format = pr_u32(&p);
	v->width = pr_u64(&p);
	v->height = pr_u64(&p);
	v->depth = pr_u64(&p);
	v->firstmip = pr_u32(&p);
	v->lastmip = pr_u32(&p);
	v->firstlayer = pr_u32(&p);
	v->lastlayer = pr_u32(&p);
	return b->len == RPC_VIEW_LEN ? pr_done(&p) : -1;
}

/* R_MAP_ARRAY's entries (rpc.h). */
void
rpc_mapinfo_enc(struct pw *w, const struct rpc_mapinfo *m)
{
	pw_u32(w, m->restype);
	pw_u64(w, m->res);
	pw_u32(w, m->subtype);
	pw_u32(w, m->level);
	pw_u32(w, m->layer);
	pw_u32(w, m->x);
	pw_u32(w, m->y);
	pw_u32(w, m->z);
	pw_u32(w, m->w);
	pw_u32(w, m->h);
	pw_u32(w, m->d);
	pw_u32(w, m->tlayer);
	pw_u64(w, m->toffset);
	pw_u64(w, m->tsize);
	pw_u32(w, m->memop);
	pw_u32(w, m->memtype);
	pw_u64(w, m->mem);
	pw_u64(w, m->offset);
	pw_u32(w, m->devmask);
	pw_u32(w, m->flags);
}

int
rpc_mapinfo_dec(const struct rpc_val *b, uint32_t i, struct rpc_mapinfo *m)
{
	struct pr p;

	if (b->len % RPC_MAPINFO_LEN != 0 || i >= b->len / RPC_MAPINFO_LEN)
		return -1;
	pr_init(&p, (const uint8_t *)b->p + (size_t)i * RPC_MAPINFO_LEN,
	    RPC_MAPINFO_LEN);
	m->restype = pr_u32(&p);
	m->res = pr_u64(&p);
	m->subtype = pr_u32(&p);
	m->level = pr_u32(&p);
	m->layer = pr_u32(&p);
	m->x = pr_u32(&p);
	m->y = pr_u32(&p);
	m->z = pr_u32(&p);
	m->w = pr_u32(&p);
	m->h = pr_u32(&p);
	m->d = pr_u32(&p);
	m->tlayer = pr_u32(&p);
	m->toffset = pr_u64(&p);
	m->tsize = pr_u64(&p);
	m->memop = pr_u32(&p);
	m->memtype = pr_u32(&p);
	m->mem = pr_u64(&p);
	m->offset = pr_u64(&p);
	m->devmask = pr_u32(&p);
	m->flags = pr_u32(&p);
	return pr_done(&p);
}
