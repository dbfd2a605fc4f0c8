/*
 * Table-driven reading of YAML mappings into structs: one row per key
 * (its name, type, where it goes, its range or allowed values), so that a
 * new key is a row and its man-page entry.  Errors name file, line and key,
 * as yamlio's getters do ("serve.yaml:7: spin: at most 100ms").
 *
 *	static const struct cfg_key rows[] = {
 *		{ "lanes", CFG_INT, CFG_FIELD(struct config, lanes),
 *		    .min = 0, .max = 64 },
 *		{ "spin", CFG_DURATION, CFG_FIELD(struct config, spin),
 *		    .hi = 0.1, .why = "at most 100ms" },
 *		{ NULL }
 *	};
 *	if (cfg_read(&d, root, "configuration", rows, &c, &err) == -1) ...
 */
#ifndef GLEAM_CFGTAB_H
#define GLEAM_CFGTAB_H

#include <stddef.h>

#include "yamlio.h"

enum cfg_type {
	CFG_NONE,	/* a known key the caller reads itself */
	CFG_STR,	/* char[len]; choices, if set, lists the values allowed */
	CFG_PATH,	/* char[len]; a relative path is taken from the file's
			   directory, as an admin expects */
	CFG_INT,	/* int or int64_t/uint64_t (by len) in [min, max];
			   double with CFG_ASDBL */
	CFG_DBL,	/* double in [lo, hi] */
	CFG_BOOL,	/* int: true/yes/on or false/no/off */
	CFG_ENUM,	/* int: the index of the value in choices */
	CFG_SIZE,	/* uint64_t bytes ("64k", "2g"); double with CFG_ASDBL */
	CFG_DURATION,	/* double seconds ("10ms", "2s") */
	CFG_RATE,	/* double bit/s ("1gbit") */
	CFG_FUNC,	/* fn parses the value into the struct */
};

/* Flags. */
#define CFG_REQUIRED	0x01	/* missing: an error ("key: missing") */
#define CFG_NULLOK	0x02	/* null (~, empty) leaves the field as it is */
#define CFG_ASDBL	0x04	/* CFG_INT, CFG_SIZE: the field is a double */
#define CFG_GTMIN	0x08	/* the value must be more than lo (or min) */
#define CFG_SAYVAL	0x10	/* why follows the value: "'0': must be ..." */
#define CFG_NONEMPTY	0x20	/* CFG_STR: "" is an error ("key: empty") */

struct cfg_key;
/* A CFG_FUNC row's parser: base is the struct being filled. */
typedef int cfg_fn(struct ydoc *, yaml_node_t *, const struct cfg_key *,
	    void *base, struct yerr *);

struct cfg_key {
	const char		*name;
	enum cfg_type		 type;
	size_t			 off;	/* of the field in the struct */
	size_t			 len;	/* of the field */
	int			 flags;
	long long		 min, max; /* CFG_INT, CFG_SIZE; both 0: any */
	double			 lo, hi;   /* CFG_DBL, DURATION, RATE; hi 0: any */
	const char *const	*choices;  /* CFG_STR, CFG_ENUM; NULL-ended */
	const char		*why;	/* the range error, if not the default */
	cfg_fn			*fn;	/* CFG_FUNC */
};

/* A row's .off and .len for a field of a struct. */
#define CFG_FIELD(type, field)						\
	offsetof(type, field), sizeof(((type *)0)->field)

/* The row named name, or NULL; the table ends with a NULL name. */
const struct cfg_key *cfg_find(const struct cfg_key *, const char *name);
/*
 * Checks that map is a mapping whose keys are scalars, each given once and
 * each a row of tab or of more (NULL for none); where names the mapping in
 * the error ("configuration: unknown key 'listen_port'").
 */
int	cfg_check(struct ydoc *, yaml_node_t *map, const char *where,
	    const struct cfg_key *tab, const struct cfg_key *more,
	    struct yerr *);
/*
 * Reads each row's key of map, in the table's order, into base; an absent
 * key leaves its field as it is (defaults are the caller's), unless the row
 * is CFG_REQUIRED.  Unknown keys are not looked at.
 */
int	cfg_fill(struct ydoc *, yaml_node_t *map, const struct cfg_key *tab,
	    void *base, struct yerr *);
/* One row of cfg_fill. */
int	cfg_get(struct ydoc *, yaml_node_t *map, const struct cfg_key *,
	    void *base, struct yerr *);
/* cfg_check without more, then cfg_fill. */
int	cfg_read(struct ydoc *, yaml_node_t *map, const char *where,
	    const struct cfg_key *tab, void *base, struct yerr *);

#endif
