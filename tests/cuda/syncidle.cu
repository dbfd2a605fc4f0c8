// syncidle: synchronizations of streams that have nothing left to do, as
// XLA makes them (its compute and transfer streams synchronized one after
// another, again and again).  Two streams each run a kernel; then each is
// synchronized twice in turn, the device once, each stream again; a copy
// back on the first, and each stream again; a kernel on the second, and
// each stream again; a kernel on the first, each stream again, then each
// queried; then events as XLA hands work between its streams (one
// recorded on an idle stream and waited on by the other, which is
// synchronized, the event too; one recorded behind a kernel, waited on,
// queried, waited on again; the first put in a graph's event record
// node, then synchronized).  Prints what the kernels wrote, so
// that a local run and a remote one compare.  Through Gleam the client
// answers a stream's synchronization or query itself while nothing but
// synchronizations was sent since one that found the stream idle, its own
// or another's (the server names the idle streams in each
// synchronization's reply; gleam-client(7)): tests/bats/remote.bats
// counts them.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"syncidle"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_FILL_U32)
#include "testutil.h"

int
main(void)
{
	cudaStream_t a, b;
	unsigned *da, *db, h[N];

	CK(cudaMalloc(&da, N * sizeof *da));
	CK(cudaMalloc(&db, N * sizeof *db));
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	fill_u32<<<N / 256, 256, 0, a>>>(da, 1, N);
	fill_u32<<<N / 256, 256, 0, b>>>(db, 2, N);
	CK(cudaGetLastError());
	// Each waits once; then both are idle: answered here.
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));
	// The device: all its streams idle.
	CK(cudaDeviceSynchronize());
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));
	// A copy back on a: a is idle after it, b may not be.
	CK(cudaMemcpyAsync(h, da, sizeof h, cudaMemcpyDeviceToHost, a));
	CK(cudaStreamSynchronize(a));
	printf("a: %08x\n", fnv(h, sizeof h));
	CK(cudaStreamSynchronize(b));
	CK(cudaStreamSynchronize(a));
	// Work on b: b waits, a (idle before it) waits too.
	fill_u32<<<N / 256, 256, 0, b>>>(db, 3, N);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(b));
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));
	// Work on a: b stays idle, a waits.
	fill_u32<<<N / 256, 256, 0, a>>>(da, 4, N);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(b));
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamQuery(a));
	CK(cudaStreamQuery(b));
	// Events, as XLA hands work from stream to stream: one recorded on
	// an idle stream is complete at once, and a stream that waits on it
	// has nothing more to do.
	cudaEvent_t e1, e2;
	CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
	CK(cudaEventRecord(e1, a));
	CK(cudaStreamWaitEvent(b, e1, 0));
	CK(cudaStreamSynchronize(b));
	CK(cudaEventSynchronize(e1));
	CK(cudaStreamSynchronize(a));
	// One recorded behind a kernel: complete once its stream is found
	// idle (b's synchronization waits for it).
	fill_u32<<<N / 256, 256, 0, a>>>(da, 5, N);
	CK(cudaGetLastError());
	CK(cudaEventRecord(e2, a));
	CK(cudaStreamWaitEvent(b, e2, 0));
	CK(cudaStreamSynchronize(b));
	CK(cudaEventQuery(e2));
	CK(cudaStreamWaitEvent(b, e2, 0));
	CK(cudaStreamSynchronize(b));
	CK(cudaStreamSynchronize(a));
	// An event a graph's node records: its completion is the graph's
	// (the client answers no more for it).
	cudaGraph_t g;
	cudaGraphNode_t node;
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddEventRecordNode(&node, g, NULL, 0, e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(e1));
	CK(cudaEventDestroy(e2));
	CK(cudaMemcpy(h, db, sizeof h, cudaMemcpyDeviceToHost));
	printf("b: %08x\n", fnv(h, sizeof h));
	CK(cudaMemcpy(h, da, sizeof h, cudaMemcpyDeviceToHost));
	printf("a: %08x\n", fnv(h, sizeof h));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	CK(cudaFree(da));
	CK(cudaFree(db));
	printf(NAME ": ok\n");
	return 0;
}
