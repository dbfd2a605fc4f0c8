// memcpy: every kind of copy, at sizes 1, 4097 and 3 MiB + 5 bytes:
// cudaMemcpy host-to-device, device-to-host, device-to-device and
// host-to-host, and cudaMemcpyDefault for all four (UVA inference, with
// cudaPointerGetAttributes); cudaMemcpyAsync from and to pinned memory
// (cudaMallocHost, cudaHostAlloc) and pageable memory, the pageable
// source reusable as soon as the call returns and a pageable destination
// complete when it returns; cudaHostRegister'ed memory; completion seen
// through cudaStreamSynchronize, cudaEventSynchronize and cudaStreamQuery
// polling.  Then cudaMemcpy2D/2DAsync between cudaMallocPitch memory and
// host memory of other pitches, and cudaMemcpy3D/3DAsync on cudaMalloc3D
// memory (pitched pointers, no arrays), both with sub-rectangles at
// offsets; every byte of the device allocations, padding included, is
// compared with a model of them kept on the CPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"memcpy"
#define CK(x)	check((x), __FILE__, __LINE__)

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_XMALLOC | TU_FNVLL | TU_XOR_U8)
#include "testutil.h"

static void *
xpages(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, (n + 4095) & ~(size_t)4095) != 0) {
		printf(NAME ": FAIL out of host memory\n");
		exit(1);
	}
	return p;
}

static unsigned char
pat(unsigned seed, size_t i)
{
	return (unsigned char)(((unsigned)(i + 1) * 2654435761u ^
	    seed * 0x9e3779b9u) >> 11);
}

static void
fillpat(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

// Compare p with the pattern of seed xor x; print one line either way.
static void
checkpat(const char *what, const unsigned char *p, size_t n, unsigned seed,
    unsigned char x)
{
	size_t bad = 0, first = 0;

	for (size_t i = n; i-- > 0; )
		if (p[i] != (unsigned char)(pat(seed, i) ^ x)) {
			bad++;
			first = i;
		}
	printf("%-28s %7zu: fnv1a64 %016llx first %02x last %02x", what, n,
	    fnv(p, n), p[0], p[n - 1]);
	if (bad) {
		printf(" MISMATCH %zu bytes, first at %zu\n", bad, first);
		nfail++;
	} else
		printf(" ok\n");
}

// Compare a device image with its model; print one line either way.
static void
checkmodel(const char *what, const unsigned char *got,
    const unsigned char *want, size_t n)
{
	size_t bad = 0, first = 0;

	for (size_t i = n; i-- > 0; )
		if (got[i] != want[i]) {
			bad++;
			first = i;
		}
	printf("%-28s %7zu: fnv1a64 %016llx", what, n, fnv(got, n));
	if (bad) {
		printf(" MISMATCH %zu bytes, first at %zu\n", bad, first);
		nfail++;
	} else
		printf(" ok\n");
}

static unsigned
grid(size_t n)
{
	return (unsigned)((n + 255) / 256);
}

static void
memtype(const char *what, const void *p, cudaMemoryType want)
{
	cudaPointerAttributes a;

	CK(cudaPointerGetAttributes(&a, p));
	printf("cudaPointerGetAttributes(%s): type %d", what, (int)a.type);
	if (a.type != want) {
		printf(" MISMATCH, want %d\n", (int)want);
		nfail++;
	} else
		printf(" ok\n");
}

// The linear copies of one size.
static void
linear(size_t n, cudaStream_t s)
{
	unsigned char *h, *h2, *pin, *pin2, *reg, *reg2;
	unsigned char *d1, *d2;
	cudaEvent_t ev;
	cudaError_t e;

	h = (unsigned char *)xmalloc(n);
	h2 = (unsigned char *)xmalloc(n);
	// Whole pages of their own: registrations must not overlap.
	reg = (unsigned char *)xpages(n);
	reg2 = (unsigned char *)xpages(n);
	CK(cudaMallocHost(&pin, n));
	CK(cudaHostAlloc(&pin2, n, cudaHostAllocPortable));
	CK(cudaMalloc(&d1, n));
	CK(cudaMalloc(&d2, n));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

	// Synchronous, explicit kinds.
	fillpat(h, n, 1);
	CK(cudaMemcpy(d1, h, n, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
	xor_u8<<<grid(n), 256>>>(d1, d2, 0x5a, (unsigned)n);
	CK(cudaGetLastError());
	CK(cudaMemcpy(h2, d1, n, cudaMemcpyDeviceToHost));
	checkpat("HtoD DtoD kernel DtoH", h2, n, 1, 0x5a);
	CK(cudaMemcpy(h2, d2, n, cudaMemcpyDeviceToHost));
	checkpat("HtoD DtoD DtoH", h2, n, 1, 0);
	memset(h2, 0, n);
	CK(cudaMemcpy(h2, h, n, cudaMemcpyHostToHost));
	checkpat("HtoH pageable", h2, n, 1, 0);
	CK(cudaMemcpy(pin, h, n, cudaMemcpyHostToHost));
	checkpat("HtoH pageable to pinned", pin, n, 1, 0);

	// cudaMemcpyDefault: the direction from the addresses.
	fillpat(h, n, 2);
	CK(cudaMemcpy(d1, h, n, cudaMemcpyDefault));
	CK(cudaMemcpy(d2, d1, n, cudaMemcpyDefault));
	CK(cudaMemcpy(pin, d2, n, cudaMemcpyDefault));
	CK(cudaMemcpy(h2, pin, n, cudaMemcpyDefault));
	checkpat("Default H D D pinned H", h2, n, 2, 0);

	// Async between pinned buffers.
	fillpat(pin, n, 3);
	memset(pin2, 0, n);
	CK(cudaMemcpyAsync(d1, pin, n, cudaMemcpyHostToDevice, s));
	xor_u8<<<grid(n), 256, 0, s>>>(d2, d1, 0xa5, (unsigned)n);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(pin2, d2, n, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	checkpat("async pinned, stream sync", pin2, n, 3, 0xa5);

	// Async from pageable memory: the source may change once the call
	// returned; a pageable destination is complete when it returns.
	fillpat(h, n, 4);
	CK(cudaMemcpyAsync(d1, h, n, cudaMemcpyHostToDevice, s));
	memset(h, 0xff, n);
	xor_u8<<<grid(n), 256, 0, s>>>(d2, d1, 0x3c, (unsigned)n);
	CK(cudaGetLastError());
	memset(h2, 0, n);
	CK(cudaMemcpyAsync(h2, d2, n, cudaMemcpyDeviceToHost, s));
	checkpat("async pageable, no sync", h2, n, 4, 0x3c);
	CK(cudaStreamSynchronize(s));

	// Registered pageable memory behaves as pinned: complete at the
	// event.
	fillpat(reg, n, 5);
	memset(reg2, 0, n);
	CK(cudaHostRegister(reg, n, cudaHostRegisterDefault));
	CK(cudaHostRegister(reg2, n, cudaHostRegisterDefault));
	memtype("registered", reg, cudaMemoryTypeHost);
	CK(cudaMemcpyAsync(d1, reg, n, cudaMemcpyHostToDevice, s));
	xor_u8<<<grid(n), 256, 0, s>>>(d2, d1, 0x81, (unsigned)n);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(reg2, d2, n, cudaMemcpyDeviceToHost, s));
	CK(cudaEventRecord(ev, s));
	CK(cudaEventSynchronize(ev));
	checkpat("async registered, event", reg2, n, 5, 0x81);
	CK(cudaHostUnregister(reg));
	CK(cudaHostUnregister(reg2));

	// Async with cudaMemcpyDefault, completion by polling.
	fillpat(pin, n, 6);
	memset(pin2, 0, n);
	CK(cudaMemcpyAsync(d2, pin, n, cudaMemcpyDefault, s));
	CK(cudaMemcpyAsync(d1, d2, n, cudaMemcpyDefault, s));
	CK(cudaMemcpyAsync(pin2, d1, n, cudaMemcpyDefault, s));
	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady)
		;
	CK(e);
	checkpat("async Default, query poll", pin2, n, 6, 0);

	CK(cudaEventDestroy(ev));
	CK(cudaFree(d1));
	CK(cudaFree(d2));
	CK(cudaFreeHost(pin));
	CK(cudaFreeHost(pin2));
	free(h);
	free(h2);
	free(reg);
	free(reg2);
}

// The CPU side of a 2D copy.
static void
copy2d(unsigned char *dst, size_t dpitch, const unsigned char *src,
    size_t spitch, size_t w, size_t h)
{
	for (size_t y = 0; y < h; y++)
		memcpy(dst + y * dpitch, src + y * spitch, w);
}

#define W2	333
#define H2	77
#define HP	352	// host pitch of the source
#define HP2	400	// host pitch of the destination

static void
pitched2d(cudaStream_t s)
{
	unsigned char *src, *dst, *want, *m1, *m2, *img, *d1, *d2;
	size_t dp, dp2, sz;

	CK(cudaMallocPitch(&d1, &dp, W2, H2));
	CK(cudaMallocPitch(&d2, &dp2, W2, H2));
	if (dp != dp2 || dp < W2) {
		printf(NAME ": FAIL pitches %zu and %zu for width %d\n", dp,
		    dp2, W2);
		exit(1);
	}
	sz = dp * H2;
	CK(cudaMallocHost(&src, HP * H2));
	CK(cudaMallocHost(&dst, HP2 * H2));
	want = (unsigned char *)xmalloc(HP2 * H2);
	m1 = (unsigned char *)xmalloc(sz);
	m2 = (unsigned char *)xmalloc(sz);
	img = (unsigned char *)xmalloc(sz);

	// The models m1 and m2 follow every operation on d1 and d2.
	fillpat(src, HP * H2, 7);
	CK(cudaMemset(d1, 0x11, sz));
	CK(cudaMemset(d2, 0xee, sz));
	memset(m1, 0x11, sz);
	memset(m2, 0xee, sz);

	CK(cudaMemcpy2D(d1, dp, src, HP, W2, H2, cudaMemcpyHostToDevice));
	copy2d(m1, dp, src, HP, W2, H2);
	// A 100x30 block from (17,5) in d1 to (41,20) in d2.
	CK(cudaMemcpy2D(d2 + 20 * dp + 41, dp, d1 + 5 * dp + 17, dp, 100, 30,
	    cudaMemcpyDeviceToDevice));
	copy2d(m2 + 20 * dp + 41, dp, m1 + 5 * dp + 17, dp, 100, 30);
	// A 50x20 block from (11,7) in host memory to (9,3) in d1.
	CK(cudaMemcpy2DAsync(d1 + 3 * dp + 9, dp, src + 7 * HP + 11, HP, 50,
	    20, cudaMemcpyHostToDevice, s));
	copy2d(m1 + 3 * dp + 9, dp, src + 7 * HP + 11, HP, 50, 20);
	// d2 whole into host memory of pitch HP2: bytes past W2 untouched.
	memset(dst, 0xcd, HP2 * H2);
	memset(want, 0xcd, HP2 * H2);
	CK(cudaMemcpy2DAsync(dst, HP2, d2, dp, W2, H2, cudaMemcpyDeviceToHost,
	    s));
	copy2d(want, HP2, m2, dp, W2, H2);
	CK(cudaStreamSynchronize(s));
	checkmodel("2D DtoH, host pitch 400", dst, want, HP2 * H2);
	// A 64x9 block from (200,60) in d1 into host memory at (1,2).
	CK(cudaMemcpy2D(dst + 2 * HP2 + 1, HP2, d1 + 60 * dp + 200, dp, 64, 9,
	    cudaMemcpyDeviceToHost));
	copy2d(want + 2 * HP2 + 1, HP2, m1 + 60 * dp + 200, dp, 64, 9);
	checkmodel("2D DtoH sub-rectangle", dst, want, HP2 * H2);

	CK(cudaMemcpy(img, d1, sz, cudaMemcpyDeviceToHost));
	checkmodel("2D device image 1", img, m1, sz);
	CK(cudaMemcpy(img, d2, sz, cudaMemcpyDeviceToHost));
	checkmodel("2D device image 2", img, m2, sz);

	CK(cudaFree(d1));
	CK(cudaFree(d2));
	CK(cudaFreeHost(src));
	CK(cudaFreeHost(dst));
	free(want);
	free(m1);
	free(m2);
	free(img);
}

// The CPU side of a 3D copy between pitched pointers, as cudaMemcpy3D
// does it (x in bytes).
static void
copy3d(const cudaMemcpy3DParms *p)
{
	const cudaPitchedPtr *d = &p->dstPtr, *s = &p->srcPtr;

	for (size_t z = 0; z < p->extent.depth; z++)
		for (size_t y = 0; y < p->extent.height; y++)
			memcpy((char *)d->ptr + ((p->dstPos.z + z) * d->ysize +
			    p->dstPos.y + y) * d->pitch + p->dstPos.x,
			    (char *)s->ptr + ((p->srcPos.z + z) * s->ysize +
			    p->srcPos.y + y) * s->pitch + p->srcPos.x,
			    p->extent.width);
}

// The same copy on the GPU (synchronous or on stream s) and on the
// models: a pointer to device memory is replaced by its model.
static void
both3d(cudaMemcpy3DParms p, cudaStream_t s, const void *d1, void *m1,
    const void *d2, void *m2)
{
	if (s == NULL)
		CK(cudaMemcpy3D(&p));
	else
		CK(cudaMemcpy3DAsync(&p, s));
	if (p.srcPtr.ptr == d1)
		p.srcPtr.ptr = m1;
	else if (p.srcPtr.ptr == d2)
		p.srcPtr.ptr = m2;
	if (p.dstPtr.ptr == d1)
		p.dstPtr.ptr = m1;
	else if (p.dstPtr.ptr == d2)
		p.dstPtr.ptr = m2;
	copy3d(&p);
}

#define W3	61
#define H3	19
#define D3	7

static void
pitched3d(cudaStream_t s)
{
	cudaExtent ext = make_cudaExtent(W3, H3, D3);
	cudaPitchedPtr d1, d2, hsrc, hdst;
	cudaMemcpy3DParms p;
	unsigned char *src, *dst, *want, *m1, *m2, *img;
	size_t sz;

	CK(cudaMalloc3D(&d1, ext));
	CK(cudaMalloc3D(&d2, ext));
	sz = d1.pitch * H3 * D3;
	src = (unsigned char *)xmalloc(64 * 20 * D3);
	CK(cudaMallocHost(&dst, 72 * 21 * D3));
	want = (unsigned char *)xmalloc(72 * 21 * D3);
	m1 = (unsigned char *)xmalloc(sz);
	m2 = (unsigned char *)xmalloc(sz);
	img = (unsigned char *)xmalloc(sz);
	hsrc = make_cudaPitchedPtr(src, 64, W3, 20);
	hdst = make_cudaPitchedPtr(dst, 72, W3, 21);
	fillpat(src, 64 * 20 * D3, 8);
	CK(cudaMemset(d1.ptr, 0, sz));
	CK(cudaMemset(d2.ptr, 0x77, sz));
	memset(m1, 0, sz);
	memset(m2, 0x77, sz);
	memset(dst, 0xcd, 72 * 21 * D3);
	memset(want, 0xcd, 72 * 21 * D3);

	// Host box into d1, whole.
	memset(&p, 0, sizeof(p));
	p.srcPtr = hsrc;
	p.dstPtr = d1;
	p.extent = ext;
	p.kind = cudaMemcpyHostToDevice;
	both3d(p, NULL, d1.ptr, m1, d2.ptr, m2);
	// A 30x8x4 box from (5,2,1) in d1 to (20,9,3) in d2.
	memset(&p, 0, sizeof(p));
	p.srcPtr = d1;
	p.srcPos = make_cudaPos(5, 2, 1);
	p.dstPtr = d2;
	p.dstPos = make_cudaPos(20, 9, 3);
	p.extent = make_cudaExtent(30, 8, 4);
	p.kind = cudaMemcpyDeviceToDevice;
	both3d(p, NULL, d1.ptr, m1, d2.ptr, m2);
	// A 10x5x3 box from (3,4,2) in host memory to (0,0,0) in d1, async.
	memset(&p, 0, sizeof(p));
	p.srcPtr = hsrc;
	p.srcPos = make_cudaPos(3, 4, 2);
	p.dstPtr = d1;
	p.extent = make_cudaExtent(10, 5, 3);
	p.kind = cudaMemcpyHostToDevice;
	both3d(p, s, d1.ptr, m1, d2.ptr, m2);
	// d2 whole into host memory of pitch 72 and 21 rows a slice, async.
	memset(&p, 0, sizeof(p));
	p.srcPtr = d2;
	p.dstPtr = hdst;
	p.extent = ext;
	p.kind = cudaMemcpyDefault;
	p.dstPtr.ptr = want;
	p.srcPtr.ptr = m2;	// the model of d2
	copy3d(&p);
	p.srcPtr = d2;
	p.dstPtr.ptr = dst;
	CK(cudaMemcpy3DAsync(&p, s));
	CK(cudaStreamSynchronize(s));
	checkmodel("3D DtoH, pitch 72 ysize 21", dst, want, 72 * 21 * D3);

	CK(cudaMemcpy(img, d1.ptr, sz, cudaMemcpyDeviceToHost));
	checkmodel("3D device image 1", img, m1, sz);
	CK(cudaMemcpy(img, d2.ptr, sz, cudaMemcpyDeviceToHost));
	checkmodel("3D device image 2", img, m2, sz);

	CK(cudaFree(d1.ptr));
	CK(cudaFree(d2.ptr));
	CK(cudaFreeHost(dst));
	free(src);
	free(want);
	free(m1);
	free(m2);
	free(img);
}

int
main()
{
	static const size_t sizes[] = { 1, 4097, (3 << 20) + 5 };
	cudaStream_t s;
	void *d, *pin;
	char local;

	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&d, 16));
	CK(cudaMallocHost(&pin, 16));
	memtype("device", d, cudaMemoryTypeDevice);
	memtype("cudaMallocHost", pin, cudaMemoryTypeHost);
	memtype("pageable", &local, cudaMemoryTypeUnregistered);
	CK(cudaFree(d));
	CK(cudaFreeHost(pin));

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		linear(sizes[i], s);
	pitched2d(s);
	pitched3d(s);
	CK(cudaStreamDestroy(s));
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
