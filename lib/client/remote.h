/*
 * The remoting half of the client library: one connection to gleam-serve,
 * the objects the program created, and the calls that forward to the
 * server.  Everything here answers through rpc.h's call table.
 *
 * Objects the program holds (contexts, modules, functions, streams,
 * events) are client structs whose address is both the handle the program
 * sees and the id the server knows them by, so creating one needs no
 * server-chosen value.
 */
#ifndef GLEAM_CLIENT_REMOTE_H
#define GLEAM_CLIENT_REMOTE_H

#include <pthread.h>
#include <stdint.h>

#include "driver.h"
#include "rpc.h"

#define GOBJ_MAGIC	0x676c6d6fu	/* "glmo" */

enum gobj_kind {
	GK_CTX = 1, GK_MODULE, GK_FUNC, GK_LIBRARY, GK_KERNEL, GK_STREAM,
	GK_EVENT
};

struct gobj {
	uint32_t	 magic;
	uint32_t	 kind;		/* enum gobj_kind */
};

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
	struct cpool	*pool;		/* one-way allocation (mem.c) */
};

/* A function's description: an entry of the server's function table. */
#define gfinfo rpc_func

struct gmodule {
	struct gobj	 o;
	struct gctx	*ctx;
	uint32_t	 nfunc;
	struct gfinfo	*funcs;
	int		 library;	/* a CUlibrary rather than a CUmodule */
};

struct gfunc {
	struct gobj	 o;
	struct gmodule	*mod;
	const struct gfinfo *fi;
	struct gfinfo	*own;		/* its entry, when the load's had none */
	uint32_t	 nown;
};

struct gstream {
	struct gobj	 o;
	struct gctx	*ctx;
	unsigned	 flags;
	int		 priority;
};

struct gevent {
	struct gobj	 o;
	struct gctx	*ctx;
	unsigned	 flags;
};

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

/*
 * Sends a call and waits for its reply.  in[] per the call's request
 * signature; on CUDA_SUCCESS out[] per its reply signature, with blobs in
 * *keep (malloc'd; the caller frees it, also on failure).  An error that an
 * earlier one-way call met is returned here if this call itself succeeded.
 * A lost server fails every call from then on with
 * CUDA_ERROR_DEVICE_UNAVAILABLE.
 */
CUresult	 rcall(uint16_t type, const struct rpc_val *in,
		    struct rpc_val *out, void **keep);

/* A call sent ahead whose reply is collected later by rwait(). */
struct rwait {
	uint64_t	 id;
	uint16_t	 type;
	int		 done;
	uint8_t		*buf;		/* the reply's payload */
	uint32_t	 len;
	/*
	 * Set before rsend (zero the whole struct first): where the reply's
	 * one blob goes if it has exactly dstlen bytes (a device-to-host
	 * copy), saving a copy.  NULL: the reply is kept as it came.
	 */
	void		*dst;
	size_t		 dstlen;
	int		 direct;	/* it went there */
	int		 filling;	/* the I/O thread is writing it there */
	int		 detached;	/* nobody waits: see rsend_detached */
	/* Set before rsend: sent with another call, not a round trip of its
	 * own (a mapped buffer's pull beside a synchronization). */
	int		 beside;
	/* Set before rsend: a call sent ahead of need (names, stock): its
	 * reply's result is its own, an earlier one-way call's error stays
	 * for the next call, and it counts as a round trip only if rwait
	 * had to wait for it. */
	int		 ahead;
	/* Set by rsend: the send queue's count of bytes before and after
	 * the call was queued (see ridle_set). */
	uint64_t	 qstart, qend;
	struct rwait	*next;
};
/* rsend's flags. */
#define RP_BULK		0x1	/* a bulk payload: compress where it pays */
#define RP_KEEPIDLE	0x2	/* cannot fail for its arguments: see idle_keep */
/*
 * Queues a call.  With w, its reply is expected and rwait(w) collects it
 * (calls may be sent ahead several at a time); without, the call is
 * one-way: the server answers only an error, which a later rcall/rwait
 * returns.
 */
CUresult	 rsend(uint16_t type, const struct rpc_val *in, int flags,
		    struct rwait *w);
CUresult	 rwait(struct rwait *, struct rpc_val *out, void **keep);
/*
 * A call whose one-blob reply of len bytes goes to dst when it comes, with
 * nobody waiting (a device-to-host copy into pinned memory, in stream
 * order): an error is kept for the next call that waits, as for one-way
 * calls.  rdrain_detached() waits until every such reply has landed (before
 * pinned memory is freed).
 */
CUresult	 rsend_detached(uint16_t type, const struct rpc_val *in,
		    void *dst, size_t len);
void		 rdrain_detached(void);
/*
 * A one-way call (stream-ordered work the client has validated): returns
 * once queued.  With GLEAM_SYNC=1 it waits for the reply like rcall.
 */
CUresult	 rpost(uint16_t type, const struct rpc_val *in, int flags);
/*
 * Mapped host memory (mem.c): its host side to the device before work
 * that may read it, its device side back after the host waited.
 */
void		 client_mapped_push(void);
/*
 * The pull, sent beside a call that waits (after it, in the same send) and
 * collected after it: begin returns 1 if it sent requests, which end then
 * collects (writing them to the host only if ok) and reports in *qend the
 * queue position after the last of them, or 0 if another call came between
 * (see ridle_set).  Nothing is pulled if no device work that could have
 * written a mapped buffer was sent since the last pull.
 */
#define MAPPED_N	64		/* mapped buffers at most */
struct mpull {
	struct rwait	 w[MAPPED_N];
	int		 idx[MAPPED_N];
	int		 n;
	uint64_t	 gen;
};
int		 client_mapped_pull_begin(struct mpull *);
void		 client_mapped_pull_end(struct mpull *, int ok,
		    uint64_t qstart, uint64_t *qend);
/* rsend tells mem.c of device work that may write a mapped buffer. */
void		 client_mapped_touch(uint16_t type, const struct rpc_val *in);
/*
 * Idle streams.  ridle_set records that stream sid of context ctx
 * (RIDLE_ALL: all of its streams) had finished everything sent before the
 * send queue held mark bytes; ridle_check says whether that still holds,
 * nothing having been queued since, no error waiting to be reported and
 * the connection up: a synchronization of that stream may then be answered
 * here.
 */
#define RIDLE_ALL	UINT64_MAX
void		 ridle_set(uint64_t ctx, uint64_t sid, uint64_t mark);
int		 ridle_check(uint64_t ctx, uint64_t sid);
/* GLEAM_SYNC=1: every call waits for its reply. */
int		 rsync_mode(void);
/* For lanes.c: the main connection's socket, whether waits spin, whether
 * compression is forced on, and marking the server lost. */
int		 rconn_fd(void);
int		 rspin_ok(void);
int		 rzstd_forced(void);
void		 rlost_because(const char *why);
/* The largest payload one frame may carry to the server. */
size_t		 rcall_max_payload(void);

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

/* A new life number for a context the server has just made. */
uint64_t	 ctx_new_life(void);

/* The calling thread's context, or the error to return. */
CUresult	 ctx_need(struct gctx **);
struct gctx	*ctx_current(void);

/* Device memory the program allocated, for unified copies and queries. */
int		 mem_is_device(CUdeviceptr, size_t *base, size_t *size);
int		 mem_rewritten(CUdeviceptr, size_t);
void		 mem_pool_drop(struct gctx *);
/* A context is up on the server: its pool's head start (mem.c). */
void		 mem_pool_start(struct gctx *);

/*
 * Statistics for gleam-run (written at exit when GLEAM_STATS is set): a
 * call queued (one-way or not), a call that waited for its reply, bytes on
 * the wire each way, bytes compression saved.
 */
void		 stats_call(uint16_t type, int oneway, int beside);
void		 stats_sync(uint16_t, uint64_t);
void		 stats_local_sync(void);
void		 stats_bytes(uint64_t out, uint64_t in);
void		 stats_saved(uint64_t);
void		 stats_lanes(unsigned n, uint64_t out, uint64_t in);

#endif
