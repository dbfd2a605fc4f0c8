/* Unit tests for lib/common/cfgtab.c: every type, its range and its errors. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cfgtab.h"
#include "t.h"

struct conf {
	char		 name[8];
	char		 mode[8];
	char		 dir[64];
	int		 count;
	int64_t		 big;
	double		 reqs;
	double		 ratio;
	int		 on;
	int		 kind;
	uint64_t	 size;
	double		 dsize;
	double		 wait;
	double		 rate;
	double		 pos;
	int		 x, y;
	double		 opt;
};

/* "x,y" into two fields. */
static int
pair_parse(struct ydoc *d, yaml_node_t *n, const struct cfg_key *k,
    void *base, struct yerr *err)
{
	struct conf *c = base;
	const char *s = yscalar(n);

	if (s == NULL || sscanf(s, "%d,%d", &c->x, &c->y) != 2)
		return yerr_at(d, n, k->name, err, "'%s': expected x,y",
		    s ? s : "");
	return 0;
}

static const char *const modes[] = { "fast", "slow", NULL };
static const char *const kinds[] = { "a", "b", "c", NULL };

#define F(f)	CFG_FIELD(struct conf, f)
static const struct cfg_key rows[] = {
	{ "name",	CFG_STR,	F(name) },
	{ "mode",	CFG_STR,	F(mode), .choices = modes },
	{ "dir",	CFG_PATH,	F(dir) },
	{ "count",	CFG_INT,	F(count), .min = 1, .max = 10 },
	{ "big",	CFG_INT,	F(big) },
	{ "reqs",	CFG_INT,	F(reqs), .flags = CFG_ASDBL,
	    .min = 1, .max = 1000 },
	{ "ratio",	CFG_DBL,	F(ratio), .lo = 0, .hi = 1 },
	{ "on",		CFG_BOOL,	F(on) },
	{ "kind",	CFG_ENUM,	F(kind), .choices = kinds },
	{ "size",	CFG_SIZE,	F(size), .min = 1024, .max = 1 << 20 },
	{ "dsize",	CFG_SIZE,	F(dsize), .flags = CFG_ASDBL },
	{ "wait",	CFG_DURATION,	F(wait), .hi = 0.1,
	    .why = "at most 100ms" },
	{ "rate",	CFG_RATE,	F(rate), .lo = 1e3, .hi = 1e9 },
	{ "pos",	CFG_DURATION,	F(pos), .flags = CFG_GTMIN | CFG_SAYVAL,
	    .why = "must be more than 0" },
	{ "pair",	CFG_FUNC,	F(x), .fn = pair_parse },
	{ "opt",	CFG_DBL,	F(opt), .flags = CFG_NULLOK },
	{ "later",	CFG_NONE },
	{ NULL }
};
#undef F

static const struct cfg_key need[] = {
	{ "must", CFG_INT, CFG_FIELD(struct conf, count),
	    .flags = CFG_REQUIRED },
	{ "label", CFG_STR, CFG_FIELD(struct conf, name),
	    .flags = CFG_NONEMPTY },
	{ NULL }
};

static const struct cfg_key extra[] = {
	{ "extra", CFG_NONE },
	{ NULL }
};

/* Reads text with rows into c (defaults first); err.msg on failure. */
static int
read_text(const char *name, const char *text, const struct cfg_key *tab,
    struct conf *c, struct yerr *err)
{
	struct ydoc d;
	int rc;

	memset(c, 0, sizeof *c);
	c->opt = 7;
	memset(err, 0, sizeof *err);
	if (ydoc_load_mem(&d, name, text, strlen(text), err) == -1)
		return -1;
	rc = cfg_read(&d, ydoc_root(&d), "configuration", tab, c, err);
	ydoc_free(&d);
	return rc;
}

/* The error of one bad document, or "ok". */
static const char *
bad(const char *text)
{
	static struct yerr err;
	struct conf c;

	if (read_text("t.yaml", text, rows, &c, &err) == 0)
		return "ok";
	return err.msg;
}

static void
test_types(void)
{
	struct conf c;
	struct yerr err;

	CHECK(read_text("etc/t.yaml",
	    "name: srv\n"
	    "mode: slow\n"
	    "dir: cache\n"
	    "count: 10\n"
	    "big: -9000000000\n"
	    "reqs: 1000\n"
	    "ratio: 0.25\n"
	    "on: yes\n"
	    "kind: c\n"
	    "size: 64k\n"
	    "dsize: 2g\n"
	    "wait: 100ms\n"
	    "rate: 1gbit\n"
	    "pos: 1us\n"
	    "pair: 3,4\n"
	    "opt: ~\n"
	    "later: [anything, at, all]\n", rows, &c, &err) == 0);
	CHECK_STR(c.name, "srv");
	CHECK_STR(c.mode, "slow");
	CHECK_STR(c.dir, "etc/cache");
	CHECK(c.count == 10);
	CHECK(c.big == -9000000000LL);
	CHECK(c.reqs == 1000.0);
	CHECK(c.ratio == 0.25);
	CHECK(c.on == 1);
	CHECK(c.kind == 2);
	CHECK(c.size == 65536);
	CHECK(c.dsize == 2147483648.0);
	CHECK(c.wait > 0.0999 && c.wait < 0.1001);
	CHECK(c.rate == 1e9);
	CHECK(c.pos > 0.9e-6 && c.pos < 1.1e-6);
	CHECK(c.x == 3 && c.y == 4);
	CHECK(c.opt == 7);		/* null leaves the default */

	/* Absolute paths and files without a directory stay as given. */
	CHECK(read_text("etc/t.yaml", "dir: /var/cache\n", rows, &c,
	    &err) == 0);
	CHECK_STR(c.dir, "/var/cache");
	CHECK(read_text("t.yaml", "dir: cache\n", rows, &c, &err) == 0);
	CHECK_STR(c.dir, "cache");
	/* "-" (standard input) stays as it is. */
	CHECK(read_text("etc/t.yaml", "dir: '-'\n", rows, &c, &err) == 0);
	CHECK_STR(c.dir, "-");
	/* From standard input: relative to the working directory. */
	{
		struct ydoc d;
		char cwd[512], want[600];
		const char *text = "dir: cache\n";

		CHECK(getcwd(cwd, sizeof cwd) != NULL);
		CHECK(chdir("/") == 0);
		snprintf(want, sizeof want, "/cache");
		memset(&c, 0, sizeof c);
		CHECK(ydoc_load_mem(&d, "stdin", text, strlen(text), &err) == 0);
		d.from_stdin = 1;
		CHECK(cfg_read(&d, ydoc_root(&d), "configuration", rows, &c,
		    &err) == 0);
		CHECK_STR(c.dir, want);
		ydoc_free(&d);
		CHECK(chdir(cwd) == 0);
	}
	/* Absent keys leave the defaults. */
	CHECK(read_text("t.yaml", "on: false\n", rows, &c, &err) == 0);
	CHECK(c.on == 0 && c.count == 0 && c.opt == 7);
	CHECK(read_text("t.yaml", "opt: 1.5\n", rows, &c, &err) == 0);
	CHECK(c.opt == 1.5);
	CHECK(cfg_find(rows, "rate") == &rows[12]);
	CHECK(cfg_find(rows, "nope") == NULL);
}

static void
test_ranges(void)
{
	CHECK_STR(bad("\ncount: 11\n"),
	    "t.yaml:2: count: '11': too large (allowed 1 to 10)");
	CHECK_STR(bad("count: 0\n"),
	    "t.yaml:1: count: '0': too small (allowed 1 to 10)");
	CHECK_STR(bad("reqs: 1001\n"),
	    "t.yaml:1: reqs: '1001': too large (allowed 1 to 1000)");
	CHECK_STR(bad("size: 1m\n"), "ok");
	CHECK_STR(bad("size: 1023\n"), "t.yaml:1: size: '1023': out of "
	    "range (allowed 1.0 KiB to 1.0 MiB)");
	CHECK_STR(bad("size: 2m\n"), "t.yaml:1: size: '2m': out of "
	    "range (allowed 1.0 KiB to 1.0 MiB)");
	CHECK_STR(bad("wait: 101ms\n"), "t.yaml:1: wait: at most 100ms");
	CHECK_STR(bad("pos: 0\n"), "t.yaml:1: pos: '0': must be more than 0");
	CHECK(strncmp(bad("rate: 2gbit\n"), "t.yaml:1: rate: '2gbit': out "
	    "of range (allowed ", 40) == 0);
	CHECK(strncmp(bad("ratio: 1.5\n"), "t.yaml:1: ratio: '1.5': ", 24)
	    == 0);
	CHECK_STR(bad("mode: medium\n"),
	    "t.yaml:1: mode: 'medium': expected fast or slow");
	CHECK_STR(bad("kind: d\n"),
	    "t.yaml:1: kind: 'd': expected a, b or c");
	CHECK_STR(bad("name: toolongname\n"),
	    "t.yaml:1: name: value longer than 7 bytes");
	CHECK_STR(bad("on: maybe\n"),
	    "t.yaml:1: on: 'maybe': expected true or false");
	CHECK_STR(bad("pair: 3\n"), "t.yaml:1: pair: '3': expected x,y");
}

static void
test_junk(void)
{
	CHECK(strncmp(bad("count: 5x\n"), "t.yaml:1: count: '5x': ", 23)
	    == 0);
	CHECK(strncmp(bad("big: 12 3\n"), "t.yaml:1: big: '12 3': ", 23)
	    == 0);
	CHECK(strncmp(bad("ratio: 0.5.\n"), "t.yaml:1: ratio: '0.5.': ", 25)
	    == 0);
	CHECK(strncmp(bad("size: 64kk\n"), "t.yaml:1: size: '64kk': ", 24)
	    == 0);
	CHECK(strncmp(bad("wait: 5msx\n"), "t.yaml:1: wait: '5msx': ", 24)
	    == 0);
	CHECK(strncmp(bad("rate: 1gbitz\n"), "t.yaml:1: rate: '1gbitz': ",
	    26) == 0);
	CHECK(strncmp(bad("count: ''\n"), "t.yaml:1: count: '': ", 21) == 0);
}

static void
test_kinds(void)
{
	struct conf c;
	struct yerr err;

	CHECK_STR(bad("count: [1, 2]\n"), "t.yaml:1: count: expected a "
	    "scalar value, not a sequence");
	CHECK_STR(bad("\n\nname: {a: 1}\n"), "t.yaml:3: name: expected a "
	    "scalar value, not a mapping");
	CHECK_STR(bad("kind: [a]\n"), "t.yaml:1: kind: expected a scalar "
	    "value, not a sequence");
	CHECK_STR(bad("dir: [a]\n"), "t.yaml:1: dir: expected a scalar "
	    "value, not a sequence");
	CHECK_STR(bad("- count\n"), "t.yaml:1: configuration: expected a "
	    "mapping");
	CHECK_STR(bad("just text\n"), "t.yaml:1: configuration: expected a "
	    "mapping");
	CHECK_STR(bad("[a]: 1\n"), "t.yaml:1: configuration: keys must be "
	    "scalars");
	/* Required keys name the mapping's line. */
	CHECK(read_text("t.yaml", "\nother: 1\n", need, &c, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:2: configuration: unknown key 'other'");
	CHECK(read_text("t.yaml", "{}\n", need, &c, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:1: must: missing");
	CHECK(read_text("t.yaml", "must: 3\n", need, &c, &err) == 0);
	CHECK(c.count == 3);
	CHECK(read_text("t.yaml", "must: 3\nlabel: ''\n", need, &c,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:2: label: empty");
	CHECK(read_text("t.yaml", "must: 3\nlabel: x\n", need, &c,
	    &err) == 0);
	CHECK_STR(c.name, "x");
}

static void
test_keys(void)
{
	struct ydoc d;
	struct yerr err;
	struct conf c;
	const char *text = "count: 1\nextra: 2\n";

	CHECK_STR(bad("count: 1\ncuont: 2\n"),
	    "t.yaml:2: configuration: unknown key 'cuont'");
	CHECK_STR(bad("count: 1\non: yes\ncount: 2\n"),
	    "t.yaml:3: configuration: key 'count' given twice");
	/* The keys of a second table are known, and not read. */
	CHECK(ydoc_load_mem(&d, "t.yaml", text, strlen(text), &err) == 0);
	CHECK(cfg_check(&d, ydoc_root(&d), "m", rows, NULL, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:2: m: unknown key 'extra'");
	CHECK(cfg_check(&d, ydoc_root(&d), "m", rows, extra, &err) == 0);
	memset(&c, 0, sizeof c);
	CHECK(cfg_fill(&d, ydoc_root(&d), rows, &c, &err) == 0);
	CHECK(c.count == 1);
	/* One row alone. */
	c.count = 0;
	CHECK(cfg_get(&d, ydoc_root(&d), cfg_find(rows, "count"), &c,
	    &err) == 0);
	CHECK(c.count == 1);
	ydoc_free(&d);
	/* The first bad key in the table's order is the one named. */
	CHECK_STR(bad("on: maybe\ncount: 0\n"),
	    "t.yaml:2: count: '0': too small (allowed 1 to 10)");
}

int
main(void)
{
	test_types();
	test_ranges();
	test_junk();
	test_kinds();
	test_keys();
	return t_done("cfgtab");
}
