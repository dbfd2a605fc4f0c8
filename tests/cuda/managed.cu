// managed: cudaMallocManaged memory used through one pointer by the host
// and by kernels: host writes read by a kernel, a kernel's writes read by
// the host after a synchronize, a copy into it read by the host at once,
// pointer attributes, advice, prefetch and range attributes, attaching to
// a stream, and the codes of refused arguments.  Prints checksums,
// values and codes only, so that a local and a remote run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"managed"
#define N	(1 << 14)	/* unsigned ints */
#define CK(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_FNV64 | TU_CODE | TU_SET_U32 | \
			 TU_XOR_U8)
#include "testutil.h"

int
main(void)
{
	cudaPointerAttributes pa;
	cudaMemLocation loc;
	cudaStream_t s;
	unsigned *m, *out, *plain, *h;
	int i, bad, v, attr = -1;
	void *dummy;

	CK(cudaFree(0));
	CK(cudaDeviceGetAttribute(&attr, cudaDevAttrManagedMemory, 0));
	printf("managed memory: %d\n", attr);
	CK(cudaStreamCreate(&s));
	h = (unsigned *)malloc(N * sizeof *h);
	for (i = 0; i < N; i++)
		h[i] = 0xabc00000u + (unsigned)i * 3;
	CK(cudaMallocManaged((void **)&m, N * sizeof *m));
	CK(cudaMallocManaged((void **)&out, N * sizeof *out));
	CK(cudaMalloc((void **)&plain, N * sizeof *plain));
	code("cudaMallocManaged with flags 0", cudaMallocManaged(&dummy, 64,
	    0));

	// Host writes, read by a kernel.
	for (i = 0; i < N; i++)
		m[i] = (unsigned)i * 5;
	xor_u8<<<N * 4 / 256, 256>>>((unsigned char *)out,
	    (const unsigned char *)m, 0x5a, N * 4);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	printf("kernel read the host's writes: %016llx\n",
	    (unsigned long long)fnv(out, N * sizeof *out));

	// A kernel's writes, read by the host after a synchronize.
	set_u32<<<N / 256, 256>>>(m, 0x33, N);
	CK(cudaDeviceSynchronize());
	for (i = bad = 0; i < N; i++)
		if (m[i] != (0x33u ^ (unsigned)i))
			bad++;
	printf("host read the kernel's writes: %s\n", bad ? "WRONG" : "ok");

	// A copy into it, read by the host at once; and out of it.
	CK(cudaMemcpy(m, h, N * sizeof *h, cudaMemcpyDefault));
	printf("host sees the copy: %d\n", memcmp(m, h, N * sizeof *h) == 0);
	m[7] = 7;
	CK(cudaMemcpy(plain, m, N * sizeof *m, cudaMemcpyDefault));
	CK(cudaMemcpy(h, plain, N * sizeof *h, cudaMemcpyDeviceToHost));
	printf("copied out with the host's last write: %016llx\n",
	    (unsigned long long)fnv(h, N * sizeof *h));

	CK(cudaPointerGetAttributes(&pa, m));
	printf("pointer: type %d device pointer is it %d host pointer is it "
	    "%d\n", (int)pa.type, pa.devicePointer == m, pa.hostPointer == m);

	// Advice, prefetch, range attributes.
	memset(&loc, 0, sizeof loc);
	loc.type = cudaMemLocationTypeDevice;
	loc.id = 0;
	v = -9;
	CK(cudaMemRangeGetAttribute(&v, sizeof v,
	    cudaMemRangeAttributePreferredLocation, m, N * sizeof *m));
	printf("preferred location: %d\n", v);
	CK(cudaMemAdvise(m, N * sizeof *m, cudaMemAdviseSetReadMostly, loc));
	CK(cudaMemRangeGetAttribute(&v, sizeof v,
	    cudaMemRangeAttributeReadMostly, m, N * sizeof *m));
	printf("read mostly: %d\n", v);
	CK(cudaMemAdvise(m, N * sizeof *m, cudaMemAdviseSetPreferredLocation,
	    loc));
	CK(cudaMemRangeGetAttribute(&v, sizeof v,
	    cudaMemRangeAttributePreferredLocation, m, N * sizeof *m));
	printf("preferred location: %d\n", v);
	CK(cudaMemPrefetchAsync(m, N * sizeof *m, loc, 0, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemRangeGetAttribute(&v, sizeof v,
	    cudaMemRangeAttributeLastPrefetchLocation, m, N * sizeof *m));
	printf("last prefetch location: %d\n", v);
	code("range attribute of cudaMalloc memory",
	    cudaMemRangeGetAttribute(&v, sizeof v,
	    cudaMemRangeAttributeReadMostly, plain, 64));
	code("attach to a stream", cudaStreamAttachMemAsync(s, m, 0,
	    cudaMemAttachGlobal));
	CK(cudaStreamSynchronize(s));
	printf("still there: %016llx\n", (unsigned long long)fnv(m,
	    N * sizeof *m));

	// A small managed buffer after a small allocation (whose device
	// side would not start a page): one pointer all the same.
	unsigned *tiny, *sm;
	CK(cudaMalloc((void **)&tiny, 100));
	CK(cudaMallocManaged((void **)&sm, 256));
	sm[3] = 5;
	CK(cudaMemset(sm, 0, 8));
	CK(cudaDeviceSynchronize());
	printf("small managed after a small allocation: %u %u\n", sm[3],
	    sm[1]);
	CK(cudaFree(sm));
	CK(cudaFree(tiny));

	CK(cudaFree(m));
	CK(cudaFree(out));
	CK(cudaFree(plain));
	CK(cudaStreamDestroy(s));
	free(h);
	printf(NAME ": ok\n");
	return 0;
}
