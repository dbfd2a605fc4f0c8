/*
 * Records received into one buffer and opened in place (chan.h), for the
 * blocking readers that parse frames out of a contiguous buffer of their
 * own (gleam-serve's remoting threads, the client library's I/O thread).
 *
 * The caller's buffer holds, from its start:
 *
 *	[0, plain)		opened plaintext: whole records that
 *				authenticated, to parse frames from
 *	[plain, plain + pend)	the record being opened: decrypted, not
 *				yet checked, never to be used before
 *	then raw bytes		as read from the socket, not yet looked at
 *
 * The caller reads at most chanrd_ask bytes into the space after the raw
 * bytes (chanrd_used), calls chanrd_open, parses frames from [0, plain)
 * and drops what it served with chanrd_consume.  Record headers and tags
 * are taken out as they are met, so that the frames' bytes end up
 * contiguous; a record's body is decrypted where it lies and then moved
 * down over the headers taken before it in the same read, which
 * chanrd_ask keeps to small records: a large body lands in its place.
 */
#ifndef GLEAM_CHANRD_H
#define GLEAM_CHANRD_H

#include <stddef.h>
#include <stdint.h>

#include "chan.h"

struct chanrd {
	size_t		 plain, pend, raw;
	int		 inrec;		/* a record's header was taken */
	size_t		 stop;		/* see chanrd_open; 0: never stop */
};

static inline size_t
chanrd_used(const struct chanrd *rd)
{
	return rd->plain + rd->pend + rd->raw;
}

/*
 * How many bytes the next read should ask for, at most (the buffer needs
 * room for them after chanrd_used): min, or the rest of a large record
 * and the next header, so that the next record starts a read and its body
 * lands where it is opened, never moved.  All of a record must fit in
 * the buffer before any of it can be used.
 */
size_t	chanrd_ask(const struct chan *, const struct chanrd *, size_t min);

/*
 * Opens the raw bytes in place, as far as they go.  -1: a record that does
 * not open (c->err); the connection must end.  1: rd->stop is set, and a
 * record of at least rd->stop body bytes has just begun (its header
 * taken; its first bytes, if any came, raw at buf + plain): the caller
 * may parse the frames before it and then, if none is left unfinished
 * (plain 0), take the body elsewhere itself (chan_open_update, _final,
 * then clearing inrec); calling again opens it in place.
 */
int	chanrd_open(struct chan *, uint8_t *buf, struct chanrd *);

/* Drops the first n bytes of the plaintext (frames served). */
void	chanrd_consume(uint8_t *buf, struct chanrd *, size_t n);

#endif
