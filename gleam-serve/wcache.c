/*
 * The weight cache's remoting calls (gleam-protocol(5)):
 *
 *	R_CACHE_HTOD	a host-to-device copy named by hash: served from the
 *			cache, or "send it" (or "no cache here")
 *	R_CACHE_PUT	the bytes of a missed entry, in pieces; the last
 *			piece is verified against the name and stored
 *	R_CACHE_IMAGE	a module image named by hash, readied for the load
 *			that names the module's id with an empty image
 *
 * A client uploads after a miss and then asks again, so that the copy is
 * always made from bytes that were verified against the name it gave.
 *
 * Names on the wire are the scope's naming (cstore.h): 32 bytes of
 * BLAKE2b-256 in a cache_share group's, 16 of XXH3-128 in the others.
 * WELCOME told the client which (FEAT_NAMES).  A client that sends 16
 * bytes in a group's scope predates strong names: it is told the cache
 * is off (its copies go whole, and stay right), and the log says why.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbuf.h"
#include "cstore.h"
#include "log.h"
#include "util.h"
#include "wcache.h"

#define UP_MAX		8		/* uploads in progress, verified ones */
#define UPLOAD_MAX	(2ull << 30)	/* bytes in progress per client */

enum { WC_MISS = 0, WC_DONE = 1, WC_OFF = 2 };

/* An entry arriving in pieces. */
struct upload {
	uint8_t		 hash[CSTORE_HASH_LEN];
	uint64_t	 total, have, cap;
	uint8_t		*buf;
};

/* A verified upload, until the call that asked for it comes again. */
struct ready {
	uint8_t		 hash[CSTORE_HASH_LEN];
	struct cstore_ref *ref;
};

/* An entry held for the client's copies ahead of them (R_CACHE_HAVE). */
struct held {
	uint8_t		 hash[CSTORE_HASH_LEN];
	struct cstore_ref *ref;
	struct held	*next;		/* same first 8 bytes of name */
};

#define HAVE_MAX	(1u << 20)	/* names in one R_CACHE_HAVE */

/*
 * A model's load: the entries a client that named its model (R_MODEL)
 * used.  Once it is gone they are the model's, and status lists the
 * model as resident while the store holds every one of them.
 */
struct mload {
	char		 name[RPC_MODEL_MAX + 1];	/* "": none named */
	char		 tenant[CSTORE_TENANT_MAX];	/* whose entries */
	uint8_t		(*h)[CSTORE_HASH_LEN];
	size_t		 n, cap;
};

#define MODELS_MAX	64		/* models remembered, newest kept */
#define MLOAD_MAX	(1u << 20)	/* entries of one model at most */

static pthread_mutex_t	 models_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mload	 models[MODELS_MAX];
static uint64_t		 models_age[MODELS_MAX], models_clock;

static void
mload_add(struct mload *m, const uint8_t *h)
{
	void *nh;

	if (m->name[0] == '\0' || m->n >= MLOAD_MAX)
		return;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;

		if ((nh = realloc(m->h, cap * sizeof *m->h)) == NULL)
			return;
		m->h = nh;
		m->cap = cap;
	}
	memcpy(m->h[m->n++], h, CSTORE_HASH_LEN);
}

/* The load ended: it becomes its model's record (m is emptied). */
static void
mload_done(struct mload *m)
{
	int i, slot = -1;

	if (m->name[0] == '\0' || m->n == 0) {
		free(m->h);
		memset(m, 0, sizeof *m);
		return;
	}
	pthread_mutex_lock(&models_lock);
	for (i = 0; i < MODELS_MAX; i++)
		if (strcmp(models[i].name, m->name) == 0) {
			slot = i;
			break;
		}
	for (i = 0; slot == -1 && i < MODELS_MAX; i++)
		if (models[i].name[0] == '\0')
			slot = i;
	if (slot == -1) {	/* the one recorded longest ago goes */
		slot = 0;
		for (i = 1; i < MODELS_MAX; i++)
			if (models_age[i] < models_age[slot])
				slot = i;
	}
	free(models[slot].h);
	models[slot] = *m;
	models_age[slot] = ++models_clock;
	pthread_mutex_unlock(&models_lock);
	memset(m, 0, sizeof *m);
}

static int
model_name_ok(const void *p, size_t n)
{
	const char *s = p;
	size_t i;

	if (n == 0 || n > RPC_MODEL_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    strchr("._:/+-", s[i]) != NULL) || s[i] == '\0')
			return 0;
	return 1;
}

struct wclient {
	struct wscope	 scope;		/* where its entries are */
	struct htab	 held;		/* u64 of the name -> struct held */
	uint64_t	 heldbytes;
	struct upload	 up[UP_MAX];
	uint64_t	 upbytes;
	struct ready	 rd[UP_MAX];
	unsigned	 rdnext;
	struct htab	 images;	/* load id -> struct cstore_ref */
	struct mload	 ml;		/* its model's entries */
	int		 naming;	/* its scope's: CN_* */
	int		 oldwarned;	/* weak names in a group's: logged */
};

static struct cstore	*store;

/*
 * The GPU tier: entries kept in device memory of the server's own (the
 * backend's gpu_keep), served by a device-to-device copy.  An entry is
 * one tenant's (wcache_scope), one name, one length and one device; a
 * client is served only its own tenant's.  Contract: an entry with refs > 0 is being
 * copied from and is not freed; eviction takes the least recently used
 * of a device until its bytes are within gpu_budget again.
 */
#define GPU_DEVS	64

struct gentry {
	char		 tenant[CSTORE_TENANT_MAX];
	uint8_t		 hash[CSTORE_HASH_LEN];
	uint64_t	 len, kept;
	int		 device, refs;
	int		 fd;		/* isolation: process: the memory's */
	uint64_t	 asize;		/* and its bytes; else -1 and len */
	uint64_t	 used;		/* a use counter: LRU order */
	struct gentry	*next;
};

static pthread_mutex_t	 gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gentry	*gpu_list;
static uint64_t		 gpu_budget, gpu_bytes[GPU_DEVS], gpu_clock;
static uint64_t		 gpu_total, gpu_entries;
static int		 chan = -1;	/* a worker's socket to the store */
static const uint8_t	 zero_hash[CSTORE_HASH_LEN];

/*
 * The channel between a worker and the server's store: requests of a
 * fixed header, then bytes; only GET is answered (a byte, then the
 * entry's bytes if it was found), in order.
 */
enum { CH_GET = 1, CH_PUT, CH_PIN, CH_MODEL, CH_GGET, CH_GPUT, CH_GHIT,
    CH_GMOVE };

/*
 * The GPU tier under isolation: process.  Entries are device memory
 * exported as file descriptors (the backend's gpu_export), held by the
 * server in gpu_list; a worker asks for one by name and device (CH_GGET
 * and this, answered by a byte of 2 with the descriptor, then asize; or
 * 0), copies from it (gpu_import) and says so (CH_GHIT, or CH_GMOVE
 * for an entry it held from RAM: the counters); it offers what it just served from RAM or disk (CH_GPUT and
 * this, the descriptor sent with it).  A worker's copy of a descriptor
 * keeps the memory while it copies, even if the server evicts the entry.
 * Entries under GPU_FD_MIN bytes stay in RAM: mapping one costs about
 * what a host-to-device copy of that size does.
 */
struct chgpu {
	int32_t		 device;
	uint32_t	 pad;
	uint64_t	 asize;
};

#define GPU_FD_MIN	(2u << 20)

static int	gpu_fd_find(const char *, const uint8_t *, uint64_t, int,
		    uint64_t *);
static void	gpu_fd_add(const char *, const uint8_t *, uint64_t, int,
		    uint64_t, int);
static int	gpu_serve_fd(const struct backend *, struct rcall *,
		    const uint8_t *, uint64_t);
static void	gpu_add_fd(const struct backend *, struct rcall *,
		    const uint8_t *, const struct cstore_ref *);

/*
 * No tenant on the channel: the server's end serves the one scope it was
 * given for the worker's client (wcache_channel), whatever a worker says.
 * The server trusts a worker no more than the network: it stores a PUT
 * only under the hash of its bytes, pins only entries it holds, and takes
 * only GPU entries as large as a worker would offer (the bytes of one it
 * cannot check: see gleam-serve(8), CAVEATS).
 */
struct chdr {
	uint8_t		 op, pad[7];
	uint8_t		 hash[CSTORE_HASH_LEN];
	uint64_t	 len;
};

/* The channel broke: the worker goes on without the store. */
static void
chan_gone(void)
{
	log_warn("cache: the server's store is gone: going on without it");
	close(chan);
	chan = -2;
}

static int
ch_send(uint8_t op, const uint8_t *h, uint64_t len, const void *p)
{
	struct chdr hd;

	memset(&hd, 0, sizeof hd);
	hd.op = op;
	memcpy(hd.hash, h, CSTORE_HASH_LEN);
	hd.len = len;
	if (fd_write_all(chan, &hd, sizeof hd) == -1 ||
	    (p != NULL && fd_write_all(chan, p, len) == -1)) {
		chan_gone();
		return -1;
	}
	return 0;
}

/* Sends a reply byte of 2 with descriptor mfd; -1 on error. */
static int
fd_send(int fd, int mfd)
{
	uint8_t two = 2;

	return fd_sendmsg(fd, &two, 1, mfd);
}

/*
 * Reads a reply byte with recvmsg, so that a descriptor sent with it
 * (SCM_RIGHTS) is received, in *mfd (-1 if none); -1 on error or EOF.
 */
static int
ch_reply(int fd, uint8_t *byte, int *mfd)
{
	return fd_recvmsg(fd, byte, 1, mfd);
}

/* A ref that owns its bytes. */
static struct cstore_ref *
own_ref(void *buf, size_t len, int tier)
{
	struct cstore_ref *r;

	if ((r = calloc(1, sizeof *r)) == NULL) {
		free(buf);
		return NULL;
	}
	r->data = buf;
	r->len = len;
	r->tier = tier;
	r->own = buf;
	return r;
}

static struct cstore_ref *
s_get(struct wclient *w, const uint8_t *h, uint64_t n)
{
	uint8_t found;
	void *buf;
	int mfd;

	if (chan == -1)
		return cstore_get(store, w->scope.tenant, h, n);
	if (chan < 0 || ch_send(CH_GET, h, n, NULL) == -1)
		return NULL;
	if (ch_reply(chan, &found, &mfd) == -1)
		goto gone;
	if (mfd >= 0 && found != 2)
		close(mfd);
	if (!found)
		return NULL;
	if (found == 2) {
		/* The entry's memfd: mapped, not copied. */
		if (mfd == -1)
			goto gone;
		buf = cbuf_map(mfd, n);
		close(mfd);
		if (buf == NULL)
			return NULL;
		return own_ref(buf, n, CT_RAM);
	}
	if ((buf = malloc(n ? n : 1)) == NULL) {
		/* The bytes are on their way: read them to keep in step. */
		uint8_t sink[65536];
		uint64_t left = n;

		while (left > 0) {
			size_t k = left < sizeof sink ? left : sizeof sink;

			if (fd_read_full(chan, sink, k) == -1)
				goto gone;
			left -= k;
		}
		return NULL;
	}
	if (fd_read_full(chan, buf, n) == -1) {
		free(buf);
		goto gone;
	}
	return own_ref(buf, n, CT_RAM);
gone:
	chan_gone();
	return NULL;
}

/* buf: malloc'd, verified; the ref takes it. */
static struct cstore_ref *
s_put(struct wclient *w, const uint8_t *h, void *buf, size_t len)
{
	if (chan == -1)
		return cstore_put(store, w->scope.tenant, h, buf, len);
	if (chan >= 0)
		ch_send(CH_PUT, h, len, buf);
	return own_ref(buf, len, CT_UPLOAD);
}

static void
s_pin(struct wclient *w, const uint8_t *h)
{
	if (chan == -1) {
		cstore_pin(store, w, w->scope.tenant, h);
		mload_add(&w->ml, h);
	} else if (chan >= 0)
		ch_send(CH_PIN, h, 0, NULL);
}

static void
s_flush(void)
{
	if (chan == -1)
		cstore_flush(store, 0);
}

/*
 * The server's end of one worker's channel: its socket, its scope, and
 * all the heap its thread has in hand.  They are on a list, and a fork
 * waits for the locks below: a worker forked beside a channel thread
 * inherits that heap without the thread, and must find it reachable, or
 * its leak check (make asan) reports the parent's memory as its own.
 */
struct chctx {
	int		 fd;
	char		 tenant[CSTORE_TENANT_MAX];
	struct mload	 ml;		/* the load of its model */
	void		*buf;		/* an entry being read */
	struct cstore_ref *ref;		/* an entry being sent */
	struct chctx	*prev, *next;
};

static pthread_mutex_t	 chans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chctx	*chans;
static pthread_once_t	 chans_once = PTHREAD_ONCE_INIT;

static void
chans_prepare(void)
{
	pthread_mutex_lock(&chans_lock);
	pthread_mutex_lock(&models_lock);
	pthread_mutex_lock(&gpu_lock);
}

static void
chans_done(void)
{
	pthread_mutex_unlock(&gpu_lock);
	pthread_mutex_unlock(&models_lock);
	pthread_mutex_unlock(&chans_lock);
}

static void
chans_atfork(void)
{
	pthread_atfork(chans_prepare, chans_done, chans_done);
}

/* cx off the list, and freed. */
static void
chans_del(struct chctx *cx)
{
	pthread_mutex_lock(&chans_lock);
	if (cx->prev != NULL)
		cx->prev->next = cx->next;
	else
		chans = cx->next;
	if (cx->next != NULL)
		cx->next->prev = cx->prev;
	free(cx);
	pthread_mutex_unlock(&chans_lock);
}

/* The server's end of one worker's channel, on a thread of its own. */
static void *
channel_main(void *arg)
{
	struct chctx *cx = arg;
	const char *tenant = cx->tenant;
	int fd = cx->fd;
	struct cstore_ref *r;
	struct mload *ml = &cx->ml;
	struct chdr hd;
	uint8_t g[CSTORE_HASH_LEN], yes = 1, no = 0;
	int mfd;

	while (fd_read_full(fd, &hd, sizeof hd) == 0) {
		if (hd.len > CSTORE_ENTRY_MAX || hd.op < CH_GET ||
		    hd.op > CH_GMOVE)
			break;
		if (hd.op == CH_GGET || hd.op == CH_GPUT) {
			struct chgpu q;
			int f = -1;

			if ((hd.op == CH_GGET ? fd_read_full(fd, &q, sizeof q) :
			    fd_recvmsg(fd, &q, sizeof q, &f)) == -1)
				break;
			if (q.device < 0 || q.device >= GPU_DEVS ||
			    (hd.op == CH_GPUT && (f < 0 || q.asize < hd.len ||
			    hd.len < GPU_FD_MIN))) {
				if (f >= 0)
					close(f);
				break;		/* a confused worker */
			}
			if (hd.op == CH_GPUT) {
				/* Only of an entry the store holds. */
				if (cstore_has(store, tenant, hd.hash))
					gpu_fd_add(tenant, hd.hash, hd.len,
					    q.device, q.asize, f);
				else
					close(f);
				continue;
			}
			if ((f = gpu_fd_find(tenant, hd.hash, hd.len,
			    q.device, &q.asize)) < 0) {
				if (fd_write_all(fd, &no, 1) == -1)
					break;
				continue;
			}
			if (fd_send(fd, f) == -1 || fd_write_all(fd, &q.asize,
			    sizeof q.asize) == -1) {
				close(f);
				break;
			}
			close(f);
			continue;
		}
		if (hd.op == CH_GHIT || hd.op == CH_GMOVE) {
			cstore_count_gpu(store, hd.op == CH_GMOVE ? 2 : 1,
			    hd.len, gpu_total, gpu_entries);
			continue;
		}
		if (hd.op == CH_MODEL) {
			char name[RPC_MODEL_MAX + 1];

			if (hd.len > RPC_MODEL_MAX ||
			    fd_read_full(fd, name, hd.len) == -1 ||
			    !model_name_ok(name, hd.len))
				break;
			name[hd.len] = '\0';
			memcpy(ml->name, name, sizeof ml->name);
			snprintf(ml->tenant, sizeof ml->tenant, "%s", tenant);
			continue;
		}
		if (hd.op == CH_GET) {
			r = cx->ref = cstore_get(store, tenant, hd.hash,
			    hd.len);
			if (r == NULL || r->len != hd.len) {
				cstore_release(store, r);
				cx->ref = NULL;
				if (fd_write_all(fd, &no, 1) == -1)
					break;
				continue;
			}
			/* An entry in a memfd goes as the descriptor. */
			if ((mfd = cbuf_fd(r->data, r->len)) >= 0) {
				if (fd_send(fd, mfd) == -1)
					break;
			} else if (fd_write_all(fd, &yes, 1) == -1 ||
			    fd_write_all(fd, r->data, r->len) == -1)
				break;
			cstore_release(store, r);
			cx->ref = NULL;
			cstore_flush(store, 0);
		} else if (hd.op == CH_PUT) {
			/* In a memfd: workers will map it, not copy it. */
			if ((cx->buf = cbuf_alloc(hd.len)) == NULL)
				break;
			if (fd_read_full(fd, cx->buf, hd.len) == -1)
				break;
			/* The worker checked; so do we (a worker runs its
			 * client's code near enough to be doubted). */
			cstore_hash(cstore_naming(tenant), cx->buf, hd.len, g);
			if (memcmp(g, hd.hash, sizeof g) != 0)
				break;
			cstore_release(store, cstore_put(store, tenant,
			    hd.hash, cx->buf, hd.len));
			cx->buf = NULL;		/* the store's */
			cstore_flush(store, 0);
		} else if (cstore_has(store, tenant, hd.hash)) {
			/* Pins are bounded by the entries. */
			cstore_pin(store, arg, tenant, hd.hash);
			mload_add(ml, hd.hash);
		}
	}
	cstore_release(store, cx->ref);
	cx->ref = NULL;
	cbuf_free(cx->buf);
	cx->buf = NULL;
	mload_done(ml);
	cstore_unpin_all(store, arg);
	cstore_flush(store, 0);
	close(fd);
	chans_del(cx);
	return NULL;
}

int
wcache_channel(int fd, const struct wscope *sc)
{
	pthread_attr_t attr;
	pthread_t tid;
	struct chctx *cx;
	int rc;

	if (!cstore_active(store) || (cx = calloc(1, sizeof *cx)) == NULL)
		return -1;
	cx->fd = fd;
	snprintf(cx->tenant, sizeof cx->tenant, "%s", sc->tenant);
	pthread_mutex_lock(&chans_lock);
	if ((cx->next = chans) != NULL)
		chans->prev = cx;
	chans = cx;
	pthread_mutex_unlock(&chans_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&tid, &attr, channel_main, cx);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		chans_del(cx);
	return rc == 0 ? 0 : -1;
}

void
wcache_scope(const char *group, const char *ident,
    const struct auth_key *key, struct wscope *sc)
{
	memset(sc, 0, sizeof *sc);
	if (ident == NULL || key == NULL || !key->set) {
		cstore_tenant(NULL, 0, sc->tenant);
		return;
	}
	if (group != NULL) {
		cstore_tenant_group(group, sc->tenant);
		sc->shared = 1;
	} else
		cstore_tenant_ident(ident, key->k, sizeof key->k, sc->tenant);
}

void
wcache_init(const struct config *cfg)
{
	struct cstore_conf cc;

	memset(&cc, 0, sizeof cc);
	snprintf(cc.dir, sizeof cc.dir, "%s", cfg->cache_dir);
	cc.ram_budget = cfg->cache_ram;
	cc.disk_budget = cfg->cache_disk;
	cc.level = cfg->cache_level;
	gpu_budget = cfg->cache_gpu;
	store = cstore_open(&cc);
	/* After the store's: ours come first before a fork, as in the code
	 * (models_lock, then the store's). */
	pthread_once(&chans_once, chans_atfork);
	if (store == NULL)
		log_error("cache: out of memory: serving without a cache");
	else if (!cstore_active(store))
		log_info("cache: off (cache_ram and cache_disk are 0)");
	else
		log_info("cache: RAM %llu bytes, disk %s, entries kept per "
		    "identity or cache_share group",
		    (unsigned long long)cc.ram_budget, cc.dir[0] ? cc.dir :
		    "none");
}

/*
 * In a worker process (isolation: process), just forked: the store stays
 * the server's.  The worker reaches it over fd (a socket to a thread of
 * the server, wcache_channel), which gets entries, stores uploads and
 * pins; the worker's refs own copies of the bytes.  So there is one
 * store, one set of counters and one pins file, and a worker that dies
 * leaves nothing pinned (the server unpins when the socket closes).  The
 * inherited store is only read for its configuration.  The GPU tier's
 * entries are the server's too, as descriptors of exported device memory
 * (gpu_serve_fd, gpu_add_fd).
 */
void
wcache_worker(int fd)
{
	chan = fd >= 0 ? fd : -2;
}

/* The counters on disk; the store stays, as a late client thread may
 * still be finishing with it. */
void
wcache_fini(void)
{
	if (chan != -1) {
		if (chan >= 0)
			close(chan);
		return;
	}
	if (store != NULL) {
		cstore_drain(store);
		cstore_flush(store, 1);
	}
}

int
wcache_owns(uint16_t type)
{
	return type == R_MODEL || type == R_CACHE_HTOD || type == R_CACHE_PUT ||
	    type == R_CACHE_IMAGE || type == R_CACHE_HAVE ||
	    type == R_CACHE_HELD;
}

int
wcache_models(char (*names)[RPC_MODEL_MAX + 1],
    char (*tenants)[CSTORE_TENANT_MAX], int max, const char *tenant)
{
	int i, k = 0;
	size_t j;

	if (!cstore_active(store))
		return 0;
	pthread_mutex_lock(&models_lock);
	for (i = 0; i < MODELS_MAX && k < max; i++) {
		if (models[i].name[0] == '\0' || (tenant != NULL &&
		    strcmp(models[i].tenant, tenant) != 0))
			continue;
		for (j = 0; j < models[i].n; j++)
			if (!cstore_has(store, models[i].tenant,
			    models[i].h[j]))
				break;
		if (j == models[i].n) {
			memcpy(names[k], models[i].name,
			    sizeof models[i].name);
			memcpy(tenants[k++], models[i].tenant,
			    sizeof models[i].tenant);
		}
	}
	pthread_mutex_unlock(&models_lock);
	return k;
}

int
wcache_counters(struct cstore_counters *c)
{
	if (!cstore_active(store))
		return -1;
	if (c != NULL)
		cstore_counters(store, c);
	return 0;
}

/* A client older than strong names in a group's scope: said once. */
static void
wc_old(struct wclient *w, const struct rcall *c)
{
	if (!w->oldwarned) {
		w->oldwarned = 1;
		log_warn("client %s (%s): names cache entries by XXH3-128 in "
		    "the shared scope %s, which names them by BLAKE2b-256 "
		    "(a client older than the server): no cache for it, its "
		    "copies go whole", c->cl->addr, c->cl->name,
		    w->scope.tenant);
	}
}

/*
 * A call's name v into h (zero-filled): 0; 1 if it is a weak name in a
 * group's scope (wc_old); -1 if its length is no name's.
 */
static int
wc_name(struct wclient *w, const struct rcall *c, const struct rpc_val *v,
    uint8_t h[CSTORE_HASH_LEN])
{
	if (v->len == cstore_name_len(w->naming)) {
		memset(h, 0, CSTORE_HASH_LEN);
		memcpy(h, v->p, v->len);
		return 0;
	}
	if (v->len != CSTORE_WEAK_LEN || w->naming != CN_STRONG)
		return -1;
	wc_old(w, c);
	return 1;
}

static void
upload_drop(struct wclient *w, struct upload *u)
{
	w->upbytes -= u->have;
	free(u->buf);
	memset(u, 0, sizeof *u);
}

/* A verified upload of that name and length, handed over; or NULL. */
static struct cstore_ref *
ready_take(struct wclient *w, const uint8_t *h, uint64_t n)
{
	struct cstore_ref *r;
	int i;

	for (i = 0; i < UP_MAX; i++) {
		if (w->rd[i].ref == NULL || memcmp(w->rd[i].hash, h,
		    CSTORE_HASH_LEN) != 0 || w->rd[i].ref->len != n)
			continue;
		r = w->rd[i].ref;
		w->rd[i].ref = NULL;
		return r;
	}
	return NULL;
}

static void
ready_add(struct wclient *w, const uint8_t *h, struct cstore_ref *r)
{
	struct ready *rd = &w->rd[w->rdnext++ % UP_MAX];

	/* The oldest goes: a client asks again right after its upload. */
	cstore_release(store, rd->ref);
	memcpy(rd->hash, h, CSTORE_HASH_LEN);
	rd->ref = r;
}

/* The entry named by a call's key and length, or NULL (a miss). */
static struct cstore_ref *
wc_find(struct wclient *w, const uint8_t *h, uint64_t n)
{
	struct cstore_ref *r;

	if ((r = ready_take(w, h, n)) != NULL)
		return r;
	return s_get(w, h, n);
}

/* Copies from a GPU entry of that name, if the client's device has one:
 * 0 done, -1 none, or a CUresult. */
static int
gpu_serve(struct wclient *w, const struct backend *be, struct rcall *c,
    const uint8_t *h, uint64_t n)
{
	struct gentry *g;
	uint64_t seen = 0;
	int rc = -1;

	if (chan != -1)
		return gpu_serve_fd(be, c, h, n);
	if (gpu_budget == 0 || be->gpu_copy == NULL)
		return -1;
	for (;;) {
		/* Each candidate once: one per device at most. */
		pthread_mutex_lock(&gpu_lock);
		for (g = gpu_list; g != NULL; g = g->next)
			if (g->len == n && memcmp(g->hash, h,
			    CSTORE_HASH_LEN) == 0 && strcmp(g->tenant,
			    w->scope.tenant) == 0 && g->device >= 0 &&
			    g->device < 64 && !(seen >> g->device & 1))
				break;
		if (g == NULL) {
			pthread_mutex_unlock(&gpu_lock);
			return -1;
		}
		seen |= 1ull << g->device;
		g->refs++;
		g->used = ++gpu_clock;
		pthread_mutex_unlock(&gpu_lock);
		rc = be->gpu_copy(c, g->device, g->kept, n);
		pthread_mutex_lock(&gpu_lock);
		g->refs--;
		pthread_mutex_unlock(&gpu_lock);
		/* Another device's copy: try the next. */
		if (rc != 101)		/* CUDA_ERROR_INVALID_DEVICE */
			return rc;
	}
}

/* Frees the least recently used entries of dev while it is over budget. */
static void
gpu_trim(const struct backend *be, int dev)
{
	struct gentry **pp, **victim, *g;

	for (;;) {
		pthread_mutex_lock(&gpu_lock);
		victim = NULL;
		if (gpu_bytes[dev] > gpu_budget)
			for (pp = &gpu_list; *pp != NULL; pp = &(*pp)->next)
				if ((*pp)->device == dev && (*pp)->refs == 0 &&
				    (victim == NULL || (*pp)->used <
				    (*victim)->used))
					victim = pp;
		if (victim == NULL) {
			pthread_mutex_unlock(&gpu_lock);
			return;
		}
		g = *victim;
		*victim = g->next;
		/* What it counted for: an exported entry, its allocation. */
		gpu_bytes[dev] -= g->asize;
		gpu_total -= g->asize;
		gpu_entries--;
		pthread_mutex_unlock(&gpu_lock);
		if (g->fd >= 0)
			close(g->fd);
		else
			be->gpu_free(dev, g->kept);
		free(g);
	}
}

/* Keeps a copy on the client's GPU of bytes just served from RAM or disk. */
static void
gpu_add(struct wclient *w, const struct backend *be, struct rcall *c,
    const uint8_t *h, const struct cstore_ref *r)
{
	struct gentry *g;
	uint64_t kept;
	int dev;

	if (chan != -1) {
		gpu_add_fd(be, c, h, r);
		return;
	}
	if (gpu_budget < r->len || be->gpu_keep == NULL)
		return;
	if (be->gpu_keep(c, r->data, r->len, &dev, &kept) != 0 || dev < 0 ||
	    dev >= GPU_DEVS)
		return;		/* the GPU is full: it is a cache */
	if ((g = calloc(1, sizeof *g)) == NULL) {
		be->gpu_free(dev, kept);
		return;
	}
	snprintf(g->tenant, sizeof g->tenant, "%s", w->scope.tenant);
	memcpy(g->hash, h, CSTORE_HASH_LEN);
	g->len = r->len;
	g->kept = kept;
	g->device = dev;
	g->fd = -1;
	g->asize = r->len;
	pthread_mutex_lock(&gpu_lock);
	g->used = ++gpu_clock;
	g->next = gpu_list;
	gpu_list = g;
	gpu_bytes[dev] += g->len;
	gpu_total += g->len;
	gpu_entries++;
	pthread_mutex_unlock(&gpu_lock);
	gpu_trim(be, dev);
	cstore_count_gpu(store, 0, 0, gpu_total, gpu_entries);
}

/* ---- the GPU tier under isolation: process ---------------------------- */

/* In the server: a copy of the descriptor of that entry, or -1. */
static int
gpu_fd_find(const char *tenant, const uint8_t *h, uint64_t len, int dev,
    uint64_t *asize)
{
	struct gentry *g;
	int f = -1;

	pthread_mutex_lock(&gpu_lock);
	for (g = gpu_list; g != NULL; g = g->next)
		if (g->fd >= 0 && g->len == len && g->device == dev &&
		    memcmp(g->hash, h, CSTORE_HASH_LEN) == 0 &&
		    strcmp(g->tenant, tenant) == 0)
			break;
	if (g != NULL && (f = fcntl(g->fd, F_DUPFD_CLOEXEC, 0)) >= 0) {
		g->used = ++gpu_clock;
		*asize = g->asize;
	}
	pthread_mutex_unlock(&gpu_lock);
	return f;
}

/* In the server: a worker's entry, whose descriptor f it takes. */
static void
gpu_fd_add(const char *tenant, const uint8_t *h, uint64_t len, int dev,
    uint64_t asize, int f)
{
	struct gentry *g;

	pthread_mutex_lock(&gpu_lock);
	for (g = gpu_list; g != NULL; g = g->next)
		if (g->len == len && g->device == dev &&
		    memcmp(g->hash, h, CSTORE_HASH_LEN) == 0 &&
		    strcmp(g->tenant, tenant) == 0)
			break;
	if (g != NULL || asize > gpu_budget ||
	    (g = calloc(1, sizeof *g)) == NULL) {
		pthread_mutex_unlock(&gpu_lock);
		close(f);		/* one there already, or no room */
		return;
	}
	snprintf(g->tenant, sizeof g->tenant, "%s", tenant);
	memcpy(g->hash, h, CSTORE_HASH_LEN);
	g->len = len;
	g->device = dev;
	g->fd = f;
	g->asize = asize;
	g->used = ++gpu_clock;
	g->next = gpu_list;
	gpu_list = g;
	gpu_bytes[dev] += asize;
	gpu_total += asize;
	gpu_entries++;
	pthread_mutex_unlock(&gpu_lock);
	gpu_trim(NULL, dev);
	cstore_count_gpu(store, 0, 0, gpu_total, gpu_entries);
}

/* In a worker: gpu_serve through the server's entries.  As gpu_serve. */
static int
gpu_serve_fd(const struct backend *be, struct rcall *c, const uint8_t *h,
    uint64_t n)
{
	struct chgpu q;
	uint8_t found;
	int dev, f, rc;

	if (chan < 0 || gpu_budget == 0 || n < GPU_FD_MIN ||
	    be->gpu_import == NULL || be->ctx_device == NULL ||
	    (dev = be->ctx_device(c)) < 0 || dev >= GPU_DEVS)
		return -1;
	memset(&q, 0, sizeof q);
	q.device = dev;
	if (ch_send(CH_GGET, h, n, NULL) == -1)
		return -1;
	if (fd_write_all(chan, &q, sizeof q) == -1 ||
	    ch_reply(chan, &found, &f) == -1) {
		chan_gone();
		return -1;
	}
	if (found != 2 || f < 0) {
		if (f >= 0)
			close(f);
		if (found != 0)
			chan_gone();	/* an answer that makes no sense */
		return -1;
	}
	if (fd_read_full(chan, &q.asize, sizeof q.asize) == -1) {
		close(f);
		chan_gone();
		return -1;
	}
	rc = be->gpu_import(c, dev, f, q.asize, n);
	close(f);
	/* Whatever went wrong, the RAM tier serves it (and says so). */
	return rc == 0 ? 0 : -1;
}

/* In a worker: gpu_add, offering the server an exported copy. */
static void
gpu_add_fd(const struct backend *be, struct rcall *c, const uint8_t *h,
    const struct cstore_ref *r)
{
	struct chgpu q;
	int dev, f;

	if (chan < 0 || gpu_budget < r->len || r->len < GPU_FD_MIN ||
	    be->gpu_export == NULL)
		return;
	memset(&q, 0, sizeof q);
	if (be->gpu_export(c, r->data, r->len, &dev, &f, &q.asize) != 0)
		return;		/* the GPU is full: it is a cache */
	q.device = dev;
	if (dev >= 0 && dev < GPU_DEVS && q.asize <= gpu_budget &&
	    ch_send(CH_GPUT, h, r->len, NULL) == 0 &&
	    fd_sendmsg(chan, &q, sizeof q, f) == -1)
		chan_gone();
	close(f);
}

/*
 * A GPU tier hit, counted by the server's store; held: of an entry held
 * from RAM, whose hit moves to the GPU tier (cstore_count_gpu).
 */
static void
gpu_hit(const uint8_t *h, uint64_t n, int held)
{
	if (chan == -1)
		cstore_count_gpu(store, held ? 2 : 1, n, gpu_total,
		    gpu_entries);
	else if (chan >= 0)
		ch_send(held ? CH_GMOVE : CH_GHIT, h, n, NULL);
}

/* The htab key of a name: its first 8 bytes, never 0 or all ones. */
static uint64_t
held_key(const uint8_t *h)
{
	uint64_t k;

	memcpy(&k, h, sizeof k);
	return k == 0 || k == UINT64_MAX ? 1 : k;
}

static struct held *
held_find(struct wclient *w, const uint8_t *h, uint64_t n)
{
	struct held *e;

	for (e = htab_get(&w->held, held_key(h)); e != NULL; e = e->next)
		if (memcmp(e->hash, h, CSTORE_HASH_LEN) == 0 &&
		    e->ref->len == n)
			return e;
	return NULL;
}

/*
 * in: names -> bits.  Holds the entries the server has, so that the
 * client may send their copies one-way (R_CACHE_HELD): they cannot miss.
 * At most cache_ram bytes (or 1 GiB) are held per client.
 */
static int
wc_have(struct wclient *w, struct rcall *c)
{
	const uint8_t *p = c->in[0].p;
	struct cstore_ref *r;
	struct held *e;
	size_t nl = cstore_name_len(w->naming), rl = nl + 8;
	uint64_t n = c->in[0].len / rl, len, max;
	uint8_t *bits, h[CSTORE_HASH_LEN];
	size_t i;
	int k;

	if (c->in[0].len % rl != 0 && w->naming == CN_STRONG &&
	    c->in[0].len % 24 == 0) {
		/* An older client's weak names: none is held. */
		wc_old(w, c);
		n = c->in[0].len / 24;
		nl = 0;
	} else if (c->in[0].len % rl != 0)
		return 1;
	if (n > HAVE_MAX)
		return 1;
	if ((bits = calloc(1, n / 8 + 1)) == NULL)
		return 2;
	c->scratch = bits;
	c->out[0].p = bits;
	c->out[0].len = (uint32_t)((n + 7) / 8);
	if (nl == 0)
		return 0;
	max = cstore_ram_budget(store) ? cstore_ram_budget(store) : 1u << 30;
	memset(h, 0, sizeof h);
	for (i = 0; i < n; i++, p += rl) {
		for (len = 0, k = 7; k >= 0; k--)
			len = len << 8 | p[nl + (size_t)k];
		if (len == 0 || len > CSTORE_ENTRY_MAX)
			continue;
		memcpy(h, p, nl);
		if (held_find(w, h, len) == NULL) {
			if (w->heldbytes + len > max ||
			    (r = s_get(w, h, len)) == NULL)
				continue;
			if ((e = calloc(1, sizeof *e)) == NULL) {
				cstore_release(store, r);
				continue;
			}
			memcpy(e->hash, h, CSTORE_HASH_LEN);
			e->ref = r;
			e->next = htab_del(&w->held, held_key(h));
			if (htab_put(&w->held, held_key(h), e) == -1) {
				cstore_release(store, r);
				free(e);
				continue;	/* the chain is lost: not held */
			}
			w->heldbytes += len;
			s_pin(w, h);
		}
		bits[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	return 0;
}

/* Copies entry r into the client's memory as R_MEM_HTOD would. */
static int
wc_copy(const struct backend *be, struct rcall *c, const struct cstore_ref *r)
{
	struct rcall sub;
	backend_fn fn = be->call[R_MEM_HTOD - R_OPEN];
	int rc;

	memset(&sub, 0, sizeof sub);
	sub.cl = c->cl;
	sub.d = rpc_lookup(R_MEM_HTOD);
	memcpy(sub.in, c->in, 4 * sizeof *c->in);
	sub.in[4].p = r->data;
	sub.in[4].len = (uint32_t)r->len;
	pw_init(&sub.blob);
	rc = fn != NULL ? fn(&sub) : 801;	/* CUDA_ERROR_NOT_SUPPORTED */
	pw_free(&sub.blob);
	free(sub.scratch);
	return rc;
}

/* in: ctx, stream, async, dptr, key, bytes; the entry must be held. */
static int
wc_held(struct wclient *w, const struct backend *be, struct rcall *c)
{
	struct held *e;
	uint64_t n = c->in[5].u;
	uint8_t h[CSTORE_HASH_LEN];
	int rc;

	if (wc_name(w, c, &c->in[4], h) != 0 || n == 0)
		return 1;
	if ((e = held_find(w, h, n)) == NULL)
		return 500;	/* CUDA_ERROR_NOT_FOUND: a client's bug */
	if ((rc = gpu_serve(w, be, c, h, n)) != -1) {
		if (rc == 0)
			gpu_hit(h, n, 1);
		return rc;
	}
	if ((rc = wc_copy(be, c, e->ref)) == 0)
		gpu_add(w, be, c, h, e->ref);
	return rc;
}

/* in: ctx, stream, async, dptr, key, bytes -> state */
static int
wc_htod(struct wclient *w, const struct backend *be, struct rcall *c)
{
	struct cstore_ref *r;
	uint64_t n = c->in[5].u;
	uint8_t h[CSTORE_HASH_LEN];
	int rc;

	if ((rc = wc_name(w, c, &c->in[4], h)) == 1) {
		c->out[0].u = WC_OFF;
		return 0;
	}
	if (rc != 0 || n == 0 || n > CSTORE_ENTRY_MAX)
		return 1;		/* CUDA_ERROR_INVALID_VALUE */
	if ((rc = gpu_serve(w, be, c, h, n)) != -1) {
		if (rc == 0) {
			gpu_hit(h, n, 0);
			s_pin(w, h);
			s_flush();
			c->out[0].u = WC_DONE;
		}
		return rc;
	}
	if ((r = wc_find(w, h, n)) == NULL) {
		c->out[0].u = WC_MISS;
		return 0;
	}
	/* The backend's own copy, from the entry's bytes. */
	rc = wc_copy(be, c, r);
	if (rc == 0)
		gpu_add(w, be, c, h, r);
	s_pin(w, h);
	cstore_release(store, r);
	s_flush();
	c->out[0].u = WC_DONE;
	return rc;
}

/* in: key, total, offset, data -> complete */
static int
wc_put(struct wclient *w, struct rcall *c)
{
	struct cstore_ref *r;
	struct upload *u = NULL;
	uint8_t g[CSTORE_HASH_LEN], h[CSTORE_HASH_LEN];
	char hex[CSTORE_HEX_LEN + 1];
	uint64_t total = c->in[1].u, off = c->in[2].u, len = c->in[3].len;
	uint8_t *nb;
	int i;

	/* An older client's weak name in a group's scope: never a miss
	 * told it to upload, so this is no client of ours. */
	if ((i = wc_name(w, c, &c->in[0], h)) != 0)
		return i == 1 ? 801 : 1;	/* CUDA_ERROR_NOT_SUPPORTED */
	if (total == 0 || total > CSTORE_ENTRY_MAX)
		return 1;
	for (i = 0; i < UP_MAX && u == NULL; i++)
		if (w->up[i].buf != NULL && memcmp(w->up[i].hash, h,
		    CSTORE_HASH_LEN) == 0)
			u = &w->up[i];
	if (off == 0) {
		/* Offset 0 starts over. */
		if (u != NULL)
			upload_drop(w, u);
		for (i = 0, u = NULL; i < UP_MAX && u == NULL; i++)
			if (w->up[i].buf == NULL)
				u = &w->up[i];
		if (u == NULL)
			return 2;	/* CUDA_ERROR_OUT_OF_MEMORY */
		memcpy(u->hash, h, CSTORE_HASH_LEN);
		u->total = total;
	}
	if (u == NULL || u->total != total || off != u->have ||
	    len > total - off) {
		if (u != NULL)
			upload_drop(w, u);
		return 1;
	}
	if (w->upbytes + len > UPLOAD_MAX)
		return 2;
	if (u->have + len > u->cap || u->buf == NULL) {
		/* Whole at once up to a client's piece of a copy (no copies
		 * on growth); larger claims grow as the bytes come. */
		uint64_t cap = total <= (64u << 20) ? total : u->cap ? u->cap :
		    1 << 20;

		while (cap < u->have + len)
			cap *= 2;
		if (cap > total)
			cap = total;
		if ((nb = realloc(u->buf, cap ? cap : 1)) == NULL) {
			upload_drop(w, u);
			return 2;
		}
		u->buf = nb;
		u->cap = cap;
	}
	memcpy(u->buf + u->have, c->in[3].p, len);
	u->have += len;
	w->upbytes += len;
	if (u->have < total) {
		c->out[0].u = 0;
		return 0;
	}
	/* Rehashed here, in the scope's naming: no one stores bytes under
	 * a name they do not hash to. */
	cstore_hash(w->naming, u->buf, total, g);
	if (memcmp(g, u->hash, CSTORE_HASH_LEN) != 0) {
		cstore_hex(u->hash, cstore_name_len(w->naming), hex);
		log_warn("client %s (%s): uploaded bytes do not match the name "
		    "%s: refused", c->cl->addr, c->cl->name, hex);
		upload_drop(w, u);
		return 1;
	}
	nb = u->buf;
	w->upbytes -= u->have;
	memset(u, 0, sizeof *u);
	if ((r = s_put(w, g, nb, total)) == NULL)
		return 2;
	ready_add(w, g, r);
	s_pin(w, g);
	s_flush();
	c->out[0].u = 1;
	return 0;
}

/* in: load id, key, bytes -> state */
static int
wc_image(struct wclient *w, struct rcall *c)
{
	struct cstore_ref *r;
	uint64_t id = c->in[0].u, n = c->in[2].u;
	uint8_t h[CSTORE_HASH_LEN];
	int rc;

	if ((rc = wc_name(w, c, &c->in[1], h)) == 1) {
		c->out[0].u = WC_OFF;
		return 0;
	}
	if (rc != 0 || n == 0 || n > CSTORE_ENTRY_MAX || id == 0 ||
	    id == UINT64_MAX)
		return 1;
	if ((r = wc_find(w, h, n)) == NULL) {
		c->out[0].u = WC_MISS;
		return 0;
	}
	cstore_release(store, htab_del(&w->images, id));
	if (htab_put(&w->images, id, r) == -1) {
		cstore_release(store, r);
		return 2;
	}
	s_pin(w, h);
	c->out[0].u = WC_DONE;
	return 0;
}

int
wcache_call(struct wclient **wp, const struct wscope *sc,
    const struct backend *be, struct rcall *c)
{
	struct wclient *w = *wp;
	uint16_t type = c->d->type;

	if (!cstore_active(store)) {
		if (type == R_MODEL)
			return 0;	/* nothing to keep */
		if (type == R_CACHE_PUT || type == R_CACHE_HELD)
			return 801;	/* CUDA_ERROR_NOT_SUPPORTED */
		if (type == R_CACHE_HAVE) {
			/* No bits set: nothing held. */
			size_t rl = cstore_name_len(cstore_naming(sc->tenant)) +
			    8;

			if ((c->scratch = calloc(1, c->in[0].len / rl / 8 +
			    1)) == NULL)
				return 2;
			c->out[0].p = c->scratch;
			c->out[0].len = (uint32_t)((c->in[0].len / rl + 7) / 8);
			return 0;
		}
		c->out[0].u = WC_OFF;
		return 0;
	}
	if (w == NULL) {
		if ((w = calloc(1, sizeof *w)) == NULL)
			return 2;
		htab_init(&w->images);
		htab_init(&w->held);
		w->scope = *sc;
		w->naming = cstore_naming(sc->tenant);
		*wp = w;
	}
	switch (type) {
	case R_MODEL:
		if (!model_name_ok(c->in[0].p, c->in[0].len))
			return 1;	/* CUDA_ERROR_INVALID_VALUE */
		if (chan == -1) {
			memcpy(w->ml.name, c->in[0].p, c->in[0].len);
			w->ml.name[c->in[0].len] = '\0';
			snprintf(w->ml.tenant, sizeof w->ml.tenant, "%s",
			    w->scope.tenant);
		} else if (chan >= 0)
			ch_send(CH_MODEL, zero_hash, c->in[0].len,
			    c->in[0].p);
		return 0;
	case R_CACHE_HTOD:
		return wc_htod(w, be, c);
	case R_CACHE_PUT:
		return wc_put(w, c);
	case R_CACHE_IMAGE:
		return wc_image(w, c);
	case R_CACHE_HAVE:
		return wc_have(w, c);
	case R_CACHE_HELD:
		return wc_held(w, be, c);
	}
	return 801;
}

int
wcache_image(struct wclient *w, uint64_t id, struct rpc_val *v)
{
	struct cstore_ref *r;

	if (w == NULL || id == 0 || id == UINT64_MAX ||
	    (r = htab_get(&w->images, id)) == NULL)
		return 0;
	v->p = r->data;
	v->len = (uint32_t)r->len;
	return 1;
}

void
wcache_image_done(struct wclient *w, uint64_t id)
{
	if (w != NULL && id != 0 && id != UINT64_MAX)
		cstore_release(store, htab_del(&w->images, id));
}

const char *
wcache_client_busy(const struct wclient *w)
{
	int i;

	if (w == NULL)
		return NULL;
	for (i = 0; i < UP_MAX; i++) {
		if (w->up[i].buf != NULL)
			return "a weight-cache entry is arriving in pieces";
		if (w->rd[i].ref != NULL)
			return "a weight-cache entry waits for its copy";
	}
	if (w->images.n > 0)
		return "a cached module image waits for its load";
	return NULL;
}

void
wcache_client_free(struct wclient *w)
{
	size_t i = 0;
	uint64_t k;
	void *v;

	if (w == NULL)
		return;
	for (i = 0; i < UP_MAX; i++) {
		upload_drop(w, &w->up[i]);
		cstore_release(store, w->rd[i].ref);
	}
	i = 0;
	while (htab_next(&w->images, &i, &k, &v))
		cstore_release(store, v);
	htab_free(&w->images);
	i = 0;
	while (htab_next(&w->held, &i, &k, &v)) {
		struct held *e = v, *next;

		for (; e != NULL; e = next) {
			next = e->next;
			cstore_release(store, e->ref);
			free(e);
		}
	}
	htab_free(&w->held);
	if (chan == -1)
		cstore_unpin_all(store, w);
	mload_done(&w->ml);
	s_flush();
	free(w);
}
