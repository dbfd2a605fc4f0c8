/*
 * Unit tests for gleam-sched's predictor and placement (gleam-sched/),
 * built in (they are not in the library), for the daemon's rate limit,
 * lease matching (limit.c) and re-planning (replan.c), and for the PLACE
 * message of its daemon
 * (lib/schedwire.c).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gleam-sched/sched.c"
#include "../../gleam-sched/predict.c"
#include "../../gleam-sched/place.c"
#include "../../gleam-sched/limit.c"
#include "../../gleam-sched/replan.c"
#include "schedwire.h"
#include "t.h"

#define GIB	(1024.0 * 1024 * 1024)

/* n servers of the given speeds, one client on 1 Gbit/s links to all. */
static void
lan(struct sched *s, int n, const double *speed)
{
	int v;

	sched_init(s);
	s->servers = calloc((size_t)n, sizeof *s->servers);
	s->clients = calloc(1, sizeof *s->clients);
	s->links = calloc((size_t)n, sizeof *s->links);
	s->tasks = calloc(16, sizeof *s->tasks);
	s->nservers = n;
	s->nclients = 1;
	snprintf(s->clients[0].name, sizeof s->clients[0].name, "c");
	for (v = 0; v < n; v++) {
		snprintf(s->servers[v].name, sizeof s->servers[v].name, "g%d",
		    v);
		s->servers[v].speed = speed[v];
		s->servers[v].ngpus = 1;
		s->servers[v].mem_free = s->servers[v].gpu_free_max =
		    (uint64_t)(40 * GIB);
		s->links[v].ok = 1;
		s->links[v].rtt = 0.001;
		s->links[v].up = s->links[v].down = 1e9;
	}
}

static struct sched_task *
task(struct sched *s, const char *name, double rate, double gpu_time,
    int window, double requests)
{
	struct sched_task *t = &s->tasks[s->ntasks++];

	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->rate = rate;
	t->gpu_time = gpu_time;
	t->window = window;
	t->requests = requests;
	t->burst = 1;
	t->in = t->out = 1000;
	t->round_trips = 1;
	t->server = -1;
	return t;
}

/* Alone on an idle GPU: no wait; the terms add up to the latency. */
static void
test_alone(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	double speed[] = { 2 };

	lan(&s, 1, speed);
	task(&s, "a", 1, 0.1, 1, 100)->server = 0;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	CHECK(fabs(pr.compute - 0.05) < 1e-12);
	CHECK(fabs(pr.rtt - 0.001) < 1e-12);
	CHECK(pr.queue < 0.005);
	CHECK(fabs(pr.latency - (pr.transfer + pr.queue + pr.compute +
	    pr.rtt + pr.load_wait + pr.slowdown)) < 1e-12);
	CHECK(pr.answered == 100);
	CHECK(pr.cached);
	predict_free(&p);
	sched_free(&s);
}

/*
 * Programs with windows cannot overload a GPU: asking for 3 GPUs' worth,
 * each waits for at most the others' windows, and they get less than
 * they ask.
 */
static void
test_windows_throttle(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	double speed[] = { 1 };
	int i;

	lan(&s, 1, speed);
	for (i = 0; i < 3; i++)
		task(&s, i == 0 ? "a" : i == 1 ? "b" : "c", 10, 0.1, 1,
		    1000)->server = 0;
	CHECK(predict_init(&p, &s) == 0);
	for (i = 0; i < 3; i++) {
		predict_task(&p, i, &pr);
		CHECK(pr.queue > 0.05 && pr.queue <= 2 * 0.1 + 1e-9);
		CHECK(p.x[i] < 10 && p.x[i] > 2);
		CHECK(pr.answered < 1000);
		CHECK(pr.slowdown > 0);
	}
	predict_free(&p);
	/* The same without windows is a backlog that grows. */
	for (i = 0; i < 3; i++)
		s.tasks[i].window = 0;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	CHECK(pr.queue > 10);
	predict_free(&p);
	sched_free(&s);
}

/*
 * Weights that take longer to upload than the session lasts: only the
 * window's requests are sent, they wait for the weights, and the rest
 * are lost at half the horizon each.
 */
static void
test_lost(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	struct sched_task *t;
	double speed[] = { 1 }, horizon;

	lan(&s, 1, speed);
	t = task(&s, "a", 1, 0.01, 2, 10);
	snprintf(t->model, sizeof t->model, "big");
	t->model_size = (uint64_t)(5 * GIB);	/* 43 s at 1 Gbit/s */
	t->server = 0;
	horizon = 10;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	CHECK(!pr.cached);
	CHECK(pr.load > horizon);
	CHECK(pr.answered == 2);
	CHECK(fabs(pr.load_wait - 2 * pr.load / 10) < 1e-9);
	CHECK(fabs(pr.slowdown - 8 * PREDICT_LOST * horizon / 10) < 1e-9);
	predict_free(&p);
	sched_free(&s);
}

/*
 * An upload under way: what is left of it, not the whole, is what a task
 * still waits for, and a task of the same model that joins it waits as
 * long.
 */
static void
test_upload_left(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	struct sched_task *t;
	double speed[] = { 1 }, whole;
	int i;

	lan(&s, 1, speed);
	for (i = 0; i < 2; i++) {
		t = task(&s, i == 0 ? "a" : "b", 1, 0.01, 2, 1000);
		snprintf(t->model, sizeof t->model, "m");
		t->model_size = (uint64_t)(4 * GIB);
		t->server = 0;
	}
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 1, &pr);
	whole = pr.load;
	CHECK(whole > 30 && whole < 40);	/* 4 GiB at 1 Gbit/s */
	predict_free(&p);
	s.tasks[0].model_sent = s.tasks[0].model_size / 4 * 3;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	CHECK(fabs(pr.load - whole / 4) < 1e-6 * whole);
	predict_task(&p, 1, &pr);
	CHECK(fabs(pr.load - whole / 4) < 1e-6 * whole);
	predict_free(&p);
	sched_free(&s);
}

/*
 * While weights upload, the tasks waiting for them send nothing: their
 * requests' traffic does not slow the upload, a cached task's does.
 */
static void
test_upload_share(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	struct sched_task *t;
	double speed[] = { 1 }, alone;

	lan(&s, 1, speed);
	t = task(&s, "a", 50, 0.001, 8, 5000);
	t->in = 1e6;			/* 400 Mbit/s of requests */
	snprintf(t->model, sizeof t->model, "m");
	t->model_size = (uint64_t)GIB;
	t->server = 0;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	alone = GIB * 8 / 1e9;
	CHECK(fabs(pr.load - alone) < 1e-6 * alone);
	predict_free(&p);
	/* A task of resident weights sending as much: 1 / (1 - 0.4). */
	t = task(&s, "b", 50, 0.001, 8, 5000);
	t->in = 1e6;
	snprintf(t->model, sizeof t->model, "r");
	t->model_size = (uint64_t)GIB;
	CHECK(sched_model_add(&s.servers[0], "r") == 0);
	t->server = 0;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	CHECK(fabs(pr.load - alone / 0.6) < 1e-3 * alone);
	predict_free(&p);
	sched_free(&s);
}

/*
 * Two clients uploading to one server at once, a model of 1 GiB each,
 * paths of 1 Gbit/s (the second's rate given).  The server's end is what
 * they share: its port where the admin gives it, else the best path
 * measured to it.  An upload held back by a slower path takes only that
 * path's rate, leaving the rest to the other (max-min fairness).
 */
static double
two_uploads(double rate1, double port)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	struct sched_task *t;
	int c;

	sched_init(&s);
	s.servers = calloc(1, sizeof *s.servers);
	s.clients = calloc(2, sizeof *s.clients);
	s.links = calloc(2, sizeof *s.links);
	s.tasks = calloc(2, sizeof *s.tasks);
	s.nservers = 1;
	s.nclients = 2;
	snprintf(s.servers[0].name, sizeof s.servers[0].name, "g");
	s.servers[0].speed = 1;
	s.servers[0].ngpus = 1;
	s.servers[0].port = port;
	s.servers[0].mem_free = s.servers[0].gpu_free_max =
	    (uint64_t)(40 * GIB);
	for (c = 0; c < 2; c++) {
		snprintf(s.clients[c].name, sizeof s.clients[c].name, "c%d", c);
		s.links[c].ok = 1;
		s.links[c].rtt = 0.001;
		s.links[c].up = s.links[c].down = c == 0 ? 1e9 : rate1;
		t = task(&s, c == 0 ? "a" : "b", 1, 0.01, 1, 100);
		t->client = c;
		snprintf(t->model, sizeof t->model, "m%d", c);
		t->model_size = (uint64_t)GIB;
		t->server = 0;
	}
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	predict_free(&p);
	sched_free(&s);
	return pr.load;
}

static void
test_upload_fair(void)
{
	double alone = GIB * 8 / 1e9;

	/* Equal paths, the server's end unknown: they share 1 Gbit/s. */
	CHECK(fabs(two_uploads(1e9, 0) - 2 * alone) < 1e-3 * alone);
	/* Its port of 10 Gbit/s given: each goes at its own path's rate. */
	CHECK(fabs(two_uploads(1e9, 10e9) - alone) < 1e-3 * alone);
	/* The other held to 200 Mbit/s: this one has 800 of the 1000. */
	CHECK(fabs(two_uploads(2e8, 0) - alone / 0.8) < 1e-2 * alone);
}

/*
 * Headroom: placed among running tasks, the queue terms count GPU work
 * PREDICT_HEADROOM more than it says; a plan of new tasks only does not.
 */
static void
test_headroom(void)
{
	struct sched s;
	struct predictor p;
	struct pred pr;
	double speed[] = { 1, 1 }, plain;

	lan(&s, 2, speed);
	task(&s, "run", 4, 0.1, 0, 1000)->server = 0;
	s.tasks[0].fixed = 1;
	task(&s, "new", 1, 0.1, 0, 100);
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	plain = pr.queue;
	predict_free(&p);
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.headroom == PREDICT_HEADROOM);
	CHECK(s.tasks[0].server == 0 && s.tasks[1].server == 1);
	s.tasks[1].server = -1;
	CHECK(predict_init(&p, &s) == 0);
	predict_task(&p, 0, &pr);
	/* rho 0.52 and requests 30% longer: Kingman's wait doubles. */
	CHECK(pr.queue > plain * 1.9 && pr.queue < plain * 2.3);
	predict_free(&p);
	/* Nothing running: no headroom. */
	s.tasks[0].server = -1;
	s.tasks[0].fixed = 0;
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.headroom == 0);
	sched_free(&s);
}

/* Cache affinity: weights resident on the slower server draw the task. */
static void
test_affinity(void)
{
	struct sched s;
	struct sched_task *t;
	double speed[] = { 4, 1 };

	lan(&s, 2, speed);
	CHECK(sched_model_add(&s.servers[1], "m") == 0);
	t = task(&s, "a", 0.2, 0.5, 1, 50);
	snprintf(t->model, sizeof t->model, "m");
	t->model_size = (uint64_t)(20 * GIB);
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.tasks[0].server == 1);
	/* Without the weights anywhere, the faster GPU wins. */
	sched_model_remove(&s.servers[1], "m");
	s.tasks[0].server = -1;
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.tasks[0].server == 0);
	sched_free(&s);
}

/*
 * The heaviest task first takes the faster server, where the other alone
 * fits: the search of every assignment places both, rather than keep the
 * greedy pass's plan whose cost, one task short, is less.
 */
static void
test_exact_places_all(void)
{
	struct sched s;
	double speed[] = { 4, 1 };

	lan(&s, 2, speed);
	s.servers[0].mem_free = s.servers[0].gpu_free_max =
	    (uint64_t)(10 * GIB);
	s.servers[1].mem_free = s.servers[1].gpu_free_max =
	    (uint64_t)(6 * GIB);
	task(&s, "heavy", 1, 0.5, 1, 100)->memory = (uint64_t)(5 * GIB);
	task(&s, "big", 1, 0.01, 1, 100)->memory = (uint64_t)(8 * GIB);
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.tasks[0].server == 1);
	CHECK(s.tasks[1].server == 0);
	CHECK(s.tasks[1].why[0] == '\0');
	sched_free(&s);
}

/* A server whose status failed takes nothing, and says why. */
static void
test_down(void)
{
	struct sched s;
	char why[SCHED_WHY_MAX];
	double speed[] = { 4, 1 };

	lan(&s, 2, speed);
	task(&s, "a", 1, 0.1, 1, 100);
	s.servers[0].down = 1;
	snprintf(s.servers[0].down_why, sizeof s.servers[0].down_why,
	    "connection refused");
	CHECK(!place_feasible(&s, 0, 0, why, sizeof why));
	CHECK_STR(why, "status: connection refused");
	CHECK(place_plan(&s, NULL) == 0);
	CHECK(s.tasks[0].server == 1);
	sched_free(&s);
}

/*
 * Re-planning running tasks: a movable task on a slow server moves when
 * it saves past the margin, after its stay; a fixed one never; a small
 * gain is not worth a move; the bound holds.
 */
static void
test_replan(void)
{
	struct sched s;
	struct replan_conf cf = { 0.2, 10, 1 };
	struct replan_move mv[2];
	double speed[] = { 1, 4 }, here[3] = { 20, 20, 20 };
	int i;

	lan(&s, 2, speed);
	for (i = 0; i < 3; i++) {
		task(&s, i == 0 ? "a" : i == 1 ? "b" : "c", 1, 0.1, 1, 100);
		s.tasks[i].server = s.tasks[i].from = 0;
	}
	s.tasks[0].fixed = 1;
	/* b and c would both gain; one move at a time. */
	CHECK(replan_decide(&s, here, &cf, mv) == 1);
	CHECK(mv[0].task == 1 || mv[0].task == 2);
	CHECK(mv[0].from == 0 && mv[0].to == 1);
	CHECK(mv[0].after < mv[0].before);
	CHECK(mv[0].cost_after < mv[0].cost_before);
	CHECK(mv[0].saved >= 0.2);
	/* Left where they run. */
	for (i = 0; i < 3; i++)
		CHECK(s.tasks[i].server == 0);
	cf.moves = 2;
	CHECK(replan_decide(&s, here, &cf, mv) == 2);
	CHECK(mv[0].task != 0 && mv[1].task != 0);
	/* Not there long enough. */
	here[1] = here[2] = 5;
	CHECK(replan_decide(&s, here, &cf, mv) == 0);
	here[1] = here[2] = 20;
	/* Alone, with too little to gain: 5% of its compute. */
	s.ntasks = 1;
	s.tasks[0].fixed = 0;
	s.servers[1].speed = 1.05;
	CHECK(replan_decide(&s, here, &cf, mv) == 0);
	cf.margin = 0.01;
	CHECK(replan_decide(&s, here, &cf, mv) == 1);
	CHECK(mv[0].saved > 0.01 && mv[0].saved < 0.2);
	/* Nothing movable: nothing moves. */
	s.ntasks = 3;
	s.servers[1].speed = 4;
	s.tasks[0].fixed = s.tasks[1].fixed = s.tasks[2].fixed = 1;
	CHECK(replan_decide(&s, here, &cf, mv) == 0);
	sched_free(&s);
}

static void
test_wire(void)
{
	struct place_req q;
	struct place_rep r, r2;
	char err[1024], *doc;
	size_t len;

	memset(&r, 0, sizeof r);
	snprintf(r.task, sizeof r.task, "chat");
	snprintf(r.client, sizeof r.client, "laptop1");
	snprintf(r.server, sizeof r.server, "gpu1");
	snprintf(r.address, sizeof r.address, "10.0.0.5:7383");
	snprintf(r.reason, sizeof r.reason, "gpu2: 'queue' \"longer\"");
	r.latency_ms = 12.5;
	CHECK((doc = place_rep_enc(&r, &len)) != NULL);
	CHECK(place_rep_dec(doc, len, &r2, err, sizeof err) == 0);
	CHECK_STR(r2.address, "10.0.0.5:7383");
	CHECK_STR(r2.reason, r.reason);
	CHECK(r2.latency_ms == 12.5);
	CHECK(r2.error[0] == '\0');
	free(doc);
	snprintf(r.error, sizeof r.error, "no room");
	CHECK((doc = place_rep_enc(&r, &len)) != NULL);
	CHECK(strstr(doc, "address") == NULL);
	CHECK(place_rep_dec(doc, len, &r2, err, sizeof err) == 0);
	CHECK_STR(r2.error, "no room");
	free(doc);

	CHECK(place_req_dec("client: a\ntask: b\n", 18, &q, err,
	    sizeof err) == 0);
	CHECK_STR(q.client, "a");
	CHECK(!q.movable);
	/* movable: written only when true, read either way. */
	CHECK((doc = place_req_enc(&q, &len)) != NULL);
	CHECK(strstr(doc, "movable") == NULL);
	free(doc);
	q.movable = 1;
	CHECK((doc = place_req_enc(&q, &len)) != NULL);
	memset(&q, 0, sizeof q);
	CHECK(place_req_dec(doc, len, &q, err, sizeof err) == 0);
	CHECK(q.movable == 1);
	CHECK_STR(q.task, "b");
	free(doc);
	CHECK(place_req_dec("client: a\ntask: b\nmovable: false\n", 33, &q,
	    err, sizeof err) == 0);
	CHECK(q.movable == 0);
	CHECK(place_req_dec("client: a\ntask: b\nmovable: 7\n", 29, &q, err,
	    sizeof err) == -1);
	CHECK(strstr(err, "movable") != NULL);
	CHECK(place_req_dec("client: a\n", 10, &q, err, sizeof err) == -1);
	CHECK_STR(err, "place:1: task: missing");
	CHECK(place_req_dec("client: a\ntask: b\nx: 1\n", 23, &q, err,
	    sizeof err) == -1);
	CHECK(strstr(err, "x") != NULL);
	CHECK(place_req_dec("client: ''\ntask: b\n", 19, &q, err,
	    sizeof err) == -1);
	CHECK(strstr(err, "empty") != NULL);
	CHECK(place_req_dec("- a\n", 4, &q, err, sizeof err) == -1);
	CHECK(place_req_dec("", 0, &q, err, sizeof err) == -1);
	CHECK(place_rep_dec("task: a\nclient: b\nserver: c\n", 28, &r2, err,
	    sizeof err) == -1);
	CHECK(place_rep_dec("task: a\nclient: b\nerror: e\nserver: c\n", 37,
	    &r2, err, sizeof err) == -1);

	/* Busy: the error and when to ask again, both ways. */
	memset(&r, 0, sizeof r);
	snprintf(r.task, sizeof r.task, "-");
	snprintf(r.client, sizeof r.client, "-");
	snprintf(r.error, sizeof r.error, "busy, retry in 250 ms");
	r.retry_ms = 250;
	CHECK((doc = place_rep_enc(&r, &len)) != NULL);
	CHECK(place_rep_dec(doc, len, &r2, err, sizeof err) == 0);
	CHECK(r2.retry_ms == 250);
	CHECK_STR(r2.error, "busy, retry in 250 ms");
	free(doc);
	CHECK(place_rep_dec("task: a\nclient: b\nerror: e\nretry_ms: 0\n", 39,
	    &r2, err, sizeof err) == -1);
	CHECK(place_rep_dec("task: a\nclient: b\nerror: e\n", 27, &r2, err,
	    sizeof err) == 0);
	CHECK(r2.retry_ms == 0);

	/* Bounded as they are parsed: the bytes, the nesting. */
	doc = malloc(64 << 10);
	memset(doc, '[', 64 << 10);
	CHECK(place_req_dec(doc, 64 << 10, &q, err, sizeof err) == -1);
	CHECK_STR(err, "place: more than 4096 bytes");
	CHECK(place_req_dec(doc, 4000, &q, err, sizeof err) == -1);
	CHECK_STR(err, "place:1: nested deeper than 4 levels");
	CHECK(place_rep_dec(doc, 4000, &r2, err, sizeof err) == -1);
	CHECK_STR(err, "placement:1: nested deeper than 4 levels");
	free(doc);
	CHECK(place_req_dec("client: [[a]]\ntask: b\n", 22, &q, err,
	    sizeof err) == -1);
	CHECK_STR(err, "place:1: client: expected a scalar value, not a "
	    "sequence");
}

static void
test_limit(void)
{
	struct limit l;
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	char key[LIMIT_KEY_MAX], h[48];
	int i, ms;

	/* A burst of 3, then one each 100 ms; the others untouched. */
	limit_init(&l, 10, 3);
	for (i = 0; i < 3; i++)
		CHECK(limit_take(&l, "10.0.0.1", 100.0) == 0);
	CHECK((ms = limit_take(&l, "10.0.0.1", 100.0)) == 100);
	CHECK(limit_take(&l, "10.0.0.1", 100.05) == 50);
	CHECK(limit_take(&l, "10.0.0.2", 100.05) == 0);
	CHECK(limit_take(&l, "10.0.0.1", 100.1) == 0);
	CHECK(limit_take(&l, "10.0.0.1", 100.1) > 0);
	/* Full again after a while, and no fuller than the burst. */
	for (i = 0; i < 3; i++)
		CHECK(limit_take(&l, "10.0.0.1", 200.0) == 0);
	CHECK(limit_take(&l, "10.0.0.1", 200.0) > 0);
	/* A clock that goes back gives nothing. */
	CHECK(limit_take(&l, "10.0.0.1", 150.0) > 0);

	/* The table stays bounded; the longest silent goes first. */
	limit_init(&l, 1, 1);
	CHECK(limit_take(&l, "flood", 10.0) == 0);
	CHECK(limit_take(&l, "quiet", 0.5) == 0);
	for (i = 0; i < 10 * LIMIT_SLOTS; i++) {
		snprintf(key, sizeof key, "10.1.%d.%d", i / 256, i % 256);
		(void)limit_take(&l, key, 11.0 + i * 1e-6);
		(void)limit_take(&l, "flood", 11.0 + i * 1e-6);
	}
	CHECK(l.n == LIMIT_SLOTS);
	/* The flooder, heard all along, was never forgotten: still empty. */
	CHECK(limit_take(&l, "flood", 11.1) > 0);
	/* rate 0: no limit. */
	limit_init(&l, 0, 1);
	for (i = 0; i < 1000; i++)
		CHECK(limit_take(&l, "x", 1.0) == 0);

	/* Keys: IPv4, IPv4 mapped, and IPv6 by its /64. */
	memset(&s4, 0, sizeof s4);
	s4.sin_family = AF_INET;
	inet_pton(AF_INET, "192.168.1.7", &s4.sin_addr);
	CHECK_STR(limit_key((struct sockaddr *)&s4, key, sizeof key),
	    "192.168.1.7");
	memset(&s6, 0, sizeof s6);
	s6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::ffff:10.0.0.9", &s6.sin6_addr);
	CHECK_STR(limit_key((struct sockaddr *)&s6, key, sizeof key),
	    "10.0.0.9");
	inet_pton(AF_INET6, "fd00:1:2:3:aaaa:bbbb:cccc:dddd", &s6.sin6_addr);
	CHECK_STR(limit_key((struct sockaddr *)&s6, key, sizeof key),
	    "fd00:1:2:3::/64");
	inet_pton(AF_INET6, "fd00:1:2:3::1", &s6.sin6_addr);
	CHECK_STR(limit_key((struct sockaddr *)&s6, key, sizeof key),
	    "fd00:1:2:3::/64");

	/* Hosts of a status's addresses. */
	CHECK_STR(limit_host("10.0.0.7:5511", h, sizeof h), "10.0.0.7");
	CHECK_STR(limit_host("[fd00::1]:5511", h, sizeof h), "fd00::1");
	CHECK_STR(limit_host("[::ffff:10.0.0.7]:1", h, sizeof h), "10.0.0.7");
	CHECK_STR(limit_host("fd00::1", h, sizeof h), "fd00::1");
	CHECK_STR(limit_host("gpu1", h, sizeof h), "gpu1");
}

static void
test_lease(void)
{
	struct lease_credited cr;
	struct lease_client cl[4];

	memset(&cr, 0, sizeof cr);
	memset(cl, 0, sizeof cl);
	snprintf(cl[0].address, sizeof cl[0].address, "10.0.0.5:4000");
	snprintf(cl[1].address, sizeof cl[1].address, "10.0.0.7:4001");
	snprintf(cl[2].address, sizeof cl[2].address, "10.0.0.7:4002");
	snprintf(cl[3].address, sizeof cl[3].address, "10.0.0.7:4003");
	limit_host(cl[0].address, cl[0].host, sizeof cl[0].host);
	limit_host(cl[1].address, cl[1].host, sizeof cl[1].host);
	limit_host(cl[2].address, cl[2].host, sizeof cl[2].host);
	limit_host(cl[3].address, cl[3].host, sizeof cl[3].host);
	cl[0].since = 100;
	cl[1].since = 50;	/* there before the lease: not its client */
	cl[2].since = 100.05;	/* within the status's precision */
	cl[3].since = 101;
	/* Another host's client ends nothing. */
	CHECK(lease_match("10.0.0.9", 100, cl, 4, &cr) == -1);
	/* One connection, one lease: two leases take two connections. */
	CHECK(lease_match("10.0.0.7", 100.1, cl, 4, &cr) == 2);
	CHECK(lease_match("10.0.0.7", 100.1, cl, 4, &cr) == 3);
	CHECK(lease_match("10.0.0.7", 100.1, cl, 4, &cr) == -1);
	/* The next round lists them again: still credited. */
	CHECK(lease_match("10.0.0.7", 99, cl, 4, &cr) == -1);
	CHECK(lease_match("10.0.0.5", 99, cl, 4, &cr) == 0);
	/* A lease newer than every connection waits for its own. */
	CHECK(lease_match("10.0.0.5", 200, cl, 4, &cr) == -1);
}

int
main(void)
{
	test_alone();
	test_windows_throttle();
	test_lost();
	test_upload_left();
	test_upload_share();
	test_upload_fair();
	test_headroom();
	test_affinity();
	test_exact_places_all();
	test_down();
	test_replan();
	test_wire();
	test_limit();
	test_lease();
	return t_done("test_sched");
}
