/*
 * JIT options, shared by the linker (link.c) and the loads that take them
 * (module.c): encoded for the server, and the outputs of a reply (log
 * text, wall time, sizes) written into the arrays the program passed.
 */
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "client.h"
#include "log.h"

static int
jit_is_log(CUjit_option o)
{
	return o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_ERROR_LOG_BUFFER;
}

/*
 * Encodes an option list (rpc.h) and notes each log buffer's size, as
 * its size option says before the driver overwrites it.
 */
CUresult
jit_enc(struct pw *w, unsigned n, const CUjit_option *opts, void **vals,
    size_t *logsz)
{
	unsigned i, k;
	CUjit_option want;

	if (n > 0 && (opts == NULL || vals == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if (n > RPC_JIT_OPTS_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		switch (opts[i]) {
		case CU_JIT_GLOBAL_SYMBOL_NAMES:
		case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
		case CU_JIT_REFERENCED_KERNEL_NAMES:
		case CU_JIT_REFERENCED_VARIABLE_NAMES:
			/* Arrays of the program's: not sent. */
			log_debug("JIT option %d not supported", (int)opts[i]);
			return CUDA_ERROR_NOT_SUPPORTED;
		default:
			break;
		}
		if ((unsigned)opts[i] >= CU_JIT_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
		logsz[i] = 0;
		if (jit_is_log(opts[i])) {
			want = opts[i] == CU_JIT_INFO_LOG_BUFFER ?
			    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES :
			    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
			for (k = 0; k < n; k++)
				if (opts[k] == want)
					logsz[i] = (size_t)(uintptr_t)vals[k];
			if (logsz[i] > RPC_JIT_LOG_MAX)
				logsz[i] = RPC_JIT_LOG_MAX;
		}
		pw_u32(w, (uint32_t)opts[i]);
		pw_u64(w, jit_is_log(opts[i]) ? 0 :
		    (uint64_t)(uintptr_t)vals[i]);
	}
	return w->bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* Writes a reply's outputs into the program's arrays (rpc.h). */
void
jit_dec(const struct rpc_val *v, unsigned n, const CUjit_option *opts,
    void **vals, const size_t *logsz)
{
	const void *text;
	struct pr r;
	uint64_t val;
	uint32_t len;
	size_t k;
	unsigned i;

	pr_init(&r, v->p, v->len);
	for (i = 0; i < n && !r.bad; i++) {
		val = pr_u64(&r);
		if (!jit_is_log(opts[i])) {
			if (!r.bad)
				vals[i] = (void *)(uintptr_t)val;
			continue;
		}
		len = pr_u32(&r);
		if ((text = pr_take(&r, len)) == NULL || logsz[i] == 0 ||
		    vals[i] == NULL)
			continue;
		k = len < logsz[i] - 1 ? len : logsz[i] - 1;
		memcpy(vals[i], text, k);
		((char *)vals[i])[k] = '\0';
	}
}

