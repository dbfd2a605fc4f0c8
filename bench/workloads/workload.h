// What the CUDA workloads (infer.cu, graph-replay.cu) share besides their
// kernels: messages, the clock, option numbers, the seeded generator, the
// output checksum.  The including program defines NAME and usage() first.
#ifndef GLEAM_WORKLOAD_H
#define GLEAM_WORKLOAD_H

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

// Prints NAME ": " and the message on stderr, and exits with rc.
__attribute__((format(printf, 2, 3))) static void
fatal(int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, NAME ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(rc);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

// A decimal integer in [min, max], or a usage error naming the option.
static long long
num(const char *s, long long min, long long max, char opt)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, NAME ": -%c %s: not a number from %lld to %lld\n",
		    opt, s, min, max);
		usage(stderr, EX_USAGE);
	}
	return v;
}

// splitmix64: the same sequence for the same seed.
static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

// FNV-1a over n bytes, from h.
static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;

	while (n-- > 0)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
