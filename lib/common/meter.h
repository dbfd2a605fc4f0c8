/*
 * A progress line for long work (gleam(7), GLEAM_PROGRESS): bytes done of
 * a total, the rate and the time left, rewritten in place with a carriage
 * return at most METER_HZ times a second, and only once the work has
 * lasted METER_DELAY_NS, so that short work shows nothing.  Erased when
 * the work is done.  A meter is not locked: its user serialises.
 */
#ifndef GLEAM_METER_H
#define GLEAM_METER_H

#include <stddef.h>
#include <stdint.h>

#define METER_HZ	4
#define METER_DELAY_NS	(1000ull * 1000 * 1000)

/* meter_mode's answers. */
enum { METER_OFF = 0, METER_TTY = 1, METER_FORCE = 2 };

struct meter {
	int		 fd;
	int		 mode;		/* METER_OFF: draws nothing */
	uint64_t	 t0;		/* the work began, ns */
	uint64_t	 tdraw;		/* last drawn, ns; 0: never */
	size_t		 width;		/* columns drawn, 0: nothing shown */
};

/*
 * How to draw on fd: GLEAM_PROGRESS is auto (the default: METER_TTY if fd
 * is a terminal), 0 or off (METER_OFF), 1 or on (METER_FORCE: on any fd,
 * from the start of the work, for tests and logs).  Another value is
 * warned of, once, and taken as auto.  quiet (a program's -q) wins.
 */
int	meter_mode(int fd, int quiet);
void	meter_start(struct meter *, int fd, int mode, uint64_t now);
/* Whether meter_show would draw at now (a cheap test before the work of
 * counting). */
int	meter_due(const struct meter *, uint64_t now);
/* Draws "what done/total pct rate ETA" if due.  total 0: unknown. */
void	meter_show(struct meter *, const char *what, uint64_t done,
	    uint64_t total, uint64_t now);
/* Erases the line, if one is shown. */
void	meter_done(struct meter *);
/* The line meter_show draws, after secs of work; its length. */
size_t	meter_line(char *, size_t, const char *what, uint64_t done,
	    uint64_t total, double secs);

#endif
