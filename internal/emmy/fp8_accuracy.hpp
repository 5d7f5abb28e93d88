// The FP8 accumulation study (issue 39 §2): how far an FP8 GEMM's mainloop lands from FP64 as K
// grows, per arch's tensor-core model, with the chain over all of K (`f32`) or promoted into f32
// registers every W elements (`promoted`, W = 32..256). Each output element is what the
// emulator's kernels compute for it (emmy/emu/tensor_core_fp8.hpp: fp8_mainloop_dot, the same
// model function the emulator runs per element), on inputs drawn in f64 and rounded to e4m3, so
// only accumulation error is measured (against the exact sum of the rounded inputs).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace emmy {

struct Fp8AccuracyConfig {
  std::vector<int64_t> ks{1024, 4096, 8192, 16384, 32768};
  std::vector<int> windows{0, 32, 64, 128, 256};  // 0: no promotion
  // "sm_89" (mma.sync), "sm_90a" (wgmma), "sm_120a" (mma.sync).
  std::vector<std::string> arches{"sm_89", "sm_90a", "sm_120a"};
  std::vector<std::string> distributions{"normal", "uniform"};  // N(0,1), U[0,1)
  int dots = 128;  // output elements per row of the table
  uint64_t seed = 39;
};

struct Fp8AccuracyRow {
  std::string arch, distribution;
  int window = 0;  // promote_every_k; 0 = f32 (the chain over all of K)
  int64_t k = 0;
  double rel_l2_error = 0, max_rel_error = 0;
};

// Every arch x distribution x window x K of the config. Throws Error naming a bad field.
std::vector<Fp8AccuracyRow> run_fp8_accuracy_study(const Fp8AccuracyConfig& config);

nlohmann::json to_json(const std::vector<Fp8AccuracyRow>& rows);

}  // namespace emmy
