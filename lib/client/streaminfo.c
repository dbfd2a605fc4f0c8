/*
 * Stream queries, answered here from what the client knows of each
 * stream: its context, flags, priority and id (set at creation, exec.c).
 * The special streams (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, and
 * NULL in a _ptsz call, the per-thread stream) answer for the current
 * context, and fail with CUDA_ERROR_INVALID_CONTEXT without one, as the
 * driver's do.  A handle that is none of these is
 * CUDA_ERROR_INVALID_HANDLE (the driver calls it undefined behaviour).
 */
#include <stdint.h>

#include "client.h"

/* The legacy stream's id; a per-thread stream's is its stream's own. */
#define SINFO_LEGACY_ID	1

/*
 * The stream s names: *g the stream (NULL for a special one, with
 * *special 1 legacy, 2 per-thread) and *c its context.
 */
static CUresult
sinfo_resolve(CUstream s, int ptsz, struct gstream **g, struct gctx **c,
    int *special)
{
	CUresult rc;

	*g = NULL;
	*special = 0;
	if (s == NULL)
		*special = ptsz ? 2 : 1;
	else if (s == CU_STREAM_LEGACY)
		*special = 1;
	else if (s == CU_STREAM_PER_THREAD)
		*special = 2;
	if (*special) {
		if ((rc = ctx_need(c)) != CUDA_SUCCESS)
			return rc;
		return CUDA_SUCCESS;
	}
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((*g = gobj_check(s, GK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	*c = (*g)->ctx;
	return CUDA_SUCCESS;
}

static CUresult
sinfo_flags(CUstream s, int ptsz, unsigned int *flags)
{
	struct gstream *g;
	struct gctx *c;
	CUresult rc;
	int sp;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	/* The special streams are blocking ones. */
	*flags = g != NULL ? g->flags : CU_STREAM_DEFAULT;
	return CUDA_SUCCESS;
}

static CUresult
sinfo_priority(CUstream s, int ptsz, int *prio)
{
	struct gstream *g;
	struct gctx *c;
	CUresult rc;
	int sp;

	if (prio == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	*prio = g != NULL ? g->priority : 0;
	return CUDA_SUCCESS;
}

static CUresult
sinfo_ctx(CUstream s, int ptsz, CUcontext *pctx, CUgreenCtx *pgreen)
{
	struct gstream *g;
	struct gctx *c;
	CUresult rc;
	int sp;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	*pctx = (CUcontext)c;
	if (pgreen != NULL)
		*pgreen = (CUgreenCtx)c->green;
	return CUDA_SUCCESS;
}

/* A stream's green context, or NULL: its context's (green.c). */
static CUresult
sinfo_green(CUstream s, CUgreenCtx *pgreen)
{
	struct gstream *g;
	struct gctx *c;
	CUresult rc;
	int sp;

	if (pgreen == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, 0, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	*pgreen = (CUgreenCtx)c->green;
	return CUDA_SUCCESS;
}

/* The SMs of the stream's context, as the server's driver says. */
static CUresult
sinfo_resource(CUstream s, int ptsz, CUdevResource *res,
    CUdevResourceType type)
{
	struct gstream *g;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;
	int sp;

	if (res == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS ||
	    (rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	return green_resource(DEVRES_STREAM, c->device, gobj_id(c), sid,
	    type, res);
}

static CUresult
sinfo_device(CUstream s, int ptsz, CUdevice *dev)
{
	struct gstream *g;
	struct gctx *c;
	CUresult rc;
	int sp;

	if (dev == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	*dev = c->device;
	return CUDA_SUCCESS;
}

static CUresult
sinfo_id(CUstream s, int ptsz, unsigned long long *id)
{
	struct gstream *g;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;
	int sp;

	if (id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = sinfo_resolve(s, ptsz, &g, &c, &sp)) != CUDA_SUCCESS)
		return rc;
	if (sp == 1) {
		*id = SINFO_LEGACY_ID;
		return CUDA_SUCCESS;
	}
	if (sp == 2) {
		/* This thread's stream in this context (made on first use). */
		if ((rc = stream_id(CU_STREAM_PER_THREAD, 0, &sid)) !=
		    CUDA_SUCCESS)
			return rc;
		if ((g = gobj_check((void *)(uintptr_t)sid, GK_STREAM)) ==
		    NULL)
			return CUDA_ERROR_INVALID_HANDLE;
	}
	*id = g->seq;
	return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream s, unsigned int *f) { return sinfo_flags(s, 0, f); }
CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *f) { return sinfo_flags(s, 1, f); }
CUresult cuStreamGetPriority(CUstream s, int *p) { return sinfo_priority(s, 0, p); }
CUresult cuStreamGetPriority_ptsz(CUstream s, int *p) { return sinfo_priority(s, 1, p); }
CUresult cuStreamGetCtx(CUstream s, CUcontext *c) { return sinfo_ctx(s, 0, c, NULL); }
CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *c) { return sinfo_ctx(s, 1, c, NULL); }
CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *c, CUgreenCtx *gc) { return sinfo_ctx(s, 0, c, gc); }
CUresult cuStreamGetCtx_v2_ptsz(CUstream s, CUcontext *c, CUgreenCtx *gc) { return sinfo_ctx(s, 1, c, gc); }
CUresult cuStreamGetDevice(CUstream s, CUdevice *d) { return sinfo_device(s, 0, d); }
CUresult cuStreamGetDevice_ptsz(CUstream s, CUdevice *d) { return sinfo_device(s, 1, d); }
CUresult cuStreamGetId(CUstream s, unsigned long long *id) { return sinfo_id(s, 0, id); }
CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id) { return sinfo_id(s, 1, id); }
CUresult cuStreamGetGreenCtx(CUstream s, CUgreenCtx *gc) { return sinfo_green(s, gc); }
CUresult cuStreamGetDevResource(CUstream s, CUdevResource *r, CUdevResourceType t) { return sinfo_resource(s, 0, r, t); }
CUresult cuStreamGetDevResource_ptsz(CUstream s, CUdevResource *r, CUdevResourceType t) { return sinfo_resource(s, 1, r, t); }
