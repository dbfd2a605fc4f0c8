/* Challenge-response authentication on libsodium. */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "log.h"
#include "util.h"

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

/* The salt of passphrases: fixed, since both ends derive the same key. */
static const uint8_t pass_salt[crypto_pwhash_SALTBYTES] = "gleam passphrase";

int
auth_key_decode(struct auth_key *key, const char *s)
{
	size_t n = strlen(s), got, i;
	const char *end;

	memset(key, 0, sizeof *key);
	if (n == 2 * AUTH_KEY_BYTES) {
		for (i = 0; i < n; i++)
			if (!isxdigit((unsigned char)s[i]))
				return -1;
		if (sodium_hex2bin(key->k, sizeof key->k, s, n, NULL, &got,
		    &end) != 0 || got != sizeof key->k)
			return -1;
	} else if (sodium_base642bin(key->k, sizeof key->k, s, n, NULL, &got,
	    &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    got != sizeof key->k || *end != '\0')
		return -1;
	key->set = 1;
	return 0;
}

int
auth_key_passphrase(struct auth_key *key, const char *pass, size_t len)
{
	memset(key, 0, sizeof *key);
	if (crypto_pwhash(key->k, sizeof key->k, pass, len, pass_salt,
	    AUTH_PASS_OPS, AUTH_PASS_MEM, crypto_pwhash_ALG_ARGON2ID13) != 0)
		return -1;
	key->set = 1;
	return 0;
}

/*
 * A key file's text: comments (#) and blank lines, and one key: a line
 * "[name] KEY", KEY being 32 bytes in base64 (as gleam-key prints them)
 * or hex, or a line "passphrase TEXT".
 */
int
auth_key_parse(struct auth_key *key, char *text, size_t len, const char *path,
    char *err, size_t errlen)
{
	char *line, *next, *end, *sp, *name, *word;
	int lineno = 0, found = 0;

	memset(key, 0, sizeof *key);
	if (memchr(text, '\0', len) != NULL) {
		snprintf(err, errlen, "key file %s: not text (write it with "
		    "gleam-key)", path);
		return -1;
	}
	for (line = text; line != NULL && *line != '\0'; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		end = line + strlen(line);
		while (end > line && isspace((unsigned char)end[-1]))
			*--end = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '\0' || *line == '#')
			continue;
		if (found) {
			snprintf(err, errlen, "key file %s:%d: a second key "
			    "(a file holds one)", path, lineno);
			goto fail;
		}
		found = 1;
		if (strncmp(line, "passphrase", 10) == 0 &&
		    (line[10] == ' ' || line[10] == '\t')) {
			word = line + 10;
			while (*word == ' ' || *word == '\t')
				word++;
			if (strlen(word) < AUTH_PASS_MIN) {
				snprintf(err, errlen, "key file %s:%d: "
				    "passphrase shorter than %d characters",
				    path, lineno, AUTH_PASS_MIN);
				goto fail;
			}
			if (auth_key_passphrase(key, word, strlen(word)) ==
			    -1) {
				snprintf(err, errlen, "key file %s:%d: cannot "
				    "derive the key (out of memory?)", path,
				    lineno);
				goto fail;
			}
			continue;
		}
		name = NULL;
		word = line;
		if ((sp = strpbrk(line, " \t")) != NULL) {
			*sp++ = '\0';
			while (*sp == ' ' || *sp == '\t')
				sp++;
			name = line;
			word = sp;
		}
		if (strpbrk(word, " \t") != NULL || auth_key_decode(key, word) ==
		    -1) {
			snprintf(err, errlen, "key file %s:%d: not a key (32 "
			    "random bytes in base64 or hex, as gleam-key "
			    "prints; or \"passphrase TEXT\")", path, lineno);
			goto fail;
		}
		if (name != NULL && auth_name_check(name) == -1) {
			snprintf(err, errlen, "key file %s:%d: bad identity "
			    "name (letters, digits, '.', '_', '-', '@', at "
			    "most %d)", path, lineno, AUTH_NAME_MAX);
			goto fail;
		}
		if (name != NULL)
			snprintf(key->name, sizeof key->name, "%s", name);
	}
	if (!found) {
		snprintf(err, errlen, "key file %s: no key in it (make one "
		    "with gleam-key)", path);
		goto fail;
	}
	return 0;
fail:
	sodium_memzero(key, sizeof *key);
	return -1;
}

int
auth_name_check(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("._-@", s[i]) ==
		    NULL)
			return -1;
	return i == 0 || i > AUTH_NAME_MAX ? -1 : 0;
}

int
auth_key_load(struct auth_key *key, const char *path, char *err, size_t errlen)
{
	unsigned char buf[AUTH_KEY_MAX + 64];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, rc;

	memset(key, 0, sizeof *key);
	memset(&st, 0, sizeof st);
	/*
	 * Standard input: no mode to check (a pipe's says nothing of who
	 * wrote into it), so it is taken as given; read once and kept, so
	 * that a reload finds the same key.
	 */
	if (stdin_named(path)) {
		const char *text;

		if (stdin_read("a key file", &text, &len, err, errlen) == -1)
			return -1;
		if (len >= AUTH_KEY_MAX) {
			snprintf(err, errlen, "key file stdin: longer than %d "
			    "bytes", AUTH_KEY_MAX);
			return -1;
		}
		/* auth_key_parse writes into its text. */
		memcpy(buf, text, len);
		buf[len] = '\0';
		rc = auth_key_parse(key, (char *)buf, len, "stdin", err,
		    errlen);
		sodium_memzero(buf, sizeof buf);
		return rc;
	}
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
	if (len >= AUTH_KEY_MAX) {
		snprintf(err, errlen, "key file %s: longer than %d bytes",
		    path, AUTH_KEY_MAX);
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
	buf[len] = '\0';
	rc = auth_key_parse(key, (char *)buf, len, path, err, errlen);
	sodium_memzero(buf, sizeof buf);
	return rc;
}

void
auth_random(void *p, size_t n)
{
	randombytes_buf(p, n);
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
auth_equal16(const uint8_t a[16], const uint8_t b[16])
{
	return sodium_memcmp(a, b, 16) == 0 ? 0 : -1;
}

int
auth_equal(const uint8_t a[PROTO_PROOF_LEN], const uint8_t b[PROTO_PROOF_LEN])
{
	return sodium_memcmp(a, b, PROTO_PROOF_LEN) == 0 ? 0 : -1;
}
