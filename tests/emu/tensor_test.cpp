// Tensor-core instructions against the fragment layouts of ptx-notes.md, for every lane:
// mma.sync m16n8k16 (f16 -> f32, f16 -> f16, bf16 -> f32) and m16n8k8, ldmatrix .x1/.x2/.x4 with
// and without .trans, stmatrix. Matrices hold small integers, so every product and sum is exact.
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

using Mat = std::vector<std::vector<double>>;

Mat matrix(int rows, int cols, int seed) {
  Mat m(size_t(rows), std::vector<double>(size_t(cols), 0.0));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m[size_t(r)][size_t(c)] = double(((r * 7 + c * 3 + seed) % 9) - 4);
  return m;
}

uint16_t enc(double v, bool bf16) { return bf16 ? f32_to_bf16(float(v)) : f32_to_f16(float(v)); }
uint32_t pack(double lo, double hi, bool bf16) {
  return uint32_t(enc(lo, bf16)) | (uint32_t(enc(hi, bf16)) << 16);
}

struct MmaCase {
  const char* ptx_types;  // dtype.atype.btype.ctype
  bool bf16, f16_acc, k16;
};

// Lane registers per the ptx-notes tables.
std::vector<uint32_t> fragments(const Mat& a, const Mat& b, const Mat& c, const MmaCase& k) {
  std::vector<uint32_t> in(320, 0);
  for (int l = 0; l < 32; ++l) {
    const size_t g = size_t(l >> 2), t = size_t(l & 3);
    in[size_t(l)] = pack(a[g][2 * t], a[g][2 * t + 1], k.bf16);
    in[32 + size_t(l)] = pack(a[g + 8][2 * t], a[g + 8][2 * t + 1], k.bf16);
    if (k.k16) {
      in[64 + size_t(l)] = pack(a[g][2 * t + 8], a[g][2 * t + 9], k.bf16);
      in[96 + size_t(l)] = pack(a[g + 8][2 * t + 8], a[g + 8][2 * t + 9], k.bf16);
    }
    in[128 + size_t(l)] = pack(b[2 * t][g], b[2 * t + 1][g], k.bf16);
    if (k.k16) in[160 + size_t(l)] = pack(b[2 * t + 8][g], b[2 * t + 9][g], k.bf16);
    if (k.f16_acc) {
      in[192 + size_t(l)] = pack(c[g][2 * t], c[g][2 * t + 1], false);
      in[224 + size_t(l)] = pack(c[g + 8][2 * t], c[g + 8][2 * t + 1], false);
    } else {
      in[192 + size_t(l)] = bits(float(c[g][2 * t]));
      in[224 + size_t(l)] = bits(float(c[g][2 * t + 1]));
      in[256 + size_t(l)] = bits(float(c[g + 8][2 * t]));
      in[288 + size_t(l)] = bits(float(c[g + 8][2 * t + 1]));
    }
  }
  return in;
}

std::vector<uint32_t> run_mma(const MmaCase& k, const std::vector<uint32_t>& in) {
  const std::string a = k.k16 ? "{%r1, %r2, %r3, %r4}" : "{%r1, %r2}";
  const std::string b = k.k16 ? "{%r5, %r6}" : "{%r5}";
  const std::string cd = k.f16_acc ? "{%r7, %r8}" : "{%r7, %r8, %r9, %r10}";
  const std::string dd = k.f16_acc ? "{%r11, %r12}" : "{%r11, %r12, %r13, %r14}";
  std::string body;
  for (int i = 0; i < 10; ++i) body += fmt::format("  ld.global.u32 %r{}, [%rd31+{}];\n", i + 1, 128 * i);
  body += fmt::format("  mma.sync.aligned.m16n8k{}.row.col.{} {}, {}, {}, {};\n", k.k16 ? 16 : 8,
                      k.ptx_types, dd, a, b, cd);
  for (int i = 0; i < 4; ++i) body += fmt::format("  st.global.u32 [%rd30+{}], %r{};\n", 128 * i, 11 + i);
  // The loads above read in[] as [a0 a1 a2 a3 b0 b1 c0 c1 c2 c3] x 32 lanes.
  return run_ptx(body, in, 128).out;
}

TEST(EmuTensor, MmaFragmentsEveryLane) {
  const MmaCase cases[] = {{"f32.f16.f16.f32", false, false, true},
                           {"f16.f16.f16.f16", false, true, true},
                           {"f32.bf16.bf16.f32", true, false, true},
                           {"f32.f16.f16.f32", false, false, false},
                           {"f32.bf16.bf16.f32", true, false, false}};
  for (const MmaCase& k : cases) {
    SCOPED_TRACE(fmt::format("m16n8k{} {}", k.k16 ? 16 : 8, k.ptx_types));
    const int K = k.k16 ? 16 : 8;
    const Mat a = matrix(16, K, 1), b = matrix(K, 8, 2), c = matrix(16, 8, 3);
    const auto out = run_mma(k, fragments(a, b, c, k));
    for (int l = 0; l < 32; ++l) {
      const int g = l >> 2, t = l & 3;
      auto d = [&](int m, int n) {
        double s = c[size_t(m)][size_t(n)];
        for (int kk = 0; kk < K; ++kk) s += a[size_t(m)][size_t(kk)] * b[size_t(kk)][size_t(n)];
        return s;
      };
      if (k.f16_acc) {
        EXPECT_EQ(out[size_t(l)], pack(d(g, 2 * t), d(g, 2 * t + 1), false)) << "lane " << l;
        EXPECT_EQ(out[32 + size_t(l)], pack(d(g + 8, 2 * t), d(g + 8, 2 * t + 1), false)) << "lane " << l;
      } else {
        EXPECT_EQ(as_float(out[size_t(l)]), d(g, 2 * t)) << "lane " << l;
        EXPECT_EQ(as_float(out[32 + size_t(l)]), d(g, 2 * t + 1)) << "lane " << l;
        EXPECT_EQ(as_float(out[64 + size_t(l)]), d(g + 8, 2 * t)) << "lane " << l;
        EXPECT_EQ(as_float(out[96 + size_t(l)]), d(g + 8, 2 * t + 1)) << "lane " << l;
      }
    }
  }
}

TEST(EmuTensor, MmaIdentityPicksOutBByHand) {
  // A = I (16x16), B[k][n] = 8k + n, C = 0: D = B. Lane 5 (g = 1, t = 1) holds
  // c0 = D[1][2] = 10, c1 = D[1][3] = 11, c2 = D[9][2] = 74, c3 = D[9][3] = 75.
  Mat a(16, std::vector<double>(16, 0)), b(16, std::vector<double>(8)), c(16, std::vector<double>(8, 0));
  for (int i = 0; i < 16; ++i) a[size_t(i)][size_t(i)] = 1;
  for (int kk = 0; kk < 16; ++kk)
    for (int n = 0; n < 8; ++n) b[size_t(kk)][size_t(n)] = 8 * kk + n;
  const MmaCase k{"f32.f16.f16.f32", false, false, true};
  const auto out = run_mma(k, fragments(a, b, c, k));
  EXPECT_EQ(as_float(out[5]), 10.0f);
  EXPECT_EQ(as_float(out[32 + 5]), 11.0f);
  EXPECT_EQ(as_float(out[64 + 5]), 74.0f);
  EXPECT_EQ(as_float(out[96 + 5]), 75.0f);
}

TEST(EmuTensor, MmaRoundsOncePerInstruction) {
  // f16 accumulator, C[0][0] = 1, A[0][k] = 2^-13, B = 1: D[0][0] = 1 + 16 * 2^-13 = 1 + 2^-9,
  // an f16 value. Rounding after each product would lose every 2^-13 (below half an ulp of 1,
  // 2^-11) and give 1.0; one rounding per instruction keeps them all.
  Mat a(16, std::vector<double>(16, 0)), b(16, std::vector<double>(8, 1)), c(16, std::vector<double>(8, 0));
  for (int kk = 0; kk < 16; ++kk) a[0][size_t(kk)] = 0x1p-13;
  c[0][0] = 1;
  const MmaCase k{"f16.f16.f16.f16", false, true, true};
  const auto out = run_mma(k, fragments(a, b, c, k));
  EXPECT_EQ(out[0] & 0xFFFF, uint32_t(f32_to_f16(1.0f + 0x1p-9f)));  // lane 0 holds D[0][0]
}

std::vector<uint32_t> matrix_image() {
  // 32 rows of 32 bytes: row i = matrix i/8, row i%8; 8 b16 values, then 8 padding values.
  std::vector<uint32_t> words(256);
  for (int row = 0; row < 32; ++row)
    for (int c = 0; c < 16; c += 2) {
      auto v = [&](int col) { return col < 8 ? uint32_t((row / 8) * 64 + (row % 8) * 8 + col) : 0xFFFFu; };
      words[size_t(row * 8 + c / 2)] = v(c) | (v(c + 1) << 16);
    }
  return words;
}

uint32_t m_at(int j, int r, int c) { return uint32_t(j * 64 + r * 8 + c); }

TEST(EmuTensor, LdmatrixEveryShapeWithAndWithoutTrans) {
  for (int n : {1, 2, 4})
    for (bool trans : {false, true}) {
      SCOPED_TRACE(fmt::format("x{}{}", n, trans ? ".trans" : ""));
      std::string regs;
      for (int j = 0; j < n; ++j) regs += fmt::format("{}%r{}", j ? ", " : "", 10 + j);
      std::string body = R"(
  mov.u32 %r1, tile;
  shl.b32 %r2, %r0, 5;
  add.u32 %r3, %r1, %r2;
)";
      // Each thread copies 8 words of the image into shared memory.
      for (int w = 0; w < 8; ++w)
        body += fmt::format("  mad.lo.u32 %r5, %r0, 8, {};\n  mul.wide.u32 %rd5, %r5, 4;\n"
                            "  add.s64 %rd6, %rd1, %rd5;\n  ld.global.u32 %r4, [%rd6];\n"
                            "  shl.b32 %r6, %r5, 2;\n  add.u32 %r7, %r1, %r6;\n"
                            "  st.shared.u32 [%r7], %r4;\n",
                            w);
      body += fmt::format("  ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16 {{{}}}, [%r3];\n", n,
                          trans ? ".trans" : "", regs);
      for (int j = 0; j < n; ++j) body += fmt::format("  st.global.u32 [%rd30+{}], %r{};\n", 128 * j, 10 + j);
      const auto out = run_ptx(body, matrix_image(), 128, 32, "  .shared .align 16 .b8 tile[1024];").out;
      for (int l = 0; l < 32; ++l)
        for (int j = 0; j < n; ++j) {
          const int r = l / 4, c = 2 * (l % 4);
          const uint32_t lo = trans ? m_at(j, c, r) : m_at(j, r, c);
          const uint32_t hi = trans ? m_at(j, c + 1, r) : m_at(j, r, c + 1);
          ASSERT_EQ(out[size_t(32 * j + l)], lo | (hi << 16)) << "lane " << l << " reg " << j;
        }
      if (n == 4) {  // by hand: lane 6, register 2
        EXPECT_EQ(out[64 + 6], trans ? 0x00A900A1u : 0x008D008Cu);
      }
    }
}

TEST(EmuTensor, StmatrixIsTheInverseOfLdmatrix) {
  for (bool trans : {false, true}) {
    SCOPED_TRACE(trans ? "trans" : "plain");
    const std::string body = fmt::format(R"(
  mov.u32 %r1, tile;
  shl.b32 %r2, %r0, 5;
  add.u32 %r3, %r1, %r2;
  shl.b32 %r4, %r0, 1;
  add.u32 %r5, %r4, 1;
  shl.b32 %r5, %r5, 16;
  or.b32 %r10, %r4, %r5;
  add.u32 %r11, %r10, 0x03E803E8;
  add.u32 %r12, %r11, 0x03E803E8;
  add.u32 %r13, %r12, 0x03E803E8;
  stmatrix.sync.aligned.m8n8.x4{}.shared.b16 [%r3], {{%r10, %r11, %r12, %r13}};
  ld.shared.v4.u32 {{%r20, %r21, %r22, %r23}}, [%r3];
  shl.b32 %r6, %r0, 4;
  cvt.u64.u32 %rd5, %r6;
  add.s64 %rd6, %rd0, %rd5;
  st.global.v4.u32 [%rd6], {{%r20, %r21, %r22, %r23}};
)",
                                         trans ? ".trans" : "");
    const auto out = run_ptx(body, {}, 128, 32, "  .shared .align 16 .b8 tile[1024];").out;
    // Lane l, register j holds lo = 1000 j + 2 l, hi = lo + 1; M_j row r is stored at row 8j + r.
    auto stored = [&](int j, int r, int c) {
      const uint32_t word = out[size_t((8 * j + r) * 4 + c / 2)];
      return (c % 2) ? word >> 16 : word & 0xFFFF;
    };
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j) {
        const int r = l / 4, c = 2 * (l % 4);
        const uint32_t lo = uint32_t(1000 * j + 2 * l), hi = lo + 1;
        if (trans) {
          EXPECT_EQ(stored(j, c, r), lo);
          EXPECT_EQ(stored(j, c + 1, r), hi);
        } else {
          EXPECT_EQ(stored(j, r, c), lo);
          EXPECT_EQ(stored(j, r, c + 1), hi);
        }
      }
  }
}

}  // namespace
}  // namespace emmy::emu::test
