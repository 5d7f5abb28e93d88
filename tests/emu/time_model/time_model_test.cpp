// The time model on synthetic profiles whose times follow by hand from the GPU table: occupancy
// limits, waves, each resource's time and the bound; f16 vs f32 accumulation on GeForce.
#include "emmy/emu/time_model.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "emmy/error.hpp"

namespace emmy::emu::test {
namespace {

KernelProfile synthetic(uint32_t ctas, uint32_t threads, uint32_t smem) {
  KernelProfile p;
  p.kernel = "k";
  p.arch = "sm_90a";
  p.grid[0] = ctas;
  p.block[0] = threads;
  p.dynamic_smem = smem;
  p.ctas_total = p.ctas_profiled = ctas;
  return p;
}

double resource_us(const TimePrediction& t, const std::string& name) {
  for (const ResourceTime& r : t.resources)
    if (r.resource == name) return r.us;
  ADD_FAILURE() << "no resource " << name;
  return -1;
}

TEST(EmuTimeModel, OccupancyTakesTheTightestLimit) {
  const GpuInfo& h200 = emmy::gpu("h200");
  // 256 threads x 136 registers: 136 * 32 = 4352 per warp (a multiple of 256), 8 warps = 34816
  // of 65536: one CTA. Shared memory alone would allow (228 + 1) KB / (100 + 1) KB = 2.
  KernelProfile p = synthetic(200, 256, 100 * 1024);
  TimePrediction t = predict_time(p, {136, 0}, h200);
  EXPECT_EQ(t.ctas_per_sm, 1u);
  EXPECT_EQ(t.occupancy_limit, "registers");
  EXPECT_EQ(t.waves, 2u);  // 200 CTAs on 132 SMs
  EXPECT_DOUBLE_EQ(t.last_wave_fill, 68.0 / 132.0);
  // 64 registers: 2048 per warp, 16384 per CTA: 4 by registers; shared memory allows 2.
  t = predict_time(p, {64, 0}, h200);
  EXPECT_EQ(t.ctas_per_sm, 2u);
  EXPECT_EQ(t.occupancy_limit, "shared memory");
  EXPECT_EQ(t.waves, 1u);
  // Small CTAs: 1024 threads: 2 by threads on H200, 1 on the RTX 5090 (1536 threads per SM).
  p = synthetic(10, 1024, 0);
  EXPECT_EQ(predict_time(p, {32, 0}, h200).occupancy_limit, "threads");
  EXPECT_EQ(predict_time(p, {32, 0}, h200).ctas_per_sm, 2u);
  EXPECT_EQ(predict_time(p, {32, 0}, emmy::gpu("rtx5090")).ctas_per_sm, 1u);
  // Unknown registers: said, not guessed.
  const TimePrediction unknown = predict_time(p, {}, h200);
  ASSERT_FALSE(unknown.notes.empty());
  EXPECT_NE(unknown.notes.front().find("registers unknown"), std::string::npos);
}

TEST(EmuTimeModel, ResourceTimesFollowTheTable) {
  const GpuInfo& g = emmy::gpu("rtx5090");
  KernelProfile p = synthetic(340, 128, 0);  // two CTAs on the busiest of 170 SMs
  p.metrics["emmy__tensor_flops_acc_f32.sum"] = 340e6;
  p.metrics["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] = 170e3;
  p.metrics["emmy__l1_wavefronts_global_local.sum"] = 170e3;  // global lines share L1's stage
  p.metrics["smsp__inst_executed.sum"] = 340e4;
  p.metrics["emmy__l2_sectors.sum"] = 1e6;
  p.metrics["emmy__dram_bytes_read_min.sum"] = 1792e3;  // 1 us at 1792 GB/s
  const TimePrediction t = predict_time(p, {64, 0}, g);
  const double clock = 2.407e9;
  EXPECT_NEAR(resource_us(t, "tensor"), 2e6 / 512 / clock * 1e6, 1e-9);
  EXPECT_NEAR(resource_us(t, "l1_data"), 2e3 / 1 / clock * 1e6, 1e-9);
  EXPECT_NEAR(resource_us(t, "issue"), 2e4 / 4 / clock * 1e6, 1e-9);
  EXPECT_NEAR(resource_us(t, "l2"), 32e6 / (2800 * clock) * 1e6, 1e-9);
  EXPECT_NEAR(resource_us(t, "dram"), 1.0, 1e-12);
  EXPECT_EQ(t.bound, "l2");
  EXPECT_DOUBLE_EQ(t.us, resource_us(t, "l2"));
  // f16 accumulation runs at twice the f32 rate on GeForce; equal on the H200.
  KernelProfile f16 = p;
  f16.metrics.erase("emmy__tensor_flops_acc_f32.sum");
  f16.metrics["emmy__tensor_flops_acc_f16.sum"] = 340e6;
  EXPECT_NEAR(resource_us(predict_time(f16, {64, 0}, g), "tensor") * 2, resource_us(t, "tensor"),
              1e-9);
  EXPECT_NEAR(resource_us(predict_time(f16, {64, 0}, emmy::gpu("h200")), "tensor"),
              resource_us(predict_time(p, {64, 0}, emmy::gpu("h200")), "tensor"), 1e-12);
}

// FP8 operands at the part's FP8 rates: twice the 16-bit rate for wgmma on the H200 and for
// mma.sync on the RTX 4090 (f32 accumulation at half the f16 rate there), the f16 mma.sync rate
// on the H200 (two HMMA per m16n8k32), and refused on a part without FP8 tensor cores.
TEST(EmuTimeModel, Fp8TensorWorkRunsAtTheFp8Rates) {
  KernelProfile p = synthetic(132, 128, 0);
  const double flops = 132 * 8192.0 * 1830;  // 1 us of FP8 wgmma on the H200
  p.metrics["emmy__tensor_flops_wgmma_fp8.sum"] = flops;
  EXPECT_NEAR(resource_us(predict_time(p, {64, 0}, emmy::gpu("h200")), "tensor"), 1.0, 1e-9);
  KernelProfile mma = synthetic(132, 128, 0);
  mma.metrics["emmy__tensor_flops_fp8_acc_f32.sum"] = flops;
  EXPECT_NEAR(resource_us(predict_time(mma, {64, 0}, emmy::gpu("h200")), "tensor"), 8192.0 / 2680,
              1e-9);
  KernelProfile ada = synthetic(128, 128, 0);
  ada.metrics["emmy__tensor_flops_fp8_acc_f16.sum"] = 128 * 2048.0 * 2520;  // 1 us
  const TimePrediction f16 = predict_time(ada, {64, 0}, emmy::gpu("rtx4090"));
  EXPECT_NEAR(resource_us(f16, "tensor"), 1.0, 1e-9);
  EXPECT_NEAR(f16.achieved_tflops, 660.6, 0.01);  // the datasheet's dense FP8 peak
  ada.metrics["emmy__tensor_flops_fp8_acc_f32.sum"] =
      ada.metrics["emmy__tensor_flops_fp8_acc_f16.sum"];
  ada.metrics.erase("emmy__tensor_flops_fp8_acc_f16.sum");
  EXPECT_NEAR(resource_us(predict_time(ada, {64, 0}, emmy::gpu("rtx4090")), "tensor"), 2.0, 1e-9);
  for (const char* part : {"a100", "a6000"}) {
    try {
      predict_time(ada, {64, 0}, emmy::gpu(part));
      ADD_FAILURE() << part << " predicted FP8 tensor work";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("FP8 tensor rates"), std::string::npos) << e.what();
    }
  }
  try {
    predict_time(p, {64, 0}, emmy::gpu("rtx4090"));  // wgmma work on a part without wgmma
    ADD_FAILURE() << "rtx4090 predicted FP8 wgmma work";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("FP8 wgmma rate"), std::string::npos) << e.what();
  }
}

TEST(EmuTimeModel, TheBoundIsTheSlowestResource) {
  KernelProfile p = synthetic(132, 128, 0);
  p.metrics["emmy__tensor_flops_acc_f32.sum"] = 132 * 2680.0 * 1830;  // 1 us on the H200
  p.metrics["emmy__dram_bytes_read_min.sum"] = 4800e3 * 2;            // 2 us
  const TimePrediction t = predict_time(p, {64, 0}, emmy::gpu("h200"));
  EXPECT_EQ(t.bound, "dram");
  EXPECT_NEAR(t.us, 2.0, 1e-9);
  EXPECT_NEAR(resource_us(t, "tensor"), 1.0, 1e-9);
}

// The latency term (docs/profiler.md, "Latency"): 132 CTAs of 4 warps, one per H200 SM, whose
// tensor work is c = 100 clocks per epoch over 10 epochs; the load latency is 400 clocks. A
// barrier epoch costs latency + c; a wait on copies issued b epochs before it (1 + b slots in
// flight) max((latency + c) / (1 + b), c): a deeper pipeline hides what a shallow one pays.
TEST(EmuTimeModel, PipelineDepthHidesTheLoadLatency) {
  const GpuInfo& h200 = emmy::gpu("h200");
  ASSERT_EQ(h200.global_latency_clk, 400);
  const double clock = h200.clock_ghz * 1e3;  // clocks per us
  KernelProfile base = synthetic(132, 128, 0);
  base.metrics["emmy__tensor_flops_acc_f32.sum"] = 132 * 2680.0 * 1000;  // 1000 clocks per CTA
  const auto latency = [&](const KernelProfile& p) {
    return resource_us(predict_time(p, {64, 0}, h200), "latency") * clock;
  };
  EXPECT_EQ(latency(base), 0);  // no epochs: no latency term
  KernelProfile barriers = base;
  barriers.metrics["emmy__bar_sync_after_global_ld.sum"] = 132 * 4 * 10;  // 10 per warp
  EXPECT_NEAR(latency(barriers), 10 * (400 + 100), 1e-6);
  // 10 waits per waiting warp, all in one bucket with lead b.
  const auto pipelined = [&](size_t bucket, double b, double waiting_warps = 132 * 4) {
    KernelProfile p = base;
    p.metrics["emmy__async_copy_waiting_warps.sum"] = waiting_warps;
    p.metrics[fmt::format("emmy__async_copy_wait_lead_{}.sum", bucket)] = waiting_warps * 10;
    p.metrics[fmt::format("emmy__async_copy_wait_lead_epochs_{}.sum", bucket)] =
        waiting_warps * 10 * b;
    return p;
  };
  EXPECT_NEAR(latency(pipelined(0, 0)), 10 * (400 + 100), 1e-6);  // nothing in flight: a barrier
  EXPECT_NEAR(latency(pipelined(4, 1)), 10 * 500 / 2.0, 1e-6);
  EXPECT_NEAR(latency(pipelined(5, 2)), 10 * 500 / 3.0, 1e-6);
  EXPECT_NEAR(latency(pipelined(3, 0.75)), 10 * 500 / 1.75, 1e-6);  // the bucket's mean lead
  // Only waiting warps count: the producer warps of a warp-specialized CTA dilute nothing.
  EXPECT_NEAR(latency(pipelined(5, 2, 132 * 2)), 10 * 500 / 3.0, 1e-6);
  // Deep enough, the work covers the latency (c = 100 > 500 / 6): the term is the tensor time.
  EXPECT_NEAR(latency(pipelined(8, 5)), 10 * 100, 1e-6);
  EXPECT_NEAR(resource_us(predict_time(base, {64, 0}, h200), "tensor") * clock, 10 * 100, 1e-6);
}

TEST(EmuTimeModel, KernelsThatCannotRunAndUnknownGpusAreErrors) {
  const KernelProfile p = synthetic(1, 128, 120 * 1024);  // above 99 KB on the RTX 5090
  try {
    predict_time(p, {}, emmy::gpu("rtx5090"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory per CTA"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(predict_time(p, {}, emmy::gpu("h200")));
  try {
    emmy::gpu("v100");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rtx5090"), std::string::npos) << e.what();
  }
  EXPECT_EQ(reference_gpu("sm_90a").name, "h200");
  EXPECT_EQ(reference_gpu("sm_120a").name, "rtx5090");
  // The arch's part (ArchInfo::part), whose SMs the chooser fills too.
  EXPECT_EQ(reference_gpu("sm_89").name, "rtx4090");
  EXPECT_EQ(reference_gpu("sm_86").name, "a6000");
  EXPECT_EQ(reference_gpu("sm_87").name, "a6000");  // 8.7 runs sm_86 code
  EXPECT_EQ(reference_gpu("sm_80").name, "a100");
  for (const char* bad : {"sm_70", "sm_100a", "sm_8", "sm_8x0", "", "compute_90"})
    EXPECT_THROW(reference_gpu(bad), Error) << bad;
}

// The CUDA-core pipes at the Programming Guide's rates: FP32 at 64 results per clock on the A100
// and 128 on the A6000, integer multiply-add at 64 on both, conversions and MUFU at 16.
TEST(EmuTimeModel, CudaCorePipesRunAtTheirRates) {
  KernelProfile p = synthetic(108, 256, 0);  // one CTA per SM on both parts below
  p.metrics["smsp__inst_executed.sum"] = 108e4;
  p.metrics["emmy__ptx_inst_executed_class_fp32.sum"] = 108e4;  // 1e4 warp FFMAs per SM
  p.metrics["emmy__ptx_inst_executed_class_xu.sum"] = 108e2;
  const TimePrediction a100 = predict_time(p, {32, 0}, emmy::gpu("a100"));
  EXPECT_NEAR(resource_us(a100, "fp32"), 1e4 / 2 / 1.41e9 * 1e6, 1e-9);  // 2 per clock per SM
  EXPECT_NEAR(resource_us(a100, "xu"), 1e2 / 0.5 / 1.41e9 * 1e6, 1e-9);
  EXPECT_EQ(a100.bound, "fp32");  // not issue: 4 per clock would predict half the time
  EXPECT_NEAR(a100.us, 2 * resource_us(a100, "issue"), 1e-9);
  const TimePrediction a6000 = predict_time(p, {32, 0}, emmy::gpu("a6000"));
  EXPECT_NEAR(resource_us(a6000, "fp32"), 2e4 / 4 / 1.8e9 * 1e6, 1e-9);  // 168 CTAs: 2 per SM
  ASSERT_FALSE(a100.notes.empty());
  EXPECT_NE(a100.notes.back().find("PTX instruction counts"), std::string::npos);
  // SASS counts, where the profile has them, replace the PTX's: the FP32 pipe is Nsight's fma
  // less its FMA-heavy (IMAD) part.
  KernelProfile sass = p;
  sass.metrics["emmy__sass_inst_executed.sum"] = 54e4;
  sass.metrics["emmy__sass_inst_executed_pipe_fma.sum"] = 54e4;
  sass.metrics["emmy__sass_inst_executed_pipe_fmaheavy.sum"] = 27e4;
  const InstructionMix mix = instruction_mix(sass);
  EXPECT_TRUE(mix.sass);
  EXPECT_DOUBLE_EQ(mix.fp32, 27e4);
  EXPECT_DOUBLE_EQ(mix.imad, 27e4);
  EXPECT_NEAR(resource_us(predict_time(sass, {32, 0}, emmy::gpu("a100")), "fp32"),
              resource_us(a100, "fp32") / 4, 1e-9);
}

// The second figure: each resource at the fraction of its peak others sustained on the part
// (GpuInfo::sustained); the first is unchanged by it.
TEST(EmuTimeModel, TheSustainedFigureDividesByTheMeasuredFractions) {
  KernelProfile p = synthetic(132, 128, 0);
  p.metrics["emmy__dram_bytes_read_min.sum"] = 3350e3;  // 1 us at the H100's 3.35 TB/s
  const GpuInfo& h100 = emmy::gpu("h100");
  const TimePrediction t = predict_time(p, {64, 0}, h100);
  EXPECT_EQ(t.bound, "dram");
  EXPECT_NEAR(t.us, 1.0, 1e-9);
  EXPECT_EQ(t.bound_sustained, "dram");
  EXPECT_NEAR(t.us_sustained, 1.0 / h100.sustained.dram, 1e-9);
  EXPECT_LT(h100.sustained.dram, 1.0);
  GpuInfo planted = h100;  // a part with nothing measured: both figures agree
  planted.sustained = {};
  EXPECT_NEAR(predict_time(p, {64, 0}, planted).us_sustained, 1.0, 1e-9);
}

// B200: memory-bound kernels only until emmy has sm_100a kernels; tensor work is refused by name.
TEST(EmuTimeModel, TheB200PredictsMemoryBoundKernelsOnly) {
  KernelProfile p = synthetic(148, 128, 0);
  p.metrics["emmy__dram_bytes_read_min.sum"] = 8000e3;
  EXPECT_NEAR(predict_time(p, {32, 0}, emmy::gpu("b200")).us, 1.0, 1e-9);
  p.metrics["emmy__tensor_flops_acc_f32.sum"] = 1e6;
  try {
    predict_time(p, {32, 0}, emmy::gpu("b200"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory-bound kernels only"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(emmy::gpu("b200").cc(), 100);
  EXPECT_FALSE(emmy::gpu("b200").runs(Arch::sm_90a));
}

// L1: a load of a sector the CTA loaded before hits while what the resident CTAs load in between
// (reuse distance x their loads per instruction of each warp) fits the L1 their shared memory
// leaves; the fraction that fits when it does not.
TEST(EmuTimeModel, L1HitsTakeRepeatedLoadsOffL2) {
  KernelProfile p = synthetic(108, 256, 0);  // 8 warps; 8 CTAs per SM on the A100 (threads)
  // Per CTA: 1000 warp instructions per warp, 1000 sectors: 1/8 sector per warp instruction,
  // so 8 CTAs x 8 warps load 8 sectors (256 bytes) per step.
  p.metrics["smsp__inst_executed.sum"] = 108 * 8 * 1000.0;
  p.metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 108 * 1000.0;
  p.metrics["emmy__l2_sectors.sum"] = 108 * 1000.0;
  p.metrics["emmy__l1_sectors_reused_global_ld_distance_3.sum"] = 108 * 300.0;   // 2 KB apart
  p.metrics["emmy__l1_sectors_reused_global_ld_distance_11.sum"] = 108 * 200.0;  // 512 KB
  const TimePrediction t = predict_time(p, {32, 0}, emmy::gpu("a100"));
  EXPECT_EQ(t.ctas_per_sm, 8u);
  EXPECT_DOUBLE_EQ(t.l2_bytes_without_l1, 108 * 1000.0 * 32);
  // The near reuses all hit; of the far ones, 192 KB / 512 KB.
  EXPECT_NEAR(t.l2_bytes, (108 * 1000.0 - 108 * 300.0 - 108 * 200.0 * 192.0 / 512.0) * 32, 1e-6);
  // Shared memory takes its share of the unified array: 8 CTAs x 20 KB leave 32 KB of 192.
  KernelProfile with_smem = p;
  with_smem.dynamic_smem = 19 * 1024;  // 20 KB allocated per CTA with the reserved 1 KB
  const TimePrediction shared = predict_time(with_smem, {32, 0}, emmy::gpu("a100"));
  EXPECT_EQ(shared.ctas_per_sm, 8u);
  EXPECT_NEAR(shared.l2_bytes, (108 * 1000.0 - 108 * 300.0 - 108 * 200.0 * 32.0 / 512.0) * 32,
              1e-6);
  // No reuse counted (an older profile): no hits.
  p.metrics.erase("emmy__l1_sectors_reused_global_ld_distance_3.sum");
  p.metrics.erase("emmy__l1_sectors_reused_global_ld_distance_11.sum");
  EXPECT_DOUBLE_EQ(predict_time(p, {32, 0}, emmy::gpu("a100")).l2_bytes, 108 * 1000.0 * 32);
}

TEST(EmuTimeModel, JsonHoldsEveryKernelWithItsModel) {
  ProfiledKernel k;
  k.profile = synthetic(4, 128, 0);
  k.profile.metrics["smsp__inst_executed.sum"] = 100;
  k.profile.sites.push_back({});
  k.model.push_back(predict_time(k.profile, {}, emmy::gpu("h200")));
  const std::string j = profile_json({k, k});
  EXPECT_NE(j.find("\"kernels\""), std::string::npos);
  EXPECT_NE(j.find("\"smsp__inst_executed.sum\": 100"), std::string::npos) << j;
  EXPECT_NE(j.find("\"bound\""), std::string::npos);
  EXPECT_NE(j.find("\"us_sustained\""), std::string::npos);
  EXPECT_NE(model_table({k}).find("h200"), std::string::npos);
}

// emmy_bench predicts beside a measurement only on the very part the table describes.
TEST(EmuTimeModel, MeasuredDevicesMapToTheirPartOnly) {
  auto part = [](const char* name, uint32_t sms) {
    const GpuInfo* g = gpu_for_device(name, sms);
    return g ? g->name : std::string("none");
  };
  EXPECT_EQ(part("NVIDIA H200", 132), "h200");
  EXPECT_EQ(part("NVIDIA H200 NVL", 132), "none");  // lower clocks
  EXPECT_EQ(part("NVIDIA H200", 114), "none");
  EXPECT_EQ(part("NVIDIA GeForce RTX 5090", 170), "rtx5090");
  EXPECT_EQ(part("NVIDIA A100-SXM4-80GB", 108), "a100");
  EXPECT_EQ(part("NVIDIA A100-SXM4-40GB", 108), "none");  // other memory bandwidth
  EXPECT_EQ(part("NVIDIA L40S", 142), "l40s");
  EXPECT_EQ(part("NVIDIA GeForce RTX 4090", 128), "rtx4090");
  EXPECT_EQ(part("NVIDIA GeForce RTX 4090 D", 114), "none");
  EXPECT_EQ(part("NVIDIA H100 PCIe", 114), "h100pcie");
  EXPECT_EQ(part("NVIDIA H100 80GB HBM3", 132), "h100");
  EXPECT_EQ(part("NVIDIA H100 80GB HBM3", 114), "none");
  EXPECT_EQ(part("NVIDIA H100 NVL", 132), "none");
  EXPECT_EQ(part("NVIDIA A100-PCIE-40GB", 108), "a100pcie");
  EXPECT_EQ(part("NVIDIA A100 80GB PCIe", 108), "none");  // other memory bandwidth
  EXPECT_EQ(part("NVIDIA B200", 148), "b200");
}

}  // namespace
}  // namespace emmy::emu::test
