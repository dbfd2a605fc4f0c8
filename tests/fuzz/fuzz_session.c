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
 * authentication.
 *
 * After the client's handshake (the HELLO, and that AUTH with a key),
 * one byte r says how the rest goes once the server has sent WELCOME:
 * r = 0, as it is (the fuzzer's own records, or garbage); else it is the
 * frame stream, sealed here into the client's records (in the clear
 * without a key) of at most 16 * r bytes, an empty record before each
 * when r is odd.  Every output is checked to be whole records that open
 * with the client's keys (after WELCOME) holding whole, well-formed
 * frames.  MIGRATE_ONE goes to fuzz_migrate, which checks that only what
 * decodes reaches it.
 */
#include <stdint.h>
#include <stdio.h>
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
fuzz_status(void *arg, const struct hshake_result *asker, size_t *len)
{
	char *s;

	(void)arg;
	(void)asker;
	if (status_fails || (s = strdup(status_doc)) == NULL)
		return NULL;
	*len = sizeof status_doc - 1;
	return s;
}

/*
 * MIGRATE_ONE reaches the server only decoded: session 1 or the address
 * 127.0.0.1:1 is there, any other is not, session 2 is not an admin's.
 */
static int
fuzz_migrate(void *arg, struct session *s, const struct msg_migrate_one *m,
    char *why, size_t whylen)
{
	(void)arg;
	ENSURE(s != NULL && m->host[0] != '\0' && m->port != 0);
	ENSURE(m->selector == MIGSEL_SESSION ? m->session != 0 :
	    m->selector == MIGSEL_ADDRESS && m->address[0] != '\0');
	if (m->selector == MIGSEL_SESSION && m->session == 2) {
		snprintf(why, whylen, "not an admin");
		return PERR_AUTH;
	}
	if (m->selector == MIGSEL_SESSION ? m->session == 1 :
	    strcmp(m->address, "127.0.0.1:1") == 0)
		return 0;
	snprintf(why, whylen, "no such session");
	return PERR_NOSESSION;
}

/* What the handshake needs to forge the client's proof. */
struct forge {
	int		 have_cnonce;
	uint8_t		 cnonce[PROTO_NONCE_LEN];
	size_t		 auth_off;	/* AUTH payload in the input, or 0 */
	int		 have_challenge;
	uint16_t	 version;
	uint8_t		 snonce[PROTO_NONCE_LEN];
	size_t		 hs_end;	/* the client's handshake ends, or 0 */
	const struct auth_key *key;	/* the server's */
	struct chan	 cc;		/* the client's, after WELCOME */
	struct evbuffer	*plain;		/* the server's, opened */
	int		 moved;		/* WELCOME said FEAT_MOVED */
};

/*
 * Checks that out holds whole frames (in whole records that open, after
 * WELCOME) that decode, notes a CHALLENGE, starts the client's records
 * at WELCOME, and drains it all.
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
	struct msg_redirect rd;
	struct evbuffer *in;
	size_t len;

	for (;;) {
		in = out;
		if (f->cc.on) {
			ENSURE(chan_ev_open(&f->cc, out, f->plain) == 0);
			ENSURE(evbuffer_get_length(out) == 0);
			in = f->plain;
		}
		if ((len = evbuffer_get_length(in)) == 0)
			break;
		ENSURE(len >= PROTO_HDR_LEN);
		evbuffer_copyout(in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		ENSURE(h.len <= MAX_FRAME);
		ENSURE(len >= PROTO_HDR_LEN + (size_t)h.len);
		/* A REDIRECT is the server's own word: no reply. */
		ENSURE(h.flags == (h.type == MSG_REDIRECT ? 0 : FL_REPLY));
		p = NULL;
		if (h.type != MSG_BULK_DATA && h.type != MSG_ECHO &&
		    h.type != MSG_STATUS) {
			p = evbuffer_pullup(in, PROTO_HDR_LEN + (ssize_t)h.len);
			ENSURE(p != NULL);
			p += PROTO_HDR_LEN;
		}
		switch (h.type) {
		case MSG_CHALLENGE:
			ENSURE(!f->cc.on);
			ENSURE(msg_challenge_dec(p, h.len, &ch) == 0);
			ENSURE(ch.max_frame == MAX_FRAME);
			ENSURE(ch.version == PROTO_VERSION_MAX);
			f->have_challenge = 1;
			f->version = ch.version;
			memcpy(f->snonce, ch.nonce, sizeof f->snonce);
			break;
		case MSG_WELCOME:
			ENSURE(!f->cc.on && f->have_cnonce &&
			    f->have_challenge);
			ENSURE(msg_welcome_dec(p, h.len, &wel) == 0);
			ENSURE(wel.has_proof == (f->key != NULL));
			/* From here on, records, as the client's are. */
			ENSURE(chan_init(&f->cc, f->key, 0, f->cnonce,
			    f->snonce) == 0);
			f->moved = (wel.features & FEAT_MOVED) != 0;
			ENSURE(!f->moved || wel.session == 8);
			break;
		case MSG_REDIRECT:
			/* Only after a WELCOME that says the session moved. */
			ENSURE(f->cc.on && f->moved);
			ENSURE(msg_redirect_dec(p, h.len, &rd) == 0);
			ENSURE(rd.session == 9 && rd.port == 7383);
			break;
		case MSG_ERROR:
			ENSURE(msg_error_dec(p, h.len, &e) == 0);
			ENSURE((e.code >= PERR_VERSION &&
			    e.code <= PERR_TIMEOUT) ||
			    e.code == PERR_NOSESSION);
			break;
		case MSG_MIGRATE_ONE:
			/* Only fuzz_migrate's yes: u32 0. */
			ENSURE(f->cc.on && h.len == 4 &&
			    memcmp(p, "\0\0\0\0", 4) == 0);
			break;
		case MSG_BULK_END:
			ENSURE(f->cc.on);
			ENSURE(msg_bulk_result_dec(p, h.len, &r) == 0);
			break;
		case MSG_BULK_DATA:
			ENSURE(f->cc.on);
			ENSURE(h.len > 0);
			break;
		case MSG_ECHO:
		case MSG_STATUS:
			ENSURE(f->cc.on);
			break;
		default:
			ENSURE(!"unexpected frame type from the server");
		}
		evbuffer_drain(in, PROTO_HDR_LEN + (size_t)h.len);
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

	if (len < PROTO_HDR_LEN)
		return;
	proto_hdr_decode(in, &h);
	if (h.type != MSG_HELLO || h.len > len - PROTO_HDR_LEN ||
	    msg_hello_dec(in + PROTO_HDR_LEN, h.len, &m) == -1)
		return;
	f->have_cnonce = 1;
	memcpy(f->cnonce, m.nonce, sizeof f->cnonce);
	off = PROTO_HDR_LEN + h.len;
	if (f->key == NULL)
		f->hs_end = off;
	if (len - off < PROTO_HDR_LEN + PROTO_PROOF_LEN)
		return;
	proto_hdr_decode(in + off, &h);
	if (h.type == MSG_AUTH && h.len == PROTO_PROOF_LEN &&
	    memcmp(in + off + PROTO_HDR_LEN, zero, PROTO_PROOF_LEN) == 0) {
		f->auth_off = off + PROTO_HDR_LEN;
		if (f->key != NULL)
			f->hs_end = f->auth_off + PROTO_PROOF_LEN;
	}
}

static uint32_t
rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * hshake's lookup of a session to resume: one waits, session 7; session 8
 * (the same token) moved to elsewhere:7383 as session 9.
 */
static int
fuzz_resume_find(void *arg, uint64_t session, const uint8_t *token,
    const char *ident, struct msg_redirect *moved)
{
	static const uint8_t want[PROTO_TOKEN_LEN] = {
		0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
		0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11 };

	(void)arg;
	if (memcmp(token, want, sizeof want) != 0)
		return -1;
	if (session == 8) {
		snprintf(moved->host, sizeof moved->host, "elsewhere");
		moved->port = 7383;
		moved->session = 9;
		memset(moved->token, 0x22, sizeof moved->token);
		return 1;
	}
	return session == 7 ? 0 : -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct auth_key key;
	static int inited;
	struct session_env env;
	struct session *s;
	struct evbuffer *in, *out;
	struct forge f;
	static uint8_t rec[CHAN_HDR + (1u << 15) + CHAN_TAG];
	uint8_t *buf, sel;
	uint32_t seed, maxp;
	size_t off, n;
	int rc = SESSION_OK, forged = 0, fills = 0, mode = -1;

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
	env.migrate = fuzz_migrate;
	/* Resume offered; session 7 with a token of 0x11s waits for it. */
	env.hs.resume_ms = 30000;
	env.hs.resume_find = fuzz_resume_find;
	status_fails = (sel & 0x20) != 0;
	seed = 0x9e3779b9u ^ sel;
	maxp = 1u << (sel & 0x0f);
	memset(&f, 0, sizeof f);
	f.key = env.hs.key;
	f.plain = evbuffer_new();
	ENSURE(f.plain != NULL);
	forge_scan(&f, buf, size);

	s = session_new(&env, "fuzz:1");
	in = evbuffer_new();
	out = evbuffer_new();
	ENSURE(s != NULL && in != NULL && out != NULL);
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
		/* The handshake ends a piece; the byte after it is r. */
		if (f.hs_end != 0 && off < f.hs_end && off + n > f.hs_end)
			n = f.hs_end - off;
		if (f.hs_end != 0 && off == f.hs_end && mode == -1) {
			mode = buf[off];
			n = 1;
			continue;
		}
		if (mode > 0 && f.cc.on) {
			if (n > 16 * (size_t)mode)
				n = 16 * (size_t)mode;
			if (mode & 1)
				evbuffer_add(in, rec, chan_seal(&f.cc, rec,
				    NULL, 0));
			evbuffer_add(in, rec, chan_seal(&f.cc, rec, buf + off,
			    n));
		} else {
			/*
			 * The fuzzer's own records: at most n bytes of
			 * plaintext that the server may acknowledge.
			 */
			if (f.cc.on)
				f.cc.tx_bytes += n;
			evbuffer_add(in, buf + off, n);
		}
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
	chan_fini(&f.cc);
	evbuffer_free(f.plain);
	evbuffer_free(in);
	evbuffer_free(out);
	free(buf);
	return 0;
}
