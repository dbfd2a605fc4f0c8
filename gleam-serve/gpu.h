/* What the host's GPUs are and how busy: NVML if present, else none. */
#ifndef SERVE_GPU_H
#define SERVE_GPU_H

#include "status.h"

/*
 * Fills s->gpus, s->ngpus and s->gpu_source: "nvml", or "no GPU" with the
 * reason in parentheses where NVML is there but fails ("no GPU (NVML
 * failed)").  Cheap after the
 * first call: the library stays loaded.
 */
void	gpu_query(struct server_status *);
void	gpu_shutdown(void);

#endif
