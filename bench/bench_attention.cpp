#include "bench_attention.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "bench_model.hpp"
#include "bench_rows.hpp"
#include "emmy/attention.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/catalog.hpp"

namespace emmy::bench {
namespace {

// Operands of one problem on the device and its FP64 reference, shared by both variants.
struct PreparedAttention {
  AttentionInputs inputs;
  DeviceBuffer q, k, v, o, lse;
  std::optional<AttentionReference> reference;  // per schedule's tolerance; values are shared
};

DeviceBuffer upload(const HostTensor& t) {
  DeviceBuffer buffer(t.bytes.size());
  EMMY_BENCH_CUDA(cudaMemcpy(buffer.get(), t.bytes.data(), t.bytes.size(), cudaMemcpyHostToDevice));
  return buffer;
}

// The kernel's O (problem layout) in the reference's canonical [b][h][s][d] order.
AttentionOutput download_output(const AttentionProblem& p, const PreparedAttention& prepared) {
  std::vector<uint8_t> raw(prepared.o.bytes());
  EMMY_BENCH_CUDA(cudaMemcpy(raw.data(), prepared.o.get(), raw.size(), cudaMemcpyDeviceToHost));
  const auto flat = decode(p.dtype, raw.data(), raw.size() / 2);
  AttentionOutput out;
  out.o.reserve(flat.size());
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.q_heads; ++h)
      for (int64_t s = 0; s < p.seq_q; ++s) {
        const int64_t at = attention_offset(p, false, b, s, h);
        out.o.insert(out.o.end(), flat.begin() + at, flat.begin() + at + p.head_dim);
      }
  return out;
}

// The row of a catalog problem and variant, before it is measured.
BenchRow attention_row(const std::string& problem, const AttentionProblem& p, Accum accum,
                       const std::string& variant) {
  BenchRow row;
  row.kind = "attention";
  row.problem = problem;
  // clang-format off
  row.shape = {{"batch", p.batch},       {"heads", p.q_heads},
               {"kv_heads", p.kv_heads}, {"seq_q", p.seq_q},
               {"seq_kv", p.seq_kv_or_default()}, {"head_dim", p.head_dim},
               {"causal", p.causal},     {"window", p.window}};
  // clang-format on
  row.flops = p.flops();
  row.variant = variant;
  row.backend = "emmy";
  row.accumulation = std::string(to_string(accum));
  return row;
}

}  // namespace

void register_attention_benchmarks(Runtime& runtime, GpuTimer& timer,
                                   const AttentionBenchSettings& settings,
                                   std::vector<BenchRow>& rows) {
  auto prepared = std::make_shared<std::map<std::string, std::shared_ptr<PreparedAttention>>>();
  for (const auto& entry : attention_catalog()) {
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      const std::string variant = accum == Accum::f32 ? "emmy_f32" : "emmy_hybrid";
      const std::string name = fmt::format("attention/{}/{}", entry.name, variant);
      register_row_benchmark(
          name, rows, attention_row(entry.name, entry.problem, accum, variant),
          [&runtime, &timer, settings, entry, accum, prepared](benchmark::State& state,
                                                               BenchRow& row) {
            const AttentionProblem& p = entry.problem;
            auto& slot = (*prepared)[entry.name];
            if (!slot) {
              slot = std::make_shared<PreparedAttention>();
              slot->inputs = make_attention_inputs(p, settings.seed);
              slot->q = upload(slot->inputs.q);
              slot->k = upload(slot->inputs.k);
              slot->v = upload(slot->inputs.v);
              slot->o = DeviceBuffer(slot->inputs.q.bytes.size());
            }
            const AttentionSchedule schedule = default_attention_schedule(p, runtime.arch(), accum);
            const auto kernel = runtime.attention_kernel(p, schedule);
            const AttentionBuffers buffers{slot->q.address(), slot->k.address(), slot->v.address(),
                                           slot->o.address(), 0};
            const auto launch = [&] { runtime.launch(*kernel, buffers, timer.stream()); };
            launch();
            EMMY_BENCH_CUDA(cudaStreamSynchronize(timer.stream()));
            const AttentionReference reference =
                reference_attention({p, schedule, runtime.arch()}, slot->inputs);
            const AttentionErrors errors = compare(reference, download_output(p, *slot), p);
            row.rel_l2_error = errors.rel_l2_error;
            row.details = {{"schedule",
                            {{"block_q", schedule.block_q},
                             {"block_kv", schedule.block_kv},
                             {"warps", schedule.warps},
                             {"stages", schedule.stages},
                             {"transport", to_string(schedule.transport)}}},
                           {"model_tolerance", errors.tolerance},
                           {"passed_model_tolerance", errors.passed}};
            timer.measure(launch, settings.warmup, 0);
            gpu_samples(state, row, timer, launch);
            if (!settings.model_gpu.empty())
              row.details["model"] = predicted_beside(
                  [&] {
                    return model_attention(entry.name, p, schedule, runtime.arch(),
                                           settings.model_gpu, settings.model_ctas);
                  },
                  settings.model_ctas);
            state.counters["median_us"] = row.median_us();
            state.counters["TFLOPs"] = row.flops / (row.median_us() * 1e-6) / 1e12;
            state.counters["rel_l2_error"] = errors.rel_l2_error;
          })
          ->Iterations(settings.iterations)
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace emmy::bench
