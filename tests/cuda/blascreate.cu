// cuBLAS and cuBLASLt against the client library: both dlopen it, look up
// their raw names with dlsym and run their embedded cudart's start-up
// (dark-api.md §1.1).  Creating a handle needs a context, which without a
// server fails; it must fail as a status, not a crash.
#include <cstdio>

#include <cublasLt.h>
#include <cublas_v2.h>

int
main()
{
	cublasHandle_t h;
	cublasLtHandle_t lt;
	cublasStatus_t s;

	s = cublasCreate(&h);
	printf("cublasCreate: %d (%s)\n", (int)s, cublasGetStatusName(s));
	if (s == CUBLAS_STATUS_SUCCESS)
		cublasDestroy(h);
	s = cublasLtCreate(&lt);
	printf("cublasLtCreate: %d (%s)\n", (int)s, cublasLtGetStatusName(s));
	if (s == CUBLAS_STATUS_SUCCESS)
		cublasLtDestroy(lt);
	return 0;
}
