/* Checked number and unit parsing. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

struct unit {
	const char *name;
	double mult;
};

static const struct unit rate_units[] = {
	{ "bit", 1 }, { "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 },
	{ "tbit", 1e12 }, { "k", 1e3 }, { "m", 1e6 }, { "g", 1e9 },
	{ NULL, 0 }
};

static const struct unit time_units[] = {
	{ "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 },
	{ "m", 60 }, { "min", 60 }, { "h", 3600 }, { NULL, 0 }
};

static const struct unit size_units[] = {
	{ "b", 1 }, { "k", 1024.0 }, { "kb", 1024.0 }, { "kib", 1024.0 },
	{ "m", 1048576.0 }, { "mb", 1048576.0 }, { "mib", 1048576.0 },
	{ "g", 1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
	{ "t", 1099511627776.0 }, { "tb", 1099511627776.0 },
	{ "tib", 1099511627776.0 }, { NULL, 0 }
};

int
parse_int(const char *s, long long min, long long max, long long *out,
    const char **errstr)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) {
		*errstr = "not a number";
		return -1;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0') {
		*errstr = "not a number";
		return -1;
	}
	if (errno == ERANGE) {
		*errstr = "out of range";
		return -1;
	}
	if (v < min) {
		*errstr = "too small";
		return -1;
	}
	if (v > max) {
		*errstr = "too large";
		return -1;
	}
	*out = v;
	return 0;
}

int
parse_double(const char *s, double min, double max, double *out,
    const char **errstr)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) {
		*errstr = "not a number";
		return -1;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0') {
		*errstr = "not a number";
		return -1;
	}
	if (errno == ERANGE || !isfinite(v)) {
		*errstr = "out of range";
		return -1;
	}
	if (v < min) {
		*errstr = "too small";
		return -1;
	}
	if (v > max) {
		*errstr = "too large";
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * A number followed by an optional unit from the table.  Hex and
 * infinities are refused: strtod would take them, a user never means them.
 */
static int
parse_unit(const char *s, const struct unit *units, double dflt, double *out,
    const char **errstr)
{
	static char reason[64];
	const struct unit *u;
	const char *p;
	char *end;
	double v;

	if (s == NULL || *s == '\0') {
		*errstr = "empty value";
		return -1;
	}
	if (*s == '-') {
		*errstr = "negative value";
		return -1;
	}
	if (!isdigit((unsigned char)*s) && *s != '.') {
		*errstr = "not a number";
		return -1;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s) {
		*errstr = "not a number";
		return -1;
	}
	for (p = s; p < end; p++) {
		/* strtod also takes hex and "inf": a user never means those. */
		if (!isdigit((unsigned char)*p) && strchr(".eE+-", *p) == NULL) {
			*errstr = "not a number";
			return -1;
		}
	}
	if (errno == ERANGE || !isfinite(v)) {
		*errstr = "out of range";
		return -1;
	}
	if (*end == '\0') {
		*out = v * dflt;
		return 0;
	}
	for (u = units; u->name != NULL; u++) {
		if (strcasecmp(end, u->name) == 0) {
			*out = v * u->mult;
			if (!isfinite(*out)) {
				*errstr = "out of range";
				return -1;
			}
			return 0;
		}
	}
	snprintf(reason, sizeof reason, "unknown unit '%.32s'", end);
	*errstr = reason;
	return -1;
}

int
parse_rate(const char *s, double *bps, const char **errstr)
{
	double v;

	if (parse_unit(s, rate_units, 1, &v, errstr) == -1)
		return -1;
	if (v < 1) {
		*errstr = "rate below 1 bit/s";
		return -1;
	}
	if (v > 1e13) {
		*errstr = "rate above 10 Tbit/s";
		return -1;
	}
	*bps = v;
	return 0;
}

int
parse_duration(const char *s, double *secs, const char **errstr)
{
	double v;

	if (parse_unit(s, time_units, 1, &v, errstr) == -1)
		return -1;
	if (v > 366.0 * 86400) {
		*errstr = "longer than a year";
		return -1;
	}
	*secs = v;
	return 0;
}

int
parse_size(const char *s, uint64_t *bytes, const char **errstr)
{
	double v;

	if (parse_unit(s, size_units, 1, &v, errstr) == -1)
		return -1;
	if (v >= 18446744073709551615.0) {
		*errstr = "too large";
		return -1;
	}
	if (v != floor(v)) {
		*errstr = "not a whole number of bytes";
		return -1;
	}
	*bytes = (uint64_t)v;
	return 0;
}

int
parse_hostport(const char *s, char *host, size_t hostlen, int *port,
    const char **errstr)
{
	const char *colon, *hend, *hstart = s;
	long long p;
	size_t n;

	if (s == NULL || *s == '\0') {
		*errstr = "empty address";
		return -1;
	}
	if (*s == '[') {
		hstart = s + 1;
		hend = strchr(s, ']');
		if (hend == NULL) {
			*errstr = "missing ']'";
			return -1;
		}
		colon = hend[1] == ':' ? hend + 1 : NULL;
		if (hend[1] != '\0' && colon == NULL) {
			*errstr = "junk after ']'";
			return -1;
		}
	} else {
		colon = strrchr(s, ':');
		if (colon != NULL && strchr(s, ':') != colon) {
			/* A bare IPv6 address: no port. */
			colon = NULL;
			hend = s + strlen(s);
		} else
			hend = colon != NULL ? colon : s + strlen(s);
	}
	n = (size_t)(hend - hstart);
	if (n >= hostlen) {
		*errstr = "host name too long";
		return -1;
	}
	memcpy(host, hstart, n);
	host[n] = '\0';
	if (colon != NULL) {
		if (parse_int(colon + 1, 0, 65535, &p, errstr) == -1) {
			if (strcmp(*errstr, "not a number") == 0)
				*errstr = "bad port";
			else
				*errstr = "port out of range";
			return -1;
		}
		*port = (int)p;
	}
	return 0;
}

int
parse_connect(const char *s, char *host, size_t hostlen, int *port,
    const char **errstr)
{
	if (parse_hostport(s, host, hostlen, port, errstr) == -1)
		return -1;
	if (*port == 0) {
		*errstr = "port 0";
		return -1;
	}
	if (host[0] == '\0') {
		*errstr = "no host";
		return -1;
	}
	return 0;
}

const char *
fmt_rate(double bps, char *buf, size_t len)
{
	if (bps >= 1e9)
		snprintf(buf, len, "%.2f Gbit/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(buf, len, "%.1f Mbit/s", bps / 1e6);
	else if (bps >= 1e3)
		snprintf(buf, len, "%.1f kbit/s", bps / 1e3);
	else
		snprintf(buf, len, "%.0f bit/s", bps);
	return buf;
}

const char *
fmt_duration(double s, char *buf, size_t len)
{
	if (s < 1e-3)
		snprintf(buf, len, "%.1f us", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.3f ms", s * 1e3);
	else
		snprintf(buf, len, "%.3f s", s);
	return buf;
}

const char *
fmt_size(uint64_t b, char *buf, size_t len)
{
	static const char *sfx[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, sfx[i]);
	return buf;
}
