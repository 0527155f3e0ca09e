/* SPDX-License-Identifier: MIT */
/* The ABI subset of NVML and the CUDA driver API that gpuboot-probe uses,
 * declared here so the probe builds without NVIDIA's headers or toolkit.
 * Values and layouts as in nvml.h and cuda.h (stable ABI). */
#pragma once

#include <stddef.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_NOT_FOUND 6

/* nvmlGpuVirtualizationMode_t: 0 bare metal, 1 pass-through (the whole GPU
 * given to this virtual machine), 2 vGPU in a VM, 3 the host of vGPUs,
 * 4 the host of vSGA. */
#define GB_NVML_VIRT_MODES                                               \
	{                                                                \
		"none", "pass-through", "vgpu", "host-vgpu", "host-vsga" \
	}

/* NVLink (nvml.h): links per GPU (18 since R525; 12 or 6 on older
 * drivers, which answer INVALID_ARGUMENT past their maximum), the link state
 * (nvmlEnableState_t: 0 disabled, 1 enabled), the NVLink version as
 * nvmlNvlinkVersion_t (1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0,
 * 7 = 5.0; some drivers report 7 on Hopper) and the type of the device at
 * the far end (nvmlIntNvLinkDeviceType_t: 0 GPU, 1 IBM NPU, 2 NVSwitch,
 * 255 unknown). */
#define GB_NVML_NVLINK_MAX_LINKS 18
enum { GB_NVLINK_REMOTE_GPU = 0, GB_NVLINK_REMOTE_SWITCH = 2 };

typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned gpu, memory;
} nvmlUtilization_t;

/* nvmlSample_t: a CPU timestamp (us, the realtime clock) and a value
 * (nvmlValue_t, 8 bytes; GPU utilisation samples are unsigned int). Each GPU
 * utilisation sample is the share of the time since the one before it in
 * which a kernel ran (every ~200 ms on the H200). */
typedef struct {
	unsigned long long ts;
	union {
		unsigned ui;
		unsigned long long ull;
		double d;
	} v;
} gb_nvml_sample;
#define GB_NVML_GPU_UTILIZATION_SAMPLES 1

/* nvmlGpuFabricInfo_t (R550+): clusterUuid[16], status, cliqueId, state (unsigned char). */
typedef struct {
	char cluster_uuid[16];
	nvmlReturn_t status;
	unsigned clique_id;
	unsigned char state; /* 0 not supported, 1 not started, 2 in progress, 3 completed */
	unsigned char pad[39];
} gb_nvml_fabric_info;

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum { NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1 };

/* Clock event (throttle) reasons that mean trouble. */
#define GB_CLOCKS_EVENT_HW_SLOWDOWN 0x8ull
#define GB_CLOCKS_EVENT_SW_THERMAL 0x20ull
#define GB_CLOCKS_EVENT_HW_THERMAL 0x40ull
#define GB_CLOCKS_EVENT_HW_POWER_BRAKE 0x80ull

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_SYSTEM_NOT_READY 802
#define CUDA_ERROR_JIT_COMPILER_NOT_FOUND 221
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_STREAM_NON_BLOCKING 0x1

enum {
	CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
	CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

/* Every entry point the probe resolves, by the name it is exported under
 * (the versioned names where the ABI moved). X(type-of-pointer, field, "symbol", required) */
#define GB_NVML_FUNCS(X)                                                                                               \
	X(nvmlReturn_t (*)(void), init, "nvmlInit_v2", 1)                                                              \
	X(nvmlReturn_t (*)(void), shutdown, "nvmlShutdown", 1)                                                         \
	X(const char *(*)(nvmlReturn_t), error_string, "nvmlErrorString", 1)                                           \
	X(nvmlReturn_t (*)(char *, unsigned), driver_version, "nvmlSystemGetDriverVersion", 1)                         \
	X(nvmlReturn_t (*)(unsigned *), count, "nvmlDeviceGetCount_v2", 1)                                             \
	X(nvmlReturn_t (*)(unsigned, nvmlDevice_t *), handle, "nvmlDeviceGetHandleByIndex_v2", 1)                      \
	X(nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned), name, "nvmlDeviceGetName", 1)                              \
	X(nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned), uuid, "nvmlDeviceGetUUID", 1)                              \
	X(nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t *), pci, "nvmlDeviceGetPciInfo_v3", 1)                          \
	X(nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t *), memory, "nvmlDeviceGetMemoryInfo", 1)                        \
	X(nvmlReturn_t (*)(nvmlDevice_t, int *, int *), ecc_mode, "nvmlDeviceGetEccMode", 0)                           \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long *), ecc_errors, "nvmlDeviceGetTotalEccErrors",   \
	  0)                                                                                                           \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *), remapped_rows,               \
	  "nvmlDeviceGetRemappedRows", 0)                                                                              \
	X(nvmlReturn_t (*)(nvmlDevice_t, int *), retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus", 0)         \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *, unsigned long long *), retired_pages,                        \
	  "nvmlDeviceGetRetiredPages", 0)                                                                              \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned long long *), clock_events,                                          \
	  "nvmlDeviceGetCurrentClocksEventReasons", 0)                                                                 \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned long long *), throttle_reasons,                                      \
	  "nvmlDeviceGetCurrentClocksThrottleReasons", 0)                                                              \
	X(nvmlReturn_t (*)(nvmlDevice_t, int *), persistence, "nvmlDeviceGetPersistenceMode", 0)                       \
	X(nvmlReturn_t (*)(nvmlDevice_t, int *), compute_mode, "nvmlDeviceGetComputeMode", 0)                          \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), virt_mode, "nvmlDeviceGetVirtualizationMode", 0)                 \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *, unsigned *), mig_mode, "nvmlDeviceGetMigMode", 0)                 \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", 0)              \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", 0)                 \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration", 0)           \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth", 0)              \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *), max_clock, "nvmlDeviceGetMaxClockInfo", 0)                  \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *), clock, "nvmlDeviceGetClockInfo", 0)                         \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *), bus_width, "nvmlDeviceGetMemoryBusWidth", 0)                     \
	X(nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t *), utilization, "nvmlDeviceGetUtilizationRates", 0)        \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, unsigned long long, int *, unsigned *, gb_nvml_sample *), samples_get,   \
	  "nvmlDeviceGetSamples", 0)                                                                                   \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned *, void *), processes, "nvmlDeviceGetComputeRunningProcesses_v3", 0) \
	X(nvmlReturn_t (*)(nvmlDevice_t, void *, unsigned *, unsigned long long), process_util,                        \
	  "nvmlDeviceGetProcessUtilization", 0)                                                                        \
	X(nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *), temperature, "nvmlDeviceGetTemperature", 0)                 \
	X(nvmlReturn_t (*)(nvmlDevice_t, void *), fabric_info, "nvmlDeviceGetGpuFabricInfo", 0)                        \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned, int *), nvlink_state, "nvmlDeviceGetNvLinkState", 0)                \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned, unsigned *), nvlink_version, "nvmlDeviceGetNvLinkVersion", 0)       \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned, nvmlPciInfo_t *), nvlink_remote_pci,                                \
	  "nvmlDeviceGetNvLinkRemotePciInfo_v2", 0)                                                                    \
	X(nvmlReturn_t (*)(nvmlDevice_t, unsigned, int *), nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType", 0)

#define GB_CUDA_FUNCS(X)                                                                                           \
	X(CUresult (*)(unsigned), init, "cuInit", 1)                                                               \
	X(CUresult (*)(int *), driver_version, "cuDriverGetVersion", 1)                                            \
	X(CUresult (*)(CUresult, const char **), error_string, "cuGetErrorString", 1)                              \
	X(CUresult (*)(int *), count, "cuDeviceGetCount", 1)                                                       \
	X(CUresult (*)(CUdevice *, int), get, "cuDeviceGet", 1)                                                    \
	X(CUresult (*)(int *, int, CUdevice), attribute, "cuDeviceGetAttribute", 1)                                \
	X(CUresult (*)(CUcontext *, CUdevice), ctx_retain, "cuDevicePrimaryCtxRetain", 1)                          \
	X(CUresult (*)(CUdevice), ctx_release, "cuDevicePrimaryCtxRelease_v2", 1)                                  \
	X(CUresult (*)(CUcontext), ctx_set, "cuCtxSetCurrent", 1)                                                  \
	X(CUresult (*)(void), ctx_sync, "cuCtxSynchronize", 1)                                                     \
	X(CUresult (*)(CUmodule *, const void *), module_load, "cuModuleLoadData", 1)                              \
	X(CUresult (*)(CUfunction *, CUmodule, const char *), function, "cuModuleGetFunction", 1)                  \
	X(CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
	               void **, void **),                                                                          \
	  launch, "cuLaunchKernel", 1)                                                                             \
	X(CUresult (*)(CUdeviceptr *, size_t), mem_alloc, "cuMemAlloc_v2", 1)                                      \
	X(CUresult (*)(CUdeviceptr), mem_free, "cuMemFree_v2", 1)                                                  \
	X(CUresult (*)(size_t *, size_t *), mem_info, "cuMemGetInfo_v2", 1)                                        \
	X(CUresult (*)(CUdeviceptr, unsigned, size_t), memset32, "cuMemsetD32_v2", 1)                              \
	X(CUresult (*)(void **, size_t, unsigned), host_alloc, "cuMemHostAlloc", 1)                                \
	X(CUresult (*)(void *), host_free, "cuMemFreeHost", 1)                                                     \
	X(CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream), copy_dtod, "cuMemcpyDtoDAsync_v2", 1)          \
	X(CUresult (*)(CUdeviceptr, const void *, size_t, CUstream), copy_htod, "cuMemcpyHtoDAsync_v2", 1)         \
	X(CUresult (*)(void *, CUdeviceptr, size_t, CUstream), copy_dtoh, "cuMemcpyDtoHAsync_v2", 1)               \
	X(CUresult (*)(void *, CUdeviceptr, size_t), copy_dtoh_sync, "cuMemcpyDtoH_v2", 1)                         \
	X(CUresult (*)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream), copy_peer,               \
	  "cuMemcpyPeerAsync", 0)                                                                                  \
	X(CUresult (*)(int *, CUdevice, CUdevice), can_access_peer, "cuDeviceCanAccessPeer", 0)                    \
	X(CUresult (*)(CUcontext, unsigned), enable_peer, "cuCtxEnablePeerAccess", 0)                              \
	X(CUresult (*)(CUstream *, unsigned), stream_create, "cuStreamCreate", 1)                                  \
	X(CUresult (*)(CUstream), stream_destroy, "cuStreamDestroy_v2", 1)                                         \
	X(CUresult (*)(CUstream), stream_sync, "cuStreamSynchronize", 1)                                           \
	X(CUresult (*)(CUevent *, unsigned), event_create, "cuEventCreate", 1)                                     \
	X(CUresult (*)(CUevent), event_destroy, "cuEventDestroy_v2", 1)                                            \
	X(CUresult (*)(CUevent, CUstream), event_record, "cuEventRecord", 1)                                       \
	X(CUresult (*)(CUevent), event_sync, "cuEventSynchronize", 1)                                              \
	X(CUresult (*)(CUevent), event_query, "cuEventQuery", 1)                                                   \
	X(CUresult (*)(float *, CUevent, CUevent), event_elapsed, "cuEventElapsedTime", 1)
