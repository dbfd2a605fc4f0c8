// oneway: errors met inside a run of stream-ordered work, which a remoting
// client sends without waiting (one-way).  Prints only what does not depend
// on timing, so a local and a remote run print the same:
//  1. 200 launches, memsets and async copies over two streams with events
//     between them, then one synchronising copy: the results are right.
//  2. A launch with a block of 2048 threads amid that work: the launch
//     itself returns cudaErrorInvalidValue (checked on the client, as the
//     driver does), the work around it is unaffected.
//  3. A kernel that writes to an invalid address amid 100 more launches:
//     the launches return cudaSuccess or, once the fault is known,
//     cudaErrorIllegalAddress, never anything else; the first synchronising
//     call returns cudaErrorIllegalAddress, and so does every later call
//     that needs the context (sticky).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"oneway"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK | TU_SET_U32)
#include "testutil.h"

// The same kernel as errors.cu: the host backend has it.
__global__ void
poke_u32(unsigned *p, unsigned v)
{
	*p = v;
}

static int nfail;

static void
expect(const char *what, cudaError_t got, cudaError_t want)
{
	printf("%-44s %s %s\n", what, cudaGetErrorName(got),
	    got == want ? "ok" : "WRONG");
	if (got != want)
		nfail++;
}

int
main(void)
{
	unsigned *d[2], *h, want;
	cudaStream_t s[2];
	cudaEvent_t ev[2];
	cudaError_t e;
	int i, k, bad, odd;

	h = (unsigned *)malloc(N * sizeof *h);
	for (k = 0; k < 2; k++) {
		CK(cudaMalloc(&d[k], N * sizeof(unsigned)));
		CK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
	}

	// 1 and 2: a long run of one-way work, a bad launch in the middle.
	for (i = 0; i < 200; i++) {
		k = i & 1;
		CK(cudaMemsetAsync(d[k], i & 0xff, N * sizeof(unsigned), s[k]));
		set_u32<<<N / 256, 256, 0, s[k]>>>(d[k], (unsigned)i, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(ev[k], s[k]));
		CK(cudaStreamWaitEvent(s[k ^ 1], ev[k], 0));
		if (i == 100) {
			set_u32<<<1, 2048, 0, s[k]>>>(d[k], 0, N);
			e = cudaGetLastError();
			expect("block of 2048 amid one-way work", e,
			    cudaErrorInvalidValue);
			expect("  then cudaGetLastError", cudaGetLastError(),
			    cudaSuccess);
		}
	}
	CK(cudaMemcpyAsync(d[0], d[1], N * sizeof(unsigned),
	    cudaMemcpyDeviceToDevice, s[1]));
	// On stream 1 too: the legacy default stream of a plain cudaMemcpy
	// is not ordered after non-blocking streams (with the GPU shared by
	// another client, the copy had read d[0] before stream 1 wrote it).
	CK(cudaMemcpyAsync(h, d[0], N * sizeof(unsigned),
	    cudaMemcpyDeviceToHost, s[1]));
	CK(cudaStreamSynchronize(s[1]));
	// The last kernel on d[1] wrote 199 ^ i; d[0] got a copy of it after
	// stream 1 had waited for stream 0's last event.
	for (i = 0, bad = 0; i < N; i++)
		if (h[i] != (199u ^ (unsigned)i))
			bad++;
	printf("%-44s %s\n", "results after 200 rounds", bad ? "WRONG" : "ok");
	if (bad)
		nfail++;
	expect("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaSuccess);

	// 3: a fault amid more one-way work.
	odd = 0;
	for (i = 0; i < 100; i++) {
		if (i == 40)
			poke_u32<<<1, 1, 0, s[0]>>>((unsigned *)0x10, 1);
		else
			set_u32<<<N / 256, 256, 0, s[0]>>>(d[0], (unsigned)i,
			    N);
		e = cudaGetLastError();
		if (e != cudaSuccess && e != cudaErrorIllegalAddress)
			odd++;
	}
	printf("%-44s %s\n", "launches around the fault",
	    odd ? "WRONG" : "success or illegal address, ok");
	if (odd)
		nfail++;
	expect("first synchronising call", cudaStreamSynchronize(s[0]),
	    cudaErrorIllegalAddress);
	expect("then cudaMemcpy DtoH", cudaMemcpy(h, d[1], 4,
	    cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
	expect("then cudaDeviceSynchronize", cudaDeviceSynchronize(),
	    cudaErrorIllegalAddress);
	set_u32<<<1, 32, 0, s[1]>>>(d[1], 0, 32);
	expect("then a launch", cudaGetLastError(), cudaErrorIllegalAddress);
	want = nfail;
	free(h);
	if (want) {
		printf(NAME ": FAIL %d\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
