/*
 * Unit tests for lib/common/hshake.c: the server half of the handshake,
 * driven with frames built here as a client would, its replies decoded
 * and the server's proof checked with auth.c; after WELCOME, the records
 * both ways (hshake_frame, hshake_seal, hshake_open) against a client's
 * chan.
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

static struct auth_key key, other;

/* A client's side of one connection. */
struct cl {
	struct hshake	 hs;
	struct evbuffer	*out;		/* what the server sent */
	uint8_t		 cnonce[PROTO_NONCE_LEN];
	struct msg_challenge ch;
	const struct auth_key *k;	/* the key it proved */
	struct chan	 cc;		/* its records, after WELCOME */
	struct evbuffer	*plain;		/* theirs opened, not yet read */
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
	hshake_fini(&c->hs);
	chan_fini(&c->cc);
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

	c->k = k;
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
 * WELCOME, out of the records, which must open.
 */
static int
cl_recv(struct cl *c, uint8_t *buf, size_t cap, uint32_t *len)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	struct evbuffer *in = c->out;

	if (c->cc.on) {
		if (chan_ev_open(&c->cc, c->out, c->plain) == -1)
			return -1;
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

static int
cl_welcome(struct cl *c, struct msg_welcome *wel)
{
	uint8_t buf[1024];
	uint32_t len;

	if (cl_recv(c, buf, sizeof buf, &len) != MSG_WELCOME ||
	    msg_welcome_dec(buf, len, wel) == -1)
		return -1;
	/* Records from here on, sealed if we proved the key. */
	return chan_init(&c->cc, wel->has_proof ? c->k : NULL, 0, c->cnonce,
	    c->ch.nonce);
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
	struct hshake_conf two = { .max_frame = 1 << 16, .vmin = 3,
	    .vmax = 5 };
	struct cl c;

	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 3, 9, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	/* Version 1 (frames without records) is gone. */
	cl_open(&c, &conf);
	CHECK(cl_hello(&c, 1, 1, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	/* A daemon's own range; the highest both speak is chosen. */
	cl_open(&c, &two);
	CHECK(cl_hello(&c, 2, 2, "x") == HSHAKE_CLOSE);
	CHECK(cl_error(&c) == PERR_VERSION);
	cl_close(&c);
	cl_open(&c, &two);
	CHECK(cl_hello(&c, 1, 4, "x") == HSHAKE_WELCOMED);
	CHECK(cl_challenge(&c) == 0 && c.ch.version == 4);
	cl_close(&c);
	cl_open(&c, &two);
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

/* A connection through WELCOME, with the key or without. */
static void
cl_connect(struct cl *c, const struct hshake_conf *conf)
{
	struct msg_welcome wel;

	cl_open(c, conf);
	if (conf->key != NULL) {
		CHECK(cl_hello(c, 2, 2, "r") == HSHAKE_OK);
		CHECK(cl_challenge(c) == 0);
		CHECK(cl_auth(c, conf->key, NULL) == HSHAKE_WELCOMED);
	} else {
		CHECK(cl_hello(c, 2, 2, "r") == HSHAKE_WELCOMED);
		CHECK(cl_challenge(c) == 0);
	}
	CHECK(cl_welcome(c, &wel) == 0);
	CHECK(c->cc.on && c->cc.sealed == (conf->key != NULL));
	CHECK(c->hs.chan.on && c->hs.chan.sealed == (conf->key != NULL));
}

/* Seals one frame as the client, into raw. */
static void
cl_seal(struct cl *c, struct evbuffer *raw, uint16_t type, const char *p)
{
	struct frame_hdr h = { (uint32_t)strlen(p), type, 0, 9 };
	struct evbuffer *b = evbuffer_new();
	uint8_t hb[PROTO_HDR_LEN];

	proto_hdr_encode(hb, &h);
	evbuffer_add(b, hb, sizeof hb);
	evbuffer_add(b, p, strlen(p));
	CHECK(chan_ev_seal(&c->cc, b, raw) == 0);
	evbuffer_free(b);
}

/* Whether the bytes of s are anywhere in b. */
static int
seen(struct evbuffer *b, const char *s)
{
	return evbuffer_search(b, s, strlen(s), NULL).pos != -1;
}

static void
test_records(void)
{
	struct hshake_conf conf = { .max_frame = 32u << 20 };
	struct hshake_conf kconf = { .key = &key, .max_frame = 32u << 20 };
	struct evbuffer *raw = evbuffer_new(), *in, *big;
	uint8_t buf[1024], *p;
	uint32_t len;
	size_t n;
	int i;

	for (i = 0; i < 2; i++) {
		struct cl c;

		cl_connect(&c, i ? &kconf : &conf);
		/* Ours: in records, readable only without the key. */
		hshake_frame(&c.hs, c.out, MSG_ECHO, FL_REPLY, 1,
		    "known plaintext", 15);
		CHECK(seen(c.out, "known plaintext") == !i);
		CHECK(cl_recv(&c, buf, sizeof buf, &len) == MSG_ECHO);
		CHECK(len == 15 && memcmp(buf, "known plaintext", 15) == 0);
		hshake_error(&c.hs, c.out, 2, PERR_UNKNOWN, "no such thing");
		CHECK(cl_error(&c) == PERR_UNKNOWN);
		/* Whole frames from an evbuffer, several in a record. */
		big = evbuffer_new();
		for (n = 0; n < 2; n++) {
			struct frame_hdr h = { 3, MSG_ECHO, FL_REPLY, n };
			uint8_t hb[PROTO_HDR_LEN];

			proto_hdr_encode(hb, &h);
			evbuffer_add(big, hb, sizeof hb);
			evbuffer_add(big, "abc", 3);
		}
		CHECK(hshake_seal(&c.hs, big, c.out) == 0);
		CHECK(evbuffer_get_length(big) == 0);
		CHECK(cl_recv(&c, buf, sizeof buf, &len) == MSG_ECHO);
		CHECK(cl_recv(&c, buf, sizeof buf, &len) == MSG_ECHO);
		CHECK(evbuffer_get_length(c.out) == 0);
		/* A frame larger than a record spans records. */
		p = calloc(1, CHAN_BODY_MAX + 100);
		hshake_frame(&c.hs, c.out, MSG_BULK_DATA, 0, 3, p,
		    CHAN_BODY_MAX + 100);
		CHECK(chan_ev_open(&c.cc, c.out, big) == 0);
		CHECK(evbuffer_get_length(c.out) == 0);
		CHECK(evbuffer_get_length(big) ==
		    PROTO_HDR_LEN + CHAN_BODY_MAX + 100);
		free(p);
		evbuffer_free(big);
		/* Theirs: the plaintext comes out, in two pieces too. */
		cl_seal(&c, raw, MSG_ECHO, "first");
		cl_seal(&c, raw, MSG_STATUS, "");
		CHECK(seen(raw, "first") == !i);
		n = evbuffer_get_length(raw);
		big = evbuffer_new();
		evbuffer_remove_buffer(raw, big, n - 3);
		CHECK((in = hshake_open(&c.hs, big)) == c.hs.plain);
		CHECK(evbuffer_get_length(in) == PROTO_HDR_LEN + 5);
		evbuffer_add_buffer(big, raw);
		CHECK(hshake_open(&c.hs, big) == in);
		CHECK(evbuffer_get_length(in) == 2 * PROTO_HDR_LEN + 5);
		CHECK(evbuffer_get_length(big) == 0);
		p = evbuffer_pullup(in, -1);
		CHECK(memcmp(p + PROTO_HDR_LEN, "first", 5) == 0);
		evbuffer_drain(in, evbuffer_get_length(in));
		if (i) {
			/* Tampered with: nothing of it, and the end. */
			cl_seal(&c, big, MSG_ECHO, "second");
			p = evbuffer_pullup(big, -1);
			p[CHAN_HDR + 3] ^= 1;
			CHECK(hshake_open(&c.hs, big) == NULL);
			CHECK(evbuffer_get_length(in) == 0);
			CHECK(strstr(c.hs.chan.err, "does not authenticate") !=
			    NULL);
		}
		evbuffer_free(big);
		cl_close(&c);
	}
	/* Replayed, in its connection or another: it does not open. */
	{
		struct cl a, b;
		struct evbuffer *copy = evbuffer_new();

		cl_connect(&a, &kconf);
		cl_connect(&b, &kconf);
		cl_seal(&a, raw, MSG_ECHO, "once");
		n = evbuffer_get_length(raw);
		evbuffer_add(copy, evbuffer_pullup(raw, -1), n);
		CHECK(hshake_open(&a.hs, raw) != NULL);
		evbuffer_add(raw, evbuffer_pullup(copy, -1), n);
		CHECK(hshake_open(&a.hs, raw) == NULL);
		CHECK(hshake_open(&b.hs, copy) == NULL);
		evbuffer_drain(raw, evbuffer_get_length(raw));
		evbuffer_free(copy);
		cl_close(&a);
		cl_close(&b);
	}
	evbuffer_free(raw);
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
	test_records();
	return t_done("test_hshake");
}
