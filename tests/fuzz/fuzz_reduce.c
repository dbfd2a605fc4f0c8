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
 * A message is: peer (1 byte, mod W), type (1 byte, 64 + its low 3 bits
 * for our types; 0xff for BYE), length (2 bytes), payload.  In raw mode:
 * peer, length (2 bytes), bytes.  A peer that is closed is replaced by a
 * fresh one.  After every step, every output buffer must hold whole,
 * well-formed frames.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "../../gleam-reduce/agg.c"
#include "../../gleam-reduce/peer.c"

#include "auth.h"
#include "hreduce_wire.h"
#include "log.h"
#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)
#define MAX_W	4

struct fpeer {
	struct peer	*p;
	struct evbuffer	*in, *out;
};

/* Whole frames only; drained, since no worker reads them here. */
static void
check_output(struct evbuffer *out)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	size_t len;

	while ((len = evbuffer_get_length(out)) > 0) {
		ENSURE(len >= PROTO_HDR_LEN);
		evbuffer_copyout(out, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		ENSURE(len >= PROTO_HDR_LEN + (size_t)h.len);
		ENSURE(h.len <= PROTO_MAX_FRAME_DEFAULT);
		evbuffer_drain(out, PROTO_HDR_LEN + (size_t)h.len);
	}
}

static void
frame_to(struct evbuffer *in, uint16_t type, const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, 0, 0 };
	uint8_t hb[PROTO_HDR_LEN];

	proto_hdr_encode(hb, &h);
	evbuffer_add(in, hb, sizeof hb);
	if (len > 0)
		evbuffer_add(in, p, len);
}

/* A new peer; in message mode it shakes hands and joins as rank w. */
static void
fpeer_open(struct fpeer *f, const struct peer_env *env, int w, int W,
    int raw)
{
	struct msg_hello hello;
	struct hr_join j = { (uint32_t)W, (uint32_t)w };
	struct pw pw;

	f->in = evbuffer_new();
	f->out = evbuffer_new();
	ENSURE(f->in != NULL && f->out != NULL);
	f->p = peer_new(env, "fuzz", f->out);
	ENSURE(f->p != NULL);
	if (raw)
		return;
	memset(&hello, 0, sizeof hello);
	hello.magic = PROTO_MAGIC;
	hello.vmin = hello.vmax = 1;
	pw_init(&pw);
	msg_hello_enc(&pw, &hello);
	frame_to(f->in, MSG_HELLO, pw.p, pw.len);
	pw_free(&pw);
	pw_init(&pw);
	hr_join_enc(&pw, &j);
	frame_to(f->in, HR_MSG_JOIN, pw.p, pw.len);
	pw_free(&pw);
	ENSURE(peer_input(f->p, f->in) == PEER_OK);
}

static void
fpeer_close(struct fpeer *f)
{
	peer_free(f->p);
	evbuffer_free(f->in);
	evbuffer_free(f->out);
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
			frame_to(f[w].in, (uint16_t)type, d + off, len);
		}
		off += len;
		if (peer_input(f[w].p, f[w].in) == PEER_CLOSE) {
			fpeer_close(&f[w]);
			fpeer_open(&f[w], &env, w, W, raw);
		}
		if (expire)
			agg_expire(a, UINT64_MAX);
		for (i = 0; i < W; i++)
			check_output(f[i].out);
	}
	for (w = 0; w < W; w++)
		fpeer_close(&f[w]);
	agg_free(a);
	return 0;
}
