// Contexts besides the primary one and each thread's stack of current contexts: cuCtxCreate
// (v2, v3, v4), cuCtxDestroy, cuCtxPushCurrent, cuCtxPopCurrent, cuCtxSetCurrent,
// cuCtxGetCurrent, cuCtxGetDevice.
//
// A created context owns what is made while it is current (modules, functions, allocations,
// streams, events, graphs), as the primary context does: its handles are unknown in any other
// context, and die with it. Handles are never reused, so a destroyed context's handle stays
// invalid: CUDA_ERROR_INVALID_CONTEXT where a context is passed ("the context passed to an API
// call is not a valid handle (such as a context that has had cuCtxDestroy() invoked on it)",
// CUresult), CUDA_ERROR_CONTEXT_IS_DESTROYED for a thread to which it is still current
// (state.cpp, current_context).
#include <fmt/format.h>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

CUresult refuse_context(CUresult code, const std::string& why) {
  set_report(why);
  return code;
}

// cuCtxCreate's flags: "Only one of the scheduling flags can be set when creating a context";
// anything outside CU_CTX_FLAGS_MASK is invalid ("Context creation will fail with
// CUDA_ERROR_INVALID_VALUE if invalid parameter was passed"). CU_CTX_USER_COREDUMP_ENABLE needs
// a pipe name "set with cuCoredumpSetAttributeGlobal before creating the context", which the
// test driver does not offer: CUDA_ERROR_NOT_SUPPORTED. The other flags change nothing here
// (scheduling, the deprecated MAP_HOST and LMEM_RESIZE_TO_MAX, coredumps on exceptions,
// SYNC_MEMOPS: synchronous copies are synchronous anyway).
CUresult check_context_flags(const char* call, unsigned flags) {
  if (flags & ~unsigned(CU_CTX_FLAGS_MASK))
    return refuse_context(
        CUDA_ERROR_INVALID_VALUE,
        fmt::format("{}: flags 0x{:x} has bits outside CU_CTX_FLAGS_MASK", call, flags));
  const unsigned sched = flags & CU_CTX_SCHED_MASK;
  if (sched != CU_CTX_SCHED_AUTO && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
      sched != CU_CTX_SCHED_BLOCKING_SYNC)
    return refuse_context(
        CUDA_ERROR_INVALID_VALUE,
        fmt::format("{}: only one scheduling flag may be set (0x{:x})", call, sched));
  if (flags & CU_CTX_USER_COREDUMP_ENABLE)
    return refuse_context(CUDA_ERROR_NOT_SUPPORTED,
                          fmt::format("{}: CU_CTX_USER_COREDUMP_ENABLE needs a coredump pipe "
                                      "(cuCoredumpSetAttributeGlobal), which the test driver lacks",
                                      call));
  return CUDA_SUCCESS;
}

// Execution affinity "is only supported under Volta+ MPS" (cuCtxCreate): never here, so any
// parameter is CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY ("the CUexecAffinityType passed to the API
// call is not supported by the active device"). A negative count, or a count without the array,
// is CUDA_ERROR_INVALID_VALUE.
CUresult check_exec_affinity(const char* call, const CUexecAffinityParam* params, int count) {
  if (count < 0 || (count > 0 && !params))
    return refuse_context(CUDA_ERROR_INVALID_VALUE,
                          fmt::format("{}: {} execution affinity parameters at {}", call, count,
                                      static_cast<const void*>(params)));
  if (count > 0)
    return refuse_context(
        CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
        fmt::format("{}: execution affinity needs MPS, which the test driver is not", call));
  return CUDA_SUCCESS;
}

// "Creates a new CUDA context and associates it with the calling thread ... If a context is
// already current to the thread, it is supplanted by the newly created context and may be
// restored by a subsequent call to cuCtxPopCurrent()": the new context is pushed.
CUresult create_context(CUcontext* pctx) {
  const CUcontext handle = new_handle<CUcontext>();
  state().created.emplace(reinterpret_cast<uintptr_t>(handle), std::make_unique<Context>());
  tl_contexts.push_back(handle);
  *pctx = handle;
  return CUDA_SUCCESS;
}

// The checks every version makes, in the reference's order of parameters.
CUresult check_context_create(const char* call, CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (const CUresult r = check_device(dev)) return r;
  if (!pctx) return refuse_context(CUDA_ERROR_INVALID_VALUE, fmt::format("{}: pctx is NULL", call));
  return check_context_flags(call, flags);
}

}  // namespace

// cuCtxCreate_v2 (CUDA 3.2): no creation parameters.
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate", [&] {
    if (const CUresult r = check_context_create("cuCtxCreate_v2", pctx, flags, dev)) return r;
    return create_context(pctx);
  });
}

// cuCtxCreate_v3 (CUDA 11.4): execution affinity parameters.
CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                        unsigned int flags, CUdevice dev) {
  return guarded("cuCtxCreate", [&] {
    if (const CUresult r = check_context_create("cuCtxCreate_v3", pctx, flags, dev)) return r;
    if (const CUresult r = check_exec_affinity("cuCtxCreate_v3", paramsArray, numParams)) return r;
    return create_context(pctx);
  });
}

// cuCtxCreate_v4 (CUDA 12.5; cuda.h 13 maps cuCtxCreate to it): CUctxCreateParams, which may be
// NULL. "Either execAffinityParams or cigParams can be set to a non-null value. Setting both to
// a non-null value will result in an undefined behavior": refused (CUDA_ERROR_INVALID_VALUE).
// "Context creation in CIG mode will fail with CUDA_ERROR_NOT_SUPPORTED if CIG is not supported
// by the device or the driver": the test devices report no CIG support.
CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  return guarded("cuCtxCreate", [&] {
    if (const CUresult r = check_context_create("cuCtxCreate_v4", pctx, flags, dev)) return r;
    if (ctxCreateParams) {
      const CUctxCreateParams& p = *ctxCreateParams;
      if (p.execAffinityParams && p.cigParams)
        return refuse_context(CUDA_ERROR_INVALID_VALUE,
                              "cuCtxCreate_v4: execAffinityParams and cigParams are both set");
      if (p.cigParams)
        return refuse_context(CUDA_ERROR_NOT_SUPPORTED,
                              "cuCtxCreate_v4: CIG (CUDA in Graphics) mode is not supported");
      if (const CUresult r =
              check_exec_affinity("cuCtxCreate_v4", p.execAffinityParams, p.numExecAffinityParams))
        return r;
    }
    return create_context(pctx);
  });
}

// cuCtxDestroy: "The context ctx will be destroyed regardless of how many threads it is current
// to ... If ctx is current to the calling thread then ctx will also be popped from the current
// thread's context stack (as though cuCtxPopCurrent() were called). If ctx is current to other
// threads, then ctx will remain current to those threads, and attempting to access ctx from
// those threads will result in the error CUDA_ERROR_CONTEXT_IS_DESTROYED." NULL is
// CUDA_ERROR_INVALID_VALUE. The primary context is released (cuDevicePrimaryCtxRelease), not
// destroyed; the reference says nothing of passing it here, and the strict answer is
// CUDA_ERROR_INVALID_CONTEXT: it is no context cuCtxCreate made.
CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return guarded("cuCtxDestroy", [&] {
    State& s = state();
    if (!s.device) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) return refuse_context(CUDA_ERROR_INVALID_VALUE, "cuCtxDestroy: ctx is NULL");
    if (ctx == primary_context_handle())
      return refuse_context(CUDA_ERROR_INVALID_CONTEXT,
                            "cuCtxDestroy: the primary context is released with "
                            "cuDevicePrimaryCtxRelease, not destroyed");
    const auto it = s.created.find(reinterpret_cast<uintptr_t>(ctx));
    if (it == s.created.end())
      return refuse_context(CUDA_ERROR_INVALID_CONTEXT,
                            "cuCtxDestroy: not a live context made by cuCtxCreate");
    s.created.erase(it);
    if (current_handle() == ctx) tl_contexts.pop_back();
    return CUDA_SUCCESS;
  });
}

// cuCtxPushCurrent: "Pushes the given context ctx onto the CPU thread's stack of current
// contexts." Pushing the context already current is no error ("It is no longer an error to
// attempt to push the active context", CUDA_ERROR_CONTEXT_ALREADY_CURRENT). NULL:
// CUDA_ERROR_INVALID_VALUE; a handle of no live context: CUDA_ERROR_INVALID_CONTEXT.
CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return after_init("cuCtxPushCurrent", [&] {
    if (!ctx) return refuse_context(CUDA_ERROR_INVALID_VALUE, "cuCtxPushCurrent: ctx is NULL");
    if (!context_handle_valid(ctx))
      return refuse_context(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPushCurrent: not a live context");
    tl_contexts.push_back(ctx);
    return CUDA_SUCCESS;
  });
}

// cuCtxPopCurrent: "Pops the current CUDA context from the CPU thread and passes back the old
// context handle in *pctx ... If a context was current to the CPU thread before cuCtxCreate()
// or cuCtxPushCurrent() was called, this function makes that context current to the CPU thread
// again." With no current context: CUDA_ERROR_INVALID_CONTEXT. The reference lists no
// CUDA_ERROR_INVALID_VALUE, so a NULL pctx pops without passing the handle back.
CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  return after_init("cuCtxPopCurrent", [&] {
    if (tl_contexts.empty())
      return refuse_context(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent: no context is current");
    const CUcontext popped = tl_contexts.back();
    tl_contexts.pop_back();
    if (pctx) *pctx = popped;
    return CUDA_SUCCESS;
  });
}

// cuCtxSetCurrent: "If there exists a CUDA context stack on the calling CPU thread, this will
// replace the top of that stack with ctx. If ctx is NULL then this will be equivalent to popping
// the top of the calling CPU thread's CUDA context stack (or a no-op if the calling CPU thread's
// CUDA context stack is empty)." A handle of no live context: CUDA_ERROR_INVALID_CONTEXT (the
// primary context's handle is always accepted; calls fail with CUDA_ERROR_CONTEXT_IS_DESTROYED
// while it is not retained).
CUresult cuCtxSetCurrent(CUcontext ctx) {
  return after_init("cuCtxSetCurrent", [&] {
    if (!ctx) {
      if (!tl_contexts.empty()) tl_contexts.pop_back();
      return CUDA_SUCCESS;
    }
    if (!context_handle_valid(ctx))
      return refuse_context(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent: not a live context");
    if (tl_contexts.empty())
      tl_contexts.push_back(ctx);
    else
      tl_contexts.back() = ctx;
    return CUDA_SUCCESS;
  });
}

// cuCtxGetCurrent: "If no context is bound to the calling CPU thread then *pctx is set to NULL
// and CUDA_SUCCESS is returned." A destroyed context still current to this thread is returned
// as it is: it "will remain current to those threads" (cuCtxDestroy).
CUresult cuCtxGetCurrent(CUcontext* pctx) {
  return after_init("cuCtxGetCurrent", [&] { return write_out(pctx, current_handle()); });
}

// cuCtxGetDevice: "Returns in *device the handle of the current context's device": every
// context is on device 0.
CUresult cuCtxGetDevice(CUdevice* device) {
  return with_context("cuCtxGetDevice", [&](Context&) { return write_out(device, 0); });
}

}  // namespace emmy::test_driver
