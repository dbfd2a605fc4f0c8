/*
 * Every other function the real libnvidia-ml.so.1 exports (exports.h):
 * NVML_ERROR_NOT_SUPPORTED, as a GPU without the feature answers, or
 * NVML_ERROR_UNINITIALIZED before nvmlInit.  Weak, so that nvml.c's
 * definitions take the place of the ones it answers.  Their arguments are
 * not read: the calling conventions we build for let a caller pass any.
 * Each says its name once, as the CUDA client does for what it does not
 * remote (with GLEAM_VERBOSE or -v: a tool that probes every function
 * would otherwise fill the terminal).
 */
#define GNVML_TYPES_ONLY
#include "gnvml.h"
#include "nvmlint.h"

#define NVML_FN(name)							\
	nvmlReturn_t name(void) __attribute__((weak));			\
	nvmlReturn_t name(void)						\
	{								\
		static int said;					\
									\
		nv_unsupported(#name, &said);				\
		return nv_refuse(NVML_ERROR_NOT_SUPPORTED);		\
	}
#include "exports.h"
