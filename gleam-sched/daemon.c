/*
 * The daemon (gleam-sched(1), DAEMON).
 *
 * Contract: one event loop owns everything but the status poller, a
 * thread that asks each server for its status every interval and leaves
 * what it heard in `heard` under `mu`.  The loop takes it from there when
 * it places a task, so a placement sees the last round of status, never
 * half of one.  The poller reads the servers' names and addresses from
 * `targets`, which the loop replaces under `mu` on a reload.
 *
 * A connection: handshake as with gleam-serve (HELLO, CHALLENGE, AUTH
 * with a key, WELCOME), then PLACE and STATUS requests, one reply each,
 * until BYE or the peer goes.  Each request takes a token of its
 * address's bucket (limit.h); an address out of tokens is answered busy,
 * with the time until it has one.
 *
 * A placement is a lease: it counts against its server in every placement
 * until its client shows up in that server's status (from then on the
 * status counts it), or until the lease runs out, whichever is first.
 * So a PLACE whose client never comes holds its capacity for the lease
 * and no longer.
 *
 * The client that ends a lease is a run from then on: followed round
 * after round in its server's status (by its session), until it is gone.
 * Re-planning (replan.c) weighs the movable runs against the other
 * servers; a move is an order that a third thread, the mover, sends to
 * the run's server (MIGRATE_ONE), since it blocks.  The run is moving
 * until a round shows its client on the target, or the wait runs out.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <sodium.h>

#include "auth.h"
#include "conn.h"
#include "daemon.h"
#include "exitcode.h"
#include "hshake.h"
#include "input.h"
#include "limit.h"
#include "log.h"
#include "migrate.h"
#include "net.h"
#include "parse.h"
#include "place.h"
#include "predict.h"
#include "proto.h"
#include "replan.h"
#include "sched.h"
#include "schedwire.h"
#include "status.h"
#include "svc.h"

#define D_MAX_FRAME	PROTO_MAX_FRAME_MIN
#define D_IDLE_S	60	/* a connection silent this long is closed */
#define D_POLL_MS	2000	/* per status request */
#define D_MAX_ASSIGN	SCHED_MAX_TASKS
#define D_LEASE		5.0	/* s; GLEAM_SCHED_LEASE */
#define D_RATE		10.0	/* requests a second per address */
#define D_BURST		20.0	/* at once; GLEAM_SCHED_RATE, _BURST */
#define D_LEASES	8	/* held by one address; GLEAM_SCHED_LEASES */
#define D_CONNS		512	/* connections at once */
#define D_CONNS_ADDR	16	/* from one address */
#define D_OUT_MAX	(256 << 10)	/* replies unread: stop reading */
#define D_TICK_MS	250	/* leases looked at */
#define D_REPLAN	30.0	/* s between re-plannings; -R */
#define D_MARGIN	0.2	/* GLEAM_SCHED_MARGIN */
#define D_STAY		60.0	/* s on a server before a move; _STAY */
#define D_MOVES		2	/* per re-planning; GLEAM_SCHED_MOVES */
#define D_MOVE_WAIT	10.0	/* s, and two rounds: a move's time to show */
#define D_MEM_CHANGE	0.1	/* a server's free memory: a change */
#define D_LOAD_CHANGE	0.1	/* its background load */
#define D_MAX_RUNS	SCHED_MAX_TASKS
#define D_ORDERS	64	/* moves waiting for the mover */

/* A task the daemon placed, while its lease lasts. */
struct assign {
	struct sched_task t;		/* client index into the config */
	char		 client[SCHED_NAME_MAX];
	char		 server[SCHED_NAME_MAX];
	char		 host[48];	/* the asker's address */
	char		 key[LIMIT_KEY_MAX];	/* and its bucket's key */
	double		 since, until;	/* monotonic seconds: the lease */
	int		 movable;	/* the client said GLEAM_MOVABLE=1 */
};

/* A client the daemon placed, once it runs: its lease ended by it. */
struct run {
	unsigned	 id;
	struct sched_task t;		/* client index into the config */
	char		 client[SCHED_NAME_MAX];
	char		 server[SCHED_NAME_MAX];	/* where it runs */
	char		 host[48];	/* its address's host */
	char		 address[64];	/* its connection there */
	uint64_t	 session;	/* its session there; 0 unknown */
	int		 movable;
	double		 started;	/* monotonic: its client came */
	double		 since;		/* to this server, or a move failed */
	int		 unseen;	/* rounds its server did not list it */
	int		 moves;
	/* A move ordered and not yet seen done. */
	int		 moving;
	double		 ordered;
	unsigned long	 ordered_round;
	char		 to[SCHED_NAME_MAX];
	/* The last move made. */
	char		 last_from[SCHED_NAME_MAX], last_to[SCHED_NAME_MAX];
	double		 last_at;	/* 0: none */
	double		 last_before, last_after;	/* ms per request */
};

/* A move for the mover to send: MIGRATE_ONE to the run's server. */
struct order {
	unsigned	 run;		/* its id */
	char		 host[SCHED_ADDR_MAX];	/* the run's server */
	int		 port;
	struct msg_migrate_one m;
	int		 sent;		/* taken by the mover */
	int		 done, rc;
	char		 err[600];
};

/* A server as the last re-planning saw it, to tell a change. */
struct snap {
	char		 name[SCHED_NAME_MAX];
	int		 down;
	uint64_t	 mem_free;
	double		 background;
};

/* What one status request said. */
struct heard {
	char		 name[SCHED_NAME_MAX];
	int		 ok;
	char		 why[SCHED_ERR_MAX];
	int		 ngpus, nclients;
	int		 backend;	/* it runs CUDA calls */
	uint64_t	 mem_free, gpu_free_max;
	double		 util;		/* 0 to 1, -1 unknown */
	double		 port;		/* its link's bit/s, 0 unknown */
	struct lease_client *cl;	/* its clients, ours left out */
	int		 ncl;
};

struct target {
	char		 name[SCHED_NAME_MAX];
	char		 address[SCHED_ADDR_MAX];
};

struct client;

struct daemon {
	const struct daemon_opts *o;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event	*ev_hup, *ev_term, *ev_int;
	struct auth_key	 key;		/* proven to the servers it polls */
	struct auth_keys keys;		/* that clients may prove */
	struct sched	 cfg;		/* servers, clients, links, catalog */
	struct assign	*as;
	int		 nas;
	struct hshake_conf hs;		/* what its handshakes ask */
	uint64_t	 next_session;
	int		 nclients;
	TAILQ_HEAD(, client) clients;
	struct event	*ev_tick;	/* leases that run out */
	double		 lease;		/* seconds */
	int		 leases;	/* at most, held by one address */
	struct limit	 lim;		/* requests per address */
	struct lease_credited cred;
	unsigned long	 matched;	/* the round leases were matched to */
	double		 busy_logged;	/* when refusals were last logged */
	double		 conns_logged;
	unsigned long	 busy_n;	/* refused since */
	struct run	*runs;
	int		 nruns;
	unsigned	 next_run;
	struct replan_conf rc;		/* margin, stay, moves */
	double		 replan_next;	/* monotonic: the next periodic one */
	unsigned long	 replan_round;	/* the round it last saw */
	int		 reloaded;	/* files read again since */
	struct snap	*snap;
	int		 nsnap;
	unsigned long	 moves, move_failures;

	pthread_t	 thr;
	int		 thr_started;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	int		 stop;		/* under mu */
	struct target	*targets;	/* under mu */
	int		 ntargets;
	struct heard	*heard;		/* under mu; the last full round */
	int		 nheard;
	unsigned long	 rounds;	/* under mu */
	pthread_t	 mthr;		/* the mover */
	int		 mthr_started;
	pthread_cond_t	 mcv;		/* an order came, or stop */
	struct order	 orders[D_ORDERS];	/* under mu */
	int		 norders;
};

/* A connection to the daemon (gleam-run -S, gleam-probe). */
struct client {
	struct daemon	*d;
	struct bufferevent *bev;
	struct event	*hs_timer;	/* until WELCOME */
	struct hshake	 hs;		/* its peer, what it agreed */
	int		 closing;	/* read nothing more; close once sent */
	int		 held;		/* reading stopped until replies drain */
	char		 key[LIMIT_KEY_MAX];	/* its bucket's */
	char		 host[48];
	TAILQ_ENTRY(client) entry;
};

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the status poller --------------------------------------------- */

/* Asks one server for its status (blocking, in the poller's thread). */
static void
poll_one(struct daemon *d, const struct target *tg, struct heard *h)
{
	struct conn c;
	struct server_status st;
	struct yerr err;
	struct client_status *sc;
	struct lease_client *lc;
	const uint8_t *reply;
	const char *why;
	char host[SCHED_ADDR_MAX];
	size_t len;
	double util = 0, t;
	int i, port = PROTO_DEFAULT_PORT, nutil = 0;

	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", tg->name);
	h->util = -1;
	if (parse_hostport(tg->address, host, sizeof host, &port,
	    &why) == -1) {
		snprintf(h->why, sizeof h->why, "%.200s: %.50s", tg->address,
		    why);
		return;
	}
	if (conn_open(&c, host, port, d->key.set ? &d->key : NULL,
	    "gleam-sched", D_POLL_MS) == -1) {
		snprintf(h->why, sizeof h->why, "%.250s", c.err);
		return;
	}
	if (conn_call(&c, MSG_STATUS, NULL, 0, MSG_STATUS, &reply,
	    &len) == -1) {
		snprintf(h->why, sizeof h->why, "%.250s", c.err);
		conn_close(&c);
		return;
	}
	if (status_parse(tg->address, reply, len, &st, &err) == -1) {
		snprintf(h->why, sizeof h->why, "%.250s", err.msg);
		conn_close(&c);
		return;
	}
	conn_close(&c);
	h->ok = 1;
	h->backend = strcmp(st.backend, "none") != 0;
	h->port = st.port_bps;
	h->ngpus = st.ngpus;
	for (i = 0; i < st.ngpus; i++) {
		h->mem_free += st.gpus[i].memory_free;
		if (st.gpus[i].memory_free > h->gpu_free_max)
			h->gpu_free_max = st.gpus[i].memory_free;
		if (st.gpus[i].utilization >= 0) {
			util += st.gpus[i].utilization;
			nutil++;
		}
	}
	if (nutil > 0)
		h->util = util / nutil / 100;
	/*
	 * Our own connection is in the status it sent; the probe's and
	 * gleam-run's check of the server are no clients either.  The
	 * others, and when they came, end the leases of their hosts.
	 */
	if (st.nclients > 0 && (h->cl = calloc((size_t)st.nclients,
	    sizeof *h->cl)) == NULL) {
		snprintf(h->why, sizeof h->why, "out of memory");
		h->ok = 0;
		status_free(&st);
		return;
	}
	t = now_mono();
	for (i = 0; i < st.nclients; i++) {
		sc = &st.clients[i];
		/*
		 * Not ours, and not one whose hello has not come yet (no
		 * name: it may be a probe too); the next status names it.
		 */
		if (sc->name[0] == '\0' ||
		    strcmp(sc->name, "gleam-sched") == 0 ||
		    strcmp(sc->name, "gleam-probe") == 0)
			continue;
		h->nclients++;
		if (strcmp(sc->name, "gleam-run") == 0)
			continue;
		lc = &h->cl[h->ncl++];
		snprintf(lc->address, sizeof lc->address, "%s", sc->address);
		limit_host(sc->address, lc->host, sizeof lc->host);
		snprintf(lc->name, sizeof lc->name, "%.63s", sc->name);
		lc->since = t - sc->connected_s;
		lc->session = sc->session;
	}
	status_free(&st);
}

static void
heard_free(struct heard *h, int n)
{
	int i;

	for (i = 0; h != NULL && i < n; i++)
		free(h[i].cl);
	free(h);
}

static void *
poller(void *arg)
{
	struct daemon *d = arg;
	struct target *tg = NULL;
	struct heard *h = NULL;
	struct timespec until;
	double secs;
	int n, i;

	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		n = d->ntargets;
		free(tg);
		tg = calloc((size_t)n + 1, sizeof *tg);
		h = calloc((size_t)n + 1, sizeof *h);
		if (tg != NULL && h != NULL)
			memcpy(tg, d->targets, (size_t)n * sizeof *tg);
		pthread_mutex_unlock(&d->mu);
		for (i = 0; tg != NULL && h != NULL && i < n; i++)
			poll_one(d, &tg[i], &h[i]);
		pthread_mutex_lock(&d->mu);
		if (tg != NULL && h != NULL) {
			heard_free(d->heard, d->nheard);
			d->heard = h;
			d->nheard = n;
			d->rounds++;
		} else
			heard_free(h, n);
		h = NULL;
		clock_gettime(CLOCK_REALTIME, &until);
		secs = until.tv_nsec / 1e9 + d->o->interval;
		until.tv_sec += (time_t)secs;
		until.tv_nsec = (long)((secs - floor(secs)) * 1e9);
		while (!d->stop && pthread_cond_timedwait(&d->cv, &d->mu,
		    &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&d->mu);
	free(tg);
	return NULL;
}

/* The poller's list of servers, from the configuration. */
static int
targets_set(struct daemon *d)
{
	struct target *tg;
	int v;

	if ((tg = calloc((size_t)d->cfg.nservers + 1, sizeof *tg)) == NULL)
		return -1;
	for (v = 0; v < d->cfg.nservers; v++) {
		snprintf(tg[v].name, sizeof tg[v].name, "%s",
		    d->cfg.servers[v].name);
		snprintf(tg[v].address, sizeof tg[v].address, "%s",
		    d->cfg.servers[v].address);
	}
	pthread_mutex_lock(&d->mu);
	free(d->targets);
	d->targets = tg;
	d->ntargets = d->cfg.nservers;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

/* ---- the mover ------------------------------------------------------- */

/*
 * Sends the orders the loop queues, one at a time and outside the lock
 * (a server that does not answer holds the mover for 10 s, not the
 * loop), and leaves each result in its order for the loop to collect.
 */
static void *
mover(void *arg)
{
	struct daemon *d = arg;
	struct order o;
	int i;

	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		for (i = 0; i < d->norders && d->orders[i].sent; i++)
			;
		if (i == d->norders) {
			pthread_cond_wait(&d->mcv, &d->mu);
			continue;
		}
		d->orders[i].sent = 1;
		o = d->orders[i];
		pthread_mutex_unlock(&d->mu);
		o.rc = migrate_send(o.host, o.port, &o.m, d->key.set ?
		    &d->key : NULL, "gleam-sched", o.err, sizeof o.err);
		pthread_mutex_lock(&d->mu);
		/* The loop compacts the queue: the order is found by its run. */
		for (i = 0; i < d->norders; i++)
			if (d->orders[i].run == o.run && d->orders[i].sent &&
			    !d->orders[i].done) {
				d->orders[i].rc = o.rc;
				snprintf(d->orders[i].err, sizeof o.err, "%s",
				    o.err);
				d->orders[i].done = 1;
				break;
			}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* ---- the view -------------------------------------------------------- */

/* The last round's word from a server, under mu; NULL if none. */
static const struct heard *
heard_find(const struct daemon *d, const char *name)
{
	int k;

	for (k = 0; k < d->nheard; k++)
		if (strcmp(d->heard[k].name, name) == 0)
			return &d->heard[k];
	return NULL;
}

/* The run's client in a server's status: by its session, else address. */
static int
run_find(const struct run *r, const struct heard *h)
{
	int j;

	for (j = 0; j < h->ncl; j++)
		if (r->session != 0 ? h->cl[j].session == r->session :
		    strcmp(h->cl[j].address, r->address) == 0)
			return j;
	return -1;
}

/* A lease's client has come: it runs from now on. */
static void
run_add(struct daemon *d, const struct assign *a, const struct lease_client *c,
    double t)
{
	struct run *r;

	if (d->nruns >= D_MAX_RUNS) {
		log_warn("%s of %s on %s: %d clients followed already; this "
		    "one is not", a->t.name, a->client, a->server, d->nruns);
		return;
	}
	r = &d->runs[d->nruns++];
	memset(r, 0, sizeof *r);
	r->id = ++d->next_run;
	r->t = a->t;
	snprintf(r->client, sizeof r->client, "%s", a->client);
	snprintf(r->server, sizeof r->server, "%s", a->server);
	snprintf(r->host, sizeof r->host, "%s", c->host);
	snprintf(r->address, sizeof r->address, "%s", c->address);
	r->session = c->session;
	r->movable = a->movable;
	r->started = r->since = t;
}

/*
 * A new round of status, under mu: each run is still on its server (its
 * connection may be a new one, resumed), or has gone; a moving one has
 * come to its target, or stayed where it was, or gone.  A client that
 * drops and resumes may miss a round: gone is two rounds unseen.
 */
static void
runs_track(struct daemon *d, double t)
{
	const struct heard *hs, *ht;
	struct run *r;
	int i, j, n = 0, keep;

	for (i = 0; i < d->nruns; i++) {
		r = &d->runs[i];
		keep = 1;
		hs = heard_find(d, r->server);
		if (r->moving) {
			ht = heard_find(d, r->to);
			if (ht != NULL && ht->ok && (j = lease_match(r->host,
			    r->ordered, ht->cl, ht->ncl, &d->cred)) >= 0) {
				log_info("%s of %s moved from %s to %s (%s, "
				    "session %llu there) %.1f s after the order",
				    r->t.name, r->client, r->server, r->to,
				    ht->cl[j].address,
				    (unsigned long long)ht->cl[j].session,
				    t - r->ordered);
				snprintf(r->last_from, sizeof r->last_from,
				    "%s", r->server);
				snprintf(r->last_to, sizeof r->last_to, "%s",
				    r->to);
				snprintf(r->server, sizeof r->server, "%s",
				    r->to);
				snprintf(r->address, sizeof r->address, "%s",
				    ht->cl[j].address);
				r->session = ht->cl[j].session;
				r->last_at = r->since = t;
				r->moving = 0;
				r->unseen = 0;
				r->moves++;
				d->moves++;
			} else if (t - r->ordered > D_MOVE_WAIT &&
			    d->rounds >= r->ordered_round + 2) {
				if (hs != NULL && hs->ok && run_find(r,
				    hs) >= 0) {
					log_warn("%s of %s did not move from %s "
					    "to %s within %.0f s: it stays (%s's "
					    "log says why)", r->t.name,
					    r->client, r->server, r->to,
					    D_MOVE_WAIT, r->server);
					r->moving = 0;
					r->since = t;
					d->move_failures++;
				} else {
					log_info("%s of %s: gone while it moved "
					    "from %s to %s", r->t.name,
					    r->client, r->server, r->to);
					keep = 0;
				}
			}
		} else if (hs != NULL && hs->ok) {
			if ((j = run_find(r, hs)) >= 0) {
				r->unseen = 0;
				snprintf(r->address, sizeof r->address, "%s",
				    hs->cl[j].address);
			} else if (++r->unseen >= 2) {
				log_info("%s of %s on %s: its client is gone "
				    "after %.1f s, %d move%s", r->t.name,
				    r->client, r->server, t - r->started,
				    r->moves, r->moves == 1 ? "" : "s");
				keep = 0;
			}
		}
		if (keep)
			d->runs[n++] = *r;
	}
	d->nruns = n;
}

/*
 * Ends the leases whose client a new round of status shows on its
 * server, and those that have run out.  Either way the placement's
 * capacity is free again: from now on the server's status counts what
 * its client does.
 */
static void
lease_sweep(struct daemon *d)
{
	struct assign *a;
	struct heard *h;
	double t = now_mono();
	int i, j, k, n = 0, gone;

	pthread_mutex_lock(&d->mu);
	/* Runs first: a moving one's client has the first claim. */
	if (d->rounds != d->matched)
		runs_track(d, t);
	for (i = 0; i < d->nas; i++) {
		a = &d->as[i];
		gone = 0;
		for (k = 0; d->rounds != d->matched && k < d->nheard; k++) {
			h = &d->heard[k];
			if (!h->ok || strcmp(h->name, a->server) != 0)
				continue;
			if ((j = lease_match(a->host, a->since, h->cl, h->ncl,
			    &d->cred)) < 0)
				break;
			log_info("%s of %s on %s: its client connected (%s, "
			    "%s), lease ended after %.1f s", a->t.name,
			    a->client, a->server, h->cl[j].address,
			    h->cl[j].name, t - a->since);
			run_add(d, a, &h->cl[j], t);
			gone = 1;
			break;
		}
		if (!gone && a->until <= t) {
			log_info("lease of %s of %s on %s expired after %.1f s: "
			    "no client from %s came; its capacity is free",
			    a->t.name, a->client, a->server, t - a->since,
			    a->host);
			gone = 1;
		}
		if (!gone)
			d->as[n++] = *a;
	}
	d->matched = d->rounds;
	pthread_mutex_unlock(&d->mu);
	d->nas = n;
}

static void	orders_collect(struct daemon *);
static void	replan_tick(struct daemon *);

/* Leases, runs, the mover's results, and re-planning when it is due. */
static void
lease_tick(evutil_socket_t fd, short what, void *arg)
{
	lease_sweep(arg);
	orders_collect(arg);
	replan_tick(arg);
}

/*
 * Puts the last round of status into the configuration's servers.  A
 * lease's client is not on its server yet (once it is, the lease ends),
 * so the utilization a server reports is none of the daemon's placements.
 */
static void
view_refresh(struct daemon *d)
{
	struct sched_server *sv;
	struct heard *h;
	int i, v;

	pthread_mutex_lock(&d->mu);
	for (i = 0; i < d->nheard; i++) {
		h = &d->heard[i];
		if ((v = sched_server_find(&d->cfg, h->name)) < 0)
			continue;
		sv = &d->cfg.servers[v];
		if (!h->ok) {
			sv->down = 1;
			snprintf(sv->down_why, sizeof sv->down_why, "%s",
			    h->why);
			continue;
		}
		sv->down = 0;
		sv->down_why[0] = '\0';
		sv->nclients = h->nclients;
		/* Its file's port stands where the server does not know. */
		if (h->port > 0)
			sv->port = h->port;
		if (!h->backend)
			sv->ngpus = 0;
		/* No GPU listed (no NVML): its entry's GPUs stand. */
		if (h->ngpus > 0) {
			sv->ngpus = h->ngpus;
			sv->mem_free = h->mem_free;
			sv->gpu_free_max = h->gpu_free_max;
		}
		if (h->util >= 0)
			sv->background = h->util > 0 ?
			    (h->util < 0.99 ? h->util : 0.99) : 0;
	}
	pthread_mutex_unlock(&d->mu);
}

/*
 * What the daemon assumes of a task its catalog does not name: no
 * weights, one request in flight, small messages, a modest GPU load.
 */
static void
task_default(struct sched_task *t)
{
	t->model[0] = '\0';
	t->model_size = 0;
	t->memory = 256 << 20;
	t->requests = 600;
	t->rate = 10;
	t->burst = 1;
	t->gpu_time = 0.01;
	t->in = t->out = 64 << 10;
	t->round_trips = 1;
	t->window = 1;
}

/*
 * An address holding its share of leases waits for one to end: the
 * milliseconds until the first ends at the latest, or 0 if it may have
 * another.
 */
static int
daemon_share(struct daemon *d, const char *key)
{
	double first = 0, t = now_mono();
	int i, n = 0;

	lease_sweep(d);
	for (i = 0; i < d->nas; i++)
		if (strcmp(d->as[i].key, key) == 0 && (n++ == 0 ||
		    d->as[i].until < first))
			first = d->as[i].until;
	if (n < d->leases)
		return 0;
	return first - t > 0.001 ? (int)ceil((first - t) * 1e3) : 1;
}

/*
 * Places the task for the client that asked from host (its bucket's
 * key); 0 with the reply filled, or -1 with a reason in err.
 */
static int
daemon_place(struct daemon *d, const struct place_req *rq, const char *host,
    const char *key, struct place_rep *rp, char *err, size_t errlen)
{
	struct sched w;
	struct sched_task *tasks, *t;
	struct place_why *why = NULL;
	struct predictor p;
	struct pred pr;
	struct assign *a;
	int c, i, k, n, rc = -1;

	if ((c = sched_client_find(&d->cfg, rq->client)) < 0) {
		snprintf(err, errlen, "client %s: unknown (not in %s)",
		    rq->client, input_name(d->o->links));
		return -1;
	}
	lease_sweep(d);
	if (d->nas >= D_MAX_ASSIGN) {
		snprintf(err, errlen, "%d placements wait for their clients: "
		    "no more", d->nas);
		return -1;
	}
	view_refresh(d);
	n = d->nas + 1;
	tasks = calloc((size_t)n, sizeof *tasks);
	why = calloc((size_t)n, sizeof *why);
	if (tasks == NULL || why == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/*
	 * The leases in force: each a task about to start on its server,
	 * none of it in the server's status yet.
	 */
	for (i = 0; i < d->nas; i++) {
		tasks[i] = d->as[i].t;
		tasks[i].server = sched_server_find(&d->cfg, d->as[i].server);
		tasks[i].fixed = tasks[i].server >= 0;
	}
	t = &tasks[d->nas];
	if ((k = sched_task_find(&d->cfg, rq->task)) >= 0)
		*t = d->cfg.tasks[k];
	else {
		memset(t, 0, sizeof *t);
		task_default(t);
	}
	snprintf(t->name, sizeof t->name, "%s", rq->task);
	t->client = c;
	t->server = t->from = -1;
	t->fixed = 0;
	w = d->cfg;
	w.tasks = tasks;
	w.ntasks = n;
	if (place_plan(&w, why) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (t->server < 0) {
		snprintf(err, errlen, "%s", t->why);
		goto out;
	}
	if (predict_init(&p, &w) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	predict_task(&p, n - 1, &pr);
	predict_free(&p);
	memset(rp, 0, sizeof *rp);
	snprintf(rp->task, sizeof rp->task, "%s", rq->task);
	snprintf(rp->client, sizeof rp->client, "%s", rq->client);
	snprintf(rp->server, sizeof rp->server, "%s",
	    d->cfg.servers[t->server].name);
	snprintf(rp->address, sizeof rp->address, "%s",
	    d->cfg.servers[t->server].address);
	rp->latency_ms = pr.latency * 1e3;
	snprintf(rp->reason, sizeof rp->reason, "%s", why[n - 1].reason);
	a = &d->as[d->nas++];
	memset(a, 0, sizeof *a);
	a->t = *t;
	snprintf(a->client, sizeof a->client, "%s", rq->client);
	snprintf(a->server, sizeof a->server, "%s", rp->server);
	snprintf(a->host, sizeof a->host, "%s", host);
	snprintf(a->key, sizeof a->key, "%s", key);
	a->since = now_mono();
	a->until = a->since + d->lease;
	a->movable = rq->movable;
	log_info("placed %s of %s on %s (%.3f ms per request%s), leased for "
	    "%.1f s", rq->task, rq->client, rp->server, rp->latency_ms,
	    rq->movable ? ", movable" : "", d->lease);
	rc = 0;
out:
	place_why_free(why, n);
	free(why);
	free(tasks);
	return rc;
}

/* ---- re-planning ------------------------------------------------------- */

static struct run *
run_by_id(struct daemon *d, unsigned id)
{
	int i;

	for (i = 0; i < d->nruns; i++)
		if (d->runs[i].id == id)
			return &d->runs[i];
	return NULL;
}

/* The mover's answers: a refused order leaves the run where it is. */
static void
orders_collect(struct daemon *d)
{
	struct order o;
	struct run *r;
	int i, n = 0;

	pthread_mutex_lock(&d->mu);
	for (i = 0; i < d->norders; i++) {
		if (!d->orders[i].done) {
			d->orders[n++] = d->orders[i];
			continue;
		}
		o = d->orders[i];
		if ((r = run_by_id(d, o.run)) == NULL)
			continue;
		if (o.rc == EXIT_OK) {
			log_info("%s of %s: %s took the order to move it to %s",
			    r->t.name, r->client, r->server, r->to);
			continue;
		}
		log_warn("%s of %s: %s refused to move it to %s: %s",
		    r->t.name, r->client, r->server, r->to, o.err);
		r->moving = 0;
		r->since = now_mono();
		d->move_failures++;
	}
	d->norders = n;
	pthread_mutex_unlock(&d->mu);
}

/* Queues the move of r to the server `to` for the mover; -1 if it cannot. */
static int
order_add(struct daemon *d, struct run *r, const struct sched_server *from,
    const struct sched_server *to)
{
	struct order *o;
	const char *why;
	int port = PROTO_DEFAULT_PORT, tport = PROTO_DEFAULT_PORT, rc = -1;

	pthread_mutex_lock(&d->mu);
	if (d->norders >= D_ORDERS) {
		log_warn("not moving %s of %s: %d moves wait to be sent",
		    r->t.name, r->client, d->norders);
		goto out;
	}
	o = &d->orders[d->norders];
	memset(o, 0, sizeof *o);
	o->run = r->id;
	if (parse_hostport(from->address, o->host, sizeof o->host, &port,
	    &why) == -1 || parse_hostport(to->address, o->m.host,
	    sizeof o->m.host, &tport, &why) == -1) {
		log_warn("not moving %s of %s: %s or %s: %s", r->t.name,
		    r->client, from->address, to->address, why);
		goto out;
	}
	o->port = port;
	o->m.port = (uint16_t)tport;
	if (r->session != 0) {
		o->m.selector = MIGSEL_SESSION;
		o->m.session = r->session;
	} else {
		o->m.selector = MIGSEL_ADDRESS;
		snprintf(o->m.address, sizeof o->m.address, "%s", r->address);
	}
	d->norders++;
	pthread_cond_broadcast(&d->mcv);
	rc = 0;
out:
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* The servers of the view, their resident models copied. */
static struct sched_server *
servers_dup(const struct sched *s)
{
	struct sched_server *sv;
	int v, k;

	if ((sv = calloc((size_t)s->nservers + 1, sizeof *sv)) == NULL)
		return NULL;
	for (v = 0; v < s->nservers; v++) {
		sv[v] = s->servers[v];
		sv[v].models = NULL;
		sv[v].nmodels = 0;
		for (k = 0; k < s->servers[v].nmodels; k++)
			if (sched_model_add(&sv[v],
			    s->servers[v].models[k]) == -1)
				break;
	}
	return sv;
}

static void
servers_free(struct sched_server *sv, int n)
{
	int v, k;

	for (v = 0; sv != NULL && v < n; v++) {
		for (k = 0; k < sv[v].nmodels; k++)
			free(sv[v].models[k]);
		free(sv[v].models);
	}
	free(sv);
}

/*
 * A running client as a task that runs where it is.  What its server's
 * status counts of it (the memory it holds, the GPU time it takes) is
 * given back, for the plan counts it; where the status does not say
 * (no GPU listed, no utilization) the file's figures never held it.
 */
static void
run_give_back(struct daemon *d, struct sched_server *sv,
    const struct sched_task *t)
{
	const struct heard *h;
	double load;

	pthread_mutex_lock(&d->mu);
	h = heard_find(d, sv->name);
	if (h != NULL && h->ok && h->ngpus > 0) {
		sv->mem_free += t->memory;
		sv->gpu_free_max += t->memory;
	}
	if (h != NULL && h->ok && h->util >= 0 && sv->ngpus > 0) {
		load = t->rate * t->gpu_time / sv->speed / sv->ngpus;
		sv->background = sv->background > load ?
		    sv->background - load : 0;
	}
	pthread_mutex_unlock(&d->mu);
	if (t->model[0] != '\0' && !sched_resident(sv, t->model))
		(void)sched_model_add(sv, t->model);
}

/*
 * Plans again with the runs as tasks that run where they are (movable or
 * not, as their clients asked) and the leases in force as fixed, and
 * orders the moves replan_decide makes.
 */
static void
daemon_replan(struct daemon *d, const char *why, int loud)
{
	struct sched w;
	struct replan_move *mv = NULL;
	struct sched_task *t;
	struct run *r;
	double *here = NULL, now = now_mono();
	int *ri = NULL, i, n, nt = 0, v, nmov = 0, nm, m;

	if (d->nruns == 0) {
		log_debug("re-planning (%s): no client runs", why);
		return;
	}
	w = d->cfg;
	n = d->nas + d->nruns;
	w.servers = servers_dup(&d->cfg);
	w.tasks = calloc((size_t)n, sizeof *w.tasks);
	here = calloc((size_t)n, sizeof *here);
	ri = calloc((size_t)n, sizeof *ri);
	mv = calloc((size_t)d->rc.moves, sizeof *mv);
	if (w.servers == NULL || w.tasks == NULL || here == NULL ||
	    ri == NULL || mv == NULL) {
		log_error("re-planning: out of memory");
		goto out;
	}
	for (i = 0; i < d->nas; i++) {
		if ((v = sched_server_find(&w, d->as[i].server)) < 0)
			continue;
		t = &w.tasks[nt];
		*t = d->as[i].t;
		t->server = v;
		t->from = -1;
		t->fixed = 1;
		ri[nt++] = -1;
	}
	for (i = 0; i < d->nruns; i++) {
		r = &d->runs[i];
		/* A server that is down cannot hand its clients on. */
		if ((v = sched_server_find(&w, r->server)) < 0 ||
		    w.servers[v].down)
			continue;
		t = &w.tasks[nt];
		*t = r->t;
		t->server = t->from = v;
		t->fixed = !r->movable || r->moving;
		nmov += !t->fixed;
		run_give_back(d, &w.servers[v], t);
		here[nt] = now - r->since;
		ri[nt++] = i;
	}
	w.ntasks = nt;
	if (loud)
		log_info("re-planning (%s): %d client%s running, %d movable",
		    why, d->nruns, d->nruns == 1 ? "" : "s", nmov);
	else
		log_debug("re-planning (%s): %d client%s running, %d movable",
		    why, d->nruns, d->nruns == 1 ? "" : "s", nmov);
	if (nmov == 0)
		goto out;
	if ((nm = replan_decide(&w, here, &d->rc, mv)) == -1) {
		log_error("re-planning: out of memory");
		goto out;
	}
	for (m = 0; m < nm; m++) {
		r = &d->runs[ri[mv[m].task]];
		if (order_add(d, r, &d->cfg.servers[mv[m].from],
		    &d->cfg.servers[mv[m].to]) == -1)
			continue;
		r->moving = 1;
		r->ordered = now;
		pthread_mutex_lock(&d->mu);
		r->ordered_round = d->rounds;
		pthread_mutex_unlock(&d->mu);
		snprintf(r->to, sizeof r->to, "%s",
		    d->cfg.servers[mv[m].to].name);
		r->last_before = mv[m].before * 1e3;
		r->last_after = mv[m].after * 1e3;
	}
out:
	servers_free(w.servers, d->cfg.nservers);
	free(w.tasks);
	free(here);
	free(ri);
	free(mv);
}

/* What changed among the servers since the last re-planning; 0: nothing. */
static int
view_changed(const struct daemon *d, char *why, size_t len)
{
	const struct sched_server *sv;
	const struct snap *sn;
	double a, b;
	int v, k;

	for (v = 0; v < d->cfg.nservers; v++) {
		sv = &d->cfg.servers[v];
		for (sn = NULL, k = 0; k < d->nsnap; k++)
			if (strcmp(d->snap[k].name, sv->name) == 0)
				sn = &d->snap[k];
		if (sn == NULL) {
			snprintf(why, len, "%s is new", sv->name);
			return 1;
		}
		if (sn->down != sv->down) {
			snprintf(why, len, "%s is %s", sv->name, sv->down ?
			    "down" : "up again");
			return 1;
		}
		if (sv->down)
			continue;
		a = (double)sn->mem_free;
		b = (double)sv->mem_free;
		if (fabs(a - b) > D_MEM_CHANGE * (a > b ? a : b)) {
			snprintf(why, len, "free memory on %s went from %.0f "
			    "to %.0f MiB", sv->name, a / 1048576, b / 1048576);
			return 1;
		}
		if (fabs(sn->background - sv->background) > D_LOAD_CHANGE) {
			snprintf(why, len, "the load on %s went from %.2f to "
			    "%.2f", sv->name, sn->background, sv->background);
			return 1;
		}
	}
	for (k = 0; k < d->nsnap; k++)
		if (sched_server_find(&d->cfg, d->snap[k].name) < 0) {
			snprintf(why, len, "%s is gone", d->snap[k].name);
			return 1;
		}
	return 0;
}

static void
snap_take(struct daemon *d)
{
	struct snap *sn;
	int v;

	if ((sn = calloc((size_t)d->cfg.nservers + 1, sizeof *sn)) == NULL)
		return;		/* the next round finds a change: harmless */
	for (v = 0; v < d->cfg.nservers; v++) {
		snprintf(sn[v].name, sizeof sn[v].name, "%s",
		    d->cfg.servers[v].name);
		sn[v].down = d->cfg.servers[v].down;
		sn[v].mem_free = d->cfg.servers[v].mem_free;
		sn[v].background = d->cfg.servers[v].background;
	}
	free(d->snap);
	d->snap = sn;
	d->nsnap = d->cfg.nservers;
}

/*
 * Once per round of status at most: re-plans when the files were read
 * again, when a server changed (gone, back, added, its free memory or
 * its load), or every -R seconds.
 */
static void
replan_tick(struct daemon *d)
{
	char why[SCHED_NAME_MAX * 2 + 64];
	unsigned long rounds;
	double t = now_mono();
	int loud = 1;

	if (d->o->replan <= 0)
		return;
	pthread_mutex_lock(&d->mu);
	rounds = d->rounds;
	pthread_mutex_unlock(&d->mu);
	if (rounds == d->replan_round)
		return;
	view_refresh(d);
	if (d->reloaded)
		snprintf(why, sizeof why, "the files were read again");
	else if (!view_changed(d, why, sizeof why)) {
		if (t < d->replan_next)
			return;
		snprintf(why, sizeof why, "every %g s", d->o->replan);
		loud = 0;
	}
	d->reloaded = 0;
	d->replan_round = rounds;
	d->replan_next = t + d->o->replan;
	daemon_replan(d, why, loud);
	snap_take(d);
}

/* A run in the daemon's STATUS. */
static void
status_run(struct yw *w, const struct run *r, double t)
{
	yw_map(w);
	yw_kstr(w, "task", r->t.name);
	yw_kstr(w, "client", r->client);
	yw_kstr(w, "server", r->server);
	yw_kstr(w, "address", r->address);
	yw_key(w, "session");
	if (r->session == 0)
		yw_null(w);
	else
		yw_uint(w, r->session);
	yw_kbool(w, "movable", r->movable);
	yw_kdbl(w, "age_s", t - r->started, 1);
	yw_kdbl(w, "here_s", t - r->since, 1);
	yw_kint(w, "moves", r->moves);
	yw_key(w, "moving");
	if (r->moving)
		yw_str(w, r->to);
	else
		yw_null(w);
	yw_key(w, "last_move");
	if (r->last_at == 0)
		yw_null(w);
	else {
		yw_fmap(w);
		yw_kstr(w, "from", r->last_from);
		yw_kstr(w, "to", r->last_to);
		yw_kdbl(w, "ago_s", t - r->last_at, 1);
		yw_kdbl(w, "before_ms", r->last_before, 3);
		yw_kdbl(w, "after_ms", r->last_after, 3);
		yw_end(w);
	}
	yw_end(w);
}

/* The daemon's view as YAML, for STATUS. */
static char *
daemon_status(struct daemon *d, size_t *len)
{
	struct sched_server *sv;
	struct yw *w;
	const char *text;
	char *out = NULL;
	double t = now_mono();
	unsigned long rounds;
	int i, v, n;

	lease_sweep(d);
	view_refresh(d);
	pthread_mutex_lock(&d->mu);
	rounds = d->rounds;
	pthread_mutex_unlock(&d->mu);
	if ((w = yw_new()) == NULL)
		return NULL;
	yw_map(w);
	yw_kstr(w, "scheduler", "gleam-sched");
	yw_kint(w, "status_rounds", (long long)rounds);
	yw_kdbl(w, "replan_s", d->o->replan, 1);
	yw_kint(w, "moves", (long long)d->moves);
	yw_kint(w, "move_failures", (long long)d->move_failures);
	yw_key(w, "servers");
	yw_seq(w);
	for (v = 0; v < d->cfg.nservers; v++) {
		sv = &d->cfg.servers[v];
		for (n = 0, i = 0; i < d->nas; i++)
			n += strcmp(d->as[i].server, sv->name) == 0;
		yw_fmap(w);
		yw_kstr(w, "name", sv->name);
		yw_kstr(w, "address", sv->address);
		yw_kbool(w, "up", !sv->down);
		if (sv->down)
			yw_kstr(w, "error", sv->down_why);
		yw_kint(w, "memory_free", (long long)sv->mem_free);
		yw_kdbl(w, "background", sv->background, 3);
		yw_kint(w, "nclients", sv->nclients);
		yw_kint(w, "placed", n);
		for (n = 0, i = 0; i < d->nruns; i++)
			n += strcmp(d->runs[i].server, sv->name) == 0;
		yw_kint(w, "running", n);
		yw_end(w);
	}
	yw_end(w);
	yw_key(w, "placed");
	if (d->nas == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < d->nas; i++) {
		yw_fmap(w);
		yw_kstr(w, "task", d->as[i].t.name);
		yw_kstr(w, "client", d->as[i].client);
		yw_kstr(w, "server", d->as[i].server);
		yw_kdbl(w, "age_s", t - d->as[i].since, 1);
		yw_kdbl(w, "left_s", d->as[i].until - t, 1);
		yw_end(w);
	}
	yw_end(w);
	yw_key(w, "running");
	if (d->nruns == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < d->nruns; i++)
		status_run(w, &d->runs[i], t);
	yw_end(w);
	yw_end(w);
	if ((text = yw_finish(w, len)) != NULL && (out = malloc(*len)) != NULL)
		memcpy(out, text, *len);
	yw_free(w);
	return out;
}

/* ---- clients: the daemon's own connections ---------------------------- */

/*
 * The daemon's side of a connection (the poller's, to the servers, is
 * lib/common/conn.c's conn_*).  The handshake is lib/common/hshake.c's;
 * a client is closed once its output has drained after `closing` is set.
 */

static void
client_frame(struct client *c, uint16_t type, uint16_t flags, uint64_t id,
    const void *p, size_t len)
{
	hshake_frame(&c->hs, bufferevent_get_output(c->bev), type, flags, id,
	    p, len);
}

static void	client_free(struct client *);

/* ERROR; a fatal one closes once it is sent. */
static void __attribute__((format(printf, 5, 6)))
client_fail(struct client *c, uint64_t id, uint32_t code, int fatal_err,
    const char *fmt, ...)
{
	char text[sizeof ((struct msg_error *)0)->text];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	log_info("client %s: %s: %s%s", c->hs.peer, proto_err_name(code), text,
	    fatal_err ? ", closing" : "");
	hshake_error(&c->hs, bufferevent_get_output(c->bev), id, code, text);
	if (fatal_err)
		c->closing = 1;
}

/*
 * A token of the client's address for a request: 0, or the milliseconds
 * until it has one.  Refusals are logged once a second at most: a flood
 * must not fill the log either.
 */
static int
client_limit(struct client *c, int place)
{
	struct daemon *d = c->d;
	double t = now_mono();
	int ms, share = 0;

	if ((ms = limit_take(&d->lim, c->key, t)) == 0 && (!place ||
	    (ms = share = daemon_share(d, c->key)) == 0))
		return 0;
	d->busy_n++;
	if (t - d->busy_logged >= 1) {
		if (share)
			log_warn("client %s: busy: its address holds %d leases "
			    "already; %lu requests refused in the last %.1f s",
			    c->hs.peer, d->leases, d->busy_n,
			    t - d->busy_logged);
		else
			log_warn("client %s: busy: over the rate limit of its "
			    "address (%g requests a second, %g at once); %lu "
			    "requests refused in the last %.1f s", c->hs.peer,
			    d->lim.rate, d->lim.burst, d->busy_n,
			    t - d->busy_logged);
		d->busy_logged = t;
		d->busy_n = 0;
	}
	return ms;
}

/* The reply doc, of len bytes, to request id; NULL: out of memory. */
static void
client_reply(struct client *c, uint16_t type, uint64_t id, char *doc,
    size_t len)
{
	if (doc == NULL) {
		client_fail(c, id, PERR_INTERNAL, 0, "out of memory");
		return;
	}
	client_frame(c, type, FL_REPLY, id, doc, len);
	free(doc);
}

/* A request after the handshake: PLACE or STATUS, one reply each. */
static void
client_request(struct client *c, const struct frame_hdr *h, const uint8_t *p)
{
	struct place_req rq;
	struct place_rep rp;
	char err[SCHEDWIRE_REASON_MAX + 256], *doc;
	size_t len = 0;
	int ms;

	switch (h->type) {
	case MSG_PLACE:
		if ((ms = client_limit(c, 1)) > 0) {
			/* Not even decoded: a flood costs the least. */
			memset(&rp, 0, sizeof rp);
			snprintf(rp.task, sizeof rp.task, "-");
			snprintf(rp.client, sizeof rp.client, "-");
			snprintf(rp.error, sizeof rp.error, "busy, retry in %d "
			    "ms", ms);
			rp.retry_ms = ms;
			doc = place_rep_enc(&rp, &len);
			client_reply(c, MSG_PLACE, h->id, doc, len);
			return;
		}
		if (place_req_dec(p, h->len, &rq, err, sizeof err) == -1) {
			client_fail(c, h->id, PERR_MALFORMED, 0, "%s", err);
			return;
		}
		if (daemon_place(c->d, &rq, c->host, c->key, &rp, err,
		    sizeof err) == -1) {
			/* Not placed is an answer, not a protocol error. */
			memset(&rp, 0, sizeof rp);
			snprintf(rp.task, sizeof rp.task, "%s", rq.task);
			snprintf(rp.client, sizeof rp.client, "%s", rq.client);
			snprintf(rp.error, sizeof rp.error, "%.760s", err);
			log_info("not placed: %s", err);
		}
		doc = place_rep_enc(&rp, &len);
		client_reply(c, MSG_PLACE, h->id, doc, len);
		return;
	case MSG_STATUS:
		if ((ms = client_limit(c, 0)) > 0) {
			client_fail(c, h->id, PERR_AGAIN, 0, "busy, retry in %d "
			    "ms", ms);
			return;
		}
		if (h->len != 0) {
			client_fail(c, h->id, PERR_MALFORMED, 1,
			    "STATUS takes no payload");
			return;
		}
		doc = daemon_status(c->d, &len);
		client_reply(c, MSG_STATUS, h->id, doc, len);
		return;
	case MSG_BYE:
	case MSG_ERROR:
		c->closing = 1;
		return;
	default:
		client_fail(c, h->id, PERR_UNKNOWN, 0, "%s: not a scheduler "
		    "request", proto_type_name(h->type));
	}
}

/* Closing: stop reading, close once the output has drained. */
static void
client_close(struct client *c)
{
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		client_free(c);
}

/*
 * Whole frames from the input, while the connection lasts: the socket's
 * bytes before WELCOME, the opened records' after (hshake_open).
 */
static void
client_read(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *raw = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	struct evbuffer *in;
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	const uint8_t *p;

	while (!c->closing) {
		/*
		 * Replies the peer does not read: read no more of its
		 * requests until they drain (client_write), so that a flood
		 * that never reads holds the kernel's buffers, not ours.
		 */
		if (evbuffer_get_length(out) > D_OUT_MAX) {
			bufferevent_disable(bev, EV_READ);
			c->held = 1;
			return;
		}
		if ((in = hshake_open(&c->hs, raw)) == NULL) {
			/* Logged; a forged record gets no answer. */
			c->closing = 1;
			break;
		}
		if (evbuffer_get_length(in) < PROTO_HDR_LEN)
			return;
		evbuffer_copyout(in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		if (hshake_header(&c->hs, &h, out) == HSHAKE_CLOSE) {
			c->closing = 1;
			break;
		}
		if (evbuffer_get_length(in) < PROTO_HDR_LEN + (size_t)h.len)
			return;
		if ((p = evbuffer_pullup(in, PROTO_HDR_LEN +
		    (ssize_t)h.len)) == NULL) {
			client_fail(c, h.id, PERR_INTERNAL, 1, "out of memory");
			break;
		}
		p += PROTO_HDR_LEN;
		switch (hshake_input(&c->hs, &h, p, out)) {
		case HSHAKE_OK:
			break;
		case HSHAKE_WELCOMED:
			if (c->hs_timer != NULL) {
				event_free(c->hs_timer);
				c->hs_timer = NULL;
			}
			break;
		case HSHAKE_PASS:
			client_request(c, &h, p);
			break;
		default:
			c->closing = 1;
		}
		evbuffer_drain(in, PROTO_HDR_LEN + (size_t)h.len);
	}
	client_close(c);
}

static void
client_write(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;

	if (c->closing)
		client_free(c);
	else if (c->held) {
		c->held = 0;
		bufferevent_enable(bev, EV_READ);
		client_read(bev, c);
	}
}

static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	if (what & BEV_EVENT_TIMEOUT)
		log_info("client %s: idle, closing", c->hs.peer);
	else if (what & BEV_EVENT_ERROR)
		log_info("client %s: %s", c->hs.peer, strerror(errno));
	client_free(c);
}

static void
client_hs_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;

	hshake_timeout(&c->hs, bufferevent_get_output(c->bev));
	c->closing = 1;
	client_close(c);
}

static void
client_free(struct client *c)
{
	c->d->nclients--;
	TAILQ_REMOVE(&c->d->clients, c, entry);
	if (c->hs_timer != NULL)
		event_free(c->hs_timer);
	bufferevent_free(c->bev);
	hshake_fini(&c->hs);
	free(c);
}

static void
daemon_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct daemon *d = arg;
	struct timeval idle = { D_IDLE_S, 0 };
	struct timeval hs = { HSHAKE_TIMEOUT_DEFAULT, 0 };
	struct client *c, *o;
	char peer[64], key[LIMIT_KEY_MAX];
	int n = 0;

	/* One address may not take every connection there is. */
	limit_key(sa, key, sizeof key);
	TAILQ_FOREACH(o, &d->clients, entry)
		n += strcmp(o->key, key) == 0;
	if (d->nclients >= D_CONNS || n >= D_CONNS_ADDR) {
		if (now_mono() - d->conns_logged >= 1) {
			d->conns_logged = now_mono();
			log_warn("client %s: refused, %d connections (%d from "
			    "its address)", net_addr_str(sa, peer, sizeof peer),
			    d->nclients, n);
		}
		proto_refuse(fd, PERR_AGAIN, n >= D_CONNS_ADDR ?
		    "busy: too many connections from this address" :
		    "busy: too many connections");
		return;
	}
	if ((c = calloc(1, sizeof *c)) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	c->d = d;
	snprintf(c->key, sizeof c->key, "%s", key);
	net_addr_str(sa, peer, sizeof peer);
	limit_host(peer, c->host, sizeof c->host);
	hshake_init(&c->hs, &d->hs, peer, d->next_session++);
	net_nodelay(fd);
	c->bev = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		evutil_closesocket(fd);
		free(c);
		return;
	}
	if ((c->hs_timer = evtimer_new(d->base, client_hs_timeout, c)) ==
	    NULL) {
		bufferevent_free(c->bev);
		free(c);
		return;
	}
	d->nclients++;
	TAILQ_INSERT_TAIL(&d->clients, c, entry);
	bufferevent_setcb(c->bev, client_read, client_write, client_event, c);
	bufferevent_set_timeouts(c->bev, &idle, &idle);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	evtimer_add(c->hs_timer, &hs);
	log_debug("client %s: connected", peer);
}

/* ---- configuration, signals, main ------------------------------------ */

/* Reads the three files into a fresh view; -1 with a message logged. */
static int
daemon_load(const struct daemon_opts *o, struct sched *s)
{
	struct yerr err;
	int i;

	sched_init(s);
	if (input_servers(s, o->servers, o->links, &err) == -1 ||
	    input_links(s, o->links, o->servers, &err) == -1 ||
	    (o->tasks != NULL && input_tasks(s, o->tasks, o->links,
	    &err) == -1)) {
		log_error("%s", err.msg);
		sched_free(s);
		return -1;
	}
	/* What runs is what the daemon placed, not what the file says. */
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].from >= 0) {
			log_error("%s:%d: server: not in the daemon's tasks",
			    input_name(o->tasks), s->tasks[i].line);
			sched_free(s);
			return -1;
		}
	return 0;
}

/*
 * SIGHUP: the files again.  Placements whose client or server has gone
 * are forgotten; the others keep counting.
 */
static void
daemon_reload(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	struct sched ns;
	int i, n = 0, c;

	log_info("reloading %s, %s%s%s", input_name(d->o->servers),
	    input_name(d->o->links), d->o->tasks ? ", " : "",
	    d->o->tasks ? input_name(d->o->tasks) : "");
	svc_reloading();
	if (daemon_load(d->o, &ns) == -1) {
		log_error("reload failed; keeping the running view");
		svc_ready(NULL);
		return;
	}
	sched_free(&d->cfg);
	d->cfg = ns;
	for (i = 0; i < d->nas; i++) {
		if ((c = sched_client_find(&d->cfg, d->as[i].client)) < 0 ||
		    sched_server_find(&d->cfg, d->as[i].server) < 0)
			continue;
		d->as[i].t.client = c;
		d->as[n++] = d->as[i];
	}
	d->nas = n;
	/* Runs likewise: a run whose target has gone is no longer moving. */
	for (i = n = 0; i < d->nruns; i++) {
		if ((c = sched_client_find(&d->cfg, d->runs[i].client)) < 0 ||
		    sched_server_find(&d->cfg, d->runs[i].server) < 0) {
			log_info("%s of %s on %s: forgotten, its client or "
			    "server no longer named", d->runs[i].t.name,
			    d->runs[i].client, d->runs[i].server);
			continue;
		}
		d->runs[i].t.client = c;
		if (d->runs[i].moving &&
		    sched_server_find(&d->cfg, d->runs[i].to) < 0)
			d->runs[i].moving = 0;
		d->runs[n++] = d->runs[i];
	}
	d->nruns = n;
	d->reloaded = 1;
	if (targets_set(d) == -1)
		log_error("reload: out of memory");
	log_info("reloaded: %d servers, %d clients, %d tasks known",
	    d->cfg.nservers, d->cfg.nclients, d->cfg.ntasks);
	svc_ready(NULL);
}

static void
daemon_stop(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;

	log_info("signal %d: exiting", (int)sig);
	svc_stopping();
	event_base_loopexit(d->base, NULL);
}

/*
 * The lease and the rate limit, from the environment: a bad value is
 * ignored with a warning, as the toolkit does with its variables.
 */
static void
daemon_env(struct daemon *d)
{
	const char *e, *why;
	double rate = D_RATE, burst = D_BURST, v;
	long long n;

	d->lease = D_LEASE;
	if ((e = getenv("GLEAM_SCHED_LEASE")) != NULL && *e != '\0') {
		why = NULL;
		if (parse_duration(e, &v, &why) == 0) {
			if (v < 0.1 || v > 3600)
				why = "not between 100ms and 1h";
			else
				d->lease = v;
		}
		if (why != NULL)
			log_warn("GLEAM_SCHED_LEASE=%s: %s; the lease is %g s",
			    e, why, D_LEASE);
	}
	if ((e = getenv("GLEAM_SCHED_RATE")) != NULL && *e != '\0' &&
	    parse_double(e, 0, 1e6, &rate, &why) == -1) {
		log_warn("GLEAM_SCHED_RATE=%s: %s; it is %g", e, why, D_RATE);
		rate = D_RATE;
	}
	if ((e = getenv("GLEAM_SCHED_BURST")) != NULL && *e != '\0' &&
	    parse_double(e, 1, 1e6, &burst, &why) == -1) {
		log_warn("GLEAM_SCHED_BURST=%s: %s; it is %g", e, why,
		    D_BURST);
		burst = D_BURST;
	}
	d->leases = D_LEASES;
	if ((e = getenv("GLEAM_SCHED_LEASES")) != NULL && *e != '\0') {
		if (parse_int(e, 1, D_MAX_ASSIGN, &n, &why) == -1)
			log_warn("GLEAM_SCHED_LEASES=%s: %s; it is %d", e, why,
			    D_LEASES);
		else
			d->leases = (int)n;
	}
	limit_init(&d->lim, rate, burst);
	d->rc.margin = D_MARGIN;
	if ((e = getenv("GLEAM_SCHED_MARGIN")) != NULL && *e != '\0' &&
	    parse_double(e, 0, 100, &d->rc.margin, &why) == -1) {
		log_warn("GLEAM_SCHED_MARGIN=%s: %s; it is %g", e, why,
		    D_MARGIN);
		d->rc.margin = D_MARGIN;
	}
	d->rc.stay = D_STAY;
	if ((e = getenv("GLEAM_SCHED_STAY")) != NULL && *e != '\0') {
		why = NULL;
		if (parse_duration(e, &v, &why) == 0) {
			if (v < 0 || v > 86400)
				why = "not between 0 and 1 day";
			else
				d->rc.stay = v;
		}
		if (why != NULL)
			log_warn("GLEAM_SCHED_STAY=%s: %s; it is %g s", e, why,
			    D_STAY);
	}
	d->rc.moves = D_MOVES;
	if ((e = getenv("GLEAM_SCHED_MOVES")) != NULL && *e != '\0') {
		if (parse_int(e, 1, D_ORDERS, &n, &why) == -1)
			log_warn("GLEAM_SCHED_MOVES=%s: %s; it is %d", e, why,
			    D_MOVES);
		else
			d->rc.moves = (int)n;
	}
}

int
daemon_main(const struct daemon_opts *o)
{
	struct timeval tick = { 0, D_TICK_MS * 1000 };
	struct daemon d;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char host[SCHED_ADDR_MAX], err[256], bound[64];
	const char *why;
	int port = PROTO_DEFAULT_PORT + 1, rc = EXIT_IO;

	memset(&d, 0, sizeof d);
	d.o = o;
	d.next_session = 1;
	TAILQ_INIT(&d.clients);
	daemon_env(&d);
	d.busy_logged = d.conns_logged = now_mono() - 1;
	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.cv, NULL);
	pthread_cond_init(&d.mcv, NULL);
	if (parse_hostport(o->listen, host, sizeof host, &port, &why) == -1) {
		log_error("-L %s: %s", o->listen, why);
		return EXIT_USAGE;
	}
	if (auth_init() == -1) {
		log_error("libsodium cannot start");
		return EXIT_IO;
	}
	/*
	 * As gleam-serve's, the file may list identities: a client proves
	 * any one; the first is the one the daemon proves to its servers.
	 */
	if (o->key_file != NULL && auth_keys_load(&d.keys, o->key_file, err,
	    sizeof err) == -1) {
		log_error("%s", err);
		return EXIT_CONFIG;
	}
	if (d.keys.n > 0)
		d.key = d.keys.v[0];
	if (daemon_load(o, &d.cfg) == -1) {
		auth_keys_free(&d.keys);
		return EXIT_CONFIG;
	}
	d.hs.keys = &d.keys;
	d.hs.max_frame = D_MAX_FRAME;
	d.hs.name = "gleam-sched";
	d.hs.peer_kind = "client";
	d.hs.self_kind = "scheduler";
	if ((d.as = calloc(D_MAX_ASSIGN, sizeof *d.as)) == NULL ||
	    (d.runs = calloc(D_MAX_RUNS, sizeof *d.runs)) == NULL ||
	    (d.base = event_base_new()) == NULL) {
		log_error("out of memory");
		goto out;
	}
	/* Our peers may go at any time: a write to them must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	d.ev_hup = evsignal_new(d.base, SIGHUP, daemon_reload, &d);
	d.ev_term = evsignal_new(d.base, SIGTERM, daemon_stop, &d);
	d.ev_int = evsignal_new(d.base, SIGINT, daemon_stop, &d);
	d.ev_tick = event_new(d.base, -1, EV_PERSIST, lease_tick, &d);
	if (d.ev_hup == NULL || d.ev_term == NULL || d.ev_int == NULL ||
	    d.ev_tick == NULL || evtimer_add(d.ev_tick, &tick) == -1 ||
	    evsignal_add(d.ev_hup, NULL) == -1 ||
	    evsignal_add(d.ev_term, NULL) == -1 ||
	    evsignal_add(d.ev_int, NULL) == -1) {
		log_error("signals: %s", strerror(errno));
		goto out;
	}
	if (net_resolve(host, port, 1, &ss, &sslen, err, sizeof err) == -1) {
		log_error("listen %s: %s", o->listen, err);
		rc = EXIT_CONFIG;
		goto out;
	}
	d.listener = evconnlistener_new_bind(d.base, daemon_accept, &d,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
	    64, (struct sockaddr *)&ss, (int)sslen);
	if (d.listener == NULL) {
		log_error("listen %s: %s", o->listen, strerror(errno));
		rc = EXIT_NET;
		goto out;
	}
	sslen = sizeof ss;
	getsockname(evconnlistener_get_fd(d.listener), (struct sockaddr *)&ss,
	    &sslen);
	net_addr_str((struct sockaddr *)&ss, bound, sizeof bound);
	if (targets_set(&d) == -1 ||
	    pthread_create(&d.thr, NULL, poller, &d) != 0) {
		log_error("cannot start the status poller");
		goto out;
	}
	d.thr_started = 1;
	if (pthread_create(&d.mthr, NULL, mover, &d) != 0) {
		log_error("cannot start the mover");
		goto out;
	}
	d.mthr_started = 1;
	d.replan_next = now_mono() + o->replan;
	log_info("%d servers, %d clients, %d tasks known; status every %g s",
	    d.cfg.nservers, d.cfg.nclients, d.cfg.ntasks, o->interval);
	if (o->replan > 0)
		log_info("re-planning every %g s and on a change; a move saves "
		    "%g%% of its cost, after %g s on a server, %d at a time",
		    o->replan, d.rc.margin * 100, d.rc.stay, d.rc.moves);
	else
		log_info("no re-planning (-R 0): running clients stay where "
		    "they are");
	if (d.lim.rate > 0)
		log_info("placements leased for %g s, %d at once per address; "
		    "%g requests a second per address, %g at once", d.lease,
		    d.leases, d.lim.rate, d.lim.burst);
	else
		log_info("placements leased for %g s, %d at once per address; "
		    "no rate limit", d.lease, d.leases);
	log_info("listening on %s", bound);
	svc_ready(NULL);
	event_base_dispatch(d.base);
	rc = EXIT_OK;
out:
	pthread_mutex_lock(&d.mu);
	d.stop = 1;
	pthread_cond_broadcast(&d.cv);
	pthread_cond_broadcast(&d.mcv);
	pthread_mutex_unlock(&d.mu);
	if (d.thr_started)
		pthread_join(d.thr, NULL);
	if (d.mthr_started)
		pthread_join(d.mthr, NULL);
	if (d.listener != NULL)
		evconnlistener_free(d.listener);
	if (d.ev_hup != NULL)
		event_free(d.ev_hup);
	if (d.ev_term != NULL)
		event_free(d.ev_term);
	if (d.ev_int != NULL)
		event_free(d.ev_int);
	if (d.ev_tick != NULL)
		event_free(d.ev_tick);
	if (d.base != NULL)
		event_base_free(d.base);
	free(d.targets);
	heard_free(d.heard, d.nheard);
	free(d.as);
	free(d.runs);
	free(d.snap);
	sched_free(&d.cfg);
	auth_keys_free(&d.keys);
	sodium_memzero(&d.key, sizeof d.key);
	pthread_mutex_destroy(&d.mu);
	pthread_cond_destroy(&d.cv);
	pthread_cond_destroy(&d.mcv);
	return rc;
}
