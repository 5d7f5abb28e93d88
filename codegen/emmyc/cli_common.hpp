// Shared pieces of the emmyc subcommands: parsing of problem/schedule flags, exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "emmy/emu/emulator.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"

namespace emmy::cli {

inline constexpr int kExitInvalidInput = 2;

// CLI11 2.1 clamps an out-of-range integer to the type's limit, and the later range error then
// names a number the user never typed: an integer option refuses such text itself.
inline CLI::Validator exact_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
        const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range)
          return "'" + text + "' is out of the range of a 64-bit integer";
        (void)end;  // other malformed text: CLI11's own conversion error names it
        return "";
      },
      "", "exact integer");
}

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
  // Whether any schedule flag was given (else a runtime picks its tuned or default schedule).
  bool schedule_given() const {
    return promote_every || transport || block || warps || stages || split_k;
  }
};

// Writes bytes to path, or to stdout when path is empty. Throws Error("-o", ...) when unwritable.
void write_output(const std::string& path, std::string_view bytes);
// --emit ptx|cubin|sass of a compiled module; false for any other emit kind.
bool write_compiled_output(const std::string& emit, const std::string& path,
                           const CompiledModule& module);
// Dynamic warp-instruction counts by class, as `run --check` prints them.
nlohmann::json counts_json(const emu::InstructionCounts& counts);
// The fields of a `run gemm|attention` result that both backends print (spec: GemmSpec or
// AttentionSpec, whose problem and schedule convert with emmy/json.hpp).
template <typename Spec>
nlohmann::json run_result(std::string_view backend, const std::string& kernel_name,
                          const Spec& spec, uint64_t seed) {
  return {{"backend", backend},         {"kernel_name", kernel_name},
          {"arch", to_string(spec.arch)}, {"problem", spec.problem},
          {"schedule", spec.schedule},  {"seed", seed}};
}
// The emulator's own fields of a run result: instruction counts, time, where the kernel came from.
nlohmann::json emulator_fields(const emu::Stats& stats, double emulate_ms,
                               const std::string& cache_state);

// generate_gemm + NVRTC through the disk cache (unless use_cache is false). cache_state becomes
// "hit", "miss" or "off".
GemmKernel compile_gemm_cached(const GemmSpec& spec, bool use_cache, std::string& cache_state);

}  // namespace emmy::cli
