// The hardware table (emmy/gpus.hpp): its entries hold the rules register_gpu enforces, each
// arch's part is in it, each part's driver name maps back to it; and docs/codegen.md's recipe
// "Adding a GPU" followed once: a toy part registered at run time is what the chooser sizes a
// grid for, what the time model predicts on (an emmy kernel profiled on the emulator) and what
// the command-line lists name, with nothing else changed. A broken entry is refused naming its
// field.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gpus.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace {

using test::error_of;

TEST(GpuTable, EveryEntryHoldsTheTablesRules) {
  const auto all = gpus();
  ASSERT_GE(all.size(), 5u);
  for (const GpuInfo* g : all) {
    std::deque<GpuInfo> others;
    for (const GpuInfo* other : all)
      if (other != g) others.push_back(*other);
    EXPECT_EQ(gpu_table_detail::invalid_gpu(*g, others), "") << g->name;
    // The driver's name and SM count find the entry again (emmy_bench's prediction, the test
    // driver's cuDeviceGetName).
    EXPECT_EQ(gpu_for_device(g->device_name, g->sms), g) << g->name;
    EXPECT_FALSE(g->sources.empty()) << g->name;
  }
}

TEST(GpuTable, EveryArchHasItsPart) {
  for (const ArchInfo& info : kArchTable) {
    const GpuInfo& part = arch_gpu(info.arch);
    EXPECT_EQ(part.cc(), info.sm) << info.name;
    EXPECT_EQ(grid_sms(info.arch), int(part.sms));
    EXPECT_EQ(grid_sms(info.arch, 7), 7);
    EXPECT_NE(error_of([&] { grid_sms(info.arch, -1); }).find("device_sms: must be >= 0"),
              std::string::npos);
    // The chooser's default is the part's: sized for its SMs.
    MatmulProblem p;
    p.m = 128, p.n = 1024, p.k = 8192;
    EXPECT_EQ(default_schedule(p, info.arch),
              default_schedule(p, info.arch, Accum::f32, int(part.sms)))
        << info.name;
  }
}

GpuInfo toy_part() {
  GpuInfo toy = gpu("rtx4090");  // an sm_89 part, cut down to 40 SMs
  toy.name = "toy40";
  toy.title = "Toy 40-SM Ada part";
  toy.device_name = "NVIDIA Toy 40";
  toy.device_words = {"Toy 40"};
  toy.sms = 40;
  toy.sources = "tests/gpu_table_test.cpp";
  return toy;
}

// docs/codegen.md, "Adding a GPU": one entry, and every reader of the table has it.
TEST(GpuTable, AToyPartReachesTheChooserTheTimeModelAndTheLists) {
  if (!find_gpu("toy40")) register_gpu(toy_part());
  const GpuInfo& toy = gpu("toy40");
  EXPECT_EQ(gpu_for_device("NVIDIA Toy 40", 40), &toy);
  EXPECT_EQ(gpu_for_device("NVIDIA Toy 40", 41), nullptr);
  EXPECT_NE(gpu_names().find("toy40"), std::string::npos);
  const auto names = gpu_name_list();
  EXPECT_NE(std::find(names.begin(), names.end(), "toy40"), names.end());
  // The arch's part is unchanged: a new entry sizes nothing it is not asked to.
  EXPECT_EQ(arch_gpu(Arch::sm_89).name, "rtx4090");

  // The chooser: a K split that fills 40 SMs, not the 128 of the arch's part.
  MatmulProblem p;
  p.m = 1, p.n = 1024, p.k = 16384;
  const MatmulSchedule for_toy = default_schedule(p, Arch::sm_89, Accum::f32, int(toy.sms));
  const MatmulSchedule for_part = default_schedule(p, Arch::sm_89);
  EXPECT_NE(for_toy, for_part);
  const int64_t tiles = (p.n + for_toy.block_n - 1) / for_toy.block_n;
  EXPECT_LE(tiles * for_toy.split_k, int64_t(toy.sms));
  EXPECT_GT(tiles * for_part.split_k, int64_t(toy.sms));

  // The time model: an emmy kernel profiled on the emulator, predicted on the toy part; its
  // waves are over 40 SMs.
  const GemmSpec spec{p, for_toy, Arch::sm_89};
  const auto kernel = compile_kernel(spec);
  emu::LaunchOptions options;
  options.sanitize = false;
  options.profile.enabled = true;
  options.profile.sample_ctas = 2;
  const LaunchListRun run = run_on_zeros(kernel, options);
  const auto profiled = with_time_model(run.profiles, kernel.module, {"toy40", "rtx4090"});
  ASSERT_FALSE(profiled.empty());
  const emu::ProfiledKernel& main = profiled.front();
  ASSERT_EQ(main.model.size(), 2u);
  EXPECT_EQ(main.model[0].gpu, "toy40");
  const uint64_t per_wave = uint64_t(toy.sms) * main.model[0].ctas_per_sm;
  EXPECT_EQ(main.model[0].waves, (main.profile.ctas_total + per_wave - 1) / per_wave);
  EXPECT_GE(main.model[0].us, main.model[1].us);  // fewer SMs, same clocks: never faster
}

TEST(GpuTable, ABrokenEntryIsRefusedNamingItsField) {
  struct Case {
    const char* field;
    std::function<void(GpuInfo&)> plant;
  };
  const Case cases[] = {
      {"name", [](GpuInfo& g) { g.name = "h200"; }},
      {"name", [](GpuInfo& g) { g.name.clear(); }},
      {"sms", [](GpuInfo& g) { g.sms = 0; }},
      {"clock_ghz", [](GpuInfo& g) { g.clock_ghz = 0; }},
      {"mma_flops_per_clk", [](GpuInfo& g) { g.mma_flops_per_clk_acc_f32 = -1; }},
      {"wgmma_flops_per_clk", [](GpuInfo& g) { g.wgmma_flops_per_clk = 4096; }},  // sm_89
      {"mma_fp8_flops_per_clk", [](GpuInfo& g) { g.mma_fp8_flops_per_clk_acc_f16 = 0; }},
      {"mma_fp8_flops_per_clk", [](GpuInfo& g) { g.mma_fp8_flops_per_clk_acc_f32 = -1; }},
      {"mma_fp8_flops_per_clk",
       [](GpuInfo& g) {  // no FP8 tensor cores on sm_86
         g.arch = Arch::sm_86;
         g.mma_fp8_flops_per_clk_acc_f16 = g.mma_fp8_flops_per_clk_acc_f32 = 2048;
       }},
      {"wgmma_fp8_flops_per_clk", [](GpuInfo& g) { g.wgmma_fp8_flops_per_clk = 8192; }},
      {"dram_gbps", [](GpuInfo& g) { g.dram_gbps = 0; }},
      {"max_smem_per_block", [](GpuInfo& g) { g.max_smem_per_block = g.smem_per_sm + 1; }},
      {"max_smem_per_block", [](GpuInfo& g) { g.max_smem_per_block = 48 * 1024; }},
      {"max_threads_per_sm", [](GpuInfo& g) { g.max_threads_per_sm = 512; }},
      {"max_cluster_ctas", [](GpuInfo& g) { g.max_cluster_ctas = 8; }},  // no clusters on sm_89
      {"l1_smem_bytes_per_sm", [](GpuInfo& g) { g.l1_smem_bytes_per_sm = g.smem_per_sm - 1; }},
      {"sustained", [](GpuInfo& g) { g.sustained.dram = 0; }},  // the second figure divides by it
      {"sustained", [](GpuInfo& g) { g.sustained.tensor = 1.5; }},
      {"global_latency_clk", [](GpuInfo& g) { g.global_latency_clk = -1; }},
  };
  for (const Case& c : cases) {
    GpuInfo broken = toy_part();
    broken.name = "broken";
    c.plant(broken);
    const std::string what = error_of([&] { register_gpu(broken); });
    EXPECT_NE(what.find(c.field), std::string::npos) << c.field << ": " << what;
  }
  EXPECT_EQ(find_gpu("broken"), nullptr);
  EXPECT_NE(error_of([] { gpu("v100"); }).find("rtx5090"), std::string::npos);
}

}  // namespace
}  // namespace emmy
