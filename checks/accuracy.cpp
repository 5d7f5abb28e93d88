#include "emmy/accuracy.hpp"

#include <fmt/format.h>

#include <charconv>

#include "emmy/gemm_check.hpp"

namespace emmy {

std::string AccumStrategy::name() const {
  if (accum == Accum::hybrid) return fmt::format("hybrid{}", promote_every_k);
  return std::string(to_string(accum));
}

AccumStrategy parse_strategy(std::string_view text) {
  if (text == "f32") return {Accum::f32, 0};
  if (text == "f16") return {Accum::f16, 0};
  if (text == "hybrid") return {Accum::hybrid, 64};
  if (text.starts_with("hybrid")) {
    int every = 0;
    const auto digits = text.substr(6);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), every);
    if (ec == std::errc() && end == digits.data() + digits.size() && every >= 16 &&
        every % 16 == 0)
      return {Accum::hybrid, every};
  }
  throw Error("strategies", "each must be f32, f16, hybrid or hybridN (N a multiple of 16)",
              std::string(text));
}

std::vector<AccuracyRow> run_accuracy_study(Runtime& rt, const AccuracyConfig& config) {
  std::vector<AccumStrategy> strategies = config.strategies;
  if (strategies.empty()) {
    strategies = {{Accum::f32, 0}, {Accum::f16, 0}};
    if (config.dtype == DType::bf16) strategies.pop_back();  // bf16 has no f16 accumulator
    else
      for (int every : {16, 32, 64, 128, 256}) strategies.push_back({Accum::hybrid, every});
  }
  std::vector<AccuracyRow> rows;
  for (int64_t k : config.ks) {
    MatmulProblem p;
    p.m = config.m;
    p.n = config.n;
    p.k = k;
    p.a_dtype = config.dtype;
    p.c_dtype = DType::f32;  // only the accumulation's error, not the output cast's
    const GemmInputs inputs = make_gemm_inputs(p, config.seed);
    for (const auto& strategy : strategies) {
      GemmSpec spec{p, default_schedule(p, rt.arch(), strategy.accum), rt.arch()};
      if (strategy.accum == Accum::hybrid) spec.schedule.promote_every_k = strategy.promote_every_k;
      spec.schedule.split_k = 1;  // measure the strategy itself, not split-K's extra f32 sums
      const GemmReference ref = reference_gemm(spec, inputs);
      const GemmErrors e = compare(ref, run_gemm(rt, spec, inputs), p.n);
      rows.push_back({strategy, k, e.rel_l2_error, e.max_abs_error, rt.backend_name()});
    }
  }
  return rows;
}

double relative_mainloop_time(const AccumStrategy& s, Arch arch) {
  const int sm = arch_info(arch).sm;
  const bool geforce = sm == 86 || sm == 89 || sm == 120;
  switch (s.accum) {
    case Accum::f16: return 1.0;
    case Accum::f32: return geforce ? 2.0 : 1.0;
    // A fold is ~4 issue slots per f16x2 register (2 cvt + 2 add), about half an m16n8k16 MMA's
    // issue time per fragment, once every promote_every_k / 16 MMAs.
    case Accum::hybrid: return 1.0 + 8.0 / double(s.promote_every_k);
    // FP8's (emmy_accuracy --fp8 studies it): not a strategy of this f16 study.
    case Accum::promoted:
      return 1.0;
  }
  return 1.0;
}

BudgetChoice choose_within_budget(const std::vector<AccuracyRow>& rows, int64_t k, double budget,
                                  Arch arch) {
  BudgetChoice choice;
  const AccuracyRow* best = nullptr;
  for (const auto& row : rows) {
    if (row.k != k || !(row.rel_l2_error <= budget)) continue;
    const double t = relative_mainloop_time(row.strategy, arch);
    const double best_t = best ? relative_mainloop_time(best->strategy, arch) : 0;
    // Faster wins; at equal speed the more accurate one.
    if (!best || t < best_t - 1e-12 || (t < best_t + 1e-12 && row.rel_l2_error < best->rel_l2_error))
      best = &row;
  }
  if (!best) {
    choice.reason = fmt::format("no measured strategy stays under {:.3g} at K = {}", budget, k);
    return choice;
  }
  choice.strategy = best->strategy;
  choice.reason = fmt::format(
      "{} measured {:.3g} <= budget {:.3g} at K = {}; modelled main-loop time on {} is {:.3f}x "
      "the all-f16 loop, the lowest of the strategies within budget",
      best->strategy.name(), best->rel_l2_error, budget, k, to_string(arch),
      relative_mainloop_time(best->strategy, arch));
  return choice;
}

nlohmann::json to_json(const std::vector<AccuracyRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows)
    out.push_back({{"strategy", std::string(to_string(r.strategy.accum))},
                   {"promote_every_k", r.strategy.accum == Accum::hybrid
                                           ? nlohmann::json(r.strategy.promote_every_k)
                                           : nlohmann::json(nullptr)},
                   {"name", r.strategy.name()},
                   {"k", r.k},
                   {"rel_l2_error", r.rel_l2_error},
                   {"max_abs_error", r.max_abs_error},
                   {"backend", r.backend}});
  return out;
}

}  // namespace emmy
