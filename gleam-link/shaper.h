/*
 * One direction of an emulated link: bytes read from a source socket are
 * serialized at the rate, behind the bytes already queued, then held for
 * the delay plus a jitter sample, and written in order to the destination
 * bufferevent.
 *
 * Contract with the owner (link.c), which owns the socket and both
 * bufferevents: the shaper reads the source itself (its bufferevent must
 * never read), and writes the destination through its bufferevent, whose
 * write callback must call shaper_drained.  The shaper calls done once
 * the source's FIN has been delivered and the destination's write half
 * shut down, and fail when reading the source fails; after either the
 * owner may free it, but not from inside the callback's caller: the
 * shaper may still touch itself when the callback returns.
 */
#ifndef GLEAM_LINK_SHAPER_H
#define GLEAM_LINK_SHAPER_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;
struct shaper;

struct shaper_params {
	double	rate;		/* payload bit/s; 0 means unlimited */
	double	delay;		/* one-way seconds */
	double	jitter;		/* seconds, at most delay */
	size_t	queue;		/* bytes waiting for serialization */
};

struct shaper_cb {
	void	(*done)(struct shaper *, void *);
	void	(*fail)(struct shaper *, const char *, void *);
	/*
	 * Optional (faults): of n > 0 bytes that have arrived, how many may
	 * be written now; the rest wait for shaper_kick.  delivered tells
	 * the owner how many went out.  Neither may stop or free a shaper.
	 */
	size_t	(*gate)(struct shaper *, size_t n, void *);
	void	(*delivered)(struct shaper *, size_t n, void *);
	void	*arg;
};

/* Bytes held in the destination's output before the source is paused. */
#define SHAPER_OUT_MAX		(256 * 1024)
/* Bytes serialized but still travelling, beyond the queue. */
#define SHAPER_FLIGHT_MAX	(32 * 1024 * 1024)

struct shaper	*shaper_new(struct event_base *, const struct shaper_params *,
		    uint64_t seed, int srcfd, struct bufferevent *dst,
		    const struct shaper_cb *);
/* Starts reading the source. */
void		 shaper_start(struct shaper *);
void		 shaper_drained(struct shaper *);
/* The gate may have opened: deliver what waits. */
void		 shaper_kick(struct shaper *);
/* Stops reading and cancels the timers: nothing moves afterwards. */
void		 shaper_stop(struct shaper *);
void		 shaper_free(struct shaper *);
uint64_t	 shaper_delivered(const struct shaper *);

#endif
