/* The session layer's records over libevent buffers (chan.h). */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "chan.h"

int
chan_ev_seal(struct chan *c, struct evbuffer *plain, struct evbuffer *raw)
{
	struct evbuffer_iovec v;
	size_t n, want;
	uint8_t *p;

	while ((n = evbuffer_get_length(plain)) > 0) {
		if (n > CHAN_BODY_MAX)
			n = CHAN_BODY_MAX;
		want = chan_wire(c, n);
		if (evbuffer_reserve_space(raw, (ssize_t)want, &v, 1) != 1 ||
		    v.iov_len < want)
			return -1;
		p = v.iov_base;
		if (evbuffer_copyout(plain, p + CHAN_HDR, n) != (ssize_t)n)
			return -1;
		chan_seal(c, p, p + CHAN_HDR, n);
		v.iov_len = want;
		if (evbuffer_commit_space(raw, &v, 1) == -1)
			return -1;
		evbuffer_drain(plain, n);
	}
	return 0;
}

int
chan_ev_open(struct chan *c, struct evbuffer *raw, struct evbuffer *plain)
{
	uint8_t hdr[CHAN_HDR], *p;
	ssize_t len;
	size_t n;

	while (evbuffer_get_length(raw) >= CHAN_HDR) {
		evbuffer_copyout(raw, hdr, CHAN_HDR);
		if ((len = chan_hdr(c, hdr)) == -1)
			return -1;
		if (evbuffer_get_length(raw) < CHAN_HDR + (size_t)len)
			return 0;
		if ((p = evbuffer_pullup(raw, CHAN_HDR + len)) == NULL) {
			snprintf(c->err, sizeof c->err, "out of memory");
			return -1;
		}
		if (chan_open(c, p, CHAN_HDR + (size_t)len, &n) == -1)
			return -1;
		if (n > 0 && evbuffer_add(plain, p + CHAN_HDR, n) == -1) {
			snprintf(c->err, sizeof c->err, "out of memory");
			return -1;
		}
		evbuffer_drain(raw, CHAN_HDR + (size_t)len);
	}
	return 0;
}
