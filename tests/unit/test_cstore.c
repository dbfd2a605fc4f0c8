/* The weight cache's content store: tiers, tenants, budgets, corruption. */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cstore.h"
#include "log.h"
#include "t.h"

static char root[256];

/* A buffer of n seeded bytes (the seed changes every byte). */
static void *
seeded(size_t n, unsigned seed)
{
	unsigned char *b = malloc(n);
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (unsigned char)x;
	}
	return b;
}

static struct cstore *
open_store(const char *sub, uint64_t ram, uint64_t disk)
{
	struct cstore_conf c;

	memset(&c, 0, sizeof c);
	if (sub != NULL)
		snprintf(c.dir, sizeof c.dir, "%s/%s", root, sub);
	c.ram_budget = ram;
	c.disk_budget = disk;
	c.level = 1;
	return cstore_open(&c);
}

/* Puts n seeded bytes; returns their hash in h. */
static void
put(struct cstore *s, const char *tenant, size_t n, unsigned seed,
    uint8_t h[CSTORE_HASH_LEN])
{
	void *b = seeded(n, seed);

	cstore_hash(cstore_naming(tenant), b, n, h);
	cstore_release(s, cstore_put(s, tenant, h, b, n));
}

static int
get_ok(struct cstore *s, const char *tenant, size_t n, unsigned seed,
    int *tier)
{
	uint8_t h[CSTORE_HASH_LEN];
	struct cstore_ref *r;
	void *b = seeded(n, seed);
	int ok;

	cstore_hash(cstore_naming(tenant), b, n, h);
	if ((r = cstore_get(s, tenant, h, n)) == NULL) {
		free(b);
		return 0;
	}
	ok = r->len == n && memcmp(r->data, b, n) == 0;
	if (tier != NULL)
		*tier = r->tier;
	cstore_release(s, r);
	free(b);
	return ok;
}

static void
test_names(void)
{
	uint8_t h[CSTORE_HASH_LEN], g[CSTORE_HASH_LEN];
	char hex[CSTORE_HEX_LEN + 1], t1[CSTORE_TENANT_MAX],
	    t2[CSTORE_TENANT_MAX];

	cstore_hash(CN_WEAK, "abc", 3, h);
	cstore_hex(h, CSTORE_WEAK_LEN, hex);
	/* XXH3-128 of "abc", canonical (big-endian) form, zero-filled. */
	CHECK_STR(hex, "06b05ab6733a618578af5f94892f3950");
	CHECK(h[16] == 0 && h[31] == 0);
	CHECK(cstore_unhex(hex, g) == 16 && memcmp(g, h, sizeof h) == 0);
	CHECK(cstore_unhex("06b05ab6733a618578af5f94892f395", g) == -1);
	CHECK(cstore_unhex("06b05ab6733a618578af5f94892f395g", g) == -1);
	/* BLAKE2b-256 of "abc" (b2sum -l 256). */
	cstore_hash(CN_STRONG, "abc", 3, h);
	cstore_hex(h, CSTORE_HASH_LEN, hex);
	CHECK_STR(hex, "bddd813c634239723171ef3fee98579b"
	    "94964e3bb1cb3e427262c8c068d52319");
	CHECK(cstore_unhex(hex, g) == 32 && memcmp(g, h, sizeof h) == 0);
	CHECK(cstore_unhex("bddd813c634239723171ef3fee98579b"
	    "94964e3bb1cb3e427262c8c068d5231", g) == -1);
	/* A group's tenant names strongly; the rest weakly. */
	CHECK(cstore_naming("g+team") == CN_STRONG);
	CHECK(cstore_naming("i+alice+0123456789abcdef") == CN_WEAK);
	CHECK(cstore_naming("nokey") == CN_WEAK);
	CHECK(cstore_name_len(CN_STRONG) == 32 &&
	    cstore_name_len(CN_WEAK) == 16);
	cstore_tenant(NULL, 0, t1);
	CHECK_STR(t1, "nokey");
	cstore_tenant("secret one", 10, t1);
	cstore_tenant("secret two", 10, t2);
	CHECK(strlen(t1) == 17 && t1[0] == 'k');
	CHECK(strcmp(t1, t2) != 0);
	CHECK(cstore_tenant_valid(t1) && cstore_tenant_valid("nokey"));
	CHECK(!cstore_tenant_valid("k12") && !cstore_tenant_valid("../x"));
}

static void
test_codec(void)
{
	uint8_t h[CSTORE_HASH_LEN];
	void *enc, *dec, *b;
	size_t elen, dlen, n = 100000;
	char why[128];
	int level;

	b = seeded(n, 7);
	memset(b, 0, n / 2);		/* half compressible */
	cstore_hash(CN_WEAK, b, n, h);
	for (level = 0; level <= 3; level += 3) {
		CHECK(cstore_encode(b, n, CN_WEAK, h, level, &enc, &elen) == 0);
		CHECK(level == 0 ? elen == n + CSTORE_HDR_LEN : elen < n);
		CHECK(cstore_decode(enc, elen, 0, h, &dec, &dlen, why,
		    sizeof why) == 0 && dlen == n && memcmp(dec, b, n) == 0);
		free(dec);
		/* One flipped byte anywhere is caught. */
		((uint8_t *)enc)[elen - 10] ^= 1;
		CHECK(cstore_decode(enc, elen, 0, h, &dec, &dlen, why,
		    sizeof why) == -1 && dec == NULL);
		((uint8_t *)enc)[elen - 10] ^= 1;
		CHECK(cstore_decode(enc, elen - 1, 0, h, &dec, &dlen, why,
		    sizeof why) == -1);
		CHECK(cstore_decode(enc, 20, 0, h, &dec, &dlen, why,
		    sizeof why) == -1);
		h[0] ^= 1;
		CHECK(cstore_decode(enc, elen, 0, h, &dec, &dlen, why,
		    sizeof why) == -1);
		h[0] ^= 1;
		free(enc);
	}
	free(b);
	/* Large: a sample decides; zeros shrink, noise is stored raw. */
	b = calloc(1, 1 << 20);
	cstore_hash(CN_WEAK, b, 1 << 20, h);
	CHECK(cstore_encode(b, 1 << 20, CN_WEAK, h, 1, &enc, &elen) == 0 &&
	    elen < (1 << 20) / 10);
	free(enc);
	free(b);
	b = seeded(1 << 20, 3);
	cstore_hash(CN_WEAK, b, 1 << 20, h);
	CHECK(cstore_encode(b, 1 << 20, CN_WEAK, h, 1, &enc, &elen) == 0 &&
	    elen == (1 << 20) + CSTORE_HDR_LEN);
	CHECK(cstore_decode(enc, elen, 0, h, &dec, &dlen, why, sizeof why) == 0 &&
	    dlen == 1 << 20 && memcmp(dec, b, dlen) == 0);
	free(dec);
	free(enc);
	free(b);
}

static void
test_ram(void)
{
	struct cstore *s = open_store(NULL, 300000, 0);
	struct cstore_counters c;
	uint8_t h[CSTORE_HASH_LEN];
	int tier, i;

	CHECK(cstore_active(s));
	put(s, "nokey", 100000, 1, h);
	CHECK(get_ok(s, "nokey", 100000, 1, &tier) && tier == CT_RAM);
	/* Another tenant never sees it. */
	CHECK(!get_ok(s, "k0123456789abcdef", 100000, 1, NULL));
	/* The same hash with another length is not it. */
	CHECK(cstore_get(s, "nokey", h, 99999) == NULL);
	/* Over the budget: the least recently used go. */
	for (i = 2; i <= 5; i++)
		put(s, "nokey", 100000, (unsigned)i, h);
	cstore_counters(s, &c);
	CHECK(c.ram_bytes <= 300000 && c.ram_entries == 3);
	CHECK(!get_ok(s, "nokey", 100000, 1, NULL));
	CHECK(get_ok(s, "nokey", 100000, 5, NULL));
	CHECK(c.evicted == 2 && c.stored == 5);
	/* Larger than the whole budget: served once, not kept. */
	{
		void *b = seeded(400000, 9);
		struct cstore_ref *r;

		cstore_hash(CN_WEAK, b, 400000, h);
		r = cstore_put(s, "nokey", h, b, 400000);
		CHECK(r != NULL && r->len == 400000 && r->tier == CT_UPLOAD);
		cstore_release(s, r);
		CHECK(!get_ok(s, "nokey", 400000, 9, NULL));
	}
	cstore_close(s);
}

static void
test_disk(void)
{
	struct cstore *s = open_store("d", 0, 1 << 20);
	struct cstore_counters c;
	struct cstore_file *f;
	uint8_t h[CSTORE_HASH_LEN], h2[CSTORE_HASH_LEN];
	char err[256], path[1200], hex[CSTORE_HEX_LEN + 1];
	size_t n, i;
	FILE *fp;
	int tier;

	put(s, "nokey", 200000, 1, h);
	put(s, "kaaaaaaaaaaaaaaaa", 200000, 2, h2);
	CHECK(get_ok(s, "nokey", 200000, 1, &tier) && tier == CT_DISK);
	CHECK(!get_ok(s, "nokey", 200000, 2, NULL));
	cstore_close(s);

	/* A new process finds them, with the counters of the last. */
	s = open_store("d", 1 << 20, 1 << 20);
	CHECK(get_ok(s, "kaaaaaaaaaaaaaaaa", 200000, 2, &tier) &&
	    tier == CT_DISK);
	CHECK(get_ok(s, "kaaaaaaaaaaaaaaaa", 200000, 2, &tier) &&
	    tier == CT_RAM);
	cstore_counters(s, &c);
	CHECK(c.disk_hits == 2 && c.ram_hits == 1 && c.misses == 1);
	CHECK(c.disk_entries == 2);

	/* A corrupt file is removed and never served. */
	snprintf(path, sizeof path, "%s/d", root);
	CHECK(cstore_scan(path, "nokey", &f, &n, err, sizeof err) == 0 &&
	    n == 1);
	cstore_hex(h, CSTORE_WEAK_LEN, hex);
	CHECK(n == 1 && strstr(f[0].path, hex) != NULL && f[0].len == 200000);
	CHECK(n == 1 && f[0].hlen == 16);
	CHECK(n == 1 && cstore_verify_file(f[0].path, CN_WEAK, h, err,
	    sizeof err) == 0);
	if (n == 1 && (fp = fopen(f[0].path, "r+")) != NULL) {
		fseek(fp, 5000, SEEK_SET);
		fputc(0x5a ^ fgetc(fp), fp);
		fseek(fp, 5001, SEEK_SET);
		fputc(0x5a ^ fgetc(fp), fp);
		fclose(fp);
	}
	CHECK(n == 1 && cstore_verify_file(f[0].path, CN_WEAK, h, err,
	    sizeof err) == -1);
	CHECK(!get_ok(s, "nokey", 200000, 1, NULL));
	CHECK(n == 1 && access(f[0].path, F_OK) == -1);
	cstore_counters(s, &c);
	CHECK(c.corrupt == 1 && c.disk_entries == 1);
	free(f);
	/* A file removed behind its back (gleam-cache rm): a miss, forgotten. */
	CHECK(cstore_scan(path, "kaaaaaaaaaaaaaaaa", &f, &n, err,
	    sizeof err) == 0 && n == 1);
	{
		struct cstore *t = open_store("d", 0, 1 << 20);
		uint64_t misses;

		cstore_counters(t, &c);
		misses = c.misses;
		CHECK(n == 1 && cstore_remove(path, &f[0]) == 0);
		CHECK(!get_ok(t, "kaaaaaaaaaaaaaaaa", 200000, 2, NULL));
		cstore_counters(t, &c);
		CHECK(c.disk_entries == 0 && c.misses == misses + 1);
		cstore_close(t);
	}
	free(f);

	/* The disk budget holds: 1 MiB takes about five raw entries. */
	for (i = 10; i < 30; i++)
		put(s, "nokey", 200000, (unsigned)i, h);
	cstore_drain(s);
	cstore_counters(s, &c);
	CHECK(c.disk_bytes <= 1 << 20 && c.disk_entries >= 4);
	CHECK(cstore_scan(path, NULL, &f, &n, err, sizeof err) == 0);
	{
		uint64_t total = 0;

		for (i = 0; i < n; i++)
			total += f[i].disk;
		CHECK(total <= 1 << 20 && n == c.disk_entries);
		/* Oldest first. */
		CHECK(n < 2 || f[0].used <= f[n - 1].used);
	}
	free(f);
	cstore_flush(s, 1);
	{
		struct cstore_counters rc;

		CHECK(cstore_read_counters(path, &rc) == 0 &&
		    rc.stored == c.stored && rc.disk_bytes == c.disk_bytes);
	}
	cstore_close(s);
}

static void
count_pin(void *arg, const char *tenant, const uint8_t *hash)
{
	(*(int *)arg)++;
}

/* Entries written behind the caller are all on disk once it closes. */
static void
test_writer(void)
{
	struct cstore *s = open_store("w", 1 << 20, 1 << 20);
	struct cstore_counters c;
	uint8_t h[CSTORE_HASH_LEN];
	int tier, i, ok = 1;

	for (i = 0; i < 4; i++)
		put(s, "nokey", 200000, 100 + (unsigned)i, h);
	/* Served from RAM while the writer works. */
	CHECK(get_ok(s, "nokey", 200000, 100, &tier) && tier == CT_RAM);
	cstore_drain(s);
	cstore_counters(s, &c);
	CHECK(c.disk_entries == 4);
	cstore_close(s);
	s = open_store("w", 0, 1 << 20);
	for (i = 0; i < 4; i++)
		ok &= get_ok(s, "nokey", 200000, 100 + (unsigned)i, &tier) &&
		    tier == CT_DISK;
	CHECK(ok);
	cstore_close(s);
}

static void
test_pins(void)
{
	struct cstore *s = open_store("p", 0, 1 << 20);
	struct cstore_file *f;
	uint8_t h1[CSTORE_HASH_LEN], h2[CSTORE_HASH_LEN];
	char err[256], path[1200];
	size_t n, i;
	int owner, pinned = 0;

	put(s, "nokey", 100000, 1, h1);
	put(s, "nokey", 100000, 2, h2);
	cstore_pin(s, &owner, "nokey", h1);
	snprintf(path, sizeof path, "%s/p", root);
	CHECK(cstore_scan(path, NULL, &f, &n, err, sizeof err) == 0 && n == 2);
	for (i = 0; i < n; i++)
		if (f[i].pinned) {
			pinned++;
			CHECK(memcmp(f[i].hash, h1, sizeof h1) == 0);
		}
	CHECK(pinned == 1);
	free(f);
	/* A pinned entry outlives the disk budget's eviction. */
	for (i = 3; i < 30; i++)
		put(s, "nokey", 100000, (unsigned)i, h2);
	CHECK(get_ok(s, "nokey", 100000, 1, NULL));
	cstore_unpin_all(s, &owner);
	CHECK(cstore_scan(path, NULL, &f, &n, err, sizeof err) == 0);
	for (i = 0, pinned = 0; i < n; i++)
		pinned += f[i].pinned;
	CHECK(pinned == 0);
	free(f);
	/* Lines of dead processes and junk are ignored. */
	{
		static const char t[] = "999999999 nokey "
		    "06b05ab6733a618578af5f94892f3950\njunk\n1 ../x 00\n"
		    "1 nokey 06b05ab6733a618578af5f94892f3950";
		int seen = 0;

		CHECK(cstore_parse_pins(t, sizeof t - 1, count_pin, &seen,
		    1) == 1 && seen == 1);
		seen = 0;
		CHECK(cstore_parse_pins(t, sizeof t - 1, count_pin, &seen,
		    0) == 2 && seen == 2);
	}
	cstore_close(s);
}

static void
test_unwritable(void)
{
	struct cstore *s;
	char path[512];
	uint8_t h[CSTORE_HASH_LEN];

	if (geteuid() == 0) {
		/* root writes anywhere: a path under a regular file fails
		 * for everyone. */
		snprintf(path, sizeof path, "%s/file", root);
		fclose(fopen(path, "w"));
		s = open_store("file/sub", 1 << 20, 1 << 20);
	} else {
		snprintf(path, sizeof path, "%s/ro", root);
		mkdir(path, 0500);
		s = open_store("ro/sub", 1 << 20, 1 << 20);
	}
	CHECK(s != NULL && cstore_active(s));
	put(s, "nokey", 1000, 1, h);
	CHECK(get_ok(s, "nokey", 1000, 1, NULL));
	cstore_close(s);
	/* Neither tier: nothing kept, yet the ref carries the bytes. */
	s = open_store(NULL, 0, 0);
	CHECK(!cstore_active(s));
	put(s, "nokey", 1000, 1, h);
	CHECK(!get_ok(s, "nokey", 1000, 1, NULL));
	cstore_close(s);
}

/* Writes a version 2 entry (64-byte header, a weak name, raw bytes). */
static void
write_v2(const char *dir, const char *tenant, const void *b, size_t n,
    uint8_t h[CSTORE_HASH_LEN])
{
	uint8_t hdr[CSTORE_HDR2_LEN];
	char hex[CSTORE_HEX_LEN + 1], path[1200], cmd[1400];
	FILE *fp;
	int i;

	cstore_hash(CN_WEAK, b, n, h);
	cstore_hex(h, CSTORE_WEAK_LEN, hex);
	memset(hdr, 0, sizeof hdr);
	memcpy(hdr, "GLMCACHE", 8);
	hdr[8] = 2;
	for (i = 0; i < 8; i++)
		hdr[16 + i] = hdr[24 + i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(hdr + 32, h, CSTORE_WEAK_LEN);
	snprintf(cmd, sizeof cmd, "mkdir -p %s/data/%s/%.2s", dir, tenant, hex);
	CHECK(system(cmd) == 0);
	snprintf(path, sizeof path, "%s/data/%s/%.2s/%s", dir, tenant, hex,
	    hex);
	CHECK((fp = fopen(path, "w")) != NULL);
	if (fp != NULL) {
		fwrite(hdr, 1, sizeof hdr, fp);
		fwrite(b, 1, n, fp);
		fclose(fp);
	}
}

/*
 * Strong names: a group's entries are named by BLAKE2b-256, 64 hex digits
 * on disk; version 2 entries are read where their naming is the
 * tenant's, and removed where it is not (a group's XXH3 names).
 */
static void
test_strong(void)
{
	struct cstore *s = open_store("s", 1 << 20, 1 << 20);
	struct cstore_file *f;
	struct cstore_counters c;
	uint8_t h[CSTORE_HASH_LEN], hw[CSTORE_HASH_LEN], hv[CSTORE_HASH_LEN];
	char err[256], path[1200], hex[CSTORE_HEX_LEN + 1];
	void *b, *enc, *dec;
	size_t n, elen, dlen;
	int tier;

	put(s, "g+team", 200000, 1, h);
	CHECK(get_ok(s, "g+team", 200000, 1, &tier) && tier == CT_RAM);
	/* The weak name of the same bytes is not it. */
	b = seeded(200000, 1);
	cstore_hash(CN_WEAK, b, 200000, hw);
	CHECK(cstore_get(s, "g+team", hw, 200000) == NULL);
	cstore_drain(s);
	snprintf(path, sizeof path, "%s/s", root);
	CHECK(cstore_scan(path, "g+team", &f, &n, err, sizeof err) == 0 &&
	    n == 1);
	cstore_hex(h, CSTORE_HASH_LEN, hex);
	CHECK(n == 1 && f[0].hlen == 32 && !f[0].bad &&
	    strstr(f[0].path, hex) != NULL && f[0].len == 200000);
	CHECK(n == 1 && cstore_verify_file(f[0].path, CN_STRONG, h, err,
	    sizeof err) == 0);
	/* Read as a weak tenant's, it is refused. */
	CHECK(n == 1 && cstore_verify_file(f[0].path, CN_WEAK, h, err,
	    sizeof err) == -1 && strstr(err, "BLAKE2b") != NULL);
	free(f);
	/* A header naming bytes weakly does not pass for a strong entry,
	 * and bytes that do not hash to the strong name are refused. */
	CHECK(cstore_encode(b, 200000, CN_WEAK, hw, 0, &enc, &elen) == 0);
	CHECK(cstore_decode(enc, elen, CN_STRONG, NULL, &dec, &dlen, err,
	    sizeof err) == -1 && strstr(err, "XXH3") != NULL);
	CHECK(cstore_decode(enc, elen, 0, hw, &dec, &dlen, err,
	    sizeof err) == 0);
	free(dec);
	free(enc);
	hv[0] = 0;
	memcpy(hv, h, sizeof hv);
	hv[31] ^= 1;
	CHECK(cstore_encode(b, 200000, CN_STRONG, hv, 0, &enc, &elen) == 0);
	CHECK(cstore_decode(enc, elen, CN_STRONG, NULL, &dec, &dlen, err,
	    sizeof err) == -1 && strstr(err, "do not match") != NULL);
	free(enc);
	cstore_close(s);

	/* Version 2 entries: read in an identity's tenant, removed in a
	 * group's. */
	snprintf(path, sizeof path, "%s/s", root);
	write_v2(path, "i+bob+0123456789abcdef", b, 200000, hv);
	write_v2(path, "g+team", b, 200000, hw);
	CHECK(cstore_scan(path, NULL, &f, &n, err, sizeof err) == 0 &&
	    n == 3);
	{
		size_t i, good = 0, bad = 0;

		for (i = 0; i < n; i++) {
			if (f[i].bad)
				bad += strcmp(f[i].tenant, "g+team") == 0 &&
				    f[i].hlen == 16;
			else
				good++;
		}
		CHECK(good == 2 && bad == 1);
	}
	free(f);
	s = open_store("s", 1 << 20, 1 << 20);
	CHECK(get_ok(s, "i+bob+0123456789abcdef", 200000, 1, &tier) &&
	    tier == CT_DISK);
	CHECK(get_ok(s, "g+team", 200000, 1, NULL));
	CHECK(cstore_get(s, "g+team", hw, 200000) == NULL);
	cstore_counters(s, &c);
	CHECK(c.corrupt >= 1);
	CHECK(cstore_scan(path, "g+team", &f, &n, err, sizeof err) == 0 &&
	    n == 1 && f[0].hlen == 32);
	free(f);
	/* Pins of strong names: 64 hex digits, read back. */
	{
		int owner, seen = 0;
		char line[256];

		cstore_pin(s, &owner, "g+team", h);
		snprintf(line, sizeof line, "1 g+team %s\n1 g+team %.32s\n"
		    "1 nokey %s\n", hex, hex, hex);
		/* The second and third are of the other naming's length. */
		CHECK(cstore_parse_pins(line, strlen(line), count_pin, &seen,
		    0) == 1 && seen == 1);
		CHECK(cstore_scan(path, "g+team", &f, &n, err,
		    sizeof err) == 0 && n == 1 && f[0].pinned);
		free(f);
		cstore_unpin_all(s, &owner);
	}
	cstore_close(s);
	free(b);
}

int
main(void)
{
	char cmd[600];

	log_init("test_cstore", LL_QUIET);
	snprintf(root, sizeof root, "%s/test_cstore.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(root) == NULL)
		return 1;
	test_names();
	test_codec();
	test_ram();
	test_disk();
	test_writer();
	test_pins();
	test_unwritable();
	test_strong();
	snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", root, root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	return t_done("test_cstore");
}
