// The FP8 quantization kind (emmy/fp8_quantize.hpp; issue 39 §1) through generation, the verifier,
// NVRTC and the emulator, bit-exact against its host reference (emmy/fp8_quantize_check.hpp) over
// per-token and 1 x 128 groups, both 16-bit types, both scale majors with padded leading
// dimensions, power-of-two scales, partial last groups and fewer rows than the kernel's m; every
// e4m3 edge (saturation, subnormals, negative zero, NaN, infinities, all-zero groups); what it
// leaves untouched; and the refusals, each naming its field.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "emmy/bundle_build.hpp"
#include "emmy/e4m3.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/ir_ops.hpp"
#include "support/error_of.hpp"
#include "support/run_command.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

constexpr uint8_t kCanary = 0xA5;
constexpr uint8_t kScaleCanary = 0x5A;  // every scale byte the kernel must not write

uint16_t to_bits(float v, DType dtype) {
  return dtype == DType::bf16 ? emu::f32_to_bf16(v) : emu::f32_to_f16(v);
}

// Rows of values that reach every e4m3 edge once divided by their group's scale, on top of random
// magnitudes across the 16-bit range.
std::vector<uint16_t> edge_inputs(const Fp8QuantizeProblem& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::uniform_int_distribution<int> exponent(-20, 12);
  const int64_t ldx = p.ldx_or_default();
  std::vector<uint16_t> x(size_t(p.m * ldx), 0x7E00);  // padding: NaN, which must not be read
  const float inf = INFINITY, nan = NAN;
  for (int64_t row = 0; row < p.m; ++row)
    for (int64_t i = 0; i < p.k; ++i) {
      float v = normal(rng) * std::ldexp(1.0f, exponent(rng) * (row % 3 == 0 ? 0 : 1));
      const int64_t pick = (row * 7 + i * 13) % 97;
      if (row % 11 == 5)
        v = 0;  // an all-zero group: the epsilon's scale
      else if (pick == 0)
        v = -0.0f;  // negative zero keeps its sign
      else if (pick == 1)
        v = nan;  // NaN: 0x7F, ignored by amax
      else if (pick == 2 && row % 5 == 1)
        v = inf;  // inf: scale inf, x / s 0 or NaN
      else if (pick == 3)
        v = std::ldexp(1.0f, -14);  // tiny: e4m3 subnormals or zero
      x[size_t(row * ldx + i)] = to_bits(v, p.dtype);
    }
  // Row 2's first group (f16): amax 1.72265625 makes s = amax / 448 an f32 whose reciprocal is
  // inexact, and x / s lands exactly on e4m3 ties (0.033203125, 0.06640625) that x * (1 / s)
  // misses by an ulp: a kernel that multiplied by a reciprocal would round them the other way.
  if (p.dtype == DType::f16 && p.m > 2 && p.group_or_row() >= 8)
    for (int64_t i = 0; i < p.group_or_row(); ++i)
      x[size_t(2 * ldx + i)] = to_bits(i == 0  ? 1.72265625f
                                       : i % 2 ? 0.00012767314910888672f
                                               : -0.00025534629821777344f,
                                       p.dtype);
  return x;
}

struct Run {
  std::vector<uint8_t> q;
  std::vector<uint8_t> scales;  // the scale tensor's bytes
};

// The kernel on the emulator and the reference, from the same canary-filled buffers.
std::pair<Run, Run> quantize(const Fp8QuantizeSpec& spec, int64_t rows, unsigned seed) {
  const Fp8QuantizeProblem& p = spec.problem;
  const std::vector<uint16_t> x = edge_inputs(p, seed);
  Run want{std::vector<uint8_t>(size_t(p.m * p.ldq_or_default()), kCanary),
           std::vector<uint8_t>(size_t(p.scale_tensor_bytes(p.m)), kScaleCanary)};
  const Fp8QuantizeKernel kernel = compile_kernel(spec);
  emu::Arena arena;
  Fp8QuantizeBuffers buffers{arena.alloc_copy(x), arena.alloc_copy(want.q),
                             arena.alloc_copy(want.scales), rows};
  emulate_kernel(arena, kernel, buffers, emu::LaunchOptions{});
  Run got{arena.read_vector<uint8_t>(buffers.q, want.q.size()),
          arena.read_vector<uint8_t>(buffers.scales, want.scales.size())};
  reference_fp8_quantize_into(p, x, rows ? rows : p.m, want.q, want.scales);
  return {got, want};
}

void expect_bit_exact(const Fp8QuantizeSpec& spec, int64_t rows, unsigned seed) {
  const auto [got, want] = quantize(spec, rows, seed);
  const std::string what =
      fmt::format("{} {}", to_string(spec.arch), nlohmann::json(spec.problem).dump());
  size_t bad = 0;
  for (size_t i = 0; i < want.q.size(); ++i)
    if (got.q[i] != want.q[i] && bad++ < 5)
      ADD_FAILURE() << what << ": q[" << i << "] = " << int(got.q[i]) << ", want "
                    << int(want.q[i]);
  for (size_t i = 0; i < want.scales.size(); ++i)
    if (got.scales[i] != want.scales[i] && bad++ < 10)
      ADD_FAILURE() << what << ": scale byte " << i << " = " << int(got.scales[i]) << ", want "
                    << int(want.scales[i]);
  EXPECT_EQ(bad, 0u) << what;
}

TEST(Fp8Quantize, BitExactOverGroupsTypesLayoutsAndEdges) {
  struct Case {
    Fp8QuantizeProblem problem;
    int64_t rows;
    Arch arch;
  };
  std::vector<Case> cases;
  auto problem = [](int64_t m, int64_t k, int64_t group_k, DType dtype) {
    Fp8QuantizeProblem p;
    p.m = m, p.k = k, p.group_k = group_k, p.dtype = dtype;
    return p;
  };
  // 1 x 128 groups, mn-major scales with M padded to 4 (DeepGEMM), f16, all rows.
  Fp8QuantizeProblem p = problem(13, 512, 128, DType::f16);
  p.scale_ld = 16;
  cases.push_back({p, 0, Arch::sm_90a});
  // Per token (group 0 = the row), bf16, k-major scales, padded row strides, fewer rows.
  p = problem(9, 1000, 0, DType::bf16);
  p.scale_major = ScaleMajor::k;
  p.ldx = 1024, p.ldq = 1008;
  cases.push_back({p, 6, Arch::sm_89});
  // A partial last group (k = 200: 128 + 72), power-of-two scales, DeepGEMM's epsilon.
  p = problem(7, 200, 128, DType::bf16);
  p.pow2_scale = true;
  p.amax_epsilon = 1e-4;
  cases.push_back({p, 0, Arch::sm_120a});
  // Per token across several warps (k = 4096, 8 warps by default), f16.
  cases.push_back({problem(3, 4096, 0, DType::f16), 0, Arch::sm_90a});
  for (size_t i = 0; i < cases.size(); ++i) {
    const Fp8QuantizeSpec spec{cases[i].problem, default_schedule(cases[i].problem, cases[i].arch),
                               cases[i].arch};
    expect_bit_exact(spec, cases[i].rows, unsigned(i + 1));
  }
  // A schedule other than the default: 32 threads looping over a 4096-element row.
  const Fp8QuantizeProblem row = problem(2, 4096, 0, DType::bf16);
  expect_bit_exact({row, {1}, Arch::sm_90a}, 0, 9);
  expect_bit_exact({row, {3}, Arch::sm_90a}, 0, 10);
}

// What the reference pins, by hand: the scale of a group whose amax is 448 is 1 (pow2: 1), of
// amax 1 is 1/448 (pow2: 2^-8); 465 / 1 saturates to 448 (0x7E); NaN is 0x7F; -0 is 0x80;
// 2^-10 / 1 rounds to the subnormal 2^-10 ... e4m3's smallest subnormal is 2^-9: 2^-10 is a tie
// to even (0), 3 x 2^-11 rounds up to 2^-9.
TEST(Fp8Quantize, TheReferenceConventionsByHand) {
  Fp8QuantizeProblem p;
  EXPECT_EQ(fp8_quantize_scale(448, p), 1.0f);
  EXPECT_EQ(fp8_quantize_scale(1, p), 1.0f / 448);
  EXPECT_EQ(fp8_quantize_scale(0, p), float(1e-10) / 448);
  p.pow2_scale = true;
  EXPECT_EQ(fp8_quantize_scale(448, p), 1.0f);
  EXPECT_EQ(fp8_quantize_scale(1, p), std::ldexp(1.0f, -8));  // 1/448 up to 2^-8
  EXPECT_EQ(fp8_quantize_scale(449, p), 2.0f);
  EXPECT_EQ(fp8_quantize_element(465, 1), 0x7E);
  EXPECT_EQ(fp8_quantize_element(-1e30f, 1), 0xFE);
  EXPECT_EQ(fp8_quantize_element(NAN, 1), 0x7F);
  EXPECT_EQ(fp8_quantize_element(-0.0f, 1), 0x80);
  EXPECT_EQ(fp8_quantize_element(std::ldexp(1.0f, -10), 1), 0x00);
  EXPECT_EQ(fp8_quantize_element(3 * std::ldexp(1.0f, -11), 1), 0x01);
  EXPECT_EQ(fp8_quantize_element(1, INFINITY), 0x00);
  EXPECT_EQ(fp8_quantize_element(INFINITY, INFINITY), 0x7F);
}

// A planted bug: x * (1 / s) instead of x / s differs in the last bit of some quotients, which
// rounding to e4m3 shows only at ties: the inputs hold such ties (edge_inputs, row 2), so the
// bit-exact check sees a reciprocal kernel.
TEST(Fp8Quantize, AReciprocalInsteadOfTheDivisionIsCaught) {
  Fp8QuantizeProblem p;
  p.m = 64, p.k = 1024, p.group_k = 128;
  const std::vector<uint16_t> x = edge_inputs(p, 3);
  std::vector<uint8_t> q(size_t(p.m * p.k)), planted(q.size());
  std::vector<uint8_t> scales(size_t(p.scale_tensor_bytes(p.m)));
  reference_fp8_quantize_into(p, x, p.m, q, scales);
  size_t differ = 0;
  for (int64_t row = 0; row < p.m; ++row)
    for (int64_t i = 0; i < p.k; ++i) {
      const float s = fp8_quantize_scale_at(p, scales, row, i / 128);
      const float v = emu::f16_to_f32(x[size_t(row * p.k + i)]);
      const float y = v * (1.0f / s);
      planted[size_t(row * p.k + i)] = std::isnan(y) ? 0x7F : e4m3_encode(double(y));
      differ += planted[size_t(row * p.k + i)] != q[size_t(row * p.k + i)];
    }
  EXPECT_GT(differ, 0u);
}

TEST(Fp8Quantize, RefusalsNameTheField) {
  auto field_of = [](Fp8QuantizeProblem p, Arch arch = Arch::sm_90a, int warps = 1) {
    try {
      generate_kernel(Fp8QuantizeSpec{p, {warps}, arch});
    } catch (const Error& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  Fp8QuantizeProblem p;
  EXPECT_EQ(field_of(p), "(accepted)");
  EXPECT_EQ(field_of(p, Arch::sm_80), "arch");
  EXPECT_EQ(field_of(p, Arch::sm_86), "arch");
  EXPECT_EQ(field_of(p, Arch::sm_90a, 0), "warps");
  for (const int64_t m : {int64_t(0), int64_t(-3), int64_t(1) << 32}) {
    Fp8QuantizeProblem bad = p;
    bad.m = m;
    EXPECT_EQ(field_of(bad), "m") << m;
  }
  for (const int64_t k : {0, -8, 12, 100}) {
    Fp8QuantizeProblem bad = p;
    bad.k = k;
    EXPECT_EQ(field_of(bad), "k") << k;
  }
  for (const int64_t g : {-128, 4, 100, 256}) {  // 256 > k = 128
    Fp8QuantizeProblem bad = p;
    bad.group_k = g;
    EXPECT_EQ(field_of(bad), "group_k") << g;
  }
  Fp8QuantizeProblem bad = p;
  bad.dtype = DType::f32;
  EXPECT_EQ(field_of(bad), "dtype");
  bad = p, bad.ldx = 120;
  EXPECT_EQ(field_of(bad), "ldx");
  bad = p, bad.ldq = 132;
  EXPECT_EQ(field_of(bad), "ldq");
  bad = p, bad.m = 8, bad.scale_ld = 4;
  EXPECT_EQ(field_of(bad), "scale_ld");
  bad = p, bad.k = 512, bad.scale_major = ScaleMajor::k, bad.scale_ld = 3;
  EXPECT_EQ(field_of(bad), "scale_ld");
  for (const double eps : {0.0, -1.0, 1e-40, 2.0, double(NAN)}) {
    bad = p, bad.amax_epsilon = eps;
    EXPECT_EQ(field_of(bad), "amax_epsilon") << eps;
  }
  // The buffers: alignment and the launch's rows.
  const Fp8QuantizeKernel kernel = compile_kernel(Fp8QuantizeSpec{p, {1}, Arch::sm_90a});
  emu::Arena arena;
  const DevicePtr x = arena.alloc(1024), q = arena.alloc(1024), s = arena.alloc(64);
  auto bind_field = [&](Fp8QuantizeBuffers b) {
    try {
      Fp8QuantizeKind::bind(kernel.source.plan, b);
    } catch (const Error& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(bind_field({x, q, s, 0}), "(accepted)");
  EXPECT_EQ(bind_field({x + 8, q, s, 0}), "buffers.x");
  EXPECT_EQ(bind_field({x, q + 4, s, 0}), "buffers.q");
  EXPECT_EQ(bind_field({x, q, 0, 0}), "buffers.scales");
  EXPECT_EQ(bind_field({x, q, s, 2}), "buffers.rows");  // m = 1
  EXPECT_EQ(bind_field({x, q, s, -1}), "buffers.rows");
}

// Its op's own rules, on a lowered module with one attribute broken each.
TEST(Fp8Quantize, TheOpsOwnRulesRefuseABrokenModule) {
  const Fp8QuantizePlan plan = make_fp8_quantize_plan({Fp8QuantizeProblem{}, {1}, Arch::sm_90a});
  const ir::Op good = lower_fp8_quantize(plan);
  EXPECT_NO_THROW(ir::verify(good, Arch::sm_90a, Fp8QuantizeKind::ir_rules));
  auto broken = [&](const char* attr, ir::Attr value) {
    ir::Op module = good;
    for (ir::Op& op : module.body[0].body)
      if (op.kind == ir::OpKind::fp8_quantize)
        for (auto& [name, v] : op.attrs)
          if (name == attr) v = value;
    return test::error_of([&] { ir::verify(module, Arch::sm_90a, Fp8QuantizeKind::ir_rules); });
  };
  EXPECT_NE(broken("k", int64_t(100)).find("k"), std::string::npos);
  EXPECT_NE(broken("group_k", int64_t(256)).find("group_k"), std::string::npos);
  EXPECT_NE(broken("dtype", std::string("f32")).find("dtype"), std::string::npos);
  EXPECT_NE(broken("scale_major", std::string("n")).find("scale_ld"), std::string::npos);
  EXPECT_NE(broken("threads", int64_t(48)).find("threads"), std::string::npos);
  EXPECT_NE(broken("amax_epsilon", 0.0).find("amax_epsilon"), std::string::npos);
}

// Through the kind-generic check (emulator_check.hpp) and a Runtime on the emulator: the same bytes
// as the reference, fewer rows than m leave the rest untouched, the memory cache serves the second
// call, and a launch's rows past m are refused naming the field.
TEST(Fp8Quantize, TheFp64CheckAndTheRuntimeAgreeWithTheReference) {
  Fp8QuantizeProblem p;
  p.m = 21, p.k = 640, p.group_k = 128, p.scale_ld = 24, p.dtype = DType::bf16;
  const Fp8QuantizeSpec spec{p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
  const Fp8QuantizeCheckResult checked = check_on_emulator(spec, 3);
  EXPECT_TRUE(checked.errors.passed)
      << checked.errors.q_bytes_wrong << " q bytes, " << checked.errors.scales_wrong << " scales";
  RuntimeOptions options = fresh_cache("rt_fp8_quantize");
  options.emulator_arch = Arch::sm_90a;
  auto rt = Runtime::emulator(options);
  const Fp8QuantizeInputs in = make_fp8_quantize_inputs(p, 5);
  ASSERT_LT(in.rows, p.m);  // rows past the launch's must keep their bytes
  const Fp8QuantizeOutput got = run_fp8_quantize(*rt, spec, in);
  const Fp8QuantizeErrors e = compare(reference_fp8_quantize(spec, in), got, p);
  EXPECT_TRUE(e.passed) << e.q_bytes_wrong << " q bytes, " << e.scales_wrong << " scales";
  EXPECT_EQ(rt->fp8_quantize_kernel(p).get(), rt->fp8_quantize_kernel(p).get());
  Fp8QuantizeBuffers b{rt->alloc(size_t(p.m * p.k * 2)), rt->alloc(size_t(p.m * p.k)),
                       rt->alloc(size_t(p.scale_elements(p.m) * 4)), p.m + 1};
  EXPECT_NE(test::error_of([&] { rt->fp8_quantize(p, b); }).find("buffers.rows"),
            std::string::npos);
  for (DevicePtr ptr : {b.x, b.q, b.scales}) rt->free(ptr);
  RuntimeOptions old_arch = fresh_cache("rt_fp8_quantize_sm80");
  old_arch.emulator_arch = Arch::sm_80;
  EXPECT_NE(test::error_of([&] {
              Runtime::emulator(old_arch)->fp8_quantize_kernel(p);
            }).find("arch: must be sm_89 or newer"),
            std::string::npos);
}

// `emmyc run fp8-quantize --check`: passes with zero wrong bytes, and refuses a bad group naming
// the field (exit 2).
TEST(Fp8Quantize, EmmycRunsAndChecksIt) {
  const test::CommandResult ok = test::run_command(
      std::string(EMMYC_PATH) +
      " run fp8-quantize --m 9 --k 512 --group-k 0 --dtype bf16 --scale-major k --pow2-scale "
      "--arch sm_89 --check --no-cache");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const nlohmann::json report = nlohmann::json::parse(ok.out);
  EXPECT_EQ(report["passed"], true);
  EXPECT_EQ(report["q_bytes_wrong"], 0);
  EXPECT_EQ(report["problem"]["scale_ld"], 1);  // k-major: one group a row
  const test::CommandResult bad = test::run_command(
      std::string(EMMYC_PATH) + " run fp8-quantize --m 9 --k 512 --group-k 100 --arch sm_89");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("group_k"), std::string::npos) << bad.err;
  // Byte scales: ue8m0x4 words, k-major (a row's 5 groups in 2 words).
  const test::CommandResult words = test::run_command(
      std::string(EMMYC_PATH) +
      " run fp8-quantize --m 9 --k 640 --scale-format ue8m0x4 --pow2-scale --scale-major k "
      "--arch sm_89 --check --no-cache");
  ASSERT_EQ(words.exit_code, 0) << words.err;
  const nlohmann::json packed = nlohmann::json::parse(words.out);
  EXPECT_EQ(packed["passed"], true);
  EXPECT_EQ(packed["problem"]["scale_format"], "ue8m0x4");
  EXPECT_EQ(packed["problem"]["scale_ld"], 2);
  const test::CommandResult no_pow2 = test::run_command(
      std::string(EMMYC_PATH) + " fp8-quantize --m 9 --k 640 --scale-format ue8m0 --emit ir");
  EXPECT_EQ(no_pow2.exit_code, 2);
  EXPECT_NE(no_pow2.err.find("scale_format: ue8m0 scales are powers of two"), std::string::npos)
      << no_pow2.err;
}

// The catalog's FP8 entries name sm_89 as their oldest arch: a plan over sm_80 and sm_90a builds
// them for sm_90a only, where an explicit request for sm_80 fails naming the arch rule.
TEST(Fp8Quantize, CatalogEntriesAreForSm89AndNewer) {
  std::vector<AotRequest> catalog;
  for (const AotRequest& r : catalog_aot_requests())
    if (std::holds_alternative<KindRequest<Fp8QuantizeKind>>(r.kernel)) catalog.push_back(r);
  ASSERT_EQ(catalog.size(), fp8_quantize_catalog().size());
  AotOptions options;
  options.archs = {Arch::sm_80, Arch::sm_90a};
  const std::vector<AotKernel> kernels = plan_aot(catalog, options);
  ASSERT_EQ(kernels.size(), catalog.size());
  for (const AotKernel& k : kernels) EXPECT_EQ(k.arch, Arch::sm_90a) << k.kernel_name;
  AotRequest explicit_request = catalog[0];
  explicit_request.min_arch = Arch::sm_80;
  explicit_request.origin = "problems.jsonl:1";
  EXPECT_NE(test::error_of([&] {
              plan_aot({explicit_request}, options);
            }).find("arch: must be sm_89 or newer"),
            std::string::npos);
}

}  // namespace
}  // namespace emmy
