/*
 * cuOccupancyMaxPotentialBlockSize: the block size that gives the most
 * resident threads per multiprocessor.  Its callback (dynamic shared
 * memory by block size) is the program's own function, which cannot
 * cross the wire, so the search runs here, as cudart's
 * cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags runs it: block
 * sizes from the limit down in warp steps, each asked of the occupancy
 * query (kept per function, block size and shared memory, exec.c), the
 * first best kept, stopping once a whole multiprocessor is filled.
 */
#include "client.h"
#include "hooks.h"

const struct gfinfo *func_info(const void *, uint64_t *);

static CUresult
occ_potential(int *grid, int *block, CUfunction f, CUoccupancyB2DSize fn,
    size_t smem, int limit, unsigned flags)
{
	const struct client_device *d;
	const struct gfinfo *fi;
	struct gctx *c;
	uint64_t fid;
	int maxsm, warp, devmax, nsm, fmax, aligned, try, n, best = 0,
	    bestn = 0, occ = 0;
	CUresult rc;

	if (grid == NULL || block == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((fi = func_info(f, &fid)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((d = client_device(c->device)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	maxsm = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR];
	warp = d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
	devmax = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	nsm = d->attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	fmax = fi->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (warp <= 0)
		warp = 32;
	if (limit <= 0 || limit > devmax)
		limit = devmax;
	if (fmax < limit)
		limit = fmax;
	aligned = (limit + warp - 1) / warp * warp;
	for (; aligned > 0; aligned -= warp) {
		try = limit < aligned ? limit : aligned;
		rc = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n,
		    f, try, fn != NULL ? fn(try) : smem, flags);
		if (rc != CUDA_SUCCESS)
			return rc;
		if (try * n > occ) {
			best = try;
			bestn = n;
			occ = try * n;
		}
		if (occ == maxsm)
			break;
	}
	*grid = bestn * nsm;
	*block = best;
	return CUDA_SUCCESS;
}

CUresult
cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f,
    CUoccupancyB2DSize fn, size_t smem, int limit)
{
	return occ_potential(grid, block, f, fn, smem, limit, 0);
}

CUresult
cuOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block,
    CUfunction f, CUoccupancyB2DSize fn, size_t smem, int limit,
    unsigned int flags)
{
	return occ_potential(grid, block, f, fn, smem, limit, flags);
}
