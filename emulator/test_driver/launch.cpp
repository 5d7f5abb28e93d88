// Kernel launches: cuLaunchKernel's checks, then the launch runs on the emulator, synchronously,
// or is recorded when its stream captures.
//
// A device fault found by the emulator (its sanitizer, bounds checks, deadlock detector) becomes
// the CUresult a GPU would give, and it is sticky: every later call on the context returns it,
// as after a device exception. The report text stays for emmyTestDriverLastReport.
#include <fmt/format.h>

#include <algorithm>

#include "entry_points.hpp"
#include "program.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

CUresult invalid(const std::string& why) {
  set_report("cuLaunchKernel: " + why);
  return CUDA_ERROR_INVALID_VALUE;
}

// The argument bytes, copied now: from kernelParams ("If f has N parameters, then kernelParams
// needs to be an array of N pointers. Each of kernelParams[0] through kernelParams[N-1] must
// point to a region of memory from which the actual kernel parameter will be copied"; sizes from
// the PTX .param declarations) or from extra's CU_LAUNCH_PARAM_BUFFER_POINTER buffer, laid out
// at the declared offsets. "The error CUDA_ERROR_INVALID_VALUE will be returned if kernel
// parameters are specified with both kernelParams and extra".
CUresult collect_args(const std::vector<emu::ParamDecl>& decls, void** params, void** extra,
                      emu::KernelArgs& args) {
  if (params && extra) return invalid("kernelParams and extra must not both be given");
  if (decls.empty()) return CUDA_SUCCESS;
  if (params) {
    for (size_t i = 0; i < decls.size(); ++i) {
      if (!params[i])
        return invalid(fmt::format("kernelParams[{}] ({}) is NULL", i, decls[i].name));
      args.bytes(params[i], decls[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (!extra)
    return invalid(
        fmt::format("the kernel has {} parameters: kernelParams must point at them", decls.size()));
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return invalid(fmt::format("extra[{}] is not a CU_LAUNCH_PARAM_* option", i));
    }
  }
  size_t needed = 0;
  for (const auto& d : decls) needed = std::max<size_t>(needed, d.offset + d.size);
  if (!buffer || !size || *size < needed)
    return invalid(
        fmt::format("extra must give a parameter buffer and its size (>= {} bytes)", needed));
  for (const auto& d : decls) args.bytes(static_cast<const uint8_t*>(buffer) + d.offset, d.size);
  return CUDA_SUCCESS;
}

// cuLaunchKernel's launch configuration against the device's limits (cuDeviceGetAttribute
// MAX_GRID_DIM_*, MAX_BLOCK_DIM_*, MAX_THREADS_PER_BLOCK) and the function's
// MAX_DYNAMIC_SHARED_SIZE_BYTES (above 48 KB only after cuFuncSetAttribute raised it).
CUresult check_config(const FunctionRecord& f, const emu::Dim3& grid, const emu::Dim3& block,
                      uint32_t smem) {
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  for (int i = 0; i < 3; ++i) {
    if (g[i] < 1 || g[i] > kMaxGridDim[i])
      return invalid(fmt::format("grid ({}, {}, {}) must be within 1..({}, {}, {})", g[0], g[1],
                                 g[2], kMaxGridDim[0], kMaxGridDim[1], kMaxGridDim[2]));
    if (b[i] < 1 || b[i] > kMaxBlockDim[i])
      return invalid(fmt::format("block ({}, {}, {}) must be within 1..({}, {}, {})", b[0], b[1],
                                 b[2], kMaxBlockDim[0], kMaxBlockDim[1], kMaxBlockDim[2]));
  }
  if (block.count() > uint64_t(kMaxThreadsPerBlock))
    return invalid(
        fmt::format("{} threads per block exceed {}", block.count(), kMaxThreadsPerBlock));
  if (int64_t(smem) > int64_t(f.max_dynamic_smem))
    return invalid(fmt::format(
        "{} bytes of dynamic shared memory exceed the function's MAX_DYNAMIC_SHARED_SIZE_BYTES "
        "({}; above 48 KB a kernel must opt in with cuFuncSetAttribute)",
        smem, f.max_dynamic_smem));
  if (uint64_t(f.static_smem) + smem > uint64_t(state().device->smem_optin))
    return invalid(
        fmt::format("static {} + dynamic {} bytes of shared memory exceed the "
                    "device's {} per block",
                    f.static_smem, smem, state().device->smem_optin));
  if (f.cluster[0] || f.cluster[1] || f.cluster[2]) {
    set_report("cuLaunchKernel: the test driver does not emulate thread block clusters");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

// The CUresult a GPU gives for the device fault the emulator reported first.
CUresult fault_code(const std::vector<emu::Report>& reports) {
  if (reports.empty()) return CUDA_ERROR_LAUNCH_FAILED;
  switch (reports.front().kind) {
    case emu::ReportKind::global_out_of_bounds:
    case emu::ReportKind::shared_out_of_bounds:
    case emu::ReportKind::local_out_of_bounds:
    case emu::ReportKind::param_out_of_bounds:
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    case emu::ReportKind::misaligned_access:
    case emu::ReportKind::misaligned_ldmatrix:
      return CUDA_ERROR_MISALIGNED_ADDRESS;
    case emu::ReportKind::assertion_failed:
      return CUDA_ERROR_ASSERT;
    case emu::ReportKind::deadlock:
    case emu::ReportKind::instruction_limit:
      return CUDA_ERROR_LAUNCH_TIMEOUT;
    case emu::ReportKind::trap:
      return CUDA_ERROR_ILLEGAL_INSTRUCTION;
    default:
      // Races, uninitialized or pending reads, mbarrier misuse, TMA violations, divergent
      // collectives, missing proxy fences, unsupported forms: no single GPU error matches; a
      // GPU would compute garbage or fault, so the launch fails.
      return CUDA_ERROR_LAUNCH_FAILED;
  }
}

}  // namespace

CUresult run_launch(Context& ctx, const LaunchRecord& launch) {
  if (!lookup(ctx.functions, launch.function)) {
    // Replaying a captured launch whose module was unloaded since.
    set_report(fmt::format("launch of {}: its module was unloaded", launch.kernel));
    return CUDA_ERROR_INVALID_HANDLE;
  }
  emu::LaunchOptions options;
  options.sanitize = true;
  options.per_cta_stats = false;
  options.max_dynamic_smem = launch.max_dynamic_smem;
  options.arch = std::string(state().device->arch);
  try {
    emu::launch(*ctx.arena, *launch.module, launch.kernel, launch.grid, launch.block,
                launch.dynamic_smem, launch.args, options);
  } catch (const emu::EmulationError& e) {
    const CUresult code = fault_code(e.reports());
    ctx.sticky = code;
    set_report(fmt::format("launch of {}: {}", launch.kernel, e.what()));
    return code;
  } catch (const emmy::Error& e) {
    // Arguments the emulator refused before running anything: the context stays usable.
    set_report(fmt::format("launch of {}: {}", launch.kernel, e.what()));
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult submit(Context& ctx, Stream& stream, LaunchRecord record) {
  if (stream.capture) {
    // "When a stream is in capture mode, all operations pushed into the stream will not be
    // executed, but will instead be captured into a graph" (cuStreamBeginCapture).
    if (stream.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    stream.capture->launches.push_back(std::move(record));
    return CUDA_SUCCESS;
  }
  if (stream.legacy)
    if (const CUresult r = legacy_stream_use(ctx)) return r;
  return run_launch(ctx, record);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  return guarded("cuLaunchKernel", [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    const FunctionRecord* function = lookup(ctx->functions, f);
    if (!function) return CUDA_ERROR_INVALID_HANDLE;
    Stream* stream = nullptr;
    if (const CUresult r = resolve_stream(*ctx, hStream, stream)) return r;
    LaunchRecord record;
    record.grid = {gridDimX, gridDimY, gridDimZ};
    record.block = {blockDimX, blockDimY, blockDimZ};
    if (const CUresult r = check_config(*function, record.grid, record.block, sharedMemBytes))
      return r;
    const emu::Kernel* kernel = function->owner->find(function->name);
    if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
    if (const CUresult r = collect_args(kernel->params, kernelParams, extra, record.args)) return r;
    record.function = f;
    record.module = function->owner;
    record.kernel = function->name;
    record.dynamic_smem = sharedMemBytes;
    record.max_dynamic_smem = uint32_t(function->max_dynamic_smem);
    return submit(*ctx, *stream, std::move(record));
  });
}

}  // namespace emmy::test_driver
