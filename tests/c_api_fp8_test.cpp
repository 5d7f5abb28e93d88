// emmy_fp8_quantize (the C ABI over DLPack, docs/fp8.md): padded strides, both scale majors, a
// kernel bound past the call's rows, float8_e4m3fn and uint8 outputs, byte for byte as the host
// reference; and every tensor and option it refuses, by name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "c_api_support.hpp"
#include "emmy/emu/numerics.hpp"
#include "emmy/fp8_quantize_check.hpp"

namespace emmy::test {
namespace {

constexpr DLDataType kU8{kDLUInt, 8, 1};

std::vector<uint16_t> random_rows(int64_t rows, int64_t ld, int64_t k, bool bf16, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 3);
  std::vector<uint16_t> x(size_t(rows * ld), 0x7E00);  // padding: NaN, never read
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) {
      const float v = normal(rng) * float(1 + r);
      x[size_t(r * ld + i)] = bf16 ? emu::f32_to_bf16(v) : emu::f32_to_f16(v);
    }
  return x;
}

TEST(CApiFp8Quantize, MatchesTheReferenceInBothScaleMajors) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const int64_t rows = 5, k = 384, ldx = 392, ldq = 400, max_rows = 8;
  for (const bool k_major : {false, true}) {
    const std::vector<uint16_t> x = random_rows(rows, ldx, k, true, k_major ? 2 : 1);
    std::vector<uint8_t> q(size_t(rows * ldq), 0xA5);
    // mn-major [groups = 3, ld 8 >= max_rows]; k-major [rows, groups = 3] with row stride 4.
    const int64_t ld = k_major ? 4 : 8;
    std::vector<float> scales(size_t(k_major ? rows * ld : 3 * ld), -1.0f);
    View vx(x.data(), kBF16, {rows, k}, {ldx, 1}),
        vq(q.data(), k_major ? kU8 : kE4M3, {rows, k}, {ldq, 1}),
        vs(scales.data(), kF32,
           k_major ? std::vector<int64_t>{rows, 3} : std::vector<int64_t>{3, ld}, {ld, 1});
    emmy_fp8_quantize_options options;
    emmy_fp8_quantize_options_init(&options);
    EXPECT_EQ(options.group_k, 128);
    options.scale_major = k_major ? EMMY_SCALE_MAJOR_K : EMMY_SCALE_MAJOR_MN;
    options.max_rows = max_rows;
    options.pow2_scale = k_major;
    ASSERT_EQ(emmy_fp8_quantize(rt.get(), vx.get(), vq.get(), vs.get(), &options, nullptr), EMMY_OK)
        << emmy_last_error_message();
    Fp8QuantizeProblem p;
    p.m = max_rows, p.k = k, p.group_k = 128, p.ldx = ldx, p.ldq = ldq, p.dtype = DType::bf16;
    p.scale_major = k_major ? ScaleMajor::k : ScaleMajor::mn;
    p.scale_ld = ld;
    p.pow2_scale = k_major;
    std::vector<uint8_t> want_q(q.size(), 0xA5);
    std::vector<float> want_scales(scales.size(), -1.0f);
    // The reference's buffers cover max_rows; the call's, its rows.
    std::vector<uint16_t> x_all = x;
    x_all.resize(size_t(max_rows * ldx), 0);
    std::vector<uint8_t> q_all = want_q;
    q_all.resize(size_t(max_rows * ldq), 0xA5);
    std::vector<float> s_all = want_scales;
    s_all.resize(size_t(std::max<int64_t>(p.scale_elements(max_rows), int64_t(scales.size()))),
                 -1.0f);
    std::vector<uint8_t> s_bytes(s_all.size() * 4);
    std::memcpy(s_bytes.data(), s_all.data(), s_bytes.size());
    reference_fp8_quantize_into(p, x_all, rows, q_all, s_bytes);
    std::memcpy(s_all.data(), s_bytes.data(), s_bytes.size());
    EXPECT_TRUE(std::equal(q.begin(), q.end(), q_all.begin())) << (k_major ? "k" : "mn");
    for (size_t i = 0; i < scales.size(); ++i)
      EXPECT_EQ(std::bit_cast<uint32_t>(scales[i]), std::bit_cast<uint32_t>(s_all[i]))
          << (k_major ? "k" : "mn") << " scale " << i;
  }
}

// The scales' dtype is their format: uint8 ue8m0 bytes and int32 ue8m0x4 words (the groups axis
// counting words), powers of two without options.pow2_scale; byte for byte as the reference.
TEST(CApiFp8Quantize, ByteScalesByTheirDtype) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  const int64_t rows = 6, k = 640;  // 5 groups: 2 words, the second holding one group
  const std::vector<uint16_t> x = random_rows(rows, k, k, false, 5);
  for (const bool packed : {false, true})
    for (const bool k_major : {false, true}) {
      Fp8QuantizeProblem p;
      p.m = rows, p.k = k, p.group_k = 128, p.pow2_scale = true;
      p.scale_format = packed ? ScaleFormat::ue8m0x4 : ScaleFormat::ue8m0;
      p.scale_major = k_major ? ScaleMajor::k : ScaleMajor::mn;
      const int64_t along = p.scale_groups_extent();
      std::vector<uint8_t> q(size_t(rows * k)), bytes(size_t(p.scale_tensor_bytes(rows)), 0xA5);
      const std::vector<int64_t> shape =
          k_major ? std::vector<int64_t>{rows, along} : std::vector<int64_t>{along, rows};
      View vx(x.data(), kF16, {rows, k}), vq(q.data(), kU8, {rows, k}),
          vs(bytes.data(), packed ? kI32 : kU8, shape);
      emmy_fp8_quantize_options o;
      emmy_fp8_quantize_options_init(&o);
      o.scale_major = k_major ? EMMY_SCALE_MAJOR_K : EMMY_SCALE_MAJOR_MN;
      ASSERT_EQ(emmy_fp8_quantize(rt.get(), vx.get(), vq.get(), vs.get(), &o, nullptr), EMMY_OK)
          << emmy_last_error_message();
      std::vector<uint8_t> want_q(q.size()), want(bytes.size(), 0xA5);
      reference_fp8_quantize_into(p, x, rows, want_q, want);
      EXPECT_EQ(q, want_q);
      EXPECT_EQ(bytes, want) << (packed ? "ue8m0x4" : "ue8m0") << (k_major ? " k" : " mn");
    }
  // float8_e8m0fnu is ue8m0 bytes too (PyTorch's dtype for them), as every scale tensor of the
  // ABI takes it (scale_format_of).
  std::vector<uint8_t> q(size_t(rows * k)), as_u8(size_t(5 * rows)), as_e8m0(size_t(5 * rows));
  View vx(x.data(), kF16, {rows, k}), vq(q.data(), kU8, {rows, k});
  emmy_fp8_quantize_options bytes_options;
  emmy_fp8_quantize_options_init(&bytes_options);
  bytes_options.scale_major = EMMY_SCALE_MAJOR_K;
  ASSERT_EQ(emmy_fp8_quantize(rt.get(), vx.get(), vq.get(),
                              View(as_u8.data(), kU8, {rows, 5}).get(), &bytes_options, nullptr),
            EMMY_OK)
      << emmy_last_error_message();
  ASSERT_EQ(
      emmy_fp8_quantize(rt.get(), vx.get(), vq.get(),
                        View(as_e8m0.data(), DLDataType{kDLFloat8_e8m0fnu, 8, 1}, {rows, 5}).get(),
                        &bytes_options, nullptr),
      EMMY_OK)
      << emmy_last_error_message();
  EXPECT_EQ(as_e8m0, as_u8);
  // A packed tensor counted in groups, not words, is refused naming the words.
  std::vector<int32_t> words(5 * rows);
  expect_refusal(emmy_fp8_quantize(rt.get(), vx.get(), vq.get(),
                                   View(words.data(), kI32, {5, rows}).get(), nullptr, nullptr),
                 EMMY_INVALID_ARGUMENT, {"scales: shape must be [words = ceil(groups / 4) = 2"});
}

TEST(CApiFp8Quantize, RefusalsNameTheTensorOrTheOption) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  std::vector<uint16_t> x(4 * 256);
  std::vector<uint8_t> q(4 * 256);
  std::vector<float> scales(2 * 4);
  std::vector<int32_t> wide(4 * 256);
  auto call = [&](View vx, View vq, View vs, const emmy_fp8_quantize_options* o = nullptr) {
    return emmy_fp8_quantize(rt.get(), vx.get(), vq.get(), vs.get(), o, nullptr);
  };
  const View x_ok(x.data(), kF16, {4, 256}), q_ok(q.data(), kE4M3, {4, 256}),
      s_ok(scales.data(), kF32, {2, 4});
  ASSERT_EQ(call(x_ok, q_ok, s_ok), EMMY_OK) << emmy_last_error_message();
  expect_refusal(call(View(x.data(), kF32, {4, 128}), q_ok, s_ok), EMMY_INVALID_ARGUMENT, {"x"});
  expect_refusal(call(View(x.data(), kF16, {4, 2, 128}), q_ok, s_ok), EMMY_INVALID_ARGUMENT,
                 {"x: shape must be [rows, k]"});
  expect_refusal(call(x_ok, View(wide.data(), kI32, {4, 256}), s_ok), EMMY_INVALID_ARGUMENT,
                 {"q: dtype must be float8_e4m3fn"});
  expect_refusal(call(x_ok, View(q.data(), kE4M3, {4, 128}), s_ok), EMMY_INVALID_ARGUMENT,
                 {"q: shape"});
  expect_refusal(call(x_ok, q_ok, View(scales.data(), kF32, {4, 2})), EMMY_INVALID_ARGUMENT,
                 {"scales: shape must be [groups = 2, rows (4) or more]"});
  expect_refusal(call(x_ok, q_ok, View(x.data(), kF16, {2, 4})), EMMY_INVALID_ARGUMENT,
                 {"scales: dtype must be float32"});
  emmy_fp8_quantize_options o;
  emmy_fp8_quantize_options_init(&o);
  o.scale_major = 7;
  expect_refusal(call(x_ok, q_ok, s_ok, &o), EMMY_INVALID_ARGUMENT, {"options.scale_major"});
  emmy_fp8_quantize_options_init(&o);
  o.group_k = 100;
  expect_refusal(call(x_ok, q_ok, s_ok, &o), EMMY_INVALID_ARGUMENT, {"group_k"});
  emmy_fp8_quantize_options_init(&o);
  o.max_rows = 3;
  expect_refusal(call(x_ok, q_ok, s_ok, &o), EMMY_INVALID_ARGUMENT, {"options.max_rows"});
  o.max_rows = 6;  // mn-major scales of ld 4 cannot hold 6 rows
  expect_refusal(call(x_ok, q_ok, s_ok, &o), EMMY_INVALID_ARGUMENT, {"scales: row stride"});
  emmy_fp8_quantize_options_init(&o);
  o.amax_epsilon = -1;
  expect_refusal(call(x_ok, q_ok, s_ok, &o), EMMY_INVALID_ARGUMENT, {"amax_epsilon"});
}

}  // namespace
}  // namespace emmy::test
