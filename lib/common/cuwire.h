/*
 * Wire encodings that the client library and the server's CUDA backend
 * both turn into or out of the driver's own structures, so both include
 * cuda.h: one definition here for the two sides (rpc.h has the formats).
 */
#ifndef GLEAM_CUWIRE_H
#define GLEAM_CUWIRE_H

#include <stdint.h>
#include <string.h>

#include <cuda.h>

#include "rpc.h"

/*
 * One R_STREAM_MEMOP operation (type, flags, address, value) as the
 * driver's *op, whose other fields the caller has zeroed.  Operations
 * other than waits, writes and flushes are barriers.
 */
static inline void
cuwire_memop_set(CUstreamBatchMemOpParams *op, uint32_t type,
    uint32_t flags, uint64_t addr, uint64_t val)
{
	op->operation = (CUstreamBatchMemOpType)type;
	switch (type) {
	case CU_STREAM_MEM_OP_WAIT_VALUE_32:
	case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		op->waitValue.address = addr;
		op->waitValue.value64 = val;
		op->waitValue.flags = flags;
		break;
	case CU_STREAM_MEM_OP_WRITE_VALUE_32:
	case CU_STREAM_MEM_OP_WRITE_VALUE_64:
		op->writeValue.address = addr;
		op->writeValue.value64 = val;
		op->writeValue.flags = flags;
		break;
	case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
		op->flushRemoteWrites.flags = flags;
		break;
	default:
		op->memoryBarrier.flags = flags;
		break;
	}
}

/*
 * An allocation node's parameters appended to w as RPC_SIG_MEMALLOC, dptr
 * the allocation's address (0 in a request).  Access descriptors past
 * RPC_MEMALLOC_ACCESS_MAX are not sent.
 */
static inline void
cuwire_memalloc_pack(const CUDA_MEM_ALLOC_NODE_PARAMS *p, CUdeviceptr dptr,
    struct pw *w)
{
	struct rpc_val v[RPC_MAX_FIELDS];
	struct pw a;
	size_t i;

	memset(v, 0, sizeof v);
	pw_init(&a);
	for (i = 0; i < p->accessDescCount && i < RPC_MEMALLOC_ACCESS_MAX;
	    i++) {
		pw_u32(&a, (uint32_t)p->accessDescs[i].location.type);
		pw_u32(&a, (uint32_t)p->accessDescs[i].location.id);
		pw_u32(&a, (uint32_t)p->accessDescs[i].flags);
	}
	v[0].u = dptr;
	v[1].u = p->bytesize;
	v[2].u = (uint32_t)p->poolProps.allocType;
	v[3].u = (uint32_t)p->poolProps.handleTypes;
	v[4].u = (uint32_t)p->poolProps.location.type;
	v[5].u = (uint32_t)p->poolProps.location.id;
	v[6].p = a.p;
	v[6].len = (uint32_t)a.len;
	rpc_pack(w, RPC_SIG_MEMALLOC, v);
	pw_free(&a);
}

#endif
