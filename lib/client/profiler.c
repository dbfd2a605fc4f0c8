/*
 * Profiler control.  No profiler runs in the client's process and the
 * server's is not the program's to drive, so these are answered here, as
 * the driver answers with no profiler attached: start and stop succeed
 * and do nothing; cuProfilerInitialize, deprecated, is not supported
 * from CUDA 12 on.
 */
#include "client.h"

CUresult
cuProfilerInitialize(const char *config, const char *output,
    CUoutput_mode mode)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* Both need a context, as the driver's do. */
CUresult
cuProfilerStart(void)
{
	struct gctx *c;

	return ctx_need(&c);
}

CUresult
cuProfilerStop(void)
{
	struct gctx *c;

	return ctx_need(&c);
}
