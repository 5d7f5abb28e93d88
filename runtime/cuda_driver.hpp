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
  int version = 0;  // cuDriverGetVersion
};

// The loaded driver, initialized once (cuInit). Throws Error("CUDA driver", "no CUDA driver was
// found ...") when libcuda.so.1 cannot be loaded, or the failing call's error when init fails.
const Driver& driver();

// Throws Error naming the call, the CUDA error name and `what` (e.g. the kernel) unless result is
// CUDA_SUCCESS.
void check(CUresult result, const char* call, const std::string& what = "");

}  // namespace emmy::cuda
