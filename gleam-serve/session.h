/*
 * One client's protocol state machine, kept apart from sockets so that the
 * fuzz target can drive it with bytes alone.  The server feeds it what
 * arrived and sends what it appends to the output buffer.
 *
 * Lifecycle: session_new at accept; session_input after each read;
 * session_fill whenever the output has drained (it streams BULK_GET
 * replies a piece at a time); session_timeout if the handshake is not
 * done in time; session_free when the connection closes.  The handshake
 * itself is lib/common/hshake.c's.
 * Once session_input returns SESSION_CLOSE the server flushes the output,
 * closes, and feeds the session nothing more.
 */
#ifndef SERVE_SESSION_H
#define SERVE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "hshake.h"
#include "proto.h"

struct session;

/* What a session needs from the server; owned by the server. */
struct session_env {
	struct hshake_conf	 hs;		/* key, max_frame, name, draining */
	int			 remote_ok;	/* a backend serves CUDA calls */
	const char		*remote_why;	/* why not, if not */
	/*
	 * A status document (malloc'd YAML text) or NULL on failure, as the
	 * asker (its handshake's result: whose it is) may see it.
	 */
	char			*(*status)(void *arg,
				    const struct hshake_result *asker,
				    size_t *len);
	/*
	 * MIGRATE_ONE from session s (gleam-protocol(5), Migration): 0 once
	 * the order is with the client's worker, else an enum proto_err
	 * with the reason in why.  NULL: this server moves nothing.
	 */
	int			 (*migrate)(void *arg, struct session *s,
				    const struct msg_migrate_one *,
				    char *why, size_t whylen);
	void			*arg;
};

enum session_rc {
	SESSION_OK = 0,		/* keep going */
	SESSION_CLOSE = 1,	/* flush the output, then close */
	SESSION_RESUME = 3,	/* WELCOME resumed a session: hand the
				   connection, as it is, to that session */
	SESSION_REMOTE = 2	/* a remoting call is next in the input: hand
				   the connection to a remoting thread */
};

struct session	*session_new(const struct session_env *, const char *peer);
void		 session_free(struct session *);
int		 session_input(struct session *, struct evbuffer *in,
		    struct evbuffer *out);
/* The handshake timed out: ERROR 10 is queued; close after it. */
void		 session_timeout(struct session *, struct evbuffer *out);
/* Appends more of a BULK_GET stream; returns 1 while more is to come. */
int		 session_fill(struct session *, struct evbuffer *out);
int		 session_ready(const struct session *);
/* A request is in progress: a bulk transfer either way. */
int		 session_busy(const struct session *);
const char	*session_client_name(const struct session *);
/* The identity the client proved; "" if none (yet). */
const char	*session_ident(const struct session *);
const char	*session_peer(const struct session *);
uint64_t	 session_id(const struct session *);
/*
 * The handshake's state: after SESSION_REMOTE, its records (chan) and the
 * plaintext opened but not yet parsed (plain) go with the connection.
 */
struct hshake	*session_hshake(struct session *);

#endif
