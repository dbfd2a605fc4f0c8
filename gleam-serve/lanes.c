/* Bulk lanes: see lanes.h. */
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	/* Resumable: the connection that replaces fd, its epoch, and the
	   least epoch taken next (all under mu). */
	int		 pend;		/* written under mu, atomically: read without */
	uint32_t	 pend_epoch;
	uint32_t	 min_epoch;
	int		 seen;		/* a hello came (epoch 0 is taken) */
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
	/* A resumable session's lanes (lanes_offer_resumable). */
	int		 res;
	int		 sealed;
	uint32_t	 window_ms;
	uint8_t		 secret[PROTO_LANE_SECRET];
	uint8_t		 reply[PROTO_LANE_TOKEN + PROTO_LANE_SECRET];
	char		 who[384];	/* "client ADDR (NAME)", for messages */
	int		 stopping;	/* under mu: no lane is taken */
	uint64_t	 drops, resent;	/* (atomic) */
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
	if (l->pend != -1) {
		close(l->pend);
		l->pend = -1;
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
		ls->lane[i].pend = -1;
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

	pthread_mutex_lock(&ls->mu);
	ls->stopping = 1;
	for (i = 0; i < PROTO_LANES_MAX; i++) {
		if (ls->lane[i].fd != -1)
			shutdown(ls->lane[i].fd, SHUT_RDWR);
		if (ls->lane[i].pend != -1)
			shutdown(ls->lane[i].pend, SHUT_RDWR);
	}
	__atomic_store_n(&ls->quit, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	for (i = 0; i < PROTO_LANES_MAX; i++) {
		if (ls->lane[i].started)
			pthread_join(ls->lane[i].t, NULL);
		ls->lane[i].started = 0;
		pthread_mutex_lock(&ls->mu);
		lane_close(&ls->lane[i]);
		ls->lane[i].seen = 0;
		ls->lane[i].min_epoch = 0;
		ls->lane[i].done = 0;
		ls->lane[i].err = 0;
		pthread_mutex_unlock(&ls->mu);
	}
	ls->n = 0;
	ls->gen = 0;
	ls->offered = 0;
	__atomic_store_n(&ls->quit, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&ls->mu);
	ls->stopping = 0;
	pthread_mutex_unlock(&ls->mu);
}

static int	lane_join(struct lanes *, struct lane *, uint64_t);

/* ---- a resumable session's lanes ---------------------------------------- */

/*
 * Each lane has a thread (lane 0 too), which does its stripe of each job
 * and, when its connection breaks, waits for the client to open the lane
 * again (it comes through the session's channel: lanes_take) and carries
 * on there: gleam-protocol(5), Resume.  A job ends only when every stripe
 * went out whole, or came in whole (and was acknowledged).  The serving
 * thread waits for that, up to the window.
 */

#define XCHG_MS		5000	/* for a new connection's first records */

/* Lane l's connection broke (why): closed; the client opens it again. */
static void
lane_drop(struct lanes *ls, struct lane *l, const char *why)
{
	pthread_mutex_lock(&ls->mu);
	if (l->fd != -1) {
		shutdown(l->fd, SHUT_RDWR);
		close(l->fd);
		l->fd = -1;
	}
	pthread_mutex_unlock(&ls->mu);
	__atomic_add_fetch(&ls->drops, 1, __ATOMIC_RELAXED);
	log_info("%s: bulk lane %u dropped (%s): waiting for it to come back",
	    ls->who, (unsigned)l->idx, why);
}

static void
rcv_timeout(int fd, int ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/*
 * Lane l's stripe of the job in hand [off, off + cnt), over its
 * connection: 0, EBADMSG (a record did not open: said here), or another
 * errno (the connection broke).  A stripe that came in is acknowledged
 * (job g); when only the acknowledgement fails the stripe counts as come,
 * and the client learns so when it opens the lane again.
 */
static int
lane_rstripe(struct lanes *ls, struct lane *l, uint64_t g, uint64_t off,
    uint64_t cnt)
{
	int e;

	if (ls->out)
		e = stripe_send(&l->ch, l->fd, ls->src + off, (size_t)cnt,
		    l->stage);
	else
		e = stripe_recv(&l->ch, l->fd, ls->buf + off, (size_t)cnt,
		    NULL);
	if (e == EBADMSG) {
		log_warn("%s: bulk lane %u: %s", ls->who, (unsigned)l->idx,
		    l->ch.err);
		return e;
	}
	if (e != 0 || ls->out)
		return e;
	if (stripe_send_u64(&l->ch, l->fd, g, l->stage) != 0)
		lane_drop(ls, l, "its acknowledgement did not go");
	return 0;
}

/*
 * Takes the connection that came for lane l (l->pend): its records, then
 * the first ones each way: ours says the last job the lane finished, the
 * client's the job it is at and which way its bytes go.  A stripe that
 * went out whole but did not arrive (the client is at the job we
 * finished) goes again now, from the buffer, which is the job's until the
 * client asks for another.  Any failure leaves the lane without a
 * connection (the client tries again).
 */
static void
lane_adopt(struct lanes *ls, struct lane *l)
{
	uint64_t job, g, len, off, cnt, done = l->done;
	uint32_t epoch, dir, n;
	int fd, old, out, e;

	pthread_mutex_lock(&ls->mu);
	fd = l->pend;
	epoch = l->pend_epoch;
	/* Atomic: lane_rwait looks without the lock. */
	__atomic_store_n(&l->pend, -1, __ATOMIC_RELEASE);
	old = l->fd;
	l->fd = -1;
	pthread_mutex_unlock(&ls->mu);
	if (old != -1)
		close(old);
	if (fd == -1)
		return;
	chan_fini(&l->ch);
	if (chan_init_lane_key(&l->ch, ls->sealed, 1, ls->secret, l->idx,
	    epoch) == -1) {
		log_warn("%s: bulk lane %u: %s", ls->who, (unsigned)l->idx,
		    l->ch.err);
		close(fd);
		return;
	}
	if (l->ch.sealed && l->stage == NULL &&
	    (l->stage = malloc(STRIPE_STAGE)) == NULL) {
		close(fd);
		return;
	}
	rcv_timeout(fd, XCHG_MS);
	if ((e = stripe_send_u64(&l->ch, fd, done, l->stage)) != 0 ||
	    (e = stripe_recv_at(&l->ch, fd, &job, &dir)) != 0) {
		log_info("%s: bulk lane %u (epoch %u): %s", ls->who,
		    (unsigned)l->idx, (unsigned)epoch, e == EBADMSG ?
		    l->ch.err : strerror(e));
		close(fd);
		return;
	}
	if (job != done && job != done + 1) {
		log_warn("%s: bulk lane %u (epoch %u): the client is at job "
		    "%llu, the lane at %llu, closing it", ls->who,
		    (unsigned)l->idx, (unsigned)epoch,
		    (unsigned long long)job, (unsigned long long)done);
		close(fd);
		return;
	}
	rcv_timeout(fd, 0);
	pthread_mutex_lock(&ls->mu);
	l->fd = fd;
	g = ls->gen;
	out = ls->out;
	len = ls->len;
	n = ls->n;
	pthread_cond_broadcast(&ls->fin);
	pthread_mutex_unlock(&ls->mu);
	if (epoch > 0)
		log_info("%s: bulk lane %u back (epoch %u), at job %llu",
		    ls->who, (unsigned)l->idx, (unsigned)epoch,
		    (unsigned long long)job);
	if (job == 0 || job != done || dir != STRIPE_DIR_OUT || !out ||
	    g != job)
		return;
	proto_lane_stripe(len, n, l->idx, &off, &cnt);
	if (cnt == 0)
		return;
	if ((e = stripe_send(&l->ch, l->fd, ls->src + off, (size_t)cnt,
	    l->stage)) != 0) {
		lane_drop(ls, l, strerror(e));
		return;
	}
	__atomic_add_fetch(&ls->resent, cnt, __ATOMIC_RELAXED);
	log_info("%s: bulk lane %u: job %llu's %llu bytes sent again",
	    ls->who, (unsigned)l->idx, (unsigned long long)job,
	    (unsigned long long)cnt);
}

/* Waits for a job after seen, or a connection for l: 1 with the job's
 * number in *g (seen if none), or 0 to quit. */
static int
lane_rwait(struct lanes *ls, struct lane *l, uint64_t seen, uint64_t *g)
{
	uint64_t t0 = now_ns();

	for (;;) {
		*g = __atomic_load_n(&ls->gen, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ls->quit, __ATOMIC_ACQUIRE))
			return 0;
		if (*g != seen || __atomic_load_n(&l->pend,
		    __ATOMIC_ACQUIRE) != -1)
			return 1;
		if (ls->spin_ns > 0 && now_ns() - t0 < ls->spin_ns) {
			cpu_relax();
			continue;
		}
		pthread_mutex_lock(&ls->mu);
		while (ls->gen == seen && l->pend == -1 && !ls->quit)
			pthread_cond_wait(&ls->go, &ls->mu);
		pthread_mutex_unlock(&ls->mu);
	}
}

/*
 * Lane l's stripe of job g, over whichever connection the lane has, again
 * on the next when one breaks: 0, or -1 when the window passed with the
 * lane away, the session ends, or a record did not open.
 */
static int
lane_rjob(struct lanes *ls, struct lane *l, uint64_t g)
{
	uint64_t off, cnt, until = 0;
	struct timespec ts;
	int again = 0, e;

	proto_lane_stripe(ls->len, ls->n, l->idx, &off, &cnt);
	if (cnt == 0)
		return 0;
	for (;;) {
		if (__atomic_load_n(&ls->quit, __ATOMIC_ACQUIRE))
			return -1;
		if (__atomic_load_n(&l->pend, __ATOMIC_ACQUIRE) != -1)
			lane_adopt(ls, l);
		if (l->fd == -1) {
			/* Away: the client opens it again, within the window. */
			if (until == 0)
				until = now_ns() + ls->window_ms * 1000000ull;
			if (now_ns() >= until) {
				log_info("%s: bulk lane %u: not back within "
				    "%.1f s", ls->who, (unsigned)l->idx,
				    ls->window_ms / 1000.0);
				return -1;
			}
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_mutex_lock(&ls->mu);
			if (l->pend == -1 && !ls->quit)
				pthread_cond_timedwait(&ls->go, &ls->mu, &ts);
			pthread_mutex_unlock(&ls->mu);
			continue;
		}
		if ((e = lane_rstripe(ls, l, g, off, cnt)) == 0)
			break;
		if (e == EBADMSG)
			return -1;
		lane_drop(ls, l, strerror(e));
		again = 1;
	}
	if (again) {
		__atomic_add_fetch(&ls->resent, cnt, __ATOMIC_RELAXED);
		log_info("%s: bulk lane %u: job %llu's %llu bytes %s again",
		    ls->who, (unsigned)l->idx, (unsigned long long)g,
		    (unsigned long long)cnt, ls->out ? "sent" : "received");
	}
	return 0;
}

static void *
lane_rmain(void *arg)
{
	struct lane *l = arg;
	struct lanes *ls = l->ls;
	uint64_t seen = 0, g;

	while (lane_rwait(ls, l, seen, &g)) {
		if (__atomic_load_n(&l->pend, __ATOMIC_ACQUIRE) != -1)
			lane_adopt(ls, l);
		if (g == seen)
			continue;
		if (lane_rjob(ls, l, g) == -1)
			__atomic_store_n(&l->err, 1, __ATOMIC_RELEASE);
		seen = g;
		pthread_mutex_lock(&ls->mu);
		__atomic_store_n(&l->done, g, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&ls->fin);
		pthread_mutex_unlock(&ls->mu);
	}
	return NULL;
}

void
lanes_offer_resumable(struct lanes **lp, uint32_t want, uint32_t max,
    uint64_t spin_ns, int sealed, uint32_t window_ms, const char *who,
    struct rcall *c)
{
	struct lanes *ls = *lp;
	uint32_t k = want < max ? want : max, i;
	uint8_t nonce[PROTO_NONCE_LEN];

	memset(c->out, 0, 5 * sizeof c->out[0]);
	if (k > PROTO_LANES_MAX)
		k = PROTO_LANES_MAX;
	if (ls == NULL) {
		if ((ls = lanes_new(spin_ns)) == NULL)
			return;
		ls->res = 1;
		__atomic_store_n(lp, ls, __ATOMIC_RELEASE);
	}
	if (ls->n > 0 || !ls->res)
		return;		/* lanes are up: no more */
	if (ls->offered > 0)
		lanes_stop(ls);	/* an offer not taken: this one instead */
	if (k == 0)
		return;
	pthread_mutex_lock(&ls->mu);
	ls->sealed = sealed;
	ls->window_ms = window_ms;
	snprintf(ls->who, sizeof ls->who, "%s", who);
	auth_nonce(nonce);
	memcpy(ls->token, nonce, sizeof ls->token);
	auth_nonce(nonce);
	memcpy(ls->secret, nonce, sizeof ls->secret);
	memcpy(ls->reply, ls->token, sizeof ls->token);
	memcpy(ls->reply + sizeof ls->token, ls->secret, sizeof ls->secret);
	memset(nonce, 0, sizeof nonce);
	pthread_mutex_unlock(&ls->mu);
	for (i = 0; i < k; i++) {
		if (pthread_create(&ls->lane[i].t, NULL, lane_rmain,
		    &ls->lane[i]) != 0) {
			log_warn("%s: cannot start a lane's thread", who);
			lanes_stop(ls);
			return;
		}
		ls->lane[i].started = 1;
	}
	pthread_mutex_lock(&ls->mu);
	ls->offered = k;
	pthread_mutex_unlock(&ls->mu);
	c->out[0].u = k;
	c->out[2].p = ls->reply;
	c->out[2].len = sizeof ls->reply;
}

void
lanes_take(struct lanes *ls, int fd, const uint8_t *hello)
{
	struct lane_rhello h;
	struct lane *l;
	uint32_t n;

	if (ls == NULL || proto_lane_rhello_dec(hello, PROTO_LANE_RHELLO,
	    &h) == -1) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&ls->mu);
	n = ls->n > 0 ? ls->n : ls->offered;
	l = &ls->lane[h.idx];
	if (!ls->res || ls->stopping || h.idx >= n ||
	    auth_equal16(h.token, ls->token) != 0 ||
	    (l->seen && h.epoch < l->min_epoch)) {
		pthread_mutex_unlock(&ls->mu);
		log_info("%s: a bulk lane not ours (lane %u, epoch %u), "
		    "closing it", ls->who, (unsigned)h.idx,
		    (unsigned)h.epoch);
		close(fd);
		return;
	}
	/* No two connections of a lane with one epoch: one set of keys. */
	l->seen = 1;
	l->min_epoch = h.epoch + 1;
	if (l->pend != -1)
		close(l->pend);
	__atomic_store_n(&l->pend, fd, __ATOMIC_RELEASE);
	l->pend_epoch = h.epoch;
	/* What it replaces is gone for the client: whoever waits on it
	 * wakes. */
	if (l->fd != -1)
		shutdown(l->fd, SHUT_RDWR);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
}

/* R_LANES_UP in a resumable session: all n lanes came within ACCEPT_MS. */
static uint32_t
lanes_raccept(struct lanes *ls, uint32_t n)
{
	uint64_t until = now_ns() + ACCEPT_MS * 1000000ull;
	struct timespec ts;
	uint32_t i, up;

	if (n == 0 || n != ls->offered) {
		lanes_stop(ls);
		return 0;
	}
	for (;;) {
		pthread_mutex_lock(&ls->mu);
		for (i = up = 0; i < n; i++)
			up += ls->lane[i].fd != -1;
		if (up < n && now_ns() < until) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&ls->fin, &ls->mu, &ts);
			pthread_mutex_unlock(&ls->mu);
			continue;
		}
		if (up == n)
			ls->n = n;
		pthread_mutex_unlock(&ls->mu);
		break;
	}
	if (up < n) {
		log_warn("%s: %u of %u lanes came: none taken", ls->who, up, n);
		lanes_stop(ls);
		return 0;
	}
	return n;
}

void
lanes_counts(const struct lanes *ls, uint64_t *drops, uint64_t *resent)
{
	*drops = ls != NULL ? __atomic_load_n(&ls->drops, __ATOMIC_RELAXED) :
	    0;
	*resent = ls != NULL ? __atomic_load_n(&ls->resent,
	    __ATOMIC_RELAXED) : 0;
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
	if (ls->res)
		return lanes_raccept(ls, n);
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

int
lanes_pending(struct lanes *ls)
{
	int p;

	if (ls == NULL)
		return 0;
	pthread_mutex_lock(&ls->mu);
	p = ls->n == 0 && (ls->offered > 0 || ls->lfd != -1);
	pthread_mutex_unlock(&ls->mu);
	return p;
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
	pthread_mutex_lock(&ls->mu);
	ls->out = 1;
	ls->src = p;
	ls->len = len;
	g = __atomic_add_fetch(&ls->gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	proto_lane_stripe(len, ls->n, 0, &off, &cnt);
	/* Resumable: lane 0 has a thread of its own too. */
	if (ls->res ? lane_join(ls, &ls->lane[0], g) == -1 :
	    lane_move(ls, &ls->lane[0], off, cnt) == -1)
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
	pthread_mutex_lock(&ls->mu);
	ls->out = 0;
	ls->len = len;
	g = __atomic_add_fetch(&ls->gen, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&ls->go);
	pthread_mutex_unlock(&ls->mu);
	/* Lane 0 is ours; then each stripe in turn, as it lands. */
	for (i = 0; i < ls->n; i++) {
		struct lane *l = &ls->lane[i];

		proto_lane_stripe(len, ls->n, i, &off, &cnt);
		if (i == 0 && !ls->res) {
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
