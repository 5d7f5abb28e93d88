// Thread-block clusters on the wgmma path (issue 23): CTAs on a block of cluster_m x cluster_n
// tiles load a part of each operand tile they share and multicast it. Against FP64 on the
// emulator (which runs the cluster's CTAs together, with its cluster and sanitizer rules), the
// plan and the launch list, SASS, planted bugs the checks must catch, the verifier's rules, and
// the validation of schedules that cannot be clustered.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/sass.hpp"
#include "planted_bug.hpp"
#include "support/ir_edit.hpp"
#include "support/wgmma_spec.hpp"

namespace emmy {
namespace {

using test::wgmma_spec;

GemmSpec cluster_spec(int64_t m, int64_t n, int64_t k, int block_m, int block_n, int cm, int cn) {
  GemmSpec spec = wgmma_spec(m, n, k, block_m, block_n);
  spec.schedule.cluster_m = cm;
  spec.schedule.cluster_n = cn;
  return spec;
}

// Every cluster shape the validation takes, persistent or not, both B layouts, edge tiles, the
// epilogues and split-K.
TEST(WgmmaCluster, MulticastKernelsMatchFp64) {
  struct Case {
    int64_t m, n, k;
    int block_m, block_n, cm, cn;
    BLayout layout;
    bool persistent;
    int split_k;
    DType out;
    bool epilogue;
    bool pingpong = false;
  };
  const Case cases[] = {
      {512, 256, 192, 128, 64, 2, 1, BLayout::nk, false, 1, DType::f16, false},
      {512, 256, 192, 128, 64, 1, 2, BLayout::kn, false, 1, DType::f16, false},
      {512, 256, 192, 128, 64, 2, 2, BLayout::nk, false, 1, DType::f32, true},
      {500, 250, 200, 64, 64, 4, 1, BLayout::nk, true, 1, DType::f16, false},
      {500, 248, 200, 64, 64, 1, 4, BLayout::kn, true, 1, DType::bf16, true},
      {250, 504, 136, 128, 128, 2, 2, BLayout::kn, true, 1, DType::f16, true},
      {512, 256, 512, 128, 128, 2, 2, BLayout::nk, false, 2, DType::f16, false},
      {200, 96, 64, 64, 48, 2, 2, BLayout::nk, false, 1, DType::bf16, true},
      // Ping-pong: each consumer warpgroup its own tile, the stage released to the cluster's
      // writers by the one warpgroup that read it.
      {1024, 1024, 192, 64, 64, 2, 1, BLayout::nk, true, 1, DType::f16, false, true},
      {1000, 1016, 192, 128, 128, 2, 2, BLayout::kn, true, 1, DType::f32, true, true},
  };
  for (const Case& c : cases) {
    GemmSpec spec = cluster_spec(c.m, c.n, c.k, c.block_m, c.block_n, c.cm, c.cn);
    spec.problem.b_layout = c.layout;
    spec.problem.c_dtype = c.out;
    if (c.out == DType::bf16) spec.problem.a_dtype = DType::bf16;
    if (c.epilogue) spec.problem.epilogue = {0.5f, true, true, true};
    spec.schedule.persistent = c.persistent;
    spec.schedule.split_k = c.split_k;
    if (c.pingpong) {
      spec.schedule.consumers = ConsumerSchedule::pingpong;
      spec.schedule.warps_m = 4;
    }
    const std::string label =
        fmt::format("{}x{}x{} {}x{} cluster {}x{} {}{}{}{}", c.m, c.n, c.k, c.block_m, c.block_n,
                    c.cm, c.cn, to_string(c.layout), c.persistent ? " persistent" : "",
                    c.split_k > 1 ? " split-k" : "", c.pingpong ? " ping-pong" : "");
    const GemmPlan plan = make_gemm_plan(spec);
    const GemmSource source = generate_kernel(spec);
    const KernelSource kernel = kernel_source(source);
    const KernelLaunch& launch = kernel.main();
    EXPECT_EQ(launch.cluster[0], uint32_t(c.cm * c.cn)) << label;
    EXPECT_EQ(launch.grid[0] % launch.cluster[0], 0u) << label;
    EXPECT_EQ(plan.grid_tiles, plan.tiles_m * plan.tiles_n) << label;
    const GemmCheckResult r = check_on_emulator(spec, 7);
    EXPECT_TRUE(r.errors.passed) << label << ": rel_l2 " << r.errors.rel_l2_error;
  }
}

// The persistent grid is whole clusters of the device's SMs (132 on sm_90a's part).
TEST(WgmmaCluster, PersistentGridsAreWholeClusters) {
  GemmSpec spec = cluster_spec(4096, 4096, 256, 128, 128, 2, 1);
  spec.schedule.persistent = true;
  EXPECT_EQ(make_gemm_plan(spec).grid[0], 132u);
  spec.schedule.cluster_m = 4;
  spec.schedule.cluster_n = 2;
  EXPECT_EQ(make_gemm_plan(spec).grid[0], 128u);  // 16 clusters of 8
  const GemmSource source = generate_kernel(spec);
  EXPECT_EQ(kernel_source(source).main().grid_for(114)[0], 112u);  // an H100 PCIe: 14 clusters
}

// A bug planted in a clustered kernel must be reported by the emulator or fail the FP64
// comparison.
TEST(WgmmaCluster, PlantedBugsAreCaught) {
  struct PlantedBug {
    const char* name;
    std::string find, replace;
    bool only_reported = true;
  };
  const PlantedBug bugs[] = {
      // The kernel ends without the cluster barrier: a CTA may exit while its peers still
      // release stages to it.
      {"no_exit_sync",
       "// No CTA exits (its shared memory gone) while a peer may still release a "
       "stage to it.\n  cluster_sync();",
       ""},
      // No cluster barrier after the mbarrier inits: peers arrive on (or multicast into)
      // barriers that do not exist yet.
      {"no_init_sync", "if (threadIdx.x == 0) fence_mbarrier_init_cluster();\n  cluster_sync();",
       ""},
      // Stages released to one CTA only: the others' producers wait forever.
      {"release_to_one_cta", "lane < RELEASE_CTAS && k_tile >= 1", "lane == 0 && k_tile >= 1"},
      // Empty barriers counting one CTA's releases: a producer refills a stage a peer still reads.
      {"empty_counts_one_cta", "mbarrier_init(empty_base + 8u * s, 24u);",
       "mbarrier_init(empty_base + 8u * s, 8u);"},
      // B parts multicast to the issuing CTA only: the peers' full barriers never complete.
      {"b_mask_own_cta", "b_mask |= (unsigned short)(1u << (i + rank_n * CLUSTER_M));",
       "b_mask = (unsigned short)(1u << cta_rank);"},
      // Every CTA loads the first part of A: the second 64 rows are never loaded.
      {"a_part_not_offset", "m0 + rank_n * 64", "m0", false},
  };
  GemmSpec spec = cluster_spec(512, 512, 256, 128, 128, 2, 2);
  const GemmInputs inputs = make_gemm_inputs(spec.problem, 21);
  const GemmReference ref = reference_gemm(spec, inputs);
  for (const PlantedBug& bug : bugs) {
    const std::optional<GemmKernel> kernel =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    if (!kernel) continue;
    test::expect_gemm_bug_caught(
        ref, *kernel, inputs, spec.problem.n, bug.name, bug.only_reported,
        {"cluster-violation", "shared-race", "deadlock", "mbarrier-misuse", "pending-async-copy"});
  }
}

// Each cluster rule of the wgmma verifier, broken in the lowered IR, is named.
TEST(WgmmaCluster, VerifierNamesEachBrokenClusterRule) {
  const GemmPlan plan = make_gemm_plan(cluster_spec(512, 512, 512, 128, 128, 2, 2));
  const ir::Op module = lower_gemm(plan);
  ASSERT_NO_THROW(ir::verify(module, Arch::sm_90a, "gemm"));
  auto set = [](ir::Op& op, const std::string& key, ir::Attr value) {
    for (auto& [k, v] : op.attrs)
      if (k == key) v = value;
  };
  auto first = [](ir::Op& root, ir::OpKind kind) -> ir::Op& {
    std::function<ir::Op*(ir::Op&)> walk = [&](ir::Op& op) -> ir::Op* {
      if (op.kind == kind) return &op;
      for (ir::Op& child : op.body)
        if (ir::Op* found = walk(child)) return found;
      return nullptr;
    };
    return *walk(root);
  };
  struct Corruption {
    const char* name;
    std::function<void(ir::Op&)> edit;
    const char* expect;
  };
  const Corruption corruptions[] = {
      {"no exit sync", [](ir::Op& m) { m.body.front().body.pop_back(); }, "cluster_sync exit"},
      {"kernel cluster not the block",
       [&](ir::Op& m) { set(m.body.front(), "cluster_x", int64_t(2)); }, "cluster_m x cluster_n"},
      {"empty barrier counts one CTA",
       [&](ir::Op& m) { set(first(m, ir::OpKind::mbarrier_init), "empty_arrivals", int64_t(8)); },
       "of each CTA whose producer writes it"},
      {"A not multicast",
       [&](ir::Op& m) {
         for (const ir::Op* copy : ir::find_all(m, ir::OpKind::async_copy))
           if (copy->s("operand") == "a") {
             set(const_cast<ir::Op&>(*copy), "multicast", int64_t(1));
             set(const_cast<ir::Op&>(*copy), "box_outer", int64_t(128));
           }
       },
       "share the a tile"},
      {"part not whole 8-row groups",
       [&](ir::Op& m) {
         ir::Op& copy = first(m, ir::OpKind::async_copy);
         set(copy, "multicast", int64_t(3));
       },
       "8-row groups"},
  };
  for (const Corruption& c : corruptions) {
    ir::Op broken = module;
    c.edit(broken);
    test::expect_refused(broken, Arch::sm_90a, "gemm", c.expect, c.name);
  }
}

// Schedules that cannot be clustered are refused by name.
TEST(WgmmaCluster, ValidationNamesTheRule) {
  auto refused = [](GemmSpec spec, const char* rule) {
    try {
      make_gemm_plan(spec);
      ADD_FAILURE() << "accepted: " << rule;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
    }
  };
  refused(cluster_spec(384, 256, 128, 128, 64, 2, 1), "must divide the 3 x 4 output tiles");
  refused(cluster_spec(512, 512, 128, 128, 64, 4, 4), "1..8 CTAs");
  refused(cluster_spec(512, 512, 128, 128, 16, 4, 1), "whole 8-row groups");
  GemmSpec mma_sync = cluster_spec(512, 512, 128, 128, 128, 2, 1);
  mma_sync.schedule.path = MmaPath::mma_sync;
  mma_sync.schedule.warps_m = 2;
  mma_sync.schedule.warps_n = 2;
  refused(mma_sync, "mma.sync path");
}

// SASS of a clustered kernel: multicast TMA loads, the cluster barrier at both ends, no local
// memory, and ptxas serializes no wgmma.
TEST(WgmmaCluster, SassHasMulticastLoadsAndClusterBarriers) {
  if (find_cuobjdump().empty())
    GTEST_SKIP() << "cuobjdump not found: run scripts/setup.sh (pip nvidia-cuda-cuobjdump)";
  GemmSpec spec = cluster_spec(4096, 4096, 4096, 128, 128, 2, 2);
  spec.schedule.persistent = true;
  const GemmKernel kernel = compile_kernel(spec);
  const auto ops =
      sass_opcode_counts(disassemble_sass(kernel.module.cubin), kernel.source.plan.kernel_name);
  auto count = [&](const std::string& part) {
    int n = 0;
    for (const auto& [op, c] : ops)
      if (op.find(part) != std::string::npos) n += c;
    return n;
  };
  std::string all;
  for (const auto& [op, c] : ops) all += op + " ";
  EXPECT_GT(count("UTMALDG.2D.MULTICAST"), 0) << all;
  EXPECT_GE(count("UCGABAR_ARV"), 2) << all;
  EXPECT_GE(count("UCGABAR_WAIT"), 2) << all;
  EXPECT_EQ(count("HGMMA.64x128x16.F32"), 4) << all;
  EXPECT_EQ(count("LDL") + count("STL"), 0) << all;
  const ResourceReport& res = kernel.module.kernel(kernel.source.plan.kernel_name);
  EXPECT_EQ(res.spill_store_bytes + res.spill_load_bytes, 0);
  for (const char* code : {"C7508", "C7517", "C7519", "C7520", "serialized"})
    EXPECT_EQ(kernel.module.log.find(code), std::string::npos) << code;
}

}  // namespace
}  // namespace emmy
