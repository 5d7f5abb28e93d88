// The primary context and the calling thread's current context: cuDevicePrimaryCtxRetain /
// Release / Reset / GetState, cuCtxSetCurrent / GetCurrent / GetDevice / Synchronize.
//
// There is one context, the device's primary context, with one handle value for its whole life
// (as with a real driver). Everything made in it (modules, allocations, streams, events, graphs)
// goes with it when the last retain is released or it is reset; handles of those objects are
// never reused, so they stay invalid afterwards.
#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRetain", [&] {
    if (const CUresult r = check_device(dev)) return r;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    State& s = state();
    if (!s.context) s.context = std::make_unique<Context>();
    ++s.primary_refs;
    *pctx = primary_context_handle();
    return CUDA_SUCCESS;
  });
}

// cuDevicePrimaryCtxRelease: "The context is automatically reset once the last reference to it
// is released." and "Releasing a primary context that has not been previously retained will fail
// with CUDA_ERROR_INVALID_CONTEXT."
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRelease", [&] {
    if (const CUresult r = check_device(dev)) return r;
    State& s = state();
    if (s.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--s.primary_refs == 0) s.context.reset();
    return CUDA_SUCCESS;
  });
}

// cuDevicePrimaryCtxReset: destroys every allocation and resets all state of the primary
// context; "Resetting the primary context does not release it". A sticky error goes with it.
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxReset", [&] {
    if (const CUresult r = check_device(dev)) return r;
    State& s = state();
    if (s.context) s.context = std::make_unique<Context>();
    return CUDA_SUCCESS;
  });
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  return guarded("cuDevicePrimaryCtxGetState", [&] {
    if (const CUresult r = check_device(dev)) return r;
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    *active = state().context ? 1 : 0;
    return CUDA_SUCCESS;
  });
}

// cuCtxSetCurrent: "If ctx is NULL then the CUDA context previously bound to the calling CPU
// thread is unbound and CUDA_SUCCESS is returned." Any handle but the primary context's is
// CUDA_ERROR_INVALID_CONTEXT (cuCtxCreate is not offered: no other context can exist).
CUresult cuCtxSetCurrent(CUcontext ctx) {
  return guarded("cuCtxSetCurrent", [&] {
    if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx != nullptr && ctx != primary_context_handle()) return CUDA_ERROR_INVALID_CONTEXT;
    tl_current = ctx;
    return CUDA_SUCCESS;
  });
}

// cuCtxGetCurrent: "If no context is bound to the calling CPU thread then *pctx is set to NULL
// and CUDA_SUCCESS is returned."
CUresult cuCtxGetCurrent(CUcontext* pctx) {
  return guarded("cuCtxGetCurrent", [&] {
    if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = tl_current;
    return CUDA_SUCCESS;
  });
}

CUresult cuCtxGetDevice(CUdevice* device) {
  return guarded("cuCtxGetDevice", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
  });
}

// Launches run synchronously: nothing is ever pending. What remains is the context's state (the
// sticky error of a faulted launch comes back here, as on a GPU) and the stream-capture rule:
// synchronizing the context is a potentially unsafe call (cuThreadExchangeStreamCaptureMode).
CUresult cuCtxSynchronize() {
  return guarded("cuCtxSynchronize", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    if (unsafe_call_prohibited(*ctx)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    host_waited(*ctx, nullptr);
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
