// params: kernel parameter passing.  A kernel of 40 scalar parameters of
// mixed types and alignments (char, signed and unsigned char, short, int,
// long long, float with a NaN payload and denormals, double, pointers that
// are never dereferenced), structs by value (one with padding, an
// __align__(16) one, each after a small parameter so that its offset must
// be rounded up), a 1 KiB and an 8 KiB struct (parameter space past the
// old 4 KiB limit), a kernel with no parameters at all, and an explicit
// cudaLaunchKernel with an argument array.  Each kernel writes back the
// bits of what it received; the host checks every value.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"params"
#define CK(x)	check((x), __FILE__, __LINE__)

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_FNVLL)
#include "testutil.h"

// The bits of a value, widened to 64: integers sign- or zero-extended as
// C promotes them, floating point as its bit pattern.
__host__ __device__ static unsigned long long
bits(int v)
{
	return (unsigned long long)(long long)v;
}

__host__ __device__ static unsigned long long
bits(unsigned v)
{
	return v;
}

__host__ __device__ static unsigned long long
bits(long long v)
{
	return (unsigned long long)v;
}

__host__ __device__ static unsigned long long
bits(unsigned long long v)
{
	return v;
}

__host__ __device__ static unsigned long long
bits(float v)
{
	unsigned u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

__host__ __device__ static unsigned long long
bits(double v)
{
	unsigned long long u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

__host__ __device__ static unsigned long long
bits(const void *v)
{
	return (unsigned long long)v;
}

static float
fbits(unsigned u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

// The 39 scalars before the output pointer: type, name, value.
#define SCALARS(X)						\
	X(char, c0, 'A')					\
	X(double, d0, -1.25e300)				\
	X(short, s0, -12345)					\
	X(int, i0, -2000000000)					\
	X(signed char, sc0, -128)				\
	X(long long, ll0, -0x123456789abcdefLL)			\
	X(float, f0, 3.14159274f)				\
	X(const int *, p0, (const int *)0x1000)			\
	X(unsigned char, uc0, 255)				\
	X(unsigned short, us0, 65535)				\
	X(float, f1, -0.0f)					\
	X(double, d1, 1e-310)					\
	X(char, c1, 'z')					\
	X(int, i1, 0x7fffffff)					\
	X(unsigned, u0, 0xdeadbeefu)				\
	X(short, s1, 7)						\
	X(long long, ll1, (-0x7fffffffffffffffLL - 1))		\
	X(char, c2, '\001')					\
	X(float, f2, 1e-45f)					\
	X(double, d2, 2.0 / 3.0)				\
	X(const void *, p1, (const void *)0x7ffffffffff0ULL)	\
	X(short, s2, -1)					\
	X(char, c3, '\177')					\
	X(unsigned long long, ull0, 0xfedcba9876543210ULL)	\
	X(float, f3, -65504.0f)					\
	X(int, i2, -1)						\
	X(char, c4, 0)						\
	X(double, d3, -0.0)					\
	X(unsigned char, uc1, 0x80)				\
	X(float, f4, 0.1f)					\
	X(short, s3, 0x4000)					\
	X(long long, ll2, 1)					\
	X(char, c5, '#')					\
	X(const float *, p2, (const float *)0x8)		\
	X(int, i3, 123456789)					\
	X(double, d4, 1.0 / 3.0)				\
	X(signed char, sc1, 99)					\
	X(unsigned short, us1, 0x8001)				\
	X(float, f5, fbits(0x7fc12345u))
#define NSCALARS	39

#define PARAM(t, n, v)	t n,
#define RECORD(t, n, v)	out[k++] = bits(n);
#define ARG(t, n, v)	(t)(v),
#define WANT(t, n, v)	{ t x = (t)(v); want[k++] = bits(x); }

// out[0..39) = the bits of each scalar, in order
__global__ void
many_scalars(SCALARS(PARAM) unsigned long long *out)
{
	int k = 0;

	if (blockIdx.x == 0 && threadIdx.x == 0) {
		SCALARS(RECORD)
	}
}

struct padded {		// 24 bytes, 8-aligned, with holes
	char	c;
	double	d;
	int	i;
	short	s[3];
};

struct __align__(16) al16 {
	unsigned long long	x;
	int			y;
};

struct big {
	unsigned	w[256];
};

struct huge {
	unsigned	w[2048];
};

// out[0..10) = tag, p.c, p.d, p.i, p.s[0..3), tag2, q.x, q.y
__global__ void
two_structs(char tag, struct padded p, short tag2, struct al16 q,
    unsigned long long *out)
{
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		out[0] = bits(tag);
		out[1] = bits(p.c);
		out[2] = bits(p.d);
		out[3] = bits(p.i);
		out[4] = bits(p.s[0]);
		out[5] = bits(p.s[1]);
		out[6] = bits(p.s[2]);
		out[7] = bits(tag2);
		out[8] = bits(q.x);
		out[9] = bits(q.y);
	}
}

// out[i] = b.w[i], one thread a word
__global__ void
big_struct(struct big b, unsigned *out)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < 256)
		out[i] = b.w[i];
}

// out[i] = h.w[i] ^ key, one thread a word
__global__ void
huge_struct(unsigned key, struct huge h, unsigned *out)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < 2048)
		out[i] = h.w[i] ^ key;
}

__device__ unsigned g_noparams;

// g_noparams += 1 for every thread
__global__ void
no_params(void)
{
	atomicAdd(&g_noparams, 1u);
}

static void
compare(const char *what, const unsigned long long *got,
    const unsigned long long *want, int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		if (got[i] != want[i] && bad++ < 5)
			printf("%s: [%d] got %016llx, want %016llx\n", what, i,
			    got[i], want[i]);
	printf("%-14s %4d values: fnv1a64 %016llx %s\n", what, n,
	    fnv(got, n * sizeof(*got)), bad ? "MISMATCH" : "ok");
	if (bad)
		nfail++;
}

int
main()
{
	static struct big b;
	static struct huge hg;
	static unsigned wb[256], wh[2048];
	unsigned long long got[64], want[64], *dout;
	unsigned *dw, count;
	struct padded p;
	struct al16 q;
	int i, k;

	CK(cudaMalloc(&dout, sizeof(got)));
	CK(cudaMalloc(&dw, sizeof(wh)));

	CK(cudaMemset(dout, 0, sizeof(got)));
	many_scalars<<<1, 32>>>(SCALARS(ARG) dout);
	CK(cudaGetLastError());
	CK(cudaMemcpy(got, dout, NSCALARS * sizeof(*got),
	    cudaMemcpyDeviceToHost));
	k = 0;
	SCALARS(WANT)
	compare("many_scalars", got, want, NSCALARS);
	printf("many_scalars d0 %016llx f0 %08llx f5 %08llx d1 %016llx\n",
	    got[1], got[6], got[38], got[11]);

	// Fill the holes of the struct with junk: only fields count.
	memset(&p, 0xa5, sizeof(p));
	p.c = -3;
	p.d = -0.1;
	p.i = 0x13572468;
	p.s[0] = -2;
	p.s[1] = 0x7fff;
	p.s[2] = -32768;
	memset(&q, 0x5a, sizeof(q));
	q.x = 0x8000000000000001ULL;
	q.y = -77;
	want[0] = bits('t');
	want[1] = bits(p.c);
	want[2] = bits(p.d);
	want[3] = bits(p.i);
	want[4] = bits(p.s[0]);
	want[5] = bits(p.s[1]);
	want[6] = bits(p.s[2]);
	want[7] = bits((short)-9);
	want[8] = bits(q.x);
	want[9] = bits(q.y);
	CK(cudaMemset(dout, 0, sizeof(got)));
	two_structs<<<1, 1>>>('t', p, -9, q, dout);
	CK(cudaGetLastError());
	CK(cudaMemcpy(got, dout, 10 * sizeof(*got), cudaMemcpyDeviceToHost));
	compare("two_structs", got, want, 10);

	// The same through cudaLaunchKernel and an argument array.
	{
		char tag = 'u';
		short tag2 = 31000;
		void *args[] = { &tag, &p, &tag2, &q, &dout };

		want[0] = bits(tag);
		want[7] = bits(tag2);
		CK(cudaMemset(dout, 0, sizeof(got)));
		CK(cudaLaunchKernel((const void *)two_structs, dim3(1),
		    dim3(1), args, 0, 0));
		CK(cudaMemcpy(got, dout, 10 * sizeof(*got),
		    cudaMemcpyDeviceToHost));
		compare("cudaLaunchKernel", got, want, 10);
	}

	for (i = 0; i < 256; i++)
		b.w[i] = (unsigned)i * 0x01010101u ^ 0x5a5a0000u;
	CK(cudaMemset(dw, 0, sizeof(wh)));
	big_struct<<<2, 128>>>(b, dw);
	CK(cudaGetLastError());
	CK(cudaMemcpy(wb, dw, sizeof(wb), cudaMemcpyDeviceToHost));
	for (i = 0, k = 0; i < 256; i++)
		if (wb[i] != b.w[i])
			k++;
	printf("big_struct     1024 bytes: fnv1a64 %016llx %s\n",
	    fnv(wb, sizeof(wb)), k ? "MISMATCH" : "ok");
	if (k)
		nfail++;

	for (i = 0; i < 2048; i++)
		hg.w[i] = (unsigned)i * 2654435761u;
	CK(cudaMemset(dw, 0, sizeof(wh)));
	huge_struct<<<16, 128>>>(0xc0ffee, hg, dw);
	CK(cudaGetLastError());
	CK(cudaMemcpy(wh, dw, sizeof(wh), cudaMemcpyDeviceToHost));
	for (i = 0, k = 0; i < 2048; i++)
		if (wh[i] != (hg.w[i] ^ 0xc0ffee))
			k++;
	printf("huge_struct    8192 bytes: fnv1a64 %016llx %s\n",
	    fnv(wh, sizeof(wh)), k ? "MISMATCH" : "ok");
	if (k)
		nfail++;

	count = 0;
	CK(cudaMemcpyToSymbol(g_noparams, &count, sizeof(count)));
	no_params<<<3, 64>>>();
	CK(cudaGetLastError());
	CK(cudaMemcpyFromSymbol(&count, g_noparams, sizeof(count)));
	printf("no_params      threads: %u %s\n", count,
	    count == 3 * 64 ? "ok" : "MISMATCH");
	if (count != 3 * 64)
		nfail++;

	CK(cudaFree(dout));
	CK(cudaFree(dw));
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
