/*
 * libFuzzer target: a graph's listing as the client takes it from a
 * server (lib/client/glist.c: R_GRAPH_NODES' reply, R_CAPTURE_END's).
 * Input: the listing's bytes.  Whatever they are, the decoder either
 * refuses them, holding nothing, or gives arrays whose every index is
 * in range, every parameter a kernel node's and inside the input; nothing
 * may leak.  Its shape (glist_shape, the one-way exec update's) is 0 or
 * the same when asked twice, and 0 where a node is not a kernel's.  As a
 * capture's chain (glist_chain, which matches the client's own nodes to
 * the server's), it is refused or is one: a permutation of the nodes,
 * all kernels, each edge from one to the next, the root the first.
 */
#include "../../lib/client/glist.c"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

/* Function ids as the client's canon maps them: odd ones unknown. */
static uint64_t
canon(uint64_t fid)
{
	return fid & 1 ? 0 : fid >> 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct glist_wire w;
	uint32_t i;
	int rc;

	rc = glist_decode(d, n, &w);
	if (rc != 0) {
		ENSURE(rc == -1 || rc == -2);
		ENSURE(w.h == NULL && w.k == NULL && w.n == 0);
		return 0;
	}
	ENSURE(w.nroot <= w.n && w.nk <= w.n);
	for (i = 0; i < w.nroot; i++)
		ENSURE(w.root[i] < w.n);
	for (i = 0; i < w.nedge; i++)
		ENSURE(w.from[i] < w.n && w.to[i] < w.n);
	for (i = 0; i < w.nk; i++) {
		const struct glist_kparams *k = &w.k[i];

		ENSURE(k->idx < w.n &&
		    w.type[k->idx] == CU_GRAPH_NODE_TYPE_KERNEL);
		ENSURE(k->args >= d && k->args + k->len <= d + n);
	}
	{
		uint64_t t, t2, h = glist_shape(&w, canon, &t);
		int all = w.n > 0 && w.nk == w.n;

		for (i = 0; i < w.n; i++)
			all &= w.type[i] == CU_GRAPH_NODE_TYPE_KERNEL;
		ENSURE(h == glist_shape(&w, canon, &t2) && t == t2);
		ENSURE(all || h == 0);
		ENSURE((h == 0) == (t == 0));
	}
	if (w.n > 0 && w.n <= 4096) {
		uint32_t *order = calloc(w.n, sizeof *order);
		uint32_t *pos = calloc(w.n, sizeof *pos);

		ENSURE(order != NULL && pos != NULL);
		ENSURE(glist_chain(&w, w.n + 1, order, pos) == -1);
		if (glist_chain(&w, w.n, order, pos) == 0) {
			ENSURE(w.nroot == 1 && order[0] == w.root[0]);
			ENSURE(w.nedge == w.n - 1);
			for (i = 0; i < w.n; i++) {
				ENSURE(order[i] < w.n && pos[order[i]] == i);
				ENSURE(w.type[order[i]] ==
				    CU_GRAPH_NODE_TYPE_KERNEL);
			}
			for (i = 0; i < w.nedge; i++)
				ENSURE(pos[w.to[i]] == pos[w.from[i]] + 1);
		}
		free(order);
		free(pos);
	}
	glist_wire_free(&w);
	return 0;
}
