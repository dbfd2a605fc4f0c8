/*
 * The remoting calls: protocol version 1 frames of type MSG_REMOTE_FIRST
 * and up, one per CUDA driver operation.  This table is their one
 * definition in code (gleam-protocol(5) has it in prose): each call has a
 * request and a reply signature, and rpc_pack/rpc_unpack encode and decode
 * every call by its signature, so client, server and fuzz target share one
 * decoder.
 *
 * Signature letters, each a field in order, little-endian:
 *	I  u32		i  i32		Q  u64
 *	B  blob: u32 length, then the bytes (rpc_unpack points into the frame)
 *	S  string: u16 length, then bytes with no NUL (at most 4096)
 *
 * Every reply starts with a u32 CUresult; the reply's fields follow only
 * when it is 0 (CUDA_SUCCESS).  Handles of contexts, modules, functions,
 * streams and events are u64 ids that the client chooses when it creates
 * the object (so creation need not wait); the server keeps its own map
 * from id to driver handle per client and refuses ids it did not record.
 * Stream id 0 is the legacy default stream, 1 CU_STREAM_LEGACY and 2
 * CU_STREAM_PER_THREAD.  Device pointers are the server's real addresses.
 */
#ifndef GLEAM_RPC_H
#define GLEAM_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define RPC_STRING_MAX	4096
#define RPC_MAX_FIELDS	16

enum rpc_call {
	R_OPEN = MSG_REMOTE_FIRST,	/* flags -> driver version, devices */
	R_CTX_CREATE,		/* id, device, flags */
	R_CTX_DESTROY,		/* id */
	R_PRIMARY_RETAIN,	/* id, device: id names that primary context */
	R_PRIMARY_RELEASE,	/* id */
	R_PRIMARY_RESET,	/* id */
	R_CTX_SYNC,		/* ctx */
	R_CTX_SET_LIMIT,	/* ctx, limit, value */
	R_MEM_ALLOC,		/* ctx, bytes -> dptr */
	R_MEM_ALLOC_PITCH,	/* ctx, width, height, element -> dptr, pitch */
	R_MEM_FREE,		/* ctx, dptr */
	R_MEM_GET_INFO,		/* ctx -> free, total */
	R_MEM_HTOD,		/* ctx, stream, async, dptr, data */
	R_MEM_DTOH,		/* ctx, stream, async, dptr, bytes -> data */
	R_MEM_DTOD,		/* ctx, stream, async, dst, src, bytes */
	R_MEM_3D,		/* ctx, stream, async, descriptor, host data -> host data */
	R_MEMSET,		/* ctx, stream, async, dptr, pitch, value, element, width, height */
	R_MODULE_LOAD,		/* ctx, id, image -> function table */
	R_MODULE_UNLOAD,	/* id */
	R_MODULE_GET_FUNC,	/* module, id, name -> its function table entry
				   (or an empty blob: the load's entry holds) */
	R_MODULE_GET_GLOBAL,	/* module, name -> dptr, bytes */
	R_LIBRARY_LOAD,		/* ctx, id, image -> function table */
	R_LIBRARY_UNLOAD,	/* id */
	R_LIBRARY_GET_KERNEL,	/* library, id, name -> as R_MODULE_GET_FUNC */
	R_LIBRARY_GET_GLOBAL,	/* ctx, library, name -> dptr, bytes */
	R_LAUNCH,		/* ctx, function, grid[3], block[3], shmem, stream, flags, params */
	R_STREAM_CREATE,	/* ctx, id, flags, priority */
	R_STREAM_DESTROY,	/* id */
	R_STREAM_SYNC,		/* ctx, stream */
	R_STREAM_QUERY,		/* ctx, stream */
	R_STREAM_WAIT_EVENT,	/* ctx, stream, event, flags */
	R_EVENT_CREATE,		/* ctx, id, flags */
	R_EVENT_DESTROY,	/* id */
	R_EVENT_RECORD,		/* ctx, event, stream */
	R_EVENT_SYNC,		/* event */
	R_EVENT_QUERY,		/* event */
	R_EVENT_ELAPSED,	/* start, end -> milliseconds (float bits) */
	R_FUNC_SET_ATTR,	/* function, attribute, value */
	R_FUNC_SET_CACHE,	/* function, config */
	R_OCCUPANCY,		/* function, block, dynamic shmem, flags -> blocks */
	R_STAGE_PUT,		/* id, offset, data: part of an image too large
				   for one frame, for the load that names id */
	R_OCC_SMEM,		/* function, blocks, block size -> bytes */
	R_OCC_CLUSTERS,		/* what, function, grid[3], block[3], shmem,
				   attributes -> count */
	R_LAUNCH_EX,		/* ctx, function, grid[3], block[3], shmem,
				   stream, attributes, params */
	R_CACHE_HTOD,		/* ctx, stream, async, dptr, key, bytes ->
				   state: 0 send it, 1 copied, 2 no cache */
	R_CACHE_PUT,		/* key, total, offset, data -> 1 when the
				   last piece was verified and kept */
	R_CACHE_IMAGE,		/* load id, key, bytes -> state, as
				   R_CACHE_HTOD */
	R_TPC_MAP,		/* ctx -> vgpc, mtpc: cuBLASLt's map of the
				   context's device (dark-api.md 6.1) */
	R_CACHE_HAVE,		/* names (key and u64 length each) -> one bit
				   each: held for this client's copies */
	R_CACHE_HELD,		/* ctx, stream, async, dptr, key, bytes: a
				   copy from a held entry (may be one-way) */
	R_TMAP_ENCODE,		/* ctx, which, map address mod 128, map (128
				   bytes), arguments -> map: a tensor-map
				   encoder of the server's driver */
	R_MODEL,		/* name: the model this client loads
				   (GLEAM_MODEL), for the server's status */
	R_MEM_POOL,		/* ctx, need, want -> added, granule, va,
				   size: grows the context's stock of
				   granules for one-way allocation */
	R_MEM_MAP,		/* ctx, dptr, bytes: maps stock there */
	R_MEM_TRIM,		/* ctx, bytes: releases stock */
	R_LANES,		/* lanes wanted -> lanes offered, port, token,
				   the server's end of this connection (port,
				   address): listens for bulk connections */
	R_LANES_UP,		/* lanes connected -> lanes taken (all of
				   them or none) */
	R_MEM_HTOD_LANES,	/* ctx, stream, async, dptr, bytes: a
				   host-to-device copy whose bytes come in
				   stripes over the lanes */
	R_MEM_DTOH_LANES,	/* ctx, stream, async, dptr, bytes: a
				   device-to-host copy whose bytes go back in
				   stripes over the lanes, before the reply */
	R_MEM_GRANULARITY,	/* option, type, location type, location id,
				   handle types, compression, RDMA capable,
				   usage -> bytes: cuMemGetAllocationGranularity
				   for that CUmemAllocationProp */
	/* graphs (issue 24) */
	R_CAPTURE_BEGIN,	/* ctx, stream, mode, graph id: the capture's
				   graph is known by that id from here on */
	R_CAPTURE_END,		/* ctx, stream, keep (bit 0: 0 drops the
				   graph; bit 1: the client wants the
				   listing) -> the new graph's listing as
				   R_GRAPH_NODES gives it, where asked for
				   (else empty; then it may come one-way) */
	R_GRAPH_CREATE,		/* id, flags */
	R_GRAPH_DESTROY,	/* id */
	R_GRAPH_INSTANTIATE,	/* ctx, exec id, graph, flags, upload stream
				   (0 none) */
	R_GEXEC_DESTROY,	/* id */
	R_GRAPH_LAUNCH,		/* ctx, exec, stream */
	R_GRAPH_UPLOAD,		/* ctx, exec, stream */
	R_GEXEC_UPDATE,		/* exec, graph -> CUresult, update result
				   (the call itself always succeeds;
				   sent one-way, a failed update is the
				   call's error) */
	R_GRAPH_CLONE,		/* new id, graph */
	R_GRAPH_COUNT,		/* graph, what: 0 nodes, 1 roots, 2 edges
				   -> count */
	R_GRAPH_DOT,		/* graph, flags -> the dot file's text */
	/* modules and launch (issue 24) */
	R_STREAM_MEMOP,		/* ctx, stream, flags, operations (24 bytes
				   each: u32 type, u32 flags, u64 address,
				   u64 value): cuStreamBatchMemOp */
	R_LINK_CREATE,		/* ctx, id, JIT options (u32 option, u64
				   value each) */
	R_LINK_ADD,		/* link, input type, data (or empty: staged
				   under the link's id), name, JIT options
				   -> the driver's result, outputs of the
				   create's options, of these options (so
				   that a failure's log comes back too) */
	R_LINK_COMPLETE,	/* link -> the driver's result, cubin,
				   outputs of the create's options */
	R_LINK_DESTROY,		/* link */
	/* virtual memory management (cuMem* VMM): handles are client ids */
	R_VMM_RESERVE,		/* ctx, size, alignment, address hint, flags
				   -> va: cuMemAddressReserve */
	R_VMM_FREE,		/* ctx, va, size: cuMemAddressFree */
	R_VMM_CREATE,		/* ctx, handle id, size, flags, type,
				   location type, location id, handle types,
				   compression, RDMA capable, usage:
				   cuMemCreate */
	R_VMM_RELEASE,		/* ctx, handle id: cuMemRelease */
	R_VMM_MAP,		/* ctx, va, size, offset, handle id, flags:
				   cuMemMap */
	R_VMM_UNMAP,		/* ctx, va, size: cuMemUnmap */
	R_VMM_SET_ACCESS,	/* ctx, va, size, descriptors (u32 location
				   type, i32 id, u32 flags each):
				   cuMemSetAccess */
	R_VMM_GET_ACCESS,	/* ctx, location type, location id, va ->
				   flags: cuMemGetAccess */
	/* loads with JIT options */
	R_MODULE_LOAD_EX,	/* ctx, id, image (or empty: staged or
				   cached), library (0 or 1), JIT options
				   (as R_LINK_*) -> the driver's result,
				   function table, JIT outputs:
				   cuModuleLoadDataEx, cuLibraryLoadData */
	/* graph nodes (issue 24) */
	R_GRAPH_NODES,		/* graph -> listing: u32 nodes, each u64 the
				   server's handle and u32 type; u32 roots,
				   each u32 node index; u32 edges, each u32
				   from and u32 to index (the driver's
				   orders); then, where an edge carries data
				   (ports, a programmatic type), u32 edges
				   again and RPC_EDGE_LEN bytes each, else
				   u32 0 (an older server: nothing); then
				   u32 k and the parameters of k of its
				   kernel nodes, each u32 node index, u64
				   function id (the client's), grid[3],
				   block[3] and shmem as u32, u32 length
				   and the packed arguments, as
				   cuGraphKernelNodeGetParams answers them
				   (nodes it refuses are left out; an older
				   server: nothing), which the client keeps
				   with its nodes until they are set */
	R_GRAPH_ADD,		/* ctx (0 none), graph, node type, its
				   dependencies (u64 server handles), the
				   request of the call it stands for
				   (R_LAUNCH, R_MEMSET, R_MEM_3D on no
				   stream, R_EVENT_RECORD,
				   R_STREAM_WAIT_EVENT, R_HOST_FUNC,
				   R_STREAM_MEMOP on no stream; a child
				   graph: u64
				   its id; empty: nothing; a memory
				   allocation: RPC_SIG_MEMALLOC; a free:
				   u64 its address; a conditional:
				   RPC_SIG_COND) -> its handle */
	R_GRAPH_EDGES,		/* graph, add (1) or remove (0), pairs (u64
				   from, u64 to handles), edge data (none:
				   the default, or RPC_EDGE_LEN bytes a
				   pair) */
	R_GRAPH_NODE_DESTROY,	/* graph, node */
	R_KNODE_GET,		/* graph, kernel node -> function id (the
				   client's), grid[3], block[3], shmem,
				   packed arguments */
	R_KNODE_SET,		/* graph, exec (0: the graph's node), node,
				   R_LAUNCH request on no stream */
	R_NODE_GET,		/* graph, node -> its type, the request it
				   stands for as R_GRAPH_ADD takes it
				   (memset, copy, event, host, batch nodes; a
				   memory allocation: RPC_SIG_MEMALLOC with
				   its address; a free: u64 its address) */
	R_NODE_SET,		/* graph, exec (0: the graph's node), node,
				   node type, request as R_GRAPH_ADD's
				   (memset, copy, event, host, batch nodes; a
				   child graph: u64 the id of the graph
				   copied) */
	R_NODE_ENABLED,		/* exec, graph, node, set (1) or get (0),
				   enabled -> enabled */
	R_GRAPH_MEM,		/* device, op (0 trim, 1 get, 2 set
				   attribute), attribute, value -> value */
	R_NODE_FIND,		/* clone, original graph, node -> the node
				   of the clone that it is */
	/* arrays, mipmapped arrays, texture and surface objects (issue 24):
	   arrays are client ids, texture and surface objects the server's
	   driver's handles */
	R_ARRAY_CREATE,		/* ctx, id, width, height, depth, format,
				   channels, flags, levels (0: an array, else
				   a mipmapped array of that many levels) */
	R_ARRAY_DESTROY,	/* id, mipmapped */
	R_MIPMAP_LEVEL,		/* mipmapped array, level, id: the level's
				   array is known by id from here on ->
				   width, height, depth */
	R_ARRAY_MEMREQ,		/* id, mipmapped, device -> size, alignment */
	R_TEX_CREATE,		/* ctx, id, surface (0 texture, 1 surface),
				   resource (RPC_RES_LEN bytes), texture
				   (RPC_TEXD_LEN or empty), view
				   (RPC_VIEW_LEN or empty) -> the driver's
				   handle */
	R_TEX_DESTROY,		/* id, surface */
	/* device and context odds and ends (issue 24) */
	R_CTX_OP,		/* ctx, op, event (0 none), a, b: CTXOP_* */
	R_DEV_QUERY,		/* which, device, arguments -> answer:
				   DEVQ_* */
	/* host functions (issue 24) */
	R_HOST_FUNC,		/* ctx, stream, callback id: the client's
				   host function in stream order (captured:
				   a host node); when it is reached the
				   server sends the id in MSG_HOST */
	/* stream attributes and capture dependencies (issue 24) */
	R_STREAM_ATTR,		/* ctx, stream, op (SATTR_*), attribute,
				   source stream (a copy's), value (a set's:
				   the attribute's bytes, rpc_sattr_len)
				   -> value (a get's) */
	R_CAPTURE_TO_GRAPH,	/* ctx, stream, mode, graph, dependencies
				   (u64 server handles), edge data (empty,
				   or RPC_EDGE_LEN bytes each): capture into
				   that graph, after those nodes */
	R_CAPTURE_DEPS,		/* ctx, stream, op (CAPDEPS_*), nodes (u64
				   server handles), edge data (as
				   R_CAPTURE_TO_GRAPH's) -> the open ends
				   after it: u32 n, each u64 handle, u32
				   type, RPC_EDGE_LEN bytes of edge data */
	/* conditional nodes (issue 24) */
	R_COND_HANDLE,		/* ctx, graph, default value, flags -> the
				   driver's handle, which kernels are given
				   as an argument */
	R_CHILD_GRAPH,		/* graph, child graph node, id: the node's
				   own graph is known by that id from here
				   on, until the node or its graph goes */
	/* user objects (issue 24) */
	R_UOBJ_CREATE,		/* id: a user object holding one reference,
				   the client's; when its last reference
				   goes the server sends the id, with
				   UOBJ_NOTICE, in MSG_HOST */
	R_UOBJ_RELEASE,		/* id: the client's reference goes, and its
				   id with it */
	R_GRAPH_UOBJ,		/* graph, user object, count, retain (1) or
				   release (0): references the graph owns */
	/* kernel node attributes (issue 24) */
	R_KNODE_ATTR,		/* graph, kernel node, op (SATTR_*),
				   attribute, source graph and node (a
				   copy's), value (a set's: the attribute's
				   bytes, rpc_kattr_len) -> value (a get's) */
	/* green contexts (issue 24) */
	R_DEV_RESOURCE,		/* which (DEVRES_*), device, ctx, stream,
				   type -> the resource (RPC_DEVRES_LEN
				   bytes, the driver's CUdevResource) */
	R_SM_SPLIT,		/* op (SPLIT_*), groups, flags, minimum
				   count, input (a resource), group
				   parameters (a structured split's,
				   RPC_SMGROUP_LEN bytes each, or empty),
				   wanted (SPLIT_WANT_*) -> groups, the
				   results, the remainder (empty if not
				   wanted), group parameters (as the driver
				   left them) */
	R_RES_DESC,		/* id, resources (RPC_DEVRES_LEN bytes each):
				   a resource descriptor known by id until
				   the client goes */
	R_GREEN_CREATE,		/* ctx, descriptor, device, flags: a green
				   context, known by the id of its context
				   (cuCtxFromGreenCtx's) */
	R_GREEN_DESTROY,	/* ctx: a green context's; it goes, with its
				   context */
	R_GREEN_STREAM,		/* ctx (a green context's), id, flags,
				   priority: cuGreenCtxStreamCreate */
	/* texture and surface references, sparse arrays (issue 24) */
	R_TEXREF_NEW,		/* ctx, id, module (0: cuTexRefCreate),
				   surface (0 texture, 1 surface reference),
				   name (a module's, else empty): known by
				   id from here on */
	R_TEXREF_DESTROY,	/* id: cuTexRefDestroy, of a created one */
	R_TEXREF_SET,		/* id, op (TREF_*), index, a, b, data ->
				   byte offset (TREF_ADDRESS, else 0) */
	R_TEXREF_GET,		/* id, op (TREF_*), index -> a, b, data */
	R_ARRAY_SPARSE,		/* id, mipmapped -> tile width, height,
				   depth, miptail first level, miptail size,
				   flags: CUDA_ARRAY_SPARSE_PROPERTIES */
	R_MAP_ARRAY,		/* ctx, stream, map entries (RPC_MAPINFO_LEN
				   bytes each): cuMemMapArrayAsync */
	R_NODE_ID,		/* graph, node -> its local id (the number
				   cuGraphDebugDotPrint gives it), its tools
				   id */
	R_PTR_ATTR,		/* ctx, attribute (MAPPING_SIZE,
				   MAPPING_BASE_ADDR, RANGE_SIZE or
				   RANGE_START_ADDR; others are refused), an
				   address in the client's device memory ->
				   the driver's value: what only it knows,
				   the pieces it maps memory in and a VMM
				   range's reservation */
	R_MEM_ALLOC_HOST,	/* ctx, bytes -> dptr: page-locked memory of
				   the server's, mapped (cuMemHostAlloc's
				   DEVICEMAP and PORTABLE), the device side
				   of a small page-locked buffer of the
				   client's, which the GPU reaches in host
				   memory as it would locally; cuMemFree
				   frees it; a device-to-host copy from it
				   in a stream waits for the stream and is
				   answered from it, no copy on the GPU */
	R_CALL_END		/* one past the last */
};

#define RPC_NCALLS	(R_CALL_END - R_OPEN)
/*
 * A memory allocation node's request (R_GRAPH_ADD, R_NODE_GET): its
 * address (0 when added), bytes, allocation type, handle types, location
 * type and id, access descriptors (u32 location type, i32 id, u32 flags
 * each).
 */
#define RPC_SIG_MEMALLOC	"QQIIIiB"
#define RPC_MEMALLOC_ACCESS_MAX	64
/*
 * A conditional node's request (R_GRAPH_ADD): its condition's handle
 * (R_COND_HANDLE's), type (CUgraphConditionalNodeType), size, and the
 * client's ids for the body graphs the driver makes (u64 each, size of
 * them), known by those ids from then on until the node or its graph
 * goes.
 */
#define RPC_SIG_COND		"QIIB"
#define RPC_COND_MAX		1024	/* bodies of a switch */
#define RPC_MODEL_MAX	63	/* bytes of an R_MODEL name */
/*
 * The result of an R_MEM_HTOD_LANES or R_MEM_DTOH_LANES that a migrated
 * session's new server did not execute: its lanes stayed behind with the
 * old server, and the client sends the bytes again (gleam-protocol(5),
 * Migration).  No CUresult has this value.
 */
#define RPC_LANES_GONE	10000

/*
 * What a call does to memory, beside its wire format: the client's
 * transport, its mapped host memory (kept coherent by copies each way,
 * lib/client/mapped.c) and its statistics read these flags and keep no
 * lists of their own.  A new call that touches memory says so here.
 */
#define RPC_F_READS_DEV	0x01	/* reads device memory: host writes to
				   mapped memory go to the device first */
#define RPC_F_WRITES_DEV 0x02	/* may write device memory, a mapped
				   buffer's device side among it */
#define RPC_F_FROM_HOST	0x04	/* what it writes is the host's bytes (a
				   copy from the host, by value or by name):
				   host writes to mapped memory need not go
				   first */
#define RPC_F_DST_RANGE	0x08	/* writes only at field 3 (an address) for
				   field 4's bytes (a count, or a blob) */
#define RPC_F_WAITS	0x10	/* the host waits for the device's earlier
				   work: a synchronization, or a copy back
				   (the statistics count these) */
#define RPC_F_POLLS	0x20	/* the host may learn that the device's
				   earlier work is done (a query) */
#define RPC_F_TO_HOST	0x40	/* device bytes come back in the reply; the
				   caller brings mapped memory back with its
				   last piece */
#define RPC_F_NO_STREAM	0x80	/* no stream's work (the one-way
				   allocation's calls): a stream found idle
				   stays idle */

struct rpc_desc {
	uint16_t	 type;
	const char	*name;		/* for logs and statistics */
	const char	*req;		/* request signature */
	const char	*rep;		/* reply signature after the CUresult */
	unsigned	 flags;		/* RPC_F_* */
};

/* One decoded field. */
struct rpc_val {
	uint64_t	 u;		/* I, i (sign-extended), Q */
	const void	*p;		/* B, S: points into the payload */
	uint32_t	 len;		/* B, S */
};

/* The call's description, NULL for a type that is not a remoting call. */
const struct rpc_desc *rpc_lookup(uint16_t type);

/*
 * For a call that is work on one stream and on nothing else (a copy, a
 * memset, a launch, a graph's launch, an event's record or wait, a host
 * function, a batch of memory operations on a stream), the index of its
 * stream field (its context is field 0); -1 for any other call.
 */
int	rpc_stream_field(uint16_t type);

/*
 * Encodes fields by sig; each field takes one rpc_val (u for numbers, p and
 * len for B and S).  Returns -1 if the writer failed.
 */
int	rpc_pack(struct pw *, const char *sig, const struct rpc_val *);
/* The bytes rpc_pack would append (for a valid call). */
size_t	rpc_packed_size(const char *sig, const struct rpc_val *);
/*
 * Decodes exactly sig from the payload (trailing bytes are an error) into
 * v[], at most RPC_MAX_FIELDS.  Returns 0 or -1.
 */
int	rpc_unpack(const void *, size_t, const char *sig, struct rpc_val *);
/* Fields in a signature. */
int	rpc_nfields(const char *sig);

/*
 * R_OPEN's device list: u32 count, then per device a name (string), its
 * 16-byte UUID, total memory (u64), and u32 n followed by n attribute
 * values (u32 each, by CUdevice_attribute).
 */
#define RPC_DEV_ATTR_MAX	256
struct rpc_device {
	char		 name[256];
	uint8_t		 uuid[16];
	uint64_t	 totalmem;
	int32_t		 attr[RPC_DEV_ATTR_MAX];	/* missing ones are 0 */
};
void	rpc_devices_begin(struct pw *, uint32_t n);
void	rpc_device_enc(struct pw *, const char *name, const uint8_t uuid[16],
	    uint64_t totalmem, uint32_t nattr, const int32_t *attr);
/* Decodes the list into *out (malloc'd, *n entries); -1 if malformed. */
int	rpc_devices_dec(const void *, size_t, struct rpc_device **out,
	    uint32_t *n);

/*
 * A module's or library's function table: u32 count, then per function its
 * name (string), u32 n parameters with (u32 offset, u32 size) each, and
 * u32 m followed by m attribute values (u32 each, by CUfunction_attribute).
 */
#define RPC_FUNC_ATTR_MAX	64
#define RPC_PARAMS_MAX		4096
struct rpc_func {
	char		*name;
	uint32_t	 nparams;
	uint32_t	*offset, *size;
	uint32_t	 argbytes;	/* the end of the last parameter */
	int32_t		 attr[RPC_FUNC_ATTR_MAX];
};
void	rpc_ftab_begin(struct pw *, uint32_t n);
void	rpc_ftab_add(struct pw *, const char *name, uint32_t nparams,
	    const uint32_t *offset, const uint32_t *size, uint32_t nattr,
	    const int32_t *attr);
int	rpc_ftab_dec(const void *, size_t, struct rpc_func **out, uint32_t *n);
void	rpc_ftab_free(struct rpc_func *, uint32_t n);

/*
 * R_TMAP_ENCODE: the driver's tensor-map encoders, which write an opaque
 * 128-byte CUtensorMap in a format only the driver knows, so the server's
 * driver runs them.  "which" picks the encoder; the arguments blob holds,
 * little-endian, for
 *	TMAP_TILED	u32 data type, u32 rank (1..5), u64 global address,
 *			u64 globalDim[rank], u64 globalStrides[rank - 1],
 *			u32 boxDim[rank], u32 elementStrides[rank], u32
 *			interleave, swizzle, L2 promotion, OOB fill
 *	TMAP_IM2COL	u32 data type, u32 rank (3..5), u64 global address,
 *			u64 globalDim[rank], u64 globalStrides[rank - 1],
 *			i32 pixelBoxLowerCorner[rank - 2], i32
 *			pixelBoxUpperCorner[rank - 2], u32 channels per
 *			pixel, pixels per column, u32 elementStrides[rank],
 *			u32 interleave, swizzle, L2 promotion, OOB fill
 *	TMAP_IM2COL_WIDE as TMAP_IM2COL, with one i32 each for the lower and
 *			upper corner's width, and u32 mode after interleave
 *	TMAP_REPLACE	u64 global address (the map to change is the map
 *			field)
 * rpc_tmap_dec checks which, the rank and the exact length; the values
 * are the driver's to judge.
 */
#define TMAP_TILED		0
#define TMAP_IM2COL		1
#define TMAP_IM2COL_WIDE	2
#define TMAP_REPLACE		3
#define TMAP_BYTES		128	/* sizeof(CUtensorMap) */
#define TMAP_RANK_MAX		5
struct rpc_tmap {
	uint32_t	 which;
	uint32_t	 dtype, rank;
	uint64_t	 addr;
	uint64_t	 dim[TMAP_RANK_MAX];
	uint64_t	 stride[TMAP_RANK_MAX - 1];
	uint32_t	 box[TMAP_RANK_MAX];		/* tiled */
	uint32_t	 estride[TMAP_RANK_MAX];
	int32_t		 lower[TMAP_RANK_MAX - 2];	/* im2col: rank - 2, */
	int32_t		 upper[TMAP_RANK_MAX - 2];	/* wide: 1 */
	uint32_t	 channels, pixels;		/* im2col, wide */
	uint32_t	 interleave, mode, swizzle, l2, oobfill;
};
void	rpc_tmap_enc(struct pw *, const struct rpc_tmap *);
/*
 * Decodes the arguments of encoder which into *t (zeroed first, so that
 * entries past the rank are 0).  Returns 0, or -1 if malformed.
 */
int	rpc_tmap_dec(uint32_t which, const void *, size_t, struct rpc_tmap *);

/*
 * R_LINK_* and R_MODULE_LOAD_EX: JIT options go as (u32 option, u64
 * value) each.  A log buffer's value is not sent (the server keeps one
 * of the size its size option gives); options whose values point
 * elsewhere are refused.  The outputs, in the options' order: u64 value each (what the driver left
 * there), and after a log buffer's u32 length and its text.
 * R_STREAM_MEMOP: operations of RPC_MEMOP_LEN bytes.
 */
#define RPC_JIT_OPT_LEN		12
#define RPC_JIT_OPTS_MAX	64
#define RPC_JIT_LOG_MAX		(16u << 20)
#define RPC_MEMOP_LEN		24
#define RPC_MEMOPS_MAX		256

/*
 * R_TEX_CREATE's descriptors, fixed-length, little-endian, fields that
 * the resource type does not use 0.  Resource (CUDA_RESOURCE_DESC): u32
 * type, u32 flags, u64 array id, mipmapped array id or device pointer,
 * u32 format, u32 channels, u64 width (linear: bytes), u64 height, u64
 * pitch.  Texture (CUDA_TEXTURE_DESC): u32 address mode[3], filter mode,
 * flags, max anisotropy, mipmap filter mode, then the float bits of
 * mipmap level bias, min and max mipmap level clamp, border color[4].
 * View (CUDA_RESOURCE_VIEW_DESC): u32 format, u64 width, height, depth,
 * u32 first and last mipmap level, first and last layer.
 * R_MEM_3D's descriptor names an array side by CU_MEMORYTYPE_ARRAY and
 * the array's id in its pointer field.
 */
#define RPC_RES_LEN		48
#define RPC_TEXD_LEN		56
#define RPC_VIEW_LEN		44
struct rpc_res {
	uint32_t	 type, flags;
	uint64_t	 h;		/* array id, or device pointer */
	uint32_t	 format, channels;
	uint64_t	 width, height, pitch;
};
struct rpc_texd {
	uint32_t	 addr[3], filter, flags, aniso, mipfilter;
	uint32_t	 bias, minclamp, maxclamp, border[4];	/* float bits */
};
struct rpc_view {
	uint32_t	 format;
	uint64_t	 width, height, depth;
	uint32_t	 firstmip, lastmip, firstlayer, lastlayer;
};
void	rpc_res_enc(struct pw *, const struct rpc_res *);
void	rpc_texd_enc(struct pw *, const struct rpc_texd *);
void	rpc_view_enc(struct pw *, const struct rpc_view *);
/* Each 0, or -1 unless the blob has exactly its length. */
int	rpc_res_dec(const struct rpc_val *, struct rpc_res *);
int	rpc_texd_dec(const struct rpc_val *, struct rpc_texd *);
int	rpc_view_dec(const struct rpc_val *, struct rpc_view *);

/*
 * R_CTX_OP: what the context does, in stream order with the connection's
 * other work.
 *	CTXOP_RECORD	cuCtxRecordEvent(ctx, event)
 *	CTXOP_WAIT	cuCtxWaitEvent(ctx, event)
 *	CTXOP_RESET_L2	cuCtxResetPersistingL2Cache()
 *	CTXOP_FLUSH	cuFlushGPUDirectRDMAWrites(a target, b scope)
 *	CTXOP_GREEN_RECORD, CTXOP_GREEN_WAIT	cuGreenCtxRecordEvent and
 *			cuGreenCtxWaitEvent(the green context of ctx, event)
 * R_DEV_QUERY: device queries the client cannot answer from the device's
 * attributes; arguments and answers little-endian:
 *	DEVQ_TEX1D	u32 format, u32 channels -> u64 width in elements
 *			(cuDeviceGetTexture1DLinearMaxWidth)
 *	DEVQ_P2P_ATOMIC	i32 peer device, u32 operation each -> u32
 *			capabilities each (cuDeviceGetP2PAtomicCapabilities,
 *			the device the source)
 *	DEVQ_HOST_ATOMIC u32 operation each -> u32 capabilities each
 *			(cuDeviceGetHostAtomicCapabilities)
 */
#define CTXOP_RECORD		0
#define CTXOP_WAIT		1
#define CTXOP_RESET_L2		2
#define CTXOP_FLUSH		3
#define CTXOP_GREEN_RECORD	4	/* cuGreenCtxRecordEvent, ctx a green
					   context's */
#define CTXOP_GREEN_WAIT	5	/* cuGreenCtxWaitEvent */
#define DEVQ_TEX1D		0
#define DEVQ_P2P_ATOMIC		1
#define DEVQ_HOST_ATOMIC	2
#define RPC_ATOMIC_OPS_MAX	64

/*
 * R_STREAM_ATTR: what it does.  A value travels as the attribute's own
 * bytes (CUstreamAttrValue's member for it, little-endian), of the
 * length rpc_sattr_len gives; 0 there: not a stream attribute.
 */
#define SATTR_GET		0
#define SATTR_SET		1
#define SATTR_COPY		2
size_t	rpc_sattr_len(uint32_t attr);
/* R_KNODE_ATTR: the same, for kernel nodes' attributes. */
size_t	rpc_kattr_len(uint32_t attr);

/*
 * R_CAPTURE_DEPS: the capture's open ends read (CAPDEPS_GET, no nodes
 * sent), added to (CAPDEPS_ADD, cuStreamUpdateCaptureDependencies'
 * CU_STREAM_ADD_CAPTURE_DEPENDENCIES) or replaced (CAPDEPS_SET).  An
 * edge's data (CUgraphEdgeData): u8 from port, u8 to port, u8 type, 5
 * bytes 0.
 */
#define CAPDEPS_GET		0
#define CAPDEPS_ADD		1
#define CAPDEPS_SET		2
#define RPC_EDGE_LEN		8
#define RPC_CAPDEPS_MAX		4096

/*
 * Green contexts.  A CUdevResource travels whole, RPC_DEVRES_LEN bytes
 * as the driver wrote them (its opaque part is the driver's), and so do
 * a structured split's CU_DEV_SM_RESOURCE_GROUP_PARAMS (CUDA 13.1),
 * RPC_SMGROUP_LEN bytes each; at most RPC_DEVRES_MAX of either in a
 * call.  R_DEV_RESOURCE asks for the resources of a device
 * (DEVRES_DEVICE), a context (DEVRES_CTX), a green context (DEVRES_GREEN,
 * ctx its context's id) or a stream (DEVRES_STREAM, in ctx).  R_SM_SPLIT
 * is cuDevSmResourceSplitByCount (SPLIT_BY_COUNT: groups the size of the
 * result array) or cuDevSmResourceSplit (SPLIT_STRUCTURED, CUDA 13.1);
 * a result array or remainder the program did not give is not wanted,
 * and the driver is passed NULL for it.
 */
#define RPC_DEVRES_LEN		144	/* sizeof(CUdevResource) */
#define RPC_SMGROUP_LEN		64
#define RPC_DEVRES_MAX		1024
#define DEVRES_DEVICE		0
#define DEVRES_CTX		1
#define DEVRES_GREEN		2
#define DEVRES_STREAM		3
#define SPLIT_BY_COUNT		0
#define SPLIT_STRUCTURED	1
#define SPLIT_WANT_RESULT	1
#define SPLIT_WANT_REMAINDER	2

/*
 * R_TEXREF_SET and R_TEXREF_GET: what they set or read of a texture
 * reference (a surface reference has TREF_ARRAY only), in a and b, the
 * float bits of a float, unless said:
 *	TREF_ARRAY	a array id (get: the client's, 0 none), index
 *			(set) flags: cuTexRefSetArray, cuSurfRefSetArray
 *	TREF_MIPMAP	a mipmapped array id, index (set) flags
 *	TREF_ADDRESS	a device pointer, b bytes (set; the reply: the
 *			byte offset)
 *	TREF_ADDRESS2D	set only: a device pointer, b pitch, data u64
 *			width, u64 height, u32 format, u32 channels
 *	TREF_FORMAT	a format, b channels
 *	TREF_ADDRMODE	index dimension (0..2), a mode
 *	TREF_FILTER, TREF_MIPFILTER, TREF_ANISO, TREF_FLAGS	a
 *	TREF_BIAS	a
 *	TREF_CLAMP	a minimum, b maximum
 *	TREF_BORDER	data: 4 floats' bits (u32 each)
 */
#define TREF_ARRAY		0
#define TREF_MIPMAP		1
#define TREF_ADDRESS		2
#define TREF_ADDRESS2D		3
#define TREF_FORMAT		4
#define TREF_ADDRMODE		5
#define TREF_FILTER		6
#define TREF_MIPFILTER		7
#define TREF_BIAS		8
#define TREF_CLAMP		9
#define TREF_ANISO		10
#define TREF_BORDER		11
#define TREF_FLAGS		12
#define TREF_OPS		13
#define RPC_TREF2D_LEN		24
#define RPC_TREF_BORDER_LEN	16

/*
 * R_MAP_ARRAY's entries (CUarrayMapInfo), little-endian: u32 resource
 * type, u64 array or mipmapped array id, u32 subresource type, u32
 * level, layer, offset x, y, z, extent width, height, depth (a sparse
 * level's), u32 layer, u64 offset, u64 size (a miptail's), u32 memory
 * operation type, u32 memory handle type, u64 memory handle (the
 * client's VMM id, R_VMM_CREATE; 0 for an unmap), u64 offset, u32 device
 * bit mask, u32 flags.
 */
#define RPC_MAPINFO_LEN		100
#define RPC_MAPINFO_MAX		1024
struct rpc_mapinfo {
	uint32_t	 restype;
	uint64_t	 res;
	uint32_t	 subtype;
	uint32_t	 level, layer, x, y, z, w, h, d;
	uint32_t	 tlayer;
	uint64_t	 toffset, tsize;
	uint32_t	 memop, memtype;
	uint64_t	 mem, offset;
	uint32_t	 devmask, flags;
};
void	rpc_mapinfo_enc(struct pw *, const struct rpc_mapinfo *);
/* Entry i of the blob v: 0, or -1 if the blob is not whole entries. */
int	rpc_mapinfo_dec(const struct rpc_val *v, uint32_t i,
	    struct rpc_mapinfo *);

#endif
