/* Reading YAML mappings into structs from a table of keys. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtab.h"
#include "parse.h"

const struct cfg_key *
cfg_find(const struct cfg_key *tab, const char *name)
{
	for (; tab != NULL && tab->name != NULL; tab++)
		if (strcmp(tab->name, name) == 0)
			return tab;
	return NULL;
}

static size_t
cfg_count(const struct cfg_key *tab)
{
	size_t n = 0;

	while (tab != NULL && tab[n].name != NULL)
		n++;
	return n;
}

/* The names of both tables as ymap_check_keys wants them, for its messages. */
int
cfg_check(struct ydoc *d, yaml_node_t *map, const char *where,
    const struct cfg_key *tab, const struct cfg_key *more, struct yerr *err)
{
	const char **names;
	size_t i, n = 0, nt = cfg_count(tab), nm = cfg_count(more);
	int rc;

	if ((names = calloc(nt + nm + 1, sizeof *names)) == NULL)
		return yerr_at(d, map, where, err, "out of memory");
	for (i = 0; i < nt; i++)
		names[n++] = tab[i].name;
	for (i = 0; i < nm; i++)
		names[n++] = more[i].name;
	rc = ymap_check_keys(d, map, where, names, err);
	free(names);
	return rc;
}

/*
 * A value out of the row's range: the row's own words if it has them,
 * else the bounds in the unit's human form.
 */
static int
cfg_range(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    const char *lo, const char *hi, struct yerr *err)
{
	const char *s = yscalar(n);

	if (k->why != NULL && (k->flags & CFG_SAYVAL))
		return yerr_at(d, n, k->name, err, "'%s': %s", s, k->why);
	if (k->why != NULL)
		return yerr_at(d, n, k->name, err, "%s", k->why);
	if (k->flags & CFG_GTMIN)
		return yerr_at(d, n, k->name, err, "'%s': must be more than "
		    "%s%s%s", s, lo, hi ? " and at most " : "", hi ? hi : "");
	if (hi == NULL)
		return yerr_at(d, n, k->name, err, "'%s': at least %s", s, lo);
	return yerr_at(d, n, k->name, err, "'%s': out of range (allowed %s "
	    "to %s)", s, lo, hi);
}

/* "a, b or c" from a NULL-terminated list. */
static void
cfg_choices(const char *const *c, char *buf, size_t len)
{
	size_t i, n = 0, off = 0;
	int w;

	while (c[n] != NULL)
		n++;
	buf[0] = '\0';
	for (i = 0; i < n && off < len; i++) {
		w = snprintf(buf + off, len - off, "%s%s",
		    i == 0 ? "" : i == n - 1 ? " or " : ", ", c[i]);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

/* The index of the node's text among the row's choices, or -1 (an error). */
static int
cfg_choice(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    const char *s, struct yerr *err)
{
	char all[512];
	int i;

	for (i = 0; k->choices[i] != NULL; i++)
		if (strcmp(k->choices[i], s) == 0)
			return i;
	cfg_choices(k->choices, all, sizeof all);
	return yerr_at(d, n, k->name, err, "'%s': expected %s", s, all);
}

/*
 * A path relative to the file that names it, as an admin expects; in a
 * file read from standard input, relative to the working directory, made
 * absolute so that it survives a daemon's chdir.  "-" (standard input)
 * stays as it is.
 */
static int
cfg_path(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k, char *out,
    struct yerr *err)
{
	char *rel, *dir, *slash;
	int rc = 0;

	if ((rel = malloc(k->len)) == NULL || (dir = d->from_stdin ?
	    getcwd(NULL, 0) : strdup(d->name)) == NULL) {
		free(rel);
		return yerr_at(d, n, k->name, err, "%s", d->from_stdin ?
		    strerror(errno) : "out of memory");
	}
	if (yget_str(d, n, k->name, rel, k->len, err) == -1)
		rc = -1;
	else if (d->from_stdin && rel[0] != '/' && strcmp(rel, "-") != 0) {
		if ((size_t)snprintf(out, k->len, "%s%s%s", dir,
		    strcmp(dir, "/") == 0 ? "" : "/", rel) >= k->len)
			rc = yerr_at(d, n, k->name, err, "too long");
	} else if (rel[0] != '/' && strcmp(rel, "-") != 0 &&
	    (slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		if ((size_t)snprintf(out, k->len, "%s/%s", dir, rel) >= k->len)
			rc = yerr_at(d, n, k->name, err, "too long");
	} else
		memcpy(out, rel, strlen(rel) + 1);
	free(dir);
	free(rel);
	return rc;
}

/* An integer into an int, a 64-bit integer or a double, by the row. */
static int
cfg_int(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k, void *p,
    struct yerr *err)
{
	long long min = k->min, max = k->max, v;
	int iv;
	double dv;

	if (min == 0 && max == 0) {
		min = k->len == sizeof(int) ? INT_MIN : LLONG_MIN;
		max = k->len == sizeof(int) ? INT_MAX : LLONG_MAX;
	}
	if (yget_int(d, n, k->name, min, max, &v, err) == -1)
		return -1;
	if ((k->flags & CFG_GTMIN) && v <= min) {
		char lo[32];

		snprintf(lo, sizeof lo, "%lld", min);
		return cfg_range(d, n, k, lo, NULL, err);
	}
	if (k->flags & CFG_ASDBL) {
		dv = (double)v;
		memcpy(p, &dv, sizeof dv);
	} else if (k->len == sizeof(int)) {
		iv = (int)v;
		memcpy(p, &iv, sizeof iv);
	} else
		memcpy(p, &v, sizeof v);
	return 0;
}

static int
cfg_size(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k, void *p,
    struct yerr *err)
{
	char lo[32], hi[32];
	uint64_t v, min = (uint64_t)k->min, max = (uint64_t)k->max;
	double dv;

	if (yget_size(d, n, k->name, &v, err) == -1)
		return -1;
	if (v < min || ((k->flags & CFG_GTMIN) && v == min) ||
	    (max != 0 && v > max))
		return cfg_range(d, n, k, fmt_size(min, lo, sizeof lo),
		    max != 0 ? fmt_size(max, hi, sizeof hi) : NULL, err);
	if (k->flags & CFG_ASDBL) {
		dv = (double)v;
		memcpy(p, &dv, sizeof dv);
	} else
		memcpy(p, &v, sizeof v);
	return 0;
}

/* A double, a duration or a rate, each in [lo, hi]. */
static int
cfg_dbl(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k, double *v,
    struct yerr *err)
{
	const char *(*fmt)(double, char *, size_t) = NULL;
	char lo[64], hi[64];
	int rc;

	switch (k->type) {
	case CFG_DBL:
		if (k->lo == 0 && k->hi == 0)
			rc = yget_dbl(d, n, k->name, -DBL_MAX, DBL_MAX, v, err);
		else
			rc = yget_dbl(d, n, k->name, k->lo, k->hi, v, err);
		if (rc == -1 || !(k->flags & CFG_GTMIN) || *v > k->lo)
			return rc;
		snprintf(lo, sizeof lo, "%g", k->lo);
		return cfg_range(d, n, k, lo, NULL, err);
	case CFG_DURATION:
		rc = yget_duration(d, n, k->name, v, err);
		fmt = fmt_duration;
		break;
	default:
		rc = yget_rate(d, n, k->name, v, err);
		fmt = fmt_rate;
		break;
	}
	if (rc == -1)
		return -1;
	if (*v < k->lo || ((k->flags & CFG_GTMIN) && *v == k->lo) ||
	    (k->hi != 0 && *v > k->hi))
		return cfg_range(d, n, k, fmt(k->lo, lo, sizeof lo),
		    k->hi != 0 ? fmt(k->hi, hi, sizeof hi) : NULL, err);
	return 0;
}

int
cfg_get(struct ydoc *d, yaml_node_t *map, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	yaml_node_t *n;
	char *p = (char *)base + k->off;
	const char *s;
	double dv;
	int iv;

	if (k->type == CFG_NONE)
		return 0;
	if ((n = ymap_get(d, map, k->name)) == NULL) {
		if (k->flags & CFG_REQUIRED)
			return yerr_at(d, map, k->name, err, "missing");
		return 0;
	}
	if ((k->flags & CFG_NULLOK) && yis_null(n))
		return 0;
	switch (k->type) {
	case CFG_NONE:
		break;
	case CFG_STR:
		if (yget_str(d, n, k->name, p, k->len, err) == -1)
			return -1;
		if ((k->flags & CFG_NONEMPTY) && *p == '\0')
			return yerr_at(d, n, k->name, err, "empty");
		if (k->choices != NULL && cfg_choice(d, n, k, p, err) == -1)
			return -1;
		break;
	case CFG_PATH:
		return cfg_path(d, n, k, p, err);
	case CFG_INT:
		return cfg_int(d, n, k, p, err);
	case CFG_BOOL:
		if (yget_bool(d, n, k->name, &iv, err) == -1)
			return -1;
		memcpy(p, &iv, sizeof iv);
		break;
	case CFG_ENUM:
		if ((s = yscalar(n)) == NULL)	/* for yget_str's message */
			return yget_str(d, n, k->name, NULL, 0, err);
		if ((iv = cfg_choice(d, n, k, s, err)) == -1)
			return -1;
		memcpy(p, &iv, sizeof iv);
		break;
	case CFG_SIZE:
		return cfg_size(d, n, k, p, err);
	case CFG_DBL:
	case CFG_DURATION:
	case CFG_RATE:
		if (cfg_dbl(d, n, k, &dv, err) == -1)
			return -1;
		memcpy(p, &dv, sizeof dv);
		break;
	case CFG_FUNC:
		return k->fn(d, n, k, base, err);
	}
	return 0;
}

int
cfg_fill(struct ydoc *d, yaml_node_t *map, const struct cfg_key *tab,
    void *base, struct yerr *err)
{
	for (; tab->name != NULL; tab++)
		if (cfg_get(d, map, tab, base, err) == -1)
			return -1;
	return 0;
}

int
cfg_read(struct ydoc *d, yaml_node_t *map, const char *where,
    const struct cfg_key *tab, void *base, struct yerr *err)
{
	if (cfg_check(d, map, where, tab, NULL, err) == -1)
		return -1;
	return cfg_fill(d, map, tab, base, err);
}
