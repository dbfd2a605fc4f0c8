/*
 * tabletrace's test against a fake driver (fake.c), no GPU needed:
 *	TABLETRACE_REAL=fake.so TABLETRACE_LOG=log test tracer.so fake.so
 * Checks that ordinary calls forward, that tables come back as copies
 * whose slots reach the real ones with every argument (integer, float,
 * on the stack) and result intact, that a bad pointer argument is
 * harmless, and that the integrity hash is redone over the copies.
 * bats (tests/bats/tabletrace.bats) then reads the log.
 */
#include <sys/mman.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "integrity.h"

typedef int (*export_fn)(const void **, const uint8_t *);
typedef int (*proc2_fn)(const char *, void **, int, uint64_t, int *);

static int failed, n;

static void
check(int ok, const char *what)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++n, what);
	if (!ok)
		failed = 1;
}

static const uint8_t uuid_a[16] = { 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58,
    0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e };
static const uint8_t uuid_b[16] = { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21,
    0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 };
static const uint8_t uuid_cudart[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4,
    0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
static const uint8_t uuid_integrity[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd,
    0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };
static const uint8_t uuid_none[16] = { 1, 2, 3 };

int
main(int argc, char **argv)
{
	void *tt, *fake, *p;
	void *const *a, *const *a2, *const *b, *const *cr, *const *ig, *const *rt;
	int (*init)(unsigned), (*ver)(int *), (*absent)(void *, size_t);
	unsigned (*inited)(void);
	export_fn exp, fexp;
	proc2_fn proc;
	uint64_t v = 0, out[2], want[2];
	struct integrity_in in;
	struct integrity_dev dev;
	int x = 0, st = -1, i;
	char *none;

	if (argc != 3) {
		fprintf(stderr, "usage: test tracer.so fake.so\n");
		return 2;
	}
	if ((tt = dlopen(argv[1], RTLD_NOW)) == NULL ||
	    (fake = dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD)) == NULL) {
		fprintf(stderr, "test: %s\n", dlerror());
		return 1;
	}
	init = (int (*)(unsigned))dlsym(tt, "cuInit");
	ver = (int (*)(int *))dlsym(tt, "cuDriverGetVersion");
	absent = (int (*)(void *, size_t))dlsym(tt, "cuMemAlloc_v2");
	inited = (unsigned (*)(void))dlsym(fake, "fake_inited");
	exp = (export_fn)dlsym(tt, "cuGetExportTable");
	fexp = (export_fn)dlsym(fake, "cuGetExportTable");
	proc = (proc2_fn)dlsym(tt, "cuGetProcAddress_v2");
	if (!init || !ver || !absent || !inited || !exp || !fexp || !proc) {
		fprintf(stderr, "test: a symbol is missing\n");
		return 1;
	}
	check(dlsym(tt, "cudbgApiInit") != NULL && dlsym(tt, "cuGraphLaunch")
	    != NULL, "every export has a forwarder");
	check((void *)init != dlsym(fake, "cuInit"), "cuInit is the tracer's");
	check(init(5) == 0 && inited() == 5, "cuInit(5) forwards");
	check(ver(&x) == 0 && x == 13000, "cuDriverGetVersion forwards");
	check(absent(&p, 1) == 999, "a function the real driver lacks: 999");

	check(exp((const void **)&a, uuid_a) == 0, "table A returned");
	check(fexp((const void **)&rt, uuid_a) == 0 && a != rt, "as a copy");
	check(a[0] == rt[0] && (uintptr_t)a[0] == 7 * 8, "same size word");
	check(a[1] != rt[1] && a[6] == NULL, "slots replaced, data kept");
	check(exp((const void **)&a2, uuid_a) == 0 && a2 == a,
	    "the same copy a second time");
	check(((long (*)(long, long, long, long, long, long))a[1])
	    (1, 2, 3, 4, 5, 6) == 1 + 4 + 9 + 16 + 25 + 36,
	    "six integer arguments");
	check(((int (*)(uint64_t *, void **, int))a[2])(&v, &p, 3) == 0 &&
	    v == 0x112233445566778bULL && p != NULL &&
	    *(uint64_t *)p == 0xb0b0b0b0b0b0b0b0ULL, "out-pointers written");
	check(((double (*)(double, long, double))a[3])(1.5, 4, 0.25) == 6.25,
	    "float arguments and result");
	check(((long (*)(long, long, long, long, long, long, long, long))a[4])
	    (1, 2, 3, 4, 5, 6, 7, 8) == 8071, "stack arguments");
	none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check(((int (*)(void *, void *))a[5])((void *)0xdead0000, none) == 7 &&
	    ((int (*)(void *, void *))a[5])(none, none) == 8,
	    "unmapped and unreadable pointers: no fault");

	check(exp((const void **)&b, uuid_b) == 0 && b[3] == NULL,
	    "sizeless table: NULL kept");
	check(((int (*)(void **))b[0])(&p) == 400 &&
	    ((int (*)(void *))b[1])(p) == 0, "sizeless table's slots");
	check(exp((const void **)&p, uuid_none) == 1 && p == NULL,
	    "unknown UUID: the real answer");

	check(exp((const void **)&cr, uuid_cudart) == 0 &&
	    exp((const void **)&ig, uuid_integrity) == 0, "CUDART, INTEGRITY");
	check(((int (*)(uint32_t, uint64_t, uint64_t *))ig[1])
	    (13002, 0x6a000000, out) == 0, "integrity slot");
	memset(&in, 0, sizeof in);
	memset(&dev, 0, sizeof dev);
	for (i = 0; i < 16; i++)
		dev.uuid[i] = (uint8_t)(i * 17);
	dev.pci_bus = 0x19;
	in.driver_version = 13000;
	in.version = 13002;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = (uintptr_t)cr;
	in.integrity_table = (uintptr_t)ig;
	in.slot1 = (uintptr_t)ig[1];
	in.unix_seconds = 0x6a000000;
	in.devs = &dev;
	in.ndevs = 1;
	integrity_hash(&in, want);
	check(memcmp(out, want, 16) == 0, "integrity hash over the copies");

	check(proc("cuGetExportTable", &p, 13000, 0, &st) == 0 &&
	    p == (void *)exp && st == 0, "lookup of cuGetExportTable: ours");
	check(proc("cuGetProcAddress", &p, 12000, 0, &st) == 0 &&
	    p == (void *)proc, "lookup of cuGetProcAddress: ours");
	check(proc("cuInit", &p, 2000, 0, &st) == 0 &&
	    p == dlsym(fake, "cuInit"), "other lookups: the real answer");
	printf("1..%d\n", n);
	return failed;
}
