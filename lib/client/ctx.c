/*
 * Contexts.  The current-context stack is the calling thread's and lives
 * here; the server holds one real context per client context, created
 * when a primary context is first retained or an explicit one created.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "log.h"
#include "pool.h"
#include "cls.h"
#include "hooks.h"

#define CTX_STACK	32

static pthread_mutex_t	 ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gctx	*primaries;	/* one per device, never freed */
static int		 nprimaries;
static __thread struct gctx *tstack[CTX_STACK];
static __thread int	 tdepth;

/* The primary contexts, made once the device list is known. */
static int
ctx_primaries(void)
{
	int i, n = client_device_count();

	pthread_mutex_lock(&ctx_lock);
	if (primaries == NULL && n > 0 &&
	    (primaries = calloc((size_t)n, sizeof *primaries)) != NULL) {
		for (i = 0; i < n; i++) {
			primaries[i].o.magic = GOBJ_MAGIC;
			primaries[i].o.kind = GK_CTX;
			primaries[i].device = i;
			primaries[i].primary = 1;
		}
		nprimaries = n;
	}
	pthread_mutex_unlock(&ctx_lock);
	return primaries != NULL ? 0 : -1;
}

static struct gctx *
ctx_primary(CUdevice dev)
{
	if (ctx_primaries() == -1 || dev < 0 || dev >= nprimaries)
		return NULL;
	return &primaries[dev];
}

/*
 * Device dev's primary context if it is active (dev -1: the first one
 * active), else NULL: what the calls the driver answers without a
 * current context (the virtual memory family) name on the server.
 */
struct gctx *
ctx_primary_live(int dev)
{
	int i;

	if (ctx_primaries() == -1)
		return NULL;
	for (i = 0; i < nprimaries; i++)
		if ((dev < 0 || dev == i) && primaries[i].live)
			return &primaries[i];
	return NULL;
}

CUresult
client_primary_ctx(CUdevice dev, CUcontext *out)
{
	struct gctx *p = ctx_primary(dev);

	if (p == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = (CUcontext)p;
	return CUDA_SUCCESS;
}

CUcontext
client_ctx_current(void)
{
	return tdepth > 0 ? (CUcontext)tstack[tdepth - 1] : NULL;
}

struct gctx *
ctx_current(void)
{
	return tdepth > 0 ? tstack[tdepth - 1] : NULL;
}

CUresult
ctx_none(const char *who)
{
	log_debug("%s (no current context in this thread): %d", who,
	    CUDA_ERROR_INVALID_CONTEXT);
	return CUDA_ERROR_INVALID_CONTEXT;
}

/* c, the context a call works in (NULL: none), or the error to return. */
static CUresult
ctx_usable(struct gctx *c, struct gctx **out, const char *who)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (c == NULL)
		return ctx_none(who);
	if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if (c->sticky != CUDA_SUCCESS)
		return c->sticky;
	*out = c;
	return CUDA_SUCCESS;
}

CUresult
ctx_need_for(CUstream s, struct gctx **out, const char *who)
{
	struct gctx *c = ctx_current();
	struct gstream *g;

	if (c == NULL && s != NULL && s != CU_STREAM_LEGACY &&
	    s != CU_STREAM_PER_THREAD &&
	    (g = gobj_check(s, GK_STREAM)) != NULL)
		c = g->ctx;
	return ctx_usable(c, out, who);
}

CUresult
ctx_need_at(struct gctx **out, const char *who)
{
	return ctx_usable(ctx_current(), out, who);
}

int
rc_sticky(CUresult rc)
{
	switch (rc) {
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_ASSERT:
		return 1;
	default:
		return 0;
	}
}

/* A call with one id and no reply fields. */
static CUresult
ctx_call1(uint16_t type, uint64_t id)
{
	struct rpc_val in[1], out[1];
	void *keep;
	CUresult rc;

	in[0].u = id;
	rc = remote_call(type, in, out, &keep);
	free(keep);
	return rc;
}

CUresult
cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct rpc_val in[2], out[1];
	struct gctx *p;
	void *keep;
	CUresult rc = CUDA_SUCCESS;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p = ctx_primary(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&ctx_lock);
	if (p->refs == 0) {
		in[0].u = gobj_id(p);
		in[1].u = (uint64_t)dev;
		rc = remote_call(R_PRIMARY_RETAIN, in, out, &keep);
		free(keep);
		p->live = rc == CUDA_SUCCESS;
		if (p->live) {
			p->life = ctx_new_life();
			pool_start(p);
		}
		p->sticky = CUDA_SUCCESS;	/* a fresh context */
	}
	if (rc == CUDA_SUCCESS) {
		p->refs++;
		*pctx = (CUcontext)p;
	}
	pthread_mutex_unlock(&ctx_lock);
	return rc;
}

/* Runs cudart's destructors, then lets the server drop the context. */
CUresult
ctx_end(struct gctx *p, uint16_t type)
{
	cls_destroy((struct CUctx_st *)p);
	p->live = 0;
	pool_drop(p);
	return ctx_call1(type, gobj_id(p));
}

CUresult
cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	struct gctx *p;
	CUresult rc = CUDA_SUCCESS;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((p = ctx_primary(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&ctx_lock);
	if (p->refs == 0)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (--p->refs == 0)
		rc = ctx_end(p, R_PRIMARY_RELEASE);
	pthread_mutex_unlock(&ctx_lock);
	return rc;
}

CUresult
cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult
cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	struct gctx *p;
	CUresult rc = CUDA_SUCCESS;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((p = ctx_primary(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&ctx_lock);
	if (p->live)
		rc = ctx_end(p, R_PRIMARY_RESET);
	p->refs = 0;
	pthread_mutex_unlock(&ctx_lock);
	return rc;
}

CUresult
cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

CUresult
cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct gctx *p;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (flags == NULL || active == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p = ctx_primary(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*flags = p->flags;
	*active = p->refs > 0;
	return CUDA_SUCCESS;
}

/* The first version refuses an active primary context (the driver does:
 * PRIMARY_CONTEXT_ACTIVE); _v2 sets its flags anyway. */
static CUresult
primary_set_flags(CUdevice dev, unsigned int flags, int refuse_active)
{
	struct gctx *p;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((p = ctx_primary(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if (refuse_active && p->refs > 0)
		return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
	if (flags & ~0x1fu)
		return CUDA_ERROR_INVALID_VALUE;
	p->flags = flags;
	return CUDA_SUCCESS;
}

CUresult
cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	return primary_set_flags(dev, flags, 0);
}

CUresult
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return primary_set_flags(dev, flags, 1);
}

static void
ctx_push(struct gctx *c)
{
	if (tdepth < CTX_STACK)
		tstack[tdepth++] = c;
	else
		tstack[CTX_STACK - 1] = c;
}

CUresult
cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct rpc_val in[3], out[1];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(dev) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->o.kind = GK_CTX;
	c->device = dev;
	c->flags = flags;
	c->refs = 1;
	in[0].u = gobj_id(c);
	in[1].u = (uint64_t)dev;
	in[2].u = flags;
	rc = remote_call(R_CTX_CREATE, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		free(c);
		return rc;
	}
	c->live = 1;
	c->life = ctx_new_life();
	gobj_publish(c);
	pool_start(c);
	ctx_push(c);
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CUresult
cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult
cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
    unsigned int flags, CUdevice dev)
{
	if (params != NULL && n > 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult
cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
    unsigned int flags, CUdevice dev)
{
	if (params != NULL && (params->execAffinityParams != NULL ||
	    params->cigParams != NULL))
		return CUDA_ERROR_NOT_SUPPORTED;
	return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult
cuCtxDestroy_v2(CUcontext ctx)
{
	struct gctx *c = gobj_check(ctx, GK_CTX);
	CUresult rc;

	/* NULL: the driver's INVALID_VALUE, even before cuInit. */
	if (ctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	/* A green context's goes with it (cuGreenCtxDestroy). */
	if (c == NULL || c->primary || c->green != NULL || !c->live)
		return CUDA_ERROR_INVALID_CONTEXT;
	rc = ctx_end(c, R_CTX_DESTROY);
	ctx_unstack(c);
	c->o.magic = 0;
	free(c);
	return rc;
}

/* Off this thread's stack; other threads must not use it either. */
void
ctx_unstack(struct gctx *c)
{
	int i;

	for (i = 0; i < tdepth; i++)
		if (tstack[i] == c) {
			memmove(&tstack[i], &tstack[i + 1],
			    (size_t)(tdepth - i - 1) * sizeof *tstack);
			tdepth--;
			i--;
		}
}

CUresult
cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

CUresult
cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = client_ctx_current();
	return CUDA_SUCCESS;
}

CUresult
cuCtxSetCurrent(CUcontext ctx)
{
	struct gctx *c = NULL;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ctx != NULL && (c = gobj_check(ctx, GK_CTX)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c == NULL) {
		if (tdepth > 0)
			tdepth--;
	} else if (tdepth == 0)
		tstack[tdepth++] = c;
	else
		tstack[tdepth - 1] = c;
	return CUDA_SUCCESS;
}

CUresult
cuCtxPushCurrent_v2(CUcontext ctx)
{
	struct gctx *c = gobj_check(ctx, GK_CTX);
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (ctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_push(c);
	return CUDA_SUCCESS;
}

CUresult
cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

CUresult
cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (tdepth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	tdepth--;
	if (pctx != NULL)
		*pctx = (CUcontext)tstack[tdepth];
	return CUDA_SUCCESS;
}

CUresult
cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

/* ctx, or the current one when NULL; the error if neither is usable. */
static CUresult
ctx_resolve(CUcontext ctx, struct gctx **out)
{
	if (ctx == NULL)
		return ctx_need(out);
	if ((*out = gobj_check(ctx, GK_CTX)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	return (*out)->live ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult
cuCtxGetDevice(CUdevice *dev)
{
	struct gctx *c;
	CUresult rc;

	if (dev == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	*dev = c->device;
	return CUDA_SUCCESS;
}

CUresult
cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
	struct gctx *c;
	CUresult rc;

	if (dev == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_resolve(ctx, &c)) != CUDA_SUCCESS)
		return rc;
	*dev = c->device;
	return CUDA_SUCCESS;
}

CUresult
cuCtxSynchronize(void)
{
	struct gctx *c;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	rc = ctx_call1(R_CTX_SYNC, gobj_id(c));
	capture_saw(c, rc);
	return rc;
}

CUresult
cuCtxSynchronize_v2(CUcontext ctx)
{
	struct gctx *c;
	CUresult rc;

	if ((rc = ctx_resolve(ctx, &c)) != CUDA_SUCCESS)
		return rc;
	/* cudart 13's cudaDeviceSynchronize: refused in a capture, which
	 * it spoils as the driver's does. */
	rc = ctx_call1(R_CTX_SYNC, gobj_id(c));
	capture_saw(c, rc);
	return rc;
}

CUresult
cuCtxGetFlags(unsigned int *flags)
{
	struct gctx *c;
	CUresult rc;

	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	*flags = c->flags;
	return CUDA_SUCCESS;
}

CUresult
cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct gctx *c;
	CUresult rc;

	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_resolve(ctx, &c)) != CUDA_SUCCESS)
		return rc;
	*version = 3020;	/* what the real driver reports for _v2 contexts */
	return CUDA_SUCCESS;
}

CUresult
cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	struct gctx *c;
	CUresult rc;

	if (id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_resolve(ctx, &c)) != CUDA_SUCCESS)
		return rc;
	*id = gobj_id(c);
	return CUDA_SUCCESS;
}

/* Limits: set ones are remembered (and forwarded), the rest are defaults. */
static size_t ctx_limits[16] = {
	[CU_LIMIT_STACK_SIZE] = 1024,
	[CU_LIMIT_PRINTF_FIFO_SIZE] = 1048576,
	[CU_LIMIT_MALLOC_HEAP_SIZE] = 8388608,
	[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32,
	[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
};

CUresult
cuCtxGetLimit(size_t *value, CUlimit limit)
{
	struct gctx *c;
	CUresult rc;

	if (value == NULL || (unsigned)limit >= 16)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	*value = ctx_limits[limit];
	return CUDA_SUCCESS;
}

CUresult
cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct rpc_val in[3], out[1];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if ((unsigned)limit >= 16)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = (uint64_t)limit;
	in[2].u = value;
	rc = remote_call(R_CTX_SET_LIMIT, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS)
		ctx_limits[limit] = value;
	return rc;
}

CUresult
cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	struct gctx *c;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	/* The range of every GPU since Volta. */
	if (least != NULL)
		*least = 0;
	if (greatest != NULL)
		*greatest = -5;
	return CUDA_SUCCESS;
}

static CUfunc_cache ctx_cache_config = CU_FUNC_CACHE_PREFER_NONE;

CUresult
cuCtxGetCacheConfig(CUfunc_cache *config)
{
	if (config == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*config = ctx_cache_config;
	return CUDA_SUCCESS;
}

CUresult
cuCtxSetCacheConfig(CUfunc_cache config)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	/* A hint the driver may ignore; Hopper does. */
	ctx_cache_config = config;
	return CUDA_SUCCESS;
}

/*
 * cuBLASLt's TPC map (dark-api.md 6.1), per device: fetched from the
 * server once, in the first context on that device that asks, and handed
 * out in malloc'd copies (cuBLASLt frees them through slot [13]).
 */
#define TPC_DEVS	64
#define TPC_MIN		72	/* the real driver's arrays are this big */
static struct {
	int		 state;		/* 0 not asked, 1 have it, 2 none */
	CUresult	 rc;		/* why none */
	uint8_t		*vgpc, *mtpc;
	uint32_t	 n;
} tpc[TPC_DEVS];
static pthread_mutex_t tpc_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult
client_tpc_map(uint8_t **vgpc, uint8_t **mtpc)
{
	struct rpc_val in[1], out[2];
	struct gctx *c;
	void *keep = NULL;
	CUresult rc;
	int d;

	if (client_initialized() != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	if ((c = ctx_current()) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((d = c->device) < 0 || d >= TPC_DEVS)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&tpc_lock);
	if (tpc[d].state == 0) {
		in[0].u = gobj_id(c);
		rc = remote_call(R_TPC_MAP, in, out, &keep);
		if (rc == CUDA_SUCCESS && (out[0].len != out[1].len ||
		    out[0].len == 0 || out[0].len > 4096))
			rc = CUDA_ERROR_NOT_SUPPORTED;
		if (rc == CUDA_SUCCESS) {
			size_t sz = out[0].len < TPC_MIN ? TPC_MIN : out[0].len;

			tpc[d].vgpc = calloc(1, sz);
			tpc[d].mtpc = calloc(1, sz);
			if (tpc[d].vgpc == NULL || tpc[d].mtpc == NULL)
				rc = CUDA_ERROR_OUT_OF_MEMORY;
			else {
				memcpy(tpc[d].vgpc, out[0].p, out[0].len);
				memcpy(tpc[d].mtpc, out[1].p, out[1].len);
				tpc[d].n = (uint32_t)sz;
			}
		}
		free(keep);
		if (rc == CUDA_SUCCESS)
			tpc[d].state = 1;
		else if (rc != CUDA_ERROR_DEVICE_UNAVAILABLE) {
			/* Not to be asked again: cuBLASLt copes without. */
			free(tpc[d].vgpc);
			free(tpc[d].mtpc);
			tpc[d].vgpc = tpc[d].mtpc = NULL;
			tpc[d].state = 2;
			tpc[d].rc = CUDA_ERROR_NOT_SUPPORTED;
		}
		if (rc != CUDA_SUCCESS) {
			pthread_mutex_unlock(&tpc_lock);
			return rc == CUDA_ERROR_DEVICE_UNAVAILABLE ? rc :
			    CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	if (tpc[d].state == 2) {
		rc = tpc[d].rc;
		pthread_mutex_unlock(&tpc_lock);
		return rc;
	}
	*vgpc = malloc(tpc[d].n);
	*mtpc = malloc(tpc[d].n);
	if (*vgpc == NULL || *mtpc == NULL) {
		free(*vgpc);
		free(*mtpc);
		*vgpc = *mtpc = NULL;
		pthread_mutex_unlock(&tpc_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(*vgpc, tpc[d].vgpc, tpc[d].n);
	memcpy(*mtpc, tpc[d].mtpc, tpc[d].n);
	pthread_mutex_unlock(&tpc_lock);
	return CUDA_SUCCESS;
}

uint64_t
ctx_new_life(void)
{
	static uint64_t lives;

	return __atomic_add_fetch(&lives, 1, __ATOMIC_RELAXED);
}
