// profiler: profiler control with no profiler attached: the codes of
// cudaProfilerStart/Stop (twice each, and out of order), of the driver's
// cuProfilerStart/Stop, and of the deprecated cuProfilerInitialize
// (asked through cuGetProcAddress, which it is not declared for).
#include <cstdio>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <cudaProfiler.h>

#define NAME "profiler"

typedef CUresult (*init_fn)(const char *, const char *, CUoutput_mode);

int
main(void)
{
	init_fn init = NULL;
	CUdriverProcAddressQueryResult q;

	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	printf("cudaProfilerStart: %d\n", (int)cudaProfilerStart());
	printf("cudaProfilerStart again: %d\n", (int)cudaProfilerStart());
	printf("cudaProfilerStop: %d\n", (int)cudaProfilerStop());
	printf("cudaProfilerStop again: %d\n", (int)cudaProfilerStop());
	printf("cuProfilerStop: %d\n", (int)cuProfilerStop());
	printf("cuProfilerStart: %d\n", (int)cuProfilerStart());
	printf("cuProfilerStop: %d\n", (int)cuProfilerStop());
	printf("cuGetProcAddress cuProfilerInitialize: %d\n",
	    (int)cuGetProcAddress("cuProfilerInitialize", (void **)&init,
	    4000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
	if (init != NULL)
		printf("cuProfilerInitialize: %d\n", (int)init("/nonexistent",
		    "/tmp/profiler-out", CU_OUT_CSV));
	printf("cudaGetLastError: %d\n", (int)cudaGetLastError());
	printf(NAME ": ok\n");
	return 0;
}
