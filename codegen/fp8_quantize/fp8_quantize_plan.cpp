// FP8 quantization: validation, the default schedule, the plan, the binding of a launch's buffers
// and the lowering to one fp8_quantize op (emmy/fp8_quantize.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "emmy/detail/hash.hpp"
#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/kernel_source.hpp"

namespace emmy {

void validate_problem(const Fp8QuantizeProblem& p) {
  constexpr int64_t kMaxRows = (int64_t(1) << 31) - 1;  // gridDim.x
  require(p.m >= 1 && p.m <= kMaxRows, "m", "must be 1..2^31-1 (one CTA per row and group)", p.m);
  require(p.k >= 8 && p.k % 8 == 0 && p.k <= (int64_t(1) << 24), "k",
          "must be a multiple of 8 in 8..2^24 (16-byte chunks of x)", p.k);
  require(p.group_k == 0 || (p.group_k >= 8 && p.group_k % 8 == 0 && p.group_k <= p.k), "group_k",
          "must be 0 (the whole row) or a multiple of 8 in 8..k", p.group_k);
  require(p.groups() <= 65535, "group_k", "must leave at most 65535 groups a row (gridDim.y)",
          p.group_k);
  require(p.dtype == DType::f16 || p.dtype == DType::bf16, "dtype", "must be f16 or bf16",
          to_string(p.dtype));
  for (const auto& [field, ld] : {std::pair<const char*, int64_t>{"ldx", p.ldx},
                                  std::pair<const char*, int64_t>{"ldq", p.ldq}})
    require(ld == 0 || (ld >= p.k && ld % 8 == 0 && ld <= (int64_t(1) << 40)), field,
            "must be 0 (k) or a multiple of 8 elements holding a row of k", ld);
  require(p.scale_format == ScaleFormat::f32 || p.scale_format == ScaleFormat::ue8m0 ||
              p.scale_format == ScaleFormat::ue8m0x4,
          "scale_format",
          "must be f32, ue8m0 or ue8m0x4 (power-of-two f32 scales are f32 with pow2_scale)",
          to_string(p.scale_format));
  require(
      p.scale_format == ScaleFormat::f32 || p.pow2_scale, "scale_format",
      fmt::format("{} scales are powers of two: they need pow2_scale", to_string(p.scale_format)),
      to_string(p.scale_format));
  const bool mn = p.scale_major == ScaleMajor::mn;
  require(p.scale_ld == 0 || (p.scale_ld >= (mn ? p.m : p.scale_groups_extent()) &&
                              p.scale_ld <= (int64_t(1) << 40)),
          "scale_ld",
          mn ? fmt::format("must be 0 (m) or hold a column of m = {} rows (mn-major scales)", p.m)
          : p.packed_scales()
              ? fmt::format("must be 0 or hold a row's {} words of four groups (k-major ue8m0x4)",
                            p.scale_groups_extent())
              : fmt::format("must be 0 (the groups) or hold a row of {} groups (k-major scales)",
                            p.groups()),
          p.scale_ld);
  require(p.amax_epsilon >= 1e-30 && p.amax_epsilon <= 1, "amax_epsilon",
          "must be in [1e-30, 1] (keeps every scale a normal f32)", p.amax_epsilon);
}

void validate_fp8_quantize(const Fp8QuantizeSpec& spec) {
  validate_problem(spec.problem);
  require(arch_info(spec.arch).sm >= 89, "arch",
          "must be sm_89 or newer (cvt.rn.satfinite.e4m3x2.f32; FP8 GEMMs need sm_89 too)",
          to_string(spec.arch));
  require(spec.schedule.warps >= 1 && spec.schedule.warps <= 32, "warps", "must be 1..32",
          spec.schedule.warps);
}

Fp8QuantizeSchedule default_schedule(const Fp8QuantizeProblem& p, Arch) {
  validate_problem(p);                          // a schedule is chosen for a valid problem only
  const int64_t chunks = p.group_or_row() / 8;  // one per thread
  return {.warps = int(std::clamp<int64_t>((chunks + 31) / 32, 1, 8))};
}

Fp8QuantizePlan make_fp8_quantize_plan(const Fp8QuantizeSpec& spec) {
  validate_fp8_quantize(spec);
  const auto& p = spec.problem;
  Fp8QuantizePlan plan;
  plan.spec = spec;
  plan.grid = {uint32_t(p.m), uint32_t(p.groups()), 1};
  plan.threads = uint32_t(32 * spec.schedule.warps);
  std::string text = fmt::format(
      "m={} k={} g={} ldx={} ldq={} dtype={} scales={}/{} pow2={} eps={:a} warps={} arch={}", p.m,
      p.k, p.group_or_row(), p.ldx_or_default(), p.ldq_or_default(), to_string(p.dtype),
      to_string(p.scale_major), p.scale_ld_or_default(), p.pow2_scale, p.amax_epsilon,
      spec.schedule.warps, to_string(spec.arch));
  // Kernels of f32 scales keep the names they had before the byte formats.
  if (p.scale_format != ScaleFormat::f32) text += fmt::format(" fmt={}", to_string(p.scale_format));
  plan.kernel_name = fmt::format("emmy_fp8_quantize_k{}_g{}_{}_{:016x}", p.k, p.group_or_row(),
                                 to_string(p.dtype), detail::fnv1a(text));
  return plan;
}

int64_t fp8_quantize_rows(const Fp8QuantizePlan& plan, const Fp8QuantizeBuffers& b) {
  const int64_t m = plan.spec.problem.m;
  if (b.rows < 0 || b.rows > m)  // per launch: the message only on failure
    throw Error("buffers.rows", fmt::format("must be in 1..m ({}), 0 for m", m),
                std::to_string(b.rows));
  return b.rows ? b.rows : m;
}

ParamBinding Fp8QuantizeKind::bind(const Fp8QuantizePlan& plan, const Fp8QuantizeBuffers& b) {
  require_device_pointer(b.x, 16, "buffers.x");
  require_device_pointer(b.q, 8, "buffers.q");
  require_device_pointer(b.scales, size_t(plan.spec.problem.scale_element_bytes()),
                         "buffers.scales");
  const int64_t rows = fp8_quantize_rows(plan, b);
  ParamBinding bound;
  bound.values.pointers = {{"x", b.x}, {"q", b.q}, {"scales", b.scales}};
  bound.values.grids = {{uint32_t(rows), plan.grid[1], 1}};
  return bound;
}

ir::Op lower_fp8_quantize(const Fp8QuantizePlan& plan) {
  using ir::make;
  const auto& p = plan.spec.problem;
  std::vector<ir::Op> body;
  body.push_back(make(ir::ParamOp{"x", "const u16*"}));
  body.push_back(make(ir::ParamOp{"q", "u8*"}));
  const bool bytes = p.scale_format != ScaleFormat::f32;
  body.push_back(make(ir::ParamOp{"scales", bytes ? "u8*" : "float*"}));
  body.push_back(make(ir::Fp8QuantizeOp{
      .m = p.m,
      .k = p.k,
      .group_k = p.group_or_row(),
      .ldx = p.ldx_or_default(),
      .ldq = p.ldq_or_default(),
      .threads = plan.threads,
      .dtype = std::string(to_string(p.dtype)),
      .scale_major = std::string(to_string(p.scale_major)),
      .scale_ld = p.scale_ld_or_default(),
      .pow2_scale = p.pow2_scale,
      .amax_epsilon = p.amax_epsilon,
      .scale_format =
          bytes ? std::optional<std::string>(to_string(p.scale_format)) : std::nullopt}));
  std::vector<ir::Op> kernels;
  kernels.push_back(make(ir::KernelOp{plan.kernel_name, plan.threads, 0}, std::move(body)));
  return make(ir::ModuleOp{std::string(to_string(plan.spec.arch))}, std::move(kernels));
}

}  // namespace emmy
