/*
 * A hash table from u64 ids to pointers: the remoting layer's maps from
 * the ids a client chose to the objects they name.  Not thread-safe; each
 * owner guards its own.
 */
#ifndef GLEAM_HTAB_H
#define GLEAM_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab {
	struct hent	*e;
	size_t		 cap;	/* a power of two, or 0 */
	size_t		 n;	/* live entries */
	size_t		 used;	/* live and deleted slots */
};

struct hent {
	uint64_t	 key;	/* 0: empty; HTAB_DEAD: deleted */
	void		*val;
};

#define HTAB_DEAD	UINT64_MAX

void	 htab_init(struct htab *);
void	 htab_free(struct htab *);
/* Keys 0 and UINT64_MAX are reserved.  -1 on a reserved key or no memory. */
int	 htab_put(struct htab *, uint64_t key, void *val);
void	*htab_get(const struct htab *, uint64_t key);
/* Removes and returns the value, or NULL. */
void	*htab_del(struct htab *, uint64_t key);
/* Iteration: i from 0 while htab_next returns 1. */
int	 htab_next(const struct htab *, size_t *i, uint64_t *key, void **val);

#endif
