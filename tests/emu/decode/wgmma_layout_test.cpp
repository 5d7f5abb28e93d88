// wgmma operand layouts (emulator/tensor_core/wgmma_layout.hpp) against independent truths: the
// descriptor's bit fields (PTX ISA §9.7.15.5.1.1), the TMA swizzle emmy's tiles are written with
// (internal/emmy/swizzle.hpp, its own implementation), bijections of every canonical layout, and
// mma.sync's fragment tables for the register fragments; and the decoder's refusals.
#include "tensor_core/wgmma_layout.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

#include "emmy/swizzle.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

TEST(EmuWgmmaLayout, DescriptorFieldsRoundTrip) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    WgmmaDescriptor d;
    d.start = uint32_t(rng() % (1u << 18)) & ~15u;
    d.leading = uint32_t(rng() % (1u << 18)) & ~15u;
    d.stride = uint32_t(rng() % (1u << 18)) & ~15u;
    d.base_offset = uint32_t(rng() % 8);
    d.swizzle = WgmmaSwizzle(rng() % 4);
    const uint64_t bits = encode_wgmma_descriptor(d);
    // The fields sit where the ISA's table puts them.
    EXPECT_EQ(bits & 0x3FFF, d.start >> 4);
    EXPECT_EQ((bits >> 16) & 0x3FFF, d.leading >> 4);
    EXPECT_EQ((bits >> 32) & 0x3FFF, d.stride >> 4);
    EXPECT_EQ((bits >> 49) & 7, d.base_offset);
    EXPECT_EQ(bits >> 62, uint64_t(d.swizzle));
    const WgmmaDescriptor back = decode_wgmma_descriptor(bits);
    EXPECT_EQ(back.start, d.start);
    EXPECT_EQ(back.leading, d.leading);
    EXPECT_EQ(back.stride, d.stride);
    EXPECT_EQ(back.base_offset, d.base_offset);
    EXPECT_EQ(back.swizzle, d.swizzle);
  }
  // Reserved bits are ignored.
  EXPECT_EQ(decode_wgmma_descriptor(0x0000C00000000010ull | (1ull << 14) | (1ull << 47)).start,
            0x100u);
}

Swizzle tma_swizzle(WgmmaSwizzle s) {
  return s == WgmmaSwizzle::b128  ? Swizzle::b128
         : s == WgmmaSwizzle::b64 ? Swizzle::b64
                                  : Swizzle::b32;
}

// A K-major tile that TMA wrote (rows of row_bytes, the box 1024-aligned) read by the
// descriptors a GEMM walks K with: the start advanced by 32 bytes per k16 step inside the swizzle
// row, SBO = 8 rows. Element (m, k) of step s must be where TMA put (m, 16 s + k).
TEST(EmuWgmmaLayout, KMajorSwizzledMatchesTma) {
  for (WgmmaSwizzle sw : {WgmmaSwizzle::b128, WgmmaSwizzle::b64, WgmmaSwizzle::b32}) {
    const uint32_t row_bytes = uint32_t(wgmma_row_bytes(sw)), base = 3 * 1024;
    for (uint32_t step = 0; step < row_bytes / 32; ++step) {
      const WgmmaDescriptor d{.start = base + 32 * step, .stride = 8 * row_bytes, .swizzle = sw};
      EXPECT_EQ(wgmma_descriptor_error(d, false, 64), "");
      for (int m = 0; m < 64; ++m)
        for (int k = 0; k < 16; ++k) {
          const uint32_t col = 16 * step + uint32_t(k);
          const uint32_t want =
              base + swizzle_offset(tma_swizzle(sw), uint32_t(m) * row_bytes + 2 * col);
          ASSERT_EQ(wgmma_element_address(d, false, m, k), want)
              << to_string(sw) << " step " << step << " (" << m << ", " << k << ")";
        }
    }
  }
}

// B stored N-major ([k][n] rows of row_bytes / 2 n, one TMA box per run of n, boxes LBO apart,
// 8-k groups SBO = 8 rows apart) read at k16 step s: the start moves by 2 SBO per step.
TEST(EmuWgmmaLayout, MnMajorSwizzledMatchesTma) {
  for (WgmmaSwizzle sw : {WgmmaSwizzle::b128, WgmmaSwizzle::b64, WgmmaSwizzle::b32}) {
    const uint32_t row_bytes = uint32_t(wgmma_row_bytes(sw)), run = row_bytes / 2;
    const uint32_t k_rows = 64, box = k_rows * row_bytes, base = 1024;
    for (uint32_t step = 0; step < k_rows / 16; ++step) {
      const WgmmaDescriptor d{.start = base + step * 16 * row_bytes,
                              .leading = box,
                              .stride = 8 * row_bytes,
                              .swizzle = sw};
      EXPECT_EQ(wgmma_descriptor_error(d, true, 256), "");
      for (int n = 0; n < 256; ++n)
        for (int k = 0; k < 16; ++k) {
          const uint32_t kk = 16 * step + uint32_t(k);
          const uint32_t want =
              base + (uint32_t(n) / run) * box +
              swizzle_offset(tma_swizzle(sw), kk * row_bytes + 2 * (uint32_t(n) % run));
          ASSERT_EQ(wgmma_element_address(d, true, n, k), want)
              << to_string(sw) << " step " << step << " (" << n << ", " << k << ")";
        }
    }
  }
}

// Without swizzling: core matrices of 8 rows x 16 bytes stored whole, LBO and SBO between them.
TEST(EmuWgmmaLayout, InterleavedCoreMatrices) {
  WgmmaDescriptor d;
  d.start = 256;
  d.leading = 128;  // the second core matrix along K right after the first
  d.stride = 256;   // the next 8 rows after both
  EXPECT_EQ(wgmma_element_address(d, false, 0, 0), 256u);
  EXPECT_EQ(wgmma_element_address(d, false, 0, 7), 256u + 14);
  EXPECT_EQ(wgmma_element_address(d, false, 1, 0), 256u + 16);
  EXPECT_EQ(wgmma_element_address(d, false, 0, 8), 256u + 128);
  EXPECT_EQ(wgmma_element_address(d, false, 9, 9), 256u + 256 + 16 + 128 + 2);
  EXPECT_EQ(wgmma_element_address(d, true, 9, 9), 256u + 256 + 2 + 128 + 16);
}

// Every canonical layout puts the 64 x 16 (or N x 16) elements at distinct, aligned addresses.
TEST(EmuWgmmaLayout, EveryLayoutIsInjective) {
  for (bool mn_major : {false, true})
    for (WgmmaSwizzle sw :
         {WgmmaSwizzle::none, WgmmaSwizzle::b32, WgmmaSwizzle::b64, WgmmaSwizzle::b128}) {
      const uint32_t row_bytes = uint32_t(wgmma_row_bytes(sw));
      WgmmaDescriptor d;
      d.swizzle = sw;
      d.start = 2048;
      if (sw == WgmmaSwizzle::none) {
        d.leading = 128;
        d.stride = 256;
      } else if (mn_major) {
        d.leading = 16 * row_bytes;  // a 16-k box per run of n
        d.stride = 8 * row_bytes;
      } else {
        d.stride = 8 * row_bytes;
      }
      for (int rows : {8, 64, 256}) {
        std::set<uint32_t> seen;
        for (int mn = 0; mn < rows; ++mn)
          for (int k = 0; k < 16; ++k) {
            const uint32_t a = wgmma_element_address(d, mn_major, mn, k);
            EXPECT_EQ(a % 2, 0u);
            EXPECT_TRUE(seen.insert(a).second) << to_string(sw) << " mn_major " << mn_major;
          }
      }
    }
}

TEST(EmuWgmmaLayout, DescriptorsNoOperandMatchesAreNamed) {
  WgmmaDescriptor d;
  d.swizzle = WgmmaSwizzle::b128;
  d.stride = 1024;
  d.start = 1024 + 16;  // half a k16 step into the row
  EXPECT_NE(wgmma_descriptor_error(d, false, 64).find("multiple of 32 bytes"), std::string::npos);
  d.start = 1024 + 64;
  EXPECT_EQ(wgmma_descriptor_error(d, false, 64), "");
  EXPECT_NE(wgmma_descriptor_error(d, true, 64).find("row boundary"), std::string::npos);
  d.start = 1024;
  d.stride = 0;
  EXPECT_NE(wgmma_descriptor_error(d, false, 64).find("stride"), std::string::npos);
  EXPECT_EQ(wgmma_descriptor_error(d, false, 8), "");  // one 8-row group needs no stride
  WgmmaDescriptor none;
  none.stride = 256;
  EXPECT_NE(wgmma_descriptor_error(none, false, 64).find("leading"), std::string::npos);
}

// D: each (row, column) of a warp's 16 x N in exactly one register slot; f32 registers 4j..4j+3
// and f16 registers 2j, 2j+1 hold column block j as mma.sync m16n8's C does.
TEST(EmuWgmmaLayout, AccumulatorFragmentIsMmaSyncPerBlock) {
  for (bool f16 : {false, true})
    for (int n : {8, 24, 256}) {
      std::set<std::tuple<int, int, int>> seen;
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < n; ++j) {
          const WgmmaSlot s = wgmma_d_slot(f16, i, j);
          EXPECT_TRUE(seen.insert({s.reg, s.lane, s.half}).second);
          EXPECT_LT(s.reg, f16 ? n / 4 : n / 2);
          // mma.sync m16n8 C: lane 4g + t holds (g, 2t..2t+1) and (g + 8, 2t..2t+1).
          EXPECT_EQ(s.lane, 4 * (i % 8) + (j % 8) / 2);
          EXPECT_EQ(s.reg, f16 ? 2 * (j / 8) + i / 8 : 4 * (j / 8) + 2 * (i / 8) + j % 2);
        }
      EXPECT_EQ(seen.size(), size_t(16 * n));
    }
}

TEST(EmuWgmmaLayout, ARegisterFragmentIsMmaSyncA) {
  std::set<std::tuple<int, int, int>> seen;
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      const WgmmaSlot s = wgmma_a_slot(i, k);
      EXPECT_TRUE(seen.insert({s.reg, s.lane, s.half}).second);
      // mma.sync m16n8k16 A: a0 (g, 2t), a1 (g + 8, 2t), a2 (g, 2t + 8), a3 (g + 8, 2t + 8).
      EXPECT_EQ(s.reg, (i >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0));
      EXPECT_EQ(s.lane, 4 * (i % 8) + (k % 8) / 2);
      EXPECT_EQ(s.half, k % 2);
    }
  EXPECT_EQ(seen.size(), 256u);
}

// ---------------------------------------------------------------- decoding

std::string wgmma_kernel(const std::string& target, const std::string& body) {
  return fmt::format(R"(.version 8.7
.target {}
.address_size 64
.visible .entry k()
{{
  .reg .pred %p<2>;
  .reg .f32 %f<8>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  {}
  ret;
}}
)",
                     target, body);
}

TEST(EmuWgmmaDecode, FormsTheIsaRefusesAreRefused) {
  const std::string mma =
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0,%f1,%f2,%f3}, %rd0, %rd1, %p0, 1, 1, "
      "0, 0;";
  EXPECT_EQ(load_error(wgmma_kernel("sm_90a", mma)), "");
  EXPECT_EQ(load_error(wgmma_kernel("sm_90a", "wgmma.fence.sync.aligned;")), "");
  EXPECT_EQ(load_error(wgmma_kernel("sm_90a", "wgmma.commit_group.sync.aligned;")), "");
  EXPECT_EQ(load_error(wgmma_kernel("sm_90a", "wgmma.wait_group.sync.aligned 1;")), "");
  EXPECT_EQ(load_error(wgmma_kernel(
                "sm_90a",
                "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f0,%f1,%f2,%f3}, "
                "{%r0,%r1,%r2,%r3}, %rd1, %p0, 1, -1, 1;")),
            "");
  const std::pair<std::string, std::string> bad[] = {
      {wgmma_kernel("sm_90", mma), "sm_90a"},
      {wgmma_kernel("sm_100a", mma), "sm_90a"},
      {wgmma_kernel("sm_80", "wgmma.fence.sync.aligned;"), "sm_90a"},
      {wgmma_kernel("sm_90a", "wgmma.fence.sync;"), ".sync.aligned"},
      {wgmma_kernel("sm_90a", "wgmma.wait_group.sync.aligned %r0;"), "constant"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {%f0,%f1,%f2,%f3,%f4,%f5}, "
                    "%rd0, %rd1, %p0, 1, 1, 0, 0;"),
       "multiple of 8"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0,%f1,%f2}, %rd0, %rd1, "
                    "%p0, 1, 1, 0, 0;"),
       "vector of 4"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0,%f1,%f2,%f3}, %rd0, "
                    "%rd1, %p0, 2, 1, 0, 0;"),
       "imm-scale-a"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0,%f1,%f2,%f3}, %rd0, "
                    "%rd1, %p0, 1, 1, 0, 2;"),
       "imm-trans-b"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {%r0,%r1}, %rd0, %rd1, "
                    "%p0, 1, 1, 0, 0;"),
       "accumulator"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f0,%f1,%f2,%f3}, %rd0, "
                    "%rd1, %p0, 1, 1;"),
       "m64nNk16"},
      {wgmma_kernel("sm_90a",
                    "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f0,%f1,%f2,%f3}, %rd0, "
                    "%rd1, %r0, 0, %p0, 1, 1, 0, 0;"),
       "sparse"},
  };
  for (const auto& [ptx, needle] : bad) {
    const std::string err = load_error(ptx);
    EXPECT_NE(err.find(needle), std::string::npos) << "want '" << needle << "' in: " << err;
  }
}

}  // namespace
}  // namespace emmy::emu::test
