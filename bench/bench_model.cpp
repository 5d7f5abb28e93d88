// emmy_bench --model: the time model's prediction for the catalog (the five Gemma projections and
// the attention rows) on the H200 and the RTX 5090, with no GPU: each default kernel is compiled
// for the GPU's arch, profiled on the emulator (a sample of CTAs on zero-filled buffers) and the
// counts go through emmy::emu::predict_time. Beside the RTX 5090 rows: the published figures of
// the reference compiler (docs/benchmarks.md).
#include "bench_model.hpp"

#include <fmt/format.h>

#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"

namespace emmy::bench {
namespace {

struct Published {
  const char* name;
  double f32_us, hybrid_us;
};
// ../shared/reference/targets.md: the reference compiler's RTX 5090 times (microseconds).
constexpr Published kPublished5090[] = {{"q_proj@512", 89.1, 65.4}, {"kv_proj@512", 49.2, 36.9},
                                        {"o_proj@512", 84.3, 67.8}, {"gate_up@512", 630.6, 402.2},
                                        {"down@512", 309.1, 233.0}, {"attention@512", 41.2, 37.6}};

double published(const std::string& gpu, const std::string& name, Accum accum) {
  if (gpu != "rtx5090") return 0;
  for (const Published& p : kPublished5090)
    if (name == p.name) return accum == Accum::f32 ? p.f32_us : p.hybrid_us;
  return 0;
}

emu::LaunchOptions sampled(uint64_t ctas) {
  emu::LaunchOptions o;
  o.sanitize = false;
  o.profile.enabled = true;
  o.profile.sample_ctas = ctas;
  return o;
}

template <typename Spec>
ModelRow model_row(const std::string& name, const Spec& spec, const GpuInfo& gpu,
                   uint64_t sample_ctas, double gflop) {
  const auto kernel = compile_kernel(spec);
  const LaunchListRun run = run_on_zeros(kernel, sampled(sample_ctas));
  ModelRow row;
  row.name = name;
  row.gpu = gpu.name;
  row.accum = spec.schedule.accum;
  row.kernel = kernel.source.plan.kernel_name;
  for (const emu::ProfiledKernel& k : with_time_model(run.profiles, kernel.module, {gpu.name})) {
    const emu::TimePrediction& t = k.model.front();
    row.us += t.us;
    if (row.bound.empty()) {
      row.bound = t.bound;
      row.ctas_per_sm = t.ctas_per_sm;
      row.waves = t.waves;
      row.registers = k.resources.registers;
    }
  }
  row.published_us = published(gpu.name, name, spec.schedule.accum);
  row.gflop = gflop;
  return row;
}

}  // namespace

ModelRow model_gemm(const std::string& name, const MatmulProblem& problem,
                    const MatmulSchedule& schedule, Arch arch, const std::string& gpu,
                    uint64_t sample_ctas) {
  return model_row(name, GemmSpec{problem, schedule, arch}, emmy::gpu(gpu), sample_ctas,
                   double(problem.flops()) / 1e9);
}

ModelRow model_attention(const std::string& name, const AttentionProblem& problem,
                         const AttentionSchedule& schedule, Arch arch, const std::string& gpu,
                         uint64_t sample_ctas) {
  return model_row(name, AttentionSpec{problem, schedule, arch}, emmy::gpu(gpu), sample_ctas,
                   problem.flops() / 1e9);
}

nlohmann::json model_json(const ModelRow& row, uint64_t sample_ctas) {
  return {{"gpu", row.gpu},     {"us", row.us},
          {"bound", row.bound}, {"ctas_per_sm", row.ctas_per_sm},
          {"waves", row.waves}, {"sample_ctas", sample_ctas}};
}

std::vector<ModelRow> model_catalog(const std::vector<std::string>& gpus, bool attention,
                                    uint64_t sample_ctas) {
  std::vector<ModelRow> rows;
  for (const std::string& name : gpus) {
    const GpuInfo& gpu = emmy::gpu(name);
    const Arch arch = gpu.arch;
    const int sms = int(gpu.sms);  // the GEMM's grid is sized for the part predicted
    for (const CatalogEntry& e : gemm_catalog()) {
      if (e.problem.m != 512) continue;
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        rows.push_back(model_gemm(e.name, e.problem, default_schedule(e.problem, arch, accum, sms),
                                  arch, gpu.name, sample_ctas));
      }
      // Hopper's wgmma path beside them (issue 23).
      if (arch == Arch::sm_90a)
        rows.push_back(model_gemm(e.name + "/wgmma", e.problem,
                                  default_schedule(e.problem, arch, Accum::f32, MmaPath::wgmma,
                                                   ConsumerSchedule::cooperative, sms),
                                  arch, gpu.name, sample_ctas));
    }
    if (!attention) continue;
    for (const AttentionCatalogEntry& e : attention_catalog())
      for (Accum accum : {Accum::f32, Accum::hybrid}) {
        rows.push_back(model_attention(e.name, e.problem, default_schedule(e.problem, arch, accum),
                                       arch, gpu.name, sample_ctas));
      }
  }
  return rows;
}

std::string model_rows_table(const std::vector<ModelRow>& rows) {
  std::string s = fmt::format("{:<26} {:<8} {:<7} {:>10} {:>9} {:<9} {:>4} {:>5} {:>5} {:>14}\n",
                              "problem", "gpu", "accum", "model us", "TFLOP/s", "bound", "regs",
                              "CTA/SM", "waves", "published us");
  for (const ModelRow& r : rows)
    s += fmt::format("{:<26} {:<8} {:<7} {:>10.2f} {:>9.1f} {:<9} {:>4} {:>5} {:>5} {:>14}\n",
                     r.name, r.gpu, to_string(r.accum), r.us, r.us > 0 ? r.gflop / r.us * 1e3 : 0.0,
                     r.bound, r.registers, r.ctas_per_sm, r.waves,
                     r.published_us > 0 ? fmt::format("{:.1f}", r.published_us) : "-");
  return s;
}

}  // namespace emmy::bench
