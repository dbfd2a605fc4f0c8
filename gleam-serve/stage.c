/*
 * The staging ring's arithmetic (stage.h).
 */
#include <string.h>

#include "stage.h"

void
sring_init(struct sring *r, uint64_t cap)
{
	memset(r, 0, sizeof *r);
	r->cap = cap;
}

/* The bytes skipped before a span of n bytes taken now: those to the
 * buffer's end where it would not fit before it. */
static uint64_t
sring_skip(const struct sring *r, uint64_t n)
{
	uint64_t at = r->head % r->cap;

	return at + n > r->cap ? r->cap - at : 0;
}

int
sring_room(const struct sring *r, uint64_t n, uint64_t *off,
    unsigned *slot)
{
	uint64_t skip;

	if (n == 0 || r->cap == 0 || n > r->cap)
		return -1;
	skip = sring_skip(r, n);
	if (r->qn == SRING_SLOTS || r->head + skip + n - r->tail > r->cap) {
		/* An empty ring always has room: the skip is then from
		 * an offset past n (at + n > cap, n <= cap). */
		return r->qn > 0 ? 1 : -1;
	}
	*off = (r->head + skip) % r->cap;
	*slot = (r->q0 + r->qn) % SRING_SLOTS;
	return 0;
}

void
sring_push(struct sring *r, uint64_t n)
{
	r->head += sring_skip(r, n) + n;
	r->end[(r->q0 + r->qn) % SRING_SLOTS] = r->head;
	r->qn++;
}

int
sring_oldest(const struct sring *r)
{
	return r->qn > 0 ? (int)r->q0 : -1;
}

void
sring_pop(struct sring *r)
{
	if (r->qn == 0)
		return;
	r->tail = r->end[r->q0];
	r->q0 = (r->q0 + 1) % SRING_SLOTS;
	r->qn--;
	/* Empty: start again from the buffer's start, no skip needed. */
	if (r->qn == 0)
		r->head = r->tail = 0;
}
