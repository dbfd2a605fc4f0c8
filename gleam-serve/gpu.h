/* What the host's GPUs are and how busy: NVML if present, else none. */
#ifndef SERVE_GPU_H
#define SERVE_GPU_H

#include "status.h"

/*
 * Fills s->gpus, s->ngpus and s->gpu_source ("nvml", or the reason there
 * is no GPU: "no GPU (libnvidia-ml.so.1 not found)").  Cheap after the
 * first call: the library stays loaded.
 */
void	gpu_query(struct server_status *);
void	gpu_shutdown(void);

#endif
