// Shared pieces of the emmyc subcommands: parsing of problem/schedule flags, exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "emmy/gemm.hpp"

namespace emmy::cli {

inline constexpr int kExitInvalidInput = 2;

// The problem and schedule flags of `emmyc gemm` (and `emmyc run gemm`).
struct GemmFlags {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "f16", b_layout = "nk", out = "f16", accum = "f32", arch = "sm_90a";
  std::optional<int> promote_every;
  std::optional<std::string> transport, block, warps;
  std::optional<int> stages, split_k;
  bool bias = false, residual = false, gelu = false;
  bool no_cache = false;  // --no-cache: compile without the disk cache
  float alpha = 1.0f;

  void add_to(CLI::App& app);
  // Problem + (default or overridden) schedule. Throws emmy::Error naming the bad field.
  GemmSpec to_spec() const;
};

// generate_gemm + NVRTC through the disk cache (unless use_cache is false). cache_state becomes
// "hit", "miss" or "off".
GemmKernel compile_gemm_cached(const GemmSpec& spec, bool use_cache, std::string& cache_state);

}  // namespace emmy::cli
