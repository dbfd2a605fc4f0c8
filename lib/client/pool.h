/*
 * One-way allocation (pool.c): per context, a reserved range of device
 * addresses and a stock of granules the server made ahead, so that most
 * cuMemAlloc calls need no round trip.
 */
#ifndef GLEAM_CLIENT_POOL_H
#define GLEAM_CLIENT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"

/*
 * An allocation from the context's pool: 1 with *rc the result (and *dptr
 * on success), 0 when it goes the usual way.
 */
int		 pool_alloc(struct gctx *, size_t, CUdeviceptr *, CUresult *rc);
/* cuMemFree of [a, a + size), pooled or not. */
CUresult	 pool_free(struct gctx *, uint64_t a, uint64_t size);
/* The stock, which the context may allocate as if it were free. */
uint64_t	 pool_stock(struct gctx *);
/* A context is up on the server: its pool's head start. */
void		 pool_start(struct gctx *);
/* The context is gone on the server, and its pool with it. */
void		 pool_drop(struct gctx *);

#endif
