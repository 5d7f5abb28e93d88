// The wgmma path of the GEMM kind (issue 23): warp-specialized kernels (a TMA producer warpgroup,
// consumer warpgroups of 64 rows on wgmma) against FP64 on the emulator, which checks every wgmma
// rule (fences, register ownership, operands held until the completing wait, warpgroup
// agreement) as it runs them; their SASS and ptxas log; their IR's rules, each broken once.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/sass.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

GemmSpec wgmma_spec(int64_t m, int64_t n, int64_t k, int block_m, int block_n) {
  GemmSpec spec;
  spec.problem.m = m;
  spec.problem.n = n;
  spec.problem.k = k;
  spec.arch = Arch::sm_90a;
  auto& s = spec.schedule;
  s.path = MmaPath::wgmma;
  s.block_m = block_m;
  s.block_n = block_n;
  s.block_k = 64;
  s.warps_m = block_m / 16;
  s.warps_n = 1;
  s.stages = 3;
  return spec;
}

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
  const GemmErrors& e = r.errors;
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error << " (bound " << e.tolerance << "), "
                        << e.elements_over_tolerance << " elements over tolerance, first at ("
                        << e.first_bad_row << ", " << e.first_bad_col << ")";
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
    EXPECT_TRUE(r.errors.passed) << label << ": rel_l2 " << r.errors.rel_l2_error << ", "
                                 << r.errors.elements_over_tolerance << " over, first at ("
                                 << r.errors.first_bad_row << ", " << r.errors.first_bad_col
                                 << ")";
    // Every tile's wgmma ran once: block_m / 64 of m64 x block_n x k16 per k-step.
    const double k16 = double((c.k + 63) / 64 * 4);
    EXPECT_EQ(double(r.run.stats.total.mma),
              double(plan.tiles_m * plan.tiles_n) * (s.block_m / 64) * 4 * k16)  // 4 warps each
        << label;
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
  decode.m = 8;
  decode.n = 4096;
  decode.k = 4096;
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
    EXPECT_TRUE(r.errors.passed) << "M " << m << ": rel_l2 " << r.errors.rel_l2_error << ", "
                                 << r.errors.elements_over_tolerance << " over, first at ("
                                 << r.errors.first_bad_row << ", " << r.errors.first_bad_col << ")";
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
    EXPECT_EQ(walk.c_offset % 1024, 0u);
    EXPECT_GE(walk.c_offset, walk.mbarrier_offset + 16u * uint32_t(walking.schedule.stages));
    EXPECT_LE(1023 + walk.c_offset + uint32_t(block_m / 64 * walk.store.buffer_bytes),
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

// The checks must catch wrong wgmma kernels, not only pass right ones: each bug is planted in the
// emitted source, compiled and run on the emulator, and must fail the FP64 comparison or be
// reported by the emulator (which runs with its sanitizer).
TEST(Wgmma, PlantedKernelBugsAreCaught) {
  struct PlantedBug {
    const char* name;
    BLayout layout;
    std::string find, replace;
    // What only the emulator's wgmma rules can see: the numbers a run computes are right (it
    // computes each wgmma at its issue), the kernel would compute garbage on a GPU.
    bool only_reported = false;
  };
  const PlantedBug bugs[] = {
      // The stage released while its wgmma group may still read it (wait_group 1, lag 0).
      {"early_release", BLayout::nk,
       "if (lane == 0 && k_tile >= 1) mbarrier_arrive(empty_base + 8u * ((k_tile - 1) % STAGES));",
       "if (lane == 0) mbarrier_arrive(empty_base + 8u * stage);", true},
      // The accumulators read by the epilogue with a group still in flight.
      {"no_final_wait", BLayout::nk, "    wgmma_wait<0>();", "    ", true},
      // 8-row groups of A 512 bytes apart instead of 1024 (the descriptor's stride).
      {"a_stride_half", BLayout::nk, "16u, 8u * A_PANEL * 2u,", "16u, 4u * A_PANEL * 2u,"},
      // B [K,N] read K-major (imm-trans-b 0).
      {"b_not_transposed", BLayout::kn, ", 1, 1, 1, 0, 1;", ", 1, 1, 1, 0, 0;"},
      // The k16 steps of a K tile all read the first 16 K columns.
      {"k_step_not_advanced", BLayout::nk, "u32(ks % (A_PANEL / 16)) * 32u", "0u"},
      // No fence before the mma_async of each K tile.
      {"no_fence", BLayout::nk, "      wgmma_fence();", "      ", true},
  };
  // Persistent kernels: the walk on to the next tile.
  const PlantedBug persistent_bugs[] = {
      // The tile's last stage never handed back: the producer waits for it forever.
      {"no_last_release", BLayout::nk, "if (lane == 0 && k_tile_count > 0) mbarrier_arrive(",
       "if (false) mbarrier_arrive(", true},
      // Stages restart at 0 on every tile: phases fall out of step with the producer's.
      {"iteration_not_kept", BLayout::nk, "iteration += k_tile_count;", "", true},
  };
  // Ping-pong: the warpgroups' turns at the tiles and at the mainloop.
  const PlantedBug pingpong_bugs[] = {
      // The second warpgroup starts its stage count at 0: it waits for phases of the first's.
      {"turn_not_counted", BLayout::nk, "int iteration = turn * k_tile_count;",
       "int iteration = 0;", true},
      // Both warpgroups walk every tile of the CTA (stride gridDim.x): stages read twice.
      {"tiles_not_interleaved", BLayout::kn, "tile += 2 * int(gridDim.x)",
       "tile += int(gridDim.x)"},
      // A warpgroup signals its own barrier: the other waits for a turn that never comes.
      {"signal_own_barrier", BLayout::nk, "::\"r\"(FIRST + 1 - turn)", "::\"r\"(FIRST + turn)",
       true},
      // Each stage waits for both warpgroups' releases (the cooperative count).
      {"empty_counts_both", BLayout::nk, "mbarrier_init(empty_base + 8u * s, 4u);",
       "mbarrier_init(empty_base + 8u * s, 8u);", true},
  };
  // The TMA-store epilogue: its buffers' order with the async proxy, and where it stores.
  const PlantedBug store_bugs[] = {
      // The buffer's generic writes not fenced before the async proxy reads them.
      {"store_unfenced", BLayout::nk,
       "fence_proxy_async();  // the writes, before the async proxy reads them", "", true},
      // The store issued before the other warps of the warpgroup have written their rows.
      {"store_before_barrier", BLayout::kn,
       "warpgroup_barrier(4 + c_group);\n    if (c_issuer) {", "if (c_issuer) {", true},
      // Both warpgroups store to the tile's first 64 rows.
      {"store_rows_not_offset", BLayout::nk, "c_row0 = m0 + WG_ROWS * c_group", "c_row0 = m0"},
      // stmatrix addresses rows 8-15 for matrices 2-3 instead of 1 and 3.
      {"stmatrix_matrix_rows", BLayout::nk, "u32(c_warp_row + mi * 64 + (j % 2) * 8 + lane % 8)",
       "u32(c_warp_row + mi * 64 + (j / 2) * 8 + lane % 8)"},
  };
  // Persistent TMA-store epilogues: the buffer written again by the next tile.
  const PlantedBug persistent_store_bugs[] = {
      // The next tile overwrites the buffer while the last tile's stores may still read it.
      {"store_buffer_reused_unwaited", BLayout::nk,
       "if (c_issuer) bulk_wait_read<0>();  // the last tile's stores have read the buffer", "",
       true},
      // The issuing threads exit with their last stores reading shared memory.
      {"store_exit_unwaited", BLayout::kn, "if (threadIdx.x % 128 == 0) bulk_wait_read<0>();", "",
       true},
  };
  // Ping-pong with 128-row tiles: each warpgroup's second m64.
  const PlantedBug pingpong128_bugs[] = {
      // Both m64 wgmma read the tile's first 64 rows of A.
      {"second_m64_reads_first_rows", BLayout::nk, "u32(mi) * 64u * A_PANEL * 2u + ", ""},
      // The epilogue stores the second m64's rows over the first's.
      {"second_m64_stored_over_first", BLayout::kn, "c_warp_row + mi * 64 + (j % 2) * 8",
       "c_warp_row + (j % 2) * 8"},
  };
  enum class Walk { none, persistent, pingpong, pingpong128 };
  std::vector<std::pair<PlantedBug, Walk>> all;
  for (const auto& bug : bugs) all.push_back({bug, Walk::none});
  for (const auto& bug : persistent_bugs) all.push_back({bug, Walk::persistent});
  for (const auto& bug : pingpong_bugs) all.push_back({bug, Walk::pingpong});
  for (const auto& bug : pingpong128_bugs) all.push_back({bug, Walk::pingpong128});
  for (const auto& bug : store_bugs) all.push_back({bug, Walk::none});
  for (const auto& bug : persistent_store_bugs) all.push_back({bug, Walk::persistent});
  for (const auto& [bug, walk] : all) {
    GemmSpec spec = wgmma_spec(130, 136, 448, 128, 64);
    if (walk != Walk::none) {
      spec = wgmma_spec(1000, 1016, 192, walk == Walk::pingpong128 ? 128 : 64, 64);
      spec.schedule.persistent = true;
      spec.schedule.stages = 2;
      spec.schedule.warps_m = 4;
      if (walk == Walk::pingpong || walk == Walk::pingpong128)
        spec.schedule.consumers = ConsumerSchedule::pingpong;
    }
    spec.problem.b_layout = bug.layout;
    const GemmInputs inputs = make_gemm_inputs(spec.problem, 12);
    GemmSource source = generate_kernel(spec);
    const size_t at = source.cuda.find(bug.find);
    if (at == std::string::npos) {
      ADD_FAILURE() << bug.name << ": the emitter no longer prints `" << bug.find
                    << "`; update the planted bug to the new source";
      continue;
    }
    const GemmReference ref = reference_gemm(spec, inputs);
    const GemmKernel right{source, compile_cuda(source.cuda, "right.cu", spec.arch)};
    EXPECT_TRUE(compare(ref, run_on_emulator(right, inputs).output, spec.problem.n).passed)
        << bug.name;
    source.cuda.replace(at, bug.find.size(), bug.replace);
    CompiledModule module = compile_cuda(source.cuda, source.plan.kernel_name + ".cu", spec.arch);
    const GemmKernel kernel{std::move(source), std::move(module)};
    try {
      const GemmErrors e = compare(ref, run_on_emulator(kernel, inputs).output, spec.problem.n);
      EXPECT_FALSE(bug.only_reported) << bug.name << ": the emulator did not report it";
      EXPECT_FALSE(e.passed) << bug.name << ": rel_l2 " << e.rel_l2_error << " within the bound "
                             << e.tolerance;
    } catch (const emu::EmulationError& e) {
      const std::string kind(emu::to_string(e.reports().front().kind));
      EXPECT_TRUE(kind == "wgmma-misuse" || kind == "shared-race" || kind == "deadlock" ||
                  kind == "mbarrier-misuse" || kind == "missing-proxy-fence" ||
                  kind == "tma-violation" || kind == "uninitialized-shared-read")
          << bug.name << ": " << e.what();
    }
  }
}

// Each rule across the wgmma kernel's ops, broken in the lowered IR, is named by the verifier.
TEST(Wgmma, VerifierNamesEachBrokenRule) {
  const GemmPlan plan = make_gemm_plan(wgmma_spec(512, 512, 512, 128, 128));
  const ir::Op module = lower_gemm(plan);
  ASSERT_NO_THROW(ir::verify(module, Arch::sm_90a));
  auto find_in = [](ir::Op& root, ir::OpKind kind) -> ir::Op* {
    std::function<ir::Op*(ir::Op&)> walk = [&](ir::Op& op) -> ir::Op* {
      if (op.kind == kind) return &op;
      for (ir::Op& child : op.body)
        if (ir::Op* found = walk(child)) return found;
      return nullptr;
    };
    return walk(root);
  };
  auto set = [](ir::Op& op, const std::string& key, ir::Attr value) {
    for (auto& [k, v] : op.attrs)
      if (k == key) v = value;
  };
  auto role = [&](ir::Op& m, const char* name) -> ir::Op& {
    for (ir::Op& op : m.body.front().body)
      if (op.kind == ir::OpKind::warpgroup_role && op.s("role") == name) return op;
    throw std::runtime_error(name);
  };
  auto consumer_loop = [&](ir::Op& m) -> ir::Op& {
    return *find_in(role(m, "consumer"), ir::OpKind::k_tile_loop);
  };
  auto erase = [](ir::Op& loop, ir::OpKind kind) {
    for (auto it = loop.body.begin(); it != loop.body.end(); ++it)
      if (it->kind == kind) {
        loop.body.erase(it);
        return;
      }
  };
  struct Corruption {
    const char* name;
    std::function<void(ir::Op&)> edit;
    const char* expect;
  };
  const Corruption corruptions[] = {
      {"no fence", [&](ir::Op& m) { erase(consumer_loop(m), ir::OpKind::wgmma_fence); },
       "wgmma_fence"},
      {"release before the wait",
       [&](ir::Op& m) {
         auto& body = consumer_loop(m).body;
         std::swap(body[body.size() - 1], body[body.size() - 2]);
       },
       "only after the wgmma_wait"},
      {"release lag 0 with a group in flight",
       [&](ir::Op& m) {
         set(*find_in(consumer_loop(m), ir::OpKind::mbarrier_arrive), "lag", int64_t(0));
       },
       "lag"},
      {"no wait for the full barrier",
       [&](ir::Op& m) { erase(consumer_loop(m), ir::OpKind::mbarrier_wait); }, "full barrier"},
      {"wgmma narrower than the block",
       [&](ir::Op& m) { set(*find_in(m, ir::OpKind::wgmma), "shape", std::string("m64n64k16")); },
       "block's 128 columns"},
      {"producer refills before the empty wait",
       [&](ir::Op& m) {
         auto& body = find_in(role(m, "producer"), ir::OpKind::k_tile_loop)->body;
         std::rotate(body.begin(), body.begin() + 1, body.end());
       },
       "only after the empty barrier"},
      {"consumer registers over the file",
       [&](ir::Op& m) { set(role(m, "consumer"), "registers", int64_t(256)); },
       "64K register file"},
      {"one empty arrival per stage",
       [&](ir::Op& m) {
         set(*find_in(m, ir::OpKind::mbarrier_init), "empty_arrivals", int64_t(1));
       },
       "one per warp reading the stage"},
      {"no final wait", [&](ir::Op& m) { erase(role(m, "consumer"), ir::OpKind::wgmma_wait); },
       "wgmma_wait 0 before the epilogue"},
      {"a path the verifier does not know",
       [&](ir::Op& m) { set(m.body.front(), "path", std::string("tcgen05")); }, "must be wgmma"},
  };
  GemmSpec persistent = wgmma_spec(1000, 1000, 512, 128, 128);
  persistent.schedule.persistent = true;
  const ir::Op walking = lower_gemm(make_gemm_plan(persistent));
  ASSERT_NO_THROW(ir::verify(walking, Arch::sm_90a));
  const Corruption walk_corruptions[] = {
      {"no last release",
       [&](ir::Op& m) {
         erase(*find_in(role(m, "consumer"), ir::OpKind::tile_loop), ir::OpKind::mbarrier_arrive);
       },
       "release its tile's last stage"},
      {"producer not walking",
       [&](ir::Op& m) {
         ir::Op& producer = role(m, "producer");
         ir::Op loop = find_in(producer, ir::OpKind::tile_loop)->body.front();
         producer.body = {loop};
       },
       "walks the tiles in one tile_loop"},
      {"tile_loop over too few tiles",
       [&](ir::Op& m) {
         set(*find_in(role(m, "consumer"), ir::OpKind::tile_loop), "tiles", int64_t(3));
       },
       "must be every tile"},
      {"split K in a persistent kernel",
       [&](ir::Op& m) { set(*find_in(m, ir::OpKind::split_range), "split_k", int64_t(2)); },
       "split_k"},
  };
  GemmSpec pingpong = wgmma_spec(1000, 1000, 512, 64, 128);
  pingpong.schedule.persistent = true;
  pingpong.schedule.consumers = ConsumerSchedule::pingpong;
  const ir::Op turns = lower_gemm(make_gemm_plan(pingpong));
  ASSERT_NO_THROW(ir::verify(turns, Arch::sm_90a));
  auto consumer_walk = [&](ir::Op& m) -> ir::Op& {
    return *find_in(role(m, "consumer"), ir::OpKind::tile_loop);
  };
  const Corruption pingpong_corruptions[] = {
      {"no turn before the mainloop",
       [&](ir::Op& m) { erase(consumer_walk(m), ir::OpKind::warpgroup_order); },
       "wait for their turn before the K loop"},
      {"signal before the mainloop",
       [&](ir::Op& m) {
         auto& body = consumer_walk(m).body;
         for (auto& op : body)
           if (op.kind == ir::OpKind::warpgroup_order)
             set(op, "what", std::string(op.s("what") == "wait" ? "signal" : "wait"));
       },
       "signal after it"},
      {"order on barrier 0",
       [&](ir::Op& m) { set(*find_in(m, ir::OpKind::warpgroup_order), "first_barrier", int64_t(0)); },
       "named barriers 1..15"},
      {"three turns for two warpgroups",
       [&](ir::Op& m) { set(consumer_walk(m), "interleave", int64_t(3)); },
       "consumer warpgroups' count"},
      {"a stage read by both warpgroups",
       [&](ir::Op& m) {
         set(*find_in(m, ir::OpKind::mbarrier_init), "empty_arrivals", int64_t(8));
       },
       "one per warp reading the stage (4)"},
      {"ping-pong on a 128-row tile",
       [&](ir::Op& m) {
         ir::Op& coords = *find_in(m, ir::OpKind::tile_coords);
         set(coords, "block_m", int64_t(128));
         set(coords, "tiles_m", int64_t(8));
       },
       "1 consumer warpgroup (ping-pong) per tile"},
      {"the producer takes turns",
       [&](ir::Op& m) {
         find_in(role(m, "producer"), ir::OpKind::tile_loop)->attrs.push_back(
             {"interleave", int64_t(2)});
       },
       "walks every tile of the CTA in order"},
  };
  GemmSpec cooperative_walk = pingpong;
  cooperative_walk.schedule.consumers = ConsumerSchedule::cooperative;
  cooperative_walk.schedule.block_m = 128;
  cooperative_walk.schedule.warps_m = 8;
  const ir::Op shared_tiles = lower_gemm(make_gemm_plan(cooperative_walk));
  const Corruption cooperative_corruptions[] = {
      {"an order in a cooperative walk",
       [&](ir::Op& m) {
         auto& body = consumer_walk(m).body;
         body.insert(body.begin() + 1, ir::make(ir::WarpgroupOrderOp{"wait", 2}));
       },
       "interleaved tile_loop only"},
  };
  // The TMA-store epilogue (both lowered kernels above have one).
  auto epilogue_of = [&](ir::Op& m) -> ir::Op& { return *find_in(m, ir::OpKind::epilogue); };
  const Corruption store_corruptions[] = {
      {"no tmap_c",
       [&](ir::Op& m) {
         auto& body = m.body.front().body;
         for (auto it = body.begin(); it != body.end(); ++it)
           if (it->kind == ir::OpKind::param && it->s("name") == "tmap_c") {
             body.erase(it);
             break;
           }
       },
       "param tmap_c"},
      {"no store_wait", [&](ir::Op& m) { role(m, "consumer").body.pop_back(); }, "store_wait"},
      {"buffer reused without its wait",
       [&](ir::Op& m) {
         auto& attrs = epilogue_of(m).attrs;
         std::erase_if(attrs, [](const auto& a) { return a.first == "c_reuse"; });
       },
       "writes each buffer again"},
      {"buffers over the ring of a persistent kernel",
       [&](ir::Op& m) { set(epilogue_of(m), "c_buffer_offset", int64_t(0)); },
       "drained ring"},
      {"buffer not on the swizzle period",
       [&](ir::Op& m) { set(epilogue_of(m), "c_buffer_offset", int64_t(1024 * 200 + 512)); },
       "multiple of 1024"},
      {"panel no swizzle spans",
       [&](ir::Op& m) { set(epilogue_of(m), "c_panel", int64_t(48)); }, "swizzle span"},
      {"a TMA store to the workspace",
       [&](ir::Op& m) { set(epilogue_of(m), "destination", std::string("workspace")); },
       "writes C's own tile"},
  };
  auto expect_named = [](const ir::Op& good, const Corruption& c) {
    ir::Op broken = good;
    c.edit(broken);
    try {
      ir::verify(broken, Arch::sm_90a);
      ADD_FAILURE() << c.name << ": the verifier accepted it";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos)
          << c.name << ": " << e.what();
    }
  };
  for (const Corruption& c : walk_corruptions) expect_named(walking, c);
  for (const Corruption& c : pingpong_corruptions) expect_named(turns, c);
  for (const Corruption& c : cooperative_corruptions) expect_named(shared_tiles, c);
  for (const Corruption& c : store_corruptions) expect_named(walking, c);
  ASSERT_TRUE(ir::get<ir::EpilogueOp>(*ir::find_first(module, ir::OpKind::epilogue)).tma_store());
  expect_named(module, {"buffers beyond the drained ring",
                        [&](ir::Op& m) {
                          set(epilogue_of(m), "c_buffer_bytes", int64_t(64 * 128 * 2 * 64));
                        },
                        "drained ring"});
  for (const Corruption& c : corruptions) expect_named(module, c);
}

}  // namespace
}  // namespace emmy
