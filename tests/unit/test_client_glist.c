/*
 * Unit tests for the client's decoding of a graph's listing
 * (lib/client/glist.c; gleam-protocol(5), graphNodes): a whole listing
 * with edge data and kernel parameters, an older server's without them,
 * and each way one can be malformed, refused whole.
 */
#include <stdint.h>
#include <string.h>

#include "../../lib/client/glist.c"
#include "t.h"

static unsigned char buf[1024];
static size_t len;

static void
u32(uint32_t v)
{
	memcpy(buf + len, &v, 4);	/* little-endian hosts, as the wire */
	len += 4;
}

static void
u64(uint64_t v)
{
	memcpy(buf + len, &v, 8);
	len += 8;
}

/* Three nodes (kernel, memset, kernel), a root, two edges. */
static void
head(void)
{
	len = 0;
	u32(3);
	u64(0x1000); u32(CU_GRAPH_NODE_TYPE_KERNEL);
	u64(0x2000); u32(CU_GRAPH_NODE_TYPE_MEMSET);
	u64(0x3000); u32(CU_GRAPH_NODE_TYPE_KERNEL);
	u32(1); u32(0);
	u32(2); u32(0); u32(1); u32(1); u32(2);
}

static void
kparam(uint32_t idx, uint32_t n)
{
	uint32_t i;

	u32(idx);
	u64(7);
	for (i = 0; i < 7; i++)
		u32(i + 1);
	u32(n);
	for (i = 0; i < n; i++)
		buf[len++] = (unsigned char)(i + idx);
}

static int
decode(struct glist_wire *w)
{
	return glist_decode(buf, len, w);
}

static void
test_whole(void)
{
	struct glist_wire w;

	head();
	u32(0);			/* no edge data */
	u32(2);
	kparam(0, 16);
	kparam(2, 0);		/* a kernel of no parameters */
	CHECK(decode(&w) == 0);
	CHECK(w.n == 3 && w.nroot == 1 && w.nedge == 2 && w.nk == 2);
	CHECK(w.h[2] == 0x3000 && w.type[1] == CU_GRAPH_NODE_TYPE_MEMSET);
	CHECK(w.from[1] == 1 && w.to[1] == 2 && w.data == NULL);
	CHECK(w.k[0].idx == 0 && w.k[0].fid == 7 && w.k[0].len == 16 &&
	    w.k[0].geo[6] == 7 && w.k[0].args[15] == 15);
	CHECK(w.k[1].idx == 2 && w.k[1].len == 0);
	glist_wire_free(&w);
	CHECK(w.h == NULL && w.k == NULL);
}

static void
test_older(void)
{
	struct glist_wire w;
	size_t i;

	/* An older server: nothing after the edges. */
	head();
	CHECK(decode(&w) == 0);
	CHECK(w.n == 3 && w.nk == 0 && w.k == NULL);
	glist_wire_free(&w);
	/* Edge data, then no parameters. */
	head();
	u32(2);
	for (i = 0; i < 2 * sizeof(CUgraphEdgeData); i++)
		buf[len++] = (unsigned char)i;
	CHECK(decode(&w) == 0);
	CHECK(w.data != NULL && w.nk == 0);
	glist_wire_free(&w);
}

static void
test_malformed(void)
{
	struct glist_wire w;
	size_t whole;

	/* A parameter of the memset node. */
	head();
	u32(0);
	u32(1);
	kparam(1, 4);
	CHECK(decode(&w) == -1 && w.h == NULL);
	/* The same node's twice. */
	head();
	u32(0);
	u32(2);
	kparam(0, 4);
	kparam(0, 4);
	CHECK(decode(&w) == -1);
	/* An index past the nodes. */
	head();
	u32(0);
	u32(1);
	kparam(3, 4);
	CHECK(decode(&w) == -1);
	/* More parameters than nodes. */
	head();
	u32(0);
	u32(4);
	CHECK(decode(&w) == -1);
	/* Arguments past the end, and a byte left over. */
	head();
	u32(0);
	u32(1);
	kparam(0, 8);
	whole = len;
	len -= 1;
	CHECK(decode(&w) == -1);
	len = whole + 1;
	buf[whole] = 0;
	CHECK(decode(&w) == -1);
	len = whole;
	CHECK(decode(&w) == 0);
	glist_wire_free(&w);
	/* Edge data for another number of edges. */
	head();
	u32(1);
	CHECK(decode(&w) == -1);
	/* A root and an edge out of range; a count the bytes cannot hold. */
	head();
	memcpy(buf + 4 + 36 + 4, &(uint32_t){ 3 }, 4);
	CHECK(decode(&w) == -1);
	head();
	memcpy(buf + 4 + 36 + 8 + 4 + 4, &(uint32_t){ 9 }, 4);
	CHECK(decode(&w) == -1);
	head();
	memcpy(buf, &(uint32_t){ 1000000 }, 4);
	CHECK(decode(&w) == -1);
	len = 0;
	CHECK(decode(&w) == -1);
}

/* Three kernel nodes, 0 -> 1 and 0 -> 2 (or 1 -> 2 with chain). */
static void
khead(int chain)
{
	len = 0;
	u32(3);
	u64(0x1000); u32(CU_GRAPH_NODE_TYPE_KERNEL);
	u64(0x2000); u32(CU_GRAPH_NODE_TYPE_KERNEL);
	u64(0x3000); u32(CU_GRAPH_NODE_TYPE_KERNEL);
	u32(1); u32(0);
	u32(2); u32(0); u32(1); u32(chain ? 1 : 0); u32(2);
}

/* A kernel node's parameters: function fid, grid x gx, n bytes of b. */
static void
kp(uint32_t idx, uint64_t fid, uint32_t gx, uint32_t n, unsigned char b)
{
	uint32_t i;

	u32(idx);
	u64(fid);
	u32(gx);
	for (i = 1; i < 7; i++)
		u32(i);
	u32(n);
	for (i = 0; i < n; i++)
		buf[len++] = b;
}

/* Function ids 7 and 8 are one function's handles; 9 is unknown. */
static uint64_t
canon(uint64_t fid)
{
	return fid == 8 ? 7 : fid == 9 ? 0 : fid;
}

/*
 * listing: the shape of what is in buf (0 also where it does not decode),
 * its topology in topo.
 */
static uint64_t topo;

static uint64_t
shape(void)
{
	struct glist_wire w;
	uint64_t h;

	topo = 0;
	if (decode(&w) != 0)
		return 0;
	h = glist_shape(&w, canon, &topo);
	glist_wire_free(&w);
	CHECK((h == 0) == (topo == 0));
	return h;
}

static void
test_shape(void)
{
	uint64_t a, b, ta;

	khead(0);
	u32(0);
	u32(3);
	kp(0, 7, 1, 8, 1); kp(1, 5, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK((a = shape()) != 0);
	ta = topo;
	/* Other arguments and grids, a function by another handle, another
	 * function at a node: what an update may change. */
	khead(0);
	u32(0);
	u32(3);
	kp(0, 8, 64, 8, 9); kp(1, 5, 2, 16, 3); kp(2, 6, 7, 0, 0);
	CHECK(shape() == a && topo == ta);
	khead(0);
	u32(0);
	u32(3);
	kp(0, 7, 1, 8, 1); kp(1, 6, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK(shape() == a && topo == ta);
	/* Other edges: another topology; edge data: the same topology,
	 * another shape. */
	khead(1);
	u32(0);
	u32(3);
	kp(0, 7, 1, 8, 1); kp(1, 5, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK((b = shape()) != 0 && b != a && topo != ta);
	khead(0);
	u32(2);
	memset(buf + len, 0, 2 * sizeof(CUgraphEdgeData));
	buf[len] = 1;
	len += 2 * sizeof(CUgraphEdgeData);
	u32(3);
	kp(0, 7, 1, 8, 1); kp(1, 5, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK((b = shape()) != 0 && b != a && topo == ta);
	/* No prediction: a node's parameters left out, a function the
	 * client does not know, a node that is not a kernel, no nodes. */
	khead(0);
	u32(0);
	u32(2);
	kp(0, 7, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK(shape() == 0);
	khead(0);
	u32(0);
	u32(3);
	kp(0, 7, 1, 8, 1); kp(1, 9, 1, 8, 1); kp(2, 6, 1, 8, 1);
	CHECK(shape() == 0);
	head();
	u32(0);
	u32(2);
	kparam(0, 4);
	kparam(2, 4);
	CHECK(shape() == 0);
	len = 0;
	u32(0); u32(0); u32(0);
	CHECK(shape() == 0);
}

/* A capture's chain: followed from the root, or refused. */
static void
test_chain(void)
{
	struct glist_wire w;
	uint32_t order[3], pos[3];

	khead(1);
	u32(0);
	u32(0);
	CHECK(decode(&w) == 0);
	CHECK(glist_chain(&w, 3, order, pos) == 0);
	CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2);
	CHECK(pos[0] == 0 && pos[1] == 1 && pos[2] == 2);
	CHECK(glist_chain(&w, 2, order, pos) == -1);	/* not n nodes */
	glist_wire_free(&w);
	/* A fork (0 before 1 and 2): no chain. */
	khead(0);
	u32(0);
	u32(0);
	CHECK(decode(&w) == 0);
	CHECK(glist_chain(&w, 3, order, pos) == -1);
	glist_wire_free(&w);
}

int
main(void)
{
	test_chain();
	test_whole();
	test_older();
	test_malformed();
	test_shape();
	return t_done("client_glist");
}
