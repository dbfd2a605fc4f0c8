// hostreg: the program's own host memory registered for the device
// (cudaHostRegister, cuMemHostRegister): mapped and portable, a kernel
// writing through the device pointer and the host reading the bytes after
// a synchronize; host writes read by a kernel; flags, pointer type,
// registered twice and unregistered twice (their codes); registered
// without mapping, copied from, and asked for a device pointer (its
// code).  Prints checksums and codes only, so that a local and a remote
// run compare.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#define NAME	"hostreg"
#define N	(1 << 16)	/* unsigned ints */
#define CK(x)	check((x), #x, __FILE__, __LINE__)

#define TESTUTIL	(TU_CHECK_WHAT | TU_FNV64 | TU_CODE | TU_SET_U32 | \
			 TU_XOR_U8)
#include "testutil.h"

int
main(void)
{
	cudaPointerAttributes pa;
	unsigned *h, *d, *out, *back, flags;
	void *dp;
	int i, bad;

	CK(cudaFree(0));
	if (posix_memalign((void **)&h, 4096, N * sizeof *h) != 0)
		return 2;
	back = (unsigned *)malloc(N * sizeof *back);
	for (i = 0; i < N; i++)
		h[i] = 0xdead0000u + (unsigned)i;
	CK(cudaMalloc((void **)&out, N * sizeof *out));

	CK(cudaHostRegister(h, N * sizeof *h, cudaHostRegisterMapped |
	    cudaHostRegisterPortable));
	CK(cudaHostGetDevicePointer((void **)&d, h, 0));
	CK(cudaHostGetFlags(&flags, h));
	printf("flags: %u\n", flags);
	CK(cudaPointerGetAttributes(&pa, h));
	printf("pointer type: %d\n", (int)pa.type);
	code("registered twice", cudaHostRegister(h, N * sizeof *h,
	    cudaHostRegisterMapped));
	code("registered again, inside", cudaHostRegister(h + 16, 4096,
	    cudaHostRegisterDefault));

	// The host's bytes as the device sees them.
	xor_u8<<<N * 4 / 256, 256>>>((unsigned char *)out,
	    (const unsigned char *)d, 0x3c, N * 4);
	CK(cudaGetLastError());
	CK(cudaMemcpy(back, out, N * sizeof *back, cudaMemcpyDeviceToHost));
	printf("device read the host's bytes: %016llx\n",
	    (unsigned long long)fnv(back, N * sizeof *back));

	// The device's writes, in the host's memory after a synchronize.
	set_u32<<<N / 256, 256>>>(d, 0x77, N);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	for (i = bad = 0; i < N; i++)
		if (h[i] != (0x77u ^ (unsigned)i))
			bad++;
	printf("host sees the kernel's writes: %s %016llx\n", bad ? "WRONG" :
	    "ok", (unsigned long long)fnv(h, N * sizeof *h));

	// Host writes after that, seen by the next kernel.
	for (i = 0; i < N; i += 2)
		h[i] = 0;
	xor_u8<<<N * 4 / 256, 256>>>((unsigned char *)out,
	    (const unsigned char *)d, 0, N * 4);
	CK(cudaMemcpy(back, out, N * sizeof *back, cudaMemcpyDeviceToHost));
	printf("device read the host's new bytes: %016llx\n",
	    (unsigned long long)fnv(back, N * sizeof *back));

	CK(cudaHostUnregister(h));
	code("unregistered twice", cudaHostUnregister(h));

	// Registered, not mapped: copies from it.
	CK(cudaHostRegister(h, N * sizeof *h, cudaHostRegisterPortable));
	CK(cudaMemcpy(out, h, N * sizeof *h, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(back, out, N * sizeof *back, cudaMemcpyDeviceToHost));
	printf("copied from registered memory: %016llx\n",
	    (unsigned long long)fnv(back, N * sizeof *back));
	code("device pointer of unmapped registered memory",
	    cudaHostGetDevicePointer(&dp, h, 0));
	CK(cudaHostUnregister(h));

	CK(cudaFree(out));
	free(back);
	free(h);
	printf(NAME ": ok\n");
	return 0;
}
