/*
 * Unit tests for the client library's cuGetExportTable (dark-api.md §2):
 * which tables exist and their layout, in the built lib/libcuda.so.1 (or
 * GLEAM_LIBCUDA) and in its local half (GLEAM_LIBCUDA_LOCAL, default
 * build/default/client-local/libcuda.so.1); then, in the local half,
 * whose one placeholder device needs no server, the slots answered
 * locally and the integrity slot fed with what a caller of the library
 * can observe.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The hash itself, to recompute the integrity slot's answer here. */
#include "../../lib/client/integrity.c"
#include "t.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

struct uuid {
	unsigned char	 b[16];
};

typedef int	(*exporttable_fn)(const void **, const struct uuid *);

static void		*lib;
static exporttable_fn	 get_table;

static const struct uuid u_cudart = { { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4,
    0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 } };
static const struct uuid u_hooks = { { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74,
    0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 } };
static const struct uuid u_tls = { { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6,
    0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc } };
static const struct uuid u_cls = { { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21,
    0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 } };
static const struct uuid u_checks = { { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2,
    0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e } };
static const struct uuid u_integrity = { { 0xd4, 0x08, 0x20, 0x55, 0xbd,
    0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 } };
static const struct uuid u_cublas = { { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14,
    0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 } };
static const struct uuid u_cluster = { { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d,
    0x47, 0x45, 0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca } };
static const struct uuid u_f8cf = { { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46,
    0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 } };
static const struct uuid u_nvml = { { 0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49,
    0x8b, 0x47, 0xb0, 0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9 } };

static void *
sym(const char *name)
{
	return dlsym(lib, name);
}

/* stderr goes to a file while the tests provoke the library's warnings. */
static FILE	*logged;
static int	 saved_stderr = -1;

static void
capture_begin(void)
{
	fflush(stderr);
	if ((logged = tmpfile()) == NULL || (saved_stderr = dup(2)) == -1)
		return;
	dup2(fileno(logged), 2);
}

/* Restore stderr; each line captured must be one expected, n in all. */
static void
capture_end(const char *const *want, size_t nwant, size_t nlines)
{
	char line[512];
	size_t i, n = 0;
	int found;

	fflush(stderr);
	if (saved_stderr == -1 || logged == NULL) {
		CHECK(0);
		return;
	}
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(logged);
	while (fgets(line, sizeof line, logged) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		for (found = 0, i = 0; i < nwant; i++)
			if (strstr(line, want[i]) != NULL)
				found = 1;
		if (!found)
			fprintf(stderr, "unexpected: %s\n", line);
		CHECK(found);
		n++;
	}
	CHECK(n == nlines);
	fclose(logged);
}

/* The table for a UUID, or NULL. */
static void *const *
table(const struct uuid *u)
{
	const void *t = NULL;

	if (get_table(&t, u) != 0)
		return NULL;
	return t;
}

/*
 * A served table: found, the same address every time, the size word,
 * NULL exactly in the words listed (-1 ends the list), functions elsewhere.
 */
static int
layout(const struct uuid *u, size_t words, const int *nulls)
{
	void *const *t = table(u);
	size_t i;
	int j, isnull;

	if (t == NULL || table(u) != t)
		return 0;
	if ((uintptr_t)t[0] != words * sizeof(void *))
		return 0;
	for (i = 1; i < words; i++) {
		for (isnull = 0, j = 0; nulls[j] != -1; j++)
			if ((size_t)nulls[j] == i)
				isnull = 1;
		if ((t[i] == NULL) != isnull)
			return 0;
	}
	return 1;
}

static void
test_tables(void)
{
	static const int none[] = { -1 }, cudart[] = { 10, -1 },
	    cublas[] = { 91, -1 };
	const struct uuid unknown = { { 0x0c, 0xa5, 0x0b, 0x8c } };
	void *const *t;
	const void *p;

	CHECK(layout(&u_cudart, 13, cudart));
	CHECK(layout(&u_hooks, 7, none));
	CHECK(layout(&u_tls, 3, none));
	CHECK(layout(&u_checks, 15, none));
	CHECK(layout(&u_integrity, 3, none));
	CHECK(layout(&u_cublas, 93, cublas));
	CHECK(layout(&u_cluster, 17, none));

	/* CLS has no size word: three functions and a NULL. */
	t = table(&u_cls);
	CHECK(t != NULL && table(&u_cls) == t);
	CHECK(t != NULL && t[0] != NULL && t[1] != NULL && t[2] != NULL &&
	    t[3] == NULL);

	/* Refused: optional, unknown, or bad arguments. */
	p = &p;
	CHECK(get_table(&p, &u_f8cf) == 1 && p == NULL);
	p = &p;
	CHECK(get_table(&p, &u_nvml) == 1 && p == NULL);
	p = &p;
	CHECK(get_table(&p, &unknown) == 1 && p == NULL);
	p = &p;
	CHECK(get_table(&p, NULL) == 1 && p == NULL);
	CHECK(get_table(NULL, &u_cudart) == 1);
}

/* The slots that are answered, called as the libraries call them. */
static void
test_slots(void)
{
	void *const *t;
	int (*init)(unsigned int);
	int (*primary)(void **, int);
	void (*getbuf)(void **, size_t *);
	int (*tls)(void **, uint32_t, void *);
	int (*check2)(void *, uint32_t *, void **);
	uint32_t (*check3)(void);
	int (*c4)(void *, uint64_t *);
	int (*c39)(void *, void *, uint64_t *);
	int (*c51)(void *, uint64_t, void **);
	int (*tpc)(uint8_t **, uint8_t **);
	int (*tpcfree)(uint8_t *, uint8_t *);
	int (*unseen)(void);
	void *ctx, *ctx2, *buf, *obj, *out2;
	unsigned char *z;
	uint8_t *vgpc, *mtpc;
	size_t size, i;
	uint32_t out1;
	uint64_t v;
	int zero;

	init = (int (*)(unsigned int))sym("cuInit");
	t = table(&u_cudart);
	if (init == NULL || t == NULL) {
		CHECK(0);
		return;
	}
	primary = (int (*)(void **, int))t[2];
	ctx = NULL;
	CHECK(primary(&ctx, 0) == 3 && ctx == NULL);	/* before cuInit */
	CHECK(init(1) == 1);
	CHECK(init(0) == 0);
	CHECK(primary(&ctx, 0) == 0 && ctx != NULL);
	CHECK(primary(&ctx2, 0) == 0 && ctx2 == ctx);
	CHECK(primary(&ctx2, 1) == 101);
	CHECK(primary(&ctx2, -1) == 101);
	CHECK(primary(NULL, 0) == 1);
	unseen = (int (*)(void))t[7];
	CHECK(unseen() == 801);

	t = table(&u_hooks);
	getbuf = (void (*)(void **, size_t *))t[2];
	buf = NULL;
	size = 0;
	getbuf(&buf, &size);
	CHECK(buf != NULL && size == 1024);
	for (z = buf, zero = 1, i = 0; buf != NULL && i < 4096; i++)
		zero &= z[i] == 0;
	CHECK(zero);
	getbuf = (void (*)(void **, size_t *))t[6];
	buf = NULL;
	getbuf(&buf, &size);
	CHECK(buf != NULL && size == 14);
	for (z = buf, zero = 1, i = 0; buf != NULL && i < 64; i++)
		zero &= z[i] == 0;
	CHECK(zero);
	unseen = (int (*)(void))t[1];
	CHECK(unseen() == 0);

	t = table(&u_tls);
	tls = (int (*)(void **, uint32_t, void *))t[2];
	obj = &obj;
	CHECK(tls(&obj, 0x37, NULL) == 0 && obj == &obj);

	t = table(&u_checks);
	check2 = (int (*)(void *, uint32_t *, void **))t[2];
	check3 = (uint32_t (*)(void))t[3];
	out1 = 99;
	out2 = &out2;
	CHECK(check2(ctx, &out1, &out2) == 0 && out1 == 0 && out2 == &out2);
	out1 = 99;
	CHECK(check2(NULL, &out1, &out2) == 0 && out1 == 0 && out2 == &out2);
	CHECK(check3() == 0);

	t = table(&u_cublas);
	c4 = (int (*)(void *, uint64_t *))t[4];
	c39 = (int (*)(void *, void *, uint64_t *))t[39];
	c51 = (int (*)(void *, uint64_t, void **))t[51];
	v = 5;
	CHECK(c4(NULL, &v) == 0 && v == 0);
	CHECK(c4(&v, &v) == 0 && v == 1);
	obj = NULL;
	CHECK(c51(NULL, 0, &obj) == 0 && obj != NULL);
	CHECK(c51(NULL, 0, &buf) == 0 && buf == obj);
	for (z = obj, zero = 1, i = 0; obj != NULL && i < 4096; i++)
		zero &= z[i] == 0;
	CHECK(zero);
	v = 5;
	CHECK(c39(NULL, obj, &v) == 0 && v == 0);
	unseen = (int (*)(void))t[5];
	CHECK(unseen() == 801);

	/* The default answer for the TPC map: none, so cuBLASLt's identity. */
	t = table(&u_cluster);
	tpc = (int (*)(uint8_t **, uint8_t **))t[4];
	tpcfree = (int (*)(uint8_t *, uint8_t *))t[13];
	vgpc = mtpc = (uint8_t *)&v;
	CHECK(tpc(&vgpc, &mtpc) == 801);
	CHECK(vgpc == (uint8_t *)&v && mtpc == (uint8_t *)&v);
	CHECK(tpcfree(NULL, NULL) == 0);
}

static void dtor(void *, void *, void *);
static int dtors;

static void
dtor(void *c, void *key, void *val)
{
	dtors++;
}

/* Context-local storage through the table (its map: test_client_cls). */
static void
test_cls(void)
{
	void *const *t = table(&u_cls);
	int (*put)(void *, void *, void *, void (*)(void *, void *, void *));
	int (*del)(void *, void *);
	int (*get)(void **, void *, void *);
	char ctx, key, key2, val, val2;
	void *out;

	if (t == NULL) {
		CHECK(0);
		return;
	}
	put = (int (*)(void *, void *, void *,
	    void (*)(void *, void *, void *)))t[0];
	del = (int (*)(void *, void *))t[1];
	get = (int (*)(void **, void *, void *))t[2];

	/* No context is current without a server: 201 for NULL. */
	CHECK(put(NULL, &key, &val, dtor) == 201);
	CHECK(get(&out, NULL, &key) == 201);
	CHECK(del(NULL, &key) == 201);

	CHECK(get(&out, &ctx, &key) == 400);
	CHECK(put(&ctx, &key, &val, dtor) == 0);
	CHECK(put(&ctx, &key, &val2, dtor) == 400);
	out = NULL;
	CHECK(get(&out, &ctx, &key) == 0 && out == &val);
	CHECK(get(&out, &ctx, &key2) == 400);
	CHECK(del(&ctx, &key2) == 400);
	CHECK(del(&ctx, &key) == 0);
	CHECK(del(&ctx, &key) == 400);
	CHECK(get(&out, &ctx, &key) == 400);
	CHECK(dtors == 0);
}

/* What the integrity slot must hash for the calling thread. */
static int
integrity_expect(void *const *cudart, void *const *integ, uint32_t version,
    uint64_t secs, uint64_t want[2])
{
	int (*count)(int *);
	int (*get)(int *, int);
	int (*uuid)(struct uuid *, int);
	int (*attr)(int *, int, int);
	struct integrity_dev devs[8];
	struct integrity_in in;
	int i, n, dev;

	count = (int (*)(int *))sym("cuDeviceGetCount");
	get = (int (*)(int *, int))sym("cuDeviceGet");
	uuid = (int (*)(struct uuid *, int))sym("cuDeviceGetUuid");
	attr = (int (*)(int *, int, int))sym("cuDeviceGetAttribute");
	if (count(&n) != 0 || n < 0 || n > 8)
		return 0;
	for (i = 0; i < n; i++) {
		if (get(&dev, i) != 0 ||
		    uuid((struct uuid *)devs[i].uuid, dev) != 0 ||
		    attr(&devs[i].pci_domain, 50, dev) != 0 ||
		    attr(&devs[i].pci_bus, 33, dev) != 0 ||
		    attr(&devs[i].pci_device, 34, dev) != 0)
			return 0;
	}
	memset(&in, 0, sizeof in);
	in.driver_version = 13000;
	in.version = version;
	in.pid = getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = (uintptr_t)cudart;
	in.integrity_table = (uintptr_t)integ;
	in.slot1 = (uintptr_t)integ[1];
	in.unix_seconds = secs;
	in.devs = devs;
	in.ndevs = n;
	integrity_hash(&in, want);
	return 1;
}

/* Call the integrity slot as cudart does and compare with our own hash. */
static void *
integrity_thread(void *arg)
{
	static const uint64_t secs[] = { 0, 0x6a000000, ~(uint64_t)0 };
	static const uint32_t versions[] = { 13002, 13003, 13009, 13012,
	    12082, 2, 7, 130002, 13010 };
	void *const *cudart = table(&u_cudart), *const *integ;
	int (*slot)(uint32_t, uint64_t, uint64_t *);
	uint64_t out[2], want[2];
	size_t i, j;
	int *bad = arg;

	integ = table(&u_integrity);
	slot = (int (*)(uint32_t, uint64_t, uint64_t *))integ[1];
	for (i = 0; i < nitems(versions); i++)
		for (j = 0; j < nitems(secs); j++) {
			if (!integrity_expect(cudart, integ, versions[i],
			    secs[j], want) ||
			    slot(versions[i], secs[j], out) != 0 ||
			    out[0] != want[0] || out[1] != want[1])
				(*bad)++;
		}
	return NULL;
}

static void
test_integrity(void)
{
	void *const *integ = table(&u_integrity);
	int (*slot)(uint32_t, uint64_t, uint64_t *);
	uint64_t out[2], first[2];
	pthread_t th;
	int bad = 0;

	if (integ == NULL) {
		CHECK(0);
		return;
	}
	slot = (int (*)(uint32_t, uint64_t, uint64_t *))integ[1];

	/* Versions ending in 0 and 1 get fixed answers. */
	CHECK(slot(13000, 12345, out) == 0 &&
	    out[0] == 0x3341181C03CB675CULL && out[1] == 0x8ED383AA1F4CD1E8ULL);
	CHECK(slot(13001, 12345, out) == 0 &&
	    out[0] == 0x1841181C03CB675CULL && out[1] == 0x8ED383AA1F4CD1E8ULL);
	CHECK(slot(13002, 12345, NULL) == 1);

	integrity_thread(&bad);
	CHECK(bad == 0);

	/* Another thread: its own tid, so its own hash. */
	CHECK(slot(13002, 12345, first) == 0);
	bad = 0;
	CHECK(pthread_create(&th, NULL, integrity_thread, &bad) == 0 &&
	    pthread_join(th, NULL) == 0);
	CHECK(bad == 0);
	CHECK(slot(13002, 12345, out) == 0 &&
	    out[0] == first[0] && out[1] == first[1]);
}

/* Open a build of the library: env, else the default path. */
static int
open_lib(const char *env, const char *dflt)
{
	const char *path;

	if ((path = getenv(env)) == NULL)
		path = dflt;
	if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		CHECK(lib != NULL);
		return -1;
	}
	get_table = (exporttable_fn)sym("cuGetExportTable");
	CHECK(get_table != NULL);
	return get_table != NULL ? 0 : -1;
}

int
main(void)
{
	/* The unknown table is refused by both libraries. */
	static const char *const want[] = {
		"cuGetExportTable: 0ca50b8c-00000000-00000000-00000000: "
		    "unknown table, refused",
		"cuGetExportTable: cudart table slot 7: not implemented",
		"cuGetExportTable: hooks table slot 1: not implemented",
		"cuGetExportTable: cublas table slot 5: not implemented"
	};

	capture_begin();
	/* The shipped library: no cuInit, which would look for a server. */
	if (open_lib("GLEAM_LIBCUDA", "lib/libcuda.so.1") == 0)
		test_tables();
	if (open_lib("GLEAM_LIBCUDA_LOCAL",
	    "build/default/client-local/libcuda.so.1") == 0) {
		test_tables();
		test_slots();
		test_cls();
		test_integrity();
	}
	capture_end(want, nitems(want), nitems(want) + 1);
	return t_done("client_exporttable");
}
