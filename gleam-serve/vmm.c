/* Clients' reserved ranges, allocations and mappings (vmm.h). */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "check.h"
#include "log.h"
#include "proto.h"
#include "vmm.h"

struct vres {
	uint64_t	 va, size;
};

struct vmapping {
	uint64_t	 va, size;
	struct vres	*r;
	uint64_t	 access;	/* flags last set (CUmemAccess_flags) */
};

struct vhandle {
	void		*h;
	uint64_t	 size;
};

struct vmm {
	struct vres	**res;
	size_t		  nres, rcap;
	struct vmapping	 *map;
	size_t		  nmap, mcap;
	struct htab	  handles;	/* client id -> struct vhandle */
};

static struct vmm *
vmm_of(struct rclient *cl)
{
	if (cl->vmm == NULL && (cl->vmm = calloc(1, sizeof *cl->vmm)) != NULL)
		htab_init(&cl->vmm->handles);
	return cl->vmm;
}

/* The reservation holding [va, va + size), or NULL. */
static struct vres *
vres_find(struct vmm *v, uint64_t va, uint64_t size)
{
	size_t i;

	for (i = 0; i < v->nres; i++)
		if (va >= v->res[i]->va && va - v->res[i]->va <
		    v->res[i]->size && size <= v->res[i]->size -
		    (va - v->res[i]->va))
			return v->res[i];
	return NULL;
}

static int
map_cmp(const void *a, const void *b)
{
	const struct vmapping *x = a, *y = b;

	return x->va < y->va ? -1 : x->va > y->va;
}

/*
 * The client's ranges for r: its mappings, adjacent ones merged, as
 * copies and kernels may cross from one to the next.  Mappings are kept
 * sorted by address.
 */
static int
vres_ranges(struct rclient *cl, struct vmm *v, struct vres *r)
{
	uint64_t base = 0, end = 0;
	size_t i;
	int rc = 0;

	rmem_drop(cl, r);
	for (i = 0; i < v->nmap; i++) {
		struct vmapping *m = &v->map[i];

		if (m->r != r)
			continue;
		if (end != 0 && m->va == end) {
			end += m->size;
			continue;
		}
		if (end != 0 && rmem_add(cl, base, end - base, 1, r) == -1)
			rc = -1;
		base = m->va;
		end = m->va + m->size;
	}
	if (end != 0 && rmem_add(cl, base, end - base, 1, r) == -1)
		rc = -1;
	return rc;
}

/* in: ctx, size, alignment, address hint, flags -> va */
static int
vmm_reserve(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vres *r, **nr;
	uint64_t va;
	int rc;

	if (v->nres == v->rcap) {
		size_t cap = v->rcap ? v->rcap * 2 : 16;

		if ((nr = realloc(v->res, cap * sizeof *nr)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		v->res = nr;
		v->rcap = cap;
	}
	if ((r = malloc(sizeof *r)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = ops->reserve(c->in[1].u, c->in[2].u, c->in[3].u, c->in[4].u,
	    &va)) != CUDA_SUCCESS) {
		free(r);
		return rc;
	}
	r->va = va;
	r->size = c->in[1].u;
	v->res[v->nres++] = r;
	c->out[0].u = va;
	return CUDA_SUCCESS;
}

/* in: ctx, va, size: a whole reservation with nothing mapped in it. */
static int
vmm_free(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	size_t i, j;
	int rc;

	for (i = 0; i < v->nres; i++)
		if (v->res[i]->va == c->in[1].u &&
		    v->res[i]->size == c->in[2].u)
			break;
	if (i == v->nres)
		return CUDA_ERROR_INVALID_VALUE;
	for (j = 0; j < v->nmap; j++)
		if (v->map[j].r == v->res[i])
			return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ops->free(c->in[1].u, c->in[2].u)) != CUDA_SUCCESS)
		return rc;
	rmem_drop(c->cl, v->res[i]);
	free(v->res[i]);
	v->res[i] = v->res[--v->nres];
	return CUDA_SUCCESS;
}

/* in: ctx, id, size, flags, type, location type and id, handle types,
 * compression, RDMA capable, usage */
static int
vmm_create(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vmm_prop p;
	struct vhandle *h;
	int rc;

	if (htab_get(&v->handles, c->in[1].u) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	p.type = (uint32_t)c->in[4].u;
	p.loctype = (uint32_t)c->in[5].u;
	p.locid = (int32_t)c->in[6].u;
	p.htypes = (uint32_t)c->in[7].u;
	p.compression = (uint32_t)c->in[8].u;
	p.rdma = (uint32_t)c->in[9].u;
	p.usage = (uint32_t)c->in[10].u;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = ops->create(c->in[2].u, &p, &h->h)) != CUDA_SUCCESS) {
		free(h);
		return rc;
	}
	h->size = c->in[2].u;
	if (htab_put(&v->handles, c->in[1].u, h) == -1) {
		ops->release(h->h, h->size);
		free(h);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

void *
vmm_handle(struct rclient *cl, uint64_t id, uint64_t *size)
{
	struct vhandle *h;

	if (cl->vmm == NULL || (h = htab_get(&cl->vmm->handles, id)) == NULL)
		return NULL;
	*size = h->size;
	return h->h;
}

/* in: ctx, id.  What is mapped of it stays until unmapped. */
static int
vmm_release(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vhandle *h;

	if ((h = htab_del(&v->handles, c->in[1].u)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	ops->release(h->h, h->size);
	free(h);
	return CUDA_SUCCESS;
}

/* in: ctx, va, size, offset, id, flags */
static int
vmm_map(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	uint64_t va = c->in[1].u, size = c->in[2].u, off = c->in[3].u;
	struct vmapping *nm;
	struct vhandle *h;
	struct vres *r;
	size_t i;
	int rc;

	if ((h = htab_get(&v->handles, c->in[4].u)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((r = vres_find(v, va, size)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* Past the allocation's end: what the 580 driver answers. */
	if (off > h->size || size > h->size - off)
		return CUDA_ERROR_NOT_SUPPORTED;
	for (i = 0; i < v->nmap; i++)
		if (va < v->map[i].va + v->map[i].size &&
		    v->map[i].va < va + size)
			return CUDA_ERROR_INVALID_VALUE;
	if (v->nmap == v->mcap) {
		size_t cap = v->mcap ? v->mcap * 2 : 16;

		if ((nm = realloc(v->map, cap * sizeof *nm)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		v->map = nm;
		v->mcap = cap;
	}
	if ((rc = ops->map(va, size, off, h->h)) != CUDA_SUCCESS)
		return rc;
	v->map[v->nmap++] = (struct vmapping){ va, size, r, 0 };
	qsort(v->map, v->nmap, sizeof *v->map, map_cmp);
	if (vres_ranges(c->cl, v, r) == -1)
		log_warn("client %s: cuMemMap: out of memory for its ranges",
		    c->cl->addr);
	return CUDA_SUCCESS;
}

/*
 * The mappings [va, va + size) covers, by index [*lo, *hi): -1 if it
 * covers none or cuts one, or leaves its reservation.
 */
static int
vmm_covered(struct vmm *v, uint64_t va, uint64_t size, size_t *lo,
    size_t *hi, struct vres **rp)
{
	size_t i;

	if ((*rp = vres_find(v, va, size)) == NULL)
		return -1;
	*lo = *hi = v->nmap;
	for (i = 0; i < v->nmap; i++) {
		struct vmapping *m = &v->map[i];

		if (m->va + m->size <= va || m->va >= va + size)
			continue;
		if (m->va < va || m->va + m->size > va + size)
			return -1;
		if (*lo == v->nmap)
			*lo = i;
		*hi = i + 1;
	}
	return *lo == v->nmap ? -1 : 0;
}

/* in: ctx, va, size: whole mappings only. */
static int
vmm_unmap(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vres *r;
	size_t lo, hi;
	int rc;

	if (vmm_covered(v, c->in[1].u, c->in[2].u, &lo, &hi, &r) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ops->unmap(c->in[1].u, c->in[2].u)) != CUDA_SUCCESS)
		return rc;
	memmove(&v->map[lo], &v->map[hi], (v->nmap - hi) * sizeof *v->map);
	v->nmap -= hi - lo;
	vres_ranges(c->cl, v, r);
	return CUDA_SUCCESS;
}

/* in: ctx, va, size, descriptors: over mapped memory, without a gap. */
static int
vmm_set_access(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vmm_access d[CHECK_ACCESS_MAX];
	struct pr b;
	uint64_t at = c->in[1].u, fl = 0;
	struct vres *r;
	size_t n = c->in[3].len / CHECK_ACCESS_LEN, i, lo, hi;
	int rc;

	if (n > CHECK_ACCESS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	pr_init(&b, c->in[3].p, c->in[3].len);
	for (i = 0; i < n; i++) {
		d[i].type = pr_u32(&b);
		d[i].id = (int32_t)pr_u32(&b);
		d[i].flags = pr_u32(&b);
		fl |= d[i].flags;
	}
	if (vmm_covered(v, c->in[1].u, c->in[2].u, &lo, &hi, &r) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = lo; i < hi; i++) {
		if (v->map[i].va != at)
			return CUDA_ERROR_INVALID_VALUE;
		at += v->map[i].size;
	}
	if (at != c->in[1].u + c->in[2].u)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ops->set_access(c->in[1].u, c->in[2].u, d, n)) !=
	    CUDA_SUCCESS)
		return rc;
	for (i = lo; i < hi; i++)
		v->map[i].access = fl;
	return CUDA_SUCCESS;
}

/* in: ctx, location type, location id, va -> flags */
static int
vmm_get_access(struct rcall *c, struct vmm *v, const struct vmm_ops *ops)
{
	struct vmm_access w;
	uint64_t va = c->in[3].u;
	size_t i;

	for (i = 0; i < v->nmap; i++)
		if (va >= v->map[i].va && va - v->map[i].va < v->map[i].size)
			break;
	if (i == v->nmap)
		return CUDA_ERROR_INVALID_VALUE;
	if (ops->get_access == NULL) {
		c->out[0].u = v->map[i].access;
		return CUDA_SUCCESS;
	}
	w.type = (uint32_t)c->in[1].u;
	w.id = (int32_t)c->in[2].u;
	w.flags = 0;
	return ops->get_access(&w, va, &c->out[0].u);
}

int
vmm_call(struct rcall *c, const struct vmm_ops *ops)
{
	struct vmm *v;

	if ((v = vmm_of(c->cl)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	switch (c->d->type) {
	case R_VMM_RESERVE:	return vmm_reserve(c, v, ops);
	case R_VMM_FREE:	return vmm_free(c, v, ops);
	case R_VMM_CREATE:	return vmm_create(c, v, ops);
	case R_VMM_RELEASE:	return vmm_release(c, v, ops);
	case R_VMM_MAP:		return vmm_map(c, v, ops);
	case R_VMM_UNMAP:	return vmm_unmap(c, v, ops);
	case R_VMM_SET_ACCESS:	return vmm_set_access(c, v, ops);
	case R_VMM_GET_ACCESS:	return vmm_get_access(c, v, ops);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

void
vmm_drop(struct rclient *cl, const struct vmm_ops *ops)
{
	struct vmm *v = cl->vmm;
	size_t i = 0;
	uint64_t id;
	void *h;

	if (v == NULL)
		return;
	for (i = 0; i < v->nmap; i++)
		ops->unmap(v->map[i].va, v->map[i].size);
	i = 0;
	while (htab_next(&v->handles, &i, &id, &h)) {
		ops->release(((struct vhandle *)h)->h,
		    ((struct vhandle *)h)->size);
		free(h);
	}
	for (i = 0; i < v->nres; i++) {
		rmem_drop(cl, v->res[i]);
		ops->free(v->res[i]->va, v->res[i]->size);
		free(v->res[i]);
	}
	htab_free(&v->handles);
	free(v->res);
	free(v->map);
	free(v);
	cl->vmm = NULL;
}

int
vmm_empty(const struct rclient *cl)
{
	const struct vmm *v = cl->vmm;

	return v == NULL || (v->nres == 0 && v->nmap == 0 &&
	    v->handles.n == 0);
}
