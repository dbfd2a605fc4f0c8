/*
 * The versioned entry-point table behind cuGetProcAddress (dark-api.md
 * §1.2).  entry-points.c, generated, holds the rows.
 */
#ifndef GLEAM_CLIENT_PROCADDR_H
#define GLEAM_CLIENT_PROCADDR_H

#include <stddef.h>

typedef void	(*ep_fn)(void);		/* any function, cast back by callers */

enum ep_kind {
	EP_DEFAULT,			/* legacy default stream */
	EP_PT				/* _ptds/_ptsz: per-thread default stream */
};

struct ep_row {
	const char	*name;		/* the name asked for, unsuffixed */
	int		 version;	/* the CUDA version that introduced it */
	int		 kind;		/* enum ep_kind */
	ep_fn		 fn;
};

/* Sorted by name (strcmp), then kind, then version. */
extern const struct ep_row ep_table[];
extern const size_t ep_rows;

#endif
