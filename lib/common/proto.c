/* Frame headers and payload codecs of the wire protocol. */
#include <sys/types.h>
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, v & 0xffffffffu);
	put32(p + 4, v >> 32);
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t
get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void
proto_hdr_encode(uint8_t *b, const struct frame_hdr *h)
{
	put32(b, h->len);
	put16(b + 4, h->type);
	put16(b + 6, h->flags);
	put64(b + 8, h->id);
}

void
proto_hdr_decode(const uint8_t *b, struct frame_hdr *h)
{
	h->len = get32(b);
	h->type = get16(b + 4);
	h->flags = get16(b + 6);
	h->id = get64(b + 8);
}

const char *
proto_type_name(uint16_t t)
{
	switch (t) {
	case MSG_HELLO: return "HELLO";
	case MSG_CHALLENGE: return "CHALLENGE";
	case MSG_AUTH: return "AUTH";
	case MSG_WELCOME: return "WELCOME";
	case MSG_ERROR: return "ERROR";
	case MSG_BYE: return "BYE";
	case MSG_ECHO: return "ECHO";
	case MSG_STATUS: return "STATUS";
	case MSG_BULK_DATA: return "BULK_DATA";
	case MSG_BULK_END: return "BULK_END";
	case MSG_BULK_GET: return "BULK_GET";
	case MSG_OUTPUT: return "OUTPUT";
	case MSG_MIG_STATE: return "MIG_STATE";
	case MSG_MIG_MEM: return "MIG_MEM";
	case MSG_MIG_END: return "MIG_END";
	case MSG_REDIRECT: return "REDIRECT";
	case MSG_MIGRATE_ONE: return "MIGRATE_ONE";
	case MSG_HOST: return "HOST";
	}
	return t >= MSG_REMOTE_FIRST ? "REMOTE" : "unknown";
}

const char *
proto_err_name(uint32_t e)
{
	switch (e) {
	case PERR_VERSION: return "no common protocol version";
	case PERR_AUTH: return "authentication failed";
	case PERR_MALFORMED: return "malformed message";
	case PERR_TOOBIG: return "frame too large";
	case PERR_UNKNOWN: return "unknown message type";
	case PERR_STATE: return "message not allowed now";
	case PERR_BUSY: return "server busy";
	case PERR_SHUTDOWN: return "server shutting down";
	case PERR_INTERNAL: return "internal server error";
	case PERR_TIMEOUT: return "timed out";
	case PERR_AGAIN: return "server busy for a moment";
	case PERR_NOSESSION: return "no such session";
	}
	return "unknown error";
}

void
pr_init(struct pr *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->off = 0;
	r->bad = 0;
}

const void *
pr_take(struct pr *r, size_t n)
{
	const void *p;

	if (r->bad || n > r->len - r->off) {
		r->bad = 1;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

uint8_t
pr_u8(struct pr *r)
{
	const uint8_t *p = pr_take(r, 1);
	return p != NULL ? p[0] : 0;
}

uint16_t
pr_u16(struct pr *r)
{
	const uint8_t *p = pr_take(r, 2);
	return p != NULL ? get16(p) : 0;
}

uint32_t
pr_u32(struct pr *r)
{
	const uint8_t *p = pr_take(r, 4);
	return p != NULL ? get32(p) : 0;
}

uint64_t
pr_u64(struct pr *r)
{
	const uint8_t *p = pr_take(r, 8);
	return p != NULL ? get64(p) : 0;
}

void
pr_bytes(struct pr *r, void *out, size_t n)
{
	const void *p = pr_take(r, n);

	if (p != NULL)
		memcpy(out, p, n);
	else
		memset(out, 0, n);
}

void
pr_str(struct pr *r, char *out, size_t max)
{
	uint16_t n = pr_u16(r);
	const char *p;

	out[0] = '\0';
	if (r->bad)
		return;
	if (n > max) {
		r->bad = 1;
		return;
	}
	if ((p = pr_take(r, n)) == NULL)
		return;
	if (memchr(p, '\0', n) != NULL) {
		r->bad = 1;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

int
pr_done(struct pr *r)
{
	return r->bad || r->off != r->len ? -1 : 0;
}

void
pw_init(struct pw *w)
{
	memset(w, 0, sizeof *w);
}

void
pw_free(struct pw *w)
{
	free(w->p);
	memset(w, 0, sizeof *w);
}

uint8_t *
pw_room(struct pw *w, size_t n)
{
	uint8_t *np;
	size_t cap;

	if (w->bad)
		return NULL;
	if (n > w->cap - w->len) {
		cap = w->cap ? w->cap : 64;
		while (cap - w->len < n) {
			if (cap > SIZE_MAX / 2) {
				w->bad = 1;
				return NULL;
			}
			cap *= 2;
		}
		if ((np = realloc(w->p, cap)) == NULL) {
			w->bad = 1;
			return NULL;
		}
		w->p = np;
		w->cap = cap;
	}
	np = w->p + w->len;
	w->len += n;
	return np;
}

void pw_u8(struct pw *w, uint8_t v) { uint8_t *p = pw_room(w, 1); if (p) *p = v; }
void pw_u16(struct pw *w, uint16_t v) { uint8_t *p = pw_room(w, 2); if (p) put16(p, v); }
void pw_u32(struct pw *w, uint32_t v) { uint8_t *p = pw_room(w, 4); if (p) put32(p, v); }
void pw_u64(struct pw *w, uint64_t v) { uint8_t *p = pw_room(w, 8); if (p) put64(p, v); }

void
pw_bytes(struct pw *w, const void *b, size_t n)
{
	uint8_t *p = pw_room(w, n);

	if (p != NULL && n > 0)
		memcpy(p, b, n);
}

void
pw_str(struct pw *w, const char *s)
{
	size_t n = strlen(s);

	if (n > 0xffff)
		n = 0xffff;
	pw_u16(w, (uint16_t)n);
	pw_bytes(w, s, n);
}

void
msg_hello_enc(struct pw *w, const struct msg_hello *m)
{
	pw_u32(w, m->magic);
	pw_u16(w, m->vmin);
	pw_u16(w, m->vmax);
	pw_u32(w, m->features);
	pw_bytes(w, m->nonce, sizeof m->nonce);
	pw_str(w, m->name);
	if (m->features & FEAT_RESUMING) {
		pw_u64(w, m->session);
		pw_bytes(w, m->token, sizeof m->token);
	}
}

int
msg_hello_dec(const void *p, size_t len, struct msg_hello *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->magic = pr_u32(&r);
	m->vmin = pr_u16(&r);
	m->vmax = pr_u16(&r);
	m->features = pr_u32(&r);
	pr_bytes(&r, m->nonce, sizeof m->nonce);
	pr_str(&r, m->name, PROTO_NAME_MAX);
	m->session = 0;
	memset(m->token, 0, sizeof m->token);
	if (m->features & FEAT_RESUMING) {
		m->session = pr_u64(&r);
		pr_bytes(&r, m->token, sizeof m->token);
	}
	if (pr_done(&r) == -1 || m->magic != PROTO_MAGIC || m->vmin > m->vmax)
		return -1;
	return 0;
}

void
msg_challenge_enc(struct pw *w, const struct msg_challenge *m)
{
	pw_u16(w, m->version);
	pw_u16(w, m->auth);
	pw_bytes(w, m->nonce, sizeof m->nonce);
	pw_str(w, m->name);
	pw_u32(w, m->max_frame);
}

int
msg_challenge_dec(const void *p, size_t len, struct msg_challenge *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->version = pr_u16(&r);
	m->auth = pr_u16(&r);
	pr_bytes(&r, m->nonce, sizeof m->nonce);
	pr_str(&r, m->name, PROTO_NAME_MAX);
	m->max_frame = pr_u32(&r);
	if (pr_done(&r) == -1 || m->auth > AUTH_HMAC_SHA256 ||
	    m->max_frame < PROTO_MAX_FRAME_MIN ||
	    m->max_frame > PROTO_MAX_FRAME_LIMIT)
		return -1;
	return 0;
}

void
msg_auth_enc(struct pw *w, const struct msg_auth *m)
{
	pw_bytes(w, m->proof, sizeof m->proof);
	if (m->ident[0] != '\0')
		pw_str(w, m->ident);
}

int
msg_auth_dec(const void *p, size_t len, struct msg_auth *m)
{
	struct pr r;

	pr_init(&r, p, len);
	pr_bytes(&r, m->proof, sizeof m->proof);
	m->ident[0] = '\0';
	if (!r.bad && r.off < r.len) {
		pr_str(&r, m->ident, PROTO_IDENT_MAX);
		if (m->ident[0] == '\0')
			return -1;	/* written as no identity */
	}
	return pr_done(&r);
}

void
msg_welcome_enc(struct pw *w, const struct msg_welcome *m)
{
	pw_u16(w, m->has_proof);
	pw_bytes(w, m->proof, sizeof m->proof);
	pw_u64(w, m->session);
	if (m->features == 0)
		return;
	pw_u32(w, m->features);
	if (m->features & FEAT_RESUME) {
		pw_bytes(w, m->token, sizeof m->token);
		pw_u32(w, m->resume_ms);
	}
}

int
msg_welcome_dec(const void *p, size_t len, struct msg_welcome *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->has_proof = pr_u16(&r);
	pr_bytes(&r, m->proof, sizeof m->proof);
	m->session = pr_u64(&r);
	m->features = 0;
	memset(m->token, 0, sizeof m->token);
	m->resume_ms = 0;
	if (!r.bad && r.off < r.len) {
		/* A tail says something: features 0 is written as none. */
		if ((m->features = pr_u32(&r)) == 0)
			r.bad = 1;
		if (m->features & FEAT_RESUME) {
			pr_bytes(&r, m->token, sizeof m->token);
			m->resume_ms = pr_u32(&r);
		}
	}
	if (pr_done(&r) == -1 || m->has_proof > 1 ||
	    (m->features & ~(uint32_t)(FEAT_RESUME | FEAT_RESUMING |
	    FEAT_NAMES | FEAT_MOVED)) != 0 || ((m->features & FEAT_MOVED) &&
	    !(m->features & FEAT_RESUMING)))
		return -1;
	return 0;
}

void
proto_lane_hello_enc(uint8_t *out, uint32_t idx, const uint8_t *token)
{
	struct pw w;

	pw_init(&w);
	pw_u32(&w, PROTO_LANE_MAGIC);
	pw_u32(&w, idx);
	pw_bytes(&w, token, PROTO_LANE_TOKEN);
	if (!w.bad && w.len == PROTO_LANE_HELLO)
		memcpy(out, w.p, PROTO_LANE_HELLO);
	else
		memset(out, 0, PROTO_LANE_HELLO);
	pw_free(&w);
}

int
proto_lane_hello_dec(const void *p, size_t len, const uint8_t *token,
    uint32_t nlanes, uint32_t *idx)
{
	uint8_t got[PROTO_LANE_TOKEN], diff = 0;
	uint32_t magic;
	struct pr r;
	size_t i;

	pr_init(&r, p, len);
	magic = pr_u32(&r);
	*idx = pr_u32(&r);
	pr_bytes(&r, got, sizeof got);
	if (pr_done(&r) == -1)
		return -1;
	/* The whole token is compared whatever differs first. */
	for (i = 0; i < PROTO_LANE_TOKEN; i++)
		diff |= (uint8_t)(got[i] ^ token[i]);
	if (magic != PROTO_LANE_MAGIC || *idx >= nlanes || diff != 0)
		return -1;
	return 0;
}

void
proto_lane_rhello_enc(uint8_t *out, const struct lane_rhello *h)
{
	struct pw w;

	pw_init(&w);
	pw_u32(&w, PROTO_LANE_RMAGIC);
	pw_u32(&w, h->idx);
	pw_u32(&w, h->epoch);
	pw_u32(&w, 0);
	pw_u64(&w, h->session);
	pw_bytes(&w, h->token, PROTO_LANE_TOKEN);
	if (!w.bad && w.len == PROTO_LANE_RHELLO)
		memcpy(out, w.p, PROTO_LANE_RHELLO);
	else
		memset(out, 0, PROTO_LANE_RHELLO);
	pw_free(&w);
}

int
proto_lane_rhello_dec(const void *p, size_t len, struct lane_rhello *h)
{
	uint32_t magic, zero;
	struct pr r;

	pr_init(&r, p, len);
	magic = pr_u32(&r);
	h->idx = pr_u32(&r);
	h->epoch = pr_u32(&r);
	zero = pr_u32(&r);
	h->session = pr_u64(&r);
	pr_bytes(&r, h->token, sizeof h->token);
	if (pr_done(&r) == -1 || magic != PROTO_LANE_RMAGIC || zero != 0 ||
	    h->idx >= PROTO_LANES_MAX)
		return -1;
	return 0;
}

void
msg_error_enc(struct pw *w, const struct msg_error *m)
{
	pw_u32(w, m->code);
	pw_str(w, m->text);
}

int
msg_error_dec(const void *p, size_t len, struct msg_error *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->code = pr_u32(&r);
	pr_str(&r, m->text, sizeof m->text - 1);
	return pr_done(&r);
}

void
msg_error_put(struct pw *w, uint32_t code, const char *text)
{
	struct msg_error e;

	memset(&e, 0, sizeof e);
	e.code = code;
	snprintf(e.text, sizeof e.text, "%s", text);
	msg_error_enc(w, &e);
}

void
proto_refuse(int fd, uint32_t code, const char *text)
{
	struct frame_hdr h;
	uint8_t buf[PROTO_HDR_LEN + 600];
	struct pw w;

	pw_init(&w);
	msg_error_put(&w, code, text);
	if (!w.bad && w.len <= sizeof buf - PROTO_HDR_LEN) {
		h = (struct frame_hdr){ (uint32_t)w.len, MSG_ERROR, FL_REPLY, 0 };
		proto_hdr_encode(buf, &h);
		memcpy(buf + PROTO_HDR_LEN, w.p, w.len);
		(void)send(fd, buf, PROTO_HDR_LEN + w.len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	pw_free(&w);
	close(fd);
}

void
msg_bulk_get_enc(struct pw *w, const struct msg_bulk_get *m)
{
	pw_u64(w, m->max_bytes);
	pw_u32(w, m->duration_ms);
	pw_u32(w, m->chunk);
}

int
msg_bulk_get_dec(const void *p, size_t len, struct msg_bulk_get *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->max_bytes = pr_u64(&r);
	m->duration_ms = pr_u32(&r);
	m->chunk = pr_u32(&r);
	if (pr_done(&r) == -1 || m->chunk == 0)
		return -1;
	return 0;
}

void
msg_bulk_result_enc(struct pw *w, const struct msg_bulk_result *m)
{
	pw_u64(w, m->bytes);
	pw_u64(w, m->elapsed_ns);
}

int
msg_bulk_result_dec(const void *p, size_t len, struct msg_bulk_result *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->bytes = pr_u64(&r);
	m->elapsed_ns = pr_u64(&r);
	return pr_done(&r);
}

void
msg_output_enc(struct pw *w, const struct msg_output *m)
{
	pw_u8(w, m->stream);
	pw_u32(w, m->len);
	pw_bytes(w, m->data, m->len);
}

int
msg_output_dec(const void *p, size_t len, struct msg_output *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->stream = pr_u8(&r);
	m->len = pr_u32(&r);
	if (r.bad || (m->stream != OUTPUT_STDOUT &&
	    m->stream != OUTPUT_STDERR) || m->len == 0 ||
	    m->len > OUTPUT_MAX)
		return -1;
	m->data = pr_take(&r, m->len);
	return pr_done(&r);
}

void
msg_redirect_enc(struct pw *w, const struct msg_redirect *m)
{
	pw_str(w, m->host);
	pw_u16(w, m->port);
	pw_u64(w, m->session);
	pw_bytes(w, m->token, sizeof m->token);
}

int
msg_redirect_dec(const void *p, size_t len, struct msg_redirect *m)
{
	struct pr r;

	pr_init(&r, p, len);
	pr_str(&r, m->host, sizeof m->host - 1);
	m->port = pr_u16(&r);
	m->session = pr_u64(&r);
	pr_bytes(&r, m->token, sizeof m->token);
	if (r.bad || m->host[0] == '\0' || m->port == 0 || m->session == 0)
		return -1;
	return pr_done(&r);
}

void
msg_migrate_one_enc(struct pw *w, const struct msg_migrate_one *m)
{
	pw_u8(w, m->selector);
	if (m->selector == MIGSEL_SESSION)
		pw_u64(w, m->session);
	else
		pw_str(w, m->address);
	pw_str(w, m->host);
	pw_u16(w, m->port);
}

int
msg_migrate_one_dec(const void *p, size_t len, struct msg_migrate_one *m)
{
	struct pr r;

	memset(m, 0, sizeof *m);
	pr_init(&r, p, len);
	m->selector = pr_u8(&r);
	if (m->selector == MIGSEL_SESSION)
		m->session = pr_u64(&r);
	else if (m->selector == MIGSEL_ADDRESS)
		pr_str(&r, m->address, sizeof m->address - 1);
	else
		return -1;
	pr_str(&r, m->host, sizeof m->host - 1);
	m->port = pr_u16(&r);
	if (r.bad || m->host[0] == '\0' || m->port == 0)
		return -1;
	if (m->selector == MIGSEL_SESSION ? m->session == 0 :
	    m->address[0] == '\0')
		return -1;
	return pr_done(&r);
}

void
msg_mig_end_enc(struct pw *w, const struct msg_mig_end *m)
{
	pw_u64(w, m->tx_bytes);
	pw_u64(w, m->rx_bytes);
	pw_u64(w, m->peer_ack);
	pw_u64(w, m->acked);
	pw_u64(w, m->keep_base);
	pw_bytes(w, m->keep, (size_t)(m->tx_bytes - m->keep_base));
	pw_u32(w, m->npending);
	pw_bytes(w, m->pending, m->npending);
}

int
msg_mig_end_dec(const void *p, size_t len, struct msg_mig_end *m)
{
	struct pr r;

	pr_init(&r, p, len);
	m->tx_bytes = pr_u64(&r);
	m->rx_bytes = pr_u64(&r);
	m->peer_ack = pr_u64(&r);
	m->acked = pr_u64(&r);
	m->keep_base = pr_u64(&r);
	/* The client acknowledged no more than was sent, and what it did
	 * not is kept; we acknowledged no more than we received. */
	if (r.bad || m->keep_base > m->tx_bytes || m->peer_ack > m->keep_base ||
	    m->acked > m->rx_bytes || m->tx_bytes - m->keep_base > MIG_KEEP_MAX)
		return -1;
	m->keep = pr_take(&r, (size_t)(m->tx_bytes - m->keep_base));
	m->npending = pr_u32(&r);
	m->pending = pr_take(&r, m->npending);
	if (r.bad)
		return -1;
	return pr_done(&r);
}
