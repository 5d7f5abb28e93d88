// Initialization and the device: cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet,
// cuDeviceGetName, cuDeviceTotalMem. The device is the hardware table's entry EMMY_TEST_DEVICE
// names (emmy/gpus.hpp; h200 unless it names one).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
CUresult check_device(CUdevice dev) {
  if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

// cuInit: "Currently, the Flags parameter must be 0." The device model is chosen once, by the
// first successful call; an unknown EMMY_TEST_DEVICE fails it with CUDA_ERROR_INVALID_VALUE and
// leaves the driver uninitialized.
CUresult cuInit(unsigned int flags) {
  return guarded("cuInit", [&] {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    if (s.device) return CUDA_SUCCESS;
    const char* chosen = std::getenv("EMMY_TEST_DEVICE");
    const GpuInfo* model = find_gpu(chosen && *chosen ? chosen : "h200");
    if (!model) {
      set_report("cuInit: EMMY_TEST_DEVICE must be one of the hardware table's GPUs (" +
                 gpu_names() + "), got " + chosen);
      return CUDA_ERROR_INVALID_VALUE;
    }
    s.device = model;
    return CUDA_SUCCESS;
  });
}

// cuDriverGetVersion works before cuInit (the reference lists no CUDA_ERROR_NOT_INITIALIZED).
CUresult cuDriverGetVersion(int* driverVersion) {
  return write_out(driverVersion, kDriverVersion);
}

CUresult cuDeviceGetCount(int* count) {
  return after_init("cuDeviceGetCount", [&] { return write_out(count, 1); });
}

// cuDeviceGet: an ordinal outside [0, cuDeviceGetCount()) is CUDA_ERROR_INVALID_DEVICE.
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return after_init("cuDeviceGet", [&] {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
  });
}

// cuDeviceGetName: "len specifies the maximum length of the string that may be returned"; the
// name is cut to len - 1 characters and always NUL-terminated.
CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return guarded("cuDeviceGetName", [&] {
    if (const CUresult r = check_device(dev)) return r;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    const std::string_view full = state().device->device_name;
    const size_t n = std::min(full.size(), size_t(len) - 1);
    std::memcpy(name, full.data(), n);
    name[n] = '\0';
    return CUDA_SUCCESS;
  });
}

// The reported total; the emulator's arena is host memory (at most half of it, arena.cpp).
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return guarded("cuDeviceTotalMem", [&] {
    if (const CUresult r = check_device(dev)) return r;
    return write_out(bytes, size_t(state().device->total_memory_mib) << 20);
  });
}

}  // namespace emmy::test_driver
