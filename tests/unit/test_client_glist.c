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

int
main(void)
{
	test_whole();
	test_older();
	test_malformed();
	return t_done("client_glist");
}
