/*
 * Green contexts: SM resources read, split and made into descriptors,
 * and green contexts made from them, with their streams and events.
 *
 * A CUdevResource is the driver's, opaque past its SM counts: it travels
 * whole, and the server's driver makes and reads it.  A resource
 * descriptor is a struct here named by its address, as the other
 * handles are; the driver has no call that frees one, and neither is
 * ours freed.  A green context is a struct here with a context of its
 * own (struct gctx, green set), which cuCtxFromGreenCtx returns: every
 * context call takes it, and the server knows the green context by that
 * context's id.  Its id (cuGreenCtxGetId) is a number of this process,
 * as unique as the driver's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "entry-points.h"
#include "hooks.h"

struct ggreen {
	struct gobj	 o;
	struct gctx	*ctx;
	uint64_t	 seq;		/* its cuGreenCtxGetId */
};

struct gdesc {
	struct gobj	 o;
	struct gdesc	*next;
};

/*
 * Every descriptor made: the driver has no call that frees one, so each
 * lives until the program ends, listed here (not lost to a leak check).
 */
static struct gdesc	*descs;
static pthread_mutex_t	 descs_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t	 green_seq;

CUresult
green_resource(uint32_t which, int dev, uint64_t ctx, uint64_t sid,
    CUdevResourceType type, CUdevResource *res)
{
	struct rpc_val in[5], out[1];
	void *keep;
	CUresult rc;

	in[0].u = which;
	in[1].u = (uint64_t)(int64_t)dev;
	in[2].u = ctx;
	in[3].u = sid;
	in[4].u = (uint32_t)type;
	rc = remote_call(R_DEV_RESOURCE, in, out, &keep);
	if (rc == CUDA_SUCCESS && out[0].len != sizeof *res)
		rc = CUDA_ERROR_UNKNOWN;
	if (rc == CUDA_SUCCESS)
		memcpy(res, out[0].p, sizeof *res);
	free(keep);
	return rc;
}

/* A green context of ours whose context lives, else NULL. */
static struct ggreen *
green_of(CUgreenCtx h)
{
	struct ggreen *g = gobj_check(h, GK_GREEN);

	return g != NULL && g->ctx->live ? g : NULL;
}

CUresult
cuDeviceGetDevResource(CUdevice dev, CUdevResource *res,
    CUdevResourceType type)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (res == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(dev) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	return green_resource(DEVRES_DEVICE, dev, 0, 0, type, res);
}

CUresult
cuCtxGetDevResource(CUcontext ctx, CUdevResource *res,
    CUdevResourceType type)
{
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (res == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx == NULL) {
		if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
			return rc;
	} else if ((c = gobj_check(ctx, GK_CTX)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	else if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return green_resource(DEVRES_CTX, c->device, gobj_id(c), 0, type, res);
}

CUresult
cuGreenCtxGetDevResource(CUgreenCtx h, CUdevResource *res,
    CUdevResourceType type)
{
	struct ggreen *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (res == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((g = green_of(h)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	return green_resource(DEVRES_GREEN, g->ctx->device, gobj_id(g->ctx), 0,
	    type, res);
}

/*
 * Both splits (R_SM_SPLIT): n the result array's size, 0 without one;
 * *made the groups the driver made (or would make); params n group
 * parameters, given back as the driver left them.
 */
static CUresult
green_split(uint32_t op, CUdevResource *result, unsigned n, unsigned *made,
    const CUdevResource *input, CUdevResource *rem, unsigned flags,
    unsigned mincount, void *params)
{
	struct rpc_val in[7], out[4];
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	in[0].u = op;
	in[1].u = n;
	in[2].u = flags;
	in[3].u = mincount;
	in[4].p = input;
	in[4].len = sizeof *input;
	in[5].p = params;
	in[5].len = params != NULL ? n * RPC_SMGROUP_LEN : 0;
	in[6].u = (result != NULL ? SPLIT_WANT_RESULT : 0) |
	    (rem != NULL ? SPLIT_WANT_REMAINDER : 0);
	rc = remote_call(R_SM_SPLIT, in, out, &keep);
	/* No more than asked for, and each thing at its length. */
	if (rc == CUDA_SUCCESS && ((result != NULL && (out[0].u > n ||
	    out[1].len != out[0].u * sizeof *result)) ||
	    (result == NULL && out[1].len != 0) ||
	    out[2].len != (rem != NULL ? sizeof *rem : 0) ||
	    out[3].len != in[5].len))
		rc = CUDA_ERROR_UNKNOWN;
	if (rc == CUDA_SUCCESS) {
		*made = (unsigned)out[0].u;
		if (result != NULL && out[1].len > 0)
			memcpy(result, out[1].p, out[1].len);
		if (rem != NULL)
			memcpy(rem, out[2].p, sizeof *rem);
		if (params != NULL && out[3].len > 0)
			memcpy(params, out[3].p, out[3].len);
	}
	free(keep);
	return rc;
}

CUresult
cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
    const CUdevResource *input, CUdevResource *remaining,
    unsigned int useFlags, unsigned int minCount)
{
	unsigned n = 0;

	if (nbGroups == NULL || input == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* No device has more groups than this to give. */
	if (result != NULL)
		n = *nbGroups < RPC_DEVRES_MAX ? *nbGroups : RPC_DEVRES_MAX;
	return green_split(SPLIT_BY_COUNT, result, n, nbGroups, input,
	    remaining, useFlags, minCount, NULL);
}

CUresult
cuDevSmResourceSplit(CUdevResource *result, unsigned int nbGroups,
    const CUdevResource *input, CUdevResource *remainder,
    unsigned int flags, void *groupParams)
{
	unsigned made;

	if (input == NULL || nbGroups > RPC_DEVRES_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	return green_split(SPLIT_STRUCTURED, result, nbGroups, &made, input,
	    remainder, flags, 0, groupParams);
}

CUresult
cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc,
    CUdevResource *resources, unsigned int nbResources)
{
	struct rpc_val in[2], out[1];
	struct gdesc *d;
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (phDesc == NULL || (resources == NULL && nbResources > 0) ||
	    nbResources > RPC_DEVRES_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((d = calloc(1, sizeof *d)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->o.kind = GK_RESDESC;
	in[0].u = gobj_id(d);
	in[1].p = resources;
	in[1].len = nbResources * (uint32_t)sizeof *resources;
	rc = remote_call(R_RES_DESC, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		free(d);
		return rc;
	}
	pthread_mutex_lock(&descs_mu);
	d->next = descs;
	descs = d;
	pthread_mutex_unlock(&descs_mu);
	gobj_publish(d);
	*phDesc = (CUdevResourceDesc)d;
	return CUDA_SUCCESS;
}

CUresult
cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
    unsigned int flags)
{
	struct gdesc *d = gobj_check(desc, GK_RESDESC);
	struct rpc_val in[4], out[1];
	struct ggreen *g;
	struct gctx *c;
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (phCtx == NULL || d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(dev) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((g = calloc(1, sizeof *g)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((c = calloc(1, sizeof *c)) == NULL) {
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->o.kind = GK_CTX;
	c->device = dev;
	c->refs = 1;
	c->green = g;
	g->o.kind = GK_GREEN;
	g->ctx = c;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(d);
	in[2].u = (uint64_t)(int64_t)dev;
	in[3].u = flags;
	rc = remote_call(R_GREEN_CREATE, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		free(c);
		free(g);
		return rc;
	}
	g->seq = __atomic_add_fetch(&green_seq, 1, __ATOMIC_RELAXED);
	c->live = 1;
	c->life = ctx_new_life();
	gobj_publish(c);
	gobj_publish(g);
	*phCtx = (CUgreenCtx)g;
	return CUDA_SUCCESS;
}

CUresult
cuGreenCtxDestroy(CUgreenCtx h)
{
	struct ggreen *g;
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((g = gobj_check(h, GK_GREEN)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	c = g->ctx;
	if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	rc = ctx_end(c, R_GREEN_DESTROY);
	ctx_unstack(c);
	c->o.magic = 0;
	g->o.magic = 0;
	free(c);
	free(g);
	return rc;
}

CUresult
cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx h)
{
	struct ggreen *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (pContext == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((g = green_of(h)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	*pContext = (CUcontext)g->ctx;
	return CUDA_SUCCESS;
}

CUresult
cuGreenCtxGetId(CUgreenCtx h, unsigned long long *id)
{
	struct ggreen *g;
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* NULL: the current context's, if it is a green context's. */
	if (h == NULL) {
		if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
			return rc;
		if ((g = c->green) == NULL)
			return CUDA_ERROR_INVALID_CONTEXT;
	} else if ((g = green_of(h)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	*id = g->seq;
	return CUDA_SUCCESS;
}

/* cuGreenCtxRecordEvent and cuGreenCtxWaitEvent: R_CTX_OP's. */
static CUresult
green_event(CUgreenCtx h, CUevent e, uint32_t op)
{
	struct rpc_val in[5], out[1];
	struct ggreen *g;
	struct gevent *ev;
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((g = green_of(h)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((ev = gobj_check(e, GK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (g->ctx->sticky != CUDA_SUCCESS)
		return g->ctx->sticky;
	in[0].u = gobj_id(g->ctx);
	in[1].u = op;
	in[2].u = gobj_id(ev);
	in[3].u = 0;
	in[4].u = 0;
	rc = remote_call(R_CTX_OP, in, out, &keep);
	free(keep);
	return rc;
}

CUresult
cuGreenCtxRecordEvent(CUgreenCtx h, CUevent e)
{
	return green_event(h, e, CTXOP_GREEN_RECORD);
}

CUresult
cuGreenCtxWaitEvent(CUgreenCtx h, CUevent e)
{
	return green_event(h, e, CTXOP_GREEN_WAIT);
}

CUresult
cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx h, unsigned int flags,
    int priority)
{
	struct ggreen *g;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	/* One-way: what the driver refuses is refused here first, the
	 * arguments before the context (as the driver). */
	if (phStream == NULL || flags != CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	if ((g = green_of(h)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (g->ctx->sticky != CUDA_SUCCESS)
		return g->ctx->sticky;
	return stream_make(g->ctx, R_GREEN_STREAM, flags, priority, phStream);
}
