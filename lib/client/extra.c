/*
 * Entry points answered from what the library already has: the PCI bus
 * id from the device's attributes, the shared-memory bank configuration
 * (Hopper has one) and host functions in stream order (the stream-ordered
 * allocator is mempool.c's).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"

CUresult
cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (id == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((d = client_device(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	/* The driver's form: domain:bus:device.function, truncated to len. */
	snprintf(id, (size_t)len, "%04x:%02x:%02x.0",
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
	    (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
	return CUDA_SUCCESS;
}

/* Bank size: a setting from before Kepler; the driver keeps and ignores it. */
static CUsharedconfig	 smem_config = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;

CUresult
cuCtxGetSharedMemConfig(CUsharedconfig *c)
{
	struct gctx *g;
	CUresult rc;

	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&g)) != CUDA_SUCCESS)
		return rc;
	*c = smem_config == CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ?
	    CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE : smem_config;
	return CUDA_SUCCESS;
}

CUresult
cuCtxSetSharedMemConfig(CUsharedconfig c)
{
	struct gctx *g;
	CUresult rc;

	if ((rc = ctx_need(&g)) != CUDA_SUCCESS)
		return rc;
	if ((unsigned)c > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	smem_config = c;
	return CUDA_SUCCESS;
}

CUresult
cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c)
{
	if (gobj_check(f, GK_FUNC) == NULL && gobj_check(f, GK_KERNEL) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)c > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/*
 * A host function runs once the work queued before it is done, and work
 * queued after it waits for it: here the stream is synchronized and the
 * function called on the calling thread, which keeps both promises.  On
 * a capturing stream it becomes a host node of the capture's graph: the
 * server notes it in stream order and it runs here when reached
 * (hostcb.c).
 */
static CUresult
host_fn(CUstream s, int ptsz, CUhostFn fn, void *data)
{
	struct rpc_val in[3];
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need_stream(s, &c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if (capture_busy(sid)) {
		struct gstream *g = gobj_check(s, GK_STREAM);

		if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
			return rc;
		if ((in[2].u = hostcb_id(fn, data)) == 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		in[0].u = gobj_id(g != NULL ? g->ctx : c);
		in[1].u = sid;
		return rpost(R_HOST_FUNC, in, 0);
	}
	rc = ptsz ? cuStreamSynchronize_ptsz(s) : cuStreamSynchronize(s);
	if (rc != CUDA_SUCCESS)
		return rc;
	fn(data);
	return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) { return host_fn(s, 0, fn, data); }
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data) { return host_fn(s, 1, fn, data); }

/* A callback also learns the stream's status. */
static CUresult
stream_callback(CUstream s, int ptsz, CUstreamCallback cb, void *data,
    unsigned flags)
{
	CUresult rc;

	if (cb == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = ptsz ? cuStreamSynchronize_ptsz(s) : cuStreamSynchronize(s);
	if (rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_INVALID_CONTEXT
	    || rc == CUDA_ERROR_DEVICE_UNAVAILABLE || rc ==
	    CUDA_ERROR_NOT_INITIALIZED)
		return rc;
	cb(s, rc, data);
	return CUDA_SUCCESS;
}

CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data, unsigned int flags) { return stream_callback(s, 0, cb, data, flags); }
CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *data, unsigned int flags) { return stream_callback(s, 1, cb, data, flags); }
