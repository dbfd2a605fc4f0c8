/* Graphs and their nodes, between graph.c and graph-nodes.c. */
#ifndef GLEAM_CLIENT_GRAPH_H
#define GLEAM_CLIENT_GRAPH_H

#include "client.h"

struct gnode;

struct ggraph {
	struct gobj	 o;
	struct gnode	*nodes;		/* handles given out, by server's */
};

/* Frees the node handles of g (before g itself goes). */
void	graph_nodes_free(struct ggraph *);

#endif
