// Real cudart against the client library: the driver version, then the
// device count, which runs cudart's whole start-up sequence (dark-api.md
// §1.2): lookups, export tables, device queries, the integrity check.
// It prints what cudart answered and exits 0 unless something crashed.
#include <cstdio>

#include <cuda_runtime.h>

int
main()
{
	int v = -1, n = -1;
	cudaError_t e;

	e = cudaDriverGetVersion(&v);
	printf("cudaDriverGetVersion: %d (%s) version %d\n", (int)e,
	    cudaGetErrorName(e), v);
	e = cudaGetDeviceCount(&n);
	printf("cudaGetDeviceCount: %d (%s) count %d\n", (int)e,
	    cudaGetErrorName(e), n);
	if (e == cudaSuccess && n > 0) {
		cudaDeviceProp p;

		e = cudaGetDeviceProperties(&p, 0);
		printf("cudaGetDeviceProperties: %d (%s) name \"%s\"\n",
		    (int)e, cudaGetErrorName(e),
		    e == cudaSuccess ? p.name : "");
	}
	void *d = nullptr;
	e = cudaMalloc(&d, 1 << 20);
	printf("cudaMalloc: %d (%s)\n", (int)e, cudaGetErrorName(e));
	return 0;
}
