/*
 * The client half of the weight cache.  A host-to-device copy of at least
 * GLEAM_CACHE_MIN bytes (default 64k; GLEAM_CACHE=0 turns the cache off)
 * is cut into pieces of WC_CHUNK bytes from its start, each named by its
 * content name (cname.h); the server is asked for each name first and gets the
 * bytes only when it lacks them.  The unit is the copy, whatever
 * allocation it lands in, so loaders that copy tensor by tensor into
 * parts of one large allocation hit as well as whole-buffer copies.
 * Module and library images of that size go the same way.  A copy that
 * overwrites bytes an earlier copy wrote (mem_rewritten), as a program's
 * per-step inputs do, goes whole: its bytes never recur.
 *
 * A copy waits for the server's answer, which decides whether the bytes
 * travel, unless the server holds its entry for this process already:
 * at the first copy the library sends the names the same program used
 * against the same server last time (a file under $XDG_CACHE_HOME/gleam,
 * or ~/.cache/gleam), the server holds those it has (R_CACHE_HAVE), and
 * copies of held names go one-way (R_CACHE_HELD), as launches do.
 * GLEAM_CACHE_AHEAD=0 turns that off.
 *
 * Names are the server's choice for this client's scope (WELCOME's
 * FEAT_NAMES): BLAKE2b-256, 32 bytes, in a cache_share group's, which
 * other identities share; XXH3-128, 16 bytes, otherwise.  A name is kept
 * in 32 bytes either way (a weak one zero-filled); nlen bytes travel.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "memo.h"
#include "io.h"
#include "client.h"
#include "clenv.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "util.h"
#include "cname.h"
#include "proto.h"
#include "wcache.h"

#define WC_CHUNK	(64u << 20)	/* bytes named by one hash at most */
#define WC_PIECE	(4u << 20)	/* bytes of one upload frame at most */
#define WC_AHEAD	8		/* upload frames in flight */
#define WC_MIN_DEFAULT	(64u << 10)
#define WC_IMAGE_MAX	(2ull << 30)
#define WC_NAME		32		/* a name's room: a strong one's */

enum { WC_MISS = 0, WC_DONE = 1, WC_OFF = 2 };

/* For the line at exit (GLEAM_DEBUG=1): what the cache saved, and what
 * hashing cost. */
static struct wcache_stats wst;

void
wcache_stats(struct wcache_stats *s)
{
	s->hits = __atomic_load_n(&wst.hits, __ATOMIC_RELAXED);
	s->misses = __atomic_load_n(&wst.misses, __ATOMIC_RELAXED);
	s->hit_bytes = __atomic_load_n(&wst.hit_bytes, __ATOMIC_RELAXED);
	s->miss_bytes = __atomic_load_n(&wst.miss_bytes, __ATOMIC_RELAXED);
	s->hash_bytes = __atomic_load_n(&wst.hash_bytes, __ATOMIC_RELAXED);
	s->hash_ns = __atomic_load_n(&wst.hash_ns, __ATOMIC_RELAXED);
}

/*
 * Names ahead: the set the server holds for us (open addressing on the
 * name's first 8 bytes), and the names this run used, for the next.
 */
struct wname {
	uint8_t		 h[WC_NAME];
	uint64_t	 len;
};

#define NAMES_MAX	(1u << 18)	/* names remembered per program */

static pthread_mutex_t	 names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wname	*held;		/* hash set; len 0: empty slot */
static size_t		 heldcap;
static struct wname	*used;		/* this run's, in order */
static size_t		 nused, usedcap;
static char		 names_path[1200];
static pid_t		 names_pid;
static int		 ahead;		/* names were sent ahead */

/* names_ahead's batches in flight until names_collect. */
struct wask {
	struct rwait	 w;
	uint32_t	 first, count;
};
static struct wask	*asked;
static size_t		 nasked;
static struct wname	*asked_list;
static uint32_t		 asked_count;
static pthread_once_t	 collect_once = PTHREAD_ONCE_INIT;

static pthread_once_t	 wc_once = PTHREAD_ONCE_INIT;
static int		 wc_on;		/* the server may have a cache */
static uint64_t		 wc_min = WC_MIN_DEFAULT;
static int		 strong;	/* names are BLAKE2b-256 */
static uint32_t		 nlen = 16;	/* bytes of a name on the wire */

/*
 * remote_call with a waiter whose every field starts zeroed.  (Its own
 * waiter is left uninitialised, so that a reply of one u32 of 0, such as
 * "send it", can be taken for a device-to-host delivery of no bytes and
 * its field left unset.)
 */
static CUresult
wc_rcall(uint16_t type, const struct rpc_val *in, struct rpc_val *out,
    void **keep)
{
	struct rwait w;
	CUresult rc;

	memset(&w, 0, sizeof w);
	*keep = NULL;
	if ((rc = rsend(type, in, 0, &w)) != CUDA_SUCCESS)
		return rc;
	return rwait(&w, out, keep);
}

static void	names_ahead(void);
static void	names_collect(void);

/* GLEAM_CACHE and GLEAM_CACHE_MIN; a bad value is ignored with a warning. */
static void
wc_setup(void)
{
	const char *s;

	wc_on = 1;
	/* Once: a session resumed or moved keeps its identity's scope. */
	if (io_features() & FEAT_NAMES) {
		strong = 1;
		nlen = WC_NAME;
	}
	if ((s = getenv("GLEAM_CACHE")) != NULL && *s != '\0') {
		if (strcmp(s, "0") == 0)
			wc_on = 0;
		else if (strcmp(s, "1") != 0)
			log_warn("GLEAM_CACHE=%s: expected 0 or 1: ignored", s);
	}
	if (wc_on && ((s = getenv("GLEAM_CACHE_AHEAD")) == NULL ||
	    strcmp(s, "0") != 0) && memo_program("names", names_path,
	    sizeof names_path) == 0) {
		names_pid = getpid();
		names_ahead();
	}
	wc_min = clenv_size("GLEAM_CACHE_MIN", wc_min, 1);
}

static size_t
name_slot(const uint8_t *h, size_t cap)
{
	uint64_t k;

	memcpy(&k, h, sizeof k);
	return (size_t)(k & (cap - 1));
}

/* Is the name held by the server for us?  (held is read-only by then.) */
static int
held_has(const uint8_t *h, uint64_t len)
{
	size_t i;

	if (heldcap == 0)
		return 0;
	for (i = name_slot(h, heldcap); held[i].len != 0;
	    i = (i + 1) & (heldcap - 1))
		if (held[i].len == len && memcmp(held[i].h, h, WC_NAME) == 0)
			return 1;
	return 0;
}

static void
held_add(const struct wname *n)
{
	size_t i;

	for (i = name_slot(n->h, heldcap); held[i].len != 0;
	    i = (i + 1) & (heldcap - 1))
		if (held[i].len == n->len && memcmp(held[i].h, n->h,
		    WC_NAME) == 0)
			return;
	held[i] = *n;
}

/* Remembers a name this run used, for the next run. */
static void
used_add(const uint8_t h[WC_NAME], uint64_t len)
{
	struct wname *nu;

	if (names_path[0] == '\0')
		return;
	pthread_mutex_lock(&names_lock);
	if (nused == usedcap && usedcap < NAMES_MAX) {
		size_t cap = usedcap ? usedcap * 2 : 256;

		if ((nu = realloc(used, cap * sizeof *nu)) != NULL) {
			used = nu;
			usedcap = cap;
		}
	}
	if (nused < usedcap) {
		memcpy(used[nused].h, h, WC_NAME);
		used[nused++].len = len;
	}
	pthread_mutex_unlock(&names_lock);
}

/*
 * The names file: "GLNAMES2", a u32 count, a u32 naming (1 weak, 2
 * strong), then per name its nlen bytes and a u64 length, little-endian.
 * "GLNAMES1" (weak names, no naming) is still read.
 */
#define NAMES_HDR	16

/*
 * Sends the names of the last run ahead; those the server holds for us
 * can then be copied one-way.  A missing or damaged file, or one of the
 * other naming (this program's scope changed): nothing ahead.
 */
static void
names_ahead(void)
{
	struct wname *list = NULL;
	uint8_t hdr[NAMES_HDR];
	uint32_t count, i, j, batch, nb, fnl = 16, rl = nlen + 8;
	size_t max = io_max_payload() / rl - 1;
	FILE *f;

	if ((f = fopen(names_path, "rb")) == NULL)
		return;
	if (fread(hdr, 1, 12, f) != 12)
		goto out;
	if (memcmp(hdr, "GLNAMES2", 8) == 0) {
		if (fread(hdr + 12, 1, 4, f) != 4 || hdr[12] != (strong ? 2 :
		    1) || hdr[13] != 0 || hdr[14] != 0 || hdr[15] != 0)
			goto out;
		fnl = nlen;
	} else if (memcmp(hdr, "GLNAMES1", 8) != 0 || strong)
		goto out;
	count = (uint32_t)hdr[8] | (uint32_t)hdr[9] << 8 |
	    (uint32_t)hdr[10] << 16 | (uint32_t)hdr[11] << 24;
	if (count == 0 || count > NAMES_MAX ||
	    (list = calloc(count, sizeof *list)) == NULL)
		goto out;
	for (i = 0; i < count; i++) {
		uint8_t b[WC_NAME + 8];
		int k;

		if (fread(b, 1, fnl + 8, f) != fnl + 8)
			goto out;
		memcpy(list[i].h, b, fnl);
		for (k = 7; k >= 0; k--)
			list[i].len = list[i].len << 8 | b[fnl + (uint32_t)k];
	}
	if (max > 65536)
		max = 65536;
	nb = (count + (uint32_t)max - 1) / (uint32_t)max;
	if ((asked = calloc(nb, sizeof *asked)) == NULL)
		goto out;
	for (i = 0; i < count; i += batch) {
		struct rpc_val in[1];
		uint8_t *blob;

		batch = count - i < max ? count - i : (uint32_t)max;
		if ((blob = malloc((size_t)batch * rl)) == NULL)
			break;
		for (j = 0; j < batch; j++) {
			int k;

			memcpy(blob + rl * j, list[i + j].h, nlen);
			for (k = 0; k < 8; k++)
				blob[rl * j + nlen + (uint32_t)k] =
				    (uint8_t)(list[i + j].len >> (8 * k));
		}
		in[0].p = blob;
		in[0].len = batch * rl;
		asked[nasked].first = i;
		asked[nasked].count = batch;
		memset(&asked[nasked].w, 0, sizeof asked[nasked].w);
		asked[nasked].w.ahead = 1;
		if (rsend(R_CACHE_HAVE, in, 0, &asked[nasked].w) ==
		    CUDA_SUCCESS)
			nasked++;
		free(blob);
	}
	asked_list = list;
	asked_count = count;
	list = NULL;
out:
	free(list);
	fclose(f);
}

/*
 * At the first copy: the server's answers to names_ahead's batches, into
 * the set of held names (read-only from then on).
 */
static void
names_collect(void)
{
	struct rpc_val out[1];
	uint32_t j;
	size_t b;
	void *keep;

	if (nasked == 0 || getpid() != names_pid)
		goto out;
	for (heldcap = 64; heldcap < 2 * (size_t)asked_count; heldcap *= 2)
		;
	if ((held = calloc(heldcap, sizeof *held)) == NULL)
		heldcap = 0;
	for (b = 0; b < nasked; b++) {
		struct wask *a = &asked[b];

		if (rwait(&a->w, out, &keep) == CUDA_SUCCESS &&
		    held != NULL && out[0].len == (a->count + 7) / 8)
			for (j = 0; j < a->count; j++)
				if (((const uint8_t *)out[0].p)[j / 8] >>
				    (j % 8) & 1)
					held_add(&asked_list[a->first + j]);
		free(keep);
	}
	ahead = heldcap != 0;
out:
	free(asked_list);
	free(asked);
	asked_list = NULL;
	asked = NULL;
	nasked = 0;
}

/* At exit: this run's names, for the next run (written whole). */
__attribute__((destructor)) static void
names_save(void)
{
	struct wname *set;
	size_t cap, i, n = 0, s, rl = nlen + 8;
	uint8_t hdr[NAMES_HDR], *blob;
	int k;

	if (nused == 0 || names_pid != getpid())
		return;
	/* Threads may still copy while the process exits. */
	pthread_mutex_lock(&names_lock);
	for (cap = 64; cap < 2 * nused; cap *= 2)
		;
	set = calloc(cap, sizeof *set);
	blob = malloc(nused * rl);
	if (set == NULL || blob == NULL)
		goto out;
	for (i = 0; i < nused; i++) {
		/* Each name once, in first-use order. */
		for (s = name_slot(used[i].h, cap); set[s].len != 0 &&
		    !(set[s].len == used[i].len && memcmp(set[s].h,
		    used[i].h, WC_NAME) == 0); s = (s + 1) & (cap - 1))
			;
		if (set[s].len != 0)
			continue;
		set[s] = used[i];
		memcpy(blob + rl * n, used[i].h, nlen);
		for (k = 0; k < 8; k++)
			blob[rl * n + nlen + (size_t)k] = (uint8_t)(used[i].len >>
			    (8 * k));
		n++;
	}
	memset(hdr, 0, sizeof hdr);
	memcpy(hdr, "GLNAMES2", 8);
	hdr[8] = (uint8_t)n;
	hdr[9] = (uint8_t)(n >> 8);
	hdr[10] = (uint8_t)(n >> 16);
	hdr[11] = (uint8_t)(n >> 24);
	hdr[12] = strong ? 2 : 1;
	(void)memo_write(names_path, hdr, sizeof hdr, blob, rl * n);
	nused = 0;
out:
	pthread_mutex_unlock(&names_lock);
	free(blob);
	free(set);
}

/*
 * Once the connection is up (client_init): the names go ahead then, so
 * that the server looks them up while the program is still starting.
 */
void
wcache_early(void)
{
	pthread_once(&wc_once, wc_setup);
}

static int
wc_enabled(size_t n)
{
	pthread_once(&wc_once, wc_setup);
	pthread_once(&collect_once, names_collect);
	return __atomic_load_n(&wc_on, __ATOMIC_RELAXED) && n >= wc_min;
}

static void
wc_off(void)
{
	if (__atomic_exchange_n(&wc_on, 0, __ATOMIC_RELAXED))
		log_debug("the server keeps no weight cache: copies go whole");
}

/* The name of n bytes in this scope's naming, into h[WC_NAME]. */
static void
wc_hash(const void *p, size_t n, uint8_t h[WC_NAME])
{
	uint64_t t = now_ns();

	if (strong)
		cname_strong(p, n, h);
	else {
		cname(p, n, h);
		memset(h + 16, 0, WC_NAME - 16);
	}
	__atomic_add_fetch(&wst.hash_ns, now_ns() - t, __ATOMIC_RELAXED);
	__atomic_add_fetch(&wst.hash_bytes, n, __ATOMIC_RELAXED);
}

/* The XXH3 name of n bytes: the function table's, and wcache_image's
 * unless the scope names strongly. */
void
wcache_name(const void *p, size_t n, uint8_t h[16])
{
	uint64_t t = now_ns();

	cname(p, n, h);
	__atomic_add_fetch(&wst.hash_ns, now_ns() - t, __ATOMIC_RELAXED);
	__atomic_add_fetch(&wst.hash_bytes, n, __ATOMIC_RELAXED);
}

static void
wc_count(int hit, size_t n)
{
	__atomic_add_fetch(hit ? &wst.hits : &wst.misses, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(hit ? &wst.hit_bytes : &wst.miss_bytes, n,
	    __ATOMIC_RELAXED);
}

__attribute__((destructor)) static void
wc_report(void)
{
	if (wst.hits + wst.misses == 0)
		return;
	log_info("weight cache: %llu hits (%llu bytes), %llu misses (%llu "
	    "bytes); hashed %llu bytes in %.3f s",
	    (unsigned long long)wst.hits, (unsigned long long)wst.hit_bytes,
	    (unsigned long long)wst.misses,
	    (unsigned long long)wst.miss_bytes,
	    (unsigned long long)wst.hash_bytes, (double)wst.hash_ns / 1e9);
}

/*
 * Sends the bytes of a missed entry, several pieces in flight so that the
 * link stays busy; CUDA_SUCCESS once the server verified and kept them.
 * Every piece waits for its reply (none is one-way): a failure is this
 * copy's, never a later call's.
 */
static CUresult
wc_upload(const uint8_t h[WC_NAME], const void *p, size_t n)
{
	struct rwait w[WC_AHEAD];
	struct rpc_val in[4], out[1];
	size_t max = io_max_payload(), off = 0, k, got = 0;
	size_t len[WC_AHEAD];
	unsigned head = 0, tail = 0;	/* sent, answered */
	void *keep;
	CUresult rc = CUDA_SUCCESS, rc2;
	int pg = progress_add(n);

	if (max > WC_PIECE)
		max = WC_PIECE;
	while (tail < head || off < n) {
		while (off < n && head - tail < WC_AHEAD &&
		    rc == CUDA_SUCCESS) {
			struct rwait *wi = &w[head % WC_AHEAD];

			k = n - off < max ? n - off : max;
			in[0].p = h;
			in[0].len = nlen;
			in[1].u = n;
			in[2].u = off;
			in[3].p = (const char *)p + off;
			in[3].len = (uint32_t)k;
			memset(wi, 0, sizeof *wi);
			if ((rc = rsend(R_CACHE_PUT, in, RP_BULK, wi)) !=
			    CUDA_SUCCESS)
				break;
			len[head % WC_AHEAD] = k;
			head++;
			off += k;
		}
		if (tail == head)
			break;
		k = len[tail % WC_AHEAD];
		rc2 = rwait(&w[tail++ % WC_AHEAD], out, &keep);
		free(keep);
		if (rc == CUDA_SUCCESS)
			rc = rc2;
		if (rc != CUDA_SUCCESS)
			off = n;	/* collect what is in flight, then fail */
		else if (pg) {
			progress_sent(k, PG_WIRE);
			got += k;
		}
	}
	if (pg && got < n)
		progress_drop(n - got);
	return rc;
}

/* One piece by name: R_CACHE_HTOD's state, or -1 with *rc set. */
static int
wc_ask(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const uint8_t h[WC_NAME], size_t n, CUresult *rc)
{
	struct rpc_val in[6], out[1];
	void *keep;

	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = dst;
	in[4].p = h;
	in[4].len = nlen;
	in[5].u = n;
	*rc = wc_rcall(R_CACHE_HTOD, in, out, &keep);
	free(keep);
	return *rc == CUDA_SUCCESS ? (int)out[0].u : -1;
}

/* Does [p, p + n) lie in device memory this process allocated? */
static int
wc_devrange(CUdeviceptr p, size_t n)
{
	size_t base, size;

	return mem_is_device(p, &base, &size) && p - base <= size &&
	    n <= size - (p - base);
}

/* A copy of a held entry, one-way: an error surfaces at the next sync. */
static CUresult
wc_post_held(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const uint8_t h[WC_NAME], size_t n)
{
	struct rpc_val in[6];

	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = dst;
	in[4].p = h;
	in[4].len = nlen;
	in[5].u = n;
	/* Into known device memory from an entry held for us: it cannot
	 * fail for its arguments, so it leaves an idle stream idle. */
	return rpost(R_CACHE_HELD, in, RP_KEEPIDLE);
}

/* The plain copy, for a piece the cache could not take. */
static CUresult
wc_plain(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n)
{
	struct rpc_val in[5], out[1];
	size_t max = io_max_payload(), k;
	void *keep;
	CUresult rc = CUDA_SUCCESS;

	for (; n > 0; n -= k) {
		k = n < max ? n : max;
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = (uint64_t)async;
		in[3].u = dst;
		in[4].p = src;
		in[4].len = (uint32_t)k;
		rc = wc_rcall(R_MEM_HTOD, in, out, &keep);
		free(keep);
		if (rc != CUDA_SUCCESS)
			return rc;
		dst += k;
		src = (const char *)src + k;
	}
	return rc;
}

int
wcache_htod(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n, CUresult *rc)
{
	uint8_t h[WC_NAME];
	size_t off, k;
	int st;

	if (!wc_enabled(n) || mem_rewritten(dst, n))
		return 0;
	*rc = CUDA_SUCCESS;
	for (off = 0; off < n; off += k) {
		k = n - off < WC_CHUNK ? n - off : WC_CHUNK;
		wc_hash((const char *)src + off, k, h);
		if (ahead && held_has(h, k) && wc_devrange(dst + off, k)) {
			/* Held for us: it cannot miss, so it need not wait. */
			if ((*rc = wc_post_held(c, sid, async, dst + off, h,
			    k)) != CUDA_SUCCESS)
				return 1;
			wc_count(1, k);
			used_add(h, k);
			continue;
		}
		if ((st = wc_ask(c, sid, async, dst + off, h, k, rc)) == -1)
			return 1;
		wc_count(st == WC_DONE, k);
		if (st == WC_MISS) {
			if ((*rc = wc_upload(h, (const char *)src + off, k)) !=
			    CUDA_SUCCESS)
				return 1;
			/* Now from the verified upload. */
			if ((st = wc_ask(c, sid, async, dst + off, h, k, rc)) ==
			    -1)
				return 1;
		}
		if (st == WC_DONE) {
			used_add(h, k);
			continue;
		}
		if (st == WC_OFF) {
			wc_off();
			if (off == 0)
				return 0;
		}
		if ((*rc = wc_plain(c, sid, async, dst + off, (const char *)src +
		    off, k)) != CUDA_SUCCESS)
			return 1;
	}
	return 1;
}

/* R_CACHE_IMAGE's state, or -1 with *rc set. */
static int
wc_ask_image(uint64_t id, const uint8_t h[WC_NAME], size_t n, CUresult *rc)
{
	struct rpc_val in[3], out[1];
	void *keep;

	in[0].u = id;
	in[1].p = h;
	in[1].len = nlen;
	in[2].u = n;
	*rc = wc_rcall(R_CACHE_IMAGE, in, out, &keep);
	free(keep);
	return *rc == CUDA_SUCCESS ? (int)out[0].u : -1;
}

int
wcache_image(uint64_t id, const void *image, size_t n, const uint8_t ih[16],
    CUresult *rc)
{
	uint8_t h[WC_NAME];
	int st;

	if (!wc_enabled(n) || n > WC_IMAGE_MAX)
		return 0;
	/* The function table's name serves a weak scope; a strong one
	 * hashes the image again. */
	if (strong)
		wc_hash(image, n, h);
	else {
		memset(h, 0, sizeof h);
		memcpy(h, ih, 16);
	}
	if ((st = wc_ask_image(id, h, n, rc)) == -1)
		return 1;
	wc_count(st == WC_DONE, n);
	if (st == WC_MISS) {
		if ((*rc = wc_upload(h, image, n)) != CUDA_SUCCESS)
			return 1;
		if ((st = wc_ask_image(id, h, n, rc)) == -1)
			return 1;
	}
	if (st == WC_OFF)
		wc_off();
	return st == WC_DONE;
}
