/* Which running tasks to move (gleam-sched(1), Re-planning). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "place.h"
#include "predict.h"
#include "replan.h"
#include "sched.h"

/* A move the plan proposes, weighed where everything runs now. */
struct weigh {
	int		 task, to;
	int		 fits;
	double		 own;		/* its cost where it runs */
	double		 saved;		/* share of own the move saves */
	struct replan_move m;
};

/*
 * Task i from its server to `to`, with the predictor as things are: what
 * the plan's cost and its latency would be.  The predictor is left as
 * it was.
 */
static void
weigh(struct predictor *p, int i, int to, struct weigh *w)
{
	struct sched *s = p->s;
	struct pred a, b;
	int from = s->tasks[i].server;

	memset(w, 0, sizeof *w);
	w->task = i;
	w->to = to;
	w->m.task = i;
	w->m.from = from;
	w->m.to = to;
	predict_task(p, i, &a);
	w->own = s->tasks[i].requests * a.latency;
	w->m.before = a.latency;
	w->m.cost_before = predict_total(p);
	predict_remove(p, i);
	if (!(w->fits = predict_fits(p, i, to))) {
		predict_add(p, i, from);
		return;
	}
	predict_add(p, i, to);
	predict_task(p, i, &b);
	w->m.after = b.latency;
	w->m.cost_after = predict_total(p);
	predict_remove(p, i);
	predict_add(p, i, from);
	w->m.saved = w->own > 0 ? (w->m.cost_before - w->m.cost_after) /
	    w->own : 0;
	w->saved = w->m.saved;
}

static int
weigh_cmp(const void *x, const void *y)
{
	const struct weigh *a = x, *b = y;

	if (a->saved != b->saved)
		return a->saved > b->saved ? -1 : 1;
	return a->task - b->task;
}

int
replan_decide(struct sched *s, const double *here,
    const struct replan_conf *cf, struct replan_move *mv)
{
	struct predictor p;
	struct weigh *c = NULL, w;
	struct sched_task *t;
	const char *tn, *cn, *fn, *on;
	int *to, i, k, n = 0, nc = 0, rc = -1;

	if ((to = calloc((size_t)s->ntasks + 1, sizeof *to)) == NULL)
		return -1;
	if (place_plan(s, NULL) == -1)
		goto out;
	/* What the plan would move; then everything back where it runs. */
	for (i = 0; i < s->ntasks; i++) {
		to[i] = s->tasks[i].server;
		if (s->tasks[i].from >= 0)
			s->tasks[i].server = s->tasks[i].from;
		if (!s->tasks[i].fixed && s->tasks[i].from >= 0 &&
		    to[i] >= 0 && to[i] != s->tasks[i].from)
			nc++;
	}
	if (nc == 0) {
		rc = 0;
		goto out;
	}
	if ((c = calloc((size_t)nc, sizeof *c)) == NULL ||
	    predict_init(&p, s) == -1)
		goto out;
	for (nc = 0, i = 0; i < s->ntasks; i++)
		if (!s->tasks[i].fixed && s->tasks[i].from >= 0 &&
		    to[i] >= 0 && to[i] != s->tasks[i].from)
			weigh(&p, i, to[i], &c[nc++]);
	qsort(c, (size_t)nc, sizeof *c, weigh_cmp);
	/* One after the other: each weighed after those made before it. */
	for (k = 0; k < nc; k++) {
		i = c[k].task;
		t = &s->tasks[i];
		weigh(&p, i, c[k].to, &w);
		tn = t->name;
		cn = s->clients[t->client].name;
		fn = s->servers[t->server].name;
		on = s->servers[w.to].name;
		if (!w.fits) {
			log_info("not moving %s of %s from %s to %s: no room "
			    "there now", tn, cn, fn, on);
			continue;
		}
		if (w.saved < cf->margin) {
			log_info("not moving %s of %s from %s to %s: it would "
			    "save %.1f%% of its cost there (%.3f ms per "
			    "request against %.3f ms), less than the margin "
			    "of %g%%", tn, cn, fn, on, w.saved * 100,
			    w.m.after * 1e3, w.m.before * 1e3,
			    cf->margin * 100);
			continue;
		}
		if (here[i] < cf->stay) {
			log_info("not moving %s of %s from %s to %s (it would "
			    "save %.0f%% of its cost): on %s for %.1f s, "
			    "less than the %g s a client stays", tn, cn, fn,
			    on, w.saved * 100, fn, here[i], cf->stay);
			continue;
		}
		if (n >= cf->moves) {
			log_info("not moving %s of %s from %s to %s now: %d "
			    "move%s in this re-planning already", tn, cn, fn,
			    on, n, n == 1 ? "" : "s");
			continue;
		}
		log_info("moving %s of %s from %s to %s: %.3f ms per request "
		    "there, %.3f ms on %s; the plan's cost %.3f s to %.3f s, "
		    "%.0f%% of its cost saved (%g%% needed)", tn, cn, fn, on,
		    w.m.before * 1e3, w.m.after * 1e3, on, w.m.cost_before,
		    w.m.cost_after, w.saved * 100, cf->margin * 100);
		mv[n++] = w.m;
		predict_remove(&p, i);
		predict_add(&p, i, w.to);
	}
	predict_free(&p);
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].from >= 0)
			s->tasks[i].server = s->tasks[i].from;
	rc = n;
out:
	free(c);
	free(to);
	return rc;
}
