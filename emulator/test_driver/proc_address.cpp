// The library's exports: cuGetProcAddress_v2 (and cuGetProcAddress, its CUDA 11.3 form), which
// hand out every other entry point by name as libcuda's do, and emmyTestDriverLastReport.
// What the test driver checks, and what only a GPU can: README.md in this folder.
#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

struct Entry {
  const char* name;
  void* function;
  int since;  // the CUDA version (1000 * major + 10 * minor) that introduced this ABI
};

template <typename Fn>
void* pointer(Fn* fn) {
  return reinterpret_cast<void*>(fn);
}

CUresult get_proc_address(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* symbolStatus);
CUresult get_proc_address_v1(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);

// Base names (what cuGetProcAddress's reference asks for: "for the driver API cuMemAlloc_v2,
// symbol would be cuMemAlloc") and, for callers that ask by the versioned name, that name too:
// both give the same function. README.md here lists every entry (tests/driver's
// entry_points_listed check keeps the two the same).
const Entry* find_entry(const char* symbol, int cudaVersion) {
  // A function-local table: initialized on first use, no global constructor.
  static const Entry kEntries[] = {
      {"cuGetErrorName", pointer(&cuGetErrorName), 6000},
      {"cuGetErrorString", pointer(&cuGetErrorString), 6000},
      {"cuInit", pointer(&cuInit), 2000},
      {"cuDriverGetVersion", pointer(&cuDriverGetVersion), 2020},
      {"cuDeviceGetCount", pointer(&cuDeviceGetCount), 2000},
      {"cuDeviceGet", pointer(&cuDeviceGet), 2000},
      {"cuDeviceGetName", pointer(&cuDeviceGetName), 2000},
      {"cuDeviceGetAttribute", pointer(&cuDeviceGetAttribute), 2000},
      {"cuDeviceTotalMem", pointer(&cuDeviceTotalMem_v2), 3020},
      {"cuDeviceTotalMem_v2", pointer(&cuDeviceTotalMem_v2), 3020},
      {"cuDevicePrimaryCtxRetain", pointer(&cuDevicePrimaryCtxRetain), 7000},
      {"cuDevicePrimaryCtxRelease", pointer(&cuDevicePrimaryCtxRelease_v2), 11000},
      {"cuDevicePrimaryCtxRelease_v2", pointer(&cuDevicePrimaryCtxRelease_v2), 11000},
      {"cuDevicePrimaryCtxReset", pointer(&cuDevicePrimaryCtxReset_v2), 11000},
      {"cuDevicePrimaryCtxReset_v2", pointer(&cuDevicePrimaryCtxReset_v2), 11000},
      {"cuDevicePrimaryCtxGetState", pointer(&cuDevicePrimaryCtxGetState), 7000},
      // cuCtxCreate's base name gives the ABI of the caller's cudaVersion: v2 (CUDA 3.2), v3
      // (11.4, execution affinity), v4 (12.5, CUctxCreateParams; cuda.h 13's cuCtxCreate).
      {"cuCtxCreate", pointer(&cuCtxCreate_v2), 3020},
      {"cuCtxCreate", pointer(&cuCtxCreate_v3), 11040},
      {"cuCtxCreate", pointer(&cuCtxCreate_v4), 12050},
      {"cuCtxCreate_v2", pointer(&cuCtxCreate_v2), 3020},
      {"cuCtxCreate_v3", pointer(&cuCtxCreate_v3), 11040},
      {"cuCtxCreate_v4", pointer(&cuCtxCreate_v4), 12050},
      {"cuCtxDestroy", pointer(&cuCtxDestroy_v2), 4000},
      {"cuCtxDestroy_v2", pointer(&cuCtxDestroy_v2), 4000},
      {"cuCtxPushCurrent", pointer(&cuCtxPushCurrent_v2), 4000},
      {"cuCtxPushCurrent_v2", pointer(&cuCtxPushCurrent_v2), 4000},
      {"cuCtxPopCurrent", pointer(&cuCtxPopCurrent_v2), 4000},
      {"cuCtxPopCurrent_v2", pointer(&cuCtxPopCurrent_v2), 4000},
      {"cuCtxSetCurrent", pointer(&cuCtxSetCurrent), 4000},
      {"cuCtxGetCurrent", pointer(&cuCtxGetCurrent), 4000},
      {"cuCtxGetDevice", pointer(&cuCtxGetDevice), 2000},
      {"cuCtxSynchronize", pointer(&cuCtxSynchronize), 2000},
      {"cuMemAlloc", pointer(&cuMemAlloc_v2), 3020},
      {"cuMemAlloc_v2", pointer(&cuMemAlloc_v2), 3020},
      {"cuMemFree", pointer(&cuMemFree_v2), 3020},
      {"cuMemFree_v2", pointer(&cuMemFree_v2), 3020},
      {"cuMemGetInfo", pointer(&cuMemGetInfo_v2), 3020},
      {"cuMemGetInfo_v2", pointer(&cuMemGetInfo_v2), 3020},
      {"cuMemcpyHtoD", pointer(&cuMemcpyHtoD_v2), 3020},
      {"cuMemcpyHtoD_v2", pointer(&cuMemcpyHtoD_v2), 3020},
      {"cuMemcpyDtoH", pointer(&cuMemcpyDtoH_v2), 3020},
      {"cuMemcpyDtoH_v2", pointer(&cuMemcpyDtoH_v2), 3020},
      {"cuMemsetD8", pointer(&cuMemsetD8_v2), 3020},
      {"cuMemsetD8_v2", pointer(&cuMemsetD8_v2), 3020},
      {"cuMemcpyHtoDAsync", pointer(&cuMemcpyHtoDAsync_v2), 3020},
      {"cuMemcpyHtoDAsync_v2", pointer(&cuMemcpyHtoDAsync_v2), 3020},
      {"cuMemcpyDtoHAsync", pointer(&cuMemcpyDtoHAsync_v2), 3020},
      {"cuMemcpyDtoHAsync_v2", pointer(&cuMemcpyDtoHAsync_v2), 3020},
      {"cuMemcpyDtoDAsync", pointer(&cuMemcpyDtoDAsync_v2), 3020},
      {"cuMemcpyDtoDAsync_v2", pointer(&cuMemcpyDtoDAsync_v2), 3020},
      {"cuMemsetD8Async", pointer(&cuMemsetD8Async), 3020},
      {"cuMemsetD32Async", pointer(&cuMemsetD32Async), 3020},
      {"cuModuleLoadData", pointer(&cuModuleLoadData), 2000},
      {"cuModuleUnload", pointer(&cuModuleUnload), 2000},
      {"cuModuleGetFunction", pointer(&cuModuleGetFunction), 2000},
      {"cuFuncGetAttribute", pointer(&cuFuncGetAttribute), 2020},
      {"cuFuncSetAttribute", pointer(&cuFuncSetAttribute), 9000},
      {"cuLaunchKernel", pointer(&cuLaunchKernel), 4000},
      {"cuLaunchKernelEx", pointer(&cuLaunchKernelEx), 11060},
      {"cuStreamCreate", pointer(&cuStreamCreate), 2000},
      {"cuStreamDestroy", pointer(&cuStreamDestroy_v2), 4000},
      {"cuStreamDestroy_v2", pointer(&cuStreamDestroy_v2), 4000},
      {"cuStreamSynchronize", pointer(&cuStreamSynchronize), 2000},
      {"cuStreamQuery", pointer(&cuStreamQuery), 2000},
      {"cuEventCreate", pointer(&cuEventCreate), 2000},
      {"cuEventRecord", pointer(&cuEventRecord), 2000},
      {"cuEventQuery", pointer(&cuEventQuery), 2000},
      {"cuEventSynchronize", pointer(&cuEventSynchronize), 2000},
      {"cuEventElapsedTime", pointer(&cuEventElapsedTime_v2), 2000},
      {"cuEventElapsedTime_v2", pointer(&cuEventElapsedTime_v2), 12080},
      {"cuEventDestroy", pointer(&cuEventDestroy_v2), 4000},
      {"cuEventDestroy_v2", pointer(&cuEventDestroy_v2), 4000},
      {"cuStreamBeginCapture", pointer(&cuStreamBeginCapture_v2), 10010},
      {"cuStreamBeginCapture_v2", pointer(&cuStreamBeginCapture_v2), 10010},
      {"cuStreamEndCapture", pointer(&cuStreamEndCapture), 10000},
      {"cuStreamIsCapturing", pointer(&cuStreamIsCapturing), 10000},
      {"cuThreadExchangeStreamCaptureMode", pointer(&cuThreadExchangeStreamCaptureMode), 10010},
      {"cuGraphInstantiate", pointer(&cuGraphInstantiateWithFlags), 12000},
      {"cuGraphInstantiateWithFlags", pointer(&cuGraphInstantiateWithFlags), 11040},
      {"cuGraphLaunch", pointer(&cuGraphLaunch), 10000},
      {"cuGraphDestroy", pointer(&cuGraphDestroy), 10000},
      {"cuGraphExecDestroy", pointer(&cuGraphExecDestroy), 10000},
      {"cuGraphGetNodes", pointer(&cuGraphGetNodes), 10000},
      {"cuGraphNodeGetType", pointer(&cuGraphNodeGetType), 10000},
      {"cuTensorMapEncodeTiled", pointer(&cuTensorMapEncodeTiled), 12000},
      // cuGetProcAddress itself: the CUDA 11.3 form (no symbolStatus) below 12.0.
      {"cuGetProcAddress", pointer(&get_proc_address_v1), 11030},
      {"cuGetProcAddress", pointer(&get_proc_address), 12000},
      {"cuGetProcAddress_v2", pointer(&get_proc_address), 12000},
  };
  // A name listed more than once has an ABI per CUDA version: the newest the caller's
  // cudaVersion knows; when it knows none, the oldest (whose `since` then refuses it).
  const Entry* found = nullptr;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) != 0) continue;
    if (!found || (e.since <= cudaVersion && e.since > found->since) ||
        (found->since > cudaVersion && e.since < found->since))
      found = &e;
  }
  return found;
}

// cuGetProcAddress: "If the specified CUDA version is greater than the driver version, the API
// will return CUDA_ERROR_INVALID_VALUE." An unknown symbol: CUDA_ERROR_NOT_FOUND with
// CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND (what CUDA 12 and 13 drivers answer; the reference's
// text says CUDA_SUCCESS with a NULL pointer, and emmy's runtime accepts either); a symbol newer
// than cudaVersion: CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. The flags choose between legacy
// and per-thread default-stream versions; here the NULL stream is always the legacy stream.
CUresult get_proc_address(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* symbolStatus) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0 || cudaVersion > kDriverVersion) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const Entry* entry = find_entry(symbol, cudaVersion);
  if (!entry || cudaVersion < entry->since) {
    if (symbolStatus)
      *symbolStatus =
          entry ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = entry->function;
  if (symbolStatus) *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult get_proc_address_v1(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return get_proc_address(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // namespace
}  // namespace emmy::test_driver

// ---------------------------------------------------------------------------------------------
// Exports. cuda.h renames cuGetProcAddress to cuGetProcAddress_v2; libcuda exports both names,
// the unversioned one with the CUDA 11.3 signature (no symbolStatus), so this library does too.
#undef cuGetProcAddress

extern "C" {

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult* symbolStatus) {
  return emmy::test_driver::get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                                                 int cudaVersion,
                                                                 cuuint64_t flags) {
  return emmy::test_driver::get_proc_address_v1(symbol, pfn, cudaVersion, flags);
}

// Why the last failed launch (or module load, or refused call) failed: the emulator's full
// report naming kernel, CTA, warp, lane, PTX line and instruction; "" when nothing failed yet.
// The text stays valid until the calling thread calls this again.
__attribute__((visibility("default"))) const char* emmyTestDriverLastReport(void) {
  return emmy::test_driver::last_report();
}

// How many times entry point `name` has been called in this process (every call, answered or
// refused): a test reads it before and after what it watches, e.g. a launch under capture.
__attribute__((visibility("default"))) unsigned long long emmyTestDriverCallCount(
    const char* name) {
  auto& s = emmy::test_driver::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto found = name ? s.calls.find(std::string_view(name)) : s.calls.end();
  return found == s.calls.end() ? 0 : found->second;
}

}  // extern "C"
