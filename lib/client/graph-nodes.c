/*
 * A graph's nodes.  Nodes are the server's: each has a handle here, made
 * the first time a listing names it and kept with its graph until the
 * graph is destroyed, so that the same node is the same handle however
 * often it is asked for.  A listing of all of a graph's nodes (their
 * server handles and types, the roots and the edges, in the driver's
 * orders) comes in one round trip, and every query answers from one.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "graph.h"
#include "log.h"
#include "proto.h"

struct gnode {
	struct gobj	 o;
	struct ggraph	*g;
	uint64_t	 h;		/* the server's handle */
	CUgraphNodeType	 type;
	struct gnode	*next;
};

struct glist {
	uint32_t	 n, nroot, nedge;
	struct gnode	**node;
	uint32_t	*root;
	uint32_t	*from, *to;
};

static pthread_mutex_t	 node_lock = PTHREAD_MUTEX_INITIALIZER;

void
graph_nodes_free(struct ggraph *g)
{
	struct gnode *n, *next;

	pthread_mutex_lock(&node_lock);
	for (n = g->nodes; n != NULL; n = next) {
		next = n->next;
		n->o.magic = 0;
		free(n);
	}
	g->nodes = NULL;
	pthread_mutex_unlock(&node_lock);
}

/* g's handle for the server's node h, made if new (node_lock held). */
static struct gnode *
node_for(struct ggraph *g, uint64_t h, uint32_t type)
{
	struct gnode *n;

	for (n = g->nodes; n != NULL; n = n->next)
		if (n->h == h) {
			n->type = (CUgraphNodeType)type;
			return n;
		}
	if ((n = calloc(1, sizeof *n)) == NULL)
		return NULL;
	n->o.kind = GK_GNODE;
	n->g = g;
	n->h = h;
	n->type = (CUgraphNodeType)type;
	n->next = g->nodes;
	g->nodes = n;
	gobj_publish(n);
	return n;
}

static void
glist_free(struct glist *l)
{
	free(l->node);
	free(l->root);
	free(l->from);
	free(l->to);
	memset(l, 0, sizeof *l);
}

/* The listing of g's nodes, roots and edges. */
static CUresult
glist_get(struct ggraph *g, struct glist *l)
{
	struct rpc_val in[1], out[1];
	struct pr r;
	void *keep;
	uint32_t i, type;
	uint64_t h;
	CUresult rc;

	memset(l, 0, sizeof *l);
	in[0].u = gobj_id(g);
	if ((rc = remote_call(R_GRAPH_NODES, in, out, &keep)) != CUDA_SUCCESS)
		return rc;
	pr_init(&r, out[0].p, out[0].len);
	rc = CUDA_ERROR_INVALID_VALUE;
	l->n = pr_u32(&r);
	if (r.bad || l->n > out[0].len / 12 ||
	    (l->node = calloc(l->n + 1, sizeof *l->node)) == NULL)
		goto bad;
	pthread_mutex_lock(&node_lock);
	for (i = 0; i < l->n && !r.bad; i++) {
		h = pr_u64(&r);
		type = pr_u32(&r);
		if ((l->node[i] = node_for(g, h, type)) == NULL)
			r.bad = 1;
	}
	pthread_mutex_unlock(&node_lock);
	l->nroot = pr_u32(&r);
	if (r.bad || l->nroot > l->n ||
	    (l->root = calloc(l->nroot + 1, sizeof *l->root)) == NULL)
		goto bad;
	for (i = 0; i < l->nroot; i++)
		if ((l->root[i] = pr_u32(&r)) >= l->n)
			r.bad = 1;
	l->nedge = pr_u32(&r);
	if (r.bad || l->nedge > out[0].len / 8 ||
	    (l->from = calloc(l->nedge + 1, sizeof *l->from)) == NULL ||
	    (l->to = calloc(l->nedge + 1, sizeof *l->to)) == NULL)
		goto bad;
	for (i = 0; i < l->nedge; i++) {
		l->from[i] = pr_u32(&r);
		l->to[i] = pr_u32(&r);
		if (l->from[i] >= l->n || l->to[i] >= l->n)
			r.bad = 1;
	}
	if (r.bad || pr_done(&r) != 0)
		goto bad;
	free(keep);
	return CUDA_SUCCESS;
bad:
	if (r.bad)
		log_warn("graphNodes: a malformed listing");
	else
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	free(keep);
	glist_free(l);
	return rc;
}

/*
 * The driver's array convention: with no array, *n gets how many there
 * are; with one, *n entries are filled, those past the count with NULL,
 * and *n becomes the count when it was larger.
 */
static void
fill(CUgraphNode *arr, size_t *n, struct gnode **have, size_t count)
{
	size_t i;

	if (arr == NULL) {
		*n = count;
		return;
	}
	for (i = 0; i < *n; i++)
		arr[i] = i < count ? (CUgraphNode)have[i] : NULL;
	if (*n > count)
		*n = count;
}

static CUresult
nodes_of(CUgraph h, int roots, CUgraphNode *arr, size_t *n)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct gnode **v;
	struct glist l;
	uint32_t i;
	CUresult rc;

	if (g == NULL || n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = glist_get(g, &l)) != CUDA_SUCCESS)
		return rc;
	if (!roots)
		fill(arr, n, l.node, l.n);
	else if ((v = calloc(l.nroot + 1, sizeof *v)) == NULL)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else {
		for (i = 0; i < l.nroot; i++)
			v[i] = l.node[l.root[i]];
		fill(arr, n, v, l.nroot);
		free(v);
	}
	glist_free(&l);
	return rc;
}

CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) { return nodes_of(g, 0, nodes, n); }
CUresult cuGraphGetRootNodes(CUgraph g, CUgraphNode *nodes, size_t *n) { return nodes_of(g, 1, nodes, n); }

/*
 * Edges, all of a graph's (node NULL) or those into (in) or out of a
 * node: the ends in from/to, default edge data in data.  A node's
 * dependencies (in) fill the from side, its dependents the to side.
 */
static CUresult
edges_of(struct ggraph *g, struct gnode *node, int in, CUgraphNode *from,
    CUgraphNode *to, CUgraphEdgeData *data, size_t *n)
{
	struct gnode **a, **b;
	struct glist l;
	size_t i, k = 0;
	CUresult rc;

	if ((rc = glist_get(g, &l)) != CUDA_SUCCESS)
		return rc;
	a = calloc(l.nedge + 1, sizeof *a);
	b = calloc(l.nedge + 1, sizeof *b);
	if (a == NULL || b == NULL) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (i = 0; i < l.nedge; i++) {
		struct gnode *f = l.node[l.from[i]], *t = l.node[l.to[i]];

		if (node != NULL && (in ? t : f) != node)
			continue;
		a[k] = f;
		b[k] = t;
		k++;
	}
	if (from == NULL && to == NULL && data == NULL)
		*n = k;
	else {
		for (i = 0; i < *n; i++) {
			if (from != NULL)
				from[i] = i < k ? (CUgraphNode)a[i] : NULL;
			if (to != NULL)
				to[i] = i < k ? (CUgraphNode)b[i] : NULL;
			if (data != NULL)
				memset(&data[i], 0, sizeof data[i]);
		}
		if (*n > k)
			*n = k;
	}
out:
	free(a);
	free(b);
	glist_free(&l);
	return rc;
}

CUresult
cuGraphGetEdges(CUgraph h, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);

	if (g == NULL || n == NULL || (from == NULL) != (to == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(g, NULL, 0, from, to, NULL, n);
}

CUresult
cuGraphGetEdges_v2(CUgraph h, CUgraphNode *from, CUgraphNode *to,
    CUgraphEdgeData *data, size_t *n)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);

	if (g == NULL || n == NULL || (from == NULL) != (to == NULL) ||
	    (data != NULL && from == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(g, NULL, 0, from, to, data, n);
}

CUresult
cuGraphNodeGetType(CUgraphNode h, CUgraphNodeType *type)
{
	struct gnode *n = gobj_check(h, GK_GNODE);

	if (n == NULL || type == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*type = n->type;
	return CUDA_SUCCESS;
}

static CUresult
node_edges(CUgraphNode h, int in, CUgraphNode *arr, CUgraphEdgeData *data,
    size_t *n)
{
	struct gnode *node = gobj_check(h, GK_GNODE);

	if (node == NULL || n == NULL || (data != NULL && arr == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(node->g, node, in, in ? arr : NULL, in ? NULL : arr,
	    data, n);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode *d, size_t *n) { return node_edges(h, 1, d, NULL, n); }
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n) { return node_edges(h, 1, d, e, n); }
CUresult cuGraphNodeGetDependentNodes(CUgraphNode h, CUgraphNode *d, size_t *n) { return node_edges(h, 0, d, NULL, n); }
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n) { return node_edges(h, 0, d, e, n); }
