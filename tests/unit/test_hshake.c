/*
 * Unit tests for lib/common/hshake.c: the server half of the handshake,
 * driven with frames built here as a client would, its replies decoded
 * and the server's proof checked with auth.c; after WELCOME, the records
 * both ways (hshake_open, hshake_frame, hshake_seal) against a client's
 * struct chan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "auth.h"
#include "chan.h"
#include "hshake.h"
#include "log.h"
#include "proto.h"
#include "t.h"

/* A payload that sealed bytes do not hold by chance (16 bytes). */
#define PLAIN		"plain-text-here!"
#define PLAINLEN	16

static struct auth_key key, other;

/* A client's side of one connection. */
struct cl {
	struct hshake	 hs;
	struct evbuffer	*out;		/* what the server sent */
	uint8_t		 cnonce[PROTO_NONCE_LEN];
	struct msg_challenge ch;
	const struct auth_key *key;	/* the one AUTH proved, if any */
	struct chan	 cc;		/* the client's, after WELCOME */
	struct evbuffer	*plain;		/* opened from out */
};

static void
cl_open(struct cl *c, const struct hshake_conf *conf)
{
	memset(c, 0, sizeof *c);
	hshake_init(&c->hs, conf, "127.0.0.1:9", 42);
	c->out = evbuffer_new();
	c->plain = evbuffer_new();
	auth_nonce(c->cnonce);
}

static void
cl_close(struct cl *c)
{
	chan_fini(&c->cc);
	hshake_fini(&c->hs);
	evbuffer_free(c->out);
	evbuffer_free(c->plain);
}

/* Feeds one frame as a daemon would: header first, then the whole. */
static int
cl_send(struct cl *c, uint16_t type, uint16_t flags, uint32_t len,
    const void *p)
{
	struct frame_hdr h = { len, type, flags, 7 };
	int rc;

	if ((rc = hshake_header(&c->hs, &h, c->out)) != HSHAKE_OK)
		return rc;
	return hshake_input(&c->hs, &h, p, c->out);
}

static int
cl_hello(struct cl *c, uint16_t vmin, uint16_t vmax, const char *name)
{
	struct msg_hello m;
	struct pw w;
	int rc;

	memset(&m, 0, sizeof m);
	m.magic = PROTO_MAGIC;
	m.vmin = vmin;
	m.vmax = vmax;
	memcpy(m.nonce, c->cnonce, sizeof m.nonce);
	snprintf(m.name, sizeof m.name, "%s", name);
	pw_init(&w);
	msg_hello_enc(&w, &m);
	rc = cl_send(c, MSG_HELLO, 0, (uint32_t)w.len, w.p);
	pw_free(&w);
	return rc;
}

static int
cl_auth(struct cl *c, const struct auth_key *k, uint8_t proof[PROTO_PROOF_LEN])
{
	struct msg_auth m;
	struct pw w;
	int rc;

	c->key = k;
	auth_proof(k, 0, c->ch.version, c->cnonce, c->ch.nonce, m.proof);
	if (proof != NULL)
		memcpy(proof, m.proof, PROTO_PROOF_LEN);
	pw_init(&w);
	msg_auth_enc(&w, &m);
	rc = cl_send(c, MSG_AUTH, 0, (uint32_t)w.len, w.p);
	pw_free(&w);
	return rc;
}

/*
 * The next frame the server sent: its type, its payload in buf.  After
 * WELCOME, out from records: -2 if one does not open.
 */
static int
cl_recv(struct cl *c, uint8_t *buf, size_t cap, uint32_t *len)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	struct evbuffer *in = c->out;

	if (c->cc.on) {
		if (chan_ev_open(&c->cc, c->out, c->plain) == -1)
			return -2;
		in = c->plain;
	}
	if (evbuffer_get_length(in) < PROTO_HDR_LEN)
		return -1;
	evbuffer_remove(in, hb, sizeof hb);
	proto_hdr_decode(hb, &h);
	if (h.len > cap || evbuffer_get_length(in) < h.len ||
	    h.flags != FL_REPLY)
		return -1;
	evbuffer_remove(in, buf, h.len);
	*len = h.len;
	return h.type;
}

static int
cl_challenge(struct cl *c)
{
	uint8_t buf[1024];
	uint32_t len;

	return cl_recv(c, buf, sizeof buf, &len) == MSG_CHALLENGE &&
	    msg_challenge_dec(buf, len, &c->ch) == 0 ? 0 : -1;
}

/* The error code of the next frame, which must be an ERROR. */
static int
cl_error(struct cl *c)
{
	uint8_t buf[1024];
	struct msg_error e;
	uint32_t len;

	if (cl_recv(c, buf, sizeof buf, &len) != MSG_ERROR ||
	    msg_error_dec(buf, len, &e) == -1)
		return -1;
	return (int)e.code;
}

/* WELCOME, after which the client's records start, as conn.c's do. */
static int
cl_welcome(struct cl *c, struct msg_welcome *wel)
{
	uint8_t buf[1024];
	uint32_t len;

	if (cl_recv(c, buf, sizeof buf, &len) != MSG_WELCOME ||
	    msg_welcome_dec(buf, len, wel) != 0)
		return -1;
	return chan_init(&c->cc, c->ch.auth == AUTH_HMAC_SHA256 ? c->key :
	    NULL, 0, c->cnonce, c->ch.nonce);
}

static void
test_no_key(void)
{
	struct hshake_conf conf = { .max_frame = 1 << 20, .name = "srv" };
	struct msg_welcome wel;
	struct frame_hdr h = { 0, MSG_ECHO, 0, 1 };
	struct cl c;

	cl_open(&c, &conf);
	CHECK(!hshake_done(&c.hs));
	CHECK(hshake_limit(&c.hs) == PROTO_MAX_FRAME_MIN);
	CHECK(cl_hello(&c, 2, 2, "probe\n\x01") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0);
	CHECK(c.ch.version == 2 && c.ch.auth == AUTH_NONE);
	CHECK(c.ch.max_frame == 1 << 20);
	CHECK_STR(c.ch.name, "srv");
	CHECK(cl_welcome(&c, &wel) == 0);
	CHECK(wel.has_proof == 0 && wel.session == 42);
	CHECK(evbuffer_get_length(c.out) == 0);
	CHECK(hshake_done(&c.hs));
	CHECK(hshake_limit(&c.hs) == 1 << 20);
	/* The result: what a session layer would start from. */
	CHECK(c.hs.res.version == 2 && c.hs.res.session == 42);
	CHECK(!c.hs.res.authed);
	CHECK(memcmp(c.hs.res.cnonce, c.cnonce, PROTO_NONCE_LEN) == 0);
	CHECK(memcmp(c.hs.res.snonce, c.ch.nonce, PROTO_NONCE_LEN) == 0);
	CHECK_STR(c.hs.res.name, "probe??");
	/* Requests are the daemon's; nothing is sent for them here. */
	CHECK(hshake_input(&c.hs, &h, NULL, c.out) == HSHAKE_PASS);
	CHECK(evbuffer_get_length(c.out) == 0);
	/* A timer firing late does nothing. */
	hshake_timeout(&c.hs, c.out);
	CHECK(hshake_done(&c.hs) && evbuffer_get_length(c.out) == 0);
	cl_close(&c);
}

static void
test_key(void)
{
	struct hshake_conf conf = { .key = &key, .max_frame = 1 << 16 };
	struct msg_welcome wel;
	uint8_t expect[PROTO_PROOF_LEN];
	struct cl c;

	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 1, 3, "") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	CHECK(c.ch.version == PROTO_VERSION_MAX);
	CHECK(c.ch.auth == AUTH_HMAC_SHA256);
	CHECK(evbuffer_get_length(c.out) == 0);
	CHECK(!hshake_done(&c.hs));
	CHECK(cl_auth(&c, &key, NULL) == HSHAKE_WELCOMED);
	CHECK(cl_welcome(&c, &wel) == 0);
	auth_proof(&key, 1, c.ch.version, c.ch.nonce, c.cnonce, expect);
	CHECK(wel.has_proof == 1 && auth_equal(expect, wel.proof) == 0);
	CHECK(hshake_done(&c.hs) && c.hs.res.authed);
	cl_close(&c);
}

static void
test_wrong_key(void)
{
	struct hshake_conf conf = { .key = &key, .max_frame = 1 << 16 };
	struct cl c;

	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_auth(&c, &other, NULL) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_AUTH);
	CHECK(evbuffer_get_length(c.out) == 0);
	CHECK(!hshake_done(&c.hs));
	/* Nothing more is read. */
	CHECK(cl_auth(&c, &key, NULL) == HSHAKE_CLOSE);
	CHECK(evbuffer_get_length(c.out) == 0);
	cl_close(&c);
}

static void
test_key_required(void)
{
	struct hshake_conf conf = { .key = &key, .max_frame = 1 << 16 };
	struct cl c;

	/* A client without a key cannot send AUTH: anything else fails. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_send(&c, MSG_STATUS, 0, 0, NULL) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_AUTH);
	cl_close(&c);
	/* Nor does a well-formed AUTH of zeros get through. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	{
		uint8_t zero[PROTO_PROOF_LEN] = { 0 };

		CHECK(cl_send(&c, MSG_AUTH, 0, sizeof zero, zero) ==
		    HSHAKE_CLOSE);
	}
	CHECK(cl_error(&c) == PERR_AUTH);
	cl_close(&c);
	/* An unset key asks for none. */
	{
		struct auth_key unset = { { 0 }, 0 };
		struct hshake_conf c2 = { .key = &unset, .max_frame = 1 << 16 };

		cl_open(&c, &c2);
		CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_WELCOMED);
		cl_close(&c);
	}
}

static void
test_versions(void)
{
	struct hshake_conf conf = { .max_frame = 1 << 16 };
	struct hshake_conf wide = { .max_frame = 1 << 16, .vmin = 3,
	    .vmax = 5 };
	struct cl c;

	/* Version 1 (frames without records after WELCOME) is gone. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 1, 1, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 3, 9, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 1, 9, "x") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0 && c.ch.version == 2);
	cl_close(&c);
	/* A daemon's own range; the highest both speak is chosen. */
	cl_open(&c, &wide);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	cl_open(&c, &wide);
	CHECK(cl_hello(&c, 2, 4, "x") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0 && c.ch.version == 4);
	cl_close(&c);
	cl_open(&c, &wide);
	CHECK(cl_hello(&c, 4, 9, "x") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0 && c.ch.version == 5);
	cl_close(&c);
	/* Draining refuses after the version is agreed. */
	conf.draining = 1;
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_SHUTDOWN);
	cl_close(&c);
}

static void
test_order(void)
{
	struct hshake_conf conf = { .key = &key, .max_frame = 1 << 16 };
	uint8_t junk[32] = { 1 };
	struct msg_welcome wel;
	struct cl c;

	/* Anything before HELLO: ERROR 6. */
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_ECHO, 0, 2, "hi") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_STATE);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_AUTH, 0, sizeof junk, junk) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_STATE);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_BYE, 0, 0, NULL) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_STATE);
	cl_close(&c);
	/* A second HELLO while AUTH is awaited: ERROR 2. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_AUTH);
	cl_close(&c);
	/* A handshake message after WELCOME: ERROR 6. */
	conf.key = NULL;
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_WELCOMED);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_welcome(&c, &wel) == 0);
	CHECK(cl_error(&c) == PERR_STATE);
	cl_close(&c);
	/* The handshake timer: ERROR 10, then nothing more is read. */
	cl_open(&c, &conf);
	hshake_timeout(&c.hs, c.out);
	CHECK(cl_error(&c) == PERR_TIMEOUT);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(evbuffer_get_length(c.out) == 0);
	cl_close(&c);
}

static void
test_garbage(void)
{
	struct hshake_conf conf = { .max_frame = 1 << 20 };
	struct frame_hdr h = { PROTO_MAX_FRAME_MIN + 1, MSG_HELLO, 0, 0 };
	struct msg_welcome wel;
	uint8_t junk[200];
	struct cl c;
	size_t i;

	/* Over 64 KiB before WELCOME, whatever max_frame: ERROR 4. */
	cl_open(&c, &conf);
	CHECK(hshake_header(&c.hs, &h, c.out) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_TOOBIG);
	cl_close(&c);
	cl_open(&c, &conf);
	h.len = 0xffffffffu;
	CHECK(hshake_header(&c.hs, &h, c.out) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_TOOBIG);
	cl_close(&c);
	/* After it, max_frame is the limit. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_welcome(&c, &wel) == 0);
	h.len = 1 << 20;
	CHECK(hshake_header(&c.hs, &h, c.out) == HSHAKE_OK);
	h.len = (1 << 20) + 1;
	CHECK(hshake_header(&c.hs, &h, c.out) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_TOOBIG);
	cl_close(&c);
	/* A HELLO that does not decode, or with flags: ERROR 3. */
	for (i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_HELLO, 0, sizeof junk, junk) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_MALFORMED);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_HELLO, 0, 0, NULL) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_MALFORMED);
	cl_close(&c);
	cl_open(&c, &conf);
	CHECK(cl_send(&c, MSG_HELLO, FL_ZSTD, sizeof junk, junk) ==
	    HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_MALFORMED);
	cl_close(&c);
	/* A short AUTH. */
	conf.key = &key;
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_OK);
	CHECK(cl_challenge(&c) == 0);
	CHECK(cl_send(&c, MSG_AUTH, 0, 5, junk) == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_MALFORMED);
	cl_close(&c);
}

static void
test_replay(void)
{
	struct hshake_conf conf = { .key = &key, .max_frame = 1 << 16 };
	uint8_t proof[PROTO_PROOF_LEN];
	struct msg_welcome wel;
	struct cl a, b;

	cl_open(&a, &conf);
	CHECK(cl_hello(&a, 2, 2, "a") == HSHAKE_OK);
	CHECK(cl_challenge(&a) == 0);
	CHECK(cl_auth(&a, &key, proof) == HSHAKE_WELCOMED);
	CHECK(cl_welcome(&a, &wel) == 0);
	/* The same AUTH again on the same connection: ERROR 6. */
	{
		struct pw w;
		struct msg_auth m;

		memcpy(m.proof, proof, sizeof proof);
		pw_init(&w);
		msg_auth_enc(&w, &m);
		CHECK(cl_send(&a, MSG_AUTH, 0, (uint32_t)w.len, w.p) ==
		    HSHAKE_CLOSE);
		CHECK(cl_error(&a) == PERR_STATE);

		/*
		 * On a new connection with the same client nonce: the
		 * server's nonce is new, so the old proof is wrong.
		 */
		cl_open(&b, &conf);
		memcpy(b.cnonce, a.cnonce, sizeof b.cnonce);
		CHECK(cl_hello(&b, 2, 2, "b") == HSHAKE_OK);
		CHECK(cl_challenge(&b) == 0);
		CHECK(memcmp(b.ch.nonce, a.ch.nonce, PROTO_NONCE_LEN) != 0);
		CHECK(cl_send(&b, MSG_AUTH, 0, (uint32_t)w.len, w.p) ==
		    HSHAKE_CLOSE);
		CHECK(cl_error(&b) == PERR_AUTH);
		pw_free(&w);
	}
	cl_close(&a);
	cl_close(&b);
}

/* Seals the whole frames in plain as the client, and feeds them in. */
static struct evbuffer *
cl_feed(struct cl *c, struct evbuffer *plain, struct evbuffer *raw)
{
	if (chan_ev_seal(&c->cc, plain, raw) == -1)
		return NULL;
	return hshake_open(&c->hs, raw);
}

/* Takes the frame at the start of b: its type and payload, or -1. */
static int
take_frame(struct evbuffer *b, uint8_t *buf, size_t cap, uint32_t *len)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;

	if (evbuffer_get_length(b) < PROTO_HDR_LEN)
		return -1;
	evbuffer_copyout(b, hb, sizeof hb);
	proto_hdr_decode(hb, &h);
	if (h.len > cap || evbuffer_get_length(b) < PROTO_HDR_LEN + h.len)
		return -1;
	evbuffer_drain(b, sizeof hb);
	evbuffer_remove(b, buf, h.len);
	*len = h.len;
	return h.type;
}

static void
put_frame(struct evbuffer *b, uint16_t type, uint16_t flags, const void *p,
    uint32_t len)
{
	struct frame_hdr h = { len, type, flags, 9 };
	uint8_t hb[PROTO_HDR_LEN];

	proto_hdr_encode(hb, &h);
	evbuffer_add(b, hb, sizeof hb);
	if (len > 0)
		evbuffer_add(b, p, len);
}

/* A connection through the handshake, sealed with keyed. */
static void
cl_connect(struct cl *c, struct hshake_conf *conf, int keyed)
{
	struct msg_welcome wel;

	conf->key = keyed ? &key : NULL;
	conf->max_frame = 32u << 20;
	cl_open(c, conf);
	if (keyed) {
		CHECK(cl_hello(c, 2, 2, "rec") == HSHAKE_OK);
		CHECK(cl_challenge(c) == 0);
		CHECK(cl_auth(c, &key, NULL) == HSHAKE_WELCOMED);
	} else {
		CHECK(cl_hello(c, 2, 2, "rec") == HSHAKE_WELCOMED);
		CHECK(cl_challenge(c) == 0);
	}
	CHECK(cl_welcome(c, &wel) == 0);
	CHECK(c->hs.chan.on && c->cc.on);
	CHECK(c->hs.chan.sealed == keyed && c->cc.sealed == keyed);
	CHECK(evbuffer_get_length(c->out) == 0);
}

/* Records after WELCOME, both ways, clear or sealed. */
static void
test_records(int keyed)
{
	struct hshake_conf conf = { .max_frame = 1 << 16 };
	struct evbuffer *raw = evbuffer_new(), *pl = evbuffer_new(), *in;
	uint8_t buf[64], *big;
	uint32_t len;
	size_t half, n;
	struct cl c;

	/* Before WELCOME, hshake_open hands back the socket's own buffer. */
	cl_open(&c, &conf);
	CHECK(hshake_open(&c.hs, raw) == raw);
	cl_close(&c);

	cl_connect(&c, &conf, keyed);
	/*
	 * Two frames in one record, fed in two pieces.  The payload is long
	 * enough that sealed bytes hold it by chance never (2 bytes did,
	 * about once in a thousand runs).
	 */
	put_frame(pl, MSG_ECHO, 0, PLAIN, PLAINLEN);
	put_frame(pl, MSG_STATUS, 0, NULL, 0);
	CHECK(chan_ev_seal(&c.cc, pl, raw) == 0);
	CHECK(evbuffer_get_length(raw) == chan_wire(&c.cc, 2 * PROTO_HDR_LEN +
	    PLAINLEN));
	CHECK(evbuffer_search(raw, PLAIN, PLAINLEN, NULL).pos == (keyed ? -1 :
	    CHAN_HDR + PROTO_HDR_LEN));
	half = evbuffer_get_length(raw) / 2;
	{
		struct evbuffer *first = evbuffer_new();

		evbuffer_remove_buffer(raw, first, half);
		in = hshake_open(&c.hs, first);
		CHECK(in == c.hs.plain && evbuffer_get_length(in) == 0);
		CHECK(evbuffer_get_length(first) == half);
		evbuffer_add_buffer(first, raw);
		in = hshake_open(&c.hs, first);
		CHECK(evbuffer_get_length(first) == 0);
		evbuffer_free(first);
	}
	CHECK(in != NULL && take_frame(in, buf, sizeof buf, &len) ==
	    MSG_ECHO && len == PLAINLEN && memcmp(buf, PLAIN, PLAINLEN) == 0);
	CHECK(in != NULL && take_frame(in, buf, sizeof buf, &len) ==
	    MSG_STATUS && len == 0);
	CHECK(c.hs.chan.rx_bytes == c.cc.tx_bytes);

	/* hshake_frame: one record a frame; its ack is what came in. */
	hshake_frame(&c.hs, c.out, MSG_ECHO, FL_REPLY, 9, "pong", 4);
	CHECK(evbuffer_get_length(c.out) == chan_wire(&c.cc, PROTO_HDR_LEN +
	    4));
	CHECK(cl_recv(&c, buf, sizeof buf, &len) == MSG_ECHO && len == 4 &&
	    memcmp(buf, "pong", 4) == 0);
	CHECK(c.cc.peer_ack == c.cc.tx_bytes && c.cc.rx_rec == 1);

	/* A frame larger than a record spans two. */
	n = CHAN_BODY_MAX;
	big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 131 + 7);
	hshake_frame(&c.hs, c.out, MSG_BULK_DATA, FL_REPLY, 9, big, n);
	CHECK(evbuffer_get_length(c.out) == chan_wire(&c.cc, CHAN_BODY_MAX) +
	    chan_wire(&c.cc, PROTO_HDR_LEN));
	{
		uint8_t *got = malloc(n);

		CHECK(cl_recv(&c, got, n, &len) == MSG_BULK_DATA &&
		    len == n && memcmp(got, big, n) == 0);
		CHECK(c.cc.rx_rec == 3);
		free(got);
	}
	/* hshake_seal: a buffer of whole frames, sealed. */
	put_frame(pl, MSG_BULK_END, FL_REPLY, "0123456789abcdef", 16);
	CHECK(hshake_seal(&c.hs, pl, c.out) == 0);
	CHECK(evbuffer_get_length(pl) == 0);
	CHECK(cl_recv(&c, buf, sizeof buf, &len) == MSG_BULK_END &&
	    len == 16);
	/* The client's big frame reaches the server whole, too. */
	put_frame(pl, MSG_BULK_DATA, 0, big, (uint32_t)n);
	in = cl_feed(&c, pl, raw);
	CHECK(in != NULL && evbuffer_get_length(in) == PROTO_HDR_LEN + n);
	if (in != NULL) {
		evbuffer_drain(in, PROTO_HDR_LEN);
		CHECK(memcmp(evbuffer_pullup(in, -1), big, n) == 0);
		evbuffer_drain(in, n);
	}
	free(big);

	/*
	 * A record that does not open ends it: a flipped bit (sealed), an
	 * unknown kind (clear as well); nothing of it is handed on.
	 */
	put_frame(pl, MSG_ECHO, 0, "bad", 3);
	CHECK(chan_ev_seal(&c.cc, pl, raw) == 0);
	if (keyed) {
		uint8_t *p = evbuffer_pullup(raw, -1);

		p[CHAN_HDR + 3] ^= 0x10;
	} else {
		uint8_t *p = evbuffer_pullup(raw, -1);

		p[4] = 1;
	}
	CHECK(hshake_open(&c.hs, raw) == NULL);
	CHECK(c.hs.state == HSHAKE_S_FAILED);
	CHECK(evbuffer_get_length(c.hs.plain) == 0);
	evbuffer_drain(raw, evbuffer_get_length(raw));
	cl_close(&c);

	/* The same record again (a replay) does not open either. */
	cl_connect(&c, &conf, keyed);
	put_frame(pl, MSG_ECHO, 0, "once", 4);
	CHECK(chan_ev_seal(&c.cc, pl, raw) == 0);
	{
		size_t rl = evbuffer_get_length(raw);
		uint8_t *copy = malloc(rl);

		evbuffer_copyout(raw, copy, rl);
		in = hshake_open(&c.hs, raw);
		CHECK(in != NULL && evbuffer_get_length(in) ==
		    PROTO_HDR_LEN + 4);
		if (in != NULL)
			evbuffer_drain(in, evbuffer_get_length(in));
		evbuffer_add(raw, copy, rl);
		in = hshake_open(&c.hs, raw);
		if (keyed)
			CHECK(in == NULL && c.hs.state == HSHAKE_S_FAILED);
		else
			CHECK(in != NULL);
		free(copy);
	}
	cl_close(&c);
	evbuffer_free(raw);
	evbuffer_free(pl);
}

int
main(void)
{
	log_init("test_hshake", LL_QUIET);
	if (auth_init() == -1) {
		fprintf(stderr, "libsodium cannot start\n");
		return 1;
	}
	auth_key_from(&key, "the right secret, 16+", 21);
	auth_key_from(&other, "another secret, 16+ bytes", 25);
	test_no_key();
	test_key();
	test_wrong_key();
	test_key_required();
	test_versions();
	test_order();
	test_garbage();
	test_replay();
	test_records(0);
	test_records(1);
	return t_done("test_hshake");
}
