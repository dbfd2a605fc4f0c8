/*
 * The one-way allocation pool: cuMemAlloc answered here from a stock of
 * device memory the server made ahead (pool.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "io.h"
#include "memo.h"
#include "pool.h"
#include "log.h"

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
 * (pool_start), while the program is still starting: its allocations
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
	rc = remote_call(R_MEM_POOL, in, out, &keep);
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
pool_start(struct gctx *c)
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
		pool_collect(p, 1);	/* pool_start's */
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
	/*
	 * cuMemFree waits for the device: so does the server, in order
	 * (address 0: the wait alone, which spares a capture in progress).
	 */
	in[0].u = gobj_id(c);
	in[1].u = 0;
	(void)rpost(R_MEM_FREE, in, 0);
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
int
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
CUresult
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
uint64_t
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
pool_drop(struct gctx *c)
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
