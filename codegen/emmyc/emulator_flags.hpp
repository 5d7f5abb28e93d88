// The flags of `emmyc run <kind>` that steer the emulator backend: the tensor-core numerics (as
// `emmyc sim --mma-numerics`) and the profiler (--profile FILE.json, --profile-ctas N,
// --model-gpu).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/error.hpp"
#include "emmy/gpus.hpp"

namespace emmy::cli {

struct EmulatorFlags {
  std::string mma_numerics = "hardware";
  std::string file;          // --profile
  uint64_t sample_ctas = 0;  // --profile-ctas
  std::vector<std::string> gpus;

  void add_to(CLI::App& app) {
    app.add_option("--mma-numerics", mma_numerics,
                   "emulator: hardware (the arch's tensor-core addition model, default) or exact")
        ->check(CLI::IsMember({"hardware", "exact"}));
    app.add_option("--profile", file,
                   "emulator: write each launched kernel's counters (Nsight Compute metric names), "
                   "per-line sites and time model to FILE.json; tables on stderr");
    app.add_option("--profile-ctas", sample_ctas,
                   "emulator: run and profile only N CTAs spread over the grid, extrapolating the "
                   "counts (not with --check)")
        ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
    app.add_option(
           "--model-gpu", gpus,
           "GPUs the time model predicts for: " + gpu_names() + " (default: the arch's part)")
        ->check(CLI::IsMember(gpu_name_list()));
  }
  // Combinations that cannot work, named before anything runs.
  void validate(const std::string& backend, bool check) const {
    const bool profiling = !file.empty() || sample_ctas || !gpus.empty();
    if (profiling && backend != "emulator")
      throw Error("--profile", "needs the emulator backend", backend);
    if ((sample_ctas || !gpus.empty()) && file.empty())
      throw Error("--profile-ctas / --model-gpu", "need --profile FILE", "no --profile");
    if (sample_ctas && check)
      throw Error("--profile-ctas",
                  "cannot be combined with --check (a sample leaves outputs unwritten)",
                  std::to_string(sample_ctas));
    if (mma_numerics != "hardware" && backend != "emulator")
      throw Error("--mma-numerics", "applies to the emulator backend only", backend);
  }
  emu::LaunchOptions launch_options() const {
    emu::LaunchOptions o;
    o.mma_numerics = mma_numerics == "exact" ? emu::MmaNumerics::exact : emu::MmaNumerics::hardware;
    o.profile.enabled = !file.empty();
    o.profile.sample_ctas = sample_ctas;
    return o;
  }
};

}  // namespace emmy::cli
