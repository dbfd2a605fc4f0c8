/*
 * Stream memory operations: waits on and writes of 32- and 64-bit values
 * at device addresses, in a stream's order.  Stream-ordered work the
 * server checks against the client's memory: one-way, its error reported
 * by the next call that waits.  Each call goes as one batch (rpc.h's
 * R_STREAM_MEMOP).
 */
#include <string.h>

#include "io.h"
#include "client.h"
#include "cuwire.h"
#include "graph.h"
#include "hooks.h"

CUresult
memop_pack(unsigned n, const CUstreamBatchMemOpParams *ops, struct pw *w)
{
	uint64_t addr, val;
	uint32_t oflags;
	unsigned k;

	for (k = 0; k < n; k++) {
		const CUstreamBatchMemOpParams *o = &ops[k];

		addr = val = 0;
		switch (o->operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
			addr = o->waitValue.address;
			val = o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ?
			    o->waitValue.value : o->waitValue.value64;
			oflags = o->waitValue.flags;
			if (oflags & CU_STREAM_WAIT_VALUE_FLUSH)
				return CUDA_ERROR_INVALID_VALUE;
			break;
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			addr = o->writeValue.address;
			val = o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ?
			    o->writeValue.value : o->writeValue.value64;
			oflags = o->writeValue.flags;
			/*
			 * "Not supported in the v2 API": the H200's driver
			 * refuses it at once, and a wait that counted on the
			 * write would hang.
			 */
			if (oflags & CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
				return CUDA_ERROR_INVALID_VALUE;
			break;
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
			oflags = o->flushRemoteWrites.flags;
			break;
		case CU_STREAM_MEM_OP_BARRIER:
			oflags = o->memoryBarrier.flags;
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
		pw_u32(w, (uint32_t)o->operation);
		pw_u32(w, oflags);
		pw_u64(w, addr);
		pw_u64(w, val);
	}
	return w->bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static CUresult
memop_post(CUstream s, int ptsz, unsigned count,
    const CUstreamBatchMemOpParams *ops, unsigned flags)
{
	struct rpc_val in[4];
	struct gctx *c;
	struct pw w;
	uint64_t sid;
	unsigned i, n;
	CUresult rc;

	if (count > 0 && ops == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if (count == 0)
		return CUDA_SUCCESS;
	/* Captured: a node no capture trace follows. */
	if ((rc = capture_work(c, sid, 0)) != CUDA_SUCCESS)
		return rc;
	/* In order, RPC_MEMOPS_MAX a batch. */
	for (i = 0; i < count; i += n) {
		n = count - i < RPC_MEMOPS_MAX ? count - i : RPC_MEMOPS_MAX;
		pw_init(&w);
		if ((rc = memop_pack(n, ops + i, &w)) != CUDA_SUCCESS) {
			pw_free(&w);
			return rc;
		}
		in[0].u = gobj_id(c);
		in[1].u = sid;
		in[2].u = flags;
		in[3].p = w.p;
		in[3].len = (uint32_t)w.len;
		rc = rpost(R_STREAM_MEMOP, in, 0);
		pw_free(&w);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	return CUDA_SUCCESS;
}

/* One operation of the single-value calls. */
static CUresult
memop_one(CUstream s, int ptsz, CUstreamBatchMemOpType type,
    CUdeviceptr addr, uint64_t v, unsigned flags)
{
	CUstreamBatchMemOpParams op;

	/* No address: the driver's INVALID_VALUE now, not an error of the
	 * stream's later (the operation goes one-way). */
	if (addr == 0 && client_initialized() == CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&op, 0, sizeof op);
	cuwire_memop_set(&op, type, flags, addr, v);
	return memop_post(s, ptsz, 1, &op, 0);
}

/*
 * The first version of the calls (no _v2: a program built against CUDA
 * 11's headers, or one that looks them up by name) is the driver's only
 * where the device says it can use them (CAN_USE_STREAM_MEM_OPS_V1, 64 for
 * 64-bit values): else NOT_SUPPORTED before the arguments are looked at,
 * as the 580 driver answers on an H100 (nullsweep).  The server's table
 * holds the real device's attributes.
 */
static CUresult
memop_v1(int wide)
{
	const struct client_device *d;
	struct gctx *c;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((d = client_device(c->device)) == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!d->attr[CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1] ||
	    (wide && !d->attr[CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1]))
		return CUDA_ERROR_NOT_SUPPORTED;
	return CUDA_SUCCESS;
}

#define V1(wide, call)	do { CUresult v1rc_ = memop_v1(wide);		\
	return v1rc_ != CUDA_SUCCESS ? v1rc_ : (call); } while (0)

#define W32	CU_STREAM_MEM_OP_WAIT_VALUE_32
#define W64	CU_STREAM_MEM_OP_WAIT_VALUE_64
#define S32	CU_STREAM_MEM_OP_WRITE_VALUE_32
#define S64	CU_STREAM_MEM_OP_WRITE_VALUE_64

CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { V1(0, memop_one(s, 0, W32, a, v, f)); }
CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { return memop_one(s, 0, W32, a, v, f); }
CUresult cuStreamWaitValue32_ptsz(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { V1(0, memop_one(s, 1, W32, a, v, f)); }
CUresult cuStreamWaitValue32_v2_ptsz(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { return memop_one(s, 1, W32, a, v, f); }
CUresult cuStreamWaitValue64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { V1(1, memop_one(s, 0, W64, a, v, f)); }
CUresult cuStreamWaitValue64_v2(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { return memop_one(s, 0, W64, a, v, f); }
CUresult cuStreamWaitValue64_ptsz(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { V1(1, memop_one(s, 1, W64, a, v, f)); }
CUresult cuStreamWaitValue64_v2_ptsz(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { return memop_one(s, 1, W64, a, v, f); }
CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { V1(0, memop_one(s, 0, S32, a, v, f)); }
CUresult cuStreamWriteValue32_v2(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { return memop_one(s, 0, S32, a, v, f); }
CUresult cuStreamWriteValue32_ptsz(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { V1(0, memop_one(s, 1, S32, a, v, f)); }
CUresult cuStreamWriteValue32_v2_ptsz(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f) { return memop_one(s, 1, S32, a, v, f); }
CUresult cuStreamWriteValue64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { V1(1, memop_one(s, 0, S64, a, v, f)); }
CUresult cuStreamWriteValue64_v2(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { return memop_one(s, 0, S64, a, v, f); }
CUresult cuStreamWriteValue64_ptsz(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { V1(1, memop_one(s, 1, S64, a, v, f)); }
CUresult cuStreamWriteValue64_v2_ptsz(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) { return memop_one(s, 1, S64, a, v, f); }

CUresult cuStreamBatchMemOp(CUstream s, unsigned int n, CUstreamBatchMemOpParams *ops, unsigned int f) { V1(0, memop_post(s, 0, n, ops, f)); }
CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned int n, CUstreamBatchMemOpParams *ops, unsigned int f) { return memop_post(s, 0, n, ops, f); }
CUresult cuStreamBatchMemOp_ptsz(CUstream s, unsigned int n, CUstreamBatchMemOpParams *ops, unsigned int f) { V1(0, memop_post(s, 1, n, ops, f)); }
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream s, unsigned int n, CUstreamBatchMemOpParams *ops, unsigned int f) { return memop_post(s, 1, n, ops, f); }
