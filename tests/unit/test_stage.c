/*
 * The staging ring's arithmetic (gleam-serve/stage.c): spans taken and
 * freed in order never overlap one another nor leave the buffer, a span
 * never wraps, room is refused only when the spans in use leave none, and
 * the slots follow the spans.  A model of the buffer checks it: each byte
 * owned by at most one live span.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage.h"
#include "t.h"

#define CAP	4096u

static int	 owner[CAP];	/* the live span owning each byte, or -1 */
static struct {
	uint64_t off, n;
	unsigned slot;
	int id;
} live[SRING_SLOTS];
static int	 nlive, first;	/* live spans: live[first..first+nlive) */

static uint32_t	 seed = 12345;
static long	 bad;		/* invariants broken, counted quietly */

#define OK(c)	do { if (!(c)) { bad++; fprintf(stderr, "%s:%d: %s\n", \
	    __FILE__, __LINE__, #c); } } while (0)

static uint32_t
rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

/* A span of n bytes: taken if there is room, freeing the oldest first as
 * a caller does; its bytes checked free in the model. */
static int
take(struct sring *r, uint64_t n, int id)
{
	uint64_t off, i;
	unsigned slot;
	int rc, k;

	while ((rc = sring_room(r, n, &off, &slot)) == 1) {
		OK(nlive > 0);
		OK(sring_oldest(r) == (int)live[first % SRING_SLOTS].slot);
		k = first % SRING_SLOTS;
		for (i = 0; i < live[k].n; i++)
			owner[live[k].off + i] = -1;
		sring_pop(r);
		first++;
		nlive--;
	}
	if (rc == -1)
		return -1;
	OK(off + n <= CAP);
	for (i = 0; i < n; i++)
		if (owner[off + i] != -1) {
			OK(!"a byte of two live spans");
			break;
		}
	for (i = 0; i < n; i++)
		owner[off + i] = id;
	sring_push(r, n);
	k = (first + nlive) % SRING_SLOTS;
	live[k].off = off;
	live[k].n = n;
	live[k].slot = slot;
	live[k].id = id;
	nlive++;
	return 0;
}

int
main(void)
{
	struct sring r;
	uint64_t off;
	unsigned slot;
	int i, id = 0, k;

	memset(owner, -1, sizeof owner);
	sring_init(&r, CAP);
	CHECK(sring_oldest(&r) == -1);
	CHECK(sring_room(&r, 0, &off, &slot) == -1);
	CHECK(sring_room(&r, CAP + 1, &off, &slot) == -1);
	CHECK(sring_room(&r, CAP, &off, &slot) == 0 && off == 0 && slot == 0);

	/* Spans in order, then one that would wrap: placed at the start
	 * once the start is free. */
	CHECK(take(&r, 1000, id++) == 0 && live[0].off == 0);
	CHECK(take(&r, 1000, id++) == 0 && live[1].off == 1000);
	CHECK(take(&r, 1000, id++) == 0 && live[2].off == 2000);
	CHECK(sring_room(&r, 1500, &off, &slot) == 1);	/* 1096 left at
							   the end */
	CHECK(take(&r, 1500, id++) == 0);
	k = (first + nlive - 1) % SRING_SLOTS;
	CHECK(live[k].off == 0 && nlive == 2);	/* the first two freed */
	/* Emptied: from the start again. */
	while (sring_oldest(&r) != -1) {
		sring_pop(&r);
		first++;
		nlive--;
	}
	memset(owner, -1, sizeof owner);
	CHECK(sring_room(&r, 3000, &off, &slot) == 0 && off == 0);

	/* Full to the byte; one span freed gives exactly its bytes. */
	CHECK(take(&r, 1000, id++) == 0 && take(&r, 1000, id++) == 0 &&
	    take(&r, 1000, id++) == 0 && take(&r, CAP - 3000, id++) == 0);
	CHECK(sring_room(&r, 1, &off, &slot) == 1);
	sring_pop(&r);
	CHECK(sring_room(&r, 1001, &off, &slot) == 1);
	CHECK(sring_room(&r, 1000, &off, &slot) == 0 && off == 0);
	sring_pop(&r);
	sring_pop(&r);
	sring_pop(&r);
	CHECK(sring_oldest(&r) == -1);
	first += 4;
	nlive = 0;
	memset(owner, -1, sizeof owner);

	/* The slots run out before the bytes: the oldest goes. */
	for (i = 0; i < SRING_SLOTS; i++)
		OK(take(&r, 1, id++) == 0);
	CHECK(nlive == SRING_SLOTS);
	CHECK(sring_room(&r, 1, &off, &slot) == 1);
	CHECK(take(&r, 1, id++) == 0 && nlive == SRING_SLOTS);

	/* Random sizes, the whole ring too, many times round. */
	for (i = 0; i < 200000; i++) {
		uint64_t n = (rnd() % 8 == 0) ? CAP - rnd() % 64 :
		    1 + rnd() % 700;

		OK(take(&r, n, id++) == 0);
		/* Now and then the oldest freed early, as copies finish. */
		if (rnd() % 3 == 0 && nlive > 0) {
			uint64_t j;

			k = first % SRING_SLOTS;
			OK(sring_oldest(&r) == (int)live[k].slot);
			for (j = 0; j < live[k].n; j++)
				owner[live[k].off + j] = -1;
			sring_pop(&r);
			first++;
			nlive--;
		}
	}
	CHECK(bad == 0);
	return t_done("test_stage");
}
