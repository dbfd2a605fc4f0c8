/* One-way allocation's books: see pool.h and gleam-client(7). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "htab.h"
#include "log.h"
#include "pool.h"

#define VA_FACTOR	2		/* the range: twice the device's memory */
#define GROW_MAX	(8ull << 30)	/* granules one memPool makes at most */

/* A mapped allocation: its granules, in address order. */
struct pmap {
	uint64_t	 bytes;
	size_t		 n;
	void		*h[];
};

struct rpool {
	uint64_t	 va, size, gran;
	void		**stock;	/* granules made and not mapped */
	size_t		 nstock, cap;
	uint8_t		*used;		/* a bit per granule of the range */
	struct htab	 maps;		/* base -> struct pmap */
};

static int
bit(const struct rpool *p, uint64_t g)
{
	return p->used[g / 8] >> (g % 8) & 1;
}

static void
setbits(struct rpool *p, uint64_t g, uint64_t n, int on)
{
	for (; n > 0; n--, g++)
		if (on)
			p->used[g / 8] |= (uint8_t)(1u << (g % 8));
		else
			p->used[g / 8] &= (uint8_t)~(1u << (g % 8));
}

/* The context's pool, made (the range reserved) on first use. */
static struct rpool *
pool_of(struct robj *ctx, const struct pool_ops *ops, int *rc)
{
	struct rpool *p = ctx->pool;
	uint64_t gran, freeb, total, size;

	if (p != NULL)
		return p;
	if ((*rc = ops->granule(ctx, &gran)) != CUDA_SUCCESS ||
	    (*rc = ops->meminfo(ctx, &freeb, &total)) != CUDA_SUCCESS)
		return NULL;
	if (gran == 0 || (gran & (gran - 1)) != 0 || total == 0) {
		*rc = CUDA_ERROR_NOT_SUPPORTED;
		return NULL;
	}
	size = (total * VA_FACTOR + gran - 1) & ~(gran - 1);
	if ((p = calloc(1, sizeof *p)) == NULL ||
	    (p->used = calloc(size / gran / 8 + 1, 1)) == NULL) {
		free(p);
		*rc = CUDA_ERROR_OUT_OF_MEMORY;
		return NULL;
	}
	if ((*rc = ops->reserve(ctx, size, gran, &p->va)) != CUDA_SUCCESS) {
		free(p->used);
		free(p);
		return NULL;
	}
	p->size = size;
	p->gran = gran;
	htab_init(&p->maps);
	ctx->pool = p;
	return p;
}

static int
stock_push(struct rpool *p, void *h)
{
	if (p->nstock == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		void **n = realloc(p->stock, cap * sizeof *n);

		if (n == NULL)
			return -1;
		p->stock = n;
		p->cap = cap;
	}
	p->stock[p->nstock++] = h;
	return 0;
}

static int
pool_grow(struct rcall *c, struct robj *ctx, const struct pool_ops *ops)
{
	uint64_t need = c->in[1].u, want = c->in[2].u, freeb, total, made = 0;
	size_t before;
	struct rpool *p;
	void *h;
	int rc;

	if ((p = pool_of(ctx, ops, &rc)) == NULL)
		return rc;
	if (need == 0 || need > want)
		return CUDA_ERROR_INVALID_VALUE;
	if (need > p->size)
		return CUDA_ERROR_OUT_OF_MEMORY;	/* more than the device */
	need = (need + p->gran - 1) & ~(p->gran - 1);
	if (want > GROW_MAX)
		want = GROW_MAX;
	/* Beyond what is needed, take at most a quarter of what is free. */
	if (want > need && ops->meminfo(ctx, &freeb, &total) == CUDA_SUCCESS &&
	    want - need > freeb / 4)
		want = need + freeb / 4;
	want = want < need ? need : want & ~(p->gran - 1);
	before = p->nstock;
	while (made < want) {
		if (ops->create(ctx, p->gran, &h) != CUDA_SUCCESS)
			break;
		if (stock_push(p, h) == -1) {
			ops->release(ctx, h, p->gran);
			break;
		}
		made += p->gran;
	}
	if (made < need) {
		/* Out of memory, as cuMemAlloc would say: nothing kept. */
		while (p->nstock > before)
			ops->release(ctx, p->stock[--p->nstock], p->gran);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->out[0].u = made;
	c->out[1].u = p->gran;
	c->out[2].u = p->va;
	c->out[3].u = p->size;
	return CUDA_SUCCESS;
}

static int
pool_map(struct rcall *c, struct robj *ctx, const struct pool_ops *ops)
{
	uint64_t va = c->in[1].u, bytes = c->in[2].u, g, n, i;
	struct rpool *p = ctx->pool;
	struct pmap *m;
	int rc;

	if (p == NULL || bytes == 0 || (va | bytes) & (p->gran - 1) ||
	    va < p->va || va - p->va > p->size || bytes > p->size -
	    (va - p->va))
		return CUDA_ERROR_INVALID_VALUE;
	g = (va - p->va) / p->gran;
	n = bytes / p->gran;
	if (n > p->nstock)
		return CUDA_ERROR_INVALID_VALUE;	/* more than it has */
	for (i = 0; i < n; i++)
		if (bit(p, g + i))
			return CUDA_ERROR_INVALID_VALUE;	/* mapped */
	if ((m = malloc(sizeof *m + n * sizeof m->h[0])) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->bytes = bytes;
	m->n = 0;
	for (i = 0; i < n; i++) {
		void *h = p->stock[p->nstock - 1];

		if ((rc = ops->map(ctx, va + i * p->gran, p->gran, h)) !=
		    CUDA_SUCCESS)
			goto undo;
		p->nstock--;
		m->h[m->n++] = h;
	}
	if ((rc = ops->access(ctx, va, bytes)) != CUDA_SUCCESS)
		goto undo;
	if (htab_put(&p->maps, va, m) == -1) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto undo;
	}
	if (rmem_add(c->cl, va, bytes, 0, ctx) == -1) {
		htab_del(&p->maps, va);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto undo;
	}
	setbits(p, g, n, 1);
	return CUDA_SUCCESS;
undo:
	if (m->n > 0)
		ops->unmap(ctx, va, m->n * p->gran);
	while (m->n > 0)
		stock_push(p, m->h[--m->n]);	/* room: it held them */
	free(m);
	log_warn("one-way allocation of %llu bytes at 0x%llx: error %d",
	    (unsigned long long)bytes, (unsigned long long)va, rc);
	return rc;
}

static int
pool_trim(struct rcall *c, struct robj *ctx, const struct pool_ops *ops)
{
	struct rpool *p = ctx->pool;
	uint64_t bytes = c->in[1].u;

	if (p == NULL || bytes & (p->gran - 1) || bytes / p->gran > p->nstock)
		return CUDA_ERROR_INVALID_VALUE;
	for (; bytes > 0; bytes -= p->gran)
		ops->release(ctx, p->stock[--p->nstock], p->gran);
	return CUDA_SUCCESS;
}

int
pool_call(struct rcall *c, struct robj *ctx, const struct pool_ops *ops)
{
	switch (c->d->type) {
	case R_MEM_POOL:
		return pool_grow(c, ctx, ops);
	case R_MEM_MAP:
		return pool_map(c, ctx, ops);
	case R_MEM_TRIM:
		return pool_trim(c, ctx, ops);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

int
pool_free(struct rclient *cl, uint64_t va, const struct pool_ops *ops,
    int *rc)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;
	struct rpool *p;
	struct pmap *m;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind != RK_CTX || (p = o->pool) == NULL ||
		    va < p->va || va - p->va >= p->size)
			continue;
		if ((m = htab_del(&p->maps, va)) == NULL) {
			*rc = CUDA_ERROR_INVALID_VALUE;
			return 1;
		}
		rmem_del(cl, va);
		ops->unmap(o, va, m->bytes);
		setbits(p, (va - p->va) / p->gran, m->n, 0);
		while (m->n > 0) {
			void *h = m->h[--m->n];

			if (stock_push(p, h) == -1)
				ops->release(o, h, p->gran);
		}
		free(m);
		*rc = CUDA_SUCCESS;
		return 1;
	}
	return 0;
}

/*
 * u8 has; with a pool: u64 va, size, granule, stock granules, u32 maps,
 * each u64 base and bytes (gleam-protocol(5), Migration).
 */
void
pool_save(const struct robj *ctx, struct pw *w)
{
	const struct rpool *p = ctx->pool;
	size_t i = 0;
	uint64_t va;
	void *v;

	pw_u8(w, p != NULL);
	if (p == NULL)
		return;
	pw_u64(w, p->va);
	pw_u64(w, p->size);
	pw_u64(w, p->gran);
	pw_u64(w, p->nstock);
	pw_u32(w, (uint32_t)p->maps.n);
	while (htab_next(&p->maps, &i, &va, &v)) {
		pw_u64(w, va);
		pw_u64(w, ((struct pmap *)v)->bytes);
	}
}

int
pool_load(struct rclient *cl, struct robj *ctx, struct pr *r,
    const struct pool_ops *ops, char *why, size_t whylen)
{
	uint64_t va, size, gran, nstock, mygran, base, bytes, g, n, k;
	uint32_t nmaps, i;
	struct rpool *p;
	struct pmap *m;
	void *h;
	int rc;

	if (pr_u8(r) == 0)
		return r->bad ? -1 : 0;
	va = pr_u64(r);
	size = pr_u64(r);
	gran = pr_u64(r);
	nstock = pr_u64(r);
	nmaps = pr_u32(r);
	if (r->bad)
		return -1;
	if (ops->reserve_at == NULL) {
		snprintf(why, whylen, "this backend cannot place a pool");
		return -1;
	}
	if (ops->granule(ctx, &mygran) != CUDA_SUCCESS || gran != mygran ||
	    size == 0 || size % gran != 0 || va % gran != 0 ||
	    size > (1ull << 48) || va > UINT64_MAX - size ||
	    nstock > size / gran) {
		snprintf(why, whylen, "a pool of %llu bytes at 0x%llx in "
		    "granules of %llu: not one this server can hold",
		    (unsigned long long)size, (unsigned long long)va,
		    (unsigned long long)gran);
		return -1;
	}
	if ((p = calloc(1, sizeof *p)) == NULL ||
	    (p->used = calloc(size / gran / 8 + 1, 1)) == NULL) {
		free(p);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if ((rc = ops->reserve_at(ctx, va, size)) != CUDA_SUCCESS) {
		free(p->used);
		free(p);
		snprintf(why, whylen, "the pool's range 0x%llx+%llu is taken "
		    "here (error %d)", (unsigned long long)va,
		    (unsigned long long)size, rc);
		return -1;
	}
	p->va = va;
	p->size = size;
	p->gran = gran;
	htab_init(&p->maps);
	ctx->pool = p;		/* pool_drop frees what follows, if it fails */
	for (k = 0; k < nstock; k++) {
		if (ops->create(ctx, gran, &h) != CUDA_SUCCESS ||
		    stock_push(p, h) == -1)
			goto oom;
	}
	for (i = 0; i < nmaps; i++) {
		base = pr_u64(r);
		bytes = pr_u64(r);
		if (r->bad)
			return -1;
		if (bytes == 0 || (base | bytes) & (gran - 1) || base < va ||
		    base - va > size || bytes > size - (base - va))
			goto bad;
		g = (base - va) / gran;
		n = bytes / gran;
		for (k = 0; k < n; k++)
			if (bit(p, g + k))
				goto bad;
		if ((m = malloc(sizeof *m + n * sizeof m->h[0])) == NULL)
			goto oom;
		m->bytes = bytes;
		m->n = 0;
		if (htab_put(&p->maps, base, m) == -1) {
			free(m);
			goto oom;
		}
		setbits(p, g, n, 1);
		for (k = 0; k < n; k++) {
			if (ops->create(ctx, gran, &h) != CUDA_SUCCESS)
				goto oom;
			m->h[m->n++] = h;
			if (ops->map(ctx, base + k * gran, gran, h) !=
			    CUDA_SUCCESS)
				goto oom;
		}
		if (ops->access(ctx, base, bytes) != CUDA_SUCCESS ||
		    rmem_add(cl, base, bytes, 0, ctx) == -1)
			goto oom;
	}
	return 0;
bad:
	snprintf(why, whylen, "a pool mapping outside its range or twice");
	return -1;
oom:
	snprintf(why, whylen, "out of device memory for the pool");
	return -1;
}

int
pool_holds(const struct robj *ctx, uint64_t va)
{
	const struct rpool *p = ctx->pool;

	return p != NULL && va >= p->va && va - p->va < p->size;
}

void
pool_drop(struct rclient *cl, struct robj *ctx, const struct pool_ops *ops)
{
	struct rpool *p = ctx->pool;
	size_t i = 0;
	uint64_t va;
	void *v;
	struct pmap *m;

	if (p == NULL)
		return;
	while (htab_next(&p->maps, &i, &va, &v)) {
		m = v;
		rmem_del(cl, va);
		ops->unmap(ctx, va, m->bytes);
		while (m->n > 0)
			ops->release(ctx, m->h[--m->n], p->gran);
		free(m);
	}
	htab_free(&p->maps);
	while (p->nstock > 0)
		ops->release(ctx, p->stock[--p->nstock], p->gran);
	ops->unreserve(ctx, p->va, p->size);
	free(p->stock);
	free(p->used);
	free(p);
	ctx->pool = NULL;
}
