/*
 * libFuzzer target: the server's per-client state machine
 * (gleam-serve/session.c, with the handshake of lib/common/hshake.c) fed
 * hostile bytes in pieces of varying size.
 *
 * The first input byte sets the scene:
 *	bits 0-3  pieces are 1 to 2^n bytes long (sizes from a PRNG it seeds)
 *	bit 4	  the server requires a key
 *	bit 5	  the status callback fails
 *	bits 6-7  01: a backend serves remoting calls; 11: the server
 *		  is draining
 * The rest is what the client sends, until the session answers anything
 * but SESSION_OK (SESSION_REMOTE hands the connection to code not under
 * test here).  With a key, an AUTH frame right after the HELLO whose
 * proof is all zero bytes is replaced by the right proof once the
 * server's CHALLENGE is seen, so that the fuzzer gets past
 * authentication; after WELCOME each piece of the input is then sealed
 * as one record, which the fuzzer could not forge.  Without a key the
 * input after the handshake is the records themselves, in the clear.
 *
 * Every output is checked: whole, well-formed frames before WELCOME;
 * after it whole records that open (with the client's keys) into frames
 * that decode.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "auth.h"
#include "chan.h"
#include "log.h"
#include "proto.h"
#include "session.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

#define MAX_FRAME	(1u << 20)
#define MAX_FILLS	2	/* session_fill calls per input: each may queue 2 MiB */

static const char status_doc[] =
    "host: fuzz\nprotocol: 2\nbackend: none\nmax_clients: 4\n"
    "gpus: []\nnclients: 0\nclients: []\n";
static int status_fails;

static char *
fuzz_status(void *arg, size_t *len)
{
	char *s;

	(void)arg;
	if (status_fails || (s = strdup(status_doc)) == NULL)
		return NULL;
	*len = sizeof status_doc - 1;
	return s;
}

static struct auth_key key;

/* What the handshake needs to forge the client's proof, and its records. */
struct forge {
	int		 have_cnonce;
	uint8_t		 cnonce[PROTO_NONCE_LEN];
	size_t		 auth_off;	/* AUTH payload in the input, or 0 */
	int		 have_challenge;
	uint16_t	 version;
	uint8_t		 snonce[PROTO_NONCE_LEN];
	int		 welcomed;	/* records from here on */
	struct chan	 cc;		/* the client's side of them */
	struct evbuffer	*plain;		/* opened, frames not yet checked */
};

/* WELCOME: its proof if it has one, and the client's records start. */
static void
check_welcome(struct forge *f, const struct msg_welcome *wel)
{
	uint8_t expect[PROTO_PROOF_LEN];

	ENSURE(f->have_cnonce && f->have_challenge);
	if (wel->has_proof) {
		auth_proof(&key, 1, f->version, f->snonce, f->cnonce, expect);
		ENSURE(auth_equal(expect, wel->proof) == 0);
	}
	ENSURE(chan_init(&f->cc, wel->has_proof ? &key : NULL, 0, f->cnonce,
	    f->snonce) == 0);
	/*
	 * In the clear the fuzzer wrote the records, not f->cc: the server
	 * acknowledges bytes f->cc never counted.
	 */
	if (!wel->has_proof)
		f->cc.tx_bytes = UINT64_MAX;
	f->welcomed = 1;
}

/*
 * Checks that out holds whole frames that decode (after WELCOME, whole
 * records that open into them), notes CHALLENGE and WELCOME, and drains
 * it all; a frame cut by a record's end waits in f->plain.
 */
static void
check_output(struct evbuffer *out, struct forge *f)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	const uint8_t *p;
	struct msg_challenge ch;
	struct msg_welcome wel;
	struct msg_error e;
	struct msg_bulk_result r;
	struct evbuffer *b = out;
	size_t len;

	for (;;) {
		if (f->welcomed && b == out) {
			ENSURE(chan_ev_open(&f->cc, out, f->plain) == 0);
			ENSURE(evbuffer_get_length(out) == 0);
			b = f->plain;
		}
		if ((len = evbuffer_get_length(b)) == 0)
			break;
		if (b == f->plain && len < PROTO_HDR_LEN)
			break;
		ENSURE(len >= PROTO_HDR_LEN);
		evbuffer_copyout(b, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		ENSURE(h.len <= MAX_FRAME);
		if (b == f->plain && len < PROTO_HDR_LEN + (size_t)h.len)
			break;
		ENSURE(len >= PROTO_HDR_LEN + (size_t)h.len);
		ENSURE(h.flags == FL_REPLY);
		/* The handshake's frames are never in records, nor others out. */
		ENSURE((b == out) == (h.type == MSG_CHALLENGE ||
		    h.type == MSG_WELCOME || (h.type == MSG_ERROR &&
		    !f->welcomed)));
		p = NULL;
		if (h.type != MSG_BULK_DATA && h.type != MSG_ECHO &&
		    h.type != MSG_STATUS) {
			p = evbuffer_pullup(b, PROTO_HDR_LEN + (ssize_t)h.len);
			ENSURE(p != NULL);
			p += PROTO_HDR_LEN;
		}
		switch (h.type) {
		case MSG_CHALLENGE:
			ENSURE(msg_challenge_dec(p, h.len, &ch) == 0);
			ENSURE(ch.max_frame == MAX_FRAME);
			f->have_challenge = 1;
			f->version = ch.version;
			memcpy(f->snonce, ch.nonce, sizeof f->snonce);
			break;
		case MSG_WELCOME:
			ENSURE(msg_welcome_dec(p, h.len, &wel) == 0);
			check_welcome(f, &wel);
			break;
		case MSG_ERROR:
			ENSURE(msg_error_dec(p, h.len, &e) == 0);
			ENSURE(e.code >= PERR_VERSION && e.code <= PERR_TIMEOUT);
			break;
		case MSG_BULK_END:
			ENSURE(msg_bulk_result_dec(p, h.len, &r) == 0);
			break;
		case MSG_BULK_DATA:
			ENSURE(h.len > 0);
			break;
		case MSG_ECHO:
		case MSG_STATUS:
			break;
		default:
			ENSURE(!"unexpected frame type from the server");
		}
		evbuffer_drain(b, PROTO_HDR_LEN + (size_t)h.len);
	}
}

/* Finds a HELLO first and an AUTH with an all-zero proof second. */
static void
forge_scan(struct forge *f, const uint8_t *in, size_t len)
{
	static const uint8_t zero[PROTO_PROOF_LEN];
	struct frame_hdr h;
	struct msg_hello m;
	size_t off;

	memset(f, 0, sizeof *f);
	if (len < PROTO_HDR_LEN)
		return;
	proto_hdr_decode(in, &h);
	if (h.type != MSG_HELLO || h.len > len - PROTO_HDR_LEN ||
	    msg_hello_dec(in + PROTO_HDR_LEN, h.len, &m) == -1)
		return;
	f->have_cnonce = 1;
	memcpy(f->cnonce, m.nonce, sizeof f->cnonce);
	off = PROTO_HDR_LEN + h.len;
	if (len - off < PROTO_HDR_LEN + PROTO_PROOF_LEN)
		return;
	proto_hdr_decode(in + off, &h);
	if (h.type == MSG_AUTH && h.len == PROTO_PROOF_LEN &&
	    memcmp(in + off + PROTO_HDR_LEN, zero, PROTO_PROOF_LEN) == 0)
		f->auth_off = off + PROTO_HDR_LEN;
}

static uint32_t
rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int inited;
	static uint8_t rec[CHAN_HDR + (1u << 15) + CHAN_TAG];
	struct session_env env;
	struct session *s;
	struct evbuffer *in, *out;
	struct forge f;
	uint8_t *buf, sel;
	uint32_t seed, maxp;
	size_t off, n, auth_end;
	int rc = SESSION_OK, forged = 0, fills = 0;

	if (!inited) {
		log_init("fuzz", LL_QUIET);
		if (auth_init() == -1)
			abort();
		auth_key_from(&key, "fuzzing secret, sixteen+", 24);
		inited = 1;
	}
	if (size < 1)
		return 0;
	sel = data[0];
	buf = malloc(size);
	memcpy(buf, data + 1, size - 1);
	size--;

	memset(&env, 0, sizeof env);
	env.hs.key = sel & 0x10 ? &key : NULL;
	env.hs.max_frame = MAX_FRAME;
	env.hs.name = "fuzz";
	env.hs.draining = (sel & 0xc0) == 0xc0;
	env.remote_ok = (sel & 0xc0) == 0x40;
	env.remote_why = "no backend in the fuzz target";
	env.status = fuzz_status;
	status_fails = (sel & 0x20) != 0;
	seed = 0x9e3779b9u ^ sel;
	maxp = 1u << (sel & 0x0f);
	forge_scan(&f, buf, size);
	auth_end = f.auth_off != 0 ? f.auth_off + PROTO_PROOF_LEN : 0;
	f.plain = evbuffer_new();

	s = session_new(&env, "fuzz:1");
	in = evbuffer_new();
	out = evbuffer_new();
	ENSURE(s != NULL && in != NULL && out != NULL && f.plain != NULL);
	ENSURE(!session_ready(s) && !session_busy(s));

	for (off = 0; off < size && rc == SESSION_OK; off += n) {
		n = 1 + rnd(&seed) % maxp;
		if (n > size - off)
			n = size - off;
		/* Stop short of the AUTH until its proof can be forged. */
		if (env.hs.key != NULL && f.auth_off != 0 && !forged &&
		    off < f.auth_off && off + n > f.auth_off - PROTO_HDR_LEN)
			n = f.auth_off - PROTO_HDR_LEN - off;
		if (n == 0 && !forged) {
			if (f.have_challenge)
				auth_proof(&key, 0, f.version, f.cnonce,
				    f.snonce, buf + f.auth_off);
			forged = 1;
			continue;
		}
		/* And end a piece with the AUTH: records follow it. */
		if (env.hs.key != NULL && off < auth_end && off + n > auth_end)
			n = auth_end - off;
		if (f.welcomed && f.cc.sealed)
			evbuffer_add(in, rec, chan_seal(&f.cc, rec, buf + off,
			    n));
		else
			evbuffer_add(in, buf + off, n);
		rc = session_input(s, in, out);
		check_output(out, &f);
		while (rc == SESSION_OK && session_busy(s) &&
		    fills++ < MAX_FILLS) {
			(void)session_fill(s, out);
			check_output(out, &f);
		}
	}
	(void)session_client_name(s);
	(void)session_peer(s);
	(void)session_id(s);
	session_free(s);
	evbuffer_free(in);
	evbuffer_free(out);
	evbuffer_free(f.plain);
	chan_fini(&f.cc);
	free(buf);
	return 0;
}
