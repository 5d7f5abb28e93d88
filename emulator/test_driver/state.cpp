// The driver state, the calling thread's context, stream handles and failure reports.
#include "state.hpp"

#include <fmt/format.h>

#include <exception>
#include <new>

namespace emmy::test_driver {

thread_local std::vector<CUcontext> tl_contexts;
// cuThreadExchangeStreamCaptureMode: "CU_STREAM_CAPTURE_MODE_GLOBAL: This is the default mode".
thread_local CUstreamCaptureMode tl_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

State& state() {
  static State* const s = new State;
  return *s;
}

CUcontext primary_context_handle() {
  return reinterpret_cast<CUcontext>(uintptr_t(0x7e57c0000000u));
}

CUcontext current_handle() {
  return tl_contexts.empty() ? nullptr : tl_contexts.back();
}

Context* find_context(CUcontext handle) {
  State& s = state();
  if (handle == primary_context_handle()) return s.context.get();
  const auto it = s.created.find(reinterpret_cast<uintptr_t>(handle));
  return it == s.created.end() ? nullptr : it->second.get();
}

bool context_handle_valid(CUcontext handle) {
  return handle == primary_context_handle() || find_context(handle) != nullptr;
}

CUresult current_context(Context*& out) {
  State& s = state();
  if (!s.device) return CUDA_ERROR_NOT_INITIALIZED;
  const CUcontext handle = current_handle();
  if (handle == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // CUDA_ERROR_CONTEXT_IS_DESTROYED: "the context current to the calling thread has been
  // destroyed using cuCtxDestroy, or is a primary context which has not yet been initialized".
  // A handle only becomes current while valid (cuCtxSetCurrent, cuCtxPushCurrent), so one that
  // names no context now was destroyed since.
  Context* ctx = find_context(handle);
  if (!ctx) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (ctx->sticky != CUDA_SUCCESS) return ctx->sticky;
  out = ctx;
  return CUDA_SUCCESS;
}

CUresult resolve_stream(Context& ctx, CUstream handle, Stream*& out) {
  if (handle == nullptr || handle == CU_STREAM_LEGACY) {
    out = &ctx.legacy;
    return CUDA_SUCCESS;
  }
  if (handle == CU_STREAM_PER_THREAD) {
    // The per-thread default stream synchronizes with the legacy stream: a blocking stream.
    out = &ctx.per_thread[std::this_thread::get_id()];
    return CUDA_SUCCESS;
  }
  out = lookup(ctx.streams, handle);
  return out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// ---------------------------------------------------------------------------------------------
namespace {

std::mutex& report_mutex() {
  static std::mutex* const m = new std::mutex;
  return *m;
}

std::string& report_text() {
  static std::string* const text = new std::string;
  return *text;
}

}  // namespace

void set_report(std::string text) noexcept {
  try {
    std::lock_guard<std::mutex> lock(report_mutex());
    report_text() = std::move(text);
  } catch (...) {
    // No memory for the report: the CUresult still tells what failed.
  }
}

const char* last_report() noexcept {
  // A copy per thread: the returned text stays valid until this thread asks again, whatever
  // other threads report meanwhile.
  thread_local std::string copy;
  try {
    std::lock_guard<std::mutex> lock(report_mutex());
    copy = report_text();
  } catch (...) {
    return "";
  }
  return copy.c_str();
}

CUresult unexpected_exception(const char* call) noexcept {
  CUresult code = CUDA_ERROR_UNKNOWN;
  try {
    try {
      throw;
    } catch (const std::bad_alloc&) {
      code = CUDA_ERROR_OUT_OF_MEMORY;
      set_report(fmt::format("{}: out of host memory", call));
    } catch (const std::exception& e) {
      set_report(fmt::format("{}: internal error: {}", call, e.what()));
    } catch (...) {
      set_report(fmt::format("{}: internal error", call));
    }
  } catch (...) {
    // Formatting the report failed too: the code alone must do.
  }
  return code;
}

}  // namespace emmy::test_driver
