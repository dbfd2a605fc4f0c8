/*
 * libFuzzer target: gleam-reduce's aggregator (gleam-reduce/peer.c and
 * agg.c, compiled in here) fed hostile messages from W workers, and the
 * decoders of lib/hreduce_wire.c, which workers also run on what the
 * aggregator sends.
 *
 * The first input byte sets the scene:
 *	bits 0-1  W - 1 (1 to 4 workers, the group's size)
 *	bit 2	  wire mode: the rest goes to every decoder, and whatever
 *		  decodes must encode back to the same bytes
 *	bit 3	  raw mode: bytes go to the peers as they are, handshake
 *		  included; otherwise each peer has shaken hands and joined,
 *		  and the input is messages
 *	bit 4	  expire streams after each message, as if time had run out
 *	bit 5	  the aggregator has a key: the peers of message mode prove
 *		  it, and their records are sealed
 * A message is: peer (1 byte, mod W), type (1 byte, 64 + its low 3 bits
 * for our types; 0xff for BYE), length (2 bytes), payload.  In raw mode:
 * peer, length (2 bytes), bytes.  A peer that is closed is replaced by a
 * fresh one.  After every step (and the flush of every peer, as the
 * server does), every output buffer must hold whole, well-formed frames,
 * in records that open after WELCOME.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "../../gleam-reduce/agg.c"
#include "../../gleam-reduce/peer.c"

#include "auth.h"
#include "chan.h"
#include "hreduce_wire.h"
#include "log.h"
#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)
#define MAX_W	4

struct fpeer {
	struct peer	*p;
	struct evbuffer	*in, *out;
	/* The worker's side: its records, once WELCOME came. */
	const struct auth_key *key;
	int		 welcomed;
	uint8_t		 cnonce[PROTO_NONCE_LEN], snonce[PROTO_NONCE_LEN];
	struct chan	 ch;
	struct evbuffer	*plain;		/* opened, frames not yet whole */
};

/*
 * Whole frames only, in whole records after WELCOME that open; drained,
 * since no worker reads them here.
 */
static void
check_output(struct fpeer *f)
{
	struct msg_challenge ch;
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	const uint8_t *p;
	size_t len;

	while (!f->welcomed && (len = evbuffer_get_length(f->out)) > 0) {
		ENSURE(len >= PROTO_HDR_LEN);
		evbuffer_copyout(f->out, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		ENSURE(len >= PROTO_HDR_LEN + (size_t)h.len);
		ENSURE(h.len <= PROTO_MAX_FRAME_DEFAULT);
		p = evbuffer_pullup(f->out, PROTO_HDR_LEN + (ssize_t)h.len);
		if (h.type == MSG_CHALLENGE) {
			ENSURE(msg_challenge_dec(p + PROTO_HDR_LEN, h.len,
			    &ch) == 0);
			memcpy(f->snonce, ch.nonce, sizeof f->snonce);
		}
		if (h.type == MSG_WELCOME) {
			ENSURE(chan_init(&f->ch, f->key, 0, f->cnonce,
			    f->snonce) == 0);
			f->welcomed = 1;
		}
		evbuffer_drain(f->out, PROTO_HDR_LEN + (size_t)h.len);
	}
	if (!f->welcomed)
		return;
	ENSURE(chan_ev_open(&f->ch, f->out, f->plain) == 0);
	ENSURE(evbuffer_get_length(f->out) == 0);
	while ((len = evbuffer_get_length(f->plain)) > 0) {
		ENSURE(len >= PROTO_HDR_LEN);
		evbuffer_copyout(f->plain, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		ENSURE(len >= PROTO_HDR_LEN + (size_t)h.len);
		ENSURE(h.len <= PROTO_MAX_FRAME_DEFAULT);
		evbuffer_drain(f->plain, PROTO_HDR_LEN + (size_t)h.len);
	}
}

/* A frame from the worker: in a record once WELCOME came. */
static void
frame_to(struct fpeer *f, uint16_t type, const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, 0, 0 };
	uint8_t hb[PROTO_HDR_LEN];
	struct evbuffer *b = f->welcomed ? evbuffer_new() : f->in;

	ENSURE(b != NULL);
	proto_hdr_encode(hb, &h);
	evbuffer_add(b, hb, sizeof hb);
	if (len > 0)
		evbuffer_add(b, p, len);
	if (b != f->in) {
		ENSURE(chan_ev_seal(&f->ch, b, f->in) == 0);
		evbuffer_free(b);
	}
}

/*
 * A new peer; in message mode it shakes hands (with the key, if the
 * aggregator has one) and joins as rank w.
 */
static void
fpeer_open(struct fpeer *f, const struct peer_env *env, int w, int W,
    int raw)
{
	struct msg_hello hello;
	struct msg_auth au;
	struct hr_join j = { (uint32_t)W, (uint32_t)w };
	struct pw pw;

	memset(f, 0, sizeof *f);
	f->in = evbuffer_new();
	f->out = evbuffer_new();
	f->plain = evbuffer_new();
	ENSURE(f->in != NULL && f->out != NULL && f->plain != NULL);
	f->key = env->hs.key;
	f->p = peer_new(env, "fuzz", f->out);
	ENSURE(f->p != NULL);
	if (raw)
		return;
	memset(&hello, 0, sizeof hello);
	hello.magic = PROTO_MAGIC;
	hello.vmin = PROTO_VERSION_MIN;
	hello.vmax = PROTO_VERSION_MAX;
	hello.nonce[0] = (uint8_t)w;
	memcpy(f->cnonce, hello.nonce, sizeof f->cnonce);
	pw_init(&pw);
	msg_hello_enc(&pw, &hello);
	frame_to(f, MSG_HELLO, pw.p, pw.len);
	pw_free(&pw);
	ENSURE(peer_input(f->p, f->in) == PEER_OK);
	check_output(f);
	if (f->key != NULL) {
		auth_proof(f->key, 0, PROTO_VERSION_MAX, f->cnonce, f->snonce,
		    au.proof);
		pw_init(&pw);
		msg_auth_enc(&pw, &au);
		frame_to(f, MSG_AUTH, pw.p, pw.len);
		pw_free(&pw);
		ENSURE(peer_input(f->p, f->in) == PEER_OK);
		check_output(f);
	}
	ENSURE(f->welcomed && f->ch.sealed == (f->key != NULL));
	pw_init(&pw);
	hr_join_enc(&pw, &j);
	frame_to(f, HR_MSG_JOIN, pw.p, pw.len);
	pw_free(&pw);
	ENSURE(peer_input(f->p, f->in) == PEER_OK);
	ENSURE(peer_flush(f->p) == 0);
	check_output(f);
}

static void
fpeer_close(struct fpeer *f)
{
	peer_free(f->p);
	evbuffer_free(f->in);
	evbuffer_free(f->out);
	evbuffer_free(f->plain);
	chan_fini(&f->ch);
	f->p = NULL;
}

/* Whatever decodes encodes back to the very bytes. */
static void
wire(const uint8_t *d, size_t n)
{
	struct hr_join j;
	struct hr_begin b;
	struct hr_chunk c;
	struct hr_fail_msg f;
	struct hr_abort a;
	struct hr_ready *r;
	uint64_t u;
	struct pw w;
	const char *why;

#define SAME(enc) do {							\
	pw_init(&w);							\
	enc;								\
	ENSURE(!w.bad && w.len == n && memcmp(w.p, d, n) == 0);	\
	pw_free(&w);							\
} while (0)
	if (hr_join_dec(d, n, &j) == 0)
		SAME(hr_join_enc(&w, &j));
	if (hr_begin_dec(d, n, &b) == 0) {
		SAME(hr_begin_enc(&w, &b));
		(void)hr_begin_check(&b, PROTO_MAX_FRAME_DEFAULT, &why);
	}
	if (hr_joined_dec(d, n, &u) == 0)
		SAME(hr_joined_enc(&w, u));
	if (hr_done_dec(d, n, &u) == 0)
		SAME(hr_done_enc(&w, u));
	if (hr_fail_dec(d, n, &f) == 0)
		SAME(hr_fail_enc(&w, &f));
	if (hr_abort_dec(d, n, &a) == 0)
		SAME(hr_abort_enc(&w, &a));
	if (hr_chunk_dec(d, n, &c) == 0) {
		uint8_t h[HR_CHUNK_HDR];

		ENSURE(c.len == n - HR_CHUNK_HDR);
		hr_chunk_hdr_enc(h, c.id, c.index, c.rank);
		ENSURE(memcmp(h, d, HR_CHUNK_HDR) == 0);
	}
	if ((r = malloc(sizeof *r)) != NULL) {
		if (hr_ready_dec(d, n, r) == 0)
			SAME(hr_ready_enc(&w, r));
		free(r);
	}
#undef SAME
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static int init;
	struct fpeer f[MAX_W];
	struct agg_limits lim;
	struct peer_env env;
	struct auth_key key;
	struct agg *a;
	size_t off = 1, len;
	int W, raw, expire, w, i, type;

	if (!init) {
		log_init("fuzz_reduce", LL_QUIET);
		auth_init();
		init = 1;
	}
	if (n < 1)
		return 0;
	if (d[0] & 4) {
		wire(d + 1, n - 1);
		return 0;
	}
	W = (d[0] & 3) + 1;
	raw = (d[0] >> 3) & 1;
	expire = (d[0] >> 4) & 1;
	auth_key_from(&key, "fuzz", 4);
	memset(&lim, 0, sizeof lim);
	lim.world = W;
	lim.max_frame = PROTO_MAX_FRAME_MIN;
	lim.max_bytes = 1 << 20;
	lim.max_streams = 8;
	lim.timeout = 30;
	a = agg_new(&lim);
	ENSURE(a != NULL);
	memset(&env, 0, sizeof env);
	env.hs.max_frame = PROTO_MAX_FRAME_MIN;
	env.hs.name = "fuzz";
	env.hs.peer_kind = "worker";
	env.hs.type_name = hr_msg_name;
	env.hs.key = (d[0] >> 5) & 1 ? &key : NULL;
	env.agg = a;
	for (w = 0; w < W; w++)
		fpeer_open(&f[w], &env, w, W, raw);
	while (off + 3 <= n) {
		w = d[off] % W;
		if (raw) {
			len = (size_t)d[off + 1] | (size_t)d[off + 2] << 8;
			off += 3;
			len = len < n - off ? len : n - off;
			evbuffer_add(f[w].in, d + off, len);
		} else {
			if (off + 4 > n)
				break;
			type = d[off + 1] == 0xff ? MSG_BYE :
			    HR_MSG_JOIN + (d[off + 1] & 7);
			len = (size_t)d[off + 2] | (size_t)d[off + 3] << 8;
			off += 4;
			len = len < n - off ? len : n - off;
			frame_to(&f[w], (uint16_t)type, d + off, len);
		}
		off += len;
		if (peer_input(f[w].p, f[w].in) == PEER_CLOSE) {
			fpeer_close(&f[w]);
			fpeer_open(&f[w], &env, w, W, raw);
		}
		if (expire)
			agg_expire(a, UINT64_MAX);
		for (i = 0; i < W; i++) {
			ENSURE(peer_flush(f[i].p) == 0);
			check_output(&f[i]);
		}
	}
	for (w = 0; w < W; w++)
		fpeer_close(&f[w]);
	agg_free(a);
	return 0;
}
