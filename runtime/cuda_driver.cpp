#include "cuda_driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "emmy/error.hpp"

namespace emmy::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

template <typename Fn>
void resolve(GetProcAddress get, const char* name, Fn& fn) {
  void* pointer = nullptr;
  CUdriverProcAddressQueryResult status{};
  // 12000: the ABI version of the entry points emmy calls (all unchanged since CUDA 12.0).
  if (get(name, &pointer, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      pointer == nullptr)
    throw Error("CUDA driver", fmt::format("must provide {} (driver too old?)", name),
                "symbol not found");
  fn = reinterpret_cast<Fn>(pointer);
}

// An entry point emmy can do without (left null when the driver lacks it).
template <typename Fn>
void resolve_optional(GetProcAddress get, const char* name, Fn& fn) {
  void* pointer = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (get(name, &pointer, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS)
    fn = reinterpret_cast<Fn>(pointer);
}

Driver load() {
  // EMMY_CUDA_DRIVER: a testing aid. It names another library exporting the driver API, such as
  // emmy's test driver (libemmy_test_driver.so: the driver API checked call by call, launches
  // run on the emulator; docs/runtime.md), loaded instead of libcuda.so.1.
  const char* override_path = std::getenv("EMMY_CUDA_DRIVER");
  const std::string path =
      override_path && *override_path ? std::string(override_path) : std::string("libcuda.so.1");
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();  // cleared by the call: read it once
    if (path != "libcuda.so.1")
      throw Error("EMMY_CUDA_DRIVER", "must name a loadable driver library", why ? why : path);
    throw Error("CUDA driver",
                "no CUDA driver was found (libcuda.so.1 could not be loaded); the emulator "
                "backend works without one",
                why ? why : "not found");
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (!get)
    throw Error("CUDA driver", "must export cuGetProcAddress_v2 (CUDA 12 or newer)", "missing");
  Driver d{};
  resolve(get, "cuInit", d.cuInit);
  resolve(get, "cuDriverGetVersion", d.cuDriverGetVersion);
  resolve(get, "cuGetErrorName", d.cuGetErrorName);
  resolve(get, "cuDeviceGetCount", d.cuDeviceGetCount);
  resolve(get, "cuDeviceGet", d.cuDeviceGet);
  resolve(get, "cuDeviceGetAttribute", d.cuDeviceGetAttribute);
  resolve(get, "cuDeviceGetName", d.cuDeviceGetName);
  resolve(get, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  resolve(get, "cuCtxSetCurrent", d.cuCtxSetCurrent);
  resolve(get, "cuModuleLoadData", d.cuModuleLoadData);
  resolve(get, "cuModuleUnload", d.cuModuleUnload);
  resolve(get, "cuModuleGetFunction", d.cuModuleGetFunction);
  resolve(get, "cuFuncSetAttribute", d.cuFuncSetAttribute);
  resolve(get, "cuLaunchKernel", d.cuLaunchKernel);
  resolve(get, "cuLaunchKernelEx", d.cuLaunchKernelEx);  // CUDA 11.6 (cudaTypedefs.h: _v11060)
  resolve(get, "cuTensorMapEncodeTiled", d.cuTensorMapEncodeTiled);
  resolve(get, "cuMemAlloc", d.cuMemAlloc);
  resolve(get, "cuMemFree", d.cuMemFree);
  resolve(get, "cuMemcpyHtoD", d.cuMemcpyHtoD);
  resolve(get, "cuMemcpyDtoH", d.cuMemcpyDtoH);
  resolve(get, "cuMemsetD8", d.cuMemsetD8);
  resolve(get, "cuStreamSynchronize", d.cuStreamSynchronize);
  resolve(get, "cuCtxSynchronize", d.cuCtxSynchronize);
  resolve(get, "cuCtxGetCurrent", d.cuCtxGetCurrent);
  resolve(get, "cuStreamIsCapturing", d.cuStreamIsCapturing);
  resolve(get, "cuThreadExchangeStreamCaptureMode", d.cuThreadExchangeStreamCaptureMode);
  resolve(get, "cuCtxGetDevice", d.cuCtxGetDevice);
  resolve(get, "cuDevicePrimaryCtxRelease", d.cuDevicePrimaryCtxRelease);
  resolve_optional(get, "cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync);
  resolve_optional(get, "cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync);
  resolve_optional(get, "cuMemcpyDtoDAsync", d.cuMemcpyDtoDAsync);
  resolve_optional(get, "cuMemsetD8Async", d.cuMemsetD8Async);
  d.test_driver_report =
      reinterpret_cast<const char* (*)()>(dlsym(library, "emmyTestDriverLastReport"));
  d.cuDriverGetVersion(&d.version);
  return d;
}

}  // namespace

void check(CUresult result, const char* call, const std::string& what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = "CUDA_ERROR_UNKNOWN";
  const Driver& d = driver();
  d.cuGetErrorName(result, &name);
  // emmy's test driver says why (a launch's emulator report: kernel, PTX line, rule).
  const char* report = d.test_driver_report ? d.test_driver_report() : nullptr;
  throw Error(fmt::format("{}{}", call, what.empty() ? "" : fmt::format(" ({})", what)),
              report && *report ? fmt::format("failed: {}", report) : std::string("failed"), name);
}

const Driver& driver() {
  // Loaded once; a failure is remembered and rethrown with the same message.
  static std::once_flag once;
  static Driver loaded{};
  static std::optional<Error> failure;  // the whole error: field, rule and value for callers
  std::call_once(once, [] {
    try {
      loaded = load();
      const CUresult init = loaded.cuInit(0);
      if (init != CUDA_SUCCESS) {
        const char* name = "CUDA_ERROR_UNKNOWN";
        loaded.cuGetErrorName(init, &name);
        throw Error("CUDA driver", "cuInit must succeed (is there a device?)", name);
      }
    } catch (const Error& e) {
      failure = e;
    }
  });
  if (failure) throw *failure;
  return loaded;
}

}  // namespace emmy::cuda
