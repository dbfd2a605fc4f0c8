/*
 * Shared-secret authentication by challenge and response.  Each side sends
 * a random nonce; the client proves the key with
 * HMAC-SHA256(key, "gleam-v1-client" | version | client nonce | server nonce)
 * and the server answers with the same over "gleam-v1-server" (the client
 * nonce still first), so each side knows the other holds the key and the
 * key itself never crosses the wire.  A client that holds a key refuses a
 * server that does not ask for one.
 */
#ifndef GLEAM_AUTH_H
#define GLEAM_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define AUTH_KEY_BYTES	32	/* random bytes of a key */
#define AUTH_KEY_MAX	4096	/* bytes of a key file */
#define AUTH_PASS_MIN	8	/* characters of a passphrase */
#define AUTH_NAME_MAX	63	/* an identity's name (PROTO_IDENT_MAX) */
#define AUTH_KEYS_MAX	(256u << 10)	/* bytes of a server's key file */
#define AUTH_IDENTS_MAX	4096	/* identities in one */
#define AUTH_DEFAULT	"default"	/* the identity of a key without a name */
/* Argon2id's cost for a passphrase: about 0.1 s and 64 MiB a load. */
#define AUTH_PASS_OPS	2
#define AUTH_PASS_MEM	(64u << 20)

struct auth_key {
	uint8_t		k[AUTH_KEY_BYTES];
	int		set;
	char		name[AUTH_NAME_MAX + 1];	/* "" if none */
};

/*
 * A server's identities, as an authorized_keys file lists them: every
 * line of its key file, each with its own key; a line without a name is
 * the identity "default".  Names and keys are unique.
 */
struct auth_keys {
	struct auth_key	*v;		/* names filled in: never "" */
	size_t		 n;
	struct auth_key	 dummy;		/* proves nothing: an unknown name's */
};

/* Calls sodium_init(); returns -1 if the library cannot start. */
int	auth_init(void);
/*
 * Reads a client's key file (gleam-key(1)): comments, blank lines and one
 * key, a line "[name] KEY" with KEY 32 bytes in base64 or hex, or a line
 * "[name] passphrase TEXT" from which Argon2id derives it.  The file must not be
 * readable by others, nor writable by its group or others.  "-" is
 * standard input, read once and kept (stdin_read in util.h), whose mode
 * is not checked.
 * On error writes a reason naming the file into err.
 */
int	auth_key_load(struct auth_key *, const char *path, char *err,
	    size_t errlen);
void	auth_key_from(struct auth_key *, const void *secret, size_t len);
/* The text of a key file (modified); path names it in errors. */
int	auth_key_parse(struct auth_key *, char *text, size_t len,
	    const char *path, char *err, size_t errlen);
/*
 * A server's key file: one identity a line, "[name] KEY" or
 * "[name] passphrase TEXT"; as auth_key_load, but at most AUTH_KEYS_MAX
 * bytes.  Duplicate names or keys are refused, naming both lines.
 */
int	auth_keys_load(struct auth_keys *, const char *path, char *err,
	    size_t errlen);
int	auth_keys_parse(struct auth_keys *, char *text, size_t len,
	    const char *path, char *err, size_t errlen);
void	auth_keys_free(struct auth_keys *);
/*
 * The identity a client names in AUTH ("" for none: "default"); with one
 * identity, that one whatever the name.  Every identity's name is read
 * in constant time, and an unknown name gets the dummy key, whose proof
 * then fails as a wrong key's does; *known says which it was (logs only).
 */
const struct auth_key *auth_keys_find(const struct auth_keys *,
	    const char *ident, int *known);
/* 32 bytes from base64 or 64 hex digits; -1 if s is not that. */
int	auth_key_decode(struct auth_key *, const char *s);
/* The key of a passphrase (Argon2id); -1 if it cannot be derived. */
int	auth_key_passphrase(struct auth_key *, const char *, size_t);
/* 0 if s is a valid identity name. */
int	auth_name_check(const char *s);
void	auth_nonce(uint8_t nonce[PROTO_NONCE_LEN]);
/* n bytes from the system's generator. */
void	auth_random(void *, size_t n);
void	auth_proof(const struct auth_key *, int server, uint16_t version,
	    const uint8_t own[PROTO_NONCE_LEN],
	    const uint8_t peer[PROTO_NONCE_LEN], uint8_t out[PROTO_PROOF_LEN]);
/* Constant-time comparison of 16 bytes (tokens); 0 when equal. */
int	auth_equal16(const uint8_t a[16], const uint8_t b[16]);
/* Constant-time comparison; 0 when equal. */
int	auth_equal(const uint8_t a[PROTO_PROOF_LEN],
	    const uint8_t b[PROTO_PROOF_LEN]);

#endif
