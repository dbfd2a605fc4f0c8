/* The host backend's settings (the backend itself is backend_host). */
#ifndef SERVE_HOST_H
#define SERVE_HOST_H

#include <stdint.h>

#define HOST_BUDGET_DEFAULT	(16ULL << 30)

/*
 * Before backend_host.init: kernels is the library of host kernels
 * (gleam-host-kernel.h), "" or NULL for none, in which case every launch
 * fails; budget is the device memory the backend reports and hands out,
 * in bytes, 0 for HOST_BUDGET_DEFAULT.
 */
void	host_backend_configure(const char *kernels, uint64_t budget);

#endif
