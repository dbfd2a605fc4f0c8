/*
 * Arrays, mipmapped arrays, texture and surface objects.  Arrays are
 * client structs known to the server by their address (client.h); their
 * descriptors stay here, so that descriptor queries and the bounds of
 * copies (copy.c) need no round trip.  Texture and surface objects are
 * the server's driver's handles, which kernels receive as they are; the
 * server knows each by the address of its descriptors here, kept for the
 * Get calls.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* Bytes of an element of a format with n channels; 0: the driver's own. */
static unsigned
array_el(CUarray_format f, unsigned n)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:		return n;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:			return 2 * n;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:		return 4 * n;
	case CU_AD_FORMAT_UNORM_INT8X1:
	case CU_AD_FORMAT_SNORM_INT8X1:		return 1;
	case CU_AD_FORMAT_UNORM_INT8X2:
	case CU_AD_FORMAT_SNORM_INT8X2:
	case CU_AD_FORMAT_UNORM_INT16X1:
	case CU_AD_FORMAT_SNORM_INT16X1:	return 2;
	case CU_AD_FORMAT_UNORM_INT8X4:
	case CU_AD_FORMAT_SNORM_INT8X4:
	case CU_AD_FORMAT_UNORM_INT16X2:
	case CU_AD_FORMAT_SNORM_INT16X2:	return 4;
	case CU_AD_FORMAT_UNORM_INT16X4:
	case CU_AD_FORMAT_SNORM_INT16X4:	return 8;
	default:				return 0;
	}
}

unsigned
array_elsize(CUarray_format f, unsigned n)
{
	return array_el(f, n);
}

void
array_extent(const struct garray *a, size_t *wbytes, size_t *rows,
    size_t *slices)
{
	*wbytes = a->d.Width * a->el;
	*rows = a->d.Height ? a->d.Height : 1;
	*slices = a->d.Depth ? a->d.Depth : 1;
}

/*
 * Destroyed arrays' structs are kept for the next arrays, never freed: a
 * program's stale handle then reads as none of ours (or as a newer
 * array, as a driver's recycled handle would), not freed memory.
 */
static pthread_mutex_t array_mu = PTHREAD_MUTEX_INITIALIZER;
static struct garray *array_spare;
static struct gmipmap *mipmap_spare;

static struct garray *
array_alloc(void)
{
	struct garray *a;

	pthread_mutex_lock(&array_mu);
	if ((a = array_spare) != NULL)
		array_spare = (struct garray *)(void *)a->owner;
	pthread_mutex_unlock(&array_mu);
	if (a == NULL)
		return calloc(1, sizeof *a);
	memset(a, 0, sizeof *a);
	return a;
}

static void
array_free(struct garray *a)
{
	__atomic_store_n(&a->o.magic, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&array_mu);
	a->owner = (struct gmipmap *)(void *)array_spare;
	array_spare = a;
	pthread_mutex_unlock(&array_mu);
}

/* The server's array (levels 0) or mipmapped array for obj, id its own. */
static CUresult
array_make(struct gctx *c, void *obj, const CUDA_ARRAY3D_DESCRIPTOR *d,
    unsigned levels)
{
	struct rpc_val in[9], out[1];
	void *keep;
	CUresult rc;

	in[0].u = gobj_id(c);
	in[1].u = gobj_id(obj);
	in[2].u = d->Width;
	in[3].u = d->Height;
	in[4].u = d->Depth;
	in[5].u = (uint64_t)d->Format;
	in[6].u = d->NumChannels;
	in[7].u = d->Flags;
	in[8].u = levels;
	rc = remote_call(R_ARRAY_CREATE, in, out, &keep);
	free(keep);
	return rc;
}

CUresult
cuArray3DCreate_v2(CUarray *pa, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	struct garray *a;
	struct gctx *c;
	CUresult rc;

	if (pa == NULL || d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((a = array_alloc()) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->o.kind = GK_ARRAY;
	a->ctx = c;
	a->d = *d;
	a->el = array_el(d->Format, d->NumChannels);
	if ((rc = array_make(c, a, d, 0)) != CUDA_SUCCESS) {
		array_free(a);
		return rc;
	}
	gobj_publish(a);
	*pa = (CUarray)a;
	return CUDA_SUCCESS;
}

CUresult
cuArrayCreate_v2(CUarray *pa, const CUDA_ARRAY_DESCRIPTOR *d)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;

	if (pa == NULL || d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&d3, 0, sizeof d3);
	d3.Width = d->Width;
	d3.Height = d->Height;
	d3.Format = d->Format;
	d3.NumChannels = d->NumChannels;
	return cuArray3DCreate_v2(pa, &d3);
}

CUresult
cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray h)
{
	struct garray *a = gobj_check(h, GK_ARRAY);

	if (a == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*d = a->d;
	return CUDA_SUCCESS;
}

CUresult
cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d, CUarray h)
{
	struct garray *a = gobj_check(h, GK_ARRAY);

	if (a == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d->Width = a->d.Width;
	d->Height = a->d.Height;
	d->Format = a->d.Format;
	d->NumChannels = a->d.NumChannels;
	return CUDA_SUCCESS;
}

CUresult
cuArrayDestroy(CUarray h)
{
	struct garray *a = gobj_check(h, GK_ARRAY);
	struct rpc_val in[2], out[1];
	void *keep;
	CUresult rc;

	/* A level lives and dies with its mipmapped array. */
	if (a == NULL || a->owner != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(a);
	in[1].u = 0;
	rc = remote_call(R_ARRAY_DESTROY, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_HANDLE) {
		/* The server has none such left: neither has the program. */
		array_free(a);
	}
	return rc;
}

/* The requirements of an array or mipmapped array (made for deferred
 * mapping, which the server refuses to make: so the driver's error). */
static CUresult
array_memreq(CUDA_ARRAY_MEMORY_REQUIREMENTS *r, void *obj, int mm,
    CUdevice dev)
{
	struct rpc_val in[3], out[2];
	void *keep;
	CUresult rc;

	if (r == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (obj == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(obj);
	in[1].u = (uint64_t)mm;
	in[2].u = (uint64_t)(uint32_t)dev;
	rc = remote_call(R_ARRAY_MEMREQ, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS) {
		memset(r, 0, sizeof *r);
		r->size = out[0].u;
		r->alignment = out[1].u;
	}
	return rc;
}

CUresult
cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *r, CUarray a,
    CUdevice dev)
{
	return array_memreq(r, gobj_check(a, GK_ARRAY), 0, dev);
}

CUresult
cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *r,
    CUmipmappedArray m, CUdevice dev)
{
	return array_memreq(r, gobj_check(m, GK_MIPMAP), 1, dev);
}

/*
 * Planes exist only in multi-planar formats (NV12 & co.), which only the
 * server's driver lays out: not remoted.  Any other array has none.
 */
CUresult
cuArrayGetPlane(CUarray *pa, CUarray h, unsigned plane)
{
	struct garray *a = gobj_check(h, GK_ARRAY);

	(void)plane;
	if (a == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (pa == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return a->el != 0 ? CUDA_ERROR_INVALID_VALUE :
	    CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- mipmapped arrays ---------------------------------------------------- */

/* 1 + floor(log2) of the largest extent of d. */
static unsigned
mipmap_levels_max(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	size_t m = d->Width > d->Height ? d->Width : d->Height;
	unsigned n = 1;

	if (!(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) &&
	    d->Depth > m)
		m = d->Depth;
	while (m > 1) {
		m >>= 1;
		n++;
	}
	return n;
}

CUresult
cuMipmappedArrayCreate(CUmipmappedArray *pm,
    const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
	struct gmipmap *m;
	struct gctx *c;
	CUresult rc;

	if (pm == NULL || d == NULL || levels == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	/* More levels than the largest extent halves into: as many as it
	 * does, as the driver clamps them (a layered or cubemap array's
	 * depth counts its layers, not an extent). */
	if (levels > mipmap_levels_max(d))
		levels = mipmap_levels_max(d);
	pthread_mutex_lock(&array_mu);
	if ((m = mipmap_spare) != NULL)
		mipmap_spare = (struct gmipmap *)(void *)m->level;
	pthread_mutex_unlock(&array_mu);
	if (m != NULL)
		memset(m, 0, sizeof *m);
	else if ((m = calloc(1, sizeof *m)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((m->level = calloc(levels, sizeof *m->level)) == NULL) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->o.kind = GK_MIPMAP;
	m->ctx = c;
	m->d = *d;
	m->el = array_el(d->Format, d->NumChannels);
	m->nlevels = levels;
	if ((rc = array_make(c, m, d, levels)) != CUDA_SUCCESS) {
		free(m->level);
		free(m);	/* never published: no handle names it */
		return rc;
	}
	gobj_publish(m);
	*pm = (CUmipmappedArray)m;
	return CUDA_SUCCESS;
}

static pthread_mutex_t level_mu = PTHREAD_MUTEX_INITIALIZER;

/* The level's array, the same handle each time, as the driver's. */
CUresult
cuMipmappedArrayGetLevel(CUarray *pa, CUmipmappedArray h, unsigned level)
{
	struct gmipmap *m = gobj_check(h, GK_MIPMAP);
	struct rpc_val in[3], out[3];
	struct garray *a;
	void *keep;
	CUresult rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (pa == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (level >= m->nlevels)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&level_mu);
	if ((a = m->level[level]) != NULL) {
		pthread_mutex_unlock(&level_mu);
		*pa = (CUarray)a;
		return CUDA_SUCCESS;
	}
	if ((a = array_alloc()) == NULL) {
		pthread_mutex_unlock(&level_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->o.kind = GK_ARRAY;
	a->ctx = m->ctx;
	a->owner = m;
	in[0].u = gobj_id(m);
	in[1].u = level;
	in[2].u = gobj_id(a);
	rc = remote_call(R_MIPMAP_LEVEL, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_unlock(&level_mu);
		array_free(a);
		return rc;
	}
	a->d = m->d;
	a->d.Width = out[0].u;
	a->d.Height = out[1].u;
	a->d.Depth = out[2].u;
	a->el = m->el;
	gobj_publish(a);
	m->level[level] = a;
	pthread_mutex_unlock(&level_mu);
	*pa = (CUarray)a;
	return CUDA_SUCCESS;
}

CUresult
cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	struct gmipmap *m = gobj_check(h, GK_MIPMAP);
	struct rpc_val in[2], out[1];
	void *keep;
	unsigned i;
	CUresult rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(m);
	in[1].u = 1;
	rc = remote_call(R_ARRAY_DESTROY, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_HANDLE)
		return rc;
	for (i = 0; i < m->nlevels; i++)
		if (m->level[i] != NULL)
			array_free(m->level[i]);
	free(m->level);
	/* Kept for the next, as arrays are. */
	__atomic_store_n(&m->o.magic, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&array_mu);
	m->level = (struct garray **)(void *)mipmap_spare;
	mipmap_spare = m;
	pthread_mutex_unlock(&array_mu);
	return rc;
}

/* ---- texture and surface objects ----------------------------------------- */

/* One object's descriptors, for the Get calls. */
struct gtex {
	uint64_t	 h;
	int		 surf, hasview;
	CUDA_RESOURCE_DESC r;
	CUDA_TEXTURE_DESC t;
	CUDA_RESOURCE_VIEW_DESC v;
	struct gtex	*next;
};

static pthread_mutex_t tex_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gtex *tex_list;

static uint32_t
f32bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* The resource descriptor on the wire (rpc.h), its handles checked. */
static CUresult
tex_res(const CUDA_RESOURCE_DESC *d, struct rpc_res *r)
{
	memset(r, 0, sizeof *r);
	r->type = (uint32_t)d->resType;
	r->flags = d->flags;
	switch (d->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		if (gobj_check(d->res.array.hArray, GK_ARRAY) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		r->h = gobj_id(d->res.array.hArray);
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if (gobj_check(d->res.mipmap.hMipmappedArray, GK_MIPMAP) ==
		    NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		r->h = gobj_id(d->res.mipmap.hMipmappedArray);
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		r->h = d->res.linear.devPtr;
		r->format = (uint32_t)d->res.linear.format;
		r->channels = d->res.linear.numChannels;
		r->width = d->res.linear.sizeInBytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		r->h = d->res.pitch2D.devPtr;
		r->format = (uint32_t)d->res.pitch2D.format;
		r->channels = d->res.pitch2D.numChannels;
		r->width = d->res.pitch2D.width;
		r->height = d->res.pitch2D.height;
		r->pitch = d->res.pitch2D.pitchInBytes;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult
tex_create(uint64_t *ph, int surf, const CUDA_RESOURCE_DESC *rd,
    const CUDA_TEXTURE_DESC *td, const CUDA_RESOURCE_VIEW_DESC *vd)
{
	struct rpc_val in[6], out[1];
	struct pw pr, pt, pv;
	struct rpc_res r;
	struct rpc_texd t;
	struct rpc_view v;
	struct gtex *x;
	struct gctx *c;
	void *keep;
	int i;
	CUresult rc;

	if (ph == NULL || rd == NULL || (!surf && td == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = tex_res(rd, &r)) != CUDA_SUCCESS)
		return rc;
	if ((x = calloc(1, sizeof *x)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pw_init(&pr);
	pw_init(&pt);
	pw_init(&pv);
	rpc_res_enc(&pr, &r);
	if (!surf) {
		memset(&t, 0, sizeof t);
		for (i = 0; i < 3; i++)
			t.addr[i] = (uint32_t)td->addressMode[i];
		t.filter = (uint32_t)td->filterMode;
		t.flags = td->flags;
		t.aniso = td->maxAnisotropy;
		t.mipfilter = (uint32_t)td->mipmapFilterMode;
		t.bias = f32bits(td->mipmapLevelBias);
		t.minclamp = f32bits(td->minMipmapLevelClamp);
		t.maxclamp = f32bits(td->maxMipmapLevelClamp);
		for (i = 0; i < 4; i++)
			t.border[i] = f32bits(td->borderColor[i]);
		rpc_texd_enc(&pt, &t);
		if (vd != NULL) {
			v.format = (uint32_t)vd->format;
			v.width = vd->width;
			v.height = vd->height;
			v.depth = vd->depth;
			v.firstmip = vd->firstMipmapLevel;
			v.lastmip = vd->lastMipmapLevel;
			v.firstlayer = vd->firstLayer;
			v.lastlayer = vd->lastLayer;
			rpc_view_enc(&pv, &v);
		}
	}
	/* Known to the server by the address of its descriptors here. */
	in[0].u = gobj_id(c);
	in[1].u = (uint64_t)(uintptr_t)x;
	in[2].u = (uint64_t)surf;
	in[3].p = pr.p;
	in[3].len = (uint32_t)pr.len;
	in[4].p = pt.p;
	in[4].len = (uint32_t)pt.len;
	in[5].p = pv.p;
	in[5].len = (uint32_t)pv.len;
	if (pr.bad || pt.bad || pv.bad)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		rc = remote_call(R_TEX_CREATE, in, out, &keep), free(keep);
	pw_free(&pr);
	pw_free(&pt);
	pw_free(&pv);
	if (rc != CUDA_SUCCESS) {
		free(x);
		return rc;
	}
	x->h = out[0].u;
	x->surf = surf;
	x->r = *rd;
	if (!surf)
		x->t = *td;
	if (vd != NULL && !surf) {
		x->v = *vd;
		x->hasview = 1;
	}
	pthread_mutex_lock(&tex_mu);
	x->next = tex_list;
	tex_list = x;
	pthread_mutex_unlock(&tex_mu);
	*ph = x->h;
	return CUDA_SUCCESS;
}

/* A copy of the object's descriptors: 0, or -1 if it is none of ours. */
static int
tex_find(uint64_t h, int surf, struct gtex *out)
{
	struct gtex *x;
	int found = -1;

	pthread_mutex_lock(&tex_mu);
	for (x = tex_list; x != NULL; x = x->next)
		if (x->h == h && x->surf == surf) {
			*out = *x;
			found = 0;
			break;
		}
	pthread_mutex_unlock(&tex_mu);
	return found;
}

static CUresult
tex_destroy(uint64_t h, int surf)
{
	struct rpc_val in[2], out[1];
	struct gtex **pp, *x = NULL;
	void *keep;
	CUresult rc;

	/* Object 0 is none: destroyed as free(NULL) frees (the driver). */
	if ((rc = client_initialized()) != CUDA_SUCCESS || h == 0)
		return rc;
	pthread_mutex_lock(&tex_mu);
	for (pp = &tex_list; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->h == h && (*pp)->surf == surf) {
			x = *pp;
			*pp = x->next;
			break;
		}
	pthread_mutex_unlock(&tex_mu);
	if (x == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* Freed once the call is sent: its id may name a new one after. */
	in[0].u = (uint64_t)(uintptr_t)x;
	in[1].u = (uint64_t)surf;
	rc = remote_call(R_TEX_DESTROY, in, out, &keep);
	free(keep);
	free(x);
	return rc;
}

CUresult
cuTexObjectCreate(CUtexObject *p, const CUDA_RESOURCE_DESC *r,
    const CUDA_TEXTURE_DESC *t, const CUDA_RESOURCE_VIEW_DESC *v)
{
	uint64_t h;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = tex_create(&h, 0, r, t, v)) == CUDA_SUCCESS)
		*p = h;
	return rc;
}

CUresult
cuSurfObjectCreate(CUsurfObject *p, const CUDA_RESOURCE_DESC *r)
{
	uint64_t h;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = tex_create(&h, 1, r, NULL, NULL)) == CUDA_SUCCESS)
		*p = h;
	return rc;
}

CUresult cuTexObjectDestroy(CUtexObject h) { return tex_destroy(h, 0); }
CUresult cuSurfObjectDestroy(CUsurfObject h) { return tex_destroy(h, 1); }

CUresult
cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *d, CUtexObject h)
{
	struct gtex x;

	if (d == NULL || tex_find(h, 0, &x) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	*d = x.r;
	return CUDA_SUCCESS;
}

CUresult
cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *d, CUsurfObject h)
{
	struct gtex x;

	if (d == NULL || tex_find(h, 1, &x) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	*d = x.r;
	return CUDA_SUCCESS;
}

CUresult
cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *d, CUtexObject h)
{
	struct gtex x;

	if (d == NULL || tex_find(h, 0, &x) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	*d = x.t;
	return CUDA_SUCCESS;
}

CUresult
cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *d, CUtexObject h)
{
	struct gtex x;

	if (d == NULL || tex_find(h, 0, &x) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/* Made without a view: the real driver (580) answers 0 too. */
	if (x.hasview)
		*d = x.v;
	else
		memset(d, 0, sizeof *d);
	return CUDA_SUCCESS;
}
