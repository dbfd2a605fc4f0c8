/*
 * hash-cost: what naming a weight-cache entry costs on this host.  A
 * client hashes every copy it sends by name, and the server hashes every
 * upload again before it keeps it, so a first load pays the hash twice.
 *
 *	hash-cost [-r reps] [-t threads] [size ...]
 *
 * For each size (default 1m 4m 16m 64m 256m) and each hash, one core:
 * XXH3-128, BLAKE2b-256 (libsodium), SHA-256 (OpenSSL); then the content
 * names as the cache computes them (lib/common/cname.c: a tree of 4 MiB
 * leaves on up to -t threads, default as many as there are cores, at
 * most 8): cname (XXH3-128, private entries) and cname_strong
 * (BLAKE2b-256, a cache_share group's).  Prints the median of -r runs
 * (default 5, after one not timed) in GB/s (10^9 bytes a second).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sodium.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cname.h"
#include "parse.h"

#define REPS_MAX	101

static volatile uint8_t sink;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
h_xxh3(const void *p, size_t n)
{
	XXH128_hash_t h = XXH3_128bits(p, n);

	sink ^= (uint8_t)h.low64;
}

static void
h_blake2b(const void *p, size_t n)
{
	uint8_t h[32];

	crypto_generichash(h, sizeof h, p, n, NULL, 0);
	sink ^= h[0];
}

static void
h_sha256(const void *p, size_t n)
{
	uint8_t h[EVP_MAX_MD_SIZE];
	unsigned hl;

	EVP_Digest(p, n, h, &hl, EVP_sha256(), NULL);
	sink ^= h[0];
}

static void
h_cname(const void *p, size_t n)
{
	uint8_t h[CNAME_LEN];

	cname(p, n, h);
	sink ^= h[0];
}

static void
h_cname_strong(const void *p, size_t n)
{
	uint8_t h[CNAME_STRONG_LEN];

	cname_strong(p, n, h);
	sink ^= h[0];
}

static const struct {
	const char	*name;
	void		(*fn)(const void *, size_t);
} hashes[] = {
	{ "xxh3-128", h_xxh3 },
	{ "blake2b-256", h_blake2b },
	{ "sha-256", h_sha256 },
	{ "cname", h_cname },
	{ "cname_strong", h_cname_strong },
};

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
usage(void)
{
	fprintf(stderr, "usage: hash-cost [-r reps] [-t threads] [size ...]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const char *defsizes[] = { "1m", "4m", "16m", "64m", "256m" };
	const char **sizes = defsizes, *why;
	double t[REPS_MAX], t0;
	uint64_t n;
	long long v;
	uint8_t *buf;
	size_t i, k, nsizes = 5;
	int ch, reps = 5, threads = 0, r;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	while ((ch = getopt(argc, argv, "r:t:")) != -1) {
		switch (ch) {
		case 'r':
			if (parse_int(optarg, 1, REPS_MAX, &v, &why) == -1) {
				fprintf(stderr, "hash-cost: -r %s: %s\n",
				    optarg, why);
				return 2;
			}
			reps = (int)v;
			break;
		case 't':
			if (parse_int(optarg, 0, 8, &v, &why) == -1) {
				fprintf(stderr, "hash-cost: -t %s: %s\n",
				    optarg, why);
				return 2;
			}
			threads = (int)v;
			break;
		default:
			usage();
		}
	}
	if (optind < argc) {
		sizes = (const char **)argv + optind;
		nsizes = (size_t)(argc - optind);
	}
	if (sodium_init() < 0) {
		fprintf(stderr, "hash-cost: libsodium does not start\n");
		return 1;
	}
	cname_threads(threads);
	printf("# hash-cost: median of %d runs, GB/s; %ld cores, cname on %d "
	    "threads\n", reps, cores, threads ? threads : cores > 8 ? 8 :
	    (int)cores);
	printf("%-10s %-14s %8s\n", "size", "hash", "GB/s");
	for (i = 0; i < nsizes; i++) {
		if (parse_size(sizes[i], &n, &why) == -1 || n == 0 ||
		    n > (4ull << 30)) {
			fprintf(stderr, "hash-cost: %s: %s\n", sizes[i],
			    why ? why : "1 byte to 4 GiB");
			return 2;
		}
		if ((buf = malloc(n)) == NULL) {
			fprintf(stderr, "hash-cost: %s: out of memory\n",
			    sizes[i]);
			return 1;
		}
		randombytes_buf(buf, n);
		for (k = 0; k < sizeof hashes / sizeof hashes[0]; k++) {
			hashes[k].fn(buf, n);		/* warm */
			for (r = 0; r < reps; r++) {
				t0 = now();
				hashes[k].fn(buf, n);
				t[r] = now() - t0;
			}
			qsort(t, (size_t)reps, sizeof t[0], cmp_dbl);
			printf("%-10s %-14s %8.2f\n", sizes[i], hashes[k].name,
			    (double)n / t[reps / 2] / 1e9);
			fflush(stdout);
		}
		free(buf);
	}
	return 0;
}
