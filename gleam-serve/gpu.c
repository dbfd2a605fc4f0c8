/* GPU inventory through NVML, loaded at run time so no GPU host needs it. */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"
#include "log.h"
#include "util.h"

/* The few NVML types and calls we use, as nvml.h declares them. */
typedef void *nvml_dev;
struct nvml_memory { unsigned long long total, free, used; };
struct nvml_util { unsigned int gpu, memory; };
struct nvml_pci {
	char		 bus_id_legacy[16];
	unsigned int	 domain, bus, device, device_id, subsystem_id;
	char		 bus_id[32];
};
/* nvmlPciInfoExt_v1_t: its version, then the class code. */
struct nvml_pci_ext {
	unsigned int	 version, domain, bus, device, device_id,
			 subsystem_id, base_class, sub_class;
	char		 bus_id[32];
};
typedef int (*nvml_uint_fn)(nvml_dev, unsigned int *);

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
	int	(*serial)(nvml_dev, char *, unsigned int);
	int	(*pci)(nvml_dev, struct nvml_pci *);
	int	(*pci_ext)(nvml_dev, struct nvml_pci_ext *);
	int	(*cc)(nvml_dev, int *, int *);
	int	(*temp)(nvml_dev, int, unsigned int *);
	int	(*clock)(nvml_dev, int, unsigned int *);
	int	(*maxclock)(nvml_dev, int, unsigned int *);
	int	(*driver)(char *, unsigned int);
	int	(*version)(char *, unsigned int);
	int	(*cuda)(int *);
} nv;

/*
 * The queries of one unsigned number (or an enum, the same size), each
 * into an int of struct gpu_status; values above max mean "unknown" (the
 * performance state's NVML_PSTATE_UNKNOWN, 32).
 */
static const struct {
	const char	*sym;
	size_t		 off;
	unsigned int	 max;
} gpu_uints[] = {
	{ "nvmlDeviceGetMinorNumber", offsetof(struct gpu_status,
	    minor_number), 1 << 20 },
	{ "nvmlDeviceGetPowerUsage", offsetof(struct gpu_status, power_mw),
	    100000000 },
	{ "nvmlDeviceGetPowerManagementLimit", offsetof(struct gpu_status,
	    power_limit_mw), 100000000 },
	{ "nvmlDeviceGetEnforcedPowerLimit", offsetof(struct gpu_status,
	    enforced_power_limit_mw), 100000000 },
	{ "nvmlDeviceGetFanSpeed", offsetof(struct gpu_status, fan_percent),
	    100 },
	{ "nvmlDeviceGetPerformanceState", offsetof(struct gpu_status,
	    pstate), 15 },
	{ "nvmlDeviceGetComputeMode", offsetof(struct gpu_status,
	    compute_mode), 3 },
	{ "nvmlDeviceGetPersistenceMode", offsetof(struct gpu_status,
	    persistence_mode), 1 },
	{ "nvmlDeviceGetBrand", offsetof(struct gpu_status, brand), 1000 },
	{ "nvmlDeviceGetArchitecture", offsetof(struct gpu_status,
	    architecture), 1000 },
	{ "nvmlDeviceGetCurrPcieLinkGeneration", offsetof(struct gpu_status,
	    pcie_gen), 100 },
	{ "nvmlDeviceGetCurrPcieLinkWidth", offsetof(struct gpu_status,
	    pcie_width), 1024 },
	{ "nvmlDeviceGetMaxPcieLinkGeneration", offsetof(struct gpu_status,
	    max_pcie_gen), 100 },
	{ "nvmlDeviceGetMaxPcieLinkWidth", offsetof(struct gpu_status,
	    max_pcie_width), 1024 },
};
#define NUINTS	(sizeof gpu_uints / sizeof gpu_uints[0])
static nvml_uint_fn uint_fns[NUINTS];

/* Loads NVML once; remembers why it could not be. */
static int
gpu_load(void)
{
	size_t i;

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
#define SYM(f, name)	(*(void **)&nv.f = dlsym(nv.h, name))
	SYM(init, "nvmlInit_v2");
	SYM(shutdown, "nvmlShutdown");
	SYM(count, "nvmlDeviceGetCount_v2");
	SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
	SYM(name, "nvmlDeviceGetName");
	SYM(mem, "nvmlDeviceGetMemoryInfo");
	SYM(util, "nvmlDeviceGetUtilizationRates");
	SYM(uuid, "nvmlDeviceGetUUID");
	SYM(serial, "nvmlDeviceGetSerial");
	SYM(pci, "nvmlDeviceGetPciInfo_v3");
	SYM(pci_ext, "nvmlDeviceGetPciInfoExt");
	SYM(cc, "nvmlDeviceGetCudaComputeCapability");
	SYM(temp, "nvmlDeviceGetTemperature");
	SYM(clock, "nvmlDeviceGetClockInfo");
	SYM(maxclock, "nvmlDeviceGetMaxClockInfo");
	SYM(driver, "nvmlSystemGetDriverVersion");
	SYM(version, "nvmlSystemGetNVMLVersion");
	SYM(cuda, "nvmlSystemGetCudaDriverVersion_v2");
#undef SYM
	for (i = 0; i < NUINTS; i++)
		*(void **)&uint_fns[i] = dlsym(nv.h, gpu_uints[i].sym);
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

/* All that NVML says of GPU i; -1 where it has no handle for it. */
static int
gpu_read(unsigned int i, struct gpu_status *g)
{
	struct nvml_memory m;
	struct nvml_util u;
	struct nvml_pci pci;
	struct nvml_pci_ext pext;
	unsigned int v;
	size_t k;
	nvml_dev d;
	int c;

	status_gpu_init(g, (int)i);
	if (nv.handle(i, &d) != 0)
		return -1;
	if (nv.name(d, g->name, sizeof g->name) != 0)
		snprintf(g->name, sizeof g->name, "unknown");
	if (nv.mem(d, &m) == 0) {
		g->memory_total = m.total;
		g->memory_free = m.free;
	}
	if (nv.util != NULL && nv.util(d, &u) == 0 && u.gpu <= 100 &&
	    u.memory <= 100) {
		g->utilization = (int)u.gpu;
		g->utilization_memory = (int)u.memory;
	}
	if (nv.uuid != NULL && nv.uuid(d, g->uuid, sizeof g->uuid) != 0)
		g->uuid[0] = '\0';
	if (nv.serial != NULL &&
	    nv.serial(d, g->serial, sizeof g->serial) != 0)
		g->serial[0] = '\0';
	if (nv.pci != NULL && nv.pci(d, &pci) == 0) {
		snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s",
		    (int)sizeof pci.bus_id, pci.bus_id);
		g->pci_device_id = pci.device_id;
		g->pci_subsystem_id = pci.subsystem_id;
	}
	memset(&pext, 0, sizeof pext);
	pext.version = (unsigned int)sizeof pext | 1u << 24;
	if (nv.pci_ext != NULL && nv.pci_ext(d, &pext) == 0 &&
	    pext.base_class <= 0xff && pext.sub_class <= 0xff)
		g->pci_class = (int64_t)(pext.base_class << 8 | pext.sub_class);
	if (nv.cc != NULL && nv.cc(d, &g->cc_major, &g->cc_minor) != 0)
		g->cc_major = g->cc_minor = -1;
	/* NVML_TEMPERATURE_GPU is 0. */
	if (nv.temp != NULL && nv.temp(d, 0, &v) == 0 && v <= 1000)
		g->temperature_c = (int)v;
	for (c = 0; c < STATUS_NCLK; c++) {
		if (nv.clock != NULL && nv.clock(d, c, &v) == 0 && v <= 100000)
			g->clock_mhz[c] = (int)v;
		if (nv.maxclock != NULL && nv.maxclock(d, c, &v) == 0 &&
		    v <= 100000)
			g->max_clock_mhz[c] = (int)v;
	}
	for (k = 0; k < NUINTS; k++)
		if (uint_fns[k] != NULL && uint_fns[k](d, &v) == 0 &&
		    v <= gpu_uints[k].max)
			*(int *)((char *)g + gpu_uints[k].off) = (int)v;
	return 0;
}

/*
 * GLEAM_TEST_GPUS names a YAML file whose GPUs the server reports in place
 * of NVML's, for the tests of machines without a GPU (the client's
 * libnvidia-ml.so.1 answers from them): a mapping with gpus (as in a
 * status) and optionally driver_version, nvml_version, cuda_version.
 * Read at each status, so a test may change it.  Returns the GPUs'
 * count, or -1 with the reason logged.
 */
static int
gpu_test_file(const char *path, struct server_status *all)
{
	static const struct cfg_key keys[] = {
		{ "driver_version", CFG_STR,
		    CFG_FIELD(struct server_status, driver_version) },
		{ "nvml_version", CFG_STR,
		    CFG_FIELD(struct server_status, nvml_version) },
		{ "cuda_version", CFG_INT,
		    CFG_FIELD(struct server_status, cuda_version),
		    .min = 0, .max = 1000000 },
		{ "gpus", CFG_NONE },
		{ NULL }
	};
	struct ydoc d;
	struct yerr err;
	yaml_node_t *root;
	int rc = -1;

	if (ydoc_load_file(&d, path, &err) == -1) {
		log_warn("GLEAM_TEST_GPUS: %s", err.msg);
		return -1;
	}
	root = ydoc_root(&d);
	if (root == NULL || root->type != YAML_MAPPING_NODE)
		log_warn("GLEAM_TEST_GPUS: %s: expected a mapping", path);
	else if (cfg_read(&d, root, "GLEAM_TEST_GPUS", keys, all,
	    &err) == -1 || status_read_gpus(&d, ymap_get(&d, root, "gpus"),
	    all, &err) == -1)
		log_warn("GLEAM_TEST_GPUS: %s", err.msg);
	else {
		/* Numbered as NVML would, whatever the file says. */
		for (rc = 0; rc < all->ngpus; rc++)
			all->gpus[rc].index = rc;
	}
	ydoc_free(&d);
	return rc;
}

/*
 * What NVML says of this host's GPUs, all of them (CUDA_VISIBLE_DEVICES
 * is applied by gpu_query): a plain struct, so that the helper can send
 * it whole.
 */
struct nvml_answer {
	char		 why[64];	/* "" if NVML answered; else why not */
	unsigned int	 n;
	struct gpu_status gpus[STATUS_MAX_GPUS];
	char		 driver_version[32];
	char		 nvml_version[32];
	int		 cuda_version;
};

/* NVML asked here (in the helper). */
static void
nvml_ask(struct nvml_answer *a)
{
	unsigned int i;

	memset(a, 0, sizeof *a);
	if (!gpu_load()) {
		snprintf(a->why, sizeof a->why, "%s", nv.why);
		return;
	}
	if (nv.count(&a->n) != 0)
		a->n = 0;
	if (a->n > STATUS_MAX_GPUS)
		a->n = STATUS_MAX_GPUS;
	for (i = 0; i < a->n; i++)
		if (gpu_read(i, &a->gpus[i]) == -1)
			a->gpus[i].index = -1;
	if (nv.driver != NULL && nv.driver(a->driver_version,
	    sizeof a->driver_version) != 0)
		a->driver_version[0] = '\0';
	if (nv.version != NULL && nv.version(a->nvml_version,
	    sizeof a->nvml_version) != 0)
		a->nvml_version[0] = '\0';
	if (nv.cuda != NULL && nv.cuda(&a->cuda_version) != 0)
		a->cuda_version = 0;
}

void
child_signals(void)
{
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * NVML lives in a helper process, never in the server: NVML started in
 * a process that then forks puts the driver's state into the children,
 * and a CUDA worker forked after the server's first status crashed in
 * the driver at its first call (SIGSEGV in cuDeviceGet*, every client
 * after a PyTorch one that had asked NVML through Gleam's library).  The
 * helper is forked from the server (which holds no driver state of any
 * kind), loads NVML on the first question and answers each byte written
 * to its socket with a struct nvml_answer.  It dies with the server
 * (PR_SET_PDEATHSIG) or when the socket closes; one that is gone is
 * started again at the next question.
 */
static pthread_mutex_t	 helper_lock = PTHREAD_MUTEX_INITIALIZER;
static int		 helper_fd = -1;
static pid_t		 helper_pid = -1;

static void __attribute__((noreturn))
helper_main(int fd, pid_t parent)
{
	struct nvml_answer a;
	char q;
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	child_signals();
	/* Nothing of the server's: its listener, its clients' sockets. */
	if (fd != 3 && (dup2(fd, 3) == -1 || close(fd) == -1))
		_exit(1);
	closefrom(4);
	for (;;) {
		n = read(3, &q, 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n != 1)
			break;
		nvml_ask(&a);
		if (fd_write_all(3, &a, sizeof a) == -1)
			break;
	}
	if (nv.ok && nv.shutdown != NULL)
		nv.shutdown();
	_exit(0);
}

/* The helper running, under helper_lock; -1 if it cannot be started. */
static int
helper_start(void)
{
	pid_t pid, self = getpid();
	int sv[2];

	if (helper_fd != -1)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	fflush(stderr);
	if ((pid = fork()) == -1) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1], self);
	}
	close(sv[1]);
	helper_fd = sv[0];
	helper_pid = pid;
	return 0;
}

/* The helper gone (or never to be asked again), under helper_lock. */
static void
helper_stop(void)
{
	if (helper_fd == -1)
		return;
	close(helper_fd);	/* it exits at the end of its socket */
	helper_fd = -1;
	/* The server's SIGCHLD handler may reap it first: then ECHILD. */
	(void)waitpid(helper_pid, NULL, 0);
	helper_pid = -1;
}

/* One question to the helper, within a few seconds: 0, or -1. */
static int
helper_ask(struct nvml_answer *a)
{
	struct pollfd p;
	size_t got = 0;
	ssize_t n;
	char q = '?';
	int64_t left = 10000;	/* ms: NVML's first start can be slow */
	uint64_t t0 = now_ns();

	if (helper_start() == -1)
		return -1;
	if (fd_write_all(helper_fd, &q, 1) == -1)
		goto gone;
	while (got < sizeof *a) {
		p.fd = helper_fd;
		p.events = POLLIN;
		left = 10000 - (int64_t)((now_ns() - t0) / 1000000);
		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			goto gone;
		n = read(helper_fd, (char *)a + got, sizeof *a - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto gone;
		got += (size_t)n;
	}
	a->why[sizeof a->why - 1] = '\0';
	a->driver_version[sizeof a->driver_version - 1] = '\0';
	a->nvml_version[sizeof a->nvml_version - 1] = '\0';
	if (a->n > STATUS_MAX_GPUS)
		a->n = STATUS_MAX_GPUS;
	return 0;
gone:
	/* A helper that hangs is killed: the next question starts one. */
	kill(helper_pid, SIGKILL);
	helper_stop();
	return -1;
}

void
gpu_query(struct server_status *s)
{
	static struct server_status all;
	static char uuids[STATUS_MAX_GPUS][96];
	static struct nvml_answer a;
	const char *vis = getenv("CUDA_VISIBLE_DEVICES"), *test;
	unsigned int n, i;
	int count;

	s->ngpus = 0;
	memset(&all, 0, sizeof all);
	if ((test = getenv("GLEAM_TEST_GPUS")) != NULL && *test != '\0') {
		if ((count = gpu_test_file(test, &all)) < 0) {
			snprintf(s->gpu_source, sizeof s->gpu_source,
			    "no GPU (GLEAM_TEST_GPUS unreadable)");
			return;
		}
		n = (unsigned int)count;
		snprintf(s->gpu_source, sizeof s->gpu_source, "test");
	} else {
		int rc;

		if (getenv("GLEAM_NO_NVML") != NULL) {
			snprintf(s->gpu_source, sizeof s->gpu_source,
			    "no GPU (NVML disabled)");
			return;
		}
		pthread_mutex_lock(&helper_lock);
		rc = helper_ask(&a);
		pthread_mutex_unlock(&helper_lock);
		if (rc == -1) {
			snprintf(s->gpu_source, sizeof s->gpu_source,
			    "no GPU (the NVML helper failed)");
			return;
		}
		if (a.why[0] != '\0') {
			snprintf(s->gpu_source, sizeof s->gpu_source, "%s",
			    a.why);
			return;
		}
		snprintf(s->gpu_source, sizeof s->gpu_source, "nvml");
		n = a.n;
		memcpy(all.gpus, a.gpus, sizeof all.gpus);
		memcpy(all.driver_version, a.driver_version,
		    sizeof all.driver_version);
		memcpy(all.nvml_version, a.nvml_version,
		    sizeof all.nvml_version);
		all.cuda_version = a.cuda_version;
	}
	for (i = 0; i < n; i++)
		snprintf(uuids[i], sizeof uuids[i], "%s", all.gpus[i].uuid);
	/* Only what CUDA_VISIBLE_DEVICES leaves this server's clients. */
	for (i = 0; i < n; i++)
		if (gpu_visible(vis, i, n, uuids) >= 0 &&
		    all.gpus[i].index >= 0)
			s->gpus[s->ngpus++] = all.gpus[i];
	memcpy(s->driver_version, all.driver_version,
	    sizeof s->driver_version);
	memcpy(s->nvml_version, all.nvml_version, sizeof s->nvml_version);
	s->cuda_version = all.cuda_version;
	if (s->ngpus == 0)
		snprintf(s->gpu_source, sizeof s->gpu_source, "%s", n == 0 ?
		    "no GPU" : "no GPU (CUDA_VISIBLE_DEVICES hides them)");
}

void
gpu_shutdown(void)
{
	pthread_mutex_lock(&helper_lock);
	helper_stop();
	pthread_mutex_unlock(&helper_lock);
	if (nv.ok && nv.shutdown != NULL)
		nv.shutdown();
	if (nv.h != NULL)
		dlclose(nv.h);
	memset(&nv, 0, sizeof nv);
	memset(uint_fns, 0, sizeof uint_fns);
}
