/*
 * Wire encodings that the client library and the server's CUDA backend
 * both turn into or out of the driver's own structures, so both include
 * cuda.h: one definition here for the two sides (rpc.h has the formats).
 */
#ifndef GLEAM_CUWIRE_H
#define GLEAM_CUWIRE_H

#include <stdint.h>

#include <cuda.h>

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

#endif
