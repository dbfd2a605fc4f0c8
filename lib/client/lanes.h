/*
 * Bulk lanes on the client's side (the server's: gleam-serve/lanes.h):
 * GLEAM_LANES more TCP connections to a server reached directly, over
 * which large host-to-device copies into known device memory send their
 * bytes in stripes, each from the program's buffer by a thread of its own
 * (the calling thread sends the first), so that no single CPU's copies
 * into the kernel bound the rate.  The call itself (R_MEM_HTOD_LANES) goes
 * one-way on the main connection, in its order; the stripes of one copy
 * follow each other on every lane in the order of those calls.  Large
 * device-to-host copies can come back the same way (R_MEM_DTOH_LANES,
 * which waits for its reply after its stripes).  Each lane carries
 * records of its own (stripe.h), sealed when the main connection is, by
 * its own thread; a record that does not open loses the server, and the
 * copy fails.  In a resumable session the lanes go to the main
 * connection's peer, a stripe to the server is done once acknowledged,
 * and a lane that breaks is opened again and its stripe moved again, until
 * the session's window passes (gleam-protocol(5), Resume).
 */
#ifndef GLEAM_CLIENT_LANES_H
#define GLEAM_CLIENT_LANES_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"

/* A piece of a copy over the lanes: one call, at most gleam-serve's
 * LANES_COPY_MAX. */
#define LANES_PIECE_MAX	(16u << 20)

/* After R_OPEN: opens the lanes GLEAM_LANES asks for, where it may. */
void		 lanes_init(void);
unsigned	 lanes_count(void);
/*
 * A copy of n bytes from src to dst (inside device memory the client
 * allocated) over the lanes: 1 when it went (or failed: *rc), 0 when the
 * lanes took only its first *done bytes (0: none, they do not take it:
 * too small, a slow link where the main connection's compression may
 * pay, or no lanes after the session moved); the rest goes the main way.
 * Returns once src is free again.
 */
int		 lanes_htod(uint64_t ctx, uint64_t sid, int async,
		    CUdeviceptr dst, const void *src, size_t n, CUresult *rc,
		    size_t *done);
/*
 * For a copy of n bytes (copy.c; dtoh: device to host, which stays off the
 * lanes with GLEAM_LANES_DTOH=0): 1 if it
 * goes over the lanes, which are then this thread's, in call order, until
 * lanes_release; 0 when they do not take it (as for lanes_htod).  While
 * held, lanes_in receives one piece's stripes (the call on the main
 * connection first): 0, or an errno after which the server is lost.
 */
int		 lanes_hold(size_t n, int dtoh);
void		 lanes_release(void);
int		 lanes_in(void *dst, size_t n);
/*
 * The session moved (io.c, a REDIRECT): the lanes, which stay with the
 * old server, are done with; lanes_hold opens new ones at the new server
 * when they are next wanted, and a copy in hand when it moved returns
 * ESTALE from lanes_in.  lanes_skipped: the new server did not execute a
 * copy over the lanes (RPC_LANES_GONE), which lanes_htod sends again.
 */
void		 lanes_moved(void);
void		 lanes_skipped(void);

#endif
