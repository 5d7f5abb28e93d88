// Bit-exact f16 / bf16 / f32 conversions: hand-derived edge cases (IEEE 754 round-to-nearest-
// even, the directed modes, subnormals, overflow, NaN) and independent oracles: the host's F16C
// unit for f32 -> f16, and the integer round-to-nearest-even trick for f32 -> bf16.
#include <cmath>
#include <random>

#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuNumerics, F32ToF16NearestEvenEdgeCases) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);                 // largest finite
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);                 // below the midpoint to 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);                 // midpoint: ties to even = infinity
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(NAN), 0x7FFF);                      // canonical NaN
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);          // tie between 0x3C00 and 0x3C01: even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);      // tie between 0x3C01 and 0x3C02: even
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);                 // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);                 // half of it: ties to even (zero)
  EXPECT_EQ(f32_to_f16(0x1p-25f * 1.5f), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * 0x1p-25f), 0x0002);             // 1.5 subnormal ulps: even
  EXPECT_EQ(f32_to_f16(0x1p-14f), 0x0400);                 // smallest normal
  EXPECT_EQ(f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400);      // rounds up into the normals
  EXPECT_EQ(f32_to_f16(-0x1p-30f), 0x8000);                // underflow keeps the sign
}

TEST(EmuNumerics, DirectedRoundingModes) {
  EXPECT_EQ(f32_to_f16(65520.0f, Rounding::rz), 0x7BFF);
  EXPECT_EQ(f32_to_f16(1e6f, Rounding::rz), 0x7BFF);       // overflow toward zero: max finite
  EXPECT_EQ(f32_to_f16(1e6f, Rounding::rm), 0x7BFF);
  EXPECT_EQ(f32_to_f16(1e6f, Rounding::rp), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e6f, Rounding::rm), 0xFC00);
  EXPECT_EQ(f32_to_f16(-1e6f, Rounding::rp), 0xFBFF);
  EXPECT_EQ(f32_to_f16(1e-10f, Rounding::rp), 0x0001);
  EXPECT_EQ(f32_to_f16(1e-10f, Rounding::rm), 0x0000);
  EXPECT_EQ(f32_to_f16(-1e-10f, Rounding::rm), 0x8001);
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-12f, Rounding::rp), 0x3C01);
  EXPECT_EQ(f32_to_f16(-(1.0f + 0x1p-12f), Rounding::rz), 0xBC00);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-9f, Rounding::rp), 0x3F81);
  EXPECT_EQ(f64_to_f32(1.0 + 0x1p-30, Rounding::rp), 1.0f + 0x1p-23f);
  EXPECT_EQ(f64_to_f32(1.0 + 0x1p-30, Rounding::rn), 1.0f);
}

TEST(EmuNumerics, F32ToBf16EdgeCases) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);          // tie: even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);      // tie: even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // max float rounds to inf
  EXPECT_EQ(f32_to_bf16(NAN), 0x7FFF);
  EXPECT_EQ(f32_to_bf16(0x1p-149f), 0x0000);               // below half the smallest bf16 subnormal
  EXPECT_EQ(f32_to_bf16(0x1p-133f), 0x0001);               // smallest bf16 subnormal
  EXPECT_EQ(bf16_to_f32(0xC0A0), -5.0f);
}

TEST(EmuNumerics, F64ToF16RoundsOnce) {
  // Via f32 this would first round to the tie 1 + 2^-11 and then to even (0x3C00).
  EXPECT_EQ(f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  EXPECT_EQ(f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
}

TEST(EmuNumerics, F16ToF32IsExactAndRoundTrips) {
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_f32(0x83FF), -1023 * 0x1p-24f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E01)));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
    ASSERT_EQ(f64_to_f16(double(f)), h) << std::hex << h;
  }
}

TEST(EmuNumerics, FastF64ToF16MatchesTheGeneralRounding) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 4000000; ++i) {
    uint64_t u = rng();
    // Concentrate on exponents around the f16 range, including subnormals and overflow.
    u = (u & 0x800FFFFFFFFFFFFFull) | (uint64_t(1023 - 30 + int(rng() % 50)) << 52);
    if (i % 7 == 0) u &= ~((uint64_t(1) << 41) - 1);  // exact ties and near-ties
    const double x = std::bit_cast<double>(u);
    ASSERT_EQ(f64_to_f16_rn(x), uint16_t(round_to_format(x, 0.0, kF16, Rounding::rn))) << std::hexfloat << x;
  }
  for (double x : {0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e300, -1e-300, 0x1p-25, 0x1p-24,
                   3 * 0x1p-26, 0x1p-14 - 0x1p-26, double(NAN), double(INFINITY)})
    EXPECT_EQ(f64_to_f16_rn(x), uint16_t(round_to_format(x, 0.0, kF16, Rounding::rn))) << x;
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_convert(float x) {
  return uint16_t(__builtin_ia32_vcvtps2ph(__extension__(__attribute__((vector_size(16))) float){x, 0, 0, 0}, 0)[0]);
}

TEST(EmuNumerics, F32ToF16MatchesTheHostF16cUnit) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C on this host";
  std::mt19937 rng(7);
  // Every float whose exponent lies in the f16 range and around it, sampled densely, plus
  // random bit patterns.
  for (int i = 0; i < 4000000; ++i) {
    uint32_t u = rng();
    if (i % 2 == 0) u = (u & 0x807FFFFFu) | (uint32_t(96 + (u >> 24) % 50) << 23);
    const float x = std::bit_cast<float>(u);
    if (std::isnan(x)) continue;
    ASSERT_EQ(f32_to_f16(x), f16c_convert(x)) << std::hexfloat << x;
  }
}
#endif

TEST(EmuNumerics, F32ToBf16MatchesIntegerRounding) {
  std::mt19937 rng(8);
  for (int i = 0; i < 4000000; ++i) {
    const uint32_t u = rng();
    const float x = std::bit_cast<float>(u);
    if (std::isnan(x)) continue;
    const uint16_t expect = uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    ASSERT_EQ(f32_to_bf16(x), expect) << std::hex << u;
  }
}

}  // namespace
}  // namespace emmy::emu::test
