// bench/step-phases: where a decode step's time goes, call by call.
//
// The step of a graph-replaying decoder (llama.cpp's steady decode, ggml
// -R): the position's 4 bytes copied in from pageable memory, a CUDA
// graph launched (a chain of -k small kernels, captured once), the
// token's 4 bytes copied out into page-locked memory, the stream
// synchronized, the host reading the token.  Each of the five is timed
// on its own (the mean microseconds over -n steps after -w warm-up
// steps), so that a remote run through gleam-run can be set against a
// local one phase by phase: what the client costs outside the wait.
//
//	step-phases [-ex] [-n steps] [-w warm-up] [-k kernels] [-s spin-us]
//
// -s: the kernels' total time on the GPU, spun (default 200 us).  -x: the
// step on three streams as XLA runs one: the position copied in on a
// host-to-device stream, the graph on a compute stream that waits for it
// (an event), the token copied out on a device-to-host stream that waits
// for the graph (another event), then the three streams synchronized one
// after another, the device-to-host stream first.  -e: the step as
// jax_fft's run through Gleam showed XLA's hand-offs (the server's trace,
// session 35): the graph on the compute stream, two events recorded
// behind it; a third stream made to wait for one and synchronized (the
// wait for the computation); the device-to-host stream made to wait for
// the other, the token copied out on it, that stream synchronized; then
// an event recorded on it and a fourth stream made to wait for that and
// synchronized (no position copied in).
// Prints one line per phase ("phase NAME us MEAN") and "us_per_step".
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "step-phases: %s:%d: %s\n", __FILE__, __LINE__, \
	    cudaGetErrorString(e_)); exit(1); } } while (0)

static double
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// Spins about ns nanoseconds on the GPU, then the token from the position.
__global__ void
step_phase(const int *pos, int *tok, long long ns, int last)
{
	long long t0 = clock64(), cycles = ns * 2;	// about 2 GHz

	while (clock64() - t0 < cycles)
		;
	if (last && threadIdx.x == 0)
		*tok = *pos * 7 + 3;
}

static void
usage(void)
{
	fprintf(stderr, "usage: step-phases [-ex] [-n steps] [-w warm-up] "
	    "[-k kernels] [-s spin-us]\n");
	exit(2);
}

// -e's step, its phases into acc (htod none, launch, dtoh, sync, read).
static void
step_hand(cudaGraphExec_t x, cudaStream_t s, cudaStream_t sy,
    cudaStream_t sd, cudaStream_t sz, cudaEvent_t ec, cudaEvent_t ec2,
    cudaEvent_t ed, int *htok, const int *dtok, double *acc)
{
	double t = now_us(), t1;

	CK(cudaGraphLaunch(x, s));
	CK(cudaEventRecord(ec, s));
	CK(cudaEventRecord(ec2, s));
	t1 = now_us(); acc[1] += t1 - t; t = t1;
	CK(cudaStreamWaitEvent(sy, ec2, 0));
	CK(cudaStreamSynchronize(sy));
	CK(cudaStreamWaitEvent(sd, ec, 0));
	CK(cudaMemcpyAsync(htok, dtok, sizeof(int), cudaMemcpyDeviceToHost,
	    sd));
	t1 = now_us(); acc[2] += t1 - t; t = t1;
	CK(cudaStreamSynchronize(sd));
	CK(cudaEventRecord(ed, sd));
	CK(cudaStreamWaitEvent(sz, ed, 0));
	CK(cudaStreamSynchronize(sz));
	t1 = now_us(); acc[3] += t1 - t;
}

int
main(int argc, char **argv)
{
	enum { P_HTOD, P_LAUNCH, P_DTOH, P_SYNC, P_READ, NP };
	static const char *names[NP] = { "htod", "launch", "dtoh", "sync",
	    "read" };
	double acc[NP] = { 0 }, t, t0 = 0, t1;
	int n = 2000, warm = 100, nk = 8, spin = 200, c, i, k, bad = 0;
	int xla = 0, hand = 0;
	cudaStream_t s, sh, sd, sy, sz;
	cudaEvent_t eh, ec, ec2, ed;
	cudaGraph_t g;
	cudaGraphExec_t x;
	int *dpos, *dtok, *htok;
	static int hpos;

	while ((c = getopt(argc, argv, "n:w:k:s:exh")) != -1)
		switch (c) {
		case 'e': hand = xla = 1; break;
		case 'x': xla = 1; break;
		case 'n': n = atoi(optarg); break;
		case 'w': warm = atoi(optarg); break;
		case 'k': nk = atoi(optarg); break;
		case 's': spin = atoi(optarg); break;
		default: usage();
		}
	if (optind != argc || n < 1 || warm < 0 || nk < 1 || nk > 4096 ||
	    spin < 0)
		usage();
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	// -x: the transfer streams; else both are the compute stream.
	sh = sd = s;
	if (xla) {
		CK(cudaStreamCreateWithFlags(&sh, cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&sd, cudaStreamNonBlocking));
	}
	CK(cudaStreamCreateWithFlags(&sy, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&sz, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&eh, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&ec, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&ec2, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&ed, cudaEventDisableTiming));
	CK(cudaMalloc(&dpos, sizeof(int)));
	CK(cudaMalloc(&dtok, sizeof(int)));
	CK(cudaMallocHost(&htok, sizeof(int)));
	CK(cudaMemset(dpos, 0, sizeof(int)));
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
	for (k = 0; k < nk; k++)
		step_phase<<<1, 32, 0, s>>>(dpos, dtok, spin * 1000ll / nk,
		    k == nk - 1);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&x, g, 0));
	for (i = 0; i < warm + n; i++) {
		if (i == warm) {
			memset(acc, 0, sizeof acc);
			t0 = now_us();
		}
		hpos = i;
		t = now_us();
		if (hand) {
			// The position set on the device, as jax_fft's input
			// stays there.
			step_hand(x, s, sy, sd, sz, ec, ec2, ed, htok, dtok,
			    acc);
			if (*(volatile int *)htok != 3)
				bad++;
			continue;
		}
		CK(cudaMemcpyAsync(dpos, &hpos, sizeof(int),
		    cudaMemcpyHostToDevice, sh));
		if (xla) {
			CK(cudaEventRecord(eh, sh));
			CK(cudaStreamWaitEvent(s, eh, 0));
		}
		t1 = now_us(); acc[P_HTOD] += t1 - t; t = t1;
		CK(cudaGraphLaunch(x, s));
		if (xla) {
			CK(cudaEventRecord(ec, s));
			CK(cudaStreamWaitEvent(sd, ec, 0));
		}
		t1 = now_us(); acc[P_LAUNCH] += t1 - t; t = t1;
		CK(cudaMemcpyAsync(htok, dtok, sizeof(int),
		    cudaMemcpyDeviceToHost, sd));
		t1 = now_us(); acc[P_DTOH] += t1 - t; t = t1;
		CK(cudaStreamSynchronize(sd));
		if (xla) {
			CK(cudaStreamSynchronize(s));
			CK(cudaStreamSynchronize(sh));
		}
		t1 = now_us(); acc[P_SYNC] += t1 - t; t = t1;
		if (*(volatile int *)htok != i * 7 + 3)
			bad++;
		t1 = now_us(); acc[P_READ] += t1 - t;
	}
	t1 = now_us();
	for (k = 0; k < NP; k++)
		printf("phase %-6s us %.2f\n", names[k], acc[k] / n);
	printf("us_per_step %.2f\n", (t1 - t0) / n);
	if (bad) {
		fprintf(stderr, "step-phases: %d tokens wrong\n", bad);
		return 1;
	}
	return 0;
}
