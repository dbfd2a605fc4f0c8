/*
 * The session layer's records (chan.h).  Keys are derived with libsodium's
 * HMAC-SHA256; records are sealed with OpenSSL's AES-256-GCM, which uses
 * the CPU's AES and carry-less multiply instructions (several GB/s a core,
 * more than twice libsodium's AES-GCM on the same machine).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "auth.h"
#include "chan.h"

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int
chan_fail(struct chan *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
chan_fail(struct chan *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
	return -1;
}

/* HMAC-SHA256(key, label | extra) */
static void
kdf(uint8_t out[CHAN_KEY], const uint8_t *key, const char *label,
    const uint8_t *extra, size_t extralen, const uint8_t *extra2,
    size_t extra2len)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, CHAN_KEY);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label,
	    strlen(label) + 1);
	if (extralen > 0)
		crypto_auth_hmacsha256_update(&st, extra, extralen);
	if (extra2len > 0)
		crypto_auth_hmacsha256_update(&st, extra2, extra2len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof st);
}

static void *
cipher_new(const uint8_t key[CHAN_KEY], int enc)
{
	EVP_CIPHER_CTX *x;

	if ((x = EVP_CIPHER_CTX_new()) == NULL)
		return NULL;
	if ((enc ? EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, key, NULL) :
	    EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, key, NULL)) != 1) {
		EVP_CIPHER_CTX_free(x);
		return NULL;
	}
	return x;
}

/* Both directions' ciphers from the connection's secret c->prk. */
static int
chan_keys(struct chan *c, const char *c2s, const char *s2c,
    const uint8_t *extra, size_t extralen)
{
	uint8_t kc[CHAN_KEY], ks[CHAN_KEY];

	kdf(kc, c->prk, c2s, extra, extralen, NULL, 0);
	kdf(ks, c->prk, s2c, extra, extralen, NULL, 0);
	c->tx = cipher_new(c->server ? ks : kc, 1);
	c->rx = cipher_new(c->server ? kc : ks, 0);
	sodium_memzero(kc, sizeof kc);
	sodium_memzero(ks, sizeof ks);
	if (c->tx == NULL || c->rx == NULL) {
		chan_fini(c);
		snprintf(c->err, sizeof c->err, "AES-256-GCM cannot start");
		return -1;
	}
	return 0;
}

int
chan_init(struct chan *c, const struct auth_key *key, int server,
    const uint8_t cnonce[PROTO_NONCE_LEN],
    const uint8_t snonce[PROTO_NONCE_LEN])
{
	memset(c, 0, sizeof *c);
	c->on = 1;
	c->server = server;
	if (key == NULL || !key->set)
		return 0;
	c->sealed = 1;
	kdf(c->prk, key->k, "gleam-v2 connection", cnonce, PROTO_NONCE_LEN,
	    snonce, PROTO_NONCE_LEN);
	return chan_keys(c, "gleam-v2 client to server",
	    "gleam-v2 server to client", NULL, 0);
}

int
chan_init_lane(struct chan *c, const struct chan *parent, uint32_t idx)
{
	uint8_t i[4];

	memset(c, 0, sizeof *c);
	c->on = 1;
	c->server = parent->server;
	if (!parent->sealed)
		return 0;
	c->sealed = 1;
	put32(i, idx);
	kdf(c->prk, parent->prk, "gleam-v2 lane", i, sizeof i, NULL, 0);
	return chan_keys(c, "gleam-v2 lane client to server",
	    "gleam-v2 lane server to client", NULL, 0);
}

int
chan_init_lane_key(struct chan *c, int sealed, int server,
    const uint8_t secret[CHAN_KEY], uint32_t idx, uint32_t epoch)
{
	uint8_t ie[8];

	memset(c, 0, sizeof *c);
	c->on = 1;
	c->server = server;
	if (!sealed)
		return 0;
	c->sealed = 1;
	put32(ie, idx);
	put32(ie + 4, epoch);
	kdf(c->prk, secret, "gleam-v2 resumable lane", ie, sizeof ie, NULL, 0);
	return chan_keys(c, "gleam-v2 lane client to server",
	    "gleam-v2 lane server to client", NULL, 0);
}

void
chan_fini(struct chan *c)
{
	if (c->tx != NULL)
		EVP_CIPHER_CTX_free(c->tx);
	if (c->rx != NULL)
		EVP_CIPHER_CTX_free(c->rx);
	c->tx = c->rx = NULL;
	sodium_memzero(c->prk, sizeof c->prk);
}

void
chan_resume(struct chan *c, const struct chan *old)
{
	c->tx_bytes = old->tx_bytes;
	c->rx_bytes = old->rx_bytes;
	c->peer_ack = old->peer_ack;
	c->acked = old->acked;
}

static void
nonce(uint8_t iv[12], uint64_t n)
{
	put64(iv, n);
	put32(iv + 8, 0);
}

void
chan_seal_begin(struct chan *c, uint8_t hdr[CHAN_HDR], size_t n)
{
	uint8_t iv[12];
	int outl;

	put32(hdr, (uint32_t)(n + (c->sealed ? CHAN_TAG : 0)));
	hdr[4] = CHAN_DATA;
	hdr[5] = 0;
	hdr[6] = hdr[7] = 0;
	put64(hdr + 8, c->rx_bytes);
	c->acked = c->rx_bytes;
	c->tx_bytes += n;
	if (!c->sealed) {
		c->tx_rec++;
		return;
	}
	nonce(iv, c->tx_rec++);
	EVP_EncryptInit_ex(c->tx, NULL, NULL, NULL, iv);
	EVP_EncryptUpdate(c->tx, NULL, &outl, hdr, CHAN_HDR);
}

void
chan_seal_update(struct chan *c, uint8_t *out, const void *p, size_t n)
{
	int outl;

	if (!c->sealed) {
		if (out != p && n > 0)
			memmove(out, p, n);
		return;
	}
	/* EVP takes int lengths. */
	while (n > 0) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;

		EVP_EncryptUpdate(c->tx, out, &outl, p, k);
		out += k;
		p = (const uint8_t *)p + k;
		n -= (size_t)k;
	}
}

size_t
chan_seal_final(struct chan *c, uint8_t *tag)
{
	int outl;

	if (!c->sealed)
		return 0;
	EVP_EncryptFinal_ex(c->tx, tag, &outl);
	EVP_CIPHER_CTX_ctrl(c->tx, EVP_CTRL_GCM_GET_TAG, CHAN_TAG, tag);
	return CHAN_TAG;
}

size_t
chan_seal(struct chan *c, uint8_t *out, const void *p, size_t n)
{
	chan_seal_begin(c, out, n);
	chan_seal_update(c, out + CHAN_HDR, p, n);
	chan_seal_final(c, out + CHAN_HDR + n);
	return chan_wire(c, n);
}

ssize_t
chan_hdr(struct chan *c, const uint8_t hdr[CHAN_HDR])
{
	uint32_t len = get32(hdr);
	uint64_t ack = get64(hdr + 8);
	size_t tag = c->sealed ? CHAN_TAG : 0;

	if (hdr[4] != CHAN_DATA || hdr[5] != 0 || hdr[6] != 0 || hdr[7] != 0)
		return chan_fail(c, "record of unknown kind %u",
		    (unsigned)hdr[4] | (unsigned)hdr[5] << 8);
	if (len < tag || len - tag > CHAN_BODY_MAX)
		return chan_fail(c, "record of %llu bytes",
		    (unsigned long long)len);
	/*
	 * Checked here in the clear too; sealed, a forged ack fails the tag
	 * anyway, and it is used only once the record has opened.
	 */
	if (ack < c->peer_ack || ack > c->tx_bytes)
		return chan_fail(c, "acknowledgement of %llu bytes out of "
		    "order", (unsigned long long)ack);
	return (ssize_t)len;
}

void
chan_open_begin(struct chan *c, const uint8_t hdr[CHAN_HDR])
{
	uint8_t iv[12];
	int outl;

	memcpy(c->rx_hdr, hdr, CHAN_HDR);
	c->rx_left = get32(hdr) - (c->sealed ? CHAN_TAG : 0);
	if (!c->sealed)
		return;
	nonce(iv, c->rx_rec);
	EVP_DecryptInit_ex(c->rx, NULL, NULL, NULL, iv);
	EVP_DecryptUpdate(c->rx, NULL, &outl, hdr, CHAN_HDR);
}

void
chan_open_update(struct chan *c, uint8_t *out, const uint8_t *in, size_t n)
{
	int outl;

	if (n > c->rx_left)
		n = c->rx_left;	/* a caller's slip: never past the body */
	c->rx_left -= n;
	if (!c->sealed) {
		if (out != in && n > 0)
			memmove(out, in, n);
		return;
	}
	while (n > 0) {
		int k = n > (1u << 30) ? 1 << 30 : (int)n;

		EVP_DecryptUpdate(c->rx, out, &outl, in, k);
		out += k;
		in += k;
		n -= (size_t)k;
	}
}

int
chan_open_final(struct chan *c, const uint8_t *tag)
{
	uint8_t t[CHAN_TAG];
	int outl;

	if (c->rx_left != 0)
		return chan_fail(c, "record cut short by %llu bytes",
		    (unsigned long long)c->rx_left);
	if (c->sealed) {
		memcpy(t, tag, CHAN_TAG);
		EVP_CIPHER_CTX_ctrl(c->rx, EVP_CTRL_GCM_SET_TAG, CHAN_TAG, t);
		if (EVP_DecryptFinal_ex(c->rx, t, &outl) != 1)
			return chan_fail(c, "record %llu does not authenticate "
			    "(tampered with, replayed or forged)",
			    (unsigned long long)c->rx_rec);
	}
	c->rx_rec++;
	c->rx_bytes += get32(c->rx_hdr) - (c->sealed ? CHAN_TAG : 0);
	c->peer_ack = get64(c->rx_hdr + 8);
	return 0;
}

int
chan_open(struct chan *c, uint8_t *rec, size_t reclen, size_t *n)
{
	ssize_t len;
	size_t body;

	if (reclen < CHAN_HDR || (len = chan_hdr(c, rec)) == -1)
		return reclen < CHAN_HDR ? chan_fail(c, "record cut short") : -1;
	if ((size_t)len != reclen - CHAN_HDR)
		return chan_fail(c, "record of %llu bytes in a buffer of "
		    "another size", (unsigned long long)len);
	body = (size_t)len - (c->sealed ? CHAN_TAG : 0);
	chan_open_begin(c, rec);
	chan_open_update(c, rec + CHAN_HDR, rec + CHAN_HDR, body);
	if (chan_open_final(c, rec + CHAN_HDR + body) == -1)
		return -1;
	*n = body;
	return 0;
}

int
chan_ack_due(const struct chan *c)
{
	return c->on && c->rx_bytes - c->acked >= CHAN_ACK_EVERY;
}
