/*
 * The local defaults of the remoting hooks (hooks.h): one placeholder
 * device, no context.  Each is weak so that the remoting layer overrides
 * it by defining the same function.
 */
#include <stdio.h>

#include "driver.h"
#include "hooks.h"

#define HOOK	__attribute__((weak))

/*
 * The placeholder describes no real GPU: a name that says so, no memory,
 * every attribute 0.  cudart's start-up needs no more, and everything that
 * would need a GPU still fails with a CUDA error.
 */
static struct client_device	 placeholder;
static int			 hooks_ready;

/* Fill the placeholder device. */
static void
hooks_placeholder(void)
{
	static const CUuuid uuid = { { 'g', 'l', 'e', 'a', 'm', '-', 'n', 'o',
	    '-', 's', 'e', 'r', 'v', 'e', 'r', 0 } };

	snprintf(placeholder.name, sizeof placeholder.name, "%s",
	    "Gleam placeholder (no server)");
	placeholder.uuid = uuid;
	hooks_ready = 1;
}

HOOK CUresult
client_init(void)
{
	hooks_placeholder();
	return CUDA_SUCCESS;
}

HOOK int
client_device_count(void)
{
	return hooks_ready ? 1 : 0;
}

HOOK const struct client_device *
client_device(int ordinal)
{
	if (!hooks_ready || ordinal != 0)
		return NULL;
	return &placeholder;
}

HOOK CUresult
client_primary_ctx(CUdevice dev, CUcontext *out)
{
	static char handle;	/* a stable address no one dereferences */

	if (client_device(dev) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = (CUcontext)&handle;
	return CUDA_SUCCESS;
}

HOOK CUcontext
client_ctx_current(void)
{
	return NULL;
}

HOOK CUresult
client_tpc_map(uint8_t **vgpc, uint8_t **mtpc)
{
	(void)vgpc;
	(void)mtpc;
	return CUDA_ERROR_NOT_SUPPORTED;
}
