/*
 * The content store behind the weight cache: byte strings named by their
 * content name (cname.h), scoped by tenant, kept in RAM and on disk, each tier
 * within a byte budget by least-recent use.  gleam-serve serves
 * host-to-device copies and module images from it; gleam-cache lists,
 * measures, verifies and prunes its directory.
 *
 * Directory layout (gleam-cache(1) documents it):
 *	lock		flock(2): shared by gleam-serve, exclusive by
 *			gleam-cache while it removes entries
 *	pins		"pid tenant hash" lines: entries a live client of
 *			that gleam-serve has used; never pruned
 *	counters	YAML: the server's hit and miss counters
 *	gen		bumped by gleam-cache when it removes entries
 *	tmp/		entries being written (renamed into data/ whole)
 *	data/TENANT/XX/HASH	one entry: a 96-byte header, then the bytes
 *			(zstd-compressed or raw); HASH is the name in hex
 *			(64 digits for a strong name, 32 for a weak one),
 *			XX its first two.  Version 2's 64-byte header (weak
 *			names only) is still read, never written.
 *
 * Tenants: entries uploaded in one tenant are stored and served in that
 * tenant alone.  gleam-serve's tenants: "i+NAME+HEX" for identity NAME
 * (HEX: 16 hex digits of a keyed hash of its key), "g+GROUP" for a
 * cache_share group, "nokey" for a server without a key; "k" and 16 hex
 * digits was a key's tenant before identities (still read, never made).
 *
 * Names: a tenant's naming is fixed by its kind.  A group's entries are
 * shared by several identities, so they are named strongly (cname_strong:
 * BLAKE2b-256, 32 bytes), which no one can make collide; every other
 * tenant is one identity's (or a server's without a key) and names
 * weakly (cname: XXH3-128, 16 bytes), at memory speed.  A name is kept in
 * CSTORE_HASH_LEN bytes either way, a weak one followed by 16 zero bytes.
 * An entry whose header says the other naming than its tenant's is
 * damaged (an XXH3-named entry of a group, from before strong names).
 *
 * Contract: every entry handed out was verified (its bytes hash to its
 * name) after it was read from disk; a corrupt file is removed and
 * counted, never served.  A ref pins its entry's bytes until released.
 * Failures of the disk tier (full disk, no permission, corrupt files) are
 * logged and the store carries on without it.
 */
#ifndef GLEAM_CSTORE_H
#define GLEAM_CSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CSTORE_HASH_LEN		32	/* a name's room: a strong one's */
#define CSTORE_WEAK_LEN		16	/* a weak name's bytes */
#define CSTORE_HEX_LEN		(2 * CSTORE_HASH_LEN)
#define CSTORE_TENANT_MAX	96	/* "i+" name "+" 16 hex, NUL; see below */
#define CSTORE_HDR_LEN		96	/* version 3, written now */
#define CSTORE_HDR2_LEN		64	/* version 2, read */

/* A tenant's naming. */
enum { CN_WEAK = 1, CN_STRONG = 2 };
#define CSTORE_ENTRY_MAX	(2ull << 30)	/* bytes of one entry */

struct cstore_conf {
	char		 dir[1024];	/* "": no disk tier */
	uint64_t	 ram_budget;	/* bytes; 0: no RAM tier */
	uint64_t	 disk_budget;	/* bytes */
	int		 level;		/* zstd level; 0: store raw */
};

/* Counters, cumulative across restarts (the counters file). */
struct cstore_counters {
	uint64_t	 ram_hits, disk_hits, gpu_hits, misses;
	uint64_t	 hit_bytes, miss_bytes;
	uint64_t	 stored, stored_bytes;
	uint64_t	 evicted, corrupt, write_errors;
	/* Gauges of the last writer. */
	uint64_t	 ram_bytes, ram_entries, gpu_bytes, gpu_entries;
	uint64_t	 disk_bytes, disk_entries;
	uint64_t	 entries;	/* in RAM, on disk or both (not in
					   the counters file) */
	double		 updated;	/* epoch seconds */
};

/* An entry's bytes, pinned until cstore_release. */
struct cstore_ref {
	const void	*data;
	size_t		 len;
	int		 tier;		/* where it was found: CT_* */
	struct centry	*e;		/* NULL: the ref owns own */
	void		*own;
};

enum { CT_NONE, CT_RAM, CT_DISK, CT_UPLOAD };

struct cstore;

/* A tenant's naming: CN_STRONG for a group's, CN_WEAK for the rest. */
int	 cstore_naming(const char *tenant);
/* The bytes of a name of that naming: 32 or 16. */
size_t	 cstore_name_len(int naming);
/* The name of a byte string in that naming (a weak one zero-filled). */
void	 cstore_hash(int naming, const void *, size_t,
	    uint8_t out[CSTORE_HASH_LEN]);
/* The first len bytes of a name in hex. */
void	 cstore_hex(const uint8_t h[CSTORE_HASH_LEN], size_t len,
	    char out[CSTORE_HEX_LEN + 1]);
/*
 * Parses 64 hex digits (a strong name) or 32 (a weak one, zero-filled);
 * returns the name's bytes, 32 or 16, or -1 if it is neither.
 */
int	 cstore_unhex(const char *, uint8_t out[CSTORE_HASH_LEN]);
/* A tenant's name from a key's bytes, or "nokey" for NULL. */
void	 cstore_tenant(const void *key, size_t len,
	    char out[CSTORE_TENANT_MAX]);
/* An identity's tenant, "i+NAME+HEX", and a group's, "g+GROUP". */
void	 cstore_tenant_ident(const char *name, const void *key, size_t len,
	    char out[CSTORE_TENANT_MAX]);
void	 cstore_tenant_group(const char *group, char out[CSTORE_TENANT_MAX]);
/*
 * 1 if tenant t is selected by sel (gleam-cache -t): sel is t itself,
 * or an identity's name, which selects "i+sel+" whatever the key.
 */
int	 cstore_tenant_match(const char *t, const char *sel);
/* 1 if sel can select: a tenant's name or an identity's. */
int	 cstore_tenant_sel(const char *sel);
int	 cstore_tenant_valid(const char *);

/*
 * Opens the store.  A directory that cannot be created or written is
 * logged and leaves the store without a disk tier (NULL only when memory
 * is short).  Scans the directory's entries into the index.
 */
struct cstore	*cstore_open(const struct cstore_conf *);
/* Waits until every entry queued for the disk is written. */
void		 cstore_drain(struct cstore *);
/* Writes what is queued and the counters, and frees everything (no ref
 * may be live). */
void		 cstore_close(struct cstore *);
/* The RAM tier's budget in bytes. */
uint64_t	 cstore_ram_budget(const struct cstore *);
/* 1 if the store has a RAM or disk tier to keep entries in. */
int		 cstore_active(const struct cstore *);

/*
 * The entry named (tenant, hash) of len bytes, from RAM or disk; NULL on a
 * miss (counted).  The ref is the caller's to release.
 */
struct cstore_ref *cstore_get(struct cstore *, const char *tenant,
		    const uint8_t hash[CSTORE_HASH_LEN], uint64_t len);
/*
 * Stores len bytes of buf (malloc'd; the store takes it) whose hash the
 * caller has verified, and returns a ref to them (NULL only when memory
 * is short; buf is then freed).  The entry goes to RAM and to disk as the
 * budgets allow; if neither can keep it, the ref alone holds the bytes.
 */
struct cstore_ref *cstore_put(struct cstore *, const char *tenant,
		    const uint8_t hash[CSTORE_HASH_LEN], void *buf, size_t len);
void		 cstore_release(struct cstore *, struct cstore_ref *);
/* 1 if the entry is in RAM or on disk now; counts nothing. */
int		 cstore_has(struct cstore *, const char *tenant,
		    const uint8_t hash[CSTORE_HASH_LEN]);

/*
 * Session pins: entries a live client used, recorded in the pins file
 * so that gleam-cache prune leaves them alone until cstore_unpin_all.
 * owner is the client's token.
 */
void		 cstore_pin(struct cstore *, const void *owner,
		    const char *tenant, const uint8_t hash[CSTORE_HASH_LEN]);
void		 cstore_unpin_all(struct cstore *, const void *owner);

/* Counters now (gauges filled in). */
void		 cstore_counters(struct cstore *, struct cstore_counters *);
/* Writes the counters file if more than a second passed (or force). */
void		 cstore_flush(struct cstore *, int force);
/*
 * Adds to the GPU tier's counters: hit 1, a hit of bytes; hit 2, a copy
 * of an entry held from RAM (whose get counted a RAM hit) that the GPU
 * tier served instead: that hit moves to the GPU tier.
 */
void		 cstore_count_gpu(struct cstore *, int hit, uint64_t bytes,
		    uint64_t resident_bytes, uint64_t resident_entries);

/* ---- the directory, for gleam-cache and the tests ------------------- */

/* One entry file as a scan sees it. */
struct cstore_file {
	char		 tenant[CSTORE_TENANT_MAX];
	uint8_t		 hash[CSTORE_HASH_LEN];
	size_t		 hlen;		/* the name's bytes: 32 or 16 */
	char		 path[1200];
	uint64_t	 len;		/* bytes it holds (from the header) */
	uint64_t	 disk;		/* bytes of the file */
	double		 used;		/* last use, epoch seconds (mtime) */
	int		 pinned;	/* in the pins file of a live server */
	int		 bad;		/* header unreadable, or of the
					   other naming than its tenant's */
};

/*
 * Every entry under dir (tenant: only that one, or NULL), sorted by last
 * use, oldest first; *out malloc'd.  Returns -1 with a reason in err.
 */
int	 cstore_scan(const char *dir, const char *tenant,
	    struct cstore_file **out, size_t *n, char *err, size_t errlen);
/*
 * Decodes an entry file's bytes: checks the header, decompresses and
 * rehashes in the header's naming.  With naming non-zero the header's
 * must be it; with want non-NULL the name must equal it.  On success
 * *out (malloc'd) holds the bytes; -1 with a reason otherwise.
 */
int	 cstore_decode(const void *, size_t, int naming, const uint8_t *want,
	    void **out, size_t *outlen, char *why, size_t whylen);
/* Encodes an entry file (version 3); *out malloc'd.  -1 if memory is
 * short. */
int	 cstore_encode(const void *, size_t, int naming,
	    const uint8_t hash[CSTORE_HASH_LEN], int level, void **out,
	    size_t *outlen);
/* Reads and checks an entry file; 0 if sound, -1 with a reason. */
int	 cstore_verify_file(const char *path, int naming,
	    const uint8_t hash[CSTORE_HASH_LEN], char *why, size_t whylen);
/*
 * Locks the directory for removals (exclusive; waits up to timeout
 * seconds).  Returns the lock's fd or -1 with a reason.
 */
int	 cstore_lock(const char *dir, double timeout, char *err, size_t errlen);
void	 cstore_unlock(int fd);
/* Removes an entry file (under the lock) and bumps gen. */
int	 cstore_remove(const char *dir, const struct cstore_file *);
/* Reads the counters file; -1 if there is none or it is malformed. */
int	 cstore_read_counters(const char *dir, struct cstore_counters *);
/* Parses a counters document (the fuzz target's entry). */
int	 cstore_parse_counters(const void *, size_t, struct cstore_counters *);
/* Parses the pins file's text; calls fn for each live pin line. */
int	 cstore_parse_pins(const char *, size_t,
	    void (*fn)(void *, const char *tenant, const uint8_t *hash),
	    void *arg, int check_pid);

#endif
