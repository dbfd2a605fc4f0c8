// streams: kernels on four streams ordered only by events
// (cudaEventRecord, cudaStreamWaitEvent), one of them cudaStreamNonBlocking;
// the legacy default stream's implicit synchronisation with blocking
// streams; cudaStreamPerThread; cudaEventSynchronize, cudaEventQuery (also
// of an event never recorded), cudaStreamQuery, cudaStreamGetFlags and
// cudaEventElapsedTime (its value is not deterministic: only checked >= 0).
// The result is integer arithmetic, checked against the same steps on the
// CPU.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"streams"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	(1 << 20)
#define NS	4
#define ROUNDS	3
#define GRID	((N + 255) / 256)

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_EXPECT | TU_FNVLL | TU_FILL_U32 | TU_AFFINE_U32)
#include "testutil.h"

// out += a + 3b + 5c + 7d
__global__ void
sum4_u32(unsigned *out, const unsigned *a, const unsigned *b,
    const unsigned *c, const unsigned *d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] += a[i] + 3 * b[i] + 5 * c[i] + 7 * d[i];
}

static void
cpu_affine(unsigned *p, unsigned mul, unsigned add)
{
	for (int i = 0; i < N; i++)
		p[i] = p[i] * mul + add;
}

int
main()
{
	cudaStream_t s[NS];
	cudaEvent_t ev[NS], evsum, evaff, evend, evs2, never, t0, t1;
	unsigned *a[NS], *out, *host, *ref;
	unsigned flags;
	cudaError_t e;
	float ms = -1;
	int r, k;

	for (k = 0; k < NS - 1; k++)
		CK(cudaStreamCreate(&s[k]));
	CK(cudaStreamCreateWithFlags(&s[NS - 1], cudaStreamNonBlocking));
	for (k = 0; k < NS; k++)
		CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evsum, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evaff, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evend, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&evs2, cudaEventDisableTiming));
	CK(cudaEventCreate(&never));
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreateWithFlags(&t1, cudaEventBlockingSync));
	for (k = 0; k < NS; k++)
		CK(cudaMalloc(&a[k], N * sizeof(unsigned)));
	CK(cudaMalloc(&out, N * sizeof(unsigned)));
	CK(cudaMallocHost(&host, N * sizeof(unsigned)));
	if ((ref = (unsigned *)calloc(N, sizeof(unsigned))) == NULL) {
		printf(NAME ": FAIL out of host memory\n");
		return 1;
	}
	CK(cudaMemset(out, 0, N * sizeof(unsigned)));

	// Each round: the four streams fill their buffers, stream 0 sums
	// them once all are recorded, the non-blocking stream and stream 1
	// transform the sum in turn, and every stream waits for the end of
	// the round before the next one overwrites its buffer.
	for (r = 0; r < ROUNDS; r++) {
		for (k = 0; k < NS; k++) {
			fill_u32<<<GRID, 256, 0, s[k]>>>(a[k], r * 100 + k, N);
			CK(cudaGetLastError());
			CK(cudaEventRecord(ev[k], s[k]));
		}
		for (k = 1; k < NS; k++)
			CK(cudaStreamWaitEvent(s[0], ev[k], 0));
		sum4_u32<<<GRID, 256, 0, s[0]>>>(out, a[0], a[1], a[2], a[3],
		    N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(evsum, s[0]));
		CK(cudaStreamWaitEvent(s[3], evsum, 0));
		affine_u32<<<GRID, 256, 0, s[3]>>>(out, 3, r, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(evaff, s[3]));
		CK(cudaStreamWaitEvent(s[1], evaff, 0));
		affine_u32<<<GRID, 256, 0, s[1]>>>(out, 5, 7, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(evend, s[1]));
		for (k = 0; k < NS; k++)
			if (k != 1)
				CK(cudaStreamWaitEvent(s[k], evend, 0));

		for (int i = 0; i < N; i++) {
			unsigned v[NS];

			for (k = 0; k < NS; k++)
				v[k] = (r * 100 + k) + (unsigned)i * 2654435761u;
			ref[i] += v[0] + 3 * v[1] + 5 * v[2] + 7 * v[3];
		}
		cpu_affine(ref, 3, r);
		cpu_affine(ref, 5, 7);
	}

	// Not yet synchronised: either answer is right, nothing else is.
	e = cudaStreamQuery(s[0]);
	expect(e == cudaSuccess || e == cudaErrorNotReady,
	    "cudaStreamQuery while busy is success or not-ready");

	// The legacy default stream waits for stream 1 (blocking) without
	// an event; stream 2 (blocking) then waits for the legacy stream.
	affine_u32<<<GRID, 256>>>(out, 7, 1, N);
	CK(cudaGetLastError());
	CK(cudaEventRecord(t0, s[2]));
	affine_u32<<<GRID, 256, 0, s[2]>>>(out, 9, 2, N);
	CK(cudaGetLastError());
	CK(cudaEventRecord(t1, s[2]));
	CK(cudaEventRecord(evs2, s[2]));
	cpu_affine(ref, 7, 1);
	cpu_affine(ref, 9, 2);

	// The per-thread default stream synchronises with the legacy stream
	// only, so it waits for stream 2 by event.
	CK(cudaStreamWaitEvent(cudaStreamPerThread, evs2, 0));
	affine_u32<<<GRID, 256, 0, cudaStreamPerThread>>>(out, 11, 3, N);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(host, out, N * sizeof(unsigned),
	    cudaMemcpyDeviceToHost, cudaStreamPerThread));
	CK(cudaStreamSynchronize(cudaStreamPerThread));
	cpu_affine(ref, 11, 3);

	CK(cudaEventSynchronize(t1));
	CK(cudaEventElapsedTime(&ms, t0, t1));
	expect(ms >= 0, "cudaEventElapsedTime >= 0");
	CK(cudaDeviceSynchronize());
	for (k = 0; k < NS; k++)
		CK(cudaStreamQuery(s[k]));
	CK(cudaStreamQuery(cudaStreamPerThread));
	CK(cudaStreamQuery(0));
	CK(cudaEventQuery(evend));
	CK(cudaEventQuery(t1));
	expect(cudaEventQuery(never) == cudaSuccess,
	    "cudaEventQuery of an event never recorded is success");
	CK(cudaStreamGetFlags(s[3], &flags));
	expect(flags == cudaStreamNonBlocking,
	    "cudaStreamGetFlags says non-blocking");
	CK(cudaStreamGetFlags(s[0], &flags));
	expect(flags == cudaStreamDefault, "cudaStreamGetFlags says default");

	int bad = 0;
	for (int i = 0; i < N; i++)
		if (host[i] != ref[i] && bad++ < 5)
			printf("mismatch at %d: got %08x, want %08x\n", i,
			    host[i], ref[i]);
	expect(bad == 0, "result equals the CPU reference");
	printf("out fnv1a64 %016llx\n", fnv(host, N * sizeof(unsigned)));
	printf("out[0] %08x out[1] %08x out[%d] %08x\n", host[0], host[1],
	    N - 1, host[N - 1]);

	CK(cudaMemcpy(host, a[2], N * sizeof(unsigned),
	    cudaMemcpyDeviceToHost));
	printf("a[2] fnv1a64 %016llx\n", fnv(host, N * sizeof(unsigned)));
	expect(host[N - 1] == (ROUNDS - 1) * 100 + 2 +
	    (unsigned)(N - 1) * 2654435761u, "a[2] holds the last fill");

	for (k = 0; k < NS; k++) {
		CK(cudaFree(a[k]));
		CK(cudaEventDestroy(ev[k]));
		CK(cudaStreamDestroy(s[k]));
	}
	CK(cudaFree(out));
	CK(cudaFreeHost(host));
	CK(cudaEventDestroy(evsum));
	CK(cudaEventDestroy(evaff));
	CK(cudaEventDestroy(evend));
	CK(cudaEventDestroy(evs2));
	CK(cudaEventDestroy(never));
	CK(cudaEventDestroy(t0));
	CK(cudaEventDestroy(t1));
	free(ref);
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
