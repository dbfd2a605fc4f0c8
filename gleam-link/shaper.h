/*
 * One direction of an emulated link: bytes read from a source bufferevent
 * are serialized at the rate, behind the bytes already queued, then held
 * for the delay plus a jitter sample and written to the destination
 * bufferevent in order.
 *
 * Contract with the owner (link.c), which owns both bufferevents and their
 * callbacks: it calls shaper_pull when the source has input,
 * shaper_source_eof when the source has sent its FIN, and shaper_drained
 * when the destination's output has fallen to its low watermark.  The
 * shaper calls done(arg) once the FIN has been delivered and the
 * destination's write half shut down; it never frees anything by itself.
 */
#ifndef GLEAM_LINK_SHAPER_H
#define GLEAM_LINK_SHAPER_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;

struct shaper_params {
	double	rate;		/* payload bit/s; 0 means unlimited */
	double	delay;		/* one-way seconds */
	double	jitter;		/* seconds, at most delay */
	size_t	queue;		/* bytes waiting for serialization */
};

/* Bytes held in the destination's output before the source is paused. */
#define SHAPER_OUT_MAX	(256 * 1024)

struct shaper;

struct shaper	*shaper_new(struct event_base *, const struct shaper_params *,
		    uint64_t seed, struct bufferevent *src,
		    struct bufferevent *dst, void (*done)(void *), void *arg);
/* Sets the bufferevent limits that keep the source's input small. */
void		 shaper_setup(struct shaper *);
void		 shaper_pull(struct shaper *);
void		 shaper_source_eof(struct shaper *);
void		 shaper_drained(struct shaper *);
/* Cancels the timers: nothing moves afterwards. */
void		 shaper_stop(struct shaper *);
void		 shaper_free(struct shaper *);
uint64_t	 shaper_delivered(const struct shaper *);
/* Bytes read from the source and not yet delivered. */
size_t		 shaper_held(const struct shaper *);
/* The piece: the most bytes that are serialized as one. */
size_t		 shaper_piece(const struct shaper_params *);

#endif
