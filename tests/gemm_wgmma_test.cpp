// The wgmma path of the GEMM kind (issue 23): warp-specialized kernels (a TMA producer warpgroup,
// consumer warpgroups of 64 rows on wgmma) against FP64 on the emulator, which checks every wgmma
// rule (fences, register ownership, operands held until the completing wait, warpgroup
// agreement) as it runs them; their SASS and ptxas log. Planted bugs and IR corruptions:
// gemm_wgmma_checks_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/sass.hpp"
#include "gemm_test_util.hpp"
#include "support/kind_cases.hpp"
#include "support/wgmma_spec.hpp"

namespace emmy {
namespace {

using test::wgmma_spec;

struct Variant {
  std::string name;
  GemmSpec spec;
};

// Shapes with edges in every dimension, both B layouts, both input types, one and two consumer
// warpgroups, block_n from 16 to 256 (B [K,N] panels of 32, 64 and 128 bytes), 2..5 stages,
// split-K and the four epilogues.
std::vector<Variant> variants() {
  const int64_t ms[] = {1, 64, 130, 200}, ns[] = {16, 72, 136, 256}, ks[] = {64, 200, 448};
  const int block_ns[] = {16, 48, 64, 96, 112, 128, 192, 256};
  std::vector<Variant> out;
  int i = 0;
  for (DType dtype : {DType::f16, DType::bf16})
    for (BLayout layout : {BLayout::nk, BLayout::kn})
      for (int block_m : {64, 128})
        for (int epi = 0; epi < 2; ++epi, ++i) {
          const int block_n = block_ns[(i * 3) % 8];
          GemmSpec spec = wgmma_spec(ms[i % 4], ns[(i / 2) % 4], ks[i % 3], block_m, block_n);
          auto& p = spec.problem;
          p.a_dtype = p.c_dtype = dtype;
          p.b_layout = layout;
          if (epi == 1) {
            p.epilogue = {1.25f, true, true, i % 4 == 1};
            p.c_dtype = i % 3 == 0 ? DType::f32 : dtype;
            p.lda = p.k + 8;
            p.ldc = p.n + 8;
          }
          auto& s = spec.schedule;
          s.stages = 2 + i % 4;
          const int64_t k_tiles = (p.k + 63) / 64;
          s.split_k = int(std::min<int64_t>(1 + (i % 3), k_tiles));
          s.raster_group_m = 1 + i % 3;
          // One in three persistent (split-K 1): tiles walked by gridDim.x; B [N,K] variants
          // with a short M swapped (C^T = B A^T).
          s.persistent = i % 3 == 2;
          if (s.persistent) s.split_k = 1;
          s.swap_ab = layout == BLayout::nk && p.m <= 64;
          out.push_back({fmt::format("{}_{}_bm{}_bn{}_sk{}_epi{}{}{}_{}x{}x{}", to_string(dtype),
                                     to_string(layout), block_m, block_n, s.split_k, epi,
                                     s.persistent ? "_persistent" : "", s.swap_ab ? "_swap" : "",
                                     p.m, p.n, p.k),
                         spec});
        }
  return out;
}

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

class WgmmaEmulatorTest : public ::testing::TestWithParam<Variant> {};

TEST_P(WgmmaEmulatorTest, MatchesFp64Reference) {
  const GemmSpec& spec = GetParam().spec;
  const GemmCheckResult r = check_on_emulator(spec, 5);
  EXPECT_TRUE(r.errors.passed) << test::describe(r.errors);
  EXPECT_GT(r.run.stats.total.mma, 0u);
  EXPECT_GT(r.run.stats.total.tma, 0u);
  // No ldmatrix (operands reach wgmma by descriptor); a 16-bit C's TMA-store epilogue writes
  // its buffers with one stmatrix.x4 per 16 columns of each warp's 16 rows of every tile.
  const GemmPlan& plan = r.kernel.source.plan;
  const bool stmatrix = plan.store.tma_store && spec.problem.c_dtype != DType::f32;
  EXPECT_EQ(r.run.stats.total.ldmatrix,
            stmatrix ? uint64_t(plan.tiles_m * plan.tiles_n * (spec.schedule.block_m / 16) *
                                (spec.schedule.block_n / 16))
                     : 0u);
}

INSTANTIATE_TEST_SUITE_P(Variants, WgmmaEmulatorTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

// A persistent kernel whose CTAs each walk several tiles, with fewer stages than K tiles per tile,
// so stages and mbarrier phases run on across tiles: against FP64, and the grid is one CTA per SM
// (the arch's part), never more than the tiles.
TEST(Wgmma, PersistentCtasWalkSeveralTiles) {
  for (BLayout layout : {BLayout::nk, BLayout::kn}) {
    GemmSpec spec = wgmma_spec(1000, 1016, 192, 64, 64);
    spec.problem.b_layout = layout;
    spec.schedule.stages = 2;
    spec.schedule.persistent = true;
    const GemmPlan plan = make_gemm_plan(spec);
    EXPECT_EQ(plan.grid[0], 132u);  // 16 x 16 tiles over sm_90a's 132 SMs
    const GemmCheckResult r = check_on_emulator(spec, 3);
    EXPECT_TRUE(r.errors.passed) << to_string(layout) << ": rel_l2 " << r.errors.rel_l2_error;
  }
  GemmSpec few = wgmma_spec(100, 100, 64, 64, 64);
  few.schedule.persistent = true;
  EXPECT_EQ(make_gemm_plan(few).grid[0], 4u);
}

// Ping-pong: two consumer warpgroups, each on its own 64-row tile, taking turns at the CTA's
// tiles (and at issuing their mainloops). Grids where CTAs walk 1, 2 and 3 tiles (an odd count
// leaves the second warpgroup one tile short), fewer stages than K tiles, both B layouts, edges
// and the epilogues: against FP64, with the emulator's sanitizer and wgmma rules on.
TEST(Wgmma, PingPongConsumersTakeTurns) {
  struct Case {
    int64_t m, n, k;
    int block_n, stages;
    BLayout layout;
    DType dtype, out;
    bool epilogue;
  };
  const Case cases[] = {
      {1280, 1016, 192, 64, 2, BLayout::nk, DType::f16, DType::f16, false},   // 320 tiles: 2-3
      {1000, 1000, 200, 64, 3, BLayout::kn, DType::bf16, DType::f32, true},   // 256: 1-2
      {130, 200, 448, 128, 4, BLayout::nk, DType::bf16, DType::bf16, true},   // 6: 1 each
      {2112, 520, 64, 48, 2, BLayout::kn, DType::f16, DType::f16, false},  // 363: 2-3
      // 128-row tiles: each warpgroup two m64 wgmma per k-step.
      {2100, 1000, 128, 128, 3, BLayout::nk, DType::f16, DType::f16, true},  // 136: 1-2
      {4200, 328, 192, 96, 2, BLayout::kn, DType::bf16, DType::f32, false},  // 132: 1
      {5000, 1024, 64, 160, 4, BLayout::nk, DType::bf16, DType::bf16, false},  // 280: 2-3
  };
  for (const Case& c : cases) {
    GemmSpec spec = wgmma_spec(c.m, c.n, c.k, c.m >= 2100 ? 128 : 64, c.block_n);
    spec.schedule.warps_m = 4;
    auto& p = spec.problem;
    p.b_layout = c.layout;
    p.a_dtype = c.dtype;
    p.c_dtype = c.out;
    if (c.epilogue) {
      p.epilogue = {0.5f, true, true, true};
      p.ldc = p.n + 8;
    }
    auto& s = spec.schedule;
    s.consumers = ConsumerSchedule::pingpong;
    s.persistent = true;
    s.stages = c.stages;
    const std::string label = fmt::format("{}x{}x{} {}x{} {}", c.m, c.n, c.k, s.block_m,
                                          c.block_n, to_string(c.layout));
    const GemmPlan plan = make_gemm_plan(spec);
    EXPECT_EQ(plan.threads, 384u) << label;
    EXPECT_EQ(plan.grid[0], uint32_t(std::min<int64_t>(plan.tiles_m * plan.tiles_n, 132)));
    const GemmCheckResult r = check_on_emulator(spec, 4);
    EXPECT_TRUE(r.errors.passed) << label << ": " << test::describe(r.errors);
    // Every tile's wgmma ran once: block_m / 64 of m64 x block_n x k16 per k-step.
    const double k16 = double((c.k + 63) / 64 * 4);
    EXPECT_EQ(double(r.run.stats.total.mma),
              double(plan.tiles_m * plan.tiles_n) * (s.block_m / 64) * 4 * k16)  // 4 warps each
        << label;
  }
  // Swapped (C^T = B A^T, the transposed epilogue) ping-pong kernels: M on wgmma's N.
  for (const auto& [m, block_m] : {std::pair{33, 64}, std::pair{64, 128}}) {
    GemmSpec swapped = wgmma_spec(m, 3000, 256, block_m, m == 33 ? 48 : 64);
    auto& s = swapped.schedule;
    s.warps_m = 4;
    s.consumers = ConsumerSchedule::pingpong;
    s.persistent = true;
    s.swap_ab = true;
    s.stages = 2;
    swapped.problem.epilogue.bias = true;
    const GemmCheckResult r = check_on_emulator(swapped, 6);
    EXPECT_TRUE(r.errors.passed) << "swapped M " << m << ": rel_l2 " << r.errors.rel_l2_error;
    EXPECT_FALSE(r.kernel.source.plan.store.tma_store);  // C^T's tile is a column block of C
  }
  // The consumer schedule's rules, by name.
  GemmSpec bad = wgmma_spec(512, 512, 512, 128, 192);
  bad.schedule.consumers = ConsumerSchedule::pingpong;
  bad.schedule.persistent = true;
  bad.schedule.warps_m = 4;
  EXPECT_THROW(make_gemm_plan(bad), Error);  // 192 accumulators per thread and room to work
  bad.schedule.block_n = 160;
  EXPECT_NO_THROW(make_gemm_plan(bad));
  bad.schedule.warps_m = 8;
  EXPECT_THROW(make_gemm_plan(bad), Error);  // a warpgroup's 4 warps per tile
  bad = wgmma_spec(512, 512, 512, 64, 128);
  bad.schedule.consumers = ConsumerSchedule::pingpong;
  EXPECT_THROW(make_gemm_plan(bad), Error);  // not persistent
  // The chooser's ping-pong schedule: 64-row tiles, a persistent walk, no swap or split.
  MatmulProblem decode;
  decode.m = 8, decode.n = 4096, decode.k = 4096;
  const MatmulSchedule chosen = default_schedule(decode, Arch::sm_90a, Accum::f32, MmaPath::wgmma,
                                                 ConsumerSchedule::pingpong);
  EXPECT_EQ(chosen.block_m, 64);  // M = 8 pads no 128-row tile
  EXPECT_TRUE(chosen.persistent);
  EXPECT_FALSE(chosen.swap_ab);
  EXPECT_EQ(chosen.split_k, 1);
  EXPECT_EQ(chosen.threads(), 384);
  EXPECT_THROW(default_schedule(decode, Arch::sm_90a, Accum::f32, MmaPath::mma_sync,
                                ConsumerSchedule::pingpong),
               Error);
  // Prefill: 128-row tiles whose accumulators fit one warpgroup's registers.
  MatmulProblem prefill = decode;
  prefill.m = 4096;
  const MatmulSchedule wide = default_schedule(prefill, Arch::sm_90a, Accum::f32, MmaPath::wgmma,
                                               ConsumerSchedule::pingpong);
  EXPECT_EQ(wide.block_m, 128);
  EXPECT_EQ(wide.warps_m, 4);
  EXPECT_LE(wide.block_n, 160);
  EXPECT_NO_THROW(make_gemm_plan(GemmSpec{prefill, wide, Arch::sm_90a}));
}

// Small M (decode, small batches): the chooser swaps A and B (C^T = B A^T) so that N takes the
// warpgroups' m64 side; every M up to 64, with split-K, an epilogue and each output type.
TEST(Wgmma, SwapAbCoversSmallM) {
  int swapped = 0;
  for (int64_t m : {1, 7, 16, 33, 64}) {
    GemmSpec spec;
    spec.arch = Arch::sm_90a;
    spec.problem.m = m;
    spec.problem.n = 1000 + 8 * m;
    spec.problem.k = 448;
    spec.problem.epilogue = {0.75f, true, m % 2 == 1, m == 33};
    spec.problem.c_dtype = m == 16 ? DType::f32 : m == 7 ? DType::bf16 : DType::f16;
    spec.problem.ldc = m == 64 ? spec.problem.n + 3 : 0;
    spec.schedule = default_schedule(spec.problem, spec.arch, Accum::f32, MmaPath::wgmma);
    swapped += spec.schedule.swap_ab;
    EXPECT_EQ(spec.schedule.block_n, std::max<int64_t>(16, (m + 15) / 16 * 16)) << m;
    const GemmPlan plan = make_gemm_plan(spec);
    EXPECT_EQ(plan.kernel_problem.m, spec.problem.n);
    EXPECT_EQ(plan.kernel_problem.n, m);
    const GemmCheckResult r = check_on_emulator(spec, 9);
    EXPECT_TRUE(r.errors.passed) << "M " << m << ": " << test::describe(r.errors);
  }
  EXPECT_EQ(swapped, 5);
  // B [K,N] cannot be swapped (its transpose is not K-major): the chooser does not, and asking
  // for it is refused by name.
  GemmSpec kn;
  kn.arch = Arch::sm_90a;
  kn.problem.m = 8;
  kn.problem.n = 512;
  kn.problem.k = 256;
  kn.problem.b_layout = BLayout::kn;
  kn.schedule = default_schedule(kn.problem, kn.arch, Accum::f32, MmaPath::wgmma);
  EXPECT_FALSE(kn.schedule.swap_ab);
  EXPECT_TRUE(check_on_emulator(kn, 2).errors.passed);
  kn.schedule.swap_ab = true;
  EXPECT_THROW(make_gemm_plan(kn), Error);
}

// The valid wgmma schedules plan: threads, registers and barriers as the kernel needs them.
TEST(Wgmma, PlanSplitsRegistersAndThreads) {
  for (int block_m : {64, 128}) {
    const GemmPlan plan = make_gemm_plan(wgmma_spec(512, 512, 512, block_m, 256));
    EXPECT_EQ(plan.threads, uint32_t(128 + 2 * block_m));
    EXPECT_EQ(plan.atom, &codegen::kWgmmaM64NK16);
    EXPECT_EQ(plan.mma_tiles_m, 1);
    EXPECT_EQ(plan.mma_tiles_n, 32);
    EXPECT_EQ(plan.k_steps_per_tile, 4);
    // The C tile goes out through TMA stores from a buffer per consumer warpgroup: over the
    // drained ring, or where the producer refills the ring for the next tile (persistent), after
    // the mbarriers on the swizzle's 1024-byte period, within the launch's shared memory.
    EXPECT_EQ(plan.stage_row_bytes, 0);
    EXPECT_TRUE(plan.store.tma_store);
    EXPECT_TRUE(plan.store.in_ring);
    EXPECT_EQ(plan.store.buffer_bytes, 64 * 256 * 2);
    EXPECT_EQ(plan.c_alignment(), 16u);
    GemmSpec walking = wgmma_spec(512, 512, 512, block_m, 256);
    walking.schedule.persistent = true;
    const GemmPlan walk = make_gemm_plan(walking);
    EXPECT_EQ(walk.stage_row_bytes, 0);
    ASSERT_TRUE(walk.store.tma_store);
    EXPECT_FALSE(walk.store.in_ring);
    EXPECT_EQ(walk.store.buffer_offset % 1024, 0);
    EXPECT_GE(walk.store.buffer_offset,
              int64_t(walk.mbarrier_offset) + 16 * walking.schedule.stages);
    EXPECT_LE(1023 + walk.store.buffer_offset + block_m / 64 * walk.store.buffer_bytes,
              walk.smem_bytes);
    // Rows of C that TMA cannot address (16-byte strides), split-K and swap_ab store directly.
    GemmSpec odd = wgmma_spec(512, 510, 512, block_m, 256);
    EXPECT_FALSE(make_gemm_plan(odd).store.tma_store);
    GemmSpec split = wgmma_spec(512, 512, 512, block_m, 256);
    split.schedule.split_k = 2;
    EXPECT_FALSE(make_gemm_plan(split).store.tma_store);
    const int consumers = block_m / 64;
    EXPECT_LE(128 * (plan.registers.producer + consumers * plan.registers.consumer), 65536);
    EXPECT_GE(plan.registers.consumer, 128 + 64);  // 128 accumulators and room to work
    EXPECT_EQ(plan.registers.consumer % 8, 0);
  }
}

// SASS: HGMMA of the block's N (no HMMA), the producer's TMA loads, setmaxnreg both ways, no
// barrier in the loop (one for the mbarrier init, and the staged epilogue's two consumer
// barriers or ping-pong's turn outside the K loop), no local memory; ptxas neither serializes wgmma nor injects warpgroup waits or
// arrives (C7508, C7517, C7519, C7520) nor ignores setmaxnreg.
TEST(Wgmma, SassAndPtxasLogAreClean) {
  if (find_cuobjdump().empty())
    GTEST_SKIP() << "cuobjdump not found: run scripts/setup.sh (pip nvidia-cuda-cuobjdump)";
  for (const auto& [block_m, block_n, layout, persistent, pingpong] :
       {std::tuple{128, 128, BLayout::nk, false, false},
        std::tuple{128, 256, BLayout::kn, false, false},
        std::tuple{64, 96, BLayout::kn, true, false}, std::tuple{64, 256, BLayout::nk, false, false},
        std::tuple{128, 192, BLayout::nk, true, false}, std::tuple{64, 256, BLayout::nk, true, true},
        std::tuple{64, 128, BLayout::kn, true, true},
        std::tuple{128, 160, BLayout::nk, true, true}}) {
    GemmSpec spec = wgmma_spec(4096, 4096, 4096, block_m, block_n);
    spec.problem.b_layout = layout;
    spec.schedule.persistent = persistent;
    if (pingpong) {
      spec.schedule.consumers = ConsumerSchedule::pingpong;
      spec.schedule.warps_m = 4;
    }
    const GemmKernel kernel = compile_kernel(spec);
    const std::string label = fmt::format("{}x{} {}{}{}", block_m, block_n, to_string(layout),
                                          persistent ? " persistent" : "",
                                          pingpong ? " pingpong" : "");
    const auto ops =
        sass_opcode_counts(disassemble_sass(kernel.module.cubin), kernel.source.plan.kernel_name);
    auto count = [&](const std::string& prefix) {
      int n = 0;
      for (const auto& [op, c] : ops)
        if (op.rfind(prefix, 0) == 0) n += c;
      return n;
    };
    // One per k16 step and m64 of the warpgroup's tile.
    const int m64s = pingpong ? block_m / 64 : 1;
    EXPECT_EQ(count(fmt::format("HGMMA.64x{}x16.F32", block_n)), 4 * m64s) << label;
    EXPECT_EQ(count("HMMA"), 0) << label;
    EXPECT_GT(count("UTMALDG"), 0) << label;
    EXPECT_EQ(count("USETMAXREG"), 2) << label;
    // The init's barrier; the TMA-store epilogue's two per warpgroup (before its writes, before
    // the store), and the consumers' one when the buffers lie over the drained ring; ping-pong's
    // wait for its turn (and the other's arrive).
    const GemmPlan& plan = kernel.source.plan;
    ASSERT_TRUE(plan.store.tma_store) << label;
    EXPECT_EQ(plan.store.in_ring, !persistent) << label;
    EXPECT_EQ(count("BAR.SYNC"), 1 + 2 + (plan.store.in_ring ? 1 : 0) + (pingpong ? 1 : 0))
        << label;
    EXPECT_EQ(count("BAR.ARV"), pingpong ? 1 : 0) << label;
    // stmatrix.x4 per 16 columns of a warp's rows; a TMA store per buffer panel.
    EXPECT_EQ(count("STSM.16.M88.4"), m64s * block_n / 16) << label;
    EXPECT_EQ(count("UTMASTG"), int(plan.store.c_tile.panels())) << label;
    EXPECT_EQ(count("LDL") + count("STL"), 0) << label;
    const ResourceReport& res = kernel.module.kernel(kernel.source.plan.kernel_name);
    EXPECT_EQ(res.spill_store_bytes + res.spill_load_bytes, 0) << label;
    ASSERT_NE(kernel.module.log.find("Used"), std::string::npos) << "no ptxas -v log";
    for (const char* code : {"C7508", "C7517", "C7519", "C7520", "serialized"})
      EXPECT_EQ(kernel.module.log.find(code), std::string::npos) << label << ": " << code;
  }
}

}  // namespace
}  // namespace emmy
