/*
 * The session layer (gleam-protocol(5), Records): what every connection
 * of every program carries after WELCOME.  The frames of protocol 2 travel
 * inside records, as one stream: a record may hold several frames, and a
 * frame may span records (a sender starts a large frame on a record of its
 * own where it can, so that the receiver may take it straight to its
 * destination):
 *
 *	u32 len		body bytes after this 16-byte header
 *	u16 kind	CHAN_DATA; nothing else is defined yet
 *	u16 zero
 *	u64 ack		stream bytes received from the peer so far
 *	body		the frames' bytes; sealed: AES-256-GCM ciphertext
 *			then its 16-byte tag, the header as associated data
 *
 * A connection whose handshake proved a key is sealed; one without a key
 * carries the same records in the clear (no tag), so that acknowledgement
 * and resume work the same way.  Each direction has its own key, derived
 * from the shared key and both handshake nonces of that connection
 * (chan_init), and its own nonce: the count of records it sealed before
 * (u64, little-endian, then four zero bytes).  A record that does not
 * open (tampered, replayed, reordered, injected, or cut short) ends the
 * connection: nothing of it is ever used.
 *
 * The ack counts the plaintext bytes of the records received (their
 * bodies less the tag), over the whole session: the peer may forget what
 * it sent up to there.  An empty record only acknowledges.
 *
 * Usage.  Sender: chan_seal on a buffer of whole frames (at most
 * CHAN_BODY_MAX bytes), or chan_seal_begin / _update / _final to seal
 * from several places into one record.  Receiver: chan_hdr on the first
 * CHAN_HDR bytes says how many body bytes follow, then chan_open on the
 * body, or chan_open_begin / _update / _final to decrypt a body as it
 * comes (into its destination) and check it at the end.  The evbuffer
 * helpers do both for libevent daemons.
 */
#ifndef GLEAM_CHAN_H
#define GLEAM_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

struct auth_key;
struct evbuffer;

#define CHAN_HDR	16
#define CHAN_TAG	16
#define CHAN_KEY	32
#define CHAN_DATA	0
/* A record's plaintext, at most: a 16 MiB frame and its header fit. */
#define CHAN_BODY_MAX	((16u << 20) + (64u << 10))

struct chan {
	int		 on;		/* records are in use (after WELCOME) */
	int		 sealed;	/* with AES-256-GCM */
	int		 server;	/* which side we are: picks the keys */
	void		*tx, *rx;	/* EVP_CIPHER_CTX, when sealed */
	uint8_t		 prk[CHAN_KEY];	/* the connection's secret: lanes */
	uint64_t	 tx_rec, rx_rec;	/* records sealed, opened */
	uint64_t	 tx_bytes;	/* plaintext sent in the session */
	uint64_t	 rx_bytes;	/* plaintext received: our ack */
	uint64_t	 peer_ack;	/* the peer's latest ack */
	uint64_t	 acked;		/* the ack we last sent */
	/* chan_open_begin's record, until _final. */
	size_t		 rx_left;	/* body bytes (less the tag) to come */
	uint8_t		 rx_hdr[CHAN_HDR];
	char		 err[160];	/* why the last call failed */
};

/*
 * Starts the records of a connection.  key NULL or unset: in the clear.
 * server says which side we are; the nonces are those of this
 * connection's HELLO and CHALLENGE.  -1 only if the cipher cannot start
 * (c->err).
 */
int	chan_init(struct chan *, const struct auth_key *, int server,
	    const uint8_t cnonce[PROTO_NONCE_LEN],
	    const uint8_t snonce[PROTO_NONCE_LEN]);
/*
 * A bulk lane's records (lane idx of the connection parent): keys of its
 * own, derived from parent's, counters from 0.
 */
int	chan_init_lane(struct chan *, const struct chan *parent, uint32_t idx);
/*
 * A resumable session's lane (proto.h, PROTO_LANE_RHELLO): keys of its
 * own from secret (R_LANES's reply), its index and its epoch, counters
 * from 0; sealed or not as the main connection is.
 */
int	chan_init_lane_key(struct chan *, int sealed, int server,
	    const uint8_t secret[CHAN_KEY], uint32_t idx, uint32_t epoch);
void	chan_fini(struct chan *);
/*
 * A resumed session's new connection (c, fresh from chan_init) goes on
 * with the stream of the old one: its counts of bytes sent, received and
 * acknowledged.  Record numbers start again from 0 under the new keys.
 */
void	chan_resume(struct chan *c, const struct chan *old);

/* Bytes a record of n plaintext bytes takes on the wire. */
static inline size_t
chan_wire(const struct chan *c, size_t n)
{
	return CHAN_HDR + n + (c->sealed ? CHAN_TAG : 0);
}

/*
 * Seals n (at most CHAN_BODY_MAX) plaintext bytes p into out (room for
 * chan_wire(n) bytes; p may be out + CHAN_HDR).  Returns the record's
 * length.
 */
size_t	chan_seal(struct chan *, uint8_t *out, const void *p, size_t n);
/* The same in steps: header now, body in pieces, tag (if sealed) last. */
void	chan_seal_begin(struct chan *, uint8_t hdr[CHAN_HDR], size_t n);
void	chan_seal_update(struct chan *, uint8_t *out, const void *p, size_t n);
/* Writes the tag (CHAN_TAG bytes) if sealed; returns the bytes written. */
size_t	chan_seal_final(struct chan *, uint8_t *tag);

/*
 * A received header: the body's length on the wire (tag included), or -1
 * if it is not a record we take (c->err says why).
 */
ssize_t	chan_hdr(struct chan *, const uint8_t hdr[CHAN_HDR]);
/*
 * Opens a whole record in place: rec holds CHAN_HDR + the body chan_hdr
 * announced.  The plaintext is at rec + CHAN_HDR, *n bytes.  -1: forged
 * or corrupt, the connection must end (c->err).
 */
int	chan_open(struct chan *, uint8_t *rec, size_t reclen, size_t *n);
/*
 * The same in steps, after chan_hdr accepted hdr: _update decrypts body
 * bytes as they come (out may be in), and the bytes must not be trusted
 * before _final checks the tag (NULL in the clear).
 */
void	chan_open_begin(struct chan *, const uint8_t hdr[CHAN_HDR]);
void	chan_open_update(struct chan *, uint8_t *out, const uint8_t *in,
	    size_t n);
int	chan_open_final(struct chan *, const uint8_t *tag);

/*
 * Whether enough has come in since our last ack that an empty record
 * should tell the peer (when we have nothing else to send).
 */
#define CHAN_ACK_EVERY	(4u << 20)
int	chan_ack_due(const struct chan *);

/*
 * libevent daemons.  chan_ev_seal moves everything in plain into records
 * (of CHAN_BODY_MAX at most) appended to raw (-1: out of memory).  chan_ev_open moves the plaintext
 * of every whole record in raw to plain, leaving a partial one; -1: a
 * record that does not open (c->err), the connection must end.
 */
int	chan_ev_seal(struct chan *, struct evbuffer *plain,
	    struct evbuffer *raw);
int	chan_ev_open(struct chan *, struct evbuffer *raw,
	    struct evbuffer *plain);

#endif
