/*
 * libFuzzer target: every payload decoder of lib/proto.c and the header
 * codec on the same input.  What decodes must encode back to exactly the
 * input (the decoders are strict, so the encoding is canonical) and decode
 * again to the same message.  A second pass drives the pr_* readers with
 * operations taken from the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define ENSURE(c) do { if (!(c)) __builtin_trap(); } while (0)

/* The encoding equals the input byte for byte. */
static void
same_bytes(const struct pw *w, const uint8_t *data, size_t size)
{
	ENSURE(!w->bad);
	ENSURE(w->len == size);
	ENSURE(size == 0 || memcmp(w->p, data, size) == 0);
}

static void
fuzz_hello(const uint8_t *data, size_t size)
{
	struct msg_hello m, g;
	struct pw w;

	if (msg_hello_dec(data, size, &m) == -1)
		return;
	ENSURE(m.magic == PROTO_MAGIC && m.vmin <= m.vmax);
	ENSURE(strlen(m.name) <= PROTO_NAME_MAX);
	pw_init(&w);
	msg_hello_enc(&w, &m);
	same_bytes(&w, data, size);
	ENSURE(msg_hello_dec(w.p, w.len, &g) == 0);
	ENSURE(g.magic == m.magic && g.vmin == m.vmin && g.vmax == m.vmax &&
	    g.features == m.features &&
	    memcmp(g.nonce, m.nonce, sizeof m.nonce) == 0 &&
	    strcmp(g.name, m.name) == 0);
	pw_free(&w);
}

static void
fuzz_challenge(const uint8_t *data, size_t size)
{
	struct msg_challenge m, g;
	struct pw w;

	if (msg_challenge_dec(data, size, &m) == -1)
		return;
	ENSURE(m.auth <= AUTH_HMAC_SHA256);
	ENSURE(m.max_frame >= PROTO_MAX_FRAME_MIN &&
	    m.max_frame <= PROTO_MAX_FRAME_LIMIT);
	pw_init(&w);
	msg_challenge_enc(&w, &m);
	same_bytes(&w, data, size);
	ENSURE(msg_challenge_dec(w.p, w.len, &g) == 0);
	ENSURE(g.version == m.version && g.auth == m.auth &&
	    g.max_frame == m.max_frame &&
	    memcmp(g.nonce, m.nonce, sizeof m.nonce) == 0 &&
	    strcmp(g.name, m.name) == 0);
	pw_free(&w);
}

static void
fuzz_small(const uint8_t *data, size_t size)
{
	struct msg_auth a, ag;
	struct msg_welcome wl, wg;
	struct msg_error e, eg;
	struct msg_bulk_get b, bg;
	struct msg_bulk_result r, rg;
	struct msg_output o, og;
	struct msg_migrate_one mo, mg;
	struct pw w;

	if (msg_auth_dec(data, size, &a) == 0) {
		pw_init(&w);
		msg_auth_enc(&w, &a);
		same_bytes(&w, data, size);
		ENSURE(msg_auth_dec(w.p, w.len, &ag) == 0);
		ENSURE(memcmp(a.proof, ag.proof, sizeof a.proof) == 0);
		ENSURE(strcmp(a.ident, ag.ident) == 0);
		pw_free(&w);
	}
	if (msg_welcome_dec(data, size, &wl) == 0) {
		ENSURE(wl.has_proof <= 1);
		pw_init(&w);
		msg_welcome_enc(&w, &wl);
		same_bytes(&w, data, size);
		ENSURE(msg_welcome_dec(w.p, w.len, &wg) == 0);
		ENSURE(wg.has_proof == wl.has_proof &&
		    wg.session == wl.session &&
		    memcmp(wg.proof, wl.proof, sizeof wl.proof) == 0);
		pw_free(&w);
	}
	if (msg_error_dec(data, size, &e) == 0) {
		ENSURE(strlen(e.text) < sizeof e.text);
		pw_init(&w);
		msg_error_enc(&w, &e);
		same_bytes(&w, data, size);
		ENSURE(msg_error_dec(w.p, w.len, &eg) == 0);
		ENSURE(eg.code == e.code && strcmp(eg.text, e.text) == 0);
		(void)proto_err_name(e.code);
		pw_free(&w);
	}
	if (msg_bulk_get_dec(data, size, &b) == 0) {
		ENSURE(b.chunk != 0);
		pw_init(&w);
		msg_bulk_get_enc(&w, &b);
		same_bytes(&w, data, size);
		ENSURE(msg_bulk_get_dec(w.p, w.len, &bg) == 0);
		ENSURE(bg.max_bytes == b.max_bytes &&
		    bg.duration_ms == b.duration_ms && bg.chunk == b.chunk);
		pw_free(&w);
	}
	if (msg_bulk_result_dec(data, size, &r) == 0) {
		pw_init(&w);
		msg_bulk_result_enc(&w, &r);
		same_bytes(&w, data, size);
		ENSURE(msg_bulk_result_dec(w.p, w.len, &rg) == 0);
		ENSURE(rg.bytes == r.bytes && rg.elapsed_ns == r.elapsed_ns);
		pw_free(&w);
	}
	if (msg_output_dec(data, size, &o) == 0) {
		ENSURE(o.len > 0 && o.len <= OUTPUT_MAX &&
		    o.data + o.len == data + size);
		pw_init(&w);
		msg_output_enc(&w, &o);
		same_bytes(&w, data, size);
		ENSURE(msg_output_dec(w.p, w.len, &og) == 0);
		ENSURE(og.stream == o.stream && og.len == o.len &&
		    memcmp(og.data, o.data, o.len) == 0);
		pw_free(&w);
	}
	if (msg_migrate_one_dec(data, size, &mo) == 0) {
		ENSURE(mo.selector == MIGSEL_SESSION ? mo.session != 0 :
		    mo.selector == MIGSEL_ADDRESS && mo.address[0] != '\0');
		ENSURE(mo.host[0] != '\0' && mo.port != 0);
		pw_init(&w);
		msg_migrate_one_enc(&w, &mo);
		same_bytes(&w, data, size);
		ENSURE(msg_migrate_one_dec(w.p, w.len, &mg) == 0);
		ENSURE(mg.selector == mo.selector && mg.session == mo.session &&
		    strcmp(mg.address, mo.address) == 0 &&
		    strcmp(mg.host, mo.host) == 0 && mg.port == mo.port);
		pw_free(&w);
	}
}

static void
fuzz_header(const uint8_t *data, size_t size)
{
	struct frame_hdr h, g;
	uint8_t b[PROTO_HDR_LEN];

	if (size < PROTO_HDR_LEN)
		return;
	proto_hdr_decode(data, &h);
	proto_hdr_encode(b, &h);
	ENSURE(memcmp(b, data, PROTO_HDR_LEN) == 0);
	proto_hdr_decode(b, &g);
	ENSURE(g.len == h.len && g.type == h.type && g.flags == h.flags &&
	    g.id == h.id);
	(void)proto_type_name(h.type);
}

/*
 * The readers driven by the input: the first byte says how many of the
 * bytes that follow are operations; the rest is the payload read.
 */
static void
fuzz_reader(const uint8_t *data, size_t size)
{
	const uint8_t *ops, *p;
	char str[300];
	uint8_t bytes[64];
	size_t nops, i, before;
	struct pr r;

	if (size < 1)
		return;
	nops = data[0] % 32;
	if (nops > size - 1)
		nops = size - 1;
	ops = data + 1;
	/* A copy of exactly the payload's size, so ASan sees any overread. */
	p = malloc(size - 1 - nops + 1);
	memcpy((void *)p, ops + nops, size - 1 - nops);
	pr_init(&r, p, size - 1 - nops);
	for (i = 0; i < nops; i++) {
		before = r.off;
		switch (ops[i] & 7) {
		case 0: (void)pr_u8(&r); break;
		case 1: (void)pr_u16(&r); break;
		case 2: (void)pr_u32(&r); break;
		case 3: (void)pr_u64(&r); break;
		case 4: pr_bytes(&r, bytes, ops[i] >> 3 & 63); break;
		case 5: pr_str(&r, str, ops[i] >> 3 & 31);
			ENSURE(strlen(str) <= (size_t)(ops[i] >> 3 & 31));
			break;
		case 6: (void)pr_take(&r, ops[i] >> 3); break;
		case 7: (void)pr_take(&r, SIZE_MAX - (ops[i] >> 3)); break;
		}
		ENSURE(r.off >= before && r.off <= r.len);
	}
	(void)pr_done(&r);
	free((void *)p);
}

/* The lane hello: accepted only as it was encoded, token and index. */
static void
fuzz_lane(const uint8_t *data, size_t size)
{
	static const uint8_t token[PROTO_LANE_TOKEN] = { 7, 1, 2, 3 };
	uint8_t enc[PROTO_LANE_HELLO], tok[PROTO_LANE_TOKEN];
	uint32_t idx;

	if (size >= PROTO_LANE_HELLO) {
		/* With the input's own token: only magic and index decide. */
		memcpy(tok, data + 8, sizeof tok);
		if (proto_lane_hello_dec(data, size, tok, PROTO_LANES_MAX,
		    &idx) == 0) {
			ENSURE(size == PROTO_LANE_HELLO &&
			    idx < PROTO_LANES_MAX);
			proto_lane_hello_enc(enc, idx, tok);
			ENSURE(memcmp(enc, data, size) == 0);
		}
	}
	if (proto_lane_hello_dec(data, size, token, 4, &idx) == 0) {
		ENSURE(size == PROTO_LANE_HELLO && idx < 4);
		ENSURE(memcmp(data + 8, token, sizeof token) == 0);
	}
}

/* A resumable lane's hello: what decodes encodes back, byte for byte. */
static void
fuzz_lane_rhello(const uint8_t *data, size_t size)
{
	struct lane_rhello h;
	uint8_t enc[PROTO_LANE_RHELLO];

	if (proto_lane_rhello_dec(data, size, &h) == 0) {
		ENSURE(size == PROTO_LANE_RHELLO && h.idx < PROTO_LANES_MAX);
		proto_lane_rhello_enc(enc, &h);
		ENSURE(memcmp(enc, data, size) == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_lane(data, size);
	fuzz_lane_rhello(data, size);
	fuzz_header(data, size);
	fuzz_hello(data, size);
	fuzz_challenge(data, size);
	fuzz_small(data, size);
	fuzz_reader(data, size);
	return 0;
}
