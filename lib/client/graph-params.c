/*
 * The generic node calls: cuGraphAddNode and the setters that take a
 * CUgraphNodeParams.  Each kind maps onto its own call (graph-nodes.c),
 * so that a node made either way is the same request on the wire.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "graph.h"
#include "log.h"

/* The reserved fields must be zero, as the driver says. */
static int
params_ok(const CUgraphNodeParams *p)
{
	return p != NULL && p->reserved0[0] == 0 && p->reserved0[1] == 0 &&
	    p->reserved0[2] == 0 && p->reserved2 == 0;
}

/* Whether edge data has any edge that is not the default. */
static int
edges_special(const CUgraphEdgeData *ed, size_t n)
{
	static const CUgraphEdgeData zero;
	size_t i;

	for (i = 0; ed != NULL && i < n; i++)
		if (memcmp(&ed[i], &zero, sizeof zero) != 0)
			return 1;
	return 0;
}

static CUresult	add_node_plain(CUgraphNode *, CUgraph, const CUgraphNode *,
		    size_t, CUgraphNodeParams *);

/*
 * With edge data (ports, a programmatic type), the node is added first,
 * then its edges with their data; a refused edge takes the node away
 * again, so that nothing is left of the call.
 */
static CUresult
add_node(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    const CUgraphEdgeData *ed, size_t nd, CUgraphNodeParams *p)
{
	CUgraphNode n, *to;
	CUresult rc;
	size_t i;

	if (!params_ok(p))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_special(ed, nd))
		return add_node_plain(pn, g, deps, nd, p);
	if (pn == NULL || deps == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((to = calloc(nd, sizeof *to)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = add_node_plain(&n, g, NULL, 0, p)) == CUDA_SUCCESS) {
		for (i = 0; i < nd; i++)
			to[i] = n;
		if ((rc = edges_change(g, deps, to, ed, nd, 1)) ==
		    CUDA_SUCCESS)
			*pn = n;
		else
			(void)cuGraphDestroyNode(n);
	}
	free(to);
	return rc;
}

static CUresult
add_node_plain(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUgraphNodeParams *p)
{
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		/* v3 is v2's layout. */
		return cuGraphAddKernelNode_v2(pn, g, deps, nd,
		    (const CUDA_KERNEL_NODE_PARAMS_v2 *)&p->kernel);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (p->memcpy.flags != 0 || p->memcpy.reserved != 0)
			return CUDA_ERROR_INVALID_VALUE;
		return cuGraphAddMemcpyNode(pn, g, deps, nd,
		    &p->memcpy.copyParams, p->memcpy.copyCtx);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		/* v2 is v1 with the context after it. */
		return cuGraphAddMemsetNode(pn, g, deps, nd,
		    (const CUDA_MEMSET_NODE_PARAMS_v1 *)&p->memset,
		    p->memset.ctx);
	case CU_GRAPH_NODE_TYPE_HOST:
		return cuGraphAddHostNode(pn, g, deps, nd,
		    (const CUDA_HOST_NODE_PARAMS_v1 *)&p->host);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) {
			log_warn("cuGraphAddNode: a child graph moved into its "
			    "node is not supported remotely (cloned only)");
			return CUDA_ERROR_NOT_SUPPORTED;
		}
		if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
			return CUDA_ERROR_INVALID_VALUE;
		return cuGraphAddChildGraphNode(pn, g, deps, nd,
		    p->graph.graph);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return cuGraphAddEmptyNode(pn, g, deps, nd);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return cuGraphAddEventWaitNode(pn, g, deps, nd,
		    p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return cuGraphAddEventRecordNode(pn, g, deps, nd,
		    p->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		/* v2 is v1's layout; dptr comes back in it. */
		return cuGraphAddMemAllocNode(pn, g, deps, nd,
		    (CUDA_MEM_ALLOC_NODE_PARAMS_v1 *)&p->alloc);
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return cuGraphAddMemFreeNode(pn, g, deps, nd, p->free.dptr);
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		return cuGraphAddBatchMemOpNode(pn, g, deps, nd,
		    (const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 *)&p->memOp);
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return graph_cond_add(pn, g, deps, nd, &p->conditional);
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
		log_warn("cuGraphAddNode: external semaphore nodes are not "
		    "supported remotely");
		return CUDA_ERROR_NOT_SUPPORTED;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult
cuGraphAddNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    size_t nd, CUgraphNodeParams *p)
{
	return add_node(pn, g, deps, NULL, nd, p);
}

CUresult
cuGraphAddNode_v2(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps,
    const CUgraphEdgeData *ed, size_t nd, CUgraphNodeParams *p)
{
	return add_node(pn, g, deps, ed, nd, p);
}

/*
 * New parameters for node h, or for exec e's copy of it.  The node's
 * type must be the parameters'; allocation and free nodes take none.
 */
static CUresult
set_node(CUgraphExec e, CUgraphNode h, CUgraphNodeParams *p)
{
	CUgraphNodeType type;
	CUresult rc;

	if (!params_ok(p))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuGraphNodeGetType(h, &type)) != CUDA_SUCCESS)
		return rc;
	if (type != p->type)
		return CUDA_ERROR_INVALID_VALUE;
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		if (e != NULL)
			return cuGraphExecKernelNodeSetParams_v2(e, h,
			    (const CUDA_KERNEL_NODE_PARAMS_v2 *)&p->kernel);
		return cuGraphKernelNodeSetParams_v2(h,
		    (const CUDA_KERNEL_NODE_PARAMS_v2 *)&p->kernel);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (p->memcpy.flags != 0 || p->memcpy.reserved != 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (e != NULL)
			return cuGraphExecMemcpyNodeSetParams(e, h,
			    &p->memcpy.copyParams, p->memcpy.copyCtx);
		return cuGraphMemcpyNodeSetParams(h, &p->memcpy.copyParams);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		if (e != NULL)
			return cuGraphExecMemsetNodeSetParams(e, h,
			    (const CUDA_MEMSET_NODE_PARAMS_v1 *)&p->memset,
			    p->memset.ctx);
		return cuGraphMemsetNodeSetParams(h,
		    (const CUDA_MEMSET_NODE_PARAMS_v1 *)&p->memset);
	case CU_GRAPH_NODE_TYPE_HOST:
		if (e != NULL)
			return cuGraphExecHostNodeSetParams(e, h,
			    (const CUDA_HOST_NODE_PARAMS_v1 *)&p->host);
		return cuGraphHostNodeSetParams(h,
		    (const CUDA_HOST_NODE_PARAMS_v1 *)&p->host);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
			return CUDA_ERROR_INVALID_VALUE;
		return graph_child_set(e, h, p->graph.graph);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;	/* nothing to set */
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (e != NULL)
			return cuGraphExecEventWaitNodeSetEvent(e, h,
			    p->eventWait.event);
		return cuGraphEventWaitNodeSetEvent(h, p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		if (e != NULL)
			return cuGraphExecEventRecordNodeSetEvent(e, h,
			    p->eventRecord.event);
		return cuGraphEventRecordNodeSetEvent(h, p->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		/* The driver's answer. */
		return CUDA_ERROR_NOT_SUPPORTED;
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		if (e != NULL)
			return cuGraphExecBatchMemOpNodeSetParams(e, h,
			    (const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 *)
			    &p->memOp);
		return cuGraphBatchMemOpNodeSetParams(h,
		    (const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 *)&p->memOp);
	default:
		log_warn("cuGraphNodeSetParams: node type %d not supported "
		    "remotely", (int)p->type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

CUresult cuGraphNodeSetParams(CUgraphNode h, CUgraphNodeParams *p) { return set_node(NULL, h, p); }
CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode h, CUgraphNodeParams *p) { return set_node(e, h, p); }
