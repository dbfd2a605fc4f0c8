// cacheload: loads a model-sized buffer the way framework loaders do: one
// large device allocation filled tensor by tensor, by copies of seeded
// sizes into consecutive sub-ranges, alternating synchronous and
// asynchronous copies, from pageable (or, with -p, pinned) memory.  Then
// reads it all back and compares.  The weight cache's tests and
// bench/cache-load run it twice against one server.
//
// With -r N it then writes the whole buffer again N times, as a program
// overwrites its input buffer each step: those copies do not go by name.
//
// With -w the load is one copy of the whole buffer (named in pieces).
//
// With -z S it stays connected S seconds after printing its result (its
// server holds what it loaded meanwhile), then exits.
//
// usage: cacheload [-ptw] [-m MiB] [-r rewrites] [-s seed] [-z seconds]
// Prints "cacheload: ok"; with -t first "cacheload: load S s, N copies,
// M MiB" (left out by default, so that runs compare equal).
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x) do {							\
	cudaError_t e_ = (x);						\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "cacheload: %s: %s\n", #x,		\
		    cudaGetErrorString(e_));				\
		exit(1);						\
	}								\
} while (0)

static uint64_t
next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	size_t mib = 64, n, off, k, i, ncopies = 0;
	uint64_t seed = 42, s;
	int ch, pinned = 0, timing = 0, rewrites = 0, whole = 0, stay = 0;
	unsigned char *host, *back;
	void *dev;
	cudaStream_t st;
	double t0, t1;

	while ((ch = getopt(argc, argv, "m:pr:s:twz:")) != -1) {
		switch (ch) {
		case 'm':
			mib = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			pinned = 1;
			break;
		case 'r':
			rewrites = atoi(optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 10);
			break;
		case 't':
			timing = 1;
			break;
		case 'w':
			whole = 1;
			break;
		case 'z':
			stay = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: cacheload [-ptw] [-m MiB] "
			    "[-r rewrites] [-s seed] [-z seconds]\n");
			return 2;
		}
	}
	if (mib == 0 || mib > 65536 || seed == 0 || rewrites < 0 ||
	    rewrites > 1000 || stay < 0 || stay > 3600) {
		fprintf(stderr, "cacheload: bad -m, -r, -s or -z\n");
		return 2;
	}
	n = mib << 20;
	if (pinned)
		CHECK(cudaMallocHost((void **)&host, n));
	else if ((host = (unsigned char *)malloc(n)) == NULL)
		return 1;
	s = seed;
	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t v = next(&s);
		memcpy(host + i, &v, 8);
	}
	CHECK(cudaMalloc(&dev, n));
	CHECK(cudaStreamCreate(&st));
	CHECK(cudaDeviceSynchronize());

	t0 = now();
	s = seed * 7 + 1;
	for (off = 0; off < n; off += k) {
		// Tensors from 64 KiB to 16 MiB, as a model's layers come,
		// and at least 16 of them.
		k = (size_t)64 << 10 << (next(&s) % 9);
		if (k > n / 16)
			k = n / 16;
		if (whole)
			k = n;
		if (k > n - off)
			k = n - off;
		if (ncopies % 2 == 0)
			CHECK(cudaMemcpy((char *)dev + off, host + off, k,
			    cudaMemcpyHostToDevice));
		else
			CHECK(cudaMemcpyAsync((char *)dev + off, host + off, k,
			    cudaMemcpyHostToDevice, st));
		ncopies++;
	}
	CHECK(cudaDeviceSynchronize());
	t1 = now();
	if (timing)
		printf("cacheload: load %.3f s, %zu copies, %zu MiB\n",
		    t1 - t0, ncopies, mib);

	for (i = 0; i < (size_t)rewrites; i++)
		CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));

	if ((back = (unsigned char *)malloc(64u << 20)) == NULL)
		return 1;
	for (off = 0; off < n; off += k) {
		k = n - off < (64u << 20) ? n - off : (64u << 20);
		CHECK(cudaMemcpy(back, (char *)dev + off, k,
		    cudaMemcpyDeviceToHost));
		if (memcmp(back, host + off, k) != 0) {
			fprintf(stderr, "cacheload: device bytes differ at "
			    "offset %zu\n", off);
			return 1;
		}
	}
	free(back);
	CHECK(cudaFree(dev));
	CHECK(cudaStreamDestroy(st));
	if (pinned)
		CHECK(cudaFreeHost(host));
	else
		free(host);
	printf("cacheload: ok\n");
	if (stay > 0) {
		fflush(stdout);
		sleep((unsigned)stay);
	}
	return 0;
}
