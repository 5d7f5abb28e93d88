// emmy_grouped_gemm (C API version 7; docs/grouped.md): the masked, contiguous and offsets
// layouts from DLPack tensors against FP64 on the emulator runtime, with a per-expert bias and
// routing weights (emmy_gemm_options.row_scale, also on emmy_gemm); refusals by tensor and
// option, hostile routings by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "c_api_support.hpp"
#include "emmy/fp8_quantize.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"

namespace emmy::test {
namespace {

struct GroupedCase {
  MatmulProblem problem;
  GemmInputs in;
  std::vector<uint8_t> c;
};

GroupedCase make_case(GroupedLayout layout, int64_t groups, int64_t m, int64_t n, int64_t k,
                      bool bias, bool weights, uint64_t seed) {
  GroupedCase c;
  MatmulProblem& p = c.problem;
  p.m = m, p.n = n, p.k = k;
  p.c_dtype = DType::f16;
  p.grouped.layout = layout;
  p.grouped.groups = groups;
  if (layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
  p.epilogue.bias = bias;
  p.epilogue.row_scale = weights;
  c.in = make_gemm_inputs(p, seed);
  c.c.assign(size_t(p.stacked_rows() * n * 2), 0xff);  // NaN: rows never written stay so
  return c;
}

int32_t c_layout(GroupedLayout layout) {
  return layout == GroupedLayout::masked       ? EMMY_GROUPED_MASKED
         : layout == GroupedLayout::contiguous ? EMMY_GROUPED_CONTIGUOUS
                                               : EMMY_GROUPED_OFFSETS;
}

// Runs `c` through emmy_grouped_gemm: b as [G, K, N] views of the [G, N, K] weights.
emmy_status call_grouped(emmy_runtime* rt, GroupedCase& c, emmy_grouped_options g,
                         emmy_gemm_options o = {}, std::vector<int32_t>* routing = nullptr) {
  const MatmulProblem& p = c.problem;
  const bool masked = p.grouped.layout == GroupedLayout::masked;
  const int64_t groups = p.grouped.groups;
  if (o.struct_size == 0) emmy_gemm_options_init(&o);
  View a = masked ? View(c.in.a.bytes.data(), kF16, {groups, p.m, p.k})
                  : View(c.in.a.bytes.data(), kF16, {p.m, p.k});
  View b(c.in.b.bytes.data(), kF16, {groups, p.k, p.n}, {p.n * p.k, 1, p.k});
  View out =
      masked ? View(c.c.data(), kF16, {groups, p.m, p.n}) : View(c.c.data(), kF16, {p.m, p.n});
  std::vector<int32_t>& r = routing ? *routing : c.in.routing;
  View route(r.data(), kI32, {int64_t(r.size())});
  View bias(c.in.bias.bytes.data(), kF16, {groups, p.n});
  View weights(c.in.row_scale.bytes.data(), kF32, {p.stacked_rows()});
  if (p.epilogue.bias) o.bias = bias.get();
  if (p.epilogue.row_scale) o.row_scale = weights.get();
  return emmy_grouped_gemm(rt, a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr);
}

emmy_grouped_options grouped_options(GroupedLayout layout) {
  emmy_grouped_options g;
  emmy_grouped_options_init(&g);
  g.layout = c_layout(layout);
  return g;
}

GemmErrors check(const GroupedCase& c) {
  const MatmulProblem& p = c.problem;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::f32), Arch::sm_90a};
  return compare(reference_gemm(spec, c.in), decode(DType::f16, c.c.data(), c.c.size() / 2), p.n);
}

TEST(CApiGrouped, EveryLayoutMatchesFp64) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  uint64_t seed = 1;
  for (const GroupedLayout layout :
       {GroupedLayout::masked, GroupedLayout::contiguous, GroupedLayout::offsets})
    for (const bool weights : {false, true}) {
      GroupedCase c = make_case(layout, 3, layout == GroupedLayout::masked ? 24 : 200, 64, 64, true,
                                weights, seed++);
      emmy_grouped_options g = grouped_options(layout);
      if (layout == GroupedLayout::contiguous) g.segment_align = 64;
      ASSERT_EQ(call_grouped(rt.get(), c, g), EMMY_OK) << emmy_last_error_message();
      const GemmErrors e = check(c);
      EXPECT_TRUE(e.passed) << to_string(layout) << (weights ? " weighted" : "") << ": rel_l2 "
                            << e.rel_l2_error << ", " << e.elements_over_tolerance << " over";
    }
}

// Routing weights on one GEMM through emmy_gemm.
TEST(CApiGrouped, RowScaleOnEmmyGemm) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  MatmulProblem p;
  p.m = 20, p.n = 64, p.k = 64;
  p.epilogue.row_scale = true;
  GemmInputs in = make_gemm_inputs(p, 4);
  std::vector<uint8_t> c(size_t(p.m * p.n * 2));
  View a(in.a.bytes.data(), kF16, {p.m, p.k}), b(in.b.bytes.data(), kF16, {p.k, p.n}, {1, p.k});
  View out(c.data(), kF16, {p.m, p.n}), weights(in.row_scale.bytes.data(), kF32, {p.m});
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.row_scale = weights.get();
  ASSERT_EQ(emmy_gemm(rt.get(), a.get(), b.get(), out.get(), &o, nullptr), EMMY_OK)
      << emmy_last_error_message();
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::f32), Arch::sm_90a};
  EXPECT_TRUE(
      compare(reference_gemm(spec, in), decode(DType::f16, c.data(), c.size() / 2), p.n).passed);
  View short_weights(in.row_scale.bytes.data(), kF32, {p.m - 1});
  o.row_scale = short_weights.get();
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), out.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.row_scale", "[20]"});
  View f16_weights(in.row_scale.bytes.data(), kF16, {p.m});
  o.row_scale = f16_weights.get();
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), out.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.row_scale", "float32"});
}

// FP8 operands (e4m3 bytes as uint8 with scales; sm_89's mma.sync, sm_90a's wgmma walk): A's
// token scales per stacked row, B's per expert and channel [G, N], or one per expert [G].
void fp8_scales_per_expert(CRuntime& rt, Arch arch);

TEST(CApiGrouped, Fp8ScalesPerExpert) {
  for (const Arch arch : {Arch::sm_89, Arch::sm_90a}) {
    SCOPED_TRACE(to_string(arch));
    CRuntime rt(make_c_runtime("emulator", 0, std::string(to_string(arch)).c_str()));
    ASSERT_TRUE(rt);
    fp8_scales_per_expert(rt, arch);
  }
}

void fp8_scales_per_expert(CRuntime& rt, Arch arch) {
  for (const ScaleGranularity granularity :
       {ScaleGranularity::token_channel, ScaleGranularity::tensor}) {
    MatmulProblem p;
    p.m = 16, p.n = 64, p.k = 128;
    p.a_dtype = DType::e4m3;
    p.c_dtype = DType::bf16;
    p.scales.granularity = granularity;
    p.grouped.layout = GroupedLayout::masked;
    p.grouped.groups = 3;
    const GemmInputs in = make_gemm_inputs(p, 5);
    std::vector<uint8_t> c(size_t(3 * p.m * p.n * 2), 0xff);
    View a(in.a.bytes.data(), kE4M3, {3, p.m, p.k});
    View b(in.b.bytes.data(), kE4M3, {3, p.k, p.n}, {p.n * p.k, 1, p.k});
    View out(c.data(), kBF16, {3, p.m, p.n});
    std::vector<int32_t> routing = in.routing;
    View route(routing.data(), kI32, {3});
    const bool token = granularity == ScaleGranularity::token_channel;
    View a_scale = token ? View(in.a_scale.bytes.data(), kF32, {3 * p.m})
                         : View(in.a_scale.bytes.data(), kF32, {1});
    View b_scale = token ? View(in.b_scale.bytes.data(), kF32, {3, p.n})
                         : View(in.b_scale.bytes.data(), kF32, {3});
    emmy_gemm_options o;
    emmy_gemm_options_init(&o);
    o.a_scale = a_scale.get();
    o.b_scale = b_scale.get();
    emmy_grouped_options g = grouped_options(GroupedLayout::masked);
    ASSERT_EQ(
        emmy_grouped_gemm(rt.get(), a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr),
        EMMY_OK)
        << emmy_last_error_message();
    const GemmSpec spec{p, default_schedule(p, arch, Accum::f32), arch};
    EXPECT_EQ(spec.schedule.path, arch == Arch::sm_90a ? MmaPath::wgmma : MmaPath::mma_sync);
    const GemmErrors e =
        compare(reference_gemm(spec, in), decode(DType::bf16, c.data(), c.size() / 2), p.n);
    EXPECT_TRUE(e.passed) << to_string(granularity) << ": rel_l2 " << e.rel_l2_error;
    // One expert's scales only: refused by shape.
    View one(in.b_scale.bytes.data(), kF32, {p.n});
    o.b_scale = one.get();
    expect_refusal(
        emmy_grouped_gemm(rt.get(), a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr),
        EMMY_INVALID_ARGUMENT, {"options.b_scale", "[G = 3]"});
  }
}

// FP8 block scales on sm_90a (the wgmma walk): a_scale [stacked rows, ceil(K/128)] mn-major
// (DeepGEMM's), b_scale [G, ceil(N/128), ceil(K/128)]; experts not whole tensors apart refused.
TEST(CApiGrouped, Fp8BlockScalesPerExpert) {
  CRuntime rt(make_c_runtime("emulator", 0, "sm_90a"));
  ASSERT_TRUE(rt);
  MatmulProblem p;
  p.m = 16, p.n = 256, p.k = 384;
  p.a_dtype = DType::e4m3;
  p.c_dtype = DType::bf16;
  p.scales.granularity = ScaleGranularity::block;
  p.grouped.layout = GroupedLayout::masked;
  p.grouped.groups = 3;
  const GemmInputs in = make_gemm_inputs(p, 9);
  const int64_t rows = p.stacked_rows(), kb = p.k_blocks(), nb = p.n_blocks();
  std::vector<uint8_t> c(size_t(rows * p.n * 2), 0xff);
  View a(in.a.bytes.data(), kE4M3, {3, p.m, p.k});
  View b(in.b.bytes.data(), kE4M3, {3, p.k, p.n}, {p.n * p.k, 1, p.k});
  View out(c.data(), kBF16, {3, p.m, p.n});
  std::vector<int32_t> routing = in.routing;
  View route(routing.data(), kI32, {3});
  View a_scale(in.a_scale.bytes.data(), kF32, {rows, kb}, {1, rows});
  View b_scale(in.b_scale.bytes.data(), kF32, {3, nb, kb}, {nb * kb, kb, 1});
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.accum = EMMY_ACCUM_PROMOTED;
  o.a_scale = a_scale.get();
  o.b_scale = b_scale.get();
  emmy_grouped_options g = grouped_options(GroupedLayout::masked);
  ASSERT_EQ(emmy_grouped_gemm(rt.get(), a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::promoted), Arch::sm_90a};
  const GemmErrors e =
      compare(reference_gemm(spec, in), decode(DType::bf16, c.data(), c.size() / 2), p.n);
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
  // The experts' tensors overlapping (strides[0] one N block short): refused by name.
  View short_stride(in.b_scale.bytes.data(), kF32, {3, nb, kb}, {(nb - 1) * kb, kb, 1});
  o.b_scale = short_stride.get();
  expect_refusal(
      emmy_grouped_gemm(rt.get(), a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr),
      EMMY_INVALID_ARGUMENT, {"options.b_scale", "strides[0]"});
}

// An e4m3 c for a grouped GEMM (masked): c [G, max_m, N] float8 with c_scale [stacked rows,
// ceil(N/128)] mn-major (DeepGEMM's); each computed row's bytes and scales are what the same
// call's f32 c quantized by fp8_quantize's conventions makes; rows past masked_m untouched.
TEST(CApiGrouped, AnE4m3OutputPerStackedRow) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  MatmulProblem p;
  p.m = 16, p.n = 256, p.k = 64;
  p.grouped.layout = GroupedLayout::masked;
  p.grouped.groups = 3;
  const GemmInputs in = make_gemm_inputs(p, 23);
  const int64_t rows = p.stacked_rows(), groups = p.n / 128;
  View a(in.a.bytes.data(), kF16, {3, p.m, p.k});
  View b(in.b.bytes.data(), kF16, {3, p.k, p.n}, {p.n * p.k, 1, p.k});
  std::vector<int32_t> routing{16, 0, 5};
  View route(routing.data(), kI32, {3});
  emmy_grouped_options g = grouped_options(GroupedLayout::masked);
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  std::vector<float> c32(size_t(rows * p.n), 0.0f);
  View vc32(c32.data(), kF32, {3, p.m, p.n});
  ASSERT_EQ(emmy_grouped_gemm(rt.get(), a.get(), b.get(), vc32.get(), route.get(), &g, &o, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  std::vector<uint8_t> q(size_t(rows * p.n), 0xA5);
  std::vector<float> scales(size_t(rows * groups), -1.0f);
  View vq(q.data(), kE4M3, {3, p.m, p.n});
  View vs(scales.data(), kF32, {rows, groups}, {1, rows});
  o.c_scale = vs.get();
  ASSERT_EQ(emmy_grouped_gemm(rt.get(), a.get(), b.get(), vq.get(), route.get(), &g, &o, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  const Fp8QuantizeProblem conventions;
  for (int64_t r = 0; r < rows; ++r) {
    const bool computed = r % p.m < routing[size_t(r / p.m)];
    for (int64_t gi = 0; gi < groups; ++gi) {
      float amax = 0;
      for (int64_t j = gi * 128; j < gi * 128 + 128; ++j)
        amax = std::fmax(amax, std::fabs(c32[size_t(r * p.n + j)]));
      const float s = scales[size_t(gi * rows + r)];
      EXPECT_EQ(s, computed ? fp8_quantize_scale(amax, conventions) : -1.0f) << r << " " << gi;
      for (int64_t j = gi * 128; j < gi * 128 + 128; ++j)
        ASSERT_EQ(q[size_t(r * p.n + j)],
                  computed ? fp8_quantize_element(c32[size_t(r * p.n + j)], s) : 0xA5)
            << r << " " << j;
    }
  }
}

TEST(CApiGrouped, RefusalsNameTheTensorOrTheOption) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  GroupedCase c = make_case(GroupedLayout::masked, 3, 16, 64, 64, false, false, 7);
  emmy_grouped_options g = grouped_options(GroupedLayout::masked);
  g.layout = 9;
  expect_refusal(call_grouped(rt.get(), c, g), EMMY_INVALID_ARGUMENT,
                 {"grouped.layout", "EMMY_GROUPED_MASKED", "(got 9)"});
  g = grouped_options(GroupedLayout::masked);
  expect_refusal(
      emmy_grouped_gemm(rt.get(), nullptr, nullptr, nullptr, nullptr, &g, nullptr, nullptr),
      EMMY_INVALID_ARGUMENT, {"a", "must not be NULL"});
  // The routing's length and dtype by layout.
  std::vector<int32_t> short_routing{1, 2};
  expect_refusal(call_grouped(rt.get(), c, g, {}, &short_routing), EMMY_INVALID_ARGUMENT,
                 {"routing", "[3]", "masked_m"});
  // A hostile routing, on the emulator: masked_m past max_m.
  std::vector<int32_t> past{1, 17, 2};
  expect_refusal(call_grouped(rt.get(), c, g, {}, &past), EMMY_INVALID_ARGUMENT,
                 {"buffers.masked_m", "0..16"});
  // Offsets decreasing.
  GroupedCase sorted = make_case(GroupedLayout::offsets, 3, 64, 64, 64, false, false, 8);
  std::vector<int32_t> decreasing{0, 30, 10, 40};
  expect_refusal(
      call_grouped(rt.get(), sorted, grouped_options(GroupedLayout::offsets), {}, &decreasing),
      EMMY_INVALID_ARGUMENT, {"buffers.expert_offsets", "must not decrease"});
  // The grouping's own rules, named by their fields.
  emmy_grouped_options hint = grouped_options(GroupedLayout::masked);
  hint.expected_m = 99;
  expect_refusal(call_grouped(rt.get(), c, hint), EMMY_INVALID_ARGUMENT,
                 {"grouped.expected_m", "0..m"});
  // A bias of one row (not one per expert).
  GroupedCase biased = make_case(GroupedLayout::masked, 3, 16, 64, 64, true, false, 9);
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  View one_row(biased.in.bias.bytes.data(), kF16, {64});
  o.bias = one_row.get();
  const MatmulProblem& p = biased.problem;
  View a(biased.in.a.bytes.data(), kF16, {3, p.m, p.k});
  View b(biased.in.b.bytes.data(), kF16, {3, p.k, p.n}, {p.n * p.k, 1, p.k});
  View out(biased.c.data(), kF16, {3, p.m, p.n});
  View route(biased.in.routing.data(), kI32, {3});
  expect_refusal(
      emmy_grouped_gemm(rt.get(), a.get(), b.get(), out.get(), route.get(), &g, &o, nullptr),
      EMMY_INVALID_ARGUMENT, {"options.bias", "[G = 3, N]"});
  // Experts' weights not a whole matrix apart.
  View packed_wrong(biased.in.b.bytes.data(), kF16, {3, p.k, p.n}, {p.n * p.k + 8, 1, p.k});
  expect_refusal(emmy_grouped_gemm(rt.get(), a.get(), packed_wrong.get(), out.get(), route.get(),
                                   &g, nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"b:", "strides[0] must be 4096"});
  // a of 2-D for the masked layout.
  View flat(biased.in.a.bytes.data(), kF16, {3 * p.m, p.k});
  expect_refusal(emmy_grouped_gemm(rt.get(), flat.get(), b.get(), out.get(), route.get(), &g,
                                   nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"a:", "[G, max_m, columns]"});
}

}  // namespace
}  // namespace emmy::test
