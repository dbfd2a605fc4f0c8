/* Records opened in place in a reader's own buffer (chanrd.h). */
#include <string.h>

#include "chanrd.h"

size_t
chanrd_ask(const struct chan *c, const struct chanrd *rd, size_t min)
{
	size_t rest;

	if (!rd->inrec)
		return min;
	/* The rest of a large record, and the next header: no more. */
	rest = c->rx_left + (c->sealed ? CHAN_TAG : 0);
	if (rest <= rd->raw)
		return min;
	rest -= rd->raw;
	return rest > min ? rest + CHAN_HDR : min;
}

int
chanrd_open(struct chan *c, uint8_t *buf, struct chanrd *rd)
{
	uint8_t hdr[CHAN_HDR], tag[CHAN_TAG];
	uint8_t *w, *r, *end;
	size_t tl = c->sealed ? CHAN_TAG : 0, n;
	int rc = 0;

	if (buf == NULL)
		return 0;	/* nothing read yet, nowhere to read to */
	w = r = buf + rd->plain + rd->pend;
	end = w + rd->raw;
	for (;;) {
		if (!rd->inrec) {
			if ((size_t)(end - r) < CHAN_HDR)
				break;
			memcpy(hdr, r, CHAN_HDR);
			if (chan_hdr(c, hdr) == -1) {
				rc = -1;
				break;
			}
			r += CHAN_HDR;
			chan_open_begin(c, hdr);
			rd->inrec = 1;
			if (rd->stop > 0 && c->rx_left >= rd->stop) {
				rc = 1;
				break;
			}
		}
		if (c->rx_left > 0) {
			n = (size_t)(end - r) < c->rx_left ?
			    (size_t)(end - r) : c->rx_left;
			if (n == 0)
				break;
			/* In place (EVP may not move), then to its place. */
			chan_open_update(c, r, r, n);
			if (w != r)
				memmove(w, r, n);
			w += n;
			r += n;
			rd->pend += n;
			if (c->rx_left > 0)
				break;
		}
		if ((size_t)(end - r) < tl)
			break;
		memcpy(tag, r, tl);
		r += tl;
		if (chan_open_final(c, tl ? tag : NULL) == -1) {
			rc = -1;
			break;
		}
		rd->plain += rd->pend;
		rd->pend = 0;
		rd->inrec = 0;
	}
	/* What is left of the raw bytes follows what was opened. */
	if (w != r && end > r)
		memmove(w, r, (size_t)(end - r));
	rd->raw = (size_t)(end - r);
	return rc;
}

void
chanrd_consume(uint8_t *buf, struct chanrd *rd, size_t n)
{
	if (n == 0)
		return;
	memmove(buf, buf + n, chanrd_used(rd) - n);
	rd->plain -= n;
}
