// globals: __device__ globals and __constant__ memory.  A statically
// initialised __device__ array (the module's data must arrive with it),
// cudaMemcpyToSymbol and cudaMemcpyFromSymbol whole and at offsets, their
// Async forms, cudaGetSymbolAddress then plain copies and a kernel argument
// through that address, cudaGetSymbolSize, kernels that read __constant__
// memory and write a __device__ global.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define NAME	"globals"
#define CK(x)	check((x), __FILE__, __LINE__)
#define N	4096
#define NCOEF	64

static int nfail;

#define TESTUTIL	(TU_CHECK | TU_EXPECT | TU_FNVLL)
#include "testutil.h"

__constant__ unsigned c_coef[NCOEF];
__constant__ unsigned c_bias;
__device__ unsigned g_init[8] = { 1, 2, 3, 5, 8, 13, 21, 34 };
__device__ unsigned g_table[N];
__device__ unsigned long long g_sum;

// out[i] = in[i] * c_coef[i % NCOEF] + c_bias + g_init[i % 8]
__global__ void
apply_coef(unsigned *out, const unsigned *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[i] * c_coef[i % NCOEF] + c_bias + g_init[i % 8];
}

// g_table[i] = g_table[i] * 3 + k; g_sum += the old g_table[i]
__global__ void
table_step(unsigned k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < N) {
		atomicAdd(&g_sum, (unsigned long long)g_table[i]);
		g_table[i] = g_table[i] * 3 + k;
	}
}

int
main()
{
	static unsigned coef[NCOEF], in[N], out[N], tab[N], want[N];
	unsigned bias = 1000, init[8], part[16], *din, *dout, *dtab;
	unsigned long long sum, wsum;
	size_t sz;
	cudaStream_t s;
	int i;

	CK(cudaStreamCreate(&s));

	// The static initialiser, then a part of it read at an offset.
	CK(cudaMemcpyFromSymbol(init, g_init, sizeof(init)));
	expect(init[0] == 1 && init[7] == 34, "g_init holds its initialiser");
	CK(cudaMemcpyFromSymbol(part, g_init, 3 * sizeof(unsigned),
	    4 * sizeof(unsigned)));
	expect(part[0] == 8 && part[2] == 21,
	    "cudaMemcpyFromSymbol at offset 16");

	CK(cudaGetSymbolSize(&sz, c_coef));
	expect(sz == sizeof(coef), "cudaGetSymbolSize(c_coef) is 256");
	CK(cudaGetSymbolSize(&sz, g_sum));
	expect(sz == 8, "cudaGetSymbolSize(g_sum) is 8");

	// Constant memory in two halves, the second at an offset, async.
	for (i = 0; i < NCOEF; i++)
		coef[i] = 2 * i + 1;
	CK(cudaMemcpyToSymbol(c_coef, coef, 32 * sizeof(unsigned)));
	CK(cudaMemcpyToSymbolAsync(c_coef, coef + 32, 32 * sizeof(unsigned),
	    32 * sizeof(unsigned), cudaMemcpyHostToDevice, s));
	CK(cudaMemcpyToSymbol(c_bias, &bias, sizeof(bias), 0,
	    cudaMemcpyHostToDevice));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpyFromSymbol(part, c_coef, sizeof(part), 40 * 4));
	expect(part[0] == 81 && part[15] == 111,
	    "c_coef[40..56) reads back");

	for (i = 0; i < N; i++)
		in[i] = (unsigned)i * 2654435761u;
	CK(cudaMalloc(&din, sizeof(in)));
	CK(cudaMalloc(&dout, sizeof(out)));
	CK(cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice));
	apply_coef<<<N / 256, 256, 0, s>>>(dout, din, N);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(out, dout, sizeof(out), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	int bad = 0;
	for (i = 0; i < N; i++)
		if (out[i] != in[i] * coef[i % NCOEF] + bias + init[i % 8])
			bad++;
	expect(bad == 0, "apply_coef equals the CPU reference");
	printf("apply_coef fnv1a64 %016llx out[1] %08x out[%d] %08x\n",
	    fnv(out, sizeof(out)), out[1], N - 1, out[N - 1]);

	// g_table through its address, as a plain device pointer.
	CK(cudaGetSymbolAddress((void **)&dtab, g_table));
	for (i = 0; i < N; i++)
		tab[i] = want[i] = i ^ 0x5555;
	CK(cudaMemcpy(dtab, tab, sizeof(tab), cudaMemcpyHostToDevice));
	sum = 0;
	CK(cudaMemcpyToSymbolAsync(g_sum, &sum, sizeof(sum), 0,
	    cudaMemcpyHostToDevice, s));
	wsum = 0;
	for (int k = 0; k < 3; k++) {
		table_step<<<N / 256, 256, 0, s>>>(k + 7);
		CK(cudaGetLastError());
		for (i = 0; i < N; i++) {
			wsum += want[i];
			want[i] = want[i] * 3 + k + 7;
		}
	}
	CK(cudaMemcpyFromSymbolAsync(&sum, g_sum, sizeof(sum), 0,
	    cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	expect(sum == wsum, "g_sum equals the CPU sum");
	printf("g_sum %016llx\n", sum);
	// The last 100 entries through the symbol, the rest by address.
	CK(cudaMemcpyFromSymbol(tab + N - 100, g_table, 100 * sizeof(unsigned),
	    (N - 100) * sizeof(unsigned)));
	CK(cudaMemcpy(tab, dtab, (N - 100) * sizeof(unsigned),
	    cudaMemcpyDeviceToHost));
	bad = 0;
	for (i = 0; i < N; i++)
		if (tab[i] != want[i])
			bad++;
	expect(bad == 0, "g_table equals the CPU reference");
	printf("g_table fnv1a64 %016llx\n", fnv(tab, sizeof(tab)));

	// A global's address is device memory to pointer queries (XLA asks
	// the device of its constants), and not cudaFree's.
	cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, dtab + 100));
	printf("g_table's attributes: device memory %d, device %d, "
	    "device pointer %d\n", pa.type == cudaMemoryTypeDevice,
	    pa.device, pa.devicePointer == (void *)(dtab + 100));
	printf("cudaFree of g_table: %s\n", cudaGetErrorName(cudaFree(dtab)));
	(void)cudaGetLastError();

	// The kernel reads g_init; change it through the symbol.
	init[3] = 0xffffffff;
	CK(cudaMemcpyToSymbol(g_init, &init[3], sizeof(unsigned),
	    3 * sizeof(unsigned)));
	apply_coef<<<N / 256, 256>>>(dout, din, N);
	CK(cudaGetLastError());
	CK(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
	bad = 0;
	for (i = 0; i < N; i++)
		if (out[i] != in[i] * coef[i % NCOEF] + bias + init[i % 8])
			bad++;
	expect(bad == 0, "apply_coef sees the new g_init[3]");

	CK(cudaFree(din));
	CK(cudaFree(dout));
	CK(cudaStreamDestroy(s));
	if (nfail) {
		printf(NAME ": FAIL %d checks failed\n", nfail);
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
