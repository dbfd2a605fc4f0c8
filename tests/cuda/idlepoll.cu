// idlepoll: a stream synchronized while another thread queries an event,
// as XLA's threads poll their events while one waits for a stream.  A
// kernel on stream a; a second thread, after a pause, queries an event
// recorded behind a kernel on stream b; the first thread synchronizes a
// meanwhile, then synchronizes and queries it again.  Through Gleam the
// other thread's query is queued while the synchronization's reply is on
// its way (tests/bats/remote.bats runs this through a slow gleam-link):
// a query is no stream's work, so the reply's word that a is idle still
// holds, and the second synchronization and the query are answered in the
// client.  Prints what the kernels wrote.
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define NAME	"idlepoll"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_FILL_U32)
#include "testutil.h"

static cudaEvent_t eb;
static int pause_ms = 30;

static void *
poll_event(void *arg)
{
	(void)arg;
	usleep(pause_ms * 1000);
	// Done or not: either answer is right; only that it was asked.
	cudaError_t e = cudaEventQuery(eb);
	if (e != cudaSuccess && e != cudaErrorNotReady)
		CK(e);
	return NULL;
}

int
main(int argc, char **argv)
{
	cudaStream_t a, b;
	unsigned *da, *db, h[N];
	pthread_t t;

	if (argc > 1)
		pause_ms = atoi(argv[1]);
	CK(cudaMalloc(&da, N * sizeof *da));
	CK(cudaMalloc(&db, N * sizeof *db));
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&eb, cudaEventDisableTiming));
	fill_u32<<<N / 256, 256, 0, b>>>(db, 2, N);
	CK(cudaGetLastError());
	CK(cudaEventRecord(eb, b));
	fill_u32<<<N / 256, 256, 0, a>>>(da, 1, N);
	CK(cudaGetLastError());
	if (pthread_create(&t, NULL, poll_event, NULL) != 0)
		return 1;
	CK(cudaStreamSynchronize(a));
	if (pthread_join(t, NULL) != 0)
		return 1;
	// Nothing but the query since a's synchronization: a is idle.
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamQuery(a));
	CK(cudaMemcpy(h, da, sizeof h, cudaMemcpyDeviceToHost));
	printf("a: %08x\n", fnv(h, sizeof h));
	CK(cudaMemcpy(h, db, sizeof h, cudaMemcpyDeviceToHost));
	printf("b: %08x\n", fnv(h, sizeof h));
	CK(cudaEventDestroy(eb));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	CK(cudaFree(da));
	CK(cudaFree(db));
	printf(NAME ": ok\n");
	return 0;
}
