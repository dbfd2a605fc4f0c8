/*
 * The client side of a connection: a blocking socket that has been through
 * the handshake.  Used by gleam-probe and the command-line clients; one
 * thread owns a conn at a time.
 */
#ifndef GLEAM_CONN_H
#define GLEAM_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "chan.h"
#include "proto.h"

enum conn_fail {
	CONN_OK = 0,
	CONN_NET,	/* unreachable, refused, reset, timed out */
	CONN_AUTH,	/* the server refused the key or had no version for us */
	CONN_PROTO,	/* the server sent something that does not decode */
	CONN_REMOTE	/* the server answered a request with ERROR */
};

/* What a connection asks of its session (gleam-protocol(5), Resume). */
struct conn_resume {
	int		 want;		/* ask that the session be resumable */
	uint64_t	 session;	/* resume this one (0: a new session) */
	uint8_t		 token[PROTO_TOKEN_LEN];	/* its token */
};

struct conn {
	int		 fd;
	uint16_t	 version;
	uint32_t	 max_frame;	/* the server's limit on our frames */
	uint64_t	 session;
	uint32_t	 features;	/* WELCOME's: FEAT_RESUME, _RESUMING */
	uint8_t		 token[PROTO_TOKEN_LEN];	/* with FEAT_RESUME */
	uint32_t	 resume_ms;	/* how long the server waits */
	uint64_t	 next_id;
	int		 timeout_ms;	/* per read or write */
	char		 peer[300];	/* "host:port" as given */
	char		 server_name[PROTO_NAME_MAX + 1];
	uint64_t	 bytes_in, bytes_out;
	uint8_t		*rbuf;		/* payload of the last frame read */
	size_t		 rcap;
	struct chan	 ch;		/* records, after the handshake */
	uint8_t		*rec;		/* the record being read */
	size_t		 reccap, rpos, rend;	/* its plaintext: [rpos, rend) */
	uint8_t		*sbuf, *fbuf;	/* sealing; a frame to seal */
	size_t		 scap, fcap;
	int		 fail;		/* enum conn_fail of the last error */
	int		 refused;	/* nothing listens there (ECONNREFUSED) */
	uint32_t	 perr;		/* the server's ERROR code, if any */
	char		 err[600];	/* its reason, for messages */
};

/*
 * Connects and shakes hands.  key may be NULL (no key); a server that
 * demands one is then refused with CONN_AUTH.  Returns 0, or -1 with
 * c->fail and c->err set (the conn needs no close then).
 */
int	conn_open(struct conn *, const char *host, int port,
	    const struct auth_key *, const char *client_name, int timeout_ms);
/*
 * The same, asking for resume, or resuming a session (rs->session): a
 * server that no longer has that session fails it with CONN_REMOTE and
 * its reason.
 */
int	conn_open_resume(struct conn *, const char *host, int port,
	    const struct auth_key *, const char *client_name, int timeout_ms,
	    const struct conn_resume *rs);
void	conn_close(struct conn *);
/*
 * The frame stream itself, for clients that frame their own (a payload
 * streamed in pieces): conn_write sends len bytes, in records after the
 * handshake (each call at least one record); conn_read reads exactly len
 * bytes out of them.  -1 on error.
 */
int	conn_write(struct conn *, const void *, size_t);
/*
 * The same for pieces (CONN_IOV_MAX at most) that make one record where
 * they fit: a frame's header and its payload from where each lies, in
 * one pass of the cipher when sealed, without a copy in the clear.
 */
#define CONN_IOV_MAX	16
struct iovec;
int	conn_writev(struct conn *, const struct iovec *, int);
int	conn_read(struct conn *, void *, size_t);
/* Sends one frame; returns -1 on error. */
int	conn_send(struct conn *, uint16_t type, uint16_t flags, uint64_t id,
	    const void *, size_t);
/*
 * Reads one frame; *payload points into the conn's buffer until the next
 * read.  An ERROR frame is returned like any other.
 */
int	conn_recv(struct conn *, struct frame_hdr *, const uint8_t **payload);
/*
 * Turns an ERROR frame's payload into the conn's error (c->fail, c->err)
 * and returns -1.
 */
int	conn_error_frame(struct conn *, const uint8_t *, size_t);
/*
 * Sends a request and waits for its reply.  An ERROR reply fails with
 * CONN_REMOTE and the server's message in c->err.
 */
int	conn_call(struct conn *, uint16_t type, const void *, size_t,
	    uint16_t reply_type, const uint8_t **reply, size_t *replylen);

#endif
