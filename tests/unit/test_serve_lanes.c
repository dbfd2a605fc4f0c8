/*
 * Unit tests for gleam-serve/lanes.c: its lanes offered, taken and used
 * by a scripted client on 127.0.0.1, sealed and in the clear: stripes
 * both ways, and a stripe whose records do not open or that is cut short
 * never handed on.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "backend.h"
#include "chan.h"
#include "lanes.h"
#include "net.h"
#include "proto.h"
#include "stripe.h"
#include "t.h"

#define NL	3
#define LEN	(5u * PROTO_LANE_REC + 123)

static struct auth_key	 key;
static uint8_t		*src, *got;

struct cli {
	int		 mfd, sfd;	/* the main connection's ends */
	struct chan	 pc, ps;	/* its records, client's and server's */
	int		 fd[NL];
	struct chan	 ch[NL];
	struct lanes	*ls;
};

/* The main connection, its records, and NL lanes offered and taken. */
static void
cli_open(struct cli *c, const struct auth_key *k)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	uint8_t cn[PROTO_NONCE_LEN], sn[PROTO_NONCE_LEN];
	uint8_t hello[PROTO_LANE_HELLO];
	struct rcall rc;
	int lfd;
	uint32_t i;

	memset(c, 0, sizeof *c);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(lfd, 1) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	c->mfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(c->mfd, (struct sockaddr *)&sa, sizeof sa) == 0);
	c->sfd = accept(lfd, NULL, NULL);
	close(lfd);
	auth_nonce(cn);
	auth_nonce(sn);
	CHECK(chan_init(&c->pc, k, 0, cn, sn) == 0);
	CHECK(chan_init(&c->ps, k, 1, cn, sn) == 0);

	memset(&rc, 0, sizeof rc);
	lanes_offer(&c->ls, c->sfd, NL, 8, 0, &rc);
	CHECK(rc.out[0].u == NL);
	CHECK(rc.out[2].len == PROTO_LANE_TOKEN);
	sa.sin_port = htons((uint16_t)rc.out[1].u);
	for (i = 0; i < NL; i++) {
		c->fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(connect(c->fd[i], (struct sockaddr *)&sa, sizeof sa) ==
		    0);
		proto_lane_hello_enc(hello, i, rc.out[2].p);
		CHECK(net_send_all(c->fd[i], hello, sizeof hello) == 0);
		CHECK(chan_init_lane(&c->ch[i], &c->pc, i) == 0);
	}
	CHECK(lanes_accept(c->ls, NL, &c->ps) == NL);
	CHECK(lanes_count(c->ls) == NL);
}

static void
cli_close(struct cli *c)
{
	uint32_t i;

	lanes_free(c->ls);
	for (i = 0; i < NL; i++) {
		close(c->fd[i]);
		chan_fini(&c->ch[i]);
	}
	chan_fini(&c->pc);
	chan_fini(&c->ps);
	close(c->mfd);
	close(c->sfd);
}

/* How the client sends a copy's stripes. */
enum how { GOOD, WRONG_LANE, FLIPPED, CUT };

struct job {
	struct cli	*c;
	enum how	 how;
	uint32_t	 bad;		/* the lane it spoils */
	int		 rc;
};

/* The records of a stripe, as stripe_send sends them: their length. */
static size_t
seal_all(struct chan *c, uint8_t *out, const uint8_t *p, size_t n)
{
	size_t k, len = 0;

	for (; n > 0; p += k, n -= k) {
		k = n < PROTO_LANE_REC ? n : PROTO_LANE_REC;
		len += chan_seal(c, out + len, p, k);
	}
	return len;
}

/* The client's side of a host-to-device copy of LEN bytes from src. */
static void *
cli_send(void *arg)
{
	struct job *j = arg;
	struct cli *c = j->c;
	uint8_t *stage = malloc(STRIPE_STAGE), *tmp = malloc(2 * LEN);
	uint64_t off, cnt;
	struct chan wrong;
	uint32_t i;

	j->rc = 0;
	for (i = 0; i < NL; i++) {
		proto_lane_stripe(LEN, NL, i, &off, &cnt);
		if (i != j->bad || j->how == GOOD)
			j->rc |= stripe_send(&c->ch[i], c->fd[i], src + off,
			    cnt, stage);
		else if (j->how == WRONG_LANE) {
			chan_init_lane(&wrong, &c->pc, i + 1);
			j->rc |= stripe_send(&wrong, c->fd[i], src + off, cnt,
			    stage);
			chan_fini(&wrong);
		} else if (j->how == FLIPPED) {
			/* A byte of its second record's body changed. */
			size_t wl = seal_all(&c->ch[i], tmp, src + off, cnt);

			tmp[chan_wire(&c->ch[i], PROTO_LANE_REC) + CHAN_HDR +
			    100] ^= 1;
			j->rc |= net_send_all(c->fd[i], tmp, wl);
		} else {
			/* Its first record, then the lane closes. */
			j->rc |= stripe_send(&c->ch[i], c->fd[i], src + off,
			    PROTO_LANE_REC, stage);
			shutdown(c->fd[i], SHUT_WR);
		}
	}
	free(stage);
	free(tmp);
	return NULL;
}

struct putlog {
	size_t		 offs[NL];
	int		 n;
};

static int
put(void *arg, size_t off, const void *p, size_t n)
{
	struct putlog *pl = arg;

	memcpy(got + off, p, n);
	if (pl->n < NL)
		pl->offs[pl->n++] = off;
	return 0;
}

/* A copy to the server sent as how spoils lane bad: lanes_recv's result. */
static int
htod(struct cli *c, enum how how, uint32_t bad, struct putlog *pl)
{
	struct job j = { c, how, bad, 0 };
	pthread_t t;
	size_t plen;
	int rc = 0, r;

	memset(pl, 0, sizeof *pl);
	memset(got, 0xee, LEN);
	CHECK(lanes_prepare(c->ls, &plen) != NULL && plen >= LEN);
	pthread_create(&t, NULL, cli_send, &j);
	r = lanes_recv(c->ls, LEN, put, pl, &rc);
	if (r == -1) {
		/* As the session ends: the client's threads let go. */
		uint32_t i;

		for (i = 0; i < NL; i++)
			shutdown(c->fd[i], SHUT_RDWR);
	}
	pthread_join(t, NULL);
	CHECK(rc == 0);
	return r;
}

static int srv_rc;

/* The server's side of a device-to-host copy of LEN bytes from src. */
static void *
srv_send(void *arg)
{
	struct cli *c = arg;

	srv_rc = lanes_send(c->ls, src, LEN);
	return NULL;
}

static void
test_lanes(const struct auth_key *k)
{
	struct putlog pl;
	struct cli c;
	uint64_t off, cnt;
	pthread_t t;
	uint32_t i;
	int n;

	/* Both ways, twice. */
	cli_open(&c, k);
	CHECK(c.ch[0].sealed == (k != NULL));
	for (n = 0; n < 2; n++) {
		CHECK(htod(&c, GOOD, 0, &pl) == 0);
		CHECK(pl.n == NL);
		CHECK(memcmp(got, src, LEN) == 0);
		memset(got, 0, LEN);
		pthread_create(&t, NULL, srv_send, &c);
		for (i = 0; i < NL; i++) {
			proto_lane_stripe(LEN, NL, i, &off, &cnt);
			CHECK(stripe_recv(&c.ch[i], c.fd[i], got + off, cnt,
			    NULL) == 0);
		}
		pthread_join(t, NULL);
		CHECK(srv_rc == 0);
		CHECK(memcmp(got, src, LEN) == 0);
	}
	/* A stripe flipped on its way: sealed, not handed on. */
	proto_lane_stripe(LEN, NL, 1, &off, &cnt);
	n = htod(&c, FLIPPED, 1, &pl);
	if (k != NULL) {
		CHECK(n == -1);
		CHECK(pl.n == 1 && pl.offs[0] == 0);
	} else {
		CHECK(n == 0 && pl.n == NL);
		CHECK(got[off + PROTO_LANE_REC + 100] ==
		    (src[off + PROTO_LANE_REC + 100] ^ 1));
	}
	cli_close(&c);

	/* Another lane's records: not handed on, the lanes broke. */
	cli_open(&c, k);
	n = htod(&c, WRONG_LANE, 0, &pl);
	if (k != NULL)
		CHECK(n == -1 && pl.n == 0);
	else
		CHECK(n == 0 && pl.n == NL);
	cli_close(&c);

	/* Cut short: not handed on. */
	cli_open(&c, k);
	CHECK(htod(&c, CUT, 2, &pl) == -1);
	CHECK(pl.n == 2 && pl.offs[0] == 0);
	cli_close(&c);
}

int
main(void)
{
	size_t i;

	if (auth_init() == -1)
		return 1;
	auth_key_from(&key, "the right secret, 16+", 21);
	src = malloc(LEN);
	got = malloc(LEN);
	for (i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 13 + (i >> 10));
	test_lanes(NULL);
	test_lanes(&key);
	free(src);
	free(got);
	return t_done("test_serve_lanes");
}
