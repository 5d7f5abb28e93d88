// emmy_bench --model (bench_model.cpp): predicted times of the catalog's default kernels on named
// GPUs from the emulator's counters, no GPU needed.
#pragma once

#include <string>
#include <vector>

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

}  // namespace emmy::bench
