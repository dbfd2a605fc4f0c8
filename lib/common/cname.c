/* Content names for the weight cache: see cname.h. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cname.h"

#define BATCH		64	/* leaves hashed between two tree updates */
#define THREADS_MAX	8

static int nthreads;		/* 0: from the core count */

void
cname_threads(int n)
{
	__atomic_store_n(&nthreads, n < 0 ? 0 : n, __ATOMIC_RELAXED);
}

static int
threads(void)
{
	int n = __atomic_load_n(&nthreads, __ATOMIC_RELAXED);
	long c;

	if (n > 0)
		return n < THREADS_MAX ? n : THREADS_MAX;
	c = sysconf(_SC_NPROCESSORS_ONLN);
	return c < 1 ? 1 : c > THREADS_MAX ? THREADS_MAX : (int)c;
}

static void
leaf(const void *p, size_t n, uint8_t out[CNAME_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, CNAME_LEN);
}

/* One batch of leaves, shared by the threads that hash it. */
struct job {
	const uint8_t	*p;
	size_t		 n;		/* bytes of the batch */
	unsigned	 leaves, next;
	uint8_t		 (*out)[CNAME_LEN];
};

static void *
work(void *arg)
{
	struct job *j = arg;
	unsigned i;

	while ((i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) <
	    j->leaves) {
		size_t off = (size_t)i * CNAME_LEAF;
		size_t k = j->n - off < CNAME_LEAF ? j->n - off : CNAME_LEAF;

		leaf(j->p + off, k, j->out[i]);
	}
	return NULL;
}

void
cname(const void *p, size_t n, uint8_t out[CNAME_LEN])
{
	uint8_t d[BATCH][CNAME_LEN], len[8];
	pthread_t t[THREADS_MAX - 1];
	XXH3_state_t st;
	XXH128_canonical_t c;
	const uint8_t *b = p;
	size_t off;
	int nt = threads(), i, started;

	if (n <= CNAME_LEAF) {
		leaf(p, n, out);
		return;
	}
	/* A state on the stack: reset_withSeed keeps the secret of the seed
	 * it finds there, so the state must not hold a stale seed. */
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset_withSeed(&st, CNAME_SEED);
	for (off = 0; off < n; ) {
		size_t chunk = n - off < (size_t)BATCH * CNAME_LEAF ? n - off :
		    (size_t)BATCH * CNAME_LEAF;
		struct job j = { b + off, chunk,
		    (unsigned)((chunk + CNAME_LEAF - 1) / CNAME_LEAF), 0, d };
		int want = (int)j.leaves < nt ? (int)j.leaves : nt;

		/* A thread that cannot start leaves its share to the rest. */
		for (started = 0, i = 0; i < want - 1; i++)
			if (pthread_create(&t[started], NULL, work, &j) == 0)
				started++;
		work(&j);
		for (i = 0; i < started; i++)
			pthread_join(t[i], NULL);
		XXH3_128bits_update(&st, d, (size_t)j.leaves * CNAME_LEN);
		off += chunk;
	}
	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)n >> (8 * i));
	XXH3_128bits_update(&st, len, sizeof len);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, CNAME_LEN);
}
