/*
 * The cuda backend: remoted calls executed through the real driver.
 *
 * Each client gets contexts of its own (never the device's primary
 * context, which other clients would share): a kernel fault is sticky
 * in its context, so one client's fault cannot spoil another's work, and
 * destroying a client's contexts frees all it held, whatever the client
 * did or did not free.  The driver is loaded with dlopen so that hosts
 * without one still run gleam-serve.
 */
#include <sys/random.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "backend.h"
#include "check.h"
#include "pool.h"
#include "stage.h"
#include "copy3d.h"
#include "cuwire.h"
#include "vmm.h"
#include "log.h"
#include "util.h"

/* The entry points we use, each asked for at the version whose ABI we call. */
static struct {
	void *h;
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*CtxCreate)(CUcontext *, unsigned, CUdevice);
	CUresult (*CtxDestroy)(CUcontext);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxGetCurrent)(CUcontext *);
	CUresult (*MemHostRegister)(void *, size_t, unsigned);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*CtxSynchronize)(void);
	CUresult (*CtxSetLimit)(CUlimit, size_t);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t,
	    unsigned);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned);
	CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemGetInfo)(size_t *, size_t *);
	CUresult (*PointerGetAttribute)(void *, CUpointer_attribute,
		    CUdeviceptr);
	CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t,
	    CUdeviceptr, unsigned long long);
	CUresult (*MemAddressFree)(CUdeviceptr, size_t);
	CUresult (*MemCreate)(CUmemGenericAllocationHandle *, size_t,
	    const CUmemAllocationProp *, unsigned long long);
	CUresult (*MemRelease)(CUmemGenericAllocationHandle);
	CUresult (*MemMap)(CUdeviceptr, size_t, size_t,
	    CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*MemUnmap)(CUdeviceptr, size_t);
	CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *,
	    size_t);
	CUresult (*MemGetAllocationGranularity)(size_t *,
	    const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
	CUresult (*MemExportToShareableHandle)(void *,
	    CUmemGenericAllocationHandle, CUmemAllocationHandleType,
	    unsigned long long);
	CUresult (*MemImportFromShareableHandle)(
	    CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
	    CUstream);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
	    CUstream);
	CUresult (*Memcpy3D)(const CUDA_MEMCPY3D *);
	CUresult (*Memcpy3DAsync)(const CUDA_MEMCPY3D *, CUstream);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*MemsetD16)(CUdeviceptr, unsigned short, size_t);
	CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
	CUresult (*MemsetD2D8)(CUdeviceptr, size_t, unsigned char, size_t,
	    size_t);
	CUresult (*MemsetD2D16)(CUdeviceptr, size_t, unsigned short, size_t,
	    size_t);
	CUresult (*MemsetD2D32)(CUdeviceptr, size_t, unsigned, size_t, size_t);
	CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*MemsetD16Async)(CUdeviceptr, unsigned short, size_t,
	    CUstream);
	CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
	CUresult (*MemsetD2D8Async)(CUdeviceptr, size_t, unsigned char, size_t,
	    size_t, CUstream);
	CUresult (*MemsetD2D16Async)(CUdeviceptr, size_t, unsigned short,
	    size_t, size_t, CUstream);
	CUresult (*MemsetD2D32Async)(CUdeviceptr, size_t, unsigned, size_t,
	    size_t, CUstream);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
	    CUjit_option *, void **);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
	    const char *);
	CUresult (*ModuleGetFunctionCount)(unsigned *, CUmodule);
	CUresult (*ModuleEnumerateFunctions)(CUfunction *, unsigned, CUmodule);
	CUresult (*FuncGetName)(const char **, CUfunction);
	CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
	CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
	CUresult (*FuncLoad)(CUfunction);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*FuncSetCacheConfig)(CUfunction, CUfunc_cache);
	CUresult (*LibraryLoadData)(CUlibrary *, const void *, CUjit_option *,
	    void **, unsigned, CUlibraryOption *, void **, unsigned);
	CUresult (*LibraryUnload)(CUlibrary);
	CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
	CUresult (*LibraryGetGlobal)(CUdeviceptr *, size_t *, CUlibrary,
	    const char *);
	CUresult (*LibraryGetKernelCount)(unsigned *, CUlibrary);
	CUresult (*LibraryEnumerateKernels)(CUkernel *, unsigned, CUlibrary);
	CUresult (*KernelGetName)(const char **, CUkernel);
	CUresult (*KernelGetParamInfo)(CUkernel, size_t, size_t *, size_t *);
	CUresult (*KernelGetAttribute)(int *, CUfunction_attribute, CUkernel,
	    CUdevice);
	CUresult (*KernelSetAttribute)(CUfunction_attribute, int, CUkernel,
	    CUdevice);
	CUresult (*KernelSetCacheConfig)(CUkernel, CUfunc_cache, CUdevice);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
	    unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
	CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned,
	    unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
	    void **);
	CUresult (*StreamCreateWithPriority)(CUstream *, unsigned, int);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamQuery)(CUstream);
	CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventQuery)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*Occupancy)(int *, CUfunction, int, size_t, unsigned);
	CUresult (*OccSmem)(size_t *, CUfunction, int, int);
	CUresult (*OccClusters)(int *, CUfunction, const CUlaunchConfig *);
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
	    void **);
	CUresult (*OccClusterSize)(int *, CUfunction, const CUlaunchConfig *);
	CUresult (*CtxGetDevice)(CUdevice *);
	CUresult (*MemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext,
	    size_t);
	CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr,
	    CUcontext, size_t, CUstream);
	/* graphs (issue 24) */
	CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
	CUresult (*StreamEndCapture)(CUstream, CUgraph *);
	CUresult (*StreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus *,
	    cuuint64_t *, CUgraph *, const CUgraphNode **, size_t *);
	CUresult (*GraphCreate)(CUgraph *, unsigned);
	CUresult (*GraphDestroy)(CUgraph);
	CUresult (*GraphClone)(CUgraph *, CUgraph);
	CUresult (*GraphInstantiateWithParams)(CUgraphExec *, CUgraph,
	    CUDA_GRAPH_INSTANTIATE_PARAMS *);
	CUresult (*GraphExecDestroy)(CUgraphExec);
	CUresult (*GraphLaunch)(CUgraphExec, CUstream);
	CUresult (*GraphUpload)(CUgraphExec, CUstream);
	CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph,
	    CUgraphExecUpdateResultInfo *);
	CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*GraphGetRootNodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*GraphGetEdges)(CUgraph, CUgraphNode *, CUgraphNode *,
	    size_t *);
	CUresult (*GraphDebugDotPrint)(CUgraph, const char *, unsigned);
	CUresult (*GraphNodeGetType)(CUgraphNode, CUgraphNodeType *);
	/* CUDA 13.1's, where the driver has them (else NULL). */
	CUresult (*GraphNodeGetLocalId)(CUgraphNode, unsigned *);
	CUresult (*GraphNodeGetToolsId)(CUgraphNode, unsigned long long *);
	CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*GraphAddMemsetNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, const CUDA_MEMSET_NODE_PARAMS *,
	    CUcontext);
	CUresult (*GraphAddMemcpyNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext);
	CUresult (*GraphAddEmptyNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t);
	CUresult (*GraphAddEventRecordNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, CUevent);
	CUresult (*GraphAddEventWaitNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, CUevent);
	CUresult (*GraphAddChildGraphNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, CUgraph);
	CUresult (*GraphAddDependencies)(CUgraph, const CUgraphNode *,
	    const CUgraphNode *, size_t);
	CUresult (*GraphRemoveDependencies)(CUgraph, const CUgraphNode *,
	    const CUgraphNode *, size_t);
	CUresult (*GraphDestroyNode)(CUgraphNode);
	CUresult (*GraphKernelNodeGetParams)(CUgraphNode,
	    CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*GraphKernelNodeSetParams)(CUgraphNode,
	    const CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
	    const CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*GraphAddMemAllocNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *);
	CUresult (*GraphAddMemFreeNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, CUdeviceptr);
	CUresult (*GraphMemAllocNodeGetParams)(CUgraphNode,
	    CUDA_MEM_ALLOC_NODE_PARAMS *);
	CUresult (*GraphMemFreeNodeGetParams)(CUgraphNode, CUdeviceptr *);
	CUresult (*GraphMemsetNodeGetParams)(CUgraphNode,
	    CUDA_MEMSET_NODE_PARAMS *);
	CUresult (*GraphMemsetNodeSetParams)(CUgraphNode,
	    const CUDA_MEMSET_NODE_PARAMS *);
	CUresult (*GraphExecMemsetNodeSetParams)(CUgraphExec, CUgraphNode,
	    const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
	CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, CUDA_MEMCPY3D *);
	CUresult (*GraphMemcpyNodeSetParams)(CUgraphNode,
	    const CUDA_MEMCPY3D *);
	CUresult (*GraphExecMemcpyNodeSetParams)(CUgraphExec, CUgraphNode,
	    const CUDA_MEMCPY3D *, CUcontext);
	CUresult (*GraphEventRecordNodeGetEvent)(CUgraphNode, CUevent *);
	CUresult (*GraphEventRecordNodeSetEvent)(CUgraphNode, CUevent);
	CUresult (*GraphExecEventRecordNodeSetEvent)(CUgraphExec, CUgraphNode,
	    CUevent);
	CUresult (*GraphEventWaitNodeGetEvent)(CUgraphNode, CUevent *);
	CUresult (*GraphEventWaitNodeSetEvent)(CUgraphNode, CUevent);
	CUresult (*GraphExecEventWaitNodeSetEvent)(CUgraphExec, CUgraphNode,
	    CUevent);
	CUresult (*GraphNodeSetEnabled)(CUgraphExec, CUgraphNode, unsigned);
	CUresult (*GraphNodeGetEnabled)(CUgraphExec, CUgraphNode, unsigned *);
	CUresult (*DeviceGraphMemTrim)(CUdevice);
	CUresult (*DeviceGetGraphMemAttribute)(CUdevice,
	    CUgraphMem_attribute, void *);
	CUresult (*DeviceSetGraphMemAttribute)(CUdevice,
	    CUgraphMem_attribute, void *);
	CUresult (*GraphNodeFindInClone)(CUgraphNode *, CUgraphNode, CUgraph);
	CUresult (*LaunchHostFunc)(CUstream, CUhostFn, void *);
	CUresult (*GraphAddHostNode)(CUgraphNode *, CUgraph,
	    const CUgraphNode *, size_t, const CUDA_HOST_NODE_PARAMS *);
	CUresult (*GraphHostNodeGetParams)(CUgraphNode,
	    CUDA_HOST_NODE_PARAMS *);
	CUresult (*GraphHostNodeSetParams)(CUgraphNode,
	    const CUDA_HOST_NODE_PARAMS *);
	CUresult (*GraphExecHostNodeSetParams)(CUgraphExec, CUgraphNode,
	    const CUDA_HOST_NODE_PARAMS *);
	CUresult (*LinkCreate)(unsigned, CUjit_option *, void **,
	    CUlinkState *);
	CUresult (*LinkAddData)(CUlinkState, CUjitInputType, void *, size_t,
	    const char *, unsigned, CUjit_option *, void **);
	CUresult (*LinkComplete)(CUlinkState, void **, size_t *);
	CUresult (*LinkDestroy)(CUlinkState);
	CUresult (*StreamBatchMemOp)(CUstream, unsigned,
	    CUstreamBatchMemOpParams *, unsigned);
	CUresult (*MemGetAccess)(unsigned long long *, const CUmemLocation *,
	    CUdeviceptr);
	/* arrays, textures and surfaces */
	CUresult (*Array3DCreate)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
	CUresult (*ArrayDestroy)(CUarray);
	CUresult (*MipmappedArrayCreate)(CUmipmappedArray *,
	    const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
	CUresult (*MipmappedArrayDestroy)(CUmipmappedArray);
	CUresult (*MipmappedArrayGetLevel)(CUarray *, CUmipmappedArray,
	    unsigned);
	CUresult (*Array3DGetDescriptor)(CUDA_ARRAY3D_DESCRIPTOR *, CUarray);
	CUresult (*ArrayGetMemoryRequirements)(
	    CUDA_ARRAY_MEMORY_REQUIREMENTS *, CUarray, CUdevice);
	CUresult (*MipmappedArrayGetMemoryRequirements)(
	    CUDA_ARRAY_MEMORY_REQUIREMENTS *, CUmipmappedArray, CUdevice);
	CUresult (*TexObjectCreate)(CUtexObject *, const CUDA_RESOURCE_DESC *,
	    const CUDA_TEXTURE_DESC *, const CUDA_RESOURCE_VIEW_DESC *);
	CUresult (*TexObjectDestroy)(CUtexObject);
	CUresult (*SurfObjectCreate)(CUsurfObject *,
	    const CUDA_RESOURCE_DESC *);
	CUresult (*SurfObjectDestroy)(CUsurfObject);
} drv;

static struct {
	const char	*name;
	int		 version;
	size_t		 off;
} drv_syms[] = {
#define S(f, n, v) { n, v, offsetof(__typeof__(drv), f) }
	S(Init, "cuInit", 2000),
	S(DriverGetVersion, "cuDriverGetVersion", 2020),
	S(DeviceGetCount, "cuDeviceGetCount", 2000),
	S(DeviceGet, "cuDeviceGet", 2000),
	S(DeviceGetName, "cuDeviceGetName", 2000),
	S(DeviceGetUuid, "cuDeviceGetUuid", 11040),
	S(DeviceTotalMem, "cuDeviceTotalMem", 3020),
	S(DeviceGetAttribute, "cuDeviceGetAttribute", 2000),
	S(CtxCreate, "cuCtxCreate", 3020),
	S(CtxDestroy, "cuCtxDestroy", 4000),
	S(CtxSetCurrent, "cuCtxSetCurrent", 4000),
	S(CtxGetCurrent, "cuCtxGetCurrent", 4000),
	S(MemHostRegister, "cuMemHostRegister", 6050),
	S(MemHostUnregister, "cuMemHostUnregister", 4000),
	S(CtxGetDevice, "cuCtxGetDevice", 2000),
	S(CtxSynchronize, "cuCtxSynchronize", 2000),
	S(CtxSetLimit, "cuCtxSetLimit", 3010),
	S(MemAlloc, "cuMemAlloc", 3020),
	S(MemAllocPitch, "cuMemAllocPitch", 3020),
	S(MemFree, "cuMemFree", 3020),
	S(MemHostAlloc, "cuMemHostAlloc", 2020),
	S(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", 3020),
	S(MemFreeHost, "cuMemFreeHost", 2000),
	S(MemGetInfo, "cuMemGetInfo", 3020),
	S(PointerGetAttribute, "cuPointerGetAttribute", 4000),
	S(MemAddressReserve, "cuMemAddressReserve", 10020),
	S(MemAddressFree, "cuMemAddressFree", 10020),
	S(MemCreate, "cuMemCreate", 10020),
	S(MemRelease, "cuMemRelease", 10020),
	S(MemMap, "cuMemMap", 10020),
	S(MemUnmap, "cuMemUnmap", 10020),
	S(MemSetAccess, "cuMemSetAccess", 10020),
	S(MemGetAllocationGranularity, "cuMemGetAllocationGranularity", 10020),
	S(MemExportToShareableHandle, "cuMemExportToShareableHandle", 10020),
	S(MemImportFromShareableHandle, "cuMemImportFromShareableHandle",
	    10020),
	S(MemcpyHtoD, "cuMemcpyHtoD", 3020),
	S(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020),
	S(MemcpyDtoH, "cuMemcpyDtoH", 3020),
	S(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020),
	S(MemcpyDtoD, "cuMemcpyDtoD", 3020),
	S(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020),
	S(MemcpyPeer, "cuMemcpyPeer", 4000),
	S(MemcpyPeerAsync, "cuMemcpyPeerAsync", 4000),
	S(Memcpy3D, "cuMemcpy3D", 3020),
	S(Memcpy3DAsync, "cuMemcpy3DAsync", 3020),
	S(MemsetD8, "cuMemsetD8", 3020),
	S(MemsetD16, "cuMemsetD16", 3020),
	S(MemsetD32, "cuMemsetD32", 3020),
	S(MemsetD2D8, "cuMemsetD2D8", 3020),
	S(MemsetD2D16, "cuMemsetD2D16", 3020),
	S(MemsetD2D32, "cuMemsetD2D32", 3020),
	S(MemsetD8Async, "cuMemsetD8Async", 3020),
	S(MemsetD16Async, "cuMemsetD16Async", 3020),
	S(MemsetD32Async, "cuMemsetD32Async", 3020),
	S(MemsetD2D8Async, "cuMemsetD2D8Async", 3020),
	S(MemsetD2D16Async, "cuMemsetD2D16Async", 3020),
	S(MemsetD2D32Async, "cuMemsetD2D32Async", 3020),
	S(ModuleLoadData, "cuModuleLoadData", 2000),
	S(ModuleLoadDataEx, "cuModuleLoadDataEx", 2010),
	S(ModuleUnload, "cuModuleUnload", 2000),
	S(ModuleGetFunction, "cuModuleGetFunction", 2000),
	S(ModuleGetGlobal, "cuModuleGetGlobal", 3020),
	S(ModuleGetFunctionCount, "cuModuleGetFunctionCount", 12040),
	S(ModuleEnumerateFunctions, "cuModuleEnumerateFunctions", 12040),
	S(FuncGetName, "cuFuncGetName", 12030),
	S(FuncGetParamInfo, "cuFuncGetParamInfo", 12040),
	S(FuncGetAttribute, "cuFuncGetAttribute", 2020),
	S(FuncLoad, "cuFuncLoad", 12040),
	S(FuncSetAttribute, "cuFuncSetAttribute", 9000),
	S(FuncSetCacheConfig, "cuFuncSetCacheConfig", 3000),
	S(LibraryLoadData, "cuLibraryLoadData", 12000),
	S(LibraryUnload, "cuLibraryUnload", 12000),
	S(LibraryGetKernel, "cuLibraryGetKernel", 12000),
	S(LibraryGetGlobal, "cuLibraryGetGlobal", 12000),
	S(LibraryGetKernelCount, "cuLibraryGetKernelCount", 12040),
	S(LibraryEnumerateKernels, "cuLibraryEnumerateKernels", 12040),
	S(KernelGetName, "cuKernelGetName", 12030),
	S(KernelGetParamInfo, "cuKernelGetParamInfo", 12040),
	S(KernelGetAttribute, "cuKernelGetAttribute", 12000),
	S(KernelSetAttribute, "cuKernelSetAttribute", 12000),
	S(KernelSetCacheConfig, "cuKernelSetCacheConfig", 12000),
	S(LaunchKernel, "cuLaunchKernel", 4000),
	S(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000),
	S(StreamCreateWithPriority, "cuStreamCreateWithPriority", 5050),
	S(StreamDestroy, "cuStreamDestroy", 4000),
	S(StreamSynchronize, "cuStreamSynchronize", 2000),
	S(StreamQuery, "cuStreamQuery", 2000),
	S(StreamWaitEvent, "cuStreamWaitEvent", 3020),
	S(EventCreate, "cuEventCreate", 2000),
	S(EventDestroy, "cuEventDestroy", 4000),
	S(EventRecord, "cuEventRecord", 2000),
	S(EventSynchronize, "cuEventSynchronize", 2000),
	S(EventQuery, "cuEventQuery", 2000),
	S(EventElapsedTime, "cuEventElapsedTime", 2000),
	S(Occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
	    7000),
	S(OccSmem, "cuOccupancyAvailableDynamicSMemPerBlock", 11000),
	S(OccClusters, "cuOccupancyMaxActiveClusters", 11080),
	S(LaunchKernelEx, "cuLaunchKernelEx", 11060),
	S(OccClusterSize, "cuOccupancyMaxPotentialClusterSize", 11080),
	S(StreamBeginCapture, "cuStreamBeginCapture", 10010),
	S(StreamEndCapture, "cuStreamEndCapture", 10000),
	S(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", 11030),
	S(GraphCreate, "cuGraphCreate", 10000),
	S(GraphDestroy, "cuGraphDestroy", 10000),
	S(GraphClone, "cuGraphClone", 10000),
	S(GraphInstantiateWithParams, "cuGraphInstantiateWithParams", 12000),
	S(GraphExecDestroy, "cuGraphExecDestroy", 10000),
	S(GraphLaunch, "cuGraphLaunch", 10000),
	S(GraphUpload, "cuGraphUpload", 11010),
	S(GraphExecUpdate, "cuGraphExecUpdate", 12000),
	S(GraphGetNodes, "cuGraphGetNodes", 10000),
	S(GraphGetRootNodes, "cuGraphGetRootNodes", 10000),
	S(GraphGetEdges, "cuGraphGetEdges", 10000),
	S(GraphDebugDotPrint, "cuGraphDebugDotPrint", 11030),
	S(GraphNodeGetType, "cuGraphNodeGetType", 10000),
	S(GraphAddKernelNode, "cuGraphAddKernelNode", 12000),
	S(GraphAddMemsetNode, "cuGraphAddMemsetNode", 10000),
	S(GraphAddMemcpyNode, "cuGraphAddMemcpyNode", 10000),
	S(GraphAddEmptyNode, "cuGraphAddEmptyNode", 10000),
	S(GraphAddEventRecordNode, "cuGraphAddEventRecordNode", 11010),
	S(GraphAddEventWaitNode, "cuGraphAddEventWaitNode", 11010),
	S(GraphAddChildGraphNode, "cuGraphAddChildGraphNode", 10000),
	S(GraphAddDependencies, "cuGraphAddDependencies", 10000),
	S(GraphRemoveDependencies, "cuGraphRemoveDependencies", 10000),
	S(GraphDestroyNode, "cuGraphDestroyNode", 10000),
	S(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams", 12000),
	S(GraphKernelNodeSetParams, "cuGraphKernelNodeSetParams", 12000),
	S(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams",
	    12000),
	S(GraphAddMemAllocNode, "cuGraphAddMemAllocNode", 11040),
	S(GraphAddMemFreeNode, "cuGraphAddMemFreeNode", 11040),
	S(GraphMemAllocNodeGetParams, "cuGraphMemAllocNodeGetParams", 11040),
	S(GraphMemFreeNodeGetParams, "cuGraphMemFreeNodeGetParams", 11040),
	S(GraphMemsetNodeGetParams, "cuGraphMemsetNodeGetParams", 10000),
	S(GraphMemsetNodeSetParams, "cuGraphMemsetNodeSetParams", 10000),
	S(GraphExecMemsetNodeSetParams, "cuGraphExecMemsetNodeSetParams",
	    10020),
	S(GraphMemcpyNodeGetParams, "cuGraphMemcpyNodeGetParams", 10000),
	S(GraphMemcpyNodeSetParams, "cuGraphMemcpyNodeSetParams", 10000),
	S(GraphExecMemcpyNodeSetParams, "cuGraphExecMemcpyNodeSetParams",
	    10020),
	S(GraphEventRecordNodeGetEvent, "cuGraphEventRecordNodeGetEvent",
	    11010),
	S(GraphEventRecordNodeSetEvent, "cuGraphEventRecordNodeSetEvent",
	    11010),
	S(GraphExecEventRecordNodeSetEvent,
	    "cuGraphExecEventRecordNodeSetEvent", 11010),
	S(GraphEventWaitNodeGetEvent, "cuGraphEventWaitNodeGetEvent", 11010),
	S(GraphEventWaitNodeSetEvent, "cuGraphEventWaitNodeSetEvent", 11010),
	S(GraphExecEventWaitNodeSetEvent, "cuGraphExecEventWaitNodeSetEvent",
	    11010),
	S(GraphNodeSetEnabled, "cuGraphNodeSetEnabled", 11060),
	S(GraphNodeGetEnabled, "cuGraphNodeGetEnabled", 11060),
	S(DeviceGraphMemTrim, "cuDeviceGraphMemTrim", 11040),
	S(DeviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute", 11040),
	S(DeviceSetGraphMemAttribute, "cuDeviceSetGraphMemAttribute", 11040),
	S(GraphNodeFindInClone, "cuGraphNodeFindInClone", 10000),
	S(LaunchHostFunc, "cuLaunchHostFunc", 10000),
	S(GraphAddHostNode, "cuGraphAddHostNode", 10000),
	S(GraphHostNodeGetParams, "cuGraphHostNodeGetParams", 10000),
	S(GraphHostNodeSetParams, "cuGraphHostNodeSetParams", 10000),
	S(GraphExecHostNodeSetParams, "cuGraphExecHostNodeSetParams", 10020),
	S(LinkCreate, "cuLinkCreate", 6050),
	S(LinkAddData, "cuLinkAddData", 6050),
	S(LinkComplete, "cuLinkComplete", 5050),
	S(LinkDestroy, "cuLinkDestroy", 5050),
	S(StreamBatchMemOp, "cuStreamBatchMemOp", 11070),
	S(MemGetAccess, "cuMemGetAccess", 10020),
	S(Array3DCreate, "cuArray3DCreate", 3020),
	S(ArrayDestroy, "cuArrayDestroy", 2000),
	S(MipmappedArrayCreate, "cuMipmappedArrayCreate", 5000),
	S(MipmappedArrayDestroy, "cuMipmappedArrayDestroy", 5000),
	S(MipmappedArrayGetLevel, "cuMipmappedArrayGetLevel", 5000),
	S(Array3DGetDescriptor, "cuArray3DGetDescriptor", 3020),
	S(ArrayGetMemoryRequirements, "cuArrayGetMemoryRequirements", 11060),
	S(MipmappedArrayGetMemoryRequirements,
	    "cuMipmappedArrayGetMemoryRequirements", 11060),
	S(TexObjectCreate, "cuTexObjectCreate", 5000),
	S(TexObjectDestroy, "cuTexObjectDestroy", 5000),
	S(SurfObjectCreate, "cuSurfObjectCreate", 5000),
	S(SurfObjectDestroy, "cuSurfObjectDestroy", 5000),
#undef S
};

static int drv_ndev;

/*
 * Per-client state: host memory page-locked for the client's copies, so that the driver
 * copies it by DMA instead of through its own staging buffers: the serving
 * thread's input buffer (remote.c asks, cuda_host_pin) and a scratch buffer
 * for device-to-host pieces.  Registered in a context of the client's,
 * which must outlive the registration: cuda_pins_drop before it goes.
 */
#define DTOH_PINNED	(4u << 20)	/* the client's pieces (BULK_CHUNK) */

/*
 * A run of granules mapped at the addresses where a migrated client's
 * cuMemAlloc allocations were (cuda_mig_load): the driver cannot be told
 * where cuMemAlloc places, so they are VMM memory here, shared by the
 * allocations that share granules, and cuMemFree of the last of them
 * unmaps and releases it.  The context's: it goes before the context.
 */
struct crun {
	struct crun	*next;
	struct robj	*ctx;
	uint64_t	 va, size;
	CUmemGenericAllocationHandle h;	/* 0 until made */
	int		 mapped;
	int		 refs;		/* allocations in it */
};

/*
 * Page-locked memory of the server's that a client asked for as the
 * device side of a small page-locked buffer of its own (R_MEM_ALLOC_HOST):
 * the GPU reaches it where local page-locked memory would be, in host
 * memory, and a stream's device-to-host copy from it is read in place once
 * the stream is done.  The context's: it goes before the context.
 */
#define HMEM_MAX	(64u << 20)	/* a client's at most */
#define HMEM_ALL_MAX	(1ull << 30)	/* all clients' at most */

/*
 * The page-locked memory all clients hold here (their buffers' device
 * sides and the staging rings): the host's memory that cannot be paged
 * out, so bounded whatever the number of clients.
 */
static uint64_t	 hmem_all;	/* atomic */

static int
hmem_take(uint64_t n)
{
	return budget_take(&hmem_all, n, HMEM_ALL_MAX);
}

static void
hmem_give(uint64_t n)
{
	budget_give(&hmem_all, n);
}

struct chmem {
	struct robj	*ctx;
	void		*h;
	uint64_t	 dev, size;
};

/*
 * Asynchronous host-to-device copies from a frame (or a lane's piece)
 * into a stream with work still queued: the bytes go into a ring of
 * page-locked memory of the context's, the copy is queued from there with
 * an event after it that frees its span, and the serving thread goes on at
 * once, as a local program's cuMemcpyHtoDAsync returns, instead of waiting
 * for the stream's earlier work (which left the GPU idle while the next
 * calls were read and queued).  Into an idle stream the copy is made from
 * the frame and waited for, as before: it takes only its own time, and
 * the client may count on it (an idle stream whose synchronization it
 * answers itself after such a copy, lib/client/io.c's idle_keep, is one
 * whose copies were done before the server read its next call).  A copy
 * over STAGE_MAX, or any failure to stage, takes that way too; a full
 * ring waits for its oldest copy.  GLEAM_STAGE_HTOD=0 turns it off.
 */
#define STAGE_BYTES	(8u << 20)
#define STAGE_MAX	(2u << 20)

struct cstage {
	struct cstage	*next;
	struct robj	*ctx;
	uint8_t		*buf;		/* STAGE_BYTES, page-locked */
	struct sring	 ring;		/* its spans, a copy each (stage.h) */
	CUevent		 ev[SRING_SLOTS];	/* after each: made once */
	int		 failed;	/* no ring: the old way */
	uint64_t	 staged, full;	/* copies staged; waits for room */
};

struct cclient {
	struct cstage	*stages;
	struct htab	 hmem;		/* chmem by device address */
	uint64_t	 hmem_bytes;
	CUcontext	 pin_ctx;	/* the context they were pinned in */
	void		*in;		/* the input buffer, when pinned */
	void		*lanes;		/* the lanes' buffer, when pinned */
	uint8_t		*dtoh;		/* pinned scratch, DTOH_PINNED bytes */
	int		 dtoh_failed;	/* registering it failed: don't retry */
	struct crun	*runs;
	struct htab	 moved;		/* allocation's address -> its run */
	struct chost	*hosts;		/* host functions' data (chost_get) */
};

/* The driver's lookup, for entry points newer than the ones drv needs. */
static CUresult (*gpa)(const char *, void **, int, cuuint64_t,
    CUdriverProcAddressQueryResult *);

/*
 * An entry point that an older driver may lack (drv_opt): NULL then, and
 * the call that needs it answers CUDA_ERROR_NOT_SUPPORTED.
 */
static void *
drv_opt(const char *name, int version)
{
	void *fn = NULL;

	if (gpa == NULL || gpa(name, &fn, version, 0, NULL) != CUDA_SUCCESS)
		return NULL;
	return fn;
}

/*
 * A host function of the client's as the driver runs it: host_reached
 * with one of these, made once per callback id and kept until the client
 * is freed (after its contexts: no callback comes later).  The function
 * only notes that it was reached; it never waits for the client.
 */
struct chost {
	struct rclient	*cl;
	uint64_t	 id;
	struct chost	*next;
};

static void CUDA_CB
host_reached(void *p)
{
	struct chost *h = p;

	rclient_host_note(h->cl, h->id);
}

/* The driver's data for callback id, made if new; NULL when out of memory. */
static struct chost *
chost_get(struct rclient *cl, uint64_t id)
{
	struct cclient *cc = cl->be;
	struct chost *h;

	for (h = cc->hosts; h != NULL; h = h->next)
		if (h->id == id)
			return h;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return NULL;
	h->cl = cl;
	h->id = id;
	h->next = cc->hosts;
	cc->hosts = h;
	return h;
}

/* The callback id of a host node's parameters; 0 if not the client's. */
static uint64_t
chost_id(struct rclient *cl, const CUDA_HOST_NODE_PARAMS *p)
{
	struct cclient *cc = cl->be;
	struct chost *h;

	if (p->fn != host_reached)
		return 0;
	for (h = cc->hosts; h != NULL; h = h->next)
		if (h == p->userData)
			return h->id;
	return 0;
}

/* A call of a later CUDA than some drivers have: the function, else NULL. */
static void *
drv_optional(const char *name, int version)
{
	void *fn = NULL;

	if (gpa(name, &fn, version, 0, NULL) != CUDA_SUCCESS || fn == NULL)
		fn = dlsym(drv.h, name);
	return fn;
}

static int
cuda_init(char *err, size_t errlen)
{
	const char *path = getenv("GLEAM_REAL_LIBCUDA");
	size_t i;
	void *fn;

	if (path == NULL)
		path = "libcuda.so.1";
	if ((drv.h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(err, errlen, "no CUDA driver (%s)", path);
		return -1;
	}
	gpa = (__typeof__(gpa))dlsym(drv.h, "cuGetProcAddress_v2");
	if (gpa == NULL) {
		snprintf(err, errlen, "%s: no cuGetProcAddress_v2", path);
		return -1;
	}
	for (i = 0; i < sizeof drv_syms / sizeof drv_syms[0]; i++) {
		fn = NULL;
		if (gpa(drv_syms[i].name, &fn, drv_syms[i].version, 0, NULL) !=
		    CUDA_SUCCESS || fn == NULL) {
			snprintf(err, errlen, "%s: no %s", path,
			    drv_syms[i].name);
			return -1;
		}
		memcpy((char *)&drv + drv_syms[i].off, &fn, sizeof fn);
	}
	drv.GraphNodeGetLocalId = (__typeof__(drv.GraphNodeGetLocalId))
	    drv_optional("cuGraphNodeGetLocalId", 13010);
	drv.GraphNodeGetToolsId = (__typeof__(drv.GraphNodeGetToolsId))
	    drv_optional("cuGraphNodeGetToolsId", 13010);
	if (drv.Init(0) != CUDA_SUCCESS ||
	    drv.DeviceGetCount(&drv_ndev) != CUDA_SUCCESS || drv_ndev == 0) {
		snprintf(err, errlen, "no CUDA device");
		return -1;
	}
	return 0;
}

static int
cuda_describe(struct pw *w, uint32_t *ndev, uint32_t *version)
{
	char name[256];
	CUuuid uuid;
	size_t total;
	int32_t attr[CU_DEVICE_ATTRIBUTE_MAX];
	int d, a, v, ver;

	if (drv.DriverGetVersion(&ver) != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_INITIALIZED;
	*version = (uint32_t)ver;
	*ndev = (uint32_t)drv_ndev;
	rpc_devices_begin(w, (uint32_t)drv_ndev);
	for (d = 0; d < drv_ndev; d++) {
		if (drv.DeviceGetName(name, sizeof name, d) != CUDA_SUCCESS ||
		    drv.DeviceGetUuid(&uuid, d) != CUDA_SUCCESS ||
		    drv.DeviceTotalMem(&total, d) != CUDA_SUCCESS)
			return CUDA_ERROR_INVALID_DEVICE;
		for (a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
			if (drv.DeviceGetAttribute(&v, (CUdevice_attribute)a,
			    d) != CUDA_SUCCESS)
				v = 0;
			attr[a] = v;
		}
		rpc_device_enc(w, name, (const uint8_t *)uuid.bytes, total,
		    CU_DEVICE_ATTRIBUTE_MAX, attr);
	}
	return w->bad ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static const struct vmm_ops cuda_vmm;

static int
cuda_client_new(struct rclient *cl)
{
	struct cclient *cc;

	if ((cc = calloc(1, sizeof *cc)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	htab_init(&cc->moved);
	htab_init(&cc->hmem);
	cl->be = cc;
	return 0;
}

/* Unregisters what was pinned in ctx (any context if NULL), while it lives. */
static void
cuda_pins_drop(struct rclient *cl, CUcontext ctx)
{
	struct cclient *cc = cl->be;

	if (cc == NULL || cc->pin_ctx == NULL ||
	    (ctx != NULL && cc->pin_ctx != ctx))
		return;
	if (drv.CtxSetCurrent(cc->pin_ctx) == CUDA_SUCCESS) {
		if (cc->in != NULL)
			drv.MemHostUnregister(cc->in);
		if (cc->lanes != NULL)
			drv.MemHostUnregister(cc->lanes);
		if (cc->dtoh != NULL)
			drv.MemHostUnregister(cc->dtoh);
	}
	free(cc->dtoh);
	cc->dtoh = NULL;
	cc->in = cc->lanes = NULL;
	cc->pin_ctx = NULL;
}

/*
 * Registers [p, p + len) in the current context, the one both buffers are
 * pinned in: 0 when done, 1 when it cannot be yet (no context, or not that
 * one), -1 when the driver refused.
 */
static int
cuda_pin_here(struct cclient *cc, void *p, size_t len)
{
	CUcontext cur = NULL;

	if (drv.CtxGetCurrent(&cur) != CUDA_SUCCESS || cur == NULL ||
	    (cc->pin_ctx != NULL && cc->pin_ctx != cur))
		return 1;
	if (drv.MemHostRegister(p, len, CU_MEMHOSTREGISTER_PORTABLE) !=
	    CUDA_SUCCESS)
		return -1;
	cc->pin_ctx = cur;
	return 0;
}

/*
 * The backend's host_pin (backend.h): two buffers at a time, the input
 * buffer and the lanes' (gleam-serve/lanes.c).
 */
static int
cuda_host_pin(struct rclient *cl, void *p, size_t len)
{
	struct cclient *cc = cl->be;
	void **slot;
	int rc;

	if (cc == NULL || p == NULL)
		return -1;
	if (cc->in == p || cc->lanes == p)
		return 0;
	if (cc->in == NULL)
		slot = &cc->in;
	else if (cc->lanes == NULL)
		slot = &cc->lanes;
	else
		return -1;	/* unpin one first */
	if ((rc = cuda_pin_here(cc, p, len)) == 0)
		*slot = p;
	return rc;
}

static void
cuda_host_unpin(struct rclient *cl, void *p)
{
	struct cclient *cc = cl->be;
	void **slot;

	if (cc == NULL || p == NULL)
		return;
	if (cc->in == p)
		slot = &cc->in;
	else if (cc->lanes == p)
		slot = &cc->lanes;
	else
		return;
	if (drv.CtxSetCurrent(cc->pin_ctx) == CUDA_SUCCESS)
		drv.MemHostUnregister(p);
	*slot = NULL;
	if (cc->dtoh == NULL && cc->in == NULL && cc->lanes == NULL)
		cc->pin_ctx = NULL;
}

/* The pinned device-to-host scratch, in the current context; or NULL. */
static void *
cuda_dtoh_scratch(struct rclient *cl, size_t n)
{
	struct cclient *cc = cl->be;
	void *p;
	int rc;

	if (cc == NULL || n > DTOH_PINNED || cc->dtoh_failed)
		return NULL;
	if (cc->dtoh != NULL)
		return cc->dtoh;
	if ((p = malloc(DTOH_PINNED)) == NULL)
		return NULL;
	if ((rc = cuda_pin_here(cc, p, DTOH_PINNED)) != 0) {
		free(p);
		cc->dtoh_failed = rc == -1;
		return NULL;
	}
	cc->dtoh = p;
	return p;
}

static void	cuda_pool_drop(struct rclient *, struct robj *);
static CUresult	cgreen_end(struct rclient *, struct robj *);
static void	cuda_runs_drop(struct rclient *, struct robj *);
static void	cuda_hmem_drop(struct rclient *, struct robj *);
static void	cuda_stage_drop(struct rclient *, struct robj *);
static int	cuda_hmem_free(struct rclient *, uint64_t);
static int	cuda_moved_free(struct rclient *, uint64_t);
static void	cuda_graphs_free(struct rclient *);
static void	knode_captured(struct rcall *, CUstream);
static void	knode_forget(struct rclient *);
static void	knode_drop(struct rclient *, CUgraph);
static void	cuda_link_free(void *);
static const struct pool_ops cuda_pool;
static int cp_sync_capturing(struct robj *);

/*
 * User objects: the driver's, each holding one reference for its client
 * until R_UOBJ_RELEASE; graphs own the others.  The client names one
 * until it goes (gone), and the struct lives as long as that name: the
 * driver calls cuobj_gone from a thread of its own when the last
 * reference goes, perhaps after the client has, which cuobj_forget
 * marks (cl NULL), under cuobj_mu.  Whichever comes last frees it.
 */
struct cuobj {
	CUuserObject	 h;
	struct rclient	*cl;
	uint64_t	 id;
	int		 share;		/* the client's reference is held */
	int		 gone;		/* the driver's object went */
};

static pthread_mutex_t	 cuobj_mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
	CUresult	(*create)(CUuserObject *, void *, CUhostFn, unsigned,
			    unsigned);
	CUresult	(*rel)(CUuserObject, unsigned);
	CUresult	(*gret)(CUgraph, CUuserObject, unsigned, unsigned);
	CUresult	(*grel)(CUgraph, CUuserObject, unsigned);
	int		 looked;
} cuobj_drv;

static int
cuobj_look(void)
{
	if (!cuobj_drv.looked) {
		cuobj_drv.create = (__typeof__(cuobj_drv.create))drv_opt(
		    "cuUserObjectCreate", 11030);
		cuobj_drv.rel = (__typeof__(cuobj_drv.rel))drv_opt(
		    "cuUserObjectRelease", 11030);
		cuobj_drv.gret = (__typeof__(cuobj_drv.gret))drv_opt(
		    "cuGraphRetainUserObject", 11030);
		cuobj_drv.grel = (__typeof__(cuobj_drv.grel))drv_opt(
		    "cuGraphReleaseUserObject", 11030);
		cuobj_drv.looked = 1;
	}
	return cuobj_drv.create != NULL && cuobj_drv.rel != NULL &&
	    cuobj_drv.gret != NULL && cuobj_drv.grel != NULL ? CUDA_SUCCESS :
	    CUDA_ERROR_NOT_SUPPORTED;
}

static void
cuobj_gone(void *p)
{
	struct cuobj *u = p;
	int last;

	pthread_mutex_lock(&cuobj_mu);
	u->gone = 1;
	if (u->cl != NULL)
		rclient_host_note(u->cl, UOBJ_NOTICE | u->id);
	last = u->cl == NULL;
	pthread_mutex_unlock(&cuobj_mu);
	if (last)
		free(u);
}

/* The client goes: its references go, and no notice after. */
static void
cuobj_forget(struct rclient *cl)
{
	struct cuobj *u;
	struct robj *o;
	size_t i = 0;
	uint64_t id;
	void *v;
	int share, gone;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		if ((o = v)->kind != RK_UOBJ || (u = o->h) == NULL)
			continue;
		o->h = NULL;
		pthread_mutex_lock(&cuobj_mu);
		gone = u->gone;
		share = u->share;
		u->cl = NULL;
		pthread_mutex_unlock(&cuobj_mu);
		if (gone)
			free(u);
		else if (share)
			cuobj_drv.rel(u->h, 1);	/* cuobj_gone may free u */
	}
}

/* R_UOBJ_CREATE: id; R_UOBJ_RELEASE: id */
static int
c_uobj(struct rcall *c)
{
	struct robj *o;
	struct cuobj *u;
	CUresult rc;
	int gone;

	if ((rc = cuobj_look()) != CUDA_SUCCESS)
		return rc;
	if (c->d->type == R_UOBJ_RELEASE) {
		if ((o = robj_get(c->cl, c->in[0].u, RK_UOBJ)) == NULL ||
		    (u = o->h) == NULL || !u->share)
			return CUDA_ERROR_INVALID_VALUE;
		u->share = 0;
		return cuobj_drv.rel(u->h, 1);
	}
	if (htab_get(&c->cl->objs, c->in[0].u) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((u = calloc(1, sizeof *u)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	u->cl = c->cl;
	u->id = c->in[0].u;
	u->share = 1;
	if ((rc = cuobj_drv.create(&u->h, u, cuobj_gone, 1,
	    CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)) != CUDA_SUCCESS) {
		free(u);
		return rc;
	}
	if (robj_new(c->cl, c->in[0].u, RK_UOBJ, u) == NULL) {
		pthread_mutex_lock(&cuobj_mu);
		u->cl = NULL;
		gone = u->gone;
		pthread_mutex_unlock(&cuobj_mu);
		if (gone)
			free(u);
		else
			cuobj_drv.rel(u->h, 1);	/* cuobj_gone frees u */
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

/* in: graph, user object, count, retain (1) or release (0) */
static int
c_graph_uobj(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	struct robj *o = robj_get(c->cl, c->in[1].u, RK_UOBJ);
	struct cuobj *u;
	CUresult rc;
	int gone;

	if ((rc = cuobj_look()) != CUDA_SUCCESS)
		return rc;
	if (g == NULL || o == NULL || g->h == NULL || (u = o->h) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cuobj_mu);
	gone = u->gone;
	pthread_mutex_unlock(&cuobj_mu);
	if (gone)
		return CUDA_ERROR_INVALID_VALUE;
	return c->in[3].u ? cuobj_drv.gret(g->h, u->h, (unsigned)c->in[2].u,
	    0) : cuobj_drv.grel(g->h, u->h, (unsigned)c->in[2].u);
}

static void tref_drop(struct robj *);

/* Destroying a context frees its memory, modules, streams and events. */
static void
cuda_client_free(struct rclient *cl)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_LIBRARY && o->h != NULL)
			drv.LibraryUnload(o->h);
		if (o->kind == RK_LINK && o->h != NULL)
			cuda_link_free(o->h);
		if (o->kind == RK_TEXREF)
			tref_drop(o);
	}
	cuobj_forget(cl);
	cuda_graphs_free(cl);
	knode_forget(cl);
	i = 0;
	cuda_pins_drop(cl, NULL);
	vmm_drop(cl, &cuda_vmm);
	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		/* The device's primary context is no client's to destroy. */
		if (o->kind == RK_CTX && o->h != NULL && o->green != NULL)
			cgreen_end(cl, o);
	}
	i = 0;
	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_CTX && o->h != NULL) {
			cuda_pool_drop(cl, o);
			drv.CtxDestroy(o->h);
			o->h = NULL;
		}
	}
	if (cl->be != NULL) {
		struct cclient *cc = cl->be;
		struct chost *h, *next;

		/* A context that was never made: its runs, unmapped here;
		 * what a context that could not be made current left. */
		cuda_runs_drop(cl, NULL);
		cuda_hmem_drop(cl, NULL);
		cuda_stage_drop(cl, NULL);
		htab_free(&cc->moved);
		htab_free(&cc->hmem);
		for (h = cc->hosts; h != NULL; h = next) {
			next = h->next;
			free(h);
		}
	}
	free(cl->be);
	cl->be = NULL;
}

/* The context named by id, made current; NULL if the client has none such. */
static struct robj *
cuda_ctx(struct rcall *c, uint64_t id, CUresult *rc)
{
	struct robj *o = robj_get(c->cl, id, RK_CTX);

	if (o == NULL || o->h == NULL) {
		*rc = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	*rc = drv.CtxSetCurrent(o->h);
	return *rc == CUDA_SUCCESS ? o : NULL;
}

/* A stream id: 0, 1 and 2 are the special streams, others the client's. */
static int
cuda_stream(struct rcall *c, uint64_t id, CUstream *s)
{
	struct robj *o;

	switch (id) {
	case 0:
		*s = NULL;
		return 0;
	case 1:
		*s = CU_STREAM_LEGACY;
		return 0;
	case 2:
		*s = CU_STREAM_PER_THREAD;
		return 0;
	}
	if ((o = robj_get(c->cl, id, RK_STREAM)) == NULL)
		return -1;
	rclient_touch(c->cl, o);
	*s = o->h;
	return 0;
}

/* For idle_report: is stream o in a capture (or can the driver not say)? */
static int
cuda_capturing(struct robj *o)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	return drv.StreamGetCaptureInfo(o->h, &st, NULL, NULL, NULL, NULL) !=
	    CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static int
cuda_idle(struct robj *o)
{
	return drv.StreamQuery(o->h) == CUDA_SUCCESS;
}

#define CTX(c, i)	do {						\
	CUresult rc_;							\
	if (cuda_ctx((c), (c)->in[i].u, &rc_) == NULL)			\
		return rc_;						\
} while (0)

#define STREAM(c, i, s)	do {						\
	if (cuda_stream((c), (c)->in[i].u, &(s)) == -1)			\
		return CUDA_ERROR_INVALID_HANDLE;			\
} while (0)

static int
cuda_ctx_create(struct rcall *c, int primary)
{
	CUcontext ctx;
	CUresult rc;
	struct robj *o;
	uint64_t id = c->in[0].u;
	int dev = (int)c->in[1].u;	/* both calls: id, device, ... */
	unsigned flags = primary ? 0 : (unsigned)c->in[2].u;

	if (dev >= drv_ndev)	/* check_call refused a negative one */
		return CUDA_ERROR_INVALID_DEVICE;
	if (primary && (o = robj_get(c->cl, id, RK_CTX)) != NULL) {
		o->refs++;
		if (o->h != NULL)
			return CUDA_SUCCESS;
		/* Reset or released to zero: a fresh context. */
		if ((rc = drv.CtxCreate(&ctx, 0, dev)) != CUDA_SUCCESS)
			return rc;
		o->h = ctx;
		return CUDA_SUCCESS;
	}
	/* Scheduling flags only; the driver refuses the rest. */
	if ((rc = drv.CtxCreate(&ctx, flags & 0x7, dev)) != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, id, RK_CTX, ctx)) == NULL) {
		drv.CtxDestroy(ctx);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->device = dev;
	o->refs = 1;
	o->flags = flags & 0x7;
	return CUDA_SUCCESS;
}

static int c_ctx_create(struct rcall *c) { return cuda_ctx_create(c, 0); }
static int c_primary_retain(struct rcall *c) { return cuda_ctx_create(c, 1); }

/* Forgets the globals of library l that were looked up in context id. */
static void
cuda_forget_globals(struct robj *l, uint64_t id)
{
	struct rglobal **gp, *g;

	for (gp = &l->globals; (g = *gp) != NULL;)
		if (g->ctx == id) {
			*gp = g->next;
			free(g);
		} else
			gp = &g->next;
}

/* Forgets every object that lived in ctx (the driver freed them). */
static void
cuda_forget(struct rclient *cl, struct robj *ctx)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		/* Libraries and their kernels outlive contexts, as in the
		 * driver: cudart keeps them across a device reset. */
		if (o->kind == RK_LIBRARY || o->kind == RK_KERNEL) {
			if (o->ctx == ctx)
				o->ctx = NULL;
			if (o->kind == RK_LIBRARY)
				cuda_forget_globals(o, ctx->id);
			continue;
		}
		if (o->ctx == ctx || (o->parent != NULL &&
		    o->parent->ctx == ctx && o->parent->kind == RK_MODULE)) {
			if (o->kind == RK_MODULE)
				rmem_drop(cl, o);
			robj_del(cl, id);
		}
	}
	/* Its memory is gone too, and its addresses may go to others. */
	rmem_drop(cl, ctx);
}

static int
c_ctx_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);
	CUresult rc;

	/* A green context's goes with it (R_GREEN_DESTROY). */
	if (o == NULL || o->h == NULL || o->green != NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	cuda_pool_drop(c->cl, o);
	cuda_pins_drop(c->cl, o->h);
	rc = drv.CtxDestroy(o->h);
	o->h = NULL;
	cuda_forget(c->cl, o);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

static int
c_primary_release(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	if (o == NULL || o->refs <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (--o->refs == 0 && o->h != NULL) {
		cuda_pool_drop(c->cl, o);
		cuda_pins_drop(c->cl, o->h);
		drv.CtxDestroy(o->h);
		o->h = NULL;
		cuda_forget(c->cl, o);
	}
	return CUDA_SUCCESS;
}

static int
c_primary_reset(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	if (o == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (o->h != NULL) {
		cuda_pool_drop(c->cl, o);
		cuda_pins_drop(c->cl, o->h);
		drv.CtxDestroy(o->h);
		o->h = NULL;
		cuda_forget(c->cl, o);
	}
	o->refs = 0;
	return CUDA_SUCCESS;
}

static int
c_ctx_sync(struct rcall *c)
{
	struct robj *ctx;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = drv.CtxSynchronize()) == CUDA_SUCCESS)
		idle_report(c, ctx, IDLE_WAITED_ALL, cuda_capturing,
		    cuda_idle);
	return rc;
}

static int
c_ctx_set_limit(struct rcall *c)
{
	CTX(c, 0);
	return drv.CtxSetLimit((CUlimit)c->in[1].u, (size_t)c->in[2].u);
}

static int
c_mem_alloc(struct rcall *c)
{
	CUdeviceptr p;
	CUresult rc;

	struct robj *ctx;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = drv.MemAlloc(&p, (size_t)c->in[1].u)) != CUDA_SUCCESS)
		return rc;
	if (rmem_add(c->cl, p, c->in[1].u, 0, ctx) == -1) {
		drv.MemFree(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->out[0].u = p;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, bytes -> dptr: page-locked memory here, mapped (struct chmem).
 * The range is the client's as cuMemAlloc's is, so copies, memsets and
 * kernel arguments reach it; cuMemFree frees it.
 */
static int
c_mem_alloc_host(struct rcall *c)
{
	struct cclient *cc = c->cl->be;
	struct chmem *m;
	CUdeviceptr d;
	struct robj *ctx;
	CUresult rc;
	void *h;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	/* Host memory the server's own work needs: a client gets a
	 * little (the client falls back to device memory). */
	if (cc == NULL || c->in[1].u > HMEM_MAX - cc->hmem_bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (hmem_take(c->in[1].u) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((m = calloc(1, sizeof *m)) == NULL) {
		hmem_give(c->in[1].u);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if ((rc = drv.MemHostAlloc(&h, (size_t)c->in[1].u,
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)) !=
	    CUDA_SUCCESS) {
		hmem_give(c->in[1].u);
		free(m);
		return rc;
	}
	if ((rc = drv.MemHostGetDevicePointer(&d, h, 0)) != CUDA_SUCCESS ||
	    htab_put(&cc->hmem, d, m) == -1 ||
	    rmem_add(c->cl, d, c->in[1].u, 0, ctx) == -1) {
		if (rc == CUDA_SUCCESS)
			htab_del(&cc->hmem, d);
		drv.MemFreeHost(h);
		hmem_give(c->in[1].u);
		free(m);
		return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(h, 0, (size_t)c->in[1].u);
	m->ctx = ctx;
	m->h = h;
	m->dev = d;
	m->size = c->in[1].u;
	cc->hmem_bytes += m->size;
	c->out[0].u = d;
	return CUDA_SUCCESS;
}

/* The client's page-locked memory holding [p, p + n) here, or NULL: the
 * range holding p, then whether it is such memory. */
static void *
cuda_hmem_at(struct rclient *cl, uint64_t p, uint64_t n)
{
	struct cclient *cc = cl->be;
	struct chmem *m;
	uint64_t base, size;

	if (cc == NULL || cc->hmem.n == 0 ||
	    rmem_range(cl, p, &base, &size) == -1 ||
	    (m = htab_get(&cc->hmem, base)) == NULL)
		return NULL;
	if (p - m->dev > m->size || n > m->size - (p - m->dev))
		return NULL;
	return (uint8_t *)m->h + (p - m->dev);
}

static void
chmem_free(struct cclient *cc, struct chmem *m)
{
	cc->hmem_bytes -= m->size;
	hmem_give(m->size);
	/* In its context: copies into it done first, as cuMemFreeHost
	 * waits for them. */
	if (m->ctx->h != NULL && drv.CtxSetCurrent(m->ctx->h) == CUDA_SUCCESS) {
		if (!cp_sync_capturing(m->ctx))
			drv.CtxSynchronize();
		drv.MemFreeHost(m->h);
	}
	free(m);
}

/* cuMemFree of page-locked memory at p (its range already gone): 1 if it
 * was, 0 if p is not. */
static int
cuda_hmem_free(struct rclient *cl, uint64_t p)
{
	struct cclient *cc = cl->be;
	struct chmem *m;

	if (cc == NULL || (m = htab_del(&cc->hmem, p)) == NULL)
		return 0;
	chmem_free(cc, m);
	return 1;
}

/* Frees the page-locked memory of ctx (of every context if NULL); its
 * ranges go with the context's (cuda_forget). */
static void
cuda_hmem_drop(struct rclient *cl, struct robj *ctx)
{
	struct cclient *cc = cl->be;
	size_t i = 0;
	uint64_t dev;
	void *v;

	if (cc == NULL)
		return;
	while (htab_next(&cc->hmem, &i, &dev, &v))
		if (ctx == NULL || ((struct chmem *)v)->ctx == ctx) {
			htab_del(&cc->hmem, dev);
			chmem_free(cc, v);
		}
}

static int
c_mem_alloc_pitch(struct rcall *c)
{
	CUdeviceptr p;
	size_t pitch;
	CUresult rc;

	struct robj *ctx;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = drv.MemAllocPitch(&p, &pitch, (size_t)c->in[1].u,
	    (size_t)c->in[2].u, (unsigned)c->in[3].u)) != CUDA_SUCCESS)
		return rc;
	if (rmem_add(c->cl, p, (uint64_t)pitch * c->in[2].u, 0, ctx) == -1) {
		drv.MemFree(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->out[0].u = p;
	c->out[1].u = pitch;
	return CUDA_SUCCESS;
}

static int
c_mem_free(struct rcall *c)
{
	int rc;

	struct robj *ctx;
	CUresult r;

	if ((ctx = cuda_ctx(c, c->in[0].u, &r)) == NULL)
		return r;
	/*
	 * Address 0: only cuMemFree's wait, for a piece of a client's slab.
	 * A context synchronization would end a capture on the driver.
	 */
	if (c->in[1].u == 0)
		return cp_sync_capturing(ctx) ? CUDA_SUCCESS :
		    drv.CtxSynchronize();
	if (pool_free(c->cl, c->in[1].u, &cuda_pool, &rc))
		return rc;
	if (rmem_del(c->cl, c->in[1].u) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (cuda_moved_free(c->cl, c->in[1].u) ||
	    cuda_hmem_free(c->cl, c->in[1].u))
		return CUDA_SUCCESS;
	return drv.MemFree(c->in[1].u);
}

static int
c_mem_get_info(struct rcall *c)
{
	size_t f, t;
	CUresult rc;

	CTX(c, 0);
	if ((rc = drv.MemGetInfo(&f, &t)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = f;
	c->out[1].u = t;
	return CUDA_SUCCESS;
}

/*
 * in: option, type, location type, location id, handle types,
 * compression, RDMA capable, usage -> bytes: the driver's answer for that
 * CUmemAllocationProp.
 */
static int
c_mem_granularity(struct rcall *c)
{
	CUmemAllocationProp p;
	size_t g = 0;
	CUresult rc;

	memset(&p, 0, sizeof p);
	p.type = (CUmemAllocationType)c->in[1].u;
	p.location.type = (CUmemLocationType)c->in[2].u;
	p.location.id = (int)c->in[3].u;
	p.requestedHandleTypes = (CUmemAllocationHandleType)c->in[4].u;
	p.allocFlags.compressionType = (unsigned char)c->in[5].u;
	p.allocFlags.gpuDirectRDMACapable = (unsigned char)c->in[6].u;
	p.allocFlags.usage = (unsigned short)c->in[7].u;
	if ((rc = drv.MemGetAllocationGranularity(&g, &p,
	    (CUmemAllocationGranularity_flags)c->in[0].u)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = g;
	return CUDA_SUCCESS;
}


/* ---- virtual memory management (vmm.c): the driver's own calls --------- */

static int
cv_reserve(uint64_t size, uint64_t align, uint64_t hint, uint64_t flags,
    uint64_t *va)
{
	CUdeviceptr p = 0;
	CUresult rc;

	rc = drv.MemAddressReserve(&p, size, align, hint, flags);
	*va = p;
	return rc;
}

static int
cv_free(uint64_t va, uint64_t size)
{
	return drv.MemAddressFree(va, size);
}

static int
cv_create(uint64_t size, const struct vmm_prop *v, void **h)
{
	CUmemGenericAllocationHandle g = 0;
	CUmemAllocationProp p;
	CUresult rc;

	memset(&p, 0, sizeof p);
	p.type = (CUmemAllocationType)v->type;
	p.location.type = (CUmemLocationType)v->loctype;
	p.location.id = v->locid;
	p.requestedHandleTypes = (CUmemAllocationHandleType)v->htypes;
	p.allocFlags.compressionType = (unsigned char)v->compression;
	p.allocFlags.gpuDirectRDMACapable = (unsigned char)v->rdma;
	p.allocFlags.usage = (unsigned short)v->usage;
	rc = drv.MemCreate(&g, size, &p, 0);
	*h = (void *)(uintptr_t)g;
	return rc;
}

static void
cv_release(void *h, uint64_t size)
{
	(void)size;
	drv.MemRelease((CUmemGenericAllocationHandle)(uintptr_t)h);
}

static int
cv_map(uint64_t va, uint64_t size, uint64_t off, void *h)
{
	return drv.MemMap(va, size, off,
	    (CUmemGenericAllocationHandle)(uintptr_t)h, 0);
}

static int
cv_unmap(uint64_t va, uint64_t size)
{
	return drv.MemUnmap(va, size);
}

static int
cv_set_access(uint64_t va, uint64_t size, const struct vmm_access *d,
    size_t n)
{
	CUmemAccessDesc a[CHECK_ACCESS_MAX];
	size_t i;

	for (i = 0; i < n && i < CHECK_ACCESS_MAX; i++) {
		memset(&a[i], 0, sizeof a[i]);
		a[i].location.type = (CUmemLocationType)d[i].type;
		a[i].location.id = d[i].id;
		a[i].flags = (CUmemAccess_flags)d[i].flags;
	}
	return drv.MemSetAccess(va, size, a, i);
}

static int
cv_get_access(const struct vmm_access *w, uint64_t va, uint64_t *flags)
{
	CUmemLocation l;
	unsigned long long f = 0;
	CUresult rc;

	memset(&l, 0, sizeof l);
	l.type = (CUmemLocationType)w->type;
	l.id = w->id;
	rc = drv.MemGetAccess(&f, &l, va);
	*flags = f;
	return rc;
}

static const struct vmm_ops cuda_vmm = {
	cv_reserve, cv_free, cv_create, cv_release, cv_map, cv_unmap,
	cv_set_access, cv_get_access
};

/* R_VMM_*: vmm.c, with the client's context current. */
static int
c_vmm(struct rcall *c)
{
	CTX(c, 0);
	return vmm_call(c, &cuda_vmm);
}

/* ---- one-way allocation (pool.c) -------------------------------------- */

static void
cuda_prop(const struct robj *ctx, CUmemAllocationProp *p)
{
	memset(p, 0, sizeof *p);
	p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = ctx->device;
}

static int
cp_granule(struct robj *ctx, uint64_t *gran)
{
	CUmemAllocationProp p;
	size_t g = 0;
	CUresult rc;

	cuda_prop(ctx, &p);
	rc = drv.MemGetAllocationGranularity(&g, &p,
	    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	*gran = g;
	return rc;
}

static int
cp_meminfo(struct robj *ctx, uint64_t *freeb, uint64_t *total)
{
	size_t f = 0, t = 0;
	CUresult rc = drv.MemGetInfo(&f, &t);

	*freeb = f;
	*total = t;
	return rc;
}

/*
 * Pools' ranges come from a region of their own, 96 to 120 TiB, starting
 * at a random slot of it in each process and going on from there, so
 * that the range a migrated client had on another server is most likely
 * free here (gleam-protocol(5), Migration): the driver places at a hint
 * where nothing is.  Where it does not, anywhere.
 */
#define CUDA_VA_LO	(96ull << 40)
#define CUDA_VA_HI	(120ull << 40)
#define CUDA_VA_SLOT	(512ull << 30)
#define CUDA_VA_TRIES	8
static uint64_t cuda_va_next;

static int
cp_reserve(struct robj *ctx, uint64_t size, uint64_t gran, uint64_t *va)
{
	CUdeviceptr p;
	CUresult rc;
	uint64_t a, r, tries;

	a = __atomic_load_n(&cuda_va_next, __ATOMIC_RELAXED);
	if (a == 0) {
		if (getrandom(&r, sizeof r, 0) != sizeof r)
			r = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
		a = CUDA_VA_LO + r % ((CUDA_VA_HI - CUDA_VA_LO) /
		    CUDA_VA_SLOT) * CUDA_VA_SLOT;
	}
	for (tries = 0; size <= CUDA_VA_HI - CUDA_VA_LO &&
	    tries < CUDA_VA_TRIES; tries++) {
		a = (a + gran - 1) & ~(gran - 1);
		if (a < CUDA_VA_LO || a > CUDA_VA_HI - size)
			a = CUDA_VA_LO;
		p = 0;
		rc = drv.MemAddressReserve(&p, size, gran, a, 0);
		if (rc == CUDA_SUCCESS && p == a) {
			__atomic_store_n(&cuda_va_next, a + size,
			    __ATOMIC_RELAXED);
			*va = a;
			return CUDA_SUCCESS;
		}
		if (rc == CUDA_SUCCESS)
			drv.MemAddressFree(p, size);
		/* Taken (another client's pool): past it, a slot on. */
		a = (a + size + CUDA_VA_SLOT - 1) & ~(CUDA_VA_SLOT - 1);
	}
	p = 0;
	rc = drv.MemAddressReserve(&p, size, gran, 0, 0);
	*va = p;
	return rc;
}

/* Exactly [va, va + size), or CUDA_ERROR_INVALID_ADDRESS_SPACE. */
static CUresult
cuda_reserve_at(uint64_t va, uint64_t size)
{
	CUdeviceptr p = 0;
	CUresult rc;

	if ((rc = drv.MemAddressReserve(&p, size, 0, va, 0)) != CUDA_SUCCESS)
		return rc;
	if (p != va) {
		drv.MemAddressFree(p, size);
		return CUDA_ERROR_INVALID_ADDRESS_SPACE;
	}
	return CUDA_SUCCESS;
}

static int
cp_reserve_at(struct robj *ctx, uint64_t va, uint64_t size)
{
	return cuda_reserve_at(va, size);
}

static void
cp_unreserve(struct robj *ctx, uint64_t va, uint64_t size)
{
	drv.MemAddressFree(va, size);
}

static int
cp_create(struct robj *ctx, uint64_t gran, void **h)
{
	CUmemGenericAllocationHandle m;
	CUmemAllocationProp p;
	CUresult rc;

	cuda_prop(ctx, &p);
	if ((rc = drv.MemCreate(&m, gran, &p, 0)) == CUDA_SUCCESS)
		*h = (void *)(uintptr_t)m;
	return rc;
}

static void
cp_release(struct robj *ctx, void *h, uint64_t gran)
{
	drv.MemRelease((CUmemGenericAllocationHandle)(uintptr_t)h);
}

static int
cp_map(struct robj *ctx, uint64_t va, uint64_t gran, void *h)
{
	return drv.MemMap(va, gran, 0,
	    (CUmemGenericAllocationHandle)(uintptr_t)h, 0);
}

static int
cp_access(struct robj *ctx, uint64_t va, uint64_t size)
{
	CUmemAccessDesc d;

	memset(&d, 0, sizeof d);
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = ctx->device;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return drv.MemSetAccess(va, size, &d, 1);
}

/* The client whose call this thread runs (cuda_call sets it). */
static __thread struct rclient *cp_client;

/*
 * While one of the client's streams captures, a context synchronization
 * is illegal and would end the capture on the driver, where the
 * program's cuMemFree would not: then only the streams that do not
 * capture are waited for.  1 if so, 0 if nothing captures.
 */
static int
cp_sync_capturing(struct robj *ctx)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;
	int capturing = 0;

	if (cp_client == NULL)
		return 0;
	while (htab_next(&cp_client->objs, &i, &id, &v))
		if (((struct robj *)v)->kind == RK_STREAM &&
		    ((struct robj *)v)->cap != NULL)
			capturing = 1;
	if (!capturing)
		return 0;
	i = 0;
	while (htab_next(&cp_client->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_STREAM && o->cap == NULL && o->h != NULL &&
		    o->ctx == ctx)
			drv.StreamSynchronize(o->h);
	}
	return 1;
}

/* As cuMemFree, which waits for the device's work on the memory first. */
static void
cp_unmap(struct robj *ctx, uint64_t va, uint64_t size)
{
	if (!cp_sync_capturing(ctx))
		drv.CtxSynchronize();
	drv.MemUnmap(va, size);
}

static const struct pool_ops cuda_pool = {
	cp_granule, cp_meminfo, cp_reserve, cp_unreserve, cp_create,
	cp_release, cp_map, cp_access, cp_unmap, cp_reserve_at
};

/* Unmaps, releases and frees run u (its allocations forgotten first). */
static void
crun_free(struct crun *u)
{
	if (u->mapped)
		drv.MemUnmap(u->va, u->size);
	if (u->h != 0)
		drv.MemRelease(u->h);
	drv.MemAddressFree(u->va, u->size);
	free(u);
}

/*
 * Drops the runs of ctx (of every context if NULL), and the allocations
 * in them; their ranges go with the context's (cuda_forget).
 */
static void
cuda_runs_drop(struct rclient *cl, struct robj *ctx)
{
	struct cclient *cc = cl->be;
	struct crun **up, *u;
	size_t i = 0;
	uint64_t base;
	void *v;

	if (cc == NULL || cc->runs == NULL)
		return;
	/* The context is current (cuda_pool_drop): its work first. */
	if (ctx != NULL && !cp_sync_capturing(ctx))
		drv.CtxSynchronize();
	while (htab_next(&cc->moved, &i, &base, &v))
		if (ctx == NULL || ((struct crun *)v)->ctx == ctx)
			htab_del(&cc->moved, base);
	for (up = &cc->runs; (u = *up) != NULL;)
		if (ctx == NULL || u->ctx == ctx) {
			*up = u->next;
			crun_free(u);
		} else
			up = &u->next;
}

/*
 * cuMemFree of a migrated allocation at p (its range already gone): 1
 * once its run lost it (unmapped with the last, after the device's work
 * on it, as cuMemFree waits), 0 if p is not one.
 */
static int
cuda_moved_free(struct rclient *cl, uint64_t p)
{
	struct cclient *cc = cl->be;
	struct crun **up, *u;

	if (cc == NULL || (u = htab_del(&cc->moved, p)) == NULL)
		return 0;
	if (--u->refs > 0)
		return 1;
	if (u->ctx->h != NULL && drv.CtxSetCurrent(u->ctx->h) == CUDA_SUCCESS &&
	    !cp_sync_capturing(u->ctx))
		drv.CtxSynchronize();
	for (up = &cc->runs; *up != NULL; up = &(*up)->next)
		if (*up == u) {
			*up = u->next;
			break;
		}
	crun_free(u);
	return 1;
}

/*
 * The context's pool and migrated allocations go before it does (their
 * granules are the device's, not the context's).
 */
static void
cuda_pool_drop(struct rclient *cl, struct robj *ctx)
{
	if (ctx->h == NULL || drv.CtxSetCurrent(ctx->h) != CUDA_SUCCESS)
		return;
	if (ctx->pool != NULL)
		pool_drop(cl, ctx, &cuda_pool);
	cuda_runs_drop(cl, ctx);
	cuda_hmem_drop(cl, ctx);
	cuda_stage_drop(cl, ctx);
}

/* memPool, memMap, memTrim: pool.c, in the context named first. */
static int
c_mem_pool(struct rcall *c)
{
	struct robj *ctx;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	return pool_call(c, ctx, &cuda_pool);
}

static int	 stage_off = -1;	/* GLEAM_STAGE_HTOD=0: 1 */

static int
stage_on(void)
{
	const char *e;

	if (stage_off == -1) {
		e = getenv("GLEAM_STAGE_HTOD");
		stage_off = e != NULL && strcmp(e, "0") == 0;
	}
	return !stage_off;
}

/* The oldest copy in flight done, or waited for (wait): its span freed.
 * 0 when one was, -1 when none is in flight or it is not done. */
static int
stage_reap(struct cstage *st, int wait)
{
	int k = sring_oldest(&st->ring);
	CUevent ev;

	if (k == -1)
		return -1;
	ev = st->ev[k];
	if ((wait ? drv.EventSynchronize(ev) : drv.EventQuery(ev)) !=
	    CUDA_SUCCESS && !wait)
		return -1;
	/* Waited for and failed: the stream's error comes with its next
	 * call; the span is free all the same (the copy is over). */
	sring_pop(&st->ring);
	return 0;
}

/*
 * Queues the asynchronous copy of [p, p + n) to dst in stream s from
 * ctx's ring: 1 with its result in *rc, 0 when it was not staged (too
 * large, no ring), for the caller's old way.
 */
static int
cuda_stage_htod(struct rclient *cl, struct robj *ctx, CUdeviceptr dst,
    const void *p, size_t n, CUstream s, CUresult *rc)
{
	struct cclient *cc = cl->be;
	struct cstage *st;
	uint64_t at;
	unsigned k;
	int room;

	if (cc == NULL || n == 0 || n > STAGE_MAX || !stage_on() ||
	    drv.StreamQuery(s) != CUDA_ERROR_NOT_READY)
		return 0;
	for (st = cc->stages; st != NULL && st->ctx != ctx; st = st->next)
		;
	if (st == NULL) {
		if ((st = calloc(1, sizeof *st)) == NULL)
			return 0;
		st->ctx = ctx;
		sring_init(&st->ring, STAGE_BYTES);
		st->next = cc->stages;
		cc->stages = st;
		if (hmem_take(STAGE_BYTES) == -1)
			st->failed = 1;
		else if (drv.MemHostAlloc((void **)&st->buf, STAGE_BYTES,
		    CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
			hmem_give(STAGE_BYTES);
			st->buf = NULL;
			st->failed = 1;
		}
	}
	if (st->failed)
		return 0;
	/* The copies done meanwhile free their spans; a full ring waits
	 * for its oldest. */
	while (stage_reap(st, 0) == 0)
		;
	while ((room = sring_room(&st->ring, n, &at, &k)) == 1) {
		if (stage_reap(st, 1) == -1)
			break;
		st->full++;
	}
	if (room != 0)
		return 0;
	if (st->ev[k] == NULL && drv.EventCreate(&st->ev[k],
	    CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
		st->ev[k] = NULL;
		return 0;
	}
	memcpy(st->buf + at, p, n);
	if ((*rc = drv.MemcpyHtoDAsync(dst, st->buf + at, n, s)) !=
	    CUDA_SUCCESS)
		return 1;
	/* Without its event the span could not be freed: the stream's
	 * wait, as before. */
	if (drv.EventRecord(st->ev[k], s) != CUDA_SUCCESS) {
		*rc = drv.StreamSynchronize(s);
		return 1;
	}
	sring_push(&st->ring, n);
	st->staged++;
	return 1;
}

/* Frees the rings of ctx (every context's if NULL), its copies done. */
static void
cuda_stage_drop(struct rclient *cl, struct robj *ctx)
{
	struct cclient *cc = cl->be;
	struct cstage **up, *st;
	unsigned i;

	for (up = cc != NULL ? &cc->stages : NULL; up != NULL &&
	    (st = *up) != NULL;) {
		if (ctx != NULL && st->ctx != ctx) {
			up = &st->next;
			continue;
		}
		*up = st->next;
		if (st->staged > 0)
			log_info("client %s (%s): %llu asynchronous copies into "
			    "busy streams staged, %llu waited for room",
			    cl->addr, cl->name, (unsigned long long)st->staged,
			    (unsigned long long)st->full);
		if (st->ctx->h != NULL &&
		    drv.CtxSetCurrent(st->ctx->h) == CUDA_SUCCESS) {
			while (stage_reap(st, 1) == 0)
				;
			for (i = 0; i < SRING_SLOTS; i++)
				if (st->ev[i] != NULL)
					drv.EventDestroy(st->ev[i]);
			if (st->buf != NULL)
				drv.MemFreeHost(st->buf);
		}
		if (st->buf != NULL)
			hmem_give(STAGE_BYTES);
		free(st);
	}
}

/* in: ctx, stream, async, dptr, data */
static int
c_mem_htod(struct rcall *c)
{
	struct robj *ctx;
	CUstream s;
	CUresult rc;
	void *h;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	STREAM(c, 1, s);
	if (rmem_check(c->cl, c->in[3].u, c->in[4].len) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c->in[2].u) {
		/* Into page-locked memory here (a small page-locked buffer's
		 * device side: the client's push of the host's writes): a
		 * store, as the host's own write is locally, which a kernel
		 * running meanwhile sees; no copy behind the legacy stream's
		 * work (a kernel that spins until the host writes it). */
		if ((h = cuda_hmem_at(c->cl, c->in[3].u, c->in[4].len)) !=
		    NULL) {
			memcpy(h, c->in[4].p, c->in[4].len);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			return CUDA_SUCCESS;
		}
		return drv.MemcpyHtoD(c->in[3].u, c->in[4].p, c->in[4].len);
	}
	if (cuda_stage_htod(c->cl, ctx, c->in[3].u, c->in[4].p, c->in[4].len,
	    s, &rc))
		return rc;
	/* The frame goes away after the call: the copy must be done
	 * reading it before we return, so it waits for its stream. */
	rc = drv.MemcpyHtoDAsync(c->in[3].u, c->in[4].p, c->in[4].len, s);
	if (rc == CUDA_SUCCESS)
		rc = drv.StreamSynchronize(s);
	return rc;
}

/* in: ctx, stream, async, dptr, bytes */
static int
c_mem_dtoh(struct rcall *c)
{
	CUstream s;
	CUresult rc;
	size_t n = (size_t)c->in[4].u;
	void *p;

	CTX(c, 0);
	STREAM(c, 1, s);
	if (rmem_check(c->cl, c->in[3].u, n) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	/*
	 * From page-locked memory here: read in place, in a stream (a
	 * synchronization's prefetch of a mapped buffer's block) once the
	 * stream's work is done, no second copy on the GPU behind the
	 * first; else at once (a block fetched after the host waited), as
	 * the host reads its own locally.  The reply is packed before the
	 * next call could free it.
	 */
	if (c->into == NULL && (p = cuda_hmem_at(c->cl, c->in[3].u, n)) !=
	    NULL) {
		rc = c->in[2].u ? drv.StreamSynchronize(s) : CUDA_SUCCESS;
		c->out[0].p = p;
		c->out[0].len = (uint32_t)n;
		return rc;
	}
	/* A piece lands in pinned memory (by DMA) that the reply is packed
	 * from before the next call; a larger one in memory of its own. */
	if ((p = c->into) == NULL && (p = cuda_dtoh_scratch(c->cl, n)) == NULL &&
	    (p = c->scratch = malloc(n ? n : 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (c->in[2].u) {
		rc = drv.MemcpyDtoHAsync(p, c->in[3].u, n, s);
		if (rc == CUDA_SUCCESS)
			rc = drv.StreamSynchronize(s);
	} else
		rc = drv.MemcpyDtoH(p, c->in[3].u, n);
	c->out[0].p = p;
	c->out[0].len = (uint32_t)n;
	return rc;
}

/* in: ctx, stream, async, dst, src, bytes */
static int
c_mem_dtod(struct rcall *c)
{
	CUstream s;

	CTX(c, 0);
	STREAM(c, 1, s);
	if (rmem_check(c->cl, c->in[3].u, c->in[5].u) == -1 ||
	    rmem_check(c->cl, c->in[4].u, c->in[5].u) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u)
		return drv.MemcpyDtoDAsync(c->in[3].u, c->in[4].u,
		    (size_t)c->in[5].u, s);
	return drv.MemcpyDtoD(c->in[3].u, c->in[4].u, (size_t)c->in[5].u);
}

/* in: ctx, stream, async, dptr, pitch, value, element, width, height */
static int
c_memset(struct rcall *c)
{
	CUstream s;
	CUdeviceptr p = c->in[3].u;
	size_t pitch = (size_t)c->in[4].u, w = (size_t)c->in[7].u,
	    h = (size_t)c->in[8].u;
	unsigned v = (unsigned)c->in[5].u, el = (unsigned)c->in[6].u;
	int async = c->in[2].u != 0;
	uint64_t span;

	CTX(c, 0);
	STREAM(c, 1, s);
	if (h == 0 || w == 0)
		return CUDA_SUCCESS;
	/* check_call passed the element, pitch and span. */
	if (check_memset_span(c, &span) == -1 ||
	    rmem_check(c->cl, p, span) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (h == 1) {
		switch (el) {
		case 1: return async ? drv.MemsetD8Async(p, (unsigned char)v,
		    w, s) : drv.MemsetD8(p, (unsigned char)v, w);
		case 2: return async ? drv.MemsetD16Async(p, (unsigned short)v,
		    w, s) : drv.MemsetD16(p, (unsigned short)v, w);
		default: return async ? drv.MemsetD32Async(p, v, w, s) :
		    drv.MemsetD32(p, v, w);
		}
	}
	switch (el) {
	case 1: return async ? drv.MemsetD2D8Async(p, pitch, (unsigned char)v,
	    w, h, s) : drv.MemsetD2D8(p, pitch, (unsigned char)v, w, h);
	case 2: return async ? drv.MemsetD2D16Async(p, pitch,
	    (unsigned short)v, w, h, s) : drv.MemsetD2D16(p, pitch,
	    (unsigned short)v, w, h);
	default: return async ? drv.MemsetD2D32Async(p, pitch, v, w, h, s) :
	    drv.MemsetD2D32(p, pitch, v, w, h);
	}
}

/* ---- arrays, textures and surfaces -------------------------------------- */

/*
 * A copy's array side: the driver's array, which checks the extent
 * itself.  The id is the client's (an array, or a mipmapped array's
 * level).
 */
static int
cuda_copy_array(struct rcall *c, CUDA_MEMCPY3D *m, int dst)
{
	struct robj *o = robj_get(c->cl, dst ? m->dstDevice : m->srcDevice,
	    RK_ARRAY);

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (dst) {
		m->dstDevice = 0;
		m->dstArray = o->h;
	} else {
		m->srcDevice = 0;
		m->srcArray = o->h;
	}
	return CUDA_SUCCESS;
}

/* in: ctx, id, width, height, depth, format, channels, flags, levels */
static int
c_array_create(struct rcall *c)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	struct robj *ctx, *o;
	CUarray a = NULL;
	CUmipmappedArray mm = NULL;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	memset(&d, 0, sizeof d);
	d.Width = c->in[2].u;
	d.Height = c->in[3].u;
	d.Depth = c->in[4].u;
	d.Format = (CUarray_format)c->in[5].u;
	d.NumChannels = (unsigned)c->in[6].u;
	d.Flags = (unsigned)c->in[7].u;
	if (c->in[8].u != 0)
		rc = drv.MipmappedArrayCreate(&mm, &d, (unsigned)c->in[8].u);
	else
		rc = drv.Array3DCreate(&a, &d);
	if (rc != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, c->in[8].u ? RK_MIPMAP :
	    RK_ARRAY, mm != NULL ? (void *)mm : (void *)a)) == NULL) {
		if (mm != NULL)
			drv.MipmappedArrayDestroy(mm);
		else
			drv.ArrayDestroy(a);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	return CUDA_SUCCESS;
}

/* in: id, mipmapped */
static int
c_array_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY);
	CUresult rc;

	/* A level is its mipmapped array's. */
	if (o == NULL || o->parent != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->ctx != NULL && o->ctx->h != NULL &&
	    (rc = drv.CtxSetCurrent(o->ctx->h)) != CUDA_SUCCESS)
		return rc;
	if (c->in[1].u) {
		rc = drv.MipmappedArrayDestroy(o->h);
		robj_levels_del(c->cl, o);
	} else
		rc = drv.ArrayDestroy(o->h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

/* in: mipmapped array, level, id -> width, height, depth */
static int
c_mipmap_level(struct rcall *c)
{
	struct robj *mm = robj_get(c->cl, c->in[0].u, RK_MIPMAP), *o;
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUarray a;
	CUresult rc;

	if (mm == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = drv.MipmappedArrayGetLevel(&a, mm->h,
	    (unsigned)c->in[1].u)) != CUDA_SUCCESS ||
	    (rc = drv.Array3DGetDescriptor(&d, a)) != CUDA_SUCCESS)
		return rc;
	/* Asked again: the same level under the same id is no error. */
	if ((o = robj_get(c->cl, c->in[2].u, RK_ARRAY)) == NULL) {
		if ((o = robj_new(c->cl, c->in[2].u, RK_ARRAY, a)) == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		o->ctx = mm->ctx;
		o->parent = mm;
	} else if (o->h != a)
		return CUDA_ERROR_INVALID_VALUE;
	c->out[0].u = d.Width;
	c->out[1].u = d.Height;
	c->out[2].u = d.Depth;
	return CUDA_SUCCESS;
}

/* in: id, mipmapped, device -> size, alignment */
static int
c_array_memreq(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY);
	CUDA_ARRAY_MEMORY_REQUIREMENTS r;
	CUresult rc;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(&r, 0, sizeof r);
	rc = c->in[1].u ? drv.MipmappedArrayGetMemoryRequirements(&r, o->h,
	    (CUdevice)c->in[2].u) : drv.ArrayGetMemoryRequirements(&r, o->h,
	    (CUdevice)c->in[2].u);
	if (rc != CUDA_SUCCESS)
		return rc;
	c->out[0].u = r.size;
	c->out[1].u = r.alignment;
	return CUDA_SUCCESS;
}

/* A float from its bits. */
static float
cuda_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* A float's bits. */
static uint32_t
cuda_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* in: ctx, id, surface, resource, texture, view -> handle */
static int
c_tex_create(struct rcall *c)
{
	CUDA_RESOURCE_DESC rd;
	CUDA_TEXTURE_DESC td;
	CUDA_RESOURCE_VIEW_DESC vd;
	struct rpc_res r;
	struct rpc_texd t;
	struct rpc_view v;
	struct robj *ctx, *o;
	uint64_t h = 0, span;
	unsigned el;
	int i;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	check_tex(c, &r, &t, &v);	/* passed in check_call */
	memset(&rd, 0, sizeof rd);
	rd.resType = (CUresourcetype)r.type;
	switch (r.type) {
	case CU_RESOURCE_TYPE_ARRAY:
		if ((o = robj_get(c->cl, r.h, RK_ARRAY)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		rd.res.array.hArray = o->h;
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if ((o = robj_get(c->cl, r.h, RK_MIPMAP)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		rd.res.mipmap.hMipmappedArray = o->h;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		if (rmem_check(c->cl, r.h, r.width) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		rd.res.linear.devPtr = r.h;
		rd.res.linear.format = (CUarray_format)r.format;
		rd.res.linear.numChannels = r.channels;
		rd.res.linear.sizeInBytes = r.width;
		break;
	default:
		check_format(r.format, r.channels, &el);
		span = (r.height - 1) * r.pitch + r.width * el;
		if (r.height > CHECK_COPY_MAX || r.pitch > CHECK_COPY_MAX ||
		    rmem_check(c->cl, r.h, span) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		rd.res.pitch2D.devPtr = r.h;
		rd.res.pitch2D.format = (CUarray_format)r.format;
		rd.res.pitch2D.numChannels = r.channels;
		rd.res.pitch2D.width = r.width;
		rd.res.pitch2D.height = r.height;
		rd.res.pitch2D.pitchInBytes = r.pitch;
		break;
	}
	if (c->in[2].u) {
		CUsurfObject so;

		if ((rc = drv.SurfObjectCreate(&so, &rd)) != CUDA_SUCCESS)
			return rc;
		h = so;
	} else {
		CUtexObject to;

		memset(&td, 0, sizeof td);
		for (i = 0; i < 3; i++)
			td.addressMode[i] = (CUaddress_mode)t.addr[i];
		td.filterMode = (CUfilter_mode)t.filter;
		td.flags = t.flags;
		td.maxAnisotropy = t.aniso;
		td.mipmapFilterMode = (CUfilter_mode)t.mipfilter;
		td.mipmapLevelBias = cuda_f32(t.bias);
		td.minMipmapLevelClamp = cuda_f32(t.minclamp);
		td.maxMipmapLevelClamp = cuda_f32(t.maxclamp);
		for (i = 0; i < 4; i++)
			td.borderColor[i] = cuda_f32(t.border[i]);
		memset(&vd, 0, sizeof vd);
		vd.format = (CUresourceViewFormat)v.format;
		vd.width = v.width;
		vd.height = v.height;
		vd.depth = v.depth;
		vd.firstMipmapLevel = v.firstmip;
		vd.lastMipmapLevel = v.lastmip;
		vd.firstLayer = v.firstlayer;
		vd.lastLayer = v.lastlayer;
		if ((rc = drv.TexObjectCreate(&to, &rd, &td, c->in[5].len ?
		    &vd : NULL)) != CUDA_SUCCESS)
			return rc;
		h = to;
	}
	/* The client's id; the handle goes back to it for its kernels. */
	if ((o = robj_new(c->cl, c->in[1].u, c->in[2].u ? RK_SURF : RK_TEX,
	    (void *)(uintptr_t)h)) == NULL) {
		if (c->in[2].u)
			drv.SurfObjectDestroy(h);
		else
			drv.TexObjectDestroy(h);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	c->out[0].u = h;
	return CUDA_SUCCESS;
}

/* in: id, surface */
static int
c_tex_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_SURF :
	    RK_TEX);
	uint64_t h;
	CUresult rc;

	if (o == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	h = (uint64_t)(uintptr_t)o->h;
	if (o->ctx != NULL && o->ctx->h != NULL &&
	    (rc = drv.CtxSetCurrent(o->ctx->h)) != CUDA_SUCCESS)
		return rc;
	rc = c->in[1].u ? drv.SurfObjectDestroy(h) : drv.TexObjectDestroy(h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

/* ---- texture and surface references, sparse arrays ---------------------- */

/*
 * The driver's entry points for references (deprecated since CUDA 11: a
 * later driver may lack them, and their calls answer
 * CUDA_ERROR_NOT_SUPPORTED) and sparse arrays, looked up on first use.
 */
static struct {
	int	 looked;
	CUresult (*modtex)(CUtexref *, CUmodule, const char *);
	CUresult (*modsurf)(CUsurfref *, CUmodule, const char *);
	CUresult (*libmod)(CUmodule *, CUlibrary);
	CUresult (*create)(CUtexref *);
	CUresult (*destroy)(CUtexref);
	CUresult (*setarray)(CUtexref, CUarray, unsigned);
	CUresult (*setmipmap)(CUtexref, CUmipmappedArray, unsigned);
	CUresult (*setaddr)(size_t *, CUtexref, CUdeviceptr, size_t);
	CUresult (*setaddr2d)(CUtexref, const CUDA_ARRAY_DESCRIPTOR *,
	    CUdeviceptr, size_t);
	CUresult (*setformat)(CUtexref, CUarray_format, int);
	CUresult (*setaddrmode)(CUtexref, int, CUaddress_mode);
	CUresult (*setfilter)(CUtexref, CUfilter_mode);
	CUresult (*setmipfilter)(CUtexref, CUfilter_mode);
	CUresult (*setbias)(CUtexref, float);
	CUresult (*setclamp)(CUtexref, float, float);
	CUresult (*setaniso)(CUtexref, unsigned);
	CUresult (*setborder)(CUtexref, float *);
	CUresult (*setflags)(CUtexref, unsigned);
	CUresult (*getaddr)(CUdeviceptr *, CUtexref);
	CUresult (*getarray)(CUarray *, CUtexref);
	CUresult (*getmipmap)(CUmipmappedArray *, CUtexref);
	CUresult (*getaddrmode)(CUaddress_mode *, CUtexref, int);
	CUresult (*getfilter)(CUfilter_mode *, CUtexref);
	CUresult (*getformat)(CUarray_format *, int *, CUtexref);
	CUresult (*getmipfilter)(CUfilter_mode *, CUtexref);
	CUresult (*getbias)(float *, CUtexref);
	CUresult (*getclamp)(float *, float *, CUtexref);
	CUresult (*getaniso)(int *, CUtexref);
	CUresult (*getborder)(float *, CUtexref);
	CUresult (*getflags)(unsigned *, CUtexref);
	CUresult (*surfset)(CUsurfref, CUarray, unsigned);
	CUresult (*surfget)(CUarray *, CUsurfref);
	CUresult (*sparse)(CUDA_ARRAY_SPARSE_PROPERTIES *, CUarray);
	CUresult (*mmsparse)(CUDA_ARRAY_SPARSE_PROPERTIES *,
	    CUmipmappedArray);
	CUresult (*maparray)(CUarrayMapInfo *, unsigned, CUstream);
} tref;

static void
tref_load(void)
{
#define L(f, n, v)	tref.f = (__typeof__(tref.f))drv_opt(n, v)
	if (tref.looked)
		return;
	L(modtex, "cuModuleGetTexRef", 2000);
	L(modsurf, "cuModuleGetSurfRef", 3000);
	L(libmod, "cuLibraryGetModule", 12000);
	L(create, "cuTexRefCreate", 2000);
	L(destroy, "cuTexRefDestroy", 2000);
	L(setarray, "cuTexRefSetArray", 2000);
	L(setmipmap, "cuTexRefSetMipmappedArray", 5000);
	L(setaddr, "cuTexRefSetAddress", 3020);
	L(setaddr2d, "cuTexRefSetAddress2D", 4010);
	L(setformat, "cuTexRefSetFormat", 2000);
	L(setaddrmode, "cuTexRefSetAddressMode", 2000);
	L(setfilter, "cuTexRefSetFilterMode", 2000);
	L(setmipfilter, "cuTexRefSetMipmapFilterMode", 5000);
	L(setbias, "cuTexRefSetMipmapLevelBias", 5000);
	L(setclamp, "cuTexRefSetMipmapLevelClamp", 5000);
	L(setaniso, "cuTexRefSetMaxAnisotropy", 5000);
	L(setborder, "cuTexRefSetBorderColor", 8000);
	L(setflags, "cuTexRefSetFlags", 2000);
	L(getaddr, "cuTexRefGetAddress", 3020);
	L(getarray, "cuTexRefGetArray", 2000);
	L(getmipmap, "cuTexRefGetMipmappedArray", 5000);
	L(getaddrmode, "cuTexRefGetAddressMode", 2000);
	L(getfilter, "cuTexRefGetFilterMode", 2000);
	L(getformat, "cuTexRefGetFormat", 2000);
	L(getmipfilter, "cuTexRefGetMipmapFilterMode", 5000);
	L(getbias, "cuTexRefGetMipmapLevelBias", 5000);
	L(getclamp, "cuTexRefGetMipmapLevelClamp", 5000);
	L(getaniso, "cuTexRefGetMaxAnisotropy", 5000);
	L(getborder, "cuTexRefGetBorderColor", 8000);
	L(getflags, "cuTexRefGetFlags", 2000);
	L(surfset, "cuSurfRefSetArray", 3000);
	L(surfget, "cuSurfRefGetArray", 3000);
	L(sparse, "cuArrayGetSparseProperties", 11010);
	L(mmsparse, "cuMipmappedArrayGetSparseProperties", 11010);
	L(maparray, "cuMemMapArrayAsync", 11010);
#undef L
	tref.looked = 1;
}

/* A created reference still held when its client goes. */
static void
tref_drop(struct robj *o)
{
	if (o->parent == NULL && o->h != NULL && tref.destroy != NULL) {
		tref.destroy(o->h);
		o->h = NULL;
	}
}

/* An entry point the driver lacks answers so. */
#define TREF_CALL(f, args)	(tref.f == NULL ? CUDA_ERROR_NOT_SUPPORTED : \
	tref.f args)

/* in: ctx, id, module (0: created), surface, name */
static int
c_texref_new(struct rcall *c)
{
	char name[RPC_STRING_MAX + 1];
	struct robj *ctx, *m = NULL, *o;
	void *h = NULL;
	CUresult rc;

	tref_load();
	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (c->in[2].u != 0) {
		CUmodule mh;

		/* A library's module (cuLibraryGetModule, a kernel's
		 * cuFuncGetModule) is named by its library. */
		if ((m = robj_get(c->cl, c->in[2].u, RK_MODULE)) != NULL)
			mh = m->h;
		else if ((m = robj_get(c->cl, c->in[2].u, RK_LIBRARY)) ==
		    NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		else if ((rc = TREF_CALL(libmod, (&mh, m->h))) != CUDA_SUCCESS)
			return rc;
		if (rval_str(&c->in[4], name, sizeof name) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		rc = c->in[3].u ? TREF_CALL(modsurf, ((CUsurfref *)&h, mh,
		    name)) : TREF_CALL(modtex, ((CUtexref *)&h, mh, name));
	} else
		rc = TREF_CALL(create, ((CUtexref *)&h));
	if (rc != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, c->in[3].u ? RK_SURFREF :
	    RK_TEXREF, h)) == NULL) {
		if (m == NULL)
			tref.destroy(h);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* A module's goes with its module; a created one with the client. */
	o->parent = m;
	o->ctx = m != NULL && m->ctx != NULL ? m->ctx : ctx;
	return CUDA_SUCCESS;
}

/* in: id */
static int
c_texref_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_TEXREF);
	CUresult rc;

	if (o == NULL || o->parent != NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = TREF_CALL(destroy, (o->h));
	robj_del(c->cl, c->in[0].u);
	return rc;
}

/* in: id, op, index, a, b, data -> byte offset */
static int
c_texref_set(struct rcall *c)
{
	struct robj *o, *a;
	CUDA_ARRAY_DESCRIPTOR d;
	uint32_t u[4];
	float f[4];
	size_t off = 0;
	struct pr r;
	int i;
	CUresult rc;

	tref_load();
	c->out[0].u = 0;
	if ((o = robj_get(c->cl, c->in[0].u, RK_TEXREF)) == NULL &&
	    (o = robj_get(c->cl, c->in[0].u, RK_SURFREF)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->kind == RK_SURFREF && c->in[1].u != TREF_ARRAY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->ctx != NULL && o->ctx->h != NULL &&
	    (rc = drv.CtxSetCurrent(o->ctx->h)) != CUDA_SUCCESS)
		return rc;
	switch (c->in[1].u) {
	case TREF_ARRAY:
		if ((a = robj_get(c->cl, c->in[3].u, RK_ARRAY)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		return o->kind == RK_SURFREF ? TREF_CALL(surfset, (o->h, a->h,
		    (unsigned)c->in[2].u)) : TREF_CALL(setarray, (o->h, a->h,
		    (unsigned)c->in[2].u));
	case TREF_MIPMAP:
		if ((a = robj_get(c->cl, c->in[3].u, RK_MIPMAP)) == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		return TREF_CALL(setmipmap, (o->h, a->h,
		    (unsigned)c->in[2].u));
	case TREF_ADDRESS:
		if (rmem_check(c->cl, c->in[3].u, c->in[4].u) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		rc = TREF_CALL(setaddr, (&off, o->h, c->in[3].u,
		    (size_t)c->in[4].u));
		c->out[0].u = off;
		return rc;
	case TREF_ADDRESS2D:
		pr_init(&r, c->in[5].p, c->in[5].len);
		d.Width = pr_u64(&r);
		d.Height = pr_u64(&r);
		d.Format = (CUarray_format)pr_u32(&r);
		d.NumChannels = pr_u32(&r);
		/* The rows the driver may read: height times the pitch. */
		if (d.Height > CHECK_COPY_MAX || c->in[4].u > CHECK_COPY_MAX ||
		    rmem_check(c->cl, c->in[3].u, d.Height * c->in[4].u) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		return TREF_CALL(setaddr2d, (o->h, &d, c->in[3].u,
		    (size_t)c->in[4].u));
	case TREF_FORMAT:
		return TREF_CALL(setformat, (o->h, (CUarray_format)c->in[3].u,
		    (int)c->in[4].u));
	case TREF_ADDRMODE:
		return TREF_CALL(setaddrmode, (o->h, (int)c->in[2].u,
		    (CUaddress_mode)c->in[3].u));
	case TREF_FILTER:
		return TREF_CALL(setfilter, (o->h, (CUfilter_mode)c->in[3].u));
	case TREF_MIPFILTER:
		return TREF_CALL(setmipfilter, (o->h,
		    (CUfilter_mode)c->in[3].u));
	case TREF_BIAS:
		return TREF_CALL(setbias, (o->h, cuda_f32((uint32_t)c->in[3].u)));
	case TREF_CLAMP:
		return TREF_CALL(setclamp, (o->h, cuda_f32((uint32_t)c->in[3].u),
		    cuda_f32((uint32_t)c->in[4].u)));
	case TREF_ANISO:
		return TREF_CALL(setaniso, (o->h, (unsigned)c->in[3].u));
	case TREF_BORDER:
		pr_init(&r, c->in[5].p, c->in[5].len);
		for (i = 0; i < 4; i++) {
			u[i] = pr_u32(&r);
			f[i] = cuda_f32(u[i]);
		}
		return TREF_CALL(setborder, (o->h, f));
	default:
		return TREF_CALL(setflags, (o->h, (unsigned)c->in[3].u));
	}
}

/* in: id, op, index -> a, b, data */
static int
c_texref_get(struct rcall *c)
{
	struct robj *o;
	CUdeviceptr p;
	CUarray a;
	CUmipmappedArray mm;
	CUaddress_mode am;
	CUfilter_mode fm;
	CUarray_format fmt;
	float f[4];
	unsigned u;
	int n, i;
	CUresult rc;

	tref_load();
	c->out[0].u = c->out[1].u = 0;
	c->out[2].p = NULL;
	c->out[2].len = 0;
	if ((o = robj_get(c->cl, c->in[0].u, RK_TEXREF)) == NULL &&
	    (o = robj_get(c->cl, c->in[0].u, RK_SURFREF)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->kind == RK_SURFREF && c->in[1].u != TREF_ARRAY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (o->ctx != NULL && o->ctx->h != NULL &&
	    (rc = drv.CtxSetCurrent(o->ctx->h)) != CUDA_SUCCESS)
		return rc;
	switch (c->in[1].u) {
	case TREF_ARRAY:
		if ((rc = o->kind == RK_SURFREF ? TREF_CALL(surfget, (&a,
		    o->h)) : TREF_CALL(getarray, (&a, o->h))) != CUDA_SUCCESS)
			return rc;
		c->out[0].u = robj_id_of(c->cl, a, RK_ARRAY);
		return CUDA_SUCCESS;
	case TREF_MIPMAP:
		if ((rc = TREF_CALL(getmipmap, (&mm, o->h))) != CUDA_SUCCESS)
			return rc;
		c->out[0].u = robj_id_of(c->cl, mm, RK_MIPMAP);
		return CUDA_SUCCESS;
	case TREF_ADDRESS:
		rc = TREF_CALL(getaddr, (&p, o->h));
		c->out[0].u = p;
		return rc;
	case TREF_FORMAT:
		rc = TREF_CALL(getformat, (&fmt, &n, o->h));
		c->out[0].u = (uint64_t)fmt;
		c->out[1].u = (uint64_t)(uint32_t)n;
		return rc;
	case TREF_ADDRMODE:
		rc = TREF_CALL(getaddrmode, (&am, o->h, (int)c->in[2].u));
		c->out[0].u = (uint64_t)am;
		return rc;
	case TREF_FILTER:
	case TREF_MIPFILTER:
		rc = c->in[1].u == TREF_FILTER ? TREF_CALL(getfilter, (&fm,
		    o->h)) : TREF_CALL(getmipfilter, (&fm, o->h));
		c->out[0].u = (uint64_t)fm;
		return rc;
	case TREF_BIAS:
		rc = TREF_CALL(getbias, (&f[0], o->h));
		c->out[0].u = cuda_bits(f[0]);
		return rc;
	case TREF_CLAMP:
		rc = TREF_CALL(getclamp, (&f[0], &f[1], o->h));
		c->out[0].u = cuda_bits(f[0]);
		c->out[1].u = cuda_bits(f[1]);
		return rc;
	case TREF_ANISO:
		rc = TREF_CALL(getaniso, (&n, o->h));
		c->out[0].u = (uint64_t)(uint32_t)n;
		return rc;
	case TREF_BORDER:
		if ((rc = TREF_CALL(getborder, (f, o->h))) != CUDA_SUCCESS)
			return rc;
		for (i = 0; i < 4; i++)
			pw_u32(&c->blob, cuda_bits(f[i]));
		if (c->blob.bad)
			return CUDA_ERROR_OUT_OF_MEMORY;
		c->out[2].p = c->blob.p;
		c->out[2].len = (uint32_t)c->blob.len;
		return CUDA_SUCCESS;
	default:
		rc = TREF_CALL(getflags, (&u, o->h));
		c->out[0].u = u;
		return rc;
	}
}

/* in: id, mipmapped -> tile extent, miptail first level and size, flags */
static int
c_array_sparse(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, c->in[1].u ? RK_MIPMAP :
	    RK_ARRAY);
	CUDA_ARRAY_SPARSE_PROPERTIES p;
	CUresult rc;

	tref_load();
	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(&p, 0, sizeof p);
	if ((rc = c->in[1].u ? TREF_CALL(mmsparse, (&p, o->h)) :
	    TREF_CALL(sparse, (&p, o->h))) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = p.tileExtent.width;
	c->out[1].u = p.tileExtent.height;
	c->out[2].u = p.tileExtent.depth;
	c->out[3].u = p.miptailFirstLevel;
	c->out[4].u = p.miptailSize;
	c->out[5].u = p.flags;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, stream, entries.  Arrays and memory handles are the client's
 * ids; a handle must be one of the client's VMM allocations, with the
 * range mapped inside it.
 */
static int
c_map_array(struct rcall *c)
{
	CUarrayMapInfo *m;
	struct rpc_mapinfo e;
	struct robj *o;
	uint64_t size;
	uint32_t i, n = c->in[2].len / RPC_MAPINFO_LEN;
	void *h;
	CUstream s;
	CUresult rc;

	tref_load();
	CTX(c, 0);
	STREAM(c, 1, s);
	if ((m = calloc(n, sizeof *m)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = CUDA_SUCCESS;
	for (i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		rpc_mapinfo_dec(&c->in[2], i, &e);	/* check_call's size */
		m[i].resourceType = (CUresourcetype)e.restype;
		o = robj_get(c->cl, e.res, e.restype ==
		    CU_RESOURCE_TYPE_MIPMAPPED_ARRAY ? RK_MIPMAP : RK_ARRAY);
		if (o == NULL) {
			rc = CUDA_ERROR_INVALID_HANDLE;
			break;
		}
		if (e.restype == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
			m[i].resource.mipmap = o->h;
		else
			m[i].resource.array = o->h;
		m[i].subresourceType = (CUarraySparseSubresourceType)e.subtype;
		if (e.subtype == CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL) {
			m[i].subresource.sparseLevel.level = e.level;
			m[i].subresource.sparseLevel.layer = e.layer;
			m[i].subresource.sparseLevel.offsetX = e.x;
			m[i].subresource.sparseLevel.offsetY = e.y;
			m[i].subresource.sparseLevel.offsetZ = e.z;
			m[i].subresource.sparseLevel.extentWidth = e.w;
			m[i].subresource.sparseLevel.extentHeight = e.h;
			m[i].subresource.sparseLevel.extentDepth = e.d;
		} else {
			m[i].subresource.miptail.layer = e.tlayer;
			m[i].subresource.miptail.offset = e.toffset;
			m[i].subresource.miptail.size = e.tsize;
		}
		m[i].memOperationType = (CUmemOperationType)e.memop;
		m[i].memHandleType = (CUmemHandleType)e.memtype;
		if (e.memop == CU_MEM_OPERATION_TYPE_MAP) {
			if ((h = vmm_handle(c->cl, e.mem, &size)) == NULL) {
				rc = CUDA_ERROR_INVALID_HANDLE;
				break;
			}
			m[i].memHandle.memHandle =
			    (CUmemGenericAllocationHandle)(uintptr_t)h;
		}
		m[i].offset = e.offset;
		m[i].deviceBitMask = e.devmask;
		m[i].flags = e.flags;
	}
	if (rc == CUDA_SUCCESS)
		rc = TREF_CALL(maparray, (m, n, s));
	free(m);
	return rc;
}

/*
 * A 3D (or 2D) copy; copy3d_prepare checks the descriptor (every step for
 * overflow) and the client's ranges, and points host sides at the frame.
 */
static int
c_mem_3d(struct rcall *c)
{
	CUDA_MEMCPY3D m;
	CUstream s;
	CUresult rc;
	int empty;

	CTX(c, 0);
	STREAM(c, 1, s);
	rc = (CUresult)copy3d_prepare(c, &m, &empty, cuda_copy_array);
	if (rc != CUDA_SUCCESS || empty)
		return rc;
	if (c->in[2].u) {
		rc = drv.Memcpy3DAsync(&m, s);
		/* Host memory here is the frame or scratch: wait for it. */
		if (rc == CUDA_SUCCESS && (m.srcMemoryType == CU_MEMORYTYPE_HOST ||
		    m.dstMemoryType == CU_MEMORYTYPE_HOST))
			rc = drv.StreamSynchronize(s);
		return rc;
	}
	return drv.Memcpy3D(&m);
}

/* Parameter layout of a function or kernel, filled into o. */
static int
cuda_params(struct robj *o, void *h, int kernel)
{
	size_t off, sz, i, cap = 0;
	uint32_t *no, *ns;
	CUresult rc;

	o->nparams = 0;
	for (i = 0;; i++) {
		rc = kernel ? drv.KernelGetParamInfo(h, i, &off, &sz) :
		    drv.FuncGetParamInfo(h, i, &off, &sz);
		if (rc != CUDA_SUCCESS)
			break;
		if (i == cap) {
			cap = cap ? cap * 2 : 8;
			no = realloc(o->offset, cap * sizeof *no);
			if (no == NULL)
				return -1;
			o->offset = no;
			ns = realloc(o->size, cap * sizeof *ns);
			if (ns == NULL)
				return -1;
			o->size = ns;
		}
		o->offset[i] = (uint32_t)off;
		o->size[i] = (uint32_t)sz;
		if (off + sz > o->argbytes)
			o->argbytes = (uint32_t)(off + sz);
		o->nparams = (uint32_t)i + 1;
	}
	return 0;
}

/* Adds one function's name, parameters and attributes to the table. */
static void
cuda_ftab_one(struct pw *w, void *h, int kernel, int dev)
{
	struct robj tmp;
	const char *name = NULL;
	int32_t attr[CU_FUNC_ATTRIBUTE_MAX];
	CUresult rc;
	int a, v;

	memset(&tmp, 0, sizeof tmp);
	if (kernel)
		drv.KernelGetName(&name, h);
	else
		drv.FuncGetName(&name, h);
	cuda_params(&tmp, h, kernel);
	for (a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++) {
		if (kernel)
			rc = drv.KernelGetAttribute(&v, (CUfunction_attribute)a,
			    h, dev);
		else if ((rc = drv.FuncGetAttribute(&v,
		    (CUfunction_attribute)a, h)) ==
		    CUDA_ERROR_FUNCTION_NOT_LOADED && drv.FuncLoad(h) ==
		    CUDA_SUCCESS)
			/*
			 * A module's functions load lazily: three attributes
			 * (the thread limit among them, which Triton checks)
			 * need the function loaded, as the program's own
			 * query would load it.
			 */
			rc = drv.FuncGetAttribute(&v, (CUfunction_attribute)a,
			    h);
		attr[a] = rc == CUDA_SUCCESS ? v : 0;
	}
	ftab_add(w, name ? name : "", tmp.nparams, tmp.offset, tmp.size,
	    CU_FUNC_ATTRIBUTE_MAX, attr);
	free(tmp.offset);
	free(tmp.size);
}

/*
 * Loads the image in[2] under the id in[1] in the context in[0], with JIT
 * options (n of them) or none, the function table into the reply's blob.
 */
static CUresult
cuda_load(struct rcall *c, int library, unsigned nj, CUjit_option *jo,
    void **jv)
{
	struct robj *ctx, *o;
	CUmodule mod = NULL;
	CUlibrary lib = NULL;
	void **fs = NULL;
	CUresult rc;
	unsigned n = 0, i;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (library)
		rc = drv.LibraryLoadData(&lib, c->in[2].p, jo, jv, nj, NULL,
		    NULL, 0);
	else if (nj > 0)
		rc = drv.ModuleLoadDataEx(&mod, c->in[2].p, nj, jo, jv);
	else
		rc = drv.ModuleLoadData(&mod, c->in[2].p);
	if (rc != CUDA_SUCCESS)
		return rc;
	o = robj_new(c->cl, c->in[1].u, library ? RK_LIBRARY : RK_MODULE,
	    library ? (void *)lib : (void *)mod);
	if (o == NULL) {
		if (library)
			drv.LibraryUnload(lib);
		else
			drv.ModuleUnload(mod);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	if ((library ? drv.LibraryGetKernelCount(&n, lib) :
	    drv.ModuleGetFunctionCount(&n, mod)) != CUDA_SUCCESS)
		n = 0;
	if (n > 0 && (fs = calloc(n, sizeof *fs)) != NULL &&
	    (library ? drv.LibraryEnumerateKernels((CUkernel *)fs, n, lib) :
	    drv.ModuleEnumerateFunctions((CUfunction *)fs, n, mod)) !=
	    CUDA_SUCCESS)
		n = 0;
	ftab_begin(&c->blob, fs != NULL ? n : 0);
	for (i = 0; fs != NULL && i < n; i++)
		cuda_ftab_one(&c->blob, fs[i], library, ctx->device);
	free(fs);
	return CUDA_SUCCESS;
}

/* in: ctx, id, image -> function table */
static int
c_module_load(struct rcall *c)
{
	CUresult rc;

	if ((rc = cuda_load(c, 0, 0, NULL, NULL)) != CUDA_SUCCESS)
		return rc;
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

static int
c_module_unload(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_MODULE);
	size_t i = 0;
	uint64_t id;
	void *v;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	while (htab_next(&c->cl->objs, &i, &id, &v))
		if (((struct robj *)v)->parent == o)
			robj_del(c->cl, id);
	if (o->ctx != NULL && o->ctx->h != NULL)
		drv.CtxSetCurrent(o->ctx->h);
	rmem_drop(c->cl, o);
	drv.ModuleUnload(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: module or library, id, name */
static int
cuda_get_func(struct rcall *c, int kernel)
{
	struct robj *m, *o;
	char name[RPC_STRING_MAX + 1];
	void *h;
	CUresult rc;

	m = robj_get(c->cl, c->in[0].u, kernel ? RK_LIBRARY : RK_MODULE);
	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[2], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	rc = kernel ? drv.LibraryGetKernel((CUkernel *)&h, m->h, name) :
	    drv.ModuleGetFunction((CUfunction *)&h, m->h, name);
	if (rc != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, kernel ? RK_KERNEL : RK_FUNC,
	    h)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o->parent = m;
	o->ctx = m->ctx;
	if (cuda_params(o, h, kernel) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Its entry again: the load's enumeration may not have listed it. */
	ftab_begin(&c->blob, 1);
	cuda_ftab_one(&c->blob, h, kernel, m->ctx != NULL ? m->ctx->device : 0);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

static int c_module_get_func(struct rcall *c) { return cuda_get_func(c, 0); }
static int c_library_get_kernel(struct rcall *c) { return cuda_get_func(c, 1); }

/*
 * Notes on a module or library m that the client was told where its
 * global name is in the context ctx (an id), for migration: the target
 * checks that it is there too.  -1 without memory.
 */
static int
cuda_note_global(struct robj *m, uint64_t ctx, const char *name,
    uint64_t base, uint64_t size)
{
	struct rglobal *g;
	size_t len = strlen(name);

	for (g = m->globals; g != NULL; g = g->next)
		if (g->ctx == ctx && strcmp(g->name, name) == 0)
			return 0;
	if ((g = malloc(sizeof *g + len + 1)) == NULL)
		return -1;
	g->ctx = ctx;
	g->base = base;
	g->size = size;
	memcpy(g->name, name, len + 1);
	g->next = m->globals;
	m->globals = g;
	return 0;
}

static int
c_module_get_global(struct rcall *c)
{
	struct robj *m = robj_get(c->cl, c->in[0].u, RK_MODULE);
	char name[RPC_STRING_MAX + 1];
	CUdeviceptr p;
	size_t n;
	CUresult rc;

	if (m == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[1], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (m->ctx != NULL && m->ctx->h != NULL)
		drv.CtxSetCurrent(m->ctx->h);
	if ((rc = drv.ModuleGetGlobal(&p, &n, m->h, name)) != CUDA_SUCCESS)
		return rc;
	/* The module's: gone from the map when it is unloaded. */
	rmem_add(c->cl, p, n, 1, m);
	if (cuda_note_global(m, m->ctx != NULL ? m->ctx->id : 0, name, p, n) ==
	    -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].u = p;
	c->out[1].u = n;
	return CUDA_SUCCESS;
}

/* in: ctx, id, image -> function table */
static int
c_library_load(struct rcall *c)
{
	CUresult rc;

	if ((rc = cuda_load(c, 1, 0, NULL, NULL)) != CUDA_SUCCESS)
		return rc;
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

static int
c_library_unload(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_LIBRARY);
	size_t i = 0;
	uint64_t id;
	void *v;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	while (htab_next(&c->cl->objs, &i, &id, &v))
		if (((struct robj *)v)->parent == o)
			robj_del(c->cl, id);
	drv.LibraryUnload(o->h);
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/* in: ctx, library, name -> dptr, bytes */
static int
c_library_get_global(struct rcall *c)
{
	struct robj *l;
	char name[RPC_STRING_MAX + 1];
	CUdeviceptr p;
	size_t n;
	CUresult rc;

	struct robj *ctx;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((l = robj_get(c->cl, c->in[1].u, RK_LIBRARY)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[2], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.LibraryGetGlobal(&p, &n, l->h, name)) != CUDA_SUCCESS)
		return rc;
	rmem_add(c->cl, p, n, 1, ctx);
	if (cuda_note_global(l, ctx->id, name, p, n) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].u = p;
	c->out[1].u = n;
	return CUDA_SUCCESS;
}

/* in: ctx, function, gx, gy, gz, bx, by, bz, shmem, stream, flags, params */
static int
c_launch(struct rcall *c)
{
	struct robj *f;
	CUstream s;
	void *argp[1024];
	const uint8_t *args = c->in[11].p;
	uint32_t i;
	CUresult rc;

	CTX(c, 0);
	STREAM(c, 9, s);
	f = robj_get(c->cl, c->in[1].u, RK_FUNC);
	if (f == NULL)
		f = robj_get(c->cl, c->in[1].u, RK_KERNEL);
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->nparams > 1024 || c->in[11].len != f->argbytes)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < f->nparams; i++)
		argp[i] = (void *)(args + f->offset[i]);
	if (c->in[10].u & 1)
		rc = drv.LaunchCooperativeKernel(f->h, (unsigned)c->in[2].u,
		    (unsigned)c->in[3].u, (unsigned)c->in[4].u,
		    (unsigned)c->in[5].u, (unsigned)c->in[6].u,
		    (unsigned)c->in[7].u, (unsigned)c->in[8].u, s, argp);
	else
		rc = drv.LaunchKernel(f->h, (unsigned)c->in[2].u,
		    (unsigned)c->in[3].u, (unsigned)c->in[4].u,
		    (unsigned)c->in[5].u, (unsigned)c->in[6].u,
		    (unsigned)c->in[7].u, (unsigned)c->in[8].u, s, argp, NULL);
	if (rc == CUDA_SUCCESS)
		knode_captured(c, s);
	return rc;
}

static int
c_stream_create(struct rcall *c)
{
	struct robj *ctx, *o;
	CUstream s;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = drv.StreamCreateWithPriority(&s, (unsigned)c->in[2].u,
	    (int)(int64_t)c->in[3].u)) != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, RK_STREAM, s)) == NULL) {
		drv.StreamDestroy(s);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	o->flags = (uint32_t)c->in[2].u;
	o->prio = (int32_t)(int64_t)c->in[3].u;
	return CUDA_SUCCESS;
}

static int
c_stream_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_STREAM);
	CUresult rc;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = drv.StreamDestroy(o->h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

static int
c_stream_sync(struct rcall *c)
{
	struct robj *ctx;
	CUstream s;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	STREAM(c, 1, s);
	if ((rc = drv.StreamSynchronize(s)) == CUDA_SUCCESS)
		idle_report(c, ctx, c->in[1].u, cuda_capturing, cuda_idle);
	return rc;
}

static int
c_stream_query(struct rcall *c)
{
	CUstream s;

	CTX(c, 0);
	STREAM(c, 1, s);
	return drv.StreamQuery(s);
}

static int
c_stream_wait_event(struct rcall *c)
{
	struct robj *e;
	CUstream s;

	CTX(c, 0);
	STREAM(c, 1, s);
	if ((e = robj_get(c->cl, c->in[2].u, RK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return drv.StreamWaitEvent(s, e->h, (unsigned)c->in[3].u);
}

static int
c_event_create(struct rcall *c)
{
	struct robj *ctx, *o;
	CUevent e;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((rc = drv.EventCreate(&e, (unsigned)c->in[2].u)) != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, RK_EVENT, e)) == NULL) {
		drv.EventDestroy(e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	o->flags = (uint32_t)c->in[2].u;
	return CUDA_SUCCESS;
}

static int
c_event_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_EVENT);
	CUresult rc;

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = drv.EventDestroy(o->h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

static int
c_event_record(struct rcall *c)
{
	struct robj *e;
	CUstream s;

	CUresult rc;

	CTX(c, 0);
	if ((e = robj_get(c->cl, c->in[1].u, RK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	STREAM(c, 2, s);
	if ((rc = drv.EventRecord(e->h, s)) == CUDA_SUCCESS)
		e->recorded = 1;
	return rc;
}

/*
 * Green contexts (CUDA 12.4; the structured split and a stream's
 * resources 13.1), looked up when first used.  A green context is known
 * by the client's id of the context cuCtxFromGreenCtx gives: an RK_CTX
 * whose green field holds the driver's green context, destroyed in its
 * place.  That context is the device's real primary context with the
 * green context's SMs, shared by every client's green contexts on the
 * device, unlike the contexts this backend makes for each client.
 * Resource descriptors are RK_RESDESC; the driver has no call that frees
 * one.
 */
static struct {
	CUresult	(*devres)(CUdevice, CUdevResource *, CUdevResourceType);
	CUresult	(*ctxres)(CUcontext, CUdevResource *, CUdevResourceType);
	CUresult	(*greenres)(CUgreenCtx, CUdevResource *,
			    CUdevResourceType);
	CUresult	(*streamres)(CUstream, CUdevResource *,
			    CUdevResourceType);
	CUresult	(*bycount)(CUdevResource *, unsigned *,
			    const CUdevResource *, CUdevResource *, unsigned,
			    unsigned);
	CUresult	(*split)(CUdevResource *, unsigned,
			    const CUdevResource *, CUdevResource *, unsigned,
			    void *);
	CUresult	(*desc)(CUdevResourceDesc *, CUdevResource *, unsigned);
	CUresult	(*create)(CUgreenCtx *, CUdevResourceDesc, CUdevice,
			    unsigned);
	CUresult	(*destroy)(CUgreenCtx);
	CUresult	(*toctx)(CUcontext *, CUgreenCtx);
	CUresult	(*stream)(CUstream *, CUgreenCtx, unsigned, int);
	CUresult	(*record)(CUgreenCtx, CUevent);
	CUresult	(*wait)(CUgreenCtx, CUevent);
	int		 looked;
} cgreen;

static void
cgreen_look(void)
{
	if (cgreen.looked)
		return;
#define L(f, n, v)	cgreen.f = (__typeof__(cgreen.f))drv_opt(n, v)
	L(devres, "cuDeviceGetDevResource", 12040);
	L(ctxres, "cuCtxGetDevResource", 12040);
	L(greenres, "cuGreenCtxGetDevResource", 12040);
	L(streamres, "cuStreamGetDevResource", 13010);
	L(bycount, "cuDevSmResourceSplitByCount", 12040);
	L(split, "cuDevSmResourceSplit", 13010);
	L(desc, "cuDevResourceGenerateDesc", 12040);
	L(create, "cuGreenCtxCreate", 12040);
	L(destroy, "cuGreenCtxDestroy", 12040);
	L(toctx, "cuCtxFromGreenCtx", 12040);
	L(stream, "cuGreenCtxStreamCreate", 12050);
	L(record, "cuGreenCtxRecordEvent", 12040);
	L(wait, "cuGreenCtxWaitEvent", 12040);
#undef L
	cgreen.looked = 1;
}

/*
 * What the client made in green context o that the driver keeps when a
 * green context goes (the device's primary context holds it): streams,
 * events, modules and memory; then the green context itself.
 */
static CUresult
cgreen_end(struct rclient *cl, struct robj *ctx)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;
	CUresult rc;

	cuda_pool_drop(cl, ctx);
	cuda_pins_drop(cl, ctx->h);
	if (drv.CtxSetCurrent(ctx->h) == CUDA_SUCCESS) {
		while (htab_next(&cl->objs, &i, &id, &v)) {
			if ((o = v)->ctx != ctx || o->h == NULL)
				continue;
			if (o->kind == RK_STREAM)
				drv.StreamDestroy(o->h);
			else if (o->kind == RK_EVENT)
				drv.EventDestroy(o->h);
			else if (o->kind == RK_MODULE)
				drv.ModuleUnload(o->h);
			else
				continue;
			o->h = NULL;
		}
		for (i = 0; i < cl->nranges; i++)
			if (cl->ranges[i].owner == ctx && !cl->ranges[i].global)
				drv.MemFree(cl->ranges[i].base);
	}
	rc = cgreen.destroy(ctx->green);
	ctx->h = NULL;
	ctx->green = NULL;
	return rc;
}

/* in: which, device, ctx, stream, type -> resource */
static int
c_dev_resource(struct rcall *c)
{
	CUdevResourceType type = (CUdevResourceType)c->in[4].u;
	CUdevResource r;
	struct robj *ctx;
	CUstream s;
	CUresult rc;
	int dev = (int)c->in[1].u;

	cgreen_look();
	memset(&r, 0, sizeof r);
	switch (c->in[0].u) {
	case DEVRES_DEVICE:
		if (dev >= drv_ndev)	/* check_call refused a negative one */
			return CUDA_ERROR_INVALID_DEVICE;
		rc = cgreen.devres == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.devres(dev, &r, type);
		break;
	case DEVRES_CTX:
		if ((ctx = cuda_ctx(c, c->in[2].u, &rc)) == NULL)
			return rc;
		rc = cgreen.ctxres == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.ctxres(ctx->h, &r, type);
		break;
	case DEVRES_GREEN:
		if ((ctx = cuda_ctx(c, c->in[2].u, &rc)) == NULL)
			return rc;
		if (ctx->green == NULL)
			return CUDA_ERROR_INVALID_CONTEXT;
		rc = cgreen.greenres == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.greenres(ctx->green, &r, type);
		break;
	default:
		CTX(c, 2);
		STREAM(c, 3, s);
		rc = cgreen.streamres == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.streamres(s, &r, type);
	}
	if (rc != CUDA_SUCCESS)
		return rc;
	pw_bytes(&c->blob, &r, sizeof r);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * in: op, groups, flags, minimum count, input, group parameters, wanted
 * -> groups, results, remainder, group parameters
 */
static int
c_sm_split(struct rcall *c)
{
	CUdevResource in, rem, *res = NULL;
	unsigned n = (unsigned)c->in[1].u, want = (unsigned)c->in[6].u;
	uint32_t np = c->in[5].len;
	size_t off;
	void *params = NULL;
	CUresult rc;

	cgreen_look();
	if ((c->in[0].u == SPLIT_BY_COUNT && cgreen.bycount == NULL) ||
	    (c->in[0].u == SPLIT_STRUCTURED && cgreen.split == NULL))
		return CUDA_ERROR_NOT_SUPPORTED;
	memcpy(&in, c->in[4].p, sizeof in);
	memset(&rem, 0, sizeof rem);
	/* One at least: a result array of none is not the driver's query. */
	if ((want & SPLIT_WANT_RESULT) &&
	    (res = calloc(n > 0 ? n : 1, sizeof *res)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (np > 0) {
		if ((params = malloc(np)) == NULL) {
			free(res);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(params, c->in[5].p, np);
	}
	if (c->in[0].u == SPLIT_BY_COUNT)
		rc = cgreen.bycount(res, &n, &in, (want & SPLIT_WANT_REMAINDER) ?
		    &rem : NULL, (unsigned)c->in[2].u, (unsigned)c->in[3].u);
	else
		rc = cgreen.split(res, n, &in, (want & SPLIT_WANT_REMAINDER) ?
		    &rem : NULL, (unsigned)c->in[2].u, params);
	if (rc == CUDA_SUCCESS && res != NULL && n > c->in[1].u)
		rc = CUDA_ERROR_UNKNOWN;	/* more than the array holds */
	if (rc != CUDA_SUCCESS) {
		free(res);
		free(params);
		return rc;
	}
	/* One blob, pointed into once it is whole. */
	c->out[0].u = n;
	if (res != NULL)
		pw_bytes(&c->blob, res, (size_t)n * sizeof *res);
	c->out[1].len = (uint32_t)c->blob.len;
	if (want & SPLIT_WANT_REMAINDER)
		pw_bytes(&c->blob, &rem, sizeof rem);
	c->out[2].len = (uint32_t)c->blob.len - c->out[1].len;
	off = c->blob.len;
	if (np > 0)
		pw_bytes(&c->blob, params, np);
	c->out[3].len = np;
	c->out[1].p = c->blob.p;
	c->out[2].p = (const char *)c->blob.p + c->out[1].len;
	c->out[3].p = (const char *)c->blob.p + off;
	free(res);
	free(params);
	return CUDA_SUCCESS;
}

/* in: id, resources */
static int
c_res_desc(struct rcall *c)
{
	CUdevResource *r = NULL;
	CUdevResourceDesc d;
	unsigned n = c->in[1].len / RPC_DEVRES_LEN;
	CUresult rc;

	cgreen_look();
	if (cgreen.desc == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (htab_get(&c->cl->objs, c->in[0].u) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (n > 0) {
		if ((r = malloc((size_t)n * sizeof *r)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(r, c->in[1].p, (size_t)n * sizeof *r);
	}
	rc = cgreen.desc(&d, r, n);
	free(r);
	if (rc != CUDA_SUCCESS)
		return rc;
	/* Nothing frees a descriptor: it is the driver's until exit. */
	if (robj_new(c->cl, c->in[0].u, RK_RESDESC, d) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* in: ctx, descriptor, device, flags */
static int
c_green_create(struct rcall *c)
{
	struct robj *d = robj_get(c->cl, c->in[1].u, RK_RESDESC), *o;
	CUgreenCtx g;
	CUcontext ctx;
	CUresult rc;
	int dev = (int)c->in[2].u;

	cgreen_look();
	if (cgreen.create == NULL || cgreen.destroy == NULL ||
	    cgreen.toctx == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (d == NULL || htab_get(&c->cl->objs, c->in[0].u) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev >= drv_ndev)	/* check_call refused a negative one */
		return CUDA_ERROR_INVALID_DEVICE;
	if ((rc = cgreen.create(&g, d->h, dev, (unsigned)c->in[3].u)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((rc = cgreen.toctx(&ctx, g)) != CUDA_SUCCESS) {
		cgreen.destroy(g);
		return rc;
	}
	if ((o = robj_new(c->cl, c->in[0].u, RK_CTX, ctx)) == NULL) {
		cgreen.destroy(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->device = dev;
	o->refs = 1;
	o->green = g;
	return CUDA_SUCCESS;
}

/* in: ctx (a green context's) */
static int
c_green_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);
	CUresult rc;

	if (o == NULL || o->h == NULL || o->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	rc = cgreen_end(c->cl, o);
	cuda_forget(c->cl, o);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

/* in: ctx (a green context's), id, flags, priority */
static int
c_green_stream(struct rcall *c)
{
	struct robj *ctx, *o;
	CUstream s;
	CUresult rc;

	cgreen_look();
	if (cgreen.stream == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (ctx->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((rc = cgreen.stream(&s, ctx->green, (unsigned)c->in[2].u,
	    (int)(int64_t)c->in[3].u)) != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, RK_STREAM, s)) == NULL) {
		drv.StreamDestroy(s);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	o->flags = (uint32_t)c->in[2].u;
	o->prio = (int32_t)(int64_t)c->in[3].u;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, op, event, a, b.  Entry points of CUDA 11 and 12.5 that an
 * older driver lacks are looked up when first used.
 */
static int
c_ctx_op(struct rcall *c)
{
	static CUresult (*record)(CUcontext, CUevent), (*wait)(CUcontext,
	    CUevent), (*reset)(void), (*flush)(CUflushGPUDirectRDMAWritesTarget,
	    CUflushGPUDirectRDMAWritesScope);
	static int looked;
	struct robj *ctx, *e = NULL;
	CUresult rc;

	if (!looked) {
		record = (__typeof__(record))drv_opt("cuCtxRecordEvent", 12050);
		wait = (__typeof__(wait))drv_opt("cuCtxWaitEvent", 12050);
		reset = (__typeof__(reset))drv_opt(
		    "cuCtxResetPersistingL2Cache", 11000);
		flush = (__typeof__(flush))drv_opt("cuFlushGPUDirectRDMAWrites",
		    11030);
		looked = 1;
	}
	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((c->in[1].u == CTXOP_GREEN_RECORD ||
	    c->in[1].u == CTXOP_GREEN_WAIT) && ctx->green == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c->in[1].u != CTXOP_RESET_L2 && c->in[1].u != CTXOP_FLUSH &&
	    (e = robj_get(c->cl, c->in[2].u, RK_EVENT)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	switch (c->in[1].u) {
	case CTXOP_GREEN_RECORD:
		cgreen_look();
		return cgreen.record == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.record(ctx->green, e->h);
	case CTXOP_GREEN_WAIT:
		cgreen_look();
		return cgreen.wait == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    cgreen.wait(ctx->green, e->h);
	case CTXOP_RECORD:
		return record == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    record(ctx->h, e->h);
	case CTXOP_WAIT:
		return wait == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    wait(ctx->h, e->h);
	case CTXOP_RESET_L2:
		return reset == NULL ? CUDA_ERROR_NOT_SUPPORTED : reset();
	default:
		return flush == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    flush((CUflushGPUDirectRDMAWritesTarget)c->in[3].u,
		    (CUflushGPUDirectRDMAWritesScope)c->in[4].u);
	}
}

/* in: which, device, arguments -> answer (rpc.h's DEVQ_*). */
static int
c_dev_query(struct rcall *c)
{
	static CUresult (*tex1d)(size_t *, CUarray_format, unsigned, CUdevice),
	    (*p2p)(unsigned *, const CUatomicOperation *, unsigned, CUdevice,
	    CUdevice), (*host)(unsigned *, const CUatomicOperation *, unsigned,
	    CUdevice);
	static int looked;
	CUatomicOperation op[RPC_ATOMIC_OPS_MAX];
	unsigned cap[RPC_ATOMIC_OPS_MAX], n, i;
	struct pr r;
	uint32_t fmt, ch;
	int32_t peer = 0;
	size_t w;
	CUresult rc;
	int dev = (int)c->in[1].u;

	if (!looked) {
		tex1d = (__typeof__(tex1d))drv_opt(
		    "cuDeviceGetTexture1DLinearMaxWidth", 11010);
		p2p = (__typeof__(p2p))drv_opt(
		    "cuDeviceGetP2PAtomicCapabilities", 13000);
		host = (__typeof__(host))drv_opt(
		    "cuDeviceGetHostAtomicCapabilities", 13000);
		looked = 1;
	}
	if (dev >= drv_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	pr_init(&r, c->in[2].p, c->in[2].len);
	if (c->in[0].u == DEVQ_TEX1D) {
		fmt = pr_u32(&r);
		ch = pr_u32(&r);
		if (tex1d == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		if ((rc = tex1d(&w, (CUarray_format)fmt, ch, dev)) !=
		    CUDA_SUCCESS)
			return rc;
		pw_u64(&c->blob, w);
	} else {
		if (c->in[0].u == DEVQ_P2P_ATOMIC)
			peer = (int32_t)pr_u32(&r);
		for (n = 0; r.len - r.off >= 4; n++)
			op[n] = (CUatomicOperation)pr_u32(&r);
		if ((c->in[0].u == DEVQ_P2P_ATOMIC ? (void *)p2p : (void *)host)
		    == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = c->in[0].u == DEVQ_P2P_ATOMIC ? p2p(cap, op, n, dev, peer) :
		    host(cap, op, n, dev);
		if (rc != CUDA_SUCCESS)
			return rc;
		for (i = 0; i < n; i++)
			pw_u32(&c->blob, cap[i]);
	}
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* in: ctx, stream, callback id: the driver's host function notes it. */
static int
c_host_func(struct rcall *c)
{
	struct chost *h;
	CUstream s;

	CTX(c, 0);
	STREAM(c, 1, s);
	if ((h = chost_get(c->cl, c->in[2].u)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return drv.LaunchHostFunc(s, host_reached, h);
}

static int
c_event_sync(struct rcall *c)
{
	struct robj *e = robj_get(c->cl, c->in[0].u, RK_EVENT);
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The streams asked about in their context, made current. */
	if ((rc = drv.EventSynchronize(e->h)) == CUDA_SUCCESS &&
	    e->ctx != NULL && e->ctx->h != NULL &&
	    drv.CtxSetCurrent(e->ctx->h) == CUDA_SUCCESS)
		idle_report(c, e->ctx, 0, cuda_capturing, cuda_idle);
	return rc;
}

static int
c_event_query(struct rcall *c)
{
	struct robj *e = robj_get(c->cl, c->in[0].u, RK_EVENT);

	if (e == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return drv.EventQuery(e->h);
}

static int
c_event_elapsed(struct rcall *c)
{
	struct robj *a = robj_get(c->cl, c->in[0].u, RK_EVENT);
	struct robj *b = robj_get(c->cl, c->in[1].u, RK_EVENT);
	float ms;
	uint32_t bits;
	CUresult rc;

	if (a == NULL || b == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = drv.EventElapsedTime(&ms, a->h, b->h)) != CUDA_SUCCESS)
		return rc;
	memcpy(&bits, &ms, sizeof bits);
	c->out[0].u = bits;
	return CUDA_SUCCESS;
}

static struct robj *
cuda_func(struct rcall *c, uint64_t id)
{
	struct robj *f = robj_get(c->cl, id, RK_FUNC);

	return f != NULL ? f : robj_get(c->cl, id, RK_KERNEL);
}

/* An attribute set on f or a kernel: on the driver's handle. */
static CUresult
cuda_set_attr(struct robj *f, int attr, int value)
{
	if (f->kind == RK_KERNEL)
		return drv.KernelSetAttribute((CUfunction_attribute)attr,
		    value, f->h, f->ctx ? f->ctx->device : 0);
	return drv.FuncSetAttribute(f->h, (CUfunction_attribute)attr, value);
}

static CUresult
cuda_set_cache(struct robj *f, int cache)
{
	if (f->kind == RK_KERNEL)
		return drv.KernelSetCacheConfig(f->h, (CUfunc_cache)cache,
		    f->ctx ? f->ctx->device : 0);
	return drv.FuncSetCacheConfig(f->h, (CUfunc_cache)cache);
}

/* Notes on f that the client set attr to value, for migration; -1 OOM. */
static int
cuda_note_attr(struct robj *f, int32_t attr, int32_t value)
{
	struct rattr *n;
	uint32_t i;

	for (i = 0; i < f->nattrs; i++)
		if (f->attrs[i].attr == attr) {
			f->attrs[i].value = value;
			return 0;
		}
	if (f->nattrs >= CU_FUNC_ATTRIBUTE_MAX ||
	    (n = realloc(f->attrs, (f->nattrs + 1) * sizeof *n)) == NULL)
		return -1;
	f->attrs = n;
	f->attrs[f->nattrs].attr = attr;
	f->attrs[f->nattrs].value = value;
	f->nattrs++;
	return 0;
}

static int
c_func_set_attr(struct rcall *c)
{
	struct robj *f = cuda_func(c, c->in[0].u);
	int attr = (int)c->in[1].u, value = (int)(int64_t)c->in[2].u;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = cuda_set_attr(f, attr, value)) == CUDA_SUCCESS &&
	    cuda_note_attr(f, attr, value) == -1)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return rc;
}

static int
c_func_set_cache(struct rcall *c)
{
	struct robj *f = cuda_func(c, c->in[0].u);
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = cuda_set_cache(f, (int)c->in[1].u)) == CUDA_SUCCESS)
		f->cache = (int32_t)c->in[1].u + 1;
	return rc;
}

static int
c_occupancy(struct rcall *c)
{
	struct robj *f = cuda_func(c, c->in[0].u);
	int n;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->ctx != NULL && f->ctx->h != NULL)
		drv.CtxSetCurrent(f->ctx->h);
	if ((rc = drv.Occupancy(&n, f->h, (int)c->in[1].u, (size_t)c->in[2].u,
	    (unsigned)c->in[3].u)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = (uint32_t)n;
	return CUDA_SUCCESS;
}

/* in: function, blocks, block size -> bytes */
static int
c_occ_smem(struct rcall *c)
{
	struct robj *f = cuda_func(c, c->in[0].u);
	size_t n;
	CUresult rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->ctx != NULL && f->ctx->h != NULL)
		drv.CtxSetCurrent(f->ctx->h);
	if ((rc = drv.OccSmem(&n, f->h, (int)c->in[1].u, (int)c->in[2].u)) !=
	    CUDA_SUCCESS)
		return rc;
	c->out[0].u = n;
	return CUDA_SUCCESS;
}

/*
 * in: ctx.  out: cuBLASLt's TPC map of the context's device, from the real
 * driver's export table 1734dc26 (dark-api.md 6.1): slot [4] with the
 * context current gives two malloc'd arrays, one byte per TPC (SM count
 * / 2), which slot [13] frees once copied.
 */
static int
c_tpc_map(struct rcall *c)
{
	static const CUuuid id = { { 0x17, 0x34, 0xdc, 0x26, (char)0x80, 0x0d,
	    0x47, 0x45, (char)0x87, 0x26, (char)0xc0, (char)0xf1, (char)0xe7,
	    (char)0xdd, (char)0x8b, (char)0xca } };
	CUresult (*get_table)(const void **, const CUuuid *);
	CUresult (*map)(uint8_t **, uint8_t **);
	CUresult (*unmap)(uint8_t *, uint8_t *);
	uint8_t *vgpc = NULL, *mtpc = NULL;
	const void *const *table;
	const void *t = NULL;
	CUdevice dev;
	CUresult rc;
	int sms = 0;

	CTX(c, 0);
	get_table = (__typeof__(get_table))dlsym(drv.h, "cuGetExportTable");
	if (get_table == NULL || get_table(&t, &id) != CUDA_SUCCESS ||
	    t == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	table = t;
	if ((size_t)table[0] < 14 * sizeof(void *))
		return CUDA_ERROR_NOT_SUPPORTED;
	map = (__typeof__(map))table[4];
	unmap = (__typeof__(unmap))table[13];
	if (map == NULL || unmap == NULL ||
	    drv.CtxGetDevice(&dev) != CUDA_SUCCESS ||
	    drv.DeviceGetAttribute(&sms,
	    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
	    sms < 2 || sms > 8192)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((rc = map(&vgpc, &mtpc)) != CUDA_SUCCESS)
		return rc;
	if (vgpc == NULL || mtpc == NULL) {
		unmap(vgpc, mtpc);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pw_bytes(&c->blob, vgpc, (size_t)sms / 2);
	pw_bytes(&c->blob, mtpc, (size_t)sms / 2);
	unmap(vgpc, mtpc);
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)sms / 2;
	c->out[1].p = c->blob.p + sms / 2;
	c->out[1].len = (uint32_t)sms / 2;
	return CUDA_SUCCESS;
}

/*
 * The driver's tensor-map encoders, found once by name: each has one ABI
 * (cuBLASLt finds them the same way), and a driver before 12.8 has no
 * wide im2col encoder, which then alone is CUDA_ERROR_NOT_SUPPORTED.
 */
static struct {
	__typeof__(cuTensorMapEncodeTiled)	*tiled;
	__typeof__(cuTensorMapEncodeIm2col)	*im2col;
	__typeof__(cuTensorMapEncodeIm2colWide)	*wide;
	__typeof__(cuTensorMapReplaceAddress)	*replace;
} tmap_fn;
static pthread_once_t tmap_once = PTHREAD_ONCE_INIT;

static void
tmap_find(void)
{
	tmap_fn.tiled = (__typeof__(tmap_fn.tiled))dlsym(drv.h,
	    "cuTensorMapEncodeTiled");
	tmap_fn.im2col = (__typeof__(tmap_fn.im2col))dlsym(drv.h,
	    "cuTensorMapEncodeIm2col");
	tmap_fn.wide = (__typeof__(tmap_fn.wide))dlsym(drv.h,
	    "cuTensorMapEncodeIm2colWide");
	tmap_fn.replace = (__typeof__(tmap_fn.replace))dlsym(drv.h,
	    "cuTensorMapReplaceAddress");
}

/*
 * in: ctx, which, the client's map address modulo 128, the map's bytes,
 * the encoder's arguments (rpc.h).  out: the map.  Every array the driver
 * reads is ours, as long as the rank that rpc_tmap_dec checked says; the
 * client's global address is a value the driver encodes, never a pointer
 * it follows.  The map is encoded in a buffer of ours at the client's
 * offset from 128-byte alignment, so that the driver judges the alignment
 * of the client's map; it starts with the client's bytes, since the driver
 * may leave some as they were.
 */
static int
c_tmap_encode(struct rcall *c)
{
	union {
		CUtensorMap	 m[2];		/* the map at any offset */
		unsigned char	 b[2 * TMAP_BYTES];
	} buf;
	struct rpc_tmap t;
	void *m, *a;
	CUresult rc;

	/* check_call passed it: decoded again, for its fields. */
	if (rpc_tmap_dec((uint32_t)c->in[1].u, c->in[4].p, c->in[4].len, &t) ==
	    -1)
		return CUDA_ERROR_INVALID_VALUE;
	CTX(c, 0);
	pthread_once(&tmap_once, tmap_find);
	/* Never dereferenced as a CUtensorMap here: it may be misaligned. */
	m = buf.b + c->in[2].u;
	memcpy(m, c->in[3].p, TMAP_BYTES);
	a = (void *)(uintptr_t)t.addr;
	switch (t.which) {
	case TMAP_TILED:
		if (tmap_fn.tiled == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = tmap_fn.tiled(m, (CUtensorMapDataType)t.dtype, t.rank, a,
		    t.dim, t.stride, t.box, t.estride,
		    (CUtensorMapInterleave)t.interleave,
		    (CUtensorMapSwizzle)t.swizzle,
		    (CUtensorMapL2promotion)t.l2,
		    (CUtensorMapFloatOOBfill)t.oobfill);
		break;
	case TMAP_IM2COL:
		if (tmap_fn.im2col == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = tmap_fn.im2col(m, (CUtensorMapDataType)t.dtype, t.rank, a,
		    t.dim, t.stride, t.lower, t.upper, t.channels, t.pixels,
		    t.estride, (CUtensorMapInterleave)t.interleave,
		    (CUtensorMapSwizzle)t.swizzle,
		    (CUtensorMapL2promotion)t.l2,
		    (CUtensorMapFloatOOBfill)t.oobfill);
		break;
	case TMAP_IM2COL_WIDE:
		if (tmap_fn.wide == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = tmap_fn.wide(m, (CUtensorMapDataType)t.dtype, t.rank, a,
		    t.dim, t.stride, t.lower[0], t.upper[0], t.channels,
		    t.pixels, t.estride, (CUtensorMapInterleave)t.interleave,
		    (CUtensorMapIm2ColWideMode)t.mode,
		    (CUtensorMapSwizzle)t.swizzle,
		    (CUtensorMapL2promotion)t.l2,
		    (CUtensorMapFloatOOBfill)t.oobfill);
		break;
	default:	/* TMAP_REPLACE: rpc_tmap_dec knows no other */
		if (tmap_fn.replace == NULL)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = tmap_fn.replace(m, a);
		break;
	}
	if (rc != CUDA_SUCCESS)
		return rc;
	pw_bytes(&c->blob, m, TMAP_BYTES);
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].p = c->blob.p;
	c->out[0].len = TMAP_BYTES;
	return CUDA_SUCCESS;
}

/*
 * Launch attributes from a blob (each a u32 id and the 64 bytes of its
 * value) into attrs[CHECK_ATTRS_MAX]: their number, or 17 and *rc.
 * check_call passed the blob (check_attrs): its ids are ones we take
 * from a client, whose values hold no handle or pointer.
 */
static unsigned
cuda_attrs(const struct rpc_val *v, CUlaunchAttribute *attrs, int *rc)
{
	struct pr r;
	int i, n;

	_Static_assert(sizeof attrs[0].value == CHECK_ATTR_LEN - 4,
	    "a launch attribute's value");
	if ((n = check_attrs(v, rc)) == -1)
		return 17;
	memset(attrs, 0, CHECK_ATTRS_MAX * sizeof *attrs);
	pr_init(&r, v->p, v->len);
	for (i = 0; i < n; i++) {
		attrs[i].id = (CUlaunchAttributeID)pr_u32(&r);
		pr_bytes(&r, &attrs[i].value, sizeof attrs[i].value);
	}
	return (unsigned)n;
}

/* in: ctx, function, grid[3], block[3], shmem, stream, attributes, params */
static int
c_launch_ex(struct rcall *c)
{
	CUlaunchAttribute attrs[CHECK_ATTRS_MAX];
	CUlaunchConfig cfg;
	struct robj *f;
	CUstream s;
	void *argp[1024];
	const uint8_t *args = c->in[11].p;
	unsigned n;
	uint32_t i;
	int rc;

	CTX(c, 0);
	STREAM(c, 9, s);
	if ((f = cuda_func(c, c->in[1].u)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->nparams > 1024 || c->in[11].len != f->argbytes)
		return CUDA_ERROR_INVALID_VALUE;
	if ((n = cuda_attrs(&c->in[10], attrs, &rc)) > CHECK_ATTRS_MAX)
		return rc;
	for (i = 0; i < f->nparams; i++)
		argp[i] = (void *)(args + f->offset[i]);
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = (unsigned)c->in[2].u;
	cfg.gridDimY = (unsigned)c->in[3].u;
	cfg.gridDimZ = (unsigned)c->in[4].u;
	cfg.blockDimX = (unsigned)c->in[5].u;
	cfg.blockDimY = (unsigned)c->in[6].u;
	cfg.blockDimZ = (unsigned)c->in[7].u;
	cfg.sharedMemBytes = (unsigned)c->in[8].u;
	cfg.hStream = s;
	cfg.attrs = n > 0 ? attrs : NULL;
	cfg.numAttrs = n;
	if ((rc = drv.LaunchKernelEx(&cfg, f->h, argp, NULL)) == CUDA_SUCCESS)
		knode_captured(c, s);
	return rc;
}

/*
 * in: what (0: max active clusters, 1: max potential cluster size),
 * function, grid[3], block[3], shmem, attributes (each a u32 id and the
 * 64 bytes of its value) -> count
 */
static int
c_occ_clusters(struct rcall *c)
{
	CUlaunchAttribute attrs[CHECK_ATTRS_MAX];
	CUlaunchConfig cfg;
	struct robj *f = cuda_func(c, c->in[1].u);
	unsigned n;
	int v, rc;

	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(&cfg, 0, sizeof cfg);
	if ((n = cuda_attrs(&c->in[9], attrs, &rc)) > CHECK_ATTRS_MAX)
		return rc;
	cfg.gridDimX = (unsigned)c->in[2].u;
	cfg.gridDimY = (unsigned)c->in[3].u;
	cfg.gridDimZ = (unsigned)c->in[4].u;
	cfg.blockDimX = (unsigned)c->in[5].u;
	cfg.blockDimY = (unsigned)c->in[6].u;
	cfg.blockDimZ = (unsigned)c->in[7].u;
	cfg.sharedMemBytes = (unsigned)c->in[8].u;
	cfg.attrs = n > 0 ? attrs : NULL;
	cfg.numAttrs = n;
	if (f->ctx != NULL && f->ctx->h != NULL)
		drv.CtxSetCurrent(f->ctx->h);
	rc = c->in[0].u == 0 ? drv.OccClusters(&v, f->h, &cfg) :
	    drv.OccClusterSize(&v, f->h, &cfg);
	if (rc == CUDA_SUCCESS)
		c->out[0].u = (uint32_t)v;
	return rc;
}

/* ---- graphs (issue 24) ------------------------------------------------ */

/*
 * A capture runs here in relaxed mode whatever the program asked: every
 * thread of the client is this one thread, so the modes' rules between
 * threads are the client's to apply (lib/client/graph.c).  The capture's
 * graph is known by the client's id from its start; the stream keeps it
 * in cap until the capture ends.
 */
static int
c_capture_begin(struct rcall *c)
{
	struct robj *so, *g;
	CUstreamCaptureStatus st;
	cuuint64_t cid;
	CUgraph h;
	CUstream s;
	CUresult rc;

	CTX(c, 0);
	STREAM(c, 1, s);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = drv.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED)) !=
	    CUDA_SUCCESS)
		return rc;
	h = NULL;
	if ((rc = drv.StreamGetCaptureInfo(s, &st, &cid, &h, NULL, NULL)) !=
	    CUDA_SUCCESS || h == NULL ||
	    (g = robj_new(c->cl, c->in[3].u, RK_GRAPH, h)) == NULL) {
		if (drv.StreamEndCapture(s, &h) == CUDA_SUCCESS && h != NULL)
			drv.GraphDestroy(h);
		return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
	}
	g->cap = so;
	so->cap = g;
	/* Listed: no stream is asked about while it captures. */
	rclient_touch(c->cl, so);
	return CUDA_SUCCESS;
}

static int	c_graph_nodes(struct rcall *);

static int
c_capture_end(struct rcall *c)
{
	struct robj *so, *g = NULL;
	uint64_t id;
	size_t i = 0;
	void *v;
	CUgraph h = NULL;
	CUstream s;
	CUresult rc;

	CTX(c, 0);
	STREAM(c, 1, s);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) != NULL)
		g = so->cap;
	rc = drv.StreamEndCapture(s, &h);
	if (g == NULL)
		return rc;
	so->cap = NULL;
	g->cap = NULL;
	/* A graph captured into stays the program's, whatever the end. */
	if (g->capto) {
		g->capto = 0;
		return rc;
	}
	if (rc != CUDA_SUCCESS || h != g->h || (c->in[2].u & 1) == 0) {
		if (rc == CUDA_SUCCESS && h != NULL)
			drv.GraphDestroy(h);
		/* Its id goes (the driver freed a failed capture's graph). */
		while (htab_next(&c->cl->objs, &i, &id, &v))
			if (v == g) {
				robj_del(c->cl, id);
				break;
			}
		return rc;
	}
	/* The new graph's listing, where the client asked for it. */
	if (c->in[2].u & 2)
		graph_listing_put(c, c_graph_nodes, robj_id_of(c->cl, g->h,
		    RK_GRAPH));
	return rc;
}

static int
c_graph_create(struct rcall *c)
{
	CUgraph h;
	CUresult rc;

	if ((rc = drv.GraphCreate(&h, (unsigned)c->in[1].u)) != CUDA_SUCCESS)
		return rc;
	if (robj_new(c->cl, c->in[0].u, RK_GRAPH, h) == NULL) {
		drv.GraphDestroy(h);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static void	cond_unname(struct rclient *, struct robj *, uint64_t);
static int	node_in(CUgraph, uint64_t);

static int
c_graph_destroy(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	CUresult rc;

	if (g == NULL || g->parent != NULL)	/* a body is its node's */
		return CUDA_ERROR_INVALID_VALUE;
	if (g->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;	/* still captured into */
	cond_unname(c->cl, g, 0);
	knode_drop(c->cl, g->h);
	rmem_drop(c->cl, g);		/* its allocation nodes' memory */
	rc = drv.GraphDestroy(g->h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

static int
c_graph_clone(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	CUgraph h;
	CUresult rc;

	if (g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.GraphClone(&h, g->h)) != CUDA_SUCCESS)
		return rc;
	if (robj_new(c->cl, c->in[0].u, RK_GRAPH, h) == NULL) {
		drv.GraphDestroy(h);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static int
c_graph_instantiate(struct rcall *c)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS p;
	struct robj *ctx, *g, *o;
	CUgraphExec e;
	CUresult rc;

	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((g = robj_get(c->cl, c->in[2].u, RK_GRAPH)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&p, 0, sizeof p);
	p.flags = c->in[3].u;
	STREAM(c, 4, p.hUploadStream);
	if ((rc = drv.GraphInstantiateWithParams(&e, g->h, &p)) !=
	    CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[1].u, RK_GEXEC, e)) == NULL) {
		drv.GraphExecDestroy(e);
		return CUDA_ERROR_INVALID_VALUE;
	}
	o->ctx = ctx;
	/* Kept for a one-way update refused (c_gexec_update). */
	o->flags = (uint32_t)(p.flags & ~(cuuint64_t)
	    CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
	return CUDA_SUCCESS;
}

static int
c_gexec_destroy(struct rcall *c)
{
	struct robj *e = robj_get(c->cl, c->in[0].u, RK_GEXEC);
	CUresult rc;

	if (e == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	rc = drv.GraphExecDestroy(e->h);
	robj_del(c->cl, c->in[0].u);
	return rc;
}

/* R_GRAPH_LAUNCH and R_GRAPH_UPLOAD: ctx, exec, stream. */
static int
c_graph_launch(struct rcall *c)
{
	struct robj *e;
	CUstream s;

	CTX(c, 0);
	if ((e = robj_get(c->cl, c->in[1].u, RK_GEXEC)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	STREAM(c, 2, s);
	if (c->d->type == R_GRAPH_UPLOAD)
		return drv.GraphUpload(e->h, s);
	return drv.GraphLaunch(e->h, s);
}

static int
c_gexec_update(struct rcall *c)
{
	CUgraphExecUpdateResultInfo info;
	struct robj *e = robj_get(c->cl, c->in[0].u, RK_GEXEC);
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	CUresult rc;

	memset(&info, 0, sizeof info);
	if (e == NULL || g == NULL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		info.result = CU_GRAPH_EXEC_UPDATE_ERROR;
	} else if ((rc = drv.CtxSetCurrent(e->ctx->h)) == CUDA_SUCCESS)
		rc = drv.GraphExecUpdate(e->h, g->h, &info);
	c->out[0].u = (uint32_t)rc;
	c->out[1].u = (uint32_t)info.result;
	/*
	 * One-way: the client told the program the update succeeded, having
	 * seen the new graph keep the exec's shape.  Refused all the same
	 * (a shape the client predicted from earlier captures that this one
	 * did not keep), the exec is instantiated anew from the graph, as
	 * the program does after a refusal: it runs the graph it was given.
	 * What cannot be mended is the call's error, reported at the
	 * client's next call that waits.
	 */
	if (c->oneway && e != NULL && g != NULL && (rc != CUDA_SUCCESS ||
	    info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) &&
	    rc != CUDA_ERROR_INVALID_CONTEXT) {
		CUDA_GRAPH_INSTANTIATE_PARAMS p;
		CUgraphExec h;

		memset(&p, 0, sizeof p);
		p.flags = e->flags;
		if ((rc = drv.GraphInstantiateWithParams(&h, g->h, &p)) ==
		    CUDA_SUCCESS) {
			drv.GraphExecDestroy(e->h);
			e->h = h;
			log_debug("client %s: a one-way graph update refused "
			    "(%d): the exec instantiated anew", c->cl->addr,
			    (int)info.result);
		}
		return rc;
	}
	if (c->oneway)
		return rc;
	return CUDA_SUCCESS;
}

/*
 * Edges with their data (CUDA 12.3): a captured kernel launched with
 * programmatic serialization (cuBLAS's, on sm_90) leaves edges whose data
 * is not the default, and the calls before edge data answer
 * CUDA_ERROR_LOSSY_QUERY for any graph that has one.
 */
static struct {
	CUresult (*get)(CUgraph, CUgraphNode *, CUgraphNode *,
	    CUgraphEdgeData *, size_t *);
	CUresult (*add)(CUgraph, const CUgraphNode *, const CUgraphNode *,
	    const CUgraphEdgeData *, size_t);
	CUresult (*del)(CUgraph, const CUgraphNode *, const CUgraphNode *,
	    const CUgraphEdgeData *, size_t);
} edv2;
static pthread_once_t	 edv2_once = PTHREAD_ONCE_INIT;

static void
edv2_load(void)
{
	edv2.get = (__typeof__(edv2.get))drv_opt("cuGraphGetEdges", 12030);
	edv2.add = (__typeof__(edv2.add))drv_opt("cuGraphAddDependencies",
	    12030);
	edv2.del = (__typeof__(edv2.del))drv_opt("cuGraphRemoveDependencies",
	    12030);
}

/* g's edges, and their data where data is not NULL (zeroes before 12.3). */
static CUresult
edges_get(CUgraph g, CUgraphNode *from, CUgraphNode *to,
    CUgraphEdgeData *data, size_t *n)
{
	pthread_once(&edv2_once, edv2_load);
	if (edv2.get != NULL)
		return edv2.get(g, from, to, data, n);
	if (data != NULL)
		memset(data, 0, *n * sizeof *data);
	return drv.GraphGetEdges(g, from, to, n);
}

static int
c_graph_count(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	size_t n = 0;
	CUresult rc;

	if (g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[1].u == 0)
		rc = drv.GraphGetNodes(g->h, NULL, &n);
	else if (c->in[1].u == 1)
		rc = drv.GraphGetRootNodes(g->h, NULL, &n);
	else
		rc = edges_get(g->h, NULL, NULL, NULL, &n);
	c->out[0].u = n;
	return rc;
}

/* The driver writes the dot file here; its text goes to the client. */
static int
c_graph_dot(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	char path[] = "/tmp/gleam-dot.XXXXXX";
	FILE *f;
	char buf[8192];
	size_t n;
	CUresult rc;
	int fd;

	if (g == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((fd = mkstemp(path)) == -1)
		return CUDA_ERROR_OPERATING_SYSTEM;
	close(fd);
	rc = drv.GraphDebugDotPrint(g->h, path, (unsigned)c->in[1].u);
	if (rc == CUDA_SUCCESS && (f = fopen(path, "r")) != NULL) {
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			pw_bytes(&c->blob, buf, n);
		fclose(f);
	} else if (rc == CUDA_SUCCESS)
		rc = CUDA_ERROR_OPERATING_SYSTEM;
	unlink(path);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return rc;
}

/* Graphs outlive contexts in the driver: a gone client's go first. */
static void
cuda_graphs_free(struct rclient *cl)
{
	size_t i = 0;
	uint64_t id;
	void *v;
	struct robj *o;
	CUgraph h;

	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		if (o->kind == RK_STREAM && o->cap != NULL && o->ctx != NULL &&
		    o->ctx->h != NULL &&
		    drv.CtxSetCurrent(o->ctx->h) == CUDA_SUCCESS) {
			h = NULL;
			if (drv.StreamEndCapture(o->h, &h) == CUDA_SUCCESS &&
			    h != NULL)
				drv.GraphDestroy(h);
			((struct robj *)o->cap)->h = NULL;
			o->cap = NULL;
		} else if (o->kind == RK_GEXEC && o->h != NULL) {
			drv.GraphExecDestroy(o->h);
			o->h = NULL;
		}
	}
	i = 0;
	while (htab_next(&cl->objs, &i, &id, &v)) {
		o = v;
		/* A conditional node's body goes with its node. */
		if (o->kind == RK_GRAPH && o->h != NULL && o->cap == NULL &&
		    o->parent == NULL) {
			drv.GraphDestroy(o->h);
			o->h = NULL;
		}
	}
}

/* ---- graph nodes (issue 24) ------------------------------------------- */

/* The index of node h in v[0..n), or n. */
static size_t
node_index(const CUgraphNode *v, size_t n, CUgraphNode h)
{
	size_t i;

	for (i = 0; i < n && v[i] != h; i++)
		;
	return i;
}

/*
 * in: graph -> u32 nodes (u64 handle, u32 type each), u32 roots (u32
 * index each), u32 edges (u32 from, u32 to each), in the driver's orders.
 */
static int	c_knode_get(struct rcall *);

static int
c_graph_nodes(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	CUgraphNode *v = NULL, *r = NULL, *from = NULL, *to = NULL;
	static const CUgraphEdgeData zero;
	CUgraphEdgeData *ed = NULL;
	CUgraphNodeType type;
	uint64_t *hs = NULL;
	uint32_t *ty = NULL;
	size_t n = 0, nr = 0, ne = 0, i, special = 0;
	CUresult rc;

	if (g == NULL) {
		log_info("graphNodes: no graph %llu",
		    (unsigned long long)c->in[0].u);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((rc = drv.GraphGetNodes(g->h, NULL, &n)) != CUDA_SUCCESS ||
	    (rc = drv.GraphGetRootNodes(g->h, NULL, &nr)) != CUDA_SUCCESS ||
	    (rc = edges_get(g->h, NULL, NULL, NULL, &ne)) != CUDA_SUCCESS) {
		log_info("graphNodes: graph %llu%s: the driver's counts: %d",
		    (unsigned long long)c->in[0].u, g->parent != NULL ?
		    " (a child graph node's)" : "", (int)rc);
		return rc;
	}
	if ((v = calloc(n + 1, sizeof *v)) == NULL ||
	    (r = calloc(nr + 1, sizeof *r)) == NULL ||
	    (from = calloc(ne + 1, sizeof *from)) == NULL ||
	    (to = calloc(ne + 1, sizeof *to)) == NULL ||
	    (ed = calloc(ne + 1, sizeof *ed)) == NULL ||
	    (hs = calloc(n + 1, sizeof *hs)) == NULL ||
	    (ty = calloc(n + 1, sizeof *ty)) == NULL) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	/*
	 * Arrays asked for only where there is something to fill (the
	 * H100's driver refused the listing of a child graph node's graph
	 * of one node and no edges; which call it refused is logged).
	 */
	if ((n > 0 && (rc = drv.GraphGetNodes(g->h, v, &n)) != CUDA_SUCCESS) ||
	    (nr > 0 &&
	    (rc = drv.GraphGetRootNodes(g->h, r, &nr)) != CUDA_SUCCESS) ||
	    (ne > 0 &&
	    (rc = edges_get(g->h, from, to, ed, &ne)) != CUDA_SUCCESS)) {
		log_info("graphNodes: graph %llu%s: the driver's listing "
		    "(%zu nodes, %zu roots, %zu edges): %d",
		    (unsigned long long)c->in[0].u, g->parent != NULL ?
		    " (a child graph node's)" : "", n, nr, ne, (int)rc);
		goto out;
	}
	pw_u32(&c->blob, (uint32_t)n);
	for (i = 0; i < n; i++) {
		if ((rc = drv.GraphNodeGetType(v[i], &type)) != CUDA_SUCCESS)
			goto out;
		hs[i] = (uint64_t)(uintptr_t)v[i];
		ty[i] = (uint32_t)type;
		pw_u64(&c->blob, hs[i]);
		pw_u32(&c->blob, ty[i]);
	}
	pw_u32(&c->blob, (uint32_t)nr);
	for (i = 0; i < nr; i++)
		pw_u32(&c->blob, (uint32_t)node_index(v, n, r[i]));
	pw_u32(&c->blob, (uint32_t)ne);
	for (i = 0; i < ne; i++) {
		pw_u32(&c->blob, (uint32_t)node_index(v, n, from[i]));
		pw_u32(&c->blob, (uint32_t)node_index(v, n, to[i]));
		special |= memcmp(&ed[i], &zero, sizeof zero) != 0;
	}
	/* Edge data only where some edge has any. */
	pw_u32(&c->blob, special ? (uint32_t)ne : 0);
	if (special)
		pw_bytes(&c->blob, ed, ne * sizeof *ed);
	graph_knodes_put(c, c_knode_get, hs, ty, n);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
out:
	free(hs);
	free(ty);
	free(v);
	free(r);
	free(from);
	free(to);
	free(ed);
	return rc;
}

/*
 * Kernel nodes' functions: the driver names a node's function by its own
 * handle, which several of a client's ids may share (or none, for a
 * library's kernel); so the client's id of the function a captured
 * launch or a node's parameters named is kept per node, with the
 * driver's function then, which must still be the node's for the entry
 * to hold (a node freed, its address reused).
 */
struct knode_fn {
	struct rclient	*cl;
	CUgraphNode	 node;
	CUfunction	 func;
	uint64_t	 fid;
};
static struct knode_fn	*knode_fns;
static size_t		 knode_n, knode_cap;
static pthread_mutex_t	 knode_lock = PTHREAD_MUTEX_INITIALIZER;

static void
knode_note(struct rclient *cl, CUgraphNode node, uint64_t fid)
{
	CUDA_KERNEL_NODE_PARAMS p;
	struct knode_fn *v;
	size_t i;

	memset(&p, 0, sizeof p);
	if (drv.GraphKernelNodeGetParams == NULL ||
	    drv.GraphKernelNodeGetParams(node, &p) != CUDA_SUCCESS)
		return;
	pthread_mutex_lock(&knode_lock);
	for (i = 0; i < knode_n; i++)
		if (knode_fns[i].cl == cl && knode_fns[i].node == node)
			break;
	if (i == knode_n && knode_n == knode_cap) {
		size_t ncap = knode_cap ? knode_cap * 2 : 64;

		if ((v = realloc(knode_fns, ncap * sizeof *v)) == NULL) {
			pthread_mutex_unlock(&knode_lock);
			return;
		}
		knode_fns = v;
		knode_cap = ncap;
	}
	if (i == knode_n)
		knode_n++;
	knode_fns[i].cl = cl;
	knode_fns[i].node = node;
	knode_fns[i].func = p.func;
	knode_fns[i].fid = fid;
	pthread_mutex_unlock(&knode_lock);
}

static void
knode_forget(struct rclient *cl)
{
	size_t i;

	pthread_mutex_lock(&knode_lock);
	for (i = 0; i < knode_n; )
		if (knode_fns[i].cl == cl)
			knode_fns[i] = knode_fns[--knode_n];
		else
			i++;
	pthread_mutex_unlock(&knode_lock);
}

static void	knode_drop(struct rclient *, CUgraph);

/*
 * Forgets the client's ids of the conditional bodies of graph g (those
 * of node, or of all its nodes for 0) and of those within them: the
 * driver destroys them with their node.
 */
static void
cond_unname(struct rclient *cl, struct robj *g, uint64_t node)
{
	struct robj *o;
	size_t i;
	uint64_t id;
	void *v;

	for (;;) {
		o = NULL;
		i = 0;
		while (htab_next(&cl->objs, &i, &id, &v))
			if (((struct robj *)v)->kind == RK_GRAPH &&
			    ((struct robj *)v)->parent == g &&
			    (node == 0 || ((struct robj *)v)->node == node)) {
				o = v;
				break;
			}
		if (o == NULL)
			return;
		cond_unname(cl, o, 0);
		knode_drop(cl, o->h);
		robj_del(cl, o->id);
	}
}

/*
 * A launch attribute of a stream, or of a kernel node where node is not
 * NULL: SATTR_SET takes its value from val, otherwise it is read into the
 * reply, as bytes (rpc_sattr_len, rpc_kattr_len).
 */
static int
launch_attr(struct rcall *c, CUstream s, CUgraphNode node, uint64_t op,
    uint32_t attr, const void *val)
{
	static CUresult (*sget)(CUstream, CUstreamAttrID, CUstreamAttrValue *),
	    (*sset)(CUstream, CUstreamAttrID, const CUstreamAttrValue *),
	    (*kget)(CUgraphNode, CUkernelNodeAttrID, CUkernelNodeAttrValue *),
	    (*kset)(CUgraphNode, CUkernelNodeAttrID,
	    const CUkernelNodeAttrValue *);
	static int looked;
	size_t len = node != NULL ? rpc_kattr_len(attr) : rpc_sattr_len(attr);
	CUlaunchAttributeValue v;
	CUresult rc;

	_Static_assert(sizeof(CUaccessPolicyWindow) == 32, "a window");
	_Static_assert(sizeof(CUlaunchMemSyncDomainMap) == 2, "a map");
	if (!looked) {
		sget = (__typeof__(sget))drv_opt("cuStreamGetAttribute", 11000);
		sset = (__typeof__(sset))drv_opt("cuStreamSetAttribute", 11000);
		kget = (__typeof__(kget))drv_opt(
		    "cuGraphKernelNodeGetAttribute", 11000);
		kset = (__typeof__(kset))drv_opt(
		    "cuGraphKernelNodeSetAttribute", 11000);
		looked = 1;
	}
	if (node != NULL ? kget == NULL || kset == NULL :
	    sget == NULL || sset == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	memset(&v, 0, sizeof v);
	if (op == SATTR_SET) {
		memcpy(&v, val, len);
		return node != NULL ? kset(node, (CUkernelNodeAttrID)attr, &v) :
		    sset(s, (CUstreamAttrID)attr, &v);
	}
	rc = node != NULL ? kget(node, (CUkernelNodeAttrID)attr, &v) :
	    sget(s, (CUstreamAttrID)attr, &v);
	if (rc != CUDA_SUCCESS)
		return rc;
	pw_bytes(&c->blob, &v, len);
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * in: graph, kernel node, op, attribute, source graph and node, value ->
 * value: the driver's kernel node attributes, as bytes (rpc_kattr_len).
 */
static int
c_knode_attr(struct rcall *c)
{
	static CUresult (*copy)(CUgraphNode, CUgraphNode);
	static int looked;
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH), *sg;
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[1].u;

	if (!looked) {
		copy = (__typeof__(copy))drv_opt(
		    "cuGraphKernelNodeCopyAttributes", 11000);
		looked = 1;
	}
	if (g == NULL || !node_in(g->h, c->in[1].u) || node == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[2].u != SATTR_COPY)
		return launch_attr(c, NULL, node, c->in[2].u,
		    (uint32_t)c->in[3].u, c->in[6].p);
	if (copy == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	sg = robj_get(c->cl, c->in[4].u, RK_GRAPH);
	if (sg == NULL || !node_in(sg->h, c->in[5].u))
		return CUDA_ERROR_INVALID_VALUE;
	return copy(node, (CUgraphNode)(uintptr_t)c->in[5].u);
}

/* in: ctx, graph, default value, flags -> the driver's handle */
static int
c_cond_handle(struct rcall *c)
{
	static CUresult (*create)(CUgraphConditionalHandle *, CUgraph,
	    CUcontext, unsigned, unsigned);
	static int looked;
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH), *ctx;
	CUgraphConditionalHandle h = 0;
	CUresult rc;

	if (!looked) {
		create = (__typeof__(create))drv_opt(
		    "cuGraphConditionalHandleCreate", 12030);
		looked = 1;
	}
	if ((ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (g == NULL || g->cap != NULL || g->h == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (create == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = create(&h, g->h, ctx->h, (unsigned)c->in[2].u,
	    (unsigned)c->in[3].u);
	c->out[0].u = h;
	return rc;
}

/*
 * A conditional node (RPC_SIG_COND) in graph g after deps: the driver
 * makes its bodies, known from then on by the client's ids.
 */
static int
cond_node(struct rcall *c, struct robj *g, struct robj *ctx,
    const CUgraphNode *deps, size_t nd, CUgraphNode *node)
{
	static CUresult (*add)(CUgraphNode *, CUgraph, const CUgraphNode *,
	    size_t, CUgraphNodeParams *);
	static int looked;
	struct rpc_val v[RPC_MAX_FIELDS];
	CUgraphNodeParams p;
	struct robj *o;
	struct pr r;
	uint32_t k;
	CUresult rc;

	if (!looked) {
		add = (__typeof__(add))drv_opt("cuGraphAddNode", 12020);
		looked = 1;
	}
	if ((rc = check_cond(&c->in[4], v)) != CUDA_SUCCESS)
		return rc;
	if (add == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	/* The ids are new, before the driver makes anything. */
	pr_init(&r, v[3].p, v[3].len);
	for (k = 0; k < v[2].u; k++)
		if (htab_get(&c->cl->objs, pr_u64(&r)) != NULL)
			return CUDA_ERROR_INVALID_VALUE;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = v[0].u;
	p.conditional.type = (CUgraphConditionalNodeType)v[1].u;
	p.conditional.size = (unsigned)v[2].u;
	p.conditional.ctx = ctx->h;
	if ((rc = add(node, g->h, deps, nd, &p)) != CUDA_SUCCESS)
		return rc;
	pr_init(&r, v[3].p, v[3].len);
	for (k = 0; k < v[2].u; k++) {
		o = p.conditional.phGraph_out == NULL ? NULL :
		    robj_new(c->cl, pr_u64(&r), RK_GRAPH,
		    p.conditional.phGraph_out[k]);
		if (o == NULL) {
			/* Two bodies of one id, or no memory. */
			cond_unname(c->cl, g, (uint64_t)(uintptr_t)*node);
			drv.GraphDestroyNode(*node);
			*node = NULL;
			return CUDA_ERROR_INVALID_VALUE;
		}
		o->parent = g;
		o->node = (uint64_t)(uintptr_t)*node;
	}
	return CUDA_SUCCESS;
}

/* Forgets the kernel nodes of graph g, about to be destroyed. */
static void
knode_drop(struct rclient *cl, CUgraph g)
{
	CUgraphNode *v;
	size_t n = 0, i;

	if (drv.GraphGetNodes(g, NULL, &n) != CUDA_SUCCESS ||
	    (v = calloc(n + 1, sizeof *v)) == NULL)
		return;
	if (drv.GraphGetNodes(g, v, &n) == CUDA_SUCCESS) {
		pthread_mutex_lock(&knode_lock);
		for (i = 0; i < knode_n; )
			if (knode_fns[i].cl == cl &&
			    node_index(v, n, knode_fns[i].node) < n)
				knode_fns[i] = knode_fns[--knode_n];
			else
				i++;
		pthread_mutex_unlock(&knode_lock);
	}
	free(v);
}

/* After a launch on s: the node a capture made of it, if s captures. */
static void
knode_captured(struct rcall *c, CUstream s)
{
	struct robj *so;
	CUstreamCaptureStatus st;
	const CUgraphNode *deps = NULL;
	size_t n = 0;

	if (c->in[9].u <= 2 || (so = robj_get(c->cl, c->in[9].u,
	    RK_STREAM)) == NULL || so->cap == NULL)
		return;
	if (drv.StreamGetCaptureInfo(s, &st, NULL, NULL, &deps, &n) ==
	    CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_ACTIVE && n == 1)
		knode_note(c->cl, deps[0], c->in[1].u);
}

/* The client's id of node's function p->func, or 0. */
static uint64_t
knode_fid(struct rclient *cl, CUgraphNode node,
    const CUDA_KERNEL_NODE_PARAMS *p)
{
	uint64_t fid = 0, id;
	size_t i;
	void *v;

	pthread_mutex_lock(&knode_lock);
	for (i = 0; i < knode_n; i++)
		if (knode_fns[i].cl == cl && knode_fns[i].node == node &&
		    knode_fns[i].func == p->func)
			fid = knode_fns[i].fid;
	pthread_mutex_unlock(&knode_lock);
	if (fid != 0 && (robj_get(cl, fid, RK_FUNC) != NULL ||
	    robj_get(cl, fid, RK_KERNEL) != NULL))
		return fid;
	i = 0;
	while (htab_next(&cl->objs, &i, &id, &v)) {
		struct robj *o = v;

		if ((o->kind == RK_FUNC && o->h == (void *)p->func) ||
		    (o->kind == RK_KERNEL && (o->h == (void *)p->kern ||
		    o->h == (void *)p->func)))
			return id;
	}
	return 0;
}

/* Is h one of graph g's nodes (a handle from a client is checked)? */
static int
node_in(CUgraph g, uint64_t h)
{
	CUgraphNode *v;
	size_t n = 0;
	int found;

	if (h == 0 || drv.GraphGetNodes(g, NULL, &n) != CUDA_SUCCESS ||
	    (v = calloc(n + 1, sizeof *v)) == NULL)
		return 0;
	found = drv.GraphGetNodes(g, v, &n) == CUDA_SUCCESS &&
	    node_index(v, n, (CUgraphNode)(uintptr_t)h) < n;
	free(v);
	return found;
}

/* A kernel node's parameters from an R_LAUNCH request sub (checked). */
static int
knode_params(struct rcall *sub, CUDA_KERNEL_NODE_PARAMS *p, void **argp,
    struct robj **fo)
{
	struct robj *f;
	const uint8_t *args = sub->in[11].p;
	uint32_t i;

	f = robj_get(sub->cl, sub->in[1].u, RK_FUNC);
	if (f == NULL)
		f = robj_get(sub->cl, sub->in[1].u, RK_KERNEL);
	if (f == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->nparams > 1024 || sub->in[11].len != f->argbytes)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < f->nparams; i++)
		argp[i] = (void *)(args + f->offset[i]);
	memset(p, 0, sizeof *p);
	/* A library's kernel goes as one, run in the current context. */
	if (f->kind == RK_KERNEL)
		p->kern = (CUkernel)f->h;
	else
		p->func = (CUfunction)f->h;
	p->gridDimX = (unsigned)sub->in[2].u;
	p->gridDimY = (unsigned)sub->in[3].u;
	p->gridDimZ = (unsigned)sub->in[4].u;
	p->blockDimX = (unsigned)sub->in[5].u;
	p->blockDimY = (unsigned)sub->in[6].u;
	p->blockDimZ = (unsigned)sub->in[7].u;
	p->sharedMemBytes = (unsigned)sub->in[8].u;
	p->kernelParams = argp;
	*fo = f;
	return CUDA_SUCCESS;
}

/*
 * A memory allocation node: the driver chooses its address, which stays
 * the graph's; it is the client's memory (copies, memsets) until the
 * graph is destroyed.
 */
static CUresult
memalloc_node(struct rcall *c, struct robj *g, CUgraphNode *deps, size_t nd,
    CUgraphNode *node)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;
	CUmemAccessDesc acc[RPC_MEMALLOC_ACCESS_MAX];
	struct rpc_val v[RPC_MAX_FIELDS];
	struct pr r;
	size_t i, na;
	CUresult rc;

	if ((rc = check_memalloc(&c->in[4], v)) != CUDA_SUCCESS)
		return rc;
	memset(&p, 0, sizeof p);
	p.bytesize = (size_t)v[1].u;
	p.poolProps.allocType = (CUmemAllocationType)v[2].u;
	p.poolProps.handleTypes = (CUmemAllocationHandleType)v[3].u;
	p.poolProps.location.type = (CUmemLocationType)v[4].u;
	p.poolProps.location.id = (int)v[5].u;
	na = v[6].len / 12;
	pr_init(&r, v[6].p, v[6].len);
	for (i = 0; i < na; i++) {
		acc[i].location.type = (CUmemLocationType)pr_u32(&r);
		acc[i].location.id = (int)pr_u32(&r);
		acc[i].flags = (CUmemAccess_flags)pr_u32(&r);
	}
	p.accessDescs = na > 0 ? acc : NULL;
	p.accessDescCount = na;
	if ((rc = drv.GraphAddMemAllocNode(node, g->h, deps, nd, &p)) !=
	    CUDA_SUCCESS)
		return rc;
	if (rmem_add(c->cl, p.dptr, p.bytesize, 0, g) == -1) {
		drv.GraphDestroyNode(*node);
		*node = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static int	bnode_do(struct rcall *, struct robj *, struct robj *,
		    struct robj *, const CUgraphNode *, size_t, CUgraphNode *);
static int	bnode_get(CUgraphNode, struct pw *, uint64_t *);

/* in: ctx, graph, node type, dependencies, request -> node */
static int
c_graph_add(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH), *ctx = NULL;
	struct robj *o, *f;
	uint16_t call = check_graph_call(c->in[2].u);
	CUDA_KERNEL_NODE_PARAMS kp;
	CUDA_MEMSET_NODE_PARAMS mp;
	CUDA_HOST_NODE_PARAMS hp;
	CUDA_MEMCPY3D m;
	CUgraphNode *deps = NULL, node = NULL;
	struct rcall sub;
	struct pr r;
	void *argp[1024];
	uint64_t span;
	size_t nd = c->in[3].len / 8, i;
	CUresult rc;
	int empty;

	if (g == NULL || g->cap != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[0].u != 0 && (ctx = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (call != 0 && ctx == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((deps = calloc(nd + 1, sizeof *deps)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pr_init(&r, c->in[3].p, c->in[3].len);
	for (i = 0; i < nd; i++) {
		uint64_t h = pr_u64(&r);

		if (!node_in(g->h, h)) {
			free(deps);
			return CUDA_ERROR_INVALID_VALUE;
		}
		deps[i] = (CUgraphNode)(uintptr_t)h;
	}
	rc = CUDA_ERROR_INVALID_VALUE;
	if (call != 0 && (rc = check_graph_sub(c, 4, call, &sub)) !=
	    CUDA_SUCCESS)
		goto out;
	switch (c->in[2].u) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		if ((rc = knode_params(&sub, &kp, argp, &f)) != CUDA_SUCCESS)
			break;
		if ((rc = drv.GraphAddKernelNode(&node, g->h, deps, nd, &kp)) ==
		    CUDA_SUCCESS)
			knode_note(c->cl, node, sub.in[1].u);
		break;
	case CU_GRAPH_NODE_TYPE_MEMSET:
		if (check_memset_span(&sub, &span) == -1 ||
		    rmem_check(c->cl, sub.in[3].u, span) == -1)
			break;
		memset(&mp, 0, sizeof mp);
		mp.dst = sub.in[3].u;
		mp.pitch = sub.in[4].u;
		mp.value = (unsigned)sub.in[5].u;
		mp.elementSize = (unsigned)sub.in[6].u;
		mp.width = sub.in[7].u;
		mp.height = sub.in[8].u;
		rc = drv.GraphAddMemsetNode(&node, g->h, deps, nd, &mp, ctx->h);
		break;
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if ((rc = (CUresult)copy3d_prepare(&sub, &m, &empty,
		    cuda_copy_array)) !=
		    CUDA_SUCCESS)
			break;
		rc = drv.GraphAddMemcpyNode(&node, g->h, deps, nd, &m, ctx->h);
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		o = robj_get(c->cl, sub.in[call == R_EVENT_RECORD ? 1 : 2].u,
		    RK_EVENT);
		if (o == NULL) {
			rc = CUDA_ERROR_INVALID_HANDLE;
			break;
		}
		rc = call == R_EVENT_RECORD ? drv.GraphAddEventRecordNode(&node,
		    g->h, deps, nd, o->h) : drv.GraphAddEventWaitNode(&node,
		    g->h, deps, nd, o->h);
		break;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		rc = drv.GraphAddEmptyNode(&node, g->h, deps, nd);
		break;
	case CU_GRAPH_NODE_TYPE_HOST:
		memset(&hp, 0, sizeof hp);
		hp.fn = host_reached;
		if ((hp.userData = chost_get(c->cl, sub.in[2].u)) == NULL) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		rc = drv.GraphAddHostNode(&node, g->h, deps, nd, &hp);
		break;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		pr_init(&r, c->in[4].p, c->in[4].len);
		o = robj_get(c->cl, pr_u64(&r), RK_GRAPH);
		rc = o == NULL || o->cap != NULL ? CUDA_ERROR_INVALID_VALUE :
		    drv.GraphAddChildGraphNode(&node, g->h, deps, nd, o->h);
		break;
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		rc = ctx == NULL ? CUDA_ERROR_INVALID_CONTEXT :
		    memalloc_node(c, g, deps, nd, &node);
		break;
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		rc = ctx == NULL ? CUDA_ERROR_INVALID_CONTEXT :
		    cond_node(c, g, ctx, deps, nd, &node);
		break;
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		rc = bnode_do(&sub, ctx, g, NULL, deps, nd, &node);
		break;
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		pr_init(&r, c->in[4].p, c->in[4].len);
		span = pr_u64(&r);
		rc = rmem_check(c->cl, span, 1) == -1 ?
		    CUDA_ERROR_INVALID_VALUE :
		    drv.GraphAddMemFreeNode(&node, g->h, deps, nd, span);
		break;
	}
out:
	free(deps);
	c->out[0].u = (uint64_t)(uintptr_t)node;
	return rc;
}

/* in: graph, add, pairs (u64 from, u64 to) */
static int
c_graph_edges(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	size_t n = c->in[2].len / 16, i;
	CUgraphNode *from, *to;
	CUgraphEdgeData *ed;
	struct pr r;
	uint64_t a, b;
	CUresult rc = CUDA_SUCCESS;

	if (g == NULL || (c->in[3].len != 0 &&
	    c->in[3].len != n * sizeof(CUgraphEdgeData)))
		return CUDA_ERROR_INVALID_VALUE;
	from = calloc(n + 1, sizeof *from);
	to = calloc(n + 1, sizeof *to);
	if (from == NULL || to == NULL)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	pr_init(&r, c->in[2].p, c->in[2].len);
	for (i = 0; rc == CUDA_SUCCESS && i < n; i++) {
		a = pr_u64(&r);
		b = pr_u64(&r);
		if (!node_in(g->h, a) || !node_in(g->h, b))
			rc = CUDA_ERROR_INVALID_VALUE;
		from[i] = (CUgraphNode)(uintptr_t)a;
		to[i] = (CUgraphNode)(uintptr_t)b;
	}
	if (rc == CUDA_SUCCESS && c->in[3].len != 0) {
		/* Edges with data: the calls of CUDA 12.3. */
		pthread_once(&edv2_once, edv2_load);
		if ((ed = malloc(c->in[3].len)) == NULL)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		else if (edv2.add == NULL || edv2.del == NULL)
			rc = CUDA_ERROR_NOT_SUPPORTED;
		else {
			memcpy(ed, c->in[3].p, c->in[3].len);
			rc = c->in[1].u ? edv2.add(g->h, from, to, ed, n) :
			    edv2.del(g->h, from, to, ed, n);
		}
		free(ed);
	} else if (rc == CUDA_SUCCESS)
		rc = c->in[1].u ? drv.GraphAddDependencies(g->h, from, to, n) :
		    drv.GraphRemoveDependencies(g->h, from, to, n);
	free(from);
	free(to);
	return rc;
}

/* in: graph, node */
static int
c_graph_node_destroy(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);

	if (g == NULL || !node_in(g->h, c->in[1].u))
		return CUDA_ERROR_INVALID_VALUE;
	cond_unname(c->cl, g, c->in[1].u);
	return drv.GraphDestroyNode((CUgraphNode)(uintptr_t)c->in[1].u);
}

/* in: graph, node -> function id, grid, block, shmem, arguments */
static int
c_knode_get(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH), *f;
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[1].u;
	CUDA_KERNEL_NODE_PARAMS p;
	uint64_t fid;
	uint32_t i;
	char *buf;
	CUresult rc;

	if (g == NULL || !node_in(g->h, c->in[1].u))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&p, 0, sizeof p);
	if ((rc = drv.GraphKernelNodeGetParams(node, &p)) != CUDA_SUCCESS)
		return rc;
	if ((fid = knode_fid(c->cl, node, &p)) == 0 ||
	    ((f = robj_get(c->cl, fid, RK_FUNC)) == NULL &&
	    (f = robj_get(c->cl, fid, RK_KERNEL)) == NULL))
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->nparams > 0 && p.kernelParams == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;	/* extra: not ours */
	if ((buf = calloc(1, f->argbytes + 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < f->nparams; i++)
		memcpy(buf + f->offset[i], p.kernelParams[i], f->size[i]);
	c->scratch = buf;
	c->out[0].u = fid;
	c->out[1].u = p.gridDimX;
	c->out[2].u = p.gridDimY;
	c->out[3].u = p.gridDimZ;
	c->out[4].u = p.blockDimX;
	c->out[5].u = p.blockDimY;
	c->out[6].u = p.blockDimZ;
	c->out[7].u = p.sharedMemBytes;
	c->out[8].p = buf;
	c->out[8].len = f->argbytes;
	return CUDA_SUCCESS;
}

/* in: graph, exec (0: the graph's node), node, R_LAUNCH request */
static int
c_knode_set(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH), *e = NULL, *f;
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[2].u;
	CUDA_KERNEL_NODE_PARAMS p;
	struct rcall sub;
	void *argp[1024];
	CUresult rc;

	if (g == NULL || !node_in(g->h, c->in[2].u))
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[1].u != 0 &&
	    (e = robj_get(c->cl, c->in[1].u, RK_GEXEC)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = check_graph_sub(c, 3, R_LAUNCH, &sub)) != CUDA_SUCCESS)
		return rc;
	if (cuda_ctx(c, sub.in[0].u, &rc) == NULL)
		return rc;
	if ((rc = knode_params(&sub, &p, argp, &f)) != CUDA_SUCCESS)
		return rc;
	if (e != NULL)
		return drv.GraphExecKernelNodeSetParams(e->h, node, &p);
	if ((rc = drv.GraphKernelNodeSetParams(node, &p)) == CUDA_SUCCESS)
		knode_note(c->cl, node, sub.in[1].u);
	return rc;
}

/* A copy node's parameters as R_MEM_3D's descriptor, into v[3]. */
static void
node_copy_desc(const CUDA_MEMCPY3D *m, struct pw *d)
{
	uint64_t f[20] = { CU_MEMORYTYPE_DEVICE, m->srcXInBytes, m->srcY,
	    m->srcZ, m->srcDevice, m->srcPitch, m->srcHeight,
	    CU_MEMORYTYPE_DEVICE, m->dstXInBytes, m->dstY, m->dstZ,
	    m->dstDevice, m->dstPitch, m->dstHeight, m->WidthInBytes,
	    m->Height, m->Depth, 0, 0, 0 };
	int i;

	for (i = 0; i < 20; i++)
		pw_u64(d, f[i]);
}

/* in: graph, node -> the driver's local id and tools id of the node */
static int
c_node_id(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[1].u;
	unsigned long long tools = 0;
	unsigned local = 0;
	CUresult rc;

	if (g == NULL || !node_in(g->h, c->in[1].u))
		return CUDA_ERROR_INVALID_VALUE;
	if (drv.GraphNodeGetLocalId == NULL || drv.GraphNodeGetToolsId == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((rc = drv.GraphNodeGetLocalId(node, &local)) != CUDA_SUCCESS ||
	    (rc = drv.GraphNodeGetToolsId(node, &tools)) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = local;
	c->out[1].u = tools;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, attribute, address -> the driver's mapping or range size or
 * base for the client's own device memory (check_call took only those).
 */
static int
c_ptr_attr(struct rcall *c)
{
	uint64_t v = 0;
	CUresult rc;

	CTX(c, 0);
	if (rmem_check(c->cl, c->in[2].u, 1) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[1].u == CU_POINTER_ATTRIBUTE_MAPPING_SIZE ||
	    c->in[1].u == CU_POINTER_ATTRIBUTE_RANGE_SIZE) {
		size_t n = 0;

		rc = drv.PointerGetAttribute(&n,
		    (CUpointer_attribute)c->in[1].u, c->in[2].u);
		v = n;
	} else {
		CUdeviceptr p = 0;

		rc = drv.PointerGetAttribute(&p,
		    (CUpointer_attribute)c->in[1].u, c->in[2].u);
		v = p;
	}
	c->out[0].u = v;
	return rc;
}

/* in: graph, node -> type, the request it stands for (rpc.h) */
static int
c_node_get(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[1].u;
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	CUDA_MEMSET_NODE_PARAMS mp;
	CUDA_HOST_NODE_PARAMS hp;
	CUDA_MEMCPY3D m;
	CUgraphNodeType t;
	struct rpc_val v[RPC_MAX_FIELDS];
	CUdeviceptr dp;
	CUevent ev;
	struct pw d;
	CUresult rc;

	if (g == NULL || !node_in(g->h, c->in[1].u))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.GraphNodeGetType(node, &t)) != CUDA_SUCCESS)
		return rc;
	memset(v, 0, sizeof v);
	switch (t) {
	case CU_GRAPH_NODE_TYPE_MEMSET:
		if ((rc = drv.GraphMemsetNodeGetParams(node, &mp)) !=
		    CUDA_SUCCESS)
			return rc;
		v[2].u = 1;
		v[3].u = mp.dst;
		v[4].u = mp.pitch;
		v[5].u = mp.value;
		v[6].u = mp.elementSize;
		v[7].u = mp.width;
		v[8].u = mp.height;
		rpc_pack(&c->blob, rpc_lookup(R_MEMSET)->req, v);
		break;
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if ((rc = drv.GraphMemcpyNodeGetParams(node, &m)) !=
		    CUDA_SUCCESS)
			return rc;
		pw_init(&d);
		node_copy_desc(&m, &d);
		v[2].u = 1;
		v[3].p = d.p;
		v[3].len = (uint32_t)d.len;
		rpc_pack(&c->blob, rpc_lookup(R_MEM_3D)->req, v);
		pw_free(&d);
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		if ((rc = drv.GraphEventRecordNodeGetEvent(node, &ev)) !=
		    CUDA_SUCCESS)
			return rc;
		v[1].u = robj_id_of(c->cl, ev, RK_EVENT);
		rpc_pack(&c->blob, rpc_lookup(R_EVENT_RECORD)->req, v);
		break;
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if ((rc = drv.GraphEventWaitNodeGetEvent(node, &ev)) !=
		    CUDA_SUCCESS)
			return rc;
		v[2].u = robj_id_of(c->cl, ev, RK_EVENT);
		rpc_pack(&c->blob, rpc_lookup(R_STREAM_WAIT_EVENT)->req, v);
		break;
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		memset(&ap, 0, sizeof ap);
		if ((rc = drv.GraphMemAllocNodeGetParams(node, &ap)) !=
		    CUDA_SUCCESS)
			return rc;
		cuwire_memalloc_pack(&ap, ap.dptr, &c->blob);
		break;
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		if ((rc = drv.GraphMemFreeNodeGetParams(node, &dp)) !=
		    CUDA_SUCCESS)
			return rc;
		pw_u64(&c->blob, dp);
		break;
	case CU_GRAPH_NODE_TYPE_HOST:
		if ((rc = drv.GraphHostNodeGetParams(node, &hp)) !=
		    CUDA_SUCCESS)
			return rc;
		if ((v[2].u = chost_id(c->cl, &hp)) == 0)
			return CUDA_ERROR_INVALID_VALUE;
		rpc_pack(&c->blob, rpc_lookup(R_HOST_FUNC)->req, v);
		break;
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		pw_init(&d);
		if ((rc = bnode_get(node, &d, &v[2].u)) == CUDA_SUCCESS) {
			v[3].p = d.p;
			v[3].len = (uint32_t)d.len;
			rpc_pack(&c->blob, rpc_lookup(R_STREAM_MEMOP)->req, v);
		}
		pw_free(&d);
		if (rc != CUDA_SUCCESS)
			return rc;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].u = (uint32_t)t;
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

static struct robj *child_named(struct rclient *, CUgraphNode);
static CUresult	child_get(CUgraphNode, CUgraph *);

/*
 * A child graph node's graph (field 4: the client's id of a graph) set:
 * the node of graph, or exec e's copy of it.
 */
static int
child_set(struct rcall *c, struct robj *e, CUgraphNode node)
{
	static CUresult (*eset)(CUgraphExec, CUgraphNode, CUgraph);
	static CUresult (*gset)(CUgraphNode, CUgraphNodeParams *);
	static int looked;
	CUgraphNodeParams p;
	struct robj *o, *k;
	struct pr r;
	CUgraph h;
	CUresult rc;

	if (!looked) {
		eset = (__typeof__(eset))drv_opt(
		    "cuGraphExecChildGraphNodeSetParams", 11010);
		gset = (__typeof__(gset))drv_opt("cuGraphNodeSetParams",
		    12020);
		looked = 1;
	}
	pr_init(&r, c->in[4].p, c->in[4].len);
	o = robj_get(c->cl, pr_u64(&r), RK_GRAPH);
	if (o == NULL || o->cap != NULL || o->h == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (e != NULL)
		return eset == NULL ? CUDA_ERROR_NOT_SUPPORTED :
		    eset(e->h, node, o->h);
	if (gset == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	memset(&p, 0, sizeof p);
	p.type = CU_GRAPH_NODE_TYPE_GRAPH;
	p.graph.graph = o->h;
	if ((rc = gset(node, &p)) != CUDA_SUCCESS)
		return rc;
	/* The node's graph, if the client knows it, as it is now. */
	if ((k = child_named(c->cl, node)) != NULL) {
		cond_unname(c->cl, k, 0);
		if (child_get(node, &h) == CUDA_SUCCESS)
			k->h = h;
	}
	return CUDA_SUCCESS;
}

/* The robj naming child graph node's graph (R_CHILD_GRAPH), else NULL. */
static struct robj *
child_named(struct rclient *cl, CUgraphNode node)
{
	size_t i = 0;
	uint64_t id;
	void *v;

	while (htab_next(&cl->objs, &i, &id, &v))
		if (((struct robj *)v)->kind == RK_GRAPH &&
		    ((struct robj *)v)->parent != NULL &&
		    ((struct robj *)v)->node == (uint64_t)(uintptr_t)node)
			return v;
	return NULL;
}

/* cuGraphChildGraphNodeGetGraph, where the driver has it. */
static CUresult
child_get(CUgraphNode node, CUgraph *h)
{
	static CUresult (*get)(CUgraphNode, CUgraph *);
	static int looked;

	if (!looked) {
		get = (__typeof__(get))drv_opt(
		    "cuGraphChildGraphNodeGetGraph", 10000);
		looked = 1;
	}
	return get == NULL ? CUDA_ERROR_NOT_SUPPORTED : get(node, h);
}

/* in: graph, child graph node, id: the node's graph known by that id */
static int
c_child_graph(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH), *o;
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[1].u;
	CUgraphNodeType t;
	CUgraph h;
	CUresult rc;

	if (g == NULL || g->cap != NULL || !node_in(g->h, c->in[1].u))
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.GraphNodeGetType(node, &t)) != CUDA_SUCCESS)
		return rc;
	if (t != CU_GRAPH_NODE_TYPE_GRAPH || child_named(c->cl, node) != NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = child_get(node, &h)) != CUDA_SUCCESS)
		return rc;
	if ((o = robj_new(c->cl, c->in[2].u, RK_GRAPH, h)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	o->parent = g;
	o->node = c->in[1].u;
	return CUDA_SUCCESS;
}

/* in: graph, exec (0: the graph's node), node, node type, request */
static int
c_node_set(struct rcall *c)
{
	struct robj *g = robj_get(c->cl, c->in[0].u, RK_GRAPH), *e = NULL;
	struct robj *ctx, *o;
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[2].u;
	uint16_t call = check_graph_call(c->in[3].u);
	CUDA_HOST_NODE_PARAMS hp;
	CUDA_MEMSET_NODE_PARAMS mp;
	CUDA_MEMCPY3D m;
	CUgraphNodeType t;
	struct rcall sub;
	uint64_t span;
	CUresult rc;
	int empty;

	if (g == NULL || !node_in(g->h, c->in[2].u))
		return CUDA_ERROR_INVALID_VALUE;
	if (c->in[1].u != 0 &&
	    (e = robj_get(c->cl, c->in[1].u, RK_GEXEC)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.GraphNodeGetType(node, &t)) != CUDA_SUCCESS)
		return rc;
	if ((uint64_t)t != c->in[3].u)
		return CUDA_ERROR_INVALID_VALUE;
	if (t == CU_GRAPH_NODE_TYPE_GRAPH)
		return child_set(c, e, node);
	if ((rc = check_graph_sub(c, 4, call, &sub)) != CUDA_SUCCESS)
		return rc;
	if ((ctx = cuda_ctx(c, sub.in[0].u, &rc)) == NULL)
		return rc;
	switch (call) {
	case R_MEMSET:
		if (check_memset_span(&sub, &span) == -1 ||
		    rmem_check(c->cl, sub.in[3].u, span) == -1)
			return CUDA_ERROR_INVALID_VALUE;
		memset(&mp, 0, sizeof mp);
		mp.dst = sub.in[3].u;
		mp.pitch = sub.in[4].u;
		mp.value = (unsigned)sub.in[5].u;
		mp.elementSize = (unsigned)sub.in[6].u;
		mp.width = sub.in[7].u;
		mp.height = sub.in[8].u;
		return e != NULL ? drv.GraphExecMemsetNodeSetParams(e->h, node,
		    &mp, ctx->h) : drv.GraphMemsetNodeSetParams(node, &mp);
	case R_MEM_3D:
		if ((rc = (CUresult)copy3d_prepare(&sub, &m, &empty,
		    cuda_copy_array)) != CUDA_SUCCESS)
			return rc;
		return e != NULL ? drv.GraphExecMemcpyNodeSetParams(e->h, node,
		    &m, ctx->h) : drv.GraphMemcpyNodeSetParams(node, &m);
	case R_EVENT_RECORD:
	case R_STREAM_WAIT_EVENT:
		o = robj_get(c->cl, sub.in[call == R_EVENT_RECORD ? 1 : 2].u,
		    RK_EVENT);
		if (o == NULL)
			return CUDA_ERROR_INVALID_HANDLE;
		if (call == R_EVENT_RECORD)
			return e != NULL ? drv.GraphExecEventRecordNodeSetEvent(
			    e->h, node, o->h) :
			    drv.GraphEventRecordNodeSetEvent(node, o->h);
		return e != NULL ? drv.GraphExecEventWaitNodeSetEvent(e->h,
		    node, o->h) : drv.GraphEventWaitNodeSetEvent(node, o->h);
	case R_HOST_FUNC:
		memset(&hp, 0, sizeof hp);
		hp.fn = host_reached;
		if ((hp.userData = chost_get(c->cl, sub.in[2].u)) == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		return e != NULL ? drv.GraphExecHostNodeSetParams(e->h, node,
		    &hp) : drv.GraphHostNodeSetParams(node, &hp);
	case R_STREAM_MEMOP:
		return bnode_do(&sub, ctx, NULL, e, NULL, 0, &node);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* in: exec, graph, node, set, enabled -> enabled */
static int
c_node_enabled(struct rcall *c)
{
	struct robj *e = robj_get(c->cl, c->in[0].u, RK_GEXEC);
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	CUgraphNode node = (CUgraphNode)(uintptr_t)c->in[2].u;
	unsigned on = (unsigned)c->in[4].u;
	CUresult rc;

	if (e == NULL || g == NULL || !node_in(g->h, c->in[2].u))
		return CUDA_ERROR_INVALID_VALUE;
	rc = c->in[3].u ? drv.GraphNodeSetEnabled(e->h, node, on) :
	    drv.GraphNodeGetEnabled(e->h, node, &on);
	c->out[0].u = on;
	return rc;
}

/* in: clone, original graph, node -> the clone's node */
static int
c_node_find(struct rcall *c)
{
	struct robj *n = robj_get(c->cl, c->in[0].u, RK_GRAPH);
	struct robj *g = robj_get(c->cl, c->in[1].u, RK_GRAPH);
	CUgraphNode out = NULL;
	CUresult rc;

	if (n == NULL || g == NULL || !node_in(g->h, c->in[2].u))
		return CUDA_ERROR_INVALID_VALUE;
	rc = drv.GraphNodeFindInClone(&out,
	    (CUgraphNode)(uintptr_t)c->in[2].u, n->h);
	c->out[0].u = (uint64_t)(uintptr_t)out;
	return rc;
}

/* ---- capture into a graph, capture dependencies (issue 24) ------------ */

_Static_assert(sizeof(CUgraphEdgeData) == RPC_EDGE_LEN, "edge data");

/*
 * The nodes of field f (u64 handles), each one of graph g's, and their
 * edge data (field e, or none) into *v and *ed (malloc'd, *n each).
 */
static int
cuda_nodes_in(struct rcall *c, CUgraph g, int f, int e, CUgraphNode **v,
    CUgraphEdgeData **ed, size_t *n)
{
	struct pr r;
	size_t i;

	*n = c->in[f].len / 8;
	*ed = NULL;
	if ((*v = calloc(*n + 1, sizeof **v)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pr_init(&r, c->in[f].p, c->in[f].len);
	for (i = 0; i < *n; i++) {
		uint64_t h = pr_u64(&r);

		if (!node_in(g, h)) {
			free(*v);
			return CUDA_ERROR_INVALID_VALUE;
		}
		(*v)[i] = (CUgraphNode)(uintptr_t)h;
	}
	if (c->in[e].len == 0)
		return CUDA_SUCCESS;
	if ((*ed = calloc(*n + 1, sizeof **ed)) == NULL) {
		free(*v);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(*ed, c->in[e].p, c->in[e].len);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, mode, graph, dependencies, edge data */
static int
c_capture_to_graph(struct rcall *c)
{
	static CUresult (*begin)(CUstream, CUgraph, const CUgraphNode *,
	    const CUgraphEdgeData *, size_t, CUstreamCaptureMode);
	static int looked;
	struct robj *so, *g;
	CUgraphNode *deps;
	CUgraphEdgeData *ed;
	CUstream s;
	size_t n;
	CUresult rc;

	if (!looked) {
		begin = (__typeof__(begin))drv_opt(
		    "cuStreamBeginCaptureToGraph", 12030);
		looked = 1;
	}
	CTX(c, 0);
	STREAM(c, 1, s);
	if ((so = robj_get(c->cl, c->in[1].u, RK_STREAM)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((g = robj_get(c->cl, c->in[3].u, RK_GRAPH)) == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (so->cap != NULL || g->cap != NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (begin == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((rc = cuda_nodes_in(c, g->h, 4, 5, &deps, &ed, &n)) !=
	    CUDA_SUCCESS)
		return rc;
	/* Relaxed, as c_capture_begin's. */
	rc = begin(s, g->h, n > 0 ? deps : NULL, ed, n,
	    CU_STREAM_CAPTURE_MODE_RELAXED);
	free(deps);
	free(ed);
	if (rc != CUDA_SUCCESS)
		return rc;
	g->cap = so;
	g->capto = 1;
	so->cap = g;
	/* Listed: no stream is asked about while it captures. */
	rclient_touch(c->cl, so);
	return CUDA_SUCCESS;
}

/* in: ctx, stream, op, nodes, edge data -> the open ends after it */
static int
c_capture_deps(struct rcall *c)
{
	static CUresult (*info)(CUstream, CUstreamCaptureStatus *,
	    cuuint64_t *, CUgraph *, const CUgraphNode **,
	    const CUgraphEdgeData **, size_t *);
	static CUresult (*update)(CUstream, CUgraphNode *,
	    const CUgraphEdgeData *, size_t, unsigned);
	static int looked;
	static const CUgraphEdgeData zero;
	const CUgraphNode *ends = NULL;
	const CUgraphEdgeData *eds = NULL;
	CUstreamCaptureStatus st;
	CUgraphNodeType type;
	CUgraphNode *v;
	CUgraphEdgeData *ed;
	struct robj *so = NULL, *g;
	CUgraph gh = NULL;
	CUstream s;
	size_t n, i;
	CUresult rc;

	if (!looked) {
		info = (__typeof__(info))drv_opt("cuStreamGetCaptureInfo",
		    12030);
		update = (__typeof__(update))drv_opt(
		    "cuStreamUpdateCaptureDependencies", 12030);
		looked = 1;
	}
	CTX(c, 0);
	STREAM(c, 1, s);
	if (c->in[1].u > 2)
		so = robj_get(c->cl, c->in[1].u, RK_STREAM);
	g = so != NULL ? so->cap : NULL;
	if (info == NULL || update == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (c->in[2].u != CAPDEPS_GET) {
		if (g == NULL)
			return CUDA_ERROR_ILLEGAL_STATE;
		if ((rc = cuda_nodes_in(c, g->h, 3, 4, &v, &ed, &n)) !=
		    CUDA_SUCCESS)
			return rc;
		rc = update(s, n > 0 ? v : NULL, ed, n,
		    c->in[2].u == CAPDEPS_SET ?
		    CU_STREAM_SET_CAPTURE_DEPENDENCIES :
		    CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
		free(v);
		free(ed);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	n = 0;
	if ((rc = info(s, &st, NULL, &gh, &ends, &eds, &n)) != CUDA_SUCCESS)
		return rc;
	if (st == CU_STREAM_CAPTURE_STATUS_NONE || g == NULL || gh != g->h)
		n = 0;
	pw_u32(&c->blob, (uint32_t)n);
	for (i = 0; i < n; i++) {
		if ((rc = drv.GraphNodeGetType(ends[i], &type)) !=
		    CUDA_SUCCESS)
			return rc;
		pw_u64(&c->blob, (uint64_t)(uintptr_t)ends[i]);
		pw_u32(&c->blob, (uint32_t)type);
		pw_bytes(&c->blob, eds != NULL ? &eds[i] : &zero,
		    RPC_EDGE_LEN);
	}
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[0].p = c->blob.p;
	c->out[0].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/* in: ctx, stream, op, attribute, source, value -> value */
static int
c_stream_attr(struct rcall *c)
{
	static CUresult (*copy)(CUstream, CUstream);
	static int looked;
	CUstream s, src;

	if (!looked) {
		copy = (__typeof__(copy))drv_opt("cuStreamCopyAttributes",
		    11000);
		looked = 1;
	}
	CTX(c, 0);
	STREAM(c, 1, s);
	if (c->in[2].u != SATTR_COPY)
		return launch_attr(c, s, NULL, c->in[2].u,
		    (uint32_t)c->in[3].u, c->in[5].p);
	if (copy == NULL)
		return CUDA_ERROR_NOT_SUPPORTED;
	STREAM(c, 4, src);
	return copy(s, src);
}

/* in: device, op (0 trim, 1 get, 2 set), attribute, value -> value */
static int
c_graph_mem(struct rcall *c)
{
	CUdevice dev = (CUdevice)c->in[0].u;
	cuuint64_t v = c->in[3].u;
	CUresult rc;

	if (c->in[0].u >= (uint64_t)drv_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (c->in[1].u) {
	case 0:
		return drv.DeviceGraphMemTrim(dev);
	case 1:
		rc = drv.DeviceGetGraphMemAttribute(dev,
		    (CUgraphMem_attribute)c->in[2].u, &v);
		break;
	default:
		rc = drv.DeviceSetGraphMemAttribute(dev,
		    (CUgraphMem_attribute)c->in[2].u, &v);
	}
	c->out[0].u = v;
	return rc;
}

#define F(t, fn) [t - R_OPEN] = fn,
/* ---- the weight cache's GPU tier ------------------------------------- */

/*
 * Entries kept on a GPU live in a context of the server's own per device,
 * so they outlive the clients that loaded them and no client can reach
 * them but by a copy the cache makes.  Copies cross contexts with
 * cuMemcpyPeer.  wcache.c decides what to keep and frees it.
 */
#define GTIER_DEVS	64
static CUcontext	 gtier[GTIER_DEVS];
static pthread_mutex_t	 gtier_lock = PTHREAD_MUTEX_INITIALIZER;

/* The tier's context on a device, created on first use. */
static CUcontext
gtier_ctx(int dev, CUresult *rc)
{
	CUcontext g;

	*rc = CUDA_ERROR_INVALID_DEVICE;
	if (dev < 0 || dev >= GTIER_DEVS)
		return NULL;
	pthread_mutex_lock(&gtier_lock);
	if (gtier[dev] == NULL && (*rc = drv.CtxCreate(&gtier[dev], 0,
	    (CUdevice)dev)) != CUDA_SUCCESS)
		gtier[dev] = NULL;
	g = gtier[dev];
	pthread_mutex_unlock(&gtier_lock);
	if (g != NULL)
		*rc = CUDA_SUCCESS;
	return g;
}

static int
cuda_gpu_keep(struct rcall *c, const void *p, size_t len, int *device,
    uint64_t *kept)
{
	struct robj *o;
	CUcontext g;
	CUdeviceptr d = 0;
	CUresult rc;

	if ((o = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if ((g = gtier_ctx(o->device, &rc)) == NULL)
		return rc;
	if ((rc = drv.CtxSetCurrent(g)) != CUDA_SUCCESS)
		return rc;
	if ((rc = drv.MemAlloc(&d, len)) == CUDA_SUCCESS &&
	    (rc = drv.MemcpyHtoD(d, p, len)) != CUDA_SUCCESS) {
		drv.MemFree(d);
		d = 0;
	}
	drv.CtxSetCurrent(o->h);
	*device = o->device;
	*kept = d;
	return rc;
}

/*
 * Where a GPU tier copy of len bytes from device goes: c's context (*o)
 * and stream (*s), its dptr checked; CUDA_ERROR_INVALID_DEVICE for
 * another device's entry (wcache.c tries the next).
 */
static CUresult
gtier_dest(struct rcall *c, int device, size_t len, struct robj **o,
    CUstream *s)
{
	CUresult rc;

	if ((*o = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	if (cuda_stream(c, c->in[1].u, s) == -1)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((*o)->device != device)
		return CUDA_ERROR_INVALID_DEVICE;
	if (rmem_check(c->cl, c->in[3].u, len) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static int
cuda_gpu_copy(struct rcall *c, int device, uint64_t kept, size_t len)
{
	struct robj *o;
	CUstream s;
	CUresult rc;

	if ((rc = gtier_dest(c, device, len, &o, &s)) != CUDA_SUCCESS)
		return rc;
	if (device < 0 || device >= GTIER_DEVS || gtier[device] == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* In the stream's order, and done before the entry can go. */
	if (!c->in[2].u)
		return drv.MemcpyPeer(c->in[3].u, o->h, kept, gtier[device],
		    len);
	rc = drv.MemcpyPeerAsync(c->in[3].u, o->h, kept, gtier[device], len,
	    s);
	if (rc == CUDA_SUCCESS)
		rc = drv.StreamSynchronize(s);
	return rc;
}

static void
cuda_gpu_free(int device, uint64_t kept)
{
	if (device < 0 || device >= GTIER_DEVS || gtier[device] == NULL)
		return;
	if (drv.CtxSetCurrent(gtier[device]) == CUDA_SUCCESS)
		drv.MemFree(kept);
}

/*
 * The tier under isolation: process.  An entry is device memory made with
 * cuMemCreate for a POSIX file descriptor; the descriptor, held by the
 * server, keeps it after the worker that made it is gone, and a worker
 * that gets a copy of it maps it for as long as one copy takes.
 *
 * Read-only where it can be: a worker runs its client's kernels, and VMM
 * access is granted per device, not per context, so a kernel that found
 * the address of an entry mapped writable for a copy could change what
 * every later client of its tenant is served.  Mapped read-only, such a
 * write is an illegal address in that client's context, and the entry
 * stays as it was.  Writable only while the worker that made it fills
 * it; gx_fill then checks, read-only, that it holds exactly the bytes.
 * A driver that refuses read-only access gets read-write, said once in
 * the log (whether the H200's accepts it is not yet verified).
 */
static int	gx_ro_refused;

static CUresult
gx_map(CUmemGenericAllocationHandle h, int device, uint64_t size,
    int writable, CUdeviceptr *va)
{
	CUmemAccessDesc d;
	CUresult rc;

	if ((rc = drv.MemAddressReserve(va, size, 0, 0, 0)) != CUDA_SUCCESS)
		return rc;
	memset(&d, 0, sizeof d);
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = device;
	d.flags = writable || __atomic_load_n(&gx_ro_refused,
	    __ATOMIC_RELAXED) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE :
	    CU_MEM_ACCESS_FLAGS_PROT_READ;
	if ((rc = drv.MemMap(*va, size, 0, h, 0)) != CUDA_SUCCESS) {
		drv.MemAddressFree(*va, size);
		return rc;
	}
	rc = drv.MemSetAccess(*va, size, &d, 1);
	if (rc != CUDA_SUCCESS && d.flags == CU_MEM_ACCESS_FLAGS_PROT_READ &&
	    (rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_NOT_SUPPORTED)) {
		if (!__atomic_exchange_n(&gx_ro_refused, 1, __ATOMIC_RELAXED))
			log_warn("cache: the driver refuses read-only device "
			    "mappings (%d): GPU tier entries are mapped "
			    "read-write into workers", rc);
		d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		rc = drv.MemSetAccess(*va, size, &d, 1);
	}
	if (rc != CUDA_SUCCESS) {
		drv.MemUnmap(*va, size);
		drv.MemAddressFree(*va, size);
	}
	return rc;
}

static void
gx_unmap(CUdeviceptr va, uint64_t size)
{
	drv.MemUnmap(va, size);
	drv.MemAddressFree(va, size);
}

/* CUDA_SUCCESS if the allocation's first len bytes are p's. */
static CUresult
gx_check(CUmemGenericAllocationHandle h, int device, uint64_t size,
    const void *p, size_t len)
{
	CUdeviceptr va;
	CUresult rc;
	void *b;

	if ((b = malloc(len ? len : 1)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = gx_map(h, device, size, 0, &va)) == CUDA_SUCCESS) {
		if ((rc = drv.MemcpyDtoH(b, va, len)) == CUDA_SUCCESS &&
		    memcmp(b, p, len) != 0) {
			log_warn("cache: a GPU tier entry changed while it "
			    "was filled (a kernel wrote it?): not kept");
			rc = CUDA_ERROR_INVALID_VALUE;
		}
		gx_unmap(va, size);
	}
	free(b);
	return rc;
}

static int
cuda_gpu_export(struct rcall *c, const void *p, size_t len, int *device,
    int *fd, uint64_t *asize)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp pr;
	struct robj *o;
	CUdeviceptr va;
	size_t g = 0;
	uint64_t n;
	CUresult rc;
	int f = -1;

	if ((o = cuda_ctx(c, c->in[0].u, &rc)) == NULL)
		return rc;
	cuda_prop(o, &pr);
	pr.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	if ((rc = drv.MemGetAllocationGranularity(&g, &pr,
	    CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS || g == 0)
		return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
	n = (len + g - 1) / g * g;
	if ((rc = drv.MemCreate(&h, n, &pr, 0)) != CUDA_SUCCESS)
		return rc;
	if ((rc = gx_map(h, o->device, n, 1, &va)) == CUDA_SUCCESS) {
		/*
		 * From pageable memory cuMemcpyHtoD may return before its
		 * DMA is done: unmapping then faults the context (seen on
		 * the H200 as CUDA_ERROR_LAUNCH_FAILED in the client).
		 */
		if ((rc = drv.MemcpyHtoD(va, p, len)) == CUDA_SUCCESS)
			rc = drv.CtxSynchronize();
		gx_unmap(va, n);
	}
	/*
	 * Unmapped, nothing of this worker can write it any more: what it
	 * holds now is what every import gets.  A kernel of this client's
	 * that wrote it while it was writable is caught here.
	 */
	if (rc == CUDA_SUCCESS)
		rc = gx_check(h, o->device, n, p, len);
	if (rc == CUDA_SUCCESS)
		rc = drv.MemExportToShareableHandle(&f, h,
		    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
	/* The descriptor holds the memory now. */
	drv.MemRelease(h);
	if (rc != CUDA_SUCCESS)
		return rc;
	*device = o->device;
	*fd = f;
	*asize = n;
	return CUDA_SUCCESS;
}

static int
cuda_gpu_import(struct rcall *c, int device, int fd, uint64_t asize,
    size_t len)
{
	CUmemGenericAllocationHandle h;
	struct robj *o;
	CUdeviceptr va;
	CUstream s;
	CUresult rc;

	if ((rc = gtier_dest(c, device, len, &o, &s)) != CUDA_SUCCESS)
		return rc;
	if (len > asize)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = drv.MemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
	    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != CUDA_SUCCESS)
		return rc;
	/* Read-only: the copy only reads it. */
	if ((rc = gx_map(h, o->device, asize, 0, &va)) == CUDA_SUCCESS) {
		/* In the stream's order, and done before the unmap. */
		if (!c->in[2].u) {
			if ((rc = drv.MemcpyDtoD(c->in[3].u, va, len)) ==
			    CUDA_SUCCESS)
				rc = drv.CtxSynchronize();
		} else if ((rc = drv.MemcpyDtoDAsync(c->in[3].u, va, len,
		    s)) == CUDA_SUCCESS)
			rc = drv.StreamSynchronize(s);
		gx_unmap(va, asize);
	}
	drv.MemRelease(h);
	return rc;
}

static int
cuda_ctx_device(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_CTX);

	return o != NULL && o->h != NULL ? o->device : -1;
}

/* ---- the JIT linker and stream memory operations ----------------------- */

/*
 * JIT options as the driver takes them, with log buffers of the server's
 * own (the client's stay in the client: their text goes back).
 */
struct cjit {
	unsigned	 n;
	CUjit_option	 opt[RPC_JIT_OPTS_MAX];
	void		*val[RPC_JIT_OPTS_MAX];
	char		*log[RPC_JIT_OPTS_MAX];
	size_t		 logsz[RPC_JIT_OPTS_MAX];
};

struct clink {
	CUlinkState	 st;
	uint64_t	 ctx;		/* the client's id of its context */
	struct cjit	 jo;		/* the create's, kept for its life */
};

static void
cjit_free(struct cjit *j)
{
	unsigned i;

	for (i = 0; i < j->n; i++)
		free(j->log[i]);
	j->n = 0;
}

/* check_call passed the list. */
static int
cjit_make(struct cjit *j, const struct rpc_val *v)
{
	int opt[RPC_JIT_OPTS_MAX];
	uint64_t val[RPC_JIT_OPTS_MAX];
	unsigned i, k, n;
	int size;

	memset(j, 0, sizeof *j);
	if (check_jit_opts(v, opt, val, &n) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < n; i++) {
		j->opt[i] = (CUjit_option)opt[i];
		j->val[i] = (void *)(uintptr_t)val[i];
	}
	j->n = n;
	for (i = 0; i < n; i++) {
		if (opt[i] == CU_JIT_INFO_LOG_BUFFER)
			size = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
		else if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
			size = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
		else
			continue;
		for (k = 0; k < n; k++)
			if (opt[k] == size)
				j->logsz[i] = (size_t)val[k];
		if ((j->log[i] = calloc(1, j->logsz[i] + 1)) == NULL) {
			cjit_free(j);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		j->val[i] = j->log[i];
	}
	return CUDA_SUCCESS;
}

/* The options' values after a call, and the logs' text (rpc.h). */
static void
cjit_outs(struct pw *w, const struct cjit *j)
{
	size_t len;
	unsigned i;

	for (i = 0; i < j->n; i++) {
		if (j->log[i] != NULL) {
			pw_u64(w, 0);
			len = strnlen(j->log[i], j->logsz[i]);
			pw_u32(w, (uint32_t)len);
			pw_bytes(w, j->log[i], len);
		} else
			pw_u64(w, (uint64_t)(uintptr_t)j->val[i]);
	}
}

static void
cuda_link_free(void *h)
{
	struct clink *l = h;

	if (l->st != NULL)
		drv.LinkDestroy(l->st);
	cjit_free(&l->jo);
	free(l);
}

/* in: ctx, id, options */
static int
c_link_create(struct rcall *c)
{
	struct clink *l;
	CUresult rc;

	CTX(c, 0);
	if ((l = calloc(1, sizeof *l)) == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	l->ctx = c->in[0].u;
	if ((rc = cjit_make(&l->jo, &c->in[2])) != CUDA_SUCCESS ||
	    (rc = drv.LinkCreate(l->jo.n, l->jo.opt, l->jo.val, &l->st)) !=
	    CUDA_SUCCESS) {
		cuda_link_free(l);
		return rc;
	}
	/* No context's: a link outlives them, as in the driver. */
	if (robj_new(c->cl, c->in[1].u, RK_LINK, l) == NULL) {
		cuda_link_free(l);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* The link named by in[0], in its context where that still lives. */
static struct clink *
cuda_link(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_LINK);
	struct clink *l;
	CUresult rc;

	if (o == NULL)
		return NULL;
	l = o->h;
	(void)cuda_ctx(c, l->ctx, &rc);
	return l;
}

/* in: link, type, data, name, options -> result, create's, own outputs */
static int
c_link_add(struct rcall *c)
{
	char name[RPC_STRING_MAX + 1];
	struct clink *l;
	struct cjit j;
	size_t first;
	CUresult rc;

	if ((l = cuda_link(c)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (rval_str(&c->in[3], name, sizeof name) == -1)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = cjit_make(&j, &c->in[4])) != CUDA_SUCCESS)
		return rc;
	/* The driver reads the input; it does not keep it. */
	c->out[0].u = drv.LinkAddData(l->st, (CUjitInputType)c->in[1].u,
	    (void *)(uintptr_t)c->in[2].p, c->in[2].len, name, j.n, j.opt,
	    j.val);
	cjit_outs(&c->blob, &l->jo);
	first = c->blob.len;
	cjit_outs(&c->blob, &j);
	cjit_free(&j);
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)first;
	c->out[2].p = c->blob.p + first;
	c->out[2].len = (uint32_t)(c->blob.len - first);
	return CUDA_SUCCESS;
}

/* in: link -> result, cubin, create's outputs */
static int
c_link_complete(struct rcall *c)
{
	struct clink *l;
	void *cubin = NULL;
	size_t n = 0;

	if ((l = cuda_link(c)) == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	c->out[0].u = drv.LinkComplete(l->st, &cubin, &n);
	if (c->out[0].u != CUDA_SUCCESS || n > UINT32_MAX)
		cubin = NULL, n = 0;
	/* The link state owns it, and lives past the reply. */
	c->out[1].p = cubin;
	c->out[1].len = (uint32_t)n;
	cjit_outs(&c->blob, &l->jo);
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[2].p = c->blob.p;
	c->out[2].len = (uint32_t)c->blob.len;
	return CUDA_SUCCESS;
}

/*
 * in: ctx, id, image, library, options -> result, function table, outputs
 * (the outputs also when the load failed: a compile's error log)
 */
static int
c_module_load_ex(struct rcall *c)
{
	struct cjit j;
	size_t first;
	CUresult rc;

	if ((rc = cjit_make(&j, &c->in[4])) != CUDA_SUCCESS)
		return rc;
	c->out[0].u = cuda_load(c, (int)c->in[3].u, j.n, j.opt, j.val);
	if (c->out[0].u != CUDA_SUCCESS)
		c->blob.len = 0;
	first = c->blob.len;
	cjit_outs(&c->blob, &j);
	cjit_free(&j);
	if (c->blob.bad)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->out[1].p = c->blob.p;
	c->out[1].len = (uint32_t)first;
	c->out[2].p = c->blob.p + first;
	c->out[2].len = (uint32_t)(c->blob.len - first);
	return CUDA_SUCCESS;
}

static int
c_link_destroy(struct rcall *c)
{
	struct robj *o = robj_get(c->cl, c->in[0].u, RK_LINK);

	if (o == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	cuda_link_free(o->h);
	o->h = NULL;
	robj_del(c->cl, c->in[0].u);
	return CUDA_SUCCESS;
}

/*
 * The operations of field f of c (check_call passed their types) into
 * ops, *n of them: CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE for an
 * address not the client's.
 */
static int
memops_decode(struct rcall *c, int f, CUstreamBatchMemOpParams *ops,
    uint32_t *pn)
{
	struct pr r;
	uint32_t i, n = c->in[f].len / RPC_MEMOP_LEN, type, flags;
	uint64_t addr, val;

	*pn = n;
	pr_init(&r, c->in[f].p, c->in[f].len);
	memset(ops, 0, n * sizeof *ops);
	for (i = 0; i < n; i++) {
		type = pr_u32(&r);
		flags = pr_u32(&r);
		addr = pr_u64(&r);
		val = pr_u64(&r);
		switch (type) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			/* Only the client's memory, mapped host memory's
			 * device side among it. */
			if (rmem_check(c->cl, addr, type ==
			    CU_STREAM_MEM_OP_WAIT_VALUE_64 || type ==
			    CU_STREAM_MEM_OP_WRITE_VALUE_64 ? 8 : 4) == -1)
				return CUDA_ERROR_INVALID_VALUE;
			break;
		}
		cuwire_memop_set(&ops[i], type, flags, addr, val);
	}
	return CUDA_SUCCESS;
}

/* in: ctx, stream, flags, operations (check_call passed their types) */
static int
c_stream_memop(struct rcall *c)
{
	CUstreamBatchMemOpParams ops[RPC_MEMOPS_MAX];
	uint32_t n;
	CUstream s;
	int rc;

	CTX(c, 0);
	STREAM(c, 1, s);
	if ((rc = memops_decode(c, 3, ops, &n)) != CUDA_SUCCESS)
		return rc;
	return drv.StreamBatchMemOp(s, n, ops, (unsigned)c->in[2].u);
}

/* The driver's batch node calls, where it has them. */
static struct {
	CUresult	(*add)(CUgraphNode *, CUgraph, const CUgraphNode *,
			    size_t, const CUDA_BATCH_MEM_OP_NODE_PARAMS *);
	CUresult	(*get)(CUgraphNode, CUDA_BATCH_MEM_OP_NODE_PARAMS *);
	CUresult	(*set)(CUgraphNode,
			    const CUDA_BATCH_MEM_OP_NODE_PARAMS *);
	CUresult	(*eset)(CUgraphExec, CUgraphNode,
			    const CUDA_BATCH_MEM_OP_NODE_PARAMS *);
	int		 looked;
} bnode;

static int
bnode_look(void)
{
	if (!bnode.looked) {
		bnode.add = (__typeof__(bnode.add))drv_opt(
		    "cuGraphAddBatchMemOpNode", 11070);
		bnode.get = (__typeof__(bnode.get))drv_opt(
		    "cuGraphBatchMemOpNodeGetParams", 11070);
		bnode.set = (__typeof__(bnode.set))drv_opt(
		    "cuGraphBatchMemOpNodeSetParams", 11070);
		bnode.eset = (__typeof__(bnode.eset))drv_opt(
		    "cuGraphExecBatchMemOpNodeSetParams", 11070);
		bnode.looked = 1;
	}
	return bnode.add != NULL && bnode.get != NULL && bnode.set != NULL &&
	    bnode.eset != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * A batch node: sub is its R_STREAM_MEMOP request; the node of graph g
 * added after deps (e and node NULL), or set, on the graph (e NULL) or
 * on exec e.
 */
static int
bnode_do(struct rcall *sub, struct robj *ctx, struct robj *g, struct robj *e,
    const CUgraphNode *deps, size_t nd, CUgraphNode *node)
{
	CUstreamBatchMemOpParams ops[RPC_MEMOPS_MAX];
	CUDA_BATCH_MEM_OP_NODE_PARAMS p;
	uint32_t n;
	int rc;

	if ((rc = bnode_look()) != CUDA_SUCCESS ||
	    (rc = memops_decode(sub, 3, ops, &n)) != CUDA_SUCCESS)
		return rc;
	memset(&p, 0, sizeof p);
	p.ctx = ctx->h;
	p.count = n;
	p.paramArray = ops;
	p.flags = (unsigned)sub->in[2].u;
	if (g != NULL)
		return bnode.add(node, g->h, deps, nd, &p);
	return e != NULL ? bnode.eset(e->h, *node, &p) : bnode.set(*node, &p);
}

/* A batch node's operations as R_STREAM_MEMOP carries them, into w. */
static int
bnode_get(CUgraphNode node, struct pw *w, uint64_t *flags)
{
	CUDA_BATCH_MEM_OP_NODE_PARAMS p;
	const CUstreamBatchMemOpParams *o;
	uint64_t addr, val;
	uint32_t i, of;
	int rc;

	if ((rc = bnode_look()) != CUDA_SUCCESS)
		return rc;
	memset(&p, 0, sizeof p);
	if ((rc = bnode.get(node, &p)) != CUDA_SUCCESS)
		return rc;
	for (i = 0; i < p.count && p.paramArray != NULL; i++) {
		o = &p.paramArray[i];
		addr = val = 0;
		switch (o->operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
			addr = o->waitValue.address;
			val = o->waitValue.value64;
			of = o->waitValue.flags;
			break;
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			addr = o->writeValue.address;
			val = o->writeValue.value64;
			of = o->writeValue.flags;
			break;
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
			of = o->flushRemoteWrites.flags;
			break;
		default:
			of = o->memoryBarrier.flags;
			break;
		}
		pw_u32(w, (uint32_t)o->operation);
		pw_u32(w, of);
		pw_u64(w, addr);
		pw_u64(w, val);
	}
	*flags = p.flags;
	return CUDA_SUCCESS;
}

/*
 * ---- migration (migrate.h) -----------------------------------------------
 * The state is the host backend's (gleam-protocol(5), Migration), in its
 * order, under a magic of its own (a host backend's state does not load
 * here, nor this one there), with what the driver needs besides:
 * contexts' flags, streams' flags and priorities, functions' attributes,
 * globals' sizes.  Each section goes in the order of the client's ids,
 * which is the order it made them in, so that the driver here places what
 * it chooses the places of (contexts' own memory, modules) as it did
 * there.  The driver cannot be told where cuMemAlloc places: a migrated
 * client's allocations are VMM memory here, mapped at their addresses
 * before any module loads (struct crun); a pool's range is reserved
 * where it was (cp_reserve chose it in a region of its own).  A module's
 * global is where the driver puts it: the load fails if one moved.
 */
#define MIG_MAGIC	0x434d4c47u	/* "GLMC" */
#define MIG_VERSION	1
#define MIG_MAX		(1u << 20)	/* objects of a kind, allocations */

static int
mig_idcmp(const void *a, const void *b)
{
	const struct robj *x = *(struct robj *const *)a;
	const struct robj *y = *(struct robj *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The client's objects of kind or kind2, in the order of their ids. */
static struct robj **
mig_objs(struct rclient *cl, int kind, int kind2, size_t *n)
{
	struct robj **v;
	size_t i = 0, k = 0;
	uint64_t id;
	void *p;

	if ((v = calloc(cl->objs.n + 1, sizeof *v)) == NULL)
		return NULL;
	while (htab_next(&cl->objs, &i, &id, &p))
		if (((struct robj *)p)->kind == kind ||
		    ((struct robj *)p)->kind == kind2)
			v[k++] = p;
	qsort(v, k, sizeof *v, mig_idcmp);
	*n = k;
	return v;
}

/* A cuMemAlloc allocation (not a pool's mapping, not a global). */
static int
mig_is_alloc(const struct rrange *rg)
{
	return !rg->global && !pool_holds(rg->owner, rg->base);
}

/* A global's context, if it is a live one of the client's. */
static struct robj *
mig_live_ctx(struct rclient *cl, uint64_t id)
{
	struct robj *x = id != 0 ? robj_get(cl, id, RK_CTX) : NULL;

	return x != NULL && x->h != NULL ? x : NULL;
}

static int
cuda_mig_save(struct rclient *cl, struct pw *w, char *why, size_t whylen)
{
	static const int order[][2] = { { RK_CTX, RK_CTX },
	    { RK_MODULE, RK_LIBRARY }, { RK_FUNC, RK_KERNEL },
	    { RK_STREAM, RK_STREAM }, { RK_EVENT, RK_EVENT } };
	struct robj **v = NULL, *o;
	struct rglobal *g;
	const char *name;
	size_t i, j, k, n;
	uint64_t id;
	void *p;
	CUresult rc;

	if (!vmm_empty(cl)) {
		snprintf(why, whylen, "it holds VMM memory (not moved yet)");
		return -1;
	}
	for (i = 0; htab_next(&cl->objs, &i, &id, &p);) {
		o = p;
		if (o->kind == RK_GRAPH || o->kind == RK_GEXEC ||
		    o->kind == RK_LINK || o->kind == RK_TEXREF ||
		    o->kind == RK_SURFREF) {
			snprintf(why, whylen, "it holds %s (not moved yet)",
			    o->kind == RK_LINK ? "a JIT link" :
			    o->kind == RK_TEXREF || o->kind == RK_SURFREF ?
			    "texture references" : "graphs");
			return -1;
		}
		if (o->kind == RK_STREAM && o->cap != NULL) {
			snprintf(why, whylen, "a stream capture is open");
			return -1;
		}
		if (o->kind == RK_RESDESC || (o->kind == RK_CTX &&
		    o->green != NULL)) {
			snprintf(why, whylen, "it holds green contexts (not "
			    "moved yet)");
			return -1;
		}
		if (o->kind == RK_EVENT && (o->flags & CU_EVENT_INTERPROCESS)) {
			snprintf(why, whylen, "it holds an interprocess event "
			    "(not moved yet)");
			return -1;
		}
		if ((o->kind == RK_MODULE || o->kind == RK_LIBRARY) &&
		    o->img == NULL) {
			snprintf(why, whylen, "a module's image was not kept "
			    "(loaded before migration was configured)");
			return -1;
		}
	}
	/* Its work done first: what it wrote is what moves. */
	for (i = 0; htab_next(&cl->objs, &i, &id, &p);) {
		o = p;
		if (o->kind != RK_CTX || o->h == NULL)
			continue;
		if ((rc = drv.CtxSetCurrent(o->h)) != CUDA_SUCCESS ||
		    (rc = drv.CtxSynchronize()) != CUDA_SUCCESS) {
			snprintf(why, whylen, "context %llu: its work failed "
			    "(error %d), which does not move",
			    (unsigned long long)id, rc);
			return -1;
		}
	}
	pw_u32(w, MIG_MAGIC);
	pw_u32(w, MIG_VERSION);
	/* The memory cuMemAlloc placed. */
	for (i = n = 0; i < cl->nranges; i++)
		n += mig_is_alloc(&cl->ranges[i]);
	pw_u32(w, (uint32_t)n);
	for (i = 0; i < cl->nranges; i++)
		if (mig_is_alloc(&cl->ranges[i])) {
			pw_u64(w, cl->ranges[i].base);
			pw_u64(w, cl->ranges[i].size);
		}
	for (k = 0; k < sizeof order / sizeof order[0]; k++) {
		if ((v = mig_objs(cl, order[k][0], order[k][1], &n)) == NULL) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		pw_u32(w, (uint32_t)n);
		for (j = 0; j < n; j++) {
			o = v[j];
			pw_u64(w, o->id);
			switch (order[k][0]) {
			case RK_CTX:
				pw_u32(w, (uint32_t)o->device);
				pw_u32(w, (uint32_t)o->refs);
				pw_u8(w, o->h != NULL);
				if (o->h == NULL)
					break;
				pw_u32(w, o->flags);
				for (i = id = 0; i < cl->nranges; i++)
					id += cl->ranges[i].owner == o &&
					    mig_is_alloc(&cl->ranges[i]);
				pw_u32(w, (uint32_t)id);
				for (i = 0; i < cl->nranges; i++)
					if (cl->ranges[i].owner == o &&
					    mig_is_alloc(&cl->ranges[i]))
						pw_u64(w, cl->ranges[i].base);
				pool_save(o, w);
				break;
			case RK_MODULE:
				pw_u16(w, (uint16_t)o->kind);
				pw_u64(w, o->ctx != NULL ? o->ctx->id : 0);
				pw_u32(w, (uint32_t)o->imglen);
				pw_bytes(w, o->img, o->imglen);
				pw_u32(w, 0);	/* attributes: the functions' */
				for (id = 0, g = o->globals; g != NULL;
				    g = g->next)
					id += mig_live_ctx(cl, g->ctx) != NULL;
				pw_u32(w, (uint32_t)id);
				for (g = o->globals; g != NULL; g = g->next) {
					if (mig_live_ctx(cl, g->ctx) == NULL)
						continue;
					pw_str(w, g->name);
					pw_u64(w, g->ctx);
					pw_u64(w, g->base);
					pw_u64(w, g->size);
				}
				break;
			case RK_FUNC:
				name = NULL;
				if (o->kind == RK_KERNEL)
					rc = drv.KernelGetName(&name, o->h);
				else
					rc = drv.FuncGetName(&name, o->h);
				if (rc != CUDA_SUCCESS || name == NULL ||
				    strlen(name) > RPC_STRING_MAX) {
					snprintf(why, whylen, "function %llu: "
					    "no name (error %d)",
					    (unsigned long long)o->id, rc);
					free(v);
					return -1;
				}
				pw_u16(w, (uint16_t)o->kind);
				pw_u64(w, o->parent->id);
				pw_str(w, name);
				pw_u32(w, o->nattrs);
				for (i = 0; i < o->nattrs; i++) {
					pw_u32(w, (uint32_t)o->attrs[i].attr);
					pw_u32(w, (uint32_t)o->attrs[i].value);
				}
				pw_u32(w, (uint32_t)(o->cache - 1));
				break;
			case RK_STREAM:
				pw_u64(w, o->ctx->id);
				pw_u32(w, o->flags);
				pw_u32(w, (uint32_t)o->prio);
				break;
			case RK_EVENT:
				pw_u64(w, o->ctx->id);
				pw_u32(w, o->flags);
				pw_u8(w, (uint8_t)o->recorded);
				pw_u64(w, 0);	/* when: not known here */
				pw_u32(w, 0);
				break;
			}
		}
		free(v);
	}
	pw_u32(w, 0);		/* no device output held back here */
	if (w->bad) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

/* An allocation to be placed, and the context that claims it. */
struct mplace {
	uint64_t	 base, size;
	struct robj	*ctx;
};

static int
mplace_cmp(const void *a, const void *b)
{
	const struct mplace *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

#define ROUNDUP(x, g)	(((x) + (g) - 1) & ~((g) - 1))

/*
 * Maps VMM memory at the addresses of every allocation in pl (sorted,
 * not overlapping, each claimed by a live context): a run of granules for
 * those that share granules.  -1 with why.
 */
static int
cuda_mig_place(struct rclient *cl, struct mplace *pl, size_t n, char *why,
    size_t whylen)
{
	struct cclient *cc = cl->be;
	CUmemAllocationProp prop;
	CUmemAccessDesc d;
	struct robj *ctx;
	struct crun *u;
	uint64_t gran, lo, hi;
	size_t i, j, k;
	CUresult rc;

	for (i = 0; i < n; i = j) {
		ctx = pl[i].ctx;
		if ((rc = drv.CtxSetCurrent(ctx->h)) != CUDA_SUCCESS ||
		    (rc = cp_granule(ctx, &gran)) != CUDA_SUCCESS ||
		    gran == 0 || (gran & (gran - 1)) != 0) {
			snprintf(why, whylen, "no allocation granule on "
			    "device %d (error %d)", ctx->device, rc);
			return -1;
		}
		lo = pl[i].base & ~(gran - 1);
		hi = ROUNDUP(pl[i].base + pl[i].size, gran);
		for (j = i + 1; j < n && pl[j].base < hi; j++) {
			if (pl[j].ctx != ctx) {
				snprintf(why, whylen, "allocations of two "
				    "contexts share the granule at 0x%llx",
				    (unsigned long long)(pl[j].base &
				    ~(gran - 1)));
				return -1;
			}
			if (ROUNDUP(pl[j].base + pl[j].size, gran) > hi)
				hi = ROUNDUP(pl[j].base + pl[j].size, gran);
		}
		if ((u = calloc(1, sizeof *u)) == NULL) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		if ((rc = cuda_reserve_at(lo, hi - lo)) != CUDA_SUCCESS) {
			free(u);
			snprintf(why, whylen, "device addresses 0x%llx to "
			    "0x%llx are taken here (error %d)",
			    (unsigned long long)lo, (unsigned long long)hi, rc);
			return -1;
		}
		/* The client's from here: client_free drops it. */
		u->ctx = ctx;
		u->va = lo;
		u->size = hi - lo;
		u->next = cc->runs;
		cc->runs = u;
		cuda_prop(ctx, &prop);
		memset(&d, 0, sizeof d);
		d.location = prop.location;
		d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		if ((rc = drv.MemCreate(&u->h, hi - lo, &prop, 0)) !=
		    CUDA_SUCCESS) {
			u->h = 0;
			snprintf(why, whylen, "no device memory for 0x%llx to "
			    "0x%llx (error %d)", (unsigned long long)lo,
			    (unsigned long long)hi, rc);
			return -1;
		}
		if ((rc = drv.MemMap(lo, hi - lo, 0, u->h, 0)) != CUDA_SUCCESS ||
		    (u->mapped = 1, rc = drv.MemSetAccess(lo, hi - lo, &d, 1)) !=
		    CUDA_SUCCESS) {
			snprintf(why, whylen, "cannot map device memory at "
			    "0x%llx (error %d)", (unsigned long long)lo, rc);
			return -1;
		}
		for (k = i; k < j; k++) {
			if (htab_put(&cc->moved, pl[k].base, u) == -1 ||
			    rmem_add(cl, pl[k].base, pl[k].size, 0, ctx) == -1) {
				htab_del(&cc->moved, pl[k].base);
				snprintf(why, whylen, "out of memory");
				return -1;
			}
			u->refs++;
		}
	}
	return 0;
}

/* A live context of the client's, made current; NULL otherwise. */
static struct robj *
mig_ctx_cur(struct rclient *cl, uint64_t id)
{
	struct robj *x = mig_live_ctx(cl, id);

	return x != NULL && drv.CtxSetCurrent(x->h) == CUDA_SUCCESS ? x : NULL;
}

/* Contexts, with their allocations claimed in pl, and their pools. */
static int
mig_load_ctxs(struct rclient *cl, struct pr *r, struct mplace *pl,
    size_t np, char *why, size_t whylen)
{
	struct mplace key, *f;
	struct robj *o;
	CUcontext h;
	uint32_t n, nn, i, j, dev, refs, flags;
	uint64_t id;
	CUresult rc;

	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		dev = pr_u32(r);
		refs = pr_u32(r);
		if (r->bad || i >= MIG_MAX || dev >= (uint32_t)drv_ndev ||
		    refs > INT32_MAX ||
		    (o = robj_new(cl, id, RK_CTX, NULL)) == NULL)
			return -1;
		o->device = (int)dev;
		o->refs = (int)refs;
		if (pr_u8(r) == 0)
			continue;
		flags = pr_u32(r);
		if (r->bad || flags > 0x7)
			return -1;
		if ((rc = drv.CtxCreate(&h, flags, (CUdevice)dev)) !=
		    CUDA_SUCCESS) {
			snprintf(why, whylen, "no context here on device %u "
			    "(error %d)", dev, rc);
			return -1;
		}
		o->h = h;
		o->flags = flags;
		nn = pr_u32(r);
		for (j = 0; j < nn && !r->bad; j++) {
			key.base = pr_u64(r);
			f = bsearch(&key, pl, np, sizeof *pl, mplace_cmp);
			if (f == NULL || f->ctx != NULL)
				return -1;	/* not listed, or twice */
			f->ctx = o;
		}
		if (r->bad || drv.CtxSetCurrent(h) != CUDA_SUCCESS ||
		    pool_load(cl, o, r, &cuda_pool, why, whylen) == -1)
			return -1;
		snprintf(why, whylen, "malformed state");
	}
	return r->bad ? -1 : 0;
}

#define MIG_SPACERS	64	/* reservations steering the modules */
#define MIG_SPACE_GRAN	(2ull << 20)	/* the driver's VA chunk */

struct mglobal {
	char		 name[RPC_STRING_MAX + 1];
	uint64_t	 cid, base, size;
};

struct mspacer {
	CUdeviceptr	 at;
	size_t		 size;
	void		*img;	/* else an image loaded and kept there */
	uint16_t	 kind;	/* img's */
};

/* o's image loaded as its kind: the driver's result, o->h set. */
static CUresult
mig_image_load(struct robj *o, uint16_t kind)
{
	CUmodule mod;
	CUlibrary lib;
	CUresult rc;

	if (kind == RK_MODULE) {
		rc = drv.ModuleLoadData(&mod, o->img);
		o->h = rc == CUDA_SUCCESS ? (void *)mod : NULL;
	} else {
		rc = drv.LibraryLoadData(&lib, o->img, NULL, NULL, 0, NULL,
		    NULL, 0);
		o->h = rc == CUDA_SUCCESS ? (void *)lib : NULL;
	}
	return rc;
}

/* A module or library the driver loaded (h) unloaded, as its kind. */
static void
mig_handle_unload(void *h, uint16_t kind)
{
	if (h == NULL)
		return;
	if (kind == RK_MODULE)
		(void)drv.ModuleUnload((CUmodule)h);
	else
		(void)drv.LibraryUnload((CUlibrary)h);
}

static void
mig_image_unload(struct robj *o, uint16_t kind)
{
	mig_handle_unload(o->h, kind);
	o->h = NULL;
}

/*
 * Whether o's globals (n of g) are where the client was told: 0 all of
 * them, 1 one is not (*which, at *got here), -1 an error (why).
 */
static int
mig_globals_at(struct rclient *cl, struct robj *o, uint16_t kind,
    const struct mglobal *g, uint32_t n, uint32_t *which, CUdeviceptr *got,
    char *why, size_t whylen)
{
	struct robj *x;
	CUdeviceptr p;
	size_t sz;
	uint32_t j;
	CUresult rc;

	for (j = 0; j < n; j++) {
		if ((x = mig_ctx_cur(cl, g[j].cid)) == NULL ||
		    (kind == RK_MODULE && x != o->ctx)) {
			snprintf(why, whylen, "malformed state");
			return -1;
		}
		rc = kind == RK_MODULE ? drv.ModuleGetGlobal(&p, &sz, o->h,
		    g[j].name) : drv.LibraryGetGlobal(&p, &sz, o->h,
		    g[j].name);
		if (rc != CUDA_SUCCESS) {
			snprintf(why, whylen, "module %llu has no global %s "
			    "here (error %d)", (unsigned long long)o->id,
			    g[j].name, rc);
			return -1;
		}
		if (sz != g[j].size) {
			snprintf(why, whylen, "module %llu's global %s has "
			    "%zu bytes here, %llu there",
			    (unsigned long long)o->id, g[j].name, sz,
			    (unsigned long long)g[j].size);
			return -1;
		}
		if (p != g[j].base) {
			*which = j;
			*got = p;
			return 1;
		}
	}
	return 0;
}

/* A reservation of size bytes exactly at at: size, else 0. */
static size_t
mig_spacer(CUdeviceptr at, size_t size)
{
	CUdeviceptr got = 0;

	if (drv.MemAddressReserve(&got, size, 0, at, 0) != CUDA_SUCCESS)
		return 0;
	if (got != at) {
		(void)drv.MemAddressFree(got, size);
		return 0;
	}
	return size;
}

/*
 * A module of size bytes of data alone (in the constant bank if
 * constant, else global memory), loaded in the current context: its
 * handle, else NULL.  Kept loaded, it moves what the driver places next
 * in the same chunk up by its size.
 */
static void *
mig_pad(size_t size, int constant)
{
	char ptx[256];
	CUmodule m;

	snprintf(ptx, sizeof ptx, ".version 7.0\n.target sm_52\n"
	    ".address_size 64\n.visible .%s .align 8 .b8 gleam_pad[%zu];\n",
	    constant ? "const" : "global", size);
	if (drv.ModuleLoadData(&m, ptx) != CUDA_SUCCESS)
		return NULL;
	return m;
}

/*
 * Modules and libraries, each loaded from its image, its globals checked
 * to be where the client was told they are.  The driver places a
 * module's data where it likes, in chunks of its VA space: the source
 * had other things (freed since, or its own) below where a global went.
 * A global placed lower here is steered: the module unloaded, the VA
 * between where it went and where it must be reserved (or, where some of
 * that space is taken here, the chunk where it went; or, where the driver
 * keeps that chunk for itself, a copy of the module left loaded in it),
 * the module loaded again.  One placed lower in the chunk where it must
 * be (the source had data of other modules before it there) is steered
 * with pads: modules of data alone, as many bytes as it fell short, in
 * global memory or, where that moved nothing, the constant bank; a pad
 * that moved it too far is made smaller.  The spacers and pads go once
 * every module is in.  One placed higher (its place taken here) cannot
 * be: the client stays where it is.
 */
static int
mig_load_mods(struct rclient *cl, struct pr *r, char *why, size_t whylen)
{
	struct mspacer sp[MIG_SPACERS];
	struct mglobal *g = NULL;
	struct robj *o, *x, *gx;
	const void *img;
	CUdeviceptr p, lo, hi, lastp;
	size_t padsz, want;
	int padconst, nopad;
	uint64_t id, cid;
	size_t sz;
	uint32_t n, nn, ng, i, j, tries, which;
	uint16_t kind;
	size_t nsp = 0;
	CUresult rc;
	int k, ret = -1;

	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		char name[RPC_STRING_MAX + 1];

		id = pr_u64(r);
		kind = pr_u16(r);
		cid = pr_u64(r);
		nn = pr_u32(r);
		img = pr_take(r, nn);
		if (r->bad || i >= MIG_MAX || nn == 0 ||
		    (kind != RK_MODULE && kind != RK_LIBRARY))
			goto out;
		x = cid != 0 ? mig_ctx_cur(cl, cid) : NULL;
		if ((cid != 0 && x == NULL) || (kind == RK_MODULE && x == NULL))
			goto out;	/* a module has a context */
		if ((o = robj_new(cl, id, kind, NULL)) == NULL)
			goto out;
		o->ctx = x;
		if ((o->img = malloc(nn)) == NULL) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		memcpy(o->img, img, nn);
		o->imglen = nn;
		/* Kernels' attributes: the functions' (none come here). */
		nn = pr_u32(r);
		for (j = 0; j < nn && !r->bad; j++) {
			pr_str(r, name, RPC_STRING_MAX);
			(void)pr_u32(r);
			(void)pr_u32(r);
		}
		ng = pr_u32(r);
		if (r->bad || ng > (r->len - r->off) / 24)
			goto out;
		free(g);
		if ((g = calloc(ng + 1, sizeof *g)) == NULL) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		for (j = 0; j < ng && !r->bad; j++) {
			pr_str(r, g[j].name, RPC_STRING_MAX);
			g[j].cid = pr_u64(r);
			g[j].base = pr_u64(r);
			g[j].size = pr_u64(r);
		}
		if (r->bad)
			goto out;
		lastp = 0;
		padsz = 0;
		padconst = 0;
		nopad = 0;
		for (tries = 0;; tries++) {
			if (x != NULL && drv.CtxSetCurrent((CUcontext)x->h) !=
			    CUDA_SUCCESS)
				goto out;
			if ((rc = mig_image_load(o, kind)) != CUDA_SUCCESS) {
				robj_del(cl, id);
				snprintf(why, whylen, "module %llu does not "
				    "load here (error %d)",
				    (unsigned long long)id, rc);
				goto out;
			}
			k = mig_globals_at(cl, o, kind, g, ng, &which, &p, why,
			    whylen);
			if (k == 0)
				break;
			if (k == -1)
				goto out;
			/* Steered below where it must be, if it can be: the
			 * module out first, its chunk free again. */
			lo = p & ~(CUdeviceptr)(MIG_SPACE_GRAN - 1);
			hi = g[which].base & ~(CUdeviceptr)(MIG_SPACE_GRAN - 1);
			sz = 0;
			want = 0;
			if (padsz > 0) {
				/* The last spacer is a pad: what it did. */
				if (p < g[which].base && p > lastp) {
					/* Not enough: another. */
					want = g[which].base - p;
					lastp = p;
				} else {
					/* Nothing (the global is in the other
					 * memory), or too much: it goes, one of
					 * the other kind, or smaller, instead. */
					mig_image_unload(o, kind);
					nsp--;
					mig_handle_unload(sp[nsp].img,
					    sp[nsp].kind);
					if (p == lastp && !padconst &&
					    padsz < 65536) {
						padconst = 1;
						want = padsz;
					} else if (p > g[which].base &&
					    p - g[which].base < padsz)
						want = padsz - (p - g[which].base);
					else
						nopad = 1;	/* the other ways */
					padsz = 0;
					if (want == 0)
						continue;	/* loaded again */
				}
			} else if (p < g[which].base && lo == hi && !nopad) {
				/* In its chunk, too low: a pad below it. */
				want = g[which].base - p;
				lastp = p;
			}
			if (want > 0 && nsp < MIG_SPACERS && tries < 16 &&
			    (gx = mig_ctx_cur(cl, g[which].cid)) != NULL) {
				if (o->h != NULL)
					mig_image_unload(o, kind);
				sp[nsp].img = NULL;
				if (drv.CtxSetCurrent((CUcontext)gx->h) ==
				    CUDA_SUCCESS)
					sp[nsp].img = mig_pad(want, padconst);
				sp[nsp].kind = RK_MODULE;
				if (sp[nsp].img == NULL) {
					/* No pad here: the other ways. */
					nopad = 1;
					padsz = 0;
					continue;
				}
				sz = 1;
				padsz = want;
			} else if (padsz == 0 && p < g[which].base &&
			    nsp < MIG_SPACERS) {
				mig_image_unload(o, kind);
				/* All the space below it at once, else
				 * (something of this side's in it) the chunk
				 * where it went. */
				if (hi > lo && (sz = mig_spacer(lo,
				    hi - lo)) == 0)
					sz = mig_spacer(lo, MIG_SPACE_GRAN);
				sp[nsp].img = NULL;
				/* Else the driver keeps that space for
				 * itself: a copy of the module kept where it
				 * went, the next one goes above it. */
				if (sz == 0 && mig_image_load(o, kind) ==
				    CUDA_SUCCESS) {
					sp[nsp].img = o->h;
					sp[nsp].kind = kind;
					o->h = NULL;
					sz = 1;
				}
			}
			if (sz == 0) {
				snprintf(why, whylen, "a module global would "
				    "move: the driver puts %s at 0x%llx here, "
				    "not 0x%llx (%s steered %zu time%s)",
				    g[which].name, (unsigned long long)p,
				    (unsigned long long)g[which].base,
				    p > g[which].base ? "its place is taken;" :
				    "the space below not free;", nsp,
				    nsp == 1 ? "" : "s");
				goto out;
			}
			sp[nsp].at = lo;
			sp[nsp++].size = sz;
		}
		if (tries > 0)
			log_debug("client %s: module %llu placed as it was after "
			    "%u tr%s", cl->addr, (unsigned long long)id, tries,
			    tries == 1 ? "y" : "ies");
		for (j = 0; j < ng; j++) {
			x = mig_ctx_cur(cl, g[j].cid);
			if (rmem_add(cl, g[j].base, g[j].size, 1,
			    kind == RK_MODULE ? o : x) == -1 ||
			    cuda_note_global(o, g[j].cid, g[j].name, g[j].base,
			    g[j].size) == -1) {
				snprintf(why, whylen, "out of memory");
				goto out;
			}
		}
	}
	ret = r->bad ? -1 : 0;
out:
	/* The modules are in: the space below them is the program's. */
	while (nsp > 0) {
		nsp--;
		if (sp[nsp].img != NULL)
			mig_handle_unload(sp[nsp].img, sp[nsp].kind);
		else
			(void)drv.MemAddressFree(sp[nsp].at, sp[nsp].size);
	}
	free(g);
	return ret;
}

/* Functions and kernels, with the attributes the client set. */
static int
mig_load_funcs(struct rclient *cl, struct pr *r, char *why, size_t whylen)
{
	char name[RPC_STRING_MAX + 1];
	struct robj *o, *x;
	uint64_t id, pid;
	uint32_t n, na, i, j;
	int32_t attr, value, cache;
	uint16_t kind;
	void *h;
	CUresult rc;

	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		kind = pr_u16(r);
		pid = pr_u64(r);
		pr_str(r, name, RPC_STRING_MAX);
		if (r->bad || i >= MIG_MAX || (kind != RK_FUNC &&
		    kind != RK_KERNEL) || (x = robj_get(cl, pid, kind ==
		    RK_FUNC ? RK_MODULE : RK_LIBRARY)) == NULL)
			return -1;
		if (x->ctx != NULL && x->ctx->h != NULL)
			drv.CtxSetCurrent(x->ctx->h);
		rc = kind == RK_KERNEL ? drv.LibraryGetKernel((CUkernel *)&h,
		    x->h, name) : drv.ModuleGetFunction((CUfunction *)&h, x->h,
		    name);
		if (rc != CUDA_SUCCESS) {
			snprintf(why, whylen, "kernel %s is not here (error "
			    "%d)", name, rc);
			return -1;
		}
		if ((o = robj_new(cl, id, kind, h)) == NULL)
			return -1;
		o->parent = x;
		o->ctx = x->ctx;
		if (cuda_params(o, h, kind == RK_KERNEL) == -1) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		na = pr_u32(r);
		if (na > CU_FUNC_ATTRIBUTE_MAX)
			return -1;
		for (j = 0; j < na && !r->bad; j++) {
			attr = (int32_t)pr_u32(r);
			value = (int32_t)pr_u32(r);
			if (r->bad || check_attr_value((uint32_t)attr, value) !=
			    CUDA_SUCCESS)
				return -1;
			if ((rc = cuda_set_attr(o, attr, value)) !=
			    CUDA_SUCCESS) {
				snprintf(why, whylen, "kernel %s: attribute "
				    "%d = %d refused here (error %d)", name,
				    attr, value, rc);
				return -1;
			}
			if (cuda_note_attr(o, attr, value) == -1) {
				snprintf(why, whylen, "out of memory");
				return -1;
			}
		}
		cache = (int32_t)pr_u32(r);
		if (r->bad || cache < -1 || cache > CU_FUNC_CACHE_PREFER_EQUAL)
			return -1;
		if (cache >= 0) {
			if ((rc = cuda_set_cache(o, cache)) != CUDA_SUCCESS) {
				snprintf(why, whylen, "kernel %s: cache "
				    "configuration %d refused here (error %d)",
				    name, cache, rc);
				return -1;
			}
			o->cache = cache + 1;
		}
	}
	return r->bad ? -1 : 0;
}

/* Streams and events, in their contexts. */
static int
mig_load_queues(struct rclient *cl, struct pr *r, char *why, size_t whylen)
{
	struct robj *o, *x;
	CUstream s;
	CUevent e;
	uint64_t id, cid;
	uint32_t n, i, flags;
	int32_t prio;
	int rec;
	CUresult rc;

	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		cid = pr_u64(r);
		flags = pr_u32(r);
		prio = (int32_t)pr_u32(r);
		if (r->bad || i >= MIG_MAX || id <= 2 ||
		    (flags & ~(uint32_t)CU_STREAM_NON_BLOCKING) != 0 ||
		    (x = mig_ctx_cur(cl, cid)) == NULL ||
		    htab_get(&cl->objs, id) != NULL)
			return -1;
		if ((rc = drv.StreamCreateWithPriority(&s, flags, prio)) !=
		    CUDA_SUCCESS) {
			snprintf(why, whylen, "no stream here (error %d)", rc);
			return -1;
		}
		if ((o = robj_new(cl, id, RK_STREAM, s)) == NULL) {
			drv.StreamDestroy(s);
			return -1;
		}
		o->ctx = x;
		o->flags = flags;
		o->prio = prio;
	}
	n = pr_u32(r);
	for (i = 0; i < n && !r->bad; i++) {
		id = pr_u64(r);
		cid = pr_u64(r);
		flags = pr_u32(r);
		rec = pr_u8(r) != 0;
		(void)pr_u64(r);
		(void)pr_u32(r);
		if (r->bad || i >= MIG_MAX || (flags &
		    ~(uint32_t)(CU_EVENT_BLOCKING_SYNC |
		    CU_EVENT_DISABLE_TIMING)) != 0 ||
		    (x = mig_ctx_cur(cl, cid)) == NULL ||
		    htab_get(&cl->objs, id) != NULL)
			return -1;
		if ((rc = drv.EventCreate(&e, flags)) != CUDA_SUCCESS) {
			snprintf(why, whylen, "no event here (error %d)", rc);
			return -1;
		}
		if ((o = robj_new(cl, id, RK_EVENT, e)) == NULL) {
			drv.EventDestroy(e);
			return -1;
		}
		o->ctx = x;
		o->flags = flags;
		/* Recorded there, and done: done here at once. */
		if (rec && (rc = drv.EventRecord(e, NULL)) != CUDA_SUCCESS) {
			snprintf(why, whylen, "an event does not record here "
			    "(error %d)", rc);
			return -1;
		}
		o->recorded = rec;
	}
	return r->bad ? -1 : 0;
}

static int
cuda_mig_load(struct rclient *cl, struct pr *r, char *why, size_t whylen)
{
	struct mplace *pl = NULL;
	uint32_t n, i;
	int rc = -1;

	snprintf(why, whylen, "malformed state");
	if (cl->be == NULL)
		return -1;
	if (pr_u32(r) != MIG_MAGIC || pr_u32(r) != MIG_VERSION || r->bad) {
		snprintf(why, whylen, "not a state this server reads (another "
		    "backend's, or another version)");
		return -1;
	}
	/* cuMemAlloc's allocations: claimed by contexts, placed after. */
	n = pr_u32(r);
	if (r->bad || n > MIG_MAX || n > (r->len - r->off) / 16)
		return -1;
	if ((pl = calloc(n ? n : 1, sizeof *pl)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		pl[i].base = pr_u64(r);
		pl[i].size = pr_u64(r);
		if (pl[i].base == 0 || pl[i].size == 0 ||
		    pl[i].size > (1ull << 48) || pl[i].base >= (1ull << 57))
			goto out;
	}
	qsort(pl, n, sizeof *pl, mplace_cmp);
	for (i = 1; i < n; i++)
		if (pl[i].base < pl[i - 1].base + pl[i - 1].size)
			goto out;	/* overlapping */
	if (mig_load_ctxs(cl, r, pl, n, why, whylen) == -1)
		goto out;
	for (i = 0; i < n; i++)
		if (pl[i].ctx == NULL) {
			snprintf(why, whylen, "memory at 0x%llx belongs to "
			    "nothing", (unsigned long long)pl[i].base);
			goto out;
		}
	/* Before any module: the driver places modules where it likes. */
	if (cuda_mig_place(cl, pl, n, why, whylen) == -1)
		goto out;
	snprintf(why, whylen, "malformed state");
	if (mig_load_mods(cl, r, why, whylen) == -1 ||
	    mig_load_funcs(cl, r, why, whylen) == -1 ||
	    mig_load_queues(cl, r, why, whylen) == -1)
		goto out;
	/* The device's output held back: none on this backend. */
	if (pr_u32(r) != 0 || pr_done(r) == -1)
		goto out;
	rc = 0;
out:
	free(pl);
	return rc;
}

/*
 * The context of the client's memory at addr (a range's owner: its
 * context, or a module whose global it is), made current; NULL if none.
 */
static struct robj *
cuda_mig_where(struct rclient *cl, uint64_t addr)
{
	size_t lo = 0, hi = cl->nranges, mid;
	struct robj *o;

	/* Owners are contexts and modules unless VMM holds some. */
	if (!vmm_empty(cl))
		return NULL;
	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (cl->ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - cl->ranges[lo - 1].base >=
	    cl->ranges[lo - 1].size)
		return NULL;
	o = (struct robj *)(uintptr_t)cl->ranges[lo - 1].owner;
	if (o->kind != RK_CTX)
		o = o->ctx;
	if (o == NULL || o->h == NULL || drv.CtxSetCurrent(o->h) !=
	    CUDA_SUCCESS)
		return NULL;
	return o;
}

static const void *
cuda_mig_read(struct rclient *cl, uint64_t addr, void *buf, size_t n)
{
	if (cuda_mig_where(cl, addr) == NULL ||
	    drv.MemcpyDtoH(buf, addr, n) != CUDA_SUCCESS)
		return NULL;
	return buf;
}

static int
cuda_mig_write(struct rclient *cl, uint64_t addr, const void *p, size_t n)
{
	if (cuda_mig_where(cl, addr) == NULL ||
	    drv.MemcpyHtoD(addr, p, n) != CUDA_SUCCESS)
		return -1;
	return 0;
}

/* The cuda backend's calls, each behind check_call (check_dispatch). */
#define CUDA_CALLS(F) \
	F(R_CTX_CREATE, c_ctx_create) \
	F(R_CTX_DESTROY, c_ctx_destroy) \
	F(R_PRIMARY_RETAIN, c_primary_retain) \
	F(R_PRIMARY_RELEASE, c_primary_release) \
	F(R_PRIMARY_RESET, c_primary_reset) \
	F(R_CTX_SYNC, c_ctx_sync) \
	F(R_CTX_SET_LIMIT, c_ctx_set_limit) \
	F(R_MEM_ALLOC, c_mem_alloc) \
	F(R_MEM_ALLOC_HOST, c_mem_alloc_host) \
	F(R_MEM_ALLOC_PITCH, c_mem_alloc_pitch) \
	F(R_MEM_FREE, c_mem_free) \
	F(R_MEM_GET_INFO, c_mem_get_info) \
	F(R_MEM_GRANULARITY, c_mem_granularity) \
	F(R_MEM_POOL, c_mem_pool) \
	F(R_MEM_MAP, c_mem_pool) \
	F(R_MEM_TRIM, c_mem_pool) \
	F(R_MEM_HTOD, c_mem_htod) \
	F(R_MEM_DTOH, c_mem_dtoh) \
	F(R_MEM_DTOD, c_mem_dtod) \
	F(R_MEM_3D, c_mem_3d) \
	F(R_MEMSET, c_memset) \
	F(R_MODULE_LOAD, c_module_load) \
	F(R_MODULE_UNLOAD, c_module_unload) \
	F(R_MODULE_GET_FUNC, c_module_get_func) \
	F(R_MODULE_GET_GLOBAL, c_module_get_global) \
	F(R_LIBRARY_LOAD, c_library_load) \
	F(R_LIBRARY_UNLOAD, c_library_unload) \
	F(R_LIBRARY_GET_KERNEL, c_library_get_kernel) \
	F(R_LIBRARY_GET_GLOBAL, c_library_get_global) \
	F(R_LAUNCH, c_launch) \
	F(R_STREAM_CREATE, c_stream_create) \
	F(R_STREAM_DESTROY, c_stream_destroy) \
	F(R_STREAM_SYNC, c_stream_sync) \
	F(R_STREAM_QUERY, c_stream_query) \
	F(R_STREAM_WAIT_EVENT, c_stream_wait_event) \
	F(R_EVENT_CREATE, c_event_create) \
	F(R_EVENT_DESTROY, c_event_destroy) \
	F(R_EVENT_RECORD, c_event_record) \
	F(R_EVENT_SYNC, c_event_sync) \
	F(R_EVENT_QUERY, c_event_query) \
	F(R_EVENT_ELAPSED, c_event_elapsed) \
	F(R_FUNC_SET_ATTR, c_func_set_attr) \
	F(R_FUNC_SET_CACHE, c_func_set_cache) \
	F(R_OCCUPANCY, c_occupancy) \
	F(R_OCC_SMEM, c_occ_smem) \
	F(R_OCC_CLUSTERS, c_occ_clusters) \
	F(R_LAUNCH_EX, c_launch_ex) \
	F(R_TPC_MAP, c_tpc_map) \
	F(R_TMAP_ENCODE, c_tmap_encode) \
	F(R_CAPTURE_BEGIN, c_capture_begin) \
	F(R_CAPTURE_END, c_capture_end) \
	F(R_GRAPH_CREATE, c_graph_create) \
	F(R_GRAPH_DESTROY, c_graph_destroy) \
	F(R_GRAPH_INSTANTIATE, c_graph_instantiate) \
	F(R_GEXEC_DESTROY, c_gexec_destroy) \
	F(R_GRAPH_LAUNCH, c_graph_launch) \
	F(R_GRAPH_UPLOAD, c_graph_launch) \
	F(R_GEXEC_UPDATE, c_gexec_update) \
	F(R_GRAPH_CLONE, c_graph_clone) \
	F(R_GRAPH_COUNT, c_graph_count) \
	F(R_GRAPH_DOT, c_graph_dot) \
	F(R_STREAM_MEMOP, c_stream_memop) \
	F(R_LINK_CREATE, c_link_create) \
	F(R_LINK_ADD, c_link_add) \
	F(R_LINK_COMPLETE, c_link_complete) \
	F(R_LINK_DESTROY, c_link_destroy) \
	F(R_VMM_RESERVE, c_vmm) \
	F(R_VMM_FREE, c_vmm) \
	F(R_VMM_CREATE, c_vmm) \
	F(R_VMM_RELEASE, c_vmm) \
	F(R_VMM_MAP, c_vmm) \
	F(R_VMM_UNMAP, c_vmm) \
	F(R_VMM_SET_ACCESS, c_vmm) \
	F(R_VMM_GET_ACCESS, c_vmm) \
	/* loads with JIT options */ \
	F(R_MODULE_LOAD_EX, c_module_load_ex) \
	F(R_GRAPH_NODES, c_graph_nodes) \
	F(R_GRAPH_ADD, c_graph_add) \
	F(R_GRAPH_EDGES, c_graph_edges) \
	F(R_GRAPH_NODE_DESTROY, c_graph_node_destroy) \
	F(R_KNODE_GET, c_knode_get) \
	F(R_KNODE_SET, c_knode_set) \
	F(R_NODE_GET, c_node_get) \
	F(R_NODE_SET, c_node_set) \
	F(R_NODE_ENABLED, c_node_enabled) \
	F(R_GRAPH_MEM, c_graph_mem) \
	F(R_NODE_FIND, c_node_find) \
	F(R_NODE_ID, c_node_id) \
	F(R_PTR_ATTR, c_ptr_attr) \
	F(R_ARRAY_CREATE, c_array_create) \
	F(R_ARRAY_DESTROY, c_array_destroy) \
	F(R_MIPMAP_LEVEL, c_mipmap_level) \
	F(R_ARRAY_MEMREQ, c_array_memreq) \
	F(R_TEX_CREATE, c_tex_create) \
	F(R_TEX_DESTROY, c_tex_destroy) \
	F(R_TEXREF_NEW, c_texref_new) \
	F(R_TEXREF_DESTROY, c_texref_destroy) \
	F(R_TEXREF_SET, c_texref_set) \
	F(R_TEXREF_GET, c_texref_get) \
	F(R_ARRAY_SPARSE, c_array_sparse) \
	F(R_MAP_ARRAY, c_map_array) \
	F(R_CTX_OP, c_ctx_op) \
	F(R_DEV_QUERY, c_dev_query) \
	F(R_HOST_FUNC, c_host_func) \
	F(R_STREAM_ATTR, c_stream_attr) \
	F(R_CAPTURE_TO_GRAPH, c_capture_to_graph) \
	F(R_CAPTURE_DEPS, c_capture_deps) \
	F(R_COND_HANDLE, c_cond_handle) \
	F(R_CHILD_GRAPH, c_child_graph) \
	F(R_UOBJ_CREATE, c_uobj) \
	F(R_UOBJ_RELEASE, c_uobj) \
	F(R_GRAPH_UOBJ, c_graph_uobj) \
	F(R_KNODE_ATTR, c_knode_attr) \
	F(R_DEV_RESOURCE, c_dev_resource) \
	F(R_SM_SPLIT, c_sm_split) \
	F(R_RES_DESC, c_res_desc) \
	F(R_GREEN_CREATE, c_green_create) \
	F(R_GREEN_DESTROY, c_green_destroy) \
	F(R_GREEN_STREAM, c_green_stream)

static const backend_fn cuda_fn[RPC_NCALLS] = { CUDA_CALLS(F) };

static int
cuda_call(struct rcall *c)
{
	int rc;

	cp_client = c->cl;
	rc = check_dispatch(c, cuda_fn);
	cp_client = NULL;
	return rc;
}

#define G(t, fn) [t - R_OPEN] = cuda_call,

const struct backend backend_cuda = {
	.name = "cuda",
	.gpu_keep = cuda_gpu_keep,
	.gpu_copy = cuda_gpu_copy,
	.gpu_free = cuda_gpu_free,
	.gpu_export = cuda_gpu_export,
	.gpu_import = cuda_gpu_import,
	.ctx_device = cuda_ctx_device,
	.host_pin = cuda_host_pin,
	.host_unpin = cuda_host_unpin,
	.init = cuda_init,
	.describe = cuda_describe,
	.client_new = cuda_client_new,
	.client_free = cuda_client_free,
	.mig_save = cuda_mig_save,
	.mig_load = cuda_mig_load,
	.mig_read = cuda_mig_read,
	.mig_write = cuda_mig_write,
	.call = { CUDA_CALLS(G) },
};
#undef F
#undef G
