/*
 * Reads ahead (readahead.h): a device-to-host copy that a program makes
 * right after the same synchronization every step, learnt, read beside
 * that synchronization the next time, and answered here when it comes.
 *
 * XLA ends a step so: the host waits for the computation (a stream
 * synchronized after it waited for the compute stream's event), then
 * copies the result out on a transfer stream and waits for that copy: two
 * round trips, one after the other, where the second reads bytes that
 * were final when the first came back.  Here the first synchronization's
 * reply brings them too (the server reads them right after it), and the
 * copy, when the program makes it, takes them: one round trip a step.
 *
 * Learning: the first copy out of known device memory, on a non-blocking
 * stream, after a synchronization makes a rule for that synchronization
 * (its call and stream, context or event): the copy's context and bytes,
 * its source, which source came after which, and the stride between the
 * last two.  A copy after it again confirms the rule.  A confirmed rule's
 * synchronization sends the read beside it (the per-thread stream's copy,
 * after the wait) of the source it predicts: the one that came after the
 * last source before, else the last one plus a stride that held twice
 * (the same buffer each step: stride 0; XLA's allocator hands out the
 * next buffer each step, mostly a stride on, round a ring, which it learns
 * once round).  The bytes are held until the next synchronization with a
 * rule.  A rule whose read went unused, no copy having followed its
 * synchronization at all, drops back to unconfirmed.

 * Answering: a copy whose range the held bytes cover takes them only where
 * the real copy could not have read anything else (rahead_ok): nothing
 * queued since the read may have written device memory or told the
 * program of writes made elsewhere (reads, records on idle streams and
 * waits on events complete before the read leave that so; any launch,
 * copy into the device, memset, synchronization or query does not), and
 * the copy's stream was idle when the read was made and still is, so
 * that the copy, on a GPU, would have run at once after nothing new.  A
 * write by another stream still running at the read would race the copy
 * on a GPU too.  The source must be device memory this library allocated
 * and outside mapped and managed memory (the host writes those without a
 * call).
 *
 * GLEAM_READ_AHEAD: the most bytes a read brings (1 MiB by default; 0:
 * off).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clenv.h"
#include "io.h"
#include "mapped.h"
#include "readahead.h"
#include "log.h"

#define RA_DEFAULT	(1u << 20)
#define RULES		8
#define CONFIRMED	2		/* seen this many times in a row */
#define SUCC		32

struct rule {
	uint16_t	 type;		/* the synchronization */
	uint64_t	 k0, k1;
	uint64_t	 ctx;		/* the copy after it */
	CUdeviceptr	 last;		/* its source the last time */
	uint64_t	 stride;	/* from the time before (mod 2^64) */
	unsigned	 strides;	/* times in a row it held */
	/* Which source came after which (a ring of buffers, learnt
	 * once round), SUCC of them in turn. */
	CUdeviceptr	 from[SUCC], to[SUCC];
	unsigned	 nsucc;
	size_t		 n;
	unsigned	 seen;		/* times in a row a copy followed */
	uint64_t	 used;		/* for replacement */
	int		 valid;
};

static pthread_mutex_t	 ra_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t	 ra_once = PTHREAD_ONCE_INIT;
static struct rule	 rules[RULES];
static uint64_t		 ra_clock;
static uint64_t		 ra_max = UINT64_MAX;	/* unread */

/* The bytes held: one read at a time. */
static struct {
	uint64_t	 ctx;
	CUdeviceptr	 src;
	size_t		 n;
	void		*bytes;
	uint64_t	 epoch, q;	/* its window (rahead_ok) */
	int		 rule, used, valid;
	int		 copied;	/* its rule's copy came, not taken */
} held;

/* The last synchronization, for the copy after it to learn from. */
static struct {
	uint16_t	 type;
	uint64_t	 k0, k1;
	int		 valid;
} lastw;

static uint64_t		 st_reads, st_bytes, st_hits;

/*
 * In the child of a fork: the lock may have been held by a thread that is
 * not there; nothing held is the child's (its calls fail, io.c).
 */
static void
ra_atfork_child(void)
{
	pthread_mutex_init(&ra_lock, NULL);
	free(held.bytes);
	memset(&held, 0, sizeof held);
	lastw.valid = 0;
}

static void
ra_init(void)
{
	pthread_atfork(NULL, NULL, ra_atfork_child);
}

/* Under ra_lock: GLEAM_READ_AHEAD, once. */
static void
ra_limit(void)
{
	if (ra_max == UINT64_MAX)
		ra_max = clenv_size("GLEAM_READ_AHEAD", RA_DEFAULT, 0);
}

/*
 * The source rule r predicts (*src), 1 where it may be read: the one that
 * came after the last source before, else the next along a stride that
 * held twice (0: the same buffer each step).  XLA's allocator hands out
 * the next buffer each step, mostly a stride on, round a ring.
 */
static int
predict(const struct rule *r, CUdeviceptr *src)
{
	unsigned k;

	for (k = 0; k < r->nsucc && k < SUCC; k++)
		if (r->from[k] == r->last) {
			*src = r->to[k];
			return 1;
		}
	*src = r->last + r->stride;
	return r->strides >= CONFIRMED;
}

/* A synchronization's key: its call and what it waits for. */
static void
wait_key(uint16_t type, const struct rpc_val *in, uint64_t *k0, uint64_t *k1)
{
	*k0 = in[0].u;
	*k1 = type == R_STREAM_SYNC ? in[1].u : 0;
}

/*
 * Under ra_lock: the held bytes dropped.  A read unused, where no copy
 * followed its synchronization at all, unconfirms its rule (a copy that
 * did follow was learnt from).
 */
static void
held_drop(void)
{
	if (!held.valid)
		return;
	if (!held.used && !held.copied && held.rule >= 0 &&
	    rules[held.rule].valid)
		rules[held.rule].seen = 0;
	free(held.bytes);
	memset(&held, 0, sizeof held);
}

void
rahead_before(uint16_t type, const struct rpc_val *in, struct rahead *ra)
{
	uint64_t k0, k1;
	size_t base, size;
	CUdeviceptr src;
	int i;

	memset(ra, 0, sizeof *ra);
	ra->rule = -1;
	if ((type != R_STREAM_SYNC && type != R_CTX_SYNC &&
	    type != R_EVENT_SYNC) || rsync_mode())
		return;
	wait_key(type, in, &k0, &k1);
	pthread_once(&ra_once, ra_init);
	pthread_mutex_lock(&ra_lock);
	ra_limit();
	for (i = 0; i < RULES && ra_max > 0; i++)
		if (rules[i].valid && rules[i].type == type &&
		    rules[i].k0 == k0 && rules[i].k1 == k1)
			break;
	/* The last read, unused, unconfirms its rule (this one too). */
	if (i < RULES && ra_max > 0)
		held_drop();
	lastw.valid = 0;
	/* The next source, where it is device memory still. */
	if (i < RULES && ra_max > 0 && rules[i].seen >= CONFIRMED &&
	    rules[i].n <= ra_max && !capture_any() &&
	    predict(&rules[i], &src) && mem_is_device(src, &base, &size) &&
	    src - base <= size && rules[i].n <= size - (src - base)) {
		ra->rule = i;
		ra->ctx = rules[i].ctx;
		ra->src = src;
		ra->n = rules[i].n;
	}
	pthread_mutex_unlock(&ra_lock);
}

void
rahead_send(struct rahead *ra)
{
	struct rpc_val in[5];

	if (ra->rule < 0)
		return;
	/* After the wait, in the server's per-thread stream: no other
	 * stream's work waits for it, nor it for theirs, and it is no work
	 * of the program's streams (their idle marks hold). */
	in[0].u = ra->ctx;
	in[1].u = 2;
	in[2].u = 1;
	in[3].u = ra->src;
	in[4].u = ra->n;
	memset(&ra->w, 0, sizeof ra->w);
	ra->w.beside = 1;
	ra->sent = rsend(R_MEM_DTOH, in, RP_AHEAD | RP_NOWORK, &ra->w) ==
	    CUDA_SUCCESS;
}

void
rahead_end(struct rahead *ra, int ok, uint64_t *mark)
{
	struct rpc_val out[1];
	void *keep = NULL;
	CUresult rc;

	if (!ra->sent)
		return;
	rc = rwait(&ra->w, out, &keep);
	/* Its reply follows the wait's: the wait's idle marks hold after
	 * it (a read is no stream's work). */
	if (*mark != 0 && ra->w.qstart == *mark)
		*mark = ra->w.qend;
	pthread_mutex_lock(&ra_lock);
	held_drop();
	if (ok && rc == CUDA_SUCCESS && out[0].len == ra->n &&
	    rules[ra->rule].valid) {
		if (keep == NULL && (keep = malloc(ra->n ? ra->n : 1)) != NULL)
			memcpy(keep, out[0].p, ra->n);
		else if (keep != NULL && out[0].p != keep)
			memmove(keep, out[0].p, ra->n);
		if (keep != NULL) {
			held.ctx = ra->ctx;
			held.src = ra->src;
			held.n = ra->n;
			held.bytes = keep;
			held.epoch = ra->w.epoch;
			held.q = ra->w.qend;
			held.rule = ra->rule;
			held.valid = 1;
			keep = NULL;
		}
	}
	st_reads++;
	st_bytes += ra->n;
	pthread_mutex_unlock(&ra_lock);
	free(keep);
}

void
rahead_waited(uint16_t type, const struct rpc_val *in)
{
	if ((type != R_STREAM_SYNC && type != R_CTX_SYNC &&
	    type != R_EVENT_SYNC) || rsync_mode())
		return;
	pthread_mutex_lock(&ra_lock);
	lastw.type = type;
	wait_key(type, in, &lastw.k0, &lastw.k1);
	lastw.valid = 1;
	pthread_mutex_unlock(&ra_lock);
}

/* Under ra_lock: src came after r's last source. */
static void
succ_note(struct rule *r, CUdeviceptr src)
{
	unsigned k;

	for (k = 0; k < r->nsucc && k < SUCC; k++)
		if (r->from[k] == r->last) {
			r->to[k] = src;
			return;
		}
	k = r->nsucc++ % SUCC;
	r->from[k] = r->last;
	r->to[k] = src;
}

/* Under ra_lock: the copy (ctx, src, n) followed the last
 * synchronization: its rule made or confirmed. */
static void
learn(uint64_t ctx, CUdeviceptr src, size_t n)
{
	int i, old = 0;

	if (!lastw.valid)
		return;
	lastw.valid = 0;
	for (i = 0; i < RULES; i++)
		if (rules[i].valid && rules[i].type == lastw.type &&
		    rules[i].k0 == lastw.k0 && rules[i].k1 == lastw.k1)
			break;
	if (i == RULES) {
		/* A free one, else the one least lately used. */
		for (i = 0; i < RULES; i++) {
			if (!rules[i].valid) {
				old = i;
				break;
			}
			if (rules[i].used < rules[old].used)
				old = i;
		}
		i = old;
		memset(&rules[i], 0, sizeof rules[i]);
		rules[i].type = lastw.type;
		rules[i].k0 = lastw.k0;
		rules[i].k1 = lastw.k1;
		rules[i].valid = 1;
	}
	if (rules[i].ctx != ctx || rules[i].n != n) {
		/* Another copy: learnt afresh. */
		rules[i].ctx = ctx;
		rules[i].n = n;
		rules[i].stride = 0;
		rules[i].strides = 1;
		rules[i].nsucc = 0;
		rules[i].seen = 1;
	} else {
		succ_note(&rules[i], src);
		if (src - rules[i].last == rules[i].stride) {
			if (rules[i].strides < 1000)
				rules[i].strides++;
		} else {
			rules[i].stride = src - rules[i].last;
			rules[i].strides = 1;
		}
		if (rules[i].seen < 1000)
			rules[i].seen++;
	}
	rules[i].last = src;
	if (held.valid && held.rule == i)
		held.copied = 1;
	rules[i].used = ++ra_clock;
}

int
rahead_copy(uint64_t ctx, uint64_t sid, void *dst, CUdeviceptr src, size_t n)
{
	int took = 0;

	if (n == 0 || rsync_mode())
		return 0;
	pthread_once(&ra_once, ra_init);
	pthread_mutex_lock(&ra_lock);
	/* Off: nothing to answer, nothing to learn. */
	ra_limit();
	if (ra_max == 0) {
		pthread_mutex_unlock(&ra_lock);
		return 0;
	}
	if (held.valid && held.ctx == ctx && src >= held.src &&
	    n <= held.n && src - held.src <= held.n - n &&
	    !mapped_overlaps(src, n) &&
	    rahead_ok(ctx, sid, held.epoch, held.q)) {
		memcpy(dst, (const char *)held.bytes + (src - held.src), n);
		held.used = 1;
		took = 1;
		st_hits++;
		/* Its rule confirmed again (a part of the bytes, taken,
		 * leaves it as it stands). */
		if (lastw.valid && src == held.src && n == held.n &&
		    rules[held.rule].valid)
			learn(ctx, src, n);
		lastw.valid = 0;
	} else
		learn(ctx, src, n);
	pthread_mutex_unlock(&ra_lock);
	if (took)
		log_trace("read ahead: %zu bytes from %#llx answered here", n,
		    (unsigned long long)src);
	return took;
}

void
rahead_stats(uint64_t *reads, uint64_t *bytes, uint64_t *hits)
{
	pthread_mutex_lock(&ra_lock);
	*reads = st_reads;
	*bytes = st_bytes;
	*hits = st_hits;
	pthread_mutex_unlock(&ra_lock);
}
