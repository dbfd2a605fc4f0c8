/*
 * Context-local storage, the CONTEXT_LOCAL_STORAGE export table's map
 * (dark-api.md §2.2): values cudart keeps per (context, key), with a
 * destructor the driver runs when the context is destroyed.  Answered
 * locally; never a round trip, since cudart reads it on every call.
 *
 * The codes returned are CUresult values.  A NULL context must have been
 * resolved to the current one by the caller.
 */
#ifndef GLEAM_CLIENT_CLS_H
#define GLEAM_CLIENT_CLS_H

struct CUctx_st;			/* CUcontext, without cuda.h */

typedef void	(*cls_dtor)(struct CUctx_st *, void *, void *);

/* 0, or 400 (keeping the old value) when the key already exists. */
int	 cls_put(struct CUctx_st *, void *, void *, cls_dtor);
/* 0, or 400 when the key is absent; the destructor is not called. */
int	 cls_del(struct CUctx_st *, void *);
/* 0 and the value, or 400 when the key is absent. */
int	 cls_get(struct CUctx_st *, void *, void **);

/*
 * The context is being destroyed (cuCtxDestroy, cuDevicePrimaryCtxReset,
 * or the cuDevicePrimaryCtxRelease that drops the count to 0): run the
 * destructor of each of its entries, most recent first, then drop them.
 * Call it before the context is gone; cudart's destructors still use it.
 */
void	 cls_destroy(struct CUctx_st *);

#endif
