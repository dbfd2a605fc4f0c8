// memset: cudaMemset and cudaMemsetAsync at odd offsets and lengths (the
// value truncated to a byte), cudaMemset2D/2DAsync on a sub-rectangle of
// cudaMallocPitch memory and cudaMemset3D/3DAsync on a sub-box of
// cudaMalloc3D memory.  Every byte of each allocation is compared with a
// CPU model, so bytes just outside a set region must be untouched; a
// kernel also counts the set bytes on the device.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"memset"
#define CK(x)	check((x), __FILE__, __LINE__)

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_XMALLOC | TU_FNVLL)
#include "testutil.h"

// Copy the device buffer back and compare it with its model.
static void
compare(const char *what, const void *d, const unsigned char *model,
    size_t n)
{
	unsigned char *img = (unsigned char *)xmalloc(n);
	size_t bad = 0, first = 0;

	CK(cudaMemcpy(img, d, n, cudaMemcpyDeviceToHost));
	for (size_t i = n; i-- > 0; )
		if (img[i] != model[i]) {
			bad++;
			first = i;
		}
	printf("%-26s %8zu: fnv1a64 %016llx", what, n, fnv(img, n));
	if (bad) {
		printf(" MISMATCH %zu bytes, first at %zu: %02x, want %02x\n",
		    bad, first, img[first], model[first]);
		nfail++;
	} else
		printf(" ok\n");
	free(img);
}

// *count += the number of bytes of p[0..n) equal to v
__global__ void
count_u8(const unsigned char *p, unsigned char v, unsigned n,
    unsigned *count)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n && p[i] == v)
		atomicAdd(count, 1u);
}

static void
devcount(const char *what, const unsigned char *d, unsigned char v,
    size_t n, unsigned want)
{
	unsigned *dc, got;

	CK(cudaMalloc(&dc, sizeof(*dc)));
	CK(cudaMemset(dc, 0, sizeof(*dc)));
	count_u8<<<(unsigned)((n + 255) / 256), 256>>>(d, v, (unsigned)n,
	    dc);
	CK(cudaGetLastError());
	CK(cudaMemcpy(&got, dc, sizeof(got), cudaMemcpyDeviceToHost));
	CK(cudaFree(dc));
	printf("%-26s count of %02x: %u", what, v, got);
	if (got != want) {
		printf(" MISMATCH, want %u\n", want);
		nfail++;
	} else
		printf(" ok\n");
}

#define LEN	((3 << 20) + 5)

static void
linear(cudaStream_t s)
{
	// offset, length, value: odd starts and lengths, a 2-byte and a
	// 4-byte aligned run, one byte, and values wider than a byte.
	static const struct {
		size_t	off, len;
		int	v;
	} runs[] = {
		{ 1, 1, 0xab },
		{ 3, 4097, 0x1234 },
		{ 8192, 65536, 0x5a },
		{ 70000, 3, -1 },
		{ 100002, 2000000, 0x100 },
		{ LEN - 7, 7, 0xc3 },
	};
	unsigned char *d, *model;
	size_t i;

	CK(cudaMalloc(&d, LEN));
	model = (unsigned char *)xmalloc(LEN);
	CK(cudaMemset(d, 0x11, LEN));
	memset(model, 0x11, LEN);
	compare("cudaMemset whole", d, model, LEN);
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (i % 2 == 0)
			CK(cudaMemset(d + runs[i].off, runs[i].v, runs[i].len));
		else
			CK(cudaMemsetAsync(d + runs[i].off, runs[i].v,
			    runs[i].len, i == 3 ? 0 : s));
		memset(model + runs[i].off, runs[i].v, runs[i].len);
	}
	CK(cudaStreamSynchronize(s));
	compare("cudaMemset(Async) runs", d, model, LEN);
	devcount("cudaMemset(Async) runs", d, 0x00, LEN, 2000000);
	devcount("cudaMemset(Async) runs", d, 0x34, LEN, 4097);
	CK(cudaFree(d));
	free(model);
}

#define W2	300
#define H2	50

static void
pitched2d(cudaStream_t s)
{
	unsigned char *d, *model;
	size_t dp, y;

	CK(cudaMallocPitch(&d, &dp, W2, H2));
	model = (unsigned char *)xmalloc(dp * H2);
	CK(cudaMemset(d, 0x22, dp * H2));
	memset(model, 0x22, dp * H2);
	// 131x17 at (7,3); then 1x1 at (299,49), the last byte of the
	// last row, async; then 300x1 at (0,20), a whole row.
	CK(cudaMemset2D(d + 3 * dp + 7, dp, 0x99, 131, 17));
	for (y = 3; y < 3 + 17; y++)
		memset(model + y * dp + 7, 0x99, 131);
	CK(cudaMemset2DAsync(d + 49 * dp + 299, dp, 0x44, 1, 1, s));
	model[49 * dp + 299] = 0x44;
	CK(cudaMemset2DAsync(d + 20 * dp, dp, 0x55, W2, 1, s));
	memset(model + 20 * dp, 0x55, W2);
	CK(cudaStreamSynchronize(s));
	compare("cudaMemset2D(Async)", d, model, dp * H2);
	devcount("cudaMemset2D(Async)", d, 0x99, dp * H2, 131 * 17);
	CK(cudaFree(d));
	free(model);
}

#define W3	45
#define H3	13
#define D3	6

static void
pitched3d(cudaStream_t s)
{
	cudaPitchedPtr p, sub;
	unsigned char *model;
	size_t sz, slice, x, y, z;

	CK(cudaMalloc3D(&p, make_cudaExtent(W3, H3, D3)));
	slice = p.pitch * H3;
	sz = slice * D3;
	model = (unsigned char *)xmalloc(sz);
	CK(cudaMemset(p.ptr, 0x33, sz));
	memset(model, 0x33, sz);
	// The whole extent: the padding past W3 in each row keeps its 0x33.
	CK(cudaMemset3D(p, 0x3a, make_cudaExtent(W3, H3, D3)));
	for (z = 0; z < D3; z++)
		for (y = 0; y < H3; y++)
			memset(model + z * slice + y * p.pitch, 0x3a, W3);
	compare("cudaMemset3D whole extent", p.ptr, model, sz);

	// A 20x5x3 box at (4,6,2).
	sub = p;
	sub.ptr = (char *)p.ptr + 2 * slice + 6 * p.pitch + 4;
	CK(cudaMemset3D(sub, 0x66, make_cudaExtent(20, 5, 3)));
	for (z = 2; z < 2 + 3; z++)
		for (y = 6; y < 6 + 5; y++)
			for (x = 4; x < 4 + 20; x++)
				model[z * slice + y * p.pitch + x] = 0x66;
	// A 45x1x6 wall at (0,12,0), async.
	sub.ptr = (char *)p.ptr + 12 * p.pitch;
	CK(cudaMemset3DAsync(sub, 0x77, make_cudaExtent(W3, 1, D3), s));
	for (z = 0; z < D3; z++)
		memset(model + z * slice + 12 * p.pitch, 0x77, W3);
	CK(cudaStreamSynchronize(s));
	compare("cudaMemset3D(Async) boxes", p.ptr, model, sz);
	devcount("cudaMemset3D(Async) boxes", (unsigned char *)p.ptr, 0x66,
	    sz, 20 * 5 * 3);
	CK(cudaFree(p.ptr));
	free(model);
}

// Page-locked host memory set from a stream (XLA zeroes its small host
// buffers so): after a kernel's write to device memory, in order.
static void
pinned(cudaStream_t s)
{
	unsigned *h, *d;
	unsigned k, bad = 0;

	CK(cudaMallocHost((void **)&h, 64 * sizeof *h));
	CK(cudaMalloc((void **)&d, 64 * sizeof *d));
	memset(h, 0xee, 64 * sizeof *h);
	CK(cudaMemsetAsync(d, 0x11, 64 * sizeof *d, s));
	CK(cudaMemsetAsync(h + 8, 0, 8 * sizeof *h, s));
	CK(cudaStreamSynchronize(s));
	for (k = 0; k < 64; k++)
		bad += h[k] != (k >= 8 && k < 16 ? 0u : 0xeeeeeeeeu);
	printf("%-26s %8zu: %s\n", "cudaMemsetAsync pinned", 8 * sizeof *h,
	    bad ? "MISMATCH" : "ok");
	nfail += bad != 0;
	// The same memory named as the device's in copies: read back
	// "from the device", and copied to the device and back.
	unsigned back[64];
	CK(cudaMemcpyAsync(back, h, sizeof back, cudaMemcpyDeviceToHost, s));
	CK(cudaMemcpyAsync(d, h, sizeof back, cudaMemcpyDeviceToDevice, s));
	CK(cudaStreamSynchronize(s));
	bad = memcmp(back, h, sizeof back) != 0;
	CK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
	bad += memcmp(back, h, sizeof back) != 0;
	printf("%-26s %8zu: %s\n", "pinned as device memory", sizeof back,
	    bad ? "MISMATCH" : "ok");
	nfail += bad != 0;
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
}

int
main()
{
	cudaStream_t s;

	CK(cudaStreamCreate(&s));
	linear(s);
	pitched2d(s);
	pitched3d(s);
	pinned(s);
	CK(cudaStreamDestroy(s));
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
