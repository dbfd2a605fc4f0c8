/*
 * Placement (gleam-sched(1), PLACEMENT): tasks whose weights a server
 * holds already first, then the rest, heaviest first, each where it adds
 * least to the plan's predicted cost; then single moves and pairwise
 * swaps while they lower it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "place.h"

#define PLACE_PASSES	20	/* local search rounds at most ... */
#define PLACE_GAIN	1e-4	/* ... while one gains this share of the cost */
#define PLACE_SWAP_MAX	128	/* pairwise swaps up to this many tasks */
#define PLACE_BUDGET	200000	/* moves the local search may weigh */
#define PLACE_EXACT_MAX	50000	/* assignments few enough to try them all */

struct placer {
	struct sched	*s;
	struct predictor p;
	struct psnap	 snap;		/* the state before a trial move */
	char		*feas;		/* [task * nservers + server] */
};

int
place_feasible(const struct sched *s, int task, int server, char *why,
    size_t len)
{
	const struct sched_task *t = &s->tasks[task];
	const struct sched_server *sv = &s->servers[server];
	const struct sched_link *l = sched_link(s, t->client, server);
	char need[32], have[32];
	uint64_t bytes;

	if (!l->ok) {
		if (l->why[0] != '\0')
			snprintf(why, len, "no link from %s: %s",
			    s->clients[t->client].name, l->why);
		else
			snprintf(why, len, "not probed from %s",
			    s->clients[t->client].name);
		return 0;
	}
	if (sv->down) {
		snprintf(why, len, "status: %s", sv->down_why);
		return 0;
	}
	if (sv->ngpus == 0) {
		snprintf(why, len, "no GPU");
		return 0;
	}
	bytes = t->memory;
	if (t->model[0] != '\0' && !sched_resident(sv, t->model))
		bytes += t->model_size;
	if (bytes > sv->gpu_free_max) {
		snprintf(why, len, "needs %s on one GPU, has %s free",
		    fmt_size(bytes, need, sizeof need),
		    fmt_size(sv->gpu_free_max, have, sizeof have));
		return 0;
	}
	return 1;
}

/* Why no server could ever hold the task. */
static void
unplaced_why(const struct sched *s, int task, char *why, size_t len)
{
	const struct sched_task *t = &s->tasks[task];
	const struct sched_server *sv;
	char need[32], have[32];
	int v, reach = 0, gpus = 0, best = -1;

	for (v = 0; v < s->nservers; v++) {
		sv = &s->servers[v];
		if (!sched_link(s, t->client, v)->ok)
			continue;
		reach++;
		if (sv->ngpus == 0)
			continue;
		gpus++;
		if (best < 0 || sv->gpu_free_max > s->servers[best].gpu_free_max)
			best = v;
	}
	if (reach == 0)
		snprintf(why, len, "no link from %s to any server",
		    s->clients[t->client].name);
	else if (gpus == 0)
		snprintf(why, len, "no server that %s reaches has a GPU",
		    s->clients[t->client].name);
	else
		snprintf(why, len, "needs %s on one GPU; the most free on a "
		    "server %s reaches is %s (%s)",
		    fmt_size(t->memory + t->model_size, need, sizeof need),
		    s->clients[t->client].name,
		    fmt_size(s->servers[best].gpu_free_max, have, sizeof have),
		    s->servers[best].name);
}

/*
 * The cost of the tasks that a change on these servers or of these
 * clients' traffic can touch; -1 matches nothing.
 */
static double
cost_near(const struct placer *pl, int s1, int s2, int c1, int c2)
{
	const struct sched_task *t;
	double sum = 0;
	int i;

	for (i = 0; i < pl->s->ntasks; i++) {
		t = &pl->s->tasks[i];
		if (t->server < 0)
			continue;
		if (t->server == s1 || t->server == s2 || t->client == c1 ||
		    t->client == c2)
			sum += predict_cost(&pl->p, i);
	}
	return sum;
}

/* Puts the task back where it was (-1: nowhere). */
static void
restore(struct placer *pl, int task, int server)
{
	if (server >= 0)
		predict_add(&pl->p, task, server);
	else
		predict_remove(&pl->p, task);
}

/*
 * What the plan's cost would gain if the task went to the server; the
 * task's prediction there into out, if not NULL.
 */
static double
move_delta(struct placer *pl, int task, int server, struct pred *out)
{
	int old = pl->s->tasks[task].server, c = pl->s->tasks[task].client;
	double before, after;

	before = cost_near(pl, old, server, c, -1);
	predict_snap_take(&pl->p, &pl->snap);
	predict_add(&pl->p, task, server);
	after = cost_near(pl, old, server, c, -1);
	if (out != NULL)
		predict_task(&pl->p, task, out);
	restore(pl, task, old);
	predict_snap_put(&pl->p, &pl->snap);
	return after - before;
}

/* The same for two tasks trading servers; HUGE_VAL if they do not fit. */
static double
swap_delta(struct placer *pl, int t1, int t2)
{
	struct sched_task *a = &pl->s->tasks[t1], *b = &pl->s->tasks[t2];
	int s1 = a->server, s2 = b->server;
	double before, after = HUGE_VAL;

	before = cost_near(pl, s1, s2, a->client, b->client);
	predict_snap_take(&pl->p, &pl->snap);
	predict_remove(&pl->p, t1);
	predict_remove(&pl->p, t2);
	if (predict_fits(&pl->p, t1, s2)) {
		predict_add(&pl->p, t1, s2);
		if (predict_fits(&pl->p, t2, s1)) {
			predict_add(&pl->p, t2, s1);
			after = cost_near(pl, s1, s2, a->client, b->client);
			predict_remove(&pl->p, t2);
		}
		predict_remove(&pl->p, t1);
	}
	predict_add(&pl->p, t1, s1);
	predict_add(&pl->p, t2, s2);
	predict_snap_put(&pl->p, &pl->snap);
	return after - before;
}

static int
feasible(const struct placer *pl, int task, int server)
{
	return pl->feas[(long)task * pl->s->nservers + server];
}

/* Any server that holds the task's weights and could take it? */
static int
has_affinity(const struct placer *pl, int task)
{
	const struct sched_task *t = &pl->s->tasks[task];
	int v;

	if (t->model[0] == '\0')
		return 0;
	for (v = 0; v < pl->s->nservers; v++)
		if (feasible(pl, task, v) &&
		    sched_resident(&pl->s->servers[v], t->model))
			return 1;
	return 0;
}

/* A task in the order of the greedy pass. */
struct okey {
	int		 task;
	int		 affinity;
	double		 work;		/* reference GPU seconds */
};

/* Affinity first, then more GPU work first, then input order. */
static int
order_cmp(const void *x, const void *y)
{
	const struct okey *a = x, *b = y;

	if (a->affinity != b->affinity)
		return b->affinity - a->affinity;
	if (a->work != b->work)
		return a->work > b->work ? -1 : 1;
	return a->task - b->task;
}

/* Sets the task's why field for a task that cannot go anywhere now. */
static void
no_room(struct placer *pl, int task)
{
	struct sched_task *t = &pl->s->tasks[task];
	char need[32];
	int v, n = 0;

	for (v = 0; v < pl->s->nservers; v++)
		if (feasible(pl, task, v))
			n++;
	if (n == 0) {
		unplaced_why(pl->s, task, t->why, sizeof t->why);
		return;
	}
	snprintf(t->why, sizeof t->why, "no room: the %d server%s that could "
	    "hold it (%s) %s full with the rest of the plan", n,
	    n == 1 ? "" : "s", fmt_size(t->memory + t->model_size, need,
	    sizeof need), n == 1 ? "is" : "are");
}

static void
greedy(struct placer *pl, int task)
{
	double d, best = 0;
	int v, to = -1;

	for (v = 0; v < pl->s->nservers; v++) {
		if (!feasible(pl, task, v) || !predict_fits(&pl->p, task, v))
			continue;
		d = move_delta(pl, task, v, NULL);
		if (to < 0 || d < best - 1e-12 * fabs(best)) {
			to = v;
			best = d;
		}
	}
	if (to < 0)
		no_room(pl, task);
	else
		predict_add(&pl->p, task, to);
}

/*
 * Moves and swaps while they lower the cost by more than rounding, for at
 * most PLACE_PASSES rounds, and no more once a round gains little or the
 * budget of moves weighed is spent (large plans).
 */
static void
improve(struct placer *pl)
{
	struct sched *s = pl->s;
	struct sched_task *a, *b;
	double thr, d, best, before;
	long tried = 0;
	int pass, i, j, v, to, changed;

	for (pass = 0; pass < PLACE_PASSES && tried < PLACE_BUDGET; pass++) {
		changed = 0;
		before = predict_total(&pl->p);
		thr = 1e-9 * before + 1e-12;
		for (i = 0; i < s->ntasks; i++) {
			a = &s->tasks[i];
			if (a->fixed || a->server < 0)
				continue;
			to = -1;
			best = -thr;
			for (v = 0; v < s->nservers; v++) {
				if (v == a->server || !feasible(pl, i, v) ||
				    !predict_fits(&pl->p, i, v))
					continue;
				tried++;
				if ((d = move_delta(pl, i, v, NULL)) < best) {
					best = d;
					to = v;
				}
			}
			if (to >= 0) {
				predict_add(&pl->p, i, to);
				changed = 1;
			}
		}
		for (i = 0; s->ntasks <= PLACE_SWAP_MAX && i < s->ntasks; i++) {
			a = &s->tasks[i];
			if (a->fixed || a->server < 0)
				continue;
			for (j = i + 1; j < s->ntasks; j++) {
				b = &s->tasks[j];
				if (b->fixed || b->server < 0 ||
				    b->server == a->server ||
				    !feasible(pl, i, b->server) ||
				    !feasible(pl, j, a->server))
					continue;
				if (swap_delta(pl, i, j) < -thr) {
					v = a->server;
					to = b->server;
					predict_remove(&pl->p, i);
					predict_add(&pl->p, j, v);
					predict_add(&pl->p, i, to);
					changed = 1;
				}
			}
		}
		if (!changed ||
		    predict_total(&pl->p) > before * (1 - PLACE_GAIN))
			break;
	}
}

/* The depth-first search of every assignment. */
struct exact {
	int		*tasks;		/* the ones to place */
	int		 n;
	int		*best;		/* their servers in the cheapest found */
	double		 cost;
	long		 leaves;
};

static void
exact_step(struct placer *pl, struct exact *x, int i)
{
	double c;
	int k, v, t;

	if (i == x->n) {
		x->leaves++;
		c = predict_total(&pl->p);
		if (x->cost < 0 || c < x->cost * (1 - 1e-12)) {
			x->cost = c;
			for (k = 0; k < x->n; k++)
				x->best[k] = pl->s->tasks[x->tasks[k]].server;
		}
		return;
	}
	t = x->tasks[i];
	for (v = 0; v < pl->s->nservers; v++) {
		if (!feasible(pl, t, v) || !predict_fits(&pl->p, t, v))
			continue;
		predict_add(&pl->p, t, v);
		exact_step(pl, x, i + 1);
		predict_remove(&pl->p, t);
	}
}

/*
 * With few enough assignments of the tasks being placed, tries them all
 * and keeps the cheapest if it beats what the heuristics found.  Tasks no
 * server could take stay out.
 */
static int
exact(struct placer *pl)
{
	struct sched *s = pl->s;
	struct exact x;
	double combos = 1, now;
	int *from, i, v, nf, left, better;

	memset(&x, 0, sizeof x);
	x.cost = -1;
	x.tasks = calloc((size_t)s->ntasks + 1, sizeof *x.tasks);
	x.best = calloc((size_t)s->ntasks + 1, sizeof *x.best);
	from = calloc((size_t)s->ntasks + 1, sizeof *from);
	if (x.tasks == NULL || x.best == NULL || from == NULL) {
		free(x.tasks);
		free(x.best);
		free(from);
		return -1;
	}
	for (i = 0; i < s->ntasks && combos <= PLACE_EXACT_MAX; i++) {
		if (s->tasks[i].fixed)
			continue;
		for (nf = 0, v = 0; v < s->nservers; v++)
			nf += feasible(pl, i, v);
		if (nf == 0)
			continue;
		combos *= nf;
		x.tasks[x.n++] = i;
	}
	if (combos <= PLACE_EXACT_MAX && x.n > 0) {
		now = predict_total(&pl->p);
		for (i = 0, left = 0; i < x.n; i++) {
			from[i] = s->tasks[x.tasks[i]].server;
			left += from[i] < 0;
			predict_remove(&pl->p, x.tasks[i]);
		}
		exact_step(pl, &x, 0);
		/*
		 * Keep the heuristics' answer unless this one is better: it
		 * places every task where they left one without room (whose
		 * cost, being nothing, compares with nothing), or it costs
		 * less.
		 */
		better = x.cost >= 0 && (left > 0 || x.cost < now * (1 - 1e-9));
		for (i = 0; i < x.n; i++) {
			v = better ? x.best[i] : from[i];
			if (v >= 0)
				predict_add(&pl->p, x.tasks[i], v);
			if (v >= 0 && v != from[i])
				s->tasks[x.tasks[i]].why[0] = '\0';
		}
	}
	free(x.tasks);
	free(x.best);
	free(from);
	return 0;
}

/* A term of the comparison between the chosen server and another. */
struct term {
	double		 diff;		/* seconds: the other's minus ours */
	char		 text[160];
};

static int
term_cmp(const void *x, const void *y)
{
	const struct term *a = x, *b = y;

	if (a->diff != b->diff)
		return a->diff > b->diff ? -1 : 1;
	return 0;
}

static void
term_set(struct term *t, double ours, double theirs, const char *what,
    const char *extra)
{
	t->diff = theirs - ours;
	snprintf(t->text, sizeof t->text, "%s %.3f ms against %.3f ms%s",
	    what, theirs * 1e3, ours * 1e3, extra);
}

/* The reason text: what makes the runner-up worse, biggest first. */
static void
explain_reason(struct placer *pl, int task, const struct pred *ours,
    const struct pred *theirs, double margin, struct place_why *w)
{
	const struct sched_server *a, *b;
	struct term terms[7];
	char extra[96];
	size_t off;
	double others;
	int i, n = 0, shown = 0, against = -1;

	a = &pl->s->servers[pl->s->tasks[task].server];
	b = &pl->s->servers[w->runner_up];
	snprintf(extra, sizeof extra, " (speed %g against %g)", b->speed,
	    a->speed);
	term_set(&terms[n++], ours->compute, theirs->compute, "compute",
	    extra);
	snprintf(extra, sizeof extra, " (GPU load %.2f against %.2f)",
	    theirs->gpu_rho, ours->gpu_rho);
	term_set(&terms[n++], ours->queue, theirs->queue, "queue", extra);
	term_set(&terms[n++], ours->transfer, theirs->transfer, "transfer",
	    "");
	term_set(&terms[n++], ours->rtt, theirs->rtt, "round trips", "");
	if (ours->cached && !theirs->cached)
		snprintf(extra, sizeof extra, " (weights cached here; "
		    "%.1f s to load there)", theirs->load);
	else
		extra[0] = '\0';
	term_set(&terms[n++], ours->load_wait, theirs->load_wait,
	    "waiting for weights", extra);
	term_set(&terms[n++], ours->slowdown, theirs->slowdown,
	    "requests lost at the session's end", "");
	others = margin - (theirs->latency - ours->latency);
	terms[n].diff = others;
	snprintf(terms[n++].text, sizeof terms[0].text, "other tasks would "
	    "%s %.3f ms per request of this one", others >= 0 ? "lose" :
	    "gain", fabs(others) * 1e3);
	qsort(terms, (size_t)n, sizeof *terms, term_cmp);

	off = (size_t)snprintf(w->reason, sizeof w->reason, "%s would cost "
	    "%.3f ms more per request", b->name, margin * 1e3);
	for (i = 0; i < n && shown < 3; i++) {
		if (terms[i].diff < 0.5e-6)
			break;
		off += (size_t)snprintf(w->reason + off, off < sizeof w->reason
		    ? sizeof w->reason - off : 0, "%s%s", shown ? "; " : ": ",
		    terms[i].text);
		shown++;
	}
	/* The strongest point in the runner-up's favour, if it counts. */
	if (n > 0 && terms[n - 1].diff <= -0.5e-6 &&
	    -terms[n - 1].diff >= 0.01 * fabs(margin))
		against = n - 1;
	if (against >= 0 && off < sizeof w->reason)
		snprintf(w->reason + off, sizeof w->reason - off,
		    "; though %s", terms[against].text);
}

static int
explain(struct placer *pl, int task, struct place_why *w)
{
	struct sched *s = pl->s;
	struct sched_task *t = &s->tasks[task];
	struct pred ours, theirs, tmp;
	char why[SCHED_WHY_MAX], need[32], left[32];
	double d, best = 0;
	int v;

	memset(w, 0, sizeof *w);
	memset(&theirs, 0, sizeof theirs);
	w->runner_up = -1;
	if (t->server < 0)
		return 0;
	if (t->fixed) {
		/* Not a choice: nothing to weigh it against. */
		snprintf(w->reason, sizeof w->reason, "running there: not "
		    "moved");
		return 0;
	}
	w->excluded = calloc((size_t)s->nservers, sizeof *w->excluded);
	w->excluded_why = calloc((size_t)s->nservers, sizeof *w->excluded_why);
	if (w->excluded == NULL || w->excluded_why == NULL)
		return -1;
	predict_task(&pl->p, task, &ours);
	for (v = 0; v < s->nservers; v++) {
		if (v == t->server)
			continue;
		if (place_feasible(s, task, v, why, sizeof why) &&
		    predict_fits(&pl->p, task, v)) {
			d = move_delta(pl, task, v, &tmp);
			if (w->runner_up < 0 || d < best) {
				w->runner_up = v;
				best = d;
				theirs = tmp;
			}
			continue;
		}
		if (place_feasible(s, task, v, why, sizeof why))
			snprintf(why, sizeof why, "no room: needs %s, %s left",
			    fmt_size(predict_mem_need(&pl->p, task, v), need,
			    sizeof need), fmt_size(s->servers[v].mem_free -
			    pl->p.sv[v].mem, left, sizeof left));
		w->excluded[w->nexcluded] = v;
		memcpy(w->excluded_why[w->nexcluded++], why, sizeof why);
	}
	if (w->runner_up < 0)
		snprintf(w->reason, sizeof w->reason, "the only server that "
		    "can take it");
	else {
		w->margin = best / t->requests;
		explain_reason(pl, task, &ours, &theirs, w->margin, w);
	}
	return 0;
}

int
place_plan(struct sched *s, struct place_why *why)
{
	struct placer pl;
	struct okey *order;
	char buf[SCHED_WHY_MAX];
	int i, v, n = 0, rc = -1;

	memset(&pl, 0, sizeof pl);
	pl.s = s;
	/* Among running tasks the plan is one of a stream: headroom. */
	s->headroom = 0;
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].server >= 0)
			s->headroom = PREDICT_HEADROOM;
	pl.feas = calloc((size_t)s->ntasks * (size_t)s->nservers + 1, 1);
	order = calloc((size_t)s->ntasks + 1, sizeof *order);
	if (pl.feas == NULL || order == NULL ||
	    predict_init(&pl.p, s) == -1)
		goto out;
	if (predict_snap_init(&pl.p, &pl.snap) == -1)
		goto out;
	for (i = 0; i < s->ntasks; i++) {
		s->tasks[i].why[0] = '\0';
		for (v = 0; v < s->nservers; v++)
			pl.feas[(long)i * s->nservers + v] =
			    (char)place_feasible(s, i, v, buf, sizeof buf);
	}
	for (i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].fixed || s->tasks[i].server >= 0)
			continue;
		order[n].task = i;
		order[n].affinity = has_affinity(&pl, i);
		order[n++].work = s->tasks[i].requests * s->tasks[i].gpu_time;
	}
	qsort(order, (size_t)n, sizeof *order, order_cmp);
	for (i = 0; i < n; i++)
		greedy(&pl, order[i].task);
	improve(&pl);
	if (exact(&pl) == -1)
		goto out;
	if (why != NULL) {
		for (i = 0; i < s->ntasks; i++)
			if (explain(&pl, i, &why[i]) == -1)
				goto out;
	}
	rc = 0;
out:
	predict_snap_free(&pl.snap);
	predict_free(&pl.p);
	free(pl.feas);
	free(order);
	return rc;
}

void
place_why_free(struct place_why *w, int n)
{
	int i;

	for (i = 0; w != NULL && i < n; i++) {
		free(w[i].excluded);
		free(w[i].excluded_why);
	}
}
