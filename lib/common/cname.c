/* Content names for the weight cache: see cname.h. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

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

/* The two namings: the digest's length, a leaf's hash, the root's. */
struct naming {
	size_t	 len;
	void	(*leaf)(const void *, size_t, uint8_t *);
};

static void
leaf(const void *p, size_t n, uint8_t *out)
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, CNAME_LEN);
}

static void
leaf_strong(const void *p, size_t n, uint8_t *out)
{
	crypto_generichash(out, CNAME_STRONG_LEN, p, n, NULL, 0);
}

static const struct naming weak = { CNAME_LEN, leaf };
static const struct naming strong = { CNAME_STRONG_LEN, leaf_strong };

/* The root's running hash, of either naming. */
union root {
	XXH3_state_t			x;
	crypto_generichash_state	b;
};

/* One batch of leaves, shared by the threads that hash it. */
struct job {
	const struct naming *nm;
	const uint8_t	*p;
	size_t		 n;		/* bytes of the batch */
	unsigned	 leaves, next;
	uint8_t		 (*out)[CNAME_STRONG_LEN];
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

		j->nm->leaf(j->p + off, k, j->out[i]);
	}
	return NULL;
}

static void
tree(const struct naming *nm, const void *p, size_t n, uint8_t *out)
{
	uint8_t d[BATCH][CNAME_STRONG_LEN], len[8];
	pthread_t t[THREADS_MAX - 1];
	union root st;
	XXH128_canonical_t c;
	const uint8_t *b = p;
	size_t off;
	unsigned k;
	int nt = threads(), i, started;

	if (n <= CNAME_LEAF) {
		nm->leaf(p, n, out);
		return;
	}
	if (nm == &weak) {
		/* A state on the stack: reset_withSeed keeps the secret of
		 * the seed it finds there, so it must not hold a stale one. */
		XXH3_INITSTATE(&st.x);
		XXH3_128bits_reset_withSeed(&st.x, CNAME_SEED);
	} else
		crypto_generichash_init(&st.b, (const uint8_t *)CNAME_STRONG_KEY,
		    sizeof CNAME_STRONG_KEY - 1, CNAME_STRONG_LEN);
	for (off = 0; off < n; ) {
		size_t chunk = n - off < (size_t)BATCH * CNAME_LEAF ? n - off :
		    (size_t)BATCH * CNAME_LEAF;
		struct job j = { nm, b + off, chunk,
		    (unsigned)((chunk + CNAME_LEAF - 1) / CNAME_LEAF), 0, d };
		int want = (int)j.leaves < nt ? (int)j.leaves : nt;

		/* A thread that cannot start leaves its share to the rest. */
		for (started = 0, i = 0; i < want - 1; i++)
			if (pthread_create(&t[started], NULL, work, &j) == 0)
				started++;
		work(&j);
		for (i = 0; i < started; i++)
			pthread_join(t[i], NULL);
		/* The leaves' digests in order, each nm->len bytes. */
		for (k = 0; k < j.leaves; k++) {
			if (nm == &weak)
				XXH3_128bits_update(&st.x, d[k], nm->len);
			else
				crypto_generichash_update(&st.b, d[k],
				    nm->len);
		}
		off += chunk;
	}
	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)n >> (8 * i));
	if (nm == &weak) {
		XXH3_128bits_update(&st.x, len, sizeof len);
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st.x));
		memcpy(out, c.digest, CNAME_LEN);
	} else {
		crypto_generichash_update(&st.b, len, sizeof len);
		crypto_generichash_final(&st.b, out, CNAME_STRONG_LEN);
	}
}

void
cname(const void *p, size_t n, uint8_t out[CNAME_LEN])
{
	tree(&weak, p, n, out);
}

void
cname_strong(const void *p, size_t n, uint8_t out[CNAME_STRONG_LEN])
{
	/* Picks BLAKE2b's fastest code for this CPU (if it cannot start,
	 * the portable code runs: as right, slower). */
	int rc = sodium_init();

	(void)rc;
	tree(&strong, p, n, out);
}
