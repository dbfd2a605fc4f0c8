/*
 * tabletrace: a libcuda.so.1 for the GPU machine that forwards every
 * export to the real driver and traces the private export tables.  Its
 * cuGetExportTable hands out a copy of each table the real driver returns,
 * each function slot replaced by a trampoline (tramp.S) that logs the
 * call's arguments, calls the real slot, and logs what it returned and
 * what it wrote (ttcore.c).  What is the driver's own here: the lookups
 * (cuGetProcAddress*) that must come back to the tracer, and the
 * integrity hash cudart checks over the tables it was given.  README says
 * how to use it and what the log holds.
 *
 * Environment: TABLETRACE_REAL (the real driver's path), TABLETRACE_PROC=1
 * (log every cuGetProcAddress lookup too), and ttcore.c's.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tabletrace.h"
#include "integrity.h"

#define EXPORT		__attribute__((visibility("default")))
#define TT_ABSENT	999	/* CUDA_ERROR_UNKNOWN: no such real function */

#define UUID_CUDART	"6bd5fb6c-5bf4e74a-8987d939-12fd9df9"
#define UUID_INTEGRITY	"d4082055-bde6704b-8d34ba12-3c66e1f2"

typedef int (*export_fn)(const void **, const void *);
typedef int (*proc1_fn)(const char *, void **, int, uint64_t);
typedef int (*proc2_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*intp_fn)(int *);
typedef int (*dev_fn)(int *, int);
typedef int (*attr_fn)(int *, int, int);
typedef int (*uuid_fn)(uint8_t *, int);

static export_fn	 real_export;
static proc1_fn		 real_proc1;
static proc2_fn		 real_proc2;
static int		 want_proc;

EXPORT int	cuGetExportTable(const void **, const void *);
EXPORT int	cuGetProcAddress(const char *, void **, int, uint64_t);
EXPORT int	cuGetProcAddress_v2(const char *, void **, int, uint64_t, int *);

static void	cuda_loaded(void *);
static const char *cuda_partner(const char *);
static void	integrity_redo(struct tt_regs *, struct tt_table *,
		    struct tt_line *);

const struct tt_lib tt_lib = {
	.soname = "libcuda.so.1",
	.env_real = "TABLETRACE_REAL",
	.absent = TT_ABSENT,
	.loaded = cuda_loaded,
	.partner = cuda_partner,
	.ret = integrity_redo,
};

static void
cuda_loaded(void *real)
{
	const char *env;

	want_proc = (env = getenv("TABLETRACE_PROC")) != NULL && *env == '1';
	if (real == NULL)
		return;
	real_export = (export_fn)dlsym(real, "cuGetExportTable");
	real_proc1 = (proc1_fn)dlsym(real, "cuGetProcAddress");
	real_proc2 = (proc2_fn)dlsym(real, "cuGetProcAddress_v2");
}

/*
 * CUDART_INTERFACE and INTEGRITY_CHECK go together: cudart hashes the
 * addresses of both (dark-api.md §3), so either both are copies, and
 * integrity_redo redoes the hash over the copies, or neither is.
 */
static const char *
cuda_partner(const char *name)
{
	if (strcmp(name, UUID_CUDART) == 0)
		return UUID_INTEGRITY;
	if (strcmp(name, UUID_INTEGRITY) == 0)
		return UUID_CUDART;
	return NULL;
}

EXPORT int
cuGetExportTable(const void **pp, const void *id)
{
	tt_init();
	if (real_export == NULL)
		return TT_ABSENT;
	return tt_export(pp, id, real_export(pp, id),
	    (uintptr_t)__builtin_return_address(0));
}

/* Our own functions where the real lookup gave the real ones. */
static void
proc_swap(void **pfn)
{
	if (pfn == NULL || *pfn == NULL || tt_real() == NULL)
		return;
	if (*pfn == (void *)real_export)
		*pfn = (void *)cuGetExportTable;
	else if (*pfn == (void *)real_proc1)
		*pfn = (void *)cuGetProcAddress;
	else if (*pfn == (void *)real_proc2)
		*pfn = (void *)cuGetProcAddress_v2;
}

static void
proc_log(const char *v, const char *sym, int ver, uint64_t flags, int rc,
    void **pfn, int *status, uintptr_t caller)
{
	struct tt_line l;
	char name[128];

	if (!want_proc && !(sym != NULL && rc == 0 && pfn != NULL &&
	    (*pfn == (void *)cuGetExportTable ||
	    *pfn == (void *)cuGetProcAddress ||
	    *pfn == (void *)cuGetProcAddress_v2)))
		return;
	memset(name, 0, sizeof name);
	if (sym == NULL || tt_peek((uintptr_t)sym, name, sizeof name - 1) == 0)
		strcpy(name, "(null)");
	tt_line_start(&l, "proc");
	tt_line_add(&l, " %s %s@%d flags=%lu rc=%d", v, name, ver,
	    (unsigned long)flags, rc);
	if (status != NULL)
		tt_line_add(&l, " status=%d", *status);
	if (pfn != NULL && *pfn != NULL) {
		tt_line_add(&l, " fn=");
		tt_line_where(&l, (uintptr_t)*pfn);
	}
	tt_line_add(&l, " caller=");
	tt_line_where(&l, caller);
	tt_line_end(&l);
}

EXPORT int
cuGetProcAddress(const char *sym, void **pfn, int ver, uint64_t flags)
{
	int rc;

	tt_init();
	if (real_proc1 == NULL)
		return TT_ABSENT;
	rc = real_proc1(sym, pfn, ver, flags);
	if (rc == 0)
		proc_swap(pfn);
	proc_log("v1", sym, ver, flags, rc, pfn, NULL,
	    (uintptr_t)__builtin_return_address(0));
	return rc;
}

EXPORT int
cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags,
    int *status)
{
	int rc;

	tt_init();
	if (real_proc2 == NULL)
		return TT_ABSENT;
	rc = real_proc2(sym, pfn, ver, flags, status);
	if (rc == 0)
		proc_swap(pfn);
	proc_log("v2", sym, ver, flags, rc, pfn, status,
	    (uintptr_t)__builtin_return_address(0));
	return rc;
}

/* The device list and driver version, as cudart reads them. */
static struct integrity_dev *
integrity_devs(size_t *np, uint32_t *drv)
{
	void *real = tt_real();
	intp_fn count = (intp_fn)dlsym(real, "cuDeviceGetCount");
	intp_fn version = (intp_fn)dlsym(real, "cuDriverGetVersion");
	dev_fn get = (dev_fn)dlsym(real, "cuDeviceGet");
	attr_fn attr = (attr_fn)dlsym(real, "cuDeviceGetAttribute");
	uuid_fn uuid = (uuid_fn)dlsym(real, "cuDeviceGetUuid_v2");
	struct integrity_dev *d;
	int n = 0, i, dev, v = 0;

	*np = 0;
	if (!count || !version || !get || !attr || !uuid ||
	    version(&v) != 0 || count(&n) != 0 || n < 0 || n > 1024)
		return NULL;
	*drv = (uint32_t)v;
	if ((d = calloc((size_t)n + 1, sizeof *d)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		if (get(&dev, i) != 0 || uuid(d[i].uuid, dev) != 0 ||
		    attr(&d[i].pci_domain, 50, dev) != 0 ||
		    attr(&d[i].pci_bus, 33, dev) != 0 ||
		    attr(&d[i].pci_device, 34, dev) != 0) {
			free(d);
			return NULL;
		}
	}
	*np = (size_t)n;
	return d;
}

/*
 * INTEGRITY_CHECK [1] answered over the real tables; cudart checks it
 * over the copies it was given.  Checks our hash against the real one,
 * then writes the hash over the copies.  Other slots: nothing to add.
 */
static void
integrity_redo(struct tt_regs *r, struct tt_table *tb, struct tt_line *l)
{
	struct integrity_in in;
	uint64_t out[2], mine[2];
	struct tt_table *cudart;

	if (r->idx % TT_NSLOTS != 1 || strcmp(tb->name, UUID_INTEGRITY) != 0)
		return;
	if ((uint32_t)r->ret[0] != 0 || r->gp[0] % 10 < 2 ||
	    tt_peek(r->gp[2], out, 16) != 16)
		return;
	cudart = tt_table_named(UUID_CUDART);
	memset(&in, 0, sizeof in);
	if ((in.devs = integrity_devs(&in.ndevs, &in.driver_version)) == NULL) {
		tt_line_add(l, " integrity=no-devices");
		return;
	}
	in.version = (uint32_t)r->gp[0];
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.unix_seconds = r->gp[1];
	in.cudart_table = cudart ? (uintptr_t)cudart->real : 0;
	in.integrity_table = (uintptr_t)tb->real;
	in.slot1 = (uintptr_t)tb->slot[1];
	integrity_hash(&in, mine);
	tt_line_add(l, " integrity-real=%s", memcmp(mine, out, 16) == 0 ?
	    "same" : "DIFFERS");
	in.cudart_table = cudart ? (uintptr_t)cudart->copy : 0;
	in.integrity_table = (uintptr_t)tb->copy;
	in.slot1 = (uintptr_t)tb->copy[1];
	integrity_hash(&in, mine);
	memcpy((void *)r->gp[2], mine, 16);
	tt_line_add(l, " integrity-copy=%016lx%016lx", (unsigned long)mine[0],
	    (unsigned long)mine[1]);
	free((void *)in.devs);
}
