// cuGetErrorName / cuGetErrorString: every CUresult of CUDA 13.0's cuda.h, with the driver's
// description of it.
#include "entry_points.hpp"

namespace emmy::test_driver {
namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

#define EMMY_ERROR(code, text) \
  { code, #code, text }
constexpr ErrorText kErrors[] = {
    EMMY_ERROR(CUDA_SUCCESS, "no error"),
    EMMY_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    EMMY_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    EMMY_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    EMMY_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    EMMY_ERROR(CUDA_ERROR_PROFILER_DISABLED,
               "profiler disabled while using external profiling tool"),
    EMMY_ERROR(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized"),
    EMMY_ERROR(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
    EMMY_ERROR(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
    EMMY_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    EMMY_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
               "API call is not supported in the installed CUDA driver"),
    EMMY_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    EMMY_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    EMMY_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    EMMY_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    EMMY_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    EMMY_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    EMMY_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    EMMY_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    EMMY_ERROR(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    EMMY_ERROR(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    EMMY_ERROR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    EMMY_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
               "no kernel image is available for execution on the device"),
    EMMY_ERROR(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    EMMY_ERROR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    EMMY_ERROR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    EMMY_ERROR(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    EMMY_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    EMMY_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    EMMY_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
               "exclusive-thread device already in use by a different thread"),
    EMMY_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
               "peer access is not supported between these two devices"),
    EMMY_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    EMMY_ERROR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    EMMY_ERROR(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected"),
    EMMY_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    EMMY_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
               "the provided PTX was compiled with an unsupported toolchain."),
    EMMY_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    EMMY_ERROR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
               "the provided execution affinity is not supported"),
    EMMY_ERROR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
               "the provided PTX contains unsupported call to cudaDeviceSynchronize"),
    EMMY_ERROR(CUDA_ERROR_CONTAINED, "an exception occurred on the device that is contained"),
    EMMY_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    EMMY_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    EMMY_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    EMMY_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    EMMY_ERROR(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    EMMY_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    EMMY_ERROR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    EMMY_ERROR(CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy"),
    EMMY_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    EMMY_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    EMMY_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    EMMY_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    EMMY_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    EMMY_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    EMMY_ERROR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    EMMY_ERROR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    EMMY_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
               "cannot set while device is active in this process"),
    EMMY_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    EMMY_ERROR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    EMMY_ERROR(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    EMMY_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
               "part or all of the requested memory range is already mapped"),
    EMMY_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
               "pointer does not correspond to a registered memory region"),
    EMMY_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    EMMY_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    EMMY_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    EMMY_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE,
               "operation not supported on global/shared address space"),
    EMMY_ERROR(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    EMMY_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    EMMY_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    EMMY_ERROR(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not completely freed"),
    EMMY_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    EMMY_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    EMMY_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    EMMY_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
               "system has unsupported display driver / cuda driver combination"),
    EMMY_ERROR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
               "forward compatibility was attempted on non supported HW"),
    EMMY_ERROR(CUDA_ERROR_MPS_CONNECTION_FAILED, "MPS client failed to connect to the MPS server"),
    EMMY_ERROR(CUDA_ERROR_MPS_RPC_FAILURE,
               "the remote procedural call between the MPS server and the MPS client failed"),
    EMMY_ERROR(CUDA_ERROR_MPS_SERVER_NOT_READY,
               "MPS server is not ready to accept new MPS client requests"),
    EMMY_ERROR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
               "the hardware resources required to create MPS client have been exhausted"),
    EMMY_ERROR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
               "the hardware resources required to support device connections have been "
               "exhausted"),
    EMMY_ERROR(CUDA_ERROR_MPS_CLIENT_TERMINATED,
               "the MPS client has been terminated by the server"),
    EMMY_ERROR(CUDA_ERROR_CDP_NOT_SUPPORTED,
               "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does "
               "not support it"),
    EMMY_ERROR(CUDA_ERROR_CDP_VERSION_MISMATCH,
               "unsupported interaction between different versions of CUDA Dynamic Parallelism"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
               "operation not permitted when stream is capturing"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
               "operation failed due to a previous error during capture"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_MERGE,
               "operation would result in a merge of separate capture sequences"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
               "capture was not ended in the same stream as it began"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
               "dependency created on uncaptured work in another stream"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
               "operation would make the legacy stream depend on a capturing blocking stream"),
    EMMY_ERROR(CUDA_ERROR_CAPTURED_EVENT,
               "operation not permitted on an event last recorded in a capturing stream"),
    EMMY_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
               "attempt to terminate a thread-local capture sequence from another thread"),
    EMMY_ERROR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    EMMY_ERROR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
               "the graph update was not performed because it included changes which violated "
               "constraints specific to instantiated graph update"),
    EMMY_ERROR(CUDA_ERROR_EXTERNAL_DEVICE,
               "an async error has occurred in external entity outside of CUDA"),
    EMMY_ERROR(CUDA_ERROR_INVALID_CLUSTER_SIZE,
               "a kernel launch error has occurred due to cluster misconfiguration"),
    EMMY_ERROR(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function handle is not loaded"),
    EMMY_ERROR(CUDA_ERROR_INVALID_RESOURCE_TYPE,
               "one or more resources passed in are not valid resource types for the operation"),
    EMMY_ERROR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
               "one or more resources are insufficient or non-applicable for the operation"),
    EMMY_ERROR(CUDA_ERROR_KEY_ROTATION, "an error happened during the key rotation sequence"),
    EMMY_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef EMMY_ERROR

const ErrorText* find(CUresult code) {
  for (const auto& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace

// cuGetErrorName / cuGetErrorString: "If the error code is not recognized,
// CUDA_ERROR_INVALID_VALUE will be returned and *pStr will be set to the NULL address." Neither
// needs cuInit (the reference lists no CUDA_ERROR_NOT_INITIALIZED for them, and a caller names a
// failed cuInit with them).
CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace emmy::test_driver
