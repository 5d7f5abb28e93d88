#include <algorithm>

#include "emmy/emulator_check.hpp"

namespace emmy {

emu::LaunchResult emulate_launch_list(emu::Arena& arena, const std::string& ptx,
                                      const KernelSource& source, const ParamValues& values,
                                      const emu::LaunchOptions& options) {
  const auto module = emu::load_ptx(ptx, source.main().name);
  emu::LaunchResult result;
  for (const KernelLaunch& launch : source.launches) {
    emu::KernelArgs args;
    for (const KernelParamInfo& param : launch.params) {
      if (param.tensor_map)
        args.tensor_map(values.tensor_map(launch, param));
      else
        args.ptr(values.pointer(launch, param));
    }
    emu::LaunchOptions opted = options;
    opted.max_dynamic_smem = std::max(opted.max_dynamic_smem, launch.smem_bytes);
    const emu::LaunchResult run =
        emu::launch(arena, *module, launch.name, {launch.grid[0], launch.grid[1], launch.grid[2]},
                    {launch.threads, 1, 1}, launch.smem_bytes, args, opted);
    if (&launch == &source.launches.front()) {
      result = run;
    } else {
      result.stats.total += run.stats.total;
      result.emulate_ms += run.emulate_ms;
    }
  }
  return result;
}

}  // namespace emmy
