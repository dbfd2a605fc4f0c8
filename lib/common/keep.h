/*
 * What a side of a session has sent and the peer has not acknowledged
 * yet (gleam-protocol(5), Records): the plaintext of its records, as
 * offsets in the session's stream, kept so that after a reconnection it
 * can be sent again from wherever the peer's acknowledgement says.  A
 * ring of fixed size: what does not fit waits for acknowledgements.
 */
#ifndef GLEAM_KEEP_H
#define GLEAM_KEEP_H

#include <stddef.h>
#include <stdint.h>

struct keep {
	uint8_t		*buf;
	size_t		 cap;
	uint64_t	 base;		/* offset of the oldest byte kept */
	uint64_t	 end;		/* offset after the newest */
};

/* A ring of cap bytes; -1 without memory. */
int	keep_init(struct keep *, size_t cap);
void	keep_free(struct keep *);
/* Room for more before acknowledgements must free some. */
static inline size_t
keep_room(const struct keep *k)
{
	return k->cap - (size_t)(k->end - k->base);
}
/* Appends n bytes (at most keep_room); -1 if they do not fit. */
int	keep_add(struct keep *, const void *, size_t n);
/*
 * The peer has everything before ack: forget it.  -1 if ack is before
 * what was forgotten already or beyond what was sent (a peer that lies).
 */
int	keep_ack(struct keep *, uint64_t ack);
/*
 * The bytes kept from offset from on, as one contiguous piece (*p, the
 * length returned); call again from from + that for the rest.  0 at the
 * end; -1 (as size_t) if from is not kept.
 */
size_t	keep_peek(const struct keep *, uint64_t from, const uint8_t **p);

#endif
