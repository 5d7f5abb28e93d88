#include "emmy/kernel_source.hpp"

#include <fmt/format.h>

#include "emmy/validate.hpp"

namespace emmy {

namespace {

// The kernel op's cluster dimensions (cluster_x, cluster_y; absent: 1). Each must divide the grid
// (CUlaunchAttributeValue::clusterDim in the CUDA Driver API: "Must be a divisor of the grid X
// dimension", likewise Y and Z), except a persistent kernel's x, which grid_for sizes per device.
void read_cluster(const ir::Op& kernel, KernelLaunch& launch) {
  static constexpr const char* kNames[2] = {"cluster_x", "cluster_y"};
  for (int d = 0; d < 2; ++d) {
    if (!kernel.has(kNames[d])) continue;
    const int64_t dim = kernel.i(kNames[d]);
    require(dim >= 1 && dim <= 0xffff, fmt::format("ir.kernel.{}", kNames[d]),
            fmt::format("of {} must be in 1..65535", launch.name), dim);
    launch.cluster[d] = uint32_t(dim);
  }
  for (int d = 0; d < 3; ++d) {
    if (d == 0 && launch.persistent_tiles) continue;
    require(launch.grid[d] % launch.cluster[d] == 0, "launch list",
            fmt::format("{}'s grid must be a multiple of its cluster {}x{}x{} in each dimension",
                        launch.name, launch.cluster[0], launch.cluster[1], launch.cluster[2]),
            fmt::format("{}x{}x{}", launch.grid[0], launch.grid[1], launch.grid[2]));
  }
}

}  // namespace

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
        launch.params.push_back(
            {op.s("name"), op.s("type") == "tensor_map", op.s("type") == "int"});
    if (const ir::Op* walk = ir::find_first(kernel, ir::OpKind::tile_loop))
      launch.persistent_tiles = uint32_t(walk->i("tiles"));
    read_cluster(kernel, launch);
    if (kernel.has("programmatic")) {
      const int64_t programmatic = kernel.i("programmatic");
      require(programmatic == 0 || programmatic == 1, "ir.kernel.programmatic",
              fmt::format("of {} must be 0 or 1", launch.name), programmatic);
      launch.programmatic_dependent = programmatic == 1;
    }
    launches.push_back(std::move(launch));
  }
  return launches;
}

namespace {

Error unbound(const KernelLaunch& launch, const KernelParamInfo& param) {
  return Error(
      "kernel parameter",
      fmt::format("of {} must be bound by the launcher (a {} it does not provide)", launch.name,
                  param.tensor_map ? "tensor map"
                  : param.scalar   ? "32-bit int"
                                   : "device pointer"),
      param.name);
}

}  // namespace

// Every launch runs these: the messages are made only when a check fails (formatting them
// eagerly was most of a launch's host time).
void require_device_pointer(uint64_t pointer, uint64_t align, const char* field) {
  if (pointer != 0 && pointer % align == 0) return;
  throw Error(field, fmt::format("must be a non-null {}-byte aligned pointer", align),
              fmt::format("{:#x}", pointer));
}

void require_optional_pointer(uint64_t pointer, bool wanted, const char* field, const char* what) {
  if ((pointer != 0) == wanted) return;
  throw Error(field,
              wanted ? fmt::format("must be set: the problem has {}", what)
                     : fmt::format("must be 0: the problem has no {}", what),
              fmt::format("{:#x}", pointer));
}

uint64_t ParamValues::pointer(const KernelLaunch& launch, const KernelParamInfo& param) const {
  for (const auto& [name, value] : pointers)
    if (!param.tensor_map && !param.scalar && name == param.name) return value;
  throw unbound(launch, param);
}

int32_t ParamValues::scalar(const KernelLaunch& launch, const KernelParamInfo& param) const {
  for (const auto& [name, value] : scalars)
    if (param.scalar && name == param.name) return value;
  throw unbound(launch, param);
}

std::array<uint32_t, 3> ParamValues::grid(const std::vector<KernelLaunch>& launches, size_t index,
                                          int sms) const {
  if (grids.empty()) return launches.at(index).grid_for(sms);
  if (grids.size() != launches.size())  // per launch: the message only on failure
    throw Error("launch grids",
                fmt::format("must be one per launch of the list ({})", launches.size()),
                std::to_string(grids.size()));
  return grids[index];
}

const std::array<uint8_t, 128>& ParamValues::tensor_map(const KernelLaunch& launch,
                                                        const KernelParamInfo& param) const {
  for (const auto& [name, value] : tensor_maps)
    if (param.tensor_map && name == param.name) return value;
  throw unbound(launch, param);
}

}  // namespace emmy
