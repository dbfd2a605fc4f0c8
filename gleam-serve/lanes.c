/* Bulk lanes: see lanes.h. */
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "chan.h"
#include "lanes.h"
#include "log.h"
#include "net.h"
#include "proto.h"
#include "stripe.h"
#include "util.h"

#define ACCEPT_MS	1000	/* for all the lanes to come and say hello */

struct lane {
	struct lanes	*ls;
	int		 fd;
	uint32_t	 idx;
	char		 peer[64];	/* the client's end, for messages */
	struct chan	 ch;		/* its records (stripe.h) */
	uint8_t		*stage;		/* sealing, when sealed */
	int		 started;	/* its thread runs (lanes 1 and up) */
	pthread_t	 t;
	uint64_t	 done;		/* the last job it finished (atomic) */
	int		 err;		/* its connection broke (atomic) */
};

struct lanes {
	int		 lfd;		/* listening until R_LANES_UP */
	uint32_t	 offered, n;
	uint8_t		 token[PROTO_LANE_TOKEN];
	uint8_t		 addr[16];	/* our end of the main connection */
	uint32_t	 addrlen, port;
	uint64_t	 spin_ns;
	struct lane	 lane[PROTO_LANES_MAX];
	uint8_t		*buf;		/* LANES_COPY_MAX bytes, once needed */
	int		 out;		/* the job sends (else receives) */
	const uint8_t	*src;		/* what it sends */
	uint64_t	 len;		/* the job's bytes */
	uint64_t	 gen;		/* jobs given (atomic) */
	int		 quit;		/* (atomic) */
	pthread_mutex_t	 mu;
	pthread_cond_t	 go;		/* a job or quit, for the threads */
	pthread_cond_t	 fin;		/* a stripe done, for the caller */
};

static void
lane_close(struct lane *l)
{
	if (l->fd != -1) {
		shutdown(l->fd, SHUT_RDWR);
		close(l->fd);
		l->fd = -1;
	}
	chan_fini(&l->ch);
	free(l->stage);
	l->stage = NULL;
}

/*
 * Lane l's stripe of the job, [off, off + cnt), out of src or into the
 * buffer: 0, or -1 when the lane broke or a record did not open (said
 * here: the session ends, and none of the stripe is used).
 */
static int
lane_move(struct lanes *ls, struct lane *l, uint64_t off, uint64_t cnt)
{
	int e;

	if (cnt == 0)
		return 0;
	e = ls->out ? stripe_send(&l->ch, l->fd, ls->src + off, (size_t)cnt,
	    l->stage) : stripe_recv(&l->ch, l->fd, ls->buf + off, (size_t)cnt,
	    NULL);
	if (e == EBADMSG)
		log_warn("client %s: bulk lane %u: %s", l->peer,
		    (unsigned)l->idx, l->ch.err);
	return e == 0 ? 0 : -1;
}

/* Waits for a job after seen: its number, or 0 to quit. */
static uint64_t
lane_wait(struct lanes *ls, uint64_t seen)
{
	uint64_t g = spin_wait(&ls->gen, seen, 1, &ls->quit, ls->spin_ns,
	    &ls->mu, &ls->go);

	return __atomic_load_n(&ls->quit, __ATOMIC_ACQUIRE) ? 0 : g;
}

static void *
lane_main(void *arg)
{
	struct lane *l = arg;
	struct lanes *ls = l->ls;
	uint64_t g = 0, off, cnt;

	while ((g = lane_wait(ls, g)) != 0) {
		proto_lane_stripe(ls->len, ls->n, l->idx, &off, &cnt);
		if (lane_move(ls, l, off, cnt) == -1)
			__atomic_store_n(&l->err, 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&ls->mu);
		__atomic_store_n(&l->done, g, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&ls->fin);
		pthread_mutex_unlock(&ls->mu);
	}
	return NULL;
}

static struct lanes *
lanes_new(uint64_t spin_ns)
{
	struct lanes *ls;
	uint32_t i;

	if ((ls = calloc(1, sizeof *ls)) == NULL)
		return NULL;
	ls->lfd = -1;
	ls->spin_ns = spin_ns;
	for (i = 0; i < PROTO_LANES_MAX; i++) {
		ls->lane[i].ls = ls;
		ls->lane[i].fd = -1;
		ls->lane[i].idx = i;
	}
	pthread_mutex_init(&ls->mu, NULL);
	pthread_cond_init(&ls->go, NULL);
	pthread_cond_init(&ls->fin, NULL);
	return ls;
}

/* Listens at our end of fd's connection, any port. */
static int
lanes_listen(struct lanes *ls, int fd, uint32_t k)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int lfd;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return -1;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		memcpy(ls->addr, &a->sin_addr, 4);
		ls->addrlen = 4;
		ls->port = ntohs(a->sin_port);
		a->sin_port = 0;
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		memcpy(ls->addr, &a->sin6_addr, 16);
		ls->addrlen = 16;
		ls->port = ntohs(a->sin6_port);
		a->sin6_port = 0;
	} else
		return -1;
	if ((lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (bind(lfd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(lfd, (int)k) == -1) {
		close(lfd);
		return -1;
	}
	return lfd;
}

void
lanes_offer(struct lanes **lp, int fd, uint32_t want, uint32_t max,
    uint64_t spin_ns, struct rcall *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct lanes *ls = *lp;
	uint32_t k = want < max ? want : max;

	memset(c->out, 0, 5 * sizeof c->out[0]);
	if (k > PROTO_LANES_MAX)
		k = PROTO_LANES_MAX;
	if (ls == NULL && (ls = *lp = lanes_new(spin_ns)) == NULL)
		return;
	if (ls->n > 0)
		k = 0;		/* lanes are up: no more */
	if (ls->lfd != -1) {
		close(ls->lfd);
		ls->lfd = -1;
	}
	ls->offered = 0;
	if (k == 0 || (ls->lfd = lanes_listen(ls, fd, k)) == -1 ||
	    getsockname(ls->lfd, (struct sockaddr *)&ss, &sl) == -1) {
		if (k > 0)
			log_warn("client: cannot listen for lanes: %s",
			    strerror(errno));
		if (ls->lfd != -1)
			close(ls->lfd);
		ls->lfd = -1;
		return;
	}
	{
		uint8_t nonce[PROTO_NONCE_LEN];

		auth_nonce(nonce);
		memcpy(ls->token, nonce, sizeof ls->token);
	}
	ls->offered = k;
	c->out[0].u = k;
	c->out[1].u = ss.ss_family == AF_INET ?
	    ntohs(((struct sockaddr_in *)&ss)->sin_port) :
	    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	c->out[2].p = ls->token;
	c->out[2].len = sizeof ls->token;
	c->out[3].u = ls->port;
	c->out[4].p = ls->addr;
	c->out[4].len = ls->addrlen;
}

/* Stops the lanes' threads, closes the lanes: none are up. */
static void
lanes_stop(struct lanes *ls)
{
	uint32_t i;

	for (i = 0; i < PROTO_LANES_MAX; i++)
		if (ls->lane[i].fd != -1)
			shutdown(ls->lane[i].fd, SHUT_RDWR);
	__atomic_store_n(&ls->quit, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&ls->mu);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	for (i = 0; i < PROTO_LANES_MAX; i++) {
		if (ls->lane[i].started)
			pthread_join(ls->lane[i].t, NULL);
		ls->lane[i].started = 0;
		lane_close(&ls->lane[i]);
	}
	ls->n = 0;
	__atomic_store_n(&ls->quit, 0, __ATOMIC_RELEASE);
}

/* One lane's connection and hello; its index, or -1. */
static int
lane_take(struct lanes *ls, uint64_t until)
{
	uint8_t hello[PROTO_LANE_HELLO];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	struct timeval tv = { 1, 0 };
	struct pollfd pf;
	uint32_t idx;
	uint64_t t;
	int fd, ms;

	t = now_ns();
	ms = t >= until ? 0 : (int)((until - t) / 1000000);
	pf.fd = ls->lfd;
	pf.events = POLLIN;
	if (poll(&pf, 1, ms) != 1)
		return -1;
	if ((fd = accept4(ls->lfd, (struct sockaddr *)&ss, &sl,
	    SOCK_CLOEXEC)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (net_recv_all(fd, hello, sizeof hello, NULL) != 0 ||
	    proto_lane_hello_dec(hello, sizeof hello, ls->token, ls->offered,
	    &idx) == -1 || ls->lane[idx].fd != -1) {
		close(fd);
		return -1;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	ls->lane[idx].fd = fd;
	net_addr_str((struct sockaddr *)&ss, ls->lane[idx].peer,
	    sizeof ls->lane[idx].peer);
	return (int)idx;
}

/* Each lane's records, keyed from the main connection's: 0, or -1. */
static int
lanes_chans(struct lanes *ls, uint32_t n, const struct chan *parent)
{
	struct lane *l;
	uint32_t i;

	for (i = 0; i < n; i++) {
		l = &ls->lane[i];
		if (chan_init_lane(&l->ch, parent, i) == -1) {
			log_warn("client %s: lanes: %s", l->peer, l->ch.err);
			return -1;
		}
		if (l->ch.sealed && (l->stage = malloc(STRIPE_STAGE)) == NULL) {
			log_warn("client %s: lanes: out of memory", l->peer);
			return -1;
		}
	}
	return 0;
}

uint32_t
lanes_accept(struct lanes *ls, uint32_t n, const struct chan *parent)
{
	uint64_t until = now_ns() + ACCEPT_MS * 1000000ull;
	uint32_t i;

	if (ls == NULL)
		return 0;
	if (ls->lfd == -1 || n == 0 || n != ls->offered) {
		if (ls->lfd != -1)
			close(ls->lfd);
		ls->lfd = -1;
		ls->offered = 0;
		return 0;
	}
	for (i = 0; i < n; i++)
		if (lane_take(ls, until) == -1)
			break;
	close(ls->lfd);
	ls->lfd = -1;
	ls->offered = 0;
	if (i < n) {
		log_warn("client: %u of %u lanes came: none taken", i, n);
		lanes_stop(ls);
		return 0;
	}
	if (lanes_chans(ls, n, parent) == -1) {
		lanes_stop(ls);
		return 0;
	}
	ls->n = n;
	for (i = 1; i < n; i++) {
		if (pthread_create(&ls->lane[i].t, NULL, lane_main,
		    &ls->lane[i]) != 0) {
			log_warn("client: cannot start a lane's thread");
			lanes_stop(ls);
			return 0;
		}
		ls->lane[i].started = 1;
	}
	return n;
}

uint32_t
lanes_count(const struct lanes *ls)
{
	return ls != NULL ? ls->n : 0;
}

void *
lanes_prepare(struct lanes *ls, size_t *len)
{
	*len = LANES_COPY_MAX;
	if (ls != NULL && ls->buf == NULL && posix_memalign((void **)&ls->buf,
	    4096, LANES_COPY_MAX) != 0)
		ls->buf = NULL;
	return ls != NULL ? ls->buf : NULL;
}

/* Waits for lane l to finish job g: 0, or -1 if its connection broke. */
static int
lane_join(struct lanes *ls, struct lane *l, uint64_t g)
{
	spin_wait(&l->done, g, 0, NULL, ls->spin_ns, &ls->mu, &ls->fin);
	return __atomic_load_n(&l->err, __ATOMIC_ACQUIRE) ? -1 : 0;
}

int
lanes_send(struct lanes *ls, const void *p, size_t len)
{
	uint64_t g, off, cnt;
	uint32_t i;
	int broke = 0;

	if (ls == NULL || ls->n == 0 || len == 0 || len > LANES_COPY_MAX)
		return -1;
	ls->out = 1;
	ls->src = p;
	ls->len = len;
	pthread_mutex_lock(&ls->mu);
	g = __atomic_add_fetch(&ls->gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	proto_lane_stripe(len, ls->n, 0, &off, &cnt);
	if (lane_move(ls, &ls->lane[0], off, cnt) == -1)
		broke = 1;
	for (i = 1; i < ls->n; i++)
		if (lane_join(ls, &ls->lane[i], g) == -1)
			broke = 1;
	return broke ? -1 : 0;
}

int
lanes_recv(struct lanes *ls, size_t len,
    int (*put)(void *, size_t, const void *, size_t), void *arg, int *rc)
{
	uint64_t g, off, cnt;
	uint32_t i;
	int broke = 0, r;

	if (ls == NULL || ls->n == 0 || len == 0 || len > LANES_COPY_MAX ||
	    ls->buf == NULL)
		return -1;
	ls->out = 0;
	ls->len = len;
	pthread_mutex_lock(&ls->mu);
	g = __atomic_add_fetch(&ls->gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	/* Lane 0 is ours; then each stripe in turn, as it lands. */
	for (i = 0; i < ls->n; i++) {
		struct lane *l = &ls->lane[i];

		proto_lane_stripe(len, ls->n, i, &off, &cnt);
		if (i == 0) {
			if (lane_move(ls, l, off, cnt) == -1)
				broke = 1;
		} else {
			if (lane_join(ls, l, g) == -1)
				broke = 1;
		}
		if (!broke && cnt > 0 &&
		    (r = put(arg, (size_t)off, ls->buf + off, (size_t)cnt)) != 0 &&
		    *rc == 0)
			*rc = r;
	}
	return broke ? -1 : 0;
}

void
lanes_free(struct lanes *ls)
{
	if (ls == NULL)
		return;
	lanes_stop(ls);
	if (ls->lfd != -1)
		close(ls->lfd);
	pthread_mutex_destroy(&ls->mu);
	pthread_cond_destroy(&ls->go);
	pthread_cond_destroy(&ls->fin);
	free(ls->buf);
	free(ls);
}
