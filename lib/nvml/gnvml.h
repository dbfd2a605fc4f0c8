/*
 * The part of nvml.h that Gleam's libnvidia-ml.so.1 answers: its types,
 * constants and functions as NVIDIA's header declares them (same names,
 * values and layouts, so that programs built against nvml.h call us
 * unchanged).  No header of NVIDIA's is needed to build it.
 */
#ifndef GLEAM_NVML_H
#define GLEAM_NVML_H

typedef enum nvmlReturn_enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_INSUFFICIENT_POWER = 8,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_IRQ_ISSUE = 11,
	NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_CORRUPTED_INFOROM = 14,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_OPERATING_SYSTEM = 17,
	NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_MEMORY = 20,
	NVML_ERROR_NO_DATA = 21,
	NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_DEPRECATED = 26,
	NVML_ERROR_NOT_READY = 27,
	NVML_ERROR_GPU_NOT_FOUND = 28,
	NVML_ERROR_INVALID_STATE = 29,
	NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
	NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_BUFFER_SIZE		64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE		96
#define NVML_DEVICE_UUID_BUFFER_SIZE		80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE		96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE		30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE	80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE	80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE	32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE	16
#define NVML_VALUE_NOT_AVAILABLE		(-1)

#define NVML_INIT_FLAG_NO_GPUS			1
#define NVML_INIT_FLAG_NO_ATTACH		2

typedef struct nvmlPciInfo_st {
	char		 busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int	 domain;
	unsigned int	 bus;
	unsigned int	 device;
	unsigned int	 pciDeviceId;
	unsigned int	 pciSubSystemId;
	char		 busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlPciInfoExt_v1_st {
	unsigned int	 version;
	unsigned int	 domain;
	unsigned int	 bus;
	unsigned int	 device;
	unsigned int	 pciDeviceId;
	unsigned int	 pciSubSystemId;
	unsigned int	 baseClass;
	unsigned int	 subClass;
	char		 busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfoExt_v1_t;
typedef nvmlPciInfoExt_v1_t nvmlPciInfoExt_t;

typedef struct nvmlUtilization_st {
	unsigned int	 gpu;
	unsigned int	 memory;
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
	unsigned int	 version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define NVML_STRUCT_VERSION(data, ver)					\
	(unsigned int)(sizeof(nvml ## data ## _v ## ver ## _t) | (ver << 24U))
#define nvmlMemory_v2	NVML_STRUCT_VERSION(Memory, 2)
#define nvmlPciInfoExt_v1	NVML_STRUCT_VERSION(PciInfoExt, 1)

/* The first process struct, of the unversioned calls. */
typedef struct nvmlProcessInfo_v1_st {
	unsigned int	 pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* That of the _v2 and _v3 calls. */
typedef struct nvmlProcessInfo_v2_st {
	unsigned int	 pid;
	unsigned long long usedGpuMemory;
	unsigned int	 gpuInstanceId;
	unsigned int	 computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

typedef enum nvmlTemperatureSensors_enum {
	NVML_TEMPERATURE_GPU = 0,
	NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

/* nvmlDeviceGetTemperatureV's struct, version 1. */
typedef struct nvmlTemperature_v1_st {
	unsigned int	 version;	/* nvmlTemperature_v1 */
	nvmlTemperatureSensors_t sensorType;
	int		 temperature;
} nvmlTemperature_v1_t, nvmlTemperature_t;
#define nvmlTemperature_v1	NVML_STRUCT_VERSION(Temperature, 1)

typedef enum nvmlClockType_enum {
	NVML_CLOCK_GRAPHICS = 0,
	NVML_CLOCK_SM = 1,
	NVML_CLOCK_MEM = 2,
	NVML_CLOCK_VIDEO = 3,
	NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef enum nvmlEnableState_enum {
	NVML_FEATURE_DISABLED = 0,
	NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlComputeMode_enum {
	NVML_COMPUTEMODE_DEFAULT = 0,
	NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTEMODE_PROHIBITED = 2,
	NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
	NVML_COMPUTEMODE_COUNT
} nvmlComputeMode_t;

typedef enum nvmlPStates_enum {
	NVML_PSTATE_0 = 0,
	NVML_PSTATE_15 = 15,
	NVML_PSTATE_UNKNOWN = 32
} nvmlPstates_t;

/* The values of nvmlBrandType_t and nvmlDeviceArchitecture_t pass through. */
typedef int nvmlBrandType_t;
typedef unsigned int nvmlDeviceArchitecture_t;

/* An event set: one with no events registered (none are remoted). */
typedef struct nvmlEventSet_st *nvmlEventSet_t;

/* stubs.c defines every name its own way: it asks for the types alone. */
#ifndef GNVML_TYPES_ONLY
nvmlReturn_t	nvmlInit(void);
nvmlReturn_t	nvmlInit_v2(void);
nvmlReturn_t	nvmlInitWithFlags(unsigned int);
nvmlReturn_t	nvmlShutdown(void);
const char	*nvmlErrorString(nvmlReturn_t);
nvmlReturn_t	nvmlSystemGetDriverVersion(char *, unsigned int);
nvmlReturn_t	nvmlSystemGetNVMLVersion(char *, unsigned int);
nvmlReturn_t	nvmlSystemGetCudaDriverVersion(int *);
nvmlReturn_t	nvmlSystemGetCudaDriverVersion_v2(int *);
nvmlReturn_t	nvmlDeviceGetCount(unsigned int *);
nvmlReturn_t	nvmlDeviceGetCount_v2(unsigned int *);
nvmlReturn_t	nvmlDeviceGetHandleByIndex(unsigned int, nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetHandleByUUID(const char *, nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetHandleBySerial(const char *, nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetHandleByPciBusId(const char *, nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetHandleByPciBusId_v2(const char *,
		    nvmlDevice_t *);
nvmlReturn_t	nvmlDeviceGetName(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t	nvmlDeviceGetUUID(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t	nvmlDeviceGetSerial(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t	nvmlDeviceGetIndex(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetMinorNumber(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t *);
nvmlReturn_t	nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t *);
nvmlReturn_t	nvmlDeviceGetUtilizationRates(nvmlDevice_t,
		    nvmlUtilization_t *);
nvmlReturn_t	nvmlDeviceGetTemperature(nvmlDevice_t,
		    nvmlTemperatureSensors_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetTemperatureV(nvmlDevice_t, nvmlTemperature_t *);
nvmlReturn_t	nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetPowerManagementLimit(nvmlDevice_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetPowerManagementMode(nvmlDevice_t,
		    nvmlEnableState_t *);
nvmlReturn_t	nvmlDeviceGetClockInfo(nvmlDevice_t, nvmlClockType_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetMaxClockInfo(nvmlDevice_t, nvmlClockType_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetPciInfo(nvmlDevice_t, nvmlPciInfo_t *);
nvmlReturn_t	nvmlDeviceGetPciInfo_v2(nvmlDevice_t, nvmlPciInfo_t *);
nvmlReturn_t	nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t *);
nvmlReturn_t	nvmlDeviceGetPciInfoExt(nvmlDevice_t, nvmlPciInfoExt_t *);
nvmlReturn_t	nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t,
		    unsigned int *);
nvmlReturn_t	nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetComputeMode(nvmlDevice_t, nvmlComputeMode_t *);
nvmlReturn_t	nvmlDeviceGetPersistenceMode(nvmlDevice_t,
		    nvmlEnableState_t *);
nvmlReturn_t	nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v1_t *);
nvmlReturn_t	nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v2_t *);
nvmlReturn_t	nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_t *);
nvmlReturn_t	nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v1_t *);
nvmlReturn_t	nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v2_t *);
nvmlReturn_t	nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_t *);
nvmlReturn_t	nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v1_t *);
nvmlReturn_t	nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v2_t *);
nvmlReturn_t	nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_t *);
nvmlReturn_t	nvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int *,
		    int *);
nvmlReturn_t	nvmlDeviceGetFanSpeed(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetPerformanceState(nvmlDevice_t,
		    nvmlPstates_t *);
nvmlReturn_t	nvmlDeviceGetPowerState(nvmlDevice_t, nvmlPstates_t *);
nvmlReturn_t	nvmlDeviceGetBrand(nvmlDevice_t, nvmlBrandType_t *);
nvmlReturn_t	nvmlDeviceGetArchitecture(nvmlDevice_t,
		    nvmlDeviceArchitecture_t *);
nvmlReturn_t	nvmlDeviceValidateInforom(nvmlDevice_t);
nvmlReturn_t	nvmlDeviceGetDisplayActive(nvmlDevice_t,
		    nvmlEnableState_t *);
nvmlReturn_t	nvmlDeviceGetDisplayMode(nvmlDevice_t, nvmlEnableState_t *);
nvmlReturn_t	nvmlDeviceIsMigDeviceHandle(nvmlDevice_t, unsigned int *);
nvmlReturn_t	nvmlDeviceGetMigMode(nvmlDevice_t, unsigned int *,
		    unsigned int *);
nvmlReturn_t	nvmlEventSetCreate(nvmlEventSet_t *);
nvmlReturn_t	nvmlEventSetFree(nvmlEventSet_t);
#endif

#endif
