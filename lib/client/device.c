/*
 * Initialization and the device queries, answered locally from the device
 * descriptions of the remoting hooks (hooks.h).  cudart reads these on
 * start-up and hashes some of them into the integrity check, so they must
 * agree with what integrity_hash() is fed: both come from client_device().
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "client.h"
#include "hooks.h"

static pthread_once_t	 device_once = PTHREAD_ONCE_INIT;
static CUresult		 device_init_rc = CUDA_ERROR_NOT_INITIALIZED;
static int		 device_init_tried;
static CUmoduleLoadingMode device_loading = CU_MODULE_LAZY_LOADING;

/* Connect, and read the settings the driver reads at cuInit. */
static void
device_init(void)
{
	const char *s;

	if ((s = getenv("CUDA_MODULE_LOADING")) != NULL &&
	    strcmp(s, "EAGER") == 0)
		device_loading = CU_MODULE_EAGER_LOADING;
	device_init_rc = client_init();
	__atomic_store_n(&device_init_tried, 1, __ATOMIC_RELEASE);
}

CUresult
client_initialized(void)
{
	if (!__atomic_load_n(&device_init_tried, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	return device_init_rc;
}

/* The first call connects; a failure sticks, as the real driver's does. */
CUresult
cuInit(unsigned int Flags)
{
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&device_once, device_init);
	return device_init_rc;
}

CUresult
cuDriverGetVersion(int *driverVersion)
{
	if (driverVersion == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CLIENT_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

/* Lazy unless CUDA_MODULE_LOADING=EAGER, as with the real driver. */
CUresult
cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (mode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = device_loading;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetCount(int *count)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*count = client_device_count();
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGet(CUdevice_v1 *device, int ordinal)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (client_device(ordinal) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

/* The checks every per-device query starts with. */
CUresult
device_lookup(CUdevice dev, const void *out, const struct client_device **d)
{
	CUresult rc;

	if ((rc = client_initialized()) != CUDA_SUCCESS)
		return rc;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((*d = client_device(dev)) == NULL)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetName(char *name, int len, CUdevice_v1 dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, name, &d)) != CUDA_SUCCESS)
		return rc;
	if (len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	strncpy(name, d->name, len - 1);
	name[len - 1] = '\0';
	return CUDA_SUCCESS;
}

CUresult
cuDeviceTotalMem_v2(size_t *bytes, CUdevice_v1 dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, bytes, &d)) != CUDA_SUCCESS)
		return rc;
	*bytes = d->totalmem;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice_v1 dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, pi, &d)) != CUDA_SUCCESS)
		return rc;
	if ((int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = d->attr[attrib];
	return CUDA_SUCCESS;
}

/* Without MIG the two ABIs agree; a MIG instance would differ in _v2. */
CUresult
cuDeviceGetUuid(CUuuid *uuid, CUdevice_v1 dev)
{
	const struct client_device *d;
	CUresult rc;

	if ((rc = device_lookup(dev, uuid, &d)) != CUDA_SUCCESS)
		return rc;
	*uuid = d->uuid;
	return CUDA_SUCCESS;
}

CUresult
cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice_v1 dev)
{
	return cuDeviceGetUuid(uuid, dev);
}
