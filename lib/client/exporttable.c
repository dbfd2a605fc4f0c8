/*
 * cuGetExportTable (dark-api.md §2): the driver's hidden tables that
 * cudart, cuBLAS and cuBLASLt need besides the public API.  All are
 * static and process-wide, so every call and every cudart instance gets
 * the same address, and each slot is answered locally; what needs the GPU
 * comes through the remoting hooks (hooks.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "client.h"
#include "cls.h"
#include "hooks.h"
#include "integrity.h"
#include "log.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* Word 0 of most tables: the table's size in bytes. */
#define SIZEWORD(t)	((void *)(uintptr_t)sizeof(t))
#define SLOT(f)		((void *)(f))

/*
 * Slots that no library was seen to call.  Each is its own function so
 * that the log names the slot; a call means a library has changed and
 * the table needs another look.
 */
static CUresult
export_unseen(const char *table, int slot, int *said, CUresult rc)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		log_warn("cuGetExportTable: %s table slot %d: not implemented",
		    table, slot);
	return rc;
}

#define UNSEEN(t, i, rc)						\
static CUresult								\
t##_unseen##i(void)							\
{									\
	static int said;						\
	return export_unseen(#t, i, &said, rc);				\
}
#define UNSEEN10(t, d, rc)						\
	UNSEEN(t, d##0, rc) UNSEEN(t, d##1, rc) UNSEEN(t, d##2, rc)	\
	UNSEEN(t, d##3, rc) UNSEEN(t, d##4, rc) UNSEEN(t, d##5, rc)	\
	UNSEEN(t, d##6, rc) UNSEEN(t, d##7, rc) UNSEEN(t, d##8, rc)	\
	UNSEEN(t, d##9, rc)
#define REF(t, i)	SLOT(t##_unseen##i)
#define REF10(t, d)							\
	REF(t, d##0), REF(t, d##1), REF(t, d##2), REF(t, d##3),		\
	REF(t, d##4), REF(t, d##5), REF(t, d##6), REF(t, d##7),		\
	REF(t, d##8), REF(t, d##9)

#define NOTSUP	CUDA_ERROR_NOT_SUPPORTED

/*
 * Each table starts with an unseen stub in every word; export_fill()
 * then sets the size word and the slots that are answered.
 */
UNSEEN10(cudart, , NOTSUP)
UNSEEN(cudart, 10, NOTSUP) UNSEEN(cudart, 11, NOTSUP) UNSEEN(cudart, 12, NOTSUP)
static void *cudart_table[13] = {
	REF10(cudart, ), REF(cudart, 10), REF(cudart, 11), REF(cudart, 12)
};

/* The hook and check tables' slots look void: answer 0. */
UNSEEN(hooks, 0, 0) UNSEEN(hooks, 1, 0) UNSEEN(hooks, 2, 0) UNSEEN(hooks, 3, 0)
UNSEEN(hooks, 4, 0) UNSEEN(hooks, 5, 0) UNSEEN(hooks, 6, 0)
static void *hooks_table[7] = {
	REF(hooks, 0), REF(hooks, 1), REF(hooks, 2), REF(hooks, 3),
	REF(hooks, 4), REF(hooks, 5), REF(hooks, 6)
};

UNSEEN(tls, 0, NOTSUP) UNSEEN(tls, 1, NOTSUP) UNSEEN(tls, 2, NOTSUP)
static void *tls_table[3] = { REF(tls, 0), REF(tls, 1), REF(tls, 2) };

UNSEEN10(checks, , 0)
UNSEEN(checks, 10, 0) UNSEEN(checks, 11, 0) UNSEEN(checks, 12, 0)
UNSEEN(checks, 13, 0) UNSEEN(checks, 14, 0)
static void *checks_table[15] = {
	REF10(checks, ), REF(checks, 10), REF(checks, 11), REF(checks, 12),
	REF(checks, 13), REF(checks, 14)
};

UNSEEN(integrity, 0, NOTSUP) UNSEEN(integrity, 1, NOTSUP)
UNSEEN(integrity, 2, NOTSUP)
static void *integrity_table[3] = {
	REF(integrity, 0), REF(integrity, 1), REF(integrity, 2)
};

UNSEEN10(cublas, , NOTSUP) UNSEEN10(cublas, 1, NOTSUP)
UNSEEN10(cublas, 2, NOTSUP) UNSEEN10(cublas, 3, NOTSUP)
UNSEEN10(cublas, 4, NOTSUP) UNSEEN10(cublas, 5, NOTSUP)
UNSEEN10(cublas, 6, NOTSUP) UNSEEN10(cublas, 7, NOTSUP)
UNSEEN10(cublas, 8, NOTSUP)
UNSEEN(cublas, 90, NOTSUP) UNSEEN(cublas, 91, NOTSUP)
UNSEEN(cublas, 92, NOTSUP)
static void *cublas_table[93] = {
	REF10(cublas, ), REF10(cublas, 1), REF10(cublas, 2), REF10(cublas, 3),
	REF10(cublas, 4), REF10(cublas, 5), REF10(cublas, 6), REF10(cublas, 7),
	REF10(cublas, 8), REF(cublas, 90), REF(cublas, 91), REF(cublas, 92)
};

UNSEEN10(cluster, , NOTSUP)
UNSEEN(cluster, 10, NOTSUP) UNSEEN(cluster, 11, NOTSUP)
UNSEEN(cluster, 12, NOTSUP) UNSEEN(cluster, 13, NOTSUP)
UNSEEN(cluster, 14, NOTSUP) UNSEEN(cluster, 15, NOTSUP)
UNSEEN(cluster, 16, NOTSUP)
static void *cluster_table[17] = {
	REF10(cluster, ), REF(cluster, 10), REF(cluster, 11), REF(cluster, 12),
	REF(cluster, 13), REF(cluster, 14), REF(cluster, 15), REF(cluster, 16)
};

UNSEEN10(fft, , NOTSUP) UNSEEN10(fft, 1, NOTSUP) UNSEEN10(fft, 2, NOTSUP)
UNSEEN10(fft, 3, NOTSUP) UNSEEN10(fft, 4, NOTSUP) UNSEEN10(fft, 5, NOTSUP)
UNSEEN10(fft, 6, NOTSUP) UNSEEN10(fft, 7, NOTSUP) UNSEEN10(fft, 8, NOTSUP)
UNSEEN(fft, 90, NOTSUP) UNSEEN(fft, 91, NOTSUP) UNSEEN(fft, 92, NOTSUP)
UNSEEN(fft, 93, NOTSUP) UNSEEN(fft, 94, NOTSUP) UNSEEN(fft, 95, NOTSUP)
UNSEEN(fft, 96, NOTSUP) UNSEEN(fft, 97, NOTSUP) UNSEEN(fft, 98, NOTSUP)
static void *fft_table[99] = {
	REF10(fft, ), REF10(fft, 1), REF10(fft, 2), REF10(fft, 3),
	REF10(fft, 4), REF10(fft, 5), REF10(fft, 6), REF10(fft, 7),
	REF10(fft, 8), REF(fft, 90), REF(fft, 91), REF(fft, 92), REF(fft, 93),
	REF(fft, 94), REF(fft, 95), REF(fft, 96), REF(fft, 97), REF(fft, 98)
};

/*
 * CUDART_INTERFACE [2]: the device's primary-context handle.  Like the
 * real slot it takes no reference and does not make the context current.
 */
static CUresult
cudart_primary_ctx(CUcontext *out, CUdevice dev)
{
	CUresult rc;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	return client_primary_ctx(dev, out);
}

/*
 * TOOLS_RUNTIME_CALLBACK_HOOKS [2] and [6]: zeroed driver-static buffers,
 * larger than the sizes reported (ZLUDA reads the first as 1024 u32).
 */
static uint64_t	 hooks_buf2[4096 / sizeof(uint64_t)];
static uint64_t	 hooks_buf6[64 / sizeof(uint64_t)];

static void
hooks_get2(void **buf, size_t *size)
{
	if (buf != NULL)
		*buf = hooks_buf2;
	if (size != NULL)
		*size = 1024;
}

static void
hooks_get6(void **buf, size_t *size)
{
	if (buf != NULL)
		*buf = hooks_buf6;
	if (size != NULL)
		*size = 14;
}

/*
 * TOOLS_TLS [2]: the real driver writes a process object that cuBLAS
 * passes back to the 21318c60 slots.  Writing nothing leaves cuBLAS its
 * own NULL, the emulation validated with SGEMM and torch.
 */
static CUresult
tls_get(void **out, uint32_t kind)
{
	return CUDA_SUCCESS;
}

/* CONTEXT_LOCAL_STORAGE: a NULL context means the current one. */
static CUresult
cls_resolve(CUcontext *c)
{
	if (*c == NULL && (*c = client_ctx_current()) == NULL) {
		log_trace("context-local storage: no current context in "
		    "this thread (201)");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}

static CUresult
cls_slot_put(CUcontext c, void *key, void *val, cls_dtor dtor)
{
	CUresult rc;

	if ((rc = cls_resolve(&c)) != CUDA_SUCCESS)
		return rc;
	return cls_put(c, key, val, dtor);
}

static CUresult
cls_slot_del(CUcontext c, void *key)
{
	CUresult rc;

	if ((rc = cls_resolve(&c)) != CUDA_SUCCESS)
		return rc;
	return cls_del(c, key);
}

static CUresult
cls_slot_get(void **val, CUcontext c, void *key)
{
	CUresult rc;

	if (val == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cls_resolve(&c)) != CUDA_SUCCESS)
		return rc;
	return cls_get(c, key, val);
}

/* No size word: three functions and a NULL. */
static void *const cls_table[4] = {
	SLOT(cls_slot_put), SLOT(cls_slot_del), SLOT(cls_slot_get), NULL
};

/* CONTEXT_CHECKS [2]: *out1 = 0, *out2 untouched, for any context. */
static CUresult
checks_ctx(CUcontext c, uint32_t *out1, void **out2)
{
	if (out1 != NULL)
		*out1 = 0;
	return CUDA_SUCCESS;
}

/* CONTEXT_CHECKS [3]. */
static uint32_t
checks_init(void)
{
	return 0;
}

/*
 * INTEGRITY_CHECK [1]: cudart calls it with versions V, V+1, V+2 and
 * checks the answers against its own.  Every input is local: this
 * process, the calling thread, our tables, and the devices as cudart
 * reads them through cuDeviceGetUuid and cuDeviceGetAttribute.
 */
static CUresult
integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t out[2])
{
	struct integrity_in in;
	struct integrity_dev *devs = NULL;
	const struct client_device *d;
	int i, n;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&in, 0, sizeof in);
	n = client_device_count();
	if (n > 0 && version % 10 > 1) {
		if ((devs = calloc(n, sizeof *devs)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (i = 0; i < n; i++) {
			if ((d = client_device(i)) == NULL)
				break;
			memcpy(devs[i].uuid, d->uuid.bytes, 16);
			devs[i].pci_domain =
			    d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID];
			devs[i].pci_bus =
			    d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID];
			devs[i].pci_device =
			    d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID];
		}
		in.ndevs = i;
	}
	in.devs = devs;
	in.driver_version = CLIENT_DRIVER_VERSION;
	in.version = version;
	in.pid = (uint32_t)getpid();
	in.tid = (uint32_t)(uintptr_t)pthread_self();
	in.cudart_table = (uintptr_t)cudart_table;
	in.integrity_table = (uintptr_t)integrity_table;
	in.slot1 = (uintptr_t)integrity_table[1];
	in.unix_seconds = unix_seconds;
	integrity_hash(&in, out);
	free(devs);
	return CUDA_SUCCESS;
}

/*
 * 21318c60, cuBLAS's private table.  Argument 0 is the TOOLS_TLS object,
 * NULL under our TOOLS_TLS.  What the values mean is unknown (§6.2); these
 * are the answers validated with SGEMM and torch.
 */
static uint64_t	 cublas_obj[4096 / sizeof(uint64_t)];

static CUresult
cublas_get4(void *obj, uint64_t *out)
{
	if (out != NULL)
		*out = obj != NULL;
	return CUDA_SUCCESS;
}

static CUresult
cublas_get39(void *obj, void *from51, uint64_t *out)
{
	if (out != NULL)
		*out = 0;
	return CUDA_SUCCESS;
}

static CUresult
cublas_get51(void *obj, uint64_t arg, void **out)
{
	if (out != NULL)
		*out = cublas_obj;
	return CUDA_SUCCESS;
}

/*
 * 1734dc26 [4], cuBLASLt's TPC-to-virtual-GPC map (dark-api.md 6.1): the
 * server's own arrays for the current context's device, fetched once per
 * device, in copies of our own; without them (801) cuBLASLt uses its
 * identity permutation.  The table itself must exist: cuBLASLt does not
 * check for NULL.
 */
static CUresult
cluster_tpc_map(uint8_t **vgpc, uint8_t **mtpc)
{
	if (vgpc == NULL || mtpc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return client_tpc_map(vgpc, mtpc);
}

/* 1734dc26 [13]: frees what [4] returned. */
static CUresult
cluster_tpc_map_free(uint8_t *vgpc, uint8_t *mtpc)
{
	free(vgpc);
	free(mtpc);
	return CUDA_SUCCESS;
}

/*
 * 6e163fbe [7], asked for by cuFFT (export-tables.md): the functions of a
 * module that cuFFT loaded from an image without naming its kernel, each
 * given to fn(arg, function); the answer is their count, which cuFFT
 * wants to be 1 (the real driver answered 1 for each of its modules).
 * The context is the one the module was loaded in.
 */
static int
fft_module_functions(CUcontext ctx, CUmodule mod,
    void (*fn)(void *, CUfunction), void *arg)
{
	CUfunction *fs;
	unsigned int i, n = 0;

	(void)ctx;
	if (fn == NULL || cuModuleGetFunctionCount(&n, mod) != CUDA_SUCCESS ||
	    (fs = calloc(n + 1, sizeof *fs)) == NULL)
		return 0;
	if (n > 0 && cuModuleEnumerateFunctions(fs, n, mod) != CUDA_SUCCESS)
		n = 0;
	for (i = 0; i < n; i++)
		fn(arg, fs[i]);
	free(fs);
	return (int)n;
}

static void
export_fill(void)
{
	cudart_table[0] = SIZEWORD(cudart_table);
	cudart_table[2] = SLOT(cudart_primary_ctx);
	cudart_table[10] = NULL;

	hooks_table[0] = SIZEWORD(hooks_table);
	hooks_table[2] = SLOT(hooks_get2);
	hooks_table[6] = SLOT(hooks_get6);

	tls_table[0] = SIZEWORD(tls_table);
	tls_table[2] = SLOT(tls_get);

	checks_table[0] = SIZEWORD(checks_table);
	checks_table[2] = SLOT(checks_ctx);
	checks_table[3] = SLOT(checks_init);

	integrity_table[0] = SIZEWORD(integrity_table);
	integrity_table[1] = SLOT(integrity_check);

	cublas_table[0] = SIZEWORD(cublas_table);
	cublas_table[4] = SLOT(cublas_get4);
	cublas_table[39] = SLOT(cublas_get39);
	cublas_table[51] = SLOT(cublas_get51);
	cublas_table[91] = NULL;

	cluster_table[0] = SIZEWORD(cluster_table);
	cluster_table[4] = SLOT(cluster_tpc_map);
	cluster_table[13] = SLOT(cluster_tpc_map_free);

	fft_table[0] = SIZEWORD(fft_table);
	fft_table[7] = SLOT(fft_module_functions);
	fft_table[93] = NULL;
}

/* The tables by UUID, bytes in wire order.  A NULL table is refused. */
static const struct export_entry {
	uint8_t		 uuid[16];
	const char	*name;
	const void	*table;
} export_tables[] = {
	{ { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
	    0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	  "CUDART_INTERFACE", cudart_table },
	{ { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
	    0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
	  "TOOLS_RUNTIME_CALLBACK_HOOKS", hooks_table },
	{ { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
	    0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
	  "TOOLS_TLS", tls_table },
	{ { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
	    0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
	  "CONTEXT_LOCAL_STORAGE", cls_table },
	{ { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
	    0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
	  "CONTEXT_CHECKS", checks_table },
	{ { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
	    0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
	  "INTEGRITY_CHECK", integrity_table },
	{ { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
	    0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
	  "cuBLAS private", cublas_table },
	{ { 0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
	    0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca },
	  "cluster prototype", cluster_table },
	{ { 0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d,
	    0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e },
	  "cuFFT private", fft_table },
	/* Optional: everything ran with these refused. */
	{ { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
	    0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 },
	  "cudart 13 (unnamed)", NULL },
	{ { 0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47,
	    0xb0, 0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9 },
	  "NVML private", NULL },
};

static pthread_once_t	 export_once = PTHREAD_ONCE_INIT;

CUresult
cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	const struct export_entry *e;
	const unsigned char *u;
	size_t i;

	if (ppExportTable == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*ppExportTable = NULL;
	if (pExportTableId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&export_once, export_fill);
	for (i = 0; i < nitems(export_tables); i++) {
		e = &export_tables[i];
		if (memcmp(e->uuid, pExportTableId->bytes, 16) != 0)
			continue;
		if (e->table == NULL) {
			log_debug("cuGetExportTable: %s: refused", e->name);
			return CUDA_ERROR_INVALID_VALUE;
		}
		*ppExportTable = e->table;
		return CUDA_SUCCESS;
	}
	u = (const unsigned char *)pExportTableId->bytes;
	log_warn("cuGetExportTable: %02x%02x%02x%02x-%02x%02x%02x%02x-"
	    "%02x%02x%02x%02x-%02x%02x%02x%02x: unknown table, refused",
	    u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
	    u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return CUDA_ERROR_INVALID_VALUE;
}
