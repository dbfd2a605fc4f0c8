// pinread: small page-locked memory read by the host after each
// synchronization, as llama.cpp reads its token and logits: a copy into
// it (cudaMemcpyAsync) and a kernel writing it through its host pointer,
// each followed by a stream synchronization and the host's read, 40
// rounds each; then two streams writing one buffer, one synchronized, and
// the other; then a 4-byte buffer written by copies, 10 rounds.  Prints
// what the host read (checksums), so that a local run and a remote one
// compare.  Through Gleam such memory is mapped memory
// (gleam-client(7)) whose blocks the synchronization brings back beside
// it: tests/bats/remote.bats counts the round trips with and without
// GLEAM_MAPPED_PREFETCH.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"pinread"
#define CK(x)	check((x), __FILE__, __LINE__)
#define ROUNDS	40
#define W	32

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_SET_U32)
#include "testutil.h"

// Are p[0..W) v ^ i?
static int
holds(const unsigned *p, unsigned v)
{
	for (int i = 0; i < W; i++)
		if (p[i] != (v ^ (unsigned)i))
			return 0;
	return 1;
}

// The checksum so far, with p[0..W) read.
static unsigned
mix(unsigned sum, const unsigned *p)
{
	return sum * 16777619u ^ fnv(p, W * sizeof *p);
}

int
main(void)
{
	cudaStream_t a, b;
	unsigned *h, *d, sum = 0;
	int bad = 0;

	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CK(cudaMallocHost(&h, 1024 * sizeof *h));
	CK(cudaMalloc(&d, W * sizeof *d));

	// A copy into it, then the host reads.
	for (int r = 0; r < ROUNDS; r++) {
		set_u32<<<1, W, 0, a>>>(d, 1000u + (unsigned)r, W);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(h, d, W * sizeof *d, cudaMemcpyDeviceToHost,
		    a));
		CK(cudaStreamSynchronize(a));
		bad += !holds(h, 1000u + (unsigned)r);
		sum = mix(sum, h);
	}
	printf("copy then read: %s %08x\n", bad ? "WRONG" : "ok", sum);

	// A kernel writes it through the host pointer, then the host reads.
	bad = 0;
	for (int r = 0; r < ROUNDS; r++) {
		set_u32<<<1, W, 0, a>>>(h + 256, 2000u + (unsigned)r, W);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(a));
		bad += !holds(h + 256, 2000u + (unsigned)r);
		sum = mix(sum, h + 256);
	}
	printf("kernel then read: %s %08x\n", bad ? "WRONG" : "ok", sum);

	// Two streams write it, each synchronized before the host reads
	// what it wrote: the second's bytes are the device's after its own
	// wait, whatever the first brought.
	bad = 0;
	for (int r = 0; r < ROUNDS / 4; r++) {
		set_u32<<<1, W, 0, a>>>(h, 3000u + (unsigned)r, W);
		set_u32<<<1, W, 0, b>>>(h + 512, 4000u + (unsigned)r, W);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(a));
		bad += !holds(h, 3000u + (unsigned)r);
		CK(cudaStreamSynchronize(b));
		bad += !holds(h + 512, 4000u + (unsigned)r);
		sum = mix(mix(sum, h), h + 512);
	}
	printf("two streams: %s %08x\n", bad ? "WRONG" : "ok", sum);

	// The host writes it, a kernel overwrites part, the host reads both.
	for (int i = 0; i < W; i++)
		h[768 + i] = 77u;
	set_u32<<<1, W / 2, 0, a>>>(h + 768, 5000u, W / 2);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(a));
	bad = 0;
	for (int i = 0; i < W; i++)
		bad += h[768 + i] != (i < W / 2 ? 5000u ^ (unsigned)i : 77u);
	printf("host then kernel: %s\n", bad ? "WRONG" : "ok");

	// A 4-byte buffer, as llama.cpp's token: a copy into it, then the
	// host reads.  Through Gleam only its 4 bytes cross, not its page.
	unsigned *t4;
	CK(cudaMallocHost(&t4, sizeof *t4));
	bad = 0;
	for (int r = 0; r < ROUNDS / 4; r++) {
		set_u32<<<1, W, 0, a>>>(d, 6000u + (unsigned)r, W);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(t4, d + 1, sizeof *t4,
		    cudaMemcpyDeviceToHost, a));
		CK(cudaStreamSynchronize(a));
		bad += *t4 != ((6000u + (unsigned)r) ^ 1u);
		sum = sum * 16777619u ^ *t4;
	}
	printf("small buffer: %s %08x\n", bad ? "WRONG" : "ok", sum);
	CK(cudaFreeHost(t4));

	CK(cudaFreeHost(h));
	CK(cudaFree(d));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	printf(NAME ": ok\n");
	return 0;
}
