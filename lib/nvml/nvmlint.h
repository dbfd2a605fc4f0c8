/* Between nvml.c, stubs.c and smi.c. */
#ifndef GLEAM_NVMLINT_H
#define GLEAM_NVMLINT_H

/* Whether nvmlInit has been called more often than nvmlShutdown. */
int	nv_initialized(void);
/* rc (an nvmlReturn_t) once nvmlInit has been called, else
 * NVML_ERROR_UNINITIALIZED: a refusal before any handle is looked at. */
int	nv_refuse(int rc);
/* Once per function (*said), at info level: name is not answered here. */
void	nv_unsupported(const char *name, int *said);
/* The private table of that UUID that smi.c answers, else NULL. */
const void	*nv_smi_table(const unsigned char *uuid);

#endif
