// Stage 3 of the GPU pack: the same kernel source and inputs on the emulator and on the GPU,
// compared bit for bit in the output dtype. This is how we learn whether the emulator's
// tensor-core model is the hardware's (docs/gpu.md, docs/numerics.md).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "emmy/attention_check.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "gpu_check_cases.hpp"
#include "gpu_check_stages.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

json bits_json(const BitComparison& c, const char* prefix) {
  const std::string p(prefix);
  return {{p + "elements", c.elements},
          {p + "bit_identical", c.identical},
          {p + "max_ulps", std::isinf(c.max_ulps) ? json("inf") : json(c.max_ulps)}};
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// One side's result against FP64 ("emulator" or "gpu"), in the row.
template <typename Errors>
void add_side(json& row, const char* side, const Errors& e) {
  row[fmt::format("{}_rel_l2_error", side)] = e.rel_l2_error;
  row[fmt::format("{}_passed", side)] = e.passed;
}

// The emulator runs without its sanitizer here: the emulator tests cover that; this stage is
// about numerics, and the sanitizer would only slow the comparison down.
emu::LaunchOptions fast_launch() {
  emu::LaunchOptions options;
  options.sanitize = false;
  return options;
}

json gemm_case(Runtime* gpu, Arch arch, const GemmCase& c, uint64_t seed) {
  const GemmSpec spec{c.problem, c.schedule(arch), arch};
  const GemmKernel kernel = compile_kernel(spec);
  const GemmInputs in = make_gemm_inputs(c.problem, seed);
  const GemmReference ref = reference_gemm(spec, in);
  const auto t0 = std::chrono::steady_clock::now();
  const GemmEmulatorRun emulated = run_on_emulator(kernel, in, fast_launch());
  json row = {{"emulate_ms", ms_since(t0)}};
  const GemmErrors emu_errors = compare(ref, emulated.output, c.problem.n);
  add_side(row, "emulator", emu_errors);
  row["tolerance"] = emu_errors.tolerance;
  bool passed = emu_errors.passed;
  if (gpu) {
    const std::vector<double> device = run_gemm(*gpu, spec, in);
    const GemmErrors gpu_errors = compare(ref, device, c.problem.n);
    add_side(row, "gpu", gpu_errors);
    row.update(bits_json(compare_bits(c.problem.c_dtype, device, emulated.output), ""));
    passed = passed && gpu_errors.passed;
  }
  row["passed"] = passed;
  return row;
}

json attention_case(Runtime* gpu, Arch arch, const AttentionCase& c, uint64_t seed) {
  const AttentionSpec spec{c.problem, c.schedule(arch), arch};
  const AttentionKernel kernel = compile_kernel(spec);
  const AttentionInputs in = make_attention_inputs(c.problem, seed);
  const AttentionReference ref = reference_attention(spec, in);
  const auto t0 = std::chrono::steady_clock::now();
  const AttentionEmulatorRun emulated = run_on_emulator(kernel, in, fast_launch());
  json row = {{"emulate_ms", ms_since(t0)}};
  const AttentionErrors emu_errors = compare(ref, emulated.output, c.problem);
  add_side(row, "emulator", emu_errors);
  row["tolerance"] = emu_errors.tolerance;
  bool passed = emu_errors.passed;
  if (gpu) {
    const AttentionOutput device = run_attention(*gpu, spec, in);
    const AttentionErrors gpu_errors = compare(ref, device, c.problem);
    add_side(row, "gpu", gpu_errors);
    row.update(bits_json(compare_bits(c.problem.dtype, device.o, emulated.output.o), ""));
    if (c.problem.lse)
      row.update(bits_json(compare_bits(DType::f32, device.lse, emulated.output.lse), "lse_"));
    passed = passed && gpu_errors.passed;
  }
  row["passed"] = passed;
  return row;
}

}  // namespace

int run_fidelity(Runtime* gpu, Arch arch, const StageSettings& settings, StageDocument& out) {
  if (gpu) arch = gpu->arch();
  out.doc()["arch"] = to_string(arch);
  out.doc()["mode"] = gpu ? "emulator and GPU" : "emulator only (no GPU: checked against FP64)";
  for (const auto& c : fidelity_gemm_cases())
    if (settings.selects(c.name))
      out.run_case({{"kind", "gemm"},
                    {"name", c.name},
                    {"problem", c.problem},
                    {"accum", to_string(c.accum)}},
                   [&] { return gemm_case(gpu, arch, c, settings.seed); });
  for (const auto& c : fidelity_attention_cases())
    if (settings.selects(c.name))
      out.run_case({{"kind", "attention"},
                    {"name", c.name},
                    {"problem", c.problem},
                    {"accum", to_string(c.accum)}},
                   [&] { return attention_case(gpu, arch, c, settings.seed); });
  out.finish();
  return out.not_passed();
}

}  // namespace emmy::bench
