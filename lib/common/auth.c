/* Challenge-response authentication on libsodium. */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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
 * The lines of a key file: comments (#) and blank lines, and keys, each a
 * line "[name] KEY", KEY being 32 bytes in base64 (as gleam-key prints
 * them) or hex, or "[name] passphrase TEXT".  At most max of them;
 * ks->v grows as they come, names as written ("" for none).
 */
static int
keys_lines(struct auth_keys *ks, size_t max, int *lines, char *text,
    size_t len, const char *path, char *err, size_t errlen)
{
	char *line, *next, *end, *sp, *name, *word;
	struct auth_key *k;
	int lineno = 0;
	size_t cap = 0;

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
		if (ks->n == max) {
			if (max == 1)
				snprintf(err, errlen, "key file %s:%d: a second "
				    "key (a client's key file holds its one "
				    "identity; only gleam-serve's lists several)",
				    path, lineno);
			else
				snprintf(err, errlen, "key file %s:%d: more than "
				    "%zu identities", path, lineno, max);
			return -1;
		}
		if (ks->n == cap) {
			size_t nc = cap ? 2 * cap : 4;
			void *nv;

			if (nc > max)
				nc = max;
			/* Not realloc: the keys moved must not stay behind. */
			if ((nv = sodium_allocarray(nc, sizeof *ks->v)) ==
			    NULL) {
				snprintf(err, errlen, "key file %s: out of "
				    "memory", path);
				return -1;
			}
			if (ks->n > 0)
				memcpy(nv, ks->v, ks->n * sizeof *ks->v);
			if (ks->v != NULL)
				sodium_free(ks->v);
			ks->v = nv;
			cap = nc;
		}
		k = &ks->v[ks->n];
		memset(k, 0, sizeof *k);
		if (lines != NULL)
			lines[ks->n] = lineno;
		ks->n++;
		name = NULL;
		word = line;
		if (!(strncmp(line, "passphrase", 10) == 0 &&
		    (line[10] == ' ' || line[10] == '\t')) &&
		    (sp = strpbrk(line, " \t")) != NULL) {
			*sp++ = '\0';
			while (*sp == ' ' || *sp == '\t')
				sp++;
			name = line;
			word = sp;
		}
		if (name != NULL && auth_name_check(name) == -1) {
			snprintf(err, errlen, "key file %s:%d: bad identity "
			    "name (letters, digits, '.', '_', '-', '@', at "
			    "most %d)", path, lineno, AUTH_NAME_MAX);
			return -1;
		}
		if (strncmp(word, "passphrase", 10) == 0 &&
		    (word[10] == ' ' || word[10] == '\t')) {
			word += 10;
			while (*word == ' ' || *word == '\t')
				word++;
			if (strlen(word) < AUTH_PASS_MIN) {
				snprintf(err, errlen, "key file %s:%d: "
				    "passphrase shorter than %d characters",
				    path, lineno, AUTH_PASS_MIN);
				return -1;
			}
			if (auth_key_passphrase(k, word, strlen(word)) ==
			    -1) {
				snprintf(err, errlen, "key file %s:%d: cannot "
				    "derive the key (out of memory?)", path,
				    lineno);
				return -1;
			}
		} else if (strpbrk(word, " \t") != NULL ||
		    auth_key_decode(k, word) == -1) {
			snprintf(err, errlen, "key file %s:%d: not a key (32 "
			    "random bytes in base64 or hex, as gleam-key "
			    "prints; or \"passphrase TEXT\")", path, lineno);
			return -1;
		}
		if (name != NULL)
			snprintf(k->name, sizeof k->name, "%s", name);
	}
	if (ks->n == 0) {
		snprintf(err, errlen, "key file %s: no key in it (make one "
		    "with gleam-key)", path);
		return -1;
	}
	return 0;
}

void
auth_keys_free(struct auth_keys *ks)
{
	if (ks->v != NULL)
		sodium_free(ks->v);	/* zeroed as it goes */
	ks->v = NULL;
	ks->n = 0;
	sodium_memzero(&ks->dummy, sizeof ks->dummy);
}

int
auth_key_parse(struct auth_key *key, char *text, size_t len, const char *path,
    char *err, size_t errlen)
{
	struct auth_keys ks;
	int rc;

	memset(key, 0, sizeof *key);
	memset(&ks, 0, sizeof ks);
	if ((rc = keys_lines(&ks, 1, NULL, text, len, path, err, errlen)) == 0)
		*key = ks.v[0];
	auth_keys_free(&ks);
	return rc;
}

int
auth_keys_parse(struct auth_keys *ks, char *text, size_t len,
    const char *path, char *err, size_t errlen)
{
	int *lines;
	size_t i, j;

	memset(ks, 0, sizeof *ks);
	if ((lines = calloc(AUTH_IDENTS_MAX, sizeof *lines)) == NULL) {
		snprintf(err, errlen, "key file %s: out of memory", path);
		return -1;
	}
	if (keys_lines(ks, AUTH_IDENTS_MAX, lines, text, len, path, err,
	    errlen) == -1)
		goto fail;
	for (i = 0; i < ks->n; i++) {
		if (ks->v[i].name[0] == '\0')
			snprintf(ks->v[i].name, sizeof ks->v[i].name, "%s",
			    AUTH_DEFAULT);
		for (j = 0; j < i; j++) {
			if (strcmp(ks->v[i].name, ks->v[j].name) == 0) {
				snprintf(err, errlen, "key file %s:%d: "
				    "identity %s again (first on line %d)",
				    path, lines[i], ks->v[i].name, lines[j]);
				goto fail;
			}
			if (sodium_memcmp(ks->v[i].k, ks->v[j].k,
			    sizeof ks->v[i].k) == 0) {
				snprintf(err, errlen, "key file %s:%d: the same "
				    "key as line %d (each identity needs its "
				    "own)", path, lines[i], lines[j]);
				goto fail;
			}
		}
	}
	free(lines);
	/* An unknown name's key: random, so it proves nothing. */
	randombytes_buf(ks->dummy.k, sizeof ks->dummy.k);
	ks->dummy.set = 1;
	return 0;
fail:
	free(lines);
	auth_keys_free(ks);
	return -1;
}

const struct auth_key *
auth_keys_find(const struct auth_keys *ks, const char *ident, int *known)
{
	char want[AUTH_NAME_MAX + 1], have[AUTH_NAME_MAX + 1];
	size_t i, pick = 0, m;
	int found = 0, eq;

	*known = 0;
	if (ks->n == 0)
		return &ks->dummy;
	if (ks->n == 1) {
		*known = 1;
		return &ks->v[0];
	}
	/* Whole fixed-size buffers, every one: the time says nothing. */
	memset(want, 0, sizeof want);
	snprintf(want, sizeof want, "%s", ident[0] != '\0' ? ident :
	    AUTH_DEFAULT);
	if (strlen(ident) > AUTH_NAME_MAX)
		want[0] = '\0';	/* no name is that long */
	for (i = 0; i < ks->n; i++) {
		memset(have, 0, sizeof have);
		memcpy(have, ks->v[i].name, strlen(ks->v[i].name));
		eq = sodium_memcmp(want, have, sizeof want) == 0;
		m = (size_t)0 - (size_t)eq;
		pick = (pick & ~m) | (i & m);
		found |= eq;
	}
	sodium_memzero(have, sizeof have);
	*known = found;
	return found ? &ks->v[pick] : &ks->dummy;
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

/*
 * A key file's bytes, NUL-terminated, in *buf (sodium_malloc'd: freed
 * zeroed), after the checks every program makes.
 */
static int
keys_read(const char *path, size_t max, char **buf, size_t *lenp, char *err,
    size_t errlen)
{
	struct stat st;
	ssize_t n;
	size_t len = 0;
	char *b;
	int fd;

	*buf = NULL;
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
		if (len >= max) {
			snprintf(err, errlen, "key file stdin: longer than %zu "
			    "bytes", max);
			return -1;
		}
		/* The parsers write into their text: a copy. */
		if ((b = sodium_malloc(len + 1)) == NULL) {
			snprintf(err, errlen, "key file stdin: out of memory");
			return -1;
		}
		memcpy(b, text, len);
		b[len] = '\0';
		*buf = b;
		*lenp = len;
		return 0;
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
	if ((b = sodium_malloc(max + 64)) == NULL) {
		close(fd);
		snprintf(err, errlen, "key file %s: out of memory", path);
		return -1;
	}
	while (len < max + 63 && (n = read(fd, b + len, max + 63 - len)) !=
	    0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "key file %s: %s", path,
			    strerror(errno));
			close(fd);
			sodium_free(b);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len >= max) {
		snprintf(err, errlen, "key file %s: longer than %zu bytes",
		    path, max);
		sodium_free(b);
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
		sodium_free(b);
		return -1;
	}
	b[len] = '\0';
	*buf = b;
	*lenp = len;
	return 0;
}

int
auth_key_load(struct auth_key *key, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int rc;

	memset(key, 0, sizeof *key);
	if (keys_read(path, AUTH_KEY_MAX, &buf, &len, err, errlen) == -1)
		return -1;
	rc = auth_key_parse(key, buf, len, stdin_named(path) ? "stdin" : path,
	    err, errlen);
	sodium_free(buf);
	return rc;
}

int
auth_keys_load(struct auth_keys *ks, const char *path, char *err,
    size_t errlen)
{
	char *buf;
	size_t len;
	int rc;

	memset(ks, 0, sizeof *ks);
	if (keys_read(path, AUTH_KEYS_MAX, &buf, &len, err, errlen) == -1)
		return -1;
	rc = auth_keys_parse(ks, buf, len, stdin_named(path) ? "stdin" : path,
	    err, errlen);
	sodium_free(buf);
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
