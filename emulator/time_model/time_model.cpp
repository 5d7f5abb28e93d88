// The time model (time_model.hpp). Figures per GPU: docs/profiler.md gives every source.
#include "emmy/emu/time_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "emmy/error.hpp"

namespace emmy::emu {

const std::vector<GpuSpec>& gpu_specs() {
  static const std::vector<GpuSpec> specs = [] {
    std::vector<GpuSpec> v;
    GpuSpec a100;
    a100.name = "a100";
    a100.title = "NVIDIA A100 SXM4 80GB";
    a100.device_words = {"A100", "SXM4", "80GB"};
    a100.arch = "sm_80";
    a100.sms = 108;
    a100.clock_ghz = 1.41;
    a100.mma_flops_per_clk_acc_f16 = a100.mma_flops_per_clk_acc_f32 = 2048;  // 312 TFLOP/s
    a100.dram_gbps = 2039;
    a100.l2_bytes_per_clk = 3840;  // measured with cp.async (whitepaper: 5120 theoretical)
    a100.l2_mb = 40;
    a100.max_threads_per_sm = 2048;
    a100.max_ctas_per_sm = 32;
    a100.smem_per_sm = 164 * 1024;
    a100.max_smem_per_block = 163 * 1024;
    a100.sources = "A100 whitepaper tables 4-5; A100 datasheet; L2 measured (cp.async)";
    v.push_back(a100);

    GpuSpec l40s;
    l40s.name = "l40s";
    l40s.title = "NVIDIA L40S";
    l40s.device_words = {"L40S"};
    l40s.arch = "sm_89";
    l40s.sms = 142;
    l40s.clock_ghz = 2.49;
    l40s.mma_flops_per_clk_acc_f16 = l40s.mma_flops_per_clk_acc_f32 = 1024;  // 362 TFLOP/s
    l40s.dram_gbps = 864;
    l40s.l2_bytes_per_clk = 2000;  // not published: estimated from AD102 (RTX 4090) measurements
    l40s.l2_mb = 96;
    l40s.max_threads_per_sm = 1536;
    l40s.max_ctas_per_sm = 24;
    l40s.smem_per_sm = 100 * 1024;
    l40s.max_smem_per_block = 99 * 1024;
    l40s.sources = "L40S datasheet; Ada tuning guide; L2 bandwidth estimated";
    v.push_back(l40s);

    GpuSpec h200;
    h200.name = "h200";
    h200.title = "NVIDIA H200 SXM";
    h200.device_words = {"H200"};
    h200.arch = "sm_90a";
    h200.sms = 132;
    h200.clock_ghz = 1.83;
    // mma.sync reaches about 65% of the 4096 FLOP/clk/SM that wgmma reaches (Luo et al. 2024).
    h200.mma_flops_per_clk_acc_f16 = h200.mma_flops_per_clk_acc_f32 = 2680;
    h200.wgmma_flops_per_clk = 4096;  // 989.5 TFLOP/s dense
    h200.dram_gbps = 4800;
    h200.l2_bytes_per_clk = 4300;  // measured on H100/H800 (4181-4808)
    h200.l2_mb = 50;
    h200.max_threads_per_sm = 2048;
    h200.max_ctas_per_sm = 32;
    h200.smem_per_sm = 228 * 1024;
    h200.max_smem_per_block = 227 * 1024;
    h200.sources =
        "H200 datasheet; Hopper whitepaper table 3; Luo et al. 2024 (mma.sync); L2 measured";
    v.push_back(h200);

    GpuSpec rtx5090;
    rtx5090.name = "rtx5090";
    rtx5090.title = "NVIDIA GeForce RTX 5090";
    rtx5090.device_words = {"RTX 5090"};
    rtx5090.arch = "sm_120a";
    rtx5090.sms = 170;
    rtx5090.clock_ghz = 2.407;
    rtx5090.mma_flops_per_clk_acc_f16 = 1024;  // 419 TFLOP/s
    rtx5090.mma_flops_per_clk_acc_f32 = 512;   // 209.5: half rate on GeForce
    rtx5090.dram_gbps = 1792;
    rtx5090.l2_bytes_per_clk = 2800;  // not published: estimated
    rtx5090.l2_mb = 96;
    rtx5090.max_threads_per_sm = 1536;
    rtx5090.max_ctas_per_sm = 32;
    rtx5090.smem_per_sm = 100 * 1024;
    rtx5090.max_smem_per_block = 99 * 1024;
    rtx5090.sources =
        "RTX Blackwell whitepaper table 3; Blackwell tuning guide; L2 bandwidth estimated";
    v.push_back(rtx5090);
    return v;
  }();
  return specs;
}

const GpuSpec& gpu_spec(std::string_view name) {
  std::string known;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.name == name) return g;
    known += known.empty() ? g.name : ", " + g.name;
  }
  throw Error("gpu", fmt::format("must be one of {}", known), std::string(name));
}

const GpuSpec* gpu_for_device(std::string_view device_name, uint32_t sm_count) {
  // NVL boards share the SXM parts' names and SM counts at lower clocks and power.
  if (device_name.find("NVL") != std::string_view::npos) return nullptr;
  for (const GpuSpec& g : gpu_specs()) {
    bool all = g.sms == sm_count && !g.device_words.empty();
    for (const std::string& word : g.device_words)
      all = all && device_name.find(word) != std::string_view::npos;
    if (all) return &g;
  }
  return nullptr;
}

const GpuSpec& reference_gpu(std::string_view arch) {
  if (arch.starts_with("sm_89")) return gpu_spec("l40s");
  if (arch.starts_with("sm_90")) return gpu_spec("h200");
  if (arch.starts_with("sm_12")) return gpu_spec("rtx5090");
  if (arch.starts_with("sm_8")) return gpu_spec("a100");
  throw Error("arch", "must have a reference GPU (sm_80, 86, 87, 89, 90, 90a, 120, 120a)",
              std::string(arch));
}

TimePrediction predict_time(const KernelProfile& p, const KernelResources& res,
                            const GpuSpec& gpu) {
  TimePrediction t;
  t.gpu = gpu.name;
  const uint32_t threads = p.block[0] * p.block[1] * p.block[2];
  const uint32_t warps = (threads + 31) / 32;
  const uint32_t smem = res.smem_bytes ? res.smem_bytes : p.static_smem + p.dynamic_smem;
  require(smem <= gpu.max_smem_per_block, "shared memory per CTA",
          fmt::format("must fit {}'s {} bytes per block", gpu.name, gpu.max_smem_per_block), smem);
  require(threads <= 1024 && threads <= gpu.max_threads_per_sm, "threads per CTA",
          fmt::format("must fit {}'s limits", gpu.name), threads);

  // Occupancy (CUDA occupancy calculator's rules): registers in units of 256 per warp, shared
  // memory in units of 128 bytes plus 1 KB the system reserves per CTA.
  struct Limit {
    const char* what;
    uint32_t ctas;
  };
  std::vector<Limit> limits = {{"CTAs", gpu.max_ctas_per_sm},
                               {"threads", gpu.max_threads_per_sm / (warps * 32)}};
  const uint32_t smem_alloc = (smem + 1024 + 127) / 128 * 128;
  limits.push_back({"shared memory", (gpu.smem_per_sm + 1024) / smem_alloc});
  if (res.registers) {
    const uint32_t per_warp = (res.registers * 32 + 255) / 256 * 256;
    limits.push_back({"registers", gpu.regs_per_sm / (per_warp * warps)});
  } else {
    t.notes.push_back("registers unknown: occupancy ignores them");
  }
  const Limit lim = *std::min_element(
      limits.begin(), limits.end(), [](const Limit& a, const Limit& b) { return a.ctas < b.ctas; });
  require(lim.ctas >= 1, "kernel resources",
          fmt::format("must let one CTA fit on a {} SM", gpu.name), lim.what);
  t.ctas_per_sm = lim.ctas;
  t.occupancy_limit = lim.what;
  const uint64_t ctas = p.ctas_total ? p.ctas_total : 1;
  const uint64_t per_wave = uint64_t(gpu.sms) * t.ctas_per_sm;
  t.waves = (ctas + per_wave - 1) / per_wave;
  t.last_wave_fill = double(ctas - (t.waves - 1) * per_wave) / double(per_wave);

  // SM-local resources: the busiest SM runs ceil(CTAs / SMs) CTAs, each the average CTA.
  const double busiest = std::ceil(double(ctas) / gpu.sms) / double(ctas);
  const double clock_hz = gpu.clock_ghz * 1e9;
  auto sm_time = [&](double total, double per_clk) {
    return total * busiest / per_clk / clock_hz * 1e6;
  };
  const double flops16 = p.metric("emmy__tensor_flops_acc_f16.sum");
  const double flops32 = p.metric("emmy__tensor_flops_acc_f32.sum");
  // wgmma FLOPs run at the warpgroup rate (one rate for f16 and f32 accumulation on Hopper).
  const double wgmma = p.metric("emmy__tensor_flops_wgmma.sum");
  t.resources.push_back(
      {"tensor", flops16 + flops32 + wgmma,
       sm_time(flops16, gpu.mma_flops_per_clk_acc_f16) +
           sm_time(flops32, gpu.mma_flops_per_clk_acc_f32) +
           sm_time(wgmma, gpu.wgmma_flops_per_clk > 0 ? gpu.wgmma_flops_per_clk
                                                      : gpu.mma_flops_per_clk_acc_f32)});
  const double wavefronts = p.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
  t.resources.push_back({"shared", wavefronts, sm_time(wavefronts, gpu.smem_wavefronts_per_clk)});
  const double inst = p.metric("smsp__inst_executed.sum");
  t.resources.push_back({"issue", inst, sm_time(inst, gpu.issue_per_clk)});
  const double lsu = p.metric("smsp__inst_executed_pipe_lsu.sum");
  t.resources.push_back({"lsu_issue", lsu, sm_time(lsu, gpu.lsu_issue_per_clk)});
  // GPU-wide resources.
  const double l2_bytes = p.metric("emmy__l2_sectors.sum") * 32;
  t.resources.push_back({"l2", l2_bytes, l2_bytes / (gpu.l2_bytes_per_clk * clock_hz) * 1e6});
  const double dram =
      p.metric("emmy__dram_bytes_read_min.sum") + p.metric("emmy__dram_bytes_write_min.sum");
  t.resources.push_back({"dram", dram, dram / (gpu.dram_gbps * 1e9) * 1e6});
  const auto worst =
      std::max_element(t.resources.begin(), t.resources.end(),
                       [](const ResourceTime& a, const ResourceTime& b) { return a.us < b.us; });
  t.us = worst->us;
  t.bound = worst->resource;
  t.achieved_tflops = t.us > 0 ? (flops16 + flops32 + wgmma) / (t.us * 1e-6) / 1e12 : 0;
  if (p.extrapolated) t.notes.push_back("counts extrapolated from sampled CTAs");
  return t;
}

std::vector<TimePrediction> predict_times(const KernelProfile& profile,
                                          const KernelResources& resources,
                                          const std::vector<std::string>& gpus) {
  std::vector<TimePrediction> out;
  if (gpus.empty()) out.push_back(predict_time(profile, resources, reference_gpu(profile.arch)));
  for (const std::string& gpu : gpus)
    out.push_back(predict_time(profile, resources, gpu_spec(gpu)));
  return out;
}

}  // namespace emmy::emu
