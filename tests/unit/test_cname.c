/* Content names (lib/cname.c): the plain hash up to a leaf, the tree above,
 * the same name whatever the number of threads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cname.h"
#include "t.h"

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
	free(p);
	return t_done("test_cname");
}
