/* Between nvml.c and stubs.c. */
#ifndef GLEAM_NVMLINT_H
#define GLEAM_NVMLINT_H

/* Whether nvmlInit has been called more often than nvmlShutdown. */
int	nv_initialized(void);
/* Once per function (*said), at info level: name is not answered here. */
void	nv_unsupported(const char *name, int *said);

#endif
