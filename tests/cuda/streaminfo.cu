// streaminfo: stream queries (cuStreamGetFlags, GetPriority, GetDevice,
// GetCtx, GetCtx_v2, GetId, their _ptsz variants through cuGetProcAddress
// with the per-thread flag, and the runtime's cudaStreamGet*) for the
// legacy stream (NULL and CU_STREAM_LEGACY), the per-thread stream
// (CU_STREAM_PER_THREAD, and NULL in a _ptsz call), a default-flag stream,
// a non-blocking stream, and streams of the lowest and highest priority.
// Ids print as relations only (stable across two calls, which handles share
// one), never raw; error codes print as numbers (NULL outputs, no current
// context).
#include <cstdio>
#include <cstdlib>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "streaminfo"

static int nfail;

#define CK(x) ck((x), __FILE__, __LINE__)
#define DK(x) dk((x), __FILE__, __LINE__)

static void
ck(cudaError_t e, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    cudaGetErrorName(e), cudaGetErrorString(e));
	exit(2);
}

static void
dk(CUresult r, const char *file, int line)
{
	const char *n = "?", *s = "?";

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &n);
	cuGetErrorString(r, &s);
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line, n, s);
	exit(2);
}

#define TESTUTIL	(TU_EXPECT)
#include "testutil.h"

typedef CUresult (*flags_fn)(CUstream, unsigned int *);
typedef CUresult (*prio_fn)(CUstream, int *);
typedef CUresult (*dev_fn)(CUstream, CUdevice *);
typedef CUresult (*ctx_fn)(CUstream, CUcontext *);
typedef CUresult (*ctx2_fn)(CUstream, CUcontext *, CUgreenCtx *);
typedef CUresult (*id_fn)(CUstream, unsigned long long *);

struct api {
	flags_fn	flags;
	prio_fn		prio;
	dev_fn		dev;
	ctx_fn		ctx;
	ctx2_fn		ctx2;
	id_fn		id;
};

static void
getv(const char *name, void **fn, int version, cuuint64_t flags)
{
	CUdriverProcAddressQueryResult q;

	DK(cuGetProcAddress(name, fn, version, flags, &q));
	if (*fn == NULL || q != CU_GET_PROC_ADDRESS_SUCCESS) {
		printf(NAME ": FAIL no %s\n", name);
		exit(1);
	}
}

// The calls as cudart finds them: flags 0, or the per-thread variants
// (_ptsz); cuStreamGetCtx is cuStreamGetCtx_v2 from 12.5 on.
static void
load(struct api *a, cuuint64_t f)
{
	getv("cuStreamGetFlags", (void **)&a->flags, 13000, f);
	getv("cuStreamGetPriority", (void **)&a->prio, 13000, f);
	getv("cuStreamGetDevice", (void **)&a->dev, 13000, f);
	getv("cuStreamGetCtx", (void **)&a->ctx, 12000, f);
	getv("cuStreamGetCtx", (void **)&a->ctx2, 13000, f);
	getv("cuStreamGetId", (void **)&a->id, 13000, f);
}

#define NS 8

// One stream's answers through one set of entry points; its id in *id.
static void
show(const char *label, const struct api *a, CUstream s, CUcontext cur,
    int rt, unsigned long long *id)
{
	unsigned int fl = 99;
	int pr = 99;
	CUdevice dv = -1;
	CUcontext c = NULL, c2 = NULL;
	CUgreenCtx g = (CUgreenCtx)&fl;
	unsigned long long i1 = 0, i2 = 0;
	CUresult r[7];

	r[0] = a->flags(s, &fl);
	r[1] = a->prio(s, &pr);
	r[2] = a->dev(s, &dv);
	r[3] = a->ctx(s, &c);
	r[4] = a->ctx2(s, &c2, &g);
	r[5] = a->id(s, &i1);
	r[6] = a->id(s, &i2);
	printf("%-22s codes %d %d %d %d %d %d %d flags %u priority %d "
	    "device %d ctx current %s v2 ctx current %s green NULL %s "
	    "id stable %s\n", label, r[0], r[1], r[2], r[3], r[4], r[5], r[6],
	    fl, pr, (int)dv, c == cur ? "yes" : "no",
	    c2 == cur ? "yes" : "no", g == NULL ? "yes" : "no",
	    i1 == i2 ? "yes" : "no");
	*id = i1;
	if (rt) {
		unsigned int rfl = 99;
		int rpr = 99, rdv = -1;
		unsigned long long rid = 0;
		cudaError_t e[4];

		e[0] = cudaStreamGetFlags((cudaStream_t)s, &rfl);
		e[1] = cudaStreamGetPriority((cudaStream_t)s, &rpr);
		e[2] = cudaStreamGetDevice((cudaStream_t)s, &rdv);
		e[3] = cudaStreamGetId((cudaStream_t)s, &rid);
		printf("%-22s runtime codes %d %d %d %d flags %u priority %d "
		    "device %d id as the driver's %s\n", label, e[0], e[1],
		    e[2], e[3], rfl, rpr, rdv, rid == i1 ? "yes" : "no");
	}
}

// Each id as the index of the first stream that has the same one.
static void
classes(const char *label, const unsigned long long *id, int n)
{
	int i, j;

	printf("%s id classes:", label);
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && id[j] != id[i]; j++)
			;
		printf(" %d", j);
	}
	printf("\n");
}

int
main(void)
{
	struct api d, p;
	CUcontext cur = NULL;
	cudaStream_t sdef, snb, slo, shi, snew;
	int least, greatest;
	unsigned long long id[NS], pid[NS], nid;
	const char *names[NS] = { "NULL", "CU_STREAM_LEGACY",
	    "CU_STREAM_PER_THREAD", "default", "non-blocking", "lowest",
	    "highest", "default again" };
	CUstream st[NS];
	char label[64];
	unsigned int fl;
	int pr, i, distinct;
	CUcontext c;
	CUdevice dv;
	unsigned long long u;

	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	load(&d, CU_GET_PROC_ADDRESS_DEFAULT);
	load(&p, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	DK(cuCtxGetCurrent(&cur));
	CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
	printf("priority range: least %d greatest %d\n", least, greatest);
	CK(cudaStreamCreate(&sdef));
	CK(cudaStreamCreateWithFlags(&snb, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithPriority(&slo, cudaStreamDefault, least));
	CK(cudaStreamCreateWithPriority(&shi, cudaStreamNonBlocking,
	    greatest));
	CK(cudaStreamCreate(&snew));
	st[0] = NULL;
	st[1] = CU_STREAM_LEGACY;
	st[2] = CU_STREAM_PER_THREAD;
	st[3] = (CUstream)sdef;
	st[4] = (CUstream)snb;
	st[5] = (CUstream)slo;
	st[6] = (CUstream)shi;
	st[7] = (CUstream)sdef;
	(void)snew;

	for (i = 0; i < NS; i++)
		show(names[i], &d, st[i], cur, 1, &id[i]);
	for (i = 0; i < NS; i++) {
		snprintf(label, sizeof label, "%s ptsz", names[i]);
		show(label, &p, st[i], cur, 0, &pid[i]);
	}
	classes("driver", id, NS);
	classes("ptsz", pid, NS);
	distinct = 1;
	for (i = 0; i < NS; i++)
		if (id[i] != pid[i])
			distinct = 0;
	printf("ptsz ids as the plain calls': %s\n", distinct ? "yes" : "no");
	printf("ptsz NULL id is the per-thread stream's: %s\n",
	    pid[0] == id[2] ? "yes" : "no");

	// A stream made after the others gets an id none of them has, also
	// when one was destroyed before.
	CK(cudaStreamDestroy(sdef));
	CK(cudaStreamDestroy(snew));
	CK(cudaStreamCreate(&snew));
	DK(cuStreamGetId((CUstream)snew, &nid));
	distinct = 1;
	for (i = 0; i < NS; i++)
		if (id[i] == nid)
			distinct = 0;
	expect(distinct, "a new stream's id is new");

	// NULL outputs.
	printf("NULL outputs: flags %d priority %d device %d ctx %d ctx_v2 %d "
	    "id %d\n", (int)cuStreamGetFlags((CUstream)snb, NULL),
	    (int)cuStreamGetPriority((CUstream)snb, NULL),
	    (int)cuStreamGetDevice((CUstream)snb, NULL),
	    (int)cuStreamGetCtx((CUstream)snb, NULL),
	    (int)d.ctx2((CUstream)snb, NULL, NULL),
	    (int)cuStreamGetId((CUstream)snb, NULL));

	// No current context: the special streams have none to answer for.
	DK(cuCtxSetCurrent(NULL));
	printf("no context: legacy ctx %d",
	    (int)cuStreamGetCtx(CU_STREAM_LEGACY, &c));
	printf(" per-thread ctx %d", (int)cuStreamGetCtx(CU_STREAM_PER_THREAD,
	    &c));
	printf(" legacy flags %d", (int)cuStreamGetFlags(CU_STREAM_LEGACY, &fl));
	printf(" legacy priority %d", (int)cuStreamGetPriority(NULL, &pr));
	printf(" legacy device %d", (int)cuStreamGetDevice(NULL, &dv));
	printf(" legacy id %d\n", (int)cuStreamGetId(NULL, &u));
	c = NULL;
	i = (int)cuStreamGetCtx((CUstream)snb, &c);
	printf("no context: a stream's ctx %d (its own %s)\n", i,
	    c == cur ? "yes" : "no");
	DK(cuCtxSetCurrent(cur));

	CK(cudaStreamDestroy(snb));
	CK(cudaStreamDestroy(slo));
	CK(cudaStreamDestroy(shi));
	CK(cudaStreamDestroy(snew));
	CK(cudaDeviceSynchronize());
	if (nfail) {
		printf(NAME ": FAIL %d\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
