/*
 * How long a client's serving thread polls for its next request before it
 * sleeps, learned from the gaps between the thread's last reply and the
 * request that followed it.  A client that waits a link's round trip
 * between synchronizations (a decode over a LAN: 1 to 2 ms) sends its
 * next request after the configured spin is over, and the thread's
 * wake-up then adds to every step; when most recent gaps were shorter
 * than a cap, the thread polls somewhat longer than they were.  Only the
 * arithmetic: the caller measures the gaps and polls.
 */
#ifndef GLEAM_GAP_H
#define GLEAM_GAP_H

#include <stdint.h>

#define GAPS_N		8	/* the gaps remembered */

struct gaps {
	uint64_t	 v[GAPS_N];	/* ns, the newest at at - 1 */
	unsigned	 n, at;
};

/* A gap of ns nanoseconds seen: the oldest of GAPS_N forgotten. */
void		gaps_add(struct gaps *, uint64_t ns);
/*
 * How long to poll next: base, or, once GAPS_N gaps were seen and the
 * sixth shortest of them is at most cap, a quarter more than it and
 * 50 µs, at most cap (never less than base).
 */
uint64_t	gaps_spin(const struct gaps *, uint64_t base, uint64_t cap);

#endif
