// testutil.h: the scaffolding that the test programs in tests/cuda share:
// error checks that print and exit 2, FNV-1a checksums, a host allocation
// that fails with FAIL, and the small kernels that the host backend has
// (host-kernels.c).  Not a library: a program includes it once, after it
// has defined NAME (its name, the prefix of its messages) and TESTUTIL,
// the TU_ flags of what it uses or'd together (TU_CHECK | TU_FNVLL, say),
// and gets only those: a kernel here is in the program's module only
// where the program asks for it, and where copies differed (a message, a
// type) each is here under its own flag, so that every program prints
// what it printed before.  The checks take the caller's __FILE__ from the
// program's CK macro (TU_CKDRV defines a CK of its own); TU_EXPECT counts
// into the program's nfail, which must be declared first.
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define TU_CHECK	0x0001	// check(e, file, line): name, string
#define TU_CHECK_WHAT	0x0002	// check(e, what, file, line): name, call
#define TU_CHECKCU	0x0004	// checkcu(e, what, file, line): driver's
#define TU_FNV32	0x0008	// unsigned fnv(p, n)
#define TU_FNV64	0x0010	// uint64_t fnv(p, n)
#define TU_FNVLL	0x0020	// unsigned long long fnv(p, n)
#define TU_XMALLOC	0x0040	// xmalloc(n): FAIL out of host memory
#define TU_CODE		0x0080	// code(what, e): the code, error cleared
#define TU_EXPECT	0x0100	// expect(ok, what): yes or NO, nfail
#define TU_SET_U32	0x0200	// kernel set_u32
#define TU_XOR_U8	0x0400	// kernel xor_u8
#define TU_SOAKINC	0x0800	// kernel soakInc
#define TU_VECADD	0x1000	// kernel vecAdd
#define TU_CKDRV	0x2000	// CK(x): a driver call checked in place
#define TU_FILL_U32	0x4000	// kernel fill_u32
#define TU_AFFINE_U32	0x8000	// kernel affine_u32
#define TU_MIX_U32	0x10000	// kernel mix_u32

#if !defined(NAME) || !defined(TESTUTIL)
#error "testutil.h: define NAME and TESTUTIL first"
#endif

#if (TESTUTIL) & TU_CHECK
static void
check(cudaError_t e, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    cudaGetErrorName(e), cudaGetErrorString(e));
	exit(2);
}
#endif

#if (TESTUTIL) & TU_CHECK_WHAT
static void
check(cudaError_t e, const char *what, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    cudaGetErrorName(e), what);
	exit(2);
}
#endif

#if (TESTUTIL) & TU_CHECKCU
#include <cuda.h>

static void
checkcu(CUresult e, const char *what, const char *file, int line)
{
	const char *s = NULL;

	if (e == CUDA_SUCCESS)
		return;
	cuGetErrorName(e, &s);
	printf(NAME ": CUDA error at %s:%d: %s: %s\n", file, line,
	    s ? s : "?", what);
	exit(2);
}
#endif

#if (TESTUTIL) & TU_CKDRV
#include <cuda.h>

// CK(x) for the driver API: a statement that prints the error's name and
// exits 2.
#define CK(x) do {							\
	CUresult rc_ = (x);						\
	if (rc_ != CUDA_SUCCESS) {					\
		const char *s_ = "?";					\
		cuGetErrorName(rc_, &s_);				\
		printf(NAME ": CUDA error at %s:%d: %s\n", __FILE__,	\
		    __LINE__, s_);					\
		exit(2);						\
	}								\
} while (0)
#endif

#if (TESTUTIL) & TU_FNV32
static unsigned
fnv(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned x = 2166136261u;

	for (size_t i = 0; i < n; i++)
		x = (x ^ b[i]) * 16777619u;
	return x;
}
#endif

#if (TESTUTIL) & TU_FNV64
static uint64_t
fnv(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	uint64_t h = 1469598103934665603ull;

	while (n-- > 0)
		h = (h ^ *b++) * 1099511628211ull;
	return h;
}
#endif

#if (TESTUTIL) & TU_FNVLL
static unsigned long long
fnv(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	unsigned long long h = 0xcbf29ce484222325ULL;

	while (n-- > 0)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}
#endif

#if (TESTUTIL) & TU_XMALLOC
static void *
xmalloc(size_t n)
{
	void *p;

	if ((p = malloc(n)) == NULL) {
		printf(NAME ": FAIL out of host memory\n");
		exit(1);
	}
	return p;
}
#endif

#if (TESTUTIL) & TU_CODE
static void
code(const char *what, cudaError_t rc)
{
	printf("%-48s %d\n", what, (int)rc);
	cudaGetLastError();
}
#endif

#if (TESTUTIL) & TU_EXPECT
static void
expect(int ok, const char *what)
{
	printf("%s: %s\n", what, ok ? "yes" : "NO");
	if (!ok)
		nfail++;
}
#endif

// The kernels: host-kernels.c has them under these names.

#if (TESTUTIL) & TU_SET_U32
__global__ void
set_u32(unsigned *p, unsigned v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = v ^ (unsigned)i;
}
#endif

#if (TESTUTIL) & TU_XOR_U8
__global__ void
xor_u8(unsigned char *dst, const unsigned char *src, unsigned char k,
    unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = src[i] ^ k;
}
#endif

#if (TESTUTIL) & TU_VECADD
__global__ void
vecAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}
#endif

#if (TESTUTIL) & TU_SOAKINC
__global__ void
soakInc(unsigned *v, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < n)
		v[i] += 1;
}
#endif

#if (TESTUTIL) & TU_FILL_U32
__global__ void
fill_u32(unsigned *p, unsigned base, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = base + (unsigned)i * 2654435761u;
}
#endif

#if (TESTUTIL) & TU_AFFINE_U32
// p = p * mul + add
__global__ void
affine_u32(unsigned *p, unsigned mul, unsigned add, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = p[i] * mul + add;
}
#endif

#if (TESTUTIL) & TU_MIX_U32
__global__ void
mix_u32(unsigned *p, unsigned id, unsigned round, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = p[i] * 31 + (id << 16) + round;
}
#endif

#endif // TESTUTIL_H
