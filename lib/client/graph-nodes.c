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
#include "cuwire.h"
#include "glist.h"
#include "graph.h"
#include "hooks.h"
#include "io.h"
#include "log.h"
#include "proto.h"

const struct gfinfo *func_info(const void *, uint64_t *);

struct gnode {
	struct gobj	 o;
	struct ggraph	*g;
	uint64_t	 h;		/* the server's handle */
	CUgraphNodeType	 type;
	void		*kbuf;		/* kernel: the last parameters read;
					   allocation: its access descriptors */
	uint64_t	 dptr;		/* allocation: its address, known to
					   alloc.c while the graph lives */
	CUgraph		*body;		/* conditional: its bodies, handed
					   out as phGraph_out */
	uint32_t	 nbody;
	struct ggraph	*child;		/* child graph node: its graph, once
					   asked for */
	struct kparams	*kp;		/* kernel: its parameters as the last
					   listing gave them, until set */
	uint64_t	 kfid;		/* kernel: its function as added,
					   listed or set, func_canon's id
					   (0: not known) */
	struct gnode	*next;
};

/* A kernel node's parameters, as R_KNODE_GET's reply gives them. */
struct kparams {
	uint64_t	 fid;
	uint64_t	 canon;		/* func_canon(fid) */
	uint32_t	 geo[7];	/* grid, block, shared memory */
	uint32_t	 len;
	unsigned char	 args[];
};

struct glist {
	uint32_t	 n, nroot, nedge;
	struct gnode	**node;
	uint32_t	*root;
	uint32_t	*from, *to;
	CUgraphEdgeData	*data;		/* NULL: every edge the default */
};

static pthread_mutex_t	 node_lock = PTHREAD_MUTEX_INITIALIZER;

static void	nodes_free(struct ggraph *);

/* Frees node handle n, and its bodies' handles (node_lock held). */
static void
node_free(struct gnode *n)
{
	struct ggraph *b;
	uint32_t k;

	n->o.magic = 0;
	if (n->dptr != 0)
		mem_del(n->dptr, 0);
	for (k = 0; k < n->nbody; k++) {
		b = (struct ggraph *)n->body[k];
		nodes_free(b);
		b->o.magic = 0;
		free(b);
	}
	free(n->body);
	if ((b = n->child) != NULL) {
		nodes_free(b);
		b->o.magic = 0;
		free(b);
	}
	free(n->kbuf);
	free(n->kp);
	free(n);
}

/* (node_lock held) */
static void
nodes_free(struct ggraph *g)
{
	struct gnode *n, *next;

	for (n = g->nodes; n != NULL; n = next) {
		next = n->next;
		node_free(n);
	}
	g->nodes = NULL;
	free(g->vfid);
	g->vfid = NULL;
	g->vn = 0;
}

void
graph_nodes_free(struct ggraph *g)
{
	pthread_mutex_lock(&node_lock);
	nodes_free(g);
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

struct gnode *
graph_node(struct ggraph *g, uint64_t h, uint32_t type)
{
	struct gnode *n;

	pthread_mutex_lock(&node_lock);
	n = node_for(g, h, type);
	pthread_mutex_unlock(&node_lock);
	return n;
}

uint64_t
graph_node_h(const void *h, const struct ggraph *g)
{
	struct gnode *n = gobj_check(h, GK_GNODE);

	return n != NULL && n->g == g ? n->h : 0;
}

static void
glist_free(struct glist *l)
{
	free(l->node);
	free(l->root);
	free(l->from);
	free(l->to);
	free(l->data);
	memset(l, 0, sizeof *l);
}

static uint64_t
canon_fid(uint64_t fid)
{
	return func_canon((void *)(uintptr_t)fid);
}

/*
 * The last listing's reply, while the process has sent the server nothing
 * since (io_sent_count): the graph is as it was, and the next listing of
 * it is this one.  Programs count the nodes, then fill an array of them
 * (cudaGraphGetNodes twice, ggml every token): one round trip, not two.
 */
static pthread_mutex_t	 lc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const struct ggraph	*g;
	uint64_t		 id;	/* its gobj_id */
	uint64_t		 mark;	/* io_sent_count() after its reply */
	uint64_t		 session;	/* io_session(): not moved */
	void			*p;
	uint32_t		 len;
	struct gshape		 sh;	/* glist_shape's, once asked */
	int			 shaped;
	int			 made;	/* graph_listing_made's: true while
					   g's nodes are its (vfid) */
} lc;

/* A node handle of a listing made here: the top bit, then its index. */
#define VNODE		(1ull << 63)

/* The edge into a launch with programmatic serialization (lc_lock). */
static struct {
	int			 known;
	CUgraphEdgeData		 data;
} pss;

/* Is the kept listing g's and true of it (lc_lock held)? */
static int
lc_true(const struct ggraph *g)
{
	return lc.p != NULL && lc.g == g && lc.id == gobj_id(g) &&
	    lc.session == io_session() &&
	    (lc.mark == io_sent_count() || (lc.made && g->vfid != NULL));
}

/* A copy of g's listing where the last one is still true, else NULL. */
static void *
lc_take(const struct ggraph *g, uint32_t *len)
{
	void *p = NULL;

	pthread_mutex_lock(&lc_lock);
	if (lc_true(g) && (p = malloc(lc.len + 1)) != NULL) {
		memcpy(p, lc.p, lc.len);
		*len = lc.len;
	}
	pthread_mutex_unlock(&lc_lock);
	return p;
}

/* Set once the program lists a graph: capture ends bring listings. */
static int		 lc_wanted;

unsigned
graph_listing_wanted(void)
{
	return __atomic_load_n(&lc_wanted, __ATOMIC_RELAXED) ? 2 : 0;
}

static void	lc_keep(const struct ggraph *, const void *, uint32_t,
		    uint64_t);
static CUresult	glist_get(struct ggraph *, struct glist *);

/* Kept as it came: glist_get decodes it when the program lists g. */
void
graph_listing_came(const struct ggraph *g, const void *p, uint32_t len,
    uint64_t mark)
{
	if (len > 0)
		lc_keep(g, p, len, mark);
}

/* The kept listing is not to be used again (it did not decode). */
static void
lc_drop(void)
{
	pthread_mutex_lock(&lc_lock);
	free(lc.p);
	lc.p = NULL;
	pthread_mutex_unlock(&lc_lock);
}

/* Keeps g's listing, sent nothing since mark. */
static void
lc_keep(const struct ggraph *g, const void *p, uint32_t len, uint64_t mark)
{
	void *c = malloc(len + 1);

	pthread_mutex_lock(&lc_lock);
	free(lc.p);
	lc.p = c;
	if (c != NULL) {
		memcpy(c, p, len);
		lc.g = g;
		lc.id = gobj_id(g);
		lc.len = len;
		lc.mark = mark;
		lc.session = io_session();
		lc.shaped = 0;
		lc.made = 0;
	}
	pthread_mutex_unlock(&lc_lock);
}

/* The kept listing goes where it is g's. */
static void
lc_drop_of(const struct ggraph *g)
{
	pthread_mutex_lock(&lc_lock);
	if (lc.g == g) {
		free(lc.p);
		lc.p = NULL;
	}
	pthread_mutex_unlock(&lc_lock);
}

/*
 * The programmatic serialization flag of each of the n launches kl holds
 * (graph.h) into flag: 0, or -1 where kl does not hold n.
 */
static int
kl_flags(const void *kl, size_t len, uint32_t n, unsigned char *flag)
{
	struct pr r;
	uint32_t i;

	pr_init(&r, kl, len);
	for (i = 0; i < n && !r.bad; i++) {
		(void)pr_take(&r, 8 + 7 * 4);
		flag[i] = pr_u32(&r) != 0;
		(void)pr_take(&r, pr_u32(&r));
	}
	return r.bad || pr_done(&r) != 0 ? -1 : 0;
}

/*
 * The listing of a capture made of n plain launches on one stream by one
 * thread (graph.h): the driver makes each launch a kernel node that
 * depends on the one before, the first the root, no edge data; each
 * node's parameters are its launch's request.  Nodes are named VNODE and
 * their index until graph_nodes_real learns the server's handles; the
 * listing stays g's, however much is sent meanwhile, while they are
 * (anything that changes g learns them first, and drops it).
 */
void
graph_listing_made(struct ggraph *g, const void *kl, size_t len, uint32_t n,
    uint64_t mark)
{
	static const CUgraphEdgeData zero;
	CUgraphEdgeData *ed = NULL, pdata;
	unsigned char *flag;
	const void *a;
	int known;
	uint64_t *vf;
	uint32_t i, j, alen, special = 0, prog = 0;
	struct pw w;
	struct pr r;

	pthread_mutex_lock(&lc_lock);
	known = pss.known;
	pdata = pss.data;
	pthread_mutex_unlock(&lc_lock);
	if (n == 0 || (vf = calloc(n, sizeof *vf)) == NULL)
		return;
	if ((ed = calloc(n, sizeof *ed)) == NULL) {
		free(vf);
		return;
	}
	/* Each edge's data: the programmatic one into such a launch. */
	if ((flag = calloc(n, 1)) == NULL || kl_flags(kl, len, n, flag) != 0) {
		free(flag);
		free(vf);
		free(ed);
		return;
	}
	for (i = 1; i < n; i++)
		if (flag[i]) {
			ed[i - 1] = pdata;
			special |= memcmp(&pdata, &zero, sizeof zero) != 0;
			prog++;
		}
	free(flag);
	if (prog > 0 && !known) {
		free(vf);
		free(ed);
		return;
	}
	pw_init(&w);
	pw_u32(&w, n);
	for (i = 0; i < n; i++) {
		pw_u64(&w, VNODE | i);
		pw_u32(&w, CU_GRAPH_NODE_TYPE_KERNEL);
	}
	pw_u32(&w, 1);
	pw_u32(&w, 0);
	pw_u32(&w, n - 1);
	for (i = 0; i + 1 < n; i++) {
		pw_u32(&w, i);
		pw_u32(&w, i + 1);
	}
	pw_u32(&w, special ? n - 1 : 0);
	if (special)
		pw_bytes(&w, ed, (size_t)(n - 1) * sizeof *ed);
	free(ed);
	pw_u32(&w, n);
	pr_init(&r, kl, len);
	for (i = 0; i < n && !r.bad; i++) {
		pw_u32(&w, i);
		vf[i] = pr_u64(&r);
		pw_u64(&w, vf[i]);
		for (j = 0; j < 7; j++)
			pw_u32(&w, pr_u32(&r));
		(void)pr_u32(&r);
		alen = pr_u32(&r);
		pw_u32(&w, alen);
		if ((a = pr_take(&r, alen)) != NULL)
			pw_bytes(&w, a, alen);
	}
	if (r.bad || pr_done(&r) != 0 || w.bad || w.len > UINT32_MAX) {
		free(vf);
		pw_free(&w);
		return;
	}
	pthread_mutex_lock(&node_lock);
	free(g->vfid);
	g->vfid = vf;
	g->vn = n;
	pthread_mutex_unlock(&node_lock);
	lc_keep(g, w.p, (uint32_t)w.len, mark);
	pthread_mutex_lock(&lc_lock);
	if (lc.g == g && lc.p != NULL)
		lc.made = 1;
	pthread_mutex_unlock(&lc_lock);
	pw_free(&w);
}

/*
 * The server's handles into g's nodes named here, from w, the server's
 * listing of g: it must be the chain of g->vn kernel nodes the capture
 * made, with the launches' functions.  0, or -1 where it is not
 * (node_lock held).
 */
static int
vmap(struct ggraph *g, const struct glist_wire *w)
{
	uint32_t *order = NULL, *pos = NULL, i, n = w->n;
	struct gnode *nd;
	int rc = -1;

	if (g->vfid == NULL)
		return 0;
	if (n != g->vn || n == 0 ||
	    (order = malloc(n * sizeof *order)) == NULL ||
	    (pos = malloc(n * sizeof *pos)) == NULL ||
	    glist_chain(w, n, order, pos) != 0)
		goto out;
	for (i = 0; i < n; i++)
		if (w->h[i] & VNODE)
			goto out;
	for (i = 0; i < w->nk; i++)
		if (canon_fid(w->k[i].fid) !=
		    canon_fid(g->vfid[pos[w->k[i].idx]]))
			goto out;
	for (nd = g->nodes; nd != NULL; nd = nd->next)
		if (nd->h & VNODE) {
			if ((nd->h & ~VNODE) >= n)
				goto out;
			nd->h = w->h[order[nd->h & ~VNODE]];
		}
	free(g->vfid);
	g->vfid = NULL;
	g->vn = 0;
	rc = 0;
out:
	free(order);
	free(pos);
	return rc;
}

int
graph_pss_known(void)
{
	int k;

	pthread_mutex_lock(&lc_lock);
	k = pss.known;
	pthread_mutex_unlock(&lc_lock);
	return k;
}

/*
 * Learnt where the listing is the capture's chain, every edge into a
 * launch with programmatic serialization has one data and every other
 * edge the default; anything else leaves it unknown (such captures'
 * listings are then the server's).
 */
void
graph_pss_learn(const void *kl, size_t kllen, uint32_t n, const void *p,
    uint32_t len)
{
	static const CUgraphEdgeData zero;
	uint32_t *order = NULL, *pos = NULL, i, to;
	unsigned char *flag = NULL;
	CUgraphEdgeData d = zero, e;
	struct glist_wire w;
	int seen = 0, ok = 1;

	if (n == 0 || glist_decode(p, len, &w) != 0)
		return;
	if ((order = malloc(n * sizeof *order)) == NULL ||
	    (pos = malloc(n * sizeof *pos)) == NULL ||
	    (flag = calloc(n, 1)) == NULL || glist_chain(&w, n, order, pos) != 0)
		goto out;
	if (kl_flags(kl, kllen, n, flag) != 0)
		goto out;
	for (i = 0; i < w.nedge && ok; i++) {
		e = w.data != NULL ? w.data[i] : zero;
		to = pos[w.to[i]];
		if (!flag[to])
			ok = memcmp(&e, &zero, sizeof e) == 0;
		else if (!seen) {
			d = e;
			seen = 1;
		} else
			ok = memcmp(&e, &d, sizeof e) == 0;
	}
	if (ok && seen) {
		pthread_mutex_lock(&lc_lock);
		pss.data = d;
		pss.known = 1;
		pthread_mutex_unlock(&lc_lock);
	}
out:
	glist_wire_free(&w);
	free(order);
	free(pos);
	free(flag);
}

static CUresult
vmap_failed(const struct ggraph *g)
{
	log_warn("graph %u: the server's graph is not the chain of launches "
	    "captured; its nodes cannot be named to the server", g->id);
	return CUDA_ERROR_UNKNOWN;
}

CUresult
graph_nodes_real(struct ggraph *g)
{
	struct glist l;
	CUresult rc;
	int virt;

	pthread_mutex_lock(&node_lock);
	virt = g->vfid != NULL;
	pthread_mutex_unlock(&node_lock);
	if (!virt)
		return CUDA_SUCCESS;
	/* The server's listing, which glist_get matches to the chain. */
	lc_drop_of(g);
	if ((rc = glist_get(g, &l)) == CUDA_SUCCESS)
		glist_free(&l);
	return rc;
}

/*
 * Shapes learned by trace: a capture of the same launches (functions,
 * flags, attributes, in order, on one stream) as one whose listing was
 * seen builds a graph of that listing's shape.  A few, replaced in turn.
 */
#define TRACES_MAX	16
static struct {
	uint64_t	 trace;
	struct gshape	 sh;
} traces[TRACES_MAX];
static unsigned		 traces_next;

/* Trace's slot, or NULL (under lc_lock). */
static struct gshape *
trace_slot(uint64_t trace)
{
	unsigned i;

	for (i = 0; trace != 0 && i < TRACES_MAX; i++)
		if (traces[i].trace == trace)
			return &traces[i].sh;
	return NULL;
}

/* Under lc_lock. */
static void
trace_learn(uint64_t trace, const struct gshape *sh)
{
	struct gshape *sp;
	unsigned i;

	if (trace == 0 || sh->shape == 0)
		return;
	if ((sp = trace_slot(trace)) != NULL) {
		*sp = *sh;
		return;
	}
	i = traces_next++ % TRACES_MAX;
	traces[i].trace = trace;
	traces[i].sh = *sh;
}

/*
 * What cuGraphExecUpdate compares of g (glist_shape), from the kept
 * listing where it is still true (nothing sent since: g is as listed),
 * else from a capture's trace seen with a listing before; 0 where not
 * known.  Asked before the call that sends.
 */
void
graph_shape_now(const struct ggraph *g, struct gshape *sh)
{
	struct glist_wire w;
	struct gshape *sp;

	memset(sh, 0, sizeof *sh);
	if (g->noshape)
		return;
	pthread_mutex_lock(&lc_lock);
	if (lc_true(g)) {
		if (!lc.shaped && glist_decode(lc.p, lc.len, &w) == 0) {
			lc.sh.shape = glist_shape(&w, canon_fid, &lc.sh.topo);
			lc.shaped = 1;
			glist_wire_free(&w);
		}
		if (lc.shaped) {
			*sh = lc.sh;
			trace_learn(g->trace, sh);
		}
	} else if ((sp = trace_slot(g->trace)) != NULL)
		*sh = *sp;
	pthread_mutex_unlock(&lc_lock);
}

void
graph_shape_fetch(struct ggraph *g, struct gshape *sh)
{
	struct rpc_val in[1], out[1];
	struct glist_wire w;
	uint64_t m0, m1;
	void *keep;

	memset(sh, 0, sizeof *sh);
	in[0].u = gobj_id(g);
	m0 = io_sent_count();
	if (remote_call(R_GRAPH_NODES, in, out, &keep) == CUDA_SUCCESS) {
		m1 = io_sent_count();
		if (glist_decode(out[0].p, out[0].len, &w) == 0) {
			sh->shape = glist_shape(&w, canon_fid, &sh->topo);
			glist_wire_free(&w);
		}
		/* Kept, as any listing, while nothing is sent since. */
		if (m1 == m0 + 1)
			lc_keep(g, out[0].p, out[0].len, m1);
		pthread_mutex_lock(&lc_lock);
		trace_learn(g->trace, sh);
		pthread_mutex_unlock(&lc_lock);
	}
	free(keep);
}

/* The listing of g's nodes, roots and edges. */
static CUresult
glist_get(struct ggraph *g, struct glist *l)
{
	struct rpc_val in[1], out[1];
	struct glist_wire w;
	struct kparams **kps;
	void *keep;
	uint32_t i, len;
	uint64_t m0, m1;
	CUresult rc;
	int d;

	memset(l, 0, sizeof *l);
	__atomic_store_n(&lc_wanted, 1, __ATOMIC_RELAXED);
	m0 = m1 = 0;
	d = -1;
	/*
	 * A kept listing that does not decode is asked for again, as is
	 * one made here once g's nodes are the server's.
	 */
	if ((keep = lc_take(g, &len)) != NULL &&
	    ((d = glist_decode(keep, len, &w)) == -1 || (d == 0 && w.n > 0 &&
	    (w.h[0] & VNODE) && g->vfid == NULL))) {
		if (d == 0)
			glist_wire_free(&w);
		free(keep);
		keep = NULL;
		lc_drop();
	}
	if (keep == NULL) {
		in[0].u = gobj_id(g);
		m0 = io_sent_count();
		if ((rc = remote_call(R_GRAPH_NODES, in, out, &keep)) !=
		    CUDA_SUCCESS) {
			free(keep);	/* the error's reply */
			return rc;
		}
		m1 = io_sent_count();
		d = glist_decode(out[0].p, out[0].len, &w);
	}
	if (d != 0) {
		free(keep);
		if (d == -2)
			return CUDA_ERROR_OUT_OF_MEMORY;
		log_warn("graphNodes: a malformed listing");
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* Kept where the listing was the one message sent meanwhile. */
	if (m1 != 0 && m1 == m0 + 1)
		lc_keep(g, out[0].p, out[0].len, m1);
	if ((l->node = calloc(w.n + 1, sizeof *l->node)) == NULL ||
	    (kps = calloc(w.nk + 1, sizeof *kps)) == NULL) {
		free(l->node);
		l->node = NULL;
		glist_wire_free(&w);
		free(keep);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* The kernel nodes' parameters, kept with their nodes below. */
	for (i = 0; i < w.nk; i++) {
		const struct glist_kparams *k = &w.k[i];

		if ((kps[i] = malloc(sizeof *kps[i] + k->len + 1)) == NULL)
			break;
		kps[i]->fid = k->fid;
		kps[i]->canon = func_canon((void *)(uintptr_t)k->fid);
		memcpy(kps[i]->geo, k->geo, sizeof k->geo);
		kps[i]->len = k->len;
		memcpy(kps[i]->args, k->args, k->len);
	}
	rc = i < w.nk ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	pthread_mutex_lock(&node_lock);
	/* The server's listing of a graph whose nodes were named here. */
	if (rc == CUDA_SUCCESS && g->vfid != NULL && w.n > 0 &&
	    !(w.h[0] & VNODE) && vmap(g, &w) != 0)
		rc = vmap_failed(g);
	for (i = 0; i < w.n && rc == CUDA_SUCCESS; i++)
		if ((l->node[i] = node_for(g, w.h[i], w.type[i])) == NULL)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	/* Replacing what an earlier listing left. */
	for (i = 0; i < w.nk && rc == CUDA_SUCCESS; i++) {
		struct gnode *n = l->node[w.k[i].idx];

		free(n->kp);
		n->kp = kps[i];
		n->kfid = kps[i]->canon;
		kps[i] = NULL;
	}
	pthread_mutex_unlock(&node_lock);
	for (i = 0; i < w.nk; i++)
		free(kps[i]);
	free(kps);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		glist_wire_free(&w);
		glist_free(l);
		return rc;
	}
	/* The indices and edge data become the listing's own. */
	l->n = w.n;
	l->nroot = w.nroot;
	l->nedge = w.nedge;
	l->root = w.root;
	l->from = w.from;
	l->to = w.to;
	l->data = w.data;
	w.root = w.from = w.to = NULL;
	w.data = NULL;
	glist_wire_free(&w);
	return CUDA_SUCCESS;
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
 * node: the ends in from/to, their data in data.  A node's dependencies
 * (in) fill the from side, its dependents the to side.  Without data, an
 * edge that has some makes the query lossy, as the driver says: always
 * in the calls before edge data (v1), else when the ends are asked for.
 */
static CUresult
edges_of(struct ggraph *g, struct gnode *node, int in, CUgraphNode *from,
    CUgraphNode *to, CUgraphEdgeData *data, size_t *n, int v1)
{
	static const CUgraphEdgeData zero;
	struct gnode **a, **b;
	CUgraphEdgeData *d;
	struct glist l;
	size_t i, k = 0;
	int lossy = 0;
	CUresult rc;

	if ((rc = glist_get(g, &l)) != CUDA_SUCCESS)
		return rc;
	a = calloc(l.nedge + 1, sizeof *a);
	b = calloc(l.nedge + 1, sizeof *b);
	d = calloc(l.nedge + 1, sizeof *d);
	if (a == NULL || b == NULL || d == NULL) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (i = 0; i < l.nedge; i++) {
		struct gnode *f = l.node[l.from[i]], *t = l.node[l.to[i]];

		if (node != NULL && (in ? t : f) != node)
			continue;
		a[k] = f;
		b[k] = t;
		if (l.data != NULL) {
			d[k] = l.data[i];
			lossy |= memcmp(&d[k], &zero, sizeof zero) != 0;
		}
		k++;
	}
	if (lossy && data == NULL && (v1 || from != NULL || to != NULL)) {
		rc = CUDA_ERROR_LOSSY_QUERY;
		goto out;
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
				data[i] = i < k ? d[i] : zero;
		}
		if (*n > k)
			*n = k;
	}
out:
	free(a);
	free(b);
	free(d);
	glist_free(&l);
	return rc;
}

CUresult
cuGraphGetEdges(CUgraph h, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);

	if (g == NULL || n == NULL || (from == NULL) != (to == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(g, NULL, 0, from, to, NULL, n, 1);
}

CUresult
cuGraphGetEdges_v2(CUgraph h, CUgraphNode *from, CUgraphNode *to,
    CUgraphEdgeData *data, size_t *n)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);

	if (g == NULL || n == NULL || (from == NULL) != (to == NULL) ||
	    (data != NULL && from == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(g, NULL, 0, from, to, data, n, 0);
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
    size_t *n, int v1)
{
	struct gnode *node = gobj_check(h, GK_GNODE);

	if (node == NULL || n == NULL || (data != NULL && arr == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return edges_of(node->g, node, in, in ? arr : NULL, in ? NULL : arr,
	    data, n, v1);
}

CUresult cuGraphNodeGetDependencies(CUgraphNode h, CUgraphNode *d, size_t *n) { return node_edges(h, 1, d, NULL, n, 1); }
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n) { return node_edges(h, 1, d, e, n, 0); }
CUresult cuGraphNodeGetDependentNodes(CUgraphNode h, CUgraphNode *d, size_t *n) { return node_edges(h, 0, d, NULL, n, 1); }
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode h, CUgraphNode *d, CUgraphEdgeData *e, size_t *n) { return node_edges(h, 0, d, e, n, 0); }

/* ---- explicit construction ---------------------------------------------- */

/* The node of g that handle h names, else NULL. */
static struct gnode *
node_of(const void *h, const struct ggraph *g)
{
	struct gnode *n = gobj_check(h, GK_GNODE);

	return n != NULL && (g == NULL || n->g == g) ? n : NULL;
}

/*
 * Adds a node of type to graph h after deps; the call whose request
 * (req, by call's signature) describes it, none for 0; ctx: the context
 * it runs in (0 for none).  One round trip.
 */
static CUresult
node_add(CUgraphNode *pn, CUgraph h, const CUgraphNode *deps, size_t nd,
    CUgraphNodeType type, uint64_t ctx, uint16_t call,
    const struct rpc_val *req, const struct pw *raw)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct rpc_val in[5], out[1];
	struct gnode *n, *d;
	struct pw dw, rw;
	void *keep;
	size_t i;
	CUresult rc;

	if (pn == NULL || g == NULL || (deps == NULL && nd > 0))
		return CUDA_ERROR_INVALID_VALUE;
	/* g changes: its nodes are the server's first. */
	if ((rc = graph_nodes_real(g)) != CUDA_SUCCESS)
		return rc;
	pw_init(&dw);
	pw_init(&rw);
	for (i = 0; i < nd; i++) {
		if ((d = node_of(deps[i], g)) == NULL) {
			pw_free(&dw);
			return CUDA_ERROR_INVALID_VALUE;
		}
		pw_u64(&dw, d->h);
	}
	if (call != 0)
		rpc_pack(&rw, rpc_lookup(call)->req, req);
	else if (raw != NULL)
		pw_bytes(&rw, raw->p, raw->len);
	in[0].u = ctx;
	in[1].u = gobj_id(g);
	in[2].u = (uint64_t)type;
	in[3].p = dw.p;
	in[3].len = (uint32_t)dw.len;
	in[4].p = rw.p;
	in[4].len = (uint32_t)rw.len;
	g->trace = 0;		/* no longer what a capture made */
	rc = remote_call(R_GRAPH_ADD, in, out, &keep);
	pw_free(&dw);
	pw_free(&rw);
	if (rc != CUDA_SUCCESS) {
		free(keep);
		return rc;
	}
	pthread_mutex_lock(&node_lock);
	n = node_for(g, out[0].u, (uint32_t)type);
	pthread_mutex_unlock(&node_lock);
	free(keep);
	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pn = (CUgraphNode)n;
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddEmptyNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd)
{
	return node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_EMPTY, 0, 0, NULL,
	    NULL);
}

static CUresult
knode_add(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t nd,
    CUfunction f, const unsigned *geo, void **params, void **extra)
{
	struct rpc_val in[12];
	char *args;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = launch_request(f, geo[0], geo[1], geo[2], geo[3], geo[4],
	    geo[5], geo[6], params, extra, in, &args)) == CUDA_SUCCESS &&
	    (rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_KERNEL,
	    in[0].u, R_LAUNCH, in, NULL)) == CUDA_SUCCESS) {
		pthread_mutex_lock(&node_lock);
		((struct gnode *)*pn)->kfid = func_canon(f);
		pthread_mutex_unlock(&node_lock);
	}
	free(args);
	return rc;
}

#define KGEO(p)	{ (p)->gridDimX, (p)->gridDimY, (p)->gridDimZ, \
		  (p)->blockDimX, (p)->blockDimY, (p)->blockDimZ, \
		  (p)->sharedMemBytes }

CUresult
cuGraphAddKernelNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	{
		unsigned geo[7] = KGEO(p);

		return knode_add(pn, g, deps, nd, p->func, geo, p->kernelParams,
		    p->extra);
	}
}

CUresult
cuGraphAddKernelNode_v2(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	{
		unsigned geo[7] = KGEO(p);

		return knode_add(pn, g, deps, nd, p->func != NULL ? p->func :
		    (CUfunction)p->kern, geo, p->kernelParams, p->extra);
	}
}

/* The context a node runs in: h, else the current one. */
static CUresult
node_ctx(CUcontext h, uint64_t *id)
{
	struct gctx *c;
	CUresult rc;

	if (h != NULL) {
		if ((c = gobj_check(h, GK_CTX)) == NULL)
			return CUDA_ERROR_INVALID_CONTEXT;
	} else if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	*id = gobj_id(c);
	return CUDA_SUCCESS;
}

/* A memset node's parameters as R_MEMSET's request. */
static CUresult
memset_req(const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx,
    struct rpc_val *in)
{
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_ctx(ctx, &in[0].u)) != CUDA_SUCCESS)
		return rc;
	in[1].u = 0;
	in[2].u = 1;
	in[3].u = p->dst;
	in[4].u = p->pitch;
	in[5].u = p->value;
	in[6].u = p->elementSize;
	in[7].u = p->width;
	in[8].u = p->height;
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddMemsetNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_MEMSET_NODE_PARAMS_v1 *p, CUcontext ctx)
{
	struct rpc_val in[9];
	CUresult rc;

	if ((rc = memset_req(p, ctx, in)) != CUDA_SUCCESS)
		return rc;
	return node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_MEMSET, in[0].u,
	    R_MEMSET, in, NULL);
}

/* A device side of a copy node, else 0 (host memory: the client's). */
static int
node_dev(CUmemorytype t, CUdeviceptr d)
{
	return t == CU_MEMORYTYPE_DEVICE ||
	    (t == CU_MEMORYTYPE_UNIFIED && mem_is_device(d, NULL, NULL));
}

/*
 * A copy node's request: R_MEM_3D's on no stream, in context ctx (NULL:
 * the current one), its descriptor in *desc (pw_free'd by the caller on
 * success).  Device memory on both sides only.
 */
static CUresult
copy_node_req(const CUDA_MEMCPY3D_v2 *m, CUcontext ctx, struct rpc_val *in,
    struct pw *desc)
{
	uint64_t f[20];
	CUresult rc;
	int i;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_ctx(ctx, &in[0].u)) != CUDA_SUCCESS)
		return rc;
	if (!node_dev(m->srcMemoryType, m->srcDevice) ||
	    !node_dev(m->dstMemoryType, m->dstDevice)) {
		log_warn("graph memcpy nodes: only device-to-device copy "
		    "nodes are supported remotely (a node's host pointer "
		    "would name this process's memory)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	memset(f, 0, sizeof f);
	f[0] = CU_MEMORYTYPE_DEVICE;
	f[1] = m->srcXInBytes; f[2] = m->srcY; f[3] = m->srcZ;
	f[4] = m->srcDevice; f[5] = m->srcPitch; f[6] = m->srcHeight;
	f[7] = CU_MEMORYTYPE_DEVICE;
	f[8] = m->dstXInBytes; f[9] = m->dstY; f[10] = m->dstZ;
	f[11] = m->dstDevice; f[12] = m->dstPitch; f[13] = m->dstHeight;
	f[14] = m->WidthInBytes;
	f[15] = m->Height;
	f[16] = m->Depth;
	/*
	 * One row (cudaGraphAddMemcpyNode1D's): the driver takes pitches
	 * and heights of 0, which only rows and slices after the first use;
	 * the server's checks want them to hold the row.
	 */
	if (m->Height <= 1 && m->Depth <= 1)
		for (i = 0; i < 2; i++) {
			uint64_t *sd = &f[i * 7];

			if (sd[5] == 0 && sd[2] == 0 && sd[3] == 0)
				sd[5] = sd[1] + m->WidthInBytes;
			if (sd[6] == 0 && sd[3] == 0)
				sd[6] = m->Height;
		}
	pw_init(desc);
	for (i = 0; i < 20; i++)
		pw_u64(desc, f[i]);
	in[1].u = 0;
	in[2].u = 1;
	in[3].p = desc->p;
	in[3].len = (uint32_t)desc->len;
	in[4].p = NULL;
	in[4].len = 0;
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddMemcpyNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_MEMCPY3D_v2 *m, CUcontext ctx)
{
	struct rpc_val in[5];
	struct pw desc;
	CUresult rc;

	if ((rc = copy_node_req(m, ctx, in, &desc)) != CUDA_SUCCESS)
		return rc;
	rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_MEMCPY, in[0].u,
	    R_MEM_3D, in, NULL);
	pw_free(&desc);
	return rc;
}

/*
 * An event node's request: R_STREAM_WAIT_EVENT's (wait) or
 * R_EVENT_RECORD's, on no stream; -1 when h is not an event.
 */
static int
enode_req(CUevent h, int wait, struct rpc_val *in)
{
	struct gevent *e = gobj_check(h, GK_EVENT);

	if (e == NULL)
		return -1;
	e->graphed = 1;
	ridle_event_forget(gobj_id(e));
	in[0].u = gobj_id(e->ctx);
	in[1].u = wait ? 0 : gobj_id(e);
	in[2].u = wait ? gobj_id(e) : 0;
	in[3].u = 0;
	return 0;
}

static CUresult
enode_add(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t nd,
    CUevent h, int wait)
{
	struct rpc_val in[4];

	if (enode_req(h, wait, in) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	return node_add(pn, g, deps, nd, wait ? CU_GRAPH_NODE_TYPE_WAIT_EVENT :
	    CU_GRAPH_NODE_TYPE_EVENT_RECORD, in[0].u, wait ?
	    R_STREAM_WAIT_EVENT : R_EVENT_RECORD, in, NULL);
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t nd, CUevent e) { return enode_add(pn, g, deps, nd, e, 0); }
CUresult cuGraphAddEventWaitNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t nd, CUevent e) { return enode_add(pn, g, deps, nd, e, 1); }

CUresult
cuGraphAddChildGraphNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUgraph child)
{
	struct ggraph *c = gobj_check(child, GK_GRAPH);
	struct pw w;
	CUresult rc;

	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pw_init(&w);
	pw_u64(&w, gobj_id(c));
	rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_GRAPH, 0, 0, NULL,
	    &w);
	pw_free(&w);
	return rc;
}

/*
 * Edges added (add) or removed between from[i] and to[i], with data[i]
 * (ports, a programmatic type) where data is not NULL.
 */
CUresult
edges_change(CUgraph h, const CUgraphNode *from, const CUgraphNode *to,
    const CUgraphEdgeData *data, size_t n, int add)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct rpc_val in[4], out[1];
	static const CUgraphEdgeData zero;
	struct gnode *a, *b;
	struct pw w;
	void *keep;
	size_t i;
	CUresult rc;

	if (g == NULL || (n > 0 && (from == NULL || to == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; data != NULL && i < n; i++)
		if (memcmp(&data[i], &zero, sizeof zero) != 0)
			break;
	if (data != NULL && i == n)
		data = NULL;	/* all the default: sent as none */
	if ((rc = graph_nodes_real(g)) != CUDA_SUCCESS)
		return rc;
	pw_init(&w);
	for (i = 0; i < n; i++) {
		if ((a = node_of(from[i], g)) == NULL ||
		    (b = node_of(to[i], g)) == NULL) {
			pw_free(&w);
			return CUDA_ERROR_INVALID_VALUE;
		}
		pw_u64(&w, a->h);
		pw_u64(&w, b->h);
	}
	in[0].u = gobj_id(g);
	in[1].u = (uint64_t)add;
	in[2].p = w.p;
	in[2].len = (uint32_t)w.len;
	in[3].p = data;
	in[3].len = data != NULL ? (uint32_t)(n * sizeof *data) : 0;
	g->trace = 0;
	rc = remote_call(R_GRAPH_EDGES, in, out, &keep);
	free(keep);
	pw_free(&w);
	return rc;
}

CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) { return edges_change(g, from, to, NULL, n, 1); }
CUresult cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *d, size_t n) { return edges_change(g, from, to, d, n, 1); }
CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n) { return edges_change(g, from, to, NULL, n, 0); }
CUresult cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *d, size_t n) { return edges_change(g, from, to, d, n, 0); }

CUresult
cuGraphDestroyNode(CUgraphNode h)
{
	struct gnode *n = node_of(h, NULL), **pp;
	struct rpc_val in[2], out[1];
	void *keep;
	CUresult rc;

	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(n->g);
	in[1].u = n->h;
	n->g->trace = 0;
	rc = remote_call(R_GRAPH_NODE_DESTROY, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&node_lock);
	for (pp = &n->g->nodes; *pp != NULL; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	node_free(n);
	pthread_mutex_unlock(&node_lock);
	return CUDA_SUCCESS;
}

/* ---- kernel node parameters -------------------------------------------- */

/*
 * A kernel node's parameters: the function is the handle this process
 * launched it with (or gave the node); kernelParams point into a buffer
 * kept with the node until the next read or the graph's end.
 */
static CUresult
knode_get(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[2], out[9];
	const struct gfinfo *fi;
	struct kparams *kp;
	void *f, *keep = NULL, **pv;
	uint64_t id;
	char *buf;
	uint32_t i;
	CUresult rc;

	if (n == NULL || p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/*
	 * What the last listing said, while no one has set them since
	 * (kept: a node whose listing was made here has no other source
	 * without a round trip).
	 */
	pthread_mutex_lock(&node_lock);
	if ((kp = n->kp) != NULL &&
	    (keep = malloc(sizeof *kp + kp->len + 1)) != NULL) {
		memcpy(keep, kp, sizeof *kp + kp->len);
		kp = keep;
	} else
		kp = NULL;
	pthread_mutex_unlock(&node_lock);
	if (kp != NULL) {
		out[0].u = kp->fid;
		for (i = 0; i < 7; i++)
			out[i + 1].u = kp->geo[i];
		out[8].p = kp->args;
		out[8].len = kp->len;
	} else {
		if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
			return rc;
		in[0].u = gobj_id(n->g);
		in[1].u = n->h;
		if ((rc = remote_call(R_KNODE_GET, in, out, &keep)) !=
		    CUDA_SUCCESS) {
			free(keep);	/* the error's reply */
			return rc;
		}
	}
	f = gobj_check((void *)(uintptr_t)out[0].u, GK_FUNC);
	if (f == NULL)
		f = gobj_check((void *)(uintptr_t)out[0].u, GK_KERNEL);
	if (f == NULL || (fi = func_info(f, &id)) == NULL ||
	    out[8].len != fi->argbytes) {
		free(keep);
		log_warn("cuGraphKernelNodeGetParams: the node's function is "
		    "not one this process knows");
		return CUDA_ERROR_INVALID_HANDLE;
	}
	pv = malloc(fi->nparams * sizeof *pv + fi->argbytes + 1);
	if (pv == NULL) {
		free(keep);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	buf = (char *)(pv + fi->nparams);
	memcpy(buf, out[8].p, fi->argbytes);
	for (i = 0; i < fi->nparams; i++)
		pv[i] = buf + fi->offset[i];
	memset(p, 0, sizeof *p);
	p->func = (CUfunction)f;
	/*
	 * Our kernels are functions too; a function that stands for a
	 * library's kernel (cuKernelGetFunction) names it, as cudart finds
	 * its host function by the kernel.
	 */
	if (gobj_check(f, GK_KERNEL) != NULL)
		p->kern = (CUkernel)f;
	else if (((struct gfunc *)f)->askernel != NULL)
		p->kern = (CUkernel)((struct gfunc *)f)->askernel;
	p->gridDimX = (unsigned)out[1].u;
	p->gridDimY = (unsigned)out[2].u;
	p->gridDimZ = (unsigned)out[3].u;
	p->blockDimX = (unsigned)out[4].u;
	p->blockDimY = (unsigned)out[5].u;
	p->blockDimZ = (unsigned)out[6].u;
	p->sharedMemBytes = (unsigned)out[7].u;
	p->kernelParams = pv;
	free(keep);
	pthread_mutex_lock(&node_lock);
	free(n->kbuf);
	n->kbuf = pv;
	pthread_mutex_unlock(&node_lock);
	return CUDA_SUCCESS;
}

CUresult
cuGraphKernelNodeGetParams_v2(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	return knode_get(h, p);
}

CUresult
cuGraphKernelNodeGetParams(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS_v2 q;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = knode_get(h, &q)) != CUDA_SUCCESS)
		return rc;
	memset(p, 0, sizeof *p);
	p->func = q.func;
	p->gridDimX = q.gridDimX;
	p->gridDimY = q.gridDimY;
	p->gridDimZ = q.gridDimZ;
	p->blockDimX = q.blockDimX;
	p->blockDimY = q.blockDimY;
	p->blockDimZ = q.blockDimZ;
	p->sharedMemBytes = q.sharedMemBytes;
	p->kernelParams = q.kernelParams;
	return CUDA_SUCCESS;
}

/* A graph's node gets new parameters: the listing's are old. */
static void
knode_forget(struct gnode *n)
{
	pthread_mutex_lock(&node_lock);
	free(n->kp);
	n->kp = NULL;
	pthread_mutex_unlock(&node_lock);
}

/* New parameters for a kernel node of a graph, or of exec's copy of it. */
static CUresult
knode_set(CUgraphExec he, CUgraphNode h, CUfunction f, const unsigned *geo,
    void **params, void **extra)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[4], out[1], req[12];
	uint64_t eid = 0;
	struct pw w;
	char *args;
	void *keep;
	uint64_t canon, src;
	CUresult rc;
	int oneway;

	if (n == NULL || f == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (he != NULL) {
		void *e = gobj_check(he, GK_GEXEC);

		if (e == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		eid = gobj_id(e);
	}
	/* The server's handle first: its listing brings the old values. */
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	if (he == NULL)
		knode_forget(n);
	if ((rc = launch_request(f, geo[0], geo[1], geo[2], geo[3], geo[4],
	    geo[5], geo[6], params, extra, req, &args)) != CUDA_SUCCESS) {
		free(args);
		return rc;
	}
	pw_init(&w);
	rpc_pack(&w, rpc_lookup(R_LAUNCH)->req, req);
	free(args);
	in[0].u = gobj_id(n->g);
	in[1].u = eid;
	in[2].u = n->h;
	in[3].p = w.p;
	in[3].len = (uint32_t)w.len;
	/*
	 * New arguments for an executable graph's kernel node that keeps
	 * its function (XLA's command buffers, each step): what the driver
	 * refuses there (another context's function, a node of another
	 * graph or type, a function that starts using device-side
	 * launches) is checked here or cannot arise, so the call goes
	 * one-way, like a launch: any failure comes with the next call
	 * that waits.  Anything else is a round trip.
	 */
	canon = func_canon(f);
	src = he != NULL ? gexec_source(gobj_check(he, GK_GEXEC)) : 0;
	pthread_mutex_lock(&node_lock);
	oneway = he != NULL && n->type == CU_GRAPH_NODE_TYPE_KERNEL &&
	    n->kfid != 0 && n->kfid == canon && src == gobj_id(n->g);
	pthread_mutex_unlock(&node_lock);
	/*
	 * The exec's node may hold another function than the one set
	 * (an update gave it another graph's): its shape (graph.c) is no
	 * longer known.
	 */
	if (he != NULL)
		gexec_shape_forget(gobj_check(he, GK_GEXEC));
	if (oneway) {
		rc = rpost(R_KNODE_SET, in, 0);
		pw_free(&w);
		return rc;
	}
	if (he == NULL)
		n->g->trace = 0;
	rc = remote_call(R_KNODE_SET, in, out, &keep);
	free(keep);
	pw_free(&w);
	if (rc == CUDA_SUCCESS && he == NULL) {
		pthread_mutex_lock(&node_lock);
		n->kfid = canon;
		pthread_mutex_unlock(&node_lock);
	}
	return rc;
}

CUresult
cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode h,
    const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	{
		unsigned geo[7] = KGEO(p);

		return knode_set(e, h, p->func, geo, p->kernelParams,
		    p->extra);
	}
}

CUresult
cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode h,
    const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	{
		unsigned geo[7] = KGEO(p);

		return knode_set(e, h, p->func != NULL ? p->func :
		    (CUfunction)p->kern, geo, p->kernelParams, p->extra);
	}
}

/* A graph's own node: exec NULL. */
CUresult cuGraphKernelNodeSetParams(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v1 *p) { return cuGraphExecKernelNodeSetParams(NULL, h, p); }
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v2 *p) { return cuGraphExecKernelNodeSetParams_v2(NULL, h, p); }

/* ---- other nodes' parameters (R_NODE_GET, R_NODE_SET) ------------------ */

/*
 * The request node h of type stands for, decoded by sig into v; *keep
 * holds the reply until the caller frees it.
 */
static CUresult
node_get(CUgraphNode h, CUgraphNodeType type, const char *sig,
    struct rpc_val *v, void **keep)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[2], out[2];
	CUresult rc;

	*keep = NULL;
	if (n == NULL || n->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(n->g);
	in[1].u = n->h;
	if ((rc = remote_call(R_NODE_GET, in, out, keep)) != CUDA_SUCCESS)
		return rc;
	if (out[0].u != (uint64_t)type ||
	    rpc_unpack(out[1].p, out[1].len, sig, v) == -1) {
		log_warn("cuGraphNodeGetParams: a malformed reply");
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * New parameters for node h, or exec's copy of it: the request of call,
 * or for call 0 the bytes of raw.
 */
static CUresult
node_set_as(CUgraphExec he, CUgraphNode h, CUgraphNodeType type,
    uint16_t call, const struct rpc_val *req, const struct pw *raw)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[5], out[1];
	uint64_t eid = 0;
	struct pw w;
	void *keep;
	CUresult rc;

	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (he != NULL) {
		void *e = gobj_check(he, GK_GEXEC);

		if (e == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		eid = gobj_id(e);
		gexec_shape_forget(e);
	}
	if (n->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	if (he == NULL)
		knode_forget(n);
	pw_init(&w);
	if (call != 0)
		rpc_pack(&w, rpc_lookup(call)->req, req);
	else
		pw_bytes(&w, raw->p, raw->len);
	in[0].u = gobj_id(n->g);
	in[1].u = eid;
	in[2].u = n->h;
	in[3].u = (uint64_t)type;
	in[4].p = w.p;
	in[4].len = (uint32_t)w.len;
	if (he == NULL)
		n->g->trace = 0;
	rc = remote_call(R_NODE_SET, in, out, &keep);
	free(keep);
	pw_free(&w);
	return rc;
}

static CUresult
node_set(CUgraphExec he, CUgraphNode h, CUgraphNodeType type, uint16_t call,
    const struct rpc_val *req)
{
	return node_set_as(he, h, type, call, req, NULL);
}

/* A child graph node's graph, or exec's copy of it, set to a copy of hc. */
CUresult
graph_child_set(CUgraphExec he, CUgraphNode h, CUgraph hc)
{
	struct ggraph *c = gobj_check(hc, GK_GRAPH);
	struct gnode *n;
	struct pw w;
	CUresult rc;

	if (c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pw_init(&w);
	pw_u64(&w, gobj_id(c));
	rc = w.bad ? CUDA_ERROR_OUT_OF_MEMORY : node_set_as(he, h,
	    CU_GRAPH_NODE_TYPE_GRAPH, 0, NULL, &w);
	pw_free(&w);
	/* The node's graph has other nodes now. */
	if (rc == CUDA_SUCCESS && he == NULL &&
	    (n = node_of(h, NULL)) != NULL && n->child != NULL)
		graph_nodes_free(n->child);
	return rc;
}

CUresult
cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode h, CUgraph c)
{
	if (e == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return graph_child_set(e, h, c);
}

/* ---- memset nodes ---- */

CUresult
cuGraphMemsetNodeGetParams(CUgraphNode h, CUDA_MEMSET_NODE_PARAMS *p)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	void *keep;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = node_get(h, CU_GRAPH_NODE_TYPE_MEMSET, rpc_lookup(R_MEMSET)->req,
	    v, &keep);
	if (rc == CUDA_SUCCESS) {
		memset(p, 0, sizeof *p);
		p->dst = v[3].u;
		p->pitch = v[4].u;
		p->value = (unsigned)v[5].u;
		p->elementSize = (unsigned)v[6].u;
		p->width = v[7].u;
		p->height = v[8].u;
	}
	free(keep);
	return rc;
}

CUresult
cuGraphMemsetNodeSetParams(CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p)
{
	struct rpc_val in[9];
	CUresult rc;

	if ((rc = memset_req(p, NULL, in)) != CUDA_SUCCESS)
		return rc;
	return node_set(NULL, h, CU_GRAPH_NODE_TYPE_MEMSET, R_MEMSET, in);
}

CUresult
cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode h,
    const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	struct rpc_val in[9];
	CUresult rc;

	if ((rc = memset_req(p, ctx, in)) != CUDA_SUCCESS)
		return rc;
	return node_set(e, h, CU_GRAPH_NODE_TYPE_MEMSET, R_MEMSET, in);
}

/* ---- memcpy nodes ---- */

CUresult
cuGraphMemcpyNodeGetParams(CUgraphNode h, CUDA_MEMCPY3D *m)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	uint64_t f[20];
	struct pr r;
	void *keep;
	CUresult rc;
	int i;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = node_get(h, CU_GRAPH_NODE_TYPE_MEMCPY, rpc_lookup(R_MEM_3D)->req,
	    v, &keep);
	if (rc == CUDA_SUCCESS) {
		pr_init(&r, v[3].p, v[3].len);
		for (i = 0; i < 20; i++)
			f[i] = pr_u64(&r);
		if (r.bad)
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (rc == CUDA_SUCCESS) {
		memset(m, 0, sizeof *m);
		m->srcMemoryType = CU_MEMORYTYPE_DEVICE;
		m->srcXInBytes = f[1]; m->srcY = f[2]; m->srcZ = f[3];
		m->srcDevice = f[4]; m->srcPitch = f[5]; m->srcHeight = f[6];
		m->dstMemoryType = CU_MEMORYTYPE_DEVICE;
		m->dstXInBytes = f[8]; m->dstY = f[9]; m->dstZ = f[10];
		m->dstDevice = f[11]; m->dstPitch = f[12]; m->dstHeight = f[13];
		m->WidthInBytes = f[14];
		m->Height = f[15];
		m->Depth = f[16];
	}
	free(keep);
	return rc;
}

static CUresult
mcnode_set(CUgraphExec e, CUgraphNode h, const CUDA_MEMCPY3D *m,
    CUcontext ctx)
{
	struct rpc_val in[5];
	struct pw desc;
	CUresult rc;

	if ((rc = copy_node_req(m, ctx, in, &desc)) != CUDA_SUCCESS)
		return rc;
	rc = node_set(e, h, CU_GRAPH_NODE_TYPE_MEMCPY, R_MEM_3D, in);
	pw_free(&desc);
	return rc;
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode h, const CUDA_MEMCPY3D *m) { return mcnode_set(NULL, h, m, NULL); }
CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode h, const CUDA_MEMCPY3D *m, CUcontext ctx) { return mcnode_set(e, h, m, ctx); }

/* ---- event nodes ---- */

static CUresult
enode_get(CUgraphNode h, int wait, CUevent *pe)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	void *keep, *e;
	CUresult rc;

	if (pe == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = node_get(h, wait ? CU_GRAPH_NODE_TYPE_WAIT_EVENT :
	    CU_GRAPH_NODE_TYPE_EVENT_RECORD, rpc_lookup(wait ?
	    R_STREAM_WAIT_EVENT : R_EVENT_RECORD)->req, v, &keep);
	if (rc == CUDA_SUCCESS) {
		e = gobj_check((void *)(uintptr_t)v[wait ? 2 : 1].u, GK_EVENT);
		if (e == NULL) {
			log_warn("cuGraphEventRecordNodeGetEvent: the node's "
			    "event is not one this process knows");
			rc = CUDA_ERROR_INVALID_HANDLE;
		} else
			*pe = (CUevent)e;
	}
	free(keep);
	return rc;
}

static CUresult
enode_set(CUgraphExec x, CUgraphNode h, int wait, CUevent he)
{
	struct rpc_val in[4];

	/* No event: the driver's INVALID_VALUE, before the node's check. */
	if (he == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (enode_req(he, wait, in) == -1)
		return CUDA_ERROR_INVALID_HANDLE;
	return node_set(x, h, wait ? CU_GRAPH_NODE_TYPE_WAIT_EVENT :
	    CU_GRAPH_NODE_TYPE_EVENT_RECORD, wait ? R_STREAM_WAIT_EVENT :
	    R_EVENT_RECORD, in);
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode h, CUevent *e) { return enode_get(h, 0, e); }
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode h, CUevent *e) { return enode_get(h, 1, e); }
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode h, CUevent e) { return enode_set(NULL, h, 0, e); }
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode h, CUevent e) { return enode_set(NULL, h, 1, e); }
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode h, CUevent e) { return enode_set(x, h, 0, e); }
CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec x, CUgraphNode h, CUevent e) { return enode_set(x, h, 1, e); }

/* ---- host nodes ---- */

/*
 * A host node's request: R_HOST_FUNC's, with the callback id of its
 * function and data (hostcb.c), which run here when the node is reached.
 */
static CUresult
hnode_req(const CUDA_HOST_NODE_PARAMS *p, struct rpc_val *in)
{
	struct gctx *c;
	CUresult rc;

	if (p == NULL || p->fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = 0;
	if ((in[2].u = hostcb_id(p->fn, p->userData)) == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddHostNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_HOST_NODE_PARAMS *p)
{
	struct rpc_val in[3];
	CUresult rc;

	if ((rc = hnode_req(p, in)) != CUDA_SUCCESS)
		return rc;
	return node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_HOST, in[0].u,
	    R_HOST_FUNC, in, NULL);
}

CUresult
cuGraphHostNodeGetParams(CUgraphNode h, CUDA_HOST_NODE_PARAMS *p)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	void *keep;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = node_get(h, CU_GRAPH_NODE_TYPE_HOST,
	    rpc_lookup(R_HOST_FUNC)->req, v, &keep);
	if (rc == CUDA_SUCCESS &&
	    hostcb_lookup(v[2].u, &p->fn, &p->userData) == -1) {
		log_warn("cuGraphHostNodeGetParams: the node's function is "
		    "not one this process gave");
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	free(keep);
	return rc;
}

static CUresult
hnode_set(CUgraphExec e, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p)
{
	struct rpc_val in[3];
	CUresult rc;

	if ((rc = hnode_req(p, in)) != CUDA_SUCCESS)
		return rc;
	return node_set(e, h, CU_GRAPH_NODE_TYPE_HOST, R_HOST_FUNC, in);
}

CUresult cuGraphHostNodeSetParams(CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p) { return hnode_set(NULL, h, p); }
CUresult cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p) { return hnode_set(e, h, p); }

/* ---- memory allocation and free nodes ---- */

/*
 * The driver chooses an allocation node's address when the node is
 * added; it is known here as device memory (copies, pointer queries)
 * until the graph is destroyed.
 */
CUresult
cuGraphAddMemAllocNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	struct gnode *n;
	struct gctx *c;
	struct pw w;
	uint64_t ctx;
	void *keep;
	CUresult rc;

	if (p == NULL || pn == NULL ||
	    (p->accessDescCount > 0 && p->accessDescs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if (p->accessDescCount > RPC_MEMALLOC_ACCESS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	ctx = gobj_id(c);
	pw_init(&w);
	cuwire_memalloc_pack(p, 0, &w);
	rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_MEM_ALLOC, ctx, 0,
	    NULL, &w);
	pw_free(&w);
	if (rc != CUDA_SUCCESS)
		return rc;
	n = (struct gnode *)*pn;
	if ((rc = node_get(*pn, CU_GRAPH_NODE_TYPE_MEM_ALLOC, RPC_SIG_MEMALLOC,
	    v, &keep)) == CUDA_SUCCESS) {
		p->dptr = v[0].u;
		if (mem_add(v[0].u, p->bytesize, c, 0, 0) == 0)
			n->dptr = v[0].u;
	}
	free(keep);
	return rc;
}

CUresult
cuGraphMemAllocNodeGetParams(CUgraphNode h, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val v[RPC_MAX_FIELDS];
	CUmemAccessDesc *acc = NULL;
	struct pr r;
	void *keep;
	size_t i, na;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_get(h, CU_GRAPH_NODE_TYPE_MEM_ALLOC, RPC_SIG_MEMALLOC,
	    v, &keep)) != CUDA_SUCCESS) {
		free(keep);
		return rc;
	}
	na = v[6].len / 12;
	/* The descriptors live with the node, as the driver's do. */
	if (na > 0 && (acc = calloc(na, sizeof *acc)) == NULL) {
		free(keep);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pr_init(&r, v[6].p, v[6].len);
	for (i = 0; i < na; i++) {
		acc[i].location.type = (CUmemLocationType)pr_u32(&r);
		acc[i].location.id = (int)pr_u32(&r);
		acc[i].flags = (CUmemAccess_flags)pr_u32(&r);
	}
	memset(p, 0, sizeof *p);
	p->poolProps.allocType = (CUmemAllocationType)v[2].u;
	p->poolProps.handleTypes = (CUmemAllocationHandleType)v[3].u;
	p->poolProps.location.type = (CUmemLocationType)v[4].u;
	p->poolProps.location.id = (int)v[5].u;
	p->accessDescs = acc;
	p->accessDescCount = na;
	p->bytesize = v[1].u;
	p->dptr = v[0].u;
	free(keep);
	pthread_mutex_lock(&node_lock);
	free(n->kbuf);
	n->kbuf = acc;
	pthread_mutex_unlock(&node_lock);
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddMemFreeNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUdeviceptr dptr)
{
	struct pw w;
	CUresult rc;

	pw_init(&w);
	pw_u64(&w, dptr);
	rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_MEM_FREE, 0, 0, NULL,
	    &w);
	pw_free(&w);
	return rc;
}

CUresult
cuGraphMemFreeNodeGetParams(CUgraphNode h, CUdeviceptr *dptr)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	void *keep;
	CUresult rc;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_get(h, CU_GRAPH_NODE_TYPE_MEM_FREE, "Q", v, &keep)) ==
	    CUDA_SUCCESS)
		*dptr = v[0].u;
	free(keep);
	return rc;
}

/* ---- an exec's nodes enabled ---- */

static CUresult
node_enabled(CUgraphExec he, CUgraphNode h, int set, unsigned *on)
{
	struct gnode *n = node_of(h, NULL);
	void *e = gobj_check(he, GK_GEXEC);
	struct rpc_val in[5], out[1];
	void *keep;
	CUresult rc;

	if (n == NULL || e == NULL || on == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(e);
	in[1].u = gobj_id(n->g);
	in[2].u = n->h;
	in[3].u = (uint64_t)set;
	in[4].u = *on != 0;
	rc = remote_call(R_NODE_ENABLED, in, out, &keep);
	if (rc == CUDA_SUCCESS)
		*on = (unsigned)out[0].u;
	free(keep);
	return rc;
}

CUresult
cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode h, unsigned int on)
{
	return node_enabled(e, h, 1, &on);
}

CUresult
cuGraphNodeGetEnabled(CUgraphExec e, CUgraphNode h, unsigned int *on)
{
	unsigned v = 0;
	CUresult rc;

	if (on == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_enabled(e, h, 0, &v)) == CUDA_SUCCESS)
		*on = v;
	return rc;
}

/* ---- the graph memory of a device ---- */

static CUresult
graph_mem(CUdevice dev, unsigned op, CUgraphMem_attribute attr,
    cuuint64_t *val)
{
	struct rpc_val in[4], out[1];
	void *keep;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (client_device(dev) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	if (op > 0 && val == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = (uint32_t)dev;
	in[1].u = op;
	in[2].u = (uint32_t)attr;
	in[3].u = val != NULL ? *val : 0;
	rc = remote_call(R_GRAPH_MEM, in, out, &keep);
	if (rc == CUDA_SUCCESS && op == 1)
		*val = out[0].u;
	free(keep);
	return rc;
}

CUresult cuDeviceGraphMemTrim(CUdevice dev) { return graph_mem(dev, 0, 0, NULL); }
CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute a, void *v) { return graph_mem(dev, 1, a, v); }
CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute a, void *v) { return graph_mem(dev, 2, a, v); }

/* ---- a node's graph, its clone's ---- */

CUresult
cuGraphNodeGetContainingGraph(CUgraphNode h, CUgraph *pg)
{
	struct gnode *n = node_of(h, NULL);

	if (n == NULL || pg == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pg = (CUgraph)n->g;
	return CUDA_SUCCESS;
}

/* Node h's local id and tools id, as the server's driver numbers them. */
static CUresult
node_ids(CUgraphNode h, unsigned *local, unsigned long long *tools)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[2], out[2];
	void *keep = NULL;
	CUresult rc;

	if (n == NULL || (local == NULL && tools == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(n->g);
	in[1].u = n->h;
	if ((rc = remote_call(R_NODE_ID, in, out, &keep)) == CUDA_SUCCESS) {
		if (local != NULL)
			*local = (unsigned)out[0].u;
		if (tools != NULL)
			*tools = out[1].u;
	}
	free(keep);
	return rc;
}

CUresult
cuGraphNodeGetLocalId(CUgraphNode h, unsigned int *id)
{
	return node_ids(h, id, NULL);
}

CUresult
cuGraphNodeGetToolsId(CUgraphNode h, unsigned long long *id)
{
	return node_ids(h, NULL, id);
}

CUresult
cuGraphNodeFindInClone(CUgraphNode *pn, CUgraphNode h, CUgraph hc)
{
	struct gnode *n = node_of(h, NULL), *found;
	struct ggraph *c = gobj_check(hc, GK_GRAPH);
	struct rpc_val in[3], out[1];
	void *keep;
	CUresult rc;

	if (pn == NULL || n == NULL || c == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(n->g);
	in[2].u = n->h;
	rc = remote_call(R_NODE_FIND, in, out, &keep);
	if (rc == CUDA_SUCCESS) {
		pthread_mutex_lock(&node_lock);
		found = node_for(c, out[0].u, (uint32_t)n->type);
		pthread_mutex_unlock(&node_lock);
		if (found == NULL)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		else
			*pn = (CUgraphNode)found;
	}
	free(keep);
	return rc;
}

/* ---- conditional nodes ---- */

CUresult
cuGraphConditionalHandleCreate(CUgraphConditionalHandle *ph, CUgraph hg,
    CUcontext hc, unsigned int def, unsigned int flags)
{
	struct ggraph *g = gobj_check(hg, GK_GRAPH);
	struct rpc_val in[4], out[1];
	void *keep;
	CUresult rc;

	if (ph == NULL || g == NULL ||
	    (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_ctx(hc, &in[0].u)) != CUDA_SUCCESS)
		return rc;
	in[1].u = gobj_id(g);
	in[2].u = def;
	in[3].u = flags;
	rc = remote_call(R_COND_HANDLE, in, out, &keep);
	if (rc == CUDA_SUCCESS)
		*ph = out[0].u;
	free(keep);
	return rc;
}

/*
 * A conditional node: the driver makes its bodies, which take handles
 * here first (the server knows them by their ids), published once the
 * node is there and kept with it; phGraph_out points at them.
 */
CUresult
graph_cond_add(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUDA_CONDITIONAL_NODE_PARAMS *p)
{
	struct rpc_val v[4];
	struct ggraph *b;
	struct gnode *n;
	struct pw w, ids;
	CUgraph *body;
	uint64_t ctx;
	uint32_t k;
	CUresult rc;

	if (p == NULL || p->handle == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The driver's sizes: if 1 or 2, while 1, switch any. */
	if (p->size == 0 || p->size > RPC_COND_MAX ||
	    (p->type == CU_GRAPH_COND_TYPE_IF && p->size > 2) ||
	    (p->type == CU_GRAPH_COND_TYPE_WHILE && p->size != 1) ||
	    (unsigned)p->type > CU_GRAPH_COND_TYPE_SWITCH)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_ctx(p->ctx, &ctx)) != CUDA_SUCCESS)
		return rc;
	if ((body = calloc(p->size, sizeof *body)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pw_init(&ids);
	for (k = 0; k < p->size; k++) {
		if ((b = graph_new()) == NULL) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto fail;
		}
		b->owned = 1;
		body[k] = (CUgraph)b;
		pw_u64(&ids, gobj_id(b));
	}
	memset(v, 0, sizeof v);
	v[0].u = p->handle;
	v[1].u = (uint32_t)p->type;
	v[2].u = p->size;
	v[3].p = ids.p;
	v[3].len = (uint32_t)ids.len;
	pw_init(&w);
	rpc_pack(&w, RPC_SIG_COND, v);
	rc = ids.bad || w.bad ? CUDA_ERROR_OUT_OF_MEMORY : node_add(pn, g,
	    deps, nd, CU_GRAPH_NODE_TYPE_CONDITIONAL, ctx, 0, NULL, &w);
	pw_free(&w);
	if (rc != CUDA_SUCCESS)
		goto fail;
	pw_free(&ids);
	n = (struct gnode *)*pn;
	for (k = 0; k < p->size; k++)
		gobj_publish(body[k]);
	pthread_mutex_lock(&node_lock);
	n->body = body;
	n->nbody = p->size;
	pthread_mutex_unlock(&node_lock);
	p->phGraph_out = body;
	return CUDA_SUCCESS;
fail:
	for (k = 0; k < p->size; k++)
		free(body[k]);
	free(body);
	pw_free(&ids);
	return rc;
}

/* ---- a child graph node's graph ---- */

static pthread_mutex_t	 child_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The node's own graph (the driver's copy), a graph of this process's
 * from its first asking, the same handle after, until the node goes.
 */
CUresult
cuGraphChildGraphNodeGetGraph(CUgraphNode h, CUgraph *pg)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val in[3], out[1];
	struct ggraph *b;
	void *keep;
	CUresult rc = CUDA_SUCCESS;

	if (n == NULL || pg == NULL || n->type != CU_GRAPH_NODE_TYPE_GRAPH)
		return CUDA_ERROR_INVALID_VALUE;
	/* One asking at a time: the server names a node's graph once. */
	pthread_mutex_lock(&child_lock);
	if ((b = n->child) == NULL) {
		if ((b = graph_new()) == NULL) {
			pthread_mutex_unlock(&child_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		b->owned = 1;
		in[0].u = gobj_id(n->g);
		in[1].u = n->h;
		in[2].u = gobj_id(b);
		rc = remote_call(R_CHILD_GRAPH, in, out, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			free(b);
		else {
			gobj_publish(b);
			pthread_mutex_lock(&node_lock);
			n->child = b;
			pthread_mutex_unlock(&node_lock);
		}
	}
	pthread_mutex_unlock(&child_lock);
	if (rc == CUDA_SUCCESS)
		*pg = (CUgraph)b;
	return rc;
}

/* ---- batch memory-operation nodes ---- */

/* A batch node's request: R_STREAM_MEMOP's on no stream (w pw_free'd by
 * the caller). */
static CUresult
bnode_req(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p, struct rpc_val *in,
    struct pw *w)
{
	CUresult rc;

	pw_init(w);
	if (p == NULL || p->count == 0 || p->paramArray == NULL ||
	    p->count > RPC_MEMOPS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_ctx(p->ctx, &in[0].u)) != CUDA_SUCCESS)
		return rc;
	if ((rc = memop_pack(p->count, p->paramArray, w)) != CUDA_SUCCESS)
		return rc;
	in[1].u = 0;
	in[2].u = p->flags;
	in[3].p = w->p;
	in[3].len = (uint32_t)w->len;
	return CUDA_SUCCESS;
}

CUresult
cuGraphAddBatchMemOpNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
	struct rpc_val in[4];
	struct pw w;
	CUresult rc;

	if ((rc = bnode_req(p, in, &w)) == CUDA_SUCCESS)
		rc = node_add(pn, g, deps, nd, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
		    in[0].u, R_STREAM_MEMOP, in, NULL);
	pw_free(&w);
	return rc;
}

/*
 * The node's operations, in an array kept with the node until the next
 * read or its end, as the driver keeps its own; the context is the one
 * the node was made in when the server says, else NULL.
 */
CUresult
cuGraphBatchMemOpNodeGetParams(CUgraphNode h,
    CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
	struct gnode *n = node_of(h, NULL);
	struct rpc_val v[RPC_MAX_FIELDS];
	CUstreamBatchMemOpParams *ops;
	uint32_t i, k, type, flags;
	uint64_t addr, val;
	struct pr r;
	void *keep;
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = node_get(h, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
	    rpc_lookup(R_STREAM_MEMOP)->req, v, &keep)) != CUDA_SUCCESS) {
		free(keep);
		return rc;
	}
	k = v[3].len / RPC_MEMOP_LEN;
	if ((ops = calloc(k + 1, sizeof *ops)) == NULL) {
		free(keep);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pr_init(&r, v[3].p, v[3].len);
	for (i = 0; i < k; i++) {
		type = pr_u32(&r);
		flags = pr_u32(&r);
		addr = pr_u64(&r);
		val = pr_u64(&r);
		cuwire_memop_set(&ops[i], type, flags, addr, val);
	}
	memset(p, 0, sizeof *p);
	p->ctx = gobj_check((void *)(uintptr_t)v[0].u, GK_CTX);
	p->count = k;
	p->paramArray = ops;
	p->flags = (unsigned)v[2].u;
	free(keep);
	pthread_mutex_lock(&node_lock);
	free(n->kbuf);
	n->kbuf = ops;
	pthread_mutex_unlock(&node_lock);
	return CUDA_SUCCESS;
}

static CUresult
bnode_set(CUgraphExec e, CUgraphNode h, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
	struct rpc_val in[4];
	struct pw w;
	CUresult rc;

	if ((rc = bnode_req(p, in, &w)) == CUDA_SUCCESS)
		rc = node_set(e, h, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
		    R_STREAM_MEMOP, in);
	pw_free(&w);
	return rc;
}

CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode h, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p) { return bnode_set(NULL, h, p); }
CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec e, CUgraphNode h, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p) { return bnode_set(e, h, p); }

/* ---- kernel node attributes ---- */

/*
 * Kernel node h's attribute a read (SATTR_GET) into v or set from v
 * (SATTR_SET), or all of src's copied to h (SATTR_COPY): one round trip,
 * the value as its bytes (rpc_kattr_len).
 */
static CUresult
knode_attr(CUgraphNode h, CUgraphNode hsrc, unsigned op,
    CUkernelNodeAttrID a, CUkernelNodeAttrValue *v)
{
	struct gnode *n = node_of(h, NULL), *s = NULL;
	struct rpc_val in[7], out[1];
	size_t len = 0;
	void *keep;
	CUresult rc;

	if (n == NULL || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	if (op == SATTR_COPY) {
		s = node_of(hsrc, NULL);
		if (s == NULL || s->type != CU_GRAPH_NODE_TYPE_KERNEL)
			return CUDA_ERROR_INVALID_VALUE;
	} else if (v == NULL || (len = rpc_kattr_len((uint32_t)a)) == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = graph_nodes_real(n->g)) != CUDA_SUCCESS ||
	    (s != NULL && (rc = graph_nodes_real(s->g)) != CUDA_SUCCESS))
		return rc;
	in[0].u = gobj_id(n->g);
	in[1].u = n->h;
	in[2].u = op;
	in[3].u = op == SATTR_COPY ? 0 : (uint32_t)a;
	in[4].u = s != NULL ? gobj_id(s->g) : 0;
	in[5].u = s != NULL ? s->h : 0;
	in[6].p = op == SATTR_SET ? (const void *)v : NULL;
	in[6].len = op == SATTR_SET ? (uint32_t)len : 0;
	/* Cooperative or not, an update compares: no one-way update of
	 * this graph (graph.c). */
	if (op == SATTR_COPY || (op == SATTR_SET &&
	    a == CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE))
		n->g->noshape = 1;
	if (op != SATTR_GET)
		n->g->trace = 0;
	rc = remote_call(R_KNODE_ATTR, in, out, &keep);
	if (rc == CUDA_SUCCESS && op == SATTR_GET) {
		if (out[0].len != len) {
			log_warn("cuGraphKernelNodeGetAttribute: a malformed "
			    "reply");
			rc = CUDA_ERROR_INVALID_VALUE;
		} else {
			memset(v, 0, sizeof *v);
			memcpy(v, out[0].p, len);
		}
	}
	free(keep);
	return rc;
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode h, CUkernelNodeAttrID a, CUkernelNodeAttrValue *v) { return knode_attr(h, NULL, SATTR_GET, a, v); }
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode h, CUkernelNodeAttrID a, const CUkernelNodeAttrValue *v) { return knode_attr(h, NULL, SATTR_SET, a, (CUkernelNodeAttrValue *)v); }
CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) { return knode_attr(dst, src, SATTR_COPY, (CUkernelNodeAttrID)0, NULL); }
