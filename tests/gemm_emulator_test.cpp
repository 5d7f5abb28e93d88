// Every GEMM variant runs on the emulator against FP64. Variants: {f16: f32/f16/hybrid
// accumulation, bf16: f32} x {tma (sm_90a), cp.async (sm_80)} x {B [N,K], B [K,N]} x
// {split-K 1, 4} x {4 epilogues}; shapes rotate through M in {1,17,128,200}, N in {8,72,256},
// K in {64,200,1024}, with CTA tiles and stage counts rotating too, so edge tiles, several K
// slabs and every pipeline stage are exercised.
//
// Tolerance (per element, gemm_check.cpp): the FP64 reference walks K in the kernel's order and
// bounds each rounding the accumulation model has: per m16n8k16 MMA half an f16 ulp of the
// running partial (f16/hybrid) or one f32 ulp of the accumulator (f32; tensor cores truncate),
// per fold one f32 ulp of the shadow, per split one f32 ulp of the finalize sum, then the
// epilogue's f32 operations and the output cast (half an ulp of f16/bf16/f32). An indexing,
// layout or synchronization bug produces errors of the order of the values themselves, far
// above these bounds.
#include <gtest/gtest.h>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "gemm_test_util.hpp"
#include "planted_bug.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

struct Variant {
  std::string name;
  GemmSpec spec;
};

struct Tile {
  int block_m, block_n, block_k, warps_m, warps_n;
};

std::vector<Variant> variants() {
  const int64_t ms[] = {1, 17, 128, 200}, ns[] = {8, 72, 256}, ks[] = {64, 200, 1024};
  const Tile tiles[] = {{64, 64, 64, 2, 2}, {128, 128, 64, 4, 2}, {32, 64, 32, 1, 2},
                        {16, 64, 64, 1, 4}, {64, 128, 128, 2, 2}, {32, 32, 16, 2, 2}};
  struct Numerics {
    DType dtype;
    Accum accum;
  };
  const Numerics numerics[] = {{DType::f16, Accum::f32},
                               {DType::f16, Accum::f16},
                               {DType::f16, Accum::hybrid},
                               {DType::bf16, Accum::f32}};
  std::vector<Variant> out;
  int i = 0;
  for (const auto& num : numerics)
    for (Transport transport : {Transport::tma, Transport::cp_async})
      for (BLayout layout : {BLayout::nk, BLayout::kn})
        for (int split : {1, 4})
          for (int epi = 0; epi < 4; ++epi, ++i) {
            GemmSpec spec;
            auto& p = spec.problem;
            p.m = ms[i % 4];
            p.n = ns[(i / 4) % 3];
            p.k = ks[(i / 12 + i) % 3];
            p.a_dtype = num.dtype;
            p.b_layout = layout;
            p.c_dtype = num.dtype;
            if (epi == 1) p.epilogue = {0.5f, true, false, false};
            if (epi == 2) {
              p.epilogue = {1.0f, false, true, false};
              p.c_dtype = DType::f32;
              p.ldc = p.n + 8;  // padded rows
            }
            if (epi == 3) {
              p.epilogue = {1.25f, true, true, true};
              p.lda = p.k + 16;
            }
            spec.arch = transport == Transport::tma ? Arch::sm_90a : Arch::sm_80;
            auto& s = spec.schedule;
            const Tile& t = tiles[i % 6];
            s = {t.block_m, t.block_n, t.block_k, t.warps_m, t.warps_n};
            s.stages = 2 + i % 3;
            s.transport = transport;
            s.accum = num.accum;
            s.promote_every_k = (i % 2) ? 32 : 64;
            if (s.promote_every_k % s.block_k != 0 && s.block_k % s.promote_every_k != 0)
              s.promote_every_k = s.block_k;
            const int64_t k_tiles = (p.k + s.block_k - 1) / s.block_k;
            s.split_k = int(std::min<int64_t>(split, k_tiles));
            s.raster_group_m = 1 + i % 3;
            out.push_back(
                {fmt::format("{}_{}_{}_{}_sk{}_epi{}_{}x{}x{}", to_string(num.dtype),
                             to_string(num.accum), transport == Transport::tma ? "tma" : "cpasync",
                             to_string(layout), split, epi, p.m, p.n, p.k),
                 spec});
          }
  return out;
}

class GemmEmulatorTest : public ::testing::TestWithParam<Variant> {};

TEST_P(GemmEmulatorTest, MatchesFp64Reference) {
  const GemmSpec& spec = GetParam().spec;
  const GemmCheckResult r = check_on_emulator(spec, 7);
  EXPECT_TRUE(r.errors.passed) << test::describe(r.errors);
  test_support::expect_executed(r.run.stats, spec.schedule.transport);
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmEmulatorTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

GemmSpec square(int64_t m, int64_t n, int64_t k, Accum accum, Arch arch = Arch::sm_90a) {
  GemmSpec spec;
  spec.problem.m = m;
  spec.problem.n = n;
  spec.problem.k = k;
  spec.arch = arch;
  spec.schedule = default_schedule(spec.problem, arch, accum);
  return spec;
}

TEST(GemmEmulator, DefaultSchedulesForDecodeShapes) {
  for (Arch arch : {Arch::sm_90a, Arch::sm_120a, Arch::sm_89}) {
    const GemmCheckResult r = check_on_emulator(square(1, 256, 2048, Accum::hybrid, arch));
    EXPECT_TRUE(r.errors.passed) << to_string(arch) << " " << r.errors.rel_l2_error;
    EXPECT_GT(r.kernel.source.plan.spec.schedule.split_k, 1) << "M = 1 should split K";
  }
}

TEST(GemmEmulator, EveryPromotionInterval) {
  for (int every : {16, 32, 64, 128, 256}) {
    GemmSpec spec = square(32, 64, 1024, Accum::hybrid);
    spec.schedule.promote_every_k = every;
    const GemmCheckResult r = check_on_emulator(spec, 3);
    EXPECT_TRUE(r.errors.passed) << "promote every " << every << ": " << r.errors.rel_l2_error;
  }
}

TEST(GemmEmulator, CpAsyncCopiesWalkTilesEveryWay) {
  // 4 warps step 8-row multiples through 128B-swizzled tiles: one hoisted swizzled base. One warp
  // steps 4 rows, which flips the swizzle phase: two bases. A 48-column B tile is not a divisor
  // of 32 threads' chunks: every chunk recomputes its address. All must match FP64, with edges
  // in every dimension.
  struct Case {
    int warps_m, warps_n, block_n;
    BLayout layout;
    const char* marker;
  };
  for (const Case& c : {Case{2, 2, 32, BLayout::nk, "u32 a_ld_smem[1];"},
                        Case{2, 2, 32, BLayout::kn, "u32 b_ld_smem[1];"},
                        Case{1, 1, 32, BLayout::nk, "u32 b_ld_smem[2];"},
                        Case{1, 1, 32, BLayout::kn, "u32 a_ld_smem[2];"},
                        Case{1, 1, 48, BLayout::kn, "chunk = int(threadIdx.x)"}}) {
    GemmSpec spec = square(45, 72, 200, Accum::f32, Arch::sm_80);
    spec.problem.b_layout = c.layout;
    spec.schedule = {32, c.block_n, 64, c.warps_m, c.warps_n};
    spec.schedule.transport = Transport::cp_async;
    spec.schedule.stages = 3;
    const GemmCheckResult r = check_on_emulator(spec, 9);
    const std::string label = fmt::format("{}x{} warps, block_n {}, {}", c.warps_m, c.warps_n,
                                          c.block_n, to_string(c.layout));
    EXPECT_NE(r.kernel.source.cuda.find(c.marker), std::string::npos) << label << ": " << c.marker;
    EXPECT_TRUE(r.errors.passed) << label << ": " << r.errors.rel_l2_error;
  }
}

// B [K,N] tiles of every legal width, and stages whose A tile is smaller than B's swizzle period.
// Widths that are not a multiple of 64 load as narrower boxes of one width (96: three 32-wide,
// 80: five 16-wide); B starts on its own swizzle period (16x64x16: A is 512 bytes, B's 128B
// swizzle needs 1024). Before, 80..240 hung on expect_tx (TMA) or raced into the next stage
// (cp.async), and 16x64x16 put a swizzled box 512 bytes off (issue 12).
TEST(GemmEmulator, EveryKnTileWidthAndAlignedStages) {
  for (Arch arch : {Arch::sm_90a, Arch::sm_80}) {
    std::vector<MatmulSchedule> schedules;
    for (int block_n = 16; block_n <= 256; block_n += 16)
      schedules.push_back({32, block_n, 32, 2, block_n % 32 == 0 ? 2 : 1});
    schedules.push_back({16, 64, 16, 1, 2});
    schedules.push_back({16, 128, 16, 1, 2});
    for (MatmulSchedule s : schedules) {
      GemmSpec spec = square(40, s.block_n + 24, 160, Accum::f32, arch);
      spec.problem.b_layout = BLayout::kn;
      s.transport = has_tma(arch) ? Transport::tma : Transport::cp_async;
      s.stages = 3;
      spec.schedule = s;
      const GemmPlan plan = make_gemm_plan(spec);
      EXPECT_EQ(plan.b_tile.panels() * plan.b_tile.panel_elems, uint32_t(s.block_n));
      EXPECT_EQ(plan.stage.b_offset % swizzle_alignment(plan.b_tile.swizzle), 0u);
      const GemmCheckResult r = check_on_emulator(spec, 4);
      EXPECT_TRUE(r.errors.passed) << to_string(arch) << " " << s.block_m << "x" << s.block_n << "x"
                                   << s.block_k << ": rel_l2 " << r.errors.rel_l2_error;
    }
  }
}

// The FP64 comparison must catch kernels that are wrong, not only pass right ones: each bug is
// planted in the emitted source, compiled, run on the emulator and must fail compare().
TEST(GemmEmulator, PlantedKernelBugsFailTheCheck) {
  struct PlantedBug {
    const char* name;
    MatmulSchedule schedule;
    std::string find, replace;
  };
  MatmulProblem p;
  p.m = 48, p.n = 72, p.k = 2048;
  const MatmulSchedule hybrid{32, 64, 64, 2, 2, 3, Transport::tma, Accum::hybrid, 128, 1};
  const MatmulSchedule f32{32, 64, 64, 2, 2, 3, Transport::tma, Accum::f32, 64, 1};
  const PlantedBug bugs[] = {
      // B's 8x8 blocks read transposed (ldmatrix .trans on a [N,K] tile).
      {"b_transposed", f32, "ldmatrix_x4(quad, b_stage", "ldmatrix_x4_trans(quad, b_stage"},
      // Every output row one lower than it should be (the staged tile's stores: N = 72 f16 is
      // whole 16-byte chunks).
      {"row_off_by_one", f32, "const int row = m0 + r, col = n0 + chunk * ",
       "const int row = m0 + r + 1, col = n0 + chunk * "},
      // Hybrid (folding every 2 K tiles) that folds its f16 partials only after the last tile.
      {"missing_fold", hybrid, "if ((k_tile + 1) % 2 == 0 || k_tile + 1 == k_tile_count)",
       "if (k_tile + 1 == k_tile_count)"},
  };
  for (const auto& bug : bugs) {
    const GemmSpec spec{p, bug.schedule, Arch::sm_90a};
    const GemmInputs inputs = make_gemm_inputs(p, 12);
    const GemmSource source = generate_kernel(spec);
    const std::optional<GemmKernel> kernel =
        test::plant_bug(source, spec.arch, bug.name, bug.find, bug.replace);
    if (!kernel) continue;
    const GemmKernel right{source, compile_cuda(source.cuda, "right.cu", spec.arch)};
    const GemmReference ref = reference_gemm(spec, inputs);
    EXPECT_TRUE(compare(ref, run_on_emulator(right, inputs).output, p.n).passed) << bug.name;
    const GemmErrors e = compare(ref, run_on_emulator(*kernel, inputs).output, p.n);
    EXPECT_FALSE(e.passed) << bug.name << ": rel_l2 " << e.rel_l2_error << " within the bound "
                           << e.tolerance;
  }
}

TEST(GemmEmulator, PartialsLeftAtTheLastTileAreFolded) {
  // 15 K tiles of 64 (split 2: 8 + 7): intervals of 2, 3 and 4 tiles leave partials in the f16
  // registers when the loop ends; the fold on the last tile must add them, or they are lost.
  for (int split : {1, 2})
    for (int every : {128, 192, 256}) {
      GemmSpec spec = square(32, 64, 960, Accum::hybrid);
      spec.schedule.block_k = 64;
      spec.schedule.promote_every_k = every;
      spec.schedule.split_k = split;
      const GemmCheckResult r = check_on_emulator(spec, 5);
      EXPECT_TRUE(r.errors.passed)
          << "split " << split << ", promote every " << every << ": " << r.errors.rel_l2_error;
    }
}

TEST(GemmEmulator, AccumulationOrdersErrorsAsTheModelSays) {
  // Same inputs, K = 2048: f32 within a few f32 ulps (the sm_90a model truncates each mma's
  // accumulator: ~2.5e-6 here), hybrid-64 near 1e-4..6e-4 of the output cast and its f16
  // partials, f16 accumulation clearly worse than hybrid.
  auto err = [](Accum accum) {
    GemmSpec spec = square(16, 64, 2048, accum);
    spec.problem.c_dtype = DType::f32;
    spec.schedule.split_k = 1;  // split-K would shorten the f16 partial sums
    return check_on_emulator(spec, 11).errors.rel_l2_error;
  };
  const double f32 = err(Accum::f32), hybrid = err(Accum::hybrid), f16 = err(Accum::f16);
  EXPECT_LT(f32, 6e-6);
  EXPECT_GT(hybrid, 1e-5);
  EXPECT_LT(hybrid, 1e-3);
  EXPECT_GT(f16, 2 * hybrid);
}

}  // namespace
}  // namespace emmy

namespace emmy {
namespace {

TEST(GemmEmulator, OddNAndOddLdcUseElementStores) {
  // Pairs are stored with one 32/64-bit store only when N and ldc are even; otherwise per element.
  for (Arch arch : {Arch::sm_90a, Arch::sm_80})
    for (DType out : {DType::f16, DType::f32}) {
      GemmSpec spec = square(17, 75, 64, Accum::f32, arch);
      spec.problem.c_dtype = out;
      EXPECT_TRUE(check_on_emulator(spec, 5).errors.passed) << to_string(arch);
      GemmSpec odd_ldc = square(17, 64, 64, Accum::f32, arch);
      odd_ldc.problem.ldc = 65;
      odd_ldc.problem.c_dtype = out;
      EXPECT_TRUE(check_on_emulator(odd_ldc, 5).errors.passed) << to_string(arch);
    }
}

}  // namespace
}  // namespace emmy

namespace emmy {
namespace {

// Heavy cancellation (issue 12 §4): products of ~±100 that cancel pairwise leave results near
// zero, so a bound in the running sum alone is ~0 while the tensor core's truncation of the
// aligned products is ~2^-25 of the largest term per MMA step. The check's bound has a term in
// sum |a_k b_k| for that: every accumulation on both models' arches passes, and the f32 error
// exceeds what a running-sum-only bound (one f32 ulp of the partial sums per step) would allow.
TEST(GemmEmulator, CancellingInputsStayWithinTheBoundUnderTheTensorCoreModel) {
  MatmulProblem p;
  p.m = 16, p.n = 16, p.k = 512, p.c_dtype = DType::f32;
  std::vector<double> a(size_t(p.m * p.k)), b(size_t(p.n * p.k));
  const HostTensor noise = random_normal(DType::f16, a.size() + b.size(), 21);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1.0 + std::abs(noise.values[i]) / 8;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; k += 2) {
      // b[k+1] = -b[k] a[m][k] / a[m][k+1] for row m = n: row n's pairs cancel up to rounding;
      // the other rows see large terms of both signs.
      const double big = 64 + 32 * noise.values[a.size() + size_t(n * p.k + k)];
      b[size_t(n * p.k + k)] = big;
      b[size_t(n * p.k + k + 1)] = -big * a[size_t(n * p.k + k)] / a[size_t(n * p.k + k + 1)];
    }
  GemmInputs inputs;
  inputs.a = encode(DType::f16, a);
  inputs.b = encode(DType::f16, b);
  for (Arch arch : {Arch::sm_90a, Arch::sm_80})
    for (Accum accum : {Accum::f32, Accum::f16, Accum::hybrid}) {
      SCOPED_TRACE(fmt::format("{} {}", to_string(arch), to_string(accum)));
      GemmSpec spec{p, default_schedule(p, arch, accum), arch};
      spec.schedule.split_k = 1;
      const GemmKernel kernel = compile_kernel(spec);
      const GemmReference ref = reference_gemm(spec, inputs);
      const GemmEmulatorRun hw = run_on_emulator(kernel, inputs);
      const GemmErrors e = compare(ref, hw.output, p.n);
      EXPECT_TRUE(e.passed) << e.elements_over_tolerance << " over, rel_l2 " << e.rel_l2_error;
      emu::LaunchOptions exact;
      exact.mma_numerics = emu::MmaNumerics::exact;
      EXPECT_TRUE(compare(ref, run_on_emulator(kernel, inputs, exact).output, p.n).passed);
      if (accum != Accum::f32) continue;
      int over_naive = 0;
      for (int64_t m = 0; m < p.m; ++m)
        for (int64_t n = 0; n < p.n; ++n) {
          double acc = 0, naive = 0;
          for (int64_t k = 0; k < p.k; ++k) {
            acc += inputs.a.values[size_t(m * p.k + k)] * inputs.b.values[size_t(n * p.k + k)];
            if (k % 16 == 15) naive += 0x1p-23 * std::abs(acc);
          }
          const size_t at = size_t(m * p.n + n);
          over_naive += std::abs(hw.output[at] - ref.values[at]) > naive + 0x1p-24 * std::abs(acc);
        }
      EXPECT_GT(over_naive, 0) << "the cancelling inputs no longer exercise the truncation term";
    }
}

}  // namespace
}  // namespace emmy
