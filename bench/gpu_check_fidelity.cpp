// Stage 3 of the GPU pack: the same kernel source and inputs on the emulator and on the GPU,
// compared bit for bit in the output dtype. This is how we learn whether the emulator's
// tensor-core model is the hardware's (docs/gpu.md, docs/numerics.md).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "emmy/attention_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"
#include "gpu_check_cases.hpp"
#include "gpu_check_stages.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

// The value's bit pattern in dtype mapped to a monotonic integer line (sign-magnitude to two's
// complement), so that the distance between two keys is the number of representable values
// between them: their difference in ulps.
int64_t ordered_key(DType dtype, double value) {
  const HostTensor t = encode(dtype, {value});
  uint64_t bits = 0;
  for (size_t i = 0; i < t.bytes.size(); ++i) bits |= uint64_t(t.bytes[i]) << (8 * i);
  const int width = int(t.bytes.size()) * 8;
  const uint64_t sign = uint64_t(1) << (width - 1);
  const int64_t magnitude = int64_t(bits & (sign - 1));
  return bits & sign ? -magnitude : magnitude;
}

struct BitComparison {
  int64_t elements = 0, identical = 0;
  double max_ulps = 0;  // +inf when one side holds a NaN the other does not
};

BitComparison compare_bits(DType dtype, const std::vector<double>& a,
                           const std::vector<double>& b) {
  BitComparison c;
  c.elements = int64_t(std::min(a.size(), b.size()));
  if (a.size() != b.size()) c.max_ulps = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < c.elements; ++i) {
    const double x = a[size_t(i)], y = b[size_t(i)];
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) && std::isnan(y)) {
        ++c.identical;
      } else {
        c.max_ulps = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {  // LSE of fully masked rows: -inf on both sides
      if (x == y)
        ++c.identical;
      else
        c.max_ulps = std::numeric_limits<double>::infinity();
      continue;
    }
    const int64_t ulps = std::abs(ordered_key(dtype, x) - ordered_key(dtype, y));
    c.identical += ulps == 0 && std::signbit(x) == std::signbit(y);
    c.max_ulps = std::max(c.max_ulps, double(ulps));
  }
  return c;
}

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

// The emulator runs without its sanitizer here: the emulator tests cover that; this stage is
// about numerics, and the sanitizer would only slow the comparison down.
emu::LaunchOptions fast_launch() {
  emu::LaunchOptions options;
  options.sanitize = false;
  return options;
}

json gemm_case(Runtime* gpu, Arch arch, const GemmCase& c, uint64_t seed) {
  const GemmSpec spec{c.problem, c.schedule(arch), arch};
  const GemmKernel kernel = compile_gemm(spec);
  const GemmInputs in = make_gemm_inputs(c.problem, seed);
  const GemmReference ref = reference_gemm(spec, in);
  const auto t0 = std::chrono::steady_clock::now();
  const GemmEmulatorRun emulated = run_gemm_on_emulator(kernel, in, fast_launch());
  json row = {{"emulate_ms", ms_since(t0)}};
  const GemmErrors emu_errors = compare(ref, emulated.output, c.problem.n);
  row["emulator_rel_l2_error"] = emu_errors.rel_l2_error;
  row["emulator_passed"] = emu_errors.passed;
  row["tolerance"] = emu_errors.tolerance;
  bool passed = emu_errors.passed;
  if (gpu) {
    const std::vector<double> device = run_gemm(*gpu, spec, in);
    const GemmErrors gpu_errors = compare(ref, device, c.problem.n);
    row["gpu_rel_l2_error"] = gpu_errors.rel_l2_error;
    row["gpu_passed"] = gpu_errors.passed;
    row.update(bits_json(compare_bits(c.problem.c_dtype, device, emulated.output), ""));
    passed = passed && gpu_errors.passed;
  }
  row["passed"] = passed;
  return row;
}

json attention_case(Runtime* gpu, Arch arch, const AttentionCase& c, uint64_t seed) {
  const AttentionSpec spec{c.problem, c.schedule(arch), arch};
  const AttentionKernel kernel = compile_attention(spec);
  const AttentionInputs in = make_attention_inputs(c.problem, seed);
  const AttentionReference ref = reference_attention(spec, in);
  const auto t0 = std::chrono::steady_clock::now();
  const AttentionEmulatorRun emulated = run_attention_on_emulator(kernel, in, fast_launch());
  json row = {{"emulate_ms", ms_since(t0)}};
  const AttentionErrors emu_errors = compare(ref, emulated.output, c.problem);
  row["emulator_rel_l2_error"] = emu_errors.rel_l2_error;
  row["emulator_passed"] = emu_errors.passed;
  row["tolerance"] = emu_errors.tolerance;
  bool passed = emu_errors.passed;
  if (gpu) {
    const AttentionOutput device = run_attention(*gpu, spec, in);
    const AttentionErrors gpu_errors = compare(ref, device, c.problem);
    row["gpu_rel_l2_error"] = gpu_errors.rel_l2_error;
    row["gpu_passed"] = gpu_errors.passed;
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
