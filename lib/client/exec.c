/*
 * Launches, streams, events and occupancy.  A launch's geometry is checked
 * here against the device's limits, as the driver checks it, so that a bad
 * configuration fails at the call that made it; its arguments are packed
 * by the parameter layout the module's load brought back.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "client.h"
#include "hooks.h"
#include "graph.h"
#include "log.h"

const struct gfinfo *func_info(const void *, uint64_t *);

/*
 * Per-thread default streams.  The server runs a client's calls on one
 * thread, where CU_STREAM_PER_THREAD would be one stream for all of the
 * program's threads; so each thread gets a stream of its own in each
 * context it uses, made here on first use like cuStreamCreate (blocking,
 * so it orders with the legacy stream as the real per-thread stream
 * does) and destroyed when the thread exits.
 */
#define PTDS_MAX	4
struct ptds {
	struct gctx	*ctx;
	uint64_t	 life;
	CUstream	 s;
};
static pthread_key_t	 ptds_key;
static pthread_once_t	 ptds_once = PTHREAD_ONCE_INIT;

static void
ptds_free(void *arg)
{
	struct ptds *t = arg;
	int i;

	for (i = 0; i < PTDS_MAX; i++)
		if (t[i].s != NULL && t[i].ctx->live && t[i].ctx->life ==
		    t[i].life)
			cuStreamDestroy_v2(t[i].s);
	free(t);
}

static void
ptds_init(void)
{
	pthread_key_create(&ptds_key, ptds_free);
}

static CUresult
ptds_id(uint64_t *id)
{
	struct ptds *t, *slot = NULL;
	struct gctx *c;
	CUresult rc;
	int i;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	pthread_once(&ptds_once, ptds_init);
	if ((t = pthread_getspecific(ptds_key)) == NULL) {
		if ((t = calloc(PTDS_MAX, sizeof *t)) == NULL ||
		    pthread_setspecific(ptds_key, t) != 0) {
			free(t);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	for (i = 0; i < PTDS_MAX; i++) {
		if (t[i].s != NULL && t[i].ctx == c && t[i].life == c->life) {
			*id = gobj_id(t[i].s);
			return CUDA_SUCCESS;
		}
		/* A slot whose context is gone is free again. */
		if (slot == NULL && (t[i].s == NULL || !t[i].ctx->live ||
		    t[i].ctx->life != t[i].life))
			slot = &t[i];
	}
	if (slot == NULL) {
		/* More contexts than slots: the oldest stream goes. */
		cuStreamDestroy_v2(t[0].s);
		memmove(&t[0], &t[1], (PTDS_MAX - 1) * sizeof *t);
		slot = &t[PTDS_MAX - 1];
	}
	slot->s = NULL;
	if ((rc = cuStreamCreateWithPriority(&slot->s, CU_STREAM_DEFAULT, 0)) !=
	    CUDA_SUCCESS)
		return rc;
	slot->ctx = c;
	slot->life = c->life;
	*id = gobj_id(slot->s);
	return CUDA_SUCCESS;
}

CUresult
stream_id(CUstream s, int ptsz, uint64_t *id)
{
	struct gstream *g;

	if (s == NULL && ptsz)
		return ptds_id(id);
	if (s == NULL)
		*id = 0;
	else if (s == CU_STREAM_LEGACY)
		*id = 1;
	else if (s == CU_STREAM_PER_THREAD)
		return ptds_id(id);
	else if ((g = gobj_check(s, GK_STREAM)) != NULL)
		*id = gobj_id(g);
	else
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

int
stream_nonblocking(uint64_t id)
{
	const struct gstream *g;

	if (id <= 2 || (g = gobj_check((const void *)(uintptr_t)id,
	    GK_STREAM)) == NULL)
		return 0;
	return (g->flags & CU_STREAM_NON_BLOCKING) != 0;
}

/* The driver's own checks of a launch configuration. */
static CUresult
exec_geometry(const struct gctx *c, const struct gfinfo *fi, unsigned gx,
    unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned shmem)
{
	const struct client_device *d = client_device(c->device);
	unsigned long long threads = (unsigned long long)bx * by * bz;
	int maxt;

	if (d == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (bx > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
	    by > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
	    bz > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] ||
	    gx > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
	    gy > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
	    gz > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
		return CUDA_ERROR_INVALID_VALUE;
	maxt = fi->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (maxt <= 0)
		maxt = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (threads > (unsigned long long)maxt)
		return CUDA_ERROR_INVALID_VALUE;
	if (shmem + (unsigned long long)
	    fi->attr[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] > (unsigned long long)
	    d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] ||
	    (fi->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] > 0 &&
	    shmem > (unsigned)
	    fi->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]) ||
	    (fi->attr[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] <= 0 &&
	    shmem > (unsigned)
	    d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK]))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* The packed argument buffer, from kernelParams or from extra. */
static CUresult
exec_args(const struct gfinfo *fi, void **params, void **extra, char **out)
{
	char *buf;
	void *xbuf = NULL;
	size_t xsize = 0, *xsp = NULL;
	uint32_t i;

	if ((buf = calloc(1, fi->argbytes + 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (params != NULL) {
		for (i = 0; i < fi->nparams; i++) {
			if (params[i] == NULL) {
				free(buf);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memcpy(buf + fi->offset[i], params[i], fi->size[i]);
		}
	} else if (extra != NULL) {
		for (i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				xbuf = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				xsp = extra[i + 1];
			else {
				free(buf);
				return CUDA_ERROR_INVALID_VALUE;
			}
		}
		if (xsp != NULL)
			xsize = *xsp;
		if (xbuf == NULL || xsize < fi->argbytes) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(buf, xbuf, fi->argbytes);
	} else if (fi->nparams > 0) {
		free(buf);
		return CUDA_ERROR_INVALID_VALUE;
	}
	*out = buf;
	return CUDA_SUCCESS;
}

/*
 * What a launch's attributes (attr_put's, or none) make of its captured
 * node, for the listing made at the capture's end: 1, a kernel node with
 * the default edge from the one before (those of the node alone, and
 * programmatic serialization turned off); 2, the same with programmatic
 * serialization turned on (cuBLAS's launches on sm_90: the edge from the
 * one before is a programmatic one); 0, anything else (events make other
 * edges).
 */
static int
attrs_kind(const struct pw *attrs)
{
	struct pr r;
	uint32_t id;
	int32_t on;
	int kind = 1;

	if (attrs == NULL)
		return 1;
	pr_init(&r, attrs->p, attrs->len);
	while (r.off < r.len && !r.bad) {
		id = pr_u32(&r);
		pr_bytes(&r, &on, sizeof on);
		(void)pr_take(&r, sizeof(CUlaunchAttributeValue) - sizeof on);
		switch ((int)id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
			kind = on != 0 ? 2 : 1;
			break;
		default:
			return 0;
		}
	}
	return r.bad ? 0 : kind;
}

static CUresult
exec_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
    unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
    void **extra, int ptsz, unsigned flags, const struct pw *attrs)
{
	struct rpc_val in[12];
	const struct gfinfo *fi;
	struct gctx *c;
	uint64_t fid, sid;
	uint32_t geo[7];
	char *args;
	CUresult rc;
	int caps;

	if ((rc = ctx_need_stream(s, &c)) != CUDA_SUCCESS)
		return rc;
	if ((fi = func_info(f, &fid)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = exec_geometry(c, fi, gx, gy, gz, bx, by, bz, shmem)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((rc = capture_launch(c, sid, func_canon(f), flags,
	    attrs != NULL ? attrs->p : NULL, attrs != NULL ? attrs->len : 0,
	    &caps)) != CUDA_SUCCESS)
		return rc;
	if (flags & 1)		/* cooperative: updates compare it too */
		capture_special(sid);
	if ((rc = exec_args(fi, params, extra, &args)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = fid;
	in[2].u = gx; in[3].u = gy; in[4].u = gz;
	in[5].u = bx; in[6].u = by; in[7].u = bz;
	in[8].u = shmem;
	in[9].u = sid;
	in[10].u = flags;
	in[11].p = args;
	in[11].len = fi->argbytes;
	/* Captured: the request kept for the listing made at its end. */
	if (caps) {
		geo[0] = gx; geo[1] = gy; geo[2] = gz;
		geo[3] = bx; geo[4] = by; geo[5] = bz;
		geo[6] = shmem;
		capture_klist(sid, flags == 0 ? attrs_kind(attrs) : 0, fid,
		    geo, args, fi->argbytes);
	}
	if (attrs != NULL) {
		/* R_LAUNCH_EX: the attributes in place of the flags. */
		in[10].p = attrs->p;
		in[10].len = (uint32_t)attrs->len;
		rc = rpost(R_LAUNCH_EX, in, 0);
	} else
		rc = rpost(R_LAUNCH, in, 0);
	/* Checked here against the function's table: one-way. */
	free(args);
	return rc;
}

CUresult
cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
    unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
    void **params, void **extra)
{
	return exec_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra,
	    0, 0, NULL);
}

CUresult
cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
    unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
    void **params, void **extra)
{
	return exec_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra,
	    1, 0, NULL);
}

CUresult
cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
    unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
    CUstream s, void **params)
{
	return exec_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL,
	    0, 1, NULL);
}

CUresult
cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
    unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
    CUstream s, void **params)
{
	return exec_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL,
	    1, 1, NULL);
}

/*
 * A launch attribute as it goes on the wire and into a capture's trace:
 * its id, then its value's 64 bytes with only the attribute's own member
 * copied and the rest zero.  The caller's union holds whatever its stack
 * held beyond that member (cuBLAS's launches did, a new capture trace
 * every token); an id not known here keeps all 64 bytes.
 */
static void
attr_put(struct pw *w, const CUlaunchAttribute *a)
{
	const CUlaunchAttributeValue *v = &a->value;
	unsigned char b[sizeof *v];
	size_t n;

	memset(b, 0, sizeof b);
	switch ((int)a->id) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		n = offsetof(CUaccessPolicyWindow, missProp) +
		    sizeof v->accessPolicyWindow.missProp;
		break;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
		n = sizeof v->clusterDim;
		break;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		n = sizeof v->programmaticEvent;
		break;
	case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		n = offsetof(CUlaunchAttributeValue, launchCompletionEvent.flags) +
		    sizeof v->launchCompletionEvent.flags;
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		n = sizeof v->memSyncDomainMap;
		break;
	case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
		/* The int, then the node handle past its padding. */
		memcpy(b, &v->deviceUpdatableKernelNode.deviceUpdatable,
		    sizeof v->deviceUpdatableKernelNode.deviceUpdatable);
		memcpy(b + offsetof(CUlaunchAttributeValue,
		    deviceUpdatableKernelNode.devNode),
		    &v->deviceUpdatableKernelNode.devNode,
		    sizeof v->deviceUpdatableKernelNode.devNode);
		n = 0;
		break;
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
	case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
		n = sizeof v->priority;		/* an int or an enum */
		break;
	default:
		n = sizeof *v;
		break;
	}
	memcpy(b, v, n);
	pw_u32(w, (uint32_t)a->id);
	pw_bytes(w, b, sizeof b);
}

/*
 * cuLaunchKernelEx: cooperative and priority alone go as a plain launch;
 * any other attribute (cluster dimensions, say) goes with R_LAUNCH_EX,
 * where the server takes those whose values hold no handle or pointer.
 */
static CUresult
exec_launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params,
    void **extra, int ptsz)
{
	struct pw attrs;
	unsigned flags = 0, i;
	int plain = 1;
	CUresult rc;

	if (cfg == NULL || (cfg->numAttrs > 0 && cfg->attrs == NULL) ||
	    cfg->numAttrs > 16)
		return CUDA_ERROR_INVALID_VALUE;
	pw_init(&attrs);
	for (i = 0; i < cfg->numAttrs; i++) {
		const CUlaunchAttribute *a = &cfg->attrs[i];

		if (a->id == CU_LAUNCH_ATTRIBUTE_IGNORE)
			continue;
		if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
			if (a->value.cooperative)
				flags |= 1;
		} else if (a->id != CU_LAUNCH_ATTRIBUTE_PRIORITY)
			plain = 0;
		attr_put(&attrs, a);
	}
	rc = exec_launch(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ,
	    cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ,
	    cfg->sharedMemBytes, cfg->hStream, params, extra, ptsz, flags,
	    plain ? NULL : &attrs);
	pw_free(&attrs);
	return rc;
}

CUresult
cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params,
    void **extra)
{
	return exec_launch_ex(cfg, f, params, extra, 0);
}

CUresult
cuLaunchKernelEx_ptsz(const CUlaunchConfig *cfg, CUfunction f,
    void **params, void **extra)
{
	return exec_launch_ex(cfg, f, params, extra, 1);
}

/* ---- streams ----------------------------------------------------------- */

/* A call on (ctx, stream id) with no reply fields. */
static CUresult
exec_sync(uint16_t type, CUstream s, int ptsz)
{
	struct rpc_val in[2], out[1];
	struct gctx *c;
	struct gstream *g;
	uint64_t sid;
	void *keep;
	CUresult rc;

	if ((rc = ctx_need_stream(s, &c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	/* A stream is synchronised in its own context. */
	if ((g = gobj_check(s, GK_STREAM)) != NULL)
		c = g->ctx;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	/*
	 * Nothing sent since a wait that left this stream idle (a copy to
	 * the host, say): the answer is known, and mapped memory is current.
	 */
	if ((type == R_STREAM_SYNC || type == R_STREAM_QUERY) &&
	    !capture_busy(sid) && ridle_check(in[0].u, sid)) {
		stats_local_sync();
		return c->sticky;
	}
	rc = remote_call(type, in, out, &keep);
	free(keep);
	capture_saw(c, rc);
	return rc;
}

/* Streams' ids (cuStreamGetId), never reused; below 16 are the special
 * streams' (streaminfo.c). */
static uint64_t	 stream_seq = 15;

CUresult
stream_make(struct gctx *c, uint16_t type, unsigned flags, int prio,
    CUstream *ps)
{
	struct rpc_val in[4];
	struct gstream *g;
	CUresult rc;

	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->o.kind = GK_STREAM;
	g->seq = __atomic_add_fetch(&stream_seq, 1, __ATOMIC_RELAXED);
	g->ctx = c;
	g->flags = flags;
	/* Clamped to the device's range, as the driver does. */
	g->priority = prio > 0 ? 0 : prio < -5 ? -5 : prio;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(g);
	in[2].u = flags;
	in[3].u = (uint64_t)(int64_t)g->priority;
	/* The id is ours: the program need not wait for the server. */
	rc = rpost(type, in, 0);
	if (rc != CUDA_SUCCESS) {
		free(g);
		return rc;
	}
	gobj_publish(g);
	*ps = (CUstream)g;
	return CUDA_SUCCESS;
}

CUresult
cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int prio)
{
	struct gctx *c;
	CUresult rc;

	if (ps == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	return stream_make(c, R_STREAM_CREATE, flags, prio, ps);
}

CUresult
cuStreamCreate(CUstream *ps, unsigned int flags)
{
	return cuStreamCreateWithPriority(ps, flags, 0);
}

CUresult
cuStreamDestroy_v2(CUstream s)
{
	struct gstream *g = gobj_check(s, GK_STREAM);
	struct rpc_val in[1];
	CUresult rc;

	if (g == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(g);
	rc = rpost(R_STREAM_DESTROY, in, 0);
	capture_forget(g);
	g->o.magic = 0;
	free(g);
	return rc;
}

CUresult cuStreamDestroy(CUstream s) { return cuStreamDestroy_v2(s); }
CUresult cuStreamSynchronize(CUstream s) { return exec_sync(R_STREAM_SYNC, s, 0); }
CUresult cuStreamSynchronize_ptsz(CUstream s) { return exec_sync(R_STREAM_SYNC, s, 1); }
CUresult cuStreamQuery(CUstream s) { return exec_sync(R_STREAM_QUERY, s, 0); }
CUresult cuStreamQuery_ptsz(CUstream s) { return exec_sync(R_STREAM_QUERY, s, 1); }

static CUresult
exec_wait_event(CUstream s, CUevent e, unsigned flags, int ptsz)
{
	struct rpc_val in[4];
	struct gevent *ev = gobj_check(e, GK_EVENT);
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need_stream(s, &c)) != CUDA_SUCCESS)
		return rc;
	if (ev == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = gobj_id(ev);
	in[3].u = flags;
	if ((rc = rpost(R_STREAM_WAIT_EVENT, in, 0)) == CUDA_SUCCESS)
		capture_wait(ev, sid);
	return rc;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int f) { return exec_wait_event(s, e, f, 0); }
CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f) { return exec_wait_event(s, e, f, 1); }

/* ---- events ------------------------------------------------------------ */

CUresult
cuEventCreate(CUevent *pe, unsigned int flags)
{
	struct rpc_val in[3];
	struct gevent *e;
	struct gctx *c;
	CUresult rc;

	if (pe == NULL || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->o.kind = GK_EVENT;
	e->ctx = c;
	e->flags = flags;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(e);
	in[2].u = flags;
	rc = rpost(R_EVENT_CREATE, in, 0);
	if (rc != CUDA_SUCCESS) {
		free(e);
		return rc;
	}
	gobj_publish(e);
	*pe = (CUevent)e;
	return CUDA_SUCCESS;
}

/* A call on one event with no reply fields. */
static CUresult
exec_event1(uint16_t type, CUevent h)
{
	struct gevent *e = gobj_check(h, GK_EVENT);
	struct rpc_val in[1], out[1];
	void *keep;
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(e);
	if (type == R_EVENT_DESTROY)
		return rpost(type, in, 0);
	/* Known complete, nothing to report: answered here. */
	if (!e->graphed && ridle_event_done(in[0].u)) {
		stats_local_sync();
		return e->ctx != NULL ? e->ctx->sticky : CUDA_SUCCESS;
	}
	rc = remote_call(type, in, out, &keep);
	free(keep);
	return rc;
}

CUresult
cuEventDestroy_v2(CUevent h)
{
	struct gevent *e = gobj_check(h, GK_EVENT);
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = exec_event1(R_EVENT_DESTROY, h);
	e->o.magic = 0;
	free(e);
	return rc;
}

CUresult cuEventDestroy(CUevent h) { return cuEventDestroy_v2(h); }
CUresult cuEventSynchronize(CUevent h) { return exec_event1(R_EVENT_SYNC, h); }
CUresult cuEventQuery(CUevent h) { return exec_event1(R_EVENT_QUERY, h); }

static CUresult
exec_record(CUevent h, CUstream s, int ptsz)
{
	struct gevent *e = gobj_check(h, GK_EVENT);
	struct rpc_val in[3];
	struct gctx *c;
	uint64_t sid;
	CUresult rc;
	int local;

	if (e == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = ctx_need_stream(s, &c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(e);
	in[2].u = sid;
	/*
	 * Its completion may be known here (io.h: ridle_event_done) unless
	 * another process records it too, a graph does, or the record is
	 * captured (it then happens when the graph runs).
	 */
	local = !(e->flags & CU_EVENT_INTERPROCESS) && !e->graphed &&
	    !capture_busy(sid);
	if ((rc = rpost(R_EVENT_RECORD, in, local ? RP_EVLOCAL : 0)) ==
	    CUDA_SUCCESS)
		capture_record(e, sid);
	return rc;
}

CUresult cuEventRecord(CUevent e, CUstream s) { return exec_record(e, s, 0); }
CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return exec_record(e, s, 1); }

CUresult
cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
	return flags == 0 ? exec_record(e, s, 0) : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{
	return flags == 0 ? exec_record(e, s, 1) : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult
cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	struct gevent *ea = gobj_check(a, GK_EVENT), *eb = gobj_check(b, GK_EVENT);
	struct rpc_val in[2], out[1];
	void *keep;
	uint32_t bits;
	CUresult rc;

	/* The events first, as the driver checks them (even before cuInit). */
	if (ea == NULL || eb == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (ms == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(ea);
	in[1].u = gobj_id(eb);
	rc = remote_call(R_EVENT_ELAPSED, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	bits = (uint32_t)out[0].u;
	memcpy(ms, &bits, sizeof *ms);
	return CUDA_SUCCESS;
}

CUresult
cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
	return cuEventElapsedTime(ms, a, b);
}

/* ---- occupancy --------------------------------------------------------- */

/*
 * Occupancy depends only on the function, its attributes and the
 * arguments, so answers are kept here: libraries ask the same question
 * before every launch.  A change to any function's attributes or cache
 * configuration forgets them all (occ_forget).
 */
#define OCC_SLOTS	1024
static struct occ_slot {
	uint64_t	 fid, a, b, c;
	uint32_t	 kind;		/* 0 empty, else the call */
	uint64_t	 v;
} occ_cache[OCC_SLOTS];
static pthread_mutex_t occ_lock = PTHREAD_MUTEX_INITIALIZER;

static struct occ_slot *
occ_slot(uint32_t kind, uint64_t fid, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = fid * 0x9e3779b97f4a7c15ull ^ a * 0xc2b2ae3d27d4eb4full ^
	    b * 0x165667b19e3779f9ull ^ c * 0x27d4eb2f165667c5ull ^ kind;

	return &occ_cache[(h ^ h >> 29) % OCC_SLOTS];
}

static int
occ_get(uint32_t kind, uint64_t fid, uint64_t a, uint64_t b, uint64_t c,
    uint64_t *v)
{
	struct occ_slot *sl = occ_slot(kind, fid, a, b, c);
	int hit;

	pthread_mutex_lock(&occ_lock);
	hit = sl->kind == kind && sl->fid == fid && sl->a == a && sl->b == b &&
	    sl->c == c;
	if (hit)
		*v = sl->v;
	pthread_mutex_unlock(&occ_lock);
	return hit;
}

static void
occ_put(uint32_t kind, uint64_t fid, uint64_t a, uint64_t b, uint64_t c,
    uint64_t v)
{
	struct occ_slot *sl = occ_slot(kind, fid, a, b, c);

	pthread_mutex_lock(&occ_lock);
	*sl = (struct occ_slot){ fid, a, b, c, kind, v };
	pthread_mutex_unlock(&occ_lock);
}

void
occ_forget(void)
{
	pthread_mutex_lock(&occ_lock);
	memset(occ_cache, 0, sizeof occ_cache);
	pthread_mutex_unlock(&occ_lock);
}

CUresult
cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f,
    int block, size_t shmem, unsigned int flags)
{
	struct rpc_val in[4], out[1];
	uint64_t fid;
	void *keep;
	CUresult rc;

	if (n == NULL || block <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (func_info(f, &fid) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (occ_get(R_OCCUPANCY, fid, (uint64_t)block, shmem, flags,
	    &out[0].u)) {
		*n = (int)out[0].u;
		return CUDA_SUCCESS;
	}
	in[0].u = fid;
	in[1].u = (uint64_t)block;
	in[2].u = shmem;
	in[3].u = flags;
	rc = remote_call(R_OCCUPANCY, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS) {
		*n = (int)out[0].u;
		occ_put(R_OCCUPANCY, fid, (uint64_t)block, shmem, flags,
		    out[0].u);
	}
	return rc;
}

CUresult
cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block,
    size_t shmem)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, block,
	    shmem, 0);
}

CUresult
cuOccupancyAvailableDynamicSMemPerBlock(size_t *n, CUfunction f, int blocks,
    int block)
{
	struct rpc_val in[3], out[1];
	uint64_t fid;
	void *keep;
	CUresult rc;

	if (n == NULL || blocks <= 0 || block <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (func_info(f, &fid) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (occ_get(R_OCC_SMEM, fid, (uint64_t)blocks, (uint64_t)block, 0,
	    &out[0].u)) {
		*n = (size_t)out[0].u;
		return CUDA_SUCCESS;
	}
	in[0].u = fid;
	in[1].u = (uint64_t)blocks;
	in[2].u = (uint64_t)block;
	rc = remote_call(R_OCC_SMEM, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS) {
		*n = (size_t)out[0].u;
		occ_put(R_OCC_SMEM, fid, (uint64_t)blocks, (uint64_t)block, 0,
		    out[0].u);
	}
	return rc;
}

/* The cluster occupancy queries, with the launch configuration's values. */
static CUresult
exec_occ_clusters(int what, int *out, CUfunction f, const CUlaunchConfig *cfg)
{
	struct rpc_val in[10], rep[1];
	struct pw attrs;
	uint64_t fid;
	void *keep;
	unsigned i;
	CUresult rc;

	if (out == NULL || cfg == NULL || cfg->numAttrs > 16)
		return CUDA_ERROR_INVALID_VALUE;
	if (func_info(f, &fid) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	pw_init(&attrs);
	for (i = 0; i < cfg->numAttrs; i++)
		attr_put(&attrs, &cfg->attrs[i]);
	in[0].u = (uint64_t)what;
	in[1].u = fid;
	in[2].u = cfg->gridDimX; in[3].u = cfg->gridDimY;
	in[4].u = cfg->gridDimZ; in[5].u = cfg->blockDimX;
	in[6].u = cfg->blockDimY; in[7].u = cfg->blockDimZ;
	in[8].u = cfg->sharedMemBytes;
	in[9].p = attrs.p;
	in[9].len = (uint32_t)attrs.len;
	rc = remote_call(R_OCC_CLUSTERS, in, rep, &keep);
	pw_free(&attrs);
	free(keep);
	if (rc == CUDA_SUCCESS)
		*out = (int)rep[0].u;
	return rc;
}

CUresult
cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg)
{
	return exec_occ_clusters(0, n, f, cfg);
}

CUresult
cuOccupancyMaxPotentialClusterSize(int *n, CUfunction f,
    const CUlaunchConfig *cfg)
{
	return exec_occ_clusters(1, n, f, cfg);
}

/*
 * The R_LAUNCH request of a kernel graph node (graph-nodes.c): checked as
 * a launch is, on no stream; *args (the packed arguments, in in[11]) is
 * the caller's to free.
 */
CUresult
launch_request(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
    unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **params,
    void **extra, struct rpc_val *in, char **args)
{
	const struct gfinfo *fi;
	struct gctx *c;
	uint64_t fid;
	CUresult rc;

	*args = NULL;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((fi = func_info(f, &fid)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = exec_geometry(c, fi, gx, gy, gz, bx, by, bz, shmem)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((rc = exec_args(fi, params, extra, args)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = fid;
	in[2].u = gx; in[3].u = gy; in[4].u = gz;
	in[5].u = bx; in[6].u = by; in[7].u = bz;
	in[8].u = shmem;
	in[9].u = 0;
	in[10].u = 0;
	in[11].p = *args;
	in[11].len = fi->argbytes;
	return CUDA_SUCCESS;
}
