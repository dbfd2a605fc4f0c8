/*
 * nvml-check [-c | -k | -r]: every NVML call Gleam's libnvidia-ml.so.1 answers,
 * its answers printed one per line ("name: value", or "name: error N"),
 * for tests/bats/nvml.bats to compare with what the server was told to
 * report (GLEAM_TEST_GPUS).  It also checks the rules that hold whatever
 * the GPUs: errors before nvmlInit and after nvmlShutdown, short buffers,
 * bad handles, struct versions, the handle lookups agreeing with the
 * index; a broken rule is a line "FAIL: ..." and exit status 1.  With -c
 * it first calls cuInit through the preloaded libcuda.so.1, so that this
 * process is a client of the server and lists itself as a GPU process;
 * with -k it opens a connection of its own (GLEAM_SERVER, GLEAM_KEY_FILE)
 * to the same end, without the remoting layer.  -r: the library is the
 * driver's own (tests/gpu/run): what only Gleam's answers its way (no
 * BAR1, this process alone) is not checked.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clenv.h"
#include "conn.h"
#include "gnvml.h"

/* One that Gleam does not answer: NVML_ERROR_NOT_SUPPORTED. */
nvmlReturn_t	nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t, void *);

static int fails, real;

static void
fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fails++;
}

static void
expect(const char *what, nvmlReturn_t got, nvmlReturn_t want)
{
	if (got != want)
		fail("%s: %d (%s), expected %d", what, got,
		    nvmlErrorString(got), want);
}

/* "key: value", or "key: error N" where rc is not success. */
static int
say(const char *key, nvmlReturn_t rc)
{
	if (rc != NVML_SUCCESS)
		printf("  %s: error %d\n", key, rc);
	return rc == NVML_SUCCESS;
}

static void
device(unsigned int i)
{
	nvmlDevice_t d, d2;
	nvmlMemory_t m;
	nvmlMemory_v2_t m2;
	nvmlTemperature_t tv;
	nvmlUtilization_t u;
	nvmlPciInfo_t pci;
	nvmlPciInfoExt_t px;
	nvmlProcessInfo_t procs[4];
	nvmlProcessInfo_v1_t procs1[4];
	nvmlComputeMode_t cm;
	nvmlEnableState_t es;
	nvmlPstates_t ps;
	nvmlBrandType_t brand;
	nvmlDeviceArchitecture_t arch;
	char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE], uuid[96], bus[32];
	const char *clk[] = { "graphics", "sm", "memory", "video" };
	unsigned int v, n, k, lanes;
	int major, minor;

	printf("gpu %u:\n", i);
	expect("handle", nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
	expect("handle (v1)", nvmlDeviceGetHandleByIndex(i, &d2),
	    NVML_SUCCESS);
	if (d2 != d)
		fail("nvmlDeviceGetHandleByIndex: another handle");
	if (say("index", nvmlDeviceGetIndex(d, &v))) {
		printf("  index: %u\n", v);
		if (v != i)
			fail("index %u of handle %u", v, i);
	}
	if (say("name", nvmlDeviceGetName(d, buf, sizeof buf)))
		printf("  name: %s\n", buf);
	expect("short name buffer", nvmlDeviceGetName(d, buf, 2),
	    NVML_ERROR_INSUFFICIENT_SIZE);
	uuid[0] = '\0';
	if (say("uuid", nvmlDeviceGetUUID(d, uuid, sizeof uuid))) {
		printf("  uuid: %s\n", uuid);
		expect("by uuid", nvmlDeviceGetHandleByUUID(uuid, &d2),
		    NVML_SUCCESS);
		if (d2 != d)
			fail("nvmlDeviceGetHandleByUUID: another handle");
	}
	if (say("serial", nvmlDeviceGetSerial(d, buf, sizeof buf)))
		printf("  serial: %s\n", buf);
	if (say("minor_number", nvmlDeviceGetMinorNumber(d, &v)))
		printf("  minor_number: %u\n", v);
	if (say("pci", nvmlDeviceGetPciInfo_v3(d, &pci))) {
		printf("  pci: %s %s domain %u bus %u device %u id %08x "
		    "subsystem %08x\n", pci.busId, pci.busIdLegacy,
		    pci.domain, pci.bus, pci.device, pci.pciDeviceId,
		    pci.pciSubSystemId);
		snprintf(bus, sizeof bus, "%s", pci.busId);
		expect("by bus id", nvmlDeviceGetHandleByPciBusId_v2(bus,
		    &d2), NVML_SUCCESS);
		if (d2 != d)
			fail("nvmlDeviceGetHandleByPciBusId_v2: another "
			    "handle");
		expect("by legacy bus id", nvmlDeviceGetHandleByPciBusId(
		    pci.busIdLegacy, &d2), NVML_SUCCESS);
		if (d2 != d)
			fail("nvmlDeviceGetHandleByPciBusId: another handle");
		memset(&pci, 0, sizeof pci);
		expect("pci v2", nvmlDeviceGetPciInfo_v2(d, &pci),
		    NVML_SUCCESS);
		/* NVML 580 (the H200's) leaves busId alone in _v2. */
		if (pci.busId[0] != '\0')
			fail("nvmlDeviceGetPciInfo_v2 wrote busId: %s",
			    pci.busId);
		memset(&pci, 0x55, sizeof pci);
		expect("pci v1", nvmlDeviceGetPciInfo(d, &pci), NVML_SUCCESS);
		if (pci.busId[16] != 0x55)
			fail("nvmlDeviceGetPciInfo wrote past its struct");
	}
	/* nvidia-smi's: the bus id and the class code. */
	memset(&px, 0, sizeof px);
	px.version = nvmlPciInfoExt_v1;
	if (say("pci ext", nvmlDeviceGetPciInfoExt(d, &px)))
		printf("  pci ext: %s class %02x%02x\n", px.busId,
		    px.baseClass, px.subClass);
	px.version = 0;
	expect("pci ext, version 0", nvmlDeviceGetPciInfoExt(d, &px),
	    NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	if (say("memory", nvmlDeviceGetMemoryInfo(d, &m)))
		printf("  memory: total %llu free %llu used %llu\n", m.total,
		    m.free, m.used);
	m2.version = nvmlMemory_v2;
	if (say("memory_v2", nvmlDeviceGetMemoryInfo_v2(d, &m2)))
		printf("  memory_v2: total %llu free %llu used %llu "
		    "reserved %llu\n", m2.total, m2.free, m2.used,
		    m2.reserved);
	m2.version = 1;
	expect("memory_v2, version 1", nvmlDeviceGetMemoryInfo_v2(d, &m2),
	    NVML_ERROR_FUNCTION_NOT_FOUND);	/* NVML 580's answer */
	if (say("utilization", nvmlDeviceGetUtilizationRates(d, &u)))
		printf("  utilization: gpu %u memory %u\n", u.gpu, u.memory);
	if (say("temperature", nvmlDeviceGetTemperature(d,
	    NVML_TEMPERATURE_GPU, &v)))
		printf("  temperature: %u\n", v);
	expect("temperature sensor 7", nvmlDeviceGetTemperature(d,
	    (nvmlTemperatureSensors_t)7, &v), NVML_ERROR_INVALID_ARGUMENT);
	tv.version = nvmlTemperature_v1;
	tv.sensorType = NVML_TEMPERATURE_GPU;
	if (say("temperature_v", nvmlDeviceGetTemperatureV(d, &tv)))
		printf("  temperature_v: %d\n", tv.temperature);
	tv.version = 1;
	expect("temperature_v, version 1", nvmlDeviceGetTemperatureV(d, &tv),
	    NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	if (say("power", nvmlDeviceGetPowerUsage(d, &v)))
		printf("  power: %u\n", v);
	if (say("power_limit", nvmlDeviceGetPowerManagementLimit(d, &v)))
		printf("  power_limit: %u\n", v);
	if (say("enforced_power_limit", nvmlDeviceGetEnforcedPowerLimit(d,
	    &v)))
		printf("  enforced_power_limit: %u\n", v);
	if (say("power_management", nvmlDeviceGetPowerManagementMode(d, &es)))
		printf("  power_management: %d\n", es);
	for (k = 0; k < NVML_CLOCK_COUNT; k++) {
		snprintf(buf, sizeof buf, "clock_%s", clk[k]);
		if (say(buf, nvmlDeviceGetClockInfo(d, k, &v)))
			printf("  %s: %u\n", buf, v);
		snprintf(buf, sizeof buf, "max_clock_%s", clk[k]);
		if (say(buf, nvmlDeviceGetMaxClockInfo(d, k, &v)))
			printf("  %s: %u\n", buf, v);
	}
	expect("clock 9", nvmlDeviceGetClockInfo(d, (nvmlClockType_t)9, &v),
	    NVML_ERROR_NOT_SUPPORTED);	/* NVML 580's answer */
	if (say("compute_mode", nvmlDeviceGetComputeMode(d, &cm)))
		printf("  compute_mode: %d\n", cm);
	if (say("persistence_mode", nvmlDeviceGetPersistenceMode(d, &es)))
		printf("  persistence_mode: %d\n", es);
	if (say("compute_capability", nvmlDeviceGetCudaComputeCapability(d,
	    &major, &minor)))
		printf("  compute_capability: %d.%d\n", major, minor);
	if (say("fan", nvmlDeviceGetFanSpeed(d, &v)))
		printf("  fan: %u\n", v);
	if (say("pcie_link", nvmlDeviceGetMaxPcieLinkGeneration(d, &v)) &&
	    say("pcie_link", nvmlDeviceGetMaxPcieLinkWidth(d, &lanes)))
		printf("  pcie_link: gen %u x%u\n", v, lanes);
	if (say("pcie_now", nvmlDeviceGetCurrPcieLinkGeneration(d, &v)) &&
	    say("pcie_now", nvmlDeviceGetCurrPcieLinkWidth(d, &lanes)))
		printf("  pcie_now: gen %u x%u\n", v, lanes);
	if (say("pstate", nvmlDeviceGetPerformanceState(d, &ps)))
		printf("  pstate: %d\n", ps);
	if (say("brand", nvmlDeviceGetBrand(d, &brand)))
		printf("  brand: %d\n", brand);
	if (say("architecture", nvmlDeviceGetArchitecture(d, &arch)))
		printf("  architecture: %u\n", arch);
	/* The count first, as nvidia-smi asks. */
	n = 0;
	nvmlReturn_t rc = nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL);
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE)
		fail("process count: %d", rc);
	k = n;
	n = 4;
	if (say("processes", nvmlDeviceGetComputeRunningProcesses_v3(d, &n,
	    procs))) {
		printf("  processes: %u\n", n);
		if (n != k)
			fail("%u processes counted, %u listed", k, n);
		for (k = 0; k < n; k++)
			printf("  process: %s memory %s\n",
			    procs[k].pid == (unsigned int)getpid() ? "self" :
			    "other", procs[k].usedGpuMemory ==
			    (unsigned long long)NVML_VALUE_NOT_AVAILABLE ?
			    "n/a" : "known");
	}
	n = 4;
	expect("processes v1", nvmlDeviceGetComputeRunningProcesses(d, &n,
	    procs1), NVML_SUCCESS);
	if (!real && n > 0 && procs1[0].pid != (unsigned int)getpid())
		fail("v1 process: pid %u", procs1[0].pid);
	n = 4;
	expect("graphics processes", nvmlDeviceGetGraphicsRunningProcesses_v3(
	    d, &n, procs), NVML_SUCCESS);
	if (n != 0)
		fail("%u graphics processes", n);
	/* What nvidia-smi asks of each GPU before it lists it. */
	{
		nvmlEnableState_t da = (nvmlEnableState_t)9;
		unsigned int mc = 9, mp = 9, mig = 9;
		nvmlEventSet_t evs = NULL;

		if (say("display_active", nvmlDeviceGetDisplayActive(d, &da)))
			printf("  display_active: %d\n", (int)da);
		if (say("mig_mode", nvmlDeviceGetMigMode(d, &mc, &mp)))
			printf("  mig_mode: %u %u\n", mc, mp);
		if (say("mig_device", nvmlDeviceIsMigDeviceHandle(d, &mig)))
			printf("  mig_device: %u\n", mig);
		expect("inforom", nvmlDeviceValidateInforom(d), NVML_SUCCESS);
		expect("event set", nvmlEventSetCreate(&evs), NVML_SUCCESS);
		if (evs != NULL)
			expect("event set freed", nvmlEventSetFree(evs),
			    NVML_SUCCESS);
	}
	if (!real)
		expect("BAR1 (not answered)", nvmlDeviceGetBAR1MemoryInfo(d,
		    buf), NVML_ERROR_NOT_SUPPORTED);
}

nvmlReturn_t	nvmlInternalGetExportTable(const void **,
		    const unsigned char *);

/*
 * nvidia-smi's private table (lib/nvml/smi.c), its words called as
 * nvidia-smi calls them: a line of output, the bus id of an index, a
 * GPU's processes, one that Gleam does not answer.
 */
static void
smi_table(unsigned int n)
{
	static const unsigned char uuid[16] = {
		0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
		0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4
	};
	nvmlReturn_t (*line)(const char *, const char *, const char *);
	nvmlReturn_t (*bus)(unsigned int, char *, unsigned int);
	nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, void *,
	    unsigned int);
	nvmlReturn_t (*other)(void);
	const void **t = NULL;
	nvmlDevice_t d;
	char buf[64];
	unsigned int k;

	expect("smi table", nvmlInternalGetExportTable((const void **)&t,
	    uuid), NVML_SUCCESS);
	if (t == NULL)
		return;
	printf("smi table: %zu bytes, word 1 %s, word 24 %s\n",
	    (size_t)(uintptr_t)t[0], t[1] == NULL ? "empty" : "a function",
	    t[24] == NULL ? "empty" : "a function");
	*(const void **)&line = t[26];
	fflush(stdout);
	/* Printed by neither library (the H100's printed nothing). */
	expect("smi line", line("nvidia-smi %s: %s\n", "stdout",
	    "smi line: printed"), NVML_SUCCESS);
	fflush(stdout);
	*(const void **)&bus = t[81];
	if (say("smi bus id", bus(0, buf, 22))) {
		printf("smi bus id: %s\n", buf);
		expect("smi bus id, short", bus(0, buf, 4),
		    NVML_ERROR_INSUFFICIENT_SIZE);
	}
	expect("smi bus id, past the end", bus(n, buf, 22),
	    NVML_ERROR_INVALID_ARGUMENT);
	*(const void **)&procs = t[213];
	expect("handle", nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_SUCCESS);
	k = 500;
	if (say("smi processes", procs(d, &k, buf, 2)))
		printf("smi processes: %u\n", k);
	*(const void **)&other = t[230];
	expect("smi word 230", other(), NVML_ERROR_NOT_SUPPORTED);
}

int
main(int argc, char *argv[])
{
	nvmlDevice_t d;
	char buf[1200];
	unsigned int n, i;
	int v = 0;

	real = argc > 1 && strcmp(argv[1], "-r") == 0;
	if (argc > 1 && strcmp(argv[1], "-c") == 0) {
		int (*cuinit)(unsigned int);

		*(void **)&cuinit = dlsym(RTLD_DEFAULT, "cuInit");
		if (cuinit == NULL || cuinit(0) != 0) {
			fprintf(stderr, "nvml-check: cuInit failed\n");
			return 2;
		}
	} else if (argc > 1 && strcmp(argv[1], "-k") == 0) {
		struct clenv env;
		static struct conn c;

		if (clenv_read(&env, buf, sizeof buf) == -1 ||
		    conn_open(&c, env.host, env.port, env.kp, "nvml-check",
		    5000) == -1) {
			fprintf(stderr, "nvml-check: no connection: %s\n",
			    buf);
			return 2;
		}
	}
	/* Before nvmlInit. */
	expect("count before init", nvmlDeviceGetCount_v2(&n),
	    NVML_ERROR_UNINITIALIZED);
	expect("handle before init", nvmlDeviceGetHandleByIndex_v2(0, &d),
	    NVML_ERROR_UNINITIALIZED);
	expect("BAR1 before init", nvmlDeviceGetBAR1MemoryInfo(NULL, NULL),
	    NVML_ERROR_UNINITIALIZED);
	expect("shutdown before init", nvmlShutdown(),
	    NVML_ERROR_UNINITIALIZED);
	if (nvmlInit_v2() != NVML_SUCCESS) {
		printf("init: failed\n");
		return 1;
	}
	expect("init (v1)", nvmlInit(), NVML_SUCCESS);
	expect("init with flags", nvmlInitWithFlags(0), NVML_SUCCESS);
	printf("init: ok\n");
	if (say("driver_version", nvmlSystemGetDriverVersion(buf, sizeof buf)))
		printf("driver_version: %s\n", buf);
	if (say("nvml_version", nvmlSystemGetNVMLVersion(buf, sizeof buf)))
		printf("nvml_version: %s\n", buf);
	if (say("cuda_version", nvmlSystemGetCudaDriverVersion_v2(&v)))
		printf("cuda_version: %d\n", v);
	expect("cuda version (v1)", nvmlSystemGetCudaDriverVersion(&v),
	    v > 0 ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
	expect("count", nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	printf("count: %u\n", n);
	expect("count (v1)", nvmlDeviceGetCount(&i), NVML_SUCCESS);
	if (i != n)
		fail("nvmlDeviceGetCount: %u", i);
	for (i = 0; i < n; i++)
		device(i);
	expect("handle past the end", nvmlDeviceGetHandleByIndex_v2(n, &d),
	    NVML_ERROR_INVALID_ARGUMENT);
	/* The driver's slots take more than is known of them. */
	if (!real && n > 0)
		smi_table(n);
	/* The driver's would follow a bad handle. */
	if (!real) {
		expect("bad handle", nvmlDeviceGetName((nvmlDevice_t)buf, buf,
		    sizeof buf), NVML_ERROR_INVALID_ARGUMENT);
		expect("unknown uuid", nvmlDeviceGetHandleByUUID("GPU-none",
		    &d), NVML_ERROR_NOT_FOUND);
		expect("bad bus id", nvmlDeviceGetHandleByPciBusId_v2(
		    "nonsense", &d), NVML_ERROR_INVALID_ARGUMENT);
	}
	if (strcmp(nvmlErrorString(NVML_ERROR_NOT_SUPPORTED),
	    "Not Supported") != 0 || nvmlErrorString((nvmlReturn_t)12345) ==
	    NULL)
		fail("nvmlErrorString");
	/* Three inits, three shutdowns. */
	expect("shutdown 1", nvmlShutdown(), NVML_SUCCESS);
	expect("shutdown 2", nvmlShutdown(), NVML_SUCCESS);
	expect("count while initialized", nvmlDeviceGetCount_v2(&i),
	    NVML_SUCCESS);
	expect("shutdown 3", nvmlShutdown(), NVML_SUCCESS);
	expect("count after shutdown", nvmlDeviceGetCount_v2(&i),
	    NVML_ERROR_UNINITIALIZED);
	expect("shutdown 4", nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	return fails > 0;
}
