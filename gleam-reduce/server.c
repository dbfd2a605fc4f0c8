/*
 * The daemon's event loop: one event_base owns the listener, a bufferevent
 * per worker, a timer that expires late streams and the signal events.
 *
 * Contract: a worker is freed only by worker_free(), at once on EOF or a
 * socket error, or from the write callback once its output has drained
 * after its peer asked to close.  Freeing it makes it leave the group,
 * which queues FAIL at the other members.  All workers are freed before
 * the aggregator, whose chunk buffers their output buffers reference.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "util.h"

#define HANDSHAKE_TIMEOUT	10	/* seconds */
#define SINGLE_IO		(4u << 20)

struct worker {
	TAILQ_ENTRY(worker)	 entry;
	struct server		*srv;
	struct bufferevent	*bev;
	struct peer		*peer;
	struct event		*hs_timer;
	char			 addr[64];
	int			 closing;
};

struct server {
	struct event_base	*base;
	struct evconnlistener	*listener;
	struct agg		*agg;
	struct peer_env		 env;
	const struct server_opts *opts;
	TAILQ_HEAD(, worker)	 workers;
	int			 nworkers;
	struct event		*ev_term, *ev_int, *ev_tick;
};

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
	if (w->bev != NULL)
		bufferevent_free(w->bev);
	log_debug("worker %s: closed", w->addr);
	free(w);
}

static void
worker_close_after_flush(struct worker *w)
{
	w->closing = 1;
	bufferevent_disable(w->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(w->bev)) == 0)
		worker_free(w);
}

static void
worker_read(struct bufferevent *bev, void *arg)
{
	struct worker *w = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (w->closing) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	if (peer_input(w->peer, in) == PEER_CLOSE) {
		worker_close_after_flush(w);
		return;
	}
	if (peer_ready(w->peer) && w->hs_timer != NULL) {
		event_free(w->hs_timer);
		w->hs_timer = NULL;
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

	log_info("worker %s: handshake timed out, closing", w->addr);
	worker_free(w);
}

static void
server_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct server *srv = arg;
	struct timeval tv = { HANDSHAKE_TIMEOUT, 0 };
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
	if (w->peer == NULL || w->hs_timer == NULL) {
		worker_free(w);
		return;
	}
	/* Chunks are a MiB: reading and writing 16 KiB at a time, libevent's
	 * default, costs more in system calls than the merging does. */
	bufferevent_set_max_single_read(w->bev, SINGLE_IO);
	bufferevent_set_max_single_write(w->bev, SINGLE_IO);
	bufferevent_setcb(w->bev, worker_read, worker_write, worker_event, w);
	bufferevent_enable(w->bev, EV_READ | EV_WRITE);
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
	event_base_loopexit(srv->base, NULL);
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

	memset(&srv, 0, sizeof srv);
	srv.opts = o;
	TAILQ_INIT(&srv.workers);
	if ((srv.base = event_base_new()) == NULL ||
	    (srv.agg = agg_new(&o->limits)) == NULL) {
		log_error("cannot start the event loop");
		rc = EXIT_SOFTWARE;
		goto out;
	}
	srv.env.key = &o->key;
	srv.env.max_frame = o->limits.max_frame;
	srv.env.name = "gleam-reduce";
	srv.env.agg = srv.agg;
	srv.ev_term = evsignal_new(srv.base, SIGTERM, server_signal, &srv);
	srv.ev_int = evsignal_new(srv.base, SIGINT, server_signal, &srv);
	srv.ev_tick = event_new(srv.base, -1, EV_PERSIST, server_tick, &srv);
	if (srv.ev_term == NULL || srv.ev_int == NULL || srv.ev_tick == NULL) {
		rc = EXIT_SOFTWARE;
		goto out;
	}
	evsignal_add(srv.ev_term, NULL);
	evsignal_add(srv.ev_int, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (server_bind(&srv) == -1)
		goto out;
	if (!o->foreground) {
		if (daemon(0, 0) == -1) {
			log_error("daemon: %s", strerror(errno));
			rc = EXIT_IO;
			goto out;
		}
		log_syslog(1);
	}
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
	if (srv.ev_term != NULL)
		event_free(srv.ev_term);
	if (srv.listener != NULL)
		evconnlistener_free(srv.listener);
	agg_free(srv.agg);
	if (srv.base != NULL)
		event_base_free(srv.base);
	return rc;
}
