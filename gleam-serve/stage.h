/*
 * A ring of bytes handed out in spans that are freed in the order they
 * were taken (the cuda backend's staging of asynchronous copies: a span
 * holds a copy's bytes until the event after the copy says the GPU has
 * read them).  Only the arithmetic: the caller owns the buffer and knows
 * when a span's user is done.  A span never wraps: one that would is
 * placed at the start, the end's bytes skipped until the ring comes round.
 */
#ifndef GLEAM_STAGE_H
#define GLEAM_STAGE_H

#include <stdint.h>

#define SRING_SLOTS	128	/* spans in use at most */

struct sring {
	uint64_t	 cap;		/* the buffer's bytes */
	uint64_t	 head, tail;	/* bytes taken, freed: ever */
	uint64_t	 end[SRING_SLOTS];	/* head once each span was taken */
	unsigned	 q0, qn;	/* the spans in use, oldest first */
};

/* An empty ring of cap bytes. */
void	sring_init(struct sring *, uint64_t cap);
/*
 * Room for n bytes: 0 with the span's offset and its slot (the index the
 * caller keeps the span's user under), 1 when the oldest span must be
 * freed first (sring_pop, once its user is done), -1 when n can never fit
 * (0, or more than the ring).
 */
int	sring_room(const struct sring *, uint64_t n, uint64_t *off,
	    unsigned *slot);
/* The span sring_room just found for n bytes taken: the newest. */
void	sring_push(struct sring *, uint64_t n);
/* The oldest span's slot, or -1 if none is in use. */
int	sring_oldest(const struct sring *);
/* The oldest span freed. */
void	sring_pop(struct sring *);

#endif
