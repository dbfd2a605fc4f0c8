/*
 * Content names: what the weight cache calls a byte string.  Up to
 * CNAME_LEAF bytes, the name is the XXH3-128 hash of the bytes (canonical,
 * big-endian form).  Above, the bytes are cut into leaves of CNAME_LEAF
 * (the last one shorter), each leaf is hashed so, and the name is the
 * XXH3-128 hash, seeded with CNAME_SEED, of the leaves' 16-byte hashes in
 * order followed by the length as a little-endian u64.  The leaves are
 * hashed on several threads, so that naming a large copy runs at memory
 * speed, not at one core's.  gleam-protocol(5) states the same.
 *
 * Strong names (cname_strong), for entries that several identities share:
 * the same tree with BLAKE2b-256 (RFC 7693, 32 bytes, unkeyed) for the
 * plain hash and the leaves, and for the root BLAKE2b-256 keyed with
 * CNAME_STRONG_KEY, so that a root never equals a leaf's plain hash.
 * BLAKE2b is collision resistant (2^128 work); XXH3 is not.
 */
#ifndef GLEAM_CNAME_H
#define GLEAM_CNAME_H

#include <stddef.h>
#include <stdint.h>

#define CNAME_LEN	16
#define CNAME_LEAF	(4u << 20)
#define CNAME_SEED	0x676c65616d747265ull	/* "gleamtre" */

#define CNAME_STRONG_LEN	32
#define CNAME_STRONG_KEY	"gleam content tree v1"

void	cname(const void *, size_t, uint8_t out[CNAME_LEN]);
void	cname_strong(const void *, size_t, uint8_t out[CNAME_STRONG_LEN]);
/* Threads cname uses at most (0: as many as there are cores, up to 8). */
void	cname_threads(int);

#endif
