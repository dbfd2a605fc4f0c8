// pinwaits: an asynchronous copy into small page-locked memory, read by
// the host after each kind of wait: an event's synchronization, a stream
// query polled until done, the device's synchronization, the stream's,
// and a blocking copy into the same block beside it; the host writes the
// block between rounds.  Then a blocking copy read at once.  Through Gleam
// such memory is mapped memory whose blocks a copy wrote land readable at
// a stream's synchronization and turn stale at the other waits
// (gleam-client(7)): each wait must show the copy's bytes.
#include <cstdio>

#include <cuda_runtime.h>

#define NAME	"pinwaits"
#define CK(x)	check((x), __FILE__, __LINE__)
#define ROUNDS	30

#define TESTUTIL	(TU_CHECK | TU_SET_U32)
#include "testutil.h"

int
main(void)
{
	static const char *how[5] = { "event sync", "stream query",
	    "device sync", "stream sync", "blocking copy" };
	int bad[5] = { 0 }, wrong = 0;
	cudaStream_t s;
	cudaEvent_t e;
	unsigned *h, *d;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&e));
	CK(cudaMallocHost(&h, 64));
	CK(cudaMalloc(&d, 256));
	for (int r = 0; r < ROUNDS; r++) {
		unsigned v = 100u + (unsigned)r;
		cudaError_t q;

		set_u32<<<1, 32, 0, s>>>(d, v, 32);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(h, d, 16, cudaMemcpyDeviceToHost, s));
		switch (r % 5) {
		case 0:
			CK(cudaEventRecord(e, s));
			CK(cudaEventSynchronize(e));
			break;
		case 1:
			while ((q = cudaStreamQuery(s)) == cudaErrorNotReady)
				;
			CK(q);
			break;
		case 2:
			CK(cudaDeviceSynchronize());
			break;
		case 3:
			CK(cudaStreamSynchronize(s));
			break;
		case 4:
			CK(cudaStreamSynchronize(s));
			CK(cudaMemcpy(h + 8, d + 8, 8, cudaMemcpyDeviceToHost));
			bad[4] += h[8] != (v ^ 8u) || h[9] != (v ^ 9u);
			break;
		}
		bad[r % 5] += h[0] != v || h[3] != (v ^ 3u);
		// The host's own write to the block, kept to the next round.
		h[5] = 7u + (unsigned)r;
		bad[r % 5] += h[5] != 7u + (unsigned)r;
	}
	for (int k = 0; k < 5; k++) {
		printf("copy then %-13s %s\n", how[k], bad[k] ? "WRONG" : "ok");
		wrong += bad[k];
	}
	// A blocking copy into it, read at once.
	set_u32<<<1, 32>>>(d, 555u, 32);
	CK(cudaGetLastError());
	CK(cudaMemcpy(h + 4, d, 8, cudaMemcpyDeviceToHost));
	printf("blocking copy, read at once: %s\n",
	    h[4] == 555u && h[5] == (555u ^ 1u) ? "ok" : "WRONG");
	wrong += h[4] != 555u || h[5] != (555u ^ 1u);
	CK(cudaFreeHost(h));
	CK(cudaFree(d));
	CK(cudaEventDestroy(e));
	CK(cudaStreamDestroy(s));
	if (wrong)
		return 1;
	printf(NAME ": ok\n");
	return 0;
}
