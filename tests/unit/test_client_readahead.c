/*
 * Unit tests for the client's reads ahead (lib/client/readahead.c): a copy
 * after the same synchronization twice makes the third send a read beside
 * it; the copy takes the read's bytes (or a part of them) where the
 * window holds; the source predicted follows a stride and a ring of
 * buffers learnt once round; a read no copy followed unconfirms its rule;
 * another copy's size learns afresh; no read of memory that is not the
 * device's, over GLEAM_READ_AHEAD's bytes, under GLEAM_SYNC, or out of
 * mapped memory; no answer once anything else was queued; and the least
 * lately used rule of more than RULES goes.  The
 * transport is a fake: a read's reply is the fake device's bytes at the
 * time of the read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/client/readahead.c"
#include "t.h"

#define DEV_BASE	0x100000ull
#define DEV_SIZE	(1u << 20)

static uint8_t	 dev[DEV_SIZE];		/* the fake device's memory */
static int	 sync_on, window_ok = 1, nreads;
static CUdeviceptr last_read, mapped_lo, mapped_hi;
static size_t	 last_n;
static uint64_t	 q;

int
rsync_mode(void)
{
	return sync_on;
}

int
capture_any(void)
{
	return 0;
}

int
mem_is_device(CUdeviceptr p, size_t *base, size_t *size)
{
	if (p < DEV_BASE || p >= DEV_BASE + DEV_SIZE)
		return 0;
	*base = DEV_BASE;
	*size = DEV_SIZE;
	return 1;
}

int
mapped_overlaps(CUdeviceptr p, size_t n)
{
	return p < mapped_hi && mapped_lo < p + n;
}

CUresult
rsend(uint16_t type, const struct rpc_val *in, int flags, struct rwait *w)
{
	if (type != R_MEM_DTOH || !(flags & RP_AHEAD) || w == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	nreads++;
	last_read = in[3].u;
	last_n = in[4].u;
	w->qstart = q;
	w->qend = ++q;
	w->epoch = q;
	return CUDA_SUCCESS;
}

CUresult
rwait(struct rwait *w, struct rpc_val *out, void **keep)
{
	(void)w;
	*keep = malloc(last_n);
	memcpy(*keep, dev + (last_read - DEV_BASE), last_n);
	out[0].p = *keep;
	out[0].len = (uint32_t)last_n;
	return CUDA_SUCCESS;
}

/* The window holds while nothing else was queued (q: the fake's queue
 * position and epoch in one). */
int
rahead_ok(uint64_t ctx, uint64_t sid, uint64_t epoch, uint64_t qq)
{
	(void)ctx;
	(void)sid;
	return window_ok && epoch == qq && qq == q;
}

/* A synchronization of stream sid (key), reads ahead around it; the
 * number of reads it sent. */
static int
sync_of(uint64_t sid)
{
	struct rpc_val in[2];
	struct rahead ra;
	uint64_t mark;
	int n0 = nreads;

	in[0].u = 7;
	in[1].u = sid;
	rahead_before(R_STREAM_SYNC, in, &ra);
	q++;			/* the synchronization, queued: a new window */
	rahead_send(&ra);
	mark = q;
	rahead_end(&ra, 1, &mark);
	rahead_waited(R_STREAM_SYNC, in);
	return nreads - n0;
}

/* The device writes v at src: n bytes. */
static void
dev_fill(CUdeviceptr src, size_t n, uint8_t v)
{
	memset(dev + (src - DEV_BASE), v, n);
}

/* A step: a synchronization, the device's result v at src, a copy of it:
 * whether the copy was taken, *sent the reads. */
static int
step(uint64_t sid, CUdeviceptr src, size_t n, uint8_t v, int *sent)
{
	uint8_t buf[4096];

	dev_fill(src, n, v);
	*sent = sync_of(sid);
	memset(buf, 0, sizeof buf);
	if (!rahead_copy(7, 100, buf, src, n))
		return 0;
	return buf[0] == v && buf[n - 1] == v;
}

int
main(void)
{
	CUdeviceptr a = DEV_BASE + 4096, r[5];
	uint64_t reads, bytes, hits;
	uint8_t buf[64];
	int sent, i, k;

	unsetenv("GLEAM_READ_AHEAD");

	/* Learnt twice, read the third time, taken. */
	CHECK(step(10, a, 256, 1, &sent) == 0 && sent == 0);
	CHECK(step(10, a, 256, 2, &sent) == 0 && sent == 0);
	CHECK(step(10, a, 256, 3, &sent) == 1 && sent == 1);
	CHECK(last_read == a && last_n == 256);
	CHECK(step(10, a, 256, 4, &sent) == 1 && sent == 1);

	/* The window broken: read, not taken; the copy confirms the rule,
	 * so the next step reads again. */
	window_ok = 0;
	CHECK(step(10, a, 256, 5, &sent) == 0 && sent == 1);
	window_ok = 1;
	CHECK(step(10, a, 256, 6, &sent) == 1 && sent == 1);

	/* A part of the bytes read: taken, at its place. */
	dev_fill(a, 256, 9);
	dev[a - DEV_BASE + 100] = 0x77;
	CHECK(sync_of(10) == 1);
	CHECK(rahead_copy(7, 100, buf, a + 100, 16) == 1 && buf[0] == 0x77 &&
	    buf[1] == 9);
	/* Another context, or bytes outside the read: not taken. */
	CHECK(rahead_copy(8, 100, buf, a, 16) == 0);
	CHECK(rahead_copy(7, 100, buf, a + 250, 16) == 0);

	/* A read no copy followed: unconfirmed, learnt again twice. */
	CHECK(sync_of(10) == 1);
	CHECK(sync_of(10) == 0);
	CHECK(step(10, a, 256, 10, &sent) == 0 && sent == 0);
	CHECK(step(10, a, 256, 11, &sent) == 0 && sent == 0);
	CHECK(step(10, a, 256, 12, &sent) == 1 && sent == 1);

	/* A smaller copy is a part of the bytes read (taken); a larger one
	 * is learnt afresh. */
	CHECK(step(10, a, 128, 13, &sent) == 1 && sent == 1);
	CHECK(step(10, a, 512, 14, &sent) == 0 && sent == 1);
	CHECK(step(10, a, 512, 15, &sent) == 0 && sent == 0);
	CHECK(step(10, a, 512, 16, &sent) == 1 && sent == 1 && last_n == 512);

	/* A stride: the next buffer each step, read once it held twice. */
	for (i = 0; i < 5; i++)
		r[i] = DEV_BASE + 65536 + (CUdeviceptr)i * 8192;
	CHECK(step(20, r[0], 64, 20, &sent) == 0);
	CHECK(step(20, r[1], 64, 21, &sent) == 0);
	CHECK(step(20, r[2], 64, 22, &sent) == 0 && sent == 0);
	CHECK(step(20, r[3], 64, 23, &sent) == 1 && last_read == r[3]);
	CHECK(step(20, r[4], 64, 24, &sent) == 1 && last_read == r[4]);
	/* Round the ring: the first buffer again, then each next known. */
	CHECK(step(20, r[0], 64, 25, &sent) == 0);
	for (k = 0; k < 10; k++) {
		i = (k + 1) % 5;
		CHECK(step(20, r[i], 64, (uint8_t)(30 + k), &sent) == 1 &&
		    last_read == r[i]);
	}
	/* In another order: the old successors read (unused) once round,
	 * then the new ones known. */
	{
		static const int order[5] = { 3, 1, 4, 2, 0 };
		int took = 0;

		for (k = 0; k < 5; k++)
			took += step(20, r[order[k]], 64, (uint8_t)(50 + k),
			    &sent);
		CHECK(took == 0);	/* each read the old successor */
		for (k = 0; k < 10; k++)
			CHECK(step(20, r[order[k % 5]], 64, (uint8_t)(60 + k),
			    &sent) == 1);
	}

	/* A prediction past the device's memory is not read. */
	{
		CUdeviceptr e = DEV_BASE + DEV_SIZE - 3 * 4096;

		CHECK(step(30, e, 64, 1, &sent) == 0);
		CHECK(step(30, e + 4096, 64, 2, &sent) == 0);
		CHECK(step(30, e + 8192, 64, 3, &sent) == 0 && sent == 0);
		CHECK(sync_of(30) == 0);	/* e + 12288: the end */
	}

	/* Mapped memory is never answered. */
	CHECK(step(40, a, 64, 1, &sent) == 0);
	CHECK(step(40, a, 64, 2, &sent) == 0);
	mapped_lo = a;
	mapped_hi = a + 64;
	CHECK(step(40, a, 64, 3, &sent) == 0 && sent == 1);
	mapped_lo = mapped_hi = 0;

	/* Over GLEAM_READ_AHEAD's bytes, or under GLEAM_SYNC: no read. */
	setenv("GLEAM_READ_AHEAD", "100", 1);
	ra_max = UINT64_MAX;
	CHECK(step(50, a, 128, 1, &sent) == 0);
	CHECK(step(50, a, 128, 2, &sent) == 0);
	CHECK(step(50, a, 128, 3, &sent) == 0 && sent == 0);
	CHECK(step(50, a, 64, 4, &sent) == 0);
	CHECK(step(50, a, 64, 5, &sent) == 0);
	CHECK(step(50, a, 64, 6, &sent) == 1 && sent == 1);
	setenv("GLEAM_READ_AHEAD", "0", 1);
	ra_max = UINT64_MAX;
	CHECK(step(50, a, 64, 7, &sent) == 0 && sent == 0);
	unsetenv("GLEAM_READ_AHEAD");
	ra_max = UINT64_MAX;
	CHECK(step(50, a, 64, 8, &sent) == 1 && sent == 1);
	sync_on = 1;
	CHECK(step(50, a, 64, 9, &sent) == 0 && sent == 0);
	sync_on = 0;

	/* Another synchronization since the read (no rule of its own): the
	 * held bytes no longer answer. */
	CHECK(sync_of(50) == 1);
	CHECK(sync_of(999) == 0);
	CHECK(rahead_copy(7, 100, buf, a, 32) == 0);

	/* More rules than RULES: the least lately used goes. */
	for (k = 0; k < RULES + 1; k++) {
		CHECK(step(100 + (uint64_t)k, a, 32, 1, &sent) == 0);
		CHECK(step(100 + (uint64_t)k, a, 32, 2, &sent) == 0);
	}
	CHECK(sync_of(100) == 0);	/* the first, gone */
	CHECK(sync_of(100 + RULES) == 1);

	rahead_stats(&reads, &bytes, &hits);
	CHECK(reads == (uint64_t)nreads);
	CHECK(hits > 20 && bytes > 0);
	return t_done("client_readahead");
}
