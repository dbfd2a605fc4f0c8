// arrays: CUDA arrays and what reads and writes them.  cudaMallocArray
// (2D float), cudaMalloc3DArray (3D uchar4, 2D layered), and
// cudaMallocMipmappedArray with its levels' extents; copies into and out
// of them from host, device (pitched) memory and other arrays
// (cudaMemcpy2DToArray, FromArray, ArrayToArray, their Async forms,
// cudaMemcpy3D with arrays on either side), whole and at offsets, every
// byte compared with a model kept on the CPU and a checksum printed.
// Then texture objects over an array (point filtering, unnormalized; linear
// filtering, normalized coordinates, clamped), a mipmapped array, linear
// and pitched memory, read by kernels, their descriptors read back; a
// surface object over an array written by a kernel (surf2Dwrite) and read
// back by a copy; the codes of refused arguments.  Then the driver's
// copies by offset (cuMemcpyHtoA & co.) on 1D arrays.  With -r also a texture
// over a destroyed array (its code: only against Gleam, as the real
// driver's answer to a stale handle is not promised) and the legacy ABI
// (cuArrayCreate, cuMemcpyHtoA/AtoH of 32-bit sizes, cuMemGetInfo).  On the host
// backend, which fetches no texels (its kernels: 801), the kernels' lines
// say "skipped"; everything else prints as on a GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME	"arrays"
#define CK(x)	check((x), __FILE__, __LINE__)

static int nfail;

#define TESTUTIL	(TU_CHECK)
#include "testutil.h"

static void *
xmalloc(size_t n)
{
	void *p;

	if ((p = malloc(n)) == NULL) {
		printf(NAME ": FAIL out of memory\n");
		exit(1);
	}
	return p;
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

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 7)) ^ seed);
}

static void
same(const char *what, const void *got, const void *want, size_t n)
{
	const unsigned char *g = (const unsigned char *)got,
	    *w = (const unsigned char *)want;
	size_t i;

	for (i = 0; i < n && g[i] == w[i]; i++)
		;
	if (i < n) {
		printf("%s: FAIL differs from the model at byte %zu (%u, not "
		    "%u)\n", what, i, g[i], w[i]);
		nfail++;
	} else
		printf("%s: %08x\n", what, sum(got, n));
}

static void
code(const char *what, cudaError_t e)
{
	printf("%s: error %d\n", what, (int)e);
	cudaGetLastError();
}

static void
info(const char *what, cudaArray_t a)
{
	cudaChannelFormatDesc d;
	cudaExtent e;
	unsigned flags;

	CK(cudaArrayGetInfo(&d, &e, &flags, a));
	printf("%s: channel %d %d %d %d kind %d extent %zu %zu %zu flags %u\n",
	    what, d.x, d.y, d.z, d.w, (int)d.f, e.width, e.height, e.depth,
	    flags);
}

// A kernel's launch and its run: the code, 801 (no texel fetches on the
// host backend) as "skipped".
static int
ran(const char *what)
{
	cudaError_t e = cudaGetLastError();

	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	if (e == cudaErrorNotSupported) {
		printf("%s: skipped (error %d)\n", what, (int)e);
		// Not sticky: the next synchronization is clean.
		cudaGetLastError();
		CK(cudaDeviceSynchronize());
		return 0;
	}
	CK(e);
	return 1;
}

#define W	37
#define H	23

// out[y * w + x] = tex2D at the texel's centre, or at (u, v) normalized.
__global__ void
tex_point(float *out, cudaTextureObject_t t, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x < w && y < h)
		out[y * w + x] = tex2D<float>(t, x + 0.5f, y + 0.5f);
}

__global__ void
tex_norm(float *out, cudaTextureObject_t t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = tex2D<float>(t, (i % 13) / 12.0f * 1.2f - 0.1f,
		    (i / 13) / 12.0f);
}

__global__ void
tex_lod(float *out, cudaTextureObject_t t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = tex2DLod<float>(t, (i % 8 + 0.5f) / 8.0f,
		    (i / 8 + 0.5f) / 4.0f, 1.0f);
}

__global__ void
tex_linear(int *out, cudaTextureObject_t t, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = tex1Dfetch<int>(t, n - 1 - i);
}

__global__ void
surf_write(cudaSurfaceObject_t s, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x < w && y < h)
		surf2Dwrite((float)(x * 1000 + y), s, x * (int)sizeof(float),
		    y);
}

// 2D float array: in and out at pitches, a sub-rectangle, array to array,
// device to array and back, async.
static void
arrays_2d(void)
{
	cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
	size_t row = W * sizeof(float), hp = row + 12, n = row * H;
	unsigned char *in = (unsigned char *)xmalloc(hp * H);
	unsigned char *out = (unsigned char *)xmalloc(n), *model =
	    (unsigned char *)xmalloc(n);
	cudaArray_t a, b;
	cudaStream_t s;
	void *dev;
	size_t dp, y;

	CK(cudaMallocArray(&a, &f, W, H));
	CK(cudaMallocArray(&b, &f, W, H));
	info("2d", a);
	fill(in, hp * H, 1);
	CK(cudaMemcpy2DToArray(a, 0, 0, in, hp, row, H,
	    cudaMemcpyHostToDevice));
	for (y = 0; y < H; y++)
		memcpy(model + y * row, in + y * hp, row);
	CK(cudaMemcpy2DFromArray(out, row, a, 0, 0, row, H,
	    cudaMemcpyDeviceToHost));
	same("2d whole", out, model, n);

	// 10 x 7 floats at (5, 3) from another pattern, pitch 40 floats.
	fill(in, hp * H, 2);
	CK(cudaMemcpy2DToArray(a, 5 * sizeof(float), 3, in, 40 * sizeof(float),
	    10 * sizeof(float), 7, cudaMemcpyHostToDevice));
	for (y = 0; y < 7; y++)
		memcpy(model + (3 + y) * row + 5 * sizeof(float),
		    in + y * 40 * sizeof(float), 10 * sizeof(float));
	CK(cudaMemcpy2DFromArray(out, row, a, 0, 0, row, H,
	    cudaMemcpyDeviceToHost));
	same("2d sub-rectangle", out, model, n);

	// Array to array: b zero, then a's 12 x 9 at (20, 11) to b's (1, 2).
	memset(in, 0, n);
	CK(cudaMemcpy2DToArray(b, 0, 0, in, row, row, H,
	    cudaMemcpyHostToDevice));
	CK(cudaMemcpy2DArrayToArray(b, 1 * sizeof(float), 2, a,
	    20 * sizeof(float), 11, 12 * sizeof(float), 9,
	    cudaMemcpyDeviceToDevice));
	{
		unsigned char *m2 = (unsigned char *)xmalloc(n);

		memset(m2, 0, n);
		for (y = 0; y < 9; y++)
			memcpy(m2 + (2 + y) * row + 1 * sizeof(float),
			    model + (11 + y) * row + 20 * sizeof(float),
			    12 * sizeof(float));
		CK(cudaMemcpy2DFromArray(out, row, b, 0, 0, row, H,
		    cudaMemcpyDeviceToHost));
		same("2d array to array", out, m2, n);
		free(m2);
	}

	// Device (pitched) to array and back through device memory.
	CK(cudaMallocPitch(&dev, &dp, row, H));
	CK(cudaMemcpy2DFromArray(dev, dp, a, 0, 0, row, H,
	    cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy2DToArray(b, 0, 0, dev, dp, row, H,
	    cudaMemcpyDeviceToDevice));
	memset(out, 0, n);
	CK(cudaMemcpy2DFromArray(out, row, b, 0, 0, row, H,
	    cudaMemcpyDeviceToHost));
	same("2d through device memory", out, model, n);

	// Async on a stream.
	CK(cudaStreamCreate(&s));
	fill(in, hp * H, 3);
	CK(cudaMemcpy2DToArrayAsync(a, 0, 0, in, hp, row, H,
	    cudaMemcpyHostToDevice, s));
	memset(out, 0, n);
	CK(cudaMemcpy2DFromArrayAsync(out, row, a, 0, 0, row, H,
	    cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (y = 0; y < H; y++)
		memcpy(model + y * row, in + y * hp, row);
	same("2d async", out, model, n);

	// Out of the array's bounds.
	code("2d copy past the width", cudaMemcpy2DToArray(a,
	    30 * sizeof(float), 0, in, row, 8 * sizeof(float), 1,
	    cudaMemcpyHostToDevice));
	code("2d copy past the height", cudaMemcpy2DFromArray(out, row, a, 0,
	    20, row, 4, cudaMemcpyDeviceToHost));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(dev));
	CK(cudaFreeArray(a));
	CK(cudaFreeArray(b));
	free(in);
	free(out);
	free(model);
}

// 3D uchar4 array and a 2D layered one, through cudaMemcpy3D.
static void
arrays_3d(void)
{
	cudaChannelFormatDesc f = cudaCreateChannelDesc<uchar4>();
	cudaExtent e = make_cudaExtent(19, 11, 5);
	size_t row = 19 * 4, n = row * 11 * 5, z, y;
	unsigned char *in = (unsigned char *)xmalloc(n), *out =
	    (unsigned char *)xmalloc(n), *model = (unsigned char *)xmalloc(n);
	cudaMemcpy3DParms p;
	cudaPitchedPtr dp;
	cudaArray_t a, l;

	CK(cudaMalloc3DArray(&a, &f, e));
	info("3d", a);
	fill(in, n, 4);
	memcpy(model, in, n);
	memset(&p, 0, sizeof p);
	p.srcPtr = make_cudaPitchedPtr(in, row, 19, 11);
	p.dstArray = a;
	p.extent = e;
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	memset(&p, 0, sizeof p);
	p.srcArray = a;
	p.dstPtr = make_cudaPitchedPtr(out, row, 19, 11);
	p.extent = e;
	p.kind = cudaMemcpyDeviceToHost;
	CK(cudaMemcpy3D(&p));
	same("3d whole", out, model, n);

	// A 4 x 3 x 2 box at (7, 5, 2) from host memory at (1, 1, 1) of a
	// 9 x 8 x 4 block (with an array in the copy, cudart counts the
	// host side's x in the array's elements too).
	{
		size_t br = 9 * 4, bn = br * 8 * 4;
		unsigned char *blk = (unsigned char *)xmalloc(bn);

		fill(blk, bn, 5);
		memset(&p, 0, sizeof p);
		p.srcPtr = make_cudaPitchedPtr(blk, br, 9, 8);
		p.srcPos = make_cudaPos(1, 1, 1);
		p.dstArray = a;
		p.dstPos = make_cudaPos(7, 5, 2);
		p.extent = make_cudaExtent(4, 3, 2);
		p.kind = cudaMemcpyHostToDevice;
		CK(cudaMemcpy3D(&p));
		for (z = 0; z < 2; z++)
			for (y = 0; y < 3; y++)
				memcpy(model + ((2 + z) * 11 + 5 + y) * row +
				    7 * 4, blk + ((1 + z) * 8 + 1 + y) * br +
				    4, 4 * 4);
		free(blk);
	}
	// Array to device (cudaMalloc3D) and back to the host.
	CK(cudaMalloc3D(&dp, make_cudaExtent(row, 11, 5)));
	memset(&p, 0, sizeof p);
	p.srcArray = a;
	p.dstPtr = dp;
	p.extent = e;
	p.kind = cudaMemcpyDeviceToDevice;
	CK(cudaMemcpy3D(&p));
	memset(&p, 0, sizeof p);
	p.srcPtr = dp;
	p.dstPtr = make_cudaPitchedPtr(out, row, 19, 11);
	p.extent = make_cudaExtent(row, 11, 5);
	p.kind = cudaMemcpyDeviceToHost;
	CK(cudaMemcpy3D(&p));
	same("3d box, through device memory", out, model, n);

	// Out of the depth.
	memset(&p, 0, sizeof p);
	p.srcArray = a;
	p.srcPos = make_cudaPos(0, 0, 3);
	p.dstPtr = make_cudaPitchedPtr(out, row, 19, 11);
	p.extent = e;
	p.kind = cudaMemcpyDeviceToHost;
	code("3d copy past the depth", cudaMemcpy3D(&p));

	// 2D layered: 3 layers of 16 x 8 uchar4; layer 1 written, all read.
	CK(cudaMalloc3DArray(&l, &f, make_cudaExtent(16, 8, 3),
	    cudaArrayLayered));
	info("layered", l);
	{
		size_t lr = 16 * 4, ln = lr * 8 * 3;
		unsigned char *lin = (unsigned char *)xmalloc(ln), *lm =
		    (unsigned char *)xmalloc(ln);

		memset(lm, 0, ln);
		memset(&p, 0, sizeof p);
		p.srcPtr = make_cudaPitchedPtr(lm, lr, 16, 8);
		p.dstArray = l;
		p.extent = make_cudaExtent(16, 8, 3);
		p.kind = cudaMemcpyHostToDevice;
		CK(cudaMemcpy3D(&p));
		fill(lin, lr * 8, 6);
		memcpy(lm + lr * 8, lin, lr * 8);
		memset(&p, 0, sizeof p);
		p.srcPtr = make_cudaPitchedPtr(lin, lr, 16, 8);
		p.dstArray = l;
		p.dstPos = make_cudaPos(0, 0, 1);
		p.extent = make_cudaExtent(16, 8, 1);
		p.kind = cudaMemcpyHostToDevice;
		CK(cudaMemcpy3D(&p));
		memset(lin, 0, lr * 8);
		{
			unsigned char *lo = (unsigned char *)xmalloc(ln);

			memset(&p, 0, sizeof p);
			p.srcArray = l;
			p.dstPtr = make_cudaPitchedPtr(lo, lr, 16, 8);
			p.extent = make_cudaExtent(16, 8, 3);
			p.kind = cudaMemcpyDeviceToHost;
			CK(cudaMemcpy3D(&p));
			same("layered", lo, lm, ln);
			free(lo);
		}
		free(lin);
		free(lm);
	}
	CK(cudaFree(dp.ptr));
	CK(cudaFreeArray(a));
	CK(cudaFreeArray(l));
	free(in);
	free(out);
	free(model);
}

// A mipmapped array's levels; level 2 written and read.
static cudaMipmappedArray_t
mipmapped(void)
{
	cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
	cudaMipmappedArray_t m;
	cudaArray_t lv, again;
	unsigned i;
	char what[32];

	CK(cudaMallocMipmappedArray(&m, &f, make_cudaExtent(64, 32, 0), 5));
	for (i = 0; i < 5; i++) {
		CK(cudaGetMipmappedArrayLevel(&lv, m, i));
		snprintf(what, sizeof what, "level %u", i);
		info(what, lv);
	}
	CK(cudaGetMipmappedArrayLevel(&again, m, 4));
	printf("level 4 asked twice: %s\n", again == lv ? "same" : "other");
	code("level 5", cudaGetMipmappedArrayLevel(&lv, m, 5));
	{
		float in[16 * 8], out[16 * 8];

		for (i = 0; i < 16 * 8; i++)
			in[i] = (float)i * 0.25f;
		CK(cudaGetMipmappedArrayLevel(&lv, m, 2));
		CK(cudaMemcpy2DToArray(lv, 0, 0, in, 16 * sizeof(float),
		    16 * sizeof(float), 8, cudaMemcpyHostToDevice));
		CK(cudaMemcpy2DFromArray(out, 16 * sizeof(float), lv, 0, 0,
		    16 * sizeof(float), 8, cudaMemcpyDeviceToHost));
		same("level 2", out, in, sizeof in);
		// Level 1 of 32 x 16, read by tex2DLod below.
		float l1[32 * 16];

		for (i = 0; i < 32 * 16; i++)
			l1[i] = (float)(i % 32) + (float)(i / 32) * 100.0f;
		CK(cudaGetMipmappedArrayLevel(&lv, m, 1));
		CK(cudaMemcpy2DToArray(lv, 0, 0, l1, 32 * sizeof(float),
		    32 * sizeof(float), 16, cudaMemcpyHostToDevice));
	}
	return m;
}

static void
textures(cudaMipmappedArray_t mm, int refused)
{
	cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
	float img[16 * 16], *dout, out[16 * 16];
	cudaResourceDesc rd, rd2;
	cudaTextureDesc td, td2;
	cudaResourceViewDesc vd;
	cudaTextureObject_t t, tn, tm, tl;
	cudaArray_t a;
	int i, *dlin, lin[256], lout[256];

	for (i = 0; i < 256; i++)
		img[i] = (float)((i * 37) % 101) * 0.5f;
	CK(cudaMallocArray(&a, &f, 16, 16));
	CK(cudaMemcpy2DToArray(a, 0, 0, img, 16 * sizeof(float),
	    16 * sizeof(float), 16, cudaMemcpyHostToDevice));
	CK(cudaMalloc(&dout, sizeof out));

	memset(&rd, 0, sizeof rd);
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = a;
	memset(&td, 0, sizeof td);
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	CK(cudaCreateTextureObject(&t, &rd, &td, NULL));
	CK(cudaGetTextureObjectResourceDesc(&rd2, t));
	printf("tex resource: type %d array %s\n", (int)rd2.resType,
	    rd2.res.array.array == a ? "same" : "other");
	CK(cudaGetTextureObjectTextureDesc(&td2, t));
	printf("tex desc: address %d %d filter %d read %d normalized %d\n",
	    (int)td2.addressMode[0], (int)td2.addressMode[1],
	    (int)td2.filterMode, (int)td2.readMode, td2.normalizedCoords);
	code("tex view of none", cudaGetTextureObjectResourceViewDesc(&vd, t));
	tex_point<<<dim3(2, 2), dim3(8, 8)>>>(dout, t, 16, 16);
	if (ran("tex point")) {
		CK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
		same("tex point", out, img, sizeof out);
	}

	// Linear filtering, normalized coordinates, a view of the array.
	td.filterMode = cudaFilterModeLinear;
	td.normalizedCoords = 1;
	memset(&vd, 0, sizeof vd);
	vd.format = cudaResViewFormatFloat1;
	vd.width = 16;
	vd.height = 16;
	CK(cudaCreateTextureObject(&tn, &rd, &td, &vd));
	memset(&vd, 0, sizeof vd);
	CK(cudaGetTextureObjectResourceViewDesc(&vd, tn));
	printf("tex view: format %d %zu x %zu\n", (int)vd.format, vd.width,
	    vd.height);
	tex_norm<<<2, 128>>>(dout, tn, 169);
	if (ran("tex linear normalized")) {
		CK(cudaMemcpy(out, dout, 169 * sizeof(float),
		    cudaMemcpyDeviceToHost));
		printf("tex linear normalized: %08x", sum(out, 169 *
		    sizeof(float)));
		printf(" (%.4f %.4f %.4f)\n", out[0], out[7], out[168]);
	}

	// A mipmapped array, level 1 by tex2DLod.
	memset(&rd2, 0, sizeof rd2);
	rd2.resType = cudaResourceTypeMipmappedArray;
	rd2.res.mipmap.mipmap = mm;
	td.filterMode = cudaFilterModePoint;
	td.mipmapFilterMode = cudaFilterModePoint;
	td.maxMipmapLevelClamp = 4.0f;
	CK(cudaCreateTextureObject(&tm, &rd2, &td, NULL));
	tex_lod<<<1, 32>>>(dout, tm, 32);
	if (ran("tex mipmap level 1")) {
		CK(cudaMemcpy(out, dout, 32 * sizeof(float),
		    cudaMemcpyDeviceToHost));
		printf("tex mipmap level 1: %08x (%.1f %.1f)\n", sum(out,
		    32 * sizeof(float)), out[0], out[31]);
	}

	// Linear memory, tex1Dfetch of ints.
	for (i = 0; i < 256; i++)
		lin[i] = i * i - 7 * i;
	CK(cudaMalloc(&dlin, sizeof lin));
	CK(cudaMemcpy(dlin, lin, sizeof lin, cudaMemcpyHostToDevice));
	memset(&rd2, 0, sizeof rd2);
	rd2.resType = cudaResourceTypeLinear;
	rd2.res.linear.devPtr = dlin;
	rd2.res.linear.desc = cudaCreateChannelDesc<int>();
	rd2.res.linear.sizeInBytes = sizeof lin;
	memset(&td2, 0, sizeof td2);
	td2.readMode = cudaReadModeElementType;
	CK(cudaCreateTextureObject(&tl, &rd2, &td2, NULL));
	CK(cudaGetTextureObjectResourceDesc(&rd2, tl));
	printf("tex linear: type %d bytes %zu\n", (int)rd2.resType,
	    rd2.res.linear.sizeInBytes);
	tex_linear<<<2, 128>>>((int *)dout, tl, 256);
	if (ran("tex1Dfetch")) {
		CK(cudaMemcpy(lout, dout, sizeof lout,
		    cudaMemcpyDeviceToHost));
		for (i = 0; i < 256 && lout[i] == lin[255 - i]; i++)
			;
		printf("tex1Dfetch: %s\n", i == 256 ? "ok" : "FAIL");
		nfail += i != 256;
	}

	// Pitched memory, read through a 2D texture.
	{
		cudaTextureObject_t tp;
		size_t pitch;
		float *pd;

		CK(cudaMallocPitch(&pd, &pitch, 16 * sizeof(float), 16));
		CK(cudaMemcpy2D(pd, pitch, img, 16 * sizeof(float),
		    16 * sizeof(float), 16, cudaMemcpyHostToDevice));
		memset(&rd2, 0, sizeof rd2);
		rd2.resType = cudaResourceTypePitch2D;
		rd2.res.pitch2D.devPtr = pd;
		rd2.res.pitch2D.desc = f;
		rd2.res.pitch2D.width = 16;
		rd2.res.pitch2D.height = 16;
		rd2.res.pitch2D.pitchInBytes = pitch;
		td.normalizedCoords = 0;
		td.filterMode = cudaFilterModePoint;
		td.maxMipmapLevelClamp = 0;
		td.mipmapFilterMode = cudaFilterModePoint;
		CK(cudaCreateTextureObject(&tp, &rd2, &td, NULL));
		tex_point<<<dim3(2, 2), dim3(8, 8)>>>(dout, tp, 16, 16);
		if (ran("tex pitch2D")) {
			CK(cudaMemcpy(out, dout, sizeof out,
			    cudaMemcpyDeviceToHost));
			same("tex pitch2D", out, img, sizeof out);
		}
		// A pitch under a row.
		rd2.res.pitch2D.pitchInBytes = 32;
		code("tex pitch under a row", cudaCreateTextureObject(&tp,
		    &rd2, &td, NULL));
		CK(cudaDestroyTextureObject(tp));
		CK(cudaFree(pd));
	}

	// Refused: a bad filter mode, a resource type that is none.
	td2.filterMode = (cudaTextureFilterMode)7;
	{
		cudaTextureObject_t bad;

		code("tex bad filter", cudaCreateTextureObject(&bad, &rd, &td2,
		    NULL));
		rd2.resType = (cudaResourceType)9;
		code("tex bad resource type", cudaCreateTextureObject(&bad,
		    &rd2, &td, NULL));
		if (refused) {
			cudaArray_t gone;

			CK(cudaMallocArray(&gone, &f, 4, 4));
			CK(cudaFreeArray(gone));
			rd2.resType = cudaResourceTypeArray;
			rd2.res.array.array = gone;
			code("tex over a destroyed array",
			    cudaCreateTextureObject(&bad, &rd2, &td, NULL));
		}
	}
	CK(cudaDestroyTextureObject(t));
	CK(cudaDestroyTextureObject(tn));
	CK(cudaDestroyTextureObject(tm));
	CK(cudaDestroyTextureObject(tl));
	CK(cudaFree(dlin));
	CK(cudaFree(dout));
	CK(cudaFreeArray(a));
}

static void
surfaces(void)
{
	cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
	float out[W * H], model[W * H];
	cudaResourceDesc rd;
	cudaSurfaceObject_t s;
	cudaArray_t a, plain;
	int x, y;

	CK(cudaMallocArray(&a, &f, W, H, cudaArraySurfaceLoadStore));
	info("surface array", a);
	memset(&rd, 0, sizeof rd);
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = a;
	CK(cudaCreateSurfaceObject(&s, &rd));
	memset(&rd, 0, sizeof rd);
	CK(cudaGetSurfaceObjectResourceDesc(&rd, s));
	printf("surf resource: type %d array %s\n", (int)rd.resType,
	    rd.res.array.array == a ? "same" : "other");
	surf_write<<<dim3(5, 3), dim3(8, 8)>>>(s, W, H);
	if (ran("surf2Dwrite")) {
		CK(cudaMemcpy2DFromArray(out, W * sizeof(float), a, 0, 0,
		    W * sizeof(float), H, cudaMemcpyDeviceToHost));
		for (y = 0; y < H; y++)
			for (x = 0; x < W; x++)
				model[y * W + x] = (float)(x * 1000 + y);
		same("surf2Dwrite", out, model, sizeof out);
	}
	CK(cudaDestroySurfaceObject(s));

	// Refused: an array not made for load and store.
	CK(cudaMallocArray(&plain, &f, 8, 8));
	rd.res.array.array = plain;
	code("surface without load/store", cudaCreateSurfaceObject(&s, &rd));
	CK(cudaFreeArray(plain));
	CK(cudaFreeArray(a));
}

#define DK(x)	dk((x), __FILE__, __LINE__)

static void
dk(CUresult r, const char *file, int line)
{
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &s);
	printf(NAME ": CUDA error at %s:%d: %s\n", file, line, s ? s : "?");
	exit(2);
}

// The driver's copies by offset, on 1D arrays; with -r (refused) the
// legacy ABI of 32-bit sizes, looked up by name.
static void
driver_api(int refused)
{
	unsigned in[100], out[100], mid[100], i;
	CUDA_ARRAY_DESCRIPTOR d;
	CUarray a, b;
	CUdeviceptr dp;
	CUstream s;

	for (i = 0; i < 100; i++)
		in[i] = i * 2654435761u;
	memset(&d, 0, sizeof d);
	d.Width = 100;
	d.Format = CU_AD_FORMAT_UNSIGNED_INT32;
	d.NumChannels = 1;
	DK(cuArrayCreate(&a, &d));
	DK(cuArrayCreate(&b, &d));
	memset(&d, 0, sizeof d);
	DK(cuArrayGetDescriptor(&d, a));
	printf("1d: width %zu height %zu format %d channels %u\n", d.Width,
	    d.Height, (int)d.Format, d.NumChannels);
	DK(cuMemcpyHtoA(a, 0, in, sizeof in));
	// 40 words at word 10 from in[50].
	DK(cuMemcpyHtoA(a, 40, in + 50, 160));
	memcpy(mid, in, sizeof in);
	memcpy(mid + 10, in + 50, 160);
	DK(cuMemcpyAtoH(out, a, 0, sizeof out));
	same("HtoA at an offset, AtoH", out, mid, sizeof out);
	DK(cuMemAlloc(&dp, sizeof in));
	DK(cuMemcpyAtoD(dp, a, 8, 392));
	DK(cuMemsetD32(dp + 392, 7, 2));
	DK(cuMemcpyDtoA(b, 0, dp, sizeof in));
	DK(cuMemcpyAtoA(a, 0, b, 4, 396));
	memmove(mid, mid + 3, 97 * 4);
	mid[97] = 7;
	mid[98] = 7;	/* mid[99] stays */
	DK(cuStreamCreate(&s, 0));
	DK(cuMemcpyAtoHAsync(out, a, 0, sizeof out, s));
	DK(cuStreamSynchronize(s));
	same("AtoD, DtoA, AtoA, AtoH async", out, mid, sizeof out);
	DK(cuMemcpyHtoAAsync(b, 0, in, sizeof in, s));
	DK(cuMemcpyAtoH(out, b, 0, sizeof out));
	same("HtoA async", out, in, sizeof in);
	printf("HtoA past the end: error %d\n", (int)cuMemcpyHtoA(a, 390,
	    in, 20));
	// (A handle that names no array is not asked about: the real
	// driver (580) reads through it and crashes.)
	if (refused) {
		typedef CUresult (*acreate)(CUarray *, const void *);
		typedef CUresult (*htoa)(CUarray, unsigned, const void *,
		    unsigned);
		typedef CUresult (*atoh)(void *, CUarray, unsigned, unsigned);
		typedef CUresult (*getinfo)(unsigned *, unsigned *);
		struct { unsigned w, h; CUarray_format f; unsigned n; } d1 =
		    { 100, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1 };
		acreate ac = (acreate)dlsym(RTLD_DEFAULT, "cuArrayCreate");
		htoa h1 = (htoa)dlsym(RTLD_DEFAULT, "cuMemcpyHtoA");
		atoh a1 = (atoh)dlsym(RTLD_DEFAULT, "cuMemcpyAtoH");
		getinfo gi = (getinfo)dlsym(RTLD_DEFAULT, "cuMemGetInfo");
		unsigned fr = 0, to = 0;
		CUarray c;

		if (ac == NULL || h1 == NULL || a1 == NULL || gi == NULL) {
			printf("legacy ABI: FAIL not found\n");
			nfail++;
		} else {
			DK(ac(&c, &d1));
			DK(h1(c, 4, in, 396));
			memset(out, 0, sizeof out);
			DK(a1(out + 1, c, 4, 396));
			out[0] = in[99];
			memcpy(mid, in, sizeof in);
			memmove(mid + 1, mid, 396);
			mid[0] = in[99];
			same("legacy HtoA, AtoH", out, mid, sizeof out);
			DK(gi(&fr, &to));
			printf("legacy cuMemGetInfo: %s\n", fr <= to && to > 0 ?
			    "ok" : "FAIL");
			DK(cuArrayDestroy(c));
		}
	}
	DK(cuStreamDestroy(s));
	DK(cuMemFree(dp));
	DK(cuArrayDestroy(a));
	DK(cuArrayDestroy(b));
}

int
main(int argc, char **argv)
{
	cudaChannelFormatDesc bad;
	cudaMipmappedArray_t mm;
	cudaArray_t a;
	int refused = argc > 1 && strcmp(argv[1], "-r") == 0;

	// Line by line: a crash (seen with the real driver) shows where.
	setvbuf(stdout, NULL, _IOLBF, 0);

	CK(cudaSetDevice(0));
	arrays_2d();
	arrays_3d();
	mm = mipmapped();
	textures(mm, refused);
	surfaces();
	CK(cudaFreeMipmappedArray(mm));
	driver_api(refused);

	// Refused array shapes and formats.
	bad = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
	code("3-channel float array", cudaMallocArray(&a, &bad, 8, 8));
	bad = cudaCreateChannelDesc(8, 16, 0, 0,
	    cudaChannelFormatKindUnsigned);
	code("mixed channel widths", cudaMallocArray(&a, &bad, 8, 8));
	bad = cudaCreateChannelDesc<float>();
	code("cubemap not square", cudaMalloc3DArray(&a, &bad,
	    make_cudaExtent(8, 4, 6), cudaArrayCubemap));
	code("too many levels", cudaMallocMipmappedArray(&mm, &bad,
	    make_cudaExtent(8, 8, 0), 5));
	CK(cudaDeviceSynchronize());
	if (nfail) {
		printf(NAME ": FAIL %d\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
