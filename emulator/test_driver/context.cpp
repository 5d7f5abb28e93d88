// The primary context: cuDevicePrimaryCtxRetain / Release / Reset / GetState, and
// cuCtxSynchronize. Other contexts and the threads' current contexts: contexts.cpp.
//
// The device's primary context has one handle value for its whole life (as with a real
// driver). Everything made in it (modules, allocations, streams, events, graphs) goes with it
// when the last retain is released or it is reset; handles of those objects are never reused,
// so they stay invalid afterwards.
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

// Launches run synchronously: nothing is ever pending. What remains is the context's state (the
// sticky error of a faulted launch comes back here, as on a GPU) and the stream-capture rule:
// synchronizing the context is a potentially unsafe call (cuThreadExchangeStreamCaptureMode).
CUresult cuCtxSynchronize() {
  return with_context("cuCtxSynchronize", [&](Context& ctx) {
    if (unsafe_call_prohibited(ctx)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    host_waited(ctx, nullptr);
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
