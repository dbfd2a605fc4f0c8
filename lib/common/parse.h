/*
 * Checked parsing of numbers and units from the command line and from
 * configuration files.  Every function returns 0 on success and -1 on
 * failure with *errstr pointing at a static reason ("out of range",
 * "unknown unit 'zbit'"); trailing junk is always an error.
 */
#ifndef GLEAM_PARSE_H
#define GLEAM_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A decimal integer in [min, max]. */
int	parse_int(const char *, long long min, long long max, long long *,
	    const char **errstr);
/* A finite decimal number in [min, max]. */
int	parse_double(const char *, double min, double max, double *,
	    const char **errstr);
/* A rate in bits per second: "1gbit", "300mbit", "64kbit", "1e9" (bit/s). */
int	parse_rate(const char *, double *bps, const char **errstr);
/* A duration in seconds: "0.5ms", "10us", "2s", "1m"; a bare number is seconds. */
int	parse_duration(const char *, double *secs, const char **errstr);
/* A size in bytes: "4096", "64k", "16m", "2g" (powers of 1024). */
int	parse_size(const char *, uint64_t *bytes, const char **errstr);

/*
 * "host", "host:port", "[v6addr]:port" or ":port".  Port 0 is accepted
 * (a listener takes it to mean "any free port"); connecting callers refuse it.  host is copied into a
 * buffer of hostlen bytes; a missing host leaves it empty, a missing port
 * leaves *port untouched (so the caller's default stands).
 */
int	parse_hostport(const char *, char *host, size_t hostlen, int *port,
	    const char **errstr);
/* As parse_hostport, for a place to connect to: "port 0", "no host" refused. */
int	parse_connect(const char *, char *host, size_t hostlen, int *port,
	    const char **errstr);

/* Human forms for messages and tables: "941.2 Mbit/s", "0.512 ms", "16 MiB". */
const char *fmt_rate(double bps, char *, size_t);
const char *fmt_duration(double secs, char *, size_t);
const char *fmt_size(uint64_t bytes, char *, size_t);

#endif
