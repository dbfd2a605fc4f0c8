/*
 * against-driver [real-libcuda [client-libcuda]]: on a machine with a GPU
 * and NVIDIA's driver, hold the client library's local answers against
 * the real driver's.
 *
 * - cuGetProcAddress_v2 for every name the client knows, every version
 *   from 0 to 13000 in steps of 10 and flags 0, 1 and 2: the same return
 *   code and status, and a function of the same exported name.
 * - cuGetExportTable: the same size word and NULL words for each table
 *   the client serves.
 * - The integrity hash (lib/client/integrity.c) fed the real driver's
 *   tables and devices equals the real INTEGRITY_CHECK slot 1, on two
 *   threads.
 *
 * Prints each difference; exits 0 when there was none, 1 otherwise.
 * "make client-gpu-check" builds and runs it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/client/integrity.c"
#include "../unit/test_client_rows.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

typedef int	(*getproc2_fn)(const char *, void **, int, uint64_t, int *);
typedef int	(*exporttable_fn)(const void **, const unsigned char *);

struct driver {
	const char	*path;
	void		*lib;
	getproc2_fn	 getproc2;
	exporttable_fn	 table;
};

static struct driver	 real, ours;
static int		 diffs;

static const unsigned char served[][16] = {
	{ 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
	  0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	{ 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
	  0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
	{ 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
	  0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
	{ 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
	  0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
	{ 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
	  0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
	{ 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
	  0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
	{ 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
	  0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca },
	{ 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
	  0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
};
#define CUDART_TABLE	0
#define INTEGRITY_TABLE	4
#define CLS_TABLE	7	/* no size word: 3 functions, NULL */

static void	differ(const char *, ...)
		    __attribute__((format(printf, 1, 2)));

/* Print a difference; the first 200 are enough to go on. */
static void
differ(const char *fmt, ...)
{
	va_list ap;

	if (diffs++ >= 200)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

static void
load(struct driver *d)
{
	if ((d->lib = dlopen(d->path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "against-driver: %s\n", dlerror());
		exit(2);
	}
	d->getproc2 = (getproc2_fn)dlsym(d->lib, "cuGetProcAddress_v2");
	d->table = (exporttable_fn)dlsym(d->lib, "cuGetExportTable");
	if (d->getproc2 == NULL || d->table == NULL) {
		fprintf(stderr, "against-driver: %s: no cuGetProcAddress_v2 "
		    "or cuGetExportTable\n", d->path);
		exit(2);
	}
}

/* The exported name of a function, "(internal)" or "NULL". */
static const char *
fname(void *fn, char *buf, size_t len)
{
	Dl_info di;

	if (fn == NULL)
		return "NULL";
	if (dladdr(fn, &di) == 0 || di.dli_sname == NULL ||
	    di.dli_saddr != fn)
		snprintf(buf, len, "(internal %p)", fn);
	else
		snprintf(buf, len, "%s", di.dli_sname);
	return buf;
}

/* The unsuffixed name, as cuGetProcAddress is asked for it. */
static void
basename_of(const char *sym, char *buf, size_t len)
{
	char *p;
	size_t n;

	snprintf(buf, len, "%s", sym);
	if ((p = strstr(buf, "_ptds")) != NULL ||
	    (p = strstr(buf, "_ptsz")) != NULL)
		*p = '\0';
	n = strlen(buf);
	while (n > 0 && buf[n - 1] >= '0' && buf[n - 1] <= '9')
		n--;
	if (n >= 2 && buf[n - 1] == 'v' && buf[n - 2] == '_' &&
	    n < strlen(buf))
		buf[n - 2] = '\0';
}

static void
compare_lookups(void)
{
	static const char *const extra[] = { "", "cuNoSuchFunction",
	    "cuMemAlloc_v2", "cuMemcpyAsync_ptsz" };
	char name[128], prev[128] = "", a[160], b[160];
	void *fa, *fb;
	int ra, rb, sa, sb, v, flags, n = 0;
	size_t i;

	for (i = 0; i < nitems(client_exports) + nitems(extra); i++) {
		if (i < nitems(extra))
			snprintf(name, sizeof name, "%s", extra[i]);
		else
			basename_of(client_exports[i - nitems(extra)], name,
			    sizeof name);
		if (i >= nitems(extra) && strcmp(name, prev) == 0)
			continue;
		snprintf(prev, sizeof prev, "%s", name);
		for (v = 0; v <= 13000; v += 10)
			for (flags = 0; flags <= 2; flags++) {
				fa = fb = NULL;
				sa = sb = -1;
				ra = real.getproc2(name, &fa, v, flags, &sa);
				rb = ours.getproc2(name, &fb, v, flags, &sb);
				n++;
				if (ra != rb || sa != sb)
					differ("lookup %s@%d/%d: driver rc %d "
					    "status %d, client rc %d status "
					    "%d\n", name, v, flags, ra, sa, rb,
					    sb);
				else if (ra == 0 && strcmp(fname(fa, a,
				    sizeof a), fname(fb, b, sizeof b)) != 0)
					differ("lookup %s@%d/%d: driver %s, "
					    "client %s\n", name, v, flags, a,
					    b);
			}
	}
	printf("lookups: %d compared\n", n);
}

static void
compare_tables(void)
{
	const void *ta, *tb;
	void *const *wa, *const *wb;
	size_t i, j, words;
	int ra, rb;

	for (i = 0; i < nitems(served); i++) {
		ra = real.table(&ta, served[i]);
		rb = ours.table(&tb, served[i]);
		if (ra != 0 || rb != 0) {
			differ("table %zu: driver rc %d, client rc %d\n", i,
			    ra, rb);
			continue;
		}
		wa = ta;
		wb = tb;
		if (i == CLS_TABLE) {
			for (j = 0; j < 4; j++)
				if ((wa[j] == NULL) != (wb[j] == NULL))
					differ("table %zu word %zu: NULL in "
					    "%s only\n", i, j, wa[j] == NULL ?
					    "driver" : "client");
			printf("table c693336e: driver word 3 %s\n",
			    wa[3] == NULL ? "NULL" : "not NULL");
			continue;
		}
		printf("table %02x%02x%02x%02x: driver size word %zu, "
		    "client %zu\n", served[i][0], served[i][1], served[i][2],
		    served[i][3], (size_t)(uintptr_t)wa[0],
		    (size_t)(uintptr_t)wb[0]);
		if (wa[0] != wb[0]) {
			differ("table %zu: size word differs\n", i);
			continue;
		}
		words = (uintptr_t)wa[0] / sizeof(void *);
		for (j = 1; j < words; j++)
			if ((wa[j] == NULL) != (wb[j] == NULL))
				differ("table %zu word %zu: NULL in %s only\n",
				    i, j, wa[j] == NULL ? "driver" : "client");
	}
}

/*
 * The real slot 1 against our hash of the real driver's inputs, in the
 * calling thread.
 */
static void *
compare_integrity(void *arg)
{
	static const uint32_t versions[] = { 13000, 13001, 13002, 13003,
	    13009, 13012, 12082, 2, 7, 130002 };
	uint64_t secs[3] = { 0, ~(uint64_t)0, (uint64_t)time(NULL) };
	int (*count)(int *), (*get)(int *, int), (*attr)(int *, int, int);
	int (*uuid)(unsigned char *, int), (*slot)(uint32_t, uint64_t,
	    uint64_t *);
	void *const *cudart, *const *integ;
	struct integrity_dev devs[64];
	struct integrity_in in;
	uint64_t want[2], got[2];
	int i, n, dev, *ok = arg;
	size_t k, s;

	count = (int (*)(int *))dlsym(real.lib, "cuDeviceGetCount");
	get = (int (*)(int *, int))dlsym(real.lib, "cuDeviceGet");
	attr = (int (*)(int *, int, int))dlsym(real.lib,
	    "cuDeviceGetAttribute");
	uuid = (int (*)(unsigned char *, int))dlsym(real.lib,
	    "cuDeviceGetUuid");
	if (real.table((const void **)&cudart, served[CUDART_TABLE]) != 0 ||
	    real.table((const void **)&integ, served[INTEGRITY_TABLE]) != 0 ||
	    count(&n) != 0 || n > 64)
		return NULL;
	for (i = 0; i < n; i++)
		if (get(&dev, i) != 0 || uuid(devs[i].uuid, dev) != 0 ||
		    attr(&devs[i].pci_domain, 50, dev) != 0 ||
		    attr(&devs[i].pci_bus, 33, dev) != 0 ||
		    attr(&devs[i].pci_device, 34, dev) != 0)
			return NULL;
	slot = (int (*)(uint32_t, uint64_t, uint64_t *))integ[1];
	memset(&in, 0, sizeof in);
	in.driver_version = 13000;
	in.pid = getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = (uintptr_t)cudart;
	in.integrity_table = (uintptr_t)integ;
	in.slot1 = (uintptr_t)integ[1];
	in.devs = devs;
	in.ndevs = n;
	for (k = 0; k < nitems(versions); k++)
		for (s = 0; s < nitems(secs); s++) {
			in.version = versions[k];
			in.unix_seconds = secs[s];
			integrity_hash(&in, want);
			if (slot(versions[k], secs[s], got) != 0 ||
			    got[0] != want[0] || got[1] != want[1]) {
				differ("integrity %u/%llu: driver %016llx "
				    "%016llx, ours %016llx %016llx\n",
				    versions[k], (unsigned long long)secs[s],
				    (unsigned long long)got[0],
				    (unsigned long long)got[1],
				    (unsigned long long)want[0],
				    (unsigned long long)want[1]);
			} else
				(*ok)++;
		}
	return NULL;
}

int
main(int argc, char *argv[])
{
	int (*init)(unsigned int), (*version)(int *), v = 0, ok = 0;
	pthread_t th;

	real.path = argc > 1 ? argv[1] : "libcuda.so.1";
	ours.path = argc > 2 ? argv[2] : "lib/libcuda.so.1";
	load(&real);		/* first, or the SONAME would find ours */
	load(&ours);
	if (real.lib == ours.lib) {
		fprintf(stderr, "against-driver: the same library twice\n");
		return 2;
	}
	version = (int (*)(int *))dlsym(real.lib, "cuDriverGetVersion");
	if (version != NULL && version(&v) == 0)
		printf("driver version %d\n", v);

	compare_lookups();
	compare_tables();

	init = (int (*)(unsigned int))dlsym(real.lib, "cuInit");
	if (init == NULL || init(0) != 0) {
		printf("integrity: cuInit failed, not compared\n");
		diffs++;
	} else {
		compare_integrity(&ok);
		pthread_create(&th, NULL, compare_integrity, &ok);
		pthread_join(th, NULL);
		printf("integrity: %d hashes equal the driver's\n", ok);
		if (ok == 0)
			diffs++;
	}
	printf("against-driver: %d differences\n", diffs);
	return diffs != 0;
}
