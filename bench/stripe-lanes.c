/*
 * stripe-lanes: what bulk lanes carry as records (lib/common/stripe.c)
 * over loopback TCP, sealed with a key and in the clear: the lanes' part
 * of a remoted host-to-device copy, without the server and the device.
 *
 *	stripe-lanes [-k] [-b bytes] [-l lanes]
 *
 * -b bytes (default 1 GiB) go in copies of 16 MiB (gleam-serve's
 * LANES_COPY_MAX), each striped over -l lanes (default 4) as the client
 * and server stripe them: a sender thread and a receiver thread a lane,
 * the receivers' stripes landing in one 16 MiB buffer, every lane done
 * with a copy before the next.  -k seals (a made-up key); else the
 * records are in the clear.  Prints the rate.  Build:
 *
 *	cc -O2 -pthread -D_GNU_SOURCE -Ilib/common -o build/bench/stripe-lanes \
 *	    bench/stripe-lanes.c lib/libgleam.a -lsodium -lcrypto
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <err.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "chan.h"
#include "proto.h"
#include "stripe.h"

#define COPY	(16u << 20)

struct lane {
	uint32_t	 idx;
	int		 fd;
	struct chan	 ch;
	pthread_t	 t;
};

static struct lane	 snd[PROTO_LANES_MAX], rcv[PROTO_LANES_MAX];
static uint32_t		 nl = 4;
static uint64_t		 total = 1ull << 30;
static uint8_t		*src, *dst;
static pthread_barrier_t sb, rb;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
sender(void *arg)
{
	struct lane *l = arg;
	uint8_t *stage = malloc(STRIPE_STAGE);
	uint64_t done, off, cnt;
	int e;

	for (done = 0; done < total; done += COPY) {
		proto_lane_stripe(COPY, nl, l->idx, &off, &cnt);
		if ((e = stripe_send(&l->ch, l->fd, src + off, cnt,
		    stage)) != 0)
			errx(1, "lane %u: %s", l->idx, strerror(e));
		pthread_barrier_wait(&sb);
	}
	free(stage);
	return NULL;
}

static void *
receiver(void *arg)
{
	struct lane *l = arg;
	uint64_t done, off, cnt;
	int e;

	for (done = 0; done < total; done += COPY) {
		proto_lane_stripe(COPY, nl, l->idx, &off, &cnt);
		if ((e = stripe_recv(&l->ch, l->fd, dst + off, cnt,
		    NULL)) != 0)
			errx(1, "lane %u: %s: %s", l->idx, strerror(e),
			    l->ch.err);
		pthread_barrier_wait(&rb);
	}
	return NULL;
}

static void
usage(void)
{
	fprintf(stderr, "usage: stripe-lanes [-k] [-b bytes] [-l lanes]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct auth_key key;
	struct chan pc, ps;
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	uint8_t cn[PROTO_NONCE_LEN], sn[PROTO_NONCE_LEN];
	int ch, sealed = 0, lfd, one = 1;
	uint32_t i;
	double t0, dt;

	while ((ch = getopt(argc, argv, "b:kl:")) != -1) {
		switch (ch) {
		case 'b':
			total = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			sealed = 1;
			break;
		case 'l':
			nl = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (nl < 1 || nl > PROTO_LANES_MAX || total < COPY)
		usage();
	total -= total % COPY;
	if (auth_init() == -1)
		errx(1, "libsodium");
	auth_key_from(&key, "a bench's secret, 16+", 21);
	auth_nonce(cn);
	auth_nonce(sn);
	if (chan_init(&pc, sealed ? &key : NULL, 0, cn, sn) == -1 ||
	    chan_init(&ps, sealed ? &key : NULL, 1, cn, sn) == -1)
		errx(1, "chan_init");
	if ((src = malloc(COPY)) == NULL || (dst = malloc(COPY)) == NULL)
		err(1, "malloc");
	for (i = 0; i < COPY; i++)
		src[i] = (uint8_t)(i * 7);
	memset(dst, 1, COPY);

	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) == -1 ||
	    listen(lfd, PROTO_LANES_MAX) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) == -1)
		err(1, "listen");
	for (i = 0; i < nl; i++) {
		snd[i].idx = rcv[i].idx = i;
		if ((snd[i].fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    connect(snd[i].fd, (struct sockaddr *)&sa, sizeof sa) ==
		    -1 || (rcv[i].fd = accept(lfd, NULL, NULL)) == -1)
			err(1, "connect");
		setsockopt(snd[i].fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof one);
		if (chan_init_lane(&snd[i].ch, &pc, i) == -1 ||
		    chan_init_lane(&rcv[i].ch, &ps, i) == -1)
			errx(1, "chan_init_lane");
	}
	pthread_barrier_init(&sb, NULL, nl);
	pthread_barrier_init(&rb, NULL, nl);
	t0 = now();
	for (i = 0; i < nl; i++) {
		pthread_create(&rcv[i].t, NULL, receiver, &rcv[i]);
		pthread_create(&snd[i].t, NULL, sender, &snd[i]);
	}
	for (i = 0; i < nl; i++) {
		pthread_join(snd[i].t, NULL);
		pthread_join(rcv[i].t, NULL);
	}
	dt = now() - t0;
	if (memcmp(src, dst, COPY) != 0)
		errx(1, "the bytes that came are not those sent");
	printf("%u lane(s), %s: %llu bytes in %.3f s: %.2f GB/s\n", nl,
	    sealed ? "sealed" : "in the clear", (unsigned long long)total, dt,
	    (double)total / dt / 1e9);
	return 0;
}
