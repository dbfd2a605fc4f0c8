/*
 * YAML on libyaml: a writer for the stable-key documents the programs print,
 * and a reader that keeps line numbers so that every error names file, line
 * and key ("serve.yaml:7: listen: port out of range").
 */
#ifndef GLEAM_YAMLIO_H
#define GLEAM_YAMLIO_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

/* Writer.  Calls after an error are ignored; yw_finish reports it. */
struct yw;

struct yw	*yw_new(void);
void		 yw_free(struct yw *);
void		 yw_map(struct yw *);		/* block mapping */
void		 yw_fmap(struct yw *);		/* flow mapping: {a: 1, b: 2} */
void		 yw_seq(struct yw *);
void		 yw_fseq(struct yw *);
void		 yw_end(struct yw *);		/* ends the innermost map or seq */
void		 yw_key(struct yw *, const char *);
void		 yw_str(struct yw *, const char *);	/* NULL writes null */
void		 yw_int(struct yw *, long long);
void		 yw_uint(struct yw *, unsigned long long);
void		 yw_dbl(struct yw *, double, int decimals);
void		 yw_bool(struct yw *, int);
void		 yw_null(struct yw *);
void		 yw_kstr(struct yw *, const char *, const char *);
void		 yw_kint(struct yw *, const char *, long long);
void		 yw_kdbl(struct yw *, const char *, double, int);
void		 yw_kbool(struct yw *, const char *, int);
/* Ends the document; returns the text (owned by the writer) or NULL. */
const char	*yw_finish(struct yw *, size_t *len);

/*
 * Reader.  What it takes in is bounded, and checked while it is parsed
 * (libyaml's events, counted as they come), so that nothing is built past
 * a bound: the bytes, how deep collections nest, and the nodes, an alias
 * counting all those it stands for (what a walk of the document visits).
 * An alias may name only a node already complete, so a document never
 * holds a cycle.  A bound passed is an error naming the source.
 */
struct ylimits {
	size_t		 max_bytes;
	int		 max_depth;	/* at most YDOC_DEPTH_HARD */
	size_t		 max_nodes;
};

#define YDOC_MAX_BYTES		(8u << 20)	/* the defaults: any file */
#define YDOC_MAX_DEPTH		32
#define YDOC_MAX_NODES		(1u << 20)
#define YDOC_DEPTH_HARD		64
#define YDOC_MAX_ANCHORS	64	/* an alias looks them up in order */

extern const struct ylimits ydoc_limits;	/* the defaults */

struct ydoc {
	yaml_document_t	 doc;
	char		 name[256];	/* file name used in messages */
	int		 loaded;
	int		 from_stdin;	/* loaded from "-", named "stdin" */
};

struct yerr {
	char		 msg[1024];
};

/*
 * The first document of a file or a buffer, within ydoc_limits; a path
 * "-" is standard input, read once and kept (stdin_read in util.h).
 */
int		 ydoc_load_file(struct ydoc *, const char *path, struct yerr *);
int		 ydoc_load_mem(struct ydoc *, const char *name, const void *,
		    size_t, struct yerr *);
/* The same within other bounds (NULL: ydoc_limits). */
int		 ydoc_load_file_lim(struct ydoc *, const char *path,
		    const struct ylimits *, struct yerr *);
int		 ydoc_load_mem_lim(struct ydoc *, const char *name,
		    const void *, size_t, const struct ylimits *, struct yerr *);
void		 ydoc_free(struct ydoc *);
/* NULL for an empty document. */
yaml_node_t	*ydoc_root(struct ydoc *);
yaml_node_t	*ydoc_node(struct ydoc *, int id);
int		 ynode_line(const yaml_node_t *);

/* The value of key in a mapping node, or NULL. */
yaml_node_t	*ymap_get(struct ydoc *, yaml_node_t *map, const char *key);
/* The scalar's text, or NULL if the node is not a scalar. */
const char	*yscalar(const yaml_node_t *);
int		 yis_null(const yaml_node_t *);
size_t		 yseq_len(const yaml_node_t *);
yaml_node_t	*yseq_get(struct ydoc *, yaml_node_t *seq, size_t i);
size_t		 ymap_len(const yaml_node_t *);
/* The i-th pair of a mapping; *key is the key's text (NULL if not scalar). */
yaml_node_t	*ymap_pair(struct ydoc *, yaml_node_t *map, size_t i,
		    const char **key, yaml_node_t **keynode);

/* Formats "name:line: key: message" into err and returns -1. */
int		 yerr_at(struct ydoc *, const yaml_node_t *, const char *key,
		    struct yerr *, const char *fmt, ...)
		    __attribute__((format(printf, 5, 6)));

/*
 * Typed getters for a value node.  On error they fill err (naming file,
 * line and key) and return -1.
 */
int	yget_str(struct ydoc *, yaml_node_t *, const char *key, char *, size_t,
	    struct yerr *);
int	yget_int(struct ydoc *, yaml_node_t *, const char *key, long long min,
	    long long max, long long *, struct yerr *);
int	yget_dbl(struct ydoc *, yaml_node_t *, const char *key, double min,
	    double max, double *, struct yerr *);
int	yget_bool(struct ydoc *, yaml_node_t *, const char *key, int *,
	    struct yerr *);
int	yget_duration(struct ydoc *, yaml_node_t *, const char *key, double *,
	    struct yerr *);
int	yget_rate(struct ydoc *, yaml_node_t *, const char *key, double *,
	    struct yerr *);
int	yget_size(struct ydoc *, yaml_node_t *, const char *key, uint64_t *,
	    struct yerr *);

/*
 * Checks that every key of map is in the NULL-terminated list; an unknown
 * key (a typo, usually) is an error naming it.
 */
int	ymap_check_keys(struct ydoc *, yaml_node_t *map, const char *where,
	    const char *const *known, struct yerr *);

#endif
