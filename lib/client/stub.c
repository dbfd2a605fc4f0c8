/* What every generated stub (stubs.c) does. */
#include "driver.h"
#include "stub.h"
#include "log.h"

/* The error log (diag.c), where the library has it (not its local half). */
void	 diag_log(int, const char *, ...) __attribute__((weak));

/* Log the entry point's name the first time it is called, then fail. */
CUresult
stub_unsupported(const char *name, int i)
{
	if (i >= 0 && i < stub_count &&
	    !__atomic_exchange_n(&stub_said[i], 1, __ATOMIC_RELAXED))
		log_warn("%s: not supported", name);
	if (diag_log != NULL)
		diag_log(0, "%s: not supported", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}
