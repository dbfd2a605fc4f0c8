/*
 * Remoting clients, each served on a thread of its own with blocking I/O:
 * a CUDA call may block (a synchronize waits for the GPU) and must not
 * hold up the event loop or other clients.
 *
 * Lifecycle: the event loop does the handshake; at the client's first
 * remoting frame, server.c takes the socket out of libevent and calls
 * remote_start with the connection's records (their ciphers and counters)
 * and the bytes it had already read.  The thread serves the
 * client until it disconnects or sends something hostile, frees every GPU
 * resource the client held through the backend, closes the socket, and
 * calls env->done from its own thread (the server wakes its loop).
 */
#ifndef SERVE_REMOTE_H
#define SERVE_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "auth.h"
#include "chan.h"
#include "wcache.h"

struct remote_stats {
	/* Updated by the client's thread, read by status with atomics. */
	uint64_t	 bytes_in, bytes_out, calls;
};

struct remote_env {
	const struct backend	*be;
	uint32_t		 max_frame;
	uint64_t		 spin_ns;	/* polling after input: config spin */
	uint64_t		 spin_max_ns;	/* learned polling: spin_max */
	uint32_t		 max_lanes;	/* config lanes (lanes.h) */
	double			 idle_s;	/* config idle_timeout; 0 */
	size_t			 keep_bytes;	/* config resume_buffer */
	int			 keep_images;	/* modules' images kept, for
						   migration (a peer is set) */
	void			(*done)(void *arg, void *client);
	void			*arg;
};

/*
 * What the event loop hands over with the socket.  ch is moved: once
 * remote_start or remote_run took it, ho->ch is zeroed and the thread
 * frees its ciphers; after a failure ho->ch is the caller's again.
 */
struct remote_handoff {
	struct chan	 ch;		/* the session's records */
	const void	*plain;		/* opened, not yet served: frames, */
	size_t		 plainlen;	/* the first remoting call first */
	const void	*raw;		/* read, not yet opened: the start */
	size_t		 rawlen;	/* of a record */
	/*
	 * A resumable session (gleam-protocol(5), Resume): how long it
	 * waits for its client, and its end of the channel on which the
	 * server hands it the connections that resume it (remote_resume).
	 */
	int		 resumable;
	uint32_t	 resume_ms;
	int		 ctl;		/* -1: none */
	/* Whose session: its identity's key (a resumed connection's
	   records), and where its weight-cache entries live. */
	struct auth_key	 key;
	struct wscope	 scope;
};

/*
 * What the server sends a session's worker on its channel.  RESUME: a
 * connection that resumes it, just after WELCOME: the descriptor rides
 * along (SCM_RIGHTS); the worker makes the connection's records from the
 * nonces, and reads on from the raw bytes.  Or a bulk lane of the
 * session, with its hello.  A thread of the worker reads the channel, so
 * that a lane is taken whatever the serving thread is doing.  MIGRATE:
 * move the session to the server at host:port (gleam-protocol(5),
 * Migration), at the next point where every call is answered; no
 * descriptor, no bytes.
 */

struct remote_resume {
	uint32_t	 kind;		/* REMOTE_RESUME, _LANE, _MIGRATE: first */
	char		 host[256];	/* MIGRATE: where to */
	uint32_t	 port;
	uint8_t		 cnonce[PROTO_NONCE_LEN];
	uint8_t		 snonce[PROTO_NONCE_LEN];
	uint32_t	 authed;
	uint32_t	 rawlen;	/* bytes that follow */
	/* REMOTE_LANE: a bulk lane of the session came, with this hello
	   (lanes.h); nothing follows. */
	uint8_t		 lane[PROTO_LANE_RHELLO];
	/* REMOTE_MOVED (the worker to the server, its last word): the
	   session is at host, port now, as session under token. */
	uint64_t	 session;
	uint8_t		 token[PROTO_TOKEN_LEN];
};
#define REMOTE_RESUME	0
#define REMOTE_LANE	1
#define REMOTE_MIGRATE	2
#define REMOTE_MOVED	3

/*
 * The serving threads polling longer than spin (spin_max), a slot each
 * in memory the workers forked later share: called in the server before
 * any worker; again, it does nothing.
 */
void	remote_spin_init(void);
/* A worker the server reaped: the spin slots it held are free again. */
void	remote_spin_reap(pid_t);

/*
 * Sends fd (-1: none), rs and the raw bytes on ctl; -1 if the worker is
 * gone.
 */
int	remote_resume_send(int ctl, int fd, const struct remote_resume *,
	    const void *raw);

/*
 * Starts serving fd.  client is the server's token, passed back to done.
 * Returns -1 if no thread could be started (the caller still owns fd and
 * ho->ch).
 */
int	remote_start(int fd, const char *addr, const char *name,
	    struct remote_handoff *, const struct remote_env *,
	    struct remote_stats *, void *client);

/*
 * The same, served on the calling thread (a worker process of its own);
 * returns once the client is gone and all it held is freed, -1 if it
 * could not start.
 */
int	remote_run(int fd, const char *addr, const char *name,
	    struct remote_handoff *, const struct remote_env *,
	    struct remote_stats *, void *client);

#endif
