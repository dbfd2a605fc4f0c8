/*
 * The legacy ABI (the unsuffixed names of CUDA before 3.2): 32-bit device
 * pointers (CUdeviceptr_v1) and unsigned int sizes, forwarded to the
 * current calls.  A device address that does not fit in 32 bits cannot be
 * given back: an allocation there is undone and fails as out of memory,
 * a query fails as an invalid value.  Sizes past 32 bits read as the
 * largest that fits.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "client.h"

static unsigned int
u32_clamp(size_t n)
{
	return n > UINT_MAX ? UINT_MAX : (unsigned int)n;
}

CUresult
cuMemAlloc(CUdeviceptr_v1 *p, unsigned int n)
{
	CUdeviceptr d;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemAlloc_v2(&d, n)) != CUDA_SUCCESS)
		return rc;
	if (d > UINT_MAX) {
		cuMemFree_v2(d);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (CUdeviceptr_v1)d;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocPitch(CUdeviceptr_v1 *p, unsigned int *pitch, unsigned int w,
    unsigned int h, unsigned int el)
{
	CUdeviceptr d;
	size_t pt;
	CUresult rc;

	if (p == NULL || pitch == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemAllocPitch_v2(&d, &pt, w, h, el)) != CUDA_SUCCESS)
		return rc;
	if (d > UINT_MAX || pt > UINT_MAX) {
		cuMemFree_v2(d);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (CUdeviceptr_v1)d;
	*pitch = (unsigned int)pt;
	return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr_v1 p) { return cuMemFree_v2(p); }

CUresult
cuMemGetInfo(unsigned int *freep, unsigned int *totalp)
{
	size_t f, t;
	CUresult rc;

	if ((rc = cuMemGetInfo_v2(freep ? &f : NULL, totalp ? &t : NULL)) !=
	    CUDA_SUCCESS)
		return rc;
	if (freep != NULL)
		*freep = u32_clamp(f);
	if (totalp != NULL)
		*totalp = u32_clamp(t);
	return CUDA_SUCCESS;
}

CUresult
cuMemGetAddressRange(CUdeviceptr_v1 *base, unsigned int *size,
    CUdeviceptr_v1 p)
{
	CUdeviceptr b;
	size_t n;
	CUresult rc;

	if (base == NULL && size == NULL)
		return CUDA_SUCCESS;	/* as _v2: nothing asked */
	if ((rc = cuMemGetAddressRange_v2(&b, &n, p)) != CUDA_SUCCESS)
		return rc;
	if (b > UINT_MAX || n > UINT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (base != NULL)
		*base = (CUdeviceptr_v1)b;
	if (size != NULL)
		*size = (unsigned int)n;
	return CUDA_SUCCESS;
}

CUresult
cuModuleGetGlobal(CUdeviceptr_v1 *p, unsigned int *bytes, CUmodule m,
    const char *name)
{
	CUdeviceptr d;
	size_t n;
	CUresult rc;

	if ((rc = cuModuleGetGlobal_v2(&d, &n, m, name)) != CUDA_SUCCESS)
		return rc;
	if ((p != NULL && d > UINT_MAX) || n > UINT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (p != NULL)
		*p = (CUdeviceptr_v1)d;
	if (bytes != NULL)
		*bytes = (unsigned int)n;
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr_v1 d, const void *s, unsigned int n) { return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr_v1 s, unsigned int n) { return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoD(CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n) { return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 d, const void *s, unsigned int n, CUstream st) { return cuMemcpyHtoDAsync_v2(d, s, n, st); }
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr_v1 s, unsigned int n, CUstream st) { return cuMemcpyDtoHAsync_v2(d, s, n, st); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n, CUstream st) { return cuMemcpyDtoDAsync_v2(d, s, n, st); }
CUresult cuMemsetD8(CUdeviceptr_v1 d, unsigned char v, unsigned int n) { return cuMemsetD8_v2(d, v, n); }
CUresult cuMemsetD16(CUdeviceptr_v1 d, unsigned short v, unsigned int n) { return cuMemsetD16_v2(d, v, n); }
CUresult cuMemsetD32(CUdeviceptr_v1 d, unsigned int v, unsigned int n) { return cuMemsetD32_v2(d, v, n); }
CUresult cuMemsetD2D8(CUdeviceptr_v1 d, unsigned int p, unsigned char v, unsigned int w, unsigned int h) { return cuMemsetD2D8_v2(d, p, v, w, h); }
CUresult cuMemsetD2D16(CUdeviceptr_v1 d, unsigned int p, unsigned short v, unsigned int w, unsigned int h) { return cuMemsetD2D16_v2(d, p, v, w, h); }
CUresult cuMemsetD2D32(CUdeviceptr_v1 d, unsigned int p, unsigned int v, unsigned int w, unsigned int h) { return cuMemsetD2D32_v2(d, p, v, w, h); }

/* Array copies by offset. */
CUresult cuMemcpyHtoA(CUarray a, unsigned int off, const void *s, unsigned int n) { return cuMemcpyHtoA_v2(a, off, s, n); }
CUresult cuMemcpyAtoH(void *d, CUarray a, unsigned int off, unsigned int n) { return cuMemcpyAtoH_v2(d, a, off, n); }
CUresult cuMemcpyHtoAAsync(CUarray a, unsigned int off, const void *s, unsigned int n, CUstream st) { return cuMemcpyHtoAAsync_v2(a, off, s, n, st); }
CUresult cuMemcpyAtoHAsync(void *d, CUarray a, unsigned int off, unsigned int n, CUstream st) { return cuMemcpyAtoHAsync_v2(d, a, off, n, st); }
CUresult cuMemcpyDtoA(CUarray a, unsigned int off, CUdeviceptr_v1 s, unsigned int n) { return cuMemcpyDtoA_v2(a, off, s, n); }
CUresult cuMemcpyAtoD(CUdeviceptr_v1 d, CUarray a, unsigned int off, unsigned int n) { return cuMemcpyAtoD_v2(d, a, off, n); }
CUresult cuMemcpyAtoA(CUarray d, unsigned int doff, CUarray s, unsigned int soff, unsigned int n) { return cuMemcpyAtoA_v2(d, doff, s, soff, n); }

/* 2D and 3D copies: the v1 descriptors widened. */
static void
m2d_widen(const CUDA_MEMCPY2D_v1 *o, CUDA_MEMCPY2D *m)
{
	memset(m, 0, sizeof *m);
	m->srcXInBytes = o->srcXInBytes;
	m->srcY = o->srcY;
	m->srcMemoryType = o->srcMemoryType;
	m->srcHost = o->srcHost;
	m->srcDevice = o->srcDevice;
	m->srcArray = o->srcArray;
	m->srcPitch = o->srcPitch;
	m->dstXInBytes = o->dstXInBytes;
	m->dstY = o->dstY;
	m->dstMemoryType = o->dstMemoryType;
	m->dstHost = o->dstHost;
	m->dstDevice = o->dstDevice;
	m->dstArray = o->dstArray;
	m->dstPitch = o->dstPitch;
	m->WidthInBytes = o->WidthInBytes;
	m->Height = o->Height;
}

static void
m3d_widen(const CUDA_MEMCPY3D_v1 *o, CUDA_MEMCPY3D *m)
{
	memset(m, 0, sizeof *m);
	m->srcXInBytes = o->srcXInBytes;
	m->srcY = o->srcY;
	m->srcZ = o->srcZ;
	m->srcLOD = o->srcLOD;
	m->srcMemoryType = o->srcMemoryType;
	m->srcHost = o->srcHost;
	m->srcDevice = o->srcDevice;
	m->srcArray = o->srcArray;
	m->srcPitch = o->srcPitch;
	m->srcHeight = o->srcHeight;
	m->dstXInBytes = o->dstXInBytes;
	m->dstY = o->dstY;
	m->dstZ = o->dstZ;
	m->dstLOD = o->dstLOD;
	m->dstMemoryType = o->dstMemoryType;
	m->dstHost = o->dstHost;
	m->dstDevice = o->dstDevice;
	m->dstArray = o->dstArray;
	m->dstPitch = o->dstPitch;
	m->dstHeight = o->dstHeight;
	m->WidthInBytes = o->WidthInBytes;
	m->Height = o->Height;
	m->Depth = o->Depth;
}

#define M2D(name, call, args, pass)					\
CUresult name args							\
{									\
	CUDA_MEMCPY2D m;						\
	if (o == NULL)							\
		return CUDA_ERROR_INVALID_VALUE;			\
	m2d_widen(o, &m);						\
	return call pass;						\
}
M2D(cuMemcpy2D, cuMemcpy2D_v2, (const CUDA_MEMCPY2D_v1 *o), (&m))
M2D(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2,
    (const CUDA_MEMCPY2D_v1 *o), (&m))
M2D(cuMemcpy2DAsync, cuMemcpy2DAsync_v2,
    (const CUDA_MEMCPY2D_v1 *o, CUstream s), (&m, s))

#define M3D(name, call, args, pass)					\
CUresult name args							\
{									\
	CUDA_MEMCPY3D m;						\
	if (o == NULL)							\
		return CUDA_ERROR_INVALID_VALUE;			\
	m3d_widen(o, &m);						\
	return call pass;						\
}
M3D(cuMemcpy3D, cuMemcpy3D_v2, (const CUDA_MEMCPY3D_v1 *o), (&m))
M3D(cuMemcpy3DAsync, cuMemcpy3DAsync_v2,
    (const CUDA_MEMCPY3D_v1 *o, CUstream s), (&m, s))

/* Array descriptors of unsigned int extents. */
CUresult
cuArrayCreate(CUarray *pa, const CUDA_ARRAY_DESCRIPTOR_v1 *o)
{
	CUDA_ARRAY_DESCRIPTOR d;

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d.Width = o->Width;
	d.Height = o->Height;
	d.Format = o->Format;
	d.NumChannels = o->NumChannels;
	return cuArrayCreate_v2(pa, &d);
}

CUresult
cuArray3DCreate(CUarray *pa, const CUDA_ARRAY3D_DESCRIPTOR_v1 *o)
{
	CUDA_ARRAY3D_DESCRIPTOR d;

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&d, 0, sizeof d);
	d.Width = o->Width;
	d.Height = o->Height;
	d.Depth = o->Depth;
	d.Format = o->Format;
	d.NumChannels = o->NumChannels;
	d.Flags = o->Flags;
	return cuArray3DCreate_v2(pa, &d);
}

CUresult
cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1 *o, CUarray a)
{
	CUDA_ARRAY_DESCRIPTOR d;
	CUresult rc;

	/* _v2 checks the array before o. */
	if ((rc = cuArrayGetDescriptor_v2(o != NULL ? &d : NULL, a)) !=
	    CUDA_SUCCESS)
		return rc;
	o->Width = u32_clamp(d.Width);
	o->Height = u32_clamp(d.Height);
	o->Format = d.Format;
	o->NumChannels = d.NumChannels;
	return CUDA_SUCCESS;
}

CUresult
cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1 *o, CUarray a)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUresult rc;

	/* _v2 checks the array before o. */
	if ((rc = cuArray3DGetDescriptor_v2(o != NULL ? &d : NULL, a)) !=
	    CUDA_SUCCESS)
		return rc;
	o->Width = u32_clamp(d.Width);
	o->Height = u32_clamp(d.Height);
	o->Depth = u32_clamp(d.Depth);
	o->Format = d.Format;
	o->NumChannels = d.NumChannels;
	o->Flags = d.Flags;
	return CUDA_SUCCESS;
}
