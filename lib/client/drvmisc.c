/*
 * Device and context calls of the driver's odd corners: the deprecated
 * and Windows-only device queries, answered from the device's
 * attributes as the driver answers them; execution affinity (a context
 * here uses the whole device); the context's flags and usage count; and
 * what the context does in stream order (R_CTX_OP) or the server's
 * driver must answer (R_DEV_QUERY).
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"
#include "hooks.h"
#include "proto.h"

/* The v1 ABI's unsigned int: more than 4 GiB reads as UINT_MAX. */
CUresult
cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, bytes, &d)) != CUDA_SUCCESS)
		return rc;
	*bytes = d->totalmem > UINT_MAX ? UINT_MAX : (unsigned)d->totalmem;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, major, &d)) != CUDA_SUCCESS)
		return rc;
	if (minor == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*major = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	*minor = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetProperties(CUdevprop *p, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, p, &d)) != CUDA_SUCCESS)
		return rc;
	p->maxThreadsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	p->maxThreadsDim[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
	p->maxThreadsDim[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
	p->maxThreadsDim[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
	p->maxGridSize[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
	p->maxGridSize[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
	p->maxGridSize[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
	p->sharedMemPerBlock =
	    d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
	p->totalConstantMemory = d->attr[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
	p->SIMDWidth = d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
	p->memPitch = d->attr[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
	p->regsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
	p->clockRate = d->attr[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
	p->textureAlign = d->attr[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
	return CUDA_SUCCESS;
}

/* Hex digits up to a separator: the value, or -1. */
static long
busid_field(const char **sp, int sep, long max)
{
	const char *s = *sp;
	long v = 0;
	int n = 0;

	for (; isxdigit((unsigned char)*s); s++, n++) {
		v = v * 16 + (isdigit((unsigned char)*s) ? *s - '0' :
		    tolower((unsigned char)*s) - 'a' + 10);
		if (v > max)
			return -1;
	}
	if (n == 0 || *s != sep)
		return -1;
	*sp = sep == '\0' ? s : s + 1;
	return v;
}

/*
 * The forms the driver reads: domain:bus:device.function,
 * domain:bus:device and bus:device.function, in hex.
 */
CUresult
cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	long dom = 0, bus, slot;
	const char *s = id, *c1, *c2;
	CUresult rc;
	int i;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (dev == NULL || id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	c1 = strchr(id, ':');
	c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
	if (c1 == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c2 != NULL && (dom = busid_field(&s, ':', 0xffff)) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((bus = busid_field(&s, ':', 0xff)) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (strchr(s, '.') != NULL) {
		if ((slot = busid_field(&s, '.', 0x1f)) == -1 ||
		    busid_field(&s, '\0', 7) == -1)
			return CUDA_ERROR_INVALID_VALUE;
	} else if (c2 == NULL || (slot = busid_field(&s, '\0', 0x1f)) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < client_device_count(); i++) {
		const struct client_device *d = client_device(i);

		if (d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] == dom &&
		    d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] == bus &&
		    d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] == slot) {
			*dev = i;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_DEVICE;
}

/* A LUID is a Windows (WDDM) adapter's; Linux drivers have none. */
CUresult
cuDeviceGetLuid(char *luid, unsigned int *mask, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, luid, &d)) != CUDA_SUCCESS)
		return rc;
	if (mask == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * A context limited to some SMs would have to be made on the server with
 * cuCtxCreate_v3's parameters, which cuCtxCreate_v3 refuses here: so no
 * device supports it through Gleam, and every context has all the SMs.
 */
CUresult
cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type,
    CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, pi, &d)) != CUDA_SUCCESS)
		return rc;
	/* A type past the last is not supported either: 0, as the driver
	 * 580 answers (seen on an H100). */
	(void)type;
	*pi = 0;
	return CUDA_SUCCESS;
}

CUresult
cuCtxGetExecAffinity(CUexecAffinityParam *p, CUexecAffinityType type)
{
	const struct client_device *d;
	struct gctx *c;
	CUresult rc;

	if (p == NULL || (unsigned)type >= CU_EXEC_AFFINITY_TYPE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((d = client_device(c->device)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	p->type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
	p->param.smCount.val =
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	return CUDA_SUCCESS;
}

/*
 * The flags cuCtxGetFlags reports from then on.  Scheduling (one of spin,
 * yield, blocking sync) is how a host thread waits for the device, here
 * for the server's reply, which always blocks; the rest are kept.
 */
CUresult
cuCtxSetFlags(unsigned int flags)
{
	struct gctx *c;
	CUresult rc;
	unsigned sched = flags & CU_CTX_SCHED_MASK;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((flags & ~(unsigned)CU_CTX_FLAGS_MASK) != 0 || (sched != 0 &&
	    sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
	    sched != CU_CTX_SCHED_BLOCKING_SYNC))
		return CUDA_ERROR_INVALID_VALUE;
	c->flags = flags;
	return CUDA_SUCCESS;
}

/*
 * The usage count of CUDA 3: attach takes a reference to the current
 * context, detach drops one and destroys the context with the last (a
 * primary context's references are its retains).
 */
CUresult
cuCtxAttach(CUcontext *pctx, unsigned int flags)
{
	struct gctx *c;
	CUresult rc;

	if (pctx == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (c->primary) {
		if ((rc = cuDevicePrimaryCtxRetain(pctx, c->device)) !=
		    CUDA_SUCCESS)
			return rc;
	} else
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CUresult
cuCtxDetach(CUcontext ctx)
{
	struct gctx *c = gobj_check(ctx, GK_CTX);
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (c == NULL || !c->live)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c->primary)
		return cuDevicePrimaryCtxRelease_v2(c->device);
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_RELAXED) > 0)
		return CUDA_SUCCESS;
	return cuCtxDestroy_v2(ctx);
}

/* ---- what the context does: R_CTX_OP ------------------------------------ */

static CUresult
ctx_op(struct gctx *c, uint32_t op, uint64_t ev, uint32_t a, uint32_t b)
{
	struct rpc_val in[5], out[1];
	void *keep;
	CUresult rc;

	in[0].u = gobj_id(c);
	in[1].u = op;
	in[2].u = ev;
	in[3].u = a;
	in[4].u = b;
	rc = remote_call(R_CTX_OP, in, out, &keep);
	free(keep);
	return rc;
}

/* The context named: NULL is none (the driver's INVALID_CONTEXT, the
 * nullsweep's ground truth), not the current one. */
static CUresult
ctx_event(CUcontext ctx, CUevent e, uint32_t op)
{
	struct gevent *ev;
	struct gctx *c;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((c = gobj_check(ctx, GK_CTX)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	else if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if ((ev = gobj_check(e, GK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* Recorded anew, behind the context's work: no longer known
	 * complete (io.h: ridle_event_done). */
	if (op == CTXOP_RECORD)
		ridle_event_forget(gobj_id(ev));
	return ctx_op(c, op, gobj_id(ev), 0, 0);
}

CUresult
cuCtxRecordEvent(CUcontext ctx, CUevent e)
{
	return ctx_event(ctx, e, CTXOP_RECORD);
}

CUresult
cuCtxWaitEvent(CUcontext ctx, CUevent e)
{
	return ctx_event(ctx, e, CTXOP_WAIT);
}

CUresult
cuCtxResetPersistingL2Cache(void)
{
	struct gctx *c;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	return ctx_op(c, CTXOP_RESET_L2, 0, 0, 0);
}

CUresult
cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
    CUflushGPUDirectRDMAWritesScope scope)
{
	struct gctx *c;
	CUresult rc;

	if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
	    (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
	    scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	return ctx_op(c, CTXOP_FLUSH, 0, target, scope);
}

/* ---- what the server's driver answers: R_DEV_QUERY ---------------------- */

/* The query's answer, at most n bytes of it into out. */
static CUresult
dev_query(uint32_t which, CUdevice dev, const struct pw *args, void *out,
    size_t n)
{
	struct rpc_val in[3], rep[1];
	void *keep;
	CUresult rc;

	in[0].u = which;
	in[1].u = (uint64_t)(int64_t)dev;
	in[2].p = args->p;
	in[2].len = (uint32_t)args->len;
	if ((rc = remote_call(R_DEV_QUERY, in, rep, &keep)) == CUDA_SUCCESS) {
		if (rep[0].len != n)
			rc = CUDA_ERROR_UNKNOWN;
		else
			memcpy(out, rep[0].p, n);
	}
	free(keep);
	return rc;
}

CUresult
cuDeviceGetTexture1DLinearMaxWidth(size_t *width, CUarray_format fmt,
    unsigned channels, CUdevice dev)
{
	const struct client_device *d;
	struct pw args;
	uint8_t b[8];
	CUresult rc;

	if ((rc = device_lookup(dev, width, &d)) != CUDA_SUCCESS)
		return rc;
	if (channels != 1 && channels != 2 && channels != 4)
		return CUDA_ERROR_INVALID_VALUE;
	pw_init(&args);
	pw_u32(&args, (uint32_t)fmt);
	pw_u32(&args, channels);
	rc = args.bad ? CUDA_ERROR_OUT_OF_MEMORY :
	    dev_query(DEVQ_TEX1D, dev, &args, b, sizeof b);
	pw_free(&args);
	if (rc == CUDA_SUCCESS) {
		struct pr r;

		pr_init(&r, b, sizeof b);
		*width = (size_t)pr_u64(&r);
	}
	return rc;
}

static CUresult
atomic_caps(uint32_t which, unsigned *caps, const CUatomicOperation *ops,
    unsigned n, CUdevice dev, CUdevice peer)
{
	const struct client_device *d;
	struct pw args;
	uint8_t *b;
	unsigned i;
	CUresult rc;

	if ((rc = device_lookup(dev, caps, &d)) != CUDA_SUCCESS)
		return rc;
	if (which == DEVQ_P2P_ATOMIC && client_device(peer) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if (ops == NULL || n == 0 || n > RPC_ATOMIC_OPS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((b = malloc(4 * (size_t)n)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pw_init(&args);
	if (which == DEVQ_P2P_ATOMIC)
		pw_u32(&args, (uint32_t)peer);
	for (i = 0; i < n; i++)
		pw_u32(&args, (uint32_t)ops[i]);
	rc = args.bad ? CUDA_ERROR_OUT_OF_MEMORY :
	    dev_query(which, dev, &args, b, 4 * (size_t)n);
	pw_free(&args);
	if (rc == CUDA_SUCCESS) {
		struct pr r;

		pr_init(&r, b, 4 * (size_t)n);
		for (i = 0; i < n; i++)
			caps[i] = pr_u32(&r);
	}
	free(b);
	return rc;
}

CUresult
cuDeviceGetP2PAtomicCapabilities(unsigned int *caps,
    const CUatomicOperation *ops, unsigned int n, CUdevice src, CUdevice dst)
{
	return atomic_caps(DEVQ_P2P_ATOMIC, caps, ops, n, src, dst);
}

CUresult
cuDeviceGetHostAtomicCapabilities(unsigned int *caps,
    const CUatomicOperation *ops, unsigned int n, CUdevice dev)
{
	return atomic_caps(DEVQ_HOST_ATOMIC, caps, ops, n, dev, 0);
}

/*
 * Asynchronous notifications come from the device's driver on the
 * server, and the protocol has no way to send one to the client unasked.
 * A registration that then stayed silent would differ from a device that
 * sends them (over-budget notices), so it is refused.
 */
CUresult
cuDeviceRegisterAsyncNotification(CUdevice dev, CUasyncCallback fn,
    void *data, CUasyncCallbackHandle *handle)
{
	const struct client_device *d;
	CUresult rc;

	(void)data;
	if ((rc = device_lookup(dev, handle, &d)) != CUDA_SUCCESS)
		return rc;
	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* No registration ever succeeded, so no handle is one. */
CUresult
cuDeviceUnregisterAsyncNotification(CUdevice dev,
    CUasyncCallbackHandle handle)
{
	const struct client_device *d;
	CUresult rc;

	/* No out parameter: &handle stands for one, never NULL. */
	if ((rc = device_lookup(dev, &handle, &d)) != CUDA_SUCCESS)
		return rc;
	return handle == NULL ? CUDA_ERROR_INVALID_VALUE :
	    CUDA_ERROR_NOT_SUPPORTED;
}
