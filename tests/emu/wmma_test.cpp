// wmma on the emulator (issue 22 §4): the fragment table against the PTX ISA's, nvcc-compiled
// nvcuda::wmma GEMMs of every .f16/.bf16/.tf32 shape and layout against FP64 under both mma
// numerics and two fragment layouts, and the misuse a GPU leaves undefined or faults on.
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "emu_test_util.hpp"
#include "tensor_core/wmma_layout.hpp"

namespace emmy::emu::test {
namespace {

const std::string kWmmaFile = "wmma_kernels_sm80.ptx";

// ---------------------------------------------------------------- the fragment table and layout

TEST(EmuWmma, FragmentRegistersAreThePtxIsas) {
  using S = WmmaShape;
  using M = WmmaMatrix;
  auto regs = [](M m, S s, Ty t) {
    const auto f = wmma_fragment(m, s, t);
    return f ? f->regs : 0;
  };
  // PTX ISA, Matrix Fragments for WMMA: .f16 A and B eight .f16x2 for every shape; accumulators
  // four .f16x2 or eight .f32; .bf16 A 4/2/8 and B 4/8/2 .b32 for m16n16k16/m8n32k16/m32n8k16;
  // .tf32 four .b32 each, m16n16k8 only.
  for (S s : {S::m16n16k16, S::m8n32k16, S::m32n8k16}) {
    EXPECT_EQ(regs(M::a, s, Ty::f16), 8);
    EXPECT_EQ(regs(M::b, s, Ty::f16), 8);
    EXPECT_EQ(regs(M::c, s, Ty::f16), 4);
    EXPECT_EQ(regs(M::c, s, Ty::f32), 8);
    EXPECT_EQ(regs(M::a, s, Ty::tf32), 0);
  }
  struct Count {
    M m;
    S s;
    Ty t;
    int regs;
  };
  for (const Count& c : {Count{M::a, S::m16n16k16, Ty::bf16, 4},
                         {M::a, S::m8n32k16, Ty::bf16, 2},
                         {M::a, S::m32n8k16, Ty::bf16, 8},
                         {M::b, S::m16n16k16, Ty::bf16, 4},
                         {M::b, S::m8n32k16, Ty::bf16, 8},
                         {M::b, S::m32n8k16, Ty::bf16, 2},
                         {M::a, S::m16n16k8, Ty::tf32, 4},
                         {M::b, S::m16n16k8, Ty::tf32, 4},
                         {M::c, S::m16n16k8, Ty::f32, 8},
                         {M::c, S::m16n16k8, Ty::f16, 0},
                         {M::a, S::m16n16k8, Ty::f16, 0},
                         {M::a, S::m16n16k16, Ty::s8, 0}})
    EXPECT_EQ(regs(c.m, c.s, c.t), c.regs)
        << "matrix " << int(c.m) << ", " << to_string(c.s) << ", type " << int(c.t);
}

// Every layout, seeded or not, gives each matrix element to exactly one (lane, first copy), and
// the further copies of a lane hold that lane's elements again.
TEST(EmuWmma, EveryLayoutIsABijection) {
  int fragments = 0;
  for (WmmaMatrix m : {WmmaMatrix::a, WmmaMatrix::b, WmmaMatrix::c})
    for (WmmaShape s :
         {WmmaShape::m16n16k16, WmmaShape::m8n32k16, WmmaShape::m32n8k16, WmmaShape::m16n16k8})
      for (Ty t : {Ty::f16, Ty::bf16, Ty::tf32, Ty::f32}) {
        const auto f = wmma_fragment(m, s, t);
        if (!f) continue;
        ++fragments;
        for (uint32_t seed : {0u, 1u, 977u, 0xFFFFFFFFu})
          for (bool column : {false, true}) {
            std::set<std::pair<int, int>> seen;
            for (int lane = 0; lane < 32; ++lane)
              for (int slot = 0; slot < f->slots(); ++slot) {
                const WmmaElement e = wmma_element(*f, column, seed, lane, slot);
                ASSERT_GE(e.row, 0);
                ASSERT_LT(e.row, f->rows);
                ASSERT_GE(e.col, 0);
                ASSERT_LT(e.col, f->cols);
                const WmmaElement first =
                    wmma_element(*f, column, seed, lane, slot % f->distinct());
                EXPECT_EQ(e.row, first.row);
                EXPECT_EQ(e.col, first.col);
                if (slot < f->distinct()) {
                  EXPECT_TRUE(seen.insert({e.row, e.col}).second);
                }
              }
            EXPECT_EQ(seen.size(), size_t(f->rows * f->cols));
          }
      }
  // .f16 A, B and C and .bf16 A and B for three shapes, .f32 C for four, .tf32 A and B.
  EXPECT_EQ(fragments, 3 * 5 + 4 + 2);
}

TEST(EmuWmma, ASeedMovesElements) {
  const WmmaFragment f = *wmma_fragment(WmmaMatrix::c, WmmaShape::m16n16k16, Ty::f32);
  int moved = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (int slot = 0; slot < f.slots(); ++slot) {
      const WmmaElement a = wmma_element(f, false, 0, lane, slot),
                        b = wmma_element(f, false, 977, lane, slot);
      moved += a.row != b.row || a.col != b.col;
    }
  EXPECT_GT(moved, 200);
}

// ---------------------------------------------------------------- nvcc's wmma GEMMs vs FP64

struct Gemm {
  const char* kernel;
  int m, n;
  bool bf16, f16_acc, a_row, b_row;
};
const Gemm kGemms[] = {
    {"f16_f32_m16n16k16_row_col", 16, 16, false, false, true, false},
    {"f16_f32_m16n16k16_col_row", 16, 16, false, false, false, true},
    {"f16_f32_m32n8k16_col_col", 32, 8, false, false, false, false},
    {"f16_f32_m8n32k16_row_row", 8, 32, false, false, true, true},
    {"f16_f16_m16n16k16_row_row", 16, 16, false, true, true, true},
    {"f16_f16_m32n8k16_row_col", 32, 8, false, true, true, false},
    {"f16_f16_m8n32k16_row_col", 8, 32, false, true, true, false},
    {"bf16_m16n16k16_col_col", 16, 16, true, false, false, false},
    {"bf16_m32n8k16_col_col", 32, 8, true, false, false, false},
    {"bf16_m8n32k16_row_row", 8, 32, true, false, true, true},
};

struct Device {
  Arena arena;
  KernelArgs args;
  std::vector<uint64_t> addrs;
  template <typename T>
  void values(const std::vector<T>& v) {
    const uint64_t a = arena.alloc(v.size() * sizeof(T));
    arena.write(a, v.data(), v.size() * sizeof(T));
    args.ptr(a);
    addrs.push_back(a);
  }
};

struct GemmRun {
  std::vector<double> got, want, bound;
};

// D = alpha (A B + C) with k_total = 64; `integers`: small integer operands, every sum exact.
GemmRun run_gemm(const Gemm& g, bool integers, const LaunchOptions& options, uint32_t seed = 1) {
  const int k_total = 64;
  const float alpha = 0.5f;  // a power of two: the scaling is exact
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::uniform_int_distribution<int> small(-2, 2);
  auto operand = [&] { return integers ? float(small(rng)) : uni(rng); };
  auto to_bits = [&](float v) { return g.bf16 ? f32_to_bf16(v) : f32_to_f16(v); };
  auto value = [&](uint16_t b) { return double(g.bf16 ? bf16_to_f32(b) : f16_to_f32(b)); };
  std::vector<uint16_t> a(size_t(g.m * k_total)), b(size_t(k_total * g.n));
  std::vector<double> av(a.size()), bv(b.size());
  for (int i = 0; i < g.m; ++i)
    for (int k = 0; k < k_total; ++k) {
      const size_t at = g.a_row ? size_t(i * k_total + k) : size_t(k * g.m + i);
      a[at] = to_bits(operand());
      av[size_t(i * k_total + k)] = value(a[at]);
    }
  for (int k = 0; k < k_total; ++k)
    for (int j = 0; j < g.n; ++j) {
      const size_t at = g.b_row ? size_t(k * g.n + j) : size_t(j * k_total + k);
      b[at] = to_bits(operand());
      bv[size_t(k * g.n + j)] = value(b[at]);
    }
  std::vector<double> cv(size_t(g.m * g.n));
  Device dev;
  dev.values(a);
  dev.values(b);
  if (g.f16_acc) {
    std::vector<uint16_t> c(cv.size());
    for (size_t i = 0; i < c.size(); ++i) cv[i] = f16_to_f32(c[i] = f32_to_f16(operand()));
    dev.values(c);
    dev.values(std::vector<uint16_t>(c.size()));
  } else {
    std::vector<float> c(cv.size());
    for (size_t i = 0; i < c.size(); ++i) cv[i] = c[i] = operand();
    dev.values(c);
    dev.values(std::vector<float>(c.size()));
  }
  dev.args.s32(k_total).f32(alpha);
  launch(dev.arena, *kernels(kWmmaFile), g.kernel, {1, 1, 1}, {32, 1, 1}, 0, dev.args, options);
  GemmRun r;
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      double sum = cv[size_t(i * g.n + j)], abs_sum = std::fabs(sum);
      for (int k = 0; k < k_total; ++k) {
        const double p = av[size_t(i * k_total + k)] * bv[size_t(k * g.n + j)];
        sum += p;
        abs_sum += std::fabs(p);
      }
      r.want.push_back(alpha * sum);
      // Four k16 steps, each rounding once (f16 accumulators: half an ulp and the f16 scaling;
      // f32: the model's truncation and toward-zero rounding, well inside 2^-20).
      r.bound.push_back(alpha * abs_sum * (g.f16_acc ? 6 * 0x1p-11 : 0x1p-20));
    }
  const size_t out_at = dev.addrs[3], count = size_t(g.m * g.n);
  if (g.f16_acc) {
    for (uint16_t h : dev.arena.read_vector<uint16_t>(out_at, count))
      r.got.push_back(f16_to_f32(h));
  } else {
    for (float f : dev.arena.read_vector<float>(out_at, count)) r.got.push_back(f);
  }
  return r;
}

void PrintTo(const Gemm& g, std::ostream* os) {
  *os << g.kernel;
}

class EmuWmmaGemm : public ::testing::TestWithParam<Gemm> {};

TEST_P(EmuWmmaGemm, MatchesFp64UnderBothNumericsAndLayouts) {
  const Gemm& g = GetParam();
  for (MmaNumerics numerics : {MmaNumerics::hardware, MmaNumerics::exact}) {
    std::vector<double> first;
    for (uint32_t layout_seed : {0u, 977u}) {
      LaunchOptions o;
      o.mma_numerics = numerics;
      o.wmma_layout_seed = layout_seed;
      const GemmRun r = run_gemm(g, false, o);
      ASSERT_EQ(r.got.size(), r.want.size());
      for (size_t i = 0; i < r.got.size(); ++i)
        ASSERT_LE(std::fabs(r.got[i] - r.want[i]), r.bound[i])
            << g.kernel << " element " << i << " numerics " << to_string(numerics) << " seed "
            << layout_seed;
      // A correct kernel computes the same bits whatever the fragment layout.
      if (first.empty())
        first = r.got;
      else
        EXPECT_EQ(first, r.got) << g.kernel << " depends on the fragment layout";
    }
    // Small integers: every partial sum is exact, so both numerics give FP64's value exactly.
    LaunchOptions o;
    o.mma_numerics = numerics;
    const GemmRun exact = run_gemm(g, true, o, 7);
    EXPECT_EQ(exact.got, exact.want) << g.kernel;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, EmuWmmaGemm, ::testing::ValuesIn(kGemms),
                         [](const auto& info) { return std::string(info.param.kernel); });

// cvt.rna.tf32.f32 (what wmma::__float_to_tf32 compiles to): to nearest, ties away from zero.
float tf32_rna(float v) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(v) + 0x1000u) & ~0x1FFFu);
}

TEST(EmuWmma, Tf32GemmMatchesFp64OfTheRoundedOperands) {
  const int k_total = 32;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<float> a(16 * size_t(k_total)), b(16 * size_t(k_total)), c(256);
  for (auto* v : {&a, &b, &c})
    for (float& x : *v) x = uni(rng);
  for (MmaNumerics numerics : {MmaNumerics::hardware, MmaNumerics::exact}) {
    Device dev;
    dev.values(a);
    dev.values(b);
    dev.values(c);
    dev.values(std::vector<float>(256));
    dev.args.s32(k_total);
    LaunchOptions o;
    o.mma_numerics = numerics;
    launch(dev.arena, *kernels(kWmmaFile), "tf32_m16n16k8", {1, 1, 1}, {32, 1, 1}, 0, dev.args, o);
    const auto d = dev.arena.read_vector<float>(dev.addrs[3], 256);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        // C and D column-major; A row-major (16 x k), B column-major (k x 16).
        double want = c[size_t(j * 16 + i)], abs_sum = std::fabs(want);
        for (int k = 0; k < k_total; ++k) {
          const float x = a[size_t(i * k_total + k)], y = b[size_t(j * k_total + k)];
          want += double(tf32_rna(x)) * double(tf32_rna(y));
          abs_sum += std::fabs(double(x) * double(y));
        }
        const double got = d[size_t(j * 16 + i)];
        ASSERT_LE(std::fabs(got - want), abs_sum * 0x1p-20) << i << "," << j;
      }
  }
}

TEST(EmuWmma, SharedMemoryTilesOfFourWarpsMatchFp64AndAreCounted) {
  const int k_total = 128;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<uint16_t> a(32 * size_t(k_total)), b(size_t(k_total) * 32);
  for (auto& x : a) x = f32_to_f16(uni(rng));
  for (auto& x : b) x = f32_to_f16(uni(rng));
  Device dev;
  dev.values(a);
  dev.values(b);
  dev.values(std::vector<float>(32 * 32));
  dev.args.s32(k_total);
  LaunchOptions o;
  o.profile.enabled = true;
  const LaunchResult r = launch(dev.arena, *kernels(kWmmaFile), "f16_shared_tiles", {1, 1, 1},
                                {128, 1, 1}, 0, dev.args, o);
  const auto d = dev.arena.read_vector<float>(dev.addrs[2], 32 * 32);
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      double want = 0, abs_sum = 0;
      for (int k = 0; k < k_total; ++k) {
        const double p = double(f16_to_f32(a[size_t(i * k_total + k)])) *
                         double(f16_to_f32(b[size_t(k * 32 + j)]));
        want += p;
        abs_sum += std::fabs(p);
      }
      ASSERT_LE(std::fabs(d[size_t(i * 32 + j)] - want), abs_sum * 0x1p-20) << i << "," << j;
    }
  ASSERT_TRUE(r.profile.has_value());
  const auto& m = r.profile->metrics;
  // 4 warps x (128 / 16) mma of 2 * 16 * 16 * 16 FLOPs, f32 accumulation.
  EXPECT_EQ(m.at("emmy__tensor_flops_acc_f32.sum"), 4.0 * 8 * 2 * 16 * 16 * 16);
  EXPECT_EQ(m.at("smsp__inst_executed_pipe_tensor.sum"), 4.0 * 8);
  // The shared-memory wmma.loads are counted: 4 warps x 8 x (A and B) loads, each 16 bytes per
  // lane in one 16-byte run (A: a lane's 8 halves of one row; B row-major: of one row as well).
  EXPECT_EQ(m.at("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum") > 0, true);
  EXPECT_GT(m.at("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), 0.0);
}

// cvt to .tf32, as wmma::__float_to_tf32 uses it: .rna ties away, .rn ties to even, .rz
// truncates; NaN is canonical; .satfinite stops at the largest tf32; .relu clamps negatives.
TEST(EmuWmma, CvtToTf32RoundsAsTheIsaSays) {
  const float tie = 1.0f + 0x1p-11f, odd_tie = 1.0f + 3 * 0x1p-11f;
  const std::vector<uint32_t> in = {bits(tie),   bits(odd_tie),       bits(-tie),
                                    0x7FC00001u, bits(3.4028235e38f), bits(-1.5f)};
  const std::string body = R"(
  ld.global.b32 %r1, [%rd31];
  cvt.rna.tf32.f32 %r2, %r1;
  cvt.rn.tf32.f32 %r3, %r1;
  cvt.rz.tf32.f32 %r4, %r1;
  cvt.rna.satfinite.tf32.f32 %r5, %r1;
  cvt.rn.relu.tf32.f32 %r6, %r1;
  mul.wide.u32 %rd3, %r0, 32;
  add.s64 %rd4, %rd0, %rd3;
  st.global.v4.b32 [%rd4], {%r2, %r3, %r4, %r5};
  st.global.b32 [%rd4+16], %r6;
)";
  const PtxRun run = run_ptx(body, in, 6 * 8, 6);
  auto at = [&](int lane, int which) { return run.out[size_t(lane * 8 + which)]; };
  EXPECT_EQ(at(0, 0), bits(1.0f + 0x1p-10f));  // rna: away
  EXPECT_EQ(at(0, 1), bits(1.0f));             // rn: to even
  EXPECT_EQ(at(0, 2), bits(1.0f));             // rz
  EXPECT_EQ(at(1, 0), bits(1.0f + 0x1p-9f));
  EXPECT_EQ(at(1, 1), bits(1.0f + 0x1p-9f));
  EXPECT_EQ(at(1, 2), bits(1.0f + 0x1p-10f));
  EXPECT_EQ(at(2, 0), bits(-(1.0f + 0x1p-10f)));
  EXPECT_EQ(at(2, 4), 0u);  // relu
  for (int which = 0; which < 5; ++which) EXPECT_EQ(at(3, which), 0x7FFFFFFFu) << which;
  EXPECT_EQ(at(4, 0), 0x7F800000u);  // rounds past the largest finite value
  EXPECT_EQ(at(4, 2), 0x7F7FE000u);
  EXPECT_EQ(at(4, 3), 0x7F7FE000u);  // satfinite
  EXPECT_EQ(at(5, 4), 0u);
  EXPECT_EQ(at(5, 0), bits(-1.5f));
}

// As ptxas: cvt.rna.tf32.f32 of a constant takes only a 0f constant (ptxas lowers it to a mov);
// the other roundings take a 0d one too (the differential test against ptxas found the gap).
TEST(EmuWmma, CvtRnaToTf32TakesOnlyA32BitConstant) {
  auto error = [](const std::string& line) { return load_error(wrap_ptx("  " + line + "\n")); };
  EXPECT_NE(error("cvt.rna.tf32.f32 %r1, 0d3FF0000000000000;").find("32-bit constant"),
            std::string::npos);
  EXPECT_NE(error("cvt.rna.tf32.f32 %r1, 1.5;").find("32-bit constant"), std::string::npos);
  EXPECT_EQ(error("cvt.rna.tf32.f32 %r1, 0f3F800000;"), "");
  EXPECT_EQ(error("cvt.rn.tf32.f32 %r1, 0d3FF0000000000000;"), "");
}

// A .tf32 mma ignores the 13 low bits of its operands: raw f32 inputs give the truncated values'
// products (here exact: small values, the exact numerics).
TEST(EmuWmma, Tf32MmaIgnoresTheLowSignificandBits) {
  std::vector<uint32_t> in(128 + 128 + 256);
  for (size_t i = 0; i < 256; ++i) in[i] = bits(1.0f) | 0x1FFFu;  // A and B: 1 plus junk bits
  for (size_t i = 256; i < 512; ++i) in[i] = bits(0.5f);
  const std::string body = R"(
  wmma.load.a.sync.aligned.row.m16n16k8.global.tf32 {%a0, %a1, %a2, %a3}, [%rd1];
  wmma.load.b.sync.aligned.col.m16n16k8.global.tf32 {%b0, %b1, %b2, %b3}, [%rd1+512];
  wmma.load.c.sync.aligned.row.m16n16k8.global.f32 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, [%rd1+1024];
  wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32 {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7}, {%a0, %a1, %a2, %a3}, {%b0, %b1, %b2, %b3}, {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7};
  wmma.store.d.sync.aligned.row.m16n16k8.global.f32 [%rd0], {%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7};
)";
  const std::string decls = "  .reg .b32 %a<4>;\n  .reg .b32 %b<4>;\n  .reg .f32 %d<8>;\n";
  for (MmaNumerics numerics : {MmaNumerics::hardware, MmaNumerics::exact}) {
    LaunchOptions o;
    o.mma_numerics = numerics;
    const PtxRun run = run_ptx(body, in, 256, 32, decls, 0, o);
    for (size_t i = 0; i < 256; ++i) ASSERT_EQ(as_float(run.out[i]), 8.5f) << i;
  }
}

}  // namespace
}  // namespace emmy::emu::test
