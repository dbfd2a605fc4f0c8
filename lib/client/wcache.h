/*
 * The weight cache, client side (wcache.c): hooks for the copy and module
 * paths.  Each returns 1 when it dealt with the work, with the result in
 * *rc, and 0 when the caller should go its usual way (the cache is off,
 * the copy is small, or the server keeps no cache).
 */
#ifndef GLEAM_CLIENT_WCACHE_H
#define GLEAM_CLIENT_WCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"

int	wcache_htod(struct gctx *, uint64_t sid, int async, CUdeviceptr dst,
	    const void *src, size_t n, CUresult *rc);
void	wcache_name(const void *, size_t, uint8_t h[16]);
/* Once connected: sends the last run's names ahead (see wcache.c). */
void	wcache_early(void);
/*
 * Readies the image for the load that names id with an empty image; h is
 * its name (wcache_name).
 */
int	wcache_image(uint64_t id, const void *image, size_t n,
	    const uint8_t h[16], CUresult *rc);

/* What the cache did in this run, for the statistics file. */
struct wcache_stats {
	uint64_t	 hits, misses, hit_bytes, miss_bytes;
	uint64_t	 hash_bytes, hash_ns;
};
void	wcache_stats(struct wcache_stats *);

#endif
