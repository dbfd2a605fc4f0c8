/* Printing a plan: the keys of gleam-sched(1), PLAN. */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "plan.h"
#include "predict.h"
#include "yamlio.h"

/* The request-weighted mean latency and the counts. */
struct totals {
	int		 placed;
	double		 requests;
	double		 latency;	/* sum of requests times latency */
};

static void
totals(const struct predictor *p, struct totals *t)
{
	struct pred pr;
	int i;

	memset(t, 0, sizeof *t);
	for (i = 0; i < p->s->ntasks; i++) {
		if (p->s->tasks[i].server < 0)
			continue;
		predict_task(p, i, &pr);
		t->placed++;
		t->requests += p->s->tasks[i].requests;
		t->latency += p->s->tasks[i].requests * pr.latency;
	}
}

static double
gpu_load(const struct predictor *p, int v)
{
	const struct sched_server *sv = &p->s->servers[v];

	return sv->background + p->sv[v].work / (sv->ngpus > 0 ?
	    sv->ngpus : 1);
}

static double
share(double used, double cap)
{
	return cap > 0 ? used / cap : 0;
}

static void
yaml_why(struct yw *w, const struct sched *s, const struct place_why *x)
{
	int i;

	yw_key(w, "explain");
	yw_map(w);
	yw_key(w, "runner_up");
	yw_str(w, x->runner_up >= 0 ? s->servers[x->runner_up].name : NULL);
	yw_kdbl(w, "margin_ms", x->margin * 1e3, 3);
	yw_kstr(w, "reason", x->reason);
	yw_key(w, "excluded");
	if (x->nexcluded == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < x->nexcluded; i++) {
		yw_fmap(w);
		yw_kstr(w, "server", s->servers[x->excluded[i]].name);
		yw_kstr(w, "reason", x->excluded_why[i]);
		yw_end(w);
	}
	yw_end(w);
	yw_end(w);
}

static void
yaml_task(struct yw *w, const struct predictor *p, int i,
    const struct place_why *why)
{
	const struct sched *s = p->s;
	const struct sched_task *t = &s->tasks[i];
	struct pred pr;

	predict_task(p, i, &pr);
	yw_map(w);
	yw_kstr(w, "task", t->name);
	yw_kstr(w, "client", s->clients[t->client].name);
	yw_kstr(w, "server", s->servers[t->server].name);
	if (t->from >= 0)
		yw_kstr(w, "from", s->servers[t->from].name);
	yw_kbool(w, "cached", pr.cached);
	yw_kdbl(w, "latency_ms", pr.latency * 1e3, 3);
	yw_kdbl(w, "transfer_ms", pr.transfer * 1e3, 3);
	yw_kdbl(w, "queue_ms", pr.queue * 1e3, 3);
	yw_kdbl(w, "compute_ms", pr.compute * 1e3, 3);
	yw_kdbl(w, "rtt_ms", pr.rtt * 1e3, 3);
	yw_kdbl(w, "load_wait_ms", pr.load_wait * 1e3, 3);
	yw_kdbl(w, "slowdown_ms", pr.slowdown * 1e3, 3);
	yw_kdbl(w, "load_s", pr.load, 3);
	yw_kdbl(w, "completion_s", pr.completion, 3);
	if (why != NULL)
		yaml_why(w, s, &why[i]);
	yw_end(w);
}

int
plan_yaml(FILE *f, struct sched *s, const struct place_why *why)
{
	struct predictor p;
	struct totals tot;
	struct yw *w;
	const char *text;
	size_t len;
	int i, v, rc = -1;

	if (predict_init(&p, s) == -1)
		return -1;
	if ((w = yw_new()) == NULL) {
		predict_free(&p);
		return -1;
	}
	totals(&p, &tot);
	yw_map(w);
	yw_key(w, "plan");
	if (tot.placed == 0)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].server >= 0)
			yaml_task(w, &p, i, why);
	yw_end(w);

	yw_key(w, "unplaced");
	if (tot.placed == s->ntasks)
		yw_fseq(w);
	else
		yw_seq(w);
	for (i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].server >= 0)
			continue;
		yw_map(w);
		yw_kstr(w, "task", s->tasks[i].name);
		yw_kstr(w, "client", s->clients[s->tasks[i].client].name);
		yw_kstr(w, "reason", s->tasks[i].why);
		yw_end(w);
	}
	yw_end(w);

	yw_key(w, "servers");
	yw_seq(w);
	for (v = 0; v < s->nservers; v++) {
		yw_map(w);
		yw_kstr(w, "server", s->servers[v].name);
		yw_kint(w, "tasks", p.sv[v].ntasks);
		yw_kint(w, "clients", s->servers[v].nclients);
		yw_kdbl(w, "gpu_load", gpu_load(&p, v), 3);
		yw_kdbl(w, "up_load", share(p.sv[v].up, p.sv[v].cap_up), 3);
		yw_kdbl(w, "down_load", share(p.sv[v].down, p.sv[v].cap_down),
		    3);
		yw_key(w, "memory");
		yw_uint(w, p.sv[v].mem);
		yw_key(w, "memory_free");
		yw_uint(w, s->servers[v].mem_free);
		yw_end(w);
	}
	yw_end(w);

	yw_key(w, "summary");
	yw_map(w);
	yw_kint(w, "tasks", s->ntasks);
	yw_kint(w, "placed", tot.placed);
	yw_kint(w, "unplaced", s->ntasks - tot.placed);
	yw_kdbl(w, "mean_latency_ms", tot.requests > 0 ?
	    tot.latency / tot.requests * 1e3 : 0, 3);
	yw_end(w);
	yw_end(w);

	if ((text = yw_finish(w, &len)) != NULL &&
	    fwrite(text, 1, len, f) == len)
		rc = 0;
	yw_free(w);
	predict_free(&p);
	return rc;
}

/* The widest name in a column, at least the header's. */
static int
width(const struct sched *s, int what, int min)
{
	const char *name;
	int i, n = min;

	for (i = 0; i < (what == 2 ? s->nservers : s->ntasks); i++) {
		if (what == 0)
			name = s->tasks[i].name;
		else if (what == 1)
			name = s->clients[s->tasks[i].client].name;
		else
			name = s->servers[i].name;
		if ((int)strlen(name) > n)
			n = (int)strlen(name);
	}
	return n;
}

int
plan_table(FILE *f, struct sched *s, const struct place_why *why)
{
	const struct place_why *x;
	const struct sched_task *t;
	struct predictor p;
	struct totals tot;
	struct pred pr;
	char load[32], mem[32], free_[32];
	int i, j, v, wt, wc, ws;

	if (predict_init(&p, s) == -1)
		return -1;
	totals(&p, &tot);
	wt = width(s, 0, 4);
	wc = width(s, 1, 6);
	ws = width(s, 2, 6);
	fprintf(f, "%-*s  %-*s  %-*s  %10s  %9s  %9s  %9s  %9s  %9s  %9s  "
	    "%s\n", wt, "TASK", wc, "CLIENT", ws, "SERVER", "LATENCY",
	    "TRANSFER", "QUEUE", "COMPUTE", "RTT", "WEIGHTS", "SLOWDOWN",
	    "LOAD");
	for (i = 0; i < s->ntasks; i++) {
		t = &s->tasks[i];
		if (t->server < 0) {
			fprintf(f, "%-*s  %-*s  %-*s  unplaced: %s\n", wt,
			    t->name, wc, s->clients[t->client].name, ws, "-",
			    t->why);
			continue;
		}
		predict_task(&p, i, &pr);
		if (pr.cached)
			snprintf(load, sizeof load, "cached");
		else
			snprintf(load, sizeof load, "%.1f s", pr.load);
		fprintf(f, "%-*s  %-*s  %-*s  %10.3f  %9.3f  %9.3f  %9.3f  "
		    "%9.3f  %9.3f  %9.3f  %s\n", wt, t->name, wc,
		    s->clients[t->client].name, ws, s->servers[t->server].name,
		    pr.latency * 1e3, pr.transfer * 1e3, pr.queue * 1e3,
		    pr.compute * 1e3, pr.rtt * 1e3, pr.load_wait * 1e3,
		    pr.slowdown * 1e3, load);
		if (t->from >= 0 && t->from != t->server)
			fprintf(f, "  moved from %s\n",
			    s->servers[t->from].name);
		if (why == NULL)
			continue;
		x = &why[i];
		fprintf(f, "  why: %s\n", x->reason);
		for (j = 0; j < x->nexcluded; j++)
			fprintf(f, "  not %s: %s\n",
			    s->servers[x->excluded[j]].name,
			    x->excluded_why[j]);
	}
	fprintf(f, "\n%-*s  %5s  %8s  %7s  %9s  %s\n", ws, "SERVER", "TASKS",
	    "GPU LOAD", "UP LOAD", "DOWN LOAD", "MEMORY (PLAN/FREE)");
	for (v = 0; v < s->nservers; v++)
		fprintf(f, "%-*s  %5d  %8.3f  %7.3f  %9.3f  %s / %s\n", ws,
		    s->servers[v].name, p.sv[v].ntasks, gpu_load(&p, v),
		    share(p.sv[v].up, p.sv[v].cap_up),
		    share(p.sv[v].down, p.sv[v].cap_down),
		    fmt_size(p.sv[v].mem, mem, sizeof mem),
		    fmt_size(s->servers[v].mem_free, free_, sizeof free_));
	fprintf(f, "\n%d of %d tasks placed; mean latency %.3f ms per "
	    "request\n", tot.placed, s->ntasks, tot.requests > 0 ?
	    tot.latency / tot.requests * 1e3 : 0);
	predict_free(&p);
	return ferror(f) ? -1 : 0;
}
