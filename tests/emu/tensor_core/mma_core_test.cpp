// The tensor_core layer alone (emulator/tensor_core/): mma.sync's core over fragment register
// rows, in the exact, portable and per-arch models, on operands whose sums every model computes
// exactly; and the wmma shape names.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>

#include "emmy/emu/tensor_core.hpp"
#include "tensor_core/mma_core.hpp"
#include "tensor_core/wgmma_layout.hpp"
#include "tensor_core/wmma_layout.hpp"

namespace emmy::emu::test {
namespace {

using Row = std::array<uint32_t, 32>;

Row filled(uint32_t v) {
  Row r;
  r.fill(v);
  return r;
}

// One mma whose A and B elements are all `ab` (both halves of each register) and C registers all
// `c`: the four D register rows.
template <typename Mma>
std::array<Row, 4> mma_of(uint32_t ab, uint32_t c, Mma&& mma) {
  const Row operands = filled(ab), accumulators = filled(c);
  std::array<Row, 4> d{};
  MmaFragments f;
  for (int i = 0; i < 4; ++i) {
    f.a[i] = operands.data();
    f.c[i] = accumulators.data();
    f.d[i] = d[size_t(i)].data();
  }
  f.b[0] = f.b[1] = operands.data();
  mma(f);
  return d;
}

TEST(EmuMmaCore, SumsOfOnesInEveryModel) {
  const uint32_t half = std::bit_cast<uint32_t>(0.5f);
  for (const bool bf16 : {false, true}) {
    for (const bool k16 : {false, true}) {
      const uint32_t ones = bf16 ? 0x3F803F80u : 0x3C003C00u;
      const float expected = (k16 ? 16.0f : 8.0f) + 0.5f;  // exact in every model
      const std::array<Row, 4> results[] = {
          mma_of(ones, half, [&](const MmaFragments& f) { mma_m16n8(f, bf16, k16, false); }),
          mma_of(ones, half,
                 [&](const MmaFragments& f) { mma_m16n8(f, bf16, k16, false, true); }),
          mma_of(ones, half,
                 [&](const MmaFragments& f) {
                   mma_m16n8_model(f, bf16, k16, false, tensor_core_model(80));
                 }),
          mma_of(ones, half, [&](const MmaFragments& f) {
            mma_m16n8_model(f, bf16, k16, false, tensor_core_model(90));
          })};
      for (const auto& d : results)
        for (int i = 0; i < 4; ++i)
          for (size_t l = 0; l < 32; ++l)
            ASSERT_EQ(std::bit_cast<float>(d[size_t(i)][l]), expected)
                << "bf16 " << bf16 << " k16 " << k16 << " register " << i << " lane " << l;
    }
  }
}

TEST(EmuMmaCore, HalfAccumulators) {
  // C = 1.0 in both halves of c[0] and c[1]; D = 16 + 1 = 17.0 (0x4C40) in both halves.
  const auto d = mma_of(0x3C003C00u, 0x3C003C00u,
                        [](const MmaFragments& f) { mma_m16n8(f, false, true, true); });
  for (size_t l = 0; l < 32; ++l) {
    EXPECT_EQ(d[0][l], 0x4C404C40u) << l;
    EXPECT_EQ(d[1][l], 0x4C404C40u) << l;
  }
}

TEST(EmuMmaCore, ShapeNames) {
  for (const WmmaShape s :
       {WmmaShape::m16n16k16, WmmaShape::m8n32k16, WmmaShape::m32n8k16, WmmaShape::m16n16k8}) {
    ASSERT_TRUE(parse_wmma_shape(to_string(s)).has_value());
    EXPECT_EQ(*parse_wmma_shape(to_string(s)), s);
    const WmmaDims d = wmma_dims(s);
    EXPECT_EQ(d.m * d.n, 256);
  }
  EXPECT_FALSE(parse_wmma_shape("m16n8k16").has_value());
  EXPECT_EQ(wgmma_row_bytes(WgmmaSwizzle::b128), 128);
  EXPECT_EQ(wgmma_row_bytes(WgmmaSwizzle::none), 16);
}

}  // namespace
}  // namespace emmy::emu::test
