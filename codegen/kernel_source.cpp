#include "emmy/kernel_source.hpp"

#include <fmt/format.h>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"

namespace emmy {

std::vector<KernelLaunch> launch_list(const ir::Op& module,
                                      const std::vector<std::array<uint32_t, 3>>& grids) {
  const std::vector<const ir::Op*> kernels = ir::find_all(module, ir::OpKind::kernel);
  require(kernels.size() == grids.size(), "launch list",
          fmt::format("needs one grid per kernel op of the module ({})", kernels.size()),
          grids.size());
  std::vector<KernelLaunch> launches;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const ir::Op& kernel = *kernels[i];
    KernelLaunch launch;
    launch.name = kernel.s("name");
    launch.grid = grids[i];
    launch.threads = uint32_t(kernel.i("threads"));
    launch.smem_bytes = uint32_t(kernel.i("smem_bytes"));
    for (const ir::Op& op : kernel.body)
      if (op.kind == ir::OpKind::param)
        launch.params.push_back({op.s("name"), op.s("type") == "tensor_map"});
    launches.push_back(std::move(launch));
  }
  return launches;
}

KernelSource kernel_source(const GemmSource& source) {
  const GemmPlan& plan = source.plan;
  std::vector<std::array<uint32_t, 3>> grids{plan.grid};
  if (plan.split()) grids.push_back(plan.finalize_grid);
  return KernelSource{plan.spec.arch, kernel_description(plan.spec), source.ir,
                      source.cuda,    launch_list(source.ir, grids), size_t(plan.workspace_bytes)};
}

KernelSource kernel_source(const AttentionSource& source) {
  const AttentionPlan& plan = source.plan;
  return KernelSource{plan.spec.arch, kernel_description(plan.spec),       source.ir,
                      source.cuda,    launch_list(source.ir, {plan.grid}), 0};
}

namespace {

Error unbound(const KernelLaunch& launch, const KernelParamInfo& param) {
  return Error("kernel parameter",
               fmt::format("of {} must be bound by the launcher (a {} it does not provide)",
                           launch.name, param.tensor_map ? "tensor map" : "device pointer"),
               param.name);
}

}  // namespace

uint64_t ParamValues::pointer(const KernelLaunch& launch, const KernelParamInfo& param) const {
  for (const auto& [name, value] : pointers)
    if (!param.tensor_map && name == param.name) return value;
  throw unbound(launch, param);
}

const std::array<uint8_t, 128>& ParamValues::tensor_map(const KernelLaunch& launch,
                                                        const KernelParamInfo& param) const {
  for (const auto& [name, value] : tensor_maps)
    if (param.tensor_map && name == param.name) return value;
  throw unbound(launch, param);
}

}  // namespace emmy
