/*
 * libFuzzer target: the record decoder (lib/common/chan.c: chan_hdr,
 * chan_open and its steps; chanev.c: chan_ev_open) on hostile bytes,
 * clear and sealed.
 *
 * The first input byte sets the scene:
 *	bit 0	  sealed (a key), else clear
 *	bit 1	  we are the server (the client's keys open)
 *	bits 2-5  pieces are 1 to 2^n bytes long (sizes from a PRNG it seeds)
 *	bit 6	  sealed here: the rest is a list of records to seal, each
 *		  an op byte, a u16 length and that many plaintext bytes;
 *		  op bits 0-1: 0 as sealed, 1 a bit flipped (at the next
 *		  byte's place, that byte taken), 2 dropped, 3 sent twice;
 *		  op bit 2: the receiver sends 100 bytes back first, so
 *		  that the sender's acks move
 *	bit 7	  the receiver has sent 1 MiB before, so acks up to it pass
 * Otherwise the rest is the bytes a peer sent.  They are opened three
 * ways, which must agree: whole records (chan_hdr, chan_open), in
 * pieces (chan_open_begin / _update / _final, in place), and through an
 * evbuffer fed in pieces (chan_ev_open).  Sealed, what opens must be
 * exactly a prefix of what was sealed, and nothing after a record that
 * was changed, dropped or repeated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "auth.h"
#include "chan.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

static struct auth_key key;
static const uint8_t cn[PROTO_NONCE_LEN] = { 1, 2, 3 };
static const uint8_t sn[PROTO_NONCE_LEN] = { 4, 5, 6 };

static uint32_t
rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void
start(struct chan *c, int sealed, int server, int sent)
{
	ENSURE(chan_init(c, sealed ? &key : NULL, server, cn, sn) == 0);
	if (sent)
		c->tx_bytes = 1u << 20;
}

/*
 * Whole records, as conn.c reads them: the plaintext appended to out.
 * Returns the bytes of in used up (whole records that opened).
 */
static size_t
open_whole(struct chan *c, const uint8_t *in, size_t len, uint8_t *rec,
    struct evbuffer *out, int *failed)
{
	size_t off = 0, n;
	ssize_t body;

	*failed = 0;
	while (len - off >= CHAN_HDR) {
		if ((body = chan_hdr(c, in + off)) == -1) {
			*failed = 1;
			break;
		}
		ENSURE((size_t)body <= CHAN_BODY_MAX + CHAN_TAG);
		if (len - off - CHAN_HDR < (size_t)body)
			break;
		memcpy(rec, in + off, CHAN_HDR + (size_t)body);
		if (chan_open(c, rec, CHAN_HDR + (size_t)body, &n) == -1) {
			*failed = 1;
			break;
		}
		ENSURE(n == (size_t)body - (c->sealed ? CHAN_TAG : 0));
		evbuffer_add(out, rec + CHAN_HDR, n);
		off += CHAN_HDR + (size_t)body;
	}
	return off;
}

/* The same, a record's body opened in place in pieces of random size. */
static size_t
open_steps(struct chan *c, const uint8_t *in, size_t len, uint8_t *rec,
    struct evbuffer *out, uint32_t seed, uint32_t maxp, int *failed)
{
	size_t off = 0, done, m, body;
	ssize_t blen;

	*failed = 0;
	while (len - off >= CHAN_HDR) {
		if ((blen = chan_hdr(c, in + off)) == -1) {
			*failed = 1;
			break;
		}
		if (len - off - CHAN_HDR < (size_t)blen)
			break;
		body = (size_t)blen - (c->sealed ? CHAN_TAG : 0);
		memcpy(rec, in + off + CHAN_HDR, (size_t)blen);
		chan_open_begin(c, in + off);
		for (done = 0; done < body; done += m) {
			m = 1 + rnd(&seed) % maxp;
			if (m > body - done)
				m = body - done;
			chan_open_update(c, rec + done, rec + done, m);
		}
		if (chan_open_final(c, c->sealed ? rec + body : NULL) == -1) {
			*failed = 1;
			break;
		}
		evbuffer_add(out, rec, body);
		off += CHAN_HDR + (size_t)blen;
	}
	return off;
}

/* Through an evbuffer fed in pieces, as the daemons read. */
static void
open_ev(struct chan *c, const uint8_t *in, size_t len, struct evbuffer *out,
    uint32_t seed, uint32_t maxp, int *failed)
{
	struct evbuffer *raw = evbuffer_new();
	size_t off, n;

	ENSURE(raw != NULL);
	*failed = 0;
	for (off = 0; off < len; off += n) {
		n = 1 + rnd(&seed) % maxp;
		if (n > len - off)
			n = len - off;
		evbuffer_add(raw, in + off, n);
		if (chan_ev_open(c, raw, out) == -1) {
			*failed = 1;
			break;
		}
		/* What is left is less than a record. */
		if (evbuffer_get_length(raw) >= CHAN_HDR) {
			uint8_t h[CHAN_HDR];

			evbuffer_copyout(raw, h, sizeof h);
			ENSURE(evbuffer_get_length(raw) < CHAN_HDR +
			    (size_t)chan_hdr(c, h));
		}
	}
	evbuffer_free(raw);
}

/*
 * Bit 6: records sealed here from the input, changed as it says; the
 * wire bytes to wire, what was sealed before the first change to good.
 */
static void
seal_script(const uint8_t *d, size_t size, int sealed, int server,
    struct evbuffer *wire, struct evbuffer *good)
{
	struct chan tx, back;
	uint8_t *rec, r[CHAN_HDR + 100 + CHAN_TAG], zero[100] = { 0 };
	size_t off = 0, len, n;
	int op, spoiled = 0;

	start(&tx, sealed, !server, 0);
	start(&back, sealed, server, 0);
	rec = malloc(CHAN_HDR + 65535 + CHAN_TAG);
	ENSURE(rec != NULL);
	while (size - off >= 3) {
		op = d[off];
		len = (size_t)d[off + 1] | (size_t)d[off + 2] << 8;
		off += 3;
		if (len > size - off)
			len = size - off;
		if (op & 4) {
			/* The receiver's bytes, which the sender acks. */
			back.rx_bytes = tx.tx_bytes;
			n = chan_seal(&back, r, zero, sizeof zero);
			ENSURE(chan_open(&tx, r, n, &n) == 0 &&
			    n == sizeof zero);
		}
		n = chan_seal(&tx, rec, d + off, len);
		switch (op & 3) {
		case 1:
			{
				size_t bit = off + len < size ?
				    d[off + len] % (8 * n) : 0;

				rec[bit / 8] ^= (uint8_t)(1u << (bit % 8));
				if (off + len < size)
					off++;
			}
			spoiled = 1;
			break;
		case 2:
			spoiled = 1;
			off += len;
			continue;
		case 3:
			/* The first copy is the real one. */
			if (!spoiled)
				evbuffer_add(good, d + off, len);
			evbuffer_add(wire, rec, n);
			spoiled = 1;
			break;
		}
		if (!spoiled)
			evbuffer_add(good, d + off, len);
		evbuffer_add(wire, rec, n);
		off += len;
	}
	chan_fini(&tx);
	chan_fini(&back);
	free(rec);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	static uint8_t *rec;
	struct chan c;
	struct evbuffer *o1, *o2, *o3, *wire, *good;
	const uint8_t *in;
	uint32_t seed, maxp;
	size_t len, used1, used2, l1;
	int sel, sealed, server, sent, f1, f2, f3;

	if (!inited) {
		if (auth_init() == -1)
			abort();
		auth_key_from(&key, "fuzzing secret, sixteen+", 24);
		rec = malloc(CHAN_HDR + CHAN_BODY_MAX + CHAN_TAG);
		ENSURE(rec != NULL);
		inited = 1;
	}
	if (size < 1)
		return 0;
	sel = data[0];
	sealed = sel & 1;
	server = (sel & 2) != 0;
	sent = (sel & 0x80) != 0;
	maxp = 1u << ((sel >> 2) & 0x0f);
	seed = 0x9e3779b9u ^ (uint32_t)sel ^ (uint32_t)size;
	o1 = evbuffer_new();
	o2 = evbuffer_new();
	o3 = evbuffer_new();
	wire = evbuffer_new();
	good = evbuffer_new();
	ENSURE(o1 && o2 && o3 && wire && good);
	if (sel & 0x40)
		seal_script(data + 1, size - 1, sealed, server, wire, good);
	else
		evbuffer_add(wire, data + 1, size - 1);
	len = evbuffer_get_length(wire);
	in = len > 0 ? evbuffer_pullup(wire, -1) : (const uint8_t *)"";

	start(&c, sealed, server, sent);
	used1 = open_whole(&c, in, len, rec, o1, &f1);
	chan_fini(&c);
	start(&c, sealed, server, sent);
	used2 = open_steps(&c, in, len, rec, o2, seed, maxp, &f2);
	chan_fini(&c);
	start(&c, sealed, server, sent);
	open_ev(&c, in, len, o3, seed, maxp, &f3);
	chan_fini(&c);

	/* The three agree. */
	ENSURE(f1 == f2 && f2 == f3 && used1 == used2);
	l1 = evbuffer_get_length(o1);
	ENSURE(evbuffer_get_length(o2) == l1 && evbuffer_get_length(o3) == l1);
	if (l1 > 0) {
		const uint8_t *p1 = evbuffer_pullup(o1, -1);

		ENSURE(memcmp(p1, evbuffer_pullup(o2, -1), l1) == 0);
		ENSURE(memcmp(p1, evbuffer_pullup(o3, -1), l1) == 0);
	}
	/* Sealed: only what was sealed, in order, up to the first change. */
	if (sealed && (sel & 0x40)) {
		size_t g = evbuffer_get_length(good);

		ENSURE(l1 <= g);
		if (l1 > 0)
			ENSURE(memcmp(evbuffer_pullup(o1, -1),
			    evbuffer_pullup(good, -1), l1) == 0);
	}
	/* Sealed, the fuzzer's own bytes never open (no key to forge). */
	if (sealed && !(sel & 0x40))
		ENSURE(l1 == 0);
	evbuffer_free(o1);
	evbuffer_free(o2);
	evbuffer_free(o3);
	evbuffer_free(wire);
	evbuffer_free(good);
	return 0;
}
