/*
 * The proxy's event loop: accepting clients, connecting each to the
 * target, and the lifecycle of a connection.
 *
 * A connection has two sockets, client and target, each with a
 * bufferevent that only writes, and two shapers: sh[side] reads side's
 * socket itself and writes through the other side's bufferevent.  The
 * client is not read until the target has answered.  A FIN travels through its
 * shaper like data and becomes a shutdown of the other socket's write
 * half; when both directions have done so, the connection is freed.  An
 * error on either socket (a reset, a failed write) ends both at once.
 * Freeing is always deferred to an event of its own, so that no callback
 * ever runs on, or returns into, a freed connection.
 */
#include <sys/types.h>
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

#include "exitcode.h"
#include "link.h"
#include "log.h"
#include "net.h"
#include "parse.h"
#include "shaper.h"
#include "util.h"

#define CONNECT_TIMEOUT	10	/* seconds for the target to answer */
#define RELISTEN_MS	100	/* pause after accept fails (out of fds) */

enum link_side { SIDE_CLIENT = 0, SIDE_TARGET = 1 };

struct link;

struct link_conn {
	TAILQ_ENTRY(link_conn)	 entry;
	struct link		*link;
	uint64_t		 id;
	struct bufferevent	*bev[2];	/* by enum link_side */
	struct shaper		*sh[2];		/* sh[side] reads side */
	const struct addrinfo	*ai;		/* target address tried */
	struct event		*freeev;
	int			 ndone;		/* directions finished */
	int			 closing;
	uint64_t		 start;
	char			 peer[64];
};

struct link {
	const struct link_config *cfg;
	struct event_base	*base;
	struct evconnlistener	*listener;
	struct event		*sigint;
	struct event		*sigterm;
	struct event		*relisten;
	struct addrinfo		*target;
	TAILQ_HEAD(, link_conn)	 conns;
	uint64_t		 nextid;
	/* Faults: link_config's, with their state here. */
	struct link_fault	 fault[LINK_FAULTS_MAX];
	int			 nfault;
	uint64_t		 crossed;	/* bytes, all connections */
	uint64_t		 first;		/* ns: first connection */
	uint64_t		 hole_end;	/* ns: a black hole lasts */
	struct event		*fault_ev;	/* fires what is due */
	struct event		*hole_ev;	/* the hole ends */
	struct event		*time_ev;	/* the next timed fault */
};

static const char *side_name[] = { "client", "target" };

static void	link_conn_close(struct link_conn *, const char *, const char *);
static void	link_event_cb(struct bufferevent *, short, void *);

/* Frees a connection; only ever from its own event (see above). */
static void
link_conn_free(struct link_conn *c)
{
	int i;

	TAILQ_REMOVE(&c->link->conns, c, entry);
	for (i = 0; i < 2; i++) {
		shaper_free(c->sh[i]);
		if (c->bev[i] != NULL)
			bufferevent_free(c->bev[i]);
	}
	if (c->freeev != NULL)
		event_free(c->freeev);
	free(c);
}

static void
link_conn_free_cb(evutil_socket_t fd, short what, void *arg)
{
	link_conn_free(arg);
}

/*
 * Stops all traffic on a connection and schedules its freeing.  side
 * names the socket at fault, or is NULL for a clean end.
 */
static void
link_conn_close(struct link_conn *c, const char *side, const char *why)
{
	char dur[32];
	int i;

	if (c->closing)
		return;
	c->closing = 1;
	for (i = 0; i < 2; i++) {
		if (c->sh[i] != NULL)
			shaper_stop(c->sh[i]);
		if (c->bev[i] != NULL)
			bufferevent_disable(c->bev[i], EV_READ | EV_WRITE);
	}
	if (c->sh[SIDE_CLIENT] != NULL && c->sh[SIDE_TARGET] != NULL) {
		fmt_duration((double)(now_ns() - c->start) / 1e9, dur,
		    sizeof dur);
		log_info("connection %llu: closed%s%s%s%s, %llu bytes up, "
		    "%llu bytes down, in %s", (unsigned long long)c->id,
		    side != NULL ? " by " : "", side != NULL ? side : "",
		    why != NULL ? ": " : "", why != NULL ? why : "",
		    (unsigned long long)shaper_delivered(c->sh[SIDE_CLIENT]),
		    (unsigned long long)shaper_delivered(c->sh[SIDE_TARGET]),
		    dur);
	}
	event_active(c->freeev, EV_TIMEOUT, 1);
}

/* A direction delivered its FIN: the connection ends with the second. */
static void
link_conn_done(struct shaper *sh, void *arg)
{
	struct link_conn *c = arg;

	log_debug("connection %llu: %s sent its end of data",
	    (unsigned long long)c->id,
	    side_name[sh == c->sh[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_TARGET]);
	if (++c->ndone == 2)
		link_conn_close(c, NULL, NULL);
}

/* Reading a socket failed (a reset, most often). */
static void
link_conn_fail(struct shaper *sh, const char *why, void *arg)
{
	struct link_conn *c = arg;

	link_conn_close(c,
	    side_name[sh == c->sh[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_TARGET],
	    why);
}

static void
link_write_cb(struct bufferevent *bev, void *arg)
{
	struct link_conn *c = arg;
	int side = bev == c->bev[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_TARGET;

	/* This socket is written by the other side's shaper. */
	if (!c->closing && c->sh[!side] != NULL)
		shaper_drained(c->sh[!side]);
}

/* ---- faults -------------------------------------------------------- */

static const char *fault_name[] = { "cut", "reset", "black hole" };

int
link_fault_parse(const char *arg, struct link_fault *f, const char **why)
{
	char buf[128], *at, *plus;
	double d;

	memset(f, 0, sizeof *f);
	if ((size_t)snprintf(buf, sizeof buf, "%s", arg) >= sizeof buf) {
		*why = "too long";
		return -1;
	}
	if ((at = strchr(buf, '@')) == NULL) {
		*why = "expected kind@trigger, e.g. cut@1m or hole@2s+2s";
		return -1;
	}
	*at++ = '\0';
	if (strcmp(buf, "cut") == 0)
		f->kind = FAULT_CUT;
	else if (strcmp(buf, "reset") == 0)
		f->kind = FAULT_RESET;
	else if (strcmp(buf, "hole") == 0)
		f->kind = FAULT_HOLE;
	else {
		*why = "unknown fault (cut, reset or hole)";
		return -1;
	}
	if ((plus = strchr(at, '+')) != NULL)
		*plus++ = '\0';
	if ((plus != NULL) != (f->kind == FAULT_HOLE)) {
		*why = f->kind == FAULT_HOLE ? "a hole needs +duration" :
		    "only a hole takes +duration";
		return -1;
	}
	if (plus != NULL) {
		if (parse_duration(plus, &f->hold, why) == -1)
			return -1;
		if (f->hold <= 0 || f->hold > 3600) {
			*why = "duration not between 0 and 1h";
			return -1;
		}
	}
	/* A time has a unit of time; a byte count does not. */
	if (*at != '\0' && strpbrk(at, "s") != NULL) {
		if (parse_duration(at, &d, why) == -1)
			return -1;
		if (d < 0 || d > 86400) {
			*why = "time not between 0 and 1d";
			return -1;
		}
		f->by_time = 1;
		f->at = d;
		return 0;
	}
	return parse_size(at, &f->bytes, why);
}

static void	link_time_arm(struct link *);

/* Whether a hole holds the link now. */
static int
link_in_hole(struct link *lk)
{
	return lk->hole_end != 0 && now_ns() < lk->hole_end;
}

/* Of n bytes ready to cross, how many may: up to the next byte fault. */
static size_t
link_gate(struct shaper *sh, size_t n, void *arg)
{
	struct link_conn *c = arg;
	struct link *lk = c->link;
	uint64_t room;
	int i;

	if (c->closing || link_in_hole(lk))
		return 0;
	for (i = 0; i < lk->nfault; i++) {
		if (lk->fault[i].fired || lk->fault[i].by_time)
			continue;
		room = lk->fault[i].bytes > lk->crossed ?
		    lk->fault[i].bytes - lk->crossed : 0;
		if (n > room)
			n = (size_t)room;
	}
	return n;
}

/* Counts what crossed; a byte fault reached fires from the loop. */
static void
link_delivered(struct shaper *sh, size_t n, void *arg)
{
	struct link_conn *c = arg;
	struct link *lk = c->link;
	int i;

	lk->crossed += n;
	for (i = 0; i < lk->nfault; i++)
		if (!lk->fault[i].fired && !lk->fault[i].by_time &&
		    lk->crossed >= lk->fault[i].bytes)
			event_active(lk->fault_ev, EV_TIMEOUT, 1);
}

/* Every open connection ends: FIN to both ends, or a reset. */
static void
link_fault_end(struct link *lk, int reset)
{
	struct link_conn *c;
	struct linger lg = { 1, 0 };
	int i, fd;

	TAILQ_FOREACH(c, &lk->conns, entry) {
		if (c->closing)
			continue;
		for (i = 0; i < 2; i++) {
			if (c->bev[i] == NULL)
				continue;
			fd = bufferevent_getfd(c->bev[i]);
			if (reset)
				setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg,
				    sizeof lg);
			else
				shutdown(fd, SHUT_RDWR);
		}
		link_conn_close(c, NULL, reset ? "fault: reset" :
		    "fault: cut");
	}
}

static void
link_hole_end_cb(evutil_socket_t fd, short what, void *arg)
{
	struct link *lk = arg;
	struct link_conn *c;
	int i;

	if (link_in_hole(lk)) {
		struct timeval tv = { 0, 1000 };

		evtimer_add(lk->hole_ev, &tv);
		return;
	}
	log_info("fault: the black hole ends, traffic goes on");
	lk->hole_end = 0;
	TAILQ_FOREACH(c, &lk->conns, entry)
		for (i = 0; i < 2 && !c->closing; i++)
			if (c->sh[i] != NULL)
				shaper_kick(c->sh[i]);
}

static void
link_fault_fire(struct link *lk, struct link_fault *f)
{
	struct timeval tv;

	f->fired = 1;
	if (f->by_time)
		log_info("fault: %s at %.3f s, after %llu bytes",
		    fault_name[f->kind], f->at,
		    (unsigned long long)lk->crossed);
	else
		log_info("fault: %s after %llu bytes", fault_name[f->kind],
		    (unsigned long long)lk->crossed);
	switch (f->kind) {
	case FAULT_CUT:
	case FAULT_RESET:
		link_fault_end(lk, f->kind == FAULT_RESET);
		break;
	case FAULT_HOLE:
		lk->hole_end = now_ns() + (uint64_t)(f->hold * 1e9);
		tv.tv_sec = (time_t)f->hold;
		tv.tv_usec = (suseconds_t)((f->hold - (double)tv.tv_sec) * 1e6);
		evtimer_add(lk->hole_ev, &tv);
		break;
	}
}

/* Fires every fault that is due. */
static void
link_fault_cb(evutil_socket_t fd, short what, void *arg)
{
	struct link *lk = arg;
	double t = lk->first ? (double)(now_ns() - lk->first) / 1e9 : -1;
	int i;

	for (i = 0; i < lk->nfault; i++) {
		struct link_fault *f = &lk->fault[i];

		if (f->fired)
			continue;
		if (f->by_time ? (t >= 0 && t + 1e-4 >= f->at) :
		    lk->crossed >= f->bytes)
			link_fault_fire(lk, f);
	}
	link_time_arm(lk);
}

/* The timer for the next timed fault, once the first connection came. */
static void
link_time_arm(struct link *lk)
{
	double next = -1, t;
	struct timeval tv;
	int i;

	if (lk->first == 0)
		return;
	for (i = 0; i < lk->nfault; i++)
		if (!lk->fault[i].fired && lk->fault[i].by_time &&
		    (next < 0 || lk->fault[i].at < next))
			next = lk->fault[i].at;
	if (next < 0)
		return;
	t = next - (double)(now_ns() - lk->first) / 1e9;
	if (t < 0)
		t = 0;
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6);
	evtimer_add(lk->time_ev, &tv);
}

/* The target answered: start both directions. */
static void
link_conn_start(struct link_conn *c)
{
	const struct link_config *cfg = c->link->cfg;
	struct shaper_cb cb = { link_conn_done, link_conn_fail, link_gate,
	    link_delivered, c };
	char addr[80];
	uint64_t seed;
	int i;

	bufferevent_set_timeouts(c->bev[SIDE_TARGET], NULL, NULL);
	for (i = 0; i < 2; i++) {
		/* Each connection and direction its own jitter sequence. */
		seed = cfg->seed ^ (c->id << 1 | (uint64_t)i) *
		    0x9e3779b97f4a7c15ULL;
		c->sh[i] = shaper_new(c->link->base, &cfg->dir[i], seed,
		    bufferevent_getfd(c->bev[i]), c->bev[!i], &cb);
		if (c->sh[i] == NULL) {
			log_warn("connection %llu: out of memory",
			    (unsigned long long)c->id);
			link_conn_close(c, NULL, "out of memory");
			return;
		}
	}
	c->start = now_ns();
	for (i = 0; i < 2; i++) {
		/* The shapers read the sockets; the bufferevents only write. */
		bufferevent_disable(c->bev[i], EV_READ);
		bufferevent_enable(c->bev[i], EV_WRITE);
		shaper_start(c->sh[i]);
	}
	log_info("connection %llu: %s to %s", (unsigned long long)c->id,
	    c->peer, net_addr_str(c->ai->ai_addr, addr, sizeof addr));
}

/*
 * Starts connecting to the target, from address c->ai on.  Immediate
 * failures move on to the next address here; later ones come back
 * through link_event_cb.  Returns -1 with errno when none is left.
 */
static int
link_conn_dial(struct link_conn *c)
{
	struct timeval tv = { CONNECT_TIMEOUT, 0 };
	struct bufferevent *bev;
	int fd, saved = ECONNREFUSED;

	for (; c->ai != NULL; c->ai = c->ai->ai_next) {
		fd = socket(c->ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		if (fd == -1) {
			saved = errno;
			continue;
		}
		net_nodelay(fd);
		if (connect(fd, c->ai->ai_addr, c->ai->ai_addrlen) == -1 &&
		    errno != EINPROGRESS) {
			saved = errno;
			close(fd);
			continue;
		}
		if ((bev = bufferevent_socket_new(c->link->base, fd,
		    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
			saved = ENOMEM;
			close(fd);
			continue;
		}
		bufferevent_setcb(bev, NULL, link_write_cb, link_event_cb, c);
		bufferevent_set_timeouts(bev, NULL, &tv);
		/* No address: the connect is ours, libevent waits for it. */
		if (bufferevent_socket_connect(bev, NULL, 0) == -1) {
			saved = errno;
			bufferevent_free(bev);
			continue;
		}
		c->bev[SIDE_TARGET] = bev;
		return 0;
	}
	errno = saved;
	return -1;
}

/* The target failed to answer: try its next address, or give up. */
static void
link_conn_unreachable(struct link_conn *c, const char *why)
{
	const struct link_config *cfg = c->link->cfg;

	bufferevent_free(c->bev[SIDE_TARGET]);
	c->bev[SIDE_TARGET] = NULL;
	c->ai = c->ai->ai_next;
	if (c->ai != NULL) {
		if (link_conn_dial(c) == 0)
			return;
		why = strerror(errno);
	}
	log_warn("connection %llu: %s: target %s:%d: %s",
	    (unsigned long long)c->id, c->peer, cfg->target_host,
	    cfg->target_port, why);
	link_conn_close(c, NULL, NULL);
}

/* The target's connect finished or failed, or a write failed. */
static void
link_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct link_conn *c = arg;
	int side = bev == c->bev[SIDE_CLIENT] ? SIDE_CLIENT : SIDE_TARGET;
	int saved = EVUTIL_SOCKET_ERROR();

	if (c->closing)
		return;
	if (c->sh[SIDE_CLIENT] == NULL) {
		/* Still connecting to the target. */
		if (side == SIDE_CLIENT)
			link_conn_close(c, side_name[side], "gone");
		else if (what & BEV_EVENT_CONNECTED)
			link_conn_start(c);
		else
			link_conn_unreachable(c, (what & BEV_EVENT_TIMEOUT) ?
			    "timed out" : strerror(saved));
		return;
	}
	/* Only writing is left to the bufferevents, so: a write failed. */
	link_conn_close(c, side_name[side], (what & BEV_EVENT_ERROR) ?
	    evutil_socket_error_to_string(saved) : "timed out");
}

/* A client: set up its connection and dial the target for it. */
static void
link_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct link *lk = arg;
	struct link_conn *c;

	if ((c = calloc(1, sizeof *c)) == NULL) {
		log_warn("accept: out of memory");
		close(fd);
		return;
	}
	c->link = lk;
	c->id = ++lk->nextid;
	if (lk->first == 0) {
		/* Timed faults count from here. */
		lk->first = now_ns();
		link_time_arm(lk);
	}
	c->ai = lk->target;
	net_addr_str(sa, c->peer, sizeof c->peer);
	TAILQ_INSERT_TAIL(&lk->conns, c, entry);
	net_nodelay(fd);
	c->freeev = event_new(lk->base, -1, 0, link_conn_free_cb, c);
	c->bev[SIDE_CLIENT] = bufferevent_socket_new(lk->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->freeev == NULL || c->bev[SIDE_CLIENT] == NULL) {
		log_warn("accept: out of memory");
		if (c->bev[SIDE_CLIENT] == NULL)
			close(fd);
		link_conn_free(c);
		return;
	}
	bufferevent_setcb(c->bev[SIDE_CLIENT], NULL, link_write_cb,
	    link_event_cb, c);
	/* The bufferevents never read: see link_conn_start. */
	bufferevent_disable(c->bev[SIDE_CLIENT], EV_READ);
	log_debug("connection %llu: from %s", (unsigned long long)c->id,
	    c->peer);
	if (link_conn_dial(c) == -1) {
		log_warn("connection %llu: %s: target %s:%d: %s",
		    (unsigned long long)c->id, c->peer, lk->cfg->target_host,
		    lk->cfg->target_port, strerror(errno));
		link_conn_close(c, NULL, NULL);
	}
}

/* Out of file descriptors, say: pause accepting rather than spin. */
static void
link_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct link *lk = arg;
	struct timeval tv = { 0, RELISTEN_MS * 1000 };

	log_warn("accept: %s",
	    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	evconnlistener_disable(l);
	evtimer_add(lk->relisten, &tv);
}

static void
link_relisten_cb(evutil_socket_t fd, short what, void *arg)
{
	struct link *lk = arg;

	evconnlistener_enable(lk->listener);
}

static void
link_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct link *lk = arg;

	log_info("%s: shutting down", strsignal((int)sig));
	event_base_loopbreak(lk->base);
}

/* Resolves the target once, at start: each connection tries each address. */
static void
link_resolve_target(struct link *lk)
{
	const struct link_config *cfg = lk->cfg;
	struct addrinfo hints;
	char service[16];
	int rc;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof service, "%d", cfg->target_port);
	rc = getaddrinfo(cfg->target_host, service, &hints, &lk->target);
	if (rc != 0)
		fatalx(EXIT_NET, "target %s: %s", cfg->target_host,
		    rc == EAI_NONAME ? "no such host" : gai_strerror(rc));
}

/* Binds the listener and prints the line that scripts wait for. */
static void
link_listen(struct link *lk)
{
	const struct link_config *cfg = lk->cfg;
	struct sockaddr_storage ss;
	socklen_t len;
	char err[256], addr[80];

	if (net_resolve(cfg->listen_host, cfg->listen_port, 1, &ss, &len, err,
	    sizeof err) == -1)
		fatalx(EXIT_NET, "listen address %s: %s", cfg->listen_host,
		    err);
	lk->listener = evconnlistener_new_bind(lk->base, link_accept_cb, lk,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    -1, (struct sockaddr *)&ss, (int)len);
	if (lk->listener == NULL)
		fatal(EXIT_NET, "listen on %s",
		    net_addr_str((struct sockaddr *)&ss, addr, sizeof addr));
	evconnlistener_set_error_cb(lk->listener, link_accept_error_cb);
	len = sizeof ss;
	if (getsockname(evconnlistener_get_fd(lk->listener),
	    (struct sockaddr *)&ss, &len) == -1)
		fatal(EXIT_NET, "getsockname");
	/* At every log level: tests and scripts read the port from it. */
	fprintf(stderr, "%s: listening on %s\n", log_progname(),
	    net_addr_str((struct sockaddr *)&ss, addr, sizeof addr));
	fflush(stderr);
}

/* One line per direction, for -v. */
static void
link_log_config(const struct link_config *cfg)
{
	static const char *names[] = { "client to target",
	    "target to client" };
	char rate[32], delay[32], jitter[32], queue[32];
	const struct shaper_params *p;
	int i;

	for (i = 0; i < 2; i++) {
		p = &cfg->dir[i];
		if (p->rate > 0)
			fmt_rate(p->rate, rate, sizeof rate);
		else
			snprintf(rate, sizeof rate, "unlimited");
		log_info("%s: rate %s, delay %s, jitter %s, queue %s", names[i],
		    rate, fmt_duration(p->delay, delay, sizeof delay),
		    fmt_duration(p->jitter, jitter, sizeof jitter),
		    p->rate > 0 ? fmt_size(p->queue, queue, sizeof queue) :
		    "none");
	}
}

int
link_run(const struct link_config *cfg)
{
	struct event_config *ecfg;
	struct link lk;
	struct link_conn *c;

	memset(&lk, 0, sizeof lk);
	lk.cfg = cfg;
	TAILQ_INIT(&lk.conns);
	/* A peer that vanishes must cost a write error, not the process. */
	signal(SIGPIPE, SIG_IGN);

	/* Sub-millisecond delays need timers honoured to the microsecond. */
	if ((ecfg = event_config_new()) == NULL)
		fatalx(EXIT_SOFTWARE, "event_config_new failed");
	event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	lk.base = event_base_new_with_config(ecfg);
	event_config_free(ecfg);
	if (lk.base == NULL)
		fatalx(EXIT_SOFTWARE, "event_base_new failed");

	link_resolve_target(&lk);
	link_listen(&lk);
	link_log_config(cfg);

	lk.sigint = evsignal_new(lk.base, SIGINT, link_signal_cb, &lk);
	lk.sigterm = evsignal_new(lk.base, SIGTERM, link_signal_cb, &lk);
	lk.relisten = evtimer_new(lk.base, link_relisten_cb, &lk);
	memcpy(lk.fault, cfg->fault, sizeof lk.fault);
	lk.nfault = cfg->nfault;
	lk.fault_ev = event_new(lk.base, -1, 0, link_fault_cb, &lk);
	lk.time_ev = evtimer_new(lk.base, link_fault_cb, &lk);
	lk.hole_ev = evtimer_new(lk.base, link_hole_end_cb, &lk);
	if (lk.fault_ev == NULL || lk.time_ev == NULL || lk.hole_ev == NULL)
		fatalx(EXIT_SOFTWARE, "cannot set up fault events");
	if (lk.sigint == NULL || lk.sigterm == NULL || lk.relisten == NULL ||
	    evsignal_add(lk.sigint, NULL) == -1 ||
	    evsignal_add(lk.sigterm, NULL) == -1)
		fatalx(EXIT_SOFTWARE, "cannot set up signal events");

	if (event_base_dispatch(lk.base) == -1)
		fatalx(EXIT_SOFTWARE, "event loop failed");

	/*
	 * Connections still open say what they carried, as any that
	 * closed did: a script that sums a run's bytes from the log after
	 * stopping the link (its client gone a moment before) counts them.
	 */
	TAILQ_FOREACH(c, &lk.conns, entry)
		link_conn_close(c, NULL, "the link stopped");
	while ((c = TAILQ_FIRST(&lk.conns)) != NULL)
		link_conn_free(c);
	event_free(lk.relisten);
	event_free(lk.fault_ev);
	event_free(lk.time_ev);
	event_free(lk.hole_ev);
	event_free(lk.sigterm);
	event_free(lk.sigint);
	evconnlistener_free(lk.listener);
	freeaddrinfo(lk.target);
	event_base_free(lk.base);
	return EXIT_OK;
}
