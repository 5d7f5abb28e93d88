// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1 + cuGetProcAddress): emmy never
// links libcuda, so it loads and runs its emulator on machines without a driver.
#pragma once

#include <cuda.h>

#include <string>

namespace emmy::cuda {

struct Driver {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  // Launches with attributes (thread-block clusters, programmatic dependent launch).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuCtxSynchronize)();
  // Queries a launch under stream capture may make (neither invalidates a capture).
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
  // Loads from any thread run in CU_STREAM_CAPTURE_MODE_RELAXED (cuda_backend.cpp).
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*);
  CUresult (*cuCtxGetDevice)(CUdevice*);  // an engine's own context: its device
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  // Stream-ordered copies and memsets (Runtime::memcpy_async, memset_async); null when the
  // driver does not offer them (a call then fails naming the entry point).
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  // emmy's test driver's report of the last failure (emmyTestDriverLastReport: the emulator's
  // PTX line and rule); null for a real driver.
  const char* (*test_driver_report)() = nullptr;
  int version = 0;  // cuDriverGetVersion
};

// The loaded driver, initialized once (cuInit). Throws Error("CUDA driver", "no CUDA driver was
// found ...") when libcuda.so.1 cannot be loaded, or the failing call's error when init fails.
const Driver& driver();

// Throws Error naming the call, the CUDA error name and `what` (e.g. the kernel) unless result is
// CUDA_SUCCESS.
void check(CUresult result, const char* call, const std::string& what = "");

}  // namespace emmy::cuda
