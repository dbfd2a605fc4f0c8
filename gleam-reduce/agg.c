/*
 * The aggregator: one group of W ranks and the streams they reduce.
 *
 * A stream is created by the first BEGIN of its id and checked against
 * every later one.  Chunk i of a merging stream is held in one buffer
 * from its first arrival; once all W have sent it, the buffer goes to
 * every member by reference (no copy per member) and is freed when the
 * last output buffer lets it go.  A failed stream stays as a tombstone
 * until every rank has begun it, so that a late BEGIN learns of the
 * failure and late chunks are dropped quietly.
 *
 * A rank whose BEGIN carries HR_BEGIN_ZSTD may send bitmap chunks as zstd
 * frames; they are inflated before they are ORed.  A merged chunk is
 * deflated once, when some rank of the stream asked for that and it
 * shrinks, and goes to those ranks that way, to the others raw.
 */
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <zstd.h>

#include "agg.h"
#include "hcodec.h"
#include "hreduce_wire.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#define TOMBSTONES_MAX	64

struct agg_member {
	struct evbuffer	*out;
	char		 name[PROTO_NAME_MAX + 1];
	int		 rank;		/* -1 until JOIN */
};

/* A chunk's bytes, shared by the output buffers that send it. */
struct cbuf {
	struct agg	*agg;
	int		 refs;
	size_t		 len;
	uint8_t		 data[];
};

/* A GATHER chunk waiting for READY. */
struct pending {
	struct pending	*next;
	uint32_t	 rank, index;
	struct cbuf	*c;
};

struct rankstate {
	int		 begun;
	uint16_t	 flags;		/* its BEGIN's */
	uint64_t	 total;
	uint64_t	 nchunks;
	uint64_t	 next;		/* chunks received */
};

struct stream {
	TAILQ_ENTRY(stream) entry;
	uint64_t	 id;
	struct hr_begin	 b;		/* the first BEGIN */
	int		 first_rank;
	int		 nbegun;
	int		 nzstd;		/* ranks that take zstd chunks */
	int		 ready;
	int		 failed;	/* a tombstone */
	uint32_t	 fail_code;
	char		 fail_text[HR_REASON_MAX + 1];
	int32_t		 exponent;
	uint64_t	 deadline;
	struct rankstate *rs;		/* world of them */
	uint64_t	 nchunks;	/* merging ops */
	/*
	 * Per chunk, grown as chunks arrive, so that what a BEGIN declares
	 * costs nothing until the bytes come.
	 */
	struct cbuf	**acc;
	uint32_t	*count;
	uint64_t	 cap;
	uint64_t	 ndone;
	struct pending	*pend, **pend_tail;
};

TAILQ_HEAD(streams, stream);

struct agg {
	struct agg_limits limits;
	int		 world;
	uint64_t	 generation;
	struct agg_member **slot;	/* HR_MAX_WORLD */
	int		 members;
	struct streams	 streams;
	unsigned	 nopen, ntomb;
	struct agg_stats stats;
	/* zstd's state, and a chunk inflated before it is merged. */
	ZSTD_CCtx	*zc;
	ZSTD_DCtx	*zd;
	uint8_t		*zin;
	size_t		 zincap;
};

static void stream_free(struct agg *, struct stream *);

struct agg *
agg_new(const struct agg_limits *lim)
{
	struct agg *a;

	if ((a = calloc(1, sizeof *a)) == NULL)
		return NULL;
	if ((a->slot = calloc(HR_MAX_WORLD, sizeof *a->slot)) == NULL) {
		free(a);
		return NULL;
	}
	a->limits = *lim;
	a->world = lim->world;
	a->generation = 1;
	TAILQ_INIT(&a->streams);
	return a;
}

void
agg_free(struct agg *a)
{
	struct stream *s;

	if (a == NULL)
		return;
	while ((s = TAILQ_FIRST(&a->streams)) != NULL)
		stream_free(a, s);
	ZSTD_freeCCtx(a->zc);
	ZSTD_freeDCtx(a->zd);
	free(a->zin);
	free(a->slot);
	free(a);
}

static struct cbuf *
cbuf_new(struct agg *a, size_t len, int zero)
{
	struct cbuf *c;

	if ((c = zero ? calloc(1, sizeof *c + len + 1) :
	    malloc(sizeof *c + len + 1)) == NULL)
		return NULL;
	c->agg = a;
	c->refs = 1;
	c->len = len;
	a->stats.buffered += len;
	return c;
}

static void
cbuf_unref(struct cbuf *c)
{
	if (--c->refs > 0)
		return;
	/* The server frees output buffers before the agg. */
	c->agg->stats.buffered -= c->len;
	free(c);
}

static void
cbuf_cleanup(const void *data, size_t len, void *arg)
{
	cbuf_unref(arg);
}

static void
frame(struct evbuffer *out, uint16_t type, struct pw *w)
{
	struct frame_hdr h = { 0, type, 0, 0 };
	uint8_t hb[PROTO_HDR_LEN];

	if (!w->bad) {
		h.len = (uint32_t)w->len;
		proto_hdr_encode(hb, &h);
		evbuffer_add(out, hb, sizeof hb);
		evbuffer_add(out, w->p, w->len);
	}
	pw_free(w);
}

/* Chunk index of rank to one member, the bytes by reference. */
static void
send_chunk(struct agg *a, struct agg_member *m, uint64_t id, uint32_t index,
    uint32_t rank, struct cbuf *c)
{
	struct frame_hdr h = { 0, HR_MSG_CHUNK, 0, 0 };
	uint8_t hb[PROTO_HDR_LEN + HR_CHUNK_HDR];

	h.len = (uint32_t)(HR_CHUNK_HDR + c->len);
	proto_hdr_encode(hb, &h);
	hr_chunk_hdr_enc(hb + PROTO_HDR_LEN, id, index, rank);
	evbuffer_add(m->out, hb, sizeof hb);
	if (c->len == 0)
		return;
	c->refs++;
	if (evbuffer_add_reference(m->out, c->data, c->len, cbuf_cleanup,
	    c) == -1)
		c->refs--;
	a->stats.bytes_out += c->len;
}

static void
send_fail(struct agg_member *m, uint64_t id, uint32_t code, const char *text)
{
	struct hr_fail_msg f;
	struct pw w;

	memset(&f, 0, sizeof f);
	f.id = id;
	f.code = code;
	snprintf(f.text, sizeof f.text, "%s", text);
	pw_init(&w);
	hr_fail_enc(&w, &f);
	frame(m->out, HR_MSG_FAIL, &w);
}

static void
stream_drop_data(struct agg *a, struct stream *s)
{
	struct pending *p;
	uint64_t i;

	if (s->acc != NULL)
		for (i = 0; i < s->cap; i++)
			if (s->acc[i] != NULL)
				cbuf_unref(s->acc[i]);
	free(s->acc);
	free(s->count);
	s->acc = NULL;
	s->count = NULL;
	s->cap = 0;
	while ((p = s->pend) != NULL) {
		s->pend = p->next;
		cbuf_unref(p->c);
		free(p);
	}
	s->pend_tail = &s->pend;
}

static void
stream_free(struct agg *a, struct stream *s)
{
	TAILQ_REMOVE(&a->streams, s, entry);
	if (s->failed)
		a->ntomb--;
	else
		a->nopen--;
	stream_drop_data(a, s);
	free(s->rs);
	free(s);
}

static struct stream *
stream_find(struct agg *a, uint64_t id)
{
	struct stream *s;

	TAILQ_FOREACH(s, &a->streams, entry)
		if (s->id == id)
			return s;
	return NULL;
}

/* Drops the oldest tombstones beyond the limit. */
static void
tombstones_trim(struct agg *a)
{
	struct stream *s, *next;

	for (s = TAILQ_FIRST(&a->streams); s != NULL &&
	    a->ntomb > TOMBSTONES_MAX; s = next) {
		next = TAILQ_NEXT(s, entry);
		if (s->failed)
			stream_free(a, s);
	}
}

/* Fails s at every member and leaves a tombstone. */
static void
stream_fail(struct agg *a, struct stream *s, uint32_t code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
stream_fail(struct agg *a, struct stream *s, uint32_t code,
    const char *fmt, ...)
{
	char text[HR_REASON_MAX + 1];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	s->fail_code = code;
	snprintf(s->fail_text, sizeof s->fail_text, "%s", text);
	log_info("stream %llu failed: %s: %s", (unsigned long long)s->id,
	    hr_fail_name(code), text);
	for (r = 0; r < a->world; r++)
		if (a->slot[r] != NULL)
			send_fail(a->slot[r], s->id, code, text);
	stream_drop_data(a, s);
	s->failed = 1;
	a->nopen--;
	a->ntomb++;
	a->stats.failed++;
	if (s->nbegun == a->world)
		stream_free(a, s);
	else
		tombstones_trim(a);
}

/*
 * A member left: every stream fails at the others, who leave the group
 * too and must JOIN again, so that stream ids start afresh for all.
 */
static void
group_reset(struct agg *a, int lost_rank, const char *lost_name,
    const char *how)
{
	struct stream *s;
	char text[HR_REASON_MAX + 1];
	int r;

	snprintf(text, sizeof text, "worker rank %d (%s) %s; join again",
	    lost_rank, lost_name, how);
	log_info("group: %s", text);
	while ((s = TAILQ_FIRST(&a->streams)) != NULL) {
		if (!s->failed)
			a->stats.failed++;
		stream_free(a, s);
	}
	for (r = 0; r < HR_MAX_WORLD; r++) {
		if (a->slot[r] == NULL)
			continue;
		send_fail(a->slot[r], 0, HR_FAIL_LOST, text);
		a->slot[r]->rank = -1;
		a->slot[r] = NULL;
	}
	a->members = 0;
	a->world = a->limits.world;
	a->generation++;
}

struct agg_member *
agg_member_new(struct agg *a, struct evbuffer *out, const char *name)
{
	struct agg_member *m;

	if ((m = calloc(1, sizeof *m)) == NULL)
		return NULL;
	m->out = out;
	m->rank = -1;
	snprintf(m->name, sizeof m->name, "%.*s", PROTO_NAME_MAX, name);
	return m;
}

void
agg_member_free(struct agg *a, struct agg_member *m)
{
	int rank;

	if (m == NULL)
		return;
	if (m->rank >= 0) {
		rank = m->rank;
		a->slot[rank] = NULL;
		m->rank = -1;
		a->members--;
		group_reset(a, rank, m->name, "left the group");
	}
	free(m);
}

static int
perr(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
perr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int
on_join(struct agg *a, struct agg_member *m, const uint8_t *p, size_t len,
    char *err, size_t errlen)
{
	struct hr_join j;
	struct pw w;

	if (hr_join_dec(p, len, &j) == -1)
		return perr(err, errlen, "bad JOIN");
	if (m->rank >= 0)
		return perr(err, errlen, "JOIN twice");
	if (a->world == 0)
		a->world = (int)j.world;
	if ((int)j.world != a->world)
		return perr(err, errlen, "group of %d workers, not %u",
		    a->world, j.world);
	if (a->slot[j.rank] != NULL)
		return perr(err, errlen, "rank %u taken by %s", j.rank,
		    a->slot[j.rank]->name);
	m->rank = (int)j.rank;
	a->slot[j.rank] = m;
	a->members++;
	log_debug("group: %s joined as rank %u of %u", m->name, j.rank,
	    j.world);
	pw_init(&w);
	hr_joined_enc(&w, a->generation);
	frame(m->out, HR_MSG_JOINED, &w);
	return 0;
}

/* READY to all; -1 if s failed instead (and is gone). */
static int
send_ready(struct agg *a, struct stream *s)
{
	struct hr_ready *rd;
	struct pw w;
	int r;

	if ((rd = calloc(1, sizeof *rd)) == NULL) {
		stream_fail(a, s, HR_FAIL_LIMIT, "aggregator out of memory");
		return -1;
	}
	rd->id = s->id;
	rd->exponent = s->exponent;
	rd->world = (uint32_t)a->world;
	for (r = 0; r < a->world; r++)
		rd->total[r] = s->rs[r].total;
	for (r = 0; r < a->world; r++) {
		pw_init(&w);
		hr_ready_enc(&w, rd);
		frame(a->slot[r]->out, HR_MSG_READY, &w);
	}
	free(rd);
	s->ready = 1;
	return 0;
}

/* Everything merged and sent, or relayed: DONE to all. */
static void
stream_maybe_done(struct agg *a, struct stream *s)
{
	struct pw w;
	int r;

	if (!s->ready || s->failed)
		return;
	if (s->b.op == HR_OP_GATHER) {
		for (r = 0; r < a->world; r++)
			if (s->rs[r].next < s->rs[r].nchunks)
				return;
	} else if (s->ndone < s->nchunks)
		return;
	for (r = 0; r < a->world; r++) {
		pw_init(&w);
		hr_done_enc(&w, s->id);
		frame(a->slot[r]->out, HR_MSG_DONE, &w);
	}
	a->stats.rounds++;
	stream_free(a, s);
}

/* A GATHER chunk of rank goes to every other member. */
static void
relay(struct agg *a, struct stream *s, uint32_t rank, uint32_t index,
    struct cbuf *c)
{
	int r;

	for (r = 0; r < a->world; r++)
		if ((uint32_t)r != rank)
			send_chunk(a, a->slot[r], s->id, index, rank, c);
}

/*
 * A new stream as the first BEGIN (or an ABORT, b NULL) declares it; NULL
 * (m told why) when over the limits.
 */
static struct stream *
stream_new(struct agg *a, struct agg_member *m, const struct hr_begin *b)
{
	struct stream *s;
	uint64_t id = b != NULL ? b->id : 0;

	if (a->nopen >= a->limits.max_streams) {
		send_fail(m, id, HR_FAIL_LIMIT, "too many streams open");
		return NULL;
	}
	if ((s = calloc(1, sizeof *s)) == NULL ||
	    (s->rs = calloc((size_t)a->world, sizeof *s->rs)) == NULL) {
		free(s);
		send_fail(m, id, HR_FAIL_LIMIT, "aggregator out of memory");
		return NULL;
	}
	if (b != NULL)
		s->b = *b;
	s->id = id;
	s->first_rank = m->rank;
	s->exponent = HC_EXP_ZERO;
	s->pend_tail = &s->pend;
	s->deadline = now_ns() + (uint64_t)(a->limits.timeout * 1e9);
	TAILQ_INSERT_TAIL(&a->streams, s, entry);
	a->nopen++;
	if (b != NULL && b->op != HR_OP_GATHER)
		s->nchunks = hr_nchunks(b->total, b->chunk);
	return s;
}

static int
on_begin(struct agg *a, struct agg_member *m, const uint8_t *p, size_t len,
    char *err, size_t errlen)
{
	struct hr_begin b;
	struct stream *s;
	struct pending *pd;
	const char *why;
	int r = m->rank;

	if (hr_begin_dec(p, len, &b) == -1)
		return perr(err, errlen, "bad BEGIN");
	if (hr_begin_check(&b, a->limits.max_frame, &why) == -1)
		return perr(err, errlen, "BEGIN of stream %llu: %s",
		    (unsigned long long)b.id, why);
	if (r < 0)
		/* Sent before this member learnt of a reset: dropped. */
		return 0;
	if ((s = stream_find(a, b.id)) == NULL &&
	    (s = stream_new(a, m, &b)) == NULL)
		return 0;
	if (s->rs[r].begun)
		return perr(err, errlen, "BEGIN of stream %llu twice",
		    (unsigned long long)b.id);
	s->rs[r].begun = 1;
	s->rs[r].flags = b.flags;
	s->nzstd += (b.flags & HR_BEGIN_ZSTD) != 0;
	s->rs[r].total = b.total;
	s->rs[r].nchunks = hr_nchunks(b.total, b.chunk);
	s->nbegun++;
	if (s->failed) {
		send_fail(m, s->id, s->fail_code, s->fail_text);
		if (s->nbegun == a->world)
			stream_free(a, s);
		return 0;
	}
	if (b.op != s->b.op || b.cell_bits != s->b.cell_bits ||
	    b.n != s->b.n || b.chunk != s->b.chunk ||
	    b.scale != s->b.scale ||
	    (b.op != HR_OP_GATHER && b.total != s->b.total)) {
		stream_fail(a, s, HR_FAIL_MISMATCH, "rank %d sends %s of n "
		    "%llu, %llu bytes in chunks of %u, scale %d, %d-bit "
		    "cells; rank %d sends %s of n %llu, %llu bytes in chunks "
		    "of %u, scale %d, %d-bit cells", s->first_rank,
		    hr_op_name(s->b.op), (unsigned long long)s->b.n,
		    (unsigned long long)s->b.total, s->b.chunk, s->b.scale,
		    s->b.cell_bits, r, hr_op_name(b.op),
		    (unsigned long long)b.n, (unsigned long long)b.total,
		    b.chunk, b.scale, b.cell_bits);
		return 0;
	}
	if (b.op == HR_OP_OR && b.exponent > s->exponent)
		s->exponent = b.exponent;
	if (s->nbegun < a->world)
		return 0;
	if (send_ready(a, s) == -1)
		return 0;
	while ((pd = s->pend) != NULL) {
		s->pend = pd->next;
		relay(a, s, pd->rank, pd->index, pd->c);
		cbuf_unref(pd->c);
		free(pd);
	}
	s->pend_tail = &s->pend;
	stream_maybe_done(a, s);
	return 0;
}

/* Adds in's floats to acc's, which sits aligned in a cbuf. */
static void
fsum(uint8_t *acc, const uint8_t *in, size_t len)
{
	float x, y;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		memcpy(&x, acc + i, 4);
		memcpy(&y, in + i, 4);
		x += y;
		memcpy(acc + i, &x, 4);
	}
}

/* Room for chunk index in acc and count. */
static int
stream_grow(struct stream *s, uint64_t index)
{
	uint64_t cap = s->cap ? s->cap : 16;
	struct cbuf **acc;
	uint32_t *count;

	while (cap <= index)
		cap *= 2;
	if (cap > s->nchunks)
		cap = s->nchunks;
	if ((acc = realloc(s->acc, cap * sizeof *acc)) == NULL)
		return -1;
	s->acc = acc;
	if ((count = realloc(s->count, cap * sizeof *count)) == NULL)
		return -1;
	s->count = count;
	memset(acc + s->cap, 0, (cap - s->cap) * sizeof *acc);
	memset(count + s->cap, 0, (cap - s->cap) * sizeof *count);
	s->cap = cap;
	return 0;
}

/* Bytes a merging op works in: chunks never split one. */
static size_t
cell_size(const struct stream *s)
{
	switch (s->b.op) {
	case HR_OP_SUM:
		return s->b.cell_bits / 8;
	case HR_OP_FSUM:
		return 4;
	}
	return 1;
}

/* Merges ncells whole cells of in into acc. */
static void
merge_cells(const struct stream *s, uint8_t *acc, const uint8_t *in,
    size_t ncells)
{
	size_t i;

	switch (s->b.op) {
	case HR_OP_OR:
		for (i = 0; i < ncells; i++)
			acc[i] |= in[i];
		break;
	case HR_OP_SUM:
		hc_merge_sum(acc, ncells, in, ncells, s->b.cell_bits);
		break;
	case HR_OP_FSUM:
		fsum(acc, in, 4 * ncells);
		break;
	}
}

#define MERGE_VECS	64	/* evbuffer pieces merged without a pullup */

/*
 * Merges chunk ch into its buffer, its bytes at ch->data or, with eb, the
 * first ch->len bytes of eb (not drained): piece by piece as the input
 * buffer holds them, with a cell split between two pieces put together
 * first, so that no byte is copied before it is merged.  -1 if the bytes
 * are not acceptable: a bitmap's spare bits set.
 */
static int
merge(struct stream *s, struct cbuf *c, const struct hr_chunk *ch,
    struct evbuffer *eb, const char **why)
{
	struct evbuffer_iovec v[MERGE_VECS];
	const uint8_t *p;
	uint8_t part[8], last;
	size_t cs = cell_size(s), np = 0, off = 0, left = ch->len, sl, take;
	uint64_t nbits;
	int nv, i;

	if (eb == NULL) {
		v[0].iov_base = (void *)ch->data;
		v[0].iov_len = ch->len;
		nv = 1;
	} else if ((nv = evbuffer_peek(eb, (ssize_t)ch->len, NULL, v,
	    MERGE_VECS)) > MERGE_VECS) {
		/* Scattered: one contiguous copy after all. */
		if ((p = evbuffer_pullup(eb, (ssize_t)ch->len)) == NULL) {
			*why = "aggregator out of memory";
			return -1;
		}
		v[0].iov_base = (void *)p;
		v[0].iov_len = ch->len;
		nv = 1;
	}
	if (s->b.op == HR_OP_OR) {
		nbits = s->b.n - (uint64_t)ch->index * s->b.chunk * 8;
		if (nbits > (uint64_t)s->b.chunk * 8)
			nbits = (uint64_t)s->b.chunk * 8;
		if (hc_bitmap_bytes(nbits) != ch->len) {
			*why = hc_strerror(HC_ESIZE);
			return -1;
		}
		if (nbits % 8 != 0) {
			for (i = 0, off = 0; off + v[i].iov_len < ch->len; i++)
				off += v[i].iov_len;
			last = ((const uint8_t *)v[i].iov_base)[ch->len - 1 -
			    off];
			if ((last >> (nbits % 8)) != 0) {
				*why = hc_strerror(HC_EFORMAT);
				return -1;
			}
			off = 0;
		}
	}
	for (i = 0; i < nv && left > 0; i++) {
		p = v[i].iov_base;
		sl = v[i].iov_len < left ? v[i].iov_len : left;
		left -= sl;
		if (np > 0) {
			take = cs - np < sl ? cs - np : sl;
			memcpy(part + np, p, take);
			np += take;
			p += take;
			sl -= take;
			if (np < cs)
				continue;
			merge_cells(s, c->data + off, part, 1);
			off += cs;
			np = 0;
		}
		merge_cells(s, c->data + off, p, sl / cs);
		off += sl - sl % cs;
		p += sl - sl % cs;
		if ((np = sl % cs) > 0)
			memcpy(part, p, np);
	}
	return 0;
}

/* The first ch->len bytes of the chunk into dst. */
static void
chunk_copy(const struct hr_chunk *ch, struct evbuffer *eb, uint8_t *dst)
{
	if (ch->len == 0)
		return;
	if (eb != NULL)
		evbuffer_copyout(eb, dst, ch->len);
	else
		memcpy(dst, ch->data, ch->len);
}

/*
 * Chunk ch (its bytes at ch->data, or the first ch->len of eb) as zstd
 * frames of exactly want bytes in all, inflated into a->zin; ch then
 * points there.  -1 (why says it) if they are anything else.
 */
static int
chunk_inflate(struct agg *a, struct hr_chunk *ch, struct evbuffer *eb,
    size_t want, const char **why)
{
	const uint8_t *p = ch->data;
	uint8_t *nz;
	size_t n;

	if (a->zd == NULL && (a->zd = ZSTD_createDCtx()) == NULL)
		return *why = "aggregator out of memory", -1;
	if (a->zincap < want) {
		if ((nz = realloc(a->zin, want)) == NULL)
			return *why = "aggregator out of memory", -1;
		a->zin = nz;
		a->zincap = want;
	}
	if (eb != NULL && (p = evbuffer_pullup(eb, (ssize_t)ch->len)) ==
	    NULL)
		return *why = "aggregator out of memory", -1;
	n = ZSTD_decompressDCtx(a->zd, a->zin, want, p, ch->len);
	if (ZSTD_isError(n) || n != want)
		return *why = "not zstd frames of the chunk's length", -1;
	ch->data = a->zin;
	ch->len = want;
	return 0;
}

/* Merged chunk c deflated, or NULL where that does not shrink it. */
static struct cbuf *
chunk_deflate(struct agg *a, const struct cbuf *c)
{
	struct cbuf *z;
	size_t n;

	if (c->len < 64)
		return NULL;
	if (a->zc == NULL && (a->zc = ZSTD_createCCtx()) == NULL)
		return NULL;
	if ((z = cbuf_new(a, c->len - 1, 0)) == NULL)
		return NULL;
	n = ZSTD_compressCCtx(a->zc, z->data, z->len, c->data, c->len, 1);
	if (ZSTD_isError(n)) {
		cbuf_unref(z);
		return NULL;
	}
	/* The tail is never read; buffered counts what is held. */
	a->stats.buffered -= z->len - n;
	z->len = n;
	return z;
}

/* A chunk whose bytes are at ch.data, or the first ch.len of eb. */
static int
on_chunk(struct agg *a, struct agg_member *m, struct hr_chunk ch,
    struct evbuffer *eb)
{
	struct stream *s;
	struct rankstate *rs;
	struct pending *pd;
	struct cbuf *c, *z;
	const char *why;
	uint64_t want;
	int r = m->rank, first, i;

	if (r < 0 || (s = stream_find(a, ch.id)) == NULL || s->failed)
		return 0;	/* of a stream that failed: dropped */
	a->stats.bytes_in += ch.len;
	rs = &s->rs[r];
	if (!rs->begun) {
		stream_fail(a, s, HR_FAIL_MALFORMED, "rank %d sent a chunk "
		    "of stream %llu before BEGIN", r,
		    (unsigned long long)s->id);
		return 0;
	}
	if (ch.index != rs->next || ch.index >= rs->nchunks || ch.rank != 0) {
		stream_fail(a, s, HR_FAIL_MALFORMED, "rank %d sent chunk %u "
		    "(rank field %u) of stream %llu where chunk %llu of %llu "
		    "was due", r, ch.index, ch.rank, (unsigned long long)s->id,
		    (unsigned long long)rs->next,
		    (unsigned long long)rs->nchunks);
		return 0;
	}
	want = rs->total - (uint64_t)ch.index * s->b.chunk;
	if (want > s->b.chunk)
		want = s->b.chunk;
	if (ch.len < want && (rs->flags & HR_BEGIN_ZSTD)) {
		if (a->stats.buffered + want > a->limits.max_bytes) {
			stream_fail(a, s, HR_FAIL_LIMIT, "aggregator holds %llu "
			    "bytes of chunks, its limit", (unsigned long long)
			    a->stats.buffered);
			return 0;
		}
		if (chunk_inflate(a, &ch, eb, (size_t)want, &why) == -1) {
			stream_fail(a, s, HR_FAIL_MALFORMED, "rank %d, chunk "
			    "%u of stream %llu: %s", r, ch.index,
			    (unsigned long long)s->id, why);
			return 0;
		}
		eb = NULL;	/* ch is a->zin's bytes now */
	} else if (ch.len != want) {
		stream_fail(a, s, HR_FAIL_MALFORMED, "rank %d sent %zu bytes "
		    "as chunk %u of stream %llu, not %llu", r, ch.len,
		    ch.index, (unsigned long long)s->id,
		    (unsigned long long)want);
		return 0;
	}
	if (a->stats.buffered + ch.len > a->limits.max_bytes) {
		stream_fail(a, s, HR_FAIL_LIMIT, "aggregator holds %llu bytes "
		    "of chunks, its limit", (unsigned long long)
		    a->stats.buffered);
		return 0;
	}
	rs->next++;

	if (s->b.op == HR_OP_GATHER) {
		if ((c = cbuf_new(a, ch.len, 0)) == NULL)
			goto nomem;
		chunk_copy(&ch, eb, c->data);
		if (s->ready)
			relay(a, s, (uint32_t)r, ch.index, c);
		else {
			if ((pd = calloc(1, sizeof *pd)) == NULL) {
				cbuf_unref(c);
				goto nomem;
			}
			pd->rank = (uint32_t)r;
			pd->index = ch.index;
			pd->c = c;
			*s->pend_tail = pd;
			s->pend_tail = &pd->next;
			return 0;
		}
		cbuf_unref(c);
		stream_maybe_done(a, s);
		return 0;
	}

	if (ch.index >= s->cap && stream_grow(s, ch.index) == -1)
		goto nomem;
	first = s->acc[ch.index] == NULL;
	if (first && (s->acc[ch.index] = cbuf_new(a, ch.len,
	    s->b.op == HR_OP_OR)) == NULL)
		goto nomem;
	c = s->acc[ch.index];
	if (first && s->b.op != HR_OP_OR)
		chunk_copy(&ch, eb, c->data);
	else if (merge(s, c, &ch, eb, &why) == -1) {
		stream_fail(a, s, HR_FAIL_MALFORMED, "rank %d, chunk %u of "
		    "stream %llu: %s", r, ch.index,
		    (unsigned long long)s->id, why);
		return 0;
	}
	if (++s->count[ch.index] < (uint32_t)a->world)
		return 0;
	/* All W are in, so all W began: READY has gone out. */
	z = s->nzstd > 0 ? chunk_deflate(a, c) : NULL;
	for (i = 0; i < a->world; i++)
		send_chunk(a, a->slot[i], s->id, ch.index, 0, z != NULL &&
		    (s->rs[i].flags & HR_BEGIN_ZSTD) ? z : c);
	if (z != NULL)
		cbuf_unref(z);
	cbuf_unref(c);
	s->acc[ch.index] = NULL;
	s->ndone++;
	stream_maybe_done(a, s);
	return 0;
nomem:
	stream_fail(a, s, HR_FAIL_LIMIT, "aggregator out of memory");
	return 0;
}

static int
on_abort(struct agg *a, struct agg_member *m, const uint8_t *p, size_t len,
    char *err, size_t errlen)
{
	struct hr_abort ab;
	struct stream *s;

	if (hr_abort_dec(p, len, &ab) == -1)
		return perr(err, errlen, "bad ABORT");
	if (m->rank < 0 || ab.id == 0)
		return 0;
	if ((s = stream_find(a, ab.id)) == NULL) {
		/* No one began it yet: a tombstone tells them when they do. */
		if ((s = stream_new(a, m, NULL)) == NULL)
			return 0;
		s->id = ab.id;
	}
	if (!s->rs[m->rank].begun) {
		s->rs[m->rank].begun = 1;
		s->nbegun++;
	}
	if (s->failed) {
		if (s->nbegun == a->world)
			stream_free(a, s);
		return 0;
	}
	stream_fail(a, s, HR_FAIL_ABORT, "rank %d: %s", m->rank, ab.text);
	return 0;
}

int
agg_input(struct agg *a, struct agg_member *m, uint16_t type,
    const uint8_t *p, size_t len, char *err, size_t errlen)
{
	struct hr_chunk ch;

	switch (type) {
	case HR_MSG_JOIN:
		return on_join(a, m, p, len, err, errlen);
	case HR_MSG_BEGIN:
		return on_begin(a, m, p, len, err, errlen);
	case HR_MSG_CHUNK:
		if (hr_chunk_dec(p, len, &ch) == -1)
			return perr(err, errlen, "bad CHUNK");
		return on_chunk(a, m, ch, NULL);
	case HR_MSG_ABORT:
		return on_abort(a, m, p, len, err, errlen);
	}
	return perr(err, errlen, "%s is not for the aggregator",
	    hr_msg_name(type));
}

int
agg_input_chunk(struct agg *a, struct agg_member *m,
    const uint8_t hdr[HR_CHUNK_HDR], struct evbuffer *in, size_t len)
{
	struct hr_chunk ch;

	hr_chunk_dec(hdr, HR_CHUNK_HDR, &ch);
	ch.data = NULL;
	ch.len = len;
	return on_chunk(a, m, ch, in);
}

void
agg_expire(struct agg *a, uint64_t now)
{
	struct stream *s, *next;
	char late[128];
	size_t off;
	int r;

	for (s = TAILQ_FIRST(&a->streams); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		if (s->failed || now < s->deadline)
			continue;
		late[0] = '\0';
		for (r = 0, off = 0; r < a->world && off < sizeof late - 16;
		    r++)
			if (!s->rs[r].begun || s->rs[r].next < s->rs[r].nchunks)
				off += (size_t)snprintf(late + off,
				    sizeof late - off, "%s%d", off ? "," : "",
				    r);
		stream_fail(a, s, HR_FAIL_TIMEOUT, "stream %llu not complete "
		    "after %.3g s; waiting for rank %s",
		    (unsigned long long)s->id, a->limits.timeout, late);
		next = TAILQ_FIRST(&a->streams);	/* s may be gone */
	}
}

void
agg_stats(const struct agg *a, struct agg_stats *st)
{
	*st = a->stats;
	st->members = a->members;
	st->world = a->world;
	st->generation = a->generation;
}
