/* Challenge-response authentication on libsodium. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "log.h"

int
auth_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

void
auth_key_from(struct auth_key *key, const void *secret, size_t len)
{
	crypto_hash_sha256(key->k, secret, len);
	key->set = 1;
}

int
auth_key_load(struct auth_key *key, const char *path, char *err, size_t errlen)
{
	unsigned char buf[AUTH_KEY_MAX + 64];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd;

	memset(key, 0, sizeof *key);
	memset(&st, 0, sizeof st);
	/* O_NONBLOCK: a FIFO must not hang us before the check below. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "key file %s: not a regular file", path);
		return -1;
	}
	while (len < sizeof buf &&
	    (n = read(fd, buf + len, sizeof buf - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "key file %s: %s", path,
			    strerror(errno));
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len == sizeof buf) {
		snprintf(err, errlen, "key file %s: secret longer than %d "
		    "bytes", path, AUTH_KEY_MAX);
		return -1;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
	    buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	if (len > AUTH_KEY_MAX) {
		snprintf(err, errlen, "key file %s: secret longer than %d "
		    "bytes", path, AUTH_KEY_MAX);
		sodium_memzero(buf, sizeof buf);
		return -1;
	}
	if (len < AUTH_KEY_MIN) {
		snprintf(err, errlen, "key file %s: secret shorter than %d "
		    "bytes", path, AUTH_KEY_MIN);
		sodium_memzero(buf, sizeof buf);
		return -1;
	}
	/*
	 * As ssh does with a private key: a secret others can read is no
	 * secret, and one others can write lets them choose it (a group
	 * that may read it, such as a service's, is allowed).
	 */
	if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) {
		snprintf(err, errlen, "key file %s: %s by others (chmod 600 "
		    "it)", path, st.st_mode & (S_IWOTH | S_IWGRP) ?
		    "writable" : "readable");
		sodium_memzero(buf, sizeof buf);
		return -1;
	}
	auth_key_from(key, buf, len);
	sodium_memzero(buf, sizeof buf);
	return 0;
}

void
auth_nonce(uint8_t nonce[PROTO_NONCE_LEN])
{
	randombytes_buf(nonce, PROTO_NONCE_LEN);
}

void
auth_proof(const struct auth_key *key, int server, uint16_t version,
    const uint8_t own[PROTO_NONCE_LEN], const uint8_t peer[PROTO_NONCE_LEN],
    uint8_t out[PROTO_PROOF_LEN])
{
	static const char cl[] = "gleam-v1-client", sv[] = "gleam-v1-server";
	crypto_auth_hmacsha256_state st;
	uint8_t v[2] = { version & 0xff, version >> 8 };

	crypto_auth_hmacsha256_init(&st, key->k, sizeof key->k);
	if (server)
		crypto_auth_hmacsha256_update(&st, (const void *)sv,
		    sizeof sv - 1);
	else
		crypto_auth_hmacsha256_update(&st, (const void *)cl,
		    sizeof cl - 1);
	crypto_auth_hmacsha256_update(&st, v, sizeof v);
	/* The client's nonce always comes first, whoever computes. */
	if (server) {
		crypto_auth_hmacsha256_update(&st, peer, PROTO_NONCE_LEN);
		crypto_auth_hmacsha256_update(&st, own, PROTO_NONCE_LEN);
	} else {
		crypto_auth_hmacsha256_update(&st, own, PROTO_NONCE_LEN);
		crypto_auth_hmacsha256_update(&st, peer, PROTO_NONCE_LEN);
	}
	crypto_auth_hmacsha256_final(&st, out);
}

int
auth_equal(const uint8_t a[PROTO_PROOF_LEN], const uint8_t b[PROTO_PROOF_LEN])
{
	return sodium_memcmp(a, b, PROTO_PROOF_LEN) == 0 ? 0 : -1;
}
