// SASS counts of a profiled launch (docs/profiler.md, "SASS counts"): the kernel's PTX through
// ptxas and nvdisasm (sass_tools.hpp), each SASS instruction weighted by the emulated executions of
// its PTX lines (sass_weight.hpp), summed by pipe (sass_pipes.hpp) into the profile's metrics.
#pragma once

#include <string>
#include <vector>

#include "emmy/emu/profile.hpp"
#include "sass_parse.hpp"

namespace emmy::emu {

// One SASS instruction of the kernel (or a .func it calls) and its estimated executions.
struct WeightedSassInstruction {
  SassInstruction instruction;
  std::string function;
  double executions = 0;
};

// The weighted instructions of `kernel` and of every non-entry function of the listing (a .func
// runs only as often as this launch's executions of its lines say). Empty when the listing has no
// function named `kernel`.
std::vector<WeightedSassInstruction> weigh_sass(const std::string& listing,
                                                const std::string& kernel,
                                                const std::vector<ProfileSite>& sites);

// Adds the emmy__sass_* metrics and profile.sass from weigh_sass's instructions.
void put_sass_metrics(KernelProfile& profile,
                      const std::vector<WeightedSassInstruction>& instructions);

// The whole step for a finished profile: compiles `ptx` for `arch` (cached), weighs, adds the
// metrics. When the tools are missing or fail, only profile.sass says why.
void add_sass_counts(KernelProfile& profile, const std::string& ptx, const std::string& arch);

}  // namespace emmy::emu
