/* What the host's GPUs are and how busy: NVML if present, else none. */
#ifndef SERVE_GPU_H
#define SERVE_GPU_H

#include "status.h"

/*
 * Fills s->gpus, s->ngpus and s->gpu_source: "nvml", or "no GPU" with the
 * reason in parentheses where NVML is there but fails ("no GPU (NVML
 * failed)").  NVML is asked in a helper process (gpu.c), never in
 * the server, whose workers must start CUDA with no driver state of
 * the server's; the helper keeps NVML loaded, so only the first call is
 * slow.  gpu_shutdown stops the helper.
 */
void	gpu_query(struct server_status *);
void	gpu_shutdown(void);
/*
 * In a child of the server (a worker, the NVML helper): the signals the
 * server acts on (a drain, a reload, a migration) are the server's, so
 * ignored; SIGCHLD as by default; SIGPIPE ignored (a write to a closed
 * socket is an error, not a death).
 */
void	child_signals(void);
/*
 * Where CUDA_VISIBLE_DEVICES (vis; NULL: unset) puts GPU i among the
 * ones this server's driver shows: its position, or -1 when hidden.
 * Entries are indices (as NVML numbers the GPUs: PCI order, which is
 * CUDA's on hosts of one GPU model) or UUID prefixes ("GPU-8f3a"),
 * comma-separated; as CUDA does, the list ends at the first entry that
 * names none of the n GPUs (uuids: theirs) or one already named.
 */
int	gpu_visible(const char *vis, unsigned int i, unsigned int n,
	    char (*uuids)[96]);

#endif
