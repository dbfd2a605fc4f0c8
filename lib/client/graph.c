/*
 * Stream capture and graphs.  A graph lives on the server under an id the
 * client chose (the address of its struct here), so creating, capturing
 * into, destroying and launching one need no reply: a launch is one
 * one-way message however many nodes the graph has.
 *
 * While a stream captures, the one-way work sent on it is recorded by the
 * server's driver into the graph.  The server captures in relaxed mode:
 * all of a client's threads are one thread there, so the capture modes'
 * rules between threads are applied here, with what the client knows of
 * each capture (its mode, thread, streams, and whether an illegal call
 * spoiled it).  Copies between a capturing stream and host memory are
 * refused: a graph's host pointer would name the client's memory, which
 * the server cannot read when the graph runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "graph.h"
#include "io.h"
#include "log.h"

#define CAP_MAX		64	/* captures at once */
#define CAP_STREAMS	32	/* streams joined to one capture */

struct gexec {
	struct gobj	 o;
	struct gctx	*ctx;
	cuuint64_t	 flags;
	unsigned	 id;		/* cuGraphExecGetId's */
	uint64_t	 src;		/* the graph it was instantiated from */
	struct gshape	 sh;		/* graph_shape_now's of what it holds,
					   0: not known (under gexec_lock) */
};

/* Execs whose updates compare more than the shape: node priorities,
 * device launches.  Never predicted (gexec_update). */
#define GEXEC_UNPREDICTED	(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY | \
				 CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)

struct gcap {
	uint64_t	 seq;		/* its capture id, never 0 */
	struct gctx	*ctx;
	struct ggraph	*graph;
	struct gstream	*s[CAP_STREAMS];	/* [0]: where it began */
	int		 ns;
	CUstreamCaptureMode mode;
	pthread_t	 thread;
	int		 invalid;
	int		 noshape;	/* a cooperative launch was captured */
	int		 opaque;	/* work other than launches captured */
	uint64_t	 trace;		/* its launches' functions, in order */
	struct pw	 kl;		/* its launches as graph_listing_made
					   takes them, while it can */
	uint32_t	 nk;
	int		 nolist;	/* no listing to be made here */
	int		 pss;		/* a launch with programmatic
					   serialization among them */
	int		 capto;		/* into the program's graph */
	CUgraphNode	*deps;		/* the open ends last asked for */
	CUgraphEdgeData	*edges;
};

static pthread_mutex_t	 cap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t	 gexec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gcap	*cap_live[CAP_MAX];
static uint64_t		 cap_seq;
static __thread CUstreamCaptureMode cap_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static struct gstream *
cap_stream(uint64_t sid)
{
	return sid > 2 ? (struct gstream *)(uintptr_t)sid : NULL;
}

/* Ends cp: its streams capture no more (cap_lock held). */
static void
cap_end(struct gcap *cp)
{
	int i;

	for (i = 0; i < cp->ns; i++)
		if (cp->s[i] != NULL)
			cp->s[i]->cap = NULL;
	for (i = 0; i < CAP_MAX; i++)
		if (cap_live[i] == cp)
			cap_live[i] = NULL;
	free(cp->deps);
	free(cp->edges);
	pw_free(&cp->kl);
	free(cp);
}

int
capture_any(void)
{
	int i, any = 0;

	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX && !any; i++)
		any = cap_live[i] != NULL;
	pthread_mutex_unlock(&cap_lock);
	return any;
}

/* Is any capture of c on a blocking stream (cap_lock held)? */
static int
cap_blocking(struct gctx *c, int spoil)
{
	int i, j, hit = 0;

	for (i = 0; i < CAP_MAX; i++) {
		struct gcap *cp = cap_live[i];

		if (cp == NULL || cp->ctx != c)
			continue;
		for (j = 0; j < cp->ns; j++)
			if (cp->s[j] != NULL &&
			    !(cp->s[j]->flags & CU_STREAM_NON_BLOCKING)) {
				hit = 1;
				if (spoil)
					cp->invalid = 1;
			}
	}
	return hit;
}

CUresult
capture_gate(void)
{
	pthread_t self = pthread_self();
	CUresult rc = CUDA_SUCCESS;
	int i;

	if (cap_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX; i++) {
		struct gcap *cp = cap_live[i];
		int own;

		if (cp == NULL || cp->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
			continue;
		own = pthread_equal(cp->thread, self);
		if (own || (cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
		    cp->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
			cp->invalid = 1;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	pthread_mutex_unlock(&cap_lock);
	return rc;
}

/* One more word into a capture's trace. */
static uint64_t
trace_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/*
 * Work for stream sid: launch is the function's id (canon) of a kernel
 * launch, which goes into the capture's trace with its flags and
 * attributes; any other work (0) leaves the capture's graph opaque, its
 * shape not predicted (graph.h, graph_shape_now).
 */
static CUresult
capture_work_as(struct gctx *c, uint64_t sid, int host, uint64_t launch,
    unsigned flags, const void *attrs, size_t alen, int *caps)
{
	struct gstream *g = cap_stream(sid);
	CUresult rc = CUDA_SUCCESS;
	const unsigned char *a = attrs;
	size_t i;

	pthread_mutex_lock(&cap_lock);
	if (caps != NULL)
		*caps = g != NULL && g->cap != NULL;
	if (g != NULL && g->cap != NULL) {
		struct gcap *cp = g->cap;

		if (launch == 0 || cp->ns != 1) {
			cp->opaque = 1;
		} else {
			cp->trace = trace_mix(cp->trace, launch);
			cp->trace = trace_mix(cp->trace, flags);
			for (i = 0; i < alen; i += 8) {	/* a word at a time */
				uint64_t v = 0;

				memcpy(&v, a + i, alen - i < 8 ? alen - i : 8);
				cp->trace = trace_mix(cp->trace, v);
			}
		}
	}
	if (sid <= 1 && cap_blocking(c, 1))
		rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	else if (g != NULL && g->cap != NULL && host) {
		log_warn("a copy with host memory on a capturing stream: "
		    "not supported remotely (the graph would hold a pointer "
		    "to this process's memory)");
		g->cap->invalid = 1;
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	pthread_mutex_unlock(&cap_lock);
	return rc;
}

CUresult
capture_work(struct gctx *c, uint64_t sid, int host)
{
	return capture_work_as(c, sid, host, 0, 0, NULL, 0, NULL);
}

CUresult
capture_launch(struct gctx *c, uint64_t sid, uint64_t fn, unsigned flags,
    const void *attrs, size_t alen, int *caps)
{
	return capture_work_as(c, sid, 0, fn != 0 ? fn : 1, flags, attrs,
	    alen, caps);
}

/*
 * A launch captured (client.h: kind), as graph_listing_made takes it:
 * one thread's launches on one stream are the graph's nodes in the order
 * sent.
 */
#define CAP_KL_MAX	(4u << 20)	/* bytes of launches kept */

void
capture_klist(uint64_t sid, int kind, uint64_t fid, const uint32_t geo[7],
    const void *args, uint32_t len)
{
	struct gstream *g = cap_stream(sid);
	struct gcap *cp;
	int i;

	if (g == NULL)
		return;
	pthread_mutex_lock(&cap_lock);
	if ((cp = g->cap) != NULL && !cp->nolist) {
		if (kind == 0 || cp->ns != 1 ||
		    !pthread_equal(cp->thread, pthread_self()) ||
		    cp->kl.len + 44 + len > CAP_KL_MAX)
			cp->nolist = 1;
		else {
			pw_u64(&cp->kl, fid);
			for (i = 0; i < 7; i++)
				pw_u32(&cp->kl, geo[i]);
			pw_u32(&cp->kl, kind == 2);
			cp->pss |= kind == 2;
			pw_u32(&cp->kl, len);
			pw_bytes(&cp->kl, args, len);
			cp->nk++;
			cp->nolist = cp->kl.bad;
		}
	}
	pthread_mutex_unlock(&cap_lock);
}

void
capture_special(uint64_t sid)
{
	struct gstream *g = cap_stream(sid);

	if (g == NULL)
		return;
	pthread_mutex_lock(&cap_lock);
	if (g->cap != NULL)
		g->cap->noshape = 1;
	pthread_mutex_unlock(&cap_lock);
}

void
capture_record(struct gevent *e, uint64_t sid)
{
	struct gstream *g = cap_stream(sid);

	pthread_mutex_lock(&cap_lock);
	e->capseq = g != NULL && g->cap != NULL ? g->cap->seq : 0;
	if (e->capseq != 0)
		g->cap->opaque = 1;	/* a fork or join: no trace of it */
	pthread_mutex_unlock(&cap_lock);
	/* Recorded by a graph's node now: never known complete here. */
	if (e->capseq != 0 && !e->graphed) {
		e->graphed = 1;
		ridle_event_forget(gobj_id(e));
	}
}

void
capture_wait(struct gevent *e, uint64_t sid)
{
	struct gstream *g = cap_stream(sid);
	int i;

	if (g == NULL)
		return;
	pthread_mutex_lock(&cap_lock);
	/* A node or an edge no trace follows (an external event's wait). */
	if (g->cap != NULL)
		g->cap->opaque = 1;
	for (i = 0; e->capseq != 0 && g->cap == NULL && i < CAP_MAX; i++) {
		struct gcap *cp = cap_live[i];

		if (cp != NULL && cp->seq == e->capseq &&
		    cp->ns < CAP_STREAMS) {
			cp->s[cp->ns++] = g;
			g->cap = cp;
		}
	}
	pthread_mutex_unlock(&cap_lock);
}

void
capture_saw(struct gctx *c, CUresult rc)
{
	int i;

	if (rc < CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
	    rc > CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
		return;
	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX; i++)
		if (cap_live[i] != NULL && cap_live[i]->ctx == c)
			cap_live[i]->invalid = 1;
	pthread_mutex_unlock(&cap_lock);
}

int
capture_busy(uint64_t sid)
{
	struct gstream *g = cap_stream(sid);
	int busy;

	if (g == NULL)
		return 0;
	pthread_mutex_lock(&cap_lock);
	busy = g->cap != NULL;
	pthread_mutex_unlock(&cap_lock);
	return busy;
}

void
capture_forget(struct gstream *g)
{
	struct gcap *cp;
	int i;

	pthread_mutex_lock(&cap_lock);
	if ((cp = g->cap) != NULL) {
		for (i = 0; i < cp->ns; i++)
			if (cp->s[i] == g)
				cp->s[i] = NULL;
		cp->invalid = 1;
	}
	pthread_mutex_unlock(&cap_lock);
}

/* ---- capture ------------------------------------------------------------ */

static CUresult
cap_begin(CUstream s, CUstreamCaptureMode mode, int ptsz)
{
	struct rpc_val in[4];
	struct ggraph *gr;
	struct gstream *g;
	struct gcap *cp;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;
	int i;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((g = cap_stream(sid)) == NULL)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if ((gr = calloc(1, sizeof *gr)) == NULL ||
	    (cp = calloc(1, sizeof *cp)) == NULL) {
		free(gr);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gr->o.kind = GK_GRAPH;
	gr->id = graph_next_id();
	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX && cap_live[i] != NULL; i++)
		;
	if (g->cap != NULL || i == CAP_MAX) {
		rc = g->cap != NULL ? CUDA_ERROR_ILLEGAL_STATE :
		    CUDA_ERROR_OUT_OF_MEMORY;
		pthread_mutex_unlock(&cap_lock);
		free(gr);
		free(cp);
		return rc;
	}
	in[0].u = gobj_id(g->ctx);
	in[1].u = sid;
	in[2].u = (uint64_t)mode;
	in[3].u = gobj_id(gr);
	/* Checked here: one-way, like the work it will record. */
	if ((rc = rpost(R_CAPTURE_BEGIN, in, 0)) != CUDA_SUCCESS) {
		pthread_mutex_unlock(&cap_lock);
		free(gr);
		free(cp);
		return rc;
	}
	gobj_publish(gr);
	cp->seq = ++cap_seq;
	cp->ctx = g->ctx;
	cp->graph = gr;
	cp->s[0] = g;
	cp->ns = 1;
	cp->mode = mode;
	cp->thread = pthread_self();
	cap_live[i] = cp;
	g->cap = cp;
	pthread_mutex_unlock(&cap_lock);
	return CUDA_SUCCESS;
}

/*
 * The server handles of n nodes of g, and their edge data, for a request
 * (pw_free'd by the caller, also on failure).
 */
static CUresult
cap_nodes(struct ggraph *g, const CUgraphNode *deps,
    const CUgraphEdgeData *edges, size_t n, struct pw *dw, struct pw *ew)
{
	static const CUgraphEdgeData zero;
	uint64_t h;
	size_t i;
	int any = 0;

	pw_init(dw);
	pw_init(ew);
	if (n > RPC_CAPDEPS_MAX || (n > 0 && deps == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		if ((h = graph_node_h(deps[i], g)) == 0)
			return CUDA_ERROR_INVALID_VALUE;
		pw_u64(dw, h);
		if (edges != NULL && memcmp(&edges[i], &zero, sizeof zero))
			any = 1;
	}
	/* Default edges go as none. */
	for (i = 0; any && i < n; i++)
		pw_bytes(ew, &edges[i], sizeof edges[i]);
	return dw->bad || ew->bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/*
 * cuStreamBeginCaptureToGraph: a capture into the program's graph hg,
 * after deps; one round trip, so that a refusal is known before the
 * stream's work goes on uncaptured.
 */
static CUresult
cap_to_graph(CUstream s, CUgraph hg, const CUgraphNode *deps,
    const CUgraphEdgeData *edges, size_t nd, CUstreamCaptureMode mode,
    int ptsz)
{
	struct ggraph *gr = gobj_check(hg, GK_GRAPH);
	struct rpc_val in[6], out[1];
	struct gstream *g;
	struct gcap *cp;
	struct gctx *c;
	struct pw dw, ew;
	uint64_t sid;
	void *keep;
	CUresult rc;
	int i, k;

	if (gr == NULL || (unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((g = cap_stream(sid)) == NULL)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	/* gr changes: its nodes are the server's first. */
	if ((rc = graph_nodes_real(gr)) != CUDA_SUCCESS)
		return rc;
	if ((rc = cap_nodes(gr, deps, edges, nd, &dw, &ew)) != CUDA_SUCCESS) {
		pw_free(&dw);
		pw_free(&ew);
		return rc;
	}
	if ((cp = calloc(1, sizeof *cp)) == NULL) {
		pw_free(&dw);
		pw_free(&ew);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* The slot and the stream are taken before the round trip. */
	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX && cap_live[i] != NULL; i++)
		;
	rc = g->cap != NULL ? CUDA_ERROR_ILLEGAL_STATE :
	    i == CAP_MAX ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	for (k = 0; rc == CUDA_SUCCESS && k < CAP_MAX; k++)
		if (cap_live[k] != NULL && cap_live[k]->graph == gr)
			rc = CUDA_ERROR_ILLEGAL_STATE;
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_unlock(&cap_lock);
		pw_free(&dw);
		pw_free(&ew);
		free(cp);
		return rc;
	}
	cp->seq = ++cap_seq;
	cp->ctx = g->ctx;
	cp->graph = gr;
	cp->capto = 1;
	gr->trace = 0;		/* no longer only what a capture made */
	cp->s[0] = g;
	cp->ns = 1;
	cp->mode = mode;
	cp->thread = pthread_self();
	cap_live[i] = cp;
	g->cap = cp;
	pthread_mutex_unlock(&cap_lock);
	in[0].u = gobj_id(g->ctx);
	in[1].u = sid;
	in[2].u = (uint64_t)mode;
	in[3].u = gobj_id(gr);
	in[4].p = dw.p;
	in[4].len = (uint32_t)dw.len;
	in[5].p = ew.p;
	in[5].len = (uint32_t)ew.len;
	rc = remote_call(R_CAPTURE_TO_GRAPH, in, out, &keep);
	free(keep);
	pw_free(&dw);
	pw_free(&ew);
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_lock(&cap_lock);
		cap_end(cp);
		pthread_mutex_unlock(&cap_lock);
	}
	return rc;
}

CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m) { return cap_to_graph(s, g, d, e, n, m, 0); }
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m) { return cap_to_graph(s, g, d, e, n, m, 1); }

CUresult cuStreamBeginCapture(CUstream s) { return cap_begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, 0); }
CUresult cuStreamBeginCapture_ptsz(CUstream s) { return cap_begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, 1); }
CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m) { return cap_begin(s, m, 0); }
CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m) { return cap_begin(s, m, 1); }

static CUresult
cap_end_call(CUstream s, CUgraph *pg, int ptsz)
{
	struct rpc_val in[3], out[1];
	struct ggraph *gr;
	struct gstream *g;
	struct gcap *cp;
	struct gctx *c;
	struct pw kl;
	uint64_t sid, m0, m1, trace;
	uint32_t nk;
	void *keep;
	CUresult rc;
	int invalid, capto, lone, made, learn;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	/* A stream not capturing first, as the driver tells it. */
	if ((g = cap_stream(sid)) == NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	pthread_mutex_lock(&cap_lock);
	if ((cp = g->cap) == NULL)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else if (pg == NULL)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (cp->s[0] != g)
		rc = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	else if (cp->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
	    !pthread_equal(cp->thread, pthread_self()))
		rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_unlock(&cap_lock);
		return rc;
	}
	invalid = cp->invalid;
	gr = cp->graph;
	capto = cp->capto;
	if (cp->noshape)
		gr->noshape = 1;
	lone = cp->ns == 1;
	trace = lone && !cp->opaque && cp->trace != 0 ? cp->trace : 0;
	/*
	 * Its launches alone, from the thread that began it: the listing
	 * the program asks for is made here (none of its nodes has a
	 * handle yet, as a capture's open ends asked for would).
	 */
	made = !capto && !invalid && lone && !cp->opaque && !cp->nolist &&
	    cp->nk > 0 && gr->nodes == NULL;
	/* Programmatic edges: as the server's driver made them, once seen. */
	learn = made && cp->pss && !graph_pss_known();
	made = made && !learn;
	kl = cp->kl;
	nk = cp->nk;
	pw_init(&cp->kl);
	cap_end(cp);
	pthread_mutex_unlock(&cap_lock);
	in[0].u = gobj_id(g->ctx);
	in[1].u = sid;
	in[2].u = (!invalid) | (capto ? 0 : graph_listing_wanted());
	/*
	 * One-way where nothing is to come back: a capture of one stream
	 * (no fork left unjoined), valid as far as the client saw, whose
	 * listing the program has never asked for or is made here.  A
	 * failure the server's driver finds all the same comes with the
	 * next call that waits, as a launch's does.
	 */
	if (!capto && !invalid && lone && (in[2].u == 1 || made) &&
	    !rsync_mode()) {
		in[2].u = 1;
		if ((rc = rpost(R_CAPTURE_END, in, 0)) != CUDA_SUCCESS) {
			pw_free(&kl);
			gr->o.magic = 0;
			free(gr);
			*pg = NULL;
			return rc;
		}
		gr->trace = trace;
		if (made && graph_listing_wanted())
			graph_listing_made(gr, kl.p, kl.len, nk,
			    io_sent_count());
		pw_free(&kl);
		*pg = (CUgraph)gr;
		return CUDA_SUCCESS;
	}
	gr->trace = capto ? 0 : trace;
	m0 = io_sent_count();
	rc = remote_call(R_CAPTURE_END, in, out, &keep);
	/* The new graph's listing, where it was asked for and the end was
	 * the one message sent meanwhile. */
	if (rc == CUDA_SUCCESS && !invalid && (m1 = io_sent_count()) ==
	    m0 + 1) {
		graph_listing_came(gr, out[0].p, out[0].len, m1);
		if (learn)
			graph_pss_learn(kl.p, kl.len, nk, out[0].p,
			    out[0].len);
	}
	pw_free(&kl);
	free(keep);
	if (invalid && (rc == CUDA_SUCCESS ||
	    rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED))
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (rc != CUDA_SUCCESS) {
		/* A graph captured into stays the program's. */
		if (!capto) {
			gr->o.magic = 0;
			free(gr);
		}
		*pg = NULL;
		return rc;
	}
	*pg = (CUgraph)gr;
	return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return cap_end_call(s, g, 0); }
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return cap_end_call(s, g, 1); }

/*
 * The capture of stream sid: its open ends read, added to or replaced
 * (op, CAPDEPS_*, with n nodes and their edge data), one round trip.
 * The ends after it come back as node handles of the capture's graph,
 * in arrays kept with the capture until it ends or is asked again.
 */
static CUresult
cap_deps(uint64_t sid, unsigned op, const CUgraphNode *nodes,
    const CUgraphEdgeData *ed, size_t n, const CUgraphNode **deps,
    const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct gstream *g = cap_stream(sid);
	struct rpc_val in[5], out[1];
	struct ggraph *gr = NULL;
	CUgraphNode *dv = NULL;
	CUgraphEdgeData *ev = NULL;
	struct gctx *c = NULL;
	struct gcap *cp;
	struct pw dw, ew;
	struct pr r;
	uint64_t seq = 0, h;
	uint32_t k, m, type;
	void *keep = NULL;
	CUresult rc;
	int i;

	pthread_mutex_lock(&cap_lock);
	if (g != NULL && (cp = g->cap) != NULL) {
		gr = cp->graph;
		seq = cp->seq;
		c = cp->ctx;
	}
	pthread_mutex_unlock(&cap_lock);
	if (gr == NULL)
		return op == CAPDEPS_GET ? CUDA_SUCCESS :
		    CUDA_ERROR_ILLEGAL_STATE;
	if ((rc = cap_nodes(gr, nodes, ed, n, &dw, &ew)) != CUDA_SUCCESS)
		goto out;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = op;
	in[3].p = dw.p;
	in[3].len = (uint32_t)dw.len;
	in[4].p = ew.p;
	in[4].len = (uint32_t)ew.len;
	if ((rc = remote_call(R_CAPTURE_DEPS, in, out, &keep)) !=
	    CUDA_SUCCESS)
		goto out;
	pr_init(&r, out[0].p, out[0].len);
	m = pr_u32(&r);
	if (r.bad || m > out[0].len / (12 + RPC_EDGE_LEN)) {
		log_warn("captureDeps: a malformed reply");
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if ((dv = calloc(m + 1, sizeof *dv)) == NULL ||
	    (ev = calloc(m + 1, sizeof *ev)) == NULL) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (k = 0; k < m && !r.bad; k++) {
		h = pr_u64(&r);
		type = pr_u32(&r);
		pr_bytes(&r, &ev[k], RPC_EDGE_LEN);
		if (!r.bad && (dv[k] = (CUgraphNode)graph_node(gr, h, type)) ==
		    NULL) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
	}
	if (r.bad || pr_done(&r) != 0) {
		log_warn("captureDeps: a malformed reply");
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Kept with the capture, if it is still there. */
	pthread_mutex_lock(&cap_lock);
	for (i = 0; i < CAP_MAX; i++)
		if ((cp = cap_live[i]) != NULL && cp->seq == seq) {
			free(cp->deps);
			free(cp->edges);
			cp->deps = dv;
			cp->edges = ev;
			dv = NULL;
			ev = NULL;
			if (deps != NULL)
				*deps = m > 0 ? cp->deps : NULL;
			if (edges != NULL)
				*edges = m > 0 ? cp->edges : NULL;
			if (ndeps != NULL)
				*ndeps = m;
			break;
		}
	pthread_mutex_unlock(&cap_lock);
out:
	free(keep);
	free(dv);
	free(ev);
	pw_free(&dw);
	pw_free(&ew);
	return rc;
}

static CUresult
cap_update(CUstream s, int ptsz, CUgraphNode *nodes,
    const CUgraphEdgeData *ed, size_t n, unsigned flags)
{
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	/* The capture's dependencies changed: no trace of that. */
	pthread_mutex_lock(&cap_lock);
	if (cap_stream(sid) != NULL && cap_stream(sid)->cap != NULL)
		cap_stream(sid)->cap->opaque = 1;
	pthread_mutex_unlock(&cap_lock);
	return cap_deps(sid, flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ?
	    CAPDEPS_SET : CAPDEPS_ADD, nodes, ed, n, NULL, NULL, NULL);
}

CUresult cuStreamUpdateCaptureDependencies(CUstream s, CUgraphNode *d, size_t n, unsigned int f) { return cap_update(s, 0, d, NULL, n, f); }
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream s, CUgraphNode *d, size_t n, unsigned int f) { return cap_update(s, 1, d, NULL, n, f); }
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream s, CUgraphNode *d, const CUgraphEdgeData *e, size_t n, unsigned int f) { return cap_update(s, 0, d, e, n, f); }
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream s, CUgraphNode *d, const CUgraphEdgeData *e, size_t n, unsigned int f) { return cap_update(s, 1, d, e, n, f); }

/* What a stream's capture is, answered here. */
static CUresult
cap_info(CUstream s, int ptsz, CUstreamCaptureStatus *st, cuuint64_t *id,
    CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
    size_t *ndeps)
{
	struct gstream *g;
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&cap_lock);
	g = cap_stream(sid);
	if (g == NULL) {
		if (cap_blocking(c, 0))
			rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
	} else if (g->cap == NULL)
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
	else {
		*st = g->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED :
		    CU_STREAM_CAPTURE_STATUS_ACTIVE;
		if (id != NULL)
			*id = g->cap->seq;
		if (graph != NULL)
			*graph = (CUgraph)g->cap->graph;
	}
	pthread_mutex_unlock(&cap_lock);
	if (deps != NULL)
		*deps = NULL;
	if (edges != NULL)
		*edges = NULL;
	if (ndeps != NULL)
		*ndeps = 0;
	/* The open ends are the server's: asked for only when wanted. */
	if (rc == CUDA_SUCCESS && *st != CU_STREAM_CAPTURE_STATUS_NONE &&
	    (deps != NULL || edges != NULL || ndeps != NULL))
		rc = cap_deps(sid, CAPDEPS_GET, NULL, NULL, 0, deps, edges,
		    ndeps);
	return rc;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) { return cap_info(s, 0, st, NULL, NULL, NULL, NULL, NULL); }
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st) { return cap_info(s, 1, st, NULL, NULL, NULL, NULL, NULL); }
CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id) { return cap_info(s, 0, st, id, NULL, NULL, NULL, NULL); }
CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id) { return cap_info(s, 1, st, id, NULL, NULL, NULL, NULL); }

CUresult
cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *st,
    cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
	return cap_info(s, 0, st, id, graph, deps, NULL, ndeps);
}

CUresult
cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *st,
    cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
	return cap_info(s, 1, st, id, graph, deps, NULL, ndeps);
}

CUresult
cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *st,
    cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
    const CUgraphEdgeData **edges, size_t *ndeps)
{
	return cap_info(s, 0, st, id, graph, deps, edges, ndeps);
}

CUresult
cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st,
    cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
    const CUgraphEdgeData **edges, size_t *ndeps)
{
	return cap_info(s, 1, st, id, graph, deps, edges, ndeps);
}

CUresult
cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;

	if (mode == NULL || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	old = cap_mode;
	cap_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ---- graphs ------------------------------------------------------------- */

struct ggraph *
graph_new(void)
{
	struct ggraph *g = calloc(1, sizeof *g);

	if (g != NULL) {
		g->o.kind = GK_GRAPH;
		g->id = graph_next_id();
	}
	return g;
}

CUresult
cuGraphCreate(CUgraph *pg, unsigned int flags)
{
	struct rpc_val in[2];
	struct ggraph *g;
	CUresult rc;

	if (pg == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if ((g = graph_new()) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	in[0].u = gobj_id(g);
	in[1].u = flags;
	if ((rc = rpost(R_GRAPH_CREATE, in, 0)) != CUDA_SUCCESS) {
		free(g);
		return rc;
	}
	gobj_publish(g);
	*pg = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult
cuGraphDestroy(CUgraph h)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct rpc_val in[1];
	CUresult rc;

	if (g == NULL || g->owned)	/* a body goes with its node */
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(g);
	rc = rpost(R_GRAPH_DESTROY, in, 0);
	graph_nodes_free(g);
	g->o.magic = 0;
	free(g);
	return rc;
}

CUresult
cuGraphClone(CUgraph *pg, CUgraph h)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH), *n;
	struct rpc_val in[2], out[1];
	void *keep;
	CUresult rc;

	if (pg == NULL || g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((n = graph_new()) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	in[0].u = gobj_id(n);
	in[1].u = gobj_id(g);
	rc = remote_call(R_GRAPH_CLONE, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		free(n);
		return rc;
	}
	gobj_publish(n);
	*pg = (CUgraph)n;
	return CUDA_SUCCESS;
}

/* The id of the graph exec e (checked) was instantiated from. */
uint64_t
gexec_source(const void *e)
{
	return ((const struct gexec *)e)->src;
}

static CUresult
gexec_new(CUgraphExec *pe, CUgraph h, cuuint64_t flags, CUstream up)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct rpc_val in[5], out[1];
	struct gexec *e;
	struct gctx *c;
	uint64_t sid = 0;
	void *keep;
	CUresult rc;

	if (pe == NULL || g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
	    (rc = stream_id(up, 0, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->o.kind = GK_GEXEC;
	e->id = graph_next_id();
	e->ctx = c;
	e->flags = flags;
	e->src = gobj_id(g);
	if (!(flags & GEXEC_UNPREDICTED))
		graph_shape_now(g, &e->sh);
	in[0].u = gobj_id(c);
	in[1].u = gobj_id(e);
	in[2].u = gobj_id(g);
	in[3].u = flags;
	in[4].u = sid;
	/*
	 * One-way where the graph is kernel nodes alone, as its listing or
	 * its capture's trace shows (its shape known), with no upload: what
	 * the driver refuses of such a graph is a failure the next call
	 * that waits reports, as a launch's.
	 */
	if (e->sh.shape != 0 && !(flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
	    !rsync_mode())
		rc = rpost(R_GRAPH_INSTANTIATE, in, 0);
	else {
		rc = remote_call(R_GRAPH_INSTANTIATE, in, out, &keep);
		free(keep);
	}
	if (rc != CUDA_SUCCESS) {
		free(e);
		return rc;
	}
	gobj_publish(e);
	*pe = (CUgraphExec)e;
	return CUDA_SUCCESS;
}

CUresult
cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *err, char *log,
    size_t loglen)
{
	if (err != NULL)
		*err = NULL;
	if (log != NULL && loglen > 0)
		log[0] = '\0';
	return gexec_new(pe, g, 0, NULL);
}

CUresult
cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *err,
    char *log, size_t loglen)
{
	return cuGraphInstantiate(pe, g, err, log, loglen);
}

CUresult
cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g,
    unsigned long long flags)
{
	/* Upload needs a stream: only WithParams takes one. */
	if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
		return CUDA_ERROR_INVALID_VALUE;
	return gexec_new(pe, g, flags, NULL);
}

static CUresult
gexec_params(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult rc;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = gexec_new(pe, g, p->flags, p->hUploadStream);
	p->hErrNode_out = NULL;
	p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS :
	    CUDA_GRAPH_INSTANTIATE_ERROR;
	return rc;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) { return gexec_params(pe, g, p); }
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) { return gexec_params(pe, g, p); }

CUresult
cuGraphExecDestroy(CUgraphExec h)
{
	struct gexec *e = gobj_check(h, GK_GEXEC);
	struct rpc_val in[1];
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(e);
	rc = rpost(R_GEXEC_DESTROY, in, 0);
	e->o.magic = 0;
	free(e);
	return rc;
}

CUresult
cuGraphExecGetFlags(CUgraphExec h, cuuint64_t *flags)
{
	struct gexec *e = gobj_check(h, GK_GEXEC);

	if (e == NULL || flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = e->flags;
	return CUDA_SUCCESS;
}

/* A launch or an upload: one one-way message, errors deferred. */
static CUresult
gexec_run(uint16_t type, CUgraphExec h, CUstream s, int ptsz)
{
	struct gexec *e = gobj_check(h, GK_GEXEC);
	struct rpc_val in[3];
	struct gctx *c;
	uint64_t sid;
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(e->ctx);
	in[1].u = gobj_id(e);
	in[2].u = sid;
	return rpost(type, in, 0);
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream s) { return gexec_run(R_GRAPH_LAUNCH, e, s, 0); }
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { return gexec_run(R_GRAPH_LAUNCH, e, s, 1); }
CUresult cuGraphUpload(CUgraphExec e, CUstream s) { return gexec_run(R_GRAPH_UPLOAD, e, s, 0); }
CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream s) { return gexec_run(R_GRAPH_UPLOAD, e, s, 1); }

void
gexec_shape_forget(void *h)
{
	struct gexec *e = h;

	pthread_mutex_lock(&gexec_lock);
	memset(&e->sh, 0, sizeof e->sh);
	pthread_mutex_unlock(&gexec_lock);
}

/*
 * cuGraphExecUpdate.  Where the exec holds a graph of the new one's shape
 * (glist_shape: the same kernel nodes and edges; only functions,
 * arguments and geometry differ, as when ggml captures each token), the
 * driver's update cannot fail for what the graphs are: one-way, like a
 * launch.  The shape comes from the graph's listing, or from its
 * capture's trace (graph_shape_now); refused all the same, the server
 * instantiates the exec anew from the graph, and what it cannot mend
 * comes with the next call that waits.  Where both topologies are known
 * and differ, the driver refuses (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
 * the exec left as it was): refused here, nothing sent.  Anything else,
 * or GLEAM_SYNC, is a round trip.
 */
static CUresult
gexec_update(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResult *res)
{
	struct gexec *e = gobj_check(he, GK_GEXEC);
	struct ggraph *g = gobj_check(hg, GK_GRAPH);
	struct rpc_val in[2], out[2];
	struct gshape sh, held;
	void *keep;
	CUresult rc;

	if (e == NULL || g == NULL || res == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(e);
	in[1].u = gobj_id(g);
	memset(&sh, 0, sizeof sh);
	if (!(e->flags & GEXEC_UNPREDICTED))
		graph_shape_now(g, &sh);
	/*
	 * A captured graph whose shape is not known yet: its listing,
	 * once, so that the next captures of the same launches are known
	 * by their trace (graph_shape_now).
	 */
	if (sh.shape == 0 && g->trace != 0 && !g->noshape && !rsync_mode() &&
	    !(e->flags & GEXEC_UNPREDICTED))
		graph_shape_fetch(g, &sh);
	pthread_mutex_lock(&gexec_lock);
	held = e->sh;
	pthread_mutex_unlock(&gexec_lock);
	if (sh.shape != 0 && sh.shape == held.shape && !rsync_mode()) {
		*res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
		return rpost(R_GEXEC_UPDATE, in, 0);
	}
	if (sh.topo != 0 && held.topo != 0 && sh.topo != held.topo &&
	    !rsync_mode()) {
		*res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	}
	rc = remote_call(R_GEXEC_UPDATE, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS) {
		gexec_shape_forget(e);
		*res = CU_GRAPH_EXEC_UPDATE_ERROR;
		return rc;
	}
	*res = (CUgraphExecUpdateResult)out[1].u;
	rc = (CUresult)out[0].u;
	pthread_mutex_lock(&gexec_lock);
	if (rc == CUDA_SUCCESS)
		e->sh = sh;
	else
		memset(&e->sh, 0, sizeof e->sh);
	pthread_mutex_unlock(&gexec_lock);
	return rc;
}

CUresult
cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphNode *err,
    CUgraphExecUpdateResult *res)
{
	if (err != NULL)
		*err = NULL;
	return gexec_update(e, g, res);
}

CUresult
cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g,
    CUgraphExecUpdateResultInfo *info)
{
	if (info == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(info, 0, sizeof *info);
	return gexec_update(e, g, &info->result);
}

/* The server's driver writes the dot text; the file is written here. */
CUresult
cuGraphDebugDotPrint(CUgraph h, const char *path, unsigned int flags)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);
	struct rpc_val in[2], out[1];
	void *keep;
	FILE *f;
	CUresult rc;

	if (g == NULL || path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(g);
	in[1].u = flags;
	rc = remote_call(R_GRAPH_DOT, in, out, &keep);
	if (rc == CUDA_SUCCESS) {
		if ((f = fopen(path, "w")) == NULL)
			rc = CUDA_ERROR_OPERATING_SYSTEM;
		else {
			if (fwrite(out[0].p, 1, out[0].len, f) != out[0].len)
				rc = CUDA_ERROR_OPERATING_SYSTEM;
			if (fclose(f) != 0)
				rc = CUDA_ERROR_OPERATING_SYSTEM;
		}
	}
	free(keep);
	return rc;
}

/*
 * Graph and exec ids: the driver's are its own counters, unique among
 * a process's graphs (and execs); these are too, counted here.
 */
static unsigned		 graph_ids;

unsigned
graph_next_id(void)
{
	return __atomic_add_fetch(&graph_ids, 1, __ATOMIC_RELAXED);
}

CUresult
cuGraphGetId(CUgraph h, unsigned int *id)
{
	struct ggraph *g = gobj_check(h, GK_GRAPH);

	if (g == NULL || id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*id = g->id;
	return CUDA_SUCCESS;
}

CUresult
cuGraphExecGetId(CUgraphExec h, unsigned int *id)
{
	struct gexec *e = gobj_check(h, GK_GEXEC);

	if (e == NULL || id == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*id = e->id;
	return CUDA_SUCCESS;
}
