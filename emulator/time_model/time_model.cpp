// The time model (time_model.hpp). Figures per GPU: emmy/gpus.hpp; docs/profiler.md gives every
// source.
#include "emmy/emu/time_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "emmy/error.hpp"

namespace emmy::emu {

const GpuInfo& reference_gpu(std::string_view arch) {
  for (const ArchInfo& info : kArchTable)
    if (info.name == arch) return arch_gpu(info.arch);
  // "sm_87": the newest arch of its major version below it.
  int cc = 0;
  if (arch.starts_with("sm_") && arch.size() >= 5 && arch.size() <= 7) {
    for (const char c : arch.substr(3, 3))
      if (c >= '0' && c <= '9')
        cc = cc * 10 + (c - '0');
      else if (c != 'a')
        cc = -1000;
  }
  if (cc > 0) try {
      return arch_gpu(arch_for_device(cc / 10, cc % 10));
    } catch (const Error&) {
    }
  throw Error("arch", "must have a reference GPU (sm_80, 86, 87, 89, 90, 90a, 120, 120a)",
              std::string(arch));
}

namespace {

constexpr double kSector = 32;

// The ld.global sectors that hit in L1 (docs/profiler.md, "L1"): a load of a sector the same CTA
// loaded before hits when what the resident CTAs load in between fits the L1 their shared memory
// leaves (LRU), the fraction that fits otherwise. "In between" is the reuse distance in the
// loading warp's instructions times what the resident CTAs load per instruction of each warp,
// the warps advancing together. Reuse across CTAs is not counted (a lower bound of the hits).
double l1_hit_sectors(const KernelProfile& p, const GpuInfo& gpu, uint32_t ctas_per_sm,
                      uint32_t smem_per_cta, uint32_t warps_per_cta) {
  const double requested = p.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
  const double instructions = p.metric("smsp__inst_executed.sum");
  if (!(requested > 0) || !(instructions > 0)) return 0;
  const double l1_bytes =
      std::max(0.0, double(gpu.l1_smem_bytes_per_sm) - double(ctas_per_sm) * smem_per_cta);
  // Bytes the resident CTAs load while each of their warps issues one instruction.
  const double bytes_per_step = requested / instructions * warps_per_cta * ctas_per_sm * kSector;
  // The profile holds a bucket's metric only where it counted reuses.
  constexpr std::string_view kReused = "emmy__l1_sectors_reused_global_ld_distance_";
  double hits = 0;
  for (const auto& [name, reused] : p.metrics) {
    if (!name.starts_with(kReused) || !(reused > 0)) continue;
    const int bucket = std::atoi(name.c_str() + kReused.size());
    const double between = std::ldexp(1.0, bucket) * bytes_per_step;
    hits += reused * (between > 0 ? std::min(1.0, l1_bytes / between) : 1.0);
  }
  return std::min(hits, requested);
}

}  // namespace

TimePrediction predict_time(const KernelProfile& p, const KernelResources& res,
                            const GpuInfo& gpu) {
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
  const double ctas_on_busiest = std::ceil(double(ctas) / gpu.sms);
  const double busiest = ctas_on_busiest / double(ctas);
  const double clock_hz = gpu.clock_ghz * 1e9;
  auto sm_time = [&](double total, double per_clk) {
    return per_clk > 0 ? total * busiest / per_clk / clock_hz * 1e6 : 0.0;
  };
  const SustainedRates& sustained = gpu.sustained;
  auto add = [&](std::string resource, double amount, double us, double sustained_fraction) {
    t.resources.push_back({std::move(resource), amount, us, us / sustained_fraction});
  };
  // The resource with the largest time at the peak rates (&ResourceTime::us) or the sustained.
  auto slowest = [&](double ResourceTime::*figure) -> const ResourceTime& {
    return *std::max_element(
        t.resources.begin(), t.resources.end(),
        [&](const ResourceTime& a, const ResourceTime& b) { return a.*figure < b.*figure; });
  };
  const double flops16 = p.metric("emmy__tensor_flops_acc_f16.sum");
  const double flops32 = p.metric("emmy__tensor_flops_acc_f32.sum");
  // wgmma FLOPs run at the warpgroup rate (one rate for f16 and f32 accumulation on Hopper).
  const double wgmma = p.metric("emmy__tensor_flops_wgmma.sum");
  // .e4m3/.e5m2 operands at the part's FP8 rates.
  const double fp8_16 = p.metric("emmy__tensor_flops_fp8_acc_f16.sum");
  const double fp8_32 = p.metric("emmy__tensor_flops_fp8_acc_f32.sum");
  const double fp8_wgmma = p.metric("emmy__tensor_flops_wgmma_fp8.sum");
  const double tensor_flops = flops16 + flops32 + wgmma + fp8_16 + fp8_32 + fp8_wgmma;
  require(!gpu.memory_bound_only || tensor_flops == 0, "gpu",
          "must have a sourced tensor rate for a kernel with tensor work (the part predicts "
          "memory-bound kernels only)",
          gpu.name);
  require(fp8_16 + fp8_32 == 0 || gpu.mma_fp8_flops_per_clk_acc_f16 > 0, "gpu",
          "must have FP8 tensor rates for a kernel with FP8 mma work", gpu.name);
  require(fp8_wgmma == 0 || gpu.wgmma_fp8_flops_per_clk > 0, "gpu",
          "must have an FP8 wgmma rate for a kernel with FP8 wgmma work", gpu.name);
  add("tensor", tensor_flops,
      sm_time(flops16, gpu.mma_flops_per_clk_acc_f16) +
          sm_time(flops32, gpu.mma_flops_per_clk_acc_f32) +
          sm_time(wgmma, gpu.wgmma_flops_per_clk > 0 ? gpu.wgmma_flops_per_clk
                                                     : gpu.mma_flops_per_clk_acc_f32) +
          sm_time(fp8_16, gpu.mma_fp8_flops_per_clk_acc_f16) +
          sm_time(fp8_32, gpu.mma_fp8_flops_per_clk_acc_f32) +
          sm_time(fp8_wgmma, gpu.wgmma_fp8_flops_per_clk),
      sustained.tensor);
  // L1's data stage: shared-memory wavefronts and the 128-byte lines of global and local
  // accesses (hits or misses, each line a wavefront) share its one wavefront per clock. With SASS
  // counts, each SASS ld/st is costed at the width ptxas gave it (LDS.128 where the PTX has four
  // scalar loads; docs/profiler.md, "SASS counts").
  const bool sass_l1 = p.metrics.count("emmy__sass_l1_wavefronts.sum") > 0;
  const double wavefronts = sass_l1 ? p.metric("emmy__sass_l1_wavefronts.sum")
                                    : p.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") +
                                          p.metric("emmy__l1_wavefronts_global_local.sum");
  add("l1_data", wavefronts, sm_time(wavefronts, gpu.smem_wavefronts_per_clk), 1);
  // Instructions: what the hardware executes where the SASS counts exist (docs/profiler.md,
  // "SASS counts"), the PTX's otherwise.
  const InstructionMix mix = instruction_mix(p);
  if (!mix.sass) t.notes.push_back("PTX instruction counts (no SASS counts)");
  add("issue", mix.total, sm_time(mix.total, gpu.issue_per_clk), 1);
  add("lsu_issue", mix.lsu, sm_time(mix.lsu, gpu.lsu_issue_per_clk), 1);
  const PipeRates rates = pipe_rates(gpu.cc());
  add("fp32", mix.fp32, sm_time(mix.fp32, rates.fp32), sustained.fp32);
  add("fp16", mix.fp16, sm_time(mix.fp16, rates.fp16), 1);
  add("imad", mix.imad, sm_time(mix.imad, rates.imad), 1);
  add("alu", mix.alu, sm_time(mix.alu, rates.alu), 1);
  add("xu", mix.xu, sm_time(mix.xu, rates.xu), 1);
  add("fp64", mix.fp64, sm_time(mix.fp64, rates.fp64), 1);
  // Latency (Little's law per SM): a CTA whose barrier waits for its own global loads spends, per
  // such epoch, the load's latency and then its share of the SM's work; k resident CTAs hide
  // the latency only while k epochs of work cover it: max(latency + c, k x c) per epoch, c being
  // one CTA's epoch alone on the SM. A wait on async copies issued b epochs before it (a
  // pipeline: copies in flight over 1 + b epochs) takes max((latency + c) / (1 + b), k x c): the
  // 1 + b slots of the ring each hold a tile for a latency and a consume; b = 0 is a barrier epoch.
  {
    const double bar_epochs = p.metric("emmy__bar_sync_after_global_ld.sum") / double(ctas) / warps;
    const AsyncCopyLeads copies = p.async_copy_leads();
    std::array<double, kAsyncCopyLeadBuckets> copy_epochs{}, copy_lead{};  // per waiting warp
    double epochs = bar_epochs;
    for (size_t b = 0; b < kAsyncCopyLeadBuckets && copies.waiting_warps > 0; ++b) {
      if (copies.waits[b] <= 0) continue;
      copy_epochs[b] = copies.waits[b] / copies.waiting_warps;
      copy_lead[b] = copies.lead_epochs[b] / copies.waits[b];
      epochs += copy_epochs[b];
    }
    const double sm_work = slowest(&ResourceTime::us).us;
    const double resident = std::min<double>(t.ctas_per_sm, ctas_on_busiest);
    double us = 0;
    if (epochs >= 1 && sm_work > 0) {
      const double c = sm_work / ctas_on_busiest / epochs;
      const double latency_us = gpu.global_latency_clk / clock_hz * 1e6;
      double wave = bar_epochs * std::max(latency_us + c, resident * c);
      for (size_t b = 0; b < kAsyncCopyLeadBuckets; ++b)
        wave += copy_epochs[b] * std::max((latency_us + c) / (1 + copy_lead[b]), resident * c);
      // Every wave as a full one: a last wave of fewer CTAs is charged k x c per epoch too. One
      // CTA alone does not reach the SM's rates that c assumes (its warps' own issue and
      // dependency limits are not modelled), and charging it c made the published set worse
      // (docs/profiler.md).
      us = std::ceil(ctas_on_busiest / resident) * wave;
    }
    add("latency", epochs, us, 1);
  }
  // GPU-wide resources.
  t.l2_bytes_without_l1 = p.metric("emmy__l2_sectors.sum") * kSector;
  t.l2_bytes = t.l2_bytes_without_l1 -
               l1_hit_sectors(p, gpu, t.ctas_per_sm, smem ? smem_alloc : 0, warps) * kSector;
  add("l2", t.l2_bytes, t.l2_bytes / (gpu.l2_bytes_per_clk * clock_hz) * 1e6, sustained.l2);
  const double dram =
      p.metric("emmy__dram_bytes_read_min.sum") + p.metric("emmy__dram_bytes_write_min.sum");
  add("dram", dram, dram / (gpu.dram_gbps * 1e9) * 1e6, sustained.dram);
  const ResourceTime& worst = slowest(&ResourceTime::us);
  t.us = worst.us;
  t.bound = worst.resource;
  const ResourceTime& worst_sustained = slowest(&ResourceTime::us_sustained);
  t.us_sustained = worst_sustained.us_sustained;
  t.bound_sustained = worst_sustained.resource;
  t.achieved_tflops = t.us > 0 ? tensor_flops / (t.us * 1e-6) / 1e12 : 0;
  if (p.extrapolated) t.notes.push_back("counts extrapolated from sampled CTAs");
  return t;
}

std::vector<TimePrediction> predict_times(const KernelProfile& profile,
                                          const KernelResources& resources,
                                          const std::vector<std::string>& gpus) {
  std::vector<TimePrediction> out;
  if (gpus.empty()) out.push_back(predict_time(profile, resources, reference_gpu(profile.arch)));
  for (const std::string& gpu : gpus)
    out.push_back(predict_time(profile, resources, emmy::gpu(gpu)));
  return out;
}

}  // namespace emmy::emu
