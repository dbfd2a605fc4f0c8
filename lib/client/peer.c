/*
 * Peer access and peer copies.  Peer access (a kernel of one device
 * reading another's memory) is not offered: cuDeviceCanAccessPeer says 0
 * (for a device and itself too, as the driver does), enabling it fails as
 * the driver fails for devices that cannot.  Peer copies need none: the
 * server's driver copies between any of its devices by unified
 * addressing, so they go as device-to-device copies (copy.c), contexts
 * checked.
 */
#include <string.h>

#include "client.h"
#include "hooks.h"

CUresult
cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (can == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(dev) == NULL || client_device(peer) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*can = 0;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attr,
    CUdevice src, CUdevice dst)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(src) == NULL || client_device(dst) == NULL ||
	    src == dst)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attr) {
	case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
	case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
		*value = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult
cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
	struct gctx *c, *p;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((p = gobj_check(peer, GK_CTX)) == NULL || !p->live)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The real driver (580, one H200) answers 217 for its own device too. */
	return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

CUresult
cuCtxDisablePeerAccess(CUcontext peer)
{
	struct gctx *c, *p;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((p = gobj_check(peer, GK_CTX)) == NULL || !p->live)
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* Both contexts must be the program's, alive. */
static CUresult
peer_ctxs(CUcontext a, CUcontext b)
{
	struct gctx *x = gobj_check(a, GK_CTX), *y = gobj_check(b, GK_CTX);

	if (x == NULL || y == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!x->live || !y->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_SUCCESS;
}

CUresult
cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
    CUcontext sctx, size_t n)
{
	CUresult rc;

	/* Nothing to copy: done before the contexts are looked at. */
	if ((rc = client_initialized()) != CUDA_SUCCESS || n == 0 ||
	    (rc = peer_ctxs(dctx, sctx)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpyDtoD_v2(dst, src, n);
}

CUresult
cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
    CUcontext sctx, size_t n)
{
	CUresult rc;

	/* Nothing to copy: done before the contexts are looked at. */
	if ((rc = client_initialized()) != CUDA_SUCCESS || n == 0 ||
	    (rc = peer_ctxs(dctx, sctx)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpyDtoD_v2_ptds(dst, src, n);
}

CUresult
cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
    CUcontext sctx, size_t n, CUstream s)
{
	CUresult rc;

	/* Nothing to copy: done before the contexts are looked at. */
	if ((rc = client_initialized()) != CUDA_SUCCESS || n == 0 ||
	    (rc = peer_ctxs(dctx, sctx)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}

CUresult
cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
    CUcontext sctx, size_t n, CUstream s)
{
	CUresult rc;

	/* Nothing to copy: done before the contexts are looked at. */
	if ((rc = client_initialized()) != CUDA_SUCCESS || n == 0 ||
	    (rc = peer_ctxs(dctx, sctx)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpyDtoDAsync_v2_ptsz(dst, src, n, s);
}

/* A CUDA_MEMCPY3D_PEER as a CUDA_MEMCPY3D, its contexts checked. */
static CUresult
peer_desc(const CUDA_MEMCPY3D_PEER *p, CUDA_MEMCPY3D *m)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((p->srcMemoryType != CU_MEMORYTYPE_ARRAY &&
	    p->srcContext != NULL && gobj_check(p->srcContext, GK_CTX) ==
	    NULL) || (p->dstMemoryType != CU_MEMORYTYPE_ARRAY &&
	    p->dstContext != NULL && gobj_check(p->dstContext, GK_CTX) ==
	    NULL))
		return CUDA_ERROR_INVALID_CONTEXT;
	memset(m, 0, sizeof *m);
	m->srcXInBytes = p->srcXInBytes; m->srcY = p->srcY;
	m->srcZ = p->srcZ; m->srcLOD = p->srcLOD;
	m->srcMemoryType = p->srcMemoryType; m->srcHost = p->srcHost;
	m->srcDevice = p->srcDevice; m->srcArray = p->srcArray;
	m->srcPitch = p->srcPitch; m->srcHeight = p->srcHeight;
	m->dstXInBytes = p->dstXInBytes; m->dstY = p->dstY;
	m->dstZ = p->dstZ; m->dstLOD = p->dstLOD;
	m->dstMemoryType = p->dstMemoryType; m->dstHost = p->dstHost;
	m->dstDevice = p->dstDevice; m->dstArray = p->dstArray;
	m->dstPitch = p->dstPitch; m->dstHeight = p->dstHeight;
	m->WidthInBytes = p->WidthInBytes;
	m->Height = p->Height;
	m->Depth = p->Depth;
	return CUDA_SUCCESS;
}

CUresult
cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
	CUDA_MEMCPY3D m;
	CUresult rc;

	if ((rc = peer_desc(p, &m)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpy3D_v2(&m);
}

CUresult
cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p)
{
	CUDA_MEMCPY3D m;
	CUresult rc;

	if ((rc = peer_desc(p, &m)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpy3D_v2_ptds(&m);
}

CUresult
cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
	CUDA_MEMCPY3D m;
	CUresult rc;

	if ((rc = peer_desc(p, &m)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpy3DAsync_v2(&m, s);
}

CUresult
cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
	CUDA_MEMCPY3D m;
	CUresult rc;

	if ((rc = peer_desc(p, &m)) != CUDA_SUCCESS)
		return rc;
	return cuMemcpy3DAsync_v2_ptsz(&m, s);
}
