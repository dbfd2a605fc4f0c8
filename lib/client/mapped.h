/*
 * Mapped host memory and managed memory (mapped.c): a device allocation
 * on the server with a host copy here, kept coherent by copies each way
 * where the call table's flags (rpc.h) say the device or the host may
 * look: the host's dirty blocks go before device work that may read
 * them, the device's come back block by block when the host touches them.
 */
#ifndef GLEAM_CLIENT_MAPPED_H
#define GLEAM_CLIENT_MAPPED_H

#include <signal.h>
#include <stdint.h>

#include "client.h"
#include "io.h"

/*
 * The transport's hook (io_hook), before each call is queued: host writes
 * go to the device first where the call reads device memory, or writes it
 * with bytes other than the host's (RPC_F_READS_DEV, RPC_F_WRITES_DEV
 * without RPC_F_FROM_HOST); a call that may write a mapped buffer
 * (RPC_F_WRITES_DEV, where RPC_F_DST_RANGE says where) makes the next
 * pull fetch it.
 */
void		 mapped_before_send(uint16_t type, const struct rpc_val *in);

/*
 * The pull, sent beside a call that waits (after it, in the same send) and
 * collected after it: begin returns 1 if it sent requests, which end then
 * collects (writing them to the host only if ok) and reports in *qend the
 * queue position after the last of them, or 0 if another call came between
 * (see ridle_set).  Nothing is pulled if no device work that could have
 * written a mapped buffer was sent since the last pull.
 */
/*
 * A copy from the host of n bytes of src to device address dst (before it
 * is sent): the host side of any mapped buffer it meets gets them now, so
 * that the host reads them before the next synchronization, as on a GPU.
 */
void		 mapped_host_write(CUdeviceptr dst, const void *src, size_t n);

/*
 * Managed memory (cuMemAllocManaged): a mapped buffer whose host side is
 * at its device address.  mapped_managed_free frees one (cuMemFree of a
 * registry entry with MEM_F_MANAGED); -1 if p starts none.
 */
CUresult	 mapped_managed_alloc(CUdeviceptr *, size_t, unsigned flags);
int		 mapped_managed_free(CUdeviceptr p);

/* Has every device write that may have reached mapped memory been
 * brought back (1), or is a pull still owed (0)? */
int		 mapped_settled(void);

/*
 * Copies whose host side lies in memory this library mapped become
 * device-to-device copies: 1 and *dev, the device side of [p, p + n), if
 * it lies in one buffer.
 */
int		 mapped_alias(const void *p, size_t n, CUdeviceptr *dev);
/* Does [p, p + n) meet a mapped or managed buffer? */
int		 mapped_overlaps(CUdeviceptr p, size_t n);

/*
 * Mapped host memory (not managed) holding p by either address: 1 with
 * *a its host allocation and *host, *dev p's two addresses.
 */
struct alloc;
int		 mapped_describe(CUdeviceptr p, struct alloc *a,
		    CUdeviceptr *host, CUdeviceptr *dev);

/*
 * The registered buffers' pull (tracked ones move on demand, but for
 * those a stream or context synchronization prefetches: blocks a copy
 * wrote, and those the host looked at after the last one, where every
 * call that may have written them since the last pull went to the stream
 * or context waited for).  type and in are the call's (0: no prefetch).
 * For a stream's synchronization, client_mapped_pull_ahead, called
 * before the call is sent, sends the prefetch ahead of it as copies in
 * that stream: the server's copy follows the stream's work on the GPU
 * instead of starting once the wait is over.  Its 1 means the pull has
 * begun: client_mapped_pull_beside, after the call, sends the rest in
 * place of client_mapped_pull_begin, and client_mapped_pull_end ends it,
 * whatever became of the call.
 */
struct mpf {
	struct rwait	 w;
	int		 map;		/* maps' index */
	size_t		 b0, b1;	/* its blocks */
};
struct mpull {
	struct rwait	*w;
	int		*idx;
	int		 n;
	uint64_t	 gen;
	struct mpf	*pf;
	int		 npf;
	int		 cover;		/* the wait covers every writer */
	uint16_t	 type;		/* the wait: a stream's or context's
					   synchronization (else 0), */
	uint64_t	 ctx, sid;	/* its context and stream */
	int		 begun;		/* map_lock held: pull_ahead began it */
	int		 ahead;		/* the prefetch went before the call */
	int		 noreg;		/* registered buffers not pulled */
};
int		 client_mapped_pull_ahead(struct mpull *, uint16_t type,
		    const struct rpc_val *in);
int		 client_mapped_pull_begin(struct mpull *, uint16_t type,
		    const struct rpc_val *in);
void		 client_mapped_pull_beside(struct mpull *);
void		 client_mapped_pull_end(struct mpull *, int ok,
		    uint64_t qstart, uint64_t *qend);
/*
 * Between the wait's reply and client_mapped_pull_end: the other streams
 * the synchronization's reply named idle.  Where those and the wait's own
 * stream hold every writer, the pull covers them all: nothing it reads
 * can change any more (the pull's requests follow the wait on the server,
 * and no writer has work left).
 */
struct idle_pairs;
void		 client_mapped_pull_idle(struct mpull *,
		    const struct idle_pairs *);

/* sigwrap.c's: the program's SIGSEGV action while ours is installed. */
extern int	mapped_fault_on;
int	mapped_sig_chain(const struct sigaction *, struct sigaction *);

#endif
