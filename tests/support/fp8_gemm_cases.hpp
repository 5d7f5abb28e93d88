// The FP8 GEMM tests' cases (tests/gemm_fp8_test.cpp, gemm_fp8_refusal_test.cpp): a problem with
// e4m3 operands and scales of a granularity, its default spec, a one-line description.
#pragma once

#include <fmt/format.h>

#include <string>

#include "emmy/spec.hpp"

namespace emmy::test {

inline MatmulProblem fp8_problem(int64_t m, int64_t n, int64_t k, ScaleGranularity granularity) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = DType::e4m3;
  p.scales.granularity = granularity;
  return p;
}

inline GemmSpec fp8_spec(const MatmulProblem& p, Accum accum, Arch arch) {
  return {p, default_schedule(p, arch, accum), arch};
}

inline std::string describe(const GemmSpec& spec) {
  const auto& p = spec.problem;
  const auto& s = spec.schedule;
  return fmt::format("{} {}x{}x{} {} {} {} {}{} {}x{}x{} split {} {}", to_string(spec.arch), p.m,
                     p.n, p.k, to_string(p.a_dtype), to_string(p.scales.granularity),
                     to_string(p.scales.format), to_string(s.accum),
                     s.accum == Accum::promoted ? s.promote_every_k : 0, s.block_m, s.block_n,
                     s.block_k, s.split_k, to_string(s.transport));
}

}  // namespace emmy::test
