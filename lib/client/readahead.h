/*
 * Reads ahead (readahead.c): the device-to-host copy a program makes after
 * the same synchronization every step, read beside that synchronization
 * and answered here.
 */
#ifndef READAHEAD_H
#define READAHEAD_H

#include <stdint.h>

#include "io.h"

struct rahead {
	struct rwait	 w;
	int		 rule;		/* -1: none to send */
	int		 sent;
	uint64_t	 ctx;
	CUdeviceptr	 src;
	size_t		 n;
};

/*
 * Around a synchronization's round trip (remote_call): before it is sent,
 * whether a read goes with it (a confirmed rule); rahead_send after the
 * call (and anything else beside it) was queued; rahead_end after its
 * reply and the mapped memory's pull (the read's bytes held, *mark moved
 * past the read where it came right after); rahead_waited once the
 * synchronization succeeded (the next copy learns from it).
 */
void	 rahead_before(uint16_t type, const struct rpc_val *in,
	    struct rahead *);
void	 rahead_send(struct rahead *);
void	 rahead_end(struct rahead *, int ok, uint64_t *mark);
void	 rahead_waited(uint16_t type, const struct rpc_val *in);
/*
 * A device-to-host copy of n bytes at src (device memory this library
 * allocated) on stream sid of ctx: 1 where the held bytes answer it (dst
 * written, nothing sent), else 0 (and the copy is learnt from).
 */
int	 rahead_copy(uint64_t ctx, uint64_t sid, void *dst, CUdeviceptr src,
	    size_t n);
/* Reads sent, their bytes, copies answered (gleam-run -O). */
void	 rahead_stats(uint64_t *reads, uint64_t *bytes, uint64_t *hits);

#endif
