/*
 * The one-shot inputs: servers.yaml (gleam-serve status documents with
 * speed and models added; an entry of host and the added keys alone takes
 * its status from a probe in the links; or a gleam-probe -o yaml document,
 * whose statuses are the servers), links.yaml (gleam-probe -o yaml
 * documents, one per client, under the client's name; or one such
 * document by itself) and tasks.yaml.  gleam-sched(1) documents every key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgtab.h"
#include "input.h"
#include "parse.h"
#include "proto.h"
#include "status.h"
#include "util.h"

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

/*
 * One server: a status, its speed, resident models and channel.  The
 * status is at sn in sd: the entry itself (n in d), a probe's in the
 * links document (an entry that gives only what the probe cannot know),
 * or a probe's in a gleam-probe document read as the servers (n NULL).
 * probed is the address the probe reached it at, or NULL.
 */
static int
server_read(struct sched *s, struct ydoc *d, yaml_node_t *n, struct ydoc *sd,
    yaml_node_t *sn, const char *probed, struct yerr *err)
{
	struct sched_server *sv = &s->servers[s->nservers];
	struct server_status st;
	char host[SCHED_ADDR_MAX];
	const char *why;
	double util = 0;
	int i, nutil = 0, other, port;

	if (n != NULL &&
	    cfg_check(d, n, "servers", server_rows, status_keys, err) == -1)
		return -1;
	if (status_read(sd, sn, &st, err) == -1)
		return -1;
	memset(sv, 0, sizeof *sv);
	sv->line = ynode_line(n != NULL ? n : sn);
	if (st.host[0] == '\0' || strlen(st.host) >= sizeof sv->name) {
		status_free(&st);
		return yerr_at(sd, ymap_get(sd, sn, "host"), "host", err, "%s",
		    st.host[0] == '\0' ? "empty" : "name too long");
	}
	memcpy(sv->name, st.host, strlen(st.host) + 1);
	if ((other = sched_server_find(s, sv->name)) >= 0) {
		status_free(&st);
		return yerr_at(sd, ymap_get(sd, sn, "host"), "host", err,
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
			return yerr_at(sd, ymap_get(sd, sn, "cache"), "cache",
			    err, "more than %d models", SCHED_MAX_MODELS);
		}
	sv->speed = 1;
	/*
	 * Where it is reached: the entry's address, else the status' (the
	 * server's own word), else where the probe reached it, else its
	 * name at the default port.
	 */
	port = PROTO_DEFAULT_PORT;
	if (st.address[0] != '\0' && (parse_hostport(st.address, host,
	    sizeof host, &port, &why) == -1 || (host[0] == '\0' &&
	    (why = "no host")))) {
		status_free(&st);
		return yerr_at(sd, ymap_get(sd, sn, "address"), "address", err,
		    "%s: %s", st.address, why);
	}
	if (st.address[0] != '\0')
		snprintf(sv->address, sizeof sv->address, "%s", st.address);
	else if (probed != NULL)
		snprintf(sv->address, sizeof sv->address, "%s", probed);
	else
		snprintf(sv->address, sizeof sv->address, "%s:%d", sv->name,
		    PROTO_DEFAULT_PORT);
	status_free(&st);
	s->nservers++;
	if (n == NULL)
		return 0;
	if (cfg_fill(d, n, server_rows, sv, err) == -1)
		return -1;
	return get_medium(s, d, n, &sv->medium, err);
}

/* A gleam-probe document: its root maps probes to a sequence. */
static int
probe_doc(struct ydoc *d, yaml_node_t *root)
{
	yaml_node_t *p;

	return root != NULL && root->type == YAML_MAPPING_NODE &&
	    (p = ymap_get(d, root, "probes")) != NULL &&
	    (p->type == YAML_SEQUENCE_NODE || yis_null(p));
}

/* A probe that reached its server and read its status: the status. */
static yaml_node_t *
probe_status(struct ydoc *d, yaml_node_t *p, const char **probed)
{
	yaml_node_t *st, *v;
	struct yerr ignored;
	int ok;

	if (p == NULL || p->type != YAML_MAPPING_NODE ||
	    (v = ymap_get(d, p, "ok")) == NULL ||
	    yget_bool(d, v, "ok", &ok, &ignored) == -1 || !ok ||
	    (st = ymap_get(d, p, "status")) == NULL ||
	    st->type != YAML_MAPPING_NODE)
		return NULL;
	*probed = yscalar(ymap_get(d, p, "server"));
	return st;
}

/* The status of server name that a probe in the links carries. */
static yaml_node_t *
links_status(struct ydoc *ld, const char *name, const char **probed)
{
	yaml_node_t *root = ydoc_root(ld), *seq, *st, *doc;
	const char *host;
	size_t c, i, nc;

	if (root == NULL || root->type != YAML_MAPPING_NODE)
		return NULL;
	nc = probe_doc(ld, root) ? 1 : ymap_len(root);
	for (c = 0; c < nc; c++) {
		doc = probe_doc(ld, root) ? root :
		    ymap_pair(ld, root, c, NULL, NULL);
		if (doc == NULL || doc->type != YAML_MAPPING_NODE ||
		    (seq = ymap_get(ld, doc, "probes")) == NULL ||
		    seq->type != YAML_SEQUENCE_NODE)
			continue;
		for (i = 0; i < yseq_len(seq); i++)
			if ((st = probe_status(ld, yseq_get(ld, seq, i),
			    probed)) != NULL &&
			    (host = yscalar(ymap_get(ld, st, "host"))) !=
			    NULL && strcmp(host, name) == 0)
				return st;
	}
	return NULL;
}

/*
 * The servers a gleam-probe document reached, with the statuses it read:
 * speed 1, no models but those their caches report.
 */
static int
servers_probed(struct sched *s, struct ydoc *d, yaml_node_t *root,
    struct yerr *err)
{
	/* medium, if any, is the client's (as links). */
	static const char *const keys[] = { "client", "probes", "medium",
	    NULL };
	yaml_node_t *seq = ymap_get(d, root, "probes"), *st;
	const char *probed;
	size_t i, n = 0;

	if (ymap_check_keys(d, root, "document", keys, err) == -1)
		return -1;
	for (i = 0; i < yseq_len(seq); i++)
		if (probe_status(d, yseq_get(d, seq, i), &probed) != NULL)
			n++;
	if (n == 0)
		return yerr_at(d, seq, "probes", err, "no server answered "
		    "with its status: no server to place tasks on");
	if (n > SCHED_MAX_SERVERS)
		return yerr_at(d, seq, "probes", err, "more than %d servers",
		    SCHED_MAX_SERVERS);
	if ((s->servers = calloc(n, sizeof *s->servers)) == NULL)
		return yerr_at(d, seq, "probes", err, "out of memory");
	for (i = 0; i < yseq_len(seq); i++)
		if ((st = probe_status(d, yseq_get(d, seq, i), &probed)) !=
		    NULL && server_read(s, d, NULL, d, st, probed, err) == -1)
			return -1;
	return 0;
}

/*
 * An entry of servers.yaml: a whole status with what gleam-sched adds,
 * or (no protocol, no gpus) its host and what gleam-sched adds, the
 * status taken from a probe in the links.
 */
static int
server_entry(struct sched *s, struct ydoc *d, yaml_node_t *n,
    struct ydoc *ld, int *lloaded, const char *links_path, struct yerr *err)
{
	const struct cfg_key *k;
	char name[SCHED_NAME_MAX];
	yaml_node_t *v, *st;
	const char *probed = NULL;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return yerr_at(d, n, "servers", err, "expected a mapping");
	if (ymap_get(d, n, "protocol") != NULL || ymap_get(d, n, "gpus") != NULL)
		return server_read(s, d, n, d, n, NULL, err);
	if (cfg_check(d, n, "servers", server_rows, status_keys, err) == -1)
		return -1;
	/* Half a status is a mistake, not a wish to take the probe's. */
	for (k = status_keys; k->name != NULL; k++)
		if (strcmp(k->name, "host") != 0 &&
		    cfg_find(server_rows, k->name) == NULL &&
		    (v = ymap_get(d, n, k->name)) != NULL)
			return yerr_at(d, v, k->name, err, "a status's key "
			    "without protocol and gpus: give the whole status, "
			    "or host and gleam-sched's keys alone");
	if ((v = need(d, n, "host", err)) == NULL ||
	    get_name(d, v, "host", name, err) == -1)
		return -1;
	if (!*lloaded) {
		if (ydoc_load_file(ld, links_path, err) == -1)
			return -1;
		*lloaded = 1;
	}
	if ((st = links_status(ld, name, &probed)) == NULL)
		return yerr_at(d, v, "host", err, "%s: no status: give it "
		    "here, or probe the server (gleam-probe -o yaml) in %s",
		    name, input_name(links_path));
	return server_read(s, d, n, ld, st, probed, err);
}

const char *
input_name(const char *path)
{
	return strcmp(path, "-") == 0 ? "stdin" : path;
}

int
input_servers(struct sched *s, const char *path, const char *links_path,
    struct yerr *err)
{
	static const char *const keys[] = { "servers", NULL };
	struct ydoc d, ld;
	yaml_node_t *root, *seq;
	size_t i, n;
	int rc = -1, lloaded = 0;

	if (ydoc_load_file(&d, path, err) == -1)
		return -1;
	if (probe_doc(&d, ydoc_root(&d))) {
		rc = servers_probed(s, &d, ydoc_root(&d), err);
		goto out;
	}
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
		if (server_entry(s, &d, yseq_get(&d, seq, i), &ld, &lloaded,
		    links_path, err) == -1)
			goto out;
	rc = 0;
out:
	if (lloaded)
		ydoc_free(&ld);
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
	/*
	 * The server's own name (or its status's host); the address it was
	 * probed at if absent.
	 */
	name[0] = '\0';
	if (((namen = ymap_get(d, n, "name")) == NULL || yis_null(namen)) &&
	    (v = ymap_get(d, n, "status")) != NULL &&
	    v->type == YAML_MAPPING_NODE)
		namen = ymap_get(d, v, "host");
	if (namen != NULL && !yis_null(namen) &&
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

/*
 * One client: its name and what gleam-probe printed on it.  at is the
 * node that names it, for messages.
 */
static int
client_read(struct sched *s, struct ydoc *d, const char *name,
    yaml_node_t *at, yaml_node_t *doc, int *lines, const char *servers_path,
    struct yerr *err)
{
	/* client: gleam-probe's name for it; the one above it wins. */
	static const char *const keys[] = { "client", "probes", "medium",
	    NULL };
	struct sched_client *c = &s->clients[s->nclients];
	yaml_node_t *seq;
	size_t i;

	snprintf(c->name, sizeof c->name, "%s", name);
	if (sched_client_find(s, c->name) >= 0)
		return yerr_at(d, at, c->name, err, "client given twice");
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

/*
 * A gleam-probe document by itself: the links of the client that ran it,
 * named by its client key, else as this host would be (GLEAM_CLIENT, the
 * host name).
 */
static int
client_probed(struct sched *s, struct ydoc *d, yaml_node_t *root, int *lines,
    const char *servers_path, struct yerr *err)
{
	char name[SCHED_NAME_MAX];
	yaml_node_t *v = ymap_get(d, root, "client");

	if (v != NULL && !yis_null(v)) {
		if (get_name(d, v, "client", name, err) == -1)
			return -1;
	} else if (client_name(name, sizeof name, err->msg,
	    sizeof err->msg) == -1)
		return -1;
	return client_read(s, d, name, v != NULL ? v : root, root, lines,
	    servers_path, err);
}

int
input_links(struct sched *s, const char *path, const char *servers_path,
    struct yerr *err)
{
	struct ydoc d;
	yaml_node_t *root, *key, *doc;
	char name[SCHED_NAME_MAX];
	size_t i, n;
	int *lines = NULL, rc = -1, bare;

	if (ydoc_load_file(&d, path, err) == -1)
		return -1;
	if ((root = root_map(&d, NULL, err)) == NULL)
		goto out;
	bare = probe_doc(&d, root);
	if ((n = bare ? 1 : ymap_len(root)) > SCHED_MAX_CLIENTS) {
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
	if (bare) {
		if (client_probed(s, &d, root, lines, input_name(servers_path),
		    err) == -1)
			goto out;
		rc = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		doc = ymap_pair(&d, root, i, NULL, &key);
		memset(lines, 0, (size_t)s->nservers * sizeof *lines);
		if (get_name(&d, key, "client", name, err) == -1 ||
		    client_read(s, &d, name, key, doc, lines,
		    input_name(servers_path), err) == -1)
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
		    "in %s)", client, input_name(links_path));
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
