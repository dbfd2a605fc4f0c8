/*
 * The client half of the weight cache.  A host-to-device copy of at least
 * GLEAM_CACHE_MIN bytes (default 256k; GLEAM_CACHE=0 turns the cache off)
 * is cut into pieces of WC_CHUNK bytes from its start, each named by its
 * XXH3-128 hash; the server is asked for each name first and gets the
 * bytes only when it lacks them.  The unit is the copy, whatever
 * allocation it lands in, so loaders that copy tensor by tensor into
 * parts of one large allocation hit as well as whole-buffer copies.
 * Module and library images of that size go the same way.
 *
 * Every call here waits for its reply (rcall): the server's answer
 * decides whether the bytes travel.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "remote.h"
#include "client.h"
#include "log.h"
#include "parse.h"
#include "util.h"
#include "wcache.h"

#define WC_CHUNK	(64u << 20)	/* bytes named by one hash at most */
#define WC_PIECE	(4u << 20)	/* bytes of one upload frame at most */
#define WC_AHEAD	8		/* upload frames in flight */
#define WC_MIN_DEFAULT	(256u << 10)
#define WC_IMAGE_MAX	(2ull << 30)

enum { WC_MISS = 0, WC_DONE = 1, WC_OFF = 2 };

/* For the line at exit (GLEAM_DEBUG=1): what the cache saved, and what
 * hashing cost. */
static struct {
	uint64_t	 hits, misses, hit_bytes, miss_bytes;
	uint64_t	 hash_bytes, hash_ns;
} wst;

static pthread_once_t	 wc_once = PTHREAD_ONCE_INIT;
static int		 wc_on;		/* the server may have a cache */
static uint64_t		 wc_min = WC_MIN_DEFAULT;

/* GLEAM_CACHE and GLEAM_CACHE_MIN; a bad value is ignored with a warning. */
static void
wc_setup(void)
{
	const char *s, *why;
	uint64_t v;

	wc_on = 1;
	if ((s = getenv("GLEAM_CACHE")) != NULL && *s != '\0') {
		if (strcmp(s, "0") == 0)
			wc_on = 0;
		else if (strcmp(s, "1") != 0)
			log_warn("GLEAM_CACHE=%s: expected 0 or 1: ignored", s);
	}
	if ((s = getenv("GLEAM_CACHE_MIN")) != NULL && *s != '\0') {
		if (parse_size(s, &v, &why) == -1 || v == 0)
			log_warn("GLEAM_CACHE_MIN=%s: %s: ignored", s,
			    v == 0 && why == NULL ? "must be positive" : why);
		else
			wc_min = v;
	}
}

static int
wc_enabled(size_t n)
{
	pthread_once(&wc_once, wc_setup);
	return __atomic_load_n(&wc_on, __ATOMIC_RELAXED) && n >= wc_min;
}

static void
wc_off(void)
{
	if (__atomic_exchange_n(&wc_on, 0, __ATOMIC_RELAXED))
		log_debug("the server keeps no weight cache: copies go whole");
}

static void
wc_hash(const void *p, size_t n, uint8_t h[16])
{
	XXH128_canonical_t c;
	uint64_t t = now_ns();

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(h, c.digest, 16);
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
wc_upload(const uint8_t h[16], const void *p, size_t n)
{
	struct rwait w[WC_AHEAD];
	struct rpc_val in[4], out[1];
	size_t max = rcall_max_payload(), off = 0, k;
	unsigned head = 0, tail = 0;	/* sent, answered */
	void *keep;
	CUresult rc = CUDA_SUCCESS, rc2;

	if (max > WC_PIECE)
		max = WC_PIECE;
	while (tail < head || off < n) {
		while (off < n && head - tail < WC_AHEAD &&
		    rc == CUDA_SUCCESS) {
			struct rwait *wi = &w[head % WC_AHEAD];

			k = n - off < max ? n - off : max;
			in[0].p = h;
			in[0].len = 16;
			in[1].u = n;
			in[2].u = off;
			in[3].p = (const char *)p + off;
			in[3].len = (uint32_t)k;
			memset(wi, 0, sizeof *wi);
			if ((rc = rsend(R_CACHE_PUT, in, RP_BULK, wi)) !=
			    CUDA_SUCCESS)
				break;
			head++;
			off += k;
		}
		if (tail == head)
			break;
		rc2 = rwait(&w[tail++ % WC_AHEAD], out, &keep);
		free(keep);
		if (rc == CUDA_SUCCESS)
			rc = rc2;
		if (rc != CUDA_SUCCESS)
			off = n;	/* collect what is in flight, then fail */
	}
	return rc;
}

/* One piece by name: R_CACHE_HTOD's state, or -1 with *rc set. */
static int
wc_ask(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const uint8_t h[16], size_t n, CUresult *rc)
{
	struct rpc_val in[6], out[1];
	void *keep;

	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = (uint64_t)async;
	in[3].u = dst;
	in[4].p = h;
	in[4].len = 16;
	in[5].u = n;
	*rc = rcall(R_CACHE_HTOD, in, out, &keep);
	free(keep);
	return *rc == CUDA_SUCCESS ? (int)out[0].u : -1;
}

/* The plain copy, for a piece the cache could not take. */
static CUresult
wc_plain(struct gctx *c, uint64_t sid, int async, CUdeviceptr dst,
    const void *src, size_t n)
{
	struct rpc_val in[5], out[1];
	size_t max = rcall_max_payload(), k;
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
		rc = rcall(R_MEM_HTOD, in, out, &keep);
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
	uint8_t h[16];
	size_t off, k;
	int st;

	if (!wc_enabled(n))
		return 0;
	*rc = CUDA_SUCCESS;
	for (off = 0; off < n; off += k) {
		k = n - off < WC_CHUNK ? n - off : WC_CHUNK;
		wc_hash((const char *)src + off, k, h);
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
		if (st == WC_DONE)
			continue;
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
wc_ask_image(uint64_t id, const uint8_t h[16], size_t n, CUresult *rc)
{
	struct rpc_val in[3], out[1];
	void *keep;

	in[0].u = id;
	in[1].p = h;
	in[1].len = 16;
	in[2].u = n;
	*rc = rcall(R_CACHE_IMAGE, in, out, &keep);
	free(keep);
	return *rc == CUDA_SUCCESS ? (int)out[0].u : -1;
}

int
wcache_image(uint64_t id, const void *image, size_t n, CUresult *rc)
{
	uint8_t h[16];
	int st;

	if (!wc_enabled(n) || n > WC_IMAGE_MAX)
		return 0;
	wc_hash(image, n, h);
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
