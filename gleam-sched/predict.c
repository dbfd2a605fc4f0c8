/* The latency predictor (gleam-sched(1), PREDICTOR). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predict.h"

static double
dmax(double a, double b)
{
	return a > b ? a : b;
}

static double
dmin(double a, double b)
{
	return a < b ? a : b;
}

/*
 * What a job of t0 seconds at a link's or GPU's full rate takes when the
 * resource is rho busy: t0/(1-rho), the mean of a processor-sharing queue.
 * Beyond the knee the steady-state formula means nothing (it diverges at 1)
 * and a finite stream of `horizon` seconds sees its backlog grow by
 * rho-1 seconds per second instead: on average horizon/2 times that.
 */
static double
congest(double t0, double rho, double horizon)
{
	if (rho < 0)
		rho = 0;
	if (rho <= PREDICT_RHO_KNEE)
		return t0 / (1 - rho);
	return t0 / (1 - PREDICT_RHO_KNEE) +
	    (rho - PREDICT_RHO_KNEE) * horizon / 2;
}

/*
 * The mean wait for one of the server's k GPUs in steady state:
 * Sakasegawa's approximation for a G/G/k queue, rho^(sqrt(2(k+1))-1) /
 * (k(1-rho)) times (ca^2+cs^2)/2 times the mean service time, which is
 * Kingman's formula for k = 1.  Arrivals mix the streams in a (their
 * rates, GPU work, its square, burstiness), service times their GPU
 * times.  Past the knee, the backlog of a stream `horizon` seconds long
 * grows as in congest().
 */
static double
gpu_wait(const struct pserver *a, const struct sched_server *sv,
    double horizon)
{
	double k = sv->ngpus > 0 ? sv->ngpus : 1;
	double rho, r, es, cs2, ca2, w;

	if (a->lam <= 0 || a->work <= 0)
		return 0;
	rho = sv->background + a->work / k;
	es = a->work / a->lam;
	cs2 = dmax(0, (a->work2 / a->lam) / (es * es) - 1);
	ca2 = a->burst / a->lam;
	r = rho < PREDICT_RHO_KNEE ? rho : PREDICT_RHO_KNEE;
	/* sqrt(2(k+1)) - 1 is 1 for one GPU: no pow() on the hot path. */
	w = (k == 1 ? r : pow(r, sqrt(2 * (k + 1)) - 1)) / (k * (1 - r)) *
	    (ca2 + cs2) / 2 * es;
	if (rho > PREDICT_RHO_KNEE)
		w += (rho - PREDICT_RHO_KNEE) * horizon / 2;
	return w;
}

/* One task's part in its server's queue (server_solve). */
struct sload {
	int		 task;
	double		 rate, svc, burst;
	double		 from, to;	/* when it sends, seconds from now */
	double		 fixed;		/* its request's time but the wait */
	int		 window;
	int		 on;		/* sending in the stretch solved */
	double		 sent, waited, load;	/* sums over the stretches */
};

/* What a task sends per second when each request waits `wait`. */
static double
sload_rate(const struct sload *l, double wait)
{
	if (l->window > 0)
		return dmin(l->rate, l->window / (wait + l->fixed));
	return l->rate;
}

/* The sums of the tasks sending now, when every request waits `wait`. */
static void
solve_sums(const struct sload *l, int n, double wait, struct pserver *a)
{
	double x;
	int i;

	memset(a, 0, sizeof *a);
	for (i = 0; i < n; i++) {
		if (!l[i].on)
			continue;
		x = sload_rate(&l[i], wait);
		a->lam += x;
		a->work += x * l[i].svc;
		a->work2 += x * l[i].svc * l[i].svc;
		a->burst += x * l[i].burst;
		a->ntasks++;
	}
}

/*
 * The wait for a GPU while the tasks marked on send: a fixed point.
 * Tasks without a window send at their rate whatever happens; a task
 * with one is held back by its own answers, so a busy GPU slows it down
 * instead of queueing without end.  The queueing formula at the rates
 * that a wait W allows falls as W rises, so W = formula(W) has one
 * solution, which bisection finds.
 */
static double
solve_wait(const struct sload *l, int n, const struct sched_server *sv,
    double horizon, double guess)
{
	struct pserver a;
	double lo = 0, hi = 1e-3, glo, ghi, g, mid;
	int i, it, side = 0;

	/* Without a window among them the rates do not depend on W. */
	for (i = 0; i < n && !(l[i].on && l[i].window > 0); i++)
		;
	solve_sums(l, n, 0, &a);
	if ((glo = gpu_wait(&a, sv, horizon)) <= 0 || i == n)
		return glo > 0 ? glo : 0;
	/* The neighbouring stretch's answer is a good first bracket. */
	if (guess > 0) {
		solve_sums(l, n, guess / 2, &a);
		if ((g = gpu_wait(&a, sv, horizon) - guess / 2) > 0) {
			lo = guess / 2;
			glo = g;
			hi = guess * 2;
		} else
			hi = guess / 2;
	}
	for (it = 0; it < 60; it++) {
		solve_sums(l, n, hi, &a);
		if ((ghi = gpu_wait(&a, sv, horizon) - hi) <= 0)
			break;
		lo = hi;
		glo = ghi;
		hi *= 4;
	}
	if (ghi > 0)
		return hi;
	/*
	 * g(W) = formula(W) - W falls from glo > 0 to ghi <= 0: regula
	 * falsi, Illinois' way (halving the end that stays), to a relative
	 * 1e-4.
	 */
	for (it = 0; it < 60 && hi - lo > 1e-4 * (1e-3 + hi); it++) {
		mid = hi - ghi * (hi - lo) / (ghi - glo);
		if (!(mid > lo && mid < hi))
			mid = (lo + hi) / 2;
		solve_sums(l, n, mid, &a);
		g = gpu_wait(&a, sv, horizon) - mid;
		if (g > 0) {
			lo = mid;
			glo = g;
			if (side == -1)
				ghi /= 2;
			side = -1;
		} else {
			hi = mid;
			ghi = g;
			if (side == 1)
				glo /= 2;
			side = 1;
		}
	}
	return hi;
}

static int
dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static double	load_time(const struct predictor *, int);
static double	request_fixed(const struct predictor *, int, double *);

/*
 * What task i's request finds ahead of it when the tasks sending have
 * few requests in flight: a task with a window has at most that many
 * at the GPU, whatever a queue of endless sources would say.  By
 * Little's law a task has rate * (wait + S) of its requests there, at
 * most its window (one fewer of i's own, the one arriving); the arrival
 * waits for all of them, on k GPUs less the background's share (mean
 * value analysis, Schweitzer's form).
 */
static double
few_wait(const struct sload *l, int n, int i, double wait,
    const struct sched_server *sv)
{
	double k = sv->ngpus > 0 ? sv->ngpus : 1, q, ahead = 0;
	int j;

	if (l[i].window == 0)
		return wait;
	for (j = 0; j < n; j++) {
		if (!l[j].on)
			continue;
		q = sload_rate(&l[j], wait) * (wait + l[j].svc);
		if (l[j].window > 0)
			q = dmin(q, l[j].window);
		if (j == i)
			q = dmax(0, dmin(q, l[j].window - 1));
		ahead += q * l[j].svc;
	}
	return ahead / (k * (1 - dmin(sv->background, PREDICT_RHO_KNEE)));
}

/*
 * The server's GPU queue for the plan's tasks on it.  They do not all
 * send at once: a task with a window sends from when its weights arrive
 * to the end of its session, one without from now to the end of its
 * horizon.  Between consecutive such instants the set of tasks sending
 * is fixed, and each stretch is solved as a steady state (solve_wait).
 * A task's wait is the mean over the stretches it sends in, weighted by
 * the requests it sends in each; its rate is what it sends over the time
 * it sends.  Cached until the plan changes, into p->x, p->wait, p->rho.
 */
static void
server_solve(const struct predictor *p, int server)
{
	const struct sched *s = p->s;
	const struct sched_server *sv = &s->servers[server];
	const struct pserver *off = &p->sv[server];
	double k = sv->ngpus > 0 ? sv->ngpus : 1;
	struct sload *l;
	struct pserver a;
	double *at, horizon, len, w, wi, x, dummy, guess = 0;
	int i, j, n, nat;

	if (p->solve[server].gen == p->gen)
		return;
	p->solve[server].gen = p->gen;
	if ((n = off->ntasks) == 0)
		return;
	l = calloc((size_t)n, sizeof *l);
	at = calloc((size_t)n * 2 + 1, sizeof *at);
	if (l == NULL || at == NULL) {
		/* No room to think: the answer at full rates. */
		for (i = off->first; i >= 0; i = p->next[i]) {
			p->x[i] = s->tasks[i].rate;
			p->wait[i] = gpu_wait(off, sv, off->requests / off->lam);
			p->rho[i] = sv->background + off->work / k;
		}
		p->solve[server].gen = 0;
		free(l);
		free(at);
		return;
	}
	horizon = off->lam > 0 ? off->requests / off->lam : 0;
	for (n = 0, nat = 0, i = off->first; i >= 0; i = p->next[i], n++) {
		const struct sched_task *t = &s->tasks[i];

		l[n].task = i;
		l[n].rate = t->rate;
		l[n].svc = t->gpu_time / sv->speed * (1 + s->headroom);
		l[n].burst = t->burst;
		l[n].window = t->window;
		l[n].to = t->requests / t->rate;
		if (t->window > 0) {
			if (p->group[i] >= 0)
				l[n].from = dmin(load_time(p, i), l[n].to);
			l[n].fixed = request_fixed(p, i, &dummy);
		}
		at[nat++] = l[n].from;
		at[nat++] = l[n].to;
	}
	qsort(at, (size_t)nat, sizeof *at, dbl_cmp);
	for (j = 0; j + 1 < nat; j++) {
		if ((len = at[j + 1] - at[j]) <= 1e-9 * (1 + at[j + 1]))
			continue;
		for (i = 0; i < n; i++)
			l[i].on = l[i].from <= at[j] && l[i].to >= at[j + 1];
		w = guess = solve_wait(l, n, sv, horizon, guess);
		solve_sums(l, n, w, &a);
		for (i = 0; i < n; i++) {
			if (!l[i].on)
				continue;
			wi = dmin(w, few_wait(l, n, i, w, sv));
			x = sload_rate(&l[i], wi) * len;
			l[i].sent += x;
			l[i].waited += x * wi;
			l[i].load += x * (sv->background + a.work / k);
		}
	}
	for (i = 0; i < n; i++) {
		j = l[i].task;
		len = l[i].to - l[i].from;
		if (l[i].sent > 0) {
			p->x[j] = len > 0 ? l[i].sent / len : l[i].rate;
			p->wait[j] = l[i].waited / l[i].sent;
			p->rho[j] = l[i].load / l[i].sent;
		} else {
			/* It never sends: what one request would meet. */
			for (j = 0; j < n; j++)
				l[j].on = j == i;
			w = solve_wait(l, n, sv, horizon, 0);
			solve_sums(l, n, w, &a);
			j = l[i].task;
			p->x[j] = sload_rate(&l[i], w);
			p->wait[j] = w;
			p->rho[j] = sv->background + a.work / k;
		}
	}
	free(l);
	free(at);
}

/*
 * What the work queued now adds, on average, to the wait of a task's
 * requests over its horizon: q seconds per GPU that drain at 1-rho
 * seconds per second, so a request arriving at time x waits q-(1-rho)x
 * more while that is positive.
 */
static double
backlog_wait(double q, double rho, double horizon)
{
	double drain, free_ = 1 - (rho < PREDICT_RHO_KNEE ? rho :
	    PREDICT_RHO_KNEE);

	if (q <= 0)
		return 0;
	drain = q / free_;
	if (drain <= horizon)
		return q * drain / (2 * horizon);
	return q - free_ * horizon / 2;
}

static void
medium_cap(struct predictor *p, int m, const struct sched_link *l)
{
	if (m > 0)
		p->md[m - 1].cap = dmax(p->md[m - 1].cap, dmax(l->up, l->down));
}

int
predict_init(struct predictor *p, struct sched *s)
{
	struct sched_link *l;
	size_t nl;
	int *where, c, i, v;

	memset(p, 0, sizeof *p);
	p->s = s;
	p->sv = calloc((size_t)s->nservers + 1, sizeof *p->sv);
	p->cl = calloc((size_t)s->nclients + 1, sizeof *p->cl);
	p->md = calloc((size_t)s->nmedia + 1, sizeof *p->md);
	p->up = calloc((size_t)s->ntasks + 1, sizeof *p->up);
	p->group = calloc((size_t)s->ntasks + 1, sizeof *p->group);
	p->next = calloc((size_t)s->ntasks + 1, sizeof *p->next);
	p->prev = calloc((size_t)s->ntasks + 1, sizeof *p->prev);
	nl = (size_t)s->nmedia + (size_t)s->nclients + (size_t)s->nservers + 1;
	p->lfirst = calloc(nl, sizeof *p->lfirst);
	p->solve = calloc((size_t)s->nservers + 1, sizeof *p->solve);
	p->x = calloc((size_t)s->ntasks + 1, sizeof *p->x);
	p->wait = calloc((size_t)s->ntasks + 1, sizeof *p->wait);
	p->rho = calloc((size_t)s->ntasks + 1, sizeof *p->rho);
	p->gen = 1;
	where = calloc((size_t)s->ntasks + 1, sizeof *where);
	if (p->sv == NULL || p->cl == NULL || p->md == NULL || p->up == NULL ||
	    p->group == NULL || p->next == NULL || p->prev == NULL ||
	    p->lfirst == NULL || p->solve == NULL || p->x == NULL ||
	    p->wait == NULL || p->rho == NULL ||
	    where == NULL) {
		free(where);
		predict_free(p);
		return -1;
	}
	for (v = 0; v < s->nservers; v++)
		p->sv[v].first = -1;
	for (i = 0; i < (int)nl; i++)
		p->lfirst[i] = -1;
	/* A link's capacity: the best any path through it measured alone. */
	for (c = 0; c < s->nclients; c++) {
		for (v = 0; v < s->nservers; v++) {
			l = sched_link(s, c, v);
			if (!l->ok)
				continue;
			p->cl[c].cap_up = dmax(p->cl[c].cap_up, l->up);
			p->cl[c].cap_down = dmax(p->cl[c].cap_down, l->down);
			p->sv[v].cap_up = dmax(p->sv[v].cap_up, l->up);
			p->sv[v].cap_down = dmax(p->sv[v].cap_down, l->down);
			medium_cap(p, s->clients[c].medium, l);
			medium_cap(p, s->servers[v].medium, l);
		}
	}
	/*
	 * Paths measure their slowest link: a server's faster port, where
	 * the admin gives it, is what its clients' uploads share.
	 */
	for (v = 0; v < s->nservers; v++)
		if (s->servers[v].medium == 0 && s->servers[v].port > 0) {
			p->sv[v].cap_up = dmax(p->sv[v].cap_up,
			    s->servers[v].port);
			p->sv[v].cap_down = dmax(p->sv[v].cap_down,
			    s->servers[v].port);
		}
	for (i = 0; i < s->ntasks; i++) {
		where[i] = s->tasks[i].server;
		s->tasks[i].server = -1;
		p->group[i] = -1;
	}
	for (i = 0; i < s->ntasks; i++)
		if (where[i] >= 0)
			predict_add(p, i, where[i]);
	free(where);
	return 0;
}

void
predict_free(struct predictor *p)
{
	free(p->sv);
	free(p->cl);
	free(p->md);
	free(p->up);
	free(p->group);
	free(p->next);
	free(p->prev);
	free(p->lfirst);
	free(p->solve);
	free(p->x);
	free(p->wait);
	free(p->rho);
	p->solve = NULL;
	p->x = p->wait = p->rho = NULL;
	p->next = p->prev = NULL;
	p->lfirst = NULL;
	p->sv = NULL;
	p->cl = NULL;
	p->md = NULL;
	p->up = NULL;
	p->group = NULL;
}

/* Does another task on the server use the same weights? */
static int
model_shared(const struct predictor *p, int task, int server)
{
	const struct sched *s = p->s;
	int i;

	for (i = p->sv[server].first; i >= 0; i = p->next[i])
		if (i != task &&
		    strcmp(s->tasks[i].model, s->tasks[task].model) == 0)
			return 1;
	return 0;
}

uint64_t
predict_mem_need(const struct predictor *p, int task, int server)
{
	const struct sched_task *t = &p->s->tasks[task];
	uint64_t need = t->memory;

	if (t->model[0] != '\0' &&
	    !sched_resident(&p->s->servers[server], t->model) &&
	    !model_shared(p, task, server))
		need += t->model_size;
	return need;
}

int
predict_fits(const struct predictor *p, int task, int server)
{
	if (p->s->tasks[task].server == server)
		return 1;
	return p->sv[server].mem + predict_mem_need(p, task, server) <=
	    p->s->servers[server].mem_free;
}

/* Adds (sign 1) or takes away (-1) the task's sums at the server. */
static void
predict_sum(struct predictor *p, int task, int server, double sign)
{
	const struct sched_task *t = &p->s->tasks[task];
	struct pserver *a = &p->sv[server];
	struct pclient *c = &p->cl[t->client];
	double svc = t->gpu_time / p->s->servers[server].speed *
	    (1 + p->s->headroom);
	int m;

	a->lam += sign * t->rate;
	a->work += sign * t->rate * svc;
	a->work2 += sign * t->rate * svc * svc;
	a->burst += sign * t->rate * t->burst;
	a->requests += sign * t->requests;
	a->up += sign * t->rate * t->in * 8;
	a->down += sign * t->rate * t->out * 8;
	c->up += sign * t->rate * t->in * 8;
	c->down += sign * t->rate * t->out * 8;
	/* A transfer between two members of a channel crosses it twice. */
	if ((m = p->s->clients[t->client].medium) > 0)
		p->md[m - 1].traffic += sign * t->rate * (t->in + t->out) * 8;
	if ((m = p->s->servers[server].medium) > 0)
		p->md[m - 1].traffic += sign * t->rate * (t->in + t->out) * 8;
	/*
	 * A task whose weights must cross sends nothing until they are
	 * there: while uploads run, only the others load the links.
	 */
	if (t->model[0] != '\0' &&
	    !sched_resident(&p->s->servers[server], t->model))
		return;
	a->up_now += sign * t->rate * t->in * 8;
	a->down_now += sign * t->rate * t->out * 8;
	c->up_now += sign * t->rate * t->in * 8;
	c->down_now += sign * t->rate * t->out * 8;
	if ((m = p->s->clients[t->client].medium) > 0)
		p->md[m - 1].traffic_now += sign * t->rate * (t->in + t->out) *
		    8;
	if ((m = p->s->servers[server].medium) > 0)
		p->md[m - 1].traffic_now += sign * t->rate * (t->in + t->out) *
		    8;
}

/*
 * The links an upload from the task's client to its server uses: the
 * client's own link or its channel, and the server's.  Numbered apart:
 * channels, then clients, then servers.
 */
static void
upload_links(const struct sched *s, int client, int server, int id[2])
{
	int cm = s->clients[client].medium;
	int sm = s->servers[server].medium;

	id[0] = cm > 0 ? cm - 1 : s->nmedia + client;
	id[1] = sm > 0 ? sm - 1 : s->nmedia + s->nclients + server;
}

/*
 * The uploads on a link form a list through lnext; an upload that
 * crosses one channel at both ends is on its list once.
 */
static int
link_next(const struct predictor *p, int g, int link)
{
	return p->up[g].link[0] == link ? p->up[g].lnext[0] :
	    p->up[g].lnext[1];
}

static void
link_set_next(struct predictor *p, int g, int link, int next)
{
	if (p->up[g].link[0] == link)
		p->up[g].lnext[0] = next;
	else
		p->up[g].lnext[1] = next;
}

/* Puts an upload on (sign 1) or takes it off (-1) its links' lists. */
static void
group_links(struct predictor *p, int g, int sign)
{
	struct pupload *u = &p->up[g];
	const struct sched_task *t = &p->s->tasks[u->first];
	int j, n, *at, prev;

	if (sign > 0)
		upload_links(p->s, t->client, u->server, u->link);
	for (j = 0; j < 2; j++) {
		if (j == 1 && u->link[1] == u->link[0])
			break;
		at = &p->lfirst[u->link[j]];
		if (sign > 0) {
			u->lnext[j] = *at;
			*at = g;
			continue;
		}
		for (prev = -1, n = *at; n >= 0 && n != g;
		    prev = n, n = link_next(p, n, u->link[j]))
			;
		if (n < 0)
			continue;
		if (prev < 0)
			*at = link_next(p, g, u->link[j]);
		else
			link_set_next(p, prev, u->link[j],
			    link_next(p, g, u->link[j]));
	}
}

/* Joins the task to the upload of its weights to the server, if any. */
static void
group_join(struct predictor *p, int task, int server)
{
	const struct sched *s = p->s;
	const struct sched_task *t = &s->tasks[task];
	struct pupload *u;
	int g, empty = -1;

	if (t->model[0] == '\0' || sched_resident(&s->servers[server],
	    t->model))
		return;
	for (g = 0; g < p->nup; g++) {
		u = &p->up[g];
		if (u->refs == 0) {
			if (empty < 0)
				empty = g;
			continue;
		}
		if (u->server == server &&
		    strcmp(s->tasks[u->first].model, t->model) == 0)
			break;
	}
	if (g == p->nup) {
		g = empty >= 0 ? empty : p->nup++;
		p->up[g].server = server;
		p->up[g].first = task;
		p->up[g].refs = 0;
		group_links(p, g, 1);
	} else if (task < p->up[g].first) {
		/* Listed first, it starts first, and it uploads. */
		group_links(p, g, -1);
		p->up[g].first = task;
		group_links(p, g, 1);
	}
	p->up[g].refs++;
	p->group[task] = g;
}

static void
group_leave(struct predictor *p, int task)
{
	struct pupload *u;
	int g = p->group[task], i;

	if (g < 0)
		return;
	p->group[task] = -1;
	u = &p->up[g];
	if (u->first != task) {
		u->refs--;
		return;
	}
	group_links(p, g, -1);
	if (--u->refs == 0)
		return;
	/* The group's next task in the input's order now uploads it. */
	u->first = -1;
	for (i = p->sv[u->server].first; i >= 0; i = p->next[i])
		if (p->group[i] == g && (u->first < 0 || i < u->first))
			u->first = i;
	group_links(p, g, 1);
}

void
predict_add(struct predictor *p, int task, int server)
{
	struct sched_task *t = &p->s->tasks[task];

	if (t->server >= 0)
		predict_remove(p, task);
	p->gen++;
	p->sv[server].mem += predict_mem_need(p, task, server);
	p->sv[server].ntasks++;
	predict_sum(p, task, server, 1);
	t->server = server;
	p->prev[task] = -1;
	p->next[task] = p->sv[server].first;
	if (p->next[task] >= 0)
		p->prev[p->next[task]] = task;
	p->sv[server].first = task;
	group_join(p, task, server);
}

void
predict_remove(struct predictor *p, int task)
{
	struct sched_task *t = &p->s->tasks[task];
	struct pserver *a;
	int server = t->server;

	if (server < 0)
		return;
	p->gen++;
	group_leave(p, task);
	if (p->prev[task] >= 0)
		p->next[p->prev[task]] = p->next[task];
	else
		p->sv[server].first = p->next[task];
	if (p->next[task] >= 0)
		p->prev[p->next[task]] = p->prev[task];
	t->server = -1;
	a = &p->sv[server];
	a->mem -= predict_mem_need(p, task, server);
	predict_sum(p, task, server, -1);
	/* Sums of doubles do not return to zero exactly. */
	if (--a->ntasks == 0) {
		a->lam = a->work = a->work2 = a->burst = a->requests = 0;
		a->up = a->down = a->up_now = a->down_now = 0;
		a->mem = 0;
	}
}

/* A channel's occupancy: both directions share it. */
static double
medium_rho(const struct predictor *p, int m, int now)
{
	const struct pmedium *md = &p->md[m - 1];

	return md->cap > 0 ? (now ? md->traffic_now : md->traffic) / md->cap :
	    0;
}

/*
 * The busier end's occupancy on the task's path, each way: the client's
 * link or channel, and the server's.  With `now`, only by the tasks that
 * send from now on, not those waiting for weights.
 */
static void
path_rho(const struct predictor *p, const struct sched_task *t, int server,
    int now, double *up, double *down)
{
	const struct pserver *a = &p->sv[server];
	const struct pclient *c = &p->cl[t->client];
	int cm = p->s->clients[t->client].medium;
	int sm = p->s->servers[server].medium;

	*up = dmax(cm > 0 ? medium_rho(p, cm, now) :
	    (now ? c->up_now : c->up) / c->cap_up,
	    sm > 0 ? medium_rho(p, sm, now) :
	    (now ? a->up_now : a->up) / a->cap_up);
	*down = dmax(cm > 0 ? medium_rho(p, cm, now) :
	    (now ? c->down_now : c->down) / c->cap_down,
	    sm > 0 ? medium_rho(p, sm, now) :
	    (now ? a->down_now : a->down) / a->cap_down);
}

static double
link_cap(const struct predictor *p, int id)
{
	const struct sched *s = p->s;

	if (id < s->nmedia)
		return p->md[id].cap;
	if ((id -= s->nmedia) < s->nclients)
		return p->cl[id].cap_up;
	return p->sv[id - s->nclients].cap_up;
}

/* The bytes of the task's weights still to cross. */
static double
upload_left(const struct sched_task *t)
{
	return t->model_sent < t->model_size ?
	    (double)(t->model_size - t->model_sent) : 0;
}

/*
 * When the task's upload of its weights would end.  Every upload of the
 * plan starts now and they share links as max-min fairness does: one of
 * b bytes ends when its link has carried, besides its own bytes, what
 * each other upload b' on it could send meanwhile: at most min(b, b'),
 * its share under processor sharing, and no more than its own path's
 * rate allows (an upload held back by a slower link elsewhere leaves the
 * rest to the others).  That depends on the end sought, so it is found
 * by a few rounds from the processor-sharing answer down.  Twice for one
 * that crosses a channel at both ends.  Each link it crosses bounds it,
 * and so does the path's own measured rate, less the requests' share.
 */
static double
upload_time(const struct predictor *p, int task)
{
	const struct sched *s = p->s;
	const struct sched_task *t = &s->tasks[task];
	const struct sched_link *l = sched_link(s, t->client, t->server);
	const struct pupload *u = &p->up[p->group[task]];
	const struct sched_task *o;
	const struct sched_link *ol;
	double size = upload_left(t), bytes, b, up, down, alone, secs, end;
	int g, j, r, mine[2];

	upload_links(s, t->client, t->server, mine);
	path_rho(p, t, t->server, 1, &up, &down);
	if (up > PREDICT_RHO_KNEE)
		up = PREDICT_RHO_KNEE;
	alone = size * 8 / (l->up * (1 - up));
	end = HUGE_VAL;
	for (r = 0; r < 8; r++) {
		secs = alone;
		for (j = 0; j < 2; j++) {
			bytes = 0;
			for (g = p->lfirst[mine[j]]; g >= 0;
			    g = link_next(p, g, mine[j])) {
				o = &s->tasks[p->up[g].first];
				b = dmin(upload_left(o), size);
				ol = sched_link(s, o->client, o->server);
				if (&p->up[g] != u && ol != NULL && ol->up > 0)
					b = dmin(b, ol->up / 8 * end);
				bytes += b * (p->up[g].link[0] ==
				    p->up[g].link[1] ? 2 : 1);
			}
			/* Its group's upload is on the links of its first. */
			if (mine[j] != u->link[0] && mine[j] != u->link[1])
				bytes += size;
			if (link_cap(p, mine[j]) > 0)
				secs = dmax(secs, bytes * 8 /
				    link_cap(p, mine[j]));
		}
		if (end != HUGE_VAL && secs >= end * (1 - 1e-3))
			break;
		end = secs;
	}
	return end;
}

/*
 * The weights cross to a server once, for all the plan's tasks of that
 * model there.  Tasks start in the input's order: the first of them
 * uploads, and the others wait for that upload rather than start their
 * own.
 */
static double
load_time(const struct predictor *p, int task)
{
	int g = p->group[task];

	if (g < 0)
		return 0;
	return upload_time(p, p->up[g].first);
}

/*
 * An open-loop task keeps sending while its weights upload; when they
 * arrive, at time T, what it sent meanwhile reaches the GPUs at once.
 * That backlog b (seconds per GPU) drains at 1-rho, so requests arriving
 * from T to T+b/(1-rho) wait what is left of it: a triangle of
 * request-seconds, of which a task counts the part within its horizon,
 * spread over the horizon.
 */
static double
burst_wait(const struct predictor *p, int server, double rho, double horizon)
{
	const struct sched *s = p->s;
	const struct sched_server *sv = &s->servers[server];
	const struct sched_task *u;
	double k = sv->ngpus > 0 ? sv->ngpus : 1, area = 0, at, b, drain, w;
	double seen_at[16];
	int i, j, seen[16], nseen = 0;

	if (rho > PREDICT_RHO_KNEE)
		rho = PREDICT_RHO_KNEE;
	for (i = p->sv[server].first; i >= 0; i = p->next[i]) {
		u = &s->tasks[i];
		if (u->window > 0 || p->group[i] < 0)
			continue;
		/* The members of an upload share its time: once each. */
		for (j = 0; j < nseen && seen[j] != p->group[i]; j++)
			;
		if (j < nseen)
			at = seen_at[j];
		else {
			at = load_time(p, i);
			if (nseen < 16) {
				seen[nseen] = p->group[i];
				seen_at[nseen++] = at;
			}
		}
		if (at >= horizon)
			continue;
		b = dmin(u->requests, u->rate * at) * u->gpu_time /
		    sv->speed / k;
		drain = b / (1 - rho);
		w = dmin(drain, horizon - at);
		area += w * (b + b * (1 - w / drain)) / 2;
	}
	return area / horizon;
}

/*
 * The transfers and round trips of one of the task's requests on its
 * server: what it takes besides the GPU; the transfers alone into
 * transfer.  A task with a window cannot push its link past the knee
 * (its answers hold it back), so its stretch stops there.
 */
static double
request_fixed(const struct predictor *p, int task, double *transfer)
{
	const struct sched *s = p->s;
	const struct sched_task *t = &s->tasks[task];
	const struct sched_link *l = sched_link(s, t->client, t->server);
	double horizon = t->requests / t->rate, rup, rdown;

	path_rho(p, t, t->server, 0, &rup, &rdown);
	if (t->window > 0) {
		rup = dmin(rup, PREDICT_RHO_KNEE);
		rdown = dmin(rdown, PREDICT_RHO_KNEE);
	}
	*transfer = congest(t->in * 8 / l->up, rup, horizon) +
	    congest(t->out * 8 / l->down, rdown, horizon);
	return *transfer + t->round_trips * l->rtt +
	    t->gpu_time / s->servers[t->server].speed;
}

void
predict_task(const struct predictor *p, int task, struct pred *out)
{
	const struct sched *s = p->s;
	const struct sched_task *t = &s->tasks[task];
	const struct sched_server *sv;
	const struct sched_link *l;
	double horizon, rup, rdown, pure, x, waited, served, lost, ask;
	int server = t->server;

	memset(out, 0, sizeof *out);
	if (server < 0)
		return;
	sv = &s->servers[server];
	l = sched_link(s, t->client, server);
	horizon = t->requests / t->rate;
	path_rho(p, t, server, 0, &rup, &rdown);
	out->link_rho = dmax(rup, rdown);
	server_solve(p, server);
	out->gpu_rho = p->rho[task];
	request_fixed(p, task, &out->transfer);
	out->queue = p->wait[task] + backlog_wait(sv->queued /
	    (sv->ngpus > 0 ? sv->ngpus : 1), out->gpu_rho, horizon) +
	    burst_wait(p, server, out->gpu_rho, horizon);
	out->compute = t->gpu_time / sv->speed;
	out->rtt = t->round_trips * l->rtt;
	out->cached = t->model[0] == '\0' || sched_resident(sv, t->model);
	if (!out->cached)
		out->load = load_time(p, task);
	pure = out->transfer + out->queue + out->compute + out->rtt;
	out->answered = t->requests;
	if (t->window > 0) {
		/*
		 * A program with a window sends its first `window` requests
		 * and blocks until the weights are there: those wait T.  Then
		 * it sends at x = min(rate, window/pure) until its session
		 * (the horizon) ends; what it could not send by then is lost,
		 * each request costing what it would have waited had the
		 * session gone on: at least the time from when it was due to
		 * the session's end, on average half the horizon (times
		 * PREDICT_LOST), on top of its latency.
		 */
		x = p->x[task];
		waited = 0;
		if (out->load > 0)
			waited = dmin(t->requests, dmin(t->window,
			    dmax(1, t->rate * out->load)));
		served = dmin(t->requests - waited, x *
		    dmax(0, horizon - out->load));
		lost = t->requests - waited - served;
		out->answered = waited + served;
		out->load_wait = waited * out->load / t->requests;
		out->slowdown = lost * PREDICT_LOST * horizon / t->requests;
		ask = dmin(horizon, out->load + (t->requests - waited) / x);
		out->completion = dmax(out->load, ask) + pure;
	} else {
		/* Requests arrive all along; those before the weights wait. */
		if (out->load <= horizon)
			out->load_wait = out->load * out->load /
			    (2 * horizon);
		else
			out->load_wait = out->load - horizon / 2;
		out->completion = dmax(horizon, out->load) + pure;
	}
	out->latency = pure + out->load_wait + out->slowdown;
}

double
predict_cost(const struct predictor *p, int task)
{
	struct pred pr;

	if (p->s->tasks[task].server < 0)
		return 0;
	predict_task(p, task, &pr);
	return p->s->tasks[task].requests * pr.latency;
}

double
predict_total(const struct predictor *p)
{
	double sum = 0;
	int i;

	for (i = 0; i < p->s->ntasks; i++)
		sum += predict_cost(p, i);
	return sum;
}

int
predict_snap_init(const struct predictor *p, struct psnap *sn)
{
	size_t nt = (size_t)p->s->ntasks + 1;

	memset(sn, 0, sizeof *sn);
	sn->sgen = calloc((size_t)p->s->nservers + 1, sizeof *sn->sgen);
	sn->x = calloc(nt, sizeof *sn->x);
	sn->wait = calloc(nt, sizeof *sn->wait);
	sn->rho = calloc(nt, sizeof *sn->rho);
	if (sn->sgen == NULL || sn->x == NULL || sn->wait == NULL ||
	    sn->rho == NULL) {
		predict_snap_free(sn);
		return -1;
	}
	return 0;
}

void
predict_snap_free(struct psnap *sn)
{
	free(sn->sgen);
	free(sn->x);
	free(sn->wait);
	free(sn->rho);
	memset(sn, 0, sizeof *sn);
}

void
predict_snap_take(const struct predictor *p, struct psnap *sn)
{
	size_t nt = (size_t)p->s->ntasks;
	int v;

	sn->gen = p->gen;
	for (v = 0; v < p->s->nservers; v++)
		sn->sgen[v] = p->solve[v].gen;
	memcpy(sn->x, p->x, nt * sizeof *sn->x);
	memcpy(sn->wait, p->wait, nt * sizeof *sn->wait);
	memcpy(sn->rho, p->rho, nt * sizeof *sn->rho);
}

/*
 * Back to the solutions of the snapshot's state.  The generation goes
 * back too; so that no solution of the undone move is taken for one of
 * a later state, the snapshot's generation must be the newest that any
 * solution carries once it is back, which holds since every one made
 * after it is overwritten here.
 */
void
predict_snap_put(struct predictor *p, const struct psnap *sn)
{
	size_t nt = (size_t)p->s->ntasks;
	int v;

	p->gen = sn->gen;
	for (v = 0; v < p->s->nservers; v++)
		p->solve[v].gen = sn->sgen[v];
	memcpy(p->x, sn->x, nt * sizeof *sn->x);
	memcpy(p->wait, sn->wait, nt * sizeof *sn->wait);
	memcpy(p->rho, sn->rho, nt * sizeof *sn->rho);
}
