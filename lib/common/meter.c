/* A progress line on a terminal: see meter.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "meter.h"
#include "parse.h"

int
meter_mode(int fd, int quiet)
{
	static int warned;
	const char *s = getenv("GLEAM_PROGRESS");

	if (quiet)
		return METER_OFF;
	if (s != NULL && (strcmp(s, "0") == 0 || strcmp(s, "off") == 0))
		return METER_OFF;
	if (s != NULL && (strcmp(s, "1") == 0 || strcmp(s, "on") == 0))
		return METER_FORCE;
	if (s != NULL && *s != '\0' && strcmp(s, "auto") != 0 &&
	    !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		log_warn("GLEAM_PROGRESS=%s: expected auto, 0, off, 1 or on: "
		    "taken as auto", s);
	return isatty(fd) ? METER_TTY : METER_OFF;
}

void
meter_start(struct meter *m, int fd, int mode, uint64_t now)
{
	m->fd = fd;
	m->mode = mode;
	m->t0 = now;
	m->tdraw = 0;
	m->width = 0;
}

int
meter_due(const struct meter *m, uint64_t now)
{
	if (m->mode == METER_OFF)
		return 0;
	if (m->mode == METER_TTY && now - m->t0 < METER_DELAY_NS)
		return 0;
	return m->tdraw == 0 || now - m->tdraw >= 1000000000ull / METER_HZ;
}

/* "4s", "1m05s", "2h03m": the time left. */
static void
eta(double s, char *buf, size_t len)
{
	unsigned long t = (unsigned long)(s + 0.5);

	if (t < 60)
		snprintf(buf, len, "%lus", t);
	else if (t < 3600)
		snprintf(buf, len, "%lum%02lus", t / 60, t % 60);
	else if (t < 100 * 3600)
		snprintf(buf, len, "%luh%02lum", t / 3600, t / 60 % 60);
	else
		snprintf(buf, len, "long");
}

size_t
meter_line(char *buf, size_t len, const char *what, uint64_t done,
    uint64_t total, double secs)
{
	char d[32], t[32], r[32], e[32];
	double rate = secs > 0 ? (double)done / secs : 0;
	int n;

	fmt_size(done, d, sizeof d);
	if (total > 0) {
		fmt_size(total, t, sizeof t);
		if (done > total)
			done = total;
		n = snprintf(buf, len, "%s %s/%s %d%%", what, d, t,
		    (int)(done * 100.0 / (double)total));
	} else
		n = snprintf(buf, len, "%s %s", what, d);
	if (n < 0 || (size_t)n >= len)
		return n < 0 ? 0 : len - 1;
	if (rate >= 1) {
		fmt_size((uint64_t)rate, r, sizeof r);
		n += snprintf(buf + n, len - (size_t)n, " %s/s", r);
		if ((size_t)n < len && total > done) {
			eta((double)(total - done) / rate, e, sizeof e);
			n += snprintf(buf + n, len - (size_t)n, " ETA %s", e);
		}
	}
	return (size_t)n < len ? (size_t)n : len - 1;
}

/* All of it, or give up quietly: a progress line is not worth an error. */
static void
put(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		if ((k = write(fd, p, n)) <= 0) {
			if (k == -1 && errno == EINTR)
				continue;
			return;
		}
		p += k;
		n -= (size_t)k;
	}
}

void
meter_show(struct meter *m, const char *what, uint64_t done, uint64_t total,
    uint64_t now)
{
	char b[160];
	size_t n, w;

	if (!meter_due(m, now))
		return;
	b[0] = '\r';
	n = 1 + meter_line(b + 1, sizeof b - 1, what, done, total,
	    (double)(now - m->t0) / 1e9);
	/* Blank out what a longer line before left. */
	for (w = n - 1; w < m->width && n < sizeof b; w++)
		b[n++] = ' ';
	put(m->fd, b, n);
	m->width = n - 1;
	m->tdraw = now;
}

void
meter_done(struct meter *m)
{
	char b[162];
	size_t n = 0;

	if (m->width == 0)
		return;
	b[n++] = '\r';
	while (n <= m->width && n < sizeof b - 1)
		b[n++] = ' ';
	b[n++] = '\r';
	put(m->fd, b, n);
	m->width = 0;
}
