/*
 * What executes remoted CUDA calls: a backend.  "cuda" runs them on the
 * real GPUs through the real driver; "host" runs them in host memory with
 * host implementations of kernels (for machines without a GPU).
 *
 * A remoting client is served on its own thread (remote.c), which decodes
 * each call and hands it to the backend's function for that call.  The
 * backend's per-client state is created when the client opens and freed,
 * with every GPU resource the client still holds, when it goes away.
 */
#ifndef SERVE_BACKEND_H
#define SERVE_BACKEND_H

#include <stdint.h>

#include "htab.h"
#include "proto.h"
#include "rpc.h"

/* Kinds of the objects a client names by id. */
enum robj_kind {
	RK_CTX = 1,
	RK_MODULE,
	RK_FUNC,
	RK_LIBRARY,
	RK_KERNEL,
	RK_STREAM,
	RK_EVENT,
	RK_GRAPH,		/* graphs (issue 24) */
	RK_GEXEC,
	RK_LINK,			/* a JIT link state (R_LINK_*) */
	RK_ARRAY,		/* arrays; a mipmapped array's levels have
				   it as parent */
	RK_MIPMAP,
	RK_TEX,			/* texture and surface objects, known by
				   the handle the backend gave */
	RK_SURF,
	RK_UOBJ,		/* user objects: the client's reference */
	RK_RESDESC,		/* resource descriptors (green contexts) */
	RK_TEXREF,		/* texture references: a module's (its
				   parent) or created */
	RK_SURFREF		/* surface references: a module's */
};

/* A global a client looked up, kept for migration (cuda backend). */
struct rglobal {
	struct rglobal	*next;
	uint64_t	 ctx;		/* the client's id of its context */
	uint64_t	 base, size;	/* what the client was told */
	char		 name[];
};

/* An attribute a client set on a function or kernel (cuda backend). */
struct rattr {
	int32_t		 attr, value;
};

/* An object a client created, in the client's id table. */
struct robj {
	uint64_t	 id;		/* the client's */
	int		 kind;		/* enum robj_kind */
	void		*h;		/* the backend's handle */
	struct robj	*ctx;		/* owning context, if any */
	struct robj	*parent;	/* module or library of a function */
	int		 refs;		/* primary contexts: retain count */
	int		 device;
	uint32_t	 nparams;	/* functions and kernels */
	uint32_t	*offset, *size;
	uint32_t	 argbytes;	/* bytes of the packed parameters */
	struct rpool	*pool;		/* contexts: one-way allocation (pool.h) */
	void		*cap;		/* streams: the graph capturing them
					   (host backend); graphs: nonzero while
					   a capture builds them */
	uint8_t		*img;		/* modules and libraries: the image,
					   kept for migration (migrate.h) */
	size_t		 imglen;
	/* What the cuda backend keeps to recreate the object elsewhere. */
	uint32_t	 flags;		/* contexts, streams, events: as
					   created */
	int32_t		 prio;		/* streams: priority */
	int		 recorded;	/* events: recorded at least once */
	struct rglobal	*globals;	/* modules, libraries: looked up */
	struct rattr	*attrs;		/* functions, kernels: set, the
					   last value of each */
	uint32_t	 nattrs;
	int32_t		 cache;		/* functions, kernels: the cache
					   configuration set, + 1; 0 none */
	uint8_t		*sattr;		/* streams (host backend): attribute
					   values set, SATTR_SLOT bytes each
					   by attribute, SATTR_IDS of them */
	int		 capto;		/* graphs (cuda backend): captured
					   into by cuStreamBeginCaptureToGraph,
					   the program's when it ends */
	uint64_t	 node;		/* graphs: a conditional node's body
					   (parent: the node's graph), that
					   node's handle */
	void		*green;		/* contexts: the green context this
					   one is (cuCtxFromGreenCtx's), the
					   backend's to free */
	int		 listed;	/* streams: in rclient.streams */
	int		 touched;	/* streams: named by a call since a
					   synchronization found them idle */
};
#define SATTR_SLOT	32
#define SATTR_IDS	17

/* A device memory range the client may name in copies and memsets. */
struct rrange {
	uint64_t	 base, size;
	int		 global;	/* a module's global: not freed by cuMemFree */
	const void	*owner;		/* the context it lives in */
};

/* One client's state, as the backend sees it. */
#define RSTREAMS_MAX	64

struct rclient {
	struct htab	 objs;		/* id -> struct robj */
	struct rrange	*ranges;	/* sorted by base */
	size_t		 nranges, rcap;
	void		*be;		/* the backend's own state */
	char		 addr[64];
	char		 name[PROTO_NAME_MAX + 1];
	struct vmm	*vmm;		/* cuMemAddressReserve & co. (vmm.h) */
	struct rhostq	*hq;		/* host functions reached (remote.c) */
	/*
	 * The streams calls have named, in the order of their first (ids;
	 * rclient_touch, idle_report); over: more than fit, and none is
	 * reported idle again.
	 */
	uint64_t	 streams[RSTREAMS_MAX];
	uint32_t	 nstreams;
	int		 streams_over;
};

/* One call in progress. */
struct rcall {
	struct rclient		*cl;
	const struct rpc_desc	*d;
	struct rpc_val		 in[RPC_MAX_FIELDS];
	struct rpc_val		 out[RPC_MAX_FIELDS];
	void			*scratch;	/* freed after the reply */
	struct pw		 blob;		/* a reply blob being built */
	/* Set by the caller: where R_MEM_DTOH's bytes land (page-locked
	 * where the backend pins), instead of memory of the backend's. */
	void			*into;
	/* A one-way call (FL_ONEWAY): no reply but an error's, so that a
	 * call whose failure is a reply field (cuGraphExecUpdate's
	 * result) returns it as its CUresult. */
	int			 oneway;
};

/* Returns a CUresult; on success fills c->out per the reply signature. */
typedef int (*backend_fn)(struct rcall *);

struct backend {
	const char	*name;
	/* Once at start; -1 with a reason if this backend cannot run here. */
	int		(*init)(char *err, size_t errlen);
	/* R_OPEN's reply: the driver version and the devices (blob format
	 * in gleam-protocol(5)). */
	int		(*describe)(struct pw *devices, uint32_t *ndev,
			    uint32_t *version);
	int		(*client_new)(struct rclient *);
	/* Frees everything the client still holds. */
	void		(*client_free)(struct rclient *);
	/* Each entry runs check_call before the backend's own code, by
	 * check_dispatch (check.h): a backend checks only its state. */
	backend_fn	 call[RPC_NCALLS];
	/*
	 * The weight cache's GPU tier (gleam-serve/wcache.c), where the
	 * backend has one (else NULL).  c is an R_CACHE_HTOD call (ctx,
	 * stream, async, dptr).  gpu_keep copies len bytes of p into memory
	 * of the server's own on the device of c's context, and says which
	 * device and where; gpu_copy copies a kept entry to c's dptr on the
	 * device (done before it returns); gpu_free frees a kept entry.
	 * Each returns a CUresult.
	 */
	int		(*gpu_keep)(struct rcall *c, const void *p, size_t len,
			    int *device, uint64_t *kept);
	int		(*gpu_copy)(struct rcall *c, int device, uint64_t kept,
			    size_t len);
	void		(*gpu_free)(int device, uint64_t kept);
	/*
	 * The same tier under isolation: process, where entries outlive the
	 * worker that made them: gpu_export copies len bytes of p into new
	 * device memory on the device of c's context, exported as a file
	 * descriptor (*fd, the caller's to close; the memory lives while a
	 * copy of it is open), of *asize bytes (len rounded up to the
	 * allocation granule), on *device.  gpu_import copies len bytes of
	 * such memory to c's dptr, done before it returns;
	 * CUDA_ERROR_INVALID_DEVICE if c's context is on another device.
	 * ctx_device: the device of c's context (in[0]), or -1.
	 */
	int		(*gpu_export)(struct rcall *c, const void *p,
			    size_t len, int *device, int *fd, uint64_t *asize);
	int		(*gpu_import)(struct rcall *c, int device, int fd,
			    uint64_t asize, size_t len);
	int		(*ctx_device)(struct rcall *c);
	/*
	 * Page-locks the serving thread's input buffer [p, p + len), or
	 * the lanes' buffer (lanes.c): two buffers at a time, where the
	 * backend has such a thing (else NULL), so that copies from them
	 * go by DMA.  host_pin returns 0 once it is pinned
	 * (cheap when it already is), 1 when it cannot be yet (no context:
	 * ask again after the next call), -1 when it never will be.  The
	 * buffer is not moved or freed while pinned: host_unpin first.
	 * client_free unpins it.
	 */
	int		(*host_pin)(struct rclient *, void *p, size_t len);
	void		(*host_unpin)(struct rclient *, void *p);
	/*
	 * Migration (migrate.h), NULL where the backend cannot move a
	 * client.  mig_save waits for the client's work to finish, then
	 * appends its live objects to w (gleam-protocol(5), Migration); -1
	 * with why if it holds something that cannot move yet.  mig_load
	 * recreates them in a client fresh from client_new, each object
	 * under its id and each allocation at its device address (contents
	 * follow by mig_write); -1 with why, leaving what client_free
	 * frees.  mig_read gives n bytes of the client's memory at addr:
	 * where they lie if the server can read them there, else copied
	 * into buf; NULL on failure.  mig_write copies into its memory.
	 * Both stay inside the client's ranges (the caller checks).
	 */
	int		(*mig_save)(struct rclient *, struct pw *w, char *why,
			    size_t whylen);
	int		(*mig_load)(struct rclient *, struct pr *r, char *why,
			    size_t whylen);
	const void	*(*mig_read)(struct rclient *, uint64_t addr,
			    void *buf, size_t n);
	int		(*mig_write)(struct rclient *, uint64_t addr,
			    const void *p, size_t n);
};

extern const struct backend backend_cuda;
extern const struct backend backend_host;

/* Object table helpers for backends. */
struct robj	*robj_get(struct rclient *, uint64_t id, int kind);
/* The client's id of the object of kind whose driver handle is h, else 0. */
uint64_t	 robj_id_of(struct rclient *, const void *h, int kind);
struct robj	*robj_new(struct rclient *, uint64_t id, int kind, void *h);
void		 robj_del(struct rclient *, uint64_t id);
/*
 * Forgets the levels asked of mipmapped array mm (its RK_ARRAY children):
 * each backend frees them with the mipmapped array.
 */
void		 robj_levels_del(struct rclient *, struct robj *mm);
void		 robj_free(struct robj *);
/*
 * The client's memory: ranges it allocated or was given (globals).  Every
 * pointer in a copy or memset is checked, so that no client reaches
 * another's memory through the driver's unified addressing.
 */
int		 rmem_add(struct rclient *, uint64_t base, uint64_t size,
		    int global, const void *owner);
/* Drops every range of owner (a context that is gone). */
void		 rmem_drop(struct rclient *, const void *owner);
/* Removes the allocation at base; -1 if there is none (an invalid free). */
int		 rmem_del(struct rclient *, uint64_t base);
/* 0 if [ptr, ptr+len) lies inside one range of the client's. */
int		 rmem_check(const struct rclient *, uint64_t ptr, uint64_t len);
/* The client's range holding ptr: 0 with its base and size, else -1. */
int		 rmem_range(const struct rclient *, uint64_t ptr,
		    uint64_t *base, uint64_t *size);
/*
 * A host function of the client's (R_HOST_FUNC, a host node) was reached:
 * its callback id goes to the client in MSG_HOST, ahead of the serving
 * thread's next reply or as soon as that thread is idle.  From any thread
 * (the driver's own, for the cuda backend); it never waits for the
 * client.  Nothing happens where cl has no queue (tests).
 */
void		 rclient_host_note(struct rclient *, uint64_t id);
/* Copies a string field into a NUL-terminated buffer; -1 if too long. */
int		 rval_str(const struct rpc_val *, char *, size_t);

/* The function table blob of a module or library (gleam-protocol(5)). */
void		 ftab_begin(struct pw *, uint32_t n);
void		 ftab_add(struct pw *, const char *name, uint32_t nparams,
		    const uint32_t *offset, const uint32_t *size,
		    uint32_t nattr, const int32_t *attr);

#endif
