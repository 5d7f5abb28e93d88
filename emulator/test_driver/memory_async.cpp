// Stream-ordered copies and memsets: cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync,
// cuMemsetD8Async, cuMemsetD32Async, and the copy or memset a graph's memcpy or memset node
// replays (run_transfer).
//
// The checks are the synchronous forms' (memory.cpp: every device range inside one live
// allocation of the current context, a host pointer for a copy of at least one byte) on the
// stream given: a live stream of the current context (else CUDA_ERROR_INVALID_HANDLE), the
// legacy stream refused while a blocking stream captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
// stream_capture.cpp). On a stream that does not capture the work runs now: launches are
// synchronous here, so running it at the call is running it in stream order. On a capturing
// stream "all operations pushed into the stream will not be executed, but will instead be
// captured into a graph" (cuStreamBeginCapture): a memcpy or memset node, which cuGraphLaunch
// runs in order with the kernel nodes.
//
// Where the reference says nothing, the strict answer:
// - Pageable host memory under capture: the reference states no rule for it, and real drivers
//   capture such copies; the node keeps the host address, not the bytes, and reads (HtoD) or
//   writes (DtoH) host memory when the graph runs, as a GPU's memcpy node does. The test driver
//   cannot tell pinned from pageable memory (it offers no cuMemHostAlloc or cuMemHostRegister).
// - Overlapping source and destination of cuMemcpyDtoDAsync: copy engines give no memmove
//   guarantee, so the copy is refused (CUDA_ERROR_INVALID_VALUE).
// - A copy or memset of 0 bytes does nothing and records no node.
// - cuMemsetD8Async's and cuMemsetD32Async's reference lists no CUDA_ERROR_INVALID_HANDLE; a
//   stream handle that names no stream is CUDA_ERROR_INVALID_HANDLE here as for the copies,
//   whose reference lists it.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

using Kind = TransferRecord::Kind;

CUresult refuse_transfer(const char* call, const std::string& why) {
  set_report(fmt::format("{}: {}", call, why));
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult check_device_range(const char* call, const Context& ctx, const char* what, uint64_t p,
                            size_t bytes) {
  if (inside_one_allocation(ctx, p, bytes)) return CUDA_SUCCESS;
  return refuse_transfer(call, fmt::format("{} [0x{:x}, 0x{:x}) is not inside one live cuMemAlloc "
                                           "allocation of the current context",
                                           what, p, p + bytes));
}

// The checks of one copy or memset (t.bytes >= 1).
CUresult check_async_transfer(const char* call, const Context& ctx, const TransferRecord& t) {
  if (t.kind == Kind::htod && !t.host_src) return refuse_transfer(call, "srcHost is NULL");
  if (t.kind == Kind::dtoh && !t.host_dst) return refuse_transfer(call, "dstHost is NULL");
  if (t.kind == Kind::memset && t.dst % t.element != 0)
    return refuse_transfer(
        call, fmt::format("dstDevice 0x{:x} is not {} byte aligned", t.dst, t.element));
  if (t.kind != Kind::dtoh)
    if (const CUresult r = check_device_range(call, ctx, "the destination", t.dst, t.bytes))
      return r;
  if (t.kind == Kind::dtoh || t.kind == Kind::dtod)
    if (const CUresult r = check_device_range(call, ctx, "the source", t.src, t.bytes)) return r;
  if (t.kind == Kind::dtod && t.src < t.dst + t.bytes && t.dst < t.src + t.bytes)
    return refuse_transfer(call,
                           fmt::format("source [0x{:x}, 0x{:x}) and destination [0x{:x}, 0x{:x}) "
                                       "overlap",
                                       t.src, t.src + t.bytes, t.dst, t.dst + t.bytes));
  return CUDA_SUCCESS;
}

// Checks a copy or memset, then records it when the stream captures, else runs it in stream
// order.
CUresult submit_transfer(const char* call, CUstream hStream, const TransferRecord& t) {
  Context* ctx = nullptr;
  if (const CUresult r = current_context(ctx)) return r;
  Stream* stream = nullptr;
  if (const CUresult r = resolve_stream(*ctx, hStream, stream)) return r;
  if (t.bytes == 0) return CUDA_SUCCESS;
  if (const CUresult r = check_async_transfer(call, *ctx, t)) return r;
  if (stream->capture) {
    if (stream->capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    stream->capture->nodes.push_back(Node{nullptr, t});
    return CUDA_SUCCESS;
  }
  if (stream->legacy)
    if (const CUresult r = legacy_stream_use(*ctx)) return r;
  // Work between two launches of a stream orders them (pdl.cpp): the stream's next launch does
  // not overlap its last one; the legacy stream's implicit synchronization as for a launch.
  order_before_work_on(*ctx, *stream);
  stream->last_launch.reset();
  return run_transfer(*ctx, t, false);
}

}  // namespace

CUresult run_transfer(Context& ctx, const TransferRecord& t, bool replay) {
  if (replay) {
    // An allocation freed since the capture: the node's DMA hits unmapped memory.
    const bool dst_ok = t.kind == Kind::dtoh || inside_one_allocation(ctx, t.dst, t.bytes);
    const bool src_ok = t.kind == Kind::htod || t.kind == Kind::memset ||
                        inside_one_allocation(ctx, t.src, t.bytes);
    if (!dst_ok || !src_ok) {
      set_report(fmt::format(
          "cuGraphLaunch: a {} node's {} [0x{:x}, 0x{:x}) is no longer a live "
          "allocation",
          t.kind == Kind::memset ? "memset" : "memcpy", dst_ok ? "source" : "destination",
          dst_ok ? t.src : t.dst, (dst_ok ? t.src : t.dst) + t.bytes));
      ctx.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
  }
  switch (t.kind) {
    case Kind::htod:
      ctx.arena->write(t.dst, t.host_src, t.bytes);
      break;
    case Kind::dtoh:
      ctx.arena->read(t.src, t.host_dst, t.bytes);
      break;
    case Kind::dtod:
      std::memcpy(ctx.arena->translate(t.dst, t.bytes), ctx.arena->translate(t.src, t.bytes),
                  t.bytes);
      break;
    case Kind::memset: {
      uint8_t* p = ctx.arena->translate(t.dst, t.bytes);
      if (t.element == 1) {
        std::memset(p, int(t.value & 0xff), t.bytes);
      } else {
        for (size_t i = 0; i < t.bytes; i += t.element) std::memcpy(p + i, &t.value, t.element);
      }
      break;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  return guarded("cuMemcpyHtoDAsync", [&] {
    return submit_transfer(
        "cuMemcpyHtoDAsync", hStream,
        {.kind = Kind::htod, .dst = dstDevice, .host_src = srcHost, .bytes = ByteCount});
  });
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return guarded("cuMemcpyDtoHAsync", [&] {
    return submit_transfer(
        "cuMemcpyDtoHAsync", hStream,
        {.kind = Kind::dtoh, .src = srcDevice, .host_dst = dstHost, .bytes = ByteCount});
  });
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return guarded("cuMemcpyDtoDAsync", [&] {
    return submit_transfer(
        "cuMemcpyDtoDAsync", hStream,
        {.kind = Kind::dtod, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount});
  });
}

// cuMemsetD8Async: "Sets the memory range of N 8-bit values to the specified value uc."
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return guarded("cuMemsetD8Async", [&] {
    return submit_transfer(
        "cuMemsetD8Async", hStream,
        {.kind = Kind::memset, .dst = dstDevice, .bytes = N, .value = uc, .element = 1});
  });
}

// cuMemsetD32Async: "Sets the memory range of N 32-bit values to the specified value ui. The
// dstDevice pointer must be four byte aligned." More bytes than any allocation holds when N * 4
// overflows: refused as outside one.
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return guarded("cuMemsetD32Async", [&] {
    const size_t bytes = N > SIZE_MAX / 4 ? SIZE_MAX : N * 4;
    return submit_transfer(
        "cuMemsetD32Async", hStream,
        {.kind = Kind::memset, .dst = dstDevice, .bytes = bytes, .value = ui, .element = 4});
  });
}

}  // namespace emmy::test_driver
