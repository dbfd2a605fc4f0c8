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

#define AUTH_KEY_MIN	16	/* bytes of secret a key file must hold */
#define AUTH_KEY_MAX	4096

struct auth_key {
	uint8_t		k[32];	/* SHA-256 of the file's secret */
	int		set;
};

/* Calls sodium_init(); returns -1 if the library cannot start. */
int	auth_init(void);
/*
 * Reads a key file: its bytes, less trailing whitespace, are the secret.
 * On error writes a reason naming the file into err.
 */
int	auth_key_load(struct auth_key *, const char *path, char *err,
	    size_t errlen);
void	auth_key_from(struct auth_key *, const void *secret, size_t len);
void	auth_nonce(uint8_t nonce[PROTO_NONCE_LEN]);
void	auth_proof(const struct auth_key *, int server, uint16_t version,
	    const uint8_t own[PROTO_NONCE_LEN],
	    const uint8_t peer[PROTO_NONCE_LEN], uint8_t out[PROTO_PROOF_LEN]);
/* Constant-time comparison; 0 when equal. */
int	auth_equal(const uint8_t a[PROTO_PROOF_LEN],
	    const uint8_t b[PROTO_PROOF_LEN]);

#endif
