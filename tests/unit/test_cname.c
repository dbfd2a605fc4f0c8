/* Content names (lib/cname.c): the plain hash up to a leaf, the tree above,
 * the same name whatever the number of threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <sodium.h>

#include "cname.h"
#include "t.h"

/* The strong tree as cname.h defines it, one leaf after another. */
static void
reference_strong(const uint8_t *p, size_t n, uint8_t out[CNAME_STRONG_LEN])
{
	crypto_generichash_state st;
	uint8_t d[CNAME_STRONG_LEN], len[8];
	size_t off, k;
	int i;

	if (n <= CNAME_LEAF) {
		crypto_generichash(out, CNAME_STRONG_LEN, p, n, NULL, 0);
		return;
	}
	crypto_generichash_init(&st, (const uint8_t *)CNAME_STRONG_KEY,
	    strlen(CNAME_STRONG_KEY), CNAME_STRONG_LEN);
	for (off = 0; off < n; off += k) {
		k = n - off < CNAME_LEAF ? n - off : CNAME_LEAF;
		crypto_generichash(d, sizeof d, p + off, k, NULL, 0);
		crypto_generichash_update(&st, d, sizeof d);
	}
	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)n >> (8 * i));
	crypto_generichash_update(&st, len, 8);
	crypto_generichash_final(&st, out, CNAME_STRONG_LEN);
}

/* The tree as cname.h defines it, one leaf after another. */
static void
reference(const uint8_t *p, size_t n, uint8_t out[CNAME_LEN])
{
	XXH128_canonical_t c;
	XXH3_state_t st;
	uint8_t len[8];
	size_t off, k;
	int i;

	XXH3_INITSTATE(&st);
	if (n <= CNAME_LEAF) {
		XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
		memcpy(out, c.digest, CNAME_LEN);
		return;
	}
	XXH3_128bits_reset_withSeed(&st, CNAME_SEED);
	for (off = 0; off < n; off += k) {
		k = n - off < CNAME_LEAF ? n - off : CNAME_LEAF;
		XXH128_canonicalFromHash(&c, XXH3_128bits(p + off, k));
		XXH3_128bits_update(&st, c.digest, CNAME_LEN);
	}
	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)n >> (8 * i));
	XXH3_128bits_update(&st, len, 8);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, CNAME_LEN);
}

int
main(void)
{
	/* Past one batch of 64 leaves, so that batches are folded too. */
	size_t max = 64 * (size_t)CNAME_LEAF + 3 * CNAME_LEAF + 12345;
	size_t sizes[] = { 0, 1, 3, 4095, CNAME_LEAF - 1, CNAME_LEAF,
	    CNAME_LEAF + 1, 2 * CNAME_LEAF, 5 * CNAME_LEAF + 7,
	    64 * (size_t)CNAME_LEAF, max };
	int threads[] = { 1, 2, 3, 8, 0 };
	uint8_t want[CNAME_LEN], got[CNAME_LEN], other[CNAME_LEN];
	uint8_t swant[CNAME_STRONG_LEN], sgot[CNAME_STRONG_LEN];
	XXH128_canonical_t c;
	uint8_t *p;
	size_t i, j;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if ((p = malloc(max)) == NULL) {
		fprintf(stderr, "test_cname: no memory\n");
		return 1;
	}
	for (i = 0; i < max; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)x;
	}
	/* Up to a leaf it is the plain hash: XXH3-128 of "abc". */
	cname("abc", 3, got);
	XXH128_canonicalFromHash(&c, XXH3_128bits("abc", 3));
	CHECK(memcmp(got, c.digest, CNAME_LEN) == 0);
	CHECK(got[0] == 0x06 && got[1] == 0xb0 && got[15] == 0x50);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		reference(p, sizes[i], want);
		for (j = 0; j < sizeof threads / sizeof threads[0]; j++) {
			cname_threads(threads[j]);
			memset(got, 0, sizeof got);
			cname(p, sizes[i], got);
			CHECK(memcmp(got, want, CNAME_LEN) == 0);
		}
	}
	cname_threads(0);
	/* One byte changed in the last leaf, or one byte fewer: another
	 * name. */
	cname(p, 5 * CNAME_LEAF + 7, want);
	p[5 * CNAME_LEAF + 3] ^= 1;
	cname(p, 5 * CNAME_LEAF + 7, other);
	CHECK(memcmp(want, other, CNAME_LEN) != 0);
	p[5 * CNAME_LEAF + 3] ^= 1;
	cname(p, 5 * CNAME_LEAF + 6, other);
	CHECK(memcmp(want, other, CNAME_LEN) != 0);
	/* The leaves' hashes and length hashed plainly do not collide with
	 * the tree (the tree's root is seeded). */
	{
		uint8_t d[2 * CNAME_LEN + 8];
		size_t n = 2 * CNAME_LEAF;

		for (i = 0; i < 2; i++) {
			XXH128_canonicalFromHash(&c, XXH3_128bits(p +
			    i * CNAME_LEAF, CNAME_LEAF));
			memcpy(d + i * CNAME_LEN, c.digest, CNAME_LEN);
		}
		for (i = 0; i < 8; i++)
			d[2 * CNAME_LEN + i] = (uint8_t)((uint64_t)n >> (8 * i));
		cname(p, n, want);
		cname(d, sizeof d, other);
		CHECK(memcmp(want, other, CNAME_LEN) != 0);
	}
	/* Strong names: BLAKE2b-256 of "abc" (RFC 7693's test vector is
	 * BLAKE2b-512's; this one is from b2sum -l 256). */
	cname_strong("abc", 3, sgot);
	CHECK(sgot[0] == 0xbd && sgot[1] == 0xdd && sgot[31] == 0x19);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		if (sizes[i] > 8 * (size_t)CNAME_LEAF && sizes[i] != max)
			continue;	/* BLAKE2b is slow: fewer sizes */
		reference_strong(p, sizes[i], swant);
		for (j = 0; j < sizeof threads / sizeof threads[0]; j += 2) {
			cname_threads(threads[j]);
			memset(sgot, 0, sizeof sgot);
			cname_strong(p, sizes[i], sgot);
			CHECK(memcmp(sgot, swant, CNAME_STRONG_LEN) == 0);
		}
	}
	cname_threads(0);
	/* The root is keyed: the leaves' digests and length hashed plainly
	 * are another name. */
	{
		uint8_t d[2 * CNAME_STRONG_LEN + 8];
		size_t n = 2 * CNAME_LEAF;

		for (i = 0; i < 2; i++)
			crypto_generichash(d + i * CNAME_STRONG_LEN,
			    CNAME_STRONG_LEN, p + i * CNAME_LEAF, CNAME_LEAF,
			    NULL, 0);
		for (i = 0; i < 8; i++)
			d[2 * CNAME_STRONG_LEN + i] = (uint8_t)((uint64_t)n >>
			    (8 * i));
		cname_strong(p, n, swant);
		cname_strong(d, sizeof d, sgot);
		CHECK(memcmp(swant, sgot, CNAME_STRONG_LEN) != 0);
		p[CNAME_LEAF + 5] ^= 1;
		cname_strong(p, n, sgot);
		CHECK(memcmp(swant, sgot, CNAME_STRONG_LEN) != 0);
		p[CNAME_LEAF + 5] ^= 1;
	}
	free(p);
	return t_done("test_cname");
}
