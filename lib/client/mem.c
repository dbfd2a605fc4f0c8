/*
 * Memory: device allocations live on the server (their addresses are the
 * server's); pinned host memory is ordinary memory here, since nothing on
 * this machine can DMA into it.  Copies are cut into frames the server
 * accepts.  The allocation map answers unified-address questions
 * (cuMemcpy's direction, pointer attributes) with no round trip.
 */
#include <sys/mman.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memo.h"
#include "lanes.h"
#include "remote.h"
#include "client.h"
#include "wcache.h"
#include "log.h"

/*
 * Device bytes that host-to-device copies have written, per allocation,
 * as a few ranges: ranges closer than WR_GAP merge (an allocator's
 * padding between tensors), and when WR_MAX are held the closest two do.
 */
#define WR_MAX	8
#define WR_GAP	(64u << 10)

struct wrange {
	uint64_t	 lo, hi;	/* offsets in the allocation, [lo, hi) */
};

struct alloc {
	uint64_t	 base, size;
	struct gctx	*ctx;
	int		 host;		/* pinned or registered host memory */
	unsigned	 flags;
	int		 nw;
	struct wrange	 w[WR_MAX];
};

static pthread_mutex_t	 mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc	*allocs;	/* sorted by base */
static size_t		 nallocs, acap;

/* Index of the last allocation with base <= p, or -1. */
static long
mem_find(uint64_t p)
{
	size_t lo = 0, hi = nallocs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static int
mem_add(uint64_t base, uint64_t size, struct gctx *ctx, int host,
    unsigned flags)
{
	struct alloc *na;
	long i;

	pthread_mutex_lock(&mem_lock);
	if (nallocs == acap) {
		size_t cap = acap ? acap * 2 : 64;
		if ((na = realloc(allocs, cap * sizeof *na)) == NULL) {
			pthread_mutex_unlock(&mem_lock);
			return -1;
		}
		allocs = na;
		acap = cap;
	}
	i = mem_find(base) + 1;
	memmove(&allocs[i + 1], &allocs[i], (nallocs - (size_t)i) *
	    sizeof *allocs);
	allocs[i] = (struct alloc){ base, size, ctx, host, flags, 0, {{0, 0}} };
	nallocs++;
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* Removes the allocation starting at base of that kind; -1 if none. */
static int
mem_del(uint64_t base, int host)
{
	long i;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(base);
	if (i < 0 || allocs[i].base != base || allocs[i].host != host) {
		pthread_mutex_unlock(&mem_lock);
		return -1;
	}
	memmove(&allocs[i], &allocs[i + 1], (nallocs - (size_t)i - 1) *
	    sizeof *allocs);
	nallocs--;
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

/* The allocation holding p, copied out; 0 if found. */
static int
mem_lookup(uint64_t p, struct alloc *out)
{
	long i;
	int rc = -1;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(p);
	if (i >= 0 && p - allocs[i].base < (allocs[i].size ?
	    allocs[i].size : 1)) {
		*out = allocs[i];
		rc = 0;
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

/*
 * Did a host-to-device copy put bytes in [p, p + n) before?  Records this
 * one either way.  Weights are written once, into memory no copy wrote;
 * a program's inputs overwrite the buffer of the step before: the weight
 * cache takes only the first kind (a name looked up, stored and missed for
 * bytes that never recur costs round trips).  0 for memory not known.
 */
int
mem_rewritten(CUdeviceptr p, size_t n)
{
	struct alloc *a;
	struct wrange r;
	long i;
	int j, k, hit = 0;

	pthread_mutex_lock(&mem_lock);
	i = mem_find(p);
	if (i < 0 || (a = &allocs[i])->host || p - a->base >= a->size ||
	    n > a->size - (p - a->base)) {
		pthread_mutex_unlock(&mem_lock);
		return 0;
	}
	r.lo = p - a->base;
	r.hi = r.lo + n;
	for (j = 0; j < a->nw; j++)
		if (r.lo < a->w[j].hi && a->w[j].lo < r.hi)
			hit = 1;
	/* Merge every range within WR_GAP of the new one into it. */
	for (j = k = 0; j < a->nw; j++) {
		if (a->w[j].lo <= r.hi + WR_GAP && r.lo <= a->w[j].hi + WR_GAP) {
			if (a->w[j].lo < r.lo)
				r.lo = a->w[j].lo;
			if (a->w[j].hi > r.hi)
				r.hi = a->w[j].hi;
		} else
			a->w[k++] = a->w[j];
	}
	a->nw = k;
	for (j = a->nw; j > 0 && a->w[j - 1].lo > r.lo; j--)
		a->w[j] = a->w[j - 1];
	a->w[j] = r;
	if (++a->nw == WR_MAX) {
		/* Full: the two closest neighbours become one. */
		int best = 0;

		for (j = 1; j + 1 < a->nw; j++)
			if (a->w[j + 1].lo - a->w[j].hi <
			    a->w[best + 1].lo - a->w[best].hi)
				best = j;
		a->w[best].hi = a->w[best + 1].hi;
		memmove(&a->w[best + 1], &a->w[best + 2],
		    (size_t)(a->nw - best - 2) * sizeof a->w[0]);
		a->nw--;
	}
	pthread_mutex_unlock(&mem_lock);
	return hit;
}

int
mem_is_device(CUdeviceptr p, size_t *base, size_t *size)
{
	struct alloc a;

	if (mem_lookup(p, &a) == -1 || a.host)
		return 0;
	if (base != NULL)
		*base = a.base;
	if (size != NULL)
		*size = a.size;
	return 1;
}

/*
 * One-way allocation (gleam-client(7)).  Per context, the server holds a
 * reserved range of device addresses and a stock of physical granules
 * made ahead.  An allocation of at least POOL_MIN bytes takes addresses
 * of the range here and granules of the stock, and the server maps them
 * there (memMap, one-way): the granules exist already, so an allocation
 * that returned success cannot fail later, as with cuMemAlloc.  When the
 * stock is short, one round trip (memPool) grows it by the shortfall at
 * least and by about what the context holds at most, or returns the
 * driver's out-of-memory error, exactly where cuMemAlloc would; when
 * it runs low, that memPool goes ahead (pool_ahead) and its answer is
 * collected when the stock is short, so a loader seldom waits.  Freed
 * allocations go back to the stock; stock beyond what the context holds
 * is released (memTrim).  GLEAM_POOL=0, GLEAM_SYNC=1, or a server that
 * cannot (memPool says not supported): every allocation asks the server.
 */
#define POOL_MIN	(1u << 20)	/* bytes: smaller ones ask */
#define POOL_AHEAD	(32ull << 20)	/* stock asked ahead at least */
#define POOL_AHEAD_MAX	(2ull << 30)	/* and at most */
#define POOL_KEEP	(64ull << 20)	/* stock kept beyond what is held */
/*
 * An allocation this large that the stock cannot hold asks the server
 * (cuMemAlloc): one round trip either way, and the driver makes one
 * large allocation faster than the server makes its granules.
 */
#define POOL_BIG	(64ull << 20)

/*
 * A head start: each device's pool peak (bytes mapped at most) is kept
 * for the next run of the program against the same server (memo.h,
 * "pool-*": a line "gleam-pool 1", then "DEVICE BYTES" a device).  A
 * context made on a device that had one sends that memPool ahead at once
 * (mem_pool_start), while the program is still starting: its allocations
 * then seldom wait for one.  GLEAM_POOL=0 turns it off with the pool.
 */
#define POOL_DEVS	64

struct ext {
	uint64_t	 base, size;
};

/* x rounded up to a multiple of a, a power of two. */
static inline uint64_t
up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Free address extents, sorted, neighbours merged. */
struct extl {
	struct ext	*v;
	size_t		 n, cap;
};

/*
 * Allocations under POOL_MIN share slabs: a slab is a pool allocation of
 * SLAB bytes, cut here into pieces aligned as cuMemAlloc's (SMALL_ALIGN).
 * Freeing a piece is done here; so that no work still queued on the
 * device meets the piece's next owner, it sends a context synchronization
 * one-way, as cuMemFree synchronizes.  An empty slab is freed, but for
 * one kept per context.
 */
#define SLAB		(2u << 20)
#define SMALL_ALIGN	512

struct slab {
	uint64_t	 base, used;
	struct extl	 free;
};

struct cpool {
	int		 state;		/* 0 not asked yet, 1 on, -1 off */
	uint64_t	 va, size, gran;
	uint64_t	 stock;		/* bytes of granules not mapped */
	uint64_t	 live;		/* bytes mapped */
	struct extl	 addr;		/* free addresses of the range */
	struct rwait	*aw;		/* a memPool sent ahead, or NULL */
	struct slab	*slabs;
	size_t		 nslabs, scap;
};

static pthread_mutex_t	 pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int		 pool_off = -1;	/* -1: not read yet */
static uint64_t		 pool_peak[POOL_DEVS];	/* this run's, pool_lock */
static uint64_t		 pool_last[POOL_DEVS];	/* the last run's */
static char		 pool_path[1200];	/* the memo, "" without */
static pid_t		 pool_pid;
static pthread_once_t	 pool_memo_once = PTHREAD_ONCE_INIT;

/* A forked child cannot use its parent's connection, nor its pools. */
static void
pool_atfork_child(void)
{
	pthread_mutex_init(&pool_lock, NULL);
	__atomic_store_n(&pool_off, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void
pool_init(void)
{
	pthread_atfork(NULL, NULL, pool_atfork_child);
}

static int
pool_enabled(void)
{
	int off = __atomic_load_n(&pool_off, __ATOMIC_RELAXED);

	if (off == -1) {
		const char *s = getenv("GLEAM_POOL");

		off = rsync_mode() || (s != NULL && strcmp(s, "0") == 0);
		__atomic_store_n(&pool_off, off, __ATOMIC_RELAXED);
	}
	return !off;
}

/* First fit; 0 if no free extent is large enough. */
static uint64_t
ext_take(struct extl *l, uint64_t n)
{
	size_t i;
	uint64_t a;

	for (i = 0; i < l->n; i++)
		if (l->v[i].size >= n) {
			a = l->v[i].base;
			l->v[i].base += n;
			l->v[i].size -= n;
			if (l->v[i].size == 0) {
				memmove(&l->v[i], &l->v[i + 1],
				    (l->n - i - 1) * sizeof l->v[0]);
				l->n--;
			}
			return a;
		}
	return 0;
}

/* Gives [a, a + n) back, merged with its neighbours; -1 out of memory. */
static int
ext_put(struct extl *l, uint64_t a, uint64_t n)
{
	size_t i = 0;

	while (i < l->n && l->v[i].base < a)
		i++;
	if (i > 0 && l->v[i - 1].base + l->v[i - 1].size == a) {
		l->v[i - 1].size += n;
		if (i < l->n && a + n == l->v[i].base) {
			l->v[i - 1].size += l->v[i].size;
			memmove(&l->v[i], &l->v[i + 1],
			    (l->n - i - 1) * sizeof l->v[0]);
			l->n--;
		}
		return 0;
	}
	if (i < l->n && a + n == l->v[i].base) {
		l->v[i].base = a;
		l->v[i].size += n;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct ext *e = realloc(l->v, cap * sizeof *e);

		if (e == NULL)
			return -1;
		l->v = e;
		l->cap = cap;
	}
	memmove(&l->v[i + 1], &l->v[i], (l->n - i) * sizeof l->v[0]);
	l->v[i] = (struct ext){ a, n };
	l->n++;
	return 0;
}

static CUresult	pool_reply(struct cpool *, CUresult, const struct rpc_val *);
static void	pool_send(struct gctx *, struct cpool *, uint64_t, uint64_t);

/* memPool: grows the stock by need bytes at least; pool_lock held. */
static CUresult
pool_grow(struct gctx *c, struct cpool *p, uint64_t need)
{
	struct rpc_val in[3], out[4];
	uint64_t want = p->live + need;
	void *keep;
	CUresult rc;

	want = want < POOL_AHEAD ? POOL_AHEAD : want > POOL_AHEAD_MAX ?
	    POOL_AHEAD_MAX : want;
	in[0].u = gobj_id(c);
	in[1].u = need;
	in[2].u = want < need ? need : want;
	rc = rcall(R_MEM_POOL, in, out, &keep);
	free(keep);
	return pool_reply(p, rc, out);
}

/* memPool's reply (rc, out) applied to the pool; pool_lock held. */
static CUresult
pool_reply(struct cpool *p, CUresult rc, const struct rpc_val *out)
{
	if (rc == CUDA_ERROR_NOT_SUPPORTED && p->state == 0) {
		p->state = -1;
		return rc;
	}
	if (rc != CUDA_SUCCESS)
		return rc;
	if (p->state == 0) {
		if (out[1].u == 0 || (out[1].u & (out[1].u - 1)) != 0 ||
		    out[1].u > SLAB || out[2].u == 0 || out[3].u < out[1].u ||
		    ext_put(&p->addr, out[2].u, out[3].u & ~(out[1].u - 1)) ==
		    -1) {
			p->state = -1;	/* a reply that makes no sense */
			return CUDA_ERROR_NOT_SUPPORTED;
		}
		p->gran = out[1].u;
		p->va = out[2].u;
		p->size = out[3].u;
		p->state = 1;
	}
	p->stock += out[0].u;
	return CUDA_SUCCESS;
}

/*
 * A memPool sent ahead (pool_ahead, pool_start) collected, pool_lock held:
 * what it made joins the stock (the first one also sets the pool up); a
 * failure (out of memory) is nobody's error, as nothing asked for those
 * granules yet.
 */
static void
pool_collect(struct cpool *p, int use)
{
	struct rpc_val out[4];
	void *keep;
	CUresult rc;

	if (p->aw == NULL)
		return;
	rc = rwait(p->aw, out, &keep);
	if (use)
		(void)pool_reply(p, rc, out);
	free(keep);
	free(p->aw);
	p->aw = NULL;
}

/*
 * When the stock is under half of what the next memPool would make, the
 * next memPool goes now, its reply collected when the stock runs short:
 * a loader allocating tensor by tensor seldom waits for the server to
 * make granules.  pool_lock held.
 */
static void
pool_ahead(struct gctx *c, struct cpool *p)
{
	uint64_t want = 2 * p->live;

	want = want < POOL_AHEAD ? POOL_AHEAD : want > POOL_AHEAD_MAX ?
	    POOL_AHEAD_MAX : want;
	if (p->state == 1 && p->stock < want / 2)
		pool_send(c, p, p->gran, want);
}

/* memPool sent ahead, unless one is in flight; pool_lock held. */
static void
pool_send(struct gctx *c, struct cpool *p, uint64_t need, uint64_t want)
{
	struct rpc_val in[3];

	if (p->aw != NULL || (p->aw = calloc(1, sizeof *p->aw)) == NULL)
		return;
	p->aw->ahead = 1;
	in[0].u = gobj_id(c);
	in[1].u = need;
	in[2].u = want;
	if (rsend(R_MEM_POOL, in, 0, p->aw) != CUDA_SUCCESS) {
		free(p->aw);
		p->aw = NULL;
	}
}

/* The last run's peaks, once. */
static void
pool_memo_read(void)
{
	char line[128];
	unsigned long long v;
	int dev, n;
	FILE *f;

	if (memo_program("pool", pool_path, sizeof pool_path) == -1) {
		pool_path[0] = '\0';
		return;
	}
	pool_pid = getpid();
	if ((f = fopen(pool_path, "r")) == NULL)
		return;
	if (fgets(line, sizeof line, f) != NULL &&
	    strcmp(line, "gleam-pool 1\n") == 0)
		while (fgets(line, sizeof line, f) != NULL)
			if (sscanf(line, "%d %llu%n", &dev, &v, &n) == 2 &&
			    line[n] == '\n' && dev >= 0 && dev < POOL_DEVS)
				pool_last[dev] = v;
	fclose(f);
}

/* At exit: this run's peaks, for the next run. */
__attribute__((destructor)) static void
pool_memo_save(void)
{
	char buf[POOL_DEVS * 32 + 16];
	size_t n;
	int i, any = 0;

	if (pool_path[0] == '\0' || pool_pid != getpid())
		return;
	pthread_mutex_lock(&pool_lock);
	n = (size_t)snprintf(buf, sizeof buf, "gleam-pool 1\n");
	for (i = 0; i < POOL_DEVS; i++)
		if (pool_peak[i] > 0) {
			n += (size_t)snprintf(buf + n, sizeof buf - n,
			    "%d %llu\n", i, (unsigned long long)pool_peak[i]);
			any = 1;
		}
	pthread_mutex_unlock(&pool_lock);
	if (any)
		(void)memo_write(pool_path, buf, n, NULL, 0);
}

void
mem_pool_start(struct gctx *c)
{
	uint64_t want;

	if (!pool_enabled())
		return;
	pthread_once(&pool_memo_once, pool_memo_read);
	if (c->device < 0 || c->device >= POOL_DEVS ||
	    (want = pool_last[c->device]) < POOL_MIN)
		return;
	pthread_mutex_lock(&pool_lock);
	if (c->pool == NULL)
		c->pool = calloc(1, sizeof *c->pool);
	if (c->pool != NULL && c->pool->state == 0)
		pool_send(c, c->pool, POOL_MIN, want > POOL_AHEAD_MAX ?
		    POOL_AHEAD_MAX : want);
	pthread_mutex_unlock(&pool_lock);
}

/*
 * An allocation of size bytes from the pool, pool_lock held: 1 with *rc
 * the result (and *dptr on success), 0 when it must go the usual way.
 */
static int
pool_take(struct gctx *c, struct cpool *p, uint64_t size, CUdeviceptr *dptr,
    CUresult *rc)
{
	struct rpc_val in[3];
	uint64_t n, a;

	if (p->state == 0)
		pool_collect(p, 1);	/* mem_pool_start's */
	if (p->state == 0 && size >= POOL_BIG)
		return 0;
	if (p->state == 0 && (*rc = pool_grow(c, p, size)) != CUDA_SUCCESS)
		return p->state == -1 ? 0 : 1;
	if (p->state != 1 || size > p->size)
		return 0;
	n = up(size, p->gran);
	if (n > p->stock)
		pool_collect(p, 1);
	if (n > p->stock && n >= POOL_BIG)
		return 0;
	if (n > p->stock && (*rc = pool_grow(c, p, n - p->stock)) !=
	    CUDA_SUCCESS)
		return p->state == -1 ? 0 : 1;
	if (n > p->stock || (a = ext_take(&p->addr, n)) == 0)
		return 0;	/* no room in the range: ask the server */
	in[0].u = gobj_id(c);
	in[1].u = a;
	in[2].u = n;
	if ((*rc = rpost(R_MEM_MAP, in, 0)) != CUDA_SUCCESS) {
		ext_put(&p->addr, a, n);
		return 1;
	}
	p->stock -= n;
	p->live += n;
	if (c->device >= 0 && c->device < POOL_DEVS &&
	    p->live > pool_peak[c->device])
		pool_peak[c->device] = p->live;
	*dptr = a;
	*rc = CUDA_SUCCESS;
	pool_ahead(c, p);
	return 1;
}

/* Frees a pool allocation of size bytes at a, pool_lock held. */
static void
pool_give(struct gctx *c, struct cpool *p, uint64_t a, uint64_t size)
{
	struct rpc_val in[2];
	uint64_t n = up(size, p->gran), keep;

	/* Addresses lost to a failed merge only shrink the range. */
	(void)ext_put(&p->addr, a, n);
	p->stock += n;
	p->live -= n < p->live ? n : p->live;
	keep = p->live > POOL_KEEP ? p->live : POOL_KEEP;
	if (p->stock > keep + p->gran) {
		n = (p->stock - keep) & ~(p->gran - 1);
		in[0].u = gobj_id(c);
		in[1].u = n;
		if (rpost(R_MEM_TRIM, in, 0) == CUDA_SUCCESS)
			p->stock -= n;
	}
}

/* A piece of a slab; pool_lock held.  As pool_take. */
static int
slab_take(struct gctx *c, struct cpool *p, uint64_t size, CUdeviceptr *dptr,
    CUresult *rc)
{
	uint64_t n = up(size, SMALL_ALIGN);
	CUdeviceptr base;
	struct slab *sl;
	size_t i;
	int r;

	for (i = 0; i < p->nslabs; i++)
		if ((*dptr = ext_take(&p->slabs[i].free, n)) != 0) {
			p->slabs[i].used += n;
			*rc = CUDA_SUCCESS;
			return 1;
		}
	if (p->nslabs == p->scap) {
		size_t cap = p->scap ? p->scap * 2 : 8;
		struct slab *v = realloc(p->slabs, cap * sizeof *v);

		if (v == NULL)
			return 0;
		p->slabs = v;
		p->scap = cap;
	}
	if ((r = pool_take(c, p, SLAB, &base, rc)) == 0 || *rc != CUDA_SUCCESS)
		return r;
	sl = &p->slabs[p->nslabs];
	memset(sl, 0, sizeof *sl);
	sl->base = base;
	if (n < SLAB && ext_put(&sl->free, base + n, SLAB - n) == -1) {
		pool_give(c, p, base, SLAB);
		return 0;
	}
	p->nslabs++;
	sl->used = n;
	*dptr = base;
	return 1;
}

/* A piece of a slab freed: 1 if a was one; pool_lock held. */
static int
slab_give(struct gctx *c, struct cpool *p, uint64_t a, uint64_t size)
{
	uint64_t n = up(size, SMALL_ALIGN);
	struct rpc_val in[2];
	size_t i, empty = 0;

	for (i = 0; i < p->nslabs; i++)
		if (a - p->slabs[i].base < SLAB)
			break;
	if (i == p->nslabs)
		return 0;
	/* cuMemFree waits for the device: so does the server, in order. */
	in[0].u = gobj_id(c);
	(void)rpost(R_CTX_SYNC, in, 0);
	(void)ext_put(&p->slabs[i].free, a, n);
	p->slabs[i].used -= n < p->slabs[i].used ? n : p->slabs[i].used;
	if (p->slabs[i].used > 0)
		return 1;
	for (size_t j = 0; j < p->nslabs; j++)
		empty += p->slabs[j].used == 0;
	if (empty > 1) {
		in[1].u = p->slabs[i].base;
		if (rpost(R_MEM_FREE, in, 0) == CUDA_SUCCESS)
			pool_give(c, p, p->slabs[i].base, SLAB);
		free(p->slabs[i].free.v);
		p->slabs[i] = p->slabs[--p->nslabs];
	}
	return 1;
}

/*
 * An allocation from the context's pool: 1 with *rc the result (and *dptr
 * on success), 0 when it goes the usual way.
 */
static int
pool_alloc(struct gctx *c, size_t size, CUdeviceptr *dptr, CUresult *rc)
{
	struct cpool *p;
	int r = 0;

	if (!pool_enabled())
		return 0;
	pthread_mutex_lock(&pool_lock);
	if ((p = c->pool) == NULL)
		p = c->pool = calloc(1, sizeof *p);
	if (p != NULL)
		r = size < POOL_MIN ? slab_take(c, p, size, dptr, rc) :
		    pool_take(c, p, size, dptr, rc);
	pthread_mutex_unlock(&pool_lock);
	return r;
}

/*
 * cuMemFree of [a, a + size): a slab's piece is freed here, anything else
 * by the server (one-way: known here, so its answer can wait), and a pool
 * allocation's granules return to the stock after that free is queued.
 */
static CUresult
pool_free(struct gctx *c, uint64_t a, uint64_t size)
{
	struct rpc_val in[2];
	struct cpool *p;
	CUresult rc;
	int pooled;

	pthread_mutex_lock(&pool_lock);
	pooled = (p = c->pool) != NULL && p->state == 1 && a >= p->va &&
	    a - p->va < p->size;
	if (pooled && size < POOL_MIN && slab_give(c, p, a, size)) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_SUCCESS;
	}
	in[0].u = gobj_id(c);
	in[1].u = a;
	if ((rc = rpost(R_MEM_FREE, in, 0)) == CUDA_SUCCESS && pooled)
		pool_give(c, p, a, size);
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

/* The stock, which the context may allocate as if it were free. */
static uint64_t
pool_stock(struct gctx *c)
{
	uint64_t n = 0;

	pthread_mutex_lock(&pool_lock);
	if (c->pool != NULL) {
		/* After a call that waited: a memPool ahead has its answer. */
		pool_collect(c->pool, 1);
		if (c->pool->state == 1)
			n = c->pool->stock;
	}
	pthread_mutex_unlock(&pool_lock);
	return n;
}

/* The context is gone on the server, and its pool with it. */
void
mem_pool_drop(struct gctx *c)
{
	size_t i;

	pthread_mutex_lock(&pool_lock);
	if (c->pool != NULL) {
		pool_collect(c->pool, 0);
		for (i = 0; i < c->pool->nslabs; i++)
			free(c->pool->slabs[i].free.v);
		free(c->pool->slabs);
		free(c->pool->addr.v);
		free(c->pool);
		c->pool = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
}

CUresult
cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	struct rpc_val in[2], out[1];
	CUdeviceptr pa;
	struct gctx *c;
	void *keep;
	CUresult rc;

	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (pool_alloc(c, size, &pa, &rc)) {
		if (rc != CUDA_SUCCESS)
			return rc;
		if (mem_add(pa, size, c, 0, 0) == -1)
			return CUDA_ERROR_OUT_OF_MEMORY;
		*dptr = pa;
		return CUDA_SUCCESS;
	}
	in[0].u = gobj_id(c);
	in[1].u = size;
	rc = rcall(R_MEM_ALLOC, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	*dptr = out[0].u;
	if (mem_add(out[0].u, size, c, 0, 0) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
    size_t height, unsigned int elem)
{
	struct rpc_val in[4], out[2];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if (dptr == NULL || pitch == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = width;
	in[2].u = height;
	in[3].u = elem;
	rc = rcall(R_MEM_ALLOC_PITCH, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	*dptr = out[0].u;
	*pitch = (size_t)out[1].u;
	mem_add(out[0].u, out[1].u * height, c, 0, 0);
	return CUDA_SUCCESS;
}

CUresult
cuMemFree_v2(CUdeviceptr p)
{
	struct gctx *c;
	struct alloc a;
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (p == 0)
		return CUDA_SUCCESS;
	/* The allocation's own context, which need not be current. */
	if (mem_lookup(p, &a) == -1 || a.host || a.base != p)
		return CUDA_ERROR_INVALID_VALUE;
	c = a.ctx;
	if (!c->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if ((rc = pool_free(c, p, a.size)) == CUDA_SUCCESS)
		mem_del(p, 0);
	return rc;
}

CUresult
cuMemGetInfo_v2(size_t *freep, size_t *totalp)
{
	struct rpc_val in[1], out[2];
	struct gctx *c;
	void *keep;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	rc = rcall(R_MEM_GET_INFO, in, out, &keep);
	free(keep);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* The pool's stock is this context's to allocate. */
	if (freep != NULL)
		*freep = (size_t)(out[0].u + pool_stock(c));
	if (totalp != NULL)
		*totalp = (size_t)out[1].u;
	return CUDA_SUCCESS;
}

CUresult
cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	struct alloc a;

	if (mem_lookup(p, &a) == -1 || a.host)
		return CUDA_ERROR_NOT_FOUND;
	if (base != NULL)
		*base = a.base;
	if (size != NULL)
		*size = a.size;
	return CUDA_SUCCESS;
}

/*
 * Mapped host memory (CU_MEMHOSTALLOC_DEVICEMAP), which kernels read and
 * write in place (cuDNN keeps a status word so): the GPU is on another
 * machine, so the memory is a device allocation on the server with a
 * host copy here, kept coherent at the points where a program may look:
 * before work that may read it (launches, copies, memsets) the host side
 * goes to the device if it changed since (a shadow copy tells); after the
 * host waited for the device (a synchronize, a query that found the work
 * done, a blocking copy) the device side comes back.  The host copy is
 * mapped at the device allocation's own address where that address is
 * free here, so that, with unified addressing, the host pointer is the
 * device pointer too, as on a GPU; else cuMemHostGetDevicePointer gives
 * the device's.  Meant for small buffers: MAPPED_MAX bytes in all.
 * The device side comes back only if device work that could have written
 * it was sent since it last came back (map_gen): a kernel, or a copy or
 * memset whose destination may be a mapped buffer.
 */
#define MAPPED_MAX	(16u << 20)

struct mapped {
	uint8_t		*host, *shadow;
	CUdeviceptr	 dev;
	size_t		 size;
	struct gctx	*ctx;
	int		 fixed;		/* host == dev: mmap'd there */
};

static pthread_mutex_t	 map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapped	 maps[MAPPED_N];
static int		 nmaps;
static size_t		 mapped_bytes;
static int		 mapped_on;	/* nmaps > 0, read without the lock */
static __thread int	 in_mapped;	/* our own copies: no hooks */
static uint64_t		 map_gen;	/* device work that may write them */
static uint64_t		 map_pulled;	/* map_gen when last pulled */

void
client_mapped_touch(uint16_t type, const struct rpc_val *in)
{
	uint64_t len;
	int i, hit = 0;

	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped)
		return;
	switch (type) {
	case R_MEM_HTOD:
	case R_MEM_HTOD_LANES:
		/* Inputs into ordinary device memory leave them alone. */
		len = type == R_MEM_HTOD ? in[4].len : in[4].u;
		pthread_mutex_lock(&map_lock);
		for (i = 0; i < nmaps && !hit; i++)
			hit = in[3].u < maps[i].dev + maps[i].size &&
			    maps[i].dev < in[3].u + len;
		pthread_mutex_unlock(&map_lock);
		if (!hit)
			return;
		break;
	case R_LAUNCH:
	case R_LAUNCH_EX:
	case R_MEM_DTOD:
	case R_MEM_3D:
	case R_MEMSET:
	case R_CACHE_HTOD:
	case R_CACHE_HELD:
		break;
	default:
		return;
	}
	__atomic_add_fetch(&map_gen, 1, __ATOMIC_ACQ_REL);
}

static void
mapped_push_locked(void)
{
	struct rpc_val in[5];
	int i;

	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];

		if (!m->ctx->live || memcmp(m->host, m->shadow, m->size) == 0)
			continue;
		memcpy(m->shadow, m->host, m->size);
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev;
		in[4].p = m->shadow;
		in[4].len = (uint32_t)m->size;
		rpost(R_MEM_HTOD, in, 0);
	}
}

void
client_mapped_push(void)
{
	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped)
		return;
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	mapped_push_locked();
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
}

int
client_mapped_pull_begin(struct mpull *mp)
{
	struct rpc_val in[5];
	int i;

	mp->n = 0;
	if (!__atomic_load_n(&mapped_on, __ATOMIC_ACQUIRE) || in_mapped)
		return 0;
	in_mapped = 1;
	pthread_mutex_lock(&map_lock);
	/* Host writes since the last push first, or they would be lost. */
	mapped_push_locked();
	mp->gen = __atomic_load_n(&map_gen, __ATOMIC_ACQUIRE);
	if (mp->gen == map_pulled) {
		pthread_mutex_unlock(&map_lock);
		in_mapped = 0;
		return 0;
	}
	for (i = 0; i < nmaps; i++) {
		struct mapped *m = &maps[i];
		struct rwait *w = &mp->w[mp->n];

		if (!m->ctx->live)
			continue;
		in[0].u = gobj_id(m->ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m->dev;
		in[4].u = m->size;
		memset(w, 0, sizeof *w);
		w->beside = 1;
		if (rsend(R_MEM_DTOH, in, 0, w) != CUDA_SUCCESS)
			break;
		mp->idx[mp->n++] = i;
	}
	/* map_lock stays held until the end: the buffers stay put. */
	return 1;
}

void
client_mapped_pull_end(struct mpull *mp, int ok, uint64_t qstart,
    uint64_t *qend)
{
	struct rpc_val out[1];
	uint64_t at = qstart;
	void *keep;
	int i, all = 1;

	for (i = 0; i < mp->n; i++) {
		struct mapped *m = &maps[mp->idx[i]];
		CUresult rc = rwait(&mp->w[i], out, &keep);

		if (rc == CUDA_SUCCESS && ok && out[0].len == m->size) {
			memcpy(m->host, out[0].p, m->size);
			memcpy(m->shadow, out[0].p, m->size);
		} else
			all = 0;
		free(keep);
		/* Contiguous with the call it went beside? */
		if (mp->w[i].qstart != at)
			at = 0;
		else
			at = mp->w[i].qend;
	}
	if (all && ok)
		map_pulled = mp->gen;
	*qend = at;
	pthread_mutex_unlock(&map_lock);
	in_mapped = 0;
}

static CUresult
mapped_alloc(void **pp, size_t size, unsigned flags)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	struct mapped m;
	CUresult rc;
	void *p;

	memset(&m, 0, sizeof m);
	if ((rc = ctx_need(&m.ctx)) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&map_lock);
	if (nmaps == MAPPED_N || mapped_bytes + len > MAPPED_MAX) {
		pthread_mutex_unlock(&map_lock);
		log_warn("cuMemHostAlloc: mapped host memory is emulated for "
		    "%u buffers and %u MiB in all: refused", MAPPED_N,
		    MAPPED_MAX >> 20);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&map_lock);
	if ((rc = cuMemAlloc_v2(&m.dev, len)) != CUDA_SUCCESS)
		return rc;
	m.size = size;
	p = mmap((void *)(uintptr_t)m.dev, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != (void *)(uintptr_t)m.dev) {
		munmap(p, len);		/* an old kernel's hint, not ours */
		p = MAP_FAILED;
	}
	if (p != MAP_FAILED)
		m.fixed = 1;
	else if (posix_memalign(&p, 4096, len) != 0) {
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	} else
		memset(p, 0, len);
	m.host = p;
	if ((m.shadow = calloc(1, len)) == NULL ||
	    (!m.fixed && mem_add((uintptr_t)p, size, m.ctx, 1, flags) == -1)) {
		free(m.shadow);
		if (m.fixed)
			munmap(p, len);
		else
			free(p);
		cuMemFree_v2(m.dev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* Both sides start as zeros: the device's is written once. */
	pthread_mutex_lock(&map_lock);
	maps[nmaps++] = m;
	mapped_bytes += len;
	__atomic_store_n(&mapped_on, 1, __ATOMIC_RELEASE);
	in_mapped = 1;
	{
		struct rpc_val in[5];

		in[0].u = gobj_id(m.ctx);
		in[1].u = 0;
		in[2].u = 0;
		in[3].u = m.dev;
		in[4].p = m.shadow;
		in[4].len = (uint32_t)m.size;
		rpost(R_MEM_HTOD, in, 0);
	}
	in_mapped = 0;
	pthread_mutex_unlock(&map_lock);
	*pp = p;
	return CUDA_SUCCESS;
}

/* The mapped buffer holding p, removed; 0 if there was one. */
static int
mapped_free(void *p)
{
	struct mapped m;
	int i;

	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++)
		if (maps[i].host == p)
			break;
	if (i == nmaps) {
		pthread_mutex_unlock(&map_lock);
		return -1;
	}
	m = maps[i];
	maps[i] = maps[--nmaps];
	mapped_bytes -= (m.size + 4095) & ~(size_t)4095;
	if (nmaps == 0)
		__atomic_store_n(&mapped_on, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&map_lock);
	if (m.ctx->live)
		cuMemFree_v2(m.dev);
	else
		mem_del(m.dev, 0);
	if (m.fixed)
		munmap(m.host, (m.size + 4095) & ~(size_t)4095);
	else {
		mem_del((uintptr_t)m.host, 1);
		free(m.host);
	}
	free(m.shadow);
	return 0;
}

CUresult
cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int flags)
{
	uint8_t *b = p;
	int i;

	if (d == NULL || p == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&map_lock);
	for (i = 0; i < nmaps; i++)
		if (b >= maps[i].host && b < maps[i].host + maps[i].size) {
			*d = maps[i].dev + (CUdeviceptr)(b - maps[i].host);
			pthread_mutex_unlock(&map_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&map_lock);
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuMemHostGetDevicePointer(CUdeviceptr_v1 *d, void *p, unsigned int flags)
{
	CUdeviceptr v;
	CUresult rc;

	if (d == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cuMemHostGetDevicePointer_v2(&v, p, flags)) ==
	    CUDA_SUCCESS)
		*d = (CUdeviceptr_v1)v;
	return rc;
}

/* Host memory: ordinary memory, remembered so it can be recognised. */
CUresult
cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	void *p;

	if (pp == NULL || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
		return mapped_alloc(pp, size, flags);
	if (posix_memalign(&p, 4096, size) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (mem_add((uintptr_t)p, size, ctx_current(), 1, flags) == -1) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult
cuMemAllocHost_v2(void **pp, size_t size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemAllocHost(void **pp, unsigned int size)
{
	return cuMemHostAlloc(pp, size, 0);
}

CUresult
cuMemFreeHost(void *p)
{
	/* Copies on their way into it land first. */
	rdrain_detached();
	if (mapped_free(p) == 0)
		return CUDA_SUCCESS;
	if (mem_del((uintptr_t)p, 1) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	free(p);
	return CUDA_SUCCESS;
}

CUresult
cuMemHostGetFlags(unsigned int *flags, void *p)
{
	struct alloc a;

	if (flags == NULL || mem_lookup((uintptr_t)p, &a) == -1 || !a.host)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = a.flags;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
	struct alloc a;

	if (p == NULL || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & (CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (mem_lookup((uintptr_t)p, &a) == 0)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (mem_add((uintptr_t)p, size, ctx_current(), 2, flags) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult
cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	return cuMemHostRegister_v2(p, size, flags);
}

CUresult
cuMemHostUnregister(void *p)
{
	rdrain_detached();
	if (mem_del((uintptr_t)p, 2) == -1)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	return CUDA_SUCCESS;
}

/* ---- copies ------------------------------------------------------------ */

/*
 * Is [p, p + n) inside device memory this client allocated?  Then stream-
 * ordered work on it cannot fail for its address and goes one-way; other
 * addresses (a module's globals, say) wait for the server's answer.
 */
static int
dev_range_known(CUdeviceptr p, size_t n)
{
	size_t base, size;

	return mem_is_device(p, &base, &size) && p - base <= size &&
	    n <= size - (p - base);
}

/*
 * Copies go in pieces of this size, pipelined.  Host-to-device pieces are
 * smaller: the first leaves once it is queued, so a copy of a few MiB (a
 * batch of inputs) is on the wire while the rest is still being queued,
 * and the server copies one piece to the device while the next arrives.
 */
#define BULK_CHUNK	(4u << 20)
#define HTOD_CHUNK	(1u << 20)

static CUresult
copy_htod(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n)
{
	struct rpc_val in[5], out[1];
	size_t max = rcall_max_payload(), k;
	int known = dev_range_known(dst, n);
	void *keep;
	CUresult rc = CUDA_SUCCESS;

	/* Large copies by name first: the weight cache (wcache.c). */
	if (wcache_htod(c, sid, async, dst, src, n, &rc))
		return rc;
	/* Large ones over the bulk lanes, where there are any. */
	if (known && lanes_htod(gobj_id(c), sid, async, dst, src, n, &rc))
		return rc;
	if (max > HTOD_CHUNK)
		max = HTOD_CHUNK;
	while (n > 0) {
		k = n < max ? n : max;
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = dst;
		in[4].p = src;
		in[4].len = (uint32_t)k;
		/* The bytes are copied into the queue: src is free again. */
		if (known)
			rc = rpost(R_MEM_HTOD, in, RP_BULK | RP_KEEPIDLE);
		else {
			rc = rcall(R_MEM_HTOD, in, out, &keep);
			free(keep);
		}
		if (rc != CUDA_SUCCESS)
			return rc;
		dst += k;
		src = (const char *)src + k;
		n -= k;
	}
	return rc;
}

/* Device-to-host pieces asked for ahead of the one being received. */
#define DTOH_AHEAD	8
#define DTOH_SPLIT	4		/* pieces of a copy at least */
#define DTOH_PIECE_MIN	(256u << 10)	/* bytes: no smaller pieces */

/*
 * An asynchronous copy into pinned memory, as on a GPU, returns at once:
 * each piece's reply lands in the buffer when it comes, ahead of the reply
 * to any later synchronization (one connection keeps the order).
 */
static CUresult
copy_dtoh_pinned(struct gctx *c, uint64_t sid, void *dst, CUdeviceptr src,
    size_t n)
{
	struct rpc_val in[5];
	size_t max = rcall_max_payload(), k;
	CUresult rc;

	if (max > BULK_CHUNK)
		max = BULK_CHUNK;
	while (n > 0) {
		k = n < max ? n : max;
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = 1;
		in[3].u = src;
		in[4].u = k;
		if ((rc = rsend_detached(R_MEM_DTOH, in, dst, k)) !=
		    CUDA_SUCCESS)
			return rc;
		dst = (char *)dst + k;
		src += k;
		n -= k;
	}
	return CUDA_SUCCESS;
}

/*
 * The end of a device-to-host copy whose last piece's reply was queued at
 * last: mapped memory pulled (mp, if the copy began a pull), and the
 * stream marked idle.  The stream was done with everything before the
 * last piece: the server waited for it (an async copy) or the copy did (a
 * sync one, in the NULL or per-thread stream, as a GPU's does).
 */
static CUresult
dtoh_finish(struct gctx *c, uint64_t sid, CUresult rc, struct mpull *mp,
    uint64_t last)
{
	uint64_t mark = last;

	if (mp != NULL)
		client_mapped_pull_end(mp, rc == CUDA_SUCCESS, last, &mark);
	if (rc == CUDA_SUCCESS && mark != 0)
		ridle_set(gobj_id(c), sid, mark);
	return rc;
}

/*
 * A large copy out of known device memory over the bulk lanes (lanes.h),
 * held by the caller: each piece's call, then its stripes, then its
 * reply; mapped memory and the stream's idle mark as for copy_dtoh.
 */
static CUresult
copy_dtoh_lanes(struct gctx *c, uint64_t sid, int async, void *dst,
    CUdeviceptr src, size_t n)
{
	struct rpc_val in[5], out[1];
	struct rwait w;
	struct mpull mp;
	uint64_t last = 0;
	size_t k, off;
	int pull = 0;
	void *keep;
	CUresult rc = CUDA_SUCCESS, rc2;

	for (off = 0; off < n && rc == CUDA_SUCCESS; off += k) {
		k = n - off < LANES_PIECE_MAX ? n - off : LANES_PIECE_MAX;
		memset(in, 0, sizeof in);
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = src + off;
		in[4].u = k;
		memset(&w, 0, sizeof w);
		/* One wait for the program, as for the pieces of copy_dtoh. */
		w.beside = off > 0;
		if ((rc = rsend(R_MEM_DTOH_LANES, in, 0, &w)) != CUDA_SUCCESS)
			break;
		if (off + k == n)
			pull = client_mapped_pull_begin(&mp);
		if (lanes_in((char *)dst + off, k) != 0)
			rc = CUDA_ERROR_DEVICE_UNAVAILABLE;
		keep = NULL;
		rc2 = rwait(&w, out, &keep);
		free(keep);
		if (rc == CUDA_SUCCESS)
			rc = rc2;
		last = w.qend;
	}
	return dtoh_finish(c, sid, rc, pull ? &mp : NULL, last);
}

static CUresult
copy_dtoh(struct gctx *c, uint64_t sid, int async, void *dst,
    CUdeviceptr src, size_t n)
{
	struct rwait w[DTOH_AHEAD];
	size_t len[DTOH_AHEAD];
	char *at[DTOH_AHEAD];
	struct rpc_val in[5], out[1];
	size_t max = rcall_max_payload();
	unsigned head = 0, tail = 0;	/* sent, received */
	CUresult rc = CUDA_SUCCESS, rc2;
	uint64_t last = 0;
	struct mpull mp;
	int pull = 0;
	void *keep;

	if (async && !rsync_mode() && n > 0 && dev_range_known(src, n)) {
		struct alloc a;

		if (mem_lookup((uintptr_t)dst, &a) == 0 && a.host &&
		    (uintptr_t)dst - a.base <= a.size &&
		    n <= a.size - ((uintptr_t)dst - a.base))
			return copy_dtoh_pinned(c, sid, dst, src, n);
	}
	/* Large ones over the bulk lanes, where there are any. */
	if (!rsync_mode() && n > 0 && dev_range_known(src, n) &&
	    lanes_hold(n, 1)) {
		rc = copy_dtoh_lanes(c, sid, async, dst, src, n);
		lanes_release();
		return rc;
	}
	if (max > BULK_CHUNK)
		max = BULK_CHUNK;
	/*
	 * A copy of a few MiB (a step's outputs) in four pieces at least:
	 * the server copies a piece off the device while the link carries
	 * another (which the I/O thread receives straight into dst).
	 */
	if (n / DTOH_SPLIT < max)
		max = n / DTOH_SPLIT < DTOH_PIECE_MIN ? DTOH_PIECE_MIN :
		    (n / DTOH_SPLIT + 4095) & ~(size_t)4095;
	while (tail < head || n > 0) {
		/* Keep several pieces in flight: the link stays busy. */
		while (n > 0 && head - tail < DTOH_AHEAD &&
		    rc == CUDA_SUCCESS) {
			size_t k = n < max ? n : max;
			unsigned i = head % DTOH_AHEAD;

			in[0].u = gobj_id(c);
			in[1].u = sid;
			in[2].u = (uint64_t)async;
			in[3].u = src;
			in[4].u = k;
			memset(&w[i], 0, sizeof w[i]);
			w[i].dst = dst;
			w[i].dstlen = k;
			/* One wait for the program, one round trip in the
			 * statistics: the later pieces stream in behind. */
			w[i].beside = head > 0;
			if ((rc = rsend(R_MEM_DTOH, in, 0, &w[i])) !=
			    CUDA_SUCCESS)
				break;
			len[i] = k;
			at[i] = dst;
			head++;
			dst = (char *)dst + k;
			src += k;
			n -= k;
			/* The host will have waited: mapped memory comes back
			 * with the last piece. */
			if (n == 0)
				pull = client_mapped_pull_begin(&mp);
		}
		if (tail == head)
			break;
		{
			unsigned i = tail % DTOH_AHEAD;

			rc2 = rwait(&w[i], out, &keep);
			if (rc2 == CUDA_SUCCESS && out[0].len != len[i])
				rc2 = CUDA_ERROR_UNKNOWN;
			if (rc2 == CUDA_SUCCESS && out[0].p != at[i])
				memcpy(at[i], out[0].p, len[i]);
			free(keep);
			if (rc == CUDA_SUCCESS)
				rc = rc2;
			last = w[i].qend;
			tail++;
		}
		if (rc != CUDA_SUCCESS)
			n = 0;	/* collect what is in flight, then fail */
	}
	return dtoh_finish(c, sid, rc, pull ? &mp : NULL, last);
}

static CUresult
copy_dtod(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    CUdeviceptr src, size_t n)
{
	struct rpc_val in[6], out[1];
	void *keep;
	CUresult rc;

	if (n == 0)
		return CUDA_SUCCESS;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = dst;
	in[4].u = src;
	in[5].u = n;
	if (dev_range_known(dst, n) && dev_range_known(src, n))
		return rpost(R_MEM_DTOD, in, 0);
	rc = rcall(R_MEM_DTOD, in, out, &keep);
	free(keep);
	return rc;
}

/* The context and stream id of a copy. */
static CUresult
copy_prep(CUstream s, int ptsz, struct gctx **c, uint64_t *sid)
{
	CUresult rc;

	if ((rc = ctx_need(c)) != CUDA_SUCCESS)
		return rc;
	return stream_id(s, ptsz, sid);
}

#define COPY_FNS(suffix, ptsz)						\
CUresult								\
cuMemcpyHtoD##suffix(CUdeviceptr dst, const void *src, size_t n)	\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_htod(c, sid, 0, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoH##suffix(void *dst, CUdeviceptr src, size_t n)		\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtoh(c, sid, 0, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoD##suffix(CUdeviceptr dst, CUdeviceptr src, size_t n)	\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(NULL, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtod(c, sid, 0, dst, src, n);			\
}
COPY_FNS(_v2, 0)
COPY_FNS(_v2_ptds, 1)

#define ACOPY_FNS(suffix, ptsz)						\
CUresult								\
cuMemcpyHtoDAsync##suffix(CUdeviceptr dst, const void *src, size_t n,	\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_htod(c, sid, 1, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoHAsync##suffix(void *dst, CUdeviceptr src, size_t n,		\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtoh(c, sid, 1, dst, src, n);			\
}									\
CUresult								\
cuMemcpyDtoDAsync##suffix(CUdeviceptr dst, CUdeviceptr src, size_t n,	\
    CUstream s)								\
{									\
	struct gctx *c; uint64_t sid; CUresult rc;			\
	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)	\
		return rc;						\
	return copy_dtod(c, sid, 1, dst, src, n);			\
}
ACOPY_FNS(_v2, 0)
ACOPY_FNS(_v2_ptsz, 1)

/* cuMemcpy: the direction from the addresses, as unified addressing does. */
static CUresult
copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s,
    int async, int ptsz)
{
	struct gctx *c;
	uint64_t sid;
	int dd, sd;
	CUresult rc;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	dd = mem_is_device(dst, NULL, NULL);
	sd = mem_is_device(src, NULL, NULL);
	if (dd && sd)
		return copy_dtod(c, sid, async, dst, src, n);
	if (dd)
		return copy_htod(c, sid, async, dst, (const void *)src, n);
	if (sd)
		return copy_dtoh(c, sid, async, (void *)dst, src, n);
	/* Host to host: the stream's earlier work cannot touch it. */
	if (async && sid != 0) {
		/* Order after earlier work on the stream, as the driver does. */
		struct rpc_val in[2], out[1];
		void *keep;

		in[0].u = gobj_id(c);
		in[1].u = sid;
		rc = rcall(R_STREAM_SYNC, in, out, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	memmove((void *)dst, (const void *)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_unified(d, s, n, NULL, 0, 0); }
CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_unified(d, s, n, NULL, 0, 1); }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy_unified(d, s, n, st, 1, 0); }
CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy_unified(d, s, n, st, 1, 1); }

/*
 * 2D and 3D copies.  Host sides travel packed (rows of WidthInBytes, no
 * pitch), in batches of whole rows that fit a frame; the server sees a
 * descriptor whose host side starts at offset 0 of the frame's blob.
 */
struct side {
	int		 dev;		/* device memory */
	uint64_t	 dptr;		/* device: base */
	char		*hptr;		/* host: base */
	size_t		 x, y, z, pitch, height;
};

static CUresult
side_of(CUmemorytype t, CUdeviceptr d, const void *h, CUarray a, size_t x,
    size_t y, size_t z, size_t pitch, size_t height, struct side *s)
{
	memset(s, 0, sizeof *s);
	s->x = x;
	s->y = y;
	s->z = z;
	s->pitch = pitch;
	s->height = height;
	switch (t) {
	case CU_MEMORYTYPE_HOST:
		s->hptr = (char *)(uintptr_t)h;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		s->dev = 1;
		s->dptr = d;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		if (mem_is_device(d, NULL, NULL)) {
			s->dev = 1;
			s->dptr = d;
		} else
			s->hptr = (char *)(uintptr_t)d;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
	default:
		(void)a;
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

/* Host address of row (y, z) of a side, at its x offset. */
static char *
side_row(const struct side *s, size_t y, size_t z)
{
	return s->hptr + ((s->z + z) * s->height + s->y + y) * s->pitch + s->x;
}

/* One call: rows [y0, y0+rows) of slice z, or the whole copy if no host. */
static CUresult
copy3d_call(struct gctx *c, uint64_t sid, int async, const struct side *src,
    const struct side *dst, size_t w, size_t h, size_t d, size_t z,
    size_t y0, size_t rows, size_t x0, size_t cols)
{
	struct rpc_val in[5], out[1];
	uint64_t f[20];
	struct pw desc;
	char *blob = NULL;
	void *keep;
	size_t i, n;
	CUresult rc;
	int whole = src->dev && dst->dev;

	memset(f, 0, sizeof f);
	if (whole) {
		rows = h;
		cols = w;
	}
	/* Source. */
	f[0] = src->dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (src->dev) {
		f[1] = src->x + x0; f[2] = src->y + y0; f[3] = src->z + z;
		f[4] = src->dptr; f[5] = src->pitch; f[6] = src->height;
	} else {
		f[5] = cols;
		f[6] = rows;
	}
	f[7] = dst->dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
	if (dst->dev) {
		f[8] = dst->x + x0; f[9] = dst->y + y0; f[10] = dst->z + z;
		f[11] = dst->dptr; f[12] = dst->pitch; f[13] = dst->height;
	} else {
		f[12] = cols;
		f[13] = rows;
	}
	f[14] = cols;
	f[15] = rows;
	f[16] = whole ? d : 1;
	n = rows * cols;
	if (!src->dev) {
		if ((blob = malloc(n ? n : 1)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (i = 0; i < rows; i++)
			memcpy(blob + i * cols, side_row(src, y0 + i, z) + x0,
			    cols);
	}
	pw_init(&desc);
	for (i = 0; i < 20; i++)
		pw_u64(&desc, f[i]);
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].p = desc.p;
	in[3].len = (uint32_t)desc.len;
	in[4].p = blob;
	in[4].len = src->dev ? 0 : (uint32_t)n;
	rc = rcall(R_MEM_3D, in, out, &keep);
	pw_free(&desc);
	free(blob);
	if (rc == CUDA_SUCCESS && !dst->dev) {
		if (out[0].len != n)
			rc = CUDA_ERROR_UNKNOWN;
		else
			for (i = 0; i < rows; i++)
				memcpy(side_row(dst, y0 + i, z) + x0,
				    (const char *)out[0].p + i * cols, cols);
	}
	free(keep);
	return rc;
}

static CUresult
copy3d(const struct side *src, const struct side *dst, size_t w, size_t h,
    size_t d, CUstream s, int async, int ptsz)
{
	struct gctx *c;
	uint64_t sid;
	size_t max = rcall_max_payload(), z, y, rows, x, cols;
	CUresult rc;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	if (w == 0 || h == 0 || d == 0)
		return CUDA_SUCCESS;
	if (!src->dev && !dst->dev) {
		for (z = 0; z < d; z++)
			for (y = 0; y < h; y++)
				memmove(side_row(dst, y, z), side_row(src, y,
				    z), w);
		return CUDA_SUCCESS;
	}
	if (src->dev && dst->dev)
		return copy3d_call(c, sid, async, src, dst, w, h, d, 0, 0, h,
		    0, w);
	for (z = 0; z < d; z++) {
		if (w > max) {
			/* Rows wider than a frame: a row at a time, in pieces. */
			for (y = 0; y < h; y++)
				for (x = 0; x < w; x += cols) {
					cols = w - x < max ? w - x : max;
					rc = copy3d_call(c, sid, async, src,
					    dst, w, h, d, z, y, 1, x, cols);
					if (rc != CUDA_SUCCESS)
						return rc;
				}
			continue;
		}
		for (y = 0; y < h; y += rows) {
			rows = max / w;
			if (rows > h - y)
				rows = h - y;
			rc = copy3d_call(c, sid, async, src, dst, w, h, d, z, y,
			    rows, 0, w);
			if (rc != CUDA_SUCCESS)
				return rc;
		}
	}
	return CUDA_SUCCESS;
}

static CUresult
copy_desc3d(const CUDA_MEMCPY3D *m, CUstream s, int async, int ptsz)
{
	struct side src, dst;
	CUresult rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = side_of(m->srcMemoryType, m->srcDevice, m->srcHost,
	    m->srcArray, m->srcXInBytes, m->srcY, m->srcZ, m->srcPitch,
	    m->srcHeight, &src)) != CUDA_SUCCESS)
		return rc;
	if ((rc = side_of(m->dstMemoryType, m->dstDevice, m->dstHost,
	    m->dstArray, m->dstXInBytes, m->dstY, m->dstZ, m->dstPitch,
	    m->dstHeight, &dst)) != CUDA_SUCCESS)
		return rc;
	if ((m->Height > 1 || m->Depth > 1) && (src.pitch < m->WidthInBytes ||
	    dst.pitch < m->WidthInBytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (m->Depth > 1 && (src.height < m->Height || dst.height < m->Height))
		return CUDA_ERROR_INVALID_VALUE;
	return copy3d(&src, &dst, m->WidthInBytes, m->Height, m->Depth, s,
	    async, ptsz);
}

static CUresult
copy_desc2d(const CUDA_MEMCPY2D *m, CUstream s, int async, int ptsz)
{
	CUDA_MEMCPY3D d;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&d, 0, sizeof d);
	d.srcXInBytes = m->srcXInBytes; d.srcY = m->srcY;
	d.srcMemoryType = m->srcMemoryType; d.srcHost = m->srcHost;
	d.srcDevice = m->srcDevice; d.srcArray = m->srcArray;
	d.srcPitch = m->srcPitch; d.srcHeight = m->srcY + m->Height;
	d.dstXInBytes = m->dstXInBytes; d.dstY = m->dstY;
	d.dstMemoryType = m->dstMemoryType; d.dstHost = m->dstHost;
	d.dstDevice = m->dstDevice; d.dstArray = m->dstArray;
	d.dstPitch = m->dstPitch; d.dstHeight = m->dstY + m->Height;
	d.WidthInBytes = m->WidthInBytes;
	d.Height = m->Height;
	d.Depth = 1;
	if (m->Height > 1 && (m->srcPitch < m->WidthInBytes ||
	    m->dstPitch < m->WidthInBytes))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_desc3d(&d, s, async, ptsz);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 0); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 1); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 0); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *m) { return copy_desc2d(m, NULL, 0, 1); }
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *m, CUstream s) { return copy_desc2d(m, s, 1, 0); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *m, CUstream s) { return copy_desc2d(m, s, 1, 1); }
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *m) { return copy_desc3d(m, NULL, 0, 0); }
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *m) { return copy_desc3d(m, NULL, 0, 1); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *m, CUstream s) { return copy_desc3d(m, s, 1, 0); }
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *m, CUstream s) { return copy_desc3d(m, s, 1, 1); }

/* ---- memset ------------------------------------------------------------ */

static CUresult
mset(CUdeviceptr p, size_t pitch, unsigned v, unsigned el, size_t w,
    size_t h, CUstream s, int async, int ptsz)
{
	struct rpc_val in[9], out[1];
	struct gctx *c;
	uint64_t sid;
	void *keep;
	CUresult rc;

	if ((rc = copy_prep(s, ptsz, &c, &sid)) != CUDA_SUCCESS)
		return rc;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = p;
	in[4].u = pitch;
	in[5].u = v;
	in[6].u = el;
	in[7].u = w;
	in[8].u = h;
	if (w > 0 && h > 0 && el > 0 && (h == 1 || pitch >= w * el) &&
	    dev_range_known(p, (h - 1) * pitch + w * el))
		return rpost(R_MEMSET, in, 0);
	rc = rcall(R_MEMSET, in, out, &keep);
	free(keep);
	return rc;
}

CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { return mset(p, 0, v, 1, n, 1, NULL, 0, 0); }
CUresult cuMemsetD16_v2(CUdeviceptr p, unsigned short v, size_t n) { return mset(p, 0, v, 2, n, 1, NULL, 0, 0); }
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) { return mset(p, 0, v, 4, n, 1, NULL, 0, 0); }
CUresult cuMemsetD8_v2_ptds(CUdeviceptr p, unsigned char v, size_t n) { return mset(p, 0, v, 1, n, 1, NULL, 0, 1); }
CUresult cuMemsetD16_v2_ptds(CUdeviceptr p, unsigned short v, size_t n) { return mset(p, 0, v, 2, n, 1, NULL, 0, 1); }
CUresult cuMemsetD32_v2_ptds(CUdeviceptr p, unsigned int v, size_t n) { return mset(p, 0, v, 4, n, 1, NULL, 0, 1); }
CUresult cuMemsetD2D8_v2(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h) { return mset(p, pitch, v, 1, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D16_v2(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h) { return mset(p, pitch, v, 2, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D32_v2(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h) { return mset(p, pitch, v, 4, w, h, NULL, 0, 0); }
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h) { return mset(p, pitch, v, 1, w, h, NULL, 0, 1); }
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h) { return mset(p, pitch, v, 2, w, h, NULL, 0, 1); }
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h) { return mset(p, pitch, v, 4, w, h, NULL, 0, 1); }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return mset(p, 0, v, 1, n, 1, s, 1, 0); }
CUresult cuMemsetD16Async(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return mset(p, 0, v, 2, n, 1, s, 1, 0); }
CUresult cuMemsetD32Async(CUdeviceptr p, unsigned int v, size_t n, CUstream s) { return mset(p, 0, v, 4, n, 1, s, 1, 0); }
CUresult cuMemsetD8Async_ptsz(CUdeviceptr p, unsigned char v, size_t n, CUstream s) { return mset(p, 0, v, 1, n, 1, s, 1, 1); }
CUresult cuMemsetD16Async_ptsz(CUdeviceptr p, unsigned short v, size_t n, CUstream s) { return mset(p, 0, v, 2, n, 1, s, 1, 1); }
CUresult cuMemsetD32Async_ptsz(CUdeviceptr p, unsigned int v, size_t n, CUstream s) { return mset(p, 0, v, 4, n, 1, s, 1, 1); }
CUresult cuMemsetD2D8Async(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 1, w, h, s, 1, 0); }
CUresult cuMemsetD2D16Async(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 2, w, h, s, 1, 0); }
CUresult cuMemsetD2D32Async(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 4, w, h, s, 1, 0); }
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr p, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 1, w, h, s, 1, 1); }
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr p, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 2, w, h, s, 1, 1); }
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr p, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) { return mset(p, pitch, v, 4, w, h, s, 1, 1); }

/* ---- pointer attributes ------------------------------------------------ */

static CUresult
ptr_attr(void *data, CUpointer_attribute attr, CUdeviceptr p, int strict)
{
	struct alloc a;
	int found = mem_lookup(p, &a) == 0;

	if (!found && strict)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = found ? (CUcontext)a.ctx : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = !found ? 0 : a.host ? CU_MEMORYTYPE_HOST :
		    CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (found && a.host)
			return CUDA_ERROR_NOT_SUPPORTED;	/* not mapped */
		*(CUdeviceptr *)data = found ? p : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (found && !a.host)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = found ? (void *)p : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_MAPPED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		*(int *)data = found && attr == CU_POINTER_ATTRIBUTE_MAPPED ?
		    !a.host : 0;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = found && a.ctx != NULL ? a.ctx->device : -2;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = found ? a.base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = found ? a.size : 0;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = found ? a.base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult
cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
	if (data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return ptr_attr(data, attr, p, 1);
}

CUresult
cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs,
    void **data, CUdeviceptr p)
{
	unsigned i;

	if (attrs == NULL || data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		if (data[i] == NULL)
			continue;
		/* Unknown memory reads as unregistered host memory. */
		if (ptr_attr(data[i], attrs[i], p, 0) != CUDA_SUCCESS &&
		    attrs[i] != CU_POINTER_ATTRIBUTE_DEVICE_POINTER &&
		    attrs[i] != CU_POINTER_ATTRIBUTE_HOST_POINTER)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}
