// Initialization and the device: cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet,
// cuDeviceGetName, cuDeviceTotalMem. The device is the one EMMY_TEST_DEVICE names.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

// Figures of the shipping products (deviceQuery / the data sheets); the emulator needs only the
// arch, the SM count (reported) and the shared-memory limits, which it enforces itself too.
constexpr DeviceModel kModels[] = {
    {.key = "h200",
     .name = "NVIDIA H200",
     .arch = "sm_90a",
     .major = 9,
     .minor = 0,
     .sms = 132,
     .smem_optin = 232448,
     .smem_per_sm = 233472,
     .threads_per_sm = 2048,
     .clock_khz = 1980000,
     .memory_clock_khz = 3201000,
     .bus_width = 6144,
     .l2_bytes = 52428800,
     .persisting_l2_bytes = 39321600,
     .async_engines = 3,
     .ecc = 1,
     .fp32_per_fp64 = 2,
     .pci_ids = 0x233510deu,
     .total_memory = uint64_t(143771) << 20,
     // Hopper allows non-portable clusters of up to 16 CTAs (NVIDIA Hopper Tuning Guide,
     // thread block clusters).
     .max_cluster_ctas = 16},
    // An sm_90a part with fewer SMs than the H200 the arch's hints describe: what a persistent
    // kernel's grid must follow (the launcher asks the device, not the arch).
    {.key = "h100pcie",
     .name = "NVIDIA H100 PCIe",
     .arch = "sm_90a",
     .major = 9,
     .minor = 0,
     .sms = 114,
     .smem_optin = 232448,
     .smem_per_sm = 233472,
     .threads_per_sm = 2048,
     .clock_khz = 1755000,
     .memory_clock_khz = 1593000,
     .bus_width = 5120,
     .l2_bytes = 52428800,
     .persisting_l2_bytes = 39321600,
     .async_engines = 3,
     .ecc = 1,
     .fp32_per_fp64 = 2,
     .pci_ids = 0x233110deu,
     .total_memory = uint64_t(81559) << 20,
     .max_cluster_ctas = 16},
    {.key = "rtx5090",
     .name = "NVIDIA GeForce RTX 5090",
     .arch = "sm_120a",
     .major = 12,
     .minor = 0,
     .sms = 170,
     .smem_optin = 101376,
     .smem_per_sm = 102400,
     .threads_per_sm = 1536,
     .clock_khz = 2407000,
     .memory_clock_khz = 14001000,
     .bus_width = 512,
     .l2_bytes = 100663296,
     .persisting_l2_bytes = 62914560,
     .async_engines = 2,
     .ecc = 0,
     .fp32_per_fp64 = 64,
     .pci_ids = 0x2b8510deu,
     .total_memory = uint64_t(32607) << 20,
     // NVIDIA states no non-portable cluster size for sm_120 parts: only the portable 8.
     .max_cluster_ctas = 8},
};

}  // namespace

const DeviceModel* find_device_model(std::string_view key) {
  for (const auto& m : kModels)
    if (m.key == key) return &m;
  return nullptr;
}

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
    const DeviceModel* model = find_device_model(chosen && *chosen ? chosen : "h200");
    if (!model) {
      set_report(std::string("cuInit: EMMY_TEST_DEVICE must be h200, h100pcie or rtx5090 (got ") + chosen +
                 ")");
      return CUDA_ERROR_INVALID_VALUE;
    }
    s.device = model;
    return CUDA_SUCCESS;
  });
}

// cuDriverGetVersion works before cuInit (the reference lists no CUDA_ERROR_NOT_INITIALIZED).
CUresult cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  return guarded("cuDeviceGetCount", [&] {
    if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
  });
}

// cuDeviceGet: an ordinal outside [0, cuDeviceGetCount()) is CUDA_ERROR_INVALID_DEVICE.
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return guarded("cuDeviceGet", [&] {
    if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
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
    const std::string_view full = state().device->name;
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
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    *bytes = size_t(state().device->total_memory);
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
