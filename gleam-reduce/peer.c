/* A worker connection: handshake, then frames for the aggregator. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "agg.h"
#include "hreduce_wire.h"
#include "hshake.h"
#include "log.h"
#include "peer.h"
#include "proto.h"

enum pstate {
	P_HANDSHAKE,	/* lib/common/hshake.c has it */
	P_READY,	/* handshake done: a member of the aggregator */
	P_CLOSED	/* nothing more is read */
};

struct peer {
	const struct peer_env *env;
	enum pstate	 state;
	int		 mute;		/* a record did not open: send nothing */
	struct evbuffer	*out;		/* the socket's: records after WELCOME */
	struct evbuffer	*plain;		/* frames for out, until peer_flush */
	struct agg_member *member;
	struct hshake	 hs;
	char		 name[PROTO_NAME_MAX + 1 + 80];	/* "name (addr)" */
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
	p->state = P_HANDSHAKE;
	if ((p->plain = evbuffer_new()) == NULL) {
		free(p);
		return NULL;
	}
	hshake_init(&p->hs, &env->hs, addr, peer_next_session++);
	snprintf(p->name, sizeof p->name, "%s", addr);
	return p;
}

void
peer_free(struct peer *p)
{
	if (p == NULL)
		return;
	agg_member_free(p->env->agg, p->member);
	hshake_fini(&p->hs);
	evbuffer_free(p->plain);
	free(p);
}

int
peer_flush(struct peer *p)
{
	if (p->mute) {
		evbuffer_drain(p->plain, evbuffer_get_length(p->plain));
		return 0;
	}
	if (evbuffer_get_length(p->plain) == 0)
		return 0;
	if (hshake_seal(&p->hs, p->plain, p->out) == -1) {
		log_warn("worker %s: out of memory sealing its frames",
		    p->name);
		p->mute = 1;
		return -1;
	}
	return 0;
}

/*
 * The socket's buffer, for a frame the handshake writes there itself:
 * what the aggregator queued goes first, in order.
 */
static struct evbuffer *
peer_out(struct peer *p)
{
	(void)peer_flush(p);
	return p->out;
}

int peer_ready(const struct peer *p) { return p->state == P_READY; }
const char *peer_name(const struct peer *p) { return p->name; }


/* ERROR, then the end: the peer leaves its group first. */
static int
peer_error(struct peer *p, uint32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
peer_error(struct peer *p, uint32_t code, const char *fmt, ...)
{
	struct msg_error e;
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
	hshake_error(&p->hs, peer_out(p), 0, code, e.text);
	p->state = P_CLOSED;
	return PEER_CLOSE;
}

/* Joins the aggregator once the handshake is done. */
static int
peer_welcomed(struct peer *p)
{
	const struct hshake_result *r = &p->hs.res;

	snprintf(p->name, sizeof p->name, "%s (%s)", r->name[0] ? r->name :
	    "worker", p->hs.peer);
	if ((p->member = agg_member_new(p->env->agg, p->plain, p->name)) ==
	    NULL)
		return peer_error(p, PERR_INTERNAL, "out of memory");
	p->state = P_READY;
	return PEER_OK;
}

static int
peer_dispatch(struct peer *p, const struct frame_hdr *h, const uint8_t *b)
{
	char err[512];

	if (p->state == P_CLOSED)
		return PEER_CLOSE;
	switch (hshake_input(&p->hs, h, b, peer_out(p))) {
	case HSHAKE_OK:
		return PEER_OK;
	case HSHAKE_WELCOMED:
		return peer_welcomed(p);
	case HSHAKE_PASS:
		break;
	default:
		/* The ERROR is queued: leave the group before it goes. */
		agg_member_free(p->env->agg, p->member);
		p->member = NULL;
		p->state = P_CLOSED;
		return PEER_CLOSE;
	}
	if (h->flags != 0)
		return peer_error(p, PERR_MALFORMED, "unexpected flags 0x%x",
		    h->flags);
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

/*
 * The whole frames of in; PEER_CLOSE, PEER_OK, or -1 when WELCOME went
 * out while in was the socket's buffer: what follows there is records.
 */
static int
peer_frames(struct peer *p, struct evbuffer *in, struct evbuffer *raw)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	const uint8_t *b;
	size_t avail;
	int rc;

	while (p->state != P_CLOSED) {
		if (in == raw && hshake_done(&p->hs))
			return -1;
		avail = evbuffer_get_length(in);
		if (avail < PROTO_HDR_LEN)
			return PEER_OK;
		evbuffer_copyout(in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		if (hshake_header(&p->hs, &h, peer_out(p)) == HSHAKE_CLOSE) {
			agg_member_free(p->env->agg, p->member);
			p->member = NULL;
			p->state = P_CLOSED;
			return PEER_CLOSE;
		}
		if (avail < PROTO_HDR_LEN + (size_t)h.len)
			return PEER_OK;
		if (h.type == HR_MSG_CHUNK && h.flags == 0 &&
		    p->state == P_READY && h.len >= HR_CHUNK_HDR) {
			/*
			 * The bytes of a chunk, a MiB or more, are merged or
			 * copied from where the opened records left them.
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

int
peer_input(struct peer *p, struct evbuffer *raw)
{
	struct evbuffer *in;
	int rc;

	while (p->state != P_CLOSED) {
		if ((in = hshake_open(&p->hs, raw)) == NULL) {
			/* Forged or cut: nothing more goes to it. */
			p->mute = 1;
			agg_member_free(p->env->agg, p->member);
			p->member = NULL;
			p->state = P_CLOSED;
			evbuffer_drain(raw, evbuffer_get_length(raw));
			return PEER_CLOSE;
		}
		if ((rc = peer_frames(p, in, raw)) != -1)
			return rc;
	}
	return PEER_CLOSE;
}

/* The handshake timer fired: ERROR 10; the server closes after it. */
void
peer_timeout(struct peer *p)
{
	if (p->state != P_HANDSHAKE)
		return;
	hshake_timeout(&p->hs, p->out);
	p->state = P_CLOSED;
}
