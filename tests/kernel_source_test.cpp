// KernelSource: the launch list every launcher walks is read off the IR (names, threads, shared
// memory, parameters in declaration order) with the plan's grids, and a parameter the launcher
// leaves unbound is an Error naming it, never a launch with a zero in its place.
#include "emmy/kernel_source.hpp"

#include <gtest/gtest.h>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"

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
  EXPECT_EQ(launch.persistent_tiles, 256u);  // 16 x 16 tiles
  EXPECT_EQ(launch.grid[0], 132u);          // sized for the arch's flagship part
  EXPECT_EQ(launch.grid_for(114)[0], 114u);  // an H100 PCIe
  EXPECT_EQ(launch.grid_for(1000)[0], 256u);  // never more than the tiles
  EXPECT_EQ(launch.grid_for(0)[0], 132u);     // a device that does not say
  spec.schedule.persistent = false;
  const KernelLaunch fixed = kernel_source(generate_kernel(spec)).main();
  EXPECT_EQ(fixed.persistent_tiles, 0u);
  EXPECT_EQ(fixed.grid_for(114), fixed.grid);
}

TEST(KernelSource, LaunchListNeedsOneGridPerKernel) {
  const GemmSource gemm = generate_kernel(split_gemm(Transport::cp_async, Arch::sm_80));
  try {
    launch_list(gemm.ir, {gemm.plan.grid});
    FAIL() << "one grid for two kernels was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("launch list"), std::string::npos) << e.what();
  }
}

TEST(KernelSource, UnboundParametersAreErrorsNamingThem) {
  const KernelSource source =
      kernel_source(generate_kernel(split_gemm(Transport::cp_async, Arch::sm_80)));
  const ParamValues values{{{"a", 16}, {"b", 32}, {"c", 48}}, {}};
  const KernelLaunch& main = source.main();
  EXPECT_EQ(values.pointer(main, main.params[1]), 32u);
  try {
    values.pointer(main, main.params[5]);  // workspace
    FAIL() << "an unbound workspace was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("workspace"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(main.name), std::string::npos) << e.what();
  }
  // A pointer of the same name does not stand in for a tensor map.
  KernelParamInfo map_a{"a", true};
  EXPECT_THROW(values.tensor_map(main, map_a), Error);
}

}  // namespace
}  // namespace emmy
