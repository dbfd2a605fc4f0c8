/*
 * The daemon's event loop: one event_base owns the listener, a bufferevent
 * per worker, a timer that expires late streams and the signal events.
 *
 * Contract: a worker is freed only by worker_free(), at once on EOF or a
 * socket error, or from the write callback once its output has drained
 * after its peer asked to close.  Freeing it makes it leave the group,
 * which queues FAIL at the other members.  All workers are freed before
 * the aggregator, whose chunk buffers their output buffers reference.
 *
 * What the aggregator queues for a worker waits in its peer's plaintext
 * buffer until server_flush seals it into the bufferevent's output: after
 * each read, each tick and each worker's leaving, so that a read's worth
 * of frames to one worker goes out as one record where it fits.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/utsname.h>

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "agg.h"
#include "exitcode.h"
#include "hreduce_wire.h"
#include "log.h"
#include "net.h"
#include "peer.h"
#include "proto.h"
#include "server.h"
#include "svc.h"
#include "util.h"

#define SINGLE_IO		(4u << 20)	/* most bytes written at once */
#define READ_PIECE		(256u << 10)	/* room asked for a read */
#define READ_BURST		(4u << 20)	/* most read from one at once */
#define LOWAT_MAX		(256 << 10)
#define LOWAT_OLD		(16 << 10)	/* before Linux 4.19 */

/*
 * A worker's connection.  The bufferevent only writes (merged chunks go
 * out by reference); reading is ours, one readv a time into in, without
 * the FIONREAD that libevent asks first, and with SO_RCVLOWAT set to what
 * the frame or record being read still lacks, so that a chunk arriving in the
 * pieces of a shaped link wakes the aggregator once, not once a piece.
 */
struct worker {
	TAILQ_ENTRY(worker)	 entry;
	struct server		*srv;
	struct bufferevent	*bev;
	struct event		*rev;
	struct evbuffer		*in;
	struct peer		*peer;
	struct event		*hs_timer;
	char			 addr[64];
	int			 closing;
	int			 lowat;		/* SO_RCVLOWAT set, 0 if none */
};

struct server {
	struct event_base	*base;
	struct evconnlistener	*listener;
	struct agg		*agg;
	struct peer_env		 env;
	const struct server_opts *opts;
	struct auth_key		 key;		/* env.hs's without a key file */
	struct auth_keys	 keys;		/* with one, reloaded on SIGHUP */
	TAILQ_HEAD(, worker)	 workers;
	int			 nworkers;
	struct event		*ev_term, *ev_int, *ev_hup, *ev_tick;
};

static void worker_free(struct worker *);

/* Seals what the aggregator queued for every worker. */
static void
server_flush(struct server *srv)
{
	struct worker *w;

again:
	TAILQ_FOREACH(w, &srv->workers, entry)
		if (peer_flush(w->peer) == -1) {
			/* Its stream is broken: it goes, the others learn. */
			worker_free(w);
			goto again;
		}
}

static void
worker_free(struct worker *w)
{
	struct server *srv = w->srv;

	TAILQ_REMOVE(&srv->workers, w, entry);
	srv->nworkers--;
	/* Leaving the group writes to the others, never to w. */
	peer_free(w->peer);
	if (w->hs_timer != NULL)
		event_free(w->hs_timer);
	if (w->rev != NULL)
		event_free(w->rev);
	if (w->bev != NULL)
		bufferevent_free(w->bev);
	if (w->in != NULL)
		evbuffer_free(w->in);
	log_debug("worker %s: closed", w->addr);
	free(w);
	/* The FAILs of its leaving, to the others. */
	server_flush(srv);
}

/* 1 if w is gone already. */
static int
worker_close_after_flush(struct worker *w)
{
	w->closing = 1;
	event_del(w->rev);
	if (evbuffer_get_length(bufferevent_get_output(w->bev)) == 0) {
		worker_free(w);
		return 1;
	}
	return 0;
}

/*
 * Linux 4.19 and later grow a socket's receive buffer to hold what
 * SO_RCVLOWAT asks for; before, asking more than the buffer holds would
 * never wake us, so ask little there.
 */
static int lowat_max = LOWAT_MAX;

static void
lowat_init(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	    (major < 4 || (major == 4 && minor < 19)))
		lowat_max = LOWAT_OLD;
}

/*
 * Wake up once the frame being read is whole (before WELCOME) or the
 * record (after), or lowat_max more came: both headers are 16 bytes and
 * begin with the length of what follows.
 */
static void
worker_lowat(struct worker *w)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	size_t avail = evbuffer_get_length(w->in), need;
	int v;

	if (avail < PROTO_HDR_LEN)
		need = PROTO_HDR_LEN - avail;
	else {
		evbuffer_copyout(w->in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		need = PROTO_HDR_LEN + (size_t)h.len > avail ?
		    PROTO_HDR_LEN + (size_t)h.len - avail : 1;
	}
	v = need > (size_t)lowat_max ? lowat_max : (int)need;
	if (v == w->lowat || (v == 1 && w->lowat == 0))
		return;
	if (setsockopt(bufferevent_getfd(w->bev), SOL_SOCKET, SO_RCVLOWAT,
	    &v, sizeof v) == 0)
		w->lowat = v;
}

/* What was read goes to the peer; 1 if w is gone. */
static int
worker_input(struct worker *w)
{
	if (w->closing) {
		evbuffer_drain(w->in, evbuffer_get_length(w->in));
		return 0;
	}
	if (peer_input(w->peer, w->in) == PEER_CLOSE) {
		server_flush(w->srv);
		return worker_close_after_flush(w);
	}
	if (peer_ready(w->peer) && w->hs_timer != NULL) {
		event_free(w->hs_timer);
		w->hs_timer = NULL;
	}
	worker_lowat(w);
	return 0;
}

static void
worker_readable(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct evbuffer_iovec v[2];
	struct iovec iov[2];
	size_t got = 0, want;
	ssize_t n;
	int nv, i, eof = 0;

	while (got < READ_BURST) {
		if ((nv = evbuffer_reserve_space(w->in, READ_PIECE, v, 2)) <=
		    0) {
			log_warn("worker %s: out of memory", peer_name(w->peer));
			worker_free(w);
			return;
		}
		for (i = 0, want = 0; i < nv; i++) {
			iov[i].iov_base = v[i].iov_base;
			iov[i].iov_len = v[i].iov_len;
			want += v[i].iov_len;
		}
		n = readv(fd, iov, nv);
		if (n <= 0) {
			evbuffer_commit_space(w->in, v, 0);
			if (n == 0) {
				eof = 1;
				break;
			}
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			log_info("worker %s: %s", peer_name(w->peer),
			    strerror(errno));
			worker_free(w);
			return;
		}
		got += (size_t)n;
		/* The pieces that got bytes, cut to what they got. */
		if ((size_t)n <= v[0].iov_len) {
			v[0].iov_len = (size_t)n;
			nv = 1;
		} else
			v[1].iov_len = (size_t)n - v[0].iov_len;
		evbuffer_commit_space(w->in, v, nv);
		if ((size_t)n < want)
			break;
	}
	if (got > 0) {
		if (worker_input(w))
			return;
		server_flush(w->srv);
	}
	if (eof) {
		log_debug("worker %s: disconnected", peer_name(w->peer));
		worker_free(w);
	}
}

static void
worker_write(struct bufferevent *bev, void *arg)
{
	struct worker *w = arg;

	if (w->closing)
		worker_free(w);
}

static void
worker_event(struct bufferevent *bev, short what, void *arg)
{
	struct worker *w = arg;

	if (what & BEV_EVENT_ERROR)
		log_info("worker %s: %s", peer_name(w->peer),
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	else if (what & BEV_EVENT_EOF)
		log_debug("worker %s: disconnected", peer_name(w->peer));
	worker_free(w);
}

static void
worker_hs_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;

	peer_timeout(w->peer);
	worker_close_after_flush(w);
}

static void
server_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct server *srv = arg;
	struct timeval tv = { HSHAKE_TIMEOUT_DEFAULT, 0 };
	struct worker *w;
	char addr[64];

	net_addr_str(sa, addr, sizeof addr);
	if (srv->nworkers >= srv->opts->max_workers) {
		log_warn("worker %s: refused, %d connected", addr,
		    srv->nworkers);
		evutil_closesocket(fd);
		return;
	}
	net_nodelay(fd);
	if ((w = calloc(1, sizeof *w)) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	w->srv = srv;
	snprintf(w->addr, sizeof w->addr, "%s", addr);
	w->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (w->bev == NULL) {
		evutil_closesocket(fd);
		free(w);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->workers, w, entry);
	srv->nworkers++;
	w->peer = peer_new(&srv->env, addr, bufferevent_get_output(w->bev));
	w->hs_timer = evtimer_new(srv->base, worker_hs_timeout, w);
	w->in = evbuffer_new();
	w->rev = event_new(srv->base, fd, EV_READ | EV_PERSIST,
	    worker_readable, w);
	if (w->peer == NULL || w->hs_timer == NULL || w->in == NULL ||
	    w->rev == NULL) {
		worker_free(w);
		return;
	}
	/* Chunks are big: writing 16 KiB at a time, libevent's default,
	 * costs more in system calls than the merging does. */
	bufferevent_set_max_single_write(w->bev, SINGLE_IO);
	bufferevent_setcb(w->bev, NULL, worker_write, worker_event, w);
	bufferevent_enable(w->bev, EV_WRITE);
	bufferevent_disable(w->bev, EV_READ);
	event_add(w->rev, NULL);
	evtimer_add(w->hs_timer, &tv);
	log_debug("worker %s: accepted", addr);
}

static void
server_accept_error(struct evconnlistener *l, void *arg)
{
	log_warn("accept: %s", strerror(errno));
}

static void
server_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;

	agg_expire(srv->agg, now_ns());
	server_flush(srv);
}

static void
server_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct agg_stats st;

	agg_stats(srv->agg, &st);
	log_info("signal %d: exiting after %llu rounds, %llu failed",
	    (int)sig, (unsigned long long)st.rounds,
	    (unsigned long long)st.failed);
	svc_stopping();
	event_base_loopexit(srv->base, NULL);
}

/*
 * SIGHUP reads the key file again: the next handshakes prove the new key,
 * workers already joined stay; a file that no longer reads keeps the old
 * key, with a warning.
 */
static void
server_hup(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	struct auth_keys ks;
	char err[512];

	svc_reloading();
	if (srv->opts->keyfile == NULL) {
		log_info("SIGHUP: no key file to read again");
		svc_ready(NULL);
		return;
	}
	if (auth_keys_load(&ks, srv->opts->keyfile, err, sizeof err) == -1) {
		log_warn("SIGHUP: %s: keeping the key in use", err);
		svc_ready(NULL);
		return;
	}
	/* A handshake reads them afresh at each step: none holds the old. */
	auth_keys_free(&srv->keys);
	srv->keys = ks;
	/* Standard input is read once: its keys are the ones it gave. */
	log_info("SIGHUP: key read again from %s (%zu identit%s)",
	    strcmp(srv->opts->keyfile, "-") == 0 ?
	    "stdin (as it was at start)" : srv->opts->keyfile, ks.n,
	    ks.n == 1 ? "y" : "ies");
	svc_ready(NULL);
}

static int
server_bind(struct server *srv)
{
	const struct server_opts *o = srv->opts;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char err[256], bound[64];
	int n;

	if (net_resolve(o->host, o->port, 1, &ss, &sslen, err, sizeof err) ==
	    -1) {
		log_error("listen %s:%d: %s", o->host, o->port, err);
		return -1;
	}
	srv->listener = evconnlistener_new_bind(srv->base, server_accept, srv,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    128, (struct sockaddr *)&ss, (int)sslen);
	if (srv->listener == NULL) {
		log_error("listen %s:%d: %s", o->host[0] ? o->host : "*",
		    o->port, strerror(errno));
		return -1;
	}
	evconnlistener_set_error_cb(srv->listener, server_accept_error);
	sslen = sizeof ss;
	getsockname(evconnlistener_get_fd(srv->listener),
	    (struct sockaddr *)&ss, &sslen);
	net_addr_str((struct sockaddr *)&ss, bound, sizeof bound);
	/* Scripts wait for this line, whatever the verbosity. */
	fprintf(stderr, "%s: listening on %s\n", log_progname(), bound);
	if (o->ready_fd >= 0) {
		char line[32];

		n = snprintf(line, sizeof line, "%d\n",
		    ntohs(((struct sockaddr_in *)&ss)->sin_port));
		if (write(o->ready_fd, line, (size_t)n) != n)
			log_warn("cannot report the port: %s",
			    strerror(errno));
		close(o->ready_fd);
	}
	return 0;
}

int
server_run(const struct server_opts *o)
{
	struct server srv;
	struct timeval tick = { 0, 250000 };
	struct worker *w;
	int rc = EXIT_NET;

	/*
	 * Chunks and input buffers come and go by the MiB: keep what is
	 * freed for the next ones instead of giving it back to the kernel,
	 * whose fresh pages cost a fault each (more than merging them, in
	 * some virtual machines).  What stays is what a busy round needed.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	lowat_init();
	memset(&srv, 0, sizeof srv);
	srv.opts = o;
	TAILQ_INIT(&srv.workers);
	if ((srv.base = event_base_new()) == NULL ||
	    (srv.agg = agg_new(&o->limits)) == NULL) {
		log_error("cannot start the event loop");
		rc = EXIT_SOFTWARE;
		goto out;
	}
	srv.key = o->key;
	if (o->keyfile != NULL) {
		srv.keys = o->keys;	/* ours now */
		srv.env.hs.keys = &srv.keys;
	} else
		srv.env.hs.key = &srv.key;
	srv.env.hs.max_frame = o->limits.max_frame;
	srv.env.hs.name = "gleam-reduce";
	srv.env.hs.peer_kind = "worker";
	srv.env.hs.self_kind = "aggregator";
	srv.env.hs.type_name = hr_msg_name;
	srv.env.agg = srv.agg;
	srv.ev_term = evsignal_new(srv.base, SIGTERM, server_signal, &srv);
	srv.ev_int = evsignal_new(srv.base, SIGINT, server_signal, &srv);
	srv.ev_hup = evsignal_new(srv.base, SIGHUP, server_hup, &srv);
	srv.ev_tick = event_new(srv.base, -1, EV_PERSIST, server_tick, &srv);
	if (srv.ev_term == NULL || srv.ev_int == NULL || srv.ev_hup == NULL ||
	    srv.ev_tick == NULL) {
		rc = EXIT_SOFTWARE;
		goto out;
	}
	evsignal_add(srv.ev_term, NULL);
	evsignal_add(srv.ev_int, NULL);
	evsignal_add(srv.ev_hup, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (server_bind(&srv) == -1)
		goto out;
	if (!o->foreground) {
		if (svc_detach() == -1) {
			log_error("daemon: %s", strerror(errno));
			rc = EXIT_IO;
			goto out;
		}
	}
	svc_ready(NULL);
	event_add(srv.ev_tick, &tick);
	event_base_dispatch(srv.base);
	rc = EXIT_OK;
out:
	while ((w = TAILQ_FIRST(&srv.workers)) != NULL)
		worker_free(w);
	if (srv.ev_tick != NULL)
		event_free(srv.ev_tick);
	if (srv.ev_int != NULL)
		event_free(srv.ev_int);
	if (srv.ev_hup != NULL)
		event_free(srv.ev_hup);
	if (srv.ev_term != NULL)
		event_free(srv.ev_term);
	if (srv.listener != NULL)
		evconnlistener_free(srv.listener);
	agg_free(srv.agg);
	if (srv.base != NULL)
		event_base_free(srv.base);
	auth_keys_free(&srv.keys);
	return rc;
}
