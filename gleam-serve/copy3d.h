/*
 * R_MEM_3D's descriptor, for both backends: check_copy3d (check.h) has
 * checked its values before dispatch; here every byte that a device side
 * of the copy reaches must lie in one of the client's ranges (backend.h).
 */
#ifndef SERVE_COPY3D_H
#define SERVE_COPY3D_H

#include <cuda.h>

#include "backend.h"

/*
 * An array side of m (the destination if dst), whose pointer field holds
 * the client's id of the array: the backend puts its array there (or
 * memory standing for it) once the copy's extent lies inside it;
 * CUDA_SUCCESS, or the CUresult to answer.
 */
typedef int (*copy3d_array_fn)(struct rcall *, CUDA_MEMCPY3D *m, int dst);

/*
 * Decodes c->in[3] (the descriptor), which check_call passed, into *m.
 * A host source points into the request; a host destination is
 * c->scratch, zeroed, which becomes the reply's blob (c->out[0]).
 * Array sides go to array().
 * Returns CUDA_SUCCESS with *empty = 0 when there is a copy to make,
 * CUDA_SUCCESS with *empty = 1 when there is nothing to copy, or the
 * CUresult to answer.
 */
int	copy3d_prepare(struct rcall *, CUDA_MEMCPY3D *m, int *empty,
	    copy3d_array_fn array);

#endif
