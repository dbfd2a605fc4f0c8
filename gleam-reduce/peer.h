/*
 * One worker connection's protocol state: the Gleam handshake (HELLO,
 * CHALLENGE, AUTH, WELCOME, as gleam-protocol(5) defines it), then
 * gleam-reduce's messages, handed to the aggregator.  Sockets stay in the
 * server, so that the fuzz target can drive a peer with bytes alone.
 *
 * The handshake is lib/common/hshake.c's; after WELCOME the connection
 * carries records (chan.h), sealed when the worker proved the key.  The
 * aggregator writes a member's frames in the clear to a buffer of the
 * peer's own; peer_flush seals what is there into the socket's output,
 * as few records as it takes, so that a merged chunk added by reference
 * costs one pass of the cipher and no copy.
 *
 * Lifecycle: peer_new at accept; peer_input after each read; peer_flush
 * of every peer once the aggregator may have written to them (after an
 * input, a timer, a peer's leaving); once peer_input returns PEER_CLOSE
 * the server flushes the output and closes, feeding it nothing more;
 * peer_free when the connection ends.  A peer that breaks the protocol
 * leaves its group at once, before its ERROR is flushed; one whose record
 * does not open is sent nothing more.
 */
#ifndef REDUCE_PEER_H
#define REDUCE_PEER_H

#include <stdint.h>

#include <event2/buffer.h>

#include "agg.h"
#include "hshake.h"

struct peer;

struct peer_env {
	struct hshake_conf	 hs;		/* key, max_frame, our name */
	struct agg		*agg;
};

enum peer_rc {
	PEER_OK = 0,
	PEER_CLOSE = 1
};

struct peer	*peer_new(const struct peer_env *, const char *addr,
		    struct evbuffer *out);
void		 peer_free(struct peer *);
int		 peer_input(struct peer *, struct evbuffer *in);
/* Seals the frames queued for the peer into out; -1: out of memory. */
int		 peer_flush(struct peer *);
int		 peer_ready(const struct peer *);
const char	*peer_name(const struct peer *);
/* The handshake timed out: ERROR 10 is queued; close after it. */
void		 peer_timeout(struct peer *);

#endif
