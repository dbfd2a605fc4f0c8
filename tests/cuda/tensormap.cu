// tensormap: the driver's tensor-map encoders, which cuDNN and cuBLASLt
// use for their Hopper kernels: tiled and im2col maps of a fixed, 16-byte
// aligned address the driver encodes but never follows (their 128 bytes in
// hex), the same of cudaMalloc'd memory ("ok": its address differs from
// run to run) and cuTensorMapReplaceAddress.  With -r first the arguments
// the client library refuses (their error codes): only against Gleam, as
// the real driver (580) crashes on some of them (a NULL map: SIGSEGV, seen
// on the H200).  On a GPU local and remote runs print the same;
// the host backend has no encoder (CUDA_ERROR_NOT_SUPPORTED): the program
// says it skipped and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "tensormap"

#define FAKE	((void *)0x7f0000000000ull)

// Sized for rank 6, one past the driver's 5, so that no case reads past.
static cuuint64_t dim2[6] = { 256, 128 }, stride2[6] = { 1024 };
static cuuint32_t box2[6] = { 32, 16 }, one[6] = { 1, 1, 1, 1, 1, 1 };

// Read as bytes: a map may sit off its type's alignment.
static void
hex(const char *what, const void *m)
{
	const unsigned char *p = (const unsigned char *)m;
	int i;

	printf("%s:", what);
	for (i = 0; i < (int)sizeof(CUtensorMap); i++)
		printf("%s%02x", i % 32 == 0 ? "\n  " : "", p[i]);
	printf("\n");
}

// Prints the map, or the error; returns the error.
static CUresult
show(const char *what, CUresult rc, const CUtensorMap *m)
{
	if (rc == CUDA_SUCCESS)
		hex(what, m);
	else
		printf("%s: error %d\n", what, (int)rc);
	return rc;
}

static CUresult
tiled2(CUtensorMap *m, void *addr)
{
	memset(m, 0, sizeof *m);
	return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
	    addr, dim2, stride2, box2, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
	    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
	    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// NHWC, 64 half channels, 32 x 32 pixels, 2 images; a 3 x 3 filter with
// padding 1 (the box runs from -1 to -1 from the far edge).
static CUresult
im2col4(CUtensorMap *m, void *addr)
{
	static cuuint64_t dim[4] = { 64, 32, 32, 2 };
	static cuuint64_t stride[3] = { 128, 4096, 131072 };
	static int lower[2] = { -1, -1 }, upper[2] = { -1, -1 };

	memset(m, 0, sizeof *m);
	return cuTensorMapEncodeIm2col(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
	    addr, dim, stride, lower, upper, 64, 128, one,
	    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	    CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
	    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

int
main(int argc, char **argv)
{
	int refusals = argc > 1 && strcmp(argv[1], "-r") == 0;
	CUtensorMap m;
	alignas(128) unsigned char raw[2 * sizeof(CUtensorMap)];
	CUresult rc;
	void *d;

	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": FAIL no device\n");
		return 1;
	}

	// Refused before any encoding: what the client checks first.
	if (refusals) {
	printf("NULL map: error %d\n", (int)cuTensorMapEncodeTiled(NULL,
	    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2, stride2, box2, one,
	    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
	    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	printf("rank 0: error %d\n", (int)cuTensorMapEncodeTiled(&m,
	    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 0, FAKE, dim2, stride2, box2, one,
	    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
	    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	printf("rank 6: error %d\n", (int)cuTensorMapEncodeTiled(&m,
	    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 6, FAKE, dim2, stride2, box2, one,
	    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
	    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	printf("NULL globalDim: error %d\n", (int)cuTensorMapEncodeTiled(&m,
	    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, NULL, stride2, box2, one,
	    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
	    CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	{
		static int corner[6];

		printf("im2col rank 2: error %d\n",
		    (int)cuTensorMapEncodeIm2col(&m,
		    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2, stride2,
		    corner, corner, 32, 32, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	}
	printf("replace in NULL map: error %d\n",
	    (int)cuTensorMapReplaceAddress(NULL, FAKE));
	}

	rc = show("tiled rank 2 float32", tiled2(&m, FAKE), &m);
	if (rc == CUDA_ERROR_NOT_SUPPORTED) {
		printf(NAME ": skipped, no tensor-map encoder (error %d)\n",
		    (int)rc);
		return 0;
	}
	{
		static cuuint64_t dim[3] = { 64, 32, 8 }, stride[2] = { 128, 4096 };
		static cuuint32_t box[3] = { 64, 8, 2 };

		memset(&m, 0, sizeof m);
		show("tiled rank 3 float16 swizzle 128B", cuTensorMapEncodeTiled(
		    &m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, FAKE, dim, stride,
		    box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_128B,
		    CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA), &m);
	}
	{
		static cuuint64_t dim[5] = { 32, 4, 4, 4, 2 };
		static cuuint64_t stride[4] = { 64, 256, 1024, 4096 };
		static cuuint32_t box[5] = { 32, 2, 2, 2, 1 };
		static cuuint32_t es[5] = { 1, 2, 1, 2, 1 };

		memset(&m, 0, sizeof m);
		show("tiled rank 5 bfloat16 swizzle 64B", cuTensorMapEncodeTiled(
		    &m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 5, FAKE, dim, stride,
		    box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_64B,
		    CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
	}
	show("im2col rank 4 float16", im2col4(&m, FAKE), &m);
	{
		static cuuint64_t dim[3] = { 16, 64, 4 }, stride[2] = { 64, 4096 };
		static int lower[1] = { 0 }, upper[1] = { 0 };

		memset(&m, 0, sizeof m);
		show("im2col rank 3 float32", cuTensorMapEncodeIm2col(&m,
		    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, FAKE, dim, stride,
		    lower, upper, 16, 64, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
	}
	if (tiled2(&m, FAKE) == CUDA_SUCCESS)
		show("replaced address", cuTensorMapReplaceAddress(&m,
		    (char *)FAKE + 0x1000), &m);

	// What the driver refuses (or takes) of the values themselves.
	show("global address 8 bytes off", tiled2(&m, (char *)FAKE + 8), &m);
	{
		static cuuint32_t box[6] = { 32, 0 };

		memset(&m, 0, sizeof m);
		show("box dim 0", cuTensorMapEncodeTiled(&m,
		    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2, stride2,
		    box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
	}
	{
		static cuuint64_t stride[6] = { 1000 };

		memset(&m, 0, sizeof m);
		show("stride not a multiple of 16", cuTensorMapEncodeTiled(&m,
		    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2, stride,
		    box2, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
	}
	if (tiled2(&m, FAKE) == CUDA_SUCCESS)
		show("replaced by an address 8 bytes off",
		    cuTensorMapReplaceAddress(&m, (char *)FAKE + 8), &m);
	{
		// A map 8 bytes from its alignment: the driver's to judge.
		CUtensorMap *mm = (CUtensorMap *)(raw + 8);

		memset(raw, 0, sizeof raw);
		rc = cuTensorMapEncodeTiled(mm,
		    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2, stride2,
		    box2, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		    CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
		    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
		if (rc == CUDA_SUCCESS)
			hex("map 8 bytes off its alignment", raw + 8);
		else
			printf("map 8 bytes off its alignment: error %d\n",
			    (int)rc);
	}

	// The same encodings again and again, over maps holding other bytes
	// before (Gleam keeps encodings: its answers must stay the driver's,
	// whatever the bytes an encoder leaves as they were).
	{
		static const unsigned char fill[] = { 0x00, 0xff, 0x5a, 0x00,
		    0xa5, 0x0f, 0xff };
		static cuuint64_t dim[4] = { 64, 32, 32, 2 };
		static cuuint64_t stride[3] = { 128, 4096, 131072 };
		static int lower[2] = { -1, -1 }, upper[2] = { -1, -1 };
		char what[64];

		for (size_t i = 0; i < sizeof fill; i++) {
			memset(&m, fill[i], sizeof m);
			snprintf(what, sizeof what, "tiled again over %02x",
			    fill[i]);
			show(what, cuTensorMapEncodeTiled(&m,
			    CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, FAKE, dim2,
			    stride2, box2, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
			    CU_TENSOR_MAP_SWIZZLE_NONE,
			    CU_TENSOR_MAP_L2_PROMOTION_NONE,
			    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
			memset(&m, fill[i], sizeof m);
			snprintf(what, sizeof what, "im2col again over %02x",
			    fill[i]);
			show(what, cuTensorMapEncodeIm2col(&m,
			    CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, FAKE, dim,
			    stride, lower, upper, 64, 128, one,
			    CU_TENSOR_MAP_INTERLEAVE_NONE,
			    CU_TENSOR_MAP_SWIZZLE_128B,
			    CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
			    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), &m);
		}
	}

	// Memory of the program's own: the address is the device's.
	if (cudaMalloc(&d, 1 << 20) != cudaSuccess) {
		printf(NAME ": FAIL cudaMalloc\n");
		return 1;
	}
	rc = tiled2(&m, d);
	printf("tiled on cudaMalloc'd memory: %s\n",
	    rc == CUDA_SUCCESS ? "ok" : "error");
	if (rc != CUDA_SUCCESS)
		printf("  error %d\n", (int)rc);
	rc = im2col4(&m, d);
	printf("im2col on cudaMalloc'd memory: %s\n",
	    rc == CUDA_SUCCESS ? "ok" : "error");
	if (rc != CUDA_SUCCESS)
		printf("  error %d\n", (int)rc);
	rc = cuTensorMapReplaceAddress(&m, (char *)d + 4096);
	printf("replaced by cudaMalloc'd memory: %s\n",
	    rc == CUDA_SUCCESS ? "ok" : "error");
	if (rc != CUDA_SUCCESS)
		printf("  error %d\n", (int)rc);
	cudaFree(d);
	printf(NAME ": ok\n");
	return 0;
}
