/*
 * One direction of an emulated link.
 *
 * The model: each piece read from the source is serialized behind the
 * pieces before it (start = max(arrival at the proxy, previous end), end =
 * start + len * 8 / rate), then travels for the delay plus a jitter
 * sample.  Its arrival time is never earlier than the previous piece's:
 * TCP is a byte stream, and a real link does not reorder one flow.  The
 * bytes stay in one evbuffer, beside a ring of (arrival time, length)
 * records; a timer fires at the head record's arrival and moves every
 * due byte to the destination.
 *
 * Backpressure: the source is read only while the bytes waiting for
 * serialization are fewer than the queue, so the sender's TCP sees the
 * link's rate; and not while the destination's output is large.
 *
 * Accuracy, which is the point of the program, costs three things here.
 * The source is read with recvmsg rather than by its bufferevent, which
 * in libevent 2.1 reads 4 KiB a turn of the loop (30,000 turns a second
 * at 1 Gbit/s), and which cannot ask the kernel when the bytes arrived:
 * waking the proxy takes tens of microseconds, which a 1 ms link must not
 * add.  Timers are armed early by their measured lateness.  And a timer
 * that fires early for bytes sent onto an idle link (a request, a ping)
 * waits for their time on the clock.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "log.h"
#include "shaper.h"
#include "util.h"

/* Records per direction: bounds memory when a peer sends tiny writes. */
#define CHUNK_MAX	8192
/* Bytes serialized as one: about a frame, at most 100 us at the rate. */
#define PIECE_MIN	1448
#define PIECE_MAX	16384
#define PIECE_TIME	100e-6
#define PIECE_FREE	65536		/* when the rate is unlimited */
/* One read from the source: about 1 ms at the rate, within these. */
#define READ_TIME	1e-3
#define READ_MAX	(128 * 1024)
/*
 * Bytes that follow others closely may leave up to this much (ns) before
 * their time, with the bytes ahead of them: a bulk transfer then wakes
 * the loop every few pieces rather than every piece.  Bytes sent onto an
 * idle link always leave on time.
 */
#define DELIVER_AHEAD	100000
/*
 * Timer lateness (ns), which delivery timers are armed early by: the
 * first guess, the ceiling, the shortest sleep that measures it, the
 * most one sample moves it, and how far past it an early timer may
 * busy-wait.
 */
#define WAKE_GUESS	20000
#define WAKE_CEIL	200000
#define WAKE_SAMPLE	50000
#define WAKE_CLIP	25000
#define WAKE_SPIN	50000
/* Kernel receive times further back than this (ns) are not believed. */
#define RX_TRUST	10000000

struct chunk {
	uint64_t	at;		/* ns: arrival at the destination */
	uint32_t	len;
	uint8_t		fin;		/* the source's FIN follows these bytes */
	uint8_t		lone;		/* sent onto an idle link */
};

struct shaper {
	struct shaper_params	 p;
	struct shaper_cb	 cb;
	struct event_base	*base;
	int			 src;
	struct bufferevent	*dst;
	size_t			 piece;
	size_t			 readsz;	/* most bytes per read */

	struct evbuffer		*in;	/* read, not yet on the link */
	uint64_t		 rx;	/* ns: when the last read's bytes came */
	uint64_t		 resumed;	/* ns: reading last resumed */
	struct evbuffer		*held;	/* on the link */
	struct chunk		*ring;
	size_t			 head;
	size_t			 count;
	size_t			 cap;

	uint64_t		 ser_end;	/* ns: serialization ends */
	double			 ser_frac;	/* and the ns fraction */
	uint64_t		 last_at;
	uint64_t		 rng;
	uint64_t		 delivered;
	size_t			 due;		/* arrived, held by the gate */
	int			 fin_due;	/* the FIN, behind them */

	struct event		*read_ev;
	struct event		*deliver_ev;
	uint64_t		 deliver_at;	/* 0 when not armed */
	uint64_t		 deliver_wake;	/* when it was asked to fire */
	uint64_t		 deliver_set;	/* and when asked */
	struct event		*resume_ev;
	uint64_t		 resume_at;

	int			 src_eof;
	int			 fin_queued;
	int			 fin_sent;
	int			 queue_full;	/* reading paused by the queue */
	int			 out_paused;	/* and by the destination */
	int			 reading;
	int			 finished;
	int			 stopped;
};

/*
 * How late a timer fires (ns), estimated from the delivery timers: one
 * loop, one clock, so one estimate for every shaper.
 */
static int64_t	wake_late = WAKE_GUESS;

static void	shaper_read_cb(evutil_socket_t, short, void *);
static void	shaper_deliver_cb(evutil_socket_t, short, void *);
static void	shaper_resume_cb(evutil_socket_t, short, void *);
static void	shaper_run(struct shaper *);

/* The piece: the most bytes that are serialized as one. */
static size_t
shaper_piece(const struct shaper_params *p)
{
	double n;

	if (p->rate <= 0)
		return PIECE_FREE;
	n = p->rate * PIECE_TIME / 8;
	if (n < PIECE_MIN)
		return PIECE_MIN;
	if (n > PIECE_MAX)
		return PIECE_MAX;
	return (size_t)n;
}

/* The most bytes read from the source at once. */
static size_t
shaper_readsz(const struct shaper_params *p, size_t piece)
{
	double n;

	if (p->rate <= 0)
		return READ_MAX;
	n = p->rate * READ_TIME / 8;
	if (n < (double)piece)
		return piece;
	if (n > READ_MAX)
		return READ_MAX;
	return (size_t)n;
}

struct shaper *
shaper_new(struct event_base *base, const struct shaper_params *p,
    uint64_t seed, int src, struct bufferevent *dst,
    const struct shaper_cb *cb)
{
	struct shaper *sh;

	if ((sh = calloc(1, sizeof *sh)) == NULL)
		return NULL;
	sh->p = *p;
	sh->cb = *cb;
	sh->base = base;
	sh->src = src;
	sh->dst = dst;
	sh->piece = shaper_piece(p);
	sh->readsz = shaper_readsz(p, sh->piece);
	sh->rng = seed;
	sh->cap = 16;
	sh->ring = calloc(sh->cap, sizeof *sh->ring);
	sh->in = evbuffer_new();
	sh->held = evbuffer_new();
	sh->read_ev = event_new(base, src, EV_READ | EV_PERSIST,
	    shaper_read_cb, sh);
	sh->deliver_ev = evtimer_new(base, shaper_deliver_cb, sh);
	sh->resume_ev = evtimer_new(base, shaper_resume_cb, sh);
	if (sh->ring == NULL || sh->in == NULL || sh->held == NULL ||
	    sh->read_ev == NULL || sh->deliver_ev == NULL ||
	    sh->resume_ev == NULL) {
		shaper_free(sh);
		return NULL;
	}
	return sh;
}

/*
 * The destination's low watermark is when a paused source may be read
 * again.  Receive timestamps are asked for where the system has them.
 */
void
shaper_start(struct shaper *sh)
{
#ifdef SO_TIMESTAMPNS
	int one = 1;

	setsockopt(sh->src, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
#endif
	bufferevent_set_max_single_write(sh->dst, SHAPER_OUT_MAX);
	bufferevent_setwatermark(sh->dst, EV_WRITE, SHAPER_OUT_MAX / 2, 0);
	sh->reading = 1;
	sh->resumed = now_ns();
	event_add(sh->read_ev, NULL);
}

/* Reads from the source only when the queue and the destination allow. */
static void
shaper_reading(struct shaper *sh)
{
	int want = !sh->src_eof && !sh->queue_full && !sh->out_paused &&
	    !sh->stopped;

	if (want == sh->reading)
		return;
	sh->reading = want;
	if (want) {
		sh->resumed = now_ns();
		event_add(sh->read_ev, NULL);
	} else
		event_del(sh->read_ev);
}

void
shaper_stop(struct shaper *sh)
{
	sh->stopped = 1;
	shaper_reading(sh);
	evtimer_del(sh->deliver_ev);
	evtimer_del(sh->resume_ev);
}

void
shaper_free(struct shaper *sh)
{
	if (sh == NULL)
		return;
	if (sh->read_ev != NULL)
		event_free(sh->read_ev);
	if (sh->deliver_ev != NULL)
		event_free(sh->deliver_ev);
	if (sh->resume_ev != NULL)
		event_free(sh->resume_ev);
	if (sh->in != NULL)
		evbuffer_free(sh->in);
	if (sh->held != NULL)
		evbuffer_free(sh->held);
	free(sh->ring);
	free(sh);
}

uint64_t
shaper_delivered(const struct shaper *sh)
{
	return sh->delivered;
}

/* splitmix64 (util.h): the same sequence for the same seed. */
static uint64_t
shaper_random(struct shaper *sh)
{
	return splitmix64(&sh->rng);
}

/*
 * Serializes len bytes that reached the proxy at t, behind what the link
 * already holds; returns when their last bit leaves.  The fraction of a
 * nanosecond is carried so that many small pieces add up to the rate.
 */
static uint64_t
shaper_serialize(struct shaper *sh, size_t len, uint64_t t)
{
	uint64_t whole;
	double d;

	if (sh->p.rate <= 0)
		return t;
	if (sh->ser_end <= t) {
		/* The link was idle: nothing to queue behind. */
		sh->ser_end = t;
		sh->ser_frac = 0;
	}
	d = (double)len * 8e9 / sh->p.rate + sh->ser_frac;
	whole = (uint64_t)d;
	sh->ser_frac = d - (double)whole;
	sh->ser_end += whole;
	return sh->ser_end;
}

/* When bytes serialized at end arrive: delay, jitter, and no overtaking. */
static uint64_t
shaper_arrival(struct shaper *sh, uint64_t end)
{
	double d = sh->p.delay;
	uint64_t at;

	if (sh->p.jitter > 0) {
		/* Uniform in [-jitter, +jitter]; jitter <= delay keeps d >= 0. */
		d += sh->p.jitter * (2 * ((double)(shaper_random(sh) >> 11) *
		    0x1p-53) - 1);
	}
	if (d < 0)
		d = 0;
	at = end + (uint64_t)(d * 1e9 + 0.5);
	if (at < sh->last_at)
		at = sh->last_at;
	sh->last_at = at;
	return at;
}

/* Bytes waiting for serialization, from the time the link still needs. */
static double
shaper_backlog(const struct shaper *sh, uint64_t now)
{
	if (sh->p.rate <= 0 || sh->ser_end <= now)
		return 0;
	return (double)(sh->ser_end - now) * sh->p.rate / 8e9;
}

/* Whether the link takes another piece now. */
static int
shaper_admits(const struct shaper *sh, uint64_t now)
{
	if (sh->count >= CHUNK_MAX)
		return 0;
	if (evbuffer_get_length(sh->held) >= sh->p.queue + SHAPER_FLIGHT_MAX)
		return 0;
	return shaper_backlog(sh, now) < (double)sh->p.queue;
}

/* Makes room for one more record; -1 when memory is short. */
static int
shaper_reserve(struct shaper *sh)
{
	struct chunk *ring;
	size_t i, ncap;

	if (sh->count < sh->cap)
		return 0;
	/* Grow and unwrap.  The FIN may take one record past CHUNK_MAX. */
	ncap = sh->cap * 2;
	if ((ring = calloc(ncap, sizeof *ring)) == NULL)
		return -1;
	for (i = 0; i < sh->count; i++)
		ring[i] = sh->ring[(sh->head + i) % sh->cap];
	free(sh->ring);
	sh->ring = ring;
	sh->head = 0;
	sh->cap = ncap;
	return 0;
}

/*
 * Appends a record, merged with the last one when they arrive together;
 * the caller has reserved room.
 */
static void
shaper_push(struct shaper *sh, uint64_t at, size_t len, int fin, int lone)
{
	struct chunk *c;

	if (sh->count > 0) {
		c = &sh->ring[(sh->head + sh->count - 1) % sh->cap];
		if (c->at == at && !c->fin && c->len + len <= UINT32_MAX) {
			c->len += (uint32_t)len;
			c->fin = (uint8_t)fin;
			return;
		}
	}
	c = &sh->ring[(sh->head + sh->count) % sh->cap];
	c->at = at;
	c->len = (uint32_t)len;
	c->fin = (uint8_t)fin;
	c->lone = (uint8_t)lone;
	sh->count++;
}

/* Moves what the link admits from the input onto the link. */
static void
shaper_take(struct shaper *sh, uint64_t now)
{
	size_t len, n;
	uint64_t at, t;
	int lone;

	/*
	 * An idle link starts on bytes when they came, not when they were
	 * read; but not before reading resumed, if the bytes waited for it.
	 */
	t = sh->rx > sh->resumed ? sh->rx : sh->resumed;
	if (t > now)
		t = now;
	while ((len = evbuffer_get_length(sh->in)) > 0 &&
	    shaper_admits(sh, now)) {
		if (shaper_reserve(sh) == -1)
			return;
		n = len < sh->piece ? len : sh->piece;
		lone = sh->count == 0 && shaper_backlog(sh, now) == 0;
		at = shaper_arrival(sh, shaper_serialize(sh, n, t));
		evbuffer_remove_buffer(sh->in, sh->held, n);
		shaper_push(sh, at, n, 0, lone);
	}
	if (sh->src_eof && !sh->fin_queued && evbuffer_get_length(sh->in) == 0 &&
	    shaper_reserve(sh) == 0) {
		/* The FIN travels like a byte, behind the last one. */
		at = shaper_arrival(sh, shaper_serialize(sh, 0, now));
		shaper_push(sh, at, 0, 1, 0);
		sh->fin_queued = 1;
	}
}

/* Once the FIN is out and the destination flushed, shuts its write half. */
static void
shaper_finish(struct shaper *sh)
{
	if (!sh->fin_sent || sh->finished)
		return;
	if (evbuffer_get_length(bufferevent_get_output(sh->dst)) != 0)
		return;
	sh->finished = 1;
	shutdown(bufferevent_getfd(sh->dst), SHUT_WR);
	sh->cb.done(sh, sh->cb.arg);
}

/*
 * Writes every record that has arrived; returns whether any did.  When
 * the destination's output is empty the bytes go to the socket at once:
 * through the bufferevent they would wait a turn of the loop.  What the
 * socket does not take goes to the bufferevent.
 */
static int
shaper_deliver(struct shaper *sh, uint64_t now)
{
	struct evbuffer *out = bufferevent_get_output(sh->dst);
	struct chunk *c;
	size_t n;
	int moved = 0, fin = 0, w;

	while (sh->count > 0) {
		c = &sh->ring[sh->head];
		if (c->at > now + (c->lone ? 0 : DELIVER_AHEAD))
			break;
		sh->due += c->len;
		sh->fin_due |= c->fin;
		sh->head = (sh->head + 1) % sh->cap;
		sh->count--;
		moved = 1;
	}
	/* A fault may hold back some or all of it. */
	n = sh->due;
	if (n > 0 && sh->cb.gate != NULL)
		n = sh->cb.gate(sh, n, sh->cb.arg);
	if (sh->stopped)
		return 0;
	sh->due -= n;
	if (sh->due == 0 && sh->fin_due) {
		fin = 1;
		sh->fin_due = 0;
	}
	sh->delivered += n;
	if (n > 0 && sh->cb.delivered != NULL)
		sh->cb.delivered(sh, n, sh->cb.arg);
	if (n > 0 && evbuffer_get_length(out) == 0) {
		/* A failed write fails again in the bufferevent, which says. */
		w = evbuffer_write_atmost(sh->held, bufferevent_getfd(sh->dst),
		    (ev_ssize_t)n);
		if (w > 0)
			n -= (size_t)w;
	}
	if (n > 0)
		evbuffer_remove_buffer(sh->held, out, n);
	if (evbuffer_get_length(out) >= SHAPER_OUT_MAX && !sh->out_paused) {
		/* The destination is slow: stop taking from the source. */
		sh->out_paused = 1;
		shaper_reading(sh);
	}
	if (fin) {
		sh->fin_sent = 1;
		/* From now on, hear when the output is empty. */
		bufferevent_setwatermark(sh->dst, EV_WRITE, 0, 0);
	}
	return moved;
}

/*
 * Arms ev to fire at wake (ns) for what is due at key, unless it is
 * armed for that key already.
 */
static void
shaper_arm(struct shaper *sh, struct event *ev, uint64_t *armed,
    uint64_t key, uint64_t wake, uint64_t now)
{
	struct timeval tv;
	uint64_t us;

	if (*armed == key)
		return;
	/* Round up: a timer that fires early only costs a second wakeup. */
	us = wake > now ? (wake - now + 999) / 1000 : 0;
	tv.tv_sec = (time_t)(us / 1000000);
	tv.tv_usec = (suseconds_t)(us % 1000000);
	/* libevent adds tv to its cached time, older than now. */
	event_base_update_cache_time(sh->base);
	evtimer_add(ev, &tv);
	*armed = key;
}

/*
 * Moves bytes onto and off the link as far as the clock allows, then
 * sleeps until the next record arrives or the queue has room again.
 */
static void
shaper_run(struct shaper *sh)
{
	uint64_t now, at, gap, wake;

	if (sh->stopped)
		return;
	now = now_ns();
	do
		shaper_take(sh, now);
	while (shaper_deliver(sh, now) && (evbuffer_get_length(sh->in) > 0 ||
	    (sh->src_eof && !sh->fin_queued)));
	sh->queue_full = evbuffer_get_length(sh->in) > 0;
	shaper_reading(sh);

	if (sh->count > 0) {
		/* Early by the timer's lateness, so that it fires on time. */
		at = sh->ring[sh->head].at;
		wake = at > now + (uint64_t)wake_late ?
		    at - (uint64_t)wake_late : now;
		if (sh->deliver_at != at) {
			sh->deliver_wake = wake;
			sh->deliver_set = now;
		}
		shaper_arm(sh, sh->deliver_ev, &sh->deliver_at, at, wake, now);
	}
	if (sh->queue_full && sh->p.rate > 0 && sh->count < CHUNK_MAX &&
	    evbuffer_get_length(sh->held) < sh->p.queue + SHAPER_FLIGHT_MAX) {
		/*
		 * Only the queue is full: come back when a read's worth has
		 * left it (half the queue at most), not for every piece.
		 */
		gap = sh->readsz < sh->p.queue / 2 ? sh->readsz :
		    sh->p.queue / 2;
		at = sh->ser_end - (uint64_t)((double)(sh->p.queue - gap) *
		    8e9 / sh->p.rate);
		shaper_arm(sh, sh->resume_ev, &sh->resume_at, at, at, now);
	}
	shaper_finish(sh);
}

/* The kernel's receive time of what recvmsg returned, as now_ns() counts. */
static uint64_t
shaper_rx_time(struct msghdr *msg, uint64_t now)
{
#ifdef SO_TIMESTAMPNS
	struct cmsghdr *cm;
	struct timespec ts, real;
	int64_t rx;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		memcpy(&ts, CMSG_DATA(cm), sizeof ts);
		clock_gettime(CLOCK_REALTIME, &real);
		/* Wall clock to monotonic: how long ago, by the wall clock. */
		rx = (int64_t)now - ((int64_t)(real.tv_sec - ts.tv_sec) *
		    1000000000 + (real.tv_nsec - ts.tv_nsec));
		if (rx <= (int64_t)now && rx >= (int64_t)now - RX_TRUST)
			return (uint64_t)rx;
	}
#endif
	return now;
}

/* The source is readable: a read's worth, or its end, or an error. */
static void
shaper_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct shaper *sh = arg;
	struct evbuffer_iovec v[2];
	struct msghdr msg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(struct timespec))];
	} cbuf;
	size_t want = sh->readsz, got;
	ssize_t n;
	int nv;

	if (evbuffer_get_length(sh->in) >= want) {
		/* Cannot happen: the input is taken before reading resumes. */
		shaper_run(sh);
		return;
	}
	want -= evbuffer_get_length(sh->in);
	if ((nv = evbuffer_reserve_space(sh->in, (ev_ssize_t)want, v, 2)) <= 0) {
		shaper_stop(sh);
		sh->cb.fail(sh, "out of memory", sh->cb.arg);
		return;
	}
	/* Read no more than want, whatever reserve_space offered. */
	if (v[0].iov_len >= want) {
		v[0].iov_len = want;
		nv = 1;
	} else if (nv == 2 && v[1].iov_len > want - v[0].iov_len)
		v[1].iov_len = want - v[0].iov_len;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = (struct iovec *)v;
	msg.msg_iovlen = (size_t)nv;
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof cbuf.buf;
	n = recvmsg(fd, &msg, 0);
	if (n <= 0) {
		evbuffer_commit_space(sh->in, v, 0);
		if (n == 0) {
			/* End of stream: what came before goes first. */
			sh->src_eof = 1;
			shaper_reading(sh);
			shaper_run(sh);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			shaper_stop(sh);
			sh->cb.fail(sh, strerror(errno), sh->cb.arg);
		}
		return;
	}
	got = (size_t)n;
	if (got <= v[0].iov_len) {
		v[0].iov_len = got;
		nv = 1;
	} else
		v[1].iov_len = got - v[0].iov_len;
	evbuffer_commit_space(sh->in, v, nv);
	sh->rx = shaper_rx_time(&msg, now_ns());
	shaper_run(sh);
}

/*
 * The head record is about to arrive.  The timer's lateness feeds the
 * estimate, each sample clipped so that a stall of the whole machine
 * moves it little.  A timer that fired early for bytes sent onto an idle
 * link waits for their time on the clock: a second timer would be late
 * again.
 */
static void
shaper_deliver_cb(evutil_socket_t fd, short what, void *arg)
{
	struct shaper *sh = arg;
	uint64_t now = now_ns(), at;
	int64_t err;

	if (sh->deliver_wake >= sh->deliver_set + WAKE_SAMPLE) {
		err = (int64_t)(now - sh->deliver_wake) - wake_late;
		if (err > WAKE_CLIP)
			err = WAKE_CLIP;
		if (err < -WAKE_CLIP)
			err = -WAKE_CLIP;
		wake_late += err / 8;
		if (wake_late < 0)
			wake_late = 0;
		if (wake_late > WAKE_CEIL)
			wake_late = WAKE_CEIL;
	}
	sh->deliver_at = 0;
	if (sh->count > 0 && sh->ring[sh->head].lone) {
		at = sh->ring[sh->head].at;
		if (at > now && at - now <= (uint64_t)wake_late + WAKE_SPIN)
			while (now_ns() < at)
				;
	}
	shaper_run(sh);
}

/* The queue has room for another read. */
static void
shaper_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct shaper *sh = arg;

	sh->resume_at = 0;
	shaper_run(sh);
}

void
shaper_kick(struct shaper *sh)
{
	if (!sh->stopped)
		shaper_run(sh);
}

void
shaper_drained(struct shaper *sh)
{
	struct evbuffer *out = bufferevent_get_output(sh->dst);

	if (sh->stopped)
		return;
	if (sh->out_paused && evbuffer_get_length(out) <= SHAPER_OUT_MAX / 2) {
		sh->out_paused = 0;
		shaper_reading(sh);
	}
	shaper_finish(sh);
}
