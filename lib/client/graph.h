/* Graphs and their nodes, between graph.c and graph-nodes.c. */
#ifndef GLEAM_CLIENT_GRAPH_H
#define GLEAM_CLIENT_GRAPH_H

#include "client.h"

struct gnode;

struct ggraph {
	struct gobj	 o;
	struct gnode	*nodes;		/* handles given out, by server's */
	unsigned	 id;		/* cuGraphGetId's, given here */
	int		 owned;		/* a conditional node's body: the
					   node's, freed with it */
	int		 noshape;	/* holds what an update may refuse
					   beyond its shape (a cooperative
					   launch): never predicted */
	uint64_t	 trace;		/* a capture of kernel launches on
					   one stream: their functions,
					   flags and attributes hashed; 0
					   for any other graph */
	uint64_t	*vfid;		/* a capture's nodes named here
					   (graph_listing_made): their
					   functions (canon), until the
					   server's handles are known */
	uint32_t	 vn;
};

/* A new graph handle, not yet published; NULL: no memory. */
struct ggraph	*graph_new(void);

/* A new graph's or exec's id (cuGraphGetId, cuGraphExecGetId). */
unsigned	graph_next_id(void);

/*
 * A capture's end: 2 to ask for the new graph's listing with the reply
 * (the program lists the graphs it captures, as ggml does every token),
 * else 0; and the listing that came, kept as R_GRAPH_NODES' would be,
 * nothing having been sent since mark.
 */
unsigned	graph_listing_wanted(void);
void		graph_listing_came(const struct ggraph *g, const void *p,
		    uint32_t len, uint64_t mark);

/*
 * A capture of n kernel launches on one stream, one thread, nothing else
 * (graph.c), whose end went one-way: its listing made here from the
 * launches kl holds (each a u64 function id, seven u32 of geometry, a u32
 * programmatic serialization flag, a u32 length and the arguments, in
 * order), a chain, kept as a listing from the server would be; its
 * nodes get handles of this process's own (graph_nodes_real swaps the
 * server's in).  mark: io_sent_count() after the end.
 */
void		graph_listing_made(struct ggraph *g, const void *kl, size_t len,
		    uint32_t n, uint64_t mark);
/*
 * A launch with programmatic serialization makes the edge from the one
 * before a programmatic one, with edge data the server's driver chooses:
 * graph_pss_known says whether it was seen, graph_pss_learn takes it
 * from the server's listing p of a capture whose launches kl holds.
 */
int		graph_pss_known(void);
void		graph_pss_learn(const void *kl, size_t kllen, uint32_t n,
		    const void *p, uint32_t len);
/*
 * The server's handles for g's nodes where they were made here: its
 * listing asked for (a round trip) and matched to the capture's chain.
 * Called before anything names g's nodes to the server or changes g.
 */
CUresult	graph_nodes_real(struct ggraph *g);

/*
 * What cuGraphExecUpdate compares of g (glist_shape: shape, and topo
 * without the edges' data), where the listing kept is still true of it,
 * else, for a capture whose trace (its launches) was seen before with a
 * listing, that listing's; else 0 (graph-nodes.c).  The one-way update
 * (graph.c) goes where an exec holds a graph of the same shape (a server
 * whose driver refuses it all the same instantiates the exec anew from
 * the graph); one to another topology is refused here.
 */
struct gshape {
	uint64_t	 shape, topo;
};
void		graph_shape_now(const struct ggraph *g, struct gshape *);
/* The same from g's listing asked for now (a round trip); 0 on failure. */
void		graph_shape_fetch(struct ggraph *g, struct gshape *);

/* An exec's node set other than the one-way kind: its shape unknown. */
void		gexec_shape_forget(void *e);

/* The server's handle of node h when it is one of g's, else 0. */
uint64_t	graph_node_h(const void *h, const struct ggraph *g);
/* g's handle for the server's node h of type, made if new; NULL: no memory. */
struct gnode	*graph_node(struct ggraph *g, uint64_t h, uint32_t type);

/* A child graph node's graph, or exec e's copy of it, set to a copy. */
CUresult	graph_child_set(CUgraphExec e, CUgraphNode, CUgraph);
/* cuGraphAddNode's conditional nodes (graph-nodes.c). */
CUresult	graph_cond_add(CUgraphNode *, CUgraph, const CUgraphNode *,
		    size_t, CUDA_CONDITIONAL_NODE_PARAMS *);

/* The id of the graph the exec e (checked) was instantiated from. */
uint64_t	gexec_source(const void *e);

/* Frees the node handles of g (before g itself goes). */
void	graph_nodes_free(struct ggraph *);
/* Edges added (add) or removed, with their data (NULL: the default). */
CUresult	edges_change(CUgraph, const CUgraphNode *, const CUgraphNode *,
		    const CUgraphEdgeData *, size_t, int add);

/* memop.c: n operations as R_STREAM_MEMOP carries them, into w. */
CUresult	memop_pack(unsigned n, const CUstreamBatchMemOpParams *,
		    struct pw *w);

/* exec.c: the R_LAUNCH request of a kernel node, on no stream. */
CUresult	launch_request(CUfunction, unsigned gx, unsigned gy, unsigned gz,
		    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
		    void **params, void **extra, struct rpc_val *in,
		    char **args);

#endif
