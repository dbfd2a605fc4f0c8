/* The serving thread's learned spin (gap.h). */
#include <stdint.h>
#include <string.h>

#include "gap.h"

#define GAP_SLACK	50000ull	/* ns beyond the gaps' quarter */

void
gaps_add(struct gaps *g, uint64_t ns)
{
	g->v[g->at] = ns;
	g->at = (g->at + 1) % GAPS_N;
	if (g->n < GAPS_N)
		g->n++;
}

uint64_t
gaps_spin(const struct gaps *g, uint64_t base, uint64_t cap)
{
	uint64_t s[GAPS_N], t, p, want;
	unsigned i, j;

	if (cap <= base || g->n < GAPS_N)
		return base;
	memcpy(s, g->v, sizeof s);
	for (i = 1; i < GAPS_N; i++)
		for (j = i; j > 0 && s[j - 1] > s[j]; j--) {
			t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	/* Three of four gaps at most this long. */
	p = s[GAPS_N * 3 / 4 - 1];
	if (p > cap)
		return base;
	want = p + p / 4 + GAP_SLACK;
	if (want > cap)
		want = cap;
	return want > base ? want : base;
}
