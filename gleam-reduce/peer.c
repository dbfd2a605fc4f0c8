/* A worker connection: handshake, then frames for the aggregator. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "agg.h"
#include "hreduce_wire.h"
#include "log.h"
#include "peer.h"
#include "proto.h"

enum pstate {
	P_HELLO,	/* waiting for HELLO */
	P_AUTH,		/* CHALLENGE sent, waiting for AUTH */
	P_READY,	/* handshake done: a member of the aggregator */
	P_CLOSED	/* nothing more is read */
};

struct peer {
	const struct peer_env *env;
	enum pstate	 state;
	struct evbuffer	*out;
	struct agg_member *member;
	char		 addr[64];
	char		 name[PROTO_NAME_MAX + 1 + 80];	/* "name (addr)" */
	uint16_t	 version;
	uint8_t		 nonce[PROTO_NONCE_LEN];
	uint8_t		 cnonce[PROTO_NONCE_LEN];
};

static uint64_t peer_next_session = 1;

struct peer *
peer_new(const struct peer_env *env, const char *addr, struct evbuffer *out)
{
	struct peer *p;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	p->env = env;
	p->out = out;
	p->state = P_HELLO;
	snprintf(p->addr, sizeof p->addr, "%s", addr);
	snprintf(p->name, sizeof p->name, "%s", addr);
	return p;
}

void
peer_free(struct peer *p)
{
	if (p == NULL)
		return;
	agg_member_free(p->env->agg, p->member);
	free(p);
}

int peer_ready(const struct peer *p) { return p->state == P_READY; }
const char *peer_name(const struct peer *p) { return p->name; }

static void
peer_frame(struct peer *p, uint16_t type, uint16_t flags, struct pw *w)
{
	struct frame_hdr h = { 0, type, flags, 0 };
	uint8_t hb[PROTO_HDR_LEN];

	if (!w->bad) {
		h.len = (uint32_t)w->len;
		proto_hdr_encode(hb, &h);
		evbuffer_add(p->out, hb, sizeof hb);
		evbuffer_add(p->out, w->p, w->len);
	}
	pw_free(w);
}

/* ERROR, then the end: the peer leaves its group first. */
static int
peer_error(struct peer *p, uint32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
peer_error(struct peer *p, uint32_t code, const char *fmt, ...)
{
	struct msg_error e;
	struct pw w;
	va_list ap;

	memset(&e, 0, sizeof e);
	e.code = code;
	va_start(ap, fmt);
	vsnprintf(e.text, sizeof e.text, fmt, ap);
	va_end(ap);
	log_info("worker %s: %s: %s, closing", p->name, proto_err_name(code),
	    e.text);
	agg_member_free(p->env->agg, p->member);
	p->member = NULL;
	pw_init(&w);
	msg_error_enc(&w, &e);
	peer_frame(p, MSG_ERROR, FL_REPLY, &w);
	p->state = P_CLOSED;
	return PEER_CLOSE;
}

static int
peer_welcome(struct peer *p, int with_proof)
{
	struct msg_welcome wel;
	struct pw w;

	if ((p->member = agg_member_new(p->env->agg, p->out, p->name)) ==
	    NULL)
		return peer_error(p, PERR_INTERNAL, "out of memory");
	memset(&wel, 0, sizeof wel);
	if (with_proof) {
		wel.has_proof = 1;
		auth_proof(p->env->key, 1, p->version, p->nonce, p->cnonce,
		    wel.proof);
	}
	wel.session = peer_next_session++;
	pw_init(&w);
	msg_welcome_enc(&w, &wel);
	peer_frame(p, MSG_WELCOME, FL_REPLY, &w);
	p->state = P_READY;
	log_debug("worker %s: connected", p->name);
	return PEER_OK;
}

static int
peer_hello(struct peer *p, const uint8_t *b, size_t len)
{
	struct msg_hello m;
	struct msg_challenge ch;
	struct pw w;
	int auth = p->env->key != NULL && p->env->key->set;

	if (msg_hello_dec(b, len, &m) == -1 || m.magic != PROTO_MAGIC)
		return peer_error(p, PERR_MALFORMED, "bad HELLO");
	if (m.vmax < PROTO_VERSION_MIN || m.vmin > PROTO_VERSION_MAX)
		return peer_error(p, PERR_VERSION, "worker speaks %u to %u, "
		    "aggregator %d to %d", m.vmin, m.vmax, PROTO_VERSION_MIN,
		    PROTO_VERSION_MAX);
	if (p->env->draining)
		return peer_error(p, PERR_SHUTDOWN, "not accepting workers");
	p->version = m.vmax < PROTO_VERSION_MAX ? m.vmax : PROTO_VERSION_MAX;
	memcpy(p->cnonce, m.nonce, sizeof p->cnonce);
	snprintf(p->name, sizeof p->name, "%s (%s)", m.name[0] ? m.name :
	    "worker", p->addr);
	auth_nonce(p->nonce);
	memset(&ch, 0, sizeof ch);
	ch.version = p->version;
	ch.auth = auth ? AUTH_HMAC_SHA256 : AUTH_NONE;
	memcpy(ch.nonce, p->nonce, sizeof ch.nonce);
	snprintf(ch.name, sizeof ch.name, "%s", p->env->name);
	ch.max_frame = p->env->max_frame;
	pw_init(&w);
	msg_challenge_enc(&w, &ch);
	peer_frame(p, MSG_CHALLENGE, FL_REPLY, &w);
	if (auth) {
		p->state = P_AUTH;
		return PEER_OK;
	}
	return peer_welcome(p, 0);
}

static int
peer_auth(struct peer *p, const uint8_t *b, size_t len)
{
	struct msg_auth m;
	uint8_t expect[PROTO_PROOF_LEN];

	if (msg_auth_dec(b, len, &m) == -1)
		return peer_error(p, PERR_MALFORMED, "bad AUTH");
	auth_proof(p->env->key, 0, p->version, p->cnonce, p->nonce, expect);
	if (auth_equal(expect, m.proof) != 0) {
		log_warn("worker %s: wrong key", p->name);
		return peer_error(p, PERR_AUTH, "wrong key");
	}
	return peer_welcome(p, 1);
}

static int
peer_dispatch(struct peer *p, const struct frame_hdr *h, const uint8_t *b)
{
	char err[512];

	if (h->flags != 0)
		return peer_error(p, PERR_MALFORMED, "unexpected flags 0x%x",
		    h->flags);
	switch (p->state) {
	case P_HELLO:
		if (h->type != MSG_HELLO)
			return peer_error(p, PERR_STATE, "expected HELLO, "
			    "got %s", hr_msg_name(h->type));
		return peer_hello(p, b, h->len);
	case P_AUTH:
		if (h->type != MSG_AUTH)
			return peer_error(p, PERR_AUTH, "expected AUTH, got %s",
			    hr_msg_name(h->type));
		return peer_auth(p, b, h->len);
	case P_READY:
		break;
	case P_CLOSED:
		return PEER_CLOSE;
	}
	switch (h->type) {
	case MSG_BYE:
		p->state = P_CLOSED;
		return PEER_CLOSE;
	case MSG_ERROR:
		log_info("worker %s: sent an error, closing", p->name);
		p->state = P_CLOSED;
		return PEER_CLOSE;
	case HR_MSG_JOIN:
	case HR_MSG_BEGIN:
	case HR_MSG_CHUNK:
	case HR_MSG_ABORT:
		if (agg_input(p->env->agg, p->member, h->type, b, h->len, err,
		    sizeof err) == -1)
			return peer_error(p, PERR_MALFORMED, "%s", err);
		return PEER_OK;
	}
	return peer_error(p, h->type >= HR_MSG_JOIN &&
	    h->type <= HR_MSG_ABORT ? PERR_STATE : PERR_UNKNOWN,
	    "%s (type %u) is not for the aggregator", hr_msg_name(h->type),
	    h->type);
}

int
peer_input(struct peer *p, struct evbuffer *in)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	const uint8_t *b;
	size_t avail;
	int rc;

	while (p->state != P_CLOSED) {
		avail = evbuffer_get_length(in);
		if (avail < PROTO_HDR_LEN)
			return PEER_OK;
		evbuffer_copyout(in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		if (h.len > p->env->max_frame ||
		    (p->state != P_READY && h.len > PROTO_MAX_FRAME_MIN))
			return peer_error(p, PERR_TOOBIG, "frame of %u bytes "
			    "over the limit%s", h.len, p->state != P_READY ?
			    " (not a Gleam worker?)" : "");
		if (avail < PROTO_HDR_LEN + (size_t)h.len)
			return PEER_OK;
		if (h.type == HR_MSG_CHUNK && h.flags == 0 &&
		    p->state == P_READY && h.len >= HR_CHUNK_HDR) {
			/*
			 * The bytes of a chunk, a MiB or more, are merged or
			 * copied from where the input buffer holds them.
			 */
			uint8_t ch[PROTO_HDR_LEN + HR_CHUNK_HDR];

			evbuffer_copyout(in, ch, sizeof ch);
			evbuffer_drain(in, sizeof ch);
			agg_input_chunk(p->env->agg, p->member,
			    ch + PROTO_HDR_LEN, in, h.len - HR_CHUNK_HDR);
			evbuffer_drain(in, h.len - HR_CHUNK_HDR);
			continue;
		}
		if ((b = evbuffer_pullup(in, PROTO_HDR_LEN + (ssize_t)h.len)) ==
		    NULL)
			return peer_error(p, PERR_INTERNAL, "out of memory");
		rc = peer_dispatch(p, &h, b + PROTO_HDR_LEN);
		evbuffer_drain(in, PROTO_HDR_LEN + (size_t)h.len);
		if (rc == PEER_CLOSE)
			return PEER_CLOSE;
	}
	return PEER_CLOSE;
}
