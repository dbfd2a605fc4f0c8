/* One-way allocation's books: see pool.h and gleam-client(7). */
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
