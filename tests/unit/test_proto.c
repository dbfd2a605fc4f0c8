/*
 * Unit tests for lib/proto.c.  Every decoder gets its input in a buffer of
 * exactly the input's size, so that under ASan a read past the end fails.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "t.h"

typedef int (*dec_fn)(const void *, size_t, void *);

/* Decoders with one signature, so that a table of them is well typed. */
#define DEC(name)							\
static int								\
dec_##name(const void *p, size_t len, void *out)			\
{									\
	return msg_##name##_dec(p, len, out);				\
}
DEC(hello)
DEC(challenge)
DEC(auth)
DEC(welcome)
DEC(error)
DEC(bulk_get)
DEC(bulk_result)
DEC(migrate_one)
#undef DEC

/* Decodes a copy of p[0..len) held in a buffer of exactly len bytes. */
static int
dec_exact(dec_fn dec, const void *p, size_t len, void *out)
{
	void *b = malloc(len ? len : 1);
	int rc;

	if (len > 0)
		memcpy(b, p, len);
	rc = dec(b, len, out);
	free(b);
	return rc;
}

/*
 * The whole encoding decodes; every shorter prefix and the encoding with a
 * trailing byte do not.  Returns the number of wrong answers.
 */
static int
strict(dec_fn dec, const struct pw *w, void *out)
{
	uint8_t *more;
	size_t i;
	int bad = 0;

	if (dec_exact(dec, w->p, w->len, out) != 0)
		bad++;
	for (i = 0; i < w->len; i++)
		if (dec_exact(dec, w->p, i, out) != -1) {
			fprintf(stderr, "prefix of %zu of %zu bytes decoded\n",
			    i, w->len);
			bad++;
		}
	more = malloc(w->len + 1);
	memcpy(more, w->p, w->len);
	more[w->len] = 0;
	if (dec_exact(dec, more, w->len + 1, out) != -1) {
		fprintf(stderr, "trailing byte accepted\n");
		bad++;
	}
	free(more);
	return bad;
}

static void
fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void
test_header(void)
{
	struct frame_hdr h = { 0x04030201u, 0x0605, 0x0807,
	    0x100f0e0d0c0b0a09ull }, g;
	uint8_t b[PROTO_HDR_LEN];
	int i, same = 1;

	proto_hdr_encode(b, &h);
	for (i = 0; i < PROTO_HDR_LEN; i++)
		if (b[i] != i + 1)
			same = 0;
	CHECK(same);
	memset(&g, 0xaa, sizeof g);
	proto_hdr_decode(b, &g);
	CHECK(g.len == h.len && g.type == h.type && g.flags == h.flags &&
	    g.id == h.id);

	h.len = 0xffffffffu;
	h.type = 0xffff;
	h.flags = 0;
	h.id = UINT64_MAX;
	proto_hdr_encode(b, &h);
	proto_hdr_decode(b, &g);
	CHECK(g.len == h.len && g.type == h.type && g.flags == 0 &&
	    g.id == UINT64_MAX);
	CHECK(b[6] == 0 && b[7] == 0 && b[15] == 0xff);

	/* The magic is "GLM1" on the wire. */
	{
		struct pw w;

		pw_init(&w);
		pw_u32(&w, PROTO_MAGIC);
		CHECK(w.len == 4 && memcmp(w.p, "GLM1", 4) == 0);
		pw_free(&w);
	}

	CHECK_STR(proto_type_name(MSG_HELLO), "HELLO");
	CHECK_STR(proto_type_name(MSG_BULK_GET), "BULK_GET");
	CHECK_STR(proto_type_name(300), "REMOTE");
	CHECK_STR(proto_type_name(7), "unknown");
	CHECK_STR(proto_err_name(PERR_AUTH), "authentication failed");
	CHECK_STR(proto_err_name(PERR_TIMEOUT), "timed out");
	CHECK_STR(proto_err_name(0), "unknown error");
	CHECK_STR(proto_err_name(99), "unknown error");
}

static void
test_reader_writer(void)
{
	static const uint8_t b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	    13, 14, 15 };
	uint8_t *buf, out[8];
	char s[8];
	struct pr r;
	struct pw w;
	size_t i;

	buf = malloc(sizeof b);
	memcpy(buf, b, sizeof b);
	pr_init(&r, buf, sizeof b);
	CHECK(pr_u8(&r) == 1);
	CHECK(pr_u16(&r) == 0x0302);
	CHECK(pr_u32(&r) == 0x07060504u);
	CHECK(pr_u64(&r) == 0x0f0e0d0c0b0a0908ull);
	CHECK(pr_done(&r) == 0);
	/* Past the end: zero, and the reader stays bad. */
	CHECK(pr_u8(&r) == 0);
	CHECK(r.bad);
	CHECK(pr_done(&r) == -1);
	CHECK(r.off == sizeof b);

	pr_init(&r, buf, sizeof b);
	CHECK(pr_u64(&r) != 0);
	CHECK(pr_u64(&r) == 0);		/* only 7 left */
	CHECK(r.bad && r.off == 8);
	CHECK(pr_u8(&r) == 0);		/* bad sticks though a byte is left */
	CHECK(pr_done(&r) == -1);

	pr_init(&r, buf, sizeof b);
	CHECK(pr_take(&r, SIZE_MAX) == NULL);
	CHECK(r.bad);
	pr_init(&r, buf, sizeof b);
	CHECK(pr_take(&r, 3) == buf);
	CHECK(pr_take(&r, SIZE_MAX - 1) == NULL);
	pr_init(&r, buf, sizeof b);
	CHECK(pr_take(&r, sizeof b) == buf);
	CHECK(pr_take(&r, 0) == buf + sizeof b);
	CHECK(pr_done(&r) == 0);
	CHECK(pr_take(&r, 1) == NULL);

	/* pr_bytes zeroes what it could not read. */
	pr_init(&r, buf, 4);
	memset(out, 0xee, sizeof out);
	pr_bytes(&r, out, sizeof out);
	for (i = 0; i < sizeof out; i++)
		CHECK(out[i] == 0);
	CHECK(r.bad);

	/* Every prefix of a string: no read past the buffer, and bad. */
	pw_init(&w);
	pw_str(&w, "abcd");
	CHECK(w.len == 6 && w.p[0] == 4 && w.p[1] == 0);
	for (i = 0; i <= w.len; i++) {
		uint8_t *c = malloc(i ? i : 1);

		memcpy(c, w.p, i);
		pr_init(&r, c, i);
		memset(s, 'x', sizeof s);
		pr_str(&r, s, 7);
		if (i < w.len)
			CHECK(r.bad && s[0] == '\0');
		else {
			CHECK(pr_done(&r) == 0);
			CHECK_STR(s, "abcd");
		}
		free(c);
	}
	/* Longer than max, and max exactly. */
	pr_init(&r, w.p, w.len);
	pr_str(&r, s, 3);
	CHECK(r.bad && s[0] == '\0');
	pr_init(&r, w.p, w.len);
	pr_str(&r, s, 4);
	CHECK(pr_done(&r) == 0);
	CHECK_STR(s, "abcd");
	/* A NUL inside. */
	w.p[3] = '\0';
	pr_init(&r, w.p, w.len);
	pr_str(&r, s, 7);
	CHECK(r.bad && s[0] == '\0');
	pw_free(&w);
	CHECK(w.p == NULL && w.len == 0);

	/* The writer: little-endian, grows past its first allocation. */
	pw_init(&w);
	pw_u8(&w, 0xab);
	pw_u16(&w, 0x1234);
	pw_u32(&w, 0x89abcdefu);
	pw_u64(&w, 0x0123456789abcdefull);
	CHECK(w.len == 15);
	CHECK(w.p[0] == 0xab && w.p[1] == 0x34 && w.p[2] == 0x12 &&
	    w.p[3] == 0xef && w.p[6] == 0x89 && w.p[7] == 0xef &&
	    w.p[14] == 0x01);
	for (i = 0; i < 1000; i++)
		pw_u32(&w, (uint32_t)i);
	CHECK(w.len == 15 + 4000 && !w.bad);
	CHECK(w.p[15 + 4 * 999] == (999 & 0xff) && w.p[15 + 4 * 999 + 1] == 3);
	pw_bytes(&w, NULL, 0);
	CHECK(w.len == 4015);
	pw_free(&w);

	/* pw_str caps at 65535 bytes. */
	{
		char *big = malloc(70000);

		memset(big, 'z', 69999);
		big[69999] = '\0';
		pw_init(&w);
		pw_str(&w, big);
		CHECK(w.len == 2 + 65535 && w.p[0] == 0xff && w.p[1] == 0xff);
		pw_free(&w);
		free(big);
	}
	free(buf);
}

static void
test_hello(void)
{
	struct msg_hello m, g;
	struct pw w;
	char name[PROTO_NAME_MAX + 2];

	memset(&m, 0, sizeof m);
	m.magic = PROTO_MAGIC;
	m.vmin = 1;
	m.vmax = 3;
	m.features = 0xdeadbee8u;	/* no resume bits: no resume block */
	fill(m.nonce, sizeof m.nonce, 5);
	strcpy(m.name, "probe@host");
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(w.len == 4 + 2 + 2 + 4 + 32 + 2 + 10);
	CHECK(memcmp(w.p, "GLM1", 4) == 0 && w.p[4] == 1 && w.p[6] == 3);
	memset(&g, 0xaa, sizeof g);
	CHECK(msg_hello_dec(w.p, w.len, &g) == 0);
	CHECK(g.magic == m.magic && g.vmin == 1 && g.vmax == 3 &&
	    g.features == m.features);
	CHECK(memcmp(g.nonce, m.nonce, sizeof m.nonce) == 0);
	CHECK_STR(g.name, "probe@host");
	CHECK(strict(dec_hello, &w, &g) == 0);
	pw_free(&w);

	/* Bad magic; vmin > vmax; vmin == vmax is fine. */
	m.magic = PROTO_MAGIC ^ 1;
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == -1);
	pw_free(&w);
	m.magic = PROTO_MAGIC;
	m.vmin = 2;
	m.vmax = 1;
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == -1);
	pw_free(&w);
	m.vmin = m.vmax = 2;
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == 0);
	pw_free(&w);

	/* Empty name; name of exactly the maximum; one byte over. */
	m.name[0] = '\0';
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(strict(dec_hello, &w, &g) == 0);
	CHECK(g.name[0] == '\0');
	pw_free(&w);
	memset(m.name, 'n', PROTO_NAME_MAX);
	m.name[PROTO_NAME_MAX] = '\0';
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == 0);
	CHECK(strlen(g.name) == PROTO_NAME_MAX);
	pw_free(&w);
	memset(name, 'n', PROTO_NAME_MAX + 1);
	name[PROTO_NAME_MAX + 1] = '\0';
	pw_init(&w);
	pw_u32(&w, PROTO_MAGIC);
	pw_u16(&w, 1);
	pw_u16(&w, 1);
	pw_u32(&w, 0);
	pw_bytes(&w, m.nonce, sizeof m.nonce);
	pw_str(&w, name);
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == -1);
	pw_free(&w);

	/* A NUL inside the name. */
	strcpy(m.name, "abcdef");
	pw_init(&w);
	msg_hello_enc(&w, &m);
	w.p[w.len - 3] = '\0';
	CHECK(dec_exact(dec_hello, w.p, w.len, &g) == -1);
	pw_free(&w);
}

/* HELLO and WELCOME with the resume fields. */
static void
test_resume_fields(void)
{
	struct msg_hello m, g;
	struct msg_welcome a, b;
	struct pw w;

	memset(&m, 0, sizeof m);
	m.magic = PROTO_MAGIC;
	m.vmin = m.vmax = 2;
	m.features = FEAT_RESUME | FEAT_RESUMING;
	strcpy(m.name, "x");
	m.session = 0x0102030405060708ull;
	fill(m.token, sizeof m.token, 9);
	pw_init(&w);
	msg_hello_enc(&w, &m);
	CHECK(w.len == 4 + 2 + 2 + 4 + 32 + 2 + 1 + 8 + 16);
	CHECK(msg_hello_dec(w.p, w.len, &g) == 0);
	CHECK(g.session == m.session &&
	    memcmp(g.token, m.token, sizeof g.token) == 0);
	/* Cut anywhere in the resume block: refused. */
	CHECK(msg_hello_dec(w.p, w.len - 1, &g) == -1);
	CHECK(msg_hello_dec(w.p, w.len - 24, &g) == -1);
	pw_free(&w);

	/* WELCOME: without features as before, with them round trip. */
	memset(&a, 0, sizeof a);
	a.session = 77;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	CHECK(w.len == 2 + 32 + 8);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == 0 && b.features == 0 &&
	    b.resume_ms == 0);
	pw_free(&w);
	a.features = FEAT_RESUME;
	fill(a.token, sizeof a.token, 3);
	a.resume_ms = 30000;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	CHECK(w.len == 2 + 32 + 8 + 4 + 16 + 4);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == 0);
	CHECK(b.features == FEAT_RESUME && b.resume_ms == 30000 &&
	    memcmp(b.token, a.token, sizeof b.token) == 0);
	CHECK(msg_welcome_dec(w.p, w.len - 1, &b) == -1);
	pw_free(&w);
	/* A tail of features 0: not how 0 is written, refused. */
	a.features = 0;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	pw_u32(&w, 0);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == -1);
	pw_free(&w);
	/* Unknown feature bits in WELCOME: refused. */
	a.features = FEAT_RESUMING | 0x100;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == -1);
	pw_free(&w);
	/* A resumed session that moved (migration): only with RESUMING. */
	a.features = FEAT_RESUME | FEAT_RESUMING | FEAT_MOVED;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == 0);
	CHECK(b.features == (FEAT_RESUME | FEAT_RESUMING | FEAT_MOVED));
	pw_free(&w);
	a.features = FEAT_RESUME | FEAT_MOVED;
	pw_init(&w);
	msg_welcome_enc(&w, &a);
	CHECK(msg_welcome_dec(w.p, w.len, &b) == -1);
	pw_free(&w);
}

/* Encodes a CHALLENGE and decodes it. */
static int
ch_rc(const struct msg_challenge *m)
{
	struct msg_challenge g;
	struct pw w;
	int rc;

	pw_init(&w);
	msg_challenge_enc(&w, m);
	rc = dec_exact(dec_challenge, w.p, w.len, &g);
	pw_free(&w);
	return rc;
}

static void
test_challenge(void)
{
	struct msg_challenge m, g, c;
	struct pw w;

	memset(&m, 0, sizeof m);
	m.version = 1;
	m.auth = AUTH_HMAC_SHA256;
	fill(m.nonce, sizeof m.nonce, 9);
	strcpy(m.name, "gpu1");
	m.max_frame = PROTO_MAX_FRAME_DEFAULT;
	pw_init(&w);
	msg_challenge_enc(&w, &m);
	CHECK(w.len == 2 + 2 + 32 + 2 + 4 + 4);
	memset(&g, 0xaa, sizeof g);
	CHECK(msg_challenge_dec(w.p, w.len, &g) == 0);
	CHECK(g.version == 1 && g.auth == AUTH_HMAC_SHA256 &&
	    g.max_frame == m.max_frame);
	CHECK(memcmp(g.nonce, m.nonce, sizeof g.nonce) == 0);
	CHECK_STR(g.name, "gpu1");
	CHECK(strict(dec_challenge, &w, &g) == 0);
	pw_free(&w);

	c = m;
	c.auth = AUTH_NONE;
	CHECK(ch_rc(&c) == 0);
	c.auth = 2;
	CHECK(ch_rc(&c) == -1);
	c.auth = 0xffff;
	CHECK(ch_rc(&c) == -1);
	c = m;
	c.max_frame = PROTO_MAX_FRAME_MIN;
	CHECK(ch_rc(&c) == 0);
	c.max_frame = PROTO_MAX_FRAME_MIN - 1;
	CHECK(ch_rc(&c) == -1);
	c.max_frame = PROTO_MAX_FRAME_LIMIT;
	CHECK(ch_rc(&c) == 0);
	c.max_frame = PROTO_MAX_FRAME_LIMIT + 1;
	CHECK(ch_rc(&c) == -1);
	c.max_frame = 0;
	CHECK(ch_rc(&c) == -1);
	c.max_frame = UINT32_MAX;
	CHECK(ch_rc(&c) == -1);

	/* A name of the maximum length, and one byte over. */
	{
		char name[PROTO_NAME_MAX + 2];

		memset(name, 's', sizeof name - 1);
		name[PROTO_NAME_MAX + 1] = '\0';
		pw_init(&w);
		pw_u16(&w, 1);
		pw_u16(&w, 0);
		pw_bytes(&w, m.nonce, sizeof m.nonce);
		pw_str(&w, name);
		pw_u32(&w, PROTO_MAX_FRAME_MIN);
		CHECK(dec_exact(dec_challenge, w.p, w.len, &g) == -1);
		pw_free(&w);
		name[PROTO_NAME_MAX] = '\0';
		pw_init(&w);
		pw_u16(&w, 1);
		pw_u16(&w, 0);
		pw_bytes(&w, m.nonce, sizeof m.nonce);
		pw_str(&w, name);
		pw_u32(&w, PROTO_MAX_FRAME_MIN);
		CHECK(dec_exact(dec_challenge, w.p, w.len, &g) == 0);
		CHECK(strlen(g.name) == PROTO_NAME_MAX);
		pw_free(&w);
	}

	/* A NUL in the server's name. */
	pw_init(&w);
	msg_challenge_enc(&w, &m);
	w.p[2 + 2 + 32 + 2 + 1] = '\0';
	CHECK(dec_exact(dec_challenge, w.p, w.len, &g) == -1);
	pw_free(&w);
}

static void
test_small_msgs(void)
{
	struct msg_auth a, ag;
	struct msg_welcome wl, wg;
	struct msg_error e, eg;
	struct msg_bulk_get b, bg;
	struct msg_bulk_result r, rg;
	struct pw w;
	char text[600];

	memset(&a, 0, sizeof a);
	fill(a.proof, sizeof a.proof, 3);
	pw_init(&w);
	msg_auth_enc(&w, &a);
	CHECK(w.len == PROTO_PROOF_LEN);
	CHECK(msg_auth_dec(w.p, w.len, &ag) == 0);
	CHECK(memcmp(a.proof, ag.proof, sizeof a.proof) == 0);
	CHECK(ag.ident[0] == '\0');
	CHECK(strict(dec_auth, &w, &ag) == 0);
	pw_free(&w);
	/* With the identity: a string after the proof, never empty. */
	snprintf(a.ident, sizeof a.ident, "alice@lab");
	pw_init(&w);
	msg_auth_enc(&w, &a);
	CHECK(w.len == PROTO_PROOF_LEN + 2 + 9);
	CHECK(msg_auth_dec(w.p, w.len, &ag) == 0);
	CHECK_STR(ag.ident, "alice@lab");
	CHECK(memcmp(a.proof, ag.proof, sizeof a.proof) == 0);
	CHECK(dec_exact(dec_auth, w.p, w.len - 1, &ag) == -1);
	CHECK(dec_exact(dec_auth, w.p, PROTO_PROOF_LEN + 1, &ag) == -1);
	pw_free(&w);
	{
		uint8_t ab[PROTO_PROOF_LEN + 2 + 64];

		/* An empty identity is written as none: refused. */
		memset(ab, 0, sizeof ab);
		CHECK(dec_exact(dec_auth, ab, PROTO_PROOF_LEN + 2, &ag) == -1);
		/* 64 bytes of name: over PROTO_IDENT_MAX. */
		ab[PROTO_PROOF_LEN] = 64;
		memset(ab + PROTO_PROOF_LEN + 2, 'a', 64);
		CHECK(dec_exact(dec_auth, ab, sizeof ab, &ag) == -1);
		ab[PROTO_PROOF_LEN] = 63;
		CHECK(dec_exact(dec_auth, ab, sizeof ab - 1, &ag) == 0);
		CHECK(strlen(ag.ident) == 63);
		ab[PROTO_PROOF_LEN + 5] = '\0';
		CHECK(dec_exact(dec_auth, ab, sizeof ab - 1, &ag) == -1);
	}

	memset(&wl, 0, sizeof wl);
	wl.has_proof = 1;
	fill(wl.proof, sizeof wl.proof, 77);
	wl.session = 0x1122334455667788ull;
	pw_init(&w);
	msg_welcome_enc(&w, &wl);
	CHECK(w.len == 2 + 32 + 8);
	CHECK(msg_welcome_dec(w.p, w.len, &wg) == 0);
	CHECK(wg.has_proof == 1 && wg.session == wl.session &&
	    memcmp(wg.proof, wl.proof, sizeof wl.proof) == 0);
	CHECK(strict(dec_welcome, &w, &wg) == 0);
	w.p[0] = 2;
	CHECK(dec_exact(dec_welcome, w.p, w.len, &wg) == -1);
	w.p[0] = 0;
	CHECK(dec_exact(dec_welcome, w.p, w.len, &wg) == 0);
	CHECK(wg.has_proof == 0);
	pw_free(&w);

	memset(&e, 0, sizeof e);
	e.code = PERR_TOOBIG;
	strcpy(e.text, "frame of 99 bytes");
	pw_init(&w);
	msg_error_enc(&w, &e);
	CHECK(w.len == 4 + 2 + 17);
	CHECK(msg_error_dec(w.p, w.len, &eg) == 0);
	CHECK(eg.code == PERR_TOOBIG);
	CHECK_STR(eg.text, "frame of 99 bytes");
	CHECK(strict(dec_error, &w, &eg) == 0);
	pw_free(&w);
	/* 511 bytes of text fit; 512 do not. */
	memset(text, 't', sizeof text);
	text[511] = '\0';
	pw_init(&w);
	pw_u32(&w, 1);
	pw_str(&w, text);
	CHECK(dec_exact(dec_error, w.p, w.len, &eg) == 0);
	CHECK(strlen(eg.text) == 511);
	pw_free(&w);
	text[511] = 't';
	text[512] = '\0';
	pw_init(&w);
	pw_u32(&w, 1);
	pw_str(&w, text);
	CHECK(dec_exact(dec_error, w.p, w.len, &eg) == -1);
	pw_free(&w);
	pw_init(&w);
	pw_u32(&w, 1);
	pw_str(&w, "ab");
	w.p[w.len - 1] = '\0';
	CHECK(dec_exact(dec_error, w.p, w.len, &eg) == -1);
	pw_free(&w);

	b.max_bytes = 1ull << 40;
	b.duration_ms = 2500;
	b.chunk = 65536;
	pw_init(&w);
	msg_bulk_get_enc(&w, &b);
	CHECK(w.len == 16);
	CHECK(msg_bulk_get_dec(w.p, w.len, &bg) == 0);
	CHECK(bg.max_bytes == b.max_bytes && bg.duration_ms == 2500 &&
	    bg.chunk == 65536);
	CHECK(strict(dec_bulk_get, &w, &bg) == 0);
	pw_free(&w);
	b.chunk = 0;
	pw_init(&w);
	msg_bulk_get_enc(&w, &b);
	CHECK(dec_exact(dec_bulk_get, w.p, w.len, &bg) == -1);
	pw_free(&w);
	b.chunk = 1;
	b.max_bytes = 0;
	b.duration_ms = 0;
	pw_init(&w);
	msg_bulk_get_enc(&w, &b);
	CHECK(dec_exact(dec_bulk_get, w.p, w.len, &bg) == 0);
	pw_free(&w);

	r.bytes = UINT64_MAX;
	r.elapsed_ns = 123456789;
	pw_init(&w);
	msg_bulk_result_enc(&w, &r);
	CHECK(w.len == 16);
	CHECK(msg_bulk_result_dec(w.p, w.len, &rg) == 0);
	CHECK(rg.bytes == UINT64_MAX && rg.elapsed_ns == 123456789);
	CHECK(strict(dec_bulk_result, &w, &rg) == 0);
	pw_free(&w);

	/* Empty input is refused by every decoder. */
	{
		struct msg_hello h;
		struct msg_challenge c;

		CHECK(dec_exact(dec_hello, "", 0, &h) == -1);
		CHECK(dec_exact(dec_challenge, "", 0, &c) == -1);
		CHECK(dec_exact(dec_auth, "", 0, &ag) == -1);
		CHECK(dec_exact(dec_welcome, "", 0, &wg) == -1);
		CHECK(dec_exact(dec_error, "", 0, &eg) == -1);
		CHECK(dec_exact(dec_bulk_get, "", 0, &bg) == -1);
		CHECK(dec_exact(dec_bulk_result, "", 0, &rg) == -1);
	}
}

/* The lane hello and the stripes of a copy over lanes. */
static void
test_lanes(void)
{
	uint8_t tok[PROTO_LANE_TOKEN], h[PROTO_LANE_HELLO], bad[PROTO_LANE_HELLO];
	uint64_t off, cnt, sum, len, next;
	uint32_t idx, n, i;
	size_t k;

	for (k = 0; k < sizeof tok; k++)
		tok[k] = (uint8_t)(k * 37 + 1);
	proto_lane_hello_enc(h, 3, tok);
	CHECK(memcmp(h, "GLLN", 4) == 0);
	CHECK(proto_lane_hello_dec(h, sizeof h, tok, 4, &idx) == 0 && idx == 3);
	CHECK(proto_lane_hello_dec(h, sizeof h, tok, 3, &idx) == -1);
	CHECK(proto_lane_hello_dec(h, sizeof h - 1, tok, 4, &idx) == -1);
	for (k = 0; k < sizeof h; k++) {
		/* Any byte changed: refused (the index only if out of range). */
		memcpy(bad, h, sizeof h);
		bad[k] ^= 0x80;
		CHECK(proto_lane_hello_dec(bad, sizeof bad, tok, 4, &idx) == -1);
	}
	/* Stripes cover the copy, in order, whole pages but the last. */
	for (n = 1; n <= PROTO_LANES_MAX; n++)
		for (len = 1; len < (64u << 10); len = len * 3 + 1) {
			sum = 0;
			next = 0;
			for (i = 0; i < n; i++) {
				proto_lane_stripe(len, n, i, &off, &cnt);
				CHECK(off == next || cnt == 0);
				if (cnt > 0 && off + cnt < len)
					CHECK(cnt % 4096 == 0);
				sum += cnt;
				next = off + cnt;
			}
			CHECK(sum == len);
		}
	proto_lane_stripe(4800000, 4, 0, &off, &cnt);
	CHECK(off == 0 && cnt == 1200128);
	proto_lane_stripe(4800000, 4, 3, &off, &cnt);
	CHECK(off == 3600384 && cnt == 1199616);
}

/* A resumable session's lane hello: as encoded, or refused. */
static void
test_lane_rhello(void)
{
	struct lane_rhello h, g;
	uint8_t b[PROTO_LANE_RHELLO], bad[PROTO_LANE_RHELLO];
	size_t k;

	memset(&h, 0, sizeof h);
	h.idx = 15;
	h.epoch = 0x01020304;
	h.session = 0x1122334455667788ull;
	for (k = 0; k < sizeof h.token; k++)
		h.token[k] = (uint8_t)(k * 11 + 5);
	proto_lane_rhello_enc(b, &h);
	CHECK(memcmp(b, "GLLR", 4) == 0);
	CHECK(b[8] == 4 && b[11] == 1);		/* the epoch, little-endian */
	CHECK(b[16] == 0x88 && b[23] == 0x11);	/* the session */
	CHECK(proto_lane_rhello_dec(b, sizeof b, &g) == 0);
	CHECK(g.idx == 15 && g.epoch == h.epoch && g.session == h.session);
	CHECK(memcmp(g.token, h.token, sizeof g.token) == 0);
	CHECK(proto_lane_rhello_dec(b, sizeof b - 1, &g) == -1);
	/* Not the other lanes' hello, nor a HELLO. */
	proto_lane_hello_enc(bad, 1, h.token);
	CHECK(proto_lane_rhello_dec(bad, sizeof bad, &g) == -1);
	for (k = 0; k < 16; k++) {
		/* The magic, an index past 15, the zero word: refused. */
		memcpy(bad, b, sizeof b);
		bad[k] ^= 0x10;
		CHECK(proto_lane_rhello_dec(bad, sizeof bad, &g) ==
		    (k >= 8 && k < 12 ? 0 : -1));
	}
	/* The session and the token are the worker's to check. */
	memcpy(bad, b, sizeof b);
	bad[20] ^= 1;
	bad[30] ^= 1;
	CHECK(proto_lane_rhello_dec(bad, sizeof bad, &g) == 0);
}

/* MSG_OUTPUT: a stream, a length, the bytes; nothing else decodes. */
static void
test_output(void)
{
	struct msg_output o = { OUTPUT_STDERR, (const uint8_t *)"abc\n", 4 };
	struct msg_output og;
	struct pw w;
	static const uint8_t bad_stream[] = { 3, 1, 0, 0, 0, 'x' };
	static const uint8_t empty[] = { 1, 0, 0, 0, 0 };
	static const uint8_t short_[] = { 1, 2, 0, 0, 0, 'x' };
	static const uint8_t trailing[] = { 1, 1, 0, 0, 0, 'x', 'y' };

	pw_init(&w);
	msg_output_enc(&w, &o);
	CHECK(w.len == 9);
	CHECK(msg_output_dec(w.p, w.len, &og) == 0);
	CHECK(og.stream == OUTPUT_STDERR && og.len == 4 &&
	    memcmp(og.data, "abc\n", 4) == 0);
	pw_free(&w);
	CHECK(msg_output_dec(bad_stream, sizeof bad_stream, &og) == -1);
	CHECK(msg_output_dec(empty, sizeof empty, &og) == -1);
	CHECK(msg_output_dec(short_, sizeof short_, &og) == -1);
	CHECK(msg_output_dec(trailing, sizeof trailing, &og) == -1);
	CHECK(msg_output_dec("", 0, &og) == -1);
	CHECK(strcmp(proto_type_name(MSG_OUTPUT), "OUTPUT") == 0);
}

/* MIGRATE_ONE: both selectors round-trip strictly; what is wrong refused. */
static void
test_migrate_one(void)
{
	struct msg_migrate_one m, g;
	struct pw w;
	static const uint8_t bad_sel[] = { 3, 0, 1, 'x', 0, 1, 'h', 0x1c, 0x0f };
	static const uint8_t no_port[] = { 2, 0, 1, 'x', 0, 1, 'h', 0, 0 };
	static const uint8_t no_host[] = { 2, 0, 1, 'x', 0, 0, 0x1c, 0x0f };
	static const uint8_t no_addr[] = { 2, 0, 0, 0, 1, 'h', 0x1c, 0x0f };
	static const uint8_t nul_addr[] = { 2, 0, 1, 0, 0, 1, 'h', 0x1c, 0x0f };
	static const uint8_t sess0[] = { 1, 0, 0, 0, 0, 0, 0, 0, 0,
	    0, 1, 'h', 0x1c, 0x0f };
	uint8_t long_addr[3 + 64 + 5];

	memset(&m, 0, sizeof m);
	m.selector = MIGSEL_SESSION;
	m.session = 0x0102030405060708ull;
	snprintf(m.host, sizeof m.host, "b.example");
	m.port = 7384;
	pw_init(&w);
	msg_migrate_one_enc(&w, &m);
	CHECK(w.len == 1 + 8 + 2 + 9 + 2);
	CHECK(strict(dec_migrate_one, &w, &g) == 0);
	CHECK(dec_exact(dec_migrate_one, w.p, w.len, &g) == 0);
	CHECK(g.selector == MIGSEL_SESSION && g.session == m.session &&
	    strcmp(g.host, "b.example") == 0 && g.port == 7384 &&
	    g.address[0] == '\0');
	pw_free(&w);

	memset(&m, 0, sizeof m);
	m.selector = MIGSEL_ADDRESS;
	snprintf(m.address, sizeof m.address, "[::1]:41000");
	snprintf(m.host, sizeof m.host, "10.0.0.2");
	m.port = 1;
	pw_init(&w);
	msg_migrate_one_enc(&w, &m);
	CHECK(strict(dec_migrate_one, &w, &g) == 0);
	CHECK(dec_exact(dec_migrate_one, w.p, w.len, &g) == 0);
	CHECK(g.selector == MIGSEL_ADDRESS && g.session == 0 &&
	    strcmp(g.address, "[::1]:41000") == 0 &&
	    strcmp(g.host, "10.0.0.2") == 0 && g.port == 1);
	pw_free(&w);

	CHECK(msg_migrate_one_dec(bad_sel, sizeof bad_sel, &g) == -1);
	CHECK(msg_migrate_one_dec(no_port, sizeof no_port, &g) == -1);
	CHECK(msg_migrate_one_dec(no_host, sizeof no_host, &g) == -1);
	CHECK(msg_migrate_one_dec(no_addr, sizeof no_addr, &g) == -1);
	CHECK(msg_migrate_one_dec(nul_addr, sizeof nul_addr, &g) == -1);
	CHECK(msg_migrate_one_dec(sess0, sizeof sess0, &g) == -1);
	/* An address of 64 bytes does not fit address[64] with its NUL. */
	memset(long_addr, 'a', sizeof long_addr);
	long_addr[0] = 2;
	long_addr[1] = 0;
	long_addr[2] = 64;
	long_addr[67] = 0;
	long_addr[68] = 1;
	long_addr[69] = 'h';
	long_addr[70] = 0x1c;
	long_addr[71] = 0x0f;
	CHECK(msg_migrate_one_dec(long_addr, sizeof long_addr, &g) == -1);
	/* 63 bytes fit. */
	memset(m.address, 'a', 63);
	m.address[63] = '\0';
	pw_init(&w);
	msg_migrate_one_enc(&w, &m);
	CHECK(dec_exact(dec_migrate_one, w.p, w.len, &g) == 0 &&
	    strlen(g.address) == 63);
	pw_free(&w);
	CHECK(msg_migrate_one_dec("", 0, &g) == -1);
	CHECK(strcmp(proto_type_name(MSG_MIGRATE_ONE), "MIGRATE_ONE") == 0);
}

/* msg_error_put: as msg_error_enc of the struct, the text cut to fit. */
static void
test_error_put(void)
{
	struct msg_error e;
	struct pw w;
	char big[700];

	pw_init(&w);
	msg_error_put(&w, PERR_SHUTDOWN, "no new clients accepted");
	CHECK(!w.bad && msg_error_dec(w.p, w.len, &e) == 0);
	CHECK(e.code == PERR_SHUTDOWN);
	CHECK_STR(e.text, "no new clients accepted");
	pw_free(&w);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	pw_init(&w);
	msg_error_put(&w, PERR_AGAIN, big);
	CHECK(!w.bad && msg_error_dec(w.p, w.len, &e) == 0);
	CHECK(e.code == PERR_AGAIN && strlen(e.text) == sizeof e.text - 1);
	pw_free(&w);
}

/* proto_refuse: one ERROR frame on the socket, then it is closed. */
static void
test_refuse(void)
{
	struct frame_hdr h;
	struct msg_error e;
	uint8_t buf[1024];
	ssize_t n;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	proto_refuse(sv[0], PERR_AGAIN, "busy: too many connections");
	/* Closed: fd sv[0] no longer names a file. */
	CHECK(fcntl(sv[0], F_GETFD) == -1 && errno == EBADF);
	n = recv(sv[1], buf, sizeof buf, MSG_WAITALL);
	CHECK(n > PROTO_HDR_LEN);
	if (n > PROTO_HDR_LEN) {
		proto_hdr_decode(buf, &h);
		CHECK(h.type == MSG_ERROR && h.flags == FL_REPLY && h.id == 0);
		CHECK(h.len == (size_t)n - PROTO_HDR_LEN);
		CHECK(msg_error_dec(buf + PROTO_HDR_LEN, h.len, &e) == 0);
		CHECK(e.code == PERR_AGAIN);
		CHECK_STR(e.text, "busy: too many connections");
	}
	CHECK(recv(sv[1], buf, sizeof buf, 0) == 0);
	close(sv[1]);
}

int
main(void)
{
	test_error_put();
	test_refuse();
	test_migrate_one();
	test_resume_fields();
	test_output();
	test_lanes();
	test_lane_rhello();
	test_header();
	test_reader_writer();
	test_hello();
	test_challenge();
	test_small_msgs();
	return t_done("proto");
}
