/*
 * A bulk lane's stripes as records (gleam-protocol(5), Bulk lanes).
 * After its hello a lane carries the records of its own chan
 * (chan_init_lane), each way: a stripe of n bytes goes as records of
 * PROTO_LANE_REC plaintext bytes, the last one shorter.  Both ends know
 * every stripe's length from the call on the main connection, so each
 * record's length is known before it comes, and one of another length
 * ends the lane.
 *
 * The receiver takes a record's body straight into the destination and,
 * sealed, decrypts it there in pieces as they land (while they are in
 * the cache); the destination's bytes are the stripe's only when
 * stripe_recv returns 0.  In the clear the sender writes the body from
 * the caller's buffer; sealed, through a small staging buffer, a piece
 * at a time.  Each lane's thread does its own sealing and opening, so
 * the cost spreads over the lanes' CPUs.
 */
#ifndef GLEAM_STRIPE_H
#define GLEAM_STRIPE_H

#include <stddef.h>
#include <stdint.h>

#include "chan.h"

/* The bytes of the staging buffer stripe_send needs. */
#define STRIPE_STAGE	(CHAN_HDR + STRIPE_PIECE + CHAN_TAG)
#define STRIPE_PIECE	(256u << 10)	/* sealed or opened at a time */

/*
 * Sends [p, p + n) on fd as records of c, sealed through stage
 * (STRIPE_STAGE bytes; unused in the clear): 0, or an errno.
 */
int	stripe_send(struct chan *c, int fd, const void *p, size_t n,
	    uint8_t *stage);
/*
 * Receives a stripe of n bytes from fd into dst: 0, or an errno, EBADMSG
 * when a record is not the one expected or does not open (c->err says
 * why; the lane must end, and dst's bytes are not to be used).  *first
 * as for net_recv_all.
 */
int	stripe_recv(struct chan *c, int fd, void *dst, size_t n,
	    uint64_t *first);

/*
 * A resumable session's lanes carry small records beside the stripes
 * (gleam-protocol(5), Resume), each of its own length: on a new
 * connection the server's first (u64: the last job the lane finished)
 * and the client's (u64: the job it is at; u32: which way that job's
 * bytes go, STRIPE_DIR_*; u32: zero), then after each stripe that came
 * to the server its acknowledgement (u64: the job).  Jobs count the
 * copies over the lanes from 1, the same on both sides.  0, or an errno
 * as for stripe_recv (EBADMSG also for a value out of range).
 */
#define STRIPE_DIR_NONE	0
#define STRIPE_DIR_IN	1	/* to the server */
#define STRIPE_DIR_OUT	2	/* from the server */
int	stripe_send_u64(struct chan *, int fd, uint64_t v, uint8_t *stage);
int	stripe_recv_u64(struct chan *, int fd, uint64_t *v);
int	stripe_send_at(struct chan *, int fd, uint64_t job, uint32_t dir,
	    uint8_t *stage);
int	stripe_recv_at(struct chan *, int fd, uint64_t *job, uint32_t *dir);

#endif
