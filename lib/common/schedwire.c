/* The PLACE message of gleam-sched's daemon: YAML both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgtab.h"
#include "schedwire.h"
#include "yamlio.h"

/* A copy of the writer's text, or NULL. */
static char *
finish(struct yw *w, size_t *len)
{
	const char *text;
	char *out = NULL;

	if (w != NULL && (text = yw_finish(w, len)) != NULL &&
	    (out = malloc(*len + 1)) != NULL) {
		memcpy(out, text, *len);
		out[*len] = '\0';
	}
	yw_free(w);
	return out;
}

char *
place_req_enc(const struct place_req *r, size_t *len)
{
	struct yw *w;

	if ((w = yw_new()) == NULL)
		return NULL;
	yw_map(w);
	yw_kstr(w, "client", r->client);
	yw_kstr(w, "task", r->task);
	/* Absent when false: a daemon older than the key takes the rest. */
	if (r->movable)
		yw_kbool(w, "movable", 1);
	yw_end(w);
	return finish(w, len);
}

char *
place_rep_enc(const struct place_rep *r, size_t *len)
{
	struct yw *w;

	if ((w = yw_new()) == NULL)
		return NULL;
	yw_map(w);
	yw_kstr(w, "task", r->task);
	yw_kstr(w, "client", r->client);
	if (r->error[0] != '\0') {
		yw_kstr(w, "error", r->error);
		if (r->retry_ms > 0)
			yw_kint(w, "retry_ms", r->retry_ms);
		yw_end(w);
		return finish(w, len);
	}
	yw_kstr(w, "server", r->server);
	yw_kstr(w, "address", r->address);
	yw_kdbl(w, "latency_ms", r->latency_ms, 3);
	yw_kstr(w, "reason", r->reason);
	yw_end(w);
	return finish(w, len);
}

/* Names are present, not empty and no longer than their buffers. */
#define NAME(k, f)	{ k, CFG_STR, f, .flags = CFG_REQUIRED | CFG_NONEMPTY }

static const struct cfg_key place_req_keys[] = {
	NAME("client", CFG_FIELD(struct place_req, client)),
	NAME("task", CFG_FIELD(struct place_req, task)),
	{ "movable",	CFG_BOOL, CFG_FIELD(struct place_req, movable) },
	{ NULL }
};

/* A placement; then the keys of the one kind or the other. */
#define F(f)	CFG_FIELD(struct place_rep, f)
static const struct cfg_key place_rep_keys[] = {
	NAME("task", F(task)),
	NAME("client", F(client)),
	NAME("server", F(server)),
	NAME("address", F(address)),
	{ "latency_ms",	CFG_DBL, F(latency_ms), .flags = CFG_REQUIRED,
	    .lo = 0, .hi = 1e15 },
	{ "reason",	CFG_STR, F(reason) },
	{ NULL }
};

static const struct cfg_key place_err_keys[] = {
	NAME("task", F(task)),
	NAME("client", F(client)),
	NAME("error", F(error)),
	{ "retry_ms",	CFG_INT, F(retry_ms), .min = 1, .max = 3600000 },
	{ NULL }
};
#undef F
#undef NAME

static const struct ylimits sw_limits = {
	SCHEDWIRE_DOC_MAX, SCHEDWIRE_DEPTH_MAX, SCHEDWIRE_NODES_MAX
};

/* The document's root mapping with only the known keys. */
static yaml_node_t *
load(struct ydoc *d, const char *what, const void *buf, size_t len,
    const struct cfg_key *tab, struct yerr *err)
{
	yaml_node_t *root;

	if (ydoc_load_mem_lim(d, what, buf, len, &sw_limits, err) == -1)
		return NULL;
	if ((root = ydoc_root(d)) == NULL) {
		snprintf(err->msg, sizeof err->msg, "%s: empty document", what);
		return NULL;
	}
	if (root->type != YAML_MAPPING_NODE) {
		yerr_at(d, root, what, err, "expected a mapping");
		return NULL;
	}
	if (cfg_check(d, root, what, tab, NULL, err) == -1)
		return NULL;
	return root;
}

int
place_req_dec(const void *buf, size_t len, struct place_req *r, char *errbuf,
    size_t errlen)
{
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;
	int rc = -1;

	memset(r, 0, sizeof *r);
	memset(&d, 0, sizeof d);
	if ((root = load(&d, "place", buf, len, place_req_keys,
	    &err)) != NULL &&
	    cfg_fill(&d, root, place_req_keys, r, &err) == 0)
		rc = 0;
	if (rc == -1)
		snprintf(errbuf, errlen, "%s", err.msg);
	ydoc_free(&d);
	return rc;
}

int
place_rep_dec(const void *buf, size_t len, struct place_rep *r, char *errbuf,
    size_t errlen)
{
	const struct cfg_key *tab;
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;
	int rc = -1, e;

	memset(r, 0, sizeof *r);
	memset(&d, 0, sizeof d);
	if (ydoc_load_mem_lim(&d, "placement", buf, len, &sw_limits,
	    &err) == -1)
		goto out;
	root = ydoc_root(&d);
	/* An answer of the one kind or the other, by its keys. */
	e = root != NULL && root->type == YAML_MAPPING_NODE &&
	    ymap_get(&d, root, "error") != NULL;
	ydoc_free(&d);
	tab = e ? place_err_keys : place_rep_keys;
	if ((root = load(&d, "placement", buf, len, tab, &err)) == NULL ||
	    cfg_fill(&d, root, tab, r, &err) == -1)
		goto out;
	rc = 0;
out:
	if (rc == -1)
		snprintf(errbuf, errlen, "%s", err.msg);
	ydoc_free(&d);
	return rc;
}
