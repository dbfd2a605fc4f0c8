/*
 * Unit tests for lib/common/stripe.c: a bulk lane's stripes as records,
 * over socketpairs, sealed and in the clear; records tampered with, cut
 * short, of the wrong length, order, lane or direction must not pass.
 */
#include <sys/socket.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "chan.h"
#include "net.h"
#include "proto.h"
#include "stripe.h"
#include "t.h"

static struct auth_key	 key, other;
static uint8_t		 cn[PROTO_NONCE_LEN], sn[PROTO_NONCE_LEN];

#define REC	PROTO_LANE_REC
static const size_t lens[] = { 1, 4096, REC, REC + 1, 3 * REC + 12345,
    STRIPE_PIECE - 7 };
#define NLENS	(sizeof lens / sizeof lens[0])
#define SRCLEN	(3 * REC + 12345)

static uint8_t	*src, *dst;

/* Lane idx's records on one side of a connection keyed with k (or none). */
static void
lane(struct chan *c, const struct auth_key *k, int server, uint32_t idx)
{
	struct chan parent;

	CHECK(chan_init(&parent, k, server, cn, sn) == 0);
	CHECK(chan_init_lane(c, &parent, idx) == 0);
	chan_fini(&parent);
}

struct job {
	struct chan	*c;
	int		 fd;
	const size_t	*lens;
	size_t		 n;
	const uint8_t	*wire;	/* replay: these bytes, raw */
	size_t		 wlen;
	int		 rc;
};

/* Sends the stripes of j->lens from src, then closes its writing. */
static void *
sender(void *arg)
{
	struct job *j = arg;
	uint8_t *stage = malloc(STRIPE_STAGE);
	size_t i;

	j->rc = 0;
	for (i = 0; i < j->n && j->rc == 0; i++)
		j->rc = stripe_send(j->c, j->fd, src, j->lens[i], stage);
	shutdown(j->fd, SHUT_WR);
	free(stage);
	return NULL;
}

/* Writes j->wire raw, then closes its writing. */
static void *
replayer(void *arg)
{
	struct job *j = arg;

	j->rc = net_send_all(j->fd, j->wire, j->wlen);
	shutdown(j->fd, SHUT_WR);
	return NULL;
}

/*
 * The stripes tx sends, received by rx into dst one by one and compared:
 * the first stripe's index that failed and its errno, or -1.
 */
static int
roundtrip(struct chan *tx, struct chan *rx, const size_t *l, size_t n,
    int *err)
{
	struct job j = { tx, -1, l, n, NULL, 0, 0 };
	pthread_t t;
	int sv[2], bad = -1;
	size_t i;

	*err = 0;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	j.fd = sv[0];
	pthread_create(&t, NULL, sender, &j);
	for (i = 0; i < n; i++) {
		memset(dst, 0xee, l[i]);
		if ((*err = stripe_recv(rx, sv[1], dst, l[i], NULL)) != 0) {
			bad = (int)i;
			break;
		}
		CHECK(memcmp(dst, src, l[i]) == 0);
	}
	close(sv[1]);
	pthread_join(t, NULL);
	close(sv[0]);
	return bad;
}

/* The bytes on the wire of tx's stripes; *wlen of them. */
static uint8_t *
capture(struct chan *tx, const size_t *l, size_t n, size_t *wlen)
{
	struct job j = { tx, -1, l, n, NULL, 0, 0 };
	size_t cap = 1 << 20, len = 0;
	uint8_t *w = malloc(cap);
	pthread_t t;
	ssize_t k;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	j.fd = sv[0];
	pthread_create(&t, NULL, sender, &j);
	for (;;) {
		if (len == cap)
			w = realloc(w, cap *= 2);
		if ((k = recv(sv[1], w + len, cap - len, 0)) <= 0)
			break;
		len += (size_t)k;
	}
	pthread_join(t, NULL);
	CHECK(j.rc == 0);
	close(sv[0]);
	close(sv[1]);
	*wlen = len;
	return w;
}

/* Receives stripes l from wire into dst: as roundtrip, without comparing. */
static int
replay(const uint8_t *wire, size_t wlen, struct chan *rx, const size_t *l,
    size_t n, int *err)
{
	struct job j = { NULL, -1, NULL, 0, wire, wlen, 0 };
	pthread_t t;
	int sv[2], bad = -1;
	size_t i;

	*err = 0;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	j.fd = sv[0];
	pthread_create(&t, NULL, replayer, &j);
	for (i = 0; i < n; i++)
		if ((*err = stripe_recv(rx, sv[1], dst, l[i], NULL)) != 0) {
			bad = (int)i;
			break;
		}
	close(sv[1]);
	pthread_join(t, NULL);
	close(sv[0]);
	return bad;
}

/* Every stripe both ways, with key k (or none), on lane 3. */
static void
test_roundtrip(const struct auth_key *k)
{
	struct chan c, s;
	size_t i, sum = 0;
	int err;

	for (i = 0; i < NLENS; i++)
		sum += lens[i];
	lane(&c, k, 0, 3);
	lane(&s, k, 1, 3);
	CHECK(c.sealed == (k != NULL));
	CHECK(roundtrip(&c, &s, lens, NLENS, &err) == -1 && err == 0);
	CHECK(roundtrip(&s, &c, lens, NLENS, &err) == -1 && err == 0);
	/* And again: the counters go on. */
	CHECK(roundtrip(&c, &s, lens, NLENS, &err) == -1 && err == 0);
	CHECK(c.tx_bytes == 2 * sum && s.rx_bytes == 2 * sum);
	CHECK(s.tx_bytes == sum && c.rx_bytes == sum);
	CHECK(s.peer_ack == sum);	/* c's headers told what it had */
	/* An empty stripe is nothing on the wire. */
	CHECK(roundtrip(&c, &s, (size_t[]){ 0 }, 1, &err) == -1 && err == 0);
	chan_fini(&c);
	chan_fini(&s);
}

/* Records of the right size, the header with the first piece. */
static void
test_wire(const struct auth_key *k)
{
	struct chan c;
	size_t wlen, per = CHAN_HDR + (k != NULL ? CHAN_TAG : 0);
	uint8_t *w;

	lane(&c, k, 0, 0);
	w = capture(&c, (size_t[]){ 3 * REC + 12345 }, 1, &wlen);
	CHECK(wlen == 3 * REC + 12345 + 4 * per);
	/* The second record's header: REC (+ tag) bytes, ack 0. */
	CHECK(w[per + REC] == (k != NULL ? CHAN_TAG : 0));
	CHECK(w[per + REC + 2] == (REC >> 16));
	if (k == NULL)
		CHECK(memcmp(w + CHAN_HDR, src, 1000) == 0);
	else
		CHECK(memcmp(w + CHAN_HDR, src, 1000) != 0);
	free(w);
	chan_fini(&c);
}

/* wire with byte at off xored with x does not pass, with errno want. */
static void
check_tampered(const uint8_t *wire, size_t wlen, const struct auth_key *k,
    size_t off, uint8_t x, size_t len, int want, const char *why)
{
	uint8_t *w = malloc(wlen);
	struct chan s;
	int err, bad;

	memcpy(w, wire, wlen);
	w[off] ^= x;
	lane(&s, k, 1, 0);
	bad = replay(w, wlen, &s, &len, 1, &err);
	CHECK(bad == 0);
	CHECK(err == want);
	if (why != NULL && strstr(s.err, why) == NULL) {
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", s.err, why);
		CHECK(0);
	}
	chan_fini(&s);
	free(w);
}

static void
test_tampered(void)
{
	size_t len = 3 * REC + 12345, wlen, rec2;
	struct chan c, s;
	uint8_t *w;
	int err;

	/* Sealed: any byte of any record. */
	lane(&c, &key, 0, 0);
	w = capture(&c, &len, 1, &wlen);
	rec2 = CHAN_HDR + REC + CHAN_TAG;
	/* Untouched, it opens. */
	lane(&s, &key, 1, 0);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == -1 && err == 0);
	CHECK(memcmp(dst, src, len) == 0);
	chan_fini(&s);
	check_tampered(w, wlen, &key, CHAN_HDR + 5, 1, len, EBADMSG,
	    "authenticate");
	check_tampered(w, wlen, &key, rec2 + CHAN_HDR + REC - 1, 0x80, len,
	    EBADMSG, "authenticate");
	check_tampered(w, wlen, &key, wlen - 1, 1, len, EBADMSG,
	    "authenticate");			/* the last tag */
	check_tampered(w, wlen, &key, rec2 + 8, 1, len, EBADMSG, NULL);
	check_tampered(w, wlen, &key, rec2 + 0, 1, len, EBADMSG, "due");
	check_tampered(w, wlen, &key, rec2 + 4, 1, len, EBADMSG, "kind");
	/* Two records swapped: the nonces differ. */
	{
		uint8_t *x = malloc(wlen);

		memcpy(x, w, wlen);
		memcpy(x, w + rec2, rec2);
		memcpy(x + rec2, w, rec2);
		lane(&s, &key, 1, 0);
		CHECK(replay(x, wlen, &s, &len, 1, &err) == 0 &&
		    err == EBADMSG);
		chan_fini(&s);
		free(x);
	}
	/* Cut short anywhere: never done. */
	{
		size_t cut[] = { 0, 7, CHAN_HDR, CHAN_HDR + 1, rec2 - 1, rec2,
		    wlen - CHAN_TAG, wlen - 1 };
		size_t i;

		for (i = 0; i < sizeof cut / sizeof cut[0]; i++) {
			lane(&s, &key, 1, 0);
			CHECK(replay(w, cut[i], &s, &len, 1, &err) == 0);
			CHECK(err == ECONNRESET);
			chan_fini(&s);
		}
	}
	/* Another lane's, another key's, the other direction's records. */
	lane(&s, &key, 1, 1);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == 0 && err == EBADMSG);
	chan_fini(&s);
	lane(&s, &other, 1, 0);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == 0 && err == EBADMSG);
	chan_fini(&s);
	lane(&s, &key, 0, 0);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == 0 && err == EBADMSG);
	chan_fini(&s);
	/* Not sealed where we expect it to be: the lengths do not fit. */
	lane(&s, NULL, 1, 0);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == 0 && err == EBADMSG);
	chan_fini(&s);
	/* A stripe of another length than the call said. */
	{
		size_t more = len + 1, less = len - 1;

		lane(&s, &key, 1, 0);
		CHECK(replay(w, wlen, &s, &more, 1, &err) == 0 &&
		    err == EBADMSG);
		chan_fini(&s);
		lane(&s, &key, 1, 0);
		CHECK(replay(w, wlen, &s, &less, 1, &err) == 0 &&
		    err == EBADMSG);
		chan_fini(&s);
	}
	free(w);
	chan_fini(&c);

	/* In the clear: the records' framing is still checked. */
	lane(&c, NULL, 0, 0);
	w = capture(&c, &len, 1, &wlen);
	check_tampered(w, wlen, NULL, 0, 1, len, EBADMSG, "due");
	check_tampered(w, wlen, NULL, CHAN_HDR + REC + 4, 1, len, EBADMSG,
	    "kind");
	check_tampered(w, wlen, NULL, CHAN_HDR + REC + 8, 1, len, EBADMSG,
	    "acknowledgement");
	lane(&s, NULL, 1, 0);
	CHECK(replay(w, wlen - 1, &s, &len, 1, &err) == 0 &&
	    err == ECONNRESET);
	chan_fini(&s);
	lane(&s, &key, 1, 0);
	CHECK(replay(w, wlen, &s, &len, 1, &err) == 0 && err == EBADMSG);
	chan_fini(&s);
	free(w);
	chan_fini(&c);
}

/*
 * A resumable session's lanes: keys by index and epoch (no two the same),
 * and the small records beside the stripes, of their own lengths.
 */
static void
test_resumable(int sealed)
{
	uint8_t secret[CHAN_KEY], stage[STRIPE_STAGE];
	struct chan c, s;
	uint64_t v, job;
	uint32_t dir;
	int sv[2];

	memset(secret, 0x5a, sizeof secret);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(chan_init_lane_key(&c, sealed, 0, secret, 2, 7) == 0);
	CHECK(chan_init_lane_key(&s, sealed, 1, secret, 2, 7) == 0);
	CHECK(c.sealed == sealed && s.sealed == sealed);
	/* The server's first, the client's, an acknowledgement. */
	CHECK(stripe_send_u64(&s, sv[1], 41, stage) == 0);
	CHECK(stripe_recv_u64(&c, sv[0], &v) == 0 && v == 41);
	CHECK(stripe_send_at(&c, sv[0], 42, STRIPE_DIR_OUT, stage) == 0);
	CHECK(stripe_recv_at(&s, sv[1], &job, &dir) == 0);
	CHECK(job == 42 && dir == STRIPE_DIR_OUT);
	CHECK(stripe_send_u64(&s, sv[1], 42, stage) == 0);
	/* An acknowledgement where a state record was due: its length. */
	CHECK(stripe_recv_at(&c, sv[0], &job, &dir) == EBADMSG);
	chan_fini(&c);
	chan_fini(&s);
	/* A direction out of range, or the zero word not zero. */
	CHECK(chan_init_lane_key(&c, sealed, 0, secret, 0, 0) == 0);
	CHECK(chan_init_lane_key(&s, sealed, 1, secret, 0, 0) == 0);
	CHECK(stripe_send_at(&c, sv[0], 1, 3, stage) == 0);
	CHECK(stripe_recv_at(&s, sv[1], &job, &dir) == EBADMSG);
	CHECK(strstr(s.err, "state record") != NULL);
	chan_fini(&c);
	chan_fini(&s);
	if (sealed) {
		/* Another epoch, another lane, another secret: no opening. */
		static const uint32_t ie[3][2] = { { 2, 8 }, { 3, 7 }, { 2, 7 } };
		int k;

		for (k = 0; k < 3; k++) {
			CHECK(chan_init_lane_key(&c, 1, 0, secret, 2, 7) == 0);
			if (k == 2)
				secret[0] ^= 1;
			CHECK(chan_init_lane_key(&s, 1, 1, secret, ie[k][0],
			    ie[k][1]) == 0);
			if (k == 2)
				secret[0] ^= 1;
			CHECK(stripe_send_u64(&c, sv[0], 9, stage) == 0);
			CHECK(stripe_recv_u64(&s, sv[1], &v) == EBADMSG);
			chan_fini(&c);
			chan_fini(&s);
		}
		/* Nor the lanes of a session that does not resume. */
		lane(&c, &key, 0, 2);
		CHECK(chan_init_lane_key(&s, 1, 1, secret, 2, 0) == 0);
		CHECK(stripe_send_u64(&c, sv[0], 9, stage) == 0);
		CHECK(stripe_recv_u64(&s, sv[1], &v) == EBADMSG);
		chan_fini(&c);
		chan_fini(&s);
	}
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	size_t i;

	if (auth_init() == -1)
		return 1;
	auth_key_from(&key, "the right secret, 16+", 21);
	auth_key_from(&other, "another secret, 16+ bytes", 25);
	auth_nonce(cn);
	auth_nonce(sn);
	src = malloc(SRCLEN);
	dst = malloc(SRCLEN + 1);
	for (i = 0; i < SRCLEN; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 12));
	test_roundtrip(NULL);
	test_roundtrip(&key);
	test_wire(NULL);
	test_wire(&key);
	test_tampered();
	test_resumable(0);
	test_resumable(1);
	free(src);
	free(dst);
	return t_done("test_stripe");
}
