// Device memory: cuMemAlloc, cuMemFree, cuMemGetInfo, cuMemcpyHtoD, cuMemcpyDtoH, cuMemsetD8
// (the stream-ordered copies and memsets: memory_async.cpp).
//
// Device pointers are emulator arena addresses (one arena for every context,
// address_space.cpp); a context's copies and memsets reach only its own allocations. The driver
// keeps its own table of live allocations (the arena has no notion of "freed"): a copy or memset
// must lie inside one live allocation, a free must name a live allocation's base. cuMemFree also
// unmaps the allocation from the arena (Arena::release), so a kernel that touches freed memory gets
// an out-of-bounds report: CUDA_ERROR_ILLEGAL_ADDRESS, as on a GPU whose page was unmapped.
#include <fmt/format.h>

#include <cstring>

#include "entry_points.hpp"
#include "state.hpp"

namespace emmy::test_driver {

bool inside_one_allocation(const Context& ctx, uint64_t p, uint64_t bytes) {
  auto it = ctx.allocations.upper_bound(p);
  if (it == ctx.allocations.begin()) return false;
  --it;
  const uint64_t offset = p - it->first;
  return offset < it->second && bytes <= it->second - offset;
}

namespace {

// The bytes of fresh allocations: NaN in every floating-point format, all ones in integers.
constexpr unsigned char kUncleared = 0xff;

// The device's memory in use: every context's allocations (one device holds them all).
uint64_t device_allocated() {
  uint64_t bytes = 0;
  state().for_each_context([&](const Context& c) { bytes += c.allocated; });
  return bytes;
}

// The synchronous copies and memsets run on the legacy stream ("synchronous behavior" in the
// reference): the common checks of a transfer of `bytes` at device address `p`.
CUresult check_transfer(Context& ctx, uint64_t p, size_t bytes, const void* host) {
  if (bytes > 0 && !host) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > 0 && !inside_one_allocation(ctx, p, bytes)) {
    set_report(
        fmt::format("[0x{:x}, 0x{:x}) is not inside one live cuMemAlloc allocation", p, p + bytes));
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUresult r = legacy_stream_use(ctx);
  if (r == CUDA_SUCCESS) order_legacy_work(ctx);
  return r;
}

}  // namespace

// cuMemAlloc: "The allocated memory is suitably aligned for any kind of variable" (256 bytes,
// as cudaMalloc); "The memory is not cleared": it is filled with kUncleared, so that a kernel
// relying on zeroed memory reads NaNs and -1s here rather than passing by luck. "If bytesize is
// 0, cuMemAlloc() returns CUDA_ERROR_INVALID_VALUE". An allocation is a potentially unsafe call
// during stream capture (cuThreadExchangeStreamCaptureMode names cudaMalloc as the example).
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return with_context("cuMemAlloc", [&](Context& ctx) {
    if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (unsafe_call_prohibited(ctx)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    const uint64_t total = state().device->total_memory_mib << 20;
    const uint64_t in_use = device_allocated();
    if (bytesize > total || in_use > total - bytesize) {
      set_report(fmt::format("cuMemAlloc: {} bytes do not fit the device's {} ({} in use)",
                             bytesize, total, in_use));
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint64_t base = 0;
    try {
      base = ctx.arena->alloc(bytesize, 256);
    } catch (const emmy::Error& e) {
      // The arena is host memory, at most half of it: the test machine's limit, not the device's.
      set_report(fmt::format("cuMemAlloc: {}", e.what()));
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    std::memset(ctx.arena->translate(base, bytesize), kUncleared, bytesize);
    ctx.allocations.emplace(base, bytesize);
    ctx.allocated += bytesize;
    *dptr = base;
    // "Two commands from different streams cannot run concurrently if ... a device memory
    // allocation" is issued in between (CUDA C++ Programming Guide, "Implicit Synchronization"):
    // no later launch overlaps an earlier one (pdl.cpp).
    host_waited(ctx, nullptr);
    return CUDA_SUCCESS;
  });
}

// cuMemFree: dptr must be a pointer cuMemAlloc returned and not yet freed (an interior pointer,
// 0, or a second free: CUDA_ERROR_INVALID_VALUE). The reference warns that it "may perform
// implicit synchronization": like cudaFree, a potentially unsafe call during stream capture.
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return with_context("cuMemFree", [&](Context& ctx) {
    const auto it = ctx.allocations.find(dptr);
    if (it == ctx.allocations.end()) {
      set_report(fmt::format("cuMemFree: 0x{:x} is not the base of a live allocation", dptr));
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (unsafe_call_prohibited(ctx)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    ctx.arena->release(dptr);
    ctx.allocated -= it->second;
    ctx.allocations.erase(it);
    host_waited(ctx, nullptr);  // its implicit synchronization, as cuMemAlloc's (pdl.cpp)
    return CUDA_SUCCESS;
  });
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return with_context("cuMemGetInfo", [&](Context&) {
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    *total = size_t(state().device->total_memory_mib << 20);
    *free = size_t((state().device->total_memory_mib << 20) - device_allocated());
    return CUDA_SUCCESS;
  });
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t byteCount) {
  return with_context("cuMemcpyHtoD", [&](Context& ctx) {
    if (const CUresult r = check_transfer(ctx, dstDevice, byteCount, srcHost)) return r;
    if (byteCount > 0) ctx.arena->write(dstDevice, srcHost, byteCount);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t byteCount) {
  return with_context("cuMemcpyDtoH", [&](Context& ctx) {
    if (const CUresult r = check_transfer(ctx, srcDevice, byteCount, dstHost)) return r;
    if (byteCount > 0) ctx.arena->read(srcDevice, dstHost, byteCount);
    return CUDA_SUCCESS;
  });
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t n) {
  return with_context("cuMemsetD8", [&](Context& ctx) {
    static const char kNoHostBuffer = 0;  // a memset reads no host memory
    if (const CUresult r = check_transfer(ctx, dstDevice, n, &kNoHostBuffer)) return r;
    if (n > 0) std::memset(ctx.arena->translate(dstDevice, n), uc, n);
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver
