/*
 * Unit tests for lib/auth.c.  The proofs are checked against HMAC-SHA256
 * computed here straight from libsodium over the transcript that auth.h
 * documents, after libsodium itself is checked against RFC 4231.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth.h"
#include "clenv.h"
#include "t.h"

static char dir[] = "/tmp/gleam-test-auth-XXXXXX";

static int
unhex(const char *h, uint8_t *out, size_t len)
{
	size_t bin;

	return sodium_hex2bin(out, len, h, strlen(h), NULL, &bin, NULL) == 0 &&
	    bin == len ? 0 : -1;
}

/* The documented transcript: label | u16le version | client | server nonce. */
static void
expected_proof(const void *secret, size_t len, const char *label,
    uint16_t version, const uint8_t cn[32], const uint8_t sn[32],
    uint8_t out[32])
{
	uint8_t key[32], msg[64 + 2 + 64];
	size_t n = strlen(label);

	crypto_hash_sha256(key, secret, len);
	memcpy(msg, label, n);
	msg[n] = version & 0xff;
	msg[n + 1] = version >> 8;
	memcpy(msg + n + 2, cn, 32);
	memcpy(msg + n + 2 + 32, sn, 32);
	crypto_auth_hmacsha256(out, msg, n + 2 + 64, key);
}

static void
test_vectors(void)
{
	/* RFC 4231 test cases 1 and 2. */
	uint8_t key1[20], want[32], mac[32], sha[32];
	crypto_auth_hmacsha256_state st;

	memset(key1, 0x0b, sizeof key1);
	CHECK(unhex("b0344c61d8db38535ca8afceaf0bf12b"
	    "881dc200c9833da726e9376c2e32cff7", want, 32) == 0);
	crypto_auth_hmacsha256_init(&st, key1, sizeof key1);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"Hi There", 8);
	crypto_auth_hmacsha256_final(&st, mac);
	CHECK(memcmp(mac, want, 32) == 0);

	CHECK(unhex("5bdcc146bf60754e6a042426089575c7"
	    "5a003f089d2739839dec58b964ec3843", want, 32) == 0);
	crypto_auth_hmacsha256_init(&st, (const uint8_t *)"Jefe", 4);
	crypto_auth_hmacsha256_update(&st,
	    (const uint8_t *)"what do ya want for nothing?", 28);
	crypto_auth_hmacsha256_final(&st, mac);
	CHECK(memcmp(mac, want, 32) == 0);

	/* FIPS 180-2: SHA-256("abc"); the key is the secret's SHA-256. */
	CHECK(unhex("ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad", sha, 32) == 0);
	crypto_hash_sha256(mac, (const uint8_t *)"abc", 3);
	CHECK(memcmp(mac, sha, 32) == 0);
	{
		struct auth_key k;

		memset(&k, 0, sizeof k);
		auth_key_from(&k, "abc", 3);
		CHECK(k.set == 1);
		CHECK(memcmp(k.k, sha, 32) == 0);
	}
}

static void
test_proof(void)
{
	static const char secret[] = "correct horse battery staple";
	struct auth_key k, k2;
	uint8_t cn[32], sn[32], p[32], q[32], want[32];
	int i;

	for (i = 0; i < 32; i++) {
		cn[i] = (uint8_t)i;
		sn[i] = (uint8_t)(0xff - i);
	}
	auth_key_from(&k, secret, strlen(secret));

	/* The client's proof, as documented. */
	auth_proof(&k, 0, 1, cn, sn, p);
	expected_proof(secret, strlen(secret), "gleam-v1-client", 1, cn, sn,
	    want);
	CHECK(memcmp(p, want, 32) == 0);
	/* The server's: its own nonce second, the client's first. */
	auth_proof(&k, 1, 1, sn, cn, p);
	expected_proof(secret, strlen(secret), "gleam-v1-server", 1, cn, sn,
	    want);
	CHECK(memcmp(p, want, 32) == 0);
	/* A version above 255 is little-endian. */
	auth_proof(&k, 0, 0x0102, cn, sn, p);
	expected_proof(secret, strlen(secret), "gleam-v1-client", 0x0102, cn,
	    sn, want);
	CHECK(memcmp(p, want, 32) == 0);

	/* Deterministic. */
	auth_proof(&k, 0, 1, cn, sn, p);
	auth_proof(&k, 0, 1, cn, sn, q);
	CHECK(memcmp(p, q, 32) == 0);
	CHECK(auth_equal(p, q) == 0);
	/* Differs by role. */
	auth_proof(&k, 1, 1, sn, cn, q);
	CHECK(auth_equal(p, q) != 0);
	/* By version. */
	auth_proof(&k, 0, 2, cn, sn, q);
	CHECK(auth_equal(p, q) != 0);
	/* By nonce order. */
	auth_proof(&k, 0, 1, sn, cn, q);
	CHECK(auth_equal(p, q) != 0);
	/* By either nonce. */
	cn[31] ^= 1;
	auth_proof(&k, 0, 1, cn, sn, q);
	CHECK(auth_equal(p, q) != 0);
	cn[31] ^= 1;
	sn[0] ^= 0x80;
	auth_proof(&k, 0, 1, cn, sn, q);
	CHECK(auth_equal(p, q) != 0);
	sn[0] ^= 0x80;
	/* By key. */
	auth_key_from(&k2, "correct horse battery stapler", 29);
	auth_proof(&k2, 0, 1, cn, sn, q);
	CHECK(auth_equal(p, q) != 0);

	/* auth_equal looks at every byte. */
	memcpy(q, p, 32);
	CHECK(auth_equal(p, q) == 0);
	q[0] ^= 1;
	CHECK(auth_equal(p, q) == -1);
	q[0] ^= 1;
	q[31] ^= 0x40;
	CHECK(auth_equal(p, q) == -1);

	/* Nonces are random. */
	auth_nonce(cn);
	auth_nonce(sn);
	CHECK(memcmp(cn, sn, 32) != 0);
}

/* Writes a file in the test directory with mode 0600. */
static const char *
put(const char *name, const void *data, size_t len)
{
	static char path[512];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    write(fd, data, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
	return path;
}

static void
test_load(void)
{
	/* 32 bytes 0x00..0x1f, in base64 and in hex. */
	static const char b64[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
	static const char hex[] = "000102030405060708090a0b0c0d0e0f"
	    "101112131415161718191a1b1c1d1e1f";
	struct auth_key k, want;
	char err[600], msg[700], path[512], text[256], *big;
	const char *p;
	int i;

	memset(&want, 0, sizeof want);
	for (i = 0; i < 32; i++)
		want.k[i] = (uint8_t)i;

	p = put("plain", b64, strlen(b64));
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(k.set == 1 && memcmp(k.k, want.k, 32) == 0 && k.name[0] == 0);

	p = put("hex", hex, strlen(hex));
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(memcmp(k.k, want.k, 32) == 0);

	/* Comments, blank lines, CRLF, spaces around: all the same key. */
	snprintf(text, sizeof text, "# made by gleam-key\r\n\n  %s \t\r\n\n",
	    b64);
	p = put("crlf", text, strlen(text));
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(memcmp(k.k, want.k, 32) == 0);

	/* An identity's name before the key. */
	snprintf(text, sizeof text, "alice@lab  %s\n", b64);
	p = put("named", text, strlen(text));
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(memcmp(k.k, want.k, 32) == 0);
	CHECK_STR(k.name, "alice@lab");
	snprintf(text, sizeof text, "al/ice %s\n", b64);
	p = put("badname", text, strlen(text));
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	CHECK(strstr(err, "badname:1: bad identity name") != NULL);

	/* A passphrase: Argon2id, as documented. */
	p = put("pass", "passphrase correct horse battery\n", 33);
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(auth_key_passphrase(&want, "correct horse battery", 21) == 0);
	CHECK(memcmp(k.k, want.k, 32) == 0);
	{
		static const uint8_t salt[16] = { 'g', 'l', 'e', 'a', 'm',
		    ' ', 'p', 'a', 's', 's', 'p', 'h', 'r', 'a', 's', 'e' };
		uint8_t out[32];

		CHECK(crypto_pwhash(out, 32, "correct horse battery", 21,
		    salt, 2, 64u << 20, crypto_pwhash_ALG_ARGON2ID13) == 0);
		CHECK(memcmp(out, k.k, 32) == 0);
	}
	p = put("shortpass", "passphrase 1234567\n", 19);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:1: passphrase shorter than 8 "
	    "characters", p);
	CHECK_STR(err, msg);

	snprintf(path, sizeof path, "%s/missing", dir);
	k.set = 1;
	CHECK(auth_key_load(&k, path, err, sizeof err) == -1);
	CHECK(k.set == 0);
	snprintf(msg, sizeof msg, "key file %s: %s", path, strerror(ENOENT));
	CHECK_STR(err, msg);

	/* What is not 32 bytes of key is refused: no short secrets. */
	p = put("short", "0123456789abcdef\n", 17);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:1: not a key (32 random bytes "
	    "in base64 or hex, as gleam-key prints; or \"passphrase TEXT\")",
	    p);
	CHECK_STR(err, msg);
	CHECK(k.set == 0);
	p = put("hex31", hex, 62);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	p = put("b64x", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=x", 45);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	p = put("words", "correct horse battery staple\n", 29);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	p = put("empty", "", 0);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s: no key in it (make one with "
	    "gleam-key)", p);
	CHECK_STR(err, msg);
	p = put("blank", "   \n# only a comment\n", 21);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(text, sizeof text, "%s\n%s\n", b64, hex);
	p = put("two", text, strlen(text));
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:2: a second key (a client's key "
	    "file holds its one identity; only gleam-serve's lists several)",
	    p);
	CHECK_STR(err, msg);
	CHECK(k.set == 0);
	p = put("nul", "AAEC\0AwQF", 9);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);

	CHECK(auth_key_load(&k, dir, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s: not a regular file", dir);
	CHECK_STR(err, msg);

	/* Refused as ssh refuses: others may not read it, nor others or
	 * the group write it; the group may read it. */
	p = put("open", b64, strlen(b64));
	CHECK(chmod(p, 0644) == 0);
	k.set = 1;
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	CHECK(k.set == 0);
	snprintf(msg, sizeof msg, "key file %s: readable by others (chmod "
	    "600 it)", p);
	CHECK_STR(err, msg);
	CHECK(chmod(p, 0620) == 0);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s: writable by others (chmod "
	    "600 it)", p);
	CHECK_STR(err, msg);
	CHECK(chmod(p, 0602) == 0);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	CHECK(chmod(p, 0640) == 0);
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	for (i = 0; i < 32; i++)
		want.k[i] = (uint8_t)i;
	CHECK(memcmp(k.k, want.k, 32) == 0);

	/* Comments may fill the file up to its limit, not beyond. */
	big = malloc(AUTH_KEY_MAX + 2);
	memset(big, '#', AUTH_KEY_MAX + 2);
	big[AUTH_KEY_MAX - 100] = '\n';
	memcpy(big + AUTH_KEY_MAX - 99, b64, strlen(b64));
	big[AUTH_KEY_MAX - 99 + strlen(b64)] = '\n';
	p = put("max", big, AUTH_KEY_MAX - 98 + strlen(b64));
	CHECK(auth_key_load(&k, p, err, sizeof err) == 0);
	CHECK(memcmp(k.k, want.k, 32) == 0);
	p = put("toolong", big, AUTH_KEY_MAX);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s: longer than 4096 bytes", p);
	CHECK_STR(err, msg);
	CHECK(k.set == 0);
	p = put("huge", big, AUTH_KEY_MAX + 2);
	CHECK(auth_key_load(&k, p, err, sizeof err) == -1);
	free(big);

	/* A truncated message still fits the buffer it is given. */
	p = put("short2", "x", 1);
	memset(msg, 'Z', sizeof msg);
	CHECK(auth_key_load(&k, p, msg, 10) == -1);
	CHECK(strlen(msg) == 9 && msg[10] == 'Z');
}

/* A server's key file: several identities, checked line by line. */
static void
test_keys(void)
{
	static const char b64[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
	static const char hex2[] = "ff0102030405060708090a0b0c0d0e0f"
	    "101112131415161718191a1b1c1d1e1f";
	struct auth_keys ks;
	const struct auth_key *k;
	char err[600], msg[700], text[1024], *big;
	const char *p;
	size_t off;
	int known, i;

	/* A bare key alone is the identity "default", found by any name. */
	p = put("k1", b64, strlen(b64));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == 0);
	CHECK(ks.n == 1);
	CHECK_STR(ks.v[0].name, "default");
	k = auth_keys_find(&ks, "", &known);
	CHECK(k == &ks.v[0] && known);
	k = auth_keys_find(&ks, "whoever", &known);
	CHECK(k == &ks.v[0] && known);
	auth_keys_free(&ks);
	CHECK(ks.v == NULL && ks.n == 0);

	/* Several, each found by its name; a bare one is "default". */
	snprintf(text, sizeof text, "# lab\nalice %s\n\n  bob\t%s \n%s\n"
	    "carol passphrase correct horse battery\n", b64, hex2,
	    "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
	p = put("ring", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == 0);
	CHECK(ks.n == 4);
	CHECK_STR(ks.v[0].name, "alice");
	CHECK_STR(ks.v[1].name, "bob");
	CHECK_STR(ks.v[2].name, "default");
	CHECK_STR(ks.v[3].name, "carol");
	CHECK(ks.v[0].k[0] == 0 && ks.v[1].k[0] == 0xff && ks.v[2].k[0] == 1);
	k = auth_keys_find(&ks, "bob", &known);
	CHECK(k == &ks.v[1] && known);
	k = auth_keys_find(&ks, "", &known);
	CHECK(k == &ks.v[2] && known);
	k = auth_keys_find(&ks, "carol", &known);
	CHECK(k == &ks.v[3] && known);
	{
		struct auth_key want;

		CHECK(auth_key_passphrase(&want, "correct horse battery", 21)
		    == 0);
		CHECK(memcmp(want.k, k->k, 32) == 0);
	}
	/* Unknown names, a prefix, an overlong one: the dummy, unknown. */
	k = auth_keys_find(&ks, "mallory", &known);
	CHECK(k == &ks.dummy && !known && k->set);
	k = auth_keys_find(&ks, "ali", &known);
	CHECK(k == &ks.dummy && !known);
	memset(msg, 'a', 200);
	msg[200] = '\0';
	k = auth_keys_find(&ks, msg, &known);
	CHECK(k == &ks.dummy && !known);
	/* The dummy is no identity's key. */
	for (i = 0; i < 4; i++)
		CHECK(memcmp(ks.dummy.k, ks.v[i].k, 32) != 0);
	auth_keys_free(&ks);

	/* A client's loader refuses a server's file, naming the line. */
	{
		struct auth_key one;

		CHECK(auth_key_load(&one, p, err, sizeof err) == -1);
		snprintf(msg, sizeof msg, "key file %s:4: a second key", p);
		CHECK(strncmp(err, msg, strlen(msg)) == 0);
	}

	/* Duplicate names, "default" twice, duplicate keys: refused. */
	snprintf(text, sizeof text, "alice %s\nbob %s\nalice %s\n", b64, hex2,
	    "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
	p = put("dupname", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:3: identity alice again (first "
	    "on line 1)", p);
	CHECK_STR(err, msg);
	CHECK(ks.v == NULL && ks.n == 0);
	snprintf(text, sizeof text, "%s\n\ndefault %s\n", b64, hex2);
	p = put("dupdef", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:3: identity default again "
	    "(first on line 1)", p);
	CHECK_STR(err, msg);
	snprintf(text, sizeof text, "alice %s\n# x\nbob %s\n", b64, b64);
	p = put("dupkey", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	snprintf(msg, sizeof msg, "key file %s:3: the same key as line 1 "
	    "(each identity needs its own)", p);
	CHECK_STR(err, msg);
	/* A bad line among good ones is named. */
	snprintf(text, sizeof text, "alice %s\nb*b %s\n", b64, hex2);
	p = put("badline", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	CHECK(strstr(err, "badline:2: bad identity name") != NULL);
	snprintf(text, sizeof text, "alice %s\nbob %s x\n", b64, hex2);
	p = put("badkey", text, strlen(text));
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	CHECK(strstr(err, "badkey:2: not a key") != NULL);
	p = put("none", "# nobody\n", 9);
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	CHECK(strstr(err, "no key in it") != NULL);
	p = put("ropen", b64, strlen(b64));
	CHECK(chmod(p, 0604) == 0);
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	CHECK(strstr(err, "readable by others") != NULL);

	/* Many identities, beyond a client's 4096 bytes. */
	big = malloc(AUTH_KEYS_MAX + 2);
	off = 0;
	for (i = 0; i < 300; i++) {
		uint8_t raw[32];
		char kb[64];

		memset(raw, 0, sizeof raw);
		raw[0] = (uint8_t)i;
		raw[1] = (uint8_t)(i >> 8);
		raw[2] = 0x5a;
		sodium_bin2base64(kb, sizeof kb, raw, sizeof raw,
		    sodium_base64_VARIANT_ORIGINAL);
		off += (size_t)snprintf(big + off, 128, "user%d %s\n", i, kb);
	}
	p = put("many", big, off);
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == 0);
	CHECK(ks.n == 300);
	k = auth_keys_find(&ks, "user299", &known);
	CHECK(known && k == &ks.v[299] && k->k[0] == (uint8_t)299 &&
	    k->k[1] == 1);
	auth_keys_free(&ks);
	memset(big, '#', AUTH_KEYS_MAX + 2);
	p = put("huge2", big, AUTH_KEYS_MAX + 2);
	CHECK(auth_keys_load(&ks, p, err, sizeof err) == -1);
	CHECK(strstr(err, "longer than") != NULL);
	free(big);
}

static void
cleanup(void)
{
	static const char *const f[] = { "plain", "hex", "crlf", "named",
	    "badname", "pass", "shortpass", "short", "hex31", "b64x", "words",
	    "empty", "blank", "two", "nul", "max", "toolong", "huge",
	    "short2", "open", "k1", "ring", "dupname", "dupdef", "dupkey",
	    "badline", "badkey", "none", "ropen", "many", "huge2", NULL };
	char path[512];
	int i;

	for (i = 0; f[i] != NULL; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, f[i]);
		unlink(path);
	}
	if (rmdir(dir) == -1)
		perror(dir);
}

/*
 * A key on standard input: read once and kept, its mode not checked; the
 * client library's GLEAM_KEY_FILE never reads it.
 */
static void
test_stdin(void)
{
	static const char b64[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
	struct auth_key k, k2;
	struct clenv e;
	char path[600], err[600];
	int fd;

	snprintf(path, sizeof path, "%s/stdin-key", dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1) {
		CHECK(!"open");
		return;
	}
	CHECK(write(fd, b64, sizeof b64 - 1) == (ssize_t)sizeof b64 - 1);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK(dup2(fd, STDIN_FILENO) == STDIN_FILENO);
	close(fd);
	unlink(path);
	CHECK(auth_key_load(&k, "-", err, sizeof err) == 0);
	CHECK(k.set && k.k[0] == 0 && k.k[31] == 31);
	/* A reload: the same key. */
	CHECK(auth_key_load(&k2, "-", err, sizeof err) == 0);
	CHECK(memcmp(k.k, k2.k, sizeof k.k) == 0);

	setenv("GLEAM_SERVER", "127.0.0.1:7383", 1);
	setenv("GLEAM_KEY_FILE", "-", 1);
	CHECK(clenv_read(&e, err, sizeof err) == -1);
	CHECK_STR(err, "GLEAM_KEY_FILE=-: standard input is the program's; "
	    "name a key file");
	unsetenv("GLEAM_KEY_FILE");
	unsetenv("GLEAM_SERVER");
}

int
main(void)
{
	CHECK(auth_init() == 0);
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_vectors();
	test_proof();
	test_load();
	test_keys();
	test_stdin();
	cleanup();
	return t_done("auth");
}
