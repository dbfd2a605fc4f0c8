/*
 * The weight cache in gleam-serve: the R_CACHE_* calls of a remoting
 * client, answered from the content store (lib/common/cstore.h) shared by every
 * client of the server, within the tenant of the key they connected with.
 *
 * Contract: bytes a client uploads are hashed here and stored only if
 * they hash to the name the client gave; a copy or module load served
 * from the cache gets exactly the bytes of the entry it named.  Every
 * entry a client used stays pinned until wcache_client_free.
 */
#ifndef SERVE_WCACHE_H
#define SERVE_WCACHE_H

#include <stdint.h>

#include "backend.h"
#include "rpc.h"
#include "cstore.h"
#include "config.h"

struct wclient;

/* Where a client's entries are: a tenant of the store (cstore.h). */
struct wscope {
	char	 tenant[CSTORE_TENANT_MAX];
	int	 shared;	/* a cache_share group's */
};

/*
 * The scope of identity ident with its key (NULL, NULL: a server without
 * a key, one tenant): group's if it is in one (config_share_group), else
 * its own, named
 * by the identity and a keyed hash of its key, so that a new key (or a
 * new holder of the name) starts afresh.
 */
void	wcache_scope(const char *group, const char *ident,
	    const struct auth_key *, struct wscope *);
/* Opens the store the configuration names; the cache is off if it fails. */
void	wcache_init(const struct config *);
void	wcache_fini(void);
/*
 * In a just-forked worker process: the store is reached over fd, whose
 * other end the server serves with wcache_channel (see wcache.c).
 */
void	wcache_worker(int fd);
/*
 * Serves a worker's channel on a thread, in the scope of the worker's
 * client (whatever the worker asks); -1 if there is no cache.
 */
int	wcache_channel(int fd, const struct wscope *);
/* 1 for the calls wcache_call serves. */
int	wcache_owns(uint16_t type);
/*
 * Serves an R_CACHE_* call; *wc is created on first use, in scope sc.
 * A CUresult.
 */
int	wcache_call(struct wclient **wc, const struct wscope *sc,
	    const struct backend *, struct rcall *);
/*
 * A module or library load that names id with an empty image: the image
 * R_CACHE_IMAGE readied for it, into *v; 0 if there is none.
 */
int	wcache_image(struct wclient *, uint64_t id, struct rpc_val *v);
void	wcache_image_done(struct wclient *, uint64_t id);
void	wcache_client_free(struct wclient *);
/*
 * Why the client's state in the cache cannot move to another server now
 * (an upload or a readied entry or image that its next calls expect), or
 * NULL: a migration waits for a point where it is NULL.
 */
const char *wcache_client_busy(const struct wclient *);

/*
 * For status: the models (R_MODEL names) whose last load's entries are
 * all still in the store, at most max of them, each with the tenant of
 * its entries; their number.  tenant not NULL: that tenant's alone, so
 * that others' do not crowd them out of max.
 */
int	wcache_models(char (*names)[RPC_MODEL_MAX + 1],
	    char (*tenants)[CSTORE_TENANT_MAX], int max, const char *tenant);
/* For status: the store's counters; 0 if there is a cache. */
int	wcache_counters(struct cstore_counters *);

#endif
