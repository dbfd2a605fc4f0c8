/*
 * A fake real driver for tabletrace's test (test.c): a few ordinary
 * functions, cuGetExportTable with tables of known behaviour (one with a
 * size word, one without as CONTEXT_LOCAL_STORAGE, and the CUDART and
 * INTEGRITY pair whose hash covers their addresses), cuGetProcAddress*.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "integrity.h"

#define F	__attribute__((visibility("default")))

F int		 cuInit(unsigned);
F unsigned	 fake_inited(void);
F int		 cuDriverGetVersion(int *);
F int		 cuDeviceGetCount(int *);
F int		 cuDeviceGet(int *, int);
F int		 cuDeviceGetUuid_v2(uint8_t *, int);
F int		 cuDeviceGetAttribute(int *, int, int);
F int		 cuGetExportTable(const void **, const uint8_t *);
F int		 cuGetProcAddress(const char *, void **, int, uint64_t);
F int		 cuGetProcAddress_v2(const char *, void **, int, uint64_t,
		    int *);

static unsigned inited = 99;
static uint64_t box[4] = { 0xb0b0b0b0b0b0b0b0ULL, 1, 2, 3 };

F int cuInit(unsigned flags) { inited = flags; return 0; }
F unsigned fake_inited(void) { return inited; }
F int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
F int cuDeviceGetCount(int *n) { *n = 1; return 0; }
F int cuDeviceGet(int *d, int i) { *d = i; return i == 0 ? 0 : 101; }

F int
cuDeviceGetUuid_v2(uint8_t *u, int d)
{
	int i;

	for (i = 0; i < 16; i++)
		u[i] = (uint8_t)(i * 17);
	return 0;
}

F int
cuDeviceGetAttribute(int *v, int a, int d)
{
	*v = a == 33 ? 0x19 : 0;
	return 0;
}

/* The test's table: size word, then six functions. */
static long
s_sum6(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

static int
s_out(uint64_t *v, void **p, int kind)
{
	*v = 0x1122334455667788ULL + (uint64_t)kind;
	*p = box;
	return 0;
}

static double
s_float(double x, long k, double y)
{
	return x * (double)k + y;
}

static long
s_eight(long a, long b, long c, long d, long e, long f, long g, long h)
{
	return h * 1000 + g * 10 + a;
}

static int
s_nopeek(void *p, void *q)
{
	return p == q ? 8 : 7;
}

static void *table_a[7] = {
	(void *)(sizeof table_a), (void *)s_sum6, (void *)s_out,
	(void *)s_float, (void *)s_eight, (void *)s_nopeek, NULL
};

/* No size word, NULL-terminated, as CONTEXT_LOCAL_STORAGE. */
static int s_get(void **v) { *v = box; return 400; }
static int s_put(void *v) { return v == box ? 0 : 1; }
static void *table_b[4] = { (void *)s_get, (void *)s_put, (void *)s_get, NULL };

static void *cudart_table[3];
static void *integrity_table[3];

static int s_zero(void) { return 0; }

static int
s_integrity(uint32_t version, uint64_t secs, uint64_t out[2])
{
	struct integrity_in in;
	struct integrity_dev dev;

	memset(&in, 0, sizeof in);
	memset(&dev, 0, sizeof dev);
	cuDeviceGetUuid_v2(dev.uuid, 0);
	dev.pci_bus = 0x19;
	in.driver_version = 13000;
	in.version = version;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = (uintptr_t)cudart_table;
	in.integrity_table = (uintptr_t)integrity_table;
	in.slot1 = (uintptr_t)integrity_table[1];
	in.unix_seconds = secs;
	in.devs = &dev;
	in.ndevs = 1;
	integrity_hash(&in, out);
	return 0;
}

static const uint8_t uuid_a[16] = { 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58,
    0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e };
static const uint8_t uuid_b[16] = { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21,
    0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 };
static const uint8_t uuid_cudart[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4,
    0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
static const uint8_t uuid_integrity[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd,
    0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };

F int
cuGetExportTable(const void **pp, const uint8_t *id)
{
	if (pp == NULL || id == NULL)
		return 1;
	cudart_table[0] = (void *)sizeof cudart_table;
	cudart_table[1] = cudart_table[2] = (void *)s_zero;
	integrity_table[0] = (void *)sizeof integrity_table;
	integrity_table[1] = (void *)s_integrity;
	integrity_table[2] = (void *)s_zero;
	if (memcmp(id, uuid_a, 16) == 0)
		*pp = table_a;
	else if (memcmp(id, uuid_b, 16) == 0)
		*pp = table_b;
	else if (memcmp(id, uuid_cudart, 16) == 0)
		*pp = cudart_table;
	else if (memcmp(id, uuid_integrity, 16) == 0)
		*pp = integrity_table;
	else {
		*pp = NULL;
		return 1;
	}
	return 0;
}

F int
cuGetProcAddress(const char *s, void **pfn, int v, uint64_t flags)
{
	return cuGetProcAddress_v2(s, pfn, v, flags, NULL);
}

F int
cuGetProcAddress_v2(const char *s, void **pfn, int v, uint64_t flags,
    int *status)
{
	void *f = NULL;

	if (strcmp(s, "cuInit") == 0)
		f = (void *)cuInit;
	else if (strcmp(s, "cuGetExportTable") == 0)
		f = (void *)cuGetExportTable;
	else if (strcmp(s, "cuGetProcAddress") == 0)
		f = v >= 12000 ? (void *)cuGetProcAddress_v2 :
		    (void *)cuGetProcAddress;
	*pfn = f;
	if (status != NULL)
		*status = f != NULL ? 0 : 1;
	return 0;
}
