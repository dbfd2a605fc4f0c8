/* Client connections: connect, handshake, framed blocking I/O. */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "net.h"
#include "util.h"

static void
conn_free_bufs(struct conn *c)
{
	chan_fini(&c->ch);
	c->ch.on = 0;
	free(c->rbuf);
	free(c->rec);
	free(c->sbuf);
	free(c->fbuf);
	c->rbuf = c->rec = c->sbuf = c->fbuf = NULL;
	c->rcap = c->reccap = c->scap = c->fcap = 0;
	c->rpos = c->rend = 0;
}

static int
conn_fail(struct conn *c, int kind, const char *fmt, ...)
{
	va_list ap;

	c->fail = kind;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* Waits until fd is ready for events or the timeout passes. */
static int
conn_wait(struct conn *c, short events)
{
	struct pollfd pfd = { .fd = c->fd, .events = events };
	int rc;

	do
		rc = poll(&pfd, 1, c->timeout_ms);
	while (rc == -1 && errno == EINTR);
	if (rc == 0)
		return conn_fail(c, CONN_NET, "%s: timed out", c->peer);
	if (rc == -1)
		return conn_fail(c, CONN_NET, "%s: %s", c->peer,
		    strerror(errno));
	return 0;
}

static int
wire_write(struct conn *c, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		if (conn_wait(c, POLLOUT) == -1)
			return -1;
		n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return conn_fail(c, CONN_NET, "%s: %s", c->peer,
			    strerror(errno));
		}
		p += n;
		len -= (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	return 0;
}

static int
wire_read(struct conn *c, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		if (conn_wait(c, POLLIN) == -1)
			return -1;
		n = recv(c->fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return conn_fail(c, CONN_NET,
			    "%s: connection closed by server", c->peer);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return conn_fail(c, CONN_NET, "%s: %s", c->peer,
			    strerror(errno));
		}
		p += n;
		len -= (size_t)n;
		c->bytes_in += (uint64_t)n;
	}
	return 0;
}

/* Room for n bytes in buffer *b of capacity *cap. */
static int
conn_room(struct conn *c, uint8_t **b, size_t *cap, size_t n)
{
	uint8_t *nb;

	if (*cap >= n)
		return 0;
	if ((nb = realloc(*b, n)) == NULL)
		return conn_fail(c, CONN_NET, "%s: out of memory", c->peer);
	*b = nb;
	*cap = n;
	return 0;
}

/* Writes the pieces as they lie, advancing over what each send took. */
static int
wire_writev(struct conn *c, struct iovec *v, int nv)
{
	struct msghdr mh;
	size_t n;
	ssize_t k;

	while (nv > 0) {
		if (v->iov_len == 0) {
			v++;
			nv--;
			continue;
		}
		if (conn_wait(c, POLLOUT) == -1)
			return -1;
		memset(&mh, 0, sizeof mh);
		mh.msg_iov = v;
		mh.msg_iovlen = (size_t)nv;
		k = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return conn_fail(c, CONN_NET, "%s: %s", c->peer,
			    strerror(errno));
		}
		c->bytes_out += (uint64_t)k;
		for (n = (size_t)k; nv > 0 && n >= v->iov_len; v++, nv--)
			n -= v->iov_len;
		if (n > 0) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
		}
	}
	return 0;
}

int
conn_writev(struct conn *c, const struct iovec *iov, int niov)
{
	struct iovec v[CONN_IOV_MAX + 1];
	uint8_t hdr[CHAN_HDR];
	size_t left = 0, n, fill, take, off = 0;
	int i = 0, nv;

	if (niov < 0 || niov > CONN_IOV_MAX)
		return conn_fail(c, CONN_PROTO, "%s: %d pieces to write",
		    c->peer, niov);
	for (nv = 0; nv < niov; nv++)
		left += iov[nv].iov_len;
	if (!c->ch.on) {
		memcpy(v, iov, (size_t)niov * sizeof *v);
		return wire_writev(c, v, niov);
	}
	/* Records of CHAN_BODY_MAX at most; [i, off) is where we are. */
	do {
		n = left > CHAN_BODY_MAX ? CHAN_BODY_MAX : left;
		left -= n;
		if (c->ch.sealed) {
			/* The cipher's pass is the only one over the bytes. */
			if (conn_room(c, &c->sbuf, &c->scap,
			    chan_wire(&c->ch, n)) == -1)
				return -1;
			chan_seal_begin(&c->ch, c->sbuf, n);
			for (fill = 0; fill < n; fill += take) {
				take = iov[i].iov_len - off;
				if (take > n - fill)
					take = n - fill;
				chan_seal_update(&c->ch, c->sbuf + CHAN_HDR +
				    fill, (const uint8_t *)iov[i].iov_base +
				    off, take);
				if ((off += take) == iov[i].iov_len) {
					i++;
					off = 0;
				}
			}
			chan_seal_final(&c->ch, c->sbuf + CHAN_HDR + n);
			if (wire_write(c, c->sbuf, chan_wire(&c->ch, n)) == -1)
				return -1;
			continue;
		}
		/* In the clear: the header, then the pieces where they lie. */
		chan_seal_begin(&c->ch, hdr, n);
		v[0].iov_base = hdr;
		v[0].iov_len = sizeof hdr;
		for (nv = 1, fill = 0; fill < n; fill += take) {
			take = iov[i].iov_len - off;
			if (take > n - fill)
				take = n - fill;
			v[nv].iov_base = (uint8_t *)iov[i].iov_base + off;
			v[nv++].iov_len = take;
			if ((off += take) == iov[i].iov_len) {
				i++;
				off = 0;
			}
		}
		if (wire_writev(c, v, nv) == -1)
			return -1;
	} while (left > 0);
	return 0;
}

/*
 * Sends len bytes of whole frames (or the rest of one), in records once
 * the handshake is done.
 */
int
conn_write(struct conn *c, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };

	return conn_writev(c, &v, 1);
}

/* Reads and opens the next record into c->rec. */
static int
conn_record(struct conn *c)
{
	uint8_t hdr[CHAN_HDR];
	ssize_t len;
	size_t n;

	if (wire_read(c, hdr, sizeof hdr) == -1)
		return -1;
	if ((len = chan_hdr(&c->ch, hdr)) == -1)
		return conn_fail(c, CONN_PROTO, "%s: %s", c->peer, c->ch.err);
	if (conn_room(c, &c->rec, &c->reccap, CHAN_HDR + (size_t)len) == -1)
		return -1;
	memcpy(c->rec, hdr, sizeof hdr);
	if (len > 0 && wire_read(c, c->rec + CHAN_HDR, (size_t)len) == -1)
		return -1;
	if (chan_open(&c->ch, c->rec, CHAN_HDR + (size_t)len, &n) == -1)
		return conn_fail(c, CONN_PROTO, "%s: %s", c->peer, c->ch.err);
	c->rpos = CHAN_HDR;
	c->rend = CHAN_HDR + n;
	return 0;
}

/* Reads len bytes of the frame stream: out of records once they are on. */
int
conn_read(struct conn *c, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t n;

	if (!c->ch.on)
		return wire_read(c, buf, len);
	while (len > 0) {
		if (c->rpos == c->rend && conn_record(c) == -1)
			return -1;
		n = c->rend - c->rpos;
		if (n > len)
			n = len;
		memcpy(p, c->rec + c->rpos, n);
		c->rpos += n;
		p += n;
		len -= n;
	}
	return 0;
}

int
conn_send(struct conn *c, uint16_t type, uint16_t flags, uint64_t id,
    const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, flags, id };
	uint8_t hb[PROTO_HDR_LEN];

	if (len > c->max_frame)
		return conn_fail(c, CONN_PROTO, "%s: frame of %zu bytes over "
		    "the server's limit of %u", c->peer, len, c->max_frame);
	proto_hdr_encode(hb, &h);
	if (c->ch.on && len + sizeof hb <= CHAN_BODY_MAX) {
		/* One record for a frame that fits. */
		if (conn_room(c, &c->fbuf, &c->fcap, sizeof hb + len) == -1)
			return -1;
		memcpy(c->fbuf, hb, sizeof hb);
		if (len > 0)
			memcpy(c->fbuf + sizeof hb, p, len);
		return conn_write(c, c->fbuf, sizeof hb + len);
	}
	if (conn_write(c, hb, sizeof hb) == -1)
		return -1;
	return len > 0 ? conn_write(c, p, len) : 0;
}

int
conn_recv(struct conn *c, struct frame_hdr *h, const uint8_t **payload)
{
	uint8_t hb[PROTO_HDR_LEN];
	uint8_t *nb;

	if (conn_read(c, hb, sizeof hb) == -1)
		return -1;
	proto_hdr_decode(hb, h);
	if (c->version == 0 && (h->len > PROTO_MAX_FRAME_MIN ||
	    (h->type != MSG_CHALLENGE && h->type != MSG_WELCOME &&
	    h->type != MSG_ERROR)))
		return conn_fail(c, CONN_PROTO, "%s: not a Gleam server "
		    "(bad handshake reply)", c->peer);
	/* We accept frames as large as we would ever send. */
	if (h->len > PROTO_MAX_FRAME_LIMIT)
		return conn_fail(c, CONN_PROTO, "%s: frame of %u bytes from "
		    "server is too large", c->peer, h->len);
	if (h->len > c->rcap) {
		if ((nb = realloc(c->rbuf, h->len)) == NULL)
			return conn_fail(c, CONN_NET, "%s: out of memory",
			    c->peer);
		c->rbuf = nb;
		c->rcap = h->len;
	}
	if (h->len > 0 && conn_read(c, c->rbuf, h->len) == -1)
		return -1;
	*payload = c->rbuf;
	return 0;
}

/* Turns an ERROR frame into the conn's error. */
static int
conn_remote_error(struct conn *c, const uint8_t *p, size_t len, int kind)
{
	struct msg_error e;

	if (msg_error_dec(p, len, &e) == -1)
		return conn_fail(c, CONN_PROTO, "%s: malformed error message",
		    c->peer);
	if (e.code == PERR_AUTH || e.code == PERR_VERSION)
		kind = CONN_AUTH;
	c->perr = e.code;
	if (e.code == PERR_BUSY || e.code == PERR_SHUTDOWN ||
	    e.code == PERR_AGAIN)
		kind = CONN_NET;
	/* Not the key: a session to resume that the server no longer has. */
	if (e.code == PERR_STATE && kind == CONN_AUTH)
		kind = CONN_REMOTE;
	return conn_fail(c, kind, "%s: %s%s%s", c->peer,
	    proto_err_name(e.code), e.text[0] ? ": " : "", e.text);
}

static int
conn_handshake(struct conn *c, const struct auth_key *key, const char *name,
    const struct conn_resume *rs)
{
	struct msg_hello hello;
	struct msg_challenge ch;
	struct msg_auth au;
	struct msg_welcome wel;
	struct frame_hdr h;
	const uint8_t *p;
	uint8_t expect[PROTO_PROOF_LEN];
	struct pw w;
	int rc;

	memset(&hello, 0, sizeof hello);
	hello.magic = PROTO_MAGIC;
	hello.vmin = PROTO_VERSION_MIN;
	hello.vmax = PROTO_VERSION_MAX;
	auth_nonce(hello.nonce);
	snprintf(hello.name, sizeof hello.name, "%s", name ? name : "");
	/* We can name cache entries strongly, if the server wants that. */
	hello.features = FEAT_NAMES;
	if (rs != NULL && (rs->want || rs->session != 0))
		hello.features |= FEAT_RESUME;
	if (rs != NULL && rs->session != 0) {
		hello.features |= FEAT_RESUMING;
		hello.session = rs->session;
		memcpy(hello.token, rs->token, sizeof hello.token);
	}
	pw_init(&w);
	msg_hello_enc(&w, &hello);
	rc = w.bad ? -1 : conn_send(c, MSG_HELLO, 0, 0, w.p, w.len);
	pw_free(&w);
	if (rc == -1 && c->fail == CONN_NET) {
		/*
		 * A server that refuses us (too many clients, draining) says
		 * why and closes at once, maybe before our hello is out:
		 * its reason may be waiting to be read.
		 */
		char why[sizeof c->err];

		memcpy(why, c->err, sizeof why);
		if (conn_recv(c, &h, &p) == 0 && h.type == MSG_ERROR)
			return conn_remote_error(c, p, h.len, CONN_AUTH);
		memcpy(c->err, why, sizeof c->err);
		c->fail = CONN_NET;
		return -1;
	}
	if (rc == -1)
		return -1;

	if (conn_recv(c, &h, &p) == -1)
		return -1;
	if (h.type == MSG_ERROR)
		return conn_remote_error(c, p, h.len, CONN_AUTH);
	if (h.type != MSG_CHALLENGE || msg_challenge_dec(p, h.len, &ch) == -1)
		return conn_fail(c, CONN_PROTO, "%s: not a Gleam server "
		    "(bad handshake reply)", c->peer);
	if (ch.version < PROTO_VERSION_MIN || ch.version > PROTO_VERSION_MAX)
		return conn_fail(c, CONN_AUTH, "%s: server chose protocol "
		    "version %u, we speak %d to %d", c->peer, ch.version,
		    PROTO_VERSION_MIN, PROTO_VERSION_MAX);
	c->version = ch.version;
	c->max_frame = ch.max_frame;
	snprintf(c->server_name, sizeof c->server_name, "%s", ch.name);

	if (ch.auth == AUTH_NONE && key != NULL && key->set)
		/* Anyone can answer without a key; ours must prove it holds it. */
		return conn_fail(c, CONN_AUTH, "%s: server does not ask for a "
		    "key, so it cannot prove it is the one we hold a key for",
		    c->peer);
	if (ch.auth == AUTH_HMAC_SHA256) {
		if (key == NULL || !key->set)
			return conn_fail(c, CONN_AUTH, "%s: server requires a "
			    "key", c->peer);
		memset(&au, 0, sizeof au);
		auth_proof(key, 0, c->version, hello.nonce, ch.nonce,
		    au.proof);
		/* Whose key: the server looks it up by this name. */
		snprintf(au.ident, sizeof au.ident, "%s", key->name);
		pw_init(&w);
		msg_auth_enc(&w, &au);
		rc = w.bad ? -1 : conn_send(c, MSG_AUTH, 0, 0, w.p, w.len);
		pw_free(&w);
		if (rc == -1)
			return -1;
	}
	if (conn_recv(c, &h, &p) == -1) {
		if (ch.auth == AUTH_HMAC_SHA256 && c->fail == CONN_NET)
			return conn_fail(c, CONN_AUTH, "%s: server closed the "
			    "connection during authentication", c->peer);
		return -1;
	}
	if (h.type == MSG_ERROR)
		return conn_remote_error(c, p, h.len, CONN_AUTH);
	if (h.type != MSG_WELCOME || msg_welcome_dec(p, h.len, &wel) == -1)
		return conn_fail(c, CONN_PROTO, "%s: bad handshake reply",
		    c->peer);
	if (ch.auth == AUTH_HMAC_SHA256) {
		/* The server proves it holds the key too. */
		auth_proof(key, 1, c->version, ch.nonce, hello.nonce, expect);
		if (!wel.has_proof || auth_equal(expect, wel.proof) != 0)
			return conn_fail(c, CONN_AUTH, "%s: server failed to "
			    "prove the key", c->peer);
	}
	if (rs != NULL && rs->session != 0 && (!(wel.features &
	    FEAT_RESUMING) || wel.session != rs->session))
		return conn_fail(c, CONN_PROTO, "%s: server did not resume "
		    "session %llu", c->peer, (unsigned long long)rs->session);
	c->session = wel.session;
	c->features = wel.features;
	memcpy(c->token, wel.token, sizeof c->token);
	c->resume_ms = wel.resume_ms;
	/* From here on, records: sealed with keys from this handshake. */
	if (chan_init(&c->ch, ch.auth == AUTH_HMAC_SHA256 ? key : NULL, 0,
	    hello.nonce, ch.nonce) == -1)
		return conn_fail(c, CONN_PROTO, "%s: %s", c->peer, c->ch.err);
	return 0;
}

int
conn_error_frame(struct conn *c, const uint8_t *p, size_t len)
{
	return conn_remote_error(c, p, len, CONN_REMOTE);
}

int
conn_open(struct conn *c, const char *host, int port,
    const struct auth_key *key, const char *name, int timeout_ms)
{
	return conn_open_resume(c, host, port, key, name, timeout_ms, NULL);
}

int
conn_open_resume(struct conn *c, const char *host, int port,
    const struct auth_key *key, const char *name, int timeout_ms,
    const struct conn_resume *rs)
{
	char err[256];
	uint64_t t0 = now_ns(), back = 10000000;	/* 10 ms */
	struct timespec ts;

again:
	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->timeout_ms = timeout_ms;
	c->max_frame = PROTO_MAX_FRAME_MIN;
	c->next_id = 1;
	if (strchr(host, ':') != NULL)
		snprintf(c->peer, sizeof c->peer, "[%s]:%d", host, port);
	else
		snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
	c->fd = net_connect(host, port, timeout_ms, err, sizeof err);
	if (c->fd == -1) {
		c->refused = errno == ECONNREFUSED;
		return conn_fail(c, CONN_NET, "%s: %s", c->peer, err);
	}
	if (conn_handshake(c, key, name, rs) == -1) {
		close(c->fd);
		c->fd = -1;
		conn_free_bufs(c);
		/*
		 * Too many handshakes at the server for a moment (a burst
		 * of clients): again, shortly, while the time allows.
		 */
		if (c->perr == PERR_AGAIN && (timeout_ms < 0 ||
		    now_ns() - t0 + back < (uint64_t)timeout_ms * 1000000u)) {
			ts.tv_sec = 0;
			ts.tv_nsec = (long)back;
			nanosleep(&ts, NULL);
			back = back * 2 < 200000000 ? back * 2 : 200000000;
			goto again;
		}
		return -1;
	}
	return 0;
}

void
conn_close(struct conn *c)
{
	if (c->fd != -1) {
		/* Best effort: a polite goodbye, never waited for. */
		struct frame_hdr h = { 0, MSG_BYE, 0, 0 };
		uint8_t rec[CHAN_HDR + PROTO_HDR_LEN + CHAN_TAG];
		uint8_t *hb = rec + CHAN_HDR;
		size_t n = PROTO_HDR_LEN;

		proto_hdr_encode(hb, &h);
		if (c->ch.on)
			n = chan_seal(&c->ch, rec, hb, PROTO_HDR_LEN);
		(void)send(c->fd, c->ch.on ? rec : hb, n,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		close(c->fd);
	}
	c->fd = -1;
	conn_free_bufs(c);
}

int
conn_call(struct conn *c, uint16_t type, const void *p, size_t len,
    uint16_t reply_type, const uint8_t **reply, size_t *replylen)
{
	struct frame_hdr h;
	uint64_t id = c->next_id++;

	if (conn_send(c, type, 0, id, p, len) == -1)
		return -1;
	for (;;) {
		if (conn_recv(c, &h, reply) == -1)
			return -1;
		if (h.type == MSG_ERROR)
			return conn_remote_error(c, *reply, h.len, CONN_REMOTE);
		if (!(h.flags & FL_REPLY) || h.id != id)
			continue;	/* not ours: a late reply, skip it */
		if (h.type != reply_type)
			return conn_fail(c, CONN_PROTO, "%s: expected %s "
			    "reply, got %s", c->peer,
			    proto_type_name(reply_type),
			    proto_type_name(h.type));
		*replylen = h.len;
		return 0;
	}
}
