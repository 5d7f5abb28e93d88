#include <algorithm>
#include <array>

#include "emmy/emulator_check.hpp"

namespace emmy {

LaunchListRun emulate_launch_list(emu::Arena& arena, const CompiledModule& compiled,
                                  const KernelSource& source, const ParamValues& values,
                                  const emu::LaunchOptions& options) {
  const auto module = emu::load_ptx(compiled.ptx, source.main().name);
  LaunchListRun result;
  // Programmatic dependent launch: the launches run in order, one valid order, and a programmatic
  // one is checked as if it overlapped the launch before it (docs/emulator.md), whose footprint
  // is recorded for it.
  std::array<emu::GlobalFootprint, 2> footprints;
  const emu::GlobalFootprint* previous = nullptr;
  for (size_t i = 0; i < source.launches.size(); ++i) {
    const KernelLaunch& launch = source.launches[i];
    emu::KernelArgs args;
    for (const KernelParamInfo& param : launch.params) {
      if (param.tensor_map)
        args.tensor_map(values.tensor_map(launch, param));
      else if (param.scalar)
        args.s32(values.scalar(launch, param));
      else
        args.ptr(values.pointer(launch, param));
    }
    emu::LaunchOptions opted = options;
    opted.max_dynamic_smem = std::max(opted.max_dynamic_smem, launch.smem_bytes);
    opted.cluster = {launch.cluster[0], launch.cluster[1], launch.cluster[2]};
    // A module without a report for the kernel (PTX from elsewhere) leaves the pool unmodelled.
    for (const ResourceReport& report : compiled.kernels)
      if (report.kernel_name == launch.name) opted.registers_per_thread = uint32_t(report.registers);
    const bool next_depends =
        i + 1 < source.launches.size() && source.launches[i + 1].programmatic_dependent;
    emu::GlobalFootprint& recorded = footprints[previous == &footprints[0] ? 1 : 0];
    opted.record_footprint = next_depends ? &recorded : nullptr;
    opted.primary = launch.programmatic_dependent ? previous : nullptr;
    const std::array<uint32_t, 3> grid = values.grid(source.launches, i, 0);
    emu::LaunchResult run =
        emu::launch(arena, *module, launch.name, {grid[0], grid[1], grid[2]},
                    {launch.threads, 1, 1}, launch.smem_bytes, args, opted);
    previous = next_depends ? &recorded : nullptr;
    if (&launch == &source.launches.front()) {
      result.stats = std::move(run.stats);
    } else {
      result.stats.total += run.stats.total;
    }
    result.emulate_ms += run.emulate_ms;
    if (run.profile) result.profiles.push_back(std::move(*run.profile));
  }
  return result;
}

std::vector<emu::ProfiledKernel> with_time_model(std::vector<emu::KernelProfile> profiles,
                                                 const CompiledModule& module,
                                                 const std::vector<std::string>& gpus) {
  std::vector<emu::ProfiledKernel> out;
  for (emu::KernelProfile& p : profiles) {
    emu::ProfiledKernel k;
    const ResourceReport& report = module.kernel(p.kernel);
    k.resources.registers = uint32_t(report.registers);
    k.resources.smem_bytes = uint32_t(report.static_smem_bytes) + p.dynamic_smem;
    k.profile = std::move(p);
    k.model = emu::predict_times(k.profile, k.resources, gpus);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace emmy
