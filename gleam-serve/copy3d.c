/* R_MEM_3D's descriptor against the client's memory (gleam-protocol(5)). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "copy3d.h"

int
copy3d_prepare(struct rcall *c, CUDA_MEMCPY3D *m, int *empty,
    copy3d_array_fn array)
{
	uint64_t sspan, dspan;
	int rc;

	/* check_call took it already: decoded again, for its fields. */
	if ((rc = check_copy3d(c, m, &sspan, &dspan, empty)) != CUDA_SUCCESS ||
	    *empty)
		return rc;
	*empty = 1;
	if (m->srcMemoryType == CU_MEMORYTYPE_ARRAY) {
		if ((rc = array(c, m, 0)) != CUDA_SUCCESS)
			return rc;
	} else if (m->srcMemoryType == CU_MEMORYTYPE_HOST) {
		m->srcDevice = 0;
		m->srcHost = c->in[4].p;
	} else if (rmem_check(c->cl, m->srcDevice, sspan) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (m->dstMemoryType == CU_MEMORYTYPE_ARRAY) {
		if ((rc = array(c, m, 1)) != CUDA_SUCCESS)
			return rc;
	} else if (m->dstMemoryType == CU_MEMORYTYPE_HOST) {
		if ((c->scratch = calloc(1, dspan)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->dstDevice = 0;
		m->dstHost = c->scratch;
		c->out[0].p = c->scratch;
		c->out[0].len = (uint32_t)dspan;
	} else if (rmem_check(c->cl, m->dstDevice, dspan) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	*empty = 0;
	return CUDA_SUCCESS;
}
