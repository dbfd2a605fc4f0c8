/*
 * hcpar: the fork and join behind the codec's threads (hc_params.threads).
 * One pool per process, started on first use; one parallel region at a
 * time uses it, and a caller that finds it busy runs the parts itself,
 * one after another, which gives the same results: every part writes only
 * what is its own.
 */
#ifndef GLEAM_HCPAR_H
#define GLEAM_HCPAR_H

#include "hcodec.h"		/* HC_THREADS_MAX */

/* Part `part` of `nparts`: writes nothing another part reads or writes. */
typedef void	 hc_part_fn(void *arg, int part, int nparts);

/*
 * Runs fn(arg, 0..nparts-1) and returns when every part has returned; the
 * caller runs part 0.  nparts above HC_THREADS_MAX is cut to it; if the
 * threads cannot be had, the caller runs every part.
 */
void		 hc_par(int nparts, hc_part_fn *fn, void *arg);

#endif
