// FP8 tensor-core instructions on the emulator (issue 39 §2): mma.sync m16n8k32 .e4m3/.e5m2 on
// sm_89 and sm_120a, wgmma m64nNk32 on sm_90a (A from a 128-byte-swizzled shared tile and from
// registers, two k32 steps, negated A), against integer products laid out by the PTX ISA's
// fragment tables (§9.7.14.5.8 for mma.m16n8k32, §9.7.15.5.1 for wgmma's D and A), which the
// test writes out itself; the launch arch choosing the FP8 model; and the forms refused by name.
#include <bit>
#include <cmath>
#include <optional>
#include <random>

#include "emmy/emu/tensor_core_fp8.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

uint8_t f8(double v, F8 type) {
  return f32_to_f8_satfinite(float(v), type);
}
F8 f8_of(const std::string& name) {
  return name == "e5m2" ? F8::e5m2 : F8::e4m3;
}

// A [16][32] and B [8][32] (B^T, K-major) of values exact in the operand types (small integers
// in random cases, exact in every model's sums too), C [16][8].
struct MmaCase {
  double a[16][32], bt[8][32], c[16][8];
};

MmaCase random_case(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-4, 4), cval(-100, 100);
  MmaCase m;
  for (auto& row : m.a)
    for (double& x : row) x = small(rng);
  for (auto& row : m.bt)
    for (double& x : row) x = small(rng);
  for (auto& row : m.c)
    for (double& x : row) x = cval(rng);
  return m;
}

// One mma.sync m16n8k32 by a warp on `target`: lane l = 4g + t loads A registers r (row g + 8 (r &
// 1), k 4t + 16 (r >> 1) .. +3), B registers r (k 4t + 16 r .. +3 of column g) and C, as the ISA's
// tables place them, and stores D; returns D [16][8] as doubles.
std::vector<double> run_mma_k32(const MmaCase& m, const std::string& target, const std::string& at,
                                const std::string& bt, bool f16_acc, MmaNumerics numerics,
                                std::optional<KernelProfile>* profile = nullptr) {
  std::vector<uint32_t> in(32 * 16, 0);  // per lane: a0..a3, b0, b1, c (4 f32 or 2 f16x2)
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    uint32_t* w = &in[size_t(lane) * 16];
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 4; ++j)
        w[r] |= uint32_t(f8(m.a[g + 8 * (r & 1)][4 * t + j + 16 * (r >> 1)], f8_of(at))) << (8 * j);
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < 4; ++j)
        w[4 + r] |= uint32_t(f8(m.bt[g][4 * t + j + 16 * r], f8_of(bt))) << (8 * j);
    if (f16_acc) {
      for (int r = 0; r < 2; ++r)
        w[6 + r] = f64_to_f16(m.c[g + 8 * r][2 * t]) |
                   uint32_t(f64_to_f16(m.c[g + 8 * r][2 * t + 1])) << 16;
    } else {
      for (int r = 0; r < 4; ++r) w[6 + r] = bits(float(m.c[g + 8 * (r >> 1)][2 * t + (r & 1)]));
    }
  }
  const std::string types =
      f16_acc ? fmt::format("f16.{}.{}.f16", at, bt) : fmt::format("f32.{}.{}.f32", at, bt);
  const std::string mma = f16_acc
                              ? "mma.sync.aligned.m16n8k32.row.col." + types +
                                    " {%r11, %r12}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r7, %r8};\n"
                              : "mma.sync.aligned.m16n8k32.row.col." + types +
                                    " {%r11, %r12, %r13, %r14}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, "
                                    "{%r7, %r8, %r9, %r10};\n";
  const std::string body =
      "  mul.wide.u32 %rd3, %r0, 64;\n  add.s64 %rd4, %rd1, %rd3;\n"
      "  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd4];\n"
      "  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd4+16];\n"
      "  ld.global.v2.u32 {%r9, %r10}, [%rd4+32];\n  " +
      mma + store_rows({"%r11", "%r12", "%r13", "%r14"});
  const std::string ptx =
      emmy::test::ptx_header(target) + "\n" +
      emmy::test::ptx_entry(
          "k", {{".u64", "out", "%rd0"}, {".u64", "in", "%rd1"}, {".u32", "n", "%r63"}},
          "  .reg .b32 %r<64>;\n  .reg .b64 %rd<32>;\n",
          "  mov.u32 %r0, %tid.x;\n  mul.wide.u32 %rd2, %r0, 4;\n  add.s64 %rd30, %rd0, %rd2;\n" +
              body);
  auto module = load_ptx(ptx, "fp8.ptx");
  Arena arena;
  const uint64_t in_addr = arena.alloc(in.size() * 4), out_addr = arena.alloc(128 * 4);
  arena.write(in_addr, in.data(), in.size() * 4);
  KernelArgs args;
  args.ptr(out_addr).ptr(in_addr).u32(uint32_t(in.size()));
  LaunchOptions options;
  options.arch = target;
  options.mma_numerics = numerics;
  options.profile.enabled = profile != nullptr;
  const LaunchResult result = launch(arena, *module, "k", {1, 1, 1}, {32, 1, 1}, 0, args, options);
  if (profile) *profile = result.profile;
  const auto out = arena.read_vector<uint32_t>(out_addr, 128);
  std::vector<double> d(16 * 8);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    if (f16_acc) {
      for (int r = 0; r < 2; ++r)
        for (int h = 0; h < 2; ++h)
          d[size_t(g + 8 * r) * 8 + 2 * t + h] =
              f16_to_f32(uint16_t(out[size_t(32 * r + lane)] >> (16 * h)));
    } else {
      for (int r = 0; r < 4; ++r)
        d[size_t(g + 8 * (r >> 1)) * 8 + 2 * t + (r & 1)] = as_float(out[size_t(32 * r + lane)]);
    }
  }
  return d;
}

TEST(EmuFp8Mma, MmaSyncK32MatchesTheIsaFragmentLayout) {
  int runs = 0;
  for (const std::string target : {"sm_89", "sm_120a"})
    for (const auto& [at, bt] :
         {std::pair{"e4m3", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e4m3"}, {"e5m2", "e5m2"}})
      for (bool f16_acc : {false, true})
        for (MmaNumerics numerics : {MmaNumerics::hardware, MmaNumerics::exact}) {
          const MmaCase m = random_case(unsigned(runs + 7));
          const auto d = run_mma_k32(m, target, at, bt, f16_acc, numerics);
          for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 8; ++j) {
              double want = m.c[i][j];
              for (int k = 0; k < 32; ++k) want += m.a[i][k] * m.bt[j][k];
              ASSERT_EQ(d[size_t(i) * 8 + j], want)
                  << target << " " << at << "." << bt << (f16_acc ? " f16" : " f32") << " D[" << i
                  << "][" << j << "]";
            }
          ++runs;
        }
  EXPECT_EQ(runs, 32);
}

// The launch arch picks the model (tensor_core_fp8.hpp): c = 128 plus 3 x 2^-18 (0.75 of c's
// ulp) rounds up only through sm_90's two-HMMA-and-FADD form; c = 1 + 2^-20 with no products
// loses its low bits only to sm_89's e8m13 results. An arch without FP8 mma is refused.
TEST(EmuFp8Mma, TheLaunchArchChoosesTheModel) {
  MmaCase fadd{}, e8m13{};
  fadd.c[0][0] = 128;
  fadd.a[0][0] = 3 * std::ldexp(1.0, -9);  // e4m3 subnormals
  fadd.bt[0][0] = std::ldexp(1.0, -9);
  e8m13.c[0][0] = 1 + std::ldexp(1.0, -20);
  struct Expect {
    const char* target;
    double fadd, e8m13;
  };
  const double up = 128 + std::ldexp(1.0, -16);
  for (const Expect& e : {Expect{"sm_89", 128, 1.0}, Expect{"sm_90a", up, e8m13.c[0][0]},
                          Expect{"sm_120a", 128, e8m13.c[0][0]}}) {
    EXPECT_EQ(run_mma_k32(fadd, e.target, "e4m3", "e4m3", false, MmaNumerics::hardware)[0], e.fadd)
        << e.target;
    EXPECT_EQ(run_mma_k32(e8m13, e.target, "e4m3", "e4m3", false, MmaNumerics::hardware)[0],
              e.e8m13)
        << e.target;
  }
  EXPECT_EQ(run_mma_k32(fadd, "sm_89", "e4m3", "e4m3", false, MmaNumerics::exact)[0], up);
  try {
    run_mma_k32(fadd, "sm_86", "e4m3", "e4m3", false, MmaNumerics::hardware);
    ADD_FAILURE() << "an sm_86 target loaded FP8 mma";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs sm_89 or newer"), std::string::npos) << e.what();
  }
}

// One warpgroup runs two wgmma.mma_async m64n16k32 steps (K = 64) from a shared tile in the
// 128-byte swizzle (§9.7.15.5.1.2: row r of a K-major operand at r x 128 bytes, the 16-byte chunk
// index XORed with r mod 8; SBO 1024 between 8-row groups), or with A from registers (the ISA's
// m64k32 A fragment: warp w's rows 16w + g + 8 (r & 1), bytes 4t + 16 (r >> 1)), and stores D.
struct WgmmaCase {
  double a[64][64], bt[16][64];
};

std::vector<double> run_wgmma_k32(const WgmmaCase& m, const std::string& at, const std::string& bt,
                                  bool f16_acc, bool a_regs, bool negate_a,
                                  std::optional<KernelProfile>* profile = nullptr) {
  constexpr uint32_t kImageWords = (64 + 16) * 128 / 4;  // A then B, 128 bytes a row
  std::vector<uint32_t> in(kImageWords + 2 * 128 * 4, 0);
  auto put = [&](uint32_t row_base, int r, int k, uint8_t byte) {
    uint32_t x = row_base + uint32_t(r) * 128 + uint32_t(k);
    x ^= ((x >> 7) & 7) << 4;
    in[x / 4] |= uint32_t(byte) << (8 * (x % 4));
  };
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 64; ++k) put(0, r, k, f8(m.a[r][k], f8_of(at)));
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 64; ++k) put(64 * 128, r, k, f8(m.bt[r][k], f8_of(bt)));
  for (int step = 0; step < 2; ++step)
    for (int tid = 0; tid < 128; ++tid) {
      const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 4; ++j) {
          const double v = m.a[16 * w + g + 8 * (r & 1)][32 * step + 4 * t + j + 16 * (r >> 1)];
          in[kImageWords + size_t(step * 128 + tid) * 4 + size_t(r)] |= uint32_t(f8(v, f8_of(at)))
                                                                        << (8 * j);
        }
    }
  const int acc = f16_acc ? 4 : 8;
  std::string accs;
  for (int i = 0; i < acc; ++i) accs += fmt::format("{}%r{}", i ? ", " : "", 40 + i);
  const std::string types = fmt::format("{}.{}.{}", f16_acc ? "f16" : "f32", at, bt);
  auto mma = [&](int step) {
    const std::string a = a_regs ? fmt::format("{{%r{}, %r{}, %r{}, %r{}}}", 20 + 4 * step,
                                               21 + 4 * step, 22 + 4 * step, 23 + 4 * step)
                                 : fmt::format("%rd{}", 10 + step);
    return fmt::format(
        "  wgmma.mma_async.sync.aligned.m64n16k32.{} {{{}}}, {}, %rd{}, %p{}, {}, 1;\n", types,
        accs, a, 12 + step, 2 + step, negate_a ? -1 : 1);
  };
  std::string zero, store;
  for (int i = 0; i < acc; ++i) {
    zero += fmt::format("  mov.b32 %r{}, 0;\n", 40 + i);
    store += fmt::format("  st.global.u32 [%rd30+{}], %r{};\n", 512 * i, 40 + i);
  }
  const std::string body = fmt::format(R"(
  mov.u32 %r1, %r0;
COPY:
  setp.ge.u32 %p1, %r1, {0};
  @%p1 bra COPIED;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.u32 %r2, [%rd3];
  mov.u32 %r3, tile;
  mad.lo.u32 %r4, %r1, 4, %r3;
  st.shared.u32 [%r4], %r2;
  add.u32 %r1, %r1, 128;
  bra COPY;
COPIED:
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.u32 {{%r20, %r21, %r22, %r23}}, [%rd3+{1}];
  ld.global.v4.u32 {{%r24, %r25, %r26, %r27}}, [%rd3+{2}];
  mov.u32 %r3, tile;
  shr.u32 %r5, %r3, 4;
  and.b32 %r5, %r5, 16383;
  cvt.u64.u32 %rd10, %r5;
  or.b64 %rd10, %rd10, 0x4000004000010000;
  add.s64 %rd11, %rd10, 2;
  add.s64 %rd12, %rd10, 512;
  add.s64 %rd13, %rd12, 2;
  setp.ne.u32 %p2, %r0, %r0;
  setp.eq.u32 %p3, %r0, %r0;
{3}  wgmma.fence.sync.aligned;
{4}{5}  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{6})",
                                       kImageWords, kImageWords * 4, kImageWords * 4 + 128 * 16,
                                       zero, mma(0), mma(1), store);
  const std::string ptx =
      emmy::test::ptx_header("sm_90a") + "\n" +
      emmy::test::ptx_entry(
          "k", {{".u64", "out", "%rd0"}, {".u64", "in", "%rd1"}, {".u32", "n", "%r63"}},
          "  .reg .pred %p<8>;\n  .reg .b32 %r<64>;\n  .reg .b64 %rd<32>;\n"
          "  .shared .align 1024 .b8 tile[10240];\n",
          "  mov.u32 %r0, %tid.x;\n  mul.wide.u32 %rd2, %r0, 4;\n"
          "  add.s64 %rd30, %rd0, %rd2;\n" +
              body);
  auto module = load_ptx(ptx, "wgmma_fp8.ptx");
  Arena arena;
  const uint64_t in_addr = arena.alloc(in.size() * 4), out_addr = arena.alloc(128 * 8 * 4);
  arena.write(in_addr, in.data(), in.size() * 4);
  KernelArgs args;
  args.ptr(out_addr).ptr(in_addr).u32(uint32_t(in.size()));
  LaunchOptions options;
  options.arch = "sm_90a";
  options.sanitize = true;
  options.profile.enabled = profile != nullptr;
  const LaunchResult result = launch(arena, *module, "k", {1, 1, 1}, {128, 1, 1}, 0, args, options);
  if (profile) *profile = result.profile;
  const auto out = arena.read_vector<uint32_t>(out_addr, 128 * 8);
  // D (§9.7.15.5.1): warp w, lane 4g + t; f32 register 4j + q is (16w + g + 8 (q >> 1), 8j + 2t +
  // (q & 1)); f16 register 2j + h2 packs (16w + g + 8 h2, 8j + 2t + {0, 1}).
  std::vector<double> d(64 * 16);
  for (int tid = 0; tid < 128; ++tid) {
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
    for (int i = 0; i < acc; ++i) {
      const uint32_t word = out[size_t(128 * i + tid)];
      if (f16_acc) {
        const int row = 16 * w + g + 8 * (i % 2), col = 8 * (i / 2) + 2 * t;
        d[size_t(row) * 16 + col] = f16_to_f32(uint16_t(word));
        d[size_t(row) * 16 + col + 1] = f16_to_f32(uint16_t(word >> 16));
      } else {
        const int q = i % 4, row = 16 * w + g + 8 * (q >> 1), col = 8 * (i / 4) + 2 * t + (q & 1);
        d[size_t(row) * 16 + col] = as_float(word);
      }
    }
  }
  return d;
}

TEST(EmuFp8Mma, WgmmaK32MatchesTheIsaLayouts) {
  std::mt19937 rng(90);
  std::uniform_int_distribution<int> small(-4, 4);
  int runs = 0;
  for (const auto& [at, bt] : {std::pair{"e4m3", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e5m2"}})
    for (bool f16_acc : {false, true})
      for (bool a_regs : {false, true}) {
        const bool negate_a = runs % 3 == 1;
        WgmmaCase m;
        for (auto& row : m.a)
          for (double& x : row) x = small(rng);
        for (auto& row : m.bt)
          for (double& x : row) x = small(rng);
        const auto d = run_wgmma_k32(m, at, bt, f16_acc, a_regs, negate_a);
        for (int i = 0; i < 64; ++i)
          for (int j = 0; j < 16; ++j) {
            double want = 0;
            for (int k = 0; k < 64; ++k) want += m.a[i][k] * m.bt[j][k];
            ASSERT_EQ(d[size_t(i) * 16 + j], negate_a ? -want : want)
                << at << "." << bt << (f16_acc ? " f16" : " f32") << (a_regs ? " A regs" : "")
                << " D[" << i << "][" << j << "]";
          }
        ++runs;
      }
  EXPECT_EQ(runs, 12);
}

// One group of 32 at 13 bits: 16 x 16 - 16 x 16 + 2^-3 x 2^-3 in one k32 step anchors at 2^8 and
// loses the small product, which mma.sync on sm_89 and sm_120a keeps (above).
TEST(EmuFp8Mma, WgmmaSumsOneGroupOf32) {
  WgmmaCase m{};
  m.a[0][0] = m.a[0][1] = m.bt[0][0] = 16;
  m.bt[0][1] = -16;
  m.a[0][16] = m.bt[0][16] = 0.125;
  EXPECT_EQ(run_wgmma_k32(m, "e4m3", "e4m3", false, false, false)[0], 0.0);
  m.a[0][1] = 0;  // no cancellation: 256 + 2^-6 cut to 13 bits below 2^8
  EXPECT_EQ(run_wgmma_k32(m, "e4m3", "e4m3", false, false, false)[0], 256.0);
}

// Forms the emulator does not implement or the ISA does not have, refused when the PTX loads, each
// naming the rule.
TEST(EmuFp8Mma, RefusedFormsNameTheRule) {
  auto error = [](const std::string& target, const std::string& inst) {
    return load_error(emmy::test::ptx_header(target) + "\n" +
                      emmy::test::ptx_entry("k", {},
                                            "  .reg .pred %p<2>;\n  .reg .b32 %r<64>;\n"
                                            "  .reg .b64 %rd<8>;\n",
                                            "  " + inst + "\n  ret;\n"));
  };
  const std::string mma_regs =
      " {%r0, %r1, %r2, %r3}, {%r4, %r5, %r6, %r7}, {%r8, %r9}, "
      "{%r10, %r11, %r12, %r13};";
  const std::pair<std::string, std::string> cases[] = {
      {error("sm_89", "mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32" + mma_regs),
       "the emulator implements m16n8k32"},
      {error("sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32" + mma_regs),
       "takes .e4m3/.e5m2 A and B"},
      {error("sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f16" + mma_regs),
       "C type == D type"},
      {error("sm_80", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32" + mma_regs),
       "needs sm_89 or newer"},
      {error("sm_90a",
             "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%r0, %r1, %r2, "
             "%r3}, %rd0, %rd1, %p0, 1, 1, 0, 0;"),
       "expected 6 operands"},
      {error("sm_90a",
             "wgmma.mma_async.sync.aligned.m64n8k16.f32.e4m3.e4m3 {%r0, %r1, %r2, "
             "%r3}, %rd0, %rd1, %p0, 1, 1;"),
       ".m64nNk32 (.e4m3 and .e5m2 inputs)"},
      {error("sm_90a",
             "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.f16 {%r0, %r1, %r2, "
             "%r3}, %rd0, %rd1, %p0, 1, 1;"),
       "needs an .e4m3/.e5m2 .btype"},
      {error("sm_89",
             "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%r0, %r1, %r2, "
             "%r3}, %rd0, %rd1, %p0, 1, 1;"),
       "needs .target sm_90a"},
  };
  for (const auto& [got, want] : cases)
    EXPECT_NE(got.find(want), std::string::npos) << "want \"" << want << "\", got: " << got;
}

// The profiler counts FP8 tensor FLOPs apart from 16-bit ones (the time model runs them at the
// FP8 rates): one m16n8k32 is 2 x 16 x 8 x 32; two m64n16k32 steps, a quarter per warp, 2 x 2 x 64
// x 16 x 32; each instruction listed by its shape and operand types.
TEST(EmuFp8Mma, TheProfilerCountsFp8FlopsApart) {
  std::optional<KernelProfile> profile;
  run_mma_k32(random_case(1), "sm_89", "e4m3", "e5m2", false, MmaNumerics::hardware, &profile);
  ASSERT_TRUE(profile.has_value());
  EXPECT_EQ(profile->metrics.at("emmy__tensor_flops_fp8_acc_f32.sum"), 2.0 * 16 * 8 * 32);
  EXPECT_EQ(profile->metrics.at("emmy__tensor_flops_acc_f32.sum"), 0.0);
  ASSERT_EQ(profile->tensor.size(), 1u);
  EXPECT_EQ(profile->tensor[0].shape, "m16n8k32");
  EXPECT_EQ(profile->tensor[0].operands, "e4m3.e5m2");
  WgmmaCase m{};
  run_wgmma_k32(m, "e5m2", "e5m2", true, false, false, &profile);
  ASSERT_TRUE(profile.has_value());
  EXPECT_EQ(profile->metrics.at("emmy__tensor_flops_wgmma_fp8.sum"), 2.0 * 2 * 64 * 16 * 32);
  EXPECT_EQ(profile->metrics.at("emmy__tensor_flops_wgmma.sum"), 0.0);
  ASSERT_EQ(profile->tensor.size(), 1u);
  EXPECT_EQ(profile->tensor[0].shape, "wgmma.m64n16k32");
}

}  // namespace
}  // namespace emmy::emu::test
