/*
 * hcpar: a pool of threads that each wait for the next region's
 * generation, run their part and count themselves out.  A codec call
 * makes a few regions in a row, a fraction of a millisecond apart, and
 * waking a sleeping thread can cost a tenth of that on a virtual
 * machine: members and the caller first spin a little on the counters,
 * then sleep on a condition variable.  A fork in a process that has the
 * pool leaves the child without its threads: the child starts a pool of
 * its own when it needs one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "hcpar.h"
#include "util.h"

/* About 20 to 100 microseconds of spinning before sleeping. */
#define SPINS	(1 << 13)

struct pool {
	pthread_mutex_t	 mu;
	pthread_cond_t	 go, done;
	int		 nthreads;	/* started, parts 1..nthreads */
	_Atomic uint64_t gen;		/* of the region under way */
	hc_part_fn	*fn;		/* set before gen moves */
	void		*arg;
	int		 nparts;
	_Atomic int	 left;		/* members not yet counted out */
};

struct member {
	struct pool	*p;
	int		 part;
	uint64_t	 seen;		/* the generation it was made in */
};

static pthread_mutex_t	 busy = PTHREAD_MUTEX_INITIALIZER;
static struct pool	*pool;
static pthread_once_t	 atfork_once = PTHREAD_ONCE_INIT;

/* The child of a fork has none of the pool's threads: it forgets it. */
static void
atfork_child(void)
{
	pool = NULL;
	pthread_mutex_init(&busy, NULL);
}

static void
atfork_init(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static void *
member_main(void *a)
{
	struct member m = *(struct member *)a;
	struct pool *p = m.p;
	uint64_t seen = m.seen, g;
	int i;

	free(a);
	for (;;) {
		for (i = 0; i < SPINS && (g = atomic_load(&p->gen)) == seen;
		    i++)
			cpu_relax();
		if ((g = atomic_load(&p->gen)) == seen) {
			pthread_mutex_lock(&p->mu);
			while ((g = atomic_load(&p->gen)) == seen)
				pthread_cond_wait(&p->go, &p->mu);
			pthread_mutex_unlock(&p->mu);
		}
		seen = g;
		/* Every member counts itself out, so none lags a region. */
		if (m.part < p->nparts)
			p->fn(p->arg, m.part, p->nparts);
		if (atomic_fetch_sub(&p->left, 1) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

/* Threads for parts 1..want-1, as many as can be had; under busy. */
static struct pool *
pool_grow(int want)
{
	struct member *m;
	pthread_attr_t at;
	pthread_t tid;

	if (pool == NULL) {
		if ((pool = calloc(1, sizeof *pool)) == NULL)
			return NULL;
		pthread_mutex_init(&pool->mu, NULL);
		pthread_cond_init(&pool->go, NULL);
		pthread_cond_init(&pool->done, NULL);
	}
	if (pthread_attr_init(&at) != 0)
		return pool;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	while (pool->nthreads < want - 1) {
		if ((m = malloc(sizeof *m)) == NULL)
			break;
		m->p = pool;
		m->part = pool->nthreads + 1;
		/* A member sees generations from the next one on. */
		m->seen = atomic_load(&pool->gen);
		if (pthread_create(&tid, &at, member_main, m) != 0) {
			free(m);
			break;
		}
		pool->nthreads++;
	}
	pthread_attr_destroy(&at);
	return pool;
}

void
hc_par(int nparts, hc_part_fn *fn, void *arg)
{
	struct pool *p;
	int i, n;

	if (nparts < 1)
		nparts = 1;
	if (nparts > HC_THREADS_MAX)
		nparts = HC_THREADS_MAX;
	p = NULL;
	if (nparts > 1 && pthread_once(&atfork_once, atfork_init) == 0 &&
	    pthread_mutex_trylock(&busy) == 0 && (p = pool_grow(nparts)) ==
	    NULL)
		pthread_mutex_unlock(&busy);
	/* Alone: every part here, one after another. */
	if (p == NULL) {
		for (i = 0; i < nparts; i++)
			fn(arg, i, nparts);
		return;
	}
	/* Parts beyond the threads there are: the caller runs them too. */
	n = p->nthreads + 1 < nparts ? p->nthreads + 1 : nparts;
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->nparts = nparts;
	atomic_store(&p->left, p->nthreads);
	atomic_fetch_add(&p->gen, 1);
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, nparts);
	for (i = n; i < nparts; i++)
		fn(arg, i, nparts);
	for (i = 0; i < SPINS && atomic_load(&p->left) > 0; i++)
		cpu_relax();
	if (atomic_load(&p->left) > 0) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->left) > 0)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_unlock(&busy);
}
