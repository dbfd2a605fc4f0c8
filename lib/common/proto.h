/*
 * The Gleam wire protocol, version 1: one definition in code (this file and
 * proto.c) and one in prose (gleam-protocol(5)).
 *
 * Every message is a frame: a 16-byte header, little-endian,
 *
 *	u32 len		payload bytes that follow (at most the peer's max_frame)
 *	u16 type	enum msg_type
 *	u16 flags	FL_*
 *	u64 id		request id; a reply carries its request's id
 *
 * then len bytes of payload.  A connection starts with the handshake
 * HELLO -> CHALLENGE [-> AUTH] -> WELCOME; anything else before WELCOME is
 * refused.  After WELCOME the frames travel inside records (chan.h),
 * sealed when the key was proven.  Every decoder here treats its input as hostile: lengths are
 * checked before use, strings must be NUL-free, and trailing bytes are an
 * error.
 */
#ifndef GLEAM_PROTO_H
#define GLEAM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC		0x314d4c47u	/* "GLM1" as bytes on the wire */
#define PROTO_VERSION_MIN	2	/* 2: records after WELCOME (chan.h) */
#define PROTO_VERSION_MAX	2
#define PROTO_HDR_LEN		16
#define PROTO_NONCE_LEN		32
#define PROTO_PROOF_LEN		32
#define PROTO_NAME_MAX		255
#define PROTO_DEFAULT_PORT	7383
#define PROTO_MAX_FRAME_DEFAULT	(16u << 20)	/* 16 MiB */
#define PROTO_MAX_FRAME_MIN	(64u << 10)	/* a peer may not ask for less */
#define PROTO_MAX_FRAME_LIMIT	(1u << 30)

enum msg_type {
	MSG_HELLO = 1,		/* c->s: magic, versions, nonce, name */
	MSG_CHALLENGE = 2,	/* s->c: version, auth, nonce, name, max_frame */
	MSG_AUTH = 3,		/* c->s: proof of the key, identity */
	MSG_WELCOME = 4,	/* s->c: server's proof, session id */
	MSG_ERROR = 5,		/* either way: code and message */
	MSG_BYE = 6,		/* either way: closing cleanly */
	MSG_ECHO = 16,		/* c->s; the reply echoes the payload */
	MSG_STATUS = 17,	/* c->s, empty; the reply is a YAML document */
	MSG_BULK_DATA = 18,	/* either way: bytes counted and dropped */
	MSG_BULK_END = 19,	/* c->s after BULK_DATA; the reply: bulk_result */
	MSG_BULK_GET = 20,	/* c->s: the server sends BULK_DATA then BULK_END */
	MSG_OUTPUT = 21,	/* s->c, one-way: the client's device printf or
				   assert output (msg_output), sent before the
				   reply of the call that flushed it */
	/*
	 * Migration (gleam-protocol(5), Migration): a source server moves a
	 * session to a target, then tells its client where it went.
	 */
	MSG_MIG_STATE = 22,	/* src->dst, first: the objects (migrate.h) */
	MSG_MIG_MEM = 23,	/* src->dst, one-way: u64 address, bytes */
	MSG_MIG_END = 24,	/* src->dst: the session's stream (msg_mig_end);
				   the reply: u32 0, or ERROR */
	MSG_REDIRECT = 25,	/* s->c, last: resume at msg_redirect */
	MSG_MIGRATE_ONE = 26,	/* admin->s: move one client's session
				   (msg_migrate_one); the reply: u32 0 once
				   ordered, or ERROR */
	MSG_HOST = 27,		/* s->c, one-way: host functions reached
				   (R_HOST_FUNC, host nodes): u32 n, then n
				   u64 callback ids, in the order reached;
				   an id with UOBJ_NOTICE set: a user
				   object gone (R_UOBJ_CREATE's id) */
	MSG_REMOTE_FIRST = 256	/* 256 and up: the remoting calls */
};

/* A MSG_HOST id that names a user object gone, its destructor to run. */
#define UOBJ_NOTICE	(1ULL << 63)

enum msg_flag {
	FL_REPLY = 0x0001,	/* this frame answers request id */
	FL_ZSTD = 0x0002,	/* payload is one zstd frame */
	FL_ONEWAY = 0x0004	/* a remoting call that wants no reply; with
				   FL_REPLY: the error such a call met */
};

enum proto_err {
	PERR_VERSION = 1,	/* no common protocol version */
	PERR_AUTH = 2,		/* key missing or wrong */
	PERR_MALFORMED = 3,	/* a frame or payload that does not decode */
	PERR_TOOBIG = 4,	/* a frame over max_frame */
	PERR_UNKNOWN = 5,	/* a message type this peer does not know */
	PERR_STATE = 6,		/* a message not allowed at this point */
	PERR_BUSY = 7,		/* too many clients */
	PERR_SHUTDOWN = 8,	/* the server is draining */
	PERR_INTERNAL = 9,	/* the server failed; not the client's fault */
	PERR_TIMEOUT = 10,	/* the handshake took too long */
	PERR_AGAIN = 11,	/* busy for a moment: connect again */
	PERR_NOSESSION = 12	/* MIGRATE_ONE: no such session to move */
};

enum auth_kind {
	AUTH_NONE = 0,
	AUTH_HMAC_SHA256 = 1
};

struct frame_hdr {
	uint32_t	len;
	uint16_t	type;
	uint16_t	flags;
	uint64_t	id;
};

/*
 * HELLO's and WELCOME's features.  Resume (gleam-protocol(5), Resume): a
 * client asks that its session outlive its connection (FEAT_RESUME) and
 * the server's WELCOME grants it with a token; a later HELLO with
 * FEAT_RESUMING names that session and token, and its WELCOME says
 * FEAT_RESUMING when the session was found, with FEAT_MOVED when it was
 * migrated away (gleam-protocol(5), Migration): then a REDIRECT is the
 * one frame after the WELCOME, and the server closes.
 */
#define FEAT_RESUME	0x1
#define FEAT_RESUMING	0x2
/*
 * Strong names (gleam-protocol(5), Weight cache): in HELLO, the client
 * can name weight-cache entries by BLAKE2b-256; in WELCOME, answered only
 * to a client that said so, its scope is shared (a cache_share group's)
 * and names entries so.  Without it in WELCOME, names are XXH3-128.
 */
#define FEAT_NAMES	0x4
/*
 * In WELCOME, with FEAT_RESUMING: the session moved to another server
 * (gleam-protocol(5), Migration); its REDIRECT follows.
 */
#define FEAT_MOVED	0x8
#define PROTO_TOKEN_LEN	16

struct msg_hello {
	uint32_t	magic;
	uint16_t	vmin, vmax;
	uint32_t	features;
	uint8_t		nonce[PROTO_NONCE_LEN];
	char		name[PROTO_NAME_MAX + 1];
	/* With FEAT_RESUMING: the session to resume and its token. */
	uint64_t	session;
	uint8_t		token[PROTO_TOKEN_LEN];
};

struct msg_challenge {
	uint16_t	version;
	uint16_t	auth;		/* enum auth_kind */
	uint8_t		nonce[PROTO_NONCE_LEN];
	char		name[PROTO_NAME_MAX + 1];
	uint32_t	max_frame;
};

/*
 * AUTH: the proof, then (optional on the wire) the identity whose key it
 * proves (gleam-key(1), KEY FILES); absent when the client's key has no
 * name, which is the identity "default".  An identity given is never
 * empty, so that the round trip is byte for byte.
 */
#define PROTO_IDENT_MAX		63

struct msg_auth {
	uint8_t		proof[PROTO_PROOF_LEN];
	char		ident[PROTO_IDENT_MAX + 1];	/* "": none */
};

struct msg_welcome {
	uint16_t	has_proof;
	uint8_t		proof[PROTO_PROOF_LEN];
	uint64_t	session;
	/* Optional on the wire: absent, they read as 0. */
	uint32_t	features;	/* FEAT_RESUME granted, FEAT_RESUMING */
	/* With FEAT_RESUME: the token and how long the session waits. */
	uint8_t		token[PROTO_TOKEN_LEN];
	uint32_t	resume_ms;
};

struct msg_error {
	uint32_t	code;		/* enum proto_err */
	char		text[512];
};

struct msg_bulk_get {
	uint64_t	max_bytes;	/* stop after this many bytes */
	uint32_t	duration_ms;	/* or after this long, whichever first */
	uint32_t	chunk;		/* bytes per BULK_DATA frame */
};

/* MSG_OUTPUT: bytes the device printed, for the client's fd 1 or 2. */
#define OUTPUT_STDOUT	1
#define OUTPUT_STDERR	2
#define OUTPUT_MAX	(60u << 10)	/* bytes a frame carries at most: under
					   any max_frame (PROTO_MAX_FRAME_MIN) */

struct msg_output {
	uint8_t		 stream;	/* OUTPUT_STDOUT or OUTPUT_STDERR */
	const uint8_t	*data;		/* into the decoded payload */
	uint32_t	 len;		/* 1 to OUTPUT_MAX */
};

/*
 * MSG_REDIRECT: the session went to another server; the client resumes
 * it there (FEAT_RESUMING) under that server's session id and token.
 */
struct msg_redirect {
	char		 host[256];
	uint16_t	 port;
	uint64_t	 session;
	uint8_t		 token[PROTO_TOKEN_LEN];
};

/*
 * MSG_MIGRATE_ONE: an admin (gleam-serve(8), admins) asks the server to
 * move one remoting client's session to host:port, chosen by its session
 * number or by its address as the status document shows them.
 */
#define MIGSEL_SESSION	1
#define MIGSEL_ADDRESS	2
struct msg_migrate_one {
	uint8_t		 selector;	/* MIGSEL_* */
	uint64_t	 session;	/* MIGSEL_SESSION */
	char		 address[64];	/* MIGSEL_ADDRESS: host:port */
	char		 host[256];	/* the target */
	uint16_t	 port;
};

/*
 * MSG_MIG_END: where the client's stream stands, so that the target goes
 * on with it: the source's counts (chan.h), what it sent that the client
 * has not acknowledged (from keep_base to tx_bytes), and the plaintext
 * it received but had not yet served (the start of a frame).
 */
#define MIG_KEEP_MAX	PROTO_MAX_FRAME_LIMIT
struct msg_mig_end {
	uint64_t	 tx_bytes, rx_bytes, peer_ack, acked;
	uint64_t	 keep_base;
	const uint8_t	*keep;		/* tx_bytes - keep_base bytes */
	const uint8_t	*pending;	/* into the decoded payload */
	uint32_t	 npending;
};

struct msg_bulk_result {
	uint64_t	bytes;		/* payload bytes received or sent */
	uint64_t	elapsed_ns;	/* after BULK_DATA: first to last frame's
					   arrival; after BULK_GET: the request
					   to the last frame queued */
};

/* Header to and from its 16 bytes; the caller checks len against max_frame. */
void	proto_hdr_encode(uint8_t *, const struct frame_hdr *);
void	proto_hdr_decode(const uint8_t *, struct frame_hdr *);
const char *proto_type_name(uint16_t);
const char *proto_err_name(uint32_t);

/* A bounds-checked reader over a payload. */
struct pr {
	const uint8_t	*p;
	size_t		 len, off;
	int		 bad;
};

void	pr_init(struct pr *, const void *, size_t);
uint8_t	pr_u8(struct pr *);
uint16_t pr_u16(struct pr *);
uint32_t pr_u32(struct pr *);
uint64_t pr_u64(struct pr *);
void	pr_bytes(struct pr *, void *, size_t);
/* A u16-length string of at most max bytes without NUL, into out[max+1]. */
void	pr_str(struct pr *, char *out, size_t max);
const void *pr_take(struct pr *, size_t);
/* 0 if everything was read and nothing is left over, else -1. */
int	pr_done(struct pr *);

/* A growing writer. */
struct pw {
	uint8_t		*p;
	size_t		 len, cap;
	int		 bad;
};

void	pw_init(struct pw *);
void	pw_free(struct pw *);
void	pw_u8(struct pw *, uint8_t);
void	pw_u16(struct pw *, uint16_t);
void	pw_u32(struct pw *, uint32_t);
void	pw_u64(struct pw *, uint64_t);
void	pw_bytes(struct pw *, const void *, size_t);
void	pw_str(struct pw *, const char *);
/* Appends n bytes of room and returns them (NULL once the writer failed). */
uint8_t *pw_room(struct pw *, size_t n);

/* Payload codecs: encoders append to pw, decoders return 0 or -1. */
void	msg_hello_enc(struct pw *, const struct msg_hello *);
int	msg_hello_dec(const void *, size_t, struct msg_hello *);
void	msg_challenge_enc(struct pw *, const struct msg_challenge *);
int	msg_challenge_dec(const void *, size_t, struct msg_challenge *);
void	msg_auth_enc(struct pw *, const struct msg_auth *);
int	msg_auth_dec(const void *, size_t, struct msg_auth *);
void	msg_welcome_enc(struct pw *, const struct msg_welcome *);
int	msg_welcome_dec(const void *, size_t, struct msg_welcome *);

/*
 * A bulk lane (R_LANES): a second TCP connection that carries only the
 * stripes of R_MEM_HTOD_LANES and R_MEM_DTOH_LANES copies, in the order
 * of those calls on the main connection.  It opens with 24 bytes, not a
 * record: "GLLN", the lane's index (u32) and the 16-byte token of
 * R_LANES's reply (secret: that reply is sealed).  Then each stripe goes
 * as the records of the lane's own chan (chan_init_lane), of
 * PROTO_LANE_REC plaintext bytes but the last (stripe.h); no frames.
 */
#define PROTO_LANE_MAGIC	0x4e4c4c47u	/* "GLLN" as bytes on the wire */
#define PROTO_LANE_TOKEN	16
#define PROTO_LANE_HELLO	(8 + PROTO_LANE_TOKEN)
#define PROTO_LANES_MAX		16
#define PROTO_LANE_REC		(1u << 20)

/*
 * Lane i's stripe of a copy of len bytes over n lanes: [*off, *off + *cnt),
 * whole pages but the last; a lane may get nothing.
 */
static inline void
proto_lane_stripe(uint64_t len, uint32_t n, uint32_t i, uint64_t *off,
    uint64_t *cnt)
{
	uint64_t per = ((len + n - 1) / n + 4095) & ~(uint64_t)4095;
	uint64_t a = per * i, b = per * (i + 1);

	if (a > len)
		a = len;
	if (b > len)
		b = len;
	*off = a;
	*cnt = b - a;
}

void	proto_lane_hello_enc(uint8_t *out, uint32_t idx, const uint8_t *token);
/* 0 if p is the hello of lane *idx (< nlanes) with that token, else -1. */
int	proto_lane_hello_dec(const void *p, size_t len, const uint8_t *token,
	    uint32_t nlanes, uint32_t *idx);

/*
 * In a resumable session (gleam-protocol(5), Resume) lanes go where the
 * main connection goes, to the server's address (through whatever stands
 * between), and come again after a drop.  Such a lane opens with 40
 * bytes, not a record: "GLLR", the lane's index (u32), its epoch (u32:
 * 0 for the first connection of the lane, one more for each that
 * replaces it), a zero u32, the session's id (u64, from WELCOME) and the
 * token of R_LANES's reply.  The server's listener routes it by the
 * session's id to the session's worker, which checks the rest.  The
 * lane's records are keyed from the secret of R_LANES's reply, its index
 * and epoch (chan_init_lane_key), so that no two connections share keys.
 */
#define PROTO_LANE_RMAGIC	0x524c4c47u	/* "GLLR" as bytes on the wire */
#define PROTO_LANE_RHELLO	(24 + PROTO_LANE_TOKEN)
#define PROTO_LANE_SECRET	32	/* after the token, in R_LANES's reply */

struct lane_rhello {
	uint32_t	 idx;
	uint32_t	 epoch;
	uint64_t	 session;
	uint8_t		 token[PROTO_LANE_TOKEN];
};

void	proto_lane_rhello_enc(uint8_t *out, const struct lane_rhello *);
/* 0 if p is a resumable lane's hello (its token not checked), else -1. */
int	proto_lane_rhello_dec(const void *p, size_t len, struct lane_rhello *);
void	msg_error_enc(struct pw *, const struct msg_error *);
int	msg_error_dec(const void *, size_t, struct msg_error *);
/* msg_error_enc of code and text (cut to msg_error's text). */
void	msg_error_put(struct pw *, uint32_t code, const char *text);
/*
 * Refuses a connection before its handshake: one ERROR frame (code, text),
 * sent without waiting (what does not fit the socket's buffer is dropped),
 * then fd is closed.  For an accept callback that will not serve the peer.
 */
void	proto_refuse(int fd, uint32_t code, const char *text);
void	msg_bulk_get_enc(struct pw *, const struct msg_bulk_get *);
int	msg_bulk_get_dec(const void *, size_t, struct msg_bulk_get *);
void	msg_bulk_result_enc(struct pw *, const struct msg_bulk_result *);
int	msg_bulk_result_dec(const void *, size_t, struct msg_bulk_result *);
void	msg_output_enc(struct pw *, const struct msg_output *);
int	msg_output_dec(const void *, size_t, struct msg_output *);
void	msg_redirect_enc(struct pw *, const struct msg_redirect *);
int	msg_redirect_dec(const void *, size_t, struct msg_redirect *);
void	msg_migrate_one_enc(struct pw *, const struct msg_migrate_one *);
int	msg_migrate_one_dec(const void *, size_t, struct msg_migrate_one *);
void	msg_mig_end_enc(struct pw *, const struct msg_mig_end *);
int	msg_mig_end_dec(const void *, size_t, struct msg_mig_end *);

#endif
