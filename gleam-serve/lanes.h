/*
 * Bulk lanes: more TCP connections from one remoting client, for the bytes
 * of its large host-to-device copies, so that the kernel's copies in and
 * out of the sockets run on several CPUs at once (one connection tops out
 * at about 4 GB/s on loopback; see bench/tcp-lanes).
 *
 * R_LANES: the serving thread listens on a port of its own, at the address
 * the client reached, and answers with it, a random token and its end of
 * the main connection (so the client opens lanes only when nothing stands
 * between them: a proxy or the link emulator would be bypassed).
 * R_LANES_UP: the client has connected; the thread accepts them (each
 * must open with the lane hello of proto.h, within a second), and takes
 * all or none.  R_MEM_HTOD_LANES: a copy's bytes arrive in stripes, one a
 * lane, received at once by a thread a lane (the serving thread takes
 * lane 0) into one buffer, and each stripe is handed on as it lands.
 * R_MEM_DTOH_LANES: the copy lands in that buffer, then goes back the same
 * way, before the call's reply.
 *
 * Lanes carry nothing but those bytes, each way in the order of the calls
 * on the main connection, as records of their own (stripe.h), sealed when
 * the main connection is; a lane that breaks, or whose record does not
 * open, ends the session.  Not so a resumable session's lanes
 * (lanes_offer_resumable): they come to the server's address, are handed
 * over by the session's channel, and a lane that breaks is waited for and
 * its stripe moved again (gleam-protocol(5), Resume).
 */
#ifndef SERVE_LANES_H
#define SERVE_LANES_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct chan;
#define LANES_COPY_MAX	(16u << 20)	/* bytes of one copy over the lanes */

struct lanes;

/*
 * R_LANES on connection fd: offers min(want, max) lanes and fills the
 * reply's fields (out[0..4]; blobs point into *lp, valid until it is
 * freed).  Offers 0 lanes (and no port) when max is 0 or it cannot
 * listen.  A second R_LANES replaces the first offer if no lane was taken.
 */
void	lanes_offer(struct lanes **lp, int fd, uint32_t want, uint32_t max,
	    uint64_t spin_ns, struct rcall *c);
/*
 * R_LANES in a resumable session (gleam-protocol(5), Resume): no port of
 * our own; the lanes come to the server's address, and the session's
 * channel hands each here (lanes_take).  The reply's blob is the token
 * then the secret the lanes' keys come from; a thread a lane starts now.
 * A lane that breaks is waited for, up to window_ms, then its stripe goes
 * again; sealed as the main connection is; who names the client in
 * messages.
 */
void	lanes_offer_resumable(struct lanes **lp, uint32_t want, uint32_t max,
	    uint64_t spin_ns, int sealed, uint32_t window_ms, const char *who,
	    struct rcall *c);
/*
 * A lane's connection with its hello (PROTO_LANE_RHELLO), from the
 * session's channel (on a thread of its own): taken for its lane if the
 * token is the offer's and its epoch new, else closed.  ls may be NULL.
 */
void	lanes_take(struct lanes *ls, int fd, const uint8_t *hello);
/* The lanes' drops, and bytes sent or received again after one. */
void	lanes_counts(const struct lanes *, uint64_t *drops, uint64_t *resent);
/*
 * R_LANES_UP: accepts n lanes (n as offered), each within a second, their
 * records keyed from parent's (the main connection's: chan_init_lane).
 * Returns the lanes taken: n, or 0 (none kept) if any did not come or
 * came wrong.
 */
uint32_t lanes_accept(struct lanes *, uint32_t n, const struct chan *parent);
uint32_t lanes_count(const struct lanes *);
/* Whether lanes were offered (R_LANES) and not yet taken or refused. */
int	lanes_pending(struct lanes *);
/*
 * R_MEM_HTOD_LANES: receives len bytes (at most LANES_COPY_MAX) striped
 * over the lanes and calls put(arg, offset, bytes, n) for each stripe as
 * it lands (the bytes stay valid until put returns), on the calling
 * thread, after lanes_prepare, once its records opened.  put's first
 * non-zero result is kept in *rc; the stripes are received all the same.
 * Returns -1 if a lane broke or a record did not open (the session ends;
 * no later stripe is handed on).
 */
int	lanes_recv(struct lanes *, size_t len,
	    int (*put)(void *arg, size_t off, const void *p, size_t n),
	    void *arg, int *rc);
/*
 * R_MEM_DTOH_LANES: sends [p, p + len) (at most LANES_COPY_MAX) striped
 * over the lanes; returns once every stripe is sent, -1 if a lane broke.
 */
int	lanes_send(struct lanes *, const void *p, size_t len);
/* The lanes' buffer (allocated at the first call: to pin it), its size. */
void	*lanes_prepare(struct lanes *, size_t *len);
/* Closes the lanes and the listener, stops the threads. */
void	lanes_free(struct lanes *);

#endif
