/*
 * hreduce: the worker side of gleam-reduce.  One thread drives the
 * connection (conn.h), whose records carry the frames after the
 * handshake, sealed when the aggregator has a key: an output queue of
 * messages and of streams (a buffer sent as chunk frames straight from
 * where it lies, the frame's header and bytes in one record, so that
 * sealing is the one pass over them), written whole while the socket
 * takes more; and the frames read, a chunk's bytes from the opened record
 * straight to their place, the others handed to the tensors in flight.
 *
 * Stream ids are fixed by the order of submission alone: the t-th tensor
 * since the last JOIN uses 2t-1 for round 1 and 2t for round 2, so that
 * every rank names every stream alike whatever the timing.  Merged chunks
 * land in place, over the bytes this worker sent: the aggregator sends
 * chunk i back only once it has all of this worker's chunk i.
 *
 * A tensor is finished when its result is known and no queued output
 * still points into its buffers; frames go out whole, so a failing
 * tensor's queued ones are simply dropped.
 *
 * A gradient on a device (hreduce_dev.h) has its codec work done by a
 * thread of the context's own, one job at a time in the order queued, so
 * that the socket keeps being served while the device works; a pipe
 * wakes the driving thread's poll when a job is done, and the tensor
 * goes on from there.  Only that thread calls the device's hooks.
 */
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "conn.h"
#include "hcodec.h"
#include "hreduce.h"
#include "hreduce_dev.h"
#include "hreduce_wire.h"
#include "parse.h"
#include "proto.h"

#define OMNI_BLOCK	256
#define SCHEME_RAW	100	/* a tensor that is one round of hr_reduce_raw */
#define RBUF_EXTRA	(16u << 10)
#define POOL_MAX	16	/* spare buffers a context keeps */

struct tensor;

/* An output job: a whole small frame, or a buffer sent as chunks. */
/* A chunk as it goes on the wire: zstd frames, or the raw bytes. */
struct zchunk {
	const uint8_t	*p;
	uint32_t	 len;
};

struct seg {
	struct seg	*next;
	struct tensor	*t;		/* NULL for messages */
	uint8_t		*msg;		/* a message's frame */
	size_t		 msglen;
	const uint8_t	*data;		/* a stream's bytes */
	const struct zchunk *zc;	/* or, chunk by chunk, these */
	uint64_t	 id, total;
	uint32_t	 chunk;
	uint64_t	 index, nchunks;
	uint8_t		 hdr[PROTO_HDR_LEN + HR_CHUNK_HDR];
};

enum tphase { T_ROUND1 = 1, T_ROUND2 = 2, T_DONE = 3 };

struct tensor {
	int		 ticket;
	int		 scheme;
	enum tphase	 phase;
	uint64_t	 id;		/* of the round under way */
	uint64_t	 id1;
	float		*grad;
	size_t		 n;
	int		 rc;
	int		 refs;		/* queued segments pointing into it */
	char		 err[512];

	/* The round under way. */
	int		 ready;
	uint8_t		*rbuf;		/* merged chunks land here */
	uint64_t	 rtotal;
	uint64_t	*roff;		/* GATHER: each rank's offset */
	uint64_t	*rgot;		/* GATHER: each rank's bytes so far */
	uint64_t	*rsz;		/* GATHER: each rank's total */
	uint64_t	 got;
	int32_t		 exponent;

	/* A raw round (hr_reduce_raw): its operation and sizes. */
	int		 raw_op;
	uint64_t	 raw_n;
	int		 raw_exp, raw_scale;
	void		*raw_buf;

	uint8_t		*bits;		/* HOMO, FLOAT, OMNI: bitmap, union */
	size_t		 nbits;
	/* HOMO with zindex: the bitmap's chunks as sent, their frames. */
	struct zchunk	*zc;
	uint8_t		*zbuf;
	int		 zround;	/* this round's chunks may be zstd */
	int		 scale;
	struct hc_layout *L;
	void		*payload;	/* HOMO, FLOAT, OMNI, GATHER */
	size_t		 payload_bytes;

	/* HOMO of a gradient on the device (hreduce_dev.h): its state. */
	int		 on_dev;
	void		*call;		/* what hr_submit_dev was given */
	void		*ts;
	int		 djobs;		/* its jobs not yet done */
	int		 decoding;	/* its sum is here, the device decodes */
};

/* A job for the device thread, and what it found. */
enum djob { DJ_BITMAP = 1, DJ_ENCODE, DJ_DECODE, DJ_RELEASE, DJ_STOP };

struct dj {
	struct dj	*next;
	enum djob	 kind;
	struct tensor	*t;
	void		*ts;		/* DJ_RELEASE's */
	struct hc_params p;		/* DJ_ENCODE's */
	int		 rc;
	int		 emax;
	uint8_t		*bits;
	void		*payload;
	size_t		 payload_bytes, union_count, core_count;
	char		 err[512];
};

struct hr_ctx {
	struct conn	 c;
	int		 fd;
	int		 dead;
	struct hr_opts	 o;
	char		 host[256];
	char		 name[PROTO_NAME_MAX + 1];
	struct auth_key	 key;
	int		 joined;
	int		 lost;		/* the group lost a worker: hr_rejoin */
	uint64_t	 generation;
	int		 next_ticket;	/* tickets ever */
	int		 base_ticket;	/* the ticket before the last JOIN */
	struct tensor	*t[HR_WINDOW_MAX];
	int		 nt;
	struct seg	*qhead, **qtail;
	uint8_t		*rb;
	size_t		 rlen, rcap;
	struct hr_stats	 st;
	int		 last_scale;
	int		 last_exponent;	/* merged, of the last raw OR round */
	char		 err[600];

	/*
	 * What finished tensors leave for the next ones: buffers whose pages
	 * are touched already, and layouts for hc_layout_renew.  Fresh pages
	 * cost a fault each, which on some machines costs more than the
	 * codec's work on them.
	 */
	void		*pool[POOL_MAX];
	int		 npool;
	struct hc_layout *spare[HR_WINDOW_MAX];
	int		 nspare;

	/* The device of hr_submit_dev's gradients, once one was used. */
	const struct hr_dev *dev;
	void		*dev_arg;
	/* Its thread, from the first hr_submit_dev to hr_close. */
	int		 dev_started;
	pthread_t	 dev_thread;
	pthread_mutex_t	 dev_mu;
	pthread_cond_t	 dev_cv;
	struct dj	*dev_todo, **dev_todo_tail;
	struct dj	*dev_done, **dev_done_tail;
	int		 dev_pipe[2];	/* a byte for each job done */
	struct dj	*dev_stop_job;	/* made at the start: stop never fails */

	/* zstd's state for the bitmaps, the I/O thread's. */
	ZSTD_CCtx	*zc;
	ZSTD_DCtx	*zd;
};

static int
ctx_err(struct hr_ctx *x, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
ctx_err(struct hr_ctx *x, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof x->err, fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * GLEAM_HR_TRACE set: a line on standard error per step of every tensor
 * (monotonic seconds, rank, ticket, event), to see where a round's time
 * goes.  Not an interface: for benchmarks and debugging.
 */
static int hr_trace = -1;

static void
trace(const struct hr_ctx *x, const struct tensor *t, const char *ev)
{
	struct timespec ts;

	if (hr_trace == 0)
		return;
	if (hr_trace == -1) {
		hr_trace = getenv("GLEAM_HR_TRACE") != NULL;
		if (hr_trace == 0)
			return;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "hrtrace %.6f %d %d %s\n", (double)ts.tv_sec +
	    ts.tv_nsec / 1e9, x->o.rank, t != NULL ? t->ticket : 0, ev);
}

static void
t_fail(struct tensor *t, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
t_fail(struct tensor *t, int rc, const char *fmt, ...)
{
	va_list ap;

	if (t->phase == T_DONE)
		return;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof t->err, fmt, ap);
	va_end(ap);
	t->rc = rc;
	t->phase = T_DONE;
}

const char *
hr_strerror(int rc)
{
	switch (rc) {
	case HR_OK: return "no error";
	case HR_EINVAL: return "invalid argument";
	case HR_ENOMEM: return "out of memory";
	case HR_ENET: return "connection to the aggregator lost";
	case HR_EAUTH: return "aggregator refused us";
	case HR_EROUND: return "round failed at the aggregator";
	case HR_ENONFINITE: return "NaN or infinity in a gradient";
	case HR_ETIMEOUT: return "aggregator silent for too long";
	case HR_ECODEC: return "codec error";
	}
	return "unknown error";
}

static const char *const scheme_names[] = {
	"homo", "dense", "gather", "omni", "float"
};

const char *
hr_scheme_name(int s)
{
	if (s < 0 || s > HR_SCHEME_FLOAT)
		return "unknown";
	return scheme_names[s];
}

int
hr_scheme_parse(const char *s)
{
	int i;

	for (i = 0; i <= HR_SCHEME_FLOAT; i++)
		if (strcmp(s, scheme_names[i]) == 0)
			return i;
	return -1;
}

void
hr_opts_init(struct hr_opts *o)
{
	const char *e;
	char *end;
	long v;

	memset(o, 0, sizeof *o);
	o->port = HR_DEFAULT_PORT;
	o->world = 1;
	o->cell_bits = 32;
	o->chunk = HR_CHUNK_DEFAULT;
	o->window = 4;
	o->timeout_ms = 60000;
	o->threads = 1;
	o->zindex = (e = getenv("GLEAM_REDUCE_ZINDEX")) != NULL &&
	    strcmp(e, "1") == 0;
	if ((e = getenv("GLEAM_REDUCE_THREADS")) != NULL) {
		v = strtol(e, &end, 10);
		if (end != e && *end == '\0' && v >= 1 && v <= HC_THREADS_MAX)
			o->threads = (int)v;
	}
}

/* ---- output ------------------------------------------------------------ */

static void
q_push(struct hr_ctx *x, struct seg *s)
{
	s->next = NULL;
	*x->qtail = s;
	x->qtail = &s->next;
	if (s->t != NULL)
		s->t->refs++;
}

static int
q_msg(struct hr_ctx *x, uint16_t type, struct pw *w)
{
	struct frame_hdr h = { 0, type, 0, 0 };
	struct seg *s;

	if (w->bad || (s = calloc(1, sizeof *s)) == NULL ||
	    (s->msg = malloc(PROTO_HDR_LEN + w->len)) == NULL) {
		if (!w->bad)
			free(s);
		pw_free(w);
		return HR_ENOMEM;
	}
	h.len = (uint32_t)w->len;
	proto_hdr_encode(s->msg, &h);
	memcpy(s->msg + PROTO_HDR_LEN, w->p, w->len);
	s->msglen = PROTO_HDR_LEN + w->len;
	pw_free(w);
	q_push(x, s);
	return 0;
}

/* The bytes of a stream segment's current chunk, as they are sent. */
static const uint8_t *
seg_bytes(const struct seg *s, uint64_t *len)
{
	if (s->zc != NULL) {
		*len = s->zc[s->index].len;
		return s->zc[s->index].p;
	}
	*len = s->total - s->index * s->chunk;
	if (*len > s->chunk)
		*len = s->chunk;
	return s->data + s->index * s->chunk;
}

/* The header of a stream segment's current chunk. */
static void
seg_hdr(struct seg *s)
{
	struct frame_hdr h = { 0, HR_MSG_CHUNK, 0, 0 };
	uint64_t len;

	(void)seg_bytes(s, &len);
	h.len = (uint32_t)(HR_CHUNK_HDR + len);
	proto_hdr_encode(s->hdr, &h);
	hr_chunk_hdr_enc(s->hdr + PROTO_HDR_LEN, s->id, (uint32_t)s->index, 0);
}

/* BEGIN, then the bytes as chunks. */
static int
q_stream(struct hr_ctx *x, struct tensor *t, const struct hr_begin *b,
    const void *data, const struct zchunk *zc)
{
	struct seg *s;
	struct pw w;
	int rc;

	pw_init(&w);
	hr_begin_enc(&w, b);
	if ((rc = q_msg(x, HR_MSG_BEGIN, &w)) != 0)
		return rc;
	if (b->total == 0)
		return 0;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return HR_ENOMEM;
	s->t = t;
	s->data = data;
	s->zc = zc;
	s->id = b->id;
	s->total = b->total;
	s->chunk = b->chunk;
	s->nchunks = hr_nchunks(b->total, b->chunk);
	seg_hdr(s);
	q_push(x, s);
	return 0;
}

static void
seg_free(struct seg *s)
{
	if (s->t != NULL)
		s->t->refs--;
	free(s->msg);
	free(s);
}

/*
 * A failed tensor's streams stop: frames go out whole, so what is queued
 * of them goes.
 */
static void
q_cancel(struct hr_ctx *x, struct tensor *t)
{
	struct seg **pp = &x->qhead, *s;

	while ((s = *pp) != NULL) {
		if (s->t != t) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		seg_free(s);
	}
	x->qtail = pp;
	for (s = x->qhead, x->qtail = &x->qhead; s != NULL; s = s->next)
		x->qtail = &s->next;
}

static void ctx_die(struct hr_ctx *, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the socket takes more now, or has bytes for us. */
static int
fd_ready(struct hr_ctx *x, short events)
{
	struct pollfd pfd = { .fd = x->fd, .events = events };
	int rc;

	while ((rc = poll(&pfd, 1, 0)) == -1 && errno == EINTR)
		;
	return rc == 1;
}

/*
 * Writes queued frames, whole, through the connection's records: the
 * messages at the head and the chunk frame after them, header and bytes
 * from where they lie, in one record.  Goes on while the socket takes
 * more; 0, or -1 once the context is dead.
 */
static int
q_write(struct hr_ctx *x)
{
	struct iovec iov[CONN_IOV_MAX];
	struct seg *s, *next;
	const uint8_t *d;
	uint64_t dlen, out0;
	int niov;

	while (x->qhead != NULL) {
		niov = 0;
		for (s = x->qhead; s != NULL && niov < CONN_IOV_MAX - 1;
		    s = s->next) {
			if (s->msg != NULL) {
				iov[niov].iov_base = s->msg;
				iov[niov++].iov_len = s->msglen;
				continue;
			}
			d = seg_bytes(s, &dlen);
			iov[niov].iov_base = s->hdr;
			iov[niov++].iov_len = sizeof s->hdr;
			iov[niov].iov_base = (void *)d;
			iov[niov++].iov_len = (size_t)dlen;
			break;
		}
		out0 = x->c.bytes_out;
		if (conn_writev(&x->c, iov, niov) == -1) {
			ctx_die(x, HR_ENET, "%s", x->c.err);
			return -1;
		}
		x->st.bytes_sent += x->c.bytes_out - out0;
		/* The frames written: the messages, and one chunk. */
		for (s = x->qhead; s != NULL && niov > 0; s = next) {
			next = s->next;
			if (s->msg == NULL) {
				niov -= 2;
				if (++s->index < s->nchunks) {
					seg_hdr(s);
					break;
				}
			} else
				niov--;
			x->qhead = next;
			if (x->qhead == NULL)
				x->qtail = &x->qhead;
			if (s->t != NULL)
				trace(x, s->t, s->t->phase == T_ROUND1 ?
				    "sent1" : "sent2");
			seg_free(s);
		}
		if (x->qhead != NULL && !fd_ready(x, POLLOUT))
			break;
	}
	return 0;
}

/* ---- tensors ------------------------------------------------------------ */

/* ---- buffers ----------------------------------------------------------- */

/* The smallest spare buffer of len bytes or more, else a new one. */
static void *
buf_get(struct hr_ctx *x, size_t len)
{
	size_t cap, best = SIZE_MAX;
	int i, at = -1;
	void *p;

	for (i = 0; i < x->npool; i++) {
		cap = malloc_usable_size(x->pool[i]);
		if (cap >= len && cap < best) {
			best = cap;
			at = i;
		}
	}
	if (at < 0)
		return malloc(len + 1);
	p = x->pool[at];
	x->pool[at] = x->pool[--x->npool];
	return p;
}

/* Keeps p for later; when the pool is full, frees the smallest. */
static void
buf_put(struct hr_ctx *x, void *p)
{
	size_t cap, min;
	int i, at;

	if (p == NULL)
		return;
	if (x->npool < POOL_MAX) {
		x->pool[x->npool++] = p;
		return;
	}
	min = malloc_usable_size(p);
	for (i = 0, at = -1; i < x->npool; i++)
		if ((cap = malloc_usable_size(x->pool[i])) < min) {
			min = cap;
			at = i;
		}
	if (at < 0) {
		free(p);
		return;
	}
	free(x->pool[at]);
	x->pool[at] = p;
}

static void
layout_put(struct hr_ctx *x, struct hc_layout *L)
{
	if (L == NULL)
		return;
	if (x->nspare < HR_WINDOW_MAX && x->nspare < x->o.window)
		x->spare[x->nspare++] = L;
	else
		hc_layout_free(L);
}

static void dev_release(struct hr_ctx *, void *);
static int dev_queue(struct hr_ctx *, struct tensor *, enum djob,
    const struct hc_params *);

static void
t_free_bufs(struct hr_ctx *x, struct tensor *t)
{
	/* A device's tensor: its buffers are the device's. */
	if (t->on_dev) {
		if (t->ts != NULL)
			dev_release(x, t->ts);
		t->ts = NULL;
		t->bits = NULL;
		t->payload = NULL;
	}
	buf_put(x, t->bits);
	buf_put(x, t->payload);
	buf_put(x, t->zbuf);
	free(t->zc);
	t->zbuf = NULL;
	t->zc = NULL;
	free(t->roff);
	free(t->rgot);
	free(t->rsz);
	layout_put(x, t->L);
	t->bits = NULL;
	t->payload = NULL;
	t->roff = t->rgot = t->rsz = NULL;
	t->L = NULL;
	if (t->rbuf != NULL && t->scheme == HR_SCHEME_GATHER)
		buf_put(x, t->rbuf);
	t->rbuf = NULL;
}

static struct tensor *
t_find(struct hr_ctx *x, uint64_t id)
{
	int i;

	for (i = 0; i < x->nt; i++)
		if (x->t[i]->phase != T_DONE && x->t[i]->id == id)
			return x->t[i];
	return NULL;
}

static void
t_round_reset(struct tensor *t, uint64_t id)
{
	t->id = id;
	t->ready = 0;
	t->got = 0;
	t->zround = 0;
}

/* BEGIN of t's round, then its bytes: data, or chunk by chunk zc. */
static int
begin_z(struct hr_ctx *x, struct tensor *t, uint8_t op, int exponent,
    int scale, uint64_t n, uint64_t total, const void *data,
    uint16_t flags, const struct zchunk *zc)
{
	struct hr_begin b;

	memset(&b, 0, sizeof b);
	b.id = t->id;
	b.op = op;
	b.cell_bits = op == HR_OP_SUM ? (uint8_t)x->o.cell_bits : 0;
	b.flags = flags;
	b.exponent = exponent;
	b.scale = scale;
	b.n = n;
	b.total = total;
	b.chunk = x->o.chunk;
	return q_stream(x, t, &b, data, zc);
}

static int
begin(struct hr_ctx *x, struct tensor *t, uint8_t op, int exponent,
    int scale, uint64_t n, uint64_t total, const void *data)
{
	return begin_z(x, t, op, exponent, scale, n, total, data, 0, NULL);
}

/*
 * The bitmap's chunks as zstd frames where that makes them shorter (each
 * frame is one chunk's, shorter than it; the others stay raw).
 */
static int
zpack(struct hr_ctx *x, struct tensor *t)
{
	uint64_t nch = hr_nchunks(t->nbits, x->o.chunk), i, off, len;
	size_t n, used = 0;

	if (nch == 0)
		return 0;
	if ((x->zc == NULL && (x->zc = ZSTD_createCCtx()) == NULL) ||
	    (t->zc = calloc(nch, sizeof *t->zc)) == NULL ||
	    (t->zbuf = buf_get(x, t->nbits)) == NULL)
		return HR_ENOMEM;
	for (i = 0; i < nch; i++) {
		off = i * x->o.chunk;
		len = t->nbits - off < x->o.chunk ? t->nbits - off :
		    x->o.chunk;
		n = len >= 64 ? ZSTD_compressCCtx(x->zc, t->zbuf + used,
		    len - 1, t->bits + off, len, 1) : 0;
		if (len >= 64 && !ZSTD_isError(n)) {
			t->zc[i].p = t->zbuf + used;
			t->zc[i].len = (uint32_t)n;
			used += n;
		} else {
			t->zc[i].p = t->bits + off;
			t->zc[i].len = (uint32_t)len;
		}
	}
	return 0;
}

/* Round 1 of a HOMO or FLOAT tensor: its bitmap, made by now. */
static int
round1_send(struct hr_ctx *x, struct tensor *t, int exponent)
{
	int rc;

	t->rbuf = t->bits;
	if (t->scheme == HR_SCHEME_HOMO && x->o.zindex) {
		if ((rc = zpack(x, t)) != 0)
			return rc;
		t->zround = 1;
	}
	return begin_z(x, t, HR_OP_OR, exponent, 0, t->n, t->nbits, t->bits,
	    t->zround ? HR_BEGIN_ZSTD : 0, t->zc);
}

/* Tells the others that this worker cannot go on with round id. */
static void
t_abort(struct hr_ctx *x, struct tensor *t, uint64_t id, int rc,
    const char *why)
{
	struct hr_abort ab;
	struct pw w;

	memset(&ab, 0, sizeof ab);
	ab.id = id;
	snprintf(ab.text, sizeof ab.text, "%s", why);
	pw_init(&w);
	hr_abort_enc(&w, &ab);
	q_msg(x, HR_MSG_ABORT, &w);
	q_cancel(x, t);
	t_fail(t, rc, "%s", why);
}

/* The (index, value) pairs of the nonzeros; GATHER's round. */
static int
gather_pack(struct hr_ctx *x, struct tensor *t)
{
	size_t i, nnz = 0;
	uint8_t *p;
	uint32_t u;

	for (i = 0; i < t->n; i++)
		nnz += t->grad[i] != 0;
	if ((t->payload = buf_get(x, 8 * nnz)) == NULL)
		return HR_ENOMEM;
	t->payload_bytes = 8 * nnz;
	for (i = 0, p = t->payload; i < t->n; i++) {
		if (t->grad[i] == 0)
			continue;
		u = (uint32_t)i;
		memcpy(p, &u, 4);
		memcpy(p + 4, &t->grad[i], 4);
		p += 8;
	}
	return 0;
}

/* Nonzero blocks of OMNI_BLOCK values, as a bitmap. */
static void
omni_bits(const float *g, size_t n, uint8_t *bits)
{
	size_t b, i, nb = (n + OMNI_BLOCK - 1) / OMNI_BLOCK, end;

	memset(bits, 0, hc_bitmap_bytes(nb));
	for (b = 0; b < nb; b++) {
		end = (b + 1) * OMNI_BLOCK < n ? (b + 1) * OMNI_BLOCK : n;
		for (i = b * OMNI_BLOCK; i < end; i++)
			if (g[i] != 0) {
				bits[b >> 3] |= (uint8_t)(1u << (b & 7));
				break;
			}
	}
}

/* Round 1 of a new tensor. */
static int
t_start(struct hr_ctx *x, struct tensor *t)
{
	size_t nb;
	int e = HC_EXP_ZERO, rc;

	t->id1 = 2 * (uint64_t)(t->ticket - x->base_ticket) - 1;
	t_round_reset(t, t->id1);
	t->phase = T_ROUND1;
	switch (t->scheme) {
	case SCHEME_RAW:
		t->rbuf = t->raw_buf;
		if (t->raw_op == HR_OP_OR)
			return begin(x, t, HR_OP_OR, t->raw_exp, 0, t->raw_n,
			    hc_bitmap_bytes(t->raw_n), t->raw_buf);
		return begin(x, t, HR_OP_SUM, 0, t->raw_scale, t->raw_n,
		    t->raw_n * (uint64_t)(x->o.cell_bits / 8), t->raw_buf);
	case HR_SCHEME_DENSE:
		t->rbuf = (uint8_t *)t->grad;
		return begin(x, t, HR_OP_FSUM, 0, 0, t->n, 4 * (uint64_t)t->n,
		    t->grad);
	case HR_SCHEME_GATHER:
		if (t->n > UINT32_MAX)
			return ctx_err(x, HR_EINVAL, "gather: more than 2^32 "
			    "values");
		if ((rc = gather_pack(x, t)) != 0)
			return rc;
		return begin(x, t, HR_OP_GATHER, 0, 0, t->n, t->payload_bytes,
		    t->payload);
	case HR_SCHEME_OMNI:
		nb = (t->n + OMNI_BLOCK - 1) / OMNI_BLOCK;
		t->nbits = hc_bitmap_bytes(nb);
		if ((t->bits = buf_get(x, t->nbits)) == NULL)
			return HR_ENOMEM;
		omni_bits(t->grad, t->n, t->bits);
		t->rbuf = t->bits;
		return begin(x, t, HR_OP_OR, HC_EXP_ZERO, 0, nb, t->nbits,
		    t->bits);
	}
	t->nbits = hc_bitmap_bytes(t->n);
	/* The device's thread makes the bitmap; dev_done sends it. */
	if (t->on_dev)
		return dev_queue(x, t, DJ_BITMAP, NULL);
	if ((t->bits = buf_get(x, t->nbits)) == NULL)
		return HR_ENOMEM;
	/* NaN or Inf: the exponent tells every worker, which all stop. */
	(void)hc_bitmap_threads(t->grad, t->n, t->bits, &e, x->o.threads);
	return round1_send(x, t, e);
}

/* The float-cell sketch of the published scheme: every union value in k
 * cells, C included. */
static void
float_encode(const struct hc_layout_info *li, const float *g, float *cells)
{
	size_t i, b, t;
	unsigned j;

	memset(cells, 0, li->cells * sizeof *cells);
	for (i = 0; i < li->n; i++) {
		if (g[i] == 0)
			continue;
		b = i / li->block;
		t = i % li->block;
		for (j = 0; j < li->k; j++)
			cells[(size_t)li->block_rows[b * li->k + j] * li->block +
			    t] += g[i];
	}
}

static int
fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Peels in the layout's order; the 2-core gets the median of its cells. */
static void
float_decode(const struct hc_layout_info *li, float *cells, float *out)
{
	size_t e, b, t, c, i;
	unsigned j, jp, k = li->k;
	float v, m[HC_MAX_K];

	if (li->n > 0)
		memset(out, 0, li->n * sizeof *out);
	for (e = 0; e < li->round_start[li->nrounds]; e++) {
		b = (size_t)(li->peel[e] >> 20);
		t = (size_t)(li->peel[e] >> 4) & 0xffff;
		jp = (unsigned)(li->peel[e] & 0xf);
		/* The core still sits in these cells: the error spreads. */
		v = cells[(size_t)li->block_rows[b * k + jp] * li->block + t];
		for (j = 0; j < k; j++)
			cells[(size_t)li->block_rows[b * k + j] * li->block +
			    t] -= v;
		out[b * li->block + t] = v;
	}
	for (c = 0; c < li->core_count; c++) {
		i = li->core[c];
		b = i / li->block;
		t = i % li->block;
		for (j = 0; j < k; j++)
			m[j] = cells[(size_t)li->block_rows[b * k + j] *
			    li->block + t];
		qsort(m, k, sizeof m[0], fcmp);
		out[i] = m[k / 2];
	}
}

static void round2_send(struct hr_ctx *, struct tensor *);

/* Round 1 is merged: what round 2 sends, or the result. */
static void
t_round1_done(struct hr_ctx *x, struct tensor *t)
{
	struct hc_params p;
	struct hc_layout_info li;
	size_t i, nb, off, len;
	uint8_t *pb;
	int rc;

	if (t->scheme == HR_SCHEME_DENSE) {
		t->phase = T_DONE;
		return;
	}
	if (t->scheme == SCHEME_RAW) {
		x->last_exponent = t->exponent;
		t->phase = T_DONE;
		return;
	}
	if (t->scheme == HR_SCHEME_GATHER) {
		/* Every rank's pairs in rank order, so all agree bit for bit. */
		const uint8_t *src;
		uint64_t sz;
		uint32_t u;
		float v;
		int r;

		if (t->n > 0)
			memset(t->grad, 0, t->n * sizeof *t->grad);
		for (r = 0; r < x->o.world; r++) {
			src = r == x->o.rank ? t->payload : t->rbuf + t->roff[r];
			sz = r == x->o.rank ? t->payload_bytes : t->rgot[r];
			for (off = 0; off + 8 <= sz; off += 8) {
				memcpy(&u, src + off, 4);
				memcpy(&v, src + off + 4, 4);
				if (u >= t->n) {
					t_fail(t, HR_EROUND, "rank %d sent "
					    "index %u of %zu", r, u, t->n);
					return;
				}
				t->grad[u] += v;
			}
		}
		t->phase = T_DONE;
		return;
	}
	t_round_reset(t, t->id1 + 1);
	t->phase = T_ROUND2;
	if (t->scheme == HR_SCHEME_OMNI) {
		nb = (t->n + OMNI_BLOCK - 1) / OMNI_BLOCK;
		for (i = 0, len = 0; i < nb; i++)
			if (t->bits[i >> 3] >> (i & 7) & 1)
				len += (i + 1) * OMNI_BLOCK < t->n ?
				    OMNI_BLOCK : t->n - i * OMNI_BLOCK;
		if ((t->payload = buf_get(x, 4 * len)) == NULL) {
			t_abort(x, t, t->id, HR_ENOMEM, "out of memory");
			return;
		}
		t->payload_bytes = 4 * len;
		for (i = 0, pb = t->payload; i < nb; i++) {
			if (!(t->bits[i >> 3] >> (i & 7) & 1))
				continue;
			len = (i + 1) * OMNI_BLOCK < t->n ? OMNI_BLOCK :
			    t->n - i * OMNI_BLOCK;
			memcpy(pb, t->grad + i * OMNI_BLOCK, 4 * len);
			pb += 4 * len;
		}
		t->rbuf = t->payload;
		if ((rc = begin(x, t, HR_OP_FSUM, 0, 0, t->n, t->payload_bytes,
		    t->payload)) != 0)
			t_abort(x, t, t->id, rc, "out of memory");
		return;
	}

	if (t->exponent == HC_EXP_NONFINITE) {
		t_fail(t, HR_ENONFINITE, "NaN or infinity in the gradient of "
		    "some worker; no worker applied this tensor");
		return;
	}
	hc_params_init(&p, t->n, x->o.cell_bits);
	p.seed = x->o.seed;
	p.threads = x->o.threads;
	if (t->on_dev) {
		/* The device's thread encodes; dev_done sends round 2. */
		if ((rc = hc_scale(t->exponent, x->o.world, x->o.cell_bits,
		    &t->scale)) != 0) {
			t_abort(x, t, t->id, HR_ECODEC, hc_strerror(rc));
			return;
		}
		if ((rc = dev_queue(x, t, DJ_ENCODE, &p)) != 0)
			t_abort(x, t, t->id, rc, "out of memory");
		return;
	}
	/* In the memory of a finished tensor's layout, if there is one. */
	if (x->nspare > 0)
		t->L = x->spare[--x->nspare];
	if ((rc = hc_scale(t->exponent, x->o.world, x->o.cell_bits,
	    &t->scale)) != 0 ||
	    (rc = hc_layout_renew(&p, t->bits, &t->L)) != 0) {
		t_abort(x, t, t->id, rc == HC_ENOMEM ? HR_ENOMEM : HR_ECODEC,
		    hc_strerror(rc));
		return;
	}
	hc_layout_info(t->L, &li);
	x->st.union_count = li.union_count;
	x->st.core_count = li.core_count;
	if (t->scheme == HR_SCHEME_FLOAT) {
		t->payload_bytes = li.cells * 4;
		if ((t->payload = buf_get(x, t->payload_bytes)) == NULL) {
			t_abort(x, t, t->id, HR_ENOMEM, "out of memory");
			return;
		}
		float_encode(&li, t->grad, t->payload);
		t->rbuf = t->payload;
		x->st.payload_bytes = t->payload_bytes;
		if ((rc = begin(x, t, HR_OP_FSUM, 0, 0, t->n, t->payload_bytes,
		    t->payload)) != 0)
			t_abort(x, t, t->id, rc, "out of memory");
		return;
	}
	t->payload_bytes = hc_layout_payload(t->L) * (size_t)(x->o.cell_bits /
	    8);
	if ((t->payload = buf_get(x, t->payload_bytes)) == NULL) {
		t_abort(x, t, t->id, HR_ENOMEM, "out of memory");
		return;
	}
	if ((rc = hc_encode(t->L, t->grad, t->scale, t->payload)) != 0) {
		t_abort(x, t, t->id, HR_ECODEC, hc_strerror(rc));
		return;
	}
	round2_send(x, t);
}

/* Round 2 of HOMO: the payload, encoded. */
static void
round2_send(struct hr_ctx *x, struct tensor *t)
{
	int rc;

	x->last_scale = t->scale;
	x->st.payload_bytes = t->payload_bytes;
	t->rbuf = t->payload;
	if ((rc = begin(x, t, HR_OP_SUM, 0, t->scale, t->n, t->payload_bytes,
	    t->payload)) != 0)
		t_abort(x, t, t->id, rc, "out of memory");
}

static void
t_round2_done(struct hr_ctx *x, struct tensor *t)
{
	struct hc_layout_info li;
	size_t i, nb, len;
	const uint8_t *pb;
	int rc;

	switch (t->scheme) {
	case HR_SCHEME_OMNI:
		nb = (t->n + OMNI_BLOCK - 1) / OMNI_BLOCK;
		if (t->n > 0)
			memset(t->grad, 0, t->n * sizeof *t->grad);
		for (i = 0, pb = t->payload; i < nb; i++) {
			if (!(t->bits[i >> 3] >> (i & 7) & 1))
				continue;
			len = (i + 1) * OMNI_BLOCK < t->n ? OMNI_BLOCK :
			    t->n - i * OMNI_BLOCK;
			memcpy(t->grad + i * OMNI_BLOCK, pb, 4 * len);
			pb += 4 * len;
		}
		break;
	case HR_SCHEME_FLOAT:
		hc_layout_info(t->L, &li);
		float_decode(&li, t->payload, t->grad);
		break;
	default:
		/*
		 * The device's thread decodes; dev_finish finishes it.  The
		 * network's part is over: the group or the connection lost
		 * meanwhile does not fail it.
		 */
		if (t->on_dev) {
			if ((rc = dev_queue(x, t, DJ_DECODE, NULL)) != 0)
				t_fail(t, rc, "out of memory");
			else
				t->decoding = 1;
			return;
		}
		/* In place: hc_decode writes nothing unless the sums are good. */
		if ((rc = hc_decode(t->L, t->payload, t->scale, t->grad)) !=
		    0) {
			t_fail(t, HR_ECODEC, "decoding the merged sketch: %s",
			    hc_strerror(rc));
			return;
		}
	}
	t->phase = T_DONE;
}

/* ---- input -------------------------------------------------------------- */

static void
on_ready(struct hr_ctx *x, const uint8_t *p, size_t len)
{
	struct hr_ready *rd;
	struct tensor *t;
	uint64_t sum = 0;
	int r;

	if ((rd = malloc(sizeof *rd)) == NULL) {
		ctx_die(x, HR_ENOMEM, "out of memory");
		return;
	}
	if (hr_ready_dec(p, len, rd) == -1) {
		ctx_die(x, HR_ENET, "%s: malformed READY", x->c.peer);
		goto out;
	}
	if ((t = t_find(x, rd->id)) == NULL || t->ready)
		goto out;
	if (rd->world != (uint32_t)x->o.world) {
		t_abort(x, t, t->id, HR_EROUND, "READY for a group of another "
		    "size");
		goto out;
	}
	t->ready = 1;
	t->exponent = rd->exponent;
	trace(x, t, t->phase == T_ROUND1 ? "ready1" : "ready2");
	if (t->scheme == HR_SCHEME_GATHER) {
		if ((t->roff = calloc((size_t)x->o.world, sizeof *t->roff)) ==
		    NULL || (t->rgot = calloc((size_t)x->o.world,
		    sizeof *t->rgot)) == NULL || (t->rsz = calloc((size_t)
		    x->o.world, sizeof *t->rsz)) == NULL) {
			t_abort(x, t, t->id, HR_ENOMEM, "out of memory");
			goto out;
		}
		for (r = 0; r < x->o.world; r++) {
			t->roff[r] = sum;
			t->rsz[r] = rd->total[r];
			if (r != x->o.rank)
				sum += rd->total[r];
			if (rd->total[r] % 8 != 0 || sum > ((uint64_t)1 << 40)) {
				t_abort(x, t, t->id, HR_EROUND, "bad pair list "
				    "sizes");
				goto out;
			}
		}
		t->rtotal = sum;
		if ((t->rbuf = buf_get(x, sum)) == NULL) {
			t_abort(x, t, t->id, HR_ENOMEM, "out of memory");
			goto out;
		}
		goto out;
	}
	t->rtotal = rd->total[x->o.rank];
out:
	free(rd);
}

/*
 * Where the ch->len bytes of a CHUNK go, once its header is checked; NULL
 * if it is dropped or failed its tensor.  *zip: they are zstd frames that
 * inflate to *want bytes there; else *want is ch->len.
 */
static uint8_t *
chunk_dest(struct hr_ctx *x, const struct hr_chunk *ch, struct tensor **tp,
    uint64_t *want, int *zip)
{
	struct tensor *t;
	uint64_t off, base;
	uint32_t r;

	if ((t = t_find(x, ch->id)) == NULL)
		return NULL;
	if (!t->ready) {
		t_abort(x, t, t->id, HR_EROUND, "chunk before READY");
		return NULL;
	}
	*tp = t;
	*zip = 0;
	r = ch->rank;
	if (t->scheme == HR_SCHEME_GATHER && t->phase == T_ROUND1) {
		if (r >= (uint32_t)x->o.world || (int)r == x->o.rank ||
		    (uint64_t)ch->index * x->o.chunk != t->rgot[r]) {
			t_abort(x, t, t->id, HR_EROUND, "relayed chunk out of "
			    "order");
			return NULL;
		}
		base = t->roff[r];
		off = t->rgot[r];
		*want = t->rsz[r] - off < x->o.chunk ? t->rsz[r] - off :
		    x->o.chunk;
		if (ch->len != *want) {
			t_abort(x, t, t->id, HR_EROUND, "relayed chunk too "
			    "long");
			return NULL;
		}
		return t->rbuf + base + off;
	}
	off = (uint64_t)ch->index * x->o.chunk;
	*want = t->rtotal - off < x->o.chunk ? t->rtotal - off : x->o.chunk;
	if (r != 0 || off >= t->rtotal || off != t->got || ch->len > *want ||
	    (ch->len < *want && !t->zround)) {
		t_abort(x, t, t->id, HR_EROUND, "merged chunk out of order or "
		    "of the wrong size");
		return NULL;
	}
	*zip = ch->len < *want;
	return t->rbuf + off;
}

/* The chunk's bytes are in place: counted. */
static void
chunk_landed(struct hr_ctx *x, struct tensor *t, const struct hr_chunk *ch,
    uint64_t want)
{
	if (t->scheme == HR_SCHEME_GATHER && t->phase == T_ROUND1)
		t->rgot[ch->rank] += ch->len;
	t->got += want;
}

/* A merged chunk's zstd frames at p inflated into dst; -1 if they do not. */
static int
chunk_inflate(struct hr_ctx *x, struct tensor *t, uint8_t *dst,
    uint64_t want, const uint8_t *p, size_t len)
{
	size_t n;

	if ((x->zd == NULL && (x->zd = ZSTD_createDCtx()) == NULL) ||
	    (n = ZSTD_decompressDCtx(x->zd, dst, (size_t)want, p, len),
	    ZSTD_isError(n) || n != want)) {
		t_abort(x, t, t->id, HR_EROUND, "a merged chunk is not zstd "
		    "frames of its length");
		return -1;
	}
	return 0;
}

static void
on_done(struct hr_ctx *x, const uint8_t *p, size_t len)
{
	struct tensor *t;
	uint64_t id;

	if (hr_done_dec(p, len, &id) == -1) {
		ctx_die(x, HR_ENET, "%s: malformed DONE", x->c.peer);
		return;
	}
	if ((t = t_find(x, id)) == NULL)
		return;
	if (!t->ready || t->got != t->rtotal) {
		t_abort(x, t, t->id, HR_EROUND, "DONE before every chunk");
		return;
	}
	/* A device's tensor: its thread's job traces its end. */
	if (t->phase == T_ROUND1) {
		trace(x, t, "done1");
		t_round1_done(x, t);
		if (!t->on_dev)
			trace(x, t, "queued2");
	} else {
		trace(x, t, "done2");
		t_round2_done(x, t);
		if (!t->on_dev)
			trace(x, t, "decoded");
	}
}

static void
on_fail(struct hr_ctx *x, const uint8_t *p, size_t len)
{
	struct hr_fail_msg f;
	struct tensor *t;
	int i;

	if (hr_fail_dec(p, len, &f) == -1) {
		ctx_die(x, HR_ENET, "%s: malformed FAIL", x->c.peer);
		return;
	}
	if (f.id == 0) {
		x->joined = 0;
		x->lost = 1;
		for (i = 0; i < x->nt; i++) {
			if (x->t[i]->decoding)
				continue;
			q_cancel(x, x->t[i]);
			t_fail(x->t[i], HR_EROUND, "%s: %s", hr_fail_name(f.code),
			    f.text);
		}
		return;
	}
	if ((t = t_find(x, f.id)) == NULL)
		return;
	q_cancel(x, t);
	t_fail(t, HR_EROUND, "%s: %s", hr_fail_name(f.code), f.text);
}

static void
dispatch(struct hr_ctx *x, const struct frame_hdr *h, const uint8_t *p)
{
	char err[600];

	switch (h->type) {
	case HR_MSG_JOINED:
		if (hr_joined_dec(p, h->len, &x->generation) == -1)
			ctx_die(x, HR_ENET, "%s: malformed JOINED", x->c.peer);
		return;
	case HR_MSG_READY:
		on_ready(x, p, h->len);
		return;
	case HR_MSG_DONE:
		on_done(x, p, h->len);
		return;
	case HR_MSG_FAIL:
		on_fail(x, p, h->len);
		return;
	case MSG_ERROR:
		conn_error_frame(&x->c, p, h->len);
		snprintf(err, sizeof err, "%s", x->c.err);
		ctx_die(x, HR_ENET, "%s", err);
		return;
	}
	ctx_die(x, HR_ENET, "%s: unexpected %s", x->c.peer,
	    hr_msg_name(h->type));
}

/* The next bytes of the frame stream; -1 once the context is dead. */
static int
r_get(struct hr_ctx *x, void *p, size_t len)
{
	uint64_t in0 = x->c.bytes_in;
	int rc;

	rc = conn_read(&x->c, p, len);
	x->st.bytes_received += x->c.bytes_in - in0;
	if (rc == -1)
		ctx_die(x, HR_ENET, "%s", x->c.err);
	return rc;
}

/*
 * One frame.  A chunk's bytes go from the opened record straight to
 * where they belong (a copy the old framing made too); others through
 * x->rb.
 */
static int
r_frame(struct hr_ctx *x)
{
	uint8_t hb[PROTO_HDR_LEN];
	struct frame_hdr h;
	struct hr_chunk ch;
	struct tensor *t = NULL;
	uint64_t want;
	uint8_t *dst;
	int zip;

	if (r_get(x, hb, sizeof hb) == -1)
		return -1;
	proto_hdr_decode(hb, &h);
	if (h.len > x->rcap) {
		ctx_die(x, HR_ENET, "%s: frame of %u bytes too large",
		    x->c.peer, h.len);
		return -1;
	}
	if (h.type == HR_MSG_CHUNK && h.len < HR_CHUNK_HDR) {
		ctx_die(x, HR_ENET, "%s: malformed CHUNK", x->c.peer);
		return -1;
	}
	if (h.type != HR_MSG_CHUNK) {
		if (h.len > 0 && r_get(x, x->rb, h.len) == -1)
			return -1;
		dispatch(x, &h, x->rb);
		return x->dead ? -1 : 0;
	}
	if (r_get(x, x->rb, HR_CHUNK_HDR) == -1)
		return -1;
	(void)hr_chunk_dec(x->rb, HR_CHUNK_HDR, &ch);
	ch.len = h.len - HR_CHUNK_HDR;
	if ((dst = chunk_dest(x, &ch, &t, &want, &zip)) != NULL && !zip) {
		if (r_get(x, dst, ch.len) == -1)
			return -1;
		chunk_landed(x, t, &ch, want);
		return 0;
	}
	/* Dropped, or zstd frames to inflate: through x->rb. */
	if (ch.len > 0 && r_get(x, x->rb + HR_CHUNK_HDR, ch.len) == -1)
		return -1;
	if (dst != NULL && chunk_inflate(x, t, dst, want, x->rb +
	    HR_CHUNK_HDR, ch.len) == 0)
		chunk_landed(x, t, &ch, want);
	return x->dead ? -1 : 0;
}

/*
 * Handles every frame there is: in the records read already, or at the
 * socket (a frame begun is read to its end).
 */
static int
r_read(struct hr_ctx *x)
{
	do {
		if (r_frame(x) == -1)
			return -1;
		/*
		 * What the frame queued (a round 2, after a layout of some
		 * milliseconds) goes now, not after every frame the socket
		 * holds has been handled too.
		 */
		if (x->qhead != NULL && q_write(x) == -1)
			return -1;
	} while (x->c.rpos < x->c.rend || fd_ready(x, POLLIN));
	return 0;
}

/* ---- the device's thread ------------------------------------------------ */

static void *
dev_main(void *arg)
{
	struct hr_ctx *x = arg;
	const struct hr_dev *d = x->dev;
	struct tensor *t;
	struct dj *j;
	char b = 0;

	for (;;) {
		pthread_mutex_lock(&x->dev_mu);
		while (x->dev_todo == NULL)
			pthread_cond_wait(&x->dev_cv, &x->dev_mu);
		j = x->dev_todo;
		if ((x->dev_todo = j->next) == NULL)
			x->dev_todo_tail = &x->dev_todo;
		pthread_mutex_unlock(&x->dev_mu);
		t = j->t;
		switch (j->kind) {
		case DJ_BITMAP:
			j->emax = HC_EXP_ZERO;
			j->rc = d->bitmap(x->dev_arg, t->call, &t->ts, t->grad,
			    t->n, &j->bits, &j->emax, j->err, sizeof j->err);
			break;
		case DJ_ENCODE:
			j->rc = d->encode(x->dev_arg, t->ts, &j->p, t->scale,
			    t->grad, &j->payload, &j->payload_bytes,
			    &j->union_count, &j->core_count, j->err,
			    sizeof j->err);
			break;
		case DJ_DECODE:
			j->rc = d->decode(x->dev_arg, t->ts, t->scale, t->grad,
			    j->err, sizeof j->err);
			break;
		case DJ_RELEASE:
			d->release(x->dev_arg, j->ts);
			free(j);
			continue;
		case DJ_STOP:
			if (d->destroy != NULL)
				d->destroy(x->dev_arg);
			free(j);
			return NULL;
		}
		j->next = NULL;
		pthread_mutex_lock(&x->dev_mu);
		*x->dev_done_tail = j;
		x->dev_done_tail = &j->next;
		pthread_mutex_unlock(&x->dev_mu);
		while (write(x->dev_pipe[1], &b, 1) == -1 && errno == EINTR)
			;
	}
}

static void
dev_push(struct hr_ctx *x, struct dj *j)
{
	j->next = NULL;
	pthread_mutex_lock(&x->dev_mu);
	*x->dev_todo_tail = j;
	x->dev_todo_tail = &j->next;
	pthread_cond_signal(&x->dev_cv);
	pthread_mutex_unlock(&x->dev_mu);
}

static int
dev_start(struct hr_ctx *x)
{
	if (x->dev_started)
		return 0;
	if ((x->dev_stop_job = calloc(1, sizeof *x->dev_stop_job)) == NULL)
		return HR_ENOMEM;
	x->dev_stop_job->kind = DJ_STOP;
	if (pipe(x->dev_pipe) == -1) {
		free(x->dev_stop_job);
		x->dev_stop_job = NULL;
		return ctx_err(x, HR_ENOMEM, "pipe: %s", strerror(errno));
	}
	fcntl(x->dev_pipe[0], F_SETFL, fcntl(x->dev_pipe[0], F_GETFL) |
	    O_NONBLOCK);
	fcntl(x->dev_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(x->dev_pipe[1], F_SETFD, FD_CLOEXEC);
	pthread_mutex_init(&x->dev_mu, NULL);
	pthread_cond_init(&x->dev_cv, NULL);
	x->dev_todo_tail = &x->dev_todo;
	x->dev_done_tail = &x->dev_done;
	if (pthread_create(&x->dev_thread, NULL, dev_main, x) != 0) {
		close(x->dev_pipe[0]);
		close(x->dev_pipe[1]);
		pthread_mutex_destroy(&x->dev_mu);
		pthread_cond_destroy(&x->dev_cv);
		free(x->dev_stop_job);
		x->dev_stop_job = NULL;
		return ctx_err(x, HR_ENOMEM, "cannot start the device's "
		    "thread");
	}
	x->dev_started = 1;
	return 0;
}

/* A job for t; it holds t until dev_done has seen it. */
static int
dev_queue(struct hr_ctx *x, struct tensor *t, enum djob kind,
    const struct hc_params *p)
{
	struct dj *j;

	if ((j = calloc(1, sizeof *j)) == NULL)
		return HR_ENOMEM;
	j->kind = kind;
	j->t = t;
	if (p != NULL)
		j->p = *p;
	t->djobs++;
	dev_push(x, j);
	return 0;
}

/* A finished tensor's device state back to the device, by its thread. */
static void
dev_release(struct hr_ctx *x, void *ts)
{
	struct dj *j;

	if (!x->dev_started) {
		x->dev->release(x->dev_arg, ts);
		return;
	}
	/* Without memory the state is lost, not freed: never a crash. */
	if ((j = calloc(1, sizeof *j)) == NULL)
		return;
	j->kind = DJ_RELEASE;
	j->ts = ts;
	dev_push(x, j);
}

/* A job done: its tensor goes on, unless it failed meanwhile. */
static void
dev_finish(struct hr_ctx *x, struct dj *j)
{
	struct tensor *t = j->t;
	int rc;

	t->djobs--;
	if (t->phase == T_DONE || (x->dead && j->kind != DJ_DECODE))
		return;
	/* A failed round 1 or 2 tells the others; a failed decode is ours. */
	if (j->rc != 0) {
		if (j->kind == DJ_DECODE)
			t_fail(t, j->rc, "%s", j->err);
		else
			t_abort(x, t, t->id, j->rc, j->err);
		return;
	}
	switch (j->kind) {
	case DJ_BITMAP:
		t->bits = j->bits;
		if ((rc = round1_send(x, t, j->emax)) != 0)
			t_abort(x, t, t->id, rc, "out of memory");
		trace(x, t, "queued1");
		break;
	case DJ_ENCODE:
		t->payload = j->payload;
		t->payload_bytes = j->payload_bytes;
		x->st.union_count = j->union_count;
		x->st.core_count = j->core_count;
		round2_send(x, t);
		trace(x, t, "queued2");
		break;
	case DJ_DECODE:
		t->phase = T_DONE;
		trace(x, t, "decoded");
		break;
	default:
		break;
	}
}

/*
 * The jobs done so far, in order; with wait, blocks until one is done
 * if none is.
 */
static void
dev_collect(struct hr_ctx *x, int wait)
{
	struct pollfd pfd;
	struct dj *j, *next;
	char b[64];

	if (!x->dev_started)
		return;
	if (wait) {
		pfd.fd = x->dev_pipe[0];
		pfd.events = POLLIN;
		while (poll(&pfd, 1, -1) == -1 && errno == EINTR)
			;
	}
	while (read(x->dev_pipe[0], b, sizeof b) > 0)
		;
	pthread_mutex_lock(&x->dev_mu);
	j = x->dev_done;
	x->dev_done = NULL;
	x->dev_done_tail = &x->dev_done;
	pthread_mutex_unlock(&x->dev_mu);
	for (; j != NULL; j = next) {
		next = j->next;
		dev_finish(x, j);
		free(j);
	}
}

/* Stops the thread once its jobs are done; destroys the device. */
static void
dev_stop(struct hr_ctx *x)
{
	struct dj *j;

	if (!x->dev_started) {
		if (x->dev != NULL && x->dev->destroy != NULL)
			x->dev->destroy(x->dev_arg);
		return;
	}
	dev_push(x, x->dev_stop_job);
	x->dev_stop_job = NULL;
	pthread_join(x->dev_thread, NULL);
	for (j = x->dev_done; j != NULL; j = x->dev_done) {
		x->dev_done = j->next;
		free(j);
	}
	close(x->dev_pipe[0]);
	close(x->dev_pipe[1]);
	pthread_mutex_destroy(&x->dev_mu);
	pthread_cond_destroy(&x->dev_cv);
	x->dev_started = 0;
}

/* ---- the context -------------------------------------------------------- */

static void
ctx_die(struct hr_ctx *x, int rc, const char *fmt, ...)
{
	va_list ap;
	int i;

	if (!x->dead) {
		va_start(ap, fmt);
		vsnprintf(x->err, sizeof x->err, fmt, ap);
		va_end(ap);
	}
	x->dead = rc;
	for (i = 0; i < x->nt; i++)
		if (!x->t[i]->decoding)
			t_fail(x->t[i], rc, "%s", x->err);
	while (x->qhead != NULL) {
		struct seg *s = x->qhead;

		x->qhead = s->next;
		seg_free(s);
	}
	x->qtail = &x->qhead;
}

/* Waits for the socket once; -1 once the context is dead. */
static int
progress(struct hr_ctx *x)
{
	struct pollfd pfd[2];
	int rc;

	if (x->dead)
		return -1;
	if (x->qhead != NULL && q_write(x) == -1)
		return -1;
	/* Frames in a record read already: no poll would say so. */
	if (x->c.rpos < x->c.rend)
		return r_read(x);
	pfd[0].fd = x->fd;
	pfd[0].events = POLLIN | (x->qhead != NULL ? POLLOUT : 0);
	pfd[0].revents = 0;
	/* And the device's thread, which says when a job is done. */
	pfd[1].fd = x->dev_started ? x->dev_pipe[0] : -1;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	do
		rc = poll(pfd, 2, x->o.timeout_ms);
	while (rc == -1 && errno == EINTR);
	if (rc == 0) {
		ctx_die(x, HR_ETIMEOUT, "%s: nothing heard from the aggregator "
		    "in %d ms", x->c.peer, x->o.timeout_ms);
		return -1;
	}
	if (rc == -1) {
		ctx_die(x, HR_ENET, "poll: %s", strerror(errno));
		return -1;
	}
	if (pfd[1].revents & POLLIN)
		dev_collect(x, 0);
	if (x->dead)
		return -1;
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
		if (r_read(x) == -1)
			return -1;
	if (x->qhead != NULL && (pfd[0].revents & POLLOUT))
		return q_write(x);
	/* What a job queued goes out now, not at the next wake-up. */
	if (x->qhead != NULL && (pfd[1].revents & POLLIN))
		return q_write(x);
	return 0;
}

static int
join(struct hr_ctx *x)
{
	struct hr_join j;
	struct pw w;
	int rc;

	j.world = (uint32_t)x->o.world;
	j.rank = (uint32_t)x->o.rank;
	pw_init(&w);
	hr_join_enc(&w, &j);
	if ((rc = q_msg(x, HR_MSG_JOIN, &w)) != 0)
		return rc;
	x->joined = 1;
	x->base_ticket = x->next_ticket;
	return 0;
}

int
hr_open(const struct hr_opts *o, struct hr_ctx **out, char *err,
    size_t errlen)
{
	struct hr_ctx *x;
	int rc;

	*out = NULL;
	if (o->host == NULL || o->world < 1 || o->world > HR_MAX_WORLD ||
	    o->rank < 0 || o->rank >= o->world || o->scheme < 0 ||
	    o->scheme > HR_SCHEME_FLOAT || (o->cell_bits != 32 &&
	    o->cell_bits != 64) || o->window < 1 ||
	    o->window > HR_WINDOW_MAX || o->chunk < HR_CHUNK_MIN ||
	    o->timeout_ms < 1 || o->port < 1 || o->port > 65535 ||
	    o->threads < 0 || o->threads > HC_THREADS_MAX) {
		snprintf(err, errlen, "invalid options");
		return HR_EINVAL;
	}
	if (auth_init() == -1) {
		snprintf(err, errlen, "cannot start libsodium");
		return HR_ENOMEM;
	}
	if ((x = calloc(1, sizeof *x)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return HR_ENOMEM;
	}
	x->o = *o;
	if (x->o.threads == 0)
		x->o.threads = 1;
	snprintf(x->host, sizeof x->host, "%s", o->host);
	x->o.host = x->host;
	snprintf(x->name, sizeof x->name, "%s", o->name ? o->name :
	    "hreduce");
	x->o.name = x->name;
	if (o->key != NULL)
		x->key = *o->key;
	else if (o->keyfile != NULL && o->keyfile[0] != '\0' &&
	    auth_key_load(&x->key, o->keyfile, err, errlen) == -1) {
		free(x);
		return HR_EAUTH;
	}
	x->o.key = x->key.set ? &x->key : NULL;
	x->o.keyfile = NULL;
	x->qtail = &x->qhead;
	x->fd = -1;
	if (conn_open(&x->c, o->host, o->port, x->o.key, x->name,
	    o->timeout_ms) == -1) {
		snprintf(err, errlen, "%s", x->c.err);
		rc = x->c.fail == CONN_AUTH ? HR_EAUTH : HR_ENET;
		free(x);
		return rc;
	}
	x->fd = x->c.fd;
	if (x->o.chunk > x->c.max_frame - HR_CHUNK_HDR)
		x->o.chunk = x->c.max_frame - HR_CHUNK_HDR;
	x->rcap = PROTO_HDR_LEN + HR_CHUNK_HDR + x->o.chunk + RBUF_EXTRA;
	if ((x->rb = malloc(x->rcap)) == NULL) {
		hr_close(x);
		snprintf(err, errlen, "out of memory");
		return HR_ENOMEM;
	}
	if ((rc = join(x)) != 0) {
		hr_close(x);
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	/* JOINED, or the aggregator's reason for refusing. */
	while (x->generation == 0 && progress(x) == 0)
		;
	if (x->dead) {
		snprintf(err, errlen, "%s", x->err);
		rc = x->dead;
		hr_close(x);
		return rc;
	}
	*out = x;
	return 0;
}

int
hr_open_addr(const char *addr, const char *keyfile, int world, int rank,
    int scheme, struct hr_ctx **out, char *err, size_t errlen)
{
	struct hr_opts o;
	char host[256];
	const char *why;
	int port = HR_DEFAULT_PORT;

	*out = NULL;
	if (addr == NULL || parse_hostport(addr, host, sizeof host, &port,
	    &why) == -1) {
		snprintf(err, errlen, "%s: %s", addr ? addr : "(null)",
		    addr ? why : "no address");
		return HR_EINVAL;
	}
	hr_opts_init(&o);
	o.host = host[0] ? host : "127.0.0.1";
	o.port = port;
	o.world = world;
	o.rank = rank;
	o.scheme = scheme;
	o.keyfile = keyfile;
	return hr_open(&o, out, err, errlen);
}

void
hr_close(struct hr_ctx *x)
{
	int i;

	if (x == NULL)
		return;
	if (!x->dead && x->fd != -1) {
		struct frame_hdr h;
		const uint8_t *p;

		/*
		 * BYE tells the aggregator we leave on purpose.  Then waits
		 * (a second at most) for it to close: once we return it has
		 * seen us leave, and a worker that takes our rank next cannot
		 * be taken for us.
		 */
		ctx_die(x, HR_ENET, "closed");
		x->c.timeout_ms = 1000;
		if (conn_send(&x->c, MSG_BYE, 0, 0, NULL, 0) == 0)
			while (conn_recv(&x->c, &h, &p) == 0)
				;
	}
	ctx_die(x, HR_ENET, "closed");
	/* The device's jobs for these tensors end before the tensors do. */
	for (i = 0; i < x->nt; i++)
		while (x->t[i]->djobs > 0)
			dev_collect(x, 1);
	for (i = 0; i < x->nt; i++) {
		t_free_bufs(x, x->t[i]);
		free(x->t[i]);
	}
	for (i = 0; i < x->npool; i++)
		free(x->pool[i]);
	for (i = 0; i < x->nspare; i++)
		hc_layout_free(x->spare[i]);
	if (x->dev != NULL)
		dev_stop(x);
	ZSTD_freeCCtx(x->zc);
	ZSTD_freeDCtx(x->zd);
	conn_close(&x->c);
	free(x->rb);
	free(x);
}

const char *
hr_errmsg(const struct hr_ctx *x)
{
	return x->err;
}

void
hr_get_stats(const struct hr_ctx *x, struct hr_stats *st)
{
	*st = x->st;
}

int
hr_last_scale(const struct hr_ctx *x)
{
	return x->last_scale;
}

static struct tensor *
t_by_ticket(struct hr_ctx *x, int ticket, int *at)
{
	int i;

	for (i = 0; i < x->nt; i++)
		if (x->t[i]->ticket == ticket) {
			*at = i;
			return x->t[i];
		}
	return NULL;
}

static int submit(struct hr_ctx *, float *, size_t, const struct tensor *,
    const struct tensor *);

int
hr_submit(struct hr_ctx *x, float *grad, size_t n)
{
	if (x == NULL || (grad == NULL && n > 0) || n > HC_MAX_N)
		return HR_EINVAL;
	return submit(x, grad, n, NULL, NULL);
}

int
hr_dev_attach(struct hr_ctx *x, const struct hr_dev *dev, void *arg)
{
	if (x == NULL || dev == NULL)
		return HR_EINVAL;
	if (x->dev == dev)
		return 0;
	if (x->dev != NULL)
		return ctx_err(x, HR_EINVAL, "the context has a device "
		    "already");
	x->dev = dev;
	x->dev_arg = arg;
	return 0;
}

void *
hr_dev_arg(const struct hr_ctx *x, const struct hr_dev *dev)
{
	return x != NULL && x->dev == dev ? x->dev_arg : NULL;
}

int
hr_submit_dev(struct hr_ctx *x, float *grad, size_t n, void *call)
{
	struct tensor dev;
	int rc;

	if (x == NULL || (grad == NULL && n > 0) || n > HC_MAX_N)
		return HR_EINVAL;
	if (x->dev == NULL)
		return ctx_err(x, HR_EINVAL, "no device attached");
	if (x->o.scheme != HR_SCHEME_HOMO)
		return ctx_err(x, HR_EINVAL, "scheme %s: only homo has a "
		    "codec on the device", hr_scheme_name(x->o.scheme));
	if (x->dead)
		return ctx_err(x, x->dead, "%s", x->err[0] ? x->err :
		    "context dead");
	if ((rc = dev_start(x)) != 0)
		return rc;
	memset(&dev, 0, sizeof dev);
	dev.on_dev = 1;
	dev.call = call;
	return submit(x, grad, n, NULL, &dev);
}

int
hr_reduce_raw(struct hr_ctx *x, int op, void *buf, uint64_t n, int *exponent,
    int scale)
{
	struct tensor raw;
	int ticket, rc;

	if (x == NULL || (op != HR_OP_OR && op != HR_OP_SUM) ||
	    (buf == NULL && n > 0) || n > HC_MAX_N ||
	    (op == HR_OP_OR && exponent == NULL))
		return HR_EINVAL;
	memset(&raw, 0, sizeof raw);
	raw.raw_op = op;
	raw.raw_n = n;
	raw.raw_buf = buf;
	raw.raw_exp = op == HR_OP_OR ? *exponent : 0;
	raw.raw_scale = scale;
	if ((ticket = submit(x, NULL, 0, &raw, NULL)) < 0)
		return ticket;
	if ((rc = hr_wait(x, ticket)) == 0 && op == HR_OP_OR)
		*exponent = x->last_exponent;
	return rc;
}

void
hr_rejoin(struct hr_ctx *x)
{
	x->lost = 0;
}

void
hr_get_opts(const struct hr_ctx *x, struct hr_opts *o)
{
	*o = x->o;
}

/*
 * A new tensor, or with raw a raw round, or with dev a gradient on the
 * device, into the window.
 */
static int
submit(struct hr_ctx *x, float *grad, size_t n, const struct tensor *raw,
    const struct tensor *dev)
{
	struct tensor *t;
	int rc;

	if (x->dead)
		return ctx_err(x, x->dead, "%s", x->err[0] ? x->err :
		    "context dead");
	if (x->nt >= x->o.window)
		return ctx_err(x, HR_EINVAL, "%d tensors in flight already",
		    x->nt);
	/*
	 * After a lost worker the ranks may stand at different tensors: they
	 * go on only once the caller says all are at the same point.
	 */
	if (x->lost)
		return ctx_err(x, HR_EROUND, "the group lost a worker and was "
		    "reset; call hr_rejoin once every rank is at the same "
		    "tensor");
	if (!x->joined && (rc = join(x)) != 0)
		return rc;
	if ((t = calloc(1, sizeof *t)) == NULL)
		return HR_ENOMEM;
	if (raw != NULL) {
		*t = *raw;
		t->scheme = SCHEME_RAW;
	} else {
		if (dev != NULL)
			*t = *dev;
		t->scheme = x->o.scheme;
	}
	t->ticket = ++x->next_ticket;
	t->grad = grad;
	t->n = n;
	x->t[x->nt++] = t;
	trace(x, t, "submit");
	rc = t_start(x, t);
	if (!t->on_dev)
		trace(x, t, "queued1");
	if (rc != 0) {
		/* Nothing of it was queued but perhaps its BEGIN. */
		t_abort(x, t, t->id, rc, rc == HR_ENOMEM ? "out of memory" :
		    x->err);
	}
	/* Start sending at once: the others are waiting for it. */
	if (x->qhead != NULL && q_write(x) == -1)
		return t->ticket;
	return t->ticket;
}

int
hr_wait(struct hr_ctx *x, int ticket)
{
	struct tensor *t;
	int at, rc;

	if (x == NULL || (t = t_by_ticket(x, ticket, &at)) == NULL)
		return HR_EINVAL;
	while ((t->phase != T_DONE || t->refs > 0 || t->djobs > 0) &&
	    progress(x) == 0)
		;
	/* A dead context: the device may still be at work on it. */
	while (t->djobs > 0)
		dev_collect(x, 1);
	if (t->phase != T_DONE)
		t_fail(t, x->dead ? x->dead : HR_ENET, "%s", x->err);
	/* A dead context dropped its queue: refs no longer matter. */
	rc = t->rc;
	if (rc != 0)
		snprintf(x->err, sizeof x->err, "%s", t->err);
	x->st.tensors++;
	if (rc != 0)
		x->st.failed++;
	t_free_bufs(x, t);
	free(t);
	memmove(&x->t[at], &x->t[at + 1], (size_t)(x->nt - at - 1) *
	    sizeof x->t[0]);
	x->nt--;
	return rc;
}

int
hr_allreduce(struct hr_ctx *x, float *grad, size_t n)
{
	int ticket;

	if ((ticket = hr_submit(x, grad, n)) < 0)
		return ticket;
	return hr_wait(x, ticket);
}

/*
 * Keeps the window full, in order; a tensor that cannot be submitted
 * (a context gone, a group that must be joined again) takes its place in
 * rcs with that code, and whatever is in flight is still waited for.
 */
static int
host_submit(struct hr_ctx *x, float *grad, size_t n, void *call)
{
	(void)call;
	return hr_submit(x, grad, n);
}

int
hr_allreduce_many(struct hr_ctx *x, float *const *grads, const size_t *ns,
    size_t count, int *rcs)
{
	return hr_many(x, grads, ns, count, rcs, host_submit, NULL);
}

int
hr_many(struct hr_ctx *x, float *const *grads, const size_t *ns,
    size_t count, int *rcs,
    int (*submitf)(struct hr_ctx *, float *, size_t, void *), void *call)
{
	int tickets[HR_WINDOW_MAX];
	size_t next = 0, done = 0, head = 0;
	int rc, first = 0, inflight = 0;

	if (x == NULL || (count > 0 && (grads == NULL || ns == NULL)))
		return HR_EINVAL;
	while (done < count) {
		while (next < count && inflight < x->o.window &&
		    (x->nt < x->o.window || inflight == 0)) {
			/* A failed submit holds its place as its code. */
			tickets[(head + (size_t)inflight) % HR_WINDOW_MAX] =
			    submitf(x, grads[next], ns[next], call);
			inflight++;
			next++;
		}
		rc = tickets[head] < 0 ? tickets[head] : hr_wait(x,
		    tickets[head]);
		head = (head + 1) % HR_WINDOW_MAX;
		inflight--;
		if (rcs != NULL)
			rcs[done] = rc;
		if (rc != 0 && first == 0)
			first = rc;
		done++;
	}
	return first;
}
