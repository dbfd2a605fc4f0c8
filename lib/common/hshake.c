/* The server half of the handshake, shared by the daemons. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include <sodium.h>

#include "hshake.h"
#include "log.h"

static uint16_t
hshake_vmin(const struct hshake *hs)
{
	return hs->conf->vmin ? hs->conf->vmin : PROTO_VERSION_MIN;
}

static uint16_t
hshake_vmax(const struct hshake *hs)
{
	return hs->conf->vmax ? hs->conf->vmax : PROTO_VERSION_MAX;
}

static const char *
hshake_kind(const struct hshake *hs)
{
	return hs->conf->peer_kind ? hs->conf->peer_kind : "client";
}

static const char *
hshake_type(const struct hshake *hs, uint16_t type)
{
	return hs->conf->type_name ? hs->conf->type_name(type) :
	    proto_type_name(type);
}

/* "addr" or "addr (name)" once HELLO named the peer, for logs. */
static const char *
hshake_who(const struct hshake *hs, char *buf, size_t len)
{
	if (hs->res.name[0] == '\0')
		return hs->peer;
	snprintf(buf, len, "%s (%s)", hs->peer, hs->res.name);
	return buf;
}

void
hshake_init(struct hshake *hs, const struct hshake_conf *conf,
    const char *peer, uint64_t session)
{
	memset(hs, 0, sizeof *hs);
	hs->conf = conf;
	hs->state = HSHAKE_S_HELLO;
	snprintf(hs->peer, sizeof hs->peer, "%s", peer);
	hs->res.session = session;
	hs->res.max_frame = PROTO_MAX_FRAME_MIN;
}

int
hshake_done(const struct hshake *hs)
{
	return hs->state == HSHAKE_S_DONE;
}

uint32_t
hshake_limit(const struct hshake *hs)
{
	/* HELLO and AUTH are small: a big frame before is not our protocol. */
	return hs->state == HSHAKE_S_DONE ? hs->res.max_frame :
	    PROTO_MAX_FRAME_MIN;
}

void
hshake_frame(struct hshake *hs, struct evbuffer *out, uint16_t type,
    uint16_t flags, uint64_t id, const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, flags, id };
	uint8_t hb[PROTO_HDR_LEN];
	struct evbuffer_iovec v;
	size_t n, want;

	proto_hdr_encode(hb, &h);
	if (!hs->chan.on || len + PROTO_HDR_LEN > CHAN_BODY_MAX) {
		if (hs->chan.on) {
			/* Larger than a record: through a buffer. */
			struct evbuffer *b = evbuffer_new();

			if (b == NULL)
				return;
			evbuffer_add(b, hb, sizeof hb);
			evbuffer_add(b, p, len);
			(void)chan_ev_seal(&hs->chan, b, out);
			evbuffer_free(b);
			return;
		}
		evbuffer_add(out, hb, sizeof hb);
		if (len > 0)
			evbuffer_add(out, p, len);
		return;
	}
	/* One record: header, then payload, sealed in place. */
	n = PROTO_HDR_LEN + len;
	want = chan_wire(&hs->chan, n);
	if (evbuffer_reserve_space(out, (ssize_t)want, &v, 1) != 1 ||
	    v.iov_len < want)
		return;
	memcpy((uint8_t *)v.iov_base + CHAN_HDR, hb, sizeof hb);
	if (len > 0)
		memcpy((uint8_t *)v.iov_base + CHAN_HDR + sizeof hb, p, len);
	chan_seal(&hs->chan, v.iov_base, (uint8_t *)v.iov_base + CHAN_HDR,
	    n);
	v.iov_len = want;
	evbuffer_commit_space(out, &v, 1);
}

struct evbuffer *
hshake_open(struct hshake *hs, struct evbuffer *raw)
{
	char who[sizeof hs->peer + PROTO_NAME_MAX + 4];

	if (!hs->chan.on)
		return raw;
	if (chan_ev_open(&hs->chan, raw, hs->plain) == -1) {
		log_warn("%s %s: %s, closing", hshake_kind(hs),
		    hshake_who(hs, who, sizeof who), hs->chan.err);
		hs->state = HSHAKE_S_FAILED;
		return NULL;
	}
	return hs->plain;
}

int
hshake_seal(struct hshake *hs, struct evbuffer *plain, struct evbuffer *out)
{
	if (!hs->chan.on)
		return evbuffer_add_buffer(out, plain);
	return chan_ev_seal(&hs->chan, plain, out);
}

void
hshake_fini(struct hshake *hs)
{
	chan_fini(&hs->chan);
	hs->chan.on = 0;
	sodium_memzero(&hs->res.key, sizeof hs->res.key);
	if (hs->plain != NULL)
		evbuffer_free(hs->plain);
	hs->plain = NULL;
}

/* A payload from a writer, if it could be written. */
static void
hshake_pw(struct hshake *hs, struct evbuffer *out, uint16_t type,
    uint64_t id, struct pw *w)
{
	if (!w->bad)
		hshake_frame(hs, out, type, FL_REPLY, id, w->p, w->len);
	pw_free(w);
}

void
hshake_error(struct hshake *hs, struct evbuffer *out, uint64_t id,
    uint32_t code, const char *text)
{
	struct pw w;

	pw_init(&w);
	msg_error_put(&w, code, text);
	hshake_pw(hs, out, MSG_ERROR, id, &w);
}

/* Refuses the peer: logs, queues ERROR, reads nothing more. */
static int
hshake_fail(struct hshake *hs, struct evbuffer *out, uint64_t id,
    uint32_t code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int
hshake_fail(struct hshake *hs, struct evbuffer *out, uint64_t id,
    uint32_t code, const char *fmt, ...)
{
	char text[sizeof ((struct msg_error *)0)->text];
	char who[sizeof hs->peer + PROTO_NAME_MAX + 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	log_info("%s %s: %s: %s, closing", hshake_kind(hs),
	    hshake_who(hs, who, sizeof who), proto_err_name(code), text);
	hshake_error(hs, out, id, code, text);
	hs->state = HSHAKE_S_FAILED;
	return HSHAKE_CLOSE;
}

int
hshake_header(struct hshake *hs, const struct frame_hdr *h,
    struct evbuffer *out)
{
	uint32_t limit = hshake_limit(hs);

	if (h->len <= limit)
		return HSHAKE_OK;
	return hshake_fail(hs, out, h->id, PERR_TOOBIG,
	    "frame of %u bytes over the limit of %u%s%s%s", h->len, limit,
	    hs->state == HSHAKE_S_DONE ? "" : " (not a Gleam ",
	    hs->state == HSHAKE_S_DONE ? "" : hshake_kind(hs),
	    hs->state == HSHAKE_S_DONE ? "" : "?)");
}

/* The name as shown in logs and status: no control characters. */
static void
hshake_name(char *dst, const char *src)
{
	size_t i;

	for (i = 0; src[i] != '\0' && i < PROTO_NAME_MAX; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ?
		    '?' : src[i];
	dst[i] = '\0';
}

/* WELCOME, with our proof if the peer proved the key. */
static int
hshake_welcome(struct hshake *hs, struct evbuffer *out, uint64_t id)
{
	struct msg_welcome wel;
	struct msg_redirect moved;
	struct pw w;
	char who[sizeof hs->peer + PROTO_NAME_MAX + 4];
	int found = 0;

	memset(&wel, 0, sizeof wel);
	if (hs->res.authed) {
		wel.has_proof = 1;
		auth_proof(&hs->res.key, 1, hs->res.version, hs->res.snonce,
		    hs->res.cnonce, wel.proof);
	}
	memset(&moved, 0, sizeof moved);
	if (hs->res.features & FEAT_RESUMING) {
		/* Only now, the key proven: is the session there? */
		if (hs->conf->resume_find == NULL ||
		    (found = hs->conf->resume_find(hs->conf->resume_arg,
		    hs->res.session, hs->res.token, hs->res.ident,
		    &moved)) < 0 || found > 1)
			return hshake_fail(hs, out, id, PERR_STATE,
			    "no session %llu to resume (it ended, expired, "
			    "or the server restarted)",
			    (unsigned long long)hs->res.session);
		hs->res.resuming = 1;
		wel.features = FEAT_RESUME | FEAT_RESUMING |
		    (found == 1 ? FEAT_MOVED : 0);
	} else if ((hs->res.features & FEAT_RESUME) &&
	    hs->conf->resume_ms > 0) {
		auth_random(hs->res.token, sizeof hs->res.token);
		hs->res.resumable = 1;
		wel.features = FEAT_RESUME;
	}
	if (hs->conf->welcome_features != NULL)
		wel.features |= hs->conf->welcome_features(hs->conf->resume_arg,
		    hs->res.authed ? hs->res.ident : "", hs->res.features &
		    FEAT_NAMES) & hs->res.features & FEAT_NAMES;
	if (wel.features & FEAT_RESUME) {
		memcpy(wel.token, hs->res.token, sizeof wel.token);
		wel.resume_ms = hs->conf->resume_ms;
	}
	wel.session = hs->res.session;
	pw_init(&w);
	msg_welcome_enc(&w, &wel);
	if (w.bad) {
		pw_free(&w);
		return hshake_fail(hs, out, id, PERR_INTERNAL,
		    "out of memory");
	}
	hshake_pw(hs, out, MSG_WELCOME, id, &w);
	/* From here on, records: sealed if the peer proved the key. */
	if ((hs->plain = evbuffer_new()) == NULL ||
	    chan_init(&hs->chan, hs->res.authed ? &hs->res.key : NULL, 1,
	    hs->res.cnonce, hs->res.snonce) == -1) {
		log_warn("%s %s: %s", hshake_kind(hs),
		    hshake_who(hs, who, sizeof who), hs->plain == NULL ?
		    "out of memory" : hs->chan.err);
		hs->state = HSHAKE_S_FAILED;
		return HSHAKE_CLOSE;
	}
	hs->state = HSHAKE_S_DONE;
	if (found == 1) {
		/*
		 * It went elsewhere: where, in its records (sealed), as the
		 * REDIRECT the client may have lost; nothing more here.
		 */
		pw_init(&w);
		msg_redirect_enc(&w, &moved);
		if (!w.bad)
			hshake_frame(hs, out, MSG_REDIRECT, 0, 0, w.p, w.len);
		pw_free(&w);
		log_info("%s %s: session %llu moved to %s:%u: told so again",
		    hshake_kind(hs), hshake_who(hs, who, sizeof who),
		    (unsigned long long)hs->res.session, moved.host,
		    (unsigned)moved.port);
		sodium_memzero(&moved, sizeof moved);
		hs->state = HSHAKE_S_FAILED;
		return HSHAKE_CLOSE;
	}
	if (hs->res.authed)
		log_debug("%s %s: connected, protocol %u, identity %s, sealed",
		    hshake_kind(hs), hshake_who(hs, who, sizeof who),
		    hs->res.version, hs->res.ident);
	else
		log_debug("%s %s: connected, protocol %u", hshake_kind(hs),
		    hshake_who(hs, who, sizeof who), hs->res.version);
	return HSHAKE_WELCOMED;
}

/* HELLO: a version both speak, then CHALLENGE, and WELCOME without a key. */
static int
hshake_hello(struct hshake *hs, const struct frame_hdr *h, const uint8_t *p,
    struct evbuffer *out)
{
	const struct hshake_conf *cf = hs->conf;
	struct msg_hello m;
	struct msg_challenge ch;
	struct pw w;
	uint16_t vmin = hshake_vmin(hs), vmax = hshake_vmax(hs);
	int auth = (cf->keys != NULL && cf->keys->n > 0) ||
	    (cf->key != NULL && cf->key->set);

	if (msg_hello_dec(p, h->len, &m) == -1)
		return hshake_fail(hs, out, h->id, PERR_MALFORMED,
		    "bad HELLO");
	hshake_name(hs->res.name, m.name);
	if (m.vmax < vmin || m.vmin > vmax)
		return hshake_fail(hs, out, h->id, PERR_VERSION,
		    "%s speaks %u to %u, %s %u to %u", hshake_kind(hs),
		    m.vmin, m.vmax, cf->self_kind ? cf->self_kind : "server",
		    vmin, vmax);
	if (cf->draining)
		return hshake_fail(hs, out, h->id, PERR_SHUTDOWN,
		    "not accepting new %ss", hshake_kind(hs));
	/* A session that resumes has its slot already. */
	if (cf->full && !(m.features & FEAT_RESUMING))
		return hshake_fail(hs, out, h->id, PERR_BUSY,
		    "too many %ss", hshake_kind(hs));
	hs->res.features = m.features;
	if (m.features & FEAT_RESUMING) {
		hs->res.session = m.session;
		memcpy(hs->res.token, m.token, sizeof hs->res.token);
	}
	hs->res.version = m.vmax < vmax ? m.vmax : vmax;
	memcpy(hs->res.cnonce, m.nonce, sizeof hs->res.cnonce);
	auth_nonce(hs->res.snonce);
	/* A reload may change the limit; this peer keeps the one it got. */
	hs->res.max_frame = cf->max_frame;

	memset(&ch, 0, sizeof ch);
	ch.version = hs->res.version;
	ch.auth = auth ? AUTH_HMAC_SHA256 : AUTH_NONE;
	memcpy(ch.nonce, hs->res.snonce, sizeof ch.nonce);
	snprintf(ch.name, sizeof ch.name, "%s", cf->name ? cf->name : "");
	ch.max_frame = hs->res.max_frame;
	pw_init(&w);
	msg_challenge_enc(&w, &ch);
	if (w.bad) {
		pw_free(&w);
		return hshake_fail(hs, out, h->id, PERR_INTERNAL,
		    "out of memory");
	}
	hshake_pw(hs, out, MSG_CHALLENGE, h->id, &w);
	if (auth) {
		hs->state = HSHAKE_S_AUTH;
		return HSHAKE_OK;
	}
	return hshake_welcome(hs, out, h->id);
}

/*
 * AUTH: the proof over both nonces, against the key of the identity it
 * names (auth_keys_find), compared in constant time.  An unknown name is
 * checked against a dummy key, so that it fails as a wrong key does: the
 * same answer after the same work; only our log tells them apart.
 */
static int
hshake_auth(struct hshake *hs, const struct frame_hdr *h, const uint8_t *p,
    struct evbuffer *out)
{
	const struct hshake_conf *cf = hs->conf;
	const struct auth_key *k;
	struct auth_keys one;
	struct msg_auth m;
	uint8_t expect[PROTO_PROOF_LEN];
	char who[sizeof hs->peer + PROTO_NAME_MAX + 4];
	char shown[PROTO_NAME_MAX + 1];
	int known;

	if (msg_auth_dec(p, h->len, &m) == -1)
		return hshake_fail(hs, out, h->id, PERR_MALFORMED,
		    "bad AUTH");
	if (cf->keys != NULL && cf->keys->n > 0)
		k = auth_keys_find(cf->keys, m.ident, &known);
	else {
		/* One key: the one identity, whatever the name. */
		memset(&one, 0, sizeof one);
		one.v = (struct auth_key *)cf->key;
		one.n = 1;
		k = auth_keys_find(&one, m.ident, &known);
	}
	auth_proof(k, 0, hs->res.version, hs->res.cnonce, hs->res.snonce,
	    expect);
	if ((auth_equal(expect, m.proof) != 0) | !known) {
		hshake_name(shown, m.ident[0] ? m.ident : AUTH_DEFAULT);
		log_warn("%s %s: %s %s", hshake_kind(hs),
		    hshake_who(hs, who, sizeof who), known ?
		    "wrong key for identity" : "unknown identity", shown);
		return hshake_fail(hs, out, h->id, PERR_AUTH, "wrong key");
	}
	hs->res.key = *k;
	snprintf(hs->res.ident, sizeof hs->res.ident, "%s",
	    k->name[0] ? k->name : AUTH_DEFAULT);
	hs->res.authed = 1;
	return hshake_welcome(hs, out, h->id);
}

int
hshake_input(struct hshake *hs, const struct frame_hdr *h, const uint8_t *p,
    struct evbuffer *out)
{
	switch (hs->state) {
	case HSHAKE_S_HELLO:
	case HSHAKE_S_AUTH:
		if (h->flags != 0)
			return hshake_fail(hs, out, h->id, PERR_MALFORMED,
			    "unexpected flags 0x%x", h->flags);
		if (hs->state == HSHAKE_S_HELLO) {
			if (h->type != MSG_HELLO)
				return hshake_fail(hs, out, h->id, PERR_STATE,
				    "expected HELLO, got %s",
				    hshake_type(hs, h->type));
			return hshake_hello(hs, h, p, out);
		}
		/* Anything but the proof is a failure to give it. */
		if (h->type != MSG_AUTH)
			return hshake_fail(hs, out, h->id, PERR_AUTH,
			    "expected AUTH, got %s", hshake_type(hs, h->type));
		return hshake_auth(hs, h, p, out);
	case HSHAKE_S_DONE:
		switch (h->type) {
		case MSG_HELLO:
		case MSG_CHALLENGE:
		case MSG_AUTH:
		case MSG_WELCOME:
			return hshake_fail(hs, out, h->id, PERR_STATE,
			    "%s after the handshake",
			    hshake_type(hs, h->type));
		}
		return HSHAKE_PASS;
	case HSHAKE_S_FAILED:
		break;
	}
	return HSHAKE_CLOSE;
}

void
hshake_timeout(struct hshake *hs, struct evbuffer *out)
{
	char who[sizeof hs->peer + PROTO_NAME_MAX + 4];

	if (hs->state == HSHAKE_S_DONE || hs->state == HSHAKE_S_FAILED)
		return;
	log_info("%s %s: handshake timed out, closing", hshake_kind(hs),
	    hshake_who(hs, who, sizeof who));
	hshake_error(hs, out, 0, PERR_TIMEOUT,
	    "handshake not finished in time");
	hs->state = HSHAKE_S_FAILED;
}
