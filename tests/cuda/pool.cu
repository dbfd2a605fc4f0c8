// pool [oom]: allocations of many sizes, small and large, live together
// without overlapping: each is filled with its own byte by cudaMemset and
// read back whole, then every other one is freed and others take their
// place, and all are checked again.  With "oom": allocations of 48 MiB
// until the device says cudaErrorMemoryAllocation, at that call; then all
// are freed and the same number is allocated again.  Prints the checks
// and "pool: ok"; exits 1 when a check fails, 2 when a CUDA call failed.
// Through Gleam the allocations are one-way (gleam-client(7)): this is
// what shows they behave as cudaMalloc's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call) do {						\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "pool: %s: %s\n", #call,		\
		    cudaGetErrorString(e_));				\
		exit(2);						\
	}								\
} while (0)

struct buf {
	unsigned char	*d;
	size_t		 n;
	unsigned char	 v;
};

static size_t
size_of(unsigned i)
{
	// Mostly small (1 byte to 200 KB), every seventh 1 to 9 MiB.
	unsigned x = i * 2654435761u;

	if (i % 7 == 3)
		return (size_t)(1u << 20) + x % (8u << 20);
	return 1 + x % 200000;
}

static void
fill(std::vector<buf> &v, unsigned from, unsigned count)
{
	for (unsigned i = from; i < from + count; i++) {
		buf b;

		b.n = size_of(i);
		b.v = (unsigned char)(i * 37 + 11);
		CHECK(cudaMalloc(&b.d, b.n));
		CHECK(cudaMemset(b.d, b.v, b.n));
		v.push_back(b);
	}
}

// Every live buffer still holds its own byte: no two overlap.
static int
check(const std::vector<buf> &v)
{
	std::vector<unsigned char> h;
	int bad = 0;

	for (const buf &b : v) {
		if (b.d == NULL)
			continue;
		h.assign(b.n, 0);
		CHECK(cudaMemcpy(h.data(), b.d, b.n, cudaMemcpyDeviceToHost));
		for (size_t j = 0; j < b.n; j++)
			if (h[j] != b.v) {
				bad++;
				break;
			}
		if ((uintptr_t)b.d % 256 != 0)
			bad++;
	}
	return bad;
}

// Blocks under the client pool's 64 MiB, above which an allocation the
// stock cannot hold goes to cuMemAlloc: this is the pool's own limit.
#define OOM_BLOCK	(48u << 20)

static int
oom(void)
{
	std::vector<void *> v;
	cudaError_t e;
	size_t n;
	void *p;

	for (;;) {
		if ((e = cudaMalloc(&p, OOM_BLOCK)) != cudaSuccess)
			break;
		v.push_back(p);
		if (v.size() > 100000)
			break;
	}
	printf("allocation after %zu of %u MiB: %s\n", v.size(), OOM_BLOCK >> 20,
	    cudaGetErrorName(e));
	if (e != cudaErrorMemoryAllocation)
		return 1;
	if (cudaGetLastError() != cudaErrorMemoryAllocation ||
	    cudaGetLastError() != cudaSuccess) {
		printf("cudaGetLastError: WRONG\n");
		return 1;
	}
	n = v.size();
	for (void *q : v)
		CHECK(cudaFree(q));
	v.clear();
	for (size_t i = 0; i < n; i++) {
		CHECK(cudaMalloc(&p, OOM_BLOCK));
		v.push_back(p);
	}
	printf("after freeing them, %zu again: ok\n", n);
	for (void *q : v)
		CHECK(cudaFree(q));
	return 0;
}

int
main(int argc, char **argv)
{
	std::vector<buf> v;
	size_t f0, f1, t;
	int bad;

	CHECK(cudaFree(0));
	if (argc > 1 && strcmp(argv[1], "oom") == 0) {
		if (oom() != 0) {
			printf("pool: FAIL\n");
			return 1;
		}
		printf("pool: ok\n");
		return 0;
	}
	CHECK(cudaMemGetInfo(&f0, &t));
	fill(v, 0, 400);
	CHECK(cudaDeviceSynchronize());
	bad = check(v);
	printf("400 buffers, each its own bytes: %s\n", bad ? "WRONG" : "ok");
	for (size_t i = 0; i < v.size(); i += 2) {
		CHECK(cudaFree(v[i].d));
		v[i].d = NULL;
	}
	fill(v, 400, 200);
	bad += check(v);
	printf("half freed, 200 more: %s\n", bad ? "WRONG" : "ok");
	CHECK(cudaMemGetInfo(&f1, &t));
	printf("free memory fell: %s\n", f1 < f0 ? "yes" : "NO");
	if (f1 >= f0)
		bad++;
	for (const buf &b : v)
		if (b.d != NULL)
			CHECK(cudaFree(b.d));
	// A loader's pattern: a new allocation, a copy into it, a sync of
	// the stream; 20 times (through Gleam the syncs need no round trip).
	{
		std::vector<unsigned char> h(3u << 20, 7), back(3u << 20);
		std::vector<void *> t;
		cudaStream_t s;
		void *d;

		CHECK(cudaStreamCreate(&s));
		for (int i = 0; i < 20; i++) {
			CHECK(cudaMalloc(&d, h.size()));
			CHECK(cudaMemcpyAsync(d, h.data(), h.size(),
			    cudaMemcpyHostToDevice, s));
			CHECK(cudaStreamSynchronize(s));
			t.push_back(d);
		}
		CHECK(cudaMemcpy(back.data(), t[19], back.size(),
		    cudaMemcpyDeviceToHost));
		printf("20 loads of a new allocation: %s\n",
		    back == h ? "ok" : "WRONG");
		if (back != h)
			bad++;
		for (void *q : t)
			CHECK(cudaFree(q));
		CHECK(cudaStreamDestroy(s));
	}
	printf("pool: %s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}
