// texref: texture and surface references (the legacy binding, through the
// driver API) and sparse arrays.  A created reference (cuTexRefCreate):
// its defaults, every setter read back by its getter, bound to an array,
// to linear and to pitched memory, the codes of refused arguments.  Then
// a module of hand-written PTX (nvcc no longer compiles texture<>
// references) declaring two .texref and a .surfref: the references by
// name (the same handle twice), one bound to linear memory and read by
// tex.1d, one to a 2D array and read by tex.2d, the results compared
// with the model; the surface reference bound to an array made for load
// and store.  Then sparse arrays: the device's attribute, a sparse 2D
// array's and mipmapped array's properties, a VMM allocation mapped onto
// the first tile (cuMemMapArrayAsync), bytes copied through it, the tile
// unmapped; the codes of refused arguments.  Prints values, checksums
// and codes only, so that a local and a remote run compare.  The host
// backend loads no PTX (no JIT compiler) and makes no sparse arrays: it
// prints "launch skipped" and "sparse: skipped" with the codes.  With -r
// also the codes of stale handles (only against Gleam: the driver's
// answer to a freed handle is not promised).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#define CUDA_ENABLE_DEPRECATED 1	// the references are deprecated
#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"texref"
#define CK(x)	checkcu((x), #x, __FILE__, __LINE__)

static int nfail;

#define TESTUTIL	TU_CHECKCU
#include "testutil.h"

static CUresult
code(const char *what, CUresult rc)
{
	printf("%s: error %d\n", what, (int)rc);
	return rc;
}

// FNV-1a over n bytes.
static unsigned
sum(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned h = 2166136261u;

	while (n-- > 0)
		h = (h ^ *b++) * 16777619u;
	return h;
}

static const char ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".global .texref tex1;\n"
    ".global .texref tex2;\n"
    ".global .surfref surf1;\n"
    // out[i] = tex1Dfetch(tex1, i), i < n
    ".visible .entry fetch1(.param .u64 out, .param .u32 n)\n"
    "{\n"
    "	.reg .b32 %r<8>;\n"
    "	.reg .f32 %f<8>;\n"
    "	.reg .b64 %rd<4>;\n"
    "	.reg .pred %p;\n"
    "	ld.param.u64 %rd1, [out];\n"
    "	ld.param.u32 %r1, [n];\n"
    "	mov.u32 %r3, %ctaid.x;\n"
    "	mov.u32 %r4, %ntid.x;\n"
    "	mov.u32 %r5, %tid.x;\n"
    "	mad.lo.u32 %r2, %r3, %r4, %r5;\n"
    "	setp.ge.u32 %p, %r2, %r1;\n"
    "	@%p bra done;\n"
    "	tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex1, {%r2}];\n"
    "	cvta.to.global.u64 %rd2, %rd1;\n"
    "	mul.wide.u32 %rd3, %r2, 4;\n"
    "	add.s64 %rd2, %rd2, %rd3;\n"
    "	st.global.f32 [%rd2], %f1;\n"
    "done:\n"
    "	ret;\n"
    "}\n"
    // out[y * w + x] = tex2D(tex2, x + 0.5, y + 0.5)
    ".visible .entry fetch2(.param .u64 out, .param .u32 w, .param .u32 h)\n"
    "{\n"
    "	.reg .b32 %r<12>;\n"
    "	.reg .f32 %f<8>;\n"
    "	.reg .b64 %rd<4>;\n"
    "	.reg .pred %p<3>;\n"
    "	ld.param.u64 %rd1, [out];\n"
    "	ld.param.u32 %r1, [w];\n"
    "	ld.param.u32 %r2, [h];\n"
    "	mov.u32 %r3, %ctaid.x;\n"
    "	mov.u32 %r4, %ntid.x;\n"
    "	mov.u32 %r5, %tid.x;\n"
    "	mad.lo.u32 %r6, %r3, %r4, %r5;\n"
    "	mov.u32 %r3, %ctaid.y;\n"
    "	mov.u32 %r4, %ntid.y;\n"
    "	mov.u32 %r5, %tid.y;\n"
    "	mad.lo.u32 %r7, %r3, %r4, %r5;\n"
    "	setp.ge.u32 %p1, %r6, %r1;\n"
    "	setp.ge.u32 %p2, %r7, %r2;\n"
    "	or.pred %p1, %p1, %p2;\n"
    "	@%p1 bra done;\n"
    "	cvt.rn.f32.u32 %f5, %r6;\n"
    "	cvt.rn.f32.u32 %f6, %r7;\n"
    "	add.f32 %f5, %f5, 0f3F000000;\n"
    "	add.f32 %f6, %f6, 0f3F000000;\n"
    "	tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex2, {%f5, %f6}];\n"
    "	mad.lo.u32 %r8, %r7, %r1, %r6;\n"
    "	cvta.to.global.u64 %rd2, %rd1;\n"
    "	mul.wide.u32 %rd3, %r8, 4;\n"
    "	add.s64 %rd2, %rd2, %rd3;\n"
    "	st.global.f32 [%rd2], %f1;\n"
    "done:\n"
    "	ret;\n"
    "}\n";

// Everything a texture reference's getters say.
static void
show(const char *what, CUtexref r)
{
	CUarray_format f;
	CUaddress_mode am[3];
	CUfilter_mode fm, mfm;
	unsigned flags;
	float bias, lo, hi, border[4];
	int n, aniso, i;

	CK(cuTexRefGetFormat(&f, &n, r));
	for (i = 0; i < 3; i++)
		CK(cuTexRefGetAddressMode(&am[i], r, i));
	CK(cuTexRefGetFilterMode(&fm, r));
	CK(cuTexRefGetMipmapFilterMode(&mfm, r));
	CK(cuTexRefGetFlags(&flags, r));
	CK(cuTexRefGetMaxAnisotropy(&aniso, r));
	CK(cuTexRefGetMipmapLevelBias(&bias, r));
	CK(cuTexRefGetMipmapLevelClamp(&lo, &hi, r));
	CK(cuTexRefGetBorderColor(border, r));
	printf("%s: format %#x x%d address %d %d %d filter %d mipfilter %d "
	    "flags %#x aniso %d bias %g clamp %g %g border %g %g %g %g\n",
	    what, (unsigned)f, n, (int)am[0], (int)am[1], (int)am[2], (int)fm,
	    (int)mfm, flags, aniso, bias, lo, hi, border[0], border[1],
	    border[2], border[3]);
}

// A created reference: setters, getters, bindings, refused arguments.
static void
created(int stale)
{
	CUDA_ARRAY_DESCRIPTOR ad;
	CUtexref r;
	CUarray a, ga;
	CUdeviceptr d, gd, pd;
	size_t off, pitch;
	float border[4] = { 1.0f, 0.5f, 0.25f, 0.0f };
	CUaddress_mode am;

	CK(cuTexRefCreate(&r));
	show("created", r);
	CK(cuTexRefSetFormat(r, CU_AD_FORMAT_FLOAT, 1));
	CK(cuTexRefSetAddressMode(r, 0, CU_TR_ADDRESS_MODE_CLAMP));
	CK(cuTexRefSetAddressMode(r, 1, CU_TR_ADDRESS_MODE_BORDER));
	CK(cuTexRefSetAddressMode(r, 2, CU_TR_ADDRESS_MODE_MIRROR));
	CK(cuTexRefSetFilterMode(r, CU_TR_FILTER_MODE_LINEAR));
	CK(cuTexRefSetMipmapFilterMode(r, CU_TR_FILTER_MODE_LINEAR));
	CK(cuTexRefSetFlags(r, CU_TRSF_NORMALIZED_COORDINATES));
	CK(cuTexRefSetMaxAnisotropy(r, 4));
	CK(cuTexRefSetMipmapLevelBias(r, 0.5f));
	CK(cuTexRefSetMipmapLevelClamp(r, 0.25f, 3.0f));
	CK(cuTexRefSetBorderColor(r, border));
	show("set", r);

	// An array, its format taken over.
	memset(&ad, 0, sizeof ad);
	ad.Width = 64;
	ad.Height = 0;
	ad.Format = CU_AD_FORMAT_UNSIGNED_INT16;
	ad.NumChannels = 2;
	CK(cuArrayCreate(&a, &ad));
	CK(cuTexRefSetArray(r, a, CU_TRSA_OVERRIDE_FORMAT));
	CK(cuTexRefGetArray(&ga, r));
	printf("array: %s\n", ga == a ? "same" : "FAIL other");
	if (ga != a)
		nfail++;
	show("array", r);
	code("address of an array's", cuTexRefGetAddress(&gd, r));

	// Linear memory at a texture-aligned address (offset 0), then
	// pitched.
	CK(cuMemAlloc(&d, 4096 + 512));
	CK(cuTexRefSetFormat(r, CU_AD_FORMAT_FLOAT, 1));
	CK(cuTexRefSetAddress(&off, r, (d + 511) & ~(CUdeviceptr)511, 4096));
	CK(cuTexRefGetAddress(&gd, r));
	printf("linear: offset %zu address %s\n", off,
	    gd == ((d + 511) & ~(CUdeviceptr)511) ? "same" : "FAIL other");
	if (gd != ((d + 511) & ~(CUdeviceptr)511))
		nfail++;
	code("array of a linear", cuTexRefGetArray(&ga, r));
	CK(cuMemAllocPitch(&pd, &pitch, 32 * 4, 16, 4));
	ad.Width = 32;
	ad.Height = 16;
	ad.Format = CU_AD_FORMAT_FLOAT;
	ad.NumChannels = 1;
	CK(cuTexRefSetAddress2D(r, &ad, pd, pitch));
	CK(cuTexRefGetAddress(&gd, r));
	printf("pitch2d: address %s\n", gd == pd ? "same" : "FAIL other");
	if (gd != pd)
		nfail++;
	show("pitch2d", r);

	// Refused arguments.
	code("flags 0x100", cuTexRefSetFlags(r, 0x100));
	code("format of 3 channels", cuTexRefSetFormat(r, CU_AD_FORMAT_FLOAT,
	    3));
	code("address mode of dimension 3", cuTexRefSetAddressMode(r, 3,
	    CU_TR_ADDRESS_MODE_WRAP));
	code("address mode 9", cuTexRefSetAddressMode(r, 0,
	    (CUaddress_mode)9));
	code("filter mode 5", cuTexRefSetFilterMode(r, (CUfilter_mode)5));
	code("array flags 0x8", cuTexRefSetArray(r, a, 0x8));
	code("get address mode of dimension 3", cuTexRefGetAddressMode(&am,
	    r, 3));
	code("border NULL", cuTexRefSetBorderColor(r, NULL));
	code("array of a NULL reference", cuTexRefGetArray(&ga, NULL));

	CK(cuArrayDestroy(a));
	if (stale)
		code("stale: freed array", cuTexRefSetArray(r, a,
		    CU_TRSA_OVERRIDE_FORMAT));
	CK(cuTexRefDestroy(r));
	if (stale)
		code("stale: destroyed reference", cuTexRefSetFlags(r, 0));
	CK(cuMemFree(d));
	CK(cuMemFree(pd));
}

#define N1	300
#define W2	37
#define H2	23

// A module's references, and kernels that read through them.
static void
module(int stale)
{
	CUDA_ARRAY_DESCRIPTOR ad;
	CUDA_MEMCPY2D m;
	CUmodule mod;
	CUfunction f1, f2;
	CUtexref t1, t1b, t2, none;
	CUsurfref s1;
	CUarray a, sa, ga;
	CUdeviceptr d, out;
	size_t off;
	float *in, *got, want;
	unsigned n = N1, w = W2, h = H2;
	void *args[3];
	int i, bad;
	CUresult rc;

	if ((rc = cuModuleLoadData(&mod, ptx)) != CUDA_SUCCESS) {
		code("module", rc);
		printf(NAME ": launch skipped\n");
		return;
	}
	CK(cuModuleGetTexRef(&t1, mod, "tex1"));
	CK(cuModuleGetTexRef(&t1b, mod, "tex1"));
	CK(cuModuleGetTexRef(&t2, mod, "tex2"));
	printf("module: tex1 twice %s, tex2 %s\n", t1 == t1b ? "same" :
	    "FAIL other", t2 != t1 ? "other" : "FAIL same");
	if (t1 != t1b || t2 == t1)
		nfail++;
	code("texture reference nope", cuModuleGetTexRef(&none, mod, "nope"));
	code("surface reference tex1", cuModuleGetSurfRef(&s1, mod, "tex1"));
	code("surface reference surf1", cuModuleGetSurfRef(&s1, mod,
	    "surf1"));
	CK(cuModuleGetFunction(&f1, mod, "fetch1"));
	CK(cuModuleGetFunction(&f2, mod, "fetch2"));
	show("module tex1", t1);

	// tex1: linear memory, one float a texel.
	in = (float *)malloc(N1 * W2 * H2 * sizeof *in);
	got = (float *)malloc(N1 * W2 * H2 * sizeof *got);
	for (i = 0; i < N1; i++)
		in[i] = (float)i * 0.5f - 7.0f;
	CK(cuMemAlloc(&d, N1 * sizeof *in));
	CK(cuMemAlloc(&out, W2 * H2 * sizeof *in + N1 * sizeof *in));
	CK(cuMemcpyHtoD(d, in, N1 * sizeof *in));
	CK(cuTexRefSetFormat(t1, CU_AD_FORMAT_FLOAT, 1));
	CK(cuTexRefSetAddress(&off, t1, d, N1 * sizeof *in));
	printf("tex1: offset %zu\n", off);
	args[0] = &out;
	args[1] = &n;
	CK(cuLaunchKernel(f1, (N1 + 127) / 128, 1, 1, 128, 1, 1, 0, NULL,
	    args, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(got, out, N1 * sizeof *got));
	for (i = bad = 0; i < N1; i++)
		bad += got[i] != in[i];
	printf("tex1 fetch: %d differ, sum %08x\n", bad, sum(got,
	    N1 * sizeof *got));
	if (bad)
		nfail++;

	// tex2: a 2D float array, point-filtered at texel centres.
	for (i = 0; i < W2 * H2; i++)
		in[i] = (float)(i % 97) * 0.25f + (float)(i / W2);
	memset(&ad, 0, sizeof ad);
	ad.Width = W2;
	ad.Height = H2;
	ad.Format = CU_AD_FORMAT_FLOAT;
	ad.NumChannels = 1;
	CK(cuArrayCreate(&a, &ad));
	memset(&m, 0, sizeof m);
	m.srcMemoryType = CU_MEMORYTYPE_HOST;
	m.srcHost = in;
	m.srcPitch = W2 * sizeof *in;
	m.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	m.dstArray = a;
	m.WidthInBytes = W2 * sizeof *in;
	m.Height = H2;
	CK(cuMemcpy2D(&m));
	CK(cuTexRefSetArray(t2, a, CU_TRSA_OVERRIDE_FORMAT));
	CK(cuTexRefSetFilterMode(t2, CU_TR_FILTER_MODE_POINT));
	CK(cuTexRefSetAddressMode(t2, 0, CU_TR_ADDRESS_MODE_CLAMP));
	CK(cuTexRefSetAddressMode(t2, 1, CU_TR_ADDRESS_MODE_CLAMP));
	CK(cuTexRefSetFlags(t2, 0));
	CK(cuTexRefGetArray(&ga, t2));
	printf("tex2: array %s\n", ga == a ? "same" : "FAIL other");
	args[1] = &w;
	args[2] = &h;
	CK(cuLaunchKernel(f2, (W2 + 15) / 16, (H2 + 15) / 16, 1, 16, 16, 1,
	    0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(got, out, W2 * H2 * sizeof *got));
	for (i = bad = 0; i < W2 * H2; i++) {
		want = in[i];
		bad += got[i] != want;
	}
	printf("tex2 fetch: %d differ, sum %08x\n", bad, sum(got,
	    W2 * H2 * sizeof *got));
	if (bad)
		nfail++;

	// surf1: an array made for load and store; one that is not.
	if (cuModuleGetSurfRef(&s1, mod, "surf1") == CUDA_SUCCESS) {
		CUDA_ARRAY3D_DESCRIPTOR d3;

		memset(&d3, 0, sizeof d3);
		d3.Width = 16;
		d3.Height = 16;
		d3.Format = CU_AD_FORMAT_FLOAT;
		d3.NumChannels = 1;
		d3.Flags = CUDA_ARRAY3D_SURFACE_LDST;
		CK(cuArray3DCreate(&sa, &d3));
		CK(cuSurfRefSetArray(s1, sa, 0));
		CK(cuSurfRefGetArray(&ga, s1));
		printf("surf1: array %s\n", ga == sa ? "same" : "FAIL other");
		if (ga != sa)
			nfail++;
		code("surf1 flags 1", cuSurfRefSetArray(s1, sa, 1));
		CK(cuArrayDestroy(sa));
	}
	CK(cuArrayDestroy(a));
	CK(cuModuleUnload(mod));
	if (stale)
		code("stale: reference of an unloaded module",
		    cuTexRefSetFlags(t1, 0));
	CK(cuMemFree(d));
	CK(cuMemFree(out));
	free(in);
	free(got);
}

// Sparse arrays: properties, a tile mapped and unmapped.
static void
sparse(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d3;
	CUDA_ARRAY_SPARSE_PROPERTIES sp;
	CUarrayMapInfo mi;
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle mh;
	CUDA_MEMCPY2D m;
	CUarray a, plain;
	CUmipmappedArray mm;
	CUdevice dev;
	size_t gran, tw, th;
	unsigned char *in, *back;
	int attr;
	CUresult rc;

	CK(cuCtxGetDevice(&dev));
	CK(cuDeviceGetAttribute(&attr,
	    CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, dev));
	printf("sparse: supported %d\n", attr);
	memset(&d3, 0, sizeof d3);
	d3.Width = 64;
	d3.Height = 64;
	d3.Format = CU_AD_FORMAT_FLOAT;
	d3.NumChannels = 1;
	CK(cuArray3DCreate(&plain, &d3));
	code("properties of a plain array", cuArrayGetSparseProperties(&sp,
	    plain));
	memset(&mi, 0, sizeof mi);
	mi.resourceType = CU_RESOURCE_TYPE_ARRAY;
	mi.resource.array = plain;
	mi.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
	mi.subresource.sparseLevel.extentWidth = 64;
	mi.subresource.sparseLevel.extentHeight = 64;
	mi.subresource.sparseLevel.extentDepth = 1;
	mi.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
	mi.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
	mi.deviceBitMask = 1;
	code("unmap from a plain array", cuMemMapArrayAsync(&mi, 1, NULL));
	code("no entries", cuMemMapArrayAsync(&mi, 0, NULL));
	CK(cuArrayDestroy(plain));

	d3.Width = 1024;
	d3.Height = 1024;
	d3.Flags = CUDA_ARRAY3D_SPARSE;
	if ((rc = cuArray3DCreate(&a, &d3)) != CUDA_SUCCESS) {
		code("sparse array", rc);
		printf("sparse: skipped\n");
		return;
	}
	CK(cuArrayGetSparseProperties(&sp, a));
	printf("sparse: tile %u %u %u miptail first %u size %llu flags %#x\n",
	    sp.tileExtent.width, sp.tileExtent.height, sp.tileExtent.depth,
	    sp.miptailFirstLevel, (unsigned long long)sp.miptailSize,
	    sp.flags);
	tw = sp.tileExtent.width;
	th = sp.tileExtent.height;

	// One allocation of the granularity (a tile is 64 KiB) on tile 0.
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
	CK(cuMemGetAllocationGranularity(&gran, &prop,
	    CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	if ((rc = cuMemCreate(&mh, gran, &prop, 0)) != CUDA_SUCCESS) {
		code("tile pool", rc);
		CK(cuArrayDestroy(a));
		return;
	}
	memset(&mi, 0, sizeof mi);
	mi.resourceType = CU_RESOURCE_TYPE_ARRAY;
	mi.resource.array = a;
	mi.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
	mi.subresource.sparseLevel.extentWidth = (unsigned)tw;
	mi.subresource.sparseLevel.extentHeight = (unsigned)th;
	mi.subresource.sparseLevel.extentDepth = 1;
	mi.memOperationType = CU_MEM_OPERATION_TYPE_MAP;
	mi.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
	mi.memHandle.memHandle = mh;
	mi.offset = 0;
	mi.deviceBitMask = 1u << dev;
	code("map tile 0", cuMemMapArrayAsync(&mi, 1, NULL));
	CK(cuCtxSynchronize());

	// The tile's bytes, there and back.
	in = (unsigned char *)malloc(tw * th * 4);
	back = (unsigned char *)calloc(1, tw * th * 4);
	for (size_t i = 0; i < tw * th * 4; i++)
		in[i] = (unsigned char)(i * 7 + (i >> 9));
	memset(&m, 0, sizeof m);
	m.srcMemoryType = CU_MEMORYTYPE_HOST;
	m.srcHost = in;
	m.srcPitch = tw * 4;
	m.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	m.dstArray = a;
	m.WidthInBytes = tw * 4;
	m.Height = th;
	CK(cuMemcpy2D(&m));
	m.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	m.srcArray = a;
	m.dstMemoryType = CU_MEMORYTYPE_HOST;
	m.dstHost = back;
	m.dstPitch = tw * 4;
	CK(cuMemcpy2D(&m));
	printf("sparse: tile 0 %s, sum %08x\n", memcmp(in, back, tw * th * 4)
	    == 0 ? "kept" : "FAIL differs", sum(back, tw * th * 4));
	if (memcmp(in, back, tw * th * 4) != 0)
		nfail++;
	mi.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
	mi.memHandle.memHandle = 0;
	code("unmap tile 0", cuMemMapArrayAsync(&mi, 1, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemRelease(mh));
	CK(cuArrayDestroy(a));
	free(in);
	free(back);

	d3.Width = 512;
	d3.Height = 512;
	if ((rc = cuMipmappedArrayCreate(&mm, &d3, 10)) != CUDA_SUCCESS) {
		code("sparse mipmapped array", rc);
		return;
	}
	CK(cuMipmappedArrayGetSparseProperties(&sp, mm));
	printf("sparse mipmap: tile %u %u %u miptail first %u size %llu "
	    "flags %#x\n", sp.tileExtent.width, sp.tileExtent.height,
	    sp.tileExtent.depth, sp.miptailFirstLevel,
	    (unsigned long long)sp.miptailSize, sp.flags);
	CK(cuMipmappedArrayDestroy(mm));
}

int
main(int argc, char **argv)
{
	int c, stale = 0;

	while ((c = getopt(argc, argv, "r")) != -1) {
		switch (c) {
		case 'r':
			stale = 1;
			break;
		default:
			fprintf(stderr, "usage: texref [-r]\n");
			return 2;
		}
	}
	// The primary context, through cudart, as the other programs.
	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	created(stale);
	module(stale);
	sparse();
	if (nfail) {
		printf(NAME ": FAIL %d\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
