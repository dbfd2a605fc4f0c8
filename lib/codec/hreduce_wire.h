/*
 * The messages of gleam-reduce, one definition in code (this file and
 * hreduce_wire.c) and one in prose (gleam-reduce(1), PROTOCOL).  They ride
 * on the Gleam framing and handshake of proto.h, with types of their own.
 *
 * A worker joins a group of W ranks; each allreduce is made of streams,
 * one per round, named by a stream id that every worker of the group
 * gives the same stream (the worker library counts them from 1 after each
 * JOIN).  A worker sends BEGIN, then its contribution cut into chunks of
 * the size BEGIN declares, in ascending order.  Once all W have begun the
 * aggregator answers READY, then each merged chunk as soon as all W have
 * sent it, then DONE; or FAIL at any point, to every member.
 *
 *	JOIN	w->a	u32 world, u32 rank
 *	JOINED	a->w	u64 generation
 *	BEGIN	w->a	u64 id, u8 op, u8 cell_bits, u16 flags, i32 exponent,
 *			i32 scale, u64 n, u64 total, u32 chunk
 *	CHUNK	both	u64 id, u32 index, u32 rank, then the bytes
 *	READY	a->w	u64 id, i32 exponent (merged), u32 W, W x u64 total
 *	DONE	a->w	u64 id
 *	FAIL	a->w	u64 id (0: every stream; the worker must JOIN again),
 *			u32 code, string reason
 *	ABORT	w->a	u64 id, string reason: this worker cannot go on
 *
 * With HR_BEGIN_ZSTD in its BEGIN (OR streams only), a worker may send
 * any chunk as zstd frames that inflate to exactly the chunk's length,
 * and gets merged chunks that way too where that is shorter: a chunk
 * shorter than its length is compressed, one of its length is raw.
 * Totals and chunk sizes always count the raw bytes.
 *
 * Every decoder treats its input as hostile: lengths are checked, and
 * trailing bytes are an error.
 */
#ifndef GLEAM_HREDUCE_WIRE_H
#define GLEAM_HREDUCE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "hreduce.h"		/* HR_DEFAULT_PORT, enum hr_op */
#include "proto.h"

#define HR_MAX_WORLD		1024
#define HR_CHUNK_MIN		1024
#define HR_CHUNK_DEFAULT	(256u << 10)
#define HR_CHUNK_HDR		16	/* id, index, rank before the bytes */
#define HR_REASON_MAX		400

enum hr_msg {
	HR_MSG_JOIN = 64,
	HR_MSG_JOINED = 65,
	HR_MSG_BEGIN = 66,
	HR_MSG_CHUNK = 67,
	HR_MSG_READY = 68,
	HR_MSG_DONE = 69,
	HR_MSG_FAIL = 70,
	HR_MSG_ABORT = 71
};

/* Why a stream failed: FAIL's code. */
enum hr_fail {
	HR_FAIL_MISMATCH = 1,	/* workers disagree on sizes, scale, op */
	HR_FAIL_MALFORMED = 2,	/* a chunk out of order or of the wrong size */
	HR_FAIL_LOST = 3,	/* a worker left the group mid-round */
	HR_FAIL_TIMEOUT = 4,	/* not every worker sent in time */
	HR_FAIL_LIMIT = 5,	/* over the aggregator's limits */
	HR_FAIL_ABORT = 6	/* a worker gave up (its ABORT reason) */
};

struct hr_join {
	uint32_t	world;
	uint32_t	rank;
};

/* BEGIN's flags. */
#define HR_BEGIN_ZSTD	0x0001	/* chunks may be zstd frames, both ways */

struct hr_begin {
	uint64_t	id;
	uint8_t		op;
	uint8_t		cell_bits;	/* 32 or 64 for SUM, else 0 */
	uint16_t	flags;		/* HR_BEGIN_* */
	int32_t		exponent;	/* OR: this worker's; else 0 */
	int32_t		scale;		/* SUM: s, else 0 */
	uint64_t	n;		/* the gradient's length */
	uint64_t	total;		/* bytes this worker contributes */
	uint32_t	chunk;		/* bytes per chunk, the last shorter */
};

struct hr_chunk {
	uint64_t	id;
	uint32_t	index;
	uint32_t	rank;		/* GATHER: whose bytes; else 0 */
	const uint8_t	*data;		/* into the decoded payload */
	size_t		len;
};

struct hr_ready {
	uint64_t	id;
	int32_t		exponent;
	uint32_t	world;
	uint64_t	total[HR_MAX_WORLD];
};

struct hr_fail_msg {
	uint64_t	id;
	uint32_t	code;
	char		text[HR_REASON_MAX + 1];
};

struct hr_abort {
	uint64_t	id;
	char		text[HR_REASON_MAX + 1];
};

const char	*hr_msg_name(uint16_t);
const char	*hr_op_name(int);
const char	*hr_fail_name(uint32_t);
/* Chunks in a stream of total bytes; 0 for an empty one. */
uint64_t	 hr_nchunks(uint64_t total, uint32_t chunk);
/* Checks a BEGIN's fields against each other and max_frame; -1 if bad. */
int		 hr_begin_check(const struct hr_begin *, uint32_t max_frame,
		    const char **why);

void	hr_join_enc(struct pw *, const struct hr_join *);
int	hr_join_dec(const void *, size_t, struct hr_join *);
void	hr_joined_enc(struct pw *, uint64_t generation);
int	hr_joined_dec(const void *, size_t, uint64_t *generation);
void	hr_begin_enc(struct pw *, const struct hr_begin *);
int	hr_begin_dec(const void *, size_t, struct hr_begin *);
/* The header only: the bytes follow it in the frame. */
void	hr_chunk_hdr_enc(uint8_t out[HR_CHUNK_HDR], uint64_t id,
	    uint32_t index, uint32_t rank);
int	hr_chunk_dec(const void *, size_t, struct hr_chunk *);
void	hr_ready_enc(struct pw *, const struct hr_ready *);
int	hr_ready_dec(const void *, size_t, struct hr_ready *);
void	hr_done_enc(struct pw *, uint64_t id);
int	hr_done_dec(const void *, size_t, uint64_t *id);
void	hr_fail_enc(struct pw *, const struct hr_fail_msg *);
int	hr_fail_dec(const void *, size_t, struct hr_fail_msg *);
void	hr_abort_enc(struct pw *, const struct hr_abort *);
int	hr_abort_dec(const void *, size_t, struct hr_abort *);

#endif
