/* YAML writing and reading on libyaml. */
#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"
#include "util.h"
#include "yamlio.h"

struct yw {
	yaml_emitter_t	 em;
	char		*buf;
	size_t		 len, cap;
	int		 err;
	int		 done;
	int		 depth;
	char		 open[64];	/* 'm' or 's' for each open collection */
};

static int
yw_out(void *arg, unsigned char *data, size_t size)
{
	struct yw *w = arg;
	char *nb;
	size_t ncap;

	if (w->len + size + 1 > w->cap) {
		ncap = w->cap ? w->cap : 4096;
		while (ncap < w->len + size + 1)
			ncap *= 2;
		if ((nb = realloc(w->buf, ncap)) == NULL)
			return 0;
		w->buf = nb;
		w->cap = ncap;
	}
	memcpy(w->buf + w->len, data, size);
	w->len += size;
	w->buf[w->len] = '\0';
	return 1;
}

static void
yw_emit(struct yw *w, yaml_event_t *ev)
{
	if (w->err) {
		yaml_event_delete(ev);
		return;
	}
	if (!yaml_emitter_emit(&w->em, ev))
		w->err = 1;
}

struct yw *
yw_new(void)
{
	struct yw *w;
	yaml_event_t ev;

	if ((w = calloc(1, sizeof *w)) == NULL)
		return NULL;
	if (!yaml_emitter_initialize(&w->em)) {
		free(w);
		return NULL;
	}
	yaml_emitter_set_output(&w->em, yw_out, w);
	yaml_emitter_set_unicode(&w->em, 1);
	yaml_emitter_set_width(&w->em, 1000);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	yw_emit(w, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	yw_emit(w, &ev);
	return w;
}

void
yw_free(struct yw *w)
{
	if (w == NULL)
		return;
	yaml_emitter_delete(&w->em);
	free(w->buf);
	free(w);
}

static void
yw_push(struct yw *w, char kind)
{
	if (w->depth == (int)sizeof w->open)
		w->err = 1;
	else
		w->open[w->depth++] = kind;
}

static void
yw_mapping(struct yw *w, yaml_mapping_style_t style)
{
	yaml_event_t ev;

	yw_push(w, 'm');
	yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, style);
	yw_emit(w, &ev);
}

static void
yw_sequence(struct yw *w, yaml_sequence_style_t style)
{
	yaml_event_t ev;

	yw_push(w, 's');
	yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, style);
	yw_emit(w, &ev);
}

void yw_map(struct yw *w) { yw_mapping(w, YAML_BLOCK_MAPPING_STYLE); }
void yw_fmap(struct yw *w) { yw_mapping(w, YAML_FLOW_MAPPING_STYLE); }
void yw_seq(struct yw *w) { yw_sequence(w, YAML_BLOCK_SEQUENCE_STYLE); }
void yw_fseq(struct yw *w) { yw_sequence(w, YAML_FLOW_SEQUENCE_STYLE); }

void
yw_end(struct yw *w)
{
	yaml_event_t ev;

	if (w->depth == 0) {
		w->err = 1;
		return;
	}
	if (w->open[--w->depth] == 'm')
		yaml_mapping_end_event_initialize(&ev);
	else
		yaml_sequence_end_event_initialize(&ev);
	yw_emit(w, &ev);
}

/* Plain scalars where YAML would read them back as the same string. */
static void
yw_scalar(struct yw *w, const char *s, int plain_ok)
{
	yaml_event_t ev;

	yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
	    (int)strlen(s), plain_ok, 1,
	    plain_ok ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
	yw_emit(w, &ev);
}

/*
 * The plain scalars a YAML 1.1 reader takes for an int, a float or a
 * timestamp (PyYAML's resolvers), or "=" and "<<".
 */
static int
yw_resolves(const char *s)
{
	static const char *const pat[] = {
	    "^[-+]?(0b[0-1_]+|0[0-7_]+|(0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|"
	    "[1-9][0-9_]*(:[0-5]?[0-9])+)$",
	    "^[-+]?(([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?|"
	    "[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*|\\.(inf|Inf|INF)|"
	    "\\.(nan|NaN|NAN))$",
	    "^[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?",
	    "^(=|<<)$",
	};
	static regex_t re[4];
	static int ready;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	size_t i;
	int hit = 0;

	pthread_mutex_lock(&lock);
	if (!ready) {
		for (i = 0; i < 4; i++)
			if (regcomp(&re[i], pat[i], REG_EXTENDED | REG_NOSUB)
			    != 0)
				abort();	/* the patterns are ours */
		ready = 1;
	}
	for (i = 0; i < 4 && !hit; i++)
		hit = regexec(&re[i], s, 0, NULL, 0) == 0;
	pthread_mutex_unlock(&lock);
	return hit;
}

/* Would a plain scalar with this text be read as something else? */
static int
yw_ambiguous(const char *s)
{
	static const char *special[] = { "", "~", "null", "true", "false",
	    "yes", "no", "on", "off", "y", "n", NULL };
	const char **p;
	char *end;

	for (p = special; *p != NULL; p++)
		if (strcasecmp(s, *p) == 0)
			return 1;
	/* What YAML 1.1 readers (PyYAML) resolve to numbers, dates, merges. */
	if (yw_resolves(s))
		return 1;
	(void)strtod(s, &end);
	if (end != s && *end == '\0')
		return 1;
	return 0;
}

void
yw_key(struct yw *w, const char *k)
{
	yw_scalar(w, k, 1);
}

void
yw_str(struct yw *w, const char *s)
{
	if (s == NULL)
		yw_null(w);
	else
		yw_scalar(w, s, !yw_ambiguous(s));
}

void
yw_int(struct yw *w, long long v)
{
	char b[32];

	snprintf(b, sizeof b, "%lld", v);
	yw_scalar(w, b, 1);
}

void
yw_uint(struct yw *w, unsigned long long v)
{
	char b[32];

	snprintf(b, sizeof b, "%llu", v);
	yw_scalar(w, b, 1);
}

void
yw_dbl(struct yw *w, double v, int decimals)
{
	char b[64];

	if (v != v)
		yw_scalar(w, ".nan", 1);
	else {
		snprintf(b, sizeof b, "%.*f", decimals, v);
		yw_scalar(w, b, 1);
	}
}

void
yw_bool(struct yw *w, int v)
{
	yw_scalar(w, v ? "true" : "false", 1);
}

void
yw_null(struct yw *w)
{
	yw_scalar(w, "null", 1);
}

void yw_kstr(struct yw *w, const char *k, const char *v) { yw_key(w, k); yw_str(w, v); }
void yw_kint(struct yw *w, const char *k, long long v) { yw_key(w, k); yw_int(w, v); }
void yw_kdbl(struct yw *w, const char *k, double v, int d) { yw_key(w, k); yw_dbl(w, v, d); }
void yw_kbool(struct yw *w, const char *k, int v) { yw_key(w, k); yw_bool(w, v); }

const char *
yw_finish(struct yw *w, size_t *len)
{
	yaml_event_t ev;

	if (!w->done) {
		yaml_document_end_event_initialize(&ev, 1);
		yw_emit(w, &ev);
		yaml_stream_end_event_initialize(&ev);
		yw_emit(w, &ev);
		if (!w->err && !yaml_emitter_flush(&w->em))
			w->err = 1;
		w->done = 1;
	}
	if (w->err || w->buf == NULL)
		return NULL;
	if (len != NULL)
		*len = w->len;
	return w->buf;
}

/* Reader. */

const struct ylimits ydoc_limits = {
	YDOC_MAX_BYTES, YDOC_MAX_DEPTH, YDOC_MAX_NODES
};

/*
 * Builds the document from the parser's events, as yaml_parser_load
 * would, counting as it goes: a bound is refused at the event that
 * passes it, before the rest of the input is even scanned.
 */
struct ycomp {
	yaml_document_t	*doc;
	const struct ylimits *lim;
	const char	*name;
	struct yerr	*err;
	size_t		 nodes;		/* aliases count what they stand for */
	int		 depth;
	struct {
		int	 id;
		int	 key;		/* a mapping's key awaiting its value */
		size_t	 nodes;		/* ycomp's count when it began */
		char	*anchor;	/* registered once it is complete */
	} open[YDOC_DEPTH_HARD];
	int		 nanchors;
	struct {
		char	*name;
		int	 id;
		size_t	 nodes;		/* its own and those below it */
	} anchors[YDOC_MAX_ANCHORS];
};

static int __attribute__((format(printf, 3, 4)))
ycomp_fail(struct ycomp *c, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(c->err->msg, sizeof c->err->msg, "%s:%zu: %s", c->name,
	    m->line + 1, msg);
	return -1;
}

/* n more nodes, within the bound. */
static int
ycomp_count(struct ycomp *c, const yaml_mark_t *m, size_t n)
{
	if (n > c->lim->max_nodes - c->nodes)
		return ycomp_fail(c, m, "more than %zu nodes (an alias counts "
		    "the nodes it stands for)", c->lim->max_nodes);
	c->nodes += n;
	return 0;
}

/* Node id into its collection, or as the root. */
static int
ycomp_attach(struct ycomp *c, const yaml_mark_t *m, int id)
{
	int ok = 1;

	if (c->depth == 0)
		return 0;
	if (c->open[c->depth - 1].key == 0 &&
	    yaml_document_get_node(c->doc, c->open[c->depth - 1].id)->type ==
	    YAML_MAPPING_NODE)
		c->open[c->depth - 1].key = id;
	else if (c->open[c->depth - 1].key != 0) {
		ok = yaml_document_append_mapping_pair(c->doc,
		    c->open[c->depth - 1].id, c->open[c->depth - 1].key, id);
		c->open[c->depth - 1].key = 0;
	} else
		ok = yaml_document_append_sequence_item(c->doc,
		    c->open[c->depth - 1].id, id);
	return ok ? 0 : ycomp_fail(c, m, "out of memory");
}

static int
ycomp_anchor(struct ycomp *c, const yaml_mark_t *m, const yaml_char_t *name,
    int id, size_t nodes)
{
	int i;

	if (name == NULL)
		return 0;
	for (i = 0; i < c->nanchors; i++)
		if (strcmp(c->anchors[i].name, (const char *)name) == 0)
			return ycomp_fail(c, m, "anchor &%s given twice", name);
	if (c->nanchors == YDOC_MAX_ANCHORS)
		return ycomp_fail(c, m, "more than %d anchors",
		    YDOC_MAX_ANCHORS);
	if ((c->anchors[c->nanchors].name = strdup((const char *)name)) ==
	    NULL)
		return ycomp_fail(c, m, "out of memory");
	c->anchors[c->nanchors].id = id;
	c->anchors[c->nanchors++].nodes = nodes;
	return 0;
}

/* A node's marks, which yaml_document_add_* leave empty. */
static void
ycomp_marks(struct ycomp *c, int id, const yaml_event_t *ev)
{
	yaml_node_t *n = yaml_document_get_node(c->doc, id);

	n->start_mark = ev->start_mark;
	n->end_mark = ev->end_mark;
}

/* One event; 1 when the document is complete, 0 for more, -1 on error. */
static int
ycomp_event(struct ycomp *c, yaml_event_t *ev)
{
	const yaml_mark_t *m = &ev->start_mark;
	yaml_char_t *anchor = NULL;
	int id, i, seq;

	switch (ev->type) {
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_START_EVENT:
		return 0;
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		return 1;
	case YAML_ALIAS_EVENT:
		for (i = 0; i < c->nanchors; i++)
			if (strcmp(c->anchors[i].name,
			    (const char *)ev->data.alias.anchor) == 0)
				break;
		if (i == c->nanchors)
			return ycomp_fail(c, m, "alias *%s: no complete node "
			    "of that anchor before it", ev->data.alias.anchor);
		if (ycomp_count(c, m, c->anchors[i].nodes) == -1)
			return -1;
		return ycomp_attach(c, m, c->anchors[i].id);
	case YAML_SCALAR_EVENT:
		if (ycomp_count(c, m, 1) == -1)
			return -1;
		if ((id = yaml_document_add_scalar(c->doc, NULL,
		    ev->data.scalar.value, (int)ev->data.scalar.length,
		    ev->data.scalar.style)) == 0)
			return ycomp_fail(c, m, "out of memory");
		ycomp_marks(c, id, ev);
		if (ycomp_anchor(c, m, ev->data.scalar.anchor, id, 1) == -1)
			return -1;
		return ycomp_attach(c, m, id);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		seq = ev->type == YAML_SEQUENCE_START_EVENT;
		if (c->depth >= c->lim->max_depth || c->depth >= YDOC_DEPTH_HARD)
			return ycomp_fail(c, m, "nested deeper than %d levels",
			    c->lim->max_depth < YDOC_DEPTH_HARD ?
			    c->lim->max_depth : YDOC_DEPTH_HARD);
		if (ycomp_count(c, m, 1) == -1)
			return -1;
		if (seq) {
			id = yaml_document_add_sequence(c->doc, NULL,
			    ev->data.sequence_start.style);
			anchor = ev->data.sequence_start.anchor;
		} else {
			id = yaml_document_add_mapping(c->doc, NULL,
			    ev->data.mapping_start.style);
			anchor = ev->data.mapping_start.anchor;
		}
		if (id == 0)
			return ycomp_fail(c, m, "out of memory");
		ycomp_marks(c, id, ev);
		if (ycomp_attach(c, m, id) == -1)
			return -1;
		c->open[c->depth].id = id;
		c->open[c->depth].key = 0;
		c->open[c->depth].nodes = c->nodes - 1;
		c->open[c->depth].anchor = NULL;
		if (anchor != NULL && (c->open[c->depth].anchor =
		    strdup((const char *)anchor)) == NULL)
			return ycomp_fail(c, m, "out of memory");
		c->depth++;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (c->depth == 0)	/* the parser's events nest */
			return ycomp_fail(c, m, "unbalanced collection");
		c->depth--;
		yaml_document_get_node(c->doc, c->open[c->depth].id)->end_mark =
		    ev->end_mark;
		i = ycomp_anchor(c, m, (yaml_char_t *)c->open[c->depth].anchor,
		    c->open[c->depth].id, c->nodes - c->open[c->depth].nodes);
		free(c->open[c->depth].anchor);
		c->open[c->depth].anchor = NULL;
		return i;
	}
	return 0;
}

/* The parser's first document into d, within the bounds. */
static int
ydoc_parse(struct ydoc *d, yaml_parser_t *p, const struct ylimits *lim,
    int *over, struct yerr *err)
{
	struct ycomp c;
	yaml_event_t ev;
	int i, rc = 0;

	memset(&c, 0, sizeof c);
	c.doc = &d->doc;
	c.lim = lim;
	c.name = d->name;
	c.err = err;
	if (!yaml_document_initialize(&d->doc, NULL, NULL, NULL, 1, 1)) {
		snprintf(err->msg, sizeof err->msg, "%s: out of memory",
		    d->name);
		yaml_parser_delete(p);
		return -1;
	}
	while (rc == 0) {
		if (!yaml_parser_parse(p, &ev)) {
			if (over != NULL && *over)
				snprintf(err->msg, sizeof err->msg, "%s: more "
				    "than %zu bytes", d->name, lim->max_bytes);
			else
				snprintf(err->msg, sizeof err->msg,
				    "%s:%zu: %s%s%s", d->name,
				    p->problem_mark.line + 1,
				    p->problem ? p->problem : "invalid YAML",
				    p->context ? " " : "",
				    p->context ? p->context : "");
			rc = -1;
			break;
		}
		rc = ycomp_event(&c, &ev);
		yaml_event_delete(&ev);
	}
	for (i = 0; i < c.depth; i++)
		free(c.open[i].anchor);
	for (i = 0; i < c.nanchors; i++)
		free(c.anchors[i].name);
	yaml_parser_delete(p);
	if (rc == -1) {
		yaml_document_delete(&d->doc);
		return -1;
	}
	/* An empty document loads; its root is NULL. */
	d->loaded = 1;
	return 0;
}

/* A file read through a count that stops one byte past the bound. */
struct yfile {
	FILE		*f;
	size_t		 n, max;
	int		 over;
};

static int
yfile_read(void *arg, unsigned char *buf, size_t size, size_t *got)
{
	struct yfile *y = arg;

	if (size > y->max - y->n + 1)
		size = y->max - y->n + 1;
	*got = fread(buf, 1, size, y->f);
	y->n += *got;
	if (y->n > y->max) {
		y->over = 1;
		return 0;
	}
	return !ferror(y->f);
}

int
ydoc_load_file(struct ydoc *d, const char *path, struct yerr *err)
{
	return ydoc_load_file_lim(d, path, NULL, err);
}

int
ydoc_load_file_lim(struct ydoc *d, const char *path,
    const struct ylimits *lim, struct yerr *err)
{
	yaml_parser_t p;
	struct yfile y;
	struct stat st;
	int rc;

	if (lim == NULL)
		lim = &ydoc_limits;
	if (stdin_named(path)) {
		const char *buf;
		size_t len;

		memset(d, 0, sizeof *d);
		if (stdin_read("YAML", &buf, &len, err->msg,
		    sizeof err->msg) == -1)
			return -1;
		rc = ydoc_load_mem_lim(d, "stdin", buf, len, lim, err);
		d->from_stdin = 1;
		return rc;
	}
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", path);
	memset(&y, 0, sizeof y);
	y.max = lim->max_bytes;
	if ((y.f = fopen(path, "rb")) == NULL) {
		snprintf(err->msg, sizeof err->msg, "%s: %s", path,
		    strerror(errno));
		return -1;
	}
	/* A regular file's size is known before a byte is read. */
	if (fstat(fileno(y.f), &st) == 0 && S_ISREG(st.st_mode) &&
	    (uintmax_t)st.st_size > lim->max_bytes) {
		snprintf(err->msg, sizeof err->msg, "%s: more than %zu bytes",
		    path, lim->max_bytes);
		fclose(y.f);
		return -1;
	}
	if (!yaml_parser_initialize(&p)) {
		fclose(y.f);
		snprintf(err->msg, sizeof err->msg, "%s: out of memory", path);
		return -1;
	}
	yaml_parser_set_input(&p, yfile_read, &y);
	rc = ydoc_parse(d, &p, lim, &y.over, err);
	if (rc == 0 && ferror(y.f)) {
		snprintf(err->msg, sizeof err->msg, "%s: read error", path);
		ydoc_free(d);
		rc = -1;
	}
	fclose(y.f);
	return rc;
}

int
ydoc_load_mem(struct ydoc *d, const char *name, const void *buf, size_t len,
    struct yerr *err)
{
	return ydoc_load_mem_lim(d, name, buf, len, NULL, err);
}

int
ydoc_load_mem_lim(struct ydoc *d, const char *name, const void *buf,
    size_t len, const struct ylimits *lim, struct yerr *err)
{
	yaml_parser_t p;

	if (lim == NULL)
		lim = &ydoc_limits;
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", name);
	if (len > lim->max_bytes) {
		snprintf(err->msg, sizeof err->msg, "%s: more than %zu bytes",
		    name, lim->max_bytes);
		return -1;
	}
	if (!yaml_parser_initialize(&p)) {
		snprintf(err->msg, sizeof err->msg, "%s: out of memory", name);
		return -1;
	}
	yaml_parser_set_input_string(&p, buf, len);
	return ydoc_parse(d, &p, lim, NULL, err);
}

void
ydoc_free(struct ydoc *d)
{
	if (d->loaded)
		yaml_document_delete(&d->doc);
	d->loaded = 0;
}

yaml_node_t *
ydoc_root(struct ydoc *d)
{
	return d->loaded ? yaml_document_get_root_node(&d->doc) : NULL;
}

yaml_node_t *
ydoc_node(struct ydoc *d, int id)
{
	return yaml_document_get_node(&d->doc, id);
}

int
ynode_line(const yaml_node_t *n)
{
	return n != NULL ? (int)n->start_mark.line + 1 : 0;
}

const char *
yscalar(const yaml_node_t *n)
{
	if (n == NULL || n->type != YAML_SCALAR_NODE)
		return NULL;
	return (const char *)n->data.scalar.value;
}

int
yis_null(const yaml_node_t *n)
{
	const char *s;

	if (n == NULL)
		return 1;
	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	s = yscalar(n);
	return *s == '\0' || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
}

size_t
yseq_len(const yaml_node_t *n)
{
	if (n == NULL || n->type != YAML_SEQUENCE_NODE)
		return 0;
	return (size_t)(n->data.sequence.items.top -
	    n->data.sequence.items.start);
}

yaml_node_t *
yseq_get(struct ydoc *d, yaml_node_t *n, size_t i)
{
	if (i >= yseq_len(n))
		return NULL;
	return ydoc_node(d, n->data.sequence.items.start[i]);
}

size_t
ymap_len(const yaml_node_t *n)
{
	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return 0;
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

yaml_node_t *
ymap_pair(struct ydoc *d, yaml_node_t *n, size_t i, const char **key,
    yaml_node_t **keynode)
{
	yaml_node_pair_t *pr;
	yaml_node_t *k;

	if (i >= ymap_len(n))
		return NULL;
	pr = &n->data.mapping.pairs.start[i];
	k = ydoc_node(d, pr->key);
	if (key != NULL)
		*key = yscalar(k);
	if (keynode != NULL)
		*keynode = k;
	return ydoc_node(d, pr->value);
}

yaml_node_t *
ymap_get(struct ydoc *d, yaml_node_t *map, const char *key)
{
	const char *k;
	yaml_node_t *v;
	size_t i, n = ymap_len(map);

	for (i = 0; i < n; i++) {
		v = ymap_pair(d, map, i, &k, NULL);
		if (k != NULL && strcmp(k, key) == 0)
			return v;
	}
	return NULL;
}

int
yerr_at(struct ydoc *d, const yaml_node_t *n, const char *key,
    struct yerr *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (key != NULL)
		snprintf(err->msg, sizeof err->msg, "%s:%d: %s: %s", d->name,
		    ynode_line(n), key, msg);
	else
		snprintf(err->msg, sizeof err->msg, "%s:%d: %s", d->name,
		    ynode_line(n), msg);
	return -1;
}

static const char *
yget_scalar(struct ydoc *d, yaml_node_t *n, const char *key, struct yerr *err)
{
	const char *s = yscalar(n);

	if (s == NULL)
		yerr_at(d, n, key, err, "expected a scalar value, not a %s",
		    n != NULL && n->type == YAML_MAPPING_NODE ? "mapping" :
		    "sequence");
	return s;
}

int
yget_str(struct ydoc *d, yaml_node_t *n, const char *key, char *out,
    size_t len, struct yerr *err)
{
	const char *s;

	if ((s = yget_scalar(d, n, key, err)) == NULL)
		return -1;
	if (strlen(s) >= len)
		return yerr_at(d, n, key, err, "value longer than %zu bytes",
		    len - 1);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

int
yget_int(struct ydoc *d, yaml_node_t *n, const char *key, long long min,
    long long max, long long *out, struct yerr *err)
{
	const char *s, *why;

	if ((s = yget_scalar(d, n, key, err)) == NULL)
		return -1;
	if (parse_int(s, min, max, out, &why) == -1)
		return yerr_at(d, n, key, err, "'%s': %s (allowed %lld to %lld)",
		    s, why, min, max);
	return 0;
}

int
yget_dbl(struct ydoc *d, yaml_node_t *n, const char *key, double min,
    double max, double *out, struct yerr *err)
{
	const char *s, *why;

	if ((s = yget_scalar(d, n, key, err)) == NULL)
		return -1;
	if (parse_double(s, min, max, out, &why) == -1)
		return yerr_at(d, n, key, err, "'%s': %s", s, why);
	return 0;
}

int
yget_bool(struct ydoc *d, yaml_node_t *n, const char *key, int *out,
    struct yerr *err)
{
	const char *s;

	if ((s = yget_scalar(d, n, key, err)) == NULL)
		return -1;
	if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0 ||
	    strcasecmp(s, "on") == 0)
		*out = 1;
	else if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0 ||
	    strcasecmp(s, "off") == 0)
		*out = 0;
	else
		return yerr_at(d, n, key, err, "'%s': expected true or false",
		    s);
	return 0;
}

#define YGET_UNIT(fn, type, parser)					\
int									\
fn(struct ydoc *d, yaml_node_t *n, const char *key, type *out,		\
    struct yerr *err)							\
{									\
	const char *s, *why;						\
									\
	if ((s = yget_scalar(d, n, key, err)) == NULL)			\
		return -1;						\
	if (parser(s, out, &why) == -1)					\
		return yerr_at(d, n, key, err, "'%s': %s", s, why);	\
	return 0;							\
}
YGET_UNIT(yget_duration, double, parse_duration)
YGET_UNIT(yget_rate, double, parse_rate)
YGET_UNIT(yget_size, uint64_t, parse_size)

int
ymap_check_keys(struct ydoc *d, yaml_node_t *map, const char *where,
    const char *const *known, struct yerr *err)
{
	const char *k;
	const char *const *p;
	yaml_node_t *kn;
	size_t i, j, n;

	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return yerr_at(d, map, where, err, "expected a mapping");
	n = ymap_len(map);
	for (i = 0; i < n; i++) {
		ymap_pair(d, map, i, &k, &kn);
		if (k == NULL)
			return yerr_at(d, kn, where, err,
			    "keys must be scalars");
		for (p = known; *p != NULL; p++)
			if (strcmp(*p, k) == 0)
				break;
		if (*p == NULL)
			return yerr_at(d, kn, where, err, "unknown key '%s'",
			    k);
		for (j = 0; j < i; j++) {
			const char *k2;
			ymap_pair(d, map, j, &k2, NULL);
			if (k2 != NULL && strcmp(k, k2) == 0)
				return yerr_at(d, kn, where, err,
				    "key '%s' given twice", k);
		}
	}
	return 0;
}
