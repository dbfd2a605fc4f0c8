/*
 * Gleam's libnvidia-ml.so.1: the common NVML queries, answered from the
 * status of the server that GLEAM_SERVER names (the same server and key as
 * the client's libcuda.so.1), so that nvidia-smi, pynvml and the
 * frameworks' device queries see the remote GPUs.  The status is fetched
 * at nvmlInit and again when a query finds it older than NV_STALE_NS; a
 * fetch that fails keeps the last answers.  What the status does not say
 * is NVML_ERROR_NOT_SUPPORTED, as on a GPU that lacks the feature.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clenv.h"
#include "conn.h"
#include "gnvml.h"
#include "log.h"
#include "net.h"
#include "nvmlint.h"
#include "status.h"
#include "util.h"

#define NV_STALE_NS	1000000000ULL	/* refetch after a second */
#define NV_TIMEOUT_MS	5000
#define NV_CLIENT_NAME	"gleam-nvml"	/* our STATUS connections */

struct nvmlDevice_st {
	int		 i;
};

/*
 * Everything below is under nv_lock.  Handles point into nv_dev, which
 * never moves; one is valid while its index is below the status's GPU
 * count.
 */
static pthread_mutex_t	 nv_lock = PTHREAD_MUTEX_INITIALIZER;
static int		 nv_refs;	/* nvmlInit calls, less nvmlShutdown's */
static struct clenv	 nv_env;
static struct server_status nv_st;
static uint64_t		 nv_when;	/* now_ns() of nv_st */
static struct nvmlDevice_st nv_dev[STATUS_MAX_GPUS];
static int		 nv_warned;	/* failed fetches in a row */

int
nv_initialized(void)
{
	return __atomic_load_n(&nv_refs, __ATOMIC_RELAXED) > 0;
}

int
nv_refuse(int rc)
{
	return nv_initialized() ? rc : NVML_ERROR_UNINITIALIZED;
}

/*
 * NVIDIA's tools ask the library for private tables by UUID, as cudart
 * asks the driver (../shared/ref: the driver's hidden export tables).
 * nvidia-smi's is answered (smi.c); any other UUID asked for is logged
 * once, on standard error whatever the level (nvidia-smi asks before
 * nvmlInit, and says only "Mismatch in versions" when refused).
 */
nvmlReturn_t	nvmlInternalGetExportTable(const void **,
		    const unsigned char *);

nvmlReturn_t
nvmlInternalGetExportTable(const void **table, const unsigned char *uuid)
{
	static unsigned char seen[16][16];
	static int nseen;
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int i, known = 0;

	if (table != NULL)
		*table = NULL;
	if (uuid == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (nv_smi_table(uuid) != NULL) {
		if (table == NULL)
			return NVML_ERROR_INVALID_ARGUMENT;
		*table = nv_smi_table(uuid);
		return NVML_SUCCESS;
	}
	pthread_mutex_lock(&mu);
	for (i = 0; i < nseen; i++)
		known |= memcmp(seen[i], uuid, 16) == 0;
	if (!known && nseen < 16)
		memcpy(seen[nseen++], uuid, 16);
	pthread_mutex_unlock(&mu);
	if (!known)
		fprintf(stderr, "gleam: NVML: nvmlInternalGetExportTable: "
		    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		    "%02x%02x%02x%02x%02x%02x: not supported by Gleam's NVML\n",
		    uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5],
		    uuid[6], uuid[7], uuid[8], uuid[9], uuid[10], uuid[11],
		    uuid[12], uuid[13], uuid[14], uuid[15]);
	return NVML_ERROR_NOT_SUPPORTED;
}

void
nv_unsupported(const char *name, int *said)
{
	if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED) == 0)
		log_info("NVML: %s: not supported by Gleam's NVML", name);
}

/* A child of fork(2) may find the lock held by a thread it lacks. */
static void
nv_atfork_child(void)
{
	pthread_mutex_init(&nv_lock, NULL);
}

/*
 * The server's status into nv_st: 0, or -1 with the reason logged (once
 * in a row: a program that polls a server gone away says so once).
 */
static int
nv_fetch(void)
{
	struct server_status st;
	struct conn c;
	struct yerr err;
	const uint8_t *reply;
	size_t len;
	int rc = -1;

	/* A failure too waits a second before the next try. */
	nv_when = now_ns();
	if (conn_open(&c, nv_env.host, nv_env.port, nv_env.kp,
	    NV_CLIENT_NAME, NV_TIMEOUT_MS) == -1) {
		if (!nv_warned++)
			log_warn("NVML: cannot use server %s", c.err);
		return -1;
	}
	if (conn_call(&c, MSG_STATUS, NULL, 0, MSG_STATUS, &reply,
	    &len) == -1) {
		if (!nv_warned++)
			log_warn("NVML: server %s: status: %s", nv_env.server,
			    c.err);
	} else if (status_parse(nv_env.server, reply, len, &st,
	    &err) == -1) {
		if (!nv_warned++)
			log_warn("NVML: server %s: status: %s", nv_env.server,
			    err.msg);
	} else {
		status_free(&nv_st);
		nv_st = st;
		nv_when = now_ns();
		nv_warned = 0;
		rc = 0;
	}
	conn_close(&c);
	return rc;
}

/*
 * Takes the lock for a query: NVML_SUCCESS with it held and the status
 * fresh (or the last one, if the server does not answer now), else
 * NVML_ERROR_UNINITIALIZED without it.
 */
static nvmlReturn_t
nv_enter(void)
{
	pthread_mutex_lock(&nv_lock);
	if (nv_refs == 0) {
		pthread_mutex_unlock(&nv_lock);
		return NVML_ERROR_UNINITIALIZED;
	}
	if (now_ns() - nv_when > NV_STALE_NS)
		(void)nv_fetch();
	return NVML_SUCCESS;
}

static nvmlReturn_t
nv_leave(nvmlReturn_t rc)
{
	pthread_mutex_unlock(&nv_lock);
	return rc;
}

/* nv_enter, then the GPU a handle names; the lock is held on success. */
static nvmlReturn_t
nv_device(nvmlDevice_t d, const struct gpu_status **g)
{
	uintptr_t off;
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	/* A handle is ours only if it is one of nv_dev's, exactly. */
	off = (uintptr_t)d - (uintptr_t)nv_dev;
	if ((uintptr_t)d < (uintptr_t)nv_dev || off >= sizeof nv_dev ||
	    off % sizeof nv_dev[0] != 0 ||
	    (int)(off / sizeof nv_dev[0]) >= nv_st.ngpus)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	*g = &nv_st.gpus[off / sizeof nv_dev[0]];
	return NVML_SUCCESS;
}

/* A string answer: "" is one the server does not know. */
static nvmlReturn_t
nv_str(const char *s, char *buf, unsigned int len)
{
	if (buf == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*s == '\0')
		return NVML_ERROR_NOT_SUPPORTED;
	if (strlen(s) >= len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

/* A number of a GPU's status: -1 is one the server does not know. */
static nvmlReturn_t
nv_num(nvmlDevice_t d, size_t off, unsigned int *out)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;
	int v;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	memcpy(&v, (const char *)g + off, sizeof v);
	if (out == NULL)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (v < 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		*out = (unsigned int)v;
	return nv_leave(rc);
}
#define NV_NUM(d, field, out)						\
	nv_num(d, offsetof(struct gpu_status, field), (unsigned int *)(out))

/* ---- initialization ---------------------------------------------------- */

static void
nv_once(void)
{
	pthread_atfork(NULL, NULL, nv_atfork_child);
}

nvmlReturn_t
nvmlInitWithFlags(unsigned int flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	char err[1200];
	nvmlReturn_t rc = NVML_SUCCESS;

	(void)pthread_once(&once, nv_once);
	pthread_mutex_lock(&nv_lock);
	if (nv_refs == 0) {
		log_init("gleam", clenv_log_level());
		nv_warned = 0;	/* who tries again hears why again */
		if (clenv_read(&nv_env, err, sizeof err) == -1) {
			log_warn("NVML: %s", err);
			rc = NVML_ERROR_DRIVER_NOT_LOADED;
		} else if (nv_fetch() == -1 &&
		    !(flags & NVML_INIT_FLAG_NO_GPUS))
			rc = NVML_ERROR_DRIVER_NOT_LOADED;
	}
	if (rc == NVML_SUCCESS)
		nv_refs++;
	pthread_mutex_unlock(&nv_lock);
	return rc;
}

nvmlReturn_t
nvmlInit_v2(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t
nvmlInit(void)
{
	return nvmlInitWithFlags(0);
}

nvmlReturn_t
nvmlShutdown(void)
{
	nvmlReturn_t rc = NVML_SUCCESS;

	pthread_mutex_lock(&nv_lock);
	if (nv_refs == 0)
		rc = NVML_ERROR_UNINITIALIZED;
	else if (--nv_refs == 0) {
		status_free(&nv_st);
		memset(&nv_st, 0, sizeof nv_st);
		nv_when = 0;
	}
	pthread_mutex_unlock(&nv_lock);
	return rc;
}

const char *
nvmlErrorString(nvmlReturn_t rc)
{
	static const char *const msgs[] = {
		"Success", "Uninitialized", "Invalid Argument",
		"Not Supported", "Insufficient Permissions",
		"Already Initialized", "Not Found", "Insufficient Size",
		"Insufficient External Power", "Driver Not Loaded",
		"Timeout", "Interrupt Request Issue",
		"NVML Shared Library Not Found", "Function Not Found",
		"Corrupted infoROM", "GPU is lost", "GPU requires restart",
		"The operating system has blocked the request",
		"RM has detected an NVML/RM version mismatch",
		"In use by another client", "Insufficient Memory", "No data",
		"The requested vgpu operation is not available on target "
		    "device, because ECC is enabled",
		"Insufficient resources for request",
		"Frequency not supported", "Argument version mismatch",
		"Deprecated", "Not ready", "GPU not found", "Invalid state",
		"Reset not supported",
	};

	if ((unsigned int)rc < sizeof msgs / sizeof msgs[0])
		return msgs[rc];
	return "Unknown Error";
}

/* ---- system ------------------------------------------------------------ */

nvmlReturn_t
nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	return nv_leave(nv_str(nv_st.driver_version, buf, len));
}

nvmlReturn_t
nvmlSystemGetNVMLVersion(char *buf, unsigned int len)
{
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	return nv_leave(nv_str(nv_st.nvml_version, buf, len));
}

nvmlReturn_t
nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	if (v == NULL)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (nv_st.cuda_version <= 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else
		*v = nv_st.cuda_version;
	return nv_leave(rc);
}

nvmlReturn_t
nvmlSystemGetCudaDriverVersion(int *v)
{
	return nvmlSystemGetCudaDriverVersion_v2(v);
}

/* ---- finding devices --------------------------------------------------- */

nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *n)
{
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	if (n == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	*n = (unsigned int)nv_st.ngpus;
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetCount(unsigned int *n)
{
	return nvmlDeviceGetCount_v2(n);
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	nvmlReturn_t rc;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	if (d == NULL || i >= (unsigned int)nv_st.ngpus)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	nv_dev[i].i = (int)i;
	*d = &nv_dev[i];
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
	return nvmlDeviceGetHandleByIndex_v2(i, d);
}

/* "domain:bus:device.function" or "bus:device.function", in hex. */
static int
nv_pci_parse(const char *s, unsigned int v[3])
{
	unsigned int a, b, c, f;
	int n;

	if (sscanf(s, "%x:%x:%x.%x%n", &a, &b, &c, &f, &n) == 4 &&
	    s[n] == '\0') {
		v[0] = a, v[1] = b, v[2] = c;
		return 0;
	}
	if (sscanf(s, "%x:%x.%x%n", &b, &c, &f, &n) == 3 && s[n] == '\0') {
		v[0] = 0, v[1] = b, v[2] = c;
		return 0;
	}
	return -1;
}

/* The handle of the GPU whose field at off matches id. */
static nvmlReturn_t
nv_find(const char *id, size_t off, int pci, nvmlDevice_t *d)
{
	unsigned int want[3], have[3];
	const char *s;
	nvmlReturn_t rc;
	int i;

	if ((rc = nv_enter()) != NVML_SUCCESS)
		return rc;
	if (id == NULL || d == NULL || (pci && nv_pci_parse(id, want) == -1))
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	for (i = 0; i < nv_st.ngpus; i++) {
		s = (const char *)&nv_st.gpus[i] + off;
		if (*s == '\0')
			continue;
		if (pci ? nv_pci_parse(s, have) == 0 && memcmp(want, have,
		    sizeof want) == 0 : strcmp(s, id) == 0) {
			nv_dev[i].i = i;
			*d = &nv_dev[i];
			return nv_leave(NVML_SUCCESS);
		}
	}
	return nv_leave(NVML_ERROR_NOT_FOUND);
}

nvmlReturn_t
nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
	return nv_find(uuid, offsetof(struct gpu_status, uuid), 0, d);
}

nvmlReturn_t
nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *d)
{
	return nv_find(serial, offsetof(struct gpu_status, serial), 0, d);
}

nvmlReturn_t
nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *d)
{
	return nv_find(id, offsetof(struct gpu_status, pci_bus_id), 1, d);
}

nvmlReturn_t
nvmlDeviceGetHandleByPciBusId(const char *id, nvmlDevice_t *d)
{
	return nvmlDeviceGetHandleByPciBusId_v2(id, d);
}

/* ---- what a device is -------------------------------------------------- */

nvmlReturn_t
nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (i == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	*i = (unsigned int)d->i;
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	return nv_leave(nv_str(g->name, buf, len));
}

nvmlReturn_t
nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	return nv_leave(nv_str(g->uuid, buf, len));
}

nvmlReturn_t
nvmlDeviceGetSerial(nvmlDevice_t d, char *buf, unsigned int len)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	return nv_leave(nv_str(g->serial, buf, len));
}

nvmlReturn_t
nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *n)
{
	return NV_NUM(d, minor_number, n);
}

nvmlReturn_t
nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (major == NULL || minor == NULL)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (g->cc_major < 0 || g->cc_minor < 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else {
		*major = g->cc_major;
		*minor = g->cc_minor;
	}
	return nv_leave(rc);
}

nvmlReturn_t
nvmlDeviceGetBrand(nvmlDevice_t d, nvmlBrandType_t *b)
{
	return NV_NUM(d, brand, b);
}

nvmlReturn_t
nvmlDeviceGetArchitecture(nvmlDevice_t d, nvmlDeviceArchitecture_t *a)
{
	return NV_NUM(d, architecture, a);
}

/* The PCI description, in the layout of the call's struct version. */
static nvmlReturn_t
nv_pci(nvmlDevice_t d, nvmlPciInfo_t *p, int legacy)
{
	const struct gpu_status *g;
	unsigned int v[3];
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (p == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	if (nv_pci_parse(g->pci_bus_id, v) == -1)
		return nv_leave(NVML_ERROR_NOT_SUPPORTED);
	/* The first struct ended with 16 reserved bytes where busId is. */
	memset(p, 0, legacy ? offsetof(nvmlPciInfo_t, busId) + 16 :
	    sizeof *p);
	p->domain = v[0];
	p->bus = v[1];
	p->device = v[2];
	p->pciDeviceId = g->pci_device_id < 0 ? 0 :
	    (unsigned int)g->pci_device_id;
	p->pciSubSystemId = g->pci_subsystem_id < 0 ? 0 :
	    (unsigned int)g->pci_subsystem_id;
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.0",
	    v[0] & 0xffff, v[1] & 0xff, v[2] & 0xff);
	if (!legacy)
		snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.0",
		    v[0], v[1] & 0xff, v[2] & 0xff);
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	return nv_pci(d, p, 0);
}

/* NVML 580's _v2 leaves busId as it was (seen on the H200): the
 * fields of the first struct only. */
nvmlReturn_t
nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	return nv_pci(d, p, 1);
}

nvmlReturn_t
nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	return nv_pci(d, p, 1);
}

/* nvidia-smi's (its bus ids come from here): the class code too, 0 where
 * the server's NVML did not tell it. */
nvmlReturn_t
nvmlDeviceGetPciInfoExt(nvmlDevice_t d, nvmlPciInfoExt_t *x)
{
	const struct gpu_status *g;
	nvmlPciInfo_t p;
	nvmlReturn_t rc;

	if (x == NULL)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	if (x->version != nvmlPciInfoExt_v1)
		return nv_refuse(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	if ((rc = nv_pci(d, &p, 0)) != NVML_SUCCESS ||
	    (rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	x->domain = p.domain;
	x->bus = p.bus;
	x->device = p.device;
	x->pciDeviceId = p.pciDeviceId;
	x->pciSubSystemId = p.pciSubSystemId;
	x->baseClass = g->pci_class < 0 ? 0 : (unsigned int)g->pci_class >> 8;
	x->subClass = g->pci_class < 0 ? 0 :
	    (unsigned int)g->pci_class & 0xff;
	memcpy(x->busId, p.busId, sizeof x->busId);
	return nv_leave(NVML_SUCCESS);
}

/* ---- how it is doing --------------------------------------------------- */

nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (m == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	m->total = g->memory_total;
	m->free = g->memory_free < g->memory_total ? g->memory_free :
	    g->memory_total;
	m->used = m->total - m->free;
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	nvmlMemory_t m1;
	nvmlReturn_t rc;

	if (m == NULL)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	if ((rc = nvmlDeviceGetMemoryInfo(d, &m1)) != NVML_SUCCESS)
		return rc;
	/* Another struct version: what NVML 580 answers (seen on the
	 * H200), not ARGUMENT_VERSION_MISMATCH. */
	if (m->version != nvmlMemory_v2)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	/* The server's status does not tell what the driver reserves. */
	m->total = m1.total;
	m->reserved = 0;
	m->free = m1.free;
	m->used = m1.used;
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (u == NULL)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else if (g->utilization < 0)
		rc = NVML_ERROR_NOT_SUPPORTED;
	else {
		u->gpu = (unsigned int)g->utilization;
		u->memory = g->utilization_memory < 0 ? 0 :
		    (unsigned int)g->utilization_memory;
	}
	return nv_leave(rc);
}

nvmlReturn_t
nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t s,
    unsigned int *t)
{
	if ((unsigned int)s >= NVML_TEMPERATURE_COUNT)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	return NV_NUM(d, temperature_c, t);
}

/* The versioned call (nvidia-smi's): its struct says which sensor. */
nvmlReturn_t
nvmlDeviceGetTemperatureV(nvmlDevice_t d, nvmlTemperature_t *t)
{
	unsigned int c;
	nvmlReturn_t rc;

	if (t == NULL)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	if (t->version != nvmlTemperature_v1)
		return nv_refuse(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	if ((rc = nvmlDeviceGetTemperature(d, t->sensorType, &c)) ==
	    NVML_SUCCESS)
		t->temperature = (int)c;
	return rc;
}

nvmlReturn_t
nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	return NV_NUM(d, power_mw, mw);
}

nvmlReturn_t
nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw)
{
	return NV_NUM(d, power_limit_mw, mw);
}

nvmlReturn_t
nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
	return NV_NUM(d, enforced_power_limit_mw, mw);
}

/* Power management is on where the GPU has a limit to manage. */
nvmlReturn_t
nvmlDeviceGetPowerManagementMode(nvmlDevice_t d, nvmlEnableState_t *on)
{
	unsigned int mw;
	nvmlReturn_t rc;

	if (on == NULL)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	if ((rc = NV_NUM(d, power_limit_mw, &mw)) == NVML_SUCCESS)
		*on = NVML_FEATURE_ENABLED;
	return rc;
}

/* A clock: now (max 0) or the most it may run at. */
static nvmlReturn_t
nv_clock(nvmlDevice_t d, nvmlClockType_t type, unsigned int *mhz, int max)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;
	int v;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (mhz == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	/* A clock it does not know: NVML 580 says not supported. */
	if ((unsigned int)type >= NVML_CLOCK_COUNT)
		return nv_leave(NVML_ERROR_NOT_SUPPORTED);
	v = max ? g->max_clock_mhz[type] : g->clock_mhz[type];
	if (v < 0)
		return nv_leave(NVML_ERROR_NOT_SUPPORTED);
	*mhz = (unsigned int)v;
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type,
    unsigned int *mhz)
{
	return nv_clock(d, type, mhz, 0);
}

nvmlReturn_t
nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, nvmlClockType_t type,
    unsigned int *mhz)
{
	return nv_clock(d, type, mhz, 1);
}

nvmlReturn_t
nvmlDeviceGetComputeMode(nvmlDevice_t d, nvmlComputeMode_t *m)
{
	return NV_NUM(d, compute_mode, m);
}

nvmlReturn_t
nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
	return NV_NUM(d, persistence_mode, m);
}

nvmlReturn_t
nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *pct)
{
	return NV_NUM(d, fan_percent, pct);
}

/* The server's GPU's PCIe link (XLA reads it to judge host transfers). */
nvmlReturn_t
nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
	return NV_NUM(d, pcie_gen, v);
}

nvmlReturn_t
nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
	return NV_NUM(d, pcie_width, v);
}

nvmlReturn_t
nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v)
{
	return NV_NUM(d, max_pcie_gen, v);
}

nvmlReturn_t
nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v)
{
	return NV_NUM(d, max_pcie_width, v);
}

nvmlReturn_t
nvmlDeviceGetPerformanceState(nvmlDevice_t d, nvmlPstates_t *p)
{
	return NV_NUM(d, pstate, p);
}

nvmlReturn_t
nvmlDeviceGetPowerState(nvmlDevice_t d, nvmlPstates_t *p)
{
	return NV_NUM(d, pstate, p);
}

/* ---- processes --------------------------------------------------------- */

/* "1.2.3.4:5", also from "[::ffff:1.2.3.4]:5" (a dual-stack listener). */
static const char *
nv_addr_norm(const char *a, char *buf, size_t len)
{
	const char *end;

	if (strncmp(a, "[::ffff:", 8) == 0 && (end = strchr(a, ']')) != NULL &&
	    strchr(a + 8, '.') != NULL) {
		snprintf(buf, len, "%.*s%s", (int)(end - a - 8), a + 8,
		    end + 1);
		return buf;
	}
	return a;
}

/*
 * Whether this process is among the server's clients: one of its sockets
 * has the address the server lists for a client (the client library's
 * connection; our own status connections are closed by now).
 */
static int
nv_own(void)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct stat sb;
	struct dirent *e;
	DIR *dir;
	char mine[80], theirs[80], buf[64], *end;
	const char *s;
	int fd, i, found = 0;

	if (nv_st.nclients == 0 || (dir = opendir("/proc/self/fd")) == NULL)
		return 0;
	while (!found && (e = readdir(dir)) != NULL) {
		fd = (int)strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end != '\0' || fd == dirfd(dir) ||
		    fstat(fd, &sb) == -1 || !S_ISSOCK(sb.st_mode))
			continue;
		sl = sizeof ss;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
			continue;
		s = nv_addr_norm(net_addr_str((struct sockaddr *)&ss, buf,
		    sizeof buf), mine, sizeof mine);
		for (i = 0; i < nv_st.nclients && !found; i++)
			if (strcmp(nv_st.clients[i].name, NV_CLIENT_NAME) &&
			    strcmp(nv_addr_norm(nv_st.clients[i].address,
			    theirs, sizeof theirs), s) == 0)
				found = 1;
	}
	closedir(dir);
	return found;
}

/*
 * The processes on a GPU, in the struct of the call's version (size: v1
 * or v2): the server tells which connections it serves, not which GPU
 * each uses nor how much memory, so this process is listed on every GPU
 * of a server it is a client of, its memory not available.  Other
 * machines' processes have no pid here and are not listed.
 */
static nvmlReturn_t
nv_procs(nvmlDevice_t d, unsigned int *count, void *infos, size_t size,
    int compute)
{
	const struct gpu_status *g;
	nvmlProcessInfo_v2_t p;
	unsigned int n;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (count == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	n = compute && nv_own() ? 1 : 0;
	if (*count < n) {
		*count = n;
		return nv_leave(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	*count = n;
	if (n > 0 && infos == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	if (n > 0) {
		memset(&p, 0, sizeof p);
		p.pid = (unsigned int)getpid();
		p.usedGpuMemory = (unsigned long long)NVML_VALUE_NOT_AVAILABLE;
		p.gpuInstanceId = p.computeInstanceId = 0xffffffffu;
		memcpy(infos, &p, size);
	}
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 1);
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v2_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 1);
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v1_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 1);
}

nvmlReturn_t
nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

nvmlReturn_t
nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v2_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

nvmlReturn_t
nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v1_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

nvmlReturn_t
nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

nvmlReturn_t
nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v2_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

nvmlReturn_t
nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t d, unsigned int *n,
    nvmlProcessInfo_v1_t *p)
{
	return nv_procs(d, n, p, sizeof *p, 0);
}

/* ---- what nvidia-smi asks of every GPU ----------------------------------
 * Answers true of a GPU as a client of Gleam has it: no display attached
 * to it here, a whole GPU (no MIG instance, MIG not on: a server's GPU in
 * MIG mode shows its instances as devices), an InfoROM the server's
 * driver runs with, and event sets that hold no events (none are remoted:
 * nvmlDeviceRegisterEvents answers NOT_SUPPORTED). */

nvmlReturn_t
nvmlDeviceValidateInforom(nvmlDevice_t d)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	return nv_leave(NVML_SUCCESS);
}

static nvmlReturn_t
nv_disabled(nvmlDevice_t d, unsigned int *a, unsigned int *b)
{
	const struct gpu_status *g;
	nvmlReturn_t rc;

	if ((rc = nv_device(d, &g)) != NVML_SUCCESS)
		return rc;
	if (a == NULL)
		return nv_leave(NVML_ERROR_INVALID_ARGUMENT);
	*a = 0;
	if (b != NULL)
		*b = 0;
	return nv_leave(NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetDisplayActive(nvmlDevice_t d, nvmlEnableState_t *m)
{
	return nv_disabled(d, (unsigned int *)m, NULL);
}

nvmlReturn_t
nvmlDeviceGetDisplayMode(nvmlDevice_t d, nvmlEnableState_t *m)
{
	return nv_disabled(d, (unsigned int *)m, NULL);
}

nvmlReturn_t
nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is)
{
	return nv_disabled(d, is, NULL);
}

nvmlReturn_t
nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend)
{
	if (pend == NULL)
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	return nv_disabled(d, cur, pend);
}

struct nvmlEventSet_st {
	int	 magic;
};

nvmlReturn_t
nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (set == NULL || !nv_initialized())
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	if ((*set = calloc(1, sizeof **set)) == NULL)
		return NVML_ERROR_MEMORY;
	(*set)->magic = 0x65766e74;
	return NVML_SUCCESS;
}

nvmlReturn_t
nvmlEventSetFree(nvmlEventSet_t set)
{
	if (set == NULL || set->magic != 0x65766e74 || !nv_initialized())
		return nv_refuse(NVML_ERROR_INVALID_ARGUMENT);
	set->magic = 0;
	free(set);
	return NVML_SUCCESS;
}
