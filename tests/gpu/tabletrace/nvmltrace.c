/*
 * nvmltrace: a libnvidia-ml.so.1 for the GPU machine that forwards every
 * NVML export to the real library and traces the private tables that
 * nvmlInternalGetExportTable hands out, as tabletrace does the driver's
 * (ttcore.c does both).  nvidia-smi asks for a table by UUID and stops
 * with "Mismatch in versions between nvidia-smi and NVML" when refused;
 * this shows which tables, their layout, and which slots it calls.  With
 * TABLETRACE_CALLS=1, every public call too, in order, with its result.
 *
 * Environment: TABLETRACE_NVML_REAL (the real library's path), and
 * ttcore.c's.
 */
#include <dlfcn.h>
#include <stdint.h>

#include "tabletrace.h"

#define EXPORT		__attribute__((visibility("default")))
#define NV_ABSENT	13	/* NVML_ERROR_FUNCTION_NOT_FOUND */

typedef int (*export_fn)(const void **, const void *);

static export_fn	 real_export;

EXPORT int	nvmlInternalGetExportTable(const void **, const void *);

static void	nvml_loaded(void *);

const struct tt_lib tt_lib = {
	.soname = "libnvidia-ml.so.1",
	.env_real = "TABLETRACE_NVML_REAL",
	.absent = NV_ABSENT,
	.loaded = nvml_loaded,
};

static void
nvml_loaded(void *real)
{
	if (real != NULL)
		real_export = (export_fn)dlsym(real,
		    "nvmlInternalGetExportTable");
}

EXPORT int
nvmlInternalGetExportTable(const void **pp, const void *id)
{
	tt_init();
	if (real_export == NULL)
		return NV_ABSENT;
	return tt_export(pp, id, real_export(pp, id),
	    (uintptr_t)__builtin_return_address(0));
}
