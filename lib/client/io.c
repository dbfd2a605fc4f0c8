/*
 * The transport: the connection to gleam-serve, its I/O thread and its
 * send queue (io.h).
 *
 * Contract: one connection per process, opened by cuInit(0), shared by all
 * threads.  One I/O thread owns the socket: the program's threads append
 * encoded frames to a send queue and the I/O thread sends whatever has
 * gathered in one send(2), so calls from many threads coalesce and keep the
 * order in which they were queued.  A call that needs an answer (rsend with
 * a waiter, then rwait) waits for its reply, which the I/O thread hands over by request id; a
 * one-way call (rpost: stream-ordered work) returns once queued.  The
 * server answers a one-way call only when it failed; that error is kept
 * and returned by the next call that waits for a reply (CUDA's deferred
 * errors; a sticky one also marks the context).
 *
 * Bulk payloads (rpost with RP_BULK) are compressed with zstd while the
 * link is the bottleneck (pieces wait to be sent) and the data shrinks.
 * GLEAM_SYNC=1 turns all of this off: every call waits for its reply,
 * nothing is compressed (for comparisons).  GLEAM_ZSTD=0 or 1 forces
 * compression off or on.
 *
 * A lost connection is final for the process: every later call fails at
 * once with CUDA_ERROR_DEVICE_UNAVAILABLE, after one message naming the
 * server.  A child of fork(2) never touches the parent's connection: its
 * calls fail with CUDA_ERROR_NOT_INITIALIZED, as with the real driver.
 *
 * Resume (gleam-protocol(5), Resume).  Unless GLEAM_RESUME=0 the session
 * is asked to be resumable; when the server grants it, the plaintext of
 * every batch goes into a ring (keep.h) before it is sealed, and leaves
 * it as the server acknowledges it; a batch that does not fit waits (the
 * I/O thread still receives, so acknowledgements come).  When the link
 * breaks (end of stream, reset, a timeout: never a record that does not
 * open, nor an ERROR) the connection is "resuming": callers' calls wait
 * as if the server were slow, and the I/O thread reconnects with backoff,
 * resuming the session, until the window (GLEAM_RESUME, or the server's
 * if shorter) has passed.  Then both sides send again what the other has
 * not received, from the acknowledgement the other's first record
 * carries; a frame cut by the drop goes on where it stopped.  A server
 * that no longer has the session (it ended, expired, or restarted), or a
 * window that passed, makes the connection lost as above.
 */
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "io.h"
#include "auth.h"
#include "chanrd.h"
#include "conn.h"
#include "keep.h"
#include "lanes.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "util.h"
#include "zframe.h"

/*
 * Posting waits while this much is queued and not yet taken for sending:
 * at 1 Gbit/s over 100 ms of work in flight.  The two buffers (queue and
 * the one being sent) are kept, so their pages are touched once.
 */
#define SENDQ_MAX	(16u << 20)

/* Everything below is under tlock, but for rconn's constant fields. */
static pthread_mutex_t	 tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 tcond = PTHREAD_COND_INITIALIZER;
static struct conn	 rconn;
static enum { R_NONE, R_UP, R_RESUMING, R_LOST, R_FORKED } rstate;
static struct pw	 sendq;		/* frames not yet taken for sending */
static uint64_t		 queued, taken;	/* bytes ever queued, taken */
static int		 evfd = -1;	/* wakes the I/O thread */
static int		 io_busy;	/* the I/O thread has bytes to send */
/*
 * The I/O thread polls without sleeping (io_poll): a frame queued now
 * needs no wake-up, a system call each step saved; wake_skipped says one
 * was skipped, which the thread looks at under tlock before it sleeps.
 */
static int		 io_polling;	/* atomic; 0 under tlock */
static int		 wake_skipped;	/* under tlock */
static struct rwait	*waiters;	/* calls waiting for their replies */
static unsigned		 ndetached;	/* detached calls not yet answered */
static CUresult		 deferred;	/* a one-way call's error, unreported */
static uint16_t		 deferred_type;
static struct pw	 outq;		/* MSG_OUTPUT records, not yet written */
static int		 sync_mode;	/* GLEAM_SYNC=1 */
__thread int		 io_self __attribute__((tls_model("initial-exec")));
static int		 zmode = -1;	/* GLEAM_ZSTD: -1 auto, 0 off, 1 on */
static double		 zratio = 1;	/* compressed / raw, last trial */
static unsigned		 ztrials;	/* bulk pieces since the last trial */
static uint64_t		 sent;		/* bytes the I/O thread has sent */
static double		 drain_Bps;	/* the link's pace while backlogged */
static double		 zip_Bps;	/* compression's pace, raw bytes */
/*
 * Waiting for a reply as the driver waits for the GPU: under
 * CU_CTX_SCHED_SPIN or YIELD (and AUTO, the default, on a host of 4 CPUs
 * or more) the waiting thread spins rather than sleeps, and the I/O thread
 * polls the socket without sleeping while anyone spins or for a moment
 * after each send or receipt, so that neither a reply nor the calls that
 * follow it wait for a thread to be woken (tens of microseconds each on a
 * virtual machine).  GLEAM_SPIN=0 never spins, 1 spins whatever the host; GLEAM_SYNC=1
 * does not spin.
 */
static int		 spin_ok;	/* set once by io_start */
static unsigned		 nspinning;	/* threads spinning in rwait (atomic) */
static int		 rlost;		/* rstate left R_UP (atomic) */
#define SPIN_MAX_NS	(50ull * 1000000)	/* then it sleeps after all */
#define IO_LINGER_NS	(200ull * 1000)		/* polling after activity */

/*
 * The step hold.  A decode loop queues a few one-way calls (a copy in, a
 * graph's launch, a copy out) and, microseconds later, a wait (a stream
 * synchronization).  Sent as they come, the step leaves in two or three
 * writes, and on a link whose delay varies from packet to packet (Wi-Fi)
 * the wait's reply comes as late as the latest of them.  Where round trips
 * are long (the shortest seen at least HOLD_RTT_NS) and the steps' waits
 * have followed their first one-way call within a short time (twice it at
 * most HOLD_MAX_NS and an eighth of the round trip), the I/O thread holds
 * a cycle's one-way calls until its wait is queued, HOLD_BYTES are
 * waiting, or twice that time has passed: the step leaves as one write,
 * its work starting on the GPU at most that much later.  GLEAM_HOLD=0
 * never holds, 2 holds for HOLD_MAX_NS whatever the link and the gap
 * (tests), 1 (default) as above.
 */
#define HOLD_RTT_NS	(200ull * 1000)
#define HOLD_MAX_NS	(100ull * 1000)
#define HOLD_MIN_NS	(20ull * 1000)		/* a hold, at least */
#define HOLD_BYTES	(64u << 10)
#define HOLD_LEARN	4			/* cycles seen before holding */
static int		 hold_mode = 1;	/* GLEAM_HOLD */
/* GLEAM_IDLE_STREAMS=0: the other streams a synchronization's reply
 * names idle are not taken as idle (for comparisons). */
static int		 idle_others = 1;
static uint64_t		 cyc_t0;	/* the cycle's first one-way call */
static uint64_t		 gap_ns;	/* first call to wait, decaying max */
static unsigned		 gap_seen;	/* cycles that ended in a wait */
static uint64_t		 rt_min_ns;	/* the shortest round trip */
static uint64_t		 rt_session;	/* io_session() it was seen in */
static int		 sendq_flush;	/* a wait (or BYE) is in the queue */
static uint64_t		 hold_until;	/* the I/O thread holds until then */
static uint64_t		 hold_len(void);

/*
 * Idle streams (ridle_set), a few at once: XLA synchronizes its compute
 * and transfer streams one after another.  An entry holds while what was
 * queued since its mark is no stream's work (idle_keep).
 */
#define SIDLE_MAX	16
static struct {
	uint64_t	 ctx, sid, mark;
	uint64_t	 since;		/* the mark it was first known idle at,
					   held since (for read_ahead) */
	int		 valid;
} sidle[SIDLE_MAX];

/*
 * Events recorded here (ridle_event_done): on which stream, the queue's
 * position after the record, whether known complete.  A few, the oldest
 * replaced (XLA keeps a handful in turn).
 */
#define EVT_MAX		32
static struct {
	uint64_t	 ctx, ev, sid, q;
	uint64_t	 done_at;	/* the mark it was known complete at */
	int		 valid, done;
} evt[EVT_MAX];
static unsigned		 evt_next;

/*
 * A read ahead's window (rahead_ok): ra_epoch changes with every call
 * queued that may write device memory or tell the program of writes
 * made elsewhere (anything but a read, a record on an idle stream, a
 * wait on an event known complete by ra_q, making or destroying a
 * stream or event); ra_q is the last read ahead's queue position after
 * it.
 */
static uint64_t		 ra_epoch, ra_q;

/*
 * The send queue's count after the last call that was some stream's work
 * (idle_keep): a reply's idle marks still hold where only calls that are
 * no stream's work (another thread's query, say) came after them.
 */
static uint64_t		 work_end;

/*
 * Resume: the window (0: the session is not resumable), what the I/O
 * thread needs to connect again, and the ring of what the server has not
 * acknowledged (the I/O thread's alone).
 */
#define RESUME_DEFAULT_S	30
#define RESUME_BUFFER_DEFAULT	(64u << 20)
#define RESUME_DETECT_S		10	/* TCP_USER_TIMEOUT: a hole noticed */
#define RESUME_BACKOFF_NS	(50ull * 1000000)	/* doubling, */
#define RESUME_BACKOFF_MAX_NS	(1000ull * 1000000)	/* up to this */
#define RESUME_TRY_MS		5000	/* an attempt, at most */
static uint64_t		 resume_ns;
static struct keep	 rkeep;
static char		 rhost[256];
static int		 rport;
static struct auth_key	 rkey;
static int		 rkeyset;
static int		 rdetect_s = RESUME_DETECT_S;
static int		 rbye;		/* BYE queued at exit (atomic) */
static int		 rmoved;	/* a REDIRECT came: resume there */
static unsigned		 rmoves;	/* REDIRECTs followed, as lanes_moved */

/* Under tlock: calls may be queued and waited for (up, or resuming). */
static int
live(void)
{
	return rstate == R_UP || rstate == R_RESUMING;
}

/* The memory layer's calls before each call is queued (io_hook). */
static void		(*send_hook)(uint16_t, const struct rpc_val *);

/* In the child of a fork: the socket is the parent's; leave it alone. */
static void
io_atfork_child(void)
{
	pthread_mutex_init(&tlock, NULL);
	pthread_cond_init(&tcond, NULL);
	if (rstate == R_UP || rstate == R_RESUMING || rstate == R_LOST) {
		close(rconn.fd);
		rconn.fd = -1;
		if (evfd != -1)
			close(evfd);
		evfd = -1;
		rstate = R_FORKED;
	}
	waiters = NULL;
	ndetached = 0;
	sendq.len = 0;
	outq.len = 0;
	io_polling = wake_skipped = 0;
}

/* Under tlock: the connection is gone; says why once, wakes everyone. */
static void
io_lost_locked(const char *why)
{
	if (live()) {
		log_error("server %s lost: %s", rconn.peer, why);
		stats_error("server %s lost: %s", rconn.peer, why);
		rstate = R_LOST;
		__atomic_store_n(&rlost, 1, __ATOMIC_RELEASE);
		shutdown(rconn.fd, SHUT_RDWR);
	}
	pthread_cond_broadcast(&tcond);
}

static CUresult
state_error(void)
{
	return rstate == R_LOST ? CUDA_ERROR_DEVICE_UNAVAILABLE :
	    CUDA_ERROR_NOT_INITIALIZED;
}

uint64_t
io_backlog(void)
{
	uint64_t b;

	pthread_mutex_lock(&tlock);
	b = queued - __atomic_load_n(&sent, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&tlock);
	return b;
}

size_t
io_max_payload(void)
{
	/* Room for a call's other fields beside its blob. */
	return rconn.max_frame > 4096 ? rconn.max_frame - 1024 : 4096;
}

uint64_t
io_sent_count(void)
{
	uint64_t n;

	pthread_mutex_lock(&tlock);
	n = rconn.next_id;
	pthread_mutex_unlock(&tlock);
	return n;
}

int
rsync_mode(void)
{
	return sync_mode;
}

int
rconn_fd(void)
{
	return rconn.fd;
}

uint32_t
io_features(void)
{
	return rconn.features;
}

const struct chan *
io_chan(void)
{
	return &rconn.ch;
}

int
io_resumable(void)
{
	return resume_ns > 0;
}

uint64_t
io_resume_ns(void)
{
	return resume_ns;
}

uint64_t
io_session(void)
{
	return rconn.session;
}

int
io_gone(void)
{
	return __atomic_load_n(&rlost, __ATOMIC_ACQUIRE);
}

static void	io_keepalive(int);

void
io_lane_socket(int fd)
{
	io_keepalive(fd);
}

int
rspin_ok(void)
{
	return spin_ok;
}

int
rzstd_forced(void)
{
	return zmode == 1;
}

void
rlost_because(const char *why)
{
	pthread_mutex_lock(&tlock);
	io_lost_locked(why);
	pthread_mutex_unlock(&tlock);
}

/* ---- the I/O thread ------------------------------------------------------ */

static void	io_keepalive(int);

/* A little-endian u32, as frames carry them (a reply's CUresult). */
static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/*
 * Under tlock: a call nobody waits for failed; the first such error is
 * kept for the next call that waits (CUDA's deferred errors).
 */
static void
defer_error(uint16_t type, uint32_t rc)
{
	const struct rpc_desc *d = rpc_lookup(type);

	if (deferred != CUDA_SUCCESS)
		return;
	deferred = rc != CUDA_SUCCESS ? (CUresult)rc : CUDA_ERROR_UNKNOWN;
	deferred_type = type;
	log_debug("%s (queued): %u", d ? d->name : "?", (unsigned)deferred);
}

/* Under tlock: the waiter for reply h; NULL if nobody asked for it. */
static struct rwait *
waiter_find(const struct frame_hdr *h)
{
	struct rwait *w;

	for (w = waiters; w != NULL; w = w->next)
		if (w->id == h->id)
			return w->type == h->type ? w : NULL;
	return NULL;
}

/* Under tlock: w out of the list of waiters. */
static void
waiter_unlink(struct rwait *w)
{
	struct rwait **wp;

	for (wp = &waiters; *wp != NULL; wp = &(*wp)->next)
		if (*wp == w) {
			*wp = w->next;
			return;
		}
}

/*
 * Is reply h (whose payload starts with p, 8 bytes at least) a success
 * carrying exactly the bytes w wants at w->dst (a device-to-host copy)?
 */
static int
waiter_wants(const struct rwait *w, const struct frame_hdr *h,
    const uint8_t *p)
{
	return w->dst != NULL && w->dstlen > 0 && h->len == 8 + w->dstlen &&
	    le32(p) == CUDA_SUCCESS && le32(p + 4) == w->dstlen;
}

/*
 * Under tlock: w answered by reply h, payload p (only its result where
 * the blob went to w->dst already: w->direct).
 */
static void
waiter_answer(struct rwait *w, const struct frame_hdr *h, const uint8_t *p)
{
	size_t n = w->direct ? 4 : h->len;

	waiter_unlink(w);
	w->hmark = hostcb_mark();
	w->moves = rmoves;
	if (w->detached) {
		/* Nobody waits: an error is reported like a one-way call's. */
		if (!w->direct)
			defer_error(h->type, h->len >= 4 ? le32(p) : 0);
		free(w);
		ndetached--;
	} else {
		if ((w->buf = malloc(n ? n : 1)) == NULL)
			w->len = 0;
		else {
			memcpy(w->buf, p, n);
			w->len = (uint32_t)n;
		}
		__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	}
	pthread_cond_broadcast(&tcond);
}

/*
 * Under tlock: device output (MSG_OUTPUT) for this process's stdout or
 * stderr, kept for the program's thread: the I/O thread never writes it,
 * so that it lands in the program's stdio buffer in the order a local run
 * has, by the thread whose call flushed it.
 */
static void
io_output(const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_output m;

	if (h->flags != 0 || msg_output_dec(p, h->len, &m) == -1) {
		log_debug("server %s: malformed output frame", rconn.peer);
		return;
	}
	pw_u8(&outq, m.stream);
	pw_u32(&outq, m.len);
	pw_bytes(&outq, m.data, m.len);
	if (outq.bad) {
		pw_free(&outq);
		pw_init(&outq);
	}
}

/*
 * Writes the device output received so far where the driver would, with
 * the C library's stdout and stderr (the program's own printf's buffer:
 * its order with the program's output is a local run's).  Not under
 * tlock: stdio's lock may be held by a thread that waits for tlock.
 */
static void
io_output_write(void)
{
	struct pw q;
	struct pr r;
	uint32_t n;
	uint8_t s;
	const void *b;

	pthread_mutex_lock(&tlock);
	if (outq.len == 0) {
		pthread_mutex_unlock(&tlock);
		return;
	}
	q = outq;
	pw_init(&outq);
	pthread_mutex_unlock(&tlock);
	pr_init(&r, q.p, q.len);
	while (r.off < r.len) {
		s = pr_u8(&r);
		n = pr_u32(&r);
		if ((b = pr_take(&r, n)) == NULL)
			break;
		(void)!fwrite(b, 1, n, s == OUTPUT_STDERR ? stderr : stdout);
	}
	pw_free(&q);
}

/*
 * Under tlock: the server moved the session elsewhere (gleam-protocol(5),
 * Migration).  The session is resumed there, under that server's id and
 * token, as after a drop; the I/O thread breaks the link once the frames
 * before it are handed over.
 */
static void
io_redirect(const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_redirect m;

	if (h->flags != 0 || msg_redirect_dec(p, h->len, &m) == -1 ||
	    resume_ns == 0) {
		log_warn("server %s: a redirect %s", rconn.peer,
		    resume_ns == 0 ? "to a session that cannot resume" :
		    "that does not decode");
		return;
	}
	/*
	 * The target keeps the REDIRECT the source sent as part of the
	 * stream, and sends it again if the client lost it; followed
	 * already (told again by the source: io_moved), it is no news.
	 */
	if (m.session == rconn.session && memcmp(m.token, rconn.token,
	    sizeof m.token) == 0 && strcmp(m.host, rhost) == 0 &&
	    m.port == rport)
		return;
	log_warn("server %s: the session moves to %s:%u", rconn.peer, m.host,
	    (unsigned)m.port);
	snprintf(rhost, sizeof rhost, "%s", m.host);
	rport = m.port;
	rconn.session = m.session;
	memcpy(rconn.token, m.token, sizeof rconn.token);
	snprintf(rconn.peer, sizeof rconn.peer, "%s:%u", m.host,
	    (unsigned)m.port);
	rmoved = 1;
	rmoves++;
	lanes_moved();
	stats_migrated();
}

/* One whole frame from the server. */
static void
io_frame(const struct frame_hdr *h, const uint8_t *p)
{
	struct rwait *w;

	if (h->type == MSG_OUTPUT) {
		io_output(h, p);
		return;
	}
	if (h->type == MSG_ERROR) {
		conn_error_frame(&rconn, p, h->len);
		io_lost_locked(rconn.err);
		return;
	}
	if (h->type == MSG_REDIRECT) {
		io_redirect(h, p);
		return;
	}
	if (h->type == MSG_HOST) {
		/* Run by their own thread, never this one (hostcb.c). */
		if (h->flags != 0 || hostcb_post(p, h->len) == -1)
			log_warn("server %s: a malformed host-function notice",
			    rconn.peer);
		return;
	}
	if (!(h->flags & FL_REPLY))
		return;
	if (h->flags & FL_ONEWAY) {
		/* A copy whose lanes stayed behind: it goes again (lanes.c). */
		if (h->type == R_MEM_HTOD_LANES && h->len == 4 &&
		    le32(p) == RPC_LANES_GONE) {
			lanes_skipped();
			return;
		}
		/* A one-way call failed. */
		defer_error(h->type, h->len >= 4 ? le32(p) : 0);
		return;
	}
	if ((w = waiter_find(h)) == NULL)
		return;		/* stale or foreign: dropped */
	if (waiter_wants(w, h, p)) {
		/* A success carrying the bytes asked for: straight there. */
		memcpy(w->dst, p + 8, w->dstlen);
		w->direct = 1;
	}
	waiter_answer(w, h, p);
}

/*
 * A reply this large whose one blob a waiter wants at w->dst (a
 * device-to-host piece) is received straight there, not into the I/O
 * thread's buffer and then copied: on a fast link that copy is what
 * bounds the rate.
 */
#define DIRECT_MIN	(64u << 10)

/*
 * The records this side seals hold at most this much: gleam-serve opens a
 * record whole before it uses any of it, and keeps room for one beside
 * its largest frame (remote.c, REC_ROOM).
 */
#define IO_REC_MAX	(1u << 20)

/* The I/O thread's own state: the batch being sent, the bytes received. */
struct io {
	struct pw	 out;		/* being sent: plaintext frames */
	uint8_t		(*ht)[CHAN_HDR + CHAN_TAG];	/* its records' */
	size_t		 nrec, htcap;	/* headers and tags */
	size_t		 wlen;		/* its bytes on the wire */
	size_t		 off;		/* of them sent */
	uint64_t	 t0;		/* when it was taken */
	int		 waited;	/* it had to wait on the link */
	uint8_t		*rb;		/* received (chanrd.h) */
	struct chanrd	 rd;
	size_t		 rcap, rmax;
	uint64_t	 last_io;	/* the last bytes sent or received */
	int		 resend;	/* the batch is the ring's, sent again */
	int		 broke;		/* the link broke: io_resume */
	char		 why[300];	/* how */
};

/*
 * The link broke (end of stream, reset, a timeout): a resumable session
 * is resumed (io_resume), any other is lost.  -1 either way.
 */
static int
io_broken(struct io *io, const char *why)
{
	if (resume_ns == 0) {
		rlost_because(why);
		return -1;
	}
	if (__atomic_load_n(&rbye, __ATOMIC_ACQUIRE)) {
		/* The server closes after our BYE: the end, not a drop. */
		pthread_mutex_lock(&tlock);
		rstate = R_LOST;
		__atomic_store_n(&rlost, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&tcond);
		pthread_mutex_unlock(&tlock);
		return -1;
	}
	snprintf(io->why, sizeof io->why, "%s", why);
	io->broke = 1;
	return -1;
}

/* Reads exactly n bytes (blocking).  -1: lost or broken, said so. */
static int
io_read_all(struct io *io, void *buf, size_t n)
{
	ssize_t k;

	while (n > 0) {
		k = recv(rconn.fd, buf, n, MSG_WAITALL);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			return io_broken(io, k == 0 ? "connection closed by "
			    "the server" : strerror(errno));
		buf = (uint8_t *)buf + k;
		n -= (size_t)k;
		stats_bytes(0, (uint64_t)k);
	}
	return 0;
}

/*
 * A large record has begun (its header taken), with nothing received
 * before it left to parse: rb holds the first rd.raw bytes of its body
 * and maybe more.  If the record is one reply frame whose one blob a
 * waiter wants at w->dst (a device-to-host piece, see DIRECT_MIN), its
 * body is decrypted straight there as it comes, and the waiter answered
 * only once the record's tag checked: 1.  0: it goes the usual way (the
 * frame's header, opened, is pending in rb).  -1: the connection is gone
 * (a tag that fails too: then the waiter gets an error, never the bytes).
 * While it fills the destination the waiter is marked (filling), and
 * rwait does not return before that ends.
 */
static int
io_direct(struct io *io)
{
	struct chan *ch = &rconn.ch;
	const size_t head = PROTO_HDR_LEN + 8;
	size_t body = ch->rx_left, tl = ch->sealed ? CHAN_TAG : 0, k, got;
	uint8_t *rb = io->rb, tag[CHAN_TAG];
	struct frame_hdr h;
	struct rwait *w;
	char *dst;

	if (io->rd.raw < head) {
		if (io_read_all(io, rb + io->rd.raw, head - io->rd.raw) == -1)
			return -1;
		io->rd.raw = head;
	}
	/* Not trusted yet: only to pick the waiter, checked at the end. */
	chan_open_update(ch, rb, rb, head);
	io->rd.pend = head;
	io->rd.raw -= head;
	proto_hdr_decode(rb, &h);
	if (h.flags != FL_REPLY || PROTO_HDR_LEN + (size_t)h.len != body)
		return 0;
	pthread_mutex_lock(&tlock);
	if ((w = waiter_find(&h)) == NULL ||
	    !waiter_wants(w, &h, rb + PROTO_HDR_LEN)) {
		pthread_mutex_unlock(&tlock);
		return 0;
	}
	w->filling = 1;
	pthread_mutex_unlock(&tlock);
	dst = w->dst;
	/* What came with the header, then the rest where it goes. */
	k = io->rd.raw < ch->rx_left ? io->rd.raw : ch->rx_left;
	chan_open_update(ch, (uint8_t *)dst, rb + head, k);
	got = k;
	memmove(rb + head, rb + head + k, io->rd.raw - k);
	io->rd.raw -= k;
	while (ch->rx_left > 0) {
		k = ch->rx_left;
		if (io_read_all(io, dst + got, k) == -1)
			goto lost;
		chan_open_update(ch, (uint8_t *)dst + got,
		    (uint8_t *)dst + got, k);
		got += k;
	}
	k = io->rd.raw < tl ? io->rd.raw : tl;
	memcpy(tag, rb + head, k);
	memmove(rb + head, rb + head + k, io->rd.raw - k);
	io->rd.raw -= k;
	if (k < tl && io_read_all(io, tag + k, tl - k) == -1)
		goto lost;
	if (chan_open_final(ch, tl ? tag : NULL) == -1) {
		pthread_mutex_lock(&tlock);
		w->filling = 0;
		io_lost_locked(ch->err);
		pthread_mutex_unlock(&tlock);
		return -1;
	}
	pthread_mutex_lock(&tlock);
	w->filling = 0;
	w->direct = 1;
	log_trace("reply %llu: %zu bytes straight to their place",
	    (unsigned long long)h.id, got);
	waiter_answer(w, &h, rb + PROTO_HDR_LEN);
	pthread_mutex_unlock(&tlock);
	/* The frame's header is done with: what follows is the next record. */
	memmove(rb, rb + head, io->rd.raw);
	io->rd.pend = 0;
	io->rd.inrec = 0;
	return 1;
lost:
	pthread_mutex_lock(&tlock);
	w->filling = 0;
	pthread_cond_broadcast(&tcond);
	pthread_mutex_unlock(&tlock);
	return -1;
}

/* Says why the connection is gone, from the I/O thread. */
static void
io_lost(const char *why)
{
	pthread_mutex_lock(&tlock);
	io_lost_locked(why);
	pthread_mutex_unlock(&tlock);
}

/*
 * Seals the batch in io->out into records of IO_REC_MAX at most, in place:
 * their headers and tags aside (io->ht), sent between the bodies.  An
 * empty batch is one empty record (an acknowledgement).
 */
static int
io_seal(struct io *io)
{
	size_t i, n, off = 0;
	void *nh;

	io->nrec = io->out.len == 0 ? 1 :
	    (io->out.len + IO_REC_MAX - 1) / IO_REC_MAX;
	if (io->nrec > io->htcap) {
		if ((nh = reallocarray(io->ht, io->nrec, sizeof *io->ht)) ==
		    NULL)
			return -1;
		io->ht = nh;
		io->htcap = io->nrec;
	}
	for (i = 0; i < io->nrec; i++) {
		n = io->out.len - off < IO_REC_MAX ? io->out.len - off :
		    IO_REC_MAX;
		chan_seal_begin(&rconn.ch, io->ht[i], n);
		chan_seal_update(&rconn.ch, io->out.p + off, io->out.p + off,
		    n);
		chan_seal_final(&rconn.ch, io->ht[i] + CHAN_HDR);
		off += n;
	}
	io->wlen = chan_wire(&rconn.ch, 0) * io->nrec + io->out.len;
	io->off = 0;
	return 0;
}

/* The plaintext bytes of the batch in its first off bytes on the wire. */
static size_t
io_plain_at(const struct io *io, size_t off)
{
	size_t rw = chan_wire(&rconn.ch, IO_REC_MAX), in = off % rw, b;

	b = in < CHAN_HDR ? 0 : in - CHAN_HDR;
	b = b < IO_REC_MAX ? b : IO_REC_MAX;
	b += off / rw * IO_REC_MAX;
	return b < io->out.len ? b : io->out.len;
}

/*
 * Takes what the program's threads queued, once the batch before it is
 * out (the two buffers swap, so their pages stay touched).  -1 once the
 * connection is down.
 */
static int
io_take(struct io *io)
{
	int fresh = 0;

	pthread_mutex_lock(&tlock);
	if (rstate != R_UP) {
		pthread_mutex_unlock(&tlock);
		return -1;
	}
	/* What the server acknowledged leaves the ring; a batch must fit. */
	if (resume_ns > 0)
		(void)keep_ack(&rkeep, rconn.ch.peer_ack);
	/* The step hold: what is queued waits for its cycle's wait. */
	hold_until = 0;
	if (io->off == io->wlen && sendq.len > 0) {
		uint64_t len = hold_len();

		if (len > 0 && now_ns() < cyc_t0 + len)
			hold_until = cyc_t0 + len;
	}
	if (hold_until == 0 && io->off == io->wlen && sendq.len > 0 &&
	    (resume_ns == 0 ||
	    sendq.len <= keep_room(&rkeep))) {
		struct pw t = io->out;

		io->out = sendq;
		sendq = t;
		sendq.len = 0;
		sendq_flush = 0;
		taken += io->out.len;
		io->t0 = now_ns();
		io->waited = 0;
		fresh = 1;
		pthread_cond_broadcast(&tcond);
	} else if (io->off == io->wlen && chan_ack_due(&rconn.ch)) {
		/* Nothing to say, but that much came in: acknowledged. */
		io->out.len = 0;
		fresh = 1;
	}
	io_busy = fresh || io->off < io->wlen;
	pthread_mutex_unlock(&tlock);
	/* The batch is the I/O thread's now: kept, sealed without the lock. */
	if (fresh && resume_ns > 0 && io->out.len > 0)
		(void)keep_add(&rkeep, io->out.p, io->out.len);
	if (fresh && io_seal(io) == -1) {
		io_lost("out of memory");
		return -1;
	}
	return 0;
}

/* Sends what the socket takes without blocking.  -1: the connection broke. */
static int
io_send(struct io *io)
{
	struct iovec iov[48];
	struct msghdr m;
	size_t tl = rconn.ch.sealed ? CHAN_TAG : 0, at, i, k, n0, p0;
	ssize_t n;
	int ni;

	while (io->off < io->wlen) {
		/* The records from where the last send stopped. */
		ni = 0;
		at = 0;
		for (i = 0; i < io->nrec && ni + 3 <= 48; i++) {
			size_t bo = i * IO_REC_MAX;
			size_t bl = io->out.len - bo < IO_REC_MAX ?
			    io->out.len - bo : IO_REC_MAX;
			struct { const void *p; size_t len; } seg[3] = {
				{ io->ht[i], CHAN_HDR },
				{ io->out.p + bo, bl },
				{ io->ht[i] + CHAN_HDR, tl } };

			for (k = 0; k < 3; k++) {
				if (at + seg[k].len > io->off && seg[k].len > 0) {
					size_t skip = io->off > at ?
					    io->off - at : 0;

					iov[ni].iov_base = (uint8_t *)seg[k].p +
					    skip;
					iov[ni].iov_len = seg[k].len - skip;
					ni++;
				}
				at += seg[k].len;
			}
		}
		memset(&m, 0, sizeof m);
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)ni;
		n = sendmsg(rconn.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			n0 = io->off;
			p0 = io_plain_at(io, n0);
			io->off += (size_t)n;
			if (!io->resend)
				__atomic_add_fetch(&sent, (uint64_t)(io_plain_at(
				    io, io->off) - p0), __ATOMIC_RELAXED);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			io->waited = 1;
			break;
		}
		return io_broken(io, strerror(errno));
	}
	return 0;
}

/*
 * A batch is all out: a big one that had to wait on the link measures the
 * link's pace (compression weighs against it).  1 if one ended so.
 */
static int
io_sent(struct io *io)
{
	uint64_t dt;

	if (io->off != io->wlen || io->wlen == 0)
		return 0;
	dt = now_ns() - io->t0;
	if (io->waited && !io->resend && io->out.len >= (1u << 20) &&
	    dt > 0) {
		double r = (double)io->out.len * 1e9 / (double)dt;

		pthread_mutex_lock(&tlock);
		drain_Bps = drain_Bps > 0 ? 0.7 * drain_Bps + 0.3 * r : r;
		pthread_mutex_unlock(&tlock);
	}
	stats_bytes(io->wlen, 0);
	if (!io->resend && io->out.len > 0)
		stats_batch();
	io->resend = 0;
	io->out.len = 0;
	io->off = io->wlen = 0;
	/* Kept unless a huge frame blew it up. */
	if (io->out.cap > 4 * (size_t)SENDQ_MAX + rconn.max_frame) {
		pw_free(&io->out);
		pw_init(&io->out);
	}
	return 1;
}

/*
 * Waits for the socket or a wake-up: without sleeping while a caller
 * spins for its reply, or shortly after the last bytes went or came.
 * 1: the socket has something; 0: look again; -1: poll failed.
 */
static int
io_poll(struct io *io)
{
	struct pollfd pf[2];
	struct timespec ts, *tp = NULL;
	uint64_t v, until, t;
	int n;

	pf[0].fd = rconn.fd;
	pf[0].events = POLLIN | (io->off < io->wlen ? POLLOUT : 0);
	pf[1].fd = evfd;
	pf[1].events = POLLIN;
	/* Written only by this thread (io_take): read without the lock. */
	until = hold_until;
	if (spin_ok && (__atomic_load_n(&nspinning, __ATOMIC_ACQUIRE) > 0 ||
	    now_ns() - io->last_io < IO_LINGER_NS)) {
		ts.tv_sec = ts.tv_nsec = 0;
		tp = &ts;
		__atomic_store_n(&io_polling, 1, __ATOMIC_RELEASE);
	} else {
		int skipped;

		/* Going to sleep: a frame whose wake-up was skipped first. */
		pthread_mutex_lock(&tlock);
		__atomic_store_n(&io_polling, 0, __ATOMIC_RELEASE);
		skipped = wake_skipped;
		wake_skipped = 0;
		pthread_mutex_unlock(&tlock);
		if (skipped)
			return 0;
		if (until != 0) {
			t = now_ns();
			t = until > t ? until - t : 0;
			ts.tv_sec = (time_t)(t / 1000000000);
			ts.tv_nsec = (long)(t % 1000000000);
			tp = &ts;
		}
	}
	if ((n = ppoll(pf, 2, tp, NULL)) == -1) {
		if (errno == EINTR)
			return 0;
		io_lost(strerror(errno));
		return -1;
	}
	if (n == 0) {
		cpu_relax();
		return 0;
	}
	if (spin_ok)
		io->last_io = now_ns();
	if ((pf[1].revents & POLLIN) && read(evfd, &v, sizeof v) == -1 &&
	    errno != EAGAIN)
		log_debug("eventfd: %s", strerror(errno));
	return (pf[0].revents & (POLLIN | POLLERR | POLLHUP)) ? 1 : 0;
}

/* Room in the receive buffer for what is coming.  -1: too big, or no memory. */
static int
io_recv_room(struct io *io, size_t *want)
{
	struct frame_hdr h;
	size_t used = chanrd_used(&io->rd);
	uint8_t *nb;

	*want = chanrd_ask(&rconn.ch, &io->rd, 1u << 16);
	if (io->rd.plain >= PROTO_HDR_LEN) {
		proto_hdr_decode(io->rb, &h);
		if (PROTO_HDR_LEN + (size_t)h.len > io->rmax) {
			io_lost("reply over the frame limit");
			return -1;
		}
	}
	if (io->rcap - used < *want) {
		if ((nb = realloc(io->rb, used + *want)) == NULL) {
			io_lost("out of memory");
			return -1;
		}
		io->rb = nb;
		io->rcap = used + *want;
	}
	return 0;
}

/* Hands every whole frame received to its waiter, keeping the rest. */
static void
io_frames(struct io *io)
{
	struct frame_hdr h;
	size_t used = 0;

	pthread_mutex_lock(&tlock);
	while (io->rd.plain - used >= PROTO_HDR_LEN) {
		proto_hdr_decode(io->rb + used, &h);
		if (io->rd.plain - used < PROTO_HDR_LEN + (size_t)h.len)
			break;
		io_frame(&h, io->rb + used + PROTO_HDR_LEN);
		used += PROTO_HDR_LEN + h.len;
	}
	pthread_mutex_unlock(&tlock);
	chanrd_consume(io->rb, &io->rd, used);
}

/*
 * Opens the records received and hands their frames over; a large record
 * that starts where a frame does may go straight to a waiter (io_direct).
 * -1: lost.
 */
static int
io_open(struct io *io)
{
	int rc;

	for (;;) {
		if ((rc = chanrd_open(&rconn.ch, io->rb, &io->rd)) == -1) {
			io_lost(rconn.ch.err);
			return -1;
		}
		io_frames(io);
		if (rc == 0)
			return 0;
		if (io->rd.plain == 0 && io_direct(io) == -1)
			return -1;
	}
}

/* Receives everything there is, then every whole frame in it.  -1: lost. */
static int
io_recv(struct io *io)
{
	size_t want;
	ssize_t n;

	for (;;) {
		if (io_recv_room(io, &want) == -1)
			return -1;
		n = recv(rconn.fd, io->rb + chanrd_used(&io->rd), want,
		    MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return io_broken(io, n == 0 ? "connection closed by "
			    "the server" : strerror(errno));
		io->rd.raw += (size_t)n;
		stats_bytes(0, (uint64_t)n);
		if (io_open(io) == -1)
			return -1;
		if (rmoved) {
			rmoved = 0;
			return io_broken(io, "the session moved");
		}
		/* A big buffer is not kept once the big reply is out. */
		if (chanrd_used(&io->rd) == 0 && io->rcap > (64u << 20)) {
			free(io->rb);
			io->rb = NULL;
			io->rcap = 0;
		}
	}
}

/* A little-endian u64, as a record's ack. */
static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Reads exactly n bytes within ms.  -1 with err set. */
static int
read_timed(int fd, void *buf, size_t n, int ms, char *err, size_t errlen)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	uint8_t *p = buf;
	ssize_t k;
	int rc;

	while (n > 0) {
		if ((rc = poll(&pf, 1, ms)) == 0) {
			snprintf(err, errlen, "timed out");
			return -1;
		}
		if (rc == -1 && errno == EINTR)
			continue;
		k = rc == -1 ? -1 : recv(fd, p, n, MSG_DONTWAIT);
		if (k == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0) {
			snprintf(err, errlen, "%s", k == 0 ? "connection "
			    "closed by the server" : strerror(errno));
			return -1;
		}
		stats_bytes(0, (uint64_t)k);
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A conn of io_reconnect's that is not used: closed without a BYE. */
static void
conn_drop(struct conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	conn_close(c);
}

/*
 * The server says that the session migrated (a REDIRECT lost in a drop,
 * told again: gleam-protocol(5), Migration): the REDIRECT, the one frame
 * after the WELCOME, says where; the next attempt goes there, at once
 * (-3).  -1 when it does not come whole.
 */
static int
io_moved(struct conn *nc, char *err, size_t errlen)
{
	struct frame_hdr h;
	const uint8_t *p;

	if (conn_recv(nc, &h, &p) == -1) {
		snprintf(err, errlen, "%s", nc->err);
		conn_drop(nc);
		return -1;
	}
	if (h.type != MSG_REDIRECT) {
		snprintf(err, errlen, "cannot resume: a moved session's "
		    "server sent frame %u, not REDIRECT", (unsigned)h.type);
		conn_drop(nc);
		return -2;
	}
	pthread_mutex_lock(&tlock);
	io_redirect(&h, p);
	pthread_mutex_unlock(&tlock);
	conn_drop(nc);
	if (!rmoved) {
		snprintf(err, errlen, "cannot resume: a bad REDIRECT");
		return -2;
	}
	rmoved = 0;
	snprintf(err, errlen, "the session moved to %s", rconn.peer);
	return -3;
}

/*
 * One attempt to resume the session on a new connection nc, with at most
 * ms for it: the handshake, our empty record (its ack says what we have),
 * then the header of the server's first record, whose ack *ack says what
 * it has.  0: done, hdr holds that header (its body and tag still to
 * come).  -1: try again (err says why).  -2: never again (err says why).
 * -3: the session moved: try again at once, where it went.
 */
static int
io_reconnect(struct conn *nc, int ms, uint8_t hdr[CHAN_HDR], uint64_t *ack,
    char *err, size_t errlen)
{
	struct conn_resume rs;
	const uint8_t *p;

	memset(&rs, 0, sizeof rs);
	rs.want = 1;
	rs.session = rconn.session;
	memcpy(rs.token, rconn.token, sizeof rs.token);
	if (conn_open_resume(nc, rhost, rport, rkeyset ? &rkey : NULL,
	    program_invocation_short_name, ms, &rs) == -1) {
		if (nc->fail == CONN_REMOTE) {
			snprintf(err, errlen, "the server no longer has this "
			    "session (restarted?): %s", nc->err);
			return -2;
		}
		/*
		 * The host answers and nothing listens: the server process
		 * is gone, and its sessions with it.  (A link that is down
		 * does not refuse.)
		 */
		if (nc->refused) {
			snprintf(err, errlen, "the server is gone, and this "
			    "session with it: %s", nc->err);
			return -2;
		}
		snprintf(err, errlen, "%s%s", nc->fail == CONN_NET ? "" :
		    "cannot resume: ", nc->err);
		return nc->fail == CONN_NET ? -1 : -2;
	}
	if (nc->features & FEAT_MOVED)
		return io_moved(nc, err, errlen);
	chan_resume(&nc->ch, &rconn.ch);
	if (conn_write(nc, NULL, 0) == -1) {
		snprintf(err, errlen, "%s", nc->err);
		conn_drop(nc);
		return -1;
	}
	if (read_timed(nc->fd, hdr, CHAN_HDR, ms, err, errlen) == -1) {
		conn_drop(nc);
		return -1;
	}
	if (chan_hdr(&nc->ch, hdr) == -1) {
		snprintf(err, errlen, "cannot resume: %s", nc->ch.err);
		conn_drop(nc);
		return -2;
	}
	*ack = le64(hdr + 8);
	if (keep_peek(&rkeep, *ack, &p) == (size_t)-1) {
		snprintf(err, errlen, "cannot resume: the server has %llu "
		    "bytes of ours, we keep %llu to %llu",
		    (unsigned long long)*ack, (unsigned long long)rkeep.base,
		    (unsigned long long)rkeep.end);
		conn_drop(nc);
		return -2;
	}
	return 0;
}

/*
 * The link broke (io->why) and the session is resumable: reconnects with
 * backoff until the window passes, then carries on from where each side
 * stopped.  Callers wait meanwhile (R_RESUMING).  0: resumed; -1: lost.
 */
static int
io_resume(struct io *io)
{
	struct conn nc, old;
	struct timespec ts;
	uint64_t t0 = now_ns(), until = t0 + resume_ns, back = RESUME_BACKOFF_NS;
	uint64_t ack = 0, t, from;
	uint8_t hdr[CHAN_HDR];
	const uint8_t *p;
	char last[700];
	size_t n, resent;
	int rc, ms, moves = 0;

	io->broke = 0;
	pthread_mutex_lock(&tlock);
	if (rstate != R_UP) {
		pthread_mutex_unlock(&tlock);
		return -1;
	}
	rstate = R_RESUMING;
	log_warn("server %s: connection dropped (%s): resuming", rconn.peer,
	    io->why);
	pthread_mutex_unlock(&tlock);
	stats_drop();
	shutdown(rconn.fd, SHUT_RDWR);
	/*
	 * What was being sent is in the ring; what was half received, not
	 * authenticated, goes; the frames' plaintext stays (the stream goes
	 * on from there).  A reply that was being written straight to its
	 * place (io_direct) comes again: its waiter is still waiting.
	 */
	stats_bytes(io->off, 0);	/* of the batch cut short */
	io->out.len = 0;
	io->off = io->wlen = 0;
	io->resend = 0;
	io->rd.pend = io->rd.raw = 0;
	io->rd.inrec = 0;
	snprintf(last, sizeof last, "%s", io->why);
	for (;;) {
		pthread_mutex_lock(&tlock);
		rc = rstate == R_RESUMING;
		pthread_mutex_unlock(&tlock);
		if (!rc)
			return -1;	/* lost meanwhile (rlost_because) */
		if ((t = now_ns()) >= until) {
			char why[sizeof last + 64];

			snprintf(why, sizeof why, "no resume within %.0f s: %s",
			    (double)resume_ns / 1e9, last);
			stats_resume_end(now_ns() - t0, 0, 0);
			io_lost(why);
			return -1;
		}
		ms = (int)((until - t) / 1000000) + 1;
		if (ms > RESUME_TRY_MS)
			ms = RESUME_TRY_MS;
		if ((rc = io_reconnect(&nc, ms, hdr, &ack, last,
		    sizeof last)) == 0)
			break;
		log_debug("server %s: resume: %s", rconn.peer, last);
		/* Elsewhere, at once (a few times: no server bounces us). */
		if (rc == -3 && ++moves <= 4)
			continue;
		if (rc == -2) {
			stats_resume_end(now_ns() - t0, 0, 0);
			io_lost(last);
			return -1;
		}
		t = until - now_ns() < back ? until - now_ns() : back;
		if ((int64_t)t > 0) {
			ts.tv_sec = (time_t)(t / 1000000000);
			ts.tv_nsec = (long)(t % 1000000000);
			nanosleep(&ts, NULL);
		}
		back = back * 2 < RESUME_BACKOFF_MAX_NS ? back * 2 :
		    RESUME_BACKOFF_MAX_NS;
	}
	io_keepalive(nc.fd);
	pthread_mutex_lock(&tlock);
	if (rstate != R_RESUMING) {
		pthread_mutex_unlock(&tlock);
		conn_drop(&nc);
		return -1;
	}
	/* The new connection in place, with the session's counts. */
	nc.next_id = rconn.next_id;
	nc.timeout_ms = -1;
	old = rconn;
	rconn = nc;
	rconn.ch.tx_bytes = ack;
	(void)keep_ack(&rkeep, ack);
	/* Everything taken will have been sent once what follows is. */
	__atomic_store_n(&sent, taken, __ATOMIC_RELAXED);
	rstate = R_UP;
	pthread_cond_broadcast(&tcond);
	pthread_mutex_unlock(&tlock);
	close(old.fd);
	old.fd = -1;
	conn_close(&old);
	/* What the server did not get, sealed again under the new keys. */
	for (from = ack; (n = keep_peek(&rkeep, from, &p)) != 0 &&
	    n != (size_t)-1; from += n)
		pw_bytes(&io->out, p, n);
	if (io->out.bad) {
		io_lost("out of memory");
		return -1;
	}
	resent = io->out.len;
	if (resent > 0) {
		io->t0 = now_ns();
		io->waited = 0;
		io->resend = 1;
		if (io_seal(io) == -1) {
			io_lost("out of memory");
			return -1;
		}
	}
	/* The server's first record, its header read: the rest to come. */
	if (io->rcap < io->rd.plain + CHAN_HDR) {
		uint8_t *nb = realloc(io->rb, io->rd.plain + CHAN_HDR);

		if (nb == NULL) {
			io_lost("out of memory");
			return -1;
		}
		io->rb = nb;
		io->rcap = io->rd.plain + CHAN_HDR;
	}
	memcpy(io->rb + io->rd.plain, hdr, CHAN_HDR);
	io->rd.raw = CHAN_HDR;
	t = now_ns() - t0;
	stats_resume_end(t, resent, 1);
	log_warn("server %s: resumed after %.3f s, %zu bytes sent again",
	    rconn.peer, (double)t / 1e9, resent);
	return 0;
}

/* The I/O thread: sends what was queued, receives what comes back. */
static void *
io_main(void *arg)
{
	/*
	 * There is one I/O thread.  Its state is not on its stack, so that a
	 * child forked from the program still reaches (as memory, never to
	 * use) the buffers its parent's thread held: no leak to report.
	 */
	static struct io io;
	int n;

	io_self = 1;
	(void)arg;
	memset(&io, 0, sizeof io);
	pw_init(&io.out);
	io.rmax = (size_t)rconn.max_frame + (1u << 20) + PROTO_HDR_LEN;
	/* A record this large may be a reply to take straight to its place. */
	io.rd.stop = PROTO_HDR_LEN + 8 + DIRECT_MIN;
	for (;;) {
		if (io_take(&io) == -1 || io_send(&io) == -1)
			goto down;
		progress_tick();
		if (io_sent(&io))
			continue;	/* more may have been queued */
		if ((n = io_poll(&io)) == -1)
			goto down;
		if (n == 1 && io_recv(&io) == -1)
			goto down;
		continue;
down:
		/* A link that broke is resumed where the session allows. */
		if (!io.broke || io_resume(&io) == -1)
			break;
	}
	free(io.rb);
	free(io.ht);
	pw_free(&io.out);
	return NULL;
}

/* ---- queueing calls ------------------------------------------------------ */

/*
 * Under tlock: waits until need more bytes fit the send queue (a queue
 * already holding something waits for the I/O thread to take it).
 * Returns -1 once the connection is down.
 */
static int
queue_room(size_t need)
{
	while (live() && sendq.len > 0 && sendq.len + need > SENDQ_MAX)
		pthread_cond_wait(&tcond, &tlock);
	return live() ? 0 : -1;
}

/*
 * Under tlock, a frame just queued: a wait (flush) ends the step's cycle,
 * a one-way call begins one.  Whether to wake the I/O thread: for the
 * first frame in an empty queue, and while it holds, for what ends the
 * hold.
 */
static int
queue_note(int flush, int beside, int was_empty)
{
	uint64_t t, g;

	/* Nothing to learn where it would not hold: off, or round trips
	 * known to be short (loopback). */
	if (hold_mode == 0 || (hold_mode == 1 && rt_min_ns != 0 &&
	    rt_min_ns < HOLD_RTT_NS && rt_session == io_session()))
		return was_empty;
	if (flush && !beside) {
		sendq_flush = 1;
		if (cyc_t0 != 0) {
			t = now_ns();
			g = t > cyc_t0 ? t - cyc_t0 : 0;
			gap_ns = g >= gap_ns ? g : gap_ns - (gap_ns - g) / 8;
			gap_seen++;
			cyc_t0 = 0;
		}
	} else if (!flush && cyc_t0 == 0)
		cyc_t0 = now_ns();
	return was_empty || (hold_until != 0 && (sendq_flush ||
	    sendq.len >= HOLD_BYTES));
}

/*
 * Under tlock: how long the I/O thread holds what is queued (0: send it
 * now), as the step hold above says.
 */
static uint64_t
hold_len(void)
{
	uint64_t cap;

	if (hold_mode == 0 || sendq_flush || cyc_t0 == 0 ||
	    sendq.len >= HOLD_BYTES || sync_mode)
		return 0;
	if (hold_mode == 2)
		return HOLD_MAX_NS;	/* whatever the steps' gap */
	else {
		if (rt_min_ns < HOLD_RTT_NS || rt_session != io_session() ||
		    gap_seen < HOLD_LEARN)
			return 0;
		cap = rt_min_ns / 8 < HOLD_MAX_NS ? rt_min_ns / 8 :
		    HOLD_MAX_NS;
	}
	if (2 * gap_ns > cap)
		return 0;
	return 2 * gap_ns > HOLD_MIN_NS ? 2 * gap_ns : HOLD_MIN_NS;
}

/* Under tlock: a round trip's time, queued to answered (rwait). */
static void
rt_seen(uint64_t ns)
{
	if (rt_session != io_session() || rt_min_ns == 0 || ns < rt_min_ns) {
		rt_min_ns = ns;
		rt_session = io_session();
	}
}

/* Under tlock: the first frame in an empty queue wakes the I/O thread,
 * unless it polls without sleeping. */
static void
queue_wake(int was_empty)
{
	uint64_t one = 1;

	if (!was_empty)
		return;
	if (__atomic_load_n(&io_polling, __ATOMIC_ACQUIRE)) {
		wake_skipped = 1;
		return;
	}
	if (write(evfd, &one, sizeof one) == -1)
		log_debug("eventfd: %s", strerror(errno));
}

/*
 * Under tlock: appends a frame (header, then the payload, then a second
 * part of it if any) to the send queue and wakes the I/O thread.
 */
static int
queue_frame(uint16_t type, uint16_t flags, uint64_t id, const void *a,
    size_t alen, const void *b, size_t blen)
{
	struct frame_hdr h = { (uint32_t)(alen + blen), type, flags, id };
	uint8_t *p;
	int wake;

	if (queue_room(alen + blen) == -1)
		return -1;
	wake = sendq.len == 0;
	if ((p = pw_room(&sendq, PROTO_HDR_LEN + alen + blen)) == NULL) {
		sendq.bad = 0;
		sendq.len = 0;
		return -1;
	}
	proto_hdr_encode(p, &h);
	if (alen > 0)
		memcpy(p + PROTO_HDR_LEN, a, alen);
	if (blen > 0)
		memcpy(p + PROTO_HDR_LEN + alen, b, blen);
	queued += PROTO_HDR_LEN + alen + blen;
	queue_wake(queue_note(type == MSG_BYE || !(flags & FL_ONEWAY), 0,
	    wake));
	return 0;
}

/*
 * Should a bulk payload be compressed?  Only data that shrinks, only while
 * the link is the bottleneck (8 MiB wait to be sent, so the time spent
 * compressing would be spent waiting), and never when compression, as
 * measured, is slower than the link drains a backlog (a fast link:
 * loopback, 10 Gbit/s).  Whether data shrinks is learnt from what was
 * compressed, and while it did not, from a probe of 64 KiB of every 16th
 * piece: a probe costs tens of microseconds where compressing a whole
 * piece to find out cost milliseconds on the copy's path.
 */
#define ZSTD_BACKLOG	(8u << 20)
#define ZSTD_PROBE	(64u << 10)

/* The largest blob of a call: the bulk data. */
static const struct rpc_val *
bulk_field(const struct rpc_desc *d, const struct rpc_val *in)
{
	const struct rpc_val *b = NULL;
	size_t i;

	for (i = 0; d->req[i] != '\0' && i < RPC_MAX_FIELDS; i++)
		if (d->req[i] == 'B' && (b == NULL || in[i].len > b->len))
			b = &in[i];
	return b;
}

static void
zip_pace(size_t len, uint64_t ns)
{
	double r;

	if (ns == 0)
		return;
	r = (double)len * 1e9 / (double)ns;
	zip_Bps = zip_Bps > 0 ? 0.7 * zip_Bps + 0.3 * r : r;
}

static int
want_zstd(const struct rpc_desc *d, const struct rpc_val *in)
{
	const struct rpc_val *b = bulk_field(d, in);
	int probe = 0, zip;
	struct pw z;
	uint64_t t = 0;
	long n = 0;

	if (b == NULL || b->len < ZSTD_PROBE)
		return zmode == 1;
	pthread_mutex_lock(&tlock);
	if (zmode >= 0) {
		pthread_mutex_unlock(&tlock);
		return zmode;
	}
	/* Compressing slower than the link drains is never worth it. */
	if (drain_Bps > 0 && zip_Bps > 0 && zip_Bps < 1.2 * drain_Bps) {
		pthread_mutex_unlock(&tlock);
		return 0;
	}
	if (zratio >= 0.95)
		probe = ztrials++ % 16 == 0;
	pthread_mutex_unlock(&tlock);
	if (probe) {
		/* From the middle: a header or padding says little. */
		const uint8_t *p = (const uint8_t *)b->p +
		    (b->len - ZSTD_PROBE) / 2;

		pw_init(&z);
		t = now_ns();
		n = zf_compress(&z, p, ZSTD_PROBE, 1);
		t = now_ns() - t;
		pw_free(&z);
		log_trace("zstd probe: %u -> %ld bytes", ZSTD_PROBE, n);
	}
	pthread_mutex_lock(&tlock);
	if (probe) {
		zip_pace(ZSTD_PROBE, t);
		zratio = n > 0 ? (double)n / ZSTD_PROBE : 1;
	}
	zip = zratio < 0.95 && queued - __atomic_load_n(&sent,
	    __ATOMIC_RELAXED) >= ZSTD_BACKLOG;
	pthread_mutex_unlock(&tlock);
	return zip;
}

/* Under tlock: is stream sid of ctx idle as of queue position q? */
static int
sidle_at(uint64_t ctx, uint64_t sid, uint64_t q)
{
	int i;

	for (i = 0; i < SIDLE_MAX; i++)
		if (sidle[i].valid && sidle[i].mark == q &&
		    sidle[i].ctx == ctx &&
		    (sidle[i].sid == sid || sidle[i].sid == RIDLE_ALL))
			return 1;
	return 0;
}

/* Under tlock: event ev's entry, or -1. */
static int
evt_find(uint64_t ev)
{
	int i;

	for (i = 0; i < EVT_MAX; i++)
		if (evt[i].valid && evt[i].ev == ev)
			return i;
	return -1;
}

/*
 * Under tlock: event ev recorded on stream sid of ctx, the queue at q
 * after it; done where the stream was idle.
 */
static void
evt_note(uint64_t ctx, uint64_t ev, uint64_t sid, uint64_t q, int done)
{
	int i = evt_find(ev);

	if (i < 0) {
		for (i = 0; i < EVT_MAX && evt[i].valid; i++)
			;
		if (i == EVT_MAX)
			i = (int)(evt_next++ % EVT_MAX);
	}
	evt[i].ctx = ctx;
	evt[i].ev = ev;
	evt[i].sid = sid;
	evt[i].q = q;
	evt[i].done = done;
	evt[i].done_at = q;
	evt[i].valid = 1;
}

/*
 * Under tlock, after a call was queued from queue position q0: a one-way
 * call that cannot fail for its arguments (RP_KEEPIDLE: a copy into device
 * memory the program allocated) and that follows an idle mark on its own
 * stream leaves that stream's synchronization answerable here.  Nothing
 * the program can see tells the copy done from the copy on its way, but an
 * error it meets, which the copy only shares with the whole device, would
 * be reported at the next call that waits instead of at this sync: as if
 * the fault had come a moment later.  The one-way allocation's calls
 * (memPool, memMap, memTrim: RPC_F_NO_STREAM) keep the mark too:
 * a loader that allocates between a tensor's copy and its sync still
 * syncs here.
 */
static void
idle_keep(uint16_t type, int flags, const struct rpc_val *in, uint64_t q0)
{
	const struct rpc_desc *d = rpc_lookup(type);
	int i, e = -1, idle, nowork, sf = rpc_stream_field(type);
	uint64_t busy = sf >= 0 ? in[sf].u : 0, self = 0;

	/*
	 * An event recorded on an idle stream of the program's is complete
	 * as soon as it is recorded, and leaves the stream idle; a wait on
	 * a complete event adds nothing to the waiting stream.  Any other
	 * record makes the event's completion unknown until a report finds
	 * its stream idle (ridle_set).
	 */
	if (type == R_EVENT_RECORD) {
		e = evt_find(in[1].u);
		if (!(flags & RP_EVLOCAL) || in[2].u <= 2 ||
		    in[2].u == RIDLE_ALL) {
			if (e >= 0)
				evt[e].valid = 0;
		} else {
			idle = sidle_at(in[0].u, in[2].u, q0);
			evt_note(in[0].u, in[1].u, in[2].u, queued, idle);
			if (idle)
				self = in[2].u;
		}
	} else if (type == R_STREAM_WAIT_EVENT && in[1].u > 2 &&
	    in[1].u != RIDLE_ALL && (e = evt_find(in[2].u)) >= 0 &&
	    evt[e].done && evt[e].ctx == in[0].u)
		self = in[1].u;
	else if (type == R_EVENT_DESTROY && (e = evt_find(in[0].u)) >= 0)
		evt[e].valid = 0;

	/*
	 * The pool's calls are no stream's work, nor are synchronizations
	 * and queries (of another stream, an event, the context), nor
	 * making and destroying streams and events: a stream stays idle.
	 */
	nowork = (d != NULL && (d->flags & RPC_F_NO_STREAM)) ||
	    (flags & RP_NOWORK) || type == R_STREAM_SYNC ||
	    type == R_STREAM_QUERY || type == R_CTX_SYNC ||
	    type == R_EVENT_SYNC || type == R_EVENT_QUERY ||
	    type == R_EVENT_CREATE || type == R_EVENT_DESTROY ||
	    type == R_STREAM_CREATE || type == R_STREAM_DESTROY;
	/*
	 * Work on one stream of the program's own (not a special stream,
	 * whose work the others' next work waits for) leaves the others
	 * of the program's own idle: a stream's ids are never reused while
	 * its entry holds (its destruction is a call too).  Not the
	 * special streams (the legacy stream's synchronization may wait
	 * for the blocking streams' work) nor the whole context.
	 */
	if (busy <= 2 || busy == RIDLE_ALL)
		busy = 0;
	if (!nowork)
		work_end = queued;
	/* A read ahead's window: what keeps it (ra_epoch's comment). */
	if (flags & RP_AHEAD) {
		ra_epoch++;
		ra_q = queued;
	} else if (!(type == R_MEM_DTOH || type == R_MEM_DTOH_LANES ||
	    (flags & RP_NOWORK) || type == R_EVENT_CREATE ||
	    type == R_EVENT_DESTROY || type == R_STREAM_CREATE ||
	    type == R_STREAM_DESTROY || (type == R_EVENT_RECORD &&
	    self != 0) || (type == R_STREAM_WAIT_EVENT && self != 0 &&
	    evt[e].done_at <= ra_q)))
		ra_epoch++;
	for (i = 0; i < SIDLE_MAX; i++)
		if (sidle[i].valid && sidle[i].mark == q0 && (nowork ||
		    ((flags & RP_KEEPIDLE) && sidle[i].ctx == in[0].u &&
		    sidle[i].sid == in[1].u) || (self != 0 &&
		    sidle[i].ctx == in[0].u && (sidle[i].sid == self ||
		    sidle[i].sid == RIDLE_ALL)) || (busy != 0 &&
		    sidle[i].sid != busy && sidle[i].sid > 2 &&
		    (sidle[i].sid != RIDLE_ALL || sidle[i].ctx != in[0].u))))
			sidle[i].mark = queued;
}

/*
 * rsend without compression: the call is packed straight into the send
 * queue, its bytes copied once.
 */
static CUresult
rsend_direct(uint16_t type, const struct rpc_desc *d,
    const struct rpc_val *in, struct rwait *w, int flags)
{
	size_t need = rpc_packed_size(d->req, in), at;
	struct frame_hdr h;
	uint64_t id, q0;
	uint8_t *p;
	/* Read now: once queued, a detached waiter is the I/O thread's. */
	int wake, beside = w != NULL && w->beside;

	pthread_mutex_lock(&tlock);
	if (queue_room(need) == -1) {
		CUresult rc = state_error();
		pthread_mutex_unlock(&tlock);
		return rc;
	}
	if (need > rconn.max_frame) {
		pthread_mutex_unlock(&tlock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	wake = sendq.len == 0;
	at = sendq.len;
	id = rconn.next_id++;
	if ((p = pw_room(&sendq, PROTO_HDR_LEN)) == NULL ||
	    rpc_pack(&sendq, d->req, in) == -1 || sendq.bad ||
	    sendq.len - at - PROTO_HDR_LEN != need) {
		sendq.bad = 0;
		sendq.len = at;
		pthread_mutex_unlock(&tlock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h.len = (uint32_t)need;
	h.type = type;
	h.flags = w == NULL ? FL_ONEWAY : 0;
	h.id = id;
	proto_hdr_encode(sendq.p + at, &h);
	q0 = queued;
	queued += PROTO_HDR_LEN + need;
	idle_keep(type, flags, in, q0);
	if (w != NULL) {
		w->qstart = q0;
		w->qend = queued;
		w->epoch = ra_epoch;
		w->id = id;
		w->tq = now_ns();
		w->next = waiters;
		waiters = w;
	}
	queue_wake(queue_note(w != NULL, beside, wake));
	pthread_mutex_unlock(&tlock);
	stats_call(type, w == NULL, beside);
	return CUDA_SUCCESS;
}

CUresult
rsend(uint16_t type, const struct rpc_val *in, int flags, struct rwait *w)
{
	const struct rpc_desc *d = rpc_lookup(type);
	struct pw pl, z;
	uint16_t ff = w == NULL ? FL_ONEWAY : 0;
	const void *payload;
	size_t plen;
	CUresult rc = CUDA_SUCCESS;
	int zip = 0, beside = w != NULL && w->beside;

	/* A host function makes no CUDA calls: it could wait for itself. */
	if (hostcb_inside())
		return CUDA_ERROR_NOT_PERMITTED;
	/* The memory layer's own calls go first (mapped.c). */
	if (send_hook != NULL)
		send_hook(type, in);

	if (w != NULL) {
		void *dst = w->dst;
		size_t dstlen = w->dstlen;
		int detached = w->detached;

		memset(w, 0, sizeof *w);
		w->type = type;
		w->dst = dst;
		w->dstlen = dstlen;
		w->detached = detached;
		w->beside = beside;
	}
	if (d == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	pw_init(&pl);
	pw_init(&z);
	if ((flags & RP_BULK) && !sync_mode)
		zip = want_zstd(d, in);
	if (!zip)
		return rsend_direct(type, d, in, w, flags);
	if (rpc_pack(&pl, d->req, in) == -1 || pl.bad) {
		pw_free(&pl);
		return CUDA_ERROR_INVALID_VALUE;
	}
	payload = pl.p;
	plen = pl.len;
	{
		uint64_t tz = now_ns();
		long n = zf_compress(&z, pl.p, pl.len, 1);
		double dz = (double)(now_ns() - tz);

		pthread_mutex_lock(&tlock);
		zip_pace(pl.len, (uint64_t)dz);
		zratio = n > 0 ? (double)n / (double)pl.len : 1;
		log_trace("zstd: %zu -> %ld bytes, %llu bytes waiting", pl.len,
		    n, (unsigned long long)(queued -
		    __atomic_load_n(&sent, __ATOMIC_RELAXED)));
		pthread_mutex_unlock(&tlock);
		if (n > 0) {
			payload = z.p;
			plen = (size_t)n;
			ff |= FL_ZSTD;
			stats_saved(pl.len - (size_t)n);
		}
	}
	pthread_mutex_lock(&tlock);
	if (!live())
		rc = state_error();
	else if (plen > rconn.max_frame)
		rc = CUDA_ERROR_INVALID_VALUE;
	else {
		uint64_t id = rconn.next_id++, q0 = queued;

		if (w != NULL) {
			w->id = id;
			w->tq = now_ns();
			w->next = waiters;
			waiters = w;
			w->qstart = q0;
		}
		if (queue_frame(type, ff, id, payload, plen, NULL, 0) == -1) {
			if (w != NULL)
				waiters = w->next;
			rc = live() ? CUDA_ERROR_OUT_OF_MEMORY :
			    state_error();
		} else {
			idle_keep(type, flags, in, q0);
			if (w != NULL) {
				w->qend = queued;
				w->epoch = ra_epoch;
			}
		}
	}
	pthread_mutex_unlock(&tlock);
	pw_free(&pl);
	pw_free(&z);
	/* (Not w->beside: once queued, a detached waiter may be freed.) */
	if (rc == CUDA_SUCCESS)
		stats_call(type, w == NULL, beside);
	return rc;
}

/*
 * Does a thread waiting for a reply spin?  As the current context's
 * scheduling flags say (the primary context's when none is current):
 * BLOCKING_SYNC sleeps, SPIN, YIELD and AUTO spin where spinning is on.
 */
static int
wait_spins(void)
{
	struct gctx *c;

	if (!spin_ok)
		return 0;
	c = ctx_current();
	return c == NULL || (c->flags & 0x7) != CU_CTX_SCHED_BLOCKING_SYNC;
}

CUresult
rwait(struct rwait *w, struct rpc_val *out, void **keep)
{
	const struct rpc_desc *d = rpc_lookup(w->type);
	CUresult late = CUDA_SUCCESS;
	const struct rpc_desc *late_d = NULL;
	uint32_t rc;
	uint64_t t0 = now_ns();
	uint8_t *b;
	int waited;

	*keep = NULL;
	pthread_mutex_lock(&tlock);
	waited = !w->done;
	if (waited && live() && wait_spins()) {
		uint64_t one = 1;
		int n = 0;

		/* The I/O thread, if asleep, polls from now on. */
		if (__atomic_add_fetch(&nspinning, 1, __ATOMIC_ACQ_REL) == 1 &&
		    write(evfd, &one, sizeof one) == -1)
			log_debug("eventfd: %s", strerror(errno));
		pthread_mutex_unlock(&tlock);
		while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&rlost, __ATOMIC_ACQUIRE)) {
			if ((++n & 1023) == 0) {
				if (now_ns() - t0 > SPIN_MAX_NS)
					break;
				sched_yield();
			} else
				cpu_relax();
		}
		__atomic_sub_fetch(&nspinning, 1, __ATOMIC_ACQ_REL);
		pthread_mutex_lock(&tlock);
	}
	/* Not while the I/O thread writes the reply into w->dst. */
	while ((!w->done && live()) || w->filling)
		pthread_cond_wait(&tcond, &tlock);
	if (!w->done) {
		waiter_unlink(w);
		rc = state_error();
		pthread_mutex_unlock(&tlock);
		io_output_write();
		return (CUresult)rc;
	}
	if (!w->beside && !w->detached)
		rt_seen(now_ns() - w->tq);
	if (deferred != CUDA_SUCCESS && !w->ahead) {
		late = deferred;
		late_d = rpc_lookup(deferred_type);
		deferred = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&tlock);
	/* What the device printed came ahead of the reply: out before it. */
	io_output_write();
	/* So did the host functions reached: they have run when it returns. */
	if (d != NULL && (d->flags & (RPC_F_WAITS | RPC_F_POLLS)))
		hostcb_wait(w->hmark);
	if (!w->beside && (!w->ahead || waited))
		stats_sync(w->type, now_ns() - t0);
	b = w->buf;
	*keep = b;
	if (b == NULL || w->len < 4)
		return b == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN;
	rc = le32(b);
	if (rc == CUDA_SUCCESS && late != CUDA_SUCCESS) {
		/* An earlier one-way call's error, reported now. */
		rc = late;
		log_debug("%s: reports a queued call's error %u (%s)",
		    d ? d->name : "?", rc, late_d ? late_d->name : "?");
	}
	if (rc != CUDA_SUCCESS) {
		struct gctx *cur = ctx_current();

		log_debug("%s: %u", d ? d->name : "?", rc);
		if (cur != NULL && !w->ahead && rc_sticky((CUresult)rc))
			cur->sticky = (CUresult)rc;
		return (CUresult)rc;
	}
	if (w->direct) {
		/* The one blob of the reply went to w->dst already. */
		out[0].p = w->dst;
		out[0].len = (uint32_t)w->dstlen;
		return CUDA_SUCCESS;
	}
	if (rpc_unpack(b + 4, w->len - 4, d->rep, out) == -1) {
		log_error("server %s: malformed reply to %s", rconn.peer,
		    d->name);
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
}

CUresult
rsend_detached(uint16_t type, const struct rpc_val *in, void *dst,
    size_t len)
{
	struct rwait *w;
	CUresult rc;

	if ((w = calloc(1, sizeof *w)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	w->dst = dst;
	w->dstlen = len;
	pthread_mutex_lock(&tlock);
	ndetached++;
	pthread_mutex_unlock(&tlock);
	w->detached = 1;	/* kept by rsend, like dst */
	if ((rc = rsend(type, in, 0, w)) != CUDA_SUCCESS) {
		pthread_mutex_lock(&tlock);
		ndetached--;
		pthread_mutex_unlock(&tlock);
		free(w);
	}
	return rc;
}

int
ridle_others(void)
{
	return idle_others;
}

void
ridle_set(uint64_t ctx, uint64_t sid, uint64_t mark)
{
	int i, at = -1;

	pthread_mutex_lock(&tlock);
	/*
	 * Only if nothing but calls that are no stream's work was queued
	 * after the mark meanwhile (XLA's other threads query events while
	 * one waits: more of them on a slow link); in the stream's entry,
	 * else one that no longer holds.  The entry then holds as of now.
	 */
	for (i = 0; (queued == mark || work_end <= mark) && i < SIDLE_MAX;
	    i++) {
		if (sidle[i].valid && sidle[i].ctx == ctx &&
		    sidle[i].sid == sid) {
			at = i;
			break;
		}
		if (at < 0 && (!sidle[i].valid || sidle[i].mark != queued))
			at = i;
	}
	if (at >= 0) {
		/* Idle since an earlier mark where its entry still held. */
		if (!sidle[at].valid || sidle[at].ctx != ctx ||
		    sidle[at].sid != sid || sidle[at].mark != queued)
			sidle[at].since = mark;
		sidle[at].ctx = ctx;
		sidle[at].sid = sid;
		sidle[at].mark = queued;
		sidle[at].valid = 1;
	}
	/* The events recorded on it before the mark are complete. */
	for (i = 0; i < EVT_MAX; i++)
		if (evt[i].valid && !evt[i].done && evt[i].ctx == ctx &&
		    (evt[i].sid == sid || sid == RIDLE_ALL) &&
		    evt[i].q <= mark) {
			evt[i].done = 1;
			evt[i].done_at = mark;
		}
	pthread_mutex_unlock(&tlock);
}

/*
 * Under tlock: may what is known idle or complete answer a wait here (the
 * connection up, no error waiting to be reported, no detached call)?
 */
static int
idle_usable(void)
{
	return !sync_mode && rstate == R_UP && deferred == CUDA_SUCCESS &&
	    ndetached == 0;
}

void
ridle_event_forget(uint64_t ev)
{
	int e;

	pthread_mutex_lock(&tlock);
	if ((e = evt_find(ev)) >= 0)
		evt[e].valid = 0;
	pthread_mutex_unlock(&tlock);
}

int
ridle_event_done(uint64_t ev)
{
	int e, yes = 0;

	pthread_mutex_lock(&tlock);
	if (idle_usable() && (e = evt_find(ev)) >= 0)
		yes = evt[e].done;
	pthread_mutex_unlock(&tlock);
	return yes;
}

int
rahead_ok(uint64_t ctx, uint64_t sid, uint64_t epoch, uint64_t q)
{
	int i, yes = 0;

	pthread_mutex_lock(&tlock);
	if (idle_usable() && epoch == ra_epoch && q == ra_q)
		for (i = 0; i < SIDLE_MAX && !yes; i++)
			yes = sidle[i].valid && sidle[i].mark == queued &&
			    sidle[i].ctx == ctx && (sidle[i].sid == sid ||
			    sidle[i].sid == RIDLE_ALL) && sidle[i].since <= q;
	pthread_mutex_unlock(&tlock);
	return yes;
}

int
ridle_check(uint64_t ctx, uint64_t sid)
{
	int yes;

	pthread_mutex_lock(&tlock);
	yes = idle_usable() && sidle_at(ctx, sid, queued);
	pthread_mutex_unlock(&tlock);
	return yes;
}

void
rdrain_detached(void)
{
	pthread_mutex_lock(&tlock);
	while (ndetached > 0 && live())
		pthread_cond_wait(&tcond, &tlock);
	pthread_mutex_unlock(&tlock);
}

/*
 * At exit (client_at_exit, after the program's and cudart's exit
 * handlers): what was queued still reaches the server (bounded wait).  A
 * resumable session ends with BYE, so that the server does not keep it
 * for the window as it would after a drop.
 */
void
io_drain_at_exit(void)
{
	uint64_t until = now_ns() + 5000000000ull;
	struct timespec ts;

	pthread_mutex_lock(&tlock);
	if (resume_ns > 0 && live() && queue_frame(MSG_BYE, 0, 0, NULL, 0,
	    NULL, 0) == 0)
		__atomic_store_n(&rbye, 1, __ATOMIC_RELEASE);
	/* Nothing held back now. */
	if (sendq.len > 0) {
		sendq_flush = 1;
		queue_wake(hold_until != 0);
	}
	while (live() && (sendq.len > 0 || io_busy ||
	    rstate == R_RESUMING) && now_ns() < until) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&tcond, &tlock, &ts);
	}
	pthread_mutex_unlock(&tlock);
	io_output_write();
}

/*
 * Dead servers are noticed in seconds, even without a FIN.  A resumable
 * session is given longer (GLEAM_RESUME_DETECT), keepalive and
 * unacknowledged data alike (TCP_USER_TIMEOUT): a link that goes silent
 * for less is only a delay, one silent for longer is resumed.
 */
static void
io_keepalive(int fd)
{
	int on = 1, idle = 2, intvl = 1, cnt = 3;
	unsigned ut;

	if (resume_ns > 0) {
		cnt = rdetect_s > 3 ? rdetect_s - 2 : 1;
		ut = (unsigned)rdetect_s * 1000;
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
	}
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* The I/O thread, its signals blocked: theirs are the program's threads'. */
static int
io_thread_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&tid, &attr, io_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0)
		log_error("cannot start the I/O thread: %s", strerror(e));
	return e == 0 ? 0 : -1;
}

/* GLEAM_RESUME: the window asked for, in seconds (0: none). */
static long long
resume_want(void)
{
	const char *s = getenv("GLEAM_RESUME"), *why;
	long long v;

	if (s == NULL || *s == '\0')
		return RESUME_DEFAULT_S;
	if (parse_int(s, 0, 86400, &v, &why) == -1) {
		log_warn("GLEAM_RESUME=%s: %s (0 to 86400 seconds): %d s", s,
		    why, RESUME_DEFAULT_S);
		return RESUME_DEFAULT_S;
	}
	return v;
}

/*
 * After WELCOME: the session is resumable if both sides want it, for the
 * shorter of their windows.  The ring holds GLEAM_RESUME_BUFFER bytes,
 * and at least two of the largest batches the I/O thread takes (the send
 * queue's bound, or one frame of the server's largest), so that a batch
 * always fits once the server acknowledged what it received (it does at
 * least every CHAN_ACK_EVERY bytes).
 */
static void
resume_setup(long long want_s)
{
	const char *s, *why;
	uint64_t cap = RESUME_BUFFER_DEFAULT, batch;
	long long v;

	if (want_s == 0 || !(rconn.features & FEAT_RESUME) ||
	    rconn.resume_ms == 0) {
		if (want_s > 0)
			log_debug("server %s: the session is not resumable",
			    rconn.peer);
		return;
	}
	if ((s = getenv("GLEAM_RESUME_BUFFER")) != NULL && *s != '\0') {
		if (parse_size(s, &cap, &why) == -1 || cap == 0) {
			log_warn("GLEAM_RESUME_BUFFER=%s: %s: %u MiB", s,
			    cap == 0 && why == NULL ? "must be positive" : why,
			    RESUME_BUFFER_DEFAULT >> 20);
			cap = RESUME_BUFFER_DEFAULT;
		}
	}
	batch = (rconn.max_frame > SENDQ_MAX ? rconn.max_frame : SENDQ_MAX) +
	    PROTO_HDR_LEN;
	if (cap < 2 * batch) {
		log_debug("GLEAM_RESUME_BUFFER: %llu bytes, at least %llu",
		    (unsigned long long)cap, (unsigned long long)(2 * batch));
		cap = 2 * batch;
	}
	if ((s = getenv("GLEAM_RESUME_DETECT")) != NULL && *s != '\0') {
		if (parse_int(s, 1, 3600, &v, &why) == -1)
			log_warn("GLEAM_RESUME_DETECT=%s: %s (1 to 3600 "
			    "seconds): %d s", s, why, RESUME_DETECT_S);
		else
			rdetect_s = (int)v;
	}
	if (cap > SIZE_MAX || keep_init(&rkeep, (size_t)cap) == -1) {
		log_warn("server %s: no memory for a resume buffer of %llu "
		    "bytes: the session will not resume", rconn.peer,
		    (unsigned long long)cap);
		return;
	}
	/* The ring counts the session's stream, from where it is now. */
	rkeep.base = rkeep.end = rconn.ch.tx_bytes;
	resume_ns = (uint64_t)want_s * 1000000000ull;
	if ((uint64_t)rconn.resume_ms * 1000000ull < resume_ns)
		resume_ns = (uint64_t)rconn.resume_ms * 1000000ull;
	log_debug("server %s: resumable for %.3f s, %llu bytes kept",
	    rconn.peer, (double)resume_ns / 1e9, (unsigned long long)cap);
}

CUresult
io_start(const char *host, int port, const struct auth_key *kp)
{
	struct conn_resume rs;
	const char *s;
	long long want_s = resume_want();

	pthread_atfork(NULL, NULL, io_atfork_child);
	memset(&rs, 0, sizeof rs);
	rs.want = want_s > 0;
	snprintf(rhost, sizeof rhost, "%s", host);
	rport = port;
	if (kp != NULL) {
		rkey = *kp;
		rkeyset = 1;
	}
	if (conn_open_resume(&rconn, host, port, kp,
	    program_invocation_short_name, 5000, &rs) == -1) {
		/* What to do, since the program may hide cuInit's code. */
		log_error("cannot use server %s (%s)", rconn.err,
		    rconn.fail == CONN_AUTH ? "check GLEAM_KEY_FILE against "
		    "the server's key" : "check that gleam-serve runs there "
		    "and GLEAM_SERVER names it; gleam-run checks before the "
		    "program starts");
		stats_error("cannot use server %s", rconn.err);
		return CUDA_ERROR_NO_DEVICE;
	}
	resume_setup(want_s);
	io_keepalive(rconn.fd);
	/* Calls may wait as long as the GPU works; keepalive finds the dead. */
	rconn.timeout_ms = -1;
	spin_ok = sysconf(_SC_NPROCESSORS_ONLN) >= 4;
	if ((s = getenv("GLEAM_SPIN")) != NULL && (strcmp(s, "0") == 0 ||
	    strcmp(s, "1") == 0))
		spin_ok = *s == '1';
	if ((s = getenv("GLEAM_SYNC")) != NULL && strcmp(s, "1") == 0)
		sync_mode = 1;
	if ((s = getenv("GLEAM_HOLD")) != NULL && *s != '\0') {
		if (s[0] >= '0' && s[0] <= '2' && s[1] == '\0')
			hold_mode = s[0] - '0';
		else
			log_warn("GLEAM_HOLD=%s: not 0, 1 or 2; 1 it is", s);
	}
	if ((s = getenv("GLEAM_IDLE_STREAMS")) != NULL && *s != '\0') {
		if ((s[0] == '0' || s[0] == '1') && s[1] == '\0')
			idle_others = s[0] - '0';
		else
			log_warn("GLEAM_IDLE_STREAMS=%s: not 0 or 1; 1 it is", s);
	}
	if ((s = getenv("GLEAM_ZSTD")) != NULL && (strcmp(s, "0") == 0 ||
	    strcmp(s, "1") == 0))
		zmode = *s - '0';
	if (sync_mode)
		zmode = spin_ok = 0;
	if ((evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1) {
		log_error("eventfd: %s", strerror(errno));
		conn_close(&rconn);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	rstate = R_UP;
	if (io_thread_start() == -1) {
		rstate = R_NONE;
		conn_close(&rconn);
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	progress_init();
	return CUDA_SUCCESS;
}

const char *
io_peer(void)
{
	return rconn.peer;
}

const char *
io_server_name(void)
{
	return rconn.server_name;
}

void
io_hook(void (*fn)(uint16_t, const struct rpc_val *))
{
	send_hook = fn;
}
