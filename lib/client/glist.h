/*
 * A graph's listing as the server sends it (R_GRAPH_NODES' reply, and
 * R_CAPTURE_END's where asked for: gleam-protocol(5)), decoded and
 * checked; graph-nodes.c turns it into node handles.  Apart from the rest
 * of the client so that its fuzz target (tests/fuzz/fuzz_glist.c) can
 * feed it anything.
 */
#ifndef GLEAM_GLIST_H
#define GLEAM_GLIST_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/* A kernel node's parameters, as R_KNODE_GET's reply gives them. */
struct glist_kparams {
	uint32_t	 idx;		/* the node's index in the listing */
	uint64_t	 fid;		/* the client's function id */
	uint32_t	 geo[7];	/* grid, block, shared memory */
	uint32_t	 len;
	const unsigned char *args;	/* into the listing's bytes */
};

struct glist_wire {
	uint32_t	 n, nroot, nedge, nk;
	uint64_t	*h;		/* the server's node handles */
	uint32_t	*type;		/* and types, n of each */
	uint32_t	*root;		/* node indices, nroot */
	uint32_t	*from, *to;	/* node indices, nedge of each */
	CUgraphEdgeData	*data;		/* nedge, or NULL: all the default */
	struct glist_kparams *k;	/* nk, each of a kernel node, once */
};

/*
 * Decodes len bytes at p into *w: 0; -1 where they are malformed (an
 * index out of range, a count the bytes cannot hold, a parameter of a
 * node that is not a kernel or twice, bytes left over); -2 out of memory.
 * On failure *w holds nothing.  The parameters' args point into p.
 */
int	glist_decode(const void *p, size_t len, struct glist_wire *w);
void	glist_wire_free(struct glist_wire *w);

/*
 * What cuGraphExecUpdate compares of a graph whose nodes are all kernels
 * (graph.c, the one-way update): the nodes' order and types, the roots,
 * the edges and their data; not the functions (the driver lets an update
 * change a kernel node's function: each must be one canon knows, mapping
 * a function id to one id whichever handle names it), the arguments or
 * the geometry.  0 where the listing is not all kernel nodes with their
 * parameters (a node of another type, or parameters the server left
 * out): no prediction.  *topo, where not NULL: the same without the
 * edges' data (the topology, whose change the driver always refuses), 0
 * with the shape.
 */
uint64_t glist_shape(const struct glist_wire *w,
	    uint64_t (*canon)(uint64_t fid), uint64_t *topo);

/*
 * w as the chain of n kernel nodes a capture of n launches makes (each
 * after the one before, the first the root), followed from its root:
 * order[i], the listing's index of the i-th node, pos[] the inverse (n of
 * each).  0, or -1 where w is not such a chain.
 */
int	glist_chain(const struct glist_wire *w, uint32_t n, uint32_t *order,
	    uint32_t *pos);

#endif
