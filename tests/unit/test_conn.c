/*
 * Unit tests for lib/conn.c and lib/net.c against a scripted server: a
 * thread on 127.0.0.1 that speaks just enough of the handshake, right or
 * wrong on purpose, and then records (chan.c), with plain blocking
 * sockets.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "chan.h"
#include "conn.h"
#include "net.h"
#include "proto.h"
#include "util.h"
#include "t.h"

enum mode {
	M_OK,		/* no auth; then one ECHO and the BYE */
	M_GARBAGE,	/* an HTTP answer */
	M_AUTH,		/* requires a key and proves it */
	M_BADPROOF,	/* requires a key, WELCOME with a wrong proof */
	M_NOPROOF,	/* requires a key, WELCOME without a proof */
	M_WRONGKEY,	/* requires a key, refuses the client's proof */
	M_VERSION,	/* chooses version 3 */
	M_BUSY,		/* ERROR busy instead of CHALLENGE */
	M_CLOSE,	/* reads HELLO and closes */
	M_BIGFRAME,	/* a CHALLENGE header claiming a huge payload */
	M_TAMPER	/* as M_AUTH, but the ECHO's record is tampered with */
};

struct srv {
	int		 lfd;
	int		 port;
	enum mode	 mode;
	struct auth_key	 key;
	pthread_t	 th;
	/* What the server saw. */
	int		 hello_ok;	/* HELLO decoded, name "unit" */
	int		 proof_ok;	/* the client's AUTH proof was right */
	int		 echo_ok;
	int		 bye;
	/* After WELCOME: records, and the plaintext they brought. */
	struct chan	 ch;
	uint8_t		 rec[CHAN_HDR + 8192 + CHAN_TAG];
	uint8_t		 pbuf[8192];
	size_t		 plen;
};

static const char secret[] = "a secret of some length";

static int
read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one frame whose payload fits buf. */
static int
read_frame(int fd, struct frame_hdr *h, uint8_t *buf, size_t cap)
{
	uint8_t hb[PROTO_HDR_LEN];

	if (read_full(fd, hb, sizeof hb) == -1)
		return -1;
	proto_hdr_decode(hb, h);
	if (h->len > cap)
		return -1;
	return h->len > 0 ? read_full(fd, buf, h->len) : 0;
}

static void
send_frame(int fd, uint16_t type, uint16_t flags, uint64_t id,
    const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, flags, id };
	uint8_t hb[PROTO_HDR_LEN];

	proto_hdr_encode(hb, &h);
	(void)send(fd, hb, sizeof hb, MSG_NOSIGNAL);
	if (len > 0)
		(void)send(fd, p, len, MSG_NOSIGNAL);
}

static void
send_pw(int fd, uint16_t type, uint64_t id, struct pw *w)
{
	send_frame(fd, type, FL_REPLY, id, w->p, w->len);
	pw_free(w);
}

static void
send_error(int fd, uint32_t code, const char *text)
{
	struct msg_error e;
	struct pw w;

	memset(&e, 0, sizeof e);
	e.code = code;
	snprintf(e.text, sizeof e.text, "%s", text);
	pw_init(&w);
	msg_error_enc(&w, &e);
	send_pw(fd, MSG_ERROR, 0, &w);
}

/* Reads and opens one record; its plaintext goes after s->pbuf's. */
static int
srv_record(struct srv *s, int fd)
{
	ssize_t len;
	size_t n;

	if (read_full(fd, s->rec, CHAN_HDR) == -1 ||
	    (len = chan_hdr(&s->ch, s->rec)) == -1 ||
	    (size_t)len > sizeof s->rec - CHAN_HDR ||
	    (len > 0 && read_full(fd, s->rec + CHAN_HDR, (size_t)len) == -1) ||
	    chan_open(&s->ch, s->rec, CHAN_HDR + (size_t)len, &n) == -1 ||
	    n > sizeof s->pbuf - s->plen)
		return -1;
	memcpy(s->pbuf + s->plen, s->rec + CHAN_HDR, n);
	s->plen += n;
	return 0;
}

/* One frame out of the records, its payload in buf. */
static int
rec_frame(struct srv *s, int fd, struct frame_hdr *h, uint8_t *buf,
    size_t cap)
{
	size_t n;

	while (s->plen < PROTO_HDR_LEN)
		if (srv_record(s, fd) == -1)
			return -1;
	proto_hdr_decode(s->pbuf, h);
	if (h->len > cap)
		return -1;
	n = PROTO_HDR_LEN + h->len;
	while (s->plen < n)
		if (srv_record(s, fd) == -1)
			return -1;
	memcpy(buf, s->pbuf + PROTO_HDR_LEN, h->len);
	memmove(s->pbuf, s->pbuf + n, s->plen - n);
	s->plen -= n;
	return 0;
}

/* A reply in a record of its own; tamper flips a bit of its body. */
static void
rec_send(struct srv *s, int fd, uint64_t id, const void *p, size_t len,
    int tamper)
{
	struct frame_hdr h = { (uint32_t)len, MSG_ECHO, FL_REPLY, id };
	uint8_t *b = s->rec + CHAN_HDR;
	size_t n;

	proto_hdr_encode(b, &h);
	memcpy(b + PROTO_HDR_LEN, p, len);
	n = chan_seal(&s->ch, s->rec, b, PROTO_HDR_LEN + len);
	if (tamper)
		b[2] ^= 1;
	(void)send(fd, s->rec, n, MSG_NOSIGNAL);
}

/* After the handshake: one ECHO, answered after a stray reply; then BYE. */
static void
srv_serve(struct srv *s, int fd, uint8_t *buf, size_t cap)
{
	struct frame_hdr h;

	if (rec_frame(s, fd, &h, buf, cap) == -1 || h.type != MSG_ECHO)
		return;
	s->echo_ok = h.len == 5 && memcmp(buf, "ping!", 5) == 0;
	rec_send(s, fd, h.id + 100, "stray", 5, 0);
	rec_send(s, fd, h.id, buf, h.len, s->mode == M_TAMPER);
	if (rec_frame(s, fd, &h, buf, cap) == 0 && h.type == MSG_BYE)
		s->bye = 1;
}

static void *
srv_main(void *arg)
{
	struct srv *s = arg;
	struct timeval tv = { 5, 0 };
	struct msg_hello hello;
	struct msg_challenge ch;
	struct msg_auth au;
	struct msg_welcome wel;
	struct frame_hdr h;
	uint8_t buf[4096], expect[PROTO_PROOF_LEN];
	struct pw w;
	int fd, auth;

	if ((fd = accept(s->lfd, NULL, NULL)) == -1)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (read_frame(fd, &h, buf, sizeof buf) == -1 || h.type != MSG_HELLO)
		goto done;
	s->hello_ok = msg_hello_dec(buf, h.len, &hello) == 0 &&
	    hello.vmin == PROTO_VERSION_MIN &&
	    hello.vmax == PROTO_VERSION_MAX && strcmp(hello.name, "unit") == 0;

	switch (s->mode) {
	case M_GARBAGE:
		(void)send(fd, "HTTP/1.1 400 Bad Request\r\n\r\n", 28,
		    MSG_NOSIGNAL);
		goto done;
	case M_BUSY:
		send_error(fd, PERR_BUSY, "64 clients");
		goto done;
	case M_CLOSE:
		close(fd);
		return NULL;
	case M_BIGFRAME: {
		struct frame_hdr big = { 1u << 20, MSG_CHALLENGE, FL_REPLY, 0 };
		uint8_t hb[PROTO_HDR_LEN];

		proto_hdr_encode(hb, &big);
		(void)send(fd, hb, sizeof hb, MSG_NOSIGNAL);
		goto done;
	}
	default:
		break;
	}
	auth = s->mode == M_AUTH || s->mode == M_BADPROOF ||
	    s->mode == M_NOPROOF || s->mode == M_WRONGKEY ||
	    s->mode == M_TAMPER;
	memset(&ch, 0, sizeof ch);
	ch.version = s->mode == M_VERSION ? 3 : PROTO_VERSION_MAX;
	ch.auth = auth ? AUTH_HMAC_SHA256 : AUTH_NONE;
	auth_nonce(ch.nonce);
	strcpy(ch.name, "fake");
	ch.max_frame = 1u << 20;
	pw_init(&w);
	msg_challenge_enc(&w, &ch);
	send_pw(fd, MSG_CHALLENGE, h.id, &w);
	if (s->mode == M_VERSION)
		goto done;
	memset(&wel, 0, sizeof wel);
	wel.session = 42;
	if (auth) {
		if (read_frame(fd, &h, buf, sizeof buf) == -1 ||
		    h.type != MSG_AUTH || msg_auth_dec(buf, h.len, &au) == -1)
			goto done;
		auth_proof(&s->key, 0, ch.version, hello.nonce, ch.nonce,
		    expect);
		s->proof_ok = auth_equal(expect, au.proof) == 0;
		if (s->mode == M_WRONGKEY) {
			send_error(fd, PERR_AUTH, "wrong key");
			goto done;
		}
		if (s->mode != M_NOPROOF) {
			wel.has_proof = 1;
			auth_proof(&s->key, 1, ch.version, ch.nonce,
			    hello.nonce, wel.proof);
		}
		if (s->mode == M_BADPROOF)
			wel.proof[7] ^= 1;
	}
	pw_init(&w);
	msg_welcome_enc(&w, &wel);
	send_pw(fd, MSG_WELCOME, h.id, &w);
	/* Records from here on: sealed if the client proved the key. */
	if (chan_init(&s->ch, auth ? &s->key : NULL, 1, hello.nonce,
	    ch.nonce) == 0)
		srv_serve(s, fd, buf, sizeof buf);
	chan_fini(&s->ch);
done:
	/* Wait for the client to hang up, so it sees what we sent. */
	while (recv(fd, buf, sizeof buf, 0) > 0)
		;
	close(fd);
	return NULL;
}

/* A listener on 127.0.0.1 and an ephemeral port. */
static int
listen_any(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof sin;
	int fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof sin) == -1 ||
	    listen(fd, 4) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

static int
srv_start(struct srv *s, enum mode mode)
{
	memset(s, 0, sizeof *s);
	s->mode = mode;
	auth_key_from(&s->key, secret, strlen(secret));
	if ((s->lfd = listen_any(&s->port)) == -1)
		return -1;
	if (pthread_create(&s->th, NULL, srv_main, s) != 0) {
		close(s->lfd);
		return -1;
	}
	return 0;
}

static void
srv_stop(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
}

/* Opens against a server in mode; returns conn_open's result. */
static int
try_mode(enum mode mode, const struct auth_key *key, struct conn *c,
    struct srv *s)
{
	int rc;

	if (srv_start(s, mode) == -1) {
		CHECK(!"server start");
		return -2;
	}
	rc = conn_open(c, "127.0.0.1", s->port, key, "unit", 5000);
	if (rc == 0)
		conn_close(c);

	srv_stop(s);
	return rc;
}

/* c->err is "127.0.0.1:port: " followed by want. */
static int
err_is(const struct conn *c, int port, const char *want)
{
	char full[700];

	snprintf(full, sizeof full, "127.0.0.1:%d: %s", port, want);
	if (strcmp(c->err, full) != 0) {
		fprintf(stderr, "error \"%s\", wanted \"%s\"\n", c->err, full);
		return 0;
	}
	return 1;
}

static void
test_ok(void)
{
	struct srv s;
	struct conn c;
	const uint8_t *reply;
	size_t len;

	if (srv_start(&s, M_OK) == -1) {
		CHECK(!"server start");
		return;
	}
	CHECK(conn_open(&c, "127.0.0.1", s.port, NULL, "unit", 5000) == 0);
	CHECK(c.fail == CONN_OK);
	CHECK(c.session == 42);
	CHECK(c.version == PROTO_VERSION_MAX);
	CHECK(c.ch.on && !c.ch.sealed);
	CHECK(c.max_frame == 1u << 20);
	CHECK_STR(c.server_name, "fake");
	CHECK(c.bytes_out > 0 && c.bytes_in > 0);
	CHECK(conn_call(&c, MSG_ECHO, "ping!", 5, MSG_ECHO, &reply, &len) == 0);
	CHECK(len == 5 && memcmp(reply, "ping!", 5) == 0);
	/* Over the server's limit: refused before anything is sent. */
	CHECK(conn_send(&c, MSG_ECHO, 0, 9, NULL, (1u << 20) + 1) == -1);
	CHECK(c.fail == CONN_PROTO);
	conn_close(&c);
	CHECK(c.fd == -1);
	conn_close(&c);		/* twice is harmless */
	srv_stop(&s);
	CHECK(s.hello_ok);
	CHECK(s.echo_ok);
	CHECK(s.bye);
}

static void
test_auth(void)
{
	struct auth_key key, other, unset;
	struct srv s;
	struct conn c;

	auth_key_from(&key, secret, strlen(secret));
	auth_key_from(&other, "not the secret at all", 21);
	memset(&unset, 0, sizeof unset);

	CHECK(try_mode(M_AUTH, &key, &c, &s) == 0);
	CHECK(s.proof_ok);
	CHECK(c.session == 42);
	CHECK(c.ch.sealed);

	/* No key, or a key struct never loaded. */
	CHECK(try_mode(M_AUTH, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port, "server requires a key"));
	CHECK(c.fd == -1 && c.rbuf == NULL);
	CHECK(try_mode(M_AUTH, &unset, &c, &s) == -1);
	CHECK(c.fail == CONN_AUTH);

	/* The server must prove it has the key too. */
	CHECK(try_mode(M_BADPROOF, &key, &c, &s) == -1);
	CHECK(s.proof_ok);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port, "server failed to prove the key"));
	CHECK(try_mode(M_NOPROOF, &key, &c, &s) == -1);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port, "server failed to prove the key"));

	/* A wrong key: the server refuses us. */
	CHECK(try_mode(M_WRONGKEY, &other, &c, &s) == -1);
	CHECK(!s.proof_ok);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port, "authentication failed: wrong key"));

	/* A client with a key refuses a server that cannot prove it. */
	CHECK(try_mode(M_OK, &key, &c, &s) == -1);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port, "server does not ask for a key, so it "
	    "cannot prove it is the one we hold a key for"));
	/* An unset key is no key. */
	CHECK(try_mode(M_OK, &unset, &c, &s) == 0);
}

/* Sealed: a reply tampered with on the way is an error, never an answer. */
static void
test_sealed(void)
{
	struct auth_key key;
	struct srv s;
	struct conn c;
	const uint8_t *reply;
	size_t len;

	auth_key_from(&key, secret, strlen(secret));
	for (int tamper = 0; tamper < 2; tamper++) {
		if (srv_start(&s, tamper ? M_TAMPER : M_AUTH) == -1) {
			CHECK(!"server start");
			return;
		}
		CHECK(conn_open(&c, "127.0.0.1", s.port, &key, "unit",
		    5000) == 0);
		CHECK(c.ch.on && c.ch.sealed);
		reply = NULL;
		len = 0;
		if (!tamper) {
			CHECK(conn_call(&c, MSG_ECHO, "ping!", 5, MSG_ECHO,
			    &reply, &len) == 0);
			CHECK(len == 5 && memcmp(reply, "ping!", 5) == 0);
		} else {
			CHECK(conn_call(&c, MSG_ECHO, "ping!", 5, MSG_ECHO,
			    &reply, &len) == -1);
			CHECK(c.fail == CONN_PROTO);
			CHECK(err_is(&c, s.port, "record 1 does not "
			    "authenticate (tampered with, replayed or "
			    "forged)"));
		}
		conn_close(&c);
		srv_stop(&s);
		CHECK(s.echo_ok);
		CHECK(tamper || s.bye);
	}
}

static void
test_error_frame(void)
{
	struct msg_error e;
	struct conn c;
	struct pw w;

	memset(&c, 0, sizeof c);
	c.fd = -1;
	strcpy(c.peer, "gpu1:7383");
	memset(&e, 0, sizeof e);
	e.code = PERR_TOOBIG;
	strcpy(e.text, "frame of 9 bytes");
	pw_init(&w);
	msg_error_enc(&w, &e);
	CHECK(conn_error_frame(&c, w.p, w.len) == -1);
	CHECK(c.fail == CONN_REMOTE);
	CHECK_STR(c.err, "gpu1:7383: frame too large: frame of 9 bytes");
	/* Refusals of the key or the version are CONN_AUTH. */
	w.p[0] = PERR_AUTH;
	CHECK(conn_error_frame(&c, w.p, w.len) == -1);
	CHECK(c.fail == CONN_AUTH);
	/* No text: no colon after the error's name. */
	pw_free(&w);
	e.code = PERR_SHUTDOWN;
	e.text[0] = '\0';
	pw_init(&w);
	msg_error_enc(&w, &e);
	CHECK(conn_error_frame(&c, w.p, w.len) == -1);
	CHECK(c.fail == CONN_NET);
	CHECK_STR(c.err, "gpu1:7383: server shutting down");
	/* Malformed. */
	CHECK(conn_error_frame(&c, w.p, w.len - 1) == -1);
	CHECK(c.fail == CONN_PROTO);
	CHECK_STR(c.err, "gpu1:7383: malformed error message");
	pw_free(&w);
}

static void
test_failures(void)
{
	struct srv s;
	struct conn c;
	uint64_t t0, ms;
	int fd, port;

	CHECK(try_mode(M_GARBAGE, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_PROTO);
	CHECK(strstr(c.err, "not a Gleam server") != NULL);
	CHECK(err_is(&c, s.port, "not a Gleam server (bad handshake reply)"));

	CHECK(try_mode(M_BIGFRAME, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_PROTO);

	CHECK(try_mode(M_VERSION, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_AUTH);
	CHECK(err_is(&c, s.port,
	    "server chose protocol version 3, we speak 2 to 2"));

	CHECK(try_mode(M_BUSY, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_NET);
	CHECK(err_is(&c, s.port, "server busy: 64 clients"));

	CHECK(try_mode(M_CLOSE, NULL, &c, &s) == -1);
	CHECK(c.fail == CONN_NET);
	CHECK(err_is(&c, s.port, "connection closed by server"));

	/* A closed port. */
	if ((fd = listen_any(&port)) != -1) {
		close(fd);
		CHECK(conn_open(&c, "127.0.0.1", port, NULL, "unit", 2000) ==
		    -1);
		CHECK(c.fail == CONN_NET);
		CHECK(err_is(&c, port, strerror(ECONNREFUSED)));
		CHECK(strstr(c.err, "Connection refused") != NULL);
		CHECK(c.fd == -1);
	} else
		CHECK(!"listen");

	/* A listener that never answers: timed out, on time. */
	if ((fd = listen_any(&port)) != -1) {
		t0 = now_ns();
		CHECK(conn_open(&c, "127.0.0.1", port, NULL, "unit", 300) ==
		    -1);
		ms = (now_ns() - t0) / 1000000u;
		CHECK(c.fail == CONN_NET);
		CHECK(err_is(&c, port, "timed out"));
		CHECK(ms >= 250 && ms < 2000);
		close(fd);
	} else
		CHECK(!"listen");

	/* Peers are named as given; IPv6 addresses in brackets. */
	if ((fd = listen_any(&port)) != -1) {
		char want[64];

		close(fd);
		CHECK(conn_open(&c, "localhost", port, NULL, "unit", 2000) ==
		    -1);
		CHECK(c.fail == CONN_NET);
		snprintf(want, sizeof want, "localhost:%d", port);
		CHECK_STR(c.peer, want);
		(void)conn_open(&c, "::1", port, NULL, "unit", 2000);
		CHECK(c.fail == CONN_NET);
		snprintf(want, sizeof want, "[::1]:%d", port);
		CHECK_STR(c.peer, want);
	} else
		CHECK(!"listen");
}

static void
test_net(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	socklen_t len;
	char buf[64], err[256];

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(7383);
	sin.sin_addr.s_addr = htonl(0x0a000001);
	CHECK_STR(net_addr_str((struct sockaddr *)&sin, buf, sizeof buf),
	    "10.0.0.1:7383");
	CHECK(net_resolve("127.0.0.1", 80, 0, &ss, &len, err, sizeof err) ==
	    0);
	CHECK(ss.ss_family == AF_INET);
	CHECK_STR(net_addr_str((struct sockaddr *)&ss, buf, sizeof buf),
	    "127.0.0.1:80");
	CHECK(net_resolve("::1", 81, 0, &ss, &len, err, sizeof err) == 0);
	CHECK_STR(net_addr_str((struct sockaddr *)&ss, buf, sizeof buf),
	    "[::1]:81");
	CHECK(net_resolve("", 82, 1, &ss, &len, err, sizeof err) == 0);
	CHECK_STR(net_addr_str((struct sockaddr *)&ss, buf, sizeof buf),
	    "0.0.0.0:82");
	CHECK(net_resolve("*", 83, 1, &ss, &len, err, sizeof err) == 0);
	CHECK(ss.ss_family == AF_INET);
	/* Not a port getaddrinfo takes (no DNS is asked for a numeric host). */
	CHECK(net_resolve("127.0.0.1", -1, 0, &ss, &len, err, sizeof err) ==
	    -1);
	CHECK(err[0] != '\0');
}

int
main(void)
{
	CHECK(auth_init() == 0);
	test_ok();
	test_auth();
	test_sealed();
	test_error_frame();
	test_failures();
	test_net();
	return t_done("conn");
}
