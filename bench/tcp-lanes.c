/*
 * tcp-lanes: how fast bytes cross loopback TCP on this host, over 1 to N
 * connections side by side, against one thread's memcpy.  The ceiling of
 * a remoted host-to-device copy through loopback, and what several bulk
 * connections would buy.
 *
 *	tcp-lanes [-b bytes] [-p piece] [-r reps] lanes...
 *
 * For each lane count L, L sender threads each send their share of a
 * transfer of -b bytes (default 4.8 MB, a batch of ResNet-18 inputs) in
 * pieces of -p bytes (default 256 KiB) to L receiver threads over L
 * connections; a transfer ends when every receiver has its share.  -r
 * transfers (default 200), after 20 not timed; prints the median and the
 * 10th and 90th percentile of a transfer's time and the median rate.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXL	32

static size_t	 total = 4800000, piece = 256 << 10;
static int	 reps = 200, warm = 20;
static char	*src;

struct lane {
	int		 fd;		/* sender's or receiver's end */
	size_t		 off, len;	/* its share of the transfer */
	char		*dst;
	pthread_t	 t;
};

static struct lane	 snd[MAXL], rcv[MAXL];
static int		 nl;
static pthread_barrier_t go, done;
static atomic_int	 quit;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void *
sender(void *arg)
{
	struct lane *l = arg;
	size_t o, k;
	ssize_t n;

	for (;;) {
		pthread_barrier_wait(&go);
		if (atomic_load(&quit))
			return NULL;
		for (o = 0; o < l->len; o += (size_t)n) {
			k = l->len - o < piece ? l->len - o : piece;
			if ((n = send(l->fd, src + l->off + o, k, 0)) <= 0)
				die("send");
		}
	}
}

static void *
receiver(void *arg)
{
	struct lane *l = arg;
	size_t o;
	ssize_t n;

	for (;;) {
		pthread_barrier_wait(&go);
		if (atomic_load(&quit))
			return NULL;
		for (o = 0; o < l->len; o += (size_t)n)
			if ((n = recv(l->fd, l->dst + o, l->len - o, 0)) <= 0)
				die("recv");
		pthread_barrier_wait(&done);
	}
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
run(int lanes)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	double *t, t0;
	int lfd, i, one = 1;

	nl = lanes;
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		die("socket");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(lfd, MAXL) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) == -1)
		die("listen");
	for (i = 0; i < lanes; i++) {
		if ((snd[i].fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    connect(snd[i].fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
		    (rcv[i].fd = accept(lfd, NULL, NULL)) == -1)
			die("connect");
		setsockopt(snd[i].fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		snd[i].off = rcv[i].off = total / lanes * i;
		snd[i].len = rcv[i].len = i == lanes - 1 ?
		    total - snd[i].off : total / lanes;
		if ((rcv[i].dst = malloc(rcv[i].len)) == NULL)
			die("malloc");
		memset(rcv[i].dst, 1, rcv[i].len);
	}
	close(lfd);
	pthread_barrier_init(&go, NULL, 2 * lanes + 1);
	pthread_barrier_init(&done, NULL, lanes + 1);
	atomic_store(&quit, 0);
	for (i = 0; i < lanes; i++) {
		pthread_create(&snd[i].t, NULL, sender, &snd[i]);
		pthread_create(&rcv[i].t, NULL, receiver, &rcv[i]);
	}
	if ((t = calloc((size_t)reps, sizeof(*t))) == NULL)
		die("calloc");
	for (i = -warm; i < reps; i++) {
		t0 = now();
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		if (i >= 0)
			t[i] = now() - t0;
	}
	atomic_store(&quit, 1);
	pthread_barrier_wait(&go);
	for (i = 0; i < lanes; i++) {
		pthread_join(snd[i].t, NULL);
		pthread_join(rcv[i].t, NULL);
		close(snd[i].fd);
		close(rcv[i].fd);
		free(rcv[i].dst);
	}
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
	qsort(t, (size_t)reps, sizeof(*t), cmpd);
	printf("%-10d %10.1f %10.1f %10.1f %10.2f\n", lanes,
	    t[reps / 2] * 1e6, t[reps / 10] * 1e6, t[reps * 9 / 10] * 1e6,
	    total / t[reps / 2] / 1e9);
	free(t);
}

static void
memcpy_rate(void)
{
	char *dst;
	double *t, t0;
	int i;

	if ((dst = malloc(total)) == NULL ||
	    (t = calloc((size_t)reps, sizeof(*t))) == NULL)
		die("malloc");
	memset(dst, 1, total);
	for (i = -warm; i < reps; i++) {
		t0 = now();
		memcpy(dst, src, total);
		__asm__ volatile("" : : "r"(dst) : "memory");
		if (i >= 0)
			t[i] = now() - t0;
	}
	qsort(t, (size_t)reps, sizeof(*t), cmpd);
	printf("%-10s %10.1f %10.1f %10.1f %10.2f\n", "memcpy",
	    t[reps / 2] * 1e6, t[reps / 10] * 1e6, t[reps * 9 / 10] * 1e6,
	    total / t[reps / 2] / 1e9);
	free(t);
	free(dst);
}

static long
num(const char *s, long lo, long hi)
{
	char *e;
	long v;

	errno = 0;
	v = strtol(s, &e, 10);
	if (errno || e == s || *e || v < lo || v > hi) {
		fprintf(stderr, "tcp-lanes: bad number: %s (%ld to %ld)\n", s,
		    lo, hi);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	int c, i;
	size_t k;

	while ((c = getopt(argc, argv, "b:hp:r:")) != -1)
		switch (c) {
		case 'b': total = (size_t)num(optarg, 1, 1L << 32); break;
		case 'p': piece = (size_t)num(optarg, 1, 1L << 30); break;
		case 'r': reps = (int)num(optarg, 1, 100000); break;
		case 'h':
		default:
			fprintf(stderr, "usage: tcp-lanes [-b bytes] [-p piece]"
			    " [-r reps] lanes...\n");
			return c == 'h' ? 0 : 2;
		}
	if ((src = malloc(total)) == NULL)
		die("malloc");
	for (k = 0; k < total; k++)
		src[k] = (char)(k * 2654435761u >> 13);
	printf("# %zu bytes a transfer, pieces of %zu, %d transfers\n",
	    total, piece, reps);
	printf("%-10s %10s %10s %10s %10s\n", "LANES", "MEDIAN_US", "P10_US",
	    "P90_US", "GB/S");
	memcpy_rate();
	for (i = optind; i < argc; i++)
		run((int)num(argv[i], 1, MAXL));
	return 0;
}
