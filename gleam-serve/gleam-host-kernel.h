/*
 * Host implementations of CUDA kernels for gleam-serve's host backend, the
 * test backend of machines without a GPU.  A test ships its kernels as a
 * shared object, named by the host_kernels setting of gleam-serve.yaml(5);
 * the backend loads it at start and runs a kernel when a client launches
 * one of the same mangled name.  The object exports:
 *
 *	#include "gleam-host-kernel.h"
 *
 *	GLEAM_HOST_KERNEL_LIBRARY;
 *
 *	static void
 *	vec_add(const struct gleam_host_dim *grid,
 *	    const struct gleam_host_dim *block, unsigned shmem, void **args)
 *	{
 *		const float *a = *(const float **)args[0];
 *		...
 *		for (every thread of every block, i its global index)
 *			if (i < n && GLEAM_HOST_OK(&c[i], 4) && ...)
 *				c[i] = a[i] + b[i];
 *	}
 *
 *	static const struct gleam_host_param vec_add_params[] = {
 *		GLEAM_HOST_PARAM(const float *),
 *		GLEAM_HOST_PARAM(const float *),
 *		GLEAM_HOST_PARAM(float *), GLEAM_HOST_PARAM(int)
 *	};
 *
 *	const struct gleam_host_kernel gleam_host_kernels[] = {
 *		{ "_Z6vecAddPKfS0_Pfi", 4, vec_add_params, vec_add },
 *		{ NULL, 0, NULL, NULL }
 *	};
 *
 * Parameters are laid out as the members of a C struct would be, each at
 * the next multiple of its alignment: the layout cuFuncGetParamInfo gives
 * on a GPU, as long as each size and alignment is the device's (CUDA's
 * vector types are aligned to their size up to 16: float4 is { 16, 16 },
 * int3 { 12, 4 }).  args[i] points to parameter i, aligned.
 *
 * Device memory is host memory in gleam-serve's own address space, so a
 * kernel checks every access through a pointer it was given with
 * GLEAM_HOST_OK(p, bytes) first, and skips the access when that is 0:
 * the memory is not the launching client's.  The launch then fails as a
 * GPU's would, with CUDA_ERROR_ILLEGAL_ADDRESS, sticky in the context.
 *
 * A kernel that uses __device__ or __constant__ variables finds them with
 * gleam_host_global_ptr(name) during a launch: the launching module's
 * instance (one per module, or per library and context), made zeroed, or
 * with the variable's initial value, on the first cuModuleGetGlobal or
 * use.  Names, sizes and initial values come from the module's image
 * (its cubins' symbol tables), else, for a name the image does not show
 * (a compressed image, or not a real one), from gleam_host_globals[].
 * NULL for a name that neither declares.
 *
 * A kernel prints as a device's printf does with gleam_host_printf(fmt,
 * ...): into its client's output, written at the client's next call that
 * flushes a GPU's printf buffer (a synchronization, a blocking copy, an
 * unload, the context's end), through gleam-serve's stdout, which a worker
 * process forwards to its client (gleam-serve(8)).  A failed assert(3)
 * is gleam_host_assert_fail(msg): msg goes the same way to stderr, and the
 * launch ends its context with CUDA_ERROR_ASSERT, sticky, as on a GPU
 * (the kernel returns after it).  Both are set only for an object built
 * with this header's GLEAM_HOST_KERNEL_LIBRARY, and do nothing outside a
 * launch.
 *
 * A kernel of a graph's launch sets a conditional node's condition as
 * cudaGraphSetConditional(handle, value) does with
 * gleam_host_set_conditional(handle, value), the handle being the
 * argument the kernel was given: the condition of that launch.  Outside a
 * graph's launch, or with a handle not of the launched graph, it does
 * nothing.  Set for an object built with GLEAM_HOST_KERNEL_LIBRARY by a
 * backend that has it (NULL for an older one).
 *
 * Every launch runs to completion, one at a time per client, on the
 * client's thread in gleam-serve: a kernel must not keep pointers beyond
 * its return.  Different clients' launches may run at the same time.
 */
#ifndef GLEAM_HOST_KERNEL_H
#define GLEAM_HOST_KERNEL_H

/* Raised when this interface changes incompatibly. */
#define GLEAM_HOST_KERNEL_ABI	1

/* A launch's grid or block dimensions. */
struct gleam_host_dim {
	unsigned	 x, y, z;
};

/*
 * Runs a whole grid: every thread of every block.  shmem is the dynamic
 * shared memory the launch asked for, per block, in bytes.
 */
typedef void	gleam_host_fn(const struct gleam_host_dim *grid,
		    const struct gleam_host_dim *block, unsigned shmem,
		    void **args);

/* One kernel parameter: its size and alignment on the device. */
struct gleam_host_param {
	unsigned	 size, align;
};

#define GLEAM_HOST_PARAM(type)	{ sizeof(type), _Alignof(type) }

struct gleam_host_kernel {
	const char			*name;	/* mangled; NULL ends */
	unsigned			 nparams;
	const struct gleam_host_param	*params;
	gleam_host_fn			*fn;
};

/* A __device__ variable, by the name cuModuleGetGlobal is asked for. */
struct gleam_host_global {
	const char		*name;		/* NULL ends */
	unsigned long long	 size;
	const void		*init;		/* size bytes, or NULL: zero */
};

/*
 * The object's exports: gleam_host_kernel_abi, gleam_host_access,
 * gleam_host_global_ptr, gleam_host_printf, gleam_host_assert_fail and
 * gleam_host_set_conditional come from GLEAM_HOST_KERNEL_LIBRARY,
 * written once at file scope (the backend sets the pointers when it
 * loads the object); gleam_host_kernels is required, gleam_host_globals
 * optional.
 */
extern const unsigned			 gleam_host_kernel_abi;
extern const struct gleam_host_kernel	 gleam_host_kernels[];
extern const struct gleam_host_global	 gleam_host_globals[];
/* During a launch: 1 if the client may touch [p, p + len), else 0. */
extern int	(*gleam_host_access)(const void *p, unsigned long long len);
/* During a launch: the module's instance of a global, or NULL. */
extern void	*(*gleam_host_global_ptr)(const char *name);

/* During a launch: the device's printf, and a failed device assert. */
extern int	(*gleam_host_printf)(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
extern void	(*gleam_host_assert_fail)(const char *msg);
/* During a graph's launch: cudaGraphSetConditional. */
extern void	(*gleam_host_set_conditional)(unsigned long long handle,
		    unsigned value);

#define GLEAM_HOST_OK(p, len)	gleam_host_access((const void *)(p), (len))

#define GLEAM_HOST_KERNEL_LIBRARY					\
	const unsigned gleam_host_kernel_abi = GLEAM_HOST_KERNEL_ABI;	\
	int (*gleam_host_access)(const void *, unsigned long long);	\
	void *(*gleam_host_global_ptr)(const char *);			\
	int (*gleam_host_printf)(const char *, ...);			\
	void (*gleam_host_assert_fail)(const char *);			\
	void (*gleam_host_set_conditional)(unsigned long long, unsigned)

#endif
