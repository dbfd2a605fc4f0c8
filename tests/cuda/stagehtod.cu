// stagehtod: asynchronous host-to-device copies into a stream that is
// still busy, as a training loop queues its next batch behind the step
// before it.  Gleam's server stages such a copy in page-locked memory of
// its own and reads the next call at once (gleam-serve(8),
// GLEAM_STAGE_HTOD); this checks that every copy lands with the bytes the
// host buffer held when the copy was made, in the stream's order:
//  - rounds of copies of sizes from 1 byte to 3 MiB (past the staged
//    limit, 2 MiB, and together past the 8 MiB ring many times over), each
//    behind a kernel that keeps the stream busy for a while, from one
//    pageable buffer rewritten right after each call returns;
//  - after each copy of whole words, a kernel in the same stream that
//    transforms the region (it must see the copy's bytes, not older ones);
//  - on a second stream, behind an event recorded after the round, a copy
//    of the round's first region elsewhere (it must see the copy too).
// Prints what does not depend on timing: a local and a remote run print
// the same.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>

#include <cuda_runtime.h>

#define NAME	"stagehtod"
#define CK(x)	check((x), __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK | TU_AFFINE_U32 | TU_FNV64)
#include "testutil.h"

// bench/step-phases.cu's kernel (the host backend has it): spins about ns
// nanoseconds.
__global__ void
step_phase(const int *pos, int *tok, long long ns, int last)
{
	long long t0 = clock64(), cycles = ns * 2;	// about 2 GHz

	while (clock64() - t0 < cycles)
		;
	if (last && threadIdx.x == 0)
		*tok = *pos * 7 + 3;
}

static const size_t sizes[] = { 1, 17, 4096, 65539, 262144, 1 << 20,
    2 << 20, (2 << 20) + 4, 3 << 20 };
#define NSIZES	(sizeof sizes / sizeof sizes[0])
#define ROUNDS	4

// The byte the host buffer holds at i for copy k.
static unsigned char
pat(unsigned k, size_t i)
{
	return (unsigned char)((k * 131u + (unsigned)i * 7u + (unsigned)(i >> 9))
	    ^ 0x5a);
}

int
main(void)
{
	size_t total = 0, at, n, i;
	unsigned char *h, *want, *got, *dup;
	unsigned char *d, *d2;
	int *dpos, *dtok;
	cudaStream_t s, s2;
	cudaEvent_t ev;
	unsigned k, r, copies = 0, transformed = 0;
	int nfail = 0;

	for (i = 0; i < NSIZES; i++)
		total += (sizes[i] + 15) & ~(size_t)15;
	total *= ROUNDS;
	h = (unsigned char *)malloc(3 << 20);
	want = (unsigned char *)calloc(total, 1);
	got = (unsigned char *)malloc(total);
	dup = (unsigned char *)malloc(3 << 20);
	if (h == NULL || want == NULL || got == NULL || dup == NULL) {
		fprintf(stderr, NAME ": out of memory\n");
		return 1;
	}
	CK(cudaMalloc(&d, total));
	CK(cudaMalloc(&d2, (size_t)ROUNDS << 22));
	CK(cudaMalloc(&dpos, sizeof(int)));
	CK(cudaMalloc(&dtok, sizeof(int)));
	CK(cudaMemset(d, 0, total));
	CK(cudaMemset(dpos, 0, sizeof(int)));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

	at = 0;
	for (r = 0; r < ROUNDS; r++) {
		size_t first = at;

		for (i = 0; i < NSIZES; i++) {
			n = sizes[i];
			k = r * NSIZES + (unsigned)i;
			// The stream busy for a while before each copy.
			step_phase<<<1, 32, 0, s>>>(dpos, dtok, 200000, 0);
			CK(cudaGetLastError());
			for (size_t j = 0; j < n; j++)
				h[j] = pat(k, j);
			CK(cudaMemcpyAsync(d + at, h, n, cudaMemcpyHostToDevice,
			    s));
			// Pageable memory is the program's again.
			memset(h, 0xee, n);
			for (size_t j = 0; j < n; j++)
				want[at + j] = pat(k, j);
			copies++;
			if (n % 4 == 0) {
				unsigned mul = 2654435761u + k, add = k * 40503u;
				unsigned *w = (unsigned *)(want + at);

				affine_u32<<<(unsigned)((n / 4 + 255) / 256), 256, 0,
				    s>>>((unsigned *)(d + at), mul, add,
				    (int)(n / 4));
				CK(cudaGetLastError());
				for (size_t j = 0; j < n / 4; j++)
					w[j] = w[j] * mul + add;
				transformed++;
			}
			at += (n + 15) & ~(size_t)15;
		}
		// The round's first region, seen from another stream.
		CK(cudaEventRecord(ev, s));
		CK(cudaStreamWaitEvent(s2, ev, 0));
		CK(cudaMemcpyAsync(d2 + ((size_t)r << 22), d + first, sizes[0],
		    cudaMemcpyDeviceToDevice, s2));
	}
	CK(cudaStreamSynchronize(s2));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(got, d, total, cudaMemcpyDeviceToHost));
	printf("copies %u (%u transformed after), %zu bytes\n", copies,
	    transformed, total);
	if (memcmp(got, want, total) != 0) {
		for (i = 0; i < total && got[i] == want[i]; i++)
			;
		printf("device bytes: WRONG from byte %zu (0x%02x, want "
		    "0x%02x)\n", i, got[i], want[i]);
		nfail++;
	} else
		printf("device bytes: ok, fnv %016llx\n",
		    (unsigned long long)fnv(got, total));
	at = 0;
	for (r = 0; r < ROUNDS; r++) {
		CK(cudaMemcpy(dup, d2 + ((size_t)r << 22), sizes[0],
		    cudaMemcpyDeviceToHost));
		if (memcmp(dup, want + at, sizes[0]) != 0) {
			printf("round %u on the second stream: WRONG\n", r);
			nfail++;
		}
		for (i = 0; i < NSIZES; i++)
			at += (sizes[i] + 15) & ~(size_t)15;
	}
	if (nfail == 0)
		printf("second stream after the event: ok\n");
	CK(cudaFree(d));
	CK(cudaFree(d2));
	CK(cudaFree(dpos));
	CK(cudaFree(dtok));
	CK(cudaStreamDestroy(s));
	CK(cudaStreamDestroy(s2));
	CK(cudaEventDestroy(ev));
	free(h);
	free(want);
	free(got);
	free(dup);
	printf(NAME ": %s\n", nfail ? "FAILED" : "ok");
	return nfail != 0;
}
