/* Unit tests for lib/common/keep.c: the resend ring. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keep.h"
#include "t.h"

/* Everything kept from offset from on, gathered; its length. */
static size_t
gather(const struct keep *k, uint64_t from, uint8_t *out)
{
	const uint8_t *p;
	size_t n, got = 0;

	while ((n = keep_peek(k, from + got, &p)) != 0) {
		if (n == (size_t)-1)
			return (size_t)-1;
		memcpy(out + got, p, n);
		got += n;
	}
	return got;
}

static void
test_basic(void)
{
	struct keep k;
	uint8_t out[64];
	const uint8_t *p;

	CHECK(keep_init(&k, 0) == -1);
	CHECK(keep_init(&k, 16) == 0);
	CHECK(keep_room(&k) == 16);
	CHECK(keep_add(&k, "0123456789", 10) == 0);
	CHECK(keep_room(&k) == 6);
	CHECK(keep_add(&k, "abcdefg", 7) == -1);	/* no room: nothing kept */
	CHECK(k.end == 10);
	CHECK(gather(&k, 0, out) == 10 && memcmp(out, "0123456789", 10) == 0);
	CHECK(gather(&k, 4, out) == 6 && memcmp(out, "456789", 6) == 0);
	CHECK(keep_peek(&k, 10, &p) == 0);
	CHECK(keep_peek(&k, 11, &p) == (size_t)-1);
	/* Acknowledged: forgotten, and room again. */
	CHECK(keep_ack(&k, 4) == 0);
	CHECK(keep_room(&k) == 10);
	CHECK(keep_peek(&k, 3, &p) == (size_t)-1);
	CHECK(keep_ack(&k, 2) == 0);		/* an old ack changes nothing */
	CHECK(k.base == 4);
	CHECK(keep_ack(&k, 11) == -1);		/* beyond what was sent */
	/* Across the ring's end. */
	CHECK(keep_add(&k, "abcdefghij", 10) == 0);
	CHECK(keep_room(&k) == 0);
	CHECK(gather(&k, 4, out) == 16 &&
	    memcmp(out, "456789abcdefghij", 16) == 0);
	CHECK(keep_peek(&k, 10, &p) == 6);	/* up to the ring's end */
	CHECK(gather(&k, 13, out) == 7 && memcmp(out, "defghij", 7) == 0);
	CHECK(keep_ack(&k, 20) == 0);
	CHECK(keep_room(&k) == 16);
	keep_free(&k);
}

/* Random adds and acks against a plain copy of the stream. */
static void
test_random(void)
{
	struct keep k;
	uint8_t *stream, *out;
	uint64_t sent = 0, acked = 0, x = 42;
	size_t cap = 1000, n, len = 1 << 20;
	int i, bad = 0;

	stream = malloc(len);
	out = malloc(cap);
	for (n = 0; n < len; n++)
		stream[n] = (uint8_t)(n * 131 + (n >> 8));
	CHECK(keep_init(&k, cap) == 0);
	for (i = 0; i < 20000 && sent < len - cap; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		n = (size_t)(x >> 33) % (cap / 3);
		if (n <= keep_room(&k)) {
			if (keep_add(&k, stream + sent, n) != 0)
				bad++;
			sent += n;
		}
		if ((x >> 20) % 3 == 0) {
			acked += (sent - acked) * ((x >> 40) % 100) / 100;
			if (keep_ack(&k, acked) != 0)
				bad++;
		}
		if (gather(&k, acked, out) != sent - acked ||
		    memcmp(out, stream + acked, sent - acked) != 0)
			bad++;
	}
	CHECK(bad == 0);
	CHECK(sent > 100000);
	keep_free(&k);
	free(stream);
	free(out);
}

int
main(void)
{
	test_basic();
	test_random();
	return t_done("keep");
}
