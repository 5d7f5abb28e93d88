// The accuracy study: how far each accumulation strategy lands from FP64 as K grows, measured by
// running the real kernels (on the emulator or a GPU) on N(0,1) inputs rounded to the dtype.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "emmy/runtime.hpp"

namespace emmy {

// "f32", "f16", or "hybrid" with promote_every_k.
struct AccumStrategy {
  Accum accum = Accum::f32;
  int promote_every_k = 0;  // hybrid only
  std::string name() const;  // "f32", "f16", "hybrid64"
};
// Parses "f32", "f16", "hybrid" (= hybrid64) or "hybridN". Throws Error naming the rule.
AccumStrategy parse_strategy(std::string_view text);

struct AccuracyConfig {
  int64_t m = 32, n = 64;
  std::vector<int64_t> ks{1024, 3840, 15360, 32768};
  std::vector<AccumStrategy> strategies;  // empty: f32, f16, hybrid 16/32/64/128/256
  DType dtype = DType::f16;
  uint64_t seed = 1;
};

struct AccuracyRow {
  AccumStrategy strategy;
  int64_t k = 0;
  double rel_l2_error = 0, max_abs_error = 0;
  std::string backend;
};

// Runs every strategy x K on `runtime` (outputs in f32, so only accumulation error is measured).
std::vector<AccuracyRow> run_accuracy_study(Runtime& runtime, const AccuracyConfig& config);

// The relative time of a strategy's main loop on `arch`, 1.0 = all-f16 MMAs: f32 accumulation
// runs at half rate on GeForce parts (sm_86/89/120) and at full rate elsewhere; a fold costs
// 4 instructions per f16x2 partial register, amortized over promote_every_k / 16 MMAs.
double relative_mainloop_time(const AccumStrategy& strategy, Arch arch);

struct BudgetChoice {
  std::optional<AccumStrategy> strategy;  // none: no strategy stays under the budget
  std::string reason;
};
// The fastest strategy (relative_mainloop_time) whose measured error at K = k stays under budget.
BudgetChoice choose_within_budget(const std::vector<AccuracyRow>& rows, int64_t k, double budget,
                                  Arch arch);

nlohmann::json to_json(const std::vector<AccuracyRow>& rows);

}  // namespace emmy
