/* A graph's listing from the server, decoded and checked (glist.h). */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "glist.h"
#include "proto.h"

void
glist_wire_free(struct glist_wire *w)
{
	free(w->h);
	free(w->type);
	free(w->root);
	free(w->from);
	free(w->to);
	free(w->data);
	free(w->k);
	memset(w, 0, sizeof *w);
}

/* The kernel nodes' parameters, the listing's last part. */
static int
kparams_decode(struct pr *r, struct glist_wire *w)
{
	unsigned char *seen;
	uint32_t k, i, j;

	k = pr_u32(r);
	if (r->bad || k > w->n)
		return -1;
	if (k == 0)
		return 0;
	if ((w->k = calloc(k, sizeof *w->k)) == NULL ||
	    (seen = calloc(w->n, 1)) == NULL)
		return -2;
	for (i = 0; i < k && !r->bad; i++) {
		struct glist_kparams *kp = &w->k[i];

		kp->idx = pr_u32(r);
		kp->fid = pr_u64(r);
		for (j = 0; j < 7; j++)
			kp->geo[j] = pr_u32(r);
		kp->len = pr_u32(r);
		if (r->bad || kp->idx >= w->n || seen[kp->idx] ||
		    w->type[kp->idx] != CU_GRAPH_NODE_TYPE_KERNEL ||
		    (kp->args = pr_take(r, kp->len)) == NULL) {
			r->bad = 1;
			break;
		}
		seen[kp->idx] = 1;
	}
	free(seen);
	w->nk = k;
	return r->bad ? -1 : 0;
}

int
glist_decode(const void *p, size_t len, struct glist_wire *w)
{
	struct pr r;
	uint32_t i, nd;
	int rc = -1;

	memset(w, 0, sizeof *w);
	pr_init(&r, p, len);
	w->n = pr_u32(&r);
	/* 12 bytes a node, 4 a root, 8 an edge: no count past the bytes. */
	if (r.bad || w->n > len / 12)
		goto bad;
	if ((w->h = calloc(w->n + 1, sizeof *w->h)) == NULL ||
	    (w->type = calloc(w->n + 1, sizeof *w->type)) == NULL)
		goto oom;
	for (i = 0; i < w->n; i++) {
		w->h[i] = pr_u64(&r);
		w->type[i] = pr_u32(&r);
	}
	w->nroot = pr_u32(&r);
	if (r.bad || w->nroot > w->n)
		goto bad;
	if ((w->root = calloc(w->nroot + 1, sizeof *w->root)) == NULL)
		goto oom;
	for (i = 0; i < w->nroot; i++)
		if ((w->root[i] = pr_u32(&r)) >= w->n)
			r.bad = 1;
	w->nedge = pr_u32(&r);
	if (r.bad || w->nedge > len / 8)
		goto bad;
	if ((w->from = calloc(w->nedge + 1, sizeof *w->from)) == NULL ||
	    (w->to = calloc(w->nedge + 1, sizeof *w->to)) == NULL)
		goto oom;
	for (i = 0; i < w->nedge; i++) {
		w->from[i] = pr_u32(&r);
		w->to[i] = pr_u32(&r);
		if (w->from[i] >= w->n || w->to[i] >= w->n)
			r.bad = 1;
	}
	if (r.bad)
		goto bad;
	/* Edge data, where an edge has any (none from an older server). */
	if (r.off < r.len && (nd = pr_u32(&r)) != 0) {
		if (nd != w->nedge)
			goto bad;
		if ((w->data = calloc(nd, sizeof *w->data)) == NULL)
			goto oom;
		pr_bytes(&r, w->data, (size_t)nd * sizeof *w->data);
	}
	/* Kernel nodes' parameters (none from an older server). */
	if (!r.bad && r.off < r.len && (rc = kparams_decode(&r, w)) != 0)
		goto out;
	if (r.bad || pr_done(&r) != 0)
		goto bad;
	return 0;
oom:
	rc = -2;
	goto out;
bad:
	rc = -1;
out:
	glist_wire_free(w);
	return rc;
}

/*
 * w as the chain of n kernel nodes a capture of n launches makes,
 * followed from its root: order[i], the listing's index of the i-th node,
 * pos[] the inverse.  0, or -1 where w is not such a chain.
 */
int
glist_chain(const struct glist_wire *w, uint32_t n, uint32_t *order,
    uint32_t *pos)
{
	uint32_t *next, i, cur;
	int rc = -1;

	if (n == 0 || w->n != n || w->nroot != 1 || w->nedge != n - 1 ||
	    (next = malloc(n * sizeof *next)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		next[i] = pos[i] = UINT32_MAX;
	for (i = 0; i < w->nedge; i++) {
		if (next[w->from[i]] != UINT32_MAX)
			goto out;
		next[w->from[i]] = w->to[i];
	}
	for (i = 0, cur = w->root[0]; i < n; i++, cur = next[cur]) {
		if (cur >= n || pos[cur] != UINT32_MAX ||
		    w->type[cur] != CU_GRAPH_NODE_TYPE_KERNEL)
			goto out;
		pos[cur] = i;
		order[i] = cur;
	}
	rc = 0;
out:
	free(next);
	return rc;
}

uint64_t
glist_shape(const struct glist_wire *w, uint64_t (*canon)(uint64_t),
    uint64_t *topo)
{
	XXH3_state_t s, *st = &s;
	uint64_t h, t;
	uint32_t i, v[2];

	if (topo != NULL)
		*topo = 0;
	if (w->n == 0 || w->nk != w->n)
		return 0;
	for (i = 0; i < w->n; i++)
		if (w->type[i] != CU_GRAPH_NODE_TYPE_KERNEL)
			return 0;
	/* Functions an update may change, but each one this client's. */
	for (i = 0; i < w->nk; i++)
		if (canon(w->k[i].fid) == 0)
			return 0;
	XXH3_INITSTATE(st);
	XXH3_64bits_reset(st);
	v[0] = w->n;
	v[1] = w->nroot;
	XXH3_64bits_update(st, v, sizeof v);
	XXH3_64bits_update(st, w->root, (size_t)w->nroot * sizeof *w->root);
	XXH3_64bits_update(st, &w->nedge, sizeof w->nedge);
	XXH3_64bits_update(st, w->from, (size_t)w->nedge * sizeof *w->from);
	XXH3_64bits_update(st, w->to, (size_t)w->nedge * sizeof *w->to);
	t = XXH3_64bits_digest(st);
	v[0] = w->data != NULL;
	XXH3_64bits_update(st, v, sizeof v[0]);
	if (w->data != NULL)
		XXH3_64bits_update(st, w->data,
		    (size_t)w->nedge * sizeof *w->data);
	h = XXH3_64bits_digest(st);
	if (topo != NULL)
		*topo = t != 0 ? t : 1;
	return h != 0 ? h : 1;
}
