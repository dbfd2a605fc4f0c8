/* A bulk lane's stripes as records: see stripe.h. */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net.h"
#include "proto.h"
#include "stripe.h"

/* All of the two pieces, through EINTR: 0, or an errno. */
static int
sendv_all(int fd, const void *a, size_t alen, const void *b, size_t blen)
{
	struct iovec iov[2];
	struct msghdr mh;
	ssize_t k;

	iov[0].iov_base = (void *)a;
	iov[0].iov_len = alen;
	iov[1].iov_base = (void *)b;
	iov[1].iov_len = blen;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	while (iov[0].iov_len + iov[1].iov_len > 0) {
		k = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? EPIPE : errno;
		if ((size_t)k < iov[0].iov_len) {
			iov[0].iov_base = (char *)iov[0].iov_base + k;
			iov[0].iov_len -= (size_t)k;
			continue;
		}
		k -= (ssize_t)iov[0].iov_len;
		iov[0].iov_len = 0;
		iov[1].iov_base = (char *)iov[1].iov_base + k;
		iov[1].iov_len -= (size_t)k;
	}
	return 0;
}

int
stripe_send(struct chan *c, int fd, const void *p, size_t n, uint8_t *stage)
{
	const uint8_t *s = p;
	uint8_t hdr[CHAN_HDR];
	size_t k, m, done, o;
	int e;

	for (; n > 0; s += k, n -= k) {
		k = n < PROTO_LANE_REC ? n : PROTO_LANE_REC;
		if (!c->sealed) {
			/* Zero-copy: the body from the caller's buffer. */
			chan_seal_begin(c, hdr, k);
			if ((e = sendv_all(fd, hdr, sizeof hdr, s, k)) != 0)
				return e;
			continue;
		}
		/* The header goes with the first piece, the tag the last. */
		chan_seal_begin(c, stage, k);
		o = CHAN_HDR;
		for (done = 0; done < k; done += m) {
			m = k - done < STRIPE_PIECE ? k - done : STRIPE_PIECE;
			chan_seal_update(c, stage + o, s + done, m);
			o += m;
			if (done + m == k)
				o += chan_seal_final(c, stage + o);
			if ((e = net_send_all(fd, stage, o)) != 0)
				return e;
			o = 0;
		}
	}
	return 0;
}

int
stripe_recv(struct chan *c, int fd, void *dst, size_t n, uint64_t *first)
{
	uint8_t hdr[CHAN_HDR], tag[CHAN_TAG], *d = dst;
	size_t k, m, done;
	ssize_t len;
	int e;

	for (; n > 0; d += k, n -= k) {
		k = n < PROTO_LANE_REC ? n : PROTO_LANE_REC;
		if ((e = net_recv_all(fd, hdr, sizeof hdr, first)) != 0)
			return e;
		if ((len = chan_hdr(c, hdr)) == -1)
			return EBADMSG;
		if ((size_t)len != chan_wire(c, k) - CHAN_HDR) {
			snprintf(c->err, sizeof c->err, "a stripe's record of "
			    "%zd bytes where %zu were due", len,
			    chan_wire(c, k) - CHAN_HDR);
			return EBADMSG;
		}
		chan_open_begin(c, hdr);
		if (!c->sealed) {
			/* Zero-copy: straight into place, nothing to open. */
			if ((e = net_recv_all(fd, d, k, NULL)) != 0)
				return e;
			chan_open_update(c, d, d, k);
		} else {
			/* In pieces, each opened while it is in the cache. */
			for (done = 0; done < k; done += m) {
				m = k - done < STRIPE_PIECE ? k - done :
				    STRIPE_PIECE;
				if ((e = net_recv_all(fd, d + done, m,
				    NULL)) != 0)
					return e;
				chan_open_update(c, d + done, d + done, m);
			}
			if ((e = net_recv_all(fd, tag, sizeof tag, NULL)) != 0)
				return e;
		}
		if (chan_open_final(c, c->sealed ? tag : NULL) == -1)
			return EBADMSG;
	}
	return 0;
}

static void
le_put(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
le_get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int
stripe_send_u64(struct chan *c, int fd, uint64_t v, uint8_t *stage)
{
	uint8_t b[8];

	le_put(b, v, 8);
	return stripe_send(c, fd, b, sizeof b, stage);
}

int
stripe_recv_u64(struct chan *c, int fd, uint64_t *v)
{
	uint8_t b[8];
	int e;

	if ((e = stripe_recv(c, fd, b, sizeof b, NULL)) != 0)
		return e;
	*v = le_get(b, 8);
	return 0;
}

int
stripe_send_at(struct chan *c, int fd, uint64_t job, uint32_t dir,
    uint8_t *stage)
{
	uint8_t b[16];

	le_put(b, job, 8);
	le_put(b + 8, dir, 4);
	le_put(b + 12, 0, 4);
	return stripe_send(c, fd, b, sizeof b, stage);
}

int
stripe_recv_at(struct chan *c, int fd, uint64_t *job, uint32_t *dir)
{
	uint8_t b[16];
	int e;

	if ((e = stripe_recv(c, fd, b, sizeof b, NULL)) != 0)
		return e;
	*job = le_get(b, 8);
	*dir = (uint32_t)le_get(b + 8, 4);
	if (*dir > STRIPE_DIR_OUT || le_get(b + 12, 4) != 0) {
		snprintf(c->err, sizeof c->err, "a lane's state record "
		    "that is not one");
		return EBADMSG;
	}
	return 0;
}
