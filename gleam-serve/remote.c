/* Serving one remoting client on its own thread. */
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "backend.h"
#include "chan.h"
#include "chanrd.h"
#include "conn.h"
#include "gap.h"
#include "keep.h"
#include "check.h"
#include "log.h"
#include "net.h"
#include "util.h"
#include "lanes.h"
#include "output.h"
#include "remote.h"
#include "wcache.h"
#include "zframe.h"

#define STAGE_MAX	(2ull << 30)	/* bytes staged per client at most */

/* An image arriving in pieces (R_STAGE_PUT) for a load that names id. */
struct stage {
	uint8_t		*buf;
	size_t		 len, cap;
};

/* Where a session's time in the backend went, by call (-v: at its end). */
struct rprof {
	uint64_t		 n, ns, max;
};

struct remote {
	unsigned		 oneway_failed;	/* one-way calls that failed */
	struct rprof		 prof[RPC_NCALLS];	/* when profiling */
	int			 profiling;	/* -v: the log wants them */
	uint64_t		 t_open;	/* now_ns() at R_OPEN */
	struct htab		 stages;	/* id -> struct stage */
	struct gaps		 gaps;		/* reply to next request (gap.h) */
	uint64_t		 spun, caught;	/* polls past spin; requests
						   that came in that time */
	uint64_t		 staged;	/* their bytes */
	int			 fd;
	const struct remote_env	*env;
	struct remote_stats	*stats;
	void			*token;
	struct rclient		 cl;
	struct chan		 ch;		/* the connection's records */
	uint8_t			*in;		/* bytes read, not yet served */
	struct chanrd		 rd;		/* what they are (chanrd.h) */
	size_t			 incap;
	struct pw		 out;		/* replies not yet sent: frames */
	/* Where a record must start in out: before (and after) a large
	 * reply, so that the client may take it straight to its place. */
	size_t			 brk[16];
	unsigned		 nbrk;
	uint8_t			*seal;		/* a sealed tail's pieces */
	int			 opened;
	int			 pin;		/* 1: try to pin r->in, 0: don't */
	struct wclient		*wc;		/* its weight cache state */
	struct wscope		 scope;		/* and where its entries are */
	struct auth_key		 key;		/* its identity's */
	struct lanes		*lanes;		/* its bulk lanes (lanes.h) */
	/* Resume (gleam-protocol(5)): what the client has not yet
	   acknowledged, the channel new connections come on, and why the
	   connection broke (a link's failure, not the client's doing). */
	int			 resumable;
	uint32_t		 resume_ms;
	int			 ctl;
	struct keep		 keep;
	int			 broken;
	char			 why[128];	/* why it broke */
	uint64_t		 drops, resends, resent;
	/*
	 * The channel is read by a thread of its own (ctl_main), so that a
	 * bulk lane that comes back is taken whatever this thread does: a
	 * connection that resumes the session waits in pend_* and wake (an
	 * eventfd) says so, or that the channel closed (ctl_gone).
	 */
	pthread_t		 ctl_t;
	int			 ctl_started;
	int			 wake, stop;	/* eventfds */
	pthread_mutex_t		 pmu;
	int			 pend_fd;	/* -1: none */
	struct remote_resume	 pend_rr;
	uint8_t			*pend_raw;
	int			 ctl_gone;
	int			 pend_mig;	/* a MIGRATE order waits */
	char			 pend_host[256];
	int			 pend_port;
	/*
	 * Migration (gleam-protocol(5), Migration).  The source: an order
	 * taken when every call is answered, no lanes are half open and
	 * nothing of the weight cache is half done (at_rest: no copy is on
	 * the lanes then, remote_rests), and whether the session
	 * went; its lanes stay, and are closed with the worker.  The target: the state as it comes (mig_in 1, then
	 * 2 once loaded) and the client's stream to go on with.
	 */
	int			 at_rest;
	int			 mig_req;
	char			 mig_host[256];
	int			 mig_port;
	int			 moved;
	struct pw		 mig_state;
	int			 mig_in;
	int			 mig_switch;
	int			 mig_from;	/* it came so: lanes left behind */
	struct msg_mig_end	 mig_end;	/* keep, pending: in mig_buf */
	uint8_t			*mig_buf;
	uint64_t		 mig_mem;
	uint64_t		 mig_t0;
};

/*
 * The input buffer is page-locked (backend host_pin) once the client has a
 * context, so that host-to-device copies go from the frame by DMA.  It is
 * sized then for the largest frame, so it never moves while pinned, unless
 * frames may be larger than this: then it stays pageable.
 */
#define PIN_MAX		(64u << 20)
#define READ_MIN	(1u << 16)	/* bytes a read asks for at least */
#define REPLY_DIRECT	(256u << 10)	/* a blob this large is not copied */
/*
 * A reply this large starts a record of its own, which it fills: the
 * client library receives it straight into its destination (io.c,
 * DIRECT_MIN).
 */
#define REPLY_OWN	(64u << 10)
/*
 * The client library's records hold at most this much (io.c, IO_REC_MAX);
 * a record is all in before any of it is used, so the input has room for
 * one beside a frame.  Larger ones (other clients) grow the buffer.
 */
#define REC_ROOM	((1u << 20) + 2 * CHAN_HDR + CHAN_TAG)
#define SEAL_PIECE	(1u << 20)	/* a sealed tail goes in pieces */

static void
remote_pin(struct remote *r)
{
	const struct backend *be = r->env->be;
	size_t cap = PROTO_HDR_LEN + (size_t)r->env->max_frame + REC_ROOM +
	    READ_MIN;
	uint8_t *nb;

	if (!r->pin || !r->opened)
		return;
	if (be->host_pin == NULL || cap > PIN_MAX) {
		r->pin = 0;
		return;
	}
	if (r->incap < cap) {
		/* Page-aligned, whole pages: what the driver locks. */
		cap = (cap + 4095) & ~(size_t)4095;
		if (posix_memalign((void **)&nb, 4096, cap) != 0) {
			r->pin = 0;
			return;
		}
		memcpy(nb, r->in, chanrd_used(&r->rd));
		free(r->in);
		r->in = nb;
		r->incap = cap;
	}
	if (be->host_pin(&r->cl, r->in, r->incap) == -1)
		r->pin = 0;
}

/*
 * Host functions reached (backend.h, rclient_host_note): noted by any
 * thread, sent by the serving thread in MSG_HOST frames, ahead of its
 * next reply (remote_serve) and whenever its loop comes round; fd wakes
 * it from a wait for input (remote_read).
 */
#define HOSTQ_FRAME	8192	/* ids in one MSG_HOST */

struct rhostq {
	pthread_mutex_t	 mu;
	struct pw	 ids;		/* u64 each, in the order reached */
	uint32_t	 n;		/* atomic reads outside mu */
	int		 fd;		/* an eventfd */
};

void
rclient_host_note(struct rclient *cl, uint64_t id)
{
	struct rhostq *q = cl->hq;
	uint64_t one = 1;

	if (q == NULL)
		return;
	pthread_mutex_lock(&q->mu);
	pw_u64(&q->ids, id);
	if (q->ids.bad) {
		/* Out of memory: the client cannot learn of it. */
		log_warn("client %s: a host function's notice is lost",
		    cl->addr);
		pw_free(&q->ids);
		pw_init(&q->ids);
		__atomic_store_n(&q->n, 0, __ATOMIC_RELEASE);
	} else
		__atomic_add_fetch(&q->n, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&q->mu);
	(void)!write(q->fd, &one, sizeof one);
}

static struct rhostq *
hostq_new(void)
{
	struct rhostq *q = calloc(1, sizeof *q);

	if (q == NULL)
		return NULL;
	if ((q->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
		free(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pw_init(&q->ids);
	return q;
}

static void
hostq_free(struct rhostq *q)
{
	if (q == NULL)
		return;
	close(q->fd);
	pw_free(&q->ids);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

struct robj *
robj_get(struct rclient *cl, uint64_t id, int kind)
{
	struct robj *o = htab_get(&cl->objs, id);

	return o != NULL && o->kind == kind ? o : NULL;
}

uint64_t
robj_id_of(struct rclient *cl, const void *h, int kind)
{
	size_t i = 0;
	uint64_t id;
	void *v;

	while (htab_next(&cl->objs, &i, &id, &v))
		if (((struct robj *)v)->kind == kind &&
		    ((struct robj *)v)->h == h)
			return id;
	return 0;
}

struct robj *
robj_new(struct rclient *cl, uint64_t id, int kind, void *h)
{
	struct robj *o;

	if (htab_get(&cl->objs, id) != NULL)
		return NULL;		/* ids are the client's to keep unique */
	if ((o = calloc(1, sizeof *o)) == NULL)
		return NULL;
	o->id = id;
	o->kind = kind;
	o->h = h;
	if (htab_put(&cl->objs, id, o) == -1) {
		free(o);
		return NULL;
	}
	return o;
}

void
robj_free(struct robj *o)
{
	if (o == NULL)
		return;
	free(o->offset);
	free(o->size);
	free(o->img);
	free(o->attrs);
	free(o->sattr);
	while (o->globals != NULL) {
		struct rglobal *g = o->globals;

		o->globals = g->next;
		free(g);
	}
	free(o);
}

void
robj_del(struct rclient *cl, uint64_t id)
{
	robj_free(htab_del(&cl->objs, id));
}

void
robj_levels_del(struct rclient *cl, struct robj *mm)
{
	size_t i = 0;
	uint64_t id;
	void *v;

	while (htab_next(&cl->objs, &i, &id, &v))
		if (((struct robj *)v)->parent == mm &&
		    ((struct robj *)v)->kind == RK_ARRAY)
			robj_del(cl, id);
}

/* The index of the last range with base <= p, or -1. */
static long
rmem_find(const struct rclient *cl, uint64_t p)
{
	size_t lo = 0, hi = cl->nranges;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cl->ranges[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/*
 * A range refused: said in the log (-v) with the nearest range below it,
 * the first 16 times in a process (a worker serves one client), so that
 * a program's call that failed for it can be told from the driver's.
 */
static void
rmem_refused(const struct rclient *cl, uint64_t p, uint64_t len, long i)
{
	static int said;

	if (__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED) >= 16)
		return;
	if (i < 0)
		log_warn("client %s: 0x%llx+%llu: not the client's device "
		    "memory (none below it)", cl->addr, (unsigned long long)p,
		    (unsigned long long)len);
	else
		log_warn("client %s: 0x%llx+%llu: not the client's device "
		    "memory (the range below: 0x%llx+%llu)", cl->addr,
		    (unsigned long long)p, (unsigned long long)len,
		    (unsigned long long)cl->ranges[i].base,
		    (unsigned long long)cl->ranges[i].size);
}

int
rmem_add(struct rclient *cl, uint64_t base, uint64_t size, int global,
    const void *owner)
{
	struct rrange *nr;
	long i = rmem_find(cl, base);

	if (i >= 0 && cl->ranges[i].base == base)
		return 0;	/* a global asked for twice */
	if (cl->nranges == cl->rcap) {
		size_t cap = cl->rcap ? cl->rcap * 2 : 64;
		if ((nr = realloc(cl->ranges, cap * sizeof *nr)) == NULL)
			return -1;
		cl->ranges = nr;
		cl->rcap = cap;
	}
	i++;
	memmove(&cl->ranges[i + 1], &cl->ranges[i],
	    (cl->nranges - (size_t)i) * sizeof *cl->ranges);
	cl->ranges[i] = (struct rrange){ base, size, global, owner };
	cl->nranges++;
	return 0;
}

int
rmem_del(struct rclient *cl, uint64_t base)
{
	long i = rmem_find(cl, base);

	if (i < 0 || cl->ranges[i].base != base || cl->ranges[i].global)
		return -1;
	memmove(&cl->ranges[i], &cl->ranges[i + 1],
	    (cl->nranges - (size_t)i - 1) * sizeof *cl->ranges);
	cl->nranges--;
	return 0;
}

void
rmem_drop(struct rclient *cl, const void *owner)
{
	size_t i, j;

	for (i = j = 0; i < cl->nranges; i++)
		if (cl->ranges[i].owner != owner)
			cl->ranges[j++] = cl->ranges[i];
	cl->nranges = j;
}

int
rmem_range(const struct rclient *cl, uint64_t p, uint64_t *base,
    uint64_t *size)
{
	long i = rmem_find(cl, p);

	if (i < 0 || p - cl->ranges[i].base >= cl->ranges[i].size)
		return -1;
	*base = cl->ranges[i].base;
	*size = cl->ranges[i].size;
	return 0;
}

int
rmem_check(const struct rclient *cl, uint64_t p, uint64_t len)
{
	long i = rmem_find(cl, p);
	const struct rrange *r;

	uint64_t at;
	size_t j;

	if (i >= 0) {
		r = &cl->ranges[i];
		if (p - r->base <= r->size && len <= r->size - (p - r->base))
			return 0;
		/*
		 * Across ranges that meet (a growing allocator's adjacent
		 * reservations, allocations back to back): the driver
		 * checks only that the addresses are mapped.
		 */
		if (p - r->base < r->size && len <= UINT64_MAX - p) {
			at = r->base + r->size;
			for (j = (size_t)i + 1; j < cl->nranges &&
			    cl->ranges[j].base <= at; j++) {
				if (cl->ranges[j].base + cl->ranges[j].size > at)
					at = cl->ranges[j].base +
					    cl->ranges[j].size;
				if (p + len <= at)
					return 0;
			}
		}
	}
	rmem_refused(cl, p, len, i);
	return -1;
}

int
rval_str(const struct rpc_val *v, char *buf, size_t len)
{
	if (v->len >= len)
		return -1;
	memcpy(buf, v->p, v->len);
	buf[v->len] = '\0';
	return 0;
}

void
ftab_begin(struct pw *w, uint32_t n)
{
	rpc_ftab_begin(w, n);
}

void
ftab_add(struct pw *w, const char *name, uint32_t nparams,
    const uint32_t *offset, const uint32_t *size, uint32_t nattr,
    const int32_t *attr)
{
	rpc_ftab_add(w, name, nparams, offset, size, nattr, attr);
}

/* Appends a frame to the output. */
static void
remote_frame(struct remote *r, uint16_t type, uint16_t flags, uint64_t id,
    const void *p, size_t len)
{
	struct frame_hdr h = { (uint32_t)len, type, flags, id };
	uint8_t hb[PROTO_HDR_LEN];

	proto_hdr_encode(hb, &h);
	pw_bytes(&r->out, hb, sizeof hb);
	pw_bytes(&r->out, p, len);
}

static void
remote_error(struct remote *r, uint64_t id, uint32_t code, const char *text)
{
	struct pw w;

	pw_init(&w);
	msg_error_put(&w, code, text);
	if (!w.bad)
		remote_frame(r, MSG_ERROR, FL_REPLY, id, w.p, w.len);
	pw_free(&w);
	log_info("client %s (%s): %s: %s", r->cl.addr, r->cl.name,
	    proto_err_name(code), text);
}

/* The host functions reached so far, as MSG_HOST frames. */
static void
remote_host_collect(struct remote *r)
{
	struct rhostq *q = r->cl.hq;
	struct pw w;
	struct pr p;
	uint32_t n, k, i;

	if (q == NULL || __atomic_load_n(&q->n, __ATOMIC_ACQUIRE) == 0)
		return;
	pthread_mutex_lock(&q->mu);
	n = q->n;
	pr_init(&p, q->ids.p, q->ids.len);
	while (n > 0) {
		k = n < HOSTQ_FRAME ? n : HOSTQ_FRAME;
		pw_init(&w);
		pw_u32(&w, k);
		for (i = 0; i < k; i++)
			pw_u64(&w, pr_u64(&p));
		if (!w.bad)
			remote_frame(r, MSG_HOST, 0, 0, w.p, w.len);
		pw_free(&w);
		n -= k;
	}
	q->ids.len = 0;
	__atomic_store_n(&q->n, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&q->mu);
}

/* A record must start at off of the output (if there is room to say so). */
static void
remote_brk(struct remote *r, size_t off)
{
	if (off > 0 && r->nbrk < sizeof r->brk / sizeof r->brk[0] &&
	    (r->nbrk == 0 || r->brk[r->nbrk - 1] < off))
		r->brk[r->nbrk++] = off;
}

#define IOV_N	48	/* iovecs a sendmsg takes from us at most */

/* What a flush writes: iovecs, and the records' headers and tags. */
struct rwire {
	struct iovec	 iov[IOV_N];
	uint8_t		 ht[IOV_N / 3][CHAN_HDR + CHAN_TAG];
	int		 n, k;
};

/* The connection broke (not the client's doing): resume may mend it. */
static void
remote_broke(struct remote *r, const char *why)
{
	if (!r->broken)
		snprintf(r->why, sizeof r->why, "%s", why);
	r->broken = 1;
}

static int	remote_read(struct remote *);
static int	remote_order(struct remote *);
static int	remote_mig_waits(struct remote *);
static int	remote_resume_waits(struct remote *);
static int	remote_mig_in(struct remote *, const struct frame_hdr *,
		    const uint8_t *);
static int	remote_open_records(struct remote *);
static int	remote_resend(struct remote *, uint64_t);
static void	efd_drain(int);

/*
 * Room for n more bytes in what the client has not acknowledged: waits
 * for its acknowledgements, reading (and opening, not serving) what it
 * sends meanwhile.  -1 when the connection broke.
 */
static int
remote_room(struct remote *r, size_t n)
{
	while (keep_room(&r->keep) < n)
		if (remote_read(r) == -1 || remote_open_records(r) == -1)
			return -1;
	return 0;
}

/* Writes all of w; -1 when the client is gone. */
static int
remote_writev(struct remote *r, struct rwire *w)
{
	struct iovec *iov = w->iov;
	struct msghdr m;
	size_t total = 0;
	ssize_t n;
	int i, left = w->n;

	for (i = 0; i < w->n; i++)
		total += w->iov[i].iov_len;
	while (left > 0) {
		memset(&m, 0, sizeof m);
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)left;
		if ((n = sendmsg(r->fd, &m, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			remote_broke(r, strerror(errno));
			return -1;
		}
		while (left > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			left--;
		}
		if (left > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	__atomic_add_fetch(&r->stats->bytes_out, total, __ATOMIC_RELAXED);
	w->n = w->k = 0;
	return 0;
}

static void
rwire_add(struct rwire *w, const void *p, size_t len)
{
	if (len > 0) {
		w->iov[w->n].iov_base = (void *)p;
		w->iov[w->n].iov_len = len;
		w->n++;
	}
}

/*
 * One record of the output's [off, off + alen), in place, then blen bytes
 * of the tail at b: from where they lie in the clear; sealed, in pieces
 * through r->seal (the tail is the backend's: it may be device memory).
 */
static int
remote_record(struct remote *r, struct rwire *w, size_t off, size_t alen,
    const uint8_t *b, size_t blen)
{
	uint8_t *ht;
	size_t k;
	int bounced = r->ch.sealed && blen > 0;

	if ((w->n + 5 > IOV_N || w->k == IOV_N / 3) &&
	    remote_writev(r, w) == -1)
		return -1;
	ht = w->ht[w->k++];
	chan_seal_begin(&r->ch, ht, alen + blen);
	chan_seal_update(&r->ch, r->out.p + off, r->out.p + off, alen);
	rwire_add(w, ht, CHAN_HDR);
	rwire_add(w, r->out.p + off, alen);
	if (!r->ch.sealed)
		rwire_add(w, b, blen);
	else if (blen > 0) {
		if (r->seal == NULL && (r->seal = malloc(SEAL_PIECE)) == NULL)
			return -1;
		for (; blen > 0; b += k, blen -= k) {
			k = blen < SEAL_PIECE ? blen : SEAL_PIECE;
			chan_seal_update(&r->ch, r->seal, b, k);
			rwire_add(w, r->seal, k);
			if (blen > k && remote_writev(r, w) == -1)
				return -1;
		}
	}
	rwire_add(w, ht + CHAN_HDR, chan_seal_final(&r->ch, ht + CHAN_HDR));
	/* r->seal is used again by the next record. */
	return bounced ? remote_writev(r, w) : 0;
}

/*
 * Sends the output, in records, then (if any) the last len bytes of its
 * last frame from p: a large reply's payload goes from where the backend
 * put it (a pinned scratch, say), not copied into the output first.
 * Nothing to send, but much read since our last word: an empty record
 * acknowledges it.  -1 when the client is gone.
 */
static int
remote_flush_with(struct remote *r, const void *p, size_t len)
{
	struct rwire w;
	const uint8_t *tail = p;
	size_t off = 0, end, a;
	unsigned b = 0;

	w.n = w.k = 0;
	if (r->out.bad)
		return -1;
	if (r->resumable && (r->out.len > 0 || len > 0)) {
		/*
		 * Kept until acknowledged, all of it before any is sent: a
		 * drop then loses nothing.  Without room, the tail becomes
		 * part of the output, sent after the resume.
		 */
		if (remote_room(r, r->out.len + len) == -1) {
			if (len > 0)
				pw_bytes(&r->out, p, len);
			return -1;
		}
		keep_add(&r->keep, r->out.p, r->out.len);
		if (len > 0)
			keep_add(&r->keep, p, len);
	}
	if (r->out.len == 0 && len == 0) {
		if (!chan_ack_due(&r->ch))
			return 0;
		return remote_record(r, &w, 0, 0, NULL, 0) == -1 ? -1 :
		    remote_writev(r, &w);
	}
	while (off < r->out.len || len > 0) {
		/* Up to the next break, CHAN_BODY_MAX at most. */
		while (b < r->nbrk && r->brk[b] <= off)
			b++;
		end = b < r->nbrk ? r->brk[b] : r->out.len;
		a = end - off < CHAN_BODY_MAX ? end - off : CHAN_BODY_MAX;
		if (end == r->out.len && len > 0) {
			/* The last frame and its tail. */
			size_t t = CHAN_BODY_MAX - a;

			t = len < t ? len : t;
			if (remote_record(r, &w, off, a, tail, t) == -1)
				goto fail;
			tail += t;
			len -= t;
		} else if (remote_record(r, &w, off, a, NULL, 0) == -1)
			goto fail;
		off += a;
	}
	if (remote_writev(r, &w) == -1)
		goto fail;
	r->out.len = 0;
	r->nbrk = 0;
	/* A large reply's buffer is not kept for the life of the client. */
	if (r->out.cap > (64u << 20)) {
		pw_free(&r->out);
		pw_init(&r->out);
	}
	return 0;
fail:
	/* Kept: the resume sends it again. */
	if (r->resumable) {
		r->out.len = 0;
		r->nbrk = 0;
	}
	return -1;
}

/* Writes all of the output; -1 when the client is gone. */
static int
remote_flush(struct remote *r)
{
	return remote_flush_with(r, NULL, 0);
}

static void
remote_open(struct remote *r, const struct frame_hdr *h, struct rcall *c)
{
	const struct backend *be = r->env->be;
	struct pw devs, rep;
	uint32_t ndev = 0, version = 0;
	int rc;

	pw_init(&devs);
	pw_init(&rep);
	rc = be->describe(&devs, &ndev, &version);
	if (rc == 0 && !r->opened) {
		rc = be->client_new(&r->cl);
		r->opened = rc == 0;
	}
	pw_u32(&rep, (uint32_t)rc);
	if (rc == 0) {
		c->out[0].u = version;
		c->out[1].p = devs.p;
		c->out[1].len = (uint32_t)devs.len;
		/* The device count leads the blob, which the client reads. */
		(void)ndev;
		rpc_pack(&rep, c->d->rep, c->out);
	}
	remote_frame(r, h->type, FL_REPLY, h->id, rep.p, rep.len);
	pw_free(&devs);
	pw_free(&rep);
}

static void
stage_free(struct remote *r, uint64_t id)
{
	struct stage *st = htab_del(&r->stages, id);

	if (st != NULL) {
		r->staged -= st->len;
		free(st->buf);
		free(st);
	}
}

/* in: id, offset, data.  Pieces come in order; offset 0 starts over. */
static int
stage_put(struct remote *r, struct rcall *c)
{
	struct stage *st = htab_get(&r->stages, c->in[0].u);
	uint64_t off = c->in[1].u, len = c->in[2].len;
	uint8_t *nb;
	size_t cap;

	if (off == 0)
		stage_free(r, c->in[0].u), st = NULL;
	if (st == NULL) {
		if (off != 0 || (st = calloc(1, sizeof *st)) == NULL ||
		    htab_put(&r->stages, c->in[0].u, st) == -1) {
			free(st);
			return 1;	/* CUDA_ERROR_INVALID_VALUE */
		}
	}
	if (off != st->len || r->staged + len > STAGE_MAX)
		return 1;
	if (st->len + len > st->cap) {
		cap = st->cap ? st->cap : 1 << 20;
		while (cap < st->len + len)
			cap *= 2;
		if ((nb = realloc(st->buf, cap)) == NULL)
			return 2;	/* CUDA_ERROR_OUT_OF_MEMORY */
		st->buf = nb;
		st->cap = cap;
	}
	if (len > 0)	/* an empty piece may point nowhere */
		memcpy(st->buf + st->len, c->in[2].p, len);
	st->len += len;
	r->staged += len;
	return 0;
}

/*
 * -v: where the session's time went in the backend, the calls that took
 * most first (RPROF_SHOW of them), against the session's wall time: what
 * is neither is the server waiting for the client or the link.
 */
#define RPROF_SHOW	12

static void
remote_prof_log(struct remote *r)
{
	char line[2048];
	size_t len = 0;
	uint64_t total = 0, wall;
	int shown[RPROF_SHOW], k, i, best, ns = 0;

	if (!r->profiling || r->t_open == 0)
		return;
	wall = now_ns() - r->t_open;
	for (i = 0; i < RPC_NCALLS; i++)
		total += r->prof[i].ns;
	line[0] = '\0';
	for (k = 0; k < RPROF_SHOW; k++) {
		best = -1;
		for (i = 0; i < RPC_NCALLS; i++) {
			int j, dup = 0;

			for (j = 0; j < ns; j++)
				dup |= shown[j] == i;
			if (!dup && r->prof[i].n > 0 && (best == -1 ||
			    r->prof[i].ns > r->prof[best].ns))
				best = i;
		}
		if (best == -1)
			break;
		shown[ns++] = best;
		if (len < sizeof line)
			len += (size_t)snprintf(line + len, sizeof line - len,
			    "%s%s %llu %.3f ms (max %.0f us)", k ? "; " : "",
			    rpc_lookup((uint16_t)(best + R_OPEN))->name,
			    (unsigned long long)r->prof[best].n,
			    r->prof[best].ns / 1e6, r->prof[best].max / 1e3);
	}
	log_debug("client %s (%s): %.3f s, %.3f s in calls: %s", r->cl.addr,
	    r->cl.name, wall / 1e9, total / 1e9, line);
}

/* A stripe of an R_MEM_HTOD_LANES copy, as an R_MEM_HTOD of its own. */
struct lane_put {
	backend_fn	 fn;
	struct rcall	 c;
	uint64_t	 dptr;
};

static int
lane_put(void *arg, size_t off, const void *p, size_t n)
{
	struct lane_put *lp = arg;

	lp->c.in[3].u = lp->dptr + off;
	lp->c.in[4].p = p;
	lp->c.in[4].len = (uint32_t)n;
	return lp->fn != NULL ? lp->fn(&lp->c) : 801;
}

/*
 * The lanes' buffer for a copy of n bytes, pinned in the client's context
 * where the backend can; NULL when the client has no lanes or n is out of
 * range.
 */
static void *
lanes_buffer(struct remote *r, uint64_t n)
{
	const struct backend *be = r->env->be;
	size_t plen;
	void *buf;

	if (lanes_count(r->lanes) == 0 || n == 0 || n > LANES_COPY_MAX ||
	    (buf = lanes_prepare(r->lanes, &plen)) == NULL)
		return NULL;
	if (be->host_pin != NULL)
		(void)be->host_pin(&r->cl, buf, plen);
	return buf;
}

/*
 * in: ctx, stream, async, dptr, bytes; the bytes come over the lanes.  -1
 * when the call is malformed or a lane broke: the session ends, since the
 * lanes would no longer line up with the calls.
 */
static int
remote_htod_lanes(struct remote *r, struct rcall *c, int *rc)
{
	const struct backend *be = r->env->be;
	struct lane_put lp;
	int broke;

	if (lanes_buffer(r, c->in[4].u) == NULL)
		return -1;
	memset(&lp, 0, sizeof lp);
	lp.fn = be->call[R_MEM_HTOD - R_OPEN];
	lp.c.cl = c->cl;
	lp.c.d = rpc_lookup(R_MEM_HTOD);
	memcpy(lp.c.in, c->in, 4 * sizeof c->in[0]);
	lp.dptr = c->in[3].u;
	*rc = 0;
	broke = lanes_recv(r->lanes, (size_t)c->in[4].u, lane_put, &lp, rc);
	if (broke == 0)
		__atomic_add_fetch(&r->stats->bytes_in, c->in[4].u,
		    __ATOMIC_RELAXED);
	free(lp.c.scratch);
	pw_free(&lp.c.blob);
	return broke;
}

/*
 * in: ctx, stream, async, dptr, bytes; the bytes go back over the lanes,
 * all of them even when the copy fails (zeros then: the lanes stay in
 * line), and the reply says how it went.  -1 as for remote_htod_lanes.
 */
static int
remote_dtoh_lanes(struct remote *r, struct rcall *c, int *rc)
{
	const struct backend *be = r->env->be;
	backend_fn fn = be->call[R_MEM_DTOH - R_OPEN];
	struct rcall d;
	size_t n = (size_t)c->in[4].u;
	void *buf;

	if ((buf = lanes_buffer(r, n)) == NULL)
		return -1;
	memset(&d, 0, sizeof d);
	d.cl = c->cl;
	d.d = rpc_lookup(R_MEM_DTOH);
	memcpy(d.in, c->in, 5 * sizeof c->in[0]);
	d.into = buf;
	*rc = fn != NULL ? fn(&d) : 801;	/* CUDA_ERROR_NOT_SUPPORTED */
	if (*rc != 0)
		memset(buf, 0, n);
	free(d.scratch);
	pw_free(&d.blob);
	if (lanes_send(r->lanes, buf, n) == -1)
		return -1;
	__atomic_add_fetch(&r->stats->bytes_out, n, __ATOMIC_RELAXED);
	return 0;
}

/* The client's records, the parent of its lanes'. */
static const struct chan *
remote_chan(struct remote *r)
{
	return &r->ch;
}

/*
 * With -vvv, a line a call: its name, its first fields (a number as it
 * came, a blob as its length in brackets) and its result, so that the
 * order of a program's calls and waits, and on which streams, can be
 * read off the log.
 */
static void
trace_call(const struct remote *r, const struct rcall *c, int rc, int oneway)
{
	char f[160];
	size_t at = 0, i, n = strlen(c->d->req);

	f[0] = '\0';
	for (i = 0; i < n && i < 4 && at < sizeof f - 32; i++) {
		if (c->d->req[i] == 'B' || c->d->req[i] == 'S')
			at += (size_t)snprintf(f + at, sizeof f - at, " [%u]",
			    c->in[i].len);
		else
			at += (size_t)snprintf(f + at, sizeof f - at, " %llu",
			    (unsigned long long)c->in[i].u);
	}
	log_trace("client %s: %s%s%s -> %d", r->cl.addr, c->d->name, f,
	    oneway ? " (one-way)" : "", rc);
}

/* One whole frame; returns -1 to end the session. */
static int
remote_serve(struct remote *r, const struct frame_hdr *h, const uint8_t *p)
{
	struct rcall c;
	struct stage *st;
	struct pw rep;
	backend_fn fn;
	uint8_t *zbuf = NULL;
	const struct rpc_val *tail = NULL;	/* a reply's large last blob */
	const char *why;
	size_t plen;
	uint64_t sid, t0;
	int rc, staged, sent;

	if (h->type == MSG_BYE)
		return -1;
	if (h->type < MSG_REMOTE_FIRST && h->flags != 0) {
		remote_error(r, h->id, PERR_MALFORMED, "unexpected flags");
		return -1;
	}
	if (h->type == MSG_ECHO) {
		remote_frame(r, MSG_ECHO, FL_REPLY, h->id, p, h->len);
		return 0;
	}
	if (h->type == MSG_MIG_STATE || h->type == MSG_MIG_MEM ||
	    h->type == MSG_MIG_END)
		return remote_mig_in(r, h, p);
	memset(&c, 0, sizeof c);
	c.cl = &r->cl;
	c.oneway = (h->flags & FL_ONEWAY) != 0;
	c.d = rpc_lookup(h->type);
	if (c.d == NULL) {
		remote_error(r, h->id, PERR_UNKNOWN, "not a remoting call");
		return -1;
	}
	if ((h->flags & ~(FL_ONEWAY | FL_ZSTD)) != 0) {
		remote_error(r, h->id, PERR_MALFORMED, c.d->name);
		return -1;
	}
	plen = h->len;
	if (h->flags & FL_ZSTD) {
		/* Inflated no larger than a frame may be. */
		if (zf_decompress(p, h->len, r->env->max_frame, &zbuf, &plen,
		    &why) == -1) {
			char text[128];

			snprintf(text, sizeof text, "%s: %s", c.d->name, why);
			remote_error(r, h->id, PERR_MALFORMED, text);
			return -1;
		}
		p = zbuf;
	}
	if (rpc_unpack(p, plen, c.d->req, c.in) == -1) {
		free(zbuf);
		remote_error(r, h->id, PERR_MALFORMED, c.d->name);
		return -1;
	}
	__atomic_add_fetch(&r->stats->calls, 1, __ATOMIC_RELAXED);
	if (h->type == R_OPEN) {
		free(zbuf);
		r->profiling = log_getlevel() >= LL_DEBUG;
		r->t_open = now_ns();
		remote_open(r, h, &c);
		return 0;
	}
	if (!r->opened) {
		free(zbuf);
		remote_error(r, h->id, PERR_STATE, "call before open");
		return -1;
	}
	fn = r->env->be->call[h->type - R_OPEN];
	pw_init(&c.blob);
	staged = 0;
	t0 = r->profiling ? now_ns() : 0;
	/* A link's input: in pieces under the link's id (field 0). */
	sid = h->type == R_LINK_ADD ? c.in[0].u : c.in[1].u;
	if ((h->type == R_MODULE_LOAD || h->type == R_LIBRARY_LOAD ||
	    h->type == R_MODULE_LOAD_EX || h->type == R_LINK_ADD) &&
	    c.in[2].len == 0 &&
	    (st = htab_get(&r->stages, sid)) != NULL) {
		/* The image came ahead in pieces. */
		c.in[2].p = st->buf;
		c.in[2].len = (uint32_t)st->len;
		staged = 1;
	} else if ((h->type == R_MODULE_LOAD || h->type == R_LIBRARY_LOAD ||
	    h->type == R_MODULE_LOAD_EX) && c.in[2].len == 0 &&
	    wcache_image(r->wc, c.in[1].u, &c.in[2]))
		staged = 2;	/* the weight cache had it */
	if (h->type == R_STAGE_PUT)
		rc = stage_put(r, &c);
	else if (h->type == R_LANES && r->ctl_started) {
		/* Lanes that come again after a drop, through our address. */
		char who[384];

		snprintf(who, sizeof who, "client %s (%s)", r->cl.addr,
		    r->cl.name);
		lanes_offer_resumable(&r->lanes, (uint32_t)c.in[0].u,
		    r->env->max_lanes, r->env->spin_ns, r->ch.sealed,
		    r->resume_ms, who, &c);
		rc = 0;
	} else if (h->type == R_LANES) {
		lanes_offer(&r->lanes, r->fd, (uint32_t)c.in[0].u,
		    r->env->max_lanes, r->env->spin_ns, &c);
		rc = 0;
	} else if (h->type == R_LANES_UP) {
		/* Its reply must reach the client before any lane is used. */
		c.out[0].u = lanes_accept(r->lanes, (uint32_t)c.in[0].u,
		    remote_chan(r));
		log_debug("client %s: %u lane(s)", r->cl.addr,
		    (unsigned)c.out[0].u);
		rc = 0;
	} else if ((h->type == R_MEM_HTOD_LANES ||
	    h->type == R_MEM_DTOH_LANES) && r->mig_from &&
	    lanes_count(r->lanes) == 0) {
		/*
		 * Sent before the client learnt that its session moved here:
		 * its stripes went to the old server's lanes.  Not executed;
		 * the client sends the bytes again (RPC_LANES_GONE).
		 */
		rc = RPC_LANES_GONE;
	} else if (h->type == R_MEM_HTOD_LANES ||
	    h->type == R_MEM_DTOH_LANES) {
		if ((h->type == R_MEM_HTOD_LANES ? remote_htod_lanes(r, &c,
		    &rc) : remote_dtoh_lanes(r, &c, &rc)) == -1) {
			free(zbuf);
			pw_free(&c.blob);
			remote_error(r, h->id, PERR_MALFORMED,
			    lanes_count(r->lanes) == 0 ? "no lanes" :
			    "a copy over the lanes: bad size, or a lane broke");
			return -1;
		}
	}
	else if (wcache_owns(h->type)) {
		/* Not through the backend's table: checked here. */
		if ((rc = check_call(&c)) == 0)
			rc = wcache_call(&r->wc, &r->scope, r->env->be, &c);
	} else	/* the backend's table checks first (check_dispatch) */
		rc = fn != NULL ? fn(&c) : 801;	/* CUDA_ERROR_NOT_SUPPORTED */
	if (r->profiling) {
		struct rprof *pf = &r->prof[h->type - R_OPEN];
		uint64_t dt = now_ns() - t0;

		pf->n++;
		pf->ns += dt;
		if (dt > pf->max)
			pf->max = dt;
	}
	/*
	 * Kept for migration: what the target loads again.  A session that
	 * came here by migration keeps them whatever this server's peer: it
	 * may well be sent back.
	 */
	if (rc == 0 && (r->env->keep_images || r->mig_from) &&
	    (h->type == R_MODULE_LOAD ||
	    h->type == R_LIBRARY_LOAD || (h->type == R_MODULE_LOAD_EX &&
	    c.out[0].u == 0))) {
		struct robj *o = htab_get(&r->cl.objs, c.in[1].u);

		if (o != NULL && o->img == NULL &&
		    (o->img = malloc(c.in[2].len ? c.in[2].len : 1)) != NULL) {
			memcpy(o->img, c.in[2].p, c.in[2].len);
			o->imglen = c.in[2].len;
		}
	}
	if (staged == 1)
		stage_free(r, sid);
	else if (staged == 2)
		wcache_image_done(r->wc, c.in[1].u);
	free(zbuf);
	if (h->flags & FL_ONEWAY) {
		/* No reply unless it failed; the client reports that later. */
		if (rc != 0) {
			/*
			 * Rare, and what a program then fails on comes later,
			 * at another call: named here, the first few (-v).
			 */
			if (r->oneway_failed++ < 16)
				log_debug("client %s: one-way %s failed: %d "
				    "(in: %llu %llu %llu)", r->cl.addr,
				    c.d->name, rc,
				    (unsigned long long)c.in[0].u,
				    (unsigned long long)c.in[1].u,
				    (unsigned long long)c.in[2].u);
			pw_init(&rep);
			pw_u32(&rep, (uint32_t)rc);
			remote_frame(r, h->type, FL_REPLY | FL_ONEWAY, h->id,
			    rep.p, rep.len);
			pw_free(&rep);
		}
		pw_free(&c.blob);
		free(c.scratch);
		if (log_getlevel() >= LL_TRACE)
			trace_call(r, &c, rc, 1);
		return 0;
	}
	/*
	 * What the device printed in this call (or in one-way calls before
	 * it) goes ahead of the reply: the client writes it out before the
	 * call returns, where a local run prints it.
	 */
	output_collect(&r->out);
	remote_host_collect(r);
	/*
	 * The reply is packed in place: a large one is copied once, or not
	 * at all where its last field is a large blob (the tail), which is
	 * sent from where it lies, at once (as remote_drain sends large
	 * replies).
	 */
	{
		size_t at = r->out.len, len, nrep = strlen(c.d->rep);
		struct frame_hdr rh = { 0, h->type, FL_REPLY, h->id };
		char sig[RPC_MAX_FIELDS + 1];

		if (rc == 0 && nrep > 0 && nrep <= RPC_MAX_FIELDS &&
		    c.d->rep[nrep - 1] == 'B' &&
		    c.out[nrep - 1].len >= REPLY_DIRECT) {
			tail = &c.out[nrep - 1];
			memcpy(sig, c.d->rep, nrep - 1);
			sig[nrep - 1] = '\0';
		}
		if (pw_room(&r->out, PROTO_HDR_LEN) != NULL) {
			pw_u32(&r->out, (uint32_t)rc);
			if (rc == 0 && rpc_pack(&r->out, tail ? sig : c.d->rep,
			    c.out) == -1)
				r->out.bad = 1;
			if (tail != NULL)
				pw_u32(&r->out, tail->len);
		}
		len = r->out.len - at - PROTO_HDR_LEN + (tail ? tail->len : 0);
		if (r->out.bad || len > r->env->max_frame) {
			/* Too big to say: out of memory, as the driver would. */
			r->out.bad = 0;
			r->out.len = at;
			tail = NULL;
			pw_init(&rep);
			pw_u32(&rep, 2);	/* CUDA_ERROR_OUT_OF_MEMORY */
			remote_frame(r, h->type, FL_REPLY, h->id, rep.p,
			    rep.len);
			pw_free(&rep);
		} else {
			rh.len = (uint32_t)len;
			proto_hdr_encode(r->out.p + at, &rh);
			/* On a record of its own: see REPLY_OWN. */
			if (tail != NULL || len >= REPLY_OWN) {
				remote_brk(r, at);
				if (tail == NULL)
					remote_brk(r, r->out.len);
			}
		}
	}
	sent = tail != NULL ? remote_flush_with(r, tail->p, tail->len) : 0;
	pw_free(&c.blob);
	free(c.scratch);
	if (log_getlevel() >= LL_TRACE)
		trace_call(r, &c, rc, 0);
	return sent;
}

/* Opens the whole records read; -1: one did not, the session ends. */
static int
remote_open_records(struct remote *r)
{
	if (chanrd_open(&r->ch, r->in, &r->rd) == -1) {
		log_warn("client %s (%s): %s, closing", r->cl.addr, r->cl.name,
		    r->ch.err);
		return -1;
	}
	if (!r->resumable)
		return 0;
	/* What the client acknowledged need not be kept. */
	if (keep_ack(&r->keep, r->ch.peer_ack) == -1) {
		log_warn("client %s (%s): acknowledges bytes never sent, "
		    "closing", r->cl.addr, r->cl.name);
		return -1;
	}
	return 0;
}

/* Serves every whole frame in the input; -1 to end the session. */
static int
remote_drain(struct remote *r)
{
	struct frame_hdr h;
	size_t off = 0;

	while (r->rd.plain - off >= PROTO_HDR_LEN) {
		proto_hdr_decode(r->in + off, &h);
		if (h.len > r->env->max_frame) {
			remote_error(r, h.id, PERR_TOOBIG, "frame over the limit");
			return -1;
		}
		if (r->rd.plain - off < PROTO_HDR_LEN + (size_t)h.len)
			break;
		if (remote_serve(r, &h, r->in + off + PROTO_HDR_LEN) == -1) {
			/*
			 * Served, but the link broke as its reply went: it is
			 * done (the reply is kept), and must never be served
			 * again after a resume.
			 */
			if (r->broken)
				chanrd_consume(r->in, &r->rd,
				    off + PROTO_HDR_LEN + h.len);
			return -1;
		}
		off += PROTO_HDR_LEN + h.len;
		/*
		 * A large reply goes now: the link carries it while the next
		 * request is served (device-to-host pieces asked for ahead).
		 */
		if (r->out.len >= (1u << 20) && remote_flush(r) == -1) {
			chanrd_consume(r->in, &r->rd, off);
			return -1;
		}
	}
	chanrd_consume(r->in, &r->rd, off);
	return 0;
}

/*
 * The serving threads polling longer than spin, all workers': a slot each
 * in a page they share, holding the worker's pid, at most a quarter of the
 * host's CPUs (one on smaller hosts); beyond, spin alone.  A slot names
 * its worker so that one killed while it polled (a signal, the OOM
 * killer) does not keep it: the server frees a reaped worker's slots
 * (remote_spin_reap).  A count alone lost a slot for good at each such
 * death, and with one slot on a small host the learned spin with it.
 */
#define SPIN_SLOTS	64
static pid_t	*spinners;	/* SPIN_SLOTS pids, 0 where free */
static unsigned	 spin_most = 1;

void
remote_spin_init(void)
{
	void *p;
	long nc;

	if (spinners != NULL)
		return;
	if ((p = mmap(NULL, SPIN_SLOTS * sizeof *spinners,
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
	    0)) == MAP_FAILED)
		return;
	spinners = p;
	nc = sysconf(_SC_NPROCESSORS_ONLN);
	spin_most = nc >= 8 ? (unsigned)(nc / 4) : 1;
	if (spin_most > SPIN_SLOTS)
		spin_most = SPIN_SLOTS;
}

void
remote_spin_reap(pid_t pid)
{
	unsigned i;
	pid_t was;

	if (spinners == NULL || pid <= 0)
		return;
	for (i = 0; i < SPIN_SLOTS; i++) {
		was = pid;
		(void)__atomic_compare_exchange_n(&spinners[i], &was, 0, 0,
		    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	}
}

/* A slot to poll longer than spin in: 1 + its index, or 0 if none is
 * free (then spin alone); spin_give gives it back. */
static unsigned
spin_take(void)
{
	unsigned i;
	pid_t me, free_;

	if (spinners == NULL)
		return 0;
	me = getpid();
	for (i = 0; i < spin_most; i++) {
		free_ = 0;
		if (__atomic_load_n(&spinners[i], __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&spinners[i], &free_, me, 0,
		    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			return i + 1;
	}
	return 0;
}

static void
spin_give(unsigned slot)
{
	if (slot != 0)
		__atomic_store_n(&spinners[slot - 1], 0, __ATOMIC_RELEASE);
}

/* Reads what is there (at least one byte); -1 on EOF or error. */
static int
remote_read(struct remote *r)
{
	size_t used = chanrd_used(&r->rd);
	size_t want = chanrd_ask(&r->ch, &r->rd, READ_MIN);
	uint8_t *nb;
	ssize_t n;
	uint64_t t0;
	int fresh;
	unsigned learned = 0;	/* the spin slot held (spin_take) */

	/* An order to migrate is taken only where every call is answered. */
	if (r->at_rest && remote_order(r))
		return -1;

	if (r->incap - used < want) {
		/* Not when pinned (it is large enough then), but be safe. */
		if (r->env->be->host_unpin != NULL && r->opened && r->in != NULL)
			r->env->be->host_unpin(&r->cl, r->in);
		if ((nb = realloc(r->in, used + want)) == NULL)
			return -1;
		r->in = nb;
		r->incap = used + want;
	}
	/*
	 * For a moment after the last input, poll rather than sleep: the
	 * calls that follow a synchronization come right after its reply,
	 * and waking this thread for them would keep the GPU waiting.
	 */
	n = -1;
	/* Waiting for a request, not the rest of one: the gap is timed, and
	 * the gaps before say how long to poll (gap.h). */
	fresh = used == 0;
	t0 = now_ns();
	if (r->env->spin_ns > 0) {
		uint64_t spin = r->env->spin_ns, s;
		unsigned k = 0;

		if (fresh && (s = gaps_spin(&r->gaps, spin,
		    r->env->spin_max_ns)) > spin &&
		    (learned = spin_take()) != 0)
			spin = s;
		for (;;) {
			n = recv(r->fd, r->in + used, want, MSG_DONTWAIT);
			if (n != -1 || (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR) || now_ns() - t0 >= spin)
				break;
			/* A host function reached: its notice goes now. */
			if (__atomic_load_n(&r->cl.hq->n, __ATOMIC_ACQUIRE) > 0) {
				spin_give(learned);
				return 0;
			}
			if ((++k & 63) == 0)
				sched_yield();
		}
		/* Counted only where the poll outlived spin: a request
		 * within spin cost the learned poll nothing. */
		if (learned && now_ns() - t0 >= r->env->spin_ns) {
			r->spun++;
			if (n > 0)
				r->caught++;
		}
		spin_give(learned);
	}
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR || r->env->spin_ns == 0)) {
		{
			/* Input, a host function reached (its notice goes at
			 * once: the client may be waiting for nothing else),
			 * or a connection that resumes this session (the
			 * client saw the drop before we did). */
			struct pollfd pf[3];
			int prc, nfd, mig = remote_mig_waits(r);
			int ms = r->env->idle_s > 0 ?
			    (int)(r->env->idle_s * 1000) : -1;

			pf[0].fd = r->fd;
			pf[0].events = POLLIN;
			pf[0].revents = 0;
			pf[1].fd = r->cl.hq->fd;
			pf[1].events = POLLIN;
			pf[1].revents = 0;
			pf[2].fd = r->wake;
			pf[2].events = POLLIN;
			pf[2].revents = 0;
			/*
			 * An order to migrate waits for a point at rest: not
			 * at rest now (a lane's copy, the weight cache busy),
			 * it is looked at again every few milliseconds, for
			 * what keeps it from rest ends without a word from
			 * the client, who may send none (an idle client's
			 * order waited for ever; migrate.bats saw it).
			 */
			/*
			 * An order that came since the look at the top of
			 * this function, at rest: taken now.  Left for the
			 * poll, which does not watch the channel while an
			 * order waits, it waited for input an idle client
			 * never sends (migrate.bats' moved session, in CI).
			 */
			if (mig && r->at_rest && remote_order(r))
				return -1;
			nfd = !r->ctl_started || mig ? 2 : 3;
			if (mig && !r->at_rest && (ms < 0 || ms > 10))
				ms = 10;
			do
				prc = poll(pf, (nfds_t)nfd, ms);
			while (prc == -1 && errno == EINTR);
			if (prc == 0 && mig && !r->at_rest)
				return 0;	/* at rest now? */
			if (prc == 0) {
				errno = EAGAIN;
				goto idle;
			}
			if (prc > 0 && pf[1].revents != 0) {
				efd_drain(r->cl.hq->fd);
				if (pf[0].revents == 0)
					return 0;
			}
			/* Below, pf[1] is the session's channel's. */
			pf[1] = pf[2];
			if (prc > 0 && pf[1].revents != 0 && r->at_rest &&
			    remote_order(r))
				return -1;
			/* The order came while not at rest: not a blocking
			 * read for it, but a look whether it rests now. */
			if (prc > 0 && pf[1].revents != 0 &&
			    pf[0].revents == 0) {
				if (remote_mig_waits(r))
					return 0;
				/* Only the channel closed (the server drains):
				 * this connection goes on, nothing can resume
				 * it any more. */
				if (!remote_resume_waits(r)) {
					efd_drain(r->wake);
					return 0;
				}
				remote_broke(r, "the client reconnected");
				return -1;
			}
		}
		do
			n = recv(r->fd, r->in + used, want, 0);
		while (n == -1 && errno == EINTR);
	}
idle:
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
	    r->env->idle_s > 0) {
		log_info("client %s (%s): idle for %g s, closing", r->cl.addr,
		    r->cl.name, r->env->idle_s);
		return -1;
	}
	if (n <= 0) {
		remote_broke(r, n == 0 ? "closed without goodbye" :
		    strerror(errno));
		return -1;
	}
	if (fresh)
		gaps_add(&r->gaps, now_ns() - t0);
	r->rd.raw += (size_t)n;
	__atomic_add_fetch(&r->stats->bytes_in, (uint64_t)n, __ATOMIC_RELAXED);
	return 0;
}

/*
 * A resumed connection's first record says, in its header's ack, where
 * the client's stream stopped: everything kept from there goes again, in
 * records under the new keys.
 */
static int
remote_resend(struct remote *r, uint64_t from)
{
	struct rwire w;
	const uint8_t *p;
	uint64_t off;
	size_t n, k;

	if (from < r->keep.base || from > r->keep.end) {
		log_warn("client %s (%s): cannot resume: it has the stream up "
		    "to byte %llu, we keep %llu to %llu", r->cl.addr,
		    r->cl.name, (unsigned long long)from,
		    (unsigned long long)r->keep.base,
		    (unsigned long long)r->keep.end);
		return -1;
	}
	r->ch.tx_bytes = from;
	w.n = w.k = 0;
	for (off = from; (n = keep_peek(&r->keep, off, &p)) > 0; off += n) {
		for (k = 0; k < n; k += CHAN_BODY_MAX)
			if (remote_record(r, &w, 0, 0, p + k, n - k <
			    CHAN_BODY_MAX ? n - k : CHAN_BODY_MAX) == -1)
				return -1;
	}
	if (remote_writev(r, &w) == -1)
		return -1;
	r->resent += r->keep.end - from;
	log_info("client %s (%s): resumed, %llu bytes sent again",
	    r->cl.addr, r->cl.name, (unsigned long long)(r->keep.end - from));
	/* What waited for the link goes now. */
	return remote_flush(r);
}

int
remote_resume_send(int ctl, int fd, const struct remote_resume *rr,
    const void *raw)
{
	if (fd_sendmsg(ctl, rr, sizeof *rr, fd) == -1)
		return -1;
	return rr->rawlen == 0 || net_send_all(ctl, raw, rr->rawlen) == 0 ?
	    0 : -1;
}

/* Wakes the serving thread (or, with r->stop, the channel's). */
static void
efd_poke(int efd)
{
	uint64_t one = 1;

	(void)!write(efd, &one, sizeof one);
}

static void
efd_drain(int efd)
{
	uint64_t v;

	(void)!read(efd, &v, sizeof v);
}

/* Whether the channel is closed with nothing waiting: no resume now. */
static int
remote_ctl_gone(struct remote *r)
{
	int gone;

	pthread_mutex_lock(&r->pmu);
	gone = r->ctl_gone && r->pend_fd == -1;
	pthread_mutex_unlock(&r->pmu);
	return gone || !r->ctl_started;
}

/*
 * The session's channel: connections that resume the session wait for
 * the serving thread (the latest one only), bulk lanes go to the lanes at
 * once.  Ends when the server closes the channel (it is going away) or
 * the session ends (r->stop).
 */
static void *
ctl_main(void *arg)
{
	struct remote *r = arg;
	struct remote_resume rr;
	struct pollfd pf[2];
	uint8_t *raw;
	int fd;

	for (;;) {
		pf[0].fd = r->ctl;
		pf[0].events = POLLIN;
		pf[1].fd = r->stop;
		pf[1].events = POLLIN;
		if (poll(pf, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents != 0)
			return NULL;
		fd = -1;
		raw = NULL;
		if (fd_recvmsg(r->ctl, &rr, sizeof rr, &fd) == -1)
			break;
		if (rr.kind == REMOTE_MIGRATE) {
			/* For the serving thread, at its next point at rest. */
			if (fd != -1)
				close(fd);
			rr.host[sizeof rr.host - 1] = '\0';
			pthread_mutex_lock(&r->pmu);
			r->pend_mig = 1;
			snprintf(r->pend_host, sizeof r->pend_host, "%s",
			    rr.host);
			r->pend_port = (int)rr.port;
			pthread_mutex_unlock(&r->pmu);
			efd_poke(r->wake);
			continue;
		}
		if (fd == -1)
			break;
		if (rr.kind == REMOTE_LANE) {
			lanes_take(__atomic_load_n(&r->lanes, __ATOMIC_ACQUIRE),
			    fd, rr.lane);
			continue;
		}
		if (rr.kind != REMOTE_RESUME || rr.rawlen > (64u << 20) ||
		    (raw = malloc(rr.rawlen + 1)) == NULL ||
		    (rr.rawlen > 0 && net_recv_all(r->ctl, raw, rr.rawlen,
		    NULL) != 0)) {
			free(raw);
			close(fd);
			break;
		}
		pthread_mutex_lock(&r->pmu);
		if (r->pend_fd != -1)
			close(r->pend_fd);	/* the client gave up on it */
		free(r->pend_raw);
		r->pend_fd = fd;
		r->pend_rr = rr;
		r->pend_raw = raw;
		pthread_mutex_unlock(&r->pmu);
		efd_poke(r->wake);
	}
	/* The server closed the channel: it is going away. */
	pthread_mutex_lock(&r->pmu);
	r->ctl_gone = 1;
	pthread_mutex_unlock(&r->pmu);
	efd_poke(r->wake);
	return NULL;
}

/* Starts the channel's thread, where the session is resumable. */
static void
remote_ctl_start(struct remote *r)
{
	if (r->ctl == -1)
		return;
	if ((r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1 ||
	    (r->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1 ||
	    pthread_create(&r->ctl_t, NULL, ctl_main, r) != 0) {
		log_warn("client %s (%s): cannot wait for resumes: %s",
		    r->cl.addr, r->cl.name, strerror(errno));
		return;
	}
	r->ctl_started = 1;
}

/* Stops the channel's thread: nothing comes from it after this. */
static void
remote_ctl_stop(struct remote *r)
{
	if (r->ctl_started) {
		efd_poke(r->stop);
		pthread_join(r->ctl_t, NULL);
		r->ctl_started = 0;
	}
	if (r->pend_fd != -1)
		close(r->pend_fd);
	r->pend_fd = -1;
	free(r->pend_raw);
	r->pend_raw = NULL;
	if (r->wake != -1)
		close(r->wake);
	if (r->stop != -1)
		close(r->stop);
	r->wake = r->stop = -1;
}

/* Takes the connection that resumes us: 0, or -1 with nothing changed. */
static int
remote_take(struct remote *r)
{
	struct remote_resume rr;
	struct chan nc;
	uint8_t *raw;
	int fd;
	size_t used;

	efd_drain(r->wake);
	pthread_mutex_lock(&r->pmu);
	fd = r->pend_fd;
	rr = r->pend_rr;
	raw = r->pend_raw;
	r->pend_fd = -1;
	r->pend_raw = NULL;
	if (r->pend_mig) {
		r->pend_mig = 0;
		log_info("client %s (%s): not migrated: its connection is "
		    "down", r->cl.addr, r->cl.name);
	}
	pthread_mutex_unlock(&r->pmu);
	if (fd == -1)
		return -1;
	/* The connection's records, from its handshake's nonces. */
	if (chan_init(&nc, rr.authed ? &r->key : NULL, 1, rr.cnonce,
	    rr.snonce) == -1) {
		free(raw);
		close(fd);
		return -1;
	}
	chan_resume(&nc, &r->ch);
	/* A record cut by the drop comes again; the plaintext stays. */
	r->rd.pend = r->rd.raw = 0;
	r->rd.inrec = 0;
	used = r->rd.plain;
	if (r->incap < used + rr.rawlen + READ_MIN) {
		uint8_t *nb = realloc(r->in, used + rr.rawlen + READ_MIN);

		if (nb == NULL) {
			chan_fini(&nc);
			free(raw);
			close(fd);
			return -1;
		}
		r->in = nb;
		r->incap = used + rr.rawlen + READ_MIN;
	}
	if (rr.rawlen > 0)
		memcpy(r->in + used, raw, rr.rawlen);
	free(raw);
	r->rd.raw = rr.rawlen;
	chan_fini(&r->ch);
	r->ch = nc;
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
	r->fd = fd;
	r->broken = 0;
	return 0;
}

/*
 * The header of the client's first record on a resumed connection, read
 * (it stays, raw, to be opened as any): its ack.  -1: the link broke again.
 */
static int
remote_first_ack(struct remote *r, uint64_t *ack)
{
	const uint8_t *h;
	ssize_t n;
	size_t at = r->rd.plain;

	while (r->rd.raw < CHAN_HDR) {
		do
			n = recv(r->fd, r->in + at + r->rd.raw,
			    CHAN_HDR - r->rd.raw, 0);
		while (n == -1 && errno == EINTR);
		if (n <= 0) {
			remote_broke(r, n == 0 ? "closed while resuming" :
			    strerror(errno));
			return -1;
		}
		r->rd.raw += (size_t)n;
	}
	h = r->in + at;
	*ack = (uint64_t)h[8] | (uint64_t)h[9] << 8 | (uint64_t)h[10] << 16 |
	    (uint64_t)h[11] << 24 | (uint64_t)h[12] << 32 |
	    (uint64_t)h[13] << 40 | (uint64_t)h[14] << 48 |
	    (uint64_t)h[15] << 56;
	return 0;
}

/*
 * The connection broke: wait for the client to resume, up to the window.
 * 0 with the new connection in place and our first record sent; -1 when
 * the window passed or the server went away.
 */
static int
remote_await(struct remote *r)
{
	struct pollfd pf;
	struct rwire w;
	uint64_t t0 = now_ns(), left, ack;
	int rc;

	r->drops++;
	log_info("client %s (%s): connection lost (%s); its session waits "
	    "%.1f s for it to resume", r->cl.addr, r->cl.name, r->why,
	    r->resume_ms / 1000.0);
	for (;;) {
		left = (uint64_t)r->resume_ms * 1000000u;
		if (now_ns() - t0 >= left || remote_ctl_gone(r)) {
			log_info("client %s (%s): not resumed within %.1f s, "
			    "closing", r->cl.addr, r->cl.name,
			    r->resume_ms / 1000.0);
			return -1;
		}
		left -= now_ns() - t0;
		pf.fd = r->wake;
		pf.events = POLLIN;
		rc = poll(&pf, 1, (int)(left / 1000000u) + 1);
		if (rc == -1 && errno != EINTR)
			return -1;
		if (rc <= 0)
			continue;
		if (remote_take(r) == 0)
			break;
	}
	r->resends++;
	/*
	 * Our first record says what we have; the client's first says the
	 * same, and from there we send again what we keep.
	 */
	w.n = w.k = 0;
	if (remote_record(r, &w, 0, 0, NULL, 0) == -1 ||
	    remote_writev(r, &w) == -1 || remote_first_ack(r, &ack) == -1 ||
	    remote_resend(r, ack) == -1)
		return r->broken && !remote_ctl_gone(r) ? remote_await(r) :
		    -1;
	return 0;
}

/*
 * ---- migration (gleam-protocol(5), Migration) ---------------------------
 * The source, at a point where every call is answered and its work done:
 * the state (the backend's mig_save) as MIG_STATE, each range of the
 * client's memory as MIG_MEM, then MIG_END with the client's stream,
 * counted as if the REDIRECT that follows had been sent; once the target
 * answers, the REDIRECT goes to the client and this worker ends, freeing
 * all the client held here.  Any failure before that answer leaves the
 * client here, served as before.
 */
#define MIG_PIECE	(8u << 20)	/* bytes of a MIG_MEM or MIG_STATE */
#define MIG_TIMEOUT_MS	30000		/* the target's connect and replies */

/*
 * Whether a MIGRATE order waits.  With the channel's thread (a resumable
 * session) it left the order in pend_*; without, the order waits on the
 * channel itself.
 */
static int
remote_mig_waits(struct remote *r)
{
	uint32_t kind;
	int w;

	if (r->ctl_started) {
		pthread_mutex_lock(&r->pmu);
		w = r->pend_mig;
		pthread_mutex_unlock(&r->pmu);
		return w;
	}
	return r->ctl != -1 && recv(r->ctl, &kind, sizeof kind,
	    MSG_PEEK | MSG_DONTWAIT) == (ssize_t)sizeof kind &&
	    kind == REMOTE_MIGRATE;
}

/* A connection that resumes the session waits for the serving thread. */
static int
remote_resume_waits(struct remote *r)
{
	int w;

	pthread_mutex_lock(&r->pmu);
	w = r->pend_fd != -1;
	pthread_mutex_unlock(&r->pmu);
	return w;
}

/* A MIGRATE order that waits, taken: 1 (r->mig_req set). */
static int
remote_order(struct remote *r)
{
	struct remote_resume rr;
	int fd;

	/*
	 * Not a session that is still migrating in: the order waits until it
	 * has come whole and its client follows (taken then, or dropped as
	 * one whose connection is down).  Sent on at once, the source's
	 * state would go to a third server while the source, cut off, keeps
	 * the session.
	 */
	if (r->mig_in != 0 || r->mig_switch || !remote_mig_waits(r))
		return 0;
	if (r->ctl_started) {
		pthread_mutex_lock(&r->pmu);
		snprintf(r->mig_host, sizeof r->mig_host, "%s", r->pend_host);
		r->mig_port = r->pend_port;
		r->pend_mig = 0;
		/* The wake was the order's, unless a resume waits too. */
		efd_drain(r->wake);
		if (r->pend_fd != -1 || r->ctl_gone)
			efd_poke(r->wake);
		pthread_mutex_unlock(&r->pmu);
		r->mig_req = 1;
		return 1;
	}
	if (fd_recvmsg(r->ctl, &rr, sizeof rr, &fd) == -1)
		return 0;
	if (fd != -1)
		close(fd);
	rr.host[sizeof rr.host - 1] = '\0';
	snprintf(r->mig_host, sizeof r->mig_host, "%s", rr.host);
	r->mig_port = (int)rr.port;
	r->mig_req = 1;
	return 1;
}

/* Sends the frame type's payload [p, p + n) after a u64 (if addr). */
static int
mig_send(struct conn *c, uint16_t type, const uint64_t *addr, const void *p,
    size_t n)
{
	struct frame_hdr h = { (uint32_t)(n + (addr ? 8 : 0)), type, 0, 0 };
	uint8_t hb[PROTO_HDR_LEN + 8];
	struct iovec iov[2];

	h.id = c->next_id++;
	proto_hdr_encode(hb, &h);
	if (addr != NULL)
		for (int i = 0; i < 8; i++)
			hb[PROTO_HDR_LEN + i] = (uint8_t)(*addr >> (8 * i));
	iov[0].iov_base = hb;
	iov[0].iov_len = PROTO_HDR_LEN + (addr ? 8 : 0);
	iov[1].iov_base = (void *)(uintptr_t)p;
	iov[1].iov_len = n;
	return conn_writev(c, iov, n > 0 ? 2 : 1);
}

static int
remote_migrate(struct remote *r)
{
	const struct backend *be = r->env->be;
	struct msg_redirect rd;
	struct msg_mig_end me;
	struct frame_hdr fh;
	struct conn_resume cr;
	struct conn c;
	struct pw st, red, rf, keep, end;
	const uint8_t *p, *reply;
	uint64_t t0 = now_ns(), t1 = 0, t2 = 0, off, mem = 0, a;
	size_t i, n, rlen;
	uint8_t *buf = NULL;
	char why[1000];
	const char *busy;
	int rc = -1, open = 0;

	pw_init(&st);
	pw_init(&red);
	pw_init(&rf);
	pw_init(&keep);
	pw_init(&end);
	why[0] = '\0';
	if (!r->resumable)
		snprintf(why, sizeof why, "its session is not resumable");
	else if (!r->opened)
		snprintf(why, sizeof why, "it has not opened");
	else if (r->stages.n > 0)
		snprintf(why, sizeof why, "a module is arriving in pieces");
	else if ((busy = wcache_client_busy(r->wc)) != NULL)
		snprintf(why, sizeof why, "%s", busy);
	else if (be->mig_save == NULL)
		snprintf(why, sizeof why, "the %s backend cannot migrate",
		    be->name);
	else if (r->keep.end != r->ch.tx_bytes)
		snprintf(why, sizeof why, "its stream is not all kept");
	if (why[0] != '\0')
		goto out;
	if (be->mig_save(&r->cl, &st, why, sizeof why) == -1)
		goto out;
	memset(&cr, 0, sizeof cr);
	cr.want = 1;
	/* As the client's identity: the target's session is its. */
	if (conn_open_resume(&c, r->mig_host, r->mig_port,
	    r->key.set ? &r->key : NULL, r->cl.name, MIG_TIMEOUT_MS,
	    &cr) == -1) {
		snprintf(why, sizeof why, "%s", c.err);
		goto out;
	}
	open = 1;
	if (!(c.features & FEAT_RESUME)) {
		snprintf(why, sizeof why, "%s:%d holds no resumable session "
		    "(its resume: 0?)", r->mig_host, r->mig_port);
		goto out;
	}
	/* The state, in pieces a frame each. */
	for (off = 0; off < st.len; off += n) {
		n = st.len - off < MIG_PIECE ? st.len - off : MIG_PIECE;
		if (mig_send(&c, MSG_MIG_STATE, NULL, st.p + off, n) == -1)
			goto net;
	}
	/* Every range of the client's memory. */
	t1 = now_ns();
	if ((buf = malloc(MIG_PIECE)) == NULL) {
		snprintf(why, sizeof why, "out of memory");
		goto out;
	}
	for (i = 0; i < r->cl.nranges; i++) {
		const struct rrange *rg = &r->cl.ranges[i];

		for (off = 0; off < rg->size; off += n) {
			n = rg->size - off < MIG_PIECE ? rg->size - off :
			    MIG_PIECE;
			a = rg->base + off;
			if ((p = be->mig_read(&r->cl, a, buf, n)) == NULL) {
				snprintf(why, sizeof why, "cannot read its "
				    "memory at 0x%llx", (unsigned long long)a);
				goto out;
			}
			if (mig_send(&c, MSG_MIG_MEM, &a, p, n) == -1)
				goto net;
			mem += n;
		}
	}
	t2 = now_ns();
	/* The REDIRECT the client will get, counted as sent already. */
	memset(&rd, 0, sizeof rd);
	snprintf(rd.host, sizeof rd.host, "%s", r->mig_host);
	rd.port = (uint16_t)r->mig_port;
	rd.session = c.session;
	memcpy(rd.token, c.token, sizeof rd.token);
	msg_redirect_enc(&red, &rd);
	fh = (struct frame_hdr){ (uint32_t)red.len, MSG_REDIRECT, 0, 0 };
	pw_room(&rf, PROTO_HDR_LEN);
	if (!rf.bad)
		proto_hdr_encode(rf.p, &fh);
	pw_bytes(&rf, red.p, red.len);
	for (off = r->keep.base; (n = keep_peek(&r->keep, off, &p)) > 0 &&
	    n != (size_t)-1; off += n)
		pw_bytes(&keep, p, n);
	pw_bytes(&keep, rf.p, rf.len);
	memset(&me, 0, sizeof me);
	me.tx_bytes = r->ch.tx_bytes + rf.len;
	me.rx_bytes = r->ch.rx_bytes;
	me.peer_ack = r->ch.peer_ack < r->keep.base ? r->ch.peer_ack :
	    r->keep.base;
	me.acked = r->ch.rx_bytes;
	me.keep_base = r->keep.base;
	me.keep = keep.p;
	me.pending = r->in;
	me.npending = (uint32_t)r->rd.plain;
	msg_mig_end_enc(&end, &me);
	if (st.bad || red.bad || rf.bad || keep.bad || end.bad) {
		snprintf(why, sizeof why, "out of memory");
		goto out;
	}
	if (end.len > c.max_frame) {
		snprintf(why, sizeof why, "%zu bytes not yet acknowledged by "
		    "the client: over a frame", keep.len);
		goto out;
	}
	if (conn_call(&c, MSG_MIG_END, end.p, end.len, MSG_MIG_END, &reply,
	    &rlen) == -1) {
		snprintf(why, sizeof why, "%s:%d: %s", r->mig_host,
		    r->mig_port, c.err);
		goto out;
	}
	/* The target has it: no BYE, which would end its session. */
	close(c.fd);
	c.fd = -1;
	conn_close(&c);
	open = 0;
	remote_frame(r, MSG_REDIRECT, 0, 0, red.p, red.len);
	if (remote_flush(r) == -1)
		log_warn("client %s (%s): its redirect was not sent (%s): "
		    "it cannot follow", r->cl.addr, r->cl.name, r->why);
	r->moved = 1;
	rc = 0;
	/* The server keeps where it went, for a client that lost this. */
	if (r->ctl != -1) {
		struct remote_resume mv;

		memset(&mv, 0, sizeof mv);
		mv.kind = REMOTE_MOVED;
		snprintf(mv.host, sizeof mv.host, "%s", rd.host);
		mv.port = rd.port;
		mv.session = rd.session;
		memcpy(mv.token, rd.token, sizeof mv.token);
		if (fd_sendmsg(r->ctl, &mv, sizeof mv, -1) == -1)
			log_warn("client %s (%s): the server will not know "
			    "where it went: %s", r->cl.addr, r->cl.name,
			    strerror(errno));
		sodium_memzero(&mv, sizeof mv);
	}
	log_info("client %s (%s): migrated to %s:%d as session %llu: %llu "
	    "bytes of memory, %zu of state, paused %.3f s (state %.3f, "
	    "memory %.3f, end %.3f)", r->cl.addr, r->cl.name, r->mig_host,
	    r->mig_port, (unsigned long long)rd.session,
	    (unsigned long long)mem, st.len, (double)(now_ns() - t0) / 1e9,
	    (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9,
	    (double)(now_ns() - t2) / 1e9);
	goto done;
net:
	/*
	 * The target says why it refuses before it closes, while this side
	 * is still sending: its ERROR is read, if it came, rather than the
	 * broken pipe the sending met.
	 */
	if (c.fd != -1) {
		char sent[sizeof c.err];
		struct frame_hdr eh;
		const uint8_t *ep;

		snprintf(sent, sizeof sent, "%s", c.err);
		c.timeout_ms = 2000;
		if (conn_recv(&c, &eh, &ep) == -1 || eh.type != MSG_ERROR ||
		    conn_error_frame(&c, ep, eh.len) != -1)
			snprintf(c.err, sizeof c.err, "%s", sent);
	}
	snprintf(why, sizeof why, "%s:%d: %s", r->mig_host, r->mig_port,
	    c.err);
out:
	log_warn("client %s (%s): not migrated to %s:%d: %s; it stays here",
	    r->cl.addr, r->cl.name, r->mig_host, r->mig_port, why);
done:
	if (open)
		conn_close(&c);
	free(buf);
	pw_free(&st);
	pw_free(&red);
	pw_free(&rf);
	pw_free(&keep);
	pw_free(&end);
	return rc;
}

/* The target: the state as it came, loaded into a fresh client. */
static int
remote_mig_load(struct remote *r, uint64_t id)
{
	const struct backend *be = r->env->be;
	struct pr pr;
	char why[300];
	int rc;

	if (r->mig_in == 2)
		return 0;
	if (be->mig_load == NULL) {
		remote_error(r, id, PERR_STATE, "this server's backend cannot "
		    "take a migrated session");
		return -1;
	}
	if ((rc = be->client_new(&r->cl)) != 0) {
		snprintf(why, sizeof why, "cannot start a client: error %d",
		    rc);
		remote_error(r, id, PERR_INTERNAL, why);
		return -1;
	}
	r->opened = 1;
	r->mig_in = 2;
	pr_init(&pr, r->mig_state.p, r->mig_state.len);
	rc = be->mig_load(&r->cl, &pr, why, sizeof why);
	pw_free(&r->mig_state);
	pw_init(&r->mig_state);
	if (rc == -1) {
		remote_error(r, id, PERR_MALFORMED, why);
		return -1;
	}
	return 0;
}

/* MIG_STATE, MIG_MEM or MIG_END on the target; -1 ends the session. */
static int
remote_mig_in(struct remote *r, const struct frame_hdr *h, const uint8_t *p)
{
	struct msg_mig_end e;
	struct pw rep;
	uint64_t a, klen;
	size_t n;

	if (h->type == MSG_MIG_STATE) {
		if (r->opened || h->len == 0 ||
		    r->mig_state.len + h->len > STAGE_MAX) {
			remote_error(r, h->id, PERR_STATE, r->opened ?
			    "MIG_STATE after the state" : "bad MIG_STATE");
			return -1;
		}
		if (r->mig_in == 0)
			r->mig_t0 = now_ns();
		r->mig_in = 1;
		pw_bytes(&r->mig_state, p, h->len);
		if (r->mig_state.bad) {
			remote_error(r, h->id, PERR_INTERNAL, "out of memory");
			return -1;
		}
		return 0;
	}
	if (r->mig_in == 0) {
		remote_error(r, h->id, PERR_STATE, "no MIG_STATE first");
		return -1;
	}
	if (remote_mig_load(r, h->id) == -1)
		return -1;
	if (h->type == MSG_MIG_MEM) {
		if (h->len < 8) {
			remote_error(r, h->id, PERR_MALFORMED, "bad MIG_MEM");
			return -1;
		}
		a = 0;
		for (int i = 7; i >= 0; i--)
			a = a << 8 | p[i];
		n = h->len - 8;
		if (rmem_check(&r->cl, a, n) == -1 ||
		    r->env->be->mig_write(&r->cl, a, p + 8, n) == -1) {
			remote_error(r, h->id, PERR_MALFORMED, "MIG_MEM "
			    "outside the session's memory");
			return -1;
		}
		r->mig_mem += n;
		return 0;
	}
	/* MIG_END */
	if (msg_mig_end_dec(p, h->len, &e) == -1) {
		remote_error(r, h->id, PERR_MALFORMED, "bad MIG_END");
		return -1;
	}
	klen = e.tx_bytes - e.keep_base;
	if (!r->resumable || klen > r->keep.cap) {
		remote_error(r, h->id, PERR_STATE, !r->resumable ?
		    "sessions here do not resume (resume: 0)" :
		    "more unacknowledged output than resume_buffer holds");
		return -1;
	}
	if ((r->mig_buf = malloc(klen + e.npending + 1)) == NULL) {
		remote_error(r, h->id, PERR_INTERNAL, "out of memory");
		return -1;
	}
	memcpy(r->mig_buf, e.keep, klen);
	memcpy(r->mig_buf + klen, e.pending, e.npending);
	e.keep = r->mig_buf;
	e.pending = r->mig_buf + klen;
	r->mig_end = e;
	pw_init(&rep);
	pw_u32(&rep, 0);
	remote_frame(r, MSG_MIG_END, FL_REPLY, h->id, rep.p, rep.len);
	pw_free(&rep);
	r->mig_switch = 1;
	remote_broke(r, "migrated here");
	return -1;
}

/*
 * The target, once its answer to MIG_END is out: the connection from the
 * source is done with, and the session goes on with the client's stream,
 * waiting for the client to resume it.  -1 if there is no memory for it.
 */
static int
remote_mig_switch(struct remote *r)
{
	const struct msg_mig_end *e = &r->mig_end;
	uint64_t klen = e->tx_bytes - e->keep_base;
	uint8_t *nb;

	r->mig_switch = 0;
	r->mig_from = 1;
	r->broken = 0;
	(void)remote_flush(r);
	shutdown(r->fd, SHUT_RDWR);
	if (r->incap < e->npending + READ_MIN) {
		if ((nb = realloc(r->in, e->npending + READ_MIN)) == NULL)
			return -1;
		r->in = nb;
		r->incap = e->npending + READ_MIN;
	}
	memcpy(r->in, e->pending, e->npending);
	memset(&r->rd, 0, sizeof r->rd);
	r->rd.plain = e->npending;
	r->ch.tx_bytes = e->tx_bytes;
	r->ch.rx_bytes = e->rx_bytes;
	r->ch.peer_ack = e->peer_ack;
	r->ch.acked = e->acked;
	r->keep.base = r->keep.end = e->keep_base;
	(void)keep_add(&r->keep, e->keep, (size_t)klen);
	free(r->mig_buf);
	r->mig_buf = NULL;
	r->mig_in = 0;
	log_info("client %s (%s): migrated in, %llu bytes of memory in %.3f s; "
	    "waiting for it to follow", r->cl.addr, r->cl.name,
	    (unsigned long long)r->mig_mem,
	    (double)(now_ns() - r->mig_t0) / 1e9);
	remote_broke(r, "migrated here");
	return 0;
}

/*
 * A point where the session may move: no copy on the lanes, nothing of
 * the weight cache's half done, and what the client has not acknowledged
 * small enough to go in MIG_END (after a large reply, the client's ack
 * comes soon: it acknowledges every CHAN_ACK_EVERY bytes).  An order
 * waits for such a point.
 */
static int
remote_rests(struct remote *r)
{
	return !lanes_pending(r->lanes) && wcache_client_busy(r->wc) == NULL &&
	    r->keep.end - r->keep.base <= r->env->max_frame / 2;
}

static void *
remote_main(void *arg)
{
	struct remote *r = arg;

	remote_ctl_start(r);
	/* Records are opened as they come, the handoff's first. */
	for (;;) {
		r->at_rest = 0;
		if (remote_open_records(r) == -1 || remote_drain(r) == -1 ||
		    (remote_pin(r), remote_host_collect(r),
		    remote_flush(r)) == -1 ||
		    (r->at_rest = remote_rests(r), remote_read(r)) == -1) {
			r->at_rest = 0;
			/* Every call answered: it may go elsewhere. */
			if (r->mig_req) {
				r->mig_req = 0;
				if (remote_migrate(r) == 0)
					break;
				continue;
			}
			if (r->mig_switch && remote_mig_switch(r) == -1)
				break;
			/* A link that broke may come back. */
			if (r->broken && r->resumable && remote_await(r) == 0)
				continue;
			break;
		}
	}
	if (!r->broken && !r->moved)
		remote_flush(r);
	/* No lane comes after this. */
	remote_ctl_stop(r);
	{
		uint64_t ld, lr;

		lanes_counts(r->lanes, &ld, &lr);
		if (ld > 0)
			log_info("client %s (%s): bulk lanes dropped %llu "
			    "times, %llu bytes sent or received again",
			    r->cl.addr, r->cl.name, (unsigned long long)ld,
			    (unsigned long long)lr);
	}
	if (r->spun > 0)
		log_info("client %s (%s): polled past spin %llu times, %llu "
		    "requests came in that time", r->cl.addr, r->cl.name,
		    (unsigned long long)r->spun, (unsigned long long)r->caught);
	/* The lanes' buffer is pinned in the client's context: first. */
	if (r->lanes != NULL && r->env->be->host_unpin != NULL && r->opened) {
		size_t n;

		r->env->be->host_unpin(&r->cl, lanes_prepare(r->lanes, &n));
	}
	lanes_free(r->lanes);
	if (r->opened)
		r->env->be->client_free(&r->cl);
	wcache_client_free(r->wc);
	remote_prof_log(r);
	log_debug("client %s (%s): closed", r->cl.addr, r->cl.name);
	shutdown(r->fd, SHUT_RDWR);
	close(r->fd);
	{
		size_t i = 0;
		uint64_t k;
		void *v;

		while (htab_next(&r->cl.objs, &i, &k, &v))
			robj_free(v);
	}
	htab_free(&r->cl.objs);
	{
		size_t i = 0;
		uint64_t k;
		void *v;

		while (htab_next(&r->stages, &i, &k, &v)) {
			free(((struct stage *)v)->buf);
			free(v);
		}
		htab_free(&r->stages);
	}
	free(r->cl.ranges);
	hostq_free(r->cl.hq);
	r->cl.hq = NULL;
	free(r->in);
	free(r->seal);
	pw_free(&r->out);
	pw_free(&r->mig_state);
	free(r->mig_buf);
	chan_fini(&r->ch);
	keep_free(&r->keep);
	if (r->ctl != -1)
		close(r->ctl);
	r->env->done(r->env->arg, r->token);
	free(r);
	return NULL;
}

static struct remote *
remote_new(int fd, const char *addr, const char *name,
    struct remote_handoff *ho, const struct remote_env *env,
    struct remote_stats *stats, void *token)
{
	struct remote *r;
	size_t len = ho->plainlen + ho->rawlen;

	if ((r = calloc(1, sizeof *r)) == NULL)
		return NULL;
	r->fd = fd;
	if (env->idle_s > 0) {
		/* A read that waits this long ends the session. */
		struct timeval tv;

		tv.tv_sec = (time_t)env->idle_s;
		tv.tv_usec = (suseconds_t)((env->idle_s - (double)tv.tv_sec) *
		    1e6);
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	}
	r->pin = 1;
	r->env = env;
	r->stats = stats;
	r->token = token;
	htab_init(&r->cl.objs);
	htab_init(&r->stages);
	if ((r->cl.hq = hostq_new()) == NULL) {
		free(r);
		return NULL;
	}
	snprintf(r->cl.addr, sizeof r->cl.addr, "%s", addr);
	snprintf(r->cl.name, sizeof r->cl.name, "%s", name);
	pw_init(&r->out);
	if (len > 0) {
		if ((r->in = malloc(len)) == NULL) {
			hostq_free(r->cl.hq);
			free(r);
			return NULL;
		}
		if (ho->plainlen > 0)
			memcpy(r->in, ho->plain, ho->plainlen);
		if (ho->rawlen > 0)
			memcpy(r->in + ho->plainlen, ho->raw, ho->rawlen);
		r->incap = len;
		r->rd.plain = ho->plainlen;
		r->rd.raw = ho->rawlen;
	}
	/* The records' state is the thread's from here on. */
	r->ch = ho->ch;
	memset(&ho->ch, 0, sizeof ho->ch);
	r->key = ho->key;
	r->scope = ho->scope;
	r->ctl = -1;
	r->wake = r->stop = -1;
	r->pend_fd = -1;
	pthread_mutex_init(&r->pmu, NULL);
	if (ho->resumable && ho->ctl != -1) {
		size_t kb = env->keep_bytes;

		/* At least two of the largest flushes fit. */
		if (kb < 2 * ((size_t)env->max_frame + (2u << 20)))
			kb = 2 * ((size_t)env->max_frame + (2u << 20));
		if (keep_init(&r->keep, kb) == 0) {
			r->resumable = 1;
			r->resume_ms = ho->resume_ms;
			r->ctl = ho->ctl;
			ho->ctl = -1;
		}
	}
	return r;
}

/* remote_new undone, the records' state given back. */
static void
remote_unnew(struct remote *r, struct remote_handoff *ho)
{
	ho->ch = r->ch;
	htab_free(&r->cl.objs);
	htab_free(&r->stages);
	hostq_free(r->cl.hq);
	free(r->in);
	free(r);
}

int
remote_start(int fd, const char *addr, const char *name,
    struct remote_handoff *ho, const struct remote_env *env,
    struct remote_stats *stats, void *token)
{
	pthread_attr_t attr;
	pthread_t tid;
	struct remote *r;
	int rc;

	if ((r = remote_new(fd, addr, name, ho, env, stats, token)) == NULL)
		return -1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, remote_main, r);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		remote_unnew(r, ho);
		return -1;
	}
	return 0;
}

int
remote_run(int fd, const char *addr, const char *name,
    struct remote_handoff *ho, const struct remote_env *env,
    struct remote_stats *stats, void *token)
{
	struct remote *r;

	if ((r = remote_new(fd, addr, name, ho, env, stats, token)) == NULL)
		return -1;
	remote_main(r);
	return 0;
}
