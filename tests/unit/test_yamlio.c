/* Unit tests for lib/yamlio.c: the writer's text and the reader's errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yamlio.h"
#include "t.h"

/* Loads text; returns 0 or -1 with err filled. */
static int
load(struct ydoc *d, const char *text, struct yerr *err)
{
	memset(err, 0, sizeof *err);
	return ydoc_load_mem(d, "t.yaml", text, strlen(text), err);
}

/* Writes one string as a mapping value and reads it back. */
static int
str_round_trips(const char *s)
{
	struct yw *w = yw_new();
	struct ydoc d;
	struct yerr err;
	const char *text, *back;
	yaml_node_t *v;
	size_t len;
	int ok = 0;

	yw_map(w);
	yw_kstr(w, "k", s);
	yw_end(w);
	if ((text = yw_finish(w, &len)) == NULL) {
		yw_free(w);
		return 0;
	}
	if (ydoc_load_mem(&d, "rt", text, len, &err) == 0) {
		v = ymap_get(&d, ydoc_root(&d), "k");
		back = yscalar(v);
		/* Read as a string: equal text and not a plain null. */
		ok = back != NULL && strcmp(back, s) == 0 && !yis_null(v);
		ydoc_free(&d);
	}
	if (!ok)
		fprintf(stderr, "round trip of \"%s\" gave:\n%s", s, text);
	yw_free(w);
	return ok;
}

static void
test_writer(void)
{
	struct yw *w;
	const char *text;
	size_t len = 0;

	w = yw_new();
	yw_map(w);
	yw_kstr(w, "a", "x");
	yw_kint(w, "b", -3);
	yw_key(w, "c");
	yw_fmap(w);
	yw_kint(w, "x", 1);
	yw_kbool(w, "y", 1);
	yw_end(w);
	yw_key(w, "s");
	yw_seq(w);
	yw_str(w, "one");
	yw_map(w);
	yw_kdbl(w, "d", 1.25, 2);
	yw_end(w);
	yw_fseq(w);
	yw_uint(w, 18446744073709551615ull);
	yw_null(w);
	yw_bool(w, 0);
	yw_end(w);
	yw_end(w);
	yw_key(w, "e");
	yw_fseq(w);
	yw_end(w);
	yw_kdbl(w, "n", 0.0 / 0.0, 1);
	yw_kstr(w, "z", NULL);
	yw_end(w);
	text = yw_finish(w, &len);
	CHECK_STR(text, "a: x\nb: -3\nc: {x: 1, y: true}\ns:\n- one\n- d: 1.25\n"
	    "- [18446744073709551615, null, false]\ne: []\nn: .nan\nz: null\n");
	CHECK(text != NULL && len == strlen(text));
	/* Finishing twice gives the same text. */
	CHECK(yw_finish(w, NULL) == text);
	yw_free(w);

	/* A top-level block sequence of flow maps. */
	w = yw_new();
	yw_seq(w);
	yw_fmap(w);
	yw_kstr(w, "k", "v");
	yw_end(w);
	yw_fmap(w);
	yw_end(w);
	yw_end(w);
	CHECK_STR(yw_finish(w, NULL), "- {k: v}\n- {}\n");
	yw_free(w);

	/* Decimals are honoured. */
	w = yw_new();
	yw_fseq(w);
	yw_dbl(w, 2.0 / 3.0, 3);
	yw_dbl(w, 2.5, 0);
	yw_int(w, 0);
	yw_end(w);
	CHECK_STR(yw_finish(w, NULL), "[0.667, 2, 0]\n");
	yw_free(w);

	/* Misuse: yw_end with nothing open makes the document fail. */
	w = yw_new();
	yw_map(w);
	yw_end(w);
	yw_end(w);
	CHECK(yw_finish(w, &len) == NULL);
	yw_free(w);

	/* An unclosed collection also fails rather than emitting half. */
	w = yw_new();
	yw_map(w);
	yw_kint(w, "a", 1);
	CHECK(yw_finish(w, NULL) == NULL);
	yw_free(w);

	/* yw_free(NULL) is allowed. */
	yw_free(NULL);
}

/* The writer's text for one string in a flow sequence. */
static int
written_as(const char *s, const char *want)
{
	struct yw *w = yw_new();
	const char *text;
	int ok;

	yw_fseq(w);
	yw_str(w, s);
	yw_end(w);
	text = yw_finish(w, NULL);
	ok = text != NULL && strcmp(text, want) == 0;
	if (!ok)
		fprintf(stderr, "\"%s\" written as %s", s, text ? text : "NULL");
	yw_free(w);
	return ok;
}

static void
test_quoting(void)
{
	static const char *const s[] = {
		"true", "false", "True", "yes", "no", "on", "off", "y", "n",
		"123", "-4", "1e3", "0.5", "", "null", "Null", "~", "a: b",
		"key: value: more", "- x", "#c", "a #b", " lead", "trail ",
		"[x]", "{x}", "*a", "&a", "!t", "'q'", "\"dq\"", "%p", "@x",
		"`x", "|", ">", "line\nbreak", "tab\there", "plain",
		"host-1.example", "::1", "0x10", ".inf", "-.inf", ".nan",
		"unicode \xc3\xa9", NULL
	};
	int i;

	for (i = 0; s[i] != NULL; i++)
		CHECK(str_round_trips(s[i]));

	/*
	 * Other YAML readers take these for booleans, numbers or null:
	 * they are quoted.  Plain strings stay plain.
	 */
	CHECK(written_as("true", "[\"true\"]\n"));
	CHECK(written_as("FALSE", "[\"FALSE\"]\n"));
	CHECK(written_as("yes", "[\"yes\"]\n"));
	CHECK(written_as("No", "[\"No\"]\n"));
	CHECK(written_as("on", "[\"on\"]\n"));
	CHECK(written_as("off", "[\"off\"]\n"));
	CHECK(written_as("y", "[\"y\"]\n"));
	CHECK(written_as("n", "[\"n\"]\n"));
	CHECK(written_as("~", "[\"~\"]\n"));
	CHECK(written_as("null", "[\"null\"]\n"));
	CHECK(written_as("", "[\"\"]\n"));
	CHECK(written_as("123", "[\"123\"]\n"));
	CHECK(written_as("-4", "[\"-4\"]\n"));
	CHECK(written_as("1e3", "[\"1e3\"]\n"));
	CHECK(written_as("0.5", "[\"0.5\"]\n"));
	CHECK(written_as("a: b", "['a: b']\n"));
	CHECK(written_as("gpu1", "[gpu1]\n"));
	CHECK(written_as("0.1.0", "[0.1.0]\n"));
	CHECK(written_as("NVIDIA H200", "[NVIDIA H200]\n"));
}

static void
test_reader(void)
{
	static const char *const known[] = { "a", "b", "list", NULL };
	static const char text[] =
	    "a: 1\n"			/* 1 */
	    "b:\n"			/* 2 */
	    "  c: x\n"			/* 3 */
	    "  d: [1, 2]\n"		/* 4 */
	    "list:\n"			/* 5 */
	    "  - one\n"			/* 6 */
	    "  - two\n"			/* 7 */
	    "  - {k: v}\n";		/* 8 */
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root, *b, *c, *dn, *list, *kn, *v;
	const char *k;

	CHECK(load(&d, text, &err) == 0);
	root = ydoc_root(&d);
	CHECK(root != NULL && root->type == YAML_MAPPING_NODE);
	CHECK(ymap_len(root) == 3);
	CHECK(ynode_line(root) == 1);
	CHECK_STR(yscalar(ymap_get(&d, root, "a")), "1");
	CHECK(ymap_get(&d, root, "nope") == NULL);
	CHECK(ymap_get(&d, NULL, "a") == NULL);
	b = ymap_get(&d, root, "b");
	CHECK(b != NULL && b->type == YAML_MAPPING_NODE);
	CHECK(yscalar(b) == NULL);
	c = ymap_get(&d, b, "c");
	CHECK(ynode_line(c) == 3);
	CHECK(ynode_line(NULL) == 0);
	/* ymap_get on a scalar finds nothing. */
	CHECK(ymap_get(&d, c, "c") == NULL);

	CHECK(yerr_at(&d, c, "c", &err, "bad %d", 5) == -1);
	CHECK_STR(err.msg, "t.yaml:3: c: bad 5");
	CHECK(yerr_at(&d, c, NULL, &err, "plain") == -1);
	CHECK_STR(err.msg, "t.yaml:3: plain");

	dn = ymap_get(&d, b, "d");
	CHECK(dn != NULL && dn->type == YAML_SEQUENCE_NODE);
	CHECK(yseq_len(dn) == 2);
	CHECK(ynode_line(dn) == 4);

	list = ymap_get(&d, root, "list");
	CHECK(yseq_len(list) == 3);
	CHECK_STR(yscalar(yseq_get(&d, list, 0)), "one");
	CHECK_STR(yscalar(yseq_get(&d, list, 1)), "two");
	CHECK(ynode_line(yseq_get(&d, list, 1)) == 7);
	v = yseq_get(&d, list, 2);
	CHECK(v != NULL && v->type == YAML_MAPPING_NODE);
	CHECK(yseq_get(&d, list, 3) == NULL);
	CHECK(yseq_len(root) == 0);	/* not a sequence */
	CHECK(yseq_get(&d, root, 0) == NULL);
	CHECK(ymap_len(list) == 0);	/* not a mapping */

	v = ymap_pair(&d, root, 1, &k, &kn);
	CHECK_STR(k, "b");
	CHECK(v == b);
	CHECK(ynode_line(kn) == 2);
	CHECK(ymap_pair(&d, root, 3, &k, &kn) == NULL);

	CHECK(ymap_check_keys(&d, root, "top", known, &err) == 0);
	/* b has keys c and d, neither known. */
	CHECK(ymap_check_keys(&d, b, "b", known, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:3: b: unknown key 'c'");
	CHECK(ymap_check_keys(&d, list, "list", known, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:6: list: expected a mapping");
	CHECK(ymap_check_keys(&d, NULL, "none", known, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:0: none: expected a mapping");
	ydoc_free(&d);
	/* ydoc_free twice is harmless. */
	ydoc_free(&d);
	CHECK(ydoc_root(&d) == NULL);

	CHECK(load(&d, "a: 1\nb: 2\na: 3\n", &err) == 0);
	CHECK(ymap_check_keys(&d, ydoc_root(&d), "top", known, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:3: top: key 'a' given twice");
	ydoc_free(&d);

	CHECK(load(&d, "a: 1\n[x]: 2\n", &err) == 0);
	CHECK(ymap_check_keys(&d, ydoc_root(&d), "top", known, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:2: top: keys must be scalars");
	ydoc_free(&d);

	/* yis_null: plain null forms only. */
	CHECK(load(&d, "[~, null, NULL, \"\", \"null\", 'x', x]", &err) == 0);
	root = ydoc_root(&d);
	CHECK(yis_null(yseq_get(&d, root, 0)));
	CHECK(yis_null(yseq_get(&d, root, 1)));
	CHECK(yis_null(yseq_get(&d, root, 2)));
	CHECK(!yis_null(yseq_get(&d, root, 3)));	/* "" is quoted */
	CHECK(!yis_null(yseq_get(&d, root, 4)));
	CHECK(!yis_null(yseq_get(&d, root, 5)));
	CHECK(!yis_null(yseq_get(&d, root, 6)));
	CHECK(!yis_null(root));
	CHECK(yis_null(NULL));
	ydoc_free(&d);
	/* An empty plain value is null too. */
	CHECK(load(&d, "e:\nf: x\n", &err) == 0);
	CHECK(yis_null(ymap_get(&d, ydoc_root(&d), "e")));
	CHECK(!yis_null(ymap_get(&d, ydoc_root(&d), "f")));
	ydoc_free(&d);
}

static void
test_getters(void)
{
	static const char text[] =
	    "s: hello\n"		/* 1 */
	    "i: 42\n"			/* 2 */
	    "bad: abc\n"		/* 3 */
	    "big: 11\n"			/* 4 */
	    "f: 0.25\n"			/* 5 */
	    "t: yes\n"			/* 6 */
	    "no: Off\n"			/* 7 */
	    "m: {x: 1}\n"		/* 8 */
	    "q: [1]\n"			/* 9 */
	    "dur: 5ms\n"		/* 10 */
	    "rate: 1gbit\n"		/* 11 */
	    "size: 16m\n"		/* 12 */
	    "neg: -1\n";		/* 13 */
	struct ydoc d;
	struct yerr err;
	yaml_node_t *r;
	char buf[16];
	long long ll;
	double dv;
	uint64_t sz;
	int b;

	CHECK(load(&d, text, &err) == 0);
	r = ydoc_root(&d);

	CHECK(yget_str(&d, ymap_get(&d, r, "s"), "s", buf, sizeof buf,
	    &err) == 0);
	CHECK_STR(buf, "hello");
	CHECK(yget_str(&d, ymap_get(&d, r, "s"), "s", buf, 5, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:1: s: value longer than 4 bytes");
	/* Exactly fitting: 5 bytes and the NUL. */
	CHECK(yget_str(&d, ymap_get(&d, r, "s"), "s", buf, 6, &err) == 0);
	CHECK(yget_str(&d, ymap_get(&d, r, "m"), "m", buf, sizeof buf,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:8: m: expected a scalar value, not a mapping");
	CHECK(yget_str(&d, ymap_get(&d, r, "q"), "q", buf, sizeof buf,
	    &err) == -1);
	CHECK_STR(err.msg,
	    "t.yaml:9: q: expected a scalar value, not a sequence");

	CHECK(yget_int(&d, ymap_get(&d, r, "i"), "i", 0, 100, &ll, &err) == 0);
	CHECK(ll == 42);
	CHECK(yget_int(&d, ymap_get(&d, r, "bad"), "bad", 0, 10, &ll,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:3: bad: 'abc': not a number (allowed 0 to 10)");
	CHECK(yget_int(&d, ymap_get(&d, r, "big"), "big", 0, 10, &ll,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:4: big: '11': too large (allowed 0 to 10)");
	CHECK(yget_int(&d, ymap_get(&d, r, "neg"), "neg", 0, 10, &ll,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:13: neg: '-1': too small (allowed 0 to 10)");
	CHECK(yget_int(&d, ymap_get(&d, r, "m"), "m", 0, 10, &ll, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:8: m: expected a scalar value, not a mapping");

	CHECK(yget_dbl(&d, ymap_get(&d, r, "f"), "f", 0, 1, &dv, &err) == 0);
	CHECK(dv == 0.25);
	CHECK(yget_dbl(&d, ymap_get(&d, r, "bad"), "bad", 0, 1, &dv,
	    &err) == -1);
	CHECK_STR(err.msg, "t.yaml:3: bad: 'abc': not a number");
	CHECK(yget_dbl(&d, ymap_get(&d, r, "i"), "i", 0, 1, &dv, &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:2: i: '42': ", 19) == 0);

	b = -1;
	CHECK(yget_bool(&d, ymap_get(&d, r, "t"), "t", &b, &err) == 0);
	CHECK(b == 1);
	CHECK(yget_bool(&d, ymap_get(&d, r, "no"), "no", &b, &err) == 0);
	CHECK(b == 0);
	CHECK(yget_bool(&d, ymap_get(&d, r, "s"), "s", &b, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:1: s: 'hello': expected true or false");

	CHECK(yget_duration(&d, ymap_get(&d, r, "dur"), "dur", &dv, &err) == 0);
	CHECK(dv > 0.00499 && dv < 0.00501);
	CHECK(yget_duration(&d, ymap_get(&d, r, "bad"), "bad", &dv,
	    &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:3: bad: 'abc': ", 22) == 0);
	CHECK(yget_rate(&d, ymap_get(&d, r, "rate"), "rate", &dv, &err) == 0);
	CHECK(dv == 1e9);
	CHECK(yget_rate(&d, ymap_get(&d, r, "s"), "s", &dv, &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:1: s: 'hello': ", 22) == 0);
	CHECK(yget_size(&d, ymap_get(&d, r, "size"), "size", &sz, &err) == 0);
	CHECK(sz == 16u << 20);
	CHECK(yget_size(&d, ymap_get(&d, r, "q"), "q", &sz, &err) == -1);
	CHECK_STR(err.msg, "t.yaml:9: q: expected a scalar value, not a sequence");
	ydoc_free(&d);
}

static void
test_load_errors(void)
{
	char path[] = "/tmp/gleam-test-yamlio-XXXXXX";
	struct ydoc d;
	struct yerr err;
	FILE *f;
	int fd;

	/* An empty document loads and has no root. */
	CHECK(load(&d, "", &err) == 0);
	CHECK(ydoc_root(&d) == NULL);
	ydoc_free(&d);
	CHECK(load(&d, "# only a comment\n", &err) == 0);
	CHECK(ydoc_root(&d) == NULL);
	ydoc_free(&d);

	CHECK(load(&d, "a: 1\nb: [1, 2\nc: 3\n", &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:3: ", 10) == 0);
	CHECK(strstr(err.msg, "flow sequence") != NULL);
	CHECK(ydoc_root(&d) == NULL);
	CHECK(load(&d, "a: 1\n\tb: 2\n", &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:2: ", 10) == 0);
	CHECK(load(&d, "a: *nowhere\n", &err) == -1);
	CHECK(strncmp(err.msg, "t.yaml:1: ", 10) == 0);

	/* Files: the error names the file. */
	if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		CHECK(!"mkstemp");
		return;
	}
	fputs("ok: 1\nbad: [\n", f);
	fclose(f);
	memset(&err, 0, sizeof err);
	CHECK(ydoc_load_file(&d, path, &err) == -1);
	CHECK(strncmp(err.msg, path, strlen(path)) == 0 &&
	    strncmp(err.msg + strlen(path), ":3: ", 4) == 0);
	f = fopen(path, "w");
	fputs("ok: 1\n", f);
	fclose(f);
	CHECK(ydoc_load_file(&d, path, &err) == 0);
	CHECK_STR(d.name, path);
	CHECK_STR(yscalar(ymap_get(&d, ydoc_root(&d), "ok")), "1");
	ydoc_free(&d);
	unlink(path);
	CHECK(ydoc_load_file(&d, path, &err) == -1);
	CHECK(strncmp(err.msg, path, strlen(path)) == 0 &&
	    strcmp(err.msg + strlen(path), ": No such file or directory") == 0);
}

/* "-" is standard input, named stdin, read once and kept. */
static void
test_stdin(void)
{
	char path[] = "/tmp/gleam-yamlio-XXXXXX";
	struct ydoc d;
	struct yerr err;
	int fd, i;

	if ((fd = mkstemp(path)) == -1) {
		CHECK(!"mkstemp");
		return;
	}
	CHECK(write(fd, "a: 1\n", 5) == 5);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	CHECK(dup2(fd, STDIN_FILENO) == STDIN_FILENO);
	close(fd);
	unlink(path);
	for (i = 0; i < 2; i++) {
		CHECK(ydoc_load_file(&d, "-", &err) == 0);
		CHECK_STR(d.name, "stdin");
		CHECK(d.from_stdin);
		CHECK_STR(yscalar(ymap_get(&d, ydoc_root(&d), "a")), "1");
		ydoc_free(&d);
	}
}

/* Seconds on the monotonic clock. */
static double
mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* n bytes of text: open, then the rest of a line of close. */
static char *
nested(size_t n, const char *open)
{
	char *b = malloc(n + 1);
	size_t i, k = strlen(open);

	for (i = 0; i + k <= n; i += k)
		memcpy(b + i, open, k);
	memset(b + i, ' ', n - i);
	b[n] = '\0';
	return b;
}

static void
test_bounds(void)
{
	static const struct ylimits small = { 64, 3, 10 };
	struct ydoc d;
	struct yerr err;
	char path[] = "/tmp/yamlio-bounds-XXXXXX", *b;
	double t0, t;
	size_t i;
	FILE *f;
	int fd;

	/* Deep nesting of either kind is refused at the level it passes. */
	CHECK(ydoc_load_mem_lim(&d, "req", "a: [[1]]", 8, &small, &err) == 0);
	ydoc_free(&d);
	CHECK(ydoc_load_mem_lim(&d, "req", "a: [[[1]]]", 10, &small,
	    &err) == -1);
	CHECK_STR(err.msg, "req:1: nested deeper than 3 levels");
	CHECK(ydoc_root(&d) == NULL);
	CHECK(ydoc_load_mem_lim(&d, "req", "a:\n b:\n  c:\n   d: 1\n", 20,
	    &small, &err) == -1);
	CHECK_STR(err.msg, "req:4: nested deeper than 3 levels");
	/* The bytes, before a byte is parsed. */
	b = nested(65, "a");
	CHECK(ydoc_load_mem_lim(&d, "req", b, 65, &small, &err) == -1);
	CHECK_STR(err.msg, "req: more than 64 bytes");
	free(b);
	/* Nodes, an alias counting those it stands for. */
	CHECK(ydoc_load_mem_lim(&d, "req", "[1, 2, 3, 4, 5, 6, 7, 8, 9]", 27,
	    &small, &err) == 0);
	ydoc_free(&d);
	CHECK(ydoc_load_mem_lim(&d, "req", "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
	    31, &small, &err) == -1);
	CHECK_STR(err.msg, "req:1: more than 10 nodes (an alias counts the "
	    "nodes it stands for)");
	CHECK(ydoc_load_mem_lim(&d, "req", "[&a [1, 2, 3], *a, *a]", 22,
	    &small, &err) == -1);
	CHECK(strstr(err.msg, "more than 10 nodes") != NULL);
	CHECK(load(&d, "a: &x [1, 2]\nb: *x\n", &err) == 0);
	CHECK(yseq_len(ymap_get(&d, ydoc_root(&d), "b")) == 2);
	CHECK(ynode_line(ymap_get(&d, ydoc_root(&d), "b")) == 1);
	ydoc_free(&d);
	/* An alias of what is still open would be a cycle. */
	CHECK(load(&d, "&x [1, *x]\n", &err) == -1);
	CHECK_STR(err.msg, "t.yaml:1: alias *x: no complete node of that "
	    "anchor before it");
	CHECK(load(&d, "[&x 1, &x 2]\n", &err) == -1);
	CHECK_STR(err.msg, "t.yaml:1: anchor &x given twice");
	/* Billion laughs: ten of ten of ten..., refused, not walked. */
	b = malloc(4096);
	snprintf(b, 4096, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (i = 1; i < 10; i++)
		snprintf(b + strlen(b), 4096 - strlen(b), "a%zu: &a%zu [*a%zu, "
		    "*a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu, *a%zu, "
		    "*a%zu]\n", i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1,
		    i - 1, i - 1, i - 1, i - 1);
	CHECK(load(&d, b, &err) == -1);
	CHECK(strstr(err.msg, "more than 1048576 nodes") != NULL);
	free(b);
	/* More anchors than are looked up. */
	b = malloc(8192);
	b[0] = '\0';
	for (i = 0; i <= YDOC_MAX_ANCHORS; i++)
		snprintf(b + strlen(b), 8192 - strlen(b), "- &a%zu 1\n", i);
	CHECK(load(&d, b, &err) == -1);
	CHECK(strstr(err.msg, "more than 64 anchors") != NULL);
	free(b);

	/* 64 KB nested, of each kind: refused at once, well under 10 ms. */
	b = nested(64 << 10, "[");
	t0 = mono();
	CHECK(load(&d, b, &err) == -1);
	t = mono() - t0;
	CHECK_STR(err.msg, "t.yaml:1: nested deeper than 32 levels");
	CHECK(t < 0.05);
	free(b);
	b = nested(64 << 10, "{a: ");
	t0 = mono();
	CHECK(load(&d, b, &err) == -1);
	CHECK(mono() - t0 < 0.05);
	CHECK_STR(err.msg, "t.yaml:1: nested deeper than 32 levels");
	free(b);
	b = nested(64 << 10, "- ");
	t0 = mono();
	CHECK(load(&d, b, &err) == -1);
	CHECK(mono() - t0 < 0.05);
	CHECK_STR(err.msg, "t.yaml:1: nested deeper than 32 levels");
	free(b);

	/* Files: the size before reading, or as read (a pipe, a device). */
	if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		CHECK(!"mkstemp");
		return;
	}
	fputs("a: 1\nb: 2\nc: 3\nd: 4\n"
	    "x: 01234567890123456789012345678901234567890\n", f);
	fclose(f);
	CHECK(ydoc_load_file_lim(&d, path, &small, &err) == -1);
	CHECK(strncmp(err.msg, path, strlen(path)) == 0 &&
	    strcmp(err.msg + strlen(path), ": more than 64 bytes") == 0);
	CHECK(ydoc_load_file_lim(&d, "/dev/zero", &small, &err) == -1);
	CHECK_STR(err.msg, "/dev/zero: more than 64 bytes");
	f = fopen(path, "w");
	fputs("[[[[1]]]]\n", f);
	fclose(f);
	CHECK(ydoc_load_file_lim(&d, path, &small, &err) == -1);
	CHECK(strstr(err.msg, ":1: nested deeper than 3 levels") != NULL);
	CHECK(ydoc_load_file(&d, path, &err) == 0);
	ydoc_free(&d);
	unlink(path);
}

int
main(void)
{
	test_writer();
	test_quoting();
	test_reader();
	test_getters();
	test_load_errors();
	test_stdin();
	test_bounds();
	return t_done("yamlio");
}
