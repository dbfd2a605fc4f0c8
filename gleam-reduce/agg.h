/*
 * The aggregator's group and its streams, apart from sockets so that the
 * fuzz target can drive it with messages alone.  The server hands it each
 * decoded frame of gleam-reduce's own types; it appends its answers to
 * the members' output buffers (plaintext frames, which the peer seals;
 * merged chunks by reference).  It merges chunks (OR, SUM, FSUM) or relays
 * them (GATHER) and never decodes a sketch.
 *
 * Lifecycle: agg_member_new at the end of a connection's handshake,
 * agg_input per frame, agg_member_free when the connection ends (a joined
 * member leaving fails every stream of the group at the others, who must
 * JOIN again), agg_expire from a timer.
 */
#ifndef REDUCE_AGG_H
#define REDUCE_AGG_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "hreduce_wire.h"

struct agg;
struct agg_member;

struct agg_limits {
	int		world;		/* 0: the first JOIN sets it */
	uint32_t	max_frame;	/* what the handshake announced */
	uint64_t	max_bytes;	/* buffered chunk bytes, all streams */
	unsigned	max_streams;	/* open at once */
	double		timeout;	/* seconds from a stream's first BEGIN */
};

struct agg_stats {
	uint64_t	rounds;		/* streams completed */
	uint64_t	failed;		/* streams failed */
	uint64_t	bytes_in;	/* chunk bytes received */
	uint64_t	bytes_out;	/* chunk bytes sent */
	uint64_t	buffered;	/* chunk bytes held now */
	int		members;	/* joined now */
	int		world;
	uint64_t	generation;
};

struct agg	*agg_new(const struct agg_limits *);
void		 agg_free(struct agg *);
struct agg_member *agg_member_new(struct agg *, struct evbuffer *out,
		    const char *name);
void		 agg_member_free(struct agg *, struct agg_member *);
/*
 * One frame of type HR_MSG_*.  Returns 0, or -1 when the member broke the
 * protocol (err says how): the caller sends ERROR and closes.
 */
int		 agg_input(struct agg *, struct agg_member *, uint16_t type,
		    const uint8_t *, size_t, char *err, size_t errlen);
/*
 * A CHUNK frame whose payload is hdr (the chunk header) then the first
 * len bytes of in, which it reads where they lie and leaves there for
 * the caller to drain: no pullup into one piece, no copy of a merged
 * chunk.  Never fails the member: returns 0.
 */
int		 agg_input_chunk(struct agg *, struct agg_member *,
		    const uint8_t hdr[HR_CHUNK_HDR], struct evbuffer *in,
		    size_t len);
/* Fails the streams whose deadline passed. */
void		 agg_expire(struct agg *, uint64_t now_ns);
void		 agg_stats(const struct agg *, struct agg_stats *);

#endif
