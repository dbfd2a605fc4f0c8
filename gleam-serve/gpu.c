/* GPU inventory through NVML, loaded at run time so no GPU host needs it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "log.h"

/* The few NVML types and calls we use, as nvml.h declares them. */
typedef void *nvml_dev;
struct nvml_memory { unsigned long long total, free, used; };
struct nvml_util { unsigned int gpu, memory; };

static struct {
	void	*h;
	int	 tried, ok;
	char	 why[64];
	int	(*init)(void);
	int	(*shutdown)(void);
	int	(*count)(unsigned int *);
	int	(*handle)(unsigned int, nvml_dev *);
	int	(*name)(nvml_dev, char *, unsigned int);
	int	(*mem)(nvml_dev, struct nvml_memory *);
	int	(*util)(nvml_dev, struct nvml_util *);
} nv;

/* Loads NVML once; remembers why it could not be. */
static int
gpu_load(void)
{
	if (nv.tried)
		return nv.ok;
	nv.tried = 1;
	if (getenv("GLEAM_NO_NVML") != NULL) {
		snprintf(nv.why, sizeof nv.why, "no GPU (NVML disabled)");
		return 0;
	}
	if ((nv.h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) ==
	    NULL) {
		snprintf(nv.why, sizeof nv.why, "no GPU");
		return 0;
	}
	nv.init = (int (*)(void))dlsym(nv.h, "nvmlInit_v2");
	nv.shutdown = (int (*)(void))dlsym(nv.h, "nvmlShutdown");
	nv.count = (int (*)(unsigned int *))dlsym(nv.h,
	    "nvmlDeviceGetCount_v2");
	nv.handle = (int (*)(unsigned int, nvml_dev *))dlsym(nv.h,
	    "nvmlDeviceGetHandleByIndex_v2");
	nv.name = (int (*)(nvml_dev, char *, unsigned int))dlsym(nv.h,
	    "nvmlDeviceGetName");
	nv.mem = (int (*)(nvml_dev, struct nvml_memory *))dlsym(nv.h,
	    "nvmlDeviceGetMemoryInfo");
	nv.util = (int (*)(nvml_dev, struct nvml_util *))dlsym(nv.h,
	    "nvmlDeviceGetUtilizationRates");
	if (nv.init == NULL || nv.count == NULL || nv.handle == NULL ||
	    nv.name == NULL || nv.mem == NULL) {
		snprintf(nv.why, sizeof nv.why, "no GPU (NVML incomplete)");
		return 0;
	}
	if (nv.init() != 0) {
		snprintf(nv.why, sizeof nv.why, "no GPU (NVML failed)");
		return 0;
	}
	nv.ok = 1;
	return 1;
}

void
gpu_query(struct server_status *s)
{
	struct nvml_memory m;
	struct nvml_util u;
	struct gpu_status *g;
	unsigned int n, i;
	nvml_dev d;

	s->ngpus = 0;
	if (!gpu_load()) {
		snprintf(s->gpu_source, sizeof s->gpu_source, "%s", nv.why);
		return;
	}
	snprintf(s->gpu_source, sizeof s->gpu_source, "nvml");
	if (nv.count(&n) != 0)
		n = 0;
	if (n == 0)
		snprintf(s->gpu_source, sizeof s->gpu_source, "no GPU");
	for (i = 0; i < n && i < STATUS_MAX_GPUS; i++) {
		if (nv.handle(i, &d) != 0)
			continue;
		g = &s->gpus[s->ngpus++];
		memset(g, 0, sizeof *g);
		g->index = (int)i;
		if (nv.name(d, g->name, sizeof g->name) != 0)
			snprintf(g->name, sizeof g->name, "unknown");
		if (nv.mem(d, &m) == 0) {
			g->memory_total = m.total;
			g->memory_free = m.free;
		}
		g->utilization = -1;
		if (nv.util != NULL && nv.util(d, &u) == 0)
			g->utilization = (int)u.gpu;
	}
}

void
gpu_shutdown(void)
{
	if (nv.ok && nv.shutdown != NULL)
		nv.shutdown();
	if (nv.h != NULL)
		dlclose(nv.h);
	memset(&nv, 0, sizeof nv);
}
