// streammem: stream memory operations on cudaMalloc'd memory: 32- and
// 64-bit writes on one stream, a second stream waiting (EQ, GEQ, AND) for
// them before it writes values of its own, the same through
// cuStreamBatchMemOp (with a barrier), and the per-thread default stream;
// then every word copied back, in hex.
#include <cstdio>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "streammem"

#define CK(x) do {							\
	CUresult rc_ = (x);						\
	if (rc_ != CUDA_SUCCESS) {					\
		const char *s_ = "?";					\
		cuGetErrorName(rc_, &s_);				\
		printf(NAME ": CUDA error at %s:%d: %s\n", __FILE__,	\
		    __LINE__, s_);					\
		return 2;						\
	}								\
} while (0)

int
main(void)
{
	unsigned long long h[16];
	CUstreamBatchMemOpParams ops[4];
	CUdeviceptr d;
	CUstream a, b;
	CUdevice dev;
	int v64 = 0, i;
	void *p;

	if (cudaMalloc(&p, sizeof h) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	d = (CUdeviceptr)p;
	CK(cuCtxGetDevice(&dev));
	CK(cuDeviceGetAttribute(&v64,
	    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
	printf("64-bit stream memory operations: %d\n", v64 != 0);
	CK(cuMemsetD8(d, 0, sizeof h));
	CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));

	CK(cuStreamWriteValue32(a, d, 0x1234u, 0));
	CK(cuStreamWaitValue32(b, d, 0x1234u, CU_STREAM_WAIT_VALUE_EQ));
	CK(cuStreamWriteValue32(b, d + 4, 0xabcdu, 0));
	// The v2 API has no such flag: refused at once (INVALID_VALUE).
	printf("write without a barrier: %d\n", (int)cuStreamWriteValue32(a,
	    d + 8, 7u, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
	CK(cuStreamWriteValue32(a, d + 8, 7u, 0));
	CK(cuStreamWaitValue32(b, d + 8, 5u, CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuStreamWaitValue32(b, d + 8, 2u, CU_STREAM_WAIT_VALUE_AND));
	CK(cuStreamWriteValue32(b, d + 12, 0xfeedu, 0));
	if (v64) {
		CK(cuStreamWriteValue64(a, d + 16, 0x1122334455667788ull, 0));
		CK(cuStreamWaitValue64(b, d + 16, 0x1122334455667788ull,
		    CU_STREAM_WAIT_VALUE_EQ));
		CK(cuStreamWriteValue64(b, d + 24, 0x8877665544332211ull, 0));
	}

	memset(ops, 0, sizeof ops);
	ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	ops[0].writeValue.address = d + 32;
	ops[0].writeValue.value = 0x600du;
	ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
	ops[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
	ops[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	ops[2].waitValue.address = d + 32;
	ops[2].waitValue.value = 0x600du;
	ops[2].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
	ops[3].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	ops[3].writeValue.address = d + 36;
	ops[3].writeValue.value = 0xd00du;
	CK(cuStreamBatchMemOp(a, 4, ops, 0));
	CK(cuStreamSynchronize(a));
	CK(cuStreamSynchronize(b));

	// The per-thread default stream, then the legacy one.
	CK(cuStreamWriteValue32(CU_STREAM_PER_THREAD, d + 40, 0x7777u, 0));
	CK(cuStreamWriteValue32(NULL, d + 44, 0x4444u, 0));
	CK(cuCtxSynchronize());

	CK(cuMemcpyDtoH(h, d, sizeof h));
	for (i = 0; i < 8; i++)
		printf("word %d: %016llx\n", i, h[i]);
	CK(cuStreamDestroy(a));
	CK(cuStreamDestroy(b));
	cudaFree(p);
	if ((h[0] & 0xffffffffu) != 0x1234u || h[0] >> 32 != 0xabcdu ||
	    h[4] != (0xd00dull << 32 | 0x600du) ||
	    h[5] != (0x4444ull << 32 | 0x7777u)) {
		printf(NAME ": FAIL wrong values\n");
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
