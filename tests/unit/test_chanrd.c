/*
 * Records opened in place (chanrd.c): any cut of the byte stream into
 * reads gives back the sender's plaintext, sealed or in the clear; a
 * stop before a large record; a changed byte ends it all.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "chan.h"
#include "chanrd.h"
#include "t.h"

static uint64_t rng = 88172645463325252ull;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A pair of ends: tx seals (a client), rx opens (the server). */
static void
pair(struct chan *tx, struct chan *rx, int keyed)
{
	struct auth_key k;
	uint8_t cn[PROTO_NONCE_LEN], sn[PROTO_NONCE_LEN];

	memset(&k, 0, sizeof k);
	memset(cn, 1, sizeof cn);
	memset(sn, 2, sizeof sn);
	if (keyed) {
		k.set = 1;
		memset(k.k, 7, sizeof k.k);
	}
	CHECK(chan_init(tx, &k, 0, cn, sn) == 0);
	CHECK(chan_init(rx, &k, 1, cn, sn) == 0);
}

/* Records of random sizes (some empty, some large) of plain into wire. */
static size_t
seal_all(struct chan *tx, const uint8_t *plain, size_t len, uint8_t *wire,
    size_t *big)
{
	size_t off = 0, w = 0, n;

	*big = (size_t)-1;
	while (off < len) {
		n = rnd(4) == 0 ? 0 : rnd(3) == 0 ? 70000 + rnd(200000) :
		    1 + rnd(3000);
		if (n > len - off)
			n = len - off;
		if (n >= 70000 && *big == (size_t)-1)
			*big = off;
		w += chan_seal(tx, wire + w, plain + off, n);
		off += n;
	}
	return w;
}

static void
run(int keyed, int stop)
{
	struct chan tx, rx;
	struct chanrd rd;
	size_t len = 3u << 20, wlen, got = 0, big, used, ask, n, at = 0;
	uint8_t *plain = malloc(len), *wire = malloc(2 * len);
	uint8_t *buf = malloc(2 * len), *out = malloc(len);
	int rc, stops = 0, ok = 1;

	for (n = 0; n < len; n++)
		plain[n] = (uint8_t)rnd(256);
	pair(&tx, &rx, keyed);
	wlen = seal_all(&tx, plain, len, wire, &big);
	memset(&rd, 0, sizeof rd);
	rd.stop = stop ? 65536 : 0;
	while (at < wlen || rd.plain > 0) {
		used = chanrd_used(&rd);
		ask = chanrd_ask(&rx, &rd, 1 + rnd(70000));
		CHECK(used + ask <= len + (1u << 20));
		n = 1 + rnd((uint32_t)ask);
		if (n > wlen - at)
			n = wlen - at;
		memcpy(buf + used, wire + at, n);
		at += n;
		rd.raw += n;
		do {
			if ((rc = chanrd_open(&rx, buf, &rd)) == -1) {
				ok = 0;
				break;
			}
			stops += rc;
			/* Frames served: all of the opened plaintext. */
			memcpy(out + got, buf, rd.plain);
			got += rd.plain;
			chanrd_consume(buf, &rd, rd.plain);
		} while (rc == 1);
		if (!ok || (n == 0 && rd.plain == 0))
			break;
	}
	CHECK(ok);
	CHECK(got == len);
	CHECK(memcmp(out, plain, len) == 0);
	CHECK(rx.rx_bytes == len);
	CHECK(stop ? stops > 0 : stops == 0);
	chan_fini(&tx);
	chan_fini(&rx);

	/* One byte changed anywhere: sealed, it never opens. */
	if (keyed) {
		pair(&tx, &rx, keyed);
		wlen = seal_all(&tx, plain, len, wire, &big);
		wire[big + CHAN_HDR + 1000] ^= 0x20;
		memset(&rd, 0, sizeof rd);
		memcpy(buf, wire, wlen);
		rd.raw = wlen;
		got = 0;
		rc = chanrd_open(&rx, buf, &rd);
		got = rd.plain;
		CHECK(rc == -1);
		CHECK(got == big);
		CHECK(strstr(rx.err, "does not authenticate") != NULL);
		chan_fini(&tx);
		chan_fini(&rx);
	}
	free(plain);
	free(wire);
	free(buf);
	free(out);
}

int
main(void)
{
	run(0, 0);
	run(1, 0);
	run(1, 1);
	run(0, 1);
	return t_done("chanrd");
}
