/*
 * cuGetProcAddress and cuGetProcAddress_v2 (dark-api.md §1.2): how cudart
 * and the libraries find every other entry point.  The answer is the
 * newest ABI variant introduced at or below the caller's CUDA version,
 * from the generated table (entry-points.c).
 */
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "procaddr.h"
#include "log.h"

static int
procaddr_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ep_row *)elem)->name);
}

/*
 * Flags 2 (per-thread default stream) picks among the _ptds/_ptsz
 * variants when the name has any, so that below the version that
 * introduced them the answer is "version not sufficient"; a name without
 * them falls back to its default variants.
 */
static CUdriverProcAddressQueryResult
procaddr_find(const char *sym, int version, int pt, void **pfn)
{
	const struct ep_row *r, *first, *end, *best = NULL;
	int kind = EP_DEFAULT;

	*pfn = NULL;
	r = bsearch(sym, ep_table, ep_rows, sizeof *ep_table, procaddr_cmp);
	if (r == NULL)
		return CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	for (first = r; first > ep_table && strcmp(first[-1].name, sym) == 0;
	    first--)
		;
	for (end = r + 1; end < ep_table + ep_rows &&
	    strcmp(end->name, sym) == 0; end++)
		;
	for (r = first; pt && r < end; r++)
		if (r->kind == EP_PT)
			kind = EP_PT;
	for (r = first; r < end; r++)
		if (r->kind == kind && r->version <= version)
			best = r;
	if (best == NULL)
		return CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	*pfn = (void *)best->fn;
	return CU_GET_PROC_ADDRESS_SUCCESS;
}

/* The checks that fail the whole call, leaving *pfn untouched. */
static CUresult
procaddr_check(const char *sym, void **pfn, int version, cuuint64_t flags)
{
	if (sym == NULL || pfn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags != CU_GET_PROC_ADDRESS_DEFAULT &&
	    flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
	    flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		return CUDA_ERROR_INVALID_VALUE;
	if (version > CLIENT_DRIVER_VERSION)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	CUdriverProcAddressQueryResult st;
	CUresult rc;

	if ((rc = procaddr_check(symbol, pfn, cudaVersion, flags)) != 0) {
		log_trace("cuGetProcAddress_v2: %s@%d flags %llu: error %d",
		    symbol != NULL ? symbol : "(null)", cudaVersion,
		    (unsigned long long)flags, rc);
		return rc;
	}
	st = procaddr_find(symbol, cudaVersion,
	    flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, pfn);
	log_trace("cuGetProcAddress_v2: %s@%d flags %llu: status %d", symbol,
	    cudaVersion, (unsigned long long)flags, st);
	if (symbolStatus != NULL)
		*symbolStatus = st;
	return CUDA_SUCCESS;
}

/* The CUDA 11.3 ABI, without a status: not found is an error. */
CUresult
cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
    cuuint64_t flags)
{
	CUresult rc;

	if ((rc = procaddr_check(symbol, pfn, cudaVersion, flags)) != 0)
		return rc;
	if (procaddr_find(symbol, cudaVersion,
	    flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, pfn) !=
	    CU_GET_PROC_ADDRESS_SUCCESS)
		return CUDA_ERROR_NOT_FOUND;
	return CUDA_SUCCESS;
}
