/*
 * The server half of the handshake (gleam-protocol(5), Handshake): HELLO,
 * version choice, CHALLENGE, AUTH, WELCOME and the ERROR frames that
 * refuse them, once for every daemon.  It is a state machine fed with
 * whole decoded frames; sockets, timers and the requests after WELCOME
 * stay in the daemon, so that a fuzz target can drive it with bytes alone.
 *
 * Lifecycle: hshake_init at accept.  For each frame, hshake_header once
 * its header is in (it refuses a frame over hshake_limit before its
 * payload is read), then hshake_input with the whole payload.  Before
 * WELCOME every frame is the handshake's; after it hshake_input refuses
 * the handshake's own messages and answers HSHAKE_PASS for the others,
 * which are the daemon's.  hshake_timeout when the daemon's handshake
 * timer fires.  Once a call returns HSHAKE_CLOSE the daemon flushes the
 * output (an ERROR is in it), closes, and feeds nothing more.
 *
 * After WELCOME the connection carries records (chan.h): sealed when the
 * peer proved the key.  Every frame out goes through hshake_frame (or a
 * plaintext evbuffer of whole frames through hshake_seal); every byte in
 * goes through hshake_open, which returns the buffer to parse frames
 * from: the socket's input before WELCOME, the opened records' plaintext
 * after.  hshake_fini at close.
 */
#ifndef GLEAM_HSHAKE_H
#define GLEAM_HSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

#include "auth.h"
#include "chan.h"
#include "proto.h"

#define HSHAKE_TIMEOUT_DEFAULT	10	/* seconds from accept to WELCOME */

/*
 * What a daemon asks of its handshakes; owned by the daemon, which may
 * change it (a reload, draining): each HELLO reads it afresh.
 */
struct hshake_conf {
	const struct auth_key	*key;		/* NULL or unset: no key asked */
	/* Several identities (a server's key file): used instead of key. */
	const struct auth_keys	*keys;
	uint16_t		 vmin, vmax;	/* accepted; 0: PROTO_VERSION_* */
	uint32_t		 max_frame;	/* announced in CHALLENGE */
	const char		*name;		/* ours, in CHALLENGE */
	const char		*peer_kind;	/* "client", "worker": logs */
	const char		*self_kind;	/* "server": version errors */
	int			 draining;	/* refuse HELLO with ERROR 8 */
	int			 full;		/* refuse HELLO with ERROR 7 */
	/*
	 * Resume (gleam-protocol(5), Resume): how long a session whose
	 * client asked may wait for it (0: not offered), and whether a
	 * session to resume is there: resume_find returns 0 when session
	 * holds token, belongs to identity ident ("" without a key) and
	 * waits to be resumed; 1 when it was migrated away, *moved saying
	 * where (the WELCOME says so, a REDIRECT follows, and the
	 * connection closes: gleam-protocol(5), Migration).
	 */
	uint32_t		 resume_ms;
	int			(*resume_find)(void *arg, uint64_t session,
				    const uint8_t token[PROTO_TOKEN_LEN],
				    const char *ident,
				    struct msg_redirect *moved);
	void			*resume_arg;
	/*
	 * Features of WELCOME the daemon adds for this identity (ident,
	 * "" without a key) among those HELLO offered (offered), with
	 * resume_arg: gleam-serve's FEAT_NAMES.  NULL: none.
	 */
	uint32_t		(*welcome_features)(void *arg,
				    const char *ident, uint32_t offered);
	/* Names frame types in errors; NULL: proto_type_name. */
	const char		*(*type_name)(uint16_t);
};

/*
 * What the handshake agreed, kept for the connection's life: what a
 * session layer derives its keys from and resumes with.
 */
struct hshake_result {
	uint16_t	 version;
	uint32_t	 max_frame;	/* announced: the limit on its frames */
	uint64_t	 session;	/* in WELCOME */
	int		 authed;	/* the peer proved the key */
	/* Whose: the identity (auth.h) and its key; "" and unset if none. */
	char		 ident[PROTO_IDENT_MAX + 1];
	struct auth_key	 key;
	uint8_t		 cnonce[PROTO_NONCE_LEN];	/* the client's */
	uint8_t		 snonce[PROTO_NONCE_LEN];	/* ours */
	/* The name from HELLO, control characters as '?'; may be empty. */
	char		 name[PROTO_NAME_MAX + 1];
	uint32_t	 features;	/* HELLO's */
	/* Resume: granted (a token given), or this connection resumes
	   session (then res.session is that one's). */
	int		 resumable;
	int		 resuming;
	uint8_t		 token[PROTO_TOKEN_LEN];
};

enum hshake_state {
	HSHAKE_S_HELLO,		/* waiting for HELLO */
	HSHAKE_S_AUTH,		/* CHALLENGE sent, waiting for AUTH */
	HSHAKE_S_DONE,		/* WELCOME sent */
	HSHAKE_S_FAILED		/* ERROR sent: nothing more is read */
};

struct hshake {
	const struct hshake_conf *conf;
	enum hshake_state	 state;
	char			 peer[64];	/* its address, for logs */
	struct hshake_result	 res;
	struct chan		 chan;		/* after WELCOME */
	struct evbuffer		*plain;		/* opened, not yet parsed */
};

enum hshake_rc {
	HSHAKE_OK = 0,		/* handled; the handshake goes on */
	HSHAKE_WELCOMED = 1,	/* handled: WELCOME sent, it is done */
	HSHAKE_PASS = 2,	/* after WELCOME: the frame is the daemon's */
	HSHAKE_CLOSE = 3	/* ERROR queued: flush it and close */
};

void	hshake_init(struct hshake *, const struct hshake_conf *,
	    const char *peer, uint64_t session);
int	hshake_done(const struct hshake *);
/* The largest payload accepted now: 64 KiB before WELCOME. */
uint32_t hshake_limit(const struct hshake *);
/* HSHAKE_OK, or HSHAKE_CLOSE with ERROR 4 queued for an oversized frame. */
int	hshake_header(struct hshake *, const struct frame_hdr *,
	    struct evbuffer *out);
/* One whole frame whose header passed hshake_header; enum hshake_rc. */
int	hshake_input(struct hshake *, const struct frame_hdr *,
	    const uint8_t *payload, struct evbuffer *out);
/* The handshake took too long: ERROR 10; the daemon then closes. */
void	hshake_timeout(struct hshake *, struct evbuffer *out);
/*
 * The buffer to parse frames from: raw itself before WELCOME; after it,
 * the plaintext of the whole records in raw (moved out of raw).  NULL: a
 * record did not open (logged); close without sending anything more.
 */
struct evbuffer *hshake_open(struct hshake *, struct evbuffer *raw);
/* Appends the whole frames in plain to out, sealed after WELCOME. */
int	hshake_seal(struct hshake *, struct evbuffer *plain,
	    struct evbuffer *out);
void	hshake_fini(struct hshake *);
/* Queues one frame of the connection. */
void	hshake_frame(struct hshake *, struct evbuffer *out, uint16_t type,
	    uint16_t flags, uint64_t id, const void *, size_t);
/* Queues an ERROR frame (a reply to request id) with its text. */
void	hshake_error(struct hshake *, struct evbuffer *out, uint64_t id,
	    uint32_t code, const char *text);

#endif
