/*
 * gleam-serve's weight cache calls (gleam-serve/wcache.c) against a fake
 * backend whose device memory is one host buffer: a client that lies
 * about a hash, pieces out of order, tenants, images.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../gleam-serve/wcache.c"

#include "t.h"

static uint8_t	dev[1 << 20];	/* the fake device's memory */
static int	copies;

/* R_MEM_HTOD of the fake backend: in[3] is an offset into dev. */
static int
fake_htod(struct rcall *c)
{
	if (c->in[3].u > sizeof dev || c->in[4].len > sizeof dev - c->in[3].u)
		return 1;
	memcpy(dev + c->in[3].u, c->in[4].p, c->in[4].len);
	copies++;
	return 0;
}

/* The fake GPU tier: kept entries are malloc'd; the client is on gdev. */
static int	gdev, gkept, gfreed, gcopies;

static int
fake_keep(struct rcall *c, const void *p, size_t len, int *device,
    uint64_t *kept)
{
	void *k = malloc(len);

	memcpy(k, p, len);
	*device = gdev;
	*kept = (uint64_t)(uintptr_t)k;
	gkept++;
	return 0;
}

static int
fake_copy(struct rcall *c, int device, uint64_t kept, size_t len)
{
	if (device != gdev)
		return 101;
	if (c->in[3].u > sizeof dev || len > sizeof dev - c->in[3].u)
		return 1;
	memcpy(dev + c->in[3].u, (void *)(uintptr_t)kept, len);
	gcopies++;
	return 0;
}

static void
fake_free(int device, uint64_t kept)
{
	free((void *)(uintptr_t)kept);
	gfreed++;
}

static struct backend fake = { .name = "fake" };

static struct rclient cl = { .addr = "test", .name = "test" };
static struct wscope scope;	/* of the clients start made */

static int
call(struct wclient **w, uint16_t type, struct rpc_val *in, uint64_t *state)
{
	struct rcall c;
	int rc;

	memset(&c, 0, sizeof c);
	c.cl = &cl;
	c.d = rpc_lookup(type);
	memcpy(c.in, in, sizeof c.in);
	rc = wcache_call(w, &scope, &fake, &c);
	if (state != NULL)
		*state = c.out[0].u;
	return rc;
}

static int
htod(struct wclient **w, uint64_t off, const uint8_t *h, uint64_t n,
    uint64_t *state)
{
	struct rpc_val in[RPC_MAX_FIELDS];

	memset(in, 0, sizeof in);
	in[3].u = off;
	in[4].p = h;
	in[4].len = 16;
	in[5].u = n;
	return call(w, R_CACHE_HTOD, in, state);
}

static int
put(struct wclient **w, const uint8_t *h, uint64_t total, uint64_t off,
    const void *p, uint32_t len, uint64_t *state)
{
	struct rpc_val in[RPC_MAX_FIELDS];

	memset(in, 0, sizeof in);
	in[0].p = h;
	in[0].len = 16;
	in[1].u = total;
	in[2].u = off;
	in[3].p = p;
	in[3].len = len;
	return call(w, R_CACHE_PUT, in, state);
}

static char dir[256];

/* A cache in RAM, and on disk in dir (kept across stop and start). */
static void
start(const char *key)
{
	struct config cfg;

	memset(&cfg, 0, sizeof cfg);
	cfg.cache_ram = 8 << 20;
	snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", dir);
	cfg.cache_disk = 8 << 20;
	wcache_init(&cfg);
	if (key != NULL) {
		struct auth_key k;

		memset(&k, 0, sizeof k);
		auth_key_from(&k, key, strlen(key));
		wcache_scope(NULL, "test", &k, &scope);
	} else
		wcache_scope(NULL, NULL, NULL, &scope);
}

static void
stop(void)
{
	cstore_close(store);
	store = NULL;
}

int
main(void)
{
	struct wclient *w = NULL, *w2 = NULL;
	struct rpc_val in[RPC_MAX_FIELDS], img;
	uint8_t data[300000], other[300000], h[CSTORE_HASH_LEN],
	    ho[CSTORE_HASH_LEN];
	uint64_t st;
	size_t i;

	log_init("test_cstore_wcache", LL_QUIET);
	snprintf(dir, sizeof dir, "%s/test_wcache.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	auth_init();
	fake.call[R_MEM_HTOD - R_OPEN] = fake_htod;
	for (i = 0; i < sizeof data; i++) {
		data[i] = (uint8_t)(i * 7 + 3);
		other[i] = (uint8_t)(i * 11 + 5);
	}
	cstore_hash(CN_WEAK, data, sizeof data, h);
	cstore_hash(CN_WEAK, other, sizeof other, ho);

	/* No cache configured: the client is told so. */
	{
		struct config cfg;

		memset(&cfg, 0, sizeof cfg);
		wcache_init(&cfg);
		CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_OFF);
		CHECK(put(&w, h, sizeof data, 0, data, 100, &st) == 801);
		stop();
	}

	start(NULL);
	CHECK(wcache_owns(R_CACHE_PUT) && !wcache_owns(R_MEM_HTOD));
	/* A miss, then a client that names h and sends other bytes. */
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_MISS);
	CHECK(put(&w, h, sizeof other, 0, other, 100000, &st) == 0 && st == 0);
	CHECK(put(&w, h, sizeof other, 100000, other + 100000, 200000,
	    &st) == 1);
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_MISS);
	CHECK(copies == 0);
	/* Pieces out of order, past the total, or of another total. */
	CHECK(put(&w, h, sizeof data, 5, data, 10, &st) == 1);
	CHECK(put(&w, h, sizeof data, 0, data, 100, &st) == 0);
	CHECK(put(&w, h, sizeof data, 200, data + 200, 100, &st) == 1);
	CHECK(put(&w, h, sizeof data, 0, data, sizeof data + 1, &st) == 1);
	CHECK(put(&w, h, 0, 0, data, 0, &st) == 1);
	CHECK(put(&w, h, 3ull << 30, 0, data, 10, &st) == 1);
	memset(in, 0, sizeof in);
	in[0].p = h;
	in[0].len = 15;		/* a key of the wrong size */
	in[1].u = 10;
	CHECK(call(&w, R_CACHE_PUT, in, &st) == 1);
	CHECK(htod(&w, 0, h, 0, &st) == 1);
	/* The honest upload: kept, and the copy made from it. */
	CHECK(put(&w, h, sizeof data, 0, data, 150000, &st) == 0 && st == 0);
	CHECK(put(&w, h, sizeof data, 150000, data + 150000, 150000,
	    &st) == 0 && st == 1);
	CHECK(htod(&w, 4096, h, sizeof data, &st) == 0 && st == WC_DONE);
	CHECK(copies == 1 && memcmp(dev + 4096, data, sizeof data) == 0);
	/* Another client of the same tenant hits it; other bytes miss. */
	memset(dev, 0, sizeof dev);
	CHECK(htod(&w2, 0, h, sizeof data, &st) == 0 && st == WC_DONE);
	CHECK(memcmp(dev, data, sizeof data) == 0);
	CHECK(htod(&w2, 0, ho, sizeof other, &st) == 0 && st == WC_MISS);
	/* The same name with another length is not it. */
	CHECK(htod(&w2, 0, h, sizeof data - 1, &st) == 0 && st == WC_MISS);
	/* Images: readied for the load that names the id, then gone. */
	memset(in, 0, sizeof in);
	in[0].u = 77;
	in[1].p = h;
	in[1].len = 16;
	in[2].u = sizeof data;
	CHECK(call(&w2, R_CACHE_IMAGE, in, &st) == 0 && st == WC_DONE);
	CHECK(wcache_image(w2, 77, &img) == 1 && img.len == sizeof data &&
	    memcmp(img.p, data, sizeof data) == 0);
	CHECK(wcache_image(w2, 78, &img) == 0 && wcache_image(NULL, 77,
	    &img) == 0);
	wcache_image_done(w2, 77);
	CHECK(wcache_image(w2, 77, &img) == 0);
	in[0].u = 0;
	CHECK(call(&w2, R_CACHE_IMAGE, in, &st) == 1);
	/* Names ahead: held ones copy one-way; others are refused. */
	{
		uint8_t names[3 * 24];
		uint64_t lens[3] = { sizeof data, sizeof other, 5 };
		const uint8_t *hs[3] = { h, ho, h };
		struct wclient *w3 = NULL;
		int k;

		for (i = 0; i < 3; i++) {
			memcpy(names + 24 * i, hs[i], 16);
			for (k = 0; k < 8; k++)
				names[24 * i + 16 + k] = (uint8_t)(lens[i] >>
				    (8 * k));
		}
		memset(in, 0, sizeof in);
		in[0].p = names;
		in[0].len = sizeof names;
		{
			struct rcall c;

			memset(&c, 0, sizeof c);
			c.cl = &cl;
			c.d = rpc_lookup(R_CACHE_HAVE);
			memcpy(c.in, in, sizeof c.in);
			/* data is kept, other was never sent, 5 bytes of h: no. */
			CHECK(wcache_call(&w3, &scope, &fake, &c) == 0 &&
			    c.out[0].len == 1 &&
			    ((const uint8_t *)c.out[0].p)[0] == 1);
			free(c.scratch);
			in[0].len = 23;
			memcpy(c.in, in, sizeof c.in);
			CHECK(wcache_call(&w3, &scope, &fake, &c) == 1);
		}
		memset(in, 0, sizeof in);
		in[3].u = 100;
		in[4].p = h;
		in[4].len = 16;
		in[5].u = sizeof data;
		memset(dev, 0, sizeof dev);
		CHECK(call(&w3, R_CACHE_HELD, in, NULL) == 0 &&
		    memcmp(dev + 100, data, sizeof data) == 0);
		/* Held stays held: the same name copied twice. */
		CHECK(call(&w3, R_CACHE_HELD, in, NULL) == 0);
		in[4].p = ho;
		CHECK(call(&w3, R_CACHE_HELD, in, NULL) == 500);
		wcache_client_free(w3);
	}
	wcache_client_free(w);
	wcache_client_free(w2);
	w = w2 = NULL;
	stop();

	/* Another key: another tenant, which sees nothing of the first's. */
	start("tenant one's key, long enough");
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_MISS);
	CHECK(put(&w, h, sizeof data, 0, data, sizeof data, &st) == 0 &&
	    st == 1);
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_DONE);
	wcache_client_free(w);
	w = NULL;
	stop();
	/* The GPU tier: two entries fit; the least recently used goes. */
	fake.gpu_keep = fake_keep;
	fake.gpu_copy = fake_copy;
	fake.gpu_free = fake_free;
	start(NULL);
	gpu_budget = 2 * sizeof data;
	{
		uint8_t h3[CSTORE_HASH_LEN], d3[sizeof data];
		struct cstore_counters cc;

		for (i = 0; i < sizeof d3; i++)
			d3[i] = (uint8_t)(i * 13 + 1);
		cstore_hash(CN_WEAK, d3, sizeof d3, h3);
		CHECK(put(&w, ho, sizeof other, 0, other, sizeof other,
		    &st) == 0 && st == 1);
		CHECK(put(&w, h3, sizeof d3, 0, d3, sizeof d3, &st) == 0);
		/* From RAM (kept on the GPU as it goes), then from the GPU. */
		CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_DONE);
		CHECK(htod(&w, 0, ho, sizeof other, &st) == 0 &&
		    st == WC_DONE);
		CHECK(gkept == 2 && gcopies == 0);
		memset(dev, 0, sizeof dev);
		CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_DONE);
		CHECK(gcopies == 1 && memcmp(dev, data, sizeof data) == 0);
		/* A third: other (least recent) is freed, data stays. */
		CHECK(htod(&w, 0, h3, sizeof d3, &st) == 0 && st == WC_DONE);
		CHECK(gkept == 3 && gfreed == 1 && gpu_entries == 2);
		CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && gcopies == 2);
		CHECK(htod(&w, 0, ho, sizeof other, &st) == 0 && gcopies == 2);
		/* A client on another device: not served from device 0's. */
		gdev = 1;
		memset(dev, 0, sizeof dev);
		CHECK(htod(&w, 0, h3, sizeof d3, &st) == 0 && st == WC_DONE);
		CHECK(gcopies == 2 && memcmp(dev, d3, sizeof d3) == 0);
		CHECK(gpu_bytes[0] <= gpu_budget && gpu_bytes[1] <= gpu_budget);
		cstore_counters(store, &cc);
		CHECK(cc.gpu_hits == 2 && cc.gpu_entries == gpu_entries &&
		    cc.gpu_bytes == gpu_total);
		gdev = 0;
	}
	wcache_client_free(w);
	w = NULL;
	gpu_budget = 0;
	stop();

	/* Both keys' entries are on disk now: each sees only its own. */
	start("tenant two's key, long enough");
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_MISS);
	wcache_client_free(w);
	w = NULL;
	stop();
	start("tenant one's key, long enough");
	CHECK(htod(&w, 0, h, sizeof data, &st) == 0 && st == WC_DONE);
	wcache_client_free(w);
	stop();
	{
		char cmd[600];

		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return t_done("test_cstore_wcache");
}
