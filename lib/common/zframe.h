/*
 * Frame payloads compressed with zstd (FL_ZSTD): one zstd frame that
 * declares its content size.  Both ends bound what they inflate, so a
 * hostile peer cannot make one allocate more than a frame's limit.
 */
#ifndef GLEAM_ZFRAME_H
#define GLEAM_ZFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/*
 * Appends src compressed at level to w and returns the compressed length,
 * or 0 when compression does not shrink it by at least 1/32 (w is left as
 * it was, so the caller sends src raw), or -1 if w or zstd failed.
 */
long	zf_compress(struct pw *w, const void *src, size_t len, int level);

/*
 * Inflates one zstd frame of len bytes into *out (malloc'd, *outlen bytes).
 * The frame must declare its content size, at most max, and hold exactly
 * one frame.  Returns 0, or -1 with *why.
 */
int	zf_decompress(const void *src, size_t len, size_t max, uint8_t **out,
	    size_t *outlen, const char **why);

#endif
