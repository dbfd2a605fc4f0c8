/*
 * Unit tests for lib/common/chan.c and chanev.c, the session layer's
 * records: round trips clear and sealed, whole and in pieces; every kind
 * of tampering refused (bit flips, replays, reordering, reflection,
 * records of another connection or lane); the header's checks; the acks;
 * the keys recomputed here from gleam-protocol(5)'s description; the
 * evbuffer helpers with records split at every byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "auth.h"
#include "chan.h"
#include "t.h"

static struct auth_key key, other;
static uint8_t cn[PROTO_NONCE_LEN], sn[PROTO_NONCE_LEN];

/* Both ends of one connection: sealed with key, or clear. */
static void
pair(struct chan *cl, struct chan *sv, const struct auth_key *k)
{
	CHECK(chan_init(cl, k, 0, cn, sn) == 0);
	CHECK(chan_init(sv, k, 1, cn, sn) == 0);
}

static void
unpair(struct chan *cl, struct chan *sv)
{
	chan_fini(cl);
	chan_fini(sv);
}

static void
fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 251 + seed + (i >> 11));
}

/* Opens rec (len bytes) whole, through chan_hdr as a reader would. */
static int
open_rec(struct chan *c, uint8_t *rec, size_t len, size_t *n)
{
	ssize_t body;

	if (len < CHAN_HDR || (body = chan_hdr(c, rec)) == -1)
		return -1;
	if ((size_t)body != len - CHAN_HDR)
		return -1;
	return chan_open(c, rec, len, n);
}

/* Whole records, both ways, clear and sealed, in place or not. */
static void
test_roundtrip(const struct auth_key *k)
{
	static const size_t sizes[] = { 0, 1, 15, 16, 17, 100, 4096, 65537,
	    CHAN_BODY_MAX };
	struct chan cl, sv, *tx, *rx;
	uint8_t *p, *rec;
	size_t i, n, len;
	int dir, inplace;

	p = malloc(CHAN_BODY_MAX);
	rec = malloc(CHAN_HDR + CHAN_BODY_MAX + CHAN_TAG);
	pair(&cl, &sv, k);
	CHECK(cl.on && sv.on && cl.sealed == (k != NULL && k->set));
	CHECK(chan_wire(&cl, 10) == CHAN_HDR + 10 + (cl.sealed ? CHAN_TAG :
	    0));
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (dir = 0; dir < 2; dir++)
			for (inplace = 0; inplace < 2; inplace++) {
				tx = dir ? &sv : &cl;
				rx = dir ? &cl : &sv;
				n = sizes[i];
				fill(p, n, (unsigned)(i + dir));
				if (inplace)
					memcpy(rec + CHAN_HDR, p, n);
				len = chan_seal(tx, rec, inplace ? rec +
				    CHAN_HDR : p, n);
				CHECK(len == chan_wire(tx, n));
				/* Sealed, the body is not the plaintext. */
				if (n >= 16)
					CHECK((memcmp(rec + CHAN_HDR, p, n) ==
					    0) == !tx->sealed);
				CHECK(open_rec(rx, rec, len, &len) == 0);
				CHECK(len == n && memcmp(rec + CHAN_HDR, p,
				    n) == 0);
			}
	CHECK(cl.tx_rec == 18 && sv.rx_rec == 18);
	CHECK(sv.tx_rec == 18 && cl.rx_rec == 18);
	CHECK(cl.tx_bytes == sv.rx_bytes && sv.tx_bytes == cl.rx_bytes);
	unpair(&cl, &sv);
	/* chan_fini twice is harmless, and leaves no key behind. */
	chan_fini(&cl);
	CHECK(cl.tx == NULL && cl.rx == NULL);
	CHECK(sodium_is_zero(cl.prk, sizeof cl.prk));
	free(p);
	free(rec);
}

/*
 * _begin/_update/_final in odd pieces make the bytes chan_seal makes,
 * and open in odd pieces too, in place or not.
 */
static void
test_stream(const struct auth_key *k)
{
	static const size_t cuts[] = { 1, 7, 16, 4096, 3, 65536 };
	struct chan a, b, sv;
	uint8_t *p, *whole, *rec, *out;
	size_t n = 200003, off, m, i, len;
	int inplace;

	p = malloc(n);
	whole = malloc(CHAN_HDR + n + CHAN_TAG);
	rec = malloc(CHAN_HDR + n + CHAN_TAG);
	out = malloc(n);
	fill(p, n, 5);
	for (inplace = 0; inplace < 2; inplace++) {
		/* Two clients in the same state: the same bytes. */
		pair(&a, &sv, k);
		CHECK(chan_init(&b, k, 0, cn, sn) == 0);
		len = chan_seal(&a, whole, p, n);
		chan_seal_begin(&b, rec, n);
		if (inplace)
			memcpy(rec + CHAN_HDR, p, n);
		for (off = 0, i = 0; off < n; off += m, i++) {
			m = cuts[i % (sizeof cuts / sizeof cuts[0])];
			if (m > n - off)
				m = n - off;
			chan_seal_update(&b, rec + CHAN_HDR + off, inplace ?
			    rec + CHAN_HDR + off : p + off, m);
		}
		CHECK(chan_seal_final(&b, rec + CHAN_HDR + n) ==
		    (b.sealed ? CHAN_TAG : 0));
		CHECK(len == chan_wire(&b, n));
		CHECK(memcmp(whole, rec, len) == 0);
		CHECK(a.tx_rec == 1 && b.tx_rec == 1 && b.tx_bytes == n);

		/* Opened in pieces, into another buffer or in place. */
		CHECK(chan_hdr(&sv, rec) == (ssize_t)(len - CHAN_HDR));
		chan_open_begin(&sv, rec);
		for (off = 0, i = 3; off < n; off += m, i++) {
			m = cuts[i % (sizeof cuts / sizeof cuts[0])];
			if (m > n - off)
				m = n - off;
			chan_open_update(&sv, inplace ? rec + CHAN_HDR + off :
			    out + off, rec + CHAN_HDR + off, m);
		}
		CHECK(chan_open_final(&sv, sv.sealed ? rec + CHAN_HDR + n :
		    NULL) == 0);
		CHECK(memcmp(inplace ? rec + CHAN_HDR : out, p, n) == 0);
		CHECK(sv.rx_rec == 1 && sv.rx_bytes == n && sv.rx_left == 0);
		/* Streamed out, opened whole: the next record. */
		chan_seal_begin(&b, rec, 10);
		chan_seal_update(&b, rec + CHAN_HDR, p, 3);
		chan_seal_update(&b, rec + CHAN_HDR + 3, p + 3, 7);
		chan_seal_final(&b, rec + CHAN_HDR + 10);
		CHECK(open_rec(&sv, rec, chan_wire(&b, 10), &m) == 0 &&
		    m == 10 && memcmp(rec + CHAN_HDR, p, 10) == 0);
		unpair(&a, &sv);
		chan_fini(&b);
	}
	/* A body cut short fails at _final, even in the clear. */
	pair(&a, &sv, k);
	chan_seal(&a, rec, p, 100);
	CHECK(chan_hdr(&sv, rec) > 0);
	chan_open_begin(&sv, rec);
	chan_open_update(&sv, out, rec + CHAN_HDR, 99);
	CHECK(chan_open_final(&sv, rec + CHAN_HDR + 100) == -1);
	CHECK(strstr(sv.err, "cut short") != NULL);
	CHECK(sv.rx_rec == 0 && sv.rx_bytes == 0);
	/* More than the body is never taken. */
	chan_open_begin(&sv, rec);
	chan_open_update(&sv, out, rec + CHAN_HDR, 100 + 50);
	CHECK(sv.rx_left == 0);
	unpair(&a, &sv);
	free(p);
	free(whole);
	free(rec);
	free(out);
}

/*
 * Every single-bit change of a sealed record (header, body, tag) is
 * refused, the ack's too (the receiver has sent enough that a changed
 * ack passes chan_hdr's range check, so the tag must catch it).
 */
static void
test_bitflips(void)
{
	struct chan cl, sv, saved;
	uint8_t rec[CHAN_HDR + 40 + CHAN_TAG], bad[sizeof rec], p[4000];
	size_t len, n, bit, refused = 0;

	pair(&cl, &sv, &key);
	fill(p, sizeof p, 9);
	/* The server sends 4000 bytes first: the client's ack is 4000. */
	{
		uint8_t big[CHAN_HDR + sizeof p + CHAN_TAG];

		len = chan_seal(&sv, big, p, sizeof p);
		CHECK(open_rec(&cl, big, len, &n) == 0);
	}
	len = chan_seal(&cl, rec, p, 40);
	CHECK(len == sizeof rec);
	saved = sv;
	for (bit = 0; bit < 8 * sizeof rec; bit++) {
		memcpy(bad, rec, sizeof rec);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		sv = saved;
		if (open_rec(&sv, bad, sizeof bad, &n) == -1 &&
		    sv.rx_rec == 0 && sv.rx_bytes == 0 && sv.peer_ack == 0)
			refused++;
		else
			fprintf(stderr, "bit %zu of the record opened\n", bit);
	}
	CHECK(refused == 8 * sizeof rec);
	/* The untouched record still opens, once. */
	sv = saved;
	CHECK(open_rec(&sv, rec, sizeof rec, &n) == 0 && n == 40);
	CHECK(memcmp(rec + CHAN_HDR, p, 40) == 0);
	CHECK(sv.peer_ack == sizeof p);
	unpair(&cl, &sv);
}

/* Replays, reordering, drops, reflection, other connections. */
static void
test_forgery(void)
{
	struct chan cl, sv, c2, s2;
	uint8_t r1[CHAN_HDR + 32 + CHAN_TAG], r2[sizeof r1], t[sizeof r1];
	uint8_t p[32], n2[PROTO_NONCE_LEN];
	size_t n;

	fill(p, sizeof p, 1);
	/* The same record twice. */
	pair(&cl, &sv, &key);
	chan_seal(&cl, r1, p, sizeof p);
	chan_seal(&cl, r2, p, sizeof p);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == 0);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == -1);
	CHECK(strstr(sv.err, "does not authenticate") != NULL);
	CHECK(sv.rx_rec == 1);
	unpair(&cl, &sv);

	/* Two records swapped, or the first dropped. */
	pair(&cl, &sv, &key);
	chan_seal(&cl, r1, p, sizeof p);
	chan_seal(&cl, r2, p, sizeof p);
	memcpy(t, r2, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == -1);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == 0);
	memcpy(t, r2, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == 0);
	unpair(&cl, &sv);

	/* The client's record fed back to the client, the server's too. */
	pair(&cl, &sv, &key);
	chan_seal(&cl, r1, p, sizeof p);
	chan_seal(&sv, r2, p, sizeof p);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&cl, t, sizeof t, &n) == -1);
	memcpy(t, r2, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == -1);
	/* Each opens where it belongs. */
	CHECK(open_rec(&sv, r1, sizeof r1, &n) == 0);
	CHECK(open_rec(&cl, r2, sizeof r2, &n) == 0);
	unpair(&cl, &sv);

	/*
	 * Another connection: the other's nonces (either), or the other
	 * key.  Its first record has the same counter, not the same key.
	 */
	pair(&cl, &sv, &key);
	chan_seal(&cl, r1, p, sizeof p);
	memcpy(n2, sn, sizeof n2);
	n2[31] ^= 1;
	CHECK(chan_init(&s2, &key, 1, cn, n2) == 0);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&s2, t, sizeof t, &n) == -1);
	chan_fini(&s2);
	CHECK(chan_init(&s2, &key, 1, n2, sn) == 0);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&s2, t, sizeof t, &n) == -1);
	chan_fini(&s2);
	/* The nonces in the other order are another connection too. */
	CHECK(chan_init(&s2, &key, 1, sn, cn) == 0);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&s2, t, sizeof t, &n) == -1);
	chan_fini(&s2);
	CHECK(chan_init(&s2, &other, 1, cn, sn) == 0);
	memcpy(t, r1, sizeof t);
	CHECK(open_rec(&s2, t, sizeof t, &n) == -1);
	chan_fini(&s2);
	/* The same key and nonces: the same connection's secret. */
	CHECK(chan_init(&c2, &key, 0, cn, sn) == 0);
	CHECK(memcmp(c2.prk, cl.prk, CHAN_KEY) == 0);
	chan_fini(&c2);
	CHECK(open_rec(&sv, r1, sizeof r1, &n) == 0);
	unpair(&cl, &sv);
}

/* Lanes: keys of their own, per lane, derived from the connection's. */
static void
test_lanes(void)
{
	struct chan cl, sv, l0c, l0s, l1c, l1s, lc, ls;
	uint8_t r[CHAN_HDR + 64 + CHAN_TAG], t[sizeof r], p[64];
	size_t n;

	fill(p, sizeof p, 3);
	pair(&cl, &sv, &key);
	CHECK(chan_init_lane(&l0c, &cl, 0) == 0);
	CHECK(chan_init_lane(&l0s, &sv, 0) == 0);
	CHECK(chan_init_lane(&l1c, &cl, 1) == 0);
	CHECK(chan_init_lane(&l1s, &sv, 1) == 0);
	CHECK(l0c.sealed && l0c.on && !l0c.server && l0s.server);
	CHECK(memcmp(l0c.prk, cl.prk, CHAN_KEY) != 0);
	CHECK(memcmp(l0c.prk, l1c.prk, CHAN_KEY) != 0);
	CHECK(memcmp(l0c.prk, l0s.prk, CHAN_KEY) == 0);
	CHECK(l0c.tx_rec == 0 && l0c.rx_bytes == 0);

	/* A lane's record opens on that lane, both ways. */
	chan_seal(&l0c, r, p, sizeof p);
	memcpy(t, r, sizeof t);
	CHECK(open_rec(&l0s, t, sizeof t, &n) == 0 && n == sizeof p &&
	    memcmp(t + CHAN_HDR, p, n) == 0);
	chan_seal(&l1s, r, p, sizeof p);
	memcpy(t, r, sizeof t);
	CHECK(open_rec(&l1c, t, sizeof t, &n) == 0);

	/* Not on the main connection, nor on another lane. */
	chan_seal(&l1c, r, p, sizeof p);
	memcpy(t, r, sizeof t);
	CHECK(open_rec(&sv, t, sizeof t, &n) == -1);
	memcpy(t, r, sizeof t);
	CHECK(open_rec(&l0s, t, sizeof t, &n) == -1);
	CHECK(open_rec(&l1s, r, sizeof r, &n) == 0);
	/* The main connection's first record is no lane's. */
	chan_seal(&cl, r, p, sizeof p);
	CHECK(chan_init_lane(&lc, &cl, 0) == 0);
	CHECK(chan_init_lane(&ls, &sv, 0) == 0);
	memcpy(t, r, sizeof t);
	CHECK(open_rec(&ls, t, sizeof t, &n) == -1);
	CHECK(open_rec(&sv, r, sizeof r, &n) == 0);
	chan_fini(&lc);
	chan_fini(&ls);
	/* A lane of another connection. */
	{
		struct chan o, ol;
		uint8_t n2[PROTO_NONCE_LEN];

		memcpy(n2, cn, sizeof n2);
		n2[0] ^= 0x80;
		CHECK(chan_init(&o, &key, 1, n2, sn) == 0);
		CHECK(chan_init_lane(&ol, &o, 0) == 0);
		CHECK(chan_init_lane(&lc, &cl, 0) == 0);
		chan_seal(&lc, r, p, sizeof p);
		CHECK(open_rec(&ol, r, sizeof r, &n) == -1);
		chan_fini(&o);
		chan_fini(&ol);
		chan_fini(&lc);
	}
	chan_fini(&l0c);
	chan_fini(&l0s);
	chan_fini(&l1c);
	chan_fini(&l1s);
	unpair(&cl, &sv);

	/* A clear connection's lanes are clear. */
	pair(&cl, &sv, NULL);
	CHECK(chan_init_lane(&l0c, &cl, 2) == 0);
	CHECK(l0c.on && !l0c.sealed && l0c.tx == NULL);
	chan_fini(&l0c);
	unpair(&cl, &sv);
}

/* HMAC-SHA256(k, label and its NUL | a | b), as gleam-protocol(5) says. */
static void
hmac(uint8_t out[32], const uint8_t k[32], const char *label,
    const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, k, 32);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label,
	    strlen(label) + 1);
	if (alen > 0)
		crypto_auth_hmacsha256_update(&st, a, alen);
	if (blen > 0)
		crypto_auth_hmacsha256_update(&st, b, blen);
	crypto_auth_hmacsha256_final(&st, out);
}

/* Opens record number seq of rec with AES-256-GCM under k, from scratch. */
static int
gcm_open(const uint8_t k[32], uint64_t seq, const uint8_t *rec, size_t len,
    uint8_t *out)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	uint8_t iv[12] = { 0 }, tag[CHAN_TAG];
	int i, ol, ok;

	for (i = 0; i < 8; i++)
		iv[i] = (uint8_t)(seq >> (8 * i));
	memcpy(tag, rec + len - CHAN_TAG, CHAN_TAG);
	ok = EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, k, iv) == 1 &&
	    EVP_DecryptUpdate(x, NULL, &ol, rec, CHAN_HDR) == 1 &&
	    EVP_DecryptUpdate(x, out, &ol, rec + CHAN_HDR,
	    (int)(len - CHAN_HDR - CHAN_TAG)) == 1 &&
	    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, CHAN_TAG, tag) == 1 &&
	    EVP_DecryptFinal_ex(x, out, &ol) == 1;
	EVP_CIPHER_CTX_free(x);
	return ok ? 0 : -1;
}

/*
 * The keys and nonces recomputed from the page's description: a record
 * opens with them alone, so the page and the code agree.
 */
static void
test_derivation(void)
{
	struct chan cl, sv, lc, ls;
	uint8_t prk[32], kc[32], ks[32], lprk[32], lkc[32], lks[32];
	uint8_t rec[CHAN_HDR + 20 + CHAN_TAG], out[20], p[20], idx[4] =
	    { 5, 0, 0, 0 };

	fill(p, sizeof p, 4);
	hmac(prk, key.k, "gleam-v2 connection", cn, sizeof cn, sn, sizeof sn);
	hmac(kc, prk, "gleam-v2 client to server", NULL, 0, NULL, 0);
	hmac(ks, prk, "gleam-v2 server to client", NULL, 0, NULL, 0);
	hmac(lprk, prk, "gleam-v2 lane", idx, sizeof idx, NULL, 0);
	hmac(lkc, lprk, "gleam-v2 lane client to server", NULL, 0, NULL, 0);
	hmac(lks, lprk, "gleam-v2 lane server to client", NULL, 0, NULL, 0);

	pair(&cl, &sv, &key);
	CHECK(memcmp(cl.prk, prk, 32) == 0);
	chan_seal(&cl, rec, p, sizeof p);
	CHECK(gcm_open(kc, 0, rec, sizeof rec, out) == 0 &&
	    memcmp(out, p, sizeof p) == 0);
	chan_seal(&cl, rec, p, sizeof p);
	CHECK(gcm_open(kc, 0, rec, sizeof rec, out) == -1);
	CHECK(gcm_open(kc, 1, rec, sizeof rec, out) == 0);
	chan_seal(&sv, rec, p, sizeof p);
	CHECK(gcm_open(ks, 0, rec, sizeof rec, out) == 0);
	CHECK(gcm_open(kc, 0, rec, sizeof rec, out) == -1);
	/* The header is the associated data: an ack of 0, the length. */
	CHECK(rec[0] == sizeof p + CHAN_TAG && rec[1] == 0 && rec[4] == 0);

	CHECK(chan_init_lane(&lc, &cl, 5) == 0);
	CHECK(chan_init_lane(&ls, &sv, 5) == 0);
	CHECK(memcmp(lc.prk, lprk, 32) == 0);
	chan_seal(&lc, rec, p, sizeof p);
	CHECK(gcm_open(lkc, 0, rec, sizeof rec, out) == 0);
	chan_seal(&ls, rec, p, sizeof p);
	CHECK(gcm_open(lks, 0, rec, sizeof rec, out) == 0);
	chan_fini(&lc);
	chan_fini(&ls);
	unpair(&cl, &sv);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void
mkhdr(uint8_t h[CHAN_HDR], uint32_t len, uint16_t kind, uint16_t zero,
    uint64_t ack)
{
	put32(h, len);
	h[4] = (uint8_t)kind;
	h[5] = (uint8_t)(kind >> 8);
	h[6] = (uint8_t)zero;
	h[7] = (uint8_t)(zero >> 8);
	put32(h + 8, (uint32_t)ack);
	put32(h + 12, (uint32_t)(ack >> 32));
}

/* chan_hdr's checks, clear and sealed. */
static void
test_header(const struct auth_key *k)
{
	struct chan cl, sv;
	uint8_t h[CHAN_HDR], rec[CHAN_HDR + 64 + CHAN_TAG], p[64];
	size_t tag, n;

	pair(&cl, &sv, k);
	tag = sv.sealed ? CHAN_TAG : 0;
	mkhdr(h, (uint32_t)tag, 0, 0, 0);
	CHECK(chan_hdr(&sv, h) == (ssize_t)tag);
	mkhdr(h, (uint32_t)(CHAN_BODY_MAX + tag), 0, 0, 0);
	CHECK(chan_hdr(&sv, h) == (ssize_t)(CHAN_BODY_MAX + tag));
	/* Kinds other than 0, and the zero field. */
	mkhdr(h, 20, 1, 0, 0);
	CHECK(chan_hdr(&sv, h) == -1 && strstr(sv.err, "kind") != NULL);
	mkhdr(h, 20, 0x100, 0, 0);
	CHECK(chan_hdr(&sv, h) == -1);
	mkhdr(h, 20, 0, 1, 0);
	CHECK(chan_hdr(&sv, h) == -1);
	mkhdr(h, 20, 0, 0x8000, 0);
	CHECK(chan_hdr(&sv, h) == -1);
	/* Lengths: over the most, short of a tag. */
	mkhdr(h, (uint32_t)(CHAN_BODY_MAX + tag + 1), 0, 0, 0);
	CHECK(chan_hdr(&sv, h) == -1 && strstr(sv.err, "bytes") != NULL);
	mkhdr(h, 0xffffffffu, 0, 0, 0);
	CHECK(chan_hdr(&sv, h) == -1);
	if (tag > 0) {
		mkhdr(h, CHAN_TAG - 1, 0, 0, 0);
		CHECK(chan_hdr(&sv, h) == -1);
		mkhdr(h, 0, 0, 0, 0);
		CHECK(chan_hdr(&sv, h) == -1);
	} else {
		mkhdr(h, 0, 0, 0, 0);
		CHECK(chan_hdr(&sv, h) == 0);
	}
	/* An ack beyond what was sent. */
	mkhdr(h, (uint32_t)tag, 0, 0, 1);
	CHECK(chan_hdr(&sv, h) == -1 && strstr(sv.err, "acknowledg") !=
	    NULL);
	mkhdr(h, (uint32_t)tag, 0, 0, UINT64_MAX);
	CHECK(chan_hdr(&sv, h) == -1);
	/* The server sends 64 bytes; the client acks 40, then 30. */
	fill(p, sizeof p, 2);
	n = chan_seal(&sv, rec, p, sizeof p);
	CHECK(open_rec(&cl, rec, n, &n) == 0);
	mkhdr(h, (uint32_t)tag, 0, 0, 64);
	CHECK(chan_hdr(&sv, h) == (ssize_t)tag);
	mkhdr(h, (uint32_t)tag, 0, 0, 65);
	CHECK(chan_hdr(&sv, h) == -1);
	cl.rx_bytes = 40;	/* as if only 40 had come */
	n = chan_seal(&cl, rec, p, 0);
	CHECK(open_rec(&sv, rec, n, &n) == 0 && n == 0);
	CHECK(sv.peer_ack == 40);
	mkhdr(h, (uint32_t)tag, 0, 0, 40);
	CHECK(chan_hdr(&sv, h) == (ssize_t)tag);
	mkhdr(h, (uint32_t)tag, 0, 0, 39);
	CHECK(chan_hdr(&sv, h) == -1);
	/* A header whose ack went backwards, sealed by the real sender. */
	{
		struct chan saved = cl;

		cl.rx_bytes = 30;
		n = chan_seal(&cl, rec, p, 0);
		CHECK(open_rec(&sv, rec, n, &n) == -1);
		CHECK(sv.peer_ack == 40);
		cl = saved;
	}

	/* chan_open on a short or ill-sized buffer. */
	CHECK(chan_open(&sv, rec, CHAN_HDR - 1, &n) == -1);
	cl.rx_bytes = 64;
	n = chan_seal(&cl, rec, p, 8);
	CHECK(chan_open(&sv, rec, n + 1, &n) == -1);
	CHECK(chan_open(&sv, rec, chan_wire(&cl, 8), &n) == 0 && n == 8);
	unpair(&cl, &sv);
}

/* rx_bytes, peer_ack, acked and chan_ack_due. */
static void
test_acks(const struct auth_key *k)
{
	struct chan cl, sv, off;
	uint8_t *rec, *p;
	size_t n, len, sent = 0;
	int i;

	memset(&off, 0, sizeof off);
	CHECK(!chan_ack_due(&off));
	rec = malloc(CHAN_HDR + CHAN_BODY_MAX + CHAN_TAG);
	p = malloc(CHAN_BODY_MAX);
	fill(p, CHAN_BODY_MAX, 8);
	pair(&cl, &sv, k);
	CHECK(!chan_ack_due(&sv));
	/* The client sends; the server's count is the plaintext. */
	for (i = 0; i < 5; i++) {
		n = (size_t)i * 1000 + 1;
		len = chan_seal(&cl, rec, p, n);
		sent += n;
		CHECK(open_rec(&sv, rec, len, &n) == 0);
	}
	CHECK(cl.tx_bytes == sent && sv.rx_bytes == sent);
	CHECK(sv.peer_ack == 0 && cl.peer_ack == 0);
	CHECK(!chan_ack_due(&sv));
	/* Up to CHAN_ACK_EVERY since the last ack: due. */
	len = chan_seal(&cl, rec, p, CHAN_ACK_EVERY - sent - 1);
	CHECK(open_rec(&sv, rec, len, &n) == 0);
	CHECK(!chan_ack_due(&sv));
	len = chan_seal(&cl, rec, p, 1);
	CHECK(open_rec(&sv, rec, len, &n) == 0);
	CHECK(chan_ack_due(&sv) && sv.rx_bytes == CHAN_ACK_EVERY);
	/* An empty record acknowledges it all. */
	len = chan_seal(&sv, rec, p, 0);
	CHECK(len == chan_wire(&sv, 0));
	CHECK(!chan_ack_due(&sv) && sv.acked == CHAN_ACK_EVERY);
	CHECK(sv.tx_bytes == 0);
	CHECK(open_rec(&cl, rec, len, &n) == 0 && n == 0);
	CHECK(cl.peer_ack == CHAN_ACK_EVERY && cl.rx_bytes == 0);
	CHECK(cl.rx_rec == 1);
	/* The ack is what had come when the record was begun. */
	len = chan_seal(&cl, rec, p, 10);
	CHECK(open_rec(&sv, rec, len, &n) == 0);
	chan_seal_begin(&sv, rec, 0);
	chan_seal_final(&sv, rec + CHAN_HDR);
	CHECK(open_rec(&cl, rec, chan_wire(&sv, 0), &n) == 0);
	CHECK(cl.peer_ack == CHAN_ACK_EVERY + 10);
	/* A full record, one that does not open changes nothing. */
	len = chan_seal(&sv, rec, p, CHAN_BODY_MAX);
	rec[len - 1] ^= cl.sealed ? 1 : 0;
	if (cl.sealed) {
		CHECK(open_rec(&cl, rec, len, &n) == -1);
		CHECK(cl.rx_bytes == 0 && cl.rx_rec == 2);
	} else {
		CHECK(open_rec(&cl, rec, len, &n) == 0);
		CHECK(cl.rx_bytes == CHAN_BODY_MAX && chan_ack_due(&cl));
	}
	unpair(&cl, &sv);
	free(rec);
	free(p);
}

/* chan_ev_seal and chan_ev_open, records split at every byte. */
static void
test_ev(const struct auth_key *k)
{
	static const size_t sizes[] = { 0, 5, 100, 1 };
	struct chan cl, sv;
	struct evbuffer *plain = evbuffer_new(), *raw = evbuffer_new();
	struct evbuffer *got = evbuffer_new(), *in = evbuffer_new();
	uint8_t *wire, *want, *p, *big;
	size_t i, cut, wlen, plen = 0, ok = 0, nbig;
	int last;

	p = malloc(4096);
	fill(p, 4096, 6);
	/* One record per call: the stream the reader will see. */
	pair(&cl, &sv, k);
	CHECK(chan_ev_seal(&cl, plain, raw) == 0 &&
	    evbuffer_get_length(raw) == 0);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		/* An empty plain makes no record: write one by hand. */
		if (sizes[i] == 0) {
			uint8_t r[CHAN_HDR + CHAN_TAG];

			evbuffer_add(raw, r, chan_seal(&cl, r, NULL, 0));
			continue;
		}
		evbuffer_add(plain, p + plen, sizes[i]);
		CHECK(chan_ev_seal(&cl, plain, raw) == 0);
		CHECK(evbuffer_get_length(plain) == 0);
		plen += sizes[i];
	}
	CHECK(cl.tx_rec == 4);
	wlen = evbuffer_get_length(raw);
	wire = malloc(wlen);
	evbuffer_remove(raw, wire, wlen);
	want = p;
	chan_fini(&sv);

	/* Split in two at every byte; then a byte at a time. */
	for (cut = 0; cut <= wlen; cut++) {
		CHECK(chan_init(&sv, k, 1, cn, sn) == 0);
		evbuffer_add(in, wire, cut);
		last = chan_ev_open(&sv, in, got);
		evbuffer_add(in, wire + cut, wlen - cut);
		if (last == 0 && chan_ev_open(&sv, in, got) == 0 &&
		    evbuffer_get_length(in) == 0 &&
		    evbuffer_get_length(got) == plen &&
		    memcmp(evbuffer_pullup(got, -1), want, plen) == 0 &&
		    sv.rx_rec == 4)
			ok++;
		evbuffer_drain(got, evbuffer_get_length(got));
		evbuffer_drain(in, evbuffer_get_length(in));
		chan_fini(&sv);
	}
	CHECK(ok == wlen + 1);
	CHECK(chan_init(&sv, k, 1, cn, sn) == 0);
	for (i = 0; i < wlen; i++) {
		evbuffer_add(in, wire + i, 1);
		CHECK(chan_ev_open(&sv, in, got) == 0);
		/* Only whole records come out. */
		CHECK(evbuffer_get_length(in) < CHAN_HDR + 100 + CHAN_TAG + 1);
	}
	CHECK(evbuffer_get_length(got) == plen && evbuffer_get_length(in) ==
	    0 && memcmp(evbuffer_pullup(got, -1), want, plen) == 0);
	evbuffer_drain(got, plen);
	chan_fini(&sv);

	/*
	 * A bad record after a good one: the good one's plaintext comes
	 * out, nothing of the bad one, and -1.
	 */
	if (cl.sealed) {
		CHECK(chan_init(&sv, k, 1, cn, sn) == 0);
		wire[wlen - 1] ^= 0x40;		/* the last record's tag */
		evbuffer_add(in, wire, wlen);
		CHECK(chan_ev_open(&sv, in, got) == -1);
		CHECK(evbuffer_get_length(got) == plen - 1);
		CHECK(strstr(sv.err, "does not authenticate") != NULL);
		evbuffer_drain(got, evbuffer_get_length(got));
		evbuffer_drain(in, evbuffer_get_length(in));
		chan_fini(&sv);
	}
	/* A bad header is refused before its body comes. */
	CHECK(chan_init(&sv, k, 1, cn, sn) == 0);
	{
		uint8_t h[CHAN_HDR];

		mkhdr(h, 5, 3, 0, 0);
		evbuffer_add(in, h, sizeof h);
		CHECK(chan_ev_open(&sv, in, got) == -1);
		evbuffer_drain(in, evbuffer_get_length(in));
		mkhdr(h, CHAN_BODY_MAX + CHAN_TAG + 1, 0, 0, 0);
		evbuffer_add(in, h, sizeof h);
		CHECK(chan_ev_open(&sv, in, got) == -1);
		evbuffer_drain(in, evbuffer_get_length(in));
	}
	chan_fini(&sv);
	free(wire);
	unpair(&cl, &sv);

	/* More than a record's worth: records of CHAN_BODY_MAX at most. */
	pair(&cl, &sv, k);
	nbig = CHAN_BODY_MAX + 4097;
	big = malloc(nbig);
	fill(big, nbig, 11);
	evbuffer_add(plain, big, nbig);
	CHECK(chan_ev_seal(&cl, plain, raw) == 0);
	CHECK(cl.tx_rec == 2 && evbuffer_get_length(plain) == 0);
	CHECK(evbuffer_get_length(raw) == chan_wire(&cl, CHAN_BODY_MAX) +
	    chan_wire(&cl, 4097));
	CHECK(chan_ev_open(&sv, raw, got) == 0);
	CHECK(evbuffer_get_length(raw) == 0 && evbuffer_get_length(got) ==
	    nbig && memcmp(evbuffer_pullup(got, -1), big, nbig) == 0);
	CHECK(sv.rx_bytes == nbig && sv.rx_rec == 2);
	unpair(&cl, &sv);
	free(big);
	free(p);
	evbuffer_free(plain);
	evbuffer_free(raw);
	evbuffer_free(got);
	evbuffer_free(in);
}

int
main(void)
{
	struct auth_key unset;
	const struct auth_key *keys[] = { NULL, &key };
	size_t i;

	if (auth_init() == -1) {
		fprintf(stderr, "libsodium cannot start\n");
		return 1;
	}
	auth_key_from(&key, "the right secret, 16+", 21);
	auth_key_from(&other, "another secret, 16+ bytes", 25);
	memset(&unset, 0, sizeof unset);
	auth_nonce(cn);
	auth_nonce(sn);
	for (i = 0; i < 2; i++) {
		test_roundtrip(keys[i]);
		test_stream(keys[i]);
		test_header(keys[i]);
		test_acks(keys[i]);
		test_ev(keys[i]);
	}
	/* An unset key is no key: clear. */
	test_roundtrip(&unset);
	test_bitflips();
	test_forgery();
	test_lanes();
	test_derivation();
	return t_done("chan");
}
