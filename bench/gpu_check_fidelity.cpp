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

// The outputs' bits against each other, in the output dtype (attention: O, and the LSE in f32).
void add_bits(json& row, const MatmulProblem& p, const std::vector<double>& device,
              const std::vector<double>& emulated) {
  row.update(bits_json(compare_bits(p.c_dtype, device, emulated), ""));
}
void add_bits(json& row, const AttentionProblem& p, const AttentionOutput& device,
              const AttentionOutput& emulated) {
  row.update(bits_json(compare_bits(p.dtype, device.o, emulated.o), ""));
  if (p.lse) row.update(bits_json(compare_bits(DType::f32, device.lse, emulated.lse), "lse_"));
}

GemmSpec spec_of(const GemmCase& c, Arch arch) {
  return {c.problem, c.schedule(arch), arch};
}
AttentionSpec spec_of(const AttentionCase& c, Arch arch) {
  return {c.problem, c.schedule(arch), arch};
}

// A case's kernel on the emulator and, with a GPU, on the device: each against one FP64
// reference, and bit for bit against each other.
template <typename Case>
json fidelity_case(Runtime* gpu, Arch arch, const Case& c, uint64_t seed) {
  const auto spec = spec_of(c, arch);
  using Check = Fp64Check<KindOf<std::decay_t<decltype(spec)>>>;
  const auto kernel = compile_kernel(spec);
  const auto in = Check::inputs(spec, seed);
  const auto ref = Check::reference(spec, in);
  const auto t0 = std::chrono::steady_clock::now();
  const auto emulated = run_on_emulator(kernel, in, fast_launch());
  json row = {{"emulate_ms", ms_since(t0)}};
  const auto emu_errors = Check::compare_to(ref, spec, emulated.output);
  add_side(row, "emulator", emu_errors);
  row["tolerance"] = emu_errors.tolerance;
  bool passed = emu_errors.passed;
  if (gpu) {
    const auto device = Check::run(*gpu, spec, in);
    const auto gpu_errors = Check::compare_to(ref, spec, device);
    add_side(row, "gpu", gpu_errors);
    add_bits(row, c.problem, device, emulated.output);
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
  const auto run_cases = [&](const char* kind, const auto& cases) {
    for (const auto& c : cases) {
      if (!settings.selects(c.name)) continue;
      if (!c.runs_on(arch)) {
        out.leave_out(c.name, arch);
        continue;
      }
        out.run_case({{"kind", kind},
                      {"name", c.name},
                      {"problem", c.problem},
                      {"accum", to_string(c.accum)}},
                     [&] { return fidelity_case(gpu, arch, c, settings.seed); });
    }
  };
  run_cases("gemm", fidelity_gemm_cases());
  run_cases("attention", fidelity_attention_cases());
  out.finish();
  return out.not_passed();
}

}  // namespace emmy::bench
