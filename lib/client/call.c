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

/* A synchronization, whose reply names the idle streams. */
static int
is_sync(uint16_t type)
{
	return type == R_STREAM_SYNC || type == R_CTX_SYNC ||
	    type == R_EVENT_SYNC;
}

/*
 * The other streams a synchronization found idle (its reply's blob of
 * context and stream id pairs, gleam-protocol(5)): their own
 * synchronizations are answered here while nothing more is sent.  Not
 * where mapped memory may hold device writes no pull has brought: the
 * synchronization of the stream that made them must bring them.
 */
static void
idle_came(const struct rpc_val *out, uint64_t mark)
{
	struct pr r;
	uint64_t ctx, sid;
	uint32_t i;

	if (out[0].p == NULL || out[0].len % 16 != 0 || !ridle_others() ||
	    !mapped_settled())
		return;
	pr_init(&r, out[0].p, out[0].len);
	for (i = 0; i < out[0].len / 16; i++) {
		ctx = pr_u64(&r);
		sid = pr_u64(&r);
		if (sid > 2 && sid != RIDLE_ALL)
			ridle_set(ctx, sid, mark);
	}
}

/* A round trip; mapped memory comes back where the host waited. */
CUresult
remote_call(uint16_t type, const struct rpc_val *in, struct rpc_val *out,
    void **keep)
{
	const struct rpc_desc *d = rpc_lookup(type);
	struct rwait w = { 0 };		/* no destination for a blob */
	struct mpull mp;
	uint64_t mark;
	CUresult rc;
	int pull;

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
	if ((rc = rsend(type, in, 0, &w)) != CUDA_SUCCESS) {
		if (mp.begun)
			client_mapped_pull_end(&mp, 0, 0, &mark);
		return rc;
	}
	if (mp.begun)
		client_mapped_pull_beside(&mp);
	else
		pull = pull && client_mapped_pull_begin(&mp, type, in);
	rc = rwait(&w, out, keep);
	mark = w.qend;
	if (pull && rc == CUDA_SUCCESS && is_sync(type) && out[0].p != NULL &&
	    out[0].len % 16 == 0 && ridle_others())
		client_mapped_pull_idle(&mp, out[0].p, out[0].len / 16);
	if (pull)
		client_mapped_pull_end(&mp, rc == CUDA_SUCCESS, w.qend, &mark);
	if (rc == CUDA_SUCCESS && mark != 0) {
		if (type == R_STREAM_SYNC)
			ridle_set(in[0].u, in[1].u, mark);
		else if (type == R_CTX_SYNC)
			ridle_set(in[0].u, RIDLE_ALL, mark);
		if (is_sync(type))
			idle_came(out, mark);
	}
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
