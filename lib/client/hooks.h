/*
 * Remoting hooks: the GPU-side state that the local half of the client
 * library needs.  hooks.c defines each as a weak local default (one
 * placeholder device, no server, no context) that is good enough for the
 * tests, which use it in the library's local half (client.mk); the
 * remoting layer replaces them with strong definitions of the same names
 * that answer from the server's device list, fetched once at connect, and
 * from its own context tracking.
 *
 * Contract: after client_init() has succeeded, the device list and every
 * device's description stay the same for the life of the process.  cudart
 * hashes the UUIDs and PCI attributes into the integrity check (dark-api.md
 * §3) and compares the hash with what it reads through cuDeviceGetUuid and
 * cuDeviceGetAttribute, which device.c answers from the same descriptions.
 * Apart from client_init, no hook may make a round trip: cudart calls them
 * on its hot paths.
 */
#ifndef GLEAM_CLIENT_HOOKS_H
#define GLEAM_CLIENT_HOOKS_H

/* One device as the server described it at connect. */
struct client_device {
	char	 name[256];
	CUuuid	 uuid;		/* cuDeviceGetUuid(_v2) */
	size_t	 totalmem;	/* bytes */
	int	 attr[CU_DEVICE_ATTRIBUTE_MAX]; /* by CUdevice_attribute */
};

/* Connect and fetch the device list; cuInit(0) calls it once. */
CUresult	 client_init(void);

/* The number of devices; 0 before client_init() has succeeded. */
int		 client_device_count(void);
/* The server's driver version (cuDriverGetVersion there). */
uint32_t	 client_server_driver(void);

/* Device ordinal's description, NULL when out of range. */
const struct client_device *client_device(int);

/*
 * The device's primary-context handle, as CUDART_INTERFACE slot 2 returns
 * it: the handle cuDevicePrimaryCtxRetain will return, stable across
 * release and retain, fetched without taking a reference or activating
 * the context.  CUDA_ERROR_INVALID_DEVICE for a bad ordinal.
 */
CUresult	 client_primary_ctx(CUdevice, CUcontext *);

/*
 * cuBLASLt's TPC map of the current context's device (dark-api.md 6.1):
 * two malloc'd arrays of at least 72 bytes, or an error: 3 before cuInit,
 * 201 without a current context, 801 when the server has none to give.
 */
CUresult	 client_tpc_map(uint8_t **vgpc, uint8_t **mtpc);

/* The calling thread's current context, NULL when none is. */
CUcontext	 client_ctx_current(void);

#endif
