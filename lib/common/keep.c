/* The unacknowledged plaintext of a session, for resending (keep.h). */
#include <stdlib.h>
#include <string.h>

#include "keep.h"

int
keep_init(struct keep *k, size_t cap)
{
	memset(k, 0, sizeof *k);
	if (cap == 0 || (k->buf = malloc(cap)) == NULL)
		return -1;
	k->cap = cap;
	return 0;
}

void
keep_free(struct keep *k)
{
	free(k->buf);
	memset(k, 0, sizeof *k);
}

int
keep_add(struct keep *k, const void *p, size_t n)
{
	size_t at, first;

	if (n > keep_room(k))
		return -1;
	at = (size_t)(k->end % k->cap);
	first = k->cap - at < n ? k->cap - at : n;
	memcpy(k->buf + at, p, first);
	memcpy(k->buf, (const uint8_t *)p + first, n - first);
	k->end += n;
	return 0;
}

int
keep_ack(struct keep *k, uint64_t ack)
{
	if (ack > k->end)
		return -1;
	if (ack > k->base)
		k->base = ack;
	return 0;
}

size_t
keep_peek(const struct keep *k, uint64_t from, const uint8_t **p)
{
	size_t at, n;

	if (from < k->base || from > k->end)
		return (size_t)-1;
	if (from == k->end)
		return 0;
	at = (size_t)(from % k->cap);
	n = (size_t)(k->end - from);
	if (n > k->cap - at)
		n = k->cap - at;
	*p = k->buf + at;
	return n;
}
