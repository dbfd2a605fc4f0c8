// bench/bulk.cu: bulk copy throughput.  bulk [-m MiB] [-r runs] [-p] [-z]
// copies a buffer host-to-device and back, runs times, and prints one YAML
// line per direction and run:
//   - {dir: htod, mib: 1024, s: 0.500, gb_s: 2.147}
// -p uses pinned host memory (cudaMallocHost), pageable otherwise; -z fills
// the buffer with compressible data (a repeating ramp), otherwise with
// xorshift noise that does not compress.  The data that comes back is
// checked; a mismatch exits 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <cuda_runtime.h>

#define CK(x)	check((x), __FILE__, __LINE__)

static void
check(cudaError_t e, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "bulk: CUDA error at %s:%d: %s\n", file, line,
	    cudaGetErrorName(e));
	exit(2);
}

static double
now(void)
{
	return std::chrono::duration<double>(
	    std::chrono::steady_clock::now().time_since_epoch()).count();
}

int
main(int argc, char **argv)
{
	size_t mib = 256, n, i;
	int runs = 3, pinned = 0, ramp = 0, c, r;
	unsigned char *h, *back;
	unsigned long long x = 88172645463325252ull;
	void *d;
	double t;

	while ((c = getopt(argc, argv, "m:pr:z")) != -1)
		switch (c) {
		case 'm': mib = strtoul(optarg, NULL, 10); break;
		case 'p': pinned = 1; break;
		case 'r': runs = atoi(optarg); break;
		case 'z': ramp = 1; break;
		default:
			fprintf(stderr, "usage: bulk [-m MiB] [-r runs] [-p] [-z]\n");
			return 2;
		}
	if (mib == 0 || runs < 1) {
		fprintf(stderr, "bulk: -m and -r must be positive\n");
		return 2;
	}
	n = mib << 20;
	if (pinned) {
		CK(cudaMallocHost(&h, n));
		CK(cudaMallocHost(&back, n));
	} else if ((h = (unsigned char *)malloc(n)) == NULL ||
	    (back = (unsigned char *)malloc(n)) == NULL) {
		fprintf(stderr, "bulk: out of memory\n");
		return 1;
	}
	for (i = 0; i < n; i += 8) {
		unsigned long long v;
		if (ramp)
			v = (i / 8) % 4096;
		else {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			v = x;
		}
		memcpy(h + i, &v, 8);
	}
	CK(cudaMalloc(&d, n));
	CK(cudaDeviceSynchronize());
	printf("# bulk: %zu MiB, %s, %s\n", mib, pinned ? "pinned" : "pageable",
	    ramp ? "compressible" : "incompressible");
	for (r = 0; r < runs; r++) {
		t = now();
		CK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
		CK(cudaDeviceSynchronize());
		t = now() - t;
		printf("- {dir: htod, mib: %zu, s: %.4f, gb_s: %.3f}\n", mib, t,
		    (double)n / t / 1e9);
		memset(back, 0, n);
		t = now();
		CK(cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost));
		t = now() - t;
		printf("- {dir: dtoh, mib: %zu, s: %.4f, gb_s: %.3f}\n", mib, t,
		    (double)n / t / 1e9);
		if (memcmp(h, back, n) != 0) {
			fprintf(stderr, "bulk: data came back different\n");
			return 1;
		}
	}
	CK(cudaFree(d));
	if (pinned) {
		CK(cudaFreeHost(h));
		CK(cudaFreeHost(back));
	} else {
		free(h);
		free(back);
	}
	return 0;
}
