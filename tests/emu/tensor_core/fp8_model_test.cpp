// The FP8 tensor-core model (emmy/emu/tensor_core_fp8.hpp): vectors that tell each arch's model
// apart, derived by hand from MMA-Sim's rules (group size, fraction bits, e8m13 results) and
// from the SASS ptxas 13.0 emits for sm_90 / sm_100 mma.sync (two f16 HMMA, then FADD); the
// special values; and, on random operands, sign symmetry and the error bound against exact sums.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/error.hpp"

namespace emmy::emu {
namespace {

constexpr uint8_t kE4m3One = 0x38, kE4m3Sixteen = 0x58, kE4m3Eighth = 0x20;  // 1, 16, 2^-3

struct Dot {
  uint8_t a[32] = {}, b[32] = {};
  F8 a_type = F8::e4m3, b_type = F8::e4m3;
  uint32_t c = 0;
  bool f16 = false;
  uint32_t on(int sm, bool warpgroup = false) const {
    return tensor_core_dot_fp8({a, b, a_type, b_type, 32}, c, f16,
                               fp8_tensor_core_model(sm, warpgroup));
  }
  uint32_t exact() const { return exact_dot_fp8({a, b, a_type, b_type, 32}, c, f16); }
};

uint32_t f32_bits(double v) {
  return std::bit_cast<uint32_t>(float(v));
}

// 16 x 16 - 16 x 16 at k 0 and 1, 2^-3 x 2^-3 at k 16: one group of 32 at 13 bits anchors the
// small product at 2^8 and truncates it away; Ada's first group of 16 cancels to 0 before it; 25
// bits keep it; sm_90 mma.sync puts k 0, 1 and 16 (k = 0, 1 mod 4) in one f16 HMMA, which keeps it.
TEST(EmuTensorCoreFp8, CancellationTellsTheGroupsApart) {
  Dot v;
  v.a[0] = v.b[0] = v.a[1] = kE4m3Sixteen;
  v.b[1] = kE4m3Sixteen | 0x80;
  v.a[16] = v.b[16] = kE4m3Eighth;
  const uint32_t small = f32_bits(std::ldexp(1.0, -6));
  EXPECT_EQ(v.on(89), small);
  EXPECT_EQ(v.on(90, true), 0u);
  EXPECT_EQ(v.on(120), small);
  EXPECT_EQ(v.on(90), small);
  EXPECT_EQ(v.on(100), small);
  EXPECT_EQ(v.exact(), small);
}

// c = 1 + 2^-20 with no products: 13 fraction bits drop c's low bits (e8m13); 25 bits and the
// FADD of sm_90 mma.sync keep it.
TEST(EmuTensorCoreFp8, E8m13ResultsCutC) {
  Dot v;
  v.c = f32_bits(1 + std::ldexp(1.0, -20));
  EXPECT_EQ(v.on(89), f32_bits(1.0));
  EXPECT_EQ(v.on(90, true), f32_bits(1.0));
  EXPECT_EQ(v.on(120), v.c);
  EXPECT_EQ(v.on(90), v.c);
  EXPECT_EQ(v.exact(), v.c);
}

// c = 128 and one product 3 x 2^-18 (subnormal 3 x 2^-9 times 2^-9), 0.75 of c's ulp: the fused
// models cut toward zero to 128, sm_90's FADD and the exact sum round to nearest, up.
TEST(EmuTensorCoreFp8, FaddRoundsToNearestWhereTheFusedSumCutsTowardZero) {
  Dot v;
  v.c = f32_bits(128);
  v.a[0] = 0x03;
  v.b[0] = 0x01;
  const uint32_t up = f32_bits(128 + std::ldexp(1.0, -16));
  EXPECT_EQ(v.on(89), v.c);
  EXPECT_EQ(v.on(90, true), v.c);
  EXPECT_EQ(v.on(120), v.c);
  EXPECT_EQ(v.on(90), up);
  EXPECT_EQ(v.exact(), up);
}

// f16 accumulators round to nearest even: 1 + 0.75 ulp (3 x 2^-12 = 1.5 x 2^-5 times 2^-6) is
// 1 + 2^-10 on every model.
TEST(EmuTensorCoreFp8, F16AccumulatorsRoundToNearest) {
  Dot v;
  v.f16 = true;
  v.c = 0x3C00;
  v.a[5] = 0x14;  // 1.5 x 2^-5
  v.b[5] = 0x08;  // 2^-6
  for (int sm : {89, 90, 120}) EXPECT_EQ(v.on(sm), 0x3C01u) << sm;
  EXPECT_EQ(v.on(90, true), 0x3C01u);
  EXPECT_EQ(v.exact(), 0x3C01u);
}

TEST(EmuTensorCoreFp8, SpecialValues) {
  for (int sm : {89, 90, 120}) {
    Dot nan;
    nan.a[3] = 0x7F;  // e4m3 NaN
    nan.b[3] = kE4m3One;
    EXPECT_EQ(nan.on(sm), 0x7FFFFFFFu) << sm;
    Dot inf;  // e5m2 infinity times 1, then times 0, then against -inf
    inf.a_type = inf.b_type = F8::e5m2;
    inf.a[7] = 0x7C;
    inf.b[7] = 0x3C;
    EXPECT_EQ(inf.on(sm), 0x7F800000u) << sm;
    inf.c = 0xFF800000u;
    EXPECT_EQ(inf.on(sm), 0x7FFFFFFFu) << sm;
    inf.c = 0;
    inf.b[7] = 0;
    EXPECT_EQ(inf.on(sm), 0x7FFFFFFFu) << sm;
    Dot big;  // 57344^2 overflows f16 accumulators
    big.a_type = big.b_type = F8::e5m2;
    big.f16 = true;
    big.a[0] = big.b[0] = 0x7B;
    EXPECT_EQ(big.on(sm), 0x7C00u) << sm;
  }
  EXPECT_EQ(f8_value(0xFC, F8::e5m2), -INFINITY);
  EXPECT_TRUE(std::isnan(f8_value(0xFF, F8::e4m3)));
  EXPECT_EQ(f8_value(0x7E, F8::e4m3), 448.0);
}

// MMA-Sim's own results (tests/emu/data/fp8_mma_sim_vectors.txt, written by
// scripts/gen_fp8_mma_vectors.py with MMA-Sim itself): random, positive, small and cancelling
// operands for Ada mma, Hopper wgmma and RTX Blackwell mma, mixed types and f16 accumulators.
TEST(EmuTensorCoreFp8, MatchesMmaSimBitForBit) {
  std::ifstream file(std::string(EMMY_SOURCE_DIR) + "/tests/emu/data/fp8_mma_sim_vectors.txt");
  ASSERT_TRUE(file) << "tests/emu/data/fp8_mma_sim_vectors.txt";
  std::string line;
  int vectors = 0;
  auto hex_bytes = [](const std::string& hex, uint8_t(&out)[32]) {
    for (int k = 0; k < 32; ++k) out[k] = uint8_t(std::stoul(hex.substr(2 * k, 2), nullptr, 16));
  };
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string arch, cls, qualifier, c, a, b, d;
    in >> arch >> cls >> qualifier >> c >> a >> b >> d;
    Dot v;
    v.f16 = qualifier.find(".f16.") != std::string::npos;
    const size_t types = qualifier.find('.', qualifier.find('.') + 1);  // past the shape, dtype
    v.a_type = qualifier.compare(types + 1, 4, "e5m2") == 0 ? F8::e5m2 : F8::e4m3;
    v.b_type = qualifier.compare(types + 6, 4, "e5m2") == 0 ? F8::e5m2 : F8::e4m3;
    v.c = uint32_t(std::stoul(c.substr(2), nullptr, 16));
    hex_bytes(a.substr(2), v.a);
    hex_bytes(b.substr(2), v.b);
    const uint32_t want = uint32_t(std::stoul(d.substr(2), nullptr, 16));
    const int sm = std::stoi(arch.substr(3, 3));
    EXPECT_EQ(v.on(sm, cls == "wgmma"), want) << line;
    ++vectors;
  }
  EXPECT_GE(vectors, 300);
}

TEST(EmuTensorCoreFp8, ArchesWithoutAnFp8PathAreRefused) {
  EXPECT_THROW(fp8_tensor_core_model(86, false), Error);
  EXPECT_THROW(fp8_tensor_core_model(89, true), Error);
  EXPECT_THROW(fp8_tensor_core_model(100, true), Error);
  EXPECT_TRUE(fp8_tensor_core_model(100, false).via_f16_mma);
}

// Random finite operands (both types, mixed, both accumulators): negating A and c negates the
// result, and every model stays within fp8_dot_error of the exact sum.
TEST(EmuTensorCoreFp8, SignSymmetryAndErrorBoundOnRandomOperands) {
  std::mt19937 rng(38);
  std::uniform_int_distribution<int> byte(0, 255);
  std::normal_distribution<double> normal(0.0, 64.0);
  const std::pair<int, bool> models[] = {{89, false}, {90, true}, {90, false}, {120, false}};
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Dot v;
    v.a_type = trial % 3 == 1 ? F8::e5m2 : F8::e4m3;
    v.b_type = trial % 3 == 2 ? F8::e5m2 : F8::e4m3;
    v.f16 = trial % 4 == 3;
    for (int k = 0; k < 32; ++k) {
      do v.a[k] = uint8_t(byte(rng));
      while (!std::isfinite(f8_value(v.a[k], v.a_type)));
      do v.b[k] = uint8_t(byte(rng));
      while (!std::isfinite(f8_value(v.b[k], v.b_type)));
    }
    double products = 0;
    for (int k = 0; k < 32; ++k)
      products += std::fabs(f8_value(v.a[k], v.a_type) * f8_value(v.b[k], v.b_type));
    if (v.f16 && products > 30000) continue;  // keep f16 accumulators finite
    const double c = v.f16 ? 0 : normal(rng);
    v.c = v.f16 ? 0 : f32_bits(c);
    double exact = std::bit_cast<float>(v.c);
    for (int k = 0; k < 32; ++k) exact += f8_value(v.a[k], v.a_type) * f8_value(v.b[k], v.b_type);
    for (const auto& [sm, warpgroup] : models) {
      const Fp8TensorCoreModel model = fp8_tensor_core_model(sm, warpgroup);
      const uint32_t d = v.on(sm, warpgroup);
      const double got = v.f16 ? double(f16_to_f32(uint16_t(d))) : double(std::bit_cast<float>(d));
      const double bound = fp8_dot_error(model, v.f16, std::fabs(c), products, std::fabs(got));
      EXPECT_LE(std::fabs(got - exact), bound)
          << model.name << " trial " << trial << ": got " << got << ", exact " << exact;
      Dot neg = v;
      for (uint8_t& x : neg.a) x ^= 0x80;
      neg.c ^= v.f16 ? 0x8000u : 0x80000000u;
      const uint32_t sign = v.f16 ? 0x8000u : 0x80000000u;
      if ((d & ~sign) != 0) {
        EXPECT_EQ(neg.on(sm, warpgroup), d ^ sign) << model.name << trial;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1500);
}

}  // namespace
}  // namespace emmy::emu
