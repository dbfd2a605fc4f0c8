/* The per-client protocol state machine of gleam-serve. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "hshake.h"
#include "log.h"
#include "proto.h"
#include "session.h"
#include "util.h"


#define BULK_SRC_LEN	(1u << 20)
#define FILL_TARGET	(2u << 20)	/* bytes queued per session_fill */
#define BULK_CHUNK_MIN	512

struct session {
	const struct session_env *env;
	struct hshake	 hs;		/* what it agreed: hs.res */
	int		 closed;	/* refused or said BYE: nothing more
					   is read */

	/* BULK_DATA being received. */
	uint64_t	 rx_bytes;
	uint64_t	 rx_first, rx_last;

	/* BULK_GET being sent. */
	int		 tx_active;
	uint64_t	 tx_id;
	uint64_t	 tx_left;
	uint64_t	 tx_deadline;
	uint64_t	 tx_start;
	uint64_t	 tx_sent;
	uint32_t	 tx_chunk;
};

static uint64_t session_next_id = 1;
/* Bytes streamed by BULK_GET: random, so that no link compresses them. */
static uint8_t *bulk_src;

static void
bulk_src_init(void)
{
	uint64_t x = 0x9e3779b97f4a7c15u;
	size_t i;

	if (bulk_src != NULL || (bulk_src = malloc(BULK_SRC_LEN)) == NULL)
		return;
	for (i = 0; i < BULK_SRC_LEN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bulk_src[i] = (uint8_t)x;
	}
}

struct session *
session_new(const struct session_env *env, const char *peer)
{
	struct session *s;

	bulk_src_init();
	if ((s = calloc(1, sizeof *s)) == NULL)
		return NULL;
	s->env = env;
	hshake_init(&s->hs, &env->hs, peer, session_next_id++);
	return s;
}

void
session_free(struct session *s)
{
	if (s == NULL)
		return;
	hshake_fini(&s->hs);
	free(s);
}

struct hshake *session_hshake(struct session *s) { return &s->hs; }

int session_ready(const struct session *s) { return hshake_done(&s->hs); }
int
session_busy(const struct session *s)
{
	/* Sending a BULK_GET stream, or receiving BULK_DATA until BULK_END. */
	return s->tx_active || s->rx_bytes > 0;
}

const char *session_client_name(const struct session *s) { return s->hs.res.name; }
const char *
session_ident(const struct session *s)
{
	return hshake_done(&s->hs) && s->hs.res.authed ? s->hs.res.ident : "";
}

const char *session_peer(const struct session *s) { return s->hs.peer; }
uint64_t session_id(const struct session *s) { return s->hs.res.session; }

static void
session_frame(struct session *s, struct evbuffer *out, uint16_t type,
    uint16_t flags, uint64_t id, const void *p, size_t len)
{
	hshake_frame(&s->hs, out, type, flags, id, p, len);
}

static void
session_pw(struct session *s, struct evbuffer *out, uint16_t type,
    uint16_t flags, uint64_t id, struct pw *w)
{
	if (!w->bad)
		session_frame(s, out, type, flags, id, w->p, w->len);
	pw_free(w);
}

/* Sends ERROR; fatal errors also end the session.  Returns the rc to use. */
static int
session_error(struct session *s, struct evbuffer *out, uint64_t id,
    uint32_t code, int fatal_err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static int
session_error(struct session *s, struct evbuffer *out, uint64_t id,
    uint32_t code, int fatal_err, const char *fmt, ...)
{
	struct msg_error e;
	struct pw w;
	va_list ap;

	memset(&e, 0, sizeof e);
	e.code = code;
	va_start(ap, fmt);
	vsnprintf(e.text, sizeof e.text, fmt, ap);
	va_end(ap);
	log_info("client %s: %s: %s%s", s->hs.peer, proto_err_name(code), e.text,
	    fatal_err ? ", closing" : "");
	pw_init(&w);
	msg_error_enc(&w, &e);
	session_pw(s, out, MSG_ERROR, FL_REPLY, id, &w);
	if (fatal_err) {
		s->closed = 1;
		s->tx_active = 0;
		return SESSION_CLOSE;
	}
	return SESSION_OK;
}

static int
session_bulk_get(struct session *s, const struct frame_hdr *h,
    const uint8_t *p, struct evbuffer *out)
{
	struct msg_bulk_get m;

	if (msg_bulk_get_dec(p, h->len, &m) == -1)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "bad BULK_GET");
	if (s->tx_active)
		return session_error(s, out, h->id, PERR_STATE, 1,
		    "BULK_GET while one is running");
	if (m.chunk > s->hs.res.max_frame || m.chunk > BULK_SRC_LEN)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "chunk of %u bytes too large", m.chunk);
	/* Tiny chunks would cost us a frame header per byte or so. */
	if (m.chunk < BULK_CHUNK_MIN)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "chunk of %u bytes below %u", m.chunk, BULK_CHUNK_MIN);
	if (m.duration_ms > 600000)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "duration over 10 minutes");
	s->tx_active = 1;
	s->tx_id = h->id;
	s->tx_left = m.max_bytes;
	s->tx_chunk = m.chunk;
	s->tx_start = now_ns();
	s->tx_deadline = s->tx_start + (uint64_t)m.duration_ms * 1000000u;
	s->tx_sent = 0;
	session_fill(s, out);
	return SESSION_OK;
}

int
session_fill(struct session *s, struct evbuffer *out)
{
	struct msg_bulk_result r;
	struct pw w;
	size_t queued = 0;
	uint32_t n;

	if (!s->tx_active)
		return 0;
	struct evbuffer *plain = evbuffer_new();

	if (plain == NULL)
		return 1;	/* again when the output drains */
	while (s->tx_left > 0 && now_ns() < s->tx_deadline &&
	    queued < FILL_TARGET) {
		n = s->tx_left < s->tx_chunk ? (uint32_t)s->tx_left :
		    s->tx_chunk;
		/* The payload is referenced, not copied (but sealed). */
		struct frame_hdr fh = { n, MSG_BULK_DATA, FL_REPLY, s->tx_id };
		uint8_t hb[PROTO_HDR_LEN];

		proto_hdr_encode(hb, &fh);
		evbuffer_add(plain, hb, sizeof hb);
		evbuffer_add_reference(plain, bulk_src, n, NULL, NULL);
		/*
		 * A record a frame: the client sees each as it comes, as it
		 * would the frames alone, so that its clock starts with the
		 * first (a record is whole before any of it is used).
		 */
		(void)hshake_seal(&s->hs, plain, out);
		s->tx_left -= n;
		s->tx_sent += n;
		queued += n + PROTO_HDR_LEN;
	}
	evbuffer_free(plain);
	if (s->tx_left > 0 && now_ns() < s->tx_deadline)
		return 1;
	memset(&r, 0, sizeof r);
	r.bytes = s->tx_sent;
	r.elapsed_ns = now_ns() - s->tx_start;
	pw_init(&w);
	msg_bulk_result_enc(&w, &r);
	session_pw(s, out, MSG_BULK_END, FL_REPLY, s->tx_id, &w);
	s->tx_active = 0;
	return 0;
}

/* MIGRATE_ONE: an admin's order to move one client's session. */
static int
session_migrate_one(struct session *s, const struct frame_hdr *h,
    const uint8_t *p, struct evbuffer *out)
{
	struct msg_migrate_one m;
	char why[400];
	struct pw w;
	int code;

	if (msg_migrate_one_dec(p, h->len, &m) == -1)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "MIGRATE_ONE does not decode (a selector of 1 or 2, a "
		    "session or address, a target host and port)");
	if (s->env->migrate == NULL)
		return session_error(s, out, h->id, PERR_UNKNOWN, 0,
		    "this server moves no sessions");
	why[0] = '\0';
	if ((code = s->env->migrate(s->env->arg, s, &m, why,
	    sizeof why)) != 0)
		return session_error(s, out, h->id, (uint32_t)code,
		    code != PERR_NOSESSION, "%s", why);
	pw_init(&w);
	pw_u32(&w, 0);
	session_pw(s, out, MSG_MIGRATE_ONE, FL_REPLY, h->id, &w);
	return SESSION_OK;
}

static int
session_ready_msg(struct session *s, const struct frame_hdr *h,
    const uint8_t *p, struct evbuffer *out)
{
	struct msg_bulk_result r;
	struct pw w;
	char *doc;
	size_t len;
	uint64_t t;

	switch (h->type) {
	case MSG_ECHO:
		session_frame(s, out, MSG_ECHO, FL_REPLY, h->id, p, h->len);
		return SESSION_OK;
	case MSG_STATUS:
		if (h->len != 0)
			return session_error(s, out, h->id, PERR_MALFORMED, 1,
			    "STATUS takes no payload");
		if ((doc = s->env->status(s->env->arg, &s->hs.res, &len)) == NULL)
			return session_error(s, out, h->id, PERR_INTERNAL, 0,
			    "status unavailable");
		if (len > s->hs.res.max_frame) {
			free(doc);
			return session_error(s, out, h->id, PERR_INTERNAL, 0,
			    "status of %zu bytes over the frame limit", len);
		}
		session_frame(s, out, MSG_STATUS, FL_REPLY, h->id, doc, len);
		free(doc);
		return SESSION_OK;
	case MSG_BULK_DATA:
		t = now_ns();
		if (s->rx_bytes == 0)
			s->rx_first = t;
		s->rx_last = t;
		s->rx_bytes += h->len;
		return SESSION_OK;
	case MSG_BULK_END:
		if (h->len != 0)
			return session_error(s, out, h->id, PERR_MALFORMED, 1,
			    "BULK_END takes no payload");
		r.bytes = s->rx_bytes;
		r.elapsed_ns = s->rx_bytes ? s->rx_last - s->rx_first : 0;
		s->rx_bytes = 0;
		pw_init(&w);
		msg_bulk_result_enc(&w, &r);
		session_pw(s, out, MSG_BULK_END, FL_REPLY, h->id, &w);
		return SESSION_OK;
	case MSG_BULK_GET:
		return session_bulk_get(s, h, p, out);
	case MSG_MIGRATE_ONE:
		return session_migrate_one(s, h, p, out);
	case MSG_BYE:
		s->closed = 1;
		return SESSION_CLOSE;
	case MSG_ERROR:
		log_info("client %s (%s): sent an error, closing", s->hs.peer,
		    s->hs.res.name);
		s->closed = 1;
		return SESSION_CLOSE;
	}
	return session_error(s, out, h->id, PERR_UNKNOWN, 0,
	    "message type %u", h->type);
}

/* One whole frame: the handshake's, or a request once it is done. */
static int
session_dispatch(struct session *s, const struct frame_hdr *h,
    const uint8_t *p, struct evbuffer *out)
{
	switch (hshake_input(&s->hs, h, p, out)) {
	case HSHAKE_OK:
		return SESSION_OK;
	case HSHAKE_WELCOMED:
		/* Nothing more is read here: the session's worker reads on. */
		return s->hs.res.resuming ? SESSION_RESUME : SESSION_OK;
	case HSHAKE_PASS:
		break;
	default:
		s->closed = 1;
		return SESSION_CLOSE;
	}
	if (h->flags != 0)
		return session_error(s, out, h->id, PERR_MALFORMED, 1,
		    "unexpected flags 0x%x", h->flags);
	return session_ready_msg(s, h, p, out);
}

int
session_input(struct session *s, struct evbuffer *raw, struct evbuffer *out)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	struct evbuffer *in;
	const uint8_t *p;
	size_t avail;
	int rc;

	while (!s->closed) {
		/* The socket's bytes before WELCOME, the records' after. */
		if ((in = hshake_open(&s->hs, raw)) == NULL) {
			s->closed = 1;
			s->tx_active = 0;
			return SESSION_CLOSE;
		}
		avail = evbuffer_get_length(in);
		if (avail < PROTO_HDR_LEN)
			return SESSION_OK;
		evbuffer_copyout(in, hb, sizeof hb);
		proto_hdr_decode(hb, &h);
		if (hshake_header(&s->hs, &h, out) == HSHAKE_CLOSE) {
			s->closed = 1;
			s->tx_active = 0;
			return SESSION_CLOSE;
		}
		/* A migrated session's state comes to a worker too. */
		if (hshake_done(&s->hs) && (h.type >= MSG_REMOTE_FIRST ||
		    h.type == MSG_MIG_STATE)) {
			if (s->env->remote_ok)
				return SESSION_REMOTE;
			return session_error(s, out, h.id, PERR_UNKNOWN, 1,
			    "this server runs no CUDA backend (%s)",
			    s->env->remote_why);
		}
		if (avail < PROTO_HDR_LEN + (size_t)h.len)
			return SESSION_OK;
		if (h.type == MSG_BULK_DATA && hshake_done(&s->hs) &&
		    h.flags == 0) {
			/* Counted and dropped without a copy. */
			evbuffer_drain(in, PROTO_HDR_LEN + (size_t)h.len);
			rc = session_ready_msg(s, &h, NULL, out);
		} else {
			p = evbuffer_pullup(in, PROTO_HDR_LEN + (ssize_t)h.len);
			if (p == NULL)
				return session_error(s, out, h.id,
				    PERR_INTERNAL, 1, "out of memory");
			rc = session_dispatch(s, &h, p + PROTO_HDR_LEN, out);
			evbuffer_drain(in, PROTO_HDR_LEN + (size_t)h.len);
		}
		if (rc == SESSION_CLOSE || rc == SESSION_RESUME)
			return rc;
	}
	return SESSION_CLOSE;
}

/* The handshake timer fired: ERROR 10; the server closes after it. */
void
session_timeout(struct session *s, struct evbuffer *out)
{
	hshake_timeout(&s->hs, out);
	s->closed = 1;
}
