/* The PLACE message of gleam-sched's daemon: YAML both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A name: present, not empty, no longer than the buffer. */
static int
get_name(struct ydoc *d, yaml_node_t *m, const char *key, char *out,
    size_t len, struct yerr *err)
{
	yaml_node_t *n;

	if ((n = ymap_get(d, m, key)) == NULL)
		return yerr_at(d, m, key, err, "missing");
	if (yget_str(d, n, key, out, len, err) == -1)
		return -1;
	if (out[0] == '\0')
		return yerr_at(d, n, key, err, "empty");
	return 0;
}

/* The document's root mapping with only the known keys. */
static yaml_node_t *
load(struct ydoc *d, const char *what, const void *buf, size_t len,
    const char *const *keys, struct yerr *err)
{
	yaml_node_t *root;

	if (ydoc_load_mem(d, what, buf, len, err) == -1)
		return NULL;
	if ((root = ydoc_root(d)) == NULL) {
		snprintf(err->msg, sizeof err->msg, "%s: empty document", what);
		return NULL;
	}
	if (root->type != YAML_MAPPING_NODE) {
		yerr_at(d, root, what, err, "expected a mapping");
		return NULL;
	}
	if (ymap_check_keys(d, root, what, keys, err) == -1)
		return NULL;
	return root;
}

int
place_req_dec(const void *buf, size_t len, struct place_req *r, char *errbuf,
    size_t errlen)
{
	static const char *const keys[] = { "client", "task", NULL };
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;
	int rc = -1;

	memset(r, 0, sizeof *r);
	memset(&d, 0, sizeof d);
	if ((root = load(&d, "place", buf, len, keys, &err)) != NULL &&
	    get_name(&d, root, "client", r->client, sizeof r->client,
	    &err) == 0 &&
	    get_name(&d, root, "task", r->task, sizeof r->task, &err) == 0)
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
	static const char *const keys[] = { "task", "client", "server",
	    "address", "latency_ms", "reason", NULL };
	static const char *const ekeys[] = { "task", "client", "error",
	    NULL };
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root, *n;
	int rc = -1, e;

	memset(r, 0, sizeof *r);
	memset(&d, 0, sizeof d);
	if (ydoc_load_mem(&d, "placement", buf, len, &err) == -1)
		goto out;
	root = ydoc_root(&d);
	/* An answer of the one kind or the other, by its keys. */
	e = root != NULL && root->type == YAML_MAPPING_NODE &&
	    ymap_get(&d, root, "error") != NULL;
	ydoc_free(&d);
	if ((root = load(&d, "placement", buf, len, e ? ekeys : keys,
	    &err)) == NULL)
		goto out;
	if (get_name(&d, root, "task", r->task, sizeof r->task, &err) == -1 ||
	    get_name(&d, root, "client", r->client, sizeof r->client,
	    &err) == -1)
		goto out;
	if (e) {
		if (get_name(&d, root, "error", r->error, sizeof r->error,
		    &err) == 0)
			rc = 0;
		goto out;
	}
	if (get_name(&d, root, "server", r->server, sizeof r->server,
	    &err) == -1 ||
	    get_name(&d, root, "address", r->address, sizeof r->address,
	    &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "latency_ms")) == NULL) {
		yerr_at(&d, root, "latency_ms", &err, "missing");
		goto out;
	}
	if (yget_dbl(&d, n, "latency_ms", 0, 1e15, &r->latency_ms,
	    &err) == -1)
		goto out;
	if ((n = ymap_get(&d, root, "reason")) != NULL &&
	    yget_str(&d, n, "reason", r->reason, sizeof r->reason,
	    &err) == -1)
		goto out;
	rc = 0;
out:
	if (rc == -1)
		snprintf(errbuf, errlen, "%s", err.msg);
	ydoc_free(&d);
	return rc;
}
