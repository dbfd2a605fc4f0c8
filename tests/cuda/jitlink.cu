// jitlink: the JIT linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile,
// cuLinkComplete, cuLinkDestroy) linking two PTX inputs, one calling a
// function the other defines, with the log and wall-time options, whose
// outputs the driver writes into the program's arrays; then the linked
// cubin loaded and its kernel run (p[i] = p[i] * 3 + 1).  Then a broken
// input: its code, and whether the error log says something.  Lengths and
// times vary from run to run: printed as booleans.  The host backend has
// no JIT compiler: the program says it skipped and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "jitlink"
#define N 1000

#define TESTUTIL	(TU_CKDRV)
#include "testutil.h"

static const char ptx_a[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .func (.param .b32 func_retval0) jl_mul3(\n"
    "	.param .b32 jl_mul3_param_0\n"
    ")\n"
    "{\n"
    "	.reg .b32 %r<3>;\n"
    "	ld.param.u32 %r1, [jl_mul3_param_0];\n"
    "	mul.lo.s32 %r2, %r1, 3;\n"
    "	st.param.b32 [func_retval0+0], %r2;\n"
    "	ret;\n"
    "}\n";

static const char ptx_b[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".extern .func (.param .b32 func_retval0) jl_mul3\n"
    "(\n"
    "	.param .b32 jl_mul3_param_0\n"
    ")\n"
    ";\n"
    ".visible .entry jl_kernel(\n"
    "	.param .u64 jl_kernel_param_0,\n"
    "	.param .u32 jl_kernel_param_1\n"
    ")\n"
    "{\n"
    "	.reg .pred %p<2>;\n"
    "	.reg .b32 %r<9>;\n"
    "	.reg .b64 %rd<5>;\n"
    "	ld.param.u64 %rd1, [jl_kernel_param_0];\n"
    "	ld.param.u32 %r2, [jl_kernel_param_1];\n"
    "	mov.u32 %r3, %ctaid.x;\n"
    "	mov.u32 %r4, %ntid.x;\n"
    "	mov.u32 %r5, %tid.x;\n"
    "	mad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "	setp.ge.s32 %p1, %r1, %r2;\n"
    "	@%p1 bra $L__BB0_2;\n"
    "	cvta.to.global.u64 %rd2, %rd1;\n"
    "	mul.wide.s32 %rd3, %r1, 4;\n"
    "	add.s64 %rd4, %rd2, %rd3;\n"
    "	ld.global.u32 %r6, [%rd4];\n"
    "	{\n"
    "	.param .b32 param0;\n"
    "	st.param.b32 [param0+0], %r6;\n"
    "	.param .b32 retval0;\n"
    "	call.uni (retval0), jl_mul3, (param0);\n"
    "	ld.param.b32 %r7, [retval0+0];\n"
    "	}\n"
    "	add.s32 %r8, %r7, 1;\n"
    "	st.global.u32 [%rd4], %r8;\n"
    "$L__BB0_2:\n"
    "	ret;\n"
    "}\n";

static const char ptx_bad[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry jl_broken()\n"
    "{\n"
    "	this is not an instruction;\n"
    "}\n";

int
main(void)
{
	static char info[8192], err[8192];
	CUjit_option o[6] = { CU_JIT_INFO_LOG_BUFFER,
	    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
	    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME,
	    CU_JIT_LOG_VERBOSE };
	void *v[6];
	float wall;
	CUlinkState ls;
	CUmodule mod;
	CUfunction f;
	CUresult rc;
	CUdeviceptr d;
	unsigned h[N], sum = 0;
	void *cubin;
	size_t cubinlen;
	char path[] = "/tmp/jitlink-XXXXXX";
	int fd, n = N, i, bad = 0;
	const char *s;

	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	v[0] = info;
	v[1] = (void *)(uintptr_t)sizeof info;
	v[2] = err;
	v[3] = (void *)(uintptr_t)sizeof err;
	v[4] = NULL;
	v[5] = (void *)(uintptr_t)1;
	rc = cuLinkCreate(6, o, v, &ls);
	if (rc == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) {
		printf(NAME ": skipped, no JIT compiler (error %d)\n", (int)rc);
		return 0;
	}
	CK(rc);
	CK(cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_a, sizeof ptx_a,
	    "a.ptx", 0, NULL, NULL));
	// The second input from a file, read by cuLinkAddFile.
	if ((fd = mkstemp(path)) == -1 ||
	    write(fd, ptx_b, strlen(ptx_b)) != (ssize_t)strlen(ptx_b) ||
	    close(fd) == -1) {
		printf(NAME ": FAIL cannot write %s\n", path);
		return 1;
	}
	rc = cuLinkAddFile(ls, CU_JIT_INPUT_PTX, path, 0, NULL, NULL);
	unlink(path);
	CK(rc);
	printf("missing file: error %d\n", (int)cuLinkAddFile(ls,
	    CU_JIT_INPUT_PTX, "/nonexistent/jitlink.ptx", 0, NULL, NULL));
	CK(cuLinkComplete(ls, &cubin, &cubinlen));
	memcpy(&wall, &v[4], sizeof wall);
	printf("cubin is ELF: %d\n", cubinlen > 4 &&
	    memcmp(cubin, "\177ELF", 4) == 0);
	printf("info log nonempty: %d\n", info[0] != '\0');
	printf("info log size written: %d\n",
	    (size_t)(uintptr_t)v[1] > 0 && (size_t)(uintptr_t)v[1] <=
	    sizeof info);
	printf("error log empty: %d\n", err[0] == '\0');
	printf("wall time > 0: %d\n", wall > 0);
	CK(cuModuleLoadData(&mod, cubin));
	CK(cuLinkDestroy(ls));
	CK(cuModuleGetFunction(&f, mod, "jl_kernel"));
	for (i = 0; i < N; i++)
		h[i] = (unsigned)i * 2654435761u;
	CK(cuMemAlloc(&d, sizeof h));
	CK(cuMemcpyHtoD(d, h, sizeof h));
	void *args[] = { &d, &n };
	CK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args,
	    NULL));
	CK(cuMemcpyDtoH(h, d, sizeof h));
	for (i = 0; i < N; i++) {
		if (h[i] != (unsigned)i * 2654435761u * 3u + 1u)
			bad++;
		sum = sum * 31 + h[i];
	}
	printf("linked kernel: checksum %08x, %d wrong\n", sum, bad);
	CK(cuMemFree(d));
	CK(cuModuleUnload(mod));

	// A broken input: the driver's code, and its error log.
	info[0] = err[0] = '\0';
	v[1] = (void *)(uintptr_t)sizeof info;
	v[3] = (void *)(uintptr_t)sizeof err;
	CK(cuLinkCreate(6, o, v, &ls));
	rc = cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)ptx_bad,
	    sizeof ptx_bad, "bad.ptx", 0, NULL, NULL);
	s = "?";
	cuGetErrorName(rc, &s);
	printf("broken PTX: error %d %s\n", (int)rc, s);
	printf("error log nonempty: %d\n", err[0] != '\0');
	CK(cuLinkDestroy(ls));
	if (bad != 0) {
		printf(NAME ": FAIL %d wrong\n", bad);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
