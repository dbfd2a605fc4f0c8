/*
 * sched-sim: a discrete-event simulation of a LAN of GPU servers and the
 * clients that use them, to compare ways of pairing them: random,
 * round-robin, least-loaded, best-bandwidth, gleam-sched's own placement
 * (gleam-sched/place.c, linked in), and on small instances the exact
 * optimum found by simulating every assignment.
 *
 * What is simulated (the trace's header says where its numbers come from):
 * - Links are fluid flows sharing capacity max-min fairly: an Ethernet
 *   port is full duplex (a resource each way); a Wi-Fi channel is one
 *   half-duplex resource that every station on it shares, so a transfer
 *   between two stations of the same channel uses it twice.
 * - A request: its input crosses client to server, then its round trips
 *   pass as pure delay, then it waits in the server's FIFO for a GPU,
 *   runs, and its output crosses back.  The requests of a task wait at
 *   the client until the task has a server and its weights are there
 *   (they share the connection with the weights, behind them).
 * - A server's weights cache keeps models after their tasks end, and
 *   evicts the least recently used unpinned ones for room.
 * - Other users' work ("background") arrives at each server's FIFO as a
 *   Poisson stream of jobs that keeps its GPUs busy the given fraction.
 * - The scheduler is told what a user would tell it: mean rates, GPU
 *   times measured on the reference GPU, relative speeds, probed links.
 *   Reality strays from that: per-task and per-server factors on GPU
 *   time, log-normal per-request variation, bursty arrivals, probe error.
 *
 * Every policy sees the same arrival times and service times (common
 * random numbers), so differences come from the placements alone.
 *
 * Build and run with bench/sched-sim, which compiles this file with the
 * scheduler's sources.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"
#include "place.h"
#include "sched.h"
#include "yamlio.h"

#define NAME	64
#define MAXRES	256
#define MAXSRV	64
#define MAXCLI	256
#define MAXMOD	64
#define MAXTASK	4096

/* The small instances that brute force can solve: 3^6 assignments. */
#define INST_SERVERS	3
#define INST_TASKS	6
#define INST_COMBOS	729	/* INST_SERVERS ^ INST_TASKS */
#define INST_LOAD	0.7
#define INST_SECS	300.0

/* ---- the trace ----------------------------------------------------- */

struct tnode {
	int		 up, down;	/* resources it sends and receives on */
	double		 rtt;		/* what it adds to a round trip, seconds */
};

struct tsrv {
	char		 name[NAME];
	double		 speed;
	int		 gpus;
	uint64_t	 memory;
	double		 bg;		/* background occupancy */
	int		 bgclients;	/* clients behind it, for status */
	int		 models[MAXMOD];	/* cached at the start */
	int		 nmodels;
	struct tnode	 node;
};

struct tcli {
	char		 name[NAME];
	struct tnode	 node;
};

struct tmod {
	char		 id[NAME];
	uint64_t	 size;
};

struct ttask {
	char		 name[NAME];
	int		 client, model;	/* model -1: none */
	uint64_t	 memory;
	int		 requests;
	double		 rate, burst, gpu_time, in, out, rtrips, start;
	int		 window;	/* requests in flight at most; 0: any */
	double		 end;		/* when its session ends, scaled */
	/* Drawn once, shared by every policy. */
	double		*gaps;		/* the first start, then the gaps */
	double		*svc;		/* per-request factor on GPU time */
	double		 factor;	/* this task's true GPU time factor */
	double		 speedf[MAXSRV];	/* its speed-up factor per server */
};

struct trace {
	uint64_t	 seed;
	double		 n_gpu, n_speed, n_cv, n_probe;
	double		 bg_svc;	/* mean background job, seconds */
	double		 scale;		/* arrivals this many times faster */
	int		 truthful;	/* the scheduler is told burstiness */
	int		 nres;
	double		 cap[MAXRES];
	char		 resname[MAXRES][NAME];
	int		 nmedia;		/* the first nmedia resources */
	double		 medrtt[MAXMOD];
	int		 nsrv, ncli, nmod, ntask;
	struct tsrv	 sv[MAXSRV];
	struct tcli	 cli[MAXCLI];
	struct tmod	 mod[MAXMOD];
	struct ttask	*task;
	/* What probes measured: per client and server. */
	double		 pup[MAXCLI][MAXSRV], pdown[MAXCLI][MAXSRV];
	double		 prtt[MAXCLI][MAXSRV];
};

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sched-sim: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* ---- random numbers: splitmix64, one stream per purpose ------------- */

static uint64_t
mix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double
unif(uint64_t *x)
{
	return ((mix(x) >> 11) + 0.5) / 9007199254740992.0;
}

static double
expo(uint64_t *x, double mean)
{
	return -mean * log(unif(x));
}

static double
gauss(uint64_t *x)
{
	return sqrt(-2 * log(unif(x))) * cos(2 * M_PI * unif(x));
}

/*
 * An inter-arrival time of the given mean and squared coefficient of
 * variation: Erlang for ca2 < 1, exponential at 1, a balanced two-phase
 * hyperexponential above (bursts of short gaps between long ones).
 */
static double
gap(uint64_t *x, double mean, double ca2)
{
	double p, sum = 0;
	int k, i;

	if (ca2 < 0.99) {
		k = (int)lround(1 / (ca2 > 0.05 ? ca2 : 0.05));
		for (i = 0; i < k; i++)
			sum += expo(x, mean / k);
		return sum;
	}
	if (ca2 <= 1.01)
		return expo(x, mean);
	p = (1 + sqrt((ca2 - 1) / (ca2 + 1))) / 2;
	if (unif(x) < p)
		return expo(x, mean / (2 * p));
	return expo(x, mean / (2 * (1 - p)));
}

/* ---- reading the trace --------------------------------------------- */

static int
find_name(const char *name, const char *base, size_t stride, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(base + (size_t)i * stride, name) == 0)
			return i;
	return -1;
}

static yaml_node_t *
need(struct ydoc *d, yaml_node_t *m, const char *key)
{
	struct yerr err;
	yaml_node_t *n = ymap_get(d, m, key);

	if (n == NULL) {
		yerr_at(d, m, key, &err, "missing");
		die("%s", err.msg);
	}
	return n;
}

static void
chk(int rc, struct yerr *err)
{
	if (rc == -1)
		die("%s", err->msg);
}

static double
get_dbl(struct ydoc *d, yaml_node_t *m, const char *key, double min,
    double max, double dflt)
{
	struct yerr err;
	yaml_node_t *n = ymap_get(d, m, key);
	double v = dflt;

	if (n != NULL)
		chk(yget_dbl(d, n, key, min, max, &v, &err), &err);
	else if (isnan(dflt))
		need(d, m, key);
	return v;
}

static double
get_dur(struct ydoc *d, yaml_node_t *m, const char *key, double dflt)
{
	struct yerr err;
	yaml_node_t *n = ymap_get(d, m, key);
	double v = dflt;

	if (n != NULL)
		chk(yget_duration(d, n, key, &v, &err), &err);
	else if (isnan(dflt))
		need(d, m, key);
	return v;
}

static uint64_t
get_size(struct ydoc *d, yaml_node_t *m, const char *key, int required)
{
	struct yerr err;
	yaml_node_t *n = ymap_get(d, m, key);
	uint64_t v = 0;

	if (n != NULL)
		chk(yget_size(d, n, key, &v, &err), &err);
	else if (required)
		need(d, m, key);
	return v;
}

static void
get_name(struct ydoc *d, yaml_node_t *m, const char *key, char *out)
{
	struct yerr err;

	chk(yget_str(d, need(d, m, key), key, out, NAME, &err), &err);
}

/* A node's attachment: its own Ethernet port, or a shared medium. */
static void
read_node(struct trace *tr, struct ydoc *d, yaml_node_t *m, struct tnode *nd)
{
	static const char *const keys[] = { "rate", "rtt", NULL };
	struct yerr err;
	yaml_node_t *port, *med;
	char name[NAME];
	double rate;
	int r;

	port = ymap_get(d, m, "port");
	med = ymap_get(d, m, "medium");
	if ((port == NULL) == (med == NULL))
		die("%s:%d: give one of port and medium", d->name,
		    ynode_line(m));
	if (med != NULL) {
		chk(yget_str(d, med, "medium", name, sizeof name, &err), &err);
		if ((r = find_name(name, tr->resname[0], NAME, tr->nmedia)) < 0)
			die("%s:%d: medium: %s: unknown", d->name,
			    ynode_line(med), name);
		nd->up = nd->down = r;
		nd->rtt = tr->medrtt[r];
		return;
	}
	chk(ymap_check_keys(d, port, "port", keys, &err), &err);
	chk(yget_rate(d, need(d, port, "rate"), "rate", &rate, &err), &err);
	nd->rtt = get_dur(d, port, "rtt", NAN);
	if (tr->nres + 2 > MAXRES)
		die("too many links");
	nd->up = tr->nres;
	tr->cap[tr->nres++] = rate;
	nd->down = tr->nres;
	tr->cap[tr->nres++] = rate;
}

/* Shared media: the first resources, before any port. */
static void
read_media(struct trace *tr, struct ydoc *d, yaml_node_t *seq)
{
	static const char *const keys[] = { "name", "rate", "rtt", NULL };
	struct yerr err;
	yaml_node_t *m;
	size_t i;

	for (i = 0; i < yseq_len(seq); i++) {
		m = yseq_get(d, seq, i);
		chk(ymap_check_keys(d, m, "media", keys, &err), &err);
		if (tr->nres >= MAXMOD)
			die("too many media");
		get_name(d, m, "name", tr->resname[tr->nres]);
		chk(yget_rate(d, need(d, m, "rate"), "rate",
		    &tr->cap[tr->nres], &err), &err);
		tr->medrtt[tr->nres] = get_dur(d, m, "rtt", NAN);
		tr->nres++;
		tr->nmedia++;
	}
}

static void
read_trace(struct trace *tr, const char *path)
{
	static const char *const top[] = { "seed", "noise", "background_job",
	    "media", "models", "servers", "clients", "tasks", NULL };
	static const char *const nkeys[] = { "gpu_time", "speed",
	    "service_cv", "probe", NULL };
	static const char *const skeys[] = { "name", "speed", "gpus",
	    "memory", "background", "clients", "models", "port", "medium",
	    NULL };
	static const char *const ckeys[] = { "name", "port", "medium", NULL };
	static const char *const mkeys[] = { "id", "size", NULL };
	static const char *const tkeys[] = { "name", "client", "start",
	    "model", "memory", "requests", "rate", "burstiness", "gpu_time",
	    "input", "output", "round_trips", "window", NULL };
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root, *seq, *m, *n;
	char name[NAME];
	long long ll;
	size_t i, j;
	struct ttask *t;
	struct tsrv *sv;
	int k;

	memset(tr, 0, sizeof *tr);
	tr->scale = 1;
	chk(ydoc_load_file(&d, path, &err), &err);
	if ((root = ydoc_root(&d)) == NULL)
		die("%s: empty", path);
	chk(ymap_check_keys(&d, root, "trace", top, &err), &err);
	chk(yget_int(&d, need(&d, root, "seed"), "seed", 0, INT64_MAX, &ll,
	    &err), &err);
	tr->seed = (uint64_t)ll;
	m = need(&d, root, "noise");
	chk(ymap_check_keys(&d, m, "noise", nkeys, &err), &err);
	tr->n_gpu = get_dbl(&d, m, "gpu_time", 0, 0.9, NAN);
	tr->n_speed = get_dbl(&d, m, "speed", 0, 0.9, NAN);
	tr->n_cv = get_dbl(&d, m, "service_cv", 0, 5, NAN);
	tr->n_probe = get_dbl(&d, m, "probe", 0, 0.9, NAN);
	tr->bg_svc = get_dur(&d, root, "background_job", 0.05);
	if ((seq = ymap_get(&d, root, "media")) != NULL)
		read_media(tr, &d, seq);

	seq = need(&d, root, "models");
	for (i = 0; i < yseq_len(seq) && i < MAXMOD; i++) {
		m = yseq_get(&d, seq, i);
		chk(ymap_check_keys(&d, m, "models", mkeys, &err), &err);
		get_name(&d, m, "id", tr->mod[i].id);
		tr->mod[i].size = get_size(&d, m, "size", 1);
		tr->nmod++;
	}
	seq = need(&d, root, "servers");
	for (i = 0; i < yseq_len(seq) && i < MAXSRV; i++) {
		m = yseq_get(&d, seq, i);
		sv = &tr->sv[tr->nsrv];
		chk(ymap_check_keys(&d, m, "servers", skeys, &err), &err);
		get_name(&d, m, "name", sv->name);
		sv->speed = get_dbl(&d, m, "speed", 0.01, 100, NAN);
		sv->gpus = (int)get_dbl(&d, m, "gpus", 1, 16, 1);
		sv->memory = get_size(&d, m, "memory", 1);
		sv->bg = get_dbl(&d, m, "background", 0, 0.9, 0);
		sv->bgclients = (int)get_dbl(&d, m, "clients", 0, 1000, 0);
		if ((n = ymap_get(&d, m, "models")) != NULL) {
			for (j = 0; j < yseq_len(n); j++) {
				chk(yget_str(&d, yseq_get(&d, n, j), "models",
				    name, sizeof name, &err), &err);
				if ((k = find_name(name, tr->mod[0].id,
				    sizeof tr->mod[0], tr->nmod)) < 0)
					die("%s:%d: models: %s: unknown", path,
					    ynode_line(n), name);
				sv->models[sv->nmodels++] = k;
			}
		}
		read_node(tr, &d, m, &sv->node);
		tr->nsrv++;
	}
	seq = need(&d, root, "clients");
	for (i = 0; i < yseq_len(seq) && i < MAXCLI; i++) {
		m = yseq_get(&d, seq, i);
		chk(ymap_check_keys(&d, m, "clients", ckeys, &err), &err);
		get_name(&d, m, "name", tr->cli[tr->ncli].name);
		read_node(tr, &d, m, &tr->cli[tr->ncli].node);
		tr->ncli++;
	}
	seq = need(&d, root, "tasks");
	tr->ntask = (int)yseq_len(seq);
	if (tr->ntask > MAXTASK)
		die("more than %d tasks", MAXTASK);
	if ((tr->task = calloc((size_t)tr->ntask + 1, sizeof *tr->task)) == NULL)
		die("out of memory");
	for (i = 0; i < (size_t)tr->ntask; i++) {
		m = yseq_get(&d, seq, i);
		t = &tr->task[i];
		chk(ymap_check_keys(&d, m, "tasks", tkeys, &err), &err);
		get_name(&d, m, "name", t->name);
		get_name(&d, m, "client", name);
		if ((t->client = find_name(name, tr->cli[0].name,
		    sizeof tr->cli[0], tr->ncli)) < 0)
			die("%s:%d: client: %s: unknown", path, ynode_line(m),
			    name);
		t->model = -1;
		if ((n = ymap_get(&d, m, "model")) != NULL) {
			chk(yget_str(&d, n, "model", name, sizeof name, &err),
			    &err);
			if ((t->model = find_name(name, tr->mod[0].id,
			    sizeof tr->mod[0], tr->nmod)) < 0)
				die("%s:%d: model: %s: unknown", path,
				    ynode_line(n), name);
		}
		t->memory = get_size(&d, m, "memory", 0);
		t->requests = (int)get_dbl(&d, m, "requests", 1, 1e6, NAN);
		t->rate = get_dbl(&d, m, "rate", 1e-4, 1e4, NAN);
		t->burst = get_dbl(&d, m, "burstiness", 0, 100, 1);
		t->gpu_time = get_dur(&d, m, "gpu_time", NAN);
		t->in = (double)get_size(&d, m, "input", 1);
		t->out = (double)get_size(&d, m, "output", 1);
		t->rtrips = get_dbl(&d, m, "round_trips", 0, 1e5, 1);
		t->start = get_dur(&d, m, "start", NAN);
		t->window = (int)get_dbl(&d, m, "window", 0, 1000, 1);
	}
	ydoc_free(&d);
}

/* The path's bottleneck alone: a shared channel crossed twice halves. */
static double
path_cap(const struct trace *tr, const struct tnode *from,
    const struct tnode *to)
{
	double a = tr->cap[from->up], b = tr->cap[to->down];

	if (from->up == to->down)
		return a / 2;
	return a < b ? a : b;
}

/* Draws what every policy will see the same way. */
static void
draw(struct trace *tr)
{
	struct ttask *t;
	uint64_t x;
	double sigma;
	int i, j, c, v;

	x = tr->seed ^ 0x70726f6265ULL;
	for (c = 0; c < tr->ncli; c++) {
		for (v = 0; v < tr->nsrv; v++) {
			tr->pup[c][v] = path_cap(tr, &tr->cli[c].node,
			    &tr->sv[v].node) * (1 + tr->n_probe *
			    (2 * unif(&x) - 1));
			tr->pdown[c][v] = path_cap(tr, &tr->sv[v].node,
			    &tr->cli[c].node) * (1 + tr->n_probe *
			    (2 * unif(&x) - 1));
			tr->prtt[c][v] = (tr->cli[c].node.rtt +
			    tr->sv[v].node.rtt) * (1 + tr->n_probe *
			    (2 * unif(&x) - 1));
		}
	}
	sigma = sqrt(log(1 + tr->n_cv * tr->n_cv));
	for (i = 0; i < tr->ntask; i++) {
		t = &tr->task[i];
		x = tr->seed * 1000003ULL + (uint64_t)i;
		free(t->gaps);
		free(t->svc);
		t->gaps = calloc((size_t)t->requests, sizeof *t->gaps);
		t->svc = calloc((size_t)t->requests, sizeof *t->svc);
		if (t->gaps == NULL || t->svc == NULL)
			die("out of memory");
		t->factor = 1 + tr->n_gpu * (2 * unif(&x) - 1);
		for (v = 0; v < tr->nsrv; v++)
			t->speedf[v] = 1 + tr->n_speed * (2 * unif(&x) - 1);
		/* The session lasts as long as its requests at its rate. */
		t->end = (t->start + t->requests / t->rate) / tr->scale;
		for (j = 0; j < t->requests; j++) {
			t->gaps[j] = j == 0 ? t->start / tr->scale :
			    gap(&x, 1 / (t->rate * tr->scale), t->burst);
			/* Log-normal of mean 1. */
			t->svc[j] = exp(sigma * gauss(&x) - sigma * sigma / 2);
		}
	}
}

/* ---- the simulation ------------------------------------------------ */

enum { EV_TASK, EV_REQ, EV_SERVER, EV_GPU, EV_BG };
enum { F_WEIGHTS, F_IN, F_OUT };
enum { TS_WAIT, TS_PENDING, TS_LOADING, TS_READY, TS_DONE };
enum { M_NONE, M_LOADING, M_READY };

struct event {
	double		 t;
	uint64_t	 seq;
	int		 type, a, b;
};

struct flow {
	int		 kind, task, req, server;
	int		 res[2];
	double		 coef[2];
	int		 nres;
	double		 left;		/* bits */
	double		 rate;
	int		 frozen;
};

/* A job in a server's FIFO: a request, or background (task -1). */
struct job {
	int		 task, req;
	double		 svc;
};

struct sserver {
	int		 busy;
	struct job	 running[16];
	int		 used[16];
	struct job	*q;
	int		 qhead, qlen, qcap;
	uint64_t	 taskmem;	/* bytes pinned by running tasks */
	int		 mstate[MAXMOD];
	int		 mref[MAXMOD];
	double		 mused[MAXMOD];	/* last use, for LRU */
	int		 ntasks;
	uint64_t	 bgx;		/* its background stream */
};

struct stask {
	int		 state, server, done;
	int		 issued;	/* requests the app has sent */
	int		 inflight;	/* sent and not answered */
	int		 blocked;	/* the next is due but the window is full */
	int		 ended;		/* it sends no more */
	double		 placed;	/* when it got its server */
	double		 ready;		/* when its weights were there */
	int		*backlog;	/* requests waiting at the client */
	int		 nback;
	double		*issue, *enq, *start, *instart, *done_t, *svc;
};

struct stats {
	int		 done;
	double		 first, last, span;
	double		 lat, queue, wwait, svc, net;
	double		*lats;
	int		 nlats;
	double		 weights_bytes;
	int		 loads;
};

/*
 * gleam-sched sees what gleam-serve's status reports today; gleam+queue
 * also sees the GPU work queued on each server (what the daemon will need
 * gleam-serve to report, or estimate).
 */
enum policy { P_RANDOM, P_RR, P_LEAST, P_BW, P_GLEAM, P_GLEAMQ, P_FIXED,
    NPOLICY };
static int open_loop;		/* -O */
static int verbose;		/* -v */

static const char *const policy_name[] = { "random", "round-robin",
    "least-loaded", "best-bandwidth", "gleam-sched", "gleam+queue",
    "fixed" };

struct sim {
	const struct trace *tr;
	enum policy	 policy;
	const int	*assign;	/* P_FIXED */
	int		 oneshot;	/* P_GLEAM: plan all at time 0 */
	int		 backlog_known;	/* P_GLEAM: status reports queued work */
	int		 open;		/* open loop: no windows, no sessions */
	double		 now;
	struct event	*ev;
	int		 nev, evcap;
	uint64_t	 seq;
	struct flow	*fl;
	int		 nfl, flcap;
	double		 flow_t;
	int		 dirty;
	struct sserver	 sv[MAXSRV];
	struct stask	*tk;
	int		*pending;
	int		 npending;
	int		 rr;
	uint64_t	 rnd;
	int		 tasks_done;
	struct stats	 st;
};

static void
ev_push(struct sim *sm, double t, int type, int a, int b)
{
	struct event e = { t, sm->seq++, type, a, b }, tmp;
	int i, p;

	if (sm->nev == sm->evcap) {
		sm->evcap = sm->evcap ? sm->evcap * 2 : 1024;
		if ((sm->ev = realloc(sm->ev, (size_t)sm->evcap *
		    sizeof *sm->ev)) == NULL)
			die("out of memory");
	}
	i = sm->nev++;
	sm->ev[i] = e;
	while (i > 0) {
		p = (i - 1) / 2;
		if (sm->ev[p].t < sm->ev[i].t || (sm->ev[p].t == sm->ev[i].t &&
		    sm->ev[p].seq < sm->ev[i].seq))
			break;
		tmp = sm->ev[p];
		sm->ev[p] = sm->ev[i];
		sm->ev[i] = tmp;
		i = p;
	}
}

static int
ev_less(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct event
ev_pop(struct sim *sm)
{
	struct event top = sm->ev[0], tmp;
	int i = 0, l, r, m;

	sm->ev[0] = sm->ev[--sm->nev];
	for (;;) {
		l = 2 * i + 1;
		r = l + 1;
		m = i;
		if (l < sm->nev && ev_less(&sm->ev[l], &sm->ev[m]))
			m = l;
		if (r < sm->nev && ev_less(&sm->ev[r], &sm->ev[m]))
			m = r;
		if (m == i)
			break;
		tmp = sm->ev[m];
		sm->ev[m] = sm->ev[i];
		sm->ev[i] = tmp;
		i = m;
	}
	return top;
}

/* Moves every flow on to now. */
static void
flows_advance(struct sim *sm)
{
	double dt = sm->now - sm->flow_t;
	int i;

	if (dt > 0)
		for (i = 0; i < sm->nfl; i++)
			sm->fl[i].left -= sm->fl[i].rate * dt;
	sm->flow_t = sm->now;
}

/* Max-min fair rates by progressive filling. */
static void
flows_share(struct sim *sm)
{
	const struct trace *tr = sm->tr;
	double rem[MAXRES], w[MAXRES], inc;
	struct flow *f;
	int i, j, r, best, left = sm->nfl;

	for (r = 0; r < tr->nres; r++) {
		rem[r] = tr->cap[r];
		w[r] = 0;
	}
	for (i = 0; i < sm->nfl; i++) {
		f = &sm->fl[i];
		f->rate = 0;
		f->frozen = 0;
		for (j = 0; j < f->nres; j++)
			w[f->res[j]] += f->coef[j];
	}
	while (left > 0) {
		best = -1;
		for (r = 0; r < tr->nres; r++)
			if (w[r] > 1e-12 && (best < 0 ||
			    rem[r] / w[r] < rem[best] / w[best]))
				best = r;
		if (best < 0)
			break;
		inc = rem[best] / w[best];
		if (inc < 0)
			inc = 0;
		for (r = 0; r < tr->nres; r++)
			rem[r] -= inc * w[r];
		for (i = 0; i < sm->nfl; i++) {
			f = &sm->fl[i];
			if (f->frozen)
				continue;
			f->rate += inc;
			for (j = 0; j < f->nres; j++)
				if (f->res[j] == best ||
				    rem[f->res[j]] <= 1e-9 * tr->cap[f->res[j]])
					break;
			if (j == f->nres)
				continue;
			f->frozen = 1;
			left--;
			for (j = 0; j < f->nres; j++)
				w[f->res[j]] -= f->coef[j];
		}
		w[best] = 0;
	}
	sm->dirty = 0;
}

static void
flow_start(struct sim *sm, int kind, int task, int req, int server,
    double bytes)
{
	const struct trace *tr = sm->tr;
	const struct tnode *c = &tr->cli[tr->task[task].client].node;
	const struct tnode *s = &tr->sv[server].node;
	struct flow *f;

	flows_advance(sm);
	if (sm->nfl == sm->flcap) {
		sm->flcap = sm->flcap ? sm->flcap * 2 : 256;
		if ((sm->fl = realloc(sm->fl, (size_t)sm->flcap *
		    sizeof *sm->fl)) == NULL)
			die("out of memory");
	}
	f = &sm->fl[sm->nfl++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->task = task;
	f->req = req;
	f->server = server;
	f->left = bytes * 8 < 1 ? 1 : bytes * 8;
	if (kind == F_OUT) {
		f->res[0] = s->up;
		f->res[1] = c->down;
	} else {
		f->res[0] = c->up;
		f->res[1] = s->down;
	}
	f->coef[0] = f->coef[1] = 1;
	f->nres = 2;
	if (f->res[0] == f->res[1]) {
		f->coef[0] = 2;
		f->nres = 1;
	}
	sm->dirty = 1;
}

static void	server_enqueue(struct sim *, int server, struct job);
static void	task_ready(struct sim *, int task);
static void	request_go(struct sim *, int task, int req);
static void	try_pending(struct sim *);
static void	app_next(struct sim *, int task);
static void	task_check_done(struct sim *, int task);

static void
gpu_start(struct sim *sm, int v)
{
	struct sserver *s = &sm->sv[v];
	struct job j;

	int g;

	while (s->busy < sm->tr->sv[v].gpus && s->qlen > 0) {
		j = s->q[s->qhead];
		s->qhead = (s->qhead + 1) % s->qcap;
		s->qlen--;
		if (j.task >= 0) {
			sm->tk[j.task].start[j.req] = sm->now;
			sm->tk[j.task].svc[j.req] = j.svc;
		}
		for (g = 0; s->used[g]; g++)
			;
		s->used[g] = 1;
		s->running[g] = j;
		ev_push(sm, sm->now + j.svc, EV_GPU, v, g);
		s->busy++;
	}
}

static void
server_enqueue(struct sim *sm, int v, struct job j)
{
	struct sserver *s = &sm->sv[v];
	struct job *nq;
	int i, ncap;

	if (s->qlen == s->qcap) {
		ncap = s->qcap ? s->qcap * 2 : 64;
		if ((nq = calloc((size_t)ncap, sizeof *nq)) == NULL)
			die("out of memory");
		for (i = 0; i < s->qlen; i++)
			nq[i] = s->q[(s->qhead + i) % s->qcap];
		free(s->q);
		s->q = nq;
		s->qhead = 0;
		s->qcap = ncap;
	}
	s->q[(s->qhead + s->qlen) % s->qcap] = j;
	s->qlen++;
	gpu_start(sm, v);
}

/* A GPU finished its job. */
static void
gpu_done(struct sim *sm, int v, int slot)
{
	struct sserver *s = &sm->sv[v];
	struct job j = s->running[slot];

	s->busy--;
	s->used[slot] = 0;
	if (j.task >= 0)
		flow_start(sm, F_OUT, j.task, j.req, v, sm->tr->task[j.task].out);
	gpu_start(sm, v);
}

/* Bytes a server could give the task now, evicting unpinned weights. */
static int
fits(const struct sim *sm, int task, int v)
{
	const struct trace *tr = sm->tr;
	const struct ttask *t = &tr->task[task];
	const struct sserver *s = &sm->sv[v];
	uint64_t pinned = s->taskmem, need = t->memory;
	int m;

	for (m = 0; m < tr->nmod; m++)
		if (s->mref[m] > 0)
			pinned += tr->mod[m].size;
	if (t->model >= 0 && s->mref[t->model] == 0)
		need += tr->mod[t->model].size;
	return pinned + need <= tr->sv[v].memory;
}

/*
 * Frees cached, unpinned weights, least recently used first; never the
 * model `keep`, which the task making room is about to use.
 */
static void
evict_for(struct sim *sm, int v, uint64_t need, int keep)
{
	const struct trace *tr = sm->tr;
	struct sserver *s = &sm->sv[v];
	uint64_t used;
	int m, lru;

	for (;;) {
		used = s->taskmem;
		for (m = 0; m < tr->nmod; m++)
			if (s->mstate[m] != M_NONE)
				used += tr->mod[m].size;
		if (used + need <= tr->sv[v].memory)
			return;
		lru = -1;
		for (m = 0; m < tr->nmod; m++)
			if (s->mstate[m] == M_READY && s->mref[m] == 0 &&
			    m != keep &&
			    (lru < 0 || s->mused[m] < s->mused[lru]))
				lru = m;
		if (lru < 0)
			return;
		s->mstate[lru] = M_NONE;
	}
}

static void
task_place(struct sim *sm, int task, int v)
{
	const struct trace *tr = sm->tr;
	const struct ttask *t = &tr->task[task];
	struct stask *k = &sm->tk[task];
	struct sserver *s = &sm->sv[v];
	uint64_t need = t->memory;

	k->server = v;
	k->placed = sm->now;
	s->ntasks++;
	if (t->model >= 0 && s->mstate[t->model] == M_NONE)
		need += tr->mod[t->model].size;
	evict_for(sm, v, need, t->model);
	s->taskmem += t->memory;
	if (t->model < 0) {
		task_ready(sm, task);
		return;
	}
	s->mref[t->model]++;
	s->mused[t->model] = sm->now;
	switch (s->mstate[t->model]) {
	case M_READY:
		task_ready(sm, task);
		break;
	case M_LOADING:
		k->state = TS_LOADING;
		break;
	default:
		s->mstate[t->model] = M_LOADING;
		k->state = TS_LOADING;
		sm->st.weights_bytes += (double)tr->mod[t->model].size;
		sm->st.loads++;
		flow_start(sm, F_WEIGHTS, task, -1, v,
		    (double)tr->mod[t->model].size);
	}
}

static void
task_ready(struct sim *sm, int task)
{
	struct stask *k = &sm->tk[task];
	int i;

	k->state = TS_READY;
	k->ready = sm->now;
	for (i = 0; i < k->nback; i++)
		request_go(sm, task, k->backlog[i]);
	k->nback = 0;
}

/* The request's input leaves the client. */
static void
request_go(struct sim *sm, int task, int req)
{
	sm->tk[task].instart[req] = sm->now;
	flow_start(sm, F_IN, task, req, sm->tk[task].server,
	    sm->tr->task[task].in);
}

static void
weights_done(struct sim *sm, int task, int v)
{
	const struct trace *tr = sm->tr;
	int model = tr->task[task].model, i;

	sm->sv[v].mstate[model] = M_READY;
	for (i = 0; i < tr->ntask; i++)
		if (sm->tk[i].server == v && sm->tk[i].state == TS_LOADING &&
		    tr->task[i].model == model)
			task_ready(sm, i);
}

static void
request_done(struct sim *sm, int task, int req)
{
	struct stask *k = &sm->tk[task];
	double lat;

	k->done_t[req] = sm->now;
	lat = sm->now - k->issue[req];
	sm->st.done++;
	sm->st.lat += lat;
	sm->st.lats[sm->st.nlats++] = lat;
	sm->st.queue += k->start[req] - k->enq[req];
	sm->st.wwait += k->instart[req] - k->issue[req];
	sm->st.svc += k->svc[req];
	sm->st.net += lat - (k->start[req] - k->enq[req]) -
	    (k->instart[req] - k->issue[req]) - k->svc[req];
	if (sm->now > sm->st.last)
		sm->st.last = sm->now;
	k->done++;
	k->inflight--;
	if (k->blocked) {
		k->blocked = 0;
		app_next(sm, task);
	}
	task_check_done(sm, task);
}

/* The task has sent all it will and had every answer: it leaves. */
static void
task_check_done(struct sim *sm, int task)
{
	const struct ttask *t = &sm->tr->task[task];
	struct stask *k = &sm->tk[task];
	struct sserver *s;

	if (!k->ended || k->done < k->issued || k->state == TS_DONE)
		return;
	k->state = TS_DONE;
	sm->tasks_done++;
	s = &sm->sv[k->server];
	s->ntasks--;
	s->taskmem -= t->memory;
	if (t->model >= 0) {
		s->mref[t->model]--;
		s->mused[t->model] = sm->now;
	}
	try_pending(sm);
}

/*
 * The app's next request is due.  It sends it if its window has room;
 * else it waits for an answer.  A session ends at its time, or when all
 * its requests are sent.
 */
static void
app_next(struct sim *sm, int task)
{
	const struct ttask *t = &sm->tr->task[task];
	struct stask *k = &sm->tk[task];
	int j;

	if (k->ended)
		return;
	if (k->issued == t->requests || (!sm->open && k->issued > 0 &&
	    sm->now > t->end)) {
		k->ended = 1;
		task_check_done(sm, task);
		return;
	}
	if (!sm->open && t->window > 0 && k->inflight >= t->window) {
		k->blocked = 1;
		return;
	}
	j = k->issued++;
	k->inflight++;
	k->issue[j] = sm->now;
	if (j + 1 < t->requests)
		ev_push(sm, sm->now + t->gaps[j + 1], EV_REQ, task, j + 1);
	else
		ev_push(sm, sm->now, EV_REQ, task, j + 1);
	if (k->state == TS_READY)
		request_go(sm, task, j);
	else
		k->backlog[k->nback++] = j;
}

/* ---- policies ------------------------------------------------------ */

static int
pick_random(struct sim *sm, int task)
{
	int v, n = 0, ok[MAXSRV];

	for (v = 0; v < sm->tr->nsrv; v++)
		if (fits(sm, task, v))
			ok[n++] = v;
	return n == 0 ? -1 : ok[mix(&sm->rnd) % (uint64_t)n];
}

static int
pick_rr(struct sim *sm, int task)
{
	int i, v;

	for (i = 0; i < sm->tr->nsrv; i++) {
		v = (sm->rr + i) % sm->tr->nsrv;
		if (fits(sm, task, v)) {
			sm->rr = v + 1;
			return v;
		}
	}
	return -1;
}

/* Fewest clients, as gleam-serve's status counts them. */
static int
pick_least(struct sim *sm, int task)
{
	int v, best = -1, load, bload = 0;

	for (v = 0; v < sm->tr->nsrv; v++) {
		if (!fits(sm, task, v))
			continue;
		load = sm->sv[v].ntasks + sm->tr->sv[v].bgclients;
		if (best < 0 || load < bload) {
			best = v;
			bload = load;
		}
	}
	return best;
}

/* The most probed bandwidth (the slower direction), then the least RTT. */
static int
pick_bw(struct sim *sm, int task)
{
	const struct trace *tr = sm->tr;
	int c = tr->task[task].client, v, best = -1;
	double bw, bbw = 0;

	for (v = 0; v < tr->nsrv; v++) {
		if (!fits(sm, task, v))
			continue;
		bw = fmin(tr->pup[c][v], tr->pdown[c][v]);
		if (best < 0 || bw > bbw * 1.001 || (bw > bbw / 1.001 &&
		    tr->prtt[c][v] < tr->prtt[c][best])) {
			best = v;
			bbw = bw;
		}
	}
	return best;
}

/*
 * gleam-sched's view of the LAN now: what status and probes would say.
 * The running tasks are fixed; those given in `place` (n of them) are to
 * be placed.  Cached weights that no task uses are resident, and their
 * memory counts as free, since the cache gives it up on demand; so the
 * view can promise room that is not there, and the caller checks.
 */
/*
 * Does the view list the task: 2 if it is to be placed, 1 if it runs (its
 * client is connected), 0 if not?
 */
static int
in_view(const struct sim *sm, int i, const int *place, int n)
{
	int j;

	for (j = 0; j < n; j++)
		if (place[j] == i)
			return 2;
	return sm->tk[i].server >= 0 && sm->tk[i].state != TS_DONE;
}

static void
view(struct sim *sm, struct sched *s, const int *place, int n)
{
	const struct trace *tr = sm->tr;
	struct sched_server *o;
	struct sched_task *o_t;
	const struct ttask *t;
	struct sserver *sv;
	uint64_t used;
	int v, c, m, i, j, listed;

	sched_init(s);
	s->servers = calloc((size_t)tr->nsrv, sizeof *s->servers);
	s->clients = calloc((size_t)tr->ncli, sizeof *s->clients);
	s->links = calloc((size_t)tr->ncli * (size_t)tr->nsrv,
	    sizeof *s->links);
	s->tasks = calloc((size_t)tr->ntask + 1, sizeof *s->tasks);
	if (s->servers == NULL || s->clients == NULL || s->links == NULL ||
	    s->tasks == NULL)
		die("out of memory");
	s->nservers = tr->nsrv;
	s->nclients = tr->ncli;
	/* The admin says which machines share a Wi-Fi channel. */
	for (m = 0; m < tr->nmedia; m++)
		if (sched_medium(s, tr->resname[m]) == -1)
			die("out of memory");
	for (v = 0; v < tr->nsrv; v++) {
		o = &s->servers[v];
		sv = &sm->sv[v];
		if (tr->sv[v].node.up < tr->nmedia)
			o->medium = tr->sv[v].node.up + 1;
		else	/* the admin knows its port's rate */
			o->port = tr->cap[tr->sv[v].node.down];
		snprintf(o->name, sizeof o->name, "%s", tr->sv[v].name);
		o->speed = tr->sv[v].speed;
		o->ngpus = tr->sv[v].gpus;
		o->background = tr->sv[v].bg;
		/*
		 * Free memory as status would show it, less what the listed
		 * tasks hold: the predictor adds theirs back.
		 */
		used = 0;
		for (i = 0; i < tr->ntask; i++)
			if (sm->tk[i].server == v &&
			    sm->tk[i].state != TS_DONE &&
			    in_view(sm, i, place, n) != 1)
				used += tr->task[i].memory;
		/*
		 * Weights still on their way are not there yet: the task
		 * uploading them is listed, and the predictor counts its
		 * upload (and their memory) as it would a new one's.
		 */
		for (m = 0; m < tr->nmod; m++) {
			if (sv->mstate[m] != M_READY)
				continue;
			if (sv->mref[m] > 0)
				used += tr->mod[m].size;
			if (sched_model_add(o, tr->mod[m].id) == -1)
				die("out of memory");
		}
		o->mem_free = used < tr->sv[v].memory ? tr->sv[v].memory -
		    used : 0;
		o->gpu_free_max = o->mem_free;
		/* GPU work waiting there, as the scheduler would estimate it. */
		for (j = 0; sm->backlog_known && j < sv->qlen; j++) {
			struct job *jb = &sv->q[(sv->qhead + j) % sv->qcap];

			o->queued += jb->task < 0 ? tr->bg_svc :
			    tr->task[jb->task].gpu_time / tr->sv[v].speed;
		}
	}
	for (c = 0; c < tr->ncli; c++) {
		snprintf(s->clients[c].name, sizeof s->clients[c].name, "%s",
		    tr->cli[c].name);
		if (tr->cli[c].node.up < tr->nmedia)
			s->clients[c].medium = tr->cli[c].node.up + 1;
		for (v = 0; v < tr->nsrv; v++) {
			sched_link(s, c, v)->ok = 1;
			sched_link(s, c, v)->up = tr->pup[c][v];
			sched_link(s, c, v)->down = tr->pdown[c][v];
			sched_link(s, c, v)->rtt = tr->prtt[c][v];
		}
	}
	for (i = 0; i < tr->ntask; i++) {
		if ((listed = in_view(sm, i, place, n)) == 0)
			continue;
		t = &tr->task[i];
		o_t = &s->tasks[s->ntasks++];
		snprintf(o_t->name, sizeof o_t->name, "%d", i);
		o_t->client = t->client;
		if (t->model >= 0) {
			snprintf(o_t->model, sizeof o_t->model, "%s",
			    tr->mod[t->model].id);
			o_t->model_size = tr->mod[t->model].size;
		}
		o_t->memory = t->memory;
		/* What is left to do, as gleam-run's progress would say. */
		if (sm->open)
			o_t->requests = t->requests - sm->tk[i].done;
		else
			o_t->requests = sm->tk[i].inflight + fmin(t->requests -
			    sm->tk[i].issued, fmax(0, t->end - sm->now) *
			    t->rate * tr->scale);
		if (o_t->requests < 1)
			o_t->requests = 1;
		o_t->rate = t->rate * tr->scale;
		o_t->burst = tr->truthful ? t->burst : 1;
		o_t->gpu_time = t->gpu_time;
		o_t->in = t->in;
		o_t->out = t->out;
		o_t->round_trips = t->rtrips;
		o_t->window = sm->open ? 0 : t->window;
		/* Weights on their way: what of them has crossed. */
		if (listed == 1 && t->model >= 0 &&
		    sm->sv[sm->tk[i].server].mstate[t->model] == M_LOADING)
			for (j = 0; j < sm->nfl; j++)
				if (sm->fl[j].kind == F_WEIGHTS &&
				    sm->fl[j].server == sm->tk[i].server &&
				    tr->task[sm->fl[j].task].model == t->model)
					o_t->model_sent = o_t->model_size -
					    (uint64_t)fmin((double)o_t->model_size,
					    sm->fl[j].left / 8);
		o_t->server = listed == 1 ? sm->tk[i].server : -1;
		o_t->fixed = listed == 1;
	}
}

/* The view's answer for task i, checked against the real memory. */
static int
view_answer(struct sim *sm, const struct sched *s, int task)
{
	int i, v;

	for (i = 0; i < s->ntasks; i++) {
		if (atoi(s->tasks[i].name) != task)
			continue;
		v = s->tasks[i].server;
		return v >= 0 && fits(sm, task, v) ? v : -1;
	}
	return -1;
}

/*
 * Where gleam-sched puts the task; a server that turns out to have no
 * room (as gleam-serve would refuse it) is left out and the task placed
 * again.
 */
static int
pick_gleam(struct sim *sm, int task)
{
	struct sched s;
	static struct place_why why[MAXTASK];
	int refused[MAXSRV], nref = 0, i, j, v;

	for (;;) {
		view(sm, &s, &task, 1);
		for (i = 0; i < s.ntasks; i++)
			if (atoi(s.tasks[i].name) == task)
				break;
		for (j = 0; j < nref; j++)
			sched_link(&s, s.tasks[i].client, refused[j])->ok = 0;
		memset(why, 0, sizeof why);
		if (place_plan(&s, verbose > 1 ? why : NULL) == -1)
			die("out of memory");
		v = s.tasks[i].server;
		if (verbose > 1 && v >= 0) {
			struct predictor pp;
			struct pred pr;

			if (predict_init(&pp, &s) == -1)
				die("out of memory");
			predict_task(&pp, i, &pr);
			printf("    t=%.1f %s -> %s: pred queue %.1f ms, "
			    "answered %.0f of %.0f, latency %.1f ms, load "
			    "%.1f s: %s\n", sm->now, sm->tr->task[task].name,
			    s.servers[v].name, pr.queue * 1e3, pr.answered,
			    s.tasks[i].requests, pr.latency * 1e3, pr.load,
			    why[i].reason);
			predict_free(&pp);
		}
		if (verbose > 1)
			place_why_free(why, s.ntasks);
		sched_free(&s);
		if (v < 0 || fits(sm, task, v))
			return v;
		refused[nref++] = v;
	}
}

static int
pick(struct sim *sm, int task)
{
	switch (sm->policy) {
	case P_RANDOM:
		return pick_random(sm, task);
	case P_RR:
		return pick_rr(sm, task);
	case P_LEAST:
		return pick_least(sm, task);
	case P_BW:
		return pick_bw(sm, task);
	case P_GLEAM:
	case P_GLEAMQ:
		return pick_gleam(sm, task);
	case P_FIXED:
		return fits(sm, task, sm->assign[task]) ? sm->assign[task] : -1;
	default:
		return -1;
	}
}

static void
try_pending(struct sim *sm)
{
	int i, n = 0, v, t;

	for (i = 0; i < sm->npending; i++) {
		t = sm->pending[i];
		if ((v = pick(sm, t)) >= 0)
			task_place(sm, t, v);
		else
			sm->pending[n++] = t;
	}
	sm->npending = n;
}

static void
task_arrive(struct sim *sm, int task)
{
	int v;

	if ((v = pick(sm, task)) >= 0) {
		task_place(sm, task, v);
		return;
	}
	sm->tk[task].state = TS_PENDING;
	sm->pending[sm->npending++] = task;
}

/* One-shot: gleam-sched plans every task of the instance at once. */
static void
plan_all(struct sim *sm)
{
	const struct trace *tr = sm->tr;
	struct sched s;
	int *all, i, v;

	if ((all = calloc((size_t)tr->ntask, sizeof *all)) == NULL)
		die("out of memory");
	for (i = 0; i < tr->ntask; i++)
		all[i] = i;
	view(sm, &s, all, tr->ntask);
	if (place_plan(&s, NULL) == -1)
		die("out of memory");
	for (i = 0; i < tr->ntask; i++) {
		v = view_answer(sm, &s, i);
		if (v >= 0)
			task_place(sm, i, v);
		else {
			sm->tk[i].state = TS_PENDING;
			sm->pending[sm->npending++] = i;
		}
	}
	sched_free(&s);
	free(all);
}

static void
background(struct sim *sm, int v)
{
	const struct tsrv *s = &sm->tr->sv[v];
	struct job j = { -1, 0, 0 };

	if (s->bg <= 0)
		return;
	j.svc = expo(&sm->sv[v].bgx, sm->tr->bg_svc);
	server_enqueue(sm, v, j);
	ev_push(sm, sm->now + expo(&sm->sv[v].bgx, sm->tr->bg_svc / (s->bg *
	    s->gpus)), EV_BG, v, 0);
}

static void
flow_finish(struct sim *sm, struct flow f)
{
	const struct ttask *t = &sm->tr->task[f.task];

	switch (f.kind) {
	case F_WEIGHTS:
		weights_done(sm, f.task, f.server);
		break;
	case F_IN:
		ev_push(sm, sm->now + t->rtrips *
		    (sm->tr->cli[t->client].node.rtt +
		    sm->tr->sv[f.server].node.rtt), EV_SERVER, f.task, f.req);
		break;
	case F_OUT:
		request_done(sm, f.task, f.req);
		break;
	}
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Runs the whole trace under one policy. */
static void
simulate(struct sim *sm, const struct trace *tr, enum policy p,
    const int *assign, uint64_t rseed, int oneshot)
{
	struct event e;
	struct stask *k;
	struct flow f;
	struct job j;
	double tflow, total = 0;
	int i, m, v;

	memset(sm, 0, sizeof *sm);
	sm->tr = tr;
	sm->policy = p;
	sm->assign = assign;
	sm->oneshot = oneshot;
	sm->open = open_loop;
	sm->backlog_known = p == P_GLEAMQ;
	sm->rnd = rseed;
	sm->tk = calloc((size_t)tr->ntask, sizeof *sm->tk);
	sm->pending = calloc((size_t)tr->ntask + 1, sizeof *sm->pending);
	for (i = 0; i < tr->ntask; i++)
		total += tr->task[i].requests;
	sm->st.lats = calloc((size_t)total + 1, sizeof *sm->st.lats);
	if (sm->tk == NULL || sm->pending == NULL || sm->st.lats == NULL)
		die("out of memory");
	sm->st.first = HUGE_VAL;
	for (v = 0; v < tr->nsrv; v++) {
		for (m = 0; m < tr->sv[v].nmodels; m++)
			sm->sv[v].mstate[tr->sv[v].models[m]] = M_READY;
		sm->sv[v].bgx = tr->seed * 7919 + (uint64_t)v;
	}
	for (i = 0; i < tr->ntask; i++) {
		k = &sm->tk[i];
		k->server = -1;
		k->backlog = calloc((size_t)tr->task[i].requests,
		    sizeof *k->backlog);
		k->enq = calloc((size_t)tr->task[i].requests, sizeof(double));
		k->start = calloc((size_t)tr->task[i].requests, sizeof(double));
		k->instart = calloc((size_t)tr->task[i].requests,
		    sizeof(double));
		k->done_t = calloc((size_t)tr->task[i].requests,
		    sizeof(double));
		k->svc = calloc((size_t)tr->task[i].requests, sizeof(double));
		k->issue = calloc((size_t)tr->task[i].requests,
		    sizeof(double));
		if (k->backlog == NULL || k->enq == NULL || k->start == NULL ||
		    k->instart == NULL || k->done_t == NULL || k->svc == NULL ||
		    k->issue == NULL)
			die("out of memory");
		if (tr->task[i].gaps[0] < sm->st.first)
			sm->st.first = tr->task[i].gaps[0];
		if (!(p == P_GLEAM && sm->oneshot))
			ev_push(sm, tr->task[i].gaps[0], EV_TASK, i, 0);
		ev_push(sm, tr->task[i].gaps[0], EV_REQ, i, 0);
	}
	for (v = 0; v < tr->nsrv; v++)
		if (tr->sv[v].bg > 0)
			ev_push(sm, expo(&sm->sv[v].bgx, tr->bg_svc /
			    (tr->sv[v].bg * tr->sv[v].gpus)), EV_BG, v, 0);
	if (p == P_GLEAM && sm->oneshot)
		plan_all(sm);

	while (sm->tasks_done < tr->ntask) {
		if (sm->dirty) {
			flows_advance(sm);
			flows_share(sm);
		}
		tflow = HUGE_VAL;
		for (i = 0; i < sm->nfl; i++)
			if (sm->fl[i].rate > 0 &&
			    sm->flow_t + sm->fl[i].left / sm->fl[i].rate < tflow)
				tflow = sm->flow_t + sm->fl[i].left /
				    sm->fl[i].rate;
		if (sm->nev == 0 && tflow == HUGE_VAL)
			die("stalled with %d of %d tasks done (a task fits "
			    "nowhere?)", sm->tasks_done, tr->ntask);
		if (sm->nev > 0 && sm->ev[0].t <= tflow) {
			e = ev_pop(sm);
			sm->now = e.t;
		} else {
			sm->now = tflow;
			flows_advance(sm);
			for (i = 0; i < sm->nfl; i++) {
				if (sm->fl[i].left > 1e-6 * 8 &&
				    sm->fl[i].left > sm->fl[i].rate * 1e-12)
					continue;
				f = sm->fl[i];
				sm->fl[i--] = sm->fl[--sm->nfl];
				sm->dirty = 1;
				flow_finish(sm, f);
			}
			continue;
		}
		switch (e.type) {
		case EV_TASK:
			task_arrive(sm, e.a);
			break;
		case EV_REQ:
			app_next(sm, e.a);
			break;
		case EV_SERVER:
			v = sm->tk[e.a].server;
			sm->tk[e.a].enq[e.b] = sm->now;
			j.task = e.a;
			j.req = e.b;
			j.svc = tr->task[e.a].gpu_time * tr->task[e.a].factor *
			    tr->task[e.a].svc[e.b] / (tr->sv[v].speed *
			    tr->task[e.a].speedf[v]);
			server_enqueue(sm, v, j);
			break;
		case EV_GPU:
			gpu_done(sm, e.a, e.b);
			break;
		case EV_BG:
			background(sm, e.a);
			break;
		}
	}
	qsort(sm->st.lats, (size_t)sm->st.nlats, sizeof *sm->st.lats,
	    dbl_cmp);
	/* Closed loop: the sessions' span, the same for every policy. */
	sm->st.span = sm->st.last - sm->st.first;
	if (!sm->open) {
		sm->st.span = 0;
		for (i = 0; i < tr->ntask; i++)
			if (tr->task[i].end - sm->st.first > sm->st.span)
				sm->st.span = tr->task[i].end - sm->st.first;
	}
}

/* -v: what each task got (weights after -1: they never came). */
static void
task_report(const struct sim *sm, const char *policy)
{
	const struct trace *tr = sm->tr;
	const struct ttask *t;
	const struct stask *k;
	double q, w, l;
	int i, j, n;

	printf("  %s, per task: server, weights after s, answered/requests, "
	    "mean queue, wait, latency ms\n", policy);
	for (i = 0; i < tr->ntask; i++) {
		t = &tr->task[i];
		k = &sm->tk[i];
		for (q = w = l = 0, n = 0, j = 0; j < k->issued; j++) {
			if (k->done_t[j] <= 0)
				continue;
			q += k->start[j] - k->enq[j];
			w += k->instart[j] - k->issue[j];
			l += k->done_t[j] - k->issue[j];
			n++;
		}
		printf("  %-12s %-7s %-10s %7.1f %5d/%-5d %8.1f %8.1f %8.1f\n",
		    t->name, tr->cli[t->client].name, k->server >= 0 ?
		    tr->sv[k->server].name : "-", k->state >= TS_READY ?
		    k->ready - k->placed : -1,
		    k->done, t->requests, n ? q / n * 1e3 : 0,
		    n ? w / n * 1e3 : 0, n ? l / n * 1e3 : 0);
	}
}

static void
sim_free(struct sim *sm)
{
	int i, v;

	for (i = 0; i < sm->tr->ntask; i++) {
		free(sm->tk[i].backlog);
		free(sm->tk[i].enq);
		free(sm->tk[i].start);
		free(sm->tk[i].instart);
		free(sm->tk[i].done_t);
		free(sm->tk[i].svc);
		free(sm->tk[i].issue);
	}
	for (v = 0; v < sm->tr->nsrv; v++)
		free(sm->sv[v].q);
	free(sm->tk);
	free(sm->pending);
	free(sm->ev);
	free(sm->fl);
	free(sm->st.lats);
}

/* ---- figures ------------------------------------------------------- */

struct result {
	double		 throughput;	/* requests per second */
	double		 makespan;
	double		 lat, p50, p95, p99;	/* seconds */
	double		 queue, wwait, svc, net;
	double		 weights_gb;
	int		 loads, done;
};

static void
result_of(const struct sim *sm, struct result *r)
{
	const struct stats *st = &sm->st;
	int n = st->done;

	memset(r, 0, sizeof *r);
	r->done = n;
	r->makespan = st->last - st->first;
	r->throughput = n / st->span;
	r->lat = st->lat / n;
	r->p50 = st->lats[(int)(0.50 * (n - 1))];
	r->p95 = st->lats[(int)(0.95 * (n - 1))];
	r->p99 = st->lats[(int)(0.99 * (n - 1))];
	r->queue = st->queue / n;
	r->wwait = st->wwait / n;
	r->svc = st->svc / n;
	r->net = st->net / n;
	r->weights_gb = st->weights_bytes / 1e9;
	r->loads = st->loads;
}

static void
print_row(const char *name, const struct result *r)
{
	printf("%-15s %8.1f %8.2f %9.1f %8.1f %10.1f %9.1f %9.1f %8.1f "
	    "%7.1f %5d %6.0f\n", name, r->makespan, r->throughput,
	    r->lat * 1e3, r->p50 * 1e3, r->p95 * 1e3, r->queue * 1e3,
	    r->wwait * 1e3, r->svc * 1e3, r->net * 1e3, r->loads,
	    r->weights_gb);
}

static void
print_head(void)
{
	printf("%-15s %8s %8s %9s %8s %10s %9s %9s %8s %7s %5s %6s\n",
	    "POLICY", "SPAN s", "REQ/s", "MEAN ms", "P50 ms", "P95 ms",
	    "QUEUE ms", "WAIT ms", "GPU ms", "NET ms", "LOADS", "WTS GB");
}

static void
write_result(struct yw *w, const char *name, const struct result *r)
{
	yw_map(w);
	yw_kstr(w, "policy", name);
	yw_kint(w, "requests", r->done);
	yw_kdbl(w, "makespan_s", r->makespan, 3);
	yw_kdbl(w, "throughput_per_s", r->throughput, 4);
	yw_kdbl(w, "latency_mean_ms", r->lat * 1e3, 3);
	yw_kdbl(w, "latency_p50_ms", r->p50 * 1e3, 3);
	yw_kdbl(w, "latency_p95_ms", r->p95 * 1e3, 3);
	yw_kdbl(w, "latency_p99_ms", r->p99 * 1e3, 3);
	yw_kdbl(w, "queue_mean_ms", r->queue * 1e3, 3);
	yw_kdbl(w, "weights_wait_mean_ms", r->wwait * 1e3, 3);
	yw_kdbl(w, "gpu_mean_ms", r->svc * 1e3, 3);
	yw_kdbl(w, "network_mean_ms", r->net * 1e3, 3);
	yw_kint(w, "weight_loads", r->loads);
	yw_kdbl(w, "weights_gb", r->weights_gb, 3);
	yw_end(w);
}

/*
 * An upper bound on the requests any placement gets answered (closed
 * loop): each task alone on the server where it gets most, no other task
 * sharing a GPU or a link with it, its weights there from the start if
 * some server holds them at the start of the hour, else no sooner than
 * the earliest upload of them by any task of that model could end (alone,
 * at its path's full rate to the server it fits best).  Contention, memory and the servers' own
 * background are all left out, so no policy can beat it.
 */
static double
upload_alone(const struct trace *tr, int task)
{
	const struct ttask *t = &tr->task[task];
	double best = HUGE_VAL, secs;
	int v;

	for (v = 0; v < tr->nsrv; v++) {
		if (tr->sv[v].memory < t->memory + tr->mod[t->model].size)
			continue;
		secs = (double)tr->mod[t->model].size * 8 /
		    path_cap(tr, &tr->cli[t->client].node, &tr->sv[v].node);
		if (secs < best)
			best = secs;
	}
	return best;
}

static double
answered_bound(const struct trace *tr)
{
	static struct trace one;
	struct sim sm;
	const struct ttask *t;
	double total = 0, wait, ready;
	int a[1], i, j, m, v, w, best, cached;

	for (i = 0; i < tr->ntask; i++) {
		t = &tr->task[i];
		wait = 0;
		if (t->model >= 0) {
			for (cached = 0, v = 0; v < tr->nsrv; v++)
				for (m = 0; m < tr->sv[v].nmodels; m++)
					cached |= tr->sv[v].models[m] ==
					    t->model;
			ready = HUGE_VAL;
			for (j = 0; !cached && j < tr->ntask; j++)
				if (tr->task[j].model == t->model &&
				    tr->task[j].gaps[0] + upload_alone(tr, j) <
				    ready)
					ready = tr->task[j].gaps[0] +
					    upload_alone(tr, j);
			if (!cached)
				wait = fmax(0, ready - t->gaps[0]);
		}
		for (best = 0, v = 0; v < tr->nsrv; v++) {
			one = *tr;
			one.ntask = 1;
			one.task = (struct ttask *)t;
			for (w = 0; w < tr->nsrv; w++) {
				one.sv[w].nmodels = 0;
				one.sv[w].bg = 0;
				one.sv[w].memory = (uint64_t)1 << 50;
			}
			/* The weights take `wait` to cross this path. */
			if (t->model >= 0 && wait <= 0) {
				one.sv[v].models[0] = t->model;
				one.sv[v].nmodels = 1;
			} else if (t->model >= 0)
				one.mod[t->model].size = (uint64_t)(wait *
				    path_cap(tr, &tr->cli[t->client].node,
				    &tr->sv[v].node) / 8);
			a[0] = v;
			simulate(&sm, &one, P_FIXED, a, 42, 0);
			if (sm.tk[0].done > best)
				best = sm.tk[0].done;
			sim_free(&sm);
		}
		total += best;
	}
	return total;
}

/* ---- small instances and their optimum ----------------------------- */

/*
 * An instance from the trace's universe: nsrv of its servers and ntask
 * of its tasks, all starting at once, their rates scaled so that they
 * ask for `load` of the servers' declared capacity, each cut to at most
 * `secs` seconds of requests.  Truthful: no calibration or probe error,
 * and the scheduler is told each task's burstiness.
 */
static void
instance(const struct trace *big, struct trace *tr, int nsrv, int ntask,
    double load, double secs, uint64_t seed, int truthful)
{
	uint64_t x = seed;
	int pick[MAXSRV], i, j, v, c, k, ok;
	double cap = 0, dem = 0, scale;
	struct ttask *t;

	*tr = *big;
	tr->seed = seed;
	tr->scale = 1;
	if (truthful) {
		tr->n_gpu = tr->n_speed = tr->n_probe = 0;
		tr->truthful = 1;
	}
	tr->nsrv = nsrv;
	for (i = 0; i < nsrv; i++) {
		do {
			v = (int)(mix(&x) % (uint64_t)big->nsrv);
			for (j = 0; j < i && pick[j] != v; j++)
				;
		} while (j < i);
		pick[i] = v;
		tr->sv[i] = big->sv[v];
		cap += tr->sv[i].speed * tr->sv[i].gpus *
		    (1 - tr->sv[i].bg);
	}
	tr->ntask = ntask;
	if ((tr->task = calloc((size_t)ntask, sizeof *tr->task)) == NULL)
		die("out of memory");
	for (i = 0; i < ntask; i++) {
		/* A task that one of these servers can hold alone. */
		for (k = 0; k < 1000; k++) {
			t = &big->task[mix(&x) % (uint64_t)big->ntask];
			for (ok = 0, v = 0; v < nsrv && !ok; v++)
				ok = tr->sv[v].memory >= t->memory +
				    (t->model >= 0 ? big->mod[t->model].size :
				    0);
			if (ok)
				break;
		}
		tr->task[i] = *t;
		tr->task[i].gaps = tr->task[i].svc = NULL;
		tr->task[i].start = 0;
		dem += t->rate * t->gpu_time;
	}
	scale = load * cap / dem;
	for (i = 0; i < ntask; i++) {
		t = &tr->task[i];
		t->rate *= scale;
		c = (int)(t->rate * secs);
		if (t->requests > c)
			t->requests = c > 20 ? c : 20;
	}
	draw(tr);
}

static void
instance_free(struct trace *tr)
{
	int i;

	for (i = 0; i < tr->ntask; i++) {
		free(tr->task[i].gaps);
		free(tr->task[i].svc);
	}
	free(tr->task);
}

struct optrun {
	double		 opt, gleam, ll;	/* mean latency, seconds */
	/*
	 * The least mean latency of the assignments that answer at least
	 * as many requests a second as gleam-sched's plan: the optimum
	 * without buying latency by leaving requests unanswered.
	 */
	double		 opt_eq;
	double		 opt_tp, gleam_tp, ll_tp;	/* requests per second */
	int		 opt_at[INST_TASKS], gleam_at[INST_TASKS];
	double		 opt_tl[INST_TASKS], gleam_tl[INST_TASKS];
	/* When each task's weights were there, s (-1: never; 0: cached). */
	double		 opt_ld[INST_TASKS], gleam_ld[INST_TASKS];
};

/* A task's mean latency in a finished simulation, seconds. */
static double
task_lat(const struct sim *sm, int task)
{
	const struct stask *k = &sm->tk[task];
	double sum = 0;
	int j, n = 0;

	for (j = 0; j < k->issued; j++) {
		if (k->done_t[j] <= 0)
			continue;
		sum += k->done_t[j] - k->issue[j];
		n++;
	}
	return n ? sum / n : 0;
}

/*
 * What gleam-sched's predictor says of an assignment at time 0: each
 * task's latency into lat, the plan's cost (request-seconds) returned.
 */
static double
predicted(const struct trace *tr, const int *assign, double *lat,
    double *load)
{
	struct sim sm;
	struct sched s;
	struct predictor p;
	struct pred pr;
	int all[INST_TASKS], i, v, m;
	double cost;

	memset(&sm, 0, sizeof sm);
	sm.tr = tr;
	sm.open = open_loop;
	if ((sm.tk = calloc((size_t)tr->ntask, sizeof *sm.tk)) == NULL)
		die("out of memory");
	for (i = 0; i < tr->ntask; i++) {
		sm.tk[i].server = -1;
		all[i] = i;
	}
	for (v = 0; v < tr->nsrv; v++)
		for (m = 0; m < tr->sv[v].nmodels; m++)
			sm.sv[v].mstate[tr->sv[v].models[m]] = M_READY;
	view(&sm, &s, all, tr->ntask);
	for (i = 0; i < s.ntasks; i++)
		s.tasks[i].server = assign[atoi(s.tasks[i].name)];
	if (predict_init(&p, &s) == -1)
		die("out of memory");
	cost = predict_total(&p);
	for (i = 0; i < s.ntasks; i++) {
		predict_task(&p, i, &pr);
		lat[atoi(s.tasks[i].name)] = pr.latency;
		load[atoi(s.tasks[i].name)] = pr.load;
	}
	predict_free(&p);
	sched_free(&s);
	free(sm.tk);
	return cost;
}

/* When the task's weights were there, from its placing; -1: never. */
static double
task_ready_at(const struct sim *sm, int task)
{
	const struct stask *k = &sm->tk[task];

	return k->state >= TS_READY ? k->ready - k->placed : -1;
}

/* The instance, its two assignments and what was predicted of them. */
static void
instance_show(const struct trace *tr, const struct optrun *o)
{
	const struct ttask *t;
	double po[INST_TASKS], pg[INST_TASKS], lo[INST_TASKS], lg[INST_TASKS];
	double co, cg;
	int i, v;

	co = predicted(tr, o->opt_at, po, lo);
	cg = predicted(tr, o->gleam_at, pg, lg);
	for (v = 0; v < tr->nsrv; v++)
		printf("     server %d %s speed %g memory %.1fg bg %.2f\n", v,
		    tr->sv[v].name, tr->sv[v].speed, tr->sv[v].memory / 1073741824.0,
		    tr->sv[v].bg);
	printf("     %-12s %-7s %-16s %5s %7s %8s %3s  %s  %s\n", "task",
	    "client", "model", "reqs", "rate", "gpu ms", "win",
	    "OPT srv pred/sim ms", "GLEAM srv pred/sim ms");
	for (i = 0; i < tr->ntask; i++) {
		t = &tr->task[i];
		printf("     %-12s %-7s %-16s %5d %7.3f %8.1f %3d  %d %9.1f %9.1f"
		    "  %d %9.1f %9.1f\n", t->name, tr->cli[t->client].name,
		    t->model >= 0 ? tr->mod[t->model].id : "-", t->requests,
		    t->rate, t->gpu_time * 1e3, t->window, o->opt_at[i],
		    po[i] * 1e3, o->opt_tl[i] * 1e3, o->gleam_at[i],
		    pg[i] * 1e3, o->gleam_tl[i] * 1e3);
	}
	printf("     weights there after, s: OPT pred/sim, GLEAM pred/sim:");
	for (i = 0; i < tr->ntask; i++)
		printf(" %.0f/%.0f,%.0f/%.0f", lo[i], o->opt_ld[i], lg[i],
		    o->gleam_ld[i]);
	printf("\n     predicted cost: optimum's %.1f, gleam's %.1f\n", co, cg);
}

/* Would the assignment fit in the servers' memory, all tasks at once? */
static int
assign_fits(const struct trace *tr, const int *assign)
{
	uint64_t mem[MAXSRV] = { 0 };
	int i, j, v, dup;

	for (i = 0; i < tr->ntask; i++) {
		v = assign[i];
		mem[v] += tr->task[i].memory;
		for (dup = 0, j = 0; j < i; j++)
			if (assign[j] == v && tr->task[j].model ==
			    tr->task[i].model)
				dup = 1;
		if (!dup && tr->task[i].model >= 0)
			mem[v] += tr->mod[tr->task[i].model].size;
		if (mem[v] > tr->sv[v].memory)
			return 0;
	}
	return 1;
}

/*
 * Simulates every assignment that fits: the least mean latency and the
 * most throughput are the optima.  Then gleam-sched plans the instance
 * in one shot, and least-loaded places it task by task.
 */
static void
optimum(const struct trace *tr, struct optrun *o)
{
	struct sim sm;
	struct result r;
	int assign[INST_TASKS], i, n = tr->ntask;
	long combos = 1, a, rest, nrun = 0;
	double lat[INST_COMBOS], tp[INST_COMBOS];

	memset(o, 0, sizeof *o);
	for (i = 0; i < n; i++)
		combos *= tr->nsrv;
	o->opt = HUGE_VAL;
	for (a = 0; a < combos; a++) {
		for (rest = a, i = 0; i < n; i++, rest /= tr->nsrv)
			assign[i] = (int)(rest % tr->nsrv);
		if (!assign_fits(tr, assign))
			continue;
		simulate(&sm, tr, P_FIXED, assign, 1, 0);
		result_of(&sm, &r);
		if (nrun < INST_COMBOS) {
			lat[nrun] = r.lat;
			tp[nrun++] = r.throughput;
		}
		if (r.lat < o->opt) {
			o->opt = r.lat;
			memcpy(o->opt_at, assign, sizeof assign);
			for (i = 0; i < n; i++) {
				o->opt_tl[i] = task_lat(&sm, i);
				o->opt_ld[i] = task_ready_at(&sm, i);
			}
		}
		sim_free(&sm);
		if (r.throughput > o->opt_tp)
			o->opt_tp = r.throughput;
	}
	simulate(&sm, tr, P_GLEAM, NULL, 42, 1);
	result_of(&sm, &r);
	for (i = 0; i < n; i++) {
		o->gleam_at[i] = sm.tk[i].server;
		o->gleam_tl[i] = task_lat(&sm, i);
		o->gleam_ld[i] = task_ready_at(&sm, i);
	}
	sim_free(&sm);
	o->gleam = r.lat;
	o->gleam_tp = r.throughput;
	o->opt_eq = HUGE_VAL;
	for (a = 0; a < nrun; a++)
		if (tp[a] >= o->gleam_tp * (1 - 1e-9) && lat[a] < o->opt_eq)
			o->opt_eq = lat[a];
	simulate(&sm, tr, P_LEAST, NULL, 42, 0);
	result_of(&sm, &r);
	sim_free(&sm);
	o->ll = r.lat;
	o->ll_tp = r.throughput;
}

/* Gaps to the optimum, in percent: mean, worst, and how many within 5. */
struct gaps {
	double		 sum, worst;
	int		 within, n;
};

static void
gap_add(struct gaps *g, double gap)
{
	g->sum += gap;
	if (gap > g->worst)
		g->worst = gap;
	if (gap <= 5)
		g->within++;
	g->n++;
}

static void
gap_write(struct yw *w, const char *key, const struct gaps *g)
{
	yw_key(w, key);
	yw_fmap(w);
	yw_kdbl(w, "mean_percent", g->n ? g->sum / g->n : 0, 2);
	yw_kdbl(w, "worst_percent", g->worst, 2);
	yw_kint(w, "within_5_percent", g->within);
	yw_end(w);
}

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr, "usage: sched-sim [-OTv] [-l load[,load...]] "
	    "[-n instances] [-o figures.yaml] [-S seed] trace.yaml\n");
	exit(status);
}

#define MAXLOADS	16
#define MAXINST		1000

int
main(int argc, char *argv[])
{
	static struct trace tr, small;
	static struct optrun o[MAXINST];
	struct result res[MAXLOADS][NPOLICY];
	double bound[MAXLOADS];
	struct gaps glat = { 0 }, gtp = { 0 }, llat = { 0 }, ltp = { 0 };
	struct gaps geq = { 0 };
	struct sim sm;
	struct yw *w;
	const char *figures = NULL, *why, *text;
	char *loadarg = NULL, *tok, *save = NULL;
	double loads[MAXLOADS], lg, tg;
	long long ll;
	size_t len;
	int ch, p, i, k, li, nloads = 0, ninst = 20, truthful = 0, seeded = 0;
	uint64_t seed = 0;
	FILE *f;

	while ((ch = getopt(argc, argv, "hl:n:Oo:S:Tv")) != -1) {
		switch (ch) {
		case 'O':
			open_loop = 1;
			break;
		case 'l':
			loadarg = optarg;
			break;
		case 'n':
			if (parse_int(optarg, 0, MAXINST, &ll, &why) == -1)
				die("-n: %s: %s", optarg, why);
			ninst = (int)ll;
			break;
		case 'o':
			figures = optarg;
			break;
		case 'S':
			if (parse_int(optarg, 0, INT64_MAX, &ll, &why) == -1)
				die("-S: %s: %s", optarg, why);
			seed = (uint64_t)ll;
			seeded = 1;
			break;
		case 'T':
			truthful = 1;
			break;
		case 'h':
			usage(0);
		case 'v':
			verbose++;
			break;
		default:
			usage(2);
		}
	}
	if (argc - optind != 1)
		usage(2);
	if (loadarg == NULL)
		loads[nloads++] = 1;
	for (tok = loadarg ? strtok_r(loadarg, ",", &save) : NULL;
	    tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (nloads == MAXLOADS ||
		    parse_double(tok, 0.01, 100, &loads[nloads], &why) == -1)
			die("-l: %s: %s", tok, nloads == MAXLOADS ? "too many" :
			    why);
		nloads++;
	}
	read_trace(&tr, argv[optind]);
	/* Another draw of the same trace: noise, gaps, service times. */
	if (seeded)
		tr.seed = seed;
	printf("trace %s: %d servers, %d clients, %d tasks; %s\n",
	    argv[optind], tr.nsrv, tr.ncli, tr.ntask, open_loop ?
	    "open loop: every request sent at its time" :
	    "closed loop: windows of requests in flight, sessions of fixed "
	    "length");

	for (li = 0; li < nloads; li++) {
		tr.scale = loads[li];
		draw(&tr);
		printf("\narrivals %gx as fast as the trace's\n\n", loads[li]);
		print_head();
		for (p = 0; p < P_FIXED; p++) {
			simulate(&sm, &tr, (enum policy)p, NULL, 42, 0);
			result_of(&sm, &res[li][p]);
			if (verbose)
				task_report(&sm, policy_name[p]);
			sim_free(&sm);
			print_row(policy_name[p], &res[li][p]);
			fflush(stdout);
		}
		for (p = P_GLEAM; p <= P_GLEAMQ; p++)
			printf("%s against least-loaded: throughput %.2fx, mean "
			    "queueing delay %.2fx lower, mean latency %.2fx "
			    "lower\n", policy_name[p], res[li][p].throughput /
			    res[li][P_LEAST].throughput,
			    res[li][P_LEAST].queue / res[li][p].queue,
			    res[li][P_LEAST].lat / res[li][p].lat);
		if (!open_loop) {
			/* The closed loop's span is every policy's. */
			bound[li] = answered_bound(&tr) /
			    (res[li][P_LEAST].done / res[li][P_LEAST].throughput);
			printf("no placement can answer more than %.2f requests/s "
			    "(%.2fx least-loaded): each task alone on its best "
			    "server, its weights there as soon as an upload "
			    "alone could bring them\n", bound[li],
			    bound[li] / res[li][P_LEAST].throughput);
		}
	}

	if (ninst > 0) {
		printf("\nexact optimum on %d instances: %d servers and %d tasks "
		    "of the trace, all at once, asking for %.0f%% of the "
		    "servers' capacity, at most %.0f s each%s\n\n", ninst,
		    INST_SERVERS, INST_TASKS, INST_LOAD * 100, INST_SECS,
		    truthful ? "; the scheduler told the truth" : "");
		printf("%4s %11s %11s %7s   %11s %11s %7s   %11s %11s\n",
		    "INST", "OPT ms", "GLEAM ms", "GAP %", "OPT req/s",
		    "GLEAM req/s", "GAP %", "LL ms", "LL req/s");
	}
	for (i = 0, k = 0; i < ninst; k++) {
		if (k >= 100 * ninst)
			die("%d instances drawn, %d fit", k, i);
		instance(&tr, &small, INST_SERVERS, INST_TASKS, INST_LOAD,
		    INST_SECS, tr.seed * 7919 + 1000 + (uint64_t)k, truthful);
		optimum(&small, &o[i]);
		if (o[i].opt == HUGE_VAL) {
			/* The tasks fit on these servers in no way: another. */
			instance_free(&small);
			continue;
		}
		lg = (o[i].gleam / o[i].opt - 1) * 100;
		if (verbose && lg > 5)
			instance_show(&small, &o[i]);
		instance_free(&small);
		lg = (o[i].gleam / o[i].opt - 1) * 100;
		tg = (1 - o[i].gleam_tp / o[i].opt_tp) * 100;
		gap_add(&glat, lg);
		gap_add(&gtp, tg);
		/* None answers as many: no assignment does better. */
		gap_add(&geq, o[i].opt_eq == HUGE_VAL ? 0 :
		    (o[i].gleam / o[i].opt_eq - 1) * 100);
		gap_add(&llat, (o[i].ll / o[i].opt - 1) * 100);
		gap_add(&ltp, (1 - o[i].ll_tp / o[i].opt_tp) * 100);
		printf("%4d %11.1f %11.1f %7.2f   %11.3f %11.3f %7.2f   %11.1f "
		    "%11.3f\n", i, o[i].opt * 1e3, o[i].gleam * 1e3, lg,
		    o[i].opt_tp, o[i].gleam_tp, tg, o[i].ll * 1e3, o[i].ll_tp);
		fflush(stdout);
		i++;
	}
	if (ninst > 0) {
		printf("\ngleam-sched against the optimum: mean latency %.2f%% "
		    "above (worst %.2f%%, within 5%% on %d of %d); throughput "
		    "%.2f%% below (worst %.2f%%, within 5%% on %d of %d)\n",
		    glat.sum / ninst, glat.worst, glat.within, ninst,
		    gtp.sum / ninst, gtp.worst, gtp.within, ninst);
		printf("gleam-sched against the least mean latency of the "
		    "assignments that answer as many requests a second: %.2f%% "
		    "above (worst %.2f%%, within 5%% on %d of %d)\n",
		    geq.sum / ninst, geq.worst, geq.within, ninst);
		printf("least-loaded against the optimum: mean latency %.2f%% "
		    "above, throughput %.2f%% below\n", llat.sum / ninst,
		    ltp.sum / ninst);
	}

	if (figures == NULL)
		return 0;
	if ((w = yw_new()) == NULL)
		die("out of memory");
	yw_map(w);
	yw_kstr(w, "trace", argv[optind]);
	yw_kint(w, "seed", (long long)tr.seed);
	yw_kstr(w, "model", open_loop ? "open" : "closed");
	yw_key(w, "loads");
	yw_seq(w);
	for (li = 0; li < nloads; li++) {
		yw_map(w);
		yw_kdbl(w, "load", loads[li], 2);
		yw_key(w, "policies");
		yw_seq(w);
		for (p = 0; p < P_FIXED; p++)
			write_result(w, policy_name[p], &res[li][p]);
		yw_end(w);
		yw_kdbl(w, "throughput_vs_least_loaded",
		    res[li][P_GLEAM].throughput / res[li][P_LEAST].throughput,
		    3);
		yw_kdbl(w, "queue_reduction_vs_least_loaded",
		    res[li][P_LEAST].queue / res[li][P_GLEAM].queue, 3);
		yw_kdbl(w, "latency_reduction_vs_least_loaded",
		    res[li][P_LEAST].lat / res[li][P_GLEAM].lat, 3);
		if (!open_loop)
			yw_kdbl(w, "throughput_bound_per_s", bound[li], 4);
		yw_end(w);
	}
	yw_end(w);
	yw_key(w, "optimum");
	yw_map(w);
	yw_kint(w, "instances", ninst);
	yw_kint(w, "servers", INST_SERVERS);
	yw_kint(w, "tasks", INST_TASKS);
	yw_kdbl(w, "load", INST_LOAD, 2);
	yw_kbool(w, "truthful", truthful);
	yw_key(w, "runs");
	if (ninst == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < ninst; i++) {
		yw_fmap(w);
		yw_kdbl(w, "optimum_ms", o[i].opt * 1e3, 3);
		yw_kdbl(w, "optimum_as_many_answered_ms", o[i].opt_eq ==
		    HUGE_VAL ? o[i].gleam * 1e3 : o[i].opt_eq * 1e3, 3);
		yw_kdbl(w, "gleam_ms", o[i].gleam * 1e3, 3);
		yw_kdbl(w, "least_loaded_ms", o[i].ll * 1e3, 3);
		yw_kdbl(w, "optimum_per_s", o[i].opt_tp, 4);
		yw_kdbl(w, "gleam_per_s", o[i].gleam_tp, 4);
		yw_kdbl(w, "least_loaded_per_s", o[i].ll_tp, 4);
		yw_end(w);
	}
	yw_end(w);
	gap_write(w, "gleam_latency_gap", &glat);
	gap_write(w, "gleam_throughput_gap", &gtp);
	gap_write(w, "gleam_latency_gap_as_many_answered", &geq);
	gap_write(w, "least_loaded_latency_gap", &llat);
	gap_write(w, "least_loaded_throughput_gap", &ltp);
	yw_end(w);
	yw_end(w);
	if ((text = yw_finish(w, &len)) == NULL ||
	    (f = fopen(figures, "w")) == NULL ||
	    fwrite(text, 1, len, f) != len || fclose(f) == EOF)
		die("%s: cannot write", figures);
	yw_free(w);
	return 0;
}
