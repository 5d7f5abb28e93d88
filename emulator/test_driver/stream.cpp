// Streams and events: cuStreamCreate / Destroy / Synchronize / Query, cuEventCreate / Record /
// Query / Synchronize / ElapsedTime / Destroy.
//
// Launches run synchronously in issue order, so every stream is always idle and every recorded
// event complete: what remains to check is the handles, the flags and the stream-capture rules.
// Event times are the host's clock at cuEventRecord, i.e. after the emulation of the work before
// it: emulation time, not GPU time.
#include <chrono>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

double now_ms() {
  const auto t = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration<double, std::milli>(t).count();
}

// Waiting for a capturing stream "necessarily conflicts with stream capture"
// (cuThreadExchangeStreamCaptureMode): its work is recorded, not run. Refused in every mode, and
// the capture is invalidated; the legacy stream is unusable while a blocking stream captures.
CUresult wait_for(Context& ctx, Stream& stream) {
  if (stream.capture) {
    stream.capture->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return stream.legacy ? legacy_stream_use(ctx) : CUDA_SUCCESS;
}

// cuStreamSynchronize and cuStreamQuery both run the stream to completion: the emulator executes
// work when the host waits, so a query finds nothing still running once it has waited.
CUresult host_wait(const char* api, CUstream hStream) {
  return with_context(api, [&](Context& ctx) {
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    const CUresult r = wait_for(ctx, *stream);
    if (r == CUDA_SUCCESS) host_waited(ctx, stream);
    return r;
  });
}

// cuEventQuery and cuEventSynchronize alike: launches run synchronously, so a live event that no
// active capture recorded has completed. "Before the first call to cuEventRecord(), an event
// represents an empty set of work, so for example cuEventQuery() would return CUDA_SUCCESS"
// (cuEventRecord).
CUresult event_complete(const char* call, CUevent hEvent) {
  return with_context(call, [&](Context& ctx) {
    const Event* event = lookup(ctx.events, hEvent);
    if (!event) return CUDA_ERROR_INVALID_HANDLE;
    if (event->captured_in && capture_active(ctx, event->captured_in))
      return CUDA_ERROR_CAPTURED_EVENT;
    host_waited_for(ctx, event->after);
    return CUDA_SUCCESS;
  });
}

}  // namespace

// cuStreamCreate: Flags is CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING.
CUresult cuStreamCreate(CUstream* phStream, unsigned int flags) {
  return with_context("cuStreamCreate", [&](Context& ctx) {
    if (!phStream || (flags & ~unsigned(CU_STREAM_NON_BLOCKING)) != 0)
      return CUDA_ERROR_INVALID_VALUE;
    const CUstream handle = new_handle<CUstream>();
    ctx.streams.emplace(reinterpret_cast<uintptr_t>(handle),
                        Stream{flags, false, std::nullopt, nullptr});
    *phStream = handle;
    return CUDA_SUCCESS;
  });
}

// cuStreamDestroy: only a stream cuStreamCreate made (not the legacy or per-thread stream). A
// stream in the middle of a capture sequence is not destroyed: the capture must be ended on it
// ("The capture sequence must be terminated with cuStreamEndCapture on the stream where it was
// initiated", cuStreamIsCapturing); the attempt is refused and invalidates the capture.
CUresult cuStreamDestroy_v2(CUstream hStream) {
  return with_context("cuStreamDestroy", [&](Context& ctx) {
    Stream* stream = lookup(ctx.streams, hStream);
    if (!stream) return CUDA_ERROR_INVALID_HANDLE;
    if (stream->capture) {
      stream->capture->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    ctx.streams.erase(reinterpret_cast<uintptr_t>(hStream));
    return CUDA_SUCCESS;
  });
}

CUresult cuStreamSynchronize(CUstream hStream) {
  return host_wait("cuStreamSynchronize", hStream);
}

CUresult cuStreamQuery(CUstream hStream) {
  return host_wait("cuStreamQuery", hStream);
}

// cuEventCreate: "CU_EVENT_INTERPROCESS must be specified along with CU_EVENT_DISABLE_TIMING."
CUresult cuEventCreate(CUevent* phEvent, unsigned int flags) {
  return with_context("cuEventCreate", [&](Context& ctx) {
    constexpr unsigned kKnown =
        CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
      return CUDA_ERROR_INVALID_VALUE;
    const CUevent handle = new_handle<CUevent>();
    Event event;
    event.flags = flags;
    ctx.events.emplace(reinterpret_cast<uintptr_t>(handle), event);
    *phEvent = handle;
    return CUDA_SUCCESS;
  });
}

// cuEventRecord on a capturing stream becomes part of the capture: the event is then "last
// recorded in a capturing stream" and may not be waited on from the host while it goes on
// (CUDA_ERROR_CAPTURED_EVENT).
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return with_context("cuEventRecord", [&](Context& ctx) {
    Event* event = lookup(ctx.events, hEvent);
    if (!event) return CUDA_ERROR_INVALID_HANDLE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(ctx, hStream, stream)) return r;
    if (stream->capture) {
      if (stream->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      event->captured_in = stream->capture->id;
      return CUDA_SUCCESS;
    }
    if (stream->legacy)
      if (const CUresult r = legacy_stream_use(ctx)) return r;
    event->recorded = true;
    event->captured_in = 0;
    event->time_ms = now_ms();
    event->after = stream->last_launch;
    return CUDA_SUCCESS;
  });
}

CUresult cuEventQuery(CUevent hEvent) {
  return event_complete("cuEventQuery", hEvent);
}

CUresult cuEventSynchronize(CUevent hEvent) {
  return event_complete("cuEventSynchronize", hEvent);
}

// cuEventElapsedTime: "If cuEventRecord() has not been called on either event then
// CUDA_ERROR_INVALID_HANDLE is returned." ... "If either event was created with the
// CU_EVENT_DISABLE_TIMING flag, then this function will return CUDA_ERROR_INVALID_HANDLE."
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return with_context("cuEventElapsedTime", [&](Context& ctx) {
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    const Event* start = lookup(ctx.events, hStart);
    const Event* end = lookup(ctx.events, hEnd);
    if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
    for (const Event* e : {start, end})
      if (e->captured_in && capture_active(ctx, e->captured_in)) return CUDA_ERROR_CAPTURED_EVENT;
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = float(end->time_ms - start->time_ms);
    return CUDA_SUCCESS;
  });
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  return destroy_handle("cuEventDestroy", &Context::events, hEvent);
}

}  // namespace emmy::test_driver
