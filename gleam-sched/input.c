/*
 * The one-shot inputs: servers.yaml (gleam-serve status documents with
 * speed and models added), links.yaml (gleam-probe -o yaml documents, one
 * per client, under the client's name) and tasks.yaml.  gleam-sched(1)
 * documents every key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgtab.h"
#include "input.h"
#include "parse.h"
#include "proto.h"
#include "status.h"

static cfg_fn	server_models, server_address;

/*
 * What a server's entry adds to the keys of a status (status_keys in
 * lib/common/status.c), read in this order after the status.
 */
#define F(f)	CFG_FIELD(struct sched_server, f)
static const struct cfg_key server_rows[] = {
	{ "speed",	CFG_DBL,	F(speed), .lo = 0.001, .hi = 1000 },
	{ "models",	CFG_FUNC,	F(models), .fn = server_models },
	{ "queued",	CFG_DURATION,	F(queued) },
	{ "address",	CFG_FUNC,	F(address), .fn = server_address },
	{ "medium",	CFG_NONE },	/* get_medium */
	{ NULL }
};
#undef F

/*
 * A task's keys, read in this order; name, client, model and model_size
 * come first (task_read), server and movable last (task_running).
 */
#define F(f)	CFG_FIELD(struct sched_task, f)
static const struct cfg_key task_rows[] = {
	{ "name",	CFG_NONE },
	{ "client",	CFG_NONE },
	{ "model",	CFG_NONE },
	{ "model_size",	CFG_NONE },
	{ "memory",	CFG_SIZE,	F(memory) },
	{ "requests",	CFG_INT,	F(requests),
	    .flags = CFG_REQUIRED | CFG_ASDBL, .min = 1, .max = 1000000000 },
	{ "rate",	CFG_DBL,	F(rate), .flags = CFG_REQUIRED,
	    .lo = 1e-6, .hi = 1e6 },
	{ "burstiness",	CFG_DBL,	F(burst), .lo = 0, .hi = 1000 },
	{ "round_trips", CFG_DBL,	F(round_trips), .lo = 0, .hi = 1e6 },
	{ "gpu_time",	CFG_DURATION,	F(gpu_time),
	    .flags = CFG_REQUIRED | CFG_GTMIN | CFG_SAYVAL,
	    .why = "must be more than 0" },
	{ "input",	CFG_SIZE,	F(in), .flags = CFG_REQUIRED | CFG_ASDBL },
	{ "output",	CFG_SIZE,	F(out), .flags = CFG_REQUIRED | CFG_ASDBL },
	{ "window",	CFG_INT,	F(window), .min = 1, .max = 1000000 },
	{ "server",	CFG_NONE },
	{ "movable",	CFG_NONE },
	{ NULL }
};
#undef F

/* The document's root, which must be a mapping with only these keys. */
static yaml_node_t *
root_map(struct ydoc *d, const char *const *keys, struct yerr *err)
{
	yaml_node_t *root = ydoc_root(d);

	if (root == NULL) {
		snprintf(err->msg, sizeof err->msg, "%s: empty document",
		    d->name);
		return NULL;
	}
	if (keys != NULL &&
	    ymap_check_keys(d, root, "document", keys, err) == -1)
		return NULL;
	if (root->type != YAML_MAPPING_NODE) {
		yerr_at(d, root, "document", err, "expected a mapping");
		return NULL;
	}
	return root;
}

/* The value of a key that must be there. */
static yaml_node_t *
need(struct ydoc *d, yaml_node_t *map, const char *key, struct yerr *err)
{
	yaml_node_t *n = ymap_get(d, map, key);

	if (n == NULL)
		yerr_at(d, map, key, err, "missing");
	return n;
}

static int
get_name(struct ydoc *d, yaml_node_t *n, const char *key, char *out,
    struct yerr *err)
{
	if (yget_str(d, n, key, out, SCHED_NAME_MAX, err) == -1)
		return -1;
	if (*out == '\0')
		return yerr_at(d, n, key, err, "empty");
	return 0;
}

/* The models a server holds besides those its cache reports. */
static int
server_models(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct sched_server *sv = base;
	char name[SCHED_NAME_MAX];
	size_t i;

	if (yis_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return yerr_at(d, n, "models", err, "expected a sequence of "
		    "model names");
	for (i = 0; i < yseq_len(n); i++) {
		if (get_name(d, yseq_get(d, n, i), "models", name, err) == -1)
			return -1;
		if (sched_model_add(sv, name) == -1)
			return yerr_at(d, n, "models", err, "more than %d "
			    "models", SCHED_MAX_MODELS);
	}
	return 0;
}

/* host:port, the host required. */
static int
server_address(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct sched_server *sv = base;
	char host[SCHED_ADDR_MAX];
	const char *why;
	int port = PROTO_DEFAULT_PORT;

	if (yget_str(d, n, "address", sv->address, sizeof sv->address,
	    err) == -1)
		return -1;
	if (parse_hostport(sv->address, host, sizeof host, &port,
	    &why) == -1 || (host[0] == '\0' && (why = "no host")))
		return yerr_at(d, n, "address", err, "%s: %s", sv->address,
		    why);
	return 0;
}

/* An optional channel name: the medium's number, or 0. */
static int
get_medium(struct sched *s, struct ydoc *d, yaml_node_t *map, int *out,
    struct yerr *err)
{
	char name[SCHED_NAME_MAX];
	yaml_node_t *n;

	*out = 0;
	if ((n = ymap_get(d, map, "medium")) == NULL || yis_null(n))
		return 0;
	if (get_name(d, n, "medium", name, err) == -1)
		return -1;
	if ((*out = sched_medium(s, name)) == -1)
		return yerr_at(d, n, "medium", err, "out of memory");
	return 0;
}

/* One server: a status, its speed, resident models and channel. */
static int
server_read(struct sched *s, struct ydoc *d, yaml_node_t *n,
    struct yerr *err)
{
	struct sched_server *sv = &s->servers[s->nservers];
	struct server_status st;
	double util = 0;
	int i, nutil = 0, other;

	if (cfg_check(d, n, "servers", server_rows, status_keys, err) == -1 ||
	    status_read(d, n, &st, err) == -1)
		return -1;
	memset(sv, 0, sizeof *sv);
	sv->line = ynode_line(n);
	if (st.host[0] == '\0' || strlen(st.host) >= sizeof sv->name) {
		status_free(&st);
		return yerr_at(d, ymap_get(d, n, "host"), "host", err, "%s",
		    st.host[0] == '\0' ? "empty" : "name too long");
	}
	memcpy(sv->name, st.host, strlen(st.host) + 1);
	if ((other = sched_server_find(s, sv->name)) >= 0) {
		status_free(&st);
		return yerr_at(d, ymap_get(d, n, "host"), "host", err,
		    "%s: given twice (also line %d)", sv->name,
		    s->servers[other].line);
	}
	sv->ngpus = st.ngpus;
	for (i = 0; i < st.ngpus; i++) {
		sv->mem_free += st.gpus[i].memory_free;
		if (st.gpus[i].memory_free > sv->gpu_free_max)
			sv->gpu_free_max = st.gpus[i].memory_free;
		if (st.gpus[i].utilization >= 0) {
			util += st.gpus[i].utilization;
			nutil++;
		}
	}
	sv->background = nutil > 0 ? util / nutil / 100 : 0;
	sv->port = st.port_bps;
	/* gleam-probe's own connection is in the status it read. */
	for (i = 0; i < st.nclients; i++)
		if (strcmp(st.clients[i].name, "gleam-probe") != 0)
			sv->nclients++;
	/* The models its cache holds whole (gleam-serve(8)), with any the
	 * file adds below. */
	for (i = 0; i < st.cache.nmodels; i++)
		if (sched_model_add(sv, st.cache.models[i]) == -1) {
			status_free(&st);
			return yerr_at(d, ymap_get(d, n, "cache"), "cache", err,
			    "more than %d models", SCHED_MAX_MODELS);
		}
	status_free(&st);
	sv->speed = 1;
	snprintf(sv->address, sizeof sv->address, "%s:%d", sv->name,
	    PROTO_DEFAULT_PORT);
	s->nservers++;
	if (cfg_fill(d, n, server_rows, sv, err) == -1)
		return -1;
	return get_medium(s, d, n, &sv->medium, err);
}

int
input_servers(struct sched *s, const char *path, struct yerr *err)
{
	static const char *const keys[] = { "servers", NULL };
	struct ydoc d;
	yaml_node_t *root, *seq;
	size_t i, n;
	int rc = -1;

	if (ydoc_load_file(&d, path, err) == -1)
		return -1;
	if ((root = root_map(&d, keys, err)) == NULL ||
	    (seq = need(&d, root, "servers", err)) == NULL)
		goto out;
	if (seq->type != YAML_SEQUENCE_NODE) {
		yerr_at(&d, seq, "servers", err, "expected a sequence");
		goto out;
	}
	if ((n = yseq_len(seq)) == 0) {
		yerr_at(&d, seq, "servers", err, "empty: no server to place "
		    "tasks on");
		goto out;
	}
	if (n > SCHED_MAX_SERVERS) {
		yerr_at(&d, seq, "servers", err, "more than %d servers",
		    SCHED_MAX_SERVERS);
		goto out;
	}
	if ((s->servers = calloc(n, sizeof *s->servers)) == NULL) {
		yerr_at(&d, seq, "servers", err, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (server_read(s, &d, yseq_get(&d, seq, i), err) == -1)
			goto out;
	rc = 0;
out:
	ydoc_free(&d);
	return rc;
}

/* A probe that failed: the link is down, and we keep why. */
static void
probe_failed(struct sched *s, struct ydoc *d, yaml_node_t *n, int client,
    const char *server)
{
	struct sched_link *l;
	yaml_node_t *e;
	const char *why;
	int v;

	if ((v = sched_server_find(s, server)) < 0)
		return;	/* probably down for good: no reason to refuse */
	l = sched_link(s, client, v);
	if (l->ok)
		return;
	e = ymap_get(d, n, "error");
	why = yscalar(e) != NULL && *yscalar(e) != '\0' ? yscalar(e) :
	    "probe failed";
	snprintf(l->why, sizeof l->why, "%s", why);
}

static int
probe_rate(struct ydoc *d, yaml_node_t *n, const char *key, double *bps,
    struct yerr *err)
{
	yaml_node_t *v;
	double mbit;

	if ((v = need(d, n, key, err)) == NULL)
		return -1;
	if (yis_null(v))
		return yerr_at(d, v, key, err, "null: measured with gleam-probe "
		    "-t 0, which skips the throughput test");
	if (yget_dbl(d, v, key, 1e-6, 1e9, &mbit, err) == -1)
		return -1;
	*bps = mbit * 1e6;
	return 0;
}

/* One entry of a client's probes. */
static int
probe_read(struct sched *s, struct ydoc *d, yaml_node_t *n, int client,
    int *lines, const char *servers_path, struct yerr *err)
{
	char server[SCHED_NAME_MAX], name[SCHED_NAME_MAX];
	struct sched_link *l;
	yaml_node_t *v, *rtt, *namen;
	double ms;
	int ok, sv;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "probes", err, "expected a mapping");
	if ((v = need(d, n, "server", err)) == NULL ||
	    get_name(d, v, "server", server, err) == -1 ||
	    (v = need(d, n, "ok", err)) == NULL ||
	    yget_bool(d, v, "ok", &ok, err) == -1)
		return -1;
	if (!ok) {
		probe_failed(s, d, n, client, server);
		return 0;
	}
	/* The server's own name; the address it was probed at if absent. */
	name[0] = '\0';
	if ((namen = ymap_get(d, n, "name")) != NULL && !yis_null(namen) &&
	    get_name(d, namen, "name", name, err) == -1)
		return -1;
	sv = name[0] != '\0' ? sched_server_find(s, name) : -1;
	if (sv < 0)
		sv = sched_server_find(s, server);
	if (sv < 0) {
		if (name[0] != '\0')
			return yerr_at(d, namen, "name", err, "%s: unknown "
			    "server (not in %s)", name, servers_path);
		return yerr_at(d, ymap_get(d, n, "server"), "server", err,
		    "%s: unknown server (not in %s)", server, servers_path);
	}
	l = sched_link(s, client, sv);
	if (l->ok)
		return yerr_at(d, n, "server", err, "%s: probed twice from %s "
		    "(also line %d)", s->servers[sv].name,
		    s->clients[client].name, lines[sv]);
	if ((rtt = need(d, n, "rtt_ms", err)) == NULL)
		return -1;
	if (rtt->type != YAML_MAPPING_NODE)
		return yerr_at(d, rtt, "rtt_ms", err, "expected a mapping");
	if ((v = need(d, rtt, "median", err)) == NULL ||
	    yget_dbl(d, v, "median", 0, 1e7, &ms, err) == -1 ||
	    probe_rate(d, n, "up_mbit_s", &l->up, err) == -1 ||
	    probe_rate(d, n, "down_mbit_s", &l->down, err) == -1)
		return -1;
	l->rtt = ms / 1e3;
	l->ok = 1;
	l->why[0] = '\0';
	lines[sv] = ynode_line(n);
	return 0;
}

/* One client: its name and what gleam-probe printed on it. */
static int
client_read(struct sched *s, struct ydoc *d, yaml_node_t *key,
    yaml_node_t *doc, int *lines, const char *servers_path,
    struct yerr *err)
{
	static const char *const keys[] = { "probes", "medium", NULL };
	struct sched_client *c = &s->clients[s->nclients];
	yaml_node_t *seq;
	size_t i;

	if (get_name(d, key, "client", c->name, err) == -1)
		return -1;
	if (strcmp(c->name, "probes") == 0 && doc != NULL &&
	    doc->type == YAML_SEQUENCE_NODE)
		return yerr_at(d, key, "probes", err, "a gleam-probe document "
		    "goes under the name of the client that ran it");
	if (sched_client_find(s, c->name) >= 0)
		return yerr_at(d, key, c->name, err, "client given twice");
	if (ymap_check_keys(d, doc, c->name, keys, err) == -1 ||
	    get_medium(s, d, doc, &c->medium, err) == -1 ||
	    (seq = need(d, doc, "probes", err)) == NULL)
		return -1;
	if (seq->type != YAML_SEQUENCE_NODE && !yis_null(seq))
		return yerr_at(d, seq, "probes", err, "expected a sequence");
	s->nclients++;
	for (i = 0; i < yseq_len(seq); i++)
		if (probe_read(s, d, yseq_get(d, seq, i), s->nclients - 1,
		    lines, servers_path, err) == -1)
			return -1;
	return 0;
}

int
input_links(struct sched *s, const char *path, const char *servers_path,
    struct yerr *err)
{
	struct ydoc d;
	yaml_node_t *root, *key, *doc;
	size_t i, n;
	int *lines = NULL, rc = -1;

	if (ydoc_load_file(&d, path, err) == -1)
		return -1;
	if ((root = root_map(&d, NULL, err)) == NULL)
		goto out;
	if ((n = ymap_len(root)) > SCHED_MAX_CLIENTS) {
		yerr_at(&d, root, "document", err, "more than %d clients",
		    SCHED_MAX_CLIENTS);
		goto out;
	}
	s->clients = calloc(n + 1, sizeof *s->clients);
	s->links = calloc((n + 1) * (size_t)s->nservers, sizeof *s->links);
	lines = calloc((size_t)s->nservers + 1, sizeof *lines);
	if (s->clients == NULL || s->links == NULL || lines == NULL) {
		yerr_at(&d, root, "document", err, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		doc = ymap_pair(&d, root, i, NULL, &key);
		memset(lines, 0, (size_t)s->nservers * sizeof *lines);
		if (client_read(s, &d, key, doc, lines, servers_path,
		    err) == -1)
			goto out;
	}
	rc = 0;
out:
	free(lines);
	ydoc_free(&d);
	return rc;
}

/* The model's identity and size: both or neither. */
static int
task_model(struct ydoc *d, yaml_node_t *n, struct sched_task *t,
    struct yerr *err)
{
	yaml_node_t *m = ymap_get(d, n, "model");
	yaml_node_t *z = ymap_get(d, n, "model_size");

	if (m == NULL && z == NULL)
		return 0;
	if (m == NULL)
		return yerr_at(d, n, "model", err, "missing (model_size is "
		    "given)");
	if (z == NULL)
		return yerr_at(d, n, "model_size", err, "missing (model is "
		    "given)");
	if (get_name(d, m, "model", t->model, err) == -1 ||
	    yget_size(d, z, "model_size", &t->model_size, err) == -1)
		return -1;
	return 0;
}

/*
 * A task that runs already: its server, whether the plan may move it.
 * Its server's status counted its memory as used, and its weights are
 * there: the memory is given back (the plan counts it) and the weights
 * made resident.
 */
static int
task_running(struct sched *s, struct ydoc *d, yaml_node_t *n,
    struct sched_task *t, struct yerr *err)
{
	struct sched_server *sv;
	char name[SCHED_NAME_MAX];
	yaml_node_t *v, *m;
	int movable = 0;

	m = ymap_get(d, n, "movable");
	if ((v = ymap_get(d, n, "server")) == NULL) {
		if (m != NULL)
			return yerr_at(d, m, "movable", err, "only with "
			    "server");
		return 0;
	}
	if (get_name(d, v, "server", name, err) == -1)
		return -1;
	if ((t->server = sched_server_find(s, name)) < 0)
		return yerr_at(d, v, "server", err, "%s: unknown server", name);
	if (!sched_link(s, t->client, t->server)->ok)
		return yerr_at(d, v, "server", err, "%s: %s has no link to it",
		    name, s->clients[t->client].name);
	if (m != NULL && yget_bool(d, m, "movable", &movable, err) == -1)
		return -1;
	t->from = t->server;
	t->fixed = !movable;
	sv = &s->servers[t->server];
	sv->mem_free += t->memory;
	sv->gpu_free_max += t->memory;
	if (t->model[0] != '\0' && sched_model_add(sv, t->model) == -1)
		return yerr_at(d, v, "server", err, "out of memory");
	return 0;
}

static int
task_read(struct sched *s, struct ydoc *d, yaml_node_t *n,
    const char *links_path, struct yerr *err)
{
	struct sched_task *t = &s->tasks[s->ntasks];
	char client[SCHED_NAME_MAX];
	yaml_node_t *v;
	int other;

	memset(t, 0, sizeof *t);
	t->server = t->from = -1;
	t->burst = 1;
	t->round_trips = 1;
	t->line = ynode_line(n);
	if (cfg_check(d, n, "tasks", task_rows, NULL, err) == -1 ||
	    (v = need(d, n, "name", err)) == NULL ||
	    get_name(d, v, "name", t->name, err) == -1)
		return -1;
	if ((other = sched_task_find(s, t->name)) >= 0)
		return yerr_at(d, v, "name", err, "%s: given twice (also line "
		    "%d)", t->name, s->tasks[other].line);
	if ((v = need(d, n, "client", err)) == NULL ||
	    get_name(d, v, "client", client, err) == -1)
		return -1;
	if ((t->client = sched_client_find(s, client)) < 0)
		return yerr_at(d, v, "client", err, "%s: unknown client (not "
		    "in %s)", client, links_path);
	if (task_model(d, n, t, err) == -1)
		return -1;
	if (cfg_fill(d, n, task_rows, t, err) == -1)
		return -1;
	if (task_running(s, d, n, t, err) == -1)
		return -1;
	s->ntasks++;
	return 0;
}

int
input_tasks(struct sched *s, const char *path, const char *links_path,
    struct yerr *err)
{
	static const char *const keys[] = { "tasks", NULL };
	struct ydoc d;
	yaml_node_t *root, *seq;
	size_t i, n;
	int rc = -1;

	if (ydoc_load_file(&d, path, err) == -1)
		return -1;
	if ((root = root_map(&d, keys, err)) == NULL ||
	    (seq = need(&d, root, "tasks", err)) == NULL)
		goto out;
	if (seq->type != YAML_SEQUENCE_NODE && !yis_null(seq)) {
		yerr_at(&d, seq, "tasks", err, "expected a sequence");
		goto out;
	}
	if ((n = yseq_len(seq)) > SCHED_MAX_TASKS) {
		yerr_at(&d, seq, "tasks", err, "more than %d tasks",
		    SCHED_MAX_TASKS);
		goto out;
	}
	if ((s->tasks = calloc(n + 1, sizeof *s->tasks)) == NULL) {
		yerr_at(&d, seq, "tasks", err, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (task_read(s, &d, yseq_get(&d, seq, i), links_path,
		    err) == -1)
			goto out;
	rc = 0;
out:
	ydoc_free(&d);
	return rc;
}
