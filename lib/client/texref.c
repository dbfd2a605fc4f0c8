/*
 * Texture and surface references (the legacy, module-scoped binding of
 * textures), and sparse arrays.  A reference's state lives on the server,
 * in the driver's CUtexref; a reference here is a client struct, known
 * to the server by its address, that names it.  A module's references
 * are looked up once per name and go with the module, as the driver's
 * do.  Setters that give nothing back go one-way, once their arguments
 * pass the checks the driver documents; getters ask the server, which
 * holds the driver's answer (a default the driver chose, a value it
 * rounded).
 *
 * Sparse arrays' properties and cuMemMapArrayAsync are round trips: the
 * memory handles mapped onto an array's tiles are the client's VMM
 * handles (vmm.c), whose addresses are their ids on the server.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "io.h"

struct gtexref {
	struct gobj	 o;		/* GK_TEXREF or GK_SURFREF */
	const void	*mod;		/* its module; NULL: cuTexRefCreate's */
	char		*name;
	struct gtexref	*next;		/* live ones, or spares */
};

/*
 * References gone (their module unloaded, or destroyed) are kept for the
 * next ones, never freed: a stale handle then reads as none of ours, as
 * arrays' do (array.c).
 */
static pthread_mutex_t tref_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gtexref *tref_list, *tref_spare;

static void
tref_unlink(struct gtexref *t)
{
	struct gtexref **pp;

	for (pp = &tref_list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	__atomic_store_n(&t->o.magic, 0, __ATOMIC_RELEASE);
	free(t->name);
	t->name = NULL;
	t->next = tref_spare;
	tref_spare = t;
}

/* The module's references go with it (module.c calls this). */
void
texref_forget(const void *mod)
{
	struct gtexref *t, *next;

	pthread_mutex_lock(&tref_mu);
	for (t = tref_list; t != NULL; t = next) {
		next = t->next;
		if (t->mod == mod)
			tref_unlink(t);
	}
	pthread_mutex_unlock(&tref_mu);
}

/* A new reference on the server: known by id from then on. */
static CUresult
tref_new(struct gctx *c, struct gtexref *t, uint64_t mod, int surf,
    const char *name)
{
	struct rpc_val in[5], out[1];
	void *keep;
	CUresult rc;

	in[0].u = gobj_id(c);
	in[1].u = gobj_id(t);
	in[2].u = mod;
	in[3].u = (uint64_t)surf;
	in[4].p = name;
	in[4].len = (uint32_t)strlen(name);
	rc = remote_call(R_TEXREF_NEW, in, out, &keep);
	free(keep);
	return rc;
}

static struct gtexref *
tref_alloc(void)
{
	struct gtexref *t;

	if ((t = tref_spare) != NULL) {
		tref_spare = t->next;
		memset(t, 0, sizeof *t);
		return t;
	}
	return calloc(1, sizeof *t);
}

/*
 * A module's reference by name: the same handle each time, as the
 * driver's.  The server's driver finds the name, or says why not.
 */
CUresult
texref_module(void **out, void *h, const char *name, int surf)
{
	struct gmodule *m;
	struct gtexref *t;
	int kind = surf ? GK_SURFREF : GK_TEXREF;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	/* The module before the arguments, as the driver checks. */
	if ((m = gobj_check(h, GK_MODULE)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (out == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (strlen(name) > RPC_STRING_MAX)
		return CUDA_ERROR_NOT_FOUND;
	/* One lookup at a time: two threads get the same handle. */
	pthread_mutex_lock(&tref_mu);
	for (t = tref_list; t != NULL; t = t->next)
		if (t->mod == m && (int)t->o.kind == kind &&
		    strcmp(t->name, name) == 0) {
			pthread_mutex_unlock(&tref_mu);
			*out = t;
			return CUDA_SUCCESS;
		}
	if ((t = tref_alloc()) == NULL || (t->name = strdup(name)) == NULL) {
		if (t != NULL) {
			t->next = tref_spare;
			tref_spare = t;
		}
		pthread_mutex_unlock(&tref_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	t->o.kind = (uint32_t)kind;
	t->mod = m;
	/* A library's module is the library's at the server. */
	if ((rc = tref_new(m->ctx, t, gobj_id(m->lib != NULL ? m->lib : m),
	    surf, name)) !=
	    CUDA_SUCCESS) {
		free(t->name);
		t->name = NULL;
		t->next = tref_spare;
		tref_spare = t;
		pthread_mutex_unlock(&tref_mu);
		return rc;
	}
	t->next = tref_list;
	tref_list = t;
	gobj_publish(t);
	pthread_mutex_unlock(&tref_mu);
	*out = t;
	return CUDA_SUCCESS;
}

CUresult
cuTexRefCreate(CUtexref *out)
{
	struct gtexref *t;
	struct gctx *c;
	CUresult rc;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&tref_mu);
	if ((t = tref_alloc()) == NULL) {
		pthread_mutex_unlock(&tref_mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	t->o.kind = GK_TEXREF;
	if ((rc = tref_new(c, t, 0, 0, "")) != CUDA_SUCCESS) {
		t->next = tref_spare;
		tref_spare = t;
		pthread_mutex_unlock(&tref_mu);
		return rc;
	}
	t->next = tref_list;
	tref_list = t;
	gobj_publish(t);
	pthread_mutex_unlock(&tref_mu);
	*out = (CUtexref)t;
	return CUDA_SUCCESS;
}

/* Only a created reference is destroyed; a module's goes with it. */
CUresult
cuTexRefDestroy(CUtexref h)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	struct rpc_val in[1], out[1];
	void *keep;
	CUresult rc;

	if (t == NULL || t->mod != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	in[0].u = gobj_id(t);
	rc = remote_call(R_TEXREF_DESTROY, in, out, &keep);
	free(keep);
	pthread_mutex_lock(&tref_mu);
	tref_unlink(t);
	pthread_mutex_unlock(&tref_mu);
	return rc;
}

/* ---- setters and getters ------------------------------------------------ */

/* A setter whose arguments passed: one-way (no stream's work). */
static CUresult
tref_set(const void *t, unsigned op, unsigned idx, uint64_t a, uint64_t b,
    const void *data, uint32_t len)
{
	struct rpc_val in[6];

	in[0].u = gobj_id(t);
	in[1].u = op;
	in[2].u = idx;
	in[3].u = a;
	in[4].u = b;
	in[5].p = data;
	in[5].len = len;
	return rpost(R_TEXREF_SET, in, RP_NOWORK);
}

/* A getter: a and b, and data's len bytes if data is not NULL. */
static CUresult
tref_get(const void *t, unsigned op, unsigned idx, uint64_t *a, uint64_t *b,
    void *data, uint32_t len)
{
	struct rpc_val in[3], out[3];
	void *keep;
	CUresult rc;

	in[0].u = gobj_id(t);
	in[1].u = op;
	in[2].u = idx;
	rc = remote_call(R_TEXREF_GET, in, out, &keep);
	if (rc == CUDA_SUCCESS) {
		if (a != NULL)
			*a = out[0].u;
		if (b != NULL)
			*b = out[1].u;
		if (data != NULL) {
			if (out[2].len == len)
				memcpy(data, out[2].p, len);
			else
				rc = CUDA_ERROR_INVALID_VALUE;
		}
	}
	free(keep);
	return rc;
}

static uint32_t
f32bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

static float
bitsf32(uint64_t u)
{
	uint32_t v = (uint32_t)u;
	float f;

	memcpy(&f, &v, sizeof f);
	return f;
}

/* A format with n channels that an array may have. */
static int
tref_format_ok(CUarray_format f, int n)
{
	if (n != 1 && n != 2 && n != 4)
		return 0;
	return array_elsize(f, (unsigned)n) != 0;
}

CUresult
cuTexRefSetArray(CUtexref h, CUarray a, unsigned int flags)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL || gobj_check(a, GK_ARRAY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_TRSA_OVERRIDE_FORMAT)
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_ARRAY, flags, gobj_id(a), 0, NULL, 0);
}

CUresult
cuTexRefSetMipmappedArray(CUtexref h, CUmipmappedArray m, unsigned int flags)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL || gobj_check(m, GK_MIPMAP) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_TRSA_OVERRIDE_FORMAT)
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_MIPMAP, flags, gobj_id(m), 0, NULL, 0);
}

CUresult
cuTexRefSetAddress_v2(size_t *off, CUtexref h, CUdeviceptr p, size_t bytes)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	struct rpc_val in[6], out[1];
	void *keep;
	CUresult rc;

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The byte offset comes back: a round trip. */
	in[0].u = gobj_id(t);
	in[1].u = TREF_ADDRESS;
	in[2].u = 0;
	in[3].u = p;
	in[4].u = bytes;
	in[5].p = NULL;
	in[5].len = 0;
	rc = remote_call(R_TEXREF_SET, in, out, &keep);
	free(keep);
	if (rc == CUDA_SUCCESS && off != NULL)
		*off = (size_t)out[0].u;
	return rc;
}

CUresult
cuTexRefSetAddress(unsigned int *off, CUtexref h, CUdeviceptr_v1 p,
    unsigned int bytes)
{
	size_t o;
	CUresult rc;

	if ((rc = cuTexRefSetAddress_v2(&o, h, p, bytes)) == CUDA_SUCCESS &&
	    off != NULL)
		*off = (unsigned int)o;
	return rc;
}

CUresult
cuTexRefSetAddress2D_v3(CUtexref h, const CUDA_ARRAY_DESCRIPTOR *d,
    CUdeviceptr p, size_t pitch)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	uint8_t buf[RPC_TREF2D_LEN];
	struct pw w;
	CUresult rc;

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (d == NULL || !tref_format_ok(d->Format, (int)d->NumChannels))
		return CUDA_ERROR_INVALID_VALUE;
	pw_init(&w);
	pw_u64(&w, d->Width);
	pw_u64(&w, d->Height);
	pw_u32(&w, (uint32_t)d->Format);
	pw_u32(&w, d->NumChannels);
	if (w.bad || w.len != sizeof buf) {
		pw_free(&w);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(buf, w.p, sizeof buf);
	pw_free(&w);
	rc = tref_set(t, TREF_ADDRESS2D, 0, p, pitch, buf, sizeof buf);
	return rc;
}

CUresult
cuTexRefSetAddress2D_v2(CUtexref h, const CUDA_ARRAY_DESCRIPTOR *d,
    CUdeviceptr p, size_t pitch)
{
	return cuTexRefSetAddress2D_v3(h, d, p, pitch);
}

CUresult
cuTexRefSetAddress2D(CUtexref h, const CUDA_ARRAY_DESCRIPTOR_v1 *o,
    CUdeviceptr_v1 p, unsigned int pitch)
{
	CUDA_ARRAY_DESCRIPTOR d;

	/* The reference before the descriptor, as _v3 and the driver. */
	if (gobj_check(h, GK_TEXREF) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d.Width = o->Width;
	d.Height = o->Height;
	d.Format = o->Format;
	d.NumChannels = o->NumChannels;
	return cuTexRefSetAddress2D_v3(h, &d, p, pitch);
}

CUresult
cuTexRefSetFormat(CUtexref h, CUarray_format f, int n)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!tref_format_ok(f, n))
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_FORMAT, 0, (uint64_t)f, (uint64_t)n, NULL, 0);
}

CUresult
cuTexRefSetAddressMode(CUtexref h, int dim, CUaddress_mode am)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* A mode past the last is taken: the H100's driver 580 does. */
	if (dim < 0 || dim > 2)
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_ADDRMODE, (unsigned)dim, (uint64_t)am, 0,
	    NULL, 0);
}

static CUresult
tref_filter(CUtexref h, unsigned op, CUfilter_mode fm)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	/* A mode past the last is taken, as the driver 580 takes it. */
	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return tref_set(t, op, 0, (uint64_t)(unsigned)fm, 0, NULL, 0);
}

CUresult
cuTexRefSetFilterMode(CUtexref h, CUfilter_mode fm)
{
	return tref_filter(h, TREF_FILTER, fm);
}

CUresult
cuTexRefSetMipmapFilterMode(CUtexref h, CUfilter_mode fm)
{
	return tref_filter(h, TREF_MIPFILTER, fm);
}

CUresult
cuTexRefSetMipmapLevelBias(CUtexref h, float bias)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return tref_set(t, TREF_BIAS, 0, f32bits(bias), 0, NULL, 0);
}

CUresult
cuTexRefSetMipmapLevelClamp(CUtexref h, float lo, float hi)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return tref_set(t, TREF_CLAMP, 0, f32bits(lo), f32bits(hi), NULL, 0);
}

CUresult
cuTexRefSetMaxAnisotropy(CUtexref h, unsigned int aniso)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return tref_set(t, TREF_ANISO, 0, aniso, 0, NULL, 0);
}

CUresult
cuTexRefSetBorderColor(CUtexref h, float *rgba)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	uint8_t buf[RPC_TREF_BORDER_LEN];
	uint32_t u;
	int i;

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rgba == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < 4; i++) {
		u = f32bits(rgba[i]);
		buf[4 * i] = (uint8_t)u;
		buf[4 * i + 1] = (uint8_t)(u >> 8);
		buf[4 * i + 2] = (uint8_t)(u >> 16);
		buf[4 * i + 3] = (uint8_t)(u >> 24);
	}
	return tref_set(t, TREF_BORDER, 0, 0, 0, buf, sizeof buf);
}

CUresult
cuTexRefSetFlags(CUtexref h, unsigned int flags)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);

	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)(CU_TRSF_READ_AS_INTEGER |
	    CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
	    CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP))
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_FLAGS, 0, flags, 0, NULL, 0);
}

/*
 * A getter's checks in the driver's order (nullsweep, on a GPU): the
 * driver initialised, the reference, then where the answer goes.
 */
static CUresult
tref_need(const void *t, const void *out)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (t == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return out == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult
cuTexRefGetAddress_v2(CUdeviceptr *p, CUtexref h)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	uint64_t a;
	CUresult rc;

	if ((rc = tref_need(t, p)) != CUDA_SUCCESS)
		return rc;
	if ((rc = tref_get(t, TREF_ADDRESS, 0, &a, NULL, NULL, 0)) ==
	    CUDA_SUCCESS)
		*p = a;
	return rc;
}

CUresult
cuTexRefGetAddress(CUdeviceptr_v1 *p, CUtexref h)
{
	CUdeviceptr d;
	CUresult rc;

	/* _v2 checks the reference before p. */
	if ((rc = cuTexRefGetAddress_v2(p != NULL ? &d : NULL, h)) !=
	    CUDA_SUCCESS)
		return rc;
	if (d > UINT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*p = (CUdeviceptr_v1)d;
	return CUDA_SUCCESS;
}

/*
 * The array (op TREF_ARRAY) or mipmapped array (TREF_MIPMAP) a reference
 * is bound to: the server names it by the client's id, its address.
 */
static CUresult
tref_get_obj(void **out, CUtexref h, unsigned op, int kind)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	uint64_t a;
	void *o;
	CUresult rc;

	if ((rc = tref_need(t, out)) != CUDA_SUCCESS)
		return rc;
	if ((rc = tref_get(t, op, 0, &a, NULL, NULL, 0)) != CUDA_SUCCESS)
		return rc;
	if ((o = gobj_check((void *)(uintptr_t)a, kind)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*out = o;
	return CUDA_SUCCESS;
}

CUresult
cuTexRefGetArray(CUarray *pa, CUtexref h)
{
	return tref_get_obj((void **)pa, h, TREF_ARRAY, GK_ARRAY);
}

CUresult
cuTexRefGetMipmappedArray(CUmipmappedArray *pm, CUtexref h)
{
	return tref_get_obj((void **)pm, h, TREF_MIPMAP, GK_MIPMAP);
}

/* A getter of one value (a) and perhaps a second (b). */
static CUresult
tref_get2(CUtexref h, unsigned op, unsigned idx, const void *pa,
    uint64_t *a, uint64_t *b)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	CUresult rc;

	if ((rc = tref_need(t, pa)) != CUDA_SUCCESS)
		return rc;
	return tref_get(t, op, idx, a, b, NULL, 0);
}

/* A getter of one 32-bit value (a mode, a count, flags) into *p. */
static CUresult
tref_get_u32(CUtexref h, unsigned op, unsigned idx, void *p)
{
	uint64_t a;
	uint32_t v;
	CUresult rc;

	if ((rc = tref_get2(h, op, idx, p, &a, NULL)) == CUDA_SUCCESS) {
		v = (uint32_t)a;
		memcpy(p, &v, sizeof v);
	}
	return rc;
}

CUresult
cuTexRefGetAddressMode(CUaddress_mode *pam, CUtexref h, int dim)
{
	if (dim < 0 || dim > 2)
		return CUDA_ERROR_INVALID_VALUE;
	return tref_get_u32(h, TREF_ADDRMODE, (unsigned)dim, pam);
}

CUresult
cuTexRefGetFilterMode(CUfilter_mode *pfm, CUtexref h)
{
	return tref_get_u32(h, TREF_FILTER, 0, pfm);
}

CUresult
cuTexRefGetMipmapFilterMode(CUfilter_mode *pfm, CUtexref h)
{
	return tref_get_u32(h, TREF_MIPFILTER, 0, pfm);
}

CUresult
cuTexRefGetFormat(CUarray_format *pf, int *pn, CUtexref h)
{
	uint64_t a, b;
	CUresult rc;

	/* Either may be NULL, not both. */
	if ((rc = tref_get2(h, TREF_FORMAT, 0, pf != NULL ? (void *)pf :
	    (void *)pn, &a, &b)) != CUDA_SUCCESS)
		return rc;
	if (pf != NULL)
		*pf = (CUarray_format)a;
	if (pn != NULL)
		*pn = (int)b;
	return CUDA_SUCCESS;
}

CUresult
cuTexRefGetMipmapLevelBias(float *pbias, CUtexref h)
{
	uint64_t a;
	CUresult rc;

	if ((rc = tref_get2(h, TREF_BIAS, 0, pbias, &a, NULL)) ==
	    CUDA_SUCCESS)
		*pbias = bitsf32(a);
	return rc;
}

CUresult
cuTexRefGetMipmapLevelClamp(float *plo, float *phi, CUtexref h)
{
	uint64_t a, b;
	CUresult rc;

	if ((rc = tref_get2(h, TREF_CLAMP, 0, plo != NULL && phi != NULL ?
	    (void *)plo : NULL, &a, &b)) ==
	    CUDA_SUCCESS) {
		*plo = bitsf32(a);
		*phi = bitsf32(b);
	}
	return rc;
}

CUresult
cuTexRefGetMaxAnisotropy(int *paniso, CUtexref h)
{
	return tref_get_u32(h, TREF_ANISO, 0, paniso);
}

CUresult
cuTexRefGetBorderColor(float *rgba, CUtexref h)
{
	struct gtexref *t = gobj_check(h, GK_TEXREF);
	uint8_t buf[RPC_TREF_BORDER_LEN];
	uint32_t u;
	int i;
	CUresult rc;

	if ((rc = tref_need(t, rgba)) != CUDA_SUCCESS)
		return rc;
	if ((rc = tref_get(t, TREF_BORDER, 0, NULL, NULL, buf, sizeof buf)) !=
	    CUDA_SUCCESS)
		return rc;
	for (i = 0; i < 4; i++) {
		u = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
		    (uint32_t)buf[4 * i + 2] << 16 |
		    (uint32_t)buf[4 * i + 3] << 24;
		rgba[i] = bitsf32(u);
	}
	return CUDA_SUCCESS;
}

CUresult
cuTexRefGetFlags(unsigned int *pflags, CUtexref h)
{
	return tref_get_u32(h, TREF_FLAGS, 0, pflags);
}

/* A surface reference binds an array made for load and store, no flags. */
CUresult
cuSurfRefSetArray(CUsurfref h, CUarray a, unsigned int flags)
{
	struct gtexref *t = gobj_check(h, GK_SURFREF);

	if (t == NULL || gobj_check(a, GK_ARRAY) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return tref_set(t, TREF_ARRAY, 0, gobj_id(a), 0, NULL, 0);
}

CUresult
cuSurfRefGetArray(CUarray *pa, CUsurfref h)
{
	struct gtexref *t = gobj_check(h, GK_SURFREF);
	uint64_t a;
	void *o;
	CUresult rc;

	if ((rc = tref_need(t, pa)) != CUDA_SUCCESS)
		return rc;
	if ((rc = tref_get(t, TREF_ARRAY, 0, &a, NULL, NULL, 0)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((o = gobj_check((void *)(uintptr_t)a, GK_ARRAY)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pa = (CUarray)o;
	return CUDA_SUCCESS;
}

/* ---- sparse arrays -------------------------------------------------------- */

static CUresult
sparse_props(CUDA_ARRAY_SPARSE_PROPERTIES *p, const void *obj, int mm)
{
	struct rpc_val in[2], out[6];
	void *keep;
	CUresult rc;

	in[0].u = gobj_id(obj);
	in[1].u = (uint64_t)mm;
	rc = remote_call(R_ARRAY_SPARSE, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	memset(p, 0, sizeof *p);
	p->tileExtent.width = (unsigned)out[0].u;
	p->tileExtent.height = (unsigned)out[1].u;
	p->tileExtent.depth = (unsigned)out[2].u;
	p->miptailFirstLevel = (unsigned)out[3].u;
	p->miptailSize = out[4].u;
	p->flags = (unsigned)out[5].u;
	return CUDA_SUCCESS;
}

CUresult
cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES *p, CUarray h)
{
	struct garray *a = gobj_check(h, GK_ARRAY);

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (a == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* A level's are its mipmapped array's. */
	if (a->owner != NULL || !(a->d.Flags & CUDA_ARRAY3D_SPARSE))
		return CUDA_ERROR_INVALID_VALUE;
	return sparse_props(p, a, 0);
}

CUresult
cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES *p,
    CUmipmappedArray h)
{
	struct gmipmap *m = gobj_check(h, GK_MIPMAP);

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(m->d.Flags & CUDA_ARRAY3D_SPARSE))
		return CUDA_ERROR_INVALID_VALUE;
	return sparse_props(p, m, 1);
}

/* One entry on the wire; its array's handle checked. */
static CUresult
map_entry(struct pw *w, const CUarrayMapInfo *i)
{
	struct rpc_mapinfo m;

	memset(&m, 0, sizeof m);
	m.restype = (uint32_t)i->resourceType;
	switch (i->resourceType) {
	case CU_RESOURCE_TYPE_ARRAY:
		if (gobj_check(i->resource.array, GK_ARRAY) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		m.res = gobj_id(i->resource.array);
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if (gobj_check(i->resource.mipmap, GK_MIPMAP) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		m.res = gobj_id(i->resource.mipmap);
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	m.subtype = (uint32_t)i->subresourceType;
	if (i->subresourceType == CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL) {
		m.level = i->subresource.sparseLevel.level;
		m.layer = i->subresource.sparseLevel.layer;
		m.x = i->subresource.sparseLevel.offsetX;
		m.y = i->subresource.sparseLevel.offsetY;
		m.z = i->subresource.sparseLevel.offsetZ;
		m.w = i->subresource.sparseLevel.extentWidth;
		m.h = i->subresource.sparseLevel.extentHeight;
		m.d = i->subresource.sparseLevel.extentDepth;
	} else {
		m.tlayer = i->subresource.miptail.layer;
		m.toffset = i->subresource.miptail.offset;
		m.tsize = i->subresource.miptail.size;
	}
	m.memop = (uint32_t)i->memOperationType;
	m.memtype = (uint32_t)i->memHandleType;
	/* A VMM handle is its struct's address here, its id there. */
	m.mem = i->memOperationType == CU_MEM_OPERATION_TYPE_MAP ?
	    (uint64_t)i->memHandle.memHandle : 0;
	m.offset = i->offset;
	m.devmask = i->deviceBitMask;
	m.flags = i->flags;
	rpc_mapinfo_enc(w, &m);
	return CUDA_SUCCESS;
}

static CUresult
map_array(CUarrayMapInfo *list, unsigned int n, CUstream s, int ptsz)
{
	struct rpc_val in[3], out[1];
	struct gctx *c;
	struct pw w;
	uint64_t sid;
	unsigned i;
	void *keep;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (list == NULL || n == 0 || n > RPC_MAPINFO_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	pw_init(&w);
	for (i = 0; i < n; i++)
		if ((rc = map_entry(&w, &list[i])) != CUDA_SUCCESS) {
			pw_free(&w);
			return rc;
		}
	if (w.bad) {
		pw_free(&w);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].p = w.p;
	in[2].len = (uint32_t)w.len;
	rc = remote_call(R_MAP_ARRAY, in, out, &keep);
	free(keep);
	pw_free(&w);
	return rc;
}

CUresult
cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned int n, CUstream s)
{
	return map_array(list, n, s, 0);
}

CUresult
cuMemMapArrayAsync_ptsz(CUarrayMapInfo *list, unsigned int n, CUstream s)
{
	return map_array(list, n, s, 1);
}
