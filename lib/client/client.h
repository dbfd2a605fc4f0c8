/*
 * The client library's internal API: what its modules share.  The
 * remoting half holds one connection to gleam-serve (io.h), the objects
 * the program created, and the calls that forward to the server, which
 * answer through rpc.h's call table.  lib/client/README says how to add
 * a remoted call.
 *
 * Objects the program holds (contexts, modules, functions, streams,
 * events) are client structs whose address is both the handle the program
 * sees and the id the server knows them by, so creating one needs no
 * server-chosen value.
 */
#ifndef GLEAM_CLIENT_CLIENT_H
#define GLEAM_CLIENT_CLIENT_H

#include <pthread.h>
#include <stdint.h>

#include "driver.h"
#include "rpc.h"

#define GOBJ_MAGIC	0x676c6d6fu	/* "glmo" */

enum gobj_kind {
	GK_CTX = 1, GK_MODULE, GK_FUNC, GK_LIBRARY, GK_KERNEL, GK_STREAM,
	GK_EVENT, GK_GRAPH, GK_GEXEC, GK_LINK, GK_GNODE, GK_ARRAY, GK_MIPMAP,
	GK_UOBJ, GK_GREEN, GK_RESDESC, GK_TEXREF, GK_SURFREF
};

struct gobj {
	uint32_t	 magic;
	uint32_t	 kind;		/* enum gobj_kind */
};

struct ggreen;
struct gctx {
	struct gobj	 o;
	int		 device;
	int		 primary;
	unsigned	 flags;
	int		 refs;		/* primary: retain count */
	int		 live;		/* the server holds a context for it */
	uint64_t	 life;		/* which of its lives on the server:
					   per-thread streams belong to one */
	CUresult	 sticky;	/* a fault that ends the context's use */
	struct cpool	*pool;		/* one-way allocation (pool.c) */
	struct ggreen	*green;		/* the green context this one is
					   (cuCtxFromGreenCtx, green.c) */
};

/* A function's description: an entry of the server's function table. */
#define gfinfo rpc_func

struct gmodule {
	struct gobj	 o;
	struct gctx	*ctx;
	uint32_t	 nfunc;
	struct gfinfo	*funcs;
	int		 library;	/* a CUlibrary rather than a CUmodule */
	void		**enumed;	/* handles enumerated, by table index */
	struct gmodule	*lib;		/* a library's module: the library */
	struct gmodule	*mod;		/* a library: its module, once asked */
	struct gfunc	*made;		/* its functions, freed with it (next) */
	uint64_t	*globals;	/* its globals' addresses, in the
					   allocation registry while it lives */
	size_t		 nglobals;
};

struct gfunc {
	struct gobj	 o;
	struct gmodule	*mod;
	const struct gfinfo *fi;
	struct gfinfo	*own;		/* its entry, when the load's had none */
	uint32_t	 nown;
	struct gfunc	*asfunc;	/* a kernel: its function, once asked */
	struct gfunc	*askernel;	/* that function: its kernel */
	struct gfunc	*next;		/* mod's made, pushed atomically */
	struct glegacy	*legacy;	/* cuFuncSetBlockShape & co.
					   (legacy.c), made on first use */
};

/* The legacy launch state of f, made on first use (NULL: no memory). */
struct glegacy	*legacy_of(struct gfunc *f);
/* One id for a function, whichever of its handles names it (module.c). */
uint64_t	func_canon(const void *);

struct gcap;

struct gstream {
	struct gobj	 o;
	struct gctx	*ctx;
	unsigned	 flags;
	int		 priority;
	uint64_t	 seq;		/* its cuStreamGetId */
	struct gcap	*cap;		/* the capture it is in (graph.c) */
};

struct gevent {
	struct gobj	 o;
	struct gctx	*ctx;
	unsigned	 flags;
	uint64_t	 capseq;	/* the capture that last recorded it */
	int		 graphed;	/* a graph's node records or waits for
					   it: its completion never known
					   here (ridle_event_done) */
};

/*
 * Arrays and mipmapped arrays (array.c): the descriptor is kept, so that
 * descriptors and copies' bounds need no round trip.  el is the bytes of
 * an element, 0 for a format whose layout only the driver knows.  A
 * mipmapped array's levels are arrays it owns (made when first asked).
 */
struct gmipmap;
struct garray {
	struct gobj	 o;
	struct gctx	*ctx;
	CUDA_ARRAY3D_DESCRIPTOR d;
	unsigned	 el;
	struct gmipmap	*owner;		/* a level: its mipmapped array */
};
struct gmipmap {
	struct gobj	 o;
	struct gctx	*ctx;
	CUDA_ARRAY3D_DESCRIPTOR d;
	unsigned	 el, nlevels;
	struct garray	**level;	/* nlevels, NULL until asked */
};
/* Bytes of an element of format f with n channels; 0: the driver's own. */
unsigned	 array_elsize(CUarray_format f, unsigned n);
/*
 * texref.c: a module's texture (surf 0) or surface reference by name,
 * the same handle each time; the references of a module that goes.
 */
CUresult	 texref_module(void **out, void *mod, const char *name,
		    int surf);
void		 texref_forget(const void *mod);
/* An array's row in bytes, rows, and slices (1 where 0 in d). */
void		 array_extent(const struct garray *, size_t *wbytes,
		    size_t *rows, size_t *slices);

/*
 * Stream capture's rules, kept here so that most answers need no round
 * trip (graph.c).  capture_gate: a call the capture modes forbid from
 * this thread (an allocation, say) gets its error.  capture_work: work
 * for stream sid in c (host: a copy from or to host memory) gets the
 * error the driver gives during a capture (the legacy stream's while a
 * blocking stream captures), or one of ours for a host copy captured
 * (a graph's host pointer would be the client's).
 * capture_launch is capture_work for a kernel launch of function fn
 * (its canon id), which goes into the capture's trace (*caps: whether
 * stream sid captures); capture_klist
 * keeps a launch's request (function id, geometry, arguments) for the
 * listing made at the capture's end (graph_listing_made; kind: 1 a plain
 * launch, 2 one with programmatic serialization, 0 one whose node no
 * listing made here can show);
 * capture_record and capture_wait follow events between streams (a wait on an event
 * recorded in a capture joins it); capture_special marks stream sid's
 * capture as holding a cooperative launch (graph.c: no one-way update of
 * its graph); capture_saw takes a call's answer
 * (a capture error spoils the captures of c); capture_busy says whether
 * stream sid captures, capture_any whether any stream does;
 * capture_forget drops a destroyed stream.
 */
CUresult	 capture_gate(void);
CUresult	 capture_work(struct gctx *c, uint64_t sid, int host);
CUresult	 capture_launch(struct gctx *c, uint64_t sid, uint64_t fn,
		    unsigned flags, const void *attrs, size_t alen,
		    int *caps);
void		 capture_klist(uint64_t sid, int kind, uint64_t fid,
		    const uint32_t geo[7], const void *args, uint32_t len);
void		 capture_record(struct gevent *, uint64_t sid);
void		 capture_special(uint64_t sid);
void		 capture_wait(struct gevent *, uint64_t sid);
void		 capture_saw(struct gctx *c, CUresult);
int		 capture_busy(uint64_t sid);
int		 capture_any(void);
void		 capture_forget(struct gstream *);

/*
 * Host functions run here while the server runs the device's work
 * (hostcb.c).  hostcb_id: the callback id of (fn, data), the same for
 * the same pair, 0 if out of memory; hostcb_lookup: its pair, -1 if no
 * such id.  hostcb_post: a MSG_HOST payload from the I/O thread, its
 * callbacks queued for their thread; -1 if it does not decode.
 * hostcb_mark: notices received so far; hostcb_wait: returns once that
 * many callbacks have returned (at once on their own thread).
 * hostcb_inside: the calling thread is running a callback.
 */
uint64_t	 hostcb_id(CUhostFn fn, void *data);
int		 hostcb_lookup(uint64_t id, CUhostFn *fn, void **data);
int		 hostcb_post(const void *, size_t);
uint64_t	 hostcb_mark(void);
void		 hostcb_wait(uint64_t mark);
int		 hostcb_inside(void);
/* uobj.c: the server's user object id went; its destructor runs. */
void		 uobj_gone(uint64_t id);

/* A handle's object if it is one of ours of that kind, else NULL. */
void		*gobj_check(const void *, int kind);
/*
 * Marks a new object valid, once all its fields are set.  Programs pass
 * handles between threads through code of their own (cudart's caches);
 * the release here and the acquire in gobj_check order the fields'
 * writes before any other thread's use.
 */
void		 gobj_publish(void *);
uint64_t	 gobj_id(const void *);

/* CUDA_SUCCESS once cuInit(0) has succeeded, else why it has not. */
CUresult	 client_initialized(void);
/*
 * The checks every per-device query starts with (cuInit has succeeded,
 * out is not NULL, dev is in range), then *d, dev's description (hooks.h).
 */
struct client_device;
CUresult	 device_lookup(CUdevice dev, const void *out,
		    const struct client_device **d);

/*
 * The calls the modules make (call.c), above the transport (io.h).
 *
 * remote_call sends a call and waits for its reply.  in[] per the call's
 * request signature; on CUDA_SUCCESS out[] per its reply signature, with
 * blobs in *keep (malloc'd; the caller frees it, also on failure).  An
 * error that an earlier one-way call met is returned here if this call
 * itself succeeded.  A lost server fails every call from then on with
 * CUDA_ERROR_DEVICE_UNAVAILABLE.  Where the call's row says the host
 * waits for the device or polls it, mapped host memory comes back with
 * it.
 */
CUresult	 remote_call(uint16_t type, const struct rpc_val *in,
		    struct rpc_val *out, void **keep);
/*
 * A one-way call (stream-ordered work the client has validated): returns
 * once queued (flags: io.h's RP_*).  With GLEAM_SYNC=1 it waits for the
 * reply like remote_call.
 */
CUresult	 rpost(uint16_t type, const struct rpc_val *in, int flags);

/*
 * A fault that makes the context unusable (an illegal address, say): it is
 * the answer to every later call in that context until it is destroyed or
 * reset, as with the real driver, calls answered here included.
 */
int		 rc_sticky(CUresult);

/* Forgets the occupancy answers kept (a function's attributes changed). */
void		 occ_forget(void);

/*
 * A stream handle's id on the wire: 0 for NULL (2 in a _ptsz/_ptds call,
 * the per-thread stream), 1 for CU_STREAM_LEGACY, 2 for
 * CU_STREAM_PER_THREAD, else the stream's own id.
 */
CUresult	 stream_id(CUstream, int ptsz, uint64_t *id);
/* Is stream id (stream_id's) one of the program's, made non-blocking
 * (its work waits for no other stream's)? */
int		 stream_nonblocking(uint64_t id);

/* A new life number for a context the server has just made. */
uint64_t	 ctx_new_life(void);
/*
 * Ends context c on the server by call type: cudart's destructors run,
 * its pool goes.  ctx_unstack takes it off the calling thread's stack.
 */
CUresult	 ctx_end(struct gctx *c, uint16_t type);
void		 ctx_unstack(struct gctx *c);
/*
 * A new stream in c, made by call type (R_STREAM_CREATE, or
 * R_GREEN_STREAM for a green context's), one-way.
 */
CUresult	 stream_make(struct gctx *c, uint16_t type, unsigned flags,
		    int prio, CUstream *);
/*
 * The resource R_DEV_RESOURCE gives (green.c): which (DEVRES_*), the
 * device, context and stream ids that one names.
 */
CUresult	 green_resource(uint32_t which, int dev, uint64_t ctx,
		    uint64_t sid, CUdevResourceType type, CUdevResource *);

/* The calling thread's context, or the error to return; with
 * GLEAM_DEBUG=2, a thread without one is logged under the caller's name
 * (what cudart, cuBLAS or a framework asked without a context is
 * otherwise answered here, unseen). */
CUresult	 ctx_need_at(struct gctx **, const char *);
CUresult	 ctx_none(const char *);	/* logs, returns 201 */
struct gctx	*ctx_primary_live(int);	/* dev's primary if active (-1: any) */
/* The same, but a thread with no context of its own that names a stream
 * of one gets the stream's (work on a stream is done in its context). */
CUresult	 ctx_need_for(CUstream, struct gctx **, const char *);
#define ctx_need_stream(s, out)	ctx_need_for((s), (out), __func__)
#define ctx_need(out)	ctx_need_at((out), __func__)

/* JIT options (jit.c): encoded, noting each log buffer's size; a reply's
 * outputs written back into the program's arrays. */
struct pw;
struct rpc_val;
CUresult	 jit_enc(struct pw *, unsigned n, const CUjit_option *,
		    void **vals, size_t *logsz);
void		 jit_dec(const struct rpc_val *, unsigned n,
		    const CUjit_option *, void **vals, const size_t *logsz);
struct gctx	*ctx_current(void);

/*
 * The allocation registry (alloc.c): device memory the program allocated
 * and host memory it pinned, for unified copies and pointer queries with
 * no round trip.
 */
#define WR_MAX	8		/* written ranges kept per allocation */
struct wrange {
	uint64_t	 lo, hi;	/* offsets in the allocation, [lo, hi) */
};
struct alloc {
	uint64_t	 base, size;
	struct gctx	*ctx;
	int		 host;		/* pinned or registered host memory */
	unsigned	 flags;
	int		 nw;
	struct wrange	 w[WR_MAX];	/* what host-to-device copies wrote */
};
#define MEM_F_VMM	0x80000000u	/* flags of device memory: a cuMemMap
					   mapping (vmm.c), not cuMemFree's */
#define MEM_F_MANAGED	0x40000000u	/* cuMemAllocManaged's (mapped.c) */
#define MEM_F_NOSYNC	0x20000000u	/* SYNC_MEMOPS unset by
					   cuPointerSetAttribute */
#define MEM_F_SYNCOPS	0x08000000u	/* SYNC_MEMOPS set by it (the
					   driver's default: managed memory
					   alone) */
#define MEM_F_GLOBAL	0x10000000u	/* a module's global (module.c), not
					   cuMemFree's */
int		 mem_is_device(CUdeviceptr, size_t *base, size_t *size);
/* The memory pool an allocation (by its start) came from, or NULL
 * (mempool.c). */
CUmemoryPool	 mempool_of(CUdeviceptr base);
int		 mem_rewritten(CUdeviceptr, size_t);
/* host: 0 device memory, 1 pinned or mapped host memory, 2 registered
 * host memory.  mem_add returns -1 when out of memory. */
int		 mem_add(uint64_t base, uint64_t size, struct gctx *, int host,
		    unsigned flags);
int		 mem_del(uint64_t base, int host);
/* The allocation holding p, copied to *out: 0, or -1 if none. */
int		 mem_lookup(uint64_t p, struct alloc *out);

/*
 * Statistics for gleam-run (stats.c, written at exit when GLEAM_STATS is
 * set): a call queued (one-way or not; one that waits for the device, by
 * its row's RPC_F_WAITS, counts as a synchronization), a call that waited
 * for its reply, bytes on the wire each way, bytes compression saved.
 */
void		 stats_call(uint16_t type, int oneway, int beside);
void		 stats_sync(uint16_t, uint64_t);
void		 stats_local_sync(void);
void		 stats_bytes(uint64_t out, uint64_t in);
void		 stats_batch(void);
void		 stats_saved(uint64_t);
void		 stats_mapped(uint64_t out, uint64_t in);
void		 stats_mapped_fetch(int prefetched, uint64_t n);
uint64_t	 mapped_faults(void);
void		 stats_lanes(unsigned n, uint64_t out, uint64_t in);
/* The link dropped; a resume ended (ok or not) after ns, resent bytes. */
void		 stats_drop(void);
void		 stats_arm(void);
void		 stats_at_exit(void);
void		 stats_migrated(void);
void		 stats_resume_end(uint64_t ns, uint64_t resent, int ok);
void		 stats_lane_drop(uint64_t resent);
/* Why the server could not be used or was lost: the first reason is kept. */
void		 stats_error(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));

#endif
