/*
 * The calls the client's modules make, one layer above the transport
 * (io.c): a round trip, and a one-way call.  What a call does to memory
 * is its row's flags in the call table (rpc.c); mapped host memory
 * (mapped.c) goes to the device before the call through the transport's
 * hook, and comes back here after a call that waited for the device.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "diag.h"
#include "io.h"
#include "mapped.h"
#include "proto.h"
#include "readahead.h"

/* A synchronization, whose reply names the idle streams. */
static int
is_sync(uint16_t type)
{
	return type == R_STREAM_SYNC || type == R_CTX_SYNC ||
	    type == R_EVENT_SYNC;
}

/*
 * The other streams a synchronization's reply names idle (a blob of
 * context and stream id pairs, gleam-protocol(5)), decoded into *ip; 0
 * where there are none or they are not to be used.
 */
static int
idle_decode(uint16_t type, const struct rpc_val *out, struct idle_pairs *ip)
{
	struct pr r;
	uint32_t i;

	ip->n = 0;
	if (!is_sync(type) || out[0].p == NULL || out[0].len % 16 != 0 ||
	    !ridle_others())
		return 0;
	pr_init(&r, out[0].p, out[0].len);
	for (i = 0; i < out[0].len / 16 && ip->n < IDLE_PAIRS_MAX; i++) {
		ip->ctx[ip->n] = pr_u64(&r);
		ip->sid[ip->n] = pr_u64(&r);
		ip->n++;
	}
	return ip->n > 0;
}

/*
 * Their own synchronizations are answered here while nothing more is
 * sent.  Not where mapped memory may hold device writes no pull has
 * brought: the synchronization of the stream that made them must bring
 * them.
 */
static void
idle_came(const struct idle_pairs *ip, uint64_t mark)
{
	uint32_t i;

	if (!mapped_settled())
		return;
	for (i = 0; i < ip->n; i++)
		if (ip->sid[i] > 2 && ip->sid[i] != RIDLE_ALL)
			ridle_set(ip->ctx[i], ip->sid[i], mark);
}

/* A round trip; mapped memory comes back where the host waited. */
CUresult
remote_call(uint16_t type, const struct rpc_val *in, struct rpc_val *out,
    void **keep)
{
	const struct rpc_desc *d = rpc_lookup(type);
	struct rwait w = { 0 };		/* no destination for a blob */
	struct mpull mp;
	struct idle_pairs ip;
	struct rahead ra;
	uint64_t mark;
	CUresult rc;
	int pull, idle;

	*keep = NULL;
	/*
	 * The host waits for the device: mapped memory shows its writes.
	 * The pull goes with the call, read by the server after it, but
	 * for a stream's synchronization the blocks it prefetches, which go
	 * ahead as copies in the stream.  A copy back (RPC_F_TO_HOST) is
	 * its caller's to pull (copy.c's device-to-host copies do, with
	 * their last piece).
	 */
	pull = d != NULL && (d->flags & (RPC_F_WAITS | RPC_F_POLLS)) &&
	    !(d->flags & RPC_F_TO_HOST);
	memset(&mp, 0, sizeof mp);
	if (pull)
		(void)client_mapped_pull_ahead(&mp, type, in);
	/* A copy the program makes after this synchronization, read
	 * beside it (readahead.c). */
	rahead_before(type, in, &ra);
	if ((rc = rsend(type, in, 0, &w)) != CUDA_SUCCESS) {
		if (mp.begun)
			client_mapped_pull_end(&mp, 0, 0, &mark);
		return rc;
	}
	if (mp.begun)
		client_mapped_pull_beside(&mp);
	else
		pull = pull && client_mapped_pull_begin(&mp, type, in);
	rahead_send(&ra);
	rc = rwait(&w, out, keep);
	mark = w.qend;
	idle = rc == CUDA_SUCCESS && idle_decode(type, out, &ip);
	if (pull && idle)
		client_mapped_pull_idle(&mp, &ip);
	if (pull)
		client_mapped_pull_end(&mp, rc == CUDA_SUCCESS, w.qend, &mark);
	rahead_end(&ra, rc == CUDA_SUCCESS, &mark);
	if (rc == CUDA_SUCCESS && mark != 0) {
		if (type == R_STREAM_SYNC)
			ridle_set(in[0].u, in[1].u, mark);
		else if (type == R_CTX_SYNC)
			ridle_set(in[0].u, RIDLE_ALL, mark);
		if (idle)
			idle_came(&ip, mark);
	}
	if (rc == CUDA_SUCCESS)
		rahead_waited(type, in);
	/* A failure for the error log (a query's "not yet" is none). */
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY && d != NULL) {
		const char *e = NULL;

		cuGetErrorName(rc, &e);
		diag_log(0, "%s: %s (%d)", d->name, e != NULL ? e : "unknown",
		    (int)rc);
	}
	return rc;
}

/* A one-way call, a round trip under GLEAM_SYNC=1. */
CUresult
rpost(uint16_t type, const struct rpc_val *in, int flags)
{
	struct rpc_val out[RPC_MAX_FIELDS];
	void *keep;
	CUresult rc;

	if (!rsync_mode())
		return rsend(type, in, flags, NULL);
	rc = remote_call(type, in, out, &keep);
	free(keep);
	return rc;
}
