/*
 * What a client sent, checked once, before any backend sees it: sizes,
 * pitches, extents, element sizes, launch geometry, flags, 3D copy
 * descriptors and blobs whose length the call fixes, each with the
 * CUresult the real driver gives for such a value, with no arithmetic
 * that can wrap.  What depends on a backend's state (an object's id, a
 * pointer in the client's memory, a function's parameter layout or
 * shared memory limit, a device's number) stays in the backend.
 */
#ifndef SERVE_CHECK_H
#define SERVE_CHECK_H

#include <stdint.h>

#include <cuda.h>

#include "backend.h"

#define CHECK_COPY_MAX	(1u << 30)	/* a copy's reply, a 3D extent */
#define CHECK_ARGMAX	32764		/* bytes of parameters, CUDA 12.1+ */
#define CHECK_SHMEM_MAX	232448		/* shared memory a block may opt in
					   to on any GPU so far (227 KiB) */
#define CHECK_ATTRS_MAX	16		/* launch attributes in a call */
#define CHECK_ATTR_LEN	68		/* each: u32 id, 64 bytes of value */
#define CHECK_ACCESS_MAX 64		/* cuMemSetAccess descriptors */
#define CHECK_ACCESS_LEN 12		/* each: u32 type, i32 id, u32 flags */

/* CUDA_SUCCESS if c's arguments may go to a backend, else its CUresult. */
int	check_call(const struct rcall *c);
/*
 * Graph nodes: the request in field f of c, decoded into *sub (if not
 * NULL) as a call of type on no stream, and checked as one; the call a
 * node of a CUgraphNodeType stands for (R_LAUNCH &c.), or 0.
 */
int	check_graph_sub(const struct rcall *c, int f, uint16_t type,
	    struct rcall *sub);
uint16_t check_graph_call(uint64_t nodetype);
/* A memory allocation node's request (RPC_SIG_MEMALLOC) into v (NULL:
 * checked only): CUDA_SUCCESS or the CUresult. */
int	check_memalloc(const struct rpc_val *, struct rpc_val *v);
/* A conditional node's request (RPC_SIG_COND), decoded into v. */
int	check_cond(const struct rpc_val *, struct rpc_val *v);
/*
 * The backends' dispatch: check_call, then fn[] for c's call (which the
 * backend must have).  Every backend's call table goes through it.
 */
int	check_dispatch(struct rcall *c, const backend_fn *fn);

/*
 * The bytes an R_MEMSET reaches from its pointer: pitch * (height - 1) +
 * width * element, or width * element for one row.  -1 if that does not
 * fit in 64 bits (check_call refuses such a call).
 */
int	check_memset_span(const struct rcall *c, uint64_t *span);

/*
 * R_MEM_3D's descriptor (c->in[3]) decoded into *m, without its pointers,
 * with the bytes each side reaches from its origin (src and dst span):
 * CUDA_SUCCESS, *empty = 1 when there is nothing to copy, or the CUresult
 * to answer.  A host source must lie in the request's blob (c->in[4]).
 */
int	check_copy3d(const struct rcall *c, CUDA_MEMCPY3D *m,
	    uint64_t *srcspan, uint64_t *dstspan, int *empty);

/*
 * An array format with its channels: CUDA_SUCCESS with *elsize the bytes
 * of an element (0 for a format whose layout is the driver's alone:
 * block-compressed, YUV), or CUDA_ERROR_INVALID_VALUE.
 */
int	check_format(uint64_t format, uint64_t channels, unsigned *elsize);
#define CHECK_ARRAY_FLAGS	(CUDA_ARRAY3D_LAYERED | \
	CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP | \
	CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE | \
	CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE | \
	CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE)
#define CHECK_TEX_FLAGS		(CU_TRSF_READ_AS_INTEGER | \
	CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB | \
	CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | CU_TRSF_SEAMLESS_CUBEMAP)

/*
 * R_TEX_CREATE's descriptors decoded (rpc.h) and checked: resource type
 * and its fields, address and filter modes, flags, the view's levels and
 * layers.  CUDA_SUCCESS or the CUresult.  Objects, device ranges and
 * extents are the backend's to check.
 */
int	check_tex(const struct rcall *c, struct rpc_res *, struct rpc_texd *,
	    struct rpc_view *);

/*
 * A launch attributes blob: the number of attributes, or -1 with *rc the
 * CUresult (CUDA_ERROR_NOT_SUPPORTED for an attribute whose value holds a
 * handle or a pointer, which no client may send).
 */
int	check_attrs(const struct rpc_val *v, int *rc);
/*
 * A function attribute a client may set, and its value: CUDA_SUCCESS or
 * CUDA_ERROR_INVALID_VALUE (R_FUNC_SET_ATTR; a migrated client's again).
 */
int	check_attr_value(uint64_t attr, int64_t value);

/*
 * A JIT option list (rpc.h's R_LINK_* format) decoded into opt[] and
 * val[], RPC_JIT_OPTS_MAX at most, *n of them: CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_VALUE for a malformed list, an unknown option, one
 * whose value points into the client, or a log over RPC_JIT_LOG_MAX.
 */
int	check_jit_opts(const struct rpc_val *v, int *opt, uint64_t *val,
	    unsigned *n);

/*
 * R_GRAPH_NODES' last part (gleam-protocol(5)): a u32 count, then for each
 * kernel node of the listing's n (node handles and types) that get, the
 * backend's R_KNODE_GET, answers: its u32 index in the listing, the
 * function id, the grid, block and shared memory (7 u32), and the u32
 * length and bytes of its arguments.
 */
void	graph_knodes_put(struct rcall *c, backend_fn get,
	    const uint64_t *node, const uint32_t *type, size_t n);
/*
 * R_CAPTURE_END's reply blob (gleam-protocol(5)): graph id's listing, as
 * list, the backend's R_GRAPH_NODES, answers it; empty where it fails.
 */
void	graph_listing_put(struct rcall *c, backend_fn list, uint64_t id);

/*
 * Idle streams, for a synchronization's reply (gleam-protocol(5)): each
 * call that names a stream of the client's marks it (rclient_touch), and
 * a successful cuCtxSynchronize, cuStreamSynchronize or
 * cuEventSynchronize reports in its blob, as (context, stream) id pairs,
 * the streams of context ctx that are idle: those marked since the last
 * report that are idle now (idle(o) == 1, then unmarked), then those
 * found idle before and not named since.  The client answers their
 * synchronizations without a round trip while it sends nothing more.
 * capturing(o) nonzero for a marked stream, or a stream's cap set: a
 * capture is open, and none is reported (a query could spoil it).  NULL
 * functions: a backend whose work is done when its call returns, and
 * whose captures are the streams' cap.  waited: the stream just
 * synchronized (IDLE_WAITED_ALL: the context; 0: none, an event's
 * synchronization), idle and capturing nothing without asking, and not
 * named (the client knows it idle).
 */
#define IDLE_WAITED_ALL	UINT64_MAX
void	rclient_touch(struct rclient *cl, struct robj *o);
void	idle_report(struct rcall *c, const struct robj *ctx, uint64_t waited,
	    int (*capturing)(struct robj *), int (*idle)(struct robj *));

#endif
