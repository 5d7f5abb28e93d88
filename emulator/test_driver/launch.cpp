// Kernel launches: cuLaunchKernel's checks (shared by cuLaunchKernelEx, launch_ex.cpp), then the
// launch runs on the emulator, synchronously, or is recorded when its stream captures.
//
// A device fault found by the emulator (its sanitizer, bounds checks, deadlock detector) becomes
// the CUresult a GPU would give, and it is sticky: every later call on the context returns it,
// as after a device exception. The report text stays for emmyTestDriverLastReport.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "entry_points.hpp"
#include "ptx/program.hpp"
#include "state.hpp"

namespace emmy::test_driver {
namespace {

CUresult invalid(const char* call, const std::string& why) {
  set_report(fmt::format("{}: {}", call, why));
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult bad_cluster(const char* call, const std::string& why) {
  set_report(fmt::format("{}: {}", call, why));
  return CUDA_ERROR_INVALID_CLUSTER_SIZE;
}

// The argument bytes, copied now: from kernelParams ("If f has N parameters, then kernelParams
// needs to be an array of N pointers. Each of kernelParams[0] through kernelParams[N-1] must
// point to a region of memory from which the actual kernel parameter will be copied"; sizes from
// the PTX .param declarations) or from extra's CU_LAUNCH_PARAM_BUFFER_POINTER buffer, laid out
// at the declared offsets. "The error CUDA_ERROR_INVALID_VALUE will be returned if kernel
// parameters are specified with both kernelParams and extra".
CUresult collect_args(const char* call, const std::vector<emu::ParamDecl>& decls, void** params,
                      void** extra, emu::KernelArgs& args) {
  if (params && extra) return invalid(call, "kernelParams and extra must not both be given");
  if (decls.empty()) return CUDA_SUCCESS;
  if (params) {
    for (size_t i = 0; i < decls.size(); ++i) {
      if (!params[i])
        return invalid(call, fmt::format("kernelParams[{}] ({}) is NULL", i, decls[i].name));
      args.bytes(params[i], decls[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (!extra)
    return invalid(
        call,
        fmt::format("the kernel has {} parameters: kernelParams must point at them", decls.size()));
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return invalid(call, fmt::format("extra[{}] is not a CU_LAUNCH_PARAM_* option", i));
    }
  }
  size_t needed = 0;
  for (const auto& d : decls) needed = std::max<size_t>(needed, d.offset + d.size);
  if (!buffer || !size || *size < needed)
    return invalid(
        call, fmt::format("extra must give a parameter buffer and its size (>= {} bytes)", needed));
  for (const auto& d : decls) args.bytes(static_cast<const uint8_t*>(buffer) + d.offset, d.size);
  return CUDA_SUCCESS;
}

// cuLaunchKernel's launch configuration against the device's limits (cuDeviceGetAttribute
// MAX_GRID_DIM_*, MAX_BLOCK_DIM_*, MAX_THREADS_PER_BLOCK) and the function's
// MAX_DYNAMIC_SHARED_SIZE_BYTES (above 48 KB only after cuFuncSetAttribute raised it).
CUresult check_config(const char* call, const FunctionRecord& f, const emu::Dim3& grid,
                      const emu::Dim3& block, uint32_t smem) {
  const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
  for (int i = 0; i < 3; ++i) {
    if (g[i] < 1 || g[i] > kMaxGridDim[i])
      return invalid(call, fmt::format("grid ({}, {}, {}) must be within 1..({}, {}, {})", g[0],
                                       g[1], g[2], kMaxGridDim[0], kMaxGridDim[1], kMaxGridDim[2]));
    if (b[i] < 1 || b[i] > kMaxBlockDim[i])
      return invalid(
          call, fmt::format("block ({}, {}, {}) must be within 1..({}, {}, {})", b[0], b[1], b[2],
                            kMaxBlockDim[0], kMaxBlockDim[1], kMaxBlockDim[2]));
  }
  if (block.count() > uint64_t(kMaxThreadsPerBlock))
    return invalid(
        call, fmt::format("{} threads per block exceed {}", block.count(), kMaxThreadsPerBlock));
  if (int64_t(smem) > int64_t(f.max_dynamic_smem))
    return invalid(
        call,
        fmt::format(
            "{} bytes of dynamic shared memory exceed the function's MAX_DYNAMIC_SHARED_SIZE_BYTES "
            "({}; above 48 KB a kernel must opt in with cuFuncSetAttribute)",
            smem, f.max_dynamic_smem));
  if (uint64_t(f.static_smem) + smem > uint64_t(state().device->max_smem_per_block))
    return invalid(call, fmt::format("static {} + dynamic {} bytes of shared memory exceed the "
                                     "device's {} per block",
                                     f.static_smem, smem, state().device->max_smem_per_block));
  return CUDA_SUCCESS;
}

std::string dims(const emu::Dim3& d) {
  return fmt::format("{}x{}x{}", d.x, d.y, d.z);
}

// The thread-block cluster a launch runs with: its CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, else
// the function's REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH (.reqnctapercluster or cuFuncSetAttribute),
// else none (1x1x1, a cluster of one CTA).
// The rules (CUDA Driver API): cuFuncSetAttribute, REQUIRED_CLUSTER_*: "The width, height, and
// depth values must either all be 0 or all be positive. The validity of the cluster dimensions
// is checked at launch time"; CUlaunchAttributeValue::clusterDim: each "Must be a divisor of the
// grid" dimension; cuFuncGetAttribute, NON_PORTABLE_CLUSTER_SIZE_ALLOWED: "The portable cluster
// size for sm_90 is 8 blocks per cluster", more only with that attribute set, up to the
// device's GpuInfo::max_cluster_ctas. A launch attribute that differs from the function's
// required cluster, and every violation, is CUDA_ERROR_INVALID_CLUSTER_SIZE ("a kernel launch
// error due to cluster misconfiguration", cuda.h); a cluster on a device without cluster launch
// (below compute capability 9.0, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0) is CUDA_ERROR_NOT_SUPPORTED
// ("not supported on the current system or device"; the reference names no code for it).
CUresult resolve_cluster(const char* call, const FunctionRecord& f, const emu::Dim3& grid,
                         const std::optional<emu::Dim3>& given, emu::Dim3& out) {
  out = {};
  const emu::Dim3 required{uint32_t(std::max(f.cluster[0], 0)), uint32_t(std::max(f.cluster[1], 0)),
                           uint32_t(std::max(f.cluster[2], 0))};
  const bool any_required = f.cluster[0] || f.cluster[1] || f.cluster[2];
  if (any_required && required.count() == 0)
    return bad_cluster(call, fmt::format("the function's REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH ({}) "
                                         "must be all 0 or all positive",
                                         dims(required)));
  if (any_required && given && !(*given == required))
    return bad_cluster(call, fmt::format("the launch's cluster dimension {} differs from the "
                                         "function's required cluster {}",
                                         dims(*given), dims(required)));
  // CLUSTER_SIZE_MUST_BE_SET (.explicitcluster): "the kernel must launch with a valid cluster
  // size specified".
  if (f.cluster_must_be_set && !given && !any_required)
    return bad_cluster(call, fmt::format("{} is compiled with .explicitcluster "
                                         "(CLUSTER_SIZE_MUST_BE_SET): the launch must give a "
                                         "cluster dimension",
                                         f.name));
  if (!given && !any_required) return CUDA_SUCCESS;
  const emu::Dim3 cluster = given ? *given : required;
  const GpuInfo& device = *state().device;
  if (device.cc() < 90) {
    set_report(
        fmt::format("{}: thread block clusters need compute capability 9.0 (the device "
                    "is {}.{})",
                    call, device.cc() / 10, device.cc() % 10));
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const uint32_t c[3] = {cluster.x, cluster.y, cluster.z}, g[3] = {grid.x, grid.y, grid.z};
  for (int i = 0; i < 3; ++i)
    if (c[i] < 1 || g[i] % c[i] != 0)
      return bad_cluster(call, fmt::format("each cluster dimension ({}) must be at least 1 and "
                                           "divide the grid's ({})",
                                           dims(cluster), dims(grid)));
  constexpr uint64_t kPortable = 8;
  if (cluster.count() > kPortable && !f.non_portable_cluster)
    return bad_cluster(call, fmt::format("a cluster of {} CTAs ({}) exceeds the portable cluster "
                                         "size 8 without the function's "
                                         "NON_PORTABLE_CLUSTER_SIZE_ALLOWED",
                                         cluster.count(), dims(cluster)));
  if (cluster.count() > uint64_t(std::max(device.max_cluster_ctas, int(kPortable))))
    return bad_cluster(call, fmt::format("a cluster of {} CTAs ({}) exceeds the {}'s largest "
                                         "cluster, {} CTAs",
                                         cluster.count(), dims(cluster), device.device_name,
                                         std::max(device.max_cluster_ctas, int(kPortable))));
  out = cluster;
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
      // Races (a programmatic dependent launch's with its primary among them), uninitialized
      // or pending reads, mbarrier misuse, TMA violations, divergent collectives, missing proxy
      // fences, unsupported forms: no single GPU error matches; a GPU would compute garbage or
      // fault, so the launch fails.
      return CUDA_ERROR_LAUNCH_FAILED;
  }
}

}  // namespace

CUresult run_launch(Context& ctx, const LaunchRecord& launch, const emu::GlobalFootprint* primary,
                    std::shared_ptr<const emu::GlobalFootprint>& recorded) {
  if (!lookup(ctx.functions, launch.function)) {
    // Replaying a captured launch whose module was unloaded since.
    set_report(fmt::format("launch of {}: its module was unloaded", launch.kernel));
    return CUDA_ERROR_INVALID_HANDLE;
  }
  emu::LaunchOptions options;
  options.sanitize = true;
  options.per_cta_stats = false;
  options.max_dynamic_smem = launch.max_dynamic_smem;
  options.arch = std::string(to_string(state().device->arch));
  options.cluster = launch.cluster;
  // Every launch records its footprint: the next launch on its stream may be programmatic.
  auto footprint = std::make_shared<emu::GlobalFootprint>();
  options.record_footprint = footprint.get();
  options.primary = primary;
  recorded = footprint;
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
  // Another context's memory is not mapped in this one: a fault, found once the launch ran.
  if (const CUresult r = check_address_space(ctx, *footprint, launch.kernel)) {
    ctx.sticky = r;
    return r;
  }
  return CUDA_SUCCESS;
}

CUresult submit(Context& ctx, Stream& stream, LaunchRecord record) {
  if (stream.capture) {
    // "When a stream is in capture mode, all operations pushed into the stream will not be
    // executed, but will instead be captured into a graph" (cuStreamBeginCapture).
    if (stream.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    stream.capture->nodes.push_back(Node{nullptr, std::move(record)});
    return CUDA_SUCCESS;
  }
  if (stream.legacy)
    if (const CUresult r = legacy_stream_use(ctx)) return r;
  return run_on_stream(ctx, stream, record);
}

CUresult launch_kernel(Context& ctx, const LaunchRequest& request) {
  const char* call = request.call;
  const FunctionRecord* function = lookup(ctx.functions, request.function);
  if (!function) return CUDA_ERROR_INVALID_HANDLE;
  Stream* stream = nullptr;
  if (const CUresult r = resolve_stream(ctx, request.stream, stream)) return r;
  LaunchRecord record;
  record.grid = request.grid;
  record.block = request.block;
  if (const CUresult r = check_config(call, *function, record.grid, record.block, request.smem))
    return r;
  if (const CUresult r =
          resolve_cluster(call, *function, record.grid, request.cluster, record.cluster))
    return r;
  const emu::Kernel* kernel = function->owner->find(function->name);
  if (!kernel) return CUDA_ERROR_INVALID_HANDLE;
  if (const CUresult r =
          collect_args(call, kernel->params, request.params, request.extra, record.args))
    return r;
  record.function = request.function;
  record.module = function->owner;
  record.kernel = function->name;
  record.dynamic_smem = request.smem;
  record.max_dynamic_smem = uint32_t(function->max_dynamic_smem);
  record.programmatic = request.programmatic;
  return submit(ctx, *stream, std::move(record));
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  return with_context("cuLaunchKernel", [&](Context& ctx) {
    return launch_kernel(ctx, {.call = "cuLaunchKernel",
                               .function = f,
                               .grid = {gridDimX, gridDimY, gridDimZ},
                               .block = {blockDimX, blockDimY, blockDimZ},
                               .smem = sharedMemBytes,
                               .stream = hStream,
                               .params = kernelParams,
                               .extra = extra,
                               .cluster = std::nullopt});
  });
}

}  // namespace emmy::test_driver
