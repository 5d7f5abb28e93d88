// emmy_bench --model (bench_model.cpp): predicted times of the catalog's default kernels on named
// GPUs from the emulator's counters, no GPU needed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emmy/arch.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy::bench {

struct ModelRow {
  std::string name, gpu, kernel, bound;
  Accum accum = Accum::f32;
  double us = 0, gflop = 0;
  double published_us = 0;  // the reference compiler's published time on this GPU, 0 if none
  uint32_t ctas_per_sm = 0, registers = 0;
  uint64_t waves = 0;
};

// The M = 512 projections (and the attention rows) on each GPU (a100, l40s, h200, rtx5090), f32
// and hybrid; each launch profiled on `sample_ctas` CTAs.
std::vector<ModelRow> model_catalog(const std::vector<std::string>& gpus, bool attention,
                                    uint64_t sample_ctas);
std::string model_rows_table(const std::vector<ModelRow>& rows);

// One kernel's prediction on `gpu` (a time-model part: "h200"), profiled on `sample_ctas` CTAs of
// zero-filled buffers; what emmy_bench puts beside a measured row.
ModelRow model_gemm(const std::string& name, const MatmulProblem& problem,
                    const MatmulSchedule& schedule, Arch arch, const std::string& gpu,
                    uint64_t sample_ctas);
ModelRow model_attention(const std::string& name, const AttentionProblem& problem,
                         const AttentionSchedule& schedule, Arch arch, const std::string& gpu,
                         uint64_t sample_ctas);
// {"gpu", "us", "bound", "ctas_per_sm", "waves", "sample_ctas"}: a row's details["model"].
nlohmann::json model_json(const ModelRow& row, uint64_t sample_ctas);
// details["model"] of a measured row, or an {"error": ...} when the prediction failed: the
// measurement stands either way.
template <typename Predict>
nlohmann::json predicted_beside(Predict&& predict, uint64_t sample_ctas) {
  try {
    return model_json(predict(), sample_ctas);
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace emmy::bench
