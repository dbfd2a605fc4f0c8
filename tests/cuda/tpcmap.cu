// tpcmap: the driver's export table 1734dc26, slot [4], which cuBLASLt
// calls for the TPC-to-virtual-GPC map of the current context's device
// (shared/ref/dark-api.md 6.1).  Prints the first SM count / 2 bytes of
// both arrays, or the error: on a GPU local and remote runs print the
// same; the host backend has no map to give (CUDA_ERROR_NOT_SUPPORTED).
#include <cstdio>
#include <cstdlib>
#include <cstdint>

#include <cuda.h>
#include <cuda_runtime.h>

#define NAME "tpcmap"

int
main(void)
{
	static const CUuuid id = { { 0x17, 0x34, (char)0xdc, 0x26, (char)0x80,
	    0x0d, 0x47, 0x45, (char)0x87, 0x26, (char)0xc0, (char)0xf1,
	    (char)0xe7, (char)0xdd, (char)0x8b, (char)0xca } };
	CUresult (*map)(uint8_t **, uint8_t **);
	CUresult (*unmap)(uint8_t *, uint8_t *);
	uint8_t *vgpc = NULL, *mtpc = NULL;
	const void *const *table;
	const void *t = NULL;
	int sms, i;
	CUresult rc;

	if (cudaFree(0) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) !=
	    cudaSuccess) {
		printf(NAME ": FAIL no device\n");
		return 1;
	}
	if (cuGetExportTable(&t, &id) != CUDA_SUCCESS || t == NULL) {
		printf(NAME ": FAIL no table\n");
		return 1;
	}
	table = (const void *const *)t;
	printf("table size word %zu\n", (size_t)table[0]);
	map = (CUresult (*)(uint8_t **, uint8_t **))table[4];
	unmap = (CUresult (*)(uint8_t *, uint8_t *))table[13];
	rc = map(&vgpc, &mtpc);
	if (rc != CUDA_SUCCESS) {
		printf("map: error %d\n", (int)rc);
		printf(NAME ": ok\n");
		return 0;
	}
	printf("map: %d TPCs\nvgpc:", sms / 2);
	for (i = 0; i < sms / 2; i++)
		printf(" %u", vgpc[i]);
	printf("\nmtpc:");
	for (i = 0; i < sms / 2; i++)
		printf(" %u", mtpc[i]);
	printf("\n");
	if (unmap(vgpc, mtpc) != CUDA_SUCCESS) {
		printf(NAME ": FAIL free\n");
		return 1;
	}
	printf(NAME ": ok\n");
	return 0;
}
