// occupancy: cuOccupancyMaxPotentialBlockSize(WithFlags) for three
// kernels (plain, register-heavy with launch bounds, dynamic shared
// memory) with no callback and fixed shared memory, with callbacks
// (bytes per thread, a step function), with block size limits and the
// caching-override flag: minGridSize and blockSize each, beside what
// cudart's own template (cudaOccupancyMaxPotentialBlockSize) chooses.
#include <cstdio>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "occupancy"

extern "C" __global__ void occ_plain(unsigned *p)
{
	p[blockIdx.x * blockDim.x + threadIdx.x] += 1;
}

extern "C" __global__ void __launch_bounds__(256, 1) occ_regs(float *p)
{
	float a[24];
	int i, t = blockIdx.x * blockDim.x + threadIdx.x;

	for (i = 0; i < 24; i++)
		a[i] = p[t + i * 7] * (float)i;
	for (i = 1; i < 24; i++)
		a[i] += a[i - 1] * a[(i * 5) % 24];
	p[t] = a[23] + a[11];
}

extern "C" __global__ void occ_smem(unsigned *p)
{
	extern __shared__ unsigned s[];

	s[threadIdx.x] = p[threadIdx.x];
	__syncthreads();
	p[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

static size_t per_thread(int block) { return (size_t)block * 16; }
static size_t step(int block) { return block > 256 ? 32768 : 4096; }

static int fails;

static void
show(const char *what, CUresult rc, int grid, int block)
{
	if (rc != CUDA_SUCCESS) {
		printf("%s: error %d\n", what, (int)rc);
		return;
	}
	printf("%s: minGridSize %d blockSize %d\n", what, grid, block);
	if (block <= 0 || grid <= 0)
		fails++;
}

int
main(void)
{
	const void *ks[3] = { (const void *)occ_plain, (const void *)occ_regs,
	    (const void *)occ_smem };
	const char *names[3] = { "occ_plain", "occ_regs", "occ_smem" };
	char what[128];
	CUfunction f;
	int k, g, b;
	CUresult rc;

	if (cudaFree(0) != cudaSuccess) {
		printf(NAME ": no device\n");
		return 2;
	}
	for (k = 0; k < 3; k++) {
		if (cudaGetFuncBySymbol(&f, ks[k]) != cudaSuccess) {
			printf(NAME ": FAIL no function %s\n", names[k]);
			return 1;
		}
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, NULL, 0, 0);
		snprintf(what, sizeof what, "%s no smem", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, NULL, 12000,
		    0);
		snprintf(what, sizeof what, "%s 12000 bytes", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, per_thread,
		    0, 0);
		snprintf(what, sizeof what, "%s 16 bytes a thread", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, step, 0, 0);
		snprintf(what, sizeof what, "%s step", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, NULL, 0, 200);
		snprintf(what, sizeof what, "%s limit 200", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSize(&g, &b, f, per_thread,
		    0, 100);
		snprintf(what, sizeof what, "%s 16 bytes a thread, limit 100",
		    names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = cuOccupancyMaxPotentialBlockSizeWithFlags(&g, &b, f,
		    NULL, 0, 0, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE);
		snprintf(what, sizeof what, "%s caching override", names[k]);
		show(what, rc, g, b);
		g = b = -1;
		rc = (CUresult)cudaOccupancyMaxPotentialBlockSize(&g, &b,
		    ks[k], 0, 0);
		snprintf(what, sizeof what, "%s cudart template", names[k]);
		show(what, rc, g, b);
	}
	printf("NULL minGridSize: error %d\n",
	    (int)cuOccupancyMaxPotentialBlockSize(NULL, &b, f, NULL, 0, 0));
	printf("NULL blockSize: error %d\n",
	    (int)cuOccupancyMaxPotentialBlockSize(&g, NULL, f, NULL, 0, 0));
	if (fails) {
		printf(NAME ": FAIL %d empty answers\n", fails);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
