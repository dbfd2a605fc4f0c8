// readahead: the end of a step as XLA makes it (jax_fft's trace), again
// and again: a kernel on a compute stream writes the result, two events
// recorded behind it; a third stream waits for one and is synchronized
// (the wait for the computation); one of two transfer streams, in turn,
// waits for the other event, the result is copied out on it and that
// stream synchronized.  Through Gleam the copy, learnt after two steps,
// is read beside the first synchronization and answered in the client
// (gleam-client(7), "reads ahead"); the steps in between do what must
// stop that: work between the synchronization and the copy (a kernel
// handed over by an event, a memset and a copy in on the copy's own
// stream, a kernel on it), a query, a synchronous copy, another thread's
// kernel and synchronization, the copy's stream busy at the read and
// made idle by a copy after it.  Then the result lands in the next of five
// buffers each step, round and round (read ahead where the stride and the
// ring are learnt), then round them in another order (no stride: the
// ring learnt once round).  Prints each step's checksum, so that a
// local run and a remote one compare; tests/bats/remote.bats counts the
// copies answered.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>

#include <cuda_runtime.h>

#define NAME	"readahead"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096
#define STEPS	30
#define RING	5
#define RSTEPS	20
#define ISTEPS	15

#define TESTUTIL	(TU_CHECK | TU_FNV32 | TU_FILL_U32)
#include "testutil.h"

static unsigned *d, *d2, *ring;
static cudaStream_t y;

// Another thread's kernel on d, synchronized before it returns.
static void *
other(void *arg)
{
	fill_u32<<<N / 256, 256, 0, y>>>(d, *(unsigned *)arg, N);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(y));
	return NULL;
}

int
main(void)
{
	cudaStream_t c, s1, x[2];
	cudaEvent_t e1, e2, e3;
	unsigned *h, *hp, v;
	pthread_t t;
	int step;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CK(cudaMalloc(&d, N * sizeof *d));
	CK(cudaMalloc(&d2, N * sizeof *d2));
	CK(cudaMalloc(&ring, RING * N * sizeof *ring));
	// Page-locked memory larger than a page (small buffers are mapped
	// memory through Gleam), and ordinary memory.
	CK(cudaMallocHost(&hp, N * sizeof *hp));
	if ((h = (unsigned *)malloc(N * sizeof *h)) == NULL)
		return 1;
	CK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&x[0], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&x[1], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&y, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&e3, cudaEventDisableTiming));
	fill_u32<<<N / 256, 256, 0, c>>>(d2, 99, N);
	CK(cudaGetLastError());
	for (step = 0; step < STEPS; step++) {
		cudaStream_t xs = x[step % 2];
		unsigned *dst = step % 3 == 0 ? h : hp;
		size_t off = 0, n = N * sizeof *d;
		const char *what = "plain";

		fill_u32<<<N / 256, 256, 0, c>>>(d, 1000u * step, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1, c));
		CK(cudaEventRecord(e2, c));
		if (step == 20) {
			// The copy's stream busy at the read: it writes d
			// after the compute stream's kernel.
			what = "stream busy at the read, idle after a copy";
			CK(cudaStreamWaitEvent(xs, e1, 0));
			fill_u32<<<N / 256, 256, 0, xs>>>(d, 20020, N);
			CK(cudaGetLastError());
		}
		CK(cudaStreamWaitEvent(s1, e2, 0));
		CK(cudaStreamSynchronize(s1));
		switch (step) {
		case 8:
			// A kernel after the wait, handed to the copy's stream
			// by an event.
			what = "a kernel handed over";
			fill_u32<<<N / 256, 256, 0, c>>>(d, 8008, N);
			CK(cudaGetLastError());
			CK(cudaEventRecord(e3, c));
			CK(cudaStreamWaitEvent(xs, e3, 0));
			break;
		case 11:
			what = "a memset on the copy's stream";
			CK(cudaMemsetAsync(d + 5, 0x5a, 64, xs));
			break;
		case 14:
			what = "a copy in on the copy's stream";
			CK(cudaMemcpyAsync(d, d2, 256, cudaMemcpyDeviceToDevice,
			    xs));
			break;
		case 17:
			what = "a kernel on the copy's stream";
			fill_u32<<<N / 256, 256, 0, xs>>>(d, 17017, N);
			CK(cudaGetLastError());
			break;
		case 23:
			what = "a query";
			CK(cudaStreamQuery(s1));
			break;
		case 26:
			what = "another thread's kernel";
			v = 26026;
			if (pthread_create(&t, NULL, other, &v) != 0 ||
			    pthread_join(t, NULL) != 0)
				return 1;
			break;
		case 5:
			what = "a part";
			off = 100;
			n = 640;
			break;
		case 29:
			what = "a synchronous copy";
			break;
		}
		CK(cudaStreamWaitEvent(xs, e1, 0));
		if (step == 20) {
			// A copy of other memory makes the stream idle after
			// the read: d's copy still goes to the server.
			CK(cudaMemcpyAsync(dst, d2, 64, cudaMemcpyDeviceToHost,
			    xs));
			CK(cudaStreamSynchronize(xs));
		}
		memset(dst, 0xee, N * sizeof *d);
		if (step == 29)
			CK(cudaMemcpy(dst, d + off / 4, n,
			    cudaMemcpyDeviceToHost));
		else
			CK(cudaMemcpyAsync(dst, (char *)d + off, n,
			    cudaMemcpyDeviceToHost, xs));
		CK(cudaStreamSynchronize(xs));
		printf("step %2d: %08x %s\n", step, fnv(dst, n), what);
	}
	// Then the result in the next of RING buffers each step, round
	// and round, as XLA's allocator hands them out.
	// Then round the same buffers in another order, no stride.
	for (step = STEPS; step < STEPS + RSTEPS + ISTEPS; step++) {
		static const int order[RING] = { 0, 3, 1, 4, 2 };
		cudaStream_t xs = x[step % 2];
		int k = step < STEPS + RSTEPS ? step % RING :
		    order[step % RING];
		unsigned *r = ring + k * N;

		fill_u32<<<N / 256, 256, 0, c>>>(r, 1000u * step, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(e1, c));
		CK(cudaEventRecord(e2, c));
		CK(cudaStreamWaitEvent(s1, e2, 0));
		CK(cudaStreamSynchronize(s1));
		CK(cudaStreamWaitEvent(xs, e1, 0));
		memset(hp, 0xee, N * sizeof *hp);
		CK(cudaMemcpyAsync(hp, r, N * sizeof *r,
		    cudaMemcpyDeviceToHost, xs));
		CK(cudaStreamSynchronize(xs));
		printf("step %2d: %08x ring %d\n", step, fnv(hp, N * sizeof *hp),
		    k);
	}
	CK(cudaEventDestroy(e1));
	CK(cudaEventDestroy(e2));
	CK(cudaEventDestroy(e3));
	CK(cudaStreamDestroy(c));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(x[0]));
	CK(cudaStreamDestroy(x[1]));
	CK(cudaStreamDestroy(y));
	CK(cudaFree(d));
	CK(cudaFree(d2));
	CK(cudaFree(ring));
	CK(cudaFreeHost(hp));
	free(h);
	printf(NAME ": ok\n");
	return 0;
}
