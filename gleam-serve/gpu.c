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
	int	(*uuid)(nvml_dev, char *, unsigned int);
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
	nv.uuid = (int (*)(nvml_dev, char *, unsigned int))dlsym(nv.h,
	    "nvmlDeviceGetUUID");
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

/* Which GPU an entry names: its index among n, or -1. */
static int
entry_gpu(const char *e, size_t len, unsigned int n, char (*uuids)[96])
{
	unsigned int i, v = 0;
	size_t k;
	int hit = -1;

	if (len == 0)
		return -1;
	for (k = 0; k < len && e[k] >= '0' && e[k] <= '9'; k++)
		if ((v = v * 10 + (unsigned)(e[k] - '0')) > 1000000)
			return -1;
	if (k == len)
		return v < n ? (int)v : -1;
	/* A UUID prefix must name one GPU only. */
	for (i = 0; i < n; i++)
		if (strncmp(uuids[i], e, len) == 0) {
			if (hit >= 0)
				return -1;
			hit = (int)i;
		}
	return hit;
}

int
gpu_visible(const char *vis, unsigned int i, unsigned int n,
    char (*uuids)[96])
{
	const char *p, *end;
	unsigned long long seen = 0;
	int pos = 0, g;

	if (vis == NULL)
		return i < n ? (int)i : -1;
	for (p = vis; *p != '\0'; p = *end ? end + 1 : end, pos++) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, ",");
		if ((g = entry_gpu(p, (size_t)(end - p), n, uuids)) < 0 ||
		    g >= 64 || (seen >> g & 1))
			return -1;
		seen |= 1ULL << g;
		if ((unsigned int)g == i)
			return pos;
	}
	return -1;
}

void
gpu_query(struct server_status *s)
{
	static char uuids[STATUS_MAX_GPUS][96];
	struct nvml_memory m;
	struct nvml_util u;
	struct gpu_status *g;
	unsigned int n, i;
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	nvml_dev d;

	s->ngpus = 0;
	if (!gpu_load()) {
		snprintf(s->gpu_source, sizeof s->gpu_source, "%s", nv.why);
		return;
	}
	snprintf(s->gpu_source, sizeof s->gpu_source, "nvml");
	if (nv.count(&n) != 0)
		n = 0;
	if (n > STATUS_MAX_GPUS)
		n = STATUS_MAX_GPUS;
	for (i = 0; i < n; i++) {
		uuids[i][0] = '\0';
		if (vis != NULL && nv.uuid != NULL && nv.handle(i, &d) == 0)
			(void)nv.uuid(d, uuids[i], sizeof uuids[i]);
	}
	/* Only what CUDA_VISIBLE_DEVICES leaves this server's clients. */
	for (i = 0; i < n; i++) {
		if (gpu_visible(vis, i, n, uuids) < 0 ||
		    nv.handle(i, &d) != 0)
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
	if (s->ngpus == 0)
		snprintf(s->gpu_source, sizeof s->gpu_source, "%s", n == 0 ?
		    "no GPU" : "no GPU (CUDA_VISIBLE_DEVICES hides them)");
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
