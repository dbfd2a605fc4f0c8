/*
 * tests/gpu/vaprobe.c: what migration on the cuda backend relies on, on
 * the real driver: a second process (the target) can reserve, with
 * cuMemAddressReserve's hint, exactly the device addresses where the
 * first (the source) had a pool's range and cuMemAlloc's allocations, and
 * a module it loads after that has its globals where the source had them.
 * Also shown, not judged: the globals' places when the modules load
 * before the allocations are placed (gleam-serve loads them after).
 * Prints "vaprobe: ok" or "vaprobe: FAIL" last.
 *	nvcc -o vaprobe vaprobe.c -lcuda
 *	nvcc -cubin -arch=sm_90 -o vaprobe.cubin vaprobe-mod.cu
 *	vaprobe vaprobe.cubin
 */
#include <sys/wait.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) {	\
	const char *s_ = ""; cuGetErrorName(r_, &s_);			\
	printf("vaprobe(%s): FAIL %s: %s\n", role, #x, s_); exit(1); } } while (0)

#define NA	6
static const size_t sizes[NA] = { 256, 256, 1 << 20, 3 << 20, 64 << 20, 100 };
static const char *role = "source";

struct st {
	uint64_t pool, poolsize, hint, taken, g1, g2, a[NA];
};

static CUmodule
load(const char *path, uint64_t *g)
{
	CUmodule m;
	CUdeviceptr p;
	size_t n;

	CK(cuModuleLoad(&m, path));
	CK(cuModuleGetGlobal(&p, &n, m, "g_val"));
	*g = p;
	return m;
}

static int
target(struct st *s, const char *path, int modfirst)
{
	CUcontext c;
	CUdeviceptr p;
	CUmemAllocationProp pr;
	CUmemAccessDesc d;
	CUmemGenericAllocationHandle h;
	size_t gran, i, j, nrun = 0;
	uint64_t g1 = 0, g2 = 0, lo, hi, rlo[NA], rhi[NA];
	int bad = 0, placed;

	CK(cuInit(0));
	CK(cuDevicePrimaryCtxRetain(&c, 0));
	CK(cuCtxSetCurrent(c));
	if (modfirst) {
		load(path, &g1);
		load(path, &g2);
	}
	CK(cuMemAddressReserve(&p, s->poolsize, 2 << 20, s->pool, 0));
	printf("vaprobe(%s): pool 0x%llx %s\n", role, (unsigned long long)p,
	    p == s->pool ? "same" : "MOVED");
	bad |= p != s->pool;
	memset(&pr, 0, sizeof pr);
	pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	pr.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gran, &pr,
	    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	memset(&d, 0, sizeof d);
	d.location = pr.location;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	for (i = 0; i < NA; i++) {
		if (i == 1)
			continue;	/* freed by the source */
		lo = s->a[i] & ~(uint64_t)(gran - 1);
		hi = (s->a[i] + sizes[i] + gran - 1) & ~(uint64_t)(gran - 1);
		/* Sharing a granule with one placed before: placed. */
		for (j = placed = 0; j < nrun; j++)
			placed |= lo < rhi[j] && hi > rlo[j];
		if (placed)
			continue;
		rlo[nrun] = lo;
		rhi[nrun++] = hi;
		p = 0;
		CK(cuMemAddressReserve(&p, hi - lo, 0, lo, 0));
		printf("vaprobe(%s): alloc %zu 0x%llx run 0x%llx+%llu %s\n",
		    role, i, (unsigned long long)s->a[i], (unsigned long long)p,
		    (unsigned long long)(hi - lo), p == lo ? "same" : "MOVED");
		bad |= p != lo;
		if (p != lo)
			continue;
		CK(cuMemCreate(&h, hi - lo, &pr, 0));
		CK(cuMemMap(p, hi - lo, 0, h, 0));
		CK(cuMemSetAccess(p, hi - lo, &d, 1));
		CK(cuMemsetD8(s->a[i], 7, sizes[i]));
	}
	if (!modfirst) {
		load(path, &g1);
		load(path, &g2);
	}
	printf("vaprobe(%s): globals 0x%llx 0x%llx %s %s\n", role,
	    (unsigned long long)g1, (unsigned long long)g2,
	    g1 == s->g1 ? "same" : "MOVED", g2 == s->g2 ? "same" : "MOVED");
	bad |= g1 != s->g1 || g2 != s->g2;
	return modfirst ? 0 : bad;
}

int
main(int argc, char **argv)
{
	struct st s;
	int fd[2], i, status, rc = 0;
	pid_t pid;
	CUcontext c;
	CUdeviceptr p;
	CUmodule m1;

	if (argc != 2) {
		fprintf(stderr, "usage: vaprobe cubin\n");
		return 2;
	}
	/* Line by line: the targets end with _exit, which flushes nothing
	 * (the H100 run saw none of their lines). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&s, 0, sizeof s);
	if (pipe(fd) == -1)
		return 1;
	/* Children before any CUDA call here. */
	for (i = 0; i < 2; i++) {
		if ((pid = fork()) == 0) {
			role = i == 0 ? "target" : "target-modfirst";
			close(fd[1]);
			if (read(fd[0], &s, sizeof s) != sizeof s)
				_exit(1);
			status = target(&s, argv[1], i);
			fflush(stdout);
			_exit(status);
		}
	}
	close(fd[0]);
	CK(cuInit(0));
	CK(cuDevicePrimaryCtxRetain(&c, 0));
	CK(cuCtxSetCurrent(c));
	m1 = load(argv[1], &s.g1);
	for (i = 0; i < NA; i++) {
		CK(cuMemAlloc(&p, sizes[i]));
		s.a[i] = p;
		printf("vaprobe(source): alloc %d %zu at 0x%llx\n", i, sizes[i],
		    (unsigned long long)p);
	}
	CK(cuMemFree(s.a[1]));
	load(argv[1], &s.g2);
	printf("vaprobe(source): globals 0x%llx 0x%llx\n",
	    (unsigned long long)s.g1, (unsigned long long)s.g2);
	s.poolsize = 256ull << 30;
	s.hint = 0x600000000000ull;
	CK(cuMemAddressReserve(&p, s.poolsize, 2 << 20, s.hint, 0));
	s.pool = p;
	printf("vaprobe(source): pool hint 0x%llx got 0x%llx %s\n",
	    (unsigned long long)s.hint, (unsigned long long)p,
	    p == s.hint ? "honoured" : "IGNORED");
	/* A hint where something is: what comes back. */
	p = 0;
	CUresult r = cuMemAddressReserve(&p, 2 << 20, 0, s.a[4], 0);
	printf("vaprobe(source): hint at a taken 0x%llx: rc %d got 0x%llx\n",
	    (unsigned long long)s.a[4], r, (unsigned long long)p);
	(void)m1;
	for (i = 0; i < 2; i++)
		if (write(fd[1], &s, sizeof s) != sizeof s)
			return 1;
	/* Source stays alive meanwhile, as in a migration. */
	while ((pid = wait(&status)) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rc = 1;
	printf("vaprobe: %s\n", rc == 0 ? "ok" : "FAIL");
	return rc;
}
