/* The remoting calls' table and their generic encoding. */
#include <string.h>

#include "rpc.h"

static const struct rpc_desc rpc_table[RPC_NCALLS] = {
#define C(t, n, q, r) [t - R_OPEN] = { t, n, q, r }
	C(R_OPEN,		"open",			"I",		"IB"),
	C(R_CTX_CREATE,		"cuCtxCreate",		"QII",		""),
	C(R_CTX_DESTROY,	"cuCtxDestroy",		"Q",		""),
	C(R_PRIMARY_RETAIN,	"cuDevicePrimaryCtxRetain", "QI",	""),
	C(R_PRIMARY_RELEASE,	"cuDevicePrimaryCtxRelease", "Q",	""),
	C(R_PRIMARY_RESET,	"cuDevicePrimaryCtxReset", "Q",		""),
	C(R_CTX_SYNC,		"cuCtxSynchronize",	"Q",		""),
	C(R_CTX_SET_LIMIT,	"cuCtxSetLimit",	"QIQ",		""),
	C(R_MEM_ALLOC,		"cuMemAlloc",		"QQ",		"Q"),
	C(R_MEM_ALLOC_PITCH,	"cuMemAllocPitch",	"QQQI",		"QQ"),
	C(R_MEM_FREE,		"cuMemFree",		"QQ",		""),
	C(R_MEM_GET_INFO,	"cuMemGetInfo",		"Q",		"QQ"),
	C(R_MEM_HTOD,		"cuMemcpyHtoD",		"QQIQB",	""),
	C(R_MEM_DTOH,		"cuMemcpyDtoH",		"QQIQQ",	"B"),
	C(R_MEM_DTOD,		"cuMemcpyDtoD",		"QQIQQQ",	""),
	C(R_MEM_3D,		"cuMemcpy3D",		"QQIBB",	"B"),
	C(R_MEMSET,		"cuMemset",		"QQIQQIIQQ",	""),
	C(R_MODULE_LOAD,	"cuModuleLoadData",	"QQB",		"B"),
	C(R_MODULE_UNLOAD,	"cuModuleUnload",	"Q",		""),
	C(R_MODULE_GET_FUNC,	"cuModuleGetFunction",	"QQS",		""),
	C(R_MODULE_GET_GLOBAL,	"cuModuleGetGlobal",	"QS",		"QQ"),
	C(R_LIBRARY_LOAD,	"cuLibraryLoadData",	"QQB",		"B"),
	C(R_LIBRARY_UNLOAD,	"cuLibraryUnload",	"Q",		""),
	C(R_LIBRARY_GET_KERNEL,	"cuLibraryGetKernel",	"QQS",		""),
	C(R_LIBRARY_GET_GLOBAL,	"cuLibraryGetGlobal",	"QQS",		"QQ"),
	C(R_LAUNCH,		"cuLaunchKernel",	"QQIIIIIIIQIB",	""),
	C(R_STREAM_CREATE,	"cuStreamCreate",	"QQIi",		""),
	C(R_STREAM_DESTROY,	"cuStreamDestroy",	"Q",		""),
	C(R_STREAM_SYNC,	"cuStreamSynchronize",	"QQ",		""),
	C(R_STREAM_QUERY,	"cuStreamQuery",	"QQ",		""),
	C(R_STREAM_WAIT_EVENT,	"cuStreamWaitEvent",	"QQQI",		""),
	C(R_EVENT_CREATE,	"cuEventCreate",	"QQI",		""),
	C(R_EVENT_DESTROY,	"cuEventDestroy",	"Q",		""),
	C(R_EVENT_RECORD,	"cuEventRecord",	"QQQ",		""),
	C(R_EVENT_SYNC,		"cuEventSynchronize",	"Q",		""),
	C(R_EVENT_QUERY,	"cuEventQuery",		"Q",		""),
	C(R_EVENT_ELAPSED,	"cuEventElapsedTime",	"QQ",		"I"),
	C(R_FUNC_SET_ATTR,	"cuFuncSetAttribute",	"QIi",		""),
	C(R_FUNC_SET_CACHE,	"cuFuncSetCacheConfig",	"QI",		""),
	C(R_OCCUPANCY,		"cuOccupancyMaxActiveBlocksPerMultiprocessor", "QIQI", "I"),
#undef C
};

const struct rpc_desc *
rpc_lookup(uint16_t type)
{
	if (type < R_OPEN || type >= R_CALL_END)
		return NULL;
	return &rpc_table[type - R_OPEN];
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
