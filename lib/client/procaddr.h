/*
 * The versioned entry-point table behind cuGetProcAddress (dark-api.md
 * §1.2).  entry-points.c, generated, holds the rows.
 */
#ifndef GLEAM_CLIENT_PROCADDR_H
#define GLEAM_CLIENT_PROCADDR_H

#include <stddef.h>

/* Any function; callers cast it back to its type. */
typedef void	(*ep_fn)(void);

enum ep_kind {
	EP_DEFAULT,	/* legacy default stream */
	EP_PT		/* _ptds or _ptsz: per-thread default stream */
};

struct ep_row {
	const char	*name;		/* as asked for, unsuffixed */
	int		 version;	/* the CUDA version adding it */
	int		 kind;		/* enum ep_kind */
	ep_fn		 fn;
};

/* Sorted by name (strcmp), then kind, then version. */
extern const struct ep_row ep_table[];
extern const size_t ep_rows;

#endif
