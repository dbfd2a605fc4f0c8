/* Bulk lanes, the client's side: see lanes.h. */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanes.h"
#include "chan.h"
#include "client.h"
#include "io.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "progress.h"
#include "proto.h"
#include "stripe.h"
#include "util.h"

#define LANE_MIN	(256u << 10)	/* smaller copies: the main way */
/*
 * Below this pace (of device-to-host pieces) the link, not a CPU, is the
 * bottleneck: lanes buy nothing and the main connection may compress.
 * Then one copy in 64 tries the lanes again.
 */
#define LANE_SLOW_BPS	1e9
#define LINGER_NS	(200ull * 1000)	/* a lane's thread spins this long */

static struct {
	pthread_mutex_t	 order;		/* one copy at a time, in call order */
	unsigned	 n;		/* lanes up; 0: none */
	int		 fd[PROTO_LANES_MAX];
	struct chan	 ch[PROTO_LANES_MAX];	/* each lane's records */
	uint8_t		*stage[PROTO_LANES_MAX];	/* sealing, if sealed */
	pthread_t	 t[PROTO_LANES_MAX];
	int		 spin;
	int		 dtoh;		/* not GLEAM_LANES_DTOH=0 */
	/* The job: one copy's stripes, out of src or into dst. */
	int		 in;
	const uint8_t	*src;
	uint8_t		*dst;
	uint64_t	 len;
	uint64_t	 gen;		/* (atomic) */
	uint64_t	 done[PROTO_LANES_MAX];	/* (atomic) */
	int		 err[PROTO_LANES_MAX];	/* errno, or 0 (atomic) */
	pthread_mutex_t	 mu;
	pthread_cond_t	 go, fin;
	double		 pace;		/* bytes/s of copies of 1 MiB+ */
	unsigned	 skipped;
	/*
	 * A resumable session's lanes come to the main connection's peer
	 * and come back after a drop (gleam-protocol(5), Resume): each
	 * lane's connection (fd) is its own thread's, opened again there.
	 */
	int		 res;
	int		 sealed;
	struct sockaddr_storage peer;
	socklen_t	 peerlen;
	uint8_t		 token[PROTO_LANE_TOKEN];
	uint8_t		 secret[PROTO_LANE_SECRET];
	uint64_t	 session;
	uint32_t	 epoch[PROTO_LANES_MAX];	/* the next to use */
	/*
	 * Migration (gleam-protocol(5), Migration): the lanes stay behind.
	 * moved counts the REDIRECTs (atomic), mseen those followed before
	 * the lanes' server took them (R_LANES_UP); while they differ a lane
	 * that needs its server fails at once (ESTALE) instead of trying the
	 * old one.  New lanes at the new server count their jobs from 1: a
	 * job's number there is gen less jbase.  gone counts the lanes'
	 * calls the new server did not execute (atomic): their bytes go
	 * again.
	 */
	unsigned	 nthr;		/* lanes the threads serve */
	unsigned	 moved, mseen;
	uint64_t	 jbase;
	unsigned	 gone;
} L = {
	.order = PTHREAD_MUTEX_INITIALIZER,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.go = PTHREAD_COND_INITIALIZER,
	.fin = PTHREAD_COND_INITIALIZER,
};

#define XCHG_S		5	/* a new connection's first records, at most */
#define BACKOFF_NS	(50ull * 1000000)	/* doubling, */
#define BACKOFF_MAX_NS	(1000ull * 1000000)	/* up to this */

/*
 * Opens lane i again (a resumable session), at job: its hello with a new
 * epoch (new keys), the server's first record (the last job the lane
 * finished there: *have), ours (the job, which way).  0 with L.fd[i] set,
 * or an errno (EBADMSG: the server is not to be trusted).
 */
static int
lane_open(unsigned i, uint64_t job, uint32_t dir, uint64_t *have)
{
	struct lane_rhello h;
	uint8_t hello[PROTO_LANE_RHELLO];
	struct timeval tv = { XCHG_S, 0 };
	int fd, one = 1, e;

	memset(&h, 0, sizeof h);
	h.idx = i;
	h.epoch = L.epoch[i]++;
	h.session = L.session;
	memcpy(h.token, L.token, sizeof h.token);
	proto_lane_rhello_enc(hello, &h);
	chan_fini(&L.ch[i]);
	if (chan_init_lane_key(&L.ch[i], L.sealed, 0, L.secret, i,
	    h.epoch) == -1)
		return ENOMEM;
	if ((fd = socket(L.peer.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) ==
	    -1)
		return errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	/* Connecting, and the first records, within XCHG_S. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&L.peer, L.peerlen) == -1 ||
	    net_send_all(fd, hello, sizeof hello) != 0) {
		e = errno != 0 ? errno : EPIPE;
		close(fd);
		return e;
	}
	/*
	 * Before the server's first record opened, nothing here is the
	 * session's: a refusal (the server's handshakes are all taken, say)
	 * or noise means only that this try failed.
	 */
	if ((e = stripe_recv_u64(&L.ch[i], fd, have)) != 0) {
		if (e == EBADMSG) {
			log_debug("bulk lane %u: %s", i, L.ch[i].err);
			e = EPROTO;
		}
		close(fd);
		return e;
	}
	if ((e = stripe_send_at(&L.ch[i], fd, job, dir, L.stage[i])) != 0) {
		close(fd);
		return e;
	}
	/* It finished the job before, or this one. */
	if (*have != job && *have + 1 != job) {
		snprintf(L.ch[i].err, sizeof L.ch[i].err, "the server's lane "
		    "is at job %llu, we at %llu", (unsigned long long)*have,
		    (unsigned long long)job);
		close(fd);
		return EBADMSG;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	io_lane_socket(fd);
	L.fd[i] = fd;
	return 0;
}

/* Whether the session moved since the lanes were opened. */
static int
lanes_stale(void)
{
	return __atomic_load_n(&L.moved, __ATOMIC_ACQUIRE) != L.mseen;
}

/* Lane i's connection broke (e): closed, to be opened again. */
static void
lane_drop(unsigned i, int e)
{
	log_debug("bulk lane %u dropped (%s)", i, strerror(e));
	stats_lane_drop(0);
	if (L.fd[i] != -1) {
		close(L.fd[i]);
		L.fd[i] = -1;
	}
}

/*
 * Lane i's stripe of job g in a resumable session: over its connection,
 * then (when that breaks) again over a new one, until the stripe went
 * whole (acknowledged, to the server) or came whole, or the window
 * passed, or the session is lost: 0, or an errno.
 */
static int
lane_rmove(unsigned i, uint64_t g, uint64_t off, uint64_t cnt,
    uint64_t *first)
{
	uint64_t until = 0, back = BACKOFF_NS, have, t, a;
	struct timespec ts;
	int e, again = 0;

	if (cnt == 0)
		return 0;
	/* The job's number on the wire, at the lanes' server. */
	g -= L.jbase;
	for (;;) {
		/* The session moved: this server no longer has the job. */
		if (lanes_stale())
			return ESTALE;
		if (L.fd[i] == -1) {
			if (io_gone())
				return ECONNABORTED;
			if (until == 0)
				until = now_ns() + io_resume_ns();
			if ((t = now_ns()) >= until)
				return ETIMEDOUT;
			e = lane_open(i, g, L.in ? STRIPE_DIR_OUT :
			    STRIPE_DIR_IN, &have);
			if (e == EBADMSG)
				return e;
			if (e != 0) {
				log_debug("bulk lane %u: %s", i, strerror(e));
				t = until - t < back ? until - t : back;
				ts.tv_sec = (time_t)(t / 1000000000);
				ts.tv_nsec = (long)(t % 1000000000);
				nanosleep(&ts, NULL);
				back = back * 2 < BACKOFF_MAX_NS ? back * 2 :
				    BACKOFF_MAX_NS;
				continue;
			}
			back = BACKOFF_NS;
			log_debug("bulk lane %u back, the server at job %llu",
			    i, (unsigned long long)have);
			/* Our stripe came; its acknowledgement did not. */
			if (!L.in && have == g)
				break;
		}
		if (L.in)
			e = stripe_recv(&L.ch[i], L.fd[i], L.dst + off,
			    (size_t)cnt, first);
		else if ((e = stripe_send(&L.ch[i], L.fd[i], L.src + off,
		    (size_t)cnt, L.stage[i])) == 0 &&
		    (e = stripe_recv_u64(&L.ch[i], L.fd[i], &a)) == 0 &&
		    a != g) {
			snprintf(L.ch[i].err, sizeof L.ch[i].err, "job %llu "
			    "acknowledged, %llu sent", (unsigned long long)a,
			    (unsigned long long)g);
			e = EBADMSG;
		}
		if (e == 0)
			break;
		if (e == EBADMSG)
			return e;
		lane_drop(i, e);
		again = 1;
	}
	if (again)
		stats_lane_drop(cnt);
	return 0;
}

/* Lane i's stripe of job g, [off, off + cnt): 0, or an errno. */
static int
lane_move(unsigned i, uint64_t g, uint64_t off, uint64_t cnt,
    uint64_t *first)
{
	if (cnt == 0)
		return 0;
	if (L.res)
		return lane_rmove(i, g, off, cnt, first);
	return L.in ? stripe_recv(&L.ch[i], L.fd[i], L.dst + off,
	    (size_t)cnt, first) : stripe_send(&L.ch[i], L.fd[i], L.src + off,
	    (size_t)cnt, L.stage[i]);
}

static void *
lane_main(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	uint64_t seen = 0, g, off, cnt;
	int e;

	for (;;) {
		g = spin_wait(&L.gen, seen, 1, NULL, L.spin ? LINGER_NS : 0,
		    &L.mu, &L.go);
		seen = g;
		proto_lane_stripe(L.len, L.n, i, &off, &cnt);
		e = lane_move(i, g, off, cnt, NULL);
		pthread_mutex_lock(&L.mu);
		__atomic_store_n(&L.err[i], e, __ATOMIC_RELEASE);
		__atomic_store_n(&L.done[i], g, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&L.fin);
		pthread_mutex_unlock(&L.mu);
	}
	return NULL;
}

/* One piece's bytes over the lanes, out of src or into dst: 0, or an errno. */
static int
lanes_move(const uint8_t *src, uint8_t *dst, uint64_t len)
{
	uint64_t g, off, cnt, t0 = 0;
	unsigned i, bad = 0;
	int e, first = 0;

	L.in = dst != NULL;
	L.src = src;
	L.dst = dst;
	L.len = len;
	pthread_mutex_lock(&L.mu);
	g = __atomic_add_fetch(&L.gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&L.go);
	pthread_mutex_unlock(&L.mu);
	proto_lane_stripe(len, L.n, 0, &off, &cnt);
	if ((e = lane_move(0, g, off, cnt, &t0)) != 0)
		first = e;
	/* Every thread is done with the buffer before it is the program's
	 * again. */
	for (i = 1; i < L.n; i++) {
		spin_wait(&L.done[i], g, 0, NULL, L.spin ? LINGER_NS : 0,
		    &L.mu, &L.fin);
		if ((e = __atomic_load_n(&L.err[i], __ATOMIC_ACQUIRE)) != 0 &&
		    first == 0) {
			first = e;
			bad = i;
		}
	}
	/*
	 * The session moved with the job in hand, and the old server's lanes
	 * went with it: the caller learns from the new server whether the
	 * job's call was executed (lanes_htod, copy.c).
	 */
	if (first != 0 && (first == ESTALE || lanes_stale()))
		return ESTALE;
	if (first != 0) {
		char why[256];

		/* A record that did not open: the copy's bytes are not used. */
		if (first == EBADMSG)
			snprintf(why, sizeof why, "bulk lane %u: %s", bad,
			    L.ch[bad].err);
		else
			snprintf(why, sizeof why, "bulk lane %u: %s", bad,
			    strerror(first));
		rlost_because(why);
		return first;
	}
	if (dst == NULL)
		stats_lanes(0, len, 0);
	else
		stats_lanes(0, 0, len);
	/*
	 * Whether the link is slow: the pace of pieces of 1 MiB or more
	 * coming back, from their first bytes (before, the server may have
	 * waited for the GPU; going out, the time would count that too).
	 */
	if (dst != NULL && len >= (1u << 20) && t0 != 0) {
		uint64_t dt = now_ns() - t0;
		double r = dt > 0 ? (double)len * 1e9 / (double)dt : 0;

		if (r > 0)
			L.pace = L.pace > 0 ? 0.7 * L.pace + 0.3 * r : r;
	}
	return 0;
}

static uint32_t	lanes_up(uint32_t, unsigned *);
static void	lanes_rclose(uint32_t);
static void	lanes_unchan(uint32_t);

/*
 * The session moved (a REDIRECT): the lanes to the old server are closed
 * and as many opened at the new one as it offers, up to the threads, as
 * a new session's are (R_LANES there), their jobs counted from 1 again.
 * Under the order, no job running: the lanes' threads are idle.  Always
 * one round trip to the new server, so that its answers to the calls
 * before are in when this returns (lanes_htod counts on it).
 */
static void
lanes_reopen(void)
{
	uint32_t k = L.n;
	unsigned at;

	L.mseen = __atomic_load_n(&L.moved, __ATOMIC_ACQUIRE);
	lanes_rclose(k);
	lanes_unchan(k);
	__atomic_store_n(&L.n, 0, __ATOMIC_RELEASE);
	L.jbase = __atomic_load_n(&L.gen, __ATOMIC_ACQUIRE);
	k = lanes_up(L.nthr, &at);
	/*
	 * The session may move again while the lanes are opened: an order
	 * that reached the old server with R_LANES in flight has the call
	 * sent again to the new one, which offers the lanes.  They are then
	 * the new server's, where the session is: seen are the moves before
	 * the reply of the server that took them (R_LANES_UP), not those
	 * read above.  Counted stale, the next copy's call went to that
	 * server while its stripes failed at once (ESTALE), and the server,
	 * waiting for them, dropped the session.
	 */
	if (k > 0)
		L.mseen = at;
	__atomic_store_n(&L.n, k, __ATOMIC_RELEASE);
	stats_lanes(k, 0, 0);
	log_debug("lanes: the session moved: %u up at %s", k,
	    k > 0 ? "its new server" : "none");
}

void
lanes_moved(void)
{
	__atomic_add_fetch(&L.moved, 1, __ATOMIC_RELEASE);
}

void
lanes_skipped(void)
{
	__atomic_add_fetch(&L.gone, 1, __ATOMIC_RELEASE);
}

int
lanes_hold(size_t n, int dtoh)
{
	if (__atomic_load_n(&L.n, __ATOMIC_ACQUIRE) == 0 || n < LANE_MIN ||
	    rzstd_forced() || (dtoh && !L.dtoh))
		return 0;
	pthread_mutex_lock(&L.order);
	/* New lanes where the session went, when they are next wanted. */
	if (L.n > 0 && lanes_stale())
		lanes_reopen();
	if (L.n == 0 || (L.pace > 0 && L.pace < LANE_SLOW_BPS &&
	    L.skipped++ % 64 != 0)) {
		pthread_mutex_unlock(&L.order);
		return 0;
	}
	return 1;
}

void
lanes_release(void)
{
	pthread_mutex_unlock(&L.order);
}

int
lanes_in(void *p, size_t n)
{
	return lanes_move(NULL, p, n);
}

int
lanes_htod(uint64_t ctx, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n, CUresult *rc, size_t *done)
{
	struct rpc_val in[5];
	size_t k, off;
	unsigned g0;
	int pg, e;

	*done = 0;
	if (!lanes_hold(n, 0))
		return 0;
	*rc = CUDA_SUCCESS;
	pg = progress_add(n);
	for (off = 0; off < n; off += k) {
		k = n - off < LANES_PIECE_MAX ? n - off : LANES_PIECE_MAX;
		/* The lanes did not come back after a move: the main way. */
		if (L.n == 0)
			break;
		memset(in, 0, sizeof in);
		in[0].u = ctx;
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = dst + off;
		in[4].u = k;
		g0 = __atomic_load_n(&L.gone, __ATOMIC_ACQUIRE);
		if ((*rc = rpost(R_MEM_HTOD_LANES, in, RP_KEEPIDLE)) !=
		    CUDA_SUCCESS)
			break;
		if ((e = lanes_move((const uint8_t *)src + off, NULL, k)) ==
		    ESTALE) {
			/*
			 * The session moved with this piece in hand.  The old
			 * server executed its call, or the new one answered it
			 * RPC_LANES_GONE (io.c counts those) before the reply
			 * to the round trip of lanes_reopen: then it goes
			 * again.
			 */
			lanes_reopen();
			if (__atomic_load_n(&L.gone, __ATOMIC_ACQUIRE) != g0) {
				log_debug("lanes: %zu bytes in hand when the "
				    "session moved: again", k);
				k = 0;
				continue;
			}
			log_debug("lanes: %zu bytes in hand when the session "
			    "moved: the old server had them", k);
		} else if (e != 0) {
			*rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
			break;
		}
		if (pg)
			progress_sent(k, PG_WIRE);
	}
	if (pg && off < n)
		progress_drop(n - off);
	lanes_release();
	if (off < n && *rc == CUDA_SUCCESS) {
		*done = off;
		return 0;
	}
	return 1;
}

unsigned
lanes_count(void)
{
	return __atomic_load_n(&L.n, __ATOMIC_ACQUIRE);
}

/* Forgets lanes 0 to k-1's records. */
static void
lanes_unchan(uint32_t k)
{
	while (k-- > 0) {
		chan_fini(&L.ch[k]);
		free(L.stage[k]);
		L.stage[k] = NULL;
	}
}

/* Lanes 0 to k-1's records, and sealing buffers: 0, or -1 (none kept). */
static int
lanes_chans(uint32_t k)
{
	uint32_t i;

	for (i = 0; i < k; i++) {
		if (chan_init_lane(&L.ch[i], io_chan(), i) == -1) {
			log_warn("lanes: %s: none", L.ch[i].err);
			break;
		}
		if (L.ch[i].sealed && (L.stage[i] = malloc(STRIPE_STAGE)) ==
		    NULL) {
			log_warn("lanes: out of memory: none");
			chan_fini(&L.ch[i]);
			break;
		}
	}
	if (i == k)
		return 0;
	lanes_unchan(i);
	return -1;
}

static void
lanes_atfork_child(void)
{
	unsigned i;

	pthread_mutex_init(&L.order, NULL);
	pthread_mutex_init(&L.mu, NULL);
	pthread_cond_init(&L.go, NULL);
	pthread_cond_init(&L.fin, NULL);
	for (i = 0; i < L.n; i++)
		close(L.fd[i]);
	lanes_unchan(L.n);
	L.n = 0;
}

/* Closes lanes 0 to k-1 of a resumable session. */
static void
lanes_rclose(uint32_t k)
{
	while (k-- > 0)
		if (L.fd[k] != -1) {
			close(L.fd[k]);
			L.fd[k] = -1;
		}
}

/*
 * Opens k lanes of a resumable session to the main connection's peer
 * (through whatever stands between), with the offer's token and secret
 * (blob): 0, or -1 with none open.
 */
static int
lanes_ropen(uint32_t k, const struct sockaddr_storage *peer, socklen_t sl,
    const uint8_t *blob)
{
	uint64_t have;
	uint32_t i;
	int e;

	L.peer = *peer;
	L.peerlen = sl;
	L.sealed = io_chan()->sealed;
	L.session = io_session();
	memcpy(L.token, blob, sizeof L.token);
	memcpy(L.secret, blob + sizeof L.token, sizeof L.secret);
	for (i = 0; i < k; i++) {
		L.fd[i] = -1;
		L.epoch[i] = 0;
		memset(&L.ch[i], 0, sizeof L.ch[i]);
		if (L.sealed && (L.stage[i] = malloc(STRIPE_STAGE)) == NULL)
			break;
		if ((e = lane_open(i, 0, STRIPE_DIR_NONE, &have)) != 0) {
			log_warn("lanes: lane %u: %s: none", i,
			    e == EBADMSG ? L.ch[i].err : strerror(e));
			chan_fini(&L.ch[i]);
			free(L.stage[i]);
			L.stage[i] = NULL;
			break;
		}
	}
	if (i == k)
		return 0;
	lanes_rclose(i);
	lanes_unchan(i);
	return -1;
}

/* Connects lane i to the server's address at port; -1 on failure. */
static int
lane_connect(const struct sockaddr_storage *peer, socklen_t sl,
    uint32_t port, uint32_t i, const uint8_t *token)
{
	struct sockaddr_storage sa = *peer;
	uint8_t hello[PROTO_LANE_HELLO];
	int fd, one = 1;

	if (sa.ss_family == AF_INET)
		((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)port);
	if ((fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	proto_lane_hello_enc(hello, i, token);
	if (connect(fd, (struct sockaddr *)&sa, sl) == -1 ||
	    net_send_all(fd, hello, sizeof hello) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Is the server's end of the main connection (port, addr as it said) the
 * one we connected to?  Otherwise something stands between (a proxy, the
 * link emulator, NAT) that lanes would go around.
 */
static int
lanes_direct(const struct sockaddr_storage *peer, uint32_t port,
    const struct rpc_val *addr)
{
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)peer;

		return addr->len == 4 && ntohs(a->sin_port) == port &&
		    memcmp(&a->sin_addr, addr->p, 4) == 0;
	}
	if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a =
		    (const struct sockaddr_in6 *)peer;

		return addr->len == 16 && ntohs(a->sin6_port) == port &&
		    memcmp(&a->sin6_addr, addr->p, 16) == 0;
	}
	return 0;
}

/*
 * Asks the server for want lanes (R_LANES), opens those it offers and
 * says so (R_LANES_UP): the lanes up, their connections in L.fd, or 0
 * with none.  The first round trip comes before anything else, so that
 * the main connection is up (after a move, at the new server) when its
 * peer is looked at.  *at: the moves followed before the server that
 * took the lanes answered R_LANES_UP (where the lanes are).
 */
static uint32_t
lanes_up(uint32_t want, unsigned *at)
{
	struct rwait w;
	struct rpc_val in[1], out[5];
	struct sockaddr_storage peer;
	socklen_t sl = sizeof peer;
	uint8_t token[PROTO_LANE_TOKEN];
	uint32_t k, port, i;
	void *keep = NULL;
	int fd[PROTO_LANES_MAX];

	in[0].u = want;
	if (remote_call(R_LANES, in, out, &keep) != CUDA_SUCCESS) {
		free(keep);
		return 0;
	}
	k = (uint32_t)out[0].u;
	port = (uint32_t)out[1].u;
	if (k == 0) {
		free(keep);
		log_debug("lanes: the server offers none");
		return 0;
	}
	/* Resumable: no port, the lanes go where the main connection goes. */
	L.res = io_resumable();
	if (k > want || k > PROTO_LANES_MAX || (L.res ? port != 0 ||
	    out[2].len != PROTO_LANE_TOKEN + PROTO_LANE_SECRET : port == 0 ||
	    port > 65535 || out[2].len != PROTO_LANE_TOKEN) ||
	    getpeername(rconn_fd(), (struct sockaddr *)&peer, &sl) == -1 ||
	    (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)) {
		free(keep);
		log_warn("lanes: a malformed offer, or no address: none");
		in[0].u = 0;
		if (remote_call(R_LANES_UP, in, out, &keep) == CUDA_SUCCESS)
			free(keep);
		return 0;
	}
	memcpy(token, out[2].p, sizeof token);
	i = 0;
	if (L.res) {
		if (lanes_ropen(k, &peer, sl, out[2].p) == 0)
			i = k;
	} else if (!lanes_direct(&peer, (uint32_t)out[3].u, &out[4]))
		log_debug("lanes: a proxy between us and the server: none");
	else if (lanes_chans(k) == 0) {
		for (; i < k; i++)
			if ((fd[i] = lane_connect(&peer, sl, port, i, token)) ==
			    -1)
				break;
	}
	free(keep);
	keep = NULL;
	in[0].u = i == k ? k : 0;
	memset(&w, 0, sizeof w);
	if (rsend(R_LANES_UP, in, 0, &w) != CUDA_SUCCESS ||
	    rwait(&w, out, &keep) != CUDA_SUCCESS ||
	    i < k || (uint32_t)out[0].u != k) {
		if (i == k)
			log_warn("lanes: the server did not take them: none");
		if (L.res)
			lanes_rclose(i);
		else
			while (i-- > 0)
				close(fd[i]);
		lanes_unchan(k);
		free(keep);
		L.res = 0;
		return 0;
	}
	free(keep);
	for (i = 0; i < k && !L.res; i++)
		L.fd[i] = fd[i];
	*at = w.moves;
	return k;
}

void
lanes_init(void)
{
	uint32_t want, k, i;
	unsigned at;
	const char *s, *why;
	long long v;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	/*
	 * Default: 4 where a host has the CPUs to drive them; 8 where the
	 * records are sealed and it has 16, so that the cipher's passes
	 * spread over more cores (on the H200's host, 4 sealed lanes moved
	 * 0.58 of the clear rate host to device on loopback).
	 */
	want = ncpu >= 8 ? 4 : 0;
	if (ncpu >= 16 && io_chan()->sealed)
		want = 8;
	if ((s = getenv("GLEAM_LANES")) != NULL && *s != '\0') {
		if (parse_int(s, 0, PROTO_LANES_MAX, &v, &why) == -1) {
			log_warn("GLEAM_LANES=%s: %s (0 to %d): no lanes", s,
			    why, PROTO_LANES_MAX);
			return;
		}
		want = (uint32_t)v;
	}
	/* One lane is the main connection's pace again: no gain. */
	if (want < 2 || rsync_mode())
		return;
	if ((k = lanes_up(want, &at)) == 0)
		return;
	L.n = k;
	L.nthr = k;
	L.mseen = at;
	L.spin = rspin_ok();
	L.dtoh = (s = getenv("GLEAM_LANES_DTOH")) == NULL || strcmp(s, "0") != 0;
	{
		sigset_t all, old;

		/* The program's signals are for the program's threads. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		for (i = 1; i < k; i++) {
			if (pthread_create(&L.t[i], NULL, lane_main,
			    (void *)(uintptr_t)i) != 0)
				break;
			pthread_detach(L.t[i]);
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (i < k) {
		/*
		 * The threads that started wait for a job that never comes;
		 * the server's lanes wait for a call that never comes.
		 */
		log_warn("lanes: cannot start their threads: none");
		L.n = 0;
		return;
	}
	pthread_atfork(NULL, NULL, lanes_atfork_child);
	stats_lanes(k, 0, 0);
	log_debug("lanes: %u up", k);
}
