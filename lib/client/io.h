/*
 * The transport (io.c): one connection to gleam-serve shared by all
 * threads, an I/O thread that owns its socket, and a send queue in which
 * calls from many threads coalesce.  It knows frames, replies and errors,
 * never memory: the layer above (call.c, mapped.c) reads the call
 * table's flags and acts through the hook.
 */
#ifndef GLEAM_CLIENT_IO_H
#define GLEAM_CLIENT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "rpc.h"

struct auth_key;
struct chan;

/*
 * Connects to host:port (with kp's key, if any), reads GLEAM_SPIN,
 * GLEAM_SYNC and GLEAM_ZSTD and starts the I/O thread.  Logs why not.
 */
CUresult	 io_start(const char *host, int port, const struct auth_key *kp);
/* The server as "address:port", and its name from the handshake. */
const char	*io_peer(void);
const char	*io_server_name(void);
/*
 * Called by rsend before each call is queued, in the caller's thread: the
 * memory layer's own calls (mapped.c) before the work that needs them.
 */
void		 io_hook(void (*)(uint16_t, const struct rpc_val *));

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
	/* Set by rsend: the read-ahead window's epoch after it (rahead_ok). */
	uint64_t	 epoch;
	/* Set by rsend: when it was queued (the round trip's start). */
	uint64_t	 tq;
	/* Set by the I/O thread: host-function notices received before
	 * the reply (hostcb_mark). */
	uint64_t	 hmark;
	/* Set by the I/O thread: the REDIRECTs followed before the reply,
	 * so which server of a moving session answered (lanes.c). */
	unsigned	 moves;
	struct rwait	*next;
};
/* rsend's flags. */
#define RP_BULK		0x1	/* a bulk payload: compress where it pays */
#define RP_KEEPIDLE	0x2	/* cannot fail for its arguments: see idle_keep */
#define RP_NOWORK	0x4	/* no stream's work, not the program's (a mapped
				   block fetched): any idle stream stays so */
#define RP_EVLOCAL	0x8	/* an event record whose event no other process
				   records: its completion may be known here */
#define RP_AHEAD	0x10	/* a read ahead (readahead.c): opens its window,
				   see rahead_ok */
/* Set in the I/O thread: a fault there cannot wait for a remote call. */
extern __thread int io_self __attribute__((tls_model("initial-exec")));
/*
 * Queues a call.  With w, its reply is expected and rwait(w) collects it
 * (calls may be sent ahead several at a time); without, the call is
 * one-way: the server answers only an error, which a later call that
 * waits returns.  The hook, if set, sees every call before it is queued.
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
/* At exit: the queue drained (bounded), BYE where resumable. */
void		 io_drain_at_exit(void);
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
/*
 * Events whose completion is known here: recorded (RP_EVLOCAL) on a
 * stream idle at the time, or on one that ridle_set later finds idle as
 * of a mark past the record.  A wait on such an event leaves the waiting
 * stream's idle mark; ridle_event_done says whether event ev is one (a
 * synchronization or query of it may then be answered here, under
 * ridle_check's conditions).
 */
int		 ridle_event_done(uint64_t ev);
/*
 * A read ahead (readahead.c), sent with RP_AHEAD, its reply at queue
 * position q, the window's epoch then: do its bytes still hold for a copy
 * on stream sid of ctx?  Where nothing queued since may have written
 * device memory or told the program of writes made elsewhere (the window
 * held: the same epoch), and the stream was idle as of q and still is:
 * the copy would read the bytes the read ahead read.
 */
int		 rahead_ok(uint64_t ctx, uint64_t sid, uint64_t epoch,
		    uint64_t q);
/* Event ev's completion is no longer to be known here (a graph's). */
void		 ridle_event_forget(uint64_t ev);
/* Are the other streams a synchronization's reply names idle taken as
 * idle (GLEAM_IDLE_STREAMS, default 1)? */
int		 ridle_others(void);
/* Those streams, decoded (call.c): context and stream ids, the first
 * IDLE_PAIRS_MAX (the server names no more than it lists, 64). */
#define IDLE_PAIRS_MAX	64
struct idle_pairs {
	uint32_t	 n;
	uint64_t	 ctx[IDLE_PAIRS_MAX], sid[IDLE_PAIRS_MAX];
};
/* GLEAM_SYNC=1: every call waits for its reply. */
int		 rsync_mode(void);
/* For lanes.c: the main connection's socket, whether waits spin, whether
 * compression is forced on, and marking the server lost. */
int		 rconn_fd(void);
int		 rspin_ok(void);
int		 rzstd_forced(void);
void		 rlost_because(const char *why);
/*
 * The main connection's records (chan.h), for bulk lanes' keys
 * (chan_init_lane); constant once io_start succeeded.
 */
struct chan;
const struct chan *io_chan(void);
/* WELCOME's features (FEAT_*), constant once io_start succeeded. */
uint32_t	 io_features(void);
/*
 * Whether the session survives a dropped link (GLEAM_RESUME, granted by
 * the server), and for bulk lanes, which then come back too: the window
 * in ns, the session's id, whether the server is lost for good, and the
 * socket options that notice a link that went silent.
 */
int		 io_resumable(void);
/*
 * Bytes queued and not yet sent (their headers too): how far behind the
 * program's posting the link is (progress.c).
 */
uint64_t	 io_backlog(void);
uint64_t	 io_resume_ns(void);
uint64_t	 io_session(void);
int		 io_gone(void);
void		 io_lane_socket(int fd);
/* The largest payload one frame may carry to the server. */
size_t		 io_max_payload(void);
/*
 * Messages this process has sent the server so far: where it has not
 * moved, nothing the process asked for has changed anything there.
 */
uint64_t	 io_sent_count(void);

#endif
