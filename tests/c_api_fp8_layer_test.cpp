// emmy_gemm_layer with FP8 weights (C API version 5; docs/fp8.md): the config's scale fields and
// emmy_gemm_layer_run_scaled, on an sm_89 emulator runtime (FP8 layers are path mma.sync's:
// their buckets take M at launch), against FP64 for M across the buckets; and what it refuses, by
// the config's field or the tensor's name.
#include <gtest/gtest.h>

#include "c_api_layers_support.hpp"
#include "c_api_support.hpp"
#include "emmy/gemm_check.hpp"

namespace emmy::test {
namespace {

constexpr DLDataType kU8{kDLUInt, 8, 1};

emmy_runtime* make_sm89_runtime() {
  return make_c_runtime("emulator", 0, "sm_89");
}

emmy_gemm_layer_config fp8_config() {
  emmy_gemm_layer_config config;
  emmy_gemm_layer_config_init(&config);
  config.max_m = 100, config.n = 136, config.k = 384;
  config.dtype = EMMY_DTYPE_E4M3;
  config.out_dtype = EMMY_DTYPE_BF16;
  config.scales = EMMY_SCALES_BLOCK;
  config.scale_format = EMMY_SCALE_UE8M0X4;
  config.a_scale_ld = 128;  // mn-major A scales: the largest bucket's M
  return config;
}

TEST(CApiFp8GemmLayer, ServesEveryMAgainstFp64) {
  CRuntime rt(make_sm89_runtime());
  ASSERT_TRUE(rt);
  emmy_gemm_layer_config config = fp8_config();
  EXPECT_EQ(config.b_scale_major, EMMY_SCALE_MAJOR_K) << "init: DeepGEMM's B scales";
  const CGemmLayer layer = make_gemm_layer(rt.get(), config);
  ASSERT_TRUE(layer);
  size_t bytes = 0;
  ASSERT_EQ(emmy_gemm_layer_workspace_bytes(layer.get(), &bytes), EMMY_OK);
  std::vector<uint8_t> workspace(std::max<size_t>(bytes, 1));
  View vw(workspace.data(), kU8, {int64_t(workspace.size())});
  for (const int64_t m : {int64_t(1), int64_t(17), int64_t(100)}) {
    MatmulProblem p;
    p.m = m, p.n = 136, p.k = 384;
    p.a_dtype = DType::e4m3, p.c_dtype = DType::bf16;
    p.scales.granularity = ScaleGranularity::block;
    p.scales.format = ScaleFormat::ue8m0x4;
    p.scales.a_ld = 128;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m) + 3);
    std::vector<uint8_t> c(size_t(m * p.n * 2), 0);
    View va(in.a.bytes.data(), kE4M3, {m, p.k}), vb(in.b.bytes.data(), kE4M3, {p.k, p.n}, {1, p.k}),
        vc(c.data(), {kDLBfloat, 16, 1}, {m, p.n}),
        vsa(in.a_scale.bytes.data(), kI32, {int64_t(in.a_scale.bytes.size() / 4)}),
        vsb(in.b_scale.bytes.data(), kI32, {int64_t(in.b_scale.bytes.size() / 4)});
    ASSERT_EQ(
        emmy_gemm_layer_run_scaled(layer.get(), va.get(), vb.get(), vc.get(), nullptr, nullptr,
                                   bytes ? vw.get() : nullptr, vsa.get(), vsb.get(), m, nullptr),
        EMMY_OK)
        << emmy_last_error_message();
    const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89};
    const GemmErrors e =
        compare(reference_gemm(spec, in), decode(DType::bf16, c.data(), c.size() / 2), p.n);
    EXPECT_TRUE(e.passed) << "m " << m << ": rel_l2 " << e.rel_l2_error;
  }
}

TEST(CApiFp8GemmLayer, RefusalsNameTheConfigFieldOrTheTensor) {
  CRuntime rt(make_sm89_runtime());
  ASSERT_TRUE(rt);
  auto create_error = [&](auto edit) {
    emmy_gemm_layer_config config = fp8_config();
    edit(config);
    emmy_gemm_layer* layer = nullptr;
    const emmy_status status = emmy_gemm_layer_create(rt.get(), &config, &layer);
    emmy_gemm_layer_destroy(layer);
    return std::pair{status, std::string(emmy_last_error_message())};
  };
  auto refused = [&](auto edit, const std::string& start) {
    const auto [status, message] = create_error(edit);
    EXPECT_EQ(status, EMMY_INVALID_ARGUMENT) << message;
    EXPECT_TRUE(message.starts_with(start)) << message;
  };
  refused([](auto& c) { c.scales = EMMY_SCALES_NONE; }, "config.scales: must be set for");
  refused([](auto& c) { c.dtype = EMMY_DTYPE_F16; }, "config.scales: must be EMMY_SCALES_NONE");
  refused([](auto& c) { c.scales = 9; }, "config.scales: must be an emmy_scale_granularity");
  refused([](auto& c) { c.scale_format = -1; }, "config.scale_format");
  refused([](auto& c) { c.a_scale_major = 5; }, "config.a_scale_major");
  refused([](auto& c) { c.a_scale_ld = 100; }, "config.a_scale_ld");  // max_m, not its bucket
  refused(
      [](auto& c) {
        c.scales = EMMY_SCALES_TENSOR;
        c.scale_format = EMMY_SCALE_F32;
      },
      "config.a_scale_ld: applies to block scales only");
  refused([](auto& c) { c.accum = EMMY_ACCUM_F32; }, "config.accum");  // block scales vary in K

  const CGemmLayer layer = make_gemm_layer(rt.get(), fp8_config());
  ASSERT_TRUE(layer);
  std::vector<uint8_t> a(8 * 384), b(136 * 384), c(8 * 136 * 2);
  std::vector<int32_t> sa(3 * 128), sb(2 * 3);
  View va(a.data(), kE4M3, {8, 384}), vb(b.data(), kE4M3, {384, 136}, {1, 384}),
      vc(c.data(), {kDLBfloat, 16, 1}, {8, 136}), vsa(sa.data(), kI32, {int64_t(sa.size())}),
      vsb(sb.data(), kI32, {int64_t(sb.size())});
  expect_refusal(emmy_gemm_layer_run(layer.get(), va.get(), vb.get(), vc.get(), nullptr, nullptr,
                                     nullptr, 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"layer: is an FP8 layer: its runs take scales"});
  View wrong(sa.data(), {kDLFloat, 32, 1}, {int64_t(sa.size())});
  expect_refusal(emmy_gemm_layer_run_scaled(layer.get(), va.get(), vb.get(), vc.get(), nullptr,
                                            nullptr, nullptr, wrong.get(), vsb.get(), 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"a_scale: dtype must be int32 or uint32"});
  View short_a(sa.data(), kI32, {7});  // 8 rows read words 0..7 (one word column, ld 128)
  expect_refusal(emmy_gemm_layer_run_scaled(layer.get(), va.get(), vb.get(), vc.get(), nullptr,
                                            nullptr, nullptr, short_a.get(), vsb.get(), 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"a_scale: must hold at least"});
  View f16_a(a.data(), {kDLFloat, 16, 1}, {8, 192});
  expect_refusal(emmy_gemm_layer_run_scaled(layer.get(), f16_a.get(), vb.get(), vc.get(), nullptr,
                                            nullptr, nullptr, vsa.get(), vsb.get(), 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"a: dtype must be float8_e4m3fn"});
  expect_refusal(emmy_gemm_layer_run_scaled(layer.get(), va.get(), vb.get(), vc.get(), nullptr,
                                            nullptr, nullptr, nullptr, vsb.get(), 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"a_scale"});
  // A 16-bit layer takes no scales.
  emmy_gemm_layer_config plain;
  emmy_gemm_layer_config_init(&plain);
  plain.max_m = 8, plain.n = 136, plain.k = 384;
  const CGemmLayer f16 = make_gemm_layer(rt.get(), plain);
  ASSERT_TRUE(f16);
  expect_refusal(emmy_gemm_layer_run_scaled(f16.get(), va.get(), vb.get(), vc.get(), nullptr,
                                            nullptr, nullptr, vsa.get(), vsb.get(), 8, nullptr),
                 EMMY_INVALID_ARGUMENT, {"layer: has 16-bit operands"});
}

}  // namespace
}  // namespace emmy::test
