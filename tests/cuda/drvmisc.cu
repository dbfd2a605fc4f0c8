// drvmisc: the driver's odd corners (links -lcuda): deprecated and
// Windows-only device queries, execution affinity, context flags and
// usage count, events recorded and waited for by a whole context, the
// legacy launch API (cuParamSet*, cuLaunchGrid), function loading state,
// texture references of a CUDA 12 module, SYNC_MEMOPS, batched copies
// (1D and 3D, failIdx), batched prefetch and discard of managed memory,
// the error log, coredump settings, copies with a NULL host pointer.
// Values and codes, the same locally
// and remotely on one GPU; where Gleam answers differently on purpose
// (async notifications, dma-buf export, checkpointing) only that an
// answer came is printed.
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

// The deprecated calls are among those tested.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define NAME	"drvmisc"
#define CK(x)	check((x), __FILE__, __LINE__)
#define DK(x)	dcheck((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK | TU_SET_U32)
#include "testutil.h"

static void
dcheck(CUresult e, const char *file, int line)
{
	const char *s = "?";

	if (e == CUDA_SUCCESS)
		return;
	cuGetErrorName(e, &s);
	printf(NAME ": CUDA error at %s:%d: %s: %d\n", file, line, s, (int)e);
	exit(2);
}

static int fail;

static int
is_set(const unsigned *h, unsigned v, int n)
{
	for (int i = 0; i < n; i++)
		if (h[i] != (v ^ (unsigned)i))
			return 0;
	return 1;
}

static void
expect(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "WRONG");
	fail += !ok;
}

static int ncb;

static void
log_cb(void *data, CUlogLevel level, char *msg, size_t len)
{
	(void)data;
	(void)level;
	(void)msg;
	(void)len;
	ncb++;
}

static void
devices(CUdevice dev)
{
	char bus[64];
	CUdevice d2 = -1;
	int major = 0, minor = 0, a = 0, b = 0, v;
	CUresult (*total1)(unsigned *, CUdevice);
	unsigned t1 = 0;
	size_t t2 = 0, w = 0;
	CUdevprop p;
	CUatomicOperation ops[3] = { CU_ATOMIC_OPERATION_INTEGER_ADD,
	    CU_ATOMIC_OPERATION_CAS, CU_ATOMIC_OPERATION_FLOAT_ADD };
	unsigned caps[3] = { 0, 0, 0 };
	char luid[8];
	unsigned mask;
	CUasyncCallbackHandle ah;
	CUresult rc;

	DK(cuDeviceGetPCIBusId(bus, sizeof bus, dev));
	DK(cuDeviceGetByPCIBusId(&d2, bus));
	printf("by its bus id: device %d\n", d2);
	printf("bus id codes: garbage %d, no such device %d, NULL %d\n",
	    cuDeviceGetByPCIBusId(&d2, "zz"),
	    cuDeviceGetByPCIBusId(&d2, "ffff:ff:1f.0"),
	    cuDeviceGetByPCIBusId(NULL, bus));

	total1 = (CUresult (*)(unsigned *, CUdevice))dlsym(RTLD_DEFAULT,
	    "cuDeviceTotalMem");
	DK(cuDeviceTotalMem(&t2, dev));
	rc = total1 != NULL ? total1(&t1, dev) : CUDA_ERROR_NOT_FOUND;
	printf("cuDeviceTotalMem v1: code %d, capped v2: %d\n", rc,
	    t1 == (t2 > UINT_MAX ? UINT_MAX : (unsigned)t2));

	DK(cuDeviceComputeCapability(&major, &minor, dev));
	DK(cuDeviceGetAttribute(&a,
	    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	DK(cuDeviceGetAttribute(&b,
	    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	printf("compute capability %d.%d, as attributes: %d\n", major, minor,
	    major == a && minor == b);
	DK(cuDeviceGetProperties(&p, dev));
	printf("properties: threads %d (%d %d %d) grid (%d %d %d) smem %d "
	    "const %d warp %d pitch %d regs %d clock %d align %d\n",
	    p.maxThreadsPerBlock, p.maxThreadsDim[0], p.maxThreadsDim[1],
	    p.maxThreadsDim[2], p.maxGridSize[0], p.maxGridSize[1],
	    p.maxGridSize[2], p.sharedMemPerBlock, p.totalConstantMemory,
	    p.SIMDWidth, p.memPitch, p.regsPerBlock, p.clockRate,
	    p.textureAlign);
	printf("properties NULL: %d\n", cuDeviceGetProperties(NULL, dev));

	DK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 4,
	    dev));
	printf("1D linear texture, float4: %zu", w);
	DK(cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_UNSIGNED_INT8,
	    1, dev));
	printf(", uchar1: %zu; 3 channels: %d\n", w,
	    cuDeviceGetTexture1DLinearMaxWidth(&w, CU_AD_FORMAT_FLOAT, 3, dev));

	rc = cuDeviceGetHostAtomicCapabilities(caps, ops, 3, dev);
	printf("host atomics: code %d, %x %x %x\n", rc, caps[0], caps[1],
	    caps[2]);
	printf("host atomics codes: no operations %d, bad device %d\n",
	    cuDeviceGetHostAtomicCapabilities(caps, NULL, 3, dev),
	    cuDeviceGetHostAtomicCapabilities(caps, ops, 3, 99));
	printf("peer atomics with itself: %d, bad peer %d\n",
	    cuDeviceGetP2PAtomicCapabilities(caps, ops, 3, dev, dev),
	    cuDeviceGetP2PAtomicCapabilities(caps, ops, 3, dev, 99));

	v = -1;
	rc = cuDeviceGetExecAffinitySupport(&v, CU_EXEC_AFFINITY_TYPE_SM_COUNT,
	    dev);
	printf("exec affinity support: code %d, a boolean %d; bad type %d\n",
	    rc, v == 0 || v == 1, cuDeviceGetExecAffinitySupport(&v,
	    CU_EXEC_AFFINITY_TYPE_MAX, dev));

	rc = cuDeviceGetLuid(luid, &mask, dev);
	printf("luid: %d\n", rc);
	rc = cuDeviceRegisterAsyncNotification(dev, NULL, NULL, &ah);
	printf("async notification without a callback: %d\n", rc);
}

static void
contexts(CUdevice dev, CUcontext ctx)
{
	CUexecAffinityParam ap;
	CUcontext c2, att;
	CUevent ev;
	CUstream s;
	unsigned flags = 0, *h, sms;
	int n;
	unsigned *d;
	CUresult rc;

	DK(cuCtxGetExecAffinity(&ap, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
	DK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	    dev));
	sms = ap.param.smCount.val;
	printf("context affinity: type %d, all the SMs %d\n", (int)ap.type,
	    sms == (unsigned)n);

	DK(cuCtxSetFlags(CU_CTX_SCHED_BLOCKING_SYNC));
	DK(cuCtxGetFlags(&flags));
	printf("context flags after set: sched %u; bad %d\n",
	    flags & CU_CTX_SCHED_MASK, cuCtxSetFlags(0x100));
	DK(cuCtxSetFlags(0));

	/* An event recorded for the whole context sees every stream's work. */
	h = (unsigned *)malloc(N * sizeof *h);
	DK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	DK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
	CK(cudaMalloc(&d, N * sizeof *d));
	set_u32<<<N / 256, 256, 0, (cudaStream_t)s>>>(d, 11, N);
	CK(cudaGetLastError());
	rc = cuCtxRecordEvent(ctx, ev);
	printf("cuCtxRecordEvent: %d\n", rc);
	DK(cuEventSynchronize(ev));
	DK(cuMemcpyDtoH(h, (CUdeviceptr)d, N * sizeof *h));
	expect("work before the context's event", is_set(h, 11, N));
	printf("cuCtxWaitEvent: %d, no event %d\n", cuCtxWaitEvent(ctx, ev),
	    cuCtxWaitEvent(ctx, NULL));
	DK(cuCtxSynchronize());
	printf("cuCtxResetPersistingL2Cache: %d\n",
	    cuCtxResetPersistingL2Cache());
	printf("cuFlushGPUDirectRDMAWrites: bad target %d, bad scope %d\n",
	    cuFlushGPUDirectRDMAWrites(
	    (CUflushGPUDirectRDMAWritesTarget)1,
	    CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER),
	    cuFlushGPUDirectRDMAWrites(
	    CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
	    (CUflushGPUDirectRDMAWritesScope)7));
	CK(cudaFree(d));
	DK(cuEventDestroy(ev));
	DK(cuStreamDestroy(s));
	free(h);

	/* The usage count of CUDA 3: two references, the second destroys. */
	DK(cuCtxCreate(&c2, NULL, 0, dev));
	rc = cuCtxAttach(&att, 0);
	printf("cuCtxAttach: %d, the current context %d\n", rc, att == c2);
	printf("cuCtxDetach: %d", cuCtxDetach(c2));
	printf(", again %d\n", cuCtxDetach(c2));
	DK(cuCtxSetCurrent(ctx));
}

static void
legacy(CUfunction f)
{
	CUdeviceptr d;
	CUstream s;
	CUmodule mod;
	CUtexref tr;
	CUsurfref sr;
	CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_MAX;
	unsigned *h = (unsigned *)malloc(N * sizeof *h);
	int n = N;

	DK(cuMemAlloc(&d, N * sizeof *h));
	DK(cuParamSetv(f, 0, &d, sizeof d));
	DK(cuParamSeti(f, 8, 5));
	DK(cuParamSetv(f, 12, &n, sizeof n));
	DK(cuParamSetSize(f, 16));
	DK(cuFuncSetBlockShape(f, 256, 1, 1));
	DK(cuFuncSetSharedSize(f, 0));
	DK(cuLaunchGrid(f, N / 256, 1));
	DK(cuMemcpyDtoH(h, d, N * sizeof *h));
	expect("cuLaunchGrid", is_set(h, 5, N));

	DK(cuStreamCreate(&s, 0));
	DK(cuParamSeti(f, 8, 9));
	DK(cuLaunchGridAsync(f, N / 256, 1, s));
	DK(cuStreamSynchronize(s));
	DK(cuMemcpyDtoH(h, d, N * sizeof *h));
	expect("cuLaunchGridAsync", is_set(h, 9, N));
	DK(cuStreamDestroy(s));

	/* A cooperative launch on "every" device: this one. */
	{
		CUDA_LAUNCH_PARAMS lp, two[2];
		unsigned v = 13;
		void *args[3] = { &d, &v, &n };

		memset(&lp, 0, sizeof lp);
		lp.function = f;
		lp.gridDimX = N / 256;
		lp.gridDimY = lp.gridDimZ = 1;
		lp.blockDimX = 256;
		lp.blockDimY = lp.blockDimZ = 1;
		DK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		lp.hStream = s;
		lp.kernelParams = args;
		DK(cuLaunchCooperativeKernelMultiDevice(&lp, 1, 0));
		DK(cuStreamSynchronize(s));
		DK(cuMemcpyDtoH(h, d, N * sizeof *h));
		expect("cuLaunchCooperativeKernelMultiDevice", is_set(h, 13, N));
		printf("multi-device codes: two on one device %d, flags %d\n",
		    (two[0] = two[1] = lp,
		    cuLaunchCooperativeKernelMultiDevice(two, 2, 0)),
		    cuLaunchCooperativeKernelMultiDevice(&lp, 1, 4));
		DK(cuParamSeti(f, 8, 9));
		DK(cuLaunchGrid(f, N / 256, 1));
		DK(cuStreamDestroy(s));
	}

	/* One block of 256: the rest keeps 9. */
	DK(cuParamSeti(f, 8, 3));
	DK(cuLaunch(f));
	DK(cuMemcpyDtoH(h, d, N * sizeof *h));
	expect("cuLaunch", is_set(h, 3, 256) && h[300] == (9u ^ 300u));
	printf("legacy codes: shape 0 %d, size too big %d, offset past the "
	    "end %d, texref %d\n",
	    cuFuncSetBlockShape(f, 0, 1, 1), cuParamSetSize(f, 1u << 20),
	    cuParamSeti(f, 1 << 20, 0),
	    cuParamSetTexRef(f, CU_PARAM_TR_DEFAULT, NULL));
	DK(cuMemFree(d));
	free(h);

	DK(cuFuncLoad(f));
	DK(cuFuncIsLoaded(&st, f));
	printf("loaded: %d; codes: NULL state %d, NULL function %d\n",
	    (int)st, cuFuncIsLoaded(NULL, f), cuFuncLoad(NULL));
	DK(cuFuncGetModule(&mod, f));
	printf("texture reference: %d, surface reference %d\n",
	    cuModuleGetTexRef(&tr, mod, "tex"),
	    cuModuleGetSurfRef(&sr, mod, "surf"));
}

static void
memory(CUdevice dev)
{
	CUdeviceptr d, d2, m;
	CUstream s;
	unsigned char *h = (unsigned char *)malloc(N), *o = (unsigned char *)
	    calloc(1, N);
	int v = -1, ok;
	unsigned zero = 0, one = 1;
	CUdeviceptr dsts[3], srcs[3];
	size_t sizes[3], idx[2] = { 0, 1 }, failidx = 7;
	CUmemcpyAttributes at[2];
	CUDA_MEMCPY3D_BATCH_OP op[1];
	CUmemLocation loc[2];
	size_t msz[2];
	CUdeviceptr mp[2];
	CUmemDecompressParams dp;
	int fd = -1;
	CUresult rc;

	for (int i = 0; i < N; i++)
		h[i] = (unsigned char)(i * 7 + 1);
	DK(cuMemAlloc(&d, N));
	DK(cuMemAlloc(&d2, N));
	DK(cuPointerSetAttribute(&zero, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	DK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	printf("sync memops unset: %d", v);
	DK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	DK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
	printf(", set: %d; codes: other attribute %d, host memory %d\n", v,
	    cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
	    cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
	    (CUdeviceptr)h));

	/* Host to device, device to device, device to host, in one batch. */
	DK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	dsts[0] = d; srcs[0] = (CUdeviceptr)h; sizes[0] = N;
	dsts[1] = d2; srcs[1] = d; sizes[1] = N;
	dsts[2] = (CUdeviceptr)o; srcs[2] = d2 + 16; sizes[2] = N - 16;
	memset(at, 0, sizeof at);
	at[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
	at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
	DK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, at, idx, 1, s));
	DK(cuStreamSynchronize(s));
	DK(cuMemcpyBatchAsync(dsts + 2, srcs + 2, sizes + 2, 1, at, idx, 1,
	    s));
	DK(cuStreamSynchronize(s));
	expect("batched copies", memcmp(o, h + 16, N - 16) == 0);
	{
		CUresult r1, r2, r3, r4;

		r1 = cuMemcpyBatchAsync(dsts, srcs, sizes, 0, at, idx, 1, s);
		at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
		r2 = cuMemcpyBatchAsync(dsts, srcs, sizes, 2, at, idx, 2, s);
		at[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		idx[1] = 0;
		r3 = cuMemcpyBatchAsync(dsts, srcs, sizes, 2, at, idx, 2, s);
		r4 = cuMemcpyBatchAsync(dsts, srcs, sizes, 2, at, idx, 1, NULL);
		printf("batch codes: none %d, order invalid %d, indices not "
		    "rising %d, legacy stream %d\n", r1, r2, r3, r4);
	}
	{
		/* The CUDA 12.8 ABI, with failIdx. */
		CUresult (*b1)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
		    CUmemcpyAttributes *, size_t *, size_t, size_t *,
		    CUstream) = (CUresult (*)(CUdeviceptr *, CUdeviceptr *,
		    size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t,
		    size_t *, CUstream))dlsym(RTLD_DEFAULT,
		    "cuMemcpyBatchAsync");

		idx[1] = 1;
		rc = b1 != NULL ? b1(dsts, srcs, sizes, 0, at, idx, 1, &failidx,
		    s) : CUDA_ERROR_NOT_FOUND;
		printf("failIdx of an empty batch: code %d, %s\n", rc,
		    failidx == SIZE_MAX ? "SIZE_MAX" : "WRONG");
	}

	/* 3D: a 16 x 4 x 2 box of d (rows of 64, layers of 8 rows) packed. */
	memset(op, 0, sizeof op);
	op[0].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
	op[0].src.op.ptr.ptr = d + 3;
	op[0].src.op.ptr.rowLength = 64;
	op[0].src.op.ptr.layerHeight = 8;
	op[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
	op[0].dst.op.ptr.ptr = (CUdeviceptr)o;
	op[0].extent.width = 16;
	op[0].extent.height = 4;
	op[0].extent.depth = 2;
	op[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
	DK(cuMemcpy3DBatchAsync(1, op, 0, s));
	DK(cuStreamSynchronize(s));
	ok = 1;
	for (int z = 0; z < 2; z++)
		for (int y = 0; y < 4; y++)
			for (int x = 0; x < 16; x++)
				ok &= o[(z * 4 + y) * 16 + x] ==
				    h[3 + (z * 8 + y) * 64 + x];
	expect("batched 3D copy", ok);
	{
		CUresult r1, r2, r3;

		r1 = cuMemcpy3DBatchAsync(1, op, 1, s);
		op[0].extent.depth = 0;
		r2 = cuMemcpy3DBatchAsync(1, op, 0, s);
		op[0].extent.depth = 2;
		op[0].src.op.ptr.rowLength = 8;
		r3 = cuMemcpy3DBatchAsync(1, op, 0, s);
		printf("3D batch codes: flags %d, empty extent %d, short rows "
		    "%d\n", r1, r2, r3);
	}

	/* Managed memory: prefetch both ways, discard. */
	DK(cuMemAllocManaged(&m, N, CU_MEM_ATTACH_GLOBAL));
	memset((void *)m, 0x5a, N);
	mp[0] = m; msz[0] = N / 2;
	mp[1] = m + N / 2; msz[1] = N / 2;
	loc[0].type = CU_MEM_LOCATION_TYPE_DEVICE;
	loc[0].id = dev;
	loc[1].type = CU_MEM_LOCATION_TYPE_HOST;
	loc[1].id = 0;
	idx[0] = 0; idx[1] = 1;
	DK(cuMemPrefetchBatchAsync(mp, msz, 2, loc, idx, 2, 0, s));
	DK(cuStreamSynchronize(s));
	printf("managed after prefetch: %02x %02x\n",
	    ((unsigned char *)m)[0], ((unsigned char *)m)[N - 1]);
	printf("discard: %d, not managed %d; discard and prefetch: %d\n",
	    cuMemDiscardBatchAsync(mp, msz, 2, 0, s),
	    cuMemDiscardBatchAsync(&d, msz, 1, 0, s),
	    cuMemDiscardAndPrefetchBatchAsync(mp, msz, 2, loc, idx, 2, 0, s));
	DK(cuStreamSynchronize(s));
	memset((void *)m, 0x33, N);
	DK(cuMemPrefetchBatchAsync(mp, msz, 2, loc, idx, 1, 0, s));
	DK(cuStreamSynchronize(s));
	printf("written after the discard: %02x\n", ((unsigned char *)m)[7]);
	printf("prefetch codes: no locations %d, flags %d\n",
	    cuMemPrefetchBatchAsync(mp, msz, 2, loc, idx, 0, 0, s),
	    cuMemPrefetchBatchAsync(mp, msz, 2, loc, idx, 1, 1, s));

	memset(&dp, 0, sizeof dp);
	printf("decompression: %d\n",
	    cuMemBatchDecompressAsync(&dp, 1, 0, NULL, s));
	rc = cuMemGetHandleForAddressRange(&fd, d, N,
	    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	printf("dma-buf export: answered %d; bad type %d\n",
	    rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_SUPPORTED,
	    cuMemGetHandleForAddressRange(&fd, d, N,
	    (CUmemRangeHandleType)2, 0));
	if (rc == CUDA_SUCCESS)
		close(fd);

	DK(cuStreamDestroy(s));
	DK(cuMemFree(m));
	DK(cuMemFree(d));
	DK(cuMemFree(d2));
	free(h);
	free(o);
}

static void
diagnostics(void)
{
	CUlogsCallbackHandle cb;
	CUlogIterator it = 0, it2 = 0, it3 = 0;
	char buf[4096], file[256];
	size_t n = sizeof buf;
	bool b = true;
	int flags = -1;
	CUdeviceptr p;
	CUprocessState st;
	CUresult rc;

	DK(cuLogsRegisterCallback(log_cb, NULL, &cb));
	DK(cuLogsCurrent(&it, 0));
	/* A failed call the driver logs: an allocation far too large. */
	rc = cuMemAlloc(&p, (size_t)1 << 60);
	printf("a petabyte: %d\n", rc);
	/* The driver takes flags it does not know, and logs the refused
	 * calls too (lines whose text is its own): it2 comes after them. */
	printf("logs: codes register NULL %d, current flags %d, dump NULL %d\n",
	    cuLogsRegisterCallback(NULL, NULL, &cb), cuLogsCurrent(&it3, 1),
	    cuLogsDumpToMemory(&it, NULL, &n, 0));
	DK(cuLogsCurrent(&it2, 0));
	DK(cuLogsDumpToMemory(&it2, buf, &n, 0));
	printf("logs: nothing since the last line: %zu\n", n);
	n = sizeof buf;
	DK(cuLogsDumpToMemory(&it, buf, &n, 0));
	printf("logs: the failure logged %d, told the callback %d, iterator "
	    "moved to the end %d\n", n > 0 && buf[n - 1] == '\n' &&
	    strlen(buf) == n, ncb > 0, it == it2);
	DK(cuLogsUnregisterCallback(cb));

	n = sizeof b;
	DK(cuCoredumpGetAttributeGlobal(CU_COREDUMP_ENABLE_ON_EXCEPTION, &b,
	    &n));
	printf("coredump on exception: %d", b);
	/* The driver refuses the user trigger through a context. */
	n = sizeof b;
	printf(", user trigger through the context: code %d",
	    cuCoredumpGetAttribute(CU_COREDUMP_ENABLE_USER_TRIGGER, &b, &n));
	n = sizeof b;
	DK(cuCoredumpGetAttributeGlobal(CU_COREDUMP_ENABLE_USER_TRIGGER, &b,
	    &n));
	printf(", globally: %d", b);
	n = sizeof flags;
	DK(cuCoredumpGetAttributeGlobal(CU_COREDUMP_GENERATION_FLAGS, &flags,
	    &n));
	printf(", flags %d", flags);
	n = sizeof file;
	snprintf(file, sizeof file, "unwritten");
	DK(cuCoredumpGetAttributeGlobal(CU_COREDUMP_FILE, file, &n));
	printf(", file core.cuda.*: %d, empty: %d\n", strncmp(file,
	    "core.cuda.", 10) == 0, file[0] == '\0');
	flags = CU_COREDUMP_SKIP_ABORT;
	n = sizeof flags;
	DK(cuCoredumpSetAttributeGlobal(CU_COREDUMP_GENERATION_FLAGS, &flags,
	    &n));
	flags = 0;
	n = sizeof flags;
	DK(cuCoredumpGetAttributeGlobal(CU_COREDUMP_GENERATION_FLAGS, &flags,
	    &n));
	rc = cuCoredumpGetAttributeGlobal(CU_COREDUMP_MAX, &b, &n);
	n = 0;
	printf("coredump flags set: %d; codes: bad attribute %d, short size "
	    "%d\n", flags, rc,
	    cuCoredumpGetAttributeGlobal(CU_COREDUMP_FILE, file, &n));

	rc = cuCheckpointProcessGetState((int)getpid(), &st);
	printf("checkpoint state: answered %d\n", rc == CUDA_SUCCESS ||
	    rc == CUDA_ERROR_NOT_SUPPORTED);
}

// Copies with no host buffer (a NULL host pointer and bytes to move):
// the driver's codes, sync and async, and the stream still works after.
static void
nullhost(void)
{
	CUdeviceptr p;
	CUstream s;
	CUresult a, b, c2, d;

	DK(cuMemAlloc(&p, 4096));
	DK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	a = cuMemcpyDtoH(NULL, p, 16);
	b = cuMemcpyDtoHAsync(NULL, p, 16, s);
	c2 = cuMemcpyHtoD(p, NULL, 16);
	d = cuMemcpyHtoDAsync(p, NULL, 16, s);
	printf("null host pointer: dtoh %d, dtoh async %d, htod %d, "
	    "htod async %d; stream after %d\n", (int)a, (int)b, (int)c2,
	    (int)d, (int)cuStreamSynchronize(s));
	{
		CUDA_MEMCPY2D m;
		CUDA_MEMCPY3D q;

		memset(&m, 0, sizeof m);
		m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		m.srcDevice = p;
		m.srcPitch = 64;
		m.dstMemoryType = CU_MEMORYTYPE_HOST;
		m.dstPitch = 64;
		m.WidthInBytes = 16;
		m.Height = 4;
		a = cuMemcpy2D(&m);
		b = cuMemcpy2DAsync(&m, s);
		memset(&q, 0, sizeof q);
		q.srcMemoryType = CU_MEMORYTYPE_HOST;
		q.srcPitch = 64;
		q.srcHeight = 4;
		q.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		q.dstDevice = p;
		q.dstPitch = 64;
		q.dstHeight = 4;
		q.WidthInBytes = 16;
		q.Height = 4;
		q.Depth = 1;
		c2 = cuMemcpy3D(&q);
		d = cuMemcpy((CUdeviceptr)0, p, 16);
		printf("null host pointer: 2D %d, 2D async %d, 3D %d, unified "
		    "%d; stream after %d\n", (int)a, (int)b, (int)c2, (int)d,
		    (int)cuStreamSynchronize(s));
	}
	DK(cuStreamDestroy(s));
	DK(cuMemFree(p));
}

int
main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUfunction f;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	DK(cuCtxGetCurrent(&ctx));
	DK(cuCtxGetDevice(&dev));
	CK(cudaGetFuncBySymbol(&f, (const void *)set_u32));

	devices(dev);
	contexts(dev, ctx);
	legacy(f);
	memory(dev);
	diagnostics();
	nullhost();
	if (fail) {
		printf(NAME ": FAIL %d\n", fail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
