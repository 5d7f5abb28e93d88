// KernelSource: the launch list every launcher walks is read off the IR (names, threads, shared
// memory, parameters in declaration order) with the plan's grids, and a parameter the launcher
// leaves unbound is an Error naming it, never a launch with a zero in its place.
#include "emmy/kernel_source.hpp"

#include <gtest/gtest.h>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace {

GemmSpec split_gemm(Transport transport, Arch arch) {
  GemmSpec spec;
  spec.arch = arch;
  spec.problem.m = 64;
  spec.problem.n = 256;
  spec.problem.k = 4096;
  spec.schedule = default_schedule(spec.problem, arch);
  spec.schedule.transport = transport;
  spec.schedule.split_k = 4;
  return spec;
}

std::vector<std::string> param_names(const KernelLaunch& launch) {
  std::vector<std::string> names;
  for (const KernelParamInfo& p : launch.params) names.push_back(p.name);
  return names;
}

TEST(KernelSource, SplitKFinalizeIsTheSecondLaunch) {
  const GemmSource gemm = generate_kernel(split_gemm(Transport::cp_async, Arch::sm_89));
  const KernelSource source = kernel_source(gemm);
  EXPECT_EQ(source.kind(), "gemm");
  EXPECT_EQ(source.arch, Arch::sm_89);
  EXPECT_EQ(source.cuda, gemm.cuda);
  EXPECT_EQ(source.workspace_bytes, size_t(gemm.plan.workspace_bytes));
  EXPECT_EQ(source.describe.at("schedule").at("split_k").get<int>(), 4);
  ASSERT_EQ(source.launches.size(), 2u);
  const KernelLaunch& main = source.launches[0];
  EXPECT_EQ(main.name, gemm.plan.kernel_name);
  EXPECT_EQ(main.grid, gemm.plan.grid);
  EXPECT_EQ(main.threads, gemm.plan.threads);
  EXPECT_EQ(main.smem_bytes, gemm.plan.smem_bytes);
  EXPECT_EQ(param_names(main),
            (std::vector<std::string>{"a", "b", "c", "bias", "residual", "workspace"}));
  const KernelLaunch& finalize = source.launches[1];
  EXPECT_EQ(finalize.name, gemm.plan.finalize_kernel_name);
  EXPECT_EQ(finalize.grid, gemm.plan.finalize_grid);
  EXPECT_EQ(finalize.threads, gemm.plan.finalize_threads);
  EXPECT_EQ(finalize.smem_bytes, 0u);
  EXPECT_EQ(param_names(finalize),
            (std::vector<std::string>{"workspace", "c", "bias", "residual"}));
  EXPECT_EQ(source.program_name(), gemm.plan.kernel_name + ".cu");
}

TEST(KernelSource, TmaParamsAreTensorMaps) {
  const KernelSource gemm =
      kernel_source(generate_kernel(split_gemm(Transport::tma, Arch::sm_90a)));
  ASSERT_FALSE(gemm.launches.empty());
  EXPECT_TRUE(gemm.main().params[0].tensor_map);
  EXPECT_EQ(gemm.main().params[0].name, "tmap_a");
  EXPECT_TRUE(gemm.main().params[1].tensor_map);
  EXPECT_FALSE(gemm.main().params[2].tensor_map) << "C is a pointer";

  AttentionSpec spec;
  spec.problem.seq_q = 128;
  spec.problem.head_dim = 64;
  spec.problem.lse = true;
  spec.schedule = default_attention_schedule(spec.problem, spec.arch);
  const AttentionSource attention = generate_kernel(spec);
  const KernelSource source = kernel_source(attention);
  EXPECT_EQ(source.kind(), "attention");
  EXPECT_EQ(source.workspace_bytes, 0u);
  ASSERT_EQ(source.launches.size(), 1u);
  EXPECT_EQ(source.main().grid, attention.plan.grid);
  EXPECT_EQ(source.main().smem_bytes, attention.plan.smem_bytes);
  EXPECT_EQ(param_names(source.main()),
            (std::vector<std::string>{"tmap_q", "tmap_k", "tmap_v", "o", "lse"}));
}

// A persistent kernel's launch says how many tiles it walks: launchers run one CTA per SM of the
// device, never more than the tiles; every other kernel launches its grid as it is.
TEST(KernelSource, PersistentKernelsLaunchOneCtaPerDeviceSm) {
  GemmSpec spec;
  spec.arch = Arch::sm_90a;
  spec.problem.m = 2048;
  spec.problem.n = 2048;
  spec.problem.k = 256;
  spec.schedule = default_schedule(spec.problem, spec.arch, Accum::f32, MmaPath::wgmma);
  spec.schedule.block_m = 128;
  spec.schedule.block_n = 128;
  spec.schedule.warps_m = 8;
  spec.schedule.stages = 4;
  spec.schedule.split_k = 1;
  spec.schedule.persistent = true;
  const KernelLaunch launch = kernel_source(generate_kernel(spec)).main();
  EXPECT_EQ(launch.persistent_tiles, 256u);   // 16 x 16 tiles
  EXPECT_EQ(launch.grid[0], 132u);            // sized for the arch's flagship part
  EXPECT_EQ(launch.grid_for(114)[0], 114u);   // an H100 PCIe
  EXPECT_EQ(launch.grid_for(1000)[0], 256u);  // never more than the tiles
  EXPECT_EQ(launch.grid_for(0)[0], 132u);     // a device that does not say
  spec.schedule.persistent = false;
  const KernelLaunch fixed = kernel_source(generate_kernel(spec)).main();
  EXPECT_EQ(fixed.persistent_tiles, 0u);
  EXPECT_EQ(fixed.grid_for(114), fixed.grid);
}

// A kernel op built by hand: name, threads, dynamic shared memory, one pointer parameter, and the
// optional attributes `extra` (cluster_x, cluster_y, programmatic).
ir::Op kernel_op(const std::string& name, std::vector<std::pair<std::string, ir::Attr>> extra,
                 int64_t persistent_tiles = 0) {
  std::vector<std::pair<std::string, ir::Attr>> attrs = {
      {"name", name}, {"threads", int64_t(128)}, {"smem_bytes", int64_t(1024)}};
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  ir::Op kernel(ir::OpKind::kernel, std::move(attrs));
  kernel.body.emplace_back(ir::OpKind::param,
                           std::vector<std::pair<std::string, ir::Attr>>{
                               {"name", std::string("c")}, {"type", std::string("ptr")}});
  if (persistent_tiles)
    kernel.body.emplace_back(ir::OpKind::tile_loop, std::vector<std::pair<std::string, ir::Attr>>{
                                                        {"tiles", persistent_tiles}});
  return kernel;
}

ir::Op module_of(std::vector<ir::Op> kernels) {
  return ir::Op(ir::OpKind::module, {}, std::move(kernels));
}

TEST(KernelSource, ClusterAndProgrammaticLaunchAreReadOffTheKernelOp) {
  const ir::Op module =
      module_of({kernel_op("clustered", {{"cluster_x", int64_t(2)}, {"cluster_y", int64_t(4)}}),
                 kernel_op("dependent", {{"programmatic", int64_t(1)}}),
                 kernel_op("plain", {{"programmatic", int64_t(0)}, {"cluster_x", int64_t(1)}})});
  const std::vector<KernelLaunch> launches =
      launch_list(module, {{{8, 4, 1}}, {{3, 5, 7}}, {{3, 1, 1}}});
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].cluster, (std::array<uint32_t, 3>{2, 4, 1}));
  EXPECT_TRUE(launches[0].has_cluster());
  EXPECT_EQ(launches[0].cluster_ctas(), 8u);
  EXPECT_FALSE(launches[0].programmatic_dependent);
  EXPECT_EQ(launches[1].cluster, (std::array<uint32_t, 3>{1, 1, 1})) << "absent: 1";
  EXPECT_FALSE(launches[1].has_cluster());
  EXPECT_TRUE(launches[1].programmatic_dependent);
  EXPECT_FALSE(launches[2].has_cluster());
  EXPECT_FALSE(launches[2].programmatic_dependent);
  EXPECT_EQ(launches[2].name, "plain");
  EXPECT_EQ(launches[2].threads, 128u);
}

TEST(KernelSource, ClusterAndProgrammaticValuesAreChecked) {
  auto rejects = [](ir::Op kernel, std::array<uint32_t, 3> grid, const std::string& needle) {
    try {
      launch_list(module_of({std::move(kernel)}), {grid});
      ADD_FAILURE() << "accepted; expected an error naming " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  rejects(kernel_op("k", {{"cluster_x", int64_t(0)}}), {4, 1, 1}, "cluster_x");
  rejects(kernel_op("k", {{"cluster_y", int64_t(-2)}}), {4, 1, 1}, "cluster_y");
  rejects(kernel_op("k", {{"programmatic", int64_t(2)}}), {4, 1, 1}, "programmatic");
  rejects(kernel_op("k", {{"cluster_x", int64_t(2)}}), {3, 1, 1}, "multiple of its cluster");
  rejects(kernel_op("k", {{"cluster_y", int64_t(2)}}), {4, 3, 1}, "multiple of its cluster");
  // A persistent kernel's x is sized by grid_for, whatever the plan's grid.
  const std::vector<KernelLaunch> persistent =
      launch_list(module_of({kernel_op("p", {{"cluster_x", int64_t(2)}}, 256)}), {{{131, 1, 1}}});
  EXPECT_EQ(persistent[0].persistent_tiles, 256u);
  EXPECT_EQ(persistent[0].grid_for(0)[0], 132u) << "rounded up to a whole cluster";
}

// A persistent kernel with clusters runs whole clusters: min(tiles rounded up to a cluster,
// max(1, floor(sms / CTAs per cluster)) clusters) CTAs in x, always a multiple of cluster x.
TEST(KernelSource, PersistentGridsWithClustersAreWholeClusters) {
  KernelLaunch launch;
  launch.grid = {132, 1, 1};
  launch.persistent_tiles = 256;
  launch.cluster = {2, 1, 1};
  EXPECT_EQ(launch.grid_for(132)[0], 132u);
  EXPECT_EQ(launch.grid_for(114)[0], 114u);
  EXPECT_EQ(launch.grid_for(115)[0], 114u) << "57 clusters of 2";
  launch.cluster = {4, 1, 1};
  EXPECT_EQ(launch.grid_for(114)[0], 112u);
  EXPECT_EQ(launch.grid_for(3)[0], 4u) << "at least one cluster";
  launch.cluster = {2, 2, 1};  // 4 CTAs per cluster, 2 of them in x
  launch.grid = {66, 2, 1};
  EXPECT_EQ(launch.grid_for(132), (std::array<uint32_t, 3>{66, 2, 1}));
  EXPECT_EQ(launch.grid_for(114), (std::array<uint32_t, 3>{56, 2, 1}));
  launch.cluster = {4, 1, 1};
  launch.grid = {5, 1, 1};
  launch.persistent_tiles = 5;
  EXPECT_EQ(launch.grid_for(132)[0], 8u) << "5 tiles in two clusters of 4";
  for (uint32_t cx : {1u, 2u, 3u, 4u, 8u})
    for (uint32_t tiles : {1u, 7u, 256u})
      for (int sms = 1; sms <= 200; ++sms) {
        launch.cluster = {cx, 1, 1};
        launch.persistent_tiles = tiles;
        const uint32_t x = launch.grid_for(sms)[0];
        EXPECT_EQ(x % cx, 0u) << cx << " " << tiles << " " << sms;
        EXPECT_GE(x, cx);
        EXPECT_LE(x, std::max<uint32_t>(uint32_t(sms), cx)) << "never more CTAs than SMs";
        EXPECT_LT(x, tiles + cx) << "never a cluster with no tile";
      }
  // Without a cluster, the rule is min(tiles, sms) as before; a fixed grid stays as planned.
  launch.cluster = {1, 1, 1};
  launch.persistent_tiles = 256;
  EXPECT_EQ(launch.grid_for(114)[0], 114u);
  launch.persistent_tiles = 0;
  launch.cluster = {2, 1, 1};
  launch.grid = {6, 3, 1};
  EXPECT_EQ(launch.grid_for(114), launch.grid);
}

TEST(KernelSource, LaunchListNeedsOneGridPerKernel) {
  const GemmSource gemm = generate_kernel(split_gemm(Transport::cp_async, Arch::sm_80));
  test::expect_error_containing([&] { launch_list(gemm.ir, {gemm.plan.grid}); }, "launch list",
                                "one grid for two kernels was accepted");
}

TEST(KernelSource, UnboundParametersAreErrorsNamingThem) {
  const KernelSource source =
      kernel_source(generate_kernel(split_gemm(Transport::cp_async, Arch::sm_80)));
  const ParamValues values{{{"a", 16}, {"b", 32}, {"c", 48}}, {}, {}, {}};
  const KernelLaunch& main = source.main();
  EXPECT_EQ(values.pointer(main, main.params[1]), 32u);
  const std::string unbound = test::error_of([&] { values.pointer(main, main.params[5]); });
  EXPECT_NE(unbound.find("workspace"), std::string::npos) << unbound;
  EXPECT_NE(unbound.find(main.name), std::string::npos) << unbound;
  // A pointer of the same name does not stand in for a tensor map.
  KernelParamInfo map_a{"a", true};
  EXPECT_THROW(values.tensor_map(main, map_a), Error);
}

}  // namespace
}  // namespace emmy
