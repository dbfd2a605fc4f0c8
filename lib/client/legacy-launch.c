/*
 * The launch API of CUDA 1 and 2, deprecated since 3.2 and still in the
 * driver: a function keeps a block shape, a dynamic shared memory size
 * and a parameter buffer that cuParamSet* fill at offsets the program
 * chooses; cuLaunch, cuLaunchGrid and cuLaunchGridAsync launch it with
 * them.  All of it is the function's state on the host, so it is kept
 * here, and the launch is cuLaunchKernel's with the buffer passed as
 * CU_LAUNCH_PARAM_BUFFER_POINTER, the way the driver's own is.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "hooks.h"

#define LEGACY_PARAM_MAX	4096	/* the buffer of CUDA 1's launches */

struct glegacy {
	int		 bx, by, bz;	/* 0 until cuFuncSetBlockShape */
	unsigned	 shmem;
	unsigned	 size;		/* cuParamSetSize */
	unsigned char	 buf[LEGACY_PARAM_MAX];
};

struct glegacy *
legacy_of(struct gfunc *f)
{
	struct glegacy *l, *none = NULL;

	if ((l = __atomic_load_n(&f->legacy, __ATOMIC_ACQUIRE)) != NULL)
		return l;
	if ((l = calloc(1, sizeof *l)) == NULL)
		return NULL;
	if (!__atomic_compare_exchange_n(&f->legacy, &none, l, 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(l);
		return none;
	}
	return l;
}

/* The function's state, or why there is none. */
static CUresult
legacy_get(CUfunction h, struct glegacy **out)
{
	struct gfunc *f;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((f = gobj_check(h, GK_FUNC)) == NULL &&
	    (f = gobj_check(h, GK_KERNEL)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((*out = legacy_of(f)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuFuncSetBlockShape(CUfunction h, int x, int y, int z)
{
	struct glegacy *l;
	CUresult rc;

	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	if (x <= 0 || y <= 0 || z <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	l->bx = x;
	l->by = y;
	l->bz = z;
	return CUDA_SUCCESS;
}

CUresult
cuFuncSetSharedSize(CUfunction h, unsigned int bytes)
{
	struct glegacy *l;
	CUresult rc;

	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	l->shmem = bytes;
	return CUDA_SUCCESS;
}

CUresult
cuParamSetSize(CUfunction h, unsigned int bytes)
{
	struct glegacy *l;
	CUresult rc;

	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	if (bytes > LEGACY_PARAM_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	l->size = bytes;
	return CUDA_SUCCESS;
}

/* n bytes of p at offset off of the buffer. */
static CUresult
legacy_set(CUfunction h, int off, const void *p, unsigned n)
{
	struct glegacy *l;
	CUresult rc;

	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	if (off < 0 || p == NULL || n > LEGACY_PARAM_MAX ||
	    (unsigned)off > LEGACY_PARAM_MAX - n)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(l->buf + off, p, n);
	return CUDA_SUCCESS;
}

CUresult
cuParamSeti(CUfunction h, int off, unsigned int v)
{
	return legacy_set(h, off, &v, sizeof v);
}

CUresult
cuParamSetf(CUfunction h, int off, float v)
{
	return legacy_set(h, off, &v, sizeof v);
}

CUresult
cuParamSetv(CUfunction h, int off, void *p, unsigned int n)
{
	return legacy_set(h, off, p, n);
}

/*
 * A reference's binding to a launch's texture unit is not remoted: a
 * module's references (texref.c) are bound to what they read by name.
 */
CUresult
cuParamSetTexRef(CUfunction h, int texunit, CUtexref ref)
{
	struct glegacy *l;
	CUresult rc;

	(void)texunit;
	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	/* No reference: the driver 580 answers an invalid handle. */
	if (ref == NULL || gobj_check(ref, GK_TEXREF) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult
legacy_launch(CUfunction h, int w, int ht, CUstream s)
{
	struct glegacy *l;
	size_t size;
	void *extra[5];
	CUresult rc;

	if ((rc = legacy_get(h, &l)) != CUDA_SUCCESS)
		return rc;
	if (w <= 0 || ht <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	size = l->size;
	extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	extra[1] = l->buf;
	extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	extra[3] = &size;
	extra[4] = CU_LAUNCH_PARAM_END;
	/* A shape never set is 0 threads: cuLaunchKernel's error. */
	return cuLaunchKernel(h, (unsigned)w, (unsigned)ht, 1, (unsigned)l->bx,
	    (unsigned)l->by, (unsigned)l->bz, l->shmem, s, NULL, extra);
}

CUresult
cuLaunch(CUfunction h)
{
	return legacy_launch(h, 1, 1, NULL);
}

CUresult
cuLaunchGrid(CUfunction h, int w, int ht)
{
	return legacy_launch(h, w, ht, NULL);
}

CUresult
cuLaunchGridAsync(CUfunction h, int w, int ht, CUstream s)
{
	return legacy_launch(h, w, ht, s);
}

/*
 * Cooperative launches on several devices at once (deprecated in CUDA
 * 11.3): each entry's launch is cuLaunchCooperativeKernel's on its
 * stream.  Unless the flags say otherwise, the driver makes every launch
 * wait for the work before it in all the entries' streams, and the work
 * after it in any of them wait for all the launches; the host waits for
 * those streams here, before and after, which keeps both promises.
 */
CUresult
cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *p,
    unsigned int n, unsigned int flags)
{
	unsigned i, j;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (p == NULL || n == 0 || n > (unsigned)client_device_count() ||
	    (flags & ~(unsigned)(CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC
	    | CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* One launch per device: a stream's context names its device. */
	for (i = 0; i < n; i++) {
		struct gstream *a = gobj_check(p[i].hStream, GK_STREAM);

		if (a == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		for (j = 0; j < i; j++) {
			struct gstream *b = gobj_check(p[j].hStream,
			    GK_STREAM);

			if (b->ctx->device == a->ctx->device)
				return CUDA_ERROR_INVALID_DEVICE;
		}
	}
	if (n > 1 && !(flags &
	    CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC))
		for (i = 0; i < n; i++)
			if ((rc = cuStreamSynchronize(p[i].hStream)) !=
			    CUDA_SUCCESS)
				return rc;
	for (i = 0; i < n; i++)
		if ((rc = cuLaunchCooperativeKernel(p[i].function,
		    p[i].gridDimX, p[i].gridDimY, p[i].gridDimZ,
		    p[i].blockDimX, p[i].blockDimY, p[i].blockDimZ,
		    p[i].sharedMemBytes, p[i].hStream, p[i].kernelParams)) !=
		    CUDA_SUCCESS)
			return rc;
	if (n > 1 && !(flags &
	    CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC))
		for (i = 0; i < n; i++)
			if ((rc = cuStreamSynchronize(p[i].hStream)) !=
			    CUDA_SUCCESS)
				return rc;
	return CUDA_SUCCESS;
}
