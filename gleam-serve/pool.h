/*
 * One-way allocation (gleam-client(7)): per context, a reserved range of
 * device addresses and a stock of physical granules made ahead.  The
 * client grows the stock with a round trip (memPool), then allocates on
 * its own: it picks addresses in the range and the server maps granules of
 * the stock there (memMap, one-way), which cannot fail for want of
 * memory, since the granules exist already.  cuMemFree of such an
 * allocation unmaps it and puts its granules back in the stock; memTrim
 * releases granules the client will not need.  Each backend supplies the
 * primitives (struct pool_ops); this file keeps the books and checks every
 * request, so that a client can only map its own stock into its own range.
 */
#ifndef SERVE_POOL_H
#define SERVE_POOL_H

#include <stdint.h>

#include "backend.h"

struct pool_ops {
	/* The granule, the device's memory free and total: CUresults. */
	int	(*granule)(struct robj *ctx, uint64_t *gran);
	int	(*meminfo)(struct robj *ctx, uint64_t *freeb, uint64_t *total);
	int	(*reserve)(struct robj *ctx, uint64_t size, uint64_t gran,
		    uint64_t *va);
	void	(*unreserve)(struct robj *ctx, uint64_t va, uint64_t size);
	int	(*create)(struct robj *ctx, uint64_t gran, void **h);
	void	(*release)(struct robj *ctx, void *h, uint64_t gran);
	int	(*map)(struct robj *ctx, uint64_t va, uint64_t gran, void *h);
	/* Makes [va, va + size), mapped, readable and writable. */
	int	(*access)(struct robj *ctx, uint64_t va, uint64_t size);
	void	(*unmap)(struct robj *ctx, uint64_t va, uint64_t size);
	/* Reserves exactly [va, va + size) (migration); NULL: cannot. */
	int	(*reserve_at)(struct robj *ctx, uint64_t va, uint64_t size);
};

/*
 * memPool (ctx, need, want -> added, granule, va, size), memMap (ctx,
 * dptr, bytes) or memTrim (ctx, bytes), by c's type, in ctx.
 */
int	pool_call(struct rcall *, struct robj *ctx, const struct pool_ops *);
/*
 * cuMemFree of p, if one of the client's pools holds it: 1 with *rc the
 * result; 0 if none does.
 */
int	pool_free(struct rclient *, uint64_t p, const struct pool_ops *,
	    int *rc);
/*
 * Migration (migrate.h): the books of ctx's pool into w, and back into a
 * context of a new client: the same range, the same stock, each mapping
 * at its address (contents not copied).  -1 with why.
 */
void	pool_save(const struct robj *ctx, struct pw *w);
int	pool_load(struct rclient *, struct robj *ctx, struct pr *r,
	    const struct pool_ops *, char *why, size_t whylen);
/* 1 if va lies in ctx's pool's range. */
int	pool_holds(const struct robj *ctx, uint64_t va);
/* Unmaps and releases everything of ctx's pool (before the context goes). */
void	pool_drop(struct rclient *, struct robj *ctx, const struct pool_ops *);

#endif
