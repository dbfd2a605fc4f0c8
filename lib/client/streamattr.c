/*
 * Stream attributes (cuStreamGetAttribute, SetAttribute, CopyAttributes):
 * the server's driver keeps them, one round trip each.  A value travels
 * as the attribute's own member of CUstreamAttrValue (rpc_sattr_len
 * bytes); an attribute that is not a stream's is refused here, as the
 * driver refuses it.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "log.h"

static CUresult
sattr_call(CUstream s, int ptsz, unsigned op, CUstreamAttrID a,
    CUstream from, const CUstreamAttrValue *set, CUstreamAttrValue *get)
{
	struct rpc_val in[6], out[1];
	struct gctx *c;
	uint64_t sid, src = 0;
	size_t len = 0;
	void *keep;
	CUresult rc;

	if ((rc = ctx_need(&c)) != CUDA_SUCCESS)
		return rc;
	if ((rc = stream_id(s, ptsz, &sid)) != CUDA_SUCCESS)
		return rc;
	if (op == SATTR_COPY) {
		if ((rc = stream_id(from, ptsz, &src)) != CUDA_SUCCESS)
			return rc;
	} else if ((len = rpc_sattr_len((uint32_t)a)) == 0 ||
	    (op == SATTR_SET ? (const void *)set : (const void *)get) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	in[0].u = gobj_id(c);
	in[1].u = sid;
	in[2].u = op;
	in[3].u = (uint32_t)a;
	in[4].u = src;
	in[5].p = op == SATTR_SET ? (const void *)set : NULL;
	in[5].len = op == SATTR_SET ? (uint32_t)len : 0;
	rc = remote_call(R_STREAM_ATTR, in, out, &keep);
	if (rc == CUDA_SUCCESS && op == SATTR_GET) {
		if (out[0].len != len) {
			log_warn("cuStreamGetAttribute: a malformed reply");
			rc = CUDA_ERROR_INVALID_VALUE;
		} else {
			memset(get, 0, sizeof *get);
			memcpy(get, out[0].p, len);
		}
	}
	free(keep);
	return rc;
}

CUresult cuStreamGetAttribute(CUstream s, CUstreamAttrID a, CUstreamAttrValue *v) { return sattr_call(s, 0, SATTR_GET, a, NULL, NULL, v); }
CUresult cuStreamGetAttribute_ptsz(CUstream s, CUstreamAttrID a, CUstreamAttrValue *v) { return sattr_call(s, 1, SATTR_GET, a, NULL, NULL, v); }
CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID a, const CUstreamAttrValue *v) { return sattr_call(s, 0, SATTR_SET, a, NULL, v, NULL); }
CUresult cuStreamSetAttribute_ptsz(CUstream s, CUstreamAttrID a, const CUstreamAttrValue *v) { return sattr_call(s, 1, SATTR_SET, a, NULL, v, NULL); }
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) { return sattr_call(dst, 0, SATTR_COPY, 0, src, NULL, NULL); }
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) { return sattr_call(dst, 1, SATTR_COPY, 0, src, NULL, NULL); }
