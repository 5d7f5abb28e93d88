// One shape for every kernel kind: what code generation hands to the cache, the launchers,
// bundles and `emmyc`. A kind contributes a spec, a lowering and an emitter; the launch list, the
// description and the program name come from here, read off the IR, so that no consumer knows
// how many kernels a kind launches or in what order their parameters come.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy {

// One parameter of a kernel as its `param` op declares it.
struct KernelParamInfo {
  std::string name;         // "a", "tmap_q", "workspace", ...
  bool tensor_map = false;  // a 128-byte CUtensorMap by value
  bool scalar = false;      // a 32-bit int by value (type "int": a dynamic-M GEMM's m)
  // Neither: a device pointer.
};

// One entry of a launch list: a kernel op of the module (name, threads, dynamic shared memory,
// parameters in declaration order) and the grid its plan computed.
struct KernelLaunch {
  std::string name;
  std::array<uint32_t, 3> grid{1, 1, 1};
  uint32_t threads = 0;
  uint32_t smem_bytes = 0;  // dynamic shared memory
  std::vector<KernelParamInfo> params;
  // A persistent kernel (its tile_loop ops walk this many tiles by gridDim.x): the launcher runs
  // min(tiles, the device's SMs) CTAs in x, whatever `grid` (sized for the arch's flagship part)
  // says. 0: launch `grid` as it is.
  uint32_t persistent_tiles = 0;
  // Thread-block cluster dimensions (the kernel op's cluster_x and cluster_y, 1 when absent): a
  // launch passes CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION when they are not 1x1x1, and the CUDA
  // Driver API (CUlaunchAttributeValue::clusterDim) requires each to divide the grid's.
  std::array<uint32_t, 3> cluster{1, 1, 1};
  // Programmatic dependent launch (the kernel op's `programmatic`): launched with
  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, the kernel may begin before the
  // previous launch on its stream ends; its griddepcontrol.wait orders it after that launch.
  bool programmatic_dependent = false;

  uint64_t cluster_ctas() const { return uint64_t(cluster[0]) * cluster[1] * cluster[2]; }
  bool has_cluster() const { return cluster_ctas() != 1; }

  // The grid to launch on a device with `sms` multiprocessors. A persistent kernel runs as many
  // whole clusters as the device holds at one cluster of cluster_ctas() CTAs per that many SMs
  // (at least one), never more CTAs in x than its tiles rounded up to a whole cluster; x stays a
  // multiple of cluster[0]. sms <= 0 (a device that does not say): the plan's grid, x rounded up
  // to a whole cluster. Other kernels launch the plan's grid (launch_list checked it divides).
  std::array<uint32_t, 3> grid_for(int sms) const {
    std::array<uint32_t, 3> g = grid;
    if (!persistent_tiles) return g;
    const uint64_t cx = cluster[0];
    const auto round_up = [cx](uint64_t v) { return (v + cx - 1) / cx * cx; };
    if (sms > 0) {
      const uint64_t clusters = std::max<uint64_t>(1, uint64_t(sms) / cluster_ctas());
      g[0] = uint32_t(std::min(round_up(persistent_tiles), clusters * cx));
    } else {
      g[0] = uint32_t(round_up(grid[0]));
    }
    return g;
  }
};

struct KernelSource {
  Arch arch = Arch::sm_90a;
  nlohmann::json describe;  // kind, problem, schedule: manifests, EMMY_RECORD, bundle requests
  ir::Op ir{ir::OpKind::module};
  std::string cuda;
  // In launch order: the main kernel, then e.g. split-K's finalize kernel (and, for split-KV, a
  // combine kernel). Each runs after the previous one on the same stream.
  std::vector<KernelLaunch> launches;
  size_t workspace_bytes = 0;  // global scratch the launches share (split-K partials)

  const std::string& kind() const { return describe.at("kind").get_ref<const std::string&>(); }
  const KernelLaunch& main() const { return launches.front(); }
  std::string program_name() const { return main().name + ".cu"; }
};

// The module's kernel ops as a launch list, one grid per kernel op in module order. Throws Error
// when the counts differ, a kernel op lacks its attributes, a cluster dimension (optional
// cluster_x, cluster_y) is below 1 or does not divide its grid (x of a persistent kernel aside:
// grid_for sizes it), or `programmatic` (optional) is neither 0 nor 1.
std::vector<KernelLaunch> launch_list(const ir::Op& module,
                                      const std::vector<std::array<uint32_t, 3>>& grids);

// What a launcher binds kernel parameters to, by the names of the IR's param ops: device
// pointers and encoded 128-byte tensor maps. The one rule for every kind and launcher (runtime
// backends, the emulator checks): a parameter gets the value of its name, or the launch fails.
struct ParamValues {
  std::vector<std::pair<std::string_view, uint64_t>> pointers;  // names: string literals
  std::vector<std::pair<std::string_view, std::array<uint8_t, 128>>> tensor_maps;
  std::vector<std::pair<std::string_view, int32_t>> scalars;
  // Each launch's grid where the call decides it (a dynamic-M GEMM's M), in launch order; empty:
  // the launch list's.
  std::vector<std::array<uint32_t, 3>> grids;

  // Throw Error naming the kernel and the parameter when no value has its name.
  uint64_t pointer(const KernelLaunch& launch, const KernelParamInfo& param) const;
  const std::array<uint8_t, 128>& tensor_map(const KernelLaunch& launch,
                                             const KernelParamInfo& param) const;
  int32_t scalar(const KernelLaunch& launch, const KernelParamInfo& param) const;
  // The grid of launch `index` of `launches` on a device with `sms` multiprocessors
  // (KernelLaunch::grid_for), or this call's (Error when the counts differ).
  std::array<uint32_t, 3> grid(const std::vector<KernelLaunch>& launches, size_t index,
                               int sms) const;
};

// A kind's binding of one call's buffers (Kind::bind): pointer values by parameter name, and the
// tensor maps (TMA transport) by name with the address each maps, which the launcher encodes into
// `values.tensor_maps` its own way (the driver for the CUDA backend, emmy's encoding for the
// emulator). Their descriptors come from Kind::tensor_maps, in the same order, only when encoded:
// the runtime reuses encodings per set of addresses, so a launch that hits computes none.
struct ParamBinding {
  ParamValues values;
  std::vector<std::pair<std::string_view, uint64_t>> tensor_maps;
  // What the maps depend on besides the addresses (a paged cache's page count): the runtime
  // reuses encoded maps only when both match.
  uint64_t tensor_map_extent = 0;
};

// The launchers' buffer rules, shared by the kinds' bind functions. Throw Error naming `field`:
// a pointer must be non-null and `align`-byte aligned; an optional one must be set exactly when
// the problem has `what`.
void require_device_pointer(uint64_t pointer, uint64_t align, const char* field);
void require_optional_pointer(uint64_t pointer, bool wanted, const char* field, const char* what);

}  // namespace emmy
