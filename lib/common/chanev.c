/*
 * The session layer's records over libevent buffers (chan.h).  Bulk
 * bytes cost one pass: sealed, the cipher reads them where they lie (a
 * chunk added by reference stays there) and writes the record's body;
 * in the clear, the body's chains move from buffer to buffer as they are.
 */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "chan.h"

#define EV_VECS	16	/* pieces of a buffer looked at a time */

/*
 * The first n bytes of src through the cipher into out, piece by piece
 * as src holds them, drained as they go.  -1 if src holds fewer.
 */
static int
chan_ev_pass(struct chan *c, int seal, struct evbuffer *src, uint8_t *out,
    size_t n)
{
	struct evbuffer_iovec v[EV_VECS];
	size_t off = 0, got, k;
	int nv, i;

	while (off < n) {
		nv = evbuffer_peek(src, (ev_ssize_t)(n - off), NULL, v,
		    EV_VECS);
		if (nv > EV_VECS)
			nv = EV_VECS;
		for (i = 0, got = 0; i < nv && off + got < n; i++) {
			k = v[i].iov_len < n - off - got ? v[i].iov_len :
			    n - off - got;
			if (seal)
				chan_seal_update(c, out + off + got,
				    v[i].iov_base, k);
			else
				chan_open_update(c, out + off + got,
				    v[i].iov_base, k);
			got += k;
		}
		if (got == 0)
			return -1;
		evbuffer_drain(src, got);
		off += got;
	}
	return 0;
}

int
chan_ev_seal(struct chan *c, struct evbuffer *plain, struct evbuffer *raw)
{
	struct evbuffer_iovec v;
	uint8_t hdr[CHAN_HDR], *p;
	size_t n, want;

	while ((n = evbuffer_get_length(plain)) > 0) {
		if (n > CHAN_BODY_MAX)
			n = CHAN_BODY_MAX;
		if (!c->sealed) {
			chan_seal_begin(c, hdr, n);
			if (evbuffer_add(raw, hdr, sizeof hdr) == -1 ||
			    evbuffer_remove_buffer(plain, raw, n) != (int)n)
				return -1;
			continue;
		}
		want = chan_wire(c, n);
		if (evbuffer_reserve_space(raw, (ev_ssize_t)want, &v, 1) != 1 ||
		    v.iov_len < want)
			return -1;
		p = v.iov_base;
		chan_seal_begin(c, p, n);
		if (chan_ev_pass(c, 1, plain, p + CHAN_HDR, n) == -1)
			return -1;
		chan_seal_final(c, p + CHAN_HDR + n);
		v.iov_len = want;
		if (evbuffer_commit_space(raw, &v, 1) == -1)
			return -1;
	}
	return 0;
}

int
chan_ev_open(struct chan *c, struct evbuffer *raw, struct evbuffer *plain)
{
	struct evbuffer_iovec v;
	uint8_t hdr[CHAN_HDR], tag[CHAN_TAG];
	ssize_t len;
	size_t n;

	while (evbuffer_get_length(raw) >= CHAN_HDR) {
		evbuffer_copyout(raw, hdr, CHAN_HDR);
		if ((len = chan_hdr(c, hdr)) == -1)
			return -1;
		if (evbuffer_get_length(raw) < CHAN_HDR + (size_t)len)
			return 0;
		evbuffer_drain(raw, CHAN_HDR);
		chan_open_begin(c, hdr);
		if (!c->sealed) {
			n = (size_t)len;
			/* Counted, not copied: the chains move to plain. */
			chan_open_update(c, hdr, hdr, n);
			if (chan_open_final(c, NULL) == -1)
				return -1;
			if (n > 0 && evbuffer_remove_buffer(raw, plain, n) !=
			    (int)n) {
				snprintf(c->err, sizeof c->err,
				    "out of memory");
				return -1;
			}
			continue;
		}
		n = (size_t)len - CHAN_TAG;
		v.iov_base = tag;
		v.iov_len = 0;
		if (n > 0 && (evbuffer_reserve_space(plain, (ev_ssize_t)n, &v,
		    1) != 1 || v.iov_len < n)) {
			snprintf(c->err, sizeof c->err, "out of memory");
			return -1;
		}
		/* Nothing of it shows in plain unless the tag checks. */
		if (chan_ev_pass(c, 0, raw, v.iov_base, n) == -1)
			return -1;
		evbuffer_remove(raw, tag, CHAN_TAG);
		if (chan_open_final(c, tag) == -1)
			return -1;
		v.iov_len = n;
		if (n > 0 && evbuffer_commit_space(plain, &v, 1) == -1) {
			snprintf(c->err, sizeof c->err, "out of memory");
			return -1;
		}
	}
	return 0;
}
