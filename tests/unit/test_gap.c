/*
 * The serving thread's learned spin (gleam-serve/gap.c): the configured
 * spin until eight gaps are seen; then a quarter more than the sixth
 * shortest of the last eight and 50 µs, within [base, cap]; the base
 * again once three of the last eight exceed the cap; never more than the
 * cap whatever the gaps; no learning with a cap at or under the base.
 */
#include <stdint.h>
#include <stdio.h>

#include "gap.h"
#include "t.h"

#define US	1000ull
#define MS	1000000ull

static void
fill(struct gaps *g, uint64_t ns, int n)
{
	while (n-- > 0)
		gaps_add(g, ns);
}

int
main(void)
{
	struct gaps g = { 0 };
	uint32_t seed = 7;
	uint64_t s;
	int i, j;

	/* Seven gaps are not enough. */
	fill(&g, 1 * MS, 7);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 200 * US);
	/* The eighth: 1 ms * 1.25 + 50 us. */
	gaps_add(&g, 1 * MS);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 1300 * US);
	/* No learning when the cap is not above the base. */
	CHECK(gaps_spin(&g, 200 * US, 200 * US) == 200 * US);
	CHECK(gaps_spin(&g, 200 * US, 0) == 200 * US);
	/* Two long gaps of eight: still learned. */
	fill(&g, 50 * MS, 2);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 1300 * US);
	/* A third: three of eight beyond the cap, the base again. */
	gaps_add(&g, 50 * MS);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 200 * US);
	/* Gaps just under the cap: the cap, no more. */
	fill(&g, 1900 * US, 8);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 2 * MS);
	/* Short gaps: never under the base. */
	fill(&g, 10 * US, 8);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 200 * US);
	/* Only the last eight count: old long gaps forgotten. */
	fill(&g, 80 * MS, 8);
	fill(&g, 400 * US, 8);
	CHECK(gaps_spin(&g, 200 * US, 2 * MS) == 550 * US);
	/* Random gaps: always within [base, cap]; the base whenever three
	 * of the eight exceed the cap. */
	for (i = 0; i < 100000; i++) {
		uint64_t v, base = 100 * US, cap = 3 * MS;
		int over = 0;

		seed = seed * 1103515245u + 12345u;
		v = (uint64_t)(seed >> 8) % (6 * MS);
		gaps_add(&g, v);
		for (j = 0; j < GAPS_N; j++)
			over += g.v[j] > cap;
		s = gaps_spin(&g, base, cap);
		if (s < base || s > cap || (over >= 3 && s != base)) {
			CHECK(0);
			break;
		}
	}
	CHECK(i == 100000);
	return t_done("test_gap");
}
