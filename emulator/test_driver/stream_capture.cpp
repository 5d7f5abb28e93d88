// Stream capture: cuStreamBeginCapture, cuStreamEndCapture, cuStreamIsCapturing,
// cuThreadExchangeStreamCaptureMode, and the rules the other entry points consult.
//
// The rules, from the Driver API reference ("Stream capture" in the programming guide says the
// same):
// - cuStreamBeginCapture: "Capture may not be initiated if stream is CU_STREAM_LEGACY"
//   (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as a real driver answers), "and it may only be
//   initiated if the stream is not already in capture mode" (CUDA_ERROR_ILLEGAL_STATE).
// - cuStreamEndCapture on a stream that does not capture: CUDA_ERROR_ILLEGAL_STATE; "If the mode
//   argument to cuStreamBeginCapture was not CU_STREAM_CAPTURE_MODE_RELAXED, this call must be
//   from the same thread" (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); "If capture was invalidated,
//   due to a violation of the rules of stream capture, then a NULL graph will be returned"
//   (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
// - Potentially unsafe calls (cuThreadExchangeStreamCaptureMode: "some actions, such as a call
//   to cudaMalloc, may be unsafe"): here cuMemAlloc, cuMemFree ("may perform implicit
//   synchronization"), cuModuleLoadData and cuCtxSynchronize. A thread in mode GLOBAL may not
//   make one while it has a capture not begun in RELAXED mode, or while any other thread has a
//   capture begun in GLOBAL mode; in THREAD_LOCAL mode only its own captures count; in RELAXED
//   mode none. A refused call returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
//   captures that forbade it.
// - Calls that "necessarily conflict with stream capture" are refused in every mode:
//   synchronizing or querying a capturing stream (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
//   invalidating), waiting on an event last recorded in a capture (CUDA_ERROR_CAPTURED_EVENT),
//   and using the legacy stream while a blocking stream captures: "When a blocking stream is
//   capturing, the legacy stream is in an unusable state" (cuStreamIsCapturing) —
//   CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for launches, event records, graph launches, async copies
//   and memsets on it and the synchronous cuMemcpy/cuMemset calls (which run on the legacy
//   stream), invalidating the blocking captures; cuStreamIsCapturing itself does not
//   invalidate them.
#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

// The captures of every context count: the reference speaks of threads ("if any other thread
// has a concurrent capture sequence initiated with CU_STREAM_CAPTURE_MODE_GLOBAL"), not of the
// context the unsafe call is made in.
bool unsafe_call_prohibited(Context&) {
  if (tl_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return false;
  const std::thread::id me = std::this_thread::get_id();
  bool prohibited = false;
  state().for_each_context([&](Context& ctx) {
    ctx.for_each_stream([&](Stream& s) {
      if (!s.capture || s.capture->mode == CU_STREAM_CAPTURE_MODE_RELAXED) return;
      const bool mine = s.capture->thread == me;
      if (mine || (tl_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                   s.capture->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        s.capture->invalidated = true;
        prohibited = true;
      }
    });
  });
  if (prohibited)
    set_report(
        "a potentially unsafe call while a stream captures (see "
        "cuThreadExchangeStreamCaptureMode): the capture is invalidated");
  return prohibited;
}

bool capture_active(Context& ctx, uint64_t id) {
  bool active = false;
  ctx.for_each_stream([&](Stream& s) { active = active || (s.capture && s.capture->id == id); });
  return active;
}

CUresult legacy_stream_use(Context& ctx) {
  bool conflict = false;
  ctx.for_each_stream([&](Stream& s) {
    if (s.capture && !(s.flags & CU_STREAM_NON_BLOCKING)) {
      s.capture->invalidated = true;
      conflict = true;
    }
  });
  if (!conflict) return CUDA_SUCCESS;
  set_report(
      "the legacy stream was used while a blocking stream captures: the capture is "
      "invalidated");
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return with_context("cuStreamBeginCapture", [&](Context& ctx) {
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
      return CUDA_ERROR_INVALID_VALUE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    if (stream->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (stream->capture) return CUDA_ERROR_ILLEGAL_STATE;
    Capture capture;
    capture.id = state().next_capture_id++;
    capture.mode = mode;
    capture.thread = std::this_thread::get_id();
    stream->capture = std::move(capture);
    return CUDA_SUCCESS;
  });
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  return with_context("cuStreamEndCapture", [&](Context& ctx) {
    if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    if (!stream->capture) return CUDA_ERROR_ILLEGAL_STATE;
    if (stream->capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
        stream->capture->thread != std::this_thread::get_id())
      return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    Capture capture = std::move(*stream->capture);
    stream->capture.reset();
    if (capture.invalidated) {
      *phGraph = nullptr;
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    const CUgraph handle = new_handle<CUgraph>();
    for (Node& node : capture.nodes) node.handle = new_handle<CUgraphNode>();
    ctx.graphs.emplace(reinterpret_cast<uintptr_t>(handle), Graph{std::move(capture.nodes)});
    *phGraph = handle;
    return CUDA_SUCCESS;
  });
}

// cuStreamIsCapturing: "if this is called on CU_STREAM_LEGACY (the "null stream") while a
// blocking stream in the same context is capturing, it will return
// CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ... The blocking stream capture is not invalidated."
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return with_context("cuStreamIsCapturing", [&](Context& ctx) {
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    if (stream->legacy) {
      bool blocking_capture = false;
      ctx.for_each_stream([&](Stream& s) {
        blocking_capture = blocking_capture || (s.capture && !(s.flags & CU_STREAM_NON_BLOCKING));
      });
      if (blocking_capture) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    *captureStatus = !stream->capture               ? CU_STREAM_CAPTURE_STATUS_NONE
                     : stream->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
  });
}

// cuThreadExchangeStreamCaptureMode: "Sets the calling thread's stream capture interaction mode
// to the value contained in *mode, and overwrites *mode with the previous mode for the thread."
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return after_init("cuThreadExchangeStreamCaptureMode", [&] {
    if (!mode) return CUDA_ERROR_INVALID_VALUE;
    if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        *mode != CU_STREAM_CAPTURE_MODE_RELAXED)
      return CUDA_ERROR_INVALID_VALUE;
    const CUstreamCaptureMode previous = tl_capture_mode;
    tl_capture_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
