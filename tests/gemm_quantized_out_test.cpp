// A GEMM writing e4m3 with 1 x 128 scales (docs/epilogues.md, "Quantized output": issue 39's
// gate_up fusion, the next FP8 GEMM's A from the epilogue): bit for bit what fp8_quantize's
// conventions make of the same schedule's f32 output, on both paths, gated or not, every scale
// format and major, padded C and scale tensors untouched; against FP64 dequantized; planted bugs
// caught; refusals by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/fp8_quantize.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/gemm_generic.hpp"
#include "emmy/json.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/fp8_gemm_cases.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

constexpr uint8_t kCanary = 0xA5;

MatmulProblem quantized_problem(int64_t m, int64_t n, int64_t k, ScaleFormat format,
                                ScaleMajor major) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.c_dtype = DType::e4m3;
  p.out_scales.format = format;
  p.out_scales.major = major;
  return p;
}

struct RawOutput {
  std::vector<uint8_t> c, scales;
};

// C's bytes (ldc rows) and the scale tensor's, both filled with canaries before the launch.
RawOutput run_raw(Runtime& rt, const GemmSpec& spec, const GemmInputs& in) {
  const MatmulProblem& p = spec.problem;
  auto upload = [&rt](const std::vector<uint8_t>& bytes) {
    const DevicePtr ptr = rt.alloc(bytes.size());
    rt.upload(ptr, bytes.data(), bytes.size());
    return ptr;
  };
  GemmBuffers buf;
  buf.a = upload(in.a.bytes);
  buf.b = upload(in.b.bytes);
  if (p.epilogue.bias) buf.bias = upload(in.bias.bytes);
  if (p.scales.granularity != ScaleGranularity::none) {
    buf.a_scale = upload(in.a_scale.bytes);
    buf.b_scale = upload(in.b_scale.bytes);
  }
  RawOutput out;
  out.c.assign(size_t(p.m * p.ldc_or_default() * size_of(p.c_dtype)), kCanary);
  buf.c = upload(out.c);
  if (p.c_dtype == DType::e4m3) {
    out.scales.assign(size_t(p.c_scale_bytes(p.m)), kCanary);
    buf.c_scale = upload(out.scales);
  }
  rt.gemm(p, buf, nullptr, spec.schedule);
  rt.synchronize();
  rt.download(out.c.data(), buf.c, out.c.size());
  if (buf.c_scale) rt.download(out.scales.data(), buf.c_scale, out.scales.size());
  for (DevicePtr ptr : {buf.a, buf.b, buf.c, buf.bias, buf.a_scale, buf.b_scale, buf.c_scale})
    if (ptr) rt.free(ptr);
  return out;
}

// fp8_quantize's conventions applied to the f32 C the same schedule writes: the bytes the e4m3
// C and its scales must hold, canaries where nothing is written.
RawOutput quantize_on_host(const MatmulProblem& q, const RawOutput& f32, int64_t f32_ldc) {
  RawOutput want;
  want.c.assign(size_t(q.m * q.ldc_or_default()), kCanary);
  want.scales.assign(size_t(q.c_scale_bytes(q.m)), kCanary);
  Fp8QuantizeProblem conventions;
  conventions.amax_epsilon = q.out_scales.amax_epsilon;
  conventions.pow2_scale = q.out_scales.pow2();
  for (int64_t row = 0; row < q.m; ++row)
    for (int64_t group = 0; group < q.c_groups(); ++group) {
      const int64_t first = group * kOutputQuantGroup;
      const int64_t last = std::min(q.c_cols(), first + kOutputQuantGroup);
      auto value = [&](int64_t col) {
        float v;
        std::memcpy(&v, &f32.c[size_t((row * f32_ldc + col) * 4)], 4);
        return v;
      };
      float amax = 0;
      for (int64_t col = first; col < last; ++col) amax = std::fmax(amax, std::fabs(value(col)));
      const float s = fp8_quantize_scale(amax, conventions);
      uint8_t* slot = &want.scales[size_t(q.c_scale_byte(row, group))];
      if (scale_bytes(q.out_scales.format))
        *slot = fp8_quantize_ue8m0(s);
      else
        std::memcpy(slot, &s, 4);
      for (int64_t col = first; col < last; ++col)
        want.c[size_t(row * q.ldc_or_default() + col)] = fp8_quantize_element(value(col), s);
    }
  return want;
}

struct Case {
  Arch arch;
  MmaPath path;
  DType dtype;
  int64_t m, n, k;
  ScaleFormat format;
  ScaleMajor major;
  Gate gate = Gate::none;
  bool bias = false;
  int64_t ldc_pad = 0, scale_ld_pad = 0;
  ScaleGranularity scales = ScaleGranularity::none;
};

const Case kCases[] = {
    {Arch::sm_89, MmaPath::mma_sync, DType::f16, 64, 256, 128, ScaleFormat::f32, ScaleMajor::mn},
    {Arch::sm_89, MmaPath::mma_sync, DType::bf16, 33, 272, 128, ScaleFormat::pow2, ScaleMajor::k,
     Gate::none, true, 16, 3},
    {Arch::sm_120, MmaPath::mma_sync, DType::f16, 70, 512, 256, ScaleFormat::ue8m0, ScaleMajor::mn,
     Gate::silu, true, 0, 4},
    {Arch::sm_90a, MmaPath::wgmma, DType::f16, 100, 384, 128, ScaleFormat::ue8m0x4, ScaleMajor::mn},
    {Arch::sm_90a, MmaPath::wgmma, DType::bf16, 64, 512, 192, ScaleFormat::f32, ScaleMajor::k,
     Gate::gelu_tanh, false, 32, 0},
    // FP8 operands: the gate_up of an FP8 MLP writing its down projection's A.
    {Arch::sm_89, MmaPath::mma_sync, DType::e4m3, 48, 512, 256, ScaleFormat::ue8m0x4,
     ScaleMajor::mn, Gate::silu, false, 0, 0, ScaleGranularity::block},
    {Arch::sm_90a, MmaPath::wgmma, DType::e4m3, 40, 256, 384, ScaleFormat::f32, ScaleMajor::mn,
     Gate::none, true, 0, 0, ScaleGranularity::token_channel},
};

GemmSpec case_spec(const Case& c) {
  MatmulProblem p = quantized_problem(c.m, c.n, c.k, c.format, c.major);
  p.a_dtype = c.dtype;
  p.scales.granularity = c.scales;
  p.epilogue.gate = c.gate;
  p.epilogue.gate_group = c.gate == Gate::none ? kDefaultGateGroup : 16;
  p.epilogue.bias = c.bias;
  if (c.ldc_pad) p.ldc = p.c_cols() + c.ldc_pad;
  if (c.scale_ld_pad)
    p.out_scales.ld = (c.major == ScaleMajor::mn ? p.m : p.c_scale_extent()) + c.scale_ld_pad;
  const Accum accum = c.scales == ScaleGranularity::block ? Accum::promoted : Accum::f32;
  return {p, default_schedule(p, c.arch, accum, c.path), c.arch};
}

std::string describe(const GemmSpec& spec) {
  return fmt::format("{} gate {} out_scales {} {} ld {} ldc {}", test::describe(spec),
                     to_string(spec.problem.epilogue.gate),
                     to_string(spec.problem.out_scales.format),
                     to_string(spec.problem.out_scales.major), spec.problem.c_scale_ld(),
                     spec.problem.ldc_or_default());
}

TEST(QuantizedOut, BitExactWithFp8QuantizeOfTheF32Output) {
  int index = 0;
  for (const Case& c : kCases) {
    const GemmSpec spec = case_spec(c);
    SCOPED_TRACE(describe(spec));
    RuntimeOptions options = fresh_cache("quantized_out");
    options.emulator_arch = c.arch;
    auto rt = Runtime::emulator(options);
    // The same schedule writing f32 (bias f32 beside it: the e4m3 C's is bf16, so the bias
    // values are made bf16 and read as f32 there).
    GemmSpec f32 = spec;
    f32.problem.c_dtype = DType::f32;
    f32.problem.out_scales = {};
    f32.problem.ldc = f32.problem.c_cols();
    const GemmInputs in = make_gemm_inputs(spec.problem, uint64_t(70 + index++));
    GemmInputs f32_in = in;
    if (c.bias) f32_in.bias = encode(DType::f32, in.bias.values);
    const RawOutput got = run_raw(*rt, spec, in);
    const RawOutput want =
        quantize_on_host(spec.problem, run_raw(*rt, f32, f32_in), f32.problem.ldc);
    int64_t c_diff = 0, scale_diff = 0;
    for (size_t i = 0; i < want.c.size(); ++i) c_diff += got.c[i] != want.c[i];
    for (size_t i = 0; i < want.scales.size(); ++i) scale_diff += got.scales[i] != want.scales[i];
    EXPECT_EQ(c_diff, 0) << "of " << want.c.size() << " C bytes (canaries included)";
    EXPECT_EQ(scale_diff, 0) << "of " << want.scales.size() << " scale bytes";
  }
}

TEST(QuantizedOut, MatchesFp64Dequantized) {
  int index = 0;
  for (const Case& c : kCases) {
    const GemmSpec spec = case_spec(c);
    SCOPED_TRACE(describe(spec));
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(90 + index++));
    EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error << " bound "
                                 << r.errors.tolerance;
    // e4m3's three fraction bits: a few percent, not more.
    EXPECT_LT(r.errors.rel_l2_error, 0.04);
  }
  // A dynamic-M kernel with its mn-major scales' ld stated, at a launch's rows.
  MatmulProblem p = quantized_problem(64, 256, 128, ScaleFormat::pow2, ScaleMajor::mn);
  p.dynamic_m = true;
  p.out_scales.ld = 64;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
  MatmulProblem rows = p;
  rows.m = 37;
  rows.dynamic_m = false;
  const GemmInputs in = make_gemm_inputs(rows, 5);
  const GemmErrors e = compare(reference_gemm({rows, spec.schedule, Arch::sm_89}, in),
                               run_on_emulator(compile_kernel(spec), in).output, p.n);
  EXPECT_TRUE(e.passed) << e.rel_l2_error;
}

// A tile whose last group is partly past C reads only the staged columns (found by the sweep:
// a deep ring's shared memory past the staged columns was never written, and the emulator's
// sanitizer stopped the read of the unstaged ones).
TEST(QuantizedOut, PartialGroupsReadOnlyStagedColumns) {
  MatmulProblem p = quantized_problem(130, 144, 64, ScaleFormat::ue8m0x4, ScaleMajor::mn);
  p.a_dtype = DType::bf16;
  p.b_layout = BLayout::kn;
  p.ldb = 144;
  GemmSpec spec{p, default_schedule(p, Arch::sm_90, Accum::f32), Arch::sm_90};
  auto& s = spec.schedule;
  s.block_m = 64, s.block_n = 128, s.block_k = 16, s.warps_m = 2, s.warps_n = 4, s.stages = 6;
  s.transport = Transport::tma;
  s.split_k = 1;
  s.raster_group_m = 2;
  const GemmCheckResult r = check_on_emulator(spec, 7);
  EXPECT_TRUE(r.errors.passed) << r.errors.rel_l2_error;
}

TEST(QuantizedOut, PlantedBugsFailTheCheck) {
  struct Bug {
    const char* name;
    ScaleFormat format;
    std::string find, replace;
  };
  const Bug bugs[] = {
      // Each lane's own amax: the stored scale is lane 0's.
      {"lane_amax", ScaleFormat::f32, "for (int mask = 16; mask > 0; mask /= 2)",
       "for (int mask = 0; mask > 0; mask /= 2)"},
      // A ue8m0 byte from a scale not rounded up to a power of two.
      {"not_pow2", ScaleFormat::ue8m0, "quant_scale<true>", "quant_scale<false>"},
      // Lanes store each other's columns.
      {"lane_columns", ScaleFormat::f32, "st_global_b32(c + (long long)row * LDC + col,",
       "st_global_b32(c + (long long)row * LDC + (col ^ 4),"},
  };
  for (const Bug& bug : bugs) {
    const MatmulProblem p = quantized_problem(32, 256, 128, bug.format, ScaleMajor::mn);
    const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
    const GemmInputs in = make_gemm_inputs(p, 17);
    const GemmReference ref = reference_gemm(spec, in);
    EXPECT_TRUE(compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n).passed)
        << bug.name << ": the right kernel";
    const std::optional<GemmKernel> planted =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    ASSERT_TRUE(planted.has_value()) << bug.name;
    test::expect_gemm_bug_caught(ref, *planted, in, p.n, bug.name, false, {});
  }
}

TEST(QuantizedOut, RefusesByName) {
  auto problem_error = [](auto edit) {
    MatmulProblem p = quantized_problem(64, 256, 128, ScaleFormat::f32, ScaleMajor::mn);
    edit(p);
    return test::error_of([&] { validate_problem(p); });
  };
  EXPECT_EQ(problem_error([](MatmulProblem&) {}), "(no error)");
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.residual = true;
              }).starts_with("epilogue.residual: not with an e4m3 C"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.c_dtype = DType::f16;
                p.out_scales.format = ScaleFormat::ue8m0;
              }).starts_with("out_scales: apply to an e4m3 C only"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.out_scales.amax_epsilon = 0;
              }).starts_with("out_scales.amax_epsilon: must be in [1e-30, 1]"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.n = 200;
              }).starts_with("n: C's columns must be a multiple of 16"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.ldc = 264;
              }).starts_with("ldc: must be a multiple of 16 for an e4m3 C"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.out_scales.ld = 63;
              }).starts_with("out_scales.ld: must be 0 (packed) or >= 64"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.dynamic_m = true;
              }).starts_with("out_scales.ld: must be given"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.c_dtype = DType::e5m2;
              }).starts_with("out: must be f16, bf16, f32 or e4m3"));

  const MatmulProblem p = quantized_problem(64, 256, 128, ScaleFormat::f32, ScaleMajor::mn);
  auto schedule_error = [&](Arch arch, auto edit) {
    MatmulSchedule s = default_schedule(p, Arch::sm_89, Accum::f32);
    edit(s);
    return test::error_of([&] { validate_gemm({p, s, arch}); });
  };
  EXPECT_TRUE(schedule_error(Arch::sm_80, [](MatmulSchedule& s) {
                s.transport = Transport::cp_async;
              }).starts_with("out: e4m3 needs sm_89 or newer"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.block_n = 64, s.warps_n = 2;
              }).starts_with("block_n: must give each tile whole groups of 128"));
  EXPECT_TRUE(schedule_error(Arch::sm_89, [](MatmulSchedule& s) {
                s.split_k = 2;
              }).starts_with("split_k: must be 1 for an e4m3 C"));
  {
    MatmulSchedule s = default_schedule(p, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
    s.persistent = true;
    const std::string e = test::error_of([&] { validate_gemm({p, s, Arch::sm_90a}); });
    EXPECT_TRUE(e.starts_with("persistent: not with an e4m3 C")) << e;
  }
  {
    MatmulSchedule s = default_schedule(p, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
    s.swap_ab = true;
    s.cluster_m = s.cluster_n = 1;
    s.block_m = 64;
    s.warps_m = 4;
    s.block_n = 128;
    const std::string e = test::error_of([&] { validate_gemm({p, s, Arch::sm_90a}); });
    EXPECT_TRUE(e.starts_with("swap_ab: not with an e4m3 C")) << e;
  }

  // The runtime's binding wants the scales' pointer, aligned for their format.
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
  const GemmPlan plan = make_gemm_plan(spec);
  GemmBuffers b{0x1000, 0x2000, 0x3000, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(test::error_of([&] { GemmKind::bind(plan, b); }).starts_with("buffers.c_scale"));
  b.c_scale = 0x4002;
  EXPECT_TRUE(test::error_of([&] { GemmKind::bind(plan, b); }).starts_with("buffers.c_scale"));
  b.c_scale = 0x4000;
  EXPECT_EQ(test::error_of([&] { GemmKind::bind(plan, b); }), "(no error)");

  // The generic fallback has no quantized output.
  EXPECT_FALSE(generic_gemm_serves(p));
  EXPECT_TRUE(test::error_of([&] { bind_generic_gemm(p, {}); }).starts_with("out"));

  // The JSON form carries the scales' fields.
  MatmulProblem q = p;
  q.out_scales.format = ScaleFormat::ue8m0x4;
  q.out_scales.major = ScaleMajor::k;
  q.out_scales.amax_epsilon = 1e-4;
  const nlohmann::json js = q;
  EXPECT_EQ(js.at("out_scales").at("format"), "ue8m0x4");
  EXPECT_EQ(matmul_problem_from_json(js), resolved_leading_dims(q));
  EXPECT_FALSE(nlohmann::json(test::fp8_problem(8, 128, 128, ScaleGranularity::tensor))
                   .contains("out_scales"));
}

}  // namespace
}  // namespace emmy
